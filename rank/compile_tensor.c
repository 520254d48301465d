/*
 * compile_tensor.c: the compiler's tensor constructs beyond map, join and
 * reduce: x in [..], rename, concat, merge, cell_cast, unpack_bits,
 * slices (t{x:1}, t[i]), tensor literals and generators.  Each types its operands and
 * emits instructions through the compile state of compile.c
 * (rank_compile.h); the values of literals come from literal.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rank_compile.h"

/* x in [k1, k2, ...] (the parser's "$in" call): map(x, f(v)(v == k1 || v ==
 * k2 ...)), the lambda emitted here. */
int rank_cc_in(struct cc *c, const struct env *env, const struct rank_ast *a, int *type)
{
	int t, rc = c->compile(c, env, a->args[0], &t);
	if (rc)
		return rc;
	int base = rank_cc_new_local(c);
	int jump = rank_cc_emit(c, RANK_OP_JUMP, 0, 0, 0, 0, 0, -1, 0);
	if (jump < 0)
		return rank_cc_nomem(c);
	int pc = c->prog->ncode;
	if (a->nargs == 1)
		EMIT(c, RANK_OP_NUM, 0, 0, 0, 0, 0, 0, 0.0);
	for (int i = 1; i < a->nargs; i++) {
		EMIT(c, RANK_OP_GET, base, 0, 0, 0, 0, 0, 0);
		EMIT(c, RANK_OP_NUM, 0, 0, 0, 0, 0, 0, a->args[i]->num);
		EMIT(c, RANK_OP_BIN, RB_EQ, 0, 0, 0, 0, 0, 0);
		if (i > 1)
			EMIT(c, RANK_OP_BIN, RB_OR, 0, 0, 0, 0, 0, 0);
	}
	EMIT(c, RANK_OP_RET, 0, 0, 0, 0, 0, -1, 0);
	c->prog->code[jump].a = c->prog->ncode;
	*type = t;
	EMIT(c, mapped(c, t) ? RANK_OP_SMAP : RANK_OP_MAP, pc, base, 0, T(c, t)->rank ? t : 0, 0,
	     T(c, t)->rank ? t : 0, 0);
	return 0;
}

/* The index of dimension name in t, or -1. */
static int dim_index(const struct rank_type *t, const char *name)
{
	for (int i = 0; i < t->rank; i++)
		if (strcmp(t->dim_names[i], name) == 0)
			return i;
	return -1;
}

/* 1 when t has dimension name indexed, 2 when mapped, 0 when it lacks it. */
static int dim_kind(const struct rank_type *t, const char *name)
{
	int i = dim_index(t, name);
	return i < 0 ? 0 : t->dims[i] == RANK_DIM_MAPPED ? 2 : 1;
}

/* Names of a rename: one name, or a list "(a, b)" (the parser's "()" call). */
static int name_list(struct cc *c, const struct rank_ast *a, char **names, int *n)
{
	if (a->kind == RA_CALL && strcmp(a->name, "()") == 0)
		return rank_cc_dim_args(c, a, 0, names, n);
	if (rank_cc_name_arg(c, a, "a dimension name"))
		return STRATA_TYPE;
	names[0] = a->name;
	*n = 1;
	return 0;
}

/* The type r with its dimensions sorted by name, as Vespa orders them. */
static void sort_dims(struct rank_type *r)
{
	for (int i = 1; i < r->rank; i++)
		for (int k = i; k > 0 && strcmp(r->dim_names[k - 1], r->dim_names[k]) > 0; k--) {
			char *nm = r->dim_names[k];
			int64_t d = r->dims[k];
			r->dim_names[k] = r->dim_names[k - 1];
			r->dims[k] = r->dims[k - 1];
			r->dim_names[k - 1] = nm;
			r->dims[k - 1] = d;
		}
}

/* rename(t, from, to): the cells stay where they are under the new names;
 * when the new names are out of order, a join with 0 lays the cells out in
 * name order. */
