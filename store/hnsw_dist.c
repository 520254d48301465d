/*
 * hnsw_dist.c: the distance kernels of the nearest-neighbour graph
 * (hnsw.c), one per (metric, cell type), chosen once per field when its
 * document type is added to the store.
 *
 * Both sides have the field's cell type (hnsw.c converts the query once).
 * The values are not Vespa's distances but increase with them, which is all
 * the graph needs: euclidean gives the squared distance, angular 1 - cos,
 * dotproduct -a.b, prenormalized-angular 1 - a.b, hamming the differing
 * bits (int8) or cells, geodegrees kilometres.
 *
 * Float cells use AVX2+FMA (the library's baseline) or AVX-512
 * (hnsw_avx512.c) when the CPU and the operating system have it and the
 * environment variable STRATA_CPU is not "avx2" (as in the runtime, so one
 * switch tests both paths).  The choice is kept in the field, not in a
 * global.
 */
#include <immintrin.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

/* ---- float, AVX2 ------------------------------------------------------------------ */

static float hsum256(__m256 v)
{
	__m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	s = _mm_add_ps(s, _mm_movehl_ps(s, s));
	s = _mm_add_ss(s, _mm_movehdup_ps(s));
	return _mm_cvtss_f32(s);
}

static double l2_f32(const void *pa, const void *pb, size_t n)
{
	const float *a = pa, *b = pb;
	__m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
	size_t i = 0;
	for (; i + 16 <= n; i += 16) {
		__m256 d0 = _mm256_sub_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i));
		__m256 d1 = _mm256_sub_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8));
		s0 = _mm256_fmadd_ps(d0, d0, s0);
		s1 = _mm256_fmadd_ps(d1, d1, s1);
	}
	for (; i + 8 <= n; i += 8) {
		__m256 d0 = _mm256_sub_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i));
		s0 = _mm256_fmadd_ps(d0, d0, s0);
	}
	float s = hsum256(_mm256_add_ps(s0, s1));
	for (; i < n; i++)
		s += (a[i] - b[i]) * (a[i] - b[i]);
	return s;
}

static float dot_f32(const float *a, const float *b, size_t n)
{
	__m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
	size_t i = 0;
	for (; i + 16 <= n; i += 16) {
		s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
		s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
	}
	for (; i + 8 <= n; i += 8)
		s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
	float s = hsum256(_mm256_add_ps(s0, s1));
	for (; i < n; i++)
		s += a[i] * b[i];
	return s;
}

static double negdot_f32(const void *a, const void *b, size_t n)
{
	return -(double)dot_f32(a, b, n);
}

static double prenorm_f32(const void *a, const void *b, size_t n)
{
	return 1.0 - (double)dot_f32(a, b, n);
}

static double angular_f32(const void *pa, const void *pb, size_t n)
{
	const float *a = pa, *b = pb;
	__m256 ab = _mm256_setzero_ps(), aa = _mm256_setzero_ps(), bb = _mm256_setzero_ps();
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		__m256 x = _mm256_loadu_ps(a + i), y = _mm256_loadu_ps(b + i);
		ab = _mm256_fmadd_ps(x, y, ab);
		aa = _mm256_fmadd_ps(x, x, aa);
		bb = _mm256_fmadd_ps(y, y, bb);
	}
	double sab = hsum256(ab), saa = hsum256(aa), sbb = hsum256(bb);
	for (; i < n; i++) {
		sab += a[i] * b[i];
		saa += a[i] * a[i];
		sbb += b[i] * b[i];
	}
	return store_angular_of(sab, saa, sbb);
}

/* ---- other cell types: plain loops over cells read as double ---------------------- */

static double cell_at(int cell, const void *p, size_t i)
{
	switch (cell) {
	case BASE_DT_FLOAT: return ((const float *)p)[i];
	case BASE_DT_DOUBLE: return ((const double *)p)[i];
	case BASE_DT_INT8: return ((const int8_t *)p)[i];
	case BASE_DT_BFLOAT16: return base_bf16_to_f32(((const uint16_t *)p)[i]);
	}
	return 0.0;
}

