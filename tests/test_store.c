/*
 * test_store.c: the document store: every field type through put and get,
 * update and remove, persistence across reopen, layout changes, column
 * pointers into the map, many blocks, rejected and failed writes, snapshots
 * and a writer thread next to a reader thread.  Each test works in its own
 * temporary folder.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <ftw.h>
#include <lmdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../store/store.h"
#include "../store/store_int.h" /* to hide the map address in one test */

/* ---- fixture ------------------------------------------------------------ */

struct fx {
	char dir[64];
	struct store_env *env;
	int dt;
	struct strata_error err;
};

enum {
	F_TITLE, F_COUNT, F_BIG, F_PRICE, F_SCORE, F_INSTOCK, F_EMB, F_Q, F_BF, F_I32, F_I64, F_DD,
	F_NOTE, F_RAW, F_FLAG, F_RATIO, NF
};
#define EMB 384

static struct store_field fields[NF] = {
	[F_TITLE] = {.name = "title", .type = STORE_T_STRING, .attribute = 1, .cell = 0, .rank = 0, .dims = {0}},
	[F_COUNT] = {.name = "count", .type = STORE_T_INT, .attribute = 1, .cell = 0, .rank = 0, .dims = {0}},
	[F_BIG] = {.name = "big", .type = STORE_T_LONG, .attribute = 1, .cell = 0, .rank = 0, .dims = {0}},
	[F_PRICE] = {.name = "price", .type = STORE_T_FLOAT, .attribute = 1, .cell = 0, .rank = 0, .dims = {0}},
	[F_SCORE] = {.name = "score", .type = STORE_T_DOUBLE, .attribute = 1, .cell = 0, .rank = 0, .dims = {0}},
	[F_INSTOCK] = {.name = "instock", .type = STORE_T_BOOL, .attribute = 1, .cell = 0, .rank = 0, .dims = {0}},
	[F_EMB] = {.name = "emb", .type = STORE_T_TENSOR, .attribute = 1, .cell = BASE_DT_FLOAT, .rank = 1, .dims = {EMB}},
	[F_Q] = {.name = "q", .type = STORE_T_TENSOR, .attribute = 1, .cell = BASE_DT_INT8, .rank = 1, .dims = {16}},
	[F_BF] = {.name = "bf", .type = STORE_T_TENSOR, .attribute = 1, .cell = BASE_DT_BFLOAT16, .rank = 1, .dims = {8}},
	[F_I32] = {.name = "i32", .type = STORE_T_TENSOR, .attribute = 1, .cell = BASE_DT_INT32, .rank = 2, .dims = {2, 3}},
	[F_I64] = {.name = "i64", .type = STORE_T_TENSOR, .attribute = 1, .cell = BASE_DT_INT64, .rank = 1, .dims = {4}},
	[F_DD] = {.name = "dd", .type = STORE_T_TENSOR, .attribute = 1, .cell = BASE_DT_DOUBLE, .rank = 1, .dims = {3}},
	[F_NOTE] = {.name = "note", .type = STORE_T_LONG, .attribute = 0, .cell = 0, .rank = 0, .dims = {0}},
	[F_RAW] = {.name = "raw", .type = STORE_T_TENSOR, .attribute = 0, .cell = BASE_DT_FLOAT, .rank = 1, .dims = {5}},
	[F_FLAG] = {.name = "flag", .type = STORE_T_BOOL, .attribute = 0, .cell = 0, .rank = 0, .dims = {0}},
	[F_RATIO] = {.name = "ratio", .type = STORE_T_FLOAT, .attribute = 0, .cell = 0, .rank = 0, .dims = {0}},
};
static const struct store_doctype product = {"product", NF, fields};

/* Cell buffers of one document, generated from k. */
struct doc {
	char id[64];
	char title[64];
	float emb[EMB];
	int8_t q[16];
	uint16_t bf[8];
	int32_t i32[6];
	int64_t i64[4];
	double dd[3];
	float raw[5];
	struct store_value v[NF];
};

static void make_doc(struct doc *d, int k)
{
	memset(d, 0, sizeof *d);
	snprintf(d->id, sizeof d->id, "id:shop:product::%d", k);
	snprintf(d->title, sizeof d->title, "lamp number %d", k);
	for (int i = 0; i < EMB; i++)
		d->emb[i] = (float)k + (float)i / 1000.0f;
	for (int i = 0; i < 16; i++)
		d->q[i] = (int8_t)((k + i) % 256 - 128);
	for (int i = 0; i < 8; i++)
		d->bf[i] = base_f32_to_bf16((float)(k * 8 + i));
	for (int i = 0; i < 6; i++)
		d->i32[i] = k * 10 + i;
	for (int i = 0; i < 4; i++)
		d->i64[i] = (int64_t)k * 1000000000000LL + i;
	for (int i = 0; i < 3; i++)
		d->dd[i] = k + i * 0.25;
	for (int i = 0; i < 5; i++)
		d->raw[i] = (float)(k - i);
	struct store_value *v = d->v;
	v[F_TITLE] = (struct store_value){.set = 1, .s = d->title, .n = strlen(d->title)};
	v[F_COUNT] = (struct store_value){.set = 1, .i = -k};
	v[F_BIG] = (struct store_value){.set = 1, .i = (int64_t)k << 40};
	v[F_PRICE] = (struct store_value){.set = 1, .d = k + 0.5};
	v[F_SCORE] = (struct store_value){.set = 1, .d = k / 3.0};
	v[F_INSTOCK] = (struct store_value){.set = 1, .i = k & 1};
	v[F_EMB] = (struct store_value){.set = 1, .n = EMB, .cells = d->emb};
	v[F_Q] = (struct store_value){.set = 1, .n = 16, .cells = d->q};
	v[F_BF] = (struct store_value){.set = 1, .n = 8, .cells = d->bf};
	v[F_I32] = (struct store_value){.set = 1, .n = 6, .cells = d->i32};
	v[F_I64] = (struct store_value){.set = 1, .n = 4, .cells = d->i64};
	v[F_DD] = (struct store_value){.set = 1, .n = 3, .cells = d->dd};
	v[F_NOTE] = (struct store_value){.set = 1, .i = 7 * k};
	v[F_RAW] = (struct store_value){.set = 1, .n = 5, .cells = d->raw};
	v[F_FLAG] = (struct store_value){.set = 1, .i = !(k & 1)};
	v[F_RATIO] = (struct store_value){.set = 1, .d = k * 0.125};
}

