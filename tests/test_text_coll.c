/*
 * test_text_coll.c: text indexes on arrays and weighted sets of strings in
 * the store (store/text.c, store/text_elems.c).  The test keeps its own
 * model of every document's elements and checks the index against it after
 * random puts, updates (whole values, elements added and removed) and
 * removes: each term's documents and positions (element k's tokens after
 * element k-1's and one unused position), each position's element and
 * weight, the field lengths (the sum of the elements') and totals.  Also:
 * JSON escapes in stored elements, and a malformed stored value failing the
 * write with STRATA_CORRUPT.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../store/store.h"

enum { F_ARR, F_WSET, NF };
#define FLAGS_ARR (STORE_TEXT_ON | STORE_TEXT_ARRAY | BASE_TOKEN_TEXT)
#define FLAGS_WSET (STORE_TEXT_ON | STORE_TEXT_WSET | BASE_TOKEN_WHOLE | BASE_TOKEN_NORMALIZE)

static const struct store_field fields[NF] = {
	{.name = "arr", .type = STORE_T_JSON, .text = FLAGS_ARR},
	{.name = "ws", .type = STORE_T_JSON, .text = FLAGS_WSET},
};
static const struct store_doctype doc = {"doc", NF, fields};

static const char *const vocab[] = {
	"running shoes", "red", "Café crème", "new york", "york", "blue car", "", "a b a",
	"shoes", "Red",
};
#define NVOCAB (sizeof vocab / sizeof vocab[0])
#define NDOCS 30
#define MAXEL 6

struct sdoc {
	int live;
	int has[NF];
	int ne[NF];
	int el[NF][MAXEL];  /* vocab indexes */
	int w[NF][MAXEL];
};

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

/* The stored JSON of field f of d. */
static size_t json_of(const struct sdoc *d, int f, char *buf, size_t cap)
{
	size_t o = (size_t)snprintf(buf, cap, "%c", f == F_ARR ? '[' : '{');
	for (int k = 0; k < d->ne[f]; k++) {
		if (f == F_ARR)
			o += (size_t)snprintf(buf + o, cap - o, "%s\"%s\"", k ? ", " : "",
			                      vocab[d->el[f][k]]);
		else
			o += (size_t)snprintf(buf + o, cap - o, "%s\"%s\":%d", k ? "," : "",
			                      vocab[d->el[f][k]], d->w[f][k]);
	}
	o += (size_t)snprintf(buf + o, cap - o, "%c", f == F_ARR ? ']' : '}');
	return o;
}

static void write_doc(struct store_txn *w, int dt, int i, const struct sdoc *d, int update,
                      const int *which)
{
	struct strata_error err = {0};
	char id[64], js[NF][1024];
	snprintf(id, sizeof id, "id:t:doc::%d", i);
	struct store_value v[NF] = {0};
	for (int f = 0; f < NF; f++) {
		if (update && !which[f])
			continue;
		v[f].set = d->has[f];
		v[f].n = json_of(d, f, js[f], sizeof js[f]);
		v[f].s = js[f];
	}
	int rc = update ? store_update(w, dt, id, v, &err) : store_put(w, dt, id, v, &err);
	if (rc)
		fail_msg("%s", err.msg);
}

/* Random elements for field f of d: a weighted set's keys distinct. */
static void random_field(struct sdoc *d, int f, unsigned *seed)
{
	*seed = *seed * 1664525u + 1013904223u;
	d->has[f] = (*seed >> 20) % 7 != 0;
	d->ne[f] = (int)((*seed >> 10) % (MAXEL + 1));
	for (int k = 0; k < d->ne[f]; k++) {
		*seed = *seed * 1664525u + 1013904223u;
		d->el[f][k] = (int)((*seed >> 12) % NVOCAB);
		d->w[f][k] = (int)((*seed >> 4) % 21) - 10;
		for (int j = 0; f == F_WSET && j < k; j++)
			if (d->el[f][j] == d->el[f][k]) { /* a key once */
				k--;
				d->ne[f]--;
				break;
			}
	}
}

/* Tokens of s under field f's settings, into toks[] (each < 64 bytes). */
static int tokens(struct base_tokenizer *tk, int f, const char *s, char toks[][64])
{
	size_t off = 0, n;
	const char *t;
	int pos, k = 0;
	while (base_token_next(tk, s, strlen(s), &off, STORE_TEXT_TOKEN_FLAGS(fields[f].text), &t, &n,
	                       &pos) > 0) {
		assert_true(n < 64 && pos == k);
		memcpy(toks[k], t, n);
		toks[k++][n] = 0;
	}
	return k;
}

