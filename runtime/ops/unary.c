/*
 * unary.c: the one-input elementwise operators (activations, math
 * functions, Neg/Abs/Sign, Not, BitwiseNot, IsNaN/IsInf) and Clip.
 *
 * Data flow: init() finds the op's descriptor by name (once, at load),
 * checks the input type, reads the attributes (alpha, beta, gamma, Gelu's
 * approximation, IsInf's directions, Clip's bounds before opset 11) into a
 * small state that fini() frees.  run() allocates the output with the
 * input's shape and calls the type-specialized loop over all cells: the
 * shape never matters, so every kernel is one flat loop.
 *
 * float16 and bfloat16 are widened to float in scratch memory, computed with
 * the float loop and narrowed back (round to nearest even).  Integer Neg and
 * Abs wrap (the most negative value stays itself) instead of overflowing.
 * Math functions come from <tgmath.h>, so one expression per op serves
 * float (expf, ...) and double (exp, ...); Exp, Erf, Tanh and Sigmoid on
 * float use the vectorized forms of vmath.c instead (the activations of
 * exported transformers).
 */
#include <float.h>
#include <string.h>
#include <tgmath.h>

#include "elementwise.h"
#include "vmath.h"

/* -O2 in gcc 12 vectorizes only loops whose trip count is a multiple of the
 * vector width; these loops run over any count and may need a run-time
 * alias check, so they ask for the ordinary cost model. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=dynamic")
#endif

struct uparams {
	float alpha, beta, gamma;
	int flag1, flag2; /* IsInf: detect_positive, detect_negative */
};

typedef void unfn(const void *x, void *y, int64_t n, const struct uparams *p);

#define UN_DEF(OP, DT, T, UT, OT, EXPR)                                                  \
	static void OP##_##DT(const void *px, void *py, int64_t n, const struct uparams *p) \
	{                                                                                \
		const T *xs = px;                                                        \
		OT *ys = py;                                                             \
		(void)p;                                                                 \
		for (int64_t i = 0; i < n; i++) {                                        \
			T x = xs[i];                                                     \
			ys[i] = (OT)(EXPR);                                              \
		}                                                                        \
	}

/* One expression for float and double; T is the cell type inside EXPR. */
#define UN_F(OP, EXPR)                                      \
	UN_DEF(OP, FLOAT, float, float, float, EXPR)        \
	UN_DEF(OP, DOUBLE, double, double, double, EXPR)
#define UN_FB(OP, EXPR)                                     \
	UN_DEF(OP, FLOAT, float, float, uint8_t, EXPR)      \
	UN_DEF(OP, DOUBLE, double, double, uint8_t, EXPR)

#define SIGNED(X)                      \
	X(INT8, int8_t, uint8_t)       \
	X(INT16, int16_t, uint16_t)    \
	X(INT32, int32_t, uint32_t)    \
	X(INT64, int64_t, uint64_t)
#define UNSIGNED(X)                    \
	X(UINT8, uint8_t, uint8_t)     \
	X(UINT16, uint16_t, uint16_t)  \
	X(UINT32, uint32_t, uint32_t)  \
	X(UINT64, uint64_t, uint64_t)

#define TAB_F(OP) [BASE_DT_FLOAT] = OP##_FLOAT, [BASE_DT_DOUBLE] = OP##_DOUBLE
#define TAB_S(OP)                                                                  \
	[BASE_DT_INT8] = OP##_INT8, [BASE_DT_INT16] = OP##_INT16,                  \
	[BASE_DT_INT32] = OP##_INT32, [BASE_DT_INT64] = OP##_INT64
#define TAB_U(OP)                                                                  \
	[BASE_DT_UINT8] = OP##_UINT8, [BASE_DT_UINT16] = OP##_UINT16,              \
	[BASE_DT_UINT32] = OP##_UINT32, [BASE_DT_UINT64] = OP##_UINT64

#define T_OF(x) __typeof__(x)

