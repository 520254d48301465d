/*
 * gemmbench.c: the runtime's GEMM alone on the shapes of the benchmark's
 * models, against the FMA peak of the core.
 *
 *     gemmbench [--reps R] [--int8 [--bare] [--cold]] [MxKxN[:gelu][:res] ...]
 *
 * Each shape multiplies an M x K activation by a K x N weight packed at
 * "load" (rt_sgemm_pack_b, as the models' MatMul and Gemm nodes do) with a
 * bias in the epilogue, plus GELU (":gelu", the feed-forward
 * up-projection) and a residual (":res") where the shape says so, through
 * rt_sgemm_pb, the call the models
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
 *
 * --int8: the int8 GEMM instead (rt_qgemm, as the fused quantized layer
 * runs it): uint8 activations with one zero point, int8 weights packed at
 * "load", float output scaled, with the bias, GELU (":gelu") and a residual
 * (":res"; the default shapes put one on the two projections that have it
 * in a transformer layer), against the vpdpbusd roof (peak.c) instead of
 * the FMA peak.  --bare stores the int32 sums with nothing else (the loop
 * and the zero point only); --cold writes each product to the next of 16
 * output buffers, so that C is not in cache, as in a model where every
 * layer writes a new tensor.  These split a layer's time into the loop,
 * the finishing and the traffic of C.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "../runtime/kernel.h"

struct shape {
	int64_t m, k, n;
	int gelu, res;
};

static const struct shape defaults[] = {
	{128, 384, 384, 0, 0},   {128, 384, 1536, 1, 0},   {128, 1536, 384, 0, 0},
	{2048, 384, 384, 0, 0},  {2048, 384, 1536, 1, 0},  {2048, 1536, 384, 0, 0},
	{1000, 768, 256, 0, 0},  {1000, 256, 256, 0, 0},
};

/* --int8's default: one MiniLM layer at sequence 128, its six products
 * (Q, K, V, the output projection with the residual, the up-projection
 * with GELU, the down-projection with the residual). */
static const struct shape defaults_int8[] = {
	{128, 384, 384, 0, 0},  {128, 384, 384, 0, 0},  {128, 384, 384, 0, 0},
	{128, 384, 384, 0, 1},  {128, 384, 1536, 1, 0}, {128, 1536, 384, 0, 1},
};

enum { COLD = 16 };

struct mode {
	int int8, bare, cold;
};

enum { MAX_SHAPES = 64, MAX_ROUNDS = 101 };

static int parse_shape(const char *s, struct shape *sh)
{
	char tail[16] = "";
	long long m, k, n;
	if (sscanf(s, "%lldx%lldx%lld%15s", &m, &k, &n, tail) < 3 || m < 1 || k < 1 || n < 1 ||
	    m > 65536 || k > 65536 || n > 65536)
		return -1;
	sh->m = m;
	sh->k = k;
	sh->n = n;
	sh->gelu = strcmp(tail, ":gelu") == 0 || strcmp(tail, ":gelu:res") == 0;
	sh->res = strcmp(tail, ":res") == 0 || strcmp(tail, ":gelu:res") == 0;
	return tail[0] && !sh->gelu && !sh->res ? -1 : 0;
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
	float *c = base_alloc((size_t)(m * n) * sizeof *c), *res = sh->res ? filled(m * n, 4) : NULL;
	struct rt_packed_b pb;
	double gflops = -1;
	if (!a || !b || !bias || !c || (sh->res && !res) || rt_sgemm_pack_b(0, k, n, b, n, &pb) != 0)
		goto done;
	struct rt_epilogue ep = {bias, sh->gelu ? RT_ACT_GELU_ERF : RT_ACT_NONE, res, n};
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
	if (res)
		base_free(res, (size_t)(m * n) * sizeof *res);
	return gflops;
}

