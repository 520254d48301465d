/*
 * infer.c: static shapes and constant folding at load.
 *
 * The last step of graph resolution (graph.c calls rt_graph_infer once every
 * node's init has set its element types).  Walking the nodes in run order,
 * every value gets a static shape (struct rt_shape): graph inputs take their
 * declared shapes, constants their real ones, and a node whose (domain, op)
 * has a rule in the table below computes its outputs' shapes from its
 * inputs' shapes and, where the op needs them, from its inputs' known cells.
 * Small integer tensors also carry their cells as far as they are known
 * (rt_value.content), each an int, a symbol or unknown: this is what turns
 * the exporters' Shape -> Gather -> Unsqueeze -> Concat -> Reshape chains
 * into shapes such as [batch,seq,12,32].  A node of the top graph whose
 * inputs are all constants and that is deterministic is then run once
 * through its own kernel (exec.c's rt_fold_node): its outputs become
 * constants of the model and the node is skipped at run time.  Finally the
 * declared graph output shapes are checked against the inferred ones.
 *
 * Invariants: a dimension is only ever a size, a symbol or unknown, and it
 * is a size or a symbol only when every successful run agrees with it (a
 * value without a rule stays unknown: nothing is guessed); symbols come
 * from the graph inputs' dim_params, whose sizes the runtime binds once per
 * run; shapes never change what a run does (run-time shapes are always
 * taken from the real tensors).
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "runtime_int.h"

/* Largest output a folded node may add to the model's memory. */
#define FOLD_MAX_BYTES ((size_t)64 << 20)

struct pass {
	struct rt_model *m;
	struct rt_graph *g;
	struct rt_exec *fold;    /* NULL in subgraphs, or with folding off */
	struct strata_error *err;
	struct rt_shape sink;    /* where omitted outputs' shapes go */
};

static const struct rt_shape unknown = { .rank = -1 };

/* ---- dimensions ----------------------------------------------------------------- */

static struct rt_dim dim_int(int64_t v)
{
	return (struct rt_dim){ .size = v };
}

static struct rt_dim dim_unknown(void)
{
	return (struct rt_dim){ .size = -1 };
}

/* 1 when a and b are the same size in every run. */
static int same(struct rt_dim a, struct rt_dim b)
{
	if (rt_dim_is_int(a) && rt_dim_is_int(b))
		return a.size == b.size;
	return rt_dim_is_full(a) && rt_dim_is_full(b) && !rt_dim_is_int(a) && !rt_dim_is_int(b) &&
	       strcmp(a.sym, b.sym) == 0 && (a.bound > 0 ? a.bound : 0) == (b.bound > 0 ? b.bound : 0);
}

/* Numpy broadcast of two dimensions.  A size other than 1 against a symbol
 * is that size: any run where the symbol differs fails in the kernel. */
static struct rt_dim bcast(struct rt_dim a, struct rt_dim b)
{
	if (rt_dim_is_int(a) && a.size == 1)
		return b;
	if (rt_dim_is_int(b) && b.size == 1)
		return a;
	if (same(a, b))
		return a;
	/* s against min(s, cap): equal while s <= cap; past it, cap (not 1 unless
	 * the result is s anyway) and s disagree and the kernel fails. */
	if (rt_dim_is_sym(a) && rt_dim_is_capped(b) && strcmp(a.sym, b.sym) == 0)
		return a;
	if (rt_dim_is_sym(b) && rt_dim_is_capped(a) && strcmp(a.sym, b.sym) == 0)
		return b;
	if (rt_dim_is_int(a) && rt_dim_is_int(b))
		return dim_unknown(); /* incompatible: the kernel fails */
	if (rt_dim_is_int(a) && rt_dim_is_sym(b))
		return a;
	if (rt_dim_is_int(b) && rt_dim_is_sym(a))
		return b;
	return dim_unknown();
}

/* Product of d[lo..hi): a size when all are sizes (or one is 0), a symbol
 * when it is the only non-1 factor, else unknown. */
static struct rt_dim product(const struct rt_dim *d, int lo, int hi)
{
	int64_t p = 1;
	const char *sym = NULL;
	int nsym = 0, unk = 0;
	for (int i = lo; i < hi; i++) {
		if (rt_dim_is_int(d[i]) && d[i].size == 0)
			return dim_int(0);
		if (rt_dim_is_int(d[i])) {
			if (__builtin_mul_overflow(p, d[i].size, &p))
				return dim_unknown();
		} else if (rt_dim_is_sym(d[i])) {
			sym = d[i].sym;
			nsym++;
		} else {
			unk = 1;
		}
	}
	if (unk || nsym > 1)
		return dim_unknown();
	if (nsym == 1)
		return p == 1 ? (struct rt_dim){ .size = -1, .sym = sym } : dim_unknown();
	return dim_int(p);
}

/* ---- what rules read and write ----------------------------------------------------- */

static int present(const struct rt_node *n, int i)
{
	return i >= 0 && i < n->nin && n->in[i] >= 0;
}

static const struct rt_shape *in_shape(struct pass *p, const struct rt_node *n, int i)
{
	return present(n, i) ? &p->g->values[n->in[i]].shape : &unknown;
}

/* Known cells of input i (rank = count), or an unknown shape. */
static const struct rt_shape *in_val(struct pass *p, const struct rt_node *n, int i)
{
	return present(n, i) ? &p->g->values[n->in[i]].content : &unknown;
}

static struct rt_shape *out_shape(struct pass *p, const struct rt_node *n, int i)
{
	if (i < 0 || i >= n->nout || n->out[i] < 0)
		return &p->sink;
	return &p->g->values[n->out[i]].shape;
}

static struct rt_shape *out_val(struct pass *p, const struct rt_node *n, int i)
{
	if (i < 0 || i >= n->nout || n->out[i] < 0)
		return &p->sink;
	return &p->g->values[n->out[i]].content;
}

static int in_dtype(struct pass *p, const struct rt_node *n, int i)
{
	return present(n, i) ? p->g->values[n->in[i]].dtype : BASE_DT_UNDEFINED;
}

static int out_dtype(struct pass *p, const struct rt_node *n, int i)
{
	return i < n->nout && n->out[i] >= 0 ? p->g->values[n->out[i]].dtype : BASE_DT_UNDEFINED;
}

static int int_type(int dt)
{
	return dt == BASE_DT_INT64 || dt == BASE_DT_INT32;
}

static int ints_known(struct pass *p, const struct rt_node *n, int i, int64_t *dst);

/* An INTS attribute or, from opset `since`, input i: the ints (at most
 * RT_MAX_RANK); -1 when unknown, -2 when absent. */
