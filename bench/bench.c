/*
 * bench.c: Strata's runtime timed against ONNX Runtime, in the same run.
 *
 *     bench [--peer DIR] [--script FILE] [--scale F] [--only NAME,...]
 *           [--ctx-dir DIR] [--no-loads | --loads-only] MODELDIR
 *
 * MODELDIR holds the models the peer's mkmodels.js generates (mlp_ranker,
 * minilm_l6_cross, minilm_l6_cross_decomposed, minilm_l6_embed), or the same
 * graphs written by mkbench where the peer is not set up; DIR is a
 * set-up copy of the peer harness (node_modules and inputs.js), and FILE the
 * ORT driver (default bench/ort_peer.js).  Without a usable peer the Strata
 * figures are printed alone.  --scale multiplies the number of runs (0.1 for
 * a quick look); --only keeps the named models.  After the inference cases
 * comes session creation (see its section below), in the scratch folder
 * given by --ctx-dir (default build/bench-ctx); --no-loads leaves it out,
 * --loads-only runs it alone.
 *
 * Data flow: this process only orchestrates and stays small.  Each case runs
 * in a forked process of its own, so that the peak RSS it reports belongs to
 * one model: that process first starts `node ort_peer.js` (before it has
 * mapped anything big: a child forked later would inherit the parent's
 * high-water mark), then loads the model with runtime_model_load, builds the
 * same inputs the peer builds (its generator is reproduced bit for bit below
 * and checked by a checksum of the cells), warms both sides up, and runs
 * rounds of K Strata runs and K ORT runs, alternating which side goes first,
 * so that both see the same machine state.  Latency is the median over all
 * timed runs of a side.  Allocations are counted with base_alloc_thread_count
 * around the timed Strata runs only.  After reading its own peak RSS the case
 * process counts the model's FLOPs (see count_flops) and sends one struct
 * result back through a pipe.  The orchestrator prints a table, then one JSON
 * line per case.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The FLOP count reads the static shapes the loader infers (runtime_int.h);
 * the timed path uses the public API only. */
#include "../runtime/runtime_int.h"

/* ---- the cases ------------------------------------------------------------------
 * Run counts are per side: rounds * per_round timed runs after warmup
 * untimed ones.  They aim at a few seconds per small case and keep the whole
 * table within minutes on one core. */
struct bench_case {
	const char *model;
	int batch;
	int seq;          /* 0: the model has no sequence dimension */
	int rounds;
	int per_round;
	int warmup;
};

static const struct bench_case cases[] = {
	{ "mlp_ranker", 1, 0, 10, 2000, 200 },
	{ "mlp_ranker", 1000, 0, 10, 20, 5 },
	{ "minilm_l6_cross", 1, 128, 6, 10, 3 },
	{ "minilm_l6_cross", 16, 128, 5, 2, 1 },
	{ "minilm_l6_cross_decomposed", 1, 128, 6, 10, 3 },
	{ "minilm_l6_cross_decomposed", 16, 128, 5, 2, 1 },
	{ "minilm_l6_embed", 1, 128, 6, 10, 3 },
	{ "minilm_l6_embed", 16, 128, 5, 2, 1 },
};
#define NCASES (sizeof cases / sizeof cases[0])

/* What a case process sends back: a fixed-size record, written in one
 * write() (smaller than PIPE_BUF). */
struct result {
	int ran;               /* 1: the Strata side produced figures */
	int have_ort;          /* 1: so did the peer */
	int runs;              /* timed runs per side */
	double strata_ms, ort_ms;
	double flops;          /* per run, < 0 when unknown */
	double strata_rss_mb, ort_rss_mb;
	double allocs_per_run;
	char ort_version[24], node_version[24];
	char note[400];        /* why a figure is missing, or a warning */
};

struct options {
	const char *peer;      /* NULL: no peer */
	const char *script;
	const char *models;
	double scale;
	const char *only;
	const char *ctxdir;    /* scratch folder of the session-creation part */
	int loads;             /* LOADS_*: which parts run */
};

enum { LOADS_AFTER, LOADS_SKIP, LOADS_ONLY };

#define SEED 7 /* ort_bench.js's default seed, also ort_peer.js's */
/* The peer answers a round in one line of times: this many fit its buffer. */
#define MAX_PER_ROUND 10000
#define MAX_INPUTS 16

/* ---- small helpers ---------------------------------------------------------------- */

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Append to a note of cap bytes, "; " between items. */
static void note_vadd(char *note, size_t cap, const char *fmt, va_list ap)
{
	size_t len = strlen(note);
	if (len && len + 2 < cap) {
		strcpy(note + len, "; ");
		len += 2;
	}
	vsnprintf(note + len, cap - len, fmt, ap);
}

