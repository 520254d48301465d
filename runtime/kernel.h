/*
 * kernel.h: what an operator kernel of runtime/ops/ sees.  At init (struct
 * rt_opdef, runtime_int.h) a kernel reads its node and the graph; while
 * running it reads its inputs and makes its outputs through the functions
 * here, never through the run context's fields (exec_int.h).  Also: the
 * operator registry and the GEMM that several families share.
 */
#ifndef RUNTIME_KERNEL_H
#define RUNTIME_KERNEL_H

#include "runtime_int.h"

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
/* The one way a kernel reports a failed allocation: rt_fail with
 * STRATA_NOMEM and "out of memory: what". */
int rt_nomem(struct rt_exec *x, const struct rt_node *n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

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

/* Run subgraph sg of the running node n with in[0..sg->ninputs-1].  out[]
 * receives sg->noutputs views, valid until the next run of sg from the same
 * node or until n returns.  in[] may point at the outputs of the previous run
 * of sg (loop-carried values): they stay valid during the run.  Returns 0 or
 * an rt_fail code naming n. */
int rt_subgraph_run(struct rt_exec *x, const struct rt_node *n, const struct rt_graph *sg,
                    const struct rt_arg *in, struct rt_arg *out);

/* Identity for sequences and optionals (ops/sequence.c). */
extern const struct rt_opdef rt_op_identity_value;

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
extern const struct rt_opdef rt_ops_qlinear[];   /* ops/qlinear.c: strata.QuantLinear (made by optimize.c) */
extern const struct rt_opdef rt_ops_fused[];     /* ops/fused.c: strata.FusedLinear, SkipLayerNorm, Attention (made by optimize.c) */
extern const struct rt_opdef rt_ops_epcontext[]; /* ops/epcontext.c: com.microsoft EPContext in a mixed graph */

/* ---- GEMM core (ops/gemm.c) --------------------------------------------------
 * C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C, row-major, with leading
 * dimensions lda, ldb, ldc; op(X) = X or X^T.  beta == 0 ignores C's old
 * content (NaN included). */
void rt_sgemm(int transa, int transb, int64_t M, int64_t N, int64_t K, float alpha,
              const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
              float *C, int64_t ldc);

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
/* For init(): pack constant B for node n of g (as rt_sgemm_pack_b, or as
 * bfloat16 when g's model has session.bf16_weights and the machine runs
 * it) and note it on the node.  In a model from a context the node's next mapped packing is
 * taken instead (B may then be NULL): it must be K x N with a valid layout,
 * else STRATA_INVALID_GRAPH.  Returns 0, STRATA_NOMEM, STRATA_LIMIT (more
 * than RT_NODE_PACKS), STRATA_INVALID_GRAPH; err names the node. */
/* The context's packing that node n takes next (*pre; NULL in a model not
 * from a context), for a kernel's own pack function.  Returns 0,
 * STRATA_LIMIT or STRATA_INVALID_GRAPH (the context holds fewer). */
int rt_node_next_pack(struct rt_node *n, const struct rt_packed_b **pre, struct strata_error *err);
int rt_node_pack_b(struct rt_node *n, const struct rt_graph *g, int transb, int64_t K, int64_t N,
                   const float *B, int64_t ldb, struct rt_packed_b *pb, struct strata_error *err);
/* ---- weights packed as bfloat16 (ops/gemm_bf16.c) ---------------------------
 * With session.bf16_weights, rt_node_pack_b packs a constant B as bfloat16
 * (pb->isa RT_PACK_BF16) where the machine has AVX512-BF16 and AVX-512 is in
 * use, and rt_sgemm_pb then multiplies with vdpbf16ps, A rounded to
 * bfloat16 at each call: results within about 2^-8 of the float GEMM's
 * magnitudes, not equal to them. */
enum { RT_PACK_BF16 = 3 };
/* The largest K packed as bfloat16 (larger stays float). */
int64_t rt_bgemm_kmax(void);
size_t rt_bgemm_pack_bytes(int64_t K, int64_t N);
/* Pack B (as rt_sgemm_pack_b takes it) into mem (rt_bgemm_pack_bytes,
 * 64-byte aligned) and describe it in *pb (owned 0).  AVX512-BF16 only. */
void rt_bgemm_pack_into(int transb, int64_t K, int64_t N, const float *B, int64_t ldb,
                        void *mem, struct rt_packed_b *pb);
/* rt_sgemm_pb for a B packed as bfloat16.  AVX512-BF16 only. */
void rt_bgemm(int transa, int64_t M, float alpha, const float *A, int64_t lda,
              const struct rt_packed_b *pb, float beta, float *C, int64_t ldc,
              const struct rt_epilogue *ep);

/* C[M,N] = alpha * op(A)[M,K] * B + beta * C, then the epilogue (ep may be NULL). */
void rt_sgemm_pb(int transa, int64_t M, float alpha, const float *A, int64_t lda,
                 const struct rt_packed_b *pb, float beta, float *C, int64_t ldc,
                 const struct rt_epilogue *ep);
/* rt_sgemm followed by the epilogue. */
void rt_sgemm_ex(int transa, int transb, int64_t M, int64_t N, int64_t K, float alpha,
                 const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                 float *C, int64_t ldc, const struct rt_epilogue *ep);

/* The packing layout version this build writes and reads (ops/gemm.c). */
int rt_packed_b_layout(void);

/* ---- DynamicQuantizeLinear on AVX-512 (ops/quant_avx512.c) -----------------
 * The bulk of its two passes where rt_cpu_isa() is RT_ISA_AVX512; each
 * returns how many leading cells it did (a multiple of 64 or 16), the
 * caller does the rest.  The range: the smallest and largest of those cells
 * (0 included) and whether one is NaN.  The quantization: q = saturate(
 * rint(v / scale) + zp) to [0, 255], as quant.c's loop computes it. */
int64_t rt_dq_range_avx512(const float *v, int64_t n, float *lo, float *hi, int *nan);
int64_t rt_dq_quantize_avx512(const float *v, int64_t n, float scale, float zp, uint8_t *q);

/* ---- int8 GEMM (ops/qgemm.c) -------------------------------------------------
 * C[M,N] = (A - za) (B - zb) with A and B each uint8 or int8, summed in int32
 * (wrapping, exact modulo 2^32), stored as int32 or converted to float and
 * scaled: the core of MatMulInteger, QLinearMatMul and the fused dynamically
 * quantized linear layer.  Runs on AMX tiles where the machine has them and
 * Linux grants them, else on AVX512-VNNI where the machine has it and
 * AVX-512 is in use, else on AVX-VNNI where the machine has that, else on
 * AVX2 (rt_qgemm_isa); the results are the same bit for bit. */

/* B (K x N, row-major, uint8 or int8) packed for the int8 kernels: strips
 * of 16 columns, for each group of 4 k the strip's 16 x 4 bytes, stored as
 * signed bytes (a uint8 b as b - 128), zero-padded to whole groups of 64 k
 * (one AMX tile) and 64 columns; with each column's sum of the stored bytes.  The layout
 * is the same for every ISA. */
struct rt_qpacked_b {
	int64_t K, N;
	int bdt;          /* BASE_DT_UINT8 or BASE_DT_INT8: B's type */
	int owned;        /* 1: data is base_alloc'd and freed by rt_qpacked_b_free */
	int8_t *data;     /* the strips, then colsum; bytes in all */
	int32_t *colsum;  /* N */
	size_t bytes;
};
/* Bytes that the packing of a K x N B takes. */
size_t rt_qgemm_pack_bytes(int64_t K, int64_t N);
/* Pack B (ldb bytes between rows) into mem (rt_qgemm_pack_bytes of it; not
 * owned by pb). */
void rt_qgemm_pack_into(int bdt, int64_t K, int64_t N, const void *B, int64_t ldb, void *mem,
                        struct rt_qpacked_b *pb);
/* Pack B into memory of its own.  Returns 0 or STRATA_NOMEM. */
int rt_qgemm_pack_b(int bdt, int64_t K, int64_t N, const void *B, int64_t ldb,
                    struct rt_qpacked_b *pb);
void rt_qpacked_b_free(struct rt_qpacked_b *pb);
/* The layout version an int8 packing carries in a node's pack record (a
 * struct rt_packed_b whose isa is B's type and nr, kc 0), so that a
 * compiled context stores it beside the float packings and gives it back. */
#define RT_QPACK_VERSION 0x51380002
/* Node n's next weights for the int8 kernels, as rt_node_pack_b does for
 * the float ones: in a model loaded from a context, taken from the
 * context's packs (checked against K, N and B's type); else packed from B.
 * rec, which must live as long as pb, becomes the node's record of it. */
int rt_node_qpack_b(struct rt_node *n, int bdt, int64_t K, int64_t N, const void *B, int64_t ldb,
                    struct rt_qpacked_b *pb, struct rt_packed_b *rec, struct strata_error *err);

/* One product's operands besides B.  Zero points have the type of their
 * operand (A's adt, B's pb->bdt); NULL means 0; step 0 means one value,
 * 1 one per row of A (M) or column of B (N).  Exactly one of ci and cf is
 * set: ci receives the int32 sums, cf (float)sum * (ascale * bscale[j])
 * + bias[j] (bias may be NULL; bscale one value when bsstep is 0), the
 * float operations of Cast, Mul and Add in that order, then act (RT_ACT_*)
 * and + res[i * ldr + j] (res may be NULL; it may not alias cf). */
struct rt_qgemm_args {
	int adt;
	int64_t M;
	const void *A;
	int64_t lda;
	const void *za, *zb;
	int zastep, zbstep;
	int32_t *ci;
	float *cf;
	int64_t ldc;
	float ascale;
	const float *bscale;
	int bsstep;
	const float *bias;
	int act;
	const float *res;
	int64_t ldr;
};
/* Scratch bytes rt_qgemm needs for M x K times K x N. */
size_t rt_qgemm_scratch_bytes(int64_t M, int64_t K, int64_t N);
/* C = (A - za) (pb - zb), see struct rt_qgemm_args.  scratch: at least
 * rt_qgemm_scratch_bytes(M, pb->K, pb->N).  Reentrant. */
void rt_qgemm(const struct rt_qgemm_args *g, const struct rt_qpacked_b *pb, void *scratch);
/* The kernel rt_qgemm runs now: RT_QGEMM_AMX (tdpbusd on AMX tiles, where
 * rt_cpu_amx() says so), RT_QGEMM_VNNI (AVX512-VNNI, zmm), RT_QGEMM_VNNI256
 * (vpdpbusd on ymm: AVX-VNNI) or RT_QGEMM_AVX2. */
enum { RT_QGEMM_AVX2 = 1, RT_QGEMM_VNNI = 2, RT_QGEMM_VNNI256 = 3, RT_QGEMM_AMX = 4 };
int rt_qgemm_isa(void);
/* Test hook: run kernel kind (an RT_QGEMM_* value) from now on, 0 to go
 * back to the automatic choice.  RT_QGEMM_VNNI256 runs on AVX-VNNI machines
 * and, in its EVEX encoding, on AVX-512 ones with VNNI.  Returns 0,
 * STRATA_NOT_IMPLEMENTED (the machine cannot run kind) or
 * STRATA_INVALID_ARGUMENT.  Not for use while other threads run kernels. */
int rt_qgemm_force(int kind);

#endif
