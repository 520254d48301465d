/*
 * model.c: the lifecycle of a model and of its run contexts.
 *
 * Loading is the runtime's data flow in order: load.c decodes the protobuf
 * into a graph; a graph that is one EPContext node standing for a compiled
 * context takes that context's graph (epctx.c), otherwise resolve.c
 * resolves, shapes, folds and fuses it; with ep.context_enable the compiled
 * graph is then written out as a context (epctx.c).  A failure at any step
 * frees everything through runtime_model_free, which takes a model in any
 * state this file can leave it in.
 *
 * Run contexts: runtime_ctx_new hands out a context from the model's
 * session buffer pool, or a new one (exec.c sets it up); runtime_ctx_free
 * retires it into the pool with all its buffers, forgetting its bindings
 * (binding.c).  A context is in the model's pool or with one caller, never
 * both: two live contexts never share a buffer.  The model is const to its
 * users; the pool is its one mutable part, under pool_mu, held only to push
 * or pop, never while memory is allocated or freed.
 */
#include <pthread.h>
#include <string.h>

#include "ctxfile.h"
#include "exec_int.h"

/* ---- the model ------------------------------------------------------------------------ */

static void pool_drain(struct rt_model *m);
static void ctx_destroy(struct rt_ctx *cx);

/* Load the n bytes at buf.  dir: where external data lies; src_path: the
 * model file (NULL for a buffer); ctx_dir: where EPContext binaries are
 * looked up (NULL: not known). */
static int load(const void *buf, size_t n, const char *dir, const struct rt_options *opts,
                const char *src_path, const char *ctx_dir, struct rt_model **out,
                struct strata_error *err)
{
	*out = NULL;
	struct rt_model *m = base_calloc(1, sizeof *m);
	if (!m)
		return base_nomem(err, "loading the model");
	pthread_mutex_init(&m->pool_mu, NULL);
	if (opts)
		m->opts = *opts;
	else
		rt_options_default(&m->opts);
	if ((m->opts.pool_gens > 0 &&
	     !(m->retired = base_calloc((size_t)m->opts.pool_gens, sizeof *m->retired))) ||
	    (dir && !(m->dir = base_strdup(dir)))) {
		runtime_model_free(m);
		return base_nomem(err, "loading the model");
	}
	int rc = rt_load_graph(m, buf, n, src_path != NULL, err);
	int adopted = 0;
	if (rc == 0)
		rc = rt_epctx_adopt(m, ctx_dir, &adopted, err);
	if (rc == 0 && adopted) {
		rc = rt_graph_resolve_compiled(m, err);
	} else if (rc == 0) {
		rc = rt_graph_resolve(m, err);
	}
	if (rc == 0 && m->opts.ctx_enable)
		rc = rt_epctx_generate(m, src_path, err);
	if (rc != 0) {
		rt_epctx_abandon(&m->opts);
		runtime_model_free(m);
		return rc;
	}
	*out = m;
	return 0;
}

int runtime_model_load_buffer_opts(const void *buf, size_t n, const char *dir,
                                   const struct rt_options *opts, struct rt_model **out,
                                   struct strata_error *err)
{
	if (!out || (!buf && n))
		return base_err(err, STRATA_INVALID_ARGUMENT, "runtime_model_load_buffer: no buffer");
	if (opts && *opts->ext_folder)
		dir = opts->ext_folder;
	/* A context model from a buffer finds its binary beside
	 * ep.context_file_path, when given. */
	char *ctx_dir = NULL;
	if (opts && *opts->ctx_file_path) {
		const char *p = opts->ctx_file_path, *slash = strrchr(p, '/');
		ctx_dir = slash ? base_strndup(p, (size_t)(slash - p + (slash == p))) : base_strdup(".");
		if (!ctx_dir) {
			rt_epctx_abandon(opts);
			return base_nomem(err, "loading the model");
		}
	}
	int rc = load(buf, n, dir, opts, NULL, ctx_dir, out, err);
	if (ctx_dir)
		base_strfree(ctx_dir);
	return rc;
}

int runtime_model_load_buffer(const void *buf, size_t n, const char *dir, struct rt_model **out,
                              struct strata_error *err)
{
	return runtime_model_load_buffer_opts(buf, n, dir, NULL, out, err);
}

int runtime_model_load(const char *path, struct rt_model **out, struct strata_error *err)
{
	return runtime_model_load_opts(path, NULL, out, err);
}

