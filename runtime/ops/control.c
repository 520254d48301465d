/*
 * control.c: the control-flow operators If, Loop and Scan.
 *
 * Each runs a subgraph (a GRAPH attribute, built by load.c) through
 * rt_subgraph_run(): the body gets its own value table in a child context
 * and may read values of the enclosing graph (captured by name at load).
 * init checks the node, gives the bodies' inputs the types the node gives
 * them and names the bodies (rt_node_subgraph); the resolver resolves them,
 * then finish types the node's outputs from the bodies' outputs.
 *
 * Loop-carried values go from one body run to the next without copies (a
 * child's outputs stay alive until its next run ends); only the final values
 * are copied into the node's outputs.  Scan outputs are stacked as the
 * iterations produce them.  Iteration counts, axes and shapes from the model
 * or the inputs are all checked.
 */
#include <string.h>

#include "../kernel.h"

/* Loop and Scan bodies take at most this many inputs and outputs. */
#define MAX_IO 128
/* A Loop without a trip count or condition stops here rather than spin. */
#define MAX_ITER ((int64_t)1 << 31)

static struct rt_graph *graph_attr(const struct rt_node *n, const char *name)
{
	const struct rt_attr *a = rt_attr_find(n, name);
	return a && a->type == RT_ATTR_GRAPH ? a->graph : NULL;
}

static int is_seq(int kind)
{
	return kind == RT_KIND_SEQUENCE || kind == RT_KIND_OPTIONAL_SEQUENCE;
}

static int is_opt(int kind)
{
	return kind == RT_KIND_OPTIONAL_TENSOR || kind == RT_KIND_OPTIONAL_SEQUENCE;
}

/* Give body input k the type of outer value v unless the body declares one. */
static int type_body_input(struct rt_node *n, struct rt_graph *body, int k, int kind, int dtype,
                           struct strata_error *err)
{
	int bv = body->inputs[k];
	if (rt_graph_dtype(body, bv) == BASE_DT_UNDEFINED) {
		rt_graph_set_type(body, bv, kind, dtype);
		return 0;
	}
	if (rt_graph_dtype(body, bv) != dtype || is_seq(rt_graph_kind(body, bv)) != is_seq(kind))
		return rt_node_err(n, err, STRATA_INVALID_GRAPH,
		                   "body input %d is %s, the node gives %s", k,
		                   base_dtype_name(rt_graph_dtype(body, bv)), base_dtype_name(dtype));
	/* A plain value may go where the body expects an optional; an optional
	 * value needs an optional input. */
	if (is_opt(kind) && !is_opt(rt_graph_kind(body, bv)))
		rt_graph_set_type(body, bv, kind, dtype);
	return 0;
}

static void arg_of_input(struct rt_exec *x, const struct rt_node *n, int i, struct rt_arg *a)
{
	memset(a, 0, sizeof *a);
	a->kind = rt_input_kind(x, n, i);
	if (a->kind == RT_ARG_TENSOR)
		a->tensor = *rt_input(x, n, i);
	else if (a->kind == RT_ARG_SEQUENCE)
		a->seq = *rt_input_seq(x, n, i);
}

static int read_bool(const struct rt_tensor *t, int *b)
{
	if (!t || t->dtype != BASE_DT_BOOL || runtime_tensor_count(t) != 1)
		return -1;
	*b = ((const uint8_t *)t->data)[0] != 0;
	return 0;
}

/* ---- If ------------------------------------------------------------------------------ */

static int run_if(struct rt_node *n, struct rt_exec *x)
{
	int c;
	if (read_bool(rt_input(x, n, 0), &c) != 0)
		return rt_fail(x, n, STRATA_RUNTIME, "cond must be a bool tensor of one cell");
	const struct rt_graph *br = graph_attr(n, c ? "then_branch" : "else_branch");
	struct rt_arg out[MAX_IO];
	int rc = rt_subgraph_run(x, n, br, NULL, out);
	for (int j = 0; j < n->nout && rc == 0; j++)
		rc = rt_output_arg(x, n, j, &out[j]);
	return rc;
}

