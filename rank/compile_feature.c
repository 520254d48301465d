/*
 * compile_feature.c: Vespa's rank features over the query's terms, time and
 * iteration, for compile.c: foreach(dimension, variable, feature,
 * condition, operation), term(n).significance/.weight/.connectedness,
 * queryTermCount, fieldTermMatch(f, n).occurrences/.firstPosition,
 * matchCount(f), averageFieldLength(f), num_docs_indexed, now, age(f) and
 * freshness(f) (.logscale), and elementwise(bm25(f), dim, cell_type) (a
 * TERM of a tensor(dim{}) type, whose cells the VM asks the engine for one
 * element at a time).  The term features read the query through the
 * TERM instruction (rank_docs.term); age and freshness are expressions over
 * NOW and the attribute, with the profile's rank properties
 * freshness(f).maxAge and .halfResponse (kept among its constants under
 * those names) as numbers of the program.
 *
 * foreach is unrolled while compiling: the feature is copied once per
 * item, the variable replaced by the term number or the field name (a copy
 * in the profile's pool, which lives as long as the program), each copy
 * compiled and combined as the operation asks.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rank_compile.h"

#define FOREACH_MAX_TERMS 16     /* Vespa's foreach.maxTerms default */
#define FRESH_MAX_AGE (90.0 * 24 * 3600)  /* freshness maxAge: 90 days */
#define FRESH_HALF (7.0 * 24 * 3600)      /* freshness halfResponse: 7 days */
#define TERM_MAX 1000000                  /* a term number beyond any query */

/* The number of rank property name ("freshness(ts).maxAge") in p, or dflt. */
static double property(struct cc *c, const char *name, double dflt)
{
	for (int i = 0; i < c->p->nconsts; i++)
		if (strcmp(c->p->consts[i]->name, name) == 0 && c->p->consts[i]->cells)
			return c->p->consts[i]->cells[0];
	return dflt;
}

/* The field a names (one argument, a name), which must pass kind: 1 a text
 * index, 2 a number attribute.  Its index, or -1 with the error set. */
static int field_arg(struct cc *c, const struct rank_ast *a, int kind, int *rc)
{
	const char *what = kind == 1 ? "a field with a text index" : "a number attribute";
	if (a->nargs < 1 || rank_cc_name_arg(c, a->args[0], "a field name")) {
		*rc = rank_cc_at(c, a, STRATA_TYPE, "%s() takes a field name first", a->name);
		return -1;
	}
	const char *name = a->args[0]->name;
	int fi = rank_schema_field_index(c->p->schema, name);
	const struct rank_field *f = fi >= 0 ? &c->p->sd->fields[fi] : NULL;
	int ok = f && (kind == 1 ? rank_field_token_flags(f) >= 0
	                         : f->attribute && f->type >= RANK_FT_INT && f->type <= RANK_FT_BOOL);
	if (!ok) {
		*rc = rank_cc_at(c, a->args[0], STRATA_TYPE, "%s(): '%s' is not %s", a->name, name, what);
		return -1;
	}
	return fi;
}

/* A term number: a whole number from 0 (foreach's variable becomes one),
 * or a function's parameter called with one. */
static int term_arg(struct cc *c, const struct env *env, const struct rank_ast *a, int *n)
{
	for (const struct env *e = env; a->kind == RA_NAME && e && e->args; e = e->up) {
		int i = 0;
		while (i < e->n && strcmp(e->names[i], a->name) != 0)
			i++;
		if (i == e->n)
			break;
		a = e->args[i];
	}
	if (a->kind != RA_NUM || a->num < 0 || a->num >= TERM_MAX || a->num != floor(a->num))
		return rank_cc_at(c, a, STRATA_TYPE, "a term number (0, 1, ...) is expected here");
	*n = (int)a->num;
	return 0;
}

static int emit_term(struct cc *c, int feature, int field, int term, int *type)
{
	c->prog->doc_dependent = 1;
	*type = 0;
	EMIT(c, RANK_OP_TERM, feature, field, term, 0, 0, 0, 0);
	return 0;
}

/* The output after a feature, one of outs (NULL-ended; the first when
 * none is written).  Its index, or -1 with the error set. */
static int output(struct cc *c, const struct rank_ast *a, const char *const *outs, int *rc)
{
	if (!a->out)
		return 0;
	for (int i = 0; outs[i]; i++)
		if (strcmp(outs[i], a->out) == 0)
			return i;
	*rc = rank_cc_at(c, a, STRATA_TYPE, "%s() has no output '%s'", a->name, a->out);
	return -1;
}

/* term(n) (.connectedness, .significance, .weight), queryTermCount. */
static int compile_term(struct cc *c, const struct env *env, const struct rank_ast *a,
                        int *type)
{
	static const char *const outs[] = { "connectedness", "significance", "weight", NULL };
	static const int feats[] = { RANK_TT_CONNECTEDNESS, RANK_TT_SIGNIFICANCE, RANK_TT_WEIGHT };
	int rc = 0, n, o = output(c, a, outs, &rc);
	if (o < 0)
		return rc;
	if (a->nargs != 1)
		return rank_cc_at(c, a, STRATA_TYPE, "term(n) takes one term number");
	if ((rc = term_arg(c, env, a->args[0], &n)))
		return rc;
	return emit_term(c, feats[o], -1, n, type);
}

/* fieldTermMatch(f, n) (.firstPosition, .occurrences, .weight), matchCount(f),
 * averageFieldLength(f), queryTermDocumentFrequency(f). */
