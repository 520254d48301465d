/*
 * pool.c: MaxPool, AveragePool, LpPool, GlobalMaxPool, GlobalAveragePool,
 * GlobalLpPool and MaxUnpool.
 *
 * Tensors are N x C x spatial...; every (batch, channel) plane is pooled
 * independently.  The windowed pools share one walk: for each output
 * position, every kernel offset whose input cell lies inside the input is
 * visited (cells in the padding are skipped; AveragePool with
 * count_include_pad still counts those inside the declared pads, never the
 * extra cells ceil_mode may add).  Cells are read into double whatever the
 * element type, which is exact for float and the 8-bit types MaxPool
 * accepts, and written back in the input's type.
 *
 * MaxPool's optional Indices output holds, per output cell, the flat index of
 * the maximum in the whole input tensor (plane * plane_cells + offset, the
 * offset row-major, or column-major over the spatial axes with
 * storage_order 1); the first maximum wins on ties.  MaxUnpool scatters X
 * back through such indices into a zeroed tensor, checking each one.
 */
#include <math.h>
#include <string.h>

#include "window.h"

enum { POOL_MAX, POOL_AVG, POOL_LP };

static double get(const struct rt_tensor *t, int64_t i)
{
	switch (t->dtype) {
	case BASE_DT_FLOAT: return ((const float *)t->data)[i];
	case BASE_DT_DOUBLE: return ((const double *)t->data)[i];
	case BASE_DT_UINT8: return ((const uint8_t *)t->data)[i];
	case BASE_DT_INT8: return ((const int8_t *)t->data)[i];
	default: return 0;
	}
}

static void put(struct rt_tensor *t, int64_t i, double v)
{
	switch (t->dtype) {
	case BASE_DT_FLOAT: ((float *)t->data)[i] = (float)v; break;
	case BASE_DT_DOUBLE: ((double *)t->data)[i] = v; break;
	case BASE_DT_UINT8: ((uint8_t *)t->data)[i] = (uint8_t)v; break;
	case BASE_DT_INT8: ((int8_t *)t->data)[i] = (int8_t)v; break;
	default: break;
	}
}

/* The reduction of one window: kind POOL_*, p the Lp exponent. */
struct pooling {
	int kind;
	double p;
	int include_pad;         /* AveragePool: divide by the cells inside the pads too */
	int col_major;           /* MaxPool Indices: storage_order 1 */
};

/* Pool every plane of X through window w into Y (and the int64 Indices I,
 * may be NULL). */
static void pool(const struct rt_tensor *X, struct rt_tensor *Y, struct rt_tensor *I,
                 const struct rt_window *w, int64_t planes, const struct pooling *pl)
{
	int r = w->r;
	int64_t in_cells = rt_window_cells(r, w->in), out_cells = rt_window_cells(r, w->out);
	int64_t K = rt_window_cells(r, w->k);
	int64_t cm_st[RT_WINDOW_MAX]; /* column-major strides of the spatial axes */
	for (int64_t i = 0, s = 1; i < r; i++) {
		cm_st[i] = s;
		s *= w->in[i];
	}
	for (int64_t pl_i = 0; pl_i < planes; pl_i++) {
		int64_t xo = pl_i * in_cells, yo = pl_i * out_cells;
		int64_t o[RT_WINDOW_MAX] = {0};
		for (int64_t q = 0; q < out_cells; q++) {
			int64_t kk[RT_WINDOW_MAX] = {0};
			double acc = pl->kind == POOL_MAX ? -INFINITY : 0;
			int64_t best = -1, count = 0, padded = 0;
			for (int64_t kr = 0; kr < K; kr++) {
				int64_t off = 0, cm = 0;
				int inside = 1, inpad = 1;
				for (int i = 0; i < r; i++) {
					int64_t pos = o[i] * w->s[i] - w->pb[i] + kk[i] * w->d[i];
					if (pos < 0 || pos >= w->in[i])
						inside = 0;
					if (pos < -w->pb[i] || pos >= w->in[i] + w->pe[i])
						inpad = 0;
					off = off * w->in[i] + pos;
					cm += pos * cm_st[i];
				}
				padded += inpad;
				if (inside) {
					double v = get(X, xo + off);
					count++;
					if (pl->kind == POOL_MAX) {
						if (best < 0 || v > acc) {
							acc = v;
							best = pl->col_major ? cm : off;
						}
					} else if (pl->kind == POOL_AVG) {
						acc += v;
					} else {
						acc += pow(fabs(v), pl->p);
					}
				}
				for (int i = r - 1; i >= 0; i--) {
					if (++kk[i] < w->k[i])
						break;
					kk[i] = 0;
				}
			}
			if (pl->kind == POOL_AVG) {
				int64_t div = pl->include_pad ? padded : count;
				acc = div ? acc / (double)div : 0;
			} else if (pl->kind == POOL_LP) {
				acc = pow(acc, 1.0 / pl->p);
			} else if (best < 0) {
				acc = 0; /* no input cell under the window (only with huge pads) */
			}
			put(Y, yo + q, acc);
			if (I)
				((int64_t *)I->data)[yo + q] = best < 0 ? -1 : xo + best;
			for (int i = r - 1; i >= 0; i--) {
				if (++o[i] < w->out[i])
					break;
				o[i] = 0;
			}
		}
	}
}

