/*
 * test_feed_file.c: feeds of whole files, JSON Lines and one JSON array,
 * of thousands of operations with faults among them (engine/feed.c); a
 * file of a megabyte or more has its operations parsed on a second thread
 * ahead of the writer (engine/feed_ahead.c), a smaller one on the writer's.
 *
 * Checked, for both forms: every failed operation (JSON that does not
 * parse, a field of the wrong type, an unknown document type) is reported
 * with its line, in the order of the file, and counted; every other one is
 * stored with the text it was fed with, and its words find it (the text
 * index against the bodies fed, word by word); blank lines are skipped but counted
 * in line numbers; the progress callback sees the bytes done grow to the
 * file's size; a fault in the array's own frame is reported with its line
 * after every element before it was applied; a small file gives the same
 * reports as a large one; and an allocation failure on either thread
 * fails an operation or a batch, which is counted, the ok count
 * being exactly what was stored.
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

#include "dbtest.h"

#define NOPS 6000 /* about 2.2 MB of operations: parsed ahead */
#define MAXREP 64

static const char *sd =
	"schema note {\n"
	"  document note {\n"
	"    field body type string { indexing: index | summary }\n"
	"    field n type int { indexing: attribute | summary }\n"
	"  }\n"
	"}\n";

struct reports {
	int n;
	long lines[MAXREP];
	int codes[MAXREP];
	char msgs[MAXREP][200];
	long long last_done, total;
	int progress_calls, went_back;
};

static void on_report(void *ud, long line, int code, const char *msg)
{
	struct reports *r = ud;
	if (r->n < MAXREP) {
		r->lines[r->n] = line;
		r->codes[r->n] = code;
		snprintf(r->msgs[r->n], sizeof r->msgs[0], "%s", msg);
	}
	r->n++;
}

static void on_progress(void *ud, const struct strata_feed_stats *st)
{
	struct reports *r = ud;
	r->progress_calls++;
	if (st->bytes_done < r->last_done)
		r->went_back = 1;
	r->last_done = st->bytes_done;
	r->total = st->bytes_total;
}

/* Word k of a small vocabulary: three letters. */
static void word(char w[4], int k)
{
	w[0] = (char)('a' + k % 26);
	w[1] = (char)('a' + k / 26 % 26);
	w[2] = (char)('q' + k % 7);
	w[3] = 0;
}

/* Operation i's body: 80 words that depend on i, about 320 bytes. */
static void body(char *b, size_t cap, int i)
{
	size_t o = 0;
	char w[4];
	for (int k = 0; k < 80 && o + 8 < cap; k++) {
		word(w, (i * 7 + k * k) % 211);
		o += (size_t)snprintf(b + o, cap - o, "%s%s", k ? " " : "", w);
	}
}

/* Whether word w is one of the words of text b. */
static int has_word(const char *b, const char *w)
{
	size_t n = strlen(w);
	for (const char *p = strstr(b, w); p; p = strstr(p + 1, w))
		if ((p == b || p[-1] == ' ') && (p[n] == ' ' || !p[n]))
			return 1;
	return 0;
}

/* What goes wrong with operation i, if anything. */
enum fault { OK, BAD_JSON, BAD_TYPE, BAD_DOCTYPE };

static enum fault fault_of(int i)
{
	if (i % 997 == 13)
		return BAD_JSON;
	if (i % 1499 == 700)
		return BAD_TYPE;
	if (i == NOPS - 2)
		return BAD_DOCTYPE;
	return OK;
}

/* Write the operations, one a line (array 0) or as a JSON array with each
 * element over two lines (array 1); a blank line after every 1000th.
 * wanted[] gets the line of each failing operation, in order; returns their
 * number. */
