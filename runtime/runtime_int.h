/*
 * runtime_int.h: what the files of runtime/ share: the graph, the kernel
 * interface and the operator registry.  No other subsystem includes it.
 *
 * Data flow: load.c decodes the protobuf into a struct rt_graph (values and
 * nodes); graph.c sorts the nodes, checks them and resolves each one to an
 * operator definition by (domain, op type, opset); the definition's init()
 * looks at the input element types (known for every value by then, since init
 * runs in topological order), sets the output element types and picks the
 * kernel.  infer.c then gives every value a static shape and folds the
 * nodes whose inputs are all constants.  exec.c runs the kernels in order:
 * each reads its inputs as tensor views and asks for its outputs with
 * rt_output(), which draws buffers from the run context; a buffer goes back
 * to the context after its last reader.
 *
 * An operator family lives in one file under ops/ and exports one table of
 * struct rt_opdef, ended by an entry whose op is NULL; ops/registry.c lists
 * the tables.
 */
#ifndef RUNTIME_INT_H
#define RUNTIME_INT_H

#include <pthread.h>

#include "runtime.h"

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
/* For init(): the element type of input i into *dt.  STRATA_INVALID_GRAPH
 * when the input is missing or its type is not known. */
int rt_node_input_dtype(const struct rt_node *n, const struct rt_graph *g, int i, int *dt,
                        struct strata_error *err);

/* ---- what a kernel sees while running --------------------------------------- */

/* Input i of n as a view, or NULL when the input is omitted (i >= nin or
 * the optional input is empty). */
const struct rt_tensor *rt_input(struct rt_exec *x, const struct rt_node *n, int i);

/* Allocate output i of n with the given type and shape (dims may be NULL for
 * rank 0); *out receives the view, whose buffer is uninitialized and 64-byte
 * aligned, except for a graph output bound to caller memory (runtime.h, IO
 * binding), which is only aligned to its element size.  Returns 0,
 * STRATA_NOMEM or STRATA_LIMIT. */
int rt_output(struct rt_exec *x, const struct rt_node *n, int i, int dtype, int rank,
              const int64_t *dims, struct rt_tensor **out);

/* Make output i of n a view of input in_index's cells with a new shape
 * (rank, dims; dims may be NULL for rank 0), without copying: Reshape,
 * Flatten, Squeeze, Unsqueeze, Identity.  The cell count and type must be
 * the input's.  The shared buffer lives until the last reader of the input
 * or of any view of it has run; a view of a graph input or a constant is
 * never written.  *out (may be NULL) receives the view.  Returns 0 or an
 * rt_fail code (STRATA_RUNTIME: counts differ). */
int rt_output_alias(struct rt_exec *x, const struct rt_node *n, int i, int in_index, int rank,
                    const int64_t *dims, struct rt_tensor **out);

/* A copy of len bytes of s, NUL-terminated, for a cell of a string output:
 * it lives until the next run on the context (so downstream kernels may copy
 * the pointer).  NULL when out of memory. */
char *rt_string(struct rt_exec *x, const char *s, size_t len);

/* rt_scratch for a kernel that treats failure as final: at least one byte,
 * and STRATA_NOMEM reported on n (so the caller just returns) when it fails. */
void *rt_scratch_or_fail(struct rt_exec *x, const struct rt_node *n, size_t bytes);

/* Scratch memory for the running kernel only (released when it returns). */
void *rt_scratch(struct rt_exec *x, size_t bytes);

/* Report a run-time failure of n ("node NAME (OP): ..."), return code. */
int rt_fail(struct rt_exec *x, const struct rt_node *n, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));


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

/* What input i of n holds in this run: RT_ARG_TENSOR, RT_ARG_SEQUENCE or
 * RT_ARG_NONE (omitted, or an empty optional). */
int rt_input_kind(struct rt_exec *x, const struct rt_node *n, int i);
/* Sequence input i of n, or NULL (omitted, empty optional, not a sequence).
 * Valid until the node returns; kernels must not modify it. */
const struct rt_sequence *rt_input_seq(struct rt_exec *x, const struct rt_node *n, int i);
/* Make output i of n an empty sequence of element type dtype (it must be a
 * sequence or optional-sequence value).  Returns 0 or an rt_fail code. */
