/*
 * test_text_blocks.c: the posting blocks of the text index
 * (store/text_blocks.c) at their edges.  Enough documents share terms that
 * blocks fill and split (by count, and by bytes with a term repeated a
 * thousand times in a document); removes take the first lid of blocks and a
 * term's last posting; updates insert into full blocks.  After each step
 * every term's postings are checked against a brute-force model that reads
 * the stored documents back and splits them on spaces: the lids in order,
 * each posting's positions, the frequency, and seeks forward across block
 * boundaries and back.  Allocation failures at every point of a batch and
 * its commit leave the index as it was and leak nothing.  An index marked
 * with the previous format is rebuilt on open.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lmdb.h>

#include "../store/store.h"

static struct store_field fields[1] = {
	{.name = "body", .type = STORE_T_STRING, .text = STORE_TEXT_ON | BASE_TOKEN_NORMALIZE},
};
static const struct store_doctype doc = {"doc", 1, fields};

static const char *const terms[] = {"common", "even", "tri", "rare", "big", "wa", "wb", "wc",
                                    "none"};
#define NTERMS (sizeof terms / sizeof terms[0])
#define MAXDOC 1600
#define MAXPOS 1600

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

/* Document i's body, variant v (0: as first fed): words separated by one
 * space. */
static char *body_of(unsigned i, unsigned v)
{
	size_t cap = 16 * MAXPOS, n = 0;
	char *b = malloc(cap);
	assert_non_null(b);
	b[0] = 0;
#define W(s) (n += (size_t)snprintf(b + n, cap - n, "%s%s", n ? " " : "", (s)))
	W("wa");
	W("common");
	if ((i + v) % 2 == 0)
		W("even");
	if ((i + v) % 3 == 0)
		W("tri");
	if (i % 97 == 5 && !v)
		W("rare");
	W((i + v) % 2 ? "wb" : "wc");
	if (i % 250 == 7 && !v)
		for (int k = 0; k < 1000; k++)
			W("big");
	if ((i * 7 + v) % 5 == 0)
		W("common");
#undef W
	return b;
}

/* The positions of term in a stored body: count returned. */
static int model_positions(const char *s, size_t n, const char *term, uint32_t *pos)
{
	int k = 0;
	uint32_t p = 0;
	size_t tl = strlen(term);
	for (size_t a = 0; a < n; p++) {
		size_t e = a;
		while (e < n && s[e] != ' ')
			e++;
		if (e - a == tl && memcmp(s + a, term, tl) == 0) {
			assert_true(k < MAXPOS);
			pos[k++] = p;
		}
		a = e + 1;
	}
	return k;
}

