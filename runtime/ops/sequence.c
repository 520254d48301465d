/*
 * sequence.c: the operators on sequences of tensors and on optionals:
 * SequenceEmpty, SequenceConstruct, SequenceAt, SequenceInsert,
 * SequenceErase, SequenceLength, SplitToSequence, ConcatFromSequence,
 * SequenceMap, Optional, OptionalHasElement, OptionalGetElement, and
 * Identity on sequences and optionals (graph.c resolves Identity here when
 * its input is not a tensor).
 *
 * Sequences live in the run context (exec.c): a kernel reads one with
 * rt_input_seq() and builds one with rt_output_seq() then rt_seq_append*();
 * items are always copied, so an output never shares cells with an input
 * and a sequence can be handed from one run of a loop body to the next.
 * Every position and axis from a model or an input is checked; a bad one is
 * a STRATA_RUNTIME failure naming the node.
 */
#include <string.h>

#include "../kernel.h"

static int is_seq_kind(int k)
{
	return k == RT_KIND_SEQUENCE || k == RT_KIND_OPTIONAL_SEQUENCE;
}

/* Input i must be a sequence (or an optional sequence). */
static int want_seq(struct rt_node *n, struct rt_graph *g, int i, struct strata_error *err)
{
	if (i >= n->nin || n->in[i] < 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "input %d is missing", i);
	if (!is_seq_kind(rt_graph_kind(g, n->in[i])))
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "input %d is not a sequence", i);
	return 0;
}

/* Input i, when given, must be a tensor. */
static int want_tensor(struct rt_node *n, struct rt_graph *g, int i, struct strata_error *err)
{
	if (i < n->nin && n->in[i] >= 0 && rt_graph_kind(g, n->in[i]) != RT_KIND_TENSOR &&
	    rt_graph_kind(g, n->in[i]) != RT_KIND_OPTIONAL_TENSOR)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "input %d is not a tensor", i);
	return 0;
}

static int is_index_type(int dt)
{
	return dt == BASE_DT_INT32 || dt == BASE_DT_INT64;
}

/* Read a scalar (or one-cell) int32/int64 position tensor. */
static int read_position(struct rt_exec *x, const struct rt_node *n, const struct rt_tensor *t,
                         int64_t *pos)
{
	if (runtime_tensor_count(t) != 1)
		return rt_fail(x, n, STRATA_RUNTIME, "position must hold one value");
	*pos = t->dtype == BASE_DT_INT32 ? ((const int32_t *)t->data)[0]
	                                 : ((const int64_t *)t->data)[0];
	return 0;
}

static const struct rt_sequence *seq_in(struct rt_exec *x, const struct rt_node *n, int i,
                                        int *rc)
{
	const struct rt_sequence *s = rt_input_seq(x, n, i);
	*rc = s ? 0 : rt_fail(x, n, STRATA_RUNTIME, "input %d holds no sequence", i);
	return s;
}

/* ---- SequenceEmpty ------------------------------------------------------------------ */

static int run_empty(struct rt_node *n, struct rt_exec *x)
{
	return rt_output_seq(x, n, 0, (int)(intptr_t)n->state);
}

static int init_empty(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	int64_t dt = rt_attr_int(n, "dtype", BASE_DT_FLOAT);
	int ok = 0;
	if (dt > 0 && dt < 64)
		(void)rt_tensor_bytes((int)dt, 1, &ok);
	if (!ok)
		return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED,
		                   "element type %lld is not supported (opset %d)", (long long)dt,
		                   n->opset);
	if (n->nout < 1)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "it needs an output");
	rt_graph_set_type(g, n->out[0], RT_KIND_SEQUENCE, (int)dt);
	n->state = (void *)(intptr_t)dt;
	n->run = run_empty;
	return 0;
}

/* ---- SequenceConstruct -------------------------------------------------------------- */