static uint8_t *bytes_filled(int64_t count, uint32_t seed)
{
	uint8_t *p = base_alloc((size_t)count);
	if (!p)
		return NULL;
	for (int64_t i = 0; i < count; i++) {
		seed = seed * 1664525u + 1013904223u;
		p[i] = (uint8_t)(seed >> 24);
	}
	return p;
}

/* GOP/s of one shape through rt_qgemm (median round), or -1 when memory
 * runs out. */
static double time_shape_int8(const struct shape *sh, const struct mode *md, int rounds)
{
	int64_t m = sh->m, k = sh->k, n = sh->n;
	int nc = md->cold ? COLD : 1;
	uint8_t *a = bytes_filled(m * k, 1), *b = bytes_filled(k * n, 2);
	float *bias = filled(n, 3), *res = sh->res ? filled(m * n, 4) : NULL;
	size_t cbytes = (size_t)(m * n) * sizeof(float), sbytes = rt_qgemm_scratch_bytes(m, k, n);
	void *c[COLD] = { 0 }, *scratch = base_alloc(sbytes);
	struct rt_qpacked_b pb = { 0 };
	double gops = -1;
	int ok = a && b && bias && (res || !sh->res) && scratch;
	for (int i = 0; i < nc && ok; i++)
		ok = (c[i] = base_alloc(cbytes)) != NULL;
	if (!ok || rt_qgemm_pack_b(BASE_DT_INT8, k, n, b, n, &pb) != 0)
		goto done;
	for (int i = 0; i < nc; i++)
		memset(c[i], 0, cbytes);
	uint8_t za = 128;
	float bscale = 0.01f;
	struct rt_qgemm_args g = { .adt = BASE_DT_UINT8, .M = m, .A = a, .lda = k, .za = &za,
		                   .ldc = n, .ascale = 0.02f, .bscale = &bscale };
	if (!md->bare) {
		g.bias = bias;
		g.act = sh->gelu ? RT_ACT_GELU_ERF : RT_ACT_NONE;
		g.res = res;
		g.ldr = n;
	}
	double ops = 2.0 * (double)m * (double)k * (double)n;
	int per = (int)(8e9 / ops); /* about 20 ms at 400 GOP/s */
	if (per < 1)
		per = 1;
	double t[MAX_ROUNDS];
	for (int i = 0; i < 2 * nc; i++) {
		if (md->bare)
			g.ci = c[i % nc];
		else
			g.cf = c[i % nc];
		rt_qgemm(&g, &pb, scratch);
	}
	for (int r = 0; r < rounds; r++) {
		double t0 = bench_cpu_ms();
		for (int i = 0; i < per; i++) {
			if (md->bare)
				g.ci = c[i % nc];
			else
				g.cf = c[i % nc];
			rt_qgemm(&g, &pb, scratch);
		}
		t[r] = (bench_cpu_ms() - t0) / per;
	}
	gops = ops / (bench_median(t, (size_t)rounds) * 1e6);
done:
	rt_qpacked_b_free(&pb);
	for (int i = 0; i < nc; i++)
		base_free(c[i], cbytes);
	base_free(scratch, sbytes);
	base_free(a, (size_t)(m * k));
	base_free(b, (size_t)(k * n));
	base_free(bias, (size_t)n * sizeof *bias);
	if (res)
		base_free(res, cbytes);
	return gops;
}

