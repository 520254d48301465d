/*
 * epctx.c: compiled contexts as ONNX models (the EPContext design, with
 * Strata's runtime as the execution provider).
 *
 * Generation (ep.context_enable=1): once a model has loaded (folded, fused,
 * weights packed), its graph goes into a context binary (ctxfile.c) and a
 * small ONNX model, "<name>_ctx.onnx", stands for it: the source's inputs
 * and outputs around one com.microsoft EPContext node with source="Strata"
 * whose ep_cache_context holds the binary (embed_mode=1) or its path
 * relative to the model (embed_mode=0, "<name>_strata.bin" beside it).
 * Sessions with ep.share_ep_contexts=1 compile into one workspace; the one
 * with ep.stop_share_ep_contexts=1 writes the single binary, named after the
 * first model, and empties the workspace.
 *
 * Inference: a model whose graph is one Strata EPContext node standing for
 * the whole graph takes the compiled graph as its own (rt_epctx_adopt):
 * nothing is optimized, inferred or packed again, the weights stay in the
 * mapped binary.  Any other graph with EPContext nodes (several contexts,
 * main_context=0 nodes, ordinary nodes beside them) loads as usual, and
 * each EPContext node runs its compiled graph as a subgraph.  With
 * ep.share_ep_contexts=1, a binary opened for one session offers its other
 * graphs to the next sessions, which take them without reading the file.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "onnx.pb-c.h"
#include "runtime_int.h"

#define SOURCE "Strata"

struct rt_cxhold {
	int refs;                /* under lock */
	struct base_map map;     /* a mapped binary file (map.data NULL otherwise) */
	struct rt_cxfile cf;
	char *path;              /* absolute path of a binary file, NULL when embedded */
	struct stat st;          /* the file as it was opened (offers check it) */
	const void *mem;         /* embedded: the bytes, owned by the model's memory */
	unsigned char *offered;  /* per section: still offered by the shared workspace */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* Load side: binaries whose graphs are not all taken yet. */
static struct {
	struct rt_cxhold **h;
	int n, cap;
} offers;

/* Generation side: the workspace of the sessions sharing contexts. */
static struct {
	struct rt_cxwriter *w;
	char *bin;               /* absolute path of the binary it will write */
} workspace;

static void hold_free(struct rt_cxhold *h)
{
	if (h->map.data)
		base_unmap(&h->map);
	if (h->path)
		base_strfree(h->path);
	if (h->offered)
		base_free(h->offered, h->cf.nsections);
	base_free(h, sizeof *h);
}

void rt_cxhold_release(struct rt_cxhold *h)
{
	if (!h)
		return;
	pthread_mutex_lock(&lock);
	int last = --h->refs == 0;
	pthread_mutex_unlock(&lock);
	if (last)
		hold_free(h);
}

static int nomem(struct strata_error *err)
{
	return base_err(err, STRATA_NOMEM, "out of memory for a compiled context");
}

/* Keep h with m (one reference, already counted). */
static int model_keep(struct rt_model *m, struct rt_cxhold *h, struct strata_error *err)
{
	if (m->ncx == m->capcx) {
		int cap = m->capcx ? 2 * m->capcx : 4;
		struct rt_cxhold **n =
			base_realloc(m->cx, (size_t)m->capcx * sizeof *n, (size_t)cap * sizeof *n);
		if (!n)
			return nomem(err);
		m->cx = n;
		m->capcx = cap;
	}
	m->cx[m->ncx++] = h;
	return 0;
}

/* ---- finding a node's compiled graph ------------------------------------------------------ */

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

/* Map the binary at path (absolute) into a new holder with one reference. */
static int open_file(struct rt_model *m, const char *path, struct rt_cxhold **out,
                     struct strata_error *err)
{
	struct rt_cxhold *h = base_calloc(1, sizeof *h);
	if (!h)
		return nomem(err);
	h->refs = 1;
	h->path = base_strdup(path);
	int rc = h->path ? base_map_file(path, &h->map, err) : nomem(err);
	if (rc == 0 && stat(path, &h->st) != 0)
		memset(&h->st, 0, sizeof h->st);
	if (rc == 0 && ((uintptr_t)h->map.data & 63))
		rc = base_err(err, STRATA_INVALID_GRAPH, "%s: mapped at an unaligned address", path);
	if (rc == 0 && (rc = rt_cx_open(h->map.data, h->map.size, m->opts.ctx_verify, &h->cf, err)))
		base_err_prefix(err, rc, "%s", path);
	if (rc != 0) {
		hold_free(h);
		return rc;
	}
	*out = h;
	return 0;
}

