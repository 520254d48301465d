/*
 * quant.c: linear quantization: QuantizeLinear, DequantizeLinear,
 * DynamicQuantizeLinear, MatMulInteger and QLinearMatMul.
 *
 * A quantized tensor q stands for the real values (q - zero_point) * scale.
 * QuantizeLinear maps reals to q = saturate(round(x / scale) + zero_point)
 * and DequantizeLinear maps back; scale and zero point are either one value
 * for the whole tensor or (opset 13 on) a 1-D tensor with one value per
 * index along 'axis'.  Rounding is half to even (rint / rintf under the
 * default rounding mode), and every result saturates to the range of the
 * output type.  The arithmetic is done in float (double for double inputs),
 * the precision the reference computes in, so halfway cases round the same.
 *
 * The two integer products accumulate (a - a_zero_point) * (b - b_zero_point)
 * exactly in int64 over numpy-style batched matrix products: 1-D operands are
 * promoted to a row (a) or a column (b) and the promoted dimension is dropped
 * from the result; leading batch dimensions broadcast.  MatMulInteger stores
 * the sums as int32; QLinearMatMul rescales them by a_scale * b_scale /
 * y_scale, rounds and saturates into y's type.
 *
 * Both products run on the int8 GEMM (qgemm.c: AMX, VNNI or AVX2 kernels) when
 * its int32 sums are exact: always for MatMulInteger, whose output is int32
 * and wraps anyway, and for QLinearMatMul while K * 255 * 255 fits in int32
 * (K <= 33025); past that, and for 16-bit types, the int64 loops here run.
 * A constant B (a weight) is packed for the kernels once, at load.
 *
 * Every scale, zero point and shape comes from the model or the caller, so
 * their counts are checked against the data before any cell is read.
 */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "../kernel.h"

/* ---- cells --------------------------------------------------------------------- */

/* Cell i of a numeric tensor as a double (the types this family reads). */
static double get_num(const struct rt_tensor *t, int64_t i)
{
	switch (t->dtype) {
	case BASE_DT_FLOAT: return ((const float *)t->data)[i];
	case BASE_DT_DOUBLE: return ((const double *)t->data)[i];
	case BASE_DT_FLOAT16: return base_f16_to_f32(((const uint16_t *)t->data)[i]);
	case BASE_DT_BFLOAT16: return base_bf16_to_f32(((const uint16_t *)t->data)[i]);
	case BASE_DT_UINT8: return ((const uint8_t *)t->data)[i];
	case BASE_DT_INT8: return ((const int8_t *)t->data)[i];
	case BASE_DT_UINT16: return ((const uint16_t *)t->data)[i];
	case BASE_DT_INT16: return ((const int16_t *)t->data)[i];
	case BASE_DT_INT32: return ((const int32_t *)t->data)[i];
	default: return 0;
	}
}

/* Cell i of an integer tensor (the quantized types). */
static int64_t get_int(const struct rt_tensor *t, int64_t i)
{
	switch (t->dtype) {
	case BASE_DT_UINT8: return ((const uint8_t *)t->data)[i];
	case BASE_DT_INT8: return ((const int8_t *)t->data)[i];
	case BASE_DT_UINT16: return ((const uint16_t *)t->data)[i];
	case BASE_DT_INT16: return ((const int16_t *)t->data)[i];
	case BASE_DT_INT32: return ((const int32_t *)t->data)[i];
	default: return 0;
	}
}

static void range_of(int dt, double *lo, double *hi)
{
	switch (dt) {
	case BASE_DT_INT8: *lo = -128; *hi = 127; break;
	case BASE_DT_UINT16: *lo = 0; *hi = 65535; break;
	case BASE_DT_INT16: *lo = -32768; *hi = 32767; break;
	case BASE_DT_INT32: *lo = -2147483648.0; *hi = 2147483647.0; break;
	default: *lo = 0; *hi = 255; break;
	}
}

/* Store v, already rounded, into cell i of a quantized tensor, saturating.
 * NaN has no quantized value; it becomes 0 (the value numpy's cast gives),
 * which every quantized type holds. */
static void put_sat(struct rt_tensor *t, int64_t i, double v)
{
	double lo, hi;
	range_of(t->dtype, &lo, &hi);
	if (isnan(v))
		v = 0;
	v = v < lo ? lo : v > hi ? hi : v;
	switch (t->dtype) {
	case BASE_DT_UINT8: ((uint8_t *)t->data)[i] = (uint8_t)v; break;
	case BASE_DT_INT8: ((int8_t *)t->data)[i] = (int8_t)v; break;
	case BASE_DT_UINT16: ((uint16_t *)t->data)[i] = (uint16_t)v; break;
	case BASE_DT_INT16: ((int16_t *)t->data)[i] = (int16_t)v; break;
	case BASE_DT_INT32: ((int32_t *)t->data)[i] = (int32_t)v; break;
	default: break;
	}
}

static void put_real(struct rt_tensor *t, int64_t i, double v)
{
	switch (t->dtype) {
	case BASE_DT_FLOAT: ((float *)t->data)[i] = (float)v; break;
	case BASE_DT_DOUBLE: ((double *)t->data)[i] = v; break;
	case BASE_DT_FLOAT16: ((uint16_t *)t->data)[i] = base_f32_to_f16((float)v); break;
	case BASE_DT_BFLOAT16: ((uint16_t *)t->data)[i] = base_f32_to_bf16((float)v); break;
	default: break;
	}
}

