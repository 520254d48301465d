/*
 * literal.c: the values of tensor literals in expressions
 * (tensor<float>(x[3]):[1,2,3], tensor(k{},x[2]):{{k:a,x:0}:1, ...},
 * tensor(k{}):{a:1, b:2}, tensor(k{},x[2]):{a:[1,2]}), made once when a
 * profile compiles and kept in its pool; the VM's LIT pushes them.
 *
 * The parser (expr.c) hands over the type's text and the cells: values in
 * args, and for every form but the dense list, each cell's address as
 * "dim:label" params (nparams = nargs * rank).  Here the addresses are
 * checked against the type (every dimension once, indices in range, no
 * cell twice); cells left out are 0.  Cells that are constant expressions
 * of numbers are filled in here; the others are computed per evaluation
 * (LIT fills them into a copy), the literal saying where they go.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rank_eval.h"

int rank_literal_type(struct rank_profile *p, const struct rank_ast *a, struct rank_type *ty,
                      struct strata_error *err)
{
	struct rank_type t;
	int rc = rank_type_parse_mapped(a->name, &t);
	if (rc == STRATA_NOMEM)
		return base_nomem(err, "tensor type %s", a->name);
	if (rc)
		return rank_pos_err(err, &a->pos, STRATA_PARSE, "bad tensor type %s", a->name);
	*ty = t;
	for (int i = 0; i < t.rank; i++)
		if (!(ty->dim_names[i] = base_arena_strdup(&p->pool, t.dim_names[i]))) {
			rank_type_clear(&t);
			return base_nomem(err, "tensor type %s", a->name);
		}
	rank_type_clear(&t);
	return 0;
}

/* A cell's value: a constant expression of numbers (-1, 1/0 for infinity,
 * 0/0 for NaN). */
static int number(const struct rank_ast *v, double *out)
{
	double y;
	switch (v->kind) {
	case RA_NUM:
		*out = v->num;
		return 0;
	case RA_UNARY:
		if (number(v->args[0], out))
			return -1;
		*out = rank_fn1(v->op == '-' ? RANK_FN_NEG : RANK_FN_NOT, *out);
		return 0;
	case RA_BINARY:
		if (number(v->args[0], out) || number(v->args[1], &y))
			return -1;
		*out = rank_fn2(v->op, *out, y);
		return 0;
	}
	return -1;
}

/* Where the cell of address params[0..rank) goes: its mapped labels (in the
 * type's order) and its offset in the dense subspace. */
static int address(const struct rank_ast *a, const struct rank_type *ty, char *const *params,
                   const char **labels, size_t *off, struct strata_error *err)
{
	int seen[RANK_MAX_RANK] = { 0 };
	int64_t idx[RANK_MAX_RANK] = { 0 };
	for (int k = 0; k < ty->rank; k++) {
		const char *colon = strchr(params[k], ':');
		size_t n = colon ? (size_t)(colon - params[k]) : strlen(params[k]);
		int d = -1;
		for (int i = 0; i < ty->rank; i++)
			if (strlen(ty->dim_names[i]) == n && memcmp(ty->dim_names[i], params[k], n) == 0)
				d = i;
		if (d < 0 || !colon)
			return rank_pos_err(err, &a->pos, STRATA_TYPE, "%s has no dimension '%.*s'",
			                    a->name, (int)n, params[k]);
		if (seen[d]++)
			return rank_pos_err(err, &a->pos, STRATA_TYPE, "a cell address names '%s' twice",
			                    ty->dim_names[d]);
		const char *label = colon + 1;
		if (ty->dims[d] == RANK_DIM_MAPPED) {
			labels[d] = label;
			continue;
		}
		char *end;
		long long i = strtoll(label, &end, 10);
		if (*label == 0 || *end || i < 0 || i >= ty->dims[d])
			return rank_pos_err(err, &a->pos, STRATA_TYPE,
			                    "index '%s' of dimension '%s' is outside [0, %lld)", label,
			                    ty->dim_names[d], (long long)ty->dims[d]);
		idx[d] = i;
	}
	*off = 0;
	for (int i = 0; i < ty->rank; i++)
		if (ty->dims[i] != RANK_DIM_MAPPED)
			*off = *off * (size_t)ty->dims[i] + (size_t)idx[i];
	return 0;
}