static int ints_arg(struct pass *p, const struct rt_node *n, const char *attr, int since, int i,
                    int64_t *dst)
{
	if (n->opset < since) {
		size_t c;
		const int64_t *a = rt_attr_ints(n, attr, &c);
		if (!a && !rt_attr_find(n, attr))
			return -2;
		if (c > RT_MAX_RANK)
			return -1;
		for (size_t k = 0; k < c; k++)
			dst[k] = a[k];
		return (int)c;
	}
	if (!present(n, i))
		return -2;
	return ints_known(p, n, i, dst);
}

/* ---- cell tracking ----------------------------------------------------------------
 *
 * A cell is stored as a struct rt_dim whose size field holds the value when
 * known.  Negative values (Reshape's -1, Slice's negative ends) must stay
 * distinguishable from "unknown", so a known negative value is marked by a
 * sym pointing at `neg`. */
static const char neg[] = "";

static struct rt_dim cell_int(int64_t v)
{
	return v >= 0 ? dim_int(v) : (struct rt_dim){ .size = v, .sym = neg };
}

static int cell_known(struct rt_dim c)
{
	return c.size >= 0 || c.sym == neg;
}

static int cell_sym(struct rt_dim c)
{
	return c.size < 0 && c.sym && c.sym != neg;
}

/* Cells of input i as ints when every one is known: count, else -1. */
static int ints_known(struct pass *p, const struct rt_node *n, int i, int64_t *dst)
{
	const struct rt_shape *c = in_val(p, n, i);
	if (c->rank < 0)
		return -1;
	for (int k = 0; k < c->rank; k++) {
		if (!cell_known(c->d[k]))
			return -1;
		dst[k] = c->d[k].size;
	}
	return c->rank;
}

/* A cell used as a dimension: a size, a symbol or unknown. */
static struct rt_dim cell_dim(struct rt_dim c)
{
	if (c.size >= 0)
		return c;
	return cell_sym(c) ? c : dim_unknown();
}

/* Cells of a constant tensor, when it is small and of an integer type. */
static void content_of(const struct rt_tensor *t, struct rt_shape *c)
{
	c->rank = -1;
	if (!int_type(t->dtype) || t->rank > 1)
		return;
	int64_t v[RT_MAX_RANK];
	int k = rt_tensor_to_ints(t, v, RT_MAX_RANK);
	if (k < 0)
		return;
	c->rank = k;
	for (int i = 0; i < k; i++)
		c->d[i] = cell_int(v[i]);
}

static void shape_of(const struct rt_tensor *t, struct rt_shape *s)
{
	s->rank = t->rank;
	for (int i = 0; i < t->rank && i < RT_MAX_RANK; i++)
		s->d[i] = dim_int(t->dims[i]);
}

/* Normalize axis a against rank r; -1 when out of range or r unknown. */
static int axis_of(int64_t a, int r)
{
	return r < 0 ? -1 : rt_axis(a, r);
}

/* ---- rules ------------------------------------------------------------------------ */

typedef void rule_fn(struct pass *p, const struct rt_node *n);

/* Output 0 (and, for Dropout, the mask) has input 0's shape. */
static void r_same(struct pass *p, const struct rt_node *n)
{
	*out_shape(p, n, 0) = *in_shape(p, n, 0);
	if (strcmp(n->op, "Dropout") == 0)
		*out_shape(p, n, 1) = *in_shape(p, n, 0);
	if (strcmp(n->op, "Identity") == 0)
		*out_val(p, n, 0) = *in_val(p, n, 0);
}

/* Cast keeps the shape; integer cells pass when no value can change. */
static void r_cast(struct pass *p, const struct rt_node *n)
{
	*out_shape(p, n, 0) = *in_shape(p, n, 0);
	int from = in_dtype(p, n, 0), to = out_dtype(p, n, 0);
	const struct rt_shape *c = in_val(p, n, 0);
	if (!int_type(from) || !int_type(to) || c->rank < 0)
		return;
	struct rt_shape *o = out_val(p, n, 0);
	*o = *c;
	if (to == BASE_DT_INT32)
		for (int k = 0; k < o->rank; k++)
			if (!cell_known(o->d[k]) || o->d[k].size > INT32_MAX || o->d[k].size < INT32_MIN)
				o->d[k] = dim_unknown();
}

/* Numpy broadcast of shapes a and b into o. */
static void bcast_shape(const struct rt_shape *a, const struct rt_shape *b, struct rt_shape *o)
{
	if (a->rank < 0 || b->rank < 0) {
		o->rank = -1;
		return;
	}
	int r = a->rank > b->rank ? a->rank : b->rank;
	struct rt_shape t = { .rank = r };
	for (int i = 0; i < r; i++) {
		int ia = a->rank - r + i, ib = b->rank - r + i;
		struct rt_dim da = ia >= 0 ? a->d[ia] : dim_int(1);
		struct rt_dim db = ib >= 0 ? b->d[ib] : dim_int(1);
		t.d[i] = bcast(da, db);
	}
	*o = t;
}

/* One cell of an integer Add, Sub, Mul or Div; unknown unless exact. */
static struct rt_dim arith(char op, struct rt_dim a, struct rt_dim b)
{
	int ka = cell_known(a), kb = cell_known(b);
	int64_t r;
	if (ka && kb) {
		switch (op) {
		case '+': return __builtin_add_overflow(a.size, b.size, &r) ? dim_unknown() : cell_int(r);
		case '-': return __builtin_sub_overflow(a.size, b.size, &r) ? dim_unknown() : cell_int(r);
		case '*': return __builtin_mul_overflow(a.size, b.size, &r) ? dim_unknown() : cell_int(r);
		default:
			/* Only exact quotients: floor and truncation agree on them. */
			if (b.size == 0 || (a.size == INT64_MIN && b.size == -1) || a.size % b.size)
				return dim_unknown();
			return cell_int(a.size / b.size);
		}
	}
	/* Identities that keep a symbol. */
	if (kb && ((op == '+' || op == '-') && b.size == 0))
		return a;
	if (kb && ((op == '*' || op == '/') && b.size == 1))
		return a;
	if (ka && op == '+' && a.size == 0)
		return b;
	if (ka && op == '*' && a.size == 1)
		return b;
	return dim_unknown();
}

