/*
 * conv.c: Conv, ConvTranspose, ConvInteger and QLinearConv, in any number
 * of spatial dimensions (1 to RT_WINDOW_MAX).
 *
 * Tensors are N x C x spatial...; W is M x C/group x kernel... (ConvTranspose:
 * C x M/group x kernel...).  Every forward convolution is lowered per batch
 * item and group to one matrix product: im2col copies the input cells each
 * output position sees into a (C/group * K) x P matrix (K kernel cells, P
 * output positions; cells in the padding read as zero), and
 *     Y_g[M/group x P] = W_g[M/group x C/group*K] * col
 * runs on rt_sgemm for float.  ConvTranspose is the adjoint: col = W_g^T * X_g,
 * then col2im adds each column cell into the output position it came from.
 *
 * The integer forms subtract the zero points first (so padding, which holds
 * the zero point, reads as 0) and accumulate in int64, which cannot overflow
 * for any model-sized reduction; ConvInteger stores the sum as int32,
 * QLinearConv adds the int32 bias, rescales by x_scale * w_scale / y_scale,
 * rounds half to even and saturates to the output type.
 *
 * Shapes arrive at run time and are checked there (channel counts against W
 * and group, kernel_shape against W, output extents non-empty); attributes
 * are checked at load by rt_window_check().
 */
#include <math.h>
#include <string.h>

#include "window.h"

#define LIM ((int64_t)1 << 31)

/* ---- geometry ------------------------------------------------------------------ */

struct cshape {
	int64_t N, C, M, G;      /* batch, input channels, output channels, groups */
	int64_t K, I, P;         /* kernel cells, input and output spatial cells */
	int64_t CK;              /* rows of one group's col: C/G * K */
	struct rt_window w;
};

/* Product a * b, or -1 when it passes 2^48. */
static int64_t mul(int64_t a, int64_t b)
{
	if (a < 0 || b < 0 || (a != 0 && b > ((int64_t)1 << 48) / a))
		return -1;
	return a * b;
}

/* What both geometries start with: X and W of one rank, 3 to RT_MAX_RANK;
 * N, C and G. */
static int shape_start(struct rt_exec *x, const struct rt_node *n, const struct rt_tensor *X,
                       const struct rt_tensor *W, struct cshape *cs)
{
	if (X->rank < 3 || X->rank > RT_MAX_RANK)
		return rt_fail(x, n, STRATA_RUNTIME, "X must have rank 3 to %d, not %d", RT_MAX_RANK,
		               X->rank);
	if (W->rank != X->rank)
		return rt_fail(x, n, STRATA_RUNTIME, "W has rank %d, X rank %d", W->rank, X->rank);
	cs->N = X->dims[0];
	cs->C = X->dims[1];
	cs->G = rt_attr_int(n, "group", 1);
	return 0;
}

/* What both end with: the cell counts of cs->w and CK = ch * K (ch: one
 * group's channels on the col side).  Fails when col (CK x P) or Y (N x M x
 * its cells per channel: P, or I for ConvTranspose) would pass 2^48 cells. */
static int shape_finish(struct rt_exec *x, const struct rt_node *n, int64_t ch, int transposed,
                        struct cshape *cs)
{
	int r = cs->w.r;
	cs->K = rt_window_cells(r, cs->w.k);
	cs->I = rt_window_cells(r, cs->w.in);
	cs->P = rt_window_cells(r, cs->w.out);
	cs->CK = mul(ch, cs->K);
	int64_t ycells = transposed ? cs->I : cs->P;
	if (cs->K < 0 || cs->I < 0 || cs->P < 0 || cs->CK < 0 || mul(cs->CK, cs->P) < 0 ||
	    mul(cs->N, mul(cs->M, ycells)) < 0)
		return rt_fail(x, n, STRATA_RUNTIME, "convolution too large");
	return 0;
}

/* The common checks of X and W (forward convolutions): ranks, group and
 * channel counts, kernel_shape against W; then the window geometry. */