static int compile_field_term(struct cc *c, const struct env *env, const struct rank_ast *a,
                              int *type)
{
	static const char *const outs[] = { "firstPosition", "occurrences", "weight", NULL };
	int rc = 0, n = -1, fi = field_arg(c, a, 1, &rc);
	if (fi < 0)
		return rc;
	if (strcmp(a->name, "fieldTermMatch") == 0) {
		int o = output(c, a, outs, &rc);
		if (o < 0)
			return rc;
		if (a->nargs != 2)
			return rank_cc_at(c, a, STRATA_TYPE, "fieldTermMatch(field, n) takes two arguments");
		if ((rc = term_arg(c, env, a->args[1], &n)))
			return rc;
		return emit_term(c, o == 2 ? RANK_TT_TERM_WEIGHT : o ? RANK_TT_OCCURRENCES
		                                                    : RANK_TT_FIRST_POSITION, fi, n, type);
	}
	if (a->nargs != 1)
		return rank_cc_at(c, a, STRATA_TYPE, "%s(field) takes one field", a->name);
	if (a->out)
		return rank_cc_at(c, a, STRATA_TYPE, "%s() has no output '%s'", a->name, a->out);
	if (a->name[0] == 'q') {
		/* tensor<double>(term{}): a cell per term that searches the field */
		static char term[] = "term";
		struct rank_type r = { .cell = BASE_DT_DOUBLE, .rank = 1 };
		r.dims[0] = RANK_DIM_MAPPED;
		r.dim_names[0] = term;
		if ((*type = rank_cc_add_type(c->p, &r)) < 0)
			return rank_cc_nomem(c);
		c->prog->doc_dependent = 1;
		EMIT(c, RANK_OP_TERM, RANK_TT_DOC_FREQ, fi, -1, 0, 0, *type, 0);
		return 0;
	}
	return emit_term(c, a->name[0] == 'm' ? RANK_TT_MATCH_COUNT : RANK_TT_AVG_LENGTH, fi, -1,
	                 type);
}

/* age(f): now - f in seconds, at least 0; pushed as a number. */
static int emit_age(struct cc *c, int fi)
{
	c->prog->doc_dependent = 1;
	EMIT(c, RANK_OP_NOW, 0, 0, 0, 0, 0, 0, 0);
	EMIT(c, RANK_OP_ATTR, fi, 0, 0, 0, 0, 0, 0);
	EMIT(c, RANK_OP_BIN, RB_SUB, 0, 0, 0, 0, 0, 0);
	EMIT(c, RANK_OP_NUM, 0, 0, 0, 0, 0, 0, 0.0);
	EMIT(c, RANK_OP_BIN, RANK_FN_MAX, 0, 0, 0, 0, 0, 0);
	return 0;
}

/* freshness(f): max(1 - age / maxAge, 0); .logscale: (log(m + s) -
 * log(min(age, m) + s)) / (log(m + s) - log(s)), s = h^2 / (m - 2h), which is
 * 0.5 at age h (halfResponse) and 0 from age m (maxAge) on.  Out-of-range
 * properties are brought in range as Vespa does. */
static int compile_freshness(struct cc *c, const struct rank_ast *a, int *type)
{
	static const char *const outs[] = { "out", "logscale", NULL };
	int rc = 0, fi = field_arg(c, a, 2, &rc), o;
	if (fi < 0)
		return rc;
	if (a->nargs != 1)
		return rank_cc_at(c, a, STRATA_TYPE, "%s(field) takes one attribute", a->name);
	*type = 0;
	if (a->name[0] == 'a') {
		if (a->out)
			return rank_cc_at(c, a, STRATA_TYPE, "age() has no output '%s'", a->out);
		return emit_age(c, fi);
	}
	if ((o = output(c, a, outs, &rc)) < 0)
		return rc;
	char key[300];
	snprintf(key, sizeof key, "freshness(%s).maxAge", a->args[0]->name);
	double m = property(c, key, FRESH_MAX_AGE);
	snprintf(key, sizeof key, "freshness(%s).halfResponse", a->args[0]->name);
	double h = property(c, key, FRESH_HALF);
	if (m < 1)
		m = 1;
	if (h < 1)
		h = 1;
	if (h >= m / 2)
		h = m / 2 - 1;
	if (o == 0) {
		EMIT(c, RANK_OP_NUM, 0, 0, 0, 0, 0, 0, 1.0);
		if ((rc = emit_age(c, fi)))
			return rc;
		EMIT(c, RANK_OP_NUM, 0, 0, 0, 0, 0, 0, m);
		EMIT(c, RANK_OP_BIN, RB_DIV, 0, 0, 0, 0, 0, 0);
		EMIT(c, RANK_OP_BIN, RB_SUB, 0, 0, 0, 0, 0, 0);
		EMIT(c, RANK_OP_NUM, 0, 0, 0, 0, 0, 0, 0.0);
		EMIT(c, RANK_OP_BIN, RANK_FN_MAX, 0, 0, 0, 0, 0, 0);
		return 0;
	}
	double s = h * h / (m - 2 * h), top = log(m + s);
	EMIT(c, RANK_OP_NUM, 0, 0, 0, 0, 0, 0, top);
	if ((rc = emit_age(c, fi)))
		return rc;
	EMIT(c, RANK_OP_NUM, 0, 0, 0, 0, 0, 0, m);
	EMIT(c, RANK_OP_BIN, RANK_FN_MIN, 0, 0, 0, 0, 0, 0);
	EMIT(c, RANK_OP_NUM, 0, 0, 0, 0, 0, 0, s);
	EMIT(c, RANK_OP_BIN, RB_ADD, 0, 0, 0, 0, 0, 0);
	EMIT(c, RANK_OP_UN, RANK_FN_LOG, 0, 0, 0, 0, 0, 0);
	EMIT(c, RANK_OP_BIN, RB_SUB, 0, 0, 0, 0, 0, 0);
	EMIT(c, RANK_OP_NUM, 0, 0, 0, 0, 0, 0, 1.0 / (top - log(s)));
	EMIT(c, RANK_OP_BIN, RB_MUL, 0, 0, 0, 0, 0, 0);
	return 0;
}

