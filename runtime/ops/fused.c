/*
 * fused.c: Strata's own fused operators, domain "strata", which the graph
 * optimizer (optimize.c) writes in place of the exporters' chains of small
 * ONNX nodes.  They are ordinary nodes with ordinary inputs and attributes,
 * so a graph holding them (a compiled context, say) loads and checks like
 * any other:
 *
 *   FusedLinear(X, W, B?, R?, X2?, ...)  Y = act(X W + B) + R, over X's
 *       last axis.  W is a constant [K,N] ([N,K] with transB=1), packed once
 *       at init; B [N] a constant; R has Y's shape.  act: 0 none, 1 Relu,
 *       2 erf-GELU (enum rt_act).  One GEMM with its epilogue: no pass of
 *       its own for the bias, the activation or the residual.  With the
 *       ints attribute `splits` (k entries summing to K), X is given in k
 *       pieces along its last axis, inputs 0, 4, 5, ..., k + 2: the Concat
 *       that would join them is folded in as k GEMMs over the matching row
 *       blocks of W (packed as k blocks), each reading its piece in place
 *       and accumulating into Y, the epilogue on the last.
 *   SkipLayerNorm(X, S?, gamma, beta?)  LayerNormalization(X + S) over the
 *       last axis, epsilon attribute.  S has X's trailing dims, its leading
 *       dims may be 1 (a position table added to every batch row).
 *   Attention(Q, K, V, M?)  softmax(scale * Q_h K_h^T + M) V_h per batch and
 *       head h, for Q, K, V in the [batch, seq, heads*dim] layout the
 *       projections produce: the head split is read with strides instead of
 *       a Reshape + Transpose.  M broadcasts to [batch, heads, seq_q, seq_k].
 *       Output [batch, seq_q, heads*dim] (out_layout 0, the inverse
 *       Transpose + Reshape folded in) or [batch, heads, seq_q, dim] (1).
 *
 * Invariants: inputs are float; every shape is checked at run time (a bad
 * shape is STRATA_RUNTIME naming the node, as the unfused chain would fail);
 * results match the unfused chains within float rounding.
 */
#include <math.h>
#include <string.h>

#include "../kernel.h"
#include "attn.h"
#include "vmath.h"

static int float_input(struct rt_node *n, struct rt_graph *g, int i, int required,
                       struct strata_error *err)
{
	if (i >= n->nin || n->in[i] < 0) {
		if (required)
			return rt_node_err(n, err, STRATA_INVALID_GRAPH, "input %d is missing", i);
		return 0;
	}
	if (rt_graph_dtype(g, n->in[i]) != BASE_DT_FLOAT)
		return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED, "input %d: element type %s", i,
		                   base_dtype_name(rt_graph_dtype(g, n->in[i])));
	return 0;
}

static const float *const_floats(struct rt_graph *g, const struct rt_node *n, int i,
                                 int64_t count)
{
	if (i >= n->nin || n->in[i] < 0)
		return NULL;
	const struct rt_tensor *t = rt_graph_const(g, n->in[i]);
	if (!t || t->dtype != BASE_DT_FLOAT || runtime_tensor_count(t) != count)
		return NULL;
	return t->data;
}

static int has_input(const struct rt_node *n, int i)
{
	return i < n->nin && n->in[i] >= 0;
}

/* ---- FusedLinear -------------------------------------------------------------------- */

#define MAXPARTS 8 /* pieces of a split X (a Concat folded in) */

struct linear {
	struct rt_packed_b pb[MAXPARTS]; /* one per piece of X, K rows each */
	int nparts;
	const float *bias;
	int act;
};

/* Input index of piece p of X. */
static int part_input(int p)
{
	return p == 0 ? 0 : 3 + p;
}

