/*
 * query.c: the evaluation state of one query (struct rank_query) and the
 * pools that keep retired ones; its inputs and nearestNeighbor item; the
 * phases and the feature callbacks of rank.h, run on the VM (vm.c), with
 * models through model.c.
 *
 * Everything a query changes lives in its struct rank_query (input values,
 * the arena of per-document temporaries, the value stack, one runtime
 * context per model, pooled model buffers), so the loaded application stays
 * immutable and shared by threads.  A query's steady state allocates
 * nothing: the arena keeps its blocks across documents and the pools only
 * grow.
 *
 * Queries themselves are reused: rank_query_free retires a query into its
 * profile's struct rank_qpool and rank_query_new takes it back, so a whole
 * query of a shape seen before allocates nothing either.  Invariants: a
 * retired query is owned by its pool alone, holds no runtime context, and
 * is complete (every array of rank_query_new allocated); taking it back
 * resets what a query may change (inputs, the nearestNeighbor item, the
 * arena, model caches) and asks the runtime for a context again (from the
 * model's session buffer pool).  The pool's lock is held only to push or
 * pop, never while memory is allocated or freed.
 */
#include <math.h>
#include <string.h>
#include <time.h>

#include "rank_eval.h"

/* ---- the state of a query ------------------------------------------------------ */

static size_t prog_slots(const struct rank_prog *g)
{
	return (size_t)g->ncode + (size_t)g->nlocals;
}

/* Put q in the state of a query that has not begun: inputs at their
 * defaults (zeros when there is none), no nearestNeighbor item, nothing
 * evaluated. */
static void query_reset(struct rank_query *q)
{
	const struct rank_profile *p = q->p;
	for (int i = 0; i < p->ninputs; i++) {
		const struct rank_input_decl *d = &p->decl->inputs[i];
		size_t n = p->inputs[i].ncells;
		if (d->has_default && d->dflt && d->ncells == n)
			memcpy(q->inputs[i], d->dflt, n * sizeof(double));
		else
			memset(q->inputs[i], 0, (n ? n : 1) * sizeof(double));
	}
	for (int i = 0; i < p->sd->nfields; i++)
		q->nn_input[i] = -1;
	for (int i = 0; i < p->ninputs; i++) {
		q->given[i] = 0;
		memset(&q->sparse[i], 0, sizeof q->sparse[i]);
	}
	base_arena_reset(&q->in_arena);
	base_arena_reset(&q->arena);
	q->docs = NULL;
	q->lid = 0;
	q->first = 0.0;
	q->now = (double)time(NULL);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	q->seed = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
	q->nnn_labels = 0;
	q->term_labels = NULL;
	q->nterm_labels = 0;
	q->top = 0;
	q->cand = -1;
	q->ncand_lookup = 0;
	q->next = NULL;
}

/* Free q and everything it holds; q may be half made (a failed new). */
static void query_destroy(struct rank_query *q)
{
	const struct rank_profile *p = q->p;
	if (q->inputs) {
		for (int i = 0; i < p->ninputs; i++) {
			size_t n = p->inputs[i].ncells;
			base_free(q->inputs[i], (n ? n : 1) * sizeof(double));
		}
		base_free(q->inputs, ((size_t)p->ninputs + 1) * sizeof *q->inputs);
	}
	if (q->models) {
		for (int m = 0; m < p->nmodels; m++)
			rank_qmodel_release(q, m);
		base_free(q->models, ((size_t)p->nmodels + 1) * sizeof *q->models);
	}
	base_free(q->nn_input, ((size_t)p->sd->nfields + 1) * sizeof *q->nn_input);
	base_free(q->given, ((size_t)p->ninputs + 1) * sizeof *q->given);
	base_free(q->sparse, ((size_t)p->ninputs + 1) * sizeof *q->sparse);
	base_arena_free(&q->in_arena);
	if (q->norm_vals)
		base_free(q->norm_vals, q->norm_cap * sizeof *q->norm_vals);
	if (q->norm_order)
		base_free(q->norm_order, q->order_cap * sizeof *q->norm_order);
	base_free(q->stack, q->nstack * sizeof *q->stack);
	base_arena_free(&q->arena);
	base_free(q, sizeof *q);
}

