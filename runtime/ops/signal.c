/*
 * signal.c: signal-processing operators of opset 17: DFT, STFT, the
 * HannWindow, HammingWindow and BlackmanWindow generators, and
 * MelWeightMatrix.
 *
 * Complex tensors are real tensors with a trailing dimension of 2 (real,
 * imaginary); a trailing dimension of 1 marks a real signal.  Every transform
 * gathers one line of the signal into double precision, transforms it there
 * and stores the result in the input's element type: the expected spectra hold
 * exact zeros and near-cancellations that a float accumulation would miss.
 * Lengths that are powers of two use an iterative radix-2 FFT; others a direct
 * sum over a table of twiddles, indexed by (j * k) mod n so that no angle
 * grows with the signal length.
 *
 * Sizes, lengths and steps arrive as tensors at run time: each is checked
 * (positive, bounded) before it shapes an output or indexes a buffer.
 */
#include <math.h>
#include <string.h>

#include "../kernel.h"

/* Longest transform and largest output accepted; rt_output() applies the
 * real memory limit. */
#define MAX_LEN ((int64_t)1 << 26)
#define MAX_CELLS ((int64_t)1 << 40)

static int floating(int dt)
{
	return dt == BASE_DT_FLOAT || dt == BASE_DT_DOUBLE || dt == BASE_DT_FLOAT16 ||
	       dt == BASE_DT_BFLOAT16;
}

static double load(const void *p, int dt, int64_t i)
{
	switch (dt) {
	case BASE_DT_FLOAT: return ((const float *)p)[i];
	case BASE_DT_DOUBLE: return ((const double *)p)[i];
	case BASE_DT_FLOAT16: return base_f16_to_f32(((const uint16_t *)p)[i]);
	case BASE_DT_BFLOAT16: return base_bf16_to_f32(((const uint16_t *)p)[i]);
	default: return 0;
	}
}

static void store(void *p, int dt, int64_t i, double v)
{
	switch (dt) {
	case BASE_DT_FLOAT: ((float *)p)[i] = (float)v; break;
	case BASE_DT_DOUBLE: ((double *)p)[i] = v; break;
	case BASE_DT_FLOAT16: ((uint16_t *)p)[i] = base_f32_to_f16((float)v); break;
	case BASE_DT_BFLOAT16: ((uint16_t *)p)[i] = base_f32_to_bf16((float)v); break;
	default: break;
	}
}

/* A scalar (or one-cell) integer input i of n, required. */
static int scalar_int(struct rt_exec *x, const struct rt_node *n, int i, const char *what,
                      int64_t *v)
{
	const struct rt_tensor *t = rt_input(x, n, i);
	if (!t)
		return rt_fail(x, n, STRATA_RUNTIME, "missing %s", what);
	if (runtime_tensor_count(t) != 1 || t->rank > 1)
		return rt_fail(x, n, STRATA_RUNTIME, "%s must be a scalar", what);
	if (t->dtype == BASE_DT_INT64)
		*v = *(const int64_t *)t->data;
	else if (t->dtype == BASE_DT_INT32)
		*v = *(const int32_t *)t->data;
	else
		return rt_fail(x, n, STRATA_RUNTIME, "%s must be int32 or int64, not %s", what,
		               base_dtype_name(t->dtype));
	return 0;
}

static int scalar_float(struct rt_exec *x, const struct rt_node *n, int i, const char *what,
                        double *v)
{
	const struct rt_tensor *t = rt_input(x, n, i);
	if (!t)
		return rt_fail(x, n, STRATA_RUNTIME, "missing %s", what);
	if (runtime_tensor_count(t) != 1 || t->rank > 1 || !floating(t->dtype))
		return rt_fail(x, n, STRATA_RUNTIME, "%s must be a float scalar", what);
	*v = load(t->data, t->dtype, 0);
	return 0;
}

/* ---- the transform --------------------------------------------------------------- */

/* A plan for transforms of length len: the twiddles e^{-2 pi i m / len}. */
struct plan {
	int64_t len;
	int pow2;
	double *cs, *sn;   /* len entries each */
	double *re, *im;   /* a work line of 2 * len entries */
};

