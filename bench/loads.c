/*
 * loads.c: the session-creation part of bench (see bench.c).
 *
 * The second part of a run: how long it takes to get a model ready to run.
 * For each model, a copy in CTXDIR/single is compiled once (ep.context_enable=1,
 * embed mode 0) into <model>_ctx.onnx and <model>_strata.bin beside it.  Then
 * rounds of loads are timed, each load in a fresh process forked from this
 * small one (or a fresh node process): Strata loading the .onnx, Strata
 * loading the _ctx.onnx, ORT creating a session from the .onnx.  A round
 * does each kind once and the kind that goes first rotates from round to
 * round, so that each sees the page cache and the machine as the others
 * leave them; every file is in the page cache (just written, synced, and
 * read by the previous rounds), so these are warm-cache figures.  A figure
 * is the median of its rounds.  Then one process loads the model from both
 * files, runs each once on the inputs of the model's first inference case
 * and compares the outputs byte for byte.  Last, the MiniLM models are
 * compiled in one process into one shared workspace (CTXDIR/shared) and
 * each is checked the same way against its .onnx.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

#define LOAD_ROUNDS 9          /* rounds at --scale 1 */
#define LOAD_MIN_ROUNDS 5      /* never fewer: a median of fewer says little */
#define LOAD_MAX_ROUNDS 99
#define NSHARED 3
#define JOB_PATH 4096

/* Compiled into one shared context, in this order: the first names the binary. */
static const char *const shared_models[NSHARED] = {
	"minilm_l6_cross", "minilm_l6_cross_decomposed", "minilm_l6_embed",
};

/* One piece of work done in a forked process: what to do going in, what
 * happened coming back (the child sends the whole record back). */
enum { JOB_COMPILE, JOB_LOAD, JOB_COMPARE };
struct job {
	int kind;
	int n;                      /* JOB_COMPILE: models (several when shared) */
	int share;                  /* JOB_COMPILE: into one shared workspace */
	int batch, seq;             /* JOB_COMPARE: the sizes of the inputs */
	char src[NSHARED][JOB_PATH];  /* .onnx models; JOB_LOAD: the file to load */
	char ctx[NSHARED][JOB_PATH];  /* their context models; JOB_COMPILE: where to
	                                 write ("" beside the source), then where written */
	int ok;                     /* 1: done without error */
	int compiled;               /* JOB_LOAD: runtime_model_compiled() of the model */
	int identical;              /* JOB_COMPARE: 1 when every output has the same bytes */
	double ms;                  /* JOB_COMPILE: all its loads; JOB_LOAD: the load */
	char why[400];              /* the error, or a remark when ok */
};

