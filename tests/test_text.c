/*
 * test_text.c: text search's front end: the tokenizer (base/tokenize.c:
 * splitting, case folding, accent removal, English stems, whole-value
 * tokens) and the schema's text settings (rank/parse_text.c: indexing:
 * index on strings, match, stemming, normalizing, rank: filter, index:
 * enable-bm25, fieldsets), the summary setting tokens and nativeRank's
 * checks, with their errors.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "../rank/rank_syntax.h"
#include "apptest.h"

/* The tokens of text under flags, joined by '|', "text pos" checked in order. */
static void tokens(const char *text, int flags, const char *want)
{
	struct strata_error err = {0};
	struct base_tokenizer *tk;
	assert_int_equal(base_tokenizer_new(&tk, &err), 0);
	char got[1024] = "";
	size_t off = 0, n;
	const char *t;
	int pos, expect_pos = 0;
	while (base_token_next(tk, text, strlen(text), &off, flags, &t, &n, &pos) > 0) {
		assert_int_equal(pos, expect_pos++);
		assert_int_equal(strlen(t), n);
		if (got[0])
			strcat(got, "|");
		strncat(got, t, n);
	}
	base_tokenizer_free(tk);
	assert_string_equal(got, want);
}

static void test_tokenize(void **state)
{
	(void)state;
	tokens("Hello, World!", 0, "hello|world");
	tokens("  running  shoes\tfor RUNNERS ", BASE_TOKEN_TEXT, "run|shoe|for|runner");
	tokens("running shoes", BASE_TOKEN_NORMALIZE, "running|shoes");
	tokens("Café crème brûlée", BASE_TOKEN_NORMALIZE, "cafe|creme|brulee");
	tokens("Café", 0, "café");                            /* normalizing: none */
	tokens("STRAẞE Straße Œuvre Ærø", BASE_TOKEN_NORMALIZE, "straẞe|strasse|oeuvre|aero");
	tokens("Ελληνικά ΚΑΛΗΜΕΡΑ", BASE_TOKEN_NORMALIZE, "ελληνικα|καλημερα");
	tokens("Привет МИР", BASE_TOKEN_NORMALIZE, "привет|мир");
	tokens("cafe\xcc\x81 x", BASE_TOKEN_NORMALIZE, "cafe|x");       /* combining acute */
	tokens("cafe\xcc\x81", 0, "cafe\xcc\x81");
	tokens("abc123def 4.5 iPhone15", 0, "abc|123|def|4|5|iphone|15");
	tokens("a\xff" "b \xe2\x80\x94 c", 0, "a|b|c");       /* bad byte, em dash */
	tokens("東京 タワー", 0, "東京|タワー");
	tokens("", BASE_TOKEN_TEXT, "");
	tokens(" .,;- ", BASE_TOKEN_TEXT, "");
	/* match: word / exact: the whole value, folded, never split nor stemmed */
	tokens("New York-City", BASE_TOKEN_WHOLE | BASE_TOKEN_NORMALIZE, "new york-city");
	tokens("Crème", BASE_TOKEN_WHOLE, "crème");
	tokens("Crème X", BASE_TOKEN_WHOLE | BASE_TOKEN_CASED, "Crème X");
	tokens("Running", BASE_TOKEN_CASED, "Running");
	/* stems of the Snowball English stemmer */
	tokens("generously connections happiness cats ponies", BASE_TOKEN_TEXT,
	       "generous|connect|happi|cat|poni");
}

static void test_token_limits(void **state)
{
	(void)state;
	char text[BASE_TOKEN_MAX * 2 + 8];
	memset(text, 'x', sizeof text - 1);
	text[sizeof text - 1] = 0;
	struct strata_error err = {0};
	struct base_tokenizer *tk;
	assert_int_equal(base_tokenizer_new(&tk, &err), 0);
	size_t off = 0, n;
	const char *t;
	int pos;
	assert_int_equal(base_token_next(tk, text, strlen(text), &off, 0, &t, &n, &pos), 1);
	assert_int_equal(n, BASE_TOKEN_MAX);
	assert_int_equal(off, strlen(text));
	assert_int_equal(base_token_next(tk, text, strlen(text), &off, 0, &t, &n, &pos), 0);
	base_tokenizer_free(tk);
	/* allocation failure is reported */
	base_alloc_fail_after(1);
	assert_int_equal(base_tokenizer_new(&tk, &err), STRATA_NOMEM);
	base_alloc_fail_after(0);
	assert_string_equal(err.msg, "out of memory: a tokenizer");
}

static uint64_t live_bytes(void)
{
	struct base_alloc_stats st;
	base_alloc_stats(&st);
	return st.live_bytes;
}

