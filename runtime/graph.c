/*
 * graph.c: the graph as data: what a value and a node are, the accessors
 * kernels' init functions use (element types, kinds, constants, attributes),
 * the declared inputs and outputs of a model, and finalizing a graph's nodes
 * when a model is freed.
 *
 * Nothing here decides anything: load.c and ctxfile.c build graphs,
 * resolve.c resolves them, infer.c and optimize.c rewrite them, exec.c runs
 * them.  Every file of runtime/ may use this one; it uses only blocks.c.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "runtime_int.h"

static void fini_graph(struct rt_graph *g)
{
	for (int i = 0; i < g->ninited; i++) {
		struct rt_node *n = &g->nodes[i];
		if (n->def && n->def->fini)
			n->def->fini(n);
		for (int s = 0; s < n->nsub; s++)
			fini_graph(n->sub[s]);
	}
	g->ninited = 0;
}

void rt_graph_fini(struct rt_model *m)
{
	m->g.ninited = m->ninited;
	fini_graph(&m->g);
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

int rt_graph_kind(const struct rt_graph *g, int v)
{
	if (v < 0 || v >= g->nvalues)
		return RT_KIND_TENSOR;
	return g->values[v].kind;
}

void rt_graph_set_type(struct rt_graph *g, int v, int kind, int dtype)
{
	if (v >= 0 && v < g->nvalues) {
		g->values[v].kind = kind;
		g->values[v].dtype = dtype;
	}
}

int rt_graph_find(const struct rt_graph *g, const char *name)
{
	for (int v = 0; v < g->nvalues; v++)
		if (strcmp(g->values[v].name, name) == 0)
			return v;
	return -1;
}

int rt_node_subgraph(struct rt_node *n, struct rt_graph *sg, struct strata_error *err)
{
	if (n->nsub == RT_NODE_SUBS)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "more than %d subgraphs",
		                   RT_NODE_SUBS);
	n->sub[n->nsub++] = sg;
	return 0;
}

int rt_graph_keep(struct rt_graph *g, struct rt_node *n, int v)
{
	if (v < 0 || v >= g->nvalues)
		return 0;
	for (int i = 0; i < n->nimplicit; i++)
		if (n->implicit[i] == v)
			return 0;
	int *p = rt_blocks_alloc(&g->model->mem, (size_t)(n->nimplicit + 1) * sizeof *p);
	if (!p)
		return STRATA_NOMEM;
	if (n->nimplicit)
		memcpy(p, n->implicit, (size_t)n->nimplicit * sizeof *p);
	p[n->nimplicit++] = v;
	n->implicit = p;
	return 0;
}

int rt_graph_release_const(struct rt_graph *g, int v)
{
	if (v < 0 || v >= g->nvalues || !g->values[v].konst)
		return STRATA_INVALID_GRAPH;
	g->values[v].releases++;
	return 0;
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

int rt_node_nomem(const struct rt_node *n, struct strata_error *err, const char *fmt, ...)
{
	char msg[STRATA_ERRMSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return rt_node_err(n, err, STRATA_NOMEM, "out of memory: %s", msg);
}

int rt_node_input_dtype(const struct rt_node *n, const struct rt_graph *g, int i, int *dt,
                        struct strata_error *err)
{
	if (i >= n->nin || n->in[i] < 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "input %d is missing", i);
	*dt = rt_graph_dtype(g, n->in[i]);
	if (*dt == BASE_DT_UNDEFINED)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "input %d has no known element type", i);
	return 0;
}

int rt_model_value_shape(const struct rt_model *m, const char *name, struct rt_shape *out)
{
	int v = rt_graph_find(&m->g, name);
	if (v < 0)
		return -1;
	*out = m->g.values[v].shape;
	return 0;
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
