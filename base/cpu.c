/*
 * cpu.c: whether this machine runs AVX-512 (the F, DQ, BW and VL subsets
 * the kernels use): the CPU must have them (cpuid leaf 7) and the operating
 * system must save their state (xgetbv: XCR0's SSE, AVX, opmask and zmm
 * bits).  The library itself is compiled for x86-64-v3 (AVX2 + FMA); the
 * runtime's GEMM kernels and the store's distance kernels pick their
 * AVX-512 versions from this, each under its own policy (STRATA_CPU).
 */
#include <cpuid.h>

#include "base.h"

/* 0: not asked yet; 1: no; 2: yes.  Relaxed atomics: racing first calls
 * compute the same answer. */
static int answer;

static unsigned long long xgetbv0(void)
{
	unsigned int lo, hi;
	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	return ((unsigned long long)hi << 32) | lo;
}

static int detect(void)
{
	unsigned int a, b, c, d;
	if (!__get_cpuid(1, &a, &b, &c, &d))
		return 0;
	int osxsave = (c >> 27) & 1;
	if (!osxsave || __get_cpuid_max(0, NULL) < 7)
		return 0;
	/* XCR0 bits 1-2: SSE and AVX state; 5-7: opmask, upper zmm0-15, zmm16-31 */
	if ((xgetbv0() & 0xe6) != 0xe6)
		return 0;
	__cpuid_count(7, 0, a, b, c, d);
	int f = (b >> 16) & 1, dq = (b >> 17) & 1, bw = (b >> 30) & 1, vl = (b >> 31) & 1;
	return f && dq && bw && vl;
}

int base_cpu_avx512(void)
{
	int v = __atomic_load_n(&answer, __ATOMIC_RELAXED);
	if (!v) {
		v = detect() ? 2 : 1;
		__atomic_store_n(&answer, v, __ATOMIC_RELAXED);
	}
	return v == 2;
}
