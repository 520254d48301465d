/*
 * test_indexing.c: the indexing language.  The parser (rank/indexing.c):
 * the trees of good statements, blocks and the flags sinks set, and bad
 * statements with their positions; the checks made once the documents are
 * known (rank/indexing_check.c); the functions (engine/indexing_fn.c): the
 * chunkers, binarize and pack_bits, whose bytes are worked out by hand
 * below; and scripts run by a feed through the library (concatenation,
 * ||, for_each, updates that recompute what they read, a failing embed),
 * with allocation failures.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../engine/engine_int.h"
#include "../rank/rank_syntax.h"
#include "apptest.h"

/* ---- parsing -------------------------------------------------------------------------- */

static struct rank_sd *parse_ok(const char *text)
{
	struct rank_sd *sd = NULL;
	struct strata_error err = {0};
	if (rank_sd_parse("t.sd", text, strlen(text), &sd, &err) != 0)
		fail_msg("parse: %s", err.msg);
	return sd;
}

static struct rank_field *field(struct rank_sd *sd, const char *name)
{
	for (int i = 0; i < sd->nfields; i++)
		if (strcmp(sd->fields[i].name, name) == 0)
			return &sd->fields[i];
	fail_msg("no field %s", name);
	return NULL;
}

static void test_parse_trees(void **state)
{
	(void)state;
	struct rank_sd *sd = parse_ok(
		"schema s {\n"
		" document s {\n"
		"  field title type string { indexing: summary | index }\n"
		"  field body type string { indexing: summary }\n"
		"  field paras type array<string> { indexing: summary }\n"
		" }\n"
		" field e type tensor<float>(x[4]) {\n"
		"  indexing: (input title || \"\") . \" \" . (input body || \"\") | embed e5 | attribute\n"
		" }\n"
		" field c type tensor<int8>(chunk{}, x[2]) {\n"
		"  indexing: input body | chunk fixed-length 1024 | embed | pack_bits | attribute | index\n"
		" }\n"
		" field w type tensor<float>(p{}, x[4]) {\n"
		"  indexing {\n"
		"   input paras |\n"
		"     for_each {\n"
		"       (input title || \"\") . \" \" . ( _ || \"\")\n"
		"     } | embed e5 | attribute\n"
		"   \"en\" | set_language; input title | lowercase | summary ts\n"
		"  }\n"
		" }\n"
		" field ts type string { indexing: input title | summary }\n"
		" field k type tensor<int8>(context{}, token{}, v[2]) {\n"
		"  indexing: input paras | embed colbert context | attribute\n"
		" }\n"
		"}\n");
	/* embed's argument: the dimension of the array's elements */
	const struct rank_ix *k = field(sd, "k")->indexing->args[0]->args[1];
	assert_int_equal(k->kind, RANK_IX_EMBED);
	assert_string_equal(k->str, "colbert");
	assert_string_equal(k->dim, "context");
	assert_string_equal(k->dest, "k");
	/* Sinks alone keep no tree, and set the flags. */
	assert_null(field(sd, "title")->indexing);
	assert_int_equal(field(sd, "title")->index, 1);
	assert_int_equal(field(sd, "title")->summary, 1);

	const struct rank_ix *e = field(sd, "e")->indexing;
	assert_int_equal(e->kind, RANK_IX_SCRIPT);
	assert_int_equal(e->nargs, 1);
	const struct rank_ix *p = e->args[0];
	assert_int_equal(p->kind, RANK_IX_PIPE);
	assert_int_equal(p->nargs, 3);
	const struct rank_ix *cat = p->args[0];
	assert_int_equal(cat->kind, RANK_IX_CAT);
	assert_int_equal(cat->nargs, 3);
	assert_int_equal(cat->args[0]->kind, RANK_IX_CHOICE);
	assert_int_equal(cat->args[0]->args[0]->kind, RANK_IX_INPUT);
	assert_string_equal(cat->args[0]->args[0]->str, "title");
	assert_int_equal(cat->args[0]->args[0]->line, 8);
	assert_int_equal(cat->args[0]->args[0]->col, 20);
	assert_int_equal(cat->args[0]->args[1]->kind, RANK_IX_STRING);
	assert_string_equal(cat->args[0]->args[1]->str, "");
	assert_string_equal(cat->args[1]->str, " ");
	assert_int_equal(p->args[1]->kind, RANK_IX_EMBED);
	assert_string_equal(p->args[1]->str, "e5");
	assert_string_equal(p->args[1]->dest, "e");
	assert_null(p->args[1]->dim);
	assert_int_equal(p->args[1]->pack, 0);
	assert_int_equal(p->args[2]->kind, RANK_IX_SINK);
	assert_int_equal(p->args[2]->op, 'a');
	assert_null(p->args[2]->str);
	assert_int_equal(field(sd, "e")->attribute, 1);
	assert_int_equal(field(sd, "e")->outside, 1);

	p = field(sd, "c")->indexing->args[0];
	assert_int_equal(p->nargs, 6);
	assert_int_equal(p->args[1]->kind, RANK_IX_CHUNK);
	assert_string_equal(p->args[1]->str, "fixed-length");
	assert_true(p->args[1]->num == 1024);
	assert_null(p->args[2]->str); /* the only embedder */
	assert_int_equal(p->args[2]->pack, 1);
	assert_int_equal(p->args[3]->op, RANK_IXF_PACK_BITS);

	/* A block: two statements kept (set_language alone is dropped). */
	const struct rank_ix *w = field(sd, "w")->indexing;
	assert_int_equal(w->nargs, 2);
	p = w->args[0];
	assert_int_equal(p->args[1]->kind, RANK_IX_FOR_EACH);
	const struct rank_ix *body = p->args[1]->args[0];
	assert_int_equal(body->kind, RANK_IX_SCRIPT);
	assert_int_equal(body->args[0]->kind, RANK_IX_CAT);
	assert_int_equal(body->args[0]->args[2]->args[0]->kind, RANK_IX_CURRENT);
	assert_string_equal(p->args[2]->dest, "w");
	p = w->args[1];
	assert_int_equal(p->args[1]->op, RANK_IXF_LOWERCASE);
	assert_string_equal(p->args[2]->str, "ts");
	assert_int_equal(p->args[2]->line, 19);

	/* Checked with the documents: the block passes, ts reads title as is. */
	struct strata_error err = {0};
	assert_int_equal(rank_sds_inherit(&sd, 1, NULL, &err), 0);
	assert_int_equal(field(sd, "ts")->source, 0);
	assert_int_equal(field(sd, "e")->source, -1);
	rank_sd_free(sd);
}

