/*
 * exec.c: running a resolved graph.
 *
 * The last step of the runtime's data flow.  A run context (struct rt_exec,
 * runtime_int.h) holds, per value of the graph, what it holds in this run (a
 * tensor view, a sequence, or nothing for an empty optional) and the buffers
 * behind it.  runtime_run() checks the caller's inputs against the declared
 * input types, then calls each node's kernel in run order.  Kernels read
 * inputs through rt_input()/rt_input_seq() and get output buffers from
 * rt_output() and rt_seq_append(); after a node has run, every value it was
 * the last reader of gives its buffers back.  Where buffers come from and go
 * back to (the pool, static memory plans, views of other values' cells) is
 * buffers.c; this file decides when.
 *
 * Subgraphs (If, Loop, Scan, SequenceMap bodies) run in child contexts made
 * on first use and kept by the context running the enclosing node; children
 * share the top context's pool and string arena.  A child's outputs stay
 * alive until its next run has finished, so a loop may feed a run's outputs
 * to the next run as inputs without copying.
 *
 * Invariants:
 *  - views of graph inputs point at caller memory and are never written
 *    through (an output the caller bound over the same memory is written
 *    like any output); constants are read in place from the model;
 *    captured outer values are views of the enclosing context's values,
 *    alive while the node runs;
 *  - a graph output holds cells of the context's own when the run returns
 *    (a copy where it would view caller or model memory), valid until the
 *    next run starts; in a bound run (binding.c), an output bound to caller
 *    memory ends in that memory instead, with exactly the bound shape;
 *  - in a planned run, rt_output_alias() makes a value view another's cells
 *    only where the recorded run did; elsewhere it copies, so that no buffer
 *    lives longer than planned.
 *
 * Nodes folded at load (infer.c) are skipped: their outputs are constants.
 * infer.c runs them through rt_fold_node() on a context of their own, with
 * the same kernels, so a folded value is bit-identical to a computed one.
 * Under session.check_shapes every produced tensor is compared with its
 * value's static shape (a debugging aid; a production run never looks).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec_int.h"
#include "kernel.h"

struct rt_sym {
	const char *name;        /* a symbolic dimension name of an input */
	int64_t size;            /* its size in this run */
	int input;               /* the input that fixed it */
};

/* ---- context ------------------------------------------------------------------------ */

static void exec_free(struct rt_exec *x);

/* STRATA_CHECK_SHAPES, read once: contexts are made on the query path. */
static int env_check;
static pthread_once_t env_once = PTHREAD_ONCE_INIT;

static void read_env_check(void)
{
	const char *e = getenv("STRATA_CHECK_SHAPES");
	env_check = e && *e && strcmp(e, "0") != 0;
}

/* Whether contexts of m check produced shapes (a debugging aid). */
static int check_wanted(const struct rt_model *m)
{
	pthread_once(&env_once, read_env_check);
	return m->opts.check_shapes || env_check;
}

/* Set up x for graph g; top contexts own the pool and string arena. */
static int exec_init(struct rt_exec *x, const struct rt_model *m, const struct rt_graph *g,
                     struct rt_exec *outer)
{
	x->m = m;
	x->g = g;
	x->outer = outer;
	x->pool = outer ? outer->pool : &x->own_pool;
	x->strings = outer ? outer->strings : &x->own_strings;
	if (!outer)
		base_arena_init(&x->own_strings, 4096);
	x->check = outer ? outer->check : check_wanted(m);
	for (int i = 0; i < g->nnodes; i++)
		if (g->nodes[i].nout > x->max_nout)
			x->max_nout = g->nodes[i].nout;
	if (!outer)
		for (int k = 0; k < g->ninputs; k++)
			for (int d = 0; d < g->input_info[k].rank; d++)
				if (g->input_info[k].dims[d] < 0 && *g->input_info[k].dim_names[d])
					x->capsym++;
	size_t nv = (size_t)g->nvalues + 1;
	x->root = base_calloc(nv, sizeof *x->root);
	x->refs = base_calloc(nv, sizeof *x->refs);
	x->symidx = base_calloc((size_t)g->ninputs * RT_MAX_RANK + 1, sizeof *x->symidx);
	if (!x->root || !x->refs || !x->symidx)
		return STRATA_NOMEM;
	for (size_t v = 0; v < nv; v++)
		x->root[v] = -1;
	x->all_tensor = 1;
	for (int k = 0; k < g->ninputs; k++)
		x->all_tensor &= g->input_info[k].kind == RT_KIND_TENSOR;
	for (int k = 0; k < g->noutputs; k++)
		x->all_tensor &= g->output_info[k].kind == RT_KIND_TENSOR;
	x->vals = base_calloc(nv, sizeof *x->vals);
	x->vbuf = base_calloc(nv, sizeof *x->vbuf);
	x->hold = base_calloc(nv, sizeof *x->hold);
	x->seqs = base_calloc(nv, sizeof *x->seqs);
	x->tmp_out = base_calloc((size_t)x->max_nout + 1, sizeof *x->tmp_out);
	x->sym = base_calloc((size_t)x->capsym + 1, sizeof *x->sym);
	if (!x->vals || !x->vbuf || !x->hold || !x->seqs || !x->tmp_out || !x->sym)
		return STRATA_NOMEM;
	/* Symbolic input dimensions get numbers once, so that checking a run's
	 * inputs compares sizes, not names. */
	int ns = 0;
	for (int k = 0; k < g->ninputs && !outer; k++)
		for (int d = 0; d < RT_MAX_RANK; d++) {
			int *si = &x->symidx[k * RT_MAX_RANK + d];
			*si = -1;
			if (d >= g->input_info[k].rank || g->input_info[k].dims[d] >= 0 ||
			    !*g->input_info[k].dim_names[d])
				continue;
			const char *name = g->input_info[k].dim_names[d];
			for (*si = 0; *si < ns && strcmp(x->sym[*si].name, name) != 0; (*si)++)
				;
			if (*si == ns)
				x->sym[ns++] = (struct rt_sym){ name, -1, k };
		}
	x->nsym = ns;
	for (int v = 0; v < g->nvalues; v++)
		if (g->values[v].konst) {
			x->vals[v] = *g->values[v].konst;
			x->hold[v] = RT_HOLD_TENSOR;
		}
	return 0;
}