int rank_cc_rename(struct cc *c, const struct env *env, const struct rank_ast *a,
                   int *type)
{
	char *from[RANK_MAX_RANK], *to[RANK_MAX_RANK];
	int nf, nt, t, rc;
	if (a->nargs != 3)
		return rank_cc_at(c, a, STRATA_TYPE, "rename(tensor, from, to)");
	if ((rc = name_list(c, a->args[1], from, &nf)) || (rc = name_list(c, a->args[2], to, &nt)))
		return rc;
	if (nf != nt)
		return rank_cc_at(c, a, STRATA_TYPE, "rename() of %d dimension%s to %d", nf,
		                  nf == 1 ? "" : "s", nt);
	if ((rc = c->compile(c, env, a->args[0], &t)))
		return rc;
	struct rank_type r = *T(c, t);
	for (int i = 0; i < nf; i++) {
		int k = dim_index(T(c, t), from[i]);
		if (k < 0) {
			char b[256];
			return rank_cc_at(c, a->args[1], STRATA_TYPE, "%s has no dimension '%s'",
			                  rank_cc_type_str(T(c, t), b, sizeof b), from[i]);
		}
		/* the type outlives the expression: its new names go to the pool */
		if (!(r.dim_names[k] = rank_cc_pool_str(c, to[i])))
			return rank_cc_nomem(c);
	}
	for (int i = 0; i < r.rank; i++)
		for (int k = 0; k < i; k++)
			if (strcmp(r.dim_names[i], r.dim_names[k]) == 0)
				return rank_cc_at(c, a, STRATA_TYPE, "rename() makes two dimensions '%s'",
				                  r.dim_names[i]);
	int tn, ts;
	if ((tn = rank_cc_add_type(c->p, &r)) < 0)
		return rank_cc_nomem(c);
	sort_dims(&r);
	if ((ts = rank_cc_add_type(c->p, &r)) < 0)
		return rank_cc_nomem(c);
	*type = tn;
	if (ts != tn) {
		EMIT(c, RANK_OP_NUM, 0, 0, 0, 0, 0, 0, 0.0);
		EMIT(c, mapped(c, tn) ? RANK_OP_SJOIN : RANK_OP_JOIN, -1, 0, RB_ADD, tn, 0, ts, 0);
		*type = ts;
	}
	return 0;
}

/* concat(x, y, dim): x's cells then y's along dim (a side without dim has
 * size 1 there); the other dimensions must agree. */
int rank_cc_concat(struct cc *c, const struct env *env, const struct rank_ast *a,
                   int *type)
{
	int tx, ty, rc;
	if (a->nargs != 3 || rank_cc_name_arg(c, a->args[2], "a dimension name"))
		return rank_cc_at(c, a, STRATA_TYPE, "concat(a, b, dim)");
	const char *dim = a->args[2]->name;
	if ((rc = c->compile(c, env, a->args[0], &tx)) || (rc = c->compile(c, env, a->args[1], &ty)))
		return rc;
	if ((dim_kind(T(c, tx), dim) | dim_kind(T(c, ty), dim)) & 2)
		return rank_cc_at(c, a->args[2], STRATA_NOT_IMPLEMENTED,
		                  "concat() along a mapped dimension ('%s') is not supported", dim);
	struct rank_type ox = *T(c, tx), oy = *T(c, ty);
	int64_t nx = 1, ny = 1;
	int kx = dim_index(&ox, dim), ky = dim_index(&oy, dim);
	/* join the two without dim, then add dim back with the summed size */
	if (kx >= 0) {
		nx = ox.dims[kx];
		ox.dims[kx] = 1;
	}
	if (ky >= 0) {
		ny = oy.dims[ky];
		oy.dims[ky] = 1;
	}
	int ix, iy, tj;
	if ((ix = rank_cc_add_type(c->p, &ox)) < 0 || (iy = rank_cc_add_type(c->p, &oy)) < 0)
		return rank_cc_nomem(c);
	if ((rc = rank_cc_join_type(c, a, ix, iy, &tj)))
		return rc;
	struct rank_type r = *T(c, tj);
	r.cell = rank_cc_join_cell(T(c, tx), T(c, ty));
	int k = dim_index(&r, dim);
	if (k < 0) {
		if (r.rank == RANK_MAX_RANK)
			return rank_cc_at(c, a, STRATA_LIMIT, "more than %d dimensions", RANK_MAX_RANK);
		if (!(r.dim_names[r.rank] = rank_cc_pool_str(c, dim)))
			return rank_cc_nomem(c);
		r.dims[r.rank++] = nx + ny;
		sort_dims(&r);
	} else {
		r.dims[k] = nx + ny;
	}
	if ((*type = rank_cc_add_type(c->p, &r)) < 0)
		return rank_cc_nomem(c);
	EMIT(c, mapped(c, *type) ? RANK_OP_SCONCAT : RANK_OP_CONCAT, dim_index(&r, dim), 0, 0, tx,
	     ty, *type, 0);
	return 0;
}

