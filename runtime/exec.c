/*
 * exec.c: running a resolved graph.
 *
 * The last step of the runtime's data flow.  A run context (struct rt_ctx)
 * holds one tensor view per value of the graph and the buffers behind them.
 * runtime_run() checks the caller's inputs against the declared input types,
 * then calls each node's kernel in run order.  Kernels read inputs through
 * rt_input() and get output buffers from rt_output(); after a node has run,
 * every value it was the last reader of gives its buffer back to the
 * context's pool, where later rt_output() calls find it (best fit by size).
 *
 * Invariants:
 *  - a buffer is either held by exactly one value (vbuf[v]), by the running
 *    node's temporaries, or in the pool;
 *  - buffers outlive runs: the outputs of run N go back to the pool when run
 *    N+1 starts, so a second run with the same shapes takes every buffer
 *    from the pool and allocates nothing;
 *  - the pool keeps at most POOL_MAX_BYTES; past that, released buffers are
 *    freed instead;
 *  - views of graph inputs point at caller memory and are never written;
 *    constants are read in place from the model.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "runtime_int.h"

#define POOL_MAX_BYTES ((size_t)1 << 30)
#define ALIGN 64

struct buf {
	void *p;
	size_t cap;
};

struct sym {
	const char *name;        /* a symbolic dimension name of an input */
	int64_t size;            /* its size in this run */
	int input;               /* the input that fixed it */
};

struct rt_exec {
	const struct rt_model *m;
	const struct rt_graph *g;
	struct rt_tensor *vals;  /* one view per value */
	struct buf *vbuf;        /* the buffer each value holds in this run */
	struct buf *pool;        /* free buffers */
	size_t npool, cappool;
	size_t pool_bytes;
	struct buf *temp;        /* scratch and omitted outputs of the running node */
	size_t ntemp, captemp;
	struct rt_tensor *tmp_out; /* views of omitted outputs, one per output slot */
	int max_nout;
	struct sym *sym;
	int capsym;
	struct strata_error *err;
	int failed;              /* rt_fail() was called by the running kernel */
	struct base_arena strings; /* bytes of strings made by kernels, reset per run */
};

struct rt_ctx {
	struct rt_exec x;
};

/* ---- the buffer pool --------------------------------------------------------------- */

/* A buffer of at least n bytes: the smallest pooled one that fits, else new. */
static int pool_get(struct rt_exec *x, size_t n, struct buf *b)
{
	size_t best = SIZE_MAX;
	for (size_t i = 0; i < x->npool; i++)
		if (x->pool[i].cap >= n && (best == SIZE_MAX || x->pool[i].cap < x->pool[best].cap))
			best = i;
	if (best != SIZE_MAX) {
		*b = x->pool[best];
		x->pool[best] = x->pool[--x->npool];
		x->pool_bytes -= b->cap;
		return 0;
	}
	if (n > SIZE_MAX - ALIGN)
		return STRATA_LIMIT;
	size_t cap = n ? (n + ALIGN - 1) / ALIGN * ALIGN : ALIGN;
	b->p = base_alloc(cap);
	if (!b->p)
		return STRATA_NOMEM;
	b->cap = cap;
	return 0;
}

static void pool_put(struct rt_exec *x, struct buf *b)
{
	if (!b->p)
		return;
	if (x->pool_bytes + b->cap > POOL_MAX_BYTES ||
	    (x->npool == x->cappool &&
	     base_grow((void **)&x->pool, &x->cappool, x->npool + 1, sizeof *x->pool, 1 << 24) != 0)) {
		base_free(b->p, b->cap);
	} else {
		x->pool[x->npool++] = *b;
		x->pool_bytes += b->cap;
	}
	b->p = NULL;
	b->cap = 0;
}