/* Append to a note (see note_vadd). */
static void lnote(char *note, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void lnote(char *note, size_t cap, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	note_vadd(note, cap, fmt, ap);
	va_end(ap);
}

static void job_compile(struct job *j)
{
	struct strata_error err;
	struct rt_options *o = NULL;
	double t0 = now_ms();
	if (runtime_options_new(&o, &err) != 0 ||
	    runtime_options_set(o, "ep.context_enable", "1", &err) != 0 ||
	    runtime_options_set(o, "ep.context_embed_mode", "0", &err) != 0 ||
	    (j->share && runtime_options_set(o, "ep.share_ep_contexts", "1", &err) != 0)) {
		snprintf(j->why, sizeof j->why, "session options: %.300s", err.msg);
		goto done;
	}
	for (int i = 0; i < j->n; i++) {
		struct rt_model *m;
		if ((j->share && i == j->n - 1 &&
		     runtime_options_set(o, "ep.stop_share_ep_contexts", "1", &err) != 0) ||
		    (j->ctx[i][0] && runtime_options_set(o, "ep.context_file_path", j->ctx[i], &err) != 0) ||
		    runtime_model_load_opts(j->src[i], o, &m, &err) != 0) {
			snprintf(j->why, sizeof j->why, "cannot compile %.200s: %.150s", j->src[i], err.msg);
			goto done;
		}
		const char *cp = runtime_model_context_path(m);
		snprintf(j->ctx[i], sizeof j->ctx[i], "%s", cp ? cp : "");
		runtime_model_free(m);
		if (!j->ctx[i][0]) {
			snprintf(j->why, sizeof j->why, "compiling %.200s wrote no context model", j->src[i]);
			goto done;
		}
	}
	j->ms = now_ms() - t0;
	j->ok = 1;
done:
	runtime_options_free(o);
}

static void job_load(struct job *j)
{
	struct strata_error err;
	struct rt_model *m;
	double t0 = now_ms();
	int rc = runtime_model_load(j->src[0], &m, &err);
	j->ms = now_ms() - t0;
	if (rc != 0) {
		snprintf(j->why, sizeof j->why, "cannot load %.200s: %.150s", j->src[0], err.msg);
		return;
	}
	j->compiled = runtime_model_compiled(m);
	runtime_model_free(m);
	j->ok = 1;
}

/* 1 when a and b have the same type, shape and cell bytes (strings: the
 * same characters); *diff gets the largest difference of float cells. */
static int same_tensor(const struct rt_tensor *a, const struct rt_tensor *b, double *diff)
{
	*diff = 0;
	if (a->dtype != b->dtype || a->rank != b->rank)
		return 0;
	for (int d = 0; d < a->rank; d++)
		if (a->dims[d] != b->dims[d])
			return 0;
	int64_t n = runtime_tensor_count(a);
	if (a->dtype == BASE_DT_STRING) {
		for (int64_t i = 0; i < n; i++)
			if (strcmp(((char *const *)a->data)[i], ((char *const *)b->data)[i]) != 0)
				return 0;
		return 1;
	}
	if (a->dtype == BASE_DT_FLOAT)
		for (int64_t i = 0; i < n; i++) {
			double d = fabs((double)((const float *)a->data)[i] - ((const float *)b->data)[i]);
			if (!(d <= *diff))
				*diff = d;
		}
	return memcmp(a->data, b->data, (size_t)n * base_dtype_size(a->dtype)) == 0;
}

static void job_compare(struct job *j)
{
	struct strata_error err;
	struct rt_model *m = NULL, *mc = NULL;
	struct rt_ctx *cx = NULL, *cxc = NULL;
	struct feeds f = { 0 };
	struct rt_tensor out[MAX_INPUTS], outc[MAX_INPUTS];
	char why[400];
	for (int k = 0; k < 2; k++) {
		const char *path = k ? j->ctx[0] : j->src[0];
		if (runtime_model_load(path, k ? &mc : &m, &err) != 0) {
			snprintf(j->why, sizeof j->why, "cannot load %.200s: %.150s", path, err.msg);
			if (k)
				mc = NULL;
			else
				m = NULL;
			goto done;
		}
	}
	int nout = runtime_model_noutputs(m);
	if (nout > MAX_INPUTS || nout != runtime_model_noutputs(mc)) {
		snprintf(j->why, sizeof j->why, "%d outputs from the .onnx, %d from the context",
		         nout, runtime_model_noutputs(mc));
		goto done;
	}
	if (make_feeds(m, j->batch, j->seq, &f, why, sizeof why) != 0) {
		snprintf(j->why, sizeof j->why, "%s", why);
		goto done;
	}
	/* Two contexts: the outputs of both runs stay valid together. */
	if (runtime_ctx_new(m, &cx, &err) != 0 || runtime_ctx_new(mc, &cxc, &err) != 0 ||
	    runtime_run(cx, f.t, out, &err) != 0 || runtime_run(cxc, f.t, outc, &err) != 0) {
		snprintf(j->why, sizeof j->why, "cannot run: %.300s", err.msg);
		goto done;
	}
	j->identical = 1;
	for (int i = 0; i < nout; i++) {
		double diff;
		if (!same_tensor(&out[i], &outc[i], &diff)) {
			snprintf(j->why, sizeof j->why, "output %s differs (largest difference %.3g)",
			         runtime_model_output(m, i)->name, diff);
			j->identical = 0;
			break;
		}
	}
	if (!runtime_model_compiled(mc))
		lnote(j->why, sizeof j->why, "%s was compiled again instead of mapped", j->ctx[0]);
	j->ok = 1;
done:
	runtime_ctx_free(cxc);
	runtime_ctx_free(cx);
	feeds_free(&f);
	runtime_model_free(mc);
	runtime_model_free(m);
}

/* Run j in a forked process, which sends the record back.  Returns 0, or
 * -1 with j->why saying what went wrong. */
static int run_job(struct job *j)
{
	static struct job back; /* too large for comfort on the stack */
	int fd[2], status = 0;
	j->ok = j->compiled = j->identical = 0;
	j->ms = -1;
	j->why[0] = 0;
	fflush(stdout);
	fflush(stderr);
	if (pipe(fd) != 0) {
		snprintf(j->why, sizeof j->why, "pipe: %s", strerror(errno));
		return -1;
	}
	pid_t pid = fork();
	if (pid == 0) {
		close(fd[0]);
		if (j->kind == JOB_COMPILE)
			job_compile(j);
		else if (j->kind == JOB_LOAD)
			job_load(j);
		else
			job_compare(j);
		write_all(fd[1], j, sizeof *j);
		_exit(0);
	}
	close(fd[1]);
	if (pid < 0) {
		close(fd[0]);
		snprintf(j->why, sizeof j->why, "cannot fork: %s", strerror(errno));
		return -1;
	}
	size_t got = read_all(fd[0], &back, sizeof back);
	close(fd[0]);
	waitpid(pid, &status, 0);
	if (got != sizeof back) {
		if (WIFSIGNALED(status))
			snprintf(j->why, sizeof j->why, "the process died of signal %d", WTERMSIG(status));
		else
			snprintf(j->why, sizeof j->why, "the process exited with status %d",
			         WEXITSTATUS(status));
		return -1;
	}
	memcpy(j, &back, sizeof back);
	return j->ok ? 0 : -1;
}

/* ORT's session creation from model, timed by `ort_peer.js --create` in a
 * fresh node process: one intra-op thread, graph optimizations at ORT's
 * default.  Returns the time in ms, or -1 with why filled. */
static double ort_create(const struct options *o, const char *model, char *ver, size_t vcap,
                         char *why, size_t cap)
{
	char buf[1024];
	int fd[2], status = 0;
	if (pipe(fd) != 0) {
		snprintf(why, cap, "pipe: %s", strerror(errno));
		return -1;
	}
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(fd[1], 1);
		close(fd[0]);
		close(fd[1]);
		execlp("node", "node", o->script, "--create", o->peer, model, (char *)NULL);
		fprintf(stderr, "bench: cannot run node: %s\n", strerror(errno));
		_exit(127);
	}
	close(fd[1]);
	if (pid < 0) {
		close(fd[0]);
		snprintf(why, cap, "cannot fork: %s", strerror(errno));
		return -1;
	}
	size_t n = read_all(fd[0], buf, sizeof buf - 1);
	close(fd[0]);
	waitpid(pid, &status, 0);
	buf[n] = 0;
	buf[strcspn(buf, "\n")] = 0;
	char *end = buf;
	double ms = strncmp(buf, "created ", 8) == 0 ? strtod(buf + 8, &end) : -1;
	if (end == buf || end == buf + 8 || !(ms >= 0)) {
		snprintf(why, cap, "ORT's session creation failed: %.200s", n ? buf : "no answer");
		return -1;
	}
	if (sscanf(end, "%23s", ver) != 1)
		snprintf(ver, vcap, "?");
	return ms;
}