int rank_literal_const(const struct rank_ast *v)
{
	double x;
	return number(v, &x) == 0;
}

int rank_literal_make(struct rank_profile *p, const struct rank_ast *a, struct rank_type *ty,
                      struct rank_lit *lit, struct strata_error *err)
{
	int rc = rank_literal_type(p, a, ty, err);
	if (rc)
		return rc;
	int nm = rank_type_mapped(ty);
	size_t block = rank_type_cells(ty), n = (size_t)a->nargs;
	int ndyn = 0;
	for (int k = 0; k < a->nargs; k++)
		ndyn += !rank_literal_const(a->args[k]);
	if (a->nparams == 0 && nm == 0 && n != block)
		return rank_pos_err(err, &a->pos, STRATA_TYPE,
		                    "%s has %zu cells, the literal gives %zu", a->name, block, n);
	if (a->nparams == 0 && nm > 0 && n > 0)
		return rank_pos_err(err, &a->pos, STRATA_TYPE,
		                    "%s has mapped dimensions: its cells need addresses, not a list",
		                    a->name);
	/* blocks: one per distinct mapped address (a dense type has exactly one) */
	size_t cap = nm ? (n ? n : 1) : 1, nblocks = nm ? 0 : 1;
	const char **labels = base_arena_alloc(&p->pool, cap * (size_t)(nm + 1) * sizeof *labels, 8);
	double *cells = base_arena_alloc(&p->pool, cap * block * sizeof *cells, 64);
	unsigned char *given = base_calloc(cap * block, 1);
	size_t *where = base_arena_alloc(&p->pool, ((size_t)ndyn + 1) * sizeof *where, 8);
	int dyn = 0;
	if (!labels || !cells || !given || !where) {
		base_free(given, cap * block);
		return base_nomem(err, "tensor literal %s", a->name);
	}
	memset(cells, 0, cap * block * sizeof *cells);
	for (size_t k = 0; k < n && rc == 0; k++) {
		double x = 0.0;
		int computed = number(a->args[k], &x) != 0;
		const char *lab[RANK_MAX_RANK] = { 0 };
		size_t off = k;
		if (a->nparams > 0 &&
		    (rc = address(a, ty, a->params + k * (size_t)ty->rank, lab, &off, err)))
			break;
		/* the mapped labels in the type's order, and their block */
		const char *ml[RANK_MAX_RANK];
		int j = 0;
		for (int i = 0; i < ty->rank; i++)
			if (ty->dims[i] == RANK_DIM_MAPPED)
				ml[j++] = lab[i];
		size_t b;
		for (b = 0; b < nblocks; b++) {
			int same = 1;
			for (int i = 0; i < nm && same; i++)
				same = strcmp(labels[b * (size_t)nm + (size_t)i], ml[i]) == 0;
			if (same)
				break;
		}
		if (b == nblocks) {
			for (int i = 0; i < nm && rc == 0; i++)
				if (!(labels[b * (size_t)nm + (size_t)i] = base_arena_strdup(&p->pool, ml[i])))
					rc = base_nomem(err, "tensor literal %s", a->name);
			nblocks++;
		}
		if (rc == 0 && given[b * block + off]++)
			rc = rank_pos_err(err, &a->args[k]->pos, STRATA_TYPE,
			                  "a cell of %s is given twice", a->name);
		cells[b * block + off] = x;
		if (computed)
			where[dyn++] = b * block + off;
	}
	base_free(given, cap * block);
	if (rc)
		return rc;
	struct rank_val *v = &lit->v;
	memset(lit, 0, sizeof *lit);
	lit->ncells = nblocks * block;
	lit->ndyn = ndyn;
	lit->where = where;
	if (nm > 0) {
		struct rank_sparse *s = base_arena_alloc(&p->pool, sizeof *s, 8);
		if (!s)
			return base_nomem(err, "tensor literal %s", a->name);
		s->nblocks = nblocks;
		s->labels = labels;
		s->cells = cells;
		v->cells = s;
		v->cell = BASE_DT_UNDEFINED;
	} else if (ty->rank == 0) {
		v->num = cells[0];
		v->cell = BASE_DT_DOUBLE;
	} else {
		v->cells = cells;
		v->cell = BASE_DT_DOUBLE;
	}
	return 0;
}
