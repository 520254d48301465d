/*
 * test_text_index.c: the text index in the store (store/text.c).  Posting
 * lists, positions, field lengths and totals are checked against a brute
 * force scan that tokenizes every stored document again (and seeks in them,
 * forward and back, against the lids found): after random puts,
 * updates and removes, after reopening, after the text settings change
 * (rebuild), after a failed transaction is aborted, with tokens made ahead
 * offered to the writes (matching or not), and after a writer
 * process is killed with SIGKILL in the middle of a feed (every
 * acknowledged document is there and searchable; store and index agree).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../store/store.h"

enum { F_TITLE, F_TAG, F_N, F_PLAIN, NF };

static struct store_field fields[NF] = {
	{.name = "title", .type = STORE_T_STRING, .text = STORE_TEXT_ON | BASE_TOKEN_TEXT},
	{.name = "tag", .type = STORE_T_STRING,
	 .text = STORE_TEXT_ON | BASE_TOKEN_WHOLE | BASE_TOKEN_NORMALIZE},
	{.name = "n", .type = STORE_T_INT, .attribute = 1},
	{.name = "plain", .type = STORE_T_STRING},
};
static const struct store_doctype doc = {"doc", NF, fields};

static const char *const vocab[] = {
	"running", "runs", "Run", "shoe", "shoes", "Café", "cafe", "red", "blue", "x", "ÉCOLE",
	"école", "the", "a", "42", "b2b",
};
#define NVOCAB (sizeof vocab / sizeof vocab[0])

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

static void text_of(unsigned seed, char *buf, size_t cap)
{
	/* Now and then a long text, whose terms come back 25 times and more
	 * (their postings are written another way). */
	int nw = seed % 23 == 0 ? 600 : 1 + (int)(seed % 7);
	buf[0] = 0;
	for (int i = 0; i < nw; i++) {
		seed = seed * 1103515245u + 12345u;
		size_t l = strlen(buf);
		snprintf(buf + l, cap - l, "%s%s", i ? (seed & 64 ? ", " : " ") : "",
		         vocab[(seed >> 8) % NVOCAB]);
	}
}

/* Every term of every stored document, field by field, against the index. */
struct term_set {
	char t[256][64];
	int n;
};

static void add_term(struct term_set *ts, const char *t, size_t n)
{
	for (int i = 0; i < ts->n; i++)
		if (strlen(ts->t[i]) == n && memcmp(ts->t[i], t, n) == 0)
			return;
	assert_true(ts->n < 256 && n < 64);
	memcpy(ts->t[ts->n], t, n);
	ts->t[ts->n++][n] = 0;
}

/* The positions of term in s under flags, by tokenizing; count returned. */
static int brute_positions(struct base_tokenizer *tk, const char *s, size_t n, int flags,
                           const char *term, uint32_t *pos, int *len)
{
	size_t off = 0, tn;
	const char *t;
	int p, k = 0;
	*len = 0;
	while (base_token_next(tk, s, n, &off, flags, &t, &tn, &p) > 0) {
		(*len)++;
		if (tn == strlen(term) && memcmp(t, term, tn) == 0)
			pos[k++] = (uint32_t)p;
	}
	return k;
}

