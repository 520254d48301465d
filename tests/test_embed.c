/*
 * test_embed.c: the library as a program that embeds it sees it.
 *
 * The library never prints: what it has to say beside its results goes to
 * the log callback of struct strata_options, and with none it says nothing
 * at all (standard output and error are captured around the calls that
 * would have something to say: a compiled context gone stale, a damaged
 * manifest).
 *
 * Every allocation may fail, and a failure is reported, not suffered: each
 * call of the API (query, get, feed one operation, feed a file) runs again
 * and again with its first, second, third ... allocation failing until a
 * run no longer reaches the injected failure.  Each run must give what the
 * call gives without failures, or STRATA_NOMEM with a message that says
 * "out of memory"; leave the library holding exactly the bytes it held
 * before; and leave the store as it was or as the call makes it, never
 * anything between: no stored document lost or changed by a feed that
 * failed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "../engine/engine_int.h"
#include "modelbuild.h"

/* ---- an application ------------------------------------------------------------------ */

static const char *item_sd =
	"schema item {\n"
	"    document item {\n"
	"        field title type string {\n"
	"            indexing: summary | attribute\n"
	"        }\n"
	"        field price type int {\n"
	"            indexing: summary | attribute\n"
	"        }\n"
	"        field descr type string {\n"
	"            indexing: summary | index\n"
	"            index: enable-bm25\n"
	"        }\n"
	"        field emb type tensor<float>(x[3]) {\n"
	"            indexing: summary | attribute\n"
	"            attribute {\n"
	"                distance-metric: euclidean\n"
	"            }\n"
	"        }\n"
	"    }\n"
	"    rank-profile default {\n"
	"        first-phase {\n"
	"            expression: attribute(price)\n"
	"        }\n"
	"    }\n"
	"    rank-profile model {\n"
	"        onnx-model tiny {\n"
	"            file: models/tiny.onnx\n"
	"            input \"x\": attribute(emb)\n"
	"            output \"y\": out\n"
	"        }\n"
	"        first-phase {\n"
	"            expression: attribute(price)\n"
	"        }\n"
	"        second-phase {\n"
	"            rerank-count: 3\n"
	"            expression: sum(onnx(tiny).out)\n"
	"        }\n"
	"        match-features: firstPhase\n"
	"    }\n"
	"    rank-profile text {\n"
	"        first-phase { expression: bm25(descr) + fieldLength(descr) }\n"
	"        match-features: matches(descr)\n"
	"    }\n"
	"    rank-profile near {\n"
	"        inputs {\n"
	"            query(q) tensor<float>(x[3])\n"
	"        }\n"
	"        first-phase {\n"
	"            expression: closeness(field, emb)\n"
	"        }\n"
	"    }\n"
	"}\n";

struct app {
	char dir[64];   /* the temporary folder */
	char app[128];  /* dir/app */
};

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

/* models/tiny.onnx: y[batch, 1] = x[batch, 3] . (1, 2, 3), in a graph named
 * name (another name, another file size). */
static void write_model(const struct app *a, const char *name)
{
	char path[256];
	snprintf(path, sizeof path, "%s/models/tiny.onnx", a->app);
	struct mb_model *m = mb_new(name, 17);
	static const float w[3] = { 1, 2, 3 };
	mb_input(m, "x", BASE_DT_FLOAT, 2, (int64_t[]){ -1, 3 }, (const char *[]){ "batch", "" });
	mb_init(m, "w", BASE_DT_FLOAT, 2, (int64_t[]){ 3, 1 }, w);
	mb_node(m, "MatMul", "x,w", "y");
	mb_output(m, "y", BASE_DT_FLOAT, 2, (int64_t[]){ -1, 1 }, (const char *[]){ "batch", "" });
	assert_int_equal(mb_save(m, path), 0);
	mb_free(m);
}

