/*
 * test_fields.c: documents beyond simple fields.  The schema side (rank/):
 * collection and struct types, document and schema inheritance, fields
 * outside the document, summary classes, and their errors with positions;
 * the engine side: feeding such values in Vespa's JSON forms, updates,
 * summaries, contains, presentation.summary, and what ranking refuses.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>

#include "../rank/rank_int.h"
#include "dbtest.h"

/* ---- the schema side -------------------------------------------------------- */

static const char *const BASE_SD =
	"schema base {\n"
	"  document base {\n"
	"    field id type string { indexing: summary | attribute\n rank: filter }\n"
	"  }\n"
	"  field id_copy type string { indexing: input id | summary }\n"
	"  document-summary ids { summary id { } }\n"
	"  rank-profile fromBase { first-phase { expression: 7 } }\n"
	"}\n";

static const char *const ITEM_SD =
	"schema item inherits base {\n"
	"  document item inherits base {\n"
	"    struct person {\n"
	"      field name type string { }\n"
	"      field age type int { }\n"
	"    }\n"
	"    field tags type array<string> { indexing: summary | attribute }\n"
	"    field nums type array<int> { indexing: summary | attribute }\n"
	"    field ws type weightedset<string> {\n"
	"      indexing: summary | attribute\n"
	"      weightedset { create-if-nonexistent\n remove-if-zero }\n"
	"    }\n"
	"    field m type map<string, array<int>> {\n"
	"      indexing: summary\n"
	"      struct-field key { indexing: attribute }\n"
	"    }\n"
	"    field owner type person { indexing: summary }\n"
	"    field people type array<person> { indexing: summary }\n"
	"    field price type double { indexing: summary | attribute\n summary cost { } }\n"
	"    field lang type string { indexing: \"en\" | set_language }\n"
	"  }\n"
	"  field price2 type double { indexing: input price | attribute | summary }\n"
	"  field tags2 type array<string> { indexing: input tags | summary }\n"
	"  document-summary short inherits ids {\n"
	"    from-disk\n"
	"    summary amount type double { source: price }\n"
	"    omit-summary-features\n"
	"  }\n"
	"  rank-profile default { first-phase { expression: attribute(price2) } }\n"
	"}\n";

static struct rank_sd *parse_ok(const char *file, const char *text)
{
	struct rank_sd *sd = NULL;
	struct strata_error err = {0};
	int rc = rank_sd_parse(file, text, strlen(text), &sd, &err);
	if (rc)
		fail_msg("%s: %s", file, err.msg);
	return sd;
}

static const struct rank_field *field_of(const struct rank_sd *sd, const char *name)
{
	for (int i = 0; i < sd->nfields; i++)
		if (strcmp(sd->fields[i].name, name) == 0)
			return &sd->fields[i];
	return NULL;
}

static int index_of(const struct rank_sd *sd, const char *name)
{
	const struct rank_field *f = field_of(sd, name);
	return f ? (int)(f - sd->fields) : -1;
}

static const struct rank_summary_class *class_of(const struct rank_sd *sd, const char *name)
{
	for (int i = 0; i < sd->nclasses; i++)
		if (strcmp(sd->classes[i].name, name) == 0)
			return &sd->classes[i];
	return NULL;
}

/* The field class c shows as name, or -1. */
static int class_field(const struct rank_summary_class *c, const char *name)
{
	for (int i = 0; i < c->nfields; i++)
		if (strcmp(c->fields[i].name, name) == 0)
			return c->fields[i].field;
	return -1;
}

