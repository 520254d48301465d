/*
 * reduce.c: the Reduce* family (Sum, Mean, Max, Min, Prod, L1, L2, LogSum,
 * LogSumExp, SumSquare) and ArgMax / ArgMin.
 *
 * A reduction walks its input once, in memory order, adding each cell into
 * the output cell it belongs to (output strides are 0 on reduced axes), so
 * any set of axes costs one pass and no transposed copy.  Float and double
 * accumulate in double; int32 and int64 accumulate in 64-bit integers with
 * wrapping arithmetic (as the integer types do), except for the kinds whose
 * result is not an integer operation (L2, LogSum, LogSumExp), which go
 * through double and convert back.
 *
 * The axes come from an attribute up to one opset and from an optional
 * second input after it (13 for ReduceSum, 18 for the others).  An empty or
 * omitted axes list reduces everything, unless noop_with_empty_axes is set,
 * in which case the input passes through unchanged.
 */
#include <math.h>
#include <string.h>

#include "../kernel.h"

enum kind { SUM, MEAN, MAX, MIN, PROD, L1, L2, LOGSUM, LOGSUMEXP, SUMSQUARE };

static const struct {
	const char *op;
	enum kind kind;
	int axes_input; /* first opset taking axes as an input */
} reducers[] = {
	{"ReduceSum", SUM, 13},        {"ReduceMean", MEAN, 18},
	{"ReduceMax", MAX, 18},        {"ReduceMin", MIN, 18},
	{"ReduceProd", PROD, 18},      {"ReduceL1", L1, 18},
	{"ReduceL2", L2, 18},          {"ReduceLogSum", LOGSUM, 18},
	{"ReduceLogSumExp", LOGSUMEXP, 18}, {"ReduceSumSquare", SUMSQUARE, 18},
};

struct reduce_state {
	enum kind kind;
	int axes_input;
	int keepdims;
	int noop;
};

/* The shape of one reduction: input walked row by row, output strides. */
struct plan {
	int r;                        /* input rank (a scalar is taken as [1]) */
	int64_t dims[RT_MAX_RANK];
	int64_t ostr[RT_MAX_RANK];    /* output stride per input axis, 0 if reduced */
	int64_t nout;                 /* output cells */
	int64_t per;                  /* input cells per output cell */
};

static double load(int dt, const void *p, int64_t i)
{
	return dt == BASE_DT_FLOAT ? (double)((const float *)p)[i] : ((const double *)p)[i];
}

static int64_t iload(int dt, const void *p, int64_t i)
{
	return dt == BASE_DT_INT32 ? (int64_t)((const int32_t *)p)[i] : ((const int64_t *)p)[i];
}

/* Call the row visitor for every innermost row of the input: base is the
 * row's first input cell, o the output cell of its first cell. */
#define WALK(pl, BODY)                                                                  \
	do {                                                                            \
		int64_t idx_[RT_MAX_RANK] = {0}, base = 0, o = 0;                        \
		int64_t row = (pl)->dims[(pl)->r - 1];                                  \
		for (;;) {                                                              \
			BODY;                                                           \
			base += row;                                                    \
			int d_ = (pl)->r - 2;                                           \
			for (; d_ >= 0; d_--) {                                         \
				o += (pl)->ostr[d_];                                    \
				if (++idx_[d_] < (pl)->dims[d_])                        \
					break;                                          \
				o -= (pl)->ostr[d_] * (pl)->dims[d_];                   \
				idx_[d_] = 0;                                           \
			}                                                               \
			if (d_ < 0)                                                     \
				break;                                                  \
		}                                                                       \
	} while (0)

/* Floating accumulation of kind k (shift: per-output max for LogSumExp). */
static void acc_double(const struct plan *pl, int dt, const void *in, enum kind k, double *acc,
                       const double *shift)
{
	int64_t inner = pl->ostr[pl->r - 1];
	WALK(pl, {
		for (int64_t j = 0; j < row; j++) {
			double v = load(dt, in, base + j);
			double *a = &acc[o + j * inner];
			switch (k) {
			case MAX: if (v > *a || isnan(v)) *a = v; break;
			case MIN: if (v < *a || isnan(v)) *a = v; break;
			case PROD: *a *= v; break;
			case L1: *a += fabs(v); break;
			case L2: case SUMSQUARE: *a += v * v; break;
			case LOGSUMEXP: *a += exp(v - shift[o + j * inner]); break;
			default: *a += v; break;
			}
		}
	});
}

