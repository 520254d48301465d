/*
 * nn.c: BatchNormalization, InstanceNormalization, LRN,
 * MeanVarianceNormalization, DepthToSpace and SpaceToDepth.
 *
 * The normalizations work on N x C x spatial... tensors of float or double;
 * statistics are accumulated in double whatever the element type, and the
 * per-channel parameters (scale, bias, mean, variance) may each be float or
 * double (BatchNormalization allows them to differ from X from opset 15).
 * BatchNormalization in training mode (opset 14 on) normalizes with the
 * batch statistics and also returns the running mean and variance updated
 * with momentum; the variance is the population one, as ONNX specifies.
 *
 * DepthToSpace and SpaceToDepth only move cells, so they take any element
 * type and copy cells by size.  Shapes arrive at run time and are checked
 * there: the parameter vectors must have C cells, the channel count must be
 * divisible by blocksize^2, the spatial dims by blocksize.
 */
#include <math.h>
#include <string.h>

#include "../kernel.h"

#define LIM ((int64_t)1 << 31)

static double get(const struct rt_tensor *t, int64_t i)
{
	return t->dtype == BASE_DT_FLOAT ? ((const float *)t->data)[i]
	                                 : ((const double *)t->data)[i];
}

static void put(struct rt_tensor *t, int64_t i, double v)
{
	if (t->dtype == BASE_DT_FLOAT)
		((float *)t->data)[i] = (float)v;
	else
		((double *)t->data)[i] = v;
}

static int is_real(int dt)
{
	return dt == BASE_DT_FLOAT || dt == BASE_DT_DOUBLE;
}

/* Inputs 0..nreq-1 present and float or double; output 0 gets X's type. */
static int init_real(struct rt_node *n, struct rt_graph *g, int nreq, struct strata_error *err)
{
	if (n->nin < nreq || n->nout < 1 || n->out[0] < 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "needs %d inputs and an output", nreq);
	for (int i = 0; i < nreq; i++) {
		if (n->in[i] < 0)
			return rt_node_err(n, err, STRATA_INVALID_GRAPH, "input %d is missing", i);
		int dt = rt_graph_dtype(g, n->in[i]);
		if (!is_real(dt))
			return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED,
			                   "%s (opset %d): element type %s", n->op, n->opset,
			                   base_dtype_name(dt));
	}
	rt_graph_set_dtype(g, n->out[0], rt_graph_dtype(g, n->in[0]));
	return 0;
}

/* X of rank >= 2 viewed as N x C x S; the product checked. */
static int ncs(struct rt_exec *x, const struct rt_node *n, const struct rt_tensor *X, int64_t *N,
               int64_t *C, int64_t *S)
{
	if (X->rank < 2)
		return rt_fail(x, n, STRATA_RUNTIME, "X must have rank 2 or more, not %d", X->rank);
	int64_t s = 1;
	for (int i = 2; i < X->rank; i++) {
		if (X->dims[i] != 0 && s > ((int64_t)1 << 48) / X->dims[i])
			return rt_fail(x, n, STRATA_RUNTIME, "X too large");
		s *= X->dims[i];
	}
	*N = X->dims[0];
	*C = X->dims[1];
	*S = s;
	return 0;
}

/* Every tensor of ps[0..k) is a vector of C cells. */
static int check_vectors(struct rt_exec *x, const struct rt_node *n,
                         const struct rt_tensor *const *ps, int k, int64_t C)
{
	for (int i = 0; i < k; i++)
		if (!ps[i] || ps[i]->rank != 1 || ps[i]->dims[0] != C)
			return rt_fail(x, n, STRATA_RUNTIME,
			               "input %d must be a vector of %lld cells (one per channel)", i + 1,
			               (long long)C);
	return 0;
}

/* ---- BatchNormalization ----------------------------------------------------------------- */

