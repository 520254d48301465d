/*
 * hnsw_sync.c: keeping the nearest-neighbour graphs in line with the
 * documents and the schema: doc.c calls store_hnsw_sync_doc after writing a
 * document's columns, and each graph of the type brings the document's
 * node (hnsw_write.c) or nodes (hnsw_multi.c) in line with its value;
 * store_hnsw_sync, at store_doctype_add, checks the graph settings of the
 * fields, and drops and rebuilds the graphs whose settings changed since
 * they were recorded.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "hnsw_int.h"

static void scratch_free(struct hnsw_scratch *s)
{
	hnsw_scratch_release(s);
	base_free(s, sizeof *s);
}

/* The commit hook: the changes kept in the cache go to the store. */
static int txn_flush(struct store_txn *w, struct strata_error *err)
{
	return hnsw_cache_flush(w->hnsw, err);
}

static struct hnsw_scratch *scratch_of(struct store_txn *w, struct strata_error *err)
{
	if (!w->hnsw && !(w->hnsw = base_calloc(1, sizeof *w->hnsw)))
		base_nomem(err, "nearest-neighbour graph");
	w->hnsw_free = scratch_free;
	w->hnsw_flush = txn_flush;
	return w->hnsw;
}

/* lid's node in graph sf from its column value. */
static int sync_node(struct store_txn *w, struct doctype *dt, int sf, uint32_t lid,
                     struct hnsw_scratch *s, struct strata_error *err)
{
	struct hnsw_graph g;
	hnsw_graph_init(&g, w, dt, sf, s, err);
	g.mips = g.f->hnsw_metric == STORE_METRIC_DOTPRODUCT;
	hnsw_forget(&g); /* the document's own writes came before */
	int rc = hnsw_cache_start(&g);
	if (rc)
		return rc;
	if (g.multi)
		return hnsw_multi_sync(&g, lid);
	hnsw_forget_block(&g, lid);
	if ((rc = hnsw_remove(&g, lid)) != 0)
		return rc;
	const void *v = hnsw_vec(&g, lid);
	if (!v)
		return 0;
	if ((rc = hnsw_reserve(&g, (void **)&s->q, &s->qcap, g.vbytes, 1)) != 0)
		return rc;
	memcpy(s->q, v, g.vbytes);
	return hnsw_insert(&g, lid);
}

int store_hnsw_sync_doc(struct store_txn *w, struct doctype *dt, uint32_t lid,
                        const unsigned char *only, struct strata_error *err)
{
	int rc = 0;
	for (int sf = 0; sf < dt->nstored && !rc; sf++) {
		if (!dt->stored[sf].hnsw_metric || (only && !only[sf]))
			continue;
		struct hnsw_scratch *s = scratch_of(w, err);
		rc = s ? sync_node(w, dt, sf, lid, s, err) : STRATA_NOMEM;
	}
	store_attr_reset(w);
	return rc;
}

/* ---- settings and rebuilding ------------------------------------------------------------ */

/* One recorded graph: stored field, metric, M, ef, and for a multi-vector
 * field its vectors' cell type and size (0 and 0 otherwise). */
struct setting {
	uint32_t sf, metric, m, ef, cell, n;
};

/* Drop field sf's graph (and its vectors when it is a multi-vector one). */
static int drop_graph(MDB_txn *t, struct doctype *dt, int sf, int multi,
                      struct strata_error *err)
{
	if (multi) {
		int rc = hnsw_multi_drop(t, dt, sf, err);
		if (rc)
			return rc;
	}
	MDB_cursor *c;
	int rc = mdb_cursor_open(t, dt->hnsw, &c);
	if (rc)
		return store_mdb_err(err, rc, "rebuilding a nearest-neighbour graph");
	uint8_t key[2] = {(uint8_t)(sf >> 8), (uint8_t)sf};
	MDB_val k = {sizeof key, key}, v;
	for (rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE); rc == 0;
	     rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
		const uint8_t *kb = k.mv_data;
		if (kb[0] != key[0] || kb[1] != key[1])
			break;
		if ((rc = mdb_cursor_del(c, 0)) != 0)
			break;
	}
	mdb_cursor_close(c);
	return rc == 0 || rc == MDB_NOTFOUND
	               ? 0 : store_mdb_err(err, rc, "rebuilding a nearest-neighbour graph");
}

