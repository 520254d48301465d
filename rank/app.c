/*
 * app.c: loading an application, the face of rank.h: every .sd file in
 * sorted order, with the .profile files of its schema, parsed and resolved;
 * then every model its onnx-model blocks
 * name, each file loaded once, through the caller's struct rank_loader when
 * there is one; then its profiles compiled against them (compile.c) and a
 * pool of retired queries made for each (query.c).  Also the
 * application-wide settings and figures: the query pools' size, the model
 * pools' hits and misses.
 *
 * A loaded struct rank_app is immutable and shared by threads, but for the
 * pools of retired queries, each behind its own mutex (query.c).
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../runtime/runtime.h"
#include "rank_eval.h"

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
		return base_nomem(err, "model path");
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
		return base_nomem(err, "model table");
	}
	app->capmodels = (int)cap;
	app->models[app->nmodels++] = (struct app_model){ path, m };
	*out = m;
	return 0;
}

/* The shape of constant c as the loader sees it. */
static void shape_of(const struct rank_constant_decl *c, struct rank_input_info *shape)
{
	memset(shape, 0, sizeof *shape);
	shape->name = c->name;
	shape->rank = c->type.rank;
	for (int k = 0; k < c->type.rank; k++) {
		shape->dims[k] = c->type.dims[k];
		shape->dim_names[k] = c->type.dim_names[k];
	}
	shape->ncells = rank_type_cells(&c->type);
}

/* Constant c names a file and the application has no loader for it. */
static int no_loader(const struct rank_constant_decl *c, struct strata_error *err)
{
	const struct rank_pos *pos = &c->file_pos;
	return base_err(err, STRATA_NOT_IMPLEMENTED,
	                "%s:%d:%d: constant '%s': files are read only by the engine's loader",
	                pos->file, pos->line, pos->col, c->name);
}

/* The loader failed with rc on c's file: the constant's place in front. */
static int load_failed(const struct rank_constant_decl *c, int rc, struct strata_error *err)
{
	const struct rank_pos *pos = &c->file_pos;
	if (rc == STRATA_NOMEM)
		return rc;
	return base_err_prefix(err, rc, "%s:%d:%d: constant '%s'", pos->file, pos->line, pos->col,
	                       c->name);
}

/* A constant file of a type with mapped dimensions: its blocks. */
static int load_sparse(struct rank_app *app, struct rank_constant_decl *c, struct strata_error *err)
{
	if (!app->loader.load_sparse_constant)
		return no_loader(c, err);
	struct rank_input_info shape;
	shape_of(c, &shape);
	char *path = base_path_join(app->dir, c->file);
	int rc = path ? app->loader.load_sparse_constant(app->loader.ud, path, &shape, &c->nblocks,
	                                                 &c->labels, &c->cells, err)
	              : base_nomem(err, "constant '%s'", c->name);
	base_strfree(path);
	if (rc) {
		c->nblocks = 0;
		c->labels = NULL;
		c->cells = NULL;
		return load_failed(c, rc, err);
	}
	size_t nc = c->nblocks * shape.ncells;
	c->ncells = nc ? nc : 1;
	return 0;
}

/* Read constant c's file, when it names one, through the loader. */
static int load_constant(struct rank_app *app, struct rank_constant_decl *c,
                         struct strata_error *err)
{
	if (!c->file)
		return 0;
	if (rank_type_mapped(&c->type))
		return load_sparse(app, c, err);
	if (!app->loader.load_constant)
		return no_loader(c, err);
	struct rank_input_info shape;
	shape_of(c, &shape);
	double *cells = base_alloc(shape.ncells * sizeof *cells);
	if (!cells)
		return base_nomem(err, "constant '%s'", c->name);
	char *path = base_path_join(app->dir, c->file);
	int rc = path ? app->loader.load_constant(app->loader.ud, path, &shape, cells, err)
	              : base_nomem(err, "constant '%s'", c->name);
	base_strfree(path);
	if (rc) {
		base_free(cells, shape.ncells * sizeof *cells);
		return load_failed(c, rc, err);
	}
	c->cells = cells;
	c->ncells = shape.ncells;
	return 0;
}

/* Read every constant of sd that comes from a file, before inheritance
 * copies them. */