static void test_parse_more(void **state)
{
	(void)state;
	struct rank_sd *sd = parse_ok(
		"schema s { document s { field n type int { indexing: summary }\n"
		"  field t type string { indexing: input t | trim | lowercase | attribute }\n"
		"  field u type string { indexing: input u | summary }\n"
		"  field u2 type string { indexing: summary u } }\n"
		" field a type long { indexing: input n * 2 + 1 | attribute }\n"
		" field b type string { indexing: if (input n >= 3) { \"x\" | summary } else { \"y\" | summary } }\n"
		" field h type int { indexing: input t | hash | attribute }\n"
		" field s type array<string> { indexing: input t | split \"[,;] *\" | summary }\n"
		" field j type string { indexing: input s | join \"-\" | substring 1 4 | summary }\n"
		" field z type tensor<int8>(x[1]) { indexing: input z | binarize -0.5 | pack_bits | attribute }\n"
		" field g type long { indexing: guard { input t | flatten | to_epoch_second | attribute } }\n"
		"}\n");
	const struct rank_ix *a = field(sd, "a")->indexing->args[0]->args[0];
	assert_int_equal(a->kind, RANK_IX_ARITH);
	assert_int_equal(a->op, '+'); /* (n * 2) + 1 */
	assert_int_equal(a->args[0]->op, '*');
	assert_int_equal(a->args[1]->integral, 1);
	const struct rank_ix *b = field(sd, "b")->indexing->args[0];
	assert_int_equal(b->kind, RANK_IX_IF);
	assert_int_equal(b->op, RANK_IX_GE);
	assert_non_null(b->args[3]);
	const struct rank_ix *j = field(sd, "j")->indexing->args[0];
	assert_string_equal(j->args[1]->str, "-");
	assert_true(j->args[2]->num == 1 && j->args[2]->num2 == 4);
	const struct rank_ix *z = field(sd, "z")->indexing->args[0];
	assert_true(z->args[1]->num == -0.5);
	const struct rank_ix *g = field(sd, "g")->indexing->args[0];
	assert_int_equal(g->kind, RANK_IX_GUARD);
	assert_int_equal(g->args[0]->args[0]->args[2]->op, RANK_IXF_TO_EPOCH_SECOND);
		/* Reading the field itself into its own sinks is no script; a sink
	 * naming another field is one. */
	assert_null(field(sd, "u")->indexing);
	assert_int_equal(field(sd, "u")->summary, 1);
	assert_non_null(field(sd, "u2")->indexing);
	assert_int_equal(field(sd, "u2")->summary, 0);
	/* A document field's own script reads the field itself. */
	assert_non_null(field(sd, "t")->indexing);
	assert_int_equal(field(sd, "t")->attribute, 1);
	rank_sd_free(sd);
}

