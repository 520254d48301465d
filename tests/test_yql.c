/*
 * test_yql.c: the YQL parser: the condition tree of each construct (dumped
 * as text), order by and grouping clauses, and every error with its
 * yql:LINE:COL position.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../engine/grouping.h"

/* ---- YQL ------------------------------------------------------------------------------- */

static void yql_ok(const char *text, const char *want)
{
	struct strata_error err = { 0 };
	struct yql_query *q;
	int rc = yql_parse(text, &q, &err);
	if (rc)
		fail_msg("%s: %s", text, err.msg);
	char *d = yql_dump(q->where);
	assert_string_equal(d, want);
	base_strfree(d);
	yql_free(q);
}

static void yql_bad(const char *text, int code, const char *want)
{
	struct strata_error err = { 0 };
	struct yql_query *q = NULL;
	assert_int_equal(yql_parse(text, &q, &err), code);
	assert_null(q);
	assert_string_equal(err.msg, want);
}

static void test_yql_parse(void **state)
{
	(void)state;
	yql_ok("select * from sources * where true", "TRUE");
	yql_ok("select * from sources * where price < 30", "price<30");
	yql_ok("SELECT * FROM sources * WHERE 30 >= price", "price<=30");
	yql_ok("select * from sources * where a = 1 and b > -2.5 or !(c <= 3)",
	       "OR(AND(a=1,b>-2.5),NOT(c<=3))");
	yql_ok("select * from sources * where range(price, 10, 20) and title contains \"a \\\"b\\\"\"",
	       "AND(RANGE(price,10,20),title CONTAINS \"a \"b\"\")");
	yql_ok("select * from sources * where {targetHits: 5}nearestNeighbor(emb, q)",
	       "NN(emb,q,5)");
	yql_ok("select * from sources * where {targetHits:7, label:\"n\", approximate:false}"
	       "nearestNeighbor(emb, q) and flag = true",
	       "AND(NN(emb,q,7,label=n),flag=1)");
	yql_ok("select * from sources * where range(p, -Infinity, 5);", "RANGE(p,-inf,5)");
	/* text search */
	yql_ok("select * from sources * where title contains phrase(\"a\", \"b c\") and "
	       "{targetHits: 3}weakAnd(t contains \"x\", t contains \"y\")",
	       "AND(title CONTAINS \"a b c\",WEAKAND(3;t CONTAINS \"x\",t CONTAINS \"y\"))");
	yql_ok("select * from sources * where weakAnd(t contains \"x\")",
	       "WEAKAND(100;t CONTAINS \"x\")");
	yql_ok("select * from sources * where {targetNumHits: 2}weakAnd(t contains \"x\")",
	       "WEAKAND(2;t CONTAINS \"x\")");
	yql_ok("select * from sources * where rank(userQuery(), userInput(@q), userInput(\"w\"))",
	       "RANK(USERQUERY(),USERINPUT(@q),USERINPUT(\"w\"))");

	struct strata_error err;
	struct yql_query *q;
	assert_int_equal(yql_parse("select title, price from sources a, b where false limit 15 "
	                           "offset 5", &q, &err), 0);
	assert_int_equal(q->all_fields, 0);
	assert_int_equal(q->nfields, 2);
	assert_string_equal(q->fields[1], "price");
	assert_int_equal(q->all_sources, 0);
	assert_int_equal(q->nsources, 2);
	assert_string_equal(q->sources[0], "a");
	assert_int_equal(q->limit, 15);
	assert_int_equal(q->offset, 5);
	assert_int_equal(q->where->kind, YQL_FALSE);
	yql_free(q);
	assert_int_equal(yql_parse("select * from product where true", &q, &err), 0);
	assert_int_equal(q->nsources, 1);
	assert_string_equal(q->sources[0], "product");
	assert_int_equal(q->limit, -1);
	yql_free(q);
}

