/*
 * training.c: the operators of the ai.onnx.preview.training domain: the
 * optimizers Adagrad, Adam and Momentum (standard and Nesterov), and
 * Gradient.
 *
 * The optimizers update N tensors at once.  Their inputs are the learning
 * rate R and the step count T (scalars), then N tensors of each group (X, G,
 * then V and/or H); their outputs are N tensors of each updated group.  All
 * tensors of one index share X's shape and element type (float or double);
 * the arithmetic runs in double and is stored back in X's type.
 *
 * Gradient computes dY/dX for each X named in its xs attribute, where Y (the
 * y attribute) is computed from xs (and the constant zs) by the ordinary nodes
 * of the same graph.  At load, init() walks back from Y through the producing
 * nodes and records a tape of the forward computation (the graph's own nodes
 * are not run for it: they may come later in run order, since the Gradient
 * node only reads xs and zs); the walk stops at the values named in xs and zs,
 * which are the Gradient node's inputs in that order, and at constants.  At
 * run, the tape is replayed forward on the Gradient node's inputs in double
 * precision and then backward from dY/dY = 1, reducing each gradient over the
 * axes its operand was broadcast along.  Supported on the tape: Add, Sub, Mul,
 * Div, Neg, Identity; anything else fails the load with
 * STRATA_NOT_IMPLEMENTED.
 */
#include <math.h>
#include <string.h>

#include "../kernel.h"

static double get(const void *p, int dt, int64_t i)
{
	switch (dt) {
	case BASE_DT_FLOAT: return ((const float *)p)[i];
	case BASE_DT_DOUBLE: return ((const double *)p)[i];
	case BASE_DT_INT32: return ((const int32_t *)p)[i];
	case BASE_DT_INT64: return (double)((const int64_t *)p)[i];
	case BASE_DT_FLOAT16: return base_f16_to_f32(((const uint16_t *)p)[i]);
	default: return base_bf16_to_f32(((const uint16_t *)p)[i]);
	}
}

static void put(void *p, int dt, int64_t i, double v)
{
	if (dt == BASE_DT_FLOAT)
		((float *)p)[i] = (float)v;
	else
		((double *)p)[i] = v;
}

static int is_real(int dt)
{
	return dt == BASE_DT_FLOAT || dt == BASE_DT_DOUBLE;
}

static int same_shape(const struct rt_tensor *a, const struct rt_tensor *b)
{
	if (a->rank != b->rank)
		return 0;
	for (int i = 0; i < a->rank; i++)
		if (a->dims[i] != b->dims[i])
			return 0;
	return 1;
}

/* ---- optimizers ---------------------------------------------------------------- */

enum { OPT_ADAGRAD, OPT_ADAM, OPT_MOMENTUM, OPT_NESTEROV };

/* Input groups after R and T, and output groups, per optimizer. */
static int in_groups(int kind)
{
	return kind == OPT_ADAM ? 4 : 3;
}

static int out_groups(int kind)
{
	return kind == OPT_ADAM ? 3 : 2;
}

static int opt_kind(const struct rt_node *n)
{
	if (strcmp(n->op, "Adagrad") == 0)
		return OPT_ADAGRAD;
	if (strcmp(n->op, "Adam") == 0)
		return OPT_ADAM;
	return strcmp(rt_attr_string(n, "mode", ""), "nesterov") == 0 ? OPT_NESTEROV : OPT_MOMENTUM;
}