static int is_real(int dt)
{
	return dt == BASE_DT_FLOAT || dt == BASE_DT_DOUBLE || dt == BASE_DT_FLOAT16 ||
	       dt == BASE_DT_BFLOAT16;
}

static int is_quant(int dt, int opset)
{
	if (dt == BASE_DT_UINT8 || dt == BASE_DT_INT8)
		return 1;
	/* 16-bit quantized types arrive with opset 21. */
	return opset >= 21 && (dt == BASE_DT_UINT16 || dt == BASE_DT_INT16);
}

static int64_t tcount(const struct rt_tensor *t)
{
	return runtime_tensor_count(t);
}

static int has_input(const struct rt_node *n, int i)
{
	return i < n->nin && n->in[i] >= 0;
}

static int has_output(const struct rt_node *n, int i)
{
	return i < n->nout && n->out[i] >= 0;
}

/* ---- per-tensor or per-axis parameters ------------------------------------------ */

/* How a scale (and its zero point) maps onto the cells of x: cell i uses
 * parameter (i / inner) % dim when per-axis, parameter 0 otherwise. */
struct qaxis {
	int per_axis;
	int64_t inner, dim;
};

static int64_t qidx(const struct qaxis *q, int64_t i)
{
	return q->per_axis ? (i / q->inner) % q->dim : 0;
}

/* Work out the mapping for x, scale and the optional zero point zp. */
static int qaxis_setup(struct rt_exec *x, const struct rt_node *n, const struct rt_tensor *xt,
                       const struct rt_tensor *scale, const struct rt_tensor *zp,
                       struct qaxis *q)
{
	int64_t sc = tcount(scale);
	memset(q, 0, sizeof *q);
	if (scale->rank > 1)
		return rt_fail(x, n, STRATA_NOT_IMPLEMENTED,
		               "%s (opset %d): scale of rank %d (blocked quantization)", n->op,
		               n->opset, scale->rank);
	if (zp && (zp->rank != scale->rank || tcount(zp) != sc))
		return rt_fail(x, n, STRATA_RUNTIME, "zero point has %lld cells, scale %lld",
		               (long long)tcount(zp), (long long)sc);
	if (sc == 1)
		return 0;
	if (n->opset < 13)
		return rt_fail(x, n, STRATA_RUNTIME,
		               "scale has %lld cells: opset %d takes one per tensor", (long long)sc,
		               n->opset);
	int64_t a0 = rt_attr_int(n, "axis", 1);
	int axis = rt_axis(a0, xt->rank);
	if (axis < 0)
		return rt_fail(x, n, STRATA_RUNTIME, "axis %lld out of range for rank %d",
		               (long long)a0, xt->rank);
	if (xt->dims[axis] != sc)
		return rt_fail(x, n, STRATA_RUNTIME,
		               "scale has %lld cells, axis %d of the input has %lld", (long long)sc,
		               axis, (long long)xt->dims[axis]);
	q->per_axis = 1;
	q->dim = sc;
	q->inner = 1;
	for (int i = axis + 1; i < xt->rank; i++)
		q->inner *= xt->dims[i];
	if (q->inner == 0)
		q->per_axis = 0; /* no cells to map */
	return 0;
}

/* Common load-time checks of the quantize/dequantize pair. */
static int check_axis_attrs(struct rt_node *n, struct strata_error *err)
{
	const struct rt_attr *a = rt_attr_find(n, "axis");
	if (a && a->type != RT_ATTR_INT)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "attribute 'axis' is not an int");
	if (rt_attr_int(n, "block_size", 0) != 0)
		return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED,
		                   "%s (opset %d): blocked quantization (block_size)", n->op, n->opset);
	return 0;
}

/* ---- QuantizeLinear ------------------------------------------------------------- */

static int run_quantize(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *in = rt_input(x, n, 0), *scale = rt_input(x, n, 1);
	const struct rt_tensor *zp = rt_input(x, n, 2);
	struct rt_tensor *y;
	struct qaxis q;
	int rc;
	if (!in || !scale)
		return rt_fail(x, n, STRATA_RUNTIME, "missing input");
	if ((rc = qaxis_setup(x, n, in, scale, zp, &q)) != 0)
		return rc;
	int dt = (int)(intptr_t)n->state;
	if ((rc = rt_output(x, n, 0, dt, in->rank, in->dims, &y)) != 0)
		return rc;
	int64_t count = tcount(in);
	int wide = in->dtype == BASE_DT_DOUBLE || scale->dtype == BASE_DT_DOUBLE;
	for (int64_t i = 0; i < count; i++) {
		int64_t k = qidx(&q, i);
		double z = zp ? (double)get_int(zp, k) : 0, r;
		/* Divide in the precision the reference uses, so a quotient
		 * that lands on .5 there lands on .5 here. */
		if (wide)
			r = rint(get_num(in, i) / get_num(scale, k));
		else
			r = rintf((float)get_num(in, i) / (float)get_num(scale, k));
		put_sat(y, i, r + z);
	}
	return 0;
}

