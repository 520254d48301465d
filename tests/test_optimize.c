/*
 * test_optimize.c: the graph optimizer (runtime/optimize.c) and the fused
 * kernels (runtime/ops/fused.c), checked against the unoptimized graph.
 *
 * A small BERT-like encoder is built in the exporter's exact patterns (the
 * Shape -> Gather -> Unsqueeze -> Concat -> Reshape head splits, Transposes,
 * the scaled and masked Softmax, the erf-GELU chain in both multiplication
 * orders, residual Adds, LayerNormalization or its decomposed spelling) with
 * symbolic batch and seq, and an MLP like mlp_ranker (Concat, Gemm + Relu:
 * the Concat folds into the first layer).  Each is
 * loaded with session.graph_optimization_level "all" and "disabled", run on
 * several shapes (padded masks included), and every output must agree within
 * 1e-4 relative.  The tests also count the fused nodes, so they cannot pass
 * with the rewrites silently off.  Also: the vectorized math against libm,
 * and the AVX-512 attention kernel against a double-precision reference on
 * ragged shapes (row blocks, key strips and head widths that do not divide
 * evenly) with every mask form, -inf cells and NaN rows.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../runtime/ops/attn.h"
#include "../runtime/kernel.h"
#include "../runtime/ops/vmath.h"
#include "../runtime/runtime_int.h"
#include "modelbuild.h"
#include "opcase.h"

#define HID 64
#define HEADS 4
#define HDIM 16
#define FFN 256
#define VOCAB 100
#define MAXPOS 32

/* ---- deterministic weights -------------------------------------------------------- */

static uint64_t rng = 12345;

static double uniform(void)
{
	rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
	return ((rng >> 11) + 0.5) / 9007199254740992.0;
}

static float normal(double sd)
{
	return (float)(sd * sqrt(-2 * log(uniform())) * cos(6.283185307179586 * uniform()));
}

static char names[4096][32];
static int nnames;

static const char *fresh(const char *stem)
{
	assert_true(nnames < 4096);
	snprintf(names[nnames], sizeof names[0], "%s_%d", stem, nnames);
	return names[nnames++];
}

static const char *weight(struct mb_model *m, int rank, const int64_t *dims, double sd, float mean)
{
	int64_t n = 1;
	for (int i = 0; i < rank; i++)
		n *= dims[i];
	float *w = malloc((size_t)n * sizeof *w);
	for (int64_t i = 0; i < n; i++)
		w[i] = mean + normal(sd);
	const char *name = fresh("w");
	mb_init(m, name, BASE_DT_FLOAT, rank, dims, w);
	free(w);
	return name;
}

static const char *kf(struct mb_model *m, float v)
{
	const char *name = fresh("kf");
	mb_init(m, name, BASE_DT_FLOAT, 0, NULL, &v);
	return name;
}

static const char *ki(struct mb_model *m, int n, const int64_t *v)
{
	const char *name = fresh("ki");
	mb_init(m, name, BASE_DT_INT64, n ? 1 : 0, (int64_t[]){ n }, v);
	return name;
}

static char buf[256];