static int build_graph(struct store_env *env, MDB_txn *t, struct doctype *dt, int sf,
                       struct strata_error *err)
{
	/* env: the column blocks in the map outlive the graph's writes */
	struct store_txn w = {.env = env, .txn = t, .write = 1};
	struct hnsw_scratch s = {0};
	MDB_cursor *c;
	int rc = mdb_cursor_open(t, dt->docs, &c);
	if (rc)
		return store_mdb_err(err, rc, "rebuilding a nearest-neighbour graph");
	/* the lids first: the inserts write, which a cursor on docs survives,
	 * but reading them all first keeps the two apart */
	uint32_t *lids = NULL;
	size_t n = 0, cap = 0;
	MDB_val k, v;
	int mrc;
	for (mrc = mdb_cursor_get(c, &k, &v, MDB_FIRST); mrc == 0;
	     mrc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
		if (n == cap && (rc = base_grow((void **)&lids, &cap, n + 1, sizeof *lids,
		                                (size_t)1 << 32)) != 0) {
			rc = base_nomem(err, "rebuilding a nearest-neighbour graph");
			break;
		}
		memcpy(&lids[n++], k.mv_data, 4);
	}
	mdb_cursor_close(c);
	if (!rc && mrc != MDB_NOTFOUND)
		rc = store_mdb_err(err, mrc, "rebuilding a nearest-neighbour graph");
	for (size_t i = 0; i < n && !rc; i++)
		rc = sync_node(&w, dt, sf, lids[i], &s, err);
	if (!rc)
		rc = hnsw_cache_flush(&s, err);
	base_free(lids, cap * sizeof *lids);
	base_free(w.buf, w.buf_cap); /* a column block kept aside (attr.c) */
	hnsw_scratch_release(&s);
	return rc;
}

/* The field's graph settings are valid; fill in defaults and the kernel. */
static int check_field(struct store_env *env, struct doctype *dt, struct sfield *f, int avx512,
                       struct strata_error *err)
{
	int cell = f->multi ? f->vec_cell : f->cell;
	if (f->multi) {
		size_t size = base_dtype_size(cell);
		if (f->ncells < 1 || f->ncells > STORE_MAX_CELL_BYTES / 16)
			return base_err(err, STRATA_INVALID_ARGUMENT,
			                "document type '%s', field '%s': vectors of %llu cells cannot "
			                "have a nearest-neighbour graph", dt->name, f->name,
			                (unsigned long long)f->ncells);
		/* a node's cell: the vector, the document's lid, padded to 8 */
		uint32_t vb = (uint32_t)(f->ncells * size);
		f->cell_bytes = (((vb + 3) & ~3u) + 4 + 7) & ~7u;
		store_col_geometry(f, env->psize, 1);
	} else if (f->type != STORE_T_TENSOR || !f->column || f->rank != 1)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "document type '%s': field '%s' cannot have a nearest-neighbour graph "
		                "(only a tensor attribute of one indexed dimension can)",
		                dt->name, f->name);
	if (f->hnsw_m == 0)
		f->hnsw_m = 16;
	if (f->hnsw_ef == 0)
		f->hnsw_ef = 200;
	if (f->hnsw_m < 2 || f->hnsw_m > HNSW_MAX_M || f->hnsw_ef < 1 || f->hnsw_ef > 100000)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "document type '%s', field '%s': max-links-per-node must be 2-%d and "
		                "neighbors-to-explore-at-insert 1-100000 (%d and %d given)",
		                dt->name, f->name, HNSW_MAX_M, f->hnsw_m, f->hnsw_ef);
	if (f->hnsw_metric == STORE_METRIC_GEODEGREES && f->ncells != 2)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "document type '%s', field '%s': distance-metric geodegrees needs two "
		                "cells (latitude, longitude)", dt->name, f->name);
	f->dist = store_dist_kernel(f->hnsw_metric, cell, avx512);
	if (!f->dist)
		return base_err(err, STRATA_NOT_IMPLEMENTED,
		                "document type '%s', field '%s': nearest-neighbour graphs on %s cells "
		                "are not supported (float, double, bfloat16 and int8 are)",
		                dt->name, f->name, base_dtype_name(cell));
	return 0;
}

