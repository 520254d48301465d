/*
 * runtime_int.h: the core that the files of runtime/ share: the graph
 * (values, nodes, attributes, static shapes), the model and its memory, the
 * session options, and the load pipeline.  No other subsystem includes it.
 * Three headers build on it, each for one audience:
 *
 *   kernel.h    what an operator kernel sees: its inputs and outputs while
 *               running, sequences, subgraph runs, the registry, GEMM
 *   exec_int.h  the executor: run contexts, their buffers and memory plans,
 *               IO binding, constant folding
 *   ctxfile.h   compiled contexts: the binary format, holding, reading and
 *               writing them as EPContext models
 *
 * Data flow: model.c drives a load.  load.c decodes the protobuf into a
 * struct rt_graph (values and nodes); resolve.c sorts the nodes, checks
 * them and resolves each one to an operator definition by (domain, op type,
 * opset); the definition's init() looks at the input element types (known
 * for every value by then, since init runs in topological order), sets the
 * output element types and picks the kernel.  infer.c then gives every
 * value a static shape and folds the nodes whose inputs are all constants;
 * optimize.c fuses chains.  exec.c runs the kernels in order: each reads
 * its inputs as tensor views and asks for its outputs with rt_output(),
 * which draws buffers from the run context; a buffer goes back to the
 * context after its last reader.
 *
 * An operator family lives in one file under ops/ and exports one table of
 * struct rt_opdef, ended by an entry whose op is NULL; ops/registry.c lists
 * the tables.
 */
#ifndef RUNTIME_INT_H
#define RUNTIME_INT_H

#include <pthread.h>

#include "runtime.h"

struct rt_exec;            /* a run context (exec_int.h) */
struct rt_cxhold;          /* a context binary held by models (ctxfile.h) */

/* ---- node attributes ------------------------------------------------------ */
enum rt_attr_type {
	RT_ATTR_UNDEFINED = 0,
	RT_ATTR_FLOAT = 1,
	RT_ATTR_INT = 2,
	RT_ATTR_STRING = 3,
	RT_ATTR_TENSOR = 4,
	RT_ATTR_GRAPH = 5,
	RT_ATTR_FLOATS = 6,
	RT_ATTR_INTS = 7,
	RT_ATTR_STRINGS = 8,
	RT_ATTR_TENSORS = 9,
	RT_ATTR_GRAPHS = 10,
	RT_ATTR_TYPE_PROTO = 13,
}; /* AttributeProto.AttributeType numbering */

struct rt_attr {
	const char *name;
	int type;                /* enum rt_attr_type */
	float f;                 /* FLOAT */
	int64_t i;               /* INT */
	const char *s;           /* STRING (NUL-terminated; slen bytes) */
	size_t slen;
	size_t n;                /* count of FLOATS / INTS / STRINGS */
	const float *floats;
	const int64_t *ints;
	const char *const *strings;
	const struct rt_tensor *t; /* TENSOR, owned by the graph */
	struct rt_graph *graph;  /* GRAPH: the subgraph, owned by the model */
	int type_kind;           /* TYPE_PROTO: enum rt_kind, -1 when not supported */
	int type_dtype;          /* TYPE_PROTO: element type */
};

/* ---- static shapes (infer.c) ---------------------------------------------- */

/* One dimension as known at load: a size (size >= 0), a symbol named by a
 * graph input's dim_param (size < 0, sym != NULL, e.g. "batch"), or unknown
 * (size < 0, sym == NULL).  Equal symbols are equal sizes within a run: the
 * runtime binds one size per name across the inputs.  A symbol with
 * bound > 0 is min(sym, bound): what slicing a [512] table by "seq" gives
 * (exporters slice position tables so), printed "min(seq,512)". */
struct rt_dim {
	int64_t size;
	const char *sym;         /* owned by the model */
	int64_t bound;           /* with sym: 0, or the cap of min(sym, bound) */
};

/* What a dimension is: a size, a plain symbol, a capped symbol
 * min(sym, bound), either kind of symbol or size ("full"), else unknown. */
static inline int rt_dim_is_int(struct rt_dim d)
{
	return d.size >= 0;
}
static inline int rt_dim_is_sym(struct rt_dim d)
{
	return d.size < 0 && d.sym && d.bound <= 0;
}
static inline int rt_dim_is_capped(struct rt_dim d)
{
	return d.size < 0 && d.sym && d.bound > 0;
}
static inline int rt_dim_is_full(struct rt_dim d)
{
	return d.size >= 0 || d.sym;
}

