/*
 * index.c: operators that address cells by computed indices or positions:
 * GatherElements, GatherND, ScatterElements (and its deprecated form
 * Scatter), ScatterND, Compress, NonZero, ReverseSequence, Pad, Trilu,
 * OneHot and EyeLike.
 *
 * They sit between the arithmetic kernels and move cells of any element type
 * by copying cells of the type's size, so a string cell (a char *) is copied
 * as a pointer: an output string tensor points at its source's bytes, which
 * live at least until the end of the run.  Only the scatter reductions and
 * the value-producing ops (OneHot's comparisons, EyeLike's ones) look inside
 * a cell.
 *
 * Indices and shapes come from tensors at run time and are hostile until
 * checked: every index is range-checked (negative ones count from the end
 * where ONNX allows it), every output size is overflow-checked, and a bad
 * one fails the run with STRATA_RUNTIME naming the node.  Attributes whose
 * meaning does not depend on shapes are checked once in init().
 */
#include <math.h>
#include <string.h>

#include "../kernel.h"

/* Upper bound on the cells of any output: keeps byte counts far from
 * overflow; rt_output() applies the real memory limit. */
#define MAX_CELLS ((int64_t)1 << 40)

/* ---- helpers ------------------------------------------------------------------ */

static int64_t tcount(const struct rt_tensor *t)
{
	return rt_cells(t->rank, t->dims, MAX_CELLS);
}

static void dense_strides(int r, const int64_t *dims, int64_t *st)
{
	int64_t s = 1;
	for (int i = r - 1; i >= 0; i--) {
		st[i] = s;
		s *= dims[i];
	}
}

/* Step pos through dims in row-major order; 0 after the last position. */
static int next_pos(int64_t *pos, const int64_t *dims, int r)
{
	for (int d = r - 1; d >= 0; d--) {
		if (++pos[d] < dims[d])
			return 1;
		pos[d] = 0;
	}
	return 0;
}

/* Cell i of an int32 or int64 index tensor. */
static int64_t index_at(const struct rt_tensor *t, int64_t i)
{
	if (t->dtype == BASE_DT_INT32)
		return ((const int32_t *)t->data)[i];
	return ((const int64_t *)t->data)[i];
}

/* A scalar (or one-cell) integer input as int64. */
static int scalar_int(struct rt_exec *x, const struct rt_node *n, const struct rt_tensor *t,
                      const char *what, int64_t *v)
{
	if (t->dtype != BASE_DT_INT64 && t->dtype != BASE_DT_INT32)
		return rt_fail(x, n, STRATA_RUNTIME, "%s must be int64 or int32, not %s", what,
		               base_dtype_name(t->dtype));
	if (tcount(t) != 1)
		return rt_fail(x, n, STRATA_RUNTIME, "%s must hold one value, not %lld", what,
		               (long long)tcount(t));
	*v = index_at(t, 0);
	return 0;
}

/* Input 0 required, of a type with a known cell size; every output that
 * has no type yet takes it. */
static int init_data(struct rt_node *n, struct rt_graph *g, struct strata_error *err, int nin)
{
	if (n->nin < nin)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "needs %d inputs, has %d", nin, n->nin);
	for (int i = 0; i < nin; i++)
		if (n->in[i] < 0)
			return rt_node_err(n, err, STRATA_INVALID_GRAPH, "input %d is missing", i);
	if (n->nout < 1 || n->out[0] < 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "missing output");
	int dt = rt_graph_dtype(g, n->in[0]);
	if (base_dtype_size(dt) == 0)
		return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED, "%s (opset %d): element type %s",
		                   n->op, n->opset, base_dtype_name(dt));
	rt_graph_set_dtype(g, n->out[0], dt);
	return 0;
}

/* Input i, when present, must be int32 or int64. */
static int need_index(struct rt_node *n, struct rt_graph *g, struct strata_error *err, int i,
                      const char *what)
{
	if (n->nin <= i || n->in[i] < 0)
		return 0;
	int dt = rt_graph_dtype(g, n->in[i]);
	if (dt != BASE_DT_INT64 && dt != BASE_DT_INT32)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "%s must be int64 or int32, not %s",
		                   what, base_dtype_name(dt));
	return 0;
}

/* Output 0 with in's shape and a copy of its cells. */
static int copy_input(struct rt_exec *x, const struct rt_node *n, const struct rt_tensor *in,
                      struct rt_tensor **y)
{
	int rc = rt_output(x, n, 0, in->dtype, in->rank, in->dims, y);
	if (rc)
		return rc;
	size_t bytes = (size_t)tcount(in) * base_dtype_size(in->dtype);
	if (bytes && (*y)->data != in->data)
		memcpy((*y)->data, in->data, bytes);
	return 0;
}

/* Normalize index k into [0, dim) (negative counts from the end); -1 when out of range. */
static int64_t wrap_index(int64_t k, int64_t dim)
{
	if (k < 0)
		k += dim;
	return k >= 0 && k < dim ? k : -1;
}

/* ---- scatter reductions --------------------------------------------------------- */

enum { RED_NONE, RED_ADD, RED_MUL, RED_MAX, RED_MIN };

typedef void reduce_fn(void *dst, const void *src, int red);

/* Integer sums and products wrap around (computed in the unsigned type U, so
 * hostile values cannot reach signed overflow). */
#define DEFINE_REDUCE_INT(name, T, U)                                                     \
	static void name(void *dst, const void *src, int red)                            \
	{                                                                                \
		T a, b;                                                                  \
		memcpy(&a, dst, sizeof a);                                               \
		memcpy(&b, src, sizeof b);                                               \
		switch (red) {                                                           \
		case RED_ADD: a = (T)((U)a + (U)b); break;                               \
		case RED_MUL: a = (T)((U)a * (U)b); break;                               \
		case RED_MAX: a = b > a ? b : a; break;                                  \
		case RED_MIN: a = b < a ? b : a; break;                                  \
		default: a = b; break;                                                   \
		}                                                                        \
		memcpy(dst, &a, sizeof a);                                               \
	}

