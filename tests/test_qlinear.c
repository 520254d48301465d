/*
 * test_qlinear.c: dynamically quantized linear layers as ONNX Runtime's
 * quantize_dynamic writes them (DynamicQuantizeLinear -> MatMulInteger ->
 * Cast -> Mul by the product of the scales, then the bias Add, the erf-GELU
 * chain, the residual Add), fused by the optimizer into strata.QuantLinear
 * (runtime/ops/qlinear.c) and checked against the same graph unoptimized:
 * bit for bit without an activation, within the GELU's rounding with one;
 * per-tensor and per-column weight scales and zero points, int8 and uint8
 * weights, under each dispatch path.  Also DynamicQuantizeLinear's vector
 * path against its scalar formula (odd lengths, halfway quotients), the
 * same for DequantizeLinear of 8-bit cells, and a
 * hand-written QuantLinear whose operands are wrong, which must fail to load.
 * Also the QDQ spelling (QuantizeLinear -> DequantizeLinear of the
 * activations, DequantizeLinear of 8-bit weights, MatMul, the same tail),
 * fused into QuantLinear as well and checked against the chain within float
 * rounding (the chain sums dequantized floats, the layer integers): uint8
 * and int8 activations, one dequantized activation read by two layers,
 * weight scales per tensor and per column; a weight scaled per row (which
 * cannot come out of the sum) stays a float layer.
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

#include "../runtime/kernel.h"
#include "../runtime/runtime_int.h"
#include "modelbuild.h"
#include "opcase.h"

enum { B = 2, S = 5, K = 40, H = 24 };

static unsigned seed = 7;

static char names[256][32];
static int nnames;

static const char *fresh(const char *stem)
{
	assert_true(nnames < 256);
	snprintf(names[nnames], sizeof names[0], "%s_%d", stem, nnames);
	return names[nnames++];
}

static const char *node1(struct mb_model *m, const char *op, const char *ins)
{
	const char *out = fresh(op);
	mb_node(m, op, ins, out);
	return out;
}

static const char *kfloats(struct mb_model *m, int64_t n, float scale, float mean)
{
	float v[64];
	assert_true(n <= 64);
	for (int64_t i = 0; i < n; i++)
		v[i] = mean + scale * oc_frand(&seed);
	const char *name = fresh("f");
	mb_init(m, name, BASE_DT_FLOAT, n == 1 ? 0 : 1, (int64_t[]){ n }, v);
	return name;
}

/* quantize_dynamic's layer: x [B,S,k] -> [B,S,n].  wdt: the weights' type;
 * percol: one scale and zero point per column.  dq: x's
 * DynamicQuantizeLinear outputs when x was quantized already, else NULL
 * (then filled). */
static const char *qlayer(struct mb_model *m, const char *x, int64_t k, int64_t n, int wdt,
                          int percol, const char **dq)
{
	char ins[256];
	if (!dq[0]) {
		dq[0] = fresh("xq");
		dq[1] = fresh("xs");
		dq[2] = fresh("xz");
		snprintf(ins, sizeof ins, "%s,%s,%s", dq[0], dq[1], dq[2]);
		mb_node(m, "DynamicQuantizeLinear", x, ins);
	}
	uint8_t w[64 * 64], z[64];
	for (int64_t i = 0; i < k * n; i++)
		w[i] = (uint8_t)(wdt == BASE_DT_INT8 ? (int8_t)(127 * oc_frand(&seed))
		                                     : (uint8_t)(128 + 127 * oc_frand(&seed)));
	for (int64_t j = 0; j < n; j++)
		z[j] = (uint8_t)(wdt == BASE_DT_INT8 ? (percol ? (int8_t)(j % 5 - 2) : 0) : 128 + j % 3);
	const char *wq = fresh("wq"), *wz = fresh("wz");
	mb_init(m, wq, wdt, 2, (int64_t[]){ k, n }, w);
	mb_init(m, wz, wdt, percol ? 1 : 0, (int64_t[]){ n }, z);
	const char *ws = kfloats(m, percol ? n : 1, 0.002f, 0.01f);
	snprintf(ins, sizeof ins, "%s,%s,%s,%s", dq[0], wq, dq[2], wz);
	const char *mm = node1(m, "MatMulInteger", ins);
	const char *c = fresh("cast");
	struct mb_node *cn = mb_node(m, "Cast", mm, c);
	mb_attr_int(cn, "to", BASE_DT_FLOAT);
	snprintf(ins, sizeof ins, "%s,%s", dq[1], ws);
	const char *sc = node1(m, "Mul", ins);
	snprintf(ins, sizeof ins, "%s,%s", c, sc);
	const char *y = node1(m, "Mul", ins);
	snprintf(ins, sizeof ins, "%s,%s", y, kfloats(m, n, 0.1f, 0));
	return node1(m, "Add", ins);
}

