/*
 * rnn.c: the recurrent operators RNN, GRU and LSTM, in float and double.
 *
 * All three share one shape: a sequence X of seq_length steps, each a
 * [batch, input_size] matrix, runs through a cell whose gates are
 * f(X_t W^T + H_{t-1} R^T + biases); the gates' pre-activations for every
 * step are computed up front as one GEMM (X is [seq * batch, input] or, with
 * layout 1, [batch * seq, input], either way one matrix), and each step adds
 * one GEMM of the previous hidden state.  Directions (forward, reverse, or
 * both) are independent passes writing their own slice of Y.
 *
 * Arithmetic: the GEMMs run in the element type (rt_sgemm for float), the
 * gate nonlinearities and the state updates in double; the hidden state is
 * rounded back to the element type before it enters the next step's GEMM,
 * so a float model sees float state, as the operators specify.
 *
 * sequence_lens: a batch entry with length L runs steps 0..L-1 (a reverse
 * pass runs L-1 down to 0); its Y rows past L are zero and its Y_h / Y_c
 * hold the state after its last step (the initial state when L is 0).
 *
 * Attributes are parsed once by init() into a struct rnn kept in n->state;
 * every tensor shape is checked at run against it and against the others,
 * and every size product is bounded before any buffer is requested.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "../kernel.h"

/* Bound on any intermediate buffer (cells): keeps byte counts far from
 * overflow; the context's memory limit applies below it. */
#define MAX_CELLS ((int64_t)1 << 40)

enum kind { K_RNN, K_GRU, K_LSTM };

enum actfn {
	A_RELU, A_TANH, A_SIGMOID, A_AFFINE, A_LEAKYRELU, A_THRESHOLDEDRELU, A_SCALEDTANH,
	A_HARDSIGMOID, A_ELU, A_SOFTSIGN, A_SOFTPLUS
};

/* The activations the recurrent operators accept, with whether they take
 * alpha and beta from activation_alpha / activation_beta and the defaults
 * (those of the same-named ONNX operators) used when the lists run out. */
static const struct {
	const char *name;
	int fn, has_alpha, has_beta;
	double alpha, beta;
} actdefs[] = {
	{"Relu", A_RELU, 0, 0, 0, 0},
	{"Tanh", A_TANH, 0, 0, 0, 0},
	{"Sigmoid", A_SIGMOID, 0, 0, 0, 0},
	{"Affine", A_AFFINE, 1, 1, 1.0, 0.0},
	{"LeakyRelu", A_LEAKYRELU, 1, 0, 0.01, 0},
	{"ThresholdedRelu", A_THRESHOLDEDRELU, 1, 0, 1.0, 0},
	{"ScaledTanh", A_SCALEDTANH, 1, 1, 1.0, 1.0},
	{"HardSigmoid", A_HARDSIGMOID, 1, 1, 0.2, 0.5},
	{"Elu", A_ELU, 1, 0, 1.0, 0},
	{"Softsign", A_SOFTSIGN, 0, 0, 0, 0},
	{"Softplus", A_SOFTPLUS, 0, 0, 0, 0},
};

struct act {
	int fn;
	double alpha, beta;
};

/* What init() learned from the attributes. */
struct rnn {
	int kind;
	int gates;        /* row blocks of W and R: 1, 3 or 4 */
	int nact;         /* activations per direction: 1, 2 or 3 */
	int64_t hidden;   /* hidden_size, or 0 when absent (taken from R) */
	int ndir;         /* 1 or 2 */
	int reverse;      /* direction "reverse" (ndir 1) */
	int layout;       /* 0: sequence-major, 1: batch-major */
	int has_clip;
	double clip;
	int lbr;          /* GRU linear_before_reset */
	int input_forget; /* LSTM: forget gate = 1 - input gate */
	struct act act[2][3];
};

