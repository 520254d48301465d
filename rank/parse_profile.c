/*
 * parse_profile.c: the rank-profile part of the schema parser (parse.c calls
 * it for 'rank-profile', 'onnx-model' and 'constant' blocks): models, phases, functions,
 * match- and summary-features, inputs, constants and rank-properties, into a
 * struct rank_profile_decl.  The values of constants and input defaults are
 * parsed here too (numbers, dense tensor literals, and for constants the
 * blocks of types with mapped dimensions).
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rank_syntax.h"

#define MAX_VALUES (1 << 24) /* cells in one constant or default value */

/* ---- values: numbers and dense tensor literals --------------------------------- */

/* A number with an optional sign. */
static int signed_number(struct rank_parser *p, double *v)
{
	struct rank_tok t;
	int neg = 0;
	rank_lex_next(p->lx, RANK_LEX_SCHEMA, &t);
	if (rank_tok_is(&t, "-") || rank_tok_is(&t, "+")) {
		neg = t.s[0] == '-';
		rank_lex_next(p->lx, RANK_LEX_SCHEMA, &t);
	}
	if (t.kind != RT_NUM)
		return rank_parser_fail(p, &t, STRATA_PARSE, "expected a number, found %s",
		                        rank_tok_quote(&t));
	int rc = rank_tok_number(p->lx, &t, v, p->err);
	if (neg)
		*v = -*v;
	return rc;
}

struct cells {
	double *v;
	size_t n, cap;
};

/* A '[' list of numbers or of nested lists, flattened in order. */
static int value_list(struct rank_parser *p, struct cells *c)
{
	struct rank_tok t;
	rank_lex_next(p->lx, RANK_LEX_SCHEMA, &t); /* the '[' */
	int rc = rank_parser_enter(p, &t);
	if (rc)
		return rc;
	rank_lex_peek(p->lx, RANK_LEX_SCHEMA, &t);
	if (rank_tok_is(&t, "]")) {
		rank_lex_take(p->lx, &t);
		p->depth--;
		return 0;
	}
	for (;;) {
		rank_lex_peek(p->lx, RANK_LEX_SCHEMA, &t);
		if (rank_tok_is(&t, "[")) {
			if ((rc = value_list(p, c)) != 0)
				return rc;
		} else {
			double v;
			if ((rc = signed_number(p, &v)) != 0)
				return rc;
			rc = base_grow((void **)&c->v, &c->cap, c->n + 1, sizeof *c->v, MAX_VALUES);
			if (rc == STRATA_LIMIT)
				return rank_parser_fail(p, &t, rc, "more than %d values", MAX_VALUES);
			if (rc)
				return rank_parser_nomem(p);
			c->v[c->n++] = v;
		}
		rank_lex_next(p->lx, RANK_LEX_SCHEMA, &t);
		if (rank_tok_is(&t, "]"))
			break;
		if (!rank_tok_is(&t, ","))
			return rank_parser_fail(p, &t, STRATA_PARSE,
			                        "expected ',' or ']' in a tensor value, found %s",
			                        rank_tok_quote(&t));
	}
	p->depth--;
	return 0;
}

/* The value of a constant or an input default, of type ty: a number for a
 * rank-0 type, else a dense literal with exactly the type's cell count. */
static int value(struct rank_parser *p, const struct rank_type *ty, double **out, size_t *nout)
{
	struct rank_tok t;
	rank_lex_peek(p->lx, RANK_LEX_SCHEMA, &t);
	size_t want = rank_type_cells(ty);
	struct cells c = {NULL, 0, 0};
	int rc;
	if (rank_tok_is(&t, "{"))
		return rank_parser_fail(p, &t, STRATA_NOT_IMPLEMENTED,
		                        "mapped tensor values ({...}) are not supported");
	if (rank_tok_is(&t, "uri"))
		return rank_parser_fail(p, &t, STRATA_NOT_IMPLEMENTED,
		                        "values read from a uri are not supported");
	if (rank_tok_is(&t, "file"))
		return rank_parser_fail(p, &t, STRATA_NOT_IMPLEMENTED,
		                        "only constants are read from files, not input defaults");
	if (rank_tok_is(&t, "[")) {
		rc = value_list(p, &c);
	} else {
		rc = base_grow((void **)&c.v, &c.cap, 1, sizeof *c.v, MAX_VALUES);
		rc = rc ? rank_parser_nomem(p) : 0;
		if (!rc && (rc = signed_number(p, &c.v[0])) == 0)
			c.n = 1;
		/* A single number fills a rank-0 type only. */
		if (!rc && ty->rank > 0)
			rc = rank_parser_fail(p, &t, STRATA_TYPE,
			                      "a tensor value must be a '[...]' list, found %s",
			                      rank_tok_quote(&t));
	}
	if (!rc && c.n != want)
		rc = rank_parser_fail(p, &t, STRATA_TYPE, "the value has %zu cells, its type %zu", c.n,
		                      want);
	if (!rc) {
		/* Keep exactly n cells: the AST frees with ncells. */
		double *v = base_alloc(want * sizeof *v);
		if (!v) {
			rc = rank_parser_nomem(p);
		} else {
			memcpy(v, c.v, want * sizeof *v);
			*out = v;
			*nout = want;
		}
	}
	if (c.v)
		base_free(c.v, c.cap * sizeof *c.v);
	return rc;
}

/* ---- values of types with mapped dimensions ----------------------------------- */

/* The blocks of a mapped value while it is read. */
struct blocks {
	int nm;           /* mapped dimensions */
	size_t sub;       /* cells of a block */
	size_t n, capl, capc;
	char **labels;    /* n * nm */
	double *cells;    /* n * sub */
};

/* The text of label token t (a name, a number or a quoted string). */
static char *label_text(struct rank_parser *p, const struct rank_tok *t)
{
	if (t->kind == RT_STR)
		return rank_tok_unquote(t);
	if (t->kind == RT_NAME || t->kind == RT_NUM)
		return rank_parser_tokdup(p, t);
	rank_parser_fail(p, t, STRATA_PARSE, "expected a label, found %s", rank_tok_quote(t));
	return NULL;
}