static int conv_shape(struct rt_exec *x, const struct rt_node *n, const struct rt_tensor *X,
                      const struct rt_tensor *W, struct cshape *cs)
{
	int rc = shape_start(x, n, X, W, cs);
	if (rc)
		return rc;
	int r = X->rank - 2;
	cs->M = W->dims[0];
	if (cs->G < 1 || cs->C % cs->G != 0 || cs->M % cs->G != 0 || W->dims[1] != cs->C / cs->G)
		return rt_fail(x, n, STRATA_RUNTIME,
		               "X has %lld channels and W is %lld x %lld for group %lld",
		               (long long)cs->C, (long long)cs->M, (long long)W->dims[1],
		               (long long)cs->G);
	size_t nk;
	const int64_t *ks = rt_attr_ints(n, "kernel_shape", &nk);
	if (ks && (long)nk != r)
		return rt_fail(x, n, STRATA_RUNTIME, "kernel_shape has %zu entries, W %d spatial dims",
		               nk, r);
	for (int i = 0; ks && i < r; i++)
		if (ks[i] != W->dims[2 + i])
			return rt_fail(x, n, STRATA_RUNTIME, "kernel_shape[%d] = %lld but W has %lld", i,
			               (long long)ks[i], (long long)W->dims[2 + i]);
	if ((rc = rt_window_make(x, n, r, X->dims + 2, W->dims + 2, 0, &cs->w)))
		return rc;
	return shape_finish(x, n, cs->C / cs->G, 0, cs);
}

/* ---- im2col and col2im -------------------------------------------------------------
 * For C channels of src (each w->in cells) write rows (c, kernel offset) of
 * w->out cells: the source cell at out * stride - pad + k * dilation, or 0
 * outside the input.  col2im is the adjoint: it adds the rows into dst.
 *
 * Both walk the window the same way (WINDOW_WALK): per channel, kernel
 * offset and output row (every axis but the last), with ic the channel's
 * cells of the image (src or dst) and col at the row's first cell.  A row
 * that lies in the padding of some axis runs PAD(); any other runs
 * CELL(j, at, inside) for each of its cells j, where ic[at] is the image
 * cell it pairs with and inside says whether that cell exists (it may lie
 * in the padding of the last axis). */
#define WINDOW_WALK(IMG_T, img, PAD, CELL)                                                  \
	int r = w->r, last = r - 1;                                                         \
	int64_t I = rt_window_cells(r, w->in), K = rt_window_cells(r, w->k);                \
	int64_t P = rt_window_cells(r, w->out), ol = w->out[last];                          \
	for (int64_t c = 0; c < C; c++) {                                                   \
		IMG_T *ic = img + c * I;                                                    \
		int64_t kk[RT_WINDOW_MAX] = {0};                                            \
		for (int64_t kr = 0; kr < K; kr++) {                                        \
			int64_t o[RT_WINDOW_MAX] = {0};                                     \
			int64_t base = kk[last] * w->d[last] - w->pb[last];                 \
			for (int64_t p = 0; p < P; p += ol) {                               \
				int64_t off = 0;                                            \
				int ok = 1;                                                 \
				for (int i = 0; i < last && ok; i++) {                      \
					int64_t pos = o[i] * w->s[i] - w->pb[i] +           \
					              kk[i] * w->d[i];                      \
					ok = pos >= 0 && pos < w->in[i];                    \
					off = off * w->in[i] + pos;                         \
				}                                                           \
				if (!ok) {                                                  \
					PAD();                                              \
				} else {                                                    \
					off *= w->in[last];                                 \
					for (int64_t j = 0; j < ol; j++) {                  \
						int64_t pos = j * w->s[last] + base;        \
						CELL(j, off + pos, pos >= 0 && pos < w->in[last]); \
					}                                                   \
				}                                                           \
				col += ol;                                                  \
				for (int i = last - 1; i >= 0; i--) {                      \
					if (++o[i] < w->out[i])                             \
						break;                                      \
					o[i] = 0;                                           \
				}                                                           \
			}                                                                   \
			for (int i = last; i >= 0; i--) {                                   \
				if (++kk[i] < w->k[i])                                      \
					break;                                              \
				kk[i] = 0;                                                  \
			}                                                                   \
		}                                                                           \
	}