int rt_output_seq(struct rt_exec *x, const struct rt_node *n, int i, int dtype);
/* Append a new, uninitialized tensor to sequence output i (after
 * rt_output_seq); *out receives its view.  Returns 0, STRATA_NOMEM,
 * STRATA_LIMIT (shape too large, more than RT_SEQ_MAX items). */
int rt_seq_append(struct rt_exec *x, const struct rt_node *n, int i, int rank,
                  const int64_t *dims, struct rt_tensor **out);
/* The same with a copy of t's cells (strings are shared, they live until the
 * next run). */
int rt_seq_append_copy(struct rt_exec *x, const struct rt_node *n, int i,
                       const struct rt_tensor *t);
/* Set output i of n to a copy of a (a tensor, a sequence or nothing). */
int rt_output_arg(struct rt_exec *x, const struct rt_node *n, int i, const struct rt_arg *a);
/* Make output i of n an empty optional. */
int rt_output_none(struct rt_exec *x, const struct rt_node *n, int i);
#define RT_SEQ_MAX (1 << 20)

/* The current tensor of value v of the running graph, or NULL when v holds
 * no tensor now.  Graph inputs, constants, graph outputs and the inputs of
 * the running node are always alive; other values may have been recycled
 * once their last reader ran (a kernel that needs them lists them as node
 * inputs or asks for them with rt_graph_keep at init). */
const struct rt_tensor *rt_value_tensor(struct rt_exec *x, int v);
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
/* Run subgraph sg of the running node n with in[0..sg->ninputs-1].  out[]
 * receives sg->noutputs views, valid until the next run of sg from the same
 * node or until n returns.  in[] may point at the outputs of the previous run
 * of sg (loop-carried values): they stay valid during the run.  Returns 0 or
 * an rt_fail code naming n. */
int rt_subgraph_run(struct rt_exec *x, const struct rt_node *n, const struct rt_graph *sg,
                    const struct rt_arg *in, struct rt_arg *out);

/* Identity for sequences and optionals (ops/sequence.c). */
extern const struct rt_opdef rt_op_identity_value;

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

/* ---- the registry (ops/registry.c) ------------------------------------------ */

/* The definition of (domain, op) with the largest since <= opset, or NULL.
 * *found_op is set to 1 when the op exists at some other opset. */
const struct rt_opdef *rt_registry_find(const char *domain, const char *op, int opset,
                                        int *found_op);

