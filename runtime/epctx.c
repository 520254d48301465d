/*
 * epctx.c: reading compiled contexts as ONNX models (the EPContext design,
 * with Strata's runtime as the execution provider).
 *
 * A model whose graph is one Strata EPContext node standing for the whole
 * graph takes the compiled graph as its own (rt_epctx_adopt): nothing is
 * optimized, inferred or packed again, the weights stay in the mapped
 * binary.  Any other graph with EPContext nodes (several contexts,
 * main_context=0 nodes, ordinary nodes beside them) loads as usual, and
 * each EPContext node runs its compiled graph as a subgraph (the kernel in
 * ops/epcontext.c finds it with rt_epctx_find).  The binaries themselves
 * are held in ctxhold.c; writing contexts is ctxgen.c's.
 */
#include <string.h>

#include "ctxfile.h"

#define SOURCE RT_CTX_SOURCE

static int is_epcontext(const struct rt_node *n)
{
	return strcmp(n->op, "EPContext") == 0 && strcmp(n->domain, "com.microsoft") == 0;
}

int rt_epctx_present(const struct rt_graph *g)
{
	for (int i = 0; i < g->nnodes; i++)
		if (is_epcontext(&g->nodes[i]))
			return 1;
	return 0;
}

static const char *node_label(const struct rt_node *n)
{
	return *n->name ? n->name : "(unnamed)";
}

/* A relative path inside the model's folder: no leading '/', no "..". */
static int inside(const char *p)
{
	if (!*p || *p == '/')
		return 0;
	for (const char *s = p; *s;) {
		size_t k = strcspn(s, "/");
		if (k == 2 && s[0] == '.' && s[1] == '.')
			return 0;
		s += k;
		s += *s == '/';
	}
	return 1;
}

struct epattrs {
	int64_t main, embed;
	const char *part;
	const struct rt_attr *cache;
};

static int read_attrs(const struct rt_node *n, struct epattrs *ea, struct strata_error *err)
{
	const struct rt_attr *src = rt_attr_find(n, "source");
	if (!src || strcmp(src->s, SOURCE) != 0)
		return base_err(err, STRATA_INVALID_GRAPH,
		                "EPContext node %s: its source is %s%s%s, and Strata runs only the "
		                "contexts it compiled (source \"" SOURCE "\")",
		                node_label(n), src ? "\"" : "", src ? src->s : "not given",
		                src ? "\"" : "");
	ea->main = rt_attr_int(n, "main_context", 1);
	ea->embed = rt_attr_int(n, "embed_mode", 1);
	ea->part = rt_attr_string(n, "partition_name", "");
	ea->cache = rt_attr_find(n, "ep_cache_context");
	if ((ea->main != 0 && ea->main != 1) || (ea->embed != 0 && ea->embed != 1))
		return base_err(err, STRATA_INVALID_GRAPH,
		                "EPContext node %s: main_context and embed_mode must be 0 or 1",
		                node_label(n));
	return 0;
}

/* The binary of primary node n (main_context=1): embedded or a file. */
static int primary_hold(struct rt_model *m, const struct rt_node *n, const struct epattrs *ea,
                        struct rt_cxhold **out, struct strata_error *err)
{
	if (!ea->cache || ea->cache->slen == 0)
		return base_err(err, STRATA_INVALID_GRAPH, "EPContext node %s has no ep_cache_context",
		                node_label(n));
	if (ea->embed)
		return rt_cxhold_embedded(m, ea->cache, out, err);
	const char *rel = ea->cache->s;
	if (!inside(rel))
		return base_err(err, STRATA_INVALID_GRAPH,
		                "EPContext node %s: ep_cache_context \"%s\" is not a path inside the "
		                "model's folder",
		                node_label(n), rel);
	if (!m->ctx_dir)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "EPContext node %s refers to the file \"%s\", and the model was loaded "
		                "from a buffer: set ep.context_file_path to the model's path",
		                node_label(n), rel);
	char *path = base_path_join(m->ctx_dir, rel);
	if (!path)
		return base_nomem(err, "a compiled context");
	int rc = rt_cxhold_open(m, path, ea->part, out, err);
	base_strfree(path);
	return rc;
}

