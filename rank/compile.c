/*
 * compile.c: rank-profile expressions -> flat programs.
 *
 * Sits between the parser (struct rank_sd, flattened profiles) and the VM.
 * Every expression is typed while it is emitted: a number is rank 0, a tensor
 * has named indexed or mapped dimensions (struct rank_type); values of types
 * with mapped dimensions take the S* instructions, dense ones the fast ones.
 * compile_base.c holds errors, the type table and emission, compile_tensor.c
 * the tensor constructs beyond map, join and reduce.  Features are resolved
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
 * the schema (which the application keeps), from static strings, or from
 * the profile's pool (types of literals and generators).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/runtime.h"
#include "rank_compile.h"

/* Dimension names of model outputs (Vespa names them d0, d1, ...). */
static const char *const dnames[RANK_MAX_RANK] = { "d0", "d1", "d2", "d3", "d4", "d5", "d6", "d7" };

/* Compile a's first two arguments, their types in *tx and *ty. */
static int compile2(struct cc *c, const struct env *env, const struct rank_ast *a, int *tx, int *ty)
{
	int rc = rank_cc_compile(c, env, a->args[0], tx);
	return rc ? rc : rank_cc_compile(c, env, a->args[1], ty);
}

/* Emit REDUCE over the dims named in names[0..n) (all when n == 0). */
static int emit_reduce(struct cc *c, const struct rank_ast *a, int tin, int agg,
                       int n, char *const *names, int *tout)
{
	const struct rank_type *in = T(c, tin);
	struct rank_type r = { .cell = in->cell };
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
			return rank_cc_at(c, a, STRATA_TYPE, "%s has no dimension '%s'",
			                  rank_cc_type_str(in, b, sizeof b), names[k]);
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
	if (r.rank == 0)
		r.cell = BASE_DT_DOUBLE; /* a number */
	if ((*tout = rank_cc_add_type(c->p, &r)) < 0)
		return rank_cc_nomem(c);
	EMIT(c, mapped(c, tin) ? RANK_OP_SREDUCE : RANK_OP_REDUCE, agg, 0, 0, tin, 0, *tout, 0);
	return 0;
}

/* Emit the combination of the two values on top of the stack by fn2. */
static int emit_bin(struct cc *c, const struct rank_ast *a, int fn, int tx, int ty, int *tr)
{
	int rc = rank_cc_join_type(c, a, tx, ty, tr);
	if (rc)
		return rc;
	if (*tr == 0)
		EMIT(c, RANK_OP_BIN, fn, 0, 0, 0, 0, 0, 0);
	else
		EMIT(c, mapped(c, *tr) ? RANK_OP_SJOIN : RANK_OP_JOIN, -1, 0, fn, tx, ty, *tr, 0);
	return 0;
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
	if ((*t = rank_cc_add_type(c->p, &r)) < 0)
		return rank_cc_nomem(c);
	return 0;
}

static int compile_attribute(struct cc *c, const struct rank_ast *a, int *type)
{
	if (a->nargs != 1 || rank_cc_name_arg(c, a->args[0], "an attribute name"))
		return rank_cc_at(c, a, STRATA_TYPE, "attribute() takes one field name");
	const char *name = a->args[0]->name;
	int fi = rank_sd_field_index(c->p->sd, name);
	if (fi < 0 || !c->p->sd->fields[fi].attribute)
		return rank_cc_at(c, a->args[0], STRATA_TYPE, "unknown attribute '%s'", name);
	const struct rank_field *f = &c->p->sd->fields[fi];
	if (f->type >= RANK_FT_ARRAY)
		return rank_cc_at(c, a->args[0], STRATA_NOT_IMPLEMENTED,
		                  "attribute '%s' is a %s, which rank expressions do not read", name,
		                  f->type == RANK_FT_REFERENCE ? "reference"
		                  : f->type == RANK_FT_PREDICATE ? "predicate"
		                  : f->type == RANK_FT_POSITION ? "position (read distance(f), closeness(f))"
		                  : "collection or struct");
	int rc = field_type(c, f, type);
	if (rc)
		return rc;
	c->prog->doc_dependent = 1;
	EMIT(c, RANK_OP_ATTR, fi, 0, 0, 0, 0, *type, 0);
	return 0;
}

static int compile_query(struct cc *c, const struct rank_ast *a, int *type)
{
	if (a->nargs != 1 || rank_cc_name_arg(c, a->args[0], "a query input name"))
		return rank_cc_at(c, a, STRATA_TYPE, "query() takes one input name");
	const char *name = a->args[0]->name;
	const struct rank_profile_decl *d = c->p->decl;
	for (int i = 0; i < d->ninputs; i++) {
		if (strcmp(d->inputs[i].name, name) != 0)
			continue;
		struct rank_type r = d->inputs[i].type;
		/* query values are held as doubles; the type keeps its cell type */
		if (r.rank == 0)
			r.cell = BASE_DT_DOUBLE;
		if ((*type = rank_cc_add_type(c->p, &r)) < 0)
			return rank_cc_nomem(c);
		EMIT(c, RANK_OP_QUERY, i, 0, 0, 0, 0, *type, 0);
		return 0;
	}
	return rank_cc_at(c, a->args[0], STRATA_TYPE,
	                  "query input '%s' is not declared in the inputs of profile '%s'", name,
	                  d->name);
}

