/*
 * einsum.c: Einsum, the Einstein-summation operator (opset 12).
 *
 * init() parses the equation once ("bij,bjk->bik", "...ii->...i", "i,i")
 * into one label list per operand plus the output's; labels are the letters
 * (A-Z then a-z, which is also the order of an implicit output) and one
 * ellipsis marker per term.  At run the ellipsis of each operand expands to
 * as many labels as the operand has unnamed axes; ellipsis labels broadcast
 * numpy-style (right-aligned, size 1 stretches), letters must agree exactly.
 *
 * Every operand is then a set of strides per label: a label absent from an
 * operand, or a broadcast one, has stride 0, and a label repeated within one
 * operand has the sum of its axes' strides, which walks the diagonal.  The
 * general kernel iterates the output labels and, for each output cell, the
 * summed labels, multiplying one cell of every operand: correct for every
 * equation and type.  A float contraction of two operands whose labels each
 * fall into batch (both operands and output), M (first and output), N
 * (second and output) or K (both, summed) is instead gathered into
 * [batch, M, K] and [batch, K, N] and handed to rt_sgemm.
 *
 * Accumulation: double for floating types, wrapping 64-bit for integers.
 */
#include <string.h>

#include "../kernel.h"

#define NLETTERS 52
#define NLABELS (NLETTERS + RT_MAX_RANK) /* letters, then ellipsis axes */
#define ELL (-1)                         /* the ellipsis in a term's label list */
#define MAX_CELLS ((int64_t)1 << 40)     /* bound on buffers and outputs */
#define MAX_STEPS ((int64_t)1 << 48)     /* bound on the general kernel's iterations */

/* A term: its labels in axis order, the ellipsis counting as one entry. */
struct term {
	int nlab;
	int lab[RT_MAX_RANK + 1];
	int has_ell;
};

struct eq {
	int nops;
	int explicit_out;
	struct term out;
	struct term in[]; /* nops */
};

static size_t eq_size(int nops)
{
	return sizeof(struct eq) + (size_t)nops * sizeof(struct term);
}

/* ---- parsing (init) -------------------------------------------------------------- */

static int letter(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return 26 + (c - 'a');
	return -1;
}

/* Parse one term from *p up to ',', '-' or the end. */
static int parse_term(struct rt_node *n, struct strata_error *err, const char **p, struct term *t)
{
	memset(t, 0, sizeof *t);
	const char *s = *p;
	for (;;) {
		char c = *s;
		if (c == ' ') {
			s++;
			continue;
		}
		if (c == 0 || c == ',' || c == '-')
			break;
		if (c == '.') {
			if (s[1] != '.' || s[2] != '.')
				return rt_node_err(n, err, STRATA_INVALID_GRAPH,
				                   "equation: a lone '.' (ellipsis is \"...\")");
			if (t->has_ell)
				return rt_node_err(n, err, STRATA_INVALID_GRAPH,
				                   "equation: two ellipses in one term");
			t->has_ell = 1;
			t->lab[t->nlab++] = ELL;
			s += 3;
			continue;
		}
		int l = letter(c);
		if (l < 0)
			return rt_node_err(n, err, STRATA_INVALID_GRAPH, "equation: unexpected '%c'", c);
		if (t->nlab - t->has_ell >= RT_MAX_RANK)
			return rt_node_err(n, err, STRATA_INVALID_GRAPH,
			                   "equation: a term with more than %d labels", RT_MAX_RANK);
		t->lab[t->nlab++] = l;
		s++;
	}
	*p = s;
	return 0;
}