static int run_linear(struct rt_node *n, struct rt_exec *x)
{
	const struct linear *st = n->state;
	const struct rt_tensor *a = rt_input(x, n, 0);
	int64_t K = st->pb[0].K, N = st->pb[0].N;
	if (a->rank < 1 || a->dims[a->rank - 1] != K)
		return rt_fail(x, n, STRATA_RUNTIME, "X's last dimension is not %lld", (long long)K);
	int64_t M = K ? runtime_tensor_count(a) / K : 0;
	/* The pieces share X's leading dims, as the Concat required. */
	for (int p = 1; p < st->nparts; p++) {
		const struct rt_tensor *b = rt_input(x, n, part_input(p));
		if (b->rank != a->rank || b->dims[b->rank - 1] != st->pb[p].K ||
		    memcmp(b->dims, a->dims, (size_t)(a->rank - 1) * sizeof *a->dims))
			return rt_fail(x, n, STRATA_RUNTIME, "piece %d of X does not match the first", p);
	}
	int64_t dims[RT_MAX_RANK];
	memcpy(dims, a->dims, sizeof dims);
	dims[a->rank - 1] = N;
	struct rt_tensor *y;
	int rc = rt_output(x, n, 0, BASE_DT_FLOAT, a->rank, dims, &y);
	if (rc)
		return rc;
	struct rt_epilogue ep = { st->bias, st->act, NULL, N };
	if (has_input(n, 3)) {
		const struct rt_tensor *r = rt_input(x, n, 3);
		if (r->rank != a->rank || memcmp(r->dims, dims, (size_t)a->rank * sizeof *dims))
			return rt_fail(x, n, STRATA_RUNTIME, "the residual's shape differs from Y's");
		ep.residual = r->data;
	}
	if (M == 0 || N == 0)
		return 0;
	if (K == 0 && st->nparts == 1) {
		memset(y->data, 0, (size_t)(M * N) * sizeof(float));
		rt_sgemm_ex(0, 0, M, N, 0, 1.0f, a->data, 1, st->pb[0].data, N, 1.0f, y->data, N, &ep);
		return 0;
	}
	/* Piece p adds its block of K to Y: the first overwrites (beta 0), the
	 * epilogue waits for the sum of all of them. */
	for (int p = 0; p < st->nparts; p++) {
		const struct rt_tensor *b = p ? rt_input(x, n, part_input(p)) : a;
		rt_sgemm_pb(0, M, 1.0f, b->data, st->pb[p].K, &st->pb[p], p ? 1.0f : 0.0f, y->data, N,
		            p == st->nparts - 1 ? &ep : NULL);
	}
	return 0;
}

static void fini_linear_state(struct linear *st)
{
	for (int p = 0; p < st->nparts; p++)
		rt_packed_b_free(&st->pb[p]);
	base_free(st, sizeof *st);
}

static void fini_linear(struct rt_node *n)
{
	if (n->state)
		fini_linear_state(n->state);
	n->state = NULL;
}