static int check_x(struct rt_exec *x, const struct rt_node *n, const struct rt_tensor *X)
{
	if (X->rank < 3 || X->rank > RT_MAX_RANK)
		return rt_fail(x, n, STRATA_RUNTIME, "X must have rank 3 to %d, not %d", RT_MAX_RANK,
		               X->rank);
	/* the batch x channel product alone too: a zero spatial dim would hide it */
	if (rt_window_cells(X->rank, X->dims) < 0 || rt_window_cells(2, X->dims) < 0)
		return rt_fail(x, n, STRATA_RUNTIME, "X too large");
	return 0;
}

static int run_pool(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *X = rt_input(x, n, 0);
	int rc = check_x(x, n, X);
	if (rc)
		return rc;
	int r = X->rank - 2;
	size_t nk;
	const int64_t *ks = rt_attr_ints(n, "kernel_shape", &nk);
	if ((long)nk != r)
		return rt_fail(x, n, STRATA_RUNTIME, "kernel_shape has %zu entries for %d spatial dims",
		               nk, r);
	struct pooling pl = {0};
	if (strcmp(n->op, "MaxPool") == 0) {
		pl.kind = POOL_MAX;
		pl.col_major = rt_attr_int(n, "storage_order", 0) == 1;
	} else if (strcmp(n->op, "AveragePool") == 0) {
		pl.kind = POOL_AVG;
		pl.include_pad = rt_attr_int(n, "count_include_pad", 0) != 0;
	} else {
		pl.kind = POOL_LP;
		const struct rt_attr *a = rt_attr_find(n, "p");
		pl.p = !a ? 2 : a->type == RT_ATTR_FLOAT ? a->f : (double)a->i;
	}
	struct rt_window w;
	if ((rc = rt_window_make(x, n, r, X->dims + 2, ks, (int)rt_attr_int(n, "ceil_mode", 0), &w)))
		return rc;
	int64_t dims[RT_MAX_RANK] = {X->dims[0], X->dims[1]};
	memcpy(dims + 2, w.out, (size_t)r * sizeof *dims);
	if (rt_window_cells(X->rank, dims) < 0)
		return rt_fail(x, n, STRATA_RUNTIME, "output too large");
	struct rt_tensor *Y, *I = NULL;
	if ((rc = rt_output(x, n, 0, X->dtype, X->rank, dims, &Y)))
		return rc;
	if (n->nout > 1 && n->out[1] >= 0 &&
	    (rc = rt_output(x, n, 1, BASE_DT_INT64, X->rank, dims, &I)))
		return rc;
	pool(X, Y, I, &w, X->dims[0] * X->dims[1], &pl);
	return 0;
}