static int parse_eq(struct rt_node *n, struct strata_error *err, const char *s, struct eq *e)
{
	int rc;
	for (int k = 0; k < e->nops; k++) {
		if ((rc = parse_term(n, err, &s, &e->in[k])))
			return rc;
		if (k + 1 < e->nops) {
			if (*s != ',')
				return rt_node_err(n, err, STRATA_INVALID_GRAPH,
				                   "equation has %d terms for %d inputs", k + 1, e->nops);
			s++;
		}
	}
	if (*s == ',')
		return rt_node_err(n, err, STRATA_INVALID_GRAPH,
		                   "equation has more terms than the %d inputs", e->nops);
	int count[NLETTERS] = {0}, any_ell = 0;
	for (int k = 0; k < e->nops; k++) {
		any_ell |= e->in[k].has_ell;
		for (int i = 0; i < e->in[k].nlab; i++)
			if (e->in[k].lab[i] != ELL)
				count[e->in[k].lab[i]]++;
	}
	if (*s == '-') {
		if (s[1] != '>')
			return rt_node_err(n, err, STRATA_INVALID_GRAPH, "equation: '-' without '>'");
		s += 2;
		e->explicit_out = 1;
		if ((rc = parse_term(n, err, &s, &e->out)))
			return rc;
		if (*s)
			return rt_node_err(n, err, STRATA_INVALID_GRAPH,
			                   "equation: unexpected '%c' in the output", *s);
		int seen[NLETTERS] = {0};
		for (int i = 0; i < e->out.nlab; i++) {
			int l = e->out.lab[i];
			if (l == ELL)
				continue;
			if (!count[l])
				return rt_node_err(n, err, STRATA_INVALID_GRAPH,
				                   "equation: output label '%c' is in no input",
				                   l < 26 ? 'A' + l : 'a' + l - 26);
			if (seen[l]++)
				return rt_node_err(n, err, STRATA_INVALID_GRAPH,
				                   "equation: output label '%c' repeated",
				                   l < 26 ? 'A' + l : 'a' + l - 26);
		}
	} else {
		/* implicit: the ellipsis axes, then the labels seen exactly once in
		 * alphabetical order */
		struct term *o = &e->out;
		memset(o, 0, sizeof *o);
		if (any_ell) {
			o->has_ell = 1;
			o->lab[o->nlab++] = ELL;
		}
		for (int l = 0; l < NLETTERS; l++) {
			if (count[l] != 1)
				continue;
			if (o->nlab - o->has_ell >= RT_MAX_RANK)
				return rt_node_err(n, err, STRATA_INVALID_GRAPH,
				                   "equation: output of more than %d dimensions",
				                   RT_MAX_RANK);
			o->lab[o->nlab++] = l;
		}
	}
	return 0;
}

/* ---- binding labels to a run's shapes ------------------------------------------------ */

struct bind {
	int nell;                   /* ellipsis axes of the widest operand */
	int64_t size[NLABELS];      /* -1: unused */
	int used[NLABELS];          /* operands using each label */
	int nout, out[NLABELS];     /* output labels in output order */
	int nsum, sum[NLABELS];     /* summed labels */
	int64_t *stride;            /* [nops][NLABELS], in cells; 0 where absent */
	int64_t outcount, sumcount;
};

/* The label of axis a of operand term t with e ellipsis axes of nell. */
static int axis_label(const struct term *t, int a, int e, int nell)
{
	for (int i = 0, ax = 0; i < t->nlab; i++) {
		if (t->lab[i] == ELL) {
			if (a < ax + e)
				return NLETTERS + (nell - e) + (a - ax);
			ax += e;
		} else {
			if (a == ax)
				return t->lab[i];
			ax++;
		}
	}
	return -1; /* not reached: a < rank */
}

static char label_char(int l)
{
	return l < 26 ? (char)('A' + l) : l < NLETTERS ? (char)('a' + l - 26) : '.';
}

