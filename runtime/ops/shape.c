/*
 * shape.c: operators that move cells without computing on them: Reshape,
 * Flatten, Transpose, Squeeze, Unsqueeze, Concat, Slice, Gather, Shape,
 * Size, Identity, Expand, ConstantOfShape, Range, Tile, Split.
 *
 * Every kernel works on any element type by copying cells of the type's size;
 * string cells are char * and are copied as pointers, so an output string
 * tensor points at the same bytes as its source (the initializer, the caller's
 * input, or an upstream buffer): those bytes must outlive the output.
 *
 * Shapes arrive at run time, often as tensors (Reshape's shape, Slice's
 * starts); every value read from a tensor is treated as hostile: indices are
 * range-checked, products are overflow-checked, and a bad one fails the run
 * with STRATA_RUNTIME naming the node.  Attributes are checked once in init()
 * and fail the load with STRATA_INVALID_GRAPH.
 *
 * Reshape, Flatten, Squeeze, Unsqueeze and Identity change only the shape:
 * their output is a view of the input's buffer (rt_output_alias), never a
 * copy.  Expand always writes a new buffer.
 */
#include <math.h>
#include <string.h>

#include "../kernel.h"

/* Upper bound on cells of any output: keeps byte counts far from overflow;
 * rt_output() applies the real memory limit. */
#define MAX_CELLS ((int64_t)1 << 48)

/* ---- helpers ------------------------------------------------------------------ */

static int64_t tcount(const struct rt_tensor *t)
{
	int64_t c = 1;
	for (int i = 0; i < t->rank; i++)
		c *= t->dims[i];
	return c;
}

static void copy_cell(char *dst, const char *src, size_t es)
{
	switch (es) {
	case 1: memcpy(dst, src, 1); break;
	case 2: memcpy(dst, src, 2); break;
	case 4: memcpy(dst, src, 4); break;
	case 8: memcpy(dst, src, 8); break;
	default: memcpy(dst, src, es); break;
	}
}

/* Copy a strided view of src into dense dst: r dims od[], source strides
 * st[] in cells (0 repeats, negative walks backwards).  The innermost
 * dimension becomes one memcpy when it is contiguous. */
static void strided_copy(char *dst, const char *src, int r, const int64_t *od,
                         const int64_t *st, size_t es)
{
	if (r == 0) {
		copy_cell(dst, src, es);
		return;
	}
	if (rt_cells(r, od, MAX_CELLS) == 0)
		return;
	int64_t idx[RT_MAX_RANK] = {0};
	int64_t inner = od[r - 1], ist = st[r - 1];
	const char *s = src;
	for (;;) {
		if (ist == 1) {
			memcpy(dst, s, (size_t)inner * es);
			dst += (size_t)inner * es;
		} else {
			const char *p = s;
			for (int64_t j = 0; j < inner; j++) {
				copy_cell(dst, p, es);
				dst += es;
				p += ist * (int64_t)es;
			}
		}
		int d = r - 2;
		for (; d >= 0; d--) {
			s += st[d] * (int64_t)es;
			if (++idx[d] < od[d])
				break;
			s -= st[d] * od[d] * (int64_t)es;
			idx[d] = 0;
		}
		if (d < 0)
			return;
	}
}

/* Dense strides (in cells) of t. */
static void dense_strides(int r, const int64_t *dims, int64_t *st)
{
	int64_t s = 1;
	for (int i = r - 1; i >= 0; i--) {
		st[i] = s;
		s *= dims[i];
	}
}

/* Read a 1-D (or scalar) int32/int64 tensor of at most max entries. */
static int read_ints(struct rt_exec *x, const struct rt_node *n, const struct rt_tensor *t,
                     const char *what, int64_t *dst, int max, int *count)
{
	if (t->dtype != BASE_DT_INT64 && t->dtype != BASE_DT_INT32)
		return rt_fail(x, n, STRATA_RUNTIME, "%s must be int64 or int32, not %s", what,
		               base_dtype_name(t->dtype));
	if (t->rank > 1)
		return rt_fail(x, n, STRATA_RUNTIME, "%s must be 1-D, not rank %d", what, t->rank);
	int64_t c = tcount(t);
	if (c > max)
		return rt_fail(x, n, STRATA_RUNTIME, "%s has %lld entries, at most %d allowed", what,
		               (long long)c, max);
	int got = rt_tensor_to_ints(t, dst, max);
	if (got < 0)
		return rt_fail(x, n, STRATA_RUNTIME, "cannot read %s", what);
	*count = got;
	return 0;
}

/* Common init: input 0 required with a known type; output 0 takes it. */
static int init_same(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	if (n->nin < 1 || n->in[0] < 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "missing input");
	if (n->nout < 1 || n->out[0] < 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "missing output");
	int dt = rt_graph_dtype(g, n->in[0]);
	if (base_dtype_size(dt) == 0)
		return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED, "%s (opset %d): element type %s",
		                   n->op, n->opset, base_dtype_name(dt));
	for (int i = 0; i < n->nout; i++)
		if (n->out[i] >= 0)
			rt_graph_set_dtype(g, n->out[i], dt);
	return 0;
}

/* Input i must be present and an integer tensor. */
static int need_int_input(struct rt_node *n, struct rt_graph *g, struct strata_error *err, int i,
                          const char *what, int optional)
{
	if (n->nin <= i || n->in[i] < 0) {
		if (optional)
			return 0;
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "missing input %s", what);
	}
	int dt = rt_graph_dtype(g, n->in[i]);
	if (dt != BASE_DT_INT64 && dt != BASE_DT_INT32)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "%s must be int64, not %s", what,
		                   base_dtype_name(dt));
	return 0;
}

/* init of an op whose output is input 0's type and whose input 1 is a
 * required integer tensor (Gather's indices, Expand's shape). */
static int init_data_ints(struct rt_node *n, struct rt_graph *g, struct strata_error *err,
                          const char *what, rt_kernel_fn *run)
{
	int rc = init_same(n, g, err);
	if (rc == 0 && (rc = need_int_input(n, g, err, 1, what, 0)) == 0)
		n->run = run;
	return rc;
}

