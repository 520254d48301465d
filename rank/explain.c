/*
 * explain.c: the EXPLAIN dump of a compiled profile (rank_profile_explain):
 * every program, one line per instruction with its operands and the type it
 * pushes, then the models and their input programs.  It only reads what
 * compile.c made.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "../runtime/runtime.h"
#include "rank_eval.h"

/* ---- EXPLAIN ---------------------------------------------------------------- */

struct sbuf {
	char *s;
	size_t n, cap;
	int fail;
};

static void sb_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
	if (b->fail)
		return;
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		int k = vsnprintf(b->s ? b->s + b->n : NULL, b->s ? b->cap - b->n : 0, fmt, ap);
		va_end(ap);
		if (k < 0) {
			b->fail = 1;
			return;
		}
		if (b->s && b->n + (size_t)k < b->cap) {
			b->n += (size_t)k;
			return;
		}
		size_t ncap = b->cap ? b->cap * 2 : 1024;
		while (ncap < b->n + (size_t)k + 1)
			ncap *= 2;
		char *ns = base_realloc(b->s, b->cap, ncap);
		if (!ns) {
			b->fail = 1;
			return;
		}
		b->s = ns;
		b->cap = ncap;
	}
}

static void explain_prog(struct sbuf *b, const struct rank_profile *p, const struct rank_prog *g)
{
	char tb[256];
	sb_printf(b, "program %s -> %s (%d instructions, %d locals%s)\n", g->name,
	          rank_type_str(&p->types[g->result], tb, sizeof tb), g->ncode, g->nlocals,
	          g->doc_dependent ? "" : ", query-constant");
	for (int i = 0; i < g->ncode; i++) {
		const struct rank_ins *in = &g->code[i];
		sb_printf(b, "  %4d  %-7s", i, rank_op_name(in->op));
		switch (in->op) {
		case RANK_OP_NUM: sb_printf(b, " %.17g", in->k); break;
		case RANK_OP_ATTR: case RANK_OP_CLOSE:
			if (in->a < 0)
				sb_printf(b, " label %s", p->labels[in->c]);
			else
				sb_printf(b, " %s", p->sd->fields[in->a].name);
			if (in->op == RANK_OP_CLOSE)
				sb_printf(b, " %s", in->b == 2 ? "closest" : in->b ? "distance" : "closeness");
			break;
		case RANK_OP_TEXT:
			sb_printf(b, " %s(%s)", in->a == RANK_TF_BM25 ? "bm25"
			                        : in->a == RANK_TF_FIELD_LENGTH ? "fieldLength"
			                        : in->a == RANK_TF_MATCHES ? "matches"
			                        : in->a == RANK_TF_NATIVE_SUM ? "nativeFieldMatchSum"
			                        : in->a == RANK_TF_NATIVE_TERMS ? "nativeFieldMatchTerms"
			                        : in->a == RANK_TF_NATIVE_PROX_SUM ? "nativeProximitySum"
			                        : in->a == RANK_TF_NATIVE_PROX_WEIGHT ? "nativeProximityWeight"
			                        : in->a == RANK_TF_SUBQUERIES_LSB ? "subqueries.lsb"
			                        : in->a == RANK_TF_SUBQUERIES_MSB ? "subqueries.msb"
			                        : in->a == RANK_TF_GEO_DISTANCE ? "distance"
			                        : in->a == RANK_TF_GEO_KM ? "distance.km"
			                        : in->a == RANK_TF_GEO_LATITUDE ? "distance.latitude"
			                        : in->a == RANK_TF_GEO_LONGITUDE ? "distance.longitude"
			                        : in->a == RANK_TF_GEO_CLOSENESS ? "closeness"
			                        : in->a == RANK_TF_RAW_SCORE ? "rawScore"
			                                                     : "itemRawScore",
			          in->a == RANK_TF_ITEM_RAW_SCORE ? rank_profile_item_label(p, in->b)
			                                          : p->sd->fields[in->b].name);
			break;
		case RANK_OP_TERM:
			sb_printf(b, " %d field %s term %d", in->a,
			          in->b >= 0 ? p->sd->fields[in->b].name : "-", in->c);
			break;
		case RANK_OP_QUERY: sb_printf(b, " %s", p->decl->inputs[in->a].name); break;
		case RANK_OP_CONST: sb_printf(b, " %s", p->consts[in->a]->name); break;
		case RANK_OP_GET: case RANK_OP_SET: sb_printf(b, " local%d", in->a); break;
		case RANK_OP_UN: sb_printf(b, " %s", rank_fn_name(in->a, 0)); break;
		case RANK_OP_BIN: sb_printf(b, " %s", rank_fn_name(in->a, 1)); break;
		case RANK_OP_JUMP: case RANK_OP_JUMPF: sb_printf(b, " -> %d", in->a); break;
		case RANK_OP_NORM:
			sb_printf(b, " %d %s", in->a, p->norms[in->a].kind == RANK_NORM_LINEAR
			          ? "normalize_linear" : "reciprocal_rank");
			break;
		case RANK_OP_MAP: case RANK_OP_SMAP:
			if (in->a >= 0)
				sb_printf(b, " lambda@%d(local%d)", in->a, in->b);
			else
				sb_printf(b, " %s", rank_fn_name(in->c, 0));
			break;
		case RANK_OP_JOIN: case RANK_OP_SJOIN: case RANK_OP_SMERGE:
			if (in->a >= 0)
				sb_printf(b, " lambda@%d(local%d,local%d)", in->a, in->b, in->b + 1);
			else
				sb_printf(b, " %s", rank_fn_name(in->c, 1));
			break;
		case RANK_OP_REDUCE: case RANK_OP_SREDUCE: {
			static const char *const aggs[] = { "?", "sum", "avg", "max", "min", "prod",
			                                    "count" };
			sb_printf(b, " %s", aggs[in->a]);
			break;
		}
		case RANK_OP_LIT:
			sb_printf(b, " literal%d", in->a);
			if (in->b)
				sb_printf(b, " (%d computed)", in->b);
			break;
		case RANK_OP_PEEK: sb_printf(b, " address%d (%d computed)", in->a, in->b); break;
		case RANK_OP_UNPACK:
			sb_printf(b, " along %s, %s endian", p->types[in->t].dim_names[in->b],
			          in->a ? "little" : "big");
			break;
		case RANK_OP_CONCAT: case RANK_OP_SCONCAT:
			sb_printf(b, " along %s", p->types[in->t].dim_names[in->a]);
			break;
		case RANK_OP_ONNX: {
			const struct rank_cmodel *cm = &p->models[in->a];
			sb_printf(b, " %s.%s%s", cm->decl->name,
			          runtime_model_output(cm->rt, in->b)->name,
			          cm->batched ? " (batched in second phase)" : "");
			break;
		}
		}
		if (in->t > 0)
			sb_printf(b, "  : %s", rank_type_str(&p->types[in->t], tb, sizeof tb));
		sb_printf(b, "\n");
	}
}