/* Activations.  NaN passes through every one of them. */
UN_F(relu, x < 0 ? (T_OF(x))0 : x)
UN_F(leakyrelu, x < 0 ? (T_OF(x))p->alpha * x : x)
UN_F(elu, x < 0 ? (T_OF(x))p->alpha * expm1(x) : x)
UN_F(selu, x > 0 ? (T_OF(x))p->gamma * x : (T_OF(x))p->gamma * (T_OF(x))p->alpha * expm1(x))
UN_F(celu, x > 0 ? x : (T_OF(x))p->alpha * expm1(x / (T_OF(x))p->alpha))
/* Shrink: lambd in alpha, bias in beta. */
UN_F(shrink, x < -(T_OF(x))p->alpha ? x + (T_OF(x))p->beta
             : x > (T_OF(x))p->alpha ? x - (T_OF(x))p->beta : (T_OF(x))0)
UN_F(thresholdedrelu, x > (T_OF(x))p->alpha ? x : (T_OF(x))0)
/* float through vmath (8 lanes at a time, within 2-4e-7 relative of libm;
 * see vmath.h), double through libm. */
#define UN_VMATH(OP, FN, EXPR)                                                           \
	UN_DEF(OP, DOUBLE, double, double, double, EXPR)                                 \
	static void OP##_FLOAT(const void *px, void *py, int64_t n, const struct uparams *p) \
	{                                                                                \
		(void)p;                                                                 \
		FN(px, py, (size_t)n);                                                   \
	}
/* Written so exp() never overflows: for x < 0 it is e^x / (1 + e^x). */
UN_VMATH(sigmoid, rt_vsigmoid, x >= 0 ? 1 / (1 + exp(-x)) : exp(x) / (1 + exp(x)))
/* clamp01 by comparisons rather than fmin/fmax, which would drop a NaN */
#define CLAMP01(v) ((v) < 0 ? (T_OF(v))0 : (v) > 1 ? (T_OF(v))1 : (v))
UN_F(hardsigmoid, CLAMP01((T_OF(x))p->alpha * x + (T_OF(x))p->beta))
UN_F(hardswish, x * CLAMP01(x / 6 + (T_OF(x))0.5))
UN_F(softplus, x > 0 ? x + log1p(exp(-x)) : log1p(exp(x)))
UN_F(softsign, x / (1 + fabs(x)))
UN_F(mish, x * tanh(x > 0 ? x + log1p(exp(-x)) : log1p(exp(x))))
UN_F(gelu, (T_OF(x))0.5 * x * (1 + erf(x * (T_OF(x))0.70710678118654752440)))
UN_F(gelu_tanh, (T_OF(x))0.5 * x *
                        (1 + tanh((T_OF(x))0.79788456080286535588 *
                                  (x + (T_OF(x))0.044715 * x * x * x))))
/* Math. */
UN_VMATH(tanh, rt_vtanh, tanh(x))
UN_VMATH(erf, rt_verf, erf(x))
UN_F(sqrt, sqrt(x))
UN_VMATH(exp, rt_vexp, exp(x))
UN_F(log, log(x))
UN_F(neg, -x)
UN_F(abs, fabs(x))
UN_F(reciprocal, 1 / x)
UN_F(floor, floor(x))
UN_F(ceil, ceil(x))
UN_F(round, nearbyint(x)) /* the default rounding mode: half to even */
UN_F(sign, x > 0 ? (T_OF(x))1 : x < 0 ? (T_OF(x))-1 : x)
UN_F(sin, sin(x))
UN_F(cos, cos(x))
UN_F(tan, tan(x))
UN_F(asin, asin(x))
UN_F(acos, acos(x))
UN_F(atan, atan(x))
UN_F(sinh, sinh(x))
UN_F(cosh, cosh(x))
UN_F(asinh, asinh(x))
UN_F(acosh, acosh(x))
UN_F(atanh, atanh(x))
UN_FB(isnan, x != x)
UN_FB(isinf, isinf(x) && ((x > 0 && p->flag1) || (x < 0 && p->flag2)))

