/*
 * test_api.c: the parts of strata.h the programs (cli/, serve/) stand on,
 * as any program that embeds the library calls them: deploying and the
 * summary of an application, single models (open, describe, run, profile,
 * compile into contexts), element types, the library's JSON printer, the
 * timeout parser and the kernels' name.
 *
 * Each error path gives its code and a message that says what is wrong
 * (a missing or unreadable model file, an input of the wrong shape or
 * type, an unknown element type, compiling a context again).  A model's
 * open fails cleanly at every allocation (STRATA_NOMEM, nothing held), and
 * a run of a shape already run allocates nothing.  The library's
 * allocation counters (base.h) are the only internals it looks at; the
 * model files come from the test model builder.
 */
#include <errno.h>
#include <math.h>
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
#include <jansson.h>

#include "../include/strata.h"
#include "apptest.h"
#include "modelbuild.h"

/* ---- a model: y[batch,1] = x[batch,3] . w, w = (1, 2, 3) --------------------------------- */

static void write_model(const char *path)
{
	static const float w[3] = { 1, 2, 3 };
	struct mb_model *m = mb_new("lin", 17);
	mb_input(m, "x", BASE_DT_FLOAT, 2, (int64_t[]){ -1, 3 }, (const char *[]){ "batch", "" });
	mb_init(m, "w", BASE_DT_FLOAT, 2, (int64_t[]){ 3, 1 }, w);
	mb_node(m, "MatMul", "x,w", "y");
	mb_output(m, "y", BASE_DT_FLOAT, 2, (int64_t[]){ -1, 1 }, (const char *[]){ "batch", "" });
	if (mb_save(m, path) != 0)
		fail_msg("cannot write %s", path);
	mb_free(m);
}

struct dir {
	char *path;
	char model[512];
};

static int dir_setup(void **state)
{
	struct dir *d = calloc(1, sizeof *d);
	d->path = apptest_new("strata-api-");
	snprintf(d->model, sizeof d->model, "%s/models/lin.onnx", d->path);
	write_model(d->model);
	*state = d;
	return 0;
}

static int dir_teardown(void **state)
{
	struct dir *d = *state;
	apptest_remove(d->path);
	free(d);
	return 0;
}

static uint64_t allocs(void)
{
	struct base_alloc_stats st;
	base_alloc_stats(&st);
	return st.allocs;
}

static uint64_t live(void)
{
	struct base_alloc_stats st;
	base_alloc_stats(&st);
	return st.live_bytes;
}

/* Run m on two rows and check y against x . (1, 2, 3). */
static void run_two_rows(struct strata_model *m)
{
	float x[6] = { 1, 0, 0, 0.5f, 1, 2 };
	struct strata_tensor in[1] = { { "float", 2, { 2, 3 }, x } };
	struct strata_tensor out[1];
	struct strata_error err = { 0 };
	assert_int_equal(strata_model_run(m, in, out, &err), 0);
	assert_string_equal(out[0].dtype, "float");
	assert_int_equal(out[0].rank, 2);
	assert_int_equal(out[0].dims[0], 2);
	assert_int_equal(out[0].dims[1], 1);
	assert_float_equal(((float *)out[0].data)[0], 1.0f, 1e-6);
	assert_float_equal(((float *)out[0].data)[1], 8.5f, 1e-6);
}

/* ---- models ---------------------------------------------------------------------------------- */

