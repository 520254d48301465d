/*
 * test_json_read.c: the engine's JSON reader (engine/value/json_read.c) against
 * jansson's own parser.
 *
 * Checked: on a table of texts, valid and not (strings with every escape,
 * surrogate pairs, invalid UTF-8 of each kind, control bytes, numbers at
 * the edges of json_int_t and of double, literals, nesting at jansson's
 * depth limit, trailing bytes, duplicate keys), and on 40,000 texts made
 * by a seeded generator of JSON values and random mutations of them,
 * eng_json_parse accepts exactly what json_loadb accepts and gives a value
 * that prints the same (keys in the same order, integers and reals kept
 * apart), but for a NUL byte, which jansson sometimes skips and the reader
 * always refuses; errors carry the line and column where the text went wrong; and
 * every allocation failure gives NULL with *oom set and leaks nothing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>

#include "../engine/engine_int.h"

/* Text from json_dumps goes back to jansson's allocator. */
static void release(char *s)
{
	json_free_t f;
	json_get_alloc_funcs(NULL, &f);
	f(s);
}

/* Both parsers on the same bytes: they agree on acceptance and on the
 * value.  Returns 1 when the text was accepted. */
static int agree(const char *text, size_t n, size_t flags)
{
	json_error_t je1, je2;
	int oom = 1;
	json_t *b = eng_json_parse(text, n, flags, &je2, &oom);
	assert_int_equal(oom, 0);
	if (memchr(text, 0, n)) {
		/* jansson skips a NUL byte after a number or a literal; refused. */
		assert_null(b);
		return 0;
	}
	json_t *a = json_loadb(text, n, flags, &je1);
	if (!a != !b) {
		fprintf(stderr, "disagree on %zu bytes '%.*s': jansson %s (%s), strata %s (%s)\n", n,
		        (int)(n > 200 ? 200 : n), text, a ? "accepts" : "refuses", a ? "" : je1.text,
		        b ? "accepts" : "refuses", b ? "" : je2.text);
		fail();
	}
	if (!a)
		return 0;
	char *da = json_dumps(a, JSON_ENCODE_ANY | JSON_COMPACT);
	char *db = json_dumps(b, JSON_ENCODE_ANY | JSON_COMPACT);
	assert_non_null(da);
	assert_non_null(db);
	if (strcmp(da, db)) {
		fprintf(stderr, "values differ for '%.*s':\n  jansson %s\n  strata  %s\n",
		        (int)(n > 200 ? 200 : n), text, da, db);
		fail();
	}
	assert_true(json_equal(a, b));
	release(da);
	release(db);
	json_decref(a);
	json_decref(b);
	return 1;
}

static int agree_str(const char *text, size_t flags)
{
	return agree(text, strlen(text), flags);
}

