/*
 * db.c: opening and closing an application.
 *
 * strata_open() loads the rank application (schemas, profiles, models), opens
 * the store in the data folder (APP/.strata unless given) and registers every
 * schema as a store document type whose field i is the schema's field i, so
 * that a field index means the same thing to rank (attribute callbacks) and
 * to the store.  Document ids are parsed here too: the doctype part selects
 * the struct eng_doctype every operation works on.  The models come from the
 * compiled contexts `strata deploy` leaves in DATA/contexts while they are
 * fresh (contexts.c).
 *
 * Invariant: a struct strata is immutable after strata_open() returns, but
 * for its statistics counters (atomics), so any number of query threads may
 * share it.  The pool generations of strata_options size both the models'
 * session buffer pools and the rank profiles' pools of retired queries, so
 * that one generation is the whole evaluation state of one query.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "engine_int.h"
#include "../runtime/runtime.h"

static int store_type_of(int rank_type)
{
	switch (rank_type) {
	case RANK_FT_STRING: return STORE_T_STRING;
	case RANK_FT_INT: return STORE_T_INT;
	case RANK_FT_LONG: return STORE_T_LONG;
	case RANK_FT_FLOAT: return STORE_T_FLOAT;
	case RANK_FT_DOUBLE: return STORE_T_DOUBLE;
	case RANK_FT_BOOL: return STORE_T_BOOL;
	case RANK_FT_TENSOR: return STORE_T_TENSOR;
	case RANK_FT_ARRAY:
	case RANK_FT_WSET:
	case RANK_FT_MAP:
	case RANK_FT_STRUCT: return STORE_T_JSON;
	case RANK_FT_RAW:
	case RANK_FT_REFERENCE:
	case RANK_FT_PREDICATE: return STORE_T_STRING;
	case RANK_FT_POSITION: return STORE_T_LONG; /* two int32 (position.c) */
	}
	return 0;
}

static int make_dir(const char *path, struct strata_error *err)
{
	if (mkdir(path, 0777) != 0 && errno != EEXIST)
		return base_err(err, errno, "cannot create data folder '%s': %s", path,
		                strerror(errno));
	return 0;
}

static int register_doctype(struct strata *db, const struct rank_schema *s,
                            struct eng_doctype *dt, struct strata_error *err)
{
	int n = rank_schema_nfields(s);
	dt->schema = s;
	dt->name = rank_schema_name(s);
	dt->nfields = n;
	dt->fields = n ? base_calloc((size_t)n, sizeof *dt->fields) : NULL;
	if (n && !dt->fields)
		return base_nomem(err, "schema '%s'", dt->name);
	for (int i = 0; i < n; i++) {
		const struct rank_field *rf = rank_schema_field(s, i);
		struct store_field *sf = &dt->fields[i];
		sf->name = rf->name;
		sf->type = store_type_of(rf->type);
		if (!sf->type)
			return base_err(err, STRATA_NOT_IMPLEMENTED,
			                "schema '%s': field '%s' has a type the store lacks",
			                dt->name, rf->name);
		sf->attribute = rf->attribute && !rf->imported; /* imported: read from the parent */
		sf->fast_search = rf->fast_search && sf->attribute && rf->type != RANK_FT_POSITION;
		int tf = rank_field_token_flags(rf);
		if (tf >= 0)
			sf->text = STORE_TEXT_ON | tf |
			           (rf->type == RANK_FT_ARRAY ? STORE_TEXT_ARRAY
			            : rf->type == RANK_FT_WSET ? STORE_TEXT_WSET : 0);
		if (eng_field_mapped(rf)) {
			/* kept in the document as JSON text (tensor_sparse_json.c) */
			sf->type = STORE_T_JSON;
			sf->attribute = 0;
			eng_hnsw_field(rf, sf); /* a multi-vector field's graph */
		} else if (rf->type == RANK_FT_TENSOR) {
			if (rf->rank > STORE_MAX_RANK)
				return base_err(err, STRATA_LIMIT,
				                "schema '%s': field '%s' has %d dimensions (max %d)",
				                dt->name, rf->name, rf->rank, STORE_MAX_RANK);
			sf->cell = rf->cell;
			sf->rank = rf->rank;
			for (int k = 0; k < rf->rank; k++)
				sf->dims[k] = rf->dims[k];
			eng_hnsw_field(rf, sf);
		}
	}
	struct store_doctype sd = { dt->name, n, dt->fields };
	return store_doctype_add(db->env, &sd, &dt->store_id, err);
}