/* The branches are resolved: the outputs take their types. */
static int finish_if(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	struct rt_graph *th = n->sub[0], *el = n->sub[1];
	for (int j = 0; j < n->nout; j++) {
		int tv = th->outputs[j], ev = el->outputs[j];
		int tk = rt_graph_kind(th, tv), ek = rt_graph_kind(el, ev);
		int dt = rt_graph_dtype(th, tv);
		if (dt != rt_graph_dtype(el, ev) || is_seq(tk) != is_seq(ek))
			return rt_node_err(n, err, STRATA_INVALID_GRAPH,
			                   "output %d: the branches make different types", j);
		int kind = tk;
		if (is_opt(ek))
			kind = ek;
		rt_graph_set_type(g, n->out[j], kind, dt);
	}
	n->run = run_if;
	return 0;
}

static int init_if(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	struct rt_graph *th = graph_attr(n, "then_branch"), *el = graph_attr(n, "else_branch");
	if (!th || !el)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH,
		                   "attributes then_branch and else_branch (graphs) are required");
	if (n->nin < 1 || n->in[0] < 0 || rt_graph_dtype(g, n->in[0]) != BASE_DT_BOOL)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "cond must be a bool tensor");
	if (th->ninputs || el->ninputs)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "the branches must take no inputs");
	if (th->noutputs != n->nout || el->noutputs != n->nout || n->nout > MAX_IO)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH,
		                   "the branches make %d and %d outputs, the node has %d", th->noutputs,
		                   el->noutputs, n->nout);
	n->finish = finish_if;
	int rc = rt_node_subgraph(n, th, err);
	return rc ? rc : rt_node_subgraph(n, el, err);
}

/* ---- Loop ------------------------------------------------------------------------------ */

/* A growing stack of equally shaped tensors (one scan output of a Loop). */
struct stack {
	struct rt_tensor first;  /* type and shape of every item */
	char *data;
	size_t item, cap;        /* bytes per item, bytes of data */
	int64_t count;
};

static int stack_push(struct rt_exec *x, const struct rt_node *n, struct stack *s,
                      const struct rt_tensor *t)
{
	int ok;
	size_t bytes = rt_tensor_bytes(t->dtype, runtime_tensor_count(t), &ok);
	if (s->count == 0) {
		s->first = *t;
		s->item = bytes;
	} else {
		int same = t->dtype == s->first.dtype && t->rank == s->first.rank;
		for (int d = 0; same && d < t->rank; d++)
			same = t->dims[d] == s->first.dims[d];
		if (!same)
			return rt_fail(x, n, STRATA_RUNTIME, "a scan output changes shape between iterations");
	}
	size_t need = (size_t)(s->count + 1) * s->item;
	if (need > s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 4 * s->item + 64;
		if (cap < need)
			cap = need;
		/* Scratch is not freed before the node returns: the old block
		 * waits, which bounds the waste at the final size. */
		char *p = rt_scratch(x, cap);
		if (!p)
			return rt_nomem(x, n, "a scan output");
		if (s->count && s->item)
			memcpy(p, s->data, (size_t)s->count * s->item);
		s->data = p;
		s->cap = cap;
	}
	if (s->item)
		memcpy(s->data + (size_t)s->count * s->item, t->data, s->item);
	s->count++;
	return 0;
}

static int stack_output(struct rt_exec *x, const struct rt_node *n, int i, struct stack *s,
                        int dtype)
{
	int64_t dims[RT_MAX_RANK];
	int rank = 1;
	dims[0] = s->count;
	if (s->count) {
		if (s->first.rank + 1 > RT_MAX_RANK)
			return rt_fail(x, n, STRATA_LIMIT, "scan output %d has too high a rank", i);
		for (int d = 0; d < s->first.rank; d++)
			dims[d + 1] = s->first.dims[d];
		rank = s->first.rank + 1;
		dtype = s->first.dtype;
	}
	struct rt_tensor *o;
	int rc = rt_output(x, n, i, dtype, rank, dims, &o);
	if (rc == 0 && s->count && s->item)
		memcpy(o->data, s->data, (size_t)s->count * s->item);
	return rc;
}