static int run_optimizer(struct rt_node *n, struct rt_exec *x)
{
	int kind = opt_kind(n);
	int ng = in_groups(kind), N = (n->nin - 2) / ng;
	const struct rt_tensor *R = rt_input(x, n, 0), *T = rt_input(x, n, 1);
	if (runtime_tensor_count(R) != 1 || runtime_tensor_count(T) != 1)
		return rt_fail(x, n, STRATA_RUNTIME, "R and T must hold one value each");
	double r = get(R->data, R->dtype, 0);
	int64_t t = ((const int64_t *)T->data)[0];
	double norm = rt_attr_float(n, "norm_coefficient", 0.0f);
	double eps = rt_attr_float(n, "epsilon", 1e-6f);

	for (int i = 0; i < N; i++) {
		const struct rt_tensor *in[4];
		for (int k = 0; k < ng; k++) {
			in[k] = rt_input(x, n, 2 + k * N + i);
			if (!in[k])
				return rt_fail(x, n, STRATA_RUNTIME, "input %d is missing", 2 + k * N + i);
			if (!same_shape(in[k], in[0]) || in[k]->dtype != in[0]->dtype)
				return rt_fail(x, n, STRATA_RUNTIME,
				               "input %d does not have the type and shape of X %d",
				               2 + k * N + i, i);
		}
		int dt = in[0]->dtype;
		struct rt_tensor *out[3];
		for (int k = 0; k < out_groups(kind); k++) {
			int rc = rt_output(x, n, k * N + i, dt, in[0]->rank, in[0]->dims, &out[k]);
			if (rc)
				return rc;
		}
		const void *X = in[0]->data, *G = in[1]->data;
		int64_t cnt = runtime_tensor_count(in[0]);
		if (kind == OPT_ADAGRAD) {
			/* The learning rate decays with the step count. */
			double rr = r / (1.0 + (double)t * rt_attr_float(n, "decay_factor", 0.0f));
			const void *H = in[2]->data;
			for (int64_t j = 0; j < cnt; j++) {
				double xv = get(X, dt, j), gr = norm * xv + get(G, dt, j);
				double h = get(H, dt, j) + gr * gr;
				put(out[0]->data, dt, j, xv - rr * gr / (sqrt(h) + eps));
				put(out[1]->data, dt, j, h);
			}
		} else if (kind == OPT_ADAM) {
			double alpha = rt_attr_float(n, "alpha", 0.9f);
			double beta = rt_attr_float(n, "beta", 0.999f);
			double post = rt_attr_float(n, "norm_coefficient_post", 0.0f);
			/* Bias correction of both momenta, from the first step on. */
			double rr = t > 0 ? r * sqrt(1.0 - pow(beta, (double)t)) /
			                        (1.0 - pow(alpha, (double)t))
			                  : r;
			const void *V = in[2]->data, *H = in[3]->data;
			for (int64_t j = 0; j < cnt; j++) {
				double xv = get(X, dt, j), gr = norm * xv + get(G, dt, j);
				double v = alpha * get(V, dt, j) + (1.0 - alpha) * gr;
				double h = beta * get(H, dt, j) + (1.0 - beta) * gr * gr;
				double xn = xv - rr * (v / (sqrt(h) + eps));
				put(out[0]->data, dt, j, (1.0 - post) * xn);
				put(out[1]->data, dt, j, v);
				put(out[2]->data, dt, j, h);
			}
		} else {
			double alpha = rt_attr_float(n, "alpha", 0.0f);
			/* The first step (T == 0) takes the whole gradient. */
			double beta = t > 0 ? rt_attr_float(n, "beta", 0.0f) : 1.0;
			const void *V = in[2]->data;
			for (int64_t j = 0; j < cnt; j++) {
				double xv = get(X, dt, j), gr = norm * xv + get(G, dt, j);
				double v = alpha * get(V, dt, j) + beta * gr;
				double xn = kind == OPT_NESTEROV ? xv - r * (gr + alpha * v) : xv - r * v;
				put(out[0]->data, dt, j, xn);
				put(out[1]->data, dt, j, v);
			}
		}
	}
	return 0;
}

static int init_optimizer(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	if (strcmp(n->op, "Momentum") == 0) {
		const char *mode = rt_attr_string(n, "mode", NULL);
		if (!mode || (strcmp(mode, "standard") != 0 && strcmp(mode, "nesterov") != 0))
			return rt_node_err(n, err, STRATA_INVALID_GRAPH,
			                   "attribute mode must be \"standard\" or \"nesterov\"");
		static const char *const req[] = {"alpha", "beta", "norm_coefficient"};
		for (int k = 0; k < 3; k++)
			if (!rt_attr_find(n, req[k]))
				return rt_node_err(n, err, STRATA_INVALID_GRAPH, "attribute %s is required",
				                   req[k]);
	}
	int kind = opt_kind(n), ng = in_groups(kind), og = out_groups(kind);
	if (n->nin < 2 + ng || (n->nin - 2) % ng != 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH,
		                   "%d inputs: expected R, T and %d groups of equally many tensors",
		                   n->nin, ng);
	int N = (n->nin - 2) / ng;
	if (n->nout != og * N)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "%d outputs for %d tensors: expected %d",
		                   n->nout, N, og * N);
	for (int i = 0; i < n->nin; i++)
		if (n->in[i] < 0)
			return rt_node_err(n, err, STRATA_INVALID_GRAPH, "input %d is missing", i);
	int rt = rt_graph_dtype(g, n->in[0]);
	if (!is_real(rt))
		return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED, "%s (opset %d): R of type %s", n->op,
		                   n->opset, base_dtype_name(rt));
	if (rt_graph_dtype(g, n->in[1]) != BASE_DT_INT64)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "T must be int64, not %s",
		                   base_dtype_name(rt_graph_dtype(g, n->in[1])));
	for (int i = 0; i < N; i++) {
		int dt = rt_graph_dtype(g, n->in[2 + i]);
		if (!is_real(dt))
			return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED, "%s (opset %d): element type %s",
			                   n->op, n->opset, base_dtype_name(dt));
		for (int k = 1; k < ng; k++)
			if (rt_graph_dtype(g, n->in[2 + k * N + i]) != dt)
				return rt_node_err(n, err, STRATA_INVALID_GRAPH,
				                   "input %d is %s, X %d is %s", 2 + k * N + i,
				                   base_dtype_name(rt_graph_dtype(g, n->in[2 + k * N + i])),
				                   i, base_dtype_name(dt));
		for (int k = 0; k < og; k++)
			rt_graph_set_dtype(g, n->out[k * N + i], dt);
	}
	n->run = run_optimizer;
	return 0;
}

