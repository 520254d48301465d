/*
 * loss.c: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss.
 *
 * Both score a batch of class predictions against integer labels.  The
 * predictions are viewed as [N, C, D] (D = product of the trailing dims d1..dk,
 * 1 when there are none) and the labels as [N, D]; the loss of one position is
 * -weight[t] * input[n, t, d] for label t, or 0 when t equals ignore_index.
 * SoftmaxCrossEntropyLoss first turns its scores into log-probabilities
 * (log-softmax over the class axis, optionally returned as a second output)
 * and then scores those exactly as NegativeLogLikelihoodLoss does.
 *
 * Reductions: "none" keeps the label shape; "sum" adds the losses; "mean"
 * divides that sum by the sum of the weights of the positions counted (each
 * weight is 1 without a weight input), so ignored positions count for
 * nothing, and a batch in which everything is ignored gives 0/0 = NaN, as the
 * ONNX reference does.
 *
 * Labels come from the data and are hostile: a label outside [0, C) that is
 * not ignore_index fails the run.  Sums are accumulated in double whatever
 * the element type (float, double, float16, bfloat16).
 */
#include <math.h>
#include <string.h>

#include "../kernel.h"

enum { RED_NONE, RED_SUM, RED_MEAN };

/* The reduction attribute as RED_*, or -1 when unknown.  Attributes are
 * read again at run time (a short scan) so that the node needs no state. */
static int reduction(const struct rt_node *n)
{
	const char *red = rt_attr_string(n, "reduction", "mean");
	if (strcmp(red, "none") == 0)
		return RED_NONE;
	if (strcmp(red, "sum") == 0)
		return RED_SUM;
	if (strcmp(red, "mean") == 0)
		return RED_MEAN;
	return -1;
}

static double get(const void *p, int dt, int64_t i)
{
	switch (dt) {
	case BASE_DT_FLOAT: return ((const float *)p)[i];
	case BASE_DT_DOUBLE: return ((const double *)p)[i];
	case BASE_DT_FLOAT16: return base_f16_to_f32(((const uint16_t *)p)[i]);
	default: return base_bf16_to_f32(((const uint16_t *)p)[i]);
	}
}

static void put(void *p, int dt, int64_t i, double v)
{
	switch (dt) {
	case BASE_DT_FLOAT: ((float *)p)[i] = (float)v; break;
	case BASE_DT_DOUBLE: ((double *)p)[i] = v; break;
	case BASE_DT_FLOAT16: ((uint16_t *)p)[i] = base_f32_to_f16((float)v); break;
	default: ((uint16_t *)p)[i] = base_f32_to_bf16((float)v); break;
	}
}

static int64_t label(const struct rt_tensor *t, int64_t i)
{
	return t->dtype == BASE_DT_INT64 ? ((const int64_t *)t->data)[i]
	                                 : ((const int32_t *)t->data)[i];
}

/* Log-softmax of in ([N, C, D] cells of dt) over the class axis into lp. */
static void log_softmax(const struct rt_tensor *in, int64_t N, int64_t C, int64_t D, void *lp)
{
	int dt = in->dtype;
	for (int64_t b = 0; b < N; b++)
		for (int64_t d = 0; d < D; d++) {
			int64_t base = b * C * D + d;
			double mx = -INFINITY;
			for (int64_t c = 0; c < C; c++) {
				double v = get(in->data, dt, base + c * D);
				if (v > mx)
					mx = v;
			}
			if (isinf(mx))
				mx = mx > 0 ? mx : 0; /* all -inf: keep exp(-inf) = 0 */
			double s = 0;
			for (int64_t c = 0; c < C; c++)
				s += exp(get(in->data, dt, base + c * D) - mx);
			double ls = log(s);
			for (int64_t c = 0; c < C; c++)
				put(lp, dt, base + c * D, get(in->data, dt, base + c * D) - mx - ls);
		}
}