/* Integers. */
#define RELU_S(DT, T, UT) UN_DEF(relu, DT, T, UT, T, x < 0 ? (T)0 : x)
#define NEG_S(DT, T, UT) UN_DEF(neg, DT, T, UT, T, (UT)0 - (UT)x)
#define ABS_S(DT, T, UT) UN_DEF(abs, DT, T, UT, T, x < 0 ? (T)((UT)0 - (UT)x) : x)
#define ABS_U(DT, T, UT) UN_DEF(abs, DT, T, UT, T, x)
#define SIGN_S(DT, T, UT) UN_DEF(sign, DT, T, UT, T, (x > 0) - (x < 0))
#define SIGN_U(DT, T, UT) UN_DEF(sign, DT, T, UT, T, x > 0)
#define BNOT(DT, T, UT) UN_DEF(bnot, DT, T, UT, T, ~x)
SIGNED(RELU_S)
SIGNED(NEG_S)
SIGNED(ABS_S) UNSIGNED(ABS_U)
SIGNED(SIGN_S) UNSIGNED(SIGN_U)
SIGNED(BNOT) UNSIGNED(BNOT)
UN_DEF(not, BOOL, uint8_t, uint8_t, uint8_t, x == 0)

/* ---- descriptors ------------------------------------------------------------------ */

struct unop {
	const char *domain;
	const char *name;
	unfn *const *tab;
	int out_bool;
	int half_ok;
	float alpha, beta, gamma; /* attribute defaults */
};

#define FTAB(OP) static unfn *const OP##_tab[BASE_DT_COUNT] = { TAB_F(OP) };
FTAB(leakyrelu) FTAB(shrink) FTAB(elu) FTAB(selu) FTAB(celu) FTAB(thresholdedrelu) FTAB(sigmoid)
FTAB(hardsigmoid) FTAB(hardswish) FTAB(softplus) FTAB(softsign) FTAB(mish) FTAB(gelu)
FTAB(gelu_tanh) FTAB(tanh) FTAB(erf) FTAB(sqrt) FTAB(exp) FTAB(log) FTAB(reciprocal)
FTAB(floor) FTAB(ceil) FTAB(round) FTAB(sin) FTAB(cos) FTAB(tan) FTAB(asin) FTAB(acos)
FTAB(atan) FTAB(sinh) FTAB(cosh) FTAB(asinh) FTAB(acosh) FTAB(atanh) FTAB(isnan) FTAB(isinf)
static unfn *const relu_tab[BASE_DT_COUNT] = { TAB_F(relu), TAB_S(relu) };
static unfn *const neg_tab[BASE_DT_COUNT] = { TAB_F(neg), TAB_S(neg) };
static unfn *const abs_tab[BASE_DT_COUNT] = { TAB_F(abs), TAB_S(abs), TAB_U(abs) };
static unfn *const sign_tab[BASE_DT_COUNT] = { TAB_F(sign), TAB_S(sign), TAB_U(sign) };
static unfn *const bnot_tab[BASE_DT_COUNT] = { TAB_S(bnot), TAB_U(bnot) };
static unfn *const not_tab[BASE_DT_COUNT] = { [BASE_DT_BOOL] = not_BOOL };

/* The float ops: no bool output, half types through float. */
#define FOP(NAME, OP, A, B, G) { "", NAME, OP##_tab, 0, 1, A, B, G }

