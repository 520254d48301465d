/*
 * misc.c: TopK, Unique, CumSum, Hardmax, Det, Dropout and NonMaxSuppression:
 * operators that order, count or select cells rather than compute them one
 * by one.
 *
 * Ordering is done by one stable merge sort over cell positions with a
 * comparison that reads cells in their own type (integers are never
 * rounded through double; NaN sorts above every number and equals NaN;
 * strings compare by bytes).  Stability is what gives the ONNX tie rules:
 * equal values keep the lower index first.
 *
 * Every size and index read from a tensor at run time is checked and a bad
 * one fails the run with STRATA_RUNTIME; attributes that do not depend on
 * shapes are checked in init().  Kernels use only rt_output and rt_scratch,
 * and Dropout's random mask comes from a generator seeded per run by the
 * `seed` attribute, so a run is a pure function of its inputs.
 */
#include <math.h>
#include <string.h>

#include "../kernel.h"

/* Upper bound on the cells of any output (see shape.c). */
#define MAX_CELLS ((int64_t)1 << 40)

/* ---- helpers ------------------------------------------------------------------ */

static int64_t tcount(const struct rt_tensor *t)
{
	return rt_cells(t->rank, t->dims, MAX_CELLS);
}

static int is_float(int dt)
{
	return dt == BASE_DT_FLOAT || dt == BASE_DT_DOUBLE || dt == BASE_DT_FLOAT16 ||
	       dt == BASE_DT_BFLOAT16;
}

/* Input 0 required and of a floating type; output 0 takes it. */
static int init_float(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	if (n->nin < 1 || n->in[0] < 0 || n->nout < 1 || n->out[0] < 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "needs an input and an output");
	int dt = rt_graph_dtype(g, n->in[0]);
	if (!is_float(dt))
		return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED, "%s (opset %d): element type %s",
		                   n->op, n->opset, base_dtype_name(dt));
	rt_graph_set_dtype(g, n->out[0], dt);
	return 0;
}

/* A one-cell integer tensor as int64. */
static int scalar_int(struct rt_exec *x, const struct rt_node *n, const struct rt_tensor *t,
                      const char *what, int64_t *v)
{
	if ((t->dtype != BASE_DT_INT64 && t->dtype != BASE_DT_INT32) || tcount(t) != 1)
		return rt_fail(x, n, STRATA_RUNTIME, "%s must be one int64 or int32 value", what);
	*v = t->dtype == BASE_DT_INT32 ? ((const int32_t *)t->data)[0]
	                               : ((const int64_t *)t->data)[0];
	return 0;
}

/* A one-cell floating tensor as double. */
static int scalar_float(struct rt_exec *x, const struct rt_node *n, const struct rt_tensor *t,
                        const char *what, double *v)
{
	if (!is_float(t->dtype) || tcount(t) != 1)
		return rt_fail(x, n, STRATA_RUNTIME, "%s must be one floating-point value", what);
	*v = base_load_double(t->dtype, t->data, 0);
	return 0;
}

/* Compare cell i of a with cell j of b (both of type dt): <0, 0, >0.  NaN
 * is above every number and equal to NaN. */
static int cmp_cell(int dt, const void *a, int64_t i, const void *b, int64_t j)
{
#define CMP(T)                                                                   \
	do {                                                                     \
		T u = ((const T *)a)[i], v = ((const T *)b)[j];                  \
		return (u > v) - (u < v);                                        \
	} while (0)
	switch (dt) {
	case BASE_DT_INT8: CMP(int8_t);
	case BASE_DT_UINT8: CMP(uint8_t);
	case BASE_DT_BOOL: CMP(uint8_t);
	case BASE_DT_INT16: CMP(int16_t);
	case BASE_DT_UINT16: CMP(uint16_t);
	case BASE_DT_INT32: CMP(int32_t);
	case BASE_DT_UINT32: CMP(uint32_t);
	case BASE_DT_INT64: CMP(int64_t);
	case BASE_DT_UINT64: CMP(uint64_t);
	case BASE_DT_STRING: {
		int c = strcmp(((const char *const *)a)[i], ((const char *const *)b)[j]);
		return (c > 0) - (c < 0);
	}
	}
#undef CMP
	double u = base_load_double(dt, a, (size_t)i), v = base_load_double(dt, b, (size_t)j);
	if (isnan(u) || isnan(v))
		return isnan(u) - isnan(v);
	return (u > v) - (u < v);
}

