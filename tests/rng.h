/*
 * rng.h: the tests' pseudo-random numbers: xorshift64, seeded by the test,
 * so a failing run repeats exactly.  Header-only.
 */
#ifndef TESTS_RNG_H
#define TESTS_RNG_H

#include <stdint.h>

/* The next number of the sequence in *s (never seeded 0). */
static inline uint64_t test_rng(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* A number in 0 .. n - 1 (n > 0). */
static inline uint32_t test_rng_below(uint64_t *s, uint32_t n)
{
	return (uint32_t)(test_rng(s) % n);
}

#endif