static void test_types_and_inheritance(void **state)
{
	(void)state;
	struct rank_sd *sds[2] = {parse_ok("item.sd", ITEM_SD), parse_ok("base.sd", BASE_SD)};
	struct strata_error err = {0};
	assert_int_equal(rank_sds_inherit(sds, 2, NULL, &err), 0);
	struct rank_sd *item = sds[0];

	const struct rank_field *tags = field_of(item, "tags");
	assert_int_equal(tags->type, RANK_FT_ARRAY);
	assert_int_equal(tags->vtype->elem->type, RANK_FT_STRING);
	const struct rank_field *ws = field_of(item, "ws");
	assert_int_equal(ws->type, RANK_FT_WSET);
	assert_int_equal(ws->wset_flags, RANK_WSET_CREATE_IF_NONEXISTENT | RANK_WSET_REMOVE_IF_ZERO);
	const struct rank_field *m = field_of(item, "m");
	assert_int_equal(m->type, RANK_FT_MAP);
	assert_int_equal(m->vtype->key->type, RANK_FT_STRING);
	assert_int_equal(m->vtype->elem->type, RANK_FT_ARRAY);
	assert_int_equal(m->vtype->elem->elem->type, RANK_FT_INT);
	const struct rank_field *people = field_of(item, "people");
	const struct rank_struct *st = people->vtype->elem->st;
	assert_non_null(st);
	assert_string_equal(st->name, "person");
	assert_int_equal(st->nfields, 2);
	assert_int_equal(st->fields[1].type->type, RANK_FT_INT);
	assert_ptr_equal(field_of(item, "owner")->vtype->st, st);

	/* base's document fields first, then the document's own, then those
	 * outside the document. */
	assert_int_equal(index_of(item, "id"), 0);
	assert_int_equal(index_of(item, "tags"), 1);
	assert_int_equal(field_of(item, "price2")->source, index_of(item, "price"));
	assert_int_equal(field_of(item, "tags2")->source, index_of(item, "tags"));
	assert_int_equal(field_of(item, "tags")->source, -1);
	assert_non_null(field_of(item, "id"));
	assert_int_equal(field_of(item, "id")->source, -1);
	/* schema inheritance brings base's field outside the document too */
	assert_int_equal(field_of(item, "id_copy")->source, index_of(item, "id"));
	assert_false(field_of(item, "lang")->summary);

	/* Summary classes. */
	const struct rank_summary_class *d = class_of(item, "default");
	assert_int_equal(class_field(d, "tags"), index_of(item, "tags"));
	assert_int_equal(class_field(d, "cost"), index_of(item, "price"));
	assert_int_equal(class_field(d, "price2"), index_of(item, "price2"));
	assert_int_equal(class_field(d, "lang"), -1);
	const struct rank_summary_class *sh = class_of(item, "short");
	assert_int_equal(sh->nfields, 2);
	assert_int_equal(class_field(sh, "id"), index_of(item, "id")); /* from ids */
	assert_int_equal(class_field(sh, "amount"), index_of(item, "price"));
	assert_true(sh->omit_summary_features);
	assert_non_null(class_of(item, "ids")); /* inherited with the schema */

	/* The profile of base, and the child's own default, resolve. */
	assert_int_equal(rank_sd_resolve(item, &err), 0);
	int from_base = 0;
	for (int i = 0; i < item->nprofiles; i++)
		from_base |= strcmp(item->profiles[i].name, "fromBase") == 0;
	assert_true(from_base);
	rank_sd_free(sds[0]);
	rank_sd_free(sds[1]);
}

/* Resolving the schemas texts[n] fails with code and msg. */
static void resolve_fails(const char *const *texts, int n, int code, const char *msg)
{
	struct rank_sd *sds[4];
	char name[16];
	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof name, "s%d.sd", i);
		sds[i] = parse_ok(name, texts[i]);
	}
	struct strata_error err = {0};
	int rc = rank_sds_inherit(sds, n, NULL, &err);
	if (rc != code || strcmp(err.msg, msg) != 0)
		fail_msg("got %d '%s'\n  expected %d '%s'", rc, err.msg, code, msg);
	for (int i = 0; i < n; i++)
		rank_sd_free(sds[i]);
}