#define DEFINE_REDUCE_FLT(name, T)                                                        \
	static void name(void *dst, const void *src, int red)                            \
	{                                                                                \
		T a, b;                                                                  \
		memcpy(&a, dst, sizeof a);                                               \
		memcpy(&b, src, sizeof b);                                               \
		switch (red) {                                                           \
		case RED_ADD: a = a + b; break;                                          \
		case RED_MUL: a = a * b; break;                                          \
		case RED_MAX: a = b > a ? b : a; break;                                  \
		case RED_MIN: a = b < a ? b : a; break;                                  \
		default: a = b; break;                                                   \
		}                                                                        \
		memcpy(dst, &a, sizeof a);                                               \
	}

DEFINE_REDUCE_INT(reduce_i8, int8_t, uint32_t)
DEFINE_REDUCE_INT(reduce_u8, uint8_t, uint32_t)
DEFINE_REDUCE_INT(reduce_i16, int16_t, uint32_t)
DEFINE_REDUCE_INT(reduce_u16, uint16_t, uint32_t)
DEFINE_REDUCE_INT(reduce_i32, int32_t, uint32_t)
DEFINE_REDUCE_INT(reduce_u32, uint32_t, uint32_t)
DEFINE_REDUCE_INT(reduce_i64, int64_t, uint64_t)
DEFINE_REDUCE_INT(reduce_u64, uint64_t, uint64_t)
DEFINE_REDUCE_FLT(reduce_f32, float)
DEFINE_REDUCE_FLT(reduce_f64, double)

/* Half-precision cells reduce in float and round back. */
static void reduce_half(void *dst, const void *src, int red, int bf)
{
	uint16_t a, b;
	memcpy(&a, dst, 2);
	memcpy(&b, src, 2);
	float fa = bf ? base_bf16_to_f32(a) : base_f16_to_f32(a);
	float fb = bf ? base_bf16_to_f32(b) : base_f16_to_f32(b);
	reduce_f32(&fa, &fb, red);
	a = bf ? base_f32_to_bf16(fa) : base_f32_to_f16(fa);
	memcpy(dst, &a, 2);
}

static void reduce_f16(void *dst, const void *src, int red)
{
	reduce_half(dst, src, red, 0);
}

static void reduce_bf16(void *dst, const void *src, int red)
{
	reduce_half(dst, src, red, 1);
}

static reduce_fn *pick_reduce(int dt)
{
	switch (dt) {
	case BASE_DT_INT8: return reduce_i8;
	case BASE_DT_UINT8: return reduce_u8;
	case BASE_DT_INT16: return reduce_i16;
	case BASE_DT_UINT16: return reduce_u16;
	case BASE_DT_INT32: return reduce_i32;
	case BASE_DT_UINT32: return reduce_u32;
	case BASE_DT_INT64: return reduce_i64;
	case BASE_DT_UINT64: return reduce_u64;
	case BASE_DT_FLOAT: return reduce_f32;
	case BASE_DT_DOUBLE: return reduce_f64;
	case BASE_DT_FLOAT16: return reduce_f16;
	case BASE_DT_BFLOAT16: return reduce_bf16;
	}
	return NULL;
}

/* The reduction attribute (opset 16 on; max and min from 18) as RED_*, kept
 * in n->state as a small integer. */
static int init_reduction(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	const char *s = rt_attr_string(n, "reduction", "none");
	static const char *const names[] = {"none", "add", "mul", "max", "min"};
	int red = -1;
	for (int i = 0; i < 5; i++)
		if (strcmp(s, names[i]) == 0)
			red = i;
	if (red < 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "unknown reduction \"%s\"", s);
	if (red != RED_NONE && n->opset < (red >= RED_MAX ? 18 : 16))
		return rt_node_err(n, err, STRATA_INVALID_GRAPH,
		                   "reduction \"%s\" does not exist at opset %d", s, n->opset);
	int dt = rt_graph_dtype(g, n->in[0]);
	if (red != RED_NONE && !pick_reduce(dt))
		return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED,
		                   "%s (opset %d): reduction \"%s\" on element type %s", n->op,
		                   n->opset, s, base_dtype_name(dt));
	n->state = (void *)(intptr_t)red;
	return 0;
}

/* ---- GatherElements, ScatterElements, Scatter ------------------------------------- */

/* Checks shared by GatherElements and ScatterElements: indices of data's
 * rank, no larger than data off the axis; *axis normalized. */
static int check_elements(struct rt_exec *x, const struct rt_node *n, const struct rt_tensor *data,
                          const struct rt_tensor *ind, int *axis)
{
	int r = data->rank;
	int64_t a0 = rt_attr_int(n, "axis", 0);
	*axis = rt_axis(a0, r);
	if (r < 1 || *axis < 0)
		return rt_fail(x, n, STRATA_RUNTIME, "axis %lld out of range for rank %d",
		               (long long)a0, r);
	if (ind->rank != r)
		return rt_fail(x, n, STRATA_RUNTIME, "indices have rank %d, data rank %d", ind->rank,
		               r);
	for (int d = 0; d < r; d++)
		if (d != *axis && ind->dims[d] > data->dims[d])
			return rt_fail(x, n, STRATA_RUNTIME,
			               "indices dimension %d is %lld, larger than data's %lld", d,
			               (long long)ind->dims[d], (long long)data->dims[d]);
	return 0;
}