/* Elementwise ops of any arity (Add ... Sum, Where): broadcast shapes. */
static void r_bcast(struct pass *p, const struct rt_node *n)
{
	struct rt_shape s = *in_shape(p, n, 0);
	int k = 0;
	for (int i = 0; i < n->nin; i++)
		if (present(n, i))
			k++;
	if (k != n->nin)
		return; /* an omitted input: leave it to the kernel */
	for (int i = 1; i < n->nin; i++)
		bcast_shape(&s, in_shape(p, n, i), &s);
	*out_shape(p, n, 0) = s;

	char op = !strcmp(n->op, "Add") ? '+' : !strcmp(n->op, "Sub") ? '-'
	        : !strcmp(n->op, "Mul") ? '*' : !strcmp(n->op, "Div") ? '/' : 0;
	if (!op || n->nin != 2 || !int_type(out_dtype(p, n, 0)) || s.rank > 1)
		return;
	const struct rt_shape *a = in_val(p, n, 0), *b = in_val(p, n, 1);
	if (a->rank < 0 || b->rank < 0 || (a->rank != b->rank && a->rank != 1 && b->rank != 1))
		return;
	struct rt_shape o = { .rank = a->rank > b->rank ? a->rank : b->rank };
	for (int i = 0; i < o.rank; i++)
		o.d[i] = arith(op, a->d[a->rank == 1 ? 0 : i], b->d[b->rank == 1 ? 0 : i]);
	/* The cell count must agree with the shape (a [1] against a scalar). */
	if (!(s.rank == 0 && o.rank == 1) && !(s.rank == 1 && rt_dim_is_int(s.d[0]) && s.d[0].size == o.rank))
		return;
	*out_val(p, n, 0) = o;
}

static void r_matmul(struct pass *p, const struct rt_node *n)
{
	const struct rt_shape *a = in_shape(p, n, 0), *b = in_shape(p, n, 1);
	if (a->rank < 1 || b->rank < 1)
		return;
	/* Batch dimensions broadcast; a vector gains and then loses a 1. */
	struct rt_shape ba = { .rank = a->rank >= 2 ? a->rank - 2 : 0 };
	struct rt_shape bb = { .rank = b->rank >= 2 ? b->rank - 2 : 0 };
	memcpy(ba.d, a->d, (size_t)ba.rank * sizeof *ba.d);
	memcpy(bb.d, b->d, (size_t)bb.rank * sizeof *bb.d);
	struct rt_shape o;
	bcast_shape(&ba, &bb, &o);
	if (a->rank >= 2)
		o.d[o.rank++] = a->d[a->rank - 2];
	if (b->rank >= 2)
		o.d[o.rank++] = b->d[b->rank - 1];
	if (o.rank > RT_MAX_RANK)
		return;
	*out_shape(p, n, 0) = o;
}

static void r_gemm(struct pass *p, const struct rt_node *n)
{
	const struct rt_shape *a = in_shape(p, n, 0), *b = in_shape(p, n, 1);
	if (a->rank != 2 || b->rank != 2)
		return;
	int ta = rt_attr_int(n, "transA", 0) != 0, tb = rt_attr_int(n, "transB", 0) != 0;
	struct rt_shape *o = out_shape(p, n, 0);
	o->rank = 2;
	o->d[0] = a->d[ta ? 1 : 0];
	o->d[1] = b->d[tb ? 0 : 1];
}

static void r_transpose(struct pass *p, const struct rt_node *n)
{
	const struct rt_shape *a = in_shape(p, n, 0);
	if (a->rank < 0)
		return;
	size_t c;
	const int64_t *perm = rt_attr_ints(n, "perm", &c);
	struct rt_shape o = { .rank = a->rank };
	if (perm && (int)c != a->rank)
		return;
	int seen[RT_MAX_RANK] = { 0 };
	for (int i = 0; i < a->rank; i++) {
		int64_t k = perm ? perm[i] : a->rank - 1 - i;
		if (k < 0 || k >= a->rank || seen[k]++)
			return;
		o.d[i] = a->d[k];
	}
	*out_shape(p, n, 0) = o;
}

static void r_reshape(struct pass *p, const struct rt_node *n)
{
	const struct rt_shape *in = in_shape(p, n, 0);
	struct rt_shape t;
	if (n->opset < 5) {
		size_t c;
		const int64_t *a = rt_attr_ints(n, "shape", &c);
		if (c > RT_MAX_RANK)
			return;
		t.rank = (int)c;
		for (size_t k = 0; k < c; k++)
			t.d[k] = cell_int(a[k]);
	} else {
		t = *in_val(p, n, 1);
		if (t.rank < 0)
			return;
	}
	int allowzero = n->opset >= 14 && rt_attr_int(n, "allowzero", 0) != 0;
	int infer = -1;
	for (int i = 0; i < t.rank; i++)
		if (cell_known(t.d[i]) && t.d[i].size == -1)
			infer = i;
	struct rt_shape o = { .rank = t.rank };
	for (int i = 0; i < t.rank; i++) {
		struct rt_dim c = t.d[i];
		if (cell_known(c) && c.size == 0 && !allowzero)
			o.d[i] = in->rank > i ? in->d[i] : dim_unknown();
		else if (cell_known(c) && c.size >= 0)
			o.d[i] = c;
		else if (cell_sym(c) &&
		         (allowzero || infer >= 0 || (in->rank > i && same(in->d[i], c))))
			/* A symbol of size 0 would copy the input's dimension instead;
			 * these cases make that the same thing (or a failed run, when
			 * a -1 must be inferred from zero cells). */
			o.d[i] = c;
		else
			o.d[i] = dim_unknown();
	}
	if (infer >= 0) {
		/* -1 = (input cells) / (other cells), cancelling equal symbols:
		 * they are nonzero in any run that succeeds. */
		o.d[infer] = dim_unknown();
		if (in->rank >= 0) {
			const char *syms[RT_MAX_RANK];
			int ns = 0;
			int64_t num = 1, den = 1;
			int ok = 1;
			for (int i = 0; i < in->rank && ok; i++) {
				if (rt_dim_is_int(in->d[i]))
					ok = !__builtin_mul_overflow(num, in->d[i].size, &num);
				else if (rt_dim_is_sym(in->d[i]))
					syms[ns++] = in->d[i].sym;
				else
					ok = 0;
			}
			for (int i = 0; i < o.rank && ok; i++) {
				if (i == infer)
					continue;
				if (rt_dim_is_int(o.d[i])) {
					ok = !__builtin_mul_overflow(den, o.d[i].size, &den);
				} else if (rt_dim_is_sym(o.d[i])) {
					int k;
					for (k = 0; k < ns && strcmp(syms[k], o.d[i].sym); k++)
						;
					if (k == ns)
						ok = 0;
					else
						syms[k] = syms[--ns];
				} else {
					ok = 0;
				}
			}
			if (ok && den > 0 && num % den == 0) {
				if (ns == 0)
					o.d[infer] = dim_int(num / den);
				else if (ns == 1 && num == den)
					o.d[infer] = (struct rt_dim){ .size = -1, .sym = syms[0] };
			}
		}
	}
	*out_shape(p, n, 0) = o;
}

static void r_flatten(struct pass *p, const struct rt_node *n)
{
	const struct rt_shape *a = in_shape(p, n, 0);
	if (a->rank < 0)
		return;
	int64_t ax = rt_attr_int(n, "axis", 1);
	if (ax < 0)
		ax += a->rank;
	if (ax < 0 || ax > a->rank)
		return;
	struct rt_shape *o = out_shape(p, n, 0);
	o->rank = 2;
	o->d[0] = product(a->d, 0, (int)ax);
	o->d[1] = product(a->d, (int)ax, a->rank);
}

