/*
 * env.c: the store's LMDB environment, its document types and transactions.
 *
 * store_open() creates or opens the environment (document types are added
 * by doctype.c).  Transactions wrap LMDB's: one writer, many readers.  A write transaction whose LMDB work failed part-way is marked
 * failed and refuses everything but abort (store_txn_check), so a half
 * applied operation can never be committed.
 *
 * Invariants: env->types[] only grows, and only before transactions begin;
 * a doctype's stored field list is append-only across the store's life;
 * the caller's field list and the stored one map to each other (checked in
 * debug builds after each store_doctype_add); only a write transaction
 * fails.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "store_int.h"

#define DEFAULT_MAP_SIZE (64ull << 30)
#define MIN_DEFAULT_MAP_SIZE (1ull << 30)
#define MAX_READERS 1024

/* ---- errors ------------------------------------------------------------- */

/* LMDB returns errno values (positive) or its own codes (negative). */
int store_mdb_err(struct strata_error *err, int rc, const char *what)
{
	if (rc == ENOMEM)
		return base_nomem(err, "%s", what);
	if (rc == MDB_MAP_FULL)
		return base_err(err, STRATA_STORE, "%s: store is full (map size reached)", what);
	if (rc == MDB_CORRUPTED || rc == MDB_PAGE_NOTFOUND || rc == MDB_INVALID)
		return base_err(err, STRATA_CORRUPT, "%s: %s", what, mdb_strerror(rc));
	if (rc > 0)
		return base_err(err, rc, "%s: %s", what, strerror(rc));
	return base_err(err, STRATA_STORE, "%s: %s", what, mdb_strerror(rc));
}

int store_txn_fail(struct store_txn *txn, int rc, const char *what, struct strata_error *err)
{
	if (txn->write)
		txn->failed = 1;
	return store_mdb_err(err, rc, what);
}

int store_txn_check(struct store_txn *txn, int write, int doctype, struct strata_error *err)
{
	if (!txn)
		return base_err(err, STRATA_INVALID_ARGUMENT, "no transaction");
	/* Only writes fail a transaction; types are added, never removed. */
	BASE_DEBUG_ASSERT(!txn->failed || txn->write);
	BASE_DEBUG_ASSERT(txn->ntypes <= txn->env->ntypes);
	if (txn->failed)
		return base_err(err, STRATA_TXN_FAILED,
		                "the transaction failed earlier and must be aborted");
	if (write && !txn->write)
		return base_err(err, STRATA_INVALID_ARGUMENT, "a write needs a write transaction");
	if (doctype < 0 || doctype >= txn->env->ntypes)
		return base_err(err, STRATA_INVALID_ARGUMENT, "unknown document type handle %d",
		                doctype);
	return 0;
}

void store_doctype_free(struct doctype *dt)
{
	if (!dt)
		return;
	for (int i = 0; i < dt->stored_cap; i++)
		base_strfree(dt->stored[i].name);
	base_free(dt->stored, (size_t)dt->stored_cap * sizeof *dt->stored);
	base_free(dt->ufield, (size_t)dt->nuser * sizeof *dt->ufield);
	base_strfree(dt->name);
	base_free(dt, sizeof *dt);
}

/* ---- the environment -------------------------------------------------------- */

/* mkdir -p */
static int make_dirs(const char *dir, struct strata_error *err)
{
	char *path = base_strdup(dir);
	if (!path)
		return base_nomem(err, "store path");
	size_t n = strlen(path);
	int rc = 0;
	for (size_t i = 1; i <= n && !rc; i++) {
		if (path[i] != '/' && path[i] != 0)
			continue;
		char c = path[i];
		path[i] = 0;
		if (mkdir(path, 0755) != 0 && errno != EEXIST)
			rc = base_err(err, errno, "store folder '%s': %s", path, strerror(errno));
		path[i] = c;
	}
	base_strfree(path);
	if (rc)
		return rc;
	struct stat st;
	if (stat(dir, &st) != 0)
		return base_err(err, errno, "store folder '%s': %s", dir, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return base_err(err, ENOTDIR, "store folder '%s' is not a folder", dir);
	return 0;
}

/* LMDB does not report where its map is (me_mapaddr is only set for fixed
 * maps), so find the mapping that holds a value read from it. */
static void find_map(struct store_env *env)
{
	MDB_txn *t;
	if (mdb_txn_begin(env->env, NULL, MDB_RDONLY, &t) != 0)
		return;
	MDB_val k = {4, "meta"}, v;
	MDB_dbi main_dbi;
	uintptr_t probe = 0;
	if (mdb_dbi_open(t, NULL, 0, &main_dbi) == 0 && mdb_get(t, main_dbi, &k, &v) == 0)
		probe = (uintptr_t)v.mv_data;
	mdb_txn_abort(t);
	MDB_envinfo info;
	if (!probe || mdb_env_info(env->env, &info) != 0)
		return;
	FILE *f = fopen("/proc/self/maps", "r");
	if (!f)
		return;
	char line[512];
	while (fgets(line, sizeof line, f)) {
		unsigned long lo, hi;
		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && probe >= lo && probe < hi) {
			/* One mapping of the whole size, or we do not trust it. */
			if (hi - lo == info.me_mapsize) {
				env->map_lo = (const char *)lo;
				env->map_size = info.me_mapsize;
			}
			break;
		}
	}
	fclose(f);
}

