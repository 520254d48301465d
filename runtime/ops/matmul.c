/*
 * matmul.c: MatMul and Gemm.
 *
 * MatMul follows numpy: a 1-D operand is promoted to a matrix (a row for A,
 * a column for B) and the promoted dimension is dropped from the result;
 * leading (batch) dimensions broadcast.  Gemm is the 2-D
 * Y = alpha * op(A) * op(B) + beta * C with C broadcast to [M, N].
 *
 * Float goes through rt_sgemm (ops/gemm.c); double and the integer types
 * use plain loops, with integer arithmetic wrapping as two's complement (the
 * products are computed in the unsigned type of the same width so overflow
 * is defined).  Shapes are only known at run time, so init() checks types
 * and attributes and run() checks dimensions.
 *
 * A float B that is a constant of the model (the weights of a dense layer)
 * is packed at init into the GEMM kernel's layout (rt_sgemm_pack_b, kept in
 * n->state) and its original cells are released to the loader, so runs
 * never repack it and the model holds one copy.  Gemm's C given as a bias
 * row ([N] or [1,N]) with beta 1 is added by the GEMM kernel as it stores
 * each tile rather than copied into Y first.
 */
#include <string.h>

#include "../kernel.h"

/* ---- shared helpers ---------------------------------------------------------- */

static int numeric_type(int dt)
{
	return dt == BASE_DT_FLOAT || dt == BASE_DT_DOUBLE || dt == BASE_DT_INT32 ||
	       dt == BASE_DT_INT64 || dt == BASE_DT_UINT32 || dt == BASE_DT_UINT64;
}

/* Check that inputs 0 and 1 have one supported element type; set output 0. */
static int init_types(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	if (n->nin < 2 || n->in[0] < 0 || n->in[1] < 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "needs inputs A and B");
	if (n->nout < 1 || n->out[0] < 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "needs an output");
	int ta = rt_graph_dtype(g, n->in[0]), tb = rt_graph_dtype(g, n->in[1]);
	if (ta != tb)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "A is %s but B is %s",
		                   base_dtype_name(ta), base_dtype_name(tb));
	if (!numeric_type(ta))
		return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED,
		                   "%s (opset %d) has no kernel for element type %s", n->op,
		                   n->opset, base_dtype_name(ta));
	rt_graph_set_dtype(g, n->out[0], ta);
	return 0;
}

/* Y[M,N] (+)= A[M,K] * B[K,N] for one matrix pair, with row strides
 * lda/ldb/ldy and element strides sa/sb (so transposes need no copy). */
#define DEFINE_MM(name, T, U)                                                            \
	static void name(int64_t M, int64_t N, int64_t K, const T *A, int64_t lda,       \
	                 int64_t sa, const T *B, int64_t ldb, int64_t sb, T *Y,           \
	                 int64_t ldy, T alpha, T beta, int accumulate)                     \
	{                                                                                 \
		for (int64_t i = 0; i < M; i++) {                                         \
			for (int64_t j = 0; j < N; j++) {                                 \
				U s = 0;                                                  \
				for (int64_t k = 0; k < K; k++)                           \
					s += (U)A[i * lda + k * sa] * (U)B[k * ldb + j * sb]; \
				T *y = &Y[i * ldy + j];                                   \
				*y = accumulate ? (T)((U)alpha * s + (U)beta * (U)*y)     \
				                : (T)((U)alpha * s);                      \
			}                                                                 \
		}                                                                         \
	}

DEFINE_MM(mm_f64, double, double)
DEFINE_MM(mm_i32, int32_t, uint32_t)
DEFINE_MM(mm_i64, int64_t, uint64_t)
DEFINE_MM(mm_u32, uint32_t, uint32_t)
DEFINE_MM(mm_u64, uint64_t, uint64_t)