/* ---- the pools of retired queries ------------------------------------------- */

int rank_qpools_init(struct rank_schema *s, struct strata_error *err)
{
	s->qpools = base_calloc((size_t)s->nprofiles + 1, sizeof *s->qpools);
	if (!s->qpools)
		return base_nomem(err, "schema %s", s->sd->name);
	for (int i = 0; i < s->nprofiles; i++) {
		int e = pthread_mutex_init(&s->qpools[i].lock, NULL);
		if (e) {
			while (i-- > 0)
				pthread_mutex_destroy(&s->qpools[i].lock);
			base_free(s->qpools, ((size_t)s->nprofiles + 1) * sizeof *s->qpools);
			s->qpools = NULL;
			return base_err(err, e, "schema %s: %s", s->sd->name, strerror(e));
		}
		s->qpools[i].keep = 1;
	}
	for (int i = 0; i < s->nprofiles; i++)
		s->profiles[i].qpool = &s->qpools[i];
	return 0;
}

/* Free retired queries until at most keep are left. */
static void pool_trim(struct rank_qpool *pl, int keep)
{
	for (;;) {
		struct rank_query *q = NULL;
		pthread_mutex_lock(&pl->lock);
		if (pl->n > keep) {
			q = pl->top;
			pl->top = q->next;
			pl->n--;
		}
		pthread_mutex_unlock(&pl->lock);
		if (!q)
			return;
		query_destroy(q);
	}
}

void rank_qpools_free(struct rank_schema *s)
{
	if (!s->qpools)
		return;
	for (int i = 0; i < s->nprofiles; i++) {
		pool_trim(&s->qpools[i], 0);
		pthread_mutex_destroy(&s->qpools[i].lock);
		s->profiles[i].qpool = NULL;
	}
	base_free(s->qpools, ((size_t)s->nprofiles + 1) * sizeof *s->qpools);
	s->qpools = NULL;
}

void rank_qpool_keep(struct rank_qpool *pl, int n)
{
	pthread_mutex_lock(&pl->lock);
	pl->keep = n;
	pthread_mutex_unlock(&pl->lock);
	pool_trim(pl, n);
}

/* A retired query of p's pool, or NULL. */
static struct rank_query *pool_take(const struct rank_profile *p)
{
	struct rank_qpool *pl = p->qpool;
	struct rank_query *q = NULL;
	if (!pl)
		return NULL;
	pthread_mutex_lock(&pl->lock);
	if (pl->top) {
		q = pl->top;
		pl->top = q->next;
		pl->n--;
	}
	pthread_mutex_unlock(&pl->lock);
	return q;
}