static void table(void **state)
{
	(void)state;
	static const struct { const char *text; int ok; } cases[] = {
		{ "{}", 1 }, { "[]", 1 }, { " \t\r\n{ } \n", 1 }, { "", 0 }, { "   ", 0 },
		{ "{\"a\": 1, \"b\": [true, false, null], \"c\": {\"d\": \"e\"}}", 1 },
		{ "{\"a\": 1, \"a\": 2}", 1 },
		{ "{\"b\": 1, \"a\": 2, \"b\": 3}", 1 },
		{ "[1, 2,]", 0 }, { "{\"a\": 1,}", 0 }, { "[,]", 0 }, { "{,}", 0 },
		{ "{\"a\" 1}", 0 }, { "{a: 1}", 0 }, { "{\"a\": }", 0 }, { "[1 2]", 0 },
		{ "[1] [2]", 0 }, { "{} x", 0 }, { "[", 0 }, { "{", 0 }, { "[1", 0 },
		{ "{\"a\"", 0 }, { "{\"a\":", 0 }, { "]", 0 }, { "}", 0 },
		/* literals */
		{ "[true, false, null]", 1 }, { "[tru]", 0 }, { "[truex]", 0 }, { "[nul]", 0 },
		{ "[True]", 0 }, { "[NaN]", 0 }, { "[Infinity]", 0 }, { "[true1]", 0 },
		/* numbers */
		{ "[0, -0, 1, -1, 10, 1.5, -1.5e3, 1E3, 1e+3, 1e-3, 0.0, -0.0, 0e0]", 1 },
		{ "[01]", 0 }, { "[-01]", 0 }, { "[+1]", 0 }, { "[.5]", 0 }, { "[1.]", 0 },
		{ "[1.e3]", 0 }, { "[1e]", 0 }, { "[1e+]", 0 }, { "[-]", 0 }, { "[--1]", 0 },
		{ "[0x10]", 0 }, { "[1.5.5]", 0 }, { "[1e5e5]", 0 },
		{ "[9223372036854775807, -9223372036854775808]", 1 },
		{ "[9223372036854775808]", 0 }, { "[-9223372036854775809]", 0 },
		{ "[99999999999999999999999]", 0 }, { "[18446744073709551616]", 0 },
		{ "[1e308, -1e308, 1.7976931348623157e308, 4.9e-324, 1e-400]", 1 },
		{ "[1e309]", 0 }, { "[-1e400]", 0 },
		{ "[0.1, 0.2, 0.30000000000000004, 123456789012345678901234567890.5]", 1 },
		{ "[1.00000000000000000000000000000000000000000000000000000000000000000000000001]", 1 },
		/* strings */
		{ "[\"\"]", 1 }, { "[\"abc\"]", 1 }, { "[\"a\\\"b\\\\c\\/d\\be\\ff\\ng\\rh\\ti\"]", 1 },
		{ "[\"\\u0041\\u00e9\\u20AC\\ud83d\\ude00\"]", 1 }, { "[\"\\uD834\\uDD1E\"]", 1 },
		{ "[\"\\u0000\"]", 0 }, { "[\"\\ud800\"]", 0 }, { "[\"\\udc00\"]", 0 },
		{ "[\"\\ud800\\u0041\"]", 0 }, { "[\"\\ud800x\"]", 0 }, { "[\"\\u12\"]", 0 },
		{ "[\"\\u12g4\"]", 0 }, { "[\"\\x\"]", 0 }, { "[\"\\'\"]", 0 }, { "[\"\\", 0 },
		{ "[\"abc]", 0 }, { "[\"a\tb\"]", 0 }, { "[\"a\nb\"]", 0 }, { "[\"\x1f\"]", 0 },
		{ "[\"\x7f\"]", 1 }, { "[\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"]", 1 },
		{ "[\"\xc3\"]", 0 }, { "[\"\xc0\x80\"]", 0 }, { "[\"\xc1\xbf\"]", 0 },
		{ "[\"\xe0\x80\x80\"]", 0 }, { "[\"\xed\xa0\x80\"]", 0 }, { "[\"\xf4\x90\x80\x80\"]", 0 },
		{ "[\"\xf5\x80\x80\x80\"]", 0 }, { "[\"\xff\"]", 0 }, { "[\"\x80\"]", 0 },
		{ "[\"\xe2\x82\"]", 0 }, { "[\"\xf0\x9f\x98\"]", 0 }, { "[\"\xe2\x28\xa1\"]", 0 },
		{ "[\"a long string that runs past eight bytes \\n with an escape in the middle "
		  "and \xc3\xa9 after it\"]", 1 },
		{ "{\"k\\u00e9y\": 1, \"k\\u00e9y\": 2, \"plain\": {\"k\\n\": [\"\\t\"]}}", 1 },
		{ "{\"\\u0000\": 1}", 0 }, { "{\"\": 1}", 1 }, { "{1: 2}", 0 },
		{ "\xef\xbb\xbf{}", 0 }, { "{}\xff", 0 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		int ok = agree_str(cases[i].text, 0);
		if (ok != cases[i].ok)
			fprintf(stderr, "case %zu '%s': accepted %d\n", i, cases[i].text, ok);
		assert_int_equal(ok, cases[i].ok);
	}
	/* Texts with a NUL byte, which strlen would cut. */
	assert_int_equal(agree("[\"a\0b\"]", 7, 0), 0);
	assert_int_equal(agree("[1]\0", 4, 0), 0);
	assert_int_equal(agree("[1\0]", 4, 0), 0);
}

static void scalars_at_the_top(void **state)
{
	(void)state;
	static const char *texts[] = { "1", "-2.5", "\"s\"", "true", "null", " 7 ", "\"\\u00e9\"" };
	for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
		assert_int_equal(agree_str(texts[i], 0), 0);
		assert_int_equal(agree_str(texts[i], JSON_DECODE_ANY), 1);
	}
	assert_int_equal(agree_str("1 2", JSON_DECODE_ANY), 0);
	assert_int_equal(agree_str("", JSON_DECODE_ANY), 0);
}

/* n arrays, one inside the other, around inner (may be ""). */
static char *nested(int n, const char *inner)
{
	size_t k = strlen(inner);
	char *s = malloc(2 * (size_t)n + k + 1);
	assert_non_null(s);
	memset(s, '[', (size_t)n);
	memcpy(s + n, inner, k);
	memset(s + n + k, ']', (size_t)n);
	s[2 * (size_t)n + k] = 0;
	return s;
}