static int plan_make(struct rt_exec *x, const struct rt_node *n, int64_t len, struct plan *p)
{
	p->len = len;
	p->pow2 = (len & (len - 1)) == 0;
	p->cs = rt_scratch(x, (size_t)len * sizeof(double));
	p->sn = rt_scratch(x, (size_t)len * sizeof(double));
	/* the direct sum keeps its results past the line: twice the room */
	p->re = rt_scratch(x, 2 * (size_t)len * sizeof(double));
	p->im = rt_scratch(x, 2 * (size_t)len * sizeof(double));
	if (!p->cs || !p->sn || !p->re || !p->im)
		return rt_nomem(x, n, "a transform of %lld",
		               (long long)len);
	for (int64_t m = 0; m < len; m++) {
		double a = 2 * M_PI * (double)m / (double)len;
		p->cs[m] = cos(a);
		p->sn[m] = sin(a);
	}
	return 0;
}

/* Transform the line p->re/p->im (len entries, zero-padded by the caller)
 * in place; inverse flips the sign of the exponent (no scaling here). */
static void transform(struct plan *p, int inverse, int64_t nin, int64_t nout)
{
	int64_t L = p->len;
	double sg = inverse ? 1 : -1;
	double *re = p->re, *im = p->im;
	if (p->pow2) {
		/* bit-reversal permutation, then butterflies */
		for (int64_t i = 1, j = 0; i < L; i++) {
			int64_t bit = L >> 1;
			for (; j & bit; bit >>= 1)
				j ^= bit;
			j ^= bit;
			if (i < j) {
				double t = re[i]; re[i] = re[j]; re[j] = t;
				t = im[i]; im[i] = im[j]; im[j] = t;
			}
		}
		for (int64_t len = 2; len <= L; len <<= 1) {
			int64_t step = L / len, half = len / 2;
			for (int64_t i = 0; i < L; i += len) {
				for (int64_t k = 0; k < half; k++) {
					double wr = p->cs[k * step], wi = sg * p->sn[k * step];
					double *ar = re + i + k, *ai = im + i + k;
					double br = re[i + k + half], bi = im[i + k + half];
					double tr = br * wr - bi * wi, ti = br * wi + bi * wr;
					re[i + k + half] = *ar - tr;
					im[i + k + half] = *ai - ti;
					*ar += tr;
					*ai += ti;
				}
			}
		}
		return;
	}
	/* direct sum of the nin leading entries; the nout <= len results go
	 * to the second half of the line, then back to its start */
	double *ore = p->re + L, *oim = p->im + L;
	for (int64_t k = 0; k < nout; k++) {
		double sr = 0, si = 0;
		int64_t m = 0;
		for (int64_t j = 0; j < nin; j++) {
			double c = p->cs[m], s = sg * p->sn[m];
			sr += re[j] * c - im[j] * s;
			si += re[j] * s + im[j] * c;
			m += k;
			if (m >= L)
				m %= L;
		}
		ore[k] = sr;
		oim[k] = si;
	}
	memcpy(re, ore, (size_t)nout * sizeof *re);
	memcpy(im, oim, (size_t)nout * sizeof *im);
}

/* ---- DFT --------------------------------------------------------------------------- */