static int write_feed(const char *path, int nops, int array, long *wanted, int *codes)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	long line = 1;
	int nw = 0;
	if (array) {
		fputs("[\n", f);
		line++;
	}
	char b[1024];
	for (int i = 0; i < nops; i++) {
		body(b, sizeof b, i);
		enum fault k = fault_of(i);
		const char *sep = array ? (i + 1 < nops ? ",\n" : "\n") : "\n";
		const char *mid = array ? "\n  " : " ";
		if (k == BAD_JSON) /* a value missing: the array's frame stays whole */
			fprintf(f, "{\"put\": \"id:note:note::%d\",%s\"fields\": {\"body\": \"%s\", \"n\": }}%s",
			        i, mid, b, sep);
		else if (k == BAD_TYPE)
			fprintf(f, "{\"put\": \"id:note:note::%d\",%s\"fields\": {\"body\": \"%s\", \"n\": "
			        "\"seven\"}}%s", i, mid, b, sep);
		else
			fprintf(f, "{\"put\": \"id:%s:%s::%d\",%s\"fields\": {\"body\": \"%s\", \"n\": %d}}%s",
			        k == BAD_DOCTYPE ? "x" : "note", k == BAD_DOCTYPE ? "nosuch" : "note", i, mid, b,
			        i, sep);
		if (k != OK) {
			wanted[nw] = line;
			codes[nw++] = k == BAD_JSON ? STRATA_PARSE : STRATA_INVALID_ARGUMENT;
		}
		line += array ? 2 : 1;
		if (!array && i % 1000 == 999) {
			fputs("\n", f);
			line++;
		}
	}
	if (array)
		fputs("]\n", f);
	fclose(f);
	return nw;
}

static int failing(int nops)
{
	int n = 0;
	for (int i = 0; i < nops; i++)
		n += fault_of(i) != OK;
	return n;
}

/* The text index agrees with the bodies fed: for a few words, the
 * documents that contain them are the good operations whose body has them. */
static void check_index(struct strata *db, int nops)
{
	char b[1024], w[4], req[256];
	for (int k = 0; k < 211; k += 23) {
		word(w, k);
		long want = 0;
		for (int i = 0; i < nops; i++) {
			body(b, sizeof b, i);
			want += fault_of(i) == OK && has_word(b, w);
		}
		snprintf(req, sizeof req, "{\"yql\": \"select * from note where body contains '%s'\", "
		         "\"hits\": 0}", w);
		json_t *r = dbtest_query(db, req);
		json_t *total = json_object_get(json_object_get(json_object_get(r, "root"), "fields"),
		                                "totalCount");
		if (json_integer_value(total) != want)
			fprintf(stderr, "word %s: %lld documents, wanted %ld\n", w,
			        (long long)json_integer_value(total), want);
		assert_int_equal(json_integer_value(total), want);
		assert_true(want > 0);
		json_decref(r);
	}
}

static void feed_and_check(int nops, int array)
{
	struct strata *db;
	char *app = dbtest_open("feedfile", "note.sd", sd, &db);
	char path[512];
	snprintf(path, sizeof path, "%s/feed.jsonl", app);
	long wanted[MAXREP];
	int codes[MAXREP];
	int nw = write_feed(path, nops, array, wanted, codes);
	assert_int_equal(nw, failing(nops));
	struct reports r = { 0 };
	struct strata_feed_stats st;
	struct strata_error err = { 0 };
	int rc = strata_feed_file_progress(db, path, on_report, on_progress, &r, &st, &err);
	assert_int_equal(rc, STRATA_INVALID_ARGUMENT);
	assert_int_equal(st.ok, nops - nw);
	assert_int_equal(st.failed, nw);
	assert_int_equal(r.n, nw);
	for (int i = 0; i < nw; i++) {
		if (r.lines[i] != wanted[i] || r.codes[i] != codes[i])
			fprintf(stderr, "report %d: line %ld code %d (%s); wanted line %ld code %d\n", i,
			        r.lines[i], r.codes[i], r.msgs[i], wanted[i], codes[i]);
		assert_int_equal(r.lines[i], wanted[i]);
		assert_int_equal(r.codes[i], codes[i]);
	}
	assert_true(r.progress_calls > 0);
	assert_false(r.went_back);
	assert_int_equal(r.last_done, r.total);
	/* Every good operation is there with its own text. */
	char b[1024], id[64];
	for (int i = 0; i < nops; i++) {
		char *doc = NULL;
		snprintf(id, sizeof id, "id:note:note::%d", i);
		rc = strata_get_json(db, id, &doc, &err);
		if (fault_of(i) != OK) {
			assert_int_equal(rc, STRATA_NOT_FOUND);
			continue;
		}
		assert_int_equal(rc, 0);
		body(b, sizeof b, i);
		assert_non_null(strstr(doc, b));
		strata_free(doc);
	}
	check_index(db, nops);
	strata_close(db);
	apptest_remove(app);
}