static void depth_limit(void **state)
{
	(void)state;
	static const struct { int n; const char *inner; } cases[] = {
		{ JSON_PARSER_MAX_DEPTH - 1, "1" }, { JSON_PARSER_MAX_DEPTH, "" },
		{ JSON_PARSER_MAX_DEPTH, "1" }, { JSON_PARSER_MAX_DEPTH + 1, "" },
		{ JSON_PARSER_MAX_DEPTH - 1, "{\"a\": 1}" }, { JSON_PARSER_MAX_DEPTH - 1, "{}" },
		{ 100000, "" },
	};
	int accepted = 0;
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char *s = nested(cases[i].n, cases[i].inner);
		accepted += agree_str(s, 0);
		free(s);
	}
	assert_int_equal(accepted, 3);
}

/* ---- generated texts ----------------------------------------------------------- */

struct gen {
	uint64_t seed;
	char *s;
	size_t n, cap;
};

static uint32_t rnd(struct gen *g, uint32_t m)
{
	g->seed = g->seed * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(g->seed >> 33) % m;
}

static void put(struct gen *g, const char *s, size_t k)
{
	if (g->n + k + 1 > g->cap) {
		g->cap = (g->n + k + 1) * 2;
		g->s = realloc(g->s, g->cap);
		assert_non_null(g->s);
	}
	memcpy(g->s + g->n, s, k);
	g->n += k;
	g->s[g->n] = 0;
}

static void puts_(struct gen *g, const char *s)
{
	put(g, s, strlen(s));
}

static void space(struct gen *g)
{
	static const char *ws[] = { "", "", "", " ", "\n", "\t", "\r\n  " };
	puts_(g, ws[rnd(g, 7)]);
}

static void gen_string(struct gen *g)
{
	static const char *pieces[] = {
		"a", "body", "x y z", "0123456789abcdef", "\\n", "\\\"", "\\\\", "\\/", "\\b", "\\f",
		"\\r", "\\t", "\\u0041", "\\u00e9", "\\uFFFF", "\\ud83d\\ude00", "\\ud800", "\\udfff",
		"\\u0000", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xc3", "\xed\xa0\x80",
		"\x7f", "\x01", "\t", "loviwyce kofabasa salofaxo ", "\\x", "\\u12",
	};
	put(g, "\"", 1);
	int k = (int)rnd(g, 6);
	for (int i = 0; i < k; i++)
		puts_(g, pieces[rnd(g, sizeof pieces / sizeof *pieces)]);
	put(g, "\"", 1);
}

static void gen_number(struct gen *g)
{
	static const char *nums[] = {
		"0", "-0", "7", "-42", "1.5", "-0.25", "1e3", "2E-7", "1e+30", "123456789012",
		"9223372036854775807", "-9223372036854775808", "9223372036854775808", "1e308",
		"1e309", "5e-324", "3.141592653589793", "01", "1.", ".5", "-", "1e", "0.1e1",
	};
	puts_(g, nums[rnd(g, sizeof nums / sizeof *nums)]);
}

static void gen_value(struct gen *g, int depth)
{
	uint32_t kind = rnd(g, depth > 4 ? 5 : 7);
	space(g);
	switch (kind) {
	case 0: gen_string(g); break;
	case 1: gen_number(g); break;
	case 2: puts_(g, "true"); break;
	case 3: puts_(g, rnd(g, 2) ? "false" : "null"); break;
	case 4: gen_string(g); break;
	case 5: {
		int k = (int)rnd(g, 5);
		put(g, "[", 1);
		for (int i = 0; i < k; i++) {
			if (i)
				put(g, ",", 1);
			gen_value(g, depth + 1);
		}
		space(g);
		put(g, "]", 1);
		break;
	}
	default: {
		int k = (int)rnd(g, 5);
		put(g, "{", 1);
		for (int i = 0; i < k; i++) {
			if (i)
				put(g, ",", 1);
			space(g);
			if (rnd(g, 3))
				puts_(g, rnd(g, 2) ? "\"a\"" : "\"b\"");
			else
				gen_string(g);
			space(g);
			put(g, ":", 1);
			gen_value(g, depth + 1);
		}
		space(g);
		put(g, "}", 1);
		break;
	}
	}
	space(g);
}