/* A comparison of two positions for the sort below. */
typedef int pos_cmp(const void *ctx, int64_t a, int64_t b);

/* Stable bottom-up merge sort of a[0..n) with tmp[0..n) as room. */
static void merge_sort(int64_t *a, int64_t *tmp, int64_t n, pos_cmp *cmp, const void *ctx)
{
	int64_t *src = a, *dst = tmp;
	for (int64_t w = 1; w < n; w *= 2) {
		for (int64_t lo = 0; lo < n; lo += 2 * w) {
			int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
			int64_t i = lo, j = mid, k = lo;
			while (i < mid && j < hi)
				dst[k++] = cmp(ctx, src[j], src[i]) < 0 ? src[j++] : src[i++];
			while (i < mid)
				dst[k++] = src[i++];
			while (j < hi)
				dst[k++] = src[j++];
		}
		int64_t *t = src;
		src = dst;
		dst = t;
	}
	if (src != a)
		memcpy(a, src, (size_t)n * sizeof *a);
}

/* outer x dim x inner around axis. */
static void split_axis(const struct rt_tensor *t, int axis, int64_t *outer, int64_t *dim,
                       int64_t *inner)
{
	*outer = rt_cells(axis, t->dims, MAX_CELLS);
	*dim = t->dims[axis];
	*inner = rt_cells(t->rank - axis - 1, t->dims + axis + 1, MAX_CELLS);
}

/* ---- TopK ------------------------------------------------------------------------- */

struct lane {
	int dt;
	const void *data;
	int64_t base, stride;
	int largest;
};

static int cmp_lane(const void *ctx, int64_t a, int64_t b)
{
	const struct lane *l = ctx;
	int c = cmp_cell(l->dt, l->data, l->base + a * l->stride, l->data, l->base + b * l->stride);
	return l->largest ? -c : c;
}

static int run_topk(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *in = rt_input(x, n, 0);
	int r = in->rank, rc;
	int64_t a0 = rt_attr_int(n, "axis", -1), k;
	int axis = rt_axis(a0, r);
	if (axis < 0)
		return rt_fail(x, n, STRATA_RUNTIME, "axis %lld out of range for rank %d",
		               (long long)a0, r);
	if (n->opset < 10) {
		k = rt_attr_int(n, "k", -1);
	} else {
		const struct rt_tensor *kt = rt_input(x, n, 1);
		if (!kt)
			return rt_fail(x, n, STRATA_RUNTIME, "missing input K");
		if ((rc = scalar_int(x, n, kt, "K", &k)))
			return rc;
	}
	int64_t outer, dim, inner;
	split_axis(in, axis, &outer, &dim, &inner);
	if (k < 0 || k > dim)
		return rt_fail(x, n, STRATA_RUNTIME, "k = %lld out of range [0, %lld]", (long long)k,
		               (long long)dim);
	int64_t od[RT_MAX_RANK];
	memcpy(od, in->dims, sizeof od);
	od[axis] = k;
	struct rt_tensor *yv, *yi;
	if ((rc = rt_output(x, n, 0, in->dtype, r, od, &yv)) ||
	    (rc = rt_output(x, n, 1, BASE_DT_INT64, r, od, &yi)))
		return rc;
	int64_t *ord = rt_scratch_or_fail(x, n, (size_t)dim * 2 * sizeof *ord);
	if (!ord)
		return STRATA_NOMEM;
	size_t es = base_dtype_size(in->dtype);
	struct lane l = {in->dtype, in->data, 0, inner, rt_attr_int(n, "largest", 1) != 0};
	char *ov = yv->data;
	int64_t *oi = yi->data;
	/* Sorted or not, the output is in sorted order: the spec leaves the
	 * unsorted order free. */
	for (int64_t o = 0; o < outer; o++)
		for (int64_t i = 0; i < inner; i++) {
			l.base = o * dim * inner + i;
			for (int64_t j = 0; j < dim; j++)
				ord[j] = j;
			merge_sort(ord, ord + dim, dim, cmp_lane, &l);
			for (int64_t j = 0; j < k; j++) {
				int64_t dsto = (o * k + j) * inner + i;
				memcpy(ov + (size_t)dsto * es,
				       (const char *)in->data + (size_t)(l.base + ord[j] * inner) * es, es);
				oi[dsto] = ord[j];
			}
		}
	return 0;
}