/* Room for entry n of one of the profile's tables (literals, peeks). */
static int grow_table(struct cc *c, void **arr, int n, int *cap, size_t elem)
{
	(void)c;
	size_t k = (size_t)*cap;
	if (base_grow(arr, &k, (size_t)n + 1, elem, 1 << 20))
		return -1;
	*cap = (int)k;
	return 0;
}

/* name is bound in the innermost scope (a parameter or a generator's
 * dimension). */
static int is_bound(const struct env *env, const char *name)
{
	for (int i = 0; env && i < env->n; i++)
		if (strcmp(env->names[i], name) == 0)
			return 1;
	return 0;
}

/* The dimension of t a slice entry names: dim, or for "" the only
 * dimension, for "[" the only indexed one; -1 when there is none. */
static int slice_dim(const struct rank_type *t, const char *dim)
{
	if (dim[0] && strcmp(dim, "[") != 0)
		return dim_index(t, dim);
	if (t->rank != 1 || (dim[0] == '[' && t->dims[0] == RANK_DIM_MAPPED))
		return -1;
	return 0;
}

/* t{x:1, k:a}, t{k:(expr)}, t[i]: the address is kept in the profile's
 * table of peeks; computed labels are pushed after the tensor. */
int rank_cc_slice(struct cc *c, const struct env *env, const struct rank_ast *a,
                  int *type)
{
	int t, rc;
	if ((rc = c->compile(c, env, a->args[0], &t)))
		return rc;
	struct rank_peek *pk = base_arena_alloc(&c->p->pool, sizeof *pk, 8);
	if (!pk)
		return rank_cc_nomem(c);
	memset(pk, 0, sizeof *pk);
	struct rank_type r = *T(c, t);
	char tb[256];
	if (a->nparams > RANK_MAX_RANK)
		return rank_cc_at(c, a, STRATA_TYPE, "a slice of more than %d dimensions", RANK_MAX_RANK);
	for (int e = 0; e < a->nparams; e++) {
		const struct rank_ast *l = a->args[e + 1];
		int d = slice_dim(T(c, t), a->params[e]);
		if (d < 0)
			return rank_cc_at(c, l, STRATA_TYPE,
			                  a->params[e][0] && a->params[e][0] != '[' ?
			                  "%s has no dimension '%s'" :
			                  "%s has no single %sdimension to address",
			                  rank_cc_type_str(T(c, t), tb, sizeof tb),
			                  a->params[e][0] == '[' ? "indexed " : a->params[e]);
		for (int k = 0; k < e; k++)
			if (pk->dim[k] == d)
				return rank_cc_at(c, l, STRATA_TYPE, "the slice names '%s' twice",
				                  T(c, t)->dim_names[d]);
		pk->dim[e] = d;
		int mapped_dim = T(c, t)->dims[d] == RANK_DIM_MAPPED;
		/* a bare name bound where the slice is (a generator's dimension)
		 * is a computed index */
		struct rank_ast bound = { .kind = RA_NAME, .name = l->name, .pos = l->pos,
		                          .text = l->name };
		if (l->kind == RA_STR && !mapped_dim && is_bound(env, l->name))
			l = &bound;
		if (l->kind == RA_STR && mapped_dim) {
			pk->label[e] = l->name;
		} else if (l->kind == RA_STR || l->kind == RA_NUM) {
			char *end = NULL;
			double x = l->kind == RA_NUM ? l->num : strtod(l->name, &end);
			if ((end && (*end || end == l->name)) || !(x >= -0x1p63 && x < 0x1p63) ||
			    x != (double)(int64_t)x)
				return rank_cc_at(c, l, STRATA_TYPE, "dimension '%s' is indexed: '%s' is no index",
				                  T(c, t)->dim_names[d], l->kind == RA_STR ? l->name : l->text);
			pk->index[e] = (int64_t)x;
		} else {
			int tl;
			if ((rc = c->compile(c, env, l, &tl)))
				return rc;
			if (T(c, tl)->rank != 0)
				return rank_cc_at(c, l, STRATA_TYPE, "a slice's label must be a number");
			pk->computed[e] = 1;
		}
		r.dim_names[d] = NULL;
	}
	pk->n = a->nparams;
	int ndyn = 0;
	for (int e = 0; e < pk->n; e++)
		ndyn += pk->computed[e];
	/* the result: the dimensions not addressed, in their order */
	int k = 0;
	for (int i = 0; i < r.rank; i++)
		if (r.dim_names[i]) {
			r.dim_names[k] = r.dim_names[i];
			r.dims[k++] = r.dims[i];
		}
	r.rank = k;
	if (r.rank == 0)
		r.cell = BASE_DT_DOUBLE;
	if ((*type = rank_cc_add_type(c->p, &r)) < 0)
		return rank_cc_nomem(c);
	if (grow_table(c, (void **)&c->p->peeks, c->p->npeeks, &c->p->cappeeks,
	               sizeof *c->p->peeks))
		return rank_cc_nomem(c);
	c->p->peeks[c->p->npeeks] = pk;
	EMIT(c, RANK_OP_PEEK, c->p->npeeks++, ndyn, 0, t, 0, *type, 0);
	return 0;
}