static const char *gelu(struct mb_model *m, const char *x)
{
	char ins[128];
	snprintf(ins, sizeof ins, "%s,%s", x, kfloats(m, 1, 0, (float)M_SQRT2));
	const char *e = node1(m, "Erf", node1(m, "Div", ins));
	snprintf(ins, sizeof ins, "%s,%s", e, kfloats(m, 1, 0, 1.0f));
	const char *a = node1(m, "Add", ins);
	snprintf(ins, sizeof ins, "%s,%s", x, kfloats(m, 1, 0, 0.5f));
	const char *h = node1(m, "Mul", ins);
	snprintf(ins, sizeof ins, "%s,%s", h, a);
	return node1(m, "Mul", ins);
}

/* kind 0: two layers reading one quantized x (int8 weights per tensor,
 * uint8 weights per column), both outputs; kind 1: layer, GELU, layer,
 * residual Add of x. */
static struct mb_model *build(int kind)
{
	nnames = 0;
	struct mb_model *m = mb_new("q", 13);
	int64_t dx[] = { B, S, K }, dh[] = { B, S, H }, dk[] = { B, S, K };
	mb_input(m, "x", BASE_DT_FLOAT, 3, dx, NULL);
	const char *dq[3] = { NULL, NULL, NULL };
	if (kind == 0) {
		const char *a = qlayer(m, "x", K, H, BASE_DT_INT8, 0, dq);
		const char *b = qlayer(m, "x", K, H, BASE_DT_UINT8, 1, dq);
		mb_node(m, "Identity", a, "ya");
		mb_node(m, "Identity", b, "yb");
		mb_output(m, "ya", BASE_DT_FLOAT, 3, dh, NULL);
		mb_output(m, "yb", BASE_DT_FLOAT, 3, dh, NULL);
	} else {
		const char *h = gelu(m, qlayer(m, "x", K, H, BASE_DT_INT8, 0, dq));
		const char *dq2[3] = { NULL, NULL, NULL };
		const char *y = qlayer(m, h, H, K, BASE_DT_INT8, 1, dq2);
		char ins[128];
		snprintf(ins, sizeof ins, "%s,x", y);
		mb_node(m, "Add", ins, "y");
		mb_output(m, "y", BASE_DT_FLOAT, 3, dk, NULL);
	}
	return m;
}

static int count(const struct rt_model *m, const char *domain, const char *op)
{
	int k = 0;
	for (int i = 0; i < m->g.nnodes; i++)
		k += !m->g.nodes[i].folded && strcmp(m->g.nodes[i].domain, domain) == 0 &&
		     strcmp(m->g.nodes[i].op, op) == 0;
	return k;
}

/* ---- the QDQ spelling ------------------------------------------------------------- */

/* x through QuantizeLinear and DequantizeLinear with one scale and zero
 * point (adt: uint8 or int8); the dequantized value. */
static const char *qdq_act(struct mb_model *m, const char *x, int adt)
{
	char ins[128];
	uint8_t z = adt == BASE_DT_UINT8 ? 128 : (uint8_t)(int8_t)-3;
	const char *xs = kfloats(m, 1, 0, 3.2f / 127), *xz = fresh("xz");
	mb_init(m, xz, adt, 0, NULL, &z);
	snprintf(ins, sizeof ins, "%s,%s,%s", x, xs, xz);
	const char *q = node1(m, "QuantizeLinear", ins);
	snprintf(ins, sizeof ins, "%s,%s,%s", q, xs, xz);
	return node1(m, "DequantizeLinear", ins);
}

/* MatMul(xdq [B,S,k], DequantizeLinear(Wq [k,n])) + bias.  scales: 0 one
 * for the tensor, 1 one per column (axis 1), 2 one per row (axis 0). */