static void check_field(struct store_txn *r, int dt, int f, const struct sdoc *docs)
{
	struct strata_error err = {0};
	struct base_tokenizer *tk;
	assert_int_equal(base_tokenizer_new(&tk, &err), 0);
	char terms[64][64];
	int nterms = 0;
	for (size_t v = 0; v < NVOCAB; v++) { /* every term the vocabulary makes */
		char toks[16][64];
		int n = tokens(tk, f, vocab[v], toks);
		for (int k = 0; k < n; k++) {
			int j = 0;
			while (j < nterms && strcmp(terms[j], toks[k]) != 0)
				j++;
			if (j == nterms)
				strcpy(terms[nterms++], toks[k]);
		}
	}
	uint64_t docs_with = 0, total = 0;
	for (int i = 0; i < NDOCS; i++) {
		const struct sdoc *d = &docs[i];
		char id[64];
		snprintf(id, sizeof id, "id:t:doc::%d", i);
		uint32_t lid, len;
		int rc = store_lookup(r, dt, id, &lid, &err);
		if (!d->live) {
			assert_int_equal(rc, STRATA_NOT_FOUND);
			continue;
		}
		assert_int_equal(rc, 0);
		rc = store_text_length(r, dt, f, lid, &len, &err);
		if (!d->has[f]) {
			assert_int_equal(rc, STRATA_NOT_FOUND);
			continue;
		}
		assert_int_equal(rc, 0);
		/* the model: element k starts after the earlier ones and a gap */
		uint32_t start[MAXEL], elen[MAXEL], base = 0, sum = 0;
		for (int k = 0; k < d->ne[f]; k++) {
			char toks[16][64];
			start[k] = base;
			elen[k] = (uint32_t)tokens(tk, f, vocab[d->el[f][k]], toks);
			base += elen[k] + 1;
			sum += elen[k];
		}
		assert_int_equal(len, sum);
		docs_with++;
		total += sum;
		for (int t = 0; t < nterms; t++) {
			uint32_t want[64];
			int nw = 0;
			for (int k = 0; k < d->ne[f]; k++) {
				char toks[16][64];
				int n = tokens(tk, f, vocab[d->el[f][k]], toks);
				for (int j = 0; j < n; j++)
					if (strcmp(toks[j], terms[t]) == 0)
						want[nw++] = start[k] + (uint32_t)j;
			}
			struct store_postings *pl;
			assert_int_equal(store_postings_open(r, dt, f, terms[t], strlen(terms[t]), &pl,
			                                     &err), 0);
			uint32_t at = lid;
			rc = store_postings_seek(pl, &at);
			if (!nw) {
				assert_true(rc == STRATA_NOT_FOUND || at != lid);
				store_postings_close(pl);
				continue;
			}
			assert_int_equal(rc, 0);
			assert_int_equal(at, lid);
			uint32_t pos[64];
			assert_int_equal(store_postings_positions(pl, pos, 64), nw);
			assert_memory_equal(pos, want, (size_t)nw * sizeof *pos);
			for (int j = 0; j < nw; j++) {
				uint32_t e;
				int32_t wt;
				assert_int_equal(store_text_element(r, dt, f, lid, pos[j], &e, &wt, &err), 0);
				assert_true(pos[j] >= start[e] && pos[j] < start[e] + elen[e]);
				assert_int_equal(wt, f == F_WSET ? d->w[f][e] : 1);
			}
			/* all of them with one read: the same elements and weights */
			uint32_t es[64];
			int32_t ws[64];
			assert_int_equal(store_text_elements(r, dt, f, lid, pos, (uint32_t)nw, es, ws, &err), 0);
			for (int j = 0; j < nw; j++) {
				uint32_t e;
				int32_t wt;
				assert_int_equal(store_text_element(r, dt, f, lid, pos[j], &e, &wt, &err), 0);
				assert_int_equal(es[j], e);
				assert_int_equal(ws[j], wt);
			}
			store_postings_close(pl);
		}
		/* the gaps belong to no element */
		for (int k = 0; k < d->ne[f]; k++) {
			uint32_t e;
			int32_t wt;
			assert_int_equal(store_text_element(r, dt, f, lid, start[k] + elen[k], &e, &wt, &err),
			                 STRATA_NOT_FOUND);
			uint32_t gap = start[k] + elen[k];
			assert_int_equal(store_text_elements(r, dt, f, lid, &gap, 1, &e, &wt, &err), 0);
			assert_int_equal(e, UINT32_MAX);
			assert_int_equal(wt, 1);
		}
	}
	uint64_t sd, st;
	assert_int_equal(store_text_stats(r, dt, f, &sd, &st, &err), 0);
	assert_int_equal(sd, docs_with);
	assert_int_equal(st, total);
	base_tokenizer_free(tk);
}

static void check_all(struct store_env *env, int dt, const struct sdoc *docs)
{
	struct strata_error err = {0};
	struct store_txn *r;
	assert_int_equal(store_txn_begin(env, 0, &r, &err), 0);
	check_field(r, dt, F_ARR, docs);
	check_field(r, dt, F_WSET, docs);
	store_txn_abort(r);
}