/* One matrix product of element type dt (strides in elements). */
static void mm_any(int dt, int transa, int transb, int64_t M, int64_t N, int64_t K,
                   const void *A, int64_t lda, const void *B, int64_t ldb, void *Y,
                   int64_t ldy, double alpha, double beta, int accumulate)
{
	/* op(A)[i,k] = A[i*lda + k] or A[k*lda + i] */
	int64_t ra = transa ? 1 : lda, ka = transa ? lda : 1;
	int64_t kb = transb ? 1 : ldb, cb = transb ? ldb : 1;
	switch (dt) {
	case BASE_DT_FLOAT:
		rt_sgemm(transa, transb, M, N, K, (float)alpha, A, lda, B, ldb,
		         accumulate ? (float)beta : 0.0f, Y, ldy);
		break;
	case BASE_DT_DOUBLE:
		mm_f64(M, N, K, A, ra, ka, B, kb, cb, Y, ldy, alpha, beta, accumulate);
		break;
	case BASE_DT_INT32:
		mm_i32(M, N, K, A, ra, ka, B, kb, cb, Y, ldy, (int32_t)alpha, (int32_t)beta,
		       accumulate);
		break;
	case BASE_DT_INT64:
		mm_i64(M, N, K, A, ra, ka, B, kb, cb, Y, ldy, (int64_t)alpha, (int64_t)beta,
		       accumulate);
		break;
	case BASE_DT_UINT32:
		mm_u32(M, N, K, A, ra, ka, B, kb, cb, Y, ldy, (uint32_t)alpha, (uint32_t)beta,
		       accumulate);
		break;
	case BASE_DT_UINT64:
		mm_u64(M, N, K, A, ra, ka, B, kb, cb, Y, ldy, (uint64_t)alpha, (uint64_t)beta,
		       accumulate);
		break;
	default:
		BASE_ASSERT(!"type checked by init");
	}
}

/* ---- MatMul ---------------------------------------------------------------- */

