/*
 * test_store_dict.c: the value dictionaries of fast-search fields
 * (store/dict.c): ranges on int, long, float, double and bool fields
 * (negative numbers, -0.0 and 0.0, NaN, infinities, longs past 2^53),
 * strings (empty, with NUL bytes, longer than a key keeps), the entries
 * after put, replace, update and remove and after an abort, refused calls,
 * a dictionary built when the flag is added to a store written without it
 * (and not rebuilt at the next open, dropped when the flag goes), 2,000
 * random writes checked against a model after every commit, allocation
 * failures, and kill -9 in the middle of a feed.  Each test works in its
 * own temporary folder.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../store/store.h"
#include "rng.h"
#include "../store/store_int.h" /* to plant a stray entry and count entries */
#include "killwriter.h"
#include "storetest.h"

/* ---- fixture ------------------------------------------------------------ */

enum { F_I, F_L, F_F, F_D, F_B, F_S, F_PLAIN, F_TEXT, F_EMB, F_JSON, F_NOTE, NF };
#define NDICT 6 /* F_I .. F_S have a dictionary */

static const struct store_field base_fields[NF] = {
	[F_I] = {.name = "i", .type = STORE_T_INT, .attribute = 1, .fast_search = 1},
	[F_L] = {.name = "l", .type = STORE_T_LONG, .attribute = 1, .fast_search = 1},
	[F_F] = {.name = "f", .type = STORE_T_FLOAT, .attribute = 1, .fast_search = 1},
	[F_D] = {.name = "d", .type = STORE_T_DOUBLE, .attribute = 1, .fast_search = 1},
	[F_B] = {.name = "b", .type = STORE_T_BOOL, .attribute = 1, .fast_search = 1},
	[F_S] = {.name = "s", .type = STORE_T_STRING, .attribute = 1, .fast_search = 1},
	[F_PLAIN] = {.name = "plain", .type = STORE_T_INT, .attribute = 1},
	[F_TEXT] = {.name = "text", .type = STORE_T_STRING},
	/* the flag where it means nothing: ignored */
	[F_EMB] = {.name = "emb", .type = STORE_T_TENSOR, .attribute = 1, .cell = BASE_DT_FLOAT,
	           .rank = 1, .dims = {2}, .fast_search = 1},
	[F_JSON] = {.name = "json", .type = STORE_T_JSON, .fast_search = 1},
	[F_NOTE] = {.name = "note", .type = STORE_T_LONG, .attribute = 0, .fast_search = 1},
};

struct fx {
	char dir[64];
	struct store_env *env;
	int dt;
	struct strata_error err;
	struct store_field fields[NF];
	struct store_doctype type;
};

static struct fx *fx_new(void)
{
	struct fx *fx = calloc(1, sizeof *fx);
	assert_non_null(fx);
	strcpy(fx->dir, "/tmp/strata_dict_XXXXXX");
	assert_non_null(mkdtemp(fx->dir));
	memcpy(fx->fields, base_fields, sizeof fx->fields);
	fx->type = (struct store_doctype){"t", NF, fx->fields};
	return fx;
}

static void fx_open(struct fx *fx)
{
	if (storetest_open(fx->dir, &fx->type, &fx->env, &fx->dt, &fx->err) != 0)
		fail_msg("open: %s", fx->err.msg);
}

static void fx_close(struct fx *fx)
{
	store_close(fx->env);
	fx->env = NULL;
}

static void fx_free(struct fx *fx)
{
	fx_close(fx);
	storetest_rmdir(fx->dir);
	free(fx);
}

/* Every dictionary of the type agrees with the documents. */
static void check_all(struct fx *fx, struct store_txn *t)
{
	for (int f = 0; f < NDICT; f++)
		if (store_dict_check(t, fx->dt, f, &fx->err) != 0)
			fail_msg("field %d: %s", f, fx->err.msg);
}

static void id_of(char *buf, size_t n, int k)
{
	snprintf(buf, n, "id:t:t::%d", k);
}

static void put(struct fx *fx, struct store_txn *w, int k, const struct store_value *v)
{
	char id[64];
	id_of(id, sizeof id, k);
	if (store_put(w, fx->dt, id, v, &fx->err) != 0)
		fail_msg("put %d: %s", k, fx->err.msg);
}

static void update(struct fx *fx, struct store_txn *w, int k, const struct store_value *v)
{
	char id[64];
	id_of(id, sizeof id, k);
	if (store_update(w, fx->dt, id, v, &fx->err) != 0)
		fail_msg("update %d: %s", k, fx->err.msg);
}

static void remove_doc(struct fx *fx, struct store_txn *w, int k)
{
	char id[64];
	id_of(id, sizeof id, k);
	if (store_remove(w, fx->dt, id, &fx->err) != 0)
		fail_msg("remove %d: %s", k, fx->err.msg);
}

/* The documents (their numbers k, in lid order) of a result, as "1,3,5";
 * the lids are checked to increase. */
static const char *docs_of(struct fx *fx, struct store_txn *t, const uint32_t *lids, size_t n)
{
	static char buf[4096];
	size_t o = 0;
	buf[0] = 0;
	for (size_t i = 0; i < n; i++) {
		if (i)
			assert_true(lids[i] > lids[i - 1]);
		const char *id = store_docid(t, fx->dt, lids[i]);
		assert_non_null(id);
		const char *num = strstr(id, "::");
		assert_non_null(num);
		o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%s", i ? "," : "", num + 2);
		assert_true(o < sizeof buf);
	}
	return buf;
}