/* Create and open env->env with a map of size bytes.  On failure env->env
 * is NULL again. */
static int open_env(struct store_env *env, const char *dir, uint64_t size)
{
	int rc = mdb_env_create(&env->env);
	if (rc) {
		env->env = NULL;
		return rc;
	}
	/* MDB_NOTLS: reader slots belong to transactions, not threads, so one
	 * thread may hold several read transactions (a query and a get). */
	if ((rc = mdb_env_set_maxdbs(env->env, STORE_MAX_DBS)) != 0 ||
	    (rc = mdb_env_set_maxreaders(env->env, MAX_READERS)) != 0 ||
	    (rc = mdb_env_set_mapsize(env->env, (size_t)size)) != 0 ||
	    (rc = mdb_env_open(env->env, dir, MDB_NOTLS, 0644)) != 0) {
		mdb_env_close(env->env);
		env->env = NULL;
	}
	return rc;
}

int store_open_opts(const char *dir, const struct store_options *opts,
                    struct store_env **out, struct strata_error *err)
{
	*out = NULL;
	if (!dir || !*dir)
		return base_err(err, STRATA_INVALID_ARGUMENT, "no store folder given");
	int rc = make_dirs(dir, err);
	if (rc)
		return rc;
	struct store_env *env = base_calloc(1, sizeof *env);
	if (!env)
		return base_nomem(err, "store handle");
	pthread_mutex_init(&env->snap_lock, NULL);
	MDB_txn *t = NULL;
	if (opts && opts->map_size) {
		rc = open_env(env, dir, opts->map_size);
	} else {
		/* The default map is address space only, but a process may be
		 * limited (ulimit -v, valgrind): settle for less. */
		uint64_t size = DEFAULT_MAP_SIZE;
		while ((rc = open_env(env, dir, size)) != 0 && (rc == ENOMEM || rc == EINVAL) &&
		       size > MIN_DEFAULT_MAP_SIZE)
			size /= 4;
	}
	if (rc)
		goto fail;
	int dead;
	mdb_reader_check(env->env, &dead); /* free slots of crashed processes */
	env->maxkey = (unsigned)mdb_env_get_maxkeysize(env->env);
	MDB_stat st;
	if ((rc = mdb_env_stat(env->env, &st)) != 0)
		goto fail;
	env->psize = st.ms_psize;
	if ((rc = mdb_txn_begin(env->env, NULL, 0, &t)) != 0 ||
	    (rc = mdb_dbi_open(t, "meta", MDB_CREATE, &env->meta)) != 0)
		goto fail;
	rc = mdb_txn_commit(t);
	t = NULL;
	if (rc)
		goto fail;
	find_map(env);
	*out = env;
	return 0;
fail:
	if (t)
		mdb_txn_abort(t);
	rc = store_mdb_err(err, rc, "opening the store");
	base_err_prefix(err, rc, "store '%s'", dir);
	if (env->env)
		mdb_env_close(env->env);
	pthread_mutex_destroy(&env->snap_lock);
	base_free(env, sizeof *env);
	return rc;
}

int store_open(const char *dir, struct store_env **out, struct strata_error *err)
{
	return store_open_opts(dir, NULL, out, err);
}

void store_close(struct store_env *env)
{
	if (!env)
		return;
	for (int i = 0; i < env->ntypes; i++)
		store_doctype_free(env->types[i]);
	if (env->snaps_free)
		env->snaps_free(env); /* the graphs' tables (hnsw_snap.c) */
	pthread_mutex_destroy(&env->snap_lock);
	mdb_env_close(env->env);
	base_free(env, sizeof *env);
}

