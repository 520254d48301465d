/*
 * random.c: RandomUniform, RandomNormal, RandomUniformLike, RandomNormalLike,
 * Bernoulli and Multinomial.
 *
 * Each node draws from its own xoshiro256** generator, seeded afresh at every
 * run: from the seed attribute when the model gives one, else from a fixed
 * default mixed with the node's output value index (so that two unseeded
 * nodes differ).  A model therefore computes the same values on every run and
 * on every thread, and nothing mutable hangs off the shared model.  The
 * values cannot match another runtime's; what is specified, and checked, is
 * the shape, the element type and the range of the cells.
 *
 * Uniform cells lie in [low, high) even after rounding to the output type;
 * normal cells come from the Box-Muller transform.  Bernoulli writes 1 where
 * a uniform draw in [0, 1) falls below the input probability; Multinomial
 * draws sample_size class indices per batch row from the softmax of the row's
 * unnormalized log-probabilities.
 */
#include <math.h>
#include <string.h>

#include "../kernel.h"

#define DEFAULT_SEED 0x5eed5eed2f0a9c31ull

/* ---- generator ------------------------------------------------------------------ */

struct rng {
	uint64_t s[4];
};

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static uint64_t next_u64(struct rng *r)
{
	uint64_t *s = r->s;
	uint64_t res = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return res;
}

/* Uniform in [0, 1) with 53 random bits. */
static double next_unit(struct rng *r)
{
	return (double)(next_u64(r) >> 11) * 0x1.0p-53;
}

/* The generator of node n for this run. */
static void rng_seed(struct rng *r, const struct rt_node *n)
{
	const struct rt_attr *a = rt_attr_find(n, "seed");
	uint64_t x;
	if (a && a->type == RT_ATTR_FLOAT) {
		/* Seeds are floats in ONNX; their bit pattern is the seed. */
		uint32_t bits;
		memcpy(&bits, &a->f, sizeof bits);
		x = bits ^ 0x9e3779b97f4a7c15ull;
	} else {
		x = DEFAULT_SEED ^ ((uint64_t)(n->nout > 0 ? n->out[0] : 0) << 32);
	}
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&x);
}

/* ---- cells -------------------------------------------------------------------- */

static int is_float(int dt)
{
	return dt == BASE_DT_FLOAT || dt == BASE_DT_DOUBLE || dt == BASE_DT_FLOAT16 ||
	       dt == BASE_DT_BFLOAT16;
}

/* Types Bernoulli may write: every real type and bool. */
static int is_numeric(int dt)
{
	switch (dt) {
	case BASE_DT_UINT8: case BASE_DT_INT8: case BASE_DT_UINT16: case BASE_DT_INT16:
	case BASE_DT_INT32: case BASE_DT_INT64: case BASE_DT_UINT32: case BASE_DT_UINT64:
	case BASE_DT_BOOL:
		return 1;
	default:
		return is_float(dt);
	}
}

static double get(const void *p, int dt, int64_t i)
{
	switch (dt) {
	case BASE_DT_FLOAT: return ((const float *)p)[i];
	case BASE_DT_DOUBLE: return ((const double *)p)[i];
	case BASE_DT_FLOAT16: return base_f16_to_f32(((const uint16_t *)p)[i]);
	default: return base_bf16_to_f32(((const uint16_t *)p)[i]);
	}
}

