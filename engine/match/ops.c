/*
 * ops.c: the operator table.  Each kind of where-tree node (enum
 * yql_kind) has one row, a struct eng_op defined in its operator's file:
 * how its field is checked, how one document is tested, and how it yields
 * its documents when it can drive a match.  The table's size is the
 * enum's, checked when this file compiles; a row left out is NULL, which
 * tests/test_yql_ops.c checks.
 *
 * The connectives and constants live here too, since they dispatch
 * through the table: true, false, and, or, !, rank() (its first condition
 * matches, the others only feed rank features), and userQuery() /
 * userInput(), which the request replaces by their conditions before
 * anything matches (userquery.c).  An and is driven by its cheapest
 * operand that can drive (the others are tested on its documents); an or
 * only when every operand can; a negation never.
 */
#include "../engine_int.h"

/* ---- the connectives ------------------------------------------------------------- */

static int true_match(struct eng_match *m, const struct yql_node *n, uint32_t lid)
{
	return 1;
}

static int false_match(struct eng_match *m, const struct yql_node *n, uint32_t lid)
{
	return 0;
}

static int false_open(struct eng_match *m, const struct yql_node *n, struct eng_iter **out)
{
	return eng_iter_give(m, eng_iter_array(NULL, 0, NULL, 0), out);
}

const struct eng_op eng_op_true = { "true", 0, NULL, true_match, NULL };
const struct eng_op eng_op_false = { "false", 0, NULL, false_match, false_open };

static int and_match(struct eng_match *m, const struct yql_node *n, uint32_t lid)
{
	for (int i = 0; i < n->nkids; i++)
		if (!eng_match_node(m, n->kids[i], lid))
			return 0;
	return 1;
}

/* The kids' iterators into kids (*nk of them; those that cannot drive are
 * left out, or *all is 0). */
static int open_kids(struct eng_match *m, const struct yql_node *n, struct eng_iter **kids,
                     int *nk, int *all)
{
	*nk = 0;
	*all = 1;
	for (int i = 0; i < n->nkids; i++) {
		struct eng_iter *it;
		int rc = eng_iter_open(m, n->kids[i], &it);
		if (rc) {
			while (*nk)
				eng_iter_close(kids[--*nk]);
			return rc;
		}
		if (it)
			kids[(*nk)++] = it;
		else
			*all = 0;
	}
	return 0;
}

/* Up to this many operands of an and or an or drive together. */
#define MAX_KIDS 64

static int and_open(struct eng_match *m, const struct yql_node *n, struct eng_iter **out)
{
	struct eng_iter *kids[MAX_KIDS];
	int nk, all;
	*out = NULL;
	if (n->nkids > MAX_KIDS)
		return 0; /* tested per document */
	int rc = open_kids(m, n, kids, &nk, &all);
	if (rc || !nk)
		return rc;
	return eng_iter_give(m, eng_iter_and(kids, nk), out);
}

const struct eng_op eng_op_and = { "and", 1, NULL, and_match, and_open };

static int or_match(struct eng_match *m, const struct yql_node *n, uint32_t lid)
{
	for (int i = 0; i < n->nkids; i++)
		if (eng_match_node(m, n->kids[i], lid))
			return 1;
	return 0;
}

static int or_open(struct eng_match *m, const struct yql_node *n, struct eng_iter **out)
{
	struct eng_iter *kids[MAX_KIDS];
	int nk, all;
	*out = NULL;
	if (n->nkids > MAX_KIDS)
		return 0;
	int rc = open_kids(m, n, kids, &nk, &all);
	if (rc)
		return rc;
	if (!all) { /* one operand cannot drive: neither can the or */
		while (nk)
			eng_iter_close(kids[--nk]);
		return 0;
	}
	return eng_iter_give(m, eng_iter_or(kids, nk), out);
}

const struct eng_op eng_op_or = { "or", 1, NULL, or_match, or_open };

static int not_match(struct eng_match *m, const struct yql_node *n, uint32_t lid)
{
	return !eng_match_node(m, n->kids[0], lid);
}

const struct eng_op eng_op_not = { "!", 1, NULL, not_match, NULL };

static int rank_match(struct eng_match *m, const struct yql_node *n, uint32_t lid)
{
	return eng_match_node(m, n->kids[0], lid);
}

static int rank_open(struct eng_match *m, const struct yql_node *n, struct eng_iter **out)
{
	return eng_iter_open(m, n->kids[0], out);
}

const struct eng_op eng_op_rank = { "rank", 1, NULL, rank_match, rank_open };

/* Replaced before matching: never met here. */
const struct eng_op eng_op_userquery = { "userQuery", 0, NULL, false_match, false_open };
const struct eng_op eng_op_userinput = { "userInput", 0, NULL, false_match, false_open };

const struct eng_op *const eng_ops[] = {
	[YQL_TRUE] = &eng_op_true,
	[YQL_FALSE] = &eng_op_false,
	[YQL_CMP] = &eng_op_cmp,
	[YQL_RANGE] = &eng_op_range,
	[YQL_CONTAINS] = &eng_op_contains,
	[YQL_AND] = &eng_op_and,
	[YQL_OR] = &eng_op_or,
	[YQL_NOT] = &eng_op_not,
	[YQL_NN] = &eng_op_nn,
	[YQL_IN] = &eng_op_in,
	[YQL_MATCHES] = &eng_op_matches,
	[YQL_RANK] = &eng_op_rank,
	[YQL_USERQUERY] = &eng_op_userquery,
	[YQL_USERINPUT] = &eng_op_userinput,
	[YQL_PREDICATE] = &eng_op_predicate,
	[YQL_GEO] = &eng_op_geo,
	[YQL_WSET] = &eng_op_wset,
	[YQL_SAME] = &eng_op_same,
	[YQL_WEAKAND] = &eng_op_weakand,
};
_Static_assert(sizeof eng_ops / sizeof eng_ops[0] == YQL_KINDS,
               "eng_ops: one row per kind of enum yql_kind");

int eng_match_node(struct eng_match *m, const struct yql_node *n, uint32_t lid)
{
	const struct eng_op *op = eng_ops[n->kind];
	if (!op->connective && n->field && n->fidx < 0)
		return 0; /* the type lacks the field */
	return op->match(m, n, lid);
}

int eng_iter_open(struct eng_match *m, const struct yql_node *n, struct eng_iter **out)
{
	const struct eng_op *op = eng_ops[n->kind];
	*out = NULL;
	if (!op->connective && n->field && n->fidx < 0) {
		return eng_iter_give(m, eng_iter_array(NULL, 0, NULL, 0), out);
	}
	return op->open ? op->open(m, n, out) : 0;
}
