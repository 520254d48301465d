/*
 * epcontext.c: com.microsoft EPContext, a node of a mixed graph that runs a
 * graph Strata compiled earlier (epctx.c finds it in its context binary) as
 * a subgraph.
 */
#include <string.h>

#include "../ctxfile.h"
#include "../kernel.h"

static int run_epcontext(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_graph *sg = n->state;
	struct rt_arg *io = rt_scratch_or_fail(x, n, (size_t)(n->nin + n->nout) * sizeof *io);
	if (!io)
		return STRATA_NOMEM;
	for (int k = 0; k < n->nin; k++) {
		io[k].kind = rt_input_kind(x, n, k);
		if (io[k].kind == RT_ARG_TENSOR)
			io[k].tensor = *rt_input(x, n, k);
		else if (io[k].kind == RT_ARG_SEQUENCE)
			io[k].seq = *rt_input_seq(x, n, k);
	}
	int rc = rt_subgraph_run(x, n, sg, io, io + n->nin);
	for (int k = 0; k < n->nout && rc == 0; k++)
		if (n->out[k] >= 0)
			rc = rt_output_arg(x, n, k, &io[n->nin + k]);
	return rc;
}

/* The compiled graph is resolved: the outputs take its types. */
static int finish_epcontext(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	const struct rt_graph *sg = n->state;
	for (int k = 0; k < n->nout; k++) {
		const struct rt_value *v = &sg->values[sg->outputs[k]];
		if (n->out[k] >= 0)
			rt_graph_set_type(g, n->out[k], v->kind, v->dtype);
	}
	n->run = run_epcontext;
	return 0;
}

static int init_epcontext(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	struct rt_model *m = g->model;
	if (g->parent)
		return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED, "EPContext inside a subgraph");
	const struct rt_cxfile *cf;
	int s;
	int rc = rt_epctx_find(m, g, n, &cf, &s, err);
	if (rc != 0)
		return rc;
	struct rt_graph *sg = rt_blocks_alloc(&m->mem, sizeof *sg);
	if (!sg)
		return base_nomem(err, "a compiled context");
	sg->parent = g;
	if ((rc = rt_cx_graph(m, cf, s, sg, err)) != 0)
		return rc;
	sg->parent = g;
	if (sg->ninputs != n->nin || sg->noutputs != n->nout)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH,
		                   "its compiled graph takes %d inputs and gives %d outputs, the node "
		                   "has %d and %d",
		                   sg->ninputs, sg->noutputs, n->nin, n->nout);
	for (int k = 0; k < n->nin; k++) {
		const struct rt_value *v = &sg->values[sg->inputs[k]];
		if (n->in[k] < 0 || rt_graph_dtype(g, n->in[k]) != v->dtype)
			return rt_node_err(n, err, STRATA_INVALID_GRAPH,
			                   "input %d must be %s for its compiled graph", k,
			                   base_dtype_name(v->dtype));
	}
	n->state = sg;
	n->finish = finish_epcontext;
	return rt_node_subgraph(n, sg, err);
}

const struct rt_opdef rt_ops_epcontext[] = {
	{ "com.microsoft", "EPContext", 1, init_epcontext, NULL },
	{ .op = NULL },
};