/* A schema whose parse (checked = 0) or check (1) fails with code and a
 * message that begins with msg. */
struct bad {
	const char *text;
	int code;
	const char *msg;
};

static void expect_error(const struct bad *b, size_t i, int checked)
{
	struct rank_sd *sd = NULL;
	struct strata_error err = {0};
	int rc = checked ? 0 : rank_sd_parse("t.sd", b->text, strlen(b->text), &sd, &err);
	if (checked) {
		sd = parse_ok(b->text);
		rc = rank_sds_inherit(&sd, 1, NULL, &err);
		rank_sd_free(sd);
	} else {
		assert_null(sd);
	}
	if (rc != b->code || strncmp(err.msg, b->msg, strlen(b->msg)) != 0)
		fail_msg("case %zu: got %d '%s'\n  expected %d '%s'", i, rc, err.msg, b->code, b->msg);
}

static void test_parse_errors(void **state)
{
	(void)state;
	static const struct bad bads[] = {
		{"schema s { document s { }\n field b type string { indexing: input a . | summary } }",
		 STRATA_PARSE, "t.sd:2:44: expected an indexing expression, found '|'"},
		{"schema s { document s { }\n field b type string { indexing: (input a | summary } }",
		 STRATA_PARSE, "t.sd:2:53: expected ')' to close the '(', found '}'"},
		{"schema s { document s { }\n field b type string { indexing: input a summary } }",
		 STRATA_PARSE, "t.sd:2:42: expected '|' between indexing statements, found 'summary'"},
		{"schema s { document s { }\n field b type string { indexing: input | summary } }",
		 STRATA_PARSE, "t.sd:2:40: expected a field name after 'input', found '|'"},
		{"schema s { document s { }\n field b type string { indexing: input a | generate g | summary } }",
		 STRATA_NOT_IMPLEMENTED,
		 "t.sd:2:44: 'generate' (field values written by a language model) is not supported: "
		 "Strata runs no language model"},
		{"schema s { document s { }\n field b type string { indexing: input a | tokenize | summary } }",
		 STRATA_NOT_IMPLEMENTED, "t.sd:2:44: indexing expression 'tokenize' is not supported"},
		{"schema s { document s { }\n field b type string { indexing: input a | embed c d e | summary } }",
		 STRATA_NOT_IMPLEMENTED, "t.sd:2:54: embed takes one argument after the embedder, the "
		 "dimension of an array's elements; 'e' is not supported"},
		{"schema s { document s { }\n field b type string { indexing: input a | chunk fixed-length x } }",
		 STRATA_PARSE, "t.sd:2:63: expected '|' between indexing statements, found 'x'"},
		{"schema s { document s { }\n field b type string { indexing: input a | chunk fixed-length 0 } }",
		 STRATA_TYPE, "t.sd:2:63: a chunk length is a whole number of characters from 1, not '0'"},
		{"schema s { document s { }\n field b type string { indexing: input a | split | summary } }",
		 STRATA_PARSE, "t.sd:2:50: expected a regular expression after 'split', found '|'"},
		{"schema s { document s { }\n field b type string { indexing: if (input a = 1) { summary } } }",
		 STRATA_PARSE,
		 "t.sd:2:46: expected a comparison (==, !=, <, <=, >, >=) in 'if', found '='"},
		{"schema s { document s { }\n field b type string { indexing: for_each { } | summary } }",
		 STRATA_PARSE, "t.sd:2:45: 'for_each' has no statement"},
		{"schema s { document s { }\n field b type string { indexing {\n input a | summary\n",
		 STRATA_PARSE, "t.sd:4:1: the indexing block is never closed"},
		{"schema s { document s { }\n field b type string { indexing { input a | summary ) } } }",
		 STRATA_PARSE, "t.sd:2:53: expected ';', '|' or '}' after an indexing statement, found ')'"},
		{"schema s { document s { }\n field b type array<long> { indexing: input a | index } }",
		 STRATA_NOT_IMPLEMENTED, "t.sd:2:49: 'indexing: index' on field 'b' is not supported"},
	};
	for (size_t i = 0; i < sizeof bads / sizeof bads[0]; i++)
		expect_error(&bads[i], i, 0);
}