static void app_make(struct app *a)
{
	snprintf(a->dir, sizeof a->dir, "/tmp/strata-embed.XXXXXX");
	assert_non_null(mkdtemp(a->dir));
	snprintf(a->app, sizeof a->app, "%s/app", a->dir);
	char path[256];
	assert_int_equal(mkdir(a->app, 0777), 0);
	snprintf(path, sizeof path, "%s/schemas", a->app);
	assert_int_equal(mkdir(path, 0777), 0);
	snprintf(path, sizeof path, "%s/models", a->app);
	assert_int_equal(mkdir(path, 0777), 0);
	snprintf(path, sizeof path, "%s/schemas/item.sd", a->app);
	write_file(path, item_sd);
	write_model(a, "tiny");
}

static void app_remove(struct app *a)
{
	char cmd[160];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", a->dir);
	assert_int_equal(system(cmd), 0);
}

/* ---- the log ------------------------------------------------------------------------ */

struct logged {
	int n;
	int level[8];
	char msg[8][STRATA_ERRMSG_MAX];
};

static void log_cb(void *ud, int level, const char *msg)
{
	struct logged *l = ud;
	if (l->n < 8) {
		l->level[l->n] = level;
		snprintf(l->msg[l->n], sizeof l->msg[0], "%s", msg);
	}
	l->n++;
}

/* Open app with opts and close it, asserting that both succeed and print
 * nothing on standard output or error (both are captured meanwhile). */
static void open_silently(const char *app, const struct strata_options *opts)
{
	fflush(stdout);
	fflush(stderr);
	FILE *tmp = tmpfile();
	assert_non_null(tmp);
	int out = dup(1), errfd = dup(2);
	assert_true(out >= 0 && errfd >= 0);
	assert_true(dup2(fileno(tmp), 1) >= 0 && dup2(fileno(tmp), 2) >= 0);
	struct strata *db = NULL;
	struct strata_error err = { 0 };
	int rc = strata_open(app, opts, &db, &err);
	strata_close(db);
	fflush(stdout);
	fflush(stderr);
	dup2(out, 1);
	dup2(errfd, 2);
	close(out);
	close(errfd);
	char printed[4096];
	rewind(tmp);
	size_t got = fread(printed, 1, sizeof printed - 1, tmp);
	printed[got] = 0;
	fclose(tmp);
	if (rc)
		fail_msg("open %s: %s", app, err.msg);
	assert_string_equal(printed, "");
}

/* Deploy a: compile its model into DATA/contexts. */
static void deploy(struct app *a)
{
	struct strata *db;
	struct strata_error err = { 0 };
	if (eng_open(a->app, NULL, 1, &db, &err) != 0)
		fail_msg("deploy: %s", err.msg);
	assert_int_equal(db->ncontexts, 1);
	strata_close(db);
}

static void test_log_stale_context(void **state)
{
	(void)state;
	struct app a;
	app_make(&a);
	deploy(&a);
	write_model(&a, "tiny-changed"); /* another size: the context is stale */
	struct logged l = { 0 };
	struct strata_options o = { .log = log_cb, .log_ud = &l };
	open_silently(a.app, &o);
	assert_int_equal(l.n, 1);
	assert_int_equal(l.level[0], STRATA_LOG_WARNING);
	char want[512];
	snprintf(want, sizeof want,
	         "%s/models/tiny.onnx: compiling the source instead of a compiled context: the "
	         "source changed since deploy (strata deploy compiles it again)", a.app);
	assert_string_equal(l.msg[0], want);

	/* No callback: the same open says nothing anywhere. */
	open_silently(a.app, NULL);
	struct strata_options quiet = { .log_ud = &l };
	open_silently(a.app, &quiet);
	assert_int_equal(l.n, 1);
	app_remove(&a);
}

static void test_log_bad_manifest(void **state)
{
	(void)state;
	struct app a;
	app_make(&a);
	deploy(&a);
	char path[256];
	snprintf(path, sizeof path, "%s/.strata/contexts/manifest.json", a.app);
	write_file(path, "{\"binary\": ");
	struct logged l = { 0 };
	struct strata_options o = { .log = log_cb, .log_ud = &l };
	open_silently(a.app, &o);
	assert_int_equal(l.n, 1);
	assert_int_equal(l.level[0], STRATA_LOG_WARNING);
	assert_true(strncmp(l.msg[0], path, strlen(path)) == 0);
	assert_non_null(strstr(l.msg[0], "; the models are compiled from their sources"));

	/* A manifest without its list of models. */
	write_file(path, "{\"binary\": null}");
	l.n = 0;
	open_silently(a.app, &o);
	assert_int_equal(l.n, 1);
	char want[512];
	snprintf(want, sizeof want,
	         "%s: no \"models\" list; the models are compiled from their sources", path);
	assert_string_equal(l.msg[0], want);
	open_silently(a.app, NULL);
	app_remove(&a);
}