/* The recorded settings (at most 64) into hv, *n of them: from key k, else
 * from the older form at key old (four words each, single-vector graphs). */
static int read_settings(MDB_txn *t, MDB_dbi meta, MDB_val *k, MDB_val *old,
                         struct setting *hv, size_t *n, struct strata_error *err)
{
	MDB_val v;
	*n = 0;
	int rc = mdb_get(t, meta, k, &v), older = rc == MDB_NOTFOUND;
	if (older)
		rc = mdb_get(t, meta, old, &v);
	if (rc == MDB_NOTFOUND)
		return 0;
	if (rc)
		return store_mdb_err(err, rc, "reading the graph settings");
	size_t each = older ? 4 * sizeof(uint32_t) : sizeof *hv;
	for (size_t i = 0; i < v.mv_size / each && i < 64; i++) {
		memset(&hv[i], 0, sizeof hv[i]);
		memcpy(&hv[i], (const uint8_t *)v.mv_data + i * each, each);
		(*n)++;
	}
	return 0;
}

int store_hnsw_sync(struct store_env *env, MDB_txn *t, struct doctype *dt,
                    struct strata_error *err)
{
	MDB_dbi meta = env->meta;
	int avx512 = store_cpu_avx512(), rc;
	struct setting want[64];
	int nwant = 0;
	for (int sf = 0; sf < dt->nstored; sf++) {
		struct sfield *f = &dt->stored[sf];
		if (!f->hnsw_metric)
			continue;
		if ((rc = check_field(env, dt, f, avx512, err)) != 0)
			return rc;
		if (nwant == (int)(sizeof want / sizeof want[0]))
			return base_err(err, STRATA_LIMIT, "document type '%s': more than %d graphs",
			                dt->name, nwant);
		want[nwant++] = (struct setting){(uint32_t)sf, (uint32_t)f->hnsw_metric,
		                                 (uint32_t)f->hnsw_m, (uint32_t)f->hnsw_ef,
		                                 f->multi ? (uint32_t)f->vec_cell : 0,
		                                 f->multi ? (uint32_t)f->ncells : 0};
	}
	char key[STORE_MAX_NAME + 8];
	MDB_val k = {(size_t)snprintf(key, sizeof key, "g/%s", dt->name), key};
	char okey[STORE_MAX_NAME + 8];
	MDB_val ok = {(size_t)snprintf(okey, sizeof okey, "h/%s", dt->name), okey};
	struct setting hv[64];
	size_t nhad;
	if ((rc = read_settings(t, meta, &k, &ok, hv, &nhad, err)) != 0)
		return rc;
	int changed = nhad != (size_t)nwant;
	/* Graphs that went away or changed are dropped; new or changed ones built. */
	for (size_t i = 0; i < nhad; i++) {
		int same = 0;
		for (int j = 0; j < nwant; j++)
			same |= memcmp(&hv[i], &want[j], sizeof hv[i]) == 0;
		if (!same && (rc = drop_graph(t, dt, (int)hv[i].sf, hv[i].n != 0, err)) != 0)
			return rc;
		changed |= !same;
	}
	for (int j = 0; j < nwant; j++) {
		int same = 0;
		for (size_t i = 0; i < nhad; i++)
			same |= memcmp(&hv[i], &want[j], sizeof hv[i]) == 0;
		if (same)
			continue;
		changed = 1;
		if ((rc = drop_graph(t, dt, (int)want[j].sf, want[j].n != 0, err)) != 0 ||
		    (rc = build_graph(env, t, dt, (int)want[j].sf, err)) != 0)
			return rc;
	}
	if (!changed)
		return 0;
	if ((rc = mdb_del(t, meta, &ok, NULL)) != 0 && rc != MDB_NOTFOUND)
		return store_mdb_err(err, rc, "recording the graph settings");
	MDB_val nv = {(size_t)nwant * sizeof *want, want};
	rc = nwant ? mdb_put(t, meta, &k, &nv, 0) : mdb_del(t, meta, &k, NULL);
	return rc && rc != MDB_NOTFOUND ? store_mdb_err(err, rc, "recording the graph settings") : 0;
}