static int bind_shapes(struct rt_exec *x, const struct rt_node *n, const struct eq *e,
                       const struct rt_tensor *const *ops, struct bind *b)
{
	memset(b, 0, sizeof *b);
	int nell = 0;
	for (int k = 0; k < e->nops; k++) {
		const struct term *t = &e->in[k];
		int named = t->nlab - t->has_ell;
		int r = ops[k]->rank;
		if ((!t->has_ell && r != named) || r < named)
			return rt_fail(x, n, STRATA_RUNTIME, "input %d has rank %d, its term names %d axes%s",
			               k, r, named, t->has_ell ? " (plus an ellipsis)" : "");
		if (r - named > nell)
			nell = r - named;
	}
	b->nell = nell;
	for (int l = 0; l < NLABELS; l++)
		b->size[l] = -1;
	for (int k = 0; k < e->nops; k++) {
		const struct term *t = &e->in[k];
		int r = ops[k]->rank, ne = r - (t->nlab - t->has_ell);
		for (int a = 0; a < r; a++) {
			int l = axis_label(t, a, ne, nell);
			int64_t d = ops[k]->dims[a];
			if (b->size[l] < 0 || (l >= NLETTERS && b->size[l] == 1))
				b->size[l] = d;
			else if (b->size[l] != d && !(l >= NLETTERS && d == 1))
				return rt_fail(x, n, STRATA_RUNTIME,
				               "label '%c' has size %lld in input %d but %lld elsewhere",
				               label_char(l), (long long)d, k, (long long)b->size[l]);
		}
	}
	b->stride = rt_scratch(x, (size_t)e->nops * NLABELS * sizeof *b->stride);
	if (!b->stride)
		return rt_nomem(x, n, "kernel scratch");
	memset(b->stride, 0, (size_t)e->nops * NLABELS * sizeof *b->stride);
	for (int k = 0; k < e->nops; k++) {
		const struct term *t = &e->in[k];
		int r = ops[k]->rank, ne = r - (t->nlab - t->has_ell);
		int64_t st = 1;
		int seen[NLABELS] = {0};
		for (int a = r - 1; a >= 0; a--) {
			int l = axis_label(t, a, ne, nell);
			if (ops[k]->dims[a] == b->size[l])
				b->stride[k * NLABELS + l] += st; /* repeated label: the diagonal */
			st *= ops[k]->dims[a] ? ops[k]->dims[a] : 1;
			if (!seen[l]++)
				b->used[l]++;
		}
	}

	int isout[NLABELS] = {0};
	for (int i = 0; i < e->out.nlab; i++) {
		int l = e->out.lab[i];
		if (l == ELL) {
			for (int j = 0; j < nell; j++)
				b->out[b->nout++] = NLETTERS + j;
		} else {
			b->out[b->nout++] = l;
		}
	}
	if (b->nout > RT_MAX_RANK)
		return rt_fail(x, n, STRATA_RUNTIME, "output would have %d dimensions, at most %d",
		               b->nout, RT_MAX_RANK);
	for (int i = 0; i < b->nout; i++)
		isout[b->out[i]] = 1;
	for (int l = 0; l < NLABELS; l++)
		if (b->used[l] && !isout[l])
			b->sum[b->nsum++] = l;
	b->outcount = 1;
	b->sumcount = 1;
	for (int i = 0; i < b->nout; i++) {
		int64_t d = b->size[b->out[i]];
		if (d < 0)
			d = b->size[b->out[i]] = 1; /* an output ellipsis no input filled */
		if (d && b->outcount > MAX_CELLS / d)
			return rt_fail(x, n, STRATA_RUNTIME, "output too large");
		b->outcount *= d;
	}
	for (int i = 0; i < b->nsum; i++) {
		int64_t d = b->size[b->sum[i]];
		if (d && b->sumcount > MAX_STEPS / d)
			return rt_fail(x, n, STRATA_RUNTIME, "too many products to sum");
		b->sumcount *= d;
	}
	if (b->outcount && b->sumcount > MAX_STEPS / b->outcount)
		return rt_fail(x, n, STRATA_RUNTIME, "too many products to sum");
	return 0;
}

/* ---- the general kernel ------------------------------------------------------------------ */

static int is_float(int dt)
{
	return dt == BASE_DT_FLOAT || dt == BASE_DT_DOUBLE;
}

static double getf(const void *p, int dt, int64_t i)
{
	return dt == BASE_DT_FLOAT ? (double)((const float *)p)[i] : ((const double *)p)[i];
}