static int init_linear(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	int rc;
	if (n->nout < 1 || n->out[0] < 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "needs an output");
	size_t ns = 0;
	const int64_t *splits = rt_attr_ints(n, "splits", &ns);
	int nparts = splits ? (int)ns : 1;
	if (nparts < 1 || nparts > MAXPARTS || (nparts > 1 ? n->nin != 3 + nparts : n->nin > 4))
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "X in %zu pieces with %d inputs", ns,
		                   n->nin);
	for (int i = 0; i < n->nin; i++)
		if ((rc = float_input(n, g, i, i < 2 || i >= 4, err)) != 0)
			return rc;
	const struct rt_tensor *w = rt_graph_const(g, n->in[1]);
	int transb = (int)rt_attr_int(n, "transB", 0);
	int act = (int)rt_attr_int(n, "act", RT_ACT_NONE);
	if (!w || w->rank != 2)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "W must be a 2-D constant");
	if (act != RT_ACT_NONE && act != RT_ACT_RELU && act != RT_ACT_GELU_ERF)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "unknown activation %d", act);
	int64_t K = transb ? w->dims[1] : w->dims[0], N = transb ? w->dims[0] : w->dims[1];
	int64_t sum = 0;
	for (int p = 0; splits && p < nparts; p++) {
		if (splits[p] <= 0)
			return rt_node_err(n, err, STRATA_INVALID_GRAPH, "piece %d of X is empty", p);
		sum += splits[p];
	}
	if (splits && sum != K)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "the pieces of X sum to %lld, not %lld",
		                   (long long)sum, (long long)K);
	const float *bias = NULL;
	if (has_input(n, 2) && !(bias = const_floats(g, n, 2, N)))
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "B must be a constant of %lld cells",
		                   (long long)N);
	struct linear *st = base_calloc(1, sizeof *st);
	if (!st)
		return rt_node_nomem(n, err, "kernel state");
	/* Piece p multiplies W's rows off..off+Kp ([K,N]), or its columns
	 * ([N,K] with transB): one packed block each. */
	const float *wd = w->data; /* NULL in a model from a context: packed there */
	for (int64_t p = 0, off = 0; p < nparts; p++) {
		int64_t kp = splits ? splits[p] : K;
		const float *src = !wd ? NULL : transb ? wd + off : wd + off * w->dims[1];
		if ((rc = rt_node_pack_b(n, g, transb, kp, N, src, w->dims[1], &st->pb[p], err)) != 0) {
			fini_linear_state(st);
			return rc;
		}
		st->nparts++;
		off += kp;
	}
	st->bias = bias;
	st->act = act;
	n->state = st;
	rt_graph_set_dtype(g, n->out[0], BASE_DT_FLOAT);
	n->run = run_linear;
	return 0;
}

/* ---- SkipLayerNorm ---------------------------------------------------------------------- */

struct lnorm {
	const float *gamma, *beta;
	int64_t h;
	float eps;
};

/* Sum of the 8 lanes, in a fixed order. */
static float hsum8(__m256 v)
{
	float t[8];
	_mm256_storeu_ps(t, v);
	return ((t[0] + t[1]) + (t[2] + t[3])) + ((t[4] + t[5]) + (t[6] + t[7]));
}

/* y = LayerNorm(x [+ s]) over one row of h cells.  The sum is taken while
 * x + s is written to y (or straight from x without s, which is never
 * copied); the centred sum of squares, which keeps the variance accurate,
 * and the normalization then reread a row that is still in L1. */
static void norm_row(const float *x, const float *s, float *y, int64_t h, const struct lnorm *st)
{
	__m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
	int64_t i = 0;
	float tail = 0.0f;
	const float *src = x;
	if (s) {
		for (; i + 16 <= h; i += 16) {
			__m256 u = _mm256_add_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(s + i));
			__m256 w = _mm256_add_ps(_mm256_loadu_ps(x + i + 8), _mm256_loadu_ps(s + i + 8));
			_mm256_storeu_ps(y + i, u);
			_mm256_storeu_ps(y + i + 8, w);
			a0 = _mm256_add_ps(a0, u);
			a1 = _mm256_add_ps(a1, w);
		}
		for (; i < h; i++) {
			y[i] = x[i] + s[i];
			tail += y[i];
		}
		src = y;
	} else {
		for (; i + 16 <= h; i += 16) {
			a0 = _mm256_add_ps(a0, _mm256_loadu_ps(x + i));
			a1 = _mm256_add_ps(a1, _mm256_loadu_ps(x + i + 8));
		}
		for (; i < h; i++)
			tail += x[i];
	}
	float mean = (hsum8(_mm256_add_ps(a0, a1)) + tail) / (float)h;
	__m256 vm = _mm256_set1_ps(mean);
	a0 = a1 = _mm256_setzero_ps();
	tail = 0.0f;
	for (i = 0; i + 16 <= h; i += 16) {
		__m256 d0 = _mm256_sub_ps(_mm256_loadu_ps(src + i), vm);
		__m256 d1 = _mm256_sub_ps(_mm256_loadu_ps(src + i + 8), vm);
		a0 = _mm256_fmadd_ps(d0, d0, a0);
		a1 = _mm256_fmadd_ps(d1, d1, a1);
	}
	for (; i < h; i++)
		tail += (src[i] - mean) * (src[i] - mean);
	float inv = 1.0f / sqrtf((hsum8(_mm256_add_ps(a0, a1)) + tail) / (float)h + st->eps);
	__m256 vi = _mm256_set1_ps(inv);
	for (i = 0; i + 8 <= h; i += 8) {
		__m256 d = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(src + i), vm), vi);
		d = _mm256_mul_ps(d, _mm256_loadu_ps(st->gamma + i));
		if (st->beta)
			d = _mm256_add_ps(d, _mm256_loadu_ps(st->beta + i));
		_mm256_storeu_ps(y + i, d);
	}
	for (; i < h; i++)
		y[i] = (src[i] - mean) * inv * st->gamma[i] + (st->beta ? st->beta[i] : 0.0f);
}

