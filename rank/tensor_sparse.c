/*
 * tensor_sparse.c: map, join, merge, reduce, concat and slices over tensors
 * with mapped dimensions (x{}), for the VM's SMAP, SJOIN, SMERGE, SREDUCE,
 * SCONCAT and PEEK (which takes dense tensors too), unpack_bits (UNPACK,
 * dense or not) and top (TOP).
 *
 * A value is a list of blocks (struct rank_sparse): the labels of the
 * type's mapped dimensions, then a dense subspace over its indexed ones.
 * Dense operands (no mapped dimension) are read as a single block with no
 * labels, a number as a single cell, so one code path serves sparse,
 * mixed and their combinations with dense values and numbers.  Each block
 * pair of a join runs the dense join of tensor.c on the subspaces.  The
 * dense fast paths of tensor.c and vm.c do not come here.
 *
 * Invariants: results live in the query's arena; labels are borrowed from
 * the operands (which outlive the document's evaluation); a result never
 * holds two blocks with the same labels.
 */
#include <math.h>
#include <string.h>

#include "rank_eval.h"

/* One operand seen as blocks. */
struct blocks {
	const struct rank_type *t;
	int nmapped;
	int mdim[RANK_MAX_RANK];        /* the type's index of each mapped dimension */
	struct rank_type sub;           /* the indexed dimensions (names borrowed) */
	size_t n, block;
	const char *const *labels;
	const double *cells;
};

/* The dense subspace type of t and where its mapped dimensions are. */
static void split_type(const struct rank_type *t, struct blocks *b)
{
	memset(&b->sub, 0, sizeof b->sub);
	b->sub.cell = BASE_DT_DOUBLE;
	b->t = t;
	b->nmapped = 0;
	for (int i = 0; i < t->rank; i++) {
		if (t->dims[i] == RANK_DIM_MAPPED) {
			b->mdim[b->nmapped++] = i;
		} else {
			b->sub.dim_names[b->sub.rank] = t->dim_names[i];
			b->sub.dims[b->sub.rank++] = t->dims[i];
		}
	}
	b->block = rank_type_cells(&b->sub);
}

static int view(struct base_arena *a, const struct rank_type *t, const struct rank_val *v,
                struct blocks *b)
{
	split_type(t, b);
	if (b->nmapped > 0) {
		const struct rank_sparse *s = v->cells;
		b->n = s->nblocks;
		b->labels = s->labels;
		b->cells = s->cells;
		return 0;
	}
	b->n = 1;
	b->labels = NULL;
	if (t->rank == 0) {
		b->cells = &v->num;
		return 0;
	}
	if (v->cell == BASE_DT_DOUBLE) {
		b->cells = v->cells;
		return 0;
	}
	double *c = base_arena_alloc(a, b->block * sizeof *c, 64);
	if (!c)
		return STRATA_NOMEM;
	for (size_t i = 0; i < b->block; i++)
		c[i] = rank_cell(v->cell, v->cells, i);
	b->cells = c;
	return 0;
}

/* A result being built: at most cap blocks. */
struct builder {
	struct blocks b;
	size_t cap;
	const char **labels;
	double *cells;
	size_t *count;                  /* per cell, for avg (reduce only) */
};

static int build_init(struct base_arena *a, const struct rank_type *t, size_t cap,
                      int counts, struct builder *r)
{
	split_type(t, &r->b);
	r->b.n = 0;
	r->cap = cap ? cap : 1;
	r->labels = base_arena_alloc(a, r->cap * (size_t)(r->b.nmapped + 1) * sizeof *r->labels, 8);
	r->cells = base_arena_alloc(a, r->cap * r->b.block * sizeof *r->cells, 64);
	r->count = counts ? base_arena_alloc(a, r->cap * r->b.block * sizeof *r->count, 8) : NULL;
	if (!r->labels || !r->cells || (counts && !r->count))
		return STRATA_NOMEM;
	return 0;
}

/* The result as a value of its type. */
static int build_done(struct base_arena *a, struct builder *r, struct rank_val *out)
{
	out->num = 0;
	if (r->b.nmapped == 0 && r->b.n == 0) {
		/* a dense result of no block (empty operands, a missed slice): zeros */
		memset(r->cells, 0, r->b.block * sizeof *r->cells);
		r->b.n = 1;
	}
	if (r->b.nmapped == 0) {
		/* dense: exactly one block */
		if (r->b.t->rank == 0) {
			out->cells = NULL;
			out->cell = BASE_DT_DOUBLE;
			out->num = r->b.n ? r->cells[0] : 0.0;
		} else {
			out->cells = r->cells;
			out->cell = BASE_DT_DOUBLE;
		}
		return 0;
	}
	struct rank_sparse *s = base_arena_alloc(a, sizeof *s, 8);
	if (!s)
		return STRATA_NOMEM;
	s->nblocks = r->b.n;
	s->labels = r->labels;
	s->cells = r->cells;
	out->cells = s;
	out->cell = BASE_DT_UNDEFINED;
	return 0;
}

