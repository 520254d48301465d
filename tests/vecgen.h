/*
 * vecgen.h: a small seeded generator of numbers for the tests and
 * benchmarks of nearest-neighbour search (splitmix64, Box-Muller), so that
 * the same seed gives the same vectors everywhere.
 */
#ifndef VECGEN_H
#define VECGEN_H

#include <math.h>
#include <stdint.h>

static inline uint64_t vg_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Uniform in [0, 1). */
static inline double vg_unit(uint64_t *s)
{
	return (double)(vg_next(s) >> 11) * 0x1p-53;
}

/* Standard normal. */
static inline double vg_gauss(uint64_t *s)
{
	double u = vg_unit(s) + 1e-12, v = vg_unit(s);
	return sqrt(-2 * log(u)) * cos(2 * M_PI * v);
}

/* A document k at distance d from a query, for a brute force's ranking:
 * nearest first, ties by k. */
struct vg_ref {
	double d;
	int k;
};

static inline int vg_ref_cmp(const void *a, const void *b)
{
	const struct vg_ref *x = a, *y = b;
	return x->d < y->d ? -1 : x->d > y->d ? 1 : x->k - y->k;
}

#endif