static int run_dft(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *X = rt_input(x, n, 0);
	int r = X->rank;
	int inverse = rt_attr_int(n, "inverse", 0) != 0;
	int onesided = rt_attr_int(n, "onesided", 0) != 0;
	if (r < 2 || (X->dims[r - 1] != 1 && X->dims[r - 1] != 2))
		return rt_fail(x, n, STRATA_RUNTIME,
		               "input must end in a dimension of 1 (real) or 2 (complex)");
	int cplx = X->dims[r - 1] == 2;
	int64_t axis0;
	int rc;
	if (n->opset >= 20) {
		axis0 = -2;
		if (rt_input(x, n, 2) && (rc = scalar_int(x, n, 2, "axis", &axis0)))
			return rc;
	} else {
		axis0 = rt_attr_int(n, "axis", 1);
	}
	int64_t axis = axis0 < 0 ? axis0 + r : axis0;
	if (axis < 0 || axis > r - 2)
		return rt_fail(x, n, STRATA_RUNTIME, "axis %lld out of range for rank %d",
		               (long long)axis0, r);
	int64_t nsig = X->dims[axis], L = nsig;
	if (rt_input(x, n, 1)) {
		if ((rc = scalar_int(x, n, 1, "dft_length", &L)))
			return rc;
		if (L < 1 || L > MAX_LEN)
			return rt_fail(x, n, STRATA_RUNTIME, "dft_length %lld out of range [1, %lld]",
			               (long long)L, (long long)MAX_LEN);
	}
	if (L < 1 || L > MAX_LEN)
		return rt_fail(x, n, STRATA_RUNTIME, "signal length %lld out of range [1, %lld]",
		               (long long)L, (long long)MAX_LEN);
	int64_t nout = onesided ? L / 2 + 1 : L;
	int64_t od[RT_MAX_RANK], outer = 1, inner = 1;
	for (int d = 0; d < r; d++) {
		od[d] = d == axis ? nout : d == r - 1 ? 2 : X->dims[d];
		if (d < axis)
			outer *= X->dims[d];
		else if (d > axis && d < r - 1)
			inner *= X->dims[d];
	}
	if (outer * inner != 0 && nout > MAX_CELLS / (outer * inner * 2))
		return rt_fail(x, n, STRATA_RUNTIME, "output too large");
	struct rt_tensor *Y;
	if ((rc = rt_output(x, n, 0, X->dtype, r, od, &Y)))
		return rc;
	if (outer * inner == 0)
		return 0;
	struct plan p;
	if ((rc = plan_make(x, n, L, &p)))
		return rc;
	int64_t nin = nsig < L ? nsig : L;
	int64_t cw = cplx ? 2 : 1;
	double scale = inverse ? 1.0 / (double)L : 1.0;
	for (int64_t o = 0; o < outer; o++) {
		for (int64_t i = 0; i < inner; i++) {
			for (int64_t j = 0; j < L; j++) {
				if (j < nin) {
					int64_t c = ((o * nsig + j) * inner + i) * cw;
					p.re[j] = load(X->data, X->dtype, c);
					p.im[j] = cplx ? load(X->data, X->dtype, c + 1) : 0;
				} else {
					p.re[j] = p.im[j] = 0;
				}
			}
			transform(&p, inverse, p.pow2 ? L : nin, nout);
			for (int64_t k = 0; k < nout; k++) {
				int64_t c = ((o * nout + k) * inner + i) * 2;
				store(Y->data, X->dtype, c, p.re[k] * scale);
				store(Y->data, X->dtype, c + 1, p.im[k] * scale);
			}
		}
	}
	return 0;
}

static int init_float_in(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	if (n->nin < 1 || n->in[0] < 0 || n->nout < 1 || n->out[0] < 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "needs an input and an output");
	int dt = rt_graph_dtype(g, n->in[0]);
	if (!floating(dt))
		return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED, "%s (opset %d): element type %s",
		                   n->op, n->opset, base_dtype_name(dt));
	rt_graph_set_dtype(g, n->out[0], dt);
	return 0;
}

static int init_dft(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	int rc = init_float_in(n, g, err);
	if (rc)
		return rc;
	if (rt_attr_int(n, "onesided", 0) != 0 && rt_attr_int(n, "inverse", 0) != 0)
		return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED,
		                   "DFT (opset %d): onesided inverse transform", n->opset);
	n->run = run_dft;
	return 0;
}

/* ---- STFT -------------------------------------------------------------------------- */