int rank_query_new(const struct rank_profile *p, struct rank_query **out, struct strata_error *err)
{
	*out = NULL;
	int rc = 0;
	struct rank_query *q = pool_take(p);
	if (q) {
		query_reset(q);
		for (int m = 0; m < p->nmodels && rc == 0; m++)
			rc = rank_qmodel_reuse(q, m, err);
		if (rc) {
			query_destroy(q);
			return rc;
		}
		*out = q;
		return 0;
	}
	q = base_calloc(1, sizeof *q);
	if (!q)
		return base_nomem(err, "query");
	q->p = p;
	q->model_value = rank_model_value;
	base_arena_init(&q->arena, 1 << 16);
	base_arena_init(&q->in_arena, 1 << 12);
	q->sparse = base_calloc((size_t)p->ninputs + 1, sizeof *q->sparse);
	q->inputs = base_calloc((size_t)p->ninputs + 1, sizeof *q->inputs);
	q->nn_input = base_calloc((size_t)p->sd->nfields + 1, sizeof *q->nn_input);
	q->given = base_calloc((size_t)p->ninputs + 1, sizeof *q->given);
	q->models = base_calloc((size_t)p->nmodels + 1, sizeof *q->models);
	/* Every program can be active at most once at a time (models cannot
	 * depend on themselves), so the sum of their frames bounds the stack. */
	size_t slots = prog_slots(&p->first) + prog_slots(&p->second) + prog_slots(&p->global) + 1;
	for (int i = 0; i < p->nnorms; i++)
		slots += prog_slots(&p->norms[i].arg);
	for (int i = 0; i < p->nmatch; i++)
		slots += prog_slots(&p->match[i]);
	for (int i = 0; i < p->nsummary; i++)
		slots += prog_slots(&p->summary[i]);
	for (int m = 0; m < p->nmodels; m++)
		if (p->models[m].state == 2)
			for (int i = 0; i < p->models[m].nin; i++)
				slots += prog_slots(&p->models[m].src[i]);
	q->nstack = q->nslots = slots;
	q->stack = base_calloc(slots, sizeof *q->stack);
	if (!q->inputs || !q->nn_input || !q->given || !q->sparse || !q->models || !q->stack) {
		query_destroy(q);
		return base_nomem(err, "query");
	}
	for (int i = 0; i < p->ninputs && rc == 0; i++) {
		size_t n = p->inputs[i].ncells;
		q->inputs[i] = base_calloc(n ? n : 1, sizeof(double));
		if (!q->inputs[i])
			rc = base_nomem(err, "query input %s", p->decl->inputs[i].name);
	}
	for (int m = 0; m < p->nmodels && rc == 0; m++)
		rc = rank_qmodel_init(q, m, err);
	if (rc) {
		query_destroy(q);
		return rc;
	}
	query_reset(q);
	*out = q;
	return 0;
}

void rank_query_free(struct rank_query *q)
{
	if (!q)
		return;
	struct rank_qpool *pl = q->p->qpool;
	if (pl) {
		int kept = 0;
		for (int m = 0; m < q->p->nmodels; m++)
			rank_qmodel_retire(q, m);
		pthread_mutex_lock(&pl->lock);
		if (pl->n < pl->keep) {
			q->next = pl->top;
			pl->top = q;
			pl->n++;
			kept = 1;
		}
		pthread_mutex_unlock(&pl->lock);
		if (kept)
			return;
	}
	query_destroy(q);
}

/* ---- inputs and evaluation ------------------------------------------------------ */

int rank_query_set_input(struct rank_query *q, const char *name, const double *cells, size_t n,
                         struct strata_error *err)
{
	int i = rank_profile_input_index(q->p, name);
	if (i < 0)
		return base_err(err, STRATA_NOT_FOUND, "query(%s) is not an input of profile '%s'", name,
		                q->p->decl->name);
	if (rank_type_mapped(&q->p->decl->inputs[i].type))
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "query(%s) has mapped dimensions: give its blocks", name);
	if (n != q->p->inputs[i].ncells)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "query(%s) takes %zu cells, %zu were given", name,
		                q->p->inputs[i].ncells, n);
	memcpy(q->inputs[i], cells, n * sizeof *cells);
	q->given[i] = 1;
	return 0;
}

int rank_query_set_input_sparse(struct rank_query *q, const char *name, size_t nblocks,
                                const char *const *labels, const double *cells,
                                struct strata_error *err)
{
	int i = rank_profile_input_index(q->p, name);
	if (i < 0)
		return base_err(err, STRATA_NOT_FOUND, "query(%s) is not an input of profile '%s'", name,
		                q->p->decl->name);
	const struct rank_type *t = &q->p->decl->inputs[i].type;
	int nm = rank_type_mapped(t);
	if (nm == 0)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "query(%s) has no mapped dimension: give its cells", name);
	size_t sub = rank_type_cells(t), nl = nblocks * (size_t)nm;
	for (size_t b = 1; b < nblocks; b++)
		for (size_t o = 0; o < b; o++) {
			int same = 1;
			for (int k = 0; k < nm && same; k++)
				same = strcmp(labels[b * nm + k], labels[o * nm + k]) == 0;
			if (same)
				return base_err(err, STRATA_INVALID_ARGUMENT,
				                "query(%s): the address with label '%s' is given twice",
				                name, labels[b * nm]);
		}
	size_t nc = nblocks * sub;
	const char **lab = base_arena_alloc(&q->in_arena, (nl ? nl : 1) * sizeof *lab, 8);
	double *c = base_arena_alloc(&q->in_arena, (nc ? nc : 1) * sizeof *c, 8);
	if (!lab || !c)
		return base_nomem(err, "query(%s)", name);
	for (size_t k = 0; k < nl; k++)
		if (!(lab[k] = base_arena_strdup(&q->in_arena, labels[k])))
			return base_nomem(err, "query(%s)", name);
	if (nc)
		memcpy(c, cells, nc * sizeof *c);
	q->sparse[i].nblocks = nblocks;
	q->sparse[i].labels = lab;
	q->sparse[i].cells = c;
	q->given[i] = 1;
	return 0;
}

