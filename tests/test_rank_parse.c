/*
 * test_rank_parse.c: the schema language front end (rank/lex.c, expr.c,
 * parse.c, schema.c, type.c): the AST of a full schema, expression
 * precedence, inheritance, error messages with positions, every Vespa sample
 * schema under ../shared/vespa-apps (when present), truncated input and
 * allocation failures.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../rank/rank_syntax.h"

static const char *const FULL =
	"# A shop schema\n"
	"schema product {\n"
	"    document product {\n"
	"        field title type string {\n"
	"            indexing: summary\n"
	"        }\n"
	"        field price type int {\n"
	"            indexing: attribute | summary\n"
	"            attribute: fast-search\n"
	"        }\n"
	"        field embedding type tensor<float>(x[4]) {\n"
	"            indexing: summary | attribute\n"
	"            attribute {\n"
	"                distance-metric: angular\n"
	"            }\n"
	"        }\n"
	"        field grid type tensor(row[2],col[3]) {\n"
	"            indexing: attribute\n"
	"        }\n"
	"        field codes type tensor<int8>(c[8]) { indexing: attribute }\n"
	"    }\n"
	"    onnx-model ranker {\n"
	"        file: models/ranker.onnx\n"
	"        input \"input:0\": attribute(embedding)\n"
	"        input input_ids: my_ids\n"
	"        output \"score\": out\n"
	"    }\n"
	"    rank-profile base {\n"
	"        inputs {\n"
	"            query(q) tensor<float>(x[4])\n"
	"            query(w) double: 0.5\n"
	"            query(b): -2\n"
	"            query(v) tensor(x[2]): [1.5, -3]\n"
	"        }\n"
	"        constants {\n"
	"            m tensor<float>(r[2],c[2]): [[1, 2], [3, 4]]\n"
	"            half: 0.5\n"
	"        }\n"
	"        function boost(a, b) {\n"
	"            expression: a * b +\n"
	"                        1e-3\n"
	"        }\n"
	"        function my_ids() { expression { attribute(codes) } }\n"
	"        first-phase {\n"
	"            expression: closeness(field, embedding) + query(w) * attribute(price)\n"
	"        }\n"
	"        second-phase {\n"
	"            rerank-count: 50\n"
	"            expression: onnx(ranker).score\n"
	"        }\n"
	"        global-phase {\n"
	"            rerank-count: 10\n"
	"            expression: if(firstPhase > .5, sum(map(query(q), f(x)(x * 2))), 0)\n"
	"        }\n"
	"        match-features: attribute(price) firstPhase onnx(ranker).score boost query(q){x:1}\n"
	"        summary-features {\n"
	"            query(w)\n"
	"            constant(half)\n"
	"        }\n"
	"    }\n"
	"}\n";

static struct rank_sd *parse_ok(const char *text)
{
	struct strata_error err = {0};
	struct rank_sd *sd = NULL;
	int rc = rank_sd_parse("t.sd", text, strlen(text), &sd, &err);
	if (rc)
		fail_msg("parse failed (%d): %s", rc, err.msg);
	return sd;
}

static void test_full_schema(void **state)
{
	(void)state;
	struct rank_sd *sd = parse_ok(FULL);
	assert_string_equal(sd->name, "product");
	assert_string_equal(sd->file, "t.sd");
	assert_int_equal(sd->nfields, 5);

	const struct rank_field *f = &sd->fields[0];
	assert_string_equal(f->name, "title");
	assert_int_equal(f->type, RANK_FT_STRING);
	assert_int_equal(f->summary, 1);
	assert_int_equal(f->attribute, 0);
	assert_int_equal(f->line, 4);
	assert_int_equal(f->col, 15);

	assert_int_equal(f->fast_search, 0);

	f = &sd->fields[1];
	assert_int_equal(f->type, RANK_FT_INT);
	assert_int_equal(f->attribute, 1);
	assert_int_equal(f->summary, 1);
	assert_int_equal(f->fast_search, 1); /* attribute: fast-search */

	f = &sd->fields[2];
	assert_int_equal(f->type, RANK_FT_TENSOR);
	assert_int_equal(f->cell, BASE_DT_FLOAT);
	assert_int_equal(f->rank, 1);
	assert_int_equal(f->dims[0], 4);
	assert_string_equal(f->dim_names[0], "x");
	assert_int_equal(f->distance_metric, RANK_DIST_ANGULAR);
	assert_int_equal(f->fast_search, 0);

	f = &sd->fields[3];
	assert_int_equal(f->cell, BASE_DT_DOUBLE); /* tensor(...) means double cells */
	assert_int_equal(f->rank, 2);
	assert_string_equal(f->dim_names[0], "row");
	assert_int_equal(f->dims[1], 3);
	assert_int_equal(f->distance_metric, RANK_DIST_EUCLIDEAN);
	assert_int_equal(f->summary, 0);

	f = &sd->fields[4];
	assert_int_equal(f->cell, BASE_DT_INT8);
	assert_int_equal(f->dims[0], 8);

	/* schema-level onnx-model */
	assert_int_equal(sd->nmodels, 1);
	const struct rank_model_decl *m = &sd->models[0];
	assert_string_equal(m->name, "ranker");
	assert_string_equal(m->file, "models/ranker.onnx");
	assert_int_equal(m->ninputs, 2);
	assert_string_equal(m->inputs[0].name, "input:0");
	assert_int_equal(m->inputs[0].source->kind, RA_CALL);
	assert_string_equal(m->inputs[0].source->text, "attribute(embedding)");
	assert_string_equal(m->inputs[1].name, "input_ids");
	assert_int_equal(m->inputs[1].source->kind, RA_NAME);
	assert_string_equal(m->inputs[1].source->name, "my_ids");
	assert_int_equal(m->noutputs, 1);
	assert_string_equal(m->outputs[0].name, "score");
	assert_string_equal(m->outputs[0].alias, "out");

	assert_int_equal(sd->nprofiles, 1);
	const struct rank_profile_decl *p = &sd->profiles[0];
	assert_string_equal(p->name, "base");
	assert_int_equal(p->ninherits, 0);

	assert_int_equal(p->ninputs, 4);
	assert_string_equal(p->inputs[0].name, "q");
	assert_int_equal(p->inputs[0].type.cell, BASE_DT_FLOAT);
	assert_int_equal(p->inputs[0].type.rank, 1);
	assert_int_equal(p->inputs[0].type.dims[0], 4);
	assert_int_equal(p->inputs[0].has_default, 0);
	assert_int_equal(p->inputs[0].ncells, 4);
	assert_string_equal(p->inputs[1].name, "w");
	assert_int_equal(p->inputs[1].type.rank, 0);
	assert_int_equal(p->inputs[1].has_default, 1);
	assert_true(p->inputs[1].dflt[0] == 0.5);
	assert_int_equal(p->inputs[2].type.cell, BASE_DT_DOUBLE);
	assert_true(p->inputs[2].dflt[0] == -2.0);
	assert_int_equal(p->inputs[3].ncells, 2);
	assert_true(p->inputs[3].dflt[0] == 1.5 && p->inputs[3].dflt[1] == -3.0);
	assert_int_equal(p->inputs[3].pos.line, 33);
	assert_int_equal(p->inputs[3].pos.col, 19);

	assert_int_equal(p->nconstants, 2);
	assert_string_equal(p->constants[0].name, "m");
	assert_int_equal(p->constants[0].ncells, 4);
	for (int i = 0; i < 4; i++)
		assert_true(p->constants[0].cells[i] == i + 1);
	assert_string_equal(p->constants[1].name, "half");
	assert_int_equal(p->constants[1].type.rank, 0);
	assert_true(p->constants[1].cells[0] == 0.5);

	assert_int_equal(p->nfunctions, 2);
	const struct rank_function_decl *fn = &p->functions[0];
	assert_string_equal(fn->name, "boost");
	assert_int_equal(fn->nparams, 2);
	assert_string_equal(fn->params[0], "a");
	assert_string_equal(fn->params[1], "b");
	assert_int_equal(fn->body->kind, RA_BINARY);
	assert_int_equal(fn->body->op, RB_ADD);
	assert_true(fn->body->args[1]->num == 1e-3);
	assert_int_equal(p->functions[1].nparams, 0);
	assert_string_equal(p->functions[1].body->text, "attribute(codes)");

	assert_non_null(p->first_phase);
	assert_string_equal(p->first_phase->text,
	                    "closeness(field, embedding) + query(w) * attribute(price)");
	assert_int_equal(p->first_phase->op, RB_ADD);
	assert_int_equal(p->rerank_count, 50);
	assert_int_equal(p->second_phase->kind, RA_CALL);
	assert_string_equal(p->second_phase->name, "onnx");
	assert_string_equal(p->second_phase->out, "score");
	assert_int_equal(p->second_phase->nargs, 1);
	assert_string_equal(p->second_phase->args[0]->name, "ranker");
	assert_int_equal(p->global_rerank_count, 10);
	const struct rank_ast *g = p->global_phase;
	assert_string_equal(g->name, "if");
	assert_int_equal(g->nargs, 3);
	assert_int_equal(g->args[0]->op, RB_GT);
	assert_true(g->args[0]->args[1]->num == 0.5);
	const struct rank_ast *mp = g->args[1]->args[0];
	assert_string_equal(mp->name, "map");
	assert_int_equal(mp->args[1]->kind, RA_LAMBDA);
	assert_int_equal(mp->args[1]->nparams, 1);
	assert_string_equal(mp->args[1]->params[0], "x");
	assert_int_equal(mp->args[1]->args[0]->op, RB_MUL);

	assert_int_equal(p->nmatch_features, 5);
	assert_string_equal(p->match_features[0]->text, "attribute(price)");
	assert_string_equal(p->match_features[1]->text, "firstPhase");
	assert_string_equal(p->match_features[2]->text, "onnx(ranker).score");
	assert_string_equal(p->match_features[3]->text, "boost");
	assert_string_equal(p->match_features[4]->text, "query(q){x:1}");
	assert_int_equal(p->nsummary_features, 2);
	assert_string_equal(p->summary_features[1]->text, "constant(half)");

	assert_int_equal(rank_sd_resolve(sd, NULL), 0);
	assert_int_equal(sd->nprofiles, 2);
	assert_string_equal(sd->profiles[1].name, "default");
	assert_null(sd->profiles[1].first_phase);
	assert_int_equal(sd->profiles[1].rerank_count, -1);
	rank_sd_free(sd);
}