static int init_topk(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	if (n->nin < 1 || n->in[0] < 0 || n->nout < 2)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "needs X and two outputs");
	int dt = rt_graph_dtype(g, n->in[0]);
	if (dt == BASE_DT_STRING || dt == BASE_DT_COMPLEX64 || dt == BASE_DT_COMPLEX128 ||
	    base_dtype_size(dt) == 0)
		return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED, "TopK (opset %d): element type %s",
		                   n->opset, base_dtype_name(dt));
	if (n->opset < 10 && rt_attr_int(n, "k", -1) < 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "attribute k missing or negative");
	if (n->opset >= 10 && (n->nin < 2 || n->in[1] < 0))
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "missing input K");
	if (n->out[0] >= 0)
		rt_graph_set_dtype(g, n->out[0], dt);
	if (n->out[1] >= 0)
		rt_graph_set_dtype(g, n->out[1], BASE_DT_INT64);
	n->run = run_topk;
	return 0;
}

/* ---- Unique ----------------------------------------------------------------------- */

/* Slices k of an outer x dim x inner view compare cell by cell in order. */
struct slices {
	int dt;
	const void *data;
	int64_t outer, dim, inner;
};

static int cmp_slices(const void *ctx, int64_t a, int64_t b)
{
	const struct slices *s = ctx;
	for (int64_t o = 0; o < s->outer; o++) {
		int64_t base = o * s->dim * s->inner;
		for (int64_t i = 0; i < s->inner; i++) {
			int c = cmp_cell(s->dt, s->data, base + a * s->inner + i, s->data,
			                 base + b * s->inner + i);
			if (c)
				return c;
		}
	}
	return 0;
}

static int cmp_first(const void *ctx, int64_t a, int64_t b)
{
	const int64_t *first = ctx;
	return (first[a] > first[b]) - (first[a] < first[b]);
}