/* A buffer that lives until the running node returns. */
static void *temp_get(struct rt_exec *x, size_t n)
{
	if (x->ntemp == x->captemp &&
	    base_grow((void **)&x->temp, &x->captemp, x->ntemp + 1, sizeof *x->temp, 1 << 20) != 0)
		return NULL;
	struct buf b;
	if (pool_get(x, n, &b) != 0)
		return NULL;
	x->temp[x->ntemp++] = b;
	return b.p;
}

static void temp_release(struct rt_exec *x)
{
	while (x->ntemp > 0)
		pool_put(x, &x->temp[--x->ntemp]);
}

/* ---- context ------------------------------------------------------------------------ */

int runtime_ctx_new(const struct rt_model *m, struct rt_ctx **out, struct strata_error *err)
{
	const struct rt_graph *g = &m->g;
	*out = NULL;
	struct rt_ctx *cx = base_calloc(1, sizeof *cx);
	if (!cx)
		return base_err(err, STRATA_NOMEM, "out of memory for a run context");
	struct rt_exec *x = &cx->x;
	x->m = m;
	x->g = g;
	base_arena_init(&x->strings, 4096);
	for (int i = 0; i < g->nnodes; i++)
		if (g->nodes[i].nout > x->max_nout)
			x->max_nout = g->nodes[i].nout;
	for (int k = 0; k < g->ninputs; k++)
		for (int d = 0; d < g->input_info[k].rank; d++)
			if (g->input_info[k].dims[d] < 0 && *g->input_info[k].dim_names[d])
				x->capsym++;
	x->vals = base_calloc((size_t)g->nvalues + 1, sizeof *x->vals);
	x->vbuf = base_calloc((size_t)g->nvalues + 1, sizeof *x->vbuf);
	x->tmp_out = base_calloc((size_t)x->max_nout + 1, sizeof *x->tmp_out);
	x->sym = base_calloc((size_t)x->capsym + 1, sizeof *x->sym);
	if (!x->vals || !x->vbuf || !x->tmp_out || !x->sym) {
		runtime_ctx_free(cx);
		return base_err(err, STRATA_NOMEM, "out of memory for a run context");
	}
	for (int v = 0; v < g->nvalues; v++)
		if (g->values[v].konst)
			x->vals[v] = *g->values[v].konst;
	*out = cx;
	return 0;
}

void runtime_ctx_free(struct rt_ctx *cx)
{
	if (!cx)
		return;
	struct rt_exec *x = &cx->x;
	size_t nv = (size_t)x->g->nvalues + 1;
	if (x->vbuf)
		for (size_t v = 0; v < nv; v++)
			if (x->vbuf[v].p)
				base_free(x->vbuf[v].p, x->vbuf[v].cap);
	for (size_t i = 0; i < x->ntemp; i++)
		base_free(x->temp[i].p, x->temp[i].cap);
	for (size_t i = 0; i < x->npool; i++)
		base_free(x->pool[i].p, x->pool[i].cap);
	if (x->pool)
		base_free(x->pool, x->cappool * sizeof *x->pool);
	if (x->temp)
		base_free(x->temp, x->captemp * sizeof *x->temp);
	if (x->vals)
		base_free(x->vals, nv * sizeof *x->vals);
	if (x->vbuf)
		base_free(x->vbuf, nv * sizeof *x->vbuf);
	if (x->tmp_out)
		base_free(x->tmp_out, ((size_t)x->max_nout + 1) * sizeof *x->tmp_out);
	if (x->sym)
		base_free(x->sym, ((size_t)x->capsym + 1) * sizeof *x->sym);
	base_arena_free(&x->strings);
	base_free(cx, sizeof *cx);
}

/* ---- what kernels call ------------------------------------------------------------------ */

const struct rt_tensor *rt_input(struct rt_exec *x, const struct rt_node *n, int i)
{
	if (i < 0 || i >= n->nin || n->in[i] < 0)
		return NULL;
	return &x->vals[n->in[i]];
}