/* One value's cursor (store_dict_value_open) gives lids[0..n): stepping
 * one past each, and seeking to each from the one before; its estimate
 * is the count while that is small, else at least it. */
static void cursor_agrees(struct fx *fx, struct store_txn *t, int field, double v, const char *s,
                          size_t len, const uint32_t *lids, size_t n)
{
	for (int pass = 0; pass < 2; pass++) {
		struct store_dict_cursor *c;
		uint64_t est;
		if (store_dict_value_open(t, fx->dt, field, v, s, len, &c, &est, &fx->err) != 0)
			fail_msg("cursor of field %d: %s", field, fx->err.msg);
		if (n < 255)
			assert_int_equal(est, n);
		else
			assert_true(est >= n);
		uint32_t at = 0;
		for (size_t i = 0; i < n; i++) {
			uint32_t want = pass ? lids[i] : at; /* pass 1: seek exactly to each */
			assert_int_equal(store_dict_value_seek(c, &want), 0);
			assert_int_equal(want, lids[i]);
			at = want + 1;
		}
		assert_int_equal(store_dict_value_seek(c, &at), STRATA_NOT_FOUND);
		store_dict_value_close(c);
	}
}

/* The documents of [lo, hi] in field, store_dict_count agreeing. */
static const char *range(struct fx *fx, struct store_txn *t, int field, double lo, double hi)
{
	uint32_t *lids;
	size_t n;
	uint64_t count;
	if (store_dict_range(t, fx->dt, field, lo, hi, &lids, &n, &fx->err) != 0)
		fail_msg("range of field %d: %s", field, fx->err.msg);
	assert_int_equal(store_dict_count(t, fx->dt, field, lo, hi, &count, &fx->err), 0);
	assert_int_equal(count, n);
	if (lo == hi)
		cursor_agrees(fx, t, field, lo, NULL, 0, lids, n);
	const char *s = docs_of(fx, t, lids, n);
	store_dict_free(lids, n);
	return s;
}

static const char *lookup(struct fx *fx, struct store_txn *t, int field, const char *s,
                          size_t len)
{
	uint32_t *lids;
	size_t n;
	uint64_t count;
	if (store_dict_string(t, fx->dt, field, s, len, &lids, &n, &fx->err) != 0)
		fail_msg("lookup in field %d: %s", field, fx->err.msg);
	assert_int_equal(store_dict_string_count(t, fx->dt, field, s, len, &count, &fx->err), 0);
	assert_int_equal(count, n);
	cursor_agrees(fx, t, field, 0, s ? s : "", len, lids, n);
	const char *r = docs_of(fx, t, lids, n);
	base_free(lids, n * sizeof *lids); /* as store_dict_free */
	return r;
}

static struct store_txn *begin(struct fx *fx, int write)
{
	struct store_txn *t;
	if (store_txn_begin(fx->env, write, &t, &fx->err) != 0)
		fail_msg("begin: %s", fx->err.msg);
	return t;
}

static void commit(struct fx *fx, struct store_txn *w)
{
	if (store_txn_commit(w, &fx->err) != 0)
		fail_msg("commit: %s", fx->err.msg);
}

/* ---- numbers ------------------------------------------------------------------ */

static void number_ranges(struct fx *fx, struct store_txn *t)
{
	const double inf = INFINITY;
	check_all(fx, t);
	/* int */
	assert_string_equal(range(fx, t, F_I, -inf, inf), "1,2,3,4,5");
	assert_string_equal(range(fx, t, F_I, -5, -5), "1");
	assert_string_equal(range(fx, t, F_I, -10, 0), "1,2");
	assert_string_equal(range(fx, t, F_I, 0, 0), "2");
	assert_string_equal(range(fx, t, F_I, -0.0, -0.0), "2");
	assert_string_equal(range(fx, t, F_I, 1, 6.999), "");
	assert_string_equal(range(fx, t, F_I, 7, 7), "3");
	assert_string_equal(range(fx, t, F_I, -inf, -6), "4");
	assert_string_equal(range(fx, t, F_I, INT32_MAX, inf), "5");
	assert_string_equal(range(fx, t, F_I, 3, 2), "");
	assert_string_equal(range(fx, t, F_I, NAN, inf), "");
	assert_string_equal(range(fx, t, F_I, -inf, NAN), "");
	/* long: compared as doubles, 2^53 + 1 rounds to 2^53 */
	assert_string_equal(range(fx, t, F_L, -inf, -1), "1,4");
	assert_string_equal(range(fx, t, F_L, 9007199254740992.0, 9007199254740992.0), "3");
	assert_string_equal(range(fx, t, F_L, 9.2e18, inf), "5");
	assert_string_equal(range(fx, t, F_L, -inf, -9.2e18), "4");
	assert_string_equal(range(fx, t, F_L, -(double)(1LL << 40), -(double)(1LL << 40)), "1");
	/* float: the float widened; NaN in no range */
	assert_string_equal(range(fx, t, F_F, -inf, inf), "1,2,3,5");
	assert_string_equal(range(fx, t, F_F, 0, 0), "2");
	assert_string_equal(range(fx, t, F_F, 0.1, 0.1), "");
	assert_string_equal(range(fx, t, F_F, (double)0.1f, (double)0.1f), "3");
	assert_string_equal(range(fx, t, F_F, inf, inf), "5");
	assert_string_equal(range(fx, t, F_F, -2, -1), "1");
	assert_string_equal(range(fx, t, F_F, NAN, NAN), "");
	/* double: -0.0 and 0.0 are one value */
	assert_string_equal(range(fx, t, F_D, 0, 0), "2,3");
	assert_string_equal(range(fx, t, F_D, -0.0, 0.0), "2,3");
	assert_string_equal(range(fx, t, F_D, -0.0, -0.0), "2,3");
	assert_string_equal(range(fx, t, F_D, -inf, -inf), "5");
	assert_string_equal(range(fx, t, F_D, -inf, inf), "1,2,3,5");
	assert_string_equal(range(fx, t, F_D, -3, -2), "1");
	assert_string_equal(range(fx, t, F_D, 4.9e-324, 1), "");
	/* bool */
	assert_string_equal(range(fx, t, F_B, 1, 1), "2,3");
	assert_string_equal(range(fx, t, F_B, 0, 0), "1,4");
	assert_string_equal(range(fx, t, F_B, -inf, inf), "1,2,3,4");
	assert_string_equal(range(fx, t, F_B, 0.5, 2), "2,3");
}