static void test_resolve_errors(void **state)
{
	(void)state;
	resolve_fails((const char *[]){"schema a { document a inherits b { } }"}, 1, STRATA_TYPE,
	              "s0.sd:1:32: document 'a' inherits 'b', which is not in the application");
	resolve_fails((const char *[]){"schema a { document a inherits b { } }",
	                               "schema b { document b inherits a { } }"},
	              2, STRATA_TYPE, "s1.sd:1:32: 'b' inherits 'a', which inherits it back");
	resolve_fails((const char *[]){"schema a { document a inherits b {\n field x type int { } } }",
	                               "schema b { document b { field x type int { } } }"},
	              2, STRATA_TYPE, "s0.sd:2:8: field 'x' is also in document 'b', which 'a' inherits");
	resolve_fails((const char *[]){"schema a { document a {\n field x type integer { } } }"}, 1,
	              STRATA_TYPE,
	              "s0.sd:2:15: unknown field type 'integer' (no struct of that name in document 'a')");
	resolve_fails((const char *[]){"schema a { document a { field x type int { } }\n"
	                               " field y type string { indexing: input x | summary } }"},
	              1, STRATA_TYPE,
	              "s0.sd:2:44: field 'y' of type string cannot hold an int");
	resolve_fails((const char *[]){"schema a { document a { field x type array<int> { } }\n"
	                               " field y type array<string> { indexing: input x | summary } }"},
	              1, STRATA_TYPE,
	              "s0.sd:2:51: field 'y' of type array<string> cannot hold an array<int>");
	resolve_fails((const char *[]){"schema a { document a { }\n"
	                               " field y type string { indexing: input q | summary } }"},
	              1, STRATA_TYPE,
	              "s0.sd:2:40: 'input q': 'q' is not a field of document 'a'");
	resolve_fails((const char *[]){"schema a { document a { }\n"
	                               " field y type string { indexing: summary } }"},
	              1, STRATA_NOT_IMPLEMENTED,
	              "s0.sd:2:8: field 'y' outside the document needs 'indexing: input FIELD | ...'");
	resolve_fails((const char *[]){"schema a { document a { }\n"
	                               " document-summary d { summary z { source: w } } }"},
	              1, STRATA_TYPE, "s0.sd:2:31: summary field 'z' shows 'w', which is not a field of 'a'");
	resolve_fails((const char *[]){"schema a { document a { }\n"
	                               " document-summary d inherits e { } }"},
	              1, STRATA_TYPE,
	              "s0.sd:2:30: document-summary 'd' inherits 'e', which is not defined");
	resolve_fails((const char *[]){"schema a { document a { }\n"
	                               " document-summary d inherits e { }\n"
	                               " document-summary e inherits d { } }"},
	              1, STRATA_TYPE, "s0.sd:3:30: document-summary 'e' inherits 'd', which inherits it back");
	/* a fieldset of an inheriting schema is checked once the parents' fields are in */
	resolve_fails((const char *[]){"schema a { document a inherits b { }\n"
	                               " fieldset f { fields: x, nope } }",
	                               "schema b { document b { field x type string { indexing: index } } }"},
	              2, STRATA_TYPE, "s0.sd:2:11: fieldset 'f' names field 'nope', which is not declared");
}

/* A fieldset may name the fields a schema inherits: they are looked up once
 * inheritance added them. */
static void test_fieldset_of_parent(void **state)
{
	(void)state;
	struct rank_sd *sds[2] = {
		parse_ok("c.sd", "schema c inherits p {\n"
		                 " document c inherits p { field body type string { indexing: index } }\n"
		                 " fieldset default { fields: title, body } }"),
		parse_ok("p.sd", "schema p { document p { field title type string { indexing: index } } }"),
	};
	struct strata_error err = {0};
	assert_int_equal(rank_sds_inherit(sds, 2, NULL, &err), 0);
	assert_int_equal(sds[0]->nfieldsets, 1);
	const struct rank_fieldset *fs = &sds[0]->fieldsets[0];
	assert_int_equal(fs->nfields, 2);
	assert_int_equal(fs->fields[0], index_of(sds[0], "title"));
	assert_int_equal(fs->fields[1], index_of(sds[0], "body"));
	assert_true(fs->fields[0] >= 0 && fs->fields[1] >= 0);
	for (int i = 0; i < 2; i++)
		rank_sd_free(sds[i]);
}