static struct rank_sd *parse(const char *text)
{
	struct strata_error err = {0};
	struct rank_sd *sd = NULL;
	int rc = rank_sd_parse("t.sd", text, strlen(text), &sd, &err);
	if (rc)
		fail_msg("%s", err.msg);
	return sd;
}

static const struct rank_field *field(const struct rank_sd *sd, const char *name)
{
	for (int i = 0; i < sd->nfields; i++)
		if (strcmp(sd->fields[i].name, name) == 0)
			return &sd->fields[i];
	fail_msg("no field %s", name);
	return NULL;
}

static void test_text_schema(void **state)
{
	(void)state;
	uint64_t live = live_bytes();
	struct rank_sd *sd = parse(
		"schema doc {\n"
		"  document doc {\n"
		"    field title type string {\n"
		"      indexing: set_language | summary | index\n"
		"      index: enable-bm25\n"
		"    }\n"
		"    field body type string { indexing: index\n stemming: none\n normalizing: none }\n"
		"    field tag type string { indexing: attribute | summary | index\n match: word }\n"
		"    field code type string { indexing: index\n match { exact\n exact-terminator: \"@@\" } }\n"
		"    field pre type string { indexing: index\n match: prefix\n rank: filter }\n"
		"    field cs type string { indexing: index\n match { cased } index { enable-bm25 } }\n"
		"    field n type int { indexing: attribute }\n"
		"    field lang type string { indexing: \"en\" | set_language }\n"
		"  }\n"
		"  fieldset default { fields: title, body }\n"
		"  fieldset all {\n fields: title,body,tag\n query-command: \"x\"\n }\n"
		"}\n");
	const struct rank_field *f = field(sd, "title");
	assert_true(f->index && f->summary && f->bm25 && !f->attribute);
	assert_int_equal(f->match, RANK_MATCH_TEXT);
	assert_int_equal(f->stemming, RANK_STEM_BEST);
	assert_false(f->no_normalize);
	f = field(sd, "body");
	assert_true(f->index && !f->bm25 && f->no_normalize);
	assert_int_equal(f->stemming, RANK_STEM_NONE);
	f = field(sd, "tag");
	assert_true(f->index && f->attribute);
	assert_int_equal(f->match, RANK_MATCH_WORD);
	assert_int_equal(f->stemming, RANK_STEM_NONE); /* only text matching stems */
	assert_int_equal(field(sd, "code")->match, RANK_MATCH_EXACT);
	f = field(sd, "pre");
	assert_int_equal(f->match, RANK_MATCH_PREFIX);
	assert_true(f->rank_filter);
	f = field(sd, "cs");
	assert_true(f->cased && f->bm25);
	assert_false(field(sd, "n")->index);
	assert_int_equal(rank_field_token_flags(field(sd, "title")), BASE_TOKEN_TEXT);
	assert_int_equal(rank_field_token_flags(field(sd, "body")), 0);
	assert_int_equal(rank_field_token_flags(field(sd, "tag")),
	                 BASE_TOKEN_WHOLE | BASE_TOKEN_NORMALIZE);
	assert_int_equal(rank_field_token_flags(field(sd, "code")), BASE_TOKEN_WHOLE);
	assert_int_equal(rank_field_token_flags(field(sd, "pre")), BASE_TOKEN_NORMALIZE);
	assert_int_equal(rank_field_token_flags(field(sd, "cs")), BASE_TOKEN_TEXT | BASE_TOKEN_CASED);
	assert_int_equal(rank_field_token_flags(field(sd, "n")), -1);
	assert_int_equal(sd->nfieldsets, 2);
	assert_string_equal(sd->fieldsets[0].name, "default");
	assert_int_equal(sd->fieldsets[0].nfields, 2);
	assert_int_equal(sd->fieldsets[0].fields[0], 0);
	assert_int_equal(sd->fieldsets[0].fields[1], 1);
	assert_int_equal(sd->fieldsets[1].nfields, 3);
	assert_int_equal(sd->fieldsets[1].fields[2], 2);
	rank_sd_free(sd);

	/* the schema's stemming is the fields' default */
	sd = parse("schema s { document s { field a type string { indexing: index }\n"
	           " field b type string { indexing: index\n stemming: best } }\n stemming: none }");
	assert_int_equal(field(sd, "a")->stemming, RANK_STEM_NONE);
	assert_int_equal(field(sd, "b")->stemming, RANK_STEM_BEST);
	rank_sd_free(sd);
	assert_int_equal(live_bytes(), live);
}

struct bad {
	const char *text;
	int code;
	const char *msg;
};