/* Output 0 with the shape (r, dims), viewing in's cells: the executor
 * shares the buffer (or copies where its memory plan says so). */
static int view_output(struct rt_exec *x, const struct rt_node *n, int r, const int64_t *dims)
{
	return rt_output_alias(x, n, 0, 0, r, dims, NULL);
}

/* Axes of a node: from the attribute before opset `from`, else from input
 * `in` (possibly omitted).  *have is 0 when there are none. */
static int node_axes(struct rt_exec *x, const struct rt_node *n, int from, int in, int64_t *axes,
                     int *count, int *have)
{
	*have = 0;
	*count = 0;
	if (n->opset < from) {
		size_t c;
		const int64_t *a = rt_attr_ints(n, "axes", &c);
		if (!a)
			return 0;
		if (c > RT_MAX_RANK)
			return rt_fail(x, n, STRATA_RUNTIME, "too many axes (%zu)", c);
		memcpy(axes, a, c * sizeof *a);
		*count = (int)c;
		*have = 1;
		return 0;
	}
	const struct rt_tensor *t = rt_input(x, n, in);
	if (!t)
		return 0;
	*have = 1;
	return read_ints(x, n, t, "axes", axes, RT_MAX_RANK, count);
}

/* ---- Reshape ---------------------------------------------------------------- */

static int run_reshape(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *d = rt_input(x, n, 0);
	int64_t shape[RT_MAX_RANK];
	int ns;
	int rc;
	if (n->opset < 5) {
		size_t c;
		const int64_t *a = rt_attr_ints(n, "shape", &c);
		if (c > RT_MAX_RANK)
			return rt_fail(x, n, STRATA_RUNTIME, "shape has %zu entries", c);
		if (c)
			memcpy(shape, a, c * sizeof *a);
		ns = (int)c;
	} else {
		const struct rt_tensor *s = rt_input(x, n, 1);
		if (!s)
			return rt_fail(x, n, STRATA_RUNTIME, "missing shape");
		rc = read_ints(x, n, s, "shape", shape, RT_MAX_RANK, &ns);
		if (rc)
			return rc;
	}
	int allowzero = n->opset >= 14 && rt_attr_int(n, "allowzero", 0) != 0;
	int infer = -1;
	int64_t known = 1;
	for (int i = 0; i < ns; i++) {
		if (shape[i] == 0 && !allowzero) {
			if (i >= d->rank)
				return rt_fail(x, n, STRATA_RUNTIME,
				               "shape[%d] = 0 copies a dimension the input (rank %d) lacks",
				               i, d->rank);
			shape[i] = d->dims[i];
		}
		if (shape[i] == -1) {
			if (infer >= 0)
				return rt_fail(x, n, STRATA_RUNTIME, "more than one -1 in shape");
			infer = i;
			continue;
		}
		if (shape[i] < 0)
			return rt_fail(x, n, STRATA_RUNTIME, "shape[%d] = %lld is negative", i,
			               (long long)shape[i]);
		if (shape[i] != 0 && known > MAX_CELLS / shape[i])
			return rt_fail(x, n, STRATA_RUNTIME, "shape is too large");
		known *= shape[i];
	}
	int64_t total = tcount(d);
	if (infer >= 0) {
		if (known == 0 || total % known != 0)
			return rt_fail(x, n, STRATA_RUNTIME,
			               "cannot infer the -1 dimension: %lld cells into blocks of %lld",
			               (long long)total, (long long)known);
		shape[infer] = total / known;
	} else if (known != total) {
		return rt_fail(x, n, STRATA_RUNTIME, "shape has %lld cells but the input has %lld",
		               (long long)known, (long long)total);
	}
	return view_output(x, n, ns, shape);
}

static int init_reshape(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	int rc = init_same(n, g, err);
	if (rc)
		return rc;
	if (n->opset >= 5 && (rc = need_int_input(n, g, err, 1, "shape", 0)))
		return rc;
	n->run = run_reshape;
	return 0;
}

/* ---- Flatten ------------------------------------------------------------------ */

static int run_flatten(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *d = rt_input(x, n, 0);
	int64_t axis = rt_attr_int(n, "axis", 1);
	if (axis < 0)
		axis += d->rank;
	if (axis < 0 || axis > d->rank)
		return rt_fail(x, n, STRATA_RUNTIME, "axis %lld out of range for rank %d",
		               (long long)rt_attr_int(n, "axis", 1), d->rank);
	int64_t od[2] = {rt_cells((int)axis, d->dims, MAX_CELLS), rt_cells(d->rank - (int)axis, d->dims + axis, MAX_CELLS)};
	return view_output(x, n, 2, od);
}

static int init_flatten(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	int rc = init_same(n, g, err);
	if (rc)
		return rc;
	if (n->opset < 11 && rt_attr_int(n, "axis", 1) < 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH,
		                   "negative axis needs opset 11 (model has %d)", n->opset);
	n->run = run_flatten;
	return 0;
}

/* ---- Transpose ---------------------------------------------------------------- */

/* Swap the last two dimensions of nb matrices rows x cols, in tiles so both
 * sides stay in cache. */
static void transpose_2d(char *dst, const char *src, int64_t nb, int64_t rows, int64_t cols,
                         size_t es)
{
	enum { T = 32 };
	for (int64_t b = 0; b < nb; b++) {
		const char *s = src + (size_t)(b * rows * cols) * es;
		char *o = dst + (size_t)(b * rows * cols) * es;
		for (int64_t i0 = 0; i0 < rows; i0 += T) {
			int64_t i1 = i0 + T < rows ? i0 + T : rows;
			for (int64_t j0 = 0; j0 < cols; j0 += T) {
				int64_t j1 = j0 + T < cols ? j0 + T : cols;
				if (es == 4) {
					const uint32_t *s4 = (const uint32_t *)s;
					uint32_t *o4 = (uint32_t *)o;
					for (int64_t i = i0; i < i1; i++)
						for (int64_t j = j0; j < j1; j++)
							o4[j * rows + i] = s4[i * cols + j];
				} else {
					for (int64_t i = i0; i < i1; i++)
						for (int64_t j = j0; j < j1; j++)
							copy_cell(o + (size_t)(j * rows + i) * es,
							          s + (size_t)(i * cols + j) * es, es);
				}
			}
		}
	}
}