/* mkdir -p.  Returns 0 or an errno. */
static int make_dirs(const char *path)
{
	char p[JOB_PATH];
	if (!*path)
		return ENOENT;
	if (snprintf(p, sizeof p, "%s", path) >= (int)sizeof p)
		return ENAMETOOLONG;
	for (char *s = p + 1;; s++) {
		if (*s != '/' && *s)
			continue;
		char c = *s;
		*s = 0;
		if (mkdir(p, 0777) != 0 && errno != EEXIST)
			return errno;
		*s = c;
		if (!c)
			return 0;
	}
}

/* Copy src to dst (replaced) and sync it, so that write-back does not run
 * during the timed loads.  Returns 0, or -1 with why filled. */
static int copy_file(const char *src, const char *dst, char *why, size_t cap)
{
	const size_t bufsize = (size_t)1 << 20;
	char *buf = base_alloc(bufsize);
	int in = -1, out = -1, rc = -1;
	if (!buf) {
		snprintf(why, cap, "out of memory");
		return -1;
	}
	if ((in = open(src, O_RDONLY)) < 0 ||
	    (out = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0666)) < 0) {
		snprintf(why, cap, "%.300s: %s", in < 0 ? src : dst, strerror(errno));
		goto done;
	}
	for (;;) {
		ssize_t r = read(in, buf, bufsize);
		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0)
			break;
		if (r < 0 || write_all(out, buf, (size_t)r) != 0) {
			snprintf(why, cap, "copying %.150s to %.150s: %s", src, dst, strerror(errno));
			goto done;
		}
	}
	if (fsync(out) != 0) {
		snprintf(why, cap, "%.300s: %s", dst, strerror(errno));
		goto done;
	}
	rc = 0;
