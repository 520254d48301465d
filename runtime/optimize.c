/*
 * optimize.c: the graph rewrite pass (session.graph_optimization_level
 * "all").
 *
 * Runs at the end of rt_graph_resolve, once every node is initialized and
 * every value has its static shape and constants are folded (infer.c), so
 * patterns can ask for constant operands and equal shapes.  It replaces the
 * exporters' chains with the fused operators of ops/fused.c:
 *   MatMul(X, W) [+ Add bias] [+ erf-GELU chain] [+ Add residual]
 *   Gemm(X, W, B) [+ Relu]                           -> strata.FusedLinear
 *     (either one reads the pieces of a last-axis Concat X in place)
 *   [Add(X, S) +] LayerNormalization, or its ReduceMean / Sub / Pow /
 *   ReduceMean / Add / Sqrt / Div / Mul / Add spelling -> strata.SkipLayerNorm
 *   MatMulInteger(Xq, W) + Cast + Mul(., Mul(Xs, Ws)) [+ the tail of a
 *   MatMul: bias Add, erf-GELU, residual Add]         -> strata.QuantLinear
 *     (ONNX Runtime's quantize_dynamic spelling of a linear layer)
 *   MatMul(DequantizeLinear(Xq), DequantizeLinear(Wq)) [+ the same tail]
 *                                                    -> strata.QuantLinear
 *     (its QDQ spelling: the pairs QuantizeLinear / DequantizeLinear)
 *   Reshape + Transpose of Q, K, V, MatMul, Div or Mul by a constant,
 *   Add mask, Softmax, MatMul, and the inverse Transpose + Reshape
 *                                                    -> strata.Attention
 * then drops the nodes nobody reads any more (the Shape -> Gather ->
 * Unsqueeze -> Concat chains that fed the removed Reshapes).
 *
 * Invariants: a value that leaves a pattern (read by a node outside it, or
 * a graph output) is never removed: each intermediate value must be read
 * only inside its pattern.  A fused node takes the place of the pattern's
 * last node, so run order stays topological.  Afterwards the node array is
 * compacted, producers and last uses are recomputed, and every remaining
 * node has run its init.  Only the top graph is rewritten.
 */
#include <math.h>
#include <string.h>

#include "kernel.h"

#define MAXPAT 24

struct opt {
	struct rt_model *m;
	struct rt_graph *g;
	struct strata_error *err;
	char *dead;    /* per node */
	int *uses;     /* per value: reads by live nodes */
};

/* ---- graph queries ----------------------------------------------------------------------- */

static int dep(const struct rt_node *n, int j)
{
	return j < n->nin ? n->in[j] : n->implicit[j - n->nin];
}

static void count_uses(struct opt *o)
{
	memset(o->uses, 0, (size_t)o->g->nvalues * sizeof *o->uses);
	for (int i = 0; i < o->g->nnodes; i++) {
		const struct rt_node *n = &o->g->nodes[i];
		if (o->dead[i] || n->folded)
			continue;
		for (int j = 0; j < n->nin + n->nimplicit; j++)
			if (dep(n, j) >= 0)
				o->uses[dep(n, j)]++;
	}
}

static int live(struct opt *o, int i)
{
	return i >= 0 && i < o->g->nnodes && !o->dead[i] && !o->g->nodes[i].folded;
}

/* Node index producing v if it is a live op of the default domain, else -1. */
static int prod(struct opt *o, int v, const char *op)
{
	if (v < 0 || o->g->values[v].konst)
		return -1;
	int p = o->g->values[v].producer;
	if (!live(o, p))
		return -1;
	const struct rt_node *n = &o->g->nodes[p];
	if (*n->domain || (op && strcmp(n->op, op) != 0) || n->nimplicit)
		return -1;
	return p;
}

/* v is read by exactly one node and is not a graph output. */
static int single(struct opt *o, int v)
{
	return v >= 0 && o->uses[v] == 1 && !o->g->values[v].is_output;
}

/* The live nodes reading v (at most max), their count. */
static int readers(struct opt *o, int v, int *out, int max)
{
	int k = 0;
	for (int i = 0; i < o->g->nnodes; i++) {
		if (!live(o, i))
			continue;
		const struct rt_node *n = &o->g->nodes[i];
		for (int j = 0; j < n->nin + n->nimplicit; j++)
			if (dep(n, j) == v) {
				if (k < max)
					out[k] = i;
				k++;
				break;
			}
	}
	return k;
}

/* The only reader of v when it is op (any op when NULL), else -1. */
static int next(struct opt *o, int v, const char *op)
{
	int r;
	if (!single(o, v) || readers(o, v, &r, 1) != 1)
		return -1;
	const struct rt_node *n = &o->g->nodes[r];
	if (*n->domain || (op && strcmp(n->op, op) != 0) || n->nimplicit)
		return -1;
	return r;
}

static struct rt_node *node(struct opt *o, int i)
{
	return &o->g->nodes[i];
}

static int is_op(const struct rt_node *n, const char *op)
{
	return !*n->domain && strcmp(n->op, op) == 0;
}

static int out0(struct opt *o, int i)
{
	return o->g->nodes[i].nout >= 1 ? o->g->nodes[i].out[0] : -1;
}

/* The constant float tensor of v, or NULL. */
static const struct rt_tensor *kfloat(struct opt *o, int v)
{
	const struct rt_tensor *t = v >= 0 ? o->g->values[v].konst : NULL;
	return t && t->dtype == BASE_DT_FLOAT ? t : NULL;
}

static int kscalar(struct opt *o, int v, float *f)
{
	const struct rt_tensor *t = kfloat(o, v);
	if (!t || runtime_tensor_count(t) != 1)
		return 0;
	*f = *(const float *)t->data;
	return 1;
}