/* A static shape: rank -1 when unknown.  The same struct carries the known
 * cells of a small integer tensor (struct rt_value.content), rank being then
 * the cell count. */
struct rt_shape {
	int rank;
	struct rt_dim d[RT_MAX_RANK];
};

/* Largest tensor the runtime accepts, in cells: far beyond any real model
 * but small enough that byte counts never overflow. */
#define RT_MAX_CELLS ((int64_t)1 << 40)

/* ---- values and nodes ----------------------------------------------------- */
struct rt_value {
	char *name;
	int dtype;               /* BASE_DT_*, UNDEFINED until known */
	int is_input;            /* graph input index + 1, or 0 */
	int is_output;           /* graph output index + 1, or 0 */
	struct rt_tensor *konst; /* initializer or Constant value, else NULL */
	int producer;            /* index of the node writing it, -1 for inputs/constants */
	int last_use;            /* index (in run order) of the last node reading it, -1 if none */
	int kind;                /* enum rt_kind (runtime.h) */
	int outer;               /* in a subgraph: the enclosing graph's value it reads, else -1 */
	struct rt_shape shape;   /* static shape inferred at load (infer.c); rank -1 unknown */
	struct rt_shape content; /* cells of a rank 0/1 int64 or int32 tensor of at most
	                          * RT_MAX_RANK cells as far as known at load (the
	                          * Shape -> Gather -> Concat -> Reshape chains); rank
	                          * -1 when not tracked */
	int releases;            /* constants: inits that called rt_graph_release_const */
};

struct rt_graph;
struct rt_exec;
struct rt_node;
struct rt_packed_b;
#define RT_NODE_PACKS 8          /* packed weights one node may hold */
#define RT_NODE_SUBS 2           /* subgraphs one node may run */

typedef int rt_kernel_fn(struct rt_node *n, struct rt_exec *x);

struct rt_node {
	char *name;              /* may be "" */
	char *op;
	char *domain;            /* "" for ai.onnx */
	int opset;               /* the model's opset for this domain */
	int nin, nout;
	int *in;                 /* value index per input; -1 for an omitted optional one */
	int *out;                /* value index per output; -1 for an omitted optional one */
	int nattr;
	struct rt_attr *attr;
	const struct rt_opdef *def;
	rt_kernel_fn *run;       /* set by def->init */
	void *state;             /* kernel-private, set by init, freed by def->fini */
	int nimplicit;           /* values of this graph read by the node's subgraphs */
	int *implicit;           /* (or kept alive with rt_graph_keep) */
	int folded;              /* computed at load (infer.c): its outputs are constants
	                          * of the model and exec.c skips it */
	/* Weights the init packed with rt_node_pack_b, in request order (the
	 * context writer stores them).  In a model loaded from a context, pre
	 * holds them mapped from the binary and init takes them back in order. */
	const struct rt_packed_b *packs[RT_NODE_PACKS];
	int npacks;
	const struct rt_packed_b *pre;
	int npre;
	/* A node with subgraphs (If's branches, a Loop's body, an EPContext
	 * node's compiled graph): its init checks the node, gives the
	 * subgraphs' inputs their types, names the subgraphs with
	 * rt_node_subgraph and sets finish instead of run.  The resolver then
	 * resolves the subgraphs and calls finish, which types the outputs
	 * from the subgraphs' and sets run (same returns as init).  The
	 * subgraphs' nodes are finalized with the node. */
	struct rt_graph *sub[RT_NODE_SUBS];
	int nsub;
	int (*finish)(struct rt_node *n, struct rt_graph *g, struct strata_error *err);
};

struct rt_opdef {
	const char *domain;      /* "" for ai.onnx, "com.microsoft", ... */
	const char *op;
	int since;               /* first opset version this entry serves */
	/* Check attributes and input types, set output types with
	 * rt_graph_set_dtype(), set n->run (and n->state).  Returns 0,
	 * STRATA_NOT_IMPLEMENTED (type combination or attribute value without a
	 * kernel), STRATA_INVALID_GRAPH (missing input, bad attribute). */
	int (*init)(struct rt_node *n, struct rt_graph *g, struct strata_error *err);
	void (*fini)(struct rt_node *n); /* may be NULL */
};