static void test_numbers(void **state)
{
	(void)state;
	struct fx *fx = fx_new();
	fx_open(fx);
	struct { int32_t i; int64_t l; float f; double d; int b; } v[] = {
		{-5, -(1LL << 40), -1.5f, -2.25, 0},
		{0, 0, -0.0f, -0.0, 1},
		{7, (1LL << 53) + 1, 0.1f, 0.0, 1},
		{INT32_MIN, INT64_MIN, NAN, NAN, 0},
		{INT32_MAX, INT64_MAX, INFINITY, -INFINITY, 0},
	};
	struct store_txn *w = begin(fx, 1);
	for (int k = 1; k <= 6; k++) {
		struct store_value sv[NF] = {0};
		if (k <= 5) {
			sv[F_I] = (struct store_value){.set = 1, .i = v[k - 1].i};
			sv[F_L] = (struct store_value){.set = 1, .i = v[k - 1].l};
			sv[F_F] = (struct store_value){.set = 1, .d = v[k - 1].f};
			sv[F_D] = (struct store_value){.set = 1, .d = v[k - 1].d};
			sv[F_B] = (struct store_value){.set = k != 5, .i = v[k - 1].b};
		}
		sv[F_PLAIN] = (struct store_value){.set = 1, .i = k};
		sv[F_S] = (struct store_value){.set = 1, .s = "x", .n = 1};
		put(fx, w, k, sv);
	}
	number_ranges(fx, w); /* a write transaction sees its own writes */
	commit(fx, w);
	struct store_txn *r = begin(fx, 0);
	number_ranges(fx, r);
	store_txn_abort(r);
	fx_close(fx);
	fx_open(fx); /* and they are there after a reopen */
	r = begin(fx, 0);
	number_ranges(fx, r);
	store_txn_abort(r);
	fx_free(fx);
}

/* ---- strings --------------------------------------------------------------------- */

static void test_strings(void **state)
{
	(void)state;
	struct fx *fx = fx_new();
	fx_open(fx);
	char longa[601], longb[601], a480[STORE_DICT_STRING_MAX], a481[STORE_DICT_STRING_MAX + 1];
	memset(longa, 'a', sizeof longa);
	memset(longb, 'a', sizeof longb);
	longa[600] = '1';
	longb[600] = '2';
	memset(a480, 'a', sizeof a480);
	memset(a481, 'a', sizeof a481);
	struct { const char *s; size_t n; } v[] = {
		{"red", 3}, {"", 0}, {"red", 3}, {"re", 2}, {"red\0x", 5}, {"red\0", 4},
		{longa, sizeof longa}, {longb, sizeof longb}, {a480, sizeof a480},
		{a480, sizeof a480 - 1}, {NULL, 0}, {"reda", 4},
	};
	struct store_txn *w = begin(fx, 1);
	for (int k = 1; k <= 12; k++) {
		struct store_value sv[NF] = {0};
		sv[F_S] = (struct store_value){.set = v[k - 1].s != NULL, .s = v[k - 1].s,
		                               .n = v[k - 1].n};
		sv[F_TEXT] = sv[F_S];
		put(fx, w, k, sv);
	}
	commit(fx, w);
	struct store_txn *r = begin(fx, 0);
	check_all(fx, r);
	assert_string_equal(lookup(fx, r, F_S, "red", 3), "1,3");
	assert_string_equal(lookup(fx, r, F_S, "", 0), "2");
	assert_string_equal(lookup(fx, r, F_S, NULL, 0), "2");
	assert_string_equal(lookup(fx, r, F_S, "re", 2), "4");
	assert_string_equal(lookup(fx, r, F_S, "red\0x", 5), "5");
	assert_string_equal(lookup(fx, r, F_S, "red\0", 4), "6");
	assert_string_equal(lookup(fx, r, F_S, "reda", 4), "12");
	assert_string_equal(lookup(fx, r, F_S, "redx", 4), "");
	assert_string_equal(lookup(fx, r, F_S, "r", 1), "");
	/* values of up to STORE_DICT_STRING_MAX bytes are exact ... */
	assert_string_equal(lookup(fx, r, F_S, a480, sizeof a480), "9");
	assert_string_equal(lookup(fx, r, F_S, a480, sizeof a480 - 1), "10");
	/* ... longer ones give every longer value that begins the same way:
	 * never fewer than hold the value, here more */
	assert_string_equal(lookup(fx, r, F_S, longa, sizeof longa), "7,8");
	assert_string_equal(lookup(fx, r, F_S, longb, sizeof longb), "7,8");
	assert_string_equal(lookup(fx, r, F_S, a481, sizeof a481), "7,8");
	store_txn_abort(r);
	fx_free(fx);
}