static void lines(void **state)
{
	(void)state;
	feed_and_check(NOPS, 0);
}

static void array(void **state)
{
	(void)state;
	feed_and_check(NOPS, 1);
}

static void small_file(void **state)
{
	(void)state;
	feed_and_check(1400, 0); /* about 0.5 MB: parsed by the writer */
	feed_and_check(1400, 1);
}

static void array_frame_fault(void **state)
{
	(void)state;
	struct strata *db;
	char *app = dbtest_open("feedframe", "note.sd", sd, &db);
	char path[512];
	snprintf(path, sizeof path, "%s/feed.json", app);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	char b[1024];
	fputs("[", f);
	for (int i = 0; i < NOPS; i++) {
		body(b, sizeof b, i);
		fprintf(f, "%s{\"put\": \"id:note:note::%d\", \"fields\": {\"body\": \"%s\"}}\n",
		        i ? "," : "", i, b);
	}
	fputs("] trailing\n", f);
	fclose(f);
	struct strata_feed_stats st;
	struct strata_error err = { 0 };
	assert_int_equal(strata_feed_file(db, path, NULL, NULL, &st, &err), STRATA_PARSE);
	assert_non_null(strstr(err.msg, "text after the JSON array"));
	char want[64];
	snprintf(want, sizeof want, "line %d, column 3:", NOPS + 1);
	assert_non_null(strstr(err.msg, want));
	assert_int_equal(st.ok, NOPS);
	char *doc = NULL;
	assert_int_equal(strata_get_json(db, "id:note:note::5999", &doc, &err), 0);
	strata_free(doc);
	strata_close(db);
	apptest_remove(app);
}

/* Documents of ids 0..nops-1 in db. */
static long stored(struct strata *db, int nops)
{
	long n = 0;
	char id[64];
	for (int i = 0; i < nops; i++) {
		char *doc = NULL;
		struct strata_error err = { 0 };
		snprintf(id, sizeof id, "id:note:note::%d", i);
		if (strata_get_json(db, id, &doc, &err) == 0)
			n++;
		strata_free(doc);
	}
	return n;
}

static void allocation_failures(void **state)
{
	(void)state;
	int saw_nomem = 0, fed = 0;
	for (long k = 1; k < 2000000; k = k * 3 + 7) {
		struct strata *db;
		char *app = dbtest_open("feedoom", "note.sd", sd, &db);
		char path[512];
		snprintf(path, sizeof path, "%s/feed.jsonl", app);
		long wanted[MAXREP];
		int codes[MAXREP];
		int nw = write_feed(path, 3000, 0, wanted, codes);
		struct reports r = { 0 };
		struct strata_feed_stats st;
		struct strata_error err = { 0 };
		base_alloc_fail_after(k);
		int rc = strata_feed_file(db, path, on_report, &r, &st, &err);
		base_alloc_fail_after(0);
		/* Each operation is counted at most once, all of them unless the
		 * feed stopped; the ok count is exactly what was stored. */
		assert_true(st.ok + st.failed <= 3000);
		if (rc != STRATA_NOMEM)
			assert_int_equal(st.ok + st.failed, 3000);
		assert_int_equal(stored(db, 3000), st.ok);
		for (int i = 0; i < r.n && i < MAXREP; i++)
			saw_nomem |= r.codes[i] == STRATA_NOMEM;
		saw_nomem |= rc == STRATA_NOMEM;
		fed |= st.ok == 3000 - nw;
		strata_close(db);
		apptest_remove(app);
	}
	assert_true(saw_nomem);
	assert_true(fed); /* a failure after the feed's last allocation: all stored */
}