static void r_squeeze(struct pass *p, const struct rt_node *n)
{
	const struct rt_shape *a = in_shape(p, n, 0);
	if (a->rank < 0)
		return;
	int64_t ax[RT_MAX_RANK];
	int na = ints_arg(p, n, "axes", 13, 1, ax);
	if (na == -1)
		return;
	int drop[RT_MAX_RANK] = { 0 };
	if (na < 0 || na == 0) {
		/* Every dimension of size 1 goes: each must be known. */
		for (int i = 0; i < a->rank; i++) {
			if (!rt_dim_is_int(a->d[i]))
				return;
			drop[i] = a->d[i].size == 1;
		}
	} else {
		for (int k = 0; k < na; k++) {
			int d = axis_of(ax[k], a->rank);
			if (d < 0)
				return;
			drop[d] = 1;
		}
	}
	struct rt_shape o = { .rank = 0 };
	for (int i = 0; i < a->rank; i++)
		if (!drop[i])
			o.d[o.rank++] = a->d[i];
	*out_shape(p, n, 0) = o;
	/* A [1] becoming a scalar keeps its cell. */
	const struct rt_shape *c = in_val(p, n, 0);
	if (c->rank >= 0 && o.rank <= 1)
		*out_val(p, n, 0) = *c;
}

static void r_unsqueeze(struct pass *p, const struct rt_node *n)
{
	const struct rt_shape *a = in_shape(p, n, 0);
	if (a->rank < 0)
		return;
	int64_t ax[RT_MAX_RANK];
	int na = ints_arg(p, n, "axes", 13, 1, ax);
	if (na < 0)
		return;
	int r = a->rank + na;
	if (r > RT_MAX_RANK)
		return;
	int ins[RT_MAX_RANK] = { 0 };
	for (int k = 0; k < na; k++) {
		int d = axis_of(ax[k], r);
		if (d < 0 || ins[d])
			return;
		ins[d] = 1;
	}
	struct rt_shape o = { .rank = r };
	for (int i = 0, j = 0; i < r; i++)
		o.d[i] = ins[i] ? dim_int(1) : a->d[j++];
	*out_shape(p, n, 0) = o;
	const struct rt_shape *c = in_val(p, n, 0);
	if (c->rank >= 0 && r <= 1)
		*out_val(p, n, 0) = *c;
}

static void r_concat(struct pass *p, const struct rt_node *n)
{
	if (n->nin < 1)
		return;
	int r = in_shape(p, n, 0)->rank;
	for (int i = 0; i < n->nin; i++)
		if (!present(n, i) || in_shape(p, n, i)->rank != r)
			return;
	int ax = axis_of(rt_attr_int(n, "axis", 0), r);
	if (ax < 0)
		return;
	struct rt_shape o = { .rank = r };
	for (int d = 0; d < r; d++) {
		if (d == ax) {
			/* A sum of sizes; a symbol plus zeros. */
			int64_t sum = 0;
			const char *sym = NULL;
			int ok = 1;
			for (int i = 0; i < n->nin && ok; i++) {
				struct rt_dim x = in_shape(p, n, i)->d[d];
				if (rt_dim_is_int(x))
					ok = !__builtin_add_overflow(sum, x.size, &sum);
				else if (rt_dim_is_sym(x) && !sym)
					sym = x.sym;
				else
					ok = 0;
			}
			o.d[d] = !ok ? dim_unknown() : sym ? (sum == 0 ? (struct rt_dim){ .size = -1, .sym = sym }
			                                              : dim_unknown())
			                                   : dim_int(sum);
			continue;
		}
		/* The other dimensions agree in any successful run: take the
		 * best known one. */
		o.d[d] = dim_unknown();
		for (int i = 0; i < n->nin; i++) {
			struct rt_dim x = in_shape(p, n, i)->d[d];
			if (rt_dim_is_int(x) || (rt_dim_is_sym(x) && !rt_dim_is_full(o.d[d])))
				o.d[d] = x;
		}
	}
	*out_shape(p, n, 0) = o;
	if (r != 1)
		return;
	struct rt_shape c = { .rank = 0 };
	for (int i = 0; i < n->nin; i++) {
		const struct rt_shape *x = in_val(p, n, i);
		if (x->rank < 0 || c.rank + x->rank > RT_MAX_RANK)
			return;
		memcpy(c.d + c.rank, x->d, (size_t)x->rank * sizeof *x->d);
		c.rank += x->rank;
	}
	*out_val(p, n, 0) = c;
}

/* Size of a slice of a dimension of size dim (the ONNX clamping rules). */
static int64_t slice_len(int64_t dim, int64_t start, int64_t end, int64_t step)
{
	if (start < 0)
		start = start < -dim ? 0 : start + dim;
	if (end < 0)
		end = end < -dim ? -1 : end + dim;
	if (step > 0) {
		if (start > dim)
			start = dim;
		if (end < 0)
			end = 0;
		if (end > dim)
			end = dim;
		return end > start ? (end - start - 1) / step + 1 : 0;
	}
	if (start > dim - 1)
		start = dim - 1;
	if (end > dim - 1)
		end = dim - 1;
	if (end < -1)
		end = -1;
	/* -step cannot overflow: step == INT64_MIN gives a length of 1 at most. */
	if (step == INT64_MIN)
		return start > end ? 1 : 0;
	return start > end ? (start - end - 1) / (-step) + 1 : 0;
}