/* One table per operator family, each ended by { .op = NULL }. */
extern const struct rt_opdef rt_ops_elementwise[]; /* ops/elementwise.c: arithmetic, math, compare, logic, Where, Clip, Cast */
extern const struct rt_opdef rt_ops_matmul[];      /* ops/matmul.c: MatMul, Gemm (GEMM core in ops/gemm.c) */
extern const struct rt_opdef rt_ops_shape[];       /* ops/shape.c: Reshape, Flatten, Transpose, Squeeze, Unsqueeze, Concat, Slice, Gather, Shape, Constant, Identity, Expand */
extern const struct rt_opdef rt_ops_reduce[];      /* ops/reduce.c: Reduce*, ArgMax/ArgMin */
extern const struct rt_opdef rt_ops_normalize[];   /* ops/normalize.c: Softmax, LogSoftmax, LayerNormalization */
extern const struct rt_opdef rt_ops_conv[];      /* ops/conv.c: Conv, ConvTranspose, ConvInteger, QLinearConv */
extern const struct rt_opdef rt_ops_pool[];      /* ops/pool.c: MaxPool, AveragePool, LpPool, Global*Pool, MaxUnpool */
extern const struct rt_opdef rt_ops_nn[];        /* ops/nn.c: BatchNormalization, InstanceNormalization, LRN, MeanVarianceNormalization, DepthToSpace, SpaceToDepth */
extern const struct rt_opdef rt_ops_index[];     /* ops/index.c: GatherElements, GatherND, ScatterElements, ScatterND, Scatter, Compress, NonZero, ReverseSequence, Pad, Trilu, OneHot, EyeLike */
extern const struct rt_opdef rt_ops_misc[];      /* ops/misc.c: TopK, Unique, CumSum, Hardmax, Det, Dropout, NonMaxSuppression */
extern const struct rt_opdef rt_ops_resize[];    /* ops/resize.c: Resize, Upsample, GridSample, RoiAlign */
extern const struct rt_opdef rt_ops_signal[];    /* ops/signal.c: DFT, STFT, window functions, MelWeightMatrix */
extern const struct rt_opdef rt_ops_loss[];      /* ops/loss.c: NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss */
extern const struct rt_opdef rt_ops_training[];  /* ops/training.c: Gradient, Adam, Adagrad, Momentum (ai.onnx.preview.training) */
extern const struct rt_opdef rt_ops_random[];    /* ops/random.c: RandomUniform, RandomNormal, their Like forms, Bernoulli, Multinomial */
extern const struct rt_opdef rt_ops_rnn[];       /* ops/rnn.c: RNN, GRU, LSTM */
extern const struct rt_opdef rt_ops_einsum[];    /* ops/einsum.c: Einsum */
extern const struct rt_opdef rt_ops_quant[];     /* ops/quant.c: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, MatMulInteger, QLinearMatMul */
extern const struct rt_opdef rt_ops_string[];    /* ops/string.c: StringNormalizer, TfIdfVectorizer, and the other string operators */
extern const struct rt_opdef rt_ops_sequence[];  /* ops/sequence.c: Sequence*, SplitToSequence, ConcatFromSequence, Optional* */
extern const struct rt_opdef rt_ops_control[];   /* ops/control.c: If, Loop, Scan */
extern const struct rt_opdef rt_ops_fused[];     /* ops/fused.c: strata.FusedLinear, SkipLayerNorm, Attention (made by optimize.c) */

/* ---- GEMM core (ops/gemm.c) --------------------------------------------------
 * C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C, row-major, with leading
 * dimensions lda, ldb, ldc; op(X) = X or X^T.  beta == 0 ignores C's old
 * content (NaN included). */
void rt_sgemm(int transa, int transb, int64_t M, int64_t N, int64_t K, float alpha,
              const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
              float *C, int64_t ldc);

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
const char *rt_cpu_isa_name(int isa);

/* ---- GEMM with weights packed at load and a fused epilogue (ops/gemm.c) ------
 * The epilogue runs on each finished element of C, in this order:
 *   c = alpha * (A B)[i,j] + beta * C[i,j]
 *   c += bias[j]                      (bias: N floats, or NULL)
 *   c = act(c)                        (RT_ACT_*)
 *   c += residual[i * ldr + j]        (residual: M x N, or NULL; may not alias C)
 * so Linear (MatMul + Add), Linear + GELU and Linear + residual Add each take
 * one pass over C. */
enum rt_act {
	RT_ACT_NONE = 0,
	RT_ACT_RELU,
	RT_ACT_GELU_ERF, /* x * 0.5 * (1 + erf(x / sqrt(2))) */
};
struct rt_epilogue {
	const float *bias;
	int act;
	const float *residual;
	int64_t ldr;
};

/* B (K x N; given as N x K when transb) packed once, in the layout the
 * kernels stream.  The layout depends only on (K, N), the packing
 * version and the ISA chosen at pack time (recorded in isa/nr/kc: a run on
 * another ISA still gives the right result, more slowly), never on addresses, so a packed B can be written to a file and
 * mapped back (owned = 0 then). */
struct rt_packed_b {
	int64_t K, N;
	int version;  /* layout version (RT_PACK_VERSION when packed by this build) */
	size_t bytes;
	float *data;  /* 64-byte aligned */
	int owned;    /* 1: data is base_alloc'd and freed by rt_packed_b_free */
	int isa, nr, kc; /* the kernel packed for: RT_ISA_*, strip width, K block */
};
/* Pack B.  Returns 0 or STRATA_NOMEM. */
int rt_sgemm_pack_b(int transb, int64_t K, int64_t N, const float *B, int64_t ldb,
                    struct rt_packed_b *pb);