static void check_field(struct store_txn *r, int dt, int field, uint64_t *ndocs_out)
{
	struct strata_error err = {0};
	struct base_tokenizer *tk;
	assert_int_equal(base_tokenizer_new(&tk, &err), 0);
	int flags = fields[field].text & ~STORE_TEXT_ON;
	struct term_set *ts = calloc(1, sizeof *ts);
	struct store_value v[NF];
	uint64_t docs = 0, tokens = 0;
	/* the terms, the lengths and the totals */
	for (uint32_t lid = 0; store_next(r, dt, &lid) == 0; lid++) {
		assert_int_equal(store_get(r, dt, lid, v, &err), 0);
		uint32_t len;
		int rc = store_text_length(r, dt, field, lid, &len, &err);
		if (!v[field].set) {
			assert_int_equal(rc, STRATA_NOT_FOUND);
			continue;
		}
		assert_int_equal(rc, 0);
		size_t off = 0, tn;
		const char *t;
		int p, count = 0;
		while (base_token_next(tk, v[field].s, v[field].n, &off, flags, &t, &tn, &p) > 0) {
			add_term(ts, t, tn);
			count++;
		}
		assert_int_equal(len, count);
		docs++;
		tokens += (uint64_t)count;
	}
	uint64_t sd, st;
	assert_int_equal(store_text_stats(r, dt, field, &sd, &st, &err), 0);
	assert_int_equal(sd, docs);
	assert_int_equal(st, tokens);
	*ndocs_out = docs;
	add_term(ts, "nosuchterm", 10);
	/* each term's postings: exactly the documents that have it, in order */
	for (int i = 0; i < ts->n; i++) {
		struct store_postings *pl;
		assert_int_equal(store_postings_open(r, dt, field, ts->t[i], strlen(ts->t[i]), &pl, &err),
		                 0);
		uint64_t df = 0;
		uint32_t want = 0, at = 0, lids[512];
		for (;;) {
			int rc = store_next(r, dt, &want);
			uint32_t bpos[1024];
			int blen = 0, bn = 0;
			if (rc == 0) {
				assert_int_equal(store_get(r, dt, want, v, &err), 0);
				if (v[field].set)
					bn = brute_positions(tk, v[field].s, v[field].n, flags, ts->t[i], bpos,
					                     &blen);
			}
			if (rc == 0 && bn == 0) {
				want++;
				continue;
			}
			int prc = store_postings_seek(pl, &at);
			if (rc != 0) {
				assert_int_equal(prc, STRATA_NOT_FOUND);
				break;
			}
			assert_int_equal(prc, 0);
			assert_int_equal(at, want);
			uint32_t pos[1024];
			assert_int_equal(store_postings_positions(pl, pos, 1024), bn);
			assert_memory_equal(pos, bpos, (size_t)bn * sizeof *pos);
			assert_true(df < 512);
			lids[df++] = want;
			at = ++want;
		}
		assert_int_equal(store_postings_df(pl), df);
		/* seeks back and forth, near and far: the first posting at or after */
		unsigned seed = (unsigned)i * 2654435761u + 1;
		for (int k = 0; k < 200; k++) {
			seed = seed * 1103515245u + 12345u;
			uint32_t to = (seed >> 8) % (want + 3), got = to;
			size_t j = 0;
			while (j < df && lids[j] < to)
				j++;
			int prc = store_postings_seek(pl, &got);
			if (j == df) {
				assert_int_equal(prc, STRATA_NOT_FOUND);
				continue;
			}
			assert_int_equal(prc, 0);
			assert_int_equal(got, lids[j]);
		}
		store_postings_close(pl);
	}
	free(ts);
	base_tokenizer_free(tk);
}

static uint64_t check_all(struct store_env *env, int dt)
{
	struct strata_error err = {0};
	struct store_txn *r;
	uint64_t a, b;
	assert_int_equal(store_txn_begin(env, 0, &r, &err), 0);
	check_field(r, dt, F_TITLE, &a);
	check_field(r, dt, F_TAG, &b);
	/* no index on the other fields */
	struct store_postings *pl;
	assert_int_equal(store_postings_open(r, dt, F_PLAIN, "x", 1, &pl, &err),
	                 STRATA_INVALID_ARGUMENT);
	uint64_t n = store_count(r, dt);
	store_txn_abort(r);
	return n;
}

static int open_store(const char *dir, const struct store_doctype *d, struct store_env **env)
{
	struct strata_error err = {0};
	int dt = -1;
	assert_int_equal(store_open(dir, env, &err), 0);
	if (store_doctype_add(*env, d, &dt, &err))
		fail_msg("%s", err.msg);
	return dt;
}

/* A store in a new folder from template dir ("...XXXXXX", filled in) with
 * type doc; its type index. */
static int new_store(char *dir, struct store_env **env)
{
	assert_non_null(mkdtemp(dir));
	return open_store(dir, &doc, env);
}

