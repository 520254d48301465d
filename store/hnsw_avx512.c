/*
 * hnsw_avx512.c: the float distance kernels of hnsw_dist.c in AVX-512,
 * compiled with AVX-512 flags and called only when store_cpu_avx512() says
 * the machine runs them.
 */
#include <immintrin.h>

#include "store_int.h"

static double l2(const void *pa, const void *pb, size_t n)
{
	const float *a = pa, *b = pb;
	__m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
	size_t i = 0;
	for (; i + 32 <= n; i += 32) {
		__m512 d0 = _mm512_sub_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i));
		__m512 d1 = _mm512_sub_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16));
		s0 = _mm512_fmadd_ps(d0, d0, s0);
		s1 = _mm512_fmadd_ps(d1, d1, s1);
	}
	if (i < n) { /* the rest in masked steps of 16 */
		for (; i < n; i += 16) {
			__mmask16 m = n - i >= 16 ? 0xffff : (__mmask16)((1u << (n - i)) - 1);
			__m512 d = _mm512_sub_ps(_mm512_maskz_loadu_ps(m, a + i),
			                         _mm512_maskz_loadu_ps(m, b + i));
			s0 = _mm512_fmadd_ps(d, d, s0);
		}
	}
	return _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
}

static float dot(const float *a, const float *b, size_t n)
{
	__m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
	size_t i = 0;
	for (; i + 32 <= n; i += 32) {
		s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
		s1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16), s1);
	}
	for (; i < n; i += 16) {
		__mmask16 m = n - i >= 16 ? 0xffff : (__mmask16)((1u << (n - i)) - 1);
		s0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i), s0);
	}
	return _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
}

static double negdot(const void *a, const void *b, size_t n)
{
	return -(double)dot(a, b, n);
}

static double prenorm(const void *a, const void *b, size_t n)
{
	return 1.0 - (double)dot(a, b, n);
}

static double angular(const void *pa, const void *pb, size_t n)
{
	const float *a = pa, *b = pb;
	__m512 ab = _mm512_setzero_ps(), aa = _mm512_setzero_ps(), bb = _mm512_setzero_ps();
	for (size_t i = 0; i < n; i += 16) {
		__mmask16 m = n - i >= 16 ? 0xffff : (__mmask16)((1u << (n - i)) - 1);
		__m512 x = _mm512_maskz_loadu_ps(m, a + i), y = _mm512_maskz_loadu_ps(m, b + i);
		ab = _mm512_fmadd_ps(x, y, ab);
		aa = _mm512_fmadd_ps(x, x, aa);
		bb = _mm512_fmadd_ps(y, y, bb);
	}
	return store_angular_of(_mm512_reduce_add_ps(ab), _mm512_reduce_add_ps(aa),
	                        _mm512_reduce_add_ps(bb));
}

store_dist_fn store_dist_avx512(int metric)
{
	switch (metric) {
	case STORE_METRIC_EUCLIDEAN: return l2;
	case STORE_METRIC_ANGULAR: return angular;
	case STORE_METRIC_DOTPRODUCT: return negdot;
	case STORE_METRIC_PRENORMALIZED_ANGULAR: return prenorm;
	}
	return NULL;
}
