/*
 * ctxfile.h: compiled contexts.  ctxfile.c reads and writes the binary
 * format; ctxhold.c holds opened binaries for the models that map them;
 * epctx.c finds a model's compiled graphs through its EPContext nodes;
 * ctxgen.c compiles a loaded model into a context and ctxmodel.c writes
 * the ONNX model that stands for it.
 */
#ifndef RUNTIME_CTXFILE_H
#define RUNTIME_CTXFILE_H

#include "runtime_int.h"

/* The source attribute of the EPContext nodes Strata writes and runs. */
#define RT_CTX_SOURCE "Strata"

/* ---- compiled contexts (ctxfile.c: the binary; epctx.c: the EPContext model) ------
 * A context binary in memory, checked by rt_cx_open: its header, its meta
 * region's size and checksum, its tables' bounds. */
struct rt_cxfile {
	const unsigned char *base, *meta, *data;
	size_t size, meta_bytes, data_bytes;
	size_t blobtab;          /* offset of the blob table in meta */
	uint32_t nsections, nblobs;
	int isa;
};
/* Open the n bytes at data (64-byte aligned) as a context binary; verify:
 * also check every blob's hash.  Returns 0 or STRATA_INVALID_GRAPH saying
 * what is wrong: not a context, another format version, another Strata
 * version, weights packed for an instruction set this process does not
 * run, truncated, corrupted (and where). */
int rt_cx_open(const void *data, size_t n, int verify, struct rt_cxfile *cf,
               struct strata_error *err);
/* The section (compiled graph) called name, or -1; the name of section i. */
int rt_cx_find(const struct rt_cxfile *cf, const char *name);
const char *rt_cx_section_name(const struct rt_cxfile *cf, int i);
/* Decode section s into g (zeroed by the caller; memory from m->mem; names,
 * attribute arrays, constants and packed weights point into cf, which must
 * outlive m).  Nodes come out in run order with their def unset: resolve
 * with rt_graph_resolve_compiled (top graph), or as a node's subgraph.
 * Returns 0, STRATA_INVALID_GRAPH (corrupted), STRATA_NOMEM. */
int rt_cx_graph(struct rt_model *m, const struct rt_cxfile *cf, int s, struct rt_graph *g,
                struct strata_error *err);
/* Reading meta: a bounds-checked cursor (a bad read sets bad, yields 0/""). */
struct rt_cxcur {
	const unsigned char *p;
	size_t n, i;
	int bad;
};
uint32_t rt_cx_u32(struct rt_cxcur *c);
uint64_t rt_cx_u64(struct rt_cxcur *c);
const char *rt_cx_str(struct rt_cxcur *c, size_t *len);

/* Writing: a workspace gathering compiled graphs (one section each) and
 * their blobs, identical blobs stored once. */
struct rt_cxwriter;
int rt_cxw_new(struct rt_cxwriter **out, struct strata_error *err);
void rt_cxw_free(struct rt_cxwriter *w);
/* Add m's compiled graph as section name (unique in w).  The blobs are
 * copied: m may be freed afterwards. */
int rt_cxw_add(struct rt_cxwriter *w, const struct rt_model *m, const char *name,
               struct strata_error *err);
/* Bytes of the blobs stored (each once), and of the blobs the sections
 * refer to (shared ones counted per reference). */
size_t rt_cxw_unique_bytes(const struct rt_cxwriter *w);
size_t rt_cxw_ref_bytes(const struct rt_cxwriter *w);
/* The binary, in a new buffer (base_free(*out, *cap)), or written to path
 * (through path.tmp, renamed into place). */
int rt_cxw_bytes(struct rt_cxwriter *w, unsigned char **out, size_t *n, size_t *cap,
                 struct strata_error *err);
int rt_cxw_write(struct rt_cxwriter *w, const char *path, struct strata_error *err);

/* ---- holding binaries (ctxhold.c) -------------------------------------------
 * A context binary held by models (a mapped file, or bytes the model's memory
 * owns), reference counted across models and the shared offers. */

/* The holder for m of the binary file at path (section part, "" for its only
 * one), added to m->cx: one m already holds, a graph another session offered
 * (ep.share_ep_contexts=1), or the file opened and checked now (with sharing,
 * its other graphs are then offered).  Errors: an errno, STRATA_INVALID_GRAPH
 * (rt_cx_open's), STRATA_NOMEM. */
int rt_cxhold_open(struct rt_model *m, const char *path, const char *part,
                   struct rt_cxhold **out, struct strata_error *err);
/* The holder for m of the embedded binary in attribute a (its bytes live in
 * m's memory), added to m->cx unless m holds it already. */
int rt_cxhold_embedded(struct rt_model *m, const struct rt_attr *a, struct rt_cxhold **out,
                       struct strata_error *err);
/* The opened binary of h. */
const struct rt_cxfile *rt_cxhold_file(const struct rt_cxhold *h);
/* Drop one reference; the last one unmaps the file. */
void rt_cxhold_release(struct rt_cxhold *h);

/* ---- reading contexts (epctx.c) --------------------------------------------- */

/* After build, before resolve: when m's graph is one Strata EPContext node
 * standing for the whole graph, replace the graph by the compiled one and
 * set *done.  ctx_dir: where file contexts are looked up (NULL: loaded from
 * a buffer without ep.context_file_path).  Errors: STRATA_INVALID_GRAPH,
 * STRATA_INVALID_ARGUMENT, STRATA_NOMEM, an errno. */
int rt_epctx_adopt(struct rt_model *m, const char *ctx_dir, int *done, struct strata_error *err);
/* 1 when the model's graph has a node com.microsoft EPContext. */
int rt_epctx_present(const struct rt_graph *g);
/* The compiled graph EPContext node n of g stands for: the binary *cf
 * (held by m) and its section.  Errors as rt_epctx_adopt. */
int rt_epctx_find(struct rt_model *m, const struct rt_graph *g, const struct rt_node *n,
                  const struct rt_cxfile **cf, int *section, struct strata_error *err);

/* ---- writing contexts (ctxgen.c, ctxmodel.c) -------------------------------- */

/* After a successful load with ep.context_enable=1: write the context model
 * (and binary) for m.  src_path: the source model, or NULL (buffer). */
int rt_epctx_generate(struct rt_model *m, const char *src_path, struct strata_error *err);
/* A load with options o failed: a shared generation workspace it belongs
 * to is abandoned (the next sharing load starts a new group). */
void rt_epctx_abandon(const struct rt_options *o);

/* What the EPContext node of one compiled model says. */
struct rt_ctxnode {
	const char *part;        /* partition and node name */
	const void *cache;       /* the binary (embed) or its relative path */
	size_t ncache;
	int embed;
	const char *source_file; /* the source model's file name, "" from a buffer */
	size_t weight_bytes;     /* max_size: bytes of the constants and packed weights
	                          * the compiled graph maps */
};
/* Write the ONNX model standing for m's compiled graph to path (atomically):
 * m's inputs and outputs around one EPContext node saying cn.  Returns 0,
 * STRATA_NOMEM or an errno. */
int rt_ctxmodel_write(const struct rt_model *m, const struct rt_ctxnode *cn, const char *path,
                      struct strata_error *err);

#endif