#define GATHER_PAD() memset(col, 0, (size_t)ol * sizeof *col)
#define GATHER_CELL(j, at, inside) (col[j] = (inside) ? ic[at] : 0)
#define SCATTER_PAD() ((void)0)
#define SCATTER_CELL(j, at, inside)                                                         \
	do {                                                                                \
		if (inside)                                                                 \
			ic[at] += col[j];                                                   \
	} while (0)

#define DEFINE_IM2COL(name, T)                                                              \
	static void name(const T *src, int64_t C, const struct rt_window *w, T *col)        \
	{                                                                                   \
		WINDOW_WALK(const T, src, GATHER_PAD, GATHER_CELL)                          \
	}

DEFINE_IM2COL(im2col_f32, float)
DEFINE_IM2COL(im2col_f64, double)
DEFINE_IM2COL(im2col_i32, int32_t)

#define DEFINE_COL2IM(name, T)                                                              \
	static void name(const T *col, int64_t C, const struct rt_window *w, T *dst)        \
	{                                                                                   \
		WINDOW_WALK(T, dst, SCATTER_PAD, SCATTER_CELL)                              \
	}

DEFINE_COL2IM(col2im_f32, float)
DEFINE_COL2IM(col2im_f64, double)

/* C[M x N] = op(A) * B for double (A is M x K, or K x M when ta), beta 0. */
static void dgemm(int ta, int64_t M, int64_t N, int64_t K, const double *A, const double *B,
                  double *C)
{
	for (int64_t i = 0; i < M; i++) {
		double *c = C + i * N;
		for (int64_t j = 0; j < N; j++)
			c[j] = 0;
		for (int64_t k = 0; k < K; k++) {
			double a = ta ? A[k * M + i] : A[i * K + k];
			if (a == 0)
				continue;
			const double *b = B + k * N;
			for (int64_t j = 0; j < N; j++)
				c[j] += a * b[j];
		}
	}
}

/* Does the window read the input cells exactly as they lie (a 1x1 kernel
 * with unit strides and no pads), so im2col would be a plain copy? */
static int identity_window(const struct rt_window *w)
{
	for (int i = 0; i < w->r; i++)
		if (w->k[i] != 1 || w->s[i] != 1 || w->pb[i] != 0 || w->pe[i] != 0)
			return 0;
	return 1;
}

static int check_bias(struct rt_exec *x, const struct rt_node *n, const struct rt_tensor *B,
                      int64_t M)
{
	if (B && (B->rank != 1 || B->dims[0] != M))
		return rt_fail(x, n, STRATA_RUNTIME, "B must be a vector of %lld cells", (long long)M);
	return 0;
}

/* Output 0: N x M x spatial (cs->w.r extents), of type dtype. */
static int conv_output(struct rt_exec *x, const struct rt_node *n, const struct cshape *cs,
                       const int64_t *spatial, int dtype, struct rt_tensor **Y)
{
	int64_t dims[RT_MAX_RANK] = {cs->N, cs->M};
	memcpy(dims + 2, spatial, (size_t)cs->w.r * sizeof *dims);
	return rt_output(x, n, 0, dtype, cs->w.r + 2, dims, Y);
}

/* Scratch for one group's col matrix: CK x P cells of es bytes. */
static int col_scratch(struct rt_exec *x, const struct rt_node *n, const struct cshape *cs,
                       size_t es, void **col)
{
	if (!(*col = rt_scratch(x, (size_t)(cs->CK * cs->P) * es + 1)))
		return rt_nomem(x, n, "%lld x %lld columns",
		               (long long)cs->CK, (long long)cs->P);
	return 0;
}

/* Add B[m] to the cells cells of each output channel m of batch item b of
 * the float or double Y (nothing when B is absent). */
static void add_bias(const struct rt_tensor *B, struct rt_tensor *Y, int64_t b, int64_t M,
                     int64_t cells)
{
	for (int64_t m = 0; B && m < M; m++) {
		int64_t yo = (b * M + m) * cells;
		if (Y->dtype == BASE_DT_FLOAT) {
			float bv = ((const float *)B->data)[m], *y = (float *)Y->data + yo;
			for (int64_t p = 0; p < cells; p++)
				y[p] += bv;
		} else {
			double bv = ((const double *)B->data)[m], *y = (double *)Y->data + yo;
			for (int64_t p = 0; p < cells; p++)
				y[p] += bv;
		}
	}
}