/* Offset in data of the cell that position pos of indices (holding k) names. */
static int elem_offset(struct rt_exec *x, const struct rt_node *n, const struct rt_tensor *data,
                       const int64_t *dst, const int64_t *pos, int axis, int64_t k,
                       int64_t *off)
{
	int64_t kk = wrap_index(k, data->dims[axis]);
	if (kk < 0)
		return rt_fail(x, n, STRATA_RUNTIME, "index %lld out of range [-%lld, %lld)",
		               (long long)k, (long long)data->dims[axis],
		               (long long)data->dims[axis]);
	int64_t o = 0;
	for (int d = 0; d < data->rank; d++)
		o += (d == axis ? kk : pos[d]) * dst[d];
	*off = o;
	return 0;
}

static int run_gather_elements(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *data = rt_input(x, n, 0), *ind = rt_input(x, n, 1);
	int axis, rc = check_elements(x, n, data, ind, &axis);
	if (rc)
		return rc;
	struct rt_tensor *y;
	if ((rc = rt_output(x, n, 0, data->dtype, ind->rank, ind->dims, &y)))
		return rc;
	int64_t cnt = tcount(ind);
	if (cnt == 0)
		return 0;
	size_t es = base_dtype_size(data->dtype);
	int64_t dst[RT_MAX_RANK], pos[RT_MAX_RANK] = {0};
	dense_strides(data->rank, data->dims, dst);
	char *out = y->data;
	const char *src = data->data;
	for (int64_t j = 0; j < cnt; j++) {
		int64_t off;
		if ((rc = elem_offset(x, n, data, dst, pos, axis, index_at(ind, j), &off)))
			return rc;
		memcpy(out + (size_t)j * es, src + (size_t)off * es, es);
		next_pos(pos, ind->dims, ind->rank);
	}
	return 0;
}

static int init_gather_elements(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	int rc = init_data(n, g, err, 2);
	if (rc || (rc = need_index(n, g, err, 1, "indices")))
		return rc;
	n->run = run_gather_elements;
	return 0;
}

static int run_scatter_elements(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *data = rt_input(x, n, 0), *ind = rt_input(x, n, 1);
	const struct rt_tensor *upd = rt_input(x, n, 2);
	int axis, rc = check_elements(x, n, data, ind, &axis);
	if (rc)
		return rc;
	if (upd->dtype != data->dtype || upd->rank != ind->rank)
		return rt_fail(x, n, STRATA_RUNTIME, "updates must have data's type and indices' shape");
	for (int d = 0; d < ind->rank; d++)
		if (upd->dims[d] != ind->dims[d])
			return rt_fail(x, n, STRATA_RUNTIME,
			               "updates dimension %d is %lld, indices' is %lld", d,
			               (long long)upd->dims[d], (long long)ind->dims[d]);
	struct rt_tensor *y;
	if ((rc = copy_input(x, n, data, &y)))
		return rc;
	int red = (int)(intptr_t)n->state;
	reduce_fn *f = red == RED_NONE ? NULL : pick_reduce(data->dtype);
	size_t es = base_dtype_size(data->dtype);
	int64_t cnt = tcount(ind);
	int64_t dst[RT_MAX_RANK], pos[RT_MAX_RANK] = {0};
	dense_strides(data->rank, data->dims, dst);
	char *out = y->data;
	const char *u = upd->data;
	for (int64_t j = 0; j < cnt; j++) {
		int64_t off;
		if ((rc = elem_offset(x, n, data, dst, pos, axis, index_at(ind, j), &off)))
			return rc;
		if (f)
			f(out + (size_t)off * es, u + (size_t)j * es, red);
		else
			memcpy(out + (size_t)off * es, u + (size_t)j * es, es);
		next_pos(pos, ind->dims, ind->rank);
	}
	return 0;
}

static int init_scatter_elements(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	int rc = init_data(n, g, err, 3);
	if (rc || (rc = need_index(n, g, err, 1, "indices")) || (rc = init_reduction(n, g, err)))
		return rc;
	if (rt_graph_dtype(g, n->in[2]) != rt_graph_dtype(g, n->in[0]))
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "updates must have data's type");
	n->run = run_scatter_elements;
	return 0;
}

/* ---- GatherND, ScatterND ---------------------------------------------------------- */

/* The geometry of an ND index: tuples of `last` coordinates into data, after
 * `b` batch dims shared by data and indices. */
struct nd {
	int b, last;
	int64_t batches;  /* product of the batch dims */
	int64_t tuples;   /* index tuples per batch */
	int64_t slice;    /* cells of each addressed slice */
	int64_t block;    /* cells of data per batch */
	int64_t dst[RT_MAX_RANK];
};

static int nd_geometry(struct rt_exec *x, const struct rt_node *n, const struct rt_tensor *data,
                       const struct rt_tensor *ind, int b, struct nd *g)
{
	int r = data->rank, q = ind->rank;
	if (r < 1 || q < 1)
		return rt_fail(x, n, STRATA_RUNTIME, "data and indices need rank >= 1 (have %d, %d)",
		               r, q);
	if (b < 0 || b >= q || b >= r)
		return rt_fail(x, n, STRATA_RUNTIME, "batch_dims %d out of range for ranks %d, %d", b,
		               r, q);
	int64_t last = ind->dims[q - 1];
	if (last < 1 || last > r - b)
		return rt_fail(x, n, STRATA_RUNTIME,
		               "indices' last dimension is %lld, must be in [1, %d]", (long long)last,
		               r - b);
	for (int d = 0; d < b; d++)
		if (ind->dims[d] != data->dims[d])
			return rt_fail(x, n, STRATA_RUNTIME,
			               "batch dimension %d differs: data %lld, indices %lld", d,
			               (long long)data->dims[d], (long long)ind->dims[d]);
	g->b = b;
	g->last = (int)last;
	g->batches = rt_cells(b, data->dims, MAX_CELLS);
	g->tuples = rt_cells(q - 1 - b, ind->dims + b, MAX_CELLS);
	g->slice = rt_cells(r - b - g->last, data->dims + b + g->last, MAX_CELLS);
	g->block = rt_cells(r - b, data->dims + b, MAX_CELLS);
	dense_strides(r, data->dims, g->dst);
	return 0;
}

