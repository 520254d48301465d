/*
 * ctxgen.c: writing compiled contexts (ep.context_enable=1).
 *
 * Once a model has loaded (folded, fused, weights packed), its graph goes
 * into a context binary (ctxfile.c) and a small ONNX model,
 * "<name>_ctx.onnx", stands for it (ctxmodel.c): its EPContext node's
 * ep_cache_context holds the binary (embed_mode=1) or its path relative to
 * the model (embed_mode=0, "<name>_strata.bin" beside it).
 *
 * Sessions with ep.share_ep_contexts=1 compile into one workspace and the
 * one with ep.stop_share_ep_contexts=1 writes the single binary, named
 * after the first model, and empties the workspace.  As ONNX Runtime
 * defines these options, the group spans sessions, not one model: the
 * workspace is process-wide, the one piece of such state on the writing
 * side, behind its own mutex.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctxfile.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* The workspace of the sessions sharing contexts. */
static struct {
	struct rt_cxwriter *w;
	char *bin;               /* absolute path of the binary it will write */
} workspace;

/* The last path component of p. */
static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

/* A new copy of p without its last component ("." when there is none). */
static char *dir_of(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? base_strndup(p, (size_t)(s - p + (s == p))) : base_strdup(".");
}

/* A new copy of the file name of p without suffix (if it ends so). */
static char *stem_of(const char *p, const char *suffix)
{
	const char *b = base_name(p);
	size_t n = strlen(b), k = strlen(suffix);
	if (n > k && strcmp(b + n - k, suffix) == 0)
		n -= k;
	return base_strndup(b, n);
}

/* rel: bin relative to the folder dir (both absolute), if it lies inside. */
static int relative_to(const char *dir, const char *bin, char *rel, size_t cap)
{
	size_t k = strlen(dir);
	if (strncmp(bin, dir, k) != 0 || (bin[k] != '/' && !(k == 1 && dir[0] == '/')))
		return -1;
	const char *r = bin + k + (bin[k] == '/');
	return snprintf(rel, cap, "%s", r) < (int)cap && *r ? 0 : -1;
}