static int run_unique(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *in = rt_input(x, n, 0);
	const struct rt_attr *aa = rt_attr_find(n, "axis");
	struct slices s = {in->dtype, in->data, 1, tcount(in), 1};
	int axis = -1, rc;
	if (aa) {
		axis = rt_axis(aa->i, in->rank);
		if (axis < 0)
			return rt_fail(x, n, STRATA_RUNTIME, "axis %lld out of range for rank %d",
			               (long long)aa->i, in->rank);
		split_axis(in, axis, &s.outer, &s.dim, &s.inner);
	}
	int64_t m = s.dim;
	/* ord: positions sorted (stably, so the first of equals comes first);
	 * grp: per position its unique id; first/cnt: per id. */
	int64_t *ord = rt_scratch_or_fail(x, n, (size_t)m * 6 * sizeof *ord);
	if (!ord)
		return STRATA_NOMEM;
	int64_t *tmp = ord + m, *grp = tmp + m, *first = grp + m, *cnt = first + m, *rank = cnt + m;
	for (int64_t j = 0; j < m; j++)
		ord[j] = j;
	merge_sort(ord, tmp, m, cmp_slices, &s);
	int64_t u = 0;
	for (int64_t j = 0; j < m; j++) {
		if (j == 0 || cmp_slices(&s, ord[j - 1], ord[j]) != 0) {
			first[u] = ord[j];
			cnt[u] = 0;
			u++;
		}
		grp[ord[j]] = u - 1;
		cnt[u - 1]++;
	}
	/* rank[id] = output position of id: sorted order, or first occurrence. */
	int64_t *out_ord = tmp;
	for (int64_t j = 0; j < u; j++)
		out_ord[j] = j;
	if (rt_attr_int(n, "sorted", 1) == 0)
		merge_sort(out_ord, ord, u, cmp_first, first);
	for (int64_t j = 0; j < u; j++)
		rank[out_ord[j]] = j;

	int64_t od[RT_MAX_RANK];
	int orank = aa ? in->rank : 1;
	if (aa) {
		memcpy(od, in->dims, sizeof od);
		od[axis] = u;
	} else {
		od[0] = u;
	}
	struct rt_tensor *y, *t;
	if ((rc = rt_output(x, n, 0, in->dtype, orank, od, &y)))
		return rc;
	size_t es = base_dtype_size(in->dtype), sb = (size_t)s.inner * es;
	for (int64_t o = 0; o < s.outer; o++)
		for (int64_t j = 0; j < u; j++)
			if (sb)
				memcpy((char *)y->data + (size_t)((o * u + j) * s.inner) * es,
				       (const char *)in->data +
				               (size_t)((o * s.dim + first[out_ord[j]]) * s.inner) * es,
				       sb);
	if (n->nout > 1 && n->out[1] >= 0) {
		if ((rc = rt_output(x, n, 1, BASE_DT_INT64, 1, &u, &t)))
			return rc;
		for (int64_t j = 0; j < u; j++)
			((int64_t *)t->data)[j] = first[out_ord[j]];
	}
	if (n->nout > 2 && n->out[2] >= 0) {
		if ((rc = rt_output(x, n, 2, BASE_DT_INT64, 1, &m, &t)))
			return rc;
		for (int64_t j = 0; j < m; j++)
			((int64_t *)t->data)[j] = rank[grp[j]];
	}
	if (n->nout > 3 && n->out[3] >= 0) {
		if ((rc = rt_output(x, n, 3, BASE_DT_INT64, 1, &u, &t)))
			return rc;
		for (int64_t j = 0; j < u; j++)
			((int64_t *)t->data)[j] = cnt[out_ord[j]];
	}
	return 0;
}

static int init_unique(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	if (n->nin < 1 || n->in[0] < 0 || n->nout < 1 || n->out[0] < 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "needs an input and an output");
	int dt = rt_graph_dtype(g, n->in[0]);
	if (dt == BASE_DT_COMPLEX64 || dt == BASE_DT_COMPLEX128 || base_dtype_size(dt) == 0)
		return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED, "Unique (opset %d): element type %s",
		                   n->opset, base_dtype_name(dt));
	rt_graph_set_dtype(g, n->out[0], dt);
	for (int i = 1; i < n->nout && i < 4; i++)
		if (n->out[i] >= 0)
			rt_graph_set_dtype(g, n->out[i], BASE_DT_INT64);
	n->run = run_unique;
	return 0;
}

/* ---- CumSum ----------------------------------------------------------------------- */

static int64_t load_i64(int dt, const void *p, int64_t i)
{
	switch (dt) {
	case BASE_DT_INT32: return ((const int32_t *)p)[i];
	case BASE_DT_UINT32: return ((const uint32_t *)p)[i];
	case BASE_DT_UINT64: return (int64_t)((const uint64_t *)p)[i];
	}
	return ((const int64_t *)p)[i];
}

static void store_i64(int dt, void *p, int64_t i, int64_t v)
{
	switch (dt) {
	case BASE_DT_INT32: ((int32_t *)p)[i] = (int32_t)v; break;
	case BASE_DT_UINT32: ((uint32_t *)p)[i] = (uint32_t)v; break;
	case BASE_DT_UINT64: ((uint64_t *)p)[i] = (uint64_t)v; break;
	default: ((int64_t *)p)[i] = v; break;
	}
}