/* Every input the profile requires was given. */
static int check_inputs(struct rank_query *q, struct strata_error *err)
{
	const struct rank_profile *p = q->p;
	for (int i = 0; i < p->ninputs; i++)
		if (p->inputs[i].required && !q->given[i]) {
			const struct rank_pos *pos = &p->decl->inputs[i].pos;
			return base_err(err, STRATA_INVALID_ARGUMENT,
			                "query(%s) is not given, and profile '%s' declares no default "
			                "for it (%s:%d:%d)",
			                p->inputs[i].name, p->decl->name, pos->file, pos->line, pos->col);
		}
	return 0;
}

int rank_query_fork(const struct rank_query *q, struct rank_query **out, struct strata_error *err)
{
	const struct rank_profile *p = q->p;
	int rc = rank_query_new(p, out, err);
	if (rc)
		return rc;
	struct rank_query *f = *out;
	for (int i = 0; i < p->ninputs; i++) {
		size_t n = p->inputs[i].ncells;
		memcpy(f->inputs[i], q->inputs[i], (n ? n : 1) * sizeof(double));
		f->given[i] = q->given[i];
	}
	f->now = q->now;
	f->seed = q->seed;
	return 0;
}

/* An instruction of a first phase that rank_query_fork's copies may run on
 * other threads: it reads the document's column attributes, dense inputs,
 * constants and its own stack, nothing a fork lacks or threads share. */
static int parallel_ins(const struct rank_profile *p, const struct rank_ins *in)
{
	switch (in->op) {
	case RANK_OP_ATTR: {
		const struct rank_field *f = &p->sd->fields[in->a];
		if (f->imported || rank_type_mapped(&p->types[in->t]))
			return 0;
		return f->type == RANK_FT_INT || f->type == RANK_FT_LONG || f->type == RANK_FT_FLOAT ||
		       f->type == RANK_FT_DOUBLE || f->type == RANK_FT_BOOL ||
		       f->type == RANK_FT_TENSOR;
	}
	case RANK_OP_QUERY:
		return !rank_type_mapped(&p->types[in->t]);
	case RANK_OP_NUM: case RANK_OP_CONST: case RANK_OP_GET: case RANK_OP_SET:
	case RANK_OP_UN: case RANK_OP_BIN: case RANK_OP_JUMPF: case RANK_OP_JUMP:
	case RANK_OP_RET: case RANK_OP_MAP: case RANK_OP_JOIN: case RANK_OP_REDUCE:
	case RANK_OP_DOT: case RANK_OP_CONCAT: case RANK_OP_LIT: case RANK_OP_GEN:
	case RANK_OP_PEEK: case RANK_OP_NOW: case RANK_OP_RANDOM:
		return 1;
	}
	return 0;
}

int rank_profile_first_parallel(const struct rank_profile *p)
{
	for (int i = 0; i < p->first.ncode; i++)
		if (!parallel_ins(p, &p->first.code[i]))
			return 0;
	return 1;
}

/* Program g's instructions: each parallel_ins, firstPhase (the candidate's
 * score, given with it), with models ONNX models whose every input is such
 * a program too (each fork runs them in its own contexts), and with norms
 * the global phase's normalized values. */