char *rank_profile_explain(const struct rank_profile *p)
{
	struct sbuf b = { 0 };
	sb_printf(&b, "profile %s (rerank-count %d)\n", p->decl->name, p->rerank);
	explain_prog(&b, p, &p->first);
	if (p->has_second)
		explain_prog(&b, p, &p->second);
	if (p->has_global) {
		sb_printf(&b, "global-phase rerank-count %d\n", p->global_rerank);
		for (int i = 0; i < p->nnorms; i++)
			explain_prog(&b, p, &p->norms[i].arg);
		explain_prog(&b, p, &p->global);
	}
	for (int i = 0; i < p->nmatch; i++)
		explain_prog(&b, p, &p->match[i]);
	for (int i = 0; i < p->nsummary; i++)
		explain_prog(&b, p, &p->summary[i]);
	for (int m = 0; m < p->nmodels; m++) {
		const struct rank_cmodel *cm = &p->models[m];
		if (cm->state != 2)
			continue;
		sb_printf(&b, "model %s (%s)%s\n", cm->decl->name, cm->decl->file,
		          cm->batched ? ": batched over second-phase candidates" : ": per document");
		for (int i = 0; i < cm->nin; i++)
			explain_prog(&b, p, &cm->src[i]);
	}
	if (b.fail) {
		base_free(b.s, b.cap);
		return NULL;
	}
	/* hand back a string base_strfree can release */
	char *out = base_strdup(b.s ? b.s : "");
	base_free(b.s, b.cap);
	return out;
}