struct loop_state {
	struct rt_graph *body;
	int ncarried, nscan;
};

static int run_loop(struct rt_node *n, struct rt_exec *x)
{
	const struct loop_state *ls = n->state;
	const struct rt_graph *body = ls->body;
	int N = ls->ncarried, K = ls->nscan;
	int64_t max = MAX_ITER;
	const struct rt_tensor *mt = rt_input(x, n, 0);
	if (mt) {
		if (mt->dtype != BASE_DT_INT64 || runtime_tensor_count(mt) != 1)
			return rt_fail(x, n, STRATA_RUNTIME, "M must be an int64 tensor of one cell");
		max = ((const int64_t *)mt->data)[0];
	}
	int cond = 1;
	if (n->nin > 1 && n->in[1] >= 0 && read_bool(rt_input(x, n, 1), &cond) != 0)
		return rt_fail(x, n, STRATA_RUNTIME, "cond must be a bool tensor of one cell");

	struct rt_arg in[MAX_IO], out[MAX_IO];
	struct stack *st = rt_scratch(x, (size_t)(K + 1) * sizeof *st);
	int64_t *iter = rt_scratch(x, sizeof *iter);
	uint8_t *cbuf = rt_scratch(x, 1);
	if (!st || !iter || !cbuf)
		return rt_nomem(x, n, "kernel scratch");
	memset(st, 0, (size_t)(K + 1) * sizeof *st);
	memset(in, 0, sizeof in[0] * 2);
	in[0].kind = RT_ARG_TENSOR;
	in[0].tensor = (struct rt_tensor){ BASE_DT_INT64, 0, { 0 }, iter };
	in[1].kind = RT_ARG_TENSOR;
	in[1].tensor = (struct rt_tensor){ BASE_DT_BOOL, 0, { 0 }, cbuf };
	for (int j = 0; j < N; j++)
		arg_of_input(x, n, 2 + j, &in[2 + j]);

	int rc = 0;
	for (int64_t i = 0; i < max && cond; i++) {
		if (i >= MAX_ITER)
			return rt_fail(x, n, STRATA_LIMIT, "more than %lld iterations",
			               (long long)MAX_ITER);
		*iter = i;
		*cbuf = (uint8_t)cond;
		if ((rc = rt_subgraph_run(x, n, body, in, out)) != 0)
			return rc;
		if (read_bool(out[0].kind == RT_ARG_TENSOR ? &out[0].tensor : NULL, &cond) != 0)
			return rt_fail(x, n, STRATA_RUNTIME, "the body's cond is not a bool of one cell");
		/* The outputs of this run are the next run's inputs, as they are. */
		for (int j = 0; j < N; j++)
			in[2 + j] = out[1 + j];
		for (int k = 0; k < K; k++) {
			if (out[1 + N + k].kind != RT_ARG_TENSOR)
				return rt_fail(x, n, STRATA_NOT_IMPLEMENTED,
				               "scan output %d is not a tensor (opset %d)", k, n->opset);
			if ((rc = stack_push(x, n, &st[k], &out[1 + N + k].tensor)) != 0)
				return rc;
		}
	}
	for (int j = 0; j < N && rc == 0; j++)
		rc = rt_output_arg(x, n, j, &in[2 + j]);
	for (int k = 0; k < K && rc == 0; k++)
		rc = stack_output(x, n, N + k, &st[k], rt_graph_dtype(body, body->outputs[1 + N + k]));
	return rc;
}

static void fini_state(struct rt_node *n)
{
	if (n->state)
		base_free(n->state, sizeof(struct loop_state));
	n->state = NULL;
}