static const char *label_of(const struct blocks *b, size_t blk, int k)
{
	return b->labels[blk * (size_t)b->nmapped + (size_t)k];
}

int rank_sparse_map(struct base_arena *a, const struct rank_type *t, struct rank_val v,
                    double (*fn)(void *ud, double x, double y), void *ud, struct rank_val *out)
{
	struct blocks in;
	struct builder r;
	int rc;
	if ((rc = view(a, t, &v, &in)) || (rc = build_init(a, t, in.n, 0, &r)))
		return rc;
	for (size_t i = 0; i < in.n; i++) {
		for (int k = 0; k < in.nmapped; k++)
			r.labels[i * (size_t)in.nmapped + (size_t)k] = label_of(&in, i, k);
		for (size_t j = 0; j < in.block; j++)
			r.cells[i * in.block + j] = fn(ud, in.cells[i * in.block + j], 0.0);
	}
	r.b.n = in.n;
	return build_done(a, &r, out);
}

/* The position of mapped dimension name in b, or -1. */
static int mapped_index(const struct blocks *b, const char *name)
{
	for (int k = 0; k < b->nmapped; k++)
		if (strcmp(b->t->dim_names[b->mdim[k]], name) == 0)
			return k;
	return -1;
}

/* A subspace's dense value: a number when the subspace has no dimension. */
static struct rank_val sub_val(const struct blocks *b, size_t blk)
{
	struct rank_val v = { .cell = BASE_DT_DOUBLE };
	if (b->sub.rank == 0)
		v.num = b->cells[blk];
	else
		v.cells = b->cells + blk * b->block;
	return v;
}

/* Two operands as blocks, and a builder for the result with room for
 * x.n * y.n blocks (product) or x.n + y.n. */
static int begin2(struct base_arena *a, const struct rank_type *ta, const struct rank_val *va,
                  const struct rank_type *tb, const struct rank_val *vb,
                  const struct rank_type *tr, int product, struct blocks *x, struct blocks *y,
                  struct builder *r)
{
	int rc;
	if ((rc = view(a, ta, va, x)) || (rc = view(a, tb, vb, y)))
		return rc;
	return build_init(a, tr, product ? x->n * y->n : x->n + y->n, 0, r);
}

/* How a pair of matching blocks combines: the result's subspace from the
 * two subspaces (a join through fn, or a concat along dim). */
struct combine {
	double (*fn)(void *ud, double x, double y);
	void *ud;
	int dim;   /* concat: the dimension's index in the result's subspace; join: -1 */
};

static int combine_sub(struct base_arena *a, const struct combine *cb, const struct blocks *x,
                       size_t i, const struct blocks *y, size_t j, const struct rank_type *sub,
                       double **d)
{
	if (cb->dim >= 0)
		return rank_tensor_concat(a, &x->sub, sub_val(x, i), &y->sub, sub_val(y, j), sub,
		                          cb->dim, d);
	return rank_tensor_join(a, &x->sub, sub_val(x, i), &y->sub, sub_val(y, j), sub, cb->fn,
	                        cb->ud, d);
}

/* The hash of block blk's labels at positions at[0..n). */
static uint64_t labels_hash(const struct blocks *b, size_t blk, const int *at, int n)
{
	uint64_t h = 0;
	for (int c = 0; c < n; c++) {
		const char *s = label_of(b, blk, at[c]);
		h = base_hash64(s, strlen(s), h);
	}
	return h;
}

/* y's blocks by the hash of their labels at[0..n): chains in ascending
 * block order from head[hash & mask], linked through next (SIZE_MAX ends
 * them). */
struct label_index {
	size_t mask, *head, *next;
};