/* The block under labels lab (nm, taken over): its index, or -1 (no memory). */
static long block_at(struct blocks *b, char **lab)
{
	for (size_t i = 0; i < b->n; i++) {
		int k = 0;
		while (k < b->nm && strcmp(b->labels[i * (size_t)b->nm + (size_t)k], lab[k]) == 0)
			k++;
		if (k == b->nm) {
			for (k = 0; k < b->nm; k++)
				base_strfree(lab[k]);
			return (long)i;
		}
	}
	if (base_grow((void **)&b->labels, &b->capl, (b->n + 1) * (size_t)b->nm, sizeof *b->labels,
	              MAX_VALUES) ||
	    base_grow((void **)&b->cells, &b->capc, (b->n + 1) * b->sub, sizeof *b->cells, MAX_VALUES))
		return -1;
	memcpy(b->labels + b->n * (size_t)b->nm, lab, (size_t)b->nm * sizeof *lab);
	memset(b->cells + b->n * b->sub, 0, b->sub * sizeof *b->cells);
	return (long)b->n++;
}

/* One {dim: label, ...}: value entry of the verbose form: its cell in *b. */
static int verbose_cell(struct rank_parser *p, const struct rank_type *ty, struct blocks *b)
{
	struct rank_tok t, d;
	char *lab[RANK_MAX_RANK] = { NULL };
	int64_t idx[RANK_MAX_RANK] = { 0 };
	int seen = 0, rc = 0;
	rank_lex_next(p->lx, RANK_LEX_SCHEMA, &t); /* the '{' */
	while (!rc && !rank_parser_take_if(p, RANK_LEX_SCHEMA, "}")) {
		if (seen && (rc = rank_parser_expect(p, ",", "between the dimensions of an address")))
			break;
		if ((rc = rank_parser_expect_name(p, RANK_LEX_SCHEMA, &d, "a dimension name")) ||
		    (rc = rank_parser_expect(p, ":", "after the dimension")))
			break;
		int k = 0;
		while (k < ty->rank && !rank_tok_is(&d, ty->dim_names[k]))
			k++;
		rank_lex_next(p->lx, RANK_LEX_SCHEMA, &t);
		if (k == ty->rank || (seen >> k & 1)) {
			rc = rank_parser_fail(p, &d, STRATA_TYPE, "%s is not a dimension of the type, or "
			                      "is given twice", rank_tok_quote(&d));
		} else if (ty->dims[k] == RANK_DIM_MAPPED) {
			rc = (lab[k] = label_text(p, &t)) ? 0 : STRATA_NOMEM;
		} else {
			double v = -1;
			if (t.kind == RT_NUM && (rc = rank_tok_number(p->lx, &t, &v, p->err)) != 0)
				break;
			if (v < 0 || v >= (double)ty->dims[k] || v != floor(v))
				rc = rank_parser_fail(p, &t, STRATA_TYPE, "%s is not an index of %s",
				                      rank_tok_quote(&t), ty->dim_names[k]);
			else
				idx[k] = (int64_t)v;
		}
		seen |= 1 << k;
	}
	double v = 0;
	if (!rc && seen != (1 << ty->rank) - 1)
		rc = rank_parser_fail(p, &t, STRATA_TYPE, "the address does not give every dimension");
	if (!rc && !(rc = rank_parser_expect(p, ":", "after the address")))
		rc = signed_number(p, &v);
	char *ml[RANK_MAX_RANK];
	size_t off = 0;
	int m = 0;
	for (int k = 0; k < ty->rank; k++) {
		if (ty->dims[k] == RANK_DIM_MAPPED)
			ml[m++] = lab[k];
		else
			off = off * (size_t)ty->dims[k] + (size_t)idx[k];
	}
	long at = rc ? -1 : block_at(b, ml);
	if (rc || at < 0) {
		for (int k = 0; k < ty->rank; k++)
			base_strfree(lab[k]);
		return rc ? rc : rank_parser_nomem(p);
	}
	b->cells[(size_t)at * b->sub + off] = v;
	return 0;
}

/* One label: value entry of a short form (one mapped dimension): a number
 * (no indexed dimension) or a '[...]' block. */
static int short_cell(struct rank_parser *p, const struct rank_type *ty, struct blocks *b)
{
	struct rank_tok t;
	rank_lex_next(p->lx, RANK_LEX_SCHEMA, &t);
	if (b->nm != 1)
		return rank_parser_fail(p, &t, STRATA_TYPE, "with %d mapped dimensions each cell needs "
		                        "its address ({dim: label, ...}: value)", b->nm);
	char *lab = label_text(p, &t);
	if (!lab)
		return STRATA_NOMEM;
	struct cells c = {NULL, 0, 0};
	int rc = rank_parser_expect(p, ":", "after the label");
	rank_lex_peek(p->lx, RANK_LEX_SCHEMA, &t);
	if (!rc && rank_tok_is(&t, "["))
		rc = value_list(p, &c);
	else if (!rc && !(rc = base_grow((void **)&c.v, &c.cap, 1, sizeof *c.v, MAX_VALUES) ?
	                       rank_parser_nomem(p) : 0) && (rc = signed_number(p, &c.v[0])) == 0)
		c.n = 1;
	if (!rc && c.n != b->sub)
		rc = rank_parser_fail(p, &t, STRATA_TYPE, "the block has %zu cells, its type %zu", c.n,
		                      b->sub);
	long at = rc ? -1 : block_at(b, &lab);
	if (at >= 0)
		memcpy(b->cells + (size_t)at * b->sub, c.v, b->sub * sizeof *c.v);
	else
		base_strfree(lab);
	if (c.v)
		base_free(c.v, c.cap * sizeof *c.v);
	(void)ty;
	return rc ? rc : at < 0 ? rank_parser_nomem(p) : 0;
}

/* A constant's value of a type with mapped dimensions: {label: value, ...},
 * {label: [...], ...} (one mapped dimension) or {{dim: label, ...}: value,
 * ...}, into c's blocks. */