int rank_cc_label(struct cc *c, const char *label)
{
	struct rank_profile *p = c->p;
	for (int i = 0; i < p->nlabels; i++)
		if (strcmp(p->labels[i], label) == 0)
			return i;
	if (p->nlabels == p->caplabels) {
		/* the table grows in the pool (a few labels per profile) */
		int cap = p->caplabels ? 2 * p->caplabels : 4;
		const char **v = base_arena_alloc(&p->pool, (size_t)cap * sizeof *v, 8);
		if (!v)
			return rank_cc_nomem(c), -1;
		if (p->nlabels)
			memcpy(v, p->labels, (size_t)p->nlabels * sizeof *v);
		p->labels = v;
		p->caplabels = cap;
	}
	if (!(p->labels[p->nlabels] = rank_cc_pool_str(c, label)))
		return rank_cc_nomem(c), -1;
	return p->nlabels++;
}

int rank_cc_close_label(struct cc *c, const char *label, int distance, int *type)
{
	int i = rank_cc_label(c, label);
	if (i < 0)
		return STRATA_NOMEM;
	c->prog->doc_dependent = 1;
	*type = 0;
	EMIT(c, RANK_OP_CLOSE, -1, distance, i, 0, 0, 0, 0);
	return 0;
}

/* closest(field) and closest(field, label): the label of the document's
 * vector nearest to the query of the nearestNeighbor item on the field
 * (with that label), as a tensor(p{}) (p the field's mapped dimension)
 * holding 1 there, empty when the document has none or no item matches.
 * The field must be a multi-vector tensor attribute. */
static int compile_closest(struct cc *c, const struct rank_ast *a, int *type)
{
	if (a->out || a->nargs < 1 || a->nargs > 2 || rank_cc_name_arg(c, a->args[0], "a field name") ||
	    (a->nargs == 2 && rank_cc_name_arg(c, a->args[1], "a label")))
		return rank_cc_at(c, a, STRATA_TYPE, "closest(field) or closest(field, label) is expected");
	const char *name = a->args[0]->name;
	int fi = rank_schema_field_index(c->p->schema, name);
	const struct rank_field *f = fi >= 0 ? &c->p->sd->fields[fi] : NULL;
	if (!f || !f->attribute || f->type != RANK_FT_TENSOR)
		return rank_cc_at(c, a->args[0], STRATA_TYPE, "closest(): '%s' is not a tensor attribute",
		                  name);
	if (!rank_field_multivec(f))
		return rank_cc_at(c, a->args[0], STRATA_NOT_IMPLEMENTED,
		                  "closest(%s) is not supported: it needs a tensor with one mapped and "
		                  "some indexed dimensions (several vectors per document)", name);
	struct rank_type r = { .cell = BASE_DT_DOUBLE, .rank = 1 };
	r.dims[0] = RANK_DIM_MAPPED;
	for (int k = 0; k < f->rank; k++)
		if (f->dims[k] == RANK_DIM_MAPPED)
			r.dim_names[0] = (char *)rank_cc_pool_str(c, f->dim_names[k]);
	if (!r.dim_names[0] || (*type = rank_cc_add_type(c->p, &r)) < 0)
		return rank_cc_nomem(c);
	int label = -1;
	if (a->nargs == 2 && (label = rank_cc_label(c, a->args[1]->name)) < 0)
		return STRATA_NOMEM;
	c->prog->doc_dependent = 1;
	EMIT(c, RANK_OP_CLOSE, fi, 2, label, 0, 0, *type, 0);
	return 0;
}

/* tensorFromWeightedSet(attribute(f)[, dim]): a weighted set's keys and
 * weights; tensorFromLabels(attribute(f)[, dim]): an array's distinct
 * elements, each 1.  A tensor<double>(dim{}), dim f by default. */