static int near(float a, double b)
{
	return fabs(a - b) <= 1e-6 * fabs(b);
}

/* For a binary node with one constant scalar operand: the other input
 * (-1 if none) and the scalar. */
static int with_scalar(struct opt *o, const struct rt_node *n, float *f)
{
	if (n->nin != 2)
		return -1;
	if (kscalar(o, n->in[1], f) && !o->g->values[n->in[0]].konst)
		return n->in[0];
	if (kscalar(o, n->in[0], f) && !o->g->values[n->in[1]].konst)
		return n->in[1];
	return -1;
}

static int same_dim(struct rt_dim a, struct rt_dim b)
{
	if (a.size >= 0 || b.size >= 0)
		return a.size == b.size;
	return a.sym && b.sym && strcmp(a.sym, b.sym) == 0 && a.bound == b.bound;
}

/* Values a and b have the same fully known static shape. */
static int same_shape(struct opt *o, int a, int b)
{
	const struct rt_shape *x = &o->g->values[a].shape, *y = &o->g->values[b].shape;
	if (!rt_shape_full(x) || !rt_shape_full(y) || x->rank != y->rank)
		return 0;
	for (int d = 0; d < x->rank; d++)
		if (!same_dim(x->d[d], y->d[d]))
			return 0;
	return 1;
}

static int last_dim(struct opt *o, int v)
{
	const struct rt_shape *s = &o->g->values[v].shape;
	return s->rank >= 1 && s->d[s->rank - 1].size >= 0 ? (int)s->d[s->rank - 1].size : -1;
}

/* ---- rewriting -------------------------------------------------------------------------- */

static void kill(struct opt *o, int i)
{
	struct rt_node *n = node(o, i);
	if (n->def && n->def->fini)
		n->def->fini(n);
	n->state = NULL;
	n->def = NULL; /* its fini has run */
	o->dead[i] = 1;
}

/* Replace node `at` by strata.op reading in[0..nin-1] (-1 omitted) and
 * writing value out; kill the other nodes of the pattern. */
static int emit(struct opt *o, int at, const int *pat, int npat, const char *op,
                const int *in, int nin, int out, const struct rt_attr *attrs, int nattr)
{
	struct rt_blocks *mem = &o->m->mem;
	struct rt_node *n = node(o, at);
	int *ins = rt_blocks_alloc(mem, (size_t)nin * sizeof *ins);
	int *outs = rt_blocks_alloc(mem, sizeof *outs);
	struct rt_attr *at2 = rt_blocks_alloc(mem, (size_t)(nattr + 1) * sizeof *at2);
	char *dom = rt_blocks_strndup(mem, "strata", 6);
	char *opn = rt_blocks_strndup(mem, op, strlen(op));
	if (!ins || !outs || !at2 || !dom || !opn)
		return base_nomem(o->err, "optimizing the graph");
	for (int k = 0; k < npat; k++)
		if (pat[k] != at)
			kill(o, pat[k]);
	if (n->def && n->def->fini)
		n->def->fini(n);
	n->npacks = 0; /* what the old kernel packed went with its fini */
	n->nsub = 0;
	memcpy(ins, in, (size_t)nin * sizeof *ins);
	outs[0] = out;
	if (nattr)
		memcpy(at2, attrs, (size_t)nattr * sizeof *at2);
	n->op = opn;
	n->domain = dom;
	n->opset = 1;
	n->nin = nin;
	n->in = ins;
	n->nout = 1;
	n->out = outs;
	n->nattr = nattr;
	n->attr = at2;
	n->state = NULL;
	n->run = NULL;
	n->nimplicit = 0;
	n->implicit = NULL;
	n->def = rt_registry_find("strata", op, 1, NULL);
	int rc = n->def ? n->def->init(n, o->g, o->err) : STRATA_NOT_IMPLEMENTED;
	if (rc == 0 && !n->run)
		rc = STRATA_INVALID_GRAPH;
	if (rc != 0) {
		/* The node stays in the graph: its fini must not run on a failed init. */
		n->def = NULL;
		return rc;
	}
	o->g->values[out].producer = at;
	count_uses(o);
	return 0;
}

static struct rt_attr attr_int(const char *name, int64_t v)
{
	return (struct rt_attr){ .name = name, .type = RT_ATTR_INT, .i = v };
}

static struct rt_attr attr_float(const char *name, float v)
{
	return (struct rt_attr){ .name = name, .type = RT_ATTR_FLOAT, .f = v };
}

/* ---- Linear ------------------------------------------------------------------------------ */

/* After a GEMM whose output is v (pattern nodes in pat): a bias Add, the
 * erf-GELU chain, a residual Add.  Extends pat; returns the final value. */