static void test_text_schema_errors(void **state)
{
	(void)state;
	static const struct bad bads[] = {
		{"schema s { document s { field t type string { indexing: index\n match: fuzzy } } }",
		 STRATA_PARSE, "t.sd:2:9: expected a match mode, found 'fuzzy'"},
		{"schema s { document s { field t type string { indexing: index\n stemming: all } } }",
		 STRATA_PARSE, "t.sd:2:12: expected none, best, shortest or multiple, found 'all'"},
		{"schema s { document s { field t type string { indexing: index\n rank: fast } } }",
		 STRATA_PARSE, "t.sd:2:8: expected filter or normal, found 'fast'"},
		{"schema s { document s { field t type string { indexing: index\n normalizing: all } } }",
		 STRATA_PARSE, "t.sd:2:15: expected 'none', found 'all'"},
		{"schema s { document s { field t type string { indexing: index\n index: hnsw } } }",
		 STRATA_NOT_IMPLEMENTED, "t.sd:2:9: index setting 'hnsw' is not supported"},
		{"schema s { document s { field t type string { indexing: index } }\n"
		 " fieldset f { fields: t }\n fieldset f { fields: t } }",
		 STRATA_TYPE, "t.sd:3:11: fieldset 'f' is declared twice"},
		{"schema s { document s { }\n fieldset f { } }", STRATA_TYPE,
		 "t.sd:2:11: fieldset 'f' has no fields"},
		{"schema s { document s { }\n fieldset f { fields t } }", STRATA_PARSE,
		 "t.sd:2:22: expected ':' after 'fields', found 't'"},
		{"schema s { document s { field t type string { indexing: index\n match { gram-size } } } }",
		 STRATA_PARSE, "t.sd:2:20: expected ': number' after 'gram-size'"},
		{"schema s { document s { field t type string { indexing: \"en\" | exact | index } } }",
		 STRATA_NOT_IMPLEMENTED, "t.sd:1:64: indexing expression 'exact' is not supported"},
		{"schema s { document s { field t type string { indexing: index\n literal-boost: 20 } } }",
		 STRATA_NOT_IMPLEMENTED, "t.sd:2:2: field setting 'literal-boost' is not supported"},
	};
	for (size_t i = 0; i < sizeof bads / sizeof bads[0]; i++) {
		struct strata_error err = {0};
		struct rank_sd *sd = NULL;
		int rc = rank_sd_parse("t.sd", bads[i].text, strlen(bads[i].text), &sd, &err);
		if (rc != bads[i].code || strcmp(err.msg, bads[i].msg) != 0)
			fail_msg("case %zu: got %d '%s'", i, rc, err.msg);
		assert_null(sd);
	}
}

/* Every allocation of a text schema's parse fails in turn: an error, no leak. */
static void test_text_schema_alloc(void **state)
{
	(void)state;
	static const char text[] =
		"schema s { document s { field t type string { indexing: index\n match: word }\n"
		" field u type string { indexing: index } }\n fieldset default { fields: t, u } }";
	uint64_t live = live_bytes();
	int failed = 0;
	for (int n = 1;; n++) {
		struct strata_error err = {0};
		struct rank_sd *sd = NULL;
		base_alloc_fail_after(n);
		int rc = rank_sd_parse("t.sd", text, sizeof text - 1, &sd, &err);
		base_alloc_fail_after(0);
		if (rc == 0) {
			rank_sd_free(sd);
			break;
		}
		assert_int_equal(rc, STRATA_NOMEM);
		assert_non_null(strstr(err.msg, "out of memory"));
		failed++;
		assert_int_equal(live_bytes(), live);
	}
	assert_true(failed > 5);
	assert_int_equal(live_bytes(), live);
}

/* A schema of SUMMARY_SD with body (a rank profile or more) in a new app. */
#define SUMMARY_SD                                                                        \
	"schema doc {\n"                                                                     \
	"  document doc {\n"                                                                 \
	"    field title type string { indexing: summary | index }\n"                        \
	"    field note type string {\n"                                                     \
	"      indexing: summary | index\n      summary: tokens\n    }\n"                     \
	"    field n type int { indexing: summary | attribute }\n"                           \
	"  }\n"                                                                              \
	"  document-summary debug {\n"                                                       \
	"    summary title {}\n"                                                             \
	"    summary title_tokens { source: title\n tokens }\n"                             \
	"  }\n"                                                                              \
	"  document-summary more inherits debug { summary n {} }\n"