static const struct unop unops[] = {
	FOP("Relu", relu, 0, 0, 0),
	FOP("LeakyRelu", leakyrelu, 0.01f, 0, 0),
	FOP("Shrink", shrink, 0.5f, 0, 0),
	FOP("Elu", elu, 1.0f, 0, 0),
	FOP("Selu", selu, 1.67326319217681884765625f, 0, 1.05070102214813232421875f),
	FOP("Celu", celu, 1.0f, 0, 0),
	FOP("ThresholdedRelu", thresholdedrelu, 1.0f, 0, 0),
	FOP("Sigmoid", sigmoid, 0, 0, 0),
	FOP("HardSigmoid", hardsigmoid, 0.2f, 0.5f, 0),
	FOP("HardSwish", hardswish, 0, 0, 0),
	FOP("Softplus", softplus, 0, 0, 0),
	FOP("Softsign", softsign, 0, 0, 0),
	FOP("Mish", mish, 0, 0, 0),
	FOP("Gelu", gelu, 0, 0, 0),
	FOP("Tanh", tanh, 0, 0, 0),
	FOP("Erf", erf, 0, 0, 0),
	FOP("Sqrt", sqrt, 0, 0, 0),
	FOP("Exp", exp, 0, 0, 0),
	FOP("Log", log, 0, 0, 0),
	FOP("Neg", neg, 0, 0, 0),
	FOP("Abs", abs, 0, 0, 0),
	FOP("Reciprocal", reciprocal, 0, 0, 0),
	FOP("Floor", floor, 0, 0, 0),
	FOP("Ceil", ceil, 0, 0, 0),
	FOP("Round", round, 0, 0, 0),
	FOP("Sign", sign, 0, 0, 0),
	FOP("Sin", sin, 0, 0, 0),
	FOP("Cos", cos, 0, 0, 0),
	FOP("Tan", tan, 0, 0, 0),
	FOP("Asin", asin, 0, 0, 0),
	FOP("Acos", acos, 0, 0, 0),
	FOP("Atan", atan, 0, 0, 0),
	FOP("Sinh", sinh, 0, 0, 0),
	FOP("Cosh", cosh, 0, 0, 0),
	FOP("Asinh", asinh, 0, 0, 0),
	FOP("Acosh", acosh, 0, 0, 0),
	FOP("Atanh", atanh, 0, 0, 0),
	{ "", "IsNaN", isnan_tab, 1, 1, 0, 0, 0 },
	{ "", "IsInf", isinf_tab, 1, 1, 0, 0, 0 },
	{ "", "Not", not_tab, 0, 0, 0, 0, 0 },
	{ "", "BitwiseNot", bnot_tab, 0, 0, 0, 0, 0 },
	{ "com.microsoft", "Gelu", gelu_tab, 0, 1, 0, 0, 0 },
};

/* Gelu with approximate="tanh"; chosen by init, not by name. */
static const struct unop op_gelu_tanh = { "", "Gelu", gelu_tanh_tab, 0, 1, 0, 0, 0 };

struct ustate {
	const struct unop *op;
	struct uparams p;
	/* Clip: bounds from attributes before opset 11 */
	int has_lo, has_hi;
	float lo, hi;
};

void rt_ew_unary_fini(struct rt_node *n)
{
	if (n->state)
		base_free(n->state, sizeof(struct ustate));
	n->state = NULL;
}

/* ---- running -------------------------------------------------------------------------- */

static int run_unary(struct rt_node *n, struct rt_exec *x)
{
	const struct ustate *st = n->state;
	const struct unop *op = st->op;
	const struct rt_tensor *in = rt_input(x, n, 0);
	struct rt_tensor *out, f;
	int rc;

	if (!in)
		return rt_fail(x, n, STRATA_RUNTIME, "missing input");
	int odt = op->out_bool ? BASE_DT_BOOL : in->dtype;
	if ((rc = rt_output(x, n, 0, odt, in->rank, in->dims, &out)) != 0)
		return rc;
	int64_t count = runtime_tensor_count(in);
	if (count == 0)
		return 0;
	if (!rt_ew_is_half(in->dtype)) {
		op->tab[in->dtype](in->data, out->data, count, &st->p);
		return 0;
	}
	if ((rc = rt_ew_as(x, n, in, BASE_DT_FLOAT, &f)) != 0)
		return rc;
	if (op->out_bool) {
		op->tab[BASE_DT_FLOAT](f.data, out->data, count, &st->p);
		return 0;
	}
	/* Widened cells are private scratch: compute in place, then narrow. */
	op->tab[BASE_DT_FLOAT](f.data, f.data, count, &st->p);
	return rt_ew_convert(BASE_DT_FLOAT, f.data, out->dtype, out->data, count);
}

static int new_state(struct rt_node *n, const struct unop *op, struct strata_error *err)
{
	struct ustate *st = base_calloc(1, sizeof *st);
	if (!st)
		return rt_node_nomem(n, err, "kernel state");
	st->op = op;
	n->state = st;
	return 0;
}