done:
	if (in >= 0)
		close(in);
	if (out >= 0 && close(out) != 0 && rc == 0) {
		snprintf(why, cap, "%.300s: %s", dst, strerror(errno));
		rc = -1;
	}
	base_free(buf, bufsize);
	return rc;
}

/* Flush a file the runtime wrote to disk (see copy_file); best effort. */
static void sync_file(const char *path)
{
	int fd = open(path, O_RDONLY);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
}

static long long file_size(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

/* Entries in folder dir, or -1. */
static int count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	closedir(d);
	return n;
}

struct load_result {
	const char *model;
	int ran;                 /* 1: both Strata loads were timed */
	int have_ort;            /* 1: so was ORT's session creation */
	double onnx_ms, ctx_ms, ort_ms, compile_ms;
	long long bin_bytes;     /* size of the _strata.bin, -1 when unknown */
	int identical;           /* 1, 0, or -1: not known */
	char ort_version[24];
	char note[400];
};

struct shared_result {
	int tried;               /* 0: not run (a MiniLM model left out) */
	int ran;                 /* 1: compiled */
	long long bin_bytes, single_bytes; /* -1 when unknown */
	int files;               /* files the compilation added to its folder, -1 */
	int identical;           /* 1, 0, or -1: not known */
	char note[400];
};

static int load_rounds(double scale)
{
	int r = scaled(LOAD_ROUNDS, scale);
	return r < LOAD_MIN_ROUNDS ? LOAD_MIN_ROUNDS : r > LOAD_MAX_ROUNDS ? LOAD_MAX_ROUNDS : r;
}