static int index_labels(struct base_arena *a, const struct blocks *y, const int *at, int n,
                        struct label_index *ix)
{
	size_t nb = 1;
	while (nb < 2 * y->n)
		nb <<= 1;
	ix->mask = nb - 1;
	ix->head = base_arena_alloc(a, nb * sizeof *ix->head, 8);
	ix->next = base_arena_alloc(a, y->n * sizeof *ix->next, 8);
	if (!ix->head || !ix->next)
		return STRATA_NOMEM;
	memset(ix->head, 0xff, nb * sizeof *ix->head);
	for (size_t j = y->n; j-- > 0;) {
		size_t *h = &ix->head[labels_hash(y, j, at, n) & ix->mask];
		ix->next[j] = *h;
		*h = j;
	}
	return 0;
}

/* Past this many blocks on each side a join finds its pairs through a
 * label_index rather than by comparing every pair. */
#define JOIN_INDEX_MIN 8

/* Every pair of blocks of va and vb that agree on the mapped dimensions
 * they share gives a block of the result: their labels, their subspaces
 * combined by cb. */
static int pairs(struct base_arena *a, const struct rank_type *ta, struct rank_val va,
                 const struct rank_type *tb, struct rank_val vb, const struct rank_type *tr,
                 const struct combine *cb, struct rank_val *out)
{
	struct blocks x, y;
	struct builder r;
	int rc = begin2(a, ta, &va, tb, &vb, tr, 1, &x, &y, &r);
	if (rc)
		return rc;
	/* where each result label comes from, and the labels both sides share */
	int from_x[RANK_MAX_RANK], from_y[RANK_MAX_RANK], common_x[RANK_MAX_RANK],
	    common_y[RANK_MAX_RANK], ncommon = 0;
	for (int k = 0; k < r.b.nmapped; k++) {
		const char *name = tr->dim_names[r.b.mdim[k]];
		from_x[k] = mapped_index(&x, name);
		from_y[k] = mapped_index(&y, name);
		if (from_x[k] >= 0 && from_y[k] >= 0) {
			common_x[ncommon] = from_x[k];
			common_y[ncommon++] = from_y[k];
		}
	}
	struct label_index ix = { 0 };
	int indexed = ncommon > 0 && x.n >= JOIN_INDEX_MIN && y.n >= JOIN_INDEX_MIN;
	if (indexed && index_labels(a, &y, common_y, ncommon, &ix))
		return STRATA_NOMEM;
	for (size_t i = 0; i < x.n; i++)
		for (size_t j = indexed ? ix.head[labels_hash(&x, i, common_x, ncommon) & ix.mask] : 0;
		     j < y.n; j = indexed ? ix.next[j] : j + 1) {
			int match = 1;
			for (int c = 0; c < ncommon && match; c++)
				match = strcmp(label_of(&x, i, common_x[c]), label_of(&y, j, common_y[c])) == 0;
			if (!match)
				continue;
			size_t o = r.b.n++;
			for (int k = 0; k < r.b.nmapped; k++)
				r.labels[o * (size_t)r.b.nmapped + (size_t)k] =
					from_x[k] >= 0 ? label_of(&x, i, from_x[k]) : label_of(&y, j, from_y[k]);
			double *d;
			if (combine_sub(a, cb, &x, i, &y, j, &r.b.sub, &d))
				return STRATA_NOMEM;
			memcpy(r.cells + o * r.b.block, d, r.b.block * sizeof *d);
		}
	return build_done(a, &r, out);
}

int rank_sparse_join(struct base_arena *a, const struct rank_type *ta, struct rank_val va,
                     const struct rank_type *tb, struct rank_val vb, const struct rank_type *tr,
                     double (*fn)(void *ud, double x, double y), void *ud, struct rank_val *out)
{
	struct combine cb = { fn, ud, -1 };
	return pairs(a, ta, va, tb, vb, tr, &cb, out);
}

int rank_sparse_concat(struct base_arena *a, const struct rank_type *ta, struct rank_val va,
                       const struct rank_type *tb, struct rank_val vb, const struct rank_type *tr,
                       int dim, struct rank_val *out)
{
	/* dim of tr (indexed) as an index among tr's indexed dimensions */
	struct combine cb = { NULL, NULL, 0 };
	for (int i = 0; i < dim; i++)
		cb.dim += tr->dims[i] != RANK_DIM_MAPPED;
	return pairs(a, ta, va, tb, vb, tr, &cb, out);
}

/* The block of r with the labels of input block blk (kept dims), added
 * when new. */