static int run_transpose(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *d = rt_input(x, n, 0);
	size_t np;
	const int64_t *pa = rt_attr_ints(n, "perm", &np);
	int r = d->rank;
	int perm[RT_MAX_RANK];
	if (pa) {
		if ((int)np != r)
			return rt_fail(x, n, STRATA_RUNTIME, "perm has %zu entries but the input rank is %d",
			               np, r);
		for (int i = 0; i < r; i++)
			perm[i] = (int)pa[i];
	} else {
		for (int i = 0; i < r; i++)
			perm[i] = r - 1 - i;
	}
	int64_t ist[RT_MAX_RANK], od[RT_MAX_RANK], st[RT_MAX_RANK];
	dense_strides(r, d->dims, ist);
	for (int i = 0; i < r; i++) {
		od[i] = d->dims[perm[i]];
		st[i] = ist[perm[i]];
	}
	struct rt_tensor *y;
	int rc = rt_output(x, n, 0, d->dtype, r, od, &y);
	if (rc)
		return rc;
	size_t es = base_dtype_size(d->dtype);
	/* Dimensions of size 1 do not matter to the order: drop them, so that
	 * e.g. [1,S,H] -> [S,1,H] becomes a plain copy. */
	int64_t cd[RT_MAX_RANK], cs[RT_MAX_RANK];
	int cr = 0;
	for (int i = 0; i < r; i++) {
		if (od[i] == 1)
			continue;
		cd[cr] = od[i];
		cs[cr] = st[i];
		cr++;
	}
	/* Swap of the last two dimensions (after leading dense batch dims). */
	if (cr >= 2 && cs[cr - 1] == cd[cr - 2] && cs[cr - 2] == 1) {
		int batch_dense = 1;
		int64_t expect = cd[cr - 1] * cd[cr - 2], nb = 1;
		for (int i = cr - 3; i >= 0; i--) {
			batch_dense &= cs[i] == expect;
			expect *= cd[i];
			nb *= cd[i];
		}
		if (batch_dense) {
			transpose_2d(y->data, d->data, nb, cd[cr - 1], cd[cr - 2], es);
			return 0;
		}
	}
	strided_copy(y->data, d->data, cr, cd, cs, es);
	return 0;
}

static int init_transpose(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	int rc = init_same(n, g, err);
	if (rc)
		return rc;
	size_t np;
	const int64_t *p = rt_attr_ints(n, "perm", &np);
	if (p) {
		if (np > RT_MAX_RANK)
			return rt_node_err(n, err, STRATA_INVALID_GRAPH, "perm has %zu entries", np);
		int seen[RT_MAX_RANK] = {0};
		for (size_t i = 0; i < np; i++) {
			if (p[i] < 0 || p[i] >= (int64_t)np || seen[p[i]]++)
				return rt_node_err(n, err, STRATA_INVALID_GRAPH,
				                   "perm is not a permutation (entry %zu = %lld)", i,
				                   (long long)p[i]);
		}
	}
	n->run = run_transpose;
	return 0;
}

/* ---- Squeeze and Unsqueeze -------------------------------------------------- */

static int run_squeeze(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *d = rt_input(x, n, 0);
	int64_t axes[RT_MAX_RANK];
	int na, have;
	int rc = node_axes(x, n, 13, 1, axes, &na, &have);
	if (rc)
		return rc;
	int drop[RT_MAX_RANK] = {0};
	if (!have || na == 0) {
		for (int i = 0; i < d->rank; i++)
			drop[i] = d->dims[i] == 1;
	} else {
		for (int i = 0; i < na; i++) {
			int a = rt_axis(axes[i], d->rank);
			if (a < 0)
				return rt_fail(x, n, STRATA_RUNTIME, "axis %lld out of range for rank %d",
				               (long long)axes[i], d->rank);
			if (d->dims[a] != 1)
				return rt_fail(x, n, STRATA_RUNTIME,
				               "cannot squeeze axis %d of size %lld", a,
				               (long long)d->dims[a]);
			drop[a] = 1;
		}
	}
	int64_t od[RT_MAX_RANK];
	int r = 0;
	for (int i = 0; i < d->rank; i++)
		if (!drop[i])
			od[r++] = d->dims[i];
	return view_output(x, n, r, od);
}

static int run_unsqueeze(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *d = rt_input(x, n, 0);
	int64_t axes[RT_MAX_RANK];
	int na, have;
	int rc = node_axes(x, n, 13, 1, axes, &na, &have);
	if (rc)
		return rc;
	if (!have || na == 0)
		return rt_fail(x, n, STRATA_RUNTIME, "axes are required");
	int r = d->rank + na;
	if (r > RT_MAX_RANK)
		return rt_fail(x, n, STRATA_RUNTIME, "output rank %d exceeds %d", r, RT_MAX_RANK);
	int ins[RT_MAX_RANK] = {0};
	for (int i = 0; i < na; i++) {
		int a = rt_axis(axes[i], r);
		if (a < 0)
			return rt_fail(x, n, STRATA_RUNTIME, "axis %lld out of range for rank %d",
			               (long long)axes[i], r);
		if (ins[a]++)
			return rt_fail(x, n, STRATA_RUNTIME, "axis %d repeated", a);
	}
	int64_t od[RT_MAX_RANK];
	for (int i = 0, j = 0; i < r; i++)
		od[i] = ins[i] ? 1 : d->dims[j++];
	return view_output(x, n, r, od);
}

static int init_squeeze(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	int rc = init_same(n, g, err);
	if (rc)
		return rc;
	if (n->opset >= 13 && (rc = need_int_input(n, g, err, 1, "axes", 1)))
		return rc;
	n->run = strcmp(n->op, "Squeeze") == 0 ? run_squeeze : run_unsqueeze;
	return 0;
}

/* ---- Concat ------------------------------------------------------------------- */