static void test_parse_errors(void **state)
{
	(void)state;
	static const struct {
		const char *text;
		int code;
		const char *msg;
	} cases[] = {
		{"schema a { document a { field x type string {\n summary indexing: summary } } }",
		 STRATA_PARSE, "t.sd:2:18: expected '{' or ':' after the summary's name, found ':'"},
		{"schema a { document a { field x type string {\n summary: geopos } } }",
		 STRATA_NOT_IMPLEMENTED, "t.sd:2:11: summary setting 'geopos' is not supported"},
		{"schema a { document a { field x type int {\n struct-field k { } } } }", STRATA_TYPE,
		 "t.sd:2:2: struct-field in field 'x', which holds no struct or map"},
		{"schema a { document a { field x type map<string,int> {\n struct-field key {"
		 " indexing: index } } } }",
		 STRATA_NOT_IMPLEMENTED,
		 "t.sd:2:31: indexing statement 'index' in a struct-field is not supported (only "
		 "attribute, summary)"},
		{"schema a { document a { struct p inherits q { } } }", STRATA_NOT_IMPLEMENTED,
		 "t.sd:1:34: struct inheritance is not supported"},
		{"schema a { document a { field x type string {\n indexing: (input y || \"\" | summary } } }",
		 STRATA_PARSE, "t.sd:2:37: expected ')' to close the '(', found '}'"},
		{"schema a { document a { }\n document-summary d { summary x { source: a, b } } }",
		 STRATA_NOT_IMPLEMENTED, "t.sd:2:43: a summary field with several sources is not supported"},
		{"schema a { document a { field w type weightedset<int> {\n weightedset: remove-if-one } } }",
		 STRATA_PARSE,
		 "t.sd:2:15: expected create-if-nonexistent or remove-if-zero, found 'remove-if-one'"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct rank_sd *sd = NULL;
		struct strata_error err = {0};
		int rc = rank_sd_parse("t.sd", cases[i].text, strlen(cases[i].text), &sd, &err);
		if (rc != cases[i].code || strcmp(err.msg, cases[i].msg) != 0)
			fail_msg("case %zu: got %d '%s'\n  expected %d '%s'", i, rc, err.msg, cases[i].code,
			         cases[i].msg);
		assert_null(sd);
	}
}

/* Every allocation of parsing and resolving both schemas fails in turn:
 * each failure is STRATA_NOMEM and nothing leaks. */
static void test_alloc_failures(void **state)
{
	(void)state;
	struct base_alloc_stats before, after;
	base_alloc_stats(&before);
	int failures = 0;
	for (long k = 1; k < 100000; k++) {
		struct rank_sd *sds[2] = {NULL, NULL};
		struct strata_error err = {0};
		base_alloc_fail_after(k);
		int rc = rank_sd_parse("item.sd", ITEM_SD, strlen(ITEM_SD), &sds[0], &err);
		if (!rc)
			rc = rank_sd_parse("base.sd", BASE_SD, strlen(BASE_SD), &sds[1], &err);
		if (!rc)
			rc = rank_sds_inherit(sds, 2, NULL, &err);
		if (!rc)
			rc = rank_sd_resolve(sds[0], &err);
		base_alloc_fail_after(-1);
		rank_sd_free(sds[0]);
		rank_sd_free(sds[1]);
		if (rc == 0)
			break;
		assert_int_equal(rc, STRATA_NOMEM);
		if (strncmp(err.msg, "out of memory: ", 15) != 0)
			fail_msg("allocation %ld: %s", k, err.msg);
		failures++;
	}
	assert_true(failures > 100);
	base_alloc_stats(&after);
	assert_int_equal(after.live_bytes, before.live_bytes);
}

/* ---- the engine side ---------------------------------------------------------- */

static int setup(void **state)
{
	struct dbtest *fx = calloc(1, sizeof *fx);
	fx->dir = dbtest_app("strata-fields.", "item.sd", ITEM_SD);
	apptest_write(fx->dir, "schemas/base.sd", BASE_SD);
	dbtest_open_dir(fx->dir, &fx->db);
	*state = fx;
	return 0;
}

static void feed_ok(struct dbtest *fx, const char *op)
{
	dbtest_feed_json(fx->db, op);
}

static void feed_fails(struct dbtest *fx, const char *op, const char *msg)
{
	dbtest_feed_fails(fx->db, op, STRATA_INVALID_ARGUMENT, msg);
}

static void expect_fields(struct dbtest *fx, const char *id, const char *want)
{
	dbtest_expect_fields(fx->db, id, 0, want);
}

static json_t *query(struct dbtest *fx, const char *request, int *rc, struct strata_error *err)
{
	char *out = NULL;
	*rc = strata_query_json(fx->db, request, &out, err);
	if (*rc)
		return NULL;
	json_t *j = json_loads(out, 0, NULL);
	strata_free(out);
	return j;
}

/* The ids of the hits, in order, comma-separated, into buf. */
static const char *hit_ids(json_t *r, char *buf, size_t n)
{
	json_t *children = dbtest_hits(r);
	size_t len = 0;
	buf[0] = 0;
	for (size_t i = 0; i < json_array_size(children) && len < n; i++)
		len += (size_t)snprintf(buf + len, n - len, "%s%s", i ? "," : "",
		                        json_string_value(json_object_get(json_array_get(children, i), "id")));
	return buf;
}

static void test_feed_forms(void **state)
{
	struct dbtest *fx = *state;
	feed_ok(fx, "{\"put\": \"id:t:item::1\", \"fields\": {\"id\": \"a\", \"tags\": [\"red\", \"blue\"],"
	            " \"ws\": {\"x\": 3, \"y\": 1}, \"m\": {\"k\": [1, 2]},"
	            " \"owner\": {\"name\": \"Ann\", \"age\": 30}, \"people\": [{\"name\": \"B\"}],"
	            " \"price\": 2.5}}");
	/* a map in its array form, an int given as an integral real */
	feed_ok(fx, "{\"put\": \"id:t:item::2\", \"fields\": {\"id\": \"b\", \"tags\": [\"green\"],"
	            " \"m\": [{\"key\": \"q\", \"value\": [7.0]}], \"price\": 4}}");
	expect_fields(fx, "id:t:item::1",
	              "{\"id\":\"a\",\"m\":{\"k\":[1,2]},\"owner\":{\"age\":30,\"name\":\"Ann\"},"
	              "\"people\":[{\"name\":\"B\"}],\"price\":2.5,\"tags\":[\"red\",\"blue\"],"
	              "\"ws\":{\"x\":3,\"y\":1}}");
	expect_fields(fx, "id:t:item::2",
	              "{\"id\":\"b\",\"m\":{\"q\":[7]},\"price\":4.0,\"tags\":[\"green\"]}");

	/* Bad values: the path to the bad element, nothing written. */
	feed_fails(fx, "{\"put\": \"id:t:item::3\", \"fields\": {\"tags\": [\"a\", 1]}}",
	           "field 'tags'[1]: expected a string");
	feed_fails(fx, "{\"put\": \"id:t:item::3\", \"fields\": {\"ws\": [\"a\"]}}",
	           "field 'ws': expected an object of weights");
	feed_fails(fx, "{\"put\": \"id:t:item::3\", \"fields\": {\"ws\": {\"a\": 1.5}}}",
	           "field 'ws'{a}: a weight must be an integer");
	feed_fails(fx, "{\"put\": \"id:t:item::3\", \"fields\": {\"m\": {\"k\": [\"x\"]}}}",
	           "field 'm'{k}[0]: expected an integer that fits int");
	feed_fails(fx, "{\"put\": \"id:t:item::3\", \"fields\": {\"owner\": {\"nme\": \"x\"}}}",
	           "field 'owner'.nme: struct 'person' has no such field");
	feed_fails(fx, "{\"put\": \"id:t:item::3\", \"fields\": {\"people\": [{\"age\": 2147483648}]}}",
	           "field 'people'[0].age: expected an integer that fits int");
	feed_fails(fx, "{\"put\": \"id:t:item::3\", \"fields\": {\"price2\": 1}}",
	           "field 'price2' is outside the document: it takes the value of 'price'");
	feed_fails(fx, "{\"update\": \"id:t:item::1\", \"fields\": {\"m{k}\": {\"assign\": [\"x\"]}}}",
	           "field 'm{k}'[0]: expected an integer that fits int");
	feed_fails(fx, "{\"update\": \"id:t:item::1\", \"fields\": {\"m{k}.x\": {\"assign\": 1}}}",
	           "field 'm{k}.x': '{k}.x' addresses no part of the field (one level");
	feed_fails(fx, "{\"update\": \"id:t:item::1\", \"fields\": {\"tags[5]\": {\"assign\": \"z\"}}}",
	           "field 'tags[5]': index 5 is past the end of the array");
	feed_fails(fx, "{\"update\": \"id:t:item::1\", \"fields\": {\"price.x\": {\"assign\": 1}}}",
	           "field 'price.x': 'price' is not a map, array or struct field of the document 'item'");
	feed_fails(fx, "{\"update\": \"id:t:item::1\", \"fields\": {\"m{k}\": {\"add\": [1]}}}",
	           "field 'm{k}': a part of a field takes {\"assign\": value}");
	feed_fails(fx, "{\"update\": \"id:t:item::1\", \"fields\": {\"m\": {\"add\": {\"z\": [1]}}}}",
	           "field 'm': 'add' updates an array or a weighted set; assign a map whole");
	feed_fails(fx, "{\"update\": \"id:t:item::1\", \"fields\": {\"tags\": {\"increment\": 1}}}",
	           "field 'tags': 'increment' needs a single-value number field");
	struct strata_error err = {0};
	char *doc = NULL;
	assert_int_equal(strata_get_json(fx->db, "id:t:item::3", &doc, &err), STRATA_NOT_FOUND);
	expect_fields(fx, "id:t:item::1",
	              "{\"id\":\"a\",\"m\":{\"k\":[1,2]},\"owner\":{\"age\":30,\"name\":\"Ann\"},"
	              "\"people\":[{\"name\":\"B\"}],\"price\":2.5,\"tags\":[\"red\",\"blue\"],"
	              "\"ws\":{\"x\":3,\"y\":1}}");
}

static void test_updates(void **state)
{
	struct dbtest *fx = *state;
	feed_ok(fx, "{\"put\": \"id:t:item::1\", \"fields\": {\"tags\": [\"red\", \"blue\", \"red\"],"
	            " \"ws\": {\"x\": 3, \"y\": 1}, \"price\": 1}}");
	feed_ok(fx, "{\"update\": \"id:t:item::1\", \"fields\": {\"tags\": {\"add\": [\"green\"]},"
	            " \"ws\": {\"add\": {\"z\": 9, \"x\": 0}}}}");
	/* remove-if-zero dropped x */
	expect_fields(fx, "id:t:item::1",
	              "{\"price\":1.0,\"tags\":[\"red\",\"blue\",\"red\",\"green\"],\"ws\":{\"y\":1,\"z\":9}}");
	feed_ok(fx, "{\"update\": \"id:t:item::1\", \"fields\": {\"tags\": {\"remove\": [\"red\"]},"
	            " \"ws\": {\"remove\": {\"y\": 0}}, \"price\": {\"assign\": 8}}}");
	expect_fields(fx, "id:t:item::1",
	              "{\"price\":8.0,\"tags\":[\"blue\",\"green\"],\"ws\":{\"z\":9}}");
	/* parts of fields: a map entry, an array element, a struct field; two
	 * parts of one field in one operation both land */
	feed_ok(fx, "{\"update\": \"id:t:item::1\", \"fields\": {\"m{a}\": {\"assign\": [1]},"
	            " \"m{b}\": {\"assign\": [2, 3]}, \"tags[0]\": {\"assign\": \"cyan\"},"
	            " \"owner.age\": {\"assign\": 41}}}");
	feed_ok(fx, "{\"update\": \"id:t:item::1\", \"fields\": {\"m{a}\": {\"assign\": [5]}}}");
	expect_fields(fx, "id:t:item::1",
	              "{\"m\":{\"a\":[5],\"b\":[2,3]},\"owner\":{\"age\":41},\"price\":8.0,"
	              "\"tags\":[\"cyan\",\"green\"],\"ws\":{\"z\":9}}");
	/* weights: increment and decrement (z: 9 -> 7), a missing key made
	 * (create-if-nonexistent), one brought to 0 dropped (remove-if-zero) */
	feed_ok(fx, "{\"update\": \"id:t:item::1\", \"fields\": {\"ws\": {\"match\": {\"element\": \"z\","
	            " \"decrement\": 2}}}}");
	feed_ok(fx, "{\"update\": \"id:t:item::1\", \"fields\": {\"ws\": {\"match\": {\"element\": \"n\","
	            " \"increment\": 4}}}}");
	expect_fields(fx, "id:t:item::1",
	              "{\"m\":{\"a\":[5],\"b\":[2,3]},\"owner\":{\"age\":41},\"price\":8.0,"
	              "\"tags\":[\"cyan\",\"green\"],\"ws\":{\"n\":4,\"z\":7}}");
	feed_ok(fx, "{\"update\": \"id:t:item::1\", \"fields\": {\"ws\": {\"match\": {\"element\": \"n\","
	            " \"decrement\": 4}}}}");
	feed_fails(fx, "{\"update\": \"id:t:item::1\", \"fields\": {\"ws\": {\"match\": {\"element\": \"z\","
	               " \"multiply\": 2}}}}", "a weighted set's match takes");
	feed_fails(fx, "{\"update\": \"id:t:item::1\", \"fields\": {\"tags\": {\"match\": {\"element\": 0,"
	               " \"increment\": 2}}}}", "'match' updates a weighted set's weights");
	expect_fields(fx, "id:t:item::1",
	              "{\"m\":{\"a\":[5],\"b\":[2,3]},\"owner\":{\"age\":41},\"price\":8.0,"
	              "\"tags\":[\"cyan\",\"green\"],\"ws\":{\"z\":7}}");
	/* add to a field the document lacks */
	feed_ok(fx, "{\"put\": \"id:t:item::2\", \"fields\": {\"price\": 1}}");
	feed_ok(fx, "{\"update\": \"id:t:item::2\", \"fields\": {\"tags\": {\"add\": [\"new\"]}}}");
	expect_fields(fx, "id:t:item::2", "{\"price\":1.0,\"tags\":[\"new\"]}");
	/* the field outside the document follows its input: ranking sees 8 */
	int rc;
	struct strata_error err = {0};
	json_t *r = query(fx, "{\"yql\": \"select * from item where true\"}", &rc, &err);
	assert_int_equal(rc, 0);
	json_t *c0 = json_array_get(dbtest_hits(r), 0);
	assert_string_equal(json_string_value(json_object_get(c0, "id")), "id:t:item::1");
	assert_true(json_number_value(json_object_get(c0, "relevance")) == 8.0);
	json_t *f0 = json_object_get(c0, "fields");
	assert_true(json_number_value(json_object_get(f0, "price2")) == 8.0);
	assert_true(json_number_value(json_object_get(f0, "cost")) == 8.0);
	json_decref(r);
}

static void test_contains_and_summaries(void **state)
{
	struct dbtest *fx = *state;
	feed_ok(fx, "{\"put\": \"id:t:item::1\", \"fields\": {\"id\": \"a\", \"tags\": [\"red\"],"
	            " \"ws\": {\"w1\": 1}, \"price\": 2}}");
	feed_ok(fx, "{\"put\": \"id:t:item::2\", \"fields\": {\"id\": \"b\", \"tags\": [\"blue\", \"red\"],"
	            " \"ws\": {\"w2\": 1}, \"price\": 3}}");
	feed_ok(fx, "{\"put\": \"id:t:item::3\", \"fields\": {\"id\": \"c\", \"price\": 1,"
	            " \"nums\": [3, 8], \"m\": {\"k\": [1, 9]}, \"owner\": {\"name\": \"Al\", \"age\": 40},"
	            " \"people\": [{\"name\": \"Bo\"}, {\"name\": \"Cy\", \"age\": 7}]}}");
	char ids[256];
	int rc;
	struct strata_error err = {0};
	json_t *r = query(fx, "{\"yql\": \"select * from item where tags contains 'red'\"}", &rc, &err);
	assert_int_equal(rc, 0);
	assert_string_equal(hit_ids(r, ids, sizeof ids), "id:t:item::2,id:t:item::1");
	json_decref(r);
	r = query(fx, "{\"yql\": \"select * from item where ws contains 'w2'\"}", &rc, &err);
	assert_string_equal(hit_ids(r, ids, sizeof ids), "id:t:item::2");
	json_decref(r);
	/* numbers: any element that passes */
	r = query(fx, "{\"yql\": \"select * from item where nums = 8 or range(nums, 100, 200)\"}",
	          &rc, &err);
	assert_string_equal(hit_ids(r, ids, sizeof ids), "id:t:item::3");
	json_decref(r);
	r = query(fx, "{\"yql\": \"select * from item where nums > 8\"}", &rc, &err);
	assert_int_equal(rc, 0);
	assert_string_equal(hit_ids(r, ids, sizeof ids), "");
	json_decref(r);
	/* paths inside maps, structs and arrays of structs */
	static const char *const paths[] = {
		"m.key contains 'k'", "m.value > 8", "people.name contains 'Cy'", "people.age = 7",
		"owner.age > 30", "owner.name contains 'Al'",
	};
	for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
		char req[256];
		snprintf(req, sizeof req, "{\"yql\": \"select * from item where %s\"}", paths[i]);
		r = query(fx, req, &rc, &err);
		if (rc != 0 || strcmp(hit_ids(r, ids, sizeof ids), "id:t:item::3") != 0)
			fail_msg("%s: %d %s", paths[i], rc, rc ? err.msg : ids);
		json_decref(r);
	}
	r = query(fx, "{\"yql\": \"select * from item where people.name contains 'Bx' or "
	              "m.value < 1\"}", &rc, &err);
	assert_string_equal(hit_ids(r, ids, sizeof ids), "");
	json_decref(r);
	r = query(fx, "{\"yql\": \"select * from item where m.nope contains 'x'\"}", &rc, &err);
	assert_int_equal(rc, STRATA_INVALID_ARGUMENT);
	assert_string_equal(err.msg, "yql:1:26: 'm.nope' names no value inside field 'm'");
	r = query(fx, "{\"yql\": \"select * from item where owner.age contains 'x'\"}", &rc, &err);
	assert_int_equal(rc, STRATA_INVALID_ARGUMENT);
	assert_string_equal(err.msg, "yql:1:26: 'owner.age' is not a string");
	r = query(fx, "{\"yql\": \"select * from item where tags > 8\"}", &rc, &err);
	assert_int_equal(rc, STRATA_INVALID_ARGUMENT);
	assert_non_null(strstr(err.msg, "field 'tags' is not numeric: compare with 'contains'"));
	r = query(fx, "{\"yql\": \"select * from item where m contains 'k'\"}", &rc, &err);
	assert_int_equal(rc, STRATA_INVALID_ARGUMENT);
	assert_non_null(strstr(err.msg, "'contains' needs a string field, or an array or weightedset"));

	/* presentation.summary: the class's fields only */
	r = query(fx, "{\"yql\": \"select * from item where id contains 'b'\","
	              " \"presentation.summary\": \"short\"}", &rc, &err);
	assert_int_equal(rc, 0);
	json_t *c0 = json_array_get(dbtest_hits(r), 0);
	char *s = json_dumps(json_object_get(c0, "fields"), JSON_COMPACT | JSON_SORT_KEYS);
	assert_string_equal(s, "{\"amount\":3.0,\"documentid\":\"id:t:item::2\",\"id\":\"b\","
	                       "\"sddocname\":\"item\"}");
	dbtest_json_free(s);
	json_decref(r);
	r = query(fx, "{\"yql\": \"select * from item where true\","
	              " \"presentation\": {\"summary\": \"nope\"}}", &rc, &err);
	assert_int_equal(rc, STRATA_NOT_FOUND);
	assert_string_equal(err.msg, "document-summary 'nope' not found in schema 'item'");
}