static int parallel_prog(const struct rank_profile *p, const struct rank_prog *g, int models,
                         int norms)
{
	for (int i = 0; i < g->ncode; i++) {
		const struct rank_ins *in = &g->code[i];
		if (in->op == RANK_OP_FIRST || (norms && in->op == RANK_OP_NORM))
			continue;
		if (models && in->op == RANK_OP_ONNX) {
			const struct rank_cmodel *cm = &p->models[in->a];
			for (int k = 0; k < cm->nin; k++)
				if (!parallel_prog(p, &cm->src[k], 0, 0))
					return 0;
			continue;
		}
		if (!parallel_ins(p, in))
			return 0;
	}
	return 1;
}

int rank_profile_second_parallel(const struct rank_profile *p)
{
	return p->has_second && parallel_prog(p, &p->second, 1, 0);
}

void rank_query_set_now(struct rank_query *q, double now)
{
	q->now = now;
}

int rank_query_set_nn(struct rank_query *q, const char *field, const char *input,
                      struct strata_error *err)
{
	const struct rank_profile *p = q->p;
	int f = rank_schema_field_index(p->schema, field);
	if (f < 0)
		return base_err(err, STRATA_NOT_FOUND, "nearestNeighbor: no field '%s'", field);
	int i = rank_profile_input_index(p, input);
	if (i < 0)
		return base_err(err, STRATA_NOT_FOUND,
		                "nearestNeighbor: query(%s) is not an input of profile '%s'", input,
		                p->decl->name);
	const struct rank_field *fd = &p->sd->fields[f];
	if (fd->type != RANK_FT_TENSOR || !fd->attribute)
		return base_err(err, STRATA_TYPE, "nearestNeighbor: field '%s' is not a tensor attribute",
		                field);
	const struct rank_input_info *in = &p->inputs[i];
	/* a multi-vector field is compared with one of its vectors: the
	 * query has the field's indexed dimensions */
	int mv = rank_field_multivec(fd), r = 0, same = 1;
	for (int k = 0; same && k < fd->rank; k++)
		if (!mv || fd->dims[k] != RANK_DIM_MAPPED)
			same = r < in->rank && in->dims[r++] == fd->dims[k];
	same = same && r == in->rank;
	if (!same)
		return base_err(err, STRATA_TYPE,
		                "nearestNeighbor: query(%s) and field '%s' differ in shape", input,
		                field);
	if (!q->given[i] && !in->has_default)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "nearestNeighbor: query(%s) is not given, and profile '%s' declares "
		                "no default for it",
		                input, p->decl->name);
	q->nn_input[f] = i;
	return 0;
}

int rank_query_set_nn_label(struct rank_query *q, const char *field, const char *label,
                            struct strata_error *err)
{
	int f = rank_schema_field_index(q->p->schema, field);
	if (f < 0 || q->nn_input[f] < 0)
		return base_err(err, STRATA_NOT_FOUND,
		                "nearestNeighbor label '%s': no nearestNeighbor item on '%s'", label,
		                field);
	if (q->nnn_labels == RANK_MAX_NN)
		return base_err(err, STRATA_LIMIT, "more than %d nearestNeighbor labels", RANK_MAX_NN);
	if (!(q->nn_labels[q->nnn_labels] = base_arena_strdup(&q->in_arena, label)))
		return base_nomem(err, "nearestNeighbor label");
	q->nn_label_fields[q->nnn_labels++] = f;
	return 0;
}

double rank_query_nn_distance(struct rank_query *q, const struct rank_docs *d, int field,
                              uint32_t lid)
{
	const struct rank_profile *p = q->p;
	int i = field >= 0 && field < p->sd->nfields ? q->nn_input[field] : -1;
	if (i < 0)
		return INFINITY;
	return rank_field_nn_distance(&p->sd->fields[field], d->attr(d->ud, field, lid),
	                              q->inputs[i], p->inputs[i].ncells, NULL);
}

const double *rank_query_nn_cells(const struct rank_query *q, int field, size_t *n)
{
	const struct rank_profile *p = q->p;
	int i = field >= 0 && field < p->sd->nfields ? q->nn_input[field] : -1;
	if (i < 0) {
		*n = 0;
		return NULL;
	}
	*n = p->inputs[i].ncells;
	return q->inputs[i];
}