int rt_exec_init(struct rt_exec *x, const struct rt_model *m)
{
	if (exec_init(x, m, &m->g, NULL) != 0)
		return STRATA_NOMEM;
	x->planning = 1;
	return rt_plans_init(&x->pc, x->g->nvalues, x->g->ninputs);
}

static void exec_free(struct rt_exec *x)
{
	size_t nv = (size_t)x->g->nvalues + 1;
	for (size_t i = 0; i < x->nkids; i++) {
		exec_free(x->kids[i].x);
		base_free(x->kids[i].x, sizeof *x->kids[i].x);
	}
	if (x->kids)
		base_free(x->kids, x->capkids * sizeof *x->kids);
	rt_exec_buffers_free(x);
	if (!x->outer)
		base_arena_free(&x->own_strings);
	if (x->vals)
		base_free(x->vals, nv * sizeof *x->vals);
	if (x->vbuf)
		base_free(x->vbuf, nv * sizeof *x->vbuf);
	if (x->hold)
		base_free(x->hold, nv * sizeof *x->hold);
	if (x->seqs)
		base_free(x->seqs, nv * sizeof *x->seqs);
	if (x->tmp_out)
		base_free(x->tmp_out, ((size_t)x->max_nout + 1) * sizeof *x->tmp_out);
	if (x->sym)
		base_free(x->sym, ((size_t)x->capsym + 1) * sizeof *x->sym);
	if (x->root)
		base_free(x->root, nv * sizeof *x->root);
	if (x->refs)
		base_free(x->refs, nv * sizeof *x->refs);
	if (x->symidx)
		base_free(x->symidx, ((size_t)x->g->ninputs * RT_MAX_RANK + 1) * sizeof *x->symidx);
	rt_plans_free(&x->pc, x->g->nvalues);
}

void rt_exec_fini(struct rt_exec *x)
{
	if (x->g)
		exec_free(x);
}

/* ---- what kernels call ------------------------------------------------------------------ */

const struct rt_tensor *rt_input(struct rt_exec *x, const struct rt_node *n, int i)
{
	if (i < 0 || i >= n->nin || n->in[i] < 0 || x->hold[n->in[i]] != RT_HOLD_TENSOR)
		return NULL;
	return &x->vals[n->in[i]];
}

int rt_input_kind(struct rt_exec *x, const struct rt_node *n, int i)
{
	if (i < 0 || i >= n->nin || n->in[i] < 0)
		return RT_ARG_NONE;
	switch (x->hold[n->in[i]]) {
	case RT_HOLD_TENSOR: return RT_ARG_TENSOR;
	case RT_HOLD_SEQ: return RT_ARG_SEQUENCE;
	default: return RT_ARG_NONE;
	}
}

const struct rt_sequence *rt_input_seq(struct rt_exec *x, const struct rt_node *n, int i)
{
	if (i < 0 || i >= n->nin || n->in[i] < 0 || x->hold[n->in[i]] != RT_HOLD_SEQ)
		return NULL;
	return &x->seqs[n->in[i]].s;
}

const struct rt_tensor *rt_value_tensor(struct rt_exec *x, int v)
{
	if (v < 0 || v >= x->g->nvalues || x->hold[v] != RT_HOLD_TENSOR)
		return NULL;
	return &x->vals[v];
}

/* Bytes of output i of n with the given type and shape, after the checks
 * every output goes through. */
static int output_bytes(struct rt_exec *x, const struct rt_node *n, int i, int dtype, int rank,
                        const int64_t *dims, size_t *bytes)
{
	if (rank < 0 || rank > RT_MAX_RANK)
		return rt_fail(x, n, STRATA_LIMIT, "output %d: rank %d exceeds %d", i, rank, RT_MAX_RANK);
	int64_t count = 1;
	int zero = 0;
	for (int d = 0; d < rank; d++) {
		if (dims[d] < 0)
			return rt_fail(x, n, STRATA_RUNTIME, "output %d has a negative dimension", i);
		zero |= dims[d] == 0;
	}
	for (int d = 0; d < rank && !zero; d++) {
		if (dims[d] > ((int64_t)1 << 40) / count)
			return rt_fail(x, n, STRATA_LIMIT, "output %d is too large", i);
		count *= dims[d];
	}
	if (zero)
		count = 0;
	int ok;
	*bytes = rt_tensor_bytes(dtype, count, &ok);
	if (!ok)
		return rt_fail(x, n, STRATA_LIMIT, "output %d is too large or of unknown type", i);
	return 0;
}

static void set_view(struct rt_tensor *t, int dtype, int rank, const int64_t *dims, void *p,
                     size_t bytes)
{
	if (dtype == BASE_DT_STRING && bytes)
		memset(p, 0, bytes);
	t->dtype = dtype;
	t->rank = rank;
	for (int d = 0; d < RT_MAX_RANK; d++)
		t->dims[d] = d < rank ? dims[d] : 0;
	t->data = p;
}

/* The caller's memory bound to graph output v in this run, when the kernel
 * asks for exactly the bound type and shape; else NULL, and the output's
 * cells are copied into the binding when the run ends (or its shape is
 * reported).  Only a top context has a binding. */
static void *bound_place(const struct rt_exec *x, int v, int dtype, int rank, const int64_t *dims)
{
	const struct rt_binding *b = x->bind;
	int k = x->g->values[v].is_output - 1;
	if (!b || !b->running || k < 0 || !b->out[k].set)
		return NULL;
	const struct rt_tensor *t = &b->out[k].t;
	if (t->dtype != dtype || t->rank != rank)
		return NULL;
	for (int d = 0; d < rank; d++)
		if (t->dims[d] != dims[d])
			return NULL;
	return t->data;
}

