/*
 * buffers.c: where the buffers of a run context come from and go back to.
 *
 * exec.c runs the kernels; every buffer a run writes into is drawn here
 * (rt_value_get for a value, rt_temp_get for scratch and omitted outputs,
 * rt_pool_get for a sequence item) and given back here: after a value's
 * last reader (rt_value_release), when a node returns (rt_temp_release),
 * when a child's run ends (rt_exec_release_later) and before a top-level
 * run (rt_exec_release_all).  Given-back buffers wait in the pool, where
 * later requests find them (best fit by size); subgraph contexts share the
 * top context's pool.
 *
 * Invariants:
 *  - a buffer is either held by exactly one value (vbuf[v] or an item of
 *    seqs[v]), by the running node's temporaries, by a child's list of
 *    buffers released after its current run, or in the pool;
 *  - buffers outlive runs: the outputs of run N go back to the pool when run
 *    N+1 starts, so a second run with the same shapes takes every buffer
 *    from the pool and allocates nothing (sequence item arrays are kept too);
 *  - the pool keeps at most POOL_MAX_BYTES; past that, released buffers are
 *    freed instead.
 *
 * Static memory plans.  The top context of a model run keys each run by its
 * input-shape class (every input's rank and dims).  The first run of a class
 * draws from the pool and records each value buffer's size and the steps
 * between which it was alive (scratch buffers too); plan.c packs those into
 * offsets of one arena and keeps the plans (struct rt_plans).  Later runs of
 * the class take every buffer at its offset: no search, no allocation.  A
 * plan only ever serves a request that fits its slot; a bigger one (a
 * data-dependent shape) falls back to the pool, so a plan never overflows.
 * Arena slices are struct rt_buf with cap 0.  At most RT_PLAN_MAX plans (and
 * RT_PLAN_MAX_BYTES of arena) are kept per context, the least recently used
 * evicted.  Graph outputs are planned alive to the end of the run, so they
 * stay valid until the next run starts.
 *
 * Views.  A value may view another's cells (rt_output_alias, for Reshape
 * and friends).  root[v] names the value owning the buffer v views and
 * refs[r] counts the live views of r's buffer: r's buffer goes back only
 * when r and every view have had their last reader.  A view of memory the
 * context does not own (a graph input, a constant) has root -1 and is never
 * written.  A plan records which values were views; a planned run copies
 * instead of viewing where the recorded run did not view (exec.c), so
 * lifetimes never grow past the planned ones.
 *
 * Bound outputs.  In a run with IO binding (binding.c), a graph output
 * bound to caller memory takes that memory as its buffer (exec.c decides
 * when), as a struct rt_buf with cap 0 like an arena slice: never freed,
 * pooled or handed to another value, and dropped by the next run's
 * release like any buffer.  The request is still recorded, so a plan made
 * while the output was bound has its slot for a run where it is not; in a
 * run where it is bound that slot simply stays unused.
 */
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "exec_int.h"
#include "kernel.h"

#define POOL_MAX_BYTES ((size_t)1 << 30)
#define ALIGN 64

/* ---- the pool ---------------------------------------------------------------------- */

/* A buffer of at least n bytes: the smallest pooled one that fits, else new. */
int rt_pool_get(struct rt_exec *x, size_t n, struct rt_buf *b)
{
	struct rt_pool *pl = x->pool;
	size_t best = SIZE_MAX;
	for (size_t i = 0; i < pl->n; i++)
		if (pl->b[i].cap >= n && (best == SIZE_MAX || pl->b[i].cap < pl->b[best].cap))
			best = i;
	if (best != SIZE_MAX) {
		*b = pl->b[best];
		pl->b[best] = pl->b[--pl->n];
		pl->bytes -= b->cap;
		return 0;
	}
	for (size_t i = 0; i < pl->nold; i++)
		if (pl->old[i].cap >= n && (best == SIZE_MAX || pl->old[i].cap < pl->old[best].cap))
			best = i;
	if (best != SIZE_MAX) {
		*b = pl->old[best];
		pl->old[best] = pl->old[--pl->nold];
		return 0;
	}
	if (n > SIZE_MAX - ALIGN)
		return STRATA_LIMIT;
	size_t cap = n ? (n + ALIGN - 1) / ALIGN * ALIGN : ALIGN;
	b->p = base_alloc(cap);
	if (!b->p)
		return STRATA_NOMEM;
	b->cap = cap;
	return 0;
}