/* The body is resolved: the outputs take its types. */
static int finish_loop(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	struct rt_graph *body = n->sub[0];
	int N = n->nin - 2;
	int K = body->noutputs - 1 - N;
	for (int j = 0; j < N; j++) {
		int bv = body->outputs[1 + j];
		int kind = rt_graph_kind(body, bv);
		int in_kind = rt_graph_kind(body, body->inputs[2 + j]);
		if (is_seq(kind) != is_seq(in_kind) ||
		    rt_graph_dtype(body, bv) != rt_graph_dtype(body, body->inputs[2 + j]))
			return rt_node_err(n, err, STRATA_INVALID_GRAPH,
			                   "loop-carried value %d changes type in the body", j);
		if (is_opt(in_kind))
			kind = in_kind;
		rt_graph_set_type(g, n->out[j], kind, rt_graph_dtype(body, bv));
	}
	for (int k = 0; k < K; k++) {
		int bv = body->outputs[1 + N + k];
		if (rt_graph_kind(body, bv) != RT_KIND_TENSOR)
			return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED,
			                   "scan output %d is not a tensor (opset %d)", k, n->opset);
		rt_graph_set_type(g, n->out[N + k], RT_KIND_TENSOR, rt_graph_dtype(body, bv));
	}
	struct loop_state *ls = base_calloc(1, sizeof *ls);
	if (!ls)
		return rt_node_nomem(n, err, "kernel state");
	ls->body = body;
	ls->ncarried = N;
	ls->nscan = K;
	n->state = ls;
	n->run = run_loop;
	return 0;
}

static int init_loop(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	struct rt_graph *body = graph_attr(n, "body");
	if (!body)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "attribute body (a graph) is required");
	if (n->nin < 2 || n->nin > MAX_IO || body->noutputs > MAX_IO)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "bad input count %d", n->nin);
	int N = n->nin - 2;
	int K = body->noutputs - 1 - N;
	if (body->ninputs != N + 2 || K < 0 || n->nout != N + K)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH,
		                   "the body has %d inputs and %d outputs for %d loop-carried values "
		                   "and %d node outputs", body->ninputs, body->noutputs, N, n->nout);
	if (n->in[0] >= 0 && rt_graph_dtype(g, n->in[0]) != BASE_DT_INT64)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "M must be int64");
	if (n->in[1] >= 0 && rt_graph_dtype(g, n->in[1]) != BASE_DT_BOOL)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "cond must be bool");
	int rc = type_body_input(n, body, 0, RT_KIND_TENSOR, BASE_DT_INT64, err);
	if (rc == 0)
		rc = type_body_input(n, body, 1, RT_KIND_TENSOR, BASE_DT_BOOL, err);
	for (int j = 0; j < N && rc == 0; j++) {
		int v = n->in[2 + j];
		if (v < 0) {
			/* An omitted initial value is an empty optional: the body says
			 * what it would hold. */
			if (!is_opt(rt_graph_kind(body, body->inputs[2 + j])))
				return rt_node_err(n, err, STRATA_INVALID_GRAPH,
				                   "loop-carried value %d is omitted but not optional", j);
			continue;
		}
		rc = type_body_input(n, body, 2 + j, rt_graph_kind(g, v), rt_graph_dtype(g, v), err);
	}
	n->finish = finish_loop;
	return rc ? rc : rt_node_subgraph(n, body, err);
}

/* ---- Scan ------------------------------------------------------------------------------ */

struct scan_state {
	struct rt_graph *body;
	int nstate, nin, nout;   /* states, scan inputs, scan outputs */
	int batched;             /* opset 8: axis 0 is a batch, sequence_lens first */
	int64_t in_axis[MAX_IO], in_rev[MAX_IO], out_axis[MAX_IO], out_rev[MAX_IO];
};

/* Copy slice idx of axis from t into dst (t without that axis). */
static void take_slice(const struct rt_tensor *t, int axis, int64_t idx, void *dst, size_t es)
{
	int64_t outer = 1, inner = 1;
	for (int d = 0; d < axis; d++)
		outer *= t->dims[d];
	for (int d = axis + 1; d < t->rank; d++)
		inner *= t->dims[d];
	size_t row = (size_t)inner * es;
	for (int64_t o = 0; o < outer && row; o++)
		memcpy((char *)dst + (size_t)o * row,
		       (const char *)t->data + ((size_t)(o * t->dims[axis] + idx)) * row, row);
}