static int linear_tail(struct opt *o, int v, int N, int *pat, int *np, int *bias, int *act,
                       int *res, int allow_bias)
{
	int a = next(o, v, "Add");
	if (allow_bias && a >= 0) {
		const struct rt_node *n = node(o, a);
		int other = n->in[0] == v ? n->in[1] : n->in[0];
		const struct rt_tensor *t = kfloat(o, other);
		if (t && runtime_tensor_count(t) == N && t->rank >= 1 && t->dims[t->rank - 1] == N &&
		    same_shape(o, v, out0(o, a))) {
			*bias = other;
			pat[(*np)++] = a;
			v = out0(o, a);
		}
	}
	/* GELU: x * 0.5 * (1 + erf(x / sqrt2)) in its exported spellings. */
	int rd[2];
	if (*act == RT_ACT_NONE && !o->g->values[v].is_output && o->uses[v] == 2 &&
	    readers(o, v, rd, 2) == 2) {
		for (int s = 0; s < 2; s++) {
			const struct rt_node *dv = node(o, rd[s]), *ot = node(o, rd[1 - s]);
			float c;
			if (*dv->domain || dv->nimplicit || with_scalar(o, dv, &c) != v)
				continue;
			if (!((is_op(dv, "Div") && dv->in[0] == v && near(c, M_SQRT2)) ||
			      (is_op(dv, "Mul") && near(c, M_SQRT1_2))))
				continue;
			int e = next(o, out0(o, rd[s]), "Erf");
			int ad = e >= 0 ? next(o, out0(o, e), "Add") : -1;
			if (ad < 0 || with_scalar(o, node(o, ad), &c) != out0(o, e) || c != 1.0f)
				continue;
			int t1 = out0(o, ad), fin = -1;
			if (is_op(ot, "Mul") && !ot->nimplicit && with_scalar(o, ot, &c) == v &&
			    c == 0.5f) {
				fin = next(o, out0(o, rd[1 - s]), "Mul");
				if (fin >= 0 && next(o, t1, "Mul") != fin)
					fin = -1;
			} else if (is_op(ot, "Mul") && !ot->nimplicit && ot->nin == 2 &&
			           ((ot->in[0] == v && ot->in[1] == t1) ||
			            (ot->in[1] == v && ot->in[0] == t1))) {
				fin = next(o, out0(o, rd[1 - s]), "Mul");
				if (fin >= 0 && (with_scalar(o, node(o, fin), &c) != out0(o, rd[1 - s]) ||
				                 c != 0.5f))
					fin = -1;
			}
			if (fin < 0 || !same_shape(o, v, out0(o, fin)))
				continue;
			pat[(*np)++] = rd[s];
			pat[(*np)++] = e;
			pat[(*np)++] = ad;
			pat[(*np)++] = rd[1 - s];
			pat[(*np)++] = fin;
			*act = RT_ACT_GELU_ERF;
			v = out0(o, fin);
			break;
		}
	}
	a = next(o, v, "Add");
	if (a >= 0) {
		const struct rt_node *n = node(o, a);
		int other = n->in[0] == v ? n->in[1] : n->in[0];
		if (other != v && !o->g->values[other].konst && same_shape(o, v, other) &&
		    same_shape(o, v, out0(o, a)) && rt_graph_dtype(o->g, other) == BASE_DT_FLOAT) {
			*res = other;
			pat[(*np)++] = a;
			v = out0(o, a);
		}
	}
	return v;
}

static int max_of(const int *p, int n)
{
	int m = p[0];
	for (int i = 1; i < n; i++)
		if (p[i] > m)
			m = p[i];
	return m;
}

#define MAXPARTS 8 /* fused.c's limit on the pieces of a split X */

/* When x is a Concat along its last axis read only by the GEMM: its node
 * (-1 if not), its inputs in piece[] and their widths in width[] (each
 * known, summing to K).  The GEMM then reads the pieces in place. */
static int concat_pieces(struct opt *o, int x, int64_t K, int *piece, int64_t *width,
                         int *npiece)
{
	int c = prod(o, x, "Concat");
	if (c < 0 || !single(o, x))
		return -1;
	const struct rt_node *n = node(o, c);
	int rank = o->g->values[x].shape.rank;
	int64_t axis = rt_attr_int(n, "axis", 0), sum = 0;
	if (rank < 1 || !(axis == -1 || axis == rank - 1) || n->nin < 2 || n->nin > MAXPARTS ||
	    n->nout != 1)
		return -1;
	for (int j = 0; j < n->nin; j++) {
		int v = n->in[j];
		if (v < 0 || rt_graph_dtype(o->g, v) != BASE_DT_FLOAT ||
		    o->g->values[v].shape.rank != rank || last_dim(o, v) <= 0)
			return -1;
		piece[j] = v;
		width[j] = last_dim(o, v);
		sum += width[j];
	}
	if (sum != K)
		return -1;
	*npiece = n->nin;
	return c;
}

static int fuse_linear(struct opt *o, int i, int *done)
{
	const struct rt_node *n = node(o, i);
	int pat[MAXPAT], np = 0, bias = -1, act = RT_ACT_NONE, res = -1, transb = 0;
	int x, w, v;
	const struct rt_tensor *wt;
	int N;
	if (is_op(n, "MatMul") && n->nin == 2) {
		x = n->in[0];
		w = n->in[1];
		wt = kfloat(o, w);
		const struct rt_shape *xs = &o->g->values[x].shape;
		if (!wt || wt->rank != 2 || o->g->values[x].konst || xs->rank < 2 ||
		    rt_graph_dtype(o->g, x) != BASE_DT_FLOAT || last_dim(o, x) != wt->dims[0])
			return 0;
		N = (int)wt->dims[1];
	} else if (is_op(n, "Gemm") && n->nin >= 2) {
		x = n->in[0];
		w = n->in[1];
		wt = kfloat(o, w);
		transb = (int)rt_attr_int(n, "transB", 0);
		if (!wt || wt->rank != 2 || o->g->values[x].konst || rt_attr_int(n, "transA", 0) ||
		    rt_attr_float(n, "alpha", 1.0f) != 1.0f || o->g->values[x].shape.rank != 2 ||
		    rt_graph_dtype(o->g, x) != BASE_DT_FLOAT)
			return 0;
		N = (int)(transb ? wt->dims[0] : wt->dims[1]);
		if (n->nin >= 3 && n->in[2] >= 0) {
			const struct rt_tensor *c = kfloat(o, n->in[2]);
			if (!c || rt_attr_float(n, "beta", 1.0f) != 1.0f || runtime_tensor_count(c) != N ||
			    c->rank < 1 || c->dims[c->rank - 1] != N)
				return 0;
			bias = n->in[2];
		}
	} else {
		return 0;
	}
	int64_t K = transb ? wt->dims[1] : wt->dims[0];
	int piece[MAXPARTS], npiece = 0;
	int64_t width[MAXPARTS];
	int cat = concat_pieces(o, x, K, piece, width, &npiece);
	pat[np++] = i;
	if (cat >= 0)
		pat[np++] = cat;
	v = out0(o, i);
	if (is_op(n, "Gemm")) {
		int r = next(o, v, "Relu");
		if (r >= 0) {
			pat[np++] = r;
			act = RT_ACT_RELU;
			v = out0(o, r);
		}
	} else {
		v = linear_tail(o, v, N, pat, &np, &bias, &act, &res, 1);
	}
	int in[3 + MAXPARTS] = { x, w, bias, res }, nin = 4;
	struct rt_attr at[3] = { attr_int("transB", transb), attr_int("act", act) };
	if (cat >= 0) {
		/* X's pieces: inputs 0, 4, 5, ...; their widths in "splits". */
		int64_t *sp = rt_blocks_alloc(&o->m->mem, (size_t)npiece * sizeof *sp);
		if (!sp)
			return base_nomem(o->err, "optimizing the graph");
		memcpy(sp, width, (size_t)npiece * sizeof *sp);
		in[0] = piece[0];
		for (int p = 1; p < npiece; p++)
			in[nin++] = piece[p];
		at[2] = (struct rt_attr){ .name = "splits", .type = RT_ATTR_INTS, .n = (size_t)npiece,
		                          .ints = sp };
	}
	int rc = emit(o, max_of(pat, np), pat, np, "FusedLinear", in, nin, v, at, cat >= 0 ? 3 : 2);
	if (rc == 0)
		(*done)++;
	return rc;
}