static int compile_from_collection(struct cc *c, const struct rank_ast *a, int *type)
{
	int wset = strcmp(a->name, "tensorFromWeightedSet") == 0;
	const struct rank_ast *src = a->nargs >= 1 ? a->args[0] : NULL;
	if (!src || a->nargs > 2 || a->out || src->kind != RA_CALL ||
	    strcmp(src->name, "attribute") != 0 || src->nargs != 1 ||
	    rank_cc_name_arg(c, src->args[0], "a field name") ||
	    (a->nargs == 2 && rank_cc_name_arg(c, a->args[1], "a dimension name")))
		return rank_cc_at(c, a, STRATA_TYPE, "%s(attribute(field), dimension) is expected",
		                  a->name);
	const char *name = src->args[0]->name;
	int fi = rank_schema_field_index(c->p->schema, name);
	const struct rank_field *f = fi >= 0 ? &c->p->sd->fields[fi] : NULL;
	const struct rank_vtype *e = f && f->vtype ? f->vtype->elem : NULL;
	int elems = e && (e->type == RANK_FT_STRING || e->type == RANK_FT_INT || e->type == RANK_FT_LONG);
	if (!f || !f->attribute || !elems || f->type != (wset ? RANK_FT_WSET : RANK_FT_ARRAY))
		return rank_cc_at(c, src->args[0], STRATA_TYPE,
		                  "%s(): '%s' is not an attribute %s of strings or integers%s", a->name,
		                  name, wset ? "weighted set" : "array",
		                  wset ? "" : " (single values are not supported)");
	const char *dim = rank_cc_pool_str(c, a->nargs == 2 ? a->args[1]->name : name);
	struct rank_type r = { .cell = BASE_DT_DOUBLE, .rank = 1 };
	r.dims[0] = RANK_DIM_MAPPED;
	r.dim_names[0] = (char *)dim;
	if (!dim || (*type = rank_cc_add_type(c->p, &r)) < 0)
		return rank_cc_nomem(c);
	c->prog->doc_dependent = 1;
	EMIT(c, RANK_OP_ATTR, fi, 0, 0, 0, 0, *type, 0);
	return 0;
}

/* fieldMatch(f) and its outputs, in the order of enum rank_field_match. */
static const char *const fieldMatch_outputs[] = {
	"match", "proximity", "completeness", "queryCompleteness", "fieldCompleteness", "orderness",
	"relatedness", "earliness", "longestSequenceRatio", "segmentProximity",
	"unweightedProximity", "absoluteProximity", "occurrence", "absoluteOccurrence", "segments",
	"matches", "degradedMatches", "outOfOrder", "gaps", "gapLength", "longestSequence", "head",
	"tail", "segmentDistance", "weight", "significance", "importance", "weightedOccurrence",
	"weightedAbsoluteOccurrence", "significantOccurrence", NULL,
};

/* textSimilarity(f) (score) and .proximity, .order, .queryCoverage,
 * .fieldCoverage. */
static const char *const textSimilarity_outputs[] = {
	"score", "proximity", "order", "queryCoverage", "fieldCoverage", NULL,
};

static int compile_field_match(struct cc *c, const struct rank_ast *a, int *type)
{
	int sim = a->name[0] == 't';
	int rc = 0, o = output(c, a, sim ? textSimilarity_outputs : fieldMatch_outputs, &rc);
	if (o < 0)
		return rank_cc_at(c, a, STRATA_NOT_IMPLEMENTED,
		                  "%s(f) has no output '%s'", a->name, a->out);
	int fi = field_arg(c, a, 1, &rc);
	if (fi < 0)
		return rc;
	if (a->nargs != 1)
		return rank_cc_at(c, a, STRATA_TYPE, "%s(field) takes one field", a->name);
	return emit_term(c, sim ? RANK_TT_TEXT_SIMILARITY : RANK_TT_FIELD_MATCH, fi, o, type);
}

/* attributeMatch(f) and its outputs (weight, significance and importance,
 * relative to the whole query, are refused). */
static int compile_attr_match(struct cc *c, const struct rank_ast *a, int *type)
{
	static const char *const outs[] = {
		"completeness", "queryCompleteness", "fieldCompleteness", "normalizedWeight",
		"normalizedWeightedWeight", "matches", "totalWeight", "averageWeight", "maxWeight", NULL,
	};
	int rc = 0, o = output(c, a, outs, &rc);
	if (o < 0 && a->out && (strcmp(a->out, "weight") == 0 || strcmp(a->out, "significance") == 0 ||
	                        strcmp(a->out, "importance") == 0))
		return rank_cc_at(c, a, STRATA_NOT_IMPLEMENTED,
		                  "attributeMatch(f).%s is not supported", a->out);
	if (o < 0)
		return rc;
	const struct rank_ast *f = a->nargs == 1 ? a->args[0] : NULL;
	if (!f || rank_cc_name_arg(c, f, "a field name"))
		return rank_cc_at(c, a, STRATA_TYPE, "attributeMatch(field) takes one attribute");
	int fi = rank_schema_field_index(c->p->schema, f->name);
	if (fi < 0 || !c->p->sd->fields[fi].attribute || c->p->sd->fields[fi].type == RANK_FT_TENSOR)
		return rank_cc_at(c, f, STRATA_TYPE, "attributeMatch(): '%s' is not an attribute",
		                  f->name);
	return emit_term(c, RANK_TT_ATTR_MATCH, fi, o, type);
}

/* elementwise(bm25(f), dim[, cell_type]): a tensor<cell_type>(dim{}) with
 * a cell per element of f's value that holds a query term on f, labelled by
 * the element's number, holding bm25 over that element alone (Vespa's; the
 * cell type double when left out).  As in Vespa, f needs a text index but
 * not enable-bm25. */
