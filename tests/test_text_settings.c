/*
 * test_text_settings.c: text index settings beyond plain strings: text
 * indexes on arrays and weighted sets of strings; bm25's rank properties
 * (bm25(f).k1, .b, .averageFieldLength): the values a profile gives each
 * field, inherited property by property, the defaults elsewhere; match:
 * gram and gram-size, and the tokenizer's grams against a splitter written
 * here; the errors of each, with positions; every allocation of a load made
 * to fail in turn.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../rank/rank.h"
#include "apptest.h"

#define DOC                                                                     \
	"schema doc {\n"                                                        \
	"  document doc {\n"                                                    \
	"    field title type string { indexing: index\n index: enable-bm25 }\n" \
	"    field tags type array<string> { indexing: index | summary }\n"    \
	"    field kw type weightedset<string> { indexing: index\n match: word }\n" \
	"    field n type int { indexing: attribute }\n"                        \
	"    field g type string { indexing: index\n match { gram\n gram-size: 3 } }\n" \
	"    field g2 type string { indexing: index\n match: gram }\n"              \
	"  }\n"

static char *app_of(const char *sd)
{
	char *dir = apptest_new("strata_text_settings");
	char sub[512];
	snprintf(sub, sizeof sub, "%s/schemas", dir);
	apptest_write(sub, "doc.sd", sd);
	return dir;
}

static const char *const good = DOC
	"  rank-profile p {\n"
	"    rank-properties {\n"
	"      bm25(title).k1: 0.9\n"
	"      bm25(title).b: 0.4\n"
	"      $w: 2\n"
	"      bm25(tags).averageFieldLength: 12.5\n"
	"    }\n"
	"    first-phase { expression: bm25(title) * query(w) }\n"
	"  }\n"
	"  rank-profile c inherits p {\n"
	"    rank-properties { bm25(title).b: 1 }\n"
	"  }\n"
	"}\n";

static void expect_bm25(const struct rank_profile *p, int field, double k1, double b,
                        double avgdl)
{
	struct rank_bm25 bm;
	rank_profile_bm25(p, field, &bm);
	assert_true(bm.k1 == k1);
	assert_true(bm.b == b);
	assert_true(bm.avgdl == avgdl);
}

static void test_bm25_properties(void **state)
{
	(void)state;
	char *dir = app_of(good);
	struct rank_app *app = apptest_load(dir);
	const struct rank_schema *s = rank_app_schema_find(app, "doc");
	assert_non_null(s);
	int title = rank_schema_field_index(s, "title"), tags = rank_schema_field_index(s, "tags");
	int kw = rank_schema_field_index(s, "kw");
	/* the collections have text indexes */
	assert_true(rank_field_token_flags(rank_schema_field(s, tags)) >= 0);
	assert_true(rank_field_token_flags(rank_schema_field(s, kw)) >= 0);
	assert_true(rank_field_token_flags(rank_schema_field(s, rank_schema_field_index(s, "n"))) < 0);
	/* grams: lowercased, accents removed, never stemmed; 2 by default */
	assert_int_equal(rank_field_token_flags(rank_schema_field(s, rank_schema_field_index(s, "g"))),
	                 BASE_TOKEN_GRAMS(3) | BASE_TOKEN_NORMALIZE);
	assert_int_equal(rank_field_token_flags(rank_schema_field(s, rank_schema_field_index(s, "g2"))),
	                 BASE_TOKEN_GRAMS(2) | BASE_TOKEN_NORMALIZE);
	const struct rank_profile *p = rank_profile_find(s, "p"), *c = rank_profile_find(s, "c");
	const struct rank_profile *d = rank_profile_find(s, "default");
	expect_bm25(p, title, 0.9, 0.4, 0);
	expect_bm25(p, tags, 1.2, 0.75, 12.5);
	expect_bm25(p, kw, 1.2, 0.75, 0);
	/* inherited one by one: c's own b, p's k1 and average */
	expect_bm25(c, title, 0.9, 1, 0);
	expect_bm25(c, tags, 1.2, 0.75, 12.5);
	expect_bm25(d, title, 1.2, 0.75, 0);
	expect_bm25(NULL, title, 1.2, 0.75, 0);
	rank_app_free(app);
	assert_true(apptest_load_failures(dir) > 0);
	apptest_remove(dir);
}