/* Part 1 for one model (see the file comment). */
static void load_case(const struct options *o, const char *model, int batch, int seq,
                      int rounds, struct load_result *lr)
{
	static struct job j;
	char src[JOB_PATH], dir[JOB_PATH], copy[JOB_PATH], ctx[JOB_PATH], bin[JOB_PATH], why[400];
	double tm[3][LOAD_MAX_ROUNDS];
	int e, kinds = o->peer ? 3 : 2, ort_ok = o->peer != NULL, recompiled = 0;

	memset(lr, 0, sizeof *lr);
	lr->model = model;
	lr->onnx_ms = lr->ctx_ms = lr->ort_ms = lr->compile_ms = -1;
	lr->bin_bytes = -1;
	lr->identical = -1;
	snprintf(src, sizeof src, "%s/%s.onnx", o->models, model);
	snprintf(dir, sizeof dir, "%s/single", o->ctxdir);
	if (snprintf(copy, sizeof copy, "%s/%s.onnx", dir, model) >= (int)sizeof copy ||
	    snprintf(ctx, sizeof ctx, "%s/%s_ctx.onnx", dir, model) >= (int)sizeof ctx ||
	    snprintf(bin, sizeof bin, "%s/%s_strata.bin", dir, model) >= (int)sizeof bin) {
		lnote(lr->note, sizeof lr->note, "%s: path too long", dir);
		return;
	}
	if (access(src, R_OK) != 0) {
		lnote(lr->note, sizeof lr->note, "%s: %s", src, strerror(errno));
		return;
	}
	if ((e = make_dirs(dir)) != 0) {
		lnote(lr->note, sizeof lr->note, "%s: %s", dir, strerror(e));
		return;
	}
	/* A compilation that fails must not leave an older pair to be timed. */
	unlink(ctx);
	unlink(bin);
	if (copy_file(src, copy, why, sizeof why) != 0) {
		lnote(lr->note, sizeof lr->note, "%s", why);
		return;
	}
	memset(&j, 0, sizeof j);
	j.kind = JOB_COMPILE;
	j.n = 1;
	snprintf(j.src[0], sizeof j.src[0], "%s", copy);
	if (run_job(&j) != 0) {
		lnote(lr->note, sizeof lr->note, "%s", j.why);
		return;
	}
	lr->compile_ms = j.ms;
	if (strcmp(j.ctx[0], ctx) != 0)
		lnote(lr->note, sizeof lr->note, "the context model went to %.200s", j.ctx[0]);
	sync_file(ctx);
	sync_file(bin);
	lr->bin_bytes = file_size(bin);

	for (int i = 0; i < rounds; i++) {
		for (int k = 0; k < kinds; k++) {
			int kind = (i + k) % kinds; /* 0: .onnx, 1: _ctx.onnx, 2: ORT */
			if (kind == 2) {
				if (!ort_ok)
					continue;
				tm[2][i] = ort_create(o, copy, lr->ort_version,
				                      sizeof lr->ort_version, why, sizeof why);
				if (tm[2][i] < 0) {
					lnote(lr->note, sizeof lr->note, "%s", why);
					ort_ok = 0;
				}
				continue;
			}
			memset(&j, 0, sizeof j);
			j.kind = JOB_LOAD;
			snprintf(j.src[0], sizeof j.src[0], "%s", kind ? ctx : copy);
			if (run_job(&j) != 0) {
				lnote(lr->note, sizeof lr->note, "%s", j.why);
				return;
			}
			if (kind == 1 && !j.compiled && !recompiled++)
				lnote(lr->note, sizeof lr->note, "%s was compiled again instead of mapped", ctx);
			tm[kind][i] = j.ms;
		}
	}
	lr->ran = 1;
	lr->onnx_ms = bench_median(tm[0], (size_t)rounds);
	lr->ctx_ms = bench_median(tm[1], (size_t)rounds);
	if (ort_ok) {
		lr->have_ort = 1;
		lr->ort_ms = bench_median(tm[2], (size_t)rounds);
	}

	memset(&j, 0, sizeof j);
	j.kind = JOB_COMPARE;
	j.batch = batch;
	j.seq = seq;
	snprintf(j.src[0], sizeof j.src[0], "%s", copy);
	snprintf(j.ctx[0], sizeof j.ctx[0], "%s", ctx);
	if (run_job(&j) == 0)
		lr->identical = j.identical;
	if (j.why[0])
		lnote(lr->note, sizeof lr->note, "%s", j.why);
}

/* Part 2: the MiniLM models compiled into one shared context, from the
 * copies part 1 made, their context models into CTXDIR/shared. */
static void shared_case(const struct options *o, const struct load_result *lr, int n,
                        struct shared_result *sr)
{
	static struct job j;
	char dir[JOB_PATH], bin[JOB_PATH];
	const struct load_result *single[NSHARED];
	int e;