/* ---- allocation failures -------------------------------------------------------------- */

/* The documents of the sweeps, and their ids: 1-4 fed before, 10 made by
 * the sweeps.  jansson (2.14) drops a byte of a token it cannot grow its
 * buffer for; when that is a string's closing quote, it reads past the
 * token.  Every JSON text given here keeps its strings off the lengths
 * where the buffer grows (safe_json checks it). */
#define NDOC 4
static const char *docs[NDOC] = {
	"{\"put\": \"id:t:item::1\", \"fields\": {\"title\": \"lamp\", \"price\": 30, "
	"\"descr\": \"A reading lamp\", \"emb\": [1, 0, 0]}}",
	"{\"put\": \"id:t:item::2\", \"fields\": {\"title\": \"desk\", \"price\": 20, "
	"\"descr\": \"Reading desks\", \"emb\": [0, 1, 0]}}",
	"{\"put\": \"id:t:item::3\", \"fields\": {\"title\": \"sofa\", \"price\": 50, "
	"\"emb\": [0, 0, 1]}}",
	"{\"put\": \"id:t:item::4\", \"fields\": {\"title\": \"rug\", \"price\": 10, "
	"\"emb\": [1, 1, 1]}}",
};
static const char *const ids[] = { "id:t:item::1", "id:t:item::2", "id:t:item::3",
	                            "id:t:item::4", "id:t:item::10" };
#define NIDS (sizeof ids / sizeof ids[0])

static const char *put10 = "{\"put\": \"id:t:item::10\", \"fields\": {\"title\": \"bed\", "
                           "\"price\": 70, \"descr\": \"a bed\", \"emb\": [2, 0, 1]}}";
static const char *upd2 = "{\"update\": \"id:t:item::2\", \"fields\": {\"price\": "
                          "{\"assign\": 25}}}";
static const char *rm3 = "{\"remove\": \"id:t:item::3\"}";

/* Whether no string of the JSON text has the length (quotes included) at
 * which jansson's token buffer grows (16, 32, 64, ...). */
static int safe_json(const char *text)
{
	for (const char *p = strchr(text, '"'); p; p = strchr(p + 1, '"')) {
		const char *q = strchr(p + 1, '"');
		if (!q)
			return 0;
		size_t n = (size_t)(q - p + 1);
		if (n >= 16 && (n & (n - 1)) == 0)
			return 0;
		p = q;
	}
	return 1;
}

static uint64_t live_bytes(void)
{
	struct base_alloc_stats st;
	base_alloc_stats(&st);
	return st.live_bytes;
}

struct sweep_fx {
	struct app a;
	struct strata *db;
};

/* An application without pools (every query frees all it allocates) and
 * documents 1-4. */
static int sweep_setup(void **state)
{
	struct sweep_fx *fx = calloc(1, sizeof *fx);
	assert_non_null(fx);
	app_make(&fx->a);
	struct strata_options o = { .pool_generations = -1 };
	struct strata_error err = { 0 };
	if (strata_open(fx->a.app, &o, &fx->db, &err) != 0)
		fail_msg("open: %s", err.msg);
	for (int i = 0; i < NDOC; i++)
		if (strata_feed_json(fx->db, docs[i], &err) != 0)
			fail_msg("feed %s: %s", docs[i], err.msg);
	*state = fx;
	return 0;
}

static int sweep_teardown(void **state)
{
	struct sweep_fx *fx = *state;
	strata_close(fx->db);
	app_remove(&fx->a);
	free(fx);
	return 0;
}

/* The stored state: each of ids as strata_get_json gives it, "-" when it
 * is not there, one per line (free()). */