/* Offset (in cells) of the slice that tuple t of batch bi addresses. */
static int nd_offset(struct rt_exec *x, const struct rt_node *n, const struct rt_tensor *data,
                     const struct rt_tensor *ind, const struct nd *g, int64_t bi, int64_t t,
                     int64_t *off)
{
	int64_t base = (bi * g->tuples + t) * g->last;
	int64_t o = bi * g->block;
	for (int k = 0; k < g->last; k++) {
		int64_t v = index_at(ind, base + k);
		int64_t dim = data->dims[g->b + k];
		int64_t kk = wrap_index(v, dim);
		if (kk < 0)
			return rt_fail(x, n, STRATA_RUNTIME,
			               "index %lld out of range for dimension %d of size %lld",
			               (long long)v, g->b + k, (long long)dim);
		o += kk * g->dst[g->b + k];
	}
	*off = o;
	return 0;
}

static int run_gather_nd(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *data = rt_input(x, n, 0), *ind = rt_input(x, n, 1);
	int64_t b = rt_attr_int(n, "batch_dims", 0);
	if (b < 0 || b > RT_MAX_RANK)
		return rt_fail(x, n, STRATA_RUNTIME, "batch_dims %lld out of range", (long long)b);
	struct nd g;
	int rc = nd_geometry(x, n, data, ind, (int)b, &g);
	if (rc)
		return rc;
	int64_t od[2 * RT_MAX_RANK];
	int orank = 0;
	for (int d = 0; d < ind->rank - 1; d++)
		od[orank++] = ind->dims[d];
	for (int d = g.b + g.last; d < data->rank; d++)
		od[orank++] = data->dims[d];
	if (orank > RT_MAX_RANK)
		return rt_fail(x, n, STRATA_LIMIT, "output rank %d exceeds %d", orank, RT_MAX_RANK);
	if (rt_cells(orank, od, MAX_CELLS) < 0)
		return rt_fail(x, n, STRATA_LIMIT, "output is too large");
	struct rt_tensor *y;
	if ((rc = rt_output(x, n, 0, data->dtype, orank, od, &y)))
		return rc;
	size_t es = base_dtype_size(data->dtype), sb = (size_t)g.slice * es;
	char *out = y->data;
	for (int64_t bi = 0; bi < g.batches; bi++)
		for (int64_t t = 0; t < g.tuples; t++) {
			int64_t off;
			if ((rc = nd_offset(x, n, data, ind, &g, bi, t, &off)))
				return rc;
			if (sb)
				memcpy(out, (const char *)data->data + (size_t)off * es, sb);
			out += sb;
		}
	return 0;
}

static int init_gather_nd(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	int rc = init_data(n, g, err, 2);
	if (rc || (rc = need_index(n, g, err, 1, "indices")))
		return rc;
	if (rt_attr_int(n, "batch_dims", 0) < 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "batch_dims is negative");
	n->run = run_gather_nd;
	return 0;
}

static int run_scatter_nd(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *data = rt_input(x, n, 0), *ind = rt_input(x, n, 1);
	const struct rt_tensor *upd = rt_input(x, n, 2);
	struct nd g;
	int rc = nd_geometry(x, n, data, ind, 0, &g);
	if (rc)
		return rc;
	/* updates' shape is indices.shape[:-1] + data.shape[last:] */
	int urank = ind->rank - 1 + data->rank - g.last;
	int ok = upd->dtype == data->dtype && upd->rank == urank;
	for (int d = 0; ok && d < urank; d++) {
		int64_t want = d < ind->rank - 1 ? ind->dims[d] : data->dims[d - (ind->rank - 1) + g.last];
		ok = upd->dims[d] == want;
	}
	if (!ok)
		return rt_fail(x, n, STRATA_RUNTIME,
		               "updates must have data's type and shape indices[:-1] + data[%d:]",
		               g.last);
	struct rt_tensor *y;
	if ((rc = copy_input(x, n, data, &y)))
		return rc;
	int red = (int)(intptr_t)n->state;
	reduce_fn *f = red == RED_NONE ? NULL : pick_reduce(data->dtype);
	size_t es = base_dtype_size(data->dtype);
	char *out = y->data;
	const char *u = upd->data;
	for (int64_t t = 0; t < g.tuples; t++) {
		int64_t off;
		if ((rc = nd_offset(x, n, data, ind, &g, 0, t, &off)))
			return rc;
		char *d = out + (size_t)off * es;
		const char *s = u + (size_t)(t * g.slice) * es;
		if (!f) {
			memcpy(d, s, (size_t)g.slice * es);
			continue;
		}
		for (int64_t k = 0; k < g.slice; k++)
			f(d + (size_t)k * es, s + (size_t)k * es, red);
	}
	return 0;
}

static int init_scatter_nd(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	int rc = init_data(n, g, err, 3);
	if (rc || (rc = need_index(n, g, err, 1, "indices")) || (rc = init_reduction(n, g, err)))
		return rc;
	if (rt_graph_dtype(g, n->in[1]) != BASE_DT_INT64)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "indices must be int64");
	if (rt_graph_dtype(g, n->in[2]) != rt_graph_dtype(g, n->in[0]))
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "updates must have data's type");
	n->run = run_scatter_nd;
	return 0;
}

/* ---- Compress --------------------------------------------------------------------- */