/* ---- expressions ---------------------------------------------------------------- */

static const char *opname(int op)
{
	static const char *const names[] = {"?", "+", "-", "*", "/", "%", "^", "==", "!=",
	                                    "<", "<=", ">", ">=", "&&", "||"};
	return op > 0 && op <= RB_OR ? names[op] : "?";
}

/* The tree as an s-expression. */
static void sexpr(const struct rank_ast *a, char *buf, size_t n)
{
	size_t at = strlen(buf);
	switch (a->kind) {
	case RA_NUM:
		snprintf(buf + at, n - at, "%g", a->num);
		return;
	case RA_STR:
		snprintf(buf + at, n - at, "\"%s\"", a->name);
		return;
	case RA_NAME:
		snprintf(buf + at, n - at, "%s", a->name);
		return;
	case RA_UNARY:
		snprintf(buf + at, n - at, "(%c ", a->op);
		break;
	case RA_BINARY:
		snprintf(buf + at, n - at, "(%s ", opname(a->op));
		break;
	case RA_CALL:
		snprintf(buf + at, n - at, "(%s%s%s ", a->name, a->out ? "." : "", a->out ? a->out : "");
		break;
	case RA_LAMBDA:
		snprintf(buf + at, n - at, "(lambda");
		for (int i = 0; i < a->nparams; i++) {
			at = strlen(buf);
			snprintf(buf + at, n - at, " %s", a->params[i]);
		}
		at = strlen(buf);
		snprintf(buf + at, n - at, ": ");
		break;
	}
	for (int i = 0; i < a->nargs; i++) {
		if (i) {
			at = strlen(buf);
			snprintf(buf + at, n - at, " ");
		}
		sexpr(a->args[i], buf, n);
	}
	at = strlen(buf);
	snprintf(buf + at, n - at, ")");
}

