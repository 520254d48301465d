/*
 * runtime.h: Strata's ONNX runtime.  Loads .onnx models, resolves every node
 * to a kernel at load time, and runs them single-threaded on caller memory.
 *
 *     struct rt_model *m;
 *     struct strata_error err;
 *     if (runtime_model_load("ranker.onnx", &m, &err) != 0)
 *         die(err.msg);                      // e.g. NOT_IMPLEMENTED: "op Foo (opset 17)"
 *     struct rt_ctx *cx;
 *     runtime_ctx_new(m, &cx, &err);
 *     struct rt_tensor in[2] = {
 *         { BASE_DT_FLOAT, 2, {1, 384}, query_vec },
 *         { BASE_DT_FLOAT, 2, {1, 384}, doc_vec },   // may point into a memory map
 *     };
 *     struct rt_tensor out[1];
 *     if (runtime_run(cx, in, out, &err) == 0)
 *         printf("%f\n", ((float *)out[0].data)[0]); // valid until the next run
 *     runtime_ctx_free(cx);
 *     runtime_model_free(m);
 *
 * A struct rt_model is immutable once loaded and may be shared by any number
 * of threads.  A struct rt_ctx holds the buffers of one evaluation and is
 * used by one thread at a time; parallelism lives outside, one context per
 * thread.  Inputs are read in place (never copied or modified); outputs live
 * in the context until its next run or until it is freed.
 */
#ifndef RUNTIME_H
#define RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#include "../base/base.h"

#define RT_MAX_RANK 8

/* A tensor view: a small value carrier, no ownership.  Cells are dense,
 * row-major, of type dtype (enum base_dtype).  A string tensor's data is an
 * array of char * (NUL-terminated).  A scalar has rank 0 and one cell. */
struct rt_tensor {
	int dtype;
	int rank;
	int64_t dims[RT_MAX_RANK];
	void *data;
};

/* Number of cells of t (1 for a scalar). */
int64_t runtime_tensor_count(const struct rt_tensor *t);

/* The declared type of a graph input or output.  dims[i] is -1 where the
 * dimension is symbolic or unknown; dim_names[i] then holds its name ("batch")
 * or "" when it has none.  rank is -1 when the shape is not declared. */
struct rt_value_info {
	const char *name;
	int dtype;
	int rank;
	int64_t dims[RT_MAX_RANK];
	const char *dim_names[RT_MAX_RANK];
	int kind;                /* enum rt_kind; dtype and shape are the element's */
};

struct rt_model; /* a loaded, compiled model (immutable, shareable) */
struct rt_ctx;   /* the buffers of one evaluation (one thread at a time) */

/* Load the model at path.  External data files are resolved relative to the
 * model's folder and memory-mapped.  Returns 0, an errno (cannot read),
 * STRATA_INVALID_PROTOBUF (not an ONNX model), STRATA_INVALID_GRAPH
 * (dangling names, cycles, bad attributes or shapes), STRATA_NOT_IMPLEMENTED
 * (an operator or type combination without a kernel: the message names the
 * op, its domain and opset), STRATA_NOMEM.  *out is freed with
 * runtime_model_free(). */
int runtime_model_load(const char *path, struct rt_model **out, struct strata_error *err);

/* Load a model from memory (the buffer may be freed after the call).  dir is
 * where external data files are looked up (may be NULL).  Same errors as
 * runtime_model_load. */
int runtime_model_load_buffer(const void *buf, size_t n, const char *dir,
                              struct rt_model **out, struct strata_error *err);

/* The instruction set the kernels of this process use: "avx512" or "avx2".
 * Chosen once from the CPU's features; STRATA_CPU=avx2 in the environment
 * forces the AVX2 kernels (what an AVX2-only machine runs). */
const char *runtime_isa(void);
/* The int8 GEMM kernel of this process: "amx-int8" (AMX tiles),
 * "avx512-vnni", "avx-vnni" or "avx2" (int8 widened to 16 bits); held to
 * "avx512-vnni" by STRATA_CPU=avx512, to "avx2" by STRATA_CPU=avx2. */