int rt_ew_unary_init(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	const struct unop *op = NULL;
	int dt, rc;

	for (size_t i = 0; i < sizeof unops / sizeof unops[0]; i++)
		if (!strcmp(unops[i].name, n->op) && !strcmp(unops[i].domain, n->domain)) {
			op = &unops[i];
			break;
		}
	if (!op)
		return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED, "%s (opset %d) has no kernel",
		                   n->op, n->opset);
	if ((rc = rt_node_input_dtype(n, g, 0, &dt, err)) != 0)
		return rc;
	if (n->nout < 1 || n->out[0] < 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "output 0 is missing");
	if (!strcmp(n->op, "Gelu") && !n->domain[0]) {
		const char *ap = rt_attr_string(n, "approximate", "none");
		if (!strcmp(ap, "tanh"))
			op = &op_gelu_tanh;
		else if (strcmp(ap, "none") != 0)
			return rt_node_err(n, err, STRATA_INVALID_GRAPH,
			                   "approximate must be 'none' or 'tanh', not '%s'", ap);
	}
	int ok = dt > 0 && dt < BASE_DT_COUNT &&
	         (op->tab[dt] || (op->half_ok && rt_ew_is_half(dt)));
	if (!ok)
		return rt_ew_no_kernel(n, dt, err);
	if ((rc = new_state(n, op, err)) != 0)
		return rc;
	struct ustate *st = n->state;
	/* Shrink names its two parameters lambd and bias. */
	int shrink = !strcmp(op->name, "Shrink");
	st->p.alpha = rt_attr_float(n, shrink ? "lambd" : "alpha", op->alpha);
	st->p.beta = rt_attr_float(n, shrink ? "bias" : "beta", op->beta);
	st->p.gamma = rt_attr_float(n, "gamma", op->gamma);
	st->p.flag1 = rt_attr_int(n, "detect_positive", 1) != 0;
	st->p.flag2 = rt_attr_int(n, "detect_negative", 1) != 0;
	if (!strcmp(op->name, "Celu") && st->p.alpha == 0) {
		rt_ew_unary_fini(n);
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "alpha must not be 0");
	}
	rt_graph_set_dtype(g, n->out[0], op->out_bool ? BASE_DT_BOOL : dt);
	n->run = run_unary;
	return 0;
}

/* ---- Clip ------------------------------------------------------------------------------ */

/* y = min(max(x, lo), hi); an absent bound (NULL) is the type's limit.
 * When lo > hi every cell becomes hi, as the spec says. */
typedef void clipfn(const void *x, void *y, int64_t n, const void *lo, const void *hi);

#define CLIP_DEF(DT, T, MIN, MAX)                                                            \
	static void clip_##DT(const void *px, void *py, int64_t n, const void *plo,         \
	                      const void *phi)                                              \
	{                                                                                   \
		const T *xs = px;                                                           \
		T *ys = py;                                                                 \
		const T lo = plo ? *(const T *)plo : MIN;                                   \
		const T hi = phi ? *(const T *)phi : MAX;                                   \
		for (int64_t i = 0; i < n; i++) {                                           \
			T v = xs[i] < lo ? lo : xs[i];                                      \
			ys[i] = v > hi ? hi : v;                                            \
		}                                                                           \
	}
CLIP_DEF(FLOAT, float, -INFINITY, INFINITY)
CLIP_DEF(DOUBLE, double, -INFINITY, INFINITY)
CLIP_DEF(INT8, int8_t, INT8_MIN, INT8_MAX)
CLIP_DEF(INT16, int16_t, INT16_MIN, INT16_MAX)
CLIP_DEF(INT32, int32_t, INT32_MIN, INT32_MAX)
CLIP_DEF(INT64, int64_t, INT64_MIN, INT64_MAX)
CLIP_DEF(UINT8, uint8_t, 0, UINT8_MAX)
CLIP_DEF(UINT16, uint16_t, 0, UINT16_MAX)
CLIP_DEF(UINT32, uint32_t, 0, UINT32_MAX)
CLIP_DEF(UINT64, uint64_t, 0, UINT64_MAX)

static clipfn *const clip_tab[BASE_DT_COUNT] = {
	TAB_F(clip), TAB_S(clip), TAB_U(clip),
};

/* Bound i (1 = min, 2 = max) of a Clip of opset >= 11 converted to type ct
 * into cell, or NULL when the input is omitted. */