static void test_check_errors(void **state)
{
	(void)state;
	static const struct bad bads[] = {
		{"schema s { document s { field n type int { } }\n"
		 " field b type string { indexing: input n . \"x\" | summary } }",
		 STRATA_TYPE, "t.sd:2:40: '.' joins strings (or arrays), not an int (convert it with to_string)"},
		{"schema s { document s { field t type string { } }\n"
		 " field b type string { indexing: input t | embed | attribute } }",
		 STRATA_TYPE, "t.sd:2:44: embed into field 'b', which is a string, not a tensor"},
		{"schema s { document s { field n type int { } }\n"
		 " field b type tensor(x[2]) { indexing: input n | embed | attribute } }",
		 STRATA_TYPE, "t.sd:2:50: embed takes a string or an array of strings, not an int"},
		{"schema s { document s { field t type array<string> { } }\n"
		 " field b type tensor(x[2]) { indexing: input t | embed | attribute } }",
		 STRATA_TYPE,
		 "t.sd:2:50: embedding an array of strings needs a tensor with one mapped dimension and "
		 "indexed ones (tensor<float>(p{}, x[384])), or two mapped ones, the one the elements "
		 "take named (embed id p); field 'b' has another type"},
		{"schema s { document s { field t type array<string> { } }\n"
		 " field b type tensor(c{}, t{}, x[2]) { indexing: input t | embed e | attribute } }",
		 STRATA_TYPE, "t.sd:2:60: embedding an array of strings needs a tensor with one mapped "
		 "dimension and indexed ones"},
		{"schema s { document s { field t type array<string> { } }\n"
		 " field b type tensor(c{}, t{}, x[2]) { indexing: input t | embed e x | attribute } }",
		 STRATA_TYPE, "t.sd:2:60: embed ... x: field 'b' has no mapped dimension 'x' for the "
		 "elements"},
		{"schema s { document s { field t type string { } }\n"
		 " field b type tensor(c{}, x[2]) { indexing: input t | embed e c | attribute } }",
		 STRATA_TYPE, "t.sd:2:55: embed ... c: the dimension takes the elements of an array of "
		 "strings, not a string"},
		{"schema s { document s { field t type string { } }\n"
		 " field b type tensor<float>(x[2]) { indexing: input t | embed | pack_bits | attribute } }",
		 STRATA_TYPE,
		 "t.sd:2:57: embed | pack_bits needs an int8 tensor whose last dimension is indexed; "
		 "field 'b' is not one"},
		{"schema s { document s { field v type tensor(x[16]) { } }\n"
		 " field b type tensor<float>(x[2]) { indexing: input v | binarize | pack_bits | attribute } }",
		 STRATA_TYPE, "t.sd:2:80: pack_bits gives int8 cells; field 'b' has others"},
		{"schema s { document s { field t type string { } }\n"
		 " field b type string { indexing: input t | binarize | summary } }",
		 STRATA_TYPE, "t.sd:2:44: binarize takes a tensor, not a string"},
		{"schema s { document s { field t type string { } }\n"
		 " field b type string { indexing: input t | for_each { _ } | summary } }",
		 STRATA_TYPE, "t.sd:2:44: for_each takes an array, not a string"},
		{"schema s { document s { field t type string { } }\n"
		 " field b type string { indexing: input t | summary nothere } }",
		 STRATA_TYPE, "t.sd:2:44: 'summary nothere' names no field of 's'"},
		{"schema s { document s { field t type string { } }\n"
		 " field b type string { indexing: input b2 | summary }\n"
		 " field b2 type string { indexing: input t | summary } }",
		 STRATA_TYPE, "t.sd:2:40: 'input b2': 'b2' is not a field of document 's'"},
		{"schema s { document s { field t type string { } }\n"
		 " field b type string { indexing: input t | split \"(\" | summary } }",
		 STRATA_TYPE, "t.sd:2:44: split: bad regular expression \"(\": "},
		{"schema s { document s { field t type string { } }\n"
		 " field b type string { indexing: input t | split \"(a{200}){200}\" | summary } }",
		 STRATA_TYPE, "t.sd:2:44: split: regular expression \"(a{200}){200}\" too complex"},
		{"schema s { document s { field t type string { } }\n"
		 " field b type array<string> { indexing: input t | chunk sentence | join \" \" | summary } }",
		 STRATA_TYPE, "t.sd:2:79: field 'b' of type array<string> cannot hold a string"},
	};
	for (size_t i = 0; i < sizeof bads / sizeof bads[0]; i++)
		expect_error(&bads[i], i, 1);
}