int rt_output(struct rt_exec *x, const struct rt_node *n, int i, int dtype, int rank,
              const int64_t *dims, struct rt_tensor **out)
{
	*out = NULL;
	if (i < 0 || i >= n->nout)
		return rt_fail(x, n, STRATA_RUNTIME, "output %d does not exist", i);
	if (rank < 0 || rank > RT_MAX_RANK)
		return rt_fail(x, n, STRATA_LIMIT, "output rank %d exceeds %d", rank, RT_MAX_RANK);
	int v = n->out[i];
	if (v >= 0 && dtype != x->g->values[v].dtype)
		return rt_fail(x, n, STRATA_RUNTIME, "output %d is %s, but was declared %s", i,
		               base_dtype_name(dtype), base_dtype_name(x->g->values[v].dtype));
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
	size_t bytes = rt_tensor_bytes(dtype, count, &ok);
	if (!ok)
		return rt_fail(x, n, STRATA_LIMIT, "output %d is too large or of unknown type", i);

	struct rt_tensor *t;
	void *p;
	if (v < 0) {
		/* An omitted optional output: the kernel may still write it. */
		p = temp_get(x, bytes);
		t = &x->tmp_out[i];
	} else {
		/* A kernel that asks twice gets a fresh buffer; the old one returns. */
		pool_put(x, &x->vbuf[v]);
		struct buf b;
		int rc = pool_get(x, bytes, &b);
		p = rc == 0 ? b.p : NULL;
		if (p)
			x->vbuf[v] = b;
		t = &x->vals[v];
	}
	if (!p)
		return rt_fail(x, n, STRATA_NOMEM, "out of memory for output %d (%zu bytes)", i, bytes);
	if (dtype == BASE_DT_STRING && bytes)
		memset(p, 0, bytes);
	t->dtype = dtype;
	t->rank = rank;
	for (int d = 0; d < RT_MAX_RANK; d++)
		t->dims[d] = d < rank ? dims[d] : 0;
	t->data = p;
	*out = t;
	return 0;
}

char *rt_string(struct rt_exec *x, const char *s, size_t len)
{
	char *d = base_arena_alloc(&x->strings, len + 1, 1);
	if (d) {
		if (len)
			memcpy(d, s, len);
		d[len] = 0;
	}
	return d;
}