static int run_concat(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *t0 = NULL;
	for (int i = 0; i < n->nin && !t0; i++)
		t0 = rt_input(x, n, i);
	if (!t0)
		return rt_fail(x, n, STRATA_RUNTIME, "no inputs");
	int r = t0->rank;
	int64_t axis0 = rt_attr_int(n, "axis", 1);
	int axis = rt_axis(axis0, r);
	if (axis < 0)
		return rt_fail(x, n, STRATA_RUNTIME, "axis %lld out of range for rank %d",
		               (long long)axis0, r);
	int64_t od[RT_MAX_RANK];
	memcpy(od, t0->dims, sizeof od);
	od[axis] = 0;
	for (int i = 0; i < n->nin; i++) {
		const struct rt_tensor *t = rt_input(x, n, i);
		if (!t)
			continue;
		if (t->rank != r || t->dtype != t0->dtype)
			return rt_fail(x, n, STRATA_RUNTIME, "input %d has rank %d, input 0 rank %d", i,
			               t->rank, r);
		for (int k = 0; k < r; k++)
			if (k != axis && t->dims[k] != t0->dims[k])
				return rt_fail(x, n, STRATA_RUNTIME,
				               "input %d has dimension %d = %lld, expected %lld", i, k,
				               (long long)t->dims[k], (long long)t0->dims[k]);
		od[axis] += t->dims[axis];
	}
	if (rt_cells(r, od, MAX_CELLS) < 0)
		return rt_fail(x, n, STRATA_RUNTIME, "output too large");
	struct rt_tensor *y;
	int rc = rt_output(x, n, 0, t0->dtype, r, od, &y);
	if (rc)
		return rc;
	size_t es = base_dtype_size(t0->dtype);
	int64_t outer = rt_cells(axis, od, MAX_CELLS), inner = rt_cells(r - axis - 1, od + axis + 1, MAX_CELLS);
	char *dst = y->data;
	for (int64_t o = 0; o < outer; o++) {
		for (int i = 0; i < n->nin; i++) {
			const struct rt_tensor *t = rt_input(x, n, i);
			if (!t)
				continue;
			size_t blk = (size_t)(t->dims[axis] * inner) * es;
			if (!blk)
				continue;
			/* Cells already where they go are left alone: an output bound
			 * over its input (runtime.h, the sliding window) copies
			 * nothing for that input. */
			const char *src = (const char *)t->data + (size_t)o * blk;
			if (src != dst)
				memcpy(dst, src, blk);
			dst += blk;
		}
	}
	return 0;
}

static int init_concat(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	int rc = init_same(n, g, err);
	if (rc)
		return rc;
	if (n->opset >= 4 && !rt_attr_find(n, "axis"))
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "attribute axis is required");
	if (n->opset < 11 && rt_attr_int(n, "axis", 1) < 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH,
		                   "negative axis needs opset 11 (model has %d)", n->opset);
	int dt = rt_graph_dtype(g, n->in[0]);
	for (int i = 1; i < n->nin; i++)
		if (n->in[i] >= 0 && rt_graph_dtype(g, n->in[i]) != dt)
			return rt_node_err(n, err, STRATA_INVALID_GRAPH, "input %d is %s, input 0 %s",
			                   i, base_dtype_name(rt_graph_dtype(g, n->in[i])),
			                   base_dtype_name(dt));
	n->run = run_concat;
	return 0;
}

/* ---- Slice -------------------------------------------------------------------- */

static int run_slice(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *d = rt_input(x, n, 0);
	int r = d->rank;
	int64_t starts[RT_MAX_RANK], ends[RT_MAX_RANK], axes[RT_MAX_RANK], steps[RT_MAX_RANK];
	int ns, ne, na = -1, nst = -1, rc;
	if (n->opset < 10) {
		size_t c1, c2, c3;
		const int64_t *s = rt_attr_ints(n, "starts", &c1);
		const int64_t *e = rt_attr_ints(n, "ends", &c2);
		const int64_t *a = rt_attr_ints(n, "axes", &c3);
		if (c1 > RT_MAX_RANK || c2 > RT_MAX_RANK || c3 > RT_MAX_RANK)
			return rt_fail(x, n, STRATA_RUNTIME, "too many starts, ends or axes");
		if (c1)
			memcpy(starts, s, c1 * sizeof *s);
		if (c2)
			memcpy(ends, e, c2 * sizeof *e);
		if (a) {
			memcpy(axes, a, c3 * sizeof *a);
			na = (int)c3;
		}
		ns = (int)c1;
		ne = (int)c2;
	} else {
		const struct rt_tensor *ts = rt_input(x, n, 1), *te = rt_input(x, n, 2);
		const struct rt_tensor *ta = rt_input(x, n, 3), *tp = rt_input(x, n, 4);
		if (!ts || !te)
			return rt_fail(x, n, STRATA_RUNTIME, "missing starts or ends");
		if ((rc = read_ints(x, n, ts, "starts", starts, RT_MAX_RANK, &ns)) ||
		    (rc = read_ints(x, n, te, "ends", ends, RT_MAX_RANK, &ne)) ||
		    (ta && (rc = read_ints(x, n, ta, "axes", axes, RT_MAX_RANK, &na))) ||
		    (tp && (rc = read_ints(x, n, tp, "steps", steps, RT_MAX_RANK, &nst))))
			return rc;
	}
	if (ns != ne || (na >= 0 && na != ns) || (nst >= 0 && nst != ns))
		return rt_fail(x, n, STRATA_RUNTIME,
		               "starts, ends, axes and steps differ in length (%d, %d, %d, %d)", ns,
		               ne, na, nst);
	int64_t first[RT_MAX_RANK], step[RT_MAX_RANK], od[RT_MAX_RANK];
	int seen[RT_MAX_RANK] = {0};
	for (int i = 0; i < r; i++) {
		first[i] = 0;
		step[i] = 1;
		od[i] = d->dims[i];
	}
	for (int i = 0; i < ns; i++) {
		int64_t a0 = na >= 0 ? axes[i] : i;
		int a = rt_axis(a0, r);
		if (a < 0)
			return rt_fail(x, n, STRATA_RUNTIME, "axis %lld out of range for rank %d",
			               (long long)a0, r);
		if (seen[a]++)
			return rt_fail(x, n, STRATA_RUNTIME, "axis %d repeated", a);
		int64_t st = nst >= 0 ? steps[i] : 1, dim = d->dims[a];
		if (st == 0)
			return rt_fail(x, n, STRATA_RUNTIME, "step 0 on axis %d", a);
		int64_t s = starts[i], e = ends[i];
		if (s < 0)
			s += dim;
		if (e < 0)
			e += dim;
		int64_t cnt;
		if (st > 0) {
			s = s < 0 ? 0 : s > dim ? dim : s;
			e = e < 0 ? 0 : e > dim ? dim : e;
			cnt = e > s ? (int64_t)(((uint64_t)(e - s) + (uint64_t)st - 1) / (uint64_t)st)
			            : 0;
		} else {
			s = s < 0 ? 0 : s > dim - 1 ? dim - 1 : s;
			e = e < -1 ? -1 : e > dim - 1 ? dim - 1 : e;
			/* st may be INT64_MIN: divide in unsigned */
			uint64_t ust = (uint64_t)0 - (uint64_t)st;
			cnt = s > e ? (int64_t)(((uint64_t)(s - e) + ust - 1) / ust) : 0;
		}
		first[a] = cnt ? s : 0;
		step[a] = st;
		od[a] = cnt;
	}
	struct rt_tensor *y;
	if ((rc = rt_output(x, n, 0, d->dtype, r, od, &y)))
		return rc;
	if (rt_cells(r, od, MAX_CELLS) == 0)
		return 0;
	int64_t ist[RT_MAX_RANK], st2[RT_MAX_RANK];
	dense_strides(r, d->dims, ist);
	size_t es = base_dtype_size(d->dtype);
	int64_t off = 0;
	for (int i = 0; i < r; i++) {
		off += first[i] * ist[i];
		/* a single-cell dimension never steps: avoid step*stride overflow */
		st2[i] = od[i] > 1 ? step[i] * ist[i] : 0;
	}
	strided_copy(y->data, (const char *)d->data + off * (int64_t)es, r, od, st2, es);
	return 0;
}