static int init_quantize(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	int rc;
	if (n->nin < 2 || n->nin > 3 || !has_input(n, 0) || !has_input(n, 1) || !has_output(n, 0))
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "takes x, y_scale, [y_zero_point]");
	if ((rc = check_axis_attrs(n, err)) != 0)
		return rc;
	int xdt = rt_graph_dtype(g, n->in[0]), sdt = rt_graph_dtype(g, n->in[1]);
	int zdt = has_input(n, 2) ? rt_graph_dtype(g, n->in[2]) : BASE_DT_UNDEFINED;
	int64_t odt = rt_attr_int(n, "output_dtype", 0);
	if (!(is_real(xdt) || xdt == BASE_DT_INT32) || !is_real(sdt))
		return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED,
		                   "QuantizeLinear (opset %d): x of %s with scale of %s", n->opset,
		                   base_dtype_name(xdt), base_dtype_name(sdt));
	if (odt < 0 || odt >= BASE_DT_COUNT)
		return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED,
		                   "QuantizeLinear (opset %d): output_dtype %lld", n->opset,
		                   (long long)odt);
	if (odt != 0 && zdt != BASE_DT_UNDEFINED && odt != zdt)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH,
		                   "output_dtype %s differs from the zero point's %s",
		                   base_dtype_name((int)odt), base_dtype_name(zdt));
	int dt = zdt != BASE_DT_UNDEFINED ? zdt : odt ? (int)odt : BASE_DT_UINT8;
	if (!is_quant(dt, n->opset))
		return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED,
		                   "QuantizeLinear (opset %d): output type %s", n->opset,
		                   base_dtype_name(dt));
	/* 'saturate' (opset 19) only concerns the float8 outputs, which have no
	 * kernel here: the integer types always saturate. */
	rt_graph_set_dtype(g, n->out[0], dt);
	n->state = (void *)(intptr_t)dt;
	n->run = run_quantize;
	return 0;
}

/* ---- DequantizeLinear ----------------------------------------------------------- */

/* y[i] = (float)(q[i] - zp) * scale for 8-bit q, one scale and zero point
 * (a dequantized embedding row): the scalar formula's operations, 8 cells
 * at a time (the conversions are exact). */
static void dequantize_8(const void *qv, int is_signed, int64_t n, int32_t zp, float scale,
                         float *y)
{
	const uint8_t *q = qv;
	const __m256i z = _mm256_set1_epi32(zp);
	const __m256 s = _mm256_set1_ps(scale);
	int64_t i = 0;
	for (; i + 8 <= n; i += 8) {
		__m128i b = _mm_loadl_epi64((const __m128i *)(q + i));
		__m256i w = is_signed ? _mm256_cvtepi8_epi32(b) : _mm256_cvtepu8_epi32(b);
		_mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(w, z)), s));
	}
	for (; i < n; i++)
		y[i] = (float)((is_signed ? (int32_t)(int8_t)q[i] : (int32_t)q[i]) - zp) * scale;
}

static int run_dequantize(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *in = rt_input(x, n, 0), *scale = rt_input(x, n, 1);
	const struct rt_tensor *zp = rt_input(x, n, 2);
	struct rt_tensor *y;
	struct qaxis q;
	int rc;
	if (!in || !scale)
		return rt_fail(x, n, STRATA_RUNTIME, "missing input");
	if ((rc = qaxis_setup(x, n, in, scale, zp, &q)) != 0)
		return rc;
	if ((rc = rt_output(x, n, 0, scale->dtype, in->rank, in->dims, &y)) != 0)
		return rc;
	int64_t count = tcount(in);
	int wide = scale->dtype == BASE_DT_DOUBLE;
	if (!q.per_axis && scale->dtype == BASE_DT_FLOAT &&
	    (in->dtype == BASE_DT_UINT8 || in->dtype == BASE_DT_INT8)) {
		dequantize_8(in->data, in->dtype == BASE_DT_INT8, count, zp ? (int32_t)get_int(zp, 0) : 0,
		             *(const float *)scale->data, y->data);
		return 0;
	}
	for (int64_t i = 0; i < count; i++) {
		int64_t k = qidx(&q, i);
		int64_t z = zp ? get_int(zp, k) : 0;
		if (wide)
			put_real(y, i, (double)(get_int(in, i) - z) * get_num(scale, k));
		else
			put_real(y, i, (float)(get_int(in, i) - z) * (float)get_num(scale, k));
	}
	return 0;
}

static int init_dequantize(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	int rc;
	if (n->nin < 2 || n->nin > 3 || !has_input(n, 0) || !has_input(n, 1) || !has_output(n, 0))
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "takes x, x_scale, [x_zero_point]");
	if ((rc = check_axis_attrs(n, err)) != 0)
		return rc;
	int xdt = rt_graph_dtype(g, n->in[0]), sdt = rt_graph_dtype(g, n->in[1]);
	int zdt = has_input(n, 2) ? rt_graph_dtype(g, n->in[2]) : xdt;
	if (!(is_quant(xdt, n->opset) || xdt == BASE_DT_INT32) || !is_real(sdt))
		return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED,
		                   "DequantizeLinear (opset %d): x of %s with scale of %s",
		                   n->opset, base_dtype_name(xdt), base_dtype_name(sdt));
	if (zdt != xdt)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH,
		                   "zero point of %s for x of %s", base_dtype_name(zdt),
		                   base_dtype_name(xdt));
	rt_graph_set_dtype(g, n->out[0], sdt);
	n->run = run_dequantize;
	return 0;
}