int rt_epctx_generate(struct rt_model *m, const char *src_path, struct strata_error *err)
{
	const struct rt_options *o = &m->opts;
	char ctx[PATH_MAX];
	if (*o->ctx_file_path) {
		snprintf(ctx, sizeof ctx, "%s", o->ctx_file_path);
	} else if (src_path) {
		size_t n = strlen(src_path);
		int onnx = n > 5 && strcmp(src_path + n - 5, ".onnx") == 0;
		if (snprintf(ctx, sizeof ctx, "%.*s_ctx.onnx", (int)(onnx ? n - 5 : n), src_path) >=
		    (int)sizeof ctx)
			return base_err(err, ENAMETOOLONG, "%s: path too long", src_path);
	} else {
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "ep.context_enable=1 on a model loaded from a buffer needs "
		                "ep.context_file_path (where to write the context model)");
	}
	if (o->share && o->ctx_embed)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "ep.share_ep_contexts=1 writes one binary file for several models: it "
		                "needs ep.context_embed_mode=0");
	if (m->compiled)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "the model is a compiled context already: compile its source model");
	char *stem = src_path ? stem_of(src_path, ".onnx") : stem_of(ctx, "_ctx.onnx");
	char *dir = dir_of(ctx);
	char *absdir = dir ? realpath(dir, NULL) : NULL;
	int rc = 0;
	char part[2 * RT_OPT_STR], rel[PATH_MAX], bin[2 * PATH_MAX + 32];
	if (!stem || !dir) {
		rc = base_nomem(err, "writing a compiled context");
		goto out;
	}
	if (!absdir) {
		rc = base_err(err, errno, "%s: %s", dir, strerror(errno));
		goto out;
	}
	if (src_path) {
		/* the context model must not overwrite its source */
		char *a = realpath(src_path, NULL), *b = realpath(ctx, NULL);
		int same = a && b && strcmp(a, b) == 0;
		free(a);
		free(b);
		if (same) {
			rc = base_err(err, STRATA_INVALID_ARGUMENT,
			              "ep.context_file_path %s is the source model itself", ctx);
			goto out;
		}
	}
	snprintf(part, sizeof part, "%s%s", o->ctx_prefix, stem);
	struct rt_ctxnode cn = { part, NULL, 0, o->ctx_embed, src_path ? base_name(src_path) : "", 0 };

	if (o->share) {
		pthread_mutex_lock(&lock);
		if (!workspace.w) {
			snprintf(bin, sizeof bin, "%s/%s_strata.bin", absdir, stem);
			workspace.bin = base_strdup(bin);
			if (!workspace.bin || rt_cxw_new(&workspace.w, err) != 0) {
				if (workspace.bin)
					base_strfree(workspace.bin);
				workspace.bin = NULL;
				pthread_mutex_unlock(&lock);
				rc = base_nomem(err, "writing a compiled context");
				goto out;
			}
		}
		size_t before = rt_cxw_ref_bytes(workspace.w);
		rc = rt_cxw_add(workspace.w, m, part, err);
		cn.weight_bytes = rt_cxw_ref_bytes(workspace.w) - before;
		if (rc == 0 && relative_to(absdir, workspace.bin, rel, sizeof rel) != 0)
			rc = base_err(err, STRATA_INVALID_ARGUMENT,
			              "the shared context binary %s is not inside %s, the folder of %s: "
			              "write the sharing models' contexts into one folder",
			              workspace.bin, absdir, ctx);
		if (rc == 0) {
			cn.cache = rel;
			cn.ncache = strlen(rel);
			rc = rt_ctxmodel_write(m, &cn, ctx, err);
		}
		if (o->stop_share || rc != 0) {
			/* the last session writes the binary; a failure abandons the group */
			if (rc == 0)
				rc = rt_cxw_write(workspace.w, workspace.bin, err);
			rt_cxw_free(workspace.w);
			base_strfree(workspace.bin);
			workspace.w = NULL;
			workspace.bin = NULL;
		}
		pthread_mutex_unlock(&lock);
	} else {
		struct rt_cxwriter *w;
		if ((rc = rt_cxw_new(&w, err)) != 0)
			goto out;
		rc = rt_cxw_add(w, m, part, err);
		cn.weight_bytes = rt_cxw_ref_bytes(w);
		if (rc == 0 && o->ctx_embed) {
			unsigned char *bytes;
			size_t n, cap;
			if ((rc = rt_cxw_bytes(w, &bytes, &n, &cap, err)) == 0) {
				cn.cache = bytes;
				cn.ncache = n;
				rc = rt_ctxmodel_write(m, &cn, ctx, err);
				base_free(bytes, cap);
			}
		} else if (rc == 0) {
			snprintf(rel, sizeof rel, "%s_strata.bin", stem);
			snprintf(bin, sizeof bin, "%s/%s", absdir, rel);
			cn.cache = rel;
			cn.ncache = strlen(rel);
			rc = rt_cxw_write(w, bin, err);
			if (rc == 0 && (rc = rt_ctxmodel_write(m, &cn, ctx, err)) != 0)
				remove(bin); /* nothing refers to it */
		}
		rt_cxw_free(w);
	}
	if (rc == 0 && !(m->ctx_written = base_strdup(ctx)))
		rc = base_nomem(err, "writing a compiled context");
out:
	if (stem)
		base_strfree(stem);
	if (dir)
		base_strfree(dir);
	free(absdir);
	return rc;
}

void rt_epctx_abandon(const struct rt_options *o)
{
	if (!o || !o->ctx_enable || !o->share)
		return;
	pthread_mutex_lock(&lock);
	rt_cxw_free(workspace.w);
	if (workspace.bin)
		base_strfree(workspace.bin);
	workspace.w = NULL;
	workspace.bin = NULL;
	pthread_mutex_unlock(&lock);
}