/* ---- functions ------------------------------------------------------------------------ */

/* The JSON text of the chunks of text. */
static char *chunks(const char *text, const char *chunker, long length)
{
	json_t *in = json_string(text), *out = NULL;
	struct strata_error err = {0};
	assert_int_equal(eng_ix_chunk(in, chunker, length, &out, &err), 0);
	char *s = eng_json_dump(out, 0);
	json_decref(in);
	json_decref(out);
	return s;
}

static void expect_chunks(const char *text, const char *chunker, long length, const char *want)
{
	char *s = chunks(text, chunker, length);
	assert_string_equal(s, want);
	base_strfree(s);
}

static void test_chunkers(void **state)
{
	(void)state;
	/* fixed-length 5: a chunk ends at the first character, from the 5th on,
	 * that is not a letter or digit; that character ends it. */
	expect_chunks("abcdefg hij, klmnop", "fixed-length", 5, "[\"abcdefg \",\"hij, \",\"klmnop\"]");
	expect_chunks("ab cd ef", "fixed-length", 3, "[\"ab \",\"cd \",\"ef\"]");
	expect_chunks("ab", "fixed-length", 10, "[\"ab\"]");
	expect_chunks("", "fixed-length", 10, "[]");
	/* Code points, not bytes: "ééé" is 3 characters (6 bytes). */
	expect_chunks("\xc3\xa9\xc3\xa9\xc3\xa9 x", "fixed-length", 4, "[\"\xc3\xa9\xc3\xa9\xc3\xa9 \",\"x\"]");
	/* sentence: a sentence end after some content, not followed by another end. */
	expect_chunks("One. Two?! Three", "sentence", 0, "[\"One.\",\" Two?!\",\" Three\"]");
	expect_chunks("... Go.", "sentence", 0, "[\"... Go.\"]");
	expect_chunks("A\xe3\x80\x82" "B", "sentence", 0, "[\"A\xe3\x80\x82\",\"B\"]"); /* 。 */
}

static char *pack_text(const char *json, int lenient, int *rc)
{
	json_error_t je;
	json_t *in = json_loads(json, 0, &je), *out = NULL;
	struct strata_error err = {0};
	assert_non_null(in);
	*rc = eng_ix_pack_bits(in, lenient, &out, &err);
	char *s = *rc ? base_strdup(err.msg) : eng_json_dump(out, 0);
	json_decref(in);
	json_decref(out);
	return s;
}

static void test_pack_bits(void **state)
{
	(void)state;
	int rc;
	/* 1000 0001 = 129 -> -127; 0100 0000 = 64; 1 then padding: 1000 0000 -> -128 */
	char *s = pack_text("{\"values\": [1,0,0,0,0,0,0,1, 0,1,0,0,0,0,0,0, 1]}", 0, &rc);
	assert_int_equal(rc, 0);
	assert_string_equal(s, "{\"values\":[-127,64,-128]}");
	base_strfree(s);
	/* Blocks each packed; 0111 1111 = 127. */
	s = pack_text("{\"blocks\": {\"0\": [0,1,1,1,1,1,1,1], \"1\": [0,0,0,0,0,0,1,1]}}", 0, &rc);
	assert_int_equal(rc, 0);
	assert_string_equal(s, "{\"blocks\":{\"0\":[127],\"1\":[3]}}");
	base_strfree(s);
	/* Only 0 and 1, unless lenient (an embedder's floats: above 0 is 1). */
	s = pack_text("{\"values\": [0.5,0,0,0,0,0,0,0]}", 0, &rc);
	assert_int_equal(rc, STRATA_INVALID_ARGUMENT);
	assert_string_equal(s, "pack_bits: the cell 0 is not 0 or 1 (binarize it first)");
	base_strfree(s);
	s = pack_text("{\"values\": [0.5,-0.2,0,3,0,0,0,0.01]}", 1, &rc);
	assert_int_equal(rc, 0);
	assert_string_equal(s, "{\"values\":[-111]}"); /* 1001 0001 = 145 */
	base_strfree(s);
	s = pack_text("{\"cells\": []}", 0, &rc);
	assert_int_equal(rc, STRATA_INVALID_ARGUMENT);
	base_strfree(s);
}