static int run_cumsum(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *in = rt_input(x, n, 0), *at = rt_input(x, n, 1);
	int64_t a0;
	int rc;
	if (!at)
		return rt_fail(x, n, STRATA_RUNTIME, "missing input axis");
	if ((rc = scalar_int(x, n, at, "axis", &a0)))
		return rc;
	int axis = rt_axis(a0, in->rank);
	if (axis < 0)
		return rt_fail(x, n, STRATA_RUNTIME, "axis %lld out of range for rank %d",
		               (long long)a0, in->rank);
	struct rt_tensor *y;
	if ((rc = rt_output(x, n, 0, in->dtype, in->rank, in->dims, &y)))
		return rc;
	int64_t outer, dim, inner;
	split_axis(in, axis, &outer, &dim, &inner);
	int excl = rt_attr_int(n, "exclusive", 0) != 0, rev = rt_attr_int(n, "reverse", 0) != 0;
	int flt = is_float(in->dtype), dt = in->dtype;
	for (int64_t o = 0; o < outer; o++)
		for (int64_t i = 0; i < inner; i++) {
			double fs = 0;
			uint64_t is = 0; /* integer sums wrap around */
			for (int64_t j = 0; j < dim; j++) {
				int64_t jj = rev ? dim - 1 - j : j;
				int64_t c = (o * dim + jj) * inner + i;
				if (flt) {
					double v = base_load_double(dt, in->data, (size_t)c);
					if (!excl)
						fs += v;
					base_store_double(dt, y->data, (size_t)c, fs);
					if (excl)
						fs += v;
				} else {
					uint64_t v = (uint64_t)load_i64(dt, in->data, c);
					if (!excl)
						is += v;
					store_i64(dt, y->data, c, (int64_t)is);
					if (excl)
						is += v;
				}
			}
		}
	return 0;
}

static int init_cumsum(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	if (n->nin < 2 || n->in[0] < 0 || n->in[1] < 0 || n->nout < 1 || n->out[0] < 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "needs x, axis and an output");
	int dt = rt_graph_dtype(g, n->in[0]);
	if (!is_float(dt) && dt != BASE_DT_INT32 && dt != BASE_DT_INT64 && dt != BASE_DT_UINT32 &&
	    dt != BASE_DT_UINT64)
		return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED, "CumSum (opset %d): element type %s",
		                   n->opset, base_dtype_name(dt));
	int at = rt_graph_dtype(g, n->in[1]);
	if (at != BASE_DT_INT32 && at != BASE_DT_INT64)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "axis must be int32 or int64");
	rt_graph_set_dtype(g, n->out[0], dt);
	n->run = run_cumsum;
	return 0;
}

/* ---- Hardmax ---------------------------------------------------------------------- */

static int run_hardmax(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *in = rt_input(x, n, 0);
	int r = in->rank, old = n->opset < 13;
	int64_t a0 = rt_attr_int(n, "axis", old ? 1 : -1);
	/* Before opset 13 the input is coerced to 2-D at axis, which may be r. */
	int64_t axis = a0 < 0 ? a0 + r : a0;
	if (axis < 0 || axis > (old ? r : r - 1) || (!old && r == 0))
		return rt_fail(x, n, STRATA_RUNTIME, "axis %lld out of range for rank %d",
		               (long long)a0, r);
	int64_t outer, dim, inner = 1;
	if (old) {
		outer = rt_cells((int)axis, in->dims, MAX_CELLS);
		dim = rt_cells(r - (int)axis, in->dims + axis, MAX_CELLS);
	} else {
		split_axis(in, (int)axis, &outer, &dim, &inner);
	}
	struct rt_tensor *y;
	int rc = rt_output(x, n, 0, in->dtype, r, in->dims, &y);
	if (rc)
		return rc;
	int dt = in->dtype;
	for (int64_t o = 0; o < outer; o++)
		for (int64_t i = 0; i < inner; i++) {
			int64_t base = o * dim * inner + i, best = 0;
			for (int64_t j = 1; j < dim; j++)
				if (cmp_cell(dt, in->data, base + j * inner, in->data,
				             base + best * inner) > 0)
					best = j;
			for (int64_t j = 0; j < dim; j++)
				base_store_double(dt, y->data, (size_t)(base + j * inner), j == best);
		}
	return 0;
}