static int run_batchnorm(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *X = rt_input(x, n, 0);
	const struct rt_tensor *p[4] = {rt_input(x, n, 1), rt_input(x, n, 2), rt_input(x, n, 3),
	                                rt_input(x, n, 4)};
	int64_t N, C, S;
	int rc = ncs(x, n, X, &N, &C, &S);
	if (rc || (rc = check_vectors(x, n, p, 4, C)))
		return rc;
	double eps = rt_attr_float(n, "epsilon", 1e-5f);
	double mom = rt_attr_float(n, "momentum", 0.9f);
	int training = n->opset >= 14 && rt_attr_int(n, "training_mode", 0) != 0;
	struct rt_tensor *Y, *rm = NULL, *rv = NULL;
	if ((rc = rt_output(x, n, 0, X->dtype, X->rank, X->dims, &Y)))
		return rc;
	if (training && n->nout > 1 && n->out[1] >= 0 &&
	    (rc = rt_output(x, n, 1, p[2]->dtype, 1, &C, &rm)))
		return rc;
	if (training && n->nout > 2 && n->out[2] >= 0 &&
	    (rc = rt_output(x, n, 2, p[3]->dtype, 1, &C, &rv)))
		return rc;
	for (int64_t c = 0; c < C; c++) {
		double mean = get(p[2], c), var = get(p[3], c);
		if (training) {
			double sum = 0, sq = 0;
			int64_t cnt = N * S;
			for (int64_t b = 0; b < N; b++)
				for (int64_t s = 0; s < S; s++)
					sum += get(X, (b * C + c) * S + s);
			double bm = cnt ? sum / (double)cnt : 0;
			for (int64_t b = 0; b < N; b++)
				for (int64_t s = 0; s < S; s++) {
					double d = get(X, (b * C + c) * S + s) - bm;
					sq += d * d;
				}
			double bv = cnt ? sq / (double)cnt : 0;
			if (rm)
				put(rm, c, mean * mom + bm * (1 - mom));
			if (rv)
				put(rv, c, var * mom + bv * (1 - mom));
			mean = bm;
			var = bv;
		}
		double k = get(p[0], c) / sqrt(var + eps), b0 = get(p[1], c) - mean * k;
		for (int64_t b = 0; b < N; b++) {
			int64_t o = (b * C + c) * S;
			if (X->dtype == BASE_DT_FLOAT) {
				const float *xv = (const float *)X->data + o;
				float *yv = (float *)Y->data + o, kf = (float)k, bf = (float)b0;
				for (int64_t s = 0; s < S; s++)
					yv[s] = xv[s] * kf + bf;
			} else {
				const double *xv = (const double *)X->data + o;
				double *yv = (double *)Y->data + o;
				for (int64_t s = 0; s < S; s++)
					yv[s] = xv[s] * k + b0;
			}
		}
	}
	return 0;
}

static int init_batchnorm(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	int rc = init_real(n, g, 5, err);
	if (rc)
		return rc;
	if (n->opset < 9 && rt_attr_int(n, "spatial", 1) == 0)
		return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED,
		                   "BatchNormalization (opset %d): spatial = 0", n->opset);
	int training = n->opset >= 14 && rt_attr_int(n, "training_mode", 0) != 0;
	int extra = 0;
	for (int i = 1; i < n->nout; i++)
		extra |= n->out[i] >= 0;
	if (extra && !training)
		return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED,
		                   "BatchNormalization (opset %d): training statistics outputs without "
		                   "training_mode",
		                   n->opset);
	for (int i = 1; i < n->nout && i < 3; i++)
		if (n->out[i] >= 0)
			rt_graph_set_dtype(g, n->out[i], rt_graph_dtype(g, n->in[2 + i]));
	if (n->nout > 3)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "at most 3 outputs");
	n->run = run_batchnorm;
	return 0;
}

/* ---- InstanceNormalization --------------------------------------------------------------- */

static int run_instancenorm(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *X = rt_input(x, n, 0);
	const struct rt_tensor *p[2] = {rt_input(x, n, 1), rt_input(x, n, 2)};
	int64_t N, C, S;
	int rc = ncs(x, n, X, &N, &C, &S);
	if (rc || (rc = check_vectors(x, n, p, 2, C)))
		return rc;
	double eps = rt_attr_float(n, "epsilon", 1e-5f);
	struct rt_tensor *Y;
	if ((rc = rt_output(x, n, 0, X->dtype, X->rank, X->dims, &Y)))
		return rc;
	for (int64_t b = 0; b < N; b++) {
		for (int64_t c = 0; c < C; c++) {
			int64_t o = (b * C + c) * S;
			double sum = 0, sq = 0;
			for (int64_t s = 0; s < S; s++)
				sum += get(X, o + s);
			double mean = S ? sum / (double)S : 0;
			for (int64_t s = 0; s < S; s++) {
				double d = get(X, o + s) - mean;
				sq += d * d;
			}
			double var = S ? sq / (double)S : 0;
			double k = get(p[0], c) / sqrt(var + eps), b0 = get(p[1], c) - mean * k;
			for (int64_t s = 0; s < S; s++)
				put(Y, o + s, get(X, o + s) * k + b0);
		}
	}
	return 0;
}

static int init_instancenorm(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	int rc = init_real(n, g, 3, err);
	if (rc)
		return rc;
	n->run = run_instancenorm;
	return 0;
}

/* ---- LRN ----------------------------------------------------------------------------------
 * y = x / (bias + alpha / size * sum of x^2 over the channels
 *          [c - floor((size - 1) / 2), c + ceil((size - 1) / 2)])^beta */