/* Store v (already representable: a float cell, or 0/1 for integers). */
static void put(void *p, int dt, int64_t i, double v)
{
	switch (dt) {
	case BASE_DT_FLOAT: ((float *)p)[i] = (float)v; break;
	case BASE_DT_DOUBLE: ((double *)p)[i] = v; break;
	case BASE_DT_FLOAT16: ((uint16_t *)p)[i] = base_f32_to_f16((float)v); break;
	case BASE_DT_BFLOAT16: ((uint16_t *)p)[i] = base_f32_to_bf16((float)v); break;
	case BASE_DT_UINT8: case BASE_DT_BOOL: ((uint8_t *)p)[i] = (uint8_t)v; break;
	case BASE_DT_INT8: ((int8_t *)p)[i] = (int8_t)v; break;
	case BASE_DT_UINT16: ((uint16_t *)p)[i] = (uint16_t)v; break;
	case BASE_DT_INT16: ((int16_t *)p)[i] = (int16_t)v; break;
	case BASE_DT_INT32: ((int32_t *)p)[i] = (int32_t)v; break;
	case BASE_DT_UINT32: ((uint32_t *)p)[i] = (uint32_t)v; break;
	case BASE_DT_INT64: ((int64_t *)p)[i] = (int64_t)v; break;
	default: ((uint64_t *)p)[i] = (uint64_t)v; break;
	}
}

/* Round v to dt as put() would, and read it back. */
static double rounded(int dt, double v)
{
	switch (dt) {
	case BASE_DT_FLOAT: return (float)v;
	case BASE_DT_FLOAT16: return base_f16_to_f32(base_f32_to_f16((float)v));
	case BASE_DT_BFLOAT16: return base_bf16_to_f32(base_f32_to_bf16((float)v));
	default: return v;
	}
}

/* ---- RandomUniform, RandomNormal and their Like forms ---------------------------- */

static int is_like(const struct rt_node *n)
{
	size_t l = strlen(n->op);
	return l > 4 && strcmp(n->op + l - 4, "Like") == 0;
}

static int is_normal(const struct rt_node *n)
{
	return strncmp(n->op, "RandomNormal", 12) == 0;
}

/* The dtype attribute, or dflt when absent. */
static int dtype_attr(const struct rt_node *n, int dflt)
{
	const struct rt_attr *a = rt_attr_find(n, "dtype");
	if (!a)
		return dflt;
	if (a->type != RT_ATTR_INT || a->i <= 0 || a->i >= BASE_DT_COUNT)
		return -1;
	return (int)a->i;
}

static int run_random(struct rt_node *n, struct rt_exec *x)
{
	/* Output types were settled by init from the same attributes. */
	int dt = dtype_attr(n, BASE_DT_FLOAT);
	int rank;
	int64_t dims[RT_MAX_RANK];
	if (is_like(n)) {
		const struct rt_tensor *in = rt_input(x, n, 0);
		dt = dtype_attr(n, in->dtype);
		rank = in->rank;
		memcpy(dims, in->dims, sizeof dims);
	} else {
		size_t r;
		const int64_t *sh = rt_attr_ints(n, "shape", &r); /* checked by init */
		rank = (int)r;
		for (int i = 0; i < rank; i++)
			dims[i] = sh[i];
	}
	struct rt_tensor *y;
	int rc = rt_output(x, n, 0, dt, rank, dims, &y);
	if (rc)
		return rc;
	struct rng g;
	rng_seed(&g, n);
	int64_t cnt = runtime_tensor_count(y);
	if (is_normal(n)) {
		double mean = rt_attr_float(n, "mean", 0.0f), scale = rt_attr_float(n, "scale", 1.0f);
		for (int64_t i = 0; i < cnt; i += 2) {
			/* Box-Muller: u1 in (0, 1] keeps the logarithm finite. */
			double u1 = 1.0 - next_unit(&g), u2 = next_unit(&g);
			double rad = sqrt(-2.0 * log(u1)), th = 6.283185307179586 * u2; /* 2 pi */
			put(y->data, dt, i, mean + scale * rad * cos(th));
			if (i + 1 < cnt)
				put(y->data, dt, i + 1, mean + scale * rad * sin(th));
		}
	} else {
		double lo = rt_attr_float(n, "low", 0.0f), hi = rt_attr_float(n, "high", 1.0f);
		double top = rounded(dt, hi);
		for (int64_t i = 0; i < cnt; i++) {
			double v = rounded(dt, lo + (hi - lo) * next_unit(&g));
			/* Rounding to a narrow type may reach high: draw again. */
			while (v >= top && top > lo)
				v = rounded(dt, lo + (hi - lo) * next_unit(&g));
			put(y->data, dt, i, v);
		}
	}
	return 0;
}

