/*
 * vm.c: runs compiled rank programs for one document.
 *
 * One dispatch loop (exec) over the flat instruction array compile.c emits;
 * the opcodes are documented at enum rank_opcode in rank_eval.h.  A value is a
 * number or a pointer to dense cells of some BASE_DT_* type: attribute cells
 * come straight from the rank_docs callback (the store's memory map), query
 * and constant tensors from where the query and the profile keep them, model
 * outputs from the runtime context.  Only computed tensors are new memory,
 * taken from the query's arena, which the caller resets per document.  The
 * VM does not run models itself: ONNX asks the query's model_value (model.c),
 * which runs the model's input programs here in turn.
 *
 * Stack discipline: each program run takes a frame of nlocals + ncode slots
 * from the query's value stack (instructions push at most one value each and
 * never jump backwards, so ncode bounds the depth).  A model input evaluated
 * from inside ONNX takes the next frame; rank_query_new sized the stack for
 * every program of the profile at once, which bounds any nesting since
 * models cannot depend on themselves.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "rank_eval.h"

static const char *const op_names[RANK_OP_COUNT_] = {
	"?", "NUM", "ATTR", "QUERY", "CONST", "FIRST", "GET", "SET", "UN", "BIN",
	"JUMPF", "JUMP", "RET", "MAP", "JOIN", "REDUCE", "DOT", "CLOSE", "ONNX", "CONCAT",
	"LIT", "GEN", "SMAP", "SJOIN", "SREDUCE", "SMERGE", "PEEK", "SCONCAT", "NORM", "TEXT",
	"NOW", "TERM", "RANDOM", "UNPACK", "TOP",
};

const char *rank_op_name(int op)
{
	return op > 0 && op < RANK_OP_COUNT_ ? op_names[op] : "?";
}

struct vm {
	struct rank_query *q;
	const struct rank_prog *prog;
	struct rank_val *locals;
	struct strata_error *err;
};

static int exec(struct vm *x, int pc, struct rank_val *sp, struct rank_val *res);

static const struct rank_type *type_of(const struct vm *x, int t)
{
	return &x->q->p->types[t];
}

static size_t ncells(const struct rank_type *t)
{
	size_t n = 1;
	for (int i = 0; i < t->rank; i++)
		n *= (size_t)t->dims[i];
	return n;
}

static void set_num(struct rank_val *v, double d)
{
	v->cells = NULL;
	v->num = d;
	v->cell = BASE_DT_DOUBLE;
}

static void set_cells(struct rank_val *v, const void *cells, int cell)
{
	v->cells = cells;
	v->num = 0;
	v->cell = cell;
}

/* A lambda run per cell: its parameters go to locals base and, for join's
 * two, base + 1 (a map's lambda has one local only). */
struct lambda {
	struct vm *x;
	int pc, base, nparams;
	struct rank_val *sp;
};

static double run_lambda(void *ud, double a, double b)
{
	struct lambda *l = ud;
	struct rank_val r;
	set_num(&l->x->locals[l->base], a);
	if (l->nparams == 2)
		set_num(&l->x->locals[l->base + 1], b);
	/* Lambda bodies are scalar code (compile.c admits no features there),
	 * so they cannot fail. */
	int rc = exec(l->x, l->pc, l->sp, &r);
	BASE_ASSERT(rc == 0);
	return r.num;
}

static double run_fn1(void *ud, double a, double b)
{
	(void)b;
	return rank_fn1(*(const int *)ud, a);
}

static double run_fn2(void *ud, double a, double b)
{
	return rank_fn2(*(const int *)ud, a, b);
}

/* A computed label of a mapped dimension: the number as text ("3",
 * "0.5"), in the arena. */
static const char *number_label(struct base_arena *a, double d)
{
	char buf[32];
	int n = snprintf(buf, sizeof buf, "%.17g", d);
	char *s = base_arena_alloc(a, (size_t)n + 1, 1);
	if (s)
		memcpy(s, buf, (size_t)n + 1);
	return s;
}

static int oom(struct vm *x)
{
	return base_nomem(x->err, "evaluating %s", x->prog->name);
}