/* A node with inputs "a,b,..." (printf-style) and one fresh output. */
static const char *op(struct mb_model *m, const char *type, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static const char *op(struct mb_model *m, const char *type, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	const char *out = fresh(type);
	mb_node(m, type, buf, out);
	return out;
}

static const char *linear(struct mb_model *m, const char *x, int64_t k, int64_t n, double sd)
{
	const char *w = weight(m, 2, (int64_t[]){ k, n }, sd, 0);
	const char *b = weight(m, 1, (int64_t[]){ n }, 0.02, 0);
	return op(m, "Add", "%s,%s", op(m, "MatMul", "%s,%s", x, w), b);
}

static const char *layernorm(struct mb_model *m, const char *x, int decomposed)
{
	const char *g = weight(m, 1, (int64_t[]){ HID }, 0.1, 1.0f);
	const char *b = weight(m, 1, (int64_t[]){ HID }, 0.05, 0);
	if (!decomposed) {
		const char *out = fresh("ln");
		snprintf(buf, sizeof buf, "%s,%s,%s", x, g, b);
		struct mb_node *n = mb_node(m, "LayerNormalization", buf, out);
		mb_attr_int(n, "axis", -1);
		mb_attr_float(n, "epsilon", 1e-12f);
		return out;
	}
	const char *mean = fresh("rm");
	snprintf(buf, sizeof buf, "%s", x);
	mb_attr_ints(mb_node(m, "ReduceMean", buf, mean), "axes", 1, (int64_t[]){ -1 });
	const char *d = op(m, "Sub", "%s,%s", x, mean);
	const char *p = op(m, "Pow", "%s,%s", d, kf(m, 2.0f));
	const char *var = fresh("rm");
	mb_attr_ints(mb_node(m, "ReduceMean", p, var), "axes", 1, (int64_t[]){ -1 });
	const char *s = op(m, "Sqrt", "%s", op(m, "Add", "%s,%s", var, kf(m, 1e-12f)));
	const char *nrm = op(m, "Div", "%s,%s", d, s);
	return op(m, "Add", "%s,%s", op(m, "Mul", "%s,%s", nrm, g), b);
}

/* dim i of x as a 1-element int64 tensor (Shape -> Gather -> Unsqueeze). */
static const char *dim_of(struct mb_model *m, const char *x, int64_t i)
{
	const char *sh = op(m, "Shape", "%s", x);
	const char *g = op(m, "Gather", "%s,%s", sh, ki(m, 0, &i));
	return op(m, "Unsqueeze", "%s,%s", g, ki(m, 1, (int64_t[]){ 0 }));
}

static struct mb_node *last;

/* Like op() for nodes that take attributes (left in `last`). */
static const char *opn(struct mb_model *m, const char *type, const char *in)
{
	const char *out = fresh(type);
	last = mb_node(m, type, in, out);
	return out;
}

/* [b, s, HID] -> [b, HEADS, s, HDIM] (or [b, HEADS, HDIM, s] for K). */
static const char *split_heads(struct mb_model *m, const char *x, int is_k)
{
	char in[128];
	snprintf(in, sizeof in, "%s,%s,%s,%s", dim_of(m, x, 0), dim_of(m, x, 1),
	         ki(m, 1, (int64_t[]){ HEADS }), ki(m, 1, (int64_t[]){ HDIM }));
	const char *shape = opn(m, "Concat", in);
	mb_attr_int(last, "axis", 0);
	const char *r = op(m, "Reshape", "%s,%s", x, shape);
	const char *t = opn(m, "Transpose", r);
	mb_attr_ints(last, "perm", 4, is_k ? (int64_t[]){ 0, 2, 3, 1 } : (int64_t[]){ 0, 2, 1, 3 });
	return t;
}

static const char *gelu(struct mb_model *m, const char *x, int order)
{
	const char *e = op(m, "Erf", "%s", op(m, "Div", "%s,%s", x, kf(m, (float)M_SQRT2)));
	const char *t = op(m, "Add", "%s,%s", e, kf(m, 1.0f));
	if (order == 0)
		return op(m, "Mul", "%s,%s", op(m, "Mul", "%s,%s", x, kf(m, 0.5f)), t);
	return op(m, "Mul", "%s,%s", op(m, "Mul", "%s,%s", t, x), kf(m, 0.5f));
}

/* The encoder: 2 layers, hidden 64, 4 heads, ffn 256, vocab 100. */
static struct mb_model *build_bert(int decomposed)
{
	rng = 1234;
	nnames = 0;
	struct mb_model *m = mb_new("bert", 17);
	const char *const bs[] = { "batch", "seq" };
	mb_input(m, "input_ids", BASE_DT_INT64, 2, (int64_t[]){ -1, -1 }, bs);
	mb_input(m, "attention_mask", BASE_DT_INT64, 2, (int64_t[]){ -1, -1 }, bs);
	const char *wemb = weight(m, 2, (int64_t[]){ VOCAB, HID }, 0.02, 0);
	const char *pemb = weight(m, 2, (int64_t[]){ MAXPOS, HID }, 0.02, 0);
	int64_t pos[MAXPOS];
	for (int i = 0; i < MAXPOS; i++)
		pos[i] = i;
	const char *posids = fresh("posids");
	mb_init(m, posids, BASE_DT_INT64, 2, (int64_t[]){ 1, MAXPOS }, pos);
	const char *seq = dim_of(m, "input_ids", 1);
	const char *sl = op(m, "Slice", "%s,%s,%s,%s", posids, ki(m, 1, (int64_t[]){ 0 }), seq,
	                    ki(m, 1, (int64_t[]){ 1 }));
	const char *e = op(m, "Gather", "%s,input_ids", wemb);
	const char *h = op(m, "Add", "%s,%s", e, op(m, "Gather", "%s,%s", pemb, sl));
	h = layernorm(m, h, decomposed);
	const char *mk = op(m, "Unsqueeze", "attention_mask,%s", ki(m, 1, (int64_t[]){ 1 }));
	mk = op(m, "Unsqueeze", "%s,%s", mk, ki(m, 1, (int64_t[]){ 2 }));
	mk = opn(m, "Cast", mk);
	mb_attr_int(last, "to", BASE_DT_FLOAT);
	mk = op(m, "Mul", "%s,%s", op(m, "Sub", "%s,%s", kf(m, 1.0f), mk), kf(m, -10000.0f));
	for (int layer = 0; layer < 2; layer++) {
		const char *q = split_heads(m, linear(m, h, HID, HID, 0.05), 0);
		const char *k = split_heads(m, linear(m, h, HID, HID, 0.05), 1);
		const char *v = split_heads(m, linear(m, h, HID, HID, 0.02), 0);
		const char *sc = op(m, "Div", "%s,%s", op(m, "MatMul", "%s,%s", q, k), kf(m, 4.0f));
		sc = layer ? op(m, "Add", "%s,%s", mk, sc) : op(m, "Add", "%s,%s", sc, mk);
		const char *p = opn(m, "Softmax", sc);
		mb_attr_int(last, "axis", -1);
		const char *ctx = opn(m, "Transpose", op(m, "MatMul", "%s,%s", p, v));
		mb_attr_ints(last, "perm", 4, (int64_t[]){ 0, 2, 1, 3 });
		char in[128];
		snprintf(in, sizeof in, "%s,%s,%s", dim_of(m, ctx, 0), dim_of(m, ctx, 1),
		         ki(m, 1, (int64_t[]){ HID }));
		const char *shape = opn(m, "Concat", in);
		mb_attr_int(last, "axis", 0);
		ctx = op(m, "Reshape", "%s,%s", ctx, shape);
		const char *a = op(m, "Add", "%s,%s", linear(m, ctx, HID, HID, 0.02), h);
		h = layernorm(m, a, decomposed);
		const char *f = gelu(m, linear(m, h, HID, FFN, 0.02), layer);
		h = layernorm(m, op(m, "Add", "%s,%s", linear(m, f, FFN, HID, 0.02), h), decomposed);
	}
	mb_node(m, "Identity", h, "hidden");
	mb_output(m, "hidden", BASE_DT_FLOAT, 3, (int64_t[]){ -1, -1, HID },
	          (const char *const[]){ "batch", "seq", "" });
	return m;
}

/* An MLP over Concat(q, d) (and a third input f of width 5 when `pieces`
 * is 3): Gemm + Relu layers, the first a MatMul + Add when pieces is 3.
 * With `shared`, the Concat's output is also a graph output, so the
 * Concat must stay. */
static struct mb_model *build_mlp(int pieces, int shared)
{
	rng = 99;
	nnames = 0;
	struct mb_model *m = mb_new("mlp", 17);
	const char *const b[] = { "batch", "" };
	mb_input(m, "q", BASE_DT_FLOAT, 2, (int64_t[]){ -1, 24 }, b);
	mb_input(m, "d", BASE_DT_FLOAT, 2, (int64_t[]){ -1, 24 }, b);
	if (pieces == 3)
		mb_input(m, "f", BASE_DT_FLOAT, 2, (int64_t[]){ -1, 5 }, b);
	const char *x = opn(m, "Concat", pieces == 3 ? "q,d,f" : "q,d");
	mb_attr_int(last, "axis", pieces == 3 ? -1 : 1);
	if (shared) {
		mb_node(m, "Identity", x, "joined");
		mb_output(m, "joined", BASE_DT_FLOAT, 2, (int64_t[]){ -1, 48 }, b);
	}
	int64_t dims[] = { pieces == 3 ? 53 : 48, 32, 16, 1 };
	for (int l = 0; l < 3; l++) {
		if (l == 0 && pieces == 3) {
			x = op(m, "Relu", "%s", linear(m, x, dims[0], dims[1], 0.2));
			continue;
		}
		const char *w = weight(m, 2, (int64_t[]){ dims[l + 1], dims[l] }, 0.2, 0);
		const char *bb = weight(m, 1, (int64_t[]){ dims[l + 1] }, 0.1, 0);
		char in[128];
		snprintf(in, sizeof in, "%s,%s,%s", x, w, bb);
		x = opn(m, "Gemm", in);
		mb_attr_int(last, "transB", 1);
		if (l < 2)
			x = op(m, "Relu", "%s", x);
	}
	mb_node(m, "Identity", x, "score");
	mb_output(m, "score", BASE_DT_FLOAT, 2, (int64_t[]){ -1, 1 }, b);
	return m;
}

/* ---- loading, counting, comparing --------------------------------------------------------- */

static struct rt_model *load(struct mb_model *mb, const char *level)
{
	return oc_load_level(mb, level);
}

static int count(const struct rt_model *m, const char *opname)
{
	int k = 0;
	for (int i = 0; i < m->g.nnodes; i++)
		if (strcmp(m->g.nodes[i].domain, "strata") == 0 && strcmp(m->g.nodes[i].op, opname) == 0)
			k++;
	return k;
}

/* Run both models on in[] and compare every output cell. */
static void agree(struct rt_model *opt, struct rt_model *ref, const struct rt_tensor *in)
{
	struct rt_ctx *a, *b;
	struct strata_error err = { 0 };
	struct rt_tensor oa[4], ob[4];
	int nout = runtime_model_noutputs(ref);
	assert_true(nout >= 1 && nout <= 4 && runtime_model_noutputs(opt) == nout);
	assert_int_equal(runtime_ctx_new(opt, &a, &err), 0);
	assert_int_equal(runtime_ctx_new(ref, &b, &err), 0);
	for (int rep = 0; rep < 2; rep++) {
		if (runtime_run(a, in, oa, &err) != 0)
			fail_msg("optimized run: %s", err.msg);
		if (runtime_run(b, in, ob, &err) != 0)
			fail_msg("reference run: %s", err.msg);
		for (int k = 0; k < nout; k++) {
			assert_int_equal(oa[k].rank, ob[k].rank);
			for (int d = 0; d < oa[k].rank; d++)
				assert_int_equal(oa[k].dims[d], ob[k].dims[d]);
			int64_t n = runtime_tensor_count(&ob[k]);
			assert_true(n > 0);
			for (int64_t i = 0; i < n; i++) {
				float x = ((const float *)oa[k].data)[i], y = ((const float *)ob[k].data)[i];
				if (!(fabsf(x - y) <= 1e-4f * fmaxf(1.0f, fabsf(y))))
					fail_msg("output %d cell %lld: optimized %.9g, reference %.9g", k,
					         (long long)i, x, y);
			}
		}
	}
	runtime_ctx_free(a);
	runtime_ctx_free(b);
}

static void run_bert(int decomposed)
{
	struct mb_model *mb = build_bert(decomposed);
	struct rt_model *opt = load(mb, "all"), *ref = load(mb, "disabled");
	mb_free(mb);
	assert_int_equal(count(opt, "Attention"), 2);
	assert_int_equal(count(opt, "FusedLinear"), 12);
	assert_int_equal(count(opt, "SkipLayerNorm"), 5);
	assert_int_equal(count(ref, "Attention") + count(ref, "FusedLinear"), 0);
	assert_true(opt->g.nnodes * 3 < ref->g.nnodes);
	static const int shapes[][3] = { { 1, 8, 0 }, { 2, 16, 5 }, { 3, 7, 3 }, { 1, 32, 0 },
	                                 { 2, 1, 0 } };
	for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
		int B = shapes[s][0], S = shapes[s][1], pad = shapes[s][2];
		int64_t *ids = malloc((size_t)(B * S) * sizeof *ids);
		int64_t *mask = malloc((size_t)(B * S) * sizeof *mask);
		for (int i = 0; i < B * S; i++) {
			int row = i / S, col = i % S;
			ids[i] = (int64_t)(uniform() * VOCAB) % VOCAB;
			/* rows after the first are right-padded */
			mask[i] = row > 0 && col >= S - pad ? 0 : 1;
		}
		struct rt_tensor in[2] = { { BASE_DT_INT64, 2, { B, S }, ids },
		                           { BASE_DT_INT64, 2, { B, S }, mask } };
		agree(opt, ref, in);
		free(ids);
		free(mask);
	}
	runtime_model_free(opt);
	runtime_model_free(ref);
}