/* ---- writes ------------------------------------------------------------------------ */

static void test_writes(void **state)
{
	(void)state;
	struct fx *fx = fx_new();
	fx_open(fx);
	struct store_txn *w = begin(fx, 1), *r;
	struct store_value a[NF] = {0}, b[NF] = {0};
	a[F_I] = (struct store_value){.set = 1, .i = 10};
	a[F_S] = (struct store_value){.set = 1, .s = "x", .n = 1};
	b[F_I] = (struct store_value){.set = 1, .i = 20};
	b[F_S] = (struct store_value){.set = 1, .s = "y", .n = 1};
	put(fx, w, 1, a);
	put(fx, w, 2, b);
	commit(fx, w);
	r = begin(fx, 0);
	assert_string_equal(range(fx, r, F_I, 10, 10), "1");
	assert_string_equal(range(fx, r, F_I, -INFINITY, INFINITY), "1,2");
	store_txn_abort(r);

	/* a replace: the old values are gone */
	w = begin(fx, 1);
	a[F_I].i = 30;
	a[F_S].s = "y";
	put(fx, w, 1, a);
	commit(fx, w);
	r = begin(fx, 0);
	check_all(fx, r);
	assert_string_equal(range(fx, r, F_I, 10, 10), "");
	assert_string_equal(range(fx, r, F_I, 30, 30), "1");
	assert_string_equal(lookup(fx, r, F_S, "x", 1), "");
	assert_string_equal(lookup(fx, r, F_S, "y", 1), "1,2");
	store_txn_abort(r);

	/* an update of one field leaves the other's entries */
	w = begin(fx, 1);
	struct store_value u[NF] = {0};
	u[F_I] = (struct store_value){.set = 1, .i = 10};
	update(fx, w, 2, u);
	commit(fx, w);
	r = begin(fx, 0);
	check_all(fx, r);
	assert_string_equal(range(fx, r, F_I, 10, 10), "2");
	assert_string_equal(range(fx, r, F_I, 20, 20), "");
	assert_string_equal(lookup(fx, r, F_S, "y", 1), "1,2");
	store_txn_abort(r);
	w = begin(fx, 1);
	memset(u, 0, sizeof u);
	u[F_S] = (struct store_value){.set = 1, .s = "z", .n = 1};
	u[F_PLAIN] = (struct store_value){.set = 1, .i = 5};
	update(fx, w, 2, u);
	commit(fx, w);
	r = begin(fx, 0);
	check_all(fx, r);
	assert_string_equal(range(fx, r, F_I, 10, 10), "2");
	assert_string_equal(lookup(fx, r, F_S, "y", 1), "1");
	assert_string_equal(lookup(fx, r, F_S, "z", 1), "2");
	store_txn_abort(r);

	/* a put without the field takes its entry away */
	w = begin(fx, 1);
	memset(a, 0, sizeof a);
	put(fx, w, 1, a);
	commit(fx, w);
	r = begin(fx, 0);
	check_all(fx, r);
	assert_string_equal(range(fx, r, F_I, -INFINITY, INFINITY), "2");
	assert_string_equal(lookup(fx, r, F_S, "y", 1), "");
	store_txn_abort(r);

	/* an aborted write leaves nothing */
	w = begin(fx, 1);
	b[F_I].i = 5;
	put(fx, w, 3, b);
	remove_doc(fx, w, 2);
	assert_string_equal(range(fx, w, F_I, -INFINITY, INFINITY), "3");
	store_txn_abort(w);
	r = begin(fx, 0);
	check_all(fx, r);
	assert_string_equal(range(fx, r, F_I, -INFINITY, INFINITY), "2");
	store_txn_abort(r);

	/* a remove */
	w = begin(fx, 1);
	remove_doc(fx, w, 2);
	commit(fx, w);
	r = begin(fx, 0);
	check_all(fx, r);
	assert_string_equal(range(fx, r, F_I, -INFINITY, INFINITY), "");
	assert_string_equal(lookup(fx, r, F_S, "z", 1), "");
	store_txn_abort(r);

	/* a new document after a removed one, under its old id: a new lid */
	w = begin(fx, 1);
	put(fx, w, 2, b);
	put(fx, w, 4, b);
	commit(fx, w);
	r = begin(fx, 0);
	check_all(fx, r);
	assert_string_equal(range(fx, r, F_I, 5, 5), "2,4");
	store_txn_abort(r);
	fx_free(fx);
}

/* ---- refused calls ------------------------------------------------------------------- */