static int load_attr(struct vm *x, int field, int t, struct rank_val *v)
{
	struct rank_query *q = x->q;
	const struct rank_field *f = &q->p->sd->fields[field];
	const void *p = q->docs ? q->docs->attr(q->docs->ud, field, q->lid) : NULL;
	if (rank_type_mapped(type_of(x, t))) {
		/* a tensor field of a mapped type, or a collection read as one
		 * (tensorFromLabels, tensorFromWeightedSet) */
		/* A document without the tensor reads as the empty tensor. */
		static const struct rank_sparse empty;
		set_cells(v, p ? p : &empty, BASE_DT_UNDEFINED);
		return 0;
	}
	if (f->type == RANK_FT_TENSOR) {
		if (!p) {
			/* A document without the tensor reads as zeros (Vespa's
			 * empty dense tensor). */
			size_t n = ncells(type_of(x, t)) * base_dtype_size(f->cell);
			void *z = base_arena_alloc(&q->arena, n ? n : 1, 64);
			if (!z)
				return oom(x);
			memset(z, 0, n);
			p = z;
		}
		set_cells(v, p, f->cell);
		return 0;
	}
	double d = 0.0;
	if (p) {
		switch (f->type) {
		case RANK_FT_INT: d = *(const int32_t *)p; break;
		case RANK_FT_LONG: d = (double)*(const int64_t *)p; break;
		case RANK_FT_FLOAT: d = *(const float *)p; break;
		case RANK_FT_DOUBLE: d = *(const double *)p; break;
		case RANK_FT_BOOL: d = *(const uint8_t *)p != 0; break;
		case RANK_FT_STRING: d = *(const double *)p; break; /* its hash */
		}
	}
	set_num(v, d);
	return 0;
}

/* The labels "0" to "n-1" of the query's terms, made once per query. */
static const char **term_labels(struct rank_query *q, int n)
{
	if (n <= q->nterm_labels)
		return q->term_labels;
	const char **l = base_arena_alloc(&q->in_arena, (size_t)n * sizeof *l, 8);
	if (!l)
		return NULL;
	for (int i = 0; i < n; i++) {
		char label[16];
		snprintf(label, sizeof label, "%d", i);
		if (!(l[i] = base_arena_strdup(&q->in_arena, label)))
			return NULL;
	}
	q->term_labels = l;
	q->nterm_labels = n;
	return l;
}

/* TERM of a tensor(term{}) type: a cell per query term whose feature is
 * not NaN, labelled with the term's number. */
static int term_tensor(struct vm *x, const struct rank_ins *in, struct rank_val *v)
{
	struct rank_query *q = x->q;
	const struct rank_docs *d = q->docs;
	int n = d && d->term ? (int)d->term(d->ud, RANK_TT_COUNT, -1, -1, q->lid) : 0;
	struct rank_sparse *s = base_arena_alloc(&q->arena, sizeof *s, 8);
	const char **labels = base_arena_alloc(&q->arena, ((size_t)n + 1) * sizeof *labels, 8);
	double *cells = base_arena_alloc(&q->arena, ((size_t)n + 1) * sizeof *cells, 8);
	const char **names = n ? term_labels(q, n) : NULL;
	if (!s || !labels || !cells || (n && !names))
		return oom(x);
	s->nblocks = 0;
	for (int i = 0; i < n; i++) {
		double c = d->term(d->ud, in->a, in->b, i, q->lid);
		if (isnan(c))
			continue;
		labels[s->nblocks] = names[i];
		cells[s->nblocks++] = c;
	}
	s->labels = labels;
	s->cells = cells;
	set_cells(v, s, BASE_DT_UNDEFINED);
	return 0;
}

/* A double as a cell of type dt holds it (a float rounds, ...). */
static double as_cell(double v, int dt)
{
	switch (dt) {
	case BASE_DT_FLOAT: return (float)v;
	case BASE_DT_BFLOAT16: return base_bf16_to_f32(base_f32_to_bf16((float)v));
	case BASE_DT_INT8: return isnan(v) ? 0 : v <= -128 ? -128 : v >= 127 ? 127 : (double)(int8_t)v;
	}
	return v;
}

/* TERM of elementwise(bm25(f), ...): a cell per element of the document's
 * value that the engine scores (not NaN), labelled with its number and
 * held in the type's cell type. */
