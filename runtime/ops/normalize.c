/*
 * normalize.c: Softmax, LogSoftmax and LayerNormalization.
 *
 * All three normalize groups of cells: a tensor is viewed as outer x dim x
 * inner around the normalized axis (or axes), and each of the outer * inner
 * groups of dim cells is independent.  Softmax subtracts the group's maximum
 * before exponentiating, so no finite input overflows; a float Softmax over
 * contiguous groups (the last axis) runs vmath's vectorized row softmax.
 *
 * Softmax and LogSoftmax changed meaning at opset 13: before it the input is
 * coerced to 2-D at axis (default 1) and the whole trailing block is one
 * group; from 13 on the group is the single axis (default -1).
 * LayerNormalization (opset 17) normalizes the trailing axes from axis on,
 * with statistics accumulated in double; its optional Mean and InvStdDev
 * outputs keep X's leading dims and have 1 on the normalized ones.
 */
#include <math.h>
#include <string.h>

#include "../kernel.h"
#include "vmath.h"

static int init_float_types(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	if (n->nin < 1 || n->in[0] < 0 || n->nout < 1 || n->out[0] < 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "needs an input and an output");
	int dt = rt_graph_dtype(g, n->in[0]);
	if (dt != BASE_DT_FLOAT && dt != BASE_DT_DOUBLE)
		return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED, "%s (opset %d): element type %s",
		                   n->op, n->opset, base_dtype_name(dt));
	rt_graph_set_dtype(g, n->out[0], dt);
	return 0;
}

/* ---- Softmax and LogSoftmax ---------------------------------------------------- */

/* One group of len cells at stride st; log selects LogSoftmax. */
#define DEFINE_SOFTMAX(name, T, EXP, LOG)                                                 \
	static void name(const T *x, T *y, int64_t len, int64_t st, int uselog)             \
	{                                                                                \
		T mx = x[0];                                                             \
		for (int64_t i = 1; i < len; i++)                                        \
			if (x[i * st] > mx)                                              \
				mx = x[i * st];                                          \
		if (isinf(mx))                                                           \
			mx = mx > 0 ? mx : 0; /* all -inf: keep exp(-inf) = 0 */         \
		double sum = 0;                                                          \
		for (int64_t i = 0; i < len; i++) {                                      \
			T e = EXP(x[i * st] - mx);                                       \
			sum += e;                                                        \
			if (!uselog)                                                     \
				y[i * st] = e;                                           \
		}                                                                        \
		if (uselog) {                                                            \
			T ls = (T)LOG(sum);                                              \
			for (int64_t i = 0; i < len; i++)                                \
				y[i * st] = x[i * st] - mx - ls;                         \
		} else {                                                                 \
			T inv = (T)(1.0 / sum);                                          \
			for (int64_t i = 0; i < len; i++)                                \
				y[i * st] *= inv;                                        \
		}                                                                        \
	}

DEFINE_SOFTMAX(softmax_f32, float, expf, log)
DEFINE_SOFTMAX(softmax_f64, double, exp, log)

static int run_softmax(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *in = rt_input(x, n, 0);
	int r = in->rank;
	int64_t axis0 = rt_attr_int(n, "axis", n->opset < 13 ? 1 : -1);
	int64_t axis = axis0 < 0 ? axis0 + r : axis0;
	/* opset < 13 allows axis == r (every group has one cell) */
	int64_t hi = n->opset < 13 ? r : r - 1;
	if (axis < 0 || axis > hi || (r == 0 && n->opset >= 13))
		return rt_fail(x, n, STRATA_RUNTIME, "axis %lld out of range for rank %d",
		               (long long)axis0, r);
	int64_t outer = 1, dim = 1, inner = 1;
	for (int i = 0; i < r; i++) {
		if (i < axis)
			outer *= in->dims[i];
		else if (n->opset < 13 || i == axis)
			dim *= in->dims[i];
		else
			inner *= in->dims[i];
	}
	struct rt_tensor *y;
	int rc = rt_output(x, n, 0, in->dtype, r, in->dims, &y);
	if (rc)
		return rc;
	if (dim == 0)
		return 0;
	int uselog = strcmp(n->op, "LogSoftmax") == 0;
	for (int64_t o = 0; o < outer; o++) {
		for (int64_t j = 0; j < inner; j++) {
			int64_t off = o * dim * inner + j;
			if (in->dtype == BASE_DT_FLOAT && inner == 1 && !uselog) {
				/* A contiguous group: the vectorized row softmax. */
				float *yr = (float *)y->data + off;
				if (y->data != in->data)
					memcpy(yr, (const float *)in->data + off, (size_t)dim * sizeof *yr);
				rt_vsoftmax(yr, (size_t)dim);
			} else if (in->dtype == BASE_DT_FLOAT)
				softmax_f32((const float *)in->data + off, (float *)y->data + off, dim,
				            inner, uselog);
			else
				softmax_f64((const double *)in->data + off, (double *)y->data + off,
				            dim, inner, uselog);
		}
	}
	return 0;
}