/* ---- QuantLinear ------------------------------------------------------------------------- */

/* Value v is one cell of a known static shape. */
static int scalar_value(struct opt *o, int v)
{
	const struct rt_shape *s = &o->g->values[v].shape;
	if (s->rank < 0)
		return 0;
	for (int d = 0; d < s->rank; d++)
		if (s->d[d].size != 1)
			return 0;
	return 1;
}

static int fuse_qlinear(struct opt *o, int i, int *done)
{
	const struct rt_node *n = node(o, i);
	if (n->nin < 2 || n->nin > 4)
		return 0;
	int x = n->in[0], xzp = n->nin > 2 ? n->in[2] : -1, wzp = n->nin > 3 ? n->in[3] : -1;
	const struct rt_tensor *w = o->g->values[n->in[1]].konst;
	if (!w || w->rank != 2 || (w->dtype != BASE_DT_UINT8 && w->dtype != BASE_DT_INT8) ||
	    o->g->values[x].konst || o->g->values[x].shape.rank < 2 ||
	    last_dim(o, x) != w->dims[0] || (xzp >= 0 && !scalar_value(o, xzp)) ||
	    (wzp >= 0 && !o->g->values[wzp].konst))
		return 0;
	int N = (int)w->dims[1];
	int c = next(o, out0(o, i), "Cast");
	if (c < 0 || rt_attr_int(node(o, c), "to", 0) != BASE_DT_FLOAT)
		return 0;
	int m = next(o, out0(o, c), "Mul");
	if (m < 0 || node(o, m)->nin != 2 || !same_shape(o, out0(o, i), out0(o, m)))
		return 0;
	int s = node(o, m)->in[0] == out0(o, c) ? node(o, m)->in[1] : node(o, m)->in[0];
	int sm = prod(o, s, "Mul");
	if (sm < 0 || !single(o, s) || node(o, sm)->nin != 2)
		return 0;
	int xs = node(o, sm)->in[0], ws = node(o, sm)->in[1];
	if (o->g->values[xs].konst) {
		xs = ws;
		ws = node(o, sm)->in[0];
	}
	const struct rt_tensor *wst = kfloat(o, ws);
	int64_t nws = wst ? runtime_tensor_count(wst) : 0;
	if (!wst || !(nws == 1 || (nws == N && wst->rank == 1)) || o->g->values[xs].konst ||
	    rt_graph_dtype(o->g, xs) != BASE_DT_FLOAT || !scalar_value(o, xs))
		return 0;
	int pat[MAXPAT] = { i, c, sm, m }, np = 4, bias = -1, act = RT_ACT_NONE, res = -1;
	int v = linear_tail(o, out0(o, m), N, pat, &np, &bias, &act, &res, 1);
	int in[8] = { x, n->in[1], xzp, wzp, xs, ws, bias, res };
	struct rt_attr at[1] = { attr_int("act", act) };
	int rc = emit(o, max_of(pat, np), pat, np, "QuantLinear", in, 8, v, at, 1);
	if (rc == 0)
		(*done)++;
	return rc;
}

/* ---- QDQ linear ------------------------------------------------------------------------- */

/* The DequantizeLinear node writing v, live or folded into a constant, or
 * -1. */
static int dq_writing(struct opt *o, int v)
{
	for (int i = 0; i < o->g->nnodes; i++) {
		const struct rt_node *n = node(o, i);
		if (!o->dead[i] && n->nout >= 1 && n->out[0] == v && is_op(n, "DequantizeLinear") &&
		    !n->nimplicit)
			return i;
	}
	return -1;
}

/* n dequantizes 8-bit cells to floats, one scale per tensor or per slice
 * of one axis (no blocks), with a zero point of the cells' type or none. */