/* A tensor literal: made once (literal.c) and kept in the profile's table
 * of literals; the cells that are not constant are computed here, in order,
 * and LIT fills them in. */
int rank_cc_literal(struct cc *c, const struct env *env, const struct rank_ast *a, int *type)
{
	struct rank_type ty;
	struct rank_lit lit;
	int rc = rank_literal_make(c->p, a, &ty, &lit, c->err);
	if (rc)
		return rc;
	if ((*type = rank_cc_add_type(c->p, &ty)) < 0)
		return rank_cc_nomem(c);
	for (int k = 0; k < a->nargs; k++) {
		int t;
		if (rank_literal_const(a->args[k]))
			continue;
		if ((rc = c->compile(c, env, a->args[k], &t)))
			return rc;
		if (T(c, t)->rank != 0)
			return rank_cc_at(c, a->args[k], STRATA_TYPE,
			                  "a tensor literal's cell must be a number");
	}
	if (grow_table(c, (void **)&c->p->lits, c->p->nlits, &c->p->caplits, sizeof *c->p->lits))
		return rank_cc_nomem(c);
	c->p->lits[c->p->nlits] = lit;
	EMIT(c, RANK_OP_LIT, c->p->nlits++, lit.ndyn, 0, 0, 0, *type, 0);
	return 0;
}

/* tensor(x[2],y[3])(body): the body runs per cell with the cell's indices
 * bound to the dimension names, like a lambda's parameters; it may also
 * read features (query(q){x:x}) and call functions. */
int rank_cc_generator(struct cc *c, const struct env *env, const struct rank_ast *a, int *type)
{
	struct rank_type ty;
	int rc = rank_literal_type(c->p, a, &ty, c->err);
	if (rc)
		return rc;
	if (rank_type_mapped(&ty))
		return rank_cc_at(c, a, STRATA_NOT_IMPLEMENTED,
		                  "tensor generators with mapped dimensions are not supported");
	if ((*type = rank_cc_add_type(c->p, &ty)) < 0)
		return rank_cc_nomem(c);
	int locals[RANK_MAX_RANK], types[RANK_MAX_RANK] = { 0 };
	int base = c->prog->nlocals;
	for (int i = 0; i < ty.rank; i++)
		locals[i] = rank_cc_new_local(c);
	/* unlike a lambda's, the body may read features and functions too */
	struct env e = { env, NULL, 0, a->nparams, a->params, locals, types, NULL };
	int jump = rank_cc_emit(c, RANK_OP_JUMP, 0, 0, 0, 0, 0, -1, 0);
	if (jump < 0)
		return rank_cc_nomem(c);
	int pc = c->prog->ncode, t;
	if ((rc = c->compile(c, &e, a->args[0], &t)))
		return rc;
	if (T(c, t)->rank != 0)
		return rank_cc_at(c, a->args[0], STRATA_TYPE, "a tensor generator must produce a number");
	EMIT(c, RANK_OP_RET, 0, 0, 0, 0, 0, -1, 0);
	c->prog->code[jump].a = c->prog->ncode;
	EMIT(c, RANK_OP_GEN, pc, base, 0, 0, 0, *type, 0);
	return 0;
}

