/*
 * compile_raw.c: rawScore(field) and itemRawScore(label), the scores of the
 * weighted-set query operators (dotProduct, wand): the sum over the tokens
 * a document matched of the query's weight times the document's.
 * rawScore(f) sums over the operators on field f, itemRawScore(label) is
 * the operator the query labels so ({label: "l"}dotProduct(...)).  Both
 * compile to a TEXT instruction; the engine computes them per document
 * (struct rank_docs.text), from the query, which the profile does not
 * know: a label is kept in the profile's table of item labels, and the
 * instruction names its entry.
 */
#include <string.h>

#include "rank_compile.h"

int rank_cc_raw_score(struct cc *c, const struct rank_ast *a, int *type)
{
	const char *fname = a->name;
	int item = strcmp(fname, "itemRawScore") == 0;
	if (a->nargs != 1 || rank_cc_name_arg(c, a->args[0], item ? "a label" : "a field name"))
		return rank_cc_at(c, a, STRATA_TYPE, "%s() takes (%s)", fname,
		                  item ? "label" : "field");
	const char *name = a->args[0]->name;
	int arg = -1;
	if (item) {
		if ((arg = rank_cc_label(c, name)) < 0)
			return STRATA_NOMEM;
	} else {
		if ((arg = rank_sd_field_index(c->p->sd, name)) < 0)
			return rank_cc_at(c, a->args[0], STRATA_TYPE, "rawScore(): unknown field '%s'",
			                  name);
	}
	c->prog->doc_dependent = 1;
	*type = 0;
	EMIT(c, RANK_OP_TEXT, item ? RANK_TF_ITEM_RAW_SCORE : RANK_TF_RAW_SCORE, arg, 0, 0, 0, 0, 0);
	return 0;
}

const char *rank_profile_item_label(const struct rank_profile *p, int i)
{
	return p && i >= 0 && i < p->nlabels ? p->labels[i] : NULL;
}
