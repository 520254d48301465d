/*
 * typedmatch.c: the query operators on the field types of fieldtypes.c that
 * match by their own rules: geoLocation() on a position field (position.c
 * measures the distance) and predicate() on a predicate field (predicate.c
 * evaluates the stored predicate for the query's attributes), and their rank
 * features (distance, closeness, subqueries).
 */
#include <string.h>

#include "../engine_int.h"


int eng_typed_check(const struct rank_field *rf, const struct yql_node *n,
                    struct strata_error *err)
{
	if (n->kind == YQL_PREDICATE)
		return eng_predicate_check(rf, n, err);
	if (n->kind == YQL_GEO && rf->type != RANK_FT_POSITION)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "yql:1:%d: geoLocation() needs a position field; '%s' is not one", n->col,
		                n->field);
	if (n->kind != YQL_GEO)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "yql:1:%d: '%s' is a position: search it with geoLocation()", n->col,
		                n->field);
	return 0;
}

int eng_typed_match(const struct yql_node *n, const struct store_value *v)
{
	if (n->kind == YQL_GEO)
		return eng_geo_match(n, v->i);
	return eng_predicate_match(v->s, v->n, n) != 0;
}

double eng_typed_feature(const struct yql_node *where, const struct rank_field *rf, int feature,
                         const struct store_value *v)
{
	int pred = feature == RANK_TF_SUBQUERIES_LSB || feature == RANK_TF_SUBQUERIES_MSB;
	const struct yql_node *n = where ? yql_find(where, pred ? YQL_PREDICATE : YQL_GEO, rf->name)
	                                 : NULL;
	if (!pred)
		return eng_geo_feature(n, feature, v ? &v->i : NULL);
	uint64_t bits = n && v ? eng_predicate_match(v->s, v->n, n) : 0;
	return (double)(feature == RANK_TF_SUBQUERIES_MSB ? bits >> 32 : bits & 0xffffffffu);
}

/* ---- the predicate and geoLocation operators ----------------------------------------- */

static int typed_check(const struct eng_doctype *dt, const struct yql_node *n,
                       struct strata_error *err)
{
	return eng_typed_check(rank_schema_field(dt->schema, n->fidx), n, err);
}

static int typed_match(struct eng_match *m, const struct yql_node *n, uint32_t lid)
{
	const struct store_value *sv = m->value(m->ud, lid, n->fidx);
	return sv && eng_typed_match(n, sv);
}

const struct eng_op eng_op_predicate = { "predicate", 0, typed_check, typed_match, NULL };
const struct eng_op eng_op_geo = { "geoLocation", 0, typed_check, typed_match, NULL };