/* The holder of a file binary for m, and section s of it called part ("":
 * its only one).  With sharing on, a graph another session's open offered
 * is taken without reading the file; a new open offers its other graphs. */
static int hold_file(struct rt_model *m, const char *path, const char *part,
                     struct rt_cxhold **out, struct strata_error *err)
{
	/* The key names the file by its folder's real path: the file itself may
	 * be gone while a graph of it is still offered. */
	const char *slash = strrchr(path, '/');
	char *d = slash ? base_strndup(path, (size_t)(slash - path + (slash == path))) : base_strdup(".");
	char *abs = d ? realpath(d, NULL) : NULL;
	int e = errno;
	if (d)
		base_strfree(d);
	if (!abs)
		return d ? base_err(err, e, "%s: cannot open the context binary: %s", path, strerror(e))
		         : nomem(err);
	char key[2 * PATH_MAX];
	snprintf(key, sizeof key, "%s/%s", strcmp(abs, "/") ? abs : "", slash ? slash + 1 : path);
	free(abs);
	for (int i = 0; i < m->ncx; i++)
		if (m->cx[i]->path && strcmp(m->cx[i]->path, key) == 0) {
			*out = m->cx[i];
			return 0;
		}
	struct rt_cxhold *h = NULL;
	if (m->opts.share) {
		/* An offer stands for the file as it was opened: one written anew at
		 * the same path since then is read again (a file gone is fine, the
		 * graph is in memory). */
		struct stat now;
		int have = stat(key, &now) == 0;
		pthread_mutex_lock(&lock);
		for (int i = 0; i < offers.n && !h; i++) {
			struct rt_cxhold *o = offers.h[i];
			if (have && strcmp(o->path, key) == 0 &&
			    (now.st_ino != o->st.st_ino || now.st_dev != o->st.st_dev ||
			     now.st_size != o->st.st_size || now.st_mtim.tv_sec != o->st.st_mtim.tv_sec ||
			     now.st_mtim.tv_nsec != o->st.st_mtim.tv_nsec)) {
				offers.h[i--] = offers.h[--offers.n];
				if (--o->refs == 0)
					hold_free(o); /* no model holds it: safe outside the lock too */
				continue;
			}
			int s = strcmp(o->path, key) == 0 ? (*part ? rt_cx_find(&o->cf, part) : 0) : -1;
			if (s < 0 || !o->offered[s])
				continue;
			o->offered[s] = 0;
			o->refs++;
			h = o;
			int left = 0;
			for (uint32_t k = 0; k < o->cf.nsections; k++)
				left += o->offered[k];
			if (!left) {
				offers.h[i] = offers.h[--offers.n];
				o->refs--; /* the workspace's reference (o stays: h holds one) */
			}
		}
		pthread_mutex_unlock(&lock);
	}
	int rc = 0;
	if (!h) {
		rc = open_file(m, key, &h, err);
		if (rc != 0)
			return rc;
		if (m->opts.share && h->cf.nsections > 1 &&
		    (h->offered = base_calloc(h->cf.nsections, 1)) != NULL) {
			int s = *part ? rt_cx_find(&h->cf, part) : 0;
			for (uint32_t k = 0; k < h->cf.nsections; k++)
				h->offered[k] = (int)k != s;
			pthread_mutex_lock(&lock);
			if (offers.n == offers.cap) {
				int cap = offers.cap ? 2 * offers.cap : 4;
				struct rt_cxhold **n = base_realloc(offers.h, (size_t)offers.cap * sizeof *n,
				                                    (size_t)cap * sizeof *n);
				if (n) {
					offers.h = n;
					offers.cap = cap;
				}
			}
			if (offers.n < offers.cap) {
				offers.h[offers.n++] = h;
				h->refs++;
			}
			pthread_mutex_unlock(&lock);
		}
	}
	if ((rc = model_keep(m, h, err)) != 0) {
		rt_cxhold_release(h);
		return rc;
	}
	*out = h;
	return 0;
}

