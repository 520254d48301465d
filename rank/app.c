/*
 * app.c: rank.h, the face of rank/: loading an application (every .sd file
 * in sorted order, parsed and resolved; then every model its onnx-model
 * blocks name, each file loaded once, through the caller's struct
 * rank_loader when there is one; then its profiles compiled against them),
 * the schema and profile accessors, and query evaluation: inputs, the
 * nearestNeighbor item, the phases and the feature callbacks.
 *
 * A loaded struct rank_app is immutable and shared by threads: everything a
 * query changes lives in its struct rank_query (input values, the arena of
 * per-document temporaries, the value stack, one runtime context per model,
 * pooled model buffers).  A query's steady state allocates nothing: the
 * arena keeps its blocks across documents and the pools only grow.
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
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/runtime.h"
#include "rank_int.h"

struct app_model {
	char *path;
	struct rt_model *m;
};

struct rank_app {
	char *dir;
	struct rank_loader loader; /* load NULL: runtime_model_load */
	int nschemas;
	struct rank_schema *schemas;
	int nmodels, capmodels;
	struct app_model *models;     /* one per model file */
	int nrefs, caprefs;
	struct rank_model_ref *refs;  /* one per onnx-model block */
};

/* The model of the file decl names: loaded once per path, then shared by
 * every block, profile and schema that names the same file. */
static int load_model(struct rank_app *app, const struct rank_model_decl *decl,
                      struct rt_model **out, struct strata_error *err)
{
	char *path = base_path_join(app->dir, decl->file);
	if (!path)
		return base_err(err, STRATA_NOMEM, "model path");
	for (int i = 0; i < app->nmodels; i++)
		if (strcmp(app->models[i].path, path) == 0) {
			base_strfree(path);
			*out = app->models[i].m;
			return 0;
		}
	struct rt_model *m;
	int rc = app->loader.load ? app->loader.load(app->loader.ud, decl->file, path, &m, err)
	                          : runtime_model_load(path, &m, err);
	if (rc) {
		if (rc == ENOENT)
			rc = base_err(err, STRATA_NOT_FOUND, "model file %s not found", path);
		base_strfree(path);
		return base_err_prefix(err, rc, "%s:%d:%d: onnx-model %s", decl->pos.file,
		                       decl->pos.line, decl->pos.col, decl->name);
	}
	size_t cap = (size_t)app->capmodels;
	if (base_grow((void **)&app->models, &cap, (size_t)app->nmodels + 1, sizeof *app->models,
	              1 << 16)) {
		runtime_model_free(m);
		base_strfree(path);
		return base_err(err, STRATA_NOMEM, "model table");
	}
	app->capmodels = (int)cap;
	app->models[app->nmodels++] = (struct app_model){ path, m };
	*out = m;
	return 0;
}

/* Load the model of decl and list it among the application's model refs. */
static int add_ref(struct rank_app *app, const struct rank_model_decl *decl,
                   struct strata_error *err)
{
	size_t cap = (size_t)app->caprefs;
	if (base_grow((void **)&app->refs, &cap, (size_t)app->nrefs + 1, sizeof *app->refs,
	              1 << 16))
		return base_err(err, STRATA_NOMEM, "model table");
	app->caprefs = (int)cap;
	struct rt_model *m = NULL;
	int rc = load_model(app, decl, &m, err);
	if (rc)
		return rc;
	app->refs[app->nrefs++] = (struct rank_model_ref){ decl, m };
	return 0;
}

/* Every onnx-model block of sd: each profile's, in order, then the
 * schema's own. */
