/*
 * compare.c: conditions on a document's stored values: comparisons
 * (f < 5, f = 5, ...), range(f, lo, hi), f in (v, ...), f matches "re",
 * and contains on a field without a text index (the value is the string).
 * A numeric attribute is read from its column in the store's map; other
 * values through the query's reader (m->value).  On an array or weighted
 * set, or on a path inside a collection or struct field (f.path), a
 * condition holds when any element (key) or value at the path passes.
 * On a field with fast-search the conditions drive a match from the
 * store's value dictionary (store_dict_range, store_dict_string).
 */
#include <math.h>
#include <string.h>
#include <strings.h>

#include "../engine_int.h"

int eng_numeric_type(int t)
{
	return t == STORE_T_INT || t == STORE_T_LONG || t == STORE_T_FLOAT || t == STORE_T_DOUBLE ||
	       t == STORE_T_BOOL;
}

int eng_num_value(struct eng_match *m, uint32_t lid, int fidx, double *out)
{
	const struct store_field *f = &m->dt->fields[fidx];
	if (f->attribute) {
		const void *p = store_attr(m->txn, m->dt->store_id, fidx, lid);
		if (!p)
			return 0;
		switch (f->type) {
		case STORE_T_INT: *out = *(const int32_t *)p; return 1;
		case STORE_T_LONG: *out = (double)*(const int64_t *)p; return 1;
		case STORE_T_FLOAT: *out = *(const float *)p; return 1;
		case STORE_T_DOUBLE: *out = *(const double *)p; return 1;
		case STORE_T_BOOL: *out = *(const uint8_t *)p; return 1;
		}
		return 0;
	}
	const struct store_value *v = m->value(m->ud, lid, fidx);
	if (!v)
		return 0;
	*out = (f->type == STORE_T_FLOAT || f->type == STORE_T_DOUBLE) ? v->d : (double)v->i;
	return 1;
}

/* n (CMP, RANGE or CONTAINS) on a collection or struct field. */
static int collection_match(struct eng_match *m, const struct yql_node *n, uint32_t lid)
{
	const struct store_value *sv = m->value(m->ud, lid, n->fidx);
	const struct rank_field *rf = rank_schema_field(m->dt->schema, n->fidx);
	const char *dot = strchr(n->field, '.');
	int r;
	if (!sv)
		return 0;
	if (dot)
		r = eng_cvalue_path_match(rf, sv->s, sv->n, dot + 1,
		                          n->kind == YQL_CONTAINS ? n->str : NULL, yql_number_test, n);
	else if (n->kind == YQL_CONTAINS)
		r = eng_cvalue_contains(rf, sv->s, sv->n, n->str);
	else
		r = eng_cvalue_any_number(rf, sv->s, sv->n, yql_number_test, n);
	if (r < 0)
		m->nomem = 1; /* the query fails */
	return r > 0;
}

int eng_value_contains(struct eng_match *m, const struct yql_node *n, uint32_t lid)
{
	if (m->dt->fields[n->fidx].type == STORE_T_JSON)
		return collection_match(m, n, lid);
	const struct store_value *sv = m->value(m->ud, lid, n->fidx);
	size_t len = strlen(n->str);
	if (n->term.prefix) /* {prefix: true}: the value begins with it */
		return sv && sv->n >= len && strncasecmp(sv->s, n->str, len) == 0;
	return sv && sv->n == len && memcmp(sv->s, n->str, len) == 0;
}

/* ---- the value dictionary of a fast-search field ------------------------------------ */

/* One value's documents, through the dictionary's cursor: a seek reads the
 * entries it lands on, so an AND led by a rarer operand costs its own
 * documents, not the value's. */
struct value_iter {
	struct eng_iter it;
	struct store_dict_cursor *c;
};

static int value_seek(struct eng_iter *it, uint32_t *lid)
{
	return store_dict_value_seek(((struct value_iter *)it)->c, lid);
}

static void value_close(struct eng_iter *it)
{
	store_dict_value_close(((struct value_iter *)it)->c);
	base_free(it, sizeof(struct value_iter));
}

/* The documents whose value of n's field is in [lo, hi] (numbers) or is
 * str (len bytes; str NULL: a number), as an iterator into *out; *out NULL
 * when the field has no dictionary.  One value reads through a cursor, a
 * range of values as one sorted array. */
static int dict_open(struct eng_match *m, const struct yql_node *n, double lo, double hi,
                     const char *str, size_t len, struct eng_iter **out)
{
	uint32_t *lids = NULL;
	size_t nl = 0;
	*out = NULL;
	if (m->dt->fields[n->fidx].type == STORE_T_JSON ||
	    !store_dict_has(m->txn, m->dt->store_id, n->fidx))
		return 0;
	if (!str && lo != lo)
		return eng_iter_give(m, eng_iter_array(NULL, 0, NULL, 0), out); /* no NaN matches */
	if (str || lo == hi) {
		struct value_iter *v = base_calloc(1, sizeof *v);
		if (!v)
			return base_nomem(m->err, "an iterator");
		int rc = store_dict_value_open(m->txn, m->dt->store_id, n->fidx, lo, str, len, &v->c,
		                               &v->it.est, m->err);
		if (rc) {
			base_free(v, sizeof *v);
			return rc;
		}
		v->it.seek = value_seek;
		v->it.close = value_close;
		*out = &v->it;
		return 0;
	}
	int rc = store_dict_range(m->txn, m->dt->store_id, n->fidx, lo, hi, &lids, &nl, m->err);
	if (rc)
		return rc;
	return eng_iter_give(m, eng_iter_array(lids, nl, lids, nl), out);
}