static char *snapshot(struct strata *db)
{
	size_t cap = 4096, len = 0;
	char *s = malloc(cap);
	assert_non_null(s);
	s[0] = 0;
	for (size_t i = 0; i < NIDS; i++) {
		char *doc = NULL;
		struct strata_error err = { 0 };
		int rc = strata_get_json(db, ids[i], &doc, &err);
		if (rc && rc != STRATA_NOT_FOUND)
			fail_msg("get %s: %s", ids[i], err.msg);
		len += (size_t)snprintf(s + len, cap - len, "%s\n", rc ? "-" : doc);
		assert_true(len < cap);
		strata_free(doc);
	}
	return s;
}

/* One call of the API under test: its result (NULL for none) in *out
 * (strata_free). */
typedef int call_fn(struct strata *db, const char *arg, char **out, struct strata_error *err);

static int call_query(struct strata *db, const char *arg, char **out, struct strata_error *err)
{
	return strata_query_json(db, arg, out, err);
}

static int call_get(struct strata *db, const char *arg, char **out, struct strata_error *err)
{
	return strata_get_json(db, arg, out, err);
}

static int call_feed(struct strata *db, const char *arg, char **out, struct strata_error *err)
{
	*out = NULL;
	return strata_feed_json(db, arg, err);
}

struct feed_seen {
	int nreports;
	int bad_code;   /* a report of another code than STRATA_NOMEM */
};

static void feed_report(void *ud, long line, int code, const char *msg)
{
	struct feed_seen *s = ud;
	s->nreports++;
	if (code != STRATA_NOMEM || !strstr(msg, "out of memory"))
		s->bad_code = code ? code : -1;
}

/* strata_feed_file(arg): its counts in *out (free(), not counted by the
 * allocator under test) as "ok failed reports", and -1 for reports when
 * one was not an allocation failure. */
static int call_feed_file(struct strata *db, const char *arg, char **out,
                          struct strata_error *err)
{
	struct strata_feed_stats st;
	struct feed_seen seen = { 0 };
	int rc = strata_feed_file(db, arg, feed_report, &seen, &st, err);
	char text[64];
	snprintf(text, sizeof text, "%ld %ld %d", st.ok, st.failed,
	         seen.bad_code ? -1 : seen.nreports);
	*out = strdup(text);
	assert_non_null(*out);
	return rc;
}

/* Run call(db, arg) with the n-th allocation from now failing.  *fired
 * tells whether the run got that far. */
static int call_failing(long n, call_fn *call, struct strata *db, const char *arg, char **out,
                        struct strata_error *err, int *fired)
{
	uint64_t before = base_alloc_thread_count();
	base_alloc_fail_after(n);
	int rc = call(db, arg, out, err);
	uint64_t made = base_alloc_thread_count() - before;
	/* made >= n: the n-th was refused.  made == n - 1: it was refused, or
	 * never asked for, and then the countdown still stands at 1 and
	 * refuses this probe. */
	void *probe = base_alloc(1);
	base_alloc_fail_after(0);
	*fired = made >= (uint64_t)n || (made + 1 == (uint64_t)n && probe);
	base_free(probe, 1);
	return rc;
}

/* Restore what a sweep of a feed starts from: documents 1-4 as fed, no 10. */
static void restore(struct strata *db)
{
	struct strata_error err = { 0 };
	for (int i = 0; i < NDOC; i++)
		if (strata_feed_json(db, docs[i], &err) != 0)
			fail_msg("feed %s: %s", docs[i], err.msg);
	int rc = strata_remove(db, "id:t:item::10", &err);
	assert_true(rc == 0 || rc == STRATA_NOT_FOUND);
}

/* Sweep call(arg): its n-th allocation failing, for n = 1, 2, ... until a
 * run does not get that far.  writes: the call changes the store, which
 * is restored before each run and compared after it.  Returns the number
 * of runs that failed. */