static int compile_constant(struct cc *c, const struct rank_ast *a, int *type)
{
	if (a->nargs != 1 || rank_cc_name_arg(c, a->args[0], "a constant name"))
		return rank_cc_at(c, a, STRATA_TYPE, "constant() takes one name");
	const char *name = a->args[0]->name;
	for (int i = 0; i < c->p->nconsts; i++) {
		if (strcmp(c->p->consts[i]->name, name) != 0)
			continue;
		struct rank_type r = c->p->consts[i]->type;
		/* constant cells are parsed into doubles; the type keeps its cell type */
		if (r.rank == 0)
			r.cell = BASE_DT_DOUBLE;
		if ((*type = rank_cc_add_type(c->p, &r)) < 0)
			return rank_cc_nomem(c);
		EMIT(c, RANK_OP_CONST, i, 0, 0, 0, 0, *type, 0);
		return 0;
	}
	return rank_cc_at(c, a->args[0], STRATA_TYPE, "unknown constant '%s'", name);
}

static int compile_model(struct rank_profile *p, const struct rank_models *models, int m,
                         const struct rank_pos *use, struct strata_error *err);

static int compile_onnx(struct cc *c, const struct rank_ast *a, int *type)
{
	if (a->nargs != 1 || rank_cc_name_arg(c, a->args[0], "a model name"))
		return rank_cc_at(c, a, STRATA_TYPE, "onnx() takes one model name");
	const char *name = a->args[0]->name;
	int m;
	for (m = 0; m < c->p->nmodels; m++)
		if (strcmp(c->p->models[m].decl->name, name) == 0)
			break;
	if (m == c->p->nmodels)
		return rank_cc_at(c, a->args[0], STRATA_TYPE, "unknown onnx model '%s'", name);
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
			return rank_cc_at(c, a, STRATA_TYPE, "onnx model '%s' has no output '%s'", name,
			                  a->out);
	}
	c->prog->doc_dependent = 1;
	*type = cm->out_type[o];
	EMIT(c, RANK_OP_ONNX, m, o, 0, 0, 0, *type, 0);
	return 0;
}

static int close_field(struct cc *c, const struct rank_ast *arg, int distance, int *type);

/* closeness(field, f), closeness(label, l) and the distance forms; the
 * one-argument forms are compile_field_feature's. */
static int compile_close(struct cc *c, const struct rank_ast *a, int distance, int *type)
{
	const char *fname = distance ? "distance" : "closeness";
	if (a->nargs != 2 || rank_cc_name_arg(c, a->args[0], "'field'") ||
	    rank_cc_name_arg(c, a->args[1], "a field name"))
		return rank_cc_at(c, a, STRATA_TYPE, "%s() takes (field, name) or (name)", fname);
	if (strcmp(a->args[0]->name, "label") == 0)
		return rank_cc_close_label(c, a->args[1]->name, distance, type);
	if (strcmp(a->args[0]->name, "field") != 0)
		return rank_cc_at(c, a->args[0], STRATA_TYPE,
		                  "%s() takes 'field' or 'label' first, not '%s'", fname,
		                  a->args[0]->name);
	return close_field(c, a->args[1], distance, type);
}

/* closeness(field, f) or distance(field, f) of the tensor attribute named
 * by arg (Vespa's closeness(f) and distance(f) mean the same on one). */
static int close_field(struct cc *c, const struct rank_ast *arg, int distance, int *type)
{
	const char *fname = distance ? "distance" : "closeness";
	const char *name = arg->name;
	int fi = rank_sd_field_index(c->p->sd, name);
	if (fi < 0 || !c->p->sd->fields[fi].attribute)
		return rank_cc_at(c, arg, STRATA_TYPE, "unknown attribute '%s'", name);
	if (c->p->sd->fields[fi].type != RANK_FT_TENSOR)
		return rank_cc_at(c, arg, STRATA_TYPE, "attribute '%s' is not a tensor", name);
	for (int k = 0; k < c->p->sd->fields[fi].rank; k++)
		if (c->p->sd->fields[fi].dims[k] == RANK_DIM_MAPPED &&
		    !rank_field_multivec(&c->p->sd->fields[fi]))
			return rank_cc_at(c, arg, STRATA_TYPE,
			                  "attribute '%s' has mapped dimensions: %s() needs a dense "
			                  "tensor or one mapped and some indexed dimensions",
			                  name, fname);
	c->prog->doc_dependent = 1;
	*type = 0;
	EMIT(c, RANK_OP_CLOSE, fi, distance, 0, 0, 0, 0, 0);
	return 0;
}

/* bm25(f), fieldLength(f), matches(f): f a string field with a text index
 * (and index: enable-bm25 for bm25, as Vespa asks). */