static void acc_int(const struct plan *pl, int dt, const void *in, enum kind k, int64_t *acc)
{
	int64_t inner = pl->ostr[pl->r - 1];
	WALK(pl, {
		for (int64_t j = 0; j < row; j++) {
			int64_t v = iload(dt, in, base + j);
			int64_t *a = &acc[o + j * inner];
			switch (k) {
			case MAX: if (v > *a) *a = v; break;
			case MIN: if (v < *a) *a = v; break;
			case PROD: *a = (int64_t)((uint64_t)*a * (uint64_t)v); break;
			case L1: *a = (int64_t)((uint64_t)*a + (uint64_t)(v < 0 ? -(uint64_t)v : (uint64_t)v)); break;
			case SUMSQUARE: *a = (int64_t)((uint64_t)*a + (uint64_t)v * (uint64_t)v); break;
			default: *a = (int64_t)((uint64_t)*a + (uint64_t)v); break;
			}
		}
	});
}

static int reduce_float_path(enum kind k, int dt)
{
	return dt == BASE_DT_FLOAT || dt == BASE_DT_DOUBLE || k == L2 || k == LOGSUM ||
	       k == LOGSUMEXP;
}

static int run_reduce(struct rt_node *n, struct rt_exec *x)
{
	const struct reduce_state *s = n->state;
	const struct rt_tensor *in = rt_input(x, n, 0);
	int dt = in->dtype;
	int64_t axes[RT_MAX_RANK];
	int na = 0;
	if (n->opset < s->axes_input) {
		size_t c;
		const int64_t *a = rt_attr_ints(n, "axes", &c);
		if (c > RT_MAX_RANK)
			return rt_fail(x, n, STRATA_RUNTIME, "too many axes (%zu)", c);
		if (c)
			memcpy(axes, a, c * sizeof *a);
		na = (int)c;
	} else {
		const struct rt_tensor *t = rt_input(x, n, 1);
		if (t) {
			if (t->dtype != BASE_DT_INT64 || t->rank > 1)
				return rt_fail(x, n, STRATA_RUNTIME, "axes must be a 1-D int64 tensor");
			na = rt_tensor_to_ints(t, axes, RT_MAX_RANK);
			if (na < 0)
				return rt_fail(x, n, STRATA_RUNTIME, "too many axes");
		}
	}
	struct rt_tensor *y;
	int rc;
	if (na == 0 && s->noop) {
		if ((rc = rt_output(x, n, 0, dt, in->rank, in->dims, &y)))
			return rc;
		size_t bytes = (size_t)runtime_tensor_count(in) * base_dtype_size(dt);
		if (bytes && y->data != in->data)
			memcpy(y->data, in->data, bytes);
		return 0;
	}
	int red[RT_MAX_RANK] = {0};
	for (int i = 0; i < na; i++) {
		int a = rt_axis(axes[i], in->rank);
		if (a < 0)
			return rt_fail(x, n, STRATA_RUNTIME, "axis %lld out of range for rank %d",
			               (long long)axes[i], in->rank);
		if (red[a]++)
			return rt_fail(x, n, STRATA_RUNTIME, "axis %d repeated", a);
	}
	if (na == 0)
		for (int i = 0; i < in->rank; i++)
			red[i] = 1;

	struct plan pl;
	int64_t od[RT_MAX_RANK];
	int orank = 0;
	pl.r = in->rank ? in->rank : 1;
	pl.dims[0] = 1;
	memcpy(pl.dims, in->dims, sizeof(int64_t) * (size_t)in->rank);
	pl.nout = 1;
	pl.per = 1;
	for (int i = pl.r - 1; i >= 0; i--) {
		if (red[i] && in->rank) {
			pl.ostr[i] = 0;
			pl.per *= pl.dims[i];
		} else {
			pl.ostr[i] = pl.nout;
			pl.nout *= pl.dims[i];
		}
	}
	for (int i = 0; i < in->rank; i++) {
		if (!red[i])
			od[orank++] = in->dims[i];
		else if (s->keepdims)
			od[orank++] = 1;
	}
	if ((rc = rt_output(x, n, 0, dt, orank, od, &y)))
		return rc;
	if (pl.nout == 0)
		return 0;
	int64_t total = pl.nout * pl.per;
	enum kind k = s->kind;

	if (reduce_float_path(k, dt)) {
		double *acc = rt_scratch(x, (size_t)pl.nout * sizeof(double));
		double *shift = NULL;
		if (!acc)
			return rt_nomem(x, n, "kernel scratch");
		int isint = dt != BASE_DT_FLOAT && dt != BASE_DT_DOUBLE;
		/* integer inputs on this path are widened once */
		const void *src = in->data;
		int sdt = dt;
		if (isint) {
			double *w = rt_scratch(x, (size_t)total * sizeof(double));
			if (!w)
				return rt_nomem(x, n, "kernel scratch");
			for (int64_t i = 0; i < total; i++)
				w[i] = (double)iload(dt, in->data, i);
			src = w;
			sdt = BASE_DT_DOUBLE;
		}
		if (k == LOGSUMEXP) {
			shift = rt_scratch(x, (size_t)pl.nout * sizeof(double));
			if (!shift)
				return rt_nomem(x, n, "kernel scratch");
			for (int64_t i = 0; i < pl.nout; i++)
				shift[i] = -INFINITY;
			if (total)
				acc_double(&pl, sdt, src, MAX, shift, NULL);
			/* an all -inf (or +inf) group must not turn into NaN */
			for (int64_t i = 0; i < pl.nout; i++)
				if (isinf(shift[i]))
					shift[i] = 0;
		}
		double init = k == MAX ? -INFINITY : k == MIN ? INFINITY : k == PROD ? 1.0 : 0.0;
		for (int64_t i = 0; i < pl.nout; i++)
			acc[i] = init;
		if (total)
			acc_double(&pl, sdt, src, k, acc, shift);
		for (int64_t i = 0; i < pl.nout; i++) {
			double v = acc[i];
			switch (k) {
			case MEAN: v = v / (double)pl.per; break;
			case L2: v = sqrt(v); break;
			case LOGSUM: v = log(v); break;
			case LOGSUMEXP: v = log(v) + shift[i]; break;
			default: break;
			}
			if (dt == BASE_DT_FLOAT)
				((float *)y->data)[i] = (float)v;
			else if (dt == BASE_DT_DOUBLE)
				((double *)y->data)[i] = v;
			else
				base_store_double(dt, y->data, (size_t)i, v);
		}
		return 0;
	}

	int64_t *acc = rt_scratch(x, (size_t)pl.nout * sizeof(int64_t));
	if (!acc)
		return rt_nomem(x, n, "kernel scratch");
	int64_t lo = dt == BASE_DT_INT32 ? INT32_MIN : INT64_MIN;
	int64_t hi = dt == BASE_DT_INT32 ? INT32_MAX : INT64_MAX;
	int64_t init = k == MAX ? lo : k == MIN ? hi : k == PROD ? 1 : 0;
	for (int64_t i = 0; i < pl.nout; i++)
		acc[i] = init;
	if (total)
		acc_int(&pl, dt, in->data, k, acc);
	for (int64_t i = 0; i < pl.nout; i++) {
		int64_t v = acc[i];
		if (k == MEAN)
			v = pl.per ? v / pl.per : 0;
		if (dt == BASE_DT_INT32)
			((int32_t *)y->data)[i] = (int32_t)v;
		else
			((int64_t *)y->data)[i] = v;
	}
	return 0;
}

