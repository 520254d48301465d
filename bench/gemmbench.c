/*
 * gemmbench.c: the runtime's GEMM alone on the shapes of the benchmark's
 * models, against the FMA peak of the core.
 *
 *     gemmbench [--reps R] [MxKxN[:gelu] ...]
 *
 * Each shape multiplies an M x K activation by a K x N weight packed at
 * "load" (rt_sgemm_pack_b, as the models' MatMul and Gemm nodes do) with a
 * bias in the epilogue, plus GELU where the shape says so (the
 * feed-forward up-projection), through rt_sgemm_pb, the call the models
 * make.  Default shapes: a MiniLM layer at sequence 128 (128x384x384 for
 * Q, K, V and the output projection, 128x384x1536:gelu, 128x1536x384),
 * the same at batch 16 (M = 2048), and mlp_ranker's first two layers at
 * batch 1000 (1000x768x256, 1000x256x256).
 *
 * Timing: the calling thread's CPU time (peak.c), so that other work on
 * the machine does not count; each shape runs R rounds (15) of enough
 * products for about 20 ms of work, after a warm-up, and its figure is
 * the median round.  The FMA peak (peak.c) is measured before each shape
 * and its median over the run is the reference: "%peak" = the shape's
 * GFLOP/s over it.  The weights stay in cache between products here, as
 * they do not in a model whose layers together exceed L2; the model
 * benchmark (bench.c) gives the figures under that traffic.  The machine's
 * kernels are the runtime's choice (STRATA_CPU=avx2 forces AVX2).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "../runtime/kernel.h"

struct shape {
	int64_t m, k, n;
	int gelu;
};

static const struct shape defaults[] = {
	{128, 384, 384, 0},   {128, 384, 1536, 1},   {128, 1536, 384, 0},
	{2048, 384, 384, 0},  {2048, 384, 1536, 1},  {2048, 1536, 384, 0},
	{1000, 768, 256, 0},  {1000, 256, 256, 0},
};

enum { MAX_SHAPES = 64, MAX_ROUNDS = 101 };

static int parse_shape(const char *s, struct shape *sh)
{
	char tail[16] = "";
	long long m, k, n;
	if (sscanf(s, "%lldx%lldx%lld%15s", &m, &k, &n, tail) < 3 || m < 1 || k < 1 || n < 1 ||
	    m > 65536 || k > 65536 || n > 65536)
		return -1;
	if (tail[0] && strcmp(tail, ":gelu") != 0)
		return -1;
	sh->m = m;
	sh->k = k;
	sh->n = n;
	sh->gelu = tail[0] != 0;
	return 0;
}

static float *filled(int64_t count, uint32_t seed)
{
	float *p = base_alloc((size_t)count * sizeof *p);
	if (!p)
		return NULL;
	for (int64_t i = 0; i < count; i++) {
		seed = seed * 1664525u + 1013904223u;
		p[i] = (float)(seed >> 8) / 16777216.0f - 0.5f;
	}
	return p;
}

/* GFLOP/s of one shape (median round), or -1 when memory runs out. */
static double time_shape(const struct shape *sh, int rounds)
{
	int64_t m = sh->m, k = sh->k, n = sh->n;
	float *a = filled(m * k, 1), *b = filled(k * n, 2), *bias = filled(n, 3);
	float *c = base_alloc((size_t)(m * n) * sizeof *c);
	struct rt_packed_b pb;
	double gflops = -1;
	if (!a || !b || !bias || !c || rt_sgemm_pack_b(0, k, n, b, n, &pb) != 0)
		goto done;
	struct rt_epilogue ep = {bias, sh->gelu ? RT_ACT_GELU_ERF : RT_ACT_NONE, NULL, 0};
	double flop = 2.0 * (double)m * (double)k * (double)n;
	int per = (int)(2e9 / flop); /* about 20 ms at 100 GFLOP/s */
	if (per < 1)
		per = 1;
	double t[MAX_ROUNDS];
	for (int i = 0; i < 2; i++)
		rt_sgemm_pb(0, m, 1.0f, a, k, &pb, 0.0f, c, n, &ep);
	for (int r = 0; r < rounds; r++) {
		double t0 = bench_cpu_ms();
		for (int i = 0; i < per; i++)
			rt_sgemm_pb(0, m, 1.0f, a, k, &pb, 0.0f, c, n, &ep);
		t[r] = (bench_cpu_ms() - t0) / per;
	}
	gflops = flop / (bench_median(t, (size_t)rounds) * 1e6);
	rt_packed_b_free(&pb);
done:
	base_free(a, (size_t)(m * k) * sizeof *a);
	base_free(b, (size_t)(k * n) * sizeof *b);
	base_free(bias, (size_t)n * sizeof *bias);
	base_free(c, (size_t)(m * n) * sizeof *c);
	return gflops;
}

int main(int argc, char **argv)
{
	struct shape shapes[MAX_SHAPES];
	int nshapes = 0, rounds = 15;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
			rounds = atoi(argv[++i]);
			if (rounds < 1 || rounds > MAX_ROUNDS)
				return bench_fail("--reps wants 1 to %d", MAX_ROUNDS);
		} else if (nshapes < MAX_SHAPES && parse_shape(argv[i], &shapes[nshapes]) == 0) {
			nshapes++;
		} else {
			fprintf(stderr, "usage: gemmbench [--reps R] [MxKxN[:gelu] ...] (at most %d)\n",
			        MAX_SHAPES);
			return 2;
		}
	}
	if (nshapes == 0) {
		nshapes = (int)(sizeof defaults / sizeof defaults[0]);
		memcpy(shapes, defaults, sizeof defaults);
	}
	double peaks[MAX_SHAPES + 1], gf[MAX_SHAPES];
	peaks[0] = bench_fma_peak();
	for (int i = 0; i < nshapes; i++) {
		peaks[i + 1] = bench_fma_peak();
		gf[i] = time_shape(&shapes[i], rounds);
		if (gf[i] < 0)
			return bench_fail("out of memory for %lldx%lldx%lld", (long long)shapes[i].m,
			                  (long long)shapes[i].k, (long long)shapes[i].n);
	}
	double peak = bench_median(peaks, (size_t)nshapes + 1);
	printf("GEMM (rt_sgemm_pb, packed weights, bias epilogue), %s kernels, one thread, CPU time\n"
	       "FMA peak %.1f GFLOP/s (register-only FMA loop, median of %d)\n\n", runtime_isa(),
	       peak, nshapes + 1);
	printf("%-22s %9s %7s\n", "M x K x N", "GFLOP/s", "%peak");
	for (int i = 0; i < nshapes; i++) {
		char name[64];
		snprintf(name, sizeof name, "%lldx%lldx%lld%s", (long long)shapes[i].m,
		         (long long)shapes[i].k, (long long)shapes[i].n, shapes[i].gelu ? " gelu" : "");
		printf("%-22s %9.1f %7.1f\n", name, gf[i], 100 * gf[i] / peak);
	}
	printf("\n");
	for (int i = 0; i < nshapes; i++)
		printf("{\"m\": %lld, \"k\": %lld, \"n\": %lld, \"gelu\": %s, \"gflops\": %.6g, "
		       "\"peak_gflops\": %.6g, \"peak_fraction\": %.6g}\n",
		       (long long)shapes[i].m, (long long)shapes[i].k, (long long)shapes[i].n,
		       shapes[i].gelu ? "true" : "false", gf[i], peak, gf[i] / peak);
	return 0;
}