static int load_models(struct rank_app *app, const struct rank_sd *sd, struct strata_error *err)
{
	int rc = 0;
	for (int i = 0; rc == 0 && i < sd->nprofiles; i++)
		for (int j = 0; rc == 0 && j < sd->profiles[i].nmodels; j++)
			rc = add_ref(app, &sd->profiles[i].models[j], err);
	for (int j = 0; rc == 0 && j < sd->nmodels; j++)
		rc = add_ref(app, &sd->models[j], err);
	return rc;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void free_names(char **names, size_t n, size_t cap)
{
	for (size_t i = 0; i < n; i++)
		base_strfree(names[i]);
	base_free(names, cap * sizeof *names);
}

/* The .sd file names in dir, sorted. */
static int list_sd(const char *dir, char ***out, size_t *n, size_t *cap, struct strata_error *err)
{
	DIR *d = opendir(dir);
	if (!d) {
		int e = errno;
		return base_err(err, e == ENOENT ? STRATA_NOT_FOUND : e, "%s: %s", dir, strerror(e));
	}
	char **names = NULL;
	size_t k = 0, c = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		if (len < 4 || strcmp(de->d_name + len - 3, ".sd") != 0 || de->d_name[0] == '.')
			continue;
		if (base_grow((void **)&names, &c, k + 1, sizeof *names, 1 << 16) ||
		    !(names[k] = base_strdup(de->d_name))) {
			closedir(d);
			free_names(names, k, c);
			return base_err(err, STRATA_NOMEM, "listing %s", dir);
		}
		k++;
	}
	closedir(d);
	qsort(names, k, sizeof *names, cmp_str);
	*out = names;
	*n = k;
	*cap = c;
	return 0;
}

/* ---- the pools of retired queries ------------------------------------------- */

static void query_destroy(struct rank_query *q);

/* One pool per profile of s, keeping one query each. */
static int pools_init(struct rank_schema *s, struct strata_error *err)
{
	s->qpools = base_calloc((size_t)s->nprofiles + 1, sizeof *s->qpools);
	if (!s->qpools)
		return base_err(err, STRATA_NOMEM, "schema %s", s->sd->name);
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

static void pools_free(struct rank_schema *s)
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

int rank_app_set_query_pool(struct rank_app *app, int n, struct strata_error *err)
{
	if (n < 0 || n > RANK_QUERY_POOL_MAX)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "query pool of %d generations: from 0 to %d", n, RANK_QUERY_POOL_MAX);
	for (int i = 0; i < app->nschemas; i++) {
		struct rank_schema *s = &app->schemas[i];
		for (int j = 0; s->qpools && j < s->nprofiles; j++) {
			pthread_mutex_lock(&s->qpools[j].lock);
			s->qpools[j].keep = n;
			pthread_mutex_unlock(&s->qpools[j].lock);
			pool_trim(&s->qpools[j], n);
		}
	}
	return 0;
}

void rank_app_pool_stats(const struct rank_app *app, uint64_t *hits, uint64_t *misses)
{
	*hits = *misses = 0;
	for (int i = 0; i < app->nmodels; i++) {
		struct rt_pool_stats st;
		runtime_model_pool_stats(app->models[i].m, &st);
		*hits += st.hits;
		*misses += st.misses;
	}
}

/* ---- loading ----------------------------------------------------------------- */

static int load_schema(struct rank_app *app, struct rank_schema *s, const char *path,
                       struct strata_error *err)
{
	char *text;
	size_t len;
	int rc = base_read_file(path, &text, &len, err);
	if (rc)
		return rc;
	rc = rank_sd_parse(path, text, len, &s->sd, err);
	base_free(text, len + 1);
	if (rc)
		return rc;
	if ((rc = rank_sd_resolve(s->sd, err)) || (rc = load_models(app, s->sd, err)))
		return rc;
	s->profiles = base_calloc((size_t)s->sd->nprofiles + 1, sizeof *s->profiles);
	if (!s->profiles)
		return base_err(err, STRATA_NOMEM, "schema %s", path);
	s->nprofiles = s->sd->nprofiles;
	struct rank_models models = { app->nrefs, app->refs };
	for (int i = 0; i < s->sd->nprofiles; i++)
		if ((rc = rank_profile_compile(&s->profiles[i], s, &s->sd->profiles[i], &models, err)))
			return rc;
	return pools_init(s, err);
}

int rank_app_load(const char *appdir, struct rank_app **out, struct strata_error *err)
{
	return rank_app_load_with(appdir, NULL, out, err);
}