static void r_slice(struct pass *p, const struct rt_node *n)
{
	const struct rt_shape *a = in_shape(p, n, 0);
	if (a->rank < 0)
		return;
	int64_t st[RT_MAX_RANK], en[RT_MAX_RANK], ax[RT_MAX_RANK], sp[RT_MAX_RANK];
	int ns = ints_arg(p, n, "starts", 10, 1, st);
	int ne = ints_arg(p, n, "ends", 10, 2, en);
	int nx = ints_arg(p, n, "axes", 10, 3, ax);
	int nst = n->opset < 10 ? -2 : ints_arg(p, n, "steps", 10, 4, sp);
	if (ns == -1 || nx == -1 || nst == -1 || (nx >= 0 && nx != ns) || (nst >= 0 && nst != ns))
		return;
	if (ns == -2 || (ne != ns && !(ne == -1 && n->opset >= 10)))
		return;
	/* From opset 10, an end may be a symbol (a length read with Shape). */
	const struct rt_shape *ends = n->opset >= 10 ? in_val(p, n, 2) : NULL;
	if (ends && ends->rank != ns)
		return;
	struct rt_shape o = *a;
	int done[RT_MAX_RANK] = { 0 };
	int64_t cstart = 0, cstep = 1, clen = -1; /* for the cells of a 1-D input */
	int cells = 1;
	for (int k = 0; k < ns; k++) {
		int d = axis_of(nx >= 0 ? ax[k] : k, a->rank);
		int64_t step = nst >= 0 ? sp[k] : 1;
		if (d < 0 || done[d]++ || step == 0)
			return;
		struct rt_dim x = a->d[d];
		struct rt_dim e = ends ? ends->d[k] : cell_int(en[k]);
		if (!cell_known(e)) {
			/* [0, s) of a dimension: min(s, size), or s itself. */
			if (step == 1 && st[k] == 0 && cell_sym(e) && e.bound <= 0 && rt_dim_is_int(x))
				o.d[d] = x.size == 0 ? dim_int(0) : (struct rt_dim){ .size = -1, .sym = e.sym, .bound = x.size };
			else if (step == 1 && st[k] == 0 && cell_sym(e) && same(e, x))
				o.d[d] = x;
			else
				o.d[d] = dim_unknown();
			cells = 0; /* the cells of a 1-D input are no longer tracked */
			continue;
		}
		en[k] = e.size;
		if (rt_dim_is_int(x)) {
			o.d[d] = dim_int(slice_len(x.size, st[k], en[k], step));
			if (d == 0 && a->rank == 1) {
				int64_t s0 = st[k] < 0 ? st[k] + x.size : st[k];
				if (step > 0)
					s0 = s0 < 0 ? 0 : s0 > x.size ? x.size : s0;
				else
					s0 = s0 < 0 ? 0 : s0 > x.size - 1 ? x.size - 1 : s0;
				cstart = s0;
				cstep = step;
				clen = o.d[d].size;
			}
		} else if (step == 1 && st[k] == 0 && en[k] >= ((int64_t)1 << 40)) {
			/* The whole dimension, whatever its size (no tensor has a
			 * dimension past 2^40 cells). */
			o.d[d] = x;
		} else {
			o.d[d] = dim_unknown();
		}
	}
	*out_shape(p, n, 0) = o;
	const struct rt_shape *c = in_val(p, n, 0);
	if (a->rank != 1 || c->rank < 0 || !cells || (ns > 0 && clen < 0))
		return;
	if (ns == 0) {
		*out_val(p, n, 0) = *c;
		return;
	}
	struct rt_shape v = { .rank = (int)clen };
	for (int64_t i = 0; i < clen; i++) {
		int64_t j = cstart + i * cstep;
		if (j < 0 || j >= c->rank)
			return;
		v.d[i] = c->d[j];
	}
	*out_val(p, n, 0) = v;
}

static void r_gather(struct pass *p, const struct rt_node *n)
{
	const struct rt_shape *a = in_shape(p, n, 0), *idx = in_shape(p, n, 1);
	if (a->rank < 1 || idx->rank < 0)
		return;
	int ax = axis_of(rt_attr_int(n, "axis", 0), a->rank);
	if (ax < 0 || a->rank - 1 + idx->rank > RT_MAX_RANK)
		return;
	struct rt_shape o = { .rank = 0 };
	for (int i = 0; i < ax; i++)
		o.d[o.rank++] = a->d[i];
	for (int i = 0; i < idx->rank; i++)
		o.d[o.rank++] = idx->d[i];
	for (int i = ax + 1; i < a->rank; i++)
		o.d[o.rank++] = a->d[i];
	*out_shape(p, n, 0) = o;
	const struct rt_shape *c = in_val(p, n, 0);
	int64_t iv[RT_MAX_RANK];
	int ni = ints_known(p, n, 1, iv);
	if (a->rank != 1 || c->rank < 0 || ni < 0 || idx->rank > 1)
		return;
	struct rt_shape v = { .rank = ni };
	for (int i = 0; i < ni; i++) {
		int64_t j = iv[i] < 0 ? iv[i] + c->rank : iv[i];
		if (j < 0 || j >= c->rank)
			return;
		v.d[i] = c->d[j];
	}
	*out_val(p, n, 0) = v;
}

static void r_shape(struct pass *p, const struct rt_node *n)
{
	const struct rt_shape *a = in_shape(p, n, 0);
	struct rt_shape *o = out_shape(p, n, 0);
	o->rank = 1;
	o->d[0] = dim_unknown();
	if (a->rank < 0)
		return;
	int64_t lo = 0, hi = a->rank;
	if (n->opset >= 15) {
		lo = rt_attr_int(n, "start", 0);
		hi = rt_attr_int(n, "end", a->rank);
		lo = lo < 0 ? lo + a->rank : lo;
		hi = hi < 0 ? hi + a->rank : hi;
		lo = lo < 0 ? 0 : lo > a->rank ? a->rank : lo;
		hi = hi < 0 ? 0 : hi > a->rank ? a->rank : hi;
		if (hi < lo)
			hi = lo;
	}
	o->d[0] = dim_int(hi - lo);
	struct rt_shape *v = out_val(p, n, 0);
	v->rank = (int)(hi - lo);
	for (int64_t i = lo; i < hi; i++)
		v->d[i - lo] = a->d[i];
}

static void r_size(struct pass *p, const struct rt_node *n)
{
	const struct rt_shape *a = in_shape(p, n, 0);
	out_shape(p, n, 0)->rank = 0;
	if (a->rank < 0)
		return;
	struct rt_dim c = product(a->d, 0, a->rank);
	if (rt_dim_is_full(c)) {
		out_val(p, n, 0)->rank = 1;
		out_val(p, n, 0)->d[0] = c;
	}
}

/* The known cells of input i as a shape (sizes, symbols, unknowns). */
static int shape_arg(struct pass *p, const struct rt_node *n, int i, struct rt_shape *s)
{
	const struct rt_shape *c = in_val(p, n, i);
	if (c->rank < 0 || in_shape(p, n, i)->rank != 1)
		return -1;
	s->rank = c->rank;
	for (int k = 0; k < c->rank; k++) {
		if (cell_known(c->d[k]) && c->d[k].size < 0)
			return -1; /* a negative size: the kernel fails */
		s->d[k] = cell_dim(c->d[k]);
	}
	return 0;
}

static void r_expand(struct pass *p, const struct rt_node *n)
{
	struct rt_shape t;
	if (shape_arg(p, n, 1, &t) != 0)
		return;
	bcast_shape(in_shape(p, n, 0), &t, out_shape(p, n, 0));
}

static void r_constant_of_shape(struct pass *p, const struct rt_node *n)
{
	struct rt_shape t;
	if (shape_arg(p, n, 0, &t) == 0)
		*out_shape(p, n, 0) = t;
}