	memset(sr, 0, sizeof *sr);
	sr->bin_bytes = sr->single_bytes = -1;
	sr->files = sr->identical = -1;
	for (int s = 0; s < NSHARED; s++) {
		single[s] = NULL;
		for (int i = 0; i < n; i++)
			if (strcmp(lr[i].model, shared_models[s]) == 0)
				single[s] = &lr[i];
		if (!single[s])
			return; /* left out by --only */
	}
	sr->tried = 1;
	fprintf(stderr, "bench: load: the MiniLM models in one shared context ...");
	sr->single_bytes = single[0]->bin_bytes;
	for (int s = 0; s < NSHARED; s++)
		if (!single[s]->ran) {
			lnote(sr->note, sizeof sr->note, "%s failed alone (above)", shared_models[s]);
			return;
		}
	snprintf(dir, sizeof dir, "%s/shared", o->ctxdir);
	if ((e = make_dirs(dir)) != 0) {
		lnote(sr->note, sizeof sr->note, "%s: %s", dir, strerror(e));
		return;
	}
	memset(&j, 0, sizeof j);
	j.kind = JOB_COMPILE;
	j.n = NSHARED;
	j.share = 1;
	for (int s = 0; s < NSHARED; s++) {
		if (snprintf(j.src[s], sizeof j.src[s], "%s/single/%s.onnx", o->ctxdir,
		             shared_models[s]) >= (int)sizeof j.src[s] ||
		    snprintf(j.ctx[s], sizeof j.ctx[s], "%s/%s_ctx.onnx", dir,
		             shared_models[s]) >= (int)sizeof j.ctx[s] ||
		    snprintf(bin, sizeof bin, "%s/%s_strata.bin", dir,
		             shared_models[s]) >= (int)sizeof bin) {
			lnote(sr->note, sizeof sr->note, "%s: path too long", dir);
			return;
		}
		unlink(j.ctx[s]);
		unlink(bin);
	}
	/* The binary is named after the first model. */
	if (snprintf(bin, sizeof bin, "%s/%s_strata.bin", dir, shared_models[0]) >= (int)sizeof bin) {
		lnote(sr->note, sizeof sr->note, "%s: path too long", dir);
		return;
	}
	int before = count_entries(dir);
	if (run_job(&j) != 0) {
		lnote(sr->note, sizeof sr->note, "%s", j.why);
		return;
	}
	int after = count_entries(dir);
	sr->ran = 1;
	sr->files = before >= 0 && after >= 0 ? after - before : -1;
	sr->bin_bytes = file_size(bin);
	if (sr->bin_bytes < 0)
		lnote(sr->note, sizeof sr->note, "%s: %s", bin, strerror(errno));

	char ctx[NSHARED][JOB_PATH];
	memcpy(ctx, j.ctx, sizeof ctx);
	sr->identical = 1;
	for (int s = 0; s < NSHARED; s++) {
		memset(&j, 0, sizeof j);
		j.kind = JOB_COMPARE;
		j.batch = 1;
		j.seq = 128;
		for (size_t c = 0; c < NCASES; c++)
			if (strcmp(cases[c].model, shared_models[s]) == 0) {
				j.batch = cases[c].batch;
				j.seq = cases[c].seq;
				break;
			}
		snprintf(j.src[0], sizeof j.src[0], "%s/single/%s.onnx", o->ctxdir, shared_models[s]);
		memcpy(j.ctx[0], ctx[s], sizeof j.ctx[0]);
		if (run_job(&j) != 0)
			sr->identical = -1;
		else if (!j.identical && sr->identical == 1)
			sr->identical = 0;
		if (j.why[0])
			lnote(sr->note, sizeof sr->note, "%s: %s", shared_models[s], j.why);
	}
}

/* A JSON boolean, or null when not known. */
static void json_bool(const char *key, int v)
{
	printf(", \"%s\": %s", key, v > 0 ? "true" : v == 0 ? "false" : "null");
}

/* One line of the goals: met, NOT MET, or not measured; value is what was
 * measured (ignored when nothing was). */
static void goal(int *tally, int measured, int met, const char *what, const char *value,
                 const char *target)
{
	char line[512];
	snprintf(line, sizeof line, "%s: %s (goal: %s)", what, measured ? value : "no figure", target);
	bench_goal(tally, measured, met, line);
}