static void test_model_describe(void **state)
{
	struct dir *d = *state;
	struct strata_model *m;
	struct strata_error err = { 0 };
	assert_int_equal(strata_model_open(d->model, &m, &err), 0);
	assert_int_equal(strata_model_ninputs(m), 1);
	assert_int_equal(strata_model_noutputs(m), 1);
	struct strata_value_info info;
	assert_int_equal(strata_model_input(m, 0, &info), 0);
	assert_string_equal(info.name, "x");
	assert_string_equal(info.kind, "tensor");
	assert_string_equal(info.dtype, "float");
	assert_int_equal(info.rank, 2);
	assert_int_equal(info.dims[0], -1);
	assert_string_equal(info.dim_names[0], "batch");
	assert_int_equal(info.dims[1], 3);
	assert_string_equal(info.dim_names[1], "");
	assert_int_equal(strata_model_output(m, 0, &info), 0);
	assert_string_equal(info.name, "y");
	/* out of range: NOT_FOUND, info left alone */
	assert_int_equal(strata_model_input(m, 1, &info), STRATA_NOT_FOUND);
	assert_int_equal(strata_model_output(m, -1, &info), STRATA_NOT_FOUND);
	assert_string_equal(info.name, "y");
	assert_int_equal(strata_model_input_index(m, "x"), 0);
	assert_int_equal(strata_model_input_index(m, "nope"), -1);
	assert_int_equal(strata_model_input_index(m, NULL), -1);
	assert_int_equal(strata_model_output_index(m, "y"), 0);
	assert_int_equal(strata_model_output_index(m, "x"), -1);
	strata_model_close(m);
	strata_model_close(NULL);
}

static void test_model_open_errors(void **state)
{
	struct dir *d = *state;
	struct strata_model *m = (struct strata_model *)1;
	struct strata_error err = { 0 };
	char path[600];

	snprintf(path, sizeof path, "%s/models/missing.onnx", d->path);
	assert_int_equal(strata_model_open(path, &m, &err), ENOENT);
	assert_null(m);
	assert_non_null(strstr(err.msg, "missing.onnx"));
	assert_non_null(strstr(err.msg, "No such file"));

	snprintf(path, sizeof path, "%s/models/garbage.onnx", d->path);
	FILE *f = fopen(path, "w");
	fputs("this is not a protobuf\xff\xff\xff", f);
	fclose(f);
	memset(&err, 0, sizeof err);
	assert_int_equal(strata_model_open(path, &m, &err), STRATA_INVALID_PROTOBUF);
	assert_null(m);
	assert_true(err.msg[0] != 0);

	memset(&err, 0, sizeof err);
	assert_int_equal(strata_model_open("", &m, &err), STRATA_INVALID_ARGUMENT);
	assert_non_null(strstr(err.msg, "no model file"));
}

static void test_model_run(void **state)
{
	struct dir *d = *state;
	struct strata_model *m;
	struct strata_error err = { 0 };
	assert_int_equal(strata_model_open(d->model, &m, &err), 0);
	run_two_rows(m);

	/* dtype NULL: the declared type */
	float x[3] = { 1, 1, 1 };
	struct strata_tensor in[1] = { { NULL, 2, { 1, 3 }, x } };
	struct strata_tensor out[1];
	assert_int_equal(strata_model_run(m, in, out, &err), 0);
	assert_float_equal(((float *)out[0].data)[0], 6.0f, 1e-6);

	/* the same shape again: nothing allocated */
	uint64_t before = allocs();
	assert_int_equal(strata_model_run(m, in, out, &err), 0);
	assert_int_equal(allocs(), before);

	/* a wrong fixed dimension, named with what is expected */
	in[0].dims[1] = 4;
	memset(&err, 0, sizeof err);
	assert_int_equal(strata_model_run(m, in, out, &err), STRATA_INVALID_ARGUMENT);
	assert_non_null(strstr(err.msg, "\"x\""));
	assert_non_null(strstr(err.msg, "[batch,3]"));
	/* a wrong rank */
	in[0].dims[1] = 3;
	in[0].rank = 1;
	memset(&err, 0, sizeof err);
	assert_int_equal(strata_model_run(m, in, out, &err), STRATA_INVALID_ARGUMENT);
	assert_non_null(strstr(err.msg, "\"x\""));
	/* another element type than the declared one */
	in[0].rank = 2;
	in[0].dtype = "double";
	memset(&err, 0, sizeof err);
	assert_int_equal(strata_model_run(m, in, out, &err), STRATA_INVALID_ARGUMENT);
	assert_non_null(strstr(err.msg, "\"x\""));
	/* a name that is no element type */
	in[0].dtype = "flaot";
	memset(&err, 0, sizeof err);
	assert_int_equal(strata_model_run(m, in, out, &err), STRATA_INVALID_ARGUMENT);
	assert_non_null(strstr(err.msg, "unknown element type 'flaot'"));
	/* too many dimensions */
	in[0].dtype = "float";
	in[0].rank = STRATA_MAX_RANK + 1;
	memset(&err, 0, sizeof err);
	assert_int_equal(strata_model_run(m, in, out, &err), STRATA_INVALID_ARGUMENT);
	assert_non_null(strstr(err.msg, "rank 9"));
	/* and a good run after the failures */
	run_two_rows(m);
	strata_model_close(m);
}