static double act_apply(const struct act *a, double v)
{
	switch (a->fn) {
	case A_RELU: return v > 0 ? v : 0;
	case A_TANH: return tanh(v);
	case A_SIGMOID: return 1.0 / (1.0 + exp(-v));
	case A_AFFINE: return a->alpha * v + a->beta;
	case A_LEAKYRELU: return v >= 0 ? v : a->alpha * v;
	case A_THRESHOLDEDRELU: return v > a->alpha ? v : 0;
	case A_SCALEDTANH: return a->alpha * tanh(a->beta * v);
	case A_HARDSIGMOID: {
		double y = a->alpha * v + a->beta;
		return y < 0 ? 0 : y > 1 ? 1 : y;
	}
	case A_ELU: return v >= 0 ? v : a->alpha * (exp(v) - 1.0);
	case A_SOFTSIGN: return v / (1.0 + fabs(v));
	default: return v > 30 ? v : log1p(exp(v)); /* Softplus; exp overflows past ~709 */
	}
}

/* ---- element access ------------------------------------------------------------- */

static double get(const void *p, int dt, int64_t i)
{
	return dt == BASE_DT_FLOAT ? (double)((const float *)p)[i] : ((const double *)p)[i];
}

static void put(void *p, int dt, int64_t i, double v)
{
	if (dt == BASE_DT_FLOAT)
		((float *)p)[i] = (float)v;
	else
		((double *)p)[i] = v;
}

static size_t esize(int dt)
{
	return dt == BASE_DT_FLOAT ? sizeof(float) : sizeof(double);
}

/* a * b, or -1 when either is negative or the product passes MAX_CELLS. */
static int64_t mul(int64_t a, int64_t b)
{
	if (a < 0 || b < 0)
		return -1;
	if (a != 0 && b > MAX_CELLS / a)
		return -1;
	return a * b;
}

/* Scratch for count cells of size es (at least one byte), NULL on failure. */
static void *scratch(struct rt_exec *x, int64_t count, size_t es)
{
	if (count < 0 || count > MAX_CELLS)
		return NULL;
	return rt_scratch(x, count ? (size_t)count * es : 1);
}

/* C[M, N] (double, leading dimension N) = A[M, K] * B[N, K]^T with A and B
 * dense in element type dt.  The float path runs rt_sgemm into fbuf (M * N
 * floats) and widens. */
static void gemm_nt(int dt, int64_t M, int64_t N, int64_t K, const void *A, const void *B,
                    double *C, float *fbuf)
{
	if (M == 0 || N == 0)
		return;
	if (K == 0) {
		memset(C, 0, (size_t)(M * N) * sizeof *C);
		return;
	}
	if (dt == BASE_DT_FLOAT) {
		rt_sgemm(0, 1, M, N, K, 1.0f, A, K, B, K, 0.0f, fbuf, N);
		for (int64_t i = 0; i < M * N; i++)
			C[i] = fbuf[i];
		return;
	}
	const double *a = A, *b = B;
	for (int64_t i = 0; i < M; i++) {
		for (int64_t j = 0; j < N; j++) {
			const double *ar = a + i * K, *br = b + j * K;
			double s = 0;
			for (int64_t k = 0; k < K; k++)
				s += ar[k] * br[k];
			C[i * N + j] = s;
		}
	}
}

/* ---- the kernel ---------------------------------------------------------------------- */

/* Inputs of one run, checked. */
struct dims {
	int dt;
	int64_t seq, batch, in, hid, gh; /* gh = gates * hidden */
	const struct rt_tensor *X, *W, *R, *B, *SL, *H0, *C0, *P;
	int32_t *len;                    /* per batch entry */
};

static int want_shape(struct rt_exec *x, const struct rt_node *n, const struct rt_tensor *t,
                      const char *what, int rank, const int64_t *dims)
{
	int ok = t->rank == rank;
	for (int i = 0; ok && i < rank; i++)
		ok = t->dims[i] == dims[i];
	if (ok)
		return 0;
	char want[128], got[128];
	size_t a = 0, b = 0;
	for (int i = 0; i < rank; i++)
		a += (size_t)snprintf(want + a, sizeof want - a, "%s%lld", i ? "," : "",
		                      (long long)dims[i]);
	for (int i = 0; i < t->rank && b < sizeof got - 24; i++)
		b += (size_t)snprintf(got + b, sizeof got - b, "%s%lld", i ? "," : "",
		                      (long long)t->dims[i]);
	if (rank == 0)
		want[0] = 0;
	if (t->rank == 0)
		got[0] = 0;
	return rt_fail(x, n, STRATA_RUNTIME, "%s has shape [%s], expected [%s]", what, got, want);
}