static int run_construct(struct rt_node *n, struct rt_exec *x)
{
	int rc = rt_output_seq(x, n, 0, rt_input(x, n, 0) ? rt_input(x, n, 0)->dtype : 0);
	for (int i = 0; i < n->nin && rc == 0; i++) {
		const struct rt_tensor *t = rt_input(x, n, i);
		if (!t)
			return rt_fail(x, n, STRATA_RUNTIME, "input %d holds no tensor", i);
		rc = rt_seq_append_copy(x, n, 0, t);
	}
	return rc;
}

static int init_construct(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	if (n->nin < 1 || n->nout < 1)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "it needs inputs and an output");
	int dt = rt_graph_dtype(g, n->in[0]);
	for (int i = 0; i < n->nin; i++) {
		if (n->in[i] < 0 || rt_graph_kind(g, n->in[i]) != RT_KIND_TENSOR)
			return rt_node_err(n, err, STRATA_INVALID_GRAPH, "input %d is not a tensor", i);
		if (rt_graph_dtype(g, n->in[i]) != dt)
			return rt_node_err(n, err, STRATA_INVALID_GRAPH,
			                   "input %d is %s, input 0 is %s", i,
			                   base_dtype_name(rt_graph_dtype(g, n->in[i])),
			                   base_dtype_name(dt));
	}
	rt_graph_set_type(g, n->out[0], RT_KIND_SEQUENCE, dt);
	n->run = run_construct;
	return 0;
}

/* ---- SequenceAt, SequenceLength ------------------------------------------------------- */

static int run_at(struct rt_node *n, struct rt_exec *x)
{
	int rc;
	const struct rt_sequence *s = seq_in(x, n, 0, &rc);
	if (!s)
		return rc;
	const struct rt_tensor *p = rt_input(x, n, 1);
	int64_t pos = 0;
	if (!p)
		return rt_fail(x, n, STRATA_RUNTIME, "position is missing");
	if ((rc = read_position(x, n, p, &pos)) != 0)
		return rc;
	if (pos < -(int64_t)s->count || pos >= s->count)
		return rt_fail(x, n, STRATA_RUNTIME, "position %lld is out of range for %d items",
		               (long long)pos, s->count);
	if (pos < 0)
		pos += s->count;
	struct rt_arg a = { .kind = RT_ARG_TENSOR, .tensor = s->items[pos] };
	return rt_output_arg(x, n, 0, &a);
}

static int init_at(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	int rc = want_seq(n, g, 0, err);
	if (rc != 0)
		return rc;
	if (n->nin < 2 || n->in[1] < 0 || !is_index_type(rt_graph_dtype(g, n->in[1])) ||
	    rt_graph_kind(g, n->in[1]) != RT_KIND_TENSOR)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "position must be an int32/int64 tensor");
	if (n->nout < 1)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "it needs an output");
	rt_graph_set_type(g, n->out[0], RT_KIND_TENSOR, rt_graph_dtype(g, n->in[0]));
	n->run = run_at;
	return 0;
}

static int run_length(struct rt_node *n, struct rt_exec *x)
{
	int rc;
	const struct rt_sequence *s = seq_in(x, n, 0, &rc);
	if (!s)
		return rc;
	struct rt_tensor *o;
	if ((rc = rt_output(x, n, 0, BASE_DT_INT64, 0, NULL, &o)) != 0)
		return rc;
	*(int64_t *)o->data = s->count;
	return 0;
}

static int init_length(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	int rc = want_seq(n, g, 0, err);
	if (rc != 0)
		return rc;
	if (n->nout < 1)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "it needs an output");
	rt_graph_set_type(g, n->out[0], RT_KIND_TENSOR, BASE_DT_INT64);
	n->run = run_length;
	return 0;
}

/* ---- SequenceInsert, SequenceErase ------------------------------------------------------ */