/* ---- Conv -------------------------------------------------------------------------------- */

static int run_conv(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *X = rt_input(x, n, 0), *W = rt_input(x, n, 1);
	const struct rt_tensor *B = rt_input(x, n, 2);
	struct cshape cs;
	int rc = conv_shape(x, n, X, W, &cs);
	if (rc || (rc = check_bias(x, n, B, cs.M)))
		return rc;
	struct rt_tensor *Y;
	if ((rc = conv_output(x, n, &cs, cs.w.out, X->dtype, &Y)))
		return rc;
	if (cs.N == 0 || cs.M == 0 || cs.P == 0)
		return 0;
	int direct = identity_window(&cs.w);
	int64_t Cg = cs.C / cs.G, Mg = cs.M / cs.G;
	size_t es = base_dtype_size(X->dtype);
	void *col = NULL;
	if (!direct && (rc = col_scratch(x, n, &cs, es, &col)))
		return rc;
	for (int64_t b = 0; b < cs.N; b++) {
		for (int64_t g = 0; g < cs.G; g++) {
			int64_t xo = (b * cs.C + g * Cg) * cs.I, yo = (b * cs.M + g * Mg) * cs.P;
			int64_t wo = g * Mg * cs.CK;
			if (X->dtype == BASE_DT_FLOAT) {
				const float *src = (const float *)X->data + xo;
				if (!direct)
					im2col_f32(src, Cg, &cs.w, col);
				rt_sgemm(0, 0, Mg, cs.P, cs.CK, 1.0f, (const float *)W->data + wo, cs.CK,
				         direct ? src : col, cs.P, 0.0f, (float *)Y->data + yo, cs.P);
			} else {
				const double *src = (const double *)X->data + xo;
				if (!direct)
					im2col_f64(src, Cg, &cs.w, col);
				dgemm(0, Mg, cs.P, cs.CK, (const double *)W->data + wo,
				      direct ? src : col, (double *)Y->data + yo);
			}
		}
		add_bias(B, Y, b, cs.M, cs.P);
	}
	return 0;
}

/* Load-time checks shared by every convolution: inputs present, group and
 * window attributes in range. */
static int init_common(struct rt_node *n, int nin_min, struct strata_error *err)
{
	if (n->nin < nin_min || n->nout < 1 || n->out[0] < 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "needs %d inputs and an output",
		                   nin_min);
	for (int i = 0; i < nin_min; i++)
		if (n->in[i] < 0)
			return rt_node_err(n, err, STRATA_INVALID_GRAPH, "input %d is missing", i);
	int64_t g = rt_attr_int(n, "group", 1);
	if (g < 1 || g > LIM)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "group %lld out of range",
		                   (long long)g);
	return rt_window_check(n, 0, err);
}

/* X, W and the optional B (input 2) share one float or double type. */
static int init_float_conv(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	int rc = init_common(n, 2, err);
	if (rc)
		return rc;
	int dt = rt_graph_dtype(g, n->in[0]);
	if (dt != BASE_DT_FLOAT && dt != BASE_DT_DOUBLE)
		return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED, "%s (opset %d): element type %s",
		                   n->op, n->opset, base_dtype_name(dt));
	if (rt_graph_dtype(g, n->in[1]) != dt ||
	    (n->nin > 2 && n->in[2] >= 0 && rt_graph_dtype(g, n->in[2]) != dt))
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "W and B must be %s like X",
		                   base_dtype_name(dt));
	rt_graph_set_dtype(g, n->out[0], dt);
	return 0;
}

static int init_conv(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	int rc = init_float_conv(n, g, err);
	if (rc)
		return rc;
	n->run = run_conv;
	return 0;
}

/* ---- ConvTranspose ------------------------------------------------------------------
 * Geometry in window terms: w.in is the output's spatial extent and w.out
 * the input's, so col2im over w scatters each input position's column into
 * the output cells out = in * stride - pad + k * dilation. */