static int check_inputs(struct rt_exec *x, const struct rt_node *n, const struct rnn *s,
                        struct dims *d)
{
	memset(d, 0, sizeof *d);
	d->X = rt_input(x, n, 0);
	d->W = rt_input(x, n, 1);
	d->R = rt_input(x, n, 2);
	d->B = rt_input(x, n, 3);
	d->SL = rt_input(x, n, 4);
	d->H0 = rt_input(x, n, 5);
	if (s->kind == K_LSTM) {
		d->C0 = rt_input(x, n, 6);
		d->P = rt_input(x, n, 7);
	}
	if (!d->X || !d->W || !d->R)
		return rt_fail(x, n, STRATA_RUNTIME, "X, W and R are required");
	d->dt = d->X->dtype;
	const struct rt_tensor *all[] = {d->W, d->R, d->B, d->H0, d->C0, d->P};
	for (size_t i = 0; i < sizeof all / sizeof *all; i++)
		if (all[i] && all[i]->dtype != d->dt)
			return rt_fail(x, n, STRATA_RUNTIME, "inputs must all be %s",
			               base_dtype_name(d->dt));
	if (d->X->rank != 3)
		return rt_fail(x, n, STRATA_RUNTIME, "X must have rank 3, not %d", d->X->rank);
	d->seq = d->X->dims[s->layout ? 1 : 0];
	d->batch = d->X->dims[s->layout ? 0 : 1];
	d->in = d->X->dims[2];
	if (d->R->rank != 3)
		return rt_fail(x, n, STRATA_RUNTIME, "R must have rank 3, not %d", d->R->rank);
	d->hid = s->hidden ? s->hidden : d->R->dims[2];
	d->gh = mul(s->gates, d->hid);
	if (d->gh < 0)
		return rt_fail(x, n, STRATA_RUNTIME, "hidden_size %lld is too large",
		               (long long)d->hid);
	int rc;
	if ((rc = want_shape(x, n, d->W, "W", 3, (int64_t[]){s->ndir, d->gh, d->in})) ||
	    (rc = want_shape(x, n, d->R, "R", 3, (int64_t[]){s->ndir, d->gh, d->hid})))
		return rc;
	if (d->B && (rc = want_shape(x, n, d->B, "B", 2, (int64_t[]){s->ndir, 2 * d->gh})))
		return rc;
	int64_t hd[3] = {s->ndir, d->batch, d->hid};
	if (s->layout)
		hd[0] = d->batch, hd[1] = s->ndir;
	if (d->H0 && (rc = want_shape(x, n, d->H0, "initial_h", 3, hd)))
		return rc;
	if (d->C0 && (rc = want_shape(x, n, d->C0, "initial_c", 3, hd)))
		return rc;
	if (d->P && (rc = want_shape(x, n, d->P, "P", 2, (int64_t[]){s->ndir, 3 * d->hid})))
		return rc;
	/* Every buffer below is a product of these: bound them all at once. */
	if (mul(mul(d->seq, d->batch), d->gh) < 0 || mul(mul(d->seq, d->batch), s->ndir * d->hid) < 0)
		return rt_fail(x, n, STRATA_RUNTIME, "sequence %lld x batch %lld x hidden %lld is too large",
		               (long long)d->seq, (long long)d->batch, (long long)d->hid);
	d->len = scratch(x, d->batch, sizeof *d->len);
	if (!d->len)
		return rt_nomem(x, n, "kernel scratch");
	if (d->SL) {
		if (d->SL->dtype != BASE_DT_INT32 && d->SL->dtype != BASE_DT_INT64)
			return rt_fail(x, n, STRATA_RUNTIME, "sequence_lens must be int32, not %s",
			               base_dtype_name(d->SL->dtype));
		if ((rc = want_shape(x, n, d->SL, "sequence_lens", 1, (int64_t[]){d->batch})))
			return rc;
		for (int64_t b = 0; b < d->batch; b++) {
			int64_t v = d->SL->dtype == BASE_DT_INT32 ? ((const int32_t *)d->SL->data)[b]
			                                          : ((const int64_t *)d->SL->data)[b];
			if (v < 0 || v > d->seq)
				return rt_fail(x, n, STRATA_RUNTIME,
				               "sequence_lens[%lld] = %lld is outside [0, %lld]",
				               (long long)b, (long long)v, (long long)d->seq);
			d->len[b] = (int32_t)v;
		}
	} else {
		if (d->seq > INT32_MAX)
			return rt_fail(x, n, STRATA_RUNTIME, "sequence too long");
		for (int64_t b = 0; b < d->batch; b++)
			d->len[b] = (int32_t)d->seq;
	}
	return 0;
}