static long sweep(struct strata *db, call_fn *call, const char *arg, int writes)
{
	assert_true(safe_json(arg));
	/* The reference run, after one that makes any state made once. */
	char *want = NULL, *got = NULL, *before = NULL;
	struct strata_error err = { 0 };
	if (writes)
		restore(db);
	call(db, arg, &want, &err);
	strata_free(want);
	want = NULL;
	if (writes) {
		restore(db);
		before = snapshot(db);
	}
	int want_rc = call(db, arg, &want, &err);
	if (writes) {
		strata_free(want);
		want = snapshot(db);
	}
	long failures = 0;
	for (long n = 1;; n++) {
		if (n > 100000)
			fail_msg("%s: still failing after %ld allocations", arg, n);
		if (writes)
			restore(db);
		uint64_t live = live_bytes();
		int fired;
		memset(&err, 0, sizeof err);
		int rc = call_failing(n, call, db, arg, &got, &err, &fired);
		strata_free(got);
		got = NULL;
		if (live_bytes() != live)
			fail_msg("%s: allocation %ld failing (%s): %lld bytes left behind", arg, n,
			         err.msg, (long long)(live_bytes() - live));
		if (writes)
			got = snapshot(db);
		else if (rc == want_rc)
			call(db, arg, &got, &err); /* the same call again, for its result */
		if (rc != want_rc) {
			failures++;
			if (rc != STRATA_NOMEM || !strstr(err.msg, "out of memory"))
				fail_msg("%s: allocation %ld failing: %d (%s), expected %d or an "
				         "out of memory error", arg, n, rc, err.msg, want_rc);
			if (writes && strcmp(got, before) != 0)
				fail_msg("%s: allocation %ld failing: the store changed:\n%s\nwas:\n%s",
				         arg, n, got, before);
		} else if ((got || want) && (!got || !want || strcmp(got, want) != 0)) {
			fail_msg("%s: allocation %ld failing: a different result:\n%s\nwant:\n%s", arg,
			         n, got ? got : "(none)", want ? want : "(none)");
		}
		if (writes)
			free(got);
		else
			strata_free(got);
		got = NULL;
		if (!fired)
			break;
	}
	if (writes) {
		free(want);
		free(before);
	} else {
		strata_free(want);
	}
	return failures;
}

static void test_faults_query(void **state)
{
	struct sweep_fx *fx = *state;
	static const char *requests[] = {
		"{\"yql\": \"select * from sources * where price > 15\", \"hits\": 3}",
		"{\"yql\": \"select * from item where {targetHits: 2}nearestNeighbor(emb, q)\", "
		"\"ranking.profile\": \"near\", \"input\": {\"query(q)\": [1, 1, 0]}}",
		"{\"yql\": \"select * from item where title contains 'rug'\", "
		"\"ranking.profile\": \"near\", \"input\": {\"query(q)\": \"[0,1,0]\"}}",
		"{\"yql\": \"select * from item where true\", \"ranking.profile\": \"nope\"}",
		"{\"yql\": \"select * from item where price <\"}",
		"{\"yql\": \"select * from item where title in ('rug', 'lamp') or title matches 'a' "
		"order by price desc limit 3 | all(group(title) max(2) each(output(count(), "
		"avg(price))))\"}",
		"{\"yql\": \"select * from item where true limit 0 | all(all(output(count(), "
		"sum(price))) all(group(title) each(output(count()) group(price) each(output("
		"max(price)))))))\"}",
		"{\"yql\": \"select * from item where descr contains 'reading' or descr contains "
		"phrase('a', 'lamp')\", \"ranking.profile\": \"text\"}",
		"{\"yql\": \"select * from item where userQuery()\", \"query\": \"reading -lamp\", "
		"\"model.defaultIndex\": \"descr\"}",
	};
	for (size_t i = 0; i < sizeof requests / sizeof requests[0]; i++)
		assert_true(sweep(fx->db, call_query, requests[i], 0) > 0);
	/* the text requests find what they should */
	const char *want[] = {
		"\"totalCount\":2,\"id\":\"id:t:item::1\",\"id\":\"id:t:item::2\"",
		"\"totalCount\":1,\"id\":\"id:t:item::2\"",
	};
	for (int k = 0; k < 2; k++) {
		char *out = NULL;
		struct strata_error err = { 0 };
		assert_int_equal(call_query(fx->db, requests[sizeof requests / sizeof requests[0] - 2 + k],
		                            &out, &err), 0);
		json_t *j = json_loads(out, 0, NULL);
		char got[256];
		snprintf(got, sizeof got, "\"totalCount\":%lld",
		         (long long)json_integer_value(json_object_get(json_object_get(json_object_get(
		                 j, "root"), "fields"), "totalCount")));
		json_t *ch = json_object_get(json_object_get(j, "root"), "children");
		for (size_t h = 0; h < json_array_size(ch); h++)
			snprintf(got + strlen(got), sizeof got - strlen(got), ",\"id\":\"%s\"",
			         json_string_value(json_object_get(json_array_get(ch, h), "id")));
		json_decref(j);
		strata_free(out);
		assert_string_equal(got, want[k]);
	}
}