static void check_expr(const char *text, const char *want)
{
	struct rank_ast *a = NULL;
	struct strata_error err = {0};
	int rc = rank_expr_parse("e", text, &a, &err);
	if (rc)
		fail_msg("'%s': %s", text, err.msg);
	char buf[512] = "";
	sexpr(a, buf, sizeof buf);
	if (strcmp(buf, want) != 0)
		fail_msg("'%s' parsed as %s, expected %s", text, buf, want);
	rank_ast_free(a);
}

/* attribute: fast-search, in both forms, is recorded on the field; the
 * other attribute settings and a struct-field's fast-search are not it. */
static void test_fast_search(void **state)
{
	(void)state;
	struct rank_sd *sd = parse_ok(
		"schema s {\n"
		"    document s {\n"
		"        struct pair { field a type int {} }\n"
		"        field name type string {\n"
		"            indexing: attribute | summary\n"
		"            attribute { fast-access\n fast-search }\n"
		"        }\n"
		"        field year type long {\n"
		"            indexing: attribute\n"
		"            attribute: fast-access\n"
		"        }\n"
		"        field ratio type double {\n"
		"            indexing: attribute\n"
		"            attribute: fast-search\n"
		"            attribute: paged\n"
		"        }\n"
		"        field p type pair {\n"
		"            struct-field a { indexing: attribute\n attribute: fast-search }\n"
		"        }\n"
		"    }\n"
		"}\n");
	assert_int_equal(sd->nfields, 4);
	assert_string_equal(sd->fields[0].name, "name");
	assert_int_equal(sd->fields[0].fast_search, 1);
	assert_int_equal(sd->fields[1].fast_search, 0);
	assert_int_equal(sd->fields[2].fast_search, 1);
	assert_int_equal(sd->fields[3].fast_search, 0);
	rank_sd_free(sd);
}

static void test_precedence(void **state)
{
	(void)state;
	check_expr("1 + 2 * 3", "(+ 1 (* 2 3))");
	check_expr("1 - 2 - 3", "(- (- 1 2) 3)");
	check_expr("8 / 4 / 2", "(/ (/ 8 4) 2)");
	check_expr("2 ^ 3 ^ 2", "(^ 2 (^ 3 2))");
	check_expr("a * b ^ c", "(* a (^ b c))");
	check_expr("-a ^ 2", "(- (^ a 2))");
	check_expr("2 ^ -1", "(^ 2 (- 1))");
	check_expr("a % b * c", "(* (% a b) c)");
	check_expr("a + b < c * d", "(< (+ a b) (* c d))");
	check_expr("a < b == c", "(== (< a b) c)");
	check_expr("a || b && c", "(|| a (&& b c))");
	check_expr("a && b || c && d", "(|| (&& a b) (&& c d))");
	check_expr("!a && b", "(&& (! a) b)");
	check_expr("(1 + 2) * 3", "(* (+ 1 2) 3)");
	check_expr("- - 1", "(- (- 1))");
	check_expr("a >= 1 != b <= 2", "(<= (!= (>= a 1) b) 2)");
	check_expr(".5 + 1e-3 + 2.5E2", "(+ (+ 0.5 0.001) 250)");
	check_expr("if(a > 1, b, c)", "(if (> a 1) b c)");
	check_expr("onnx(m).score * 2", "(* (onnx.score m) 2)");
	check_expr("fieldMatch(title).proximity", "(fieldMatch.proximity title)");
	check_expr("reduce(join(a, b, f(x,y)(x*y)), sum, d)",
	           "(reduce (join a b (lambda x y: (* x y))) sum d)");
	check_expr("foo()", "(foo )");
	check_expr("lightgbm(\"m.json\")", "(lightgbm \"m.json\")");
	check_expr("a\n  +\n b # comment\n", "(+ a b)");

	/* Positions and texts of the nodes. */
	struct rank_ast *a = NULL;
	assert_int_equal(rank_expr_parse("e", "attribute(x) +\n  2 * query(q)", &a, NULL), 0);
	assert_string_equal(a->text, "attribute(x) +\n  2 * query(q)");
	assert_int_equal(a->pos.line, 1);
	assert_int_equal(a->pos.col, 14); /* the operator */
	assert_string_equal(a->args[1]->text, "2 * query(q)");
	assert_int_equal(a->args[1]->args[1]->pos.line, 2);
	assert_int_equal(a->args[1]->args[1]->pos.col, 7);
	assert_string_equal(a->args[1]->args[1]->text, "query(q)");
	assert_string_equal(a->pos.file, "e");
	rank_ast_free(a);
}