const char *runtime_int8_isa(void);
/* What session.bf16_weights multiplies with here: "amx-bf16" (AMX tiles) or
 * "avx512-bf16" where that is faster than float (rt_cpu_bf16_faster), else
 * "float" (the option then keeps the float weights and results). */
const char *runtime_bf16_isa(void);

/* ---- session options ----------------------------------------------------------
 * Options are string keys and values, parsed strictly: an unknown key or a
 * malformed value is STRATA_INVALID_ARGUMENT naming both.  Keys:
 *   session.graph_optimization_level   disabled | basic | all (the default):
 *       "disabled" runs the graph as written (the reference for checking the
 *       optimized one), "basic" folds constants, "all" also fuses operators
 *       and pre-packs weights.
 *
 * Compiled contexts (the EPContext design; "0" or "1" where a flag is asked):
 *   ep.context_enable        1: after loading, write the compiled model as a
 *       context model, "<name>_ctx.onnx" beside the source (0, the default:
 *       do not).  Its one com.microsoft EPContext node (source "Strata")
 *       stands for the whole graph; loading it maps the compiled graph and
 *       its packed weights instead of compiling again.
 *   ep.context_file_path     where the context model goes (generation), or,
 *       for a context model loaded from a buffer, its path: the folder where
 *       its binary is looked up.  Required to generate from a buffer.
 *   ep.context_embed_mode    1: the binary inside the context model's node;
 *       0 (the default): in "<name>_strata.bin" beside the context model,
 *       the node holding its path relative to the model.
 *   ep.context_node_name_prefix   prefix of the EPContext node's name and
 *       partition_name (the compiled graph's name): "" by default.
 *   ep.share_ep_contexts     1: models compiled in this process go into one
 *       shared workspace (one binary; identical weights stored once) until
 *       a load with ep.stop_share_ep_contexts=1 writes the binary, named after
 *       the first model, and empties the workspace: N models give N context
 *       models and one binary, all in one folder.  At inference: a binary
 *       opened for one model offers its other graphs to the next loads with
 *       sharing on, which take them without opening the file again.
 *   ep.stop_share_ep_contexts  see above.
 *   ep.context_verify_weights  1: also check the hash of every weight blob
 *       of a binary at load (reads every byte; a load always checks the
 *       header, the graph records' checksum and every bound).
 *   session.check_shapes     1: every run compares each tensor a node
 *       produces with the static shape inferred at load and fails with
 *       STRATA_RUNTIME ("static shape" in the message) on a contradiction;
 *       folding at load checks its results the same way.  A debugging aid
 *       (it costs time on every node); 0 by default.  The environment
 *       variable STRATA_CHECK_SHAPES=1 turns the run-time check on for every
 *       model of the process.
 *   session.bf16_weights     1: constant weights of MatMul, Gemm and the
 *       fused linear layers are packed as bfloat16 and multiplied with
 *       AVX512-BF16 (vdpbf16ps), the activations rounded to bfloat16 at
 *       each product: about twice the float GEMM's arithmetic rate from
 *       half the weight memory, with results within about 2^-8 of the
 *       magnitudes involved instead of float's 2^-24.  Used where the CPU
 *       has AVX512-BF16 and AVX-512 is in use (STRATA_CPU=avx2 turns it
 *       off); elsewhere, and for K above rt_bgemm_kmax, the weights stay
 *       float.  0 by default.  A context compiled with it keeps the
 *       bfloat16 packing, and loads only where the CPU runs it.
 *   session.buffer_pool_generations   run contexts (each with all its
 *       buffers) a model keeps when they end, for the next runtime_ctx_new:
 *       1 by default, N keeps N (the oldest freed first), 0 disables the
 *       pool.  A count from 0 to 1024, digits only.
 *   session.model_external_initializers_file_folder_path  for a model
 *       loaded from a buffer: the folder of its external data files.
 *   ep.context_model_external_initializers_file_name  for initializers left
 *       outside EPContext nodes in a generated model; Strata compiles every
 *       node into its context, so there are none and no file is written.
 * A context that cannot be used (another format or Strata version, weights
 * packed for AVX-512 where this process runs AVX2 kernels, a truncated or
 * corrupted binary, an EPContext node of another source) fails the load
 * with STRATA_INVALID_GRAPH saying which.
 *
 * The loader copies what it needs: options may be freed after a load. */
