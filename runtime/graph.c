/*
 * graph.c: from a loaded graph to a runnable one.
 *
 * load.c hands over a struct rt_graph whose nodes are in file order and whose
 * values are all named and connected.  rt_graph_resolve() sorts the nodes
 * topologically (refusing cycles), resolves each to an operator definition
 * by (domain, op, opset), and calls the definitions' init() in run order so
 * that element types flow from the graph inputs and constants to every node
 * output.  It then records, for each value, the last node that reads it:
 * exec.c returns a value's buffer to the run context right after that node.
 *
 * Invariants after a successful resolve: nodes[] is in run order; every
 * node has def and run set; every value read or written by a node has a
 * known element type; values[v].producer indexes nodes[] in run order.
 *
 * Also here: the attribute helpers kernels use, and the runtime_model_*
 * accessors.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "runtime_int.h"

/* ---- topological order ------------------------------------------------------- */

/* Reorder g->nodes so that every node comes after the producers of its
 * inputs.  A graph already in order keeps it (the common case). */
static int sort_nodes(struct rt_model *m, struct strata_error *err)
{
	struct rt_graph *g = &m->g;
	int n = g->nnodes;
	int sorted = 1;
	for (int i = 0; i < n && sorted; i++)
		for (int j = 0; j < g->nodes[i].nin; j++) {
			int v = g->nodes[i].in[j];
			if (v >= 0 && g->values[v].producer >= i) {
				sorted = 0;
				break;
			}
		}
	if (sorted || n == 0)
		return 0;

	/* Kahn's algorithm over node -> consumer edges kept in CSR form. */
	size_t nedges = 0;
	for (int i = 0; i < n; i++)
		nedges += (size_t)g->nodes[i].nin;
	size_t sz_i = (size_t)(n + 1) * sizeof(int);
	int *indeg = base_calloc((size_t)n + 1, sizeof(int));
	int *start = base_calloc((size_t)n + 2, sizeof(int));
	int *edge = base_calloc(nedges + 1, sizeof(int));
	int *queue = base_calloc((size_t)n + 1, sizeof(int));
	struct rt_node *tmp = base_calloc((size_t)n, sizeof *tmp);
	int rc = 0;
	if (!indeg || !start || !edge || !queue || !tmp) {
		rc = base_err(err, STRATA_NOMEM, "out of memory while sorting the graph");
		goto out;
	}
	for (int i = 0; i < n; i++)
		for (int j = 0; j < g->nodes[i].nin; j++) {
			int v = g->nodes[i].in[j];
			if (v >= 0 && g->values[v].producer >= 0) {
				start[g->values[v].producer + 1]++;
				indeg[i]++;
			}
		}
	for (int i = 0; i < n; i++)
		start[i + 1] += start[i];
	{
		int *fill = queue; /* borrowed as a cursor array before the sort starts */
		for (int i = 0; i < n; i++)
			fill[i] = start[i];
		for (int i = 0; i < n; i++)
			for (int j = 0; j < g->nodes[i].nin; j++) {
				int v = g->nodes[i].in[j];
				if (v >= 0 && g->values[v].producer >= 0)
					edge[fill[g->values[v].producer]++] = i;
			}
	}
	int head = 0, tail = 0;
	for (int i = 0; i < n; i++)
		if (indeg[i] == 0)
			queue[tail++] = i;
	while (head < tail) {
		int i = queue[head++];
		for (int e = start[i]; e < start[i + 1]; e++)
			if (--indeg[edge[e]] == 0)
				queue[tail++] = edge[e];
	}
	if (tail < n) {
		for (int i = 0; i < n; i++)
			if (indeg[i] > 0) {
				rc = base_err(err, STRATA_INVALID_GRAPH,
				              "the graph has a cycle through node \"%s\" (%s)",
				              g->nodes[i].name, g->nodes[i].op);
				break;
			}
		goto out;
	}
	/* queue[] is the new order; move the nodes and renumber producers. */
	for (int k = 0; k < n; k++)
		tmp[k] = g->nodes[queue[k]];
	memcpy(g->nodes, tmp, (size_t)n * sizeof *tmp);
	for (int k = 0; k < n; k++)
		for (int j = 0; j < g->nodes[k].nout; j++)
			if (g->nodes[k].out[j] >= 0)
				g->values[g->nodes[k].out[j]].producer = k;
out:
	if (indeg) base_free(indeg, sz_i);
	if (start) base_free(start, (size_t)(n + 2) * sizeof(int));
	if (edge) base_free(edge, (nedges + 1) * sizeof(int));
	if (queue) base_free(queue, sz_i);
	if (tmp) base_free(tmp, (size_t)n * sizeof *tmp);
	return rc;
}

/* ---- resolution ----------------------------------------------------------------- */

static const char *domain_name(const char *d)
{
	return *d ? d : "ai.onnx";
}