static uint64_t geti(const void *p, int dt, int64_t i)
{
	switch (dt) {
	case BASE_DT_INT8: return (uint64_t)(int64_t)((const int8_t *)p)[i];
	case BASE_DT_UINT8: return ((const uint8_t *)p)[i];
	case BASE_DT_INT16: return (uint64_t)(int64_t)((const int16_t *)p)[i];
	case BASE_DT_UINT16: return ((const uint16_t *)p)[i];
	case BASE_DT_INT32: return (uint64_t)(int64_t)((const int32_t *)p)[i];
	case BASE_DT_UINT32: return ((const uint32_t *)p)[i];
	case BASE_DT_INT64: return (uint64_t)((const int64_t *)p)[i];
	default: return ((const uint64_t *)p)[i];
	}
}

static void puti(void *p, int dt, int64_t i, uint64_t v)
{
	switch (dt) {
	case BASE_DT_INT8: ((int8_t *)p)[i] = (int8_t)v; break;
	case BASE_DT_UINT8: ((uint8_t *)p)[i] = (uint8_t)v; break;
	case BASE_DT_INT16: ((int16_t *)p)[i] = (int16_t)v; break;
	case BASE_DT_UINT16: ((uint16_t *)p)[i] = (uint16_t)v; break;
	case BASE_DT_INT32: ((int32_t *)p)[i] = (int32_t)v; break;
	case BASE_DT_UINT32: ((uint32_t *)p)[i] = (uint32_t)v; break;
	case BASE_DT_INT64: ((int64_t *)p)[i] = (int64_t)v; break;
	default: ((uint64_t *)p)[i] = v; break;
	}
}

/* Walk the output labels (outer) and the summed labels (inner) with one
 * odometer, keeping each operand's cell offset current. */
static void general(const struct eq *e, const struct bind *b, const struct rt_tensor *const *ops,
                    struct rt_tensor *y)
{
	int dt = y->dtype, nl = b->nout + b->nsum, nops = e->nops;
	int lab[NLABELS];
	int64_t idx[NLABELS] = {0}, off[64] = {0};
	memcpy(lab, b->out, (size_t)b->nout * sizeof *lab);
	memcpy(lab + b->nout, b->sum, (size_t)b->nsum * sizeof *lab);
	for (int64_t o = 0; o < b->outcount; o++) {
		double accf = 0;
		uint64_t acci = 0;
		for (int64_t s = 0; s < b->sumcount; s++) {
			if (is_float(dt)) {
				double p = 1;
				for (int k = 0; k < nops; k++)
					p *= getf(ops[k]->data, dt, off[k]);
				accf += p;
			} else {
				uint64_t p = 1;
				for (int k = 0; k < nops; k++)
					p *= geti(ops[k]->data, dt, off[k]);
				acci += p;
			}
			for (int i = nl - 1; i >= 0; i--) {
				const int64_t *st = b->stride + lab[i];
				for (int k = 0; k < nops; k++)
					off[k] += st[k * NLABELS];
				if (++idx[i] < b->size[lab[i]])
					break;
				for (int k = 0; k < nops; k++)
					off[k] -= st[k * NLABELS] * b->size[lab[i]];
				idx[i] = 0;
			}
		}
		if (dt == BASE_DT_FLOAT)
			((float *)y->data)[o] = (float)accf;
		else if (dt == BASE_DT_DOUBLE)
			((double *)y->data)[o] = accf;
		else
			puti(y->data, dt, o, acci);
	}
}

/* ---- the GEMM path (float, two operands) --------------------------------------------------- */

/* Dense copy of src walked by nl labels of sizes size[] at strides st[]. */
static void gather(float *dst, const float *src, int nl, const int64_t *size, const int64_t *st)
{
	int64_t idx[NLABELS] = {0}, off = 0, total = 1;
	for (int i = 0; i < nl; i++)
		total *= size[i];
	for (int64_t c = 0; c < total; c++) {
		dst[c] = src[off];
		for (int i = nl - 1; i >= 0; i--) {
			off += st[i];
			if (++idx[i] < size[i])
				break;
			off -= st[i] * size[i];
			idx[i] = 0;
		}
	}
}