static void begin_doc(struct rank_query *q, uint32_t lid, double first)
{
	base_arena_reset(&q->arena);
	q->lid = lid;
	q->first = first;
	q->serial++;
	q->top = 0;
}

int rank_query_first_phase(struct rank_query *q, const struct rank_docs *d, const uint32_t *lids,
                           size_t n, double *scores, struct strata_error *err)
{
	q->docs = d;
	q->cand = -1;
	q->ncand_lookup = 0;
	int rc = check_inputs(q, err);
	if (rc)
		return rc;
	struct rank_first_dot dot;
	int fast = rank_first_dot_shape(q->p, &dot);
	for (size_t at = 0; at < n; at += RANK_FIRST_DOT_CHUNK) {
		size_t m = n - at < RANK_FIRST_DOT_CHUNK ? n - at : RANK_FIRST_DOT_CHUNK;
		/* the dot products where they apply, else each document on the VM */
		uint64_t vm = fast ? rank_first_dot_run(q, &dot, d, lids + at, m, scores + at)
		                   : ~(uint64_t)0;
		for (size_t i = 0; i < m; i++) {
			if (!(vm >> i & 1))
				continue;
			struct rank_val v;
			begin_doc(q, lids[at + i], 0.0);
			if ((rc = rank_vm_run(q, &q->p->first, &v, err)) != 0)
				return rc;
			scores[at + i] = v.num;
		}
	}
	return 0;
}

int rank_query_second_phase(struct rank_query *q, const struct rank_docs *d, const uint32_t *lids,
                            const double *first, size_t n, double *scores,
                            struct strata_error *err)
{
	const struct rank_profile *p = q->p;
	q->docs = d;
	q->ncand_lookup = 0;
	if (!p->has_second) {
		for (size_t i = 0; i < n; i++)
			scores[i] = first ? first[i] : 0.0;
		return 0;
	}
	int rc = rank_model_cache_begin(q, lids, n, err);
	if (rc)
		return rc;
	/* Batched models the second phase reads run once for all candidates. */
	for (int i = 0; i < p->second.ncode; i++) {
		const struct rank_ins *in = &p->second.code[i];
		if (in->op != RANK_OP_ONNX || !p->models[in->a].batched || q->models[in->a].cache_n == 0)
			continue;
		if (q->models[in->a].cache_ok[0])
			continue; /* already ran for this batch (the model appears twice) */
		q->top = 0;
		if ((rc = rank_model_batch(q, in->a, lids, first, n, err)))
			return rc;
	}
	for (size_t i = 0; i < n; i++) {
		struct rank_val v;
		begin_doc(q, lids[i], first ? first[i] : 0.0);
		q->cand = (long)i;
		if ((rc = rank_vm_run(q, &p->second, &v, err)))
			break;
		scores[i] = v.num;
	}
	q->cand = -1;
	return rc;
}

/* ---- the global phase ----------------------------------------------------------- */

/* Grow *buf (of *cap elements of size elem) to hold n. */
static int grow_to(void **buf, size_t *cap, size_t n, size_t elem, struct strata_error *err)
{
	if (n <= *cap)
		return 0;
	void *b = base_realloc(*buf, *cap * elem, n * elem);
	if (!b)
		return base_nomem(err, "global phase of %zu hits", n);
	*buf = b;
	*cap = n;
	return 0;
}

/* Map v[0..n) linearly onto [0, 1]: the lowest to 0, the highest to 1 (all
 * equal: 0.5), as Vespa's normalize_linear does; NaN stays NaN. */
static void normalize_linear(double *v, size_t n)
{
	double lo = INFINITY, hi = -INFINITY;
	for (size_t i = 0; i < n; i++) {
		if (isnan(v[i]))
			continue;
		lo = v[i] < lo ? v[i] : lo;
		hi = v[i] > hi ? v[i] : hi;
	}
	double scale = hi > lo && isfinite(hi - lo) ? 1.0 / (hi - lo) : 0.0;
	double mid = scale > 0 ? lo + (hi - lo) * 0.5 : 0.0;
	for (size_t i = 0; i < n; i++)
		if (!isnan(v[i]))
			v[i] = scale > 0 ? 0.5 + (v[i] - mid) * scale : 0.5;
}

