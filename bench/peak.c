/*
 * peak.c: the FMA roof of this core, the figure a GEMM kernel is measured
 * against.  A register-only loop of independent fused multiply-adds (no
 * loads, no stores) on the vector width the runtime's kernels use: zmm
 * when runtime_isa() says "avx512", ymm otherwise.  Twelve accumulator
 * chains cover the FMA latency of two pipes (4 cycles x 2 pipes = 8 in
 * flight at least), so the loop runs at the issue rate of the FMA units.
 *
 * The time is the calling thread's CPU time, the clock the bench's CPU
 * figures use: on a machine shared with other work a wall-clock peak would
 * count the time other processes held the core.  What it cannot remove is
 * a sibling hardware thread or a host that shares the FMA units: the peak
 * then drops with the load, which is why the bench measures it in every
 * round, beside the runs it is compared with.
 */
#include <immintrin.h>
#include <string.h>
#include <time.h>

#include "bench.h"

enum { CHAINS = 12 };

static double cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double bench_cpu_ms(void)
{
	return cpu_now() * 1e3;
}

/* x = x * a + b on CHAINS registers of type V (LANES floats), iters times,
 * with the FMA intrinsic FMA; returns flops per second.  The multiplier is
 * just below 1 and the addend tiny, so the values stay normal (no denormal
 * slow path) however long the loop runs. */
#define PEAK_LOOP(NAME, V, LANES, SET1, FMA, TARGET)                                     \
	__attribute__((target(TARGET), noinline)) static double NAME(long iters)         \
	{                                                                                \
		V acc[CHAINS];                                                           \
		_Pragma("GCC unroll 12") for (int i = 0; i < CHAINS; i++)                \
			acc[i] = SET1(0.001f * (float)i);                                \
		const V a = SET1(0.999999f), b = SET1(1e-7f);                            \
		double t = cpu_now();                                                    \
		for (long it = 0; it < iters; it++) {                                    \
			_Pragma("GCC unroll 12") for (int i = 0; i < CHAINS; i++)        \
				acc[i] = FMA(acc[i], a, b);                              \
		}                                                                        \
		t = cpu_now() - t;                                                       \
		float cells[CHAINS * LANES], sum = 0;                                    \
		memcpy(cells, acc, sizeof cells);                                        \
		for (int i = 0; i < CHAINS * LANES; i++)                                 \
			sum += cells[i];                                                 \
		volatile float sink = sum;                                               \
		(void)sink;                                                              \
		return t > 0 ? (double)iters * CHAINS * LANES * 2 / t : 0;               \
	}

PEAK_LOOP(peak_zmm, __m512, 16, _mm512_set1_ps, _mm512_fmadd_ps, "avx512f")
PEAK_LOOP(peak_ymm, __m256, 8, _mm256_set1_ps, _mm256_fmadd_ps, "avx2,fma")

/* The int8 roof: CHAINS chains of vpdpbusd (64 unsigned-by-signed byte
 * products summed into 16 int32 lanes, 128 operations an instruction) on
 * zmm registers, iters times; operations per second.  The byte inputs are
 * small, so the int32 sums cannot overflow however long it runs. */
__attribute__((target("avx512f,avx512vnni"), noinline)) static double peak_vnni(long iters)
{
	__m512i acc[CHAINS];
	_Pragma("GCC unroll 12") for (int i = 0; i < CHAINS; i++)
		acc[i] = _mm512_set1_epi32(i);
	const __m512i a = _mm512_set1_epi8(1), b = _mm512_set1_epi8(-1);
	double t = cpu_now();
	for (long it = 0; it < iters; it++) {
		_Pragma("GCC unroll 12") for (int i = 0; i < CHAINS; i++)
			acc[i] = _mm512_dpbusd_epi32(acc[i], a, b);
	}
	t = cpu_now() - t;
	int lanes[CHAINS * 16];
	long sum = 0;
	memcpy(lanes, acc, sizeof lanes);
	for (int i = 0; i < CHAINS * 16; i++)
		sum += lanes[i];
	volatile long sink = sum;
	(void)sink;
	return t > 0 ? (double)iters * CHAINS * 128 / t : 0;
}

double bench_vnni_peak(void)
{
	__builtin_cpu_init();
	if (strcmp(runtime_isa(), "avx512") != 0 || !__builtin_cpu_supports("avx512vnni"))
		return -1;
	return peak_vnni(600000) * 1e-9;
}

double bench_fma_peak(void)
{
	/* about 2 ms at 230 GFLOP/s (AVX-512) or 110 (AVX2) */
	if (strcmp(runtime_isa(), "avx512") == 0)
		return peak_zmm(1200000) * 1e-9;
	return peak_ymm(1200000) * 1e-9;
}