static int run_insert(struct rt_node *n, struct rt_exec *x)
{
	int rc;
	const struct rt_sequence *s = seq_in(x, n, 0, &rc);
	if (!s)
		return rc;
	const struct rt_tensor *t = rt_input(x, n, 1);
	if (!t)
		return rt_fail(x, n, STRATA_RUNTIME, "the tensor to insert is missing");
	if (t->dtype != s->dtype)
		return rt_fail(x, n, STRATA_RUNTIME, "inserting %s into a sequence of %s",
		               base_dtype_name(t->dtype), base_dtype_name(s->dtype));
	int64_t pos = s->count;
	const struct rt_tensor *p = rt_input(x, n, 2);
	if (p && (rc = read_position(x, n, p, &pos)) != 0)
		return rc;
	if (pos < -(int64_t)s->count || pos > s->count)
		return rt_fail(x, n, STRATA_RUNTIME, "position %lld is out of range for %d items",
		               (long long)pos, s->count);
	if (pos < 0)
		pos += s->count;
	if ((rc = rt_output_seq(x, n, 0, s->dtype)) != 0)
		return rc;
	for (int i = 0; i <= s->count && rc == 0; i++) {
		if (i == pos)
			rc = rt_seq_append_copy(x, n, 0, t);
		if (i < s->count && rc == 0)
			rc = rt_seq_append_copy(x, n, 0, &s->items[i]);
	}
	return rc;
}

static int run_erase(struct rt_node *n, struct rt_exec *x)
{
	int rc;
	const struct rt_sequence *s = seq_in(x, n, 0, &rc);
	if (!s)
		return rc;
	int64_t pos = (int64_t)s->count - 1;
	const struct rt_tensor *p = rt_input(x, n, 1);
	if (p && (rc = read_position(x, n, p, &pos)) != 0)
		return rc;
	if (pos < -(int64_t)s->count || pos >= s->count)
		return rt_fail(x, n, STRATA_RUNTIME, "position %lld is out of range for %d items",
		               (long long)pos, s->count);
	if (pos < 0)
		pos += s->count;
	if ((rc = rt_output_seq(x, n, 0, s->dtype)) != 0)
		return rc;
	for (int i = 0; i < s->count && rc == 0; i++)
		if (i != pos)
			rc = rt_seq_append_copy(x, n, 0, &s->items[i]);
	return rc;
}

static int init_insert_erase(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	int insert = strcmp(n->op, "SequenceInsert") == 0;
	int rc = want_seq(n, g, 0, err);
	if (rc != 0)
		return rc;
	int dt = rt_graph_dtype(g, n->in[0]);
	if (insert) {
		if (n->nin < 2 || n->in[1] < 0 || (rc = want_tensor(n, g, 1, err)) != 0)
			return rc ? rc : rt_node_err(n, err, STRATA_INVALID_GRAPH, "the tensor is missing");
		if (rt_graph_dtype(g, n->in[1]) != dt)
			return rt_node_err(n, err, STRATA_INVALID_GRAPH,
			                   "inserting %s into a sequence of %s",
			                   base_dtype_name(rt_graph_dtype(g, n->in[1])), base_dtype_name(dt));
	}
	int pi = insert ? 2 : 1;
	if (pi < n->nin && n->in[pi] >= 0 && !is_index_type(rt_graph_dtype(g, n->in[pi])))
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "position must be int32 or int64");
	if ((rc = want_tensor(n, g, pi, err)) != 0)
		return rc;
	if (n->nout < 1)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "it needs an output");
	rt_graph_set_type(g, n->out[0], RT_KIND_SEQUENCE, dt);
	n->run = insert ? run_insert : run_erase;
	return 0;
}

/* ---- SplitToSequence -------------------------------------------------------------------- */

/* Copy slab [start, start + len) of axis from t into o (same rank, dims
 * except that axis). */
static void copy_slab(const struct rt_tensor *t, int axis, int64_t start, int64_t len, void *dst)
{
	int64_t outer = 1, inner = 1;
	for (int d = 0; d < axis; d++)
		outer *= t->dims[d];
	for (int d = axis + 1; d < t->rank; d++)
		inner *= t->dims[d];
	int ok;
	size_t es = rt_tensor_bytes(t->dtype, 1, &ok);
	size_t row = (size_t)(len * inner) * es;
	for (int64_t o = 0; o < outer; o++)
		if (row)
			memcpy((char *)dst + (size_t)o * row,
			       (const char *)t->data + ((size_t)(o * t->dims[axis] + start) * (size_t)inner) * es,
			       row);
}