#define GENERIC(suffix, CELL)                                                              \
	static double l2_##suffix(const void *a, const void *b, size_t n)                  \
	{                                                                                  \
		double s = 0;                                                              \
		for (size_t i = 0; i < n; i++) {                                           \
			double d = cell_at(CELL, a, i) - cell_at(CELL, b, i);              \
			s += d * d;                                                        \
		}                                                                          \
		return s;                                                                  \
	}                                                                                  \
	static double dot_##suffix(const void *a, const void *b, size_t n)                 \
	{                                                                                  \
		double s = 0;                                                              \
		for (size_t i = 0; i < n; i++)                                             \
			s += cell_at(CELL, a, i) * cell_at(CELL, b, i);                    \
		return s;                                                                  \
	}                                                                                  \
	static double negdot_##suffix(const void *a, const void *b, size_t n)              \
	{                                                                                  \
		return -dot_##suffix(a, b, n);                                             \
	}                                                                                  \
	static double prenorm_##suffix(const void *a, const void *b, size_t n)             \
	{                                                                                  \
		return 1.0 - dot_##suffix(a, b, n);                                        \
	}                                                                                  \
	static double angular_##suffix(const void *a, const void *b, size_t n)             \
	{                                                                                  \
		double ab = 0, aa = 0, bb = 0;                                             \
		for (size_t i = 0; i < n; i++) {                                           \
			double x = cell_at(CELL, a, i), y = cell_at(CELL, b, i);           \
			ab += x * y;                                                       \
			aa += x * x;                                                       \
			bb += y * y;                                                       \
		}                                                                          \
		return store_angular_of(ab, aa, bb);                                       \
	}                                                                                  \
	static double hamming_##suffix(const void *a, const void *b, size_t n)             \
	{                                                                                  \
		double s = 0;                                                              \
		for (size_t i = 0; i < n; i++)                                             \
			s += cell_at(CELL, a, i) != cell_at(CELL, b, i);                   \
		return s;                                                                  \
	}                                                                                  \
	static double geo_##suffix(const void *a, const void *b, size_t n)                 \
	{                                                                                  \
		if (n < 2)                                                                 \
			return INFINITY;                                                   \
		return store_geo_km(cell_at(CELL, a, 0), cell_at(CELL, a, 1),              \
		                    cell_at(CELL, b, 0), cell_at(CELL, b, 1));             \
	}

GENERIC(f32s, BASE_DT_FLOAT)
GENERIC(f64, BASE_DT_DOUBLE)
GENERIC(i8, BASE_DT_INT8)
GENERIC(bf16, BASE_DT_BFLOAT16)

/* int8 hamming: the bits that differ, 8 bytes at a time. */
static double hamming_bits(const void *pa, const void *pb, size_t n)
{
	const uint8_t *a = pa, *b = pb;
	uint64_t s = 0;
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t x, y;
		memcpy(&x, a + i, 8);
		memcpy(&y, b + i, 8);
		s += (uint64_t)__builtin_popcountll(x ^ y);
	}
	for (; i < n; i++)
		s += (uint64_t)__builtin_popcount((unsigned)(a[i] ^ b[i]));
	return (double)s;
}

double store_geo_km(double lat1, double lon1, double lat2, double lon2)
{
	const double r = M_PI / 180.0;
	double sa = sin((lat2 - lat1) * r / 2), so = sin((lon2 - lon1) * r / 2);
	double h = sa * sa + cos(lat1 * r) * cos(lat2 * r) * so * so;
	return 2.0 * 6371.0088 * asin(sqrt(h > 1.0 ? 1.0 : h));
}

/* ---- choosing ------------------------------------------------------------------------ */

int store_cpu_avx512(void)
{
	const char *env = getenv("STRATA_CPU");
	if (env && strcmp(env, "avx2") == 0)
		return 0;
	return base_cpu_avx512();
}

#define PICK(suffix)                                                                       \
	switch (metric) {                                                                  \
	case STORE_METRIC_EUCLIDEAN: return l2_##suffix;                                   \
	case STORE_METRIC_ANGULAR: return angular_##suffix;                                \
	case STORE_METRIC_DOTPRODUCT: return negdot_##suffix;                              \
	case STORE_METRIC_PRENORMALIZED_ANGULAR: return prenorm_##suffix;                  \
	case STORE_METRIC_HAMMING: return hamming_##suffix;                                \
	case STORE_METRIC_GEODEGREES: return geo_##suffix;                                 \
	}                                                                                  \
	return NULL

store_dist_fn store_dist_kernel(int metric, int cell, int avx512)
{
	if (cell == BASE_DT_FLOAT && avx512) {
		store_dist_fn f = store_dist_avx512(metric);
		if (f)
			return f;
	}
	if (cell == BASE_DT_FLOAT) {
		switch (metric) {
		case STORE_METRIC_EUCLIDEAN: return l2_f32;
		case STORE_METRIC_ANGULAR: return angular_f32;
		case STORE_METRIC_DOTPRODUCT: return negdot_f32;
		case STORE_METRIC_PRENORMALIZED_ANGULAR: return prenorm_f32;
		}
		PICK(f32s);
	}
	if (cell == BASE_DT_INT8 && metric == STORE_METRIC_HAMMING)
		return hamming_bits;
	if (cell == BASE_DT_INT8) {
		PICK(i8);
	}
	if (cell == BASE_DT_DOUBLE) {
		PICK(f64);
	}
	if (cell == BASE_DT_BFLOAT16) {
		PICK(bf16);
	}
	return NULL;
}