/* A second phase through the model: the runtime's allocations too. */
static void test_faults_query_model(void **state)
{
	struct sweep_fx *fx = *state;
	assert_true(sweep(fx->db, call_query, "{\"yql\": \"select title from item where true\", "
	                                      "\"ranking.profile\": \"model\"}", 0) > 0);
}

static void test_faults_get(void **state)
{
	struct sweep_fx *fx = *state;
	assert_true(sweep(fx->db, call_get, "id:t:item::1", 0) > 0);
	assert_true(sweep(fx->db, call_get, "id:t:item::99", 0) > 0);
}

static void test_faults_feed(void **state)
{
	struct sweep_fx *fx = *state;
	const char *ops[] = {
		put10, upd2, rm3,
		"{\"put\": \"id:t:item::10\", \"fields\": {\"colour\": \"red\"}}",
		"{\"remove\": \"id:t:item::99\"}",
	};
	for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
		assert_true(sweep(fx->db, call_feed, ops[i], 1) > 0);
	/* the text index is written with the document, or not at all */
	assert_true(sweep(fx->db, call_feed, "{\"update\": \"id:t:item::1\", \"fields\": "
	                                     "{\"descr\": {\"assign\": \"the lamps for a bed\"}}}", 1) > 0);
}

/* How many lines of the snapshot now differ from before; each must be as
 * it was or as want has it. */
static int changed_lines(const char *now, const char *before, const char *want)
{
	int changed = 0;
	while (*now) {
		size_t n = strcspn(now, "\n"), b = strcspn(before, "\n"), w = strcspn(want, "\n");
		if (n != b || memcmp(now, before, n) != 0) {
			if (n != w || memcmp(now, want, n) != 0)
				fail_msg("a document is neither as it was nor as fed: %.*s", (int)n, now);
			changed++;
		}
		now += n + 1;
		before += b + 1;
		want += w + 1;
	}
	return changed;
}

/* A feed of three operations in one batch: an allocation failure in one
 * loses the batch, which is reported (STRATA_NOMEM for each operation)
 * and counted as failed; what the counts call written is there, and
 * nothing else changed. */
static void test_faults_feed_file(void **state)
{
	struct sweep_fx *fx = *state;
	char path[256];
	snprintf(path, sizeof path, "%s/ops.jsonl", fx->a.dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "%s\n%s\n%s\n", put10, upd2, rm3);
	assert_int_equal(fclose(f), 0);
	assert_true(safe_json(put10) && safe_json(upd2) && safe_json(rm3));
	restore(fx->db);
	char *before = snapshot(fx->db), *got = NULL;
	struct strata_error err = { 0 };
	assert_int_equal(call_feed_file(fx->db, path, &got, &err), 0);
	assert_string_equal(got, "3 0 0");
	free(got);
	char *want = snapshot(fx->db);
	long failures = 0;
	for (long n = 1;; n++) {
		assert_true(n < 100000);
		restore(fx->db);
		uint64_t live = live_bytes();
		int fired;
		int rc = call_failing(n, call_feed_file, fx->db, path, &got, &err, &fired);
		long ok = -1, failed = -1;
		int reports = -2;
		sscanf(got, "%ld %ld %d", &ok, &failed, &reports);
		free(got);
		assert_int_equal(live_bytes(), live);
		char *now = snapshot(fx->db);
		int changed = changed_lines(now, before, want);
		free(now);
		if (rc == 0) {
			assert_int_equal(ok, 3);
			assert_int_equal(changed, 3);
		} else if (rc == STRATA_INVALID_ARGUMENT) {
			/* Some operations failed, each reported as out of memory. */
			failures++;
			assert_int_equal(ok + failed, 3);
			assert_true(failed > 0 && reports > 0);
			assert_int_equal(changed, ok);
		} else {
			/* Stopped: the file unread, or a batch that could not begin. */
			failures++;
			if (rc != STRATA_NOMEM || !strstr(err.msg, "out of memory"))
				fail_msg("allocation %ld failing: %d (%s)", n, rc, err.msg);
			assert_true(reports >= 0);
			assert_int_equal(changed, ok > 0 ? ok : 0);
		}
		if (!fired)
			break;
	}
	assert_true(failures > 0);
	free(before);
	free(want);
}