static void test_bert_fused_layernorm(void **state)
{
	(void)state;
	run_bert(0);
}

static void test_bert_decomposed_layernorm(void **state)
{
	(void)state;
	run_bert(1);
}

static int count_onnx(const struct rt_model *m, const char *opname)
{
	int k = 0;
	for (int i = 0; i < m->g.nnodes; i++)
		if (!*m->g.nodes[i].domain && strcmp(m->g.nodes[i].op, opname) == 0)
			k++;
	return k;
}

/* Runs after the first allocate nothing. */
static void warm_runs_allocate_nothing(struct rt_model *m, const struct rt_tensor *in)
{
	struct rt_ctx *c;
	struct strata_error err = { 0 };
	struct rt_tensor out[4];
	struct base_alloc_stats a, b;
	assert_int_equal(runtime_ctx_new(m, &c, &err), 0);
	assert_int_equal(runtime_run(c, in, out, &err), 0);
	base_alloc_stats(&a);
	for (int r = 0; r < 3; r++)
		assert_int_equal(runtime_run(c, in, out, &err), 0);
	base_alloc_stats(&b);
	assert_int_equal(b.allocs, a.allocs);
	runtime_ctx_free(c);
}

/* The Concat feeding the first layer is folded into its FusedLinear (one
 * GEMM per piece, reading the inputs in place) unless something else reads
 * the joined tensor. */