static int load_constants(struct rank_app *app, struct rank_sd *sd, struct strata_error *err)
{
	int rc = 0;
	for (int i = 0; i < sd->nconstants && !rc; i++)
		rc = load_constant(app, &sd->constants[i], err);
	for (int i = 0; i < sd->nprofiles && !rc; i++)
		for (int k = 0; k < sd->profiles[i].nconstants && !rc; k++)
			rc = load_constant(app, &sd->profiles[i].constants[k], err);
	return rc;
}

/* Load the model of decl and list it among the application's model refs. */
static int add_ref(struct rank_app *app, const struct rank_model_decl *decl,
                   struct strata_error *err)
{
	size_t cap = (size_t)app->caprefs;
	if (base_grow((void **)&app->refs, &cap, (size_t)app->nrefs + 1, sizeof *app->refs,
	              1 << 16))
		return base_nomem(err, "model table");
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

/* The names of the files in dir that end in suffix (".sd"), sorted. */
static int list_files(const char *dir, const char *suffix, char ***out, size_t *n, size_t *cap,
                      struct strata_error *err)
{
	size_t slen = strlen(suffix);
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
		if (len <= slen || strcmp(de->d_name + len - slen, suffix) != 0 || de->d_name[0] == '.')
			continue;
		if (base_grow((void **)&names, &c, k + 1, sizeof *names, 1 << 16) ||
		    !(names[k] = base_strdup(de->d_name))) {
			closedir(d);
			free_names(names, k, c);
			return base_nomem(err, "listing %s", dir);
		}
		k++;
	}
	closedir(d);
	if (k > 1) /* none found: names is NULL, which qsort may not be given */
		qsort(names, k, sizeof *names, cmp_str);
	*out = names;
	*n = k;
	*cap = c;
	return 0;
}

int rank_app_set_query_pool(struct rank_app *app, int n, struct strata_error *err)
{
	if (n < 0 || n > RANK_QUERY_POOL_MAX)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "query pool of %d generations: from 0 to %d", n, RANK_QUERY_POOL_MAX);
	for (int i = 0; i < app->nschemas; i++) {
		struct rank_schema *s = &app->schemas[i];
		for (int j = 0; s->qpools && j < s->nprofiles; j++)
			rank_qpool_keep(&s->qpools[j], n);
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

/* The errors of one load: the first, reported through err at the end, and
 * with errs all of them (struct strata_errors). */
struct errs {
	struct strata_errors *list; /* NULL: stop at the first */
	int first_rc;
	struct strata_error first;
};

/* Note error rc (in err) unless it is 0; returns whether loading goes on
 * past it. */
static int noted(struct errs *e, int rc, const struct strata_error *err, int listed)
{
	if (!rc)
		return 1;
	if (!listed)
		base_errs_add(e->list, err);
	if (!e->first_rc || rc == STRATA_NOMEM) {
		e->first_rc = rc;
		if (err)
			e->first = *err;
	}
	return e->list && rc != STRATA_NOMEM;
}

/* Rank profiles may also live in files of their own, as in Vespa:
 * schemas/NAME/ *.profile beside schemas/NAME.sd (NAME the schema's), each
 * holding rank-profile blocks of that schema.  Parse them into sd, in name
 * order.  Returns 0 or the first error (each noted in e). */
static int parse_profile_files(struct rank_sd *sd, const char *sdpath, struct errs *e,
                               struct strata_error *err)
{
	const char *slash = strrchr(sdpath, '/');
	size_t dlen = slash ? (size_t)(slash - sdpath) : 0;
	char *parent = base_strndup(sdpath, dlen);
	char *dir = parent ? base_path_join(dlen ? parent : ".", sd->name) : NULL;
	base_strfree(parent);
	if (!dir)
		return noted(e, base_nomem(err, "schema %s", sd->name), err, 0), STRATA_NOMEM;
	struct stat st;
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		base_strfree(dir);
		return 0;
	}
	char **names = NULL;
	size_t n = 0, cap = 0;
	int rc = list_files(dir, ".profile", &names, &n, &cap, err), first = 0;
	if (rc)
		noted(e, rc, err, 0);
	for (size_t i = 0; !rc && i < n; i++) {
		char *path = base_path_join(dir, names[i]), *text = NULL;
		size_t len;
		int r = path ? base_read_file(path, &text, &len, err) : base_nomem(err, "path");
		if (!r) {
			r = rank_sd_parse_profiles(sd, path, text, len, e->list, err);
			base_free(text, len + 1);
			if (r)
				noted(e, r, err, e->list != NULL);
		} else {
			noted(e, r, err, 0);
		}
		base_strfree(path);
		if (r && !first)
			first = r;
		if (r == STRATA_NOMEM || (r && !e->list))
			rc = r;
	}
	free_names(names, n, cap);
	base_strfree(dir);
	return rc ? rc : first;
}