static int run_split(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *t = rt_input(x, n, 0);
	const struct rt_tensor *sp = rt_input(x, n, 1);
	if (!t)
		return rt_fail(x, n, STRATA_RUNTIME, "input 0 holds no tensor");
	int axis = rt_axis(rt_attr_int(n, "axis", 0), t->rank);
	if (axis < 0)
		return rt_fail(x, n, STRATA_RUNTIME, "axis is out of range for rank %d", t->rank);
	int keepdims = rt_attr_int(n, "keepdims", 1) != 0;
	int64_t dim = t->dims[axis];
	int64_t nparts, chunk = 1;
	const void *sizes = NULL;
	if (!sp) {
		nparts = dim;
	} else if (sp->rank == 0) {
		chunk = sp->dtype == BASE_DT_INT32 ? *(const int32_t *)sp->data
		                                   : *(const int64_t *)sp->data;
		if (chunk <= 0)
			return rt_fail(x, n, STRATA_RUNTIME, "split size %lld is not positive",
			               (long long)chunk);
		nparts = (dim + chunk - 1) / chunk;
		keepdims = 1;
	} else if (sp->rank == 1) {
		nparts = sp->dims[0];
		sizes = sp->data;
		int64_t sum = 0;
		for (int64_t i = 0; i < nparts; i++) {
			int64_t v = sp->dtype == BASE_DT_INT32 ? ((const int32_t *)sizes)[i]
			                                       : ((const int64_t *)sizes)[i];
			if (v < 0 || v > dim)
				return rt_fail(x, n, STRATA_RUNTIME, "split size %lld is out of range",
				               (long long)v);
			sum += v;
		}
		if (sum != dim)
			return rt_fail(x, n, STRATA_RUNTIME, "split sizes add up to %lld, the axis is %lld",
			               (long long)sum, (long long)dim);
		keepdims = 1;
	} else {
		return rt_fail(x, n, STRATA_RUNTIME, "split must be a scalar or 1-D");
	}
	if (nparts > RT_SEQ_MAX)
		return rt_fail(x, n, STRATA_LIMIT, "%lld parts are too many", (long long)nparts);
	int rc = rt_output_seq(x, n, 0, t->dtype);
	int64_t start = 0;
	for (int64_t i = 0; i < nparts && rc == 0; i++) {
		int64_t len = chunk;
		if (sizes)
			len = sp->dtype == BASE_DT_INT32 ? ((const int32_t *)sizes)[i]
			                                 : ((const int64_t *)sizes)[i];
		else if (start + len > dim)
			len = dim - start;
		int64_t dims[RT_MAX_RANK];
		int r = 0;
		for (int d = 0; d < t->rank; d++) {
			if (d == axis && !keepdims)
				continue;
			dims[r++] = d == axis ? len : t->dims[d];
		}
		struct rt_tensor *o;
		if ((rc = rt_seq_append(x, n, 0, r, dims, &o)) != 0)
			break;
		if (o->dtype == t->dtype)
			copy_slab(t, axis, start, len, o->data);
		start += len;
	}
	return rc;
}

static int init_split(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	if (n->nin < 1 || n->in[0] < 0 || n->nout < 1)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "it needs an input and an output");
	int rc = want_tensor(n, g, 0, err);
	if (rc == 0)
		rc = want_tensor(n, g, 1, err);
	if (rc != 0)
		return rc;
	if (n->nin > 1 && n->in[1] >= 0 && !is_index_type(rt_graph_dtype(g, n->in[1])))
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "split must be int32 or int64");
	rt_graph_set_type(g, n->out[0], RT_KIND_SEQUENCE, rt_graph_dtype(g, n->in[0]));
	n->run = run_split;
	return 0;
}

/* ---- ConcatFromSequence ----------------------------------------------------------------- */