/* ---- Gradient ------------------------------------------------------------------------ */

enum { G_ADD, G_SUB, G_MUL, G_DIV, G_NEG, G_IDENTITY };

static const char *const gop_names[] = {"Add", "Sub", "Mul", "Div", "Neg", "Identity"};

/* Bounds on what one Gradient node may differentiate: keeps the tape and its
 * slot table small and their sizes far from overflow. */
#define MAX_STEPS 1024
#define MAX_SLOTS 4096

/* One forward operation: out = op(a, b) on slots (b < 0 for unary ops). */
struct gstep {
	int op, a, b, out;
};

/* A constant the forward computation reads, and its slot. */
struct gconst {
	int slot;
	const struct rt_tensor *t;
};

/* Slots [0, nin) are the Gradient node's inputs (xs then zs); the others
 * hold constants and step outputs, numbered in the order the walk met them. */
struct gtape {
	int nin, nx, nslots, nconst, nsteps, yslot;
	struct gconst *konst;            /* nconst */
	struct gstep *steps;             /* nsteps, in forward order */
};

static size_t tape_bytes(int nconst, int nsteps)
{
	return sizeof(struct gtape) + (size_t)nconst * sizeof(struct gconst) +
	       (size_t)nsteps * sizeof(struct gstep);
}

static void fini_gradient(struct rt_node *n)
{
	struct gtape *tp = n->state;
	if (tp)
		base_free(tp, tape_bytes(tp->nconst, tp->nsteps));
	n->state = NULL;
}

static int find_value(const struct rt_graph *g, const char *name)
{
	for (int v = 0; v < g->nvalues; v++)
		if (g->values[v].name && strcmp(g->values[v].name, name) == 0)
			return v;
	return -1;
}

/* What init() collects before the tape's final size is known. */
struct walk {
	struct rt_node *n;
	const struct rt_graph *g;
	struct strata_error *err;
	int *slot;                       /* per value: its slot, or -1 */
	int nslots, nconst, nsteps;
	struct gconst konst[MAX_SLOTS];
	struct gstep steps[MAX_STEPS];
};

/* Give value v a slot, recording the steps that compute it first (post-order
 * keeps the tape in forward order).  depth bounds the recursion. */