static void fails(const char *profile, int code, const char *where, const char *what)
{
	char sd[4096];
	snprintf(sd, sizeof sd, "%s  rank-profile p {\n    rank-properties {\n      %s\n    }\n  }\n}\n",
	         DOC, profile);
	apptest_expect_load_error(app_of(sd), code, where, what);
}

static void test_bm25_property_errors(void **state)
{
	(void)state;
	/* the property lines are line 17 of the file */
	/* bm25 of a field without a text index, or of none: accepted
	 * (test_compat.c) */
	fails("bm25(title).b: 1.5", STRATA_TYPE, "doc.sd:17:7:", "b lies in [0, 1]");
	fails("bm25(title).k1: -1", STRATA_TYPE, "doc.sd:17:7:", "k1 may not be negative");
	fails("bm25(title).averageFieldLength: 0", STRATA_TYPE, "doc.sd:17:7:",
	      "an average length is positive");
	fails("bm25(title).k2: 1", STRATA_NOT_IMPLEMENTED, "doc.sd:17:7:",
	      "bm25 takes k1, b and averageFieldLength");
	fails("bm25(title).k1: 1\n bm25(title).k1: 2", STRATA_TYPE, "doc.sd:18:2:", "given twice");
	fails("nativeRank(title).x: 1", STRATA_NOT_IMPLEMENTED, "doc.sd:17:7:",
	      "rank property 'nativeRank(title).x' is not supported");
	fails("bm25(title).k1: \"x\"", STRATA_NOT_IMPLEMENTED, "doc.sd:17:23:",
	      "only a number is supported");
}

static void test_gram_errors(void **state)
{
	(void)state;
	static const char *const bad[] = {"0", "33", "2.5", "x", "-1"}; /* numbers first */
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char sd[512];
		snprintf(sd, sizeof sd, "schema s {\n document s {\n  field t type string {\n"
		         "   indexing: index\n   match {\n    gram\n    gram-size: %s\n   }\n  }\n }\n}\n",
		         bad[i]);
		char *dir = apptest_new("strata_text_settings");
		char sub[512];
		snprintf(sub, sizeof sub, "%s/schemas", dir);
		apptest_write(sub, "s.sd", sd);
		apptest_expect_load_error(dir, i < 3 ? STRATA_TYPE : STRATA_PARSE, "s.sd:7:",
		                          i < 3 ? "gram-size must be a whole number from 1 to 32"
		                                : "expected ': number' after 'gram-size'");
	}
	char sd[] = "schema s { document s { field t type string { indexing: index\n"
	            " match: substring } } }";
	char *dir = apptest_new("strata_text_settings");
	char sub[512];
	snprintf(sub, sizeof sub, "%s/schemas", dir);
	apptest_write(sub, "s.sd", sd);
	apptest_expect_load_error(dir, STRATA_NOT_IMPLEMENTED, "s.sd:2:9:",
	                          "match: 'substring' is not supported");
}

/* The grams of text, split here: words are runs of ASCII letters or of
 * digits, lowercased; each word's grams of n characters, or the word when
 * it is no longer.  Joined with spaces. */