/* The whole plane is one window: no pads, unit strides. */
static int run_global(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *X = rt_input(x, n, 0);
	int rc = check_x(x, n, X);
	if (rc)
		return rc;
	int r = X->rank - 2;
	struct rt_window w;
	memset(&w, 0, sizeof w);
	w.r = r;
	int64_t dims[RT_MAX_RANK] = {X->dims[0], X->dims[1]};
	for (int i = 0; i < r; i++) {
		w.in[i] = w.k[i] = X->dims[2 + i];
		w.out[i] = w.s[i] = w.d[i] = 1;
		dims[2 + i] = 1;
	}
	struct pooling pl = {0};
	if (strcmp(n->op, "GlobalMaxPool") == 0) {
		pl.kind = POOL_MAX;
	} else if (strcmp(n->op, "GlobalAveragePool") == 0) {
		pl.kind = POOL_AVG;
	} else {
		pl.kind = POOL_LP;
		const struct rt_attr *a = rt_attr_find(n, "p");
		pl.p = !a ? 2 : a->type == RT_ATTR_FLOAT ? a->f : (double)a->i;
	}
	struct rt_tensor *Y;
	if ((rc = rt_output(x, n, 0, X->dtype, X->rank, dims, &Y)))
		return rc;
	pool(X, Y, NULL, &w, X->dims[0] * X->dims[1], &pl);
	return 0;
}

static int init_pool(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	if (n->nin < 1 || n->in[0] < 0 || n->nout < 1 || n->out[0] < 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "needs an input and an output");
	int dt = rt_graph_dtype(g, n->in[0]);
	int is_max = strcmp(n->op, "MaxPool") == 0 || strcmp(n->op, "GlobalMaxPool") == 0;
	if (dt != BASE_DT_FLOAT && dt != BASE_DT_DOUBLE &&
	    !(is_max && (dt == BASE_DT_UINT8 || dt == BASE_DT_INT8)))
		return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED, "%s (opset %d): element type %s",
		                   n->op, n->opset, base_dtype_name(dt));
	int global = strncmp(n->op, "Global", 6) == 0;
	if (!global) {
		int rc = rt_window_check(n, 1, err);
		if (rc)
			return rc;
		int64_t cm = rt_attr_int(n, "ceil_mode", 0), so = rt_attr_int(n, "storage_order", 0);
		if ((cm != 0 && cm != 1) || (so != 0 && so != 1))
			return rt_node_err(n, err, STRATA_INVALID_GRAPH,
			                   "ceil_mode and storage_order must be 0 or 1");
		if (n->nout > 1 && n->out[1] >= 0) {
			if (strcmp(n->op, "MaxPool") != 0)
				return rt_node_err(n, err, STRATA_INVALID_GRAPH, "only MaxPool has Indices");
			rt_graph_set_dtype(g, n->out[1], BASE_DT_INT64);
		}
	}
	const struct rt_attr *p = rt_attr_find(n, "p");
	if (p && !((p->type == RT_ATTR_INT && p->i >= 1 && p->i <= 1024) ||
	           (p->type == RT_ATTR_FLOAT && p->f >= 1 && p->f <= 1024)))
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "p must be a number in [1, 1024]");
	rt_graph_set_dtype(g, n->out[0], dt);
	n->run = global ? run_global : run_pool;
	return 0;
}

/* ---- MaxUnpool ----------------------------------------------------------------------- */

