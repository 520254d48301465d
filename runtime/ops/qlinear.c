/*
 * qlinear.c: strata.QuantLinear, the dynamically quantized linear layer
 * that the graph optimizer (optimize.c) writes in place of what ONNX
 * Runtime's quantize_dynamic emits for a MatMul with a constant weight:
 *
 *   MatMulInteger(Xq, Wq, Xzp, Wzp) -> Cast(float) -> Mul(., Mul(Xs, Ws))
 *   [-> Add bias] [-> erf-GELU chain] [-> Add residual]
 *
 *   QuantLinear(Xq, Wq, Xzp?, Wzp?, Xs, Ws, B?, R?)
 *       Y = act((float)((Xq - Xzp) (Wq - Wzp)) * (Xs * Ws) + B) + R over
 *       Xq's last axis.  Xq is uint8 or int8 (with its zero point Xzp, one
 *       value, as DynamicQuantizeLinear makes them), Xs one float; Wq a
 *       constant [K,N] of uint8 or int8, packed once at init for the int8
 *       GEMM (qgemm.c), Wzp and Ws constants of one value or one per
 *       column; B [N] a constant, R Y's shape.  act as FusedLinear's
 *       (enum rt_act).  Wq's packing goes into a compiled context and comes
 *       back from it (rt_node_qpack_b).
 *
 * One int8 GEMM whose kernels finish each tile in float: the int32 result,
 * its float copy, the scaled product and the bias never make a pass of
 * their own.  The float operations are the chain's own, in its order (the
 * product of the two scales first, as the Mul computes it), so Y equals
 * the unfused chain's bit for bit without an activation, and within the
 * GELU's rounding (vmath.h) with one.
 *
 * Invariants: the input types and constants are checked at init, every
 * shape at run time (STRATA_RUNTIME naming the node, as the chain would
 * fail).
 */
#include <string.h>

#include "../kernel.h"

struct qlinear {
	struct rt_qpacked_b pb;
	struct rt_packed_b rec;  /* the node's record of pb (rt_node_qpack_b) */
	const void *wzp;        /* Wq's type, one or N values, or NULL */
	int wzstep;
	const float *ws;        /* one or N */
	int wsstep;
	const float *bias;
	int act;
};

static int has_input(const struct rt_node *n, int i)
{
	return i < n->nin && n->in[i] >= 0;
}

static int is_q8(int dt)
{
	return dt == BASE_DT_UINT8 || dt == BASE_DT_INT8;
}

static int run_qlinear(struct rt_node *n, struct rt_exec *x)
{
	const struct qlinear *st = n->state;
	const struct rt_tensor *a = rt_input(x, n, 0), *xs = rt_input(x, n, 4);
	const struct rt_tensor *azp = has_input(n, 2) ? rt_input(x, n, 2) : NULL;
	int64_t K = st->pb.K, N = st->pb.N;
	if (!a || !xs)
		return rt_fail(x, n, STRATA_RUNTIME, "missing input");
	if (a->rank < 1 || a->dims[a->rank - 1] != K)
		return rt_fail(x, n, STRATA_RUNTIME, "X's last dimension is not %lld", (long long)K);
	if (runtime_tensor_count(xs) != 1 || (azp && runtime_tensor_count(azp) != 1))
		return rt_fail(x, n, STRATA_RUNTIME, "X's scale and zero point must be one value each");
	int64_t M = K ? runtime_tensor_count(a) / K : 0;
	int64_t dims[RT_MAX_RANK];
	memcpy(dims, a->dims, sizeof dims);
	dims[a->rank - 1] = N;
	struct rt_tensor *y;
	int rc = rt_output(x, n, 0, BASE_DT_FLOAT, a->rank, dims, &y);
	if (rc)
		return rc;
	const float *res = NULL;
	if (has_input(n, 7)) {
		const struct rt_tensor *r = rt_input(x, n, 7);
		if (r->rank != a->rank || memcmp(r->dims, dims, (size_t)a->rank * sizeof *dims))
			return rt_fail(x, n, STRATA_RUNTIME, "the residual's shape differs from Y's");
		res = r->data;
	}
	if (M == 0 || N == 0)
		return 0;
	void *scratch = rt_scratch_or_fail(x, n, rt_qgemm_scratch_bytes(M, K, N));
	if (!scratch)
		return STRATA_NOMEM;
	struct rt_qgemm_args g = {
		.adt = a->dtype, .M = M, .A = a->data, .lda = K, .za = azp ? azp->data : NULL,
		.zb = st->wzp, .zbstep = st->wzstep, .cf = y->data, .ldc = N,
		.ascale = *(const float *)xs->data, .bscale = st->ws, .bsstep = st->wsstep,
		.bias = st->bias, .act = st->act, .res = res, .ldr = N,
	};
	rt_qgemm(&g, &st->pb, scratch);
	return 0;
}