void eng_hnsw_field(const struct rank_field *rf, struct store_field *sf)
{
	static const int metric[] = {
		[RANK_DIST_EUCLIDEAN] = STORE_METRIC_EUCLIDEAN,
		[RANK_DIST_ANGULAR] = STORE_METRIC_ANGULAR,
		[RANK_DIST_DOTPRODUCT] = STORE_METRIC_DOTPRODUCT,
		[RANK_DIST_PRENORMALIZED_ANGULAR] = STORE_METRIC_PRENORMALIZED_ANGULAR,
		[RANK_DIST_HAMMING] = STORE_METRIC_HAMMING,
		[RANK_DIST_GEODEGREES] = STORE_METRIC_GEODEGREES,
	};
	if (!rf->hnsw || !rf->attribute || rf->distance_metric < 0 ||
	    rf->distance_metric >= (int)(sizeof metric / sizeof metric[0]))
		return;
	if (eng_field_mapped(rf)) {
		/* tensor(p{}, x[n]): a node per vector (the indexed cells of a
		 * label), read from the stored text */
		int mapped = 0;
		int64_t size = 1;
		for (int k = 0; k < rf->rank; k++) {
			mapped += rf->dims[k] < 0;
			size *= rf->dims[k] < 0 ? 1 : rf->dims[k];
		}
		if (mapped != 1 || rf->rank < 2)
			return;
		sf->vec_cell = rf->cell;
		sf->vec_size = size;
		sf->vec_decode = eng_multivec_decode;
		sf->vec_ud = rf;
	} else if (rf->rank != 1) {
		return;
	}
	sf->hnsw_metric = metric[rf->distance_metric];
	sf->hnsw_m = rf->hnsw_m;
	sf->hnsw_ef = rf->hnsw_ef;
}

/* rank's struct rank_loader.load_constant: a constant file is a tensor in
 * any JSON form a document field takes (tensor_json.c). */
/* The JSON of constant file path in *out, *t the type of shape and what
 * ("file path") for messages. */
static int read_json(const char *path, const struct rank_input_info *shape, json_t **out,
                     struct eng_ttype *t, char *what, size_t nwhat, struct strata_error *err)
{
	*t = (struct eng_ttype){ BASE_DT_DOUBLE, shape->rank, shape->dims, shape->dim_names };
	snprintf(what, nwhat, "file %s", path);
	char *text;
	size_t n;
	int rc = base_read_file(path, &text, &n, err);
	if (rc == ENOENT)
		return base_err(err, STRATA_NOT_FOUND, "file %s not found", path);
	if (rc)
		return rc;
	json_error_t je;
	int oom;
	*out = eng_json_parse(text, n, 0, &je, &oom);
	base_free(text, n + 1);
	if (!*out)
		return oom ? base_nomem(err, "reading %s", path)
		           : base_err(err, STRATA_PARSE, "%s:%d:%d: %s", path, je.line, je.column,
		                      je.text);
	return 0;
}

/* The loader's notices, through the caller's log callback. */
static void notice_for(void *ud, const char *msg)
{
	const struct eng_models *ms = ud;
	if (ms->log)
		ms->log(ms->log_ud, STRATA_LOG_NOTICE, msg);
}

static int constant_for(void *ud, const char *path, const struct rank_input_info *shape,
                        double *cells, struct strata_error *err)
{
	(void)ud;
	json_t *j;
	struct eng_ttype t;
	char what[300];
	int rc = read_json(path, shape, &j, &t, what, sizeof what, err);
	if (rc)
		return rc;
	rc = eng_tensor_from_json(j, &t, 0, cells, what, err);
	json_decref(j);
	return rc;
}

/* load_sparse_constant: a constant file of a type with mapped dimensions,
 * in the JSON forms such a document field takes (tensor_sparse_json.c). */
static int sparse_constant_for(void *ud, const char *path, const struct rank_input_info *shape,
                               size_t *nblocks, char ***labels, double **cells,
                               struct strata_error *err)
{
	(void)ud;
	json_t *j;
	struct eng_ttype t;
	char what[300];
	int rc = read_json(path, shape, &j, &t, what, sizeof what, err);
	if (rc)
		return rc;
	struct eng_sparse s;
	rc = eng_sparse_from_json(j, &t, &s, what, err);
	json_decref(j);
	if (rc)
		return rc;
	size_t nl = s.nblocks * (size_t)s.nmapped, nc = s.nblocks * s.sub;
	char **lab = base_calloc(nl ? nl : 1, sizeof *lab);
	double *c = base_alloc((nc ? nc : 1) * sizeof *c);
	int bad = !lab || !c;
	for (size_t i = 0; !bad && i < nl; i++)
		bad = !(lab[i] = base_strdup(s.labels[i]));
	if (!bad)
		memcpy(c, s.cells, nc * sizeof *c);
	size_t nb = s.nblocks;
	eng_sparse_free(&s);
	if (bad) {
		for (size_t i = 0; lab && i < nl; i++)
			base_strfree(lab[i]);
		base_free(lab, (nl ? nl : 1) * sizeof *lab);
		base_free(c, (nc ? nc : 1) * sizeof *c);
		return base_nomem(err, "reading %s", path);
	}
	*nblocks = nb;
	*labels = lab;
	*cells = c;
	return 0;
}