static int compile_elementwise(struct cc *c, const struct rank_ast *a, int *type)
{
	static const char *const cells[] = { "double", "float", "bfloat16", "int8", NULL };
	static const int dts[] = { BASE_DT_DOUBLE, BASE_DT_FLOAT, BASE_DT_BFLOAT16, BASE_DT_INT8 };
	const struct rank_ast *in = a->nargs >= 1 ? a->args[0] : NULL;
	if (a->out || a->nargs < 2 || a->nargs > 3 || !in || in->kind != RA_CALL ||
	    rank_cc_name_arg(c, a->args[1], "a dimension name") ||
	    (a->nargs == 3 && a->args[2]->kind != RA_NAME))
		return rank_cc_at(c, a, STRATA_TYPE,
		                  "elementwise(feature, dimension, cell_type) is expected");
	if (strcmp(in->name, "bm25") != 0)
		return rank_cc_at(c, in, STRATA_NOT_IMPLEMENTED,
		                  "elementwise(): '%s' is not a feature with elementwise support "
		                  "(only bm25)", in->name);
	if (in->nargs != 1 || in->out || rank_cc_name_arg(c, in->args[0], "a field name"))
		return rank_cc_at(c, in, STRATA_TYPE, "elementwise(bm25(field), ...) is expected");
	int fi = rank_schema_field_index(c->p->schema, in->args[0]->name);
	if (fi < 0 || rank_field_token_flags(&c->p->sd->fields[fi]) < 0)
		return rank_cc_at(c, in->args[0], STRATA_TYPE,
		                  "elementwise(bm25(%s)): '%s' is not a field with a text index",
		                  in->args[0]->name, in->args[0]->name);
	int cell = BASE_DT_DOUBLE;
	if (a->nargs == 3) {
		int k = 0;
		while (cells[k] && strcmp(cells[k], a->args[2]->name) != 0)
			k++;
		if (!cells[k])
			return rank_cc_at(c, a->args[2], STRATA_TYPE,
			                  "elementwise(): '%s' is not a cell type (double, float, "
			                  "bfloat16, int8)", a->args[2]->name);
		cell = dts[k];
	}
	struct rank_type r = { .cell = cell, .rank = 1 };
	r.dims[0] = RANK_DIM_MAPPED;
	r.dim_names[0] = (char *)rank_cc_pool_str(c, a->args[1]->name);
	if (!r.dim_names[0] || (*type = rank_cc_add_type(c->p, &r)) < 0)
		return rank_cc_nomem(c);
	c->prog->doc_dependent = 1;
	EMIT(c, RANK_OP_TERM, RANK_TT_ELEM_BM25, fi, -1, 0, 0, *type, 0);
	return 0;
}

/* ---- nativeRank and its parts --------------------------------------------------- */

#define NATIVE_MAX_FIELDS 16
#define RANK_MAX_FIELDS_ALL 4096   /* fields nativeRank without arguments reads */
#define NATIVE_FIELD_MATCH_WEIGHT 100.0 /* Vespa's nativeRank weights */
#define NATIVE_PROXIMITY_WEIGHT 25.0
#define NATIVE_ATTRIBUTE_MATCH_WEIGHT 100.0

/* Field fi counts for the text parts (1: a text index) or the attribute
 * part (2: an attribute without one, not a tensor). */
static int native_kind(const struct rank_field *f)
{
	if (rank_field_token_flags(f) >= 0)
		return 1;
	return f->attribute && f->type != RANK_FT_TENSOR ? 2 : 0;
}

/* Push sum over the fields of the kind of feature (a TEXT kind, or a TERM
 * output of attributeMatch when attr) / max(sum of den, floor), each field's
 * num and den times its weight. */
static int emit_native_ratio(struct cc *c, const int *fields, int n, int kind, int num, int den,
                             double floor_)
{
	for (int pass = 0; pass < 2; pass++) {
		int k = 0;
		for (int i = 0; i < n; i++) {
			if (native_kind(&c->p->sd->fields[fields[i]]) != kind)
				continue;
			int what = pass ? den : num;
			const struct rank_field *f = &c->p->sd->fields[fields[i]];
			if (kind == 1)
				EMIT(c, RANK_OP_TEXT, what, fields[i], 0, 0, 0, 0, 0);
			else
				EMIT(c, RANK_OP_TERM, RANK_TT_ATTR_MATCH, fields[i], what, 0, 0, 0, 0);
			/* Each field weighs its weight (weight: N), as in Vespa. */
			EMIT(c, RANK_OP_NUM, 0, 0, 0, 0, 0, 0, f->weight ? f->weight : RANK_FIELD_WEIGHT);
			EMIT(c, RANK_OP_BIN, RB_MUL, 0, 0, 0, 0, 0, 0);
			if (k++)
				EMIT(c, RANK_OP_BIN, RB_ADD, 0, 0, 0, 0, 0, 0);
		}
		if (!k)
			EMIT(c, RANK_OP_NUM, 0, 0, 0, 0, 0, 0, 0.0);
	}
	EMIT(c, RANK_OP_NUM, 0, 0, 0, 0, 0, 0, floor_);
	EMIT(c, RANK_OP_BIN, RANK_FN_MAX, 0, 0, 0, 0, 0, 0);
	EMIT(c, RANK_OP_BIN, RB_DIV, 0, 0, 0, 0, 0, 0);
	return 0;
}

/* nativeFieldMatch: the mean score of the query's words on the text fields;
 * nativeProximity: the pairs' boosts over their weights; nativeAttributeMatch:
 * the attribute terms' boosts over their number (engine). */
static int emit_native_part(struct cc *c, const int *fields, int n, int part)
{
	if (part == 0)
		return emit_native_ratio(c, fields, n, 1, RANK_TF_NATIVE_SUM, RANK_TF_NATIVE_TERMS, 1);
	if (part == 1)
		return emit_native_ratio(c, fields, n, 1, RANK_TF_NATIVE_PROX_SUM,
		                         RANK_TF_NATIVE_PROX_WEIGHT, 1e-9);
	return emit_native_ratio(c, fields, n, 2, RANK_AM_NATIVE, RANK_AM_TERMS, 1);
}