static void test_model_profile(void **state)
{
	struct dir *d = *state;
	struct strata_model *m;
	struct strata_error err = { 0 };
	assert_int_equal(strata_model_open(d->model, &m, &err), 0);
	struct strata_op_time rows[8];
	assert_int_equal(strata_model_profile_rows(m, rows, 8), 0);
	assert_int_equal(strata_model_profile(m, 1, &err), 0);
	run_two_rows(m);
	run_two_rows(m);
	int n = strata_model_profile_rows(m, rows, 8);
	assert_true(n >= 1);
	/* one node (the MatMul, as the optimizer left it) run twice */
	unsigned long long calls = 0;
	for (int i = 0; i < n && i < 8; i++) {
		assert_true(rows[i].op && rows[i].op[0]);
		assert_true(rows[i].seconds >= 0);
		calls += rows[i].calls;
	}
	assert_int_equal(calls, 2);
	/* a short buffer gets what fits, the count is still the whole */
	assert_int_equal(strata_model_profile_rows(m, rows, 0), n);
	assert_int_equal(strata_model_profile(m, 0, &err), 0);
	assert_int_equal(strata_model_profile_rows(m, rows, 8), 0);
	strata_model_close(m);
}

/* Every allocation of an open may fail: STRATA_NOMEM, and nothing held. */
static void test_model_open_faults(void **state)
{
	struct dir *d = *state;
	long failures = 0;
	for (long n = 1;; n++) {
		if (n > 100000)
			fail_msg("still failing after %ld allocations", n);
		uint64_t held = live();
		struct strata_model *m;
		struct strata_error err = { 0 };
		base_alloc_fail_after(n);
		int rc = strata_model_open(d->model, &m, &err);
		base_alloc_fail_after(0);
		if (rc == 0) {
			run_two_rows(m);
			strata_model_close(m);
			assert_int_equal(live(), held);
			break;
		}
		failures++;
		if (rc != STRATA_NOMEM || !strstr(err.msg, "out of memory"))
			fail_msg("allocation %ld failing: %d (%s)", n, rc, err.msg);
		assert_null(m);
		if (live() != held)
			fail_msg("allocation %ld failing: %lld bytes left behind", n,
			         (long long)(live() - held));
	}
	assert_true(failures > 3);
}

/* ---- compiled contexts ---------------------------------------------------------------------- */

static int exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

