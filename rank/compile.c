/*
 * compile.c: rank-profile expressions -> flat programs.
 *
 * Sits between the parser (struct rank_sd, flattened profiles) and the VM.
 * Every expression is typed while it is emitted: a number is rank 0, a tensor
 * is dense with named dimensions (struct rank_type).  Features are resolved
 * against the schema (attribute), the profile's inputs (query), constants,
 * onnx-model blocks and user functions; user functions are inlined, their
 * arguments evaluated once into locals.  A program is a stack machine: each
 * instruction pops its operands and pushes at most one value, jumps only go
 * forward, so a program never needs more stack slots than it has
 * instructions (vm.c relies on that).  Lambdas of map and join are emitted in
 * the same instruction array, jumped over, and run per cell by the VM.
 * Models arrive loaded, in the table the application hands over (struct
 * rank_models): the compiler reads their inputs and outputs, loads nothing.
 *
 * Invariants: every type index in an instruction is valid in the profile's
 * type table; type 0 is the number type; dimension names are borrowed from
 * the schema (which the application keeps) or from static strings.
 */
#include <stdio.h>
#include <string.h>

#include "../runtime/runtime.h"
#include "rank_eval.h"

/* Dimension names of model outputs (Vespa names them d0, d1, ...). */
static const char *const dnames[RANK_MAX_RANK] = { "d0", "d1", "d2", "d3", "d4", "d5", "d6", "d7" };

/* ---- compile state ------------------------------------------------------- */

/* Names bound while compiling: function parameters and lambda parameters. */
struct env {
	const struct env *up;
	const struct rank_function_decl *fn; /* the function whose body this is, or NULL */
	int lambda;                          /* a lambda body: only its parameters are visible */
	int n;
	char *const *names;
	const int *locals;
	const int *types;
};

struct cc {
	struct rank_profile *p;
	const struct rank_models *models;
	struct rank_prog *prog;
	struct strata_error *err;
	int allow_first; /* firstPhase is valid here */
	int too_long;    /* emit failed at MAX_CODE, not for want of memory */
	int global;      /* 1: the global phase (normalizers allowed); 2: a normalizer's argument */
};

#define MAX_CODE (1 << 20) /* instructions in one program */