static const char *qdq_layer(struct mb_model *m, const char *xdq, int64_t k, int64_t n, int wdt,
                             int scales)
{
	char ins[256];
	uint8_t w[64 * 64], z[64];
	for (int64_t i = 0; i < k * n; i++)
		w[i] = (uint8_t)(wdt == BASE_DT_INT8 ? (int8_t)(127 * oc_frand(&seed))
		                                     : (uint8_t)(128 + 127 * oc_frand(&seed)));
	int64_t nz = scales == 0 ? 1 : scales == 1 ? n : k;
	for (int64_t j = 0; j < nz; j++)
		z[j] = (uint8_t)(wdt == BASE_DT_INT8 ? (int8_t)(j % 5 - 2) : 128 + j % 3);
	const char *wq = fresh("wq"), *wz = fresh("wz");
	mb_init(m, wq, wdt, 2, (int64_t[]){ k, n }, w);
	mb_init(m, wz, wdt, scales ? 1 : 0, (int64_t[]){ nz }, z);
	const char *ws = kfloats(m, nz, 0.002f, 0.01f);
	snprintf(ins, sizeof ins, "%s,%s,%s", wq, ws, wz);
	const char *wd = fresh("wdq");
	struct mb_node *dq = mb_node(m, "DequantizeLinear", ins, wd);
	if (scales)
		mb_attr_int(dq, "axis", scales == 1 ? 1 : 0);
	snprintf(ins, sizeof ins, "%s,%s", xdq, wd);
	const char *y = node1(m, "MatMul", ins);
	snprintf(ins, sizeof ins, "%s,%s", y, kfloats(m, n, 0.1f, 0));
	return node1(m, "Add", ins);
}

/* kind 0: uint8 activations read by three layers (int8 weights per tensor,
 * uint8 per column, int8 per row), three outputs; kind 1: int8
 * activations, layer, GELU, again through QDQ, layer, residual Add of x. */
static struct mb_model *build_qdq(int kind)
{
	nnames = 0;
	struct mb_model *m = mb_new("q", 13);
	int64_t dx[] = { B, S, K }, dh[] = { B, S, H };
	mb_input(m, "x", BASE_DT_FLOAT, 3, dx, NULL);
	if (kind == 0) {
		const char *xd = qdq_act(m, "x", BASE_DT_UINT8);
		mb_node(m, "Identity", qdq_layer(m, xd, K, H, BASE_DT_INT8, 0), "ya");
		mb_node(m, "Identity", qdq_layer(m, xd, K, H, BASE_DT_UINT8, 1), "yb");
		mb_node(m, "Identity", qdq_layer(m, xd, K, H, BASE_DT_INT8, 2), "yc");
		mb_output(m, "ya", BASE_DT_FLOAT, 3, dh, NULL);
		mb_output(m, "yb", BASE_DT_FLOAT, 3, dh, NULL);
		mb_output(m, "yc", BASE_DT_FLOAT, 3, dh, NULL);
	} else {
		const char *h = gelu(m, qdq_layer(m, qdq_act(m, "x", BASE_DT_INT8), K, H,
		                                  BASE_DT_INT8, 0));
		const char *y = qdq_layer(m, qdq_act(m, h, BASE_DT_INT8), H, K, BASE_DT_INT8, 1);
		char ins[128];
		snprintf(ins, sizeof ins, "%s,x", y);
		mb_node(m, "Add", ins, "y");
		mb_output(m, "y", BASE_DT_FLOAT, 3, dx, NULL);
	}
	return m;
}

/* The model mb optimized and not, on the same x, output by output, under
 * each dispatch path: within tol relative. */