static int is_minilm(const char *model)
{
	for (int s = 0; s < NSHARED; s++)
		if (strcmp(model, shared_models[s]) == 0)
			return 1;
	return 0;
}

static void print_loads(const struct load_result *lr, int n, const struct shared_result *sr,
                        int rounds, int peer_usable)
{
	const char *ortv = NULL;
	for (int i = 0; i < n; i++)
		if (lr[i].have_ort && !ortv)
			ortv = lr[i].ort_version;
	printf("\nsession creation: Strata loading the .onnx, Strata loading its compiled context "
	       "(_ctx.onnx), ");
	if (ortv)
		printf("ONNX Runtime %s creating a session from the .onnx;\n", ortv);
	else
		printf("ONNX Runtime not measured (%s);\n", peer_usable ? "it failed" : "no peer");
	printf("medians of %d rounds, each round one load of each kind in a fresh process, the kind "
	       "going first rotating\n\n", rounds);
	printf("%-27s %10s %9s %9s %9s %8s %8s %8s %9s\n", "model", "compile ms", "onnx ms",
	       "ctx ms", "ort ms", "bin MB", "ctx/onnx", "ctx/ort", "identical");
	for (int i = 0; i < n; i++) {
		const struct load_result *r = &lr[i];
		printf("%-27s", r->model);
		put_ms(r->compile_ms, 10);
		put_ms(r->ran ? r->onnx_ms : -1, 9);
		put_ms(r->ran ? r->ctx_ms : -1, 9);
		put_ms(r->have_ort ? r->ort_ms : -1, 9);
		put_num(r->bin_bytes >= 0 ? (double)r->bin_bytes / (1 << 20) : -1, 8, 1);
		put_num(r->ran ? r->onnx_ms / r->ctx_ms : -1, 8, 1);
		put_num(r->have_ort ? r->ort_ms / r->ctx_ms : -1, 8, 1);
		printf(" %9s\n", r->identical > 0 ? "yes" : r->identical == 0 ? "NO" : "-");
	}
	if (sr->tried)
		printf("shared context of the %d MiniLM models: %s\n", NSHARED,
		       sr->ran ? "see the last JSON line" : "failed (see the notes)");
	else
		printf("shared context: not measured (it takes the %d MiniLM models; --only left some out)\n",
		       NSHARED);
	int notes = 0;
	for (int i = 0; i < n; i++)
		if (lr[i].note[0]) {
			if (!notes++)
				printf("\nnotes:\n");
			printf("  %s: %s\n", lr[i].model, lr[i].note);
		}
	if (sr->note[0]) {
		if (!notes++)
			printf("\nnotes:\n");
		printf("  shared context: %s\n", sr->note);
	}
	printf("\n");

	for (int i = 0; i < n; i++) {
		const struct load_result *r = &lr[i];
		printf("{\"model\": \"%s\"", r->model);
		json_num("load_onnx_ms", r->onnx_ms, r->ran);
		json_num("load_ctx_ms", r->ctx_ms, r->ran);
		json_num("ort_create_ms", r->ort_ms, r->have_ort);
		if (r->bin_bytes >= 0)
			printf(", \"bin_bytes\": %lld", r->bin_bytes);
		else
			printf(", \"bin_bytes\": null");
		json_num("ctx_vs_onnx", r->ran ? r->onnx_ms / r->ctx_ms : 0, r->ran);
		json_num("ctx_vs_ort", r->have_ort ? r->ort_ms / r->ctx_ms : 0, r->have_ort);
		json_bool("identical", r->identical);
		printf("}\n");
	}
	if (sr->tried) {
		printf("{\"shared\": [");
		for (int s = 0; s < NSHARED; s++)
			printf("%s\"%s\"", s ? ", " : "", shared_models[s]);
		printf("]");
		if (sr->bin_bytes >= 0)
			printf(", \"shared_bin_bytes\": %lld", sr->bin_bytes);
		else
			printf(", \"shared_bin_bytes\": null");
		if (sr->single_bytes >= 0)
			printf(", \"single_bin_bytes\": %lld", sr->single_bytes);
		else
			printf(", \"single_bin_bytes\": null");
		json_num("ratio", (double)sr->bin_bytes / (double)sr->single_bytes,
		         sr->bin_bytes >= 0 && sr->single_bytes > 0);
		if (sr->files >= 0)
			printf(", \"files\": %d", sr->files);
		else
			printf(", \"files\": null");
		json_bool("identical", sr->identical);
		printf("}\n");
	}

	/* The goals, reported rather than enforced. */
	int tally[3] = { 0, 0, 0 }, unknown = 0, differ = 0;
	char what[128], value[64];
	printf("\ngoals:\n");
	for (int i = 0; i < n; i++) {
		const struct load_result *r = &lr[i];
		if (!is_minilm(r->model))
			continue;
		double v = r->have_ort ? r->ort_ms / r->ctx_ms : 0;
		snprintf(what, sizeof what, "%s, context load vs ORT's session creation", r->model);
		snprintf(value, sizeof value, "%.1fx faster", v);
		goal(tally, r->have_ort, v >= 20, what, value, "20x");
		v = r->ran ? r->onnx_ms / r->ctx_ms : 0;
		snprintf(what, sizeof what, "%s, context load vs Strata's .onnx load", r->model);
		snprintf(value, sizeof value, "%.1fx faster", v);
		goal(tally, r->ran, v >= 10, what, value, "10x");
	}
	/* Any difference is a miss; otherwise every check must have run. */
	for (int i = 0; i < n; i++) {
		unknown |= lr[i].identical < 0;
		differ |= lr[i].identical == 0;
	}
	if (sr->tried) {
		unknown |= sr->identical < 0;
		differ |= sr->identical == 0;
	}
	snprintf(what, sizeof what, "outputs from the contexts (%d models%s) vs the .onnx's", n,
	         sr->tried ? ", and the shared one" : "");
	goal(tally, differ || !unknown, !differ, what, differ ? "some differ" : "bit-identical",
	     "bit-identical");
	if (sr->tried) {
		double v = sr->bin_bytes >= 0 && sr->single_bytes > 0
		           ? (double)sr->bin_bytes / (double)sr->single_bytes : 0;
		snprintf(what, sizeof what, "shared binary of the %d MiniLM models vs %s's alone",
		         NSHARED, shared_models[0]);
		snprintf(value, sizeof value, "%.3fx the size", v);
		goal(tally, v > 0, v <= 1.1, what, value, "at most 1.1x");
	}
	printf("goals: %d met, %d not met, %d not measured\n", tally[0], tally[1], tally[2]);
}