static void r_tile(struct pass *p, const struct rt_node *n)
{
	const struct rt_shape *a = in_shape(p, n, 0);
	int64_t rep[RT_MAX_RANK];
	if (a->rank < 0 || ints_known(p, n, 1, rep) != a->rank)
		return;
	struct rt_shape o = { .rank = a->rank };
	for (int i = 0; i < a->rank; i++) {
		int64_t r;
		if (rep[i] < 0)
			return;
		if (rep[i] == 1)
			o.d[i] = a->d[i];
		else if (rep[i] == 0)
			o.d[i] = dim_int(0);
		else if (rt_dim_is_int(a->d[i]) && !__builtin_mul_overflow(a->d[i].size, rep[i], &r))
			o.d[i] = dim_int(r);
		else
			o.d[i] = dim_unknown();
	}
	*out_shape(p, n, 0) = o;
}

static void r_range(struct pass *p, const struct rt_node *n)
{
	struct rt_shape *o = out_shape(p, n, 0);
	o->rank = 1;
	o->d[0] = dim_unknown();
	int64_t sv[RT_MAX_RANK], lv[RT_MAX_RANK], dv[RT_MAX_RANK];
	if (!int_type(in_dtype(p, n, 0)) || ints_known(p, n, 0, sv) != 1 ||
	    ints_known(p, n, 1, lv) != 1 || ints_known(p, n, 2, dv) != 1 || dv[0] == 0)
		return;
	int64_t s = sv[0], l = lv[0], d = dv[0];
	/* ceil((limit - start) / delta), at least 0, in exact integer arithmetic. */
	int64_t span;
	if (__builtin_sub_overflow(l, s, &span))
		return;
	int64_t q = span / d, r = span % d;
	if (r != 0 && ((r > 0) == (d > 0)))
		q++;
	o->d[0] = dim_int(q > 0 ? q : 0);
}

static void r_split(struct pass *p, const struct rt_node *n)
{
	const struct rt_shape *a = in_shape(p, n, 0);
	if (a->rank < 0 || n->nout < 1)
		return;
	int ax = axis_of(rt_attr_int(n, "axis", 0), a->rank);
	if (ax < 0)
		return;
	int64_t sz[RT_MAX_RANK];
	int ns = n->nout <= RT_MAX_RANK ? ints_arg(p, n, "split", 13, 1, sz) : -1;
	if (ns == -1 || (ns >= 0 && ns != n->nout))
		return;
	struct rt_dim x = a->d[ax];
	for (int j = 0; j < n->nout; j++) {
		struct rt_shape o = *a;
		if (ns >= 0) {
			o.d[ax] = sz[j] >= 0 ? dim_int(sz[j]) : dim_unknown();
		} else if (!rt_dim_is_int(x)) {
			o.d[ax] = dim_unknown();
		} else if (x.size % n->nout == 0) {
			o.d[ax] = dim_int(x.size / n->nout);
		} else if (n->opset >= 18) {
			/* num_outputs: equal chunks of ceil(size / n), the last smaller. */
			int64_t c = (x.size + n->nout - 1) / n->nout;
			int64_t last = x.size - c * (n->nout - 1);
			if (last <= 0)
				return;
			o.d[ax] = dim_int(j == n->nout - 1 ? last : c);
		} else {
			return;
		}
		*out_shape(p, n, j) = o;
	}
}

/* Output of a reduction over the axes marked in red[] of a. */
static void reduce_to(struct pass *p, const struct rt_node *n, const struct rt_shape *a,
                      const int *red, int keep)
{
	struct rt_shape o = { .rank = 0 };
	for (int i = 0; i < a->rank; i++) {
		if (!red[i])
			o.d[o.rank++] = a->d[i];
		else if (keep)
			o.d[o.rank++] = dim_int(1);
	}
	*out_shape(p, n, 0) = o;
}

static void r_reduce(struct pass *p, const struct rt_node *n)
{
	const struct rt_shape *a = in_shape(p, n, 0);
	if (a->rank < 0)
		return;
	int since = strcmp(n->op, "ReduceSum") == 0 ? 13 : 18;
	int keep = rt_attr_int(n, "keepdims", 1) != 0;
	int noop = n->opset >= since && rt_attr_int(n, "noop_with_empty_axes", 0) != 0;
	int64_t ax[RT_MAX_RANK];
	int na = ints_arg(p, n, "axes", since, 1, ax);
	if (na == -1)
		return;
	int red[RT_MAX_RANK] = { 0 };
	if (na <= 0) {
		if (noop) {
			*out_shape(p, n, 0) = *a;
			return;
		}
		for (int i = 0; i < a->rank; i++)
			red[i] = 1;
	}
	for (int k = 0; k < na; k++) {
		int d = axis_of(ax[k], a->rank);
		if (d < 0)
			return;
		red[d] = 1;
	}
	reduce_to(p, n, a, red, keep);
}

static void r_argmax(struct pass *p, const struct rt_node *n)
{
	const struct rt_shape *a = in_shape(p, n, 0);
	int ax = axis_of(rt_attr_int(n, "axis", 0), a->rank);
	if (ax < 0)
		return;
	int red[RT_MAX_RANK] = { 0 };
	red[ax] = 1;
	reduce_to(p, n, a, red, rt_attr_int(n, "keepdims", 1) != 0);
}

static void r_topk(struct pass *p, const struct rt_node *n)
{
	const struct rt_shape *a = in_shape(p, n, 0);
	int ax = axis_of(rt_attr_int(n, "axis", -1), a->rank);
	int64_t k;
	if (ax < 0)
		return;
	if (n->opset < 10) {
		k = rt_attr_int(n, "k", -1);
	} else {
		int64_t kv[RT_MAX_RANK];
		if (ints_known(p, n, 1, kv) != 1)
			return;
		k = kv[0];
	}
	if (k < 0 || (rt_dim_is_int(a->d[ax]) && k > a->d[ax].size))
		return;
	struct rt_shape o = *a;
	o.d[ax] = dim_int(k);
	*out_shape(p, n, 0) = o;
	*out_shape(p, n, 1) = o;
}

/* Global pools: [N, C, 1, ...]. */
static void r_global_pool(struct pass *p, const struct rt_node *n)
{
	const struct rt_shape *a = in_shape(p, n, 0);
	if (a->rank < 2)
		return;
	struct rt_shape o = *a;
	for (int i = 2; i < a->rank; i++)
		o.d[i] = dim_int(1);
	*out_shape(p, n, 0) = o;
}

/* DynamicQuantizeLinear: y like x, scale and zero point scalars. */
static void r_dynquant(struct pass *p, const struct rt_node *n)
{
	*out_shape(p, n, 0) = *in_shape(p, n, 0);
	out_shape(p, n, 1)->rank = 0;
	out_shape(p, n, 2)->rank = 0;
}

struct rule {
	const char *domain;
	const char *op;
	rule_fn *fn;
};