/* Function op (with num, str) on the JSON in; the result's JSON text. */
static char *func(int op, double num, const char *str, const char *in_json)
{
	struct rank_ix n = {.kind = RANK_IX_FUNC, .op = op, .num = num, .str = (char *)str};
	json_error_t je;
	json_t *in = json_loads(in_json, JSON_DECODE_ANY, &je), *out = NULL;
	struct strata_error err = {0};
	assert_non_null(in);
	int rc = eng_ix_func(&n, in, &out, &err);
	char *s = rc ? base_strdup(err.msg) : eng_json_dump(out, 0);
	json_decref(in);
	json_decref(out);
	return s;
}

static void expect_func(int op, double num, const char *str, const char *in, const char *want)
{
	char *s = func(op, num, str, in);
	assert_string_equal(s, want);
	base_strfree(s);
}

static void test_functions(void **state)
{
	(void)state;
	expect_func(RANK_IXF_BINARIZE, 0, NULL, "{\"values\": [0.5, 0, -1, 2]}", "{\"values\":[1,0,0,1]}");
	expect_func(RANK_IXF_BINARIZE, 1, NULL, "{\"blocks\": {\"a\": [0.5, 1.5]}}",
	            "{\"blocks\":{\"a\":[0,1]}}");
	expect_func(RANK_IXF_LOWERCASE, 0, NULL, "\"\xc3\x89t\xc3\xa9 ABC \xce\xa3\"",
	            "\"\xc3\xa9t\xc3\xa9 abc \xcf\x83\"");
	expect_func(RANK_IXF_NORMALIZE, 0, NULL, "\"Cr\xc3\xa8me br\xc3\xbbl\xc3\xa9" "e, Stra\xc3\x9f" "e\"",
	            "\"Creme brulee, Strasse\"");
	expect_func(RANK_IXF_TRIM, 0, NULL, "\"  a b \\n\"", "\"a b\"");
	expect_func(RANK_IXF_SPLIT, 0, ", *", "\"a, b,,c,\"", "[\"a\",\"b\",\"\",\"c\"]");
	expect_func(RANK_IXF_JOIN, 0, "+", "[\"a\", 1, 2.5, true]", "\"a+1+2.5+true\"");
	struct rank_ix sub = {.kind = RANK_IX_FUNC, .op = RANK_IXF_SUBSTRING, .num = 1, .num2 = 3};
	json_t *in = json_string("\xc3\xa9" "abc"), *out = NULL;
	assert_int_equal(eng_ix_func(&sub, in, &out, NULL), 0);
	assert_string_equal(json_string_value(out), "ab");
	json_decref(in);
	json_decref(out);
	expect_func(RANK_IXF_TO_STRING, 0, NULL, "2.5", "\"2.5\"");
	expect_func(RANK_IXF_TO_INT, 0, NULL, "\" 42 \"", "42");
	expect_func(RANK_IXF_TO_INT, 0, NULL, "\"4x\"", "'4x' is not a number");
	expect_func(RANK_IXF_TO_INT, 0, NULL, "3000000000", "3e+09 is out of range for int");
	expect_func(RANK_IXF_TO_LONG, 0, NULL, "3000000000", "3000000000");
	expect_func(RANK_IXF_TO_ARRAY, 0, NULL, "\"a\"", "[\"a\"]");
	expect_func(RANK_IXF_TO_BOOL, 0, NULL, "\"false\"", "false");
	expect_func(RANK_IXF_LOWERCASE, 0, NULL, "3", "lowercase cannot take a number");
	/* 2024-05-01 is day 19844 since 1970 (54 years, 13 leap days, 121 days). */
	expect_func(RANK_IXF_TO_EPOCH_SECOND, 0, NULL, "\"2024-05-01T10:00:00Z\"", "1714557600");
	expect_func(RANK_IXF_TO_EPOCH_SECOND, 0, NULL, "\"2024-05-01T12:00:00.250+02:00\"", "1714557600");
	expect_func(RANK_IXF_TO_EPOCH_SECOND, 0, NULL, "\"1969-12-31T23:59:59Z\"", "-1");
	expect_func(RANK_IXF_TO_EPOCH_SECOND, 0, NULL, "\"May 1\"",
	            "to_epoch_second: 'May 1' is not an ISO-8601 time");
	expect_func(RANK_IXF_TO_WSET, 0, NULL, "\"k\"", "{\"k\":1}");
	expect_func(RANK_IXF_TO_WSET, 0, NULL, "-7", "{\"-7\":1}");
	expect_func(RANK_IXF_TO_WSET, 0, NULL, "[1]", "to_wset takes a string or an integer, not an array");
	expect_func(RANK_IXF_HEX_ENCODE, 0, NULL, "255", "\"ff\"");
	expect_func(RANK_IXF_HEX_ENCODE, 0, NULL, "-1", "\"ffffffffffffffff\"");
	expect_func(RANK_IXF_HEX_DECODE, 0, NULL, "\"FF\"", "255");
	expect_func(RANK_IXF_HEX_DECODE, 0, NULL, "\"ffffffffffffffff\"", "-1");
	expect_func(RANK_IXF_HEX_DECODE, 0, NULL, "\"fg\"", "hex_decode: 'fg' is not 1 to 16 hex digits");
	/* hash: 64 bits, or the low 32 of them for an int field. */
	char *h64 = func(RANK_IXF_HASH, 64, NULL, "\"abc\""), *h32 = func(RANK_IXF_HASH, 32, NULL, "\"abc\"");
	long long v64 = strtoll(h64, NULL, 10), v32 = strtoll(h32, NULL, 10);
	assert_true(v32 == (int32_t)(uint32_t)(uint64_t)v64);
	assert_true(v64 == (long long)base_hash64("abc", 3, 0));
	base_strfree(h64);
	base_strfree(h32);
}