/* ---- Vespa's value forms: numbers as strings, hex cells ------------------------------ */

static const char *vsd =
	"schema v {\n"
	"  document v {\n"
	"    struct pt { field n type int {} }\n"
	"    field b type byte { indexing: attribute | summary }\n"
	"    field i type int { indexing: attribute | summary }\n"
	"    field l type long { indexing: attribute | summary }\n"
	"    field f type float { indexing: attribute | summary }\n"
	"    field d type double { indexing: attribute | summary }\n"
	"    field ok type bool { indexing: attribute | summary }\n"
	"    field ai type array<int> { indexing: summary }\n"
	"    field ws type weightedset<long> { indexing: summary }\n"
	"    field md type map<string, double> { indexing: summary }\n"
	"    field s type pt { indexing: summary }\n"
	"    field e type tensor<float>(x[4]) { indexing: attribute | summary }\n"
	"    field q type tensor<int8>(x[2]) { indexing: attribute | summary }\n"
	"    field m type tensor<float>(p{},x[2]) { indexing: attribute | summary }\n"
	"  }\n"
	"}\n";

static void feed_fails_keeps(struct strata *db, const char *fields, const char *msg,
                             const char *kept)
{
	char op[1024];
	snprintf(op, sizeof op, "{\"put\": \"id:v:v::1\", \"fields\": {%s}}", fields);
	dbtest_feed_fails(db, op, STRATA_INVALID_ARGUMENT, msg);
	dbtest_expect_fields(db, "id:v:v::1", 0, kept); /* the stored document is whole */
}

static void numbers_as_strings(void **state)
{
	(void)state;
	struct strata *db;
	char *app = dbtest_open("feedvals", "v.sd", vsd, &db);
	dbtest_feed_json(db, "{\"put\": \"id:v:v::1\", \"fields\": {\"b\": \"-7\", \"i\": \"1000\", "
	                     "\"l\": \"+9007199254740993\", \"f\": \" 2.5f \", \"d\": \"-1e-3\", "
	                     "\"ok\": \"true\", \"ai\": [\"1\", 2, \"-3\"], \"ws\": {\"7\": \"5\"}, "
	                     "\"md\": {\"k\": \"0.25\"}, \"s\": {\"n\": \"42\"}, "
	                     "\"e\": [\"1\", \"0.5\", 2, \"-Infinity\"]}}");
	const char *want = "{\"ai\":[1,2,-3],\"b\":-7,\"d\":-0.001,"
	                   "\"e\":{\"type\":\"tensor<float>(x[4])\",\"values\":[1.0,0.5,2.0,null]},"
	                   "\"f\":2.5,\"i\":1000,\"l\":9007199254740993,\"md\":{\"k\":0.25},"
	                   "\"ok\":true,\"s\":{\"n\":42},\"ws\":{\"7\":5}}";
	dbtest_expect_fields(db, "id:v:v::1", 0, want);
	/* Updates take them too. */
	dbtest_feed_json(db, "{\"update\": \"id:v:v::2\", \"create\": true, \"fields\": {"
	                     "\"i\": {\"assign\": \"-12\"}, \"d\": {\"assign\": \"0x1.8p1\"}, "
	                     "\"ws\": {\"add\": {\"3\": \"2\"}}}}");
	dbtest_expect_fields(db, "id:v:v::2", 0, "{\"d\":3.0,\"i\":-12,\"ws\":{\"3\":2}}");
	dbtest_feed_json(db, "{\"update\": \"id:v:v::2\", \"fields\": {"
	                     "\"ws\": {\"match\": {\"element\": \"3\", \"increment\": \"4\"}}}}");
	dbtest_expect_fields(db, "id:v:v::2", 0, "{\"d\":3.0,\"i\":-12,\"ws\":{\"3\":6}}");
	/* A string that is not a number of the field's type: refused with the
	 * field and the value; the document stays as it was. */
	feed_fails_keeps(db, "\"i\": \"12x\"", "field 'i': expected an integer (int), got '12x'", want);
	feed_fails_keeps(db, "\"i\": \"1.5\"", "field 'i': expected an integer (int), got '1.5'", want);
	feed_fails_keeps(db, "\"i\": \" 7\"", "field 'i': expected an integer (int), got ' 7'", want);
	feed_fails_keeps(db, "\"i\": \"2147483648\"", "field 'i': '2147483648' is out of range for int",
	                 want);
	feed_fails_keeps(db, "\"l\": \"9223372036854775808\"",
	                 "field 'l': '9223372036854775808' is out of range for long", want);
	feed_fails_keeps(db, "\"b\": \"128\"", "field 'b': '128' is out of range for byte", want);
	feed_fails_keeps(db, "\"b\": \"0x10\"", "field 'b': expected an integer (byte), got '0x10'",
	                 want);
	feed_fails_keeps(db, "\"d\": \"abc\"", "field 'd': expected a number (double), got 'abc'",
	                 want);
	feed_fails_keeps(db, "\"d\": \"\"", "field 'd': expected a number (double), got ''", want);
	feed_fails_keeps(db, "\"d\": \"1e\"", "got '1e'", want);
	feed_fails_keeps(db, "\"f\": \"1e39\"", "field 'f': '1e39' is out of range for float", want);
	feed_fails_keeps(db, "\"ok\": \"yes\"", "field 'ok': expected true or false", want);
	feed_fails_keeps(db, "\"ai\": [1, \"two\"]",
	                 "field 'ai'[1]: expected an integer that fits int, got 'two'", want);
	feed_fails_keeps(db, "\"ws\": {\"x\": 1}", "field 'ws'{x}: expected an integer that fits long",
	                 want);
	feed_fails_keeps(db, "\"ws\": {\"7\": \"heavy\"}", "field 'ws'{7}: a weight must be an integer",
	                 want);
	feed_fails_keeps(db, "\"md\": {\"k\": \"1,5\"}", "field 'md'{k}: expected a number, got '1,5'",
	                 want);
	feed_fails_keeps(db, "\"s\": {\"n\": \"n\"}", "field 's'.n: expected an integer that fits int",
	                 want);
	feed_fails_keeps(db, "\"e\": [1, 2, 3, \"four\"]", "field 'e': cell 3 is not a number: 'four'",
	                 want);
	dbtest_feed_fails(db, "{\"update\": \"id:v:v::1\", \"fields\": {\"i\": {\"assign\": \"x\"}}}",
	                  STRATA_INVALID_ARGUMENT, "field 'i': expected an integer (int), got 'x'");
	dbtest_expect_fields(db, "id:v:v::1", 0, want);
	strata_close(db);
	apptest_remove(app);
}

