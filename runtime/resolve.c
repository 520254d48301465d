/*
 * resolve.c: from a built graph to a runnable one.
 *
 * load.c (or ctxfile.c, for a compiled context) hands over a struct rt_graph
 * whose nodes are in file order and whose values are all named and
 * connected.  rt_graph_resolve() sorts the nodes topologically (refusing
 * cycles), resolves each to an operator definition by (domain, op, opset)
 * through the registry, and calls the definitions' init() in run order so
 * that element types flow from the graph inputs and constants to every node
 * output.  A node with subgraphs names them in its init; they are resolved
 * here, the same way, before the node's finish types its outputs.  Then,
 * for each value, the last node that reads it: exec.c returns a value's
 * buffer to the run context right after that node.
 *
 * Last, infer.c gives every value a static shape and folds the nodes whose
 * inputs are all constants, optimize.c fuses chains into the kernels of
 * ops/fused.c, and the cells of constants whose every reader keeps a packed
 * copy are freed.  A graph decoded from a compiled context is already
 * sorted, folded, fused and shaped: rt_graph_resolve_compiled only runs the
 * inits.
 *
 * Invariants after a successful resolve: nodes[] is in run order; every
 * node has def and run set; every value read or written by a node has a
 * known element type; values[v].producer indexes nodes[] in run order.
 */
#include <string.h>

#include "kernel.h"

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
		rc = base_nomem(err, "sorting the graph");
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

/* Free the cells of the constants every running reader released (after
 * resolution: folding may still have read them).  Memory held twice (the
 * original and a packed copy) is what this saves. */
static void free_released(struct rt_model *m)
{
	struct rt_graph *g = &m->g;
	for (int v = 0; v < g->nvalues; v++) {
		struct rt_value *val = &g->values[v];
		if (!val->konst || val->releases <= 0 || val->is_output || !val->konst->data ||
		    val->konst->dtype == BASE_DT_STRING)
			continue;
		int readers = 0;
		for (int i = 0; i < g->nnodes; i++) {
			const struct rt_node *n = &g->nodes[i];
			if (n->folded)
				continue;
			int reads = 0;
			for (int j = 0; j < n->nin; j++)
				reads |= n->in[j] == v;
			for (int j = 0; j < n->nimplicit; j++)
				reads |= n->implicit[j] == v;
			readers += reads;
		}
		if (readers > val->releases)
			continue;
		void *data = val->konst->data;
		int shared = 0;
		for (int w = 0; w < g->nvalues && !shared; w++)
			shared = w != v && g->values[w].konst && g->values[w].konst->data == data;
		if (shared)
			continue;
		for (size_t b = 0; b < m->mem.n; b++)
			if (m->mem.b[b] == data) {
				rt_hdr_free(data);
				m->mem.b[b] = m->mem.b[--m->mem.n];
				val->konst->data = NULL;
				break;
			}
	}
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
	if (rc == 0)
		free_released(m);
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