static void note_add(struct result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note_add(struct result *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	note_vadd(r->note, sizeof r->note, fmt, ap);
	va_end(ap);
}

static int write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static size_t read_all(int fd, void *buf, size_t n)
{
	char *p = buf;
	size_t got = 0;
	while (got < n) {
		ssize_t r = read(fd, p + got, n - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	return got;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Median of v[0..n-1] (sorts v). */
static double median(double *v, size_t n)
{
	qsort(v, n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static double peak_rss_mb(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) != 0)
		return -1;
	return (double)ru.ru_maxrss / 1024.0; /* ru_maxrss is in KiB on Linux */
}

/* ---- the peer's input generator ---------------------------------------------------
 * inputs.js draws from xoshiro128** seeded through splitmix32, with
 * Box-Muller normals.  The same arithmetic on uint32_t gives the same bits
 * as JavaScript's Math.imul and >>> 0, so both runtimes read identical
 * tensors (the peer's checksum confirms it). */
struct rng {
	uint32_t a, b, c, d;
	int has_spare;
	double spare;
};

static uint32_t rotl32(uint32_t x, int k)
{
	return (x << k) | (x >> (32 - k));
}

static uint32_t splitmix32(uint32_t *s)
{
	*s += 0x9e3779b9u;
	uint32_t z = *s;
	z = (z ^ (z >> 16)) * 0x85ebca6bu;
	z = (z ^ (z >> 13)) * 0xc2b2ae35u;
	return z ^ (z >> 16);
}

static void rng_init(struct rng *r, uint32_t seed)
{
	uint32_t s = seed ? seed : 0x9e3779b9u;
	r->a = splitmix32(&s);
	r->b = splitmix32(&s);
	r->c = splitmix32(&s);
	r->d = splitmix32(&s);
	r->has_spare = 0;
	r->spare = 0;
}

static uint32_t rng_u32(struct rng *r)
{
	uint32_t out = rotl32(r->b * 5u, 7) * 9u;
	uint32_t t = r->b << 9;
	r->c ^= r->a;
	r->d ^= r->b;
	r->b ^= r->c;
	r->a ^= r->d;
	r->c ^= t;
	r->d = rotl32(r->d, 11);
	return out;
}

static double rng_uniform(struct rng *r)
{
	return ((double)rng_u32(r) + 0.5) / 4294967296.0;
}

static int64_t rng_int(struct rng *r, int64_t n)
{
	return (int64_t)floor(rng_uniform(r) * (double)n);
}

static double rng_normal(struct rng *r)
{
	if (r->has_spare) {
		r->has_spare = 0;
		return r->spare;
	}
	double u = rng_uniform(r), v = rng_uniform(r);
	double rad = sqrt(-2 * log(u)), th = 2 * M_PI * v;
	r->spare = rad * sin(th);
	r->has_spare = 1;
	return rad * cos(th);
}

static int name_in(const char *s, const char *const *list)
{
	for (; *list; list++)
		if (strcmp(s, *list) == 0)
			return 1;
	return 0;
}

/* The inputs of one case: tensors in model input order, their buffers, and
 * the sum of every cell (the peer computes the same sum). */
struct feeds {
	int n;
	struct rt_tensor t[MAX_INPUTS];
	size_t bytes[MAX_INPUTS];
	double checksum;
};

static void feeds_free(struct feeds *f)
{
	for (int i = 0; i < f->n; i++)
		base_free(f->t[i].data, f->bytes[i]);
	f->n = 0;
}

/* inputs.js's makeFeeds: symbolic dimensions named like a batch take batch,
 * named like a sequence take seq, others take batch if first, else seq.
 * Token ids are [CLS]=101, ids drawn in [999, vocab), [SEP]=102 in the
 * middle and at the end; token types 0 then 1 (a sentence pair); masks of
 * ones; float "emb" inputs are normal draws scaled so a row has about unit
 * norm.  Returns 0, or -1 with why filled. */
static int make_feeds(const struct rt_model *m, int batch, int seq, struct feeds *f,
                      char *why, size_t cap)
{
	static const char *const batch_names[] = { "batch", "batch_size", "n", "b", NULL };
	static const char *const seq_names[] = { "seq", "sequence", "seq_len", "seqlen",
	                                         "sequence_length", "s", "t", NULL };
	const int64_t vocab = 30522;
	struct rng rng;
	rng_init(&rng, SEED);
	memset(f, 0, sizeof *f);
	if (seq <= 0)
		seq = 1;
	int nin = runtime_model_ninputs(m);
	if (nin > MAX_INPUTS) {
		snprintf(why, cap, "%d inputs: the benchmark feeds at most %d", nin, MAX_INPUTS);
		return -1;
	}
	for (int i = 0; i < nin; i++) {
		const struct rt_value_info *in = runtime_model_input(m, i);
		struct rt_tensor *t = &f->t[i];
		char lname[128];
		size_t k;
		for (k = 0; in->name[k] && k + 1 < sizeof lname; k++)
			lname[k] = (char)tolower((unsigned char)in->name[k]);
		lname[k] = 0;
		if (in->kind != RT_KIND_TENSOR || in->rank < 1) {
			snprintf(why, cap, "input %s: not a tensor of known rank", in->name);
			goto fail;
		}
		t->dtype = in->dtype;
		t->rank = in->rank;
		int symbols = 0;
		int64_t count = 1;
		for (int d = 0; d < in->rank; d++) {
			if (in->dims[d] >= 0) {
				t->dims[d] = in->dims[d];
			} else {
				char dn[64];
				const char *src = in->dim_names[d] ? in->dim_names[d] : "";
				for (k = 0; src[k] && k + 1 < sizeof dn; k++)
					dn[k] = (char)tolower((unsigned char)src[k]);
				dn[k] = 0;
				if (name_in(dn, batch_names))
					t->dims[d] = batch;
				else if (name_in(dn, seq_names))
					t->dims[d] = seq;
				else
					t->dims[d] = symbols == 0 ? batch : seq;
				symbols++;
			}
			count *= t->dims[d];
		}
		size_t esize = base_dtype_size(t->dtype);
		int64_t S = t->dims[t->rank - 1];
		if (S <= 0 || count <= 0 || esize == 0) {
			snprintf(why, cap, "input %s: empty or of unsupported type", in->name);
			goto fail;
		}
		int64_t B = count / S;
		f->bytes[i] = (size_t)count * esize;
		t->data = base_alloc(f->bytes[i]);
		if (!t->data) {
			snprintf(why, cap, "out of memory for input %s", in->name);
			goto fail;
		}
		f->n = i + 1;
		if (t->dtype == BASE_DT_INT64 || t->dtype == BASE_DT_INT32) {
			for (int64_t b = 0; b < B; b++) {
				int64_t len = S, mid = len / 2 > 1 ? len / 2 : 1;
				for (int64_t s = 0; s < S; s++) {
					int64_t v;
					if (strstr(lname, "mask"))
						v = s < len;
					else if (strstr(lname, "type"))
						v = s < len && s > mid;
					else if (strstr(lname, "ids") || strstr(lname, "token"))
						v = s == 0 ? 101 : (s == len - 1 || s == mid) ? 102
						                   : 999 + rng_int(&rng, vocab - 999);
					else
						v = rng_int(&rng, 10);
					if (t->dtype == BASE_DT_INT64)
						((int64_t *)t->data)[b * S + s] = v;
					else
						((int32_t *)t->data)[b * S + s] = (int32_t)v;
					f->checksum += (double)v;
				}
			}
		} else if (t->dtype == BASE_DT_FLOAT || t->dtype == BASE_DT_DOUBLE) {
			double scale = strstr(lname, "emb") ? 1 / sqrt((double)S) : 1;
			for (int64_t j = 0; j < count; j++) {
				double v = rng_normal(&rng) * scale;
				if (t->dtype == BASE_DT_FLOAT) {
					float x = (float)v;
					((float *)t->data)[j] = x;
					f->checksum += (double)x;
				} else {
					((double *)t->data)[j] = v;
					f->checksum += v;
				}
			}
		} else if (t->dtype == BASE_DT_BOOL) {
			for (int64_t j = 0; j < count; j++) {
				uint8_t v = (uint8_t)rng_int(&rng, 2);
				((uint8_t *)t->data)[j] = v;
				f->checksum += v;
			}
		} else {
			snprintf(why, cap, "input %s: type %s not supported by the input generator",
			         in->name, base_dtype_name(t->dtype));
			goto fail;
		}
	}
	return 0;
fail:
	feeds_free(f);
	return -1;
}

/* ---- FLOPs --------------------------------------------------------------------------
 * The model's work, counted once from the graph as written: the model is
 * loaded again with graph optimizations disabled, and every MatMul, Gemm and
 * Conv node contributes 2 flops (a multiply and an add) per multiply-add, its
 * output cells times its reduction length (K for MatMul and Gemm, C/group
 * times the kernel size for Conv).  Shapes come from the static shapes the
 * loader infers, with the symbolic dimensions ("batch", "seq") bound to the
 * sizes of this case's inputs, so attention's activation-by-activation
 * MatMuls count too.  Everything else (softmax, layer norms, elementwise) is
 * left out: the figure is the GEMM work, the part with a machine roof to
 * compare with (BASELINE.md's 2.87 GFLOP per MiniLM sequence counts the same). */
struct binding {
	int n;
	const char *name[MAX_INPUTS * RT_MAX_RANK];
	int64_t size[MAX_INPUTS * RT_MAX_RANK];
};

static int64_t dim_value(const struct rt_dim *d, const struct binding *b)
{
	if (d->size >= 0)
		return d->size;
	if (!d->sym)
		return -1;
	for (int i = 0; i < b->n; i++) {
		if (strcmp(b->name[i], d->sym) != 0)
			continue;
		return d->bound > 0 && d->bound < b->size[i] ? d->bound : b->size[i];
	}
	return -1;
}

/* Cells of shape s from dimension first on; -1 when one is unknown. */
static double shape_cells(const struct rt_shape *s, int first, const struct binding *b)
{
	if (s->rank < 0)
		return -1;
	double n = 1;
	for (int i = first; i < s->rank; i++) {
		int64_t v = dim_value(&s->d[i], b);
		if (v < 0)
			return -1;
		n *= (double)v;
	}
	return n;
}

/* Multiply-adds of node n: 0 for a node that does no GEMM work, -1 when a
 * shape it needs is unknown. */
static double node_macs(const struct rt_graph *g, const struct rt_node *n, const struct binding *b)
{
	int matmul = strcmp(n->op, "MatMul") == 0, gemm = strcmp(n->op, "Gemm") == 0;
	int conv = strcmp(n->op, "Conv") == 0;
	if (n->folded || (n->domain && n->domain[0]) || !(matmul || gemm || conv))
		return 0;
	if (n->nin < 2 || n->in[0] < 0 || n->in[1] < 0 || n->nout < 1 || n->out[0] < 0)
		return -1;
	const struct rt_shape *a = &g->values[n->in[0]].shape;
	const struct rt_shape *w = &g->values[n->in[1]].shape;
	double cells = shape_cells(&g->values[n->out[0]].shape, 0, b), k;
	if (matmul)
		k = a->rank >= 1 ? (double)dim_value(&a->d[a->rank - 1], b) : -1;
	else if (gemm)
		k = a->rank == 2 ? (double)dim_value(&a->d[rt_attr_int(n, "transA", 0) ? 0 : 1], b) : -1;
	else
		k = w->rank >= 3 ? shape_cells(w, 1, b) : -1;
	return cells < 0 || k < 0 ? -1 : cells * k;
}

/* FLOPs of one run of the model at path on inputs in; -1 with why filled
 * when they cannot be counted. */
static double count_flops(const char *path, const struct feeds *in, char *why, size_t cap)
{
	struct strata_error err;
	struct rt_options *o = NULL;
	struct rt_model *m = NULL;
	double macs = -1;
	if (runtime_options_new(&o, &err) != 0 ||
	    runtime_options_set(o, "session.graph_optimization_level", "disabled", &err) != 0 ||
	    runtime_model_load_opts(path, o, &m, &err) != 0) {
		snprintf(why, cap, "FLOPs not counted: %.300s", err.msg);
		goto done;
	}
	struct binding b = { 0 };
	for (int i = 0; i < runtime_model_ninputs(m) && i < in->n; i++) {
		const struct rt_value_info *info = runtime_model_input(m, i);
		for (int d = 0; d < info->rank && d < in->t[i].rank; d++) {
			if (info->dims[d] < 0 && info->dim_names[d] && info->dim_names[d][0]) {
				b.name[b.n] = info->dim_names[d];
				b.size[b.n++] = in->t[i].dims[d];
			}
		}
	}
	macs = 0;
	for (int i = 0; i < m->g.nnodes; i++) {
		double x = node_macs(&m->g, &m->g.nodes[i], &b);
		if (x < 0) {
			snprintf(why, cap, "FLOPs not counted: a shape of node %.200s (%.40s) is not known at load",
			         m->g.nodes[i].name, m->g.nodes[i].op);
			macs = -1;
			break;
		}
		macs += x;
	}
done:
	runtime_model_free(m);
	runtime_options_free(o);
	return macs < 0 ? -1 : 2 * macs;
}

/* ---- the peer process -----------------------------------------------------------------
 * One node process per case, one line per command and per answer. */
struct peer {
	pid_t pid;
	int to, from;          /* its stdin and stdout */
	size_t len, used;      /* bytes in buf; bytes of the last line handed out */
	char buf[1 << 18];     /* holds the longest answer: per_round times */
};

static struct peer the_peer; /* one per case process; too large for the stack */

static int peer_start(struct peer *p, const char *script, const char *dir, const char *model,
                      int batch, int seq)
{
	int in[2], out[2];
	p->pid = -1;
	p->len = p->used = 0;
	if (pipe(in) != 0)
		return -1;
	if (pipe(out) != 0) {
		close(in[0]);
		close(in[1]);
		return -1;
	}
	char b[32], s[32];
	snprintf(b, sizeof b, "%d", batch);
	snprintf(s, sizeof s, "%d", seq > 0 ? seq : 1);
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[0]);
		close(in[1]);
		close(out[0]);
		close(out[1]);
		execlp("node", "node", script, dir, model, b, s, (char *)NULL);
		fprintf(stderr, "bench: cannot run node: %s\n", strerror(errno));
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	if (pid < 0) {
		close(in[1]);
		close(out[0]);
		return -1;
	}
	p->pid = pid;
	p->to = in[1];
	p->from = out[0];
	return 0;
}

/* The next answer line (NUL-terminated, valid until the next call), or NULL
 * when the peer has gone or the line does not fit. */
static char *peer_line(struct peer *p)
{
	if (p->used) {
		memmove(p->buf, p->buf + p->used, p->len - p->used);
		p->len -= p->used;
		p->used = 0;
	}
	for (;;) {
		char *nl = memchr(p->buf, '\n', p->len);
		if (nl) {
			*nl = 0;
			p->used = (size_t)(nl - p->buf) + 1;
			return p->buf;
		}
		if (p->len == sizeof p->buf)
			return NULL;
		ssize_t r = read(p->from, p->buf + p->len, sizeof p->buf - p->len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return NULL;
		p->len += (size_t)r;
	}
}

/* Send one command, return the answer's text after "ok " (NULL on failure,
 * with the reason in r's note). */
static char *peer_ask(struct peer *p, struct result *r, const char *cmd)
{
	char line[64];
	int n = snprintf(line, sizeof line, "%s\n", cmd);
	if (write_all(p->to, line, (size_t)n) != 0) {
		note_add(r, "ORT peer gone (%s)", cmd);
		return NULL;
	}
	char *ans = peer_line(p);
	if (!ans || strncmp(ans, "ok ", 3) != 0) {
		note_add(r, "ORT peer failed on '%s': %.200s", cmd, ans ? ans : "no answer");
		return NULL;
	}
	return ans + 3;
}

/* End the peer: ask for its peak RSS, then reap it (a peer that does not
 * answer is terminated).  Returns its peak RSS in MB, or -1. */
static double peer_stop(struct peer *p)
{
	double rss = -1;
	if (p->pid < 0)
		return -1;
	if (write_all(p->to, "quit\n", 5) == 0) {
		/* Answers not read yet (a "ready" when the case failed early)
		 * come first. */
		char *ans;
		while ((ans = peer_line(p)) && strncmp(ans, "rss ", 4) != 0 &&
		       strncmp(ans, "error", 5) != 0)
			;
		if (ans && strncmp(ans, "rss ", 4) == 0)
			rss = strtod(ans + 4, NULL) / 1024.0; /* maxRSS is in KiB */
	}
	close(p->to);
	close(p->from);
	if (rss < 0)
		kill(p->pid, SIGTERM);
	waitpid(p->pid, NULL, 0);
	p->pid = -1;
	return rss;
}

/* ---- one case ------------------------------------------------------------------------------- */

static int scaled(int n, double scale)
{
	double v = floor(n * scale + 0.5);
	return v < 1 ? 1 : (int)v;
}

static int strata_runs(struct rt_ctx *cx, const struct feeds *f, struct rt_tensor *out, int n,
                       double *times, struct result *r)
{
	struct strata_error err;
	for (int i = 0; i < n; i++) {
		double t0 = now_ms();
		if (runtime_run(cx, f->t, out, &err) != 0) {
			note_add(r, "Strata run failed: %s", err.msg);
			return -1;
		}
		if (times)
			times[i] = now_ms() - t0;
	}
	return 0;
}

static int ort_runs(struct peer *p, int n, double *times, struct result *r)
{
	char cmd[32];
	snprintf(cmd, sizeof cmd, "run %d", n);
	char *s = peer_ask(p, r, cmd);
	if (!s)
		return -1;
	for (int i = 0; i < n; i++) {
		char *end;
		times[i] = strtod(s, &end);
		if (end == s) {
			note_add(r, "ORT peer sent %d of %d times", i, n);
			return -1;
		}
		s = end;
	}
	return 0;
}

/* Compare the first cells of Strata's output 0 with the peer's ("ok v0 v1 ..."
 * after warm-up): the two runtimes must compute the same thing on the same
 * inputs for the ratio to mean anything. */
static void check_outputs(const struct rt_tensor *out, const char *ort, struct result *r)
{
	if (out->dtype != BASE_DT_FLOAT)
		return;
	int64_t n = runtime_tensor_count(out);
	double worst = 0;
	for (int64_t i = 0; i < n && i < 8; i++) {
		char *end;
		double want = strtod(ort, &end);
		if (end == ort)
			break;
		ort = end;
		double got = ((const float *)out->data)[i];
		double d = fabs(got - want) / (1e-3 + fabs(want));
		if (!(d <= worst))
			worst = d;
	}
	if (!(worst <= 1e-3))
		note_add(r, "outputs differ from ORT's (relative difference %.2g)", worst);
}

static void run_case(const struct options *o, const struct bench_case *c, struct result *r)
{
	char path[4096], why[400];
	struct strata_error err;
	struct rt_model *m = NULL;
	struct rt_ctx *cx = NULL;
	struct feeds f = { 0 };
	struct rt_tensor out[MAX_INPUTS];
	struct peer *p = &the_peer;
	double *st = NULL, *ot = NULL;
	uint64_t allocs = 0;
	int peer_ok = 0;
	int rounds = c->rounds, k = scaled(c->per_round, o->scale), warm = scaled(c->warmup, o->scale);
	if (k > MAX_PER_ROUND)
		k = MAX_PER_ROUND;
	size_t nt = (size_t)rounds * (size_t)k;

	memset(r, 0, sizeof *r);
	r->flops = -1;
	r->ort_ms = r->ort_rss_mb = -1;
	r->runs = (int)nt;
	p->pid = -1;
	snprintf(path, sizeof path, "%s/%s.onnx", o->models, c->model);
	if (access(path, R_OK) != 0) {
		note_add(r, "%s: %s", path, strerror(errno));
		return;
	}
	/* The peer first, while this process is small (see the file comment). */
	if (o->peer && peer_start(p, o->script, o->peer, path, c->batch, c->seq) != 0)
		note_add(r, "cannot start the ORT peer: %s", strerror(errno));

	if (runtime_model_load(path, &m, &err) != 0) {
		note_add(r, "Strata cannot load the model: %s", err.msg);
		goto done;
	}
	if (make_feeds(m, c->batch, c->seq, &f, why, sizeof why) != 0) {
		note_add(r, "%s", why);
		goto done;
	}
	st = base_alloc(nt * sizeof *st);
	ot = base_alloc(nt * sizeof *ot);
	if (!st || !ot || runtime_ctx_new(m, &cx, &err) != 0) {
		note_add(r, "out of memory");
		goto done;
	}
	if (runtime_model_noutputs(m) > MAX_INPUTS) {
		note_add(r, "more than %d outputs", MAX_INPUTS);
		goto done;
	}

	peer_ok = p->pid > 0;
	if (peer_ok) {
		char *ready = peer_line(p);
		if (!ready || strncmp(ready, "ready ", 6) != 0) {
			note_add(r, "ORT peer did not start: %.200s", ready ? ready : "no answer");
			peer_ok = 0;
		} else {
			char *s = ready + 6, *end;
			double sum = strtod(s, &end);
			sscanf(end, "%23s %23s", r->ort_version, r->node_version);
			if (sum != f.checksum)
				note_add(r, "inputs differ from ORT's (checksum %.17g, ORT %.17g)",
				         f.checksum, sum);
		}
	}

	/* Warm-up: caches, the buffer pool, the peer's first-run allocations. */
	if (strata_runs(cx, &f, out, warm, NULL, r) != 0)
		goto done;
	if (peer_ok) {
		char cmd[32];
		snprintf(cmd, sizeof cmd, "warm %d", warm);
		char *vals = peer_ask(p, r, cmd);
		if (vals)
			check_outputs(&out[0], vals, r);
		else
			peer_ok = 0;
	}

	/* Alternating rounds; the side that goes first alternates too, so
	 * neither always runs right after the other's cache traffic. */
	for (int i = 0; i < rounds; i++) {
		for (int side = 0; side < 2; side++) {
			if ((side ^ (i & 1)) == 0) {
				uint64_t a0 = base_alloc_thread_count();
				if (strata_runs(cx, &f, out, k, st + (size_t)i * k, r) != 0)
					goto done;
				allocs += base_alloc_thread_count() - a0;
			} else if (peer_ok && ort_runs(p, k, ot + (size_t)i * k, r) != 0) {
				peer_ok = 0;
			}
		}
	}
	r->ran = 1;
	r->strata_ms = median(st, nt);
	r->allocs_per_run = (double)allocs / (double)nt;
	if (peer_ok) {
		r->have_ort = 1;
		r->ort_ms = median(ot, nt);
	}
done:
	if (p->pid > 0) {
		r->ort_rss_mb = peer_stop(p);
		if (r->have_ort && r->ort_rss_mb < 0)
			note_add(r, "ORT peer did not report its peak RSS");
	}
	/* Peak RSS now: the FLOP count below loads a second copy of the model. */
	r->strata_rss_mb = peak_rss_mb();
	runtime_ctx_free(cx);
	runtime_model_free(m);
	if (r->ran) {
		r->flops = count_flops(path, &f, why, sizeof why);
		if (r->flops < 0)
			note_add(r, "%s", why);
	}
	feeds_free(&f);
	if (st)
		base_free(st, nt * sizeof *st);
	if (ot)
		base_free(ot, nt * sizeof *ot);
}

/* ---- output ------------------------------------------------------------------------------ */

static int selected(const struct options *o, const char *model)
{
	if (!o->only)
		return 1;
	size_t n = strlen(model);
	for (const char *s = o->only; *s;) {
		const char *e = strchr(s, ',');
		size_t len = e ? (size_t)(e - s) : strlen(s);
		if (len == n && strncmp(s, model, n) == 0)
			return 1;
		s += len + (e != NULL);
	}
	return 0;
}

/* A latency in a column of width w, with more decimals for small values. */
static void put_ms(double ms, int w)
{
	if (ms < 0)
		printf(" %*s", w, "-");
	else
		printf(" %*.*f", w, ms < 1 ? 4 : ms < 100 ? 2 : 1, ms);
}

static void put_num(double v, int w, int prec)
{
	if (v < 0 || !isfinite(v))
		printf(" %*s", w, "-");
	else
		printf(" %*.*f", w, prec, v);
}

/* A JSON number, or null for a missing figure. */
static void json_num(const char *key, double v, int present)
{
	if (present && isfinite(v))
		printf(", \"%s\": %.6g", key, v);
	else
		printf(", \"%s\": null", key);
}

static void cpu_name(char *buf, size_t cap)
{
	snprintf(buf, cap, "unknown CPU");
	FILE *fp = fopen("/proc/cpuinfo", "r");
	if (!fp)
		return;
	char line[512];
	while (fgets(line, sizeof line, fp)) {
		char *c = strchr(line, ':');
		if (strncmp(line, "model name", 10) == 0 && c) {
			c += 1 + strspn(c + 1, " \t");
			c[strcspn(c, "\n")] = 0;
			snprintf(buf, cap, "%s", c);
			break;
		}
	}
	fclose(fp);
}

static void print_report(const int *idx, const struct result *res, int n,
                         int peer_usable)
{
	const char *ortv = NULL, *nodev = NULL;
	for (int i = 0; i < n; i++)
		if (res[i].have_ort) {
			ortv = res[i].ort_version;
			nodev = res[i].node_version;
			break;
		}
	char cpu[256];
	cpu_name(cpu, sizeof cpu);
	printf("\n");
	if (!peer_usable)
		printf("peer not found: ORT figures skipped\n");
	if (ortv)
		printf("Strata's runtime vs ONNX Runtime %s (onnxruntime-node, Node %s), one thread each, on %s (%ld cores online)\n"
		       "latencies: medians over rounds that alternate K Strata runs and K ORT runs (runs: timed runs per side)\n\n",
		       ortv, nodev, cpu, sysconf(_SC_NPROCESSORS_ONLN));
	else
		printf("Strata's runtime, one thread, on %s (%ld cores online)\n"
		       "latencies: medians of the timed runs\n\n", cpu, sysconf(_SC_NPROCESSORS_ONLN));
	printf("%-27s %5s %4s %6s %10s %10s %7s %8s %9s %7s %10s\n", "model", "batch", "seq", "runs",
	       "strata ms", "ort ms", "ratio", "GFLOP/s", "strata MB", "ort MB", "allocs/run");
	for (int i = 0; i < n; i++) {
		const struct bench_case *c = &cases[idx[i]];
		const struct result *r = &res[i];
		char seq[16] = "-";
		if (c->seq)
			snprintf(seq, sizeof seq, "%d", c->seq);
		printf("%-27s %5d %4s %6d", c->model, c->batch, seq, r->ran ? r->runs : 0);
		put_ms(r->ran ? r->strata_ms : -1, 10);
		put_ms(r->have_ort ? r->ort_ms : -1, 10);
		put_num(r->ran && r->have_ort ? r->strata_ms / r->ort_ms : -1, 7, 3);
		put_num(r->ran && r->flops >= 0 ? r->flops / (r->strata_ms * 1e6) : -1, 8, 1);
		put_num(r->ran ? r->strata_rss_mb : -1, 9, 1);
		put_num(r->ort_rss_mb, 7, 1);
		put_num(r->ran ? r->allocs_per_run : -1, 10, 1);
		printf("\n");
	}
	int notes = 0;
	for (int i = 0; i < n; i++) {
		if (!res[i].note[0])
			continue;
		if (!notes++)
			printf("\nnotes:\n");
		const struct bench_case *c = &cases[idx[i]];
		printf("  %s batch %d", c->model, c->batch);
		if (c->seq)
			printf(" seq %d", c->seq);
		printf(": %s\n", res[i].note);
	}
	printf("\nratio = Strata ms / ORT ms (below 1: Strata is faster).  GFLOP/s = 2 x the multiply-adds of the\n"
	       "MatMul, Gemm and Conv nodes (shapes inferred at load) / Strata's median.  MB = peak RSS of the\n"
	       "process that ran only that model.  allocs/run = Strata heap allocations per timed run.\n\n");
	for (int i = 0; i < n; i++) {
		const struct bench_case *c = &cases[idx[i]];
		const struct result *r = &res[i];
		printf("{\"model\": \"%s\", \"batch\": %d", c->model, c->batch);
		if (c->seq)
			printf(", \"seq\": %d", c->seq);
		else
			printf(", \"seq\": null");
		json_num("strata_ms", r->strata_ms, r->ran);
		json_num("ort_ms", r->ort_ms, r->have_ort);
		json_num("ratio", r->ran && r->have_ort ? r->strata_ms / r->ort_ms : 0, r->ran && r->have_ort);
		json_num("gflops", r->ran && r->flops >= 0 ? r->flops / (r->strata_ms * 1e6) : 0,
		         r->ran && r->flops >= 0);
		json_num("strata_rss_mb", r->strata_rss_mb, r->ran && r->strata_rss_mb >= 0);
		json_num("ort_rss_mb", r->ort_rss_mb, r->have_ort && r->ort_rss_mb >= 0);
		json_num("allocs_per_run", r->allocs_per_run, r->ran);
		printf("}\n");
	}
}

/* ---- session creation -------------------------------------------------------------------
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
 * each is checked the same way against its .onnx. */
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

/* Part 1 for one model (see the section comment). */
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
	lr->onnx_ms = median(tm[0], (size_t)rounds);
	lr->ctx_ms = median(tm[1], (size_t)rounds);
	if (ort_ok) {
		lr->have_ort = 1;
		lr->ort_ms = median(tm[2], (size_t)rounds);
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
	static const char *const word[] = { "met", "NOT MET", "not measured" };
	int k = !measured ? 2 : met ? 0 : 1;
	tally[k]++;
	printf("  %-13s %s: %s (goal: %s)\n", word[k], what, measured ? value : "no figure", target);
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
static int run_loads(const struct options *o)
{
	static struct load_result lr[NCASES];
	struct shared_result sr;
	int n = 0, rounds = load_rounds(o->scale), status = 0;
	for (size_t c = 0; c < NCASES; c++) {
		int seen = 0;
		for (int i = 0; i < n; i++)
			seen |= strcmp(lr[i].model, cases[c].model) == 0;
		if (seen || !selected(o, cases[c].model))
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

/* ---- main -------------------------------------------------------------------------------- */

static void usage(void)
{
	fprintf(stderr, "usage: bench [--peer DIR] [--script FILE] [--scale F] [--only NAME,...]\n"
	                "             [--ctx-dir DIR] [--no-loads | --loads-only] MODELDIR\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct options o = { .script = "bench/ort_peer.js", .scale = 1, .ctxdir = "build/bench-ctx" };
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--peer") == 0 && i + 1 < argc)
			o.peer = argv[++i];
		else if (strcmp(argv[i], "--script") == 0 && i + 1 < argc)
			o.script = argv[++i];
		else if (strcmp(argv[i], "--scale") == 0 && i + 1 < argc)
			o.scale = atof(argv[++i]);
		else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
			o.only = argv[++i];
		else if (strcmp(argv[i], "--ctx-dir") == 0 && i + 1 < argc)
			o.ctxdir = argv[++i];
		else if (strcmp(argv[i], "--no-loads") == 0)
			o.loads = LOADS_SKIP;
		else if (strcmp(argv[i], "--loads-only") == 0)
			o.loads = LOADS_ONLY;
		else if (argv[i][0] == '-' || o.models)
			usage();
		else
			o.models = argv[i];
	}
	if (!o.models || !(o.scale > 0))
		usage();

	/* The peer is usable when its packages are installed and the driver
	 * script is there; anything else is reported per case. */
	if (o.peer) {
		char probe[4096];
		snprintf(probe, sizeof probe, "%s/node_modules/onnxruntime-node", o.peer);
		if (access(probe, R_OK) != 0 || access(o.script, R_OK) != 0)
			o.peer = NULL;
	}
	signal(SIGPIPE, SIG_IGN); /* a peer that dies shows up as a failed write */

	int idx[NCASES], n = 0;
	struct result res[NCASES];
	for (size_t i = 0; i < NCASES; i++)
		if (selected(&o, cases[i].model))
			idx[n++] = (int)i;
	if (n == 0) {
		fprintf(stderr, "bench: no case selected by --only %s\n", o.only);
		return 2;
	}
	for (int i = 0; i < n && o.loads != LOADS_ONLY; i++) {
		const struct bench_case *c = &cases[idx[i]];
		struct result *r = &res[i];
		fprintf(stderr, "bench: [%d/%d] %s batch %d", i + 1, n, c->model, c->batch);
		if (c->seq)
			fprintf(stderr, " seq %d", c->seq);
		fprintf(stderr, " ...");
		double t0 = now_ms();
		int fd[2];
		fflush(stdout);
		fflush(stderr);
		if (pipe(fd) != 0) {
			perror("bench: pipe");
			return 1;
		}
		pid_t pid = fork();
		if (pid == 0) {
			close(fd[0]);
			run_case(&o, c, r);
			write_all(fd[1], r, sizeof *r);
			_exit(0);
		}
		close(fd[1]);
		int status = 0;
		size_t got = pid > 0 ? read_all(fd[0], r, sizeof *r) : 0;
		close(fd[0]);
		if (pid > 0)
			waitpid(pid, &status, 0);
		if (got != sizeof *r) {
			memset(r, 0, sizeof *r);
			r->strata_rss_mb = r->ort_rss_mb = r->flops = -1;
			if (pid < 0)
				note_add(r, "cannot fork: %s", strerror(errno));
			else if (WIFSIGNALED(status))
				note_add(r, "the case process died of signal %d", WTERMSIG(status));
			else
				note_add(r, "the case process exited with status %d", WEXITSTATUS(status));
		}
		fprintf(stderr, " %.1f s\n", (now_ms() - t0) / 1e3);
	}
	int status = 0;
	if (o.loads != LOADS_ONLY) {
		print_report(idx, res, n, o.peer != NULL);
		for (int i = 0; i < n; i++)
			status |= !res[i].ran;
	}
	if (o.loads != LOADS_SKIP)
		status |= run_loads(&o);
	return status;
}