static int convt_shape(struct rt_exec *x, const struct rt_node *n, const struct rt_tensor *X,
                       const struct rt_tensor *W, struct cshape *cs)
{
	int rc = shape_start(x, n, X, W, cs);
	if (rc)
		return rc;
	int r = X->rank - 2;
	if (cs->G < 1 || W->dims[0] != cs->C || cs->C % cs->G != 0)
		return rt_fail(x, n, STRATA_RUNTIME, "X has %lld channels, W %lld, group %lld",
		               (long long)cs->C, (long long)W->dims[0], (long long)cs->G);
	cs->M = mul(W->dims[1], cs->G);
	if (cs->M < 0)
		return rt_fail(x, n, STRATA_RUNTIME, "too many output channels");
	struct rt_window *w = &cs->w;
	memset(w, 0, sizeof *w);
	w->r = r;
	size_t c;
	const int64_t *ks = rt_attr_ints(n, "kernel_shape", &c);
	if (ks && (long)c != r)
		return rt_fail(x, n, STRATA_RUNTIME, "kernel_shape has %zu entries, W %d spatial dims",
		               c, r);
	const int64_t *st = rt_attr_ints(n, "strides", &c);
	if (st && (long)c != r)
		return rt_fail(x, n, STRATA_RUNTIME, "strides has %zu entries for %d dims", c, r);
	const int64_t *dl = rt_attr_ints(n, "dilations", &c);
	if (dl && (long)c != r)
		return rt_fail(x, n, STRATA_RUNTIME, "dilations has %zu entries for %d dims", c, r);
	const int64_t *pads = rt_attr_ints(n, "pads", &c);
	if (pads && (long)c != 2 * r)
		return rt_fail(x, n, STRATA_RUNTIME, "pads has %zu entries for %d dims", c, r);
	const int64_t *op = rt_attr_ints(n, "output_padding", &c);
	if (op && (long)c != r)
		return rt_fail(x, n, STRATA_RUNTIME, "output_padding has %zu entries for %d dims", c,
		               r);
	const int64_t *os = rt_attr_ints(n, "output_shape", &c);
	if (os && (long)c == r + 2)
		os += 2; /* given with the batch and channel axes */
	else if (os && (long)c != r)
		return rt_fail(x, n, STRATA_RUNTIME, "output_shape has %zu entries for %d dims", c, r);
	int ap = rt_window_autopad(n);
	for (int i = 0; i < r; i++) {
		int64_t k = W->dims[2 + i], in = X->dims[2 + i];
		if (ks && ks[i] != k)
			return rt_fail(x, n, STRATA_RUNTIME, "kernel_shape[%d] = %lld but W has %lld", i,
			               (long long)ks[i], (long long)k);
		if (k < 1 || k > LIM)
			return rt_fail(x, n, STRATA_RUNTIME, "kernel extent %lld out of range",
			               (long long)k);
		w->k[i] = k;
		w->s[i] = st ? st[i] : 1;
		w->d[i] = dl ? dl[i] : 1;
		w->out[i] = in;
		int64_t ek = (k - 1) * w->d[i] + 1, opad = op ? op[i] : 0;
		int64_t full = w->s[i] * (in - 1) + opad + ek; /* extent before pads */
		if (os || ap == RT_AUTOPAD_SAME_UPPER || ap == RT_AUTOPAD_SAME_LOWER) {
			int64_t o = os ? os[i] : in * w->s[i];
			int64_t tot = full - o;
			/* floor halves, so a negative total (output_shape larger than
			 * the natural extent) grows the output at the end */
			int64_t half = tot >= 0 ? tot / 2 : -((-tot + 1) / 2);
			if (ap == RT_AUTOPAD_SAME_UPPER) {
				w->pb[i] = half;
				w->pe[i] = tot - half;
			} else {
				w->pb[i] = tot - half;
				w->pe[i] = half;
			}
			w->in[i] = o;
		} else {
			if (pads && ap == RT_AUTOPAD_NOTSET) {
				w->pb[i] = pads[i];
				w->pe[i] = pads[i + r];
			}
			w->in[i] = full - w->pb[i] - w->pe[i];
		}
		if (w->in[i] < 1 || w->in[i] > ((int64_t)1 << 40))
			return rt_fail(x, n, STRATA_RUNTIME, "output extent %lld in spatial dimension %d",
			               (long long)w->in[i], i);
	}
	/* I: output cells per channel, P: input cells per channel */
	return shape_finish(x, n, cs->M / cs->G, 1, cs);
}