static int at(struct cc *c, const struct rank_ast *a, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* An error at a's position: "file:line:col: message". */
static int at(struct cc *c, const struct rank_ast *a, int code, const char *fmt, ...)
{
	char msg[STRATA_ERRMSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return base_err(c->err, code, "%s:%d:%d: %s", a->pos.file ? a->pos.file : "?",
	                a->pos.line, a->pos.col, msg);
}

static int pos_err(struct strata_error *err, const struct rank_pos *pos, int code,
                   const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int pos_err(struct strata_error *err, const struct rank_pos *pos, int code,
                   const char *fmt, ...)
{
	char msg[STRATA_ERRMSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return base_err(err, code, "%s:%d:%d: %s", pos->file ? pos->file : "?", pos->line, pos->col,
	                msg);
}

static size_t type_cells(const struct rank_type *t)
{
	size_t n = 1;
	for (int i = 0; i < t->rank; i++)
		n *= (size_t)t->dims[i];
	return n;
}

static const char *type_str(const struct rank_type *t, char *buf, size_t n)
{
	if (t->rank == 0) {
		snprintf(buf, n, "double");
		return buf;
	}
	size_t k = (size_t)snprintf(buf, n, "tensor<%s>(", base_dtype_name(t->cell));
	for (int i = 0; i < t->rank && k < n; i++)
		k += (size_t)snprintf(buf + k, n - k, "%s%s[%lld]", i ? "," : "", t->dim_names[i],
		                      (long long)t->dims[i]);
	if (k < n)
		snprintf(buf + k, n - k, ")");
	return buf;
}

static int same_type(const struct rank_type *a, const struct rank_type *b)
{
	if (a->rank != b->rank)
		return 0;
	for (int i = 0; i < a->rank; i++)
		if (a->dims[i] != b->dims[i] || strcmp(a->dim_names[i], b->dim_names[i]) != 0)
			return 0;
	return 1;
}

/* Add a type to the profile's table; returns its index or -1 (no memory). */
static int add_type(struct rank_profile *p, const struct rank_type *t)
{
	for (int i = 0; i < p->ntypes; i++)
		if (p->types[i].cell == t->cell && same_type(&p->types[i], t))
			return i;
	size_t cap = (size_t)p->captypes;
	if (base_grow((void **)&p->types, &cap, (size_t)p->ntypes + 1, sizeof *p->types, 1 << 20))
		return -1;
	p->captypes = (int)cap;
	p->types[p->ntypes] = *t;
	return p->ntypes++;
}

static int nomem(struct cc *c)
{
	if (c->too_long)
		return base_err(c->err, STRATA_LIMIT, "profile '%s': %s is longer than %d instructions",
		                c->p->decl->name, c->prog->name, MAX_CODE);
	return base_nomem(c->err, "compiling profile '%s'", c->p->decl->name);
}

static const struct rank_type *T(struct cc *c, int t)
{
	return &c->p->types[t];
}

/* Emit one instruction; returns its index or -1 (no memory). */
static int emit(struct cc *c, int op, int a, int b, int cc_, int d, int e, int t, double k)
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

#define EMIT(c, ...) do { if (emit(c, __VA_ARGS__) < 0) return nomem(c); } while (0)

static int compile(struct cc *c, const struct env *env, const struct rank_ast *a, int *type);

/* Type of join(x, y): the union of their dimensions, sorted by name (as Vespa
 * orders them); same-named dimensions must agree in size. */
static int join_type(struct cc *c, const struct rank_ast *a, int tx, int ty, int *tr)
{
	const struct rank_type *x = T(c, tx), *y = T(c, ty);
	if (x->rank == 0 && y->rank == 0) {
		*tr = 0;
		return 0;
	}
	struct rank_type r = { .cell = BASE_DT_DOUBLE };
	for (int pass = 0; pass < 2; pass++) {
		const struct rank_type *s = pass ? y : x;
		for (int i = 0; i < s->rank; i++) {
			int j;
			for (j = 0; j < r.rank; j++)
				if (strcmp(r.dim_names[j], s->dim_names[i]) == 0)
					break;
			if (j < r.rank) {
				if (r.dims[j] != s->dims[i]) {
					char b1[256], b2[256];
					return at(c, a, STRATA_TYPE,
					          "dimension '%s' differs in size: %s and %s",
					          s->dim_names[i], type_str(x, b1, sizeof b1),
					          type_str(y, b2, sizeof b2));
				}
				continue;
			}
			if (r.rank == RANK_MAX_RANK)
				return at(c, a, STRATA_LIMIT, "more than %d dimensions",
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
	if ((*tr = add_type(c->p, &r)) < 0)
		return nomem(c);
	return 0;
}

/* The type of t with its cells as doubles (a map or computed result). */
static int double_type(struct cc *c, int t, int *out)
{
	struct rank_type r = *T(c, t);
	r.cell = BASE_DT_DOUBLE;
	if ((*out = add_type(c->p, &r)) < 0)
		return nomem(c);
	return 0;
}

/* Emit REDUCE over the dims named in names[0..n) (all when n == 0). */
static int emit_reduce(struct cc *c, const struct rank_ast *a, int tin, int agg,
                       int n, char *const *names, int *tout)
{
	const struct rank_type *in = T(c, tin);
	struct rank_type r = { .cell = BASE_DT_DOUBLE };
	if (in->rank == 0 && n == 0 && agg != RANK_AGG_COUNT) {
		*tout = tin; /* reducing a number is the number */
		return 0;
	}
	for (int k = 0; k < n; k++) {
		int found = 0;
		for (int i = 0; i < in->rank; i++)
			found |= strcmp(in->dim_names[i], names[k]) == 0;
		if (!found) {
			char b[256];
			return at(c, a, STRATA_TYPE, "%s has no dimension '%s'",
			          type_str(in, b, sizeof b), names[k]);
		}
	}
	if (n > 0) {
		for (int i = 0; i < in->rank; i++) {
			int drop = 0;
			for (int k = 0; k < n; k++)
				drop |= strcmp(in->dim_names[i], names[k]) == 0;
			if (!drop) {
				r.dim_names[r.rank] = in->dim_names[i];
				r.dims[r.rank++] = in->dims[i];
			}
		}
	}
	if ((*tout = add_type(c->p, &r)) < 0)
		return nomem(c);
	EMIT(c, RANK_OP_REDUCE, agg, 0, 0, tin, 0, *tout, 0);
	return 0;
}

/* Emit the combination of the two values on top of the stack by fn2. */
static int emit_bin(struct cc *c, const struct rank_ast *a, int fn, int tx, int ty, int *tr)
{
	int rc = join_type(c, a, tx, ty, tr);
	if (rc)
		return rc;
	if (*tr == 0)
		EMIT(c, RANK_OP_BIN, fn, 0, 0, 0, 0, 0, 0);
	else
		EMIT(c, RANK_OP_JOIN, -1, 0, fn, tx, ty, *tr, 0);
	return 0;
}

/* Emit fn1 applied to the value on top of the stack. */
static int emit_un(struct cc *c, int fn, int t, int *tr)
{
	if (T(c, t)->rank == 0) {
		EMIT(c, RANK_OP_UN, fn, 0, 0, 0, 0, 0, 0);
		*tr = 0;
		return 0;
	}
	int rc = double_type(c, t, tr);
	if (rc)
		return rc;
	EMIT(c, RANK_OP_MAP, -1, 0, fn, t, 0, *tr, 0);
	return 0;
}

static int new_local(struct cc *c)
{
	return c->prog->nlocals++;
}

static int name_arg(struct cc *c, const struct rank_ast *a, const char *what)
{
	if (a->kind != RA_NAME && a->kind != RA_STR)
		return at(c, a, STRATA_TYPE, "expected %s", what);
	return 0;
}

static int find_field(const struct rank_sd *sd, const char *name)
{
	for (int i = 0; i < sd->nfields; i++)
		if (strcmp(sd->fields[i].name, name) == 0)
			return i;
	return -1;
}

/* The type of attribute field f. */
static int field_type(struct cc *c, const struct rank_field *f, int *t)
{
	if (f->type != RANK_FT_TENSOR) {
		*t = 0;
		return 0;
	}
	struct rank_type r = { .cell = f->cell, .rank = f->rank };
	for (int i = 0; i < f->rank; i++) {
		r.dims[i] = f->dims[i];
		r.dim_names[i] = (char *)f->dim_names[i];
	}
	if ((*t = add_type(c->p, &r)) < 0)
		return nomem(c);
	return 0;
}

static int compile_attribute(struct cc *c, const struct rank_ast *a, int *type)
{
	if (a->nargs != 1 || name_arg(c, a->args[0], "an attribute name"))
		return at(c, a, STRATA_TYPE, "attribute() takes one field name");
	const char *name = a->args[0]->name;
	int fi = find_field(c->p->sd, name);
	if (fi < 0 || !c->p->sd->fields[fi].attribute)
		return at(c, a->args[0], STRATA_TYPE, "unknown attribute '%s'", name);
	const struct rank_field *f = &c->p->sd->fields[fi];
	if (f->type == RANK_FT_STRING)
		return at(c, a->args[0], STRATA_TYPE, "attribute '%s' is a string, not a number",
		          name);
	if (f->type >= RANK_FT_ARRAY)
		return at(c, a->args[0], STRATA_NOT_IMPLEMENTED,
		          "attribute '%s' is a collection or struct, which rank expressions do not read",
		          name);
	int rc = field_type(c, f, type);
	if (rc)
		return rc;
	c->prog->doc_dependent = 1;
	EMIT(c, RANK_OP_ATTR, fi, 0, 0, 0, 0, *type, 0);
	return 0;
}

static int compile_query(struct cc *c, const struct rank_ast *a, int *type)
{
	if (a->nargs != 1 || name_arg(c, a->args[0], "a query input name"))
		return at(c, a, STRATA_TYPE, "query() takes one input name");
	const char *name = a->args[0]->name;
	const struct rank_profile_decl *d = c->p->decl;
	for (int i = 0; i < d->ninputs; i++) {
		if (strcmp(d->inputs[i].name, name) != 0)
			continue;
		struct rank_type r = d->inputs[i].type;
		r.cell = BASE_DT_DOUBLE; /* query values are held as doubles */
		if ((*type = add_type(c->p, &r)) < 0)
			return nomem(c);
		EMIT(c, RANK_OP_QUERY, i, 0, 0, 0, 0, *type, 0);
		return 0;
	}
	return at(c, a->args[0], STRATA_TYPE,
	          "query input '%s' is not declared in the inputs of profile '%s'", name, d->name);
}

static int compile_constant(struct cc *c, const struct rank_ast *a, int *type)
{
	if (a->nargs != 1 || name_arg(c, a->args[0], "a constant name"))
		return at(c, a, STRATA_TYPE, "constant() takes one name");
	const char *name = a->args[0]->name;
	for (int i = 0; i < c->p->nconsts; i++) {
		if (strcmp(c->p->consts[i]->name, name) != 0)
			continue;
		struct rank_type r = c->p->consts[i]->type;
		r.cell = BASE_DT_DOUBLE; /* constant cells are parsed into doubles */
		if ((*type = add_type(c->p, &r)) < 0)
			return nomem(c);
		EMIT(c, RANK_OP_CONST, i, 0, 0, 0, 0, *type, 0);
		return 0;
	}
	return at(c, a->args[0], STRATA_TYPE, "unknown constant '%s'", name);
}

static int compile_model(struct rank_profile *p, const struct rank_models *models, int m,
                         const struct rank_pos *use, struct strata_error *err);

static int compile_onnx(struct cc *c, const struct rank_ast *a, int *type)
{
	if (a->nargs != 1 || name_arg(c, a->args[0], "a model name"))
		return at(c, a, STRATA_TYPE, "onnx() takes one model name");
	const char *name = a->args[0]->name;
	int m;
	for (m = 0; m < c->p->nmodels; m++)
		if (strcmp(c->p->models[m].decl->name, name) == 0)
			break;
	if (m == c->p->nmodels)
		return at(c, a->args[0], STRATA_TYPE, "unknown onnx model '%s'", name);
	int rc = compile_model(c->p, c->models, m, &a->pos, c->err);
	if (rc)
		return rc;
	struct rank_cmodel *cm = &c->p->models[m];
	int o = 0;
	if (a->out) {
		const char *oname = a->out;
		for (int i = 0; i < cm->decl->noutputs; i++)
			if (cm->decl->outputs[i].alias && strcmp(cm->decl->outputs[i].alias, oname) == 0)
				oname = cm->decl->outputs[i].name;
		o = runtime_model_output_index(cm->rt, oname);
		if (o < 0)
			return at(c, a, STRATA_TYPE, "onnx model '%s' has no output '%s'", name,
			          a->out);
	}
	c->prog->doc_dependent = 1;
	*type = cm->out_type[o];
	EMIT(c, RANK_OP_ONNX, m, o, 0, 0, 0, *type, 0);
	return 0;
}

static int compile_close(struct cc *c, const struct rank_ast *a, int distance, int *type)
{
	const char *fname = distance ? "distance" : "closeness";
	if (a->nargs != 2 || name_arg(c, a->args[0], "'field'") ||
	    name_arg(c, a->args[1], "a field name"))
		return at(c, a, STRATA_TYPE, "%s() takes (field, name)", fname);
	if (strcmp(a->args[0]->name, "label") == 0)
		return at(c, a, STRATA_NOT_IMPLEMENTED, "%s(label, ...) is not supported", fname);
	if (strcmp(a->args[0]->name, "field") != 0)
		return at(c, a->args[0], STRATA_TYPE, "%s() takes 'field' or 'label' first, not '%s'",
		          fname, a->args[0]->name);
	const char *name = a->args[1]->name;
	int fi = find_field(c->p->sd, name);
	if (fi < 0 || !c->p->sd->fields[fi].attribute)
		return at(c, a->args[1], STRATA_TYPE, "unknown attribute '%s'", name);
	if (c->p->sd->fields[fi].type != RANK_FT_TENSOR)
		return at(c, a->args[1], STRATA_TYPE, "attribute '%s' is not a tensor", name);
	c->prog->doc_dependent = 1;
	*type = 0;
	EMIT(c, RANK_OP_CLOSE, fi, distance, 0, 0, 0, 0, 0);
	return 0;
}

static int compile_lambda(struct cc *c, const struct rank_ast *lam, int nparams, int *lam_pc,
                          int *base)
{
	if (lam->kind != RA_LAMBDA || lam->nparams != nparams)
		return at(c, lam, STRATA_TYPE, "expected a lambda f(%s)(...)",
		          nparams == 1 ? "x" : "x,y");
	int locals[2], types[2] = { 0, 0 };
	*base = c->prog->nlocals;
	for (int i = 0; i < nparams; i++)
		locals[i] = new_local(c);
	struct env e = { NULL, NULL, 1, nparams, lam->params, locals, types };
	int jump = emit(c, RANK_OP_JUMP, 0, 0, 0, 0, 0, -1, 0);
	if (jump < 0)
		return nomem(c);
	*lam_pc = c->prog->ncode;
	int t, rc = compile(c, &e, lam->args[0], &t);
	if (rc)
		return rc;
	if (T(c, t)->rank != 0)
		return at(c, lam->args[0], STRATA_TYPE, "a lambda must produce a number");
	EMIT(c, RANK_OP_RET, 0, 0, 0, 0, 0, -1, 0);
	c->prog->code[jump].a = c->prog->ncode;
	return 0;
}

static int agg_of(const char *s)
{
	static const struct { const char *n; int a; } aggs[] = {
		{ "sum", RANK_AGG_SUM }, { "avg", RANK_AGG_AVG }, { "max", RANK_AGG_MAX },
		{ "min", RANK_AGG_MIN }, { "prod", RANK_AGG_PROD }, { "count", RANK_AGG_COUNT },
	};
	for (size_t i = 0; i < sizeof aggs / sizeof aggs[0]; i++)
		if (strcmp(aggs[i].n, s) == 0)
			return aggs[i].a;
	return 0;
}

/* Collect dimension-name arguments args[from..nargs). */
static int dim_args(struct cc *c, const struct rank_ast *a, int from, char **names, int *n)
{
	*n = 0;
	for (int i = from; i < a->nargs; i++) {
		if (name_arg(c, a->args[i], "a dimension name"))
			return STRATA_TYPE;
		if (*n == RANK_MAX_RANK)
			return at(c, a->args[i], STRATA_TYPE, "too many dimensions");
		names[(*n)++] = a->args[i]->name;
	}
	return 0;
}

/* sum(t) / reduce(t, agg, dims...) / avg(t, d) ...: fuses sum(x * y) over
 * same-typed operands into DOT so neither is materialized. */
static int compile_reduce(struct cc *c, const struct env *env, const struct rank_ast *a, int agg,
                          int dims_from, int *type)
{
	char *names[RANK_MAX_RANK];
	int n, rc = dim_args(c, a, dims_from, names, &n);
	if (rc)
		return rc;
	const struct rank_ast *x = a->args[0];
	if (agg == RANK_AGG_SUM && n == 0 && x->kind == RA_BINARY && x->op == RB_MUL) {
		int t1, t2;
		if ((rc = compile(c, env, x->args[0], &t1)) || (rc = compile(c, env, x->args[1], &t2)))
			return rc;
		if (T(c, t1)->rank > 0 && same_type(T(c, t1), T(c, t2))) {
			*type = 0;
			EMIT(c, RANK_OP_DOT, 0, 0, 0, t1, t2, 0, 0);
			return 0;
		}
		int tj;
		if ((rc = emit_bin(c, x, RB_MUL, t1, t2, &tj)))
			return rc;
		return emit_reduce(c, a, tj, agg, 0, names, type);
	}
	int t;
	if ((rc = compile(c, env, x, &t)))
		return rc;
	return emit_reduce(c, a, t, agg, n, names, type);
}

static int compile_tensor_fn(struct cc *c, const struct env *env, const struct rank_ast *a,
                             int *type, int *handled)
{
	const char *f = a->name;
	int rc, t, t2;
	*handled = 1;
	if (strcmp(f, "reduce") == 0) {
		if (a->nargs < 2 || name_arg(c, a->args[1], "an aggregator"))
			return at(c, a, STRATA_TYPE, "reduce(tensor, aggregator, dims...)");
		int agg = agg_of(a->args[1]->name);
		if (!agg)
			return at(c, a->args[1], STRATA_TYPE, "unknown aggregator '%s'",
			          a->args[1]->name);
		return compile_reduce(c, env, a, agg, 2, type);
	}
	int agg = agg_of(f);
	if (agg && a->nargs >= 1) {
		/* sum(t), avg(t, d), max(t, d); max(x, y) of numbers is the math function */
		int reduce_form = agg == RANK_AGG_SUM || agg == RANK_AGG_AVG || agg == RANK_AGG_PROD ||
		                  agg == RANK_AGG_COUNT || a->nargs == 1;
		if (!reduce_form && a->nargs >= 2 && a->args[1]->kind == RA_NAME) {
			/* max(t, x) where x names a dimension (not a parameter or function) */
			reduce_form = 1;
			for (const struct env *e = env; e; e = e->up)
				for (int i = 0; i < e->n; i++)
					if (strcmp(e->names[i], a->args[1]->name) == 0)
						reduce_form = 0;
			const struct rank_profile_decl *d = c->p->decl;
			for (int i = 0; i < d->nfunctions; i++)
				if (strcmp(d->functions[i].name, a->args[1]->name) == 0)
					reduce_form = 0;
		}
		if (reduce_form)
			return compile_reduce(c, env, a, agg, 1, type);
	}
	if (strcmp(f, "map") == 0) {
		if (a->nargs != 2)
			return at(c, a, STRATA_TYPE, "map(tensor, f(x)(...))");
		if ((rc = compile(c, env, a->args[0], &t)))
			return rc;
		int pc, base;
		if ((rc = compile_lambda(c, a->args[1], 1, &pc, &base)))
			return rc;
		if (T(c, t)->rank == 0) {
			/* map over a number: run the lambda once */
			*type = 0;
			EMIT(c, RANK_OP_MAP, pc, base, 0, 0, 0, 0, 0);
			return 0;
		}
		if ((rc = double_type(c, t, type)))
			return rc;
		EMIT(c, RANK_OP_MAP, pc, base, 0, t, 0, *type, 0);
		return 0;
	}
	if (strcmp(f, "join") == 0) {
		if (a->nargs != 3)
			return at(c, a, STRATA_TYPE, "join(a, b, f(x,y)(...))");
		if ((rc = compile(c, env, a->args[0], &t)) || (rc = compile(c, env, a->args[1], &t2)))
			return rc;
		int pc, base;
		if ((rc = compile_lambda(c, a->args[2], 2, &pc, &base)))
			return rc;
		if ((rc = join_type(c, a, t, t2, type)))
			return rc;
		EMIT(c, RANK_OP_JOIN, pc, base, 0, t, t2, *type, 0);
		return 0;
	}
	if (strcmp(f, "matmul") == 0) {
		char *names[RANK_MAX_RANK];
		int n, tj;
		if (a->nargs < 3)
			return at(c, a, STRATA_TYPE, "matmul(a, b, dim)");
		if ((rc = dim_args(c, a, 2, names, &n)))
			return rc;
		if ((rc = compile(c, env, a->args[0], &t)) || (rc = compile(c, env, a->args[1], &t2)))
			return rc;
		if ((rc = emit_bin(c, a, RB_MUL, t, t2, &tj)))
			return rc;
		return emit_reduce(c, a, tj, RANK_AGG_SUM, n, names, type);
	}
	int l2 = strcmp(f, "l2_normalize") == 0, sm = strcmp(f, "softmax") == 0;
	int am = strcmp(f, "argmax") == 0, an = strcmp(f, "argmin") == 0;
	if (l2 || sm || am || an) {
		char *names[RANK_MAX_RANK];
		int n;
		if (a->nargs < 2)
			return at(c, a, STRATA_TYPE, "%s(tensor, dim)", f);
		if ((rc = dim_args(c, a, 1, names, &n)))
			return rc;
		if ((rc = compile(c, env, a->args[0], &t)))
			return rc;
		if (T(c, t)->rank == 0)
			return at(c, a->args[0], STRATA_TYPE, "%s() needs a tensor", f);
		if (sm && (rc = emit_un(c, RANK_FN_EXP, t, &t)))
			return rc;
		int L = new_local(c), tr, tt;
		EMIT(c, RANK_OP_SET, L, 0, 0, 0, 0, -1, 0);
		EMIT(c, RANK_OP_GET, L, 0, 0, 0, 0, t, 0);
		EMIT(c, RANK_OP_GET, L, 0, 0, 0, 0, t, 0);
		if (l2) {
			/* t / sqrt(sum(t * t, dim)) */
			EMIT(c, RANK_OP_GET, L, 0, 0, 0, 0, t, 0);
			if ((rc = emit_bin(c, a, RB_MUL, t, t, &tt)) ||
			    (rc = emit_reduce(c, a, tt, RANK_AGG_SUM, n, names, &tr)) ||
			    (rc = emit_un(c, RANK_FN_SQRT, tr, &tr)))
				return rc;
			return emit_bin(c, a, RB_DIV, t, tr, type);
		}
		if (sm) /* exp(t) / sum(exp(t), dim) */
			return (rc = emit_reduce(c, a, t, RANK_AGG_SUM, n, names, &tr)) ? rc :
			       emit_bin(c, a, RB_DIV, t, tr, type);
		/* argmax: 1 where the cell equals the max along dim, else 0 */
		if ((rc = emit_reduce(c, a, t, am ? RANK_AGG_MAX : RANK_AGG_MIN, n, names, &tr)))
			return rc;
		return emit_bin(c, a, RB_EQ, t, tr, type);
	}
	*handled = 0;
	return 0;
}

static const struct rank_function_decl *find_function(const struct rank_profile_decl *d,
                                                      const char *name)
{
	for (int i = 0; i < d->nfunctions; i++)
		if (strcmp(d->functions[i].name, name) == 0)
			return &d->functions[i];
	return NULL;
}

/* Inline a user function: arguments are evaluated once, into locals. */
static int compile_user(struct cc *c, const struct env *env, const struct rank_ast *a,
                        const struct rank_function_decl *fn, int *type)
{
	for (const struct env *e = env; e; e = e->up)
		if (e->fn == fn)
			return at(c, a, STRATA_TYPE, "function '%s' calls itself", fn->name);
	int nargs = a->kind == RA_CALL ? a->nargs : 0;
	if (nargs != fn->nparams)
		return at(c, a, STRATA_TYPE, "function '%s' takes %d argument%s, not %d", fn->name,
		          fn->nparams, fn->nparams == 1 ? "" : "s", nargs);
	int locals[64], types[64];
	if (nargs > 64)
		return at(c, a, STRATA_LIMIT, "more than 64 arguments");
	for (int i = 0; i < nargs; i++) {
		int rc = compile(c, env, a->args[i], &types[i]);
		if (rc)
			return rc;
		locals[i] = new_local(c);
		EMIT(c, RANK_OP_SET, locals[i], 0, 0, 0, 0, -1, 0);
	}
	/* The body sees only its parameters and profile-level names: parameters
	 * of the caller are not in scope, but recursion through callers is
	 * still detected along up. */
	struct env e = { env, fn, 0, nargs, fn->params, locals, types };
	return compile(c, &e, fn->body, type);
}

/* Only the innermost scope binds names: a function body does not see its
 * caller's parameters, a lambda sees only its own. */
static int lookup_name(const struct env *env, const char *name, int *local, int *type)
{
	if (!env)
		return 0;
	for (int i = 0; i < env->n; i++)
		if (strcmp(env->names[i], name) == 0) {
			*local = env->locals[i];
			*type = env->types[i];
			return 1;
		}
	return 0;
}

static int in_lambda(const struct env *env)
{
	return env && env->lambda;
}

/* lightgbm("f.json") / xgboost("f.json"): the model's trees as one
 * expression (gbdt.c) over its features, each evaluated once into a local. */
static int compile_gbdt(struct cc *c, const struct env *env, const struct rank_ast *a, int *type)
{
	struct rank_gbdt *g;
	int rc = rank_gbdt_load(c->p->sd->file, a, &g, c->err);
	if (rc)
		return rc;
	size_t n = (size_t)g->nfeatures + 1;
	int *locals = base_calloc(n, sizeof *locals), *types = base_calloc(n, sizeof *types);
	if (!locals || !types)
		rc = nomem(c);
	for (int i = 0; !rc && i < g->nfeatures; i++) {
		rc = compile(c, env, g->features[i], &types[i]);
		if (!rc && T(c, types[i])->rank != 0)
			rc = at(c, a, STRATA_TYPE, "feature '%s' is a tensor, not a number",
			        g->names[i]);
		locals[i] = new_local(c);
		if (!rc && emit(c, RANK_OP_SET, locals[i], 0, 0, 0, 0, -1, 0) < 0)
			rc = nomem(c);
		if (rc && rc != STRATA_NOMEM) {
			/* say which model and feature: "sd:l:c: lightgbm model 'f': ..." */
			char pre[512], msg[STRATA_ERRMSG_MAX];
			int k = snprintf(pre, sizeof pre, "%s:%d:%d: ", a->pos.file ? a->pos.file : "?",
			                 a->pos.line, a->pos.col);
			const char *m = c->err->msg;
			snprintf(msg, sizeof msg, "%s", strncmp(m, pre, (size_t)k) ? m : m + k);
			rc = at(c, a, rc, "%s model '%s': feature '%s': %s", a->name, a->args[0]->name,
			        g->names[i], msg);
		}
	}
	struct env e = { env, NULL, 0, g->nfeatures, g->names, locals, types };
	if (!rc && (rc = compile(c, &e, g->body, type)) == STRATA_LIMIT) {
		char msg[STRATA_ERRMSG_MAX];
		snprintf(msg, sizeof msg, "%s", c->err->msg);
		rc = at(c, a, rc, "%s model '%s' is too large: %s", a->name, a->args[0]->name, msg);
	}
	base_free(locals, n * sizeof *locals);
	base_free(types, n * sizeof *types);
	rank_gbdt_free(g);
	return rc;
}

static int compile_prog_in(struct rank_profile *p, const struct rank_models *models,
                           const struct rank_ast *a, const char *name, int allow_first,
                           int must_be_number, int global, struct rank_prog *prog,
                           struct strata_error *err);

/* Compile arg into a new normalizer of the profile; *index is its number. */
static int add_norm(struct cc *c, const struct rank_ast *arg, int kind, double k, int *index)
{
	struct rank_profile *p = c->p;
	struct rank_norm nm = { .kind = kind, .k = k };
	char name[64];
	snprintf(name, sizeof name, "global-phase normalizer %d", p->nnorms);
	int rc = compile_prog_in(p, c->models, arg, name, 1, 1, 2, &nm.arg, c->err);
	if (rc) {
		rank_prog_release(&nm.arg);
		return rc;
	}
	struct rank_norm *v = base_realloc(p->norms, (size_t)p->nnorms * sizeof *v,
	                                   ((size_t)p->nnorms + 1) * sizeof *v);
	if (!v) {
		rank_prog_release(&nm.arg);
		return nomem(c);
	}
	p->norms = v;
	*index = p->nnorms;
	v[p->nnorms++] = nm;
	return 0;
}

/* normalize_linear(x), reciprocal_rank(x) or reciprocal_rank(x, k), and
 * reciprocal_rank_fusion(x, y, ...) (the sum of reciprocal_rank of each):
 * Vespa's cross-hit normalizers, global-phase only.  Each argument is a
 * program of its own, run over every candidate first. */
static int compile_norm(struct cc *c, const struct rank_ast *a, int *type)
{
	const char *f = a->name;
	int linear = strcmp(f, "normalize_linear") == 0;
	int fusion = strcmp(f, "reciprocal_rank_fusion") == 0;
	if (c->global == 0)
		return at(c, a, STRATA_TYPE, "%s() is only available in global-phase", f);
	if (c->global == 2)
		return at(c, a, STRATA_TYPE, "%s() cannot be nested in another normalizer", f);
	if (a->nargs < 1 || (linear && a->nargs != 1) || (!linear && !fusion && a->nargs > 2))
		return at(c, a, STRATA_TYPE, "%s", linear ? "normalize_linear(x) takes one argument"
		          : fusion ? "reciprocal_rank_fusion(x, y, ...) takes one or more arguments"
		          : "reciprocal_rank(x) or reciprocal_rank(x, k) is expected");
	double k = 60.0;
	if (!linear && !fusion && a->nargs == 2) {
		const struct rank_ast *ka = a->args[1];
		if (ka->kind == RA_UNARY && ka->op == '-' && ka->args[0]->kind == RA_NUM)
			return at(c, ka, STRATA_TYPE, "the k of reciprocal_rank() must not be negative");
		if (ka->kind != RA_NUM)
			return at(c, ka, STRATA_TYPE, "the k of reciprocal_rank() must be a number");
		k = ka->num;
	}
	int n = fusion ? a->nargs : 1;
	for (int i = 0; i < n; i++) {
		int idx = 0, rc = add_norm(c, a->args[i], linear ? RANK_NORM_LINEAR : RANK_NORM_RECIPROCAL,
		                       k, &idx);
		if (rc)
			return rc;
		EMIT(c, RANK_OP_NORM, idx, 0, 0, 0, 0, 0, 0);
		if (i)
			EMIT(c, RANK_OP_BIN, RB_ADD, 0, 0, 0, 0, 0, 0);
	}
	c->prog->doc_dependent = 1;
	*type = 0;
	return 0;
}

static int compile_call(struct cc *c, const struct env *env, const struct rank_ast *a, int *type)
{
	const char *f = a->name;
	int rc, t, t2;
	if (in_lambda(env) && (strcmp(f, "attribute") == 0 || strcmp(f, "query") == 0 ||
	                       strcmp(f, "constant") == 0 || strcmp(f, "onnx") == 0 ||
	                       strcmp(f, "closeness") == 0 || strcmp(f, "distance") == 0))
		return at(c, a, STRATA_TYPE, "a lambda may only use its parameters, not %s()", f);
	if (a->out && strcmp(f, "onnx") != 0 && strcmp(f, "onnxModel") != 0)
		return at(c, a, STRATA_TYPE, "'.%s' after %s(): only onnx() has outputs", a->out, f);
	if (strcmp(f, "normalize_linear") == 0 || strcmp(f, "reciprocal_rank") == 0 ||
	    strcmp(f, "reciprocal_rank_fusion") == 0)
		return compile_norm(c, a, type);
	if (strcmp(f, "tensorFromWeightedSet") == 0 || strcmp(f, "tensorFromLabels") == 0)
		return at(c, a, STRATA_NOT_IMPLEMENTED,
		          "%s() makes a mapped tensor, which rank expressions do not support", f);
	if (strcmp(f, "attribute") == 0)
		return compile_attribute(c, a, type);
	if (strcmp(f, "query") == 0)
		return compile_query(c, a, type);
	if (strcmp(f, "constant") == 0)
		return compile_constant(c, a, type);
	if (strcmp(f, "onnx") == 0 || strcmp(f, "onnxModel") == 0)
		return compile_onnx(c, a, type);
	if (strcmp(f, "closeness") == 0 || strcmp(f, "distance") == 0)
		return compile_close(c, a, f[0] == 'd', type);
	if (strcmp(f, "lightgbm") == 0 || strcmp(f, "xgboost") == 0)
		return compile_gbdt(c, env, a, type);
	if (!in_lambda(env)) {
		const struct rank_function_decl *fn = find_function(c->p->decl, f);
		if (fn)
			return compile_user(c, env, a, fn, type);
	}
	if (strcmp(f, "if") == 0) {
		if (a->nargs != 3)
			return at(c, a, STRATA_TYPE, "if(condition, then, else)");
		if ((rc = compile(c, env, a->args[0], &t)))
			return rc;
		if (T(c, t)->rank != 0)
			return at(c, a->args[0], STRATA_TYPE, "the condition of if() must be a number");
		int jf = emit(c, RANK_OP_JUMPF, 0, 0, 0, 0, 0, -1, 0);
		if (jf < 0 || (rc = compile(c, env, a->args[1], &t)))
			return jf < 0 ? nomem(c) : rc;
		int j = emit(c, RANK_OP_JUMP, 0, 0, 0, 0, 0, -1, 0);
		if (j < 0)
			return nomem(c);
		c->prog->code[jf].a = c->prog->ncode;
		if ((rc = compile(c, env, a->args[2], &t2)))
			return rc;
		c->prog->code[j].a = c->prog->ncode;
		if (!same_type(T(c, t), T(c, t2))) {
			char b1[256], b2[256];
			return at(c, a, STRATA_TYPE, "the branches of if() differ: %s and %s",
			          type_str(T(c, t), b1, sizeof b1), type_str(T(c, t2), b2, sizeof b2));
		}
		/* Both branches leave the same shape; cells may differ in type, so a
		 * tensor result is described as double only when both are. */
		*type = T(c, t)->cell == T(c, t2)->cell ? t : -1;
		if (*type < 0)
			return at(c, a, STRATA_TYPE, "the branches of if() differ in cell type");
		return 0;
	}
	int handled;
	if ((rc = compile_tensor_fn(c, env, a, type, &handled)) || handled)
		return rc;
	int fn = rank_fn_unary(f);
	if (fn) {
		if (a->nargs != 1)
			return at(c, a, STRATA_TYPE, "%s() takes one argument", f);
		if ((rc = compile(c, env, a->args[0], &t)))
			return rc;
		return emit_un(c, fn, t, type);
	}
	if ((fn = rank_fn_binary(f))) {
		if (a->nargs != 2)
			return at(c, a, STRATA_TYPE, "%s() takes two arguments", f);
		if ((rc = compile(c, env, a->args[0], &t)) || (rc = compile(c, env, a->args[1], &t2)))
			return rc;
		return emit_bin(c, a, fn, t, t2, type);
	}
	if (strcmp(f, "firstPhase") == 0 && a->nargs == 0)
		goto first_phase;
	return at(c, a, STRATA_TYPE, "unknown function or feature '%s'", f);
first_phase:
	if (!c->allow_first)
		return at(c, a, STRATA_TYPE, "firstPhase is only available after the first phase");
	c->prog->doc_dependent = 1;
	*type = 0;
	EMIT(c, RANK_OP_FIRST, 0, 0, 0, 0, 0, 0, 0);
	return 0;
}

static int compile(struct cc *c, const struct env *env, const struct rank_ast *a, int *type)
{
	int rc, t, t2, local;
	switch (a->kind) {
	case RA_NUM:
		*type = 0;
		EMIT(c, RANK_OP_NUM, 0, 0, 0, 0, 0, 0, a->num);
		return 0;
	case RA_STR:
		return at(c, a, STRATA_TYPE, "a string (\"%s\") is not a value here", a->name);
	case RA_NAME:
		if (lookup_name(env, a->name, &local, type)) {
			EMIT(c, RANK_OP_GET, local, 0, 0, 0, 0, *type, 0);
			return 0;
		}
		if (in_lambda(env))
			return at(c, a, STRATA_TYPE, "'%s' is not a parameter of the lambda", a->name);
		if (find_function(c->p->decl, a->name))
			return compile_user(c, env, a, find_function(c->p->decl, a->name), type);
		if (strcmp(a->name, "firstPhase") == 0) {
			if (!c->allow_first)
				return at(c, a, STRATA_TYPE,
				          "firstPhase is only available after the first phase");
			c->prog->doc_dependent = 1;
			*type = 0;
			EMIT(c, RANK_OP_FIRST, 0, 0, 0, 0, 0, 0, 0);
			return 0;
		}
		return at(c, a, STRATA_TYPE, "unknown name '%s'", a->name);
	case RA_CALL:
		return compile_call(c, env, a, type);
	case RA_UNARY:
		if ((rc = compile(c, env, a->args[0], &t)))
			return rc;
		return emit_un(c, a->op == '!' ? RANK_FN_NOT : RANK_FN_NEG, t, type);
	case RA_BINARY:
		if ((rc = compile(c, env, a->args[0], &t)) || (rc = compile(c, env, a->args[1], &t2)))
			return rc;
		return emit_bin(c, a, a->op, t, t2, type);
	case RA_LAMBDA:
		return at(c, a, STRATA_TYPE, "a lambda is only valid as an argument of map or join");
	}
	return at(c, a, STRATA_TYPE, "unexpected expression");
}

void rank_prog_release(struct rank_prog *prog)
{
	base_free(prog->code, (size_t)prog->capcode * sizeof *prog->code);
	base_strfree(prog->name);
	memset(prog, 0, sizeof *prog);
}

/* Compile a into prog; must_be_number for phases; global as in struct cc. */
static int compile_prog_in(struct rank_profile *p, const struct rank_models *models,
                           const struct rank_ast *a, const char *name, int allow_first,
                           int must_be_number, int global, struct rank_prog *prog,
                           struct strata_error *err)
{
	memset(prog, 0, sizeof *prog);
	prog->name = base_strdup(name);
	if (!prog->name)
		return base_nomem(err, "compiling %s", name);
	struct cc c = { p, models, prog, err, allow_first, 0, global };
	int t, rc = compile(&c, NULL, a, &t);
	if (rc)
		return rc;
	if (must_be_number && p->types[t].rank != 0) {
		char b[256];
		return at(&c, a, STRATA_TYPE, "%s must produce a number, not %s", name,
		          type_str(&p->types[t], b, sizeof b));
	}
	prog->result = t;
	EMIT(&c, RANK_OP_RET, 0, 0, 0, 0, 0, -1, 0);
	return 0;
}

static int compile_prog(struct rank_profile *p, const struct rank_models *models,
                        const struct rank_ast *a, const char *name, int allow_first,
                        int must_be_number, struct rank_prog *prog, struct strata_error *err)
{
	return compile_prog_in(p, models, a, name, allow_first, must_be_number, 0, prog, err);
}

int rank_expr_compile(struct rank_profile *p, const struct rank_ast *a, struct rank_prog *prog,
                      struct strata_error *err)
{
	return compile_prog(p, NULL, a, a->text ? a->text : "expression", 1, 0, prog, err);
}

/* Does the model input fit its source?  Sets *extra when the input has one
 * more leading symbolic dimension (the batch). */
static int input_fits(const struct rt_value_info *in, const struct rank_type *src, int *extra)
{
	*extra = 0;
	switch (in->dtype) {
	case BASE_DT_FLOAT: case BASE_DT_DOUBLE: case BASE_DT_INT8: case BASE_DT_UINT8:
	case BASE_DT_INT16: case BASE_DT_UINT16: case BASE_DT_INT32: case BASE_DT_UINT32:
	case BASE_DT_INT64: case BASE_DT_UINT64: case BASE_DT_BOOL: case BASE_DT_FLOAT16:
	case BASE_DT_BFLOAT16:
		break;
	default:
		return 0;
	}
	if (in->rank < 0)
		return 1;
	int off;
	if (in->rank == src->rank)
		off = 0;
	else if (in->rank == src->rank + 1 && in->dims[0] < 0)
		off = 1;
	else
		return 0;
	for (int i = 0; i < src->rank; i++)
		if (in->dims[i + off] >= 0 && in->dims[i + off] != src->dims[i])
			return 0;
	*extra = off;
	return 1;
}

static const char *info_str(const struct rt_value_info *v, char *buf, size_t n)
{
	if (v->rank < 0) {
		snprintf(buf, n, "%s (any shape)", base_dtype_name(v->dtype));
		return buf;
	}
	size_t k = (size_t)snprintf(buf, n, "%s[", base_dtype_name(v->dtype));
	for (int i = 0; i < v->rank && k < n; i++) {
		if (v->dims[i] < 0)
			k += (size_t)snprintf(buf + k, n - k, "%s%s", i ? "," : "",
			                      v->dim_names[i] && v->dim_names[i][0] ? v->dim_names[i] : "?");
		else
			k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? "," : "", (long long)v->dims[i]);
	}
	if (k < n)
		snprintf(buf + k, n - k, "]");
	return buf;
}

static int compile_model(struct rank_profile *p, const struct rank_models *models, int m,
                         const struct rank_pos *use, struct strata_error *err)
{
	struct rank_cmodel *cm = &p->models[m];
	const struct rank_model_decl *d = cm->decl;
	if (cm->state == 2)
		return 0;
	if (cm->state == 1)
		return pos_err(err, use, STRATA_TYPE, "onnx model '%s' depends on itself", d->name);
	for (int i = 0; models && i < models->n && !cm->rt; i++)
		if (models->refs[i].decl == d)
			cm->rt = models->refs[i].rt;
	if (!cm->rt)
		return pos_err(err, use, STRATA_NOT_FOUND, "onnx model '%s' is not loaded", d->name);
	cm->state = 1;
	int rc;
	const struct rt_model *rt = cm->rt;
	cm->nin = runtime_model_ninputs(rt);
	cm->nout = runtime_model_noutputs(rt);
	cm->src = base_calloc((size_t)cm->nin + 1, sizeof *cm->src);
	cm->extra = base_calloc((size_t)cm->nin + 1, sizeof *cm->extra);
	cm->out_type = base_calloc((size_t)cm->nout + 1, sizeof *cm->out_type);
	cm->out_cells = base_calloc((size_t)cm->nout + 1, sizeof *cm->out_cells);
	if (!cm->src || !cm->extra || !cm->out_type || !cm->out_cells)
		return base_nomem(err, "model '%s'", d->name);
	for (int i = 0; i < d->ninputs; i++)
		if (runtime_model_input_index(rt, d->inputs[i].name) < 0)
			return pos_err(err, &d->inputs[i].pos, STRATA_TYPE,
			               "onnx model '%s' (%s) has no input '%s'", d->name, d->file,
			               d->inputs[i].name);
	int doc_all_extra = 1, any_extra = 0;
	for (int i = 0; i < cm->nin; i++) {
		const struct rt_value_info *info = runtime_model_input(rt, i);
		const struct rank_model_input *mi = NULL;
		for (int j = 0; j < d->ninputs; j++)
			if (strcmp(d->inputs[j].name, info->name) == 0)
				mi = &d->inputs[j];
		char pname[512];
		snprintf(pname, sizeof pname, "model %s input %s", d->name, info->name);
		int qi = -1;
		for (int j = 0; j < p->decl->ninputs; j++)
			if (strcmp(p->decl->inputs[j].name, info->name) == 0)
				qi = j;
		if (mi) {
			rc = compile_prog(p, models, mi->source, pname, 1, 0, &cm->src[i], err);
		} else if (qi >= 0 && !find_function(p->decl, info->name)) {
			/* Unmapped, named like a query input: query(name). */
			struct rank_ast arg = { .kind = RA_NAME, .name = (char *)info->name,
			                        .pos = d->pos };
			struct rank_ast *args[1] = { &arg };
			struct rank_ast call = { .kind = RA_CALL, .name = "query", .nargs = 1,
			                         .args = args, .pos = d->pos };
			rc = compile_prog(p, models, &call, pname, 1, 0, &cm->src[i], err);
		} else if (find_function(p->decl, info->name)) {
			/* Unmapped: an input named like a function takes its value. */
			struct rank_ast name = { .kind = RA_NAME, .name = (char *)info->name, .pos = d->pos };
			rc = compile_prog(p, models, &name, pname, 1, 0, &cm->src[i], err);
		} else {
			return pos_err(err, &d->pos, STRATA_TYPE,
			               "onnx model '%s': input '%s' has no source (add input \"%s\": ...)",
			               d->name, info->name, info->name);
		}
		if (rc)
			return rc;
		const struct rank_type *st = &p->types[cm->src[i].result];
		if (!input_fits(info, st, &cm->extra[i])) {
			char b1[256], b2[256];
			return pos_err(err, mi ? &mi->pos : &d->pos, STRATA_TYPE,
			               "onnx model '%s' input '%s' is %s, its source is %s", d->name,
			               info->name, info_str(info, b1, sizeof b1),
			               type_str(st, b2, sizeof b2));
		}
		any_extra |= cm->extra[i];
		if (cm->src[i].doc_dependent && !cm->extra[i])
			doc_all_extra = 0;
	}
	int outs_batch = 1;
	for (int o = 0; o < cm->nout; o++) {
		const struct rt_value_info *info = runtime_model_output(rt, o);
		if (info->rank < 0)
			return pos_err(err, &d->pos, STRATA_NOT_IMPLEMENTED,
			               "onnx model '%s' output '%s' has no declared shape", d->name,
			               info->name);
		struct rank_type r = { .cell = info->dtype, .rank = info->rank };
		if (base_dtype_size(info->dtype) == 0 || info->dtype == BASE_DT_STRING)
			return pos_err(err, &d->pos, STRATA_TYPE,
			               "onnx model '%s' output '%s' is not numeric", d->name, info->name);
		for (int k = 0; k < info->rank; k++) {
			/* A symbolic dimension is one document's worth: size 1. */
			r.dims[k] = info->dims[k] < 0 ? 1 : info->dims[k];
			r.dim_names[k] = (char *)dnames[k];
		}
		if ((cm->out_type[o] = add_type(p, &r)) < 0)
			return base_nomem(err, "model '%s'", d->name);
		cm->out_cells[o] = type_cells(&r);
		if (info->rank < 1 || info->dims[0] >= 0)
			outs_batch = 0;
	}
	cm->batched = any_extra && doc_all_extra && outs_batch;
	cm->state = 2;
	return 0;
}

void rank_profile_release(struct rank_profile *p)
{
	rank_prog_release(&p->first);
	rank_prog_release(&p->second);
	rank_prog_release(&p->global);
	for (int i = 0; i < p->nnorms; i++)
		rank_prog_release(&p->norms[i].arg);
	if (p->norms)
		base_free(p->norms, (size_t)p->nnorms * sizeof *p->norms);
	for (int i = 0; i < p->nmatch; i++)
		rank_prog_release(&p->match[i]);
	for (int i = 0; i < p->nsummary; i++)
		rank_prog_release(&p->summary[i]);
	base_free(p->match, (size_t)p->nmatch * sizeof *p->match);
	base_free(p->summary, (size_t)p->nsummary * sizeof *p->summary);
	for (int m = 0; m < p->nmodels; m++) {
		struct rank_cmodel *cm = &p->models[m];
		if (cm->src)
			for (int i = 0; i < cm->nin; i++)
				rank_prog_release(&cm->src[i]);
		base_free(cm->src, ((size_t)cm->nin + 1) * sizeof *cm->src);
		base_free(cm->extra, ((size_t)cm->nin + 1) * sizeof *cm->extra);
		base_free(cm->out_type, ((size_t)cm->nout + 1) * sizeof *cm->out_type);
		base_free(cm->out_cells, ((size_t)cm->nout + 1) * sizeof *cm->out_cells);
	}
	base_free(p->models, ((size_t)p->nmodels + 1) * sizeof *p->models);
	base_free(p->inputs, ((size_t)p->ninputs + 1) * sizeof *p->inputs);
	base_free(p->consts, ((size_t)p->nconsts + 1) * sizeof *p->consts);
	base_free(p->types, (size_t)p->captypes * sizeof *p->types);
	base_arena_free(&p->pool);
	memset(p, 0, sizeof *p);
}

int rank_profile_compile(struct rank_profile *p, const struct rank_schema *s,
                         const struct rank_profile_decl *d, const struct rank_models *models,
                         struct strata_error *err)
{
	const struct rank_sd *sd = s->sd;
	memset(p, 0, sizeof *p);
	p->schema = s;
	p->sd = sd;
	p->decl = d;
	base_arena_init(&p->pool, 4096);
	struct rank_type num = { .cell = BASE_DT_DOUBLE };
	if (add_type(p, &num) != 0)
		return base_nomem(err, "profile '%s'", d->name);
	p->rerank = d->rerank_count >= 0 ? d->rerank_count : 100;

	p->ninputs = d->ninputs;
	p->inputs = base_calloc((size_t)d->ninputs + 1, sizeof *p->inputs);
	int nsd_consts = 0, nsd_models = 0;
	for (int i = 0; i < sd->nconstants; i++) {
		int shadowed = 0;
		for (int j = 0; j < d->nconstants; j++)
			shadowed |= strcmp(d->constants[j].name, sd->constants[i].name) == 0;
		nsd_consts += !shadowed;
	}
	for (int i = 0; i < sd->nmodels; i++) {
		int shadowed = 0;
		for (int j = 0; j < d->nmodels; j++)
			shadowed |= strcmp(d->models[j].name, sd->models[i].name) == 0;
		nsd_models += !shadowed;
	}
	p->consts = base_calloc((size_t)(d->nconstants + nsd_consts) + 1, sizeof *p->consts);
	p->models = base_calloc((size_t)(d->nmodels + nsd_models) + 1, sizeof *p->models);
	if (!p->inputs || !p->consts || !p->models) {
		base_free(p->inputs, ((size_t)d->ninputs + 1) * sizeof *p->inputs);
		base_free(p->consts, ((size_t)(d->nconstants + nsd_consts) + 1) * sizeof *p->consts);
		base_free(p->models, ((size_t)(d->nmodels + nsd_models) + 1) * sizeof *p->models);
		p->inputs = NULL;
		p->consts = NULL;
		p->models = NULL;
		p->ninputs = 0;
		return base_nomem(err, "profile '%s'", d->name);
	}
	/* The counts below reach the allocated sizes (minus the spare one) before
	 * anything can fail, so release frees them with the right sizes. */
	for (int i = 0; i < d->ninputs; i++) {
		struct rank_input_info *ii = &p->inputs[i];
		const struct rank_input_decl *in = &d->inputs[i];
		ii->name = in->name;
		ii->rank = in->type.rank;
		for (int k = 0; k < in->type.rank; k++) {
			ii->dims[k] = in->type.dims[k];
			ii->dim_names[k] = in->type.dim_names[k];
		}
		ii->ncells = type_cells(&in->type);
	}
	for (int i = 0; i < d->nconstants; i++)
		p->consts[p->nconsts++] = &d->constants[i];
	for (int i = 0; i < sd->nconstants; i++) {
		int shadowed = 0;
		for (int j = 0; j < d->nconstants; j++)
			shadowed |= strcmp(d->constants[j].name, sd->constants[i].name) == 0;
		if (!shadowed)
			p->consts[p->nconsts++] = &sd->constants[i];
	}
	for (int i = 0; i < d->nmodels; i++)
		p->models[p->nmodels++].decl = &d->models[i];
	for (int i = 0; i < sd->nmodels; i++) {
		int shadowed = 0;
		for (int j = 0; j < d->nmodels; j++)
			shadowed |= strcmp(d->models[j].name, sd->models[i].name) == 0;
		if (!shadowed)
			p->models[p->nmodels++].decl = &sd->models[i];
	}
	/* allocation sizes for release: keep +1 counts consistent */
	int rc;
	for (int m = 0; m < d->nmodels; m++)
		if ((rc = compile_model(p, models, m, &d->models[m].pos, err)))
			return rc;
	if (d->first_phase) {
		if ((rc = compile_prog(p, models, d->first_phase, "first-phase", 0, 1, &p->first, err)))
			return rc;
	} else {
		struct rank_ast zero = { .kind = RA_NUM, .num = 0, .pos = d->pos };
		if ((rc = compile_prog(p, models, &zero, "first-phase", 0, 1, &p->first, err)))
			return rc;
	}
	p->has_first = d->first_phase != NULL;
	if (d->second_phase) {
		if ((rc = compile_prog(p, models, d->second_phase, "second-phase", 1, 1, &p->second, err)))
			return rc;
		p->has_second = 1;
	}
	p->global_rerank = d->global_rerank_count >= 0 ? d->global_rerank_count : 100;
	if (d->global_phase) {
		if ((rc = compile_prog_in(p, models, d->global_phase, "global-phase", 1, 1, 1,
		                          &p->global, err)))
			return rc;
		p->has_global = 1;
	}
	if (d->nmatch_features) {
		p->match = base_calloc((size_t)d->nmatch_features, sizeof *p->match);
		if (!p->match)
			return base_nomem(err, "profile '%s'", d->name);
		p->nmatch = d->nmatch_features;
		for (int i = 0; i < d->nmatch_features; i++) {
			const struct rank_ast *a = d->match_features[i];
			if ((rc = compile_prog(p, models, a, a->text ? a->text : "feature", 1, 0,
			                       &p->match[i], err)))
				return rc;
		}
	}
	if (d->nsummary_features) {
		p->summary = base_calloc((size_t)d->nsummary_features, sizeof *p->summary);
		if (!p->summary)
			return base_nomem(err, "profile '%s'", d->name);
		p->nsummary = d->nsummary_features;
		for (int i = 0; i < d->nsummary_features; i++) {
			const struct rank_ast *a = d->summary_features[i];
			if ((rc = compile_prog(p, models, a, a->text ? a->text : "feature", 1, 0,
			                       &p->summary[i], err)))
				return rc;
		}
	}
	return 0;
}

/* ---- EXPLAIN ---------------------------------------------------------------- */

struct sbuf {
	char *s;
	size_t n, cap;
	int fail;
};

static void sb_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
	if (b->fail)
		return;
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		int k = vsnprintf(b->s ? b->s + b->n : NULL, b->s ? b->cap - b->n : 0, fmt, ap);
		va_end(ap);
		if (k < 0) {
			b->fail = 1;
			return;
		}
		if (b->s && b->n + (size_t)k < b->cap) {
			b->n += (size_t)k;
			return;
		}
		size_t ncap = b->cap ? b->cap * 2 : 1024;
		while (ncap < b->n + (size_t)k + 1)
			ncap *= 2;
		char *ns = base_realloc(b->s, b->cap, ncap);
		if (!ns) {
			b->fail = 1;
			return;
		}
		b->s = ns;
		b->cap = ncap;
	}
}

static void explain_prog(struct sbuf *b, const struct rank_profile *p, const struct rank_prog *g)
{
	char tb[256];
	sb_printf(b, "program %s -> %s (%d instructions, %d locals%s)\n", g->name,
	          type_str(&p->types[g->result], tb, sizeof tb), g->ncode, g->nlocals,
	          g->doc_dependent ? "" : ", query-constant");
	for (int i = 0; i < g->ncode; i++) {
		const struct rank_ins *in = &g->code[i];
		sb_printf(b, "  %4d  %-7s", i, rank_op_name(in->op));
		switch (in->op) {
		case RANK_OP_NUM: sb_printf(b, " %.17g", in->k); break;
		case RANK_OP_ATTR: case RANK_OP_CLOSE:
			sb_printf(b, " %s", p->sd->fields[in->a].name);
			if (in->op == RANK_OP_CLOSE)
				sb_printf(b, " %s", in->b ? "distance" : "closeness");
			break;
		case RANK_OP_QUERY: sb_printf(b, " %s", p->decl->inputs[in->a].name); break;
		case RANK_OP_CONST: sb_printf(b, " %s", p->consts[in->a]->name); break;
		case RANK_OP_GET: case RANK_OP_SET: sb_printf(b, " local%d", in->a); break;
		case RANK_OP_UN: sb_printf(b, " %s", rank_fn_name(in->a, 0)); break;
		case RANK_OP_BIN: sb_printf(b, " %s", rank_fn_name(in->a, 1)); break;
		case RANK_OP_JUMP: case RANK_OP_JUMPF: sb_printf(b, " -> %d", in->a); break;
		case RANK_OP_NORM:
			sb_printf(b, " %d %s", in->a, p->norms[in->a].kind == RANK_NORM_LINEAR
			          ? "normalize_linear" : "reciprocal_rank");
			break;
		case RANK_OP_MAP:
			if (in->a >= 0)
				sb_printf(b, " lambda@%d(local%d)", in->a, in->b);
			else
				sb_printf(b, " %s", rank_fn_name(in->c, 0));
			break;
		case RANK_OP_JOIN:
			if (in->a >= 0)
				sb_printf(b, " lambda@%d(local%d,local%d)", in->a, in->b, in->b + 1);
			else
				sb_printf(b, " %s", rank_fn_name(in->c, 1));
			break;
		case RANK_OP_REDUCE: {
			static const char *const aggs[] = { "?", "sum", "avg", "max", "min", "prod",
			                                    "count" };
			sb_printf(b, " %s", aggs[in->a]);
			break;
		}
		case RANK_OP_ONNX: {
			const struct rank_cmodel *cm = &p->models[in->a];
			sb_printf(b, " %s.%s%s", cm->decl->name,
			          runtime_model_output(cm->rt, in->b)->name,
			          cm->batched ? " (batched in second phase)" : "");
			break;
		}
		}
		if (in->t > 0)
			sb_printf(b, "  : %s", type_str(&p->types[in->t], tb, sizeof tb));
		sb_printf(b, "\n");
	}
}

char *rank_profile_explain(const struct rank_profile *p)
{
	struct sbuf b = { 0 };
	sb_printf(&b, "profile %s (rerank-count %d)\n", p->decl->name, p->rerank);
	explain_prog(&b, p, &p->first);
	if (p->has_second)
		explain_prog(&b, p, &p->second);
	if (p->has_global) {
		sb_printf(&b, "global-phase rerank-count %d\n", p->global_rerank);
		for (int i = 0; i < p->nnorms; i++)
			explain_prog(&b, p, &p->norms[i].arg);
		explain_prog(&b, p, &p->global);
	}
	for (int i = 0; i < p->nmatch; i++)
		explain_prog(&b, p, &p->match[i]);
	for (int i = 0; i < p->nsummary; i++)
		explain_prog(&b, p, &p->summary[i]);
	for (int m = 0; m < p->nmodels; m++) {
		const struct rank_cmodel *cm = &p->models[m];
		if (cm->state != 2)
			continue;
		sb_printf(&b, "model %s (%s)%s\n", cm->decl->name, cm->decl->file,
		          cm->batched ? ": batched over second-phase candidates" : ": per document");
		for (int i = 0; i < cm->nin; i++)
			explain_prog(&b, p, &cm->src[i]);
	}
	if (b.fail) {
		base_free(b.s, b.cap);
		return NULL;
	}
	/* hand back a string base_strfree can release */
	char *out = base_strdup(b.s ? b.s : "");
	base_free(b.s, b.cap);
	return out;
}