static void run_mlp(int pieces, int shared)
{
	struct mb_model *mb = build_mlp(pieces, shared);
	struct rt_model *opt = load(mb, "all"), *ref = load(mb, "disabled");
	mb_free(mb);
	assert_int_equal(count(opt, "FusedLinear"), 3);
	assert_int_equal(count(ref, "FusedLinear"), 0);
	assert_int_equal(count_onnx(ref, "Concat"), 1);
	assert_int_equal(count_onnx(opt, "Concat"), shared ? 1 : 0);
	/* 3 FusedLinear, the Identity, the Relu a MatMul + Add leaves, the
	 * kept Concat and its Identity */
	assert_int_equal(opt->g.nnodes, 4 + (pieces == 3) + 2 * shared);
	static const int batches[] = { 1, 7, 64, 333 };
	for (size_t k = 0; k < sizeof batches / sizeof batches[0]; k++) {
		int B = batches[k];
		float *q = malloc((size_t)B * 24 * sizeof *q), *d = malloc((size_t)B * 24 * sizeof *d);
		float *f = malloc((size_t)B * 5 * sizeof *f);
		for (int i = 0; i < B * 24; i++) {
			q[i] = normal(1);
			d[i] = normal(1);
		}
		for (int i = 0; i < B * 5; i++)
			f[i] = normal(1);
		struct rt_tensor in[3] = { { BASE_DT_FLOAT, 2, { B, 24 }, q },
		                           { BASE_DT_FLOAT, 2, { B, 24 }, d },
		                           { BASE_DT_FLOAT, 2, { B, 5 }, f } };
		agree(opt, ref, in);
		warm_runs_allocate_nothing(opt, in);
		free(q);
		free(d);
		free(f);
	}
	runtime_model_free(opt);
	runtime_model_free(ref);
}