static void test_model_compile(void **state)
{
	struct dir *d = *state;
	char out[600];
	snprintf(out, sizeof out, "%s/ctx", d->path);
	assert_int_equal(mkdir(out, 0777), 0);

	char *ctx = strata_context_path(out, d->model);
	char want[700];
	snprintf(want, sizeof want, "%s/lin_ctx.onnx", out);
	assert_string_equal(ctx, want);
	char *beside = strata_context_path(NULL, d->model);
	snprintf(want, sizeof want, "%s/models/lin_ctx.onnx", d->path);
	assert_string_equal(beside, want);
	strata_free(beside);
	char *bin = strata_context_binary(ctx, d->model);
	snprintf(want, sizeof want, "%s/lin_strata.bin", out);
	assert_string_equal(bin, want);

	struct strata_error err = { 0 };
	struct strata_compile_options o = { .context = ctx, .prefix = "api_" };
	assert_int_equal(strata_model_compile(d->model, &o, &err), 0);
	assert_true(exists(ctx));
	assert_true(exists(bin));

	/* the context opens and runs as its source */
	struct strata_model *m;
	assert_int_equal(strata_model_open(ctx, &m, &err), 0);
	run_two_rows(m);
	strata_model_close(m);

	/* a context is compiled already: refused, the message naming it */
	memset(&err, 0, sizeof err);
	assert_int_equal(strata_model_compile(ctx, NULL, &err), STRATA_INVALID_ARGUMENT);
	assert_int_equal(strncmp(err.msg, ctx, strlen(ctx)), 0);
	assert_non_null(strstr(err.msg, "compiled context already"));

	/* a missing model: the errno, the message naming it */
	char missing[600];
	snprintf(missing, sizeof missing, "%s/models/none.onnx", d->path);
	memset(&err, 0, sizeof err);
	assert_int_equal(strata_model_compile(missing, NULL, &err), ENOENT);
	assert_int_equal(strncmp(err.msg, missing, strlen(missing)), 0);

	/* one binary holds the whole context or it is embedded: not both */
	struct strata_compile_options both = { .context = ctx, .embed = 1, .share = 1 };
	memset(&err, 0, sizeof err);
	assert_int_equal(strata_model_compile(d->model, &both, &err), STRATA_INVALID_ARGUMENT);
	struct strata_compile_options bad = { .share = 3 };
	assert_int_equal(strata_model_compile(d->model, &bad, &err), STRATA_INVALID_ARGUMENT);

	/* embedded: no binary file */
	unlink(ctx);
	unlink(bin);
	struct strata_compile_options emb = { .context = ctx, .embed = 1 };
	assert_int_equal(strata_model_compile(d->model, &emb, &err), 0);
	assert_true(exists(ctx));
	assert_false(exists(bin));
	assert_int_equal(strata_model_open(ctx, &m, &err), 0);
	run_two_rows(m);
	strata_model_close(m);
	unlink(ctx);
	rmdir(out);
	strata_free(ctx);
	strata_free(bin);
}

/* ---- element types ------------------------------------------------------------------------ */

static void test_tensor_cells(void **state)
{
	(void)state;
	assert_int_equal(strata_dtype_size("float"), 4);
	assert_int_equal(strata_dtype_size("bfloat16"), 2);
	assert_int_equal(strata_dtype_size("int64"), 8);
	assert_int_equal(strata_dtype_size("bool"), 1);
	assert_int_equal(strata_dtype_size("string"), 0);
	assert_int_equal(strata_dtype_size("flaot"), 0);
	assert_int_equal(strata_dtype_size(NULL), 0);

	uint16_t h[2];
	struct strata_tensor t = { "float16", 1, { 2 }, h };
	double v;
	assert_int_equal(strata_tensor_set(&t, 0, 1.5), 0);
	assert_int_equal(strata_tensor_set(&t, 1, -0.25), 0);
	assert_int_equal(strata_tensor_get(&t, 0, &v), 0);
	assert_true(v == 1.5);
	assert_int_equal(strata_tensor_get(&t, 1, &v), 0);
	assert_true(v == -0.25);
	t.dtype = "bfloat16";
	assert_int_equal(strata_tensor_set(&t, 0, 3.0), 0);
	assert_int_equal(strata_tensor_get(&t, 0, &v), 0);
	assert_true(v == 3.0);
	int8_t b[1];
	struct strata_tensor i8 = { "int8", 0, { 0 }, b };
	assert_int_equal(strata_tensor_set(&i8, 0, -7), 0);
	assert_int_equal(b[0], -7);
	uint8_t flag[1];
	struct strata_tensor bt = { "bool", 0, { 0 }, flag };
	assert_int_equal(strata_tensor_set(&bt, 0, 2.5), 0);
	assert_int_equal(flag[0], 1);

	/* no numbers in strings, nor in an unknown type */
	char *s[1] = { "x" };
	struct strata_tensor st = { "string", 0, { 0 }, s };
	v = 42;
	assert_int_equal(strata_tensor_get(&st, 0, &v), STRATA_INVALID_ARGUMENT);
	assert_true(v == 42);
	assert_int_equal(strata_tensor_set(&st, 0, 1), STRATA_INVALID_ARGUMENT);
	st.dtype = "flaot";
	assert_int_equal(strata_tensor_set(&st, 0, 1), STRATA_INVALID_ARGUMENT);
}