void rt_packed_b_free(struct rt_packed_b *pb);
/* 1 when pb's recorded layout (version, isa, nr, kc) is one this build's
 * kernels read and bytes is exactly what that layout of K x N takes: a
 * packed B from a file is checked so before use. */
int rt_packed_b_valid(const struct rt_packed_b *pb);
/* For init(): pack constant B for node n (as rt_sgemm_pack_b) and note it
 * on the node.  In a model from a context the node's next mapped packing is
 * taken instead (B may then be NULL): it must be K x N with a valid layout,
 * else STRATA_INVALID_GRAPH.  Returns 0, STRATA_NOMEM, STRATA_LIMIT (more
 * than RT_NODE_PACKS), STRATA_INVALID_GRAPH; err names the node. */
int rt_node_pack_b(struct rt_node *n, int transb, int64_t K, int64_t N, const float *B,
                   int64_t ldb, struct rt_packed_b *pb, struct strata_error *err);
/* C[M,N] = alpha * op(A)[M,K] * B + beta * C, then the epilogue (ep may be NULL). */
void rt_sgemm_pb(int transa, int64_t M, float alpha, const float *A, int64_t lda,
                 const struct rt_packed_b *pb, float beta, float *C, int64_t ldc,
                 const struct rt_epilogue *ep);
/* rt_sgemm followed by the epilogue. */
void rt_sgemm_ex(int transa, int transb, int64_t M, int64_t N, int64_t K, float alpha,
                 const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                 float *C, int64_t ldc, const struct rt_epilogue *ep);

/* ---- model memory and internals shared by load.c, graph.c and exec.c -------- */

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
	struct rt_cxhold **cx;   /* context binaries the graph maps (epctx.c) */
	int ncx, capcx;
	int compiled;            /* the graph came from a context: nothing recompiled */
	char *ctx_written;       /* the context model ep.context_enable wrote, or NULL */
	char *ctx_dir;           /* where EPContext binaries are looked up, or NULL */
	/* The session buffer pool (exec.c): run contexts that runtime_ctx_free
	 * retired with all their buffers, at most opts.pool_gens of them, the
	 * oldest first out; runtime_ctx_new takes the newest back.  The only
	 * mutable part of a loaded model, under pool_mu. */
	pthread_mutex_t pool_mu;
	struct rt_ctx **retired; /* opts.pool_gens slots, oldest first */
	int nretired;
	uint64_t pool_hits, pool_misses;
};

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

/* The packing layout version this build writes and reads (ops/gemm.c). */
int rt_packed_b_layout(void);

/* epctx.c.  A context binary held by models (mapped file or memory owned
 * elsewhere), reference counted across models and the shared workspace. */
struct rt_cxhold;
void rt_cxhold_release(struct rt_cxhold *h);
/* After build, before resolve: when m's graph is one Strata EPContext node
 * standing for the whole graph, replace the graph by the compiled one and
 * set *done.  ctx_dir: where file contexts are looked up (NULL: loaded from
 * a buffer without ep.context_file_path).  Errors: STRATA_INVALID_GRAPH,
 * STRATA_INVALID_ARGUMENT, STRATA_NOMEM, an errno. */
int rt_epctx_adopt(struct rt_model *m, const char *ctx_dir, int *done, struct strata_error *err);
/* After a successful load with ep.context_enable=1: write the context model
 * (and binary) for m.  src_path: the source model, or NULL (buffer). */
int rt_epctx_generate(struct rt_model *m, const char *src_path, struct strata_error *err);
/* A load with options o failed: a shared generation workspace it belongs
 * to is abandoned (the next sharing load starts a new group). */
void rt_epctx_abandon(const struct rt_options *o);
/* 1 when the model's graph has a node com.microsoft EPContext. */
int rt_epctx_present(const struct rt_graph *g);
extern const struct rt_opdef rt_ops_epcontext[]; /* epctx.c: com.microsoft EPContext in a mixed graph */

/* graph.c: resolve a graph decoded from a context (already optimized, in
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

/* graph.c: sort the nodes, resolve each to its definition, run the inits in
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

/* ---- static memory plans (plan.c) --------------------------------------------
 * One buffer of a recorded run: alive from step start to step end (node
 * indices, both included).  rt_plan_place sets every off (and rounds bytes
 * up to RT_PLAN_ALIGN) so that items alive at the same step never share a
 * byte, and *total to the arena size.  Returns 0 or STRATA_NOMEM. */