static void test_mlp(void **state)
{
	(void)state;
	run_mlp(2, 0);
}

static void test_mlp_three_pieces(void **state)
{
	(void)state;
	run_mlp(3, 0);
}

static void test_mlp_concat_read_elsewhere(void **state)
{
	(void)state;
	run_mlp(2, 1);
}

/* A value read outside its pattern survives: the MatMul's output is also
 * read by a Relu, so the bias Add stays a node of its own. */
static void test_shared_value_survives(void **state)
{
	(void)state;
	rng = 7;
	nnames = 0;
	struct mb_model *mb = mb_new("shared", 17);
	const char *const nd[] = { "n", "" };
	mb_input(mb, "x", BASE_DT_FLOAT, 2, (int64_t[]){ -1, 8 }, nd);
	const char *w = weight(mb, 2, (int64_t[]){ 8, 8 }, 0.3, 0);
	const char *b = weight(mb, 1, (int64_t[]){ 8 }, 0.3, 0);
	const char *mm = op(mb, "MatMul", "x,%s", w);
	snprintf(buf, sizeof buf, "%s,%s", mm, b);
	mb_node(mb, "Add", buf, "y");
	mb_node(mb, "Relu", mm, "z");
	mb_output(mb, "y", BASE_DT_FLOAT, 2, (int64_t[]){ -1, 8 }, nd);
	mb_output(mb, "z", BASE_DT_FLOAT, 2, (int64_t[]){ -1, 8 }, nd);
	struct rt_model *opt = load(mb, "all"), *ref = load(mb, "disabled");
	mb_free(mb);
	assert_int_equal(count(opt, "FusedLinear"), 1);
	int adds = 0;
	for (int i = 0; i < opt->g.nnodes; i++)
		adds += strcmp(opt->g.nodes[i].op, "Add") == 0;
	assert_int_equal(adds, 1);
	float xv[3 * 8];
	for (int i = 0; i < 3 * 8; i++)
		xv[i] = normal(1);
	struct rt_tensor in[1] = { { BASE_DT_FLOAT, 2, { 3, 8 }, xv } };
	agree(opt, ref, in);
	runtime_model_free(opt);
	runtime_model_free(ref);
}

/* ---- session.bf16_weights ------------------------------------------------------- */

static struct rt_model *load_bf16(struct mb_model *mb, const char *on)
{
	return oc_load_option(mb, "session.bf16_weights", on);
}

/* The packing isa of the first packed weights of m (-1: none). */
static int first_pack_isa(const struct rt_model *m)
{
	for (int i = 0; i < m->g.nnodes; i++)
		if (m->g.nodes[i].npacks)
			return m->g.nodes[i].packs[0]->isa;
	return -1;
}

/* A linear layer and a plain MatMul with the option: weights packed as
 * bfloat16 where the CPU has AVX512-BF16 and it is faster than float
 * (float elsewhere, and under the AVX2 kernels: the float model's bits),
 * outputs within bfloat16's rounding of the float model's but not equal
 * to them; a bad value is refused. */