static int elem_tensor(struct vm *x, const struct rank_ins *in, struct rank_val *v)
{
	struct rank_query *q = x->q;
	const struct rank_docs *d = q->docs;
	double top = d && d->term ? d->term(d->ud, RANK_TT_ELEM_BM25, in->b, -1, q->lid) : 0;
	int n = top > 0 && top < INT32_MAX ? (int)top : 0;
	struct rank_sparse *s = base_arena_alloc(&q->arena, sizeof *s, 8);
	const char **labels = base_arena_alloc(&q->arena, ((size_t)n + 1) * sizeof *labels, 8);
	double *cells = base_arena_alloc(&q->arena, ((size_t)n + 1) * sizeof *cells, 8);
	const char **names = n ? term_labels(q, n) : NULL;
	if (!s || !labels || !cells || (n && !names))
		return oom(x);
	int dt = x->q->p->types[in->t].cell;
	s->nblocks = 0;
	for (int i = 0; i < n; i++) {
		double c = d->term(d->ud, RANK_TT_ELEM_BM25, in->b, i, q->lid);
		if (isnan(c))
			continue;
		labels[s->nblocks] = names[i];
		cells[s->nblocks++] = as_cell(c, dt);
	}
	s->labels = labels;
	s->cells = cells;
	set_cells(v, s, BASE_DT_UNDEFINED);
	return 0;
}

/* closeness/distance of the document's field to the query tensor its
 * nearestNeighbor item names; no such item or no value: distance +inf. */
static double closeness(struct vm *x, int field, int distance, int label)
{
	struct rank_query *q = x->q;
	if (field < 0) {
		/* by label: the field of the item that carries it */
		for (int k = 0; k < q->nnn_labels && field < 0; k++)
			if (!strcmp(q->nn_labels[k], q->p->labels[label]))
				field = q->nn_label_fields[k];
		if (field < 0)
			return distance ? INFINITY : 0;
	}
	const struct rank_field *f = &q->p->sd->fields[field];
	int in = q->nn_input[field];
	const void *v = in >= 0 && q->docs ? q->docs->attr(q->docs->ud, field, q->lid) : NULL;
	double d = rank_field_nn_distance(f, v, v ? q->inputs[in] : NULL,
	                                  v ? q->p->inputs[in].ncells : 0, NULL);
	return distance ? d : rank_closeness_of(f->distance_metric, d);
}

/* closest(field[, label]): the sparse tensor holding 1 at the label of the
 * document's vector nearest to the query of the item on field (that
 * carries label, when label >= 0); empty when there is none. */
static int closest(struct vm *x, int field, int label, struct rank_val *v)
{
	struct rank_query *q = x->q;
	struct rank_sparse *s = base_arena_alloc(&q->arena, sizeof *s, 8);
	double *one = base_arena_alloc(&q->arena, sizeof *one, 8);
	if (!s || !one)
		return oom(x);
	*s = (struct rank_sparse){0};
	*one = 1.0;
	set_cells(v, s, BASE_DT_UNDEFINED);
	int in = q->nn_input[field], labelled = label < 0;
	for (int k = 0; k < q->nnn_labels && !labelled; k++)
		labelled = q->nn_label_fields[k] == field &&
		           !strcmp(q->nn_labels[k], q->p->labels[label]);
	if (in < 0 || !q->docs || !labelled)
		return 0;
	const struct rank_sparse *d = q->docs->attr(q->docs->ud, field, q->lid);
	size_t best;
	rank_field_nn_distance(&q->p->sd->fields[field], d, d ? q->inputs[in] : NULL,
	                       q->p->inputs[in].ncells, &best);
	if (best == SIZE_MAX)
		return 0;
	s->nblocks = 1;
	s->labels = d->labels + best;
	s->cells = one;
	return 0;
}

/* A literal with computed cells: a copy of its cells with the ndyn values
 * on top of the stack (popped) written where they go, pushed. */
static int fill_literal(struct vm *x, const struct rank_lit *lit, struct rank_val **spp)
{
	struct rank_val *sp = *spp - lit->ndyn, v = lit->v;
	const struct rank_sparse *s = v.cell == BASE_DT_UNDEFINED ? v.cells : NULL;
	if (lit->ncells == 1 && !s && !v.cells) {
		v.num = sp[0].num; /* a number: its one cell */
	} else {
		double *c = base_arena_alloc(&x->q->arena, lit->ncells * sizeof *c, 64);
		if (!c)
			return oom(x);
		memcpy(c, s ? s->cells : v.cells, lit->ncells * sizeof *c);
		for (int i = 0; i < lit->ndyn; i++)
			c[lit->where[i]] = sp[i].num;
		if (s) {
			struct rank_sparse *t = base_arena_alloc(&x->q->arena, sizeof *t, 8);
			if (!t)
				return oom(x);
			*t = *s;
			t->cells = c;
			v.cells = t;
		} else {
			v.cells = c;
		}
	}
	*sp = v;
	*spp = sp + 1;
	return 0;
}

