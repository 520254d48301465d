/*
 * parse_hnsw.c: the index block of a tensor field, which sets up its
 * nearest-neighbour graph:
 *     index { hnsw { max-links-per-node: 16  neighbors-to-explore-at-insert: 200 } }
 * (also index: hnsw).  The graph exists when the field's indexing has
 * "index" (parse.c); these settings only tune it.  multi-threaded-indexing
 * is accepted and changes nothing (the store inserts on its one writer).
 */
#include "rank_syntax.h"

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