static int walk_value(struct walk *w, int v, int depth)
{
	const struct rt_graph *g = w->g;
	if (w->slot[v] >= 0)
		return 0;
	if (depth > MAX_STEPS)
		return rt_node_err(w->n, w->err, STRATA_NOT_IMPLEMENTED,
		                   "the path to y is deeper than %d nodes", MAX_STEPS);
	if (w->nslots >= MAX_SLOTS)
		return rt_node_err(w->n, w->err, STRATA_NOT_IMPLEMENTED,
		                   "y depends on more than %d values", MAX_SLOTS);
	const struct rt_tensor *k = rt_graph_const(g, v);
	if (k) {
		if (!is_real(k->dtype) && k->dtype != BASE_DT_INT32 && k->dtype != BASE_DT_INT64)
			return rt_node_err(w->n, w->err, STRATA_NOT_IMPLEMENTED,
			                   "constant \"%s\" is %s", g->values[v].name,
			                   base_dtype_name(k->dtype));
		w->slot[v] = w->nslots++;
		w->konst[w->nconst++] = (struct gconst){w->slot[v], k};
		return 0;
	}
	int p = g->values[v].producer;
	if (p < 0)
		return rt_node_err(w->n, w->err, STRATA_NOT_IMPLEMENTED,
		                   "y depends on \"%s\", which is neither in xs nor in zs",
		                   g->values[v].name);
	const struct rt_node *pn = &g->nodes[p];
	int op = -1;
	for (int i = 0; i < (int)(sizeof gop_names / sizeof gop_names[0]); i++)
		if (strcmp(pn->op, gop_names[i]) == 0)
			op = i;
	if (op < 0 || (*pn->domain && strcmp(pn->domain, "ai.onnx") != 0))
		return rt_node_err(w->n, w->err, STRATA_NOT_IMPLEMENTED,
		                   "cannot differentiate through op %s (opset %d)", pn->op, pn->opset);
	int unary = op == G_NEG || op == G_IDENTITY;
	if (pn->nin != (unary ? 1 : 2) || pn->nout != 1)
		return rt_node_err(w->n, w->err, STRATA_INVALID_GRAPH,
		                   "node %s (%s) has %d inputs and %d outputs", pn->name, pn->op,
		                   pn->nin, pn->nout);
	int ins[2] = {-1, -1};
	for (int i = 0; i < pn->nin; i++) {
		if (pn->in[i] < 0)
			return rt_node_err(w->n, w->err, STRATA_INVALID_GRAPH, "node %s (%s) lacks input %d",
			                   pn->name, pn->op, i);
		int rc = walk_value(w, pn->in[i], depth + 1);
		if (rc)
			return rc;
		ins[i] = w->slot[pn->in[i]];
	}
	/* v has one producer, so the inputs' walk cannot have reached it: the
	 * tape stays single-assignment. */
	if (w->nsteps >= MAX_STEPS || w->nslots >= MAX_SLOTS)
		return rt_node_err(w->n, w->err, STRATA_NOT_IMPLEMENTED,
		                   "the path to y has more than %d nodes", MAX_STEPS);
	w->slot[v] = w->nslots++;
	w->steps[w->nsteps++] = (struct gstep){op, ins[0], ins[1], w->slot[v]};
	return 0;
}

/* A slot's value at run time, and the gradient of y with respect to it. */
struct gval {
	int rank;
	int64_t dims[RT_MAX_RANK];
	int64_t cnt;
	double *v, *g;
};

/* Cap on cells of any intermediate: keeps byte counts far from overflow. */
#define MAX_CELLS ((int64_t)1 << 36)

static int slot_alloc(struct rt_exec *x, struct gval *s)
{
	size_t bytes = (size_t)(s->cnt ? s->cnt : 1) * sizeof(double);
	s->v = rt_scratch(x, bytes);
	s->g = rt_scratch(x, bytes);
	if (!s->v || !s->g)
		return -1;
	memset(s->g, 0, bytes);
	return 0;
}

/* Strides of operand a in an output of rank r and dims d under broadcasting:
 * 0 along the axes a is repeated on. */
static void bstrides(const struct gval *a, int r, const int64_t *d, int64_t *st)
{
	int64_t s = 1;
	for (int i = r - 1; i >= 0; i--) {
		int ia = i - (r - a->rank);
		int64_t da = ia >= 0 ? a->dims[ia] : 1;
		st[i] = da == 1 && d[i] != 1 ? 0 : s;
		s *= da;
	}
}