static int init_slice(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	int rc = init_same(n, g, err);
	if (rc)
		return rc;
	if (n->opset >= 10) {
		if ((rc = need_int_input(n, g, err, 1, "starts", 0)) ||
		    (rc = need_int_input(n, g, err, 2, "ends", 0)) ||
		    (rc = need_int_input(n, g, err, 3, "axes", 1)) ||
		    (rc = need_int_input(n, g, err, 4, "steps", 1)))
			return rc;
	} else if (!rt_attr_find(n, "starts") || !rt_attr_find(n, "ends")) {
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "attributes starts and ends are required");
	}
	n->run = run_slice;
	return 0;
}

/* ---- Gather ------------------------------------------------------------------- */

static int run_gather(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *d = rt_input(x, n, 0), *ix = rt_input(x, n, 1);
	if (!ix)
		return rt_fail(x, n, STRATA_RUNTIME, "missing indices");
	int64_t axis0 = rt_attr_int(n, "axis", 0);
	int axis = rt_axis(axis0, d->rank);
	if (d->rank < 1 || axis < 0)
		return rt_fail(x, n, STRATA_RUNTIME, "axis %lld out of range for rank %d",
		               (long long)axis0, d->rank);
	int r = ix->rank + d->rank - 1;
	if (r > RT_MAX_RANK)
		return rt_fail(x, n, STRATA_RUNTIME, "output rank %d exceeds %d", r, RT_MAX_RANK);
	int64_t od[RT_MAX_RANK];
	int k = 0;
	for (int i = 0; i < axis; i++)
		od[k++] = d->dims[i];
	for (int i = 0; i < ix->rank; i++)
		od[k++] = ix->dims[i];
	for (int i = axis + 1; i < d->rank; i++)
		od[k++] = d->dims[i];
	if (rt_cells(r, od, MAX_CELLS) < 0)
		return rt_fail(x, n, STRATA_RUNTIME, "output too large");
	int64_t dim = d->dims[axis], nix = tcount(ix);
	int is64 = ix->dtype == BASE_DT_INT64;
	/* check every index before writing anything */
	for (int64_t j = 0; j < nix; j++) {
		int64_t v = is64 ? ((const int64_t *)ix->data)[j] : ((const int32_t *)ix->data)[j];
		if (v < -dim || v >= dim)
			return rt_fail(x, n, STRATA_RUNTIME,
			               "index %lld out of range [%lld, %lld) on axis %d", (long long)v,
			               (long long)-dim, (long long)dim, axis);
	}
	struct rt_tensor *y;
	int rc = rt_output(x, n, 0, d->dtype, r, od, &y);
	if (rc)
		return rc;
	size_t es = base_dtype_size(d->dtype);
	int64_t outer = rt_cells(axis, d->dims, MAX_CELLS), inner = rt_cells(d->rank - axis - 1, d->dims + axis + 1, MAX_CELLS);
	size_t blk = (size_t)inner * es;
	char *dst = y->data;
	const char *src = d->data;
	for (int64_t o = 0; o < outer; o++) {
		const char *base = src + (size_t)(o * dim) * blk;
		for (int64_t j = 0; j < nix; j++) {
			int64_t v = is64 ? ((const int64_t *)ix->data)[j]
			                 : ((const int32_t *)ix->data)[j];
			if (v < 0)
				v += dim;
			if (blk == es)
				copy_cell(dst, base + (size_t)v * blk, es);
			else
				memcpy(dst, base + (size_t)v * blk, blk);
			dst += blk;
		}
	}
	return 0;
}

static int init_gather(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	return init_data_ints(n, g, err, "indices", run_gather);
}

/* ---- Shape, Identity ----------------------------------------------------------- */