static int mapped_value(struct rank_parser *p, struct rank_constant_decl *c)
{
	const struct rank_type *ty = &c->type;
	struct blocks b = { rank_type_mapped(ty), rank_type_cells(ty), 0, 0, 0, NULL, NULL };
	struct rank_tok t;
	int rc = rank_parser_expect(p, "{", "to begin a value with mapped dimensions");
	for (int first = 1; !rc; first = 0) {
		rank_lex_peek(p->lx, RANK_LEX_SCHEMA, &t);
		if (rank_tok_is(&t, "}")) {
			rank_lex_take(p->lx, &t);
			break;
		}
		if (!first && (rc = rank_parser_expect(p, ",", "between the cells")) != 0)
			break;
		rank_lex_peek(p->lx, RANK_LEX_SCHEMA, &t);
		rc = rank_tok_is(&t, "{") ? verbose_cell(p, ty, &b) : short_cell(p, ty, &b);
	}
	size_t nl = b.n * (size_t)b.nm, nc = b.n * b.sub;
	if (!rc) {
		c->labels = base_alloc((nl ? nl : 1) * sizeof *c->labels);
		c->cells = base_alloc((nc ? nc : 1) * sizeof *c->cells);
		if (!c->labels || !c->cells) {
			base_free(c->labels, (nl ? nl : 1) * sizeof *c->labels);
			base_free(c->cells, (nc ? nc : 1) * sizeof *c->cells);
			c->labels = NULL;
			c->cells = NULL;
			rc = rank_parser_nomem(p);
		}
	}
	if (!rc) {
		memcpy(c->labels, b.labels, nl * sizeof *c->labels);
		memcpy(c->cells, b.cells, nc * sizeof *c->cells);
		c->nblocks = b.n;
		c->ncells = nc ? nc : 1;
	} else {
		for (size_t i = 0; i < nl; i++)
			base_strfree(b.labels[i]);
	}
	if (b.labels)
		base_free(b.labels, b.capl * sizeof *b.labels);
	if (b.cells)
		base_free(b.cells, b.capc * sizeof *b.cells);
	return rc;
}

/* ---- onnx-model ----------------------------------------------------------------------- */

static const char *const ignored_model_settings[] = {
	"gpu-device", "intraop-threads", "interop-threads", "execution-mode", NULL,
};

/* The name of a model input or output: "quoted" or a bare name. */
static int io_name(struct rank_parser *p, const char *what, struct rank_tok *t, char **out)
{
	rank_lex_next(p->lx, RANK_LEX_SCHEMA, t);
	if (t->kind == RT_STR)
		return (*out = rank_tok_unquote(t)) ? 0 : rank_parser_nomem(p);
	if (t->kind != RT_NAME)
		return rank_parser_fail(p, t, STRATA_PARSE, "expected the %s name, found %s", what,
		                        rank_tok_quote(t));
	/* rank_parser_tokdup reports its failure */
	return (*out = rank_parser_tokdup(p, t)) ? 0 : STRATA_NOMEM;
}

int rank_parse_model(struct rank_parser *p, struct rank_model_decl **arr, int *n)
{
	struct rank_tok nm, t;
	int rc = rank_parser_expect_name(p, RANK_LEX_SCHEMA, &nm, "an onnx-model name");
	if (rc)
		return rc;
	if (rank_parser_find_name(*arr, *n, sizeof **arr, &nm) >= 0)
		return rank_parser_fail(p, &nm, STRATA_TYPE, "onnx-model %s is declared twice",
		                        rank_tok_quote(&nm));
	struct rank_model_decl *m = rank_parser_add_named(p, arr, n, sizeof **arr, &nm, &rc);
	if (!m)
		return rc;
	m->pos = rank_parser_pos(p, &nm);
	if ((rc = rank_parser_expect(p, "{", "after the onnx-model name")) != 0)
		return rc;
	while (rank_parser_block_item(p, NULL, &t)) {
		if (rank_tok_is(&t, "file")) {
			if ((rc = rank_parser_expect(p, ":", "after 'file'")) != 0)
				return rc;
			struct rank_tok w;
			rank_lex_word(p->lx, &w);
			if (w.kind != RT_NAME)
				return rank_parser_fail(p, &w, STRATA_PARSE, "expected a file path after 'file:'");
			rank_lex_take(p->lx, &w);
			base_strfree(m->file);
			if (!(m->file = rank_parser_tokdup(p, &w)))
				return STRATA_NOMEM;
		} else if (rank_tok_is(&t, "input")) {
			if ((rc = rank_parser_push(p, &m->inputs, &m->ninputs, sizeof *m->inputs)) != 0)
				return rc;
			struct rank_model_input *in = &m->inputs[m->ninputs - 1];
			struct rank_tok at;
			if ((rc = io_name(p, "input", &at, &in->name)) != 0)
				return rc;
			in->pos = rank_parser_pos(p, &at);
			if ((rc = rank_parser_expect(p, ":", "after the model input name")) != 0)
				return rc;
			if ((rc = rank_feature_lex(p->lx, &in->source, p->err)) != 0)
				return rc;
		} else if (rank_tok_is(&t, "output")) {
			if ((rc = rank_parser_push(p, &m->outputs, &m->noutputs, sizeof *m->outputs)) != 0)
				return rc;
			struct rank_model_output *o = &m->outputs[m->noutputs - 1];
			struct rank_tok at, al;
			if ((rc = io_name(p, "output", &at, &o->name)) != 0)
				return rc;
			o->pos = rank_parser_pos(p, &at);
			if ((rc = rank_parser_expect(p, ":", "after the model output name")) != 0)
				return rc;
			if ((rc = io_name(p, "output alias", &al, &o->alias)) != 0)
				return rc;
		} else if (rank_parser_name_in(&t, ignored_model_settings)) {
			/* How the model runs elsewhere; Strata runs it its own way. */
			if ((rc = rank_parser_skip_setting(p)) != 0)
				return rc;
		} else {
			return rank_parser_fail(p, &t, STRATA_PARSE,
			                        "expected 'file', 'input', 'output' or '}' in onnx-model '%s', found %s",
			                        m->name, rank_tok_quote(&t));
		}
	}
	if (!m->file)
		return rank_parser_fail(p, &nm, STRATA_TYPE, "onnx-model '%s' has no 'file:'", m->name);
	return 0;
}

/* ---- rank profiles ------------------------------------------------------------------ */

/* After 'expression': ": EXPR" or "{ EXPR }". */
static int expression_def(struct rank_parser *p, const struct rank_tok *kw, struct rank_ast **slot)
{
	if (*slot)
		return rank_parser_fail(p, kw, STRATA_TYPE, "the expression is given twice");
	int block;
	int rc = rank_parser_colon_or_block(p, kw, &block);
	if (rc)
		return rc;
	struct rank_lexer save = *p->lx;
	struct rank_tok w, c;
	rank_lex_next(p->lx, RANK_LEX_EXPR, &w);
	rank_lex_peek(p->lx, RANK_LEX_EXPR, &c);
	*p->lx = save;
	if (rank_tok_is(&w, "file") && rank_tok_is(&c, ":"))
		return rank_parser_fail(p, &w, STRATA_NOT_IMPLEMENTED,
		                        "expressions read from files are not supported");
	if ((rc = rank_expr_lex(p->lx, slot, p->err)) != 0)
		return rc;
	if (block)
		return rank_parser_expect(p, "}", "closing the expression block");
	return 0;
}