static const void *bound_input(struct rt_exec *x, const struct rt_node *n, int i, int ct,
                               void *cell, int *rc)
{
	const struct rt_tensor *b = rt_input(x, n, i);
	*rc = 0;
	if (!b)
		return NULL;
	if (runtime_tensor_count(b) != 1) {
		char s[128];
		*rc = rt_fail(x, n, STRATA_RUNTIME, "%s must be a scalar, has shape %s",
		              i == 1 ? "min" : "max", rt_ew_shape_str(b, s, sizeof s));
		return NULL;
	}
	rt_ew_convert(b->dtype, b->data, ct, cell, 1);
	return cell;
}

static int run_clip(struct rt_node *n, struct rt_exec *x)
{
	const struct ustate *st = n->state;
	const struct rt_tensor *in = rt_input(x, n, 0);
	struct rt_tensor *out, f;
	_Alignas(8) unsigned char locell[8], hicell[8];
	const void *lo = NULL, *hi = NULL;
	int rc;

	if (!in)
		return rt_fail(x, n, STRATA_RUNTIME, "missing input");
	int ct = rt_ew_is_half(in->dtype) ? BASE_DT_FLOAT : in->dtype;
	if (n->opset >= 11) {
		lo = bound_input(x, n, 1, ct, locell, &rc);
		if (rc)
			return rc;
		hi = bound_input(x, n, 2, ct, hicell, &rc);
		if (rc)
			return rc;
	} else {
		if (st->has_lo) {
			rt_ew_convert(BASE_DT_FLOAT, &st->lo, ct, locell, 1);
			lo = locell;
		}
		if (st->has_hi) {
			rt_ew_convert(BASE_DT_FLOAT, &st->hi, ct, hicell, 1);
			hi = hicell;
		}
	}
	if ((rc = rt_output(x, n, 0, in->dtype, in->rank, in->dims, &out)) != 0)
		return rc;
	int64_t count = runtime_tensor_count(in);
	if (count == 0)
		return 0;
	if (ct == in->dtype) {
		clip_tab[ct](in->data, out->data, count, lo, hi);
		return 0;
	}
	if ((rc = rt_ew_as(x, n, in, BASE_DT_FLOAT, &f)) != 0)
		return rc;
	clip_tab[BASE_DT_FLOAT](f.data, f.data, count, lo, hi);
	return rt_ew_convert(BASE_DT_FLOAT, f.data, out->dtype, out->data, count);
}

static const struct unop op_clip = { "", "Clip", NULL, 0, 1, 0, 0, 0 };

int rt_ew_clip_init(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	int dt, rc;
	if ((rc = rt_node_input_dtype(n, g, 0, &dt, err)) != 0)
		return rc;
	if (n->nout < 1 || n->out[0] < 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "output 0 is missing");
	if (!(dt > 0 && dt < BASE_DT_COUNT && (clip_tab[dt] || rt_ew_is_half(dt))))
		return rt_ew_no_kernel(n, dt, err);
	if (n->opset >= 11) {
		if (n->nin > 3)
			return rt_node_err(n, err, STRATA_INVALID_GRAPH, "takes at most 3 inputs, has %d",
			                   n->nin);
		for (int i = 1; i < n->nin; i++) {
			if (n->in[i] < 0)
				continue;
			int bt = rt_graph_dtype(g, n->in[i]);
			if (bt != dt)
				return rt_node_err(n, err, STRATA_INVALID_GRAPH,
				                   "%s has type %s, input has %s", i == 1 ? "min" : "max",
				                   base_dtype_name(bt), base_dtype_name(dt));
		}
	} else if (dt != BASE_DT_FLOAT && dt != BASE_DT_DOUBLE && !rt_ew_is_half(dt)) {
		return rt_ew_no_kernel(n, dt, err);
	}
	if ((rc = new_state(n, &op_clip, err)) != 0)
		return rc;
	struct ustate *st = n->state;
	if (n->opset < 11) {
		st->has_lo = rt_attr_find(n, "min") != NULL;
		st->has_hi = rt_attr_find(n, "max") != NULL;
		st->lo = rt_attr_float(n, "min", -FLT_MAX);
		st->hi = rt_attr_float(n, "max", FLT_MAX);
	}
	rt_graph_set_dtype(g, n->out[0], dt);
	n->run = run_clip;
	return 0;
}