/* A deployed application has its store in datadir: LMDB's data file. */
static int check_deployed(const char *app, const char *datadir, struct strata_error *err)
{
	char *path = base_path_join(datadir, "data.mdb");
	if (!path)
		return base_nomem(err, "opening '%s'", app);
	struct stat st;
	int found = stat(path, &st) == 0;
	base_strfree(path);
	if (!found)
		return base_err(err, STRATA_NOT_FOUND,
		                "application '%s' is not deployed (no store in '%s'): deploy it first",
		                app, datadir);
	return 0;
}

int strata_open(const char *app, const struct strata_options *opts, struct strata **out,
                struct strata_error *err)
{
	return eng_open(app, opts, opts && opts->must_be_deployed ? ENG_OPEN_DEPLOYED : ENG_OPEN_ANY,
	                out, err);
}

static int open_app(const char *app, const struct strata_options *opts, int deploy,
                    struct strata **out, struct strata_errors *errs, struct strata_error *err);

int eng_open(const char *app, const struct strata_options *opts, int deploy, struct strata **out,
             struct strata_error *err)
{
	*out = NULL;
	eng_json_init();
	struct strata_errors *errs = opts ? opts->errors : NULL;
	if (errs)
		errs->n = errs->dropped = 0;
	int rc = open_app(app, opts, deploy, out, errs, err);
	/* Every failure is listed, those outside the schemas too. */
	if (rc && errs && errs->n == 0 && !errs->dropped)
		base_errs_add(errs, err);
	return rc;
}