/* The compiled graph of EPContext node n of g: its binary and section. */
int rt_epctx_find(struct rt_model *m, const struct rt_graph *g, const struct rt_node *n,
                  const struct rt_cxfile **cf, int *section, struct strata_error *err)
{
	struct epattrs ea;
	int rc = read_attrs(n, &ea, err);
	if (rc != 0)
		return rc;
	struct rt_cxhold *h;
	if (ea.main == 1) {
		if ((rc = primary_hold(m, n, &ea, &h, err)) != 0)
			return rc;
		*cf = rt_cxhold_file(h);
		if (!*ea.part && (*cf)->nsections != 1)
			return base_err(err, STRATA_INVALID_GRAPH,
			                "EPContext node %s names no partition_name, and its context holds "
			                "%u graphs",
			                node_label(n), (*cf)->nsections);
		*section = *ea.part ? rt_cx_find(*cf, ea.part) : 0;
		if (*section < 0)
			return base_err(err, STRATA_INVALID_GRAPH,
			                "EPContext node %s: its context holds no graph \"%s\"",
			                node_label(n), ea.part);
		return 0;
	}
	/* main_context=0: the graph lives in the binary of a primary node. */
	if (!*ea.part)
		return base_err(err, STRATA_INVALID_GRAPH,
		                "EPContext node %s has main_context=0 and no partition_name",
		                node_label(n));
	for (int i = 0; i < g->nnodes; i++) {
		const struct rt_node *p = &g->nodes[i];
		struct epattrs pa;
		struct strata_error ignored;
		if (p == n || !is_epcontext(p) || read_attrs(p, &pa, &ignored) != 0 || pa.main != 1)
			continue;
		if ((rc = primary_hold(m, p, &pa, &h, err)) != 0)
			return rc;
		*cf = rt_cxhold_file(h);
		if ((*section = rt_cx_find(*cf, ea.part)) >= 0)
			return 0;
	}
	return base_err(err, STRATA_INVALID_GRAPH,
	                "EPContext node %s (main_context=0) uses graph \"%s\", which no primary "
	                "EPContext node of the model holds",
	                node_label(n), ea.part);
}

/* ---- the whole graph as one context --------------------------------------------------------- */

int rt_epctx_adopt(struct rt_model *m, const char *ctx_dir, int *done, struct strata_error *err)
{
	*done = 0;
	struct rt_graph *g = &m->g;
	if (!rt_epctx_present(g))
		return 0;
	if (ctx_dir && !(m->ctx_dir = base_strdup(ctx_dir)))
		return base_nomem(err, "a compiled context");
	if (g->nnodes != 1)
		return 0;
	const struct rt_node *n = &g->nodes[0];
	if (n->nin != g->ninputs || n->nout != g->noutputs)
		return 0;
	for (int k = 0; k < n->nin; k++)
		if (n->in[k] != g->inputs[k])
			return 0;
	for (int k = 0; k < n->nout; k++)
		if (n->out[k] != g->outputs[k])
			return 0;
	const struct rt_cxfile *cf;
	int s;
	int rc = rt_epctx_find(m, g, n, &cf, &s, err);
	if (rc != 0)
		return rc;
	/* Decoded in place: subgraphs point at their parent, m->g.  The old
	 * graph's memory stays in m->mem (the embedded binary with it). */
	struct rt_graph old = *g;
	memset(g, 0, sizeof *g);
	if ((rc = rt_cx_graph(m, cf, s, g, err)) != 0)
		return rc;
	const struct rt_graph cg = *g;
	g = &old;
	n = &old.nodes[0];
	/* The compiled graph answers to the names the model declares. */
	if (cg.ninputs != g->ninputs || cg.noutputs != g->noutputs)
		return base_err(err, STRATA_INVALID_GRAPH,
		                "EPContext node %s: its graph has %d inputs and %d outputs, the node "
		                "%d and %d",
		                node_label(n), cg.ninputs, cg.noutputs, g->ninputs, g->noutputs);
	for (int k = 0; k < g->ninputs; k++)
		if (strcmp(cg.input_info[k].name, g->input_info[k].name) != 0)
			return base_err(err, STRATA_INVALID_GRAPH,
			                "EPContext node %s: input %d is \"%s\" in the model and \"%s\" in "
			                "the compiled graph",
			                node_label(n), k, g->input_info[k].name, cg.input_info[k].name);
	for (int k = 0; k < g->noutputs; k++)
		if (strcmp(cg.output_info[k].name, g->output_info[k].name) != 0)
			return base_err(err, STRATA_INVALID_GRAPH,
			                "EPContext node %s: output %d is \"%s\" in the model and \"%s\" in "
			                "the compiled graph",
			                node_label(n), k, g->output_info[k].name, cg.output_info[k].name);
	*done = 1;
	return 0;
}