static int run_compress(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *in = rt_input(x, n, 0), *cond = rt_input(x, n, 1);
	if (cond->rank != 1)
		return rt_fail(x, n, STRATA_RUNTIME, "condition must be 1-D, not rank %d", cond->rank);
	const struct rt_attr *aa = rt_attr_find(n, "axis");
	int r = in->rank, axis = -1;
	int64_t outer = 1, dim, inner = 1;
	if (aa) {
		axis = rt_axis(aa->i, r);
		if (axis < 0)
			return rt_fail(x, n, STRATA_RUNTIME, "axis %lld out of range for rank %d",
			               (long long)aa->i, r);
		for (int d = 0; d < r; d++) {
			if (d < axis)
				outer *= in->dims[d];
			else if (d > axis)
				inner *= in->dims[d];
		}
		dim = in->dims[axis];
	} else {
		dim = tcount(in);
	}
	/* A shorter condition truncates the axis (numpy's rule); a longer
	 * one may only add false entries. */
	const uint8_t *c = cond->data;
	int64_t clen = cond->dims[0], keep = 0;
	for (int64_t i = 0; i < clen; i++) {
		if (!c[i])
			continue;
		if (i >= dim)
			return rt_fail(x, n, STRATA_RUNTIME,
			               "condition selects entry %lld of an axis of %lld", (long long)i,
			               (long long)dim);
		keep++;
	}
	int64_t od[RT_MAX_RANK];
	int orank = aa ? r : 1;
	if (aa) {
		memcpy(od, in->dims, sizeof(int64_t) * (size_t)r);
		od[axis] = keep;
	} else {
		od[0] = keep;
	}
	struct rt_tensor *y;
	int rc = rt_output(x, n, 0, in->dtype, orank, od, &y);
	if (rc)
		return rc;
	size_t es = base_dtype_size(in->dtype), sb = (size_t)inner * es;
	char *out = y->data;
	const char *src = in->data;
	for (int64_t o = 0; o < outer; o++)
		for (int64_t i = 0; i < clen && i < dim; i++)
			if (c[i]) {
				memcpy(out, src + (size_t)((o * dim + i) * inner) * es, sb);
				out += sb;
			}
	return 0;
}

static int init_compress(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	int rc = init_data(n, g, err, 2);
	if (rc)
		return rc;
	if (rt_graph_dtype(g, n->in[1]) != BASE_DT_BOOL)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "condition must be bool, not %s",
		                   base_dtype_name(rt_graph_dtype(g, n->in[1])));
	n->run = run_compress;
	return 0;
}

/* ---- NonZero ---------------------------------------------------------------------- */

static int run_nonzero(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *in = rt_input(x, n, 0);
	int64_t cnt = tcount(in), nz = 0;
	/* NaN counts as non-zero, -0.0 as zero, as in numpy. */
	for (int64_t i = 0; i < cnt; i++)
		nz += base_load_double(in->dtype, in->data, (size_t)i) != 0;
	/* A scalar is treated as a one-cell vector, as numpy does. */
	int r = in->rank ? in->rank : 1;
	int64_t dims1[RT_MAX_RANK];
	const int64_t *dims = in->dims;
	if (in->rank == 0) {
		dims1[0] = 1;
		dims = dims1;
	}
	int64_t od[2] = {r, nz};
	struct rt_tensor *y;
	int rc = rt_output(x, n, 0, BASE_DT_INT64, 2, od, &y);
	if (rc)
		return rc;
	int64_t *out = y->data, pos[RT_MAX_RANK] = {0}, k = 0;
	for (int64_t i = 0; i < cnt; i++) {
		if (base_load_double(in->dtype, in->data, (size_t)i) != 0) {
			for (int d = 0; d < r; d++)
				out[d * nz + k] = pos[d];
			k++;
		}
		next_pos(pos, dims, r);
	}
	return 0;
}

static int init_nonzero(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	if (n->nin < 1 || n->in[0] < 0 || n->nout < 1 || n->out[0] < 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "needs an input and an output");
	int dt = rt_graph_dtype(g, n->in[0]);
	if (dt == BASE_DT_STRING || dt == BASE_DT_COMPLEX64 || dt == BASE_DT_COMPLEX128 ||
	    base_dtype_size(dt) == 0)
		return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED, "NonZero (opset %d): element type %s",
		                   n->opset, base_dtype_name(dt));
	rt_graph_set_dtype(g, n->out[0], BASE_DT_INT64);
	n->run = run_nonzero;
	return 0;
}

/* ---- ReverseSequence -------------------------------------------------------------- */

static int run_reverse_sequence(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *in = rt_input(x, n, 0), *lens = rt_input(x, n, 1);
	int r = in->rank;
	int ba = (int)rt_attr_int(n, "batch_axis", 1), ta = (int)rt_attr_int(n, "time_axis", 0);
	if (r < 2)
		return rt_fail(x, n, STRATA_RUNTIME, "input must have rank >= 2, not %d", r);
	if (lens->rank != 1 || lens->dims[0] != in->dims[ba])
		return rt_fail(x, n, STRATA_RUNTIME,
		               "sequence_lens must be 1-D with one entry per batch (%lld)",
		               (long long)in->dims[ba]);
	int64_t T = in->dims[ta];
	for (int64_t b = 0; b < lens->dims[0]; b++) {
		int64_t l = index_at(lens, b);
		if (l < 0 || l > T)
			return rt_fail(x, n, STRATA_RUNTIME, "sequence_lens[%lld] = %lld outside [0, %lld]",
			               (long long)b, (long long)l, (long long)T);
	}
	struct rt_tensor *y;
	int rc = rt_output(x, n, 0, in->dtype, r, in->dims, &y);
	if (rc)
		return rc;
	int64_t cnt = tcount(in), st[RT_MAX_RANK], pos[RT_MAX_RANK] = {0};
	dense_strides(r, in->dims, st);
	size_t es = base_dtype_size(in->dtype);
	char *out = y->data;
	const char *src = in->data;
	for (int64_t i = 0; i < cnt; i++) {
		int64_t l = index_at(lens, pos[ba]), t = pos[ta], off = i;
		if (t < l)
			off += (l - 1 - 2 * t) * st[ta];
		memcpy(out + (size_t)i * es, src + (size_t)off * es, es);
		next_pos(pos, in->dims, r);
	}
	return 0;
}