struct rt_options;
int runtime_options_new(struct rt_options **out, struct strata_error *err);
void runtime_options_free(struct rt_options *o);
int runtime_options_set(struct rt_options *o, const char *key, const char *value,
                        struct strata_error *err);

/* runtime_model_load and runtime_model_load_buffer with options (NULL: the
 * defaults).  Same errors. */
int runtime_model_load_opts(const char *path, const struct rt_options *opts,
                            struct rt_model **out, struct strata_error *err);
int runtime_model_load_buffer_opts(const void *buf, size_t n, const char *dir,
                                   const struct rt_options *opts, struct rt_model **out,
                                   struct strata_error *err);

void runtime_model_free(struct rt_model *m);

/* The context model the load wrote (ep.context_enable=1), or NULL.  Lives
 * as long as m. */
const char *runtime_model_context_path(const struct rt_model *m);
/* 1 when m was loaded from a compiled context (nothing was recompiled). */
int runtime_model_compiled(const struct rt_model *m);

/* Graph inputs (initializers excluded) and outputs, in declaration order.
 * The returned info lives as long as the model. */
int runtime_model_ninputs(const struct rt_model *m);
int runtime_model_noutputs(const struct rt_model *m);
const struct rt_value_info *runtime_model_input(const struct rt_model *m, int i);
const struct rt_value_info *runtime_model_output(const struct rt_model *m, int i);
/* Index of the input or output called name, or -1. */
int runtime_model_input_index(const struct rt_model *m, const char *name);
int runtime_model_output_index(const struct rt_model *m, const char *name);

/* A new run context for m: one the session buffer pool kept (a hit: no
 * allocation, its buffers sized by its earlier runs) or a new one (a miss).
 * Returns 0 or STRATA_NOMEM.  Any thread may call it. */
int runtime_ctx_new(const struct rt_model *m, struct rt_ctx **out, struct strata_error *err);
/* End a context: with session.buffer_pool_generations N > 0 it is retired
 * into m's pool with its buffers (when N are kept already, the oldest is
 * freed); with 0 it is freed.  Its outputs are invalid from here and its
 * bindings (IO binding, below) are forgotten.  All
 * contexts of m end before runtime_model_free(m). */
void runtime_ctx_free(struct rt_ctx *cx);

/* The session buffer pool of m: contexts taken from it (hits), made anew
 * (misses), and kept now. */
#define RUNTIME_POOL_MAX 1024 /* session.buffer_pool_generations at most */
struct rt_pool_stats {
	uint64_t hits, misses;
	int retired;
};
void runtime_model_pool_stats(const struct rt_model *m, struct rt_pool_stats *st);

/* Run the model.  in[] has one tensor per graph input, in input order; each
 * must match the declared element type, rank and fixed dimensions, and one
 * symbolic name must take one size throughout a run.  out[] receives one view
 * per graph output, in output order, valid until the next run on cx or until
 * cx is freed.  Returns 0, STRATA_INVALID_ARGUMENT (an input does not fit:
 * the message names it, the expected and the given shape), STRATA_RUNTIME
 * (a kernel failed: index out of range, incompatible shapes; the message
 * names the node), STRATA_NOMEM.  A model with an input or output that is
 * not a tensor needs runtime_run_args() (STRATA_INVALID_ARGUMENT here). */
int runtime_run(struct rt_ctx *cx, const struct rt_tensor *in, struct rt_tensor *out,
                struct strata_error *err);