int store_in_map(const struct store_env *env, const void *ptr)
{
	if (!env || !env->map_lo || !ptr)
		return 0;
	const char *p = ptr;
	return p >= env->map_lo && (size_t)(p - env->map_lo) < env->map_size;
}

/* ---- transactions ------------------------------------------------------------ */

int store_txn_begin(struct store_env *env, int write, struct store_txn **out,
                    struct strata_error *err)
{
	*out = NULL;
	if (!env)
		return base_err(err, STRATA_INVALID_ARGUMENT, "no store");
	struct store_txn *txn = base_calloc(1, sizeof *txn);
	if (!txn)
		return base_nomem(err, "transaction");
	txn->env = env;
	txn->write = !!write;
	txn->ntypes = env->ntypes;
	size_t total = 0;
	for (int i = 0; i < env->ntypes; i++)
		total += (size_t)env->types[i]->nuser;
	if (total) {
		txn->slot_mem = base_calloc(total, sizeof *txn->slot_mem);
		if (!txn->slot_mem) {
			base_free(txn, sizeof *txn);
			return base_nomem(err, "transaction");
		}
		txn->slot_count = total;
		size_t off = 0;
		for (int i = 0; i < env->ntypes; i++) {
			txn->slots[i] = txn->slot_mem + off;
			off += (size_t)env->types[i]->nuser;
		}
	}
	int rc = mdb_txn_begin(env->env, NULL, write ? 0 : MDB_RDONLY, &txn->txn);
	if (rc) {
		base_free(txn->slot_mem, txn->slot_count * sizeof *txn->slot_mem);
		base_free(txn, sizeof *txn);
		if (rc == MDB_READERS_FULL)
			return base_err(err, STRATA_LIMIT, "more than %d read transactions at once",
			                MAX_READERS);
		return store_mdb_err(err, rc, "beginning a transaction");
	}
	*out = txn;
	return 0;
}

/* Free everything but the LMDB txn, which the caller ends first.  Cursors of
 * a read txn must be closed by us; a write txn's go with it, but closing them
 * before the txn ends is allowed for both. */
static void txn_close_cursors(struct store_txn *txn)
{
	for (int i = 0; i < STORE_MAX_DOCTYPES; i++)
		if (txn->cursors[i]) {
			mdb_cursor_close(txn->cursors[i]);
			txn->cursors[i] = NULL;
		}
}

static void txn_free(struct store_txn *txn)
{
	base_free(txn->slot_mem, txn->slot_count * sizeof *txn->slot_mem);
	base_free(txn->buf, txn->buf_cap);
	store_tokbuf_free(&txn->tb); /* text indexing's (text.c) */
	base_free(txn->ebuf, txn->ebuf_cap);
	base_free(txn->dkeys, txn->dkeys_cap); /* the value dictionaries' (dict.c) */
	if (txn->df_free)
		txn->df_free(txn);
	if (txn->hnsw)
		txn->hnsw_free(txn->hnsw); /* graph maintenance's (hnsw_sync.c) */
	if (txn->arena_used)
		base_arena_free(&txn->arena);
	base_free(txn, sizeof *txn);
}

int store_txn_commit(struct store_txn *txn, struct strata_error *err)
{
	if (!txn)
		return base_err(err, STRATA_INVALID_ARGUMENT, "no transaction");
	txn_close_cursors(txn);
	int rc = 0;
	if (txn->failed) {
		mdb_txn_abort(txn->txn);
		rc = base_err(err, STRATA_TXN_FAILED,
		              "the transaction failed earlier; nothing was committed");
	} else if (!txn->write) {
		mdb_txn_abort(txn->txn);
	} else if (txn->df_flush && (rc = txn->df_flush(txn, err)) != 0) {
		mdb_txn_abort(txn->txn);
	} else if (txn->hnsw_flush && (rc = txn->hnsw_flush(txn, err)) != 0) {
		mdb_txn_abort(txn->txn);
	} else if ((rc = mdb_txn_commit(txn->txn)) != 0) {
		rc = store_mdb_err(err, rc, "committing");
	}
	txn_free(txn);
	return rc;
}

uint64_t store_txn_id(const struct store_txn *txn)
{
	return (uint64_t)mdb_txn_id(txn->txn);
}

void store_txn_abort(struct store_txn *txn)
{
	if (!txn)
		return;
	txn_close_cursors(txn);
	mdb_txn_abort(txn->txn);
	txn_free(txn);
}