/* ---- DynamicQuantizeLinear --------------------------------------------------------- */

/* The range of v[0..n) widened to include 0, in *lo and *hi; -1 when a cell
 * is NaN (*lo holds its index then).  Sixteen lanes at a time on AVX-512
 * (quant_avx512.c), eight after: min and max are exact, so the order does
 * not matter. */
static int range_with_zero(const float *v, int64_t n, float *lo, float *hi)
{
	float a0 = 0, b0 = 0;
	int bad0 = 0;
	int64_t i = rt_cpu_isa() == RT_ISA_AVX512 ? rt_dq_range_avx512(v, n, &a0, &b0, &bad0) : 0;
	__m256 vlo = _mm256_set1_ps(a0), vhi = _mm256_set1_ps(b0), bad = _mm256_setzero_ps();
	/* four chains of min and max, 32 cells a step: one chain waits on the
	 * latency of each min and max */
	__m256 cl[4], ch[4], cu[4];
	for (int k = 0; k < 4; k++)
		cl[k] = ch[k] = cu[k] = _mm256_setzero_ps();
	for (; i + 32 <= n; i += 32)
		for (int k = 0; k < 4; k++) {
			__m256 x = _mm256_loadu_ps(v + i + 8 * k);
			cu[k] = _mm256_or_ps(cu[k], _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
			cl[k] = _mm256_min_ps(cl[k], x);
			ch[k] = _mm256_max_ps(ch[k], x);
		}
	for (int k = 0; k < 4; k++) {
		bad = _mm256_or_ps(bad, cu[k]);
		vlo = _mm256_min_ps(vlo, cl[k]);
		vhi = _mm256_max_ps(vhi, ch[k]);
	}
	for (; i + 8 <= n; i += 8) {
		__m256 x = _mm256_loadu_ps(v + i);
		bad = _mm256_or_ps(bad, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
		vlo = _mm256_min_ps(vlo, x);
		vhi = _mm256_max_ps(vhi, x);
	}
	float l[8], h[8];
	_mm256_storeu_ps(l, vlo);
	_mm256_storeu_ps(h, vhi);
	float a = 0, b = 0;
	for (int k = 0; k < 8; k++) {
		a = l[k] < a ? l[k] : a;
		b = h[k] > b ? h[k] : b;
	}
	int has_nan = bad0 || _mm256_movemask_ps(bad) != 0;
	for (int64_t k = has_nan ? 0 : i; k < n; k++) {
		if (isnan(v[k])) {
			*lo = (float)k;
			return -1;
		}
		a = v[k] < a ? v[k] : a;
		b = v[k] > b ? v[k] : b;
	}
	*lo = a;
	*hi = b;
	return 0;
}

/* q[i] = saturate(rintf(v[i] / scale) + zp) to [0, 255], scale > 0, 32
 * cells at a time.  A division per cell would cost more than the rest of
 * the pass, so the quotient is taken as t = v * (1 / scale), which differs
 * from the rounded quotient by under 3 units in its last place; both round
 * to the same integer unless one lies within that distance of a half.
 * Every quotient here is at most 255 in magnitude (the range includes v),
 * where 3 units in the last place are under 5e-5: when any of the 32 cells
 * has t within 1e-4 of a half (|t - round(t)| > 0.5 - 1e-4) they are
 * divided instead, exactly as the scalar formula does, and so is every
 * cell when 1 / scale is too large to multiply safely (scale near the
 * bottom of the float range).  The clamp to [0, 255] is the saturation of
 * the packs: every rounded value plus zp lies in [-255, 510], inside int16. */
static void quantize_u8(const float *v, int64_t n, float scale, float zp, uint8_t *q)
{
	const __m256 s = _mm256_set1_ps(scale), inv = _mm256_set1_ps(1.0f / scale);
	const __m256 z = _mm256_set1_ps(zp), near = _mm256_set1_ps(0.5f - 1e-4f);
	const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
	const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
	const int rnd = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
	int divide = !(1.0f / scale < 1e30f);
	int64_t i = rt_cpu_isa() == RT_ISA_AVX512 ? rt_dq_quantize_avx512(v, n, scale, zp, q) : 0;
	for (; i + 32 <= n; i += 32) {
		__m256 r[4], close = _mm256_setzero_ps();
		for (int k = 0; k < 4; k++) {
			__m256 t = _mm256_mul_ps(_mm256_loadu_ps(v + i + 8 * k), inv);
			r[k] = _mm256_round_ps(t, rnd);
			__m256 d = _mm256_and_ps(_mm256_sub_ps(t, r[k]), absmask);
			close = _mm256_or_ps(close, _mm256_cmp_ps(d, near, _CMP_GT_OQ));
		}
		if (divide || !_mm256_testz_ps(close, close))
			for (int k = 0; k < 4; k++)
				r[k] = _mm256_round_ps(_mm256_div_ps(_mm256_loadu_ps(v + i + 8 * k), s), rnd);
		__m256i w[4];
		for (int k = 0; k < 4; k++)
			w[k] = _mm256_cvtps_epi32(_mm256_add_ps(r[k], z));
		/* the packs interleave 128-bit lanes; the permute restores order */
		__m256i b = _mm256_packus_epi16(_mm256_packs_epi32(w[0], w[1]),
		                                _mm256_packs_epi32(w[2], w[3]));
		_mm256_storeu_si256((__m256i *)(q + i), _mm256_permutevar8x32_epi32(b, order));
	}
	for (; i < n; i++) {
		float r = rintf(v[i] / scale) + zp;
		q[i] = (uint8_t)(r < 0 ? 0 : r > 255 ? 255 : r);
	}
}

static int run_dynquant(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *in = rt_input(x, n, 0);
	struct rt_tensor *y, *ys, *yz;
	int rc;
	if (!in)
		return rt_fail(x, n, STRATA_RUNTIME, "missing input");
	const float *v = in->data;
	int64_t count = tcount(in);
	/* The range always includes 0, so that 0 is exactly representable. */
	float lo, hi;
	if (range_with_zero(v, count, &lo, &hi) != 0)
		return rt_fail(x, n, STRATA_RUNTIME, "cell %lld is NaN", (long long)lo);
	if (isinf(lo) || isinf(hi))
		return rt_fail(x, n, STRATA_RUNTIME, "the input is not finite");
	float scale = (hi - lo) / 255.0f;
	float zpf = 0;
	if (scale > 0) {
		zpf = rintf(0.0f - lo / scale);
		zpf = zpf < 0 ? 0 : zpf > 255 ? 255 : zpf;
	}
	if ((rc = rt_output(x, n, 0, BASE_DT_UINT8, in->rank, in->dims, &y)) != 0)
		return rc;
	/* scale 0 means every cell is 0, which quantizes to the zero point. */
	if (scale > 0)
		quantize_u8(v, count, scale, zpf, y->data);
	else
		memset(y->data, (int)zpf, (size_t)count);
	if (has_output(n, 1)) {
		if ((rc = rt_output(x, n, 1, BASE_DT_FLOAT, 0, NULL, &ys)) != 0)
			return rc;
		*(float *)ys->data = scale;
	}
	if (has_output(n, 2)) {
		if ((rc = rt_output(x, n, 2, BASE_DT_UINT8, 0, NULL, &yz)) != 0)
			return rc;
		*(uint8_t *)yz->data = (uint8_t)zpf;
	}
	return 0;
}

static int init_dynquant(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	if (n->nin != 1 || !has_input(n, 0) || !has_output(n, 0))
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "takes one input x");
	int xdt = rt_graph_dtype(g, n->in[0]);
	if (xdt != BASE_DT_FLOAT)
		return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED,
		                   "DynamicQuantizeLinear (opset %d): x of %s", n->opset,
		                   base_dtype_name(xdt));
	rt_graph_set_dtype(g, n->out[0], BASE_DT_UINT8);
	if (has_output(n, 1))
		rt_graph_set_dtype(g, n->out[1], BASE_DT_FLOAT);
	if (has_output(n, 2))
		rt_graph_set_dtype(g, n->out[2], BASE_DT_UINT8);
	n->run = run_dynquant;
	return 0;
}