/* Place t as slice idx of axis of o (o has t's shape with axis inserted). */
static void put_slice(struct rt_tensor *o, int axis, int64_t idx, const struct rt_tensor *t,
                      size_t es)
{
	int64_t outer = 1, inner = 1;
	for (int d = 0; d < axis; d++)
		outer *= o->dims[d];
	for (int d = axis + 1; d < o->rank; d++)
		inner *= o->dims[d];
	size_t row = (size_t)inner * es;
	for (int64_t k = 0; k < outer && row; k++)
		memcpy((char *)o->data + ((size_t)(k * o->dims[axis] + idx)) * row,
		       (const char *)t->data + (size_t)k * row, row);
}

/* One scan over scan inputs sin[] (views), from states st[] (updated to the
 * final states, which stay valid until the next body run).  Scan output k
 * goes to dst[k] (allocated by alloc() after the first iteration when NULL). */
struct scan_run {
	struct rt_exec *x;
	struct rt_node *n;
	const struct scan_state *ss;
	int64_t T;
	struct rt_tensor *dst[MAX_IO];
	int64_t base;            /* opset 8: the batch index */
	int64_t batch;           /* opset 8: the batch size */
};

static int alloc_dst(struct scan_run *r, int k, const struct rt_tensor *t)
{
	const struct scan_state *ss = r->ss;
	int64_t dims[RT_MAX_RANK];
	int axis = (int)ss->out_axis[k];
	int extra = ss->batched ? 1 : 0;
	if (t->rank + 1 + extra > RT_MAX_RANK)
		return rt_fail(r->x, r->n, STRATA_LIMIT, "scan output %d has too high a rank", k);
	axis = rt_axis(axis, t->rank + 1);
	if (axis < 0)
		return rt_fail(r->x, r->n, STRATA_RUNTIME, "scan output axis is out of range");
	int rank = 0;
	if (extra)
		dims[rank++] = r->batch;
	for (int d = 0, s = 0; d < t->rank + 1; d++)
		dims[rank++] = d == axis ? r->T : t->dims[s++];
	return rt_output(r->x, r->n, ss->nstate + k, t->dtype, rank, dims, &r->dst[k]);
}