/* The graph: owned by struct rt_model. */
struct rt_graph {
	int nvalues, nnodes;
	struct rt_value *values;
	struct rt_node *nodes;   /* in run (topological) order after resolution */
	int ninputs, noutputs;
	int *inputs;             /* value indices of the graph inputs */
	int *outputs;
	struct rt_value_info *input_info;
	struct rt_value_info *output_info;
	struct rt_graph *parent; /* the enclosing graph of a subgraph, else NULL */
	struct rt_model *model;  /* the model the graph belongs to */
	int ninited;             /* nodes whose init ran (their fini runs at free) */
	int resolved;            /* resolved as a node's subgraph */
};

/* Element type of value v, BASE_DT_UNDEFINED when v < 0. */
int rt_graph_dtype(const struct rt_graph *g, int v);
void rt_graph_set_dtype(struct rt_graph *g, int v, int dtype);
/* The constant value of v (initializer or folded Constant), or NULL. */
const struct rt_tensor *rt_graph_const(const struct rt_graph *g, int v);
/* Init time: the calling node no longer needs the cells of constant v (it
 * keeps a packed copy).  Once every init has run and constants are folded,
 * the loader frees v's cells when every node that still runs and reads v has
 * released it and v is no graph output; the value keeps its type and shape,
 * its data becomes NULL.  Returns 0, or STRATA_INVALID_GRAPH when v is not a
 * constant of g. */
int rt_graph_release_const(struct rt_graph *g, int v);

/* Attributes of a node: the attribute called name, or NULL. */
const struct rt_attr *rt_attr_find(const struct rt_node *n, const char *name);
int64_t rt_attr_int(const struct rt_node *n, const char *name, int64_t dflt);
float rt_attr_float(const struct rt_node *n, const char *name, float dflt);
const char *rt_attr_string(const struct rt_node *n, const char *name, const char *dflt);
/* INTS attribute: *count is set (0 and NULL returned when absent). */
const int64_t *rt_attr_ints(const struct rt_node *n, const char *name, size_t *count);