static int run_shape(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *d = rt_input(x, n, 0);
	int64_t r = d->rank, s = 0, e = r;
	if (n->opset >= 15) {
		s = rt_attr_int(n, "start", 0);
		e = rt_attr_int(n, "end", r);
		if (s < 0)
			s += r;
		if (e < 0)
			e += r;
		s = s < 0 ? 0 : s > r ? r : s;
		e = e < 0 ? 0 : e > r ? r : e;
	}
	int64_t len = e > s ? e - s : 0;
	struct rt_tensor *y;
	int rc = rt_output(x, n, 0, BASE_DT_INT64, 1, &len, &y);
	if (rc)
		return rc;
	for (int64_t i = 0; i < len; i++)
		((int64_t *)y->data)[i] = d->dims[s + i];
	return 0;
}

static int init_shape(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	if (n->nin < 1 || n->in[0] < 0 || n->nout < 1 || n->out[0] < 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "needs one input and one output");
	rt_graph_set_dtype(g, n->out[0], BASE_DT_INT64);
	n->run = run_shape;
	return 0;
}

static int run_size(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *d = rt_input(x, n, 0);
	struct rt_tensor *y;
	int rc = rt_output(x, n, 0, BASE_DT_INT64, 0, NULL, &y);
	if (rc)
		return rc;
	*(int64_t *)y->data = tcount(d);
	return 0;
}

static int init_size(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	int rc = init_shape(n, g, err);
	if (rc)
		return rc;
	n->run = run_size;
	return 0;
}

static int run_identity(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *d = rt_input(x, n, 0);
	return view_output(x, n, d->rank, d->dims);
}

static int init_identity(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	int rc = init_same(n, g, err);
	if (rc)
		return rc;
	n->run = run_identity;
	return 0;
}

/* ---- Expand --------------------------------------------------------------------- */

static int run_expand(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *d = rt_input(x, n, 0), *ts = rt_input(x, n, 1);
	if (!ts)
		return rt_fail(x, n, STRATA_RUNTIME, "missing shape");
	int64_t shape[RT_MAX_RANK];
	int ns;
	int rc = read_ints(x, n, ts, "shape", shape, RT_MAX_RANK, &ns);
	if (rc)
		return rc;
	int r = ns > d->rank ? ns : d->rank;
	int64_t od[RT_MAX_RANK], st[RT_MAX_RANK], ist[RT_MAX_RANK];
	dense_strides(d->rank, d->dims, ist);
	for (int i = 0; i < r; i++) {
		int is = i - (r - ns), id = i - (r - d->rank);
		int64_t a = is >= 0 ? shape[is] : 1, b = id >= 0 ? d->dims[id] : 1;
		if (a < 0)
			return rt_fail(x, n, STRATA_RUNTIME, "shape[%d] = %lld is negative", is,
			               (long long)a);
		if (a != b && a != 1 && b != 1)
			return rt_fail(x, n, STRATA_RUNTIME,
			               "input dimension %lld does not expand to %lld", (long long)b,
			               (long long)a);
		od[i] = b == 1 ? a : b;
		st[i] = b == 1 ? 0 : ist[id];
	}
	if (rt_cells(r, od, MAX_CELLS) < 0)
		return rt_fail(x, n, STRATA_RUNTIME, "output too large");
	struct rt_tensor *y;
	if ((rc = rt_output(x, n, 0, d->dtype, r, od, &y)))
		return rc;
	strided_copy(y->data, d->data, r, od, st, base_dtype_size(d->dtype));
	return 0;
}

static int init_expand(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	return init_data_ints(n, g, err, "shape", run_expand);
}

/* ---- ConstantOfShape ----------------------------------------------------------- */

static int run_constant_of_shape(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *ts = rt_input(x, n, 0);
	const struct rt_attr *va = rt_attr_find(n, "value");
	int64_t shape[RT_MAX_RANK];
	int ns;
	int rc = read_ints(x, n, ts, "shape", shape, RT_MAX_RANK, &ns);
	if (rc)
		return rc;
	if (rt_cells(ns, shape, MAX_CELLS) < 0)
		return rt_fail(x, n, STRATA_RUNTIME, "shape is negative or too large");
	int dt = va ? va->t->dtype : BASE_DT_FLOAT;
	size_t es = base_dtype_size(dt);
	struct rt_tensor *y;
	if ((rc = rt_output(x, n, 0, dt, ns, shape, &y)))
		return rc;
	int64_t c = rt_cells(ns, shape, MAX_CELLS);
	if (!va) {
		memset(y->data, 0, (size_t)c * es);
		return 0;
	}
	char *dst = y->data;
	for (int64_t i = 0; i < c; i++)
		copy_cell(dst + (size_t)i * es, va->t->data, es);
	return 0;
}

static int init_constant_of_shape(struct rt_node *n, struct rt_graph *g,
                                  struct strata_error *err)
{
	int rc;
	if (n->nout < 1 || n->out[0] < 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "missing output");
	if ((rc = need_int_input(n, g, err, 0, "shape", 0)))
		return rc;
	const struct rt_attr *va = rt_attr_find(n, "value");
	int dt = BASE_DT_FLOAT;
	if (va) {
		if (va->type != RT_ATTR_TENSOR || !va->t || runtime_tensor_count(va->t) != 1)
			return rt_node_err(n, err, STRATA_INVALID_GRAPH,
			                   "value must be a one-element tensor");
		dt = va->t->dtype;
		if (base_dtype_size(dt) == 0)
			return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED,
			                   "ConstantOfShape (opset %d): element type %s", n->opset,
			                   base_dtype_name(dt));
	}
	rt_graph_set_dtype(g, n->out[0], dt);
	n->run = run_constant_of_shape;
	return 0;
}

/* ---- Range ----------------------------------------------------------------------- */

