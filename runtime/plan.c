/*
 * plan.c: offsets for a static memory plan.
 *
 * buffers.c records, on the first run of an input-shape class, every
 * buffer the run asked for: its size and the steps (node indices) between
 * which it was alive.  This file packs those intervals into one arena:
 * buffers whose lifetimes overlap get disjoint byte ranges, the others may
 * share bytes.  Later runs of the class take each buffer at its offset,
 * with no search.
 *
 * The packing is greedy: largest buffers first, each at the lowest 64-byte
 * aligned offset where it collides with no placed buffer that is alive at
 * the same time.  Large buffers placed first keep the holes the small ones
 * fall into, which is what makes the arena close to the peak of live bytes.
 *
 * The cache (struct rt_plans) keeps up to RT_PLAN_MAX plans per run
 * context, keyed by the input-shape class, least recently used evicted; they
 * share one arena sized for the largest.  buffers.c fills the key and the
 * recording arrays; this file turns a recording into a plan.
 *
 * Invariants: two items whose closed intervals [start, end] intersect never
 * share a byte; every offset is a multiple of RT_PLAN_ALIGN; the returned
 * total covers every item; a failed build leaves the cache as it was, minus
 * at most the plans an arena that could not grow had to drop.
 */
#include <stdlib.h>
#include <string.h>

#include "exec_int.h"
#include "kernel.h"

static int by_size(const void *a, const void *b)
{
	const struct rt_plan_item *x = *(const struct rt_plan_item *const *)a;
	const struct rt_plan_item *y = *(const struct rt_plan_item *const *)b;
	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x < y ? -1 : x > y;
}

static int by_offset(const void *a, const void *b)
{
	const struct rt_plan_item *x = *(const struct rt_plan_item *const *)a;
	const struct rt_plan_item *y = *(const struct rt_plan_item *const *)b;
	return x->off < y->off ? -1 : x->off > y->off;
}

static size_t round_up(size_t n)
{
	return (n + RT_PLAN_ALIGN - 1) / RT_PLAN_ALIGN * RT_PLAN_ALIGN;
}

int rt_plan_place(struct rt_plan_item *it, size_t n, size_t *total)
{
	*total = 0;
	if (n == 0)
		return 0;
	struct rt_plan_item **order = base_calloc(n, sizeof *order);
	struct rt_plan_item **live = base_calloc(n, sizeof *live);
	if (!order || !live) {
		if (order)
			base_free(order, n * sizeof *order);
		if (live)
			base_free(live, n * sizeof *live);
		return STRATA_NOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		it[i].bytes = round_up(it[i].bytes ? it[i].bytes : 1);
		order[i] = &it[i];
	}
	qsort(order, n, sizeof *order, by_size);
	size_t top = 0;
	for (size_t i = 0; i < n; i++) {
		struct rt_plan_item *a = order[i];
		/* The placed items alive together with a, by offset. */
		size_t nl = 0;
		for (size_t j = 0; j < i; j++) {
			struct rt_plan_item *b = order[j];
			if (b->start <= a->end && a->start <= b->end)
				live[nl++] = b;
		}
		qsort(live, nl, sizeof *live, by_offset);
		size_t off = 0;
		for (size_t j = 0; j < nl; j++) {
			if (live[j]->off >= off + a->bytes)
				break;
			if (live[j]->off + live[j]->bytes > off)
				off = live[j]->off + live[j]->bytes;
		}
		a->off = off;
		if (off + a->bytes > top)
			top = off + a->bytes;
	}
	base_free(order, n * sizeof *order);
	base_free(live, n * sizeof *live);
	*total = top;
	return 0;
}

/* ---- the plan cache ------------------------------------------------------------------ */

int rt_plans_init(struct rt_plans *c, int nvalues, int ninputs)
{
	size_t nv = (size_t)nvalues + 1;
	c->capkey = (size_t)ninputs * (RT_MAX_RANK + 1) + 1;
	c->key = base_calloc(c->capkey, sizeof *c->key);
	c->rbytes = base_calloc(nv, sizeof *c->rbytes);
	c->rstart = base_calloc(nv, sizeof *c->rstart);
	c->rend = base_calloc(nv, sizeof *c->rend);
	c->ralias = base_calloc(nv, sizeof *c->ralias);
	return c->key && c->rbytes && c->rstart && c->rend && c->ralias ? 0 : STRATA_NOMEM;
}

static void plan_free(struct rt_plan *p, size_t nv)
{
	if (p->key)
		base_free(p->key, (p->nkey + 1) * sizeof *p->key);
	if (p->off)
		base_free(p->off, nv * sizeof *p->off);
	if (p->cap)
		base_free(p->cap, nv * sizeof *p->cap);
	if (p->aliased)
		base_free(p->aliased, nv);
	if (p->tmp)
		base_free(p->tmp, p->ntmp * sizeof *p->tmp);
	memset(p, 0, sizeof *p);
}