static int dq_8bit(struct opt *o, const struct rt_node *n)
{
	if (n->nin < 2 || n->nin > 3 || n->in[0] < 0 || n->in[1] < 0)
		return 0;
	int dt = rt_graph_dtype(o->g, n->in[0]);
	int64_t odt = rt_attr_int(n, "output_dtype", 0);
	return (dt == BASE_DT_UINT8 || dt == BASE_DT_INT8) && rt_attr_int(n, "block_size", 0) == 0 &&
	       rt_graph_dtype(o->g, n->in[1]) == BASE_DT_FLOAT &&
	       (odt == 0 || odt == BASE_DT_FLOAT) &&
	       (n->nin < 3 || n->in[2] < 0 || rt_graph_dtype(o->g, n->in[2]) == dt);
}

/* MatMul(DequantizeLinear(Xq, Xs, Xzp), DequantizeLinear(Wq, Ws, Wzp)), the
 * QDQ spelling of a quantized linear layer (ONNX Runtime's QuantFormat.QDQ):
 * Xs and Xzp one value each, Wq a constant [K,N] with one scale and zero
 * point or one per column (axis 1), so that both scales come out of the
 * sum: the same layer as QuantLinear's, (Xq - Xzp)(Wq - Wzp) summed in
 * integers, then scaled, where the chain sums the dequantized floats (so
 * the two agree within float rounding, not bit for bit).  The weights'
 * DequantizeLinear was folded into a float constant; the fused layer reads
 * the 8-bit constant under it instead.  The activations' DequantizeLinear
 * goes with the pattern when this MatMul is its only reader, and is swept
 * once every reader was fused otherwise. */
static int fuse_qdq(struct opt *o, int i, int *done)
{
	const struct rt_node *n = node(o, i);
	if (n->nin != 2)
		return 0;
	int a = n->in[0], w = n->in[1];
	int da = prod(o, a, "DequantizeLinear"), dw = dq_writing(o, w);
	if (da < 0 || dw < 0 || !dq_8bit(o, node(o, da)) || !dq_8bit(o, node(o, dw)))
		return 0;
	const struct rt_node *an = node(o, da), *wn = node(o, dw);
	int aq = an->in[0], xs = an->in[1], azp = an->nin > 2 ? an->in[2] : -1;
	int wq = wn->in[0], ws = wn->in[1], wzp = wn->nin > 2 ? wn->in[2] : -1;
	const struct rt_tensor *wt = o->g->values[wq].konst, *wst = kfloat(o, ws);
	if (o->g->values[aq].konst || !wt || wt->rank != 2 || !wst || !scalar_value(o, xs) ||
	    (azp >= 0 && !scalar_value(o, azp)) || o->g->values[a].shape.rank < 2 ||
	    last_dim(o, a) != wt->dims[0])
		return 0;
	int64_t N = wt->dims[1], nws = runtime_tensor_count(wst);
	int64_t axis = rt_attr_int(wn, "axis", 1);
	if (!(nws == 1 || (nws == N && wst->rank == 1 && (axis == 1 || axis == -1))))
		return 0;
	if (wzp >= 0 && (!o->g->values[wzp].konst ||
	                 runtime_tensor_count(o->g->values[wzp].konst) != nws))
		return 0;
	int pat[MAXPAT] = { i }, np = 1, bias = -1, act = RT_ACT_NONE, res = -1;
	if (single(o, a))
		pat[np++] = da;
	if (!wn->folded && single(o, w))
		pat[np++] = dw;
	int v = linear_tail(o, out0(o, i), (int)N, pat, &np, &bias, &act, &res, 1);
	int in[8] = { aq, wq, azp, wzp, xs, ws, bias, res };
	struct rt_attr at[1] = { attr_int("act", act) };
	int rc = emit(o, max_of(pat, np), pat, np, "QuantLinear", in, 8, v, at, 1);
	if (rc == 0)
		(*done)++;
	return rc;
}

/* ---- LayerNorm ---------------------------------------------------------------------------- */

static int axes_last(struct opt *o, const struct rt_node *n, int rank)
{
	size_t na;
	const int64_t *ax = rt_attr_ints(n, "axes", &na);
	int64_t a;
	if (ax && na == 1)
		a = ax[0];
	else if (!ax && n->nin >= 2 && n->in[1] >= 0) {
		const struct rt_tensor *t = o->g->values[n->in[1]].konst;
		int64_t buf[2];
		if (!t || rt_tensor_to_ints(t, buf, 2) != 1)
			return 0;
		a = buf[0];
	} else
		return 0;
	return rank > 0 && (a == -1 || a == rank - 1) && rt_attr_int(n, "keepdims", 1) == 1;
}

/* The Add(a, b) producing x, absorbed as the skip when x is read only by
 * the pattern (nreads of its reads are in it). */
static int skip_add(struct opt *o, int x, int nreads, int *a, int *b)
{
	int p = prod(o, x, "Add");
	if (p < 0 || o->g->values[x].is_output || o->uses[x] != nreads)
		return -1;
	const struct rt_node *n = node(o, p);
	int u = n->in[0], w = n->in[1];
	if (n->nin != 2 || o->g->values[u].konst || o->g->values[w].konst ||
	    rt_graph_dtype(o->g, u) != BASE_DT_FLOAT || rt_graph_dtype(o->g, w) != BASE_DT_FLOAT)
		return -1;
	if (!same_shape(o, w, x)) {
		int t = u;
		u = w;
		w = t;
	}
	if (!same_shape(o, w, x))
		return -1;
	/* u, the skip, is x's trailing dims after leading 1s. */
	const struct rt_shape *us = &o->g->values[u].shape, *xs = &o->g->values[x].shape;
	if (!rt_shape_full(us) || us->rank > xs->rank || us->rank < 1)
		return -1;
	int lead = xs->rank - us->rank, f = 0;
	while (f < us->rank - 1 && us->d[f].size == 1)
		f++;
	for (int d = f; d < us->rank; d++) {
		struct rt_dim ud = us->d[d], xd = xs->d[lead + d];
		if (!same_dim(ud, xd) && !(ud.sym && xd.sym && ud.bound > 0 && xd.bound <= 0 &&
		                           strcmp(ud.sym, xd.sym) == 0))
			return -1; /* min(seq,512) against seq: equal whenever the Add runs */
	}
	*a = w;
	*b = u;
	return p;
}