static int run_range(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *t[3];
	for (int i = 0; i < 3; i++) {
		t[i] = rt_input(x, n, i);
		if (!t[i] || tcount(t[i]) != 1)
			return rt_fail(x, n, STRATA_RUNTIME, "start, limit and delta must be scalars");
	}
	int dt = t[0]->dtype;
	int64_t cnt;
	if (dt == BASE_DT_FLOAT || dt == BASE_DT_DOUBLE) {
		double s = base_load_double(dt, t[0]->data, 0), l = base_load_double(dt, t[1]->data, 0);
		double dl = base_load_double(dt, t[2]->data, 0);
		if (dl == 0 || isnan(dl) || isnan(s) || isnan(l))
			return rt_fail(x, n, STRATA_RUNTIME, "delta is zero or a value is NaN");
		double c = ceil((l - s) / dl);
		if (!(c < (double)MAX_CELLS))
			return rt_fail(x, n, STRATA_RUNTIME, "range too long");
		cnt = c > 0 ? (int64_t)c : 0;
	} else {
		int64_t s = (int64_t)base_load_double(dt, t[0]->data, 0);
		int64_t l = (int64_t)base_load_double(dt, t[1]->data, 0);
		int64_t dl = (int64_t)base_load_double(dt, t[2]->data, 0);
		if (dt == BASE_DT_INT64) {
			s = *(const int64_t *)t[0]->data;
			l = *(const int64_t *)t[1]->data;
			dl = *(const int64_t *)t[2]->data;
		}
		if (dl == 0)
			return rt_fail(x, n, STRATA_RUNTIME, "delta is zero");
		uint64_t dist, ud;
		if (dl > 0) {
			dist = l > s ? (uint64_t)l - (uint64_t)s : 0;
			ud = (uint64_t)dl;
		} else {
			dist = s > l ? (uint64_t)s - (uint64_t)l : 0;
			ud = (uint64_t)0 - (uint64_t)dl;
		}
		uint64_t c = dist / ud + (dist % ud != 0);
		if (c > (uint64_t)MAX_CELLS)
			return rt_fail(x, n, STRATA_RUNTIME, "range too long");
		cnt = (int64_t)c;
	}
	struct rt_tensor *y;
	int rc = rt_output(x, n, 0, dt, 1, &cnt, &y);
	if (rc)
		return rc;
	switch (dt) {
	case BASE_DT_FLOAT: {
		float s = *(const float *)t[0]->data, dl = *(const float *)t[2]->data;
		for (int64_t i = 0; i < cnt; i++)
			((float *)y->data)[i] = s + (float)i * dl;
		break;
	}
	case BASE_DT_DOUBLE: {
		double s = *(const double *)t[0]->data, dl = *(const double *)t[2]->data;
		for (int64_t i = 0; i < cnt; i++)
			((double *)y->data)[i] = s + (double)i * dl;
		break;
	}
	case BASE_DT_INT64: {
		uint64_t s = *(const uint64_t *)t[0]->data, dl = *(const uint64_t *)t[2]->data;
		for (int64_t i = 0; i < cnt; i++)
			((int64_t *)y->data)[i] = (int64_t)(s + (uint64_t)i * dl);
		break;
	}
	default: {
		int64_t s = (int64_t)base_load_double(dt, t[0]->data, 0);
		int64_t dl = (int64_t)base_load_double(dt, t[2]->data, 0);
		for (int64_t i = 0; i < cnt; i++)
			base_store_double(dt, y->data, (size_t)i, (double)(s + i * dl));
		break;
	}
	}
	return 0;
}

static int init_range(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	if (n->nin < 3 || n->in[0] < 0 || n->in[1] < 0 || n->in[2] < 0 || n->nout < 1 ||
	    n->out[0] < 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "needs start, limit and delta");
	int dt = rt_graph_dtype(g, n->in[0]);
	if (dt != BASE_DT_FLOAT && dt != BASE_DT_DOUBLE && dt != BASE_DT_INT16 &&
	    dt != BASE_DT_INT32 && dt != BASE_DT_INT64)
		return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED, "Range (opset %d): element type %s",
		                   n->opset, base_dtype_name(dt));
	for (int i = 1; i < 3; i++)
		if (rt_graph_dtype(g, n->in[i]) != dt)
			return rt_node_err(n, err, STRATA_INVALID_GRAPH,
			                   "start, limit and delta differ in type");
	rt_graph_set_dtype(g, n->out[0], dt);
	n->run = run_range;
	return 0;
}

/* ---- Tile ------------------------------------------------------------------------ */

static int run_tile(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *d = rt_input(x, n, 0), *tr = rt_input(x, n, 1);
	if (!tr)
		return rt_fail(x, n, STRATA_RUNTIME, "missing repeats");
	int64_t rep[RT_MAX_RANK];
	int nr, r = d->rank;
	int rc = read_ints(x, n, tr, "repeats", rep, RT_MAX_RANK, &nr);
	if (rc)
		return rc;
	if (nr != r)
		return rt_fail(x, n, STRATA_RUNTIME, "repeats has %d entries but the input rank is %d",
		               nr, r);
	int64_t od[RT_MAX_RANK];
	for (int i = 0; i < r; i++) {
		if (rep[i] < 0)
			return rt_fail(x, n, STRATA_RUNTIME, "repeats[%d] = %lld is negative", i,
			               (long long)rep[i]);
		if (rep[i] != 0 && d->dims[i] > MAX_CELLS / rep[i])
			return rt_fail(x, n, STRATA_RUNTIME, "output too large");
		od[i] = d->dims[i] * rep[i];
	}
	if (rt_cells(r, od, MAX_CELLS) < 0)
		return rt_fail(x, n, STRATA_RUNTIME, "output too large");
	struct rt_tensor *y;
	if ((rc = rt_output(x, n, 0, d->dtype, r, od, &y)))
		return rc;
	size_t es = base_dtype_size(d->dtype);
	if (r == 0) {
		copy_cell(y->data, d->data, es);
		return 0;
	}
	if (rt_cells(r, od, MAX_CELLS) == 0)
		return 0;
	/* Walk the output one innermost row at a time: the source row is
	 * the output row's index modulo the input dims, repeated rep[r-1]
	 * times. */
	int64_t ist[RT_MAX_RANK], idx[RT_MAX_RANK] = {0};
	dense_strides(r, d->dims, ist);
	size_t row = (size_t)d->dims[r - 1] * es;
	char *dst = y->data;
	for (;;) {
		int64_t off = 0;
		for (int i = 0; i < r - 1; i++)
			off += (idx[i] % d->dims[i]) * ist[i];
		const char *s = (const char *)d->data + (size_t)off * es;
		for (int64_t k = 0; k < rep[r - 1]; k++) {
			memcpy(dst, s, row);
			dst += row;
		}
		int i = r - 2;
		for (; i >= 0; i--) {
			if (++idx[i] < od[i])
				break;
			idx[i] = 0;
		}
		if (i < 0)
			return 0;
	}
}