/* nativeRank, nativeFieldMatch, nativeProximity, nativeAttributeMatch, with
 * field names (all fields without).  nativeRank is Vespa's weighted sum
 * (field match 100, proximity 25, attribute match 100) over the weights of
 * the parts its fields use (text fields: the first two; attributes
 * without a text index: the third). */
static int compile_native(struct cc *c, const struct rank_ast *a, int *type)
{
	int fields[RANK_MAX_FIELDS_ALL], n = 0, nargs = a->kind == RA_CALL ? a->nargs : 0;
	const char *fname = a->name;
	if (nargs > NATIVE_MAX_FIELDS)
		return rank_cc_at(c, a, STRATA_TYPE, "%s() takes at most %d fields", fname,
		                  NATIVE_MAX_FIELDS);
	if (a->out)
		return rank_cc_at(c, a, STRATA_TYPE, "%s has no output '%s'", fname, a->out);
	for (int i = 0; i < nargs; i++) {
		if (rank_cc_name_arg(c, a->args[i], "a field name"))
			return rank_cc_at(c, a, STRATA_TYPE, "%s() takes field names", fname);
		if ((fields[n++] = rank_schema_field_index(c->p->schema, a->args[i]->name)) < 0)
			return rank_cc_at(c, a->args[i], STRATA_TYPE, "%s(): unknown field '%s'", fname,
			                  a->args[i]->name);
	}
	if (!nargs && c->p->sd->nfields > RANK_MAX_FIELDS_ALL)
		return rank_cc_at(c, a, STRATA_LIMIT, "%s over more than %d fields: name them", fname,
		                  RANK_MAX_FIELDS_ALL);
	for (int i = 0; !nargs && i < c->p->sd->nfields; i++)
		fields[n++] = i;
	c->prog->doc_dependent = 1;
	*type = 0;
	int part = strcmp(fname, "nativeFieldMatch") == 0  ? 0
	           : strcmp(fname, "nativeProximity") == 0 ? 1
	           : strcmp(fname, "nativeAttributeMatch") == 0 ? 2 : -1;
	if (part >= 0)
		return emit_native_part(c, fields, n, part);
	int text = 0, attr = 0, rc, k = 0;
	for (int i = 0; i < n; i++) {
		text |= native_kind(&c->p->sd->fields[fields[i]]) == 1;
		attr |= native_kind(&c->p->sd->fields[fields[i]]) == 2;
	}
	static const double weights[3] = { NATIVE_FIELD_MATCH_WEIGHT, NATIVE_PROXIMITY_WEIGHT,
	                                   NATIVE_ATTRIBUTE_MATCH_WEIGHT };
	double total = 0;
	for (part = 0; part < 3; part++) {
		if (part < 2 ? !text : !attr)
			continue;
		if ((rc = emit_native_part(c, fields, n, part)))
			return rc;
		EMIT(c, RANK_OP_NUM, 0, 0, 0, 0, 0, 0, weights[part]);
		EMIT(c, RANK_OP_BIN, RB_MUL, 0, 0, 0, 0, 0, 0);
		if (k++)
			EMIT(c, RANK_OP_BIN, RB_ADD, 0, 0, 0, 0, 0, 0);
		total += weights[part];
	}
	if (!k) {
		EMIT(c, RANK_OP_NUM, 0, 0, 0, 0, 0, 0, 0.0);
		return 0;
	}
	EMIT(c, RANK_OP_NUM, 0, 0, 0, 0, 0, 0, total);
	EMIT(c, RANK_OP_BIN, RB_DIV, 0, 0, 0, 0, 0, 0);
	return 0;
}

/* ---- foreach ---------------------------------------------------------------- */

enum { FE_TERMS = 1, FE_FIELDS, FE_ATTRIBUTES };
enum { OP_SUM = 1, OP_PRODUCT, OP_AVERAGE, OP_MAX, OP_MIN, OP_COUNT };

/* A copy of a (in the profile's pool) with every name var replaced by the
 * number num (name NULL) or the name name; NULL when memory runs out. */
static struct rank_ast *subst(struct cc *c, const struct rank_ast *a, const char *var,
                              const char *name, double num)
{
	struct rank_ast *d = base_arena_alloc(&c->p->pool, sizeof *d, 8);
	if (!d)
		return NULL;
	*d = *a;
	if (a->kind == RA_NAME && strcmp(a->name, var) == 0) {
		if (name) {
			d->name = (char *)name;
		} else {
			d->kind = RA_NUM;
			d->num = num;
		}
		return d;
	}
	if (a->nargs) {
		d->args = base_arena_alloc(&c->p->pool, (size_t)a->nargs * sizeof *d->args, 8);
		if (!d->args)
			return NULL;
		for (int i = 0; i < a->nargs; i++)
			if (!(d->args[i] = subst(c, a->args[i], var, name, num)))
				return NULL;
	}
	return d;
}

/* The text of a name or string argument ("true", ">0.5"). */
static const char *word(const struct rank_ast *a)
{
	return a->kind == RA_NAME || a->kind == RA_STR ? a->name : NULL;
}

/* Emit the accumulation of one more value (on top of the stack) into
 * locals acc (and n for average): the condition holds where keep says. */