static int run_gradient(struct rt_node *n, struct rt_exec *x)
{
	const struct gtape *tp = n->state;
	struct gval *sv = rt_scratch(x, (size_t)tp->nslots * sizeof *sv);
	if (!sv)
		return rt_nomem(x, n, "kernel scratch");
	memset(sv, 0, (size_t)tp->nslots * sizeof *sv);

	/* Leaves: the node's inputs and the constants, widened to double. */
	for (int i = 0; i < tp->nin + tp->nconst; i++) {
		const struct rt_tensor *t = i < tp->nin ? rt_input(x, n, i) : tp->konst[i - tp->nin].t;
		struct gval *s = &sv[i < tp->nin ? i : tp->konst[i - tp->nin].slot];
		if (!t)
			return rt_fail(x, n, STRATA_RUNTIME, "input %d is missing", i);
		s->rank = t->rank;
		memcpy(s->dims, t->dims, sizeof s->dims);
		s->cnt = runtime_tensor_count(t);
		if (s->cnt > MAX_CELLS)
			return rt_fail(x, n, STRATA_LIMIT, "input %d is too large", i);
		if (slot_alloc(x, s))
			return rt_nomem(x, n, "kernel scratch");
		for (int64_t j = 0; j < s->cnt; j++)
			s->v[j] = get(t->data, t->dtype, j);
	}

	/* Forward. */
	for (int k = 0; k < tp->nsteps; k++) {
		const struct gstep *st = &tp->steps[k];
		struct gval *a = &sv[st->a], *o = &sv[st->out];
		struct gval *b = st->b >= 0 ? &sv[st->b] : a;
		struct rt_tensor ta = {0}, tb = {0};
		ta.rank = a->rank, tb.rank = b->rank;
		memcpy(ta.dims, a->dims, sizeof ta.dims);
		memcpy(tb.dims, b->dims, sizeof tb.dims);
		if (rt_broadcast_shape(&ta, &tb, &o->rank, o->dims))
			return rt_fail(x, n, STRATA_RUNTIME, "operands of %s do not broadcast",
			               gop_names[st->op]);
		o->cnt = 1;
		for (int i = 0; i < o->rank; i++) {
			if (o->dims[i] != 0 && o->cnt > MAX_CELLS / o->dims[i])
				return rt_fail(x, n, STRATA_LIMIT, "an intermediate of %s is too large",
				               gop_names[st->op]);
			o->cnt *= o->dims[i];
		}
		if (slot_alloc(x, o))
			return rt_nomem(x, n, "kernel scratch");
		int64_t sa[RT_MAX_RANK], sb[RT_MAX_RANK], idx[RT_MAX_RANK] = {0}, ia = 0, ib = 0;
		bstrides(a, o->rank, o->dims, sa);
		bstrides(b, o->rank, o->dims, sb);
		for (int64_t j = 0; j < o->cnt; j++) {
			double u = a->v[ia], w = b->v[ib], r;
			switch (st->op) {
			case G_ADD: r = u + w; break;
			case G_SUB: r = u - w; break;
			case G_MUL: r = u * w; break;
			case G_DIV: r = u / w; break;
			case G_NEG: r = -u; break;
			default: r = u; break;
			}
			o->v[j] = r;
			for (int i = o->rank - 1; i >= 0; i--) {
				ia += sa[i], ib += sb[i];
				if (++idx[i] < o->dims[i])
					break;
				ia -= sa[i] * idx[i], ib -= sb[i] * idx[i];
				idx[i] = 0;
			}
		}
	}

	/* Backward: dy/dy = 1, then each step adds its share to its operands'
	 * gradients; summing over the broadcast axes falls out of the stride-0
	 * indexing. */
	struct gval *yv = &sv[tp->yslot];
	for (int64_t j = 0; j < yv->cnt; j++)
		yv->g[j] = 1.0;
	for (int k = tp->nsteps - 1; k >= 0; k--) {
		const struct gstep *st = &tp->steps[k];
		struct gval *a = &sv[st->a], *o = &sv[st->out];
		struct gval *b = st->b >= 0 ? &sv[st->b] : NULL;
		int64_t sa[RT_MAX_RANK], sb[RT_MAX_RANK] = {0}, idx[RT_MAX_RANK] = {0}, ia = 0, ib = 0;
		bstrides(a, o->rank, o->dims, sa);
		if (b)
			bstrides(b, o->rank, o->dims, sb);
		for (int64_t j = 0; j < o->cnt; j++) {
			double go = o->g[j], u = a->v[ia], w = b ? b->v[ib] : 0;
			switch (st->op) {
			case G_ADD: a->g[ia] += go, b->g[ib] += go; break;
			case G_SUB: a->g[ia] += go, b->g[ib] -= go; break;
			case G_MUL: a->g[ia] += go * w, b->g[ib] += go * u; break;
			case G_DIV: a->g[ia] += go / w, b->g[ib] -= go * u / (w * w); break;
			case G_NEG: a->g[ia] -= go; break;
			default: a->g[ia] += go; break;
			}
			for (int i = o->rank - 1; i >= 0; i--) {
				ia += sa[i], ib += sb[i];
				if (++idx[i] < o->dims[i])
					break;
				ia -= sa[i] * idx[i], ib -= sb[i] * idx[i];
				idx[i] = 0;
			}
		}
	}

	for (int i = 0; i < tp->nx; i++) {
		const struct rt_tensor *t = rt_input(x, n, i);
		struct rt_tensor *out;
		int rc = rt_output(x, n, i, t->dtype, t->rank, t->dims, &out);
		if (rc)
			return rc;
		for (int64_t j = 0; j < sv[i].cnt; j++)
			put(out->data, t->dtype, j, sv[i].g[j]);
	}
	return 0;
}