static void test_yql_errors(void **state)
{
	(void)state;
	yql_bad("select * frm sources *", STRATA_PARSE, "yql:1:10: expected 'from', found 'frm'");
	yql_bad("select * from sources * where price <", STRATA_PARSE,
	        "yql:1:38: expected a number, found the end of the query");
	yql_bad("select * from sources * where (price < 3", STRATA_PARSE,
	        "yql:1:41: expected ')', found the end of the query");
	yql_bad("select * from sources * where nearestNeighbor(emb, q)", STRATA_PARSE,
	        "yql:1:31: nearestNeighbor needs a {targetHits: N} annotation");
	yql_bad("select * from sources * where {targetHits: 0}nearestNeighbor(emb, q)", STRATA_PARSE,
	        "yql:1:44: targetHits must be a positive integer");
	yql_bad("select * from sources * where title contains 3", STRATA_PARSE,
	        "yql:1:46: expected a string, found '3'");
	yql_bad("select * from sources * where foo(a)", STRATA_PARSE,
	        "yql:1:31: unknown function 'foo'");
	yql_bad("select * from sources * where weakAnd()", STRATA_PARSE,
	        "yql:1:31: weakAnd() needs at least one condition");
	yql_bad("select * from sources * where {targetHits: 0}weakAnd(t contains \"x\")",
	        STRATA_PARSE, "yql:1:44: targetHits must be a positive integer");
	yql_bad("select * from sources * where {targetHits: 2.5}weakAnd(t contains \"x\")",
	        STRATA_PARSE, "yql:1:44: targetHits must be a positive integer");
	yql_bad("select * from sources * where {targetHits: 2, label: \"l\"}weakAnd(t contains \"x\")",
	        STRATA_PARSE, "yql:1:47: weakAnd takes the annotation targetHits only");
	yql_bad("select * from sources * where {approximate: false}weakAnd(t contains \"x\")",
	        STRATA_PARSE, "yql:1:32: weakAnd takes the annotation targetHits only");
	yql_bad("select * from sources * where {targetHits: 2, k: 1}weakAnd(t contains \"x\")",
	        STRATA_PARSE, "yql:1:47: unknown annotation 'k'");
	yql_bad("select * from sources * where {targetHits: 2}rank(t contains \"x\")", STRATA_PARSE,
	        "yql:1:31: annotations are only supported on nearestNeighbor, wand, weakAnd, userInput "
	        "and words, not on "
	        "'rank'");
	yql_bad("select * from sources * where t contains phrase(\"a\", 1)", STRATA_PARSE,
	        "yql:1:54: expected a word in quotes, found '1'");
	yql_bad("select * from sources * where userInput(q)", STRATA_PARSE,
	        "yql:1:41: expected '@parameter' or a string, found 'q'");
	yql_bad("select * from sources * where a < 1 limit x", STRATA_PARSE,
	        "yql:1:43: expected a number after 'limit', found 'x'");
	yql_bad("select * from sources * where a < 1 b", STRATA_PARSE,
	        "yql:1:37: expected 'and', 'or', 'order by', 'limit', 'offset', '|' or the end of the "
	        "query, found 'b'");
	yql_bad("select * from sources * where\n  a # 1", STRATA_PARSE,
	        "yql:2:5: unexpected character '#'");
	yql_bad("select * from sources * where t contains \"abc", STRATA_PARSE,
	        "yql:1:42: unterminated string");
}

static void test_yql_in_matches(void **state)
{
	(void)state;
	yql_ok("select * from sources * where price in (1, 2.5, -3)", "price IN (1,2.5,-3)");
	yql_ok("select * from sources * where title in ('a', \"b c\") and x in (true)",
	       "AND(title IN (\"a\",\"b c\"),x IN (1))");
	yql_ok("select * from sources * where title matches \"^ab+\" or !(t matches 'x')",
	       "OR(title MATCHES \"^ab+\",NOT(t MATCHES \"x\"))");
	/* a compiled expression: unanchored, case-insensitive */
	struct strata_error err;
	struct yql_query *q;
	assert_int_equal(yql_parse("select * from sources * where t matches 'b+c' and u matches 'z'",
	                           &q, &err), 0);
	const struct yql_node *m = q->where->kids[0];
	assert_int_equal(m->kind, YQL_MATCHES);
	assert_int_equal(regexec(m->re, "aBBc", 0, NULL, 0), 0);
	assert_int_not_equal(regexec(m->re, "ac", 0, NULL, 0), 0);
	assert_ptr_equal(q->regexes, q->where->kids[1]);
	assert_ptr_equal(q->regexes->re_next, m);
	yql_free(q);
}