/* NAME: N, a positive integer of at most max, into *slot. */
static int positive_count(struct rank_parser *p, const char *name, long max, int *slot)
{
	struct rank_tok t;
	char after[64];
	snprintf(after, sizeof after, "after '%s'", name);
	int rc = rank_parser_expect(p, ":", after);
	if (rc)
		return rc;
	rank_lex_next(p->lx, RANK_LEX_SCHEMA, &t);
	if (rank_tok_is(&t, "-"))
		return rank_parser_fail(p, &t, STRATA_TYPE, "%s must be a positive integer", name);
	if (t.kind != RT_NUM)
		return rank_parser_fail(p, &t, STRATA_PARSE, "expected a number after '%s:', found %s",
		                        name, rank_tok_quote(&t));
	long v = 0;
	for (size_t i = 0; i < t.len; i++) {
		if (t.s[i] < '0' || t.s[i] > '9' || v > max)
			return rank_parser_fail(p, &t, STRATA_TYPE,
			                        "%s must be a positive integer, found %s", name,
			                        rank_tok_quote(&t));
		v = v * 10 + (t.s[i] - '0');
	}
	if (v < 1 || v > max) {
		char most[48] = "";
		if (max < 1000000000L)
			snprintf(most, sizeof most, " of at most %ld", max);
		return rank_parser_fail(p, &t, STRATA_TYPE, "%s must be a positive integer%s, found %s",
		                        name, most, rank_tok_quote(&t));
	}
	*slot = (int)v;
	return 0;
}

static int rerank_count(struct rank_parser *p, int *slot)
{
	return positive_count(p, "rerank-count", 1000000000L, slot);
}

/* rank-score-drop-limit: X in a phase: hits the phase scores X or less are
 * dropped after it (*has set, *limit X). */
static int drop_limit(struct rank_parser *p, const struct rank_tok *kw, int *has, double *limit)
{
	if (*has)
		return rank_parser_fail(p, kw, STRATA_TYPE, "rank-score-drop-limit is given twice");
	int rc = rank_parser_expect(p, ":", "after 'rank-score-drop-limit'");
	if (rc || (rc = signed_number(p, limit)) != 0)
		return rc;
	*has = 1;
	return 0;
}

/* first-phase, second-phase or global-phase { ... }; rerank is NULL for the
 * first phase, which has no rerank-count; has_drop and drop are where the
 * phase's rank-score-drop-limit goes. */
static int phase(struct rank_parser *p, const struct rank_tok *kw, struct rank_ast **expr_slot,
                 int *rerank, int *has_drop, double *drop)
{
	struct rank_tok t;
	int rc = rank_parser_expect(p, "{", "after the phase name");
	if (rc)
		return rc;
	while (rank_parser_block_item(p, NULL, &t)) {
		if (rank_tok_is(&t, "expression"))
			rc = expression_def(p, &t, expr_slot);
		else if (rerank && rank_tok_is(&t, "rerank-count"))
			rc = rerank_count(p, rerank);
		else if (rank_tok_is(&t, "rank-score-drop-limit"))
			rc = drop_limit(p, &t, has_drop, drop);
		else if (rank_tok_is(&t, "keep-rank-count") || rank_tok_is(&t, "rerank-count"))
			rc = rank_parser_fail(p, &t, STRATA_NOT_IMPLEMENTED, "%s in %.*s is not supported",
			                      rank_tok_quote(&t),
			                      (int)kw->len, kw->s);
		else
			rc = rank_parser_fail(p, &t, STRATA_PARSE,
			                      "expected 'expression'%s or '}' in %.*s, found %s",
			                      rerank ? ", 'rerank-count', 'rank-score-drop-limit'"
			                             : ", 'rank-score-drop-limit'",
			                      (int)kw->len, kw->s,
			                      rank_tok_quote(&t));
		if (rc)
			return rc;
	}
	return 0;
}

static int function(struct rank_parser *p, struct rank_profile_decl *pr)
{
	struct rank_tok nm, t;
	int rc = rank_parser_expect_name(p, RANK_LEX_EXPR, &nm, "a function name");
	if (rc)
		return rc;
	if (rank_tok_is(&nm, "inline")) {
		rc = rank_parser_expect_name(p, RANK_LEX_EXPR, &nm, "a function name after 'inline'");
		if (rc)
			return rc;
	}
	if (rank_parser_find_name(pr->functions, pr->nfunctions, sizeof *pr->functions, &nm) >= 0)
		return rank_parser_fail(p, &nm, STRATA_TYPE,
		                        "function %s is defined twice in rank-profile '%s'",
		                        rank_tok_quote(&nm), pr->name);
	struct rank_function_decl *f =
		rank_parser_add_named(p, &pr->functions, &pr->nfunctions, sizeof *pr->functions, &nm, &rc);
	if (!f)
		return rc;
	f->pos = rank_parser_pos(p, &nm);
	if ((rc = rank_parser_expect(p, "(", "after the function name")) != 0)
		return rc;
	if (!rank_parser_take_if(p, RANK_LEX_EXPR, ")")) {
		for (;;) {
			if ((rc = rank_parser_expect_name(p, RANK_LEX_EXPR, &t, "a parameter name")) != 0)
				return rc;
			if (rank_parser_find_name(f->params, f->nparams, sizeof *f->params, &t) >= 0)
				return rank_parser_fail(p, &t, STRATA_TYPE, "parameter %s appears twice",
				                        rank_tok_quote(&t));
			if (!rank_parser_add_named(p, &f->params, &f->nparams, sizeof *f->params, &t, &rc))
				return rc;
			rank_lex_next(p->lx, RANK_LEX_EXPR, &t);
			if (rank_tok_is(&t, ")"))
				break;
			if (!rank_tok_is(&t, ","))
				return rank_parser_fail(p, &t, STRATA_PARSE,
				                        "expected ',' or ')' after a parameter, found %s",
				                        rank_tok_quote(&t));
		}
	}
	if ((rc = rank_parser_expect(p, "{", "after the function's parameters")) != 0)
		return rc;
	while (rank_parser_block_item(p, NULL, &t)) {
		if (!rank_tok_is(&t, "expression"))
			return rank_parser_fail(p, &t, STRATA_PARSE,
			                        "expected 'expression' or '}' in function '%s', found %s",
			                        f->name, rank_tok_quote(&t));
		if ((rc = expression_def(p, &t, &f->body)) != 0)
			return rc;
	}
	if (!f->body)
		return rank_parser_fail(p, &nm, STRATA_PARSE, "function '%s' has no expression", f->name);
	return 0;
}

/* match-features / summary-features: ": f1 f2 ..." to the end of the line
 * (nothing after the colon: no features, as Vespa reads it), or
 * "{ f1 f2 ... }". */