/* Try the GEMM path: 1 when done, 0 when the equation does not fit it,
 * negative on failure. */
static int try_gemm(struct rt_exec *x, const struct rt_node *n, const struct eq *e,
                    const struct bind *b, const struct rt_tensor *const *ops, struct rt_tensor *y)
{
	if (e->nops != 2 || y->dtype != BASE_DT_FLOAT)
		return 0;
	int isout[NLABELS] = {0};
	for (int i = 0; i < b->nout; i++)
		isout[b->out[i]] = 1;
	/* label groups: batch, M, N, K */
	int grp[4][NLABELS], ng[4] = {0};
	int64_t cnt[4] = {1, 1, 1, 1};
	for (int l = 0; l < NLABELS; l++) {
		if (!b->used[l])
			continue;
		/* "in" an operand: it has an axis for the label (stride may be 0 by
		 * broadcasting, which the gather handles) */
		int ina = 0, inb = 0;
		for (int k = 0; k < 2; k++) {
			const struct term *t = &e->in[k];
			int ne = ops[k]->rank - (t->nlab - t->has_ell);
			for (int a = 0; a < ops[k]->rank; a++)
				if (axis_label(t, a, ne, b->nell) == l)
					*(k ? &inb : &ina) = 1;
		}
		int g;
		if (ina && inb)
			g = isout[l] ? 0 : 3;
		else if (!isout[l])
			return 0; /* summed within one operand: leave it to the general kernel */
		else
			g = ina ? 1 : 2;
		grp[g][ng[g]++] = l;
		cnt[g] *= b->size[l];
	}
	int64_t B = cnt[0], M = cnt[1], N = cnt[2], K = cnt[3];
	if (B * M * K > MAX_CELLS || B * K * N > MAX_CELLS || B * M * N > MAX_CELLS)
		return 0;
	float *a = rt_scratch(x, (size_t)(B * M * K + 1) * sizeof *a);
	float *bb = rt_scratch(x, (size_t)(B * K * N + 1) * sizeof *bb);
	float *c = rt_scratch(x, (size_t)(B * M * N + 1) * sizeof *c);
	if (!a || !bb || !c)
		return rt_nomem(x, n, "kernel scratch");

	/* A as [batch, M, K], B as [batch, K, N] */
	int order[2][3] = {{0, 1, 3}, {0, 3, 2}};
	float *dst[2] = {a, bb};
	for (int k = 0; k < 2; k++) {
		int nl = 0;
		int64_t size[NLABELS], st[NLABELS];
		for (int j = 0; j < 3; j++) {
			int g = order[k][j];
			for (int i = 0; i < ng[g]; i++) {
				size[nl] = b->size[grp[g][i]];
				st[nl++] = b->stride[k * NLABELS + grp[g][i]];
			}
		}
		gather(dst[k], ops[k]->data, nl, size, st);
	}
	for (int64_t i = 0; i < B; i++) {
		if (K == 0)
			memset(c + i * M * N, 0, (size_t)(M * N) * sizeof *c);
		else if (M && N)
			rt_sgemm(0, 0, M, N, K, 1.0f, a + i * M * K, K, bb + i * K * N, N, 0.0f,
			         c + i * M * N, N);
	}

	/* C is [batch, M, N]: read it in the output's label order */
	int64_t cst[NLABELS] = {0}, s = 1;
	int cg[3] = {2, 1, 0};
	for (int j = 0; j < 3; j++) {
		int g = cg[j];
		for (int i = ng[g] - 1; i >= 0; i--) {
			cst[grp[g][i]] = s;
			s *= b->size[grp[g][i]];
		}
	}
	int64_t size[NLABELS], st[NLABELS];
	for (int i = 0; i < b->nout; i++) {
		size[i] = b->size[b->out[i]];
		st[i] = cst[b->out[i]];
	}
	gather(y->data, c, b->nout, size, st);
	return 1;
}