static int run_lnorm(struct rt_node *n, struct rt_exec *x)
{
	const struct lnorm *st = n->state;
	const struct rt_tensor *a = rt_input(x, n, 0);
	const struct rt_tensor *s = has_input(n, 1) ? rt_input(x, n, 1) : NULL;
	int64_t h = st->h;
	if (a->rank < 1 || a->dims[a->rank - 1] != h)
		return rt_fail(x, n, STRATA_RUNTIME, "X's last dimension is not %lld", (long long)h);
	int64_t rows = h ? runtime_tensor_count(a) / h : 0, srows = rows;
	if (s) {
		/* S is X's trailing dims after leading 1s: it repeats every srows
		 * rows of X. */
		int lead = a->rank - s->rank, ok = lead >= 0 && s->rank >= 1, f = 0;
		while (ok && f < s->rank - 1 && s->dims[f] == 1)
			f++;
		for (int d = f; ok && d < s->rank; d++)
			ok = s->dims[d] == a->dims[lead + d];
		srows = ok && h ? runtime_tensor_count(s) / h : 0;
		if (!ok || (srows && rows % srows) || (!srows && rows))
			return rt_fail(x, n, STRATA_RUNTIME, "S does not broadcast onto X");
	}
	struct rt_tensor *y;
	int rc = rt_output(x, n, 0, BASE_DT_FLOAT, a->rank, a->dims, &y);
	if (rc)
		return rc;
	const float *xa = a->data;
	float *yo = y->data;
	for (int64_t r = 0; r < rows; r++)
		norm_row(xa + r * h, s ? (const float *)s->data + (r % srows) * h : NULL, yo + r * h,
		         h, st);
	return 0;
}

static void fini_state(struct rt_node *n, size_t bytes)
{
	if (n->state)
		base_free(n->state, bytes);
	n->state = NULL;
}

static void fini_lnorm(struct rt_node *n)
{
	fini_state(n, sizeof(struct lnorm));
}

static int init_lnorm(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	int rc;
	if (n->nout < 1 || n->out[0] < 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "needs an output");
	for (int i = 0; i < 4; i++)
		if ((rc = float_input(n, g, i, i == 0 || i == 2, err)) != 0)
			return rc;
	const struct rt_tensor *gm = rt_graph_const(g, n->in[2]);
	if (!gm || gm->rank != 1)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "gamma must be a 1-D constant");
	int64_t h = gm->dims[0];
	const float *beta = NULL;
	if (has_input(n, 3) && !(beta = const_floats(g, n, 3, h)))
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "beta must be a constant of %lld cells",
		                   (long long)h);
	struct lnorm *st = base_calloc(1, sizeof *st);
	if (!st)
		return rt_node_nomem(n, err, "kernel state");
	st->gamma = gm->data;
	st->beta = beta;
	st->h = h;
	st->eps = rt_attr_float(n, "epsilon", 1e-5f);
	n->state = st;
	rt_graph_set_dtype(g, n->out[0], BASE_DT_FLOAT);
	n->run = run_lnorm;
	return 0;
}

