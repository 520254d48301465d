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
 * RANK_FIRST_DOT_CHUNK at a time through attr_rows when the caller has it) and
 * dot.c takes them several at a time in SIMD, with the query's cells loaded
 * once for all.  The scores are the VM's to the bit (dot.c says why); a
 * document without the attribute, whose value reads as zeros, is left to
 * the VM (query.c), as is any other program.
 */
#include "rank_eval.h"

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

uint64_t rank_first_dot_run(const struct rank_query *q, const struct rank_first_dot *s,
                            const struct rank_docs *d, const uint32_t *lids, size_t m,
                            double *scores)
{
	const void *got[RANK_FIRST_DOT_CHUNK], *rows[RANK_FIRST_DOT_CHUNK];
	size_t at[RANK_FIRST_DOT_CHUNK], k = 0;
	double out[RANK_FIRST_DOT_CHUNK];
	uint64_t missing = 0;
	BASE_DEBUG_ASSERT(m <= RANK_FIRST_DOT_CHUNK);
	if (d->attr_rows)
		d->attr_rows(d->ud, s->field, lids, m, got);
	else
		for (size_t i = 0; i < m; i++)
			got[i] = d->attr(d->ud, s->field, lids[i]);
	for (size_t i = 0; i < m; i++) {
		if (!got[i]) {
			missing |= (uint64_t)1 << i;
			continue;
		}
		rows[k] = got[i];
		at[k++] = i;
	}
	if (k == m) { /* every row there, the common case: straight into scores */
		rank_dot_rows(rank_dot_avx512(), s->cell, got, m, q->inputs[s->input], s->n, scores);
		return 0;
	}
	rank_dot_rows(rank_dot_avx512(), s->cell, rows, k, q->inputs[s->input], s->n, out);
	for (size_t j = 0; j < k; j++)
		scores[at[j]] = out[j];
	return missing;
}