static void fini_state(struct rt_node *n)
{
	base_free(n->state, sizeof(struct reduce_state));
	n->state = NULL;
}

static int check_io(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	if (n->nin < 1 || n->in[0] < 0 || n->nout < 1 || n->out[0] < 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "needs an input and an output");
	int dt = rt_graph_dtype(g, n->in[0]);
	if (dt != BASE_DT_FLOAT && dt != BASE_DT_DOUBLE && dt != BASE_DT_INT32 &&
	    dt != BASE_DT_INT64)
		return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED, "%s (opset %d): element type %s",
		                   n->op, n->opset, base_dtype_name(dt));
	return 0;
}

static int init_reduce(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	int rc = check_io(n, g, err);
	if (rc)
		return rc;
	size_t i = 0;
	while (i < sizeof reducers / sizeof reducers[0] && strcmp(reducers[i].op, n->op) != 0)
		i++;
	BASE_ASSERT(i < sizeof reducers / sizeof reducers[0]);
	struct reduce_state *s = base_alloc(sizeof *s);
	if (!s)
		return rt_node_nomem(n, err, "kernel state");
	s->kind = reducers[i].kind;
	s->axes_input = reducers[i].axes_input;
	s->keepdims = rt_attr_int(n, "keepdims", 1) != 0;
	s->noop = n->opset >= s->axes_input && rt_attr_int(n, "noop_with_empty_axes", 0) != 0;
	if (n->opset >= s->axes_input && n->nin >= 2 && n->in[1] >= 0 &&
	    rt_graph_dtype(g, n->in[1]) != BASE_DT_INT64) {
		base_free(s, sizeof *s);
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "axes must be int64");
	}
	rt_graph_set_dtype(g, n->out[0], rt_graph_dtype(g, n->in[0]));
	n->state = s;
	n->run = run_reduce;
	return 0;
}