static int run_convtranspose(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *X = rt_input(x, n, 0), *W = rt_input(x, n, 1);
	const struct rt_tensor *B = rt_input(x, n, 2);
	struct cshape cs;
	int rc = convt_shape(x, n, X, W, &cs);
	if (rc || (rc = check_bias(x, n, B, cs.M)))
		return rc;
	struct rt_tensor *Y;
	if ((rc = conv_output(x, n, &cs, cs.w.in, X->dtype, &Y)))
		return rc;
	size_t es = base_dtype_size(X->dtype);
	int64_t total = cs.N * cs.M * cs.I;
	memset(Y->data, 0, (size_t)total * es);
	if (total == 0)
		return 0;
	int64_t Cg = cs.C / cs.G, Mg = cs.M / cs.G;
	void *col;
	if ((rc = col_scratch(x, n, &cs, es, &col)))
		return rc;
	for (int64_t b = 0; b < cs.N; b++) {
		for (int64_t g = 0; g < cs.G; g++) {
			int64_t xo = (b * cs.C + g * Cg) * cs.P, yo = (b * cs.M + g * Mg) * cs.I;
			int64_t wo = g * Cg * cs.CK;
			if (X->dtype == BASE_DT_FLOAT) {
				rt_sgemm(1, 0, cs.CK, cs.P, Cg, 1.0f, (const float *)W->data + wo, cs.CK,
				         (const float *)X->data + xo, cs.P, 0.0f, col, cs.P);
				col2im_f32(col, Mg, &cs.w, (float *)Y->data + yo);
			} else {
				dgemm(1, cs.CK, cs.P, Cg, (const double *)W->data + wo,
				      (const double *)X->data + xo, col);
				col2im_f64(col, Mg, &cs.w, (double *)Y->data + yo);
			}
		}
		add_bias(B, Y, b, cs.M, cs.I);
	}
	return 0;
}

/* output_padding and output_shape: non-negative, bounded. */
static int check_transpose_attrs(const struct rt_node *n, struct strata_error *err)
{
	static const char *const names[] = {"output_padding", "output_shape"};
	for (int k = 0; k < 2; k++) {
		size_t c;
		const int64_t *v = rt_attr_ints(n, names[k], &c);
		for (size_t i = 0; v && i < c; i++)
			if (v[i] < 0 || v[i] > LIM)
				return rt_node_err(n, err, STRATA_INVALID_GRAPH, "%s[%zu] = %lld out of range",
				                   names[k], i, (long long)v[i]);
	}
	return 0;
}

static int init_convtranspose(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	int rc = init_float_conv(n, g, err);
	if (rc || (rc = check_transpose_attrs(n, err)))
		return rc;
	n->run = run_convtranspose;
	return 0;
}

/* ---- ConvInteger and QLinearConv ------------------------------------------------------ */

/* Cell i of an 8-bit tensor as an int. */
static int32_t q8(const struct rt_tensor *t, int64_t i)
{
	return t->dtype == BASE_DT_UINT8 ? ((const uint8_t *)t->data)[i]
	                                 : ((const int8_t *)t->data)[i];
}

/* A zero point (or scale) that is either one cell or one cell per output
 * channel: how many cells it has (1 or M), or -1. */
static int64_t per_channel(const struct rt_tensor *t, int64_t M)
{
	int64_t c = runtime_tensor_count(t);
	if (t->rank <= 1 && (c == 1 || c == M))
		return c;
	return -1;
}

/* The integer accumulation shared by both ops: *acc (scratch) gets
 * acc[b][m][p] (int64, N x M x P) of (x - xzp) * (w - wzp[m]).  wzp may be
 * NULL (zero) or have 1 or M cells. */