static int compile_text(struct cc *c, const struct rank_ast *a, int *type)
{
	const char *fname = a->name;
	int kind = strcmp(fname, "bm25") == 0          ? RANK_TF_BM25
	           : strcmp(fname, "fieldLength") == 0 ? RANK_TF_FIELD_LENGTH
	                                               : RANK_TF_MATCHES;
	if (a->nargs != 1 || rank_cc_name_arg(c, a->args[0], "a field name"))
		return rank_cc_at(c, a, STRATA_TYPE, "%s() takes (field)", fname);
	const char *name = a->args[0]->name;
	int fi = rank_sd_field_index(c->p->sd, name);
	const struct rank_field *fd = fi >= 0 ? &c->p->sd->fields[fi] : NULL;
	if (!fd || rank_field_token_flags(fd) < 0)
		return rank_cc_at(c, a->args[0], STRATA_TYPE,
		                  "%s(): '%s' is not a field with a text index (indexing: index on "
		                  "a string)", fname, name);
	if (kind == RANK_TF_BM25 && !fd->bm25)
		return rank_cc_at(c, a->args[0], STRATA_TYPE,
		                  "bm25(%s) needs 'index: enable-bm25' on the field", name);
	c->prog->doc_dependent = 1;
	*type = 0;
	EMIT(c, RANK_OP_TEXT, kind, fi, 0, 0, 0, 0, 0);
	return 0;
}

/* Features of one field that the engine answers (RANK_OP_TEXT):
 * subqueries(f)[.lsb|.msb] of a predicate field; distance(f)[.km|.latitude|
 * .longitude] and closeness(f) of a position field. */