/* ---- values that are not tensors ----------------------------------------------
 * A graph input or output may be a sequence of tensors or an optional (a
 * tensor, a sequence, or nothing): rt_value_info.kind says which, and
 * runtime_run_args() passes them.  runtime_run() serves models whose inputs
 * and outputs are all tensors. */
enum rt_kind {
	RT_KIND_TENSOR = 0,
	RT_KIND_SEQUENCE = 1,          /* sequence of tensors of one element type */
	RT_KIND_OPTIONAL_TENSOR = 2,
	RT_KIND_OPTIONAL_SEQUENCE = 3,
};

/* A sequence of tensors: a value carrier, no ownership.  Every item has
 * element type dtype; shapes may differ. */
struct rt_sequence {
	int dtype;
	int count;
	const struct rt_tensor *items;
};

/* One input or output of any kind. */
enum rt_arg_kind { RT_ARG_TENSOR = 0, RT_ARG_SEQUENCE = 1, RT_ARG_NONE = 2 };
struct rt_arg {
	int kind;                /* enum rt_arg_kind; RT_ARG_NONE is an empty optional */
	struct rt_tensor tensor; /* RT_ARG_TENSOR */
	struct rt_sequence seq;  /* RT_ARG_SEQUENCE */
};

/* Run the model with inputs and outputs of any kind.  in[k] must match the
 * kind of input k (RT_ARG_NONE only for an optional); a sequence's items
 * follow the input's element type.  out[] views (tensors and sequence items)
 * live until the next run on cx.  Errors as runtime_run(). */
int runtime_run_args(struct rt_ctx *cx, const struct rt_arg *in, struct rt_arg *out,
                     struct strata_error *err);

/* ---- IO binding ------------------------------------------------------------------
 * Inputs and outputs bound to caller memory once, then run as often as
 * needed:
 *
 *     int64_t xd[2] = {1, 384}, yd[2] = {1, 2};
 *     float score[2];
 *     runtime_bind_output(cx, "y", BASE_DT_FLOAT, 2, yd, score, 0, &err);
 *     for (size_t r = 0; r < nrows; r++) {
 *         // row r of a [nrows,384] matrix, read in place
 *         runtime_bind_input_at(cx, 0, BASE_DT_FLOAT, 2, xd, matrix,
 *                               r * 384 * sizeof(float), &err);
 *         if (runtime_run_bound(cx, &err) != 0)
 *             die(err.msg);
 *         use(score);                        // y, written in place
 *     }
 *
 * A binding is a tensor view of caller memory: element type, shape, and a
 * base pointer with a byte offset into it (the cells start at (char *)base
 * + offset, which must be aligned to the element size).  It belongs to the
 * context, copies nothing and stays until replaced, so the caller may write
 * a bound input's memory between runs and each run reads what is there
 * then.  A bound output is written into the caller's memory: in place when
 * its kernel produces it with exactly the bound type and shape (nothing
 * copied), else copied there when the run ends.
 *
 * Binding checks what it can on its own: element type, rank and fixed
 * dimensions, with runtime_run's message ("input \"x\": expected float
 * [batch,384], given float [1,2]").  A run checks the inputs again,
 * symbolic dimensions included (one name, one size across the inputs), and
 * fails with STRATA_INVALID_ARGUMENT when it produces a bound output of
 * another type or shape, naming the output and both shapes.  A run that
 * fails may have written part of the bound outputs.
 *
 * Indices are those of runtime_model_input() and runtime_model_output().
 * The _at forms rebind by index: no name lookup.  The first bind or bound
 * run on a context makes its binding table (STRATA_NOMEM); from then on
 * binding allocates nothing, and bound runs allocate what runtime_run
 * would (nothing once warm).  runtime_run and runtime_run_args ignore the
 * binding.  A failed bind leaves the previous binding of that input or
 * output as it was.
 *
 * Bound memory is neither copied nor checked for overlap.  An output bound
 * over an input's memory is written while the run may still read that
 * input, so the results are exact only when the graph writes those cells
 * after their last read, or writes the values they already hold.  The sliding-window
 * state loop of decoder models is such a case: with present = Concat(past,
 * new, axis 1) and batch 1, the caller binds past as W-1 rows and present
 * as the W rows starting at the same place of one buffer; each step moves
 * both offsets one row on.  Concat leaves the past rows where they are and
 * writes only the new row, so nothing is copied from step to step. */