#define RT_PLAN_ALIGN 64
struct rt_plan_item {
	size_t bytes;
	int start, end;
	size_t off;
};
int rt_plan_place(struct rt_plan_item *it, size_t n, size_t *total);

/* The plan cache of a top run context (buffers.c keys runs, plan.c keeps the
 * plans).  A plan holds, for one input-shape class, each value's slot (off,
 * cap; cap 0: none), which values the recorded run made views, and the
 * scratch slots in request order.  All plans share one arena: one run at a
 * time uses it. */
#define RT_PLAN_MAX 8                        /* plans kept, least recently used evicted */
#define RT_PLAN_MAX_BYTES ((size_t)1 << 31)  /* bound on one plan's arena */
struct rt_plan_scratch {
	int step;                /* the node that asked */
	size_t bytes;
	size_t off;
};
struct rt_plan {
	int64_t *key;            /* rank and dims of every input */
	size_t nkey;
	size_t bytes;            /* of the arena it needs */
	int fresh;               /* not run yet */
	size_t *off;             /* per value: offset in the arena */
	size_t *cap;             /* per value: slot size, 0 when it has none */
	unsigned char *aliased;  /* per value: the recorded run made it a view */
	struct rt_plan_scratch *tmp;
	size_t ntmp;
	uint64_t used;           /* LRU clock */
};
struct rt_plans {
	struct rt_plan plans[RT_PLAN_MAX];
	int nplans;
	void *arena;
	size_t arena_bytes;
	uint64_t clock;
	int64_t *key;            /* this run's class, filled by the caller */
	size_t nkey, capkey;
	/* A recording run (buffers.c writes these as buffers come and go): */
	size_t *rbytes;          /* per value, bytes asked */
	int *rstart, *rend;      /* per value, first and last step alive; -1: none */
	unsigned char *ralias;   /* per value, made a view */
	struct rt_plan_scratch *trec; /* scratch requests */
	size_t ntrec, captrec;
	int rec_bad;             /* a record could not be kept: build no plan */
};
/* Arrays for a graph of nvalues values and ninputs inputs (c zeroed first).
 * Returns 0 or STRATA_NOMEM; rt_plans_free releases a partial init. */
int rt_plans_init(struct rt_plans *c, int nvalues, int ninputs);
void rt_plans_free(struct rt_plans *c, int nvalues);
/* The plan of class c->key[0..nkey), marked most recently used, or NULL. */
struct rt_plan *rt_plans_find(struct rt_plans *c);
/* Start recording a run of class c->key. */
void rt_plans_record(struct rt_plans *c, int nvalues);
/* Turn the finished recording into a plan of class c->key (evicting the
 * least recently used one past RT_PLAN_MAX, growing the arena when
 * needed).  Returns 0, STRATA_NOMEM or STRATA_LIMIT (over
 * RT_PLAN_MAX_BYTES); on failure the class stays unplanned. */
int rt_plans_build(struct rt_plans *c, int nvalues);

/* ---- the run context (exec.c runs it, buffers.c keeps its buffers) ----------
 * Only exec.c and buffers.c touch these fields; kernels go through the
 * functions of "what a kernel sees" above.  The invariants of the buffers
 * are stated at the top of buffers.c. */

/* A buffer: from the heap (cap > 0) or a slice of a plan's arena (cap 0,
 * never freed nor pooled). */
struct rt_buf {
	void *p;
	size_t cap;
};

/* How a run draws its buffers: from the pool, from the pool while recording
 * a plan, or from the slots of a plan. */
enum rt_mode { RT_MODE_POOL, RT_MODE_REC, RT_MODE_PLAN };

/* Released buffers kept for reuse, shared by a top context and its children. */
struct rt_pool {
	struct rt_buf *b;
	size_t n, cap;
	size_t bytes;
	/* During the first run of a new plan, what the pool held before it:
	 * drawn from when the pool has nothing, freed after that run. */
	struct rt_buf *old;
	size_t nold, capold;
};