static int run_matmul(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *a = rt_input(x, n, 0), *b = rt_input(x, n, 1);
	if (!a || !b)
		return rt_fail(x, n, STRATA_RUNTIME, "missing input");
	if (a->rank < 1 || b->rank < 1)
		return rt_fail(x, n, STRATA_RUNTIME, "operands must have rank >= 1 (got %d and %d)",
		               a->rank, b->rank);
	int dt = a->dtype;
	size_t es = base_dtype_size(dt);

	const struct rt_packed_b *pk = n->state;

	/* Matrix views after 1-D promotion. */
	int64_t M = a->rank == 1 ? 1 : a->dims[a->rank - 2];
	int64_t K = a->dims[a->rank - 1];
	int64_t Kb = b->rank == 1 ? b->dims[0] : b->dims[b->rank - 2];
	int64_t N = b->rank == 1 ? 1 : b->dims[b->rank - 1];
	if (K != Kb)
		return rt_fail(x, n, STRATA_RUNTIME,
		               "inner dimensions differ: A has %lld columns, B has %lld rows",
		               (long long)K, (long long)Kb);

	/* Batch dimensions, right-aligned and broadcast. */
	int ba = a->rank > 2 ? a->rank - 2 : 0, bb = b->rank > 2 ? b->rank - 2 : 0;
	int br = ba > bb ? ba : bb;
	int64_t bd[RT_MAX_RANK], sa[RT_MAX_RANK], sb[RT_MAX_RANK];
	int64_t nbatch = 1;
	for (int i = 0; i < br; i++) {
		int ia = i - (br - ba), ib = i - (br - bb);
		int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
		if (da != db && da != 1 && db != 1)
			return rt_fail(x, n, STRATA_RUNTIME,
			               "batch dimensions do not broadcast: %lld vs %lld",
			               (long long)da, (long long)db);
		bd[i] = da == 1 ? db : da;
		if (bd[i] != 0 && nbatch > INT64_MAX / bd[i])
			return rt_fail(x, n, STRATA_LIMIT, "output too large");
		nbatch *= bd[i];
	}
	/* Element strides of each batch dimension in A and B (0 when broadcast). */
	int64_t stra = M * K, strb = K * N;
	for (int i = br - 1; i >= 0; i--) {
		int ia = i - (br - ba), ib = i - (br - bb);
		int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
		sa[i] = da == 1 ? 0 : stra;
		sb[i] = db == 1 ? 0 : strb;
		stra *= da;
		strb *= db;
	}

	int64_t od[RT_MAX_RANK];
	int orank = 0;
	for (int i = 0; i < br; i++)
		od[orank++] = bd[i];
	if (a->rank > 1)
		od[orank++] = M;
	if (b->rank > 1)
		od[orank++] = N;
	struct rt_tensor *y;
	int rc = rt_output(x, n, 0, dt, orank, od, &y);
	if (rc)
		return rc;
	if (nbatch == 0 || M == 0 || N == 0)
		return 0;

	/* B shared by every batch and A not broadcast: A's batches are one
	 * contiguous [nbatch*M, K] matrix, so a single tall product does it (the
	 * common activations-times-weights case). */
	int tall = ba == br;
	for (int i = 0; tall && i < br; i++)
		tall = sb[i] == 0 && a->dims[i] == bd[i];
	if (tall && pk) {
		rt_sgemm_pb(0, nbatch * M, 1.0f, a->data, K, pk, 0.0f, y->data, N, NULL);
		return 0;
	}
	if (tall) {
		mm_any(dt, 0, 0, nbatch * M, N, K, a->data, K, b->data, N, y->data, N, 1.0, 0.0, 0);
		return 0;
	}
	if (!b->data)
		return rt_fail(x, n, STRATA_RUNTIME, "weights released but not packed");

	int64_t idx[RT_MAX_RANK] = {0};
	char *yp = y->data;
	for (int64_t t = 0; t < nbatch; t++) {
		int64_t oa = 0, ob = 0;
		for (int i = 0; i < br; i++) {
			oa += idx[i] * sa[i];
			ob += idx[i] * sb[i];
		}
		mm_any(dt, 0, 0, M, N, K, (const char *)a->data + oa * es, K,
		       (const char *)b->data + ob * es, N, yp + (size_t)(t * M * N) * es, N, 1.0,
		       0.0, 0);
		for (int i = br - 1; i >= 0; i--) {
			if (++idx[i] < bd[i])
				break;
			idx[i] = 0;
		}
	}
	return 0;
}

/* The packed copy of constant float input in[1], or NULL when B is not
 * such a constant (or has no data) and the kernel reads it at run time.
 * A 1-D B is MatMul's K x 1 column. */
static int pack_const_b(struct rt_node *n, struct rt_graph *g, int transb,
                        struct rt_packed_b **out, struct strata_error *err)
{
	*out = NULL;
	const struct rt_tensor *b = rt_graph_const(g, n->in[1]);
	if (!b || b->dtype != BASE_DT_FLOAT || (!b->data && !n->pre) || b->rank < 1 || b->rank > 2)
		return 0;
	int64_t r = b->dims[0], c = b->rank == 2 ? b->dims[1] : 1;
	int64_t K = transb ? c : r, N = transb ? r : c;
	if (K <= 0 || N <= 0)
		return 0;
	struct rt_packed_b *pk = base_alloc(sizeof *pk);
	if (!pk)
		return rt_node_nomem(n, err, "kernel state");
	int rc = rt_node_pack_b(n, g, transb, K, N, b->data, c, pk, err);
	if (rc != 0) {
		base_free(pk, sizeof *pk);
		return rc;
	}
	/* the loader frees B once no other running reader needs it */
	rt_graph_release_const(g, n->in[1]);
	*out = pk;
	return 0;
}

static void fini_matmul(struct rt_node *n)
{
	struct rt_packed_b *pk = n->state;
	if (pk) {
		rt_packed_b_free(pk);
		base_free(pk, sizeof *pk);
	}
	n->state = NULL;
}