/* ---- Attention ------------------------------------------------------------------------------ */

struct attn {
	int64_t heads;
	float scale;
	int layout;
	int bf16; /* session.bf16_weights: the products in bfloat16 where AMX is in use */
};

static int run_attn(struct rt_node *n, struct rt_exec *x)
{
	const struct attn *st = n->state;
	const struct rt_tensor *q = rt_input(x, n, 0), *k = rt_input(x, n, 1),
	                       *v = rt_input(x, n, 2);
	const struct rt_tensor *m = has_input(n, 3) ? rt_input(x, n, 3) : NULL;
	if (q->rank != 3 || k->rank != 3 || v->rank != 3)
		return rt_fail(x, n, STRATA_RUNTIME, "Q, K and V must be [batch, seq, hidden]");
	int64_t B = q->dims[0], Sq = q->dims[1], HD = q->dims[2], Sk = k->dims[1], H = st->heads;
	if (k->dims[0] != B || v->dims[0] != B || v->dims[1] != Sk || k->dims[2] != HD ||
	    v->dims[2] != HD || H <= 0 || HD % H)
		return rt_fail(x, n, STRATA_RUNTIME, "Q, K and V do not match");
	int64_t D = HD / H;
	/* Strides of M broadcast to [B, H, Sq, Sk] (0 along a dimension of 1). */
	int64_t ms[4] = { 0, 0, 0, 0 };
	if (m) {
		if (m->rank > 4)
			return rt_fail(x, n, STRATA_RUNTIME, "the mask has rank %d", m->rank);
		int64_t full[4] = { B, H, Sq, Sk }, st1 = 1;
		for (int d = 3, e = m->rank - 1; d >= 0; d--, e--) {
			int64_t md = e >= 0 ? m->dims[e] : 1;
			if (md != 1 && md != full[d])
				return rt_fail(x, n, STRATA_RUNTIME, "the mask does not broadcast");
			ms[d] = md == 1 ? 0 : st1;
			st1 *= md;
		}
	}
	struct rt_tensor *y;
	int64_t dl0[3] = { B, Sq, HD }, dl1[4] = { B, H, Sq, D };
	int rc = st->layout ? rt_output(x, n, 0, BASE_DT_FLOAT, 4, dl1, &y)
	                    : rt_output(x, n, 0, BASE_DT_FLOAT, 3, dl0, &y);
	if (rc)
		return rc;
	if (!B || !Sq || !HD)
		return 0;
	const float *qd = q->data, *kd = k->data, *vd = v->data;
	const float *md = m ? m->data : NULL;
	float *yd = y->data;
	if (Sk && rt_cpu_isa() == RT_ISA_AVX512) {
		int amx = st->bf16 && rt_cpu_amx();
		float *w = rt_scratch(x, amx ? rt_attn_amx_work_bytes(Sq, Sk, D)
		                             : rt_attn_work_bytes(Sq, Sk, D));
		if (!w)
			return rt_nomem(x, n, "kernel scratch");
		for (int64_t b = 0; b < B; b++)
			for (int64_t h = 0; h < H; h++) {
				float *out = st->layout ? yd + ((b * H + h) * Sq) * D
				                        : yd + b * Sq * HD + h * D;
				int64_t off = b * Sk * HD + h * D;
				(amx ? rt_attn_head_amx : rt_attn_head_avx512)(
					Sq, Sk, D, st->scale, qd + b * Sq * HD + h * D, HD, kd + off, HD,
					vd + off, HD, md ? md + b * ms[0] + h * ms[1] : NULL, ms[2],
					(int)ms[3], out, st->layout ? D : HD, w);
			}
		return 0;
	}
	float *sc = Sk ? rt_scratch(x, (size_t)(Sq * Sk) * sizeof(float)) : NULL;
	if (Sk && !sc)
		return rt_nomem(x, n, "kernel scratch");
	for (int64_t b = 0; b < B; b++)
		for (int64_t h = 0; h < H; h++) {
			float *out = st->layout ? yd + ((b * H + h) * Sq) * D : yd + b * Sq * HD + h * D;
			int64_t ldo = st->layout ? D : HD;
			if (!Sk) {
				for (int64_t i = 0; i < Sq; i++)
					memset(out + i * ldo, 0, (size_t)D * sizeof *out);
				continue;
			}
			rt_sgemm(0, 1, Sq, Sk, D, st->scale, qd + b * Sq * HD + h * D, HD,
			         kd + b * Sk * HD + h * D, HD, 0.0f, sc, Sk);
			for (int64_t i = 0; i < Sq; i++) {
				float *row = sc + i * Sk;
				if (md) {
					const float *mr = md + b * ms[0] + h * ms[1] + i * ms[2];
					if (ms[3] == 1) {
						int64_t j = 0;
						for (; j + 8 <= Sk; j += 8)
							_mm256_storeu_ps(row + j,
							                 _mm256_add_ps(_mm256_loadu_ps(row + j),
							                               _mm256_loadu_ps(mr + j)));
						for (; j < Sk; j++)
							row[j] += mr[j];
					} else {
						for (int64_t j = 0; j < Sk; j++)
							row[j] += mr[0];
					}
				}
				rt_vsoftmax(row, (size_t)Sk);
			}
			rt_sgemm(0, 0, Sq, D, Sk, 1.0f, sc, Sk, vd + b * Sk * HD + h * D, HD, 0.0f, out,
			         ldo);
		}
	return 0;
}