/* Bind input name (or input k) to the cells of type dtype and shape
 * dims[0..rank) at (char *)base + offset; dims may be NULL for rank 0.
 * Returns 0, STRATA_INVALID_ARGUMENT (no such input, or the tensor does not
 * fit it: the message names the input, the expected and the given shape;
 * an unaligned address), STRATA_NOMEM. */
int runtime_bind_input(struct rt_ctx *cx, const char *name, int dtype, int rank,
                       const int64_t *dims, const void *base, size_t offset,
                       struct strata_error *err);
int runtime_bind_input_at(struct rt_ctx *cx, int k, int dtype, int rank, const int64_t *dims,
                          const void *base, size_t offset, struct strata_error *err);

/* Bind output name (or output k) to caller memory the same way: the
 * region of dims' cells at (char *)base + offset receives the output.
 * String cells written there point at memory of the context, valid until
 * its next run.  Same errors as runtime_bind_input. */
int runtime_bind_output(struct rt_ctx *cx, const char *name, int dtype, int rank,
                        const int64_t *dims, void *base, size_t offset,
                        struct strata_error *err);
int runtime_bind_output_at(struct rt_ctx *cx, int k, int dtype, int rank, const int64_t *dims,
                           void *base, size_t offset, struct strata_error *err);

/* Output k goes back to memory of the context.  Returns 0 or
 * STRATA_INVALID_ARGUMENT (no such output). */
int runtime_unbind_output(struct rt_ctx *cx, int k, struct strata_error *err);

/* Run with the bound inputs and outputs.  Returns 0,
 * STRATA_INVALID_ARGUMENT (an input is not bound or does not fit, a bound
 * output came out of another type or shape), and runtime_run's other
 * errors. */
int runtime_run_bound(struct rt_ctx *cx, struct strata_error *err);

/* Output k of the last runtime_run_bound on cx: the bound view (its data
 * the caller's memory) when k was bound, else a view of the context's
 * memory valid until the next run.  NULL when k is out of range or that run
 * failed or none happened. */
const struct rt_tensor *runtime_bound_output(struct rt_ctx *cx, int k);

/* ---- profiling -------------------------------------------------------------------
 * Where a context's runs spend their time, per operator type.  Turned on,
 * every later run of the context adds each node's own time (a node that
 * runs a subgraph without the nodes of its subgraph, which count under
 * their own types) and one call to the row of its type ("MatMul",
 * "QuantLinear", ...).  A run of a model with constant-folded nodes counts
 * only the nodes it runs.  Profiling adds two clock reads per node; it is
 * meant for measuring, not for every production run. */
#define RUNTIME_PROFILE_ROWS 64 /* types with a row of their own; more count in "(other)" */
struct rt_op_time {
	const char *op;          /* the operator type, valid while the model is loaded */
	double seconds;          /* the nodes' own time, summed over the runs */
	uint64_t calls;          /* node runs */
};

/* Turn profiling of cx on (on != 0: an empty table, made now, replacing
 * any earlier one; later runs allocate nothing for it) or off (the table
 * is freed).  runtime_ctx_free turns it off.  Returns 0 or STRATA_NOMEM. */
int runtime_ctx_profile(struct rt_ctx *cx, int on, struct strata_error *err);

/* The rows of cx's profile, in the order their types were first counted
 * (a node that runs a subgraph after the nodes of its body); *n gets
 * their number (0 and NULL when profiling is off).  Valid until the
 * profile is turned on again or off, or cx is freed. */
const struct rt_op_time *runtime_ctx_profile_rows(const struct rt_ctx *cx, int *n);

#endif