/* ---- ArgMax / ArgMin ---------------------------------------------------------- */

static int run_arg(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *in = rt_input(x, n, 0);
	int64_t axis0 = rt_attr_int(n, "axis", 0);
	int keep = rt_attr_int(n, "keepdims", 1) != 0;
	int last = n->opset >= 12 && rt_attr_int(n, "select_last_index", 0) != 0;
	int ismax = strcmp(n->op, "ArgMax") == 0;
	int axis = rt_axis(axis0, in->rank);
	if (axis < 0)
		return rt_fail(x, n, STRATA_RUNTIME, "axis %lld out of range for rank %d",
		               (long long)axis0, in->rank);
	int64_t dim = in->dims[axis];
	if (dim == 0)
		return rt_fail(x, n, STRATA_RUNTIME, "cannot take %s over an empty axis", n->op);
	int64_t od[RT_MAX_RANK], outer = 1, inner = 1;
	int orank = 0;
	for (int i = 0; i < in->rank; i++) {
		if (i < axis)
			outer *= in->dims[i];
		if (i > axis)
			inner *= in->dims[i];
		if (i != axis)
			od[orank++] = in->dims[i];
		else if (keep)
			od[orank++] = 1;
	}
	struct rt_tensor *y;
	int rc = rt_output(x, n, 0, BASE_DT_INT64, orank, od, &y);
	if (rc)
		return rc;
	int dt = in->dtype;
	int64_t *out = y->data;
	for (int64_t o = 0; o < outer; o++) {
		for (int64_t j = 0; j < inner; j++) {
			int64_t base = o * dim * inner + j, best = 0;
			if (dt == BASE_DT_INT32 || dt == BASE_DT_INT64) {
				int64_t bv = iload(dt, in->data, base);
				for (int64_t i = 1; i < dim; i++) {
					int64_t v = iload(dt, in->data, base + i * inner);
					int better = ismax ? (v > bv || (last && v == bv))
					                   : (v < bv || (last && v == bv));
					if (better) {
						bv = v;
						best = i;
					}
				}
			} else {
				double bv = load(dt, in->data, base);
				for (int64_t i = 1; i < dim; i++) {
					double v = load(dt, in->data, base + i * inner);
					int better = ismax ? (v > bv || (last && v == bv))
					                   : (v < bv || (last && v == bv));
					if (better) {
						bv = v;
						best = i;
					}
				}
			}
			out[o * inner + j] = best;
		}
	}
	return 0;
}

static int init_arg(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	int rc = check_io(n, g, err);
	if (rc)
		return rc;
	rt_graph_set_dtype(g, n->out[0], BASE_DT_INT64);
	n->run = run_arg;
	return 0;
}

const struct rt_opdef rt_ops_reduce[] = {
	{"", "ReduceSum", 1, init_reduce, fini_state},
	{"", "ReduceMean", 1, init_reduce, fini_state},
	{"", "ReduceMax", 1, init_reduce, fini_state},
	{"", "ReduceMin", 1, init_reduce, fini_state},
	{"", "ReduceProd", 1, init_reduce, fini_state},
	{"", "ReduceL1", 1, init_reduce, fini_state},
	{"", "ReduceL2", 1, init_reduce, fini_state},
	{"", "ReduceLogSum", 1, init_reduce, fini_state},
	{"", "ReduceLogSumExp", 1, init_reduce, fini_state},
	{"", "ReduceSumSquare", 1, init_reduce, fini_state},
	{"", "ArgMax", 1, init_arg, NULL},
	{"", "ArgMin", 1, init_arg, NULL},
	{.op = NULL},
};