static int features(struct rank_parser *p, const struct rank_tok *kw, struct rank_ast ***arr,
                    int *n)
{
	struct rank_tok t;
	int rc;
	int block;
	if (*n)
		return rank_parser_fail(p, kw, STRATA_TYPE, "%s is given twice", rank_tok_quote(kw));
	if ((rc = rank_parser_colon_or_block(p, kw, &block)) != 0)
		return rc;
	for (;;) {
		rank_lex_peek(p->lx, RANK_LEX_EXPR, &t);
		if (block && rank_tok_is(&t, "}")) {
			rank_lex_take(p->lx, &t);
			return 0;
		}
		if (!block && (rank_tok_is(&t, "}") || t.kind == RT_EOF || t.nl_before))
			return 0;
		if (!block && rank_tok_is(&t, ";")) {
			rank_lex_take(p->lx, &t);
			return 0;
		}
		if ((rc = rank_parser_push(p, arr, n, sizeof **arr)) != 0)
			return rc;
		if ((rc = rank_feature_lex(p->lx, &(*arr)[*n - 1], p->err)) != 0)
			return rc;
	}
}

/* The head of an entry of inputs { } (what is "input"; the name is written
 * name or query(name)) or of constants { } ("constant"; name or
 * constant(name)): its name, appended to the array at arrp unless it is
 * there already, then its optional type (double when none is given).
 * Returns the new element, or NULL with *rc set. */
static void *value_entry(struct rank_parser *p, const char *what, void *arrp, int *n, size_t elem,
                         struct rank_tok *nm, int *rc)
{
	int input = strcmp(what, "input") == 0;
	const char *wrapper = input ? "query" : "constant";
	struct rank_tok t;
	*rc = rank_parser_expect_name(p, RANK_LEX_EXPR, nm, input ? "an input name" : "a constant name");
	if (*rc)
		return NULL;
	rank_lex_peek(p->lx, RANK_LEX_EXPR, &t);
	if (rank_tok_is(nm, wrapper) && rank_tok_is(&t, "(")) {
		rank_lex_take(p->lx, &t);
		if ((*rc = rank_parser_expect_name(p, RANK_LEX_EXPR, nm, "a name")) != 0 ||
		    (*rc = rank_parser_expect(p, ")", "after the name")) != 0)
			return NULL;
	}
	void *arr;
	memcpy(&arr, arrp, sizeof arr);
	if (rank_parser_find_name(arr, *n, elem, nm) >= 0) {
		*rc = rank_parser_fail(p, nm, STRATA_TYPE, "%s %s is declared twice", what,
		                       rank_tok_quote(nm));
		return NULL;
	}
	return rank_parser_add_named(p, arrp, n, elem, nm, rc);
}

/* The optional type of an input or a constant: double when none is given.
 * mapped: the type may have mapped dimensions (query inputs). */
static int value_type(struct rank_parser *p, struct rank_type *ty, int mapped)
{
	struct rank_tok t;
	ty->cell = BASE_DT_DOUBLE;
	rank_lex_peek(p->lx, RANK_LEX_SCHEMA, &t);
	if (rank_tok_is(&t, "tensor") || rank_tok_is(&t, "double") || rank_tok_is(&t, "float"))
		return mapped ? rank_type_lex_mapped(p->lx, ty, p->err)
		              : rank_type_lex(p->lx, ty, p->err);
	return 0;
}

/* *cells becomes the one value v (*ncells 1). */
static int one_cell(struct rank_parser *p, double **cells, size_t *ncells, double v)
{
	if (!(*cells = base_alloc(sizeof **cells)))
		return rank_parser_nomem(p);
	(*cells)[0] = v;
	*ncells = 1;
	return 0;
}

/* The default of a string input, ': "text"', as its hash. */
static int string_default(struct rank_parser *p, struct rank_input_decl *in)
{
	struct rank_tok t;
	if (!rank_parser_take_if(p, RANK_LEX_SCHEMA, ":"))
		return 0;
	rank_lex_next(p->lx, RANK_LEX_SCHEMA, &t);
	if (t.kind != RT_STR)
		return rank_parser_fail(p, &t, STRATA_PARSE,
		                        "expected a quoted string as the default of query(%s), found %s",
		                        in->name, rank_tok_quote(&t));
	char *s = rank_tok_unquote(&t);
	if (!s)
		return rank_parser_nomem(p);
	int rc = one_cell(p, &in->dflt, &in->ncells, rank_string_hash(s, strlen(s)));
	base_strfree(s);
	in->has_default = !rc;
	return rc;
}

static int inputs(struct rank_parser *p, struct rank_profile_decl *pr)
{
	struct rank_tok nm;
	int rc = rank_parser_expect(p, "{", "after 'inputs'");
	if (rc)
		return rc;
	while (!rank_parser_take_if(p, RANK_LEX_SCHEMA, "}")) {
		struct rank_input_decl *in =
			value_entry(p, "input", &pr->inputs, &pr->ninputs, sizeof *pr->inputs, &nm, &rc);
		if (!in)
			return rc;
		in->pos = rank_parser_pos(p, &nm);
		struct rank_tok ty;
		rank_lex_peek(p->lx, RANK_LEX_SCHEMA, &ty);
		if (rank_tok_is(&ty, "string") || rank_tok_is(&ty, "int") ||
		    rank_tok_is(&ty, "long") || rank_tok_is(&ty, "bool")) {
			/* numbers; a string is its hash (rank_string_hash) */
			rank_lex_take(p->lx, &ty);
			in->string = rank_tok_is(&ty, "string");
			in->type.cell = BASE_DT_DOUBLE;
			if (in->string && (rc = string_default(p, in)) != 0)
				return rc;
			in->ncells = 1;
			continue;
		}
		if ((rc = value_type(p, &in->type, 1)) != 0)
			return rc;
		in->ncells = rank_type_cells(&in->type);
		struct rank_tok colon;
		rank_lex_peek(p->lx, RANK_LEX_SCHEMA, &colon);
		if (rank_tok_is(&colon, ":") && rank_type_mapped(&in->type))
			return rank_parser_fail(p, &colon, STRATA_NOT_IMPLEMENTED,
			                        "default values of query inputs with mapped "
			                        "dimensions are not supported");
		if (rank_parser_take_if(p, RANK_LEX_SCHEMA, ":")) {
			if ((rc = value(p, &in->type, &in->dflt, &in->ncells)) != 0)
				return rc;
			in->has_default = 1;
		}
	}
	return 0;
}