static void pool_put(struct rt_exec *x, struct rt_buf *b)
{
	struct rt_pool *pl = x->pool;
	if (!b->p || !b->cap) {
		b->p = NULL;
		b->cap = 0;
		return;
	}
	if (pl->bytes + b->cap > POOL_MAX_BYTES ||
	    (pl->n == pl->cap &&
	     base_grow((void **)&pl->b, &pl->cap, pl->n + 1, sizeof *pl->b, 1 << 24) != 0)) {
		base_free(b->p, b->cap);
	} else {
		pl->b[pl->n++] = *b;
		pl->bytes += b->cap;
	}
	BASE_DEBUG_ASSERT(pl->bytes <= POOL_MAX_BYTES);
	b->p = NULL;
	b->cap = 0;
}

/* Free what the pool held before a new plan's first run and that run did
 * not take: the plan replaced it. */
static void old_free(struct rt_pool *pl)
{
	while (pl->nold > 0) {
		pl->nold--;
		base_free(pl->old[pl->nold].p, pl->old[pl->nold].cap);
	}
}

static void buf_free(struct rt_buf *b)
{
	if (b->p && b->cap)
		base_free(b->p, b->cap);
	b->p = NULL;
	b->cap = 0;
}

/* ---- what a run draws: plan slots, recording, scratch ------------------------------ */

/* A buffer that lives until the running node returns. */
void *rt_temp_get(struct rt_exec *x, size_t n)
{
	if (x->ntemp == x->captemp &&
	    base_grow((void **)&x->temp, &x->captemp, x->ntemp + 1, sizeof *x->temp, 1 << 20) != 0)
		return NULL;
	struct rt_buf b;
	if (x->mode == RT_MODE_PLAN) {
		const struct rt_plan *p = x->plan;
		while (x->tnext < p->ntmp && p->tmp[x->tnext].step < x->step)
			x->tnext++;
		if (x->tnext < p->ntmp && p->tmp[x->tnext].step == x->step &&
		    n <= p->tmp[x->tnext].bytes) {
			b.p = (char *)x->pc.arena + p->tmp[x->tnext++].off;
			b.cap = 0;
			x->temp[x->ntemp++] = b;
			return b.p;
		}
	} else if (x->mode == RT_MODE_REC) {
		struct rt_plans *c = &x->pc;
		if (c->ntrec == c->captrec &&
		    base_grow((void **)&c->trec, &c->captrec, c->ntrec + 1, sizeof *c->trec, 1 << 24) != 0)
			c->rec_bad = 1;
		else
			c->trec[c->ntrec++] = (struct rt_plan_scratch){ x->step, n, 0 };
	}
	if (rt_pool_get(x, n, &b) != 0)
		return NULL;
	x->temp[x->ntemp++] = b;
	return b.p;
}

/* The buffer of value v (bytes long): the caller's memory when place is
 * given, else its planned slot when it fits, else from the pool.  A
 * recording run notes the request even when place serves it: the plan must
 * hold v's slot for the runs of the class in which v is not bound. */
int rt_value_get(struct rt_exec *x, int v, size_t bytes, void *place, struct rt_buf *b)
{
	if (x->mode == RT_MODE_REC) {
		if (x->pc.rstart[v] < 0)
			x->pc.rstart[v] = x->step;
		if (bytes > x->pc.rbytes[v])
			x->pc.rbytes[v] = bytes;
		x->pc.rend[v] = INT_MAX;
	}
	if (place) {
		b->p = place;
		b->cap = 0;
		return 0;
	}
	if (x->mode == RT_MODE_PLAN && bytes <= x->plan->cap[v]) {
		b->p = (char *)x->pc.arena + x->plan->off[v];
		b->cap = 0;
		return 0;
	}
	return rt_pool_get(x, bytes, b);
}