static int init_softmax(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	int rc = init_float_types(n, g, err);
	if (rc)
		return rc;
	n->run = run_softmax;
	return 0;
}

/* ---- LayerNormalization ------------------------------------------------------------ */

/* For each of the len cells of the normalized block, the index of the
 * scale (or bias) cell that broadcasts onto it; NULL when p has len cells
 * (index = position). */
static int bcast_index(struct rt_exec *x, const struct rt_node *n, const struct rt_tensor *p,
                       const char *what, int r, int axis, const int64_t *dims, int64_t len,
                       int64_t **out)
{
	int nr = r - axis;
	*out = NULL;
	if (p->rank > nr)
		return rt_fail(x, n, STRATA_RUNTIME, "%s has rank %d, more than the %d normalized axes",
		               what, p->rank, nr);
	int exact = p->rank == nr;
	int64_t pst[RT_MAX_RANK], s = 1;
	for (int i = nr - 1; i >= 0; i--) {
		int ip = i - (nr - p->rank);
		int64_t pd = ip >= 0 ? p->dims[ip] : 1;
		if (pd != dims[axis + i] && pd != 1)
			return rt_fail(x, n, STRATA_RUNTIME,
			               "%s dimension %lld does not broadcast to %lld", what,
			               (long long)pd, (long long)dims[axis + i]);
		exact &= pd == dims[axis + i];
		pst[i] = pd == 1 ? 0 : s;
		s *= pd;
	}
	if (exact)
		return 0;
	int64_t *ix = rt_scratch(x, (size_t)len * sizeof *ix);
	if (!ix)
		return rt_nomem(x, n, "kernel scratch");
	int64_t idx[RT_MAX_RANK] = {0};
	for (int64_t j = 0; j < len; j++) {
		int64_t off = 0;
		for (int i = 0; i < nr; i++)
			off += idx[i] * pst[i];
		ix[j] = off;
		for (int i = nr - 1; i >= 0; i--) {
			if (++idx[i] < dims[axis + i])
				break;
			idx[i] = 0;
		}
	}
	*out = ix;
	return 0;
}