/* Failure helpers for init(): fill err with "node NAME (OP): ..." and return code. */
int rt_node_err(const struct rt_node *n, struct strata_error *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* The same for an allocation that failed: "node NAME (OP): out of memory:
 * what", STRATA_NOMEM. */
int rt_node_nomem(const struct rt_node *n, struct strata_error *err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* For init(): the element type of input i into *dt.  STRATA_INVALID_GRAPH
 * when the input is missing or its type is not known. */
int rt_node_input_dtype(const struct rt_node *n, const struct rt_graph *g, int i, int *dt,
                        struct strata_error *err);

/* ---- values that are not tensors, subgraphs, graph access ---------------------
 *
 * A value's static kind (struct rt_value.kind) is one of enum rt_kind
 * (runtime.h): a tensor, a sequence of tensors, or an optional of either.
 * Tensor kernels never see the others: graph.c refuses a node whose input is
 * not a tensor unless its definition comes from ops/sequence.c or
 * ops/control.c (Identity on such values resolves to rt_op_identity_value).
 * For a sequence or optional value, rt_value.dtype is the element type.
 *
 * At run time a sequence is a struct rt_sequence (runtime.h) whose items and
 * their buffers belong to the run context and are recycled across runs.  An
 * optional holds a tensor, a sequence or nothing. */

/* Static kind of value v (RT_KIND_TENSOR when v < 0). */
int rt_graph_kind(const struct rt_graph *g, int v);
/* Set the kind and element type of v (init of sequence/optional kernels). */
void rt_graph_set_type(struct rt_graph *g, int v, int kind, int dtype);
/* Index of the value called name in g (not its parents), or -1. */
int rt_graph_find(const struct rt_graph *g, const char *name);

/* Keep value v alive until node n has run (init time; for kernels that read
 * values other than their inputs, such as Gradient). 0 or STRATA_NOMEM. */
int rt_graph_keep(struct rt_graph *g, struct rt_node *n, int v);

/* A subgraph: the body of If/Loop/Scan/SequenceMap, from a GRAPH attribute
 * (struct rt_attr.graph).  Its values that name outer-scope values have
 * rt_value.outer >= 0: they read the enclosing graph's value of that index
 * when the subgraph runs.  The enclosing node lists such outer values as
 * implicit inputs (rt_node.implicit), so they live until it has run. */

/* For init(): name sg (a GRAPH attribute of n, or a graph the init decoded
 * with sg->parent == g) as a subgraph n runs; its inputs' kinds and types
 * must be known once init returns (declared in the model, or set with
 * rt_graph_set_type on sg->inputs[k]).  The resolver resolves it after
 * init, then calls n->finish (struct rt_node).  Returns 0 or
 * STRATA_INVALID_GRAPH (more than RT_NODE_SUBS). */
int rt_node_subgraph(struct rt_node *n, struct rt_graph *sg, struct strata_error *err);

/* ---- shapes and broadcasting helpers (shape.c) ------------------------------ */

/* Numpy-style broadcast of a and b into out (rank and dims).  Returns 0 or
 * STRATA_RUNTIME when incompatible. */
int rt_broadcast_shape(const struct rt_tensor *a, const struct rt_tensor *b, int *rank,
                       int64_t *dims);
/* Normalize a possibly negative axis for a tensor of rank r; -1 if out of range. */
int rt_axis(int64_t axis, int r);
/* Read an int64 or int32 1-D tensor into dst (at most max entries); the count or -1. */
int rt_tensor_to_ints(const struct rt_tensor *t, int64_t *dst, int max);
/* Cells of dims[0..rank): -1 when a dim is negative or the count passes max
 * (each operator family bounds its outputs well below what byte counts can
 * overflow; rt_output applies the real memory limit). */
int64_t rt_cells(int rank, const int64_t *dims, int64_t max);

/* ---- CPU features (cpu.c) ----------------------------------------------------
 * The instruction set the kernels use, chosen once at first use: the best
 * the machine and OS support, unless STRATA_CPU=avx2 asks for AVX2 ("auto",
 * unset or any other value: the best available). */
enum rt_isa { RT_ISA_AUTO = 0, RT_ISA_AVX2 = 1, RT_ISA_AVX512 = 2 };
int rt_cpu_isa(void);
/* The best ISA of this machine, ignoring STRATA_CPU and rt_cpu_force. */
int rt_cpu_best(void);
/* The ISA that STRATA_CPU=env would select (env may be NULL). */
int rt_cpu_select(const char *env);
/* Test hook: use isa from now on; RT_ISA_AUTO drops the override and the
 * cached choice (STRATA_CPU is read again).  Returns 0,
 * STRATA_NOT_IMPLEMENTED (the machine lacks isa) or STRATA_INVALID_ARGUMENT.
 * Not for use while other threads run kernels. */
int rt_cpu_force(int isa);
/* 1 when the machine has AVX512-VNNI (and AVX-512: base_cpu_avx512), which
 * the int8 kernels use when rt_cpu_isa() is RT_ISA_AVX512. */
int rt_cpu_vnni(void);
/* 1 when the machine has AVX512-BF16 (and AVX-512: base_cpu_avx512). */
int rt_cpu_bf16(void);
/* 1 when session.bf16_weights packs weights as bfloat16 here: the machine
 * has AVX512-BF16 and its bfloat16 GEMM measured faster than the float one
 * (AMD's Zen 4 and later: the same vdpbf16ps rate as two float FMAs) or
 * its AMX tiles are in use (rt_cpu_amx); on Intel's cores without AMX
 * vdpbf16ps ran MiniLM 1.5x slower than float, so there the option keeps
 * the float weights and results.  rt_cpu_bf16_force(1) or (0) sets
 * the answer for tests (where the machine has AVX512-BF16), -1 drops it. */
int rt_cpu_bf16_faster(void);
void rt_cpu_bf16_force(int on);
/* 1 when the machine has AVX-VNNI (vpdpbusd on ymm in the VEX encoding). */
int rt_cpu_avxvnni(void);
/* 1 when the kernels are held to the x86-64-v3 baseline (STRATA_CPU=avx2,
 * or rt_cpu_force(RT_ISA_AVX2)): no extension beyond AVX2 and FMA is used,
 * AVX-VNNI included. */
int rt_cpu_baseline_only(void);
const char *rt_cpu_isa_name(int isa);
/* 1 when the machine has AMX (tiles, int8 and bfloat16) and Linux has
 * granted this process its tile data; asked once. */
int rt_cpu_amx_usable(void);
/* 1 when the GEMMs use AMX now: rt_cpu_amx_usable(), AVX-512 in use and
 * chosen automatically (neither STRATA_CPU=avx512 nor rt_cpu_force). */
int rt_cpu_amx(void);

/* ---- the model and its memory (model.c owns its lifecycle) ------------------ */

/* A set of blocks freed together.  Each block comes from base_alloc with a
 * 64-byte header holding its size, so the data is 64-byte aligned.  The
 * protobuf decoder allocates the same way, which lets the loader keep a
 * decoded raw_data buffer instead of copying it. */
struct rt_blocks {
	void **b;
	size_t n, cap;
};
/* A zeroed block of n bytes owned by bl, or NULL (out of memory). */
void *rt_blocks_alloc(struct rt_blocks *bl, size_t n);
/* A NUL-terminated copy of n bytes of s, owned by bl, or NULL. */
char *rt_blocks_strndup(struct rt_blocks *bl, const char *s, size_t n);
/* Free every block of bl; bl is empty and reusable afterwards. */
void rt_blocks_free(struct rt_blocks *bl);
/* One block with its header, outside any set (blocks.c): what the protobuf
 * decoder allocates; rt_blocks_adopt makes bl its owner (-1: out of memory). */
void *rt_hdr_alloc(size_t n);
void rt_hdr_free(void *p);
int rt_blocks_adopt(struct rt_blocks *bl, void *p);

/* A memory-mapped external data file of a model. */
struct rt_extfile {
	char *location;          /* as written in the model */
	struct base_map map;
};

/* Session options (options.c); see runtime.h for the keys. */
enum { RT_OPT_DISABLED = 0, RT_OPT_BASIC = 1, RT_OPT_ALL = 2 };
#define RT_OPT_STR 1024 /* bytes of a string option, NUL included */
struct rt_options {
	int opt_level; /* RT_OPT_* */
	int ctx_enable;          /* ep.context_enable: write a context model at load */
	int ctx_embed;           /* ep.context_embed_mode */
	int share, stop_share;   /* ep.share_ep_contexts, ep.stop_share_ep_contexts */
	int ctx_verify;          /* ep.context_verify_weights */
	int pool_gens;           /* session.buffer_pool_generations */
	int check_shapes;        /* session.check_shapes */
	int bf16_weights;        /* session.bf16_weights */
	char ctx_file_path[RT_OPT_STR];   /* ep.context_file_path, "" when unset */
	char ctx_prefix[RT_OPT_STR];      /* ep.context_node_name_prefix */
	char ext_folder[RT_OPT_STR];      /* session.model_external_initializers_file_folder_path */
	char ctx_ext_name[RT_OPT_STR];    /* ep.context_model_external_initializers_file_name */
};
void rt_options_default(struct rt_options *o);

struct rt_model {
	struct rt_graph g;
	struct rt_blocks mem;    /* every byte of the graph, names, attributes, constants */
	struct rt_extfile *ext;  /* mapped external data files */
	size_t next, capext;
	char *dir;               /* where external data is looked up, or NULL */
	int64_t ir_version;
	int opset;               /* opset of the default domain */
	int nopsets;
	char **opset_domains;    /* other imported domains ("com.microsoft") */
	int *opset_versions;
	int ninited;             /* nodes whose init ran (their fini runs at free) */
	int nfolded;             /* nodes of the top graph folded at load */
	struct rt_options opts;  /* as given at load */
	struct rt_cxhold **cx;   /* context binaries the graph maps (ctxhold.c) */
	int ncx, capcx;
	int compiled;            /* the graph came from a context: nothing recompiled */
	char *ctx_written;       /* the context model ep.context_enable wrote, or NULL */
	char *ctx_dir;           /* where EPContext binaries are looked up, or NULL */
	/* The session buffer pool (model.c): run contexts that runtime_ctx_free
	 * retired with all their buffers, at most opts.pool_gens of them, the
	 * oldest first out; runtime_ctx_new takes the newest back.  The only
	 * mutable part of a loaded model, under pool_mu. */
	pthread_mutex_t pool_mu;
	struct rt_ctx **retired; /* opts.pool_gens slots, oldest first */
	int nretired;
	uint64_t pool_hits, pool_misses;
};

/* ---- the load pipeline (model.c runs it) ------------------------------------ */

/* resolve.c: resolve a graph decoded from a context (already optimized, in
 * run order, with static shapes): inits and last uses only. */
int rt_graph_resolve_compiled(struct rt_model *m, struct strata_error *err);

/* load.c: decode the n bytes at buf (an ONNX ModelProto) into m's graph:
 * values, nodes in file order, constants, subgraphs; names resolved,
 * nothing typed beyond what the model declares.  External data is looked
 * up in m->dir.  mapped: buf is a private mapping of the model file, whose
 * pages the loader may drop once copied.  Returns 0,
 * STRATA_INVALID_PROTOBUF, STRATA_INVALID_GRAPH, STRATA_NOT_IMPLEMENTED
 * (an element type), STRATA_NOMEM, or an errno (external data). */
int rt_load_graph(struct rt_model *m, const void *buf, size_t n, int mapped,
                  struct strata_error *err);

/* resolve.c: sort the nodes, resolve each to its definition, run the inits in
 * order, compute last uses and fill input_info/output_info's missing types.
 * Errors: STRATA_INVALID_GRAPH, STRATA_NOT_IMPLEMENTED, STRATA_NOMEM. */
int rt_graph_resolve(struct rt_model *m, struct strata_error *err);
/* infer.c, called by rt_graph_resolve once every init has run: static
 * shapes for every value of the model (subgraphs included), constant
 * folding of the top graph, and the check of the declared output shapes.
 * Errors: STRATA_INVALID_GRAPH (a declared output shape contradicts the
 * inferred one: the message names the output and both shapes),
 * STRATA_NOMEM, STRATA_RUNTIME (session.check_shapes only: a folded
 * node's real output contradicts its shape rule). */
int rt_graph_infer(struct rt_model *m, struct strata_error *err);
/* optimize.c, called by rt_graph_resolve after rt_graph_infer when
 * opts.opt_level is RT_OPT_ALL: rewrites the top graph's chains into the
 * fused operators of ops/fused.c and compacts the node array.  Errors:
 * STRATA_NOMEM, or a fused init's error (a bug). */
int rt_graph_optimize(struct rt_model *m, struct strata_error *err);

/* The inferred shape of the value called name in m's top graph: 0, or -1
 * when there is no such value. */
int rt_model_value_shape(const struct rt_model *m, const char *name, struct rt_shape *out);
/* Write s as "[batch,seq,384]" ("?" for an unknown dimension, "?" alone for
 * an unknown rank) into buf, truncated to cap bytes. */
void rt_shape_format(const struct rt_shape *s, char *buf, size_t cap);
/* 1 when every dimension of s is a size or a symbol (rank known). */
int rt_shape_full(const struct rt_shape *s);
/* 1 when tensor t fits s: same rank, same sizes where s has sizes, and
 * where s has a symbol, the size sym_size(ud, name) gives (skipped when it
 * gives -1 or sym_size is NULL).  An unknown rank fits anything. */
int rt_shape_fits(const struct rt_shape *s, const struct rt_tensor *t,
                  int64_t (*sym_size)(void *ud, const char *name), void *ud);

/* exec.c: a context for running single nodes of m's top graph at load, on
 * constant inputs (constant folding).  NULL when out of memory. */
struct rt_exec *rt_fold_new(const struct rt_model *m);
void rt_fold_free(struct rt_exec *x);
/* Run node n (every input present is a constant) and copy its outputs into
 * new constants owned by mem: out[j] for output j, NULL where omitted.
 * Returns 0, STRATA_NOMEM, or the kernel's failure code (the node is then
 * left to fail at run time; err gets the kernel's message). */
int rt_fold_node(struct rt_exec *x, const struct rt_node *n, struct rt_blocks *mem,
                 struct rt_tensor **out, struct strata_error *err);

/* graph.c: call every node's fini.  The memory itself belongs to m->mem. */
void rt_graph_fini(struct rt_model *m);

/* Decode one serialized TensorProto (the test data format of input_N.pb and
 * output_N.pb) into t; the cells are owned by bl.  *name (may be NULL) is set
 * to the tensor's name, also owned by bl.  Returns 0,
 * STRATA_INVALID_PROTOBUF, STRATA_INVALID_GRAPH (cells do not match dims),
 * STRATA_NOT_IMPLEMENTED (element type), STRATA_NOMEM. */
int rt_tensor_from_pb(const void *buf, size_t n, struct rt_tensor *t, const char **name,
                      struct rt_blocks *bl, struct strata_error *err);
/* The same for a file; also an errno when it cannot be read. */
int rt_tensor_from_pb_file(const char *path, struct rt_tensor *t, const char **name,
                           struct rt_blocks *bl, struct strata_error *err);

/* Bytes of a dense tensor of count cells of dtype (char * per string cell);
 * 0 with *ok = 0 on an unknown type or more than RT_MAX_CELLS cells. */
size_t rt_tensor_bytes(int dtype, int64_t count, int *ok);

#endif