static void expr_error(const char *text, int code, const char *msg)
{
	struct rank_ast *a = (struct rank_ast *)1;
	struct strata_error err = {0};
	int rc = rank_expr_parse("e", text, &a, &err);
	if (rc != code || strcmp(err.msg, msg) != 0)
		fail_msg("'%s': got %d '%s', expected %d '%s'", text, rc, err.msg, code, msg);
	assert_null(a);
}

static void test_expr_errors(void **state)
{
	(void)state;
	expr_error("1 +", STRATA_PARSE, "e:1:4: expected an expression, found end of file");
	expr_error("(1 + 2", STRATA_PARSE, "e:1:7: expected ')' closing the '(' at 1:1, found end of file");
	expr_error("f(a, 1)(a)", STRATA_PARSE, "e:1:6: a lambda parameter must be a name, found '1'");
	expr_error("max(a b)", STRATA_PARSE,
	           "e:1:7: expected ',' or ')' in the arguments of 'max', found 'b'");
	expr_error("a b", STRATA_PARSE, "e:1:3: unexpected 'b' after the expression");
	expr_error("a in [1, b]", STRATA_NOT_IMPLEMENTED,
	           "e:1:10: only numbers are supported in the list of 'in', found 'b'");
	expr_error("a in 1", STRATA_PARSE, "e:1:6: expected '[' after 'in', found '1'");
	expr_error("attribute(t){d:1", STRATA_PARSE,
	           "e:1:17: expected ',' or '}' in a slice, found end of file");
	expr_error("attribute(t)[1", STRATA_PARSE,
	           "e:1:15: expected ']' closing the index, found end of file");
	expr_error("tensor(x[2]):[1,2", STRATA_PARSE,
	           "e:1:18: expected ',' or ']' in a tensor literal, found end of file");
	expr_error("tensor(x[2]) 3", STRATA_PARSE,
	           "e:1:14: expected ':' (a literal) or '(' (a generator) after tensor(x[2]), "
	           "found '3'");
	expr_error("tensor(x{},y[2]):{{x:a}:1}", STRATA_TYPE,
	           "e:1:19: a cell address of tensor(x{},y[2]) names 1 dimension, not 2");
	expr_error("tensor(x{},y{}):{a:1}", STRATA_TYPE,
	           "e:1:18: the short form {label: ...} needs one mapped dimension, "
	           "tensor(x{},y{}) has 2");
	expr_error("tensor(x{}):{{x:(}:1}", STRATA_PARSE, "e:1:17: expected a label, found '('");
	expr_error("tensor(x[2])(x", STRATA_PARSE,
	           "e:1:15: expected ')' closing the tensor generator, found end of file");
	expr_error("\"abc", STRATA_PARSE, "e:1:1: unterminated string '\"abc'");
	expr_error("1 $ 2", STRATA_PARSE, "e:1:3: unexpected '$' after the expression");
	expr_error("rename(t, (d0, 1), (a, b))", STRATA_PARSE,
	           "e:1:16: expected a dimension name, found '1'");
	expr_error("1e999", STRATA_PARSE, "e:1:1: number '1e999' is out of range");

	/* Deep nesting fails cleanly instead of exhausting the stack. */
	char deep[4001];
	memset(deep, '(', 4000);
	deep[4000] = 0;
	struct rank_ast *a = NULL;
	struct strata_error err;
	assert_int_equal(rank_expr_parse("e", deep, &a, &err), STRATA_LIMIT);
	memset(deep, '-', 4000);
	assert_int_equal(rank_expr_parse("e", deep, &a, &err), STRATA_LIMIT);
}

/* ---- types --------------------------------------------------------------------------- */

static void test_types(void **state)
{
	(void)state;
	struct rank_type t;
	char buf[128];
	assert_int_equal(rank_type_parse("tensor<float>(x[3],y[2])", &t), 0);
	assert_int_equal(t.cell, BASE_DT_FLOAT);
	assert_int_equal(t.rank, 2);
	assert_int_equal(rank_type_cells(&t), 6);
	assert_string_equal(rank_type_str(&t, buf, sizeof buf), "tensor<float>(x[3],y[2])");
	rank_type_clear(&t);
	assert_int_equal(rank_type_parse("tensor(d0[384])", &t), 0);
	assert_int_equal(t.cell, BASE_DT_DOUBLE);
	assert_string_equal(rank_type_str(&t, buf, sizeof buf), "tensor(d0[384])");
	rank_type_clear(&t);
	assert_int_equal(rank_type_parse("double", &t), 0);
	assert_int_equal(t.rank, 0);
	assert_int_equal(rank_type_cells(&t), 1);
	assert_string_equal(rank_type_str(&t, buf, sizeof buf), "double");
	assert_int_equal(rank_type_parse("tensor<bfloat16>(x[2])", &t), 0);
	assert_int_equal(t.cell, BASE_DT_BFLOAT16);
	rank_type_clear(&t);
	assert_int_equal(rank_type_parse("tensor<int64>(x[2])", &t), 0);
	assert_int_equal(t.cell, BASE_DT_INT64);
	rank_type_clear(&t);
	assert_int_equal(rank_type_parse("tensor<int32>(a[1],b[1],c[1])", &t), 0);
	assert_int_equal(t.cell, BASE_DT_INT32);
	struct rank_type c;
	assert_int_equal(rank_type_copy(&c, &t), 0);
	assert_string_equal(c.dim_names[2], "c");
	rank_type_clear(&c);
	rank_type_clear(&t);
	assert_int_equal(rank_type_parse("tensor<half>(x[2])", &t), STRATA_PARSE);
	assert_int_equal(rank_type_parse("tensor(x{})", &t), STRATA_PARSE);
	assert_int_equal(rank_type_parse("tensor(x[0])", &t), STRATA_PARSE);
	assert_int_equal(rank_type_parse("tensor(x[2],x[3])", &t), STRATA_PARSE);
	assert_int_equal(rank_type_parse("tensor(x[2]) junk", &t), STRATA_PARSE);
	assert_int_equal(rank_type_parse("tensor(x[2]", &t), STRATA_PARSE);
	assert_int_equal(rank_type_parse("tensor(x[99999],y[99999],z[999])", &t), STRATA_PARSE);
}