/* merge(a, b, f(x,y)(...)): dense operands have every cell on both
 * sides, a join; mapped ones take SMERGE. */
int rank_cc_merge(struct cc *c, const struct env *env, const struct rank_ast *a, int *type)
{
	int rc, t, t2;
	if (a->nargs != 3)
		return rank_cc_at(c, a, STRATA_TYPE, "merge(a, b, f(x,y)(...))");
	if ((rc = c->compile(c, env, a->args[0], &t)) || (rc = c->compile(c, env, a->args[1], &t2)))
		return rc;
	int pc, base;
	if ((rc = rank_cc_lambda(c, a->args[2], 2, &pc, &base)) ||
	    (rc = rank_cc_join_type(c, a, t, t2, type)))
		return rc;
	if (T(c, *type)->rank != T(c, t)->rank || T(c, *type)->rank != T(c, t2)->rank) {
		char b1[256], b2[256];
		return rank_cc_at(c, a, STRATA_TYPE, "merge() needs the same dimensions: %s and %s",
		                  rank_cc_type_str(T(c, t), b1, sizeof b1),
		                  rank_cc_type_str(T(c, t2), b2, sizeof b2));
	}
	/* dense operands have every cell on both sides: a join */
	EMIT(c, mapped(c, *type) ? RANK_OP_SMERGE : RANK_OP_JOIN, pc, base, 0, t, t2, *type, 0);
	return 0;
}

static const struct { const char *name; int cell, fn; } casts[] = {
	{ "double", BASE_DT_DOUBLE, 0 }, { "float", BASE_DT_FLOAT, RANK_FN_TO_FLOAT },
	{ "bfloat16", BASE_DT_BFLOAT16, RANK_FN_TO_BFLOAT16 },
	{ "int8", BASE_DT_INT8, RANK_FN_TO_INT8 },
};
#define NCASTS (sizeof casts / sizeof casts[0])

/* The entry of casts[] the cell type argument a names, or NCASTS with the
 * error reported. */
static size_t cell_arg(struct cc *c, const struct rank_ast *a)
{
	size_t k;
	for (k = 0; k < NCASTS; k++)
		if (strcmp(casts[k].name, a->name) == 0)
			return k;
	rank_cc_at(c, a, STRATA_TYPE,
	           "unknown cell type '%s' (expected double, float, bfloat16 or int8)", a->name);
	return NCASTS;
}

/* cell_cast(t, cell): the values rounded to the cell type, the type
 * saying so. */
int rank_cc_cell_cast(struct cc *c, const struct env *env, const struct rank_ast *a, int *type)
{
	int rc, t;
	if (a->nargs != 2 || rank_cc_name_arg(c, a->args[1], "a cell type"))
		return rank_cc_at(c, a, STRATA_TYPE, "cell_cast(tensor, cell type)");
	size_t k = cell_arg(c, a->args[1]);
	if (k == NCASTS)
		return STRATA_TYPE;
	if ((rc = c->compile(c, env, a->args[0], &t)))
		return rc;
	if (T(c, t)->rank == 0 && casts[k].cell != BASE_DT_DOUBLE)
		return rank_cc_at(c, a, STRATA_TYPE, "a number cannot be cast to %s cells",
		                  casts[k].name);
	if (casts[k].fn && (rc = rank_cc_emit_un(c, casts[k].fn, t, &t)))
		return rc;
	struct rank_type r = *T(c, t);
	r.cell = casts[k].cell;
	if ((*type = rank_cc_add_type(c->p, &r)) < 0)
		return rank_cc_nomem(c);
	return 0;
}