/* ---- scripts at feed time ------------------------------------------------------------- */

static const char *feed_sd =
	"schema d {\n"
	"  document d {\n"
	"    field a type string { indexing: summary }\n"
	"    field b type string { indexing: summary }\n"
	"    field list type array<string> { indexing: summary }\n"
	"    field n type int { indexing: summary | attribute }\n"
	"  }\n"
	"  field ab type string { indexing: (input a || \"-\") . \"/\" . (input b || \"-\") | summary }\n"
	"  field each type array<string> {\n"
	"    indexing: input list | for_each { (input a || \"\") . \":\" . _ } | summary\n"
	"  }\n"
	"  field e type tensor<float>(x[2]) { indexing: input b | embed | attribute }\n"
	"  field v1 type string { indexing: input a | set_var x | summary }\n"
	"  field v2 type string { indexing: get_var x | lowercase | summary }\n"
	"  rank-profile default { first-phase { expression: attribute(n) } }\n"
	"}\n";

/* The summary field name of document n as JSON text ("null" if none). */
static char *hit_field(struct strata *db, int n, const char *name)
{
	char req[256], *res = NULL;
	struct strata_error err = {0};
	snprintf(req, sizeof req, "{\"yql\": \"select * from sources * where n = %d\"}", n);
	if (strata_query_json(db, req, &res, &err) != 0)
		fail_msg("query: %s", err.msg);
	json_error_t je;
	json_t *r = json_loads(res, 0, &je);
	strata_free(res);
	json_t *f = json_object_get(json_object_get(json_array_get(json_object_get(json_object_get(
		r, "root"), "children"), 0), "fields"), name);
	char *s = f ? eng_json_dump(f, 0) : base_strdup("null");
	json_decref(r);
	return s;
}

static void expect_field(struct strata *db, int n, const char *name, const char *want)
{
	char *s = hit_field(db, n, name);
	if (strcmp(s, want) != 0)
		fail_msg("document %d field %s: got %s, want %s", n, name, s, want);
	base_strfree(s);
}

static void feed(struct strata *db, const char *op)
{
	struct strata_error err = {0};
	if (strata_feed_json(db, op, &err) != 0)
		fail_msg("feed %s: %s", op, err.msg);
}

/* The application of feed_sd, in a new folder *dir. */
static struct strata *open_app(char **dir)
{
	struct strata *db;
	struct strata_error err = {0};
	*dir = apptest_new("strata-ix");
	apptest_write(*dir, "schemas/d.sd", feed_sd);
	if (strata_open(*dir, NULL, &db, &err) != 0)
		fail_msg("open: %s", err.msg);
	return db;
}