void *rt_scratch(struct rt_exec *x, size_t bytes)
{
	return temp_get(x, bytes);
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

/* ---- input checks ------------------------------------------------------------------------- */

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

static int bad_input(const struct rt_value_info *info, const struct rt_tensor *t,
                     struct strata_error *err, const char *why)
{
	char want[256], got[256];
	fmt_declared(want, sizeof want, info);
	fmt_given(got, sizeof got, t);
	return base_err(err, STRATA_INVALID_ARGUMENT, "input \"%s\": expected %s, given %s%s%s",
	                info->name, want, got, why ? ": " : "", why ? why : "");
}

static int check_inputs(struct rt_exec *x, const struct rt_tensor *in, struct strata_error *err)
{
	const struct rt_graph *g = x->g;
	int nsym = 0;
	if (g->ninputs > 0 && !in)
		return base_err(err, STRATA_INVALID_ARGUMENT, "no input tensors given; the model has %d",
		                g->ninputs);
	for (int k = 0; k < g->ninputs; k++) {
		const struct rt_value_info *info = &g->input_info[k];
		const struct rt_tensor *t = &in[k];
		if (t->rank < 0 || t->rank > RT_MAX_RANK)
			return base_err(err, STRATA_INVALID_ARGUMENT, "input \"%s\": rank %d is out of range",
			                info->name, t->rank);
		if (t->dtype != info->dtype)
			return bad_input(info, t, err, NULL);
		if (info->rank >= 0 && t->rank != info->rank)
			return bad_input(info, t, err, NULL);
		int64_t count = 1;
		int zero = 0;
		for (int d = 0; d < t->rank; d++) {
			if (t->dims[d] < 0)
				return bad_input(info, t, err, "negative dimension");
			zero |= t->dims[d] == 0;
			if (info->rank < 0)
				continue;
			if (info->dims[d] >= 0 && t->dims[d] != info->dims[d])
				return bad_input(info, t, err, NULL);
			if (info->dims[d] < 0 && *info->dim_names[d]) {
				int s;
				for (s = 0; s < nsym; s++)
					if (strcmp(x->sym[s].name, info->dim_names[d]) == 0)
						break;
				if (s == nsym) {
					x->sym[nsym].name = info->dim_names[d];
					x->sym[nsym].size = t->dims[d];
					x->sym[nsym++].input = k;
				} else if (x->sym[s].size != t->dims[d]) {
					char why[256];
					snprintf(why, sizeof why, "dimension \"%s\" is %lld here but %lld in input \"%s\"",
					         info->dim_names[d], (long long)t->dims[d],
					         (long long)x->sym[s].size, g->input_info[x->sym[s].input].name);
					return bad_input(info, t, err, why);
				}
			}
		}
		for (int d = 0; d < t->rank && !zero; d++) {
			if (t->dims[d] > ((int64_t)1 << 40) / count)
				return bad_input(info, t, err, "too large");
			count *= t->dims[d];
		}
		if (!zero && count > 0 && !t->data)
			return base_err(err, STRATA_INVALID_ARGUMENT, "input \"%s\" has no data", info->name);
	}
	return 0;
}

/* ---- the run ---------------------------------------------------------------------------- */

int runtime_run(struct rt_ctx *cx, const struct rt_tensor *in, struct rt_tensor *out,
                struct strata_error *err)
{
	struct rt_exec *x = &cx->x;
	const struct rt_graph *g = x->g;

	/* The previous run's outputs (and, after a failed run, everything it
	 * held) go back to the pool. */
	for (int v = 0; v < g->nvalues; v++)
		if (x->vbuf[v].p)
			pool_put(x, &x->vbuf[v]);
	temp_release(x);
	base_arena_reset(&x->strings);

	int rc = check_inputs(x, in, err);
	if (rc != 0)
		return rc;
	for (int k = 0; k < g->ninputs; k++)
		x->vals[g->inputs[k]] = in[k];

	x->err = err;
	for (int i = 0; i < g->nnodes; i++) {
		const struct rt_node *n = &g->nodes[i];
		x->failed = 0;
		rc = n->run((struct rt_node *)n, x);
		temp_release(x);
		if (rc == 0) {
			for (int j = 0; j < n->nout; j++)
				if (n->out[j] >= 0 && !x->vbuf[n->out[j]].p)
					rc = rt_fail(x, n, STRATA_RUNTIME, "the kernel did not produce output %d", j);
		} else if (!x->failed) {
			rt_node_err(n, err, rc, "%s", strata_strerror(rc));
		}
		if (rc != 0) {
			x->err = NULL;
			return rc;
		}
		for (int j = 0; j < n->nin; j++) {
			int v = n->in[j];
			if (v >= 0 && g->values[v].last_use == i && !g->values[v].is_output)
				pool_put(x, &x->vbuf[v]);
		}
		for (int j = 0; j < n->nout; j++) {
			int v = n->out[j];
			if (v >= 0 && g->values[v].last_use < 0 && !g->values[v].is_output)
				pool_put(x, &x->vbuf[v]);
		}
	}
	x->err = NULL;

	for (int k = 0; k < g->noutputs; k++) {
		int v = g->outputs[k];
		out[k] = x->vals[v];
		if (g->values[v].producer >= 0)
			continue;
		/* A graph input or a constant: hand out a copy, so that the caller
		 * owns nothing of the model and the view lives like the others. */
		int ok;
		size_t bytes = rt_tensor_bytes(out[k].dtype, runtime_tensor_count(&out[k]), &ok);
		if ((rc = pool_get(x, bytes, &x->vbuf[v])) != 0)
			return base_err(err, rc, "out of memory for output \"%s\"", g->values[v].name);
		if (bytes)
			memcpy(x->vbuf[v].p, out[k].data, bytes);
		out[k].data = x->vbuf[v].p;
	}
	return 0;
}