/* ---- inheritance ------------------------------------------------------------------------ */

static const struct rank_profile_decl *profile(const struct rank_sd *sd, const char *name)
{
	for (int i = 0; i < sd->nprofiles; i++)
		if (strcmp(sd->profiles[i].name, name) == 0)
			return &sd->profiles[i];
	fail_msg("no profile %s", name);
	return NULL;
}

static const struct rank_function_decl *function(const struct rank_profile_decl *p, const char *name)
{
	for (int i = 0; i < p->nfunctions; i++)
		if (strcmp(p->functions[i].name, name) == 0)
			return &p->functions[i];
	return NULL;
}

/* child is declared before its parents; b overrides a where both define. */
static const char *const INHERIT =
	"schema s { document s { }\n"
	"  rank-profile child inherits a, b {\n"
	"    function g() { expression: 30 }\n"
	"    second-phase { expression: g }\n"
	"  }\n"
	"  rank-profile a {\n"
	"    inputs { query(q) tensor(x[2]) query(w): 1 }\n"
	"    constants { c: 1 }\n"
	"    function f() { expression: 1 }\n"
	"    function g() { expression: 2 }\n"
	"    first-phase { expression: f }\n"
	"    second-phase { rerank-count: 7 expression: 5 }\n"
	"    match-features: f g\n"
	"  }\n"
	"  rank-profile b inherits default {\n"
	"    inputs { query(w): 2 }\n"
	"    function f() { expression: 10 }\n"
	"    first-phase { expression: f + 1 }\n"
	"  }\n"
	"  rank-profile grand inherits child { }\n"
	"}\n";

static void test_inheritance(void **state)
{
	(void)state;
	struct rank_sd *sd = parse_ok(INHERIT);
	struct strata_error err = {0};
	assert_int_equal(rank_sd_resolve(sd, &err), 0);
	assert_int_equal(rank_sd_resolve(sd, &err), 0); /* once only */
	assert_int_equal(sd->nprofiles, 5);
	for (int k = 0; k < 2; k++) {
		const struct rank_profile_decl *c = profile(sd, k ? "grand" : "child");
		assert_int_equal(c->nfunctions, 2);
		assert_true(function(c, "f")->body->num == 10);   /* b wins over a */
		assert_true(function(c, "g")->body->num == 30);   /* own wins */
		assert_string_equal(c->first_phase->text, "f + 1"); /* last parent */
		assert_string_equal(c->second_phase->text, "g");   /* own */
		assert_int_equal(c->rerank_count, 7);               /* from a */
		assert_int_equal(c->ninputs, 2);
		assert_string_equal(c->inputs[0].name, "q");
		assert_int_equal(c->inputs[0].ncells, 2);
		assert_true(c->inputs[1].dflt[0] == 2);
		assert_int_equal(c->nconstants, 1);
		assert_int_equal(c->nmatch_features, 2);
		assert_string_equal(c->match_features[1]->text, "g");
	}
	/* Parents are untouched by their children. */
	assert_true(function(profile(sd, "a"), "f")->body->num == 1);
	assert_int_equal(profile(sd, "b")->nfunctions, 1);
	rank_sd_free(sd);
	/* "match-features:" with nothing after it on its line declares none;
	 * the next line is the profile's next item. */
	sd = parse_ok("schema s { document s { }\n"
	              "rank-profile p inherits a {\n"
	              "  match-features: \n"
	              "  inputs { query(z) tensor(x[2]) }\n"
	              "}\n"
	              "rank-profile a { match-features: f\n"
	              "  function f() { expression: 1 } }\n}\n");
	const struct rank_profile_decl *pl = profile(sd, "p");
	assert_int_equal(pl->nmatch_features, 0);
	assert_int_equal(pl->ninputs, 1);
	assert_int_equal(profile(sd, "a")->nmatch_features, 1);
	rank_sd_free(sd);

	sd = parse_ok("schema s { document s { }\n"
	              "rank-profile x inherits y { }\n"
	              "rank-profile y inherits z { }\n"
	              "rank-profile z inherits x { }\n}\n");
	assert_int_equal(rank_sd_resolve(sd, &err), STRATA_TYPE);
	assert_non_null(strstr(err.msg, "inheritance cycle"));
	assert_int_equal(strncmp(err.msg, "t.sd:4:25: rank-profile 'z' inherits 'x'", 40), 0);
	rank_sd_free(sd);

	sd = parse_ok("schema s { document s { }\n"
	              "  rank-profile x inherits default,\n"
	              "      nope { }\n}\n");
	assert_int_equal(rank_sd_resolve(sd, &err), STRATA_TYPE);
	assert_string_equal(err.msg, "t.sd:3:7: rank-profile 'x' inherits 'nope', which is not defined");
	rank_sd_free(sd);

	/* Redefining the built-in default profile is no cycle. */
	sd = parse_ok("schema s { document s { }\n"
	              "rank-profile default inherits default { first-phase { expression: 1 } }\n"
	              "rank-profile x inherits default { } }");
	assert_int_equal(rank_sd_resolve(sd, &err), 0);
	assert_int_equal(sd->nprofiles, 2);
	assert_true(profile(sd, "x")->first_phase->num == 1);
	rank_sd_free(sd);

	sd = parse_ok("schema s { document s { } rank-profile self inherits self { } }");
	assert_int_equal(rank_sd_resolve(sd, &err), STRATA_TYPE);
	rank_sd_free(sd);
}