static double clip(const struct rnn *s, double v)
{
	if (!s->has_clip)
		return v;
	return v < -s->clip ? -s->clip : v > s->clip ? s->clip : v;
}

/* Working buffers of one direction (double unless noted). */
struct work {
	double *xw;     /* [rows, gh]: input projections plus biases */
	double *hr;     /* [batch, gh]: recurrent projections */
	double *h, *c;  /* [batch, hid]: state */
	double *z, *rh; /* GRU: update gate, and r * h before the second GEMM */
	double *hr2;    /* GRU: (r * h) Rh^T */
	double *wb, *rb, *p;
	void *hsrc;     /* h in the element type, the GEMM's A */
	float *fbuf;    /* float GEMM output */
};

static int run_rnn(struct rt_node *n, struct rt_exec *x)
{
	const struct rnn *s = n->state;
	struct dims d;
	int rc = check_inputs(x, n, s, &d);
	if (rc)
		return rc;
	const int dt = d.dt;
	const int64_t seq = d.seq, batch = d.batch, H = d.hid, GH = d.gh, rows = seq * batch;

	/* outputs (each optional) */
	struct rt_tensor *Y = NULL, *Yh = NULL, *Yc = NULL;
	int64_t yd[4] = {seq, s->ndir, batch, H};
	if (s->layout)
		yd[0] = batch, yd[1] = seq, yd[2] = s->ndir;
	int64_t hd[3] = {s->ndir, batch, H};
	if (s->layout)
		hd[0] = batch, hd[1] = s->ndir;
	if (n->nout > 0 && n->out[0] >= 0 && (rc = rt_output(x, n, 0, dt, 4, yd, &Y)))
		return rc;
	if (n->nout > 1 && n->out[1] >= 0 && (rc = rt_output(x, n, 1, dt, 3, hd, &Yh)))
		return rc;
	if (s->kind == K_LSTM && n->nout > 2 && n->out[2] >= 0 &&
	    (rc = rt_output(x, n, 2, dt, 3, hd, &Yc)))
		return rc;
	if (Y && rows * s->ndir * H > 0)
		memset(Y->data, 0, (size_t)(rows * s->ndir * H) * esize(dt));

	struct work w;
	int64_t fcells = (rows > batch ? rows : batch) * GH;
	w.xw = scratch(x, rows * GH, sizeof(double));
	w.hr = scratch(x, batch * GH, sizeof(double));
	w.h = scratch(x, batch * H, sizeof(double));
	w.c = scratch(x, batch * H, sizeof(double));
	w.z = scratch(x, batch * H, sizeof(double));
	w.rh = scratch(x, batch * H, sizeof(double));
	w.hr2 = scratch(x, batch * H, sizeof(double));
	w.wb = scratch(x, 2 * GH, sizeof(double));
	w.rb = w.wb ? w.wb + GH : NULL;
	w.p = scratch(x, 3 * H, sizeof(double));
	w.hsrc = dt == BASE_DT_FLOAT ? scratch(x, batch * H, sizeof(float)) : NULL;
	w.fbuf = dt == BASE_DT_FLOAT ? scratch(x, fcells, sizeof(float)) : NULL;
	if (!w.xw || !w.hr || !w.h || !w.c || !w.z || !w.rh || !w.hr2 || !w.wb || !w.p ||
	    (dt == BASE_DT_FLOAT && (!w.hsrc || !w.fbuf)))
		return rt_nomem(x, n, "the recurrent state");

	const int gru_split = s->kind == K_GRU && !s->lbr; /* (r * h) Rh^T: a second GEMM */
	const int64_t Nr = gru_split ? 2 * H : GH;          /* columns of the first GEMM */
	const size_t es = esize(dt);

	for (int dir = 0; dir < s->ndir; dir++) {
		const int rev = s->ndir == 2 ? dir == 1 : s->reverse;
		const struct act *act = s->act[dir];
		const char *Wd = (const char *)d.W->data + (size_t)(dir * GH * d.in) * es;
		const char *Rd = (const char *)d.R->data + (size_t)(dir * GH * H) * es;

		/* input projections of every step at once, plus the biases that do
		 * not sit inside a gate product */
		gemm_nt(dt, rows, GH, d.in, d.X->data, Wd, w.xw, w.fbuf);
		for (int64_t j = 0; j < 2 * GH; j++)
			w.wb[j] = d.B ? get(d.B->data, dt, dir * 2 * GH + j) : 0.0;
		for (int64_t j = 0; j < 3 * H; j++)
			w.p[j] = d.P ? get(d.P->data, dt, dir * 3 * H + j) : 0.0;
		for (int64_t r = 0; r < rows; r++) {
			double *g = w.xw + r * GH;
			for (int64_t j = 0; j < GH; j++) {
				/* GRU with linear_before_reset keeps Rbh inside r * (...) */
				int inner = s->kind == K_GRU && s->lbr && j >= 2 * H;
				g[j] += w.wb[j] + (inner ? 0.0 : w.rb[j]);
			}
		}

		for (int64_t b = 0; b < batch; b++) {
			for (int64_t k = 0; k < H; k++) {
				int64_t hi = s->layout ? (b * s->ndir + dir) * H + k : (dir * batch + b) * H + k;
				w.h[b * H + k] = d.H0 ? get(d.H0->data, dt, hi) : 0.0;
				w.c[b * H + k] = d.C0 ? get(d.C0->data, dt, hi) : 0.0;
			}
		}

		for (int64_t st = 0; st < seq; st++) {
			const void *A = w.h;
			if (dt == BASE_DT_FLOAT) {
				for (int64_t i = 0; i < batch * H; i++)
					((float *)w.hsrc)[i] = (float)w.h[i];
				A = w.hsrc;
			}
			gemm_nt(dt, batch, Nr, H, A, Rd, w.hr, w.fbuf);

			if (gru_split) {
				/* gates z and r first, then the candidate needs (r * h) Rh^T */
				for (int64_t b = 0; b < batch; b++) {
					if (st >= d.len[b])
						continue;
					int64_t t = rev ? d.len[b] - 1 - st : st;
					const double *g = w.xw + (s->layout ? b * seq + t : t * batch + b) * GH;
					const double *rr = w.hr + b * Nr;
					for (int64_t k = 0; k < H; k++) {
						double zg = act_apply(&act[0], clip(s, g[k] + rr[k]));
						double rg = act_apply(&act[0], clip(s, g[H + k] + rr[H + k]));
						w.z[b * H + k] = zg;
						w.rh[b * H + k] = rg * w.h[b * H + k];
					}
				}
				const void *A2 = w.rh;
				if (dt == BASE_DT_FLOAT) {
					for (int64_t i = 0; i < batch * H; i++)
						((float *)w.hsrc)[i] = (float)w.rh[i];
					A2 = w.hsrc;
				}
				gemm_nt(dt, batch, H, H, A2, Rd + (size_t)(2 * H * H) * es, w.hr2,
				        w.fbuf);
			}

			for (int64_t b = 0; b < batch; b++) {
				if (st >= d.len[b])
					continue;
				int64_t t = rev ? d.len[b] - 1 - st : st;
				const double *g = w.xw + (s->layout ? b * seq + t : t * batch + b) * GH;
				const double *rr = w.hr + b * Nr;
				double *h = w.h + b * H, *c = w.c + b * H;
				for (int64_t k = 0; k < H; k++) {
					switch (s->kind) {
					case K_RNN:
						h[k] = act_apply(&act[0], clip(s, g[k] + rr[k]));
						break;
					case K_GRU: {
						double zg, hh;
						if (gru_split) {
							zg = w.z[b * H + k];
							hh = act_apply(&act[1],
							               clip(s, g[2 * H + k] + w.hr2[b * H + k]));
						} else {
							zg = act_apply(&act[0], clip(s, g[k] + rr[k]));
							double rg = act_apply(&act[0], clip(s, g[H + k] + rr[H + k]));
							double lin = rr[2 * H + k] + w.rb[2 * H + k];
							hh = act_apply(&act[1], clip(s, g[2 * H + k] + rg * lin));
						}
						h[k] = (1.0 - zg) * hh + zg * h[k];
						break;
					}
					default: { /* LSTM: gate blocks i, o, f, c; peepholes i, o, f */
						double ig = act_apply(&act[0], clip(s, g[k] + rr[k] + w.p[k] * c[k]));
						double fg;
						if (s->input_forget)
							fg = 1.0 - ig;
						else
							fg = act_apply(&act[0], clip(s, g[2 * H + k] + rr[2 * H + k] +
							                                    w.p[2 * H + k] * c[k]));
						double cg = act_apply(&act[1], clip(s, g[3 * H + k] + rr[3 * H + k]));
						double cn = fg * c[k] + ig * cg;
						double og = act_apply(&act[0], clip(s, g[H + k] + rr[H + k] +
						                                           w.p[H + k] * cn));
						c[k] = cn;
						h[k] = og * act_apply(&act[2], cn);
						break;
					}
					}
				}
				if (Y) {
					int64_t yo = s->layout ? ((b * seq + t) * s->ndir + dir) * H
					                       : ((t * s->ndir + dir) * batch + b) * H;
					for (int64_t k = 0; k < H; k++)
						put(Y->data, dt, yo + k, h[k]);
				}
			}
			/* the state is rounded to the element type between steps */
			if (dt == BASE_DT_FLOAT) {
				for (int64_t i = 0; i < batch * H; i++) {
					w.h[i] = (float)w.h[i];
					w.c[i] = (float)w.c[i];
				}
			}
		}

		for (int64_t b = 0; b < batch; b++) {
			int64_t o = s->layout ? (b * s->ndir + dir) * H : (dir * batch + b) * H;
			for (int64_t k = 0; k < H; k++) {
				if (Yh)
					put(Yh->data, dt, o + k, w.h[b * H + k]);
				if (Yc)
					put(Yc->data, dt, o + k, w.c[b * H + k]);
			}
		}
	}
	return 0;
}