/* Value v's own buffer leaves it. */
static void drop_buf(struct rt_exec *x, int v)
{
	if (x->mode == RT_MODE_REC && x->vbuf[v].p)
		x->pc.rend[v] = x->step;
	pool_put(x, &x->vbuf[v]);
}

void rt_temp_release(struct rt_exec *x)
{
	while (x->ntemp > 0)
		pool_put(x, &x->temp[--x->ntemp]);
}

/* ---- values, views and sequences --------------------------------------------------- */

/* Give back the item buffers of a sequence value (its arrays stay). */
static void seq_release(struct rt_exec *x, struct rt_seqv *sv)
{
	for (int i = 0; i < sv->nbufs; i++)
		pool_put(x, &sv->bufs[i]);
	sv->nbufs = 0;
	sv->s.count = 0;
	sv->s.items = sv->own;
}

static void seq_free_arrays(struct rt_seqv *sv)
{
	if (sv->own)
		base_free(sv->own, (size_t)sv->cap * sizeof *sv->own);
	if (sv->bufs)
		base_free(sv->bufs, (size_t)sv->cap * sizeof *sv->bufs);
	memset(sv, 0, sizeof *sv);
}

/* Value v no longer holds anything of its own.  A buffer still viewed by
 * other values stays until the last view goes. */
void rt_value_release(struct rt_exec *x, int v)
{
	int r = x->root[v];
	if (r >= 0) {
		x->root[v] = -1;
		if (--x->refs[r] == 0 && x->hold[r] == RT_HOLD_EMPTY)
			drop_buf(x, r);
	} else if (x->refs[v] == 0) {
		drop_buf(x, v);
	}
	seq_release(x, &x->seqs[v]);
	if (x->g->values[v].producer >= 0)
		x->hold[v] = RT_HOLD_EMPTY;
}

/* v's buffer is the one s owns, or the one s views: its owner counts v
 * among its views until v is released.  A recording run notes the view,
 * so that a planned run makes one only where this one did. */
void rt_value_view(struct rt_exec *x, int v, int s)
{
	rt_value_release(x, v);
	int r = x->vbuf[s].p ? s : x->root[s];
	if (r >= 0) {
		x->root[v] = r;
		x->refs[r]++;
	}
	if (x->mode == RT_MODE_REC)
		x->pc.ralias[v] = 1;
}

void rt_exec_check(const struct rt_exec *x, int ended)
{
#ifdef STRATA_DEBUG
	const struct rt_graph *g = x->g;
	BASE_ASSERT(x->ntemp == 0);
	for (int v = 0; v < g->nvalues; v++) {
		int r = x->root[v];
		/* a view names an owner, which views nothing and keeps its buffer */
		BASE_ASSERT(r >= -1 && r < g->nvalues && r != v);
		if (r >= 0)
			BASE_ASSERT(x->root[r] == -1 && x->vbuf[r].p && x->refs[r] > 0);
		int views = 0;
		for (int w = 0; w < g->nvalues; w++)
			views += x->root[w] == v;
		BASE_ASSERT(views == x->refs[v]);
		/* a value holding nothing owns a buffer only while views remain */
		if (x->hold[v] == RT_HOLD_EMPTY && x->vbuf[v].p)
			BASE_ASSERT(x->refs[v] > 0);
		BASE_ASSERT(x->seqs[v].nbufs <= x->seqs[v].cap && x->seqs[v].s.count <= x->seqs[v].cap);
		/* after a run, only graph outputs, inputs and constants hold */
		if (ended && g->values[v].producer >= 0 && !g->values[v].is_output &&
		    !g->values[v].konst)
			BASE_ASSERT(x->hold[v] == RT_HOLD_EMPTY);
	}
#else
	(void)x;
	(void)ended;
#endif
}