static int open_store(const char *dir, struct store_env **env)
{
	struct strata_error err = {0};
	int dt = -1;
	assert_int_equal(store_open(dir, env, &err), 0);
	if (store_doctype_add(*env, &doc, &dt, &err))
		fail_msg("%s", err.msg);
	return dt;
}

/* Each test's store: a fresh folder, opened. */
struct fixture {
	char dir[32];
	struct store_env *env;
	int dt;
};

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof *fx);
	assert_non_null(fx);
	strcpy(fx->dir, "/tmp/strata_tcoll_XXXXXX");
	assert_non_null(mkdtemp(fx->dir));
	fx->dt = open_store(fx->dir, &fx->env);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;
	store_close(fx->env);
	nftw(fx->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(fx);
	return 0;
}

static void test_random_ops(void **state)
{
	struct fixture *fx = *state;
	struct store_env *env = fx->env;
	int dt = fx->dt;
	struct strata_error err = {0};
	static struct sdoc docs[NDOCS];
	memset(docs, 0, sizeof docs);
	unsigned seed = 11;
	for (int batch = 0; batch < 10; batch++) {
		struct store_txn *w;
		assert_int_equal(store_txn_begin(env, 1, &w, &err), 0);
		for (int k = 0; k < 20; k++) {
			seed = seed * 1103515245u + 12345u;
			int i = (int)((seed >> 16) % NDOCS), op = (int)((seed >> 8) % 10);
			struct sdoc *d = &docs[i];
			if (op < 4 || !d->live) { /* a put */
				d->live = 1;
				random_field(d, F_ARR, &seed);
				random_field(d, F_WSET, &seed);
				write_doc(w, dt, i, d, 0, NULL);
			} else if (op < 6) { /* one field assigned */
				int which[NF] = {0};
				which[op & 1] = 1;
				random_field(d, op & 1, &seed);
				d->has[op & 1] = 1; /* an update assigns values, never clears */
				write_doc(w, dt, i, d, 1, which);
			} else if (op < 8) { /* the array: an element added, the first removed */
				int which[NF] = {1, 0};
				if (d->ne[F_ARR] < MAXEL)
					d->el[F_ARR][d->ne[F_ARR]++] = (int)(seed % NVOCAB);
				if (op == 7 && d->ne[F_ARR]) {
					memmove(d->el[F_ARR], d->el[F_ARR] + 1,
					        (size_t)(d->ne[F_ARR] - 1) * sizeof d->el[F_ARR][0]);
					d->ne[F_ARR]--;
				}
				d->has[F_ARR] = 1;
				write_doc(w, dt, i, d, 1, which);
			} else {
				char id[64];
				snprintf(id, sizeof id, "id:t:doc::%d", i);
				assert_int_equal(store_remove(w, dt, id, &err), 0);
				d->live = 0;
			}
		}
		assert_int_equal(store_txn_commit(w, &err), 0);
		check_all(env, dt, docs);
	}
	store_close(env);
	fx->dt = dt = open_store(fx->dir, &fx->env); /* reopened: the same */
	check_all(fx->env, dt, docs);
}

/* Escapes decode before tokenizing; a value that is no array of strings
 * fails the write and its transaction. */