/* ---- errors ------------------------------------------------------------------------------- */

struct bad {
	const char *text;
	int code;
	const char *msg;
};

static const struct bad bads[] = {
	{"", STRATA_PARSE, "t.sd:1:1: expected 'schema', found end of file"},
	{"schema s {\n  document t { }\n}", STRATA_TYPE,
	 "t.sd:2:12: document 't' must have the schema's name 's'"},
	{"schema s {\n  document s {\n    field a type int { }\n    field a type long { }\n  }\n}",
	 STRATA_TYPE, "t.sd:4:11: field 'a' is declared twice (first at 3:11)"},
	{"schema s { document s { field v type tensor<half>(x[3]) { } } }", STRATA_TYPE,
	 "t.sd:1:45: unknown tensor cell type 'half' (expected float, double, int8, bfloat16, int32 or int64)"},
	{"schema s { document s {\n field v type tensor<float>(cat{]) { } } }", STRATA_PARSE,
	 "t.sd:2:33: expected '}' in tensor type, found ']'"},
	{"schema s { document s {\n field t type string {\n   indexing: summary | index\n   match: suffix } } }",
	 STRATA_NOT_IMPLEMENTED, "t.sd:4:11: match: 'suffix' is not supported"},
	{"schema s { document s { field t type string { indexing: input x | chunk words | summary } } }",
	 STRATA_NOT_IMPLEMENTED,
	 "t.sd:1:73: chunker 'words' is not supported (fixed-length and sentence are)"},
	{"schema s { document s { }\n field b type string { indexing: input a . | summary } }",
	 STRATA_PARSE, "t.sd:2:44: expected an indexing expression, found '|'"},
	{"schema s { document s { field t type string { indexing: tokenize | attribute } } }",
	 STRATA_NOT_IMPLEMENTED, "t.sd:1:57: indexing expression 'tokenize' is not supported"},
	{"schema s { document s { field v type tensor(x[2]) {\n attribute { distance-metric: cosine } } } }",
	 STRATA_TYPE, "t.sd:2:31: unknown distance-metric 'cosine'"},
	{"schema s { document s { field a type array<tensor(x[2])> { } } }", STRATA_NOT_IMPLEMENTED,
	 "t.sd:1:44: 'tensor' inside a collection or struct is not supported"},
	{"schema s { document s { field a type weightedset<double> { } } }", STRATA_TYPE,
	 "t.sd:1:50: a weightedset holds string, int or long keys"},
	{"schema s { document s { field a type map<array<int>, int> { } } }", STRATA_TYPE,
	 "t.sd:1:42: a map's keys must be of a simple type"},
	{"schema s { document s { field a type int { weightedset: remove-if-zero } } }", STRATA_TYPE,
	 "t.sd:1:44: field 'a' is not a weightedset"},
	{"schema s { document s { field a type 3 { } } }", STRATA_PARSE,
	 "t.sd:1:38: expected a field type, found '3'"},
	{"schema s { document s { }\n  fieldset default { fields: a }\n}", STRATA_TYPE,
	 "t.sd:2:12: fieldset 'default' names field 'a', which is not declared"},
	{"schema s { document s { struct x { field a type int { } field a type int { } } } }",
	 STRATA_TYPE, "t.sd:1:63: struct 'x' has field 'a' twice"},
	{"schema s { document s { }\n  document-summary d { summary a { positions } } }",
	 STRATA_NOT_IMPLEMENTED, "t.sd:2:36: summary setting 'positions' is not supported"},
	{"schema s { document s { field a type string {\n summary: attribute } } }",
	 STRATA_NOT_IMPLEMENTED, "t.sd:2:11: summary setting 'attribute' is not supported"},
	{"schema s { document s { }\n  rank-profile p { }\n  rank-profile p { }\n}", STRATA_TYPE,
	 "t.sd:3:16: rank-profile 'p' is declared twice (first at 2:16)"},
	{"schema s { document s { }\n rank-profile p {\n  function f() { expression: 1 }\n"
	 "  function f() { expression: 2 }\n }\n}",
	 STRATA_TYPE, "t.sd:4:12: function 'f' is defined twice in rank-profile 'p'"},
	{"schema s { document s { }\n rank-profile p {\n  inputs {\n   query(q) double\n   query(q): 1\n  }\n }\n}",
	 STRATA_TYPE, "t.sd:5:10: input 'q' is declared twice"},
	{"schema s { document s { }\n rank-profile p {\n  inputs {\n   query(q) tensor(cat{}): 1\n  }\n }\n}",
	 STRATA_NOT_IMPLEMENTED,
	 "t.sd:4:26: default values of query inputs with mapped dimensions are not supported"},
	{"schema s { document s { } rank-profile p { constants {\n c tensor(cat{}): 1 } } }",
	 STRATA_PARSE, "t.sd:2:19: expected '{' to begin a value with mapped dimensions, found '1'"},
	{"schema s { document s { } rank-profile p { constants {\n c tensor(cat{}): {a: 1, {cat: b}: x} } } }",
	 STRATA_PARSE, "t.sd:2:36: expected a number, found 'x'"},
	{"schema s { document s { } rank-profile p { constants {\n c tensor(cat{}): {{dog: b}: 2} } } }",
	 STRATA_TYPE, "t.sd:2:21: 'dog' is not a dimension of the type, or is given twice"},
	{"schema s { document s { }\n constant c { type: tensor(x{}) } }",
	 STRATA_TYPE, "t.sd:2:2: constant c needs both 'file:' and 'type:'"},
	{"schema s { document s { }\n constant c { file: a.json type: tensor(x{}) uri: u } }",
	 STRATA_NOT_IMPLEMENTED, "t.sd:2:46: constants read from a uri are not supported"},
	{"schema s { document s { } rank-profile p {\n second-phase { rerank-count: 0 } } }", STRATA_TYPE,
	 "t.sd:2:31: rerank-count must be a positive integer, found '0'"},
	{"schema s { document s { } rank-profile p {\n second-phase { rerank-count: 2.5 } } }", STRATA_TYPE,
	 "t.sd:2:31: rerank-count must be a positive integer, found '2.5'"},
	{"schema s { document s { } rank-profile p {\n second-phase { rerank-count: -4 } } }", STRATA_TYPE,
	 "t.sd:2:31: rerank-count must be a positive integer"},
	{"schema s { document s { } rank-profile p {\n first-phase { expression: 1 + } } }", STRATA_PARSE,
	 "t.sd:2:32: expected an expression, found '}'"},
	{"schema s { document s { } rank-profile p {\n first-phase { expresion: 1 } } }", STRATA_PARSE,
	 "t.sd:2:16: expected 'expression', 'rank-score-drop-limit' or '}' in first-phase, found 'expresion'"},
	{"schema s { document s { } rank-profile p {\n first-phase { expression: 1 }\n first-phase { expression: 2 } } }",
	 STRATA_TYPE, "t.sd:3:2: 'first-phase' is given twice in rank-profile 'p'"},
	{"schema s { document s { } rank-profile p {\n constants { v tensor(x[3]): [1, 2] } } }", STRATA_TYPE,
	 "t.sd:2:30: the value has 2 cells, its type 3"},
	{"schema s { document s { } rank-profile p {\n constants { v tensor(x[3]): 4 } } }", STRATA_TYPE,
	 "t.sd:2:30: a tensor value must be a '[...]' list, found '4'"},
	{"schema s { document s { } rank-profile p {\n rank-properties { a: 1 } } }", STRATA_NOT_IMPLEMENTED,
	 "t.sd:2:20: rank property 'a' is not supported: only query(name) and $name, a query input's "
	 "default, bm25(field).k1, .b and .averageFieldLength, and freshness(f).maxAge and .halfResponse are"},
	{"schema s { document s { } rank-profile p {\n summary-features:\n  f g } }", STRATA_PARSE,
	 "t.sd:3:3: unexpected 'f' in rank-profile 'p'"},
	{"schema s { document s { } rank-profile p { bogus } }", STRATA_PARSE,
	 "t.sd:1:44: unexpected 'bogus' in rank-profile 'p'"},
	{"schema s { document s { } onnx-model m { input a: query(q) } }", STRATA_TYPE,
	 "t.sd:1:38: onnx-model 'm' has no 'file:'"},
	{"schema s {\n  document s {\n    field a type int {\n", STRATA_PARSE,
	 "t.sd:4:1: field 'a' is not closed: expected '}', found end of file"},
	{"schema s { document s { } } extra", STRATA_PARSE,
	 "t.sd:1:29: unexpected 'extra' after the end of schema 's'"},
	{"schema s { document s { field a type int { indexing: attribute } } }\n\x01", STRATA_PARSE,
	 "t.sd:2:1: unexpected byte 0x01 after the end of schema 's'"},
	{"schema s inherits { }", STRATA_PARSE, "t.sd:1:19: expected a schema name, found '{'"},
	{"schema s { document s { field f type string { indexing: summary\n alias: word } } }",
	 STRATA_NOT_IMPLEMENTED, "t.sd:2:2: field setting 'alias' is not supported"},
	{"schema s { document s { } rank-profile p { first-phase { expression: file:x.expr } } }",
	 STRATA_NOT_IMPLEMENTED, "t.sd:1:70: expressions read from files are not supported"},
	/* a block cut short by the end of the file is reported at its keyword */
	{"schema s { document s { field f type int {\n sorting { descending", STRATA_PARSE,
	 "t.sd:2:2: the block of 'sorting' is never closed"},
	{"schema s { document s { field e type tensor<float>(x[2]) {\n index { hnsw {", STRATA_PARSE,
	 "t.sd:2:10: the block of 'hnsw' is never closed"},
	{"schema s { document s { field e type tensor<float>(x[2]) {\n index { hnsw {\n"
	 " max-links-per-node: 1.5 } } } } }", STRATA_TYPE,
	 "t.sd:3:22: 'max-links-per-node' must be a whole number from 2 to 256, found '1.5'"},
};