static void compare_model(struct mb_model *mb, struct rt_model **optp, double tol)
{
	struct rt_model *opt = oc_load_level(mb, "all"), *ref = oc_load_level(mb, "disabled");
	*optp = opt;
	float x[B * S * K];
	for (int i = 0; i < B * S * K; i++)
		x[i] = 3 * oc_frand(&seed);
	int64_t dx[] = { B, S, K };
	struct rt_tensor in = oc_tensor(BASE_DT_FLOAT, 3, dx, x);
	/* the AVX2 kernels; the same with the 256-bit VNNI int8 kernel where it
	 * runs; the AVX-512 ones where they run */
	int isas[3] = { RT_ISA_AVX2, RT_ISA_AVX2, RT_ISA_AVX512 };
	int qkinds[3] = { 0, RT_QGEMM_VNNI256, 0 };
	for (int t = 0; t < 3; t++) {
		if ((isas[t] == RT_ISA_AVX512 && rt_cpu_best() != RT_ISA_AVX512) ||
		    rt_qgemm_force(qkinds[t]) != 0)
			continue;
		assert_int_equal(rt_cpu_force(isas[t]), 0);
		struct rt_ctx *a, *b;
		struct rt_tensor oa[3], ob[3];
		struct strata_error err = { 0 };
		assert_int_equal(runtime_ctx_new(opt, &a, &err), 0);
		assert_int_equal(runtime_ctx_new(ref, &b, &err), 0);
		if (runtime_run(a, &in, oa, &err) != 0 || runtime_run(b, &in, ob, &err) != 0)
			fail_msg("run: %s", err.msg);
		for (int k = 0; k < runtime_model_noutputs(ref); k++) {
			int64_t n = runtime_tensor_count(&ob[k]);
			assert_int_equal(runtime_tensor_count(&oa[k]), n);
			for (int64_t i = 0; i < n; i++) {
				float p = ((const float *)oa[k].data)[i], q = ((const float *)ob[k].data)[i];
				if (!(fabs(p - q) <= tol * fmax(1.0, fabs(q))))
					fail_msg("isa %d, int8 kernel %d, output %d cell %lld: fused %.9g, "
					         "chain %.9g", isas[t], rt_qgemm_isa(), k, (long long)i, p, q);
			}
		}
		runtime_ctx_free(a);
		runtime_ctx_free(b);
	}
	assert_int_equal(rt_cpu_force(RT_ISA_AUTO), 0);
	assert_int_equal(rt_qgemm_force(0), 0);
	runtime_model_free(ref);
}

static void compare(int kind, double tol)
{
	struct mb_model *mb = build(kind);
	struct rt_model *opt;
	compare_model(mb, &opt, tol);
	assert_int_equal(count(opt, "strata", "QuantLinear"), 2);
	assert_int_equal(count(opt, "", "MatMulInteger"), 0);
	mb_free(mb);
	runtime_model_free(opt);
}

static void test_qdq_shared(void **state)
{
	(void)state;
	struct mb_model *mb = build_qdq(0);
	struct rt_model *opt;
	compare_model(mb, &opt, 1e-5);
	assert_int_equal(count(opt, "strata", "QuantLinear"), 2);
	assert_int_equal(count(opt, "strata", "FusedLinear"), 1); /* the per-row one */
	assert_int_equal(count(opt, "", "MatMul"), 0);
	/* the activations' DequantizeLinear stays for the float layer */
	assert_int_equal(count(opt, "", "DequantizeLinear"), 1);
	mb_free(mb);
	runtime_model_free(opt);
}

static void test_qdq_gelu_residual(void **state)
{
	(void)state;
	struct mb_model *mb = build_qdq(1);
	struct rt_model *opt;
	compare_model(mb, &opt, 1e-5);
	assert_int_equal(count(opt, "strata", "QuantLinear"), 2);
	assert_int_equal(count(opt, "", "MatMul"), 0);
	assert_int_equal(count(opt, "", "DequantizeLinear"), 0);
	assert_int_equal(count(opt, "", "Erf"), 0);
	mb_free(mb);
	runtime_model_free(opt);
}

static void test_qlinear_exact(void **state)
{
	(void)state;
	compare(0, 0);
}

static void test_qlinear_gelu_residual(void **state)
{
	(void)state;
	compare(1, 1e-5);
}