int main(int argc, char **argv)
{
	struct shape shapes[MAX_SHAPES];
	struct mode md = { 0, 0, 0 };
	int nshapes = 0, rounds = 15;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
			rounds = atoi(argv[++i]);
			if (rounds < 1 || rounds > MAX_ROUNDS)
				return bench_fail("--reps wants 1 to %d", MAX_ROUNDS);
		} else if (strcmp(argv[i], "--int8") == 0) {
			md.int8 = 1;
		} else if (strcmp(argv[i], "--bare") == 0) {
			md.bare = 1;
		} else if (strcmp(argv[i], "--cold") == 0) {
			md.cold = 1;
		} else if (nshapes < MAX_SHAPES && parse_shape(argv[i], &shapes[nshapes]) == 0) {
			nshapes++;
		} else {
			fprintf(stderr, "usage: gemmbench [--reps R] [--int8 [--bare] [--cold]] "
			                "[MxKxN[:gelu][:res] ...] (at most %d)\n", MAX_SHAPES);
			return 2;
		}
	}
	if ((md.bare || md.cold) && !md.int8)
		return bench_fail("--bare and --cold go with --int8");
	if (nshapes == 0) {
		const struct shape *d = md.int8 ? defaults_int8 : defaults;
		nshapes = md.int8 ? (int)(sizeof defaults_int8 / sizeof defaults_int8[0])
		                  : (int)(sizeof defaults / sizeof defaults[0]);
		memcpy(shapes, d, (size_t)nshapes * sizeof *d);
	}
	double peaks[MAX_SHAPES + 1], gf[MAX_SHAPES], total_ms = 0, total_op = 0;
	peaks[0] = md.int8 ? bench_vnni_peak() : bench_fma_peak();
	for (int i = 0; i < nshapes; i++) {
		peaks[i + 1] = md.int8 ? bench_vnni_peak() : bench_fma_peak();
		gf[i] = md.int8 ? time_shape_int8(&shapes[i], &md, rounds) : time_shape(&shapes[i], rounds);
		if (gf[i] < 0)
			return bench_fail("out of memory for %lldx%lldx%lld", (long long)shapes[i].m,
			                  (long long)shapes[i].k, (long long)shapes[i].n);
		double op = 2.0 * (double)shapes[i].m * (double)shapes[i].k * (double)shapes[i].n;
		total_op += op;
		total_ms += op / (gf[i] * 1e6);
	}
	double peak = bench_median(peaks, (size_t)nshapes + 1);
	if (md.int8)
		printf("int8 GEMM (rt_qgemm, packed int8 weights, uint8 activations, %s), %s kernel, "
		       "one thread, CPU time\nvpdpbusd roof %.1f GOP/s (register-only loop, median of "
		       "%d)\n\n", md.bare ? "int32 sums, no finishing" : "float out, bias, GELU and "
		       "residual where the shape says", runtime_int8_isa(), peak, nshapes + 1);
	else
		printf("GEMM (rt_sgemm_pb, packed weights, bias epilogue), %s kernels, one thread, "
		       "CPU time\nFMA peak %.1f GFLOP/s (register-only FMA loop, median of %d)\n\n",
		       runtime_isa(), peak, nshapes + 1);
	if (md.cold)
		printf("output: the next of %d buffers each product (not in cache)\n\n", COLD);
	printf("%-22s %9s %7s\n", "M x K x N", md.int8 ? "GOP/s" : "GFLOP/s", "%peak");
	for (int i = 0; i < nshapes; i++) {
		char name[64];
		snprintf(name, sizeof name, "%lldx%lldx%lld%s%s", (long long)shapes[i].m,
		         (long long)shapes[i].k, (long long)shapes[i].n, shapes[i].gelu ? " gelu" : "",
		         shapes[i].res ? " res" : "");
		printf("%-22s %9.1f %7.1f\n", name, gf[i], 100 * gf[i] / peak);
	}
	printf("%-22s %9.1f %7.1f   (%.1f us for all)\n\n", "all", total_op / (total_ms * 1e6),
	       100 * total_op / (total_ms * 1e6) / peak, 1e3 * total_ms);
	for (int i = 0; i < nshapes; i++)
		printf("{\"m\": %lld, \"k\": %lld, \"n\": %lld, \"gelu\": %s, \"res\": %s, "
		       "\"int8\": %s, \"gflops\": %.6g, \"peak_gflops\": %.6g, "
		       "\"peak_fraction\": %.6g}\n",
		       (long long)shapes[i].m, (long long)shapes[i].k, (long long)shapes[i].n,
		       shapes[i].gelu ? "true" : "false", shapes[i].res ? "true" : "false",
		       md.int8 ? "true" : "false", gf[i], peak, gf[i] / peak);
	return 0;
}