static int open_app(const char *app, const struct strata_options *opts, int deploy,
                    struct strata **out, struct strata_errors *errs, struct strata_error *err)
{
	if (!app || !*app)
		return base_err(err, STRATA_INVALID_ARGUMENT, "no application folder given");
	/* strata.h's pool_generations: 0 is the default, -1 none. */
	int gens = opts ? opts->pool_generations : 0;
	if (gens < -1 || gens > RANK_QUERY_POOL_MAX)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "pool_generations is %d: -1 (none), 0 (the default, 1) or up to %d",
		                gens, RANK_QUERY_POOL_MAX);
	gens = gens == 0 ? 1 : gens < 0 ? 0 : gens;
	long batch = opts ? opts->feed_batch : 0;
	if (batch < 0 || batch > STRATA_FEED_BATCH_MAX)
		return base_err(err, STRATA_INVALID_ARGUMENT, "feed_batch is %ld: 0 (the default) to %d",
		                batch, STRATA_FEED_BATCH_MAX);
	int threads = opts ? opts->search_threads : 0;
	if (threads < 0 || threads > RANK_MAX_THREADS)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "search_threads is %d: 0 (the default, 1) or up to %d", threads,
		                RANK_MAX_THREADS);
	threads = threads == 0 ? 1 : threads;
	/* a search split over threads takes a query state, with its models'
	 * run contexts, for each */
	int keep = gens * threads < RANK_QUERY_POOL_MAX ? gens * threads : RANK_QUERY_POOL_MAX;
	struct strata *db = base_calloc(1, sizeof *db);
	if (!db)
		return base_nomem(err, "opening '%s'", app);
	atomic_init(&db->n_queries, 0);
	atomic_init(&db->n_rank_allocs, 0);
	atomic_init(&db->n_degraded, 0);
	atomic_init(&db->n_split, 0);
	atomic_init(&db->n_split_parts, 0);
	atomic_init(&db->n_split2, 0);
	atomic_init(&db->n_split2_parts, 0);
	atomic_init(&db->n_split_global, 0);
	atomic_init(&db->n_split_global_parts, 0);
	struct eng_models ms = { 0 };
	int rc;
	db->read_only = opts ? opts->read_only : 0;
	db->feed_batch = batch ? batch : ENG_FEED_BATCH;
	db->appdir = base_strdup(app);
	db->datadir = (opts && opts->data_dir) ? base_strdup(opts->data_dir)
	                                       : base_path_join(app, ".strata");
	if (!db->appdir || !db->datadir) {
		rc = base_nomem(err, "opening '%s'", app);
		goto fail;
	}
	if (deploy == ENG_OPEN_DEPLOYED && (rc = check_deployed(app, db->datadir, err)) != 0)
		goto fail;
	strata_log_fn *log = opts ? opts->log : NULL;
	if ((rc = eng_models_init(&ms, db->datadir, deploy == ENG_OPEN_DEPLOY, keep, log,
	                          opts ? opts->log_ud : NULL, err)) != 0)
		goto fail;
	/* what the schemas say that changes nothing is told when deploying */
	struct rank_loader loader = { .load = eng_model_for, .ud = &ms,
	                              .load_constant = constant_for,
	                              .load_sparse_constant = sparse_constant_for,
	                              .notice = deploy == ENG_OPEN_DEPLOYED ? NULL : notice_for,
	                              .parse_json = eng_json_parse };
	if ((rc = eng_services_java(app, deploy == ENG_OPEN_DEPLOY ? log : NULL,
	                            opts ? opts->log_ud : NULL, err)) != 0 ||
	    (rc = eng_qprofiles_load(db, &loader, err)) != 0)
		goto fail;
	rc = rank_app_load_all(app, &loader, errs, &db->app, err);
	if (rc || (rc = rank_app_set_query_pool(db->app, keep, err)) != 0)
		goto fail;
	if (threads > 1 && (rc = eng_pool_new(threads - 1, &db->pool, err)) != 0)
		goto fail;
	if (db->read_only) {
		struct stat st;
		if (stat(db->datadir, &st) != 0) {
			rc = base_err(err, STRATA_NOT_FOUND, "no store in '%s'", db->datadir);
			goto fail;
		}
	} else if ((rc = make_dir(db->datadir, err)) != 0) {
		goto fail;
	}
	rc = store_open(db->datadir, &db->env, err);
	if (rc)
		goto fail;
	db->ndoctypes = rank_app_nschemas(db->app);
	if (db->ndoctypes) {
		db->doctypes = base_calloc((size_t)db->ndoctypes, sizeof *db->doctypes);
		if (!db->doctypes) {
			rc = base_nomem(err, "opening '%s'", app);
			goto fail;
		}
	}
	for (int i = 0; i < db->ndoctypes; i++) {
		rc = register_doctype(db, rank_app_schema(db->app, i), &db->doctypes[i], err);
		if (rc)
			goto fail;
	}
	if ((rc = eng_embedders_load(db, &ms, err)) != 0)
		goto fail;
	if (deploy == ENG_OPEN_DEPLOY && (rc = eng_models_compile(&ms, err)) != 0)
		goto fail;
	db->ncontexts = deploy == ENG_OPEN_DEPLOY ? (int)ms.n : 0;
	eng_models_release(&ms);
	*out = db;
	return 0;
fail:
	eng_models_release(&ms);
	strata_close(db);
	return rc;
}

void strata_close(struct strata *db)
{
	if (!db)
		return;
	for (int i = 0; i < db->ndoctypes; i++)
		if (db->doctypes[i].fields)
			base_free(db->doctypes[i].fields,
			          (size_t)db->doctypes[i].nfields * sizeof(struct store_field));
	if (db->doctypes)
		base_free(db->doctypes, (size_t)db->ndoctypes * sizeof *db->doctypes);
	eng_pool_free(db->pool);
	if (db->env)
		store_close(db->env);
	eng_embedders_free(db->embedders);
	if (db->app)
		rank_app_free(db->app);
	eng_qprofiles_free(db->qprofiles);
	base_strfree(db->appdir);
	base_strfree(db->datadir);
	base_free(db, sizeof *db);
}

void strata_free(char *s)
{
	base_strfree(s);
}

void strata_stats(struct strata *db, struct strata_stats *st)
{
	uint64_t hits, misses;
	rank_app_pool_stats(db->app, &hits, &misses);
	st->queries = atomic_load(&db->n_queries);
	st->rank_allocs = atomic_load(&db->n_rank_allocs);
	st->degraded = atomic_load(&db->n_degraded);
	st->pool_hits = hits;
	st->pool_misses = misses;
	st->split_first_phases = atomic_load(&db->n_split);
	st->split_parts = atomic_load(&db->n_split_parts);
	st->split_second_phases = atomic_load(&db->n_split2);
	st->split_second_parts = atomic_load(&db->n_split2_parts);
	st->split_global_phases = atomic_load(&db->n_split_global);
	st->split_global_parts = atomic_load(&db->n_split_global_parts);
}