/* Every allocation of feeding collection values, updating them and
 * matching them fails in turn: each failure is STRATA_NOMEM, takes back
 * all it took, and writes nothing. */
static void test_feed_alloc_failures(void **state)
{
	struct dbtest *fx = *state;
	static const char *const ops[] = {
		"{\"put\": \"id:t:item::1\", \"fields\": {\"tags\": [\"a\", \"b\"], \"ws\": {\"x\": 1},"
		" \"m\": [{\"key\": \"k\", \"value\": [1]}], \"people\": [{\"name\": \"P\", \"age\": 3}],"
		" \"price\": 1}}",
		"{\"update\": \"id:t:item::1\", \"fields\": {\"tags\": {\"add\": [\"c\"]},"
		" \"ws\": {\"remove\": {\"x\": 0}}, \"m{q}\": {\"assign\": [2]}}}",
	};
	for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
		assert_true(dbtest_feed_failing(fx->db, ops[i], "id:t:item::1") > 10);
	expect_fields(fx, "id:t:item::1",
	              "{\"m\":{\"k\":[1],\"q\":[2]},\"people\":[{\"age\":3,\"name\":\"P\"}],"
	              "\"price\":1.0,\"tags\":[\"a\",\"b\",\"c\"],\"ws\":{}}");
	/* matching under failing allocations: an error or a right answer */
	for (long k = 1; k < 100000; k++) {
		struct strata_error err = {0};
		char *out = NULL;
		base_alloc_fail_after(k);
		int rc = strata_query_json(fx->db, "{\"yql\": \"select * from item where "
		                           "tags contains 'c' and people.age = 3\"}", &out, &err);
		base_alloc_fail_after(-1);
		if (rc == 0) {
			json_t *r = json_loads(out, 0, NULL);
			strata_free(out);
			json_t *tc = json_object_get(json_object_get(json_object_get(r, "root"), "fields"),
			                             "totalCount");
			if (json_integer_value(tc) != 1)
				fail_msg("allocation %ld failed, the query said %lld hits", k,
				         (long long)json_integer_value(tc));
			json_decref(r);
			break;
		}
		assert_int_equal(rc, STRATA_NOMEM);
	}
}