static void mutate(struct gen *g)
{
	static const char bytes[] = "{}[],:\"\\ 0-.eE+atfnu\x80\xc3\xff\x00\n";
	int k = (int)rnd(g, 3);
	for (int i = 0; i < k && g->n; i++) {
		size_t at = rnd(g, (uint32_t)g->n);
		char c = bytes[rnd(g, sizeof bytes - 1)];
		switch (rnd(g, 3)) {
		case 0: /* replace */
			g->s[at] = c;
			break;
		case 1: /* delete */
			memmove(g->s + at, g->s + at + 1, g->n - at - 1);
			g->n--;
			break;
		default: /* insert */
			put(g, " ", 1);
			memmove(g->s + at + 1, g->s + at, g->n - at - 1);
			g->s[at] = c;
			break;
		}
	}
}

static void generated(void **state)
{
	(void)state;
	struct gen g = { .seed = 20261126 };
	int accepted = 0, total = 40000;
	for (int i = 0; i < total; i++) {
		g.n = 0;
		if (rnd(&g, 2))
			gen_value(&g, 0);
		else if (rnd(&g, 2)) {
			puts_(&g, "[");
			gen_value(&g, 1);
			puts_(&g, "]");
		} else {
			puts_(&g, "{\"k\":");
			gen_value(&g, 1);
			puts_(&g, "}");
		}
		if (rnd(&g, 3) == 0)
			mutate(&g);
		accepted += agree(g.s, g.n, rnd(&g, 2) ? JSON_DECODE_ANY : 0);
	}
	free(g.s);
	/* Both kinds are well represented. */
	assert_true(accepted > total / 10);
	assert_true(accepted < total * 9 / 10);
}

/* ---- errors -------------------------------------------------------------------- */

static void error_positions(void **state)
{
	(void)state;
	static const struct { const char *text; int line, column; const char *says; } cases[] = {
		{ "{\n  \"a\": tru\n}", 2, 8, "unknown word 'tru'" },
		{ "{\"a\": 1,\n \"b\" 2}", 2, 6, "':' expected" },
		{ "[1, 2,\n\n  ]", 3, 3, "a value expected, found ']'" },
		{ "[1, nul]", 1, 5, "unknown word 'nul'" },
		{ "[1, *]", 1, 5, "a value expected, found '*'" },
		{ "[\"abc", 1, 2, "not closed" },
		{ "[\"ab\\qc\"]", 1, 5, "invalid escape" },
		{ "[\"a\xc3(\"]", 1, 4, "UTF-8" },
		{ "{\"a\": 99999999999999999999}", 1, 7, "out of range" },
		{ "[1] x", 1, 5, "end of input expected" },
		{ "\"x\"", 1, 1, "'{' or '['" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		json_error_t je;
		int oom = 1;
		json_t *v = eng_json_parse(cases[i].text, strlen(cases[i].text), 0, &je, &oom);
		assert_null(v);
		assert_int_equal(oom, 0);
		if (je.line != cases[i].line || je.column != cases[i].column ||
		    !strstr(je.text, cases[i].says))
			fprintf(stderr, "case %zu: %d:%d %s\n", i, je.line, je.column, je.text);
		assert_int_equal(je.line, cases[i].line);
		assert_int_equal(je.column, cases[i].column);
		assert_non_null(strstr(je.text, cases[i].says));
	}
}

static void out_of_memory(void **state)
{
	(void)state;
	const char *text = "{\"put\": \"id:a:b::1\", \"fields\": {\"body\": \"some words \\u00e9\","
	                   " \"n\": [1, 2.5, -3e4, true, null, {\"k\\n\": \"v\"}], \"k\\t\": {}},"
	                   " \"long\": \"12345678901234567890123456789012345678901234567890\"}";
	struct base_alloc_stats before, after;
	int done = 0;
	for (long n = 1; n < 10000 && !done; n++) {
		json_error_t je;
		int oom = 0;
		base_alloc_stats(&before);
		base_alloc_fail_after(n);
		json_t *v = eng_json_parse(text, strlen(text), 0, &je, &oom);
		base_alloc_fail_after(0);
		if (v) {
			assert_int_equal(oom, 0);
			done = 1;
			json_decref(v);
		} else
			assert_int_equal(oom, 1);
		base_alloc_stats(&after);
		assert_int_equal(after.live_bytes, before.live_bytes);
	}
	assert_true(done);
}

int main(void)
{
	eng_json_init(); /* jansson through the one allocator, as in the library */
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(table),
		cmocka_unit_test(scalars_at_the_top),
		cmocka_unit_test(depth_limit),
		cmocka_unit_test(generated),
		cmocka_unit_test(error_positions),
		cmocka_unit_test(out_of_memory),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