static const struct rule rules[] = {
	/* elementwise with broadcasting */
	{"", "Add", r_bcast}, {"", "Sub", r_bcast}, {"", "Mul", r_bcast}, {"", "Div", r_bcast},
	{"", "Pow", r_bcast}, {"", "Mod", r_bcast}, {"", "BitShift", r_bcast},
	{"", "And", r_bcast}, {"", "Or", r_bcast}, {"", "Xor", r_bcast},
	{"", "BitwiseAnd", r_bcast}, {"", "BitwiseOr", r_bcast}, {"", "BitwiseXor", r_bcast},
	{"", "Equal", r_bcast}, {"", "Less", r_bcast}, {"", "Greater", r_bcast},
	{"", "LessOrEqual", r_bcast}, {"", "GreaterOrEqual", r_bcast}, {"", "PRelu", r_bcast},
	{"", "Max", r_bcast}, {"", "Min", r_bcast}, {"", "Sum", r_bcast}, {"", "Mean", r_bcast},
	{"", "Where", r_bcast},
	/* same shape as input 0 */
	{"", "Abs", r_same}, {"", "Neg", r_same}, {"", "Reciprocal", r_same}, {"", "Floor", r_same},
	{"", "Ceil", r_same}, {"", "Round", r_same}, {"", "Sqrt", r_same}, {"", "Exp", r_same},
	{"", "Log", r_same}, {"", "Relu", r_same}, {"", "Sigmoid", r_same}, {"", "Tanh", r_same},
	{"", "Erf", r_same}, {"", "Sin", r_same}, {"", "Cos", r_same}, {"", "Tan", r_same},
	{"", "Asin", r_same}, {"", "Acos", r_same}, {"", "Atan", r_same}, {"", "Sinh", r_same},
	{"", "Cosh", r_same}, {"", "Asinh", r_same}, {"", "Acosh", r_same}, {"", "Atanh", r_same},
	{"", "Sign", r_same}, {"", "Not", r_same}, {"", "BitwiseNot", r_same},
	{"", "IsNaN", r_same}, {"", "IsInf", r_same}, {"", "Softplus", r_same},
	{"", "Softsign", r_same}, {"", "Elu", r_same}, {"", "Selu", r_same},
	{"", "LeakyRelu", r_same}, {"", "ThresholdedRelu", r_same}, {"", "HardSigmoid", r_same},
	{"", "HardSwish", r_same}, {"", "Gelu", r_same}, {"", "Mish", r_same}, {"", "Celu", r_same},
	{"", "Shrink", r_same}, {"", "Clip", r_same}, {"", "Identity", r_same},
	{"", "Softmax", r_same}, {"", "LogSoftmax", r_same}, {"", "Hardmax", r_same},
	{"", "LayerNormalization", r_same}, {"", "BatchNormalization", r_same},
	{"", "InstanceNormalization", r_same}, {"", "LpNormalization", r_same},
	{"", "MeanVarianceNormalization", r_same}, {"", "LRN", r_same}, {"", "Dropout", r_same},
	{"", "CumSum", r_same}, {"", "Trilu", r_same}, {"", "EyeLike", r_same},
	{"", "QuantizeLinear", r_same}, {"", "DequantizeLinear", r_same},
	{"", "DynamicQuantizeLinear", r_dynquant},
	{"", "Cast", r_cast}, {"", "CastLike", r_cast},
	/* shapes */
	{"", "MatMul", r_matmul}, {"", "MatMulInteger", r_matmul}, {"", "Gemm", r_gemm}, {"", "Transpose", r_transpose},
	{"", "Reshape", r_reshape}, {"", "Flatten", r_flatten}, {"", "Squeeze", r_squeeze},
	{"", "Unsqueeze", r_unsqueeze}, {"", "Concat", r_concat}, {"", "Slice", r_slice},
	{"", "Gather", r_gather}, {"", "Shape", r_shape}, {"", "Size", r_size},
	{"", "Expand", r_expand}, {"", "ConstantOfShape", r_constant_of_shape},
	{"", "Tile", r_tile}, {"", "Range", r_range}, {"", "Split", r_split},
	{"", "ReduceSum", r_reduce}, {"", "ReduceMean", r_reduce}, {"", "ReduceMax", r_reduce},
	{"", "ReduceMin", r_reduce}, {"", "ReduceProd", r_reduce}, {"", "ReduceL1", r_reduce},
	{"", "ReduceL2", r_reduce}, {"", "ReduceLogSum", r_reduce},
	{"", "ReduceLogSumExp", r_reduce}, {"", "ReduceSumSquare", r_reduce},
	{"", "ArgMax", r_argmax}, {"", "ArgMin", r_argmax}, {"", "TopK", r_topk},
	{"", "GlobalAveragePool", r_global_pool}, {"", "GlobalMaxPool", r_global_pool},
	{"", "GlobalLpPool", r_global_pool},
	{NULL, NULL, NULL},
};

static rule_fn *find_rule(const struct rt_node *n)
{
	for (const struct rule *r = rules; r->op; r++)
		if (strcmp(r->op, n->op) == 0 && strcmp(r->domain, n->domain) == 0)
			return r->fn;
	return NULL;
}

/* ---- constant folding ---------------------------------------------------------------- */

static int is_random(const struct rt_node *n)
{
	static const char *const ops[] = { "RandomUniform", "RandomNormal", "RandomUniformLike",
	                                   "RandomNormalLike", "Bernoulli", "Multinomial", NULL };
	for (int i = 0; ops[i]; i++)
		if (strcmp(n->op, ops[i]) == 0)
			return 1;
	return 0;
}

/* A node worth folding: every input present is a constant tensor, its
 * outputs are tensors, and its result depends on nothing else (no random
 * draws, no subgraph, no value read behind the kernel's inputs). */
static int foldable(struct pass *p, const struct rt_node *n)
{
	const struct rt_graph *g = p->g;
	if (*n->domain)
		return 0; /* the training ops, among others, keep state */
	if (n->nimplicit || is_random(n))
		return 0;
	for (int a = 0; a < n->nattr; a++)
		if (n->attr[a].type == RT_ATTR_GRAPH || n->attr[a].type == RT_ATTR_GRAPHS)
			return 0;
	int nconst = 0;
	for (int j = 0; j < n->nin; j++) {
		int v = n->in[j];
		if (v < 0)
			continue;
		if (!g->values[v].konst || g->values[v].kind != RT_KIND_TENSOR)
			return 0;
		nconst++;
	}
	if (!nconst)
		return 0;
	for (int j = 0; j < n->nout; j++)
		if (n->out[j] >= 0 && g->values[n->out[j]].kind != RT_KIND_TENSOR)
			return 0;
	/* Dropout in training mode draws a mask. */
	if (strcmp(n->op, "Dropout") == 0 && present(n, 2)) {
		const struct rt_tensor *t = g->values[n->in[2]].konst;
		if (t->dtype != BASE_DT_BOOL || runtime_tensor_count(t) != 1 ||
		    *(const uint8_t *)t->data != 0)
			return 0;
	}
	/* Outputs known to be large stay computed at run time. */
	size_t bytes = 0;
	for (int j = 0; j < n->nout; j++) {
		int v = n->out[j];
		if (v < 0)
			continue;
		struct rt_dim c = product(g->values[v].shape.d, 0,
		                          g->values[v].shape.rank < 0 ? 0 : g->values[v].shape.rank);
		int ok;
		if (g->values[v].shape.rank >= 0 && rt_dim_is_int(c)) {
			size_t b = rt_tensor_bytes(g->values[v].dtype, c.size, &ok);
			if (!ok || b > FOLD_MAX_BYTES - bytes)
				return 0;
			bytes += b;
		}
	}
	return 1;
}