static int foreach_step(struct cc *c, int op, int cond, double bound, int acc, int cnt)
{
	int L = rank_cc_new_local(c), jf = -1;
	EMIT(c, RANK_OP_SET, L, 0, 0, 0, 0, -1, 0);
	if (cond) {
		EMIT(c, RANK_OP_GET, L, 0, 0, 0, 0, 0, 0);
		EMIT(c, RANK_OP_NUM, 0, 0, 0, 0, 0, 0, bound);
		EMIT(c, RANK_OP_BIN, cond, 0, 0, 0, 0, 0, 0);
		if ((jf = rank_cc_emit(c, RANK_OP_JUMPF, 0, 0, 0, 0, 0, -1, 0)) < 0)
			return rank_cc_nomem(c);
	}
	static const int fold[] = { 0, RB_ADD, RB_MUL, RB_ADD, RANK_FN_MAX, RANK_FN_MIN, RB_ADD };
	EMIT(c, RANK_OP_GET, acc, 0, 0, 0, 0, 0, 0);
	if (op == OP_COUNT)
		EMIT(c, RANK_OP_NUM, 0, 0, 0, 0, 0, 0, 1.0);
	else
		EMIT(c, RANK_OP_GET, L, 0, 0, 0, 0, 0, 0);
	EMIT(c, RANK_OP_BIN, fold[op], 0, 0, 0, 0, 0, 0);
	EMIT(c, RANK_OP_SET, acc, 0, 0, 0, 0, -1, 0);
	if (op == OP_AVERAGE) {
		EMIT(c, RANK_OP_GET, cnt, 0, 0, 0, 0, 0, 0);
		EMIT(c, RANK_OP_NUM, 0, 0, 0, 0, 0, 0, 1.0);
		EMIT(c, RANK_OP_BIN, RB_ADD, 0, 0, 0, 0, 0, 0);
		EMIT(c, RANK_OP_SET, cnt, 0, 0, 0, 0, -1, 0);
	}
	if (jf >= 0)
		c->prog->code[jf].a = c->prog->ncode;
	return 0;
}

/* foreach(terms|fields|attributes, v, feature, "true"|">a"|"<a",
 * sum|product|average|max|min|count): the feature with v replaced by each
 * term number from 0 to 15 (foreach.maxTerms, Vespa's default), each field
 * with a text index, or each attribute; the values that pass the condition
 * combined by the operation (average: their mean, 0 for none; max and min
 * of none: -/+DBL_MAX as in Vespa). */
static int compile_foreach(struct cc *c, const struct env *env, const struct rank_ast *a,
                           int *type)
{
	static const char *const dims[] = { "", "terms", "fields", "attributes", NULL };
	static const char *const ops[] = { "", "sum", "product", "average", "max", "min", "count",
	                                   NULL };
	if (a->nargs != 5)
		return rank_cc_at(c, a, STRATA_TYPE,
		                  "foreach(dimension, variable, feature, condition, operation) takes "
		                  "five arguments");
	if (a->out)
		return rank_cc_at(c, a, STRATA_TYPE, "foreach() has no output '%s'", a->out);
	int dim = 0, op = 0, cond = 0;
	const char *w = word(a->args[0]);
	for (int i = 1; w && dims[i]; i++)
		if (strcmp(w, dims[i]) == 0)
			dim = i;
	if (!dim)
		return rank_cc_at(c, a->args[0], STRATA_TYPE,
		                  "foreach(): the dimension is terms, fields or attributes");
	if (a->args[1]->kind != RA_NAME)
		return rank_cc_at(c, a->args[1], STRATA_TYPE, "foreach(): the variable must be a name");
	const char *var = a->args[1]->name;
	w = word(a->args[4]);
	for (int i = 1; w && ops[i]; i++)
		if (strcmp(w, ops[i]) == 0)
			op = i;
	if (!op)
		return rank_cc_at(c, a->args[4], STRATA_TYPE,
		                  "foreach(): the operation is sum, product, average, max, min or "
		                  "count");
	double bound = 0;
	w = word(a->args[3]);
	if (w && (w[0] == '<' || w[0] == '>') && w[1]) {
		char *end;
		bound = strtod(w + 1, &end);
		if (*end == 0 && isfinite(bound))
			cond = w[0] == '<' ? RB_LT : RB_GT;
	}
	if (!cond && !(w && strcmp(w, "true") == 0))
		return rank_cc_at(c, a->args[3], STRATA_TYPE,
		                  "foreach(): the condition is true, \">a\" or \"<a\" (a a number)");
	static const double start[] = { 0, 0, 1, 0, -DBL_MAX, DBL_MAX, 0 };
	int acc = rank_cc_new_local(c), cnt = rank_cc_new_local(c), rc;
	EMIT(c, RANK_OP_NUM, 0, 0, 0, 0, 0, 0, start[op]);
	EMIT(c, RANK_OP_SET, acc, 0, 0, 0, 0, -1, 0);
	EMIT(c, RANK_OP_NUM, 0, 0, 0, 0, 0, 0, 0.0);
	EMIT(c, RANK_OP_SET, cnt, 0, 0, 0, 0, -1, 0);
	const struct rank_sd *sd = c->p->sd;
	int n = dim == FE_TERMS ? FOREACH_MAX_TERMS : sd->nfields;
	for (int i = 0; i < n; i++) {
		const char *name = NULL;
		if (dim != FE_TERMS) {
			const struct rank_field *f = &sd->fields[i];
			if (dim == FE_FIELDS ? rank_field_token_flags(f) < 0 : !f->attribute)
				continue;
			name = f->name;
		}
		int t;
		struct rank_ast *item = subst(c, a->args[2], var, name, i);
		if (!item)
			return rank_cc_nomem(c);
		if ((rc = c->compile(c, env, item, &t)))
			return rc;
		if (T(c, t)->rank != 0)
			return rank_cc_at(c, a->args[2], STRATA_TYPE,
			                  "foreach(): the feature must be a number, not a tensor");
		if ((rc = foreach_step(c, op, cond, bound, acc, cnt)))
			return rc;
	}
	EMIT(c, RANK_OP_GET, acc, 0, 0, 0, 0, 0, 0);
	if (op == OP_AVERAGE) {
		/* sum / max(n, 1): 0 when nothing passed */
		EMIT(c, RANK_OP_GET, cnt, 0, 0, 0, 0, 0, 0);
		EMIT(c, RANK_OP_NUM, 0, 0, 0, 0, 0, 0, 1.0);
		EMIT(c, RANK_OP_BIN, RANK_FN_MAX, 0, 0, 0, 0, 0, 0);
		EMIT(c, RANK_OP_BIN, RB_DIV, 0, 0, 0, 0, 0, 0);
	}
	*type = 0;
	return 0;
}