/* ---- JSON ---------------------------------------------------------------------------------- */

static void expect_dump(json_t *j, int flags, const char *want)
{
	char *s = strata_json_dump(j, flags);
	assert_non_null(s);
	assert_string_equal(s, want);
	strata_free(s);
	json_decref(j);
}

static void test_json_dump(void **state)
{
	(void)state;
	/* reals in their shortest form, integral ones with ".0"; order kept */
	expect_dump(json_pack("{s:f, s:f, s:i, s:[i, f], s:s}", "b", 0.1, "a", 3.0, "n", 7, "v", 1,
	                      2.5, "s", "q\"\n"),
	            0, "{\"b\":0.1,\"a\":3.0,\"n\":7,\"v\":[1,2.5],\"s\":\"q\\\"\\n\"}");
	expect_dump(json_pack("{s:[f, f], s:{s:[s]}}", "x", 0.5, 1e-7, "o", "k", "v"),
	            STRATA_JSON_PRETTY,
	            "{\n  \"x\": [0.5, 1e-07],\n  \"o\": {\n    \"k\": [\n      \"v\"\n    ]\n  }\n}");
	expect_dump(json_object(), 0, "{}");
	assert_null(strata_json_dump(NULL, 0));

	/* cells by element type */
	expect_dump(strata_json_number("float", (double)0.1f), 0, "0.1");
	expect_dump(strata_json_number("double", (double)0.1f), 0, "0.10000000149011612");
	expect_dump(strata_json_number("int32", 3.0), 0, "3");
	expect_dump(strata_json_number("int8", -2.0), 0, "-2");
	expect_dump(strata_json_number("float", INFINITY), 0, "null");
	expect_dump(strata_json_number("double", NAN), 0, "null");
	expect_dump(strata_json_number(NULL, 2.0), 0, "2.0");
}

/* ---- requests and the build ------------------------------------------------------------------ */

static void test_timeout_parse(void **state)
{
	(void)state;
	static const struct {
		const char *text;
		double want;
	} good[] = { { "500ms", 0.5 }, { "2 s", 2 }, { "1m", 60 }, { "1.5", 1.5 }, { "0", 0 },
		     { "2s", 2 } };
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		double v = -1;
		assert_int_equal(strata_timeout_parse(good[i].text, &v), 0);
		assert_true(fabs(v - good[i].want) < 1e-12);
	}
	static const char *const bad[] = { "", "abc", "-1", "5h", "1 ms x", "nan", "inf" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		double v = 7;
		if (strata_timeout_parse(bad[i], &v) != STRATA_INVALID_ARGUMENT)
			fail_msg("'%s' accepted", bad[i]);
		assert_true(v == 7);
	}
	double v = 7;
	assert_int_equal(strata_timeout_parse(NULL, &v), STRATA_INVALID_ARGUMENT);
}

static void test_kernels(void **state)
{
	(void)state;
	const char *k = strata_kernels();
	assert_true(!strncmp(k, "avx512, int8: ", 14) || !strncmp(k, "avx2, int8: ", 12));
	assert_ptr_equal(strata_kernels(), k);
}

/* ---- deploying -------------------------------------------------------------------------------- */

static const char *lin_sd =
	"schema lin {\n"
	"    document lin {\n"
	"        field emb type tensor<float>(x[3]) {\n"
	"            indexing: summary | attribute\n"
	"        }\n"
	"    }\n"
	"    rank-profile default {\n"
	"        onnx-model lin {\n"
	"            file: models/lin.onnx\n"
	"            input \"x\": attribute(emb)\n"
	"            output \"y\": out\n"
	"        }\n"
	"        first-phase {\n"
	"            expression: sum(onnx(lin).out)\n"
	"        }\n"
	"    }\n"
	"}\n";