int rt_output(struct rt_exec *x, const struct rt_node *n, int i, int dtype, int rank,
              const int64_t *dims, struct rt_tensor **out)
{
	*out = NULL;
	if (i < 0 || i >= n->nout)
		return rt_fail(x, n, STRATA_RUNTIME, "output %d does not exist", i);
	int v = n->out[i];
	if (v >= 0 && dtype != x->g->values[v].dtype)
		return rt_fail(x, n, STRATA_RUNTIME, "output %d is %s, but was declared %s", i,
		               base_dtype_name(dtype), base_dtype_name(x->g->values[v].dtype));
	if (v >= 0 && (x->g->values[v].kind == RT_KIND_SEQUENCE ||
	               x->g->values[v].kind == RT_KIND_OPTIONAL_SEQUENCE))
		return rt_fail(x, n, STRATA_RUNTIME, "output %d is a sequence, not a tensor", i);
	size_t bytes;
	int rc = output_bytes(x, n, i, dtype, rank, dims, &bytes);
	if (rc != 0)
		return rc;

	struct rt_tensor *t;
	void *p;
	if (v < 0) {
		/* An omitted optional output: the kernel may still write it. */
		p = rt_temp_get(x, bytes);
		t = &x->tmp_out[i];
	} else {
		/* A kernel that asks twice gets a fresh buffer; the old one returns. */
		rt_value_release(x, v);
		struct rt_buf b;
		rc = rt_value_get(x, v, bytes, bound_place(x, v, dtype, rank, dims), &b);
		p = rc == 0 ? b.p : NULL;
		if (p) {
			x->vbuf[v] = b;
			x->hold[v] = RT_HOLD_TENSOR;
		}
		t = &x->vals[v];
	}
	if (!p)
		return rt_nomem(x, n, "output %d (%zu bytes)", i, bytes);
	set_view(t, dtype, rank, dims, p, bytes);
	*out = t;
	return 0;
}

int rt_output_alias(struct rt_exec *x, const struct rt_node *n, int i, int in_index, int rank,
                    const int64_t *dims, struct rt_tensor **out)
{
	if (out)
		*out = NULL;
	const struct rt_tensor *src = rt_input(x, n, in_index);
	if (!src)
		return rt_fail(x, n, STRATA_RUNTIME, "input %d holds no tensor to view", in_index);
	if (i < 0 || i >= n->nout)
		return rt_fail(x, n, STRATA_RUNTIME, "output %d does not exist", i);
	int v = n->out[i];
	int s = n->in[in_index];
	size_t bytes;
	int rc = output_bytes(x, n, i, src->dtype, rank, dims, &bytes);
	if (rc != 0)
		return rc;
	int64_t count = 1;
	for (int d = 0; d < rank; d++)
		count *= dims[d];
	if (count != runtime_tensor_count(src))
		return rt_fail(x, n, STRATA_RUNTIME, "output %d views %lld cells, input %d has %lld", i,
		               (long long)count, in_index, (long long)runtime_tensor_count(src));
	int copy = v < 0 || v == s || (x->mode == RT_MODE_PLAN && !x->plan->aliased[v]);
	if (copy || x->g->values[v].dtype != src->dtype || x->g->values[v].kind != RT_KIND_TENSOR) {
		/* Where the plan has no view, the value gets its own cells: the
		 * source's lifetime must not outgrow the planned one. */
		struct rt_tensor *y;
		struct rt_tensor from = *src;
		if ((rc = rt_output(x, n, i, from.dtype, rank, dims, &y)) != 0)
			return rc;
		/* y may be caller memory bound over the input's cells. */
		if (bytes && y->data != from.data)
			memmove(y->data, from.data, bytes);
		if (out)
			*out = y;
		return 0;
	}
	void *data = src->data;
	rt_value_view(x, v, s);
	x->hold[v] = RT_HOLD_TENSOR;
	set_view(&x->vals[v], src->dtype, rank, dims, data, 0);
	if (out)
		*out = &x->vals[v];
	return 0;
}

int rt_output_seq(struct rt_exec *x, const struct rt_node *n, int i, int dtype)
{
	if (i < 0 || i >= n->nout)
		return rt_fail(x, n, STRATA_RUNTIME, "output %d does not exist", i);
	int v = n->out[i];
	if (v < 0)
		return 0;
	const struct rt_value *val = &x->g->values[v];
	if (val->kind != RT_KIND_SEQUENCE && val->kind != RT_KIND_OPTIONAL_SEQUENCE)
		return rt_fail(x, n, STRATA_RUNTIME, "output %d is not a sequence", i);
	if (dtype != val->dtype)
		return rt_fail(x, n, STRATA_RUNTIME, "output %d is a sequence of %s, but was declared %s",
		               i, base_dtype_name(dtype), base_dtype_name(val->dtype));
	rt_value_release(x, v);
	x->seqs[v].s.dtype = dtype;
	x->hold[v] = RT_HOLD_SEQ;
	return 0;
}

int rt_seq_append(struct rt_exec *x, const struct rt_node *n, int i, int rank,
                  const int64_t *dims, struct rt_tensor **out)
{
	*out = NULL;
	if (i < 0 || i >= n->nout)
		return rt_fail(x, n, STRATA_RUNTIME, "output %d does not exist", i);
	int v = n->out[i];
	int dtype = v >= 0 ? x->g->values[v].dtype : BASE_DT_UNDEFINED;
	if (v >= 0 && x->hold[v] != RT_HOLD_SEQ)
		return rt_fail(x, n, STRATA_RUNTIME, "output %d was not started as a sequence", i);
	if (v < 0) {
		/* Nobody reads an omitted output: its items are scratch. */
		dtype = BASE_DT_UINT8;
		rank = 0;
	}
	size_t bytes;
	int rc = output_bytes(x, n, i, dtype, rank, dims, &bytes);
	if (rc != 0)
		return rc;
	if (v < 0) {
		void *p = rt_temp_get(x, bytes);
		if (!p)
			return rt_nomem(x, n, "output %d", i);
		set_view(&x->tmp_out[i], dtype, 0, NULL, p, bytes);
		*out = &x->tmp_out[i];
		return 0;
	}
	struct rt_seqv *sv = &x->seqs[v];
	if ((rc = rt_seqv_reserve(sv)) != 0)
		return rt_fail(x, n, rc, "output %d: cannot hold %d items", i, sv->s.count + 1);
	struct rt_buf b;
	if ((rc = rt_pool_get(x, bytes, &b)) != 0)
		return rc == STRATA_NOMEM
		               ? rt_nomem(x, n, "an item of output %d (%zu bytes)", i, bytes)
		               : rt_fail(x, n, rc, "output %d: an item of %zu bytes is too large", i, bytes);
	int k = sv->s.count++;
	sv->bufs[k] = b;
	sv->nbufs = sv->s.count;
	set_view(&sv->own[k], dtype, rank, dims, b.p, bytes);
	*out = &sv->own[k];
	return 0;
}