static int int_conv(struct rt_exec *x, const struct rt_node *n, const struct rt_tensor *X,
                    const struct rt_tensor *xzp, const struct rt_tensor *W,
                    const struct rt_tensor *wzp, const struct cshape *cs, int64_t **accp)
{
	int64_t *acc = *accp = rt_scratch(x, (size_t)(cs->N * cs->M * cs->P) * sizeof *acc + 1);
	if (!acc)
		return rt_nomem(x, n, "kernel scratch");
	if ((xzp && (runtime_tensor_count(xzp) != 1 || xzp->dtype != X->dtype)) ||
	    (wzp && (per_channel(wzp, cs->M) < 0 || wzp->dtype != W->dtype)))
		return rt_fail(x, n, STRATA_RUNTIME,
		               "zero points must be one cell (W: or one per output channel) of the "
		               "input's type");
	int64_t Cg = cs->C / cs->G, Mg = cs->M / cs->G;
	int32_t *xs = rt_scratch(x, (size_t)(Cg * cs->I) * sizeof *xs + 1);
	int32_t *col = rt_scratch(x, (size_t)(cs->CK * cs->P) * sizeof *col + 1);
	int32_t *ws = rt_scratch(x, (size_t)(cs->CK) * sizeof *ws + 1);
	if (!xs || !col || !ws)
		return rt_nomem(x, n, "kernel scratch");
	int32_t xz = xzp ? q8(xzp, 0) : 0;
	int64_t nwz = wzp ? runtime_tensor_count(wzp) : 0;
	for (int64_t b = 0; b < cs->N; b++) {
		for (int64_t g = 0; g < cs->G; g++) {
			int64_t xo = (b * cs->C + g * Cg) * cs->I;
			for (int64_t i = 0; i < Cg * cs->I; i++)
				xs[i] = q8(X, xo + i) - xz;
			im2col_i32(xs, Cg, &cs->w, col);
			for (int64_t mm = 0; mm < Mg; mm++) {
				int64_t m = g * Mg + mm;
				int32_t wz = wzp ? q8(wzp, nwz == 1 ? 0 : m) : 0;
				for (int64_t k = 0; k < cs->CK; k++)
					ws[k] = q8(W, m * cs->CK + k) - wz;
				int64_t *a = acc + (b * cs->M + m) * cs->P;
				memset(a, 0, (size_t)cs->P * sizeof *a);
				for (int64_t k = 0; k < cs->CK; k++) {
					int64_t wv = ws[k];
					if (wv == 0)
						continue;
					const int32_t *c = col + k * cs->P;
					for (int64_t p = 0; p < cs->P; p++)
						a[p] += wv * c[p];
				}
			}
		}
	}
	return 0;
}

static int run_convinteger(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *X = rt_input(x, n, 0), *W = rt_input(x, n, 1);
	struct cshape cs;
	int rc = conv_shape(x, n, X, W, &cs);
	if (rc)
		return rc;
	struct rt_tensor *Y;
	int64_t *acc;
	if ((rc = conv_output(x, n, &cs, cs.w.out, BASE_DT_INT32, &Y)) ||
	    (rc = int_conv(x, n, X, rt_input(x, n, 2), W, rt_input(x, n, 3), &cs, &acc)))
		return rc;
	int64_t total = cs.N * cs.M * cs.P;
	int32_t *y = Y->data;
	for (int64_t i = 0; i < total; i++)
		y[i] = (int32_t)acc[i];
	return 0;
}

static int is_q8(int dt)
{
	return dt == BASE_DT_UINT8 || dt == BASE_DT_INT8;
}

static int init_convinteger(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	int rc = init_common(n, 2, err);
	if (rc)
		return rc;
	int xt = rt_graph_dtype(g, n->in[0]), wt = rt_graph_dtype(g, n->in[1]);
	if (!is_q8(xt) || !is_q8(wt))
		return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED,
		                   "ConvInteger (opset %d): element types %s, %s", n->opset,
		                   base_dtype_name(xt), base_dtype_name(wt));
	rt_graph_set_dtype(g, n->out[0], BASE_DT_INT32);
	n->run = run_convinteger;
	return 0;
}

/* One float scale cell: scalar, or cell i of a per-channel vector. */
static float scale_at(const struct rt_tensor *t, int64_t i)
{
	return ((const float *)t->data)[runtime_tensor_count(t) == 1 ? 0 : i];
}