/* A sequence value.  s.items is own[] when the context made the items, or
 * borrowed (a graph input, a captured value, a subgraph input). */
struct rt_seqv {
	struct rt_sequence s;
	struct rt_tensor *own;   /* cap item views */
	struct rt_buf *bufs;     /* the buffer of own[i], i < nbufs */
	int cap;
	int nbufs;
};

/* What a value holds in the current run. */
enum rt_hold { RT_HOLD_EMPTY, RT_HOLD_TENSOR, RT_HOLD_SEQ, RT_HOLD_NONE };

struct rt_child {
	const struct rt_graph *g;
	struct rt_exec *x;
};

struct rt_sym;             /* a symbolic input dimension (exec.c) */

/* IO binding (binding.c; runtime.h's "IO binding").  A top context's
 * binding table, made at its first bind or bound run: per graph input the
 * caller's view, per graph output the caller's region or none.  Binding
 * and rebinding only write these arrays, so they never allocate once the
 * table exists. */
struct rt_bind_out {
	struct rt_tensor t;      /* the caller's region as a view (data: base + offset) */
	int set;                 /* bound; else the context allocates the output */
};
struct rt_binding {
	struct rt_tensor *in;    /* per graph input: the bound view */
	unsigned char *in_set;   /* per graph input: bound */
	struct rt_bind_out *out; /* per graph output */
	struct rt_tensor *view;  /* per graph output: what runtime_bound_output returns */
	int running;             /* a bound run is under way: rt_output consults out[] */
	int done;                /* the last bound run succeeded: view[] is valid */
};

struct rt_exec {
	const struct rt_model *m;
	const struct rt_graph *g;
	struct rt_exec *outer;   /* the context running the enclosing graph, or NULL */
	struct rt_tensor *vals;  /* one view per value */
	struct rt_buf *vbuf;     /* the buffer each value holds in this run */
	unsigned char *hold;     /* RT_HOLD_* per value */
	struct rt_seqv *seqs;    /* per value; used by sequence values */
	struct rt_pool *pool;    /* the top context's */
	struct rt_pool own_pool;
	struct rt_buf *temp;     /* scratch and omitted outputs of the running node */
	size_t ntemp, captemp;
	struct rt_tensor *tmp_out; /* views of omitted outputs, one per output slot */
	int max_nout;
	struct rt_sym *sym;
	int capsym;
	int nsym;                /* symbolic input dims (top context); sizes bound per run */
	int check;               /* compare produced tensors with static shapes */
	struct strata_error *err;
	int failed;              /* rt_fail() was called by the running kernel */
	struct base_arena *strings; /* the top context's */
	struct base_arena own_strings; /* bytes of strings made by kernels, reset per run */
	struct rt_child *kids;   /* contexts of subgraphs, made on first use */
	size_t nkids, capkids;
	struct rt_buf *later;    /* released when the current run of this child ends */
	size_t nlater, caplater;
	struct rt_seqv *later_seq;
	size_t nlater_seq, caplater_seq;
	int *root;               /* per value: the value owning the buffer it views, or -1 */
	int *refs;               /* per value: live views of its buffer */
	int *symidx;             /* per input dim (k * RT_MAX_RANK + d): symbol or -1 */
	int all_tensor;          /* every graph input and output is a tensor */
	 /* Plans: only the top context of runtime_run/runtime_run_args. */
	int planning;
	int mode;                /* RT_MODE_*: how this run draws its buffers */
	int step;                /* the running node (g->nnodes after the last) */
	struct rt_plan *plan;    /* RT_MODE_PLAN */
	size_t tnext;            /* RT_MODE_PLAN: next scratch slot */
	struct rt_plans pc;      /* the plans, the arena and the recording (plan.c) */
	struct rt_binding *bind; /* top context: its IO binding, NULL until first used */
};

/* buffers.c: where the buffers of a run context come from and go back to.
 * Functions returning int return 0, STRATA_NOMEM or STRATA_LIMIT. */
/* A buffer of at least n bytes into *b: the smallest pooled one that fits,
 * else a new one. */