void rt_plans_free(struct rt_plans *c, int nvalues)
{
	size_t nv = (size_t)nvalues + 1;
	while (c->nplans > 0)
		plan_free(&c->plans[--c->nplans], nv);
	if (c->arena)
		base_free(c->arena, c->arena_bytes);
	if (c->key)
		base_free(c->key, c->capkey * sizeof *c->key);
	if (c->rbytes)
		base_free(c->rbytes, nv * sizeof *c->rbytes);
	if (c->rstart)
		base_free(c->rstart, nv * sizeof *c->rstart);
	if (c->rend)
		base_free(c->rend, nv * sizeof *c->rend);
	if (c->ralias)
		base_free(c->ralias, nv * sizeof *c->ralias);
	if (c->trec)
		base_free(c->trec, c->captrec * sizeof *c->trec);
	memset(c, 0, sizeof *c);
}

/* Drop the least recently used plan. */
static void evict(struct rt_plans *c, size_t nv)
{
	int lru = 0;
	for (int i = 1; i < c->nplans; i++)
		if (c->plans[i].used < c->plans[lru].used)
			lru = i;
	plan_free(&c->plans[lru], nv);
	c->plans[lru] = c->plans[--c->nplans];
	memset(&c->plans[c->nplans], 0, sizeof c->plans[c->nplans]);
}

struct rt_plan *rt_plans_find(struct rt_plans *c)
{
	for (int i = 0; i < c->nplans; i++)
		if (c->plans[i].nkey == c->nkey &&
		    memcmp(c->plans[i].key, c->key, c->nkey * sizeof *c->key) == 0) {
			c->plans[i].used = ++c->clock;
			return &c->plans[i];
		}
	return NULL;
}

void rt_plans_record(struct rt_plans *c, int nvalues)
{
	c->rec_bad = 0;
	c->ntrec = 0;
	for (int v = 0; v < nvalues; v++) {
		c->rstart[v] = -1;
		c->rend[v] = -1;
		c->rbytes[v] = 0;
		c->ralias[v] = 0;
	}
}

int rt_plans_build(struct rt_plans *c, int nvalues)
{
	size_t nv = (size_t)nvalues + 1;
	size_t n = c->ntrec;
	for (int v = 0; v < nvalues; v++)
		n += c->rstart[v] >= 0;
	struct rt_plan_item *it = base_calloc(n + 1, sizeof *it);
	struct rt_plan p = { .nkey = c->nkey, .ntmp = c->ntrec };
	p.key = base_calloc(c->nkey + 1, sizeof *p.key);
	p.off = base_calloc(nv, sizeof *p.off);
	p.cap = base_calloc(nv, sizeof *p.cap);
	p.aliased = base_calloc(nv, 1);
	p.tmp = p.ntmp ? base_calloc(p.ntmp, sizeof *p.tmp) : NULL;
	size_t total = 0;
	int rc = it && p.key && p.off && p.cap && p.aliased && (p.tmp || !p.ntmp) ? 0 : STRATA_NOMEM;
	if (rc == 0) {
		size_t k = 0;
		for (int v = 0; v < nvalues; v++)
			if (c->rstart[v] >= 0)
				it[k++] = (struct rt_plan_item){ c->rbytes[v], c->rstart[v], c->rend[v], 0 };
		for (size_t t = 0; t < c->ntrec; t++)
			it[k++] = (struct rt_plan_item){ c->trec[t].bytes, c->trec[t].step,
			                                 c->trec[t].step, 0 };
		rc = rt_plan_place(it, n, &total);
		if (rc == 0 && total > RT_PLAN_MAX_BYTES)
			rc = STRATA_LIMIT;
	}
	p.bytes = total ? total : RT_PLAN_ALIGN;
	if (rc == 0 && p.bytes > c->arena_bytes) {
		/* Nothing lives in the arena between runs that matters: the outputs
		 * of the recorded run were drawn from the pool. */
		if (c->arena)
			base_free(c->arena, c->arena_bytes);
		c->arena_bytes = 0;
		c->arena = base_alloc(p.bytes);
		if (c->arena) {
			c->arena_bytes = p.bytes;
		} else {
			/* The old plans pointed into the arena just freed. */
			while (c->nplans > 0)
				plan_free(&c->plans[--c->nplans], nv);
			rc = STRATA_NOMEM;
		}
	}
	while (rc == 0 && c->nplans >= RT_PLAN_MAX)
		evict(c, nv);
	if (rc == 0) {
		memcpy(p.key, c->key, c->nkey * sizeof *p.key);
		size_t k = 0;
		for (int v = 0; v < nvalues; v++) {
			p.aliased[v] = c->ralias[v];
			if (c->rstart[v] >= 0) {
				p.off[v] = it[k].off;
				p.cap[v] = it[k++].bytes;
			}
		}
		for (size_t t = 0; t < p.ntmp; t++) {
			p.tmp[t] = c->trec[t];
			p.tmp[t].off = it[k].off;
			p.tmp[t].bytes = it[k++].bytes;
		}
		p.used = ++c->clock;
		p.fresh = 1;
		c->plans[c->nplans++] = p;
	} else {
		plan_free(&p, nv);
	}
	if (it)
		base_free(it, (n + 1) * sizeof *it);
	return rc;
}