static void hex_cells(void **state)
{
	(void)state;
	struct strata *db;
	char *app = dbtest_open("feedhex", "v.sd", vsd, &db);
	/* float bits (1, 2, -1, 0.5), any case; int8 bits; a mixed tensor's
	 * block in hex, in both blocks forms. */
	dbtest_feed_json(db, "{\"put\": \"id:v:v::1\", \"fields\": {"
	                     "\"e\": \"3F80000040000000bf8000003f000000\", \"q\": \"ff01\", "
	                     "\"m\": {\"blocks\": {\"a\": \"3f80000040000000\"}}}}");
	const char *want = "{\"e\":{\"type\":\"tensor<float>(x[4])\",\"values\":[1.0,2.0,-1.0,0.5]},"
	                   "\"m\":{\"blocks\":{\"a\":[1.0,2.0]},\"type\":\"tensor<float>(p{},x[2])\"},"
	                   "\"q\":{\"type\":\"tensor<int8>(x[2])\",\"values\":[-1,1]}}";
	dbtest_expect_fields(db, "id:v:v::1", 0, want);
	/* "values" in hex; double, bfloat16 and int8 hex into float cells. */
	static const struct {
		const char *e, *values;
	} ok[] = {
		{"{\"values\": \"3ff0000000000000c00000000000000000000000000000004020000000000000\"}",
		 "[1.0,-2.0,0.0,8.0]"},
		{"\"3f804000bf803f00\"", "[1.0,2.0,-1.0,0.5]"},
		{"\"01ff7f80\"", "[1.0,-1.0,127.0,-128.0]"},
	};
	for (size_t k = 0; k < sizeof ok / sizeof ok[0]; k++) {
		char op[512], w[256];
		snprintf(op, sizeof op, "{\"put\": \"id:v:v::2\", \"fields\": {\"e\": %s, "
		         "\"m\": {\"blocks\": [{\"address\": {\"p\": \"b\"}, \"values\": \"3f000000bf000000\"}]}}}",
		         ok[k].e);
		dbtest_feed_json(db, op);
		snprintf(w, sizeof w, "{\"e\":{\"type\":\"tensor<float>(x[4])\",\"values\":%s},"
		         "\"m\":{\"blocks\":{\"b\":[0.5,-0.5]},\"type\":\"tensor<float>(p{},x[2])\"}}",
		         ok[k].values);
		dbtest_expect_fields(db, "id:v:v::2", 0, w);
	}
	/* Refused with a clear message, the stored document left whole. */
	feed_fails_keeps(db, "\"e\": \"3f80000040000000bf8000003f0000\"",
	                 "field 'e': 30 hex digits for 4 cells; expected 32 (8 a cell of float; or 2, "
	                 "4, 8 or 16 a cell", want);
	feed_fails_keeps(db, "\"e\": \"3f80000040000000bf8000003f00000000\"",
	                 "field 'e': 34 hex digits for 4 cells", want);
	feed_fails_keeps(db, "\"e\": \"3f80000040000000bf8000003f00000\"",
	                 "field 'e': 31 hex digits for 4 cells", want);
	feed_fails_keeps(db, "\"e\": \"\"", "field 'e': 0 hex digits for 4 cells", want);
	feed_fails_keeps(db, "\"e\": \"3f80000040000000bf8000003f00000g\"",
	                 "field 'e': expected a tensor or its cells in hex, got a string whose "
	                 "character 32 ('g') is not a hex digit", want);
	feed_fails_keeps(db, "\"q\": \"3f80000040000000\"",
	                 "field 'q': 16 hex digits for 2 cells; expected 4 (2 a cell of int8)", want);
	feed_fails_keeps(db, "\"m\": {\"blocks\": {\"a\": \"3f8\"}}",
	                 "field 'm': block 'a': 3 hex digits for 2 cells", want);
	feed_fails_keeps(db, "\"m\": {\"blocks\": [{\"address\": {\"p\": \"a\"}, \"values\": \"zz\"}]}",
	                 "field 'm': block 'a': expected a tensor or its cells in hex, got a string", want);
	strata_close(db);
	apptest_remove(app);
}