static int init_reverse_sequence(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	int rc = init_data(n, g, err, 2);
	if (rc || (rc = need_index(n, g, err, 1, "sequence_lens")))
		return rc;
	int64_t ba = rt_attr_int(n, "batch_axis", 1), ta = rt_attr_int(n, "time_axis", 0);
	if ((ba != 0 && ba != 1) || (ta != 0 && ta != 1) || ba == ta)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH,
		                   "batch_axis %lld and time_axis %lld must be 0 and 1",
		                   (long long)ba, (long long)ta);
	n->run = run_reverse_sequence;
	return 0;
}

/* ---- Pad -------------------------------------------------------------------------- */

enum { PAD_CONSTANT, PAD_REFLECT, PAD_EDGE, PAD_WRAP };

/* Source coordinate of output coordinate o along an axis of size d padded
 * by pb in front; -1 for a constant cell.  d > 0 unless mode is constant. */
static int64_t pad_source(int64_t o, int64_t pb, int64_t d, int mode)
{
	int64_t i = o - pb;
	if (i >= 0 && i < d)
		return i;
	switch (mode) {
	case PAD_EDGE:
		return i < 0 ? 0 : d - 1;
	case PAD_WRAP:
		return ((i % d) + d) % d;
	case PAD_REFLECT: {
		if (d == 1)
			return 0;
		/* Reflection without repeating the edge is periodic in 2(d-1). */
		int64_t p = 2 * (d - 1), m = ((i % p) + p) % p;
		return m < d ? m : p - m;
	}
	}
	return -1;
}

/* The pads of the node for a tensor of rank r, laid out [begin..., end...]
 * over all r axes. */
static int pad_amounts(struct rt_exec *x, const struct rt_node *n, int r, int64_t *pads)
{
	int64_t raw[2 * RT_MAX_RANK], axes[RT_MAX_RANK];
	int np, na = r;
	if (n->opset < 11) {
		size_t c;
		const int64_t *p = rt_attr_ints(n, n->opset < 2 ? "paddings" : "pads", &c);
		if (c > 2 * RT_MAX_RANK)
			return rt_fail(x, n, STRATA_RUNTIME, "pads has %zu entries", c);
		if (c)
			memcpy(raw, p, c * sizeof *p);
		np = (int)c;
	} else {
		const struct rt_tensor *pt = rt_input(x, n, 1);
		if (!pt)
			return rt_fail(x, n, STRATA_RUNTIME, "missing input pads");
		if (pt->rank > 1 || tcount(pt) > 2 * RT_MAX_RANK ||
		    (pt->dtype != BASE_DT_INT64 && pt->dtype != BASE_DT_INT32))
			return rt_fail(x, n, STRATA_RUNTIME, "pads must be a short 1-D int64 tensor");
		np = rt_tensor_to_ints(pt, raw, 2 * RT_MAX_RANK);
		const struct rt_tensor *at = n->opset >= 18 ? rt_input(x, n, 3) : NULL;
		if (at) {
			na = at->rank <= 1 ? rt_tensor_to_ints(at, axes, RT_MAX_RANK) : -1;
			if (na < 0)
				return rt_fail(x, n, STRATA_RUNTIME, "axes must be a short 1-D int tensor");
		}
	}
	if (np != 2 * na)
		return rt_fail(x, n, STRATA_RUNTIME, "pads has %d entries, expected %d", np, 2 * na);
	if (na == r && (n->opset < 18 || !rt_input(x, n, 3))) {
		memcpy(pads, raw, sizeof(int64_t) * 2 * (size_t)r);
		return 0;
	}
	memset(pads, 0, sizeof(int64_t) * 2 * (size_t)r);
	int seen[RT_MAX_RANK] = {0};
	for (int k = 0; k < na; k++) {
		int a = rt_axis(axes[k], r);
		if (a < 0 || seen[a])
			return rt_fail(x, n, STRATA_RUNTIME, "axis %lld out of range or repeated",
			               (long long)axes[k]);
		seen[a] = 1;
		pads[a] = raw[k];
		pads[r + a] = raw[na + k];
	}
	return 0;
}