/* ---- batched integer matrix products ------------------------------------------------- */

/* The geometry of a (possibly batched, possibly 1-D) product a x b. */
struct mm {
	int64_t M, N, K;
	int64_t nbatch;
	int64_t *aoff, *boff; /* per output batch: first cell of a's and b's matrix */
	int rank;             /* of the result */
	int64_t dims[RT_MAX_RANK];
};

static int mm_setup(struct rt_exec *x, const struct rt_node *n, const struct rt_tensor *a,
                    const struct rt_tensor *b, struct mm *m)
{
	if (a->rank < 1 || b->rank < 1)
		return rt_fail(x, n, STRATA_RUNTIME, "operands must have rank >= 1 (got %d and %d)",
		               a->rank, b->rank);
	int a1 = a->rank == 1, b1 = b->rank == 1;
	m->M = a1 ? 1 : a->dims[a->rank - 2];
	m->K = a->dims[a->rank - 1];
	int64_t kb = b1 ? b->dims[0] : b->dims[b->rank - 2];
	m->N = b1 ? 1 : b->dims[b->rank - 1];
	if (kb != m->K)
		return rt_fail(x, n, STRATA_RUNTIME, "inner dimensions differ: %lld and %lld",
		               (long long)m->K, (long long)kb);
	int ra = a1 ? 0 : a->rank - 2, rb = b1 ? 0 : b->rank - 2;
	int rbatch = ra > rb ? ra : rb;
	int64_t bd[RT_MAX_RANK], ast[RT_MAX_RANK], bst[RT_MAX_RANK];
	int64_t as = m->M * m->K, bs = m->K * m->N;
	/* Broadcast the batch dimensions, aligned on the right; a dimension of
	 * 1 repeats (stride 0). */
	for (int i = rbatch - 1; i >= 0; i--) {
		int ia = i - (rbatch - ra), ib = i - (rbatch - rb);
		int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
		if (da != db && da != 1 && db != 1)
			return rt_fail(x, n, STRATA_RUNTIME,
			               "batch dimensions %lld and %lld do not broadcast",
			               (long long)da, (long long)db);
		bd[i] = da == 1 ? db : da;
		ast[i] = da == 1 ? 0 : as;
		bst[i] = db == 1 ? 0 : bs;
		as *= da;
		bs *= db;
	}
	m->rank = 0;
	m->nbatch = 1;
	for (int i = 0; i < rbatch; i++) {
		m->dims[m->rank++] = bd[i];
		m->nbatch *= bd[i];
	}
	if (rbatch + 2 > RT_MAX_RANK)
		return rt_fail(x, n, STRATA_RUNTIME, "result rank past %d", RT_MAX_RANK);
	if (!a1)
		m->dims[m->rank++] = m->M;
	if (!b1)
		m->dims[m->rank++] = m->N;
	m->aoff = m->boff = NULL;
	if (m->nbatch == 0 || m->M == 0 || m->N == 0)
		return 0;
	m->aoff = rt_scratch(x, (size_t)m->nbatch * sizeof *m->aoff);
	m->boff = rt_scratch(x, (size_t)m->nbatch * sizeof *m->boff);
	if (!m->aoff || !m->boff)
		return rt_nomem(x, n, "kernel scratch");
	int64_t idx[RT_MAX_RANK] = {0};
	for (int64_t t = 0; t < m->nbatch; t++) {
		int64_t ao = 0, bo = 0;
		for (int i = 0; i < rbatch; i++) {
			ao += idx[i] * ast[i];
			bo += idx[i] * bst[i];
		}
		m->aoff[t] = ao;
		m->boff[t] = bo;
		for (int i = rbatch - 1; i >= 0; i--) {
			if (++idx[i] < bd[i])
				break;
			idx[i] = 0;
		}
	}
	return 0;
}

