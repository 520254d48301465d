/*
 * attrmatch.c: Vespa's attributeMatch(f) rank feature for one document.
 * The query's terms on an attribute f are the 'contains' conditions on f
 * of the where tree (outside a negation) when f has no text index; the
 * document's value is read as it is stored: a string, or the JSON text of
 * an array or weighted set of strings.  Each output follows Vespa's
 * formulas, with its defaults fieldCompletenessImportance 0.05 and
 * maxWeight 256; and nativeAttributeMatch's boosts: a matched term's weight
 * w (a weighted set's weight for its key, an array's occurrences, 1 for a
 * single value) through the weightTable linear(1,0) over its largest entry,
 * 255.
 */
#include <math.h>
#include <string.h>

#include "../engine_int.h"

#define FIELD_COMPLETENESS_IMPORTANCE 0.05
#define MAX_WEIGHT 256.0
#define NATIVE_TABLE_MAX 255.0 /* nativeAttributeMatch's weightTable linear(1,0), 256 entries */

struct counts {
	int terms;          /* conditions on the field */
	int attr_terms;     /* conditions on any attribute without a text index */
	int matches;
	double native;      /* nativeAttributeMatch: sum of sign(w) * min(|w|, 255) / 255 */
	double total_weight, max_weight; /* of the keys matched (weighted sets) */
	double weighted_weight;          /* sum of key weight * term weight (100) */
};

/* Does the value hold str?  Its weight in *w (1 for other than sets). */
static int holds(const json_t *j, const struct store_value *sv, const char *str, double *w)
{
	*w = 1;
	if (!j) {
		size_t n = strlen(str);
		return sv->n == n && memcmp(sv->s, str, n) == 0;
	}
	if (json_is_object(j)) {
		const json_t *v = json_object_get(j, str);
		if (v)
			*w = json_number_value(v);
		return v != NULL;
	}
	*w = 0; /* an array: the occurrences */
	for (size_t i = 0; i < json_array_size(j); i++) {
		const json_t *e = json_array_get(j, i);
		*w += json_is_string(e) && strcmp(json_string_value(e), str) == 0;
	}
	return *w > 0;
}

static void walk(const struct yql_node *n, const struct eng_doctype *dt, int field,
                 const json_t *j, const struct store_value *sv, struct counts *c)
{
	if (n->kind == YQL_NOT)
		return;
	for (int i = 0; i < n->nkids; i++)
		walk(n->kids[i], dt, field, j, sv, c);
	if (n->kind != YQL_CONTAINS || n->fidx < 0 || dt->fields[n->fidx].text ||
	    !rank_schema_field(dt->schema, n->fidx)->attribute || n->term.unranked)
		return; /* a filter term feeds no rank feature */
	c->attr_terms++;
	if (n->fidx != field)
		return;
	c->terms++;
	double w;
	if (!sv || !sv->set || !holds(j, sv, n->str, &w))
		return;
	c->max_weight = c->matches++ ? (w > c->max_weight ? w : c->max_weight) : w;
	double aw = fabs(w) < NATIVE_TABLE_MAX ? fabs(w) : NATIVE_TABLE_MAX;
	c->native += (w < 0 ? -aw : aw) / NATIVE_TABLE_MAX;
	c->total_weight += w;
	c->weighted_weight += w * 100;
}

static double at_most_one(double v)
{
	return v > 1 ? 1 : v;
}

double eng_attr_match(const struct yql_node *where, const struct eng_doctype *dt, int field,
                      const struct store_value *sv, int output)
{
	const struct rank_field *rf = rank_schema_field(dt->schema, field);
	int wset = rf->type == RANK_FT_WSET, coll = rf->type == RANK_FT_ARRAY || wset;
	json_t *j = NULL;
	if (coll && sv && sv->set) {
		json_error_t je;
		int oom;
		j = eng_json_parse(sv->s, sv->n, JSON_DECODE_ANY, &je, &oom);
		if (!j)
			return 0; /* unreadable (memory): no match */
	}
	struct counts c = { 0 };
	if (where)
		walk(where, dt, field, j, sv, &c);
	double values = 0, weight_sum = 0;
	if (json_is_object(j)) {
		const char *k;
		const json_t *v;
		json_object_foreach((json_t *)j, k, v)
			weight_sum += json_number_value(v);
	} else {
		values = j ? (double)json_array_size(j) : sv && sv->set;
	}
	json_decref(j);
	double qc = c.terms ? (double)c.matches / c.terms : 0, fc;
	if (wset)
		fc = c.total_weight <= 0 ? 0 : weight_sum <= 0 ? 1 : at_most_one(c.total_weight / weight_sum);
	else
		fc = values > 0 ? at_most_one(c.matches / values) : 0;
	switch (output) {
	case RANK_AM_COMPLETENESS:
		return qc * (1 - FIELD_COMPLETENESS_IMPORTANCE + FIELD_COMPLETENESS_IMPORTANCE * fc);
	case RANK_AM_QUERY_COMPLETENESS: return qc;
	case RANK_AM_FIELD_COMPLETENESS: return fc;
	case RANK_AM_NORMALIZED_WEIGHT:
		return wset && c.total_weight > 0
		               ? at_most_one(c.total_weight / (MAX_WEIGHT * c.attr_terms))
		               : 0;
	case RANK_AM_NORMALIZED_WEIGHTED_WEIGHT:
		return wset && c.weighted_weight > 0
		               ? at_most_one(c.weighted_weight / (MAX_WEIGHT * 100.0 * c.attr_terms))
		               : 0;
	case RANK_AM_MATCHES: return c.matches;
	case RANK_AM_TOTAL_WEIGHT: return wset ? c.total_weight : 0;
	case RANK_AM_AVERAGE_WEIGHT: return wset && c.matches ? c.total_weight / c.matches : 0;
	case RANK_AM_MAX_WEIGHT: return wset ? c.max_weight : 0;
	case RANK_AM_NATIVE: return c.native;
	case RANK_AM_TERMS: return c.terms;
	}
	return 0;
}