static int run_stft(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *S = rt_input(x, n, 0), *win = rt_input(x, n, 2);
	int onesided = rt_attr_int(n, "onesided", 1) != 0;
	int rc;
	if ((S->rank != 3 && S->rank != 2) || (S->rank == 3 && S->dims[2] != 1 && S->dims[2] != 2))
		return rt_fail(x, n, STRATA_RUNTIME,
		               "signal must be [batch, length, 1] or [batch, length, 2]");
	int cplx = S->rank == 3 && S->dims[2] == 2;
	int64_t step, L = -1;
	if ((rc = scalar_int(x, n, 1, "frame_step", &step)))
		return rc;
	if (win) {
		if (win->rank != 1 || !floating(win->dtype))
			return rt_fail(x, n, STRATA_RUNTIME, "window must be a 1-D float tensor");
		L = win->dims[0];
	}
	if (rt_input(x, n, 3)) {
		int64_t fl;
		if ((rc = scalar_int(x, n, 3, "frame_length", &fl)))
			return rc;
		if (L >= 0 && fl != L)
			return rt_fail(x, n, STRATA_RUNTIME,
			               "frame_length %lld differs from the window length %lld",
			               (long long)fl, (long long)L);
		L = fl;
	}
	if (L < 0)
		return rt_fail(x, n, STRATA_RUNTIME, "needs a window or a frame_length");
	int64_t B = S->dims[0], len = S->dims[1];
	if (L < 1 || L > MAX_LEN || L > len)
		return rt_fail(x, n, STRATA_RUNTIME,
		               "frame length %lld out of range [1, %lld] (signal length %lld)",
		               (long long)L, (long long)MAX_LEN, (long long)len);
	if (step < 1)
		return rt_fail(x, n, STRATA_RUNTIME, "frame_step %lld must be positive",
		               (long long)step);
	int64_t frames = (len - L) / step + 1, bins = onesided ? L / 2 + 1 : L;
	if (B && bins > MAX_CELLS / (B * frames * 2))
		return rt_fail(x, n, STRATA_RUNTIME, "output too large");
	int64_t od[4] = {B, frames, bins, 2};
	struct rt_tensor *Y;
	if ((rc = rt_output(x, n, 0, S->dtype, 4, od, &Y)))
		return rc;
	if (B == 0)
		return 0;
	struct plan p;
	if ((rc = plan_make(x, n, L, &p)))
		return rc;
	int64_t cw = cplx ? 2 : 1;
	for (int64_t b = 0; b < B; b++) {
		for (int64_t f = 0; f < frames; f++) {
			for (int64_t j = 0; j < L; j++) {
				int64_t c = (b * len + f * step + j) * cw;
				double w = win ? load(win->data, win->dtype, j) : 1;
				p.re[j] = w * load(S->data, S->dtype, c);
				p.im[j] = cplx ? w * load(S->data, S->dtype, c + 1) : 0;
			}
			transform(&p, 0, L, bins);
			for (int64_t k = 0; k < bins; k++) {
				int64_t c = ((b * frames + f) * bins + k) * 2;
				store(Y->data, S->dtype, c, p.re[k]);
				store(Y->data, S->dtype, c + 1, p.im[k]);
			}
		}
	}
	return 0;
}

static int init_stft(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	int rc = init_float_in(n, g, err);
	if (rc)
		return rc;
	if (n->nin < 2 || n->in[1] < 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "missing input frame_step");
	n->run = run_stft;
	return 0;
}

/* ---- window functions ------------------------------------------------------------ */

/* Output element type from output_datatype: floating types only. */
static int out_type(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	int64_t odt = rt_attr_int(n, "output_datatype", BASE_DT_FLOAT);
	if (odt < 0 || odt >= BASE_DT_COUNT || !floating((int)odt))
		return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED,
		                   "%s (opset %d): output_datatype %lld", n->op, n->opset,
		                   (long long)odt);
	if (n->nout < 1 || n->out[0] < 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "missing output");
	rt_graph_set_dtype(g, n->out[0], (int)odt);
	return 0;
}

static int run_window(struct rt_node *n, struct rt_exec *x)
{
	int64_t N;
	int rc = scalar_int(x, n, 0, "size", &N);
	if (rc)
		return rc;
	if (N < 0 || N > MAX_LEN)
		return rt_fail(x, n, STRATA_RUNTIME, "size %lld out of range [0, %lld]",
		               (long long)N, (long long)MAX_LEN);
	int dt = (int)rt_attr_int(n, "output_datatype", BASE_DT_FLOAT);
	int periodic = rt_attr_int(n, "periodic", 1) != 0;
	struct rt_tensor *Y;
	if ((rc = rt_output(x, n, 0, dt, 1, &N, &Y)))
		return rc;
	/* a0 - a1 cos(2 pi k / D) + a2 cos(4 pi k / D) */
	double a0, a1, a2 = 0;
	switch (n->op[2]) {
	case 'n': a0 = 0.5; a1 = 0.5; break;                  /* HannWindow */
	case 'm': a0 = 25.0 / 46; a1 = 21.0 / 46; break;      /* HammingWindow */
	default: a0 = 0.42; a1 = 0.5; a2 = 0.08; break;       /* BlackmanWindow */
	}
	/* a symmetric window of one cell would divide by zero: it is the
	 * window's value at angle 0 */
	double D = periodic ? (double)N : (double)(N - 1);
	for (int64_t k = 0; k < N; k++) {
		double a = D > 0 ? 2 * M_PI * (double)k / D : 0;
		store(Y->data, dt, k, a0 - a1 * cos(a) + a2 * cos(2 * a));
	}
	return 0;
}

static int init_window(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	if (n->nin < 1 || n->in[0] < 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "missing input size");
	int dt = rt_graph_dtype(g, n->in[0]);
	if (dt != BASE_DT_INT32 && dt != BASE_DT_INT64)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "size must be int32 or int64, not %s",
		                   base_dtype_name(dt));
	int rc = out_type(n, g, err);
	if (rc)
		return rc;
	n->run = run_window;
	return 0;
}