static int run_lrn(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *X = rt_input(x, n, 0);
	int64_t N, C, S;
	int rc = ncs(x, n, X, &N, &C, &S);
	if (rc)
		return rc;
	int64_t size = rt_attr_int(n, "size", 1);
	double alpha = rt_attr_float(n, "alpha", 1e-4f), beta = rt_attr_float(n, "beta", 0.75f);
	double bias = rt_attr_float(n, "bias", 1.0f);
	int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
	struct rt_tensor *Y;
	if ((rc = rt_output(x, n, 0, X->dtype, X->rank, X->dims, &Y)))
		return rc;
	for (int64_t b = 0; b < N; b++)
		for (int64_t c = 0; c < C; c++)
			for (int64_t s = 0; s < S; s++) {
				int64_t c0 = c - lo < 0 ? 0 : c - lo, c1 = c + hi >= C ? C - 1 : c + hi;
				double sq = 0;
				for (int64_t j = c0; j <= c1; j++) {
					double v = get(X, (b * C + j) * S + s);
					sq += v * v;
				}
				int64_t o = (b * C + c) * S + s;
				put(Y, o, get(X, o) / pow(bias + alpha / (double)size * sq, beta));
			}
	return 0;
}

static int init_lrn(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	int rc = init_real(n, g, 1, err);
	if (rc)
		return rc;
	const struct rt_attr *a = rt_attr_find(n, "size");
	if (!a || a->type != RT_ATTR_INT || a->i < 1 || a->i > LIM)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH,
		                   "attribute size must be a positive int");
	n->run = run_lrn;
	return 0;
}

/* ---- MeanVarianceNormalization --------------------------------------------------------------
 * y = (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9), the expectations taken
 * over axes (default 0, 2, 3), as the operator's function body computes it. */

static int run_mvn(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *X = rt_input(x, n, 0);
	int r = X->rank;
	static const int64_t dflt[] = {0, 2, 3};
	size_t na;
	const int64_t *axes = rt_attr_ints(n, "axes", &na);
	if (!axes) {
		axes = dflt;
		na = 3;
	}
	int red[RT_MAX_RANK] = {0};
	for (size_t i = 0; i < na; i++) {
		int a = rt_axis(axes[i], r);
		if (a < 0)
			return rt_fail(x, n, STRATA_RUNTIME, "axis %lld out of range for rank %d",
			               (long long)axes[i], r);
		red[a] = 1;
	}
	int64_t total = 1, groups = 1;
	for (int i = 0; i < r; i++) {
		if (X->dims[i] != 0 && total > ((int64_t)1 << 48) / X->dims[i])
			return rt_fail(x, n, STRATA_RUNTIME, "X too large");
		total *= X->dims[i];
		if (!red[i])
			groups *= X->dims[i];
	}
	struct rt_tensor *Y;
	int rc = rt_output(x, n, 0, X->dtype, r, X->dims, &Y);
	if (rc || total == 0)
		return rc;
	double *sum = rt_scratch(x, (size_t)groups * 2 * sizeof *sum);
	int64_t *gi = rt_scratch(x, (size_t)total * sizeof *gi);
	if (!sum || !gi)
		return rt_nomem(x, n, "kernel scratch");
	memset(sum, 0, (size_t)groups * 2 * sizeof *sum);
	/* the group of every cell: its index over the kept axes */
	int64_t idx[RT_MAX_RANK] = {0};
	for (int64_t i = 0; i < total; i++) {
		int64_t g = 0;
		for (int d = 0; d < r; d++)
			if (!red[d])
				g = g * X->dims[d] + idx[d];
		gi[i] = g;
		for (int d = r - 1; d >= 0; d--) {
			if (++idx[d] < X->dims[d])
				break;
			idx[d] = 0;
		}
	}
	double cnt = (double)(total / groups);
	for (int64_t i = 0; i < total; i++) {
		double v = get(X, i);
		sum[2 * gi[i]] += v;
		sum[2 * gi[i] + 1] += v * v;
	}
	for (int64_t g = 0; g < groups; g++) {
		double m = sum[2 * g] / cnt, v = sum[2 * g + 1] / cnt - m * m;
		sum[2 * g] = m;
		sum[2 * g + 1] = sqrt(v > 0 ? v : 0) + 1e-9;
	}
	for (int64_t i = 0; i < total; i++)
		put(Y, i, (get(X, i) - sum[2 * gi[i]]) / sum[2 * gi[i] + 1]);
	return 0;
}

static int init_mvn(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	int rc = init_real(n, g, 1, err);
	if (rc)
		return rc;
	n->run = run_mvn;
	return 0;
}

/* ---- DepthToSpace and SpaceToDepth --------------------------------------------------------
 * Both are a reshape, a transpose and a reshape; here each output cell
 * reads its source directly.  With b the block size, for output cell
 * (n, c, h, w) of DepthToSpace (output C' = C / b^2, H' = H * b):
 *   DCR: source channel ((h % b) * b + w % b) * C' + c
 *   CRD: source channel c * b^2 + (h % b) * b + w % b
 * at (h / b, w / b).  SpaceToDepth is the inverse of DCR. */

