/*
 * test_visit.c: strata_visit_json(), visiting a document type in pages.
 * Every document stored is seen exactly once over all pages, whatever the
 * page size, compared with the ids put (an independent list); a
 * namespace keeps its own; documents removed before the visit are not seen;
 * a continuation not made by a visit, an unknown type and a bad count are
 * refused with their messages; the allocation failures of a page report
 * out of memory and leak nothing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>

#include "dbtest.h"

#define NDOCS 37

static int setup(void **state)
{
	struct dbtest *fx = calloc(1, sizeof *fx);
	fx->dir = dbtest_open("strata-visit", "item.sd",
	                      "schema item {\n"
	                      "  document item {\n"
	                      "    field n type int { indexing: attribute | summary }\n"
	                      "  }\n"
	                      "}\n", &fx->db);
	char op[128];
	for (int i = 0; i < NDOCS; i++) {
		/* every third in namespace b, the others in a */
		snprintf(op, sizeof op, "{\"put\": \"id:%s:item::k%d\", \"fields\": {\"n\": %d}}",
		         i % 3 == 2 ? "b" : "a", i, i);
		dbtest_feed_json(fx->db, op);
	}
	/* k4 and k10 are removed again */
	struct strata_error err = { 0 };
	if (strata_remove(fx->db, "id:a:item::k4", &err) || strata_remove(fx->db, "id:a:item::k10", &err))
		fail_msg("remove: %s", err.msg);
	*state = fx;
	return 0;
}

/* Visit everything of namespace ns (NULL: all) in pages of count; seen[i]
 * counts how often document ki came, with its field n checked. */
static void visit_all(struct strata *db, const char *ns, long count, int seen[NDOCS])
{
	memset(seen, 0, NDOCS * sizeof seen[0]);
	char cont[64] = "";
	int pages = 0;
	for (;;) {
		char *out;
		struct strata_error err = { 0 };
		if (strata_visit_json(db, "item", ns, cont, count, &out, &err))
			fail_msg("visit: %s", err.msg);
		json_t *j = json_loads(out, 0, NULL);
		strata_free(out);
		assert_non_null(j);
		json_t *docs = json_object_get(j, "documents");
		assert_int_equal(json_integer_value(json_object_get(j, "documentCount")),
		                 json_array_size(docs));
		assert_true((long)json_array_size(docs) <= count);
		size_t i;
		json_t *d;
		json_array_foreach(docs, i, d) {
			const char *id = json_string_value(json_object_get(d, "id"));
			const char *k = strstr(id, "::k");
			assert_non_null(k);
			int n = atoi(k + 3);
			assert_true(n >= 0 && n < NDOCS);
			json_t *f = json_object_get(json_object_get(d, "fields"), "n");
			assert_int_equal(json_integer_value(f), n);
			seen[n]++;
		}
		const json_t *c = json_object_get(j, "continuation");
		pages++;
		if (!c) {
			json_decref(j);
			break;
		}
		/* a page that says more follows is full */
		assert_int_equal(json_array_size(docs), count);
		snprintf(cont, sizeof cont, "%s", json_string_value(c));
		json_decref(j);
		assert_true(pages <= NDOCS + 1);
	}
}

static void test_every_document_once(void **state)
{
	struct dbtest *fx = *state;
	long sizes[] = { 1, 2, 5, 33, 35, 1024 };
	int seen[NDOCS];
	for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
		visit_all(fx->db, NULL, sizes[s], seen);
		for (int i = 0; i < NDOCS; i++)
			assert_int_equal(seen[i], i == 4 || i == 10 ? 0 : 1);
	}
	visit_all(fx->db, "b", 4, seen);
	for (int i = 0; i < NDOCS; i++)
		assert_int_equal(seen[i], i % 3 == 2 ? 1 : 0);
	visit_all(fx->db, "c", 4, seen);
	for (int i = 0; i < NDOCS; i++)
		assert_int_equal(seen[i], 0);
}

static void refused(struct strata *db, const char *type, const char *cont, long count, int code,
                    const char *msg)
{
	char *out = (char *)"untouched";
	struct strata_error err = { 0 };
	int rc = strata_visit_json(db, type, NULL, cont, count, &out, &err);
	if (rc != code || !strstr(err.msg, msg))
		fail_msg("got %d '%s', wanted %d '%s'", rc, err.msg, code, msg);
	assert_null(out);
}

static void test_errors(void **state)
{
	struct dbtest *fx = *state;
	refused(fx->db, "nope", NULL, 10, STRATA_NOT_FOUND, "unknown document type 'nope'");
	refused(fx->db, "item", NULL, 0, STRATA_INVALID_ARGUMENT, "1 to 1024 documents a page");
	refused(fx->db, "item", NULL, 1025, STRATA_INVALID_ARGUMENT, "not 1025");
	refused(fx->db, "item", "abc", 10, STRATA_INVALID_ARGUMENT,
	        "continuation 'abc' was not made by a visit");
	refused(fx->db, "item", "v1.", 10, STRATA_INVALID_ARGUMENT, "not made by a visit");
	refused(fx->db, "item", "v1.99999999999", 10, STRATA_INVALID_ARGUMENT, "not made by a visit");
}

static void test_alloc_failures(void **state)
{
	struct dbtest *fx = *state;
	struct base_alloc_stats before, after;
	int failures = 0;
	for (long n = 1;; n++) {
		char *out = NULL;
		struct strata_error err = { 0 };
		base_alloc_stats(&before);
		base_alloc_fail_after(n);
		int rc = strata_visit_json(fx->db, "item", NULL, NULL, 5, &out, &err);
		base_alloc_fail_after(-1);
		if (!rc) {
			strata_free(out);
			break;
		}
		assert_int_equal(rc, STRATA_NOMEM);
		assert_non_null(strstr(err.msg, "out of memory"));
		assert_null(out);
		base_alloc_stats(&after);
		assert_int_equal(after.live_bytes, before.live_bytes);
		failures++;
	}
	assert_true(failures > 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_document_once),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_alloc_failures),
	};
	return cmocka_run_group_tests(tests, setup, dbtest_teardown);
}