static size_t find_block(struct builder *r, const struct blocks *in, size_t blk, const int *from,
                         double init)
{
	size_t m = (size_t)r->b.nmapped;
	for (size_t o = 0; o < r->b.n; o++) {
		int same = 1;
		for (size_t k = 0; k < m && same; k++)
			same = strcmp(r->labels[o * m + k], label_of(in, blk, from[k])) == 0;
		if (same)
			return o;
	}
	size_t o = r->b.n++;
	for (size_t k = 0; k < m; k++)
		r->labels[o * m + k] = label_of(in, blk, from[k]);
	for (size_t j = 0; j < r->b.block; j++) {
		r->cells[o * r->b.block + j] = init;
		r->count[o * r->b.block + j] = 0;
	}
	return o;
}

int rank_sparse_reduce(struct base_arena *a, const struct rank_type *ti, struct rank_val v,
                       const struct rank_type *tr, int agg, struct rank_val *out)
{
	struct blocks in;
	struct builder r;
	int rc;
	if ((rc = view(a, ti, &v, &in)) || (rc = build_init(a, tr, in.n, 1, &r)))
		return rc;
	double init = agg == RANK_AGG_PROD ? 1.0 : agg == RANK_AGG_MAX ? -INFINITY :
	              agg == RANK_AGG_MIN ? INFINITY : 0.0;
	int from[RANK_MAX_RANK];
	for (int k = 0; k < r.b.nmapped; k++)
		from[k] = mapped_index(&in, tr->dim_names[r.b.mdim[k]]);
	/* where each subspace cell lands in the result's subspace: strides of
	 * the result's indexed dimensions along the input's */
	size_t so[RANK_MAX_RANK], own[RANK_MAX_RANK], s = 1;
	for (int i = r.b.sub.rank - 1; i >= 0; i--) {
		own[i] = s;
		s *= (size_t)r.b.sub.dims[i];
	}
	for (int k = 0; k < in.sub.rank; k++) {
		so[k] = 0;
		for (int i = 0; i < r.b.sub.rank; i++)
			if (strcmp(r.b.sub.dim_names[i], in.sub.dim_names[k]) == 0)
				so[k] = own[i];
	}
	if (r.b.nmapped == 0)
		find_block(&r, &in, 0, from, init); /* a dense result always has its block */
	for (size_t i = 0; i < in.n; i++) {
		size_t o = find_block(&r, &in, i, from, init) * r.b.block;
		size_t idx[RANK_MAX_RANK] = { 0 }, off = 0;
		for (size_t j = 0; j < in.block; j++) {
			double x = in.cells[i * in.block + j], *c = &r.cells[o + off];
			switch (agg) {
			case RANK_AGG_SUM: case RANK_AGG_AVG: *c += x; break;
			case RANK_AGG_PROD: *c *= x; break;
			case RANK_AGG_MAX: if (x > *c) *c = x; break;
			case RANK_AGG_MIN: if (x < *c) *c = x; break;
			case RANK_AGG_COUNT: *c += 1.0; break;
			}
			r.count[o + off]++;
			for (int k = in.sub.rank - 1; k >= 0; k--) {
				off += so[k];
				if (++idx[k] < (size_t)in.sub.dims[k])
					break;
				off -= so[k] * idx[k];
				idx[k] = 0;
			}
		}
	}
	/* avg divides by the cells each result cell took; an aggregate of no
	 * cells is 0 */
	for (size_t j = 0; j < r.b.n * r.b.block; j++) {
		if (r.count[j] == 0)
			r.cells[j] = 0.0;
		else if (agg == RANK_AGG_AVG)
			r.cells[j] /= (double)r.count[j];
	}
	return build_done(a, &r, out);
}

/* The block of b with the labels of block blk of a (mapped dimension k of
 * the result at fa[k] in a, fb[k] in b), or b->n when there is none. */
static size_t same_labels(const struct blocks *a, size_t blk, const int *fa, const struct blocks *b,
                          const int *fb, int nmapped)
{
	size_t j;
	for (j = 0; j < b->n; j++) {
		int same = 1;
		for (int k = 0; k < nmapped && same; k++)
			same = strcmp(label_of(a, blk, fa[k]), label_of(b, j, fb[k])) == 0;
		if (same)
			break;
	}
	return j;
}

static double left(void *ud, double x, double y)
{
	(void)ud;
	(void)y;
	return x;
}

/* Append block blk of b to r, its subspace laid out as r's, under labels
 * taken through from (b's position of each of r's mapped dimensions). */