static int run_concat(struct rt_node *n, struct rt_exec *x)
{
	int rc;
	const struct rt_sequence *s = seq_in(x, n, 0, &rc);
	if (!s)
		return rc;
	if (s->count == 0)
		return rt_fail(x, n, STRATA_RUNTIME, "the sequence is empty");
	int new_axis = rt_attr_int(n, "new_axis", 0) != 0;
	const struct rt_tensor *t0 = &s->items[0];
	int r = t0->rank;
	if (new_axis && r + 1 > RT_MAX_RANK)
		return rt_fail(x, n, STRATA_LIMIT, "rank %d is too large", r + 1);
	int axis = rt_axis(rt_attr_int(n, "axis", 0), r + new_axis);
	if (axis < 0)
		return rt_fail(x, n, STRATA_RUNTIME, "axis is out of range");
	int64_t dims[RT_MAX_RANK], total = 0;
	for (int i = 0; i < s->count; i++) {
		const struct rt_tensor *t = &s->items[i];
		if (t->rank != r || t->dtype != t0->dtype)
			return rt_fail(x, n, STRATA_RUNTIME, "item %d has another rank or type", i);
		for (int d = 0; d < r; d++)
			if (t->dims[d] != t0->dims[d] && (new_axis || d != axis))
				return rt_fail(x, n, STRATA_RUNTIME, "item %d has another shape", i);
		total += new_axis ? 1 : t->dims[axis];
	}
	/* A stack is a concatenation along an inserted axis of size 1. */
	int orank = r + new_axis;
	for (int d = 0, k = 0; d < orank; d++) {
		if (d == axis) {
			dims[d] = total;
			if (!new_axis)
				k++;
		} else {
			dims[d] = t0->dims[k++];
		}
	}
	struct rt_tensor *o;
	if ((rc = rt_output(x, n, 0, t0->dtype, orank, dims, &o)) != 0)
		return rc;
	int64_t outer = 1, inner = 1;
	for (int d = 0; d < axis; d++)
		outer *= dims[d];
	for (int d = axis + 1; d < orank; d++)
		inner *= dims[d];
	int ok;
	size_t es = rt_tensor_bytes(t0->dtype, 1, &ok);
	size_t orow = (size_t)(total * inner) * es, off = 0;
	for (int i = 0; i < s->count; i++) {
		const struct rt_tensor *t = &s->items[i];
		size_t row = (size_t)((new_axis ? 1 : t->dims[axis]) * inner) * es;
		for (int64_t k = 0; k < outer && row; k++)
			memcpy((char *)o->data + (size_t)k * orow + off,
			       (const char *)t->data + (size_t)k * row, row);
		off += row;
	}
	return 0;
}

static int init_concat(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	int rc = want_seq(n, g, 0, err);
	if (rc != 0)
		return rc;
	if (!rt_attr_find(n, "axis"))
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "attribute axis is required");
	if (n->nout < 1)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "it needs an output");
	rt_graph_set_type(g, n->out[0], RT_KIND_TENSOR, rt_graph_dtype(g, n->in[0]));
	n->run = run_concat;
	return 0;
}

/* ---- SequenceMap -------------------------------------------------------------------------- */

#define MAP_MAX_IO 64

static int run_map(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_graph *body = n->state;
	int rc;
	const struct rt_sequence *s0 = seq_in(x, n, 0, &rc);
	if (!s0)
		return rc;
	struct rt_arg in[MAP_MAX_IO], out[MAP_MAX_IO];
	for (int j = 0; j < n->nout; j++)
		if ((rc = rt_output_seq(x, n, j, rt_graph_dtype(body, body->outputs[j]))) != 0)
			return rc;
	for (int j = 0; j < n->nin; j++) {
		const struct rt_sequence *s = rt_input_seq(x, n, j);
		if (s && s->count != s0->count)
			return rt_fail(x, n, STRATA_RUNTIME, "sequence input %d has %d items, input 0 has %d",
			               j, s->count, s0->count);
	}
	for (int i = 0; i < s0->count; i++) {
		for (int j = 0; j < n->nin; j++) {
			const struct rt_sequence *s = rt_input_seq(x, n, j);
			const struct rt_tensor *t = rt_input(x, n, j);
			memset(&in[j], 0, sizeof in[j]);
			if (s) {
				in[j].kind = RT_ARG_TENSOR;
				in[j].tensor = s->items[i];
			} else if (t) {
				in[j].kind = RT_ARG_TENSOR;
				in[j].tensor = *t;
			} else {
				in[j].kind = RT_ARG_NONE;
			}
		}
		if ((rc = rt_subgraph_run(x, n, body, in, out)) != 0)
			return rc;
		for (int j = 0; j < n->nout; j++) {
			if (out[j].kind != RT_ARG_TENSOR)
				return rt_fail(x, n, STRATA_RUNTIME, "the body's output %d is not a tensor", j);
			if ((rc = rt_seq_append_copy(x, n, j, &out[j].tensor)) != 0)
				return rc;
		}
	}
	return 0;
}