/* A zero point (or scale) that is one value or one per row/column: the
 * index step per row/column, 0 or 1.  what names it in messages. */
static int per_vec(struct rt_exec *x, const struct rt_node *n, const struct rt_tensor *p,
                   int64_t len, const char *what, int *step)
{
	*step = 0;
	if (!p)
		return 0;
	int64_t c = tcount(p);
	if (c == 1)
		return 0;
	if (p->rank == 1 && c == len) {
		*step = 1;
		return 0;
	}
	return rt_fail(x, n, STRATA_RUNTIME, "%s has %lld cells: expected 1 or %lld", what,
	               (long long)c, (long long)len);
}

/* acc[M*N] = (a - azp) x (b - bzp) for batch t. */
static void mm_acc(const struct mm *m, int64_t t, const struct rt_tensor *a,
                   const struct rt_tensor *b, const struct rt_tensor *azp, int astep,
                   const struct rt_tensor *bzp, int bstep, int64_t *acc, int64_t *brow)
{
	int64_t M = m->M, N = m->N, K = m->K;
	for (int64_t i = 0; i < M * N; i++)
		acc[i] = 0;
	for (int64_t k = 0; k < K; k++) {
		for (int64_t j = 0; j < N; j++)
			brow[j] = get_int(b, m->boff[t] + k * N + j) -
			          (bzp ? get_int(bzp, bstep ? j : 0) : 0);
		for (int64_t i = 0; i < M; i++) {
			int64_t av = get_int(a, m->aoff[t] + i * K + k) -
			             (azp ? get_int(azp, astep ? i : 0) : 0);
			if (av == 0)
				continue;
			int64_t *row = acc + i * N;
			for (int64_t j = 0; j < N; j++)
				row[j] += av * brow[j];
		}
	}
}

/* ---- the int8 GEMM path ------------------------------------------------------------ */

/* A MatMulInteger's or QLinearMatMul's constant B, packed at init. */
struct qmm_state {
	struct rt_qpacked_b pb;
	struct rt_packed_b rec; /* the node's record of pb (rt_node_qpack_b) */
	int packed;
};

/* Largest K whose sums of (a - za)(b - zb), each factor at most 255 in
 * magnitude, always fit in int32. */
enum { QMM_EXACT_K = 33025 };

static int qgemm_types(const struct rt_tensor *a, const struct rt_tensor *b)
{
	return (a->dtype == BASE_DT_UINT8 || a->dtype == BASE_DT_INT8) &&
	       (b->dtype == BASE_DT_UINT8 || b->dtype == BASE_DT_INT8);
}

/* Sums of every batch of a x b through the int8 GEMM: int32 into out (one
 * M x N matrix per batch).  B comes from the node's packing when it has one,
 * else it is packed into scratch, once per distinct matrix of b. */
static int mm_qgemm(struct rt_exec *x, const struct rt_node *n, const struct mm *m,
                    const struct rt_tensor *a, const struct rt_tensor *b,
                    const struct rt_tensor *azp, int astep, const struct rt_tensor *bzp,
                    int bstep, int32_t *out)
{
	const struct qmm_state *st = n->state;
	struct rt_qpacked_b local;
	const struct rt_qpacked_b *pb = st && st->packed ? &st->pb : NULL;
	void *bmem = NULL;
	if (!pb) {
		bmem = rt_scratch(x, rt_qgemm_pack_bytes(m->K, m->N));
		if (!bmem)
			return rt_nomem(x, n, "kernel scratch");
	}
	void *scratch = rt_scratch(x, rt_qgemm_scratch_bytes(m->M, m->K, m->N));
	if (!scratch)
		return rt_nomem(x, n, "kernel scratch");
	int64_t packed_at = -1;
	for (int64_t t = 0; t < m->nbatch; t++) {
		if (bmem && m->boff[t] != packed_at) {
			rt_qgemm_pack_into(b->dtype, m->K, m->N, (const uint8_t *)b->data + m->boff[t],
			                   m->N, bmem, &local);
			pb = &local;
			packed_at = m->boff[t];
		}
		struct rt_qgemm_args g = {
			.adt = a->dtype, .M = m->M, .A = (const uint8_t *)a->data + m->aoff[t],
			.lda = m->K, .za = azp ? azp->data : NULL, .zb = bzp ? bzp->data : NULL,
			.zastep = astep, .zbstep = bstep, .ci = out + t * m->M * m->N, .ldc = m->N,
		};
		rt_qgemm(&g, pb, scratch);
	}
	return 0;
}