static int scan_once(struct scan_run *r, struct rt_arg *st, const struct rt_tensor *sin,
                     struct rt_arg *out)
{
	struct rt_exec *x = r->x;
	struct rt_node *n = r->n;
	const struct scan_state *ss = r->ss;
	int S = ss->nstate, I = ss->nin, O = ss->nout;
	struct rt_arg in[MAX_IO];
	for (int j = 0; j < S; j++)
		in[j] = st[j];
	/* Slices of scan inputs: a view when the axis is the first, else a copy. */
	for (int j = 0; j < I; j++) {
		const struct rt_tensor *t = &sin[j];
		int axis = (int)ss->in_axis[j];
		struct rt_tensor *v = &in[S + j].tensor;
		in[S + j].kind = RT_ARG_TENSOR;
		v->dtype = t->dtype;
		v->rank = t->rank - 1;
		for (int d = 0, k = 0; d < t->rank; d++)
			if (d != axis)
				v->dims[k++] = t->dims[d];
		int ok;
		size_t bytes = rt_tensor_bytes(t->dtype, runtime_tensor_count(v), &ok);
		v->data = rt_scratch(x, bytes ? bytes : 1);
		if (!v->data)
			return rt_nomem(x, n, "a scan slice");
	}
	for (int64_t i = 0; i < r->T; i++) {
		for (int j = 0; j < I; j++) {
			int64_t idx = ss->in_rev[j] ? r->T - 1 - i : i;
			int ok;
			take_slice(&sin[j], (int)ss->in_axis[j], idx, in[S + j].tensor.data,
			           rt_tensor_bytes(sin[j].dtype, 1, &ok));
		}
		int rc = rt_subgraph_run(x, n, ss->body, in, out);
		if (rc != 0)
			return rc;
		for (int j = 0; j < S; j++)
			in[j] = out[j];
		for (int k = 0; k < O; k++) {
			const struct rt_arg *a = &out[S + k];
			if (a->kind != RT_ARG_TENSOR)
				return rt_fail(x, n, STRATA_RUNTIME, "scan output %d is not a tensor", k);
			if (!r->dst[k] && (rc = alloc_dst(r, k, &a->tensor)) != 0)
				return rc;
			struct rt_tensor *o = r->dst[k];
			int axis = rt_axis(ss->out_axis[k], a->tensor.rank + 1);
			int extra = ss->batched ? 1 : 0;
			int same = o->dtype == a->tensor.dtype && o->rank == a->tensor.rank + 1 + extra;
			for (int d = 0, s = 0; same && d < a->tensor.rank + 1; d++)
				if (d != axis)
					same = o->dims[d + extra] == a->tensor.dims[s++];
			if (!same)
				return rt_fail(x, n, STRATA_RUNTIME,
				               "scan output %d changes shape between iterations", k);
			int64_t idx = ss->out_rev[k] ? r->T - 1 - i : i;
			int ok;
			size_t es = rt_tensor_bytes(o->dtype, 1, &ok);
			if (extra) {
				/* Batch b of the output: a view of its slab. */
				struct rt_tensor ob = *o;
				ob.rank = o->rank - 1;
				memmove(ob.dims, o->dims + 1, sizeof(int64_t) * (RT_MAX_RANK - 1));
				ob.data = (char *)o->data +
				          (size_t)(r->base * (runtime_tensor_count(o) / (o->dims[0] ? o->dims[0] : 1))) * es;
				put_slice(&ob, axis, idx, &a->tensor, es);
			} else {
				put_slice(o, axis, idx, &a->tensor, es);
			}
		}
	}
	for (int j = 0; j < S; j++)
		st[j] = in[j];
	return 0;
}