/* ---- MelWeightMatrix ------------------------------------------------------------- */

/* Triangular filters evenly spaced on the mel scale (mel = 2595 log10(1 +
 * hz / 700)).  Band edges follow the ONNX definition: num_mel_bins + 2
 * points, spaced by the mel range over that count, each mapped to the
 * spectrogram bin floor((dft_length + 1) * hz / sample_rate). */
static int run_mel(struct rt_node *n, struct rt_exec *x)
{
	int64_t nmel = 0, dftlen = 0, rate = 0;
	double lo = 0, hi = 0;
	int rc;
	if ((rc = scalar_int(x, n, 0, "num_mel_bins", &nmel)) ||
	    (rc = scalar_int(x, n, 1, "dft_length", &dftlen)) ||
	    (rc = scalar_int(x, n, 2, "sample_rate", &rate)) ||
	    (rc = scalar_float(x, n, 3, "lower_edge_hertz", &lo)) ||
	    (rc = scalar_float(x, n, 4, "upper_edge_hertz", &hi)))
		return rc;
	if (nmel < 1 || nmel > 65536 || dftlen < 1 || dftlen > MAX_LEN || rate < 1)
		return rt_fail(x, n, STRATA_RUNTIME,
		               "num_mel_bins %lld, dft_length %lld or sample_rate %lld out of range",
		               (long long)nmel, (long long)dftlen, (long long)rate);
	if (!(lo >= 0) || !(hi > lo) || !isfinite(hi))
		return rt_fail(x, n, STRATA_RUNTIME, "edges %g and %g must satisfy 0 <= lower < upper",
		               lo, hi);
	int64_t nspec = dftlen / 2 + 1;
	if (nmel > MAX_CELLS / nspec)
		return rt_fail(x, n, STRATA_RUNTIME, "output too large");
	int dt = (int)rt_attr_int(n, "output_datatype", BASE_DT_FLOAT);
	int64_t od[2] = {nspec, nmel};
	struct rt_tensor *Y;
	if ((rc = rt_output(x, n, 0, dt, 2, od, &Y)))
		return rc;
	int64_t *bin = rt_scratch(x, (size_t)(nmel + 2) * sizeof *bin);
	if (!bin)
		return rt_nomem(x, n, "kernel scratch");
	double mlo = 2595 * log10(1 + lo / 700), mhi = 2595 * log10(1 + hi / 700);
	double mstep = (mhi - mlo) / (double)(nmel + 2);
	for (int64_t i = 0; i < nmel + 2; i++) {
		double hz = 700 * (pow(10, ((double)i * mstep + mlo) / 2595) - 1);
		double b = floor((double)(dftlen + 1) * hz / (double)rate);
		if (!(b >= 0) || b >= (double)nspec)
			return rt_fail(x, n, STRATA_RUNTIME,
			               "upper_edge_hertz %g maps past the %lld spectrogram bins", hi,
			               (long long)nspec);
		bin[i] = (int64_t)b;
	}
	for (int64_t c = 0; c < nspec * nmel; c++)
		store(Y->data, dt, c, 0);
	for (int64_t i = 0; i < nmel; i++) {
		int64_t l = bin[i], c = bin[i + 1], h = bin[i + 2];
		if (c == l) {
			store(Y->data, dt, c * nmel + i, 1);
		} else {
			for (int64_t j = l; j <= c; j++)
				store(Y->data, dt, j * nmel + i, (double)(j - l) / (double)(c - l));
		}
		for (int64_t j = c; j < h; j++)
			store(Y->data, dt, j * nmel + i, (double)(h - j) / (double)(h - c));
	}
	return 0;
}

static int init_mel(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	if (n->nin < 5)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "needs 5 inputs");
	for (int i = 0; i < 5; i++)
		if (n->in[i] < 0)
			return rt_node_err(n, err, STRATA_INVALID_GRAPH, "missing input %d", i);
	int rc = out_type(n, g, err);
	if (rc)
		return rc;
	n->run = run_mel;
	return 0;
}

const struct rt_opdef rt_ops_signal[] = {
	{"", "DFT", 17, init_dft, NULL},
	{"", "STFT", 17, init_stft, NULL},
	{"", "HannWindow", 17, init_window, NULL},
	{"", "HammingWindow", 17, init_window, NULL},
	{"", "BlackmanWindow", 17, init_window, NULL},
	{"", "MelWeightMatrix", 17, init_mel, NULL},
	{.op = NULL},
};
