/*
 * plan.c: offsets for a static memory plan.
 *
 * exec.c records, on the first run of an input-shape class, every buffer the
 * run asked for: its size and the steps (node indices) between which it was
 * alive.  This file packs those intervals into one arena: buffers whose
 * lifetimes overlap get disjoint byte ranges, the others may share bytes.
 * Later runs of the class take each buffer at its offset, with no search.
 *
 * The packing is greedy: largest buffers first, each at the lowest 64-byte
 * aligned offset where it collides with no placed buffer that is alive at
 * the same time.  Large buffers placed first keep the holes the small ones
 * fall into, which is what makes the arena close to the peak of live bytes.
 *
 * Invariants: two items whose closed intervals [start, end] intersect never
 * share a byte; every offset is a multiple of RT_PLAN_ALIGN; the returned
 * total covers every item.
 */
#include <stdlib.h>
#include <string.h>

#include "runtime_int.h"

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