/* A constant's value read from a file: "file: path" (app.c reads it).
 * Returns 0 when there was one, 1 when the value is written inline, or an
 * error. */
static int constant_file(struct rank_parser *p, struct rank_constant_decl *c)
{
	struct rank_lexer save = *p->lx;
	struct rank_tok w, t;
	rank_lex_next(p->lx, RANK_LEX_SCHEMA, &w);
	rank_lex_peek(p->lx, RANK_LEX_SCHEMA, &t);
	if (!rank_tok_is(&w, "file") || !rank_tok_is(&t, ":")) {
		*p->lx = save;
		return 1;
	}
	rank_lex_take(p->lx, &t);
	rank_lex_word(p->lx, &w);
	if (w.len == 0)
		return rank_parser_fail(p, &w, STRATA_PARSE, "expected a file path after 'file:'");
	rank_lex_take(p->lx, &w);
	if (w.len > 4 && memcmp(w.s + w.len - 4, ".lz4", 4) == 0)
		return rank_parser_fail(p, &w, STRATA_NOT_IMPLEMENTED,
		                        "compressed constant files (.lz4) are not supported");
	c->file_pos = rank_parser_pos(p, &w);
	return (c->file = rank_parser_tokdup(p, &w)) != NULL ? 0 : STRATA_NOMEM;
}

static int constants(struct rank_parser *p, struct rank_profile_decl *pr)
{
	struct rank_tok nm;
	int rc = rank_parser_expect(p, "{", "after 'constants'");
	if (rc)
		return rc;
	while (!rank_parser_take_if(p, RANK_LEX_SCHEMA, "}")) {
		struct rank_constant_decl *c = value_entry(p, "constant", &pr->constants, &pr->nconstants,
		                                           sizeof *pr->constants, &nm, &rc);
		if (!c)
			return rc;
		c->pos = rank_parser_pos(p, &nm);
		if ((rc = value_type(p, &c->type, 1)) != 0 ||
		    (rc = rank_parser_expect(p, ":", "before the constant's value")) != 0)
			return rc;
		rc = constant_file(p, c);
		if (rc > 0)
			rc = rank_type_mapped(&c->type) ? mapped_value(p, c)
			                                : value(p, &c->type, &c->cells, &c->ncells);
		if (rc)
			return rc;
	}
	return 0;
}

/* The schema's constant NAME { file: PATH  type: TYPE } (either order; both
 * needed), into the schema's constants. */
int rank_parse_schema_constant(struct rank_parser *p, const struct rank_tok *kw)
{
	struct rank_tok nm, t;
	int rc = rank_parser_expect_name(p, RANK_LEX_SCHEMA, &nm, "a constant name");
	if (rc)
		return rc;
	if (rank_parser_find_name(p->sd->constants, p->sd->nconstants, sizeof *p->sd->constants,
	                          &nm) >= 0)
		return rank_parser_fail(p, &nm, STRATA_TYPE, "constant %s is declared twice",
		                        rank_tok_quote(&nm));
	struct rank_constant_decl *c = rank_parser_add_named(p, &p->sd->constants,
	                                                     &p->sd->nconstants,
	                                                     sizeof *p->sd->constants, &nm, &rc);
	if (!c)
		return rc;
	c->pos = rank_parser_pos(p, &nm);
	int typed = 0;
	if ((rc = rank_parser_expect(p, "{", "after the constant's name")) != 0)
		return rc;
	while (!rank_parser_take_if(p, RANK_LEX_SCHEMA, "}")) {
		rank_lex_peek(p->lx, RANK_LEX_SCHEMA, &t);
		if (rank_tok_is(&t, "type")) {
			rank_lex_take(p->lx, &t);
			if (typed)
				return rank_parser_fail(p, &t, STRATA_TYPE, "the constant's type is given twice");
			if ((rc = rank_parser_expect(p, ":", "after 'type'")) != 0 ||
			    (rc = rank_type_lex_mapped(p->lx, &c->type, p->err)) != 0)
				return rc;
			typed = 1;
		} else if (rank_tok_is(&t, "file") && !c->file) {
			if ((rc = constant_file(p, c)) != 0)
				return rc > 0 ? rank_parser_fail(p, &t, STRATA_PARSE, "expected 'file:'") : rc;
		} else if (rank_tok_is(&t, "uri")) {
			return rank_parser_fail(p, &t, STRATA_NOT_IMPLEMENTED,
			                        "constants read from a uri are not supported");
		} else {
			return rank_parser_fail(p, &t, STRATA_PARSE,
			                        "expected 'file', 'type' or '}' in constant %s, found %s",
			                        c->name, rank_tok_quote(&t));
		}
	}
	if (!typed || !c->file)
		return rank_parser_fail(p, kw, STRATA_TYPE, "constant %s needs both 'file:' and 'type:'",
		                        c->name);
	return 0;
}

/* Settings that tune how Vespa spreads work; nothing Strata computes changes.
 * (num-threads-per-search and min-hits-per-thread, read by profile_items, split the
 * first phase over threads; they change no result either.) */
static const char *const ignored_profile_settings[] = {
	"num-search-partitions", "termwise-limit", NULL,
};

static const char *const unsupported_profile_settings[] = {
	"match-phase", "diversity", "mutate", "strict", "rank-type",
	"weakand", "significance", "filter-threshold", "post-filter-threshold",
	"ignore-default-rank-features", "constant", "macro", "second-phase-rerank-count",
	"global-phase-rerank-count", "normalizer", "input", NULL,
};

/* A rank property that gives query input `name` its default, or (feature)
 * one that tunes a rank feature, named in full. */
struct prop {
	struct rank_tok name;
	double value;
	int feature;
};

/* The properties of rank features Strata computes: freshness(f).maxAge and
 * freshness(f).halfResponse. */
static int feature_property(const struct rank_tok *key)
{
	static const char *const props[] = { ").maxAge", ").halfResponse", NULL };
	if (key->len < 12 || memcmp(key->s, "freshness(", 10) != 0)
		return 0;
	for (int i = 0; props[i]; i++) {
		size_t n = strlen(props[i]);
		if (key->len > 10 + n && memcmp(key->s + key->len - n, props[i], n) == 0)
			return 1;
	}
	return 0;
}

/* The next blank-free word, across line breaks and comments. */
static void next_word(struct rank_parser *p, struct rank_tok *w)
{
	struct rank_tok t;
	rank_lex_peek(p->lx, RANK_LEX_SCHEMA, &t);
	if (t.kind != RT_EOF) {
		p->lx->off = (size_t)(t.s - p->lx->text);
		p->lx->line = t.line;
		p->lx->col = t.col;
	}
	rank_lex_word(p->lx, w);
	rank_lex_take(p->lx, w);
}