static void test_yql_order_grouping(void **state)
{
	(void)state;
	struct strata_error err;
	struct yql_query *q;
	assert_int_equal(yql_parse("select * from sources * where a > 1 order by price desc, title, "
	                           "b asc limit 10 offset 2", &q, &err), 0);
	assert_int_equal(q->norder, 3);
	assert_string_equal(q->order[0].field, "price");
	assert_int_equal(q->order[0].desc, 1);
	assert_string_equal(q->order[1].field, "title");
	assert_int_equal(q->order[1].desc, 0);
	assert_int_equal(q->order[2].desc, 0);
	assert_int_equal(q->order[2].col, 65);
	assert_int_equal(q->limit, 10);
	assert_int_equal(q->offset, 2);
	assert_null(q->grouping);
	yql_free(q);

	assert_int_equal(yql_parse("select * from sources * where true limit 0 | all(group(cat) "
	                           "max(3) order(-count(), +avg(p)) each(output(count(), sum(p), "
	                           "min(q), max(q))));", &q, &err), 0);
	const struct yql_grouping *g = q->grouping;
	assert_non_null(g);
	assert_string_equal(g->field, "cat");
	assert_int_equal(g->max, 3);
	assert_int_equal(g->norder, 2);
	assert_int_equal(g->order[0].agg, YQL_AGG_COUNT);
	assert_int_equal(g->order[0].desc, 1);
	assert_int_equal(g->order[1].agg, YQL_AGG_AVG);
	assert_int_equal(g->order[1].desc, 0);
	assert_string_equal(g->order[1].label, "avg(p)");
	assert_int_equal(g->nout, 4);
	assert_string_equal(g->out[0].label, "count()");
	assert_null(g->out[0].field);
	assert_string_equal(g->out[1].label, "sum(p)");
	assert_string_equal(g->out[3].label, "max(q)");
	assert_int_equal(q->limit, 0);
	yql_free(q);

	assert_int_equal(yql_parse("select * from sources * where true | all(output(count(), "
	                           "avg(p)))", &q, &err), 0);
	assert_int_equal(q->ngroupings, 1);
	assert_null(q->grouping->field);
	assert_int_equal(q->grouping->nout, 2);
	assert_int_equal(q->grouping->max, -1);
	yql_free(q);

	/* groups within groups, both ways of writing it */
	assert_int_equal(yql_parse("select * from sources * where true | all(group(a) each("
	                           "output(count()) group(b) max(2) each(output(sum(p))) ))",
	                           &q, &err), 0);
	assert_string_equal(q->grouping->field, "a");
	assert_int_equal(q->grouping->nout, 1);
	assert_string_equal(q->grouping->sub->field, "b");
	assert_int_equal(q->grouping->sub->max, 2);
	assert_string_equal(q->grouping->sub->out[0].label, "sum(p)");
	assert_null(q->grouping->sub->sub);
	yql_free(q);
	assert_int_equal(yql_parse("select * from sources * where true | all(group(a) each("
	                           "all(group(b) each(all(group(c) each(output(count())))))))",
	                           &q, &err), 0);
	assert_int_equal(q->grouping->nout, 0);
	assert_string_equal(q->grouping->sub->sub->field, "c");
	yql_free(q);

	/* several side by side */
	assert_int_equal(yql_parse("select * from sources * where true | all( all(group(a) "
	                           "each(output(count()))) ALL(output(sum(p))) all(group(b) max(2) "
	                           "each(output(max(p)))) )", &q, &err), 0);
	assert_int_equal(q->ngroupings, 3);
	assert_string_equal(q->grouping[0].field, "a");
	assert_null(q->grouping[1].field);
	assert_string_equal(q->grouping[1].out[0].label, "sum(p)");
	assert_string_equal(q->grouping[2].field, "b");
	assert_int_equal(q->grouping[2].max, 2);
	yql_free(q);
}

