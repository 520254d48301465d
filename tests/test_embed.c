/*
 * test_embed.c: the library as a program that embeds it sees it.
 *
 * The library never prints: what it has to say beside its results goes to
 * the log callback of struct strata_options, and with none it says nothing
 * at all (standard output and error are captured around the calls that
 * would have something to say: a compiled context gone stale, a damaged
 * manifest).
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_log_stale_context),
		cmocka_unit_test(test_log_bad_manifest),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