/* One "key: value" of rank-properties { }: query(name) and $name give a
 * number input its default; freshness(f).maxAge and .halfResponse
 * (feature_property) are kept as constants; another rank feature's property
 * (bm25(f).k1) goes to props.c, which refuses the ones Strata lacks by name. */
static int rank_property(struct rank_parser *p, struct rank_profile_decl *pr, struct prop **props,
                         int *n)
{
	struct rank_tok w, val;
	next_word(p, &w);
	size_t k = 0;
	for (int depth = 0; k < w.len && !(w.s[k] == ':' && depth == 0); k++)
		depth += (w.s[k] == '(') - (w.s[k] == ')');
	struct rank_tok key = w, nm = w;
	key.len = nm.len = k;
	int rc;
	if (k + 1 < w.len) {
		val = w;
		val.s += k + 1;
		val.len -= k + 1;
		val.col += (int)k + 1;
	} else if (k == w.len && (rc = rank_parser_expect(p, ":", "after a rank property's name")) != 0) {
		return rc;
	} else {
		next_word(p, &val);
	}
	int feature = 0;
	if (key.len > 1 && key.s[0] == '$') {
		nm.s++, nm.len--, nm.col++;
	} else if (key.len > 7 && memcmp(key.s, "query(", 6) == 0 && key.s[key.len - 1] == ')') {
		nm.s += 6, nm.len -= 7, nm.col += 6;
	} else {
		feature = feature_property(&key);
	}
	char buf[64], *end;
	double v = 0;
	int ok = val.len > 0 && val.len < sizeof buf;
	if (ok) {
		memcpy(buf, val.s, val.len);
		buf[val.len] = 0;
		v = strtod(buf, &end);
		ok = end == buf + val.len && isfinite(v);
	}
	if (!ok)
		return rank_parser_fail(p, &val, STRATA_NOT_IMPLEMENTED,
		                        "rank property '%.*s': only a number is supported (a tensor "
		                        "default goes in inputs { })",
		                        (int)key.len, key.s);
	if (nm.s == key.s && !feature) /* a rank feature's property (props.c) */
		return rank_fprop_parse(p, pr, &key, v);
	for (int i = 0; i < *n; i++)
		if ((*props)[i].name.len == nm.len && memcmp((*props)[i].name.s, nm.s, nm.len) == 0)
			return rank_parser_fail(p, &key, STRATA_TYPE, "rank property '%.*s' is given twice",
			                        (int)key.len, key.s);
	if ((rc = rank_parser_push(p, props, n, sizeof **props)) != 0)
		return rc;
	(*props)[*n - 1] = (struct prop){ nm, v, feature };
	return 0;
}

static int rank_properties(struct rank_parser *p, struct rank_profile_decl *pr, struct prop **props,
                           int *n)
{
	int rc = rank_parser_expect(p, "{", "after 'rank-properties'");
	while (!rc && !rank_parser_take_if(p, RANK_LEX_SCHEMA, "}")) {
		struct rank_tok t;
		rank_lex_peek(p->lx, RANK_LEX_SCHEMA, &t);
		if (t.kind == RT_EOF)
			return rank_parser_fail(p, &t, STRATA_PARSE,
			                        "rank-properties is not closed: expected '}', found end "
			                        "of file");
		rc = rank_property(p, pr, props, n);
	}
	return rc;
}

/* Give each input a property names its default: a number input declared
 * without one, or a new number input. */
static int apply_properties(struct rank_parser *p, struct rank_profile_decl *pr,
                            const struct prop *props, int n)
{
	for (int i = 0; i < n; i++) {
		const struct rank_tok *nm = &props[i].name;
		int k = rank_parser_find_name(pr->inputs, pr->ninputs, sizeof *pr->inputs, nm), rc;
		struct rank_input_decl *in;
		if (props[i].feature) {
			/* kept as a number constant named in full, which no
			 * constant(name) can reach: compile_feature.c reads it */
			struct rank_constant_decl *cd = rank_parser_add_named(
				p, &pr->constants, &pr->nconstants, sizeof *pr->constants, nm, &rc);
			if (!cd)
				return rc;
			cd->pos = rank_parser_pos(p, nm);
			cd->type.cell = BASE_DT_DOUBLE;
			if ((rc = one_cell(p, &cd->cells, &cd->ncells, props[i].value)) != 0)
				return rc;
			continue;
		}
		if (k >= 0) {
			in = &pr->inputs[k];
			if (in->type.rank)
				return rank_parser_fail(p, nm, STRATA_NOT_IMPLEMENTED,
				                        "rank property for query(%s), a tensor: give its "
				                        "default in inputs { }",
				                        in->name);
			if (in->has_default)
				return rank_parser_fail(p, nm, STRATA_TYPE,
				                        "query(%s) has a default in inputs { } already "
				                        "(%d:%d)",
				                        in->name, in->pos.line, in->pos.col);
		} else {
			in = rank_parser_add_named(p, &pr->inputs, &pr->ninputs, sizeof *pr->inputs, nm, &rc);
			if (!in)
				return rc;
			in->pos = rank_parser_pos(p, nm);
			in->type.cell = BASE_DT_DOUBLE;
		}
		if ((rc = one_cell(p, &in->dflt, &in->ncells, props[i].value)) != 0)
			return rc;
		in->has_default = 1;
	}
	return 0;
}

static int profile_items(struct rank_parser *p, struct rank_profile_decl *pr,
                         struct prop **props, int *nprops);

static int profile_body(struct rank_parser *p, struct rank_profile_decl *pr)
{
	struct prop *props = NULL;
	int n = 0;
	int rc = profile_items(p, pr, &props, &n);
	if (!rc)
		rc = apply_properties(p, pr, props, n);
	rank_vec_free(props, n, sizeof *props);
	return rc;
}

/* Does t begin an item of a rank-profile?  A name first on its line does
 * too: where a setting without braces that failed ends. */
static int profile_item(const struct rank_tok *t)
{
	static const char *const items[] = {
		"first-phase", "second-phase", "global-phase", "function", "inputs",
		"rank-properties", "constants", "match-features", "summary-features", "onnx-model",
		"num-threads-per-search", "min-hits-per-thread", "rank", "rank-features", NULL,
	};
	return rank_parser_name_in(t, items) || rank_nn_setting_of(t) >= 0 ||
	       rank_parser_name_in(t, ignored_profile_settings) ||
	       rank_parser_name_in(t, unsupported_profile_settings) || (t->kind == RT_NAME && t->nl_before);
}