/* ---- run and init --------------------------------------------------------------------------- */

static int run_einsum(struct rt_node *n, struct rt_exec *x)
{
	const struct eq *e = n->state;
	const struct rt_tensor *ops[64];
	for (int k = 0; k < e->nops; k++) {
		ops[k] = rt_input(x, n, k);
		if (!ops[k])
			return rt_fail(x, n, STRATA_RUNTIME, "input %d is missing", k);
		if (ops[k]->dtype != ops[0]->dtype)
			return rt_fail(x, n, STRATA_RUNTIME, "inputs must all be %s",
			               base_dtype_name(ops[0]->dtype));
	}
	struct bind b;
	int rc = bind_shapes(x, n, e, ops, &b);
	if (rc)
		return rc;
	int64_t dims[RT_MAX_RANK];
	for (int i = 0; i < b.nout; i++)
		dims[i] = b.size[b.out[i]];
	struct rt_tensor *y;
	if ((rc = rt_output(x, n, 0, ops[0]->dtype, b.nout, dims, &y)))
		return rc;
	if (b.outcount == 0)
		return 0;
	if (b.sumcount == 0) {
		memset(y->data, 0, (size_t)b.outcount * base_dtype_size(y->dtype));
		return 0;
	}
	rc = try_gemm(x, n, e, &b, ops, y);
	if (rc < 0)
		return rc;
	if (rc == 0)
		general(e, &b, ops, y);
	return 0;
}

static int init_einsum(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	if (n->nin < 1 || n->nout < 1 || n->out[0] < 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "needs inputs and an output");
	if (n->nin > 64)
		return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED,
		                   "Einsum (opset %d): %d operands, at most 64", n->opset, n->nin);
	int dt = rt_graph_dtype(g, n->in[0] < 0 ? -1 : n->in[0]);
	switch (dt) {
	case BASE_DT_FLOAT: case BASE_DT_DOUBLE:
	case BASE_DT_INT8: case BASE_DT_UINT8: case BASE_DT_INT16: case BASE_DT_UINT16:
	case BASE_DT_INT32: case BASE_DT_UINT32: case BASE_DT_INT64: case BASE_DT_UINT64:
		break;
	default:
		return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED, "Einsum (opset %d): element type %s",
		                   n->opset, base_dtype_name(dt));
	}
	for (int k = 0; k < n->nin; k++) {
		if (n->in[k] < 0)
			return rt_node_err(n, err, STRATA_INVALID_GRAPH, "input %d is missing", k);
		if (rt_graph_dtype(g, n->in[k]) != dt)
			return rt_node_err(n, err, STRATA_INVALID_GRAPH, "inputs must all be %s",
			                   base_dtype_name(dt));
	}
	const struct rt_attr *a = rt_attr_find(n, "equation");
	if (!a || a->type != RT_ATTR_STRING)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "missing attribute equation");
	if (strlen(a->s) != a->slen)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "equation holds a NUL byte");
	struct eq *e = base_alloc(eq_size(n->nin));
	if (!e)
		return rt_node_nomem(n, err, "kernel state");
	memset(e, 0, eq_size(n->nin));
	e->nops = n->nin;
	int rc = parse_eq(n, err, a->s, e);
	if (rc) {
		base_free(e, eq_size(n->nin));
		return rc;
	}
	rt_graph_set_dtype(g, n->out[0], dt);
	n->state = e;
	n->run = run_einsum;
	return 0;
}

static void fini_einsum(struct rt_node *n)
{
	const struct eq *e = n->state;
	if (e)
		base_free(n->state, eq_size(e->nops));
	n->state = NULL;
}

const struct rt_opdef rt_ops_einsum[] = {
	{"", "Einsum", 12, init_einsum, fini_einsum},
	{.op = NULL},
};