static int run_pad(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *in = rt_input(x, n, 0);
	int r = in->rank, mode = (int)(intptr_t)n->state, rc;
	int64_t pads[2 * RT_MAX_RANK], od[RT_MAX_RANK];
	if ((rc = pad_amounts(x, n, r, pads)))
		return rc;
	const int64_t lim = (int64_t)1 << 40;
	for (int d = 0; d < r; d++) {
		if (pads[d] < -lim || pads[d] > lim || pads[r + d] < -lim || pads[r + d] > lim)
			return rt_fail(x, n, STRATA_RUNTIME, "pad of axis %d is out of range", d);
		od[d] = in->dims[d] + pads[d] + pads[r + d];
		if (od[d] < 0)
			return rt_fail(x, n, STRATA_RUNTIME, "pads make axis %d negative (%lld)", d,
			               (long long)od[d]);
		if (mode != PAD_CONSTANT && in->dims[d] == 0 && od[d] > 0)
			return rt_fail(x, n, STRATA_RUNTIME, "cannot pad empty axis %d in this mode", d);
	}
	int64_t ocnt = rt_cells(r, od, MAX_CELLS);
	if (ocnt < 0)
		return rt_fail(x, n, STRATA_LIMIT, "output is too large");
	size_t es = base_dtype_size(in->dtype);
	/* The constant cell, in the tensor's own type. */
	char cval[16];
	memset(cval, 0, sizeof cval);
	if (in->dtype == BASE_DT_STRING) {
		char *e = rt_string(x, "", 0);
		if (!e)
			return rt_nomem(x, n, "kernel scratch");
		memcpy(cval, &e, sizeof e);
	}
	if (n->opset < 11) {
		float v = rt_attr_float(n, "value", 0.0f);
		if (in->dtype != BASE_DT_STRING)
			base_store_double(in->dtype, cval, 0, v);
	} else {
		const struct rt_tensor *cv = rt_input(x, n, 2);
		if (cv) {
			if (cv->dtype != in->dtype || tcount(cv) != 1)
				return rt_fail(x, n, STRATA_RUNTIME,
				               "constant_value must be one cell of the input's type");
			if (es <= sizeof cval)
				memcpy(cval, cv->data, es);
		}
	}
	struct rt_tensor *y;
	if ((rc = rt_output(x, n, 0, in->dtype, r, od, &y)))
		return rc;
	if (ocnt == 0)
		return 0;
	if (r == 0) {
		memcpy(y->data, in->data, es);
		return 0;
	}
	/* One source-coordinate map per axis, then walk the output rows. */
	int64_t total = 0;
	for (int d = 0; d < r; d++)
		total += od[d];
	int64_t *map = rt_scratch_or_fail(x, n, (size_t)total * sizeof *map), *m[RT_MAX_RANK];
	if (!map)
		return STRATA_NOMEM;
	int64_t st[RT_MAX_RANK];
	dense_strides(r, in->dims, st);
	int64_t at = 0;
	for (int d = 0; d < r; at += od[d], d++) {
		m[d] = map + at;
		for (int64_t o = 0; o < od[d]; o++)
			m[d][o] = pad_source(o, pads[d], in->dims[d], mode);
	}
	int64_t pos[RT_MAX_RANK] = {0}, inner = od[r - 1];
	char *out = y->data;
	const char *src = in->data;
	do {
		int64_t base = 0;
		int outside = 0;
		for (int d = 0; d < r - 1; d++) {
			int64_t s = m[d][pos[d]];
			if (s < 0)
				outside = 1;
			base += s * st[d];
		}
		for (int64_t j = 0; j < inner; j++, out += es) {
			int64_t s = m[r - 1][j];
			if (outside || s < 0)
				memcpy(out, cval, es);
			else
				memcpy(out, src + (size_t)(base + s) * es, es);
		}
	} while (next_pos(pos, od, r - 1));
	return 0;
}

static int init_pad(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	int rc = init_data(n, g, err, n->opset < 11 ? 1 : 2);
	if (rc || (rc = need_index(n, g, err, 1, "pads")) || (rc = need_index(n, g, err, 3, "axes")))
		return rc;
	const char *s = rt_attr_string(n, "mode", "constant");
	static const char *const modes[] = {"constant", "reflect", "edge", "wrap"};
	int mode = -1;
	for (int i = 0; i < 4; i++)
		if (strcmp(s, modes[i]) == 0)
			mode = i;
	if (mode < 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "unknown mode \"%s\"", s);
	int dt = rt_graph_dtype(g, n->in[0]);
	if (n->opset < 11 && (dt == BASE_DT_STRING || dt == BASE_DT_COMPLEX64 ||
	                      dt == BASE_DT_COMPLEX128))
		return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED, "Pad (opset %d): element type %s",
		                   n->opset, base_dtype_name(dt));
	if (n->nin > 2 && n->in[2] >= 0 && rt_graph_dtype(g, n->in[2]) != dt)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "constant_value must be %s",
		                   base_dtype_name(dt));
	n->state = (void *)(intptr_t)mode;
	n->run = run_pad;
	return 0;
}

/* ---- Trilu ------------------------------------------------------------------------ */

static int run_trilu(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *in = rt_input(x, n, 0), *kt = rt_input(x, n, 1);
	int r = in->rank, rc;
	if (r < 2)
		return rt_fail(x, n, STRATA_RUNTIME, "input must have rank >= 2, not %d", r);
	int64_t k = 0;
	if (kt && (rc = scalar_int(x, n, kt, "k", &k)))
		return rc;
	/* Any |k| beyond the matrix keeps all or nothing; clamping keeps j - i - k
	 * far from overflow. */
	const int64_t lim = (int64_t)1 << 41;
	k = k < -lim ? -lim : k > lim ? lim : k;
	struct rt_tensor *y;
	if ((rc = copy_input(x, n, in, &y)))
		return rc;
	size_t es = base_dtype_size(in->dtype);
	char zero[16];
	memset(zero, 0, sizeof zero);
	if (in->dtype == BASE_DT_STRING) {
		char *e = rt_string(x, "", 0);
		if (!e)
			return rt_nomem(x, n, "kernel scratch");
		memcpy(zero, &e, sizeof e);
	}
	int upper = rt_attr_int(n, "upper", 1) != 0;
	int64_t R = in->dims[r - 2], C = in->dims[r - 1];
	int64_t mats = rt_cells(r - 2, in->dims, MAX_CELLS);
	char *out = y->data;
	for (int64_t b = 0; b < mats; b++)
		for (int64_t i = 0; i < R; i++)
			for (int64_t j = 0; j < C; j++) {
				int keep = upper ? j - i >= k : j - i <= k;
				if (!keep)
					memcpy(out + (size_t)((b * R + i) * C + j) * es, zero, es);
			}
	return 0;
}

static int init_trilu(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	int rc = init_data(n, g, err, 1);
	if (rc || (rc = need_index(n, g, err, 1, "k")))
		return rc;
	if (base_dtype_size(rt_graph_dtype(g, n->in[0])) > 16)
		return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED, "Trilu (opset %d): element type %s",
		                   n->opset, base_dtype_name(rt_graph_dtype(g, n->in[0])));
	n->run = run_trilu;
	return 0;
}

/* ---- OneHot ----------------------------------------------------------------------- */