/* What a rank-profile's braces hold, up to its '}'. */
static int profile_items(struct rank_parser *p, struct rank_profile_decl *pr,
                         struct prop **props, int *nprops)
{
	struct rank_tok t;
	unsigned seen = 0;
	for (;;) {
		int rc;
		struct rank_lexer save = *p->lx;
		if (!rank_parser_block_item(p, NULL, &t))
			return 0;
		static const char *const phases[] = {"first-phase", "second-phase", "global-phase"};
		int ph = -1;
		for (int i = 0; i < 3; i++)
			if (rank_tok_is(&t, phases[i]))
				ph = i;
		if (ph >= 0 && (seen & (1u << ph))) {
			rc = rank_parser_fail(p, &t, STRATA_TYPE, "%s is given twice in rank-profile '%s'",
			                      rank_tok_quote(&t), pr->name);
		} else if (ph >= 0) {
			seen |= 1u << ph;
			if (ph == 0)
				rc = phase(p, &t, &pr->first_phase, NULL, &pr->has_drop_limit,
				           &pr->drop_limit);
			else if (ph == 1)
				rc = phase(p, &t, &pr->second_phase, &pr->rerank_count, &pr->has_drop2,
				           &pr->drop2);
			else
				rc = phase(p, &t, &pr->global_phase, &pr->global_rerank_count,
				           &pr->has_drop3, &pr->drop3);
		} else if (rank_tok_is(&t, "function")) {
			rc = function(p, pr);
		} else if (rank_tok_is(&t, "inputs")) {
			rc = inputs(p, pr);
		} else if (rank_tok_is(&t, "rank-properties")) {
			rc = rank_properties(p, pr, props, nprops);
		} else if (rank_tok_is(&t, "constants")) {
			rc = constants(p, pr);
		} else if (rank_tok_is(&t, "match-features")) {
			rc = features(p, &t, &pr->match_features, &pr->nmatch_features);
		} else if (rank_tok_is(&t, "summary-features")) {
			rc = features(p, &t, &pr->summary_features, &pr->nsummary_features);
		} else if (rank_tok_is(&t, "onnx-model")) {
			rc = rank_parse_model(p, &pr->models, &pr->nmodels);
		} else if (rank_tok_is(&t, "rank")) {
			rc = rank_parse_profile_rank(p, pr, &t);
		} else if (rank_tok_is(&t, "rank-features")) {
			/* what Vespa dumps with ranking.listFeatures, which Strata
			 * does not offer: read, and changes nothing */
			struct rank_ast **list = NULL;
			int nlist = 0;
			rc = features(p, &t, &list, &nlist);
			for (int i = 0; i < nlist; i++)
				rank_ast_free(list[i]);
			rank_vec_free(list, nlist, sizeof *list);
		} else if (rank_nn_setting_of(&t) >= 0) {
			rc = rank_parse_nn_setting(p, &t, pr);
		} else if (rank_tok_is(&t, "num-threads-per-search")) {
			rc = positive_count(p, "num-threads-per-search", RANK_MAX_THREADS,
			                    &pr->threads_per_search);
		} else if (rank_tok_is(&t, "min-hits-per-thread")) {
			rc = positive_count(p, "min-hits-per-thread", 1000000000L,
			                    &pr->min_hits_per_thread);
		} else if (rank_parser_name_in(&t, ignored_profile_settings)) {
			rc = rank_parser_skip_setting(p);
		} else if (rank_parser_name_in(&t, unsupported_profile_settings)) {
			rc = rank_parser_fail(p, &t, STRATA_NOT_IMPLEMENTED,
			                      "%s in a rank-profile is not supported", rank_tok_quote(&t));
		} else {
			rc = rank_parser_unexpected_in(p, &t, "rank-profile", pr->name);
		}
		if (rc && t.kind != RT_EOF)
			rc = rank_parser_recover(p, rc, &save, profile_item);
		if (rc)
			return rc;
	}
}

int rank_parse_profile(struct rank_parser *p)
{
	struct rank_sd *sd = p->sd;
	struct rank_tok nm, t;
	int rc = rank_parser_expect_name(p, RANK_LEX_SCHEMA, &nm, "a rank-profile name");
	if (rc)
		return rc;
	int i = rank_parser_find_name(sd->profiles, sd->nprofiles, sizeof *sd->profiles, &nm);
	if (i >= 0)
		return rank_parser_fail(p, &nm, STRATA_TYPE,
		                        "rank-profile %s is declared twice (first at %d:%d)",
		                        rank_tok_quote(&nm), sd->profiles[i].pos.line,
		                        sd->profiles[i].pos.col);
	struct rank_profile_decl *pr =
		rank_parser_add_named(p, &sd->profiles, &sd->nprofiles, sizeof *sd->profiles, &nm, &rc);
	if (!pr)
		return rc;
	pr->pos = rank_parser_pos(p, &nm);
	pr->rerank_count = -1;
	pr->global_rerank_count = -1;
	rank_lex_next(p->lx, RANK_LEX_SCHEMA, &t);
	if (rank_tok_is(&t, "inherits")) {
		do {
			if ((rc = rank_parser_expect_name(p, RANK_LEX_SCHEMA, &t,
			                                  "a rank-profile name after 'inherits'")) != 0)
				return rc;
			/* Both arrays grow together: inherits_pos has ninherits too. */
			int npos = pr->ninherits;
			if ((rc = rank_parser_push(p, &pr->inherits_pos, &npos, sizeof *pr->inherits_pos)) != 0)
				return rc;
			pr->inherits_pos[npos - 1] = rank_parser_pos(p, &t);
			if ((rc = rank_parser_push(p, &pr->inherits, &pr->ninherits,
			                           sizeof *pr->inherits)) != 0) {
				/* The two counts would disagree: drop the positions
				 * so the profile still frees by its counts. */
				rank_vec_free(pr->inherits_pos, npos, sizeof *pr->inherits_pos);
				pr->inherits_pos = NULL;
				return rc;
			}
			if (!(pr->inherits[pr->ninherits - 1] = rank_parser_tokdup(p, &t)))
				return STRATA_NOMEM;
			rank_lex_next(p->lx, RANK_LEX_SCHEMA, &t);
		} while (rank_tok_is(&t, ","));
	}
	if (!rank_tok_is(&t, "{"))
		return rank_parser_fail(p, &t, STRATA_PARSE,
		                        "expected '{' after 'rank-profile %s', found %s", pr->name,
		                        rank_tok_quote(&t));
	return profile_body(p, pr);
}