static void test_bf16_weights_option(void **state)
{
	(void)state;
	struct rt_options *o;
	struct strata_error err = { 0 };
	assert_int_equal(runtime_options_new(&o, &err), 0);
	assert_int_equal(runtime_options_set(o, "session.bf16_weights", "2", &err),
	                 STRATA_INVALID_ARGUMENT);
	assert_non_null(strstr(err.msg, "session.bf16_weights"));
	runtime_options_free(o);

	rng = 11;
	nnames = 0;
	enum { K = 96, N = 80 };
	struct mb_model *mb = mb_new("bf16", 17);
	const char *const nd[] = { "n", "" };
	mb_input(mb, "x", BASE_DT_FLOAT, 2, (int64_t[]){ -1, K }, nd);
	const char *w = weight(mb, 2, (int64_t[]){ K, N }, 0.3, 0);
	const char *b = weight(mb, 1, (int64_t[]){ N }, 0.3, 0);
	const char *w2 = weight(mb, 2, (int64_t[]){ N, 24 }, 0.3, 0);
	const char *mm = op(mb, "MatMul", "x,%s", w);
	const char *lin = op(mb, "Add", "%s,%s", mm, b);
	mb_node(mb, "Relu", lin, "h");
	snprintf(buf, sizeof buf, "h,%s", w2);
	mb_node(mb, "MatMul", buf, "y");
	mb_output(mb, "y", BASE_DT_FLOAT, 2, (int64_t[]){ -1, 24 }, nd);
	float xv[13 * K];
	for (int i = 0; i < 13 * K; i++)
		xv[i] = normal(1);
	struct rt_tensor in[1] = { { BASE_DT_FLOAT, 2, { 13, K }, xv } };
	/* faster 1: as on a CPU whose bfloat16 GEMM beats the float one; 0: as
	 * on one where it does not, where the option keeps the float weights */
	for (int run = 0; run < 4; run++) {
		int isa = RT_ISA_AVX2 + run / 2, faster = run % 2;
		if (rt_cpu_force(isa) != 0)
			continue;
		rt_cpu_bf16_force(faster);
		struct rt_model *on = load_bf16(mb, "1"), *off = load_bf16(mb, "0");
		int packed = isa == RT_ISA_AVX512 && rt_cpu_bf16() && faster;
		assert_int_equal(first_pack_isa(on), packed ? RT_PACK_BF16 : isa);
		assert_int_equal(first_pack_isa(off), isa);
		struct rt_ctx *a, *c;
		struct rt_tensor oa[1], oc[1];
		assert_int_equal(runtime_ctx_new(on, &a, &err), 0);
		assert_int_equal(runtime_ctx_new(off, &c, &err), 0);
		assert_int_equal(runtime_run(a, in, oa, &err), 0);
		assert_int_equal(runtime_run(c, in, oc, &err), 0);
		double diff = 0, mag = 0;
		for (int i = 0; i < 13 * 24; i++) {
			double p = ((const float *)oa[0].data)[i], q = ((const float *)oc[0].data)[i];
			diff = fmax(diff, fabs(p - q));
			mag = fmax(mag, fabs(q));
		}
		/* bfloat16 keeps 8 bits: the layers' outputs move by a few 2^-8 of
		 * their size, and do move */
		if (packed)
			assert_true(diff > 0 && diff <= 0.05 * mag);
		else
			assert_true(diff == 0);
		runtime_ctx_free(a);
		runtime_ctx_free(c);
		runtime_model_free(on);
		runtime_model_free(off);
	}
	rt_cpu_bf16_force(-1);
	/* on its own, the option packs bfloat16 only where it is faster */
	struct rt_model *on = load_bf16(mb, "1");
	assert_int_equal(first_pack_isa(on) == RT_PACK_BF16, rt_cpu_isa() == RT_ISA_AVX512 &&
	                                                       rt_cpu_bf16_faster());
	runtime_model_free(on);
	assert_int_equal(rt_cpu_force(RT_ISA_AUTO), 0);
	mb_free(mb);
}

/* ---- vectorized math ---------------------------------------------------------------------- */

static void test_vmath(void **state)
{
	(void)state;
	enum { N = 200003 };
	float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
	for (int i = 0; i < N; i++)
		x[i] = -30.0f + 60.0f * (float)i / N;
	rt_vexp(x, y, N);
	for (int i = 0; i < N; i++)
		assert_true(fabs(y[i] - exp((double)x[i])) <= 1e-6 * exp((double)x[i]));
	rt_verf(x, y, N);
	for (int i = 0; i < N; i++)
		assert_true(fabs(y[i] - erf((double)x[i])) <= 1e-6 * fmax(fabs(erf((double)x[i])), 1e-30));
	rt_vtanh(x, y, N);
	for (int i = 0; i < N; i++)
		assert_true(fabs(y[i] - tanh((double)x[i])) <= 1e-6 * fabs(tanh((double)x[i])) + 1e-37);
	rt_vgelu_erf(x, y, N);
	for (int i = 0; i < N; i++) {
		double r = x[i] * 0.5 * (1 + erf(x[i] / sqrt(2.0)));
		assert_true(fabs(y[i] - r) <= 1e-6 * fabs(r) + 5e-7);
	}
	float sp[4] = { NAN, INFINITY, -INFINITY, 0 };
	rt_vexp(sp, y, 4);
	assert_true(isnan(y[0]) && isinf(y[1]) && y[2] == 0 && y[3] == 1);
	rt_verf(sp, y, 4);
	assert_true(isnan(y[0]) && y[1] == 1 && y[2] == -1 && y[3] == 0);
	float row[11];
	double sum = 0;
	for (int i = 0; i < 11; i++)
		row[i] = (float)i;
	rt_vsoftmax(row, 11);
	for (int i = 0; i < 11; i++)
		sum += row[i];
	assert_true(fabs(sum - 1) < 1e-6 && row[10] > row[9]);
	free(x);
	free(y);
}