static int init_tile(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	int rc = init_same(n, g, err);
	if (rc)
		return rc;
	if ((rc = need_int_input(n, g, err, 1, "repeats", 0)))
		return rc;
	n->run = run_tile;
	return 0;
}

/* ---- Split ------------------------------------------------------------------------- */

static int run_split(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *d = rt_input(x, n, 0);
	int64_t axis0 = rt_attr_int(n, "axis", 0);
	int axis = rt_axis(axis0, d->rank);
	if (axis < 0)
		return rt_fail(x, n, STRATA_RUNTIME, "axis %lld out of range for rank %d",
		               (long long)axis0, d->rank);
	int no = n->nout;
	int64_t *sz = rt_scratch(x, (size_t)no * sizeof *sz);
	if (!sz)
		return rt_nomem(x, n, "kernel scratch");
	int64_t dim = d->dims[axis];
	const struct rt_tensor *ts = n->opset >= 13 ? rt_input(x, n, 1) : NULL;
	size_t na = 0;
	const int64_t *attr = n->opset < 13 ? rt_attr_ints(n, "split", &na) : NULL;
	if (ts) {
		if (ts->dtype != BASE_DT_INT64 || ts->rank != 1)
			return rt_fail(x, n, STRATA_RUNTIME, "split must be a 1-D int64 tensor");
		if (ts->dims[0] != no)
			return rt_fail(x, n, STRATA_RUNTIME, "split has %lld entries for %d outputs",
			               (long long)ts->dims[0], no);
		memcpy(sz, ts->data, (size_t)no * sizeof *sz);
	} else if (attr) {
		if ((int64_t)na != no)
			return rt_fail(x, n, STRATA_RUNTIME, "split has %zu entries for %d outputs", na,
			               no);
		memcpy(sz, attr, (size_t)no * sizeof *sz);
	} else if (n->opset >= 18) {
		/* num_outputs: ceil-sized parts, the last one smaller */
		int64_t part = (dim + no - 1) / no;
		for (int i = 0; i < no; i++) {
			int64_t left = dim - part * i;
			sz[i] = left < 0 ? 0 : left < part ? left : part;
		}
	} else {
		if (dim % no != 0)
			return rt_fail(x, n, STRATA_RUNTIME, "dimension %lld does not split into %d parts",
			               (long long)dim, no);
		for (int i = 0; i < no; i++)
			sz[i] = dim / no;
	}
	int64_t sum = 0;
	for (int i = 0; i < no; i++) {
		if (sz[i] < 0 || sz[i] > dim)
			return rt_fail(x, n, STRATA_RUNTIME, "split[%d] = %lld is out of range", i,
			               (long long)sz[i]);
		sum += sz[i];
	}
	if (sum != dim)
		return rt_fail(x, n, STRATA_RUNTIME, "split sizes add up to %lld, dimension is %lld",
		               (long long)sum, (long long)dim);
	size_t es = base_dtype_size(d->dtype);
	int64_t outer = rt_cells(axis, d->dims, MAX_CELLS), inner = rt_cells(d->rank - axis - 1, d->dims + axis + 1, MAX_CELLS);
	int64_t at = 0;
	for (int i = 0; i < no; i++) {
		if (n->out[i] < 0) {
			at += sz[i];
			continue;
		}
		int64_t od[RT_MAX_RANK];
		memcpy(od, d->dims, sizeof od);
		od[axis] = sz[i];
		struct rt_tensor *y;
		int rc = rt_output(x, n, i, d->dtype, d->rank, od, &y);
		if (rc)
			return rc;
		size_t blk = (size_t)(sz[i] * inner) * es;
		for (int64_t o = 0; o < outer && blk; o++)
			memcpy((char *)y->data + (size_t)o * blk,
			       (const char *)d->data + (size_t)((o * dim + at) * inner) * es, blk);
		at += sz[i];
	}
	return 0;
}

static int init_split(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	int rc = init_same(n, g, err);
	if (rc)
		return rc;
	if (n->opset >= 13 && (rc = need_int_input(n, g, err, 1, "split", 1)))
		return rc;
	if (n->opset >= 18) {
		const struct rt_attr *a = rt_attr_find(n, "num_outputs");
		int has_split = n->nin >= 2 && n->in[1] >= 0;
		if (a && has_split)
			return rt_node_err(n, err, STRATA_INVALID_GRAPH,
			                   "split and num_outputs are exclusive");
		if (!a && !has_split)
			return rt_node_err(n, err, STRATA_INVALID_GRAPH,
			                   "either split or num_outputs is required");
		if (a && a->i != n->nout)
			return rt_node_err(n, err, STRATA_INVALID_GRAPH,
			                   "num_outputs is %lld but the node has %d outputs",
			                   (long long)a->i, n->nout);
	}
	n->run = run_split;
	return 0;
}

const struct rt_opdef rt_ops_shape[] = {
	{"", "Reshape", 1, init_reshape, NULL},
	{"", "Flatten", 1, init_flatten, NULL},
	{"", "Transpose", 1, init_transpose, NULL},
	{"", "Squeeze", 1, init_squeeze, NULL},
	{"", "Unsqueeze", 1, init_squeeze, NULL},
	{"", "Concat", 1, init_concat, NULL},
	{"", "Slice", 1, init_slice, NULL},
	{"", "Gather", 1, init_gather, NULL},
	{"", "Shape", 1, init_shape, NULL},
	{"", "Size", 1, init_size, NULL},
	{"", "Identity", 1, init_identity, NULL},
	{"", "Expand", 8, init_expand, NULL},
	{"", "ConstantOfShape", 9, init_constant_of_shape, NULL},
	{"", "Range", 11, init_range, NULL},
	{"", "Tile", 6, init_tile, NULL},
	{"", "Split", 1, init_split, NULL},
	{.op = NULL},
};