int rt_seq_append_copy(struct rt_exec *x, const struct rt_node *n, int i,
                       const struct rt_tensor *t)
{
	struct rt_tensor *o;
	int rc = rt_seq_append(x, n, i, t->rank, t->dims, &o);
	if (rc != 0)
		return rc;
	int ok;
	size_t bytes = rt_tensor_bytes(t->dtype, runtime_tensor_count(t), &ok);
	if (o->dtype != t->dtype)
		return n->out[i] < 0 ? 0 : rt_fail(x, n, STRATA_RUNTIME, "output %d: item is %s, not %s", i,
		                                   base_dtype_name(t->dtype), base_dtype_name(o->dtype));
	if (bytes)
		memcpy(o->data, t->data, bytes);
	return 0;
}

int rt_output_none(struct rt_exec *x, const struct rt_node *n, int i)
{
	if (i < 0 || i >= n->nout)
		return rt_fail(x, n, STRATA_RUNTIME, "output %d does not exist", i);
	int v = n->out[i];
	if (v < 0)
		return 0;
	int k = x->g->values[v].kind;
	if (k != RT_KIND_OPTIONAL_TENSOR && k != RT_KIND_OPTIONAL_SEQUENCE)
		return rt_fail(x, n, STRATA_RUNTIME, "output %d is not an optional, it cannot be empty", i);
	rt_value_release(x, v);
	x->hold[v] = RT_HOLD_NONE;
	return 0;
}

int rt_output_arg(struct rt_exec *x, const struct rt_node *n, int i, const struct rt_arg *a)
{
	if (a->kind == RT_ARG_NONE)
		return rt_output_none(x, n, i);
	if (a->kind == RT_ARG_SEQUENCE) {
		int rc = rt_output_seq(x, n, i, a->seq.dtype);
		for (int k = 0; rc == 0 && k < a->seq.count; k++)
			rc = rt_seq_append_copy(x, n, i, &a->seq.items[k]);
		return rc;
	}
	struct rt_tensor *o;
	const struct rt_tensor *t = &a->tensor;
	int rc = rt_output(x, n, i, t->dtype, t->rank, t->dims, &o);
	if (rc != 0)
		return rc;
	int ok;
	size_t bytes = rt_tensor_bytes(t->dtype, runtime_tensor_count(t), &ok);
	if (bytes)
		memcpy(o->data, t->data, bytes);
	return 0;
}

char *rt_string(struct rt_exec *x, const char *s, size_t len)
{
	char *d = base_arena_alloc(x->strings, len + 1, 1);
	if (d) {
		if (len)
			memcpy(d, s, len);
		d[len] = 0;
	}
	return d;
}

void *rt_scratch_or_fail(struct rt_exec *x, const struct rt_node *n, size_t bytes)
{
	void *p = rt_scratch(x, bytes ? bytes : 1);
	if (!p)
		rt_nomem(x, n, "%zu bytes of scratch", bytes);
	return p;
}

void *rt_scratch(struct rt_exec *x, size_t bytes)
{
	return rt_temp_get(x, bytes);
}