static int init_hardmax(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	int rc = init_float(n, g, err);
	if (rc)
		return rc;
	n->run = run_hardmax;
	return 0;
}

/* ---- Det -------------------------------------------------------------------------- */

/* Determinant of the M x M matrix a (overwritten) by LU with partial pivoting. */
static double det_lu(double *a, int64_t M)
{
	double det = 1;
	for (int64_t c = 0; c < M; c++) {
		int64_t p = c;
		for (int64_t i = c + 1; i < M; i++)
			if (fabs(a[i * M + c]) > fabs(a[p * M + c]))
				p = i;
		if (a[p * M + c] == 0)
			return 0;
		if (p != c) {
			for (int64_t j = 0; j < M; j++) {
				double t = a[c * M + j];
				a[c * M + j] = a[p * M + j];
				a[p * M + j] = t;
			}
			det = -det;
		}
		double piv = a[c * M + c];
		det *= piv;
		for (int64_t i = c + 1; i < M; i++) {
			double f = a[i * M + c] / piv;
			for (int64_t j = c + 1; j < M; j++)
				a[i * M + j] -= f * a[c * M + j];
		}
	}
	return det;
}

static int run_det(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *in = rt_input(x, n, 0);
	int r = in->rank;
	if (r < 2 || in->dims[r - 1] != in->dims[r - 2])
		return rt_fail(x, n, STRATA_RUNTIME, "input must be [*, M, M], has rank %d", r);
	int64_t M = in->dims[r - 1], mats = rt_cells(r - 2, in->dims, MAX_CELLS);
	struct rt_tensor *y;
	int rc = rt_output(x, n, 0, in->dtype, r - 2, in->dims, &y);
	if (rc)
		return rc;
	double *a = rt_scratch_or_fail(x, n, (size_t)(M * M) * sizeof *a);
	if (!a)
		return STRATA_NOMEM;
	for (int64_t b = 0; b < mats; b++) {
		for (int64_t i = 0; i < M * M; i++)
			a[i] = base_load_double(in->dtype, in->data, (size_t)(b * M * M + i));
		base_store_double(in->dtype, y->data, (size_t)b, det_lu(a, M));
	}
	return 0;
}

static int init_det(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	int rc = init_float(n, g, err);
	if (rc)
		return rc;
	n->run = run_det;
	return 0;
}

/* ---- Dropout ---------------------------------------------------------------------- */