static void check_term(struct store_txn *r, int dt, const char *term)
{
	struct strata_error err = {0};
	static uint32_t lids[MAXDOC], bpos[MAXPOS], pos[MAXPOS];
	struct store_postings *pl;
	assert_int_equal(store_postings_open(r, dt, 0, term, strlen(term), &pl, &err), 0);
	size_t df = 0;
	uint32_t at = 0;
	/* the block being read: its bounds, and those of its postings seen */
	uint32_t last = 0, max_tf = 0, min_dl = 0, seen_tf = 0, seen_dl = UINT32_MAX;
	int inblock = 0;
	for (uint32_t lid = 0; store_next(r, dt, &lid) == 0; lid++) {
		struct store_value v;
		assert_int_equal(store_get(r, dt, lid, &v, &err), 0);
		int bn = model_positions(v.s, v.n, term, bpos);
		if (!bn)
			continue;
		assert_int_equal(store_postings_seek(pl, &at), 0);
		assert_int_equal(at, lid);
		assert_int_equal(store_postings_positions(pl, pos, MAXPOS), bn);
		assert_memory_equal(pos, bpos, (size_t)bn * sizeof *pos);
		/* occurrences, the field's length, the block's bounds: exactly the
		 * most and the least of its postings */
		uint32_t words = 1;
		for (size_t c = 0; c < v.n; c++)
			words += v.s[c] == ' ';
		assert_int_equal(store_postings_tf(pl), bn);
		assert_int_equal(store_postings_dl(pl), words);
		uint32_t bl, bt, bd;
		assert_int_equal(store_postings_block(pl, &bl, &bt, &bd), 0);
		if (inblock && bl != last) {
			assert_int_equal(seen_tf, max_tf);
			assert_int_equal(seen_dl, min_dl);
			seen_tf = 0;
			seen_dl = UINT32_MAX;
		}
		inblock = 1;
		last = bl, max_tf = bt, min_dl = bd;
		seen_tf = (uint32_t)bn > seen_tf ? (uint32_t)bn : seen_tf;
		seen_dl = words < seen_dl ? words : seen_dl;
		assert_true(df < MAXDOC);
		lids[df++] = lid;
		at = lid + 1;
	}
	if (inblock) {
		assert_int_equal(seen_tf, max_tf);
		assert_int_equal(seen_dl, min_dl);
	}
	assert_int_equal(store_postings_seek(pl, &at), STRATA_NOT_FOUND);
	assert_int_equal(store_postings_df(pl), df);
	/* seeks forward by varied strides (across blocks) and back */
	unsigned seed = (unsigned)strlen(term) * 2654435761u + 3;
	uint32_t to = 0;
	for (int k = 0; k < 400; k++) {
		seed = seed * 1103515245u + 12345u;
		if (k % 4 == 3)
			to = (seed >> 8) % (MAXDOC + 2);
		else
			to += (seed >> 8) % (k % 2 ? 300 : 9);
		uint32_t got = to;
		size_t j = 0;
		while (j < df && lids[j] < to)
			j++;
		int rc = store_postings_seek(pl, &got);
		if (j == df) {
			assert_int_equal(rc, STRATA_NOT_FOUND);
			to = 0;
			continue;
		}
		assert_int_equal(rc, 0);
		assert_int_equal(got, lids[j]);
	}
	store_postings_close(pl);
}

static void check_all(struct store_env *env, int dt)
{
	struct strata_error err = {0};
	struct store_txn *r;
	assert_int_equal(store_txn_begin(env, 0, &r, &err), 0);
	for (size_t t = 0; t < NTERMS; t++)
		check_term(r, dt, terms[t]);
	uint64_t postings;
	assert_int_equal(store_text_check(r, dt, &postings, &err), 0);
	assert_true(postings > 0);
	store_txn_abort(r);
}

static int put(struct store_txn *w, int dt, unsigned i, unsigned v, struct strata_error *err)
{
	char id[64], *b = body_of(i, v);
	snprintf(id, sizeof id, "id:t:doc::%u", i);
	struct store_value val = {.set = 1, .s = b, .n = strlen(b)};
	int rc = store_put(w, dt, id, &val, err);
	free(b);
	return rc;
}

static int del(struct store_txn *w, int dt, unsigned i, struct strata_error *err)
{
	char id[64];
	snprintf(id, sizeof id, "id:t:doc::%u", i);
	return store_remove(w, dt, id, err);
}

static uint64_t df_of(struct store_env *env, int dt, const char *term)
{
	struct strata_error err = {0};
	struct store_txn *r;
	struct store_postings *pl;
	assert_int_equal(store_txn_begin(env, 0, &r, &err), 0);
	assert_int_equal(store_postings_open(r, dt, 0, term, strlen(term), &pl, &err), 0);
	uint64_t df = store_postings_df(pl);
	uint32_t at = 0;
	if (!df)
		assert_int_equal(store_postings_seek(pl, &at), STRATA_NOT_FOUND);
	store_postings_close(pl);
	store_txn_abort(r);
	return df;
}

/* Open the store in dir (fresh: make dir from its template first). */
static int open_store(char *dir, int fresh, struct store_env **env)
{
	struct strata_error err = {0};
	int dt = -1;
	if (fresh)
		assert_non_null(mkdtemp(dir));
	assert_int_equal(store_open(dir, env, &err), 0);
	assert_int_equal(store_doctype_add(*env, &doc, &dt, &err), 0);
	return dt;
}

/* Documents [from, to) as first fed, in one transaction. */
static void feed(struct store_env *env, int dt, unsigned from, unsigned to)
{
	struct strata_error err = {0};
	struct store_txn *w;
	assert_int_equal(store_txn_begin(env, 1, &w, &err), 0);
	for (unsigned i = from; i < to; i++)
		assert_int_equal(put(w, dt, i, 0, &err), 0);
	assert_int_equal(store_txn_commit(w, &err), 0);
}