size_t rt_attn_work_bytes(int64_t sq, int64_t sk, int64_t d)
{
	/* attn_avx512.c's layout: K^T (d x skp), V packed (sk x dp) and the
	 * scores of one block of query rows (RT_ATTN_ROWS x skp); skp = sk
	 * rounded up to 32, dp = d rounded up to 16. */
	int64_t skp = (sk + 31) & ~(int64_t)31, dp = (d + 15) & ~(int64_t)15;
	(void)sq;
	return (size_t)((d + RT_ATTN_ROWS) * skp + sk * dp) * sizeof(float);
}

static void fini_attn(struct rt_node *n)
{
	fini_state(n, sizeof(struct attn));
}

static int init_attn(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	int rc;
	if (n->nout < 1 || n->out[0] < 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "needs an output");
	for (int i = 0; i < 4; i++)
		if ((rc = float_input(n, g, i, i < 3, err)) != 0)
			return rc;
	int64_t heads = rt_attr_int(n, "num_heads", 0);
	if (heads <= 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "num_heads must be positive");
	struct attn *st = base_calloc(1, sizeof *st);
	if (!st)
		return rt_node_nomem(n, err, "kernel state");
	st->heads = heads;
	st->scale = rt_attr_float(n, "scale", 1.0f);
	st->layout = (int)rt_attr_int(n, "out_layout", 0) != 0;
	st->bf16 = g->model && g->model->opts.bf16_weights;
	n->state = st;
	rt_graph_set_dtype(g, n->out[0], BASE_DT_FLOAT);
	n->run = run_attn;
	return 0;
}

const struct rt_opdef rt_ops_fused[] = {
	{ "strata", "FusedLinear", 1, init_linear, fini_linear },
	{ "strata", "SkipLayerNorm", 1, init_lnorm, fini_lnorm },
	{ "strata", "Attention", 1, init_attn, fini_attn },
	{ NULL, NULL, 0, NULL, NULL },
};
