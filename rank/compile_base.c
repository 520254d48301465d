/*
 * compile_base.c: what every part of the expression compiler builds on:
 * errors at a node's position, the profile's table of types, emission of
 * instructions, the types of joins, maps and lambdas.  compile.c and
 * compile_tensor.c use it; it reaches back into them only through the
 * state's compile function (struct cc), so the three stay one way.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "rank_compile.h"

static int vpos_err(struct strata_error *err, const struct rank_pos *pos, int code,
                    const char *fmt, va_list ap)
{
	char msg[STRATA_ERRMSG_MAX];
	vsnprintf(msg, sizeof msg, fmt, ap);
	return base_err(err, code, "%s:%d:%d: %s", pos->file ? pos->file : "?", pos->line, pos->col,
	                msg);
}

/* An error at a's position: "file:line:col: message". */
int rank_cc_at(struct cc *c, const struct rank_ast *a, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = vpos_err(c->err, &a->pos, code, fmt, ap);
	va_end(ap);
	return rc;
}

int rank_pos_err(struct strata_error *err, const struct rank_pos *pos, int code,
                 const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = vpos_err(err, pos, code, fmt, ap);
	va_end(ap);
	return rc;
}

char *rank_cc_pool_str(struct cc *c, const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = base_arena_alloc(&c->p->pool, n, 1);
	if (d)
		memcpy(d, s, n);
	return d;
}

/* Add a type to the profile's table; returns its index or -1 (no memory). */
int rank_cc_add_type(struct rank_profile *p, const struct rank_type *t)
{
	for (int i = 0; i < p->ntypes; i++)
		if (p->types[i].cell == t->cell && rank_type_same_dims(&p->types[i], t))
			return i;
	size_t cap = (size_t)p->captypes;
	if (base_grow((void **)&p->types, &cap, (size_t)p->ntypes + 1, sizeof *p->types, 1 << 20))
		return -1;
	p->captypes = (int)cap;
	p->types[p->ntypes] = *t;
	return p->ntypes++;
}

int rank_cc_nomem(struct cc *c)
{
	if (c->too_long)
		return base_err(c->err, STRATA_LIMIT, "profile '%s': %s is longer than %d instructions",
		                c->p->decl->name, c->prog->name, MAX_CODE);
	return base_nomem(c->err, "compiling profile '%s'", c->p->decl->name);
}

/* Emit one instruction; returns its index or -1 (no memory). */
int rank_cc_emit(struct cc *c, int op, int a, int b, int cc_, int d, int e, int t, double k)
{
	struct rank_prog *g = c->prog;
	size_t cap = (size_t)g->capcode;
	int rc = base_grow((void **)&g->code, &cap, (size_t)g->ncode + 1, sizeof *g->code, MAX_CODE);
	if (rc) {
		c->too_long = rc == STRATA_LIMIT;
		return -1;
	}
	g->capcode = (int)cap;
	g->code[g->ncode] = (struct rank_ins){ op, a, b, cc_, d, e, t, k };
	return g->ncode++;
}

/* The cell type of a tensor made of x's and y's cells (join, merge,
 * concat), as Vespa types it: a number takes the tensor's cell type, two
 * tensors keep a cell type they share, else double. */
int rank_cc_join_cell(const struct rank_type *x, const struct rank_type *y)
{
	if (x->rank == 0)
		return y->rank == 0 ? BASE_DT_DOUBLE : y->cell;
	if (y->rank == 0 || x->cell == y->cell)
		return x->cell;
	return BASE_DT_DOUBLE;
}

/* Type of join(x, y): the union of their dimensions, sorted by name (as Vespa
 * orders them); same-named dimensions must agree in size. */