static void test_block_edges(void **state)
{
	(void)state;
	char dir[] = "/tmp/strata_blocks_XXXXXX";
	struct store_env *env;
	struct strata_error err = {0};
	int dt = open_store(dir, 1, &env);
	/* a feed in batches: common's blocks fill by count, big's by bytes */
	for (unsigned b = 0; b < 10; b++)
		feed(env, dt, b * 100, b * 100 + 100);
	struct store_txn *w;
	/* one document at a time */
	for (unsigned i = 1000; i < 1040; i++) {
		assert_int_equal(store_txn_begin(env, 1, &w, &err), 0);
		assert_int_equal(put(w, dt, i, 0, &err), 0);
		assert_int_equal(store_txn_commit(w, &err), 0);
	}
	check_all(env, dt);
	/* removes: the first lids of blocks (lids 0, 128, 256, ... begin
	 * common's blocks when fed in order) and runs across boundaries */
	assert_int_equal(store_txn_begin(env, 1, &w, &err), 0);
	for (unsigned i = 0; i < 1040; i += 128)
		assert_int_equal(del(w, dt, i, &err), 0);
	for (unsigned i = 250; i < 270; i++)
		if (i != 256)
			assert_int_equal(del(w, dt, i, &err), 0);
	assert_int_equal(store_txn_commit(w, &err), 0);
	check_all(env, dt);
	/* a term's postings removed one by one, the last one included */
	uint64_t rare = df_of(env, dt, "rare");
	assert_true(rare > 5);
	for (unsigned i = 5; i < 1040; i += 97) {
		assert_int_equal(store_txn_begin(env, 1, &w, &err), 0);
		assert_int_equal(put(w, dt, i, 1, &err), 0); /* variant 1 has no "rare" */
		assert_int_equal(store_txn_commit(w, &err), 0);
		assert_int_equal(df_of(env, dt, "rare"), --rare);
	}
	assert_int_equal(rare, 0);
	check_all(env, dt);
	/* updates in place: postings inserted into and removed from full
	 * blocks in the middle of the lists */
	assert_int_equal(store_txn_begin(env, 1, &w, &err), 0);
	for (unsigned i = 300; i < 700; i += 3)
		assert_int_equal(put(w, dt, i, 1 + i % 2, &err), 0);
	assert_int_equal(store_txn_commit(w, &err), 0);
	check_all(env, dt);
	/* in one transaction: documents added then removed or changed
	 * again before the commit, beside stored ones changed */
	assert_int_equal(store_txn_begin(env, 1, &w, &err), 0);
	for (unsigned i = 2000; i < 2200; i++)
		assert_int_equal(put(w, dt, i, 0, &err), 0);
	for (unsigned i = 2000; i < 2200; i += 3)
		assert_int_equal(i % 2 ? del(w, dt, i, &err) : put(w, dt, i, 1, &err), 0);
	for (unsigned i = 700; i < 760; i += 5)
		assert_int_equal(put(w, dt, i, 1 + i % 3, &err), 0);
	assert_int_equal(store_txn_commit(w, &err), 0);
	check_all(env, dt);
	/* removed documents put back get new lids, at the end */
	assert_int_equal(store_txn_begin(env, 1, &w, &err), 0);
	for (unsigned i = 250; i < 270; i++)
		assert_int_equal(put(w, dt, i, 0, &err), 0);
	assert_int_equal(store_txn_commit(w, &err), 0);
	check_all(env, dt);
	store_close(env);
	dt = open_store(dir, 0, &env);
	check_all(env, dt);
	store_close(env);
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* A batch of puts, updates and removes with its commit, failing at the
 * k-th allocation for every k: the index stays as it was, nothing leaks,
 * and the batch finally goes through. */
static void test_alloc_failures(void **state)
{
	(void)state;
	char dir[] = "/tmp/strata_blocks_XXXXXX";
	struct store_env *env;
	struct strata_error err = {0};
	int dt = open_store(dir, 1, &env);
	feed(env, dt, 0, 300);
	struct store_txn *w;
	uint64_t before = df_of(env, dt, "common");
	int failed = 0;
	for (long k = 1;; k++) {
		struct base_alloc_stats s0, s1;
		base_alloc_stats(&s0);
		assert_int_equal(store_txn_begin(env, 1, &w, &err), 0);
		base_alloc_fail_after(k);
		int rc = 0;
		for (unsigned i = 290; i < 330 && !rc; i++)
			rc = i % 7 == 0 ? del(w, dt, i - 100, &err) : put(w, dt, i, i < 300, &err);
		if (!rc)
			rc = store_txn_commit(w, &err);
		else
			store_txn_abort(w);
		base_alloc_fail_after(0);
		base_alloc_stats(&s1);
		if (!rc)
			break;
		assert_int_equal(rc, STRATA_NOMEM);
		assert_non_null(strstr(err.msg, "out of memory"));
		assert_int_equal(s1.live_bytes, s0.live_bytes);
		assert_int_equal(df_of(env, dt, "common"), before);
		if (++failed % 16 == 1)
			check_all(env, dt);
	}
	assert_true(failed > 3);
	check_all(env, dt);
	assert_int_equal(df_of(env, dt, "common"), before + 25 - 6);
	store_close(env);
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* An index in the previous format (a key per posting, marked TXF1) is
 * rebuilt when the store is opened: a stray posting key of that format is
 * gone and the index agrees with the documents. */
static void test_old_format_rebuilt(void **state)
{
	(void)state;
	char dir[] = "/tmp/strata_blocks_XXXXXX";
	struct store_env *env;
	int dt = open_store(dir, 1, &env);
	feed(env, dt, 0, 200);
	uint64_t common = df_of(env, dt, "common");
	store_close(env);
	MDB_env *e;
	MDB_txn *t;
	MDB_dbi meta, text;
	assert_int_equal(mdb_env_create(&e), 0);
	assert_int_equal(mdb_env_set_maxdbs(e, 192), 0);
	assert_int_equal(mdb_env_open(e, dir, 0, 0644), 0);
	assert_int_equal(mdb_txn_begin(e, NULL, 0, &t), 0);
	assert_int_equal(mdb_dbi_open(t, "meta", 0, &meta), 0);
	assert_int_equal(mdb_dbi_open(t, "doc/text", 0, &text), 0);
	MDB_val k = {5, "x/doc"}, v;
	assert_int_equal(mdb_get(t, meta, &k, &v), 0);
	uint32_t sig[8];
	assert_true(v.mv_size <= sizeof sig && v.mv_size >= 4);
	memcpy(sig, v.mv_data, v.mv_size);
	sig[v.mv_size / 4 - 1] = 0x54584631u; /* "TXF1" */
	v.mv_data = sig;
	assert_int_equal(mdb_put(t, meta, &k, &v, 0), 0);
	/* field 0, "common", 0, lid 5000 -> positions {1} */
	uint8_t key[] = {0, 0, 'c', 'o', 'm', 'm', 'o', 'n', 0, 0, 0, 0x13, 0x88}, pos = 1;
	MDB_val pk = {sizeof key, key}, pv = {1, &pos};
	assert_int_equal(mdb_put(t, text, &pk, &pv, 0), 0);
	assert_int_equal(mdb_txn_commit(t), 0);
	mdb_env_close(e);
	dt = open_store(dir, 0, &env);
	check_all(env, dt);
	assert_int_equal(df_of(env, dt, "common"), common);
	store_close(env);
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* store_text_check finds a block whose bounds are not its postings', a
 * frequency that is not the count of postings, a posting whose field
 * length is not the document's, and occurrences that are not the count of
 * the posting's positions. */
static void test_check_finds_faults(void **state)
{
	(void)state;
	char dir[] = "/tmp/strata_blocks_XXXXXX";
	struct store_env *env;
	int dt = open_store(dir, 1, &env);
	feed(env, dt, 0, 300);
	store_close(env);
	for (int fault = 0; fault < 4; fault++) {
		MDB_env *e;
		MDB_txn *t;
		MDB_dbi text;
		MDB_cursor *c;
		assert_int_equal(mdb_env_create(&e), 0);
		assert_int_equal(mdb_env_set_maxdbs(e, 192), 0);
		assert_int_equal(mdb_env_open(e, dir, 0, 0644), 0);
		assert_int_equal(mdb_txn_begin(e, NULL, 0, &t), 0);
		assert_int_equal(mdb_dbi_open(t, "doc/text", 0, &text), 0);
		/* "tri" (or "common", once or twice in a document): its frequency
		 * entry, then its first block */
		uint8_t tri[] = {0, 0, 't', 'r', 'i', 0};
		uint8_t common[] = {0, 0, 'c', 'o', 'm', 'm', 'o', 'n', 0};
		MDB_val k = {fault == 3 ? sizeof common : sizeof tri, fault == 3 ? common : tri}, v;
		assert_int_equal(mdb_cursor_open(t, text, &c), 0);
		assert_int_equal(mdb_cursor_get(c, &k, &v, MDB_SET_KEY), 0);
		uint32_t df;
		memcpy(&df, v.mv_data, 4);
		if (fault == 0) { /* one frequency too many */
			df++;
			MDB_val nv = {4, &df};
			assert_int_equal(mdb_cursor_put(c, &k, &nv, MDB_CURRENT), 0);
		} else {
			assert_int_equal(mdb_cursor_get(c, &k, &v, MDB_NEXT), 0);
			uint8_t b[4096];
			assert_true(v.mv_size <= sizeof b && v.mv_size > 8);
			memcpy(b, v.mv_data, v.mv_size);
			/* header: n, max_tf, min_dl, lid bytes, the columns' widths;
			 * then the lids, the occurrences, the lengths (small values:
			 * one more stays one byte) */
			size_t o = 0, at[4];
			uint32_t hv[4];
			for (int h = 0; h < 4; h++) {
				at[h] = o;
				hv[h] = 0;
				uint8_t byte;
				int sh = 0;
				do {
					byte = b[o++];
					hv[h] |= (uint32_t)(byte & 0x7f) << sh;
					sh += 7;
				} while (byte & 0x80);
			}
			uint8_t widths = b[o++];
			size_t tf = o + hv[3];                   /* the occurrences, a byte each */
			o = tf + hv[0] * (1u << (widths & 3));   /* the first posting's length */
			assert_true((widths & 3) == 0 && b[at[1]] < 0x7f && b[o] < 0xff);
			if (fault == 1) {
				b[at[1]]++;
			} else if (fault == 2) {
				b[o]++;
			} else { /* a posting once in its document said twice, the bound kept */
				uint32_t i = 0;
				while (i < hv[0] && b[tf + i] != 1)
					i++;
				assert_true(i < hv[0] && hv[1] == 2);
				b[tf + i] = 2;
			}
			MDB_val nv = {v.mv_size, b};
			assert_int_equal(mdb_cursor_put(c, &k, &nv, MDB_CURRENT), 0);
		}
		mdb_cursor_close(c);
		assert_int_equal(mdb_txn_commit(t), 0);
		mdb_env_close(e);
		struct strata_error err = {0};
		struct store_txn *r;
		uint64_t postings;
		assert_int_equal(store_open(dir, &env, &err), 0);
		assert_int_equal(store_doctype_add(env, &doc, &dt, &err), 0);
		assert_int_equal(store_txn_begin(env, 0, &r, &err), 0);
		assert_int_equal(store_text_check(r, dt, &postings, &err), STRATA_CORRUPT);
		static const char *const says[] = {"frequency", "bounds", "length", "occurrences"};
		if (!strstr(err.msg, says[fault]))
			fail_msg("fault %d: %s", fault, err.msg);
		store_txn_abort(r);
		/* put it right again for the next: the documents fed afresh */
		store_close(env);
		nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
		memcpy(dir + strlen(dir) - 6, "XXXXXX", 6);
		dt = open_store(dir, 1, &env);
		feed(env, dt, 0, 300);
		store_close(env);
	}
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_block_edges),
		cmocka_unit_test(test_alloc_failures),
		cmocka_unit_test(test_old_format_rebuilt),
		cmocka_unit_test(test_check_finds_faults),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