/* splitmix64: small, fast, and good enough for a dropout mask. */
static uint64_t next_random(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static int run_dropout(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *in = rt_input(x, n, 0);
	double ratio = rt_attr_float(n, "ratio", 0.5f);
	int training = 0, rc;
	if (n->opset < 7) {
		training = rt_attr_int(n, "is_test", 0) == 0;
	} else if (n->opset >= 12) {
		const struct rt_tensor *rt = rt_input(x, n, 1), *tm = rt_input(x, n, 2);
		ratio = 0.5;
		if (rt && (rc = scalar_float(x, n, rt, "ratio", &ratio)))
			return rc;
		if (tm) {
			if (tm->dtype != BASE_DT_BOOL || tcount(tm) != 1)
				return rt_fail(x, n, STRATA_RUNTIME, "training_mode must be one bool");
			training = ((const uint8_t *)tm->data)[0] != 0;
		}
	}
	if (training && !(ratio >= 0 && ratio <= 1))
		return rt_fail(x, n, STRATA_RUNTIME, "ratio %g outside [0, 1]", ratio);
	if (ratio == 0)
		training = 0;
	struct rt_tensor *y, *mk = NULL;
	if ((rc = rt_output(x, n, 0, in->dtype, in->rank, in->dims, &y)))
		return rc;
	/* The mask is bool from opset 10; before it, of the data's type. */
	int mdt = n->opset >= 10 ? BASE_DT_BOOL : in->dtype;
	if (n->nout > 1 && n->out[1] >= 0 &&
	    (rc = rt_output(x, n, 1, mdt, in->rank, in->dims, &mk)))
		return rc;
	int64_t cnt = tcount(in);
	if (!training) {
		size_t bytes = (size_t)cnt * base_dtype_size(in->dtype);
		if (bytes && y->data != in->data)
			memcpy(y->data, in->data, bytes);
		for (int64_t i = 0; mk && i < cnt; i++)
			base_store_double(mdt, mk->data, (size_t)i, 1.0);
		return 0;
	}
	uint64_t s = (uint64_t)rt_attr_int(n, "seed", 0);
	double scale = ratio < 1 ? 1.0 / (1.0 - ratio) : 0.0;
	for (int64_t i = 0; i < cnt; i++) {
		double u = (double)(next_random(&s) >> 11) * (1.0 / 9007199254740992.0);
		int keep = u >= ratio;
		double v = base_load_double(in->dtype, in->data, (size_t)i);
		base_store_double(in->dtype, y->data, (size_t)i, keep ? v * scale : 0.0);
		if (mk)
			base_store_double(mdt, mk->data, (size_t)i, keep);
	}
	return 0;
}

static int init_dropout(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	int rc = init_float(n, g, err);
	if (rc)
		return rc;
	if (n->nout > 1 && n->out[1] >= 0)
		rt_graph_set_dtype(g, n->out[1],
		                   n->opset >= 10 ? BASE_DT_BOOL : rt_graph_dtype(g, n->in[0]));
	if (n->opset >= 12 && n->nin > 2 && n->in[2] >= 0 &&
	    rt_graph_dtype(g, n->in[2]) != BASE_DT_BOOL)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "training_mode must be bool");
	n->run = run_dropout;
	return 0;
}

/* ---- NonMaxSuppression -------------------------------------------------------------- */

struct box {
	float x0, y0, x1, y1, area;
};

static struct box make_box(const float *b, int center)
{
	struct box o;
	if (center) {
		o.x0 = b[0] - b[2] / 2;
		o.x1 = b[0] + b[2] / 2;
		o.y0 = b[1] - b[3] / 2;
		o.y1 = b[1] + b[3] / 2;
	} else {
		/* Corners may come in either order. */
		o.y0 = fminf(b[0], b[2]);
		o.y1 = fmaxf(b[0], b[2]);
		o.x0 = fminf(b[1], b[3]);
		o.x1 = fmaxf(b[1], b[3]);
	}
	o.area = (o.x1 - o.x0) * (o.y1 - o.y0);
	return o;
}

/* Whether b suppresses a: IoU strictly above the threshold. */
static int suppresses(const struct box *a, const struct box *b, float thr)
{
	float ix0 = fmaxf(a->x0, b->x0), ix1 = fminf(a->x1, b->x1);
	float iy0 = fmaxf(a->y0, b->y0), iy1 = fminf(a->y1, b->y1);
	if (ix1 <= ix0 || iy1 <= iy0 || a->area <= 0 || b->area <= 0)
		return 0;
	float inter = (ix1 - ix0) * (iy1 - iy0);
	float uni = a->area + b->area - inter;
	if (uni <= 0)
		return 0;
	return inter / uni > thr;
}

static int cmp_score(const void *ctx, int64_t a, int64_t b)
{
	const float *s = ctx;
	return (s[a] < s[b]) - (s[a] > s[b]); /* descending; ties keep the lower index */
}