static int copy_block(struct base_arena *a, struct builder *r, const struct blocks *b, size_t blk,
                      const int *from)
{
	static const struct rank_type number = { .cell = BASE_DT_DOUBLE };
	struct rank_val zero = { .cell = BASE_DT_DOUBLE };
	size_t o = r->b.n++;
	for (int k = 0; k < r->b.nmapped; k++)
		r->labels[o * (size_t)r->b.nmapped + (size_t)k] = label_of(b, blk, from[k]);
	double *d;
	if (rank_tensor_join(a, &b->sub, sub_val(b, blk), &number, zero, &r->b.sub, left, NULL, &d))
		return STRATA_NOMEM;
	memcpy(r->cells + o * r->b.block, d, r->b.block * sizeof *d);
	return 0;
}

int rank_sparse_merge(struct base_arena *a, const struct rank_type *ta, struct rank_val va,
                      const struct rank_type *tb, struct rank_val vb, const struct rank_type *tr,
                      double (*fn)(void *ud, double x, double y), void *ud, struct rank_val *out)
{
	struct blocks x, y;
	struct builder r;
	int rc = begin2(a, ta, &va, tb, &vb, tr, 0, &x, &y, &r);
	if (rc)
		return rc;
	int from_x[RANK_MAX_RANK], from_y[RANK_MAX_RANK];
	for (int k = 0; k < r.b.nmapped; k++) {
		from_x[k] = mapped_index(&x, tr->dim_names[r.b.mdim[k]]);
		from_y[k] = mapped_index(&y, tr->dim_names[r.b.mdim[k]]);
	}
	/* x's blocks, each merged with y's block of the same labels */
	for (size_t i = 0; i < x.n; i++) {
		size_t j = same_labels(&x, i, from_x, &y, from_y, r.b.nmapped);
		if (j == y.n) {
			if (copy_block(a, &r, &x, i, from_x))
				return STRATA_NOMEM;
			continue;
		}
		size_t o = r.b.n++;
		for (int k = 0; k < r.b.nmapped; k++)
			r.labels[o * (size_t)r.b.nmapped + (size_t)k] = label_of(&x, i, from_x[k]);
		double *d;
		if (rank_tensor_join(a, &x.sub, sub_val(&x, i), &y.sub, sub_val(&y, j), &r.b.sub, fn,
		                     ud, &d))
			return STRATA_NOMEM;
		memcpy(r.cells + o * r.b.block, d, r.b.block * sizeof *d);
	}
	/* then y's blocks that x lacks */
	for (size_t j = 0; j < y.n; j++)
		if (same_labels(&y, j, from_y, &x, from_x, r.b.nmapped) == x.n &&
		    copy_block(a, &r, &y, j, from_y))
			return STRATA_NOMEM;
	return build_done(a, &r, out);
}

int rank_sparse_peek(struct base_arena *a, const struct rank_type *ti, struct rank_val v,
                     const struct rank_type *tr, const struct rank_peek *pk,
                     const char *const *label, const int64_t *index, struct rank_val *out)
{
	struct blocks in;
	struct builder r;
	int rc;
	if ((rc = view(a, ti, &v, &in)) || (rc = build_init(a, tr, in.n, 0, &r)))
		return rc;
	/* per mapped dimension of the input: the label it must have, or NULL
	 * (kept); per indexed one: its fixed index, or -1 (kept) */
	const char *want[RANK_MAX_RANK] = { 0 };
	int64_t fixed[RANK_MAX_RANK];
	int from[RANK_MAX_RANK], out_of_range = 0;
	for (int i = 0; i < in.sub.rank; i++)
		fixed[i] = -1;
	for (int e = 0; e < pk->n; e++) {
		const char *name = ti->dim_names[pk->dim[e]];
		int k = mapped_index(&in, name);
		if (k >= 0) {
			want[k] = label[e];
			continue;
		}
		for (int i = 0; i < in.sub.rank; i++)
			if (strcmp(in.sub.dim_names[i], name) == 0) {
				fixed[i] = index[e];
				out_of_range |= index[e] < 0 || index[e] >= in.sub.dims[i];
			}
	}
	for (int k = 0; k < r.b.nmapped; k++)
		from[k] = mapped_index(&in, tr->dim_names[r.b.mdim[k]]);
	/* strides of the input's subspace, and where each result subspace
	 * dimension sits in it */
	size_t str[RANK_MAX_RANK], s = 1, base = 0;
	int at[RANK_MAX_RANK];
	for (int i = in.sub.rank - 1; i >= 0; i--) {
		str[i] = s;
		s *= (size_t)in.sub.dims[i];
	}
	for (int i = 0; i < in.sub.rank; i++)
		if (fixed[i] >= 0 && !out_of_range)
			base += (size_t)fixed[i] * str[i];
	for (int j = 0; j < r.b.sub.rank; j++)
		for (int i = 0; i < in.sub.rank; i++)
			if (strcmp(in.sub.dim_names[i], r.b.sub.dim_names[j]) == 0)
				at[j] = i;
	for (size_t b = 0; b < in.n && !out_of_range; b++) {
		int match = 1;
		for (int k = 0; k < in.nmapped && match; k++)
			match = !want[k] || strcmp(want[k], label_of(&in, b, k)) == 0;
		if (!match)
			continue;
		size_t o = r.b.n++;
		for (int k = 0; k < r.b.nmapped; k++)
			r.labels[o * (size_t)r.b.nmapped + (size_t)k] = label_of(&in, b, from[k]);
		size_t idx[RANK_MAX_RANK] = { 0 };
		for (size_t j = 0; j < r.b.block; j++) {
			size_t off = base;
			for (int d = 0; d < r.b.sub.rank; d++)
				off += idx[d] * str[at[d]];
			r.cells[o * r.b.block + j] = in.cells[b * in.block + off];
			for (int d = r.b.sub.rank - 1; d >= 0; d--) {
				if (++idx[d] < (size_t)r.b.sub.dims[d])
					break;
				idx[d] = 0;
			}
		}
	}
	return build_done(a, &r, out);
}