static void fini_qlinear(struct rt_node *n)
{
	struct qlinear *st = n->state;
	if (st) {
		rt_qpacked_b_free(&st->pb);
		base_free(st, sizeof *st);
	}
	n->state = NULL;
}

/* Constant input i of n when it has 1 or N cells of type dt: its data and
 * the step (0 or 1); NULL otherwise. */
static const void *per_column(struct rt_graph *g, const struct rt_node *n, int i, int dt,
                              int64_t N, int *step)
{
	const struct rt_tensor *t = rt_graph_const(g, n->in[i]);
	if (!t || t->dtype != dt || !t->data)
		return NULL;
	int64_t c = runtime_tensor_count(t);
	*step = c != 1;
	return c == 1 || (c == N && t->rank == 1) ? t->data : NULL;
}

static int init_qlinear(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	if (n->nin < 6 || n->nin > 8 || n->nout < 1 || n->out[0] < 0 || !has_input(n, 0) ||
	    !has_input(n, 1) || !has_input(n, 4) || !has_input(n, 5))
		return rt_node_err(n, err, STRATA_INVALID_GRAPH,
		                   "takes Xq, Wq, Xzp?, Wzp?, Xs, Ws, B?, R?");
	int adt = rt_graph_dtype(g, n->in[0]);
	const struct rt_tensor *w = rt_graph_const(g, n->in[1]);
	if (!is_q8(adt) || !w || !is_q8(w->dtype) || w->rank != 2 || (!w->data && !n->pre))
		return rt_node_err(n, err, STRATA_INVALID_GRAPH,
		                   "Xq must be 8-bit and Wq a 2-D 8-bit constant");
	if ((has_input(n, 2) && rt_graph_dtype(g, n->in[2]) != adt) ||
	    rt_graph_dtype(g, n->in[4]) != BASE_DT_FLOAT ||
	    (has_input(n, 7) && rt_graph_dtype(g, n->in[7]) != BASE_DT_FLOAT))
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "an input has the wrong type");
	int act = (int)rt_attr_int(n, "act", RT_ACT_NONE);
	if (act != RT_ACT_NONE && act != RT_ACT_RELU && act != RT_ACT_GELU_ERF)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "unknown activation %d", act);
	int64_t K = w->dims[0], N = w->dims[1];
	struct qlinear st = { .act = act };
	if (has_input(n, 3) && !(st.wzp = per_column(g, n, 3, w->dtype, N, &st.wzstep)))
		return rt_node_err(n, err, STRATA_INVALID_GRAPH,
		                   "Wzp must be a constant of Wq's type, 1 or %lld values", (long long)N);
	if (!(st.ws = per_column(g, n, 5, BASE_DT_FLOAT, N, &st.wsstep)))
		return rt_node_err(n, err, STRATA_INVALID_GRAPH,
		                   "Ws must be a float constant of 1 or %lld values", (long long)N);
	if (has_input(n, 6)) {
		const struct rt_tensor *b = rt_graph_const(g, n->in[6]);
		if (!b || b->dtype != BASE_DT_FLOAT || !b->data || runtime_tensor_count(b) != N)
			return rt_node_err(n, err, STRATA_INVALID_GRAPH,
			                   "B must be a constant of %lld cells", (long long)N);
		st.bias = b->data;
	}
	struct qlinear *s = base_calloc(1, sizeof *s);
	if (!s)
		return rt_node_nomem(n, err, "kernel state");
	*s = st;
	int rc = rt_node_qpack_b(n, w->dtype, K, N, w->data, N, &s->pb, &s->rec, err);
	if (rc) {
		base_free(s, sizeof *s);
		return rc;
	}
	rt_graph_release_const(g, n->in[1]); /* the packing is all it reads */
	n->state = s;
	rt_graph_set_dtype(g, n->out[0], BASE_DT_FLOAT);
	n->run = run_qlinear;
	return 0;
}

const struct rt_opdef rt_ops_qlinear[] = {
	{ "strata", "QuantLinear", 1, init_qlinear, fini_qlinear },
	{ .op = NULL },
};