static int run_scan(struct rt_node *n, struct rt_exec *x)
{
	const struct scan_state *ss = n->state;
	int S = ss->nstate, I = ss->nin, O = ss->nout;
	int first = ss->batched ? 1 : 0;
	struct scan_state local = *ss; /* with the input axes normalized */
	struct scan_run r = { .x = x, .n = n, .ss = &local, .T = -1 };
	struct rt_arg st[MAX_IO], out[MAX_IO];
	struct rt_tensor sin[MAX_IO];
	for (int j = 0; j < S + I; j++)
		if (!rt_input(x, n, first + j))
			return rt_fail(x, n, STRATA_RUNTIME, "input %d is missing", first + j);
	if (ss->batched && rt_input(x, n, 0))
		return rt_fail(x, n, STRATA_NOT_IMPLEMENTED, "sequence_lens is not supported (opset %d)",
		               n->opset);
	int64_t B = 1;
	if (ss->batched) {
		for (int j = 0; j < S + I; j++) {
			const struct rt_tensor *t = rt_input(x, n, first + j);
			if (t->rank < (j < S ? 1 : 2))
				return rt_fail(x, n, STRATA_RUNTIME, "input %d lacks the batch axis", first + j);
			if (j == 0 || t->dims[0] != B) {
				if (j > 0)
					return rt_fail(x, n, STRATA_RUNTIME, "inputs disagree on the batch size");
				B = t->dims[0];
			}
		}
	}
	r.batch = B;
	for (int j = 0; j < I; j++) {
		const struct rt_tensor *t = rt_input(x, n, first + S + j);
		int r0 = t->rank - first;
		int axis = rt_axis(ss->in_axis[j], r0);
		if (axis < 0)
			return rt_fail(x, n, STRATA_RUNTIME, "scan input %d: axis out of range", j);
		local.in_axis[j] = axis;
		int64_t T = t->dims[axis + first];
		if (r.T >= 0 && T != r.T)
			return rt_fail(x, n, STRATA_RUNTIME, "scan inputs disagree on the length");
		r.T = T;
	}
	if (r.T < 0)
		r.T = 0;
	struct rt_tensor *fin[MAX_IO] = { 0 };
	for (int64_t b = 0; b < B; b++) {
		r.base = b;
		for (int j = 0; j < S + I; j++) {
			const struct rt_tensor *t = rt_input(x, n, first + j);
			struct rt_tensor v = *t;
			if (ss->batched) {
				int ok;
				int64_t cells = B ? runtime_tensor_count(t) / B : 0;
				v.rank = t->rank - 1;
				memmove(v.dims, t->dims + 1, sizeof(int64_t) * (RT_MAX_RANK - 1));
				v.data = (char *)t->data + (size_t)(b * cells) * rt_tensor_bytes(t->dtype, 1, &ok);
			}
			if (j < S) {
				memset(&st[j], 0, sizeof st[j]);
				st[j].kind = RT_ARG_TENSOR;
				st[j].tensor = v;
			} else {
				sin[j - S] = v;
			}
		}
		int rc = scan_once(&r, st, sin, out);
		if (rc != 0)
			return rc;
		for (int j = 0; j < S; j++) {
			const struct rt_tensor *t = &st[j].tensor;
			if (!ss->batched) {
				rc = rt_output_arg(x, n, j, &st[j]);
			} else {
				int ok;
				size_t bytes = rt_tensor_bytes(t->dtype, runtime_tensor_count(t), &ok);
				if (!fin[j]) {
					int64_t dims[RT_MAX_RANK];
					if (t->rank + 1 > RT_MAX_RANK)
						return rt_fail(x, n, STRATA_LIMIT, "state %d has too high a rank", j);
					dims[0] = B;
					for (int d = 0; d < t->rank; d++)
						dims[d + 1] = t->dims[d];
					if ((rc = rt_output(x, n, j, t->dtype, t->rank + 1, dims, &fin[j])) != 0)
						return rc;
				}
				if ((size_t)runtime_tensor_count(fin[j]) / (size_t)B !=
				    (size_t)runtime_tensor_count(t))
					return rt_fail(x, n, STRATA_RUNTIME, "state %d changes shape across the batch", j);
				if (bytes)
					memcpy((char *)fin[j]->data + (size_t)b * bytes, t->data, bytes);
			}
			if (rc != 0)
				return rc;
		}
	}
	/* No iteration (or no batch): outputs take the shapes they can. */
	for (int k = 0; k < O; k++)
		if (!r.dst[k]) {
			int64_t dims[2] = { B, 0 };
			int rc = rt_output(x, n, S + k, rt_graph_dtype(ss->body, ss->body->outputs[S + k]),
			                   ss->batched ? 2 : 1, ss->batched ? dims : dims + 1, &r.dst[k]);
			if (rc != 0)
				return rc;
		}
	for (int j = 0; j < S && ss->batched && B == 0; j++) {
		struct rt_arg a = { .kind = RT_ARG_TENSOR, .tensor = *rt_input(x, n, first + j) };
		int rc = rt_output_arg(x, n, j, &a);
		if (rc != 0)
			return rc;
	}
	return 0;
}

static void fini_scan(struct rt_node *n)
{
	if (n->state)
		base_free(n->state, sizeof(struct scan_state));
	n->state = NULL;
}

/* The body is resolved: the outputs take its types. */
static int finish_scan(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	const struct scan_state *ss = n->state;
	struct rt_graph *body = ss->body;
	int S = ss->nstate, O = ss->nout, first = ss->batched ? 1 : 0;
	for (int j = 0; j < S + O; j++) {
		int bv = body->outputs[j];
		if (rt_graph_kind(body, bv) != RT_KIND_TENSOR)
			return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED,
			                   "body output %d is not a tensor (opset %d)", j, n->opset);
		if (j < S && rt_graph_dtype(body, bv) != rt_graph_dtype(g, n->in[first + j]))
			return rt_node_err(n, err, STRATA_INVALID_GRAPH, "state %d changes type", j);
		rt_graph_set_type(g, n->out[j], RT_KIND_TENSOR, rt_graph_dtype(body, bv));
	}
	n->run = run_scan;
	return 0;
}