int rt_fail(struct rt_exec *x, const struct rt_node *n, int code, const char *fmt, ...)
{
	char msg[STRATA_ERRMSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	x->failed = 1;
	return rt_node_err(n, x->err, code, "%s", msg);
}

int rt_nomem(struct rt_exec *x, const struct rt_node *n, const char *fmt, ...)
{
	char msg[STRATA_ERRMSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return rt_fail(x, n, STRATA_NOMEM, "out of memory: %s", msg);
}

/* ---- input and output checks ------------------------------------------------------------ */

static void fmt_declared(char *s, size_t cap, const struct rt_value_info *info)
{
	size_t k = (size_t)snprintf(s, cap, "%s ", base_dtype_name(info->dtype));
	if (info->rank < 0) {
		snprintf(s + k, cap - k, "of any shape");
		return;
	}
	k += (size_t)snprintf(s + k, cap - k, "[");
	for (int d = 0; d < info->rank && k < cap; d++) {
		if (info->dims[d] >= 0)
			k += (size_t)snprintf(s + k, cap - k, "%s%lld", d ? "," : "",
			                      (long long)info->dims[d]);
		else
			k += (size_t)snprintf(s + k, cap - k, "%s%s", d ? "," : "",
			                      *info->dim_names[d] ? info->dim_names[d] : "?");
	}
	if (k < cap)
		snprintf(s + k, cap - k, "]");
}

static void fmt_given(char *s, size_t cap, const struct rt_tensor *t)
{
	size_t k = (size_t)snprintf(s, cap, "%s [", base_dtype_name(t->dtype));
	int r = t->rank < 0 ? 0 : t->rank > RT_MAX_RANK ? RT_MAX_RANK : t->rank;
	for (int d = 0; d < r && k < cap; d++)
		k += (size_t)snprintf(s + k, cap - k, "%s%lld", d ? "," : "", (long long)t->dims[d]);
	if (k < cap)
		snprintf(s + k, cap - k, "]");
}

static int bad_value(const char *what, const struct rt_value_info *info,
                     const struct rt_tensor *t, struct strata_error *err, const char *why)
{
	char want[256], got[256];
	fmt_declared(want, sizeof want, info);
	fmt_given(got, sizeof got, t);
	return base_err(err, STRATA_INVALID_ARGUMENT, "%s \"%s\": expected %s, given %s%s%s", what,
	                info->name, want, got, why ? ": " : "", why ? why : "");
}

/* How much check_tensor compares: the element type and size only (the
 * items of a sequence, whose shapes vary); also the rank and the fixed
 * dimensions (a binding); also the symbolic dimensions, which must take one
 * size across the inputs of a run. */
enum { CHECK_TYPE, CHECK_SHAPE, CHECK_RUN };

/* Check tensor t given for input k, or bound to output k when out is set,
 * against the declared type.  At CHECK_RUN (inputs only) the symbolic
 * dimensions fixed so far are in x->sym. */
static int check_tensor(struct rt_exec *x, int out, int k, const struct rt_tensor *t, int level,
                        struct strata_error *err)
{
	const struct rt_graph *g = x->g;
	const struct rt_value_info *info = out ? &g->output_info[k] : &g->input_info[k];
	const char *what = out ? "output" : "input";
	int shape = level >= CHECK_SHAPE && info->rank >= 0;
	if (t->rank < 0 || t->rank > RT_MAX_RANK)
		return base_err(err, STRATA_INVALID_ARGUMENT, "%s \"%s\": rank %d is out of range",
		                what, info->name, t->rank);
	if (t->dtype != info->dtype)
		return bad_value(what, info, t, err, NULL);
	if (shape && t->rank != info->rank)
		return bad_value(what, info, t, err, NULL);
	int64_t count = 1;
	int zero = 0;
	for (int d = 0; d < t->rank; d++) {
		if (t->dims[d] < 0)
			return bad_value(what, info, t, err, "negative dimension");
		zero |= t->dims[d] == 0;
		if (!shape)
			continue;
		if (info->dims[d] >= 0 && t->dims[d] != info->dims[d])
			return bad_value(what, info, t, err, NULL);
		int s = out || level < CHECK_RUN ? -1 : x->symidx[k * RT_MAX_RANK + d];
		if (s >= 0) {
			if (x->sym[s].size < 0) {
				x->sym[s].size = t->dims[d];
				x->sym[s].input = k;
			} else if (x->sym[s].size != t->dims[d]) {
				char why[256];
				snprintf(why, sizeof why, "dimension \"%s\" is %lld here but %lld in input \"%s\"",
				         info->dim_names[d], (long long)t->dims[d],
				         (long long)x->sym[s].size, g->input_info[x->sym[s].input].name);
				return bad_value(what, info, t, err, why);
			}
		}
	}
	for (int d = 0; d < t->rank && !zero; d++) {
		if (t->dims[d] > ((int64_t)1 << 40) / count)
			return bad_value(what, info, t, err, "too large");
		count *= t->dims[d];
	}
	if (!zero && count > 0 && !t->data)
		return base_err(err, STRATA_INVALID_ARGUMENT, "%s \"%s\" has no data", what, info->name);
	return 0;
}

int rt_check_input(struct rt_exec *x, int k, const struct rt_tensor *t, struct strata_error *err)
{
	return check_tensor(x, 0, k, t, CHECK_SHAPE, err);
}

int rt_check_output(struct rt_exec *x, int k, const struct rt_tensor *t, struct strata_error *err)
{
	return check_tensor(x, 1, k, t, CHECK_SHAPE, err);
}

static const char *arg_name(int kind)
{
	return kind == RT_ARG_TENSOR ? "a tensor" : kind == RT_ARG_SEQUENCE ? "a sequence" : "nothing";
}

/* Check the inputs (tensors tin[], or values ain[]) and bind them. */
static int bind_inputs(struct rt_exec *x, const struct rt_tensor *tin, const struct rt_arg *ain,
                       struct strata_error *err)
{
	const struct rt_graph *g = x->g;
	for (int s = 0; s < x->nsym; s++)
		x->sym[s].size = -1;
	if (g->ninputs > 0 && !tin && !ain)
		return base_err(err, STRATA_INVALID_ARGUMENT, "no input tensors given; the model has %d",
		                g->ninputs);
	for (int k = 0; k < g->ninputs; k++) {
		const struct rt_value_info *info = &g->input_info[k];
		int v = g->inputs[k];
		int kind = tin ? RT_ARG_TENSOR : ain[k].kind;
		int seq = info->kind == RT_KIND_SEQUENCE || info->kind == RT_KIND_OPTIONAL_SEQUENCE;
		int opt = info->kind == RT_KIND_OPTIONAL_TENSOR || info->kind == RT_KIND_OPTIONAL_SEQUENCE;
		if (!(kind == RT_ARG_NONE && opt) && !(kind == RT_ARG_SEQUENCE && seq) &&
		    !(kind == RT_ARG_TENSOR && !seq))
			return base_err(err, STRATA_INVALID_ARGUMENT, "input \"%s\": given %s, expected %s%s",
			                info->name, arg_name(kind), opt ? "an optional " : "",
			                seq ? "sequence" : "tensor");
		if (kind == RT_ARG_NONE) {
			x->hold[v] = RT_HOLD_NONE;
			continue;
		}
		if (kind == RT_ARG_TENSOR) {
			const struct rt_tensor *t = tin ? &tin[k] : &ain[k].tensor;
			int rc = check_tensor(x, 0, k, t, CHECK_RUN, err);
			if (rc != 0)
				return rc;
			x->vals[v] = *t;
			x->hold[v] = RT_HOLD_TENSOR;
			continue;
		}
		const struct rt_sequence *sq = &ain[k].seq;
		if (sq->count < 0 || sq->count > RT_SEQ_MAX || (sq->count > 0 && !sq->items) ||
		    sq->dtype != info->dtype)
			return base_err(err, STRATA_INVALID_ARGUMENT,
			                "input \"%s\": a sequence of %d items of %s, expected %s items",
			                info->name, sq->count, base_dtype_name(sq->dtype),
			                base_dtype_name(info->dtype));
		for (int i = 0; i < sq->count; i++) {
			/* Items are checked for type and size; their shapes may vary. */
			int rc = check_tensor(x, 0, k, &sq->items[i], CHECK_TYPE, err);
			if (rc != 0)
				return base_err_prefix(err, rc, "item %d", i);
		}
		x->seqs[v].s = *sq;
		x->hold[v] = RT_HOLD_SEQ;
	}
	return 0;
}

/* ---- the run ---------------------------------------------------------------------------- */

/* Input j of n, its implicit inputs counted after the listed ones. */
static int dep(const struct rt_node *n, int j)
{
	return j < n->nin ? n->in[j] : n->implicit[j - n->nin];
}

/* The size symbol name takes in this run (the top context binds them), or -1. */
static int64_t sym_size(void *ud, const char *name)
{
	const struct rt_exec *x = ud;
	while (x->outer)
		x = x->outer;
	for (int s = 0; s < x->nsym; s++)
		if (strcmp(x->sym[s].name, name) == 0)
			return x->sym[s].size;
	return -1;
}

/* session.check_shapes: the tensors n produced against their static shapes. */
static int check_shapes(struct rt_exec *x, const struct rt_node *n)
{
	for (int j = 0; j < n->nout; j++) {
		int v = n->out[j];
		if (v < 0 || x->hold[v] != RT_HOLD_TENSOR)
			continue;
		const struct rt_shape *s = &x->g->values[v].shape;
		if (rt_shape_fits(s, &x->vals[v], sym_size, x))
			continue;
		char want[256], got[256];
		struct rt_shape real = { .rank = x->vals[v].rank };
		for (int d = 0; d < real.rank && d < RT_MAX_RANK; d++)
			real.d[d].size = x->vals[v].dims[d];
		rt_shape_format(s, want, sizeof want);
		rt_shape_format(&real, got, sizeof got);
		return rt_fail(x, n, STRATA_RUNTIME,
		               "output %d (\"%s\") has shape %s, its static shape is %s", j,
		               x->g->values[v].name, got, want);
	}
	return 0;
}

/* Run every node of x's graph in order. */
static int run_nodes(struct rt_exec *x)
{
	const struct rt_graph *g = x->g;
	const struct rt_exec *top = x;
	while (top->outer)
		top = top->outer;
	struct rt_prof *prof = top->prof;
	for (int i = 0; i < g->nnodes; i++) {
		const struct rt_node *n = &g->nodes[i];
		if (n->folded)
			continue;
		x->step = i;
		x->failed = 0;
		double t0 = 0, own0 = 0;
		if (prof) {
			own0 = prof->own;
			t0 = base_now();
		}
		int rc = n->run((struct rt_node *)n, x);
		if (prof)
			rt_prof_add(prof, n->op, base_now() - t0 - (prof->own - own0));
		rt_temp_release(x);
		if (rc == 0) {
			for (int j = 0; j < n->nout; j++)
				if (n->out[j] >= 0 && x->hold[n->out[j]] == RT_HOLD_EMPTY) {
					rc = rt_fail(x, n, STRATA_RUNTIME, "the kernel did not produce output %d", j);
					break;
				}
			if (rc == 0 && x->check)
				rc = check_shapes(x, n);
		} else if (!x->failed) {
			rt_node_err(n, x->err, rc, "%s", strata_strerror(rc));
		}
		if (rc != 0)
			return rc;
		for (int j = 0; j < n->nin + n->nimplicit; j++) {
			int v = dep(n, j);
			if (v >= 0 && g->values[v].last_use == i && !g->values[v].is_output)
				rt_value_release(x, v);
		}
		for (int j = 0; j < n->nout; j++) {
			int v = n->out[j];
			if (v >= 0 && g->values[v].last_use < 0 && !g->values[v].is_output)
				rt_value_release(x, v);
		}
	}
	return 0;
}

/* 1 when value v's buffer is the caller's memory bound to it in this run. */
static int holds_bound(const struct rt_exec *x, int v)
{
	int k = x->g->values[v].is_output - 1;
	return x->bind && x->bind->running && k >= 0 && x->bind->out[k].set && x->vbuf[v].p &&
	       x->vbuf[v].p == x->bind->out[k].t.data;
}

/* Make value v (a graph output) hold its own copy when it views memory it
 * does not own: a graph input, a constant, a captured value, or the
 * caller's memory bound to another output (which the caller may change
 * before reading v). */
static int own_value(struct rt_exec *x, int v, struct strata_error *err)
{
	const char *nm = x->g->values[v].name;
	int r = x->root[v];
	if (r >= 0 && holds_bound(x, r)) {
		x->refs[r]--;
		x->root[v] = -1;
	}
	if (x->hold[v] == RT_HOLD_TENSOR && !x->vbuf[v].p && x->root[v] < 0) {
		struct rt_tensor *t = &x->vals[v];
		int ok;
		size_t bytes = rt_tensor_bytes(t->dtype, runtime_tensor_count(t), &ok);
		int rc = rt_value_get(x, v, bytes, NULL, &x->vbuf[v]);
		if (rc != 0)
			return rc == STRATA_NOMEM ? base_nomem(err, "output \"%s\"", nm)
			                          : base_err(err, rc, "output \"%s\" is too large", nm);
		if (bytes)
			memcpy(x->vbuf[v].p, t->data, bytes);
		t->data = x->vbuf[v].p;
	} else if (x->hold[v] == RT_HOLD_SEQ && x->seqs[v].s.items != x->seqs[v].own) {
		struct rt_seqv *sv = &x->seqs[v];
		struct rt_sequence from = sv->s;
		sv->s.items = sv->own;
		sv->s.count = 0;
		sv->nbufs = 0;
		for (int i = 0; i < from.count; i++) {
			const struct rt_tensor *t = &from.items[i];
			int ok;
			size_t bytes = rt_tensor_bytes(t->dtype, runtime_tensor_count(t), &ok);
			struct rt_buf b;
			int rc = rt_seqv_reserve(sv);
			if (rc == 0)
				rc = rt_pool_get(x, bytes, &b);
			if (rc != 0)
				return rc == STRATA_NOMEM ? base_nomem(err, "output \"%s\"", nm)
			                          : base_err(err, rc, "output \"%s\" is too large", nm);
			if (bytes)
				memcpy(b.p, t->data, bytes);
			sv->own[i] = *t;
			sv->own[i].data = b.p;
			sv->bufs[i] = b;
			sv->nbufs = ++sv->s.count;
		}
	}
	return 0;
}

static int same_shape(const struct rt_tensor *a, const struct rt_tensor *b)
{
	if (a->dtype != b->dtype || a->rank != b->rank)
		return 0;
	for (int d = 0; d < a->rank; d++)
		if (a->dims[d] != b->dims[d])
			return 0;
	return 1;
}

/* Output k is bound: what the run produced must have the bound type and
 * shape, and its cells end up in the caller's region, copied there unless
 * the kernel wrote them in place.  memmove: the caller may have bound the
 * region over the memory of an input the output views. */
static int write_bound(struct rt_exec *x, int k, struct strata_error *err)
{
	const struct rt_graph *g = x->g;
	int v = g->outputs[k];
	const struct rt_tensor *to = &x->bind->out[k].t;
	if (x->hold[v] != RT_HOLD_TENSOR)
		return base_err(err, STRATA_RUNTIME, "output \"%s\" holds no tensor",
		                g->output_info[k].name);
	const struct rt_tensor *t = &x->vals[v];
	if (!same_shape(t, to)) {
		char got[256], want[256];
		fmt_given(got, sizeof got, t);
		fmt_given(want, sizeof want, to);
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "output \"%s\": the run produced %s, bound to %s",
		                g->output_info[k].name, got, want);
	}
	int ok;
	size_t bytes = rt_tensor_bytes(t->dtype, runtime_tensor_count(t), &ok);
	if (bytes && t->data != to->data)
		memmove(to->data, t->data, bytes);
	return 0;
}

static void to_arg(struct rt_exec *x, int v, struct rt_arg *a)
{
	memset(a, 0, sizeof *a);
	a->kind = x->hold[v] == RT_HOLD_TENSOR ? RT_ARG_TENSOR : x->hold[v] == RT_HOLD_SEQ ? RT_ARG_SEQUENCE
	                                                                       : RT_ARG_NONE;
	if (a->kind == RT_ARG_TENSOR)
		a->tensor = x->vals[v];
	else if (a->kind == RT_ARG_SEQUENCE)
		a->seq = x->seqs[v].s;
}

/* A top-level run: inputs as tensors (tin) or values (ain); outputs left in
 * x's values (the callers read them), and those bound by IO binding written
 * into the caller's memory. */
static int run_top(struct rt_exec *x, const struct rt_tensor *tin, const struct rt_arg *ain,
                   struct strata_error *err)
{
	const struct rt_graph *g = x->g;
	/* The previous run's outputs (and, after a failed run, everything it
	 * held) go back to the pool. */
	rt_exec_release_all(x);
	base_arena_reset(x->strings);
	if (x->bind)
		x->bind->done = 0; /* runtime_bound_output's views are gone */

	int rc = bind_inputs(x, tin, ain, err);
	if (rc != 0)
		return rc;
	rt_exec_mode_start(x);
	x->err = err;
	rc = run_nodes(x);
	x->err = NULL;
	x->step = g->nnodes;
	if (rc == 0)
		rt_exec_check(x, 1);
	/* Unbound outputs first: one of them may view an input whose memory
	 * the caller bound an output over, which the copies below write. */
	int bound = x->bind && x->bind->running;
	for (int k = 0; k < g->noutputs && rc == 0; k++)
		if (!bound || !x->bind->out[k].set)
			rc = own_value(x, g->outputs[k], err);
	for (int k = 0; k < g->noutputs && rc == 0 && bound; k++)
		if (x->bind->out[k].set)
			rc = write_bound(x, k, err);
	rt_exec_mode_end(x, rc);
	return rc;
}

int runtime_run(struct rt_ctx *cx, const struct rt_tensor *in, struct rt_tensor *out,
                struct strata_error *err)
{
	return rt_run_tensors(&cx->x, in, out, err);
}

int rt_run_tensors(struct rt_exec *x, const struct rt_tensor *in, struct rt_tensor *out,
                   struct strata_error *err)
{
	const struct rt_graph *g = x->g;
	for (int k = 0; k < g->ninputs && !x->all_tensor; k++)
		if (g->input_info[k].kind != RT_KIND_TENSOR)
			return base_err(err, STRATA_INVALID_ARGUMENT,
			                "input \"%s\" is not a tensor: use runtime_run_args",
			                g->input_info[k].name);
	for (int k = 0; k < g->noutputs && !x->all_tensor; k++)
		if (g->output_info[k].kind != RT_KIND_TENSOR)
			return base_err(err, STRATA_INVALID_ARGUMENT,
			                "output \"%s\" is not a tensor: use runtime_run_args",
			                g->output_info[k].name);
	int rc = run_top(x, in, NULL, err);
	if (rc != 0)
		return rc;
	for (int k = 0; k < g->noutputs; k++) {
		if (x->hold[g->outputs[k]] != RT_HOLD_TENSOR)
			return base_err(err, STRATA_RUNTIME, "output \"%s\" holds no tensor",
			                g->output_info[k].name);
		out[k] = x->vals[g->outputs[k]];
	}
	return 0;
}

int runtime_run_args(struct rt_ctx *cx, const struct rt_arg *in, struct rt_arg *out,
                     struct strata_error *err)
{
	struct rt_exec *x = &cx->x;
	const struct rt_graph *g = x->g;
	if (g->ninputs > 0 && !in)
		return base_err(err, STRATA_INVALID_ARGUMENT, "no inputs given; the model has %d",
		                g->ninputs);
	int rc = run_top(x, NULL, in, err);
	if (rc != 0)
		return rc;
	for (int k = 0; k < g->noutputs; k++)
		to_arg(x, g->outputs[k], &out[k]);
	return 0;
}

/* ---- subgraphs ---------------------------------------------------------------------------- */

/* The child context of x running sg, made on first use. */
static struct rt_exec *child_of(struct rt_exec *x, const struct rt_graph *sg)
{
	for (size_t i = 0; i < x->nkids; i++)
		if (x->kids[i].g == sg)
			return x->kids[i].x;
	if (x->nkids == x->capkids &&
	    base_grow((void **)&x->kids, &x->capkids, x->nkids + 1, sizeof *x->kids, 1 << 16) != 0)
		return NULL;
	struct rt_exec *c = base_calloc(1, sizeof *c);
	if (!c)
		return NULL;
	if (exec_init(c, x->m, sg, x) != 0) {
		exec_free(c);
		base_free(c, sizeof *c);
		return NULL;
	}
	x->kids[x->nkids].g = sg;
	x->kids[x->nkids++].x = c;
	return c;
}

static const char *kind_str(int k)
{
	switch (k) {
	case RT_KIND_SEQUENCE: return "a sequence";
	case RT_KIND_OPTIONAL_TENSOR: return "an optional tensor";
	case RT_KIND_OPTIONAL_SEQUENCE: return "an optional sequence";
	default: return "a tensor";
	}
}

int rt_subgraph_run(struct rt_exec *x, const struct rt_node *n, const struct rt_graph *sg,
                    const struct rt_arg *in, struct rt_arg *out)
{
	if (!sg || sg->parent != x->g || !sg->resolved)
		return rt_fail(x, n, STRATA_RUNTIME, "the subgraph does not belong to this node");
	struct rt_exec *c = child_of(x, sg);
	if (!c)
		return rt_nomem(x, n, "a subgraph context");
	if (rt_exec_defer(c) != 0) {
		rt_exec_release_later(c);
		return rt_nomem(x, n, "a subgraph run");
	}
	int rc = 0;
	/* Captured values view the enclosing context's values. */
	for (int v = 0; v < sg->nvalues && rc == 0; v++) {
		int o = sg->values[v].outer;
		if (o < 0 || sg->values[v].konst)
			continue;
		if (o >= x->g->nvalues || x->hold[o] == RT_HOLD_EMPTY) {
			rc = rt_fail(x, n, STRATA_RUNTIME, "the subgraph reads \"%s\", which holds nothing",
			             sg->values[v].name);
			break;
		}
		c->hold[v] = x->hold[o];
		c->vals[v] = x->vals[o];
		c->seqs[v].s = x->seqs[o].s;
	}
	for (int k = 0; k < sg->ninputs && rc == 0; k++) {
		int v = sg->inputs[k];
		const struct rt_value *val = &sg->values[v];
		const struct rt_arg *a = &in[k];
		int seq = val->kind == RT_KIND_SEQUENCE || val->kind == RT_KIND_OPTIONAL_SEQUENCE;
		int opt = val->kind == RT_KIND_OPTIONAL_TENSOR || val->kind == RT_KIND_OPTIONAL_SEQUENCE;
		if (a->kind == RT_ARG_NONE && opt) {
			c->hold[v] = RT_HOLD_NONE;
		} else if (a->kind == RT_ARG_TENSOR && !seq && a->tensor.dtype == val->dtype &&
		           a->tensor.rank >= 0 && a->tensor.rank <= RT_MAX_RANK) {
			c->vals[v] = a->tensor;
			c->hold[v] = RT_HOLD_TENSOR;
		} else if (a->kind == RT_ARG_SEQUENCE && seq && a->seq.dtype == val->dtype &&
		           a->seq.count >= 0) {
			c->seqs[v].s = a->seq;
			c->hold[v] = RT_HOLD_SEQ;
		} else {
			rc = rt_fail(x, n, STRATA_RUNTIME,
			             "subgraph input \"%s\" is %s of %s; given %s of %s", val->name,
			             kind_str(val->kind), base_dtype_name(val->dtype), arg_name(a->kind),
			             base_dtype_name(a->kind == RT_ARG_TENSOR ? a->tensor.dtype
			                             : a->kind == RT_ARG_SEQUENCE ? a->seq.dtype
			                                                          : BASE_DT_UNDEFINED));
		}
	}
	if (rc == 0) {
		c->err = x->err;
		rc = run_nodes(c);
		for (int k = 0; k < sg->noutputs && rc == 0; k++) {
			rc = own_value(c, sg->outputs[k], x->err);
			if (rc == 0)
				to_arg(c, sg->outputs[k], &out[k]);
		}
		c->err = NULL;
		if (rc != 0) {
			char msg[STRATA_ERRMSG_MAX];
			snprintf(msg, sizeof msg, "%s", x->err ? x->err->msg : strata_strerror(rc));
			x->failed = 1;
			rt_node_err(n, x->err, rc, "%s", msg);
		}
	}
	rt_exec_release_later(c);
	return rc;
}

/* ---- constant folding (called by infer.c at load) ------------------------------------------ */

struct rt_exec *rt_fold_new(const struct rt_model *m)
{
	struct rt_exec *x = base_calloc(1, sizeof *x);
	if (!x)
		return NULL;
	if (exec_init(x, m, &m->g, NULL) != 0) {
		exec_free(x);
		base_free(x, sizeof *x);
		return NULL;
	}
	x->check = 0; /* infer.c checks folded shapes itself */
	return x;
}

void rt_fold_free(struct rt_exec *x)
{
	if (!x)
		return;
	exec_free(x);
	base_free(x, sizeof *x);
}

/* A copy of t owned by mem (string cells included), or NULL. */
static struct rt_tensor *keep_tensor(struct rt_blocks *mem, const struct rt_tensor *t)
{
	int ok;
	size_t bytes = rt_tensor_bytes(t->dtype, runtime_tensor_count(t), &ok);
	struct rt_tensor *k = rt_blocks_alloc(mem, sizeof *k);
	void *p = ok ? rt_blocks_alloc(mem, bytes) : NULL;
	if (!k || !p)
		return NULL;
	*k = *t;
	k->data = p;
	if (t->dtype != BASE_DT_STRING) {
		if (bytes)
			memcpy(p, t->data, bytes);
		return k;
	}
	for (int64_t i = 0; i < runtime_tensor_count(t); i++) {
		const char *c = ((char *const *)t->data)[i];
		if (!c)
			c = "";
		if (!(((char **)p)[i] = rt_blocks_strndup(mem, c, strlen(c))))
			return NULL;
	}
	return k;
}

int rt_fold_node(struct rt_exec *x, const struct rt_node *n, struct rt_blocks *mem,
                 struct rt_tensor **out, struct strata_error *err)
{
	const struct rt_graph *g = x->g;
	for (int j = 0; j < n->nout; j++)
		out[j] = NULL;
	/* Constants folded since the context was made are bound here. */
	for (int j = 0; j < n->nin; j++) {
		int v = n->in[j];
		if (v < 0)
			continue;
		if (!g->values[v].konst)
			return base_err(err, STRATA_INVALID_ARGUMENT, "input \"%s\" is not a constant",
			                g->values[v].name);
		x->vals[v] = *g->values[v].konst;
		x->hold[v] = RT_HOLD_TENSOR;
	}
	x->err = err;
	x->failed = 0;
	int rc = n->run((struct rt_node *)n, x);
	rt_temp_release(x);
	if (rc != 0 && !x->failed)
		rt_node_err(n, err, rc, "%s", strata_strerror(rc));
	x->err = NULL;
	for (int j = 0; j < n->nout && rc == 0; j++) {
		int v = n->out[j];
		if (v < 0)
			continue;
		if (x->hold[v] != RT_HOLD_TENSOR) {
			rc = rt_node_err(n, err, STRATA_NOT_IMPLEMENTED, "output %d is not a tensor", j);
		} else if (!(out[j] = keep_tensor(mem, &x->vals[v]))) {
			rc = base_nomem(err, "folding constants");
		}
	}
	for (int j = 0; j < n->nout; j++)
		if (n->out[j] >= 0)
			rt_value_release(x, n->out[j]);
	base_arena_reset(x->strings);
	return rc;
}