static int check_seed(const struct rt_node *n, struct strata_error *err)
{
	const struct rt_attr *a = rt_attr_find(n, "seed");
	if (a && a->type != RT_ATTR_FLOAT)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "attribute seed must be a float");
	return 0;
}

static int init_random(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	int like = is_like(n);
	if (n->nout != 1 || n->out[0] < 0 || n->nin != (like ? 1 : 0) || (like && n->in[0] < 0))
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "needs %s and one output",
		                   like ? "one input" : "no input");
	int rc = check_seed(n, err);
	if (rc)
		return rc;
	int dt = dtype_attr(n, like ? rt_graph_dtype(g, n->in[0]) : BASE_DT_FLOAT);
	if (dt < 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "attribute dtype is not a tensor type");
	if (!is_float(dt))
		return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED, "%s (opset %d): element type %s",
		                   n->op, n->opset, base_dtype_name(dt));
	if (!like) {
		const struct rt_attr *sa = rt_attr_find(n, "shape");
		if (!sa || sa->type != RT_ATTR_INTS)
			return rt_node_err(n, err, STRATA_INVALID_GRAPH, "attribute shape is required");
		if (sa->n > RT_MAX_RANK)
			return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED, "shape has rank %zu, above %d",
			                   sa->n, RT_MAX_RANK);
		for (size_t i = 0; i < sa->n; i++)
			if (sa->ints[i] < 0)
				return rt_node_err(n, err, STRATA_INVALID_GRAPH,
				                   "shape dimension %zu is negative (%lld)", i,
				                   (long long)sa->ints[i]);
	}
	if (!is_normal(n)) {
		float lo = rt_attr_float(n, "low", 0.0f), hi = rt_attr_float(n, "high", 1.0f);
		if (!(lo <= hi) || !isfinite(lo) || !isfinite(hi))
			return rt_node_err(n, err, STRATA_INVALID_GRAPH,
			                   "low (%g) and high (%g) do not make a finite range", lo, hi);
	}
	rt_graph_set_dtype(g, n->out[0], dt);
	n->run = run_random;
	return 0;
}

/* ---- Bernoulli ------------------------------------------------------------------- */

static int run_bernoulli(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *p = rt_input(x, n, 0);
	int dt = dtype_attr(n, p->dtype);
	struct rt_tensor *y;
	int rc = rt_output(x, n, 0, dt, p->rank, p->dims, &y);
	if (rc)
		return rc;
	struct rng g;
	rng_seed(&g, n);
	int64_t cnt = runtime_tensor_count(p);
	for (int64_t i = 0; i < cnt; i++) {
		double pr = get(p->data, p->dtype, i);
		if (!(pr >= 0 && pr <= 1))
			return rt_fail(x, n, STRATA_RUNTIME, "probability %g at %lld is outside [0, 1]",
			               pr, (long long)i);
		put(y->data, dt, i, next_unit(&g) < pr ? 1.0 : 0.0);
	}
	return 0;
}

static int init_bernoulli(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	if (n->nin != 1 || n->in[0] < 0 || n->nout != 1 || n->out[0] < 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "needs one input and one output");
	int rc = check_seed(n, err);
	if (rc)
		return rc;
	int it = rt_graph_dtype(g, n->in[0]);
	if (!is_float(it))
		return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED, "Bernoulli (opset %d): input type %s",
		                   n->opset, base_dtype_name(it));
	int dt = dtype_attr(n, it);
	if (dt < 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "attribute dtype is not a tensor type");
	if (!is_numeric(dt))
		return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED, "Bernoulli (opset %d): output type %s",
		                   n->opset, base_dtype_name(dt));
	rt_graph_set_dtype(g, n->out[0], dt);
	n->run = run_bernoulli;
	return 0;
}