static void test_yql_new_errors(void **state)
{
	(void)state;
	yql_bad("select * from sources * where a in ()", STRATA_PARSE,
	        "yql:1:37: expected a number or a string, found ')'");
	yql_bad("select * from sources * where a in (1, 'x')", STRATA_PARSE,
	        "yql:1:40: expected a number or a string, found ''x''");
	yql_bad("select * from sources * where a in ('x', 1)", STRATA_PARSE,
	        "yql:1:42: expected a string, found '1'");
	yql_bad("select * from sources * where a in 1", STRATA_PARSE,
	        "yql:1:36: expected '(', found '1'");
	yql_bad("select * from sources * where a matches 3", STRATA_PARSE,
	        "yql:1:41: expected a regular expression in quotes, found '3'");
	struct strata_error err = { 0 };
	struct yql_query *q = NULL;
	assert_int_equal(yql_parse("select * from sources * where a matches '(b'", &q, &err),
	                 STRATA_PARSE);
	assert_non_null(strstr(err.msg, "yql:1:41: bad regular expression: "));
	yql_bad("select * from sources * where a matches '((x{99}){99}){99}'", STRATA_PARSE,
	        "yql:1:41: regular expression too complex: its repetitions would grow to more than "
	        "10000 nodes");
	yql_bad("select * from sources * where true order price", STRATA_PARSE,
	        "yql:1:42: expected 'by', found 'price'");
	yql_bad("select * from sources * where true order by", STRATA_PARSE,
	        "yql:1:44: expected a field name, found the end of the query");
	yql_bad("select * from sources * where true | each(output(count()))", STRATA_NOT_IMPLEMENTED,
	        "yql:1:38: each() at the top of a grouping is not supported");
	yql_bad("select * from sources * where true | all(group(a) each(group(b) each(group(c) "
	        "each(group(d) each(group(e) each(group(f) each(group(g) each(group(h) each(gro"
	        "up(i) each(output(count())))))))))))",
	        STRATA_NOT_IMPLEMENTED,
	        "yql:1:154: grouping nested deeper than 8 levels is not supported");
	yql_bad("select * from sources * where true | all(group(a) each(all(output(count()))))",
	        STRATA_PARSE, "yql:1:56: a grouping inside each() needs a group()");
	yql_bad("select * from sources * where true | all(group(a) each())", STRATA_PARSE,
	        "yql:1:51: each() needs output() or a grouping");
	yql_bad("select * from sources * where true | all(group(a) each(each(output(count()))))",
	        STRATA_NOT_IMPLEMENTED, "yql:1:68: this output of hits (only summary()) is not supported");
	yql_bad("select * from sources * where true | all(group(interpolatedlookup(a, b)) each("
	        "output(count())))", STRATA_NOT_IMPLEMENTED,
	        "yql:1:48: interpolatedlookup() in a grouping expression is not supported");
	yql_bad("select * from sources * where true | all(group(a) each(output(xor(b))))",
	        STRATA_NOT_IMPLEMENTED, "yql:1:63: xor() here is not supported");
	yql_bad("select * from sources * where true | all(group(a) filter(nope(a)) each(output("
	        "count())))", STRATA_PARSE,
	        "yql:1:58: expected regex(), range(), istrue(), not or '(', found 'nope'");
	yql_bad("select * from sources * where true | all(group(a))", STRATA_PARSE,
	        "yql:1:50: group() needs each(...)");
	yql_bad("select * from sources * where true | all(group(a) max(0) each(output(count())))",
	        STRATA_PARSE, "yql:1:55: max() takes a positive integer");
	yql_bad("select * from sources * where true | all(output(count())) x", STRATA_PARSE,
	        "yql:1:59: expected the end of the query, found 'x'");
	yql_bad("select * from sources * where true | all(all(output(count())) group(a))",
	        STRATA_PARSE, "yql:1:63: expected 'all', found 'group'");
	yql_bad("select * from sources * where true | all(group(a) all(output(count())))",
	        STRATA_NOT_IMPLEMENTED, "yql:1:51: 'all' in a grouping is not supported");
	yql_bad("select * from sources * where true | all(output(sum()))", STRATA_PARSE,
	        "yql:1:53: expected an expression, found ')'");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_yql_parse),
		cmocka_unit_test(test_yql_errors),
		cmocka_unit_test(test_yql_in_matches),
		cmocka_unit_test(test_yql_order_grouping),
		cmocka_unit_test(test_yql_new_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