static char *summary_app(const char *body)
{
	char *dir = apptest_new("strata_text");
	char sd[2048];
	snprintf(sd, sizeof sd, SUMMARY_SD "%s}\n", body);
	apptest_write(dir, "schemas/doc.sd", sd);
	return dir;
}

static const struct rank_summary_field *class_field(const struct rank_summary_class *c,
                                                    const char *name)
{
	assert_non_null(c);
	int i = 0;
	while (i < c->nfields && strcmp(c->fields[i].name, name) != 0)
		i++;
	if (i == c->nfields)
		fail_msg("no summary field %s", name);
	return &c->fields[i];
}

static void test_summary_tokens(void **state)
{
	(void)state;
	uint64_t live = live_bytes();
	char *dir = summary_app("  rank-profile r { first-phase { expression: nativeRank(title, n) } }\n");
	struct rank_app *app = apptest_load(dir);
	const struct rank_schema *s = rank_app_schema_find(app, "doc");
	const struct rank_summary_class *c = rank_schema_summary(s, "debug");
	assert_false(class_field(c, "title")->tokens);
	assert_true(class_field(c, "title_tokens")->tokens);
	assert_int_equal(class_field(c, "title_tokens")->field, class_field(c, "title")->field);
	c = rank_schema_summary(s, "more"); /* inherited with the setting */
	assert_true(class_field(c, "title_tokens")->tokens);
	assert_false(class_field(c, "n")->tokens);
	c = rank_schema_summary(s, "default");
	assert_true(class_field(c, "note")->tokens);
	assert_false(class_field(c, "title")->tokens);
	rank_app_free(app);
	long failures = apptest_load_failures(dir);
	assert_true(failures > 10);
	apptest_remove(dir);
	assert_int_equal(live_bytes(), live);

	/* the settings' errors, each with its position */
	static const char tok_n[] = "  document-summary bad { summary x { source: n\n tokens } }\n";
	apptest_expect_load_error(summary_app(tok_n), STRATA_TYPE, "doc.sd:16:34:",
	                          "summary field 'x' shows the tokens of 'n', which has no text index");
	dir = apptest_new("strata_text");
	apptest_write(dir, "schemas/doc.sd",
	              "schema doc { document doc {\n field t type string {\n indexing: summary\n"
	              " summary: tokens } } }\n");
	apptest_expect_load_error(dir, STRATA_TYPE, "doc.sd:2:8:",
	                          "'summary: tokens' on 't', which has no text index");
	dir = apptest_new("strata_text");
	apptest_write(dir, "schemas/doc.sd",
	              "schema doc { document doc {\n field t type string {\n indexing: summary | index\n"
	              " summary { tokens } } } }\n");
	apptest_expect_load_error(dir, STRATA_NOT_IMPLEMENTED, "doc.sd:4:2:",
	                          "the summary setting 'tokens' on the field's own summary");
	static const char odd[] = "  document-summary bad { summary x { source: title\n token } }\n";
	apptest_expect_load_error(summary_app(odd), STRATA_PARSE, "doc.sd:17:2:",
	                          "expected 'source', 'full', 'tokens', 'dynamic', "
	                          "'matched-elements-only', 'bolding', 'select-elements-by' or "
	                          "'}' in summary 'x', found 'token'");
	assert_int_equal(live_bytes(), live);
}

static void test_native_rank_errors(void **state)
{
	(void)state;
	apptest_expect_load_error(
		summary_app("  rank-profile r { first-phase { expression: nativeRank(title, nosuch) } }\n"),
		STRATA_TYPE, "doc.sd:16:64:", "nativeRank(): unknown field 'nosuch'");
	apptest_expect_load_error(
		summary_app("  rank-profile r { first-phase { expression: nativeRank(title, 2) } }\n"),
		STRATA_TYPE, "doc.sd:16:", "nativeRank() takes field names");
	apptest_expect_load_error(
		summary_app("  rank-profile r { first-phase { expression: nativeRank(a,b,c,d,e,f,g,h,i,j,k,"
		            "l,m,n,o,p,q) } }\n"),
		STRATA_TYPE, "doc.sd:16:", "nativeRank() takes at most 16 fields");
	apptest_expect_load_error(
		summary_app("  rank-profile r { first-phase { expression: nativeFieldMatch(x) } }\n"),
		STRATA_TYPE, "doc.sd:16:", "nativeFieldMatch(): unknown field 'x'");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tokenize),
		cmocka_unit_test(test_token_limits),
		cmocka_unit_test(test_text_schema),
		cmocka_unit_test(test_text_schema_errors),
		cmocka_unit_test(test_text_schema_alloc),
		cmocka_unit_test(test_summary_tokens),
		cmocka_unit_test(test_native_rank_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