int rank_sparse_unpack_bits(struct base_arena *a, const struct rank_type *ti, struct rank_val v,
                            const struct rank_type *tr, int dim, int little,
                            struct rank_val *out)
{
	struct blocks in;
	struct builder r;
	int rc;
	if ((rc = view(a, ti, &v, &in)) || (rc = build_init(a, tr, in.n, 0, &r)))
		return rc;
	/* a subspace is [outer][size of dim][inner] cells, its result
	 * [outer][8 * size][inner] */
	size_t size = (size_t)ti->dims[dim], inner = 1;
	for (int i = dim + 1; i < ti->rank; i++)
		if (ti->dims[i] != RANK_DIM_MAPPED)
			inner *= (size_t)ti->dims[i];
	size_t outer = in.block / (size * inner);
	for (size_t blk = 0; blk < in.n; blk++) {
		for (int k = 0; k < in.nmapped; k++)
			r.labels[blk * (size_t)in.nmapped + (size_t)k] = label_of(&in, blk, k);
		const double *src = in.cells + blk * in.block;
		double *dst = r.cells + blk * r.b.block;
		for (size_t o = 0; o < outer; o++)
			for (size_t j = 0; j < 8 * size; j++)
				for (size_t i = 0; i < inner; i++) {
					unsigned byte = (unsigned)(int)src[(o * size + j / 8) * inner + i] & 0xffu;
					unsigned bit = little ? j % 8 : 7 - j % 8;
					dst[(o * 8 * size + j) * inner + i] = (double)((byte >> bit) & 1u);
				}
	}
	r.b.n = in.n;
	return build_done(a, &r, out);
}

/* Whether x ranks above y in top's order (NaN below every number). */
static int above(double x, double y)
{
	return !isnan(x) && (isnan(y) || x > y);
}

int rank_sparse_top(struct base_arena *a, const struct rank_type *t, struct rank_val v, double n,
                    struct rank_val *out)
{
	struct blocks in;
	struct builder r;
	int rc;
	if ((rc = view(a, t, &v, &in)))
		return rc;
	BASE_DEBUG_ASSERT(in.block == 1);
	size_t keep = n >= 1 ? (n < (double)in.n ? (size_t)n : in.n) : 0;
	if ((rc = build_init(a, t, keep, 0, &r)))
		return rc;
	/* a cell is kept when fewer than keep cells rank above it (the
	 * earlier of equal ones above): quadratic, over a document's few */
	for (size_t i = 0; i < in.n && r.b.n < keep; i++) {
		size_t higher = 0;
		for (size_t j = 0; j < in.n && higher < keep; j++)
			higher += above(in.cells[j], in.cells[i]) ||
			          (j < i && !above(in.cells[i], in.cells[j]));
		if (higher >= keep)
			continue;
		for (int k = 0; k < in.nmapped; k++)
			r.labels[r.b.n * (size_t)in.nmapped + (size_t)k] = label_of(&in, i, k);
		r.cells[r.b.n++] = in.cells[i];
	}
	return build_done(a, &r, out);
}