/* The body is resolved: each output is a sequence of its output's type. */
static int finish_map(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	struct rt_graph *body = n->sub[0];
	for (int j = 0; j < n->nout; j++) {
		int bv = body->outputs[j];
		if (rt_graph_kind(body, bv) != RT_KIND_TENSOR)
			return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED,
			                   "body output %d is not a tensor (opset %d)", j, n->opset);
		rt_graph_set_type(g, n->out[j], RT_KIND_SEQUENCE, rt_graph_dtype(body, bv));
	}
	n->state = body;
	n->run = run_map;
	return 0;
}

static int init_map(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	const struct rt_attr *a = rt_attr_find(n, "body");
	if (!a || a->type != RT_ATTR_GRAPH || !a->graph)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "attribute body (a graph) is required");
	struct rt_graph *body = a->graph;
	int rc = want_seq(n, g, 0, err);
	if (rc != 0)
		return rc;
	if (n->nin > MAP_MAX_IO || n->nout > MAP_MAX_IO)
		return rt_node_err(n, err, STRATA_LIMIT, "at most %d inputs and outputs", MAP_MAX_IO);
	if (body->ninputs != n->nin || body->noutputs != n->nout)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH,
		                   "the body has %d inputs and %d outputs, the node %d and %d",
		                   body->ninputs, body->noutputs, n->nin, n->nout);
	/* A sequence input gives the body one item per run; a tensor passes
	 * as it is. */
	for (int j = 0; j < n->nin; j++) {
		if (n->in[j] < 0)
			return rt_node_err(n, err, STRATA_INVALID_GRAPH, "input %d is missing", j);
		int k = rt_graph_kind(g, n->in[j]);
		if (k != RT_KIND_TENSOR && k != RT_KIND_SEQUENCE)
			return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED,
			                   "optional inputs are not supported (opset %d)", n->opset);
		int dt = rt_graph_dtype(g, n->in[j]);
		int bv = body->inputs[j];
		if (rt_graph_dtype(body, bv) != BASE_DT_UNDEFINED &&
		    (rt_graph_dtype(body, bv) != dt || rt_graph_kind(body, bv) != RT_KIND_TENSOR))
			return rt_node_err(n, err, STRATA_INVALID_GRAPH,
			                   "body input %d does not match input %d", j, j);
		rt_graph_set_type(body, bv, RT_KIND_TENSOR, dt);
	}
	n->finish = finish_map;
	return rt_node_subgraph(n, body, err);
}

/* ---- Optional, OptionalHasElement, OptionalGetElement, Identity ------------------------ */

static int run_pass(struct rt_node *n, struct rt_exec *x)
{
	struct rt_arg a = { .kind = rt_input_kind(x, n, 0) };
	if (a.kind == RT_ARG_TENSOR)
		a.tensor = *rt_input(x, n, 0);
	else if (a.kind == RT_ARG_SEQUENCE)
		a.seq = *rt_input_seq(x, n, 0);
	return rt_output_arg(x, n, 0, &a);
}

static int run_optional(struct rt_node *n, struct rt_exec *x)
{
	if (n->nin < 1 || n->in[0] < 0)
		return rt_output_none(x, n, 0);
	return run_pass(n, x);
}