/* DynamicQuantizeLinear against its formula, cell by cell. */
static void test_dynquant_vector(void **state)
{
	(void)state;
	static const int64_t lens[] = { 1, 7, 31, 32, 33, 100, 257 };
	static const int OUT[] = { BASE_DT_UINT8, BASE_DT_FLOAT, BASE_DT_UINT8 };
	static const int F[] = { BASE_DT_FLOAT };
	struct mb_node *nd;
	struct oc_case o;
	assert_int_equal(oc_load(oc_model(11, "DynamicQuantizeLinear", "x", F, "y,s,z", OUT, &nd), &o),
	                 0);
	float x[300];
	enum { NL = sizeof lens / sizeof lens[0] };
	for (size_t c = 0; c < NL + 3; c++) {
		int64_t n = c < NL ? lens[c] : c == NL + 1 ? 64 : 256;
		for (int64_t i = 0; i < n; i++)
			x[i] = c < NL ? 5 * oc_frand(&seed) + 1
			     : c == NL ? (float)i - 0.5f /* halfway quotients */
			     : c == NL + 1 ? (float)i * 1e-43f /* subnormal: 1 / scale overflows */
			               : 0x1.818188p-8f; /* x / scale is 1.5, x * (1 / scale) below */
		if (c == NL)
			x[0] = 0, x[255] = 254.5f; /* range [0, 254.5 + 0.5]: scale 1 */
		if (c == NL + 2)
			x[0] = 0, x[255] = 0x1.000004p+0f; /* scale: that over 255 */
		struct rt_tensor in = oc_tensor(BASE_DT_FLOAT, 1, &n, x);
		assert_int_equal(oc_run(&o, &in), 0);
		float lo = 0, hi = 0;
		for (int64_t i = 0; i < n; i++) {
			lo = x[i] < lo ? x[i] : lo;
			hi = x[i] > hi ? x[i] : hi;
		}
		float scale = (hi - lo) / 255.0f, zp = rintf(0.0f - lo / scale);
		zp = zp < 0 ? 0 : zp > 255 ? 255 : zp;
		assert_true(*(const float *)o.out[1].data == scale);
		assert_int_equal(*(const uint8_t *)o.out[2].data, (uint8_t)zp);
		const uint8_t *q = o.out[0].data;
		for (int64_t i = 0; i < n; i++) {
			float r = rintf(x[i] / scale) + zp;
			uint8_t want = (uint8_t)(r < 0 ? 0 : r > 255 ? 255 : r);
			if (q[i] != want)
				fail_msg("length %lld, cell %lld (%.9g): %d, not %d", (long long)n,
				         (long long)i, x[i], q[i], want);
		}
	}
	oc_free(&o);
}

/* DequantizeLinear of 8-bit cells with one scale and zero point (the
 * vector path) against its formula. */
static void test_dequantize_vector(void **state)
{
	(void)state;
	for (int sgn = 0; sgn < 2; sgn++) {
		int dt = sgn ? BASE_DT_INT8 : BASE_DT_UINT8;
		const int T[] = { dt, BASE_DT_FLOAT, dt };
		static const int F[] = { BASE_DT_FLOAT };
		struct mb_node *nd;
		struct oc_case o;
		assert_int_equal(oc_load(oc_model(13, "DequantizeLinear", "x,s,z", T, "y", F, &nd), &o), 0);
		uint8_t q[37], z = sgn ? (uint8_t)(int8_t)-3 : 131;
		for (int i = 0; i < 37; i++)
			q[i] = (uint8_t)(i * 53 + 7);
		float sc = 0.0371f;
		int64_t n = 37;
		struct rt_tensor in[3] = { oc_tensor(dt, 1, &n, q), oc_tensor(BASE_DT_FLOAT, 0, NULL, &sc),
		                           oc_tensor(dt, 0, NULL, &z) };
		assert_int_equal(oc_run(&o, in), 0);
		const float *y = o.out[0].data;
		for (int i = 0; i < 37; i++) {
			int32_t v = sgn ? (int8_t)q[i] : q[i], zz = sgn ? (int8_t)z : z;
			assert_true(y[i] == (float)(v - zz) * sc);
		}
		oc_free(&o);
	}
}

static void test_qlinear_bad_operands(void **state)
{
	(void)state;
	struct mb_model *m = mb_new("q", 13);
	mb_opset(m, "strata", 1);
	static const int T[] = { BASE_DT_UINT8, BASE_DT_INT8, BASE_DT_UINT8, BASE_DT_INT8,
	                         BASE_DT_FLOAT, BASE_DT_FLOAT };
	const char *in[] = { "xq", "wq", "xz", "wz", "xs", "ws" };
	for (int i = 0; i < 6; i++)
		mb_input(m, in[i], T[i], -1, NULL, NULL);
	struct mb_node *n = mb_node(m, "QuantLinear", "xq,wq,xz,wz,xs,ws", "y");
	mb_node_domain(n, "strata");
	mb_output(m, "y", BASE_DT_FLOAT, -1, NULL, NULL);
	struct oc_case o;
	assert_int_equal(oc_load(m, &o), STRATA_INVALID_GRAPH);
	oc_assert_msg(&o, "Wq a 2-D 8-bit constant");
	oc_free(&o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_qlinear_exact),
		cmocka_unit_test(test_qlinear_gelu_residual),
		cmocka_unit_test(test_qdq_shared),
		cmocka_unit_test(test_qdq_gelu_residual),
		cmocka_unit_test(test_dynquant_vector),
		cmocka_unit_test(test_dequantize_vector),
		cmocka_unit_test(test_qlinear_bad_operands),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