static int run_nms(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *bx = rt_input(x, n, 0), *sc = rt_input(x, n, 1);
	const struct rt_tensor *mt = rt_input(x, n, 2), *it = rt_input(x, n, 3);
	const struct rt_tensor *st = rt_input(x, n, 4);
	int rc;
	if (bx->rank != 3 || bx->dims[2] != 4 || sc->rank != 3 || sc->dims[0] != bx->dims[0] ||
	    sc->dims[2] != bx->dims[1])
		return rt_fail(x, n, STRATA_RUNTIME,
		               "boxes must be [B, N, 4] and scores [B, C, N] with the same B and N");
	int64_t maxout = 0;
	double iou = 0, sthr = 0;
	if (mt && (rc = scalar_int(x, n, mt, "max_output_boxes_per_class", &maxout)))
		return rc;
	if (it && (rc = scalar_float(x, n, it, "iou_threshold", &iou)))
		return rc;
	if (st && (rc = scalar_float(x, n, st, "score_threshold", &sthr)))
		return rc;
	if (maxout < 0)
		maxout = 0;
	int64_t B = bx->dims[0], N = bx->dims[1], C = sc->dims[1];
	int64_t per = maxout < N ? maxout : N;
	int64_t cap = rt_cells(3, (int64_t[]){B, C, per}, MAX_CELLS);
	if (cap < 0)
		return rt_fail(x, n, STRATA_LIMIT, "too many boxes");
	int64_t *sel = rt_scratch_or_fail(x, n, (size_t)(cap * 3 + 2 * N + per) * sizeof *sel);
	struct box *boxes = rt_scratch_or_fail(x, n, (size_t)N * sizeof *boxes);
	if (!sel || !boxes)
		return STRATA_NOMEM;
	int64_t *ord = sel + cap * 3, *tmp = ord + N, *kept = tmp + N;
	int center = (int)(intptr_t)n->state;
	int64_t nsel = 0;
	for (int64_t b = 0; b < B; b++) {
		const float *bb = (const float *)bx->data + b * N * 4;
		for (int64_t i = 0; i < N; i++)
			boxes[i] = make_box(bb + i * 4, center);
		for (int64_t c = 0; c < C && per > 0; c++) {
			const float *s = (const float *)sc->data + (b * C + c) * N;
			int64_t m = 0;
			for (int64_t i = 0; i < N; i++)
				if (!st || s[i] > sthr)
					ord[m++] = i;
			merge_sort(ord, tmp, m, cmp_score, s);
			int64_t nk = 0;
			for (int64_t j = 0; j < m && nk < per; j++) {
				int ok = 1;
				for (int64_t k = 0; k < nk && ok; k++)
					ok = !suppresses(&boxes[ord[j]], &boxes[kept[k]], (float)iou);
				if (!ok)
					continue;
				kept[nk++] = ord[j];
				sel[nsel * 3] = b;
				sel[nsel * 3 + 1] = c;
				sel[nsel * 3 + 2] = ord[j];
				nsel++;
			}
		}
	}
	int64_t od[2] = {nsel, 3};
	struct rt_tensor *y;
	if ((rc = rt_output(x, n, 0, BASE_DT_INT64, 2, od, &y)))
		return rc;
	if (nsel)
		memcpy(y->data, sel, (size_t)nsel * 3 * sizeof *sel);
	return 0;
}

static int init_nms(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	if (n->nin < 2 || n->in[0] < 0 || n->in[1] < 0 || n->nout < 1 || n->out[0] < 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "needs boxes, scores and an output");
	if (rt_graph_dtype(g, n->in[0]) != BASE_DT_FLOAT ||
	    rt_graph_dtype(g, n->in[1]) != BASE_DT_FLOAT)
		return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED,
		                   "NonMaxSuppression (opset %d): boxes and scores of type %s", n->opset,
		                   base_dtype_name(rt_graph_dtype(g, n->in[0])));
	int64_t cpb = rt_attr_int(n, "center_point_box", 0);
	if (cpb != 0 && cpb != 1)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "center_point_box must be 0 or 1, not %lld",
		                   (long long)cpb);
	rt_graph_set_dtype(g, n->out[0], BASE_DT_INT64);
	n->state = (void *)(intptr_t)cpb;
	n->run = run_nms;
	return 0;
}

const struct rt_opdef rt_ops_misc[] = {
	{"", "TopK", 1, init_topk, NULL},
	{"", "Unique", 11, init_unique, NULL},
	{"", "CumSum", 11, init_cumsum, NULL},
	{"", "Hardmax", 1, init_hardmax, NULL},
	{"", "Det", 11, init_det, NULL},
	{"", "Dropout", 1, init_dropout, NULL},
	{"", "NonMaxSuppression", 10, init_nms, NULL},
	{.op = NULL},
};