static int init_gradient(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	const struct rt_attr *xs = rt_attr_find(n, "xs"), *zs = rt_attr_find(n, "zs");
	const char *y = rt_attr_string(n, "y", NULL);
	if (!xs || xs->type != RT_ATTR_STRINGS || xs->n == 0 || !y)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH,
		                   "attributes xs (strings) and y (string) are required");
	if (zs && zs->type != RT_ATTR_STRINGS)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "attribute zs must be strings");
	size_t nx = xs->n, nz = zs ? zs->n : 0;
	if (nx + nz > MAX_SLOTS || n->nin != (int)(nx + nz) || n->nout != (int)nx)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH,
		                   "%d inputs and %d outputs for %zu xs and %zu zs", n->nin, n->nout,
		                   nx, nz);
	for (int i = 0; i < n->nin; i++) {
		if (n->in[i] < 0)
			return rt_node_err(n, err, STRATA_INVALID_GRAPH, "input %d is missing", i);
		int dt = rt_graph_dtype(g, n->in[i]);
		if (!is_real(dt))
			return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED, "Gradient (opset %d): input %d is %s",
			                   n->opset, i, base_dtype_name(dt));
	}
	int yv = find_value(g, y);
	if (yv < 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "y \"%s\" is not a value of the graph", y);

	struct walk *w = base_alloc(sizeof *w);
	int *slot = base_alloc((size_t)g->nvalues * sizeof *slot + 1);
	int rc = 0;
	if (!w || !slot) {
		rc = rt_node_nomem(n, err, "kernel state");
		goto out;
	}
	memset(w, 0, sizeof *w);
	w->n = n, w->g = g, w->err = err, w->slot = slot;
	for (int v = 0; v < g->nvalues; v++)
		slot[v] = -1;
	for (size_t i = 0; i < nx + nz; i++) {
		const char *name = i < nx ? xs->strings[i] : zs->strings[i - nx];
		int v = name ? find_value(g, name) : -1;
		if (v < 0) {
			rc = rt_node_err(n, err, STRATA_INVALID_GRAPH, "\"%s\" is not a value of the graph",
			                 name ? name : "");
			goto out;
		}
		if (slot[v] >= 0) {
			rc = rt_node_err(n, err, STRATA_INVALID_GRAPH, "\"%s\" is named twice", name);
			goto out;
		}
		slot[v] = (int)i;
	}
	w->nslots = (int)(nx + nz);
	if ((rc = walk_value(w, yv, 0)))
		goto out;
	struct gtape *tp = base_alloc(tape_bytes(w->nconst, w->nsteps));
	if (!tp) {
		rc = rt_node_nomem(n, err, "kernel state");
		goto out;
	}
	tp->nin = n->nin, tp->nx = (int)nx, tp->nconst = w->nconst, tp->nsteps = w->nsteps;
	tp->nslots = w->nslots;
	tp->konst = (struct gconst *)(tp + 1);
	tp->steps = (struct gstep *)(tp->konst + w->nconst);
	memcpy(tp->konst, w->konst, (size_t)w->nconst * sizeof *tp->konst);
	memcpy(tp->steps, w->steps, (size_t)w->nsteps * sizeof *tp->steps);
	tp->yslot = slot[yv];
	n->state = tp;
	n->run = run_gradient;
	for (size_t i = 0; i < nx; i++)
		rt_graph_set_dtype(g, n->out[i], rt_graph_dtype(g, n->in[i]));
out:
	if (w)
		base_free(w, sizeof *w);
	if (slot)
		base_free(slot, (size_t)g->nvalues * sizeof *slot + 1);
	return rc;
}

const struct rt_opdef rt_ops_training[] = {
	{"ai.onnx.preview.training", "Adagrad", 1, init_optimizer, NULL},
	{"ai.onnx.preview.training", "Adam", 1, init_optimizer, NULL},
	{"ai.onnx.preview.training", "Momentum", 1, init_optimizer, NULL},
	{"ai.onnx.preview.training", "Gradient", 1, init_gradient, fini_gradient},
	{.op = NULL},
};