/* Check that got[] holds document k (all fields set). */
static void check_doc(const struct store_value *got, int k)
{
	struct doc d;
	make_doc(&d, k);
	for (int f = 0; f < NF; f++)
		assert_int_equal(got[f].set, 1);
	assert_int_equal(got[F_TITLE].n, strlen(d.title));
	assert_memory_equal(got[F_TITLE].s, d.title, got[F_TITLE].n);
	assert_int_equal(got[F_COUNT].i, -k);
	assert_int_equal(got[F_BIG].i, (int64_t)k << 40);
	assert_true(got[F_PRICE].d == (double)(float)(k + 0.5));
	assert_true(got[F_SCORE].d == k / 3.0);
	assert_int_equal(got[F_INSTOCK].i, k & 1);
	assert_int_equal(got[F_EMB].n, EMB);
	assert_memory_equal(got[F_EMB].cells, d.emb, sizeof d.emb);
	assert_memory_equal(got[F_Q].cells, d.q, sizeof d.q);
	assert_memory_equal(got[F_BF].cells, d.bf, sizeof d.bf);
	assert_int_equal(got[F_I32].n, 6);
	assert_memory_equal(got[F_I32].cells, d.i32, sizeof d.i32);
	assert_memory_equal(got[F_I64].cells, d.i64, sizeof d.i64);
	assert_memory_equal(got[F_DD].cells, d.dd, sizeof d.dd);
	assert_int_equal(got[F_NOTE].i, 7 * k);
	assert_int_equal(got[F_RAW].n, 5);
	assert_memory_equal(got[F_RAW].cells, d.raw, sizeof d.raw);
	assert_int_equal(got[F_FLAG].i, !(k & 1));
	assert_true(got[F_RATIO].d == (double)(float)(k * 0.125));
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

static int setup(void **state)
{
	struct fx *fx = calloc(1, sizeof *fx);
	strcpy(fx->dir, "/tmp/strata_store_XXXXXX");
	if (!mkdtemp(fx->dir))
		return -1;
	if (store_open(fx->dir, &fx->env, &fx->err) != 0 ||
	    store_doctype_add(fx->env, &product, &fx->dt, &fx->err) != 0) {
		fprintf(stderr, "setup: %s\n", fx->err.msg);
		store_close(fx->env);
		nftw(fx->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
		free(fx);
		return -1;
	}
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fx *fx = *state;
	store_close(fx->env);
	nftw(fx->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(fx);
	return 0;
}

static void reopen(struct fx *fx)
{
	store_close(fx->env);
	fx->env = NULL;
	assert_int_equal(store_open(fx->dir, &fx->env, &fx->err), 0);
	assert_int_equal(store_doctype_add(fx->env, &product, &fx->dt, &fx->err), 0);
}

static void put_docs(struct fx *fx, int from, int to)
{
	struct store_txn *w;
	assert_int_equal(store_txn_begin(fx->env, 1, &w, &fx->err), 0);
	static struct doc d;
	for (int k = from; k < to; k++) {
		make_doc(&d, k);
		assert_int_equal(store_put(w, fx->dt, d.id, d.v, &fx->err), 0);
	}
	assert_int_equal(store_txn_commit(w, &fx->err), 0);
}

static uint32_t lid_of(struct store_txn *t, int dt, int k)
{
	char id[64];
	uint32_t lid = UINT32_MAX;
	snprintf(id, sizeof id, "id:shop:product::%d", k);
	assert_int_equal(store_lookup(t, dt, id, &lid, NULL), 0);
	return lid;
}

/* ---- tests ---------------------------------------------------------------- */

static void test_put_get_all_types(void **state)
{
	struct fx *fx = *state;
	put_docs(fx, 0, 3);
	struct store_txn *r;
	assert_int_equal(store_txn_begin(fx->env, 0, &r, &fx->err), 0);
	assert_int_equal(store_count(r, fx->dt), 3);
	struct store_value got[NF];
	for (int k = 0; k < 3; k++) {
		uint32_t lid = lid_of(r, fx->dt, k);
		assert_int_equal(store_get(r, fx->dt, lid, got, &fx->err), 0);
		check_doc(got, k);
		char id[64];
		snprintf(id, sizeof id, "id:shop:product::%d", k);
		assert_string_equal(store_docid(r, fx->dt, lid), id);
		/* Column values: pointers into the map, aligned, equal to the put. */
		const float *e = store_attr(r, fx->dt, F_EMB, lid);
		assert_non_null(e);
		assert_true(store_in_map(fx->env, e));
		assert_int_equal((uintptr_t)e % 8, 0);
		assert_true(e == got[F_EMB].cells);
		assert_true(e[0] == (float)k && e[383] == (float)k + 0.383f);
		const int32_t *c = store_attr(r, fx->dt, F_COUNT, lid);
		assert_non_null(c);
		assert_true(store_in_map(fx->env, c));
		assert_int_equal(*c, -k);
		const int64_t *b = store_attr(r, fx->dt, F_BIG, lid);
		assert_int_equal((uintptr_t)b % 8, 0);
		assert_int_equal(*b, (int64_t)k << 40);
		assert_true(*(const float *)store_attr(r, fx->dt, F_PRICE, lid) == (float)(k + 0.5));
		assert_true(*(const double *)store_attr(r, fx->dt, F_SCORE, lid) == k / 3.0);
		assert_int_equal(*(const uint8_t *)store_attr(r, fx->dt, F_INSTOCK, lid), k & 1);
		const int64_t *i64 = store_attr(r, fx->dt, F_I64, lid);
		assert_int_equal((uintptr_t)i64 % 8, 0);
		assert_int_equal(i64[3], (int64_t)k * 1000000000000LL + 3);
		/* Strings and non-attribute fields have no column. */
		assert_null(store_attr(r, fx->dt, F_TITLE, lid));
		assert_null(store_attr(r, fx->dt, F_NOTE, lid));
		assert_null(store_attr(r, fx->dt, F_RAW, lid));
	}
	/* Bad field, lid past the end, bad doctype: NULL, no crash. */
	assert_null(store_attr(r, fx->dt, NF, 0));
	assert_null(store_attr(r, fx->dt, -1, 0));
	assert_null(store_attr(r, fx->dt, F_EMB, 3));
	assert_null(store_attr(r, fx->dt, F_EMB, 1000000));
	assert_null(store_attr(r, 99, F_EMB, 0));
	assert_null(store_docid(r, fx->dt, 3));
	assert_int_equal(store_get(r, fx->dt, 3, got, &fx->err), STRATA_NOT_FOUND);
	assert_int_equal(store_lookup(r, fx->dt, "id:shop:product::9", &(uint32_t){0}, &fx->err),
	                 STRATA_NOT_FOUND);
	/* Iteration in lid order. */
	uint32_t lid = 0;
	int n = 0;
	for (; store_next(r, fx->dt, &lid) == 0; lid++)
		assert_int_equal(lid, n++);
	assert_int_equal(n, 3);
	/* A read txn cannot write. */
	struct doc d;
	make_doc(&d, 5);
	assert_int_equal(store_put(r, fx->dt, d.id, d.v, &fx->err), STRATA_INVALID_ARGUMENT);
	store_txn_abort(r);
}

static void test_put_replaces_and_update(void **state)
{
	struct fx *fx = *state;
	put_docs(fx, 0, 2);
	struct store_txn *w;
	assert_int_equal(store_txn_begin(fx->env, 1, &w, &fx->err), 0);
	/* update assigns only the given fields */
	struct store_value v[NF] = {0};
	v[F_PRICE] = (struct store_value){.set = 1, .d = 99.25};
	v[F_TITLE] = (struct store_value){.set = 1, .s = "new", .n = 3};
	v[F_NOTE] = (struct store_value){.set = 1, .i = -5};
	assert_int_equal(store_update(w, fx->dt, "id:shop:product::1", v, &fx->err), 0);
	/* update of a missing document: NOT_FOUND, txn still usable */
	assert_int_equal(store_update(w, fx->dt, "id:shop:product::77", v, &fx->err),
	                 STRATA_NOT_FOUND);
	assert_non_null(strstr(fx->err.msg, "id:shop:product::77"));
	/* put replaces: fields not given become absent */
	struct store_value p[NF] = {0};
	p[F_COUNT] = (struct store_value){.set = 1, .i = 123};
	assert_int_equal(store_put(w, fx->dt, "id:shop:product::0", p, &fx->err), 0);
	assert_int_equal(store_txn_commit(w, &fx->err), 0);

	struct store_txn *r;
	assert_int_equal(store_txn_begin(fx->env, 0, &r, &fx->err), 0);
	struct store_value got[NF];
	uint32_t l1 = lid_of(r, fx->dt, 1), l0 = lid_of(r, fx->dt, 0);
	assert_int_equal(store_get(r, fx->dt, l1, got, &fx->err), 0);
	assert_true(got[F_PRICE].d == 99.25);
	assert_int_equal(got[F_TITLE].n, 3);
	assert_memory_equal(got[F_TITLE].s, "new", 3);
	assert_int_equal(got[F_NOTE].i, -5);
	/* the rest is untouched */
	struct doc d;
	make_doc(&d, 1);
	assert_int_equal(got[F_COUNT].i, -1);
	assert_memory_equal(got[F_EMB].cells, d.emb, sizeof d.emb);
	assert_memory_equal(got[F_RAW].cells, d.raw, sizeof d.raw);
	assert_true(got[F_RATIO].d == 0.125);
	assert_int_equal(got[F_FLAG].i, 0);

	assert_int_equal(store_get(r, fx->dt, l0, got, &fx->err), 0);
	for (int f = 0; f < NF; f++)
		assert_int_equal(got[f].set, f == F_COUNT);
	assert_int_equal(got[F_COUNT].i, 123);
	assert_null(store_attr(r, fx->dt, F_EMB, l0));
	assert_null(store_attr(r, fx->dt, F_PRICE, l0));
	assert_non_null(store_attr(r, fx->dt, F_EMB, l1));
	assert_int_equal(store_count(r, fx->dt), 2);
	store_txn_abort(r);
}

static void test_remove(void **state)
{
	struct fx *fx = *state;
	struct store_txn *w;
	uint32_t dn = 99;
	assert_int_equal(store_txn_begin(fx->env, 0, &w, &fx->err), 0);
	assert_int_equal(store_dense(w, fx->dt, &dn), 1); /* none: 0 .. -1 */
	assert_int_equal(dn, 0);
	store_txn_abort(w);
	put_docs(fx, 0, 3);
	assert_int_equal(store_txn_begin(fx->env, 0, &w, &fx->err), 0);
	assert_int_equal(store_dense(w, fx->dt, &dn), 1);
	assert_int_equal(dn, 3);
	uint32_t at = 0; /* a scan after it still steps from the first */
	assert_int_equal(store_next(w, fx->dt, &at), 0);
	assert_int_equal(at, 0);
	store_txn_abort(w);
	assert_int_equal(store_txn_begin(fx->env, 1, &w, &fx->err), 0);
	uint32_t lid = lid_of(w, fx->dt, 1);
	assert_int_equal(store_remove(w, fx->dt, "id:shop:product::1", &fx->err), 0);
	assert_int_equal(store_remove(w, fx->dt, "id:shop:product::1", &fx->err), STRATA_NOT_FOUND);
	assert_int_equal(store_update(w, fx->dt, "id:shop:product::1", (struct store_value[NF]){0},
	                              &fx->err),
	                 STRATA_NOT_FOUND);
	assert_int_equal(store_txn_commit(w, &fx->err), 0);

	struct store_txn *r;
	assert_int_equal(store_txn_begin(fx->env, 0, &r, &fx->err), 0);
	assert_int_equal(store_lookup(r, fx->dt, "id:shop:product::1", &(uint32_t){0}, &fx->err),
	                 STRATA_NOT_FOUND);
	struct store_value got[NF];
	assert_int_equal(store_get(r, fx->dt, lid, got, &fx->err), STRATA_NOT_FOUND);
	assert_null(store_attr(r, fx->dt, F_EMB, lid));
	assert_null(store_attr(r, fx->dt, F_COUNT, lid));
	assert_null(store_docid(r, fx->dt, lid));
	assert_int_equal(store_count(r, fx->dt), 2);
	assert_int_equal(store_dense(r, fx->dt, &dn), 0); /* 0 and 2: a gap */
	uint32_t l = 0;
	assert_int_equal(store_next(r, fx->dt, &l), 0);
	assert_int_equal(l, 0);
	l = 1;
	assert_int_equal(store_next(r, fx->dt, &l), 0);
	assert_int_equal(l, 2);
	l = 3;
	assert_int_equal(store_next(r, fx->dt, &l), STRATA_NOT_FOUND);
	/* neighbours intact */
	assert_int_equal(store_get(r, fx->dt, lid_of(r, fx->dt, 2), got, &fx->err), 0);
	check_doc(got, 2);
	store_txn_abort(r);

	/* put again: a new lid, all values back */
	put_docs(fx, 1, 2);
	assert_int_equal(store_txn_begin(fx->env, 0, &r, &fx->err), 0);
	uint32_t nl = lid_of(r, fx->dt, 1);
	assert_int_not_equal(nl, lid);
	assert_int_equal(store_dense(r, fx->dt, &dn), 0); /* 0, 2 and 3 */
	assert_int_equal(store_get(r, fx->dt, nl, got, &fx->err), 0);
	check_doc(got, 1);
	store_txn_abort(r);
}

static void test_reopen_and_layout(void **state)
{
	struct fx *fx = *state;
	put_docs(fx, 0, 4);
	reopen(fx);
	struct store_txn *r;
	struct store_value got[NF];
	assert_int_equal(store_txn_begin(fx->env, 0, &r, &fx->err), 0);
	assert_int_equal(store_count(r, fx->dt), 4);
	for (int k = 0; k < 4; k++) {
		assert_int_equal(store_get(r, fx->dt, lid_of(r, fx->dt, k), got, &fx->err), 0);
		check_doc(got, k);
	}
	store_txn_abort(r);

	/* An incompatible change is refused, naming the field and both types. */
	store_close(fx->env);
	assert_int_equal(store_open(fx->dir, &fx->env, &fx->err), 0);
	struct store_field changed[NF];
	memcpy(changed, fields, sizeof changed);
	changed[F_EMB].cell = BASE_DT_INT8;
	struct store_doctype bad = {"product", NF, changed};
	int id = -1;
	assert_int_equal(store_doctype_add(fx->env, &bad, &id, &fx->err), STRATA_INVALID_ARGUMENT);
	assert_non_null(strstr(fx->err.msg, "'emb'"));
	assert_non_null(strstr(fx->err.msg, "tensor<float>(384)"));
	assert_non_null(strstr(fx->err.msg, "tensor<int8>(384)"));
	memcpy(changed, fields, sizeof changed);
	changed[F_COUNT].attribute = 0;
	assert_int_equal(store_doctype_add(fx->env, &bad, &id, &fx->err), STRATA_INVALID_ARGUMENT);
	assert_non_null(strstr(fx->err.msg, "'count'"));
	memcpy(changed, fields, sizeof changed);
	changed[F_I32].dims[1] = 4;
	assert_int_equal(store_doctype_add(fx->env, &bad, &id, &fx->err), STRATA_INVALID_ARGUMENT);
	assert_non_null(strstr(fx->err.msg, "'i32'"));

	/* Added fields (in another order) are allowed; the data is intact. */
	struct store_field more[NF + 2];
	more[0] = (struct store_field){.name = "extra", .type = STORE_T_INT, .attribute = 1, .cell = 0, .rank = 0, .dims = {0}, .text = 0};
	for (int f = 0; f < NF; f++)
		more[f + 1] = fields[NF - 1 - f];
	more[NF + 1] = (struct store_field){.name = "label", .type = STORE_T_STRING, .attribute = 0, .cell = 0, .rank = 0, .dims = {0}, .text = 0};
	struct store_doctype ext = {"product", NF + 2, more};
	assert_int_equal(store_doctype_add(fx->env, &ext, &fx->dt, &fx->err), 0);
	assert_int_equal(store_doctype_add(fx->env, &ext, &id, &fx->err), STRATA_EXISTS);
	struct store_value g2[NF + 2];
	assert_int_equal(store_txn_begin(fx->env, 1, &r, &fx->err), 0);
	uint32_t lid = lid_of(r, fx->dt, 2);
	assert_int_equal(store_get(r, fx->dt, lid, g2, &fx->err), 0);
	assert_int_equal(g2[0].set, 0);
	assert_int_equal(g2[NF + 1].set, 0);
	for (int f = 0; f < NF; f++)
		got[f] = g2[NF - f];
	check_doc(got, 2);
	assert_null(store_attr(r, fx->dt, 0, lid));
	g2[0] = (struct store_value){.set = 1, .i = 4242};
	g2[NF + 1] = (struct store_value){.set = 1, .s = "hi", .n = 2};
	assert_int_equal(store_put(r, fx->dt, "id:shop:product::2", g2, &fx->err), 0);
	assert_int_equal(store_txn_commit(r, &fx->err), 0);

	/* Reopen with the original definition: the added fields are hidden
	 * but kept, and the old fields read as before. */
	reopen(fx);
	assert_int_equal(store_txn_begin(fx->env, 0, &r, &fx->err), 0);
	assert_int_equal(store_get(r, fx->dt, lid_of(r, fx->dt, 2), got, &fx->err), 0);
	check_doc(got, 2);
	store_txn_abort(r);
	store_close(fx->env);
	assert_int_equal(store_open(fx->dir, &fx->env, &fx->err), 0);
	assert_int_equal(store_doctype_add(fx->env, &ext, &fx->dt, &fx->err), 0);
	assert_int_equal(store_txn_begin(fx->env, 0, &r, &fx->err), 0);
	lid = lid_of(r, fx->dt, 2);
	assert_int_equal(*(const int32_t *)store_attr(r, fx->dt, 0, lid), 4242);
	assert_int_equal(store_get(r, fx->dt, lid, g2, &fx->err), 0);
	assert_memory_equal(g2[NF + 1].s, "hi", 2);
	store_txn_abort(r);
}

static void test_bad_doctypes(void **state)
{
	struct fx *fx = *state;
	int id;
	struct store_field f2[2] = {{.name = "a", .type = STORE_T_INT, .attribute = 1, .cell = 0, .rank = 0, .dims = {0}, .text = 0}, {.name = "a", .type = STORE_T_LONG, .attribute = 1, .cell = 0, .rank = 0, .dims = {0}, .text = 0}};
	struct store_doctype d = {"dup", 2, f2};
	assert_int_equal(store_doctype_add(fx->env, &d, &id, &fx->err), STRATA_INVALID_ARGUMENT);
	assert_non_null(strstr(fx->err.msg, "'a' is declared twice"));
	d = (struct store_doctype){"bad/name", 1, f2};
	assert_int_equal(store_doctype_add(fx->env, &d, &id, &fx->err), STRATA_INVALID_ARGUMENT);
	struct store_field t = {.name = "t", .type = STORE_T_TENSOR, .attribute = 1, .cell = BASE_DT_UINT8, .rank = 1, .dims = {4}, .text = 0};
	d = (struct store_doctype){"t1", 1, &t};
	assert_int_equal(store_doctype_add(fx->env, &d, &id, &fx->err), STRATA_INVALID_ARGUMENT);
	assert_non_null(strstr(fx->err.msg, "uint8"));
	t = (struct store_field){.name = "t", .type = STORE_T_TENSOR, .attribute = 1, .cell = BASE_DT_FLOAT, .rank = 0, .dims = {4}, .text = 0};
	assert_int_equal(store_doctype_add(fx->env, &d, &id, &fx->err), STRATA_INVALID_ARGUMENT);
	t = (struct store_field){.name = "t", .type = STORE_T_TENSOR, .attribute = 1, .cell = BASE_DT_FLOAT, .rank = 2, .dims = {4, 0}, .text = 0};
	assert_int_equal(store_doctype_add(fx->env, &d, &id, &fx->err), STRATA_INVALID_ARGUMENT);
	t = (struct store_field){.name = "t", .type = 42, .attribute = 1, .cell = 0, .rank = 0, .dims = {0}, .text = 0};
	assert_int_equal(store_doctype_add(fx->env, &d, &id, &fx->err), STRATA_INVALID_ARGUMENT);
	/* a valid second type lives next to the first */
	t = (struct store_field){.name = "t", .type = STORE_T_TENSOR, .attribute = 1, .cell = BASE_DT_FLOAT, .rank = 1, .dims = {4}, .text = 0};
	assert_int_equal(store_doctype_add(fx->env, &d, &id, &fx->err), 0);
	assert_int_not_equal(id, fx->dt);
}

/* Rejected puts write nothing and leave the transaction usable. */
static void test_rejected_put(void **state)
{
	struct fx *fx = *state;
	put_docs(fx, 0, 2);
	struct store_txn *w;
	assert_int_equal(store_txn_begin(fx->env, 1, &w, &fx->err), 0);
	static struct doc d;
	make_doc(&d, 5);
	d.v[F_EMB].n = 383;
	assert_int_equal(store_put(w, fx->dt, d.id, d.v, &fx->err), STRATA_INVALID_ARGUMENT);
	assert_string_equal(fx->err.msg, "field 'emb': 383 cells, expected 384");
	make_doc(&d, 1);
	d.v[F_I32].n = 5;
	assert_int_equal(store_put(w, fx->dt, d.id, d.v, &fx->err), STRATA_INVALID_ARGUMENT);
	make_doc(&d, 1);
	d.v[F_COUNT].i = 1LL << 40;
	assert_int_equal(store_update(w, fx->dt, d.id, d.v, &fx->err), STRATA_INVALID_ARGUMENT);
	assert_non_null(strstr(fx->err.msg, "'count'"));
	char longid[600];
	memset(longid, 'x', sizeof longid - 1);
	longid[sizeof longid - 1] = 0;
	make_doc(&d, 6);
	assert_int_equal(store_put(w, fx->dt, longid, d.v, &fx->err), STRATA_INVALID_ARGUMENT);
	assert_non_null(strstr(fx->err.msg, "599 bytes"));
	assert_int_equal(store_put(w, fx->dt, "", d.v, &fx->err), STRATA_INVALID_ARGUMENT);
	/* An injected allocation failure before any write: NOMEM, nothing
	 * written, txn still usable. */
	base_alloc_fail_after(1);
	int rc = store_put(w, fx->dt, d.id, d.v, &fx->err);
	base_alloc_fail_after(0);
	assert_int_equal(rc, STRATA_NOMEM);
	/* still usable */
	make_doc(&d, 2);
	assert_int_equal(store_put(w, fx->dt, d.id, d.v, &fx->err), 0);
	assert_int_equal(store_txn_commit(w, &fx->err), 0);

	struct store_txn *r;
	struct store_value got[NF];
	assert_int_equal(store_txn_begin(fx->env, 0, &r, &fx->err), 0);
	assert_int_equal(store_count(r, fx->dt), 3);
	for (int k = 0; k < 3; k++) {
		assert_int_equal(store_get(r, fx->dt, lid_of(r, fx->dt, k), got, &fx->err), 0);
		check_doc(got, k);
	}
	assert_int_equal(store_lookup(r, fx->dt, "id:shop:product::5", &(uint32_t){0}, NULL),
	                 STRATA_NOT_FOUND);
	store_txn_abort(r);
}

static void test_abort_writes_nothing(void **state)
{
	struct fx *fx = *state;
	put_docs(fx, 0, 1);
	struct store_txn *w;
	assert_int_equal(store_txn_begin(fx->env, 1, &w, &fx->err), 0);
	static struct doc d;
	make_doc(&d, 1);
	assert_int_equal(store_put(w, fx->dt, d.id, d.v, &fx->err), 0);
	assert_int_equal(store_remove(w, fx->dt, "id:shop:product::0", &fx->err), 0);
	/* the write txn sees its own writes */
	assert_int_equal(store_count(w, fx->dt), 1);
	store_txn_abort(w);
	struct store_txn *r;
	struct store_value got[NF];
	assert_int_equal(store_txn_begin(fx->env, 0, &r, &fx->err), 0);
	assert_int_equal(store_count(r, fx->dt), 1);
	assert_int_equal(store_get(r, fx->dt, lid_of(r, fx->dt, 0), got, &fx->err), 0);
	check_doc(got, 0);
	assert_int_equal(store_lookup(r, fx->dt, d.id, &(uint32_t){0}, NULL), STRATA_NOT_FOUND);
	store_txn_abort(r);
}

/* Many documents over many column blocks, written in several transactions
 * and partly rewritten, so blocks are both created and copied. */
static void many_blocks(struct fx *fx, int map_known)
{
	if (!map_known)
		fx->env->map_lo = NULL; /* blocks are then copied aside to rewrite */
	struct store_field vf[3] = {
		{.name = "n", .type = STORE_T_LONG, .attribute = 1, .cell = 0, .rank = 0, .dims = {0}, .text = 0},
		{.name = "v", .type = STORE_T_TENSOR, .attribute = 1, .cell = BASE_DT_FLOAT, .rank = 1, .dims = {16}, .text = 0},
		{.name = "b", .type = STORE_T_BOOL, .attribute = 1, .cell = 0, .rank = 0, .dims = {0}, .text = 0},
	};
	struct store_doctype vt = {"vec", 3, vf};
	int dt;
	assert_int_equal(store_doctype_add(fx->env, &vt, &dt, &fx->err), 0);
	enum { N = 5000 };
	for (int round = 0; round < 3; round++) {
		struct store_txn *w;
		assert_int_equal(store_txn_begin(fx->env, 1, &w, &fx->err), 0);
		for (int k = 0; k < N; k++) {
			/* round 0 writes all; round 1 rewrites every 7th; round 2
			 * writes the b field of every 3rd through update */
			if ((round == 1 && k % 7) || (round == 2 && k % 3))
				continue;
			char id[32];
			float cells[16];
			snprintf(id, sizeof id, "v%d", k);
			int64_t n = round == 1 ? -k : k;
			for (int i = 0; i < 16; i++)
				cells[i] = (float)(n * 16 + i);
			struct store_value v[3] = {
				{.set = 1, .i = n},
				{.set = 1, .n = 16, .cells = cells},
				{.set = round == 2, .i = 1},
			};
			if (round == 2) {
				v[0].set = v[1].set = 0;
				assert_int_equal(store_update(w, dt, id, v, &fx->err), 0);
			} else {
				assert_int_equal(store_put(w, dt, id, v, &fx->err), 0);
			}
			if (round == 0 && k == N / 2) {
				assert_int_equal(store_txn_commit(w, &fx->err), 0);
				assert_int_equal(store_txn_begin(fx->env, 1, &w, &fx->err), 0);
			}
		}
		assert_int_equal(store_txn_commit(w, &fx->err), 0);
	}
	struct store_txn *r;
	assert_int_equal(store_txn_begin(fx->env, 0, &r, &fx->err), 0);
	assert_int_equal(store_count(r, dt), N);
	int seen = 0;
	for (uint32_t lid = 0; store_next(r, dt, &lid) == 0; lid++) {
		const char *id = store_docid(r, dt, lid);
		assert_non_null(id);
		int k = atoi(id + 1);
		int64_t n = k % 7 ? k : -k;
		const int64_t *pn = store_attr(r, dt, 0, lid);
		const float *pv = store_attr(r, dt, 1, lid);
		const uint8_t *pb = store_attr(r, dt, 2, lid);
		assert_non_null(pn);
		assert_non_null(pv);
		assert_true(store_in_map(fx->env, pv) == map_known);
		assert_int_equal((uintptr_t)pv % 8, 0);
		assert_int_equal(*pn, n);
		assert_true(pv[0] == (float)(n * 16) && pv[15] == (float)(n * 16 + 15));
		if (k % 3 == 0) {
			assert_non_null(pb);
			assert_int_equal(*pb, 1);
		} else {
			assert_null(pb);
		}
		seen++;
	}
	assert_int_equal(seen, N);
	assert_null(store_attr(r, dt, 0, N));
	store_txn_abort(r);
}

static void test_many_blocks(void **state)
{
	many_blocks(*state, 1);
}

static void test_many_blocks_map_unknown(void **state)
{
	many_blocks(*state, 0);
}

/* A write that fails inside LMDB (the map is full) fails the txn: every
 * later call refuses, commit writes nothing, earlier commits are intact. */
static void test_failed_txn(void **state)
{
	struct fx *fx = *state;
	store_close(fx->env);
	fx->env = NULL;
	char dir[80];
	snprintf(dir, sizeof dir, "%s/small", fx->dir);
	struct store_options o = {.map_size = 1 << 20};
	assert_int_equal(store_open_opts(dir, &o, &fx->env, &fx->err), 0);
	assert_int_equal(store_doctype_add(fx->env, &product, &fx->dt, &fx->err), 0);
	put_docs(fx, 0, 2);
	struct store_txn *w;
	assert_int_equal(store_txn_begin(fx->env, 1, &w, &fx->err), 0);
	static struct doc d;
	int rc = 0, k;
	for (k = 2; k < 10000 && rc == 0; k++) {
		make_doc(&d, k);
		rc = store_put(w, fx->dt, d.id, d.v, &fx->err);
	}
	assert_int_equal(rc, STRATA_STORE);
	assert_non_null(strstr(fx->err.msg, "full"));
	make_doc(&d, 0);
	assert_int_equal(store_put(w, fx->dt, d.id, d.v, &fx->err), STRATA_TXN_FAILED);
	assert_int_equal(store_remove(w, fx->dt, d.id, &fx->err), STRATA_TXN_FAILED);
	assert_int_equal(store_lookup(w, fx->dt, d.id, &(uint32_t){0}, &fx->err), STRATA_TXN_FAILED);
	assert_null(store_attr(w, fx->dt, F_EMB, 0));
	assert_int_equal(store_txn_commit(w, &fx->err), STRATA_TXN_FAILED);

	struct store_txn *r;
	struct store_value got[NF];
	assert_int_equal(store_txn_begin(fx->env, 0, &r, &fx->err), 0);
	assert_int_equal(store_count(r, fx->dt), 2);
	for (k = 0; k < 2; k++) {
		assert_int_equal(store_get(r, fx->dt, lid_of(r, fx->dt, k), got, &fx->err), 0);
		check_doc(got, k);
	}
	store_txn_abort(r);
	store_close(fx->env);
	fx->env = NULL;
	assert_int_equal(store_open(fx->dir, &fx->env, &fx->err), 0);
}

/* A corrupt record is STRATA_CORRUPT, not a crash. */
static void test_corrupt_record(void **state)
{
	struct fx *fx = *state;
	put_docs(fx, 0, 2);
	store_close(fx->env);
	fx->env = NULL;
	MDB_env *e;
	MDB_txn *t;
	MDB_dbi dbi;
	assert_int_equal(mdb_env_create(&e), 0);
	mdb_env_set_maxdbs(e, 128);
	mdb_env_set_mapsize(e, 64 << 20); /* small: also under valgrind */
	assert_int_equal(mdb_env_open(e, fx->dir, 0, 0644), 0);
	assert_int_equal(mdb_txn_begin(e, NULL, 0, &t), 0);
	assert_int_equal(mdb_dbi_open(t, "product/docs", MDB_INTEGERKEY, &dbi), 0);
	uint32_t lid = 1;
	MDB_val k = {4, &lid}, v;
	assert_int_equal(mdb_get(t, dbi, &k, &v), 0);
	/* keep the header, cut the record in the middle of a value */
	uint8_t buf[64];
	memcpy(buf, v.mv_data, sizeof buf);
	v = (MDB_val){60, buf};
	assert_int_equal(mdb_put(t, dbi, &k, &v, 0), 0);
	lid = 0;
	uint8_t junk[3] = {9, 9, 9};
	v = (MDB_val){3, junk};
	assert_int_equal(mdb_put(t, dbi, &k, &v, 0), 0);
	assert_int_equal(mdb_txn_commit(t), 0);
	mdb_env_close(e);

	reopen(fx);
	struct store_txn *r;
	struct store_value got[NF];
	assert_int_equal(store_txn_begin(fx->env, 0, &r, &fx->err), 0);
	assert_int_equal(store_get(r, fx->dt, 1, got, &fx->err), STRATA_CORRUPT);
	assert_int_equal(store_get(r, fx->dt, 0, got, &fx->err), STRATA_CORRUPT);
	assert_null(store_docid(r, fx->dt, 0));
	assert_string_equal(store_docid(r, fx->dt, 1), "id:shop:product::1");
	/* columns are separate and still readable */
	assert_int_equal(*(const int32_t *)store_attr(r, fx->dt, F_COUNT, 1), -1);
	store_txn_abort(r);
	/* an update needs the old record: refused, txn not failed */
	struct store_txn *w;
	assert_int_equal(store_txn_begin(fx->env, 1, &w, &fx->err), 0);
	struct store_value v2[NF] = {0};
	v2[F_NOTE] = (struct store_value){.set = 1, .i = 1};
	assert_int_equal(store_update(w, fx->dt, "id:shop:product::1", v2, &fx->err),
	                 STRATA_CORRUPT);
	/* a put replaces the record whole */
	static struct doc d;
	make_doc(&d, 1);
	assert_int_equal(store_put(w, fx->dt, d.id, d.v, &fx->err), 0);
	assert_int_equal(store_get(w, fx->dt, 1, got, &fx->err), 0);
	check_doc(got, 1);
	assert_int_equal(store_txn_commit(w, &fx->err), 0);
}

static void test_snapshot(void **state)
{
	struct fx *fx = *state;
	put_docs(fx, 0, 2);
	struct store_txn *r, *r2;
	assert_int_equal(store_txn_begin(fx->env, 0, &r, &fx->err), 0);
	const float *e0 = store_attr(r, fx->dt, F_EMB, 0);
	assert_non_null(e0);
	/* a writer commits a change to doc 0 and a new doc */
	struct store_txn *w;
	assert_int_equal(store_txn_begin(fx->env, 1, &w, &fx->err), 0);
	static struct doc d;
	make_doc(&d, 100);
	snprintf(d.id, sizeof d.id, "id:shop:product::0");
	assert_int_equal(store_put(w, fx->dt, d.id, d.v, &fx->err), 0);
	make_doc(&d, 2);
	assert_int_equal(store_put(w, fx->dt, d.id, d.v, &fx->err), 0);
	assert_int_equal(store_txn_commit(w, &fx->err), 0);
	/* the reader still sees its snapshot, through the old pointer too */
	assert_int_equal(store_count(r, fx->dt), 2);
	assert_true(e0[0] == 0.0f);
	assert_true(*(const float *)store_attr(r, fx->dt, F_EMB, 0) == 0.0f);
	assert_int_equal(store_lookup(r, fx->dt, d.id, &(uint32_t){0}, NULL), STRATA_NOT_FOUND);
	/* a second read txn in the same thread sees the new state */
	assert_int_equal(store_txn_begin(fx->env, 0, &r2, &fx->err), 0);
	assert_int_equal(store_count(r2, fx->dt), 3);
	assert_true(*(const float *)store_attr(r2, fx->dt, F_EMB, 0) == 100.0f);
	store_txn_abort(r2);
	assert_int_equal(store_txn_commit(r, &fx->err), 0);
}

/* One writer thread commits batches while a reader thread checks that each
 * snapshot is whole: a multiple of the batch size, values matching ids. */
struct race {
	struct fx *fx;
	int dt;
	int done;
	int errors;
	int snapshots;
};

#define BATCH 50
#define RACE_DOCS 1000

static void *writer(void *arg)
{
	struct race *rc = arg;
	for (int b = 0; b < RACE_DOCS / BATCH; b++) {
		struct store_txn *w;
		if (store_txn_begin(rc->fx->env, 1, &w, NULL)) {
			__atomic_fetch_add(&rc->errors, 1, __ATOMIC_RELAXED);
			break;
		}
		for (int k = b * BATCH; k < (b + 1) * BATCH; k++) {
			char id[32];
			snprintf(id, sizeof id, "r%d", k);
			int64_t cells[4] = {k, k, k, k};
			struct store_value v[2] = {{.set = 1, .i = k}, {.set = 1, .n = 4, .cells = cells}};
			if (store_put(w, rc->dt, id, v, NULL))
				__atomic_fetch_add(&rc->errors, 1, __ATOMIC_RELAXED);
		}
		if (store_txn_commit(w, NULL))
			__atomic_fetch_add(&rc->errors, 1, __ATOMIC_RELAXED);
	}
	__atomic_store_n(&rc->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void *reader(void *arg)
{
	struct race *rc = arg;
	for (;;) {
		int last = __atomic_load_n(&rc->done, __ATOMIC_ACQUIRE);
		struct store_txn *r;
		if (store_txn_begin(rc->fx->env, 0, &r, NULL)) {
			__atomic_fetch_add(&rc->errors, 1, __ATOMIC_RELAXED);
			break;
		}
		uint64_t n = store_count(r, rc->dt), seen = 0;
		if (n % BATCH)
			__atomic_fetch_add(&rc->errors, 1, __ATOMIC_RELAXED);
		for (uint32_t lid = 0; store_next(r, rc->dt, &lid) == 0; lid++) {
			const char *id = store_docid(r, rc->dt, lid);
			const int64_t *a = store_attr(r, rc->dt, 0, lid);
			const int64_t *t = store_attr(r, rc->dt, 1, lid);
			if (!id || !a || !t || *a != atoi(id + 1) || t[3] != *a)
				__atomic_fetch_add(&rc->errors, 1, __ATOMIC_RELAXED);
			seen++;
		}
		if (seen != n)
			__atomic_fetch_add(&rc->errors, 1, __ATOMIC_RELAXED);
		store_txn_abort(r);
		rc->snapshots++;
		if (last)
			break;
	}
	return NULL;
}

static void test_threads(void **state)
{
	struct fx *fx = *state;
	struct store_field rf[2] = {
		{.name = "k", .type = STORE_T_LONG, .attribute = 1, .cell = 0, .rank = 0, .dims = {0}, .text = 0},
		{.name = "t", .type = STORE_T_TENSOR, .attribute = 1, .cell = BASE_DT_INT64, .rank = 1, .dims = {4}, .text = 0},
	};
	struct store_doctype rt = {"race", 2, rf};
	struct race rc = {.fx = fx};
	assert_int_equal(store_doctype_add(fx->env, &rt, &rc.dt, &fx->err), 0);
	pthread_t tw, tr;
	assert_int_equal(pthread_create(&tr, NULL, reader, &rc), 0);
	assert_int_equal(pthread_create(&tw, NULL, writer, &rc), 0);
	pthread_join(tw, NULL);
	pthread_join(tr, NULL);
	assert_int_equal(rc.errors, 0);
	assert_true(rc.snapshots >= 1);
	struct store_txn *r;
	assert_int_equal(store_txn_begin(fx->env, 0, &r, &fx->err), 0);
	assert_int_equal(store_count(r, rc.dt), RACE_DOCS);
	store_txn_abort(r);
}

/* A write txn reads its own writes, through a store_attr cache that the
 * writes invalidate. */
static void test_read_own_writes(void **state)
{
	struct fx *fx = *state;
	struct store_txn *w;
	assert_int_equal(store_txn_begin(fx->env, 1, &w, &fx->err), 0);
	static struct doc d;
	make_doc(&d, 3);
	assert_int_equal(store_put(w, fx->dt, d.id, d.v, &fx->err), 0);
	uint32_t lid = lid_of(w, fx->dt, 3);
	assert_int_equal(*(const int32_t *)store_attr(w, fx->dt, F_COUNT, lid), -3);
	struct store_value v[NF] = {0};
	v[F_COUNT] = (struct store_value){.set = 1, .i = 77};
	assert_int_equal(store_update(w, fx->dt, d.id, v, &fx->err), 0);
	assert_int_equal(*(const int32_t *)store_attr(w, fx->dt, F_COUNT, lid), 77);
	assert_int_equal(store_remove(w, fx->dt, d.id, &fx->err), 0);
	assert_null(store_attr(w, fx->dt, F_COUNT, lid));
	uint32_t l = 0;
	assert_int_equal(store_next(w, fx->dt, &l), STRATA_NOT_FOUND);
	assert_int_equal(store_txn_commit(w, &fx->err), 0);
}

/* Fail each allocation of a whole open/put/get/close cycle in turn: every
 * run either succeeds or reports STRATA_NOMEM, and nothing leaks. */
static void test_alloc_sweep(void **state)
{
	struct fx *fx = *state;
	char dir[96];
	snprintf(dir, sizeof dir, "%s/sweep", fx->dir);
	static struct doc d;
	struct base_alloc_stats before, after;
	int ok = 0, failed = 0;
	for (long n = 1; n < 200 && !ok; n++) {
		base_alloc_stats(&before);
		base_alloc_fail_after(n);
		struct store_env *e = NULL;
		struct store_txn *t = NULL;
		struct strata_error err;
		int dt, rc = store_open(dir, &e, &err);
		if (!rc)
			rc = store_doctype_add(e, &product, &dt, &err);
		if (!rc)
			rc = store_txn_begin(e, 1, &t, &err);
		if (!rc) {
			make_doc(&d, (int)n);
			rc = store_put(t, dt, d.id, d.v, &err);
			if (!rc)
				rc = store_txn_commit(t, &err);
			else
				store_txn_abort(t);
		}
		if (!rc)
			rc = store_txn_begin(e, 0, &t, &err);
		if (!rc) {
			struct store_value got[NF];
			uint32_t lid;
			rc = store_lookup(t, dt, d.id, &lid, &err);
			if (!rc)
				rc = store_get(t, dt, lid, got, &err);
			if (!rc)
				check_doc(got, (int)n);
			store_txn_abort(t);
		}
		base_alloc_fail_after(0);
		store_close(e);
		assert_true(rc == 0 || rc == STRATA_NOMEM);
		ok = rc == 0;
		failed += rc != 0;
		base_alloc_stats(&after);
		assert_int_equal(after.live_bytes, before.live_bytes);
	}
	assert_true(ok);
	assert_true(failed >= 5); /* the cycle allocates; each failure was seen */
}

static void test_open_errors(void **state)
{
	struct fx *fx = *state;
	struct store_env *e = NULL;
	struct strata_error err;
	char path[96];
	snprintf(path, sizeof path, "%s/file", fx->dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fclose(f);
	assert_int_not_equal(store_open(path, &e, &err), 0);
	assert_null(e);
	assert_non_null(strstr(err.msg, "file"));
	assert_int_equal(store_open("", &e, &err), STRATA_INVALID_ARGUMENT);
	/* a nested folder is created */
	snprintf(path, sizeof path, "%s/a/b/c", fx->dir);
	assert_int_equal(store_open(path, &e, &err), 0);
	store_close(e);
	store_close(NULL);
	store_txn_abort(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_put_get_all_types, setup, teardown),
		cmocka_unit_test_setup_teardown(test_put_replaces_and_update, setup, teardown),
		cmocka_unit_test_setup_teardown(test_remove, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reopen_and_layout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_doctypes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rejected_put, setup, teardown),
		cmocka_unit_test_setup_teardown(test_abort_writes_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_many_blocks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_many_blocks_map_unknown, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failed_txn, setup, teardown),
		cmocka_unit_test_setup_teardown(test_corrupt_record, setup, teardown),
		cmocka_unit_test_setup_teardown(test_snapshot, setup, teardown),
		cmocka_unit_test_setup_teardown(test_threads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_own_writes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_alloc_sweep, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_errors, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