/* out = softmax(scale * q k^T + mask) v for one head, in double. */
static void attn_ref(int sq, int sk, int d, float scale, const float *q, int ldq, const float *k,
                     const float *v, int ldkv, const float *mask, int mask_ld, int mstep,
                     double *out)
{
	double *p = malloc((size_t)sk * sizeof *p);
	for (int i = 0; i < sq; i++) {
		double mx = -INFINITY, sum = 0;
		for (int j = 0; j < sk; j++) {
			double s = 0;
			for (int c = 0; c < d; c++)
				s += (double)q[i * ldq + c] * k[j * ldkv + c];
			s = s * scale + (mask ? mask[i * mask_ld + (mstep ? j : 0)] : 0.0);
			p[j] = s;
			mx = s > mx ? s : mx;
		}
		for (int j = 0; j < sk; j++)
			sum += p[j] = exp(p[j] - mx);
		for (int c = 0; c < d; c++) {
			double o = 0;
			for (int j = 0; j < sk; j++)
				o += p[j] * v[j * ldkv + c];
			out[i * d + c] = o / sum;
		}
	}
	free(p);
}

/* x rounded to bfloat16 (to nearest even) and back. */
static double bf(double x)
{
	return base_bf16_to_f32(base_f32_to_bf16((float)x));
}

/* attn_ref with the operands the bfloat16 kernel multiplies: q, scale * k,
 * v and the exponentials rounded to bfloat16; the sum of the exponentials
 * not. */
static void attn_ref_bf16(int sq, int sk, int d, float scale, const float *q, int ldq,
                          const float *k, const float *v, int ldkv, const float *mask,
                          int mask_ld, int mstep, double *out)
{
	double *p = malloc((size_t)sk * sizeof *p);
	for (int i = 0; i < sq; i++) {
		double mx = -INFINITY, sum = 0;
		for (int j = 0; j < sk; j++) {
			double s = 0;
			for (int c = 0; c < d; c++)
				s += bf(q[i * ldq + c]) * bf(scale * k[j * ldkv + c]);
			s += mask ? mask[i * mask_ld + (mstep ? j : 0)] : 0.0;
			p[j] = s;
			mx = s > mx ? s : mx;
		}
		for (int j = 0; j < sk; j++)
			sum += p[j] = exp(p[j] - mx);
		for (int c = 0; c < d; c++) {
			double o = 0;
			for (int j = 0; j < sk; j++)
				o += bf(p[j]) * bf(v[j * ldkv + c]);
			out[i * d + c] = o / sum;
		}
	}
	free(p);
}

typedef void attn_ref_fn(int sq, int sk, int d, float scale, const float *q, int ldq,
                         const float *k, const float *v, int ldkv, const float *mask,
                         int mask_ld, int mstep, double *out);
typedef void attn_fn(int64_t sq, int64_t sk, int64_t d, float scale, const float *q,
                     int64_t ldq, const float *k, int64_t ldk, const float *v, int64_t ldv,
                     const float *mask, int64_t mask_ld, int mask_step, float *out,
                     int64_t ldo, float *work);

/* One head kernel (work bytes from wb) against its double reference within
 * tol, over widths, query and key counts around the blocks and every form
 * of mask; then NaN and all -inf rows. */