/* ---- load-time checks ------------------------------------------------------------------- */

static int parse_acts(struct rt_node *n, struct strata_error *err, struct rnn *s)
{
	static const char *const dflt[3][3] = {
		{"Tanh"}, {"Sigmoid", "Tanh"}, {"Sigmoid", "Tanh", "Tanh"}};
	const struct rt_attr *a = rt_attr_find(n, "activations");
	const struct rt_attr *al = rt_attr_find(n, "activation_alpha");
	const struct rt_attr *be = rt_attr_find(n, "activation_beta");
	if (a && a->type != RT_ATTR_STRINGS)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "activations must be strings");
	if ((al && al->type != RT_ATTR_FLOATS) || (be && be->type != RT_ATTR_FLOATS))
		return rt_node_err(n, err, STRATA_INVALID_GRAPH,
		                   "activation_alpha and activation_beta must be floats");
	size_t na = a ? a->n : 0;
	/* one list per direction, or one list both directions share */
	if (a && na != (size_t)(s->nact * s->ndir) && na != (size_t)s->nact)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH,
		                   "%zu activations given, %d per direction expected", na, s->nact);
	size_t ia = 0, ib = 0;
	for (int dir = 0; dir < s->ndir; dir++) {
		for (int j = 0; j < s->nact; j++) {
			const char *name = dflt[s->kind][j];
			if (a) {
				size_t k = na == (size_t)s->nact ? (size_t)j : (size_t)(dir * s->nact + j);
				name = a->strings[k];
			}
			size_t f = 0;
			while (f < sizeof actdefs / sizeof *actdefs && strcasecmp(actdefs[f].name, name))
				f++;
			if (f == sizeof actdefs / sizeof *actdefs)
				return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED,
				                   "%s (opset %d): activation \"%s\"", n->op, n->opset, name);
			struct act *ac = &s->act[dir][j];
			ac->fn = actdefs[f].fn;
			ac->alpha = actdefs[f].alpha;
			ac->beta = actdefs[f].beta;
			/* alphas and betas are consumed in order by the functions taking them */
			if (actdefs[f].has_alpha && al && ia < al->n)
				ac->alpha = al->floats[ia++];
			if (actdefs[f].has_beta && be && ib < be->n)
				ac->beta = be->floats[ib++];
		}
	}
	return 0;
}