static int init_matmul(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	int rc = init_types(n, g, err);
	if (rc)
		return rc;
	struct rt_packed_b *pk = NULL;
	if (rt_graph_dtype(g, n->in[0]) == BASE_DT_FLOAT) {
		rc = pack_const_b(n, g, 0, &pk, err);
		if (rc)
			return rc;
	}
	n->state = pk;
	n->run = run_matmul;
	return 0;
}

/* ---- Gemm ------------------------------------------------------------------ */

struct gemm_state {
	int transa, transb;
	float alpha, beta;
	struct rt_packed_b *pk; /* B packed at init, or NULL */
};

/* Broadcast C (rank <= 2, unidirectionally) into Y[M,N]. */
static int fill_c(struct rt_exec *x, const struct rt_node *n, const struct rt_tensor *c,
                  struct rt_tensor *y, int64_t M, int64_t N)
{
	if (c->rank > 2)
		return rt_fail(x, n, STRATA_RUNTIME, "C has rank %d, at most 2 allowed", c->rank);
	int64_t cm = c->rank == 2 ? c->dims[0] : 1;
	int64_t cn = c->rank >= 1 ? c->dims[c->rank - 1] : 1;
	if ((cm != 1 && cm != M) || (cn != 1 && cn != N))
		return rt_fail(x, n, STRATA_RUNTIME,
		               "C of shape [%lld,%lld] does not broadcast to [%lld,%lld]",
		               (long long)cm, (long long)cn, (long long)M, (long long)N);
	if (c->dtype != y->dtype)
		return rt_fail(x, n, STRATA_RUNTIME, "C is %s, A and B are %s",
		               base_dtype_name(c->dtype), base_dtype_name(y->dtype));
	size_t es = base_dtype_size(y->dtype);
	const char *src = c->data;
	char *dst = y->data;
	for (int64_t i = 0; i < M; i++) {
		const char *row = src + (size_t)((cm == 1 ? 0 : i) * cn) * es;
		char *out = dst + (size_t)(i * N) * es;
		if (cn == N) {
			memcpy(out, row, (size_t)N * es);
		} else {
			for (int64_t j = 0; j < N; j++)
				memcpy(out + (size_t)j * es, row, es);
		}
	}
	return 0;
}