/* The shared kernel: in is X (NLL) or the scores (SCE). */
static int run_loss(struct rt_node *n, struct rt_exec *x)
{
	int red = reduction(n);
	const struct rt_attr *ii = rt_attr_find(n, "ignore_index");
	const struct rt_tensor *in = rt_input(x, n, 0), *tg = rt_input(x, n, 1);
	const struct rt_tensor *w = rt_input(x, n, 2);
	int sce = strcmp(n->op, "SoftmaxCrossEntropyLoss") == 0;
	int dt = in->dtype;
	if (in->rank < 2)
		return rt_fail(x, n, STRATA_RUNTIME, "input has rank %d; it needs [N, C, ...]",
		               in->rank);
	if (tg->rank != in->rank - 1)
		return rt_fail(x, n, STRATA_RUNTIME, "target has rank %d; input rank %d needs %d",
		               tg->rank, in->rank, in->rank - 1);
	int64_t N = in->dims[0], C = in->dims[1], D = 1;
	if (tg->dims[0] != N)
		return rt_fail(x, n, STRATA_RUNTIME, "target has %lld rows, input %lld",
		               (long long)tg->dims[0], (long long)N);
	for (int i = 2; i < in->rank; i++) {
		if (tg->dims[i - 1] != in->dims[i])
			return rt_fail(x, n, STRATA_RUNTIME,
			               "target dimension %d is %lld, input dimension %d is %lld", i - 1,
			               (long long)tg->dims[i - 1], i, (long long)in->dims[i]);
		D *= in->dims[i];
	}
	if (w && (w->rank != 1 || w->dims[0] != C || w->dtype != dt))
		return rt_fail(x, n, STRATA_RUNTIME, "weight must be a 1-D %s tensor of %lld cells",
		               base_dtype_name(dt), (long long)C);

	/* The log-probabilities the loss reads: the input itself for NLL, the
	 * log_prob output (or scratch when it is not wanted) for SCE. */
	const void *lp = in->data;
	if (sce) {
		int rc;
		void *buf;
		if (n->nout > 1 && n->out[1] >= 0) {
			struct rt_tensor *lt;
			if ((rc = rt_output(x, n, 1, dt, in->rank, in->dims, &lt)))
				return rc;
			buf = lt->data;
		} else {
			int ok;
			size_t bytes = rt_tensor_bytes(dt, N * C * D, &ok);
			buf = ok ? rt_scratch(x, bytes ? bytes : 1) : NULL;
			if (!buf)
				return rt_nomem(x, n, "kernel scratch");
		}
		log_softmax(in, N, C, D, buf);
		lp = buf;
	}

	struct rt_tensor *y;
	int rc = red == RED_NONE ? rt_output(x, n, 0, dt, tg->rank, tg->dims, &y)
	                                   : rt_output(x, n, 0, dt, 0, NULL, &y);
	if (rc)
		return rc;
	double sum = 0, wsum = 0;
	for (int64_t b = 0; b < N; b++)
		for (int64_t d = 0; d < D; d++) {
			int64_t i = b * D + d, t = label(tg, i);
			double l = 0, wt = 0;
			if (!(ii && t == ii->i)) {
				if (t < 0 || t >= C)
					return rt_fail(x, n, STRATA_RUNTIME,
					               "target %lld at position %lld is outside [0, %lld)",
					               (long long)t, (long long)i, (long long)C);
				wt = w ? get(w->data, dt, t) : 1.0;
				l = -wt * get(lp, dt, (b * C + t) * D + d);
			}
			if (red == RED_NONE)
				put(y->data, dt, i, l);
			sum += l;
			wsum += wt;
		}
	if (red == RED_SUM)
		put(y->data, dt, 0, sum);
	else if (red == RED_MEAN)
		put(y->data, dt, 0, sum / wsum);
	return 0;
}

static int init_loss(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	if (n->nin < 2 || n->in[0] < 0 || n->in[1] < 0 || n->nout < 1 || n->out[0] < 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "needs an input, a target and an output");
	if (n->nin > 3 || n->nout > 2 ||
	    (n->nout > 1 && strcmp(n->op, "SoftmaxCrossEntropyLoss") != 0))
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "too many inputs or outputs");
	int dt = rt_graph_dtype(g, n->in[0]), tt = rt_graph_dtype(g, n->in[1]);
	if (dt != BASE_DT_FLOAT && dt != BASE_DT_DOUBLE && dt != BASE_DT_FLOAT16 &&
	    dt != BASE_DT_BFLOAT16)
		return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED, "%s (opset %d): element type %s",
		                   n->op, n->opset, base_dtype_name(dt));
	if (tt != BASE_DT_INT32 && tt != BASE_DT_INT64)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "target must be int32 or int64, not %s",
		                   base_dtype_name(tt));
	if (n->nin > 2 && n->in[2] >= 0 && rt_graph_dtype(g, n->in[2]) != dt)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "weight is %s, input %s",
		                   base_dtype_name(rt_graph_dtype(g, n->in[2])), base_dtype_name(dt));
	if (reduction(n) < 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "unknown reduction \"%s\"",
		                   rt_attr_string(n, "reduction", ""));
	const struct rt_attr *ii = rt_attr_find(n, "ignore_index");
	if (ii && ii->type != RT_ATTR_INT)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "ignore_index must be an int");
	rt_graph_set_dtype(g, n->out[0], dt);
	if (n->nout > 1)
		rt_graph_set_dtype(g, n->out[1], dt);
	n->run = run_loss;
	return 0;
}

const struct rt_opdef rt_ops_loss[] = {
	{"", "NegativeLogLikelihoodLoss", 12, init_loss, NULL},
	{"", "SoftmaxCrossEntropyLoss", 12, init_loss, NULL},
	{.op = NULL},
};