static int emit_lnorm(struct opt *o, int *pat, int np, int x, int nreads, int gamma, int beta,
                      float eps, int out, int *done)
{
	int a = x, b = -1;
	int p = skip_add(o, x, nreads, &a, &b);
	if (p >= 0)
		pat[np++] = p;
	int in[4] = { a, b, gamma, beta };
	struct rt_attr at[1] = { attr_float("epsilon", eps) };
	int rc = emit(o, max_of(pat, np), pat, np, "SkipLayerNorm", in, 4, out, at, 1);
	if (rc == 0)
		(*done)++;
	return rc;
}

static int norm_consts(struct opt *o, int gamma, int beta, int h)
{
	const struct rt_tensor *g = kfloat(o, gamma), *b = beta >= 0 ? kfloat(o, beta) : NULL;
	return h > 0 && g && g->rank == 1 && g->dims[0] == h &&
	       (beta < 0 || (b && runtime_tensor_count(b) == h && b->dims[b->rank - 1] == h));
}

static int fuse_layernorm(struct opt *o, int i, int *done)
{
	const struct rt_node *n = node(o, i);
	if (n->nin < 2 || rt_graph_dtype(o->g, n->in[0]) != BASE_DT_FLOAT)
		return 0;
	for (int j = 1; j < n->nout; j++)
		if (n->out[j] >= 0)
			return 0;
	int x = n->in[0], rank = o->g->values[x].shape.rank, h = last_dim(o, x);
	int64_t axis = rt_attr_int(n, "axis", -1);
	int beta = n->nin >= 3 ? n->in[2] : -1;
	if (rank < 1 || !(axis == -1 || axis == rank - 1) || !norm_consts(o, n->in[1], beta, h))
		return 0;
	int pat[MAXPAT] = { i };
	return emit_lnorm(o, pat, 1, x, 1, n->in[1], beta, rt_attr_float(n, "epsilon", 1e-5f),
	                  out0(o, i), done);
}

/* ReduceMean, Sub, Pow 2, ReduceMean, Add eps, Sqrt, Div, Mul gamma, Add beta. */
static int fuse_decomposed(struct opt *o, int i, int *done)
{
	const struct rt_node *n = node(o, i);
	int x = n->in[0], rank = o->g->values[x].shape.rank, h = last_dim(o, x);
	float c, eps;
	if (rt_graph_dtype(o->g, x) != BASE_DT_FLOAT || !axes_last(o, n, rank) || h <= 0)
		return 0;
	int sub = next(o, out0(o, i), "Sub");
	if (sub < 0 || node(o, sub)->in[0] != x || node(o, sub)->in[1] != out0(o, i))
		return 0;
	int d = out0(o, sub), rd[2];
	if (o->g->values[d].is_output || o->uses[d] != 2 || readers(o, d, rd, 2) != 2)
		return 0;
	int pw = is_op(node(o, rd[0]), "Pow") ? rd[0] : rd[1], dv = pw == rd[0] ? rd[1] : rd[0];
	if (!is_op(node(o, pw), "Pow") || !is_op(node(o, dv), "Div") || node(o, pw)->in[0] != d ||
	    !kscalar(o, node(o, pw)->in[1], &c) || c != 2.0f || node(o, dv)->in[0] != d)
		return 0;
	int rm2 = next(o, out0(o, pw), "ReduceMean");
	if (rm2 < 0 || !axes_last(o, node(o, rm2), rank))
		return 0;
	int ae = next(o, out0(o, rm2), "Add");
	if (ae < 0 || with_scalar(o, node(o, ae), &eps) != out0(o, rm2))
		return 0;
	int sq = next(o, out0(o, ae), "Sqrt");
	if (sq < 0 || next(o, out0(o, sq), "Div") != dv || node(o, dv)->in[1] != out0(o, sq))
		return 0;
	int mu = next(o, out0(o, dv), "Mul");
	if (mu < 0)
		return 0;
	int gamma = node(o, mu)->in[0] == out0(o, dv) ? node(o, mu)->in[1] : node(o, mu)->in[0];
	int ab = next(o, out0(o, mu), "Add"), beta = -1, out = out0(o, mu);
	if (ab >= 0) {
		beta = node(o, ab)->in[0] == out ? node(o, ab)->in[1] : node(o, ab)->in[0];
		if (norm_consts(o, gamma, beta, h))
			out = out0(o, ab);
		else
			ab = beta = -1;
	}
	if (!norm_consts(o, gamma, beta, h) || !same_shape(o, x, out))
		return 0;
	int pat[MAXPAT] = { i, sub, pw, dv, rm2, ae, sq, mu }, np = 8;
	if (ab >= 0)
		pat[np++] = ab;
	/* x is read by the first ReduceMean and the Sub */
	return emit_lnorm(o, pat, np, x, 2, gamma, beta, eps, out, done);
}

/* ---- attention --------------------------------------------------------------------------- */

/* v = Transpose(Reshape(src, [B, S, H, D]), perm): src [B, S, H*D] and
 * (H, D), or -1. */