static void test_feed_scripts(void **state)
{
	(void)state;
	char *dir;
	struct strata *db = open_app(&dir);
	struct strata_error err = {0};
	feed(db, "{\"put\": \"id:x:d::1\", \"fields\": {\"a\": \"A\", \"list\": [\"p\", \"q\"], \"n\": 1}}");
	feed(db, "{\"put\": \"id:x:d::2\", \"fields\": {\"n\": 2}}");
	expect_field(db, 1, "ab", "\"A/-\"");
	expect_field(db, 1, "each", "[\"A:p\",\"A:q\"]");
	expect_field(db, 2, "ab", "\"-/-\"");
	expect_field(db, 2, "each", "null");
	/* A variable set by one field's script, read by a later one's. */
	expect_field(db, 1, "v2", "\"a\"");
	expect_field(db, 2, "v2", "null");
	/* An update recomputes from the stored values of what it does not set. */
	feed(db, "{\"update\": \"id:x:d::1\", \"fields\": {\"list\": {\"add\": [\"r\"]}}}");
	expect_field(db, 1, "each", "[\"A:p\",\"A:q\",\"A:r\"]");
	expect_field(db, 1, "ab", "\"A/-\"");
	feed(db, "{\"update\": \"id:x:d::1\", \"fields\": {\"a\": {\"assign\": \"Z\"}}}");
	expect_field(db, 1, "ab", "\"Z/-\"");
	expect_field(db, 1, "each", "[\"Z:p\",\"Z:q\",\"Z:r\"]");
	/* embed: no embedder here; the document fails, naming it and the
	 * field, and nothing stored changes. */
	int rc = strata_feed_json(db, "{\"update\": \"id:x:d::1\", \"fields\": {\"b\": {\"assign\": \"t\"}}}",
	                          &err);
	assert_true(rc == STRATA_NOT_IMPLEMENTED || rc == STRATA_NOT_FOUND);
	const char *head = "document 'id:x:d::1': field 'e': ";
	assert_memory_equal(err.msg, head, strlen(head));
	assert_non_null(strstr(err.msg + strlen(head), "embed"));
	expect_field(db, 1, "b", "null");
	expect_field(db, 1, "ab", "\"Z/-\"");
	/* A field outside the document is not fed. */
	rc = strata_feed_json(db, "{\"put\": \"id:x:d::3\", \"fields\": {\"ab\": \"x\"}}", &err);
	assert_int_equal(rc, STRATA_INVALID_ARGUMENT);
	assert_string_equal(err.msg, "document 'id:x:d::3': field 'ab' is outside the document: its "
	                             "indexing computes it");
	strata_close(db);
	apptest_remove(dir);
}

static uint64_t live_bytes(void)
{
	struct base_alloc_stats st;
	base_alloc_stats(&st);
	return st.live_bytes;
}

/* Every allocation of a put with scripts may fail: STRATA_NOMEM, nothing
 * held afterwards, the document absent; the last run succeeds. */
static void test_feed_nomem(void **state)
{
	(void)state;
	char *dir;
	struct strata *db = open_app(&dir);
	struct strata_error err = {0};
	const char *op = "{\"put\": \"id:x:d::1\", \"fields\": {\"a\": \"A\", \"list\": [\"p\"], \"n\": 1}}";
	int failures = 0;
	for (long k = 1;; k++) {
		uint64_t before = live_bytes();
		base_alloc_fail_after(k);
		int rc = strata_feed_json(db, op, &err);
		base_alloc_fail_after(0);
		if (rc == 0)
			break;
		failures++;
		if (rc != STRATA_NOMEM || !strstr(err.msg, "out of memory"))
			fail_msg("failure %ld: %d %s", k, rc, err.msg);
		assert_int_equal(live_bytes(), before);
		assert_true(k < 100000);
	}
	assert_true(failures > 5);
	expect_field(db, 1, "each", "[\"A:p\"]");
	strata_close(db);
	apptest_remove(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_trees),
		cmocka_unit_test(test_parse_more),
		cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_check_errors),
		cmocka_unit_test(test_chunkers),
		cmocka_unit_test(test_pack_bits),
		cmocka_unit_test(test_functions),
		cmocka_unit_test(test_feed_scripts),
		cmocka_unit_test(test_feed_nomem),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