/* Pack input 1 of n at init when it is a 2-D uint8 or int8 constant. */
static int qmm_init_state(struct rt_node *n, struct rt_graph *g, int bin,
                          struct strata_error *err)
{
	const struct rt_tensor *b = rt_graph_const(g, n->in[bin]);
	n->state = NULL;
	if (!b || b->rank != 2 || (b->dtype != BASE_DT_UINT8 && b->dtype != BASE_DT_INT8) ||
	    b->dims[0] <= 0 || b->dims[1] <= 0)
		return 0;
	/* The packing is all it reads, but for QLinearMatMul's sums too long
	 * for int32, which go through the reference loop; so the cells may
	 * have stayed out of a compiled context. */
	int only_packed = bin == 1 || b->dims[0] <= QMM_EXACT_K;
	if (!b->data && !(n->pre && only_packed))
		return 0;
	struct qmm_state *st = base_calloc(1, sizeof *st);
	if (!st)
		return rt_node_nomem(n, err, "kernel state");
	int rc = rt_node_qpack_b(n, b->dtype, b->dims[0], b->dims[1], b->data, b->dims[1], &st->pb,
	                         &st->rec, err);
	if (rc) {
		base_free(st, sizeof *st);
		return rc;
	}
	if (only_packed)
		rt_graph_release_const(g, n->in[bin]);
	st->packed = 1;
	n->state = st;
	return 0;
}

static void fini_qmm(struct rt_node *n)
{
	struct qmm_state *st = n->state;
	if (st) {
		rt_qpacked_b_free(&st->pb);
		base_free(st, sizeof *st);
	}
	n->state = NULL;
}

/* Scratch for one batch's sums and one row of b. */
static int mm_scratch(struct rt_exec *x, const struct rt_node *n, const struct mm *m,
                      int64_t **acc, int64_t **brow)
{
	*acc = rt_scratch(x, (size_t)(m->M * m->N) * sizeof **acc);
	*brow = rt_scratch(x, (size_t)m->N * sizeof **brow);
	if (!*acc || !*brow)
		return rt_nomem(x, n, "kernel scratch");
	return 0;
}

static int run_matmulinteger(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *a = rt_input(x, n, 0), *b = rt_input(x, n, 1);
	const struct rt_tensor *azp = rt_input(x, n, 2), *bzp = rt_input(x, n, 3);
	struct rt_tensor *y;
	struct mm m;
	int rc, astep, bstep;
	if (!a || !b)
		return rt_fail(x, n, STRATA_RUNTIME, "missing input");
	if ((rc = mm_setup(x, n, a, b, &m)) != 0)
		return rc;
	if ((rc = per_vec(x, n, azp, m.M, "a_zero_point", &astep)) != 0 ||
	    (rc = per_vec(x, n, bzp, m.N, "b_zero_point", &bstep)) != 0)
		return rc;
	if ((rc = rt_output(x, n, 0, BASE_DT_INT32, m.rank, m.dims, &y)) != 0)
		return rc;
	if (!m.aoff)
		return 0;
	if (qgemm_types(a, b))
		return mm_qgemm(x, n, &m, a, b, azp, astep, bzp, bstep, y->data);
	int64_t *acc, *brow;
	if ((rc = mm_scratch(x, n, &m, &acc, &brow)) != 0)
		return rc;
	int32_t *out = y->data;
	for (int64_t t = 0; t < m.nbatch; t++) {
		mm_acc(&m, t, a, b, azp, astep, bzp, bstep, acc, brow);
		/* int32 output wraps like the accumulators of other runtimes. */
		for (int64_t i = 0; i < m.M * m.N; i++)
			out[t * m.M * m.N + i] = (int32_t)(uint32_t)(uint64_t)acc[i];
	}
	return 0;
}

static int init_matmulinteger(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	if (n->nin < 2 || n->nin > 4 || !has_input(n, 0) || !has_input(n, 1) || !has_output(n, 0))
		return rt_node_err(n, err, STRATA_INVALID_GRAPH,
		                   "takes A, B, [a_zero_point], [b_zero_point]");
	int adt = rt_graph_dtype(g, n->in[0]), bdt = rt_graph_dtype(g, n->in[1]);
	if (!is_quant(adt, 10) || !is_quant(bdt, 10))
		return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED,
		                   "MatMulInteger (opset %d): A of %s, B of %s", n->opset,
		                   base_dtype_name(adt), base_dtype_name(bdt));
	if ((has_input(n, 2) && rt_graph_dtype(g, n->in[2]) != adt) ||
	    (has_input(n, 3) && rt_graph_dtype(g, n->in[3]) != bdt))
		return rt_node_err(n, err, STRATA_INVALID_GRAPH,
		                   "a zero point's type differs from its operand's");
	rt_graph_set_dtype(g, n->out[0], BASE_DT_INT32);
	n->run = run_matmulinteger;
	return qmm_init_state(n, g, 1, err);
}