static void test_deploy(void **state)
{
	struct dir *d = *state;
	apptest_write(d->path, "schemas/lin.sd", lin_sd);
	apptest_write(d->path, "schemas/other.sd",
	              "schema other {\n  document other {\n    field t type string {\n"
	              "      indexing: summary\n    }\n  }\n}\n");
	struct strata *db = NULL;
	struct strata_error err = { 0 };

	/* not deployed: refused, and nothing made */
	struct strata_options o = { .must_be_deployed = 1 };
	assert_int_equal(strata_open(d->path, &o, &db, &err), STRATA_NOT_FOUND);
	assert_null(db);
	assert_non_null(strstr(err.msg, "is not deployed"));
	char data[600];
	snprintf(data, sizeof data, "%s/.strata", d->path);
	assert_false(exists(data));

	/* deploy: the store, and the model compiled */
	assert_int_equal(strata_deploy(d->path, &o, &db, &err), 0);
	struct strata_app_info info;
	strata_app_info(db, &info);
	assert_string_equal(info.data_dir, data);
	assert_int_equal(info.ndoctypes, 2);
	assert_int_equal(info.ncompiled, 1);
	assert_string_equal(strata_doctype_name(db, 0), "lin");
	assert_string_equal(strata_doctype_name(db, 1), "other");
	assert_null(strata_doctype_name(db, 2));
	assert_null(strata_doctype_name(db, -1));
	strata_close(db);
	char ctx[700];
	snprintf(ctx, sizeof ctx, "%s/contexts/manifest.json", data);
	assert_true(exists(ctx));

	/* deployed: it opens, compiling nothing */
	assert_int_equal(strata_open(d->path, &o, &db, &err), 0);
	strata_app_info(db, &info);
	assert_int_equal(info.ncompiled, 0);
	assert_int_equal(strata_feed_json(db, "{\"put\": \"id:a:lin::1\", \"fields\": "
	                                      "{\"emb\": [1, 1, 1]}}", &err), 0);
	char *result;
	assert_int_equal(strata_query_json(db, "{\"yql\": \"select * from lin where true\"}",
	                                   &result, &err), 0);
	json_error_t je;
	json_t *j = json_loads(result, 0, &je);
	strata_free(result);
	assert_non_null(j);
	json_t *rel = json_object_get(json_array_get(json_object_get(json_object_get(j, "root"),
	                                                             "children"), 0), "relevance");
	assert_true(fabs(json_number_value(rel) - 6.0) < 1e-6);
	json_decref(j);
	strata_close(db);

	/* a schema that does not parse: its file, line and column */
	apptest_write(d->path, "schemas/other.sd", "schema other {\n  document other {\n  oops\n}\n");
	memset(&err, 0, sizeof err);
	assert_int_equal(strata_deploy(d->path, NULL, &db, &err), STRATA_PARSE);
	assert_null(db);
	assert_non_null(strstr(err.msg, "other.sd:3:"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_model_describe, dir_setup, dir_teardown),
		cmocka_unit_test_setup_teardown(test_model_open_errors, dir_setup, dir_teardown),
		cmocka_unit_test_setup_teardown(test_model_run, dir_setup, dir_teardown),
		cmocka_unit_test_setup_teardown(test_model_profile, dir_setup, dir_teardown),
		cmocka_unit_test_setup_teardown(test_model_open_faults, dir_setup, dir_teardown),
		cmocka_unit_test_setup_teardown(test_model_compile, dir_setup, dir_teardown),
		cmocka_unit_test(test_tensor_cells),
		cmocka_unit_test(test_json_dump),
		cmocka_unit_test(test_timeout_parse),
		cmocka_unit_test(test_kernels),
		cmocka_unit_test_setup_teardown(test_deploy, dir_setup, dir_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