/* Candidates by value, highest first, NaN last, ties by position (an
 * stable merge sort over indexes, tmp as scratch). */
static void order_desc(const double *v, size_t *idx, size_t *tmp, size_t n)
{
	if (n < 2)
		return;
	size_t h = n / 2;
	order_desc(v, idx, tmp, h);
	order_desc(v, idx + h, tmp, n - h);
	size_t i = 0, j = h, k = 0;
	while (i < h && j < n) {
		double a = v[idx[i]], b = v[idx[j]];
		int take_b = !isnan(b) && (isnan(a) || b > a);
		tmp[k++] = take_b ? idx[j++] : idx[i++];
	}
	while (i < h)
		tmp[k++] = idx[i++];
	while (j < n)
		tmp[k++] = idx[j++];
	memcpy(idx, tmp, n * sizeof *idx);
}

/* reciprocal_rank: v[i] becomes 1 / (k + rank of v[i]), ranks from 1. */
static void reciprocal_rank(double *v, size_t n, double k, size_t *order)
{
	size_t *idx = order, *tmp = order + n;
	for (size_t i = 0; i < n; i++)
		idx[i] = i;
	order_desc(v, idx, tmp, n);
	/* tmp, free again, takes each candidate's rank. */
	for (size_t r = 0; r < n; r++)
		tmp[idx[r]] = r + 1;
	for (size_t i = 0; i < n; i++)
		v[i] = 1.0 / (k + (double)tmp[i]);
}

int rank_profile_global_norms(const struct rank_profile *p)
{
	return p->has_global ? p->nnorms : 0;
}

int rank_profile_global_parallel(const struct rank_profile *p)
{
	if (!p->has_global)
		return 0;
	for (int k = 0; k < p->nnorms; k++)
		if (!parallel_prog(p, &p->norms[k].arg, 1, 0))
			return 0;
	/* NORM reads the normalized values given to rank_query_global_scores */
	return parallel_prog(p, &p->global, 1, 1);
}

int rank_query_global_args(struct rank_query *q, const struct rank_docs *d, const uint32_t *lids,
                           const double *first, size_t from, size_t to, size_t n, double *vals,
                           struct strata_error *err)
{
	const struct rank_profile *p = q->p;
	q->docs = d;
	q->cand = -1;
	q->ncand_lookup = 0;
	for (int k = 0; k < p->nnorms; k++) {
		double *v = vals + (size_t)k * n;
		for (size_t i = from; i < to; i++) {
			struct rank_val r;
			begin_doc(q, lids[i], first ? first[i] : 0.0);
			int rc = rank_vm_run(q, &p->norms[k].arg, &r, err);
			if (rc)
				return rc;
			v[i] = r.num;
		}
	}
	return 0;
}

int rank_query_global_normalize(struct rank_query *q, double *vals, size_t n,
                                struct strata_error *err)
{
	const struct rank_profile *p = q->p;
	if (!p->nnorms)
		return 0;
	int rc = grow_to((void **)&q->norm_order, &q->order_cap, 2 * n, sizeof(size_t), err);
	if (rc)
		return rc;
	for (int k = 0; k < p->nnorms; k++) {
		const struct rank_norm *nm = &p->norms[k];
		double *v = vals + (size_t)k * n;
		if (nm->kind == RANK_NORM_LINEAR)
			normalize_linear(v, n);
		else
			reciprocal_rank(v, n, nm->k, q->norm_order);
	}
	return 0;
}