int rt_graph_resolve(struct rt_model *m, struct strata_error *err)
{
	struct rt_graph *g = &m->g;
	int rc = sort_nodes(m, err);
	if (rc != 0)
		return rc;

	for (int i = 0; i < g->nnodes; i++) {
		struct rt_node *n = &g->nodes[i];
		int found = 0;
		const struct rt_opdef *def = rt_registry_find(n->domain, n->op, n->opset, &found);
		if (!def)
			return base_err(err, STRATA_NOT_IMPLEMENTED,
			                "op \"%s\" (domain %s, opset %d) is not implemented%s", n->op,
			                domain_name(n->domain), n->opset,
			                found ? " (it exists at other opsets only)" : "");
		for (int j = 0; j < n->nin; j++)
			if (n->in[j] >= 0 && g->values[n->in[j]].dtype == BASE_DT_UNDEFINED)
				return rt_node_err(n, err, STRATA_INVALID_GRAPH,
				                   "input \"%s\" has no known element type",
				                   g->values[n->in[j]].name);
		n->def = def;
		n->run = NULL;
		rc = def->init(n, g, err);
		m->ninited = i + 1;
		if (rc != 0)
			return rc;
		if (!n->run)
			return rt_node_err(n, err, STRATA_INVALID_GRAPH, "the kernel chose no function");
		for (int j = 0; j < n->nout; j++)
			if (n->out[j] >= 0 && g->values[n->out[j]].dtype == BASE_DT_UNDEFINED)
				return rt_node_err(n, err, STRATA_INVALID_GRAPH,
				                   "output \"%s\" was given no element type",
				                   g->values[n->out[j]].name);
	}

	for (int i = 0; i < g->nnodes; i++) {
		const struct rt_node *n = &g->nodes[i];
		for (int j = 0; j < n->nin; j++)
			if (n->in[j] >= 0)
				g->values[n->in[j]].last_use = i;
	}

	for (int k = 0; k < g->noutputs; k++) {
		struct rt_value_info *info = &g->output_info[k];
		int dt = g->values[g->outputs[k]].dtype;
		if (info->dtype == BASE_DT_UNDEFINED)
			info->dtype = dt;
		else if (info->dtype != dt)
			return base_err(err, STRATA_INVALID_GRAPH,
			                "output \"%s\" is declared %s but its producer makes %s", info->name,
			                base_dtype_name(info->dtype), base_dtype_name(dt));
	}
	return 0;
}

void rt_graph_fini(struct rt_model *m)
{
	for (int i = 0; i < m->ninited && i < m->g.nnodes; i++) {
		struct rt_node *n = &m->g.nodes[i];
		if (n->def && n->def->fini)
			n->def->fini(n);
	}
	m->ninited = 0;
}

/* ---- what kernels' init functions use ----------------------------------------------- */

int rt_graph_dtype(const struct rt_graph *g, int v)
{
	if (v < 0 || v >= g->nvalues)
		return BASE_DT_UNDEFINED;
	return g->values[v].dtype;
}

void rt_graph_set_dtype(struct rt_graph *g, int v, int dtype)
{
	if (v >= 0 && v < g->nvalues)
		g->values[v].dtype = dtype;
}

const struct rt_tensor *rt_graph_const(const struct rt_graph *g, int v)
{
	if (v < 0 || v >= g->nvalues)
		return NULL;
	return g->values[v].konst;
}

const struct rt_attr *rt_attr_find(const struct rt_node *n, const char *name)
{
	for (int i = 0; i < n->nattr; i++)
		if (n->attr[i].name && strcmp(n->attr[i].name, name) == 0)
			return &n->attr[i];
	return NULL;
}

int64_t rt_attr_int(const struct rt_node *n, const char *name, int64_t dflt)
{
	const struct rt_attr *a = rt_attr_find(n, name);
	return a && a->type == RT_ATTR_INT ? a->i : dflt;
}

float rt_attr_float(const struct rt_node *n, const char *name, float dflt)
{
	const struct rt_attr *a = rt_attr_find(n, name);
	if (a && a->type == RT_ATTR_FLOAT)
		return a->f;
	if (a && a->type == RT_ATTR_INT)
		return (float)a->i;
	return dflt;
}

const char *rt_attr_string(const struct rt_node *n, const char *name, const char *dflt)
{
	const struct rt_attr *a = rt_attr_find(n, name);
	return a && a->type == RT_ATTR_STRING ? a->s : dflt;
}

const int64_t *rt_attr_ints(const struct rt_node *n, const char *name, size_t *count)
{
	const struct rt_attr *a = rt_attr_find(n, name);
	if (!a || a->type != RT_ATTR_INTS) {
		*count = 0;
		return NULL;
	}
	*count = a->n;
	return a->ints;
}

int rt_node_err(const struct rt_node *n, struct strata_error *err, int code, const char *fmt, ...)
{
	if (!err)
		return code;
	char msg[STRATA_ERRMSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return base_err(err, code, "node %s%s%s(%s): %s", *n->name ? "\"" : "", n->name,
	                *n->name ? "\" " : "", n->op, msg);
}

/* ---- runtime_model_* accessors ---------------------------------------------------------- */

int runtime_model_ninputs(const struct rt_model *m)
{
	return m->g.ninputs;
}

int runtime_model_noutputs(const struct rt_model *m)
{
	return m->g.noutputs;
}

const struct rt_value_info *runtime_model_input(const struct rt_model *m, int i)
{
	return i >= 0 && i < m->g.ninputs ? &m->g.input_info[i] : NULL;
}

const struct rt_value_info *runtime_model_output(const struct rt_model *m, int i)
{
	return i >= 0 && i < m->g.noutputs ? &m->g.output_info[i] : NULL;
}

int runtime_model_input_index(const struct rt_model *m, const char *name)
{
	for (int i = 0; i < m->g.ninputs; i++)
		if (strcmp(m->g.input_info[i].name, name) == 0)
			return i;
	return -1;
}

int runtime_model_output_index(const struct rt_model *m, const char *name)
{
	for (int i = 0; i < m->g.noutputs; i++)
		if (strcmp(m->g.output_info[i].name, name) == 0)
			return i;
	return -1;
}
