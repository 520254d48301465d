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
 * Last, infer.c gives every value a static shape and folds the nodes whose
 * inputs are all constants.
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

/* Input j of node n counting its implicit inputs after the listed ones. */
static int dep(const struct rt_node *n, int j)
{
	return j < n->nin ? n->in[j] : n->implicit[j - n->nin];
}

/* Reorder g->nodes so that every node comes after the producers of its
 * inputs (implicit ones included).  A graph already in order keeps it (the
 * common case). */
static int sort_nodes(struct rt_graph *g, struct strata_error *err)
{
	int n = g->nnodes;
	int sorted = 1;
	for (int i = 0; i < n && sorted; i++)
		for (int j = 0; j < g->nodes[i].nin + g->nodes[i].nimplicit; j++) {
			int v = dep(&g->nodes[i], j);
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
		nedges += (size_t)g->nodes[i].nin + (size_t)g->nodes[i].nimplicit;
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
		for (int j = 0; j < g->nodes[i].nin + g->nodes[i].nimplicit; j++) {
			int v = dep(&g->nodes[i], j);
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
			for (int j = 0; j < g->nodes[i].nin + g->nodes[i].nimplicit; j++) {
				int v = dep(&g->nodes[i], j);
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

/* Definitions whose kernels read and write sequences and optionals. */
static int in_table(const struct rt_opdef *t, const struct rt_opdef *d)
{
	for (; t->op; t++)
		if (t == d)
			return 1;
	return 0;
}

static int takes_values(const struct rt_opdef *d)
{
	return d == &rt_op_identity_value || in_table(rt_ops_sequence, d) ||
	       in_table(rt_ops_control, d);
}

static const char *kind_name(int k)
{
	switch (k) {
	case RT_KIND_SEQUENCE: return "a sequence";
	case RT_KIND_OPTIONAL_TENSOR: return "an optional tensor";
	case RT_KIND_OPTIONAL_SEQUENCE: return "an optional sequence";
	default: return "a tensor";
	}
}

static int resolve_subgraph(struct rt_graph *g, struct rt_node *n, struct rt_graph *sg,
                            struct strata_error *err);

/* Sort g, resolve and init its nodes (and their subgraphs), compute last
 * uses, fill the output infos.  Shared by the model's graph and subgraphs. */
static int resolve_graph(struct rt_graph *g, struct strata_error *err)
{
	int rc = sort_nodes(g, err);
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
		int values_in = 0;
		for (int j = 0; j < n->nin; j++) {
			if (n->in[j] < 0)
				continue;
			if (g->values[n->in[j]].dtype == BASE_DT_UNDEFINED)
				return rt_node_err(n, err, STRATA_INVALID_GRAPH,
				                   "input \"%s\" has no known element type",
				                   g->values[n->in[j]].name);
			values_in |= g->values[n->in[j]].kind != RT_KIND_TENSOR;
		}
		/* Identity passes any value; the tensor kernel sees tensors only. */
		if (values_in && !*n->domain && strcmp(n->op, "Identity") == 0)
			def = &rt_op_identity_value;
		if (values_in && !takes_values(def))
			for (int j = 0; j < n->nin; j++)
				if (n->in[j] >= 0 && g->values[n->in[j]].kind != RT_KIND_TENSOR)
					return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED,
					                   "input \"%s\" is %s, not a tensor (opset %d)",
					                   g->values[n->in[j]].name,
					                   kind_name(g->values[n->in[j]].kind), n->opset);
		n->def = def;
		n->run = NULL;
		n->npacks = 0;
		n->nsub = 0;
		n->finish = NULL;
		rc = def->init(n, g, err);
		g->ninited = i + 1;
		for (int s = 0; s < n->nsub && rc == 0; s++)
			rc = resolve_subgraph(g, n, n->sub[s], err);
		if (rc == 0 && n->finish)
			rc = n->finish(n, g, err);
		if (rc != 0)
			return rc;
		if (!n->run)
			return rt_node_err(n, err, STRATA_INVALID_GRAPH, "the kernel chose no function");
		if (n->pre && n->npacks != n->npre)
			return rt_node_err(n, err, STRATA_INVALID_GRAPH,
			                   "the kernel took %d of the %d packed weights of its context",
			                   n->npacks, n->npre);
		for (int j = 0; j < n->nout; j++)
			if (n->out[j] >= 0 && g->values[n->out[j]].dtype == BASE_DT_UNDEFINED)
				return rt_node_err(n, err, STRATA_INVALID_GRAPH,
				                   "output \"%s\" was given no element type",
				                   g->values[n->out[j]].name);
	}

	for (int i = 0; i < g->nnodes; i++) {
		const struct rt_node *n = &g->nodes[i];
		for (int j = 0; j < n->nin + n->nimplicit; j++)
			if (dep(n, j) >= 0)
				g->values[dep(n, j)].last_use = i;
	}

	for (int k = 0; k < g->noutputs; k++) {
		struct rt_value_info *info = &g->output_info[k];
		const struct rt_value *val = &g->values[g->outputs[k]];
		if (val->dtype == BASE_DT_UNDEFINED)
			return base_err(err, STRATA_INVALID_GRAPH, "output \"%s\" has no known type",
			                info->name);
		if (info->dtype == BASE_DT_UNDEFINED) {
			info->dtype = val->dtype;
			info->kind = val->kind;
		} else if (info->dtype != val->dtype)
			return base_err(err, STRATA_INVALID_GRAPH,
			                "output \"%s\" is declared %s but its producer makes %s", info->name,
			                base_dtype_name(info->dtype), base_dtype_name(val->dtype));
		/* An optional may carry a plain value and the reverse: only
		 * tensor against sequence is a mismatch.  The declared kind stays
		 * (it says how the value is written down). */
		if ((info->kind == RT_KIND_SEQUENCE || info->kind == RT_KIND_OPTIONAL_SEQUENCE) !=
		    (val->kind == RT_KIND_SEQUENCE || val->kind == RT_KIND_OPTIONAL_SEQUENCE))
			return base_err(err, STRATA_INVALID_GRAPH,
			                "output \"%s\" is declared %s but its producer makes %s",
			                info->name, kind_name(info->kind), kind_name(val->kind));
	}
	return 0;
}

int rt_graph_resolve(struct rt_model *m, struct strata_error *err)
{
	m->g.model = m;
	int rc = resolve_graph(&m->g, err);
	m->ninited = m->g.ninited;
	/* Shapes and folding need every init done: inits set the element
	 * types the shape rules and the folded kernels rely on. */
	if (rc == 0)
		rc = rt_graph_infer(m, err);
	/* Fusion patterns ask for constants and static shapes. */
	if (rc == 0)
		rc = rt_graph_optimize(m, err);
	return rc;
}

int rt_graph_resolve_compiled(struct rt_model *m, struct strata_error *err)
{
	m->g.model = m;
	int rc = resolve_graph(&m->g, err);
	m->ninited = m->g.ninited;
	m->compiled = 1;
	return rc;
}

/* Subgraph sg of node n: its inputs' types are known (the node's init saw
 * to it), its captured values take the enclosing graph's. */
static int resolve_subgraph(struct rt_graph *g, struct rt_node *n, struct rt_graph *sg,
                            struct strata_error *err)
{
	if (!sg || sg->parent != g)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "the subgraph does not belong to it");
	if (sg->resolved || sg->ninited)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "the subgraph is resolved twice");
	for (int k = 0; k < sg->ninputs; k++) {
		const struct rt_value *v = &sg->values[sg->inputs[k]];
		if (v->dtype == BASE_DT_UNDEFINED)
			return rt_node_err(n, err, STRATA_INVALID_GRAPH,
			                   "subgraph input \"%s\" has no known type", v->name);
		sg->input_info[k].dtype = v->dtype;
		sg->input_info[k].kind = v->kind;
	}
	/* Captured values take the type the enclosing graph gave them. */
	for (int v = 0; v < sg->nvalues; v++) {
		struct rt_value *val = &sg->values[v];
		if (val->outer < 0)
			continue;
		if (val->outer >= g->nvalues)
			return rt_node_err(n, err, STRATA_INVALID_GRAPH, "bad captured value");
		val->dtype = g->values[val->outer].dtype;
		val->kind = g->values[val->outer].kind;
		val->konst = g->values[val->outer].konst;
	}
	int rc = resolve_graph(sg, err);
	if (rc != 0)
		return base_err_prefix(err, rc, "node %s%s%s(%s), subgraph", *n->name ? "\"" : "",
		                       n->name, *n->name ? "\" " : "", n->op);
	sg->resolved = 1;
	return 0;
}

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
