/*
 * collapse.c: collapsefield, Vespa's field collapsing: of the hits in rank
 * order, a hit whose value of a field collapsesize better hits already
 * showed is left out of the page.
 *
 * As Vespa's FieldCollapsingSearcher does it: the fields (comma-separated)
 * in turn, each over what the one before kept; a hit without a value for
 * the field is kept; the first hit of a value always is (collapsesize 0
 * keeps one); collapsesize.FIELD overrides collapsesize (1) for one field;
 * totalCount still counts every match.  Vespa collapses the first pages of
 * hits it fetches, Strata every match, so pages further down are exact.
 * The hits kept move to the front of qs->hits in their order, the others
 * after them (grouping still sees them all); qs->nshown is how many.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "query_int.h"

#define MAX_COLLAPSE_FIELDS 8

/* A value seen: its text (kind first, then the bytes) and hits kept. */
struct seen {
	uint64_t hash;
	const char *key;
	size_t n;
	long count;
};

struct table {
	struct seen *slot;
	size_t cap, used;
	struct base_arena a;
};

/* The count of key k (n bytes) in t, made 0 when new; NULL without memory. */
static long *count_of(struct table *t, const char *k, size_t n)
{
	if (2 * (t->used + 1) > t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 64;
		struct seen *s = base_calloc(cap, sizeof *s);
		if (!s)
			return NULL;
		for (size_t i = 0; i < t->cap; i++) {
			if (!t->slot[i].key)
				continue;
			size_t j = t->slot[i].hash & (cap - 1);
			while (s[j].key)
				j = (j + 1) & (cap - 1);
			s[j] = t->slot[i];
		}
		base_free(t->slot, t->cap * sizeof *t->slot);
		t->slot = s;
		t->cap = cap;
	}
	uint64_t h = base_hash64(k, n, 0);
	size_t j = h & (t->cap - 1);
	for (; t->slot[j].key; j = (j + 1) & (t->cap - 1))
		if (t->slot[j].hash == h && t->slot[j].n == n && !memcmp(t->slot[j].key, k, n))
			return &t->slot[j].count;
	char *copy = base_arena_alloc(&t->a, n ? n : 1, 1);
	if (!copy)
		return NULL;
	memcpy(copy, k, n);
	t->slot[j] = (struct seen){ h, copy, n, 0 };
	t->used++;
	return &t->slot[j].count;
}

/* Field name (its bytes) checked against the document types searched: a
 * single-value string or number in one of them at least. */
static int check_field(struct qstate *qs, const char *name)
{
	int found = 0;
	for (int d = 0; d < qs->nds; d++) {
		const struct rank_schema *s = qs->ds[d].dt->schema;
		int fi = rank_schema_field_index(s, name);
		if (fi < 0)
			continue;
		const struct rank_field *rf = rank_schema_field(s, fi);
		int t = qs->ds[d].dt->fields[fi].type;
		if (t != STORE_T_STRING && !eng_numeric_type(t))
			return base_err(qs->err, STRATA_INVALID_ARGUMENT,
			                "collapsefield: '%s' of '%s' is %s; Strata collapses on single "
			                "strings and numbers", name, qs->ds[d].dt->name,
			                rf->type == RANK_FT_TENSOR ? "a tensor" : "a collection or struct");
		found = 1;
	}
	return found ? 0
	             : base_err(qs->err, STRATA_INVALID_ARGUMENT,
	                        "collapsefield: no field '%s' in the document types searched", name);
}