/* ---- the forms of a feed file ---------------------------------------------------- */

/* Feed text as a file of db: the reports in *r, the counts in *st. */
static int feed_text_file(struct strata *db, const char *app, const char *text,
                          struct reports *r, struct strata_feed_stats *st)
{
	char path[512];
	snprintf(path, sizeof path, "%s/forms.json", app);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	memset(r, 0, sizeof *r);
	struct strata_error err = { 0 };
	return strata_feed_file(db, path, on_report, r, st, &err);
}

static void file_forms(void **state)
{
	(void)state;
	struct strata *db;
	char *app = dbtest_open("feedforms", "note.sd", sd, &db);
	struct reports r;
	struct strata_feed_stats st;
	/* One operation pretty-printed over many lines. */
	assert_int_equal(feed_text_file(db, app,
	                                "\n{\n  \"put\": \"id:note:note::1\",\n  \"fields\": {\n"
	                                "    \"body\": \"one two\",\n    \"n\": \"1\"\n  }\n}\n",
	                                &r, &st), 0);
	assert_int_equal(st.ok, 1);
	assert_int_equal(r.n, 0);
	dbtest_expect_fields(db, "id:note:note::1", 0, "{\"body\":\"one two\",\"n\":1}");
	/* A bad one: one report, where the JSON goes wrong; nothing stored lost. */
	assert_int_equal(feed_text_file(db, app,
	                                "{\n  \"put\": \"id:note:note::1\",\n  \"fields\": {\n"
	                                "    \"body\": \"gone\"\n    \"n\": 2\n  }\n}\n",
	                                &r, &st), STRATA_INVALID_ARGUMENT);
	assert_int_equal(st.ok, 0);
	assert_int_equal(st.failed, 1);
	assert_int_equal(r.n, 1);
	assert_int_equal(r.codes[0], STRATA_PARSE);
	assert_int_equal(r.lines[0], 1);
	assert_non_null(strstr(r.msgs[0], "invalid JSON at line 5, column 5: "));
	dbtest_expect_fields(db, "id:note:note::1", 0, "{\"body\":\"one two\",\"n\":1}");
	/* Not closed: one report, at the end of the text. */
	assert_int_equal(feed_text_file(db, app, "{\n  \"put\": \"id:note:note::1\",\n"
	                                "  \"fields\": {\"body\": \"gone\"}\n", &r, &st),
	                 STRATA_INVALID_ARGUMENT);
	assert_int_equal(r.n, 1);
	assert_int_equal(st.failed, 1);
	assert_non_null(strstr(r.msgs[0], "invalid JSON at line 4, column 1: "));
	dbtest_expect_fields(db, "id:note:note::1", 0, "{\"body\":\"one two\",\"n\":1}");
	/* Several, one after another (two on one line), a bad one among them:
	 * reported at its first line and column, the others fed. */
	assert_int_equal(feed_text_file(db, app,
	                                "{\n \"put\": \"id:note:note::2\",\n \"fields\": {\"n\": 2}\n}\n"
	                                "{\"put\": \"id:note:note::3\", \"fields\": {\"n\": 3}} {\"put\":\n"
	                                "  \"id:note:note::4\", \"fields\": {\"n\": }}\n"
	                                "{\n \"put\": \"id:note:note::5\", \"fields\": {\"n\": 5}\n}\n",
	                                &r, &st), STRATA_INVALID_ARGUMENT);
	assert_int_equal(st.ok, 3);
	assert_int_equal(r.n, 1);
	assert_int_equal(r.lines[0], 5);
	if (!strstr(r.msgs[0], "invalid JSON at line 6, column 38: ")) fail_msg("%s", r.msgs[0]);
	dbtest_expect_fields(db, "id:note:note::5", 0, "{\"n\":5}");
	/* An element of an array: its column counts from the line's start. */
	assert_int_equal(feed_text_file(db, app,
	                                "[{\"put\": \"id:note:note::6\", \"fields\": {\"n\": 6}},"
	                                " {\"put\": \"id:note:note::7\" \"fields\": {}}]\n",
	                                &r, &st), STRATA_INVALID_ARGUMENT);
	assert_int_equal(st.ok, 1);
	assert_int_equal(r.n, 1);
	assert_non_null(strstr(r.msgs[0], "invalid JSON at line 1, column 76: "));
	/* JSON Lines whose first line is broken: that line reported, the next
	 * ones fed. */
	assert_int_equal(feed_text_file(db, app,
	                                "{\"put\": \"id:note:note::8\", \"fields\": {\"n\": 8}\n"
	                                "{\"put\": \"id:note:note::9\", \"fields\": {\"n\": 9}}\n"
	                                "{\"put\": \"id:note:note::10\", \"fields\": {\"n\": \"ten\"}}\n",
	                                &r, &st), STRATA_INVALID_ARGUMENT);
	assert_int_equal(st.ok, 1);
	assert_int_equal(r.n, 2);
	assert_int_equal(r.lines[0], 1);
	assert_int_equal(r.lines[1], 3);
	assert_non_null(strstr(r.msgs[1], "field 'n': expected an integer (int), got 'ten'"));
	dbtest_expect_fields(db, "id:note:note::9", 0, "{\"n\":9}");
	strata_close(db);
	apptest_remove(app);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(lines),
		cmocka_unit_test(array),
		cmocka_unit_test(small_file),
		cmocka_unit_test(array_frame_fault),
		cmocka_unit_test(allocation_failures),
		cmocka_unit_test(numbers_as_strings),
		cmocka_unit_test(hex_cells),
		cmocka_unit_test(file_forms),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
