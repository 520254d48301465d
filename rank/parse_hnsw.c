/*
 * parse_hnsw.c: the index block of a tensor field, which sets up its
 * nearest-neighbour graph:
 *     index { hnsw { max-links-per-node: 16  neighbors-to-explore-at-insert: 200 } }
 * (also index: hnsw).  The graph exists when the field's indexing has
 * "index" (parse.c); these settings only tune it.  multi-threaded-indexing
 * is accepted and changes nothing (the store inserts on its one writer).
 *
 * Also the rank-profile settings that tune searching the graph
 * (approximate-threshold: 0.05, ...; enum rank_nn_setting), each a number
 * in its range, given at most once in a profile and inherited.
 */
#include <math.h>
#include <stdio.h>

#include "rank_syntax.h"

static const struct rank_nn_setting_info nn_settings[RANK_NN_NSETTINGS] = {
	[RANK_NN_APPROXIMATE_THRESHOLD] = {"approximate-threshold", "approximateThreshold",
	                                   0, 1, 0.05},
	[RANK_NN_FILTER_FIRST_THRESHOLD] = {"filter-first-threshold", "filterFirstThreshold",
	                                    0, 1, 0},
	[RANK_NN_FILTER_FIRST_EXPLORATION] = {"filter-first-exploration",
	                                      "filterFirstExploration", 0, 1, 0.3},
	[RANK_NN_EXPLORATION_SLACK] = {"exploration-slack", "explorationSlack", 0, 1, 0},
	[RANK_NN_TARGET_HITS_MAX_ADJUSTMENT_FACTOR] = {"target-hits-max-adjustment-factor",
	                                               "targetHitsMaxAdjustmentFactor", 1,
	                                               INFINITY, 20},
};

const struct rank_nn_setting_info *rank_nn_setting_info(int which)
{
	return &nn_settings[which];
}

int rank_nn_setting_of(const struct rank_tok *t)
{
	for (int i = 0; i < RANK_NN_NSETTINGS; i++)
		if (rank_tok_is(t, nn_settings[i].name))
			return i;
	return -1;
}

int rank_parse_nn_setting(struct rank_parser *p, const struct rank_tok *t,
                          struct rank_profile_decl *pr)
{
	int i = rank_nn_setting_of(t);
	const struct rank_nn_setting_info *s = &nn_settings[i];
	if (pr->nn_given >> i & 1)
		return rank_parser_fail(p, t, STRATA_TYPE, "%s is given twice in rank-profile '%s'",
		                        s->name, pr->name);
	char after[64];
	snprintf(after, sizeof after, "after '%s'", s->name);
	int rc = rank_parser_expect(p, ":", after);
	if (rc)
		return rc;
	struct rank_tok v;
	double x;
	rank_lex_next(p->lx, RANK_LEX_SCHEMA, &v);
	if (v.kind != RT_NUM)
		return rank_parser_fail(p, &v, STRATA_PARSE, "%s: expected a number, found %s",
		                        s->name, rank_tok_quote(&v));
	if ((rc = rank_tok_number(p->lx, &v, &x, p->err)) != 0)
		return rc;
	if (!(x >= s->lo && x <= s->hi))
		return isinf(s->hi) ? rank_parser_fail(p, &v, STRATA_TYPE, "%s must be %g or more, not %g",
		                                    s->name, s->lo, x)
		                 : rank_parser_fail(p, &v, STRATA_TYPE,
		                                    "%s must be between %g and %g, not %g", s->name,
		                                    s->lo, s->hi, x);
	pr->nn_given |= 1u << i;
	pr->nn[i] = x;
	return 0;
}

static int hnsw_block(struct rank_parser *p, struct rank_field *f, const struct rank_tok *kw)
{
	struct rank_tok t;
	int rc = rank_parser_expect(p, "{", "after 'hnsw'");
	if (rc)
		return rc;
	while ((rc = rank_parser_block_item(p, kw, &t)) > 0) {
		if (rank_tok_is(&t, "max-links-per-node"))
			rc = rank_parser_whole_setting(p, &t, 2, 256, &f->hnsw_m);
		else if (rank_tok_is(&t, "neighbors-to-explore-at-insert"))
			rc = rank_parser_whole_setting(p, &t, 1, 100000, &f->hnsw_ef);
		else if (rank_tok_is(&t, "multi-threaded-indexing"))
			rc = rank_parser_skip_setting(p);
		else
			rc = rank_parser_fail(p, &t, t.kind == RT_NAME ? STRATA_NOT_IMPLEMENTED : STRATA_PARSE,
			                      "hnsw setting %s is not supported", rank_tok_quote(&t));
		if (rc)
			return rc;
	}
	return rc;
}

int rank_parse_tensor_index(struct rank_parser *p, struct rank_field *f, const struct rank_tok *kw)
{
	struct rank_tok t;
	int block, rc = rank_parser_colon_or_block(p, kw, &block);
	if (rc)
		return rc;
	if (!block) {
		rank_lex_next(p->lx, RANK_LEX_SCHEMA, &t);
		if (rank_tok_is(&t, "hnsw"))
			return 0;
		return rank_parser_fail(p, &t, STRATA_NOT_IMPLEMENTED,
		                        "index setting %s on a tensor is not supported (hnsw is)",
		                        rank_tok_quote(&t));
	}
	while ((rc = rank_parser_block_item(p, kw, &t)) > 0) {
		if (!rank_tok_is(&t, "hnsw"))
			return rank_parser_fail(p, &t, t.kind == RT_NAME ? STRATA_NOT_IMPLEMENTED : STRATA_PARSE,
			                        "index setting %s on a tensor is not supported (hnsw is)",
			                        rank_tok_quote(&t));
		if ((rc = hnsw_block(p, f, &t)) != 0)
			return rc;
	}
	return rc;
}