int rank_cc_feature(struct cc *c, const struct env *env, const struct rank_ast *a, int *type,
                    int *handled)
{
	const char *f = a->name;
	int nargs = a->kind == RA_CALL ? a->nargs : 0;
	*handled = 1;
	if (strcmp(f, "foreach") == 0)
		return compile_foreach(c, env, a, type);
	if (strcmp(f, "term") == 0)
		return compile_term(c, env, a, type);
	if (strcmp(f, "fieldTermMatch") == 0 || strcmp(f, "matchCount") == 0 ||
	    strcmp(f, "averageFieldLength") == 0 || strcmp(f, "queryTermDocumentFrequency") == 0)
		return compile_field_term(c, env, a, type);
	if (strcmp(f, "attributeMatch") == 0)
		return compile_attr_match(c, a, type);
	if (strcmp(f, "elementwise") == 0)
		return compile_elementwise(c, a, type);
	if (strcmp(f, "elementSimilarity") == 0) {
		/* Vespa's default output, max((0.35*p+0.15*o+0.30*q+0.20*f)*w) */
		int rc = 0, fi = field_arg(c, a, 1, &rc);
		if (fi < 0)
			return rc;
		if (a->nargs != 1)
			return rank_cc_at(c, a, STRATA_TYPE, "elementSimilarity(field) takes one field");
		if (a->out && strcmp(a->out, "default") != 0)
			return rank_cc_at(c, a, STRATA_NOT_IMPLEMENTED,
			                  "elementSimilarity(f).%s is not supported: only the default "
			                  "output, max((0.35*p+0.15*o+0.30*q+0.20*f)*w)", a->out);
		return emit_term(c, RANK_TT_ELEM_SIMILARITY, fi, -1, type);
	}
	if (strcmp(f, "nativeRank") == 0 || strcmp(f, "nativeFieldMatch") == 0 ||
	    strcmp(f, "nativeProximity") == 0 || strcmp(f, "nativeAttributeMatch") == 0)
		return compile_native(c, a, type);
	if (strcmp(f, "fieldMatch") == 0 || strcmp(f, "textSimilarity") == 0)
		return compile_field_match(c, a, type);
	if (strcmp(f, "tensorFromWeightedSet") == 0 || strcmp(f, "tensorFromLabels") == 0)
		return compile_from_collection(c, a, type);
	if (strcmp(f, "closest") == 0)
		return compile_closest(c, a, type);
	if (strcmp(f, "age") == 0 || strcmp(f, "freshness") == 0)
		return compile_freshness(c, a, type);
	int match = strcmp(f, "random.match") == 0; /* a bare name keeps its dot */
	if (strcmp(f, "random") == 0 || match) {
		/* random, random(name): per document, new each query; .match: the
		 * same for a document in every query */
		if (nargs > 1 || (nargs && rank_cc_name_arg(c, a->args[0], "a name")) ||
		    (a->out && strcmp(a->out, "match") != 0))
			return rank_cc_at(c, a, STRATA_TYPE,
			                  "random, random(name) or random.match is expected");
		const char *salt = nargs ? a->args[0]->name : "";
		c->prog->doc_dependent = 1;
		*type = 0;
		EMIT(c, RANK_OP_RANDOM, match || a->out != NULL, 0, 0, 0, 0, 0,
		     rank_string_hash(salt, strlen(salt)));
		return 0;
	}
	int q = strcmp(f, "queryTermCount") == 0, nd = strcmp(f, "num_docs_indexed") == 0;
	if (strcmp(f, "now") == 0 || q || nd) {
		if (nargs || a->out)
			return rank_cc_at(c, a, STRATA_TYPE, "%s takes no arguments and has no outputs", f);
		*type = 0;
		if (q || nd)
			return emit_term(c, q ? RANK_TT_COUNT : RANK_TT_NUM_DOCS, -1, -1, type);
		EMIT(c, RANK_OP_NOW, 0, 0, 0, 0, 0, 0, 0);
		return 0;
	}
	*handled = 0;
	return 0;
}