int rt_pool_get(struct rt_exec *x, size_t n, struct rt_buf *b);
/* A buffer that lives until the running node returns (its planned scratch
 * slot when it fits), or NULL. */
void *rt_temp_get(struct rt_exec *x, size_t n);
/* Give back the running node's scratch buffers. */
void rt_temp_release(struct rt_exec *x);
/* The buffer of value v (bytes long) into *b: place when it is not NULL
 * (caller memory bound to graph output v: cap 0, never freed, pooled or
 * given to another value), else its planned slot when it fits, else from
 * the pool.  A recording run notes the request either way, so that one
 * plan serves the runs of its class with and without the binding. */
int rt_value_get(struct rt_exec *x, int v, size_t bytes, void *place, struct rt_buf *b);
/* Value v no longer holds anything of its own; a buffer other values still
 * view stays until the last view goes. */
void rt_value_release(struct rt_exec *x, int v);
/* Value v becomes a view of the buffer behind value s (counted, so that
 * the buffer outlives every view; none when s views memory x does not own). */
void rt_value_view(struct rt_exec *x, int v, int s);
/* Room for one more owned item in sv. */
int rt_seqv_reserve(struct rt_seqv *sv);
/* Give back everything x and its children hold (between top-level runs). */
void rt_exec_release_all(struct rt_exec *x);
/* Child context c: move what its values still hold (the previous run's
 * outputs) to its later lists, which the next rt_exec_release_later gives
 * back; the new run's inputs may view them. */
int rt_exec_defer(struct rt_exec *c);
void rt_exec_release_later(struct rt_exec *x);
/* Before a top-level run (inputs bound): pick how it draws its buffers. */
void rt_exec_mode_start(struct rt_exec *x);
/* After it (rc: its result): turn a successful recording into a plan, end
 * a plan's first run, return to the pool. */
void rt_exec_mode_end(struct rt_exec *x, int rc);
/* Free every buffer x holds or keeps (its own pool too, for a top context)
 * and its IO binding table; the per-value arrays stay. */
void rt_exec_buffers_free(struct rt_exec *x);

/* ---- IO binding (runtime.h) ---------------------------------------------------
 * binding.c keeps a context's table (struct rt_binding above) and serves
 * the public calls; exec.c runs with it. */

/* The public face of a top run context (model.c makes and pools them). */
struct rt_ctx {
	struct rt_exec x;
};
/* exec.c: set up x (zeroed by the caller) as a top context running m's
 * graph with static memory plans.  Returns 0 or STRATA_NOMEM; a partial
 * setup is undone by rt_exec_fini. */
int rt_exec_init(struct rt_exec *x, const struct rt_model *m);
/* exec.c: free everything x holds (its children and buffers too), not its
 * binding table (rt_bind_free). */
void rt_exec_fini(struct rt_exec *x);
/* exec.c: runtime_run on x.  While x->bind->running, an output bound in
 * x->bind->out[] is written in the caller's region (in place when its
 * kernel asks for exactly the bound type and shape, else copied there at
 * the end); out[k] then still views where the run produced it. */
int rt_run_tensors(struct rt_exec *x, const struct rt_tensor *in, struct rt_tensor *out,
                   struct strata_error *err);
/* exec.c: what a run checks of tensor t given for input k (or bound to
 * output k), short of the agreement of symbolic dimensions across inputs:
 * element type, rank, fixed dimensions, size, data.  Returns 0 or
 * STRATA_INVALID_ARGUMENT with runtime_run's message ("input \"x\":
 * expected float [batch,4], given float [1,3]"). */
int rt_check_input(struct rt_exec *x, int k, const struct rt_tensor *t, struct strata_error *err);
int rt_check_output(struct rt_exec *x, int k, const struct rt_tensor *t, struct strata_error *err);
/* binding.c: forget every binding of x (the table stays, so that binding
 * again allocates nothing).  A context leaving its caller must forget
 * them: runtime_ctx_free has to call it before retiring the context into
 * the session buffer pool, whose next taker would otherwise read and write
 * the previous owner's memory. */
void rt_bind_reset(struct rt_exec *x);
/* binding.c: free x's binding table (none: nothing to do). */
void rt_bind_free(struct rt_exec *x);

#endif
