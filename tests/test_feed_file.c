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
	snprintf(want, sizeof want, "line %d:", NOPS + 1);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(lines),
		cmocka_unit_test(array),
		cmocka_unit_test(small_file),
		cmocka_unit_test(array_frame_fault),
		cmocka_unit_test(allocation_failures),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