static int run_depthspace(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *X = rt_input(x, n, 0);
	if (X->rank != 4)
		return rt_fail(x, n, STRATA_RUNTIME, "X must have rank 4, not %d", X->rank);
	int64_t b = rt_attr_int(n, "blocksize", 1);
	int d2s = strcmp(n->op, "DepthToSpace") == 0;
	int crd = d2s && strcmp(rt_attr_string(n, "mode", "DCR"), "CRD") == 0;
	int64_t N = X->dims[0], C = X->dims[1], H = X->dims[2], W = X->dims[3];
	int64_t dims[4] = {N, 0, 0, 0};
	if (H > ((int64_t)1 << 40) || W > ((int64_t)1 << 40)) /* keeps H * b in range */
		return rt_fail(x, n, STRATA_RUNTIME, "X too large");
	if (d2s) {
		if (C % (b * b) != 0)
			return rt_fail(x, n, STRATA_RUNTIME, "%lld channels do not divide by %lld^2",
			               (long long)C, (long long)b);
		dims[1] = C / (b * b);
		dims[2] = H * b;
		dims[3] = W * b;
	} else {
		if (H % b != 0 || W % b != 0)
			return rt_fail(x, n, STRATA_RUNTIME, "%lld x %lld does not divide by %lld",
			               (long long)H, (long long)W, (long long)b);
		dims[1] = C * b * b;
		dims[2] = H / b;
		dims[3] = W / b;
	}
	int64_t total = 1;
	for (int i = 0; i < 4; i++) {
		if (dims[i] < 0 || (dims[i] != 0 && total > ((int64_t)1 << 48) / dims[i]))
			return rt_fail(x, n, STRATA_RUNTIME, "output too large");
		total *= dims[i];
	}
	struct rt_tensor *Y;
	int rc = rt_output(x, n, 0, X->dtype, 4, dims, &Y);
	if (rc)
		return rc;
	size_t es = base_dtype_size(X->dtype);
	const char *src = X->data;
	char *dst = Y->data;
	/* Walk the larger-spatial tensor (the output of DepthToSpace, the input
	 * of SpaceToDepth): (bn, c, h, w) with small channel count c < Cs. */
	int64_t Cs = d2s ? dims[1] : C, Hs = d2s ? dims[2] : H, Ws = d2s ? dims[3] : W;
	int64_t Cd = Cs * b * b, Hd = Hs / b, Wd = Ws / b;
	for (int64_t bn = 0; bn < N; bn++)
		for (int64_t c = 0; c < Cs; c++)
			for (int64_t h = 0; h < Hs; h++)
				for (int64_t w = 0; w < Ws; w++) {
					int64_t off = (h % b) * b + w % b;
					int64_t cd = crd ? c * b * b + off : off * Cs + c;
					int64_t deep = ((bn * Cd + cd) * Hd + h / b) * Wd + w / b;
					int64_t wide = ((bn * Cs + c) * Hs + h) * Ws + w;
					if (d2s)
						memcpy(dst + (size_t)wide * es, src + (size_t)deep * es, es);
					else
						memcpy(dst + (size_t)deep * es, src + (size_t)wide * es, es);
				}
	return 0;
}

static int init_depthspace(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	if (n->nin < 1 || n->in[0] < 0 || n->nout < 1 || n->out[0] < 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "needs an input and an output");
	const struct rt_attr *a = rt_attr_find(n, "blocksize");
	if (!a || a->type != RT_ATTR_INT || a->i < 1 || a->i > 65536)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH,
		                   "attribute blocksize must be an int in [1, 65536]");
	const char *mode = rt_attr_string(n, "mode", "DCR");
	if (strcmp(n->op, "DepthToSpace") == 0 && strcmp(mode, "DCR") != 0 &&
	    strcmp(mode, "CRD") != 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "unknown mode \"%s\"", mode);
	int dt = rt_graph_dtype(g, n->in[0]);
	if (base_dtype_size(dt) == 0)
		return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED, "%s (opset %d): element type %s",
		                   n->op, n->opset, base_dtype_name(dt));
	rt_graph_set_dtype(g, n->out[0], dt);
	n->run = run_depthspace;
	return 0;
}

const struct rt_opdef rt_ops_nn[] = {
	{"", "BatchNormalization", 1, init_batchnorm, NULL},
	{"", "InstanceNormalization", 1, init_instancenorm, NULL},
	{"", "LRN", 1, init_lrn, NULL},
	{"", "MeanVarianceNormalization", 9, init_mvn, NULL},
	{"", "DepthToSpace", 1, init_depthspace, NULL},
	{"", "SpaceToDepth", 1, init_depthspace, NULL},
	{.op = NULL},
};