static int run_gemm(struct rt_node *n, struct rt_exec *x)
{
	const struct gemm_state *s = n->state;
	const struct rt_tensor *a = rt_input(x, n, 0), *b = rt_input(x, n, 1);
	const struct rt_tensor *c = rt_input(x, n, 2);
	if (!a || !b)
		return rt_fail(x, n, STRATA_RUNTIME, "missing input");
	if (a->rank != 2 || b->rank != 2)
		return rt_fail(x, n, STRATA_RUNTIME, "A and B must be 2-D (got rank %d and %d)",
		               a->rank, b->rank);
	if (!s->pk && !b->data)
		return rt_fail(x, n, STRATA_RUNTIME, "weights released but not packed");
	int64_t M = s->transa ? a->dims[1] : a->dims[0];
	int64_t K = s->transa ? a->dims[0] : a->dims[1];
	int64_t Kb = s->transb ? b->dims[1] : b->dims[0];
	int64_t N = s->transb ? b->dims[0] : b->dims[1];
	if (K != Kb)
		return rt_fail(x, n, STRATA_RUNTIME,
		               "inner dimensions differ: op(A) has %lld columns, op(B) %lld rows",
		               (long long)K, (long long)Kb);
	struct rt_tensor *y;
	int64_t od[2] = {M, N};
	int rc = rt_output(x, n, 0, a->dtype, 2, od, &y);
	if (rc)
		return rc;
	if (M == 0 || N == 0)
		return 0;
	if (a->dtype == BASE_DT_FLOAT) {
		/* C as a bias row, added by the kernel as it stores C */
		int bias = c && s->beta == 1.0f && c->dtype == BASE_DT_FLOAT &&
		           ((c->rank == 1 && c->dims[0] == N) ||
		            (c->rank == 2 && c->dims[0] == 1 && c->dims[1] == N));
		if (bias || !c || s->beta == 0.0f) {
			if (c && c->rank > 2)
				return rt_fail(x, n, STRATA_RUNTIME, "C has rank %d, at most 2 allowed",
				               c->rank);
			struct rt_epilogue ep = {bias ? c->data : NULL, RT_ACT_NONE, NULL, 0};
			if (s->pk)
				rt_sgemm_pb(s->transa, M, s->alpha, a->data, a->dims[1], s->pk, 0.0f,
				            y->data, N, &ep);
			else
				rt_sgemm_ex(s->transa, s->transb, M, N, K, s->alpha, a->data,
				            a->dims[1], b->data, b->dims[1], 0.0f, y->data, N, &ep);
			return 0;
		}
		if (s->pk) {
			rc = fill_c(x, n, c, y, M, N);
			if (rc)
				return rc;
			rt_sgemm_pb(s->transa, M, s->alpha, a->data, a->dims[1], s->pk, s->beta,
			            y->data, N, NULL);
			return 0;
		}
	}
	int accumulate = 0;
	if (c && s->beta != 0.0f) {
		rc = fill_c(x, n, c, y, M, N);
		if (rc)
			return rc;
		accumulate = 1;
	} else if (c && c->rank > 2) {
		return rt_fail(x, n, STRATA_RUNTIME, "C has rank %d, at most 2 allowed", c->rank);
	}
	mm_any(a->dtype, s->transa, s->transb, M, N, K, a->data, a->dims[1], b->data, b->dims[1],
	       y->data, N, s->alpha, s->beta, accumulate);
	return 0;
}

static void fini_gemm(struct rt_node *n)
{
	struct gemm_state *s = n->state;
	if (s && s->pk) {
		rt_packed_b_free(s->pk);
		base_free(s->pk, sizeof *s->pk);
	}
	base_free(n->state, sizeof(struct gemm_state));
	n->state = NULL;
}

static int init_gemm(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	int rc = init_types(n, g, err);
	if (rc)
		return rc;
	int has_c = n->nin >= 3 && n->in[2] >= 0;
	if (!has_c && n->opset < 11)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH,
		                   "input C is required before opset 11 (model has opset %d)",
		                   n->opset);
	if (has_c && rt_graph_dtype(g, n->in[2]) != rt_graph_dtype(g, n->in[0]))
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "C is %s, A and B are %s",
		                   base_dtype_name(rt_graph_dtype(g, n->in[2])),
		                   base_dtype_name(rt_graph_dtype(g, n->in[0])));
	struct gemm_state *s = base_alloc(sizeof *s);
	if (!s)
		return rt_node_nomem(n, err, "kernel state");
	s->transa = rt_attr_int(n, "transA", 0) != 0;
	s->transb = rt_attr_int(n, "transB", 0) != 0;
	s->alpha = rt_attr_float(n, "alpha", 1.0f);
	s->beta = rt_attr_float(n, "beta", 1.0f);
	s->pk = NULL;
	if (rt_graph_dtype(g, n->in[0]) == BASE_DT_FLOAT) {
		const struct rt_tensor *b = rt_graph_const(g, n->in[1]);
		if (b && b->rank == 2 && (rc = pack_const_b(n, g, s->transb, &s->pk, err)) != 0) {
			base_free(s, sizeof *s);
			return rc;
		}
	}
	n->state = s;
	n->run = run_gemm;
	return 0;
}

const struct rt_opdef rt_ops_matmul[] = {
	{"", "MatMul", 1, init_matmul, fini_matmul},
	{"", "Gemm", 1, init_gemm, fini_gemm},
	{.op = NULL},
};