static int run_qlinearconv(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *X = rt_input(x, n, 0), *xs = rt_input(x, n, 1);
	const struct rt_tensor *xz = rt_input(x, n, 2), *W = rt_input(x, n, 3);
	const struct rt_tensor *wsc = rt_input(x, n, 4), *wz = rt_input(x, n, 5);
	const struct rt_tensor *ys = rt_input(x, n, 6), *yz = rt_input(x, n, 7);
	const struct rt_tensor *B = rt_input(x, n, 8);
	struct cshape cs;
	int rc = conv_shape(x, n, X, W, &cs);
	if (rc || (rc = check_bias(x, n, B, cs.M)))
		return rc;
	if (!xs || !wsc || !ys || runtime_tensor_count(xs) != 1 || runtime_tensor_count(ys) != 1 ||
	    per_channel(wsc, cs.M) < 0)
		return rt_fail(x, n, STRATA_RUNTIME,
		               "x_scale and y_scale must be one cell, w_scale one or one per output "
		               "channel");
	if (yz && runtime_tensor_count(yz) != 1)
		return rt_fail(x, n, STRATA_RUNTIME, "y_zero_point must be one cell");
	int ydt = yz ? yz->dtype : X->dtype;
	struct rt_tensor *Y;
	int64_t *acc;
	if ((rc = conv_output(x, n, &cs, cs.w.out, ydt, &Y)) ||
	    (rc = int_conv(x, n, X, xz, W, wz, &cs, &acc)))
		return rc;
	int32_t zy = yz ? q8(yz, 0) : 0;
	int lo = ydt == BASE_DT_UINT8 ? 0 : -128, hi = ydt == BASE_DT_UINT8 ? 255 : 127;
	float sx = scale_at(xs, 0), sy = scale_at(ys, 0);
	for (int64_t b = 0; b < cs.N; b++) {
		for (int64_t m = 0; m < cs.M; m++) {
			float mult = sx * scale_at(wsc, m) / sy;
			int64_t bias = B ? ((const int32_t *)B->data)[m] : 0;
			int64_t o = (b * cs.M + m) * cs.P;
			for (int64_t p = 0; p < cs.P; p++) {
				/* rintf rounds half to even in the default rounding mode */
				float v = rintf((float)(acc[o + p] + bias) * mult) + (float)zy;
				int q = isnan(v) ? zy : v < lo ? lo : v > hi ? hi : (int)v;
				if (ydt == BASE_DT_UINT8)
					((uint8_t *)Y->data)[o + p] = (uint8_t)q;
				else
					((int8_t *)Y->data)[o + p] = (int8_t)q;
			}
		}
	}
	return 0;
}

static int init_qlinearconv(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	int rc = init_common(n, 8, err);
	if (rc)
		return rc;
	int xt = rt_graph_dtype(g, n->in[0]), wt = rt_graph_dtype(g, n->in[3]);
	int yt = rt_graph_dtype(g, n->in[7]);
	if (!is_q8(xt) || !is_q8(wt) || !is_q8(yt))
		return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED,
		                   "QLinearConv (opset %d): element types %s, %s, %s", n->opset,
		                   base_dtype_name(xt), base_dtype_name(wt), base_dtype_name(yt));
	static const int scales[] = {1, 4, 6}; /* x_scale, w_scale, y_scale */
	for (int i = 0; i < 3; i++)
		if (rt_graph_dtype(g, n->in[scales[i]]) != BASE_DT_FLOAT)
			return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED,
			                   "QLinearConv (opset %d): scale type %s", n->opset,
			                   base_dtype_name(rt_graph_dtype(g, n->in[scales[i]])));
	if (n->nin > 8 && n->in[8] >= 0 && rt_graph_dtype(g, n->in[8]) != BASE_DT_INT32)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "B must be int32");
	rt_graph_set_dtype(g, n->out[0], yt);
	n->run = run_qlinearconv;
	return 0;
}

const struct rt_opdef rt_ops_conv[] = {
	{"", "Conv", 1, init_conv, NULL},
	{"", "ConvTranspose", 1, init_convtranspose, NULL},
	{"", "ConvInteger", 10, init_convinteger, NULL},
	{"", "QLinearConv", 10, init_qlinearconv, NULL},
	{.op = NULL},
};