static void test_refused(void **state)
{
	(void)state;
	struct fx *fx = fx_new();
	fx_open(fx);
	struct store_txn *r = begin(fx, 0);
	uint32_t *lids = (uint32_t *)&fx; /* must be reset */
	size_t n = 99;
	uint64_t count = 99;
	for (int f = 0; f < NF; f++)
		assert_int_equal(store_dict_has(r, fx->dt, f), f < NDICT);
	assert_int_equal(store_dict_has(r, fx->dt, -1), 0);
	assert_int_equal(store_dict_has(r, fx->dt, NF), 0);
	assert_int_equal(store_dict_has(r, fx->dt + 1, 0), 0);
	assert_int_equal(store_dict_has(NULL, fx->dt, 0), 0);
	static const int none[] = {F_PLAIN, F_TEXT, F_EMB, F_JSON, F_NOTE, -1, NF};
	for (size_t i = 0; i < sizeof none / sizeof none[0]; i++) {
		int f = none[i];
		assert_int_equal(store_dict_range(r, fx->dt, f, 0, 1, &lids, &n, &fx->err),
		                 STRATA_INVALID_ARGUMENT);
		assert_null(lids);
		assert_int_equal(n, 0);
		assert_int_equal(store_dict_count(r, fx->dt, f, 0, 1, &count, &fx->err),
		                 STRATA_INVALID_ARGUMENT);
		assert_int_equal(store_dict_string(r, fx->dt, f, "a", 1, &lids, &n, &fx->err),
		                 STRATA_INVALID_ARGUMENT);
		assert_int_equal(store_dict_check(r, fx->dt, f, &fx->err), STRATA_INVALID_ARGUMENT);
	}
	assert_int_equal(store_dict_range(r, fx->dt, F_PLAIN, 0, 1, &lids, &n, &fx->err),
	                 STRATA_INVALID_ARGUMENT);
	assert_non_null(strstr(fx->err.msg, "'plain' has no dictionary"));
	/* the wrong kind of lookup */
	assert_int_equal(store_dict_range(r, fx->dt, F_S, 0, 1, &lids, &n, &fx->err),
	                 STRATA_INVALID_ARGUMENT);
	assert_int_equal(store_dict_string_count(r, fx->dt, F_I, "1", 1, &count, &fx->err),
	                 STRATA_INVALID_ARGUMENT);
	assert_int_equal(store_dict_string(r, fx->dt, F_S, NULL, 3, &lids, &n, &fx->err),
	                 STRATA_INVALID_ARGUMENT);
	assert_int_equal(store_dict_range(r, fx->dt + 1, F_I, 0, 1, &lids, &n, &fx->err),
	                 STRATA_INVALID_ARGUMENT);
	assert_int_equal(store_dict_range(NULL, fx->dt, F_I, 0, 1, &lids, &n, &fx->err),
	                 STRATA_INVALID_ARGUMENT);
	/* an empty dictionary */
	assert_int_equal(store_dict_range(r, fx->dt, F_I, -INFINITY, INFINITY, &lids, &n,
	                                  &fx->err), 0);
	assert_null(lids);
	assert_int_equal(n, 0);
	store_dict_free(lids, n);
	store_txn_abort(r);
	fx_free(fx);
}

/* ---- the flag added to a store, and taken away -------------------------------------- */

static int32_t iv(int k) { return k % 7 - 3; }

/* Field F_I's dictionary against a scan of the column. */
static void agrees_with_scan(struct fx *fx)
{
	struct store_txn *r = begin(fx, 0);
	check_all(fx, r);
	for (int lo = -4; lo <= 4; lo++)
		for (int hi = lo; hi <= 4; hi++) {
			uint32_t *lids;
			size_t n, m = 0;
			assert_int_equal(store_dict_range(r, fx->dt, F_I, lo, hi, &lids, &n, &fx->err), 0);
			for (uint32_t lid = 0; store_next(r, fx->dt, &lid) == 0; lid++) {
				const int32_t *c = store_attr(r, fx->dt, F_I, lid);
				if (!c || *c < lo || *c > hi)
					continue;
				assert_true(m < n);
				assert_int_equal(lids[m], lid);
				m++;
			}
			assert_int_equal(m, n);
			store_dict_free(lids, n);
		}
	assert_string_equal(lookup(fx, r, F_S, "s3", 2), "3,13,23,33,43");
	store_txn_abort(r);
}

static uint64_t dict_entries(struct fx *fx)
{
	struct store_txn *r = begin(fx, 0);
	MDB_stat st;
	assert_int_equal(mdb_stat(r->txn, fx->env->types[fx->dt]->dict, &st), 0);
	store_txn_abort(r);
	return st.ms_entries;
}

static void set_flags(struct fx *fx, int on)
{
	for (int f = 0; f < NF; f++)
		fx->fields[f].fast_search = on && base_fields[f].fast_search;
}