static int init_optional(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	if (n->nout < 1)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "it needs an output");
	int kind, dt;
	if (n->nin >= 1 && n->in[0] >= 0) {
		kind = rt_graph_kind(g, n->in[0]);
		dt = rt_graph_dtype(g, n->in[0]);
		if (kind != RT_KIND_TENSOR && kind != RT_KIND_SEQUENCE)
			return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED,
			                   "an optional of an optional is not supported (opset %d)",
			                   n->opset);
	} else {
		const struct rt_attr *a = rt_attr_find(n, "type");
		if (!a || a->type != RT_ATTR_TYPE_PROTO)
			return rt_node_err(n, err, STRATA_INVALID_GRAPH,
			                   "without an input, attribute type is required");
		if (a->type_kind != RT_KIND_TENSOR && a->type_kind != RT_KIND_SEQUENCE)
			return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED,
			                   "attribute type names a type without support (opset %d)",
			                   n->opset);
		kind = a->type_kind;
		dt = a->type_dtype;
		if (dt == BASE_DT_UNDEFINED)
			return rt_node_err(n, err, STRATA_INVALID_GRAPH, "attribute type has no element type");
	}
	rt_graph_set_type(g, n->out[0],
	                  kind == RT_KIND_SEQUENCE ? RT_KIND_OPTIONAL_SEQUENCE : RT_KIND_OPTIONAL_TENSOR,
	                  dt);
	n->run = run_optional;
	return 0;
}

static int run_has(struct rt_node *n, struct rt_exec *x)
{
	struct rt_tensor *o;
	int rc = rt_output(x, n, 0, BASE_DT_BOOL, 0, NULL, &o);
	if (rc == 0)
		*(uint8_t *)o->data = rt_input_kind(x, n, 0) != RT_ARG_NONE;
	return rc;
}

static int init_has(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	if (n->nout < 1)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "it needs an output");
	rt_graph_set_type(g, n->out[0], RT_KIND_TENSOR, BASE_DT_BOOL);
	n->run = run_has;
	return 0;
}

static int run_get(struct rt_node *n, struct rt_exec *x)
{
	if (rt_input_kind(x, n, 0) == RT_ARG_NONE)
		return rt_fail(x, n, STRATA_RUNTIME, "the optional input is empty");
	return run_pass(n, x);
}

/* OptionalGetElement (and Identity on non-tensors): the value without its
 * optional wrapper. */
static int init_get(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	if (n->nin < 1 || n->in[0] < 0 || n->nout < 1)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "it needs an input and an output");
	int kind = rt_graph_kind(g, n->in[0]);
	int identity = strcmp(n->op, "Identity") == 0;
	if (!identity)
		kind = is_seq_kind(kind) ? RT_KIND_SEQUENCE : RT_KIND_TENSOR;
	rt_graph_set_type(g, n->out[0], kind, rt_graph_dtype(g, n->in[0]));
	n->run = identity ? run_pass : run_get;
	return 0;
}

const struct rt_opdef rt_op_identity_value = { "", "Identity", 1, init_get, NULL };

const struct rt_opdef rt_ops_sequence[] = {
	{ "", "SequenceEmpty", 11, init_empty, NULL },
	{ "", "SequenceConstruct", 11, init_construct, NULL },
	{ "", "SequenceAt", 11, init_at, NULL },
	{ "", "SequenceInsert", 11, init_insert_erase, NULL },
	{ "", "SequenceErase", 11, init_insert_erase, NULL },
	{ "", "SequenceLength", 11, init_length, NULL },
	{ "", "SplitToSequence", 11, init_split, NULL },
	{ "", "ConcatFromSequence", 11, init_concat, NULL },
	{ "", "SequenceMap", 17, init_map, NULL },
	{ "", "Optional", 15, init_optional, NULL },
	{ "", "OptionalHasElement", 15, init_has, NULL },
	{ "", "OptionalGetElement", 15, init_get, NULL },
	{ .op = NULL },
};