/* Ranking reads a collection only through tensorFromWeightedSet and
 * tensorFromLabels (tests/features.sh): the refusal names its position. */
static void test_rank_refusals(void **state)
{
	(void)state;
	static const struct {
		const char *expr;
		const char *msg;
	} cases[] = {
		{"attribute(tags)",
		 "attribute 'tags' is a collection or struct, which rank expressions do not read"},
		{"attribute(ws)",
		 "attribute 'ws' is a collection or struct, which rank expressions do not read"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char sd[1024];
		snprintf(sd, sizeof sd,
		         "schema s {\n document s {\n  field tags type array<string> { indexing: attribute }\n"
		         "  field ws type weightedset<string> { indexing: attribute }\n }\n"
		         " rank-profile p { first-phase { expression: %s } }\n}\n", cases[i].expr);
		dbtest_expect_open_error(dbtest_app("strata-fields.", "s.sd", sd), STRATA_NOT_IMPLEMENTED,
		                         "s.sd:6:", cases[i].msg);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_types_and_inheritance),
		cmocka_unit_test(test_resolve_errors),
		cmocka_unit_test(test_fieldset_of_parent),
		cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_alloc_failures),
		cmocka_unit_test_setup_teardown(test_feed_forms, setup, dbtest_teardown),
		cmocka_unit_test_setup_teardown(test_updates, setup, dbtest_teardown),
		cmocka_unit_test_setup_teardown(test_contains_and_summaries, setup, dbtest_teardown),
		cmocka_unit_test_setup_teardown(test_feed_alloc_failures, setup, dbtest_teardown),
		cmocka_unit_test(test_rank_refusals),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
