/*
 * contexts.c: the models of an application and their compiled contexts.
 *
 * `strata deploy` compiles every model the application loads into
 * DATA/contexts/: one context model per source (NAME_ctx.onnx) and one
 * binary for all of them (named after the first, NAME_strata.bin; weights
 * that models share are stored once).  Then it writes manifest.json: the
 * size, modification and status-change time of every file a context stands
 * on, its source, its context model and the binary:
 *
 *     {"binary": {"file": "ranker_strata.bin", "size": 14400, "mtime_ns": ..., "ctime_ns": ...},
 *      "models": [{"source": {"file": "models/ranker.onnx", "size": 2695, ...},
 *                  "context": {"file": "ranker_ctx.onnx", "size": 578, ...}}]}
 *
 * Every other open gets its models from eng_model_for(): the context when the
 * manifest lists the source and all three files are still the ones deploy
 * saw; otherwise the source, compiled as it always was.  A source that
 * changed, a context file that is missing or changed, or a context the
 * runtime refuses (another Strata version, weights packed for other CPU
 * features, a damaged file) costs a compile and one warning through the
 * caller's log callback (strata_options.log), never a wrong answer.
 * Writing, truncating or replacing a file moves its ctime, which no one can
 * set back (touch -r and cp -p restore mtime only), so equal size and times
 * mean the file deploy compiled.  Without a manifest (never
 * deployed, or a deploy that did not finish: it removes the manifest first
 * and writes it last) the sources are compiled and nothing is said: there is
 * no cache to be stale.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine_int.h"
#include "../runtime/runtime.h"

static json_t *manifest_read(const struct eng_models *ms, int complain);

/* A warning through the caller's log callback, if there is one. */
static void warn(const struct eng_models *ms, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void warn(const struct eng_models *ms, const char *fmt, ...)
{
	if (!ms->log)
		return;
	char msg[2 * STRATA_ERRMSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	ms->log(ms->log_ud, STRATA_LOG_WARNING, msg);
}

int eng_models_init(struct eng_models *ms, const char *datadir, int deploy, int generations,
                    strata_log_fn *log, void *log_ud, struct strata_error *err)
{
	memset(ms, 0, sizeof *ms);
	ms->deploy = deploy;
	ms->log = log;
	ms->log_ud = log_ud;
	if (!(ms->dir = base_path_join(datadir, "contexts")))
		return base_nomem(err, "opening '%s'", datadir);
	char gens[16];
	snprintf(gens, sizeof gens, "%d", generations);
	int rc = runtime_options_new(&ms->opts, err);
	if (rc == 0)
		rc = runtime_options_set(ms->opts, "session.buffer_pool_generations", gens, err);
	if (rc)
		return rc;
	if (!deploy)
		ms->manifest = manifest_read(ms, 1);
	return 0;
}

void eng_models_release(struct eng_models *ms)
{
	for (size_t i = 0; i < ms->n; i++) {
		base_strfree(ms->src[i].file);
		base_strfree(ms->src[i].path);
	}
	if (ms->src)
		base_free(ms->src, ms->cap * sizeof *ms->src);
	json_decref(ms->manifest);
	base_strfree(ms->dir);
	if (ms->opts)
		runtime_options_free(ms->opts);
}

/* The file name of the model at path p without ".onnx": *n bytes at the
 * returned pointer (the runtime names contexts and binaries after it). */
static const char *model_stem(const char *p, int *n)
{
	const char *b = strrchr(p, '/');
	b = b ? b + 1 : p;
	size_t k = strlen(b);
	if (k > 5 && strcmp(b + k - 5, ".onnx") == 0)
		k -= 5;
	*n = (int)k;
	return b;
}

char *eng_context_path(const char *dir, const char *src)
{
	int n;
	const char *stem = model_stem(src, &n);
	if (dir)
		return base_strprintf("%s%s%.*s_ctx.onnx", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", n,
		                  stem);
	return base_strprintf("%.*s%.*s_ctx.onnx", (int)(stem - src), src, n, stem);
}

char *eng_context_binary(const char *context, const char *src)
{
	int n;
	const char *stem = model_stem(src, &n);
	const char *slash = strrchr(context, '/');
	int dn = slash ? (int)(slash - context + 1) : 0;
	return base_strprintf("%.*s%.*s_strata.bin", dn, context, n, stem);
}

int eng_compile_model(const char *src, const struct eng_compile *c, char **context,
                      struct strata_error *err)
{
	*context = NULL;
	struct rt_options *o;
	int rc = runtime_options_new(&o, err);
	if (rc)
		return rc;
	const char *keys[] = { "ep.context_enable", "ep.context_embed_mode",
		               "ep.share_ep_contexts", "ep.stop_share_ep_contexts",
		               "ep.context_file_path", "ep.context_node_name_prefix" };
	const char *vals[] = { "1", c->embed ? "1" : "0", c->share ? "1" : "0",
		               c->share == 2 ? "1" : "0", c->context, c->prefix };
	for (size_t k = 0; rc == 0 && k < sizeof keys / sizeof keys[0]; k++)
		if (vals[k])
			rc = runtime_options_set(o, keys[k], vals[k], err);
	struct rt_model *m = NULL;
	if (rc == 0)
		rc = runtime_model_load_opts(src, o, &m, err);
	runtime_options_free(o);
	if (rc == 0) {
		const char *p = runtime_model_context_path(m);
		if (!p)
			rc = base_err(err, STRATA_ERROR, "%s: the runtime wrote no context model", src);
		else if (!(*context = base_strdup(p)))
			rc = base_nomem(err, "%s", src);
	}
	runtime_model_free(m);
	return rc;
}

static json_int_t ns(const struct timespec *t)
{
	return (json_int_t)t->tv_sec * 1000000000 + (json_int_t)t->tv_nsec;
}

/* {"file": file, "size", "mtime_ns", "ctime_ns"} of the file at path; NULL
 * (errno set) when it cannot be read. */
static json_t *file_json(const char *file, const char *path)
{
	struct stat st;
	if (stat(path, &st) != 0)
		return NULL;
	json_t *j = json_pack("{s:s, s:I, s:I, s:I}", "file", file, "size", (json_int_t)st.st_size,
	                      "mtime_ns", ns(&st.st_mtim), "ctime_ns", ns(&st.st_ctim));
	if (!j)
		errno = ENOMEM;
	return j;
}

/* NULL when the file at path is still the one j records, else why not (in
 * buf). */
static const char *file_changed(const json_t *j, const char *path, const char *what, char *buf,
                                size_t n)
{
	struct stat st;
	if (stat(path, &st) != 0) {
		snprintf(buf, n, "%s: %s", path, strerror(errno));
		return buf;
	}
	json_t *size = json_object_get(j, "size"), *m = json_object_get(j, "mtime_ns"),
	       *c = json_object_get(j, "ctime_ns");
	if (!json_is_integer(size) || !json_is_integer(m) || !json_is_integer(c) ||
	    json_integer_value(size) != (json_int_t)st.st_size ||
	    json_integer_value(m) != ns(&st.st_mtim) || json_integer_value(c) != ns(&st.st_ctim)) {
		snprintf(buf, n, "%s changed since deploy", what);
		return buf;
	}
	return NULL;
}

/* The manifest in ms->dir, or NULL when there is none.  complain: warn
 * when one is there but unreadable. */
static json_t *manifest_read(const struct eng_models *ms, int complain)
{
	char *path = base_path_join(ms->dir, "manifest.json");
	if (!path)
		return NULL;
	json_t *j = NULL;
	struct stat st;
	if (stat(path, &st) == 0) {
		struct strata_error e = { 0 };
		json_error_t je = { 0 };
		char *text;
		size_t n;
		int oom = 0;
		if (base_read_file(path, &text, &n, &e) == 0) {
			j = eng_json_parse(text, n, 0, &je, &oom);
			base_free(text, n + 1);
			if (!j && !oom)
				base_err(&e, STRATA_PARSE, "%s: %s", path, je.text);
		}
		if (!j && oom)
			base_nomem(&e, "%s", path);
		if (!j && complain)
			warn(ms, "%s; the models are compiled from their sources", e.msg);
		if (j && !json_is_array(json_object_get(j, "models"))) {
			if (complain)
				warn(ms, "%s: no \"models\" list; the models are compiled from their "
				     "sources", path);
			json_decref(j);
			j = NULL;
		}
	}
	base_strfree(path);
	return j;
}

/* The model deploy compiled for file: 0 and *out, or why it cannot be used
 * (in buf, returned). */
static const char *from_context(struct eng_models *ms, const char *file, const char *path,
                                struct rt_model **out, char *buf, size_t n)
{
	const json_t *bin = json_object_get(ms->manifest, "binary");
	const json_t *models = json_object_get(ms->manifest, "models"), *e = NULL, *m;
	size_t i;
	json_array_foreach(models, i, m) {
		const char *f = json_string_value(json_object_get(json_object_get(m, "source"), "file"));
		if (f && strcmp(f, file) == 0)
			e = m;
	}
	if (!e)
		return "deploy did not compile it";
	const json_t *ctx = json_object_get(e, "context");
	const char *cfile = json_string_value(json_object_get(ctx, "file"));
	const char *bfile = json_string_value(json_object_get(bin, "file"));
	if (!cfile || !bfile)
		return "the manifest names no context for it";
	if (file_changed(json_object_get(e, "source"), path, "the source", buf, n))
		return buf;
	char *cpath = base_path_join(ms->dir, cfile), *bpath = base_path_join(ms->dir, bfile);
	const char *why = !cpath || !bpath ? "out of memory" : NULL;
	if (!why)
		why = file_changed(ctx, cpath, cpath, buf, n);
	if (!why)
		why = file_changed(bin, bpath, bpath, buf, n);
	if (!why) {
		struct strata_error cerr = { 0 };
		int rc = runtime_model_load_opts(cpath, ms->opts, out, &cerr);
		if (rc == 0 && !runtime_model_compiled(*out)) {
			runtime_model_free(*out);
			*out = NULL;
			snprintf(buf, n, "%s is not a compiled context", cpath);
			why = buf;
		} else if (rc != 0) {
			snprintf(buf, n, "the runtime refused it: %s",
			         cerr.msg[0] ? cerr.msg : strata_strerror(rc));
			why = buf;
		}
	}
	base_strfree(cpath);
	base_strfree(bpath);
	return why;
}

/* The loaded model for an onnx-model declaration (struct rank_loader): its
 * compiled context when there is a fresh one, else its source. */
int eng_model_for(void *ud, const char *file, const char *path, struct rt_model **out,
                     struct strata_error *err)
{
	struct eng_models *ms = ud;
	if (ms->deploy) {
		/* Checked here, compiled by eng_models_compile() once all have
		 * loaded; a model that is a context itself needs no compiling. */
		int rc = runtime_model_load_opts(path, ms->opts, out, err);
		if (rc || runtime_model_compiled(*out))
			return rc;
		char *f = base_strdup(file), *p = base_strdup(path);
		if (!f || !p ||
		    base_grow((void **)&ms->src, &ms->cap, ms->n + 1, sizeof *ms->src, 1 << 16)) {
			base_strfree(f);
			base_strfree(p);
			runtime_model_free(*out);
			*out = NULL;
			return base_nomem(err, "model list");
		}
		ms->src[ms->n++] = (struct eng_model_src){ f, p };
		return 0;
	}
	char buf[STRATA_ERRMSG_MAX + 64];
	const char *why = NULL;
	if (ms->manifest && !(why = from_context(ms, file, path, out, buf, sizeof buf)))
		return 0;
	int rc = runtime_model_load_opts(path, ms->opts, out, err);
	/* A source that is a compiled context itself was not compiled again. */
	if (rc == 0 && why && !runtime_model_compiled(*out))
		warn(ms, "%s: compiling the source instead of a compiled context: %s (strata deploy "
		     "compiles it again)", path, why);
	return rc;
}

/* Write text and a newline to path through a temporary file and a rename. */
static int write_text(const char *path, const char *text, struct strata_error *err)
{
	char *tmp = base_strprintf("%s.tmp", path);
	if (!tmp)
		return base_nomem(err, "%s", path);
	FILE *f = fopen(tmp, "w");
	int e = f ? 0 : errno;
	if (f) {
		size_t n = strlen(text);
		if (fwrite(text, 1, n, f) != n || fputc('\n', f) == EOF)
			e = errno ? errno : EIO;
		if (fclose(f) != 0 && !e)
			e = errno;
		if (!e && rename(tmp, path) != 0)
			e = errno;
		if (e)
			unlink(tmp);
	}
	base_strfree(tmp);
	return e ? base_err(err, e, "%s: cannot write: %s", path, strerror(e)) : 0;
}

/* Whether the manifest j names file (a context model or the binary). */
static int manifest_names(const json_t *j, const char *file)
{
	const char *b = json_string_value(json_object_get(json_object_get(j, "binary"), "file"));
	if (b && strcmp(b, file) == 0)
		return 1;
	size_t i;
	const json_t *m;
	json_array_foreach(json_object_get(j, "models"), i, m) {
		const char *c = json_string_value(json_object_get(json_object_get(m, "context"),
		                                                  "file"));
		if (c && strcmp(c, file) == 0)
			return 1;
	}
	return 0;
}

/* Remove file from dir unless the manifest j names it: a context of a
 * model the application no longer has.  The manifest never names a file
 * outside dir. */
static void remove_unless(const char *dir, const char *file, const json_t *j)
{
	if (!file || strchr(file, '/') || manifest_names(j, file))
		return;
	char *p = base_path_join(dir, file);
	if (p)
		unlink(p);
	base_strfree(p);
}

/* The manifest entry of a file: file_json(name, path), or an error. */
static int file_entry(const char *name, const char *path, json_t **out, struct strata_error *err)
{
	*out = file_json(name, path);
	if (!*out && errno == ENOMEM)
		return base_nomem(err, "the manifest entry of %s", path);
	if (!*out)
		return base_err(err, errno, "%s: %s", path, strerror(errno));
	return 0;
}

/* deploy: compile the models the application loaded into ms->dir, all into
 * one shared binary, and write the manifest. */
int eng_models_compile(struct eng_models *ms, struct strata_error *err)
{
	if (mkdir(ms->dir, 0777) != 0 && errno != EEXIST)
		return base_err(err, errno, "cannot create '%s': %s", ms->dir, strerror(errno));
	char *mpath = base_path_join(ms->dir, "manifest.json");
	char **ctx = base_calloc(ms->n + 1, sizeof *ctx);
	json_t *old = NULL, *top = json_object(), *list = json_array(), *e;
	char *bin = NULL, *text = NULL;
	int rc = 0;
	if (!mpath || !ctx || !top || !list) {
		rc = base_nomem(err, "%s", ms->dir);
		goto out;
	}
	old = manifest_read(ms, 0);
	if (unlink(mpath) != 0 && errno != ENOENT) {
		rc = base_err(err, errno, "%s: %s", mpath, strerror(errno));
		goto out;
	}
	for (size_t i = 0; i < ms->n; i++) {
		const struct eng_model_src *s = &ms->src[i];
		/* Sources of one name from different folders: the later ones are
		 * told apart by their index, in the file name and the graph name. */
		int n, k, dup = 0;
		const char *stem = model_stem(s->path, &n);
		for (size_t j = 0; j < i && !dup; j++) {
			const char *o = model_stem(ms->src[j].path, &k);
			dup = k == n && memcmp(o, stem, (size_t)n) == 0;
		}
		char prefix[32] = "";
		if (dup)
			snprintf(prefix, sizeof prefix, "%zu-", i);
		/* ctx[i] is set before the compile: a failed last model may have
		 * written its context model before the binary failed. */
		if (!(ctx[i] = base_strprintf("%s/%s%.*s_ctx.onnx", ms->dir, prefix, n, stem))) {
			rc = base_nomem(err, "%s", s->path);
			goto out;
		}
		json_t *sj, *cj;
		if ((rc = file_entry(s->file, s->path, &sj, err)) != 0)
			goto out;
		struct eng_compile c = { ctx[i], prefix, 0, i + 1 < ms->n ? 1 : 2 };
		char *written = NULL;
		rc = eng_compile_model(s->path, &c, &written, err);
		base_strfree(written); /* ctx[i], as asked */
		if (rc == 0)
			rc = file_entry(strrchr(ctx[i], '/') + 1, ctx[i], &cj, err);
		if (rc != 0) {
			json_decref(sj);
			goto out;
		}
		if (!(e = json_pack("{s:o, s:o}", "source", sj, "context", cj)) ||
		    json_array_append_new(list, e)) {
			rc = base_nomem(err, "%s", mpath);
			goto out;
		}
	}
	e = json_null();
	if (ms->n) {
		if (!(bin = eng_context_binary(ctx[0], ms->src[0].path))) {
			rc = base_nomem(err, "%s", ms->dir);
			goto out;
		}
		if ((rc = file_entry(strrchr(bin, '/') + 1, bin, &e, err)) != 0)
			goto out;
	}
	if (json_object_set_new(top, "binary", e) || json_object_set(top, "models", list) ||
	    !(text = eng_json_dump(top, 1))) {
		rc = base_nomem(err, "%s", mpath);
		goto out;
	}
	rc = write_text(mpath, text, err);
	if (rc == 0 && old) {
		size_t i;
		const json_t *m;
		remove_unless(ms->dir, json_string_value(json_object_get(json_object_get(old, "binary"),
		                                                         "file")), top);
		json_array_foreach(json_object_get(old, "models"), i, m)
			remove_unless(ms->dir, json_string_value(json_object_get(
			                               json_object_get(m, "context"), "file")), top);
	}
out:
	/* A deploy that failed leaves no context model behind, and no manifest:
	 * the sources are compiled until a deploy succeeds. */
	for (size_t i = 0; ctx && i < ms->n; i++) {
		if (rc && ctx[i])
			unlink(ctx[i]);
		base_strfree(ctx[i]);
	}
	if (ctx)
		base_free(ctx, (ms->n + 1) * sizeof *ctx);
	base_strfree(bin);
	base_strfree(text);
	json_decref(list);
	json_decref(top);
	json_decref(old);
	base_strfree(mpath);
	return rc;
}