/* collapsesize.NAME, else the request's collapsesize, else 1. */
static int size_of(struct qstate *qs, const struct eng_request *req, const char *name,
                   long *size)
{
	char key[160];
	snprintf(key, sizeof key, "collapsesize.%s", name);
	const json_t *v = eng_request_param(req->json, key);
	*size = req->collapse_size >= 0 ? req->collapse_size : 1;
	if (!v)
		return 0;
	long x = -1;
	if (json_is_integer(v))
		x = (long)json_integer_value(v);
	else if (json_is_string(v)) {
		char *end;
		x = strtol(json_string_value(v), &end, 10);
		if (end == json_string_value(v) || *end)
			x = -1;
	}
	if (x < 0 || x > ENG_MAX_COLLAPSE)
		return base_err(qs->err, STRATA_INVALID_ARGUMENT,
		                "%s: expected an integer from 0 to %d", key, ENG_MAX_COLLAPSE);
	*size = x;
	return 0;
}

/* One field over hits[0 .. qs->nshown). */
static int collapse_on(struct qstate *qs, const char *name, long size, struct hit *tmp,
                       void (*value)(void *, size_t, const char *, struct eng_hitval *))
{
	struct table t = { 0 };
	base_arena_init(&t.a, 1 << 12);
	size_t kept = 0, gone = 0;
	int rc = 0;
	for (size_t i = 0; i < qs->nshown; i++) {
		struct eng_hitval v;
		value(qs, i, name, &v);
		int keep = 1;
		if (v.kind) {
			char num[40];
			const char *k = v.s;
			size_t n = v.n;
			if (v.kind == 1) {
				n = (size_t)snprintf(num, sizeof num, "\001%.17g", v.num);
				k = num;
			}
			long *c = count_of(&t, k, n);
			if (!c) {
				rc = base_nomem(qs->err, "collapsefield");
				break;
			}
			keep = !*c || *c < size;
			*c += keep;
		}
		if (keep)
			qs->hits[kept++] = qs->hits[i];
		else
			tmp[gone++] = qs->hits[i];
	}
	if (!rc) { /* the hits left out after those kept, in their order */
		memmove(qs->hits + kept + gone, qs->hits + qs->nshown,
		        (qs->nhits - qs->nshown) * sizeof *qs->hits);
		memcpy(qs->hits + kept, tmp, gone * sizeof *tmp);
		qs->nshown = kept;
	}
	base_free(t.slot, t.cap * sizeof *t.slot);
	base_arena_free(&t.a);
	return rc;
}

int eng_collapse(struct qstate *qs, const struct eng_request *req,
                 void (*value)(void *qs, size_t i, const char *field, struct eng_hitval *v))
{
	const char *p = req->collapse_field;
	char names[MAX_COLLAPSE_FIELDS][128];
	long sizes[MAX_COLLAPSE_FIELDS];
	int n = 0, rc;
	while (*p) {
		size_t len = strcspn(p, ",");
		const char *s = p, *e = p + len;
		while (s < e && (*s == ' ' || *s == '\t'))
			s++;
		while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
			e--;
		if (s == e || (size_t)(e - s) >= sizeof names[0])
			return base_err(qs->err, STRATA_INVALID_ARGUMENT,
			                "collapsefield: expected field names separated by commas, got "
			                "'%s'", req->collapse_field);
		if (n == MAX_COLLAPSE_FIELDS)
			return base_err(qs->err, STRATA_LIMIT, "collapsefield: more than %d fields",
			                MAX_COLLAPSE_FIELDS);
		memcpy(names[n], s, (size_t)(e - s));
		names[n][e - s] = 0;
		if ((rc = check_field(qs, names[n])) != 0 ||
		    (rc = size_of(qs, req, names[n], &sizes[n])) != 0)
			return rc;
		n++;
		p += len + (p[len] == ',');
	}
	if (!n)
		return base_err(qs->err, STRATA_INVALID_ARGUMENT, "collapsefield: no field named");
	struct hit *tmp = base_alloc((qs->nhits ? qs->nhits : 1) * sizeof *tmp);
	if (!tmp)
		return base_nomem(qs->err, "collapsefield");
	for (int k = 0; k < n && !rc; k++)
		rc = collapse_on(qs, names[k], sizes[k], tmp, value);
	base_free(tmp, (qs->nhits ? qs->nhits : 1) * sizeof *tmp);
	return rc;
}