static void test_added_later(void **state)
{
	(void)state;
	struct fx *fx = fx_new();
	set_flags(fx, 0);
	fx_open(fx);
	struct store_txn *w = begin(fx, 1);
	for (int k = 0; k < 50; k++) {
		char s[8];
		snprintf(s, sizeof s, "s%d", k % 10);
		struct store_value v[NF] = {0};
		v[F_I] = (struct store_value){.set = k % 11 != 5, .i = iv(k)};
		v[F_S] = (struct store_value){.set = 1, .s = s, .n = strlen(s)};
		put(fx, w, k, v);
	}
	remove_doc(fx, w, 17);
	commit(fx, w);
	struct store_txn *r = begin(fx, 0);
	uint32_t *lids;
	size_t n;
	assert_int_equal(store_dict_has(r, fx->dt, F_I), 0);
	assert_int_equal(store_dict_range(r, fx->dt, F_I, 0, 1, &lids, &n, &fx->err),
	                 STRATA_INVALID_ARGUMENT);
	store_txn_abort(r);
	assert_int_equal(dict_entries(fx), 0);
	fx_close(fx);

	/* the flag added: the dictionaries are built from the documents */
	set_flags(fx, 1);
	fx_open(fx);
	r = begin(fx, 0);
	assert_int_equal(store_dict_has(r, fx->dt, F_I), 1);
	store_txn_abort(r);
	agrees_with_scan(fx);
	/* 44 documents with i and 49 with s */
	assert_int_equal(dict_entries(fx), 44 + 49);

	/* a stray entry (the value of lid 0, a lid no document has) shows at
	 * the check, and stays through a reopen: nothing is rebuilt */
	w = begin(fx, 1);
	struct doctype *dt = fx->env->types[fx->dt];
	int sf = dt->ufield[F_I];
	uint8_t key[14] = {(uint8_t)(sf >> 8), (uint8_t)sf};
	MDB_val k, v = {0, NULL};
	MDB_cursor *c;
	assert_int_equal(mdb_cursor_open(w->txn, dt->dict, &c), 0);
	k = (MDB_val){2, key};
	assert_int_equal(mdb_cursor_get(c, &k, &v, MDB_SET_RANGE), 0);
	memcpy(key, k.mv_data, 10);
	mdb_cursor_close(c);
	store_be32_put(key + 10, 999999);
	k = (MDB_val){sizeof key, key};
	v = (MDB_val){0, NULL};
	assert_int_equal(mdb_put(w->txn, dt->dict, &k, &v, 0), 0);
	commit(fx, w);
	fx_close(fx);
	fx_open(fx);
	r = begin(fx, 0);
	assert_int_equal(store_dict_check(r, fx->dt, F_I, &fx->err), STRATA_CORRUPT);
	assert_non_null(strstr(fx->err.msg, "999999"));
	assert_int_equal(store_dict_check(r, fx->dt, F_S, &fx->err), 0);
	store_txn_abort(r);
	fx_close(fx);

	/* the flag taken away: dropped */
	set_flags(fx, 0);
	fx_open(fx);
	assert_int_equal(dict_entries(fx), 0);
	fx_close(fx);
	/* only the string's flag back: only its dictionary */
	fx->fields[F_S].fast_search = 1;
	fx_open(fx);
	assert_int_equal(dict_entries(fx), 49);
	fx_close(fx);
	/* and every one again: built afresh, the stray entry long gone */
	set_flags(fx, 1);
	fx_open(fx);
	agrees_with_scan(fx);
	assert_int_equal(dict_entries(fx), 44 + 49);
	fx_close(fx);

	/* a field left out of the layout loses its dictionary */
	fx->type.nfields = F_S; /* i .. b */
	fx_open(fx);
	assert_int_equal(dict_entries(fx), 44);
	fx_close(fx);
	fx->type.nfields = NF;
	fx_open(fx);
	agrees_with_scan(fx);
	fx_free(fx);
}

/* ---- random writes against a model ------------------------------------------------------ */

#define NK 160          /* document ids */
#define OPS 2000
#define LONG_S 500      /* a long string's bytes */


static const int64_t int_pool[] = {-3, -2, -1, 0, 1, 2, 3, INT32_MIN, INT32_MAX};
static const int64_t long_pool[] = {-3, 0, 2, 9007199254740992LL, 9007199254740993LL,
                                    INT64_MIN, INT64_MAX, -(1LL << 60)};
static const double float_pool[] = {-1.5, -0.0, 0.0, 0.1, 2.5, NAN, INFINITY, -INFINITY, 1e30};
static const double double_pool[] = {-1.5, -0.0, 0.0, 0.1, 2.5, NAN, INFINITY, -INFINITY,
                                     1e300, 5e-324};
static const int64_t bool_pool[] = {0, 1, 7};
#define NSTR 9
static char long1[LONG_S], long2[LONG_S + 1], long3[LONG_S];
static const char *str_pool[NSTR];
static size_t str_len[NSTR];

static void make_strings(void)
{
	static const char *const s[] = {"", "a", "ab", "a\0b", "b", "a\0"};
	static const size_t n[] = {0, 1, 2, 3, 1, 2};
	for (int i = 0; i < 6; i++) {
		str_pool[i] = s[i];
		str_len[i] = n[i];
	}
	memset(long1, 'x', sizeof long1);
	memset(long2, 'x', sizeof long2);
	memset(long3, 'x', sizeof long3);
	long2[LONG_S] = 'y';
	long3[100] = 'z';
	str_pool[6] = long1, str_len[6] = sizeof long1;
	str_pool[7] = long2, str_len[7] = sizeof long2;
	str_pool[8] = long3, str_len[8] = sizeof long3;
}

/* The model: per document id, its lid and values (set[f]: the field has
 * one; num[f]: a number as the dictionary compares it; str: a pool index). */
struct mdoc {
	int live;
	uint32_t lid;
	int set[NDICT];
	double num[NDICT];
	int str;
};

/* Whether the dictionary files t under the same key as s (pool indexes):
 * equal, or both longer than a key keeps and the same for that long. */
static int same_key(int s, int t)
{
	size_t a = str_len[s], b = str_len[t];
	if (a > STORE_DICT_STRING_MAX && b > STORE_DICT_STRING_MAX)
		return memcmp(str_pool[s], str_pool[t], STORE_DICT_STRING_MAX) == 0;
	return a == b && memcmp(str_pool[s], str_pool[t], a) == 0;
}