static int run_maxunpool(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *X = rt_input(x, n, 0), *Ix = rt_input(x, n, 1);
	const struct rt_tensor *os = rt_input(x, n, 2);
	int rc = check_x(x, n, X);
	if (rc)
		return rc;
	if (Ix->rank != X->rank || memcmp(Ix->dims, X->dims, (size_t)X->rank * sizeof *X->dims))
		return rt_fail(x, n, STRATA_RUNTIME, "I must have X's shape");
	int r = X->rank - 2;
	/* The natural output shape, which the indices refer to. */
	int64_t nat[RT_MAX_RANK] = {X->dims[0], X->dims[1]}, dims[RT_MAX_RANK];
	size_t nk, ns, np;
	const int64_t *ks = rt_attr_ints(n, "kernel_shape", &nk);
	const int64_t *sv = rt_attr_ints(n, "strides", &ns);
	const int64_t *pv = rt_attr_ints(n, "pads", &np);
	if ((long)nk != r || (sv && (long)ns != r) || (pv && (long)np != 2 * r))
		return rt_fail(x, n, STRATA_RUNTIME,
		               "kernel_shape, strides and pads do not fit %d spatial dims", r);
	for (int i = 0; i < r; i++) {
		int64_t st = sv ? sv[i] : 1, pb = pv ? pv[i] : 0, pe = pv ? pv[i + r] : 0;
		nat[2 + i] = (X->dims[2 + i] - 1) * st + ks[i] - pb - pe;
		if (nat[2 + i] < 0)
			return rt_fail(x, n, STRATA_RUNTIME, "negative output extent");
	}
	memcpy(dims, nat, sizeof dims);
	if (os) {
		/* A larger explicit shape keeps each cell at its coordinates in
		 * the natural shape. */
		int64_t v[RT_MAX_RANK];
		int c = rt_tensor_to_ints(os, v, RT_MAX_RANK);
		if (c != X->rank)
			return rt_fail(x, n, STRATA_RUNTIME, "output_shape must list %d dims", X->rank);
		for (int i = 0; i < c; i++) {
			if (v[i] < nat[i] || (i < 2 && v[i] != X->dims[i]))
				return rt_fail(x, n, STRATA_RUNTIME,
				               "output_shape[%d] = %lld is smaller than %lld", i,
				               (long long)v[i], (long long)nat[i]);
			dims[i] = v[i];
		}
	}
	int64_t ntotal = rt_window_cells(X->rank, nat);
	int64_t total = rt_window_cells(X->rank, dims);
	if (total < 0)
		return rt_fail(x, n, STRATA_RUNTIME, "output too large");
	struct rt_tensor *Y;
	if ((rc = rt_output(x, n, 0, X->dtype, X->rank, dims, &Y)))
		return rc;
	memset(Y->data, 0, (size_t)total * base_dtype_size(X->dtype));
	int64_t cnt = runtime_tensor_count(X);
	for (int64_t i = 0; i < cnt; i++) {
		int64_t k = Ix->dtype == BASE_DT_INT64 ? ((const int64_t *)Ix->data)[i]
		                                       : ((const int32_t *)Ix->data)[i];
		if (k < 0 || k >= ntotal)
			return rt_fail(x, n, STRATA_RUNTIME, "index %lld out of range [0, %lld)",
			               (long long)k, (long long)ntotal);
		if (os) {
			int64_t off = 0, rest = k, mulv = 1;
			for (int d = X->rank - 1; d >= 0; d--) {
				off += (rest % nat[d]) * mulv;
				rest /= nat[d];
				mulv *= dims[d];
			}
			k = off;
		}
		put(Y, k, get(X, i));
	}
	return 0;
}

static int init_maxunpool(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	if (n->nin < 2 || n->in[0] < 0 || n->in[1] < 0 || n->nout < 1 || n->out[0] < 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "needs X, I and an output");
	int dt = rt_graph_dtype(g, n->in[0]), it = rt_graph_dtype(g, n->in[1]);
	if (dt != BASE_DT_FLOAT && dt != BASE_DT_DOUBLE)
		return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED, "%s (opset %d): element type %s",
		                   n->op, n->opset, base_dtype_name(dt));
	if (it != BASE_DT_INT64 && it != BASE_DT_INT32)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "I must be int64, not %s",
		                   base_dtype_name(it));
	int rc = rt_window_check(n, 1, err);
	if (rc)
		return rc;
	rt_graph_set_dtype(g, n->out[0], dt);
	n->run = run_maxunpool;
	return 0;
}

const struct rt_opdef rt_ops_pool[] = {
	{"", "MaxPool", 1, init_pool, NULL},
	{"", "AveragePool", 1, init_pool, NULL},
	{"", "LpPool", 1, init_pool, NULL},
	{"", "GlobalMaxPool", 1, init_pool, NULL},
	{"", "GlobalAveragePool", 1, init_pool, NULL},
	{"", "GlobalLpPool", 1, init_pool, NULL},
	{"", "MaxUnpool", 9, init_maxunpool, NULL},
	{.op = NULL},
};