/* Room for one more owned item in sv. */
int rt_seqv_reserve(struct rt_seqv *sv)
{
	if (sv->s.count < sv->cap)
		return 0;
	if (sv->s.count >= RT_SEQ_MAX)
		return STRATA_LIMIT;
	int cap = sv->cap ? 2 * sv->cap : 8;
	struct rt_tensor *own = base_calloc((size_t)cap, sizeof *own);
	struct rt_buf *bufs = base_calloc((size_t)cap, sizeof *bufs);
	if (!own || !bufs) {
		if (own)
			base_free(own, (size_t)cap * sizeof *own);
		if (bufs)
			base_free(bufs, (size_t)cap * sizeof *bufs);
		return STRATA_NOMEM;
	}
	if (sv->cap) {
		memcpy(own, sv->own, (size_t)sv->cap * sizeof *own);
		memcpy(bufs, sv->bufs, (size_t)sv->cap * sizeof *bufs);
	}
	int borrowed = sv->s.items != sv->own;
	seq_free_arrays(&(struct rt_seqv){ .own = sv->own, .bufs = sv->bufs, .cap = sv->cap });
	sv->own = own;
	sv->bufs = bufs;
	sv->cap = cap;
	if (!borrowed)
		sv->s.items = own;
	return 0;
}

/* ---- between runs ------------------------------------------------------------------ */

/* Hand the later lists back: the run that needed them has ended. */
void rt_exec_release_later(struct rt_exec *x)
{
	while (x->nlater > 0)
		pool_put(x, &x->later[--x->nlater]);
	while (x->nlater_seq > 0) {
		struct rt_seqv *sv = &x->later_seq[--x->nlater_seq];
		seq_release(x, sv);
		seq_free_arrays(sv);
	}
}

/* Give back everything x and its children hold (between top-level runs). */
void rt_exec_release_all(struct rt_exec *x)
{
	const struct rt_graph *g = x->g;
	for (int v = 0; v < g->nvalues; v++) {
		pool_put(x, &x->vbuf[v]);
		x->root[v] = -1;
		x->refs[v] = 0;
		seq_release(x, &x->seqs[v]);
		x->hold[v] = g->values[v].konst ? RT_HOLD_TENSOR : RT_HOLD_EMPTY;
		if (g->values[v].konst)
			x->vals[v] = *g->values[v].konst;
	}
	rt_temp_release(x);
	rt_exec_release_later(x);
	for (size_t i = 0; i < x->nkids; i++)
		rt_exec_release_all(x->kids[i].x);
}

/* Move what c's values still hold (the previous run's outputs) to its later
 * lists: the new run's inputs may view them. */
int rt_exec_defer(struct rt_exec *c)
{
	const struct rt_graph *g = c->g;
	for (int v = 0; v < g->nvalues; v++) {
		c->root[v] = -1;
		c->refs[v] = 0;
		if (c->vbuf[v].p) {
			if (c->nlater == c->caplater &&
			    base_grow((void **)&c->later, &c->caplater, c->nlater + 1, sizeof *c->later,
			              1 << 20) != 0)
				return STRATA_NOMEM;
			c->later[c->nlater++] = c->vbuf[v];
			c->vbuf[v].p = NULL;
			c->vbuf[v].cap = 0;
		}
		if (c->seqs[v].cap) {
			if (c->nlater_seq == c->caplater_seq &&
			    base_grow((void **)&c->later_seq, &c->caplater_seq, c->nlater_seq + 1,
			              sizeof *c->later_seq, 1 << 20) != 0)
				return STRATA_NOMEM;
			c->later_seq[c->nlater_seq++] = c->seqs[v];
			memset(&c->seqs[v], 0, sizeof c->seqs[v]);
		}
		c->hold[v] = g->values[v].konst ? RT_HOLD_TENSOR : RT_HOLD_EMPTY;
		c->seqs[v].s.items = NULL;
		c->seqs[v].s.count = 0;
	}
	return 0;
}

/* ---- plans ------------------------------------------------------------------------- */

/* Turn what the run that just ended recorded into a plan (plan.c). */
static void plan_build(struct rt_exec *x)
{
	if (rt_plans_build(&x->pc, x->g->nvalues) != 0)
		return;
	/* Room for the pool's array swap of the plan's first run (see
	 * rt_exec_mode_start), made now so that run allocates nothing. */
	struct rt_pool *pl = x->pool;
	base_grow((void **)&pl->old, &pl->capold, pl->cap + (size_t)x->g->nvalues + 16,
	          sizeof *pl->old, 1 << 24);
}