/* ---- Multinomial ------------------------------------------------------------------- */

static int run_multinomial(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *in = rt_input(x, n, 0);
	int dt = dtype_attr(n, BASE_DT_INT32);
	if (in->rank != 2)
		return rt_fail(x, n, STRATA_RUNTIME, "input has rank %d; it needs [batch, classes]",
		               in->rank);
	int64_t B = in->dims[0], C = in->dims[1], S = rt_attr_int(n, "sample_size", 1);
	int64_t dims[2] = {B, S};
	struct rt_tensor *y;
	int rc = rt_output(x, n, 0, dt, 2, dims, &y);
	if (rc)
		return rc;
	if (B * S == 0)
		return 0;
	if (C == 0)
		return rt_fail(x, n, STRATA_RUNTIME, "no classes to draw from");
	double *cum = rt_scratch(x, (size_t)C * sizeof *cum);
	if (!cum)
		return rt_nomem(x, n, "kernel scratch");
	struct rng g;
	rng_seed(&g, n);
	for (int64_t b = 0; b < B; b++) {
		double mx = -INFINITY, s = 0;
		for (int64_t c = 0; c < C; c++) {
			double v = get(in->data, in->dtype, b * C + c);
			if (isnan(v) || v == INFINITY)
				return rt_fail(x, n, STRATA_RUNTIME, "row %lld holds %g", (long long)b, v);
			if (v > mx)
				mx = v;
		}
		for (int64_t c = 0; c < C; c++) {
			s += exp(get(in->data, in->dtype, b * C + c) - mx);
			cum[c] = s;
		}
		if (!(s > 0))
			return rt_fail(x, n, STRATA_RUNTIME, "row %lld has no probability mass",
			               (long long)b);
		for (int64_t k = 0; k < S; k++) {
			double u = next_unit(&g) * s;
			/* First class whose cumulative mass exceeds u (binary search). */
			int64_t lo = 0, hi = C - 1;
			while (lo < hi) {
				int64_t mid = lo + (hi - lo) / 2;
				if (cum[mid] > u)
					hi = mid;
				else
					lo = mid + 1;
			}
			put(y->data, dt, b * S + k, (double)lo);
		}
	}
	return 0;
}

static int init_multinomial(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	if (n->nin != 1 || n->in[0] < 0 || n->nout != 1 || n->out[0] < 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "needs one input and one output");
	int rc = check_seed(n, err);
	if (rc)
		return rc;
	int it = rt_graph_dtype(g, n->in[0]);
	if (!is_float(it))
		return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED,
		                   "Multinomial (opset %d): input type %s", n->opset,
		                   base_dtype_name(it));
	int dt = dtype_attr(n, BASE_DT_INT32);
	if (dt != BASE_DT_INT32 && dt != BASE_DT_INT64)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "attribute dtype must be int32 or int64");
	const struct rt_attr *ss = rt_attr_find(n, "sample_size");
	if (ss && (ss->type != RT_ATTR_INT || ss->i < 1 || ss->i > ((int64_t)1 << 32)))
		return rt_node_err(n, err, STRATA_INVALID_GRAPH,
		                   "attribute sample_size must be an int in [1, 2^32]");
	rt_graph_set_dtype(g, n->out[0], dt);
	n->run = run_multinomial;
	return 0;
}

const struct rt_opdef rt_ops_random[] = {
	{"", "RandomUniform", 1, init_random, NULL},
	{"", "RandomNormal", 1, init_random, NULL},
	{"", "RandomUniformLike", 1, init_random, NULL},
	{"", "RandomNormalLike", 1, init_random, NULL},
	{"", "Bernoulli", 15, init_bernoulli, NULL},
	{"", "Multinomial", 7, init_multinomial, NULL},
	{.op = NULL},
};
