/*
 * alloc.c: the one allocator.  Every heap block of Strata passes through
 * here, so tests can count allocations (globally and per thread) and make the
 * Nth allocation fail to sweep error paths.  Blocks are 64-byte aligned so
 * tensor buffers suit the widest vector loads; callers pass the size back to
 * base_free, which keeps the live-byte count exact without a header.
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"

static atomic_uint_least64_t n_allocs, n_frees, live_bytes, peak_bytes;
static atomic_long fail_countdown;
static _Thread_local uint64_t thread_allocs;

static int should_fail(void)
{
	long c = atomic_load_explicit(&fail_countdown, memory_order_relaxed);
	while (c > 0) {
		if (atomic_compare_exchange_weak(&fail_countdown, &c, c - 1))
			return c == 1;
	}
	return 0;
}

static void account(size_t add, size_t sub)
{
	uint64_t live;
	if (add) {
		live = atomic_fetch_add_explicit(&live_bytes, add, memory_order_relaxed) + add;
		uint64_t peak = atomic_load_explicit(&peak_bytes, memory_order_relaxed);
		while (live > peak &&
		       !atomic_compare_exchange_weak(&peak_bytes, &peak, live))
			;
	}
	if (sub)
		atomic_fetch_sub_explicit(&live_bytes, sub, memory_order_relaxed);
}

void *base_alloc(size_t n)
{
	if (should_fail())
		return NULL;
	size_t rounded = (n + 63) & ~(size_t)63;
	if (rounded < n)
		return NULL;
	void *p = aligned_alloc(64, rounded ? rounded : 64);
	if (!p)
		return NULL;
	atomic_fetch_add_explicit(&n_allocs, 1, memory_order_relaxed);
	thread_allocs++;
	account(n, 0);
	return p;
}

void *base_calloc(size_t count, size_t size)
{
	if (size && count > SIZE_MAX / size)
		return NULL;
	void *p = base_alloc(count * size);
	if (p)
		memset(p, 0, count * size);
	return p;
}

void *base_realloc(void *p, size_t old_n, size_t new_n)
{
	if (!p)
		return base_alloc(new_n);
	void *q = base_alloc(new_n);
	if (!q)
		return NULL;
	memcpy(q, p, old_n < new_n ? old_n : new_n);
	base_free(p, old_n);
	return q;
}

void base_free(void *p, size_t n)
{
	if (!p)
		return;
	atomic_fetch_add_explicit(&n_frees, 1, memory_order_relaxed);
	account(0, n);
	free(p);
}

char *base_strndup(const char *s, size_t n)
{
	/* Not past a NUL in s: base_strfree gives back strlen + 1 bytes. */
	n = strnlen(s, n);
	char *d = base_alloc(n + 1);
	if (d) {
		memcpy(d, s, n);
		d[n] = 0;
	}
	return d;
}

char *base_strdup(const char *s)
{
	return s ? base_strndup(s, strlen(s)) : NULL;
}

void base_strfree(char *s)
{
	if (s)
		base_free(s, strlen(s) + 1);
}

void base_alloc_stats(struct base_alloc_stats *st)
{
	st->allocs = atomic_load(&n_allocs);
	st->frees = atomic_load(&n_frees);
	st->live_bytes = atomic_load(&live_bytes);
	st->peak_bytes = atomic_load(&peak_bytes);
}

uint64_t base_alloc_thread_count(void)
{
	return thread_allocs;
}

void base_alloc_fail_after(long n)
{
	atomic_store(&fail_countdown, n > 0 ? n : 0);
}

int base_grow(void **p, size_t *cap, size_t need, size_t elem, size_t max)
{
	if (need <= *cap)
		return 0;
	if (need > max)
		return STRATA_LIMIT;
	size_t ncap = *cap ? *cap : 8;
	while (ncap < need)
		ncap = ncap > max / 2 ? max : ncap * 2;
	if (elem && ncap > SIZE_MAX / elem)
		return STRATA_LIMIT;
	void *q = base_realloc(*p, *cap * elem, ncap * elem);
	if (!q)
		return STRATA_NOMEM;
	*p = q;
	*cap = ncap;
	return 0;
}

char *base_strprintf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	char *s = n >= 0 ? base_alloc((size_t)n + 1) : NULL;
	if (s) {
		va_start(ap, fmt);
		vsnprintf(s, (size_t)n + 1, fmt, ap);
		va_end(ap);
	}
	return s;
}