static int run_onehot(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *ind = rt_input(x, n, 0), *dt = rt_input(x, n, 1);
	const struct rt_tensor *vals = rt_input(x, n, 2);
	int r = ind->rank;
	if (tcount(dt) != 1)
		return rt_fail(x, n, STRATA_RUNTIME, "depth must hold one value");
	if (tcount(vals) != 2)
		return rt_fail(x, n, STRATA_RUNTIME, "values must hold two cells [off, on]");
	double dd = base_load_double(dt->dtype, dt->data, 0);
	if (!(dd >= 1 && dd <= (double)MAX_CELLS))
		return rt_fail(x, n, STRATA_RUNTIME, "depth %g out of range", dd);
	int64_t depth = (int64_t)dd;
	int64_t a0 = rt_attr_int(n, "axis", -1);
	int axis = rt_axis(a0, r + 1);
	if (axis < 0)
		return rt_fail(x, n, STRATA_RUNTIME, "axis %lld out of range for rank %d",
		               (long long)a0, r + 1);
	int64_t od[RT_MAX_RANK + 1];
	for (int d = 0, s = 0; d <= r; d++)
		od[d] = d == axis ? depth : ind->dims[s++];
	if (r + 1 > RT_MAX_RANK || rt_cells(r + 1, od, MAX_CELLS) < 0)
		return rt_fail(x, n, STRATA_LIMIT, "output is too large");
	struct rt_tensor *y;
	int rc = rt_output(x, n, 0, vals->dtype, r + 1, od, &y);
	if (rc)
		return rc;
	size_t es = base_dtype_size(vals->dtype);
	const char *off = vals->data, *on = off + es;
	int64_t outer = rt_cells(axis, ind->dims, MAX_CELLS), inner = rt_cells(r - axis, ind->dims + axis, MAX_CELLS);
	char *out = y->data;
	for (int64_t o = 0; o < outer; o++)
		for (int64_t d = 0; d < depth; d++)
			for (int64_t i = 0; i < inner; i++, out += es)
				memcpy(out, off, es);
	out = y->data;
	for (int64_t o = 0; o < outer; o++)
		for (int64_t i = 0; i < inner; i++) {
			double v = base_load_double(ind->dtype, ind->data, (size_t)(o * inner + i));
			if (!(v > -(double)MAX_CELLS && v < (double)MAX_CELLS))
				continue;
			/* Negative indices count from the end; others off the axis stay "off". */
			int64_t k = (int64_t)v;
			if (k < 0)
				k += depth;
			if (k < 0 || k >= depth)
				continue;
			memcpy(out + (size_t)((o * depth + k) * inner + i) * es, on, es);
		}
	return 0;
}

static int init_onehot(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	if (n->nin < 3 || n->in[0] < 0 || n->in[1] < 0 || n->in[2] < 0 || n->nout < 1 ||
	    n->out[0] < 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "needs indices, depth and values");
	for (int i = 0; i < 2; i++) {
		int dt = rt_graph_dtype(g, n->in[i]);
		if (dt == BASE_DT_STRING || dt == BASE_DT_BOOL || dt == BASE_DT_COMPLEX64 ||
		    dt == BASE_DT_COMPLEX128 || base_dtype_size(dt) == 0)
			return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED,
			                   "OneHot (opset %d): %s of element type %s", n->opset,
			                   i ? "depth" : "indices", base_dtype_name(dt));
	}
	int vt = rt_graph_dtype(g, n->in[2]);
	if (base_dtype_size(vt) == 0)
		return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED, "OneHot (opset %d): values of type %s",
		                   n->opset, base_dtype_name(vt));
	rt_graph_set_dtype(g, n->out[0], vt);
	n->run = run_onehot;
	return 0;
}

/* ---- EyeLike ---------------------------------------------------------------------- */

static int run_eyelike(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *in = rt_input(x, n, 0);
	if (in->rank != 2)
		return rt_fail(x, n, STRATA_RUNTIME, "input must be 2-D, not rank %d", in->rank);
	int dt = (int)(intptr_t)n->state;
	struct rt_tensor *y;
	int rc = rt_output(x, n, 0, dt, 2, in->dims, &y);
	if (rc)
		return rc;
	int64_t R = in->dims[0], C = in->dims[1], k = rt_attr_int(n, "k", 0);
	size_t es = base_dtype_size(dt);
	memset(y->data, 0, (size_t)(R * C) * es);
	for (int64_t i = 0; i < R; i++) {
		/* Compare before adding: k comes from the model and may be huge. */
		if (k >= C || k < -i)
			continue;
		int64_t j = i + k;
		if (j >= 0 && j < C)
			base_store_double(dt, y->data, (size_t)(i * C + j), 1.0);
	}
	return 0;
}

static int init_eyelike(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	if (n->nin < 1 || n->in[0] < 0 || n->nout < 1 || n->out[0] < 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "needs an input and an output");
	int64_t dt = rt_attr_int(n, "dtype", rt_graph_dtype(g, n->in[0]));
	if (dt < 0 || dt >= BASE_DT_COUNT || dt == BASE_DT_STRING || dt == BASE_DT_COMPLEX64 ||
	    dt == BASE_DT_COMPLEX128 || base_dtype_size((int)dt) == 0)
		return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED, "EyeLike (opset %d): element type %s",
		                   n->opset, base_dtype_name((int)dt));
	rt_graph_set_dtype(g, n->out[0], (int)dt);
	n->state = (void *)(intptr_t)dt;
	n->run = run_eyelike;
	return 0;
}

const struct rt_opdef rt_ops_index[] = {
	{"", "GatherElements", 11, init_gather_elements, NULL},
	{"", "GatherND", 11, init_gather_nd, NULL},
	{"", "ScatterElements", 11, init_scatter_elements, NULL},
	{"", "Scatter", 9, init_scatter_elements, NULL},
	{"", "ScatterND", 11, init_scatter_nd, NULL},
	{"", "Compress", 9, init_compress, NULL},
	{"", "NonZero", 9, init_nonzero, NULL},
	{"", "ReverseSequence", 10, init_reverse_sequence, NULL},
	{"", "Pad", 1, init_pad, NULL},
	{"", "Trilu", 14, init_trilu, NULL},
	{"", "OneHot", 9, init_onehot, NULL},
	{"", "EyeLike", 9, init_eyelike, NULL},
	{.op = NULL},
};