static int head_split(struct opt *o, int v, const int64_t *perm, int *pat, int *np, int *H,
                      int *D)
{
	int t = prod(o, v, "Transpose");
	if (t < 0 || !single(o, v))
		return -1;
	size_t pn;
	const int64_t *p = rt_attr_ints(node(o, t), "perm", &pn);
	if (!p || pn != 4 || memcmp(p, perm, 4 * sizeof *p))
		return -1;
	int rv = node(o, t)->in[0], r = prod(o, rv, "Reshape");
	if (r < 0 || !single(o, rv))
		return -1;
	int src = node(o, r)->in[0];
	const struct rt_shape *ss = &o->g->values[src].shape, *rs = &o->g->values[rv].shape;
	if (ss->rank != 3 || rs->rank != 4 || rs->d[2].size <= 0 || rs->d[3].size <= 0 ||
	    ss->d[2].size != rs->d[2].size * rs->d[3].size || !same_dim(ss->d[0], rs->d[0]) ||
	    !same_dim(ss->d[1], rs->d[1]) || rt_graph_dtype(o->g, src) != BASE_DT_FLOAT)
		return -1;
	*H = (int)rs->d[2].size;
	*D = (int)rs->d[3].size;
	pat[(*np)++] = t;
	pat[(*np)++] = r;
	return src;
}

/* Every reader of v is in pat, or a shape-only node (Shape, Gather,
 * Unsqueeze, Squeeze, Concat, Cast, Slice) whose outputs satisfy the same:
 * such readers die with the pattern. */
static int dies_with(struct opt *o, int v, const int *pat, int np, int depth)
{
	int rd[16], k = readers(o, v, rd, 16);
	if (k > 16 || depth > 8 || o->g->values[v].is_output)
		return 0;
	for (int j = 0; j < k; j++) {
		int in = 0;
		for (int q = 0; q < np; q++)
			in |= pat[q] == rd[j];
		if (in)
			continue;
		const struct rt_node *n = node(o, rd[j]);
		static const char *const ok[] = { "Shape", "Gather", "Unsqueeze", "Squeeze",
		                                  "Concat", "Cast", "Slice", NULL };
		int shape_op = 0;
		for (int q = 0; ok[q]; q++)
			shape_op |= is_op(n, ok[q]);
		if (!shape_op || n->nimplicit)
			return 0;
		if (!is_op(n, "Shape") && o->g->values[out0(o, rd[j])].shape.rank != 1 &&
		    o->g->values[out0(o, rd[j])].shape.rank != 0)
			return 0;
		for (int q = 0; q < n->nout; q++)
			if (n->out[q] >= 0 && !dies_with(o, n->out[q], pat, np, depth + 1))
				return 0;
	}
	return 1;
}

static int fuse_attention(struct opt *o, int i, int *done)
{
	const struct rt_node *sm = node(o, i);
	int pat[MAXPAT], np = 0;
	int s_in = sm->in[0];
	const struct rt_shape *ss = &o->g->values[s_in].shape;
	if (ss->rank != 4 || rt_graph_dtype(o->g, s_in) != BASE_DT_FLOAT ||
	    rt_attr_int(sm, "axis", -1) != -1 || sm->opset < 13 || !single(o, s_in))
		return 0;
	pat[np++] = i;
	int mask = -1, sc_v = s_in;
	int ad = prod(o, s_in, "Add");
	if (ad >= 0) {
		const struct rt_node *a = node(o, ad);
		for (int s = 0; s < 2 && a->nin == 2; s++) {
			int pv = a->in[s], p = prod(o, pv, NULL);
			float f;
			if (p >= 0 && (is_op(node(o, p), "Div") || is_op(node(o, p), "Mul")) &&
			    single(o, pv) && prod(o, with_scalar(o, node(o, p), &f), "MatMul") >= 0) {
				mask = a->in[1 - s];
				sc_v = pv;
				break;
			}
		}
		if (mask < 0 || rt_graph_dtype(o->g, mask) != BASE_DT_FLOAT ||
		    !same_shape(o, sc_v, s_in))
			return 0;
		pat[np++] = ad;
	}
	int sc = prod(o, sc_v, NULL);
	float c;
	if (sc < 0 || !single(o, sc_v))
		return 0;
	int mmv = with_scalar(o, node(o, sc), &c);
	float scale;
	if (is_op(node(o, sc), "Div") && mmv == node(o, sc)->in[0] && c != 0)
		scale = 1.0f / c;
	else if (is_op(node(o, sc), "Mul") && mmv >= 0)
		scale = c;
	else
		return 0;
	pat[np++] = sc;
	int mm1 = prod(o, mmv, "MatMul");
	if (mm1 < 0 || !single(o, mmv))
		return 0;
	pat[np++] = mm1;
	int mm2 = next(o, out0(o, i), "MatMul");
	if (mm2 < 0 || node(o, mm2)->in[0] != out0(o, i))
		return 0;
	pat[np++] = mm2;
	static const int64_t p0213[4] = { 0, 2, 1, 3 }, p0231[4] = { 0, 2, 3, 1 };
	int H, D, H2, D2, H3, D3;
	int q = head_split(o, node(o, mm1)->in[0], p0213, pat, &np, &H, &D);
	int k = head_split(o, node(o, mm1)->in[1], p0231, pat, &np, &H2, &D2);
	int v = head_split(o, node(o, mm2)->in[1], p0213, pat, &np, &H3, &D3);
	if (q < 0 || k < 0 || v < 0 || H != H2 || H != H3 || D != D2 || D != D3)
		return 0;
	/* The context back to [B, S, H*D]: Transpose + Reshape, or keep 4-D. */
	int out = out0(o, mm2), layout = 1, rd[1];
	if (!o->g->values[out].is_output && o->uses[out] == 1 && readers(o, out, rd, 1) == 1 &&
	    is_op(node(o, rd[0]), "Transpose")) {
		int t = rd[0];
		size_t pn;
		const int64_t *p = rt_attr_ints(node(o, t), "perm", &pn);
		int tv = out0(o, t), rs = -1, rdr[16];
		int nr = readers(o, tv, rdr, 16);
		for (int j = 0; j < nr && j < 16; j++)
			if (is_op(node(o, rdr[j]), "Reshape") && node(o, rdr[j])->in[0] == tv)
				rs = rdr[j];
		if (p && pn == 4 && !memcmp(p, p0213, sizeof p0213) && rs >= 0) {
			const struct rt_shape *os = &o->g->values[out0(o, rs)].shape;
			const struct rt_shape *qs = &o->g->values[q].shape;
			pat[np++] = t;
			pat[np++] = rs;
			if (os->rank == 3 && os->d[2].size == (int64_t)H * D &&
			    same_dim(os->d[0], qs->d[0]) && same_dim(os->d[1], qs->d[1]) &&
			    dies_with(o, tv, pat, np, 0)) {
				layout = 0;
				out = out0(o, rs);
			} else {
				np -= 2;
			}
		}
	}
	int in[4] = { q, k, v, mask };
	struct rt_attr ats[3] = { attr_int("num_heads", H), attr_float("scale", scale),
	                          attr_int("out_layout", layout) };
	int rc = emit(o, max_of(pat, np), pat, np, "Attention", in, 4, out, ats, 3);
	if (rc == 0)
		(*done)++;
	return rc;
}