static int init_rnn(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	struct rnn s;
	memset(&s, 0, sizeof s);
	if (!strcmp(n->op, "GRU"))
		s.kind = K_GRU, s.gates = 3, s.nact = 2;
	else if (!strcmp(n->op, "LSTM"))
		s.kind = K_LSTM, s.gates = 4, s.nact = 3;
	else
		s.kind = K_RNN, s.gates = 1, s.nact = 1;

	if (n->nin < 3 || n->in[0] < 0 || n->in[1] < 0 || n->in[2] < 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "needs inputs X, W and R");
	int maxin = s.kind == K_LSTM ? 8 : 6;
	if (n->nin > maxin)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "%d inputs, at most %d", n->nin, maxin);
	int maxout = s.kind == K_LSTM ? 3 : 2;
	if (n->nout > maxout)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "%d outputs, at most %d", n->nout,
		                   maxout);
	int dt = rt_graph_dtype(g, n->in[0]);
	if (dt != BASE_DT_FLOAT && dt != BASE_DT_DOUBLE)
		return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED, "%s (opset %d): element type %s",
		                   n->op, n->opset, base_dtype_name(dt));
	for (int i = 1; i < n->nin; i++) {
		if (i == 4 || n->in[i] < 0)
			continue;
		if (rt_graph_dtype(g, n->in[i]) != dt)
			return rt_node_err(n, err, STRATA_INVALID_GRAPH, "input %d must be %s, not %s", i,
			                   base_dtype_name(dt),
			                   base_dtype_name(rt_graph_dtype(g, n->in[i])));
	}
	if (n->nin > 4 && n->in[4] >= 0) {
		int st = rt_graph_dtype(g, n->in[4]);
		if (st != BASE_DT_INT32 && st != BASE_DT_INT64)
			return rt_node_err(n, err, STRATA_INVALID_GRAPH,
			                   "sequence_lens must be int32, not %s", base_dtype_name(st));
	}

	int64_t hid = rt_attr_int(n, "hidden_size", 0);
	if (hid < 0 || hid > (1 << 24))
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "hidden_size %lld out of range",
		                   (long long)hid);
	s.hidden = hid;
	const char *dir = rt_attr_string(n, "direction", "forward");
	if (!strcmp(dir, "forward"))
		s.ndir = 1;
	else if (!strcmp(dir, "reverse"))
		s.ndir = 1, s.reverse = 1;
	else if (!strcmp(dir, "bidirectional"))
		s.ndir = 2;
	else
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "direction \"%s\"", dir);
	int64_t layout = rt_attr_int(n, "layout", 0);
	if (layout != 0 && layout != 1)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "layout %lld", (long long)layout);
	s.layout = (int)layout;
	const struct rt_attr *ca = rt_attr_find(n, "clip");
	if (ca) {
		if (ca->type != RT_ATTR_FLOAT || !(ca->f >= 0))
			return rt_node_err(n, err, STRATA_INVALID_GRAPH, "clip must be a float >= 0");
		s.has_clip = 1;
		s.clip = ca->f;
	}
	s.lbr = rt_attr_int(n, "linear_before_reset", 0) != 0;
	s.input_forget = rt_attr_int(n, "input_forget", 0) != 0;
	int rc = parse_acts(n, err, &s);
	if (rc)
		return rc;

	for (int i = 0; i < n->nout; i++)
		if (n->out[i] >= 0)
			rt_graph_set_dtype(g, n->out[i], dt);
	struct rnn *st = base_alloc(sizeof *st);
	if (!st)
		return rt_node_nomem(n, err, "kernel state");
	*st = s;
	n->state = st;
	n->run = run_rnn;
	return 0;
}

static void fini_rnn(struct rt_node *n)
{
	if (n->state)
		base_free(n->state, sizeof(struct rnn));
	n->state = NULL;
}

const struct rt_opdef rt_ops_rnn[] = {
	{"", "RNN", 1, init_rnn, fini_rnn},
	{"", "GRU", 1, init_rnn, fini_rnn},
	{"", "LSTM", 1, init_rnn, fini_rnn},
	{.op = NULL},
};