int eng_value_open(struct eng_match *m, const struct yql_node *n, struct eng_iter **out)
{
	*out = NULL;
	if (m->dt->fields[n->fidx].type != STORE_T_STRING)
		return 0;
	return dict_open(m, n, 0, 0, n->str, strlen(n->str), out);
}

/* ---- f < v, f = v, range(f, lo, hi) ------------------------------------------------- */

static int cmp_check(const struct eng_doctype *dt, const struct yql_node *n,
                     struct strata_error *err)
{
	const struct rank_field *rf = rank_schema_field(dt->schema, n->fidx);
	int t = dt->fields[n->fidx].type;
	if (eng_numeric_type(t) || eng_cvalue_holds_numbers(rf))
		return 0;
	return base_err(err, STRATA_INVALID_ARGUMENT,
	                "yql:1:%d: field '%s' is not numeric: compare with %s", n->col, n->field,
	                t == STORE_T_STRING || eng_cvalue_holds_strings(rf) ? "'contains'"
	                                                                    : "nearestNeighbor");
}

static int cmp_match(struct eng_match *m, const struct yql_node *n, uint32_t lid)
{
	double v;
	if (m->dt->fields[n->fidx].type == STORE_T_JSON)
		return collection_match(m, n, lid);
	return eng_num_value(m, lid, n->fidx, &v) && yql_number_test(n, v);
}

/* The values yql_number_test passes, as a range (bounds included: the
 * exclusive ones pass too, and match tests each document after). */
static int cmp_open(struct eng_match *m, const struct yql_node *n, struct eng_iter **out)
{
	double lo = -INFINITY, hi = INFINITY;
	if (n->kind == YQL_RANGE)
		lo = n->lo, hi = n->hi;
	else if (n->op == YQL_LT || n->op == YQL_LE)
		hi = n->num;
	else if (n->op == YQL_GT || n->op == YQL_GE)
		lo = n->num;
	else
		lo = hi = n->num;
	return dict_open(m, n, lo, hi, NULL, 0, out);
}

const struct eng_op eng_op_cmp = { "comparison", 0, cmp_check, cmp_match, cmp_open };
const struct eng_op eng_op_range = { "range", 0, cmp_check, cmp_match, cmp_open };

/* ---- f in (v, ...) --------------------------------------------------------------- */

static int in_check(const struct eng_doctype *dt, const struct yql_node *n,
                    struct strata_error *err)
{
	int t = dt->fields[n->fidx].type;
	if (n->strs ? t == STORE_T_STRING : eng_numeric_type(t))
		return 0;
	return base_err(err, STRATA_INVALID_ARGUMENT,
	                "yql:1:%d: 'in' with %s needs a %s field; '%s' is not one", n->col,
	                n->strs ? "strings" : "numbers", n->strs ? "string" : "numeric", n->field);
}

static int in_match(struct eng_match *m, const struct yql_node *n, uint32_t lid)
{
	if (n->strs) {
		const struct store_value *sv = m->value(m->ud, lid, n->fidx);
		for (int i = 0; sv && i < n->nvals; i++)
			if (strlen(n->strs[i]) == sv->n && memcmp(sv->s, n->strs[i], sv->n) == 0)
				return 1;
		return 0;
	}
	double v;
	if (!eng_num_value(m, lid, n->fidx, &v))
		return 0;
	/* a float field holds its values as floats: so are the values compared */
	int as_float = m->dt->fields[n->fidx].type == STORE_T_FLOAT;
	for (int i = 0; i < n->nvals; i++)
		if (v == (as_float ? (double)(float)n->nums[i] : n->nums[i]))
			return 1;
	return 0;
}

/* Any of the values' documents. */
static int in_open(struct eng_match *m, const struct yql_node *n, struct eng_iter **out)
{
	struct eng_iter *kids[64];
	int as_float = m->dt->fields[n->fidx].type == STORE_T_FLOAT;
	*out = NULL;
	if (n->nvals > 64 || !store_dict_has(m->txn, m->dt->store_id, n->fidx))
		return 0;
	for (int i = 0; i < n->nvals; i++) {
		double v = n->strs ? 0 : as_float ? (double)(float)n->nums[i] : n->nums[i];
		int rc = dict_open(m, n, v, v, n->strs ? n->strs[i] : NULL,
		                   n->strs ? strlen(n->strs[i]) : 0, &kids[i]);
		if (rc || !kids[i]) {
			while (i)
				eng_iter_close(kids[--i]);
			return rc;
		}
	}
	return eng_iter_give(m, eng_iter_or(kids, n->nvals), out);
}

const struct eng_op eng_op_in = { "in", 0, in_check, in_match, in_open };

/* ---- f matches "regex" ------------------------------------------------------------ */

static int matches_check(const struct eng_doctype *dt, const struct yql_node *n,
                         struct strata_error *err)
{
	if (dt->fields[n->fidx].type == STORE_T_STRING)
		return 0;
	return base_err(err, STRATA_INVALID_ARGUMENT,
	                "yql:1:%d: 'matches' needs a string field; '%s' is not one", n->col,
	                n->field);
}

static int matches_match(struct eng_match *m, const struct yql_node *n, uint32_t lid)
{
	const struct store_value *sv = m->value(m->ud, lid, n->fidx);
	if (!sv)
		return 0;
	/* the stored bytes have no NUL: pmatch[0] bounds them (REG_STARTEND) */
	regmatch_t r = { 0, (regoff_t)sv->n };
	return regexec(n->re, sv->s ? sv->s : "", 1, &r, REG_STARTEND) == 0;
}

const struct eng_op eng_op_matches = { "matches", 0, matches_check, matches_match, NULL };