static int compile_field_feature(struct cc *c, const struct rank_ast *a, int *type)
{
	static const struct {
		const char *name, *out;
		int kind, ftype;
	} feats[] = {
		{"subqueries", NULL, RANK_TF_SUBQUERIES_LSB, RANK_FT_PREDICATE},
		{"subqueries", "lsb", RANK_TF_SUBQUERIES_LSB, RANK_FT_PREDICATE},
		{"subqueries", "msb", RANK_TF_SUBQUERIES_MSB, RANK_FT_PREDICATE},
		{"distance", NULL, RANK_TF_GEO_DISTANCE, RANK_FT_POSITION},
		{"distance", "km", RANK_TF_GEO_KM, RANK_FT_POSITION},
		{"distance", "latitude", RANK_TF_GEO_LATITUDE, RANK_FT_POSITION},
		{"distance", "longitude", RANK_TF_GEO_LONGITUDE, RANK_FT_POSITION},
		{"closeness", NULL, RANK_TF_GEO_CLOSENESS, RANK_FT_POSITION},
	};
	int k = -1;
	for (size_t i = 0; i < sizeof feats / sizeof feats[0] && k < 0; i++)
		if (!strcmp(a->name, feats[i].name) &&
		    (a->out ? feats[i].out && !strcmp(a->out, feats[i].out) : !feats[i].out))
			k = (int)i;
	if (k < 0 || a->nargs != 1 || rank_cc_name_arg(c, a->args[0], "a field name"))
		return rank_cc_at(c, a, STRATA_TYPE, "%s(field)%s%s is not a feature", a->name,
		                  a->out ? "." : "", a->out ? a->out : "");
	int fi = rank_sd_field_index(c->p->sd, a->args[0]->name);
	if (fi >= 0 && !a->out && c->p->sd->fields[fi].type == RANK_FT_TENSOR &&
	    feats[k].ftype == RANK_FT_POSITION)
		return close_field(c, a->args[0], a->name[0] == 'd', type);
	if (fi < 0 || c->p->sd->fields[fi].type != feats[k].ftype)
		return rank_cc_at(c, a->args[0], STRATA_TYPE, "%s(): '%s' is not a %s field", a->name,
		                  a->args[0]->name,
		                  feats[k].ftype == RANK_FT_POSITION ? "position" : "predicate");
	c->prog->doc_dependent = 1;
	*type = 0;
	EMIT(c, RANK_OP_TEXT, feats[k].kind, fi, 0, 0, 0, 0, 0);
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


/* sum(t) / reduce(t, agg, dims...) / avg(t, d) ...: fuses sum(x * y) over
 * same-typed operands into DOT so neither is materialized. */
static int compile_reduce(struct cc *c, const struct env *env, const struct rank_ast *a, int agg,
                          int dims_from, int *type)
{
	char *names[RANK_MAX_RANK];
	int n, rc = rank_cc_dim_args(c, a, dims_from, names, &n);
	if (rc)
		return rc;
	const struct rank_ast *x = a->args[0];
	if (agg == RANK_AGG_SUM && n == 0 && x->kind == RA_BINARY && x->op == RB_MUL) {
		int t1, t2;
		if ((rc = compile2(c, env, x, &t1, &t2)))
			return rc;
		if (T(c, t1)->rank > 0 && !mapped(c, t1) && rank_type_same_dims(T(c, t1), T(c, t2))) {
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
	if ((rc = rank_cc_compile(c, env, x, &t)))
		return rc;
	return emit_reduce(c, a, t, agg, n, names, type);
}


/* euclidean_distance(a, b, dim): sqrt(sum((a - b)^2, dim));
 * cosine_similarity(a, b, dim): sum(a * b, dim) / sqrt(sum(a * a, dim) *
 * sum(b * b, dim)).  Each operand is evaluated once, into a local. */
static int compile_distance(struct cc *c, const struct env *env, const struct rank_ast *a,
                            int euclid, int *type)
{
	char *names[RANK_MAX_RANK];
	int n, t, t2, tj, tr, rc;
	if (a->nargs != 3)
		return rank_cc_at(c, a, STRATA_TYPE, "%s(a, b, dim)", a->name);
	if ((rc = rank_cc_dim_args(c, a, 2, names, &n)) || (rc = compile2(c, env, a, &t, &t2)))
		return rc;
	if (euclid) {
		int L = rank_cc_new_local(c);
		if ((rc = emit_bin(c, a, RB_SUB, t, t2, &tj)))
			return rc;
		EMIT(c, RANK_OP_SET, L, 0, 0, 0, 0, -1, 0);
		EMIT(c, RANK_OP_GET, L, 0, 0, 0, 0, tj, 0);
		EMIT(c, RANK_OP_GET, L, 0, 0, 0, 0, tj, 0);
		if ((rc = emit_bin(c, a, RB_MUL, tj, tj, &tj)) ||
		    (rc = emit_reduce(c, a, tj, RANK_AGG_SUM, n, names, &tr)))
			return rc;
		return rank_cc_emit_un(c, RANK_FN_SQRT, tr, type);
	}
	int La = rank_cc_new_local(c), Lb = rank_cc_new_local(c), tab, taa, tbb;
	EMIT(c, RANK_OP_SET, Lb, 0, 0, 0, 0, -1, 0);
	EMIT(c, RANK_OP_SET, La, 0, 0, 0, 0, -1, 0);
	int sides[3][2] = { { La, Lb }, { La, La }, { Lb, Lb } }, *out[3] = { &tab, &taa, &tbb };
	for (int k = 0; k < 3; k++) {
		int tx = sides[k][0] == La ? t : t2, ty = sides[k][1] == La ? t : t2;
		EMIT(c, RANK_OP_GET, sides[k][0], 0, 0, 0, 0, tx, 0);
		EMIT(c, RANK_OP_GET, sides[k][1], 0, 0, 0, 0, ty, 0);
		if ((rc = emit_bin(c, a, RB_MUL, tx, ty, &tj)) ||
		    (rc = emit_reduce(c, a, tj, RANK_AGG_SUM, n, names, out[k])))
			return rc;
	}
	if ((rc = emit_bin(c, a, RB_MUL, taa, tbb, &tr)) ||
	    (rc = rank_cc_emit_un(c, RANK_FN_SQRT, tr, &tr)))
		return rc;
	return emit_bin(c, a, RB_DIV, tab, tr, type);
}

static int compile_tensor_fn(struct cc *c, const struct env *env, const struct rank_ast *a,
                             int *type, int *handled)
{
	const char *f = a->name;
	int rc, t, t2;
	*handled = 1;
	if (strcmp(f, "reduce") == 0) {
		if (a->nargs < 2 || rank_cc_name_arg(c, a->args[1], "an aggregator"))
			return rank_cc_at(c, a, STRATA_TYPE, "reduce(tensor, aggregator, dims...)");
		int agg = agg_of(a->args[1]->name);
		if (!agg)
			return rank_cc_at(c, a->args[1], STRATA_TYPE, "unknown aggregator '%s'",
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
			return rank_cc_at(c, a, STRATA_TYPE, "map(tensor, f(x)(...))");
		if ((rc = rank_cc_compile(c, env, a->args[0], &t)))
			return rc;
		int pc, base;
		if ((rc = rank_cc_lambda(c, a->args[1], 1, &pc, &base)))
			return rc;
		if (T(c, t)->rank == 0) {
			/* map over a number: run the lambda once */
			*type = 0;
			EMIT(c, RANK_OP_MAP, pc, base, 0, 0, 0, 0, 0);
			return 0;
		}
		*type = t; /* a map keeps the type */
		EMIT(c, mapped(c, t) ? RANK_OP_SMAP : RANK_OP_MAP, pc, base, 0, t, 0, *type, 0);
		return 0;
	}
	if (strcmp(f, "join") == 0) {
		if (a->nargs != 3)
			return rank_cc_at(c, a, STRATA_TYPE, "join(a, b, f(x,y)(...))");
		if ((rc = compile2(c, env, a, &t, &t2)))
			return rc;
		int pc, base;
		if ((rc = rank_cc_lambda(c, a->args[2], 2, &pc, &base)))
			return rc;
		if ((rc = rank_cc_join_type(c, a, t, t2, type)))
			return rc;
		EMIT(c, mapped(c, *type) ? RANK_OP_SJOIN : RANK_OP_JOIN, pc, base, 0, t, t2, *type, 0);
		return 0;
	}
	if (strcmp(f, "merge") == 0)
		return rank_cc_merge(c, env, a, type);
	if (strcmp(f, "cell_cast") == 0)
		return rank_cc_cell_cast(c, env, a, type);
	if (strcmp(f, "unpack_bits") == 0)
		return rank_cc_unpack_bits(c, env, a, type);
	if (strcmp(f, "top") == 0)
		return rank_cc_top(c, env, a, type);
	if (strcmp(f, "matmul") == 0) {
		char *names[RANK_MAX_RANK];
		int n, tj;
		if (a->nargs < 3)
			return rank_cc_at(c, a, STRATA_TYPE, "matmul(a, b, dim)");
		if ((rc = rank_cc_dim_args(c, a, 2, names, &n)))
			return rc;
		if ((rc = compile2(c, env, a, &t, &t2)))
			return rc;
		if ((rc = emit_bin(c, a, RB_MUL, t, t2, &tj)))
			return rc;
		return emit_reduce(c, a, tj, RANK_AGG_SUM, n, names, type);
	}
	if (strcmp(f, "$in") == 0)
		return rank_cc_in(c, env, a, type);
	if (strcmp(f, "$slice") == 0)
		return rank_cc_slice(c, env, a, type);
	if (strcmp(f, "rename") == 0)
		return rank_cc_rename(c, env, a, type);
	if (strcmp(f, "concat") == 0)
		return rank_cc_concat(c, env, a, type);
	if (strcmp(f, "euclidean_distance") == 0 || strcmp(f, "cosine_similarity") == 0)
		return compile_distance(c, env, a, f[0] == 'e', type);
	int l2 = strcmp(f, "l2_normalize") == 0, sm = strcmp(f, "softmax") == 0;
	int l1 = strcmp(f, "l1_normalize") == 0;
	int am = strcmp(f, "argmax") == 0, an = strcmp(f, "argmin") == 0;
	if (l2 || sm || l1 || am || an) {
		char *names[RANK_MAX_RANK];
		int n;
		if (a->nargs < 2)
			return rank_cc_at(c, a, STRATA_TYPE, "%s(tensor, dim)", f);
		if ((rc = rank_cc_dim_args(c, a, 1, names, &n)))
			return rc;
		if ((rc = rank_cc_compile(c, env, a->args[0], &t)))
			return rc;
		if (T(c, t)->rank == 0)
			return rank_cc_at(c, a->args[0], STRATA_TYPE, "%s() needs a tensor", f);
		if (sm && (rc = rank_cc_emit_un(c, RANK_FN_EXP, t, &t)))
			return rc;
		int L = rank_cc_new_local(c), tr, tt;
		EMIT(c, RANK_OP_SET, L, 0, 0, 0, 0, -1, 0);
		EMIT(c, RANK_OP_GET, L, 0, 0, 0, 0, t, 0);
		EMIT(c, RANK_OP_GET, L, 0, 0, 0, 0, t, 0);
		if (l2) {
			/* t / sqrt(sum(t * t, dim)) */
			EMIT(c, RANK_OP_GET, L, 0, 0, 0, 0, t, 0);
			if ((rc = emit_bin(c, a, RB_MUL, t, t, &tt)) ||
			    (rc = emit_reduce(c, a, tt, RANK_AGG_SUM, n, names, &tr)) ||
			    (rc = rank_cc_emit_un(c, RANK_FN_SQRT, tr, &tr)))
				return rc;
			return emit_bin(c, a, RB_DIV, t, tr, type);
		}
		if (sm || l1) /* exp(t) / sum(exp(t), dim); t / sum(t, dim) */
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
			return rank_cc_at(c, a, STRATA_TYPE, "function '%s' calls itself", fn->name);
	int nargs = a->kind == RA_CALL ? a->nargs : 0;
	if (nargs != fn->nparams)
		return rank_cc_at(c, a, STRATA_TYPE, "function '%s' takes %d argument%s, not %d", fn->name,
		                  fn->nparams, fn->nparams == 1 ? "" : "s", nargs);
	int locals[64], types[64];
	if (nargs > 64)
		return rank_cc_at(c, a, STRATA_LIMIT, "more than 64 arguments");
	for (int i = 0; i < nargs; i++) {
		int rc = rank_cc_compile(c, env, a->args[i], &types[i]);
		if (rc)
			return rc;
		locals[i] = rank_cc_new_local(c);
		EMIT(c, RANK_OP_SET, locals[i], 0, 0, 0, 0, -1, 0);
	}
	/* The body sees only its parameters and profile-level names: parameters
	 * of the caller are not in scope, but recursion through callers is
	 * still detected along up. */
	struct env e = { env, fn, 0, nargs, fn->params, locals, types,
	                 a->kind == RA_CALL ? a->args : NULL };
	return rank_cc_compile(c, &e, fn->body, type);
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
	const struct rank_loader *loader = c->models ? c->models->loader : NULL;
	int rc = rank_gbdt_load(c->p->sd->file, a, loader, &g, c->err);
	if (rc)
		return rc;
	size_t n = (size_t)g->nfeatures + 1;
	int *locals = base_calloc(n, sizeof *locals), *types = base_calloc(n, sizeof *types);
	if (!locals || !types)
		rc = rank_cc_nomem(c);
	for (int i = 0; !rc && i < g->nfeatures; i++) {
		rc = rank_cc_compile(c, env, g->features[i], &types[i]);
		if (!rc && T(c, types[i])->rank != 0)
			rc = rank_cc_at(c, a, STRATA_TYPE, "feature '%s' is a tensor, not a number",
			                g->names[i]);
		locals[i] = rank_cc_new_local(c);
		if (!rc && rank_cc_emit(c, RANK_OP_SET, locals[i], 0, 0, 0, 0, -1, 0) < 0)
			rc = rank_cc_nomem(c);
		if (rc && rc != STRATA_NOMEM) {
			/* say which model and feature: "sd:l:c: lightgbm model 'f': ..." */
			char pre[512], msg[STRATA_ERRMSG_MAX];
			int k = snprintf(pre, sizeof pre, "%s:%d:%d: ", a->pos.file ? a->pos.file : "?",
			                 a->pos.line, a->pos.col);
			const char *m = c->err->msg;
			snprintf(msg, sizeof msg, "%s", strncmp(m, pre, (size_t)k) ? m : m + k);
			rc = rank_cc_at(c, a, rc, "%s model '%s': feature '%s': %s", a->name,
			                a->args[0]->name, g->names[i], msg);
		}
	}
	struct env e = { env, NULL, 0, g->nfeatures, g->names, locals, types, NULL };
	if (!rc && (rc = rank_cc_compile(c, &e, g->body, type)) == STRATA_LIMIT) {
		char msg[STRATA_ERRMSG_MAX];
		snprintf(msg, sizeof msg, "%s", c->err->msg);
		rc = rank_cc_at(c, a, rc, "%s model '%s' is too large: %s", a->name, a->args[0]->name,
		                msg);
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
		return rank_cc_nomem(c);
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
		return rank_cc_at(c, a, STRATA_TYPE, "%s() is only available in global-phase", f);
	if (c->global == 2)
		return rank_cc_at(c, a, STRATA_TYPE, "%s() cannot be nested in another normalizer", f);
	if (a->nargs < 1 || (linear && a->nargs != 1) || (!linear && !fusion && a->nargs > 2))
		return rank_cc_at(c, a, STRATA_TYPE, "%s",
		                  linear ? "normalize_linear(x) takes one argument"
		                  : fusion ? "reciprocal_rank_fusion(x, y, ...) takes one or more arguments"
		                  : "reciprocal_rank(x) or reciprocal_rank(x, k) is expected");
	double k = 60.0;
	if (!linear && !fusion && a->nargs == 2) {
		const struct rank_ast *ka = a->args[1];
		if (ka->kind == RA_UNARY && ka->op == '-' && ka->args[0]->kind == RA_NUM)
			return rank_cc_at(c, ka, STRATA_TYPE,
			                  "the k of reciprocal_rank() must not be negative");
		if (ka->kind != RA_NUM)
			return rank_cc_at(c, ka, STRATA_TYPE, "the k of reciprocal_rank() must be a number");
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
		return rank_cc_at(c, a, STRATA_TYPE, "a lambda may only use its parameters, not %s()", f);
	int handled;
	if (!in_lambda(env) && !find_function(c->p->decl, f) &&
	    ((rc = rank_cc_feature(c, env, a, type, &handled)) || handled))
		return rc;
	if (strcmp(f, "subqueries") == 0 ||
	    ((strcmp(f, "distance") == 0 || strcmp(f, "closeness") == 0) && a->nargs == 1))
		return compile_field_feature(c, a, type);
	if (a->out && strcmp(f, "onnx") != 0 && strcmp(f, "onnxModel") != 0)
		return rank_cc_at(c, a, STRATA_TYPE, "'.%s' after %s(): only onnx() has outputs", a->out,
		                  f);
	if (strcmp(f, "normalize_linear") == 0 || strcmp(f, "reciprocal_rank") == 0 ||
	    strcmp(f, "reciprocal_rank_fusion") == 0)
		return compile_norm(c, a, type);
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
	if (strcmp(f, "bm25") == 0 || strcmp(f, "fieldLength") == 0 || strcmp(f, "matches") == 0)
		return compile_text(c, a, type);
	if (strcmp(f, "rawScore") == 0 || strcmp(f, "itemRawScore") == 0)
		return rank_cc_raw_score(c, a, type);
	if (strcmp(f, "lightgbm") == 0 || strcmp(f, "xgboost") == 0)
		return compile_gbdt(c, env, a, type);
	if (!in_lambda(env)) {
		const struct rank_function_decl *fn = find_function(c->p->decl, f);
		if (fn)
			return compile_user(c, env, a, fn, type);
		if (strcmp(f, "rankingExpression") == 0) {
			/* rankingExpression(f): the function f of no arguments */
			const struct rank_ast *n = a->nargs == 1 ? a->args[0] : NULL;
			if (!n || (n->kind != RA_NAME && n->kind != RA_STR))
				return rank_cc_at(c, a, STRATA_TYPE,
				                  "rankingExpression() takes the name of a function");
			if (!(fn = find_function(c->p->decl, n->name)))
				return rank_cc_at(c, n, STRATA_TYPE,
				                  "rankingExpression(%s): no function '%s' in profile '%s' "
				                  "(an expression in quotes is not supported)",
				                  n->name, n->name, c->p->decl->name);
			struct rank_ast call = *n;
			call.kind = RA_NAME;
			return compile_user(c, env, &call, fn, type);
		}
	}
	if (strcmp(f, "if") == 0) {
		if (a->nargs != 3)
			return rank_cc_at(c, a, STRATA_TYPE, "if(condition, then, else)");
		if ((rc = rank_cc_compile(c, env, a->args[0], &t)))
			return rc;
		if (T(c, t)->rank != 0)
			return rank_cc_at(c, a->args[0], STRATA_TYPE, "the condition of if() must be a number");
		int jf = rank_cc_emit(c, RANK_OP_JUMPF, 0, 0, 0, 0, 0, -1, 0);
		if (jf < 0 || (rc = rank_cc_compile(c, env, a->args[1], &t)))
			return jf < 0 ? rank_cc_nomem(c) : rc;
		int j = rank_cc_emit(c, RANK_OP_JUMP, 0, 0, 0, 0, 0, -1, 0);
		if (j < 0)
			return rank_cc_nomem(c);
		c->prog->code[jf].a = c->prog->ncode;
		if ((rc = rank_cc_compile(c, env, a->args[2], &t2)))
			return rc;
		c->prog->code[j].a = c->prog->ncode;
		if (!rank_type_same_dims(T(c, t), T(c, t2))) {
			char b1[256], b2[256];
			return rank_cc_at(c, a, STRATA_TYPE, "the branches of if() differ: %s and %s",
			                  rank_cc_type_str(T(c, t), b1, sizeof b1),
			                  rank_cc_type_str(T(c, t2), b2, sizeof b2));
		}
		/* Both branches leave the same shape; the value says its own cell
		 * type, so branches of two cell types give a double result type, as
		 * Vespa unifies them. */
		*type = t;
		if (T(c, t)->cell != T(c, t2)->cell) {
			struct rank_type r = *T(c, t);
			r.cell = BASE_DT_DOUBLE;
			if ((*type = rank_cc_add_type(c->p, &r)) < 0)
				return rank_cc_nomem(c);
		}
		return 0;
	}
	if ((rc = compile_tensor_fn(c, env, a, type, &handled)) || handled)
		return rc;
	int fn = rank_fn_unary(f);
	if (fn) {
		if (a->nargs != 1)
			return rank_cc_at(c, a, STRATA_TYPE, "%s() takes one argument", f);
		if ((rc = rank_cc_compile(c, env, a->args[0], &t)))
			return rc;
		return rank_cc_emit_un(c, fn, t, type);
	}
	if ((fn = rank_fn_binary(f))) {
		if (a->nargs != 2)
			return rank_cc_at(c, a, STRATA_TYPE, "%s() takes two arguments", f);
		if ((rc = compile2(c, env, a, &t, &t2)))
			return rc;
		return emit_bin(c, a, fn, t, t2, type);
	}
	if (strcmp(f, "firstPhase") == 0 && a->nargs == 0)
		goto first_phase;
	return rank_cc_at(c, a, STRATA_TYPE, "unknown function or feature '%s'", f);
first_phase:
	if (!c->allow_first)
		return rank_cc_at(c, a, STRATA_TYPE, "firstPhase is only available after the first phase");
	c->prog->doc_dependent = 1;
	*type = 0;
	EMIT(c, RANK_OP_FIRST, 0, 0, 0, 0, 0, 0, 0);
	return 0;
}

int rank_cc_compile(struct cc *c, const struct env *env, const struct rank_ast *a, int *type)
{
	int rc, t, t2, local;
	switch (a->kind) {
	case RA_NUM:
		*type = 0;
		EMIT(c, RANK_OP_NUM, 0, 0, 0, 0, 0, 0, a->num);
		return 0;
	case RA_STR: /* its hash, which a string attribute or input equals */
		*type = 0;
		EMIT(c, RANK_OP_NUM, 0, 0, 0, 0, 0, 0, rank_string_hash(a->name, strlen(a->name)));
		return 0;
	case RA_NAME:
		if (lookup_name(env, a->name, &local, type)) {
			EMIT(c, RANK_OP_GET, local, 0, 0, 0, 0, *type, 0);
			return 0;
		}
		if (in_lambda(env))
			return rank_cc_at(c, a, STRATA_TYPE, "'%s' is not a parameter of the lambda", a->name);
		if (find_function(c->p->decl, a->name))
			return compile_user(c, env, a, find_function(c->p->decl, a->name), type);
		if (strcmp(a->name, "firstPhase") == 0) {
			if (!c->allow_first)
				return rank_cc_at(c, a, STRATA_TYPE,
				                  "firstPhase is only available after the first phase");
			c->prog->doc_dependent = 1;
			*type = 0;
			EMIT(c, RANK_OP_FIRST, 0, 0, 0, 0, 0, 0, 0);
			return 0;
		}
		int handled;
		if ((rc = rank_cc_feature(c, env, a, type, &handled)) || handled)
			return rc;
		return rank_cc_at(c, a, STRATA_TYPE, "unknown name '%s'", a->name);
	case RA_CALL:
		return compile_call(c, env, a, type);
	case RA_UNARY:
		if ((rc = rank_cc_compile(c, env, a->args[0], &t)))
			return rc;
		return rank_cc_emit_un(c, a->op == '!' ? RANK_FN_NOT : RANK_FN_NEG, t, type);
	case RA_BINARY:
		if ((rc = compile2(c, env, a, &t, &t2)))
			return rc;
		return emit_bin(c, a, a->op, t, t2, type);
	case RA_LAMBDA:
		return rank_cc_at(c, a, STRATA_TYPE,
		                  "a lambda is only valid as an argument of map or join");
	case RA_TENSOR:
		return rank_cc_literal(c, env, a, type);
	case RA_GEN:
		return rank_cc_generator(c, env, a, type);
	}
	return rank_cc_at(c, a, STRATA_TYPE, "unexpected expression");
}

void rank_prog_release(struct rank_prog *prog)
{
	base_free(prog->code, (size_t)prog->capcode * sizeof *prog->code);
	base_strfree(prog->name);
	memset(prog, 0, sizeof *prog);
}

/* Compile a into prog.  must_be_number: 1 for phases (a number), 0 for
 * model inputs (any dense value), 2 for a standalone expression and 3 for
 * match and summary features (mapped dimensions too); global as in
 * struct cc. */
static int compile_prog_in(struct rank_profile *p, const struct rank_models *models,
                           const struct rank_ast *a, const char *name, int allow_first,
                           int must_be_number, int global, struct rank_prog *prog,
                           struct strata_error *err)
{
	memset(prog, 0, sizeof *prog);
	prog->name = base_strdup(name);
	if (!prog->name)
		return base_nomem(err, "compiling %s", name);
	struct cc c = { p, models, prog, err, allow_first, 0, global, rank_cc_compile };
	int t, rc = rank_cc_compile(&c, NULL, a, &t);
	if (rc)
		return rc;
	if (must_be_number < 2 && rank_type_mapped(&p->types[t]) > 0)
		return rank_cc_at(&c, a, STRATA_NOT_IMPLEMENTED,
		                  "%s: tensors with mapped dimensions are not supported here", name);
	if (must_be_number == 1 && p->types[t].rank != 0) {
		char b[256];
		return rank_cc_at(&c, a, STRATA_TYPE, "%s must produce a number, not %s", name,
		                  rank_cc_type_str(&p->types[t], b, sizeof b));
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
	return compile_prog(p, NULL, a, a->text ? a->text : "expression", 1, 2, prog, err);
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
		return rank_pos_err(err, use, STRATA_TYPE, "onnx model '%s' depends on itself", d->name);
	for (int i = 0; models && i < models->n && !cm->rt; i++)
		if (models->refs[i].decl == d)
			cm->rt = models->refs[i].rt;
	if (!cm->rt)
		return rank_pos_err(err, use, STRATA_NOT_FOUND, "onnx model '%s' is not loaded", d->name);
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
			return rank_pos_err(err, &d->inputs[i].pos, STRATA_TYPE,
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
			return rank_pos_err(err, &d->pos, STRATA_TYPE,
			                    "onnx model '%s': input '%s' has no source (add input \"%s\": ...)",
			                    d->name, info->name, info->name);
		}
		if (rc)
			return rc;
		const struct rank_type *st = &p->types[cm->src[i].result];
		if (!input_fits(info, st, &cm->extra[i])) {
			char b1[256], b2[256];
			return rank_pos_err(err, mi ? &mi->pos : &d->pos, STRATA_TYPE,
			                    "onnx model '%s' input '%s' is %s, its source is %s", d->name,
			                    info->name, info_str(info, b1, sizeof b1),
			                    rank_cc_type_str(st, b2, sizeof b2));
		}
		any_extra |= cm->extra[i];
		if (cm->src[i].doc_dependent && !cm->extra[i])
			doc_all_extra = 0;
	}
	int outs_batch = 1;
	for (int o = 0; o < cm->nout; o++) {
		const struct rt_value_info *info = runtime_model_output(rt, o);
		if (info->rank < 0)
			return rank_pos_err(err, &d->pos, STRATA_NOT_IMPLEMENTED,
			                    "onnx model '%s' output '%s' has no declared shape", d->name,
			                    info->name);
		struct rank_type r = { .cell = info->dtype, .rank = info->rank };
		if (base_dtype_size(info->dtype) == 0 || info->dtype == BASE_DT_STRING)
			return rank_pos_err(err, &d->pos, STRATA_TYPE,
			                    "onnx model '%s' output '%s' is not numeric", d->name, info->name);
		for (int k = 0; k < info->rank; k++) {
			/* A symbolic dimension is one document's worth: size 1. */
			r.dims[k] = info->dims[k] < 0 ? 1 : info->dims[k];
			r.dim_names[k] = (char *)dnames[k];
		}
		if ((cm->out_type[o] = rank_cc_add_type(p, &r)) < 0)
			return base_nomem(err, "model '%s'", d->name);
		cm->out_cells[o] = rank_type_cells(&r);
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
	base_free(p->lits, (size_t)p->caplits * sizeof *p->lits);
	base_free(p->peeks, (size_t)p->cappeeks * sizeof *p->peeks);
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
	if (rank_cc_add_type(p, &num) != 0)
		return base_nomem(err, "profile '%s'", d->name);
	p->rerank = d->rerank_count >= 0 ? d->rerank_count : 100;
	int rc = rank_fprops_resolve(p, err);
	if (rc)
		return rc;

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
		ii->ncells = rank_type_cells(&in->type);
		ii->cell = in->type.cell;
		ii->string = in->string;
		ii->implicit = in->implicit;
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
	for (int m = 0; m < d->nmodels; m++)
		if ((rc = compile_model(p, models, m, &d->models[m].pos, err)))
			return rc;
	if (d->first_phase) {
		if ((rc = compile_prog(p, models, d->first_phase, "first-phase", 0, 1, &p->first, err)))
			return rc;
	} else {
		/* Vespa's first phase where a profile names none: nativeRank
		 * over every field (0 for a schema without text fields). */
		struct rank_ast *native;
		if ((rc = rank_expr_parse(d->name, "nativeRank", &native, err)))
			return rc;
		native->pos = d->pos;
		rc = compile_prog(p, models, native, "first-phase", 0, 1, &p->first, err);
		rank_ast_free(native);
		if (rc)
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
			if ((rc = compile_prog(p, models, a, a->text ? a->text : "feature", 1, 3,
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
			if ((rc = compile_prog(p, models, a, a->text ? a->text : "feature", 1, 3,
			                       &p->summary[i], err)))
				return rc;
		}
	}
	return 0;
}