/* The holder of an embedded binary (the attribute's bytes, in m's memory). */
static int hold_embedded(struct rt_model *m, const struct rt_attr *a, struct rt_cxhold **out,
                         struct strata_error *err)
{
	for (int i = 0; i < m->ncx; i++)
		if (m->cx[i]->mem == a->s) {
			*out = m->cx[i];
			return 0;
		}
	if ((uintptr_t)a->s & 63)
		return base_err(err, STRATA_INVALID_GRAPH, "embedded context at an unaligned address");
	struct rt_cxhold *h = base_calloc(1, sizeof *h);
	if (!h)
		return nomem(err);
	h->refs = 1;
	h->mem = a->s;
	int rc = rt_cx_open(a->s, a->slen, m->opts.ctx_verify, &h->cf, err);
	if (rc == 0)
		rc = model_keep(m, h, err);
	if (rc != 0) {
		hold_free(h);
		return rc;
	}
	*out = h;
	return 0;
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
		return hold_embedded(m, ea->cache, out, err);
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
		return nomem(err);
	int rc = hold_file(m, path, ea->part, out, err);
	base_strfree(path);
	return rc;
}

/* The compiled graph of EPContext node n of g: its binary and section. */
static int find_graph(struct rt_model *m, const struct rt_graph *g, const struct rt_node *n,
                      struct rt_cxhold **hold, int *section, struct strata_error *err)
{
	struct epattrs ea;
	int rc = read_attrs(n, &ea, err);
	if (rc != 0)
		return rc;
	if (ea.main == 1) {
		if ((rc = primary_hold(m, n, &ea, hold, err)) != 0)
			return rc;
		if (!*ea.part && (*hold)->cf.nsections != 1)
			return base_err(err, STRATA_INVALID_GRAPH,
			                "EPContext node %s names no partition_name, and its context holds "
			                "%u graphs",
			                node_label(n), (*hold)->cf.nsections);
		*section = *ea.part ? rt_cx_find(&(*hold)->cf, ea.part) : 0;
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
		if ((rc = primary_hold(m, p, &pa, hold, err)) != 0)
			return rc;
		if ((*section = rt_cx_find(&(*hold)->cf, ea.part)) >= 0)
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
		return nomem(err);
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
	struct rt_cxhold *h;
	int s;
	int rc = find_graph(m, g, n, &h, &s, err);
	if (rc != 0)
		return rc;
	/* Decoded in place: subgraphs point at their parent, m->g.  The old
	 * graph's memory stays in m->mem (the embedded binary with it). */
	struct rt_graph old = *g;
	memset(g, 0, sizeof *g);
	if ((rc = rt_cx_graph(m, &h->cf, s, g, err)) != 0)
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

/* ---- EPContext nodes among other nodes ------------------------------------------------------ */

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
	struct rt_cxhold *h;
	int s;
	int rc = find_graph(m, g, n, &h, &s, err);
	if (rc != 0)
		return rc;
	struct rt_graph *sg = rt_blocks_alloc(&m->mem, sizeof *sg);
	if (!sg)
		return nomem(err);
	sg->parent = g;
	if ((rc = rt_cx_graph(m, &h->cf, s, sg, err)) != 0)
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

/* ---- generation ----------------------------------------------------------------------------- */

/* The last path component of p. */
static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

/* A new copy of p without its last component ("." when there is none). */
static char *dir_of(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? base_strndup(p, (size_t)(s - p + (s == p))) : base_strdup(".");
}

/* A new copy of the file name of p without suffix (if it ends so). */
static char *stem_of(const char *p, const char *suffix)
{
	const char *b = base_name(p);
	size_t n = strlen(b), k = strlen(suffix);
	if (n > k && strcmp(b + n - k, suffix) == 0)
		n -= k;
	return base_strndup(b, n);
}

static int write_file(const char *path, const void *p, size_t n, struct strata_error *err)
{
	char tmp[PATH_MAX];
	if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
		return base_err(err, ENAMETOOLONG, "%s: path too long", path);
	FILE *f = fopen(tmp, "wb");
	if (!f)
		return base_err(err, errno, "%s: cannot create: %s", tmp, strerror(errno));
	int bad = n && fwrite(p, 1, n, f) != n;
	int e = errno;
	if (fclose(f) != 0 && !bad) {
		bad = 1;
		e = errno;
	}
	if (!bad && rename(tmp, path) != 0) {
		bad = 1;
		e = errno;
	}
	if (bad) {
		remove(tmp);
		return base_err(err, e ? e : EIO, "%s: cannot write: %s", path, strerror(e ? e : EIO));
	}
	return 0;
}

/* Protobuf messages of the context model, allocated from one set of blocks. */
struct pbw {
	struct rt_blocks mem;
	int oom;
};

static void *pbw_new(struct pbw *w, size_t n)
{
	void *p = rt_blocks_alloc(&w->mem, n);
	w->oom |= !p;
	return p;
}

static Onnx__TypeProto *tensor_type(struct pbw *w, int dtype, const struct rt_value_info *vi)
{
	Onnx__TypeProto *tp = pbw_new(w, sizeof *tp);
	Onnx__TypeProto__Tensor *tt = pbw_new(w, sizeof *tt);
	if (!tp || !tt)
		return NULL;
	onnx__type_proto__init(tp);
	onnx__type_proto__tensor__init(tt);
	tt->has_elem_type = 1;
	tt->elem_type = dtype;
	tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
	tp->tensor_type = tt;
	if (!vi || vi->rank < 0)
		return tp;
	Onnx__TensorShapeProto *sh = pbw_new(w, sizeof *sh);
	Onnx__TensorShapeProto__Dimension **dims = pbw_new(w, (size_t)(vi->rank + 1) * sizeof *dims);
	if (!sh || !dims)
		return NULL;
	onnx__tensor_shape_proto__init(sh);
	for (int d = 0; d < vi->rank; d++) {
		Onnx__TensorShapeProto__Dimension *dm = pbw_new(w, sizeof *dm);
		if (!dm)
			return NULL;
		onnx__tensor_shape_proto__dimension__init(dm);
		if (vi->dims[d] >= 0) {
			dm->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
			dm->dim_value = vi->dims[d];
		} else if (vi->dim_names[d] && *vi->dim_names[d]) {
			dm->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
			dm->dim_param = (char *)vi->dim_names[d];
		}
		dims[d] = dm;
	}
	sh->n_dim = (size_t)vi->rank;
	sh->dim = dims;
	tt->shape = sh;
	return tp;
}

/* A sequence (optional = 0) or an optional (1) of tp; NULL when tp is. */
static Onnx__TypeProto *wrap_type(struct pbw *w, Onnx__TypeProto *tp, int optional)
{
	Onnx__TypeProto *o = pbw_new(w, sizeof *o);
	if (!o || !tp)
		return NULL;
	onnx__type_proto__init(o);
	if (optional) {
		Onnx__TypeProto__Optional *ot = pbw_new(w, sizeof *ot);
		if (!ot)
			return NULL;
		onnx__type_proto__optional__init(ot);
		ot->elem_type = tp;
		o->value_case = ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE;
		o->optional_type = ot;
	} else {
		Onnx__TypeProto__Sequence *st = pbw_new(w, sizeof *st);
		if (!st)
			return NULL;
		onnx__type_proto__sequence__init(st);
		st->elem_type = tp;
		o->value_case = ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE;
		o->sequence_type = st;
	}
	return o;
}

static Onnx__ValueInfoProto *value_info(struct pbw *w, const struct rt_value_info *vi)
{
	Onnx__ValueInfoProto *v = pbw_new(w, sizeof *v);
	if (!v)
		return NULL;
	onnx__value_info_proto__init(v);
	v->name = (char *)vi->name;
	int seq = vi->kind == RT_KIND_SEQUENCE || vi->kind == RT_KIND_OPTIONAL_SEQUENCE;
	Onnx__TypeProto *tp = tensor_type(w, vi->dtype, seq ? NULL : vi);
	if (seq)
		tp = wrap_type(w, tp, 0);
	if (vi->kind == RT_KIND_OPTIONAL_TENSOR || vi->kind == RT_KIND_OPTIONAL_SEQUENCE)
		tp = wrap_type(w, tp, 1);
	v->type = tp;
	return tp ? v : NULL;
}

static Onnx__AttributeProto *attr_new(struct pbw *w, const char *name, int type)
{
	Onnx__AttributeProto *a = pbw_new(w, sizeof *a);
	if (!a)
		return NULL;
	onnx__attribute_proto__init(a);
	a->name = (char *)name;
	a->has_type = 1;
	a->type = type;
	return a;
}

static Onnx__AttributeProto *attr_int(struct pbw *w, const char *name, int64_t i)
{
	Onnx__AttributeProto *a = attr_new(w, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
	if (a) {
		a->has_i = 1;
		a->i = i;
	}
	return a;
}

static Onnx__AttributeProto *attr_bytes(struct pbw *w, const char *name, const void *p, size_t n)
{
	Onnx__AttributeProto *a = attr_new(w, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
	if (a) {
		a->has_s = 1;
		a->s.data = (uint8_t *)p;
		a->s.len = n;
	}
	return a;
}

static Onnx__AttributeProto *attr_str(struct pbw *w, const char *name, const char *s)
{
	return attr_bytes(w, name, s, strlen(s));
}

/* What the EPContext node of one compiled model says. */
struct ctxnode {
	const char *part;        /* partition and node name */
	const void *cache;       /* the binary (embed) or its relative path */
	size_t ncache;
	int embed;
	const char *source_file; /* the source model's file name, "" from a buffer */
	size_t weight_bytes;     /* max_size: bytes of the constants and packed weights
	                          * the compiled graph maps */
};

static int write_ctx_model(const struct rt_model *m, const struct ctxnode *cn, const char *path,
                           struct strata_error *err)
{
	struct pbw w = { { 0 }, 0 };
	const struct rt_graph *g = &m->g;
	char notes[256];
	snprintf(notes, sizeof notes,
	         "Strata compiled graph: %d nodes, weights packed for %s kernels; run it with Strata "
	         "%s",
	         g->nnodes, runtime_isa(), STRATA_VERSION);
	char arch[32];
	snprintf(arch, sizeof arch, "x86_64-%s", runtime_isa());

	Onnx__AttributeProto *attrs[10] = {
		attr_int(&w, "main_context", 1),
		attr_bytes(&w, "ep_cache_context", cn->cache, cn->ncache),
		attr_int(&w, "embed_mode", cn->embed),
		attr_str(&w, "ep_sdk_version", STRATA_VERSION),
		attr_str(&w, "onnx_model_filename", cn->source_file),
		attr_str(&w, "hardware_architecture", arch),
		attr_str(&w, "partition_name", cn->part),
		attr_str(&w, "source", SOURCE),
		attr_str(&w, "notes", notes),
		attr_int(&w, "max_size", (int64_t)cn->weight_bytes),
	};
	Onnx__NodeProto node;
	onnx__node_proto__init(&node);
	node.name = (char *)cn->part;
	node.op_type = "EPContext";
	node.domain = "com.microsoft";
	node.n_attribute = 10;
	node.attribute = attrs;
	node.n_input = (size_t)g->ninputs;
	node.input = pbw_new(&w, (size_t)(g->ninputs + 1) * sizeof(char *));
	node.n_output = (size_t)g->noutputs;
	node.output = pbw_new(&w, (size_t)(g->noutputs + 1) * sizeof(char *));
	Onnx__ValueInfoProto **ins = pbw_new(&w, (size_t)(g->ninputs + 1) * sizeof *ins);
	Onnx__ValueInfoProto **outs = pbw_new(&w, (size_t)(g->noutputs + 1) * sizeof *outs);
	for (int k = 0; !w.oom && k < g->ninputs; k++) {
		node.input[k] = (char *)g->input_info[k].name;
		w.oom |= !(ins[k] = value_info(&w, &g->input_info[k]));
	}
	for (int k = 0; !w.oom && k < g->noutputs; k++) {
		node.output[k] = (char *)g->output_info[k].name;
		w.oom |= !(outs[k] = value_info(&w, &g->output_info[k]));
	}
	Onnx__NodeProto *nodes[1] = { &node };
	Onnx__GraphProto graph;
	onnx__graph_proto__init(&graph);
	graph.name = (char *)cn->part;
	graph.n_node = 1;
	graph.node = nodes;
	graph.n_input = (size_t)g->ninputs;
	graph.input = ins;
	graph.n_output = (size_t)g->noutputs;
	graph.output = outs;

	/* the source's opsets, and com.microsoft for the node */
	int nops = m->nopsets + 2;
	Onnx__OperatorSetIdProto *ops = pbw_new(&w, (size_t)nops * sizeof *ops);
	Onnx__OperatorSetIdProto **opp = pbw_new(&w, (size_t)nops * sizeof *opp);
	Onnx__ModelProto mp;
	onnx__model_proto__init(&mp);
	int rc = 0;
	if (!w.oom) {
		int k = 0, ms = 0;
		onnx__operator_set_id_proto__init(&ops[k]);
		ops[k].domain = "";
		ops[k].has_version = 1;
		ops[k].version = m->opset > 0 ? m->opset : 1;
		k++;
		for (int i = 0; i < m->nopsets; i++) {
			onnx__operator_set_id_proto__init(&ops[k]);
			ops[k].domain = m->opset_domains[i];
			ops[k].has_version = 1;
			ops[k].version = m->opset_versions[i];
			ms |= strcmp(m->opset_domains[i], "com.microsoft") == 0;
			k++;
		}
		if (!ms) {
			onnx__operator_set_id_proto__init(&ops[k]);
			ops[k].domain = "com.microsoft";
			ops[k].has_version = 1;
			ops[k].version = 1;
			k++;
		}
		for (int i = 0; i < k; i++)
			opp[i] = &ops[i];
		mp.has_ir_version = 1;
		mp.ir_version = m->ir_version >= 3 ? m->ir_version : 8;
		mp.n_opset_import = (size_t)k;
		mp.opset_import = opp;
		mp.producer_name = "strata";
		mp.producer_version = STRATA_VERSION;
		mp.graph = &graph;
		size_t n = onnx__model_proto__get_packed_size(&mp);
		uint8_t *buf = base_alloc(n ? n : 1);
		if (!buf) {
			rc = nomem(err);
		} else {
			onnx__model_proto__pack(&mp, buf);
			rc = write_file(path, buf, n, err);
			base_free(buf, n ? n : 1);
		}
	} else {
		rc = nomem(err);
	}
	rt_blocks_free(&w.mem);
	return rc;
}

/* rel: bin relative to the folder dir (both absolute), if it lies inside. */
static int relative_to(const char *dir, const char *bin, char *rel, size_t cap)
{
	size_t k = strlen(dir);
	if (strncmp(bin, dir, k) != 0 || (bin[k] != '/' && !(k == 1 && dir[0] == '/')))
		return -1;
	const char *r = bin + k + (bin[k] == '/');
	return snprintf(rel, cap, "%s", r) < (int)cap && *r ? 0 : -1;
}

int rt_epctx_generate(struct rt_model *m, const char *src_path, struct strata_error *err)
{
	const struct rt_options *o = &m->opts;
	char ctx[PATH_MAX];
	if (*o->ctx_file_path) {
		snprintf(ctx, sizeof ctx, "%s", o->ctx_file_path);
	} else if (src_path) {
		size_t n = strlen(src_path);
		int onnx = n > 5 && strcmp(src_path + n - 5, ".onnx") == 0;
		if (snprintf(ctx, sizeof ctx, "%.*s_ctx.onnx", (int)(onnx ? n - 5 : n), src_path) >=
		    (int)sizeof ctx)
			return base_err(err, ENAMETOOLONG, "%s: path too long", src_path);
	} else {
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "ep.context_enable=1 on a model loaded from a buffer needs "
		                "ep.context_file_path (where to write the context model)");
	}
	if (o->share && o->ctx_embed)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "ep.share_ep_contexts=1 writes one binary file for several models: it "
		                "needs ep.context_embed_mode=0");
	if (m->compiled)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "the model is a compiled context already: compile its source model");
	char *stem = src_path ? stem_of(src_path, ".onnx") : stem_of(ctx, "_ctx.onnx");
	char *dir = dir_of(ctx);
	char *absdir = dir ? realpath(dir, NULL) : NULL;
	int rc = 0;
	char part[2 * RT_OPT_STR], rel[PATH_MAX], bin[2 * PATH_MAX + 32];
	if (!stem || !dir) {
		rc = nomem(err);
		goto out;
	}
	if (!absdir) {
		rc = base_err(err, errno, "%s: %s", dir, strerror(errno));
		goto out;
	}
	if (src_path) {
		/* the context model must not overwrite its source */
		char *a = realpath(src_path, NULL), *b = realpath(ctx, NULL);
		int same = a && b && strcmp(a, b) == 0;
		free(a);
		free(b);
		if (same) {
			rc = base_err(err, STRATA_INVALID_ARGUMENT,
			              "ep.context_file_path %s is the source model itself", ctx);
			goto out;
		}
	}
	snprintf(part, sizeof part, "%s%s", o->ctx_prefix, stem);
	struct ctxnode cn = { part, NULL, 0, o->ctx_embed, src_path ? base_name(src_path) : "", 0 };

	if (o->share) {
		pthread_mutex_lock(&lock);
		if (!workspace.w) {
			snprintf(bin, sizeof bin, "%s/%s_strata.bin", absdir, stem);
			workspace.bin = base_strdup(bin);
			if (!workspace.bin || rt_cxw_new(&workspace.w, err) != 0) {
				if (workspace.bin)
					base_strfree(workspace.bin);
				workspace.bin = NULL;
				pthread_mutex_unlock(&lock);
				rc = nomem(err);
				goto out;
			}
		}
		size_t before = rt_cxw_ref_bytes(workspace.w);
		rc = rt_cxw_add(workspace.w, m, part, err);
		cn.weight_bytes = rt_cxw_ref_bytes(workspace.w) - before;
		if (rc == 0 && relative_to(absdir, workspace.bin, rel, sizeof rel) != 0)
			rc = base_err(err, STRATA_INVALID_ARGUMENT,
			              "the shared context binary %s is not inside %s, the folder of %s: "
			              "write the sharing models' contexts into one folder",
			              workspace.bin, absdir, ctx);
		if (rc == 0) {
			cn.cache = rel;
			cn.ncache = strlen(rel);
			rc = write_ctx_model(m, &cn, ctx, err);
		}
		if (o->stop_share || rc != 0) {
			/* the last session writes the binary; a failure abandons the group */
			if (rc == 0)
				rc = rt_cxw_write(workspace.w, workspace.bin, err);
			rt_cxw_free(workspace.w);
			base_strfree(workspace.bin);
			workspace.w = NULL;
			workspace.bin = NULL;
		}
		pthread_mutex_unlock(&lock);
	} else {
		struct rt_cxwriter *w;
		if ((rc = rt_cxw_new(&w, err)) != 0)
			goto out;
		rc = rt_cxw_add(w, m, part, err);
		cn.weight_bytes = rt_cxw_ref_bytes(w);
		if (rc == 0 && o->ctx_embed) {
			unsigned char *bytes;
			size_t n, cap;
			if ((rc = rt_cxw_bytes(w, &bytes, &n, &cap, err)) == 0) {
				cn.cache = bytes;
				cn.ncache = n;
				rc = write_ctx_model(m, &cn, ctx, err);
				base_free(bytes, cap);
			}
		} else if (rc == 0) {
			snprintf(rel, sizeof rel, "%s_strata.bin", stem);
			snprintf(bin, sizeof bin, "%s/%s", absdir, rel);
			cn.cache = rel;
			cn.ncache = strlen(rel);
			rc = rt_cxw_write(w, bin, err);
			if (rc == 0 && (rc = write_ctx_model(m, &cn, ctx, err)) != 0)
				remove(bin); /* nothing refers to it */
		}
		rt_cxw_free(w);
	}
	if (rc == 0 && !(m->ctx_written = base_strdup(ctx)))
		rc = nomem(err);
out:
	if (stem)
		base_strfree(stem);
	if (dir)
		base_strfree(dir);
	free(absdir);
	return rc;
}

void rt_epctx_abandon(const struct rt_options *o)
{
	if (!o || !o->ctx_enable || !o->share)
		return;
	pthread_mutex_lock(&lock);
	rt_cxw_free(workspace.w);
	if (workspace.bin)
		base_strfree(workspace.bin);
	workspace.w = NULL;
	workspace.bin = NULL;
	pthread_mutex_unlock(&lock);
}