/* A random value of field f into v and the model's m. */
static void random_value(uint64_t *s, int f, struct store_value *v, struct mdoc *m)
{
	*v = (struct store_value){.set = 1};
	m->set[f] = 1;
	switch (f) {
	case F_I:
		v->i = int_pool[test_rng(s) % (sizeof int_pool / sizeof int_pool[0])];
		m->num[f] = (double)v->i;
		break;
	case F_L:
		v->i = long_pool[test_rng(s) % (sizeof long_pool / sizeof long_pool[0])];
		m->num[f] = (double)v->i;
		break;
	case F_F:
		v->d = float_pool[test_rng(s) % (sizeof float_pool / sizeof float_pool[0])];
		m->num[f] = (double)(float)v->d;
		break;
	case F_D:
		v->d = double_pool[test_rng(s) % (sizeof double_pool / sizeof double_pool[0])];
		m->num[f] = v->d;
		break;
	case F_B:
		v->i = bool_pool[test_rng(s) % (sizeof bool_pool / sizeof bool_pool[0])];
		m->num[f] = v->i != 0;
		break;
	default:
		m->str = (int)(test_rng(s) % NSTR);
		v->s = str_pool[m->str];
		v->n = str_len[m->str];
		break;
	}
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

static void expect(struct store_txn *t, struct fx *fx, uint32_t *want, size_t nwant, int f,
                   double lo, double hi, int str)
{
	qsort(want, nwant, sizeof *want, cmp_u32);
	uint32_t *lids;
	size_t n;
	uint64_t count;
	int rc = str < 0 ? store_dict_range(t, fx->dt, f, lo, hi, &lids, &n, &fx->err)
	                 : store_dict_string(t, fx->dt, f, str_pool[str], str_len[str], &lids, &n,
	                                     &fx->err);
	if (rc)
		fail_msg("field %d: %s", f, fx->err.msg);
	rc = str < 0 ? store_dict_count(t, fx->dt, f, lo, hi, &count, &fx->err)
	             : store_dict_string_count(t, fx->dt, f, str_pool[str], str_len[str], &count,
	                                       &fx->err);
	assert_int_equal(rc, 0);
	if (n != nwant || count != n || (n && memcmp(lids, want, n * sizeof *lids) != 0))
		fail_msg("field %d [%g, %g] string %d: %zu documents (count %llu), the model has %zu",
		         f, lo, hi, str, n, (unsigned long long)count, nwant);
	store_dict_free(lids, n);
}

/* Every dictionary of t against the model. */
static void check_model(struct fx *fx, struct store_txn *t, const struct mdoc *m, uint64_t *s)
{
	check_all(fx, t);
	uint32_t want[NK];
	for (int f = F_I; f <= F_B; f++) {
		double bounds[24];
		int nb = 0;
		bounds[nb++] = -INFINITY;
		bounds[nb++] = INFINITY;
		for (int k = 0; k < NK && nb < 23; k++)
			if (m[k].live && m[k].set[f] && test_rng(s) % 4 == 0)
				bounds[nb++] = m[k].num[f];
		bounds[nb++] = -0.0;
		for (int q = 0; q < 12; q++) {
			double lo = bounds[test_rng(s) % (uint64_t)nb], hi = bounds[test_rng(s) % (uint64_t)nb];
			if (q == 0)
				lo = -INFINITY, hi = INFINITY;
			else if (q < 4)
				hi = lo; /* one value */
			size_t nw = 0;
			for (int k = 0; k < NK; k++)
				if (m[k].live && m[k].set[f] && lo <= m[k].num[f] && m[k].num[f] <= hi)
					want[nw++] = m[k].lid;
			expect(t, fx, want, nw, f, lo, hi, -1);
		}
	}
	for (int str = 0; str < NSTR; str++) {
		size_t nw = 0;
		for (int k = 0; k < NK; k++)
			if (m[k].live && m[k].set[F_S] && same_key(str, m[k].str))
				want[nw++] = m[k].lid;
		expect(t, fx, want, nw, F_S, 0, 0, str);
	}
}

static void test_random(void **state)
{
	(void)state;
	make_strings();
	struct fx *fx = fx_new();
	fx_open(fx);
	static struct mdoc model[NK], pending[NK];
	memset(model, 0, sizeof model);
	uint64_t s = 0x9e3779b97f4a7c15ull;
	int ops = 0, commits = 0, aborts = 0;
	while (ops < OPS) {
		memcpy(pending, model, sizeof model);
		struct store_txn *w = begin(fx, 1);
		int batch = 1 + (int)(test_rng(&s) % 30);
		for (int b = 0; b < batch && ops < OPS; b++, ops++) {
			int k = (int)(test_rng(&s) % NK), op = (int)(test_rng(&s) % 10);
			struct mdoc *d = &pending[k];
			char id[64];
			id_of(id, sizeof id, k);
			struct store_value v[NF] = {0};
			if (op < 5 || (op >= 8 && !d->live)) { /* a put */
				struct mdoc nd = {.live = 1};
				for (int f = 0; f < NDICT; f++)
					if (test_rng(&s) % 5)
						random_value(&s, f, &v[f], &nd);
				put(fx, w, k, v);
				if (!d->live)
					assert_int_equal(store_lookup(w, fx->dt, id, &nd.lid, &fx->err), 0);
				else
					nd.lid = d->lid;
				*d = nd;
			} else if (op < 8) { /* an update of some fields */
				int any = 0;
				struct mdoc nd = *d;
				for (int f = 0; f < NDICT; f++)
					if (test_rng(&s) % 5 < 2) {
						random_value(&s, f, &v[f], &nd);
						any = 1;
					}
				if (!any)
					v[F_PLAIN] = (struct store_value){.set = 1, .i = 1};
				int rc = store_update(w, fx->dt, id, v, &fx->err);
				if (!d->live) {
					assert_int_equal(rc, STRATA_NOT_FOUND);
					continue;
				}
				if (rc)
					fail_msg("update: %s", fx->err.msg);
				*d = nd;
			} else { /* a remove */
				remove_doc(fx, w, k);
				d->live = 0;
			}
		}
		if (test_rng(&s) % 5 == 0)
			check_model(fx, w, pending, &s); /* its own writes */
		if (test_rng(&s) % 10 == 0) {
			store_txn_abort(w);
			aborts++;
		} else {
			commit(fx, w);
			memcpy(model, pending, sizeof model);
			commits++;
		}
		struct store_txn *r = begin(fx, 0);
		check_model(fx, r, model, &s);
		store_txn_abort(r);
	}
	assert_true(commits > 50 && aborts > 3);
	/* and after a reopen */
	fx_close(fx);
	fx_open(fx);
	struct store_txn *r = begin(fx, 0);
	check_model(fx, r, model, &s);
	store_txn_abort(r);
	fx_free(fx);
}

/* ---- allocation failures ------------------------------------------------------------- */

static void test_alloc_failures(void **state)
{
	(void)state;
	struct fx *fx = fx_new();
	fx_open(fx);
	int failed = 0;
	for (long nth = 1; nth <= 40; nth++) {
		struct store_txn *w = begin(fx, 1);
		struct store_value v[NF] = {0};
		v[F_I] = (struct store_value){.set = 1, .i = nth % 3};
		v[F_S] = (struct store_value){.set = 1, .s = "v", .n = 1};
		char id[64];
		id_of(id, sizeof id, (int)(nth % 5));
		base_alloc_fail_after(nth);
		int rc = store_put(w, fx->dt, id, v, &fx->err);
		if (!rc && nth % 2)
			rc = store_remove(w, fx->dt, id, &fx->err);
		base_alloc_fail_after(0);
		if (rc) {
			assert_int_equal(rc, STRATA_NOMEM);
			failed++;
			store_txn_abort(w);
		} else {
			commit(fx, w);
		}
		struct store_txn *r = begin(fx, 0);
		check_all(fx, r);
		uint32_t *lids = NULL;
		size_t n = 0;
		base_alloc_fail_after(1);
		rc = store_dict_range(r, fx->dt, F_I, -INFINITY, INFINITY, &lids, &n, &fx->err);
		base_alloc_fail_after(0);
		if (rc) {
			assert_int_equal(rc, STRATA_NOMEM);
			assert_null(lids);
			assert_int_equal(n, 0);
		}
		store_dict_free(lids, n);
		store_txn_abort(r);
	}
	assert_true(failed > 0);
	fx_free(fx);
}

/* ---- kill -9 ------------------------------------------------------------------------- */

/* Write j of transaction k: a put, an update or a remove of one of 300
 * documents, chosen from (k, j). */
static int crash_write(void *ud, struct store_txn *w, int dt, long k, int j)
{
	struct fx *fx = ud;
	uint64_t s = (uint64_t)k * 7919 + (uint64_t)j * 104729 + 1;
	for (int i = 0; i < 3; i++)
		test_rng(&s);
	char id[64];
	id_of(id, sizeof id, (int)(test_rng(&s) % 300));
	struct store_value v[NF] = {0};
	struct mdoc m = {0};
	for (int f = 0; f < NDICT; f++)
		if (test_rng(&s) % 4)
			random_value(&s, f, &v[f], &m);
	int op = (int)(test_rng(&s) % 10), rc;
	if (op < 6)
		rc = store_put(w, dt, id, v, &fx->err);
	else if (op < 8)
		rc = store_update(w, dt, id, v, &fx->err);
	else
		rc = store_remove(w, dt, id, &fx->err);
	return rc == STRATA_NOT_FOUND ? 0 : rc;
}

static void test_kill9(void **state)
{
	(void)state;
	make_strings();
	struct fx *fx = fx_new();
	for (int round = 0; round < 3; round++) {
		struct kill_feed kf = {fx->dir, &fx->type, crash_write, 40, round * 100000L, fx};
		kill_writer(10 + round * 17, &kf);
		fx_open(fx);
		struct store_txn *r = begin(fx, 0);
		uint64_t docs = store_count(r, fx->dt);
		assert_true(docs > 0);
		check_all(fx, r);
		uint64_t with = 0, count;
		for (uint32_t lid = 0; store_next(r, fx->dt, &lid) == 0; lid++)
			with += store_attr(r, fx->dt, F_I, lid) != NULL;
		assert_int_equal(store_dict_count(r, fx->dt, F_I, -INFINITY, INFINITY, &count,
		                                  &fx->err), 0);
		assert_int_equal(count, with);
		store_txn_abort(r);
		fx_close(fx);
	}
	fx_free(fx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_numbers),
		cmocka_unit_test(test_strings),
		cmocka_unit_test(test_writes),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_added_later),
		cmocka_unit_test(test_random),
		cmocka_unit_test(test_alloc_failures),
		cmocka_unit_test(test_kill9),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