static int run_layernorm(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *in = rt_input(x, n, 0), *sc = rt_input(x, n, 1);
	const struct rt_tensor *bi = rt_input(x, n, 2);
	if (!sc)
		return rt_fail(x, n, STRATA_RUNTIME, "missing Scale");
	int r = in->rank;
	int64_t axis0 = rt_attr_int(n, "axis", -1);
	int axis = rt_axis(axis0, r);
	if (axis < 0)
		return rt_fail(x, n, STRATA_RUNTIME, "axis %lld out of range for rank %d",
		               (long long)axis0, r);
	double eps = rt_attr_float(n, "epsilon", 1e-5f);
	int64_t outer = 1, len = 1;
	for (int i = 0; i < r; i++) {
		if (i < axis)
			outer *= in->dims[i];
		else
			len *= in->dims[i];
	}
	if (sc->dtype != in->dtype || (bi && bi->dtype != in->dtype))
		return rt_fail(x, n, STRATA_RUNTIME, "Scale and B must have X's type");
	int64_t *sidx, *bidx = NULL;
	int rc = bcast_index(x, n, sc, "Scale", r, axis, in->dims, len, &sidx);
	if (rc)
		return rc;
	if (bi && (rc = bcast_index(x, n, bi, "B", r, axis, in->dims, len, &bidx)))
		return rc;

	struct rt_tensor *y, *ym = NULL, *yi = NULL;
	if ((rc = rt_output(x, n, 0, in->dtype, r, in->dims, &y)))
		return rc;
	int64_t sd[RT_MAX_RANK];
	for (int i = 0; i < r; i++)
		sd[i] = i < axis ? in->dims[i] : 1;
	if (n->nout > 1 && n->out[1] >= 0 &&
	    (rc = rt_output(x, n, 1, BASE_DT_FLOAT, r, sd, &ym)))
		return rc;
	if (n->nout > 2 && n->out[2] >= 0 &&
	    (rc = rt_output(x, n, 2, BASE_DT_FLOAT, r, sd, &yi)))
		return rc;

	int f32 = in->dtype == BASE_DT_FLOAT;
	for (int64_t o = 0; o < outer; o++) {
		int64_t base = o * len;
		double sum = 0, sq = 0;
		if (f32) {
			const float *xv = (const float *)in->data + base;
			for (int64_t j = 0; j < len; j++)
				sum += xv[j];
		} else {
			const double *xv = (const double *)in->data + base;
			for (int64_t j = 0; j < len; j++)
				sum += xv[j];
		}
		double mean = len ? sum / (double)len : 0;
		if (f32) {
			const float *xv = (const float *)in->data + base;
			for (int64_t j = 0; j < len; j++)
				sq += (xv[j] - mean) * (xv[j] - mean);
		} else {
			const double *xv = (const double *)in->data + base;
			for (int64_t j = 0; j < len; j++)
				sq += (xv[j] - mean) * (xv[j] - mean);
		}
		double inv = 1.0 / sqrt((len ? sq / (double)len : 0) + eps);
		if (ym)
			((float *)ym->data)[o] = (float)mean;
		if (yi)
			((float *)yi->data)[o] = (float)inv;
		if (f32) {
			const float *xv = (const float *)in->data + base, *s = sc->data;
			const float *b = bi ? bi->data : NULL;
			float *yv = (float *)y->data + base;
			float m = (float)mean, iv = (float)inv;
			if (!sidx && (!bi || !bidx)) {
				for (int64_t j = 0; j < len; j++)
					yv[j] = (xv[j] - m) * iv * s[j] + (b ? b[j] : 0.0f);
			} else {
				for (int64_t j = 0; j < len; j++) {
					float bj = b ? b[bidx ? bidx[j] : j] : 0.0f;
					yv[j] = (xv[j] - m) * iv * s[sidx ? sidx[j] : j] + bj;
				}
			}
		} else {
			const double *xv = (const double *)in->data + base, *s = sc->data;
			const double *b = bi ? bi->data : NULL;
			double *yv = (double *)y->data + base;
			for (int64_t j = 0; j < len; j++) {
				double bj = b ? b[bidx ? bidx[j] : j] : 0.0;
				yv[j] = (xv[j] - mean) * inv * s[sidx ? sidx[j] : j] + bj;
			}
		}
	}
	return 0;
}

static int init_layernorm(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	int rc = init_float_types(n, g, err);
	if (rc)
		return rc;
	if (n->nin < 2 || n->in[1] < 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "missing input Scale");
	int dt = rt_graph_dtype(g, n->in[0]);
	if (rt_graph_dtype(g, n->in[1]) != dt ||
	    (n->nin > 2 && n->in[2] >= 0 && rt_graph_dtype(g, n->in[2]) != dt))
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "Scale and B must be %s",
		                   base_dtype_name(dt));
	int64_t stash = rt_attr_int(n, "stash_type", 1);
	if (stash != BASE_DT_FLOAT)
		return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED,
		                   "LayerNormalization (opset %d): stash_type %lld", n->opset,
		                   (long long)stash);
	for (int i = 1; i < n->nout && i < 3; i++)
		if (n->out[i] >= 0)
			rt_graph_set_dtype(g, n->out[i], BASE_DT_FLOAT);
	n->run = run_layernorm;
	return 0;
}

const struct rt_opdef rt_ops_normalize[] = {
	{"", "Softmax", 1, init_softmax, NULL},
	{"", "LogSoftmax", 1, init_softmax, NULL},
	{"", "LayerNormalization", 17, init_layernorm, NULL},
	{.op = NULL},
};
