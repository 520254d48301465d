/*
 * binding.c: IO binding (runtime.h): the inputs and outputs of a run
 * context bound to caller memory, and the runs that use them.
 *
 * A context's binding table (struct rt_binding, runtime_int.h) is one
 * block, made at the first bind or bound run and freed with the context's
 * buffers (rt_exec_buffers_free).  Binding writes one entry of it.  A bound
 * run is the ordinary run (rt_run_tensors, exec.c) on the bound inputs with
 * the table's running flag set: while it is, rt_output gives the kernel of
 * a bound output the caller's memory, and the end of the run copies into
 * that memory whatever output was produced elsewhere (exec.c decides,
 * buffers.c hands out the memory).
 *
 * Invariants:
 *  - an entry is unset, or holds a view that passed the checks of a run
 *    short of the symbolic dimensions (rt_check_input, rt_check_output)
 *    and whose data is aligned to its element size;
 *  - a failed bind leaves its entry as it was;
 *  - running is set only inside runtime_run_bound; view[] is read only
 *    when done, which only a successful bound run sets;
 *  - nothing here allocates once the table exists.
 */
#include <stdint.h>
#include <string.h>

#include "exec_int.h"
#include "kernel.h"

/* Bytes of the table of graph g: the struct, then in[], out[], view[] and
 * in_set[] (every size before in_set is a multiple of 8, so each array is
 * aligned for its type). */
static size_t table_bytes(const struct rt_graph *g)
{
	size_t ni = (size_t)g->ninputs, no = (size_t)g->noutputs;
	return sizeof(struct rt_binding) + ni * sizeof(struct rt_tensor) +
	       no * (sizeof(struct rt_bind_out) + sizeof(struct rt_tensor)) + ni;
}

/* x's table, made on first use.  NULL (err set) when out of memory. */
static struct rt_binding *table(struct rt_exec *x, struct strata_error *err)
{
	if (x->bind)
		return x->bind;
	const struct rt_graph *g = x->g;
	char *p = base_calloc(1, table_bytes(g));
	if (!p) {
		base_nomem(err, "an IO binding");
		return NULL;
	}
	struct rt_binding *b = (struct rt_binding *)p;
	p += sizeof *b;
	b->in = (struct rt_tensor *)p;
	p += (size_t)g->ninputs * sizeof *b->in;
	b->out = (struct rt_bind_out *)p;
	p += (size_t)g->noutputs * sizeof *b->out;
	b->view = (struct rt_tensor *)p;
	p += (size_t)g->noutputs * sizeof *b->view;
	b->in_set = (unsigned char *)p;
	x->bind = b;
	return b;
}

void rt_bind_reset(struct rt_exec *x)
{
	struct rt_binding *b = x->bind;
	if (!b)
		return;
	memset(b->in_set, 0, (size_t)x->g->ninputs);
	for (int k = 0; k < x->g->noutputs; k++)
		b->out[k].set = 0;
	b->running = 0;
	b->done = 0;
}

void rt_bind_free(struct rt_exec *x)
{
	if (x->bind)
		base_free(x->bind, table_bytes(x->g));
	x->bind = NULL;
}

/* The alignment a cell of dtype needs: its size, or its component's for
 * the complex types. */
static size_t cell_align(int dtype)
{
	int ok;
	size_t es = rt_tensor_bytes(dtype, 1, &ok);
	if (dtype == BASE_DT_COMPLEX64 || dtype == BASE_DT_COMPLEX128)
		es /= 2;
	return es ? es : 1;
}

/* The view of input k (or output k, out set) at (char *)base + offset, into
 * *t when it passes the checks of a bind. */
static int make_view(struct rt_exec *x, int out, int k, int dtype, int rank,
                     const int64_t *dims, const void *base, size_t offset, struct rt_tensor *t,
                     struct strata_error *err)
{
	const struct rt_graph *g = x->g;
	const char *what = out ? "output" : "input";
	int n = out ? g->noutputs : g->ninputs;
	if (k < 0 || k >= n)
		return base_err(err, STRATA_INVALID_ARGUMENT, "no %s %d: the model has %d", what, k, n);
	const struct rt_value_info *info = out ? &g->output_info[k] : &g->input_info[k];
	if (info->kind != RT_KIND_TENSOR)
		return base_err(err, STRATA_INVALID_ARGUMENT, "%s \"%s\" is not a tensor: it cannot be bound",
		                what, info->name);
	if (rank < 0 || rank > RT_MAX_RANK)
		return base_err(err, STRATA_INVALID_ARGUMENT, "%s \"%s\": rank %d is out of range",
		                what, info->name, rank);
	if (rank > 0 && !dims)
		return base_err(err, STRATA_INVALID_ARGUMENT, "%s \"%s\": rank %d without dims", what,
		                info->name, rank);
	if (!base && offset)
		return base_err(err, STRATA_INVALID_ARGUMENT, "%s \"%s\": offset %zu from a NULL base",
		                what, info->name, offset);
	struct rt_tensor v = { .dtype = dtype, .rank = rank };
	for (int d = 0; d < rank; d++)
		v.dims[d] = dims[d];
	v.data = base ? (char *)base + offset : NULL;
	int rc = out ? rt_check_output(x, k, &v, err) : rt_check_input(x, k, &v, err);
	if (rc != 0)
		return rc;
	size_t al = cell_align(dtype);
	if ((uintptr_t)v.data % al != 0)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "%s \"%s\": cells at offset %zu are not aligned to %zu bytes", what,
		                info->name, offset, al);
	*t = v;
	return 0;
}