/* ---- the pass ----------------------------------------------------------------------------- */

static int is_random(const struct rt_node *n)
{
	return strstr(n->op, "Random") || strcmp(n->op, "Bernoulli") == 0 ||
	       strcmp(n->op, "Multinomial") == 0;
}

/* Remove live nodes whose outputs nobody reads. */
static int sweep(struct opt *o)
{
	int removed = 0, changed = 1;
	while (changed) {
		changed = 0;
		for (int i = o->g->nnodes - 1; i >= 0; i--) {
			const struct rt_node *n = node(o, i);
			if (!live(o, i) || *n->domain || n->nout == 0 || n->nimplicit || is_random(n))
				continue;
			int used = 0;
			for (int a = 0; a < n->nattr; a++)
				used |= n->attr[a].graph != NULL;
			for (int j = 0; j < n->nout && !used; j++)
				used = n->out[j] >= 0 &&
				       (o->uses[n->out[j]] || o->g->values[n->out[j]].is_output);
			if (used)
				continue;
			kill(o, i);
			for (int j = 0; j < n->nin; j++)
				if (n->in[j] >= 0)
					o->uses[n->in[j]]--;
			removed++;
			changed = 1;
		}
	}
	return removed;
}

/* Drop dead nodes, renumber producers, recompute last uses. */
static void compact(struct opt *o)
{
	struct rt_graph *g = o->g;
	int k = 0;
	for (int i = 0; i < g->nnodes; i++)
		if (!o->dead[i])
			g->nodes[k++] = g->nodes[i];
	g->nnodes = k;
	g->ninited = k;
	o->m->ninited = k;
	for (int v = 0; v < g->nvalues; v++) {
		if (g->values[v].producer >= 0)
			g->values[v].producer = -1;
		g->values[v].last_use = -1;
	}
	for (int i = 0; i < k; i++) {
		const struct rt_node *n = &g->nodes[i];
		for (int j = 0; j < n->nout; j++)
			if (n->out[j] >= 0 && !n->folded)
				g->values[n->out[j]].producer = i;
		for (int j = 0; j < n->nin + n->nimplicit; j++)
			if (dep(n, j) >= 0)
				g->values[dep(n, j)].last_use = i;
	}
}

int rt_graph_optimize(struct rt_model *m, struct strata_error *err)
{
	struct rt_graph *g = &m->g;
	if (m->opts.opt_level < RT_OPT_ALL || g->nnodes == 0)
		return 0;
	struct opt o = { m, g, err, NULL, NULL };
	size_t szd = (size_t)g->nnodes, szu = (size_t)g->nvalues * sizeof(int);
	o.dead = base_calloc(szd, 1);
	o.uses = base_calloc((size_t)g->nvalues + 1, sizeof(int));
	int rc = 0, done = 0;
	if (!o.dead || !o.uses) {
		rc = base_nomem(err, "optimizing the graph");
		goto out;
	}
	count_uses(&o);
	/* Attention first: its MatMuls must not become Linears. */
	for (int i = 0; i < g->nnodes && rc == 0; i++)
		if (live(&o, i) && is_op(&g->nodes[i], "Softmax"))
			rc = fuse_attention(&o, i, &done);
	for (int i = 0; i < g->nnodes && rc == 0; i++) {
		int before = done;
		if (live(&o, i) && is_op(&g->nodes[i], "MatMul"))
			rc = fuse_qdq(&o, i, &done);
		if (rc == 0 && done == before && live(&o, i) &&
		    (is_op(&g->nodes[i], "MatMul") || is_op(&g->nodes[i], "Gemm")))
			rc = fuse_linear(&o, i, &done);
	}
	for (int i = 0; i < g->nnodes && rc == 0; i++)
		if (live(&o, i) && is_op(&g->nodes[i], "MatMulInteger"))
			rc = fuse_qlinear(&o, i, &done);
	for (int i = 0; i < g->nnodes && rc == 0; i++) {
		if (!live(&o, i))
			continue;
		if (is_op(&g->nodes[i], "LayerNormalization"))
			rc = fuse_layernorm(&o, i, &done);
		else if (is_op(&g->nodes[i], "ReduceMean"))
			rc = fuse_decomposed(&o, i, &done);
	}
	if (rc == 0) {
		if (done)
			sweep(&o);
		compact(&o);
	}
out:
	if (o.dead) base_free(o.dead, szd ? szd : 1);
	if (o.uses) base_free(o.uses, szu + sizeof(int));
	return rc;
}