static int exec(struct vm *x, int pc, struct rank_val *sp, struct rank_val *res)
{
	struct rank_query *q = x->q;
	const struct rank_profile *p = q->p;
	const struct rank_ins *code = x->prog->code;
	int rc;
	for (;;) {
		const struct rank_ins *in = &code[pc++];
		switch (in->op) {
		case RANK_OP_NUM:
			set_num(sp++, in->k);
			break;
		case RANK_OP_ATTR:
			if ((rc = load_attr(x, in->a, in->t, sp++)))
				return rc;
			break;
		case RANK_OP_QUERY:
			if (rank_type_mapped(&p->types[in->t]))
				set_cells(sp++, &q->sparse[in->a], BASE_DT_UNDEFINED);
			else if (p->types[in->t].rank == 0)
				set_num(sp++, q->inputs[in->a][0]);
			else
				set_cells(sp++, q->inputs[in->a], BASE_DT_DOUBLE);
			break;
		case RANK_OP_CONST: {
			const struct rank_constant_decl *cd = p->consts[in->a];
			const double *c = cd->cells;
			if (rank_type_mapped(&p->types[in->t])) {
				/* its blocks, seen as the VM's sparse value */
				struct rank_sparse *s = base_arena_alloc(&q->arena, sizeof *s, 8);
				if (!s)
					return oom(x);
				s->nblocks = cd->nblocks;
				s->labels = (const char *const *)cd->labels;
				s->cells = c;
				set_cells(sp++, s, BASE_DT_UNDEFINED);
			} else if (p->types[in->t].rank == 0)
				set_num(sp++, c ? c[0] : 0.0);
			else
				set_cells(sp++, c, BASE_DT_DOUBLE);
			break;
		}
		case RANK_OP_FIRST:
			set_num(sp++, q->first);
			break;
		case RANK_OP_NORM:
			set_num(sp++, q->norm_read[(size_t)in->a * q->norm_n + q->gcand]);
			break;
		case RANK_OP_GET:
			*sp++ = x->locals[in->a];
			break;
		case RANK_OP_SET:
			x->locals[in->a] = *--sp;
			break;
		case RANK_OP_UN:
			sp[-1].num = rank_fn1(in->a, sp[-1].num);
			break;
		case RANK_OP_BIN:
			sp[-2].num = rank_fn2(in->a, sp[-2].num, sp[-1].num);
			sp--;
			break;
		case RANK_OP_JUMPF:
			if ((--sp)->num == 0.0)
				pc = in->a;
			break;
		case RANK_OP_JUMP:
			pc = in->a;
			break;
		case RANK_OP_RET:
			*res = sp[-1];
			return 0;
		case RANK_OP_MAP: {
			if (in->t == 0) { /* map over a number */
				struct lambda l = { x, in->a, in->b, 1, sp };
				sp[-1].num = run_lambda(&l, sp[-1].num, 0.0);
				break;
			}
			const struct rank_type *ti = type_of(x, in->d);
			size_t n = ncells(ti);
			double *r = base_arena_alloc(&q->arena, n * sizeof *r, 64);
			if (!r)
				return oom(x);
			struct rank_val v = sp[-1];
			if (in->a >= 0) {
				struct lambda l = { x, in->a, in->b, 1, sp };
				for (size_t i = 0; i < n; i++)
					r[i] = run_lambda(&l, rank_cell(v.cell, v.cells, i), 0.0);
			} else {
				for (size_t i = 0; i < n; i++)
					r[i] = rank_fn1(in->c, rank_cell(v.cell, v.cells, i));
			}
			set_cells(&sp[-1], r, BASE_DT_DOUBLE);
			break;
		}
		case RANK_OP_JOIN: {
			double *r;
			struct lambda l = { x, in->a, in->b, 2, sp };
			if (in->t == 0) { /* two numbers through a lambda */
				sp[-2].num = run_lambda(&l, sp[-2].num, sp[-1].num);
				sp--;
				break;
			}
			if (in->a >= 0)
				rc = rank_tensor_join(&q->arena, type_of(x, in->d), sp[-2], type_of(x, in->e),
				                      sp[-1], type_of(x, in->t), run_lambda, &l, &r);
			else
				rc = rank_tensor_join(&q->arena, type_of(x, in->d), sp[-2], type_of(x, in->e),
				                      sp[-1], type_of(x, in->t), run_fn2, (void *)&in->c, &r);
			if (rc)
				return oom(x);
			sp--;
			set_cells(&sp[-1], r, BASE_DT_DOUBLE);
			break;
		}
		case RANK_OP_REDUCE: {
			double *r;
			const struct rank_type *ti = type_of(x, in->d), *tr = type_of(x, in->t);
			if (ti->rank == 0) {
				/* count of a number is 1; the other aggregates keep it */
				if (in->a == RANK_AGG_COUNT)
					sp[-1].num = 1.0;
				break;
			}
			if (rank_tensor_reduce(&q->arena, ti, sp[-1], tr, in->a, &r))
				return oom(x);
			if (tr->rank == 0)
				set_num(&sp[-1], r[0]);
			else
				set_cells(&sp[-1], r, BASE_DT_DOUBLE);
			break;
		}
		case RANK_OP_DOT: {
			size_t n = ncells(type_of(x, in->d));
			double d = rank_tensor_dot(sp[-2].cell, sp[-2].cells, sp[-1].cell, sp[-1].cells, n);
			sp--;
			set_num(&sp[-1], d);
			break;
		}
		case RANK_OP_CONCAT: {
			double *r;
			if (rank_tensor_concat(&q->arena, type_of(x, in->d), sp[-2], type_of(x, in->e),
			                       sp[-1], type_of(x, in->t), in->a, &r))
				return oom(x);
			sp--;
			set_cells(&sp[-1], r, BASE_DT_DOUBLE);
			break;
		}
		case RANK_OP_LIT:
			if (in->b == 0)
				*sp++ = p->lits[in->a].v;
			else if ((rc = fill_literal(x, &p->lits[in->a], &sp)))
				return rc;
			break;
		case RANK_OP_GEN: {
			const struct rank_type *t = type_of(x, in->t);
			size_t n = ncells(t);
			double *r = base_arena_alloc(&q->arena, n * sizeof *r, 64);
			if (!r)
				return oom(x);
			for (int k = 0; k < t->rank; k++)
				set_num(&x->locals[in->b + k], 0.0);
			for (size_t i = 0; i < n; i++) {
				struct rank_val v;
				/* a body reading a feature may fail (a model, memory) */
				if ((rc = exec(x, in->a, sp, &v)))
					return rc;
				r[i] = v.num;
				for (int k = t->rank - 1; k >= 0; k--) {
					struct rank_val *l = &x->locals[in->b + k];
					if (++l->num < (double)t->dims[k])
						break;
					l->num = 0.0;
				}
			}
			set_cells(sp++, r, BASE_DT_DOUBLE);
			break;
		}
		case RANK_OP_SMAP: {
			struct lambda l = { x, in->a, in->b, 1, sp };
			if (in->a >= 0)
				rc = rank_sparse_map(&q->arena, type_of(x, in->d), sp[-1], run_lambda, &l,
				                     &sp[-1]);
			else
				rc = rank_sparse_map(&q->arena, type_of(x, in->d), sp[-1], run_fn1,
				                     (void *)&in->c, &sp[-1]);
			if (rc)
				return oom(x);
			break;
		}
		case RANK_OP_SJOIN: case RANK_OP_SMERGE: {
			struct lambda l = { x, in->a, in->b, 2, sp };
			struct rank_val r;
			int (*op)(struct base_arena *, const struct rank_type *, struct rank_val,
			          const struct rank_type *, struct rank_val, const struct rank_type *,
			          double (*)(void *, double, double), void *, struct rank_val *) =
				in->op == RANK_OP_SJOIN ? rank_sparse_join : rank_sparse_merge;
			if (in->a >= 0)
				rc = op(&q->arena, type_of(x, in->d), sp[-2], type_of(x, in->e), sp[-1],
				        type_of(x, in->t), run_lambda, &l, &r);
			else
				rc = op(&q->arena, type_of(x, in->d), sp[-2], type_of(x, in->e), sp[-1],
				        type_of(x, in->t), run_fn2, (void *)&in->c, &r);
			if (rc)
				return oom(x);
			sp--;
			sp[-1] = r;
			break;
		}
		case RANK_OP_SREDUCE:
			if (rank_sparse_reduce(&q->arena, type_of(x, in->d), sp[-1], type_of(x, in->t),
			                       in->a, &sp[-1]))
				return oom(x);
			break;
		case RANK_OP_PEEK: {
			const struct rank_peek *pk = p->peeks[in->a];
			const char *label[RANK_MAX_RANK];
			int64_t index[RANK_MAX_RANK];
			struct rank_val *dyn = sp - in->b;
			for (int e = 0, k = 0; e < pk->n; e++) {
				label[e] = pk->label[e];
				index[e] = pk->index[e];
				if (!pk->computed[e])
					continue;
				double d = dyn[k++].num;
				index[e] = d >= -1.0 && d < 9.2e18 ? (int64_t)d : -1;
				if (!label[e] && !(label[e] = number_label(&q->arena, d)))
					return oom(x);
			}
			sp = dyn;
			if (rank_sparse_peek(&q->arena, type_of(x, in->d), sp[-1], type_of(x, in->t), pk,
			                     label, index, &sp[-1]))
				return oom(x);
			break;
		}
		case RANK_OP_SCONCAT: {
			struct rank_val r;
			if (rank_sparse_concat(&q->arena, type_of(x, in->d), sp[-2], type_of(x, in->e),
			                       sp[-1], type_of(x, in->t), in->a, &r))
				return oom(x);
			sp--;
			sp[-1] = r;
			break;
		}
		case RANK_OP_UNPACK:
			if (rank_sparse_unpack_bits(&q->arena, type_of(x, in->d), sp[-1],
			                            type_of(x, in->t), in->b, in->a, &sp[-1]))
				return oom(x);
			break;
		case RANK_OP_TOP:
			if (rank_sparse_top(&q->arena, type_of(x, in->d), sp[-1], sp[-2].num, &sp[-2]))
				return oom(x);
			sp--;
			break;
		case RANK_OP_CLOSE:
			if (in->b == 2) {
				if ((rc = closest(x, in->a, in->c, sp++)))
					return rc;
				break;
			}
			set_num(sp++, closeness(x, in->a, in->b, in->c));
			break;
		case RANK_OP_TEXT:
			set_num(sp++, q->docs && q->docs->text
			                      ? q->docs->text(q->docs->ud, in->a, in->b, q->lid)
			                      : 0);
			break;
		case RANK_OP_NOW:
			set_num(sp++, q->now);
			break;
		case RANK_OP_RANDOM: {
			/* splitmix64 of the seed, the salt and the document */
			uint64_t z = (in->a ? 1024 : q->seed) ^ (uint64_t)in->k ^
			             ((uint64_t)q->lid * 0x9e3779b97f4a7c15ULL);
			z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
			z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
			set_num(sp++, (double)((z ^ (z >> 31)) >> 11) / 9007199254740992.0);
			break;
		}
		case RANK_OP_TERM:
			if (p->types[in->t].rank) {
				if ((rc = in->a == RANK_TT_ELEM_BM25 ? elem_tensor(x, in, sp++)
				                                     : term_tensor(x, in, sp++)))
					return rc;
				break;
			}
			set_num(sp++, q->docs && q->docs->term
			                      ? q->docs->term(q->docs->ud, in->a, in->b, in->c, q->lid)
			                      : 0);
			break;
		case RANK_OP_ONNX: {
			struct rank_val v;
			if ((rc = q->model_value(q, in->a, in->b, &v, x->err)))
				return rc;
			if (p->types[in->t].rank == 0)
				set_num(&v, rank_cell(v.cell, v.cells, 0));
			*sp++ = v;
			break;
		}
		default:
			BASE_ASSERT(!"bad opcode");
		}
	}
}

int rank_vm_run(struct rank_query *q, const struct rank_prog *prog, struct rank_val *out,
                struct strata_error *err)
{
	size_t need = (size_t)prog->nlocals + (size_t)prog->ncode;
	BASE_ASSERT(q->top + need <= q->nstack);
	struct vm x = { q, prog, q->stack + q->top, err };
	size_t saved = q->top;
	q->top += need;
	int rc = exec(&x, 0, x.locals + prog->nlocals, out);
	q->top = saved;
	return rc;
}