/* How this run draws buffers: the plan of its input-shape class, or the
 * pool while recording one.  Runs with a sequence or an empty optional
 * input, and contexts that do not plan, use the pool. */
void rt_exec_mode_start(struct rt_exec *x)
{
	const struct rt_graph *g = x->g;
	x->mode = RT_MODE_POOL;
	x->plan = NULL;
	if (!x->planning)
		return;
	size_t k = 0;
	for (int i = 0; i < g->ninputs; i++) {
		int v = g->inputs[i];
		if (x->hold[v] != RT_HOLD_TENSOR)
			return;
		x->pc.key[k++] = x->vals[v].rank;
		for (int d = 0; d < x->vals[v].rank; d++)
			x->pc.key[k++] = x->vals[v].dims[d];
	}
	x->pc.nkey = k;
	x->plan = rt_plans_find(&x->pc);
	if (x->plan) {
		x->mode = RT_MODE_PLAN;
		x->tnext = 0;
		struct rt_pool *pl = x->pool;
		if (x->plan->fresh && pl->nold == 0) {
			struct rt_buf *t = pl->old;
			size_t c = pl->capold;
			pl->old = pl->b;
			pl->nold = pl->n;
			pl->capold = pl->cap;
			pl->b = t;
			pl->cap = c;
			pl->n = 0;
			pl->bytes = 0;
		}
		return;
	}
	x->mode = RT_MODE_REC;
	rt_plans_record(&x->pc, g->nvalues);
}

/* The end of a top-level run.  A plan is only built from a run that
 * succeeded: a failed one may have stopped before some buffers were asked. */
void rt_exec_mode_end(struct rt_exec *x, int rc)
{
	if (rc == 0 && x->mode == RT_MODE_REC && !x->pc.rec_bad)
		plan_build(x);
	if (x->mode == RT_MODE_PLAN) {
		x->plan->fresh = 0;
		old_free(x->pool);
	}
	x->mode = RT_MODE_POOL;
	x->plan = NULL;
}

/* ---- freeing ----------------------------------------------------------------------- */

void rt_exec_buffers_free(struct rt_exec *x)
{
	size_t nv = (size_t)x->g->nvalues + 1;
	if (x->vbuf)
		for (size_t v = 0; v < nv; v++)
			buf_free(&x->vbuf[v]);
	if (x->seqs)
		for (size_t v = 0; v < nv; v++) {
			for (int i = 0; i < x->seqs[v].nbufs; i++)
				base_free(x->seqs[v].bufs[i].p, x->seqs[v].bufs[i].cap);
			seq_free_arrays(&x->seqs[v]);
		}
	for (size_t i = 0; i < x->nlater; i++)
		buf_free(&x->later[i]);
	for (size_t i = 0; i < x->nlater_seq; i++) {
		for (int j = 0; j < x->later_seq[i].nbufs; j++)
			base_free(x->later_seq[i].bufs[j].p, x->later_seq[i].bufs[j].cap);
		seq_free_arrays(&x->later_seq[i]);
	}
	if (x->later)
		base_free(x->later, x->caplater * sizeof *x->later);
	if (x->later_seq)
		base_free(x->later_seq, x->caplater_seq * sizeof *x->later_seq);
	for (size_t i = 0; i < x->ntemp; i++)
		buf_free(&x->temp[i]);
	if (x->temp)
		base_free(x->temp, x->captemp * sizeof *x->temp);
	if (!x->outer) {
		for (size_t i = 0; i < x->own_pool.n; i++)
			base_free(x->own_pool.b[i].p, x->own_pool.b[i].cap);
		if (x->own_pool.b)
			base_free(x->own_pool.b, x->own_pool.cap * sizeof *x->own_pool.b);
		old_free(&x->own_pool);
		if (x->own_pool.old)
			base_free(x->own_pool.old, x->own_pool.capold * sizeof *x->own_pool.old);
	}
}