static void test_escapes_and_corrupt(void **state)
{
	struct fixture *fx = *state;
	struct store_env *env = fx->env;
	int dt = fx->dt;
	struct strata_error err = {0};
	struct store_txn *w;
	assert_int_equal(store_txn_begin(env, 1, &w, &err), 0);
	const char *arr = "[\"caf\\u00e9 \\\"x\\\"\", \"\\ud83d\\ude00 y\\n\"]";
	struct store_value v[NF] = {{.set = 1, .s = arr, .n = strlen(arr)}};
	assert_int_equal(store_put(w, dt, "id:t:doc::1", v, &err), 0);
	assert_int_equal(store_txn_commit(w, &err), 0);
	struct store_txn *r;
	assert_int_equal(store_txn_begin(env, 0, &r, &err), 0);
	uint32_t lid, len;
	assert_int_equal(store_lookup(r, dt, "id:t:doc::1", &lid, &err), 0);
	assert_int_equal(store_text_length(r, dt, F_ARR, lid, &len, &err), 0);
	/* "cafe" "x" | the emoji is a symbol, "y" */
	assert_int_equal(len, 3);
	const char *want[] = {"cafe", "x", "y"};
	const uint32_t wpos[] = {0, 1, 3};
	for (int k = 0; k < 3; k++) {
		struct store_postings *pl;
		uint32_t at = 0, pos;
		assert_int_equal(store_postings_open(r, dt, F_ARR, want[k], strlen(want[k]), &pl, &err),
		                 0);
		assert_int_equal(store_postings_seek(pl, &at), 0);
		assert_int_equal(store_postings_positions(pl, &pos, 1), 1);
		assert_int_equal(pos, wpos[k]);
		store_postings_close(pl);
	}
	store_txn_abort(r);

	static const char *const bad[] = {"[1, 2]", "[\"a\"", "{\"a\": 1}", "[\"\\q\"]", "",
	                                  "[\"a\"] x", "[\"\\udc00\"]"};
	for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
		assert_int_equal(store_txn_begin(env, 1, &w, &err), 0);
		struct store_value b[NF] = {{.set = 1, .s = bad[k], .n = strlen(bad[k])}};
		assert_int_equal(store_put(w, dt, "id:t:doc::2", b, &err), STRATA_CORRUPT);
		assert_non_null(strstr(err.msg, "malformed"));
		assert_int_equal(store_txn_commit(w, &err), STRATA_TXN_FAILED);
	}
	static const char *const badw[] = {"{\"a\": x}", "{\"a\" 1}", "{\"a\": 99999999999}",
	                                   "[\"a\"]"};
	for (size_t k = 0; k < sizeof badw / sizeof badw[0]; k++) {
		assert_int_equal(store_txn_begin(env, 1, &w, &err), 0);
		struct store_value b[NF] = {{0}, {.set = 1, .s = badw[k], .n = strlen(badw[k])}};
		assert_int_equal(store_put(w, dt, "id:t:doc::2", b, &err), STRATA_CORRUPT);
		store_txn_abort(w);
	}
	/* nothing of them stayed */
	assert_int_equal(store_txn_begin(env, 0, &r, &err), 0);
	assert_int_equal(store_lookup(r, dt, "id:t:doc::2", &lid, &err), STRATA_NOT_FOUND);
	assert_int_equal(store_count(r, dt), 1);
	store_txn_abort(r);
}

/* Each allocation of a put and an update of collection values made to fail
 * in turn: the write fails with STRATA_NOMEM, a commit after it writes
 * nothing of it (the index is as before), and nothing leaks. */
static void test_alloc_failures(void **state)
{
	struct fixture *fx = *state;
	struct strata_error err = {0};
	static struct sdoc docs[NDOCS];
	memset(docs, 0, sizeof docs);
	unsigned seed = 3;
	struct store_txn *w;
	assert_int_equal(store_txn_begin(fx->env, 1, &w, &err), 0);
	for (int i = 0; i < 4; i++) {
		docs[i].live = 1;
		random_field(&docs[i], F_ARR, &seed);
		random_field(&docs[i], F_WSET, &seed);
		docs[i].has[F_ARR] = docs[i].has[F_WSET] = 1;
		write_doc(w, fx->dt, i, &docs[i], 0, NULL);
	}
	assert_int_equal(store_txn_commit(w, &err), 0);
	struct base_alloc_stats before, after;
	long failures = 0;
	for (long k = 1; k < 10000; k++) {
		struct sdoc d = docs[1];
		d.ne[F_ARR] = 3;
		d.el[F_ARR][0] = 0, d.el[F_ARR][1] = 2, d.el[F_ARR][2] = 7;
		d.ne[F_WSET] = 2;
		d.el[F_WSET][0] = 3, d.el[F_WSET][1] = 4;
		char id[64], js[NF][1024];
		snprintf(id, sizeof id, "id:t:doc::%d", 1);
		struct store_value v[NF] = {0};
		for (int f = 0; f < NF; f++)
			v[f] = (struct store_value){.set = 1, .s = js[f], .n = json_of(&d, f, js[f], sizeof js[f])};
		base_alloc_stats(&before);
		assert_int_equal(store_txn_begin(fx->env, 1, &w, &err), 0);
		base_alloc_fail_after(k);
		int rc = k & 1 ? store_update(w, fx->dt, id, v, &err) : store_put(w, fx->dt, id, v, &err);
		base_alloc_fail_after(0);
		if (rc == 0) {
			store_txn_abort(w);
			break; /* k passed the last allocation */
		}
		assert_int_equal(rc, STRATA_NOMEM);
		assert_non_null(strstr(err.msg, "out of memory"));
		/* failed before writing (the txn still usable) or after (it refuses) */
		rc = store_txn_commit(w, &err);
		assert_true(rc == 0 || rc == STRATA_TXN_FAILED);
		base_alloc_stats(&after);
		assert_int_equal(after.live_bytes, before.live_bytes);
		check_all(fx->env, fx->dt, docs);
		failures++;
	}
	assert_true(failures > 0);
	check_all(fx->env, fx->dt, docs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_random_ops, setup, teardown),
		cmocka_unit_test_setup_teardown(test_escapes_and_corrupt, setup, teardown),
		cmocka_unit_test_setup_teardown(test_alloc_failures, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