int rank_query_global_scores(struct rank_query *q, const struct rank_docs *d, const uint32_t *lids,
                             const double *first, size_t from, size_t to, const double *vals,
                             size_t n, double *scores, struct strata_error *err)
{
	const struct rank_profile *p = q->p;
	q->docs = d;
	q->cand = -1;
	q->ncand_lookup = 0;
	q->norm_read = vals;
	q->norm_n = n;
	for (size_t i = from; i < to; i++) {
		struct rank_val r;
		begin_doc(q, lids[i], first ? first[i] : 0.0);
		q->gcand = i;
		int rc = rank_vm_run(q, &p->global, &r, err);
		if (rc)
			return rc;
		scores[i] = r.num;
	}
	return 0;
}

int rank_query_global_phase(struct rank_query *q, const struct rank_docs *d, const uint32_t *lids,
                            const double *first, size_t n, double *scores,
                            struct strata_error *err)
{
	const struct rank_profile *p = q->p;
	if (!p->has_global) {
		for (size_t i = 0; i < n; i++)
			scores[i] = first ? first[i] : 0.0;
		return 0;
	}
	size_t nn = (size_t)p->nnorms;
	int rc;
	if (nn && (rc = grow_to((void **)&q->norm_vals, &q->norm_cap, nn * n, sizeof(double), err)))
		return rc;
	if ((rc = rank_query_global_args(q, d, lids, first, 0, n, n, q->norm_vals, err)) ||
	    (rc = rank_query_global_normalize(q, q->norm_vals, n, err)))
		return rc;
	return rank_query_global_scores(q, d, lids, first, 0, n, q->norm_vals, n, scores, err);
}

int rank_query_features(struct rank_query *q, const struct rank_docs *d, uint32_t lid, double first,
                        int which, rank_feature_fn *fn, void *ud, struct strata_error *err)
{
	const struct rank_profile *p = q->p;
	const struct rank_prog *progs = which == RANK_SUMMARY_FEATURES ? p->summary : p->match;
	int n = which == RANK_SUMMARY_FEATURES ? p->nsummary : p->nmatch;
	q->docs = d;
	q->cand = -1;
	q->ncand_lookup = 1;
	begin_doc(q, lid, first);
	for (int i = 0; i < n; i++) {
		struct rank_val v;
		int rc = rank_vm_run(q, &progs[i], &v, err);
		if (rc) {
			q->ncand_lookup = 0;
			return rc;
		}
		const struct rank_type *t = &p->types[progs[i].result];
		struct rank_feature f = { .name = progs[i].name, .rank = t->rank, .dims = t->dims,
		                          .dim_names = (const char *const *)t->dim_names, .ncells = 1 };
		if (t->rank == 0) {
			f.cells = &v.num;
		} else if (rank_type_mapped(t)) {
			f.sparse = v.cells;
			f.ncells = rank_type_cells(t);
		} else {
			size_t k = rank_type_cells(t);
			double *c = base_arena_alloc(&q->arena, k * sizeof *c, 64);
			if (!c) {
				q->ncand_lookup = 0;
				return base_nomem(err, "feature %s", f.name);
			}
			for (size_t j = 0; j < k; j++)
				c[j] = rank_cell(v.cell, v.cells, j);
			f.ncells = k;
			f.cells = c;
		}
		if ((rc = fn(ud, &f))) {
			q->ncand_lookup = 0;
			return rc;
		}
	}
	q->ncand_lookup = 0;
	return 0;
}

int rank_query_eval(struct rank_query *q, const struct rank_prog *prog, const struct rank_docs *d,
                    uint32_t lid, double first, struct rank_val *out, struct strata_error *err)
{
	size_t need = q->nslots + prog_slots(prog);
	/* The stack was sized for the profile's own programs; make room for one
	 * more at its end (it stays, for the next such program). */
	if (need > q->nstack) {
		struct rank_val *s = base_realloc(q->stack, q->nstack * sizeof *s, need * sizeof *s);
		if (!s)
			return base_nomem(err, "query stack");
		q->stack = s;
		q->nstack = need;
	}
	q->docs = d;
	q->cand = -1;
	q->ncand_lookup = 0;
	begin_doc(q, lid, first);
	q->top = q->nslots;
	int rc = rank_vm_run(q, prog, out, err);
	q->top = 0;
	return rc;
}