int runtime_bind_input_at(struct rt_ctx *cx, int k, int dtype, int rank, const int64_t *dims,
                          const void *base, size_t offset, struct strata_error *err)
{
	struct rt_exec *x = &cx->x;
	struct rt_tensor t;
	int rc = make_view(x, 0, k, dtype, rank, dims, base, offset, &t, err);
	if (rc != 0)
		return rc;
	struct rt_binding *b = table(x, err);
	if (!b)
		return STRATA_NOMEM;
	b->in[k] = t;
	b->in_set[k] = 1;
	return 0;
}

int runtime_bind_input(struct rt_ctx *cx, const char *name, int dtype, int rank,
                       const int64_t *dims, const void *base, size_t offset,
                       struct strata_error *err)
{
	struct rt_exec *x = &cx->x;
	int k = runtime_model_input_index(x->m, name);
	if (k < 0)
		return base_err(err, STRATA_INVALID_ARGUMENT, "the model has no input \"%s\"", name);
	return runtime_bind_input_at(cx, k, dtype, rank, dims, base, offset, err);
}

int runtime_bind_output_at(struct rt_ctx *cx, int k, int dtype, int rank, const int64_t *dims,
                           void *base, size_t offset, struct strata_error *err)
{
	struct rt_exec *x = &cx->x;
	struct rt_tensor t;
	int rc = make_view(x, 1, k, dtype, rank, dims, base, offset, &t, err);
	if (rc != 0)
		return rc;
	struct rt_binding *b = table(x, err);
	if (!b)
		return STRATA_NOMEM;
	b->out[k].t = t;
	b->out[k].set = 1;
	return 0;
}

int runtime_bind_output(struct rt_ctx *cx, const char *name, int dtype, int rank,
                        const int64_t *dims, void *base, size_t offset,
                        struct strata_error *err)
{
	struct rt_exec *x = &cx->x;
	int k = runtime_model_output_index(x->m, name);
	if (k < 0)
		return base_err(err, STRATA_INVALID_ARGUMENT, "the model has no output \"%s\"", name);
	return runtime_bind_output_at(cx, k, dtype, rank, dims, base, offset, err);
}

int runtime_unbind_output(struct rt_ctx *cx, int k, struct strata_error *err)
{
	struct rt_exec *x = &cx->x;
	if (k < 0 || k >= x->g->noutputs)
		return base_err(err, STRATA_INVALID_ARGUMENT, "no output %d: the model has %d", k,
		                x->g->noutputs);
	if (x->bind)
		x->bind->out[k].set = 0;
	return 0;
}

int runtime_run_bound(struct rt_ctx *cx, struct strata_error *err)
{
	struct rt_exec *x = &cx->x;
	const struct rt_graph *g = x->g;
	struct rt_binding *b = table(x, err);
	if (!b)
		return STRATA_NOMEM;
	b->done = 0;
	for (int k = 0; k < g->ninputs; k++)
		if (!b->in_set[k])
			return base_err(err, STRATA_INVALID_ARGUMENT, "input \"%s\" is not bound",
			                g->input_info[k].name);
	b->running = 1;
	int rc = rt_run_tensors(x, b->in, b->view, err);
	b->running = 0;
	if (rc != 0)
		return rc;
	for (int k = 0; k < g->noutputs; k++)
		if (b->out[k].set)
			b->view[k] = b->out[k].t;
	b->done = 1;
	return 0;
}

const struct rt_tensor *runtime_bound_output(struct rt_ctx *cx, int k)
{
	struct rt_exec *x = &cx->x;
	if (!x->bind || !x->bind->done || k < 0 || k >= x->g->noutputs)
		return NULL;
	return &x->bind->view[k];
}