/* unpack_bits(t [, cell [, endian]]): each int8 cell of t as its 8 bits,
 * 0 or 1, along the last indexed dimension in name order (the innermost
 * in Vespa's cell order), which grows 8 times; the most significant bit
 * first (endian big, the default) or the least (little).  The result has
 * the cell type cell (float by default). */
int rank_cc_unpack_bits(struct cc *c, const struct env *env, const struct rank_ast *a,
                        int *type)
{
	int rc, t;
	size_t k = 1; /* float */
	int little = 0;
	if (a->nargs < 1 || a->nargs > 3 ||
	    (a->nargs > 1 && rank_cc_name_arg(c, a->args[1], "a cell type")) ||
	    (a->nargs > 2 && rank_cc_name_arg(c, a->args[2], "big or little")))
		return rank_cc_at(c, a, STRATA_TYPE, "unpack_bits(tensor [, cell type [, endian]])");
	if (a->nargs > 1 && (k = cell_arg(c, a->args[1])) == NCASTS)
		return STRATA_TYPE;
	if (a->nargs > 2) {
		little = strcmp(a->args[2]->name, "little") == 0;
		if (!little && strcmp(a->args[2]->name, "big") != 0)
			return rank_cc_at(c, a->args[2], STRATA_TYPE,
			                  "unpack_bits: unknown endian '%s' (expected big or little)",
			                  a->args[2]->name);
	}
	if ((rc = c->compile(c, env, a->args[0], &t)))
		return rc;
	struct rank_type r = *T(c, t);
	int dim = -1;
	for (int i = 0; i < r.rank; i++)
		if (r.dims[i] != RANK_DIM_MAPPED &&
		    (dim < 0 || strcmp(r.dim_names[i], r.dim_names[dim]) > 0))
			dim = i;
	char b1[256];
	if (r.cell != BASE_DT_INT8 || dim < 0)
		return rank_cc_at(c, a, STRATA_TYPE,
		                  "unpack_bits needs int8 cells and an indexed dimension, not %s",
		                  rank_cc_type_str(&r, b1, sizeof b1));
	if (r.dims[dim] > INT64_MAX / 8 || rank_type_cells(&r) > ((size_t)1 << 31) / 8)
		return rank_cc_at(c, a, STRATA_TYPE, "unpack_bits: %s is too large to unpack",
		                  rank_cc_type_str(&r, b1, sizeof b1));
	r.dims[dim] *= 8;
	r.cell = casts[k].cell;
	if ((*type = rank_cc_add_type(c->p, &r)) < 0)
		return rank_cc_nomem(c);
	EMIT(c, RANK_OP_UNPACK, little, dim, 0, t, 0, *type, 0);
	return 0;
}

/* top(n, t): the n cells of t of the largest values, t's type; n a
 * number, t a tensor whose dimensions are all mapped (its cells are
 * subspaces that can be left out). */
int rank_cc_top(struct cc *c, const struct env *env, const struct rank_ast *a, int *type)
{
	int rc, tn, t;
	char b1[256];
	if (a->nargs != 2)
		return rank_cc_at(c, a, STRATA_TYPE, "top(n, tensor)");
	if ((rc = c->compile(c, env, a->args[0], &tn)))
		return rc;
	if (T(c, tn)->rank != 0)
		return rank_cc_at(c, a->args[0], STRATA_TYPE, "top: n must be a number, not %s",
		                  rank_cc_type_str(T(c, tn), b1, sizeof b1));
	if ((rc = c->compile(c, env, a->args[1], &t)))
		return rc;
	const struct rank_type *r = T(c, t);
	int dense = r->rank == 0;
	for (int i = 0; i < r->rank; i++)
		dense |= r->dims[i] != RANK_DIM_MAPPED;
	if (dense)
		return rank_cc_at(c, a->args[1], STRATA_NOT_IMPLEMENTED,
		                  "top of %s is not supported (only of a tensor whose dimensions "
		                  "are all mapped)", rank_cc_type_str(r, b1, sizeof b1));
	*type = t;
	EMIT(c, RANK_OP_TOP, 0, 0, 0, t, 0, t, 0);
	return 0;
}