int rank_app_load_with(const char *appdir, const struct rank_loader *loader,
                       struct rank_app **out, struct strata_error *err)
{
	*out = NULL;
	struct rank_app *app = base_calloc(1, sizeof *app);
	if (!app || !(app->dir = base_strdup(appdir))) {
		base_free(app, sizeof *app);
		return base_err(err, STRATA_NOMEM, "application %s", appdir);
	}
	if (loader)
		app->loader = *loader;
	char *sdir = base_path_join(appdir, "schemas");
	char **names = NULL;
	size_t n = 0, cap = 0;
	int rc = sdir ? list_sd(sdir, &names, &n, &cap, err) : base_err(err, STRATA_NOMEM, "path");
	if (rc == 0 && n == 0)
		rc = base_err(err, STRATA_NOT_FOUND, "%s: no .sd files", sdir);
	if (rc == 0) {
		app->schemas = base_calloc(n, sizeof *app->schemas);
		if (!app->schemas)
			rc = base_err(err, STRATA_NOMEM, "application %s", appdir);
	}
	for (size_t i = 0; rc == 0 && i < n; i++) {
		char *path = base_path_join(sdir, names[i]);
		app->nschemas = (int)i + 1;
		rc = path ? load_schema(app, &app->schemas[i], path, err) :
		            base_err(err, STRATA_NOMEM, "path");
		base_strfree(path);
		for (size_t j = 0; rc == 0 && j < i; j++)
			if (strcmp(app->schemas[j].sd->name, app->schemas[i].sd->name) == 0)
				rc = base_err(err, STRATA_TYPE, "%s:%d:%d: schema '%s' is defined twice",
				              app->schemas[i].sd->pos.file, app->schemas[i].sd->pos.line,
				              app->schemas[i].sd->pos.col, app->schemas[i].sd->name);
	}
	free_names(names, n, cap);
	base_strfree(sdir);
	if (rc) {
		rank_app_free(app);
		return rc;
	}
	*out = app;
	return 0;
}

void rank_app_free(struct rank_app *app)
{
	if (!app)
		return;
	for (int i = 0; i < app->nschemas; i++) {
		struct rank_schema *s = &app->schemas[i];
		pools_free(s);
		for (int j = 0; j < s->nprofiles; j++)
			rank_profile_release(&s->profiles[j]);
		if (s->sd)
			base_free(s->profiles, ((size_t)s->sd->nprofiles + 1) * sizeof *s->profiles);
		rank_sd_free(s->sd);
	}
	base_free(app->schemas, (size_t)app->nschemas * sizeof *app->schemas);
	for (int i = 0; i < app->nmodels; i++) {
		runtime_model_free(app->models[i].m);
		base_strfree(app->models[i].path);
	}
	base_free(app->models, (size_t)app->capmodels * sizeof *app->models);
	base_free(app->refs, (size_t)app->caprefs * sizeof *app->refs);
	base_strfree(app->dir);
	base_free(app, sizeof *app);
}

/* ---- accessors --------------------------------------------------------------- */

int rank_app_nschemas(const struct rank_app *app)
{
	return app->nschemas;
}

const struct rank_schema *rank_app_schema(const struct rank_app *app, int i)
{
	return i >= 0 && i < app->nschemas ? &app->schemas[i] : NULL;
}

const struct rank_schema *rank_app_schema_find(const struct rank_app *app, const char *doctype)
{
	for (int i = 0; i < app->nschemas; i++)
		if (strcmp(app->schemas[i].sd->name, doctype) == 0)
			return &app->schemas[i];
	return NULL;
}

const char *rank_schema_name(const struct rank_schema *s)
{
	return s->sd->name;
}

int rank_schema_nfields(const struct rank_schema *s)
{
	return s->sd->nfields;
}

const struct rank_field *rank_schema_field(const struct rank_schema *s, int i)
{
	return i >= 0 && i < s->sd->nfields ? &s->sd->fields[i] : NULL;
}

int rank_schema_field_index(const struct rank_schema *s, const char *name)
{
	for (int i = 0; i < s->sd->nfields; i++)
		if (strcmp(s->sd->fields[i].name, name) == 0)
			return i;
	return -1;
}

const struct rank_profile *rank_profile_find(const struct rank_schema *s, const char *name)
{
	for (int i = 0; i < s->nprofiles; i++)
		if (strcmp(s->profiles[i].decl->name, name) == 0)
			return &s->profiles[i];
	return NULL;
}

const char *rank_profile_name(const struct rank_profile *p)
{
	return p->decl->name;
}

int rank_profile_has_second_phase(const struct rank_profile *p)
{
	return p->has_second;
}

int rank_profile_rerank_count(const struct rank_profile *p)
{
	return p->rerank;
}

int rank_profile_ninputs(const struct rank_profile *p)
{
	return p->ninputs;
}