/* Parse one schema file into s.  Returns 0 or its error (noted in e). */
static int parse_schema(struct rank_schema *s, const char *path, struct errs *e,
                        struct strata_error *err)
{
	char *text;
	size_t len;
	int rc = base_read_file(path, &text, &len, err);
	if (rc) {
		noted(e, rc, err, 0);
		return rc;
	}
	rc = rank_sd_parse_all(path, text, len, e->list, &s->sd, err);
	base_free(text, len + 1);
	if (rc)
		noted(e, rc, err, e->list != NULL);
	return rc ? rc : parse_profile_files(s->sd, path, e, err);
}

/* Documents inherit across schemas: resolve them over all the parsed ones. */
static int inherit_all(struct rank_app *app, struct errs *e, struct strata_error *err)
{
	int n = 0;
	struct rank_sd **sds = base_calloc((size_t)app->nschemas + 1, sizeof *sds);
	if (!sds) {
		noted(e, base_nomem(err, "application %s", app->dir), err, 0);
		return STRATA_NOMEM;
	}
	for (int i = 0; i < app->nschemas; i++)
		if (app->schemas[i].sd)
			sds[n++] = app->schemas[i].sd;
	int rc = rank_sds_inherit(sds, n, e->list, err);
	if (!rc || (e->list && rc != STRATA_NOMEM)) {
		/* references and imports, between the schemas that resolved */
		struct strata_error first = *err;
		int r = rank_sds_types_resolve(sds, n, e->list, err);
		if ((rc && r != STRATA_NOMEM) || r == 0)
			*err = first;
		if (!rc || r == STRATA_NOMEM)
			rc = r;
	}
	base_free(sds, ((size_t)app->nschemas + 1) * sizeof *sds);
	noted(e, rc, err, e->list != NULL);
	return rc;
}

/* Pass up, through the loader, what s's profiles accept that changes
 * nothing: each rank property once, though inheritance gives it to many. */
static void notices(const struct rank_app *app, const struct rank_schema *s)
{
	if (!app->loader.notice)
		return;
	for (int i = 0; i < s->nprofiles; i++) {
		const struct rank_profile_decl *d = s->profiles[i].decl;
		for (int k = 0; d && k < d->nfprops; k++) {
			char msg[STRATA_ERRMSG_MAX];
			if (!rank_fprop_notice(&s->profiles[i], k, msg, sizeof msg))
				continue;
			int seen = 0;
			for (int j = 0; j < i && !seen; j++) {
				const struct rank_profile_decl *o = s->profiles[j].decl;
				for (int m = 0; o && m < o->nfprops && !seen; m++)
					seen = o->fprops[m].pos.file == d->fprops[k].pos.file &&
					       o->fprops[m].pos.line == d->fprops[k].pos.line &&
					       o->fprops[m].pos.col == d->fprops[k].pos.col;
			}
			if (!seen)
				app->loader.notice(app->loader.ud, msg);
		}
	}
}

/* After every schema is parsed and their documents resolved: constants,
 * profile inheritance, models, then each profile compiled on its own.
 * Returns 0 or the error that stops it (the others are noted in e). */
static int load_schema(struct rank_app *app, struct rank_schema *s, struct errs *e,
                       struct strata_error *err)
{
	int rc;
	if ((rc = load_constants(app, s->sd, err)) != 0) {
		noted(e, rc, err, 0);
		return rc;
	}
	/* Profiles whose inheritance failed are left out; the others compile. */
	int failed = rank_sd_resolve_all(s->sd, e->list, err);
	if (failed && !noted(e, failed, err, e->list != NULL))
		return failed;
	/* each flat profile declares the query inputs it reads undeclared */
	for (int i = 0; i < s->sd->nprofiles; i++)
		if (!s->sd->profiles[i].unresolved &&
		    ((rc = rank_profile_typed_inputs(&s->sd->profiles[i], app->loader.typed_inputs,
		                                     app->loader.ntyped_inputs, err)) ||
		     (rc = rank_profile_implicit_inputs(&s->sd->profiles[i], err)))) {
			noted(e, rc, err, 0);
			return rc;
		}
	if ((rc = load_models(app, s->sd, err))) {
		noted(e, rc, err, 0);
		return rc;
	}
	s->profiles = base_calloc((size_t)s->sd->nprofiles + 1, sizeof *s->profiles);
	if (!s->profiles) {
		noted(e, base_nomem(err, "schema %s", s->sd->file), err, 0);
		return STRATA_NOMEM;
	}
	s->nprofiles = s->sd->nprofiles;
	struct rank_models models = { app->nrefs, app->refs, &app->loader };
	for (int i = 0; i < s->sd->nprofiles; i++) {
		if (s->sd->profiles[i].unresolved)
			continue;
		rc = rank_profile_compile(&s->profiles[i], s, &s->sd->profiles[i], &models, err);
		if (!rc)
			rank_profile_mark_inputs(&s->profiles[i]);
		else if (!noted(e, rc, err, 0))
			return rc;
		failed |= rc != 0;
	}
	if (failed)
		return e->first_rc;
	notices(app, s);
	rc = rank_qpools_init(s, err);
	noted(e, rc, err, 0);
	return rc;
}