static void test_errors(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof bads / sizeof bads[0]; i++) {
		struct rank_sd *sd = (struct rank_sd *)1;
		struct strata_error err = {0};
		int rc = rank_sd_parse("t.sd", bads[i].text, strlen(bads[i].text), &sd, &err);
		if (rc != bads[i].code || strcmp(err.msg, bads[i].msg) != 0)
			fail_msg("case %zu: got %d '%s'\n  expected %d '%s'", i, rc, err.msg, bads[i].code,
			         bads[i].msg);
		assert_int_equal(err.code, rc);
		assert_null(sd);
	}
}

/* ---- robustness ------------------------------------------------------------------------------ */

/* A message about file must start with "file:LINE:COL: ". */
static int has_position(const char *msg, const char *file)
{
	size_t n = strlen(file);
	if (strncmp(msg, file, n) != 0 || msg[n] != ':')
		return 0;
	const char *s = msg + n + 1;
	for (int k = 0; k < 2; k++) {
		if (*s < '0' || *s > '9')
			return 0;
		while (*s >= '0' && *s <= '9')
			s++;
		if (*s++ != ':')
			return 0;
	}
	return *s == ' ';
}

/* Parse every prefix of text (every step-th length): each must parse or fail
 * with a positioned message, never crash or leak. */