const struct rank_input_info *rank_profile_input(const struct rank_profile *p, int i)
{
	return i >= 0 && i < p->ninputs ? &p->inputs[i] : NULL;
}

int rank_profile_input_index(const struct rank_profile *p, const char *name)
{
	for (int i = 0; i < p->ninputs; i++)
		if (strcmp(p->inputs[i].name, name) == 0)
			return i;
	return -1;
}

/* ---- queries ------------------------------------------------------------------- */

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
	base_arena_reset(&q->arena);
	q->docs = NULL;
	q->lid = 0;
	q->first = 0.0;
	q->top = 0;
	q->cand = -1;
	q->ncand_lookup = 0;
	q->next = NULL;
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
		return base_err(err, STRATA_NOMEM, "query");
	q->p = p;
	q->model_value = rank_model_value;
	base_arena_init(&q->arena, 1 << 16);
	q->inputs = base_calloc((size_t)p->ninputs + 1, sizeof *q->inputs);
	q->nn_input = base_calloc((size_t)p->sd->nfields + 1, sizeof *q->nn_input);
	q->models = base_calloc((size_t)p->nmodels + 1, sizeof *q->models);
	/* Every program can be active at most once at a time (models cannot
	 * depend on themselves), so the sum of their frames bounds the stack. */
	size_t slots = prog_slots(&p->first) + prog_slots(&p->second) + 1;
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
	if (!q->inputs || !q->nn_input || !q->models || !q->stack) {
		query_destroy(q);
		return base_err(err, STRATA_NOMEM, "query");
	}
	for (int i = 0; i < p->ninputs && rc == 0; i++) {
		size_t n = p->inputs[i].ncells;
		q->inputs[i] = base_calloc(n ? n : 1, sizeof(double));
		if (!q->inputs[i])
			rc = base_err(err, STRATA_NOMEM, "query input %s", p->decl->inputs[i].name);
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
	base_free(q->stack, q->nstack * sizeof *q->stack);
	base_arena_free(&q->arena);
	base_free(q, sizeof *q);
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

int rank_query_set_input(struct rank_query *q, const char *name, const double *cells, size_t n,
                         struct strata_error *err)
{
	int i = rank_profile_input_index(q->p, name);
	if (i < 0)
		return base_err(err, STRATA_NOT_FOUND, "query(%s) is not an input of profile '%s'", name,
		                q->p->decl->name);
	if (n != q->p->inputs[i].ncells)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "query(%s) takes %zu cells, %zu were given", name,
		                q->p->inputs[i].ncells, n);
	memcpy(q->inputs[i], cells, n * sizeof *cells);
	return 0;
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
	int same = in->rank == fd->rank;
	for (int k = 0; same && k < fd->rank; k++)
		same = in->dims[k] == fd->dims[k];
	if (!same)
		return base_err(err, STRATA_TYPE,
		                "nearestNeighbor: query(%s) and field '%s' differ in shape", input,
		                field);
	q->nn_input[f] = i;
	return 0;
}

double rank_query_nn_distance(struct rank_query *q, const struct rank_docs *d, uint32_t lid)
{
	const struct rank_profile *p = q->p;
	for (int f = 0; f < p->sd->nfields; f++) {
		int i = q->nn_input[f];
		if (i < 0)
			continue;
		const struct rank_field *fd = &p->sd->fields[f];
		const void *cells = d->attr(d->ud, f, lid);
		if (!cells)
			return INFINITY;
		return rank_tensor_distance(fd->distance_metric, fd->cell, cells, BASE_DT_DOUBLE,
		                            q->inputs[i], p->inputs[i].ncells);
	}
	return INFINITY;
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
	for (size_t i = 0; i < n; i++) {
		struct rank_val v;
		begin_doc(q, lids[i], 0.0);
		int rc = rank_vm_run(q, &q->p->first, &v, err);
		if (rc)
			return rc;
		scores[i] = v.num;
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
		} else {
			size_t k = 1;
			for (int j = 0; j < t->rank; j++)
				k *= (size_t)t->dims[j];
			double *c = base_arena_alloc(&q->arena, k * sizeof *c, 64);
			if (!c) {
				q->ncand_lookup = 0;
				return base_err(err, STRATA_NOMEM, "feature %s", f.name);
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
			return base_err(err, STRATA_NOMEM, "query stack");
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