/* ---- batches ------------------------------------------------------------------------ */

struct commits {
	int n;
	long ok[8];
};

static void on_commit(void *ud, const struct strata_feed_stats *st)
{
	struct commits *c = ud;
	if (!st->durable) /* a progress display's call between commits */
		return;
	assert_int_equal(st->applied, st->ok);
	assert_true(st->bytes_total > 0 && st->bytes_done <= st->bytes_total);
	if (c->n < 8)
		c->ok[c->n] = st->ok;
	c->n++;
}

/* A file of 5 puts fed with feed_batch b: one commit per b operations and
 * one for the rest, each reporting what is durable; then the documents. */
static void feed_batched(struct app *a, long b, struct commits *c)
{
	struct strata_options o = { .feed_batch = b };
	struct strata *db;
	struct strata_error err = { 0 };
	if (strata_open(a->app, &o, &db, &err) != 0)
		fail_msg("open: %s", err.msg);
	char path[256];
	snprintf(path, sizeof path, "%s/five.jsonl", a->dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	for (int i = 0; i < 5; i++)
		fprintf(f, "{\"put\": \"id:t:item::b%d\", \"fields\": {\"title\": \"t%d\", "
		           "\"price\": %d, \"emb\": [1, 0, 0]}}\n", i, i, i);
	assert_int_equal(fclose(f), 0);
	struct strata_feed_stats st;
	memset(c, 0, sizeof *c);
	assert_int_equal(strata_feed_file_progress(db, path, NULL, on_commit, c, &st, &err), 0);
	assert_int_equal(st.ok, 5);
	for (int i = 0; i < 5; i++) {
		char id[32], *out = NULL;
		snprintf(id, sizeof id, "id:t:item::b%d", i);
		assert_int_equal(strata_get_json(db, id, &out, &err), 0);
		strata_free(out);
	}
	strata_close(db);
}

static void test_feed_batch(void **state)
{
	(void)state;
	struct app a;
	app_make(&a);
	struct strata *db = NULL;
	struct strata_error err = { 0 };
	long bad[] = { -1, STRATA_FEED_BATCH_MAX + 1L };
	for (int i = 0; i < 2; i++) {
		struct strata_options o = { .feed_batch = bad[i] };
		assert_int_equal(strata_open(a.app, &o, &db, &err), STRATA_INVALID_ARGUMENT);
		assert_non_null(strstr(err.msg, "feed_batch"));
		assert_null(db);
	}
	struct commits c;
	feed_batched(&a, 2, &c);
	assert_int_equal(c.n, 3);
	assert_int_equal(c.ok[0], 2);
	assert_int_equal(c.ok[1], 4);
	assert_int_equal(c.ok[2], 5);
	feed_batched(&a, 0, &c); /* the default: all five in one */
	assert_int_equal(c.n, 1);
	assert_int_equal(c.ok[0], 5);
	app_remove(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_log_stale_context),
		cmocka_unit_test(test_log_bad_manifest),
		cmocka_unit_test(test_feed_batch),
		cmocka_unit_test_setup_teardown(test_faults_query, sweep_setup, sweep_teardown),
		cmocka_unit_test_setup_teardown(test_faults_query_model, sweep_setup, sweep_teardown),
		cmocka_unit_test_setup_teardown(test_faults_get, sweep_setup, sweep_teardown),
		cmocka_unit_test_setup_teardown(test_faults_feed, sweep_setup, sweep_teardown),
		cmocka_unit_test_setup_teardown(test_faults_feed_file, sweep_setup, sweep_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
