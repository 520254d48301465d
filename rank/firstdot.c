/*
 * firstdot.c: the first phase of the commonest dense profile,
 * sum(query(q) * attribute(f)) (or its operands the other way round), a
 * block of documents at a time.
 *
 * The compiled program of that expression is four instructions: ATTR f,
 * QUERY q, DOT, RET (compile.c fuses the sum of a product into DOT).  Run by
 * the VM it costs a dispatch loop per document, and its one dot product
 * waits on a chain of dependent additions; here the block's rows are
 * gathered from the attribute callbacks (pointers into the store's map,
 * GATHER at a time through attr_rows when the caller has it) and
 * dot.c takes them several at a time in SIMD, with the query's cells loaded
 * once for all.  The scores are the VM's to the bit (dot.c says why); a
 * document without the attribute, whose value reads as zeros, goes through
 * the VM as before.  Any other program is left to the VM.
 */
#include "rank_eval.h"

#define GATHER 64 /* rows handed to the kernels at once */

static size_t cells_of(const struct rank_type *t)
{
	size_t n = 1;
	for (int i = 0; i < t->rank; i++)
		n *= (size_t)t->dims[i];
	return n;
}

int rank_first_dot_shape(const struct rank_profile *p, struct rank_first_dot *out)
{
	const struct rank_prog *g = &p->first;
	if (!p->has_first || g->ncode != 4 || g->nlocals != 0)
		return 0;
	const struct rank_ins *c = g->code, *at, *qu;
	if (c[2].op != RANK_OP_DOT || c[3].op != RANK_OP_RET)
		return 0;
	if (c[0].op == RANK_OP_ATTR && c[1].op == RANK_OP_QUERY)
		at = &c[0], qu = &c[1];
	else if (c[0].op == RANK_OP_QUERY && c[1].op == RANK_OP_ATTR)
		at = &c[1], qu = &c[0];
	else
		return 0;
	const struct rank_field *f = &p->sd->fields[at->a];
	const struct rank_type *ta = &p->types[at->t], *tq = &p->types[qu->t];
	if (f->type != RANK_FT_TENSOR || !rank_dot_cell_ok(f->cell) || rank_type_mapped(ta) ||
	    rank_type_mapped(tq) || ta->rank == 0 || tq->rank == 0)
		return 0;
	size_t n = cells_of(&p->types[c[2].d]);
	if (cells_of(ta) != n || cells_of(tq) != n || p->inputs[qu->a].ncells != n)
		return 0;
	out->field = at->a;
	out->input = qu->a;
	out->cell = f->cell;
	out->n = n;
	return 1;
}

int rank_first_dot_run(struct rank_query *q, const struct rank_first_dot *s,
                       const struct rank_docs *d, const uint32_t *lids, size_t n,
                       double *scores, struct strata_error *err)
{
	const void *got[GATHER], *rows[GATHER];
	size_t at[GATHER];
	double out[GATHER];
	const double *qc = q->inputs[s->input];
	int avx512 = rank_dot_avx512();
	for (size_t from = 0; from < n; from += GATHER) {
		size_t m = n - from < GATHER ? n - from : GATHER, k = 0;
		if (d->attr_rows)
			d->attr_rows(d->ud, s->field, lids + from, m, got);
		else
			for (size_t i = 0; i < m; i++)
				got[i] = d->attr(d->ud, s->field, lids[from + i]);
		for (size_t i = 0; i < m; i++) {
			if (!got[i]) { /* no value: zeros, as the VM reads it */
				int rc = rank_query_first_one(q, lids[from + i], &scores[from + i], err);
				if (rc)
					return rc;
				continue;
			}
			rows[k] = got[i];
			at[k++] = from + i;
		}
		rank_dot_rows(avx512, s->cell, rows, k, qc, s->n, out);
		for (size_t j = 0; j < k; j++)
			scores[at[j]] = out[j];
	}
	return 0;
}