static void grams_of(const char *text, int n, char *out, size_t cap)
{
	size_t o = 0;
	out[0] = 0;
	for (const char *p = text; *p;) {
		int kind = (*p >= '0' && *p <= '9') ? 2 : ((*p | 32) >= 'a' && (*p | 32) <= 'z') ? 1 : 0;
		if (!kind) {
			p++;
			continue;
		}
		const char *w = p;
		while (*p && ((kind == 2 && *p >= '0' && *p <= '9') ||
		              (kind == 1 && (*p | 32) >= 'a' && (*p | 32) <= 'z')))
			p++;
		int len = (int)(p - w);
		for (int k = 0; k == 0 || k + n <= len; k++) {
			int m = len < n ? len : n;
			for (int j = 0; j < m; j++)
				out[o++] = (char)(w[k + j] | (kind == 1 ? 32 : 0));
			out[o++] = ' ';
			assert_true(o + n + 2 < cap);
		}
	}
	out[o ? o - 1 : 0] = 0;
}

static void tokenized(struct base_tokenizer *tk, const char *text, int flags, char *out,
                      size_t cap)
{
	size_t off = 0, n, o = 0;
	const char *t;
	int pos, k = 0;
	out[0] = 0;
	while (base_token_next(tk, text, strlen(text), &off, flags, &t, &n, &pos) > 0) {
		assert_int_equal(pos, k++);
		assert_true(o + n + 2 < cap);
		memcpy(out + o, t, n);
		o += n;
		out[o++] = ' ';
	}
	out[o ? o - 1 : 0] = 0;
}

static void test_grams(void **state)
{
	(void)state;
	struct strata_error err = {0};
	struct base_tokenizer *tk;
	assert_int_equal(base_tokenizer_new(&tk, &err), 0);
	char got[2048], want[2048];
	/* random ASCII texts against the splitter above, every size */
	unsigned seed = 5;
	static const char alphabet[] = "abcXYZ019 ,.-";
	for (int round = 0; round < 400; round++) {
		char text[40];
		int len = (int)(seed % 39);
		for (int i = 0; i < len; i++) {
			seed = seed * 1103515245u + 12345u;
			text[i] = alphabet[(seed >> 16) % (sizeof alphabet - 1)];
		}
		text[len] = 0;
		int n = 1 + round % 5;
		grams_of(text, n, want, sizeof want);
		tokenized(tk, text, BASE_TOKEN_GRAMS(n) | BASE_TOKEN_NORMALIZE, got, sizeof got);
		if (strcmp(got, want) != 0)
			fail_msg("'%s' in %d-grams: got '%s', want '%s'", text, n, got, want);
	}
	/* Chinese and Japanese: a run of letters is one word; accents go; no stems */
	tokenized(tk, "東京都庁の展望台", BASE_TOKEN_GRAMS(2) | BASE_TOKEN_NORMALIZE, got, sizeof got);
	assert_string_equal(got, "東京 京都 都庁 庁の の展 展望 望台");
	tokenized(tk, "東京、大阪", BASE_TOKEN_GRAMS(3) | BASE_TOKEN_NORMALIZE, got, sizeof got);
	assert_string_equal(got, "東京 大阪");
	tokenized(tk, "Écoles running", BASE_TOKEN_GRAMS(4) | BASE_TOKEN_NORMALIZE, got, sizeof got);
	assert_string_equal(got, "ecol cole oles runn unni nnin ning");
	tokenized(tk, "Écoles", BASE_TOKEN_GRAMS(4) | BASE_TOKEN_CASED, got, sizeof got);
	assert_string_equal(got, "Écol cole oles");
	/* a new text starts afresh after one left in the middle of a word */
	size_t off = 0, n;
	const char *t;
	int pos;
	assert_int_equal(base_token_next(tk, "abcdef", 6, &off, BASE_TOKEN_GRAMS(2), &t, &n, &pos), 1);
	off = 0;
	assert_int_equal(base_token_next(tk, "xyz", 3, &off, BASE_TOKEN_GRAMS(2), &t, &n, &pos), 1);
	assert_int_equal(pos, 0);
	assert_int_equal(n, 2);
	assert_memory_equal(t, "xy", 2);
	base_tokenizer_free(tk);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bm25_properties),
		cmocka_unit_test(test_bm25_property_errors),
		cmocka_unit_test(test_gram_errors),
		cmocka_unit_test(test_grams),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