/* Close env and remove its folder. */
static void remove_store(struct store_env *env, const char *dir)
{
	store_close(env);
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void put_doc(struct store_txn *w, int dt, unsigned i, unsigned seed, int update)
{
	struct strata_error err = {0};
	char id[64], title[8192], tag[64];
	snprintf(id, sizeof id, "id:t:doc::%u", i);
	text_of(seed, title, sizeof title);
	snprintf(tag, sizeof tag, "%s", vocab[seed % NVOCAB]);
	struct store_value v[NF] = {0};
	v[F_TITLE] = (struct store_value){.set = 1, .s = title, .n = strlen(title)};
	if (!update || seed % 3 == 0)
		v[F_TAG] = (struct store_value){.set = !(seed % 5 == 0), .s = tag, .n = strlen(tag)};
	v[F_N] = (struct store_value){.set = 1, .i = (int64_t)i};
	v[F_PLAIN] = (struct store_value){.set = 1, .s = "x", .n = 1};
	int rc = update ? store_update(w, dt, id, v, &err) : store_put(w, dt, id, v, &err);
	if (rc && !(update && rc == STRATA_NOT_FOUND))
		fail_msg("%s", err.msg);
}

static void test_random_ops(void **state)
{
	(void)state;
	char dir[] = "/tmp/strata_text_XXXXXX";
	struct store_env *env;
	int dt = new_store(dir, &env);
	struct strata_error err = {0};
	unsigned seed = 7;
	for (int batch = 0; batch < 12; batch++) {
		struct store_txn *w;
		assert_int_equal(store_txn_begin(env, 1, &w, &err), 0);
		for (int k = 0; k < 25; k++) {
			seed = seed * 1664525u + 1013904223u;
			unsigned i = (seed >> 16) % 40, op = (seed >> 8) % 10;
			if (op < 5) {
				put_doc(w, dt, i, seed >> 4, 0);
			} else if (op < 8) {
				put_doc(w, dt, i, seed >> 4, 1);
			} else {
				char id[64];
				snprintf(id, sizeof id, "id:t:doc::%u", i);
				int rc = store_remove(w, dt, id, &err);
				assert_true(rc == 0 || rc == STRATA_NOT_FOUND);
			}
		}
		assert_int_equal(store_txn_commit(w, &err), 0);
		check_all(env, dt);
	}
	/* documents fed again as they are (in the transaction that wrote them,
	 * then in the next), and updated to the values they have: the index
	 * stays exact */
	for (int round = 0; round < 2; round++) {
		struct store_txn *w;
		assert_int_equal(store_txn_begin(env, 1, &w, &err), 0);
		for (unsigned i = 0; i < 40; i += 3) {
			if (!round)
				put_doc(w, dt, i, i * 7u + 3u, 0);
			put_doc(w, dt, i, i * 7u + 3u, 0);
			put_doc(w, dt, i, i * 7u + 3u, 1);
		}
		assert_int_equal(store_txn_commit(w, &err), 0);
		check_all(env, dt);
	}
	/* an aborted transaction leaves the index as it was */
	struct store_txn *w;
	assert_int_equal(store_txn_begin(env, 1, &w, &err), 0);
	for (unsigned i = 0; i < 40; i++)
		put_doc(w, dt, i, i * 31u + 5u, 0);
	store_txn_abort(w);
	uint64_t n = check_all(env, dt);
	store_close(env);

	/* reopened: the same */
	dt = open_store(dir, &doc, &env);
	assert_int_equal(check_all(env, dt), n);
	store_close(env);

	/* new settings: title unstemmed; the index is rebuilt */
	struct store_field f2[NF];
	memcpy(f2, fields, sizeof f2);
	f2[F_TITLE].text = STORE_TEXT_ON | BASE_TOKEN_NORMALIZE;
	struct store_doctype d2 = {"doc", NF, f2};
	dt = open_store(dir, &d2, &env);
	memcpy(fields, f2, sizeof f2); /* check_field reads the flags from fields */
	assert_int_equal(check_all(env, dt), n);
	store_close(env);
	fields[F_TITLE].text = STORE_TEXT_ON | BASE_TOKEN_TEXT;
	dt = open_store(dir, &doc, &env);
	assert_int_equal(check_all(env, dt), n);
	remove_store(env, dir);
}

/* Text tokenized ahead (store_pretext) and offered to the writes: taken
 * where a field's value is the same bytes, ignored where it is not (other
 * bytes, another field, a field without text); either way the index is
 * what tokenizing the stored values gives. */
static void test_pretext(void **state)
{
	(void)state;
	char dir[] = "/tmp/strata_text_XXXXXX";
	struct store_env *env;
	int dt = new_store(dir, &env);
	struct strata_error err = {0};
	struct store_pretext *pre[2] = {0};
	static char title[8192], other[8192];
	for (int batch = 0; batch < 4; batch++) {
		struct store_txn *w;
		assert_int_equal(store_txn_begin(env, 1, &w, &err), 0);
		for (unsigned i = 0; i < 30; i++) {
			unsigned seed = i * 2654435761u + (unsigned)batch * 977u;
			text_of(seed, title, sizeof title);
			text_of(seed + 1, other, sizeof other);
			const char *t = i % 3 == 1 ? other : title;
			assert_int_equal(store_pretext_make(env, dt, F_TITLE, t, strlen(t), &pre[0], &err),
			                 0);
			assert_int_equal(store_pretext_make(env, dt, F_TAG, title, strlen(title), &pre[1],
			                                    &err), 0);
			store_txn_pretext(w, pre, i % 5 == 4 ? 0 : 2);
			put_doc(w, dt, i, seed, batch % 2);
			store_txn_pretext(w, NULL, 0);
		}
		assert_int_equal(store_txn_commit(w, &err), 0);
		check_all(env, dt);
	}
	assert_int_equal(store_pretext_make(env, dt, F_N, "1", 1, &pre[0], &err),
	                 STRATA_INVALID_ARGUMENT);
	assert_int_equal(store_pretext_make(env, dt, F_PLAIN, "x", 1, &pre[0], &err),
	                 STRATA_INVALID_ARGUMENT);
	assert_int_equal(store_pretext_make(env, dt + 7, F_TITLE, "x", 1, &pre[0], &err),
	                 STRATA_INVALID_ARGUMENT);
	store_pretext_free(pre[0]);
	store_pretext_free(pre[1]);
	remove_store(env, dir);
}

/* A child feeds documents, one commit each, writing the number of each
 * committed one to a pipe; it is killed with SIGKILL at some point. */
static void test_kill_mid_feed(void **state)
{
	(void)state;
	char dir[] = "/tmp/strata_text_XXXXXX";
	assert_non_null(mkdtemp(dir));
	int fd[2];
	assert_int_equal(pipe(fd), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(fd[0]);
		struct store_env *env;
		struct strata_error err = {0};
		int dt = -1;
		if (store_open(dir, &env, &err) || store_doctype_add(env, &doc, &dt, &err))
			_exit(2);
		for (unsigned i = 0;; i++) {
			struct store_txn *w;
			if (store_txn_begin(env, 1, &w, &err))
				_exit(3);
			put_doc(w, dt, i % 300, i, 0);
			put_doc(w, dt, (i * 7) % 300, i + 1, 1);
			if (store_txn_commit(w, &err))
				_exit(4);
			if (write(fd[1], &i, sizeof i) != (ssize_t)sizeof i)
				_exit(5);
		}
	}
	close(fd[1]);
	unsigned acked = 0, got;
	int nread = 0;
	while (nread < 60 && read(fd[0], &got, sizeof got) == (ssize_t)sizeof got) {
		acked = got;
		nread++;
	}
	kill(pid, SIGKILL);
	int status;
	waitpid(pid, &status, 0);
	close(fd[0]);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(nread, 60);
	struct store_env *env;
	int dt = open_store(dir, &doc, &env);
	/* every acknowledged document is there, and findable by its words */
	struct strata_error err = {0};
	struct store_txn *r;
	assert_int_equal(store_txn_begin(env, 0, &r, &err), 0);
	for (unsigned i = 0; i <= acked && i < 300; i++) {
		char id[64];
		snprintf(id, sizeof id, "id:t:doc::%u", i);
		uint32_t lid;
		assert_int_equal(store_lookup(r, dt, id, &lid, &err), 0);
		uint32_t len;
		assert_int_equal(store_text_length(r, dt, F_TITLE, lid, &len, &err), 0);
		assert_true(len > 0);
	}
	store_txn_abort(r);
	check_all(env, dt);
	remove_store(env, dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_ops),
		cmocka_unit_test(test_pretext),
		cmocka_unit_test(test_kill_mid_feed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