/* Parts 1 and 2 for the selected models; returns 0, or 1 when Strata could
 * not load some model (goals not met do not count: they are reported). */
int run_loads(const struct options *o)
{
	static struct load_result lr[NCASES];
	struct shared_result sr;
	int n = 0, rounds = load_rounds(o->scale), status = 0;
	for (size_t c = 0; c < NCASES; c++) {
		int seen = 0;
		for (int i = 0; i < n; i++)
			seen |= strcmp(lr[i].model, cases[c].model) == 0;
		/* a bf16 case's file is its float model's, loaded above */
		if (seen || !selected(o, cases[c].model) || bench_is_bf16(cases[c].model))
			continue;
		fprintf(stderr, "bench: load %s: compile once, %d rounds ...", cases[c].model, rounds);
		double t0 = now_ms();
		load_case(o, cases[c].model, cases[c].batch, cases[c].seq, rounds, &lr[n]);
		fprintf(stderr, " %.1f s\n", (now_ms() - t0) / 1e3);
		status |= !lr[n].ran;
		n++;
	}
	double t0 = now_ms();
	shared_case(o, lr, n, &sr);
	if (sr.tried)
		fprintf(stderr, " %.1f s\n", (now_ms() - t0) / 1e3);
	status |= sr.tried && !sr.ran;
	print_loads(lr, n, &sr, rounds, o->peer != NULL);
	return status;
}