static void truncations(const char *file, const char *text, size_t len, size_t step)
{
	struct base_alloc_stats before, after;
	base_alloc_stats(&before);
	for (size_t n = 0; n < len; n += step) {
		struct rank_sd *sd = NULL;
		struct strata_error err = {0};
		int rc = rank_sd_parse(file, text, n, &sd, &err);
		if (rc == 0) {
			rank_sd_resolve(sd, &err);
			rank_sd_free(sd);
		} else if (rc != STRATA_NOMEM && !has_position(err.msg, file)) {
			fail_msg("%s cut at %zu: message without position: %s", file, n, err.msg);
		}
	}
	base_alloc_stats(&after);
	assert_int_equal(after.live_bytes, before.live_bytes);
}

static void test_truncations(void **state)
{
	(void)state;
	truncations("full.sd", FULL, strlen(FULL), 1);
}

static void alloc_failures(const char *text)
{
	struct base_alloc_stats before, after;
	base_alloc_stats(&before);
	int failures = 0;
	for (long k = 1; k < 100000; k++) {
		struct rank_sd *sd = NULL;
		struct strata_error err = {0};
		base_alloc_fail_after(k);
		int rc = rank_sd_parse("t.sd", text, strlen(text), &sd, &err);
		if (rc == 0)
			rc = rank_sd_resolve(sd, &err);
		base_alloc_fail_after(0);
		rank_sd_free(sd);
		if (rc == 0)
			break; /* k passed the last allocation */
		assert_int_equal(rc, STRATA_NOMEM);
		if (strncmp(err.msg, "out of memory: ", 15) != 0)
			fail_msg("allocation %ld: %s", k, err.msg);
		failures++;
	}
	assert_true(failures > 50);
	base_alloc_stats(&after);
	assert_int_equal(after.live_bytes, before.live_bytes);
}

static void test_alloc_failures(void **state)
{
	(void)state;
	alloc_failures(FULL);
	alloc_failures(INHERIT);
}

/* ---- the Vespa sample applications ----------------------------------------------------------- */

#define CORPUS "/work/shared/vespa-apps"

struct corpus {
	int files, parsed, refused, cuts;
};

static void corpus_file(const char *path, struct corpus *c)
{
	FILE *fp = fopen(path, "rb");
	assert_non_null(fp);
	static char text[1 << 20];
	size_t n = fread(text, 1, sizeof text - 1, fp);
	fclose(fp);
	text[n] = 0;
	c->files++;
	struct rank_sd *sd = NULL;
	struct strata_error err = {0};
	int rc = rank_sd_parse(path, text, n, &sd, &err);
	if (rc == 0)
		rc = rank_sd_resolve(sd, &err);
	rank_sd_free(sd);
	if (rc == 0) {
		c->parsed++;
	} else {
		c->refused++;
		assert_true(rc == STRATA_PARSE || rc == STRATA_TYPE || rc == STRATA_NOT_IMPLEMENTED);
		if (!has_position(err.msg, path))
			fail_msg("%s: message without position: %s", path, err.msg);
		if (getenv("RANK_PARSE_VERBOSE"))
			printf("  %s\n", err.msg);
	}
	/* A few cuts through every file: no crash on partial input. */
	truncations(path, text, n, n / 7 + 1);
	c->cuts++;
}

static void corpus_walk(const char *dir, struct corpus *c, int depth)
{
	DIR *d = opendir(dir);
	if (!d || depth > 16) {
		if (d)
			closedir(d);
		return;
	}
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		char path[4096];
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		struct stat st;
		if (lstat(path, &st) != 0)
			continue;
		size_t len = strlen(e->d_name);
		if (S_ISDIR(st.st_mode))
			corpus_walk(path, c, depth + 1);
		else if (S_ISREG(st.st_mode) && len > 3 && strcmp(e->d_name + len - 3, ".sd") == 0)
			corpus_file(path, c);
	}
	closedir(d);
}

static void test_vespa_corpus(void **state)
{
	(void)state;
	struct stat st;
	if (stat(CORPUS, &st) != 0) {
		skip();
		return;
	}
	struct corpus c = {0};
	corpus_walk(CORPUS, &c, 0);
	printf("vespa-apps: %d schemas, %d parse, %d refused with a position\n", c.files, c.parsed,
	       c.refused);
	assert_true(c.files > 0);
	assert_true(c.parsed > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_full_schema),
		cmocka_unit_test(test_fast_search),
		cmocka_unit_test(test_precedence),
		cmocka_unit_test(test_expr_errors),
		cmocka_unit_test(test_types),
		cmocka_unit_test(test_inheritance),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_truncations),
		cmocka_unit_test(test_alloc_failures),
		cmocka_unit_test(test_vespa_corpus),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