int rank_app_load(const char *appdir, struct rank_app **out, struct strata_error *err)
{
	return rank_app_load_with(appdir, NULL, out, err);
}

int rank_app_load_with(const char *appdir, const struct rank_loader *loader,
                       struct rank_app **out, struct strata_error *err)
{
	return rank_app_load_all(appdir, loader, NULL, out, err);
}

int rank_app_load_all(const char *appdir, const struct rank_loader *loader,
                      struct strata_errors *errs, struct rank_app **out,
                      struct strata_error *err)
{
	*out = NULL;
	struct errs e = { .list = errs };
	if (errs)
		errs->n = errs->dropped = 0;
	struct rank_app *app = base_calloc(1, sizeof *app);
	if (!app || !(app->dir = base_strdup(appdir))) {
		base_free(app, sizeof *app);
		return base_nomem(err, "application %s", appdir);
	}
	if (loader)
		app->loader = *loader;
	char *sdir = base_path_join(appdir, "schemas");
	char **names = NULL;
	size_t n = 0, cap = 0;
	int rc = sdir ? list_files(sdir, ".sd", &names, &n, &cap, err) : base_nomem(err, "path");
	if (rc == 0 && n == 0)
		rc = base_err(err, STRATA_NOT_FOUND, "%s: no .sd files", sdir);
	if (rc == 0) {
		app->schemas = base_calloc(n, sizeof *app->schemas);
		if (!app->schemas)
			rc = base_nomem(err, "application %s", appdir);
		else
			app->nschemas = (int)n; /* freed by this count, loaded or not */
	}
	for (size_t i = 0; rc == 0 && i < n; i++) {
		char *path = base_path_join(sdir, names[i]);
		const struct rank_sd *sd = NULL;
		if (!path) {
			rc = base_nomem(err, "path");
		} else if ((rc = parse_schema(&app->schemas[i], path, &e, err)) == 0) {
			sd = app->schemas[i].sd;
			for (size_t j = 0; rc == 0 && j < i; j++)
				if (app->schemas[j].sd && strcmp(app->schemas[j].sd->name, sd->name) == 0)
					rc = base_err(err, STRATA_TYPE,
					              "%s:%d:%d: schema '%s' is defined twice",
					              sd->pos.file, sd->pos.line, sd->pos.col, sd->name);
			if (rc)
				noted(&e, rc, err, 0);
		}
		base_strfree(path);
		/* with a list of errors, the next file is checked all the same */
		if (rc && errs && rc != STRATA_NOMEM)
			rc = 0;
	}
	/* Documents resolve across the schemas that parsed; then each of those
	 * is checked on its own. */
	if (rc == 0 && ((rc = inherit_all(app, &e, err)) == 0 || (errs && rc != STRATA_NOMEM))) {
		rc = 0;
		for (size_t i = 0; rc == 0 && i < n; i++) {
			if (!app->schemas[i].sd || !app->schemas[i].sd->docs_resolved)
				continue;
			rc = load_schema(app, &app->schemas[i], &e, err);
			if (rc && errs && rc != STRATA_NOMEM)
				rc = 0;
		}
	}
	free_names(names, n, cap);
	base_strfree(sdir);
	if (!rc && e.first_rc) {
		rc = e.first_rc;
		if (err)
			*err = e.first;
	} else if (rc && !e.first_rc) {
		base_errs_add(errs, err); /* the folder, before any file */
	}
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
		rank_qpools_free(s);
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