int rank_cc_join_type(struct cc *c, const struct rank_ast *a, int tx, int ty, int *tr)
{
	const struct rank_type *x = T(c, tx), *y = T(c, ty);
	if (x->rank == 0 && y->rank == 0) {
		*tr = 0;
		return 0;
	}
	struct rank_type r = { .cell = rank_cc_join_cell(x, y) };
	for (int pass = 0; pass < 2; pass++) {
		const struct rank_type *s = pass ? y : x;
		for (int i = 0; i < s->rank; i++) {
			int j;
			for (j = 0; j < r.rank; j++)
				if (strcmp(r.dim_names[j], s->dim_names[i]) == 0)
					break;
			if (j < r.rank) {
				if ((r.dims[j] == RANK_DIM_MAPPED) != (s->dims[i] == RANK_DIM_MAPPED)) {
					char b1[256], b2[256];
					return rank_cc_at(c, a, STRATA_TYPE,
					                  "dimension '%s' is mapped on one side, indexed on "
					                  "the other: %s and %s", s->dim_names[i],
					                  rank_cc_type_str(x, b1, sizeof b1),
					                  rank_cc_type_str(y, b2, sizeof b2));
				}
				if (r.dims[j] != s->dims[i]) {
					char b1[256], b2[256];
					return rank_cc_at(c, a, STRATA_TYPE,
					                  "dimension '%s' differs in size: %s and %s",
					                  s->dim_names[i], rank_cc_type_str(x, b1, sizeof b1),
					                  rank_cc_type_str(y, b2, sizeof b2));
				}
				continue;
			}
			if (r.rank == RANK_MAX_RANK)
				return rank_cc_at(c, a, STRATA_LIMIT, "more than %d dimensions",
				                  RANK_MAX_RANK);
			/* insertion by name */
			int k = r.rank;
			while (k > 0 && strcmp(r.dim_names[k - 1], s->dim_names[i]) > 0) {
				r.dim_names[k] = r.dim_names[k - 1];
				r.dims[k] = r.dims[k - 1];
				k--;
			}
			r.dim_names[k] = s->dim_names[i];
			r.dims[k] = s->dims[i];
			r.rank++;
		}
	}
	if ((*tr = rank_cc_add_type(c->p, &r)) < 0)
		return rank_cc_nomem(c);
	return 0;
}

/* t for a message: "double" for any number. */
const char *rank_cc_type_str(const struct rank_type *t, char *buf, size_t n)
{
	if (t->rank == 0) {
		snprintf(buf, n, "double");
		return buf;
	}
	return rank_type_str(t, buf, n);
}

/* Emit fn1 applied to the value on top of the stack. */
int rank_cc_emit_un(struct cc *c, int fn, int t, int *tr)
{
	if (T(c, t)->rank == 0) {
		EMIT(c, RANK_OP_UN, fn, 0, 0, 0, 0, 0, 0);
		*tr = 0;
		return 0;
	}
	*tr = t; /* a map keeps the type (its cells are computed as doubles) */
	EMIT(c, mapped(c, t) ? RANK_OP_SMAP : RANK_OP_MAP, -1, 0, fn, t, 0, *tr, 0);
	return 0;
}

int rank_cc_new_local(struct cc *c)
{
	return c->prog->nlocals++;
}

int rank_cc_name_arg(struct cc *c, const struct rank_ast *a, const char *what)
{
	if (a->kind != RA_NAME && a->kind != RA_STR)
		return rank_cc_at(c, a, STRATA_TYPE, "expected %s", what);
	return 0;
}

int rank_cc_lambda(struct cc *c, const struct rank_ast *lam, int nparams, int *lam_pc,
                   int *base)
{
	if (lam->kind != RA_LAMBDA || lam->nparams != nparams)
		return rank_cc_at(c, lam, STRATA_TYPE, "expected a lambda f(%s)(...)",
		                  nparams == 1 ? "x" : "x,y");
	int locals[2], types[2] = { 0, 0 };
	*base = c->prog->nlocals;
	for (int i = 0; i < nparams; i++)
		locals[i] = rank_cc_new_local(c);
	struct env e = { NULL, NULL, 1, nparams, lam->params, locals, types, NULL };
	int jump = rank_cc_emit(c, RANK_OP_JUMP, 0, 0, 0, 0, 0, -1, 0);
	if (jump < 0)
		return rank_cc_nomem(c);
	*lam_pc = c->prog->ncode;
	int t, rc = c->compile(c, &e, lam->args[0], &t);
	if (rc)
		return rc;
	if (T(c, t)->rank != 0)
		return rank_cc_at(c, lam->args[0], STRATA_TYPE, "a lambda must produce a number");
	EMIT(c, RANK_OP_RET, 0, 0, 0, 0, 0, -1, 0);
	c->prog->code[jump].a = c->prog->ncode;
	return 0;
}

/* Collect dimension-name arguments args[from..nargs). */
int rank_cc_dim_args(struct cc *c, const struct rank_ast *a, int from, char **names, int *n)
{
	*n = 0;
	for (int i = from; i < a->nargs; i++) {
		if (rank_cc_name_arg(c, a->args[i], "a dimension name"))
			return STRATA_TYPE;
		if (*n == RANK_MAX_RANK)
			return rank_cc_at(c, a->args[i], STRATA_TYPE, "too many dimensions");
		names[(*n)++] = a->args[i]->name;
	}
	return 0;
}
