/*
 * fuzz_expr.c: the ranking-expression parser (rank/expr.c and its lexer).
 *
 * The input is the text of one expression (up to its first NUL byte, as
 * rank_expr_parse reads a C string).  A failure must carry its position
 * ("expr:LINE:COL: ...").  An expression that parses is then put into a
 * schema as the body of a profile's function fz, where it must parse again
 * (from memory, then as the application's file).  The application is
 * loaded (the expression typed and compiled against fields of every type,
 * query inputs, constants, functions and a model) and evaluated over
 * made-up documents (harness.c): the first and second phases sum fz, and
 * fz is a match feature, so a tensor result is read cell by cell.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "../../rank/rank_int.h"

static const char head[] =
	"schema fz {\n"
	"  document fz {\n"
	"    field price type double { indexing: attribute }\n"
	"    field count type int { indexing: attribute }\n"
	"    field big type long { indexing: attribute }\n"
	"    field ratio type float { indexing: attribute }\n"
	"    field ok type bool { indexing: attribute }\n"
	"    field title type string { indexing: summary | attribute }\n"
	"    field emb type tensor<float>(x[4]) { indexing: attribute }\n"
	"    field emba type tensor<float>(x[4]) {\n"
	"      indexing: attribute\n"
	"      attribute { distance-metric: angular }\n"
	"    }\n"
	"    field embd type tensor<float>(x[4]) {\n"
	"      indexing: attribute\n"
	"      attribute { distance-metric: dotproduct }\n"
	"    }\n"
	"    field embp type tensor<float>(x[4]) {\n"
	"      indexing: attribute\n"
	"      attribute { distance-metric: prenormalized-angular }\n"
	"    }\n"
	"    field grid type tensor<double>(x[2],y[3]) { indexing: attribute }\n"
	"    field i8 type tensor<int8>(x[4]) { indexing: attribute }\n"
	"    field bf type tensor<bfloat16>(y[3]) { indexing: attribute }\n"
	"    field i32 type tensor<int32>(x[4]) { indexing: attribute }\n"
	"    field i64 type tensor<int64>(y[3]) { indexing: attribute }\n"
	"  }\n"
	"  onnx-model mq {\n"
	"    file: models/m.onnx\n"
	"    input \"x\": query(q)\n"
	"  }\n"
	"  rank-profile base {\n"
	"    inputs {\n"
	"      query(w) double: 0.5\n"
	"      query(q) tensor<float>(x[4])\n"
	"      query(m) tensor<float>(x[4],y[2])\n"
	"      query(qg) tensor(x[2],y[3])\n"
	"    }\n"
	"    constants {\n"
	"      c tensor<float>(x[4]): [1, 2, 3, 4]\n"
	"      k: 2\n"
	"    }\n"
	"    function lin(a, b) { expression: a * attribute(price) + b }\n"
	"    function half() { expression: query(w) / 2 }\n"
	"    function a() { expression: attribute(price) }\n"
	"    function b() { expression: attribute(count) }\n"
	"    function c() { expression: query(w) }\n"
	"    function d() { expression: attribute(ratio) }\n"
	"  }\n"
	"  rank-profile fz inherits base {\n"
	"    function fz() {\n"
	"      expression {\n";
static const char tail[] =
	"\n"
	"      }\n"
	"    }\n"
	"    first-phase { expression: sum(fz) }\n"
	"    second-phase {\n"
	"      rerank-count: 2\n"
	"      expression: firstPhase + sum(onnx(mq).y) + sum(fz)\n"
	"    }\n"
	"    match-features: fz firstPhase\n"
	"  }\n"
	"}\n";

static const char *appdir, *schemas;

/* Parse text (the schema with an expression in it) from memory, write it
 * as the application's schema, load it and rank with it.  fixture: every
 * step must succeed. */
static void load_and_run(const char *text, size_t n, int fixture)
{
	struct strata_error err = { 0 };
	struct rank_sd *sd;
	int rc = rank_sd_parse("fz.sd", text, n, &sd, &err);
	if (rc == 0 && (rc = rank_sd_resolve(sd, &err)) != 0)
		rank_sd_free(sd);
	if (rc == STRATA_PARSE || (rc && fixture))
		fuzz_fail("the expression parses alone, not as a function's body: %s", err.msg);
	if (rc)
		return;
	fuzz_write(schemas, "fz.sd", text, n);
	struct rank_app *app;
	rc = fuzz_rank_load(appdir, NULL, &app, &err);
	if (rc == STRATA_PARSE || (rc && fixture))
		fuzz_fail("the schema parses from memory, not as an application: %s", err.msg);
	if (rc == 0) {
		fuzz_rank_run(app, sd);
		rank_app_free(app);
	}
	rank_sd_free(sd);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	appdir = fuzz_appdir(&schemas);
	/* The fixture itself must load, or every input would test nothing. */
	char text[sizeof head + sizeof tail];
	snprintf(text, sizeof text, "%s0%s", head, tail);
	load_and_run(text, strlen(text), 1);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t live = fuzz_live_bytes();
	size_t len = strnlen((const char *)data, size);
	size_t n = sizeof head - 1 + len + sizeof tail - 1;
	char *text = malloc(n + 1);
	if (!text)
		fuzz_fail("out of memory");
	memcpy(text, head, sizeof head - 1);
	char *expr = text + sizeof head - 1;
	memcpy(expr, data, len);
	expr[len] = 0;

	struct strata_error err = { 0 };
	struct rank_ast *a;
	int rc = rank_expr_parse("expr", expr, &a, &err);
	if (rc == 0) {
		rank_ast_free(a);
		memcpy(expr + len, tail, sizeof tail);
		load_and_run(text, n, 0);
	} else if (rc != STRATA_NOMEM && (err.code != rc || strncmp(err.msg, "expr:", 5) != 0)) {
		fuzz_fail("error %d without its position: \"%s\"", rc, err.msg);
	}
	free(text);
	fuzz_check_live(live, "expr");
	return 0;
}