static void attn_kernel(attn_fn *fn, size_t (*wb)(int64_t, int64_t, int64_t), attn_ref_fn *ref,
                        double tol)
{
	static const int ds[] = { 16, 24, 32, 40, 64 }, sqs[] = { 1, 7, 8, 13, 40 },
	                 sks[] = { 1, 5, 16, 17, 33, 128 };
	rng = 99;
	for (size_t a = 0; a < sizeof ds / sizeof *ds; a++)
		for (size_t b = 0; b < sizeof sqs / sizeof *sqs; b++)
			for (size_t c = 0; c < sizeof sks / sizeof *sks; c++)
				for (int mform = 0; mform < 4; mform++) {
					int d = ds[a], sq = sqs[b], sk = sks[c], ld = 3 * d + 5;
					int ldo = d + 3, rows = sq > sk ? sq : sk;
					float *q = malloc((size_t)(rows * ld) * sizeof *q);
					float *k = malloc((size_t)(rows * ld) * sizeof *k);
					float *v = malloc((size_t)(rows * ld) * sizeof *v);
					float *m = malloc((size_t)(sq * sk) * sizeof *m);
					float *o = malloc((size_t)(sq * ldo) * sizeof *o);
					double *r = malloc((size_t)(sq * d) * sizeof *r);
					float *w = malloc(wb(sq, sk, d));
					for (int i = 0; i < rows * ld; i++) {
						q[i] = normal(1.0);
						k[i] = normal(1.0);
						v[i] = normal(1.0);
					}
					/* 0: no mask; 1: per key, some -inf (never a whole
					 * row); 2: one cell per row (the finite first); 3: per key, shared by
					 * every row (mask_ld 0). */
					for (int i = 0; i < sq * sk; i++)
						m[i] = i % sk && uniform() < 0.3 ? -INFINITY
						                                 : (float)(-3 * uniform());
					const float *mp = mform ? m : NULL;
					int mld = mform == 3 ? 0 : sk, mstep = mform != 2;
					memset(o, 0xff, (size_t)(sq * ldo) * sizeof *o);
					fn(sq, sk, d, 0.25f, q, ld, k, ld, v, ld, mp, mld, mstep, o, ldo, w);
					ref(sq, sk, d, 0.25f, q, ld, k, v, ld, mp, mld, mstep, r);
					for (int i = 0; i < sq; i++) {
						for (int j = 0; j < d; j++)
							if (!(fabs(o[i * ldo + j] - r[i * d + j]) <= tol))
								fail_msg("d %d sq %d sk %d mask %d: [%d][%d] %.9g, "
								         "reference %.9g",
								         d, sq, sk, mform, i, j, o[i * ldo + j],
								         r[i * d + j]);
						for (int j = d; j < ldo; j++) /* the gap stays untouched */
							assert_true(isnan(o[i * ldo + j]));
					}
					free(q);
					free(k);
					free(v);
					free(m);
					free(o);
					free(r);
					free(w);
				}
	/* A NaN score poisons its row; a row of all -inf gives NaN (0/0), as
	 * the unfused Softmax does; other rows are unaffected. */
	float q[2 * 16], k[3 * 16], v[3 * 16], m[2 * 3] = { 0, 0, 0, -INFINITY, -INFINITY, -INFINITY };
	float o[2 * 16], *w = malloc(wb(2, 3, 16));
	assert_non_null(w);
	for (int i = 0; i < 48; i++)
		k[i] = v[i] = (float)(i % 7) * 0.1f;
	for (int i = 0; i < 32; i++)
		q[i] = 0.5f;
	fn(2, 3, 16, 1.0f, q, 16, k, 16, v, 16, m, 3, 1, o, 16, w);
	for (int j = 0; j < 16; j++)
		assert_true(isfinite(o[j]) && isnan(o[16 + j]));
	q[3] = NAN;
	fn(2, 3, 16, 1.0f, q, 16, k, 16, v, 16, NULL, 0, 1, o, 16, w);
	for (int j = 0; j < 16; j++)
		assert_true(isnan(o[j]) && isfinite(o[16 + j]));
	free(w);
}

static void test_attn_kernel(void **state)
{
	(void)state;
	if (rt_cpu_best() != RT_ISA_AVX512)
		skip();
	attn_kernel(rt_attn_head_avx512, rt_attn_work_bytes, attn_ref, 1e-5);
}

/* The bfloat16 kernel (session.bf16_weights on AMX) against the reference
 * of its rounded operands: the rest is float rounding, and the rare
 * exponential whose float value rounds to the other bfloat16 neighbour of
 * the double one's. */
static void test_attn_kernel_amx(void **state)
{
	(void)state;
	if (!rt_cpu_amx_usable())
		skip();
	attn_kernel(rt_attn_head_amx, rt_attn_amx_work_bytes, attn_ref_bf16, 2e-3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bert_fused_layernorm),
		cmocka_unit_test(test_bert_decomposed_layernorm),
		cmocka_unit_test(test_mlp),
		cmocka_unit_test(test_mlp_three_pieces),
		cmocka_unit_test(test_mlp_concat_read_elsewhere),
		cmocka_unit_test(test_shared_value_survives),
		cmocka_unit_test(test_bf16_weights_option),
		cmocka_unit_test(test_vmath),
		cmocka_unit_test(test_attn_kernel),
		cmocka_unit_test(test_attn_kernel_amx),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