/* ---- QLinearMatMul --------------------------------------------------------------------- */

static int run_qlinearmatmul(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *t[8];
	for (int i = 0; i < 8; i++) {
		t[i] = rt_input(x, n, i);
		if (!t[i])
			return rt_fail(x, n, STRATA_RUNTIME, "input %d is missing", i);
	}
	const struct rt_tensor *a = t[0], *as = t[1], *azp = t[2];
	const struct rt_tensor *b = t[3], *bs = t[4], *bzp = t[5], *ys = t[6], *yzp = t[7];
	struct rt_tensor *y;
	struct mm m;
	int rc, astep, bstep, asst, bsst, ysst, yzst;
	if ((rc = mm_setup(x, n, a, b, &m)) != 0)
		return rc;
	if ((rc = per_vec(x, n, azp, m.M, "a_zero_point", &astep)) != 0 ||
	    (rc = per_vec(x, n, as, m.M, "a_scale", &asst)) != 0 ||
	    (rc = per_vec(x, n, bzp, m.N, "b_zero_point", &bstep)) != 0 ||
	    (rc = per_vec(x, n, bs, m.N, "b_scale", &bsst)) != 0 ||
	    (rc = per_vec(x, n, ys, m.N, "y_scale", &ysst)) != 0 ||
	    (rc = per_vec(x, n, yzp, m.N, "y_zero_point", &yzst)) != 0)
		return rc;
	if ((rc = rt_output(x, n, 0, yzp->dtype, m.rank, m.dims, &y)) != 0)
		return rc;
	if (!m.aoff)
		return 0;
	int64_t *acc, *brow;
	if ((rc = mm_scratch(x, n, &m, &acc, &brow)) != 0)
		return rc;
	int32_t *sums = NULL;
	if (qgemm_types(a, b) && m.K <= QMM_EXACT_K) {
		sums = rt_scratch(x, (size_t)(m.nbatch * m.M * m.N) * sizeof *sums);
		if (!sums)
			return rt_nomem(x, n, "kernel scratch");
		if ((rc = mm_qgemm(x, n, &m, a, b, azp, astep, bzp, bstep, sums)) != 0)
			return rc;
	}
	for (int64_t tb = 0; tb < m.nbatch; tb++) {
		if (sums) {
			for (int64_t i = 0; i < m.M * m.N; i++)
				acc[i] = sums[tb * m.M * m.N + i];
		} else {
			mm_acc(&m, tb, a, b, azp, astep, bzp, bstep, acc, brow);
		}
		for (int64_t i = 0; i < m.M; i++)
			for (int64_t j = 0; j < m.N; j++) {
				double s = get_num(as, asst ? i : 0) * get_num(bs, bsst ? j : 0) /
				           get_num(ys, ysst ? j : 0);
				double r = rint((double)acc[i * m.N + j] * s) +
				           (double)get_int(yzp, yzst ? j : 0);
				put_sat(y, tb * m.M * m.N + i * m.N + j, r);
			}
	}
	return 0;
}

static int init_qlinearmatmul(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	if (n->nin != 8 || !has_output(n, 0))
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "takes 8 inputs, has %d", n->nin);
	for (int i = 0; i < 8; i++)
		if (!has_input(n, i))
			return rt_node_err(n, err, STRATA_INVALID_GRAPH, "input %d is missing", i);
	int adt = rt_graph_dtype(g, n->in[0]), bdt = rt_graph_dtype(g, n->in[3]);
	int ydt = rt_graph_dtype(g, n->in[7]);
	if (!is_quant(adt, 10) || !is_quant(bdt, 10) || !is_quant(ydt, 10))
		return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED,
		                   "QLinearMatMul (opset %d): a of %s, b of %s, y of %s", n->opset,
		                   base_dtype_name(adt), base_dtype_name(bdt), base_dtype_name(ydt));
	if (rt_graph_dtype(g, n->in[2]) != adt || rt_graph_dtype(g, n->in[5]) != bdt)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH,
		                   "a zero point's type differs from its operand's");
	static const int scales[3] = { 1, 4, 6 };
	for (int i = 0; i < 3; i++) {
		int sdt = rt_graph_dtype(g, n->in[scales[i]]);
		if (!is_real(sdt))
			return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED,
			                   "QLinearMatMul (opset %d): scale of %s", n->opset,
			                   base_dtype_name(sdt));
	}
	rt_graph_set_dtype(g, n->out[0], ydt);
	n->run = run_qlinearmatmul;
	return qmm_init_state(n, g, 3, err);
}

const struct rt_opdef rt_ops_quant[] = {
	{ "", "QuantizeLinear", 10, init_quantize, NULL },
	{ "", "DequantizeLinear", 10, init_dequantize, NULL },
	{ "", "DynamicQuantizeLinear", 11, init_dynquant, NULL },
	{ "", "MatMulInteger", 10, init_matmulinteger, fini_qmm },
	{ "", "QLinearMatMul", 10, init_qlinearmatmul, fini_qmm },
	{ .op = NULL },
};