int runtime_model_load_opts(const char *path, const struct rt_options *opts,
                            struct rt_model **out, struct strata_error *err)
{
	if (!path || !out)
		return base_err(err, STRATA_INVALID_ARGUMENT, "runtime_model_load: no path");
	*out = NULL;
	struct base_map map;
	int rc = base_map_file(path, &map, err);
	if (rc != 0) {
		rt_epctx_abandon(opts);
		return rc;
	}
	const char *slash = strrchr(path, '/');
	char *dir = slash ? base_strndup(path, (size_t)(slash - path + (slash == path))) : base_strdup(".");
	if (!dir) {
		base_unmap(&map);
		rt_epctx_abandon(opts);
		return base_nomem(err, "loading the model");
	}
	rc = load(map.data, map.size, dir, opts, path, dir, out, err);
	base_strfree(dir);
	base_unmap(&map);
	if (rc != 0 && rc != STRATA_NOMEM)
		base_err_prefix(err, rc, "%s", path);
	return rc;
}

void runtime_model_free(struct rt_model *m)
{
	if (!m)
		return;
	pool_drain(m);
	if (m->retired)
		base_free(m->retired, (size_t)m->opts.pool_gens * sizeof *m->retired);
	pthread_mutex_destroy(&m->pool_mu);
	rt_graph_fini(m);
	for (int i = 0; i < m->ncx; i++)
		rt_cxhold_release(m->cx[i]);
	if (m->cx)
		base_free(m->cx, (size_t)m->capcx * sizeof *m->cx);
	if (m->ctx_written)
		base_strfree(m->ctx_written);
	if (m->ctx_dir)
		base_strfree(m->ctx_dir);
	for (size_t i = 0; i < m->next; i++)
		base_unmap(&m->ext[i].map);
	if (m->ext)
		base_free(m->ext, m->capext * sizeof *m->ext);
	rt_blocks_free(&m->mem);
	if (m->dir)
		base_strfree(m->dir);
	base_free(m, sizeof *m);
}

const char *runtime_model_context_path(const struct rt_model *m)
{
	return m ? m->ctx_written : NULL;
}

int runtime_model_compiled(const struct rt_model *m)
{
	return m && m->compiled;
}

/* ---- run contexts and the session buffer pool ---------------------------------------- */

/* The session buffer pool.  A context's buffers (value views, the pool of
 * released buffers, plans and their arena, subgraph contexts) are its own
 * and sized by the runs it made; retiring the whole context keeps them for
 * the next runtime_ctx_new, which then allocates nothing.  A context is in
 * the model's list or with one caller, never both: two live contexts never
 * share a buffer.  The model is const to its users; the pool is its one
 * mutable part, under pool_mu. */
int runtime_ctx_new(const struct rt_model *m, struct rt_ctx **out, struct strata_error *err)
{
	*out = NULL;
	struct rt_model *pm = (struct rt_model *)m;
	struct rt_ctx *cx = NULL;
	pthread_mutex_lock(&pm->pool_mu);
	if (pm->nretired > 0) {
		cx = pm->retired[--pm->nretired];
		pm->pool_hits++;
	} else {
		pm->pool_misses++;
	}
	pthread_mutex_unlock(&pm->pool_mu);
	if (cx) {
		*out = cx;
		return 0;
	}
	cx = base_calloc(1, sizeof *cx);
	if (!cx)
		return base_nomem(err, "a run context");
	if (rt_exec_init(&cx->x, m) != 0) {
		ctx_destroy(cx);
		return base_nomem(err, "a run context");
	}
	*out = cx;
	return 0;
}

void runtime_model_pool_stats(const struct rt_model *m, struct rt_pool_stats *st)
{
	struct rt_model *pm = (struct rt_model *)m;
	pthread_mutex_lock(&pm->pool_mu);
	st->hits = pm->pool_hits;
	st->misses = pm->pool_misses;
	st->retired = pm->nretired;
	pthread_mutex_unlock(&pm->pool_mu);
}

static void pool_drain(struct rt_model *m)
{
	for (int i = 0; i < m->nretired; i++)
		ctx_destroy(m->retired[i]);
	m->nretired = 0;
}

static void ctx_destroy(struct rt_ctx *cx)
{
	rt_bind_free(&cx->x);
	rt_exec_fini(&cx->x);
	base_free(cx, sizeof *cx);
}

void runtime_ctx_free(struct rt_ctx *cx)
{
	if (!cx)
		return;
	runtime_ctx_profile(cx, 0, NULL);
	struct rt_model *pm = (struct rt_model *)cx->x.m;
	if (!pm || pm->opts.pool_gens <= 0) {
		ctx_destroy(cx);
		return;
	}
	/* What the last run holds goes back to the context's own pool; its
	 * bindings name the caller's memory and end with it. */
	rt_exec_release_all(&cx->x);
	rt_bind_reset(&cx->x);
	struct rt_ctx *evict = NULL;
	pthread_mutex_lock(&pm->pool_mu);
	if (pm->nretired == pm->opts.pool_gens) {
		evict = pm->retired[0];
		memmove(pm->retired, pm->retired + 1, (size_t)(pm->nretired - 1) * sizeof *pm->retired);
		pm->nretired--;
	}
	pm->retired[pm->nretired++] = cx;
	pthread_mutex_unlock(&pm->pool_mu);
	if (evict)
		ctx_destroy(evict);
}