/* Fold node n: 0 (folded or left to run), STRATA_NOMEM, or STRATA_RUNTIME
 * when checking and its shape rule contradicts the real outputs. */
static int fold(struct pass *p, struct rt_node *n)
{
	struct rt_graph *g = p->g;
	struct rt_tensor *out[64];
	struct strata_error ferr = { 0 };
	if (n->nout > 64)
		return 0;
	int rc = rt_fold_node(p->fold, n, &p->m->mem, out, &ferr);
	if (rc == STRATA_NOMEM)
		return base_nomem(p->err, "folding constants");
	if (rc != 0)
		return 0; /* the node fails the same way at run time */
	size_t bytes = 0;
	for (int j = 0; j < n->nout; j++) {
		if (!out[j])
			continue;
		int ok;
		bytes += rt_tensor_bytes(out[j]->dtype, runtime_tensor_count(out[j]), &ok);
	}
	if (bytes > FOLD_MAX_BYTES)
		return 0; /* too large to keep; the copies stay in the model's memory */
	for (int j = 0; j < n->nout; j++) {
		int v = n->out[j];
		if (v < 0 || !out[j])
			continue;
		struct rt_value *val = &g->values[v];
		if (p->m->opts.check_shapes &&
		    !rt_shape_fits(&val->shape, out[j], NULL, NULL)) {
			char want[256], got[256];
			struct rt_shape real;
			shape_of(out[j], &real);
			rt_shape_format(&val->shape, want, sizeof want);
			rt_shape_format(&real, got, sizeof got);
			return rt_node_err(n, p->err, STRATA_RUNTIME,
			                   "folded output \"%s\" has shape %s, its static shape is %s",
			                   val->name, got, want);
		}
	}
	for (int j = 0; j < n->nout; j++) {
		int v = n->out[j];
		if (v < 0 || !out[j])
			continue;
		struct rt_value *val = &g->values[v];
		val->konst = out[j];
		val->producer = -1;
		shape_of(out[j], &val->shape);
		content_of(out[j], &val->content);
	}
	n->folded = 1;
	p->m->nfolded++;
	return 0;
}

/* ---- the pass -------------------------------------------------------------------------- */

/* Declared shape of a graph input or output. */
static void declared(const struct rt_value_info *info, struct rt_shape *s)
{
	s->rank = info->rank > RT_MAX_RANK ? -1 : info->rank;
	for (int i = 0; i < s->rank; i++) {
		if (info->dims[i] >= 0)
			s->d[i] = dim_int(info->dims[i]);
		else if (info->dim_names[i] && *info->dim_names[i])
			s->d[i] = (struct rt_dim){ .size = -1, .sym = info->dim_names[i] };
		else
			s->d[i] = dim_unknown();
	}
}

static int infer_graph(struct pass *p);

static int infer_node(struct pass *p, struct rt_node *n)
{
	rule_fn *fn = find_rule(n);
	if (fn)
		fn(p, n);
	/* Subgraphs see their captured values with the shapes known here. */
	for (int a = 0; a < n->nattr; a++) {
		if (!n->attr[a].graph)
			continue;
		struct pass sub = { p->m, n->attr[a].graph, NULL, p->err, { .rank = -1 } };
		int rc = infer_graph(&sub);
		if (rc != 0)
			return rc;
	}
	if (p->fold && foldable(p, n))
		return fold(p, n);
	return 0;
}

static int infer_graph(struct pass *p)
{
	struct rt_graph *g = p->g;
	for (int v = 0; v < g->nvalues; v++) {
		struct rt_value *val = &g->values[v];
		val->shape.rank = -1;
		val->content.rank = -1;
		if (val->outer >= 0 && g->parent && val->outer < g->parent->nvalues) {
			val->shape = g->parent->values[val->outer].shape;
			val->content = g->parent->values[val->outer].content;
		}
		if (val->konst && val->kind == RT_KIND_TENSOR) {
			shape_of(val->konst, &val->shape);
			content_of(val->konst, &val->content);
		}
	}
	/* A subgraph's inputs (loop-carried values, scan slices) may take other
	 * shapes than declared from one iteration to the next: unknown. */
	if (!g->parent)
		for (int k = 0; k < g->ninputs; k++)
			if (g->input_info[k].kind == RT_KIND_TENSOR)
				declared(&g->input_info[k], &g->values[g->inputs[k]].shape);
	for (int i = 0; i < g->nnodes; i++) {
		int rc = infer_node(p, &g->nodes[i]);
		if (rc != 0)
			return rc;
	}
	return 0;
}

/* A declared output shape must agree with the inferred one where both are
 * known: rank, and sizes (symbol names are the model's own business). */
static int check_outputs(struct pass *p)
{
	const struct rt_graph *g = p->g;
	for (int k = 0; k < g->noutputs; k++) {
		const struct rt_value_info *info = &g->output_info[k];
		const struct rt_shape *s = &g->values[g->outputs[k]].shape;
		struct rt_shape d;
		if (info->kind != RT_KIND_TENSOR || info->rank < 0 || s->rank < 0)
			continue;
		declared(info, &d);
		int bad = d.rank != s->rank;
		for (int i = 0; i < d.rank && !bad; i++)
			bad = rt_dim_is_int(d.d[i]) && rt_dim_is_int(s->d[i]) && d.d[i].size != s->d[i].size;
		if (!bad)
			continue;
		char want[256], got[256];
		rt_shape_format(&d, want, sizeof want);
		rt_shape_format(s, got, sizeof got);
		return base_err(p->err, STRATA_INVALID_GRAPH,
		                "output \"%s\" is declared with shape %s but its inferred shape is %s",
		                info->name, want, got);
	}
	return 0;
}

int rt_graph_infer(struct rt_model *m, struct strata_error *err)
{
	struct pass p = { m, &m->g, NULL, err, { .rank = -1 } };
	if (m->opts.opt_level >= RT_OPT_BASIC) {
		p.fold = rt_fold_new(m);
		if (!p.fold)
			return base_nomem(err, "folding constants");
	}
	int rc = infer_graph(&p);
	rt_fold_free(p.fold);
	if (rc == 0)
		rc = check_outputs(&p);
	return rc;
}