static int init_scan(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	struct rt_graph *body = graph_attr(n, "body");
	if (!body)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "attribute body (a graph) is required");
	int batched = n->opset < 9;
	int first = batched ? 1 : 0;
	int64_t I = rt_attr_int(n, "num_scan_inputs", -1);
	int nin = n->nin - first;
	if (I < 1 || I > nin || n->nin > MAX_IO || n->nout > MAX_IO)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "num_scan_inputs %lld is out of range",
		                   (long long)I);
	int S = nin - (int)I;
	int O = n->nout - S;
	if (O < 0 || body->ninputs != S + I || body->noutputs != S + O)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH,
		                   "the body has %d inputs and %d outputs; the node gives %d states, "
		                   "%lld scan inputs and wants %d outputs", body->ninputs,
		                   body->noutputs, S, (long long)I, n->nout);
	struct scan_state *ss = base_calloc(1, sizeof *ss);
	if (!ss)
		return rt_node_nomem(n, err, "kernel state");
	n->state = ss;
	ss->body = body;
	ss->nstate = S;
	ss->nin = (int)I;
	ss->nout = O;
	ss->batched = batched;
	size_t cnt;
	const int64_t *v;
	if (batched) {
		if ((v = rt_attr_ints(n, "directions", &cnt)) && cnt != (size_t)I)
			return rt_node_err(n, err, STRATA_INVALID_GRAPH, "directions has %zu entries", cnt);
		for (int j = 0; j < I; j++)
			ss->in_rev[j] = v ? v[j] != 0 : 0;
	} else {
		if ((v = rt_attr_ints(n, "scan_input_axes", &cnt)) && cnt != (size_t)I)
			return rt_node_err(n, err, STRATA_INVALID_GRAPH, "scan_input_axes has %zu entries", cnt);
		for (int j = 0; j < I; j++)
			ss->in_axis[j] = v ? v[j] : 0;
		if ((v = rt_attr_ints(n, "scan_input_directions", &cnt)) && cnt != (size_t)I)
			return rt_node_err(n, err, STRATA_INVALID_GRAPH,
			                   "scan_input_directions has %zu entries", cnt);
		for (int j = 0; j < I; j++)
			ss->in_rev[j] = v ? v[j] != 0 : 0;
		if ((v = rt_attr_ints(n, "scan_output_axes", &cnt)) && cnt != (size_t)O)
			return rt_node_err(n, err, STRATA_INVALID_GRAPH, "scan_output_axes has %zu entries", cnt);
		for (int k = 0; k < O; k++)
			ss->out_axis[k] = v ? v[k] : 0;
		if ((v = rt_attr_ints(n, "scan_output_directions", &cnt)) && cnt != (size_t)O)
			return rt_node_err(n, err, STRATA_INVALID_GRAPH,
			                   "scan_output_directions has %zu entries", cnt);
		for (int k = 0; k < O; k++)
			ss->out_rev[k] = v ? v[k] != 0 : 0;
	}
	for (int j = 0; j < S + I; j++) {
		int iv = n->in[first + j];
		if (iv < 0 || rt_graph_kind(g, iv) != RT_KIND_TENSOR)
			return rt_node_err(n, err, STRATA_INVALID_GRAPH, "input %d must be a tensor", first + j);
		int rc = type_body_input(n, body, j, RT_KIND_TENSOR, rt_graph_dtype(g, iv), err);
		if (rc != 0)
			return rc;
	}
	n->finish = finish_scan;
	return rt_node_subgraph(n, body, err);
}

const struct rt_opdef rt_ops_control[] = {
	{ "", "If", 1, init_if, NULL },
	{ "", "Loop", 1, init_loop, fini_state },
	{ "", "Scan", 8, init_scan, fini_scan },
	{ .op = NULL },
};
