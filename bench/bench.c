/*
 * bench.c: Strata's runtime timed against ONNX Runtime, in the same run.
 *
 *     bench [--peer DIR] [--script FILE] [--scale F] [--only NAME,...]
 *           [--ctx-dir DIR] [--no-loads | --loads-only] MODELDIR
 *
 * MODELDIR holds the models the peer's mkmodels.js generates (mlp_ranker,
 * minilm_l6_cross, minilm_l6_cross_decomposed, minilm_l6_embed, and the
 * int8 models that bench/quantize.js makes of two of them; a "_bf16" case
 * is its float model run with bfloat16 weights), or the same
 * graphs written by mkbench where the peer is not set up; DIR is a
 * set-up copy of the peer harness (node_modules and inputs.js), and FILE the
 * ORT driver (default bench/ort_peer.js).  Without a usable peer the Strata
 * figures are printed alone.  --scale multiplies the number of runs (0.1 for
 * a quick look); --only keeps the named models.  After the inference cases
 * comes session creation (loads.c), in the scratch folder given by
 * --ctx-dir (default build/bench-ctx); --no-loads leaves it out,
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
 * process counts the model's FLOPs (see count_flops), for an int8 model
 * measures how far each side's output is from the float model's (see
 * lowp_error), and sends one struct result back through a pipe.  The orchestrator prints a table, then one JSON
 * line per case.  bench.h declares what this file shares with loads.c.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
/* The FLOP count reads the static shapes the loader infers (runtime_int.h);
 * the timed path uses the public API only. */
#include "../runtime/runtime_int.h"

/* ---- the cases ------------------------------------------------------------------
 * Run counts are per side: rounds * per_round timed runs after warmup
 * untimed ones.  They aim at a few seconds per small case and keep the whole
 * table within minutes on one core.  Session creation (loads.c) times the
 * models of this table, each with the sizes of its first case. */
const struct bench_case cases[] = {
	{ "mlp_ranker", 1, 0, 10, 2000, 200 },
	{ "mlp_ranker", 1000, 0, 10, 20, 5 },
	{ "minilm_l6_cross", 1, 128, 6, 10, 3 },
	{ "minilm_l6_cross", 16, 128, 5, 2, 1 },
	{ "minilm_l6_cross_decomposed", 1, 128, 6, 10, 3 },
	{ "minilm_l6_cross_decomposed", 16, 128, 5, 2, 1 },
	{ "minilm_l6_embed", 1, 128, 6, 10, 3 },
	{ "minilm_l6_embed", 16, 128, 5, 2, 1 },
	{ "minilm_l6_cross_int8", 1, 128, 6, 10, 3 },
	{ "minilm_l6_cross_int8", 16, 128, 5, 2, 1 },
	{ "minilm_l6_embed_int8", 1, 128, 6, 10, 3 },
	{ "minilm_l6_embed_int8", 16, 128, 5, 2, 1 },
	{ "minilm_l6_cross_bf16", 1, 128, 6, 10, 3 },
	{ "minilm_l6_cross_bf16", 16, 128, 5, 2, 1 },
};
_Static_assert(sizeof cases / sizeof cases[0] == NCASES, "NCASES in bench.h counts the cases");

/* What a case process sends back: a fixed-size record, written in one
 * write() (smaller than PIPE_BUF). */
struct result {
	int ran;               /* 1: the Strata side produced figures */
	int have_ort;          /* 1: so did the peer */
	int runs;              /* timed runs per side */
	double strata_ms, ort_ms;
	double strata_cpu_ms, ort_cpu_ms; /* CPU time per run (median); < 0 when unknown */
	double peak_gflops;    /* the FMA roof measured in the rounds (peak.c), median */
	double flops;          /* per run, < 0 when unknown */
	double strata_rss_mb, ort_rss_mb;
	double allocs_per_run;
	char ort_version[24], node_version[24];
	char note[400];        /* why a figure is missing, or a warning */
	int skipped;           /* 1: an int8 model that was not made (no quantizer) */
	/* int8 models: the largest |int8 - fp32| over output 0 of each side,
	 * the fp32 model's output run by Strata; fp32_max its largest |cell| */
	int have_err;
	int bf16;              /* a bf16 case (weights as bfloat16) */
	double err_strata, err_ort, fp32_max;
	/* int8 models: the operations of their int8 layers per run (2 per
	 * multiply-add of the MatMulInteger nodes), the int8 roof measured
	 * after the rounds (peak.c; < 0 without VNNI), and from profiled runs
	 * (runtime_ctx_profile) the share of Strata's time in the int8 layers
	 * and the costliest other operator types */
	double int8_flops, vnni_gops, int8_share;
	char others[160];
};

#define SEED 7 /* ort_bench.js's default seed, also ort_peer.js's */
/* The peer answers a round in one line of times: this many fit its buffer. */
#define MAX_PER_ROUND 10000

/* ---- small helpers ---------------------------------------------------------------- */

double now_ms(void)
{
	return base_now() * 1e3;
}

/* Append to a note of cap bytes, "; " between items. */
void note_vadd(char *note, size_t cap, const char *fmt, va_list ap)
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

int write_all(int fd, const void *buf, size_t n)
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

size_t read_all(int fd, void *buf, size_t n)
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

void feeds_free(struct feeds *f)
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
int make_feeds(const struct rt_model *m, int batch, int seq, struct feeds *f,
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
 * loaded again with graph optimizations disabled, and every MatMul,
 * MatMulInteger (an int8 model's: its multiply-adds count like float ones),
 * Gemm and Conv node contributes 2 flops (a multiply and an add) per multiply-add, its
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
	int matmul = strcmp(n->op, "MatMul") == 0 || strcmp(n->op, "MatMulInteger") == 0;
	int gemm = strcmp(n->op, "Gemm") == 0;
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
static double count_flops(const char *path, const struct feeds *in, double *int8_flops,
                          char *why, size_t cap)
{
	double int8_macs = 0;
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
		if (strcmp(m->g.nodes[i].op, "MatMulInteger") == 0)
			int8_macs += x;
	}
done:
	runtime_model_free(m);
	runtime_options_free(o);
	*int8_flops = macs < 0 ? -1 : 2 * int8_macs;
	return macs < 0 ? -1 : 2 * macs;
}

/* ---- the peer process -----------------------------------------------------------------
 * One node process per case, one line per command and per answer. */
struct peer {
	pid_t pid;
	int to, from;          /* its stdin and stdout */
	size_t len, used;      /* bytes in buf; bytes of the last line handed out */
	char buf[1 << 19];     /* holds the longest answer: per_round times and CPU times */
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

int scaled(int n, double scale)
{
	double v = floor(n * scale + 0.5);
	return v < 1 ? 1 : (int)v;
}

/* n runs; times (wall) and cpu (this thread's CPU time), in ms, may be NULL. */
static int strata_runs(struct rt_ctx *cx, const struct feeds *f, struct rt_tensor *out, int n,
                       double *times, double *cpu, struct result *r)
{
	struct strata_error err;
	for (int i = 0; i < n; i++) {
		double c0 = bench_cpu_ms(), t0 = now_ms();
		if (runtime_run(cx, f->t, out, &err) != 0) {
			note_add(r, "Strata run failed: %s", err.msg);
			return -1;
		}
		if (times)
			times[i] = now_ms() - t0;
		if (cpu)
			cpu[i] = bench_cpu_ms() - c0;
	}
	return 0;
}

/* An int8 layer of the optimized graph: the runtime's fused QuantLinear
 * (a quantized MatMul with its quantization and scaling) or a plain
 * MatMulInteger. */
static int int8_layer(const char *op)
{
	return strcmp(op, "QuantLinear") == 0 || strcmp(op, "MatMulInteger") == 0 ||
	       strcmp(op, "QLinearMatMul") == 0;
}

/* After the timed rounds of an int8 case: n profiled runs give the share
 * of the time in the int8 layers and the three costliest other types
 * (r->int8_share, r->others); then the int8 roof, median of three. */
static int int8_profile(struct rt_ctx *cx, const struct feeds *f, struct rt_tensor *out, int n,
                        struct result *r)
{
	struct strata_error err;
	if (runtime_ctx_profile(cx, 1, &err) != 0) {
		note_add(r, "%s", err.msg);
		return -1;
	}
	if (strata_runs(cx, f, out, n, NULL, NULL, r) != 0)
		return -1;
	int nrows;
	const struct rt_op_time *rows = runtime_ctx_profile_rows(cx, &nrows);
	double all = 0, int8 = 0;
	int top[3] = { -1, -1, -1 };
	for (int i = 0; i < nrows; i++) {
		all += rows[i].seconds;
		if (int8_layer(rows[i].op)) {
			int8 += rows[i].seconds;
			continue;
		}
		for (int j = 0; j < 3; j++) /* insert into the top three */
			if (top[j] < 0 || rows[i].seconds > rows[top[j]].seconds) {
				for (int k = 2; k > j; k--)
					top[k] = top[k - 1];
				top[j] = i;
				break;
			}
	}
	r->int8_share = all > 0 ? int8 / all : -1;
	size_t len = 0;
	for (int j = 0; j < 3 && top[j] >= 0 && all > 0; j++)
		len += (size_t)snprintf(r->others + len, len < sizeof r->others ? sizeof r->others - len : 0,
		                        "%s%s %.0f%%", j ? ", " : "", rows[top[j]].op,
		                        100 * rows[top[j]].seconds / all);
	runtime_ctx_profile(cx, 0, &err);
	double v[3];
	for (int i = 0; i < 3; i++)
		v[i] = bench_vnni_peak();
	r->vnni_gops = bench_median(v, 3);
	return 0;
}

/* n runs of the peer: its wall times, then (after "cpu") its CPU times;
 * *have_cpu is cleared when a peer does not send the latter. */
static int ort_runs(struct peer *p, int n, double *times, double *cpu, int *have_cpu,
                    struct result *r)
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
	s += strspn(s, " ");
	if (strncmp(s, "cpu", 3) != 0) {
		*have_cpu = 0;
		return 0;
	}
	s += 3;
	for (int i = 0; i < n; i++) {
		char *end;
		cpu[i] = strtod(s, &end);
		if (end == s) {
			*have_cpu = 0;
			return 0;
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

/* ---- int8 models -----------------------------------------------------------------------
 * An int8 case's model is bench/quantize.js's quantization of the float
 * model of the same name without "_int8" (ONNX Runtime's quantize_dynamic
 * rules).  The two runtimes need not agree to the last bit on it (their
 * activations round through uint8 at slightly different points), so instead
 * of comparing them with each other, each side's output 0 is compared with
 * the float model's, which Strata runs on the same inputs after the timed
 * part: the largest absolute difference of each.  ORT's is its own int8
 * path's error, the scale Strata's is judged against. */
static int is_int8(const char *model)
{
	size_t n = strlen(model);
	return n > 5 && strcmp(model + n - 5, "_int8") == 0;
}

/* ---- bfloat16 weights ------------------------------------------------------------------
 * A "_bf16" case is the float model of the name without the suffix, run by
 * Strata with session.bf16_weights (the weights packed as bfloat16 and
 * multiplied with AVX512-BF16) against ORT in float: what the option buys,
 * and (as for int8) how far each side's output 0 lies from Strata's float
 * output.  Not measured where the CPU lacks AVX512-BF16, and not a speed
 * goal: the two sides do not compute the same thing. */
int bench_is_bf16(const char *model)
{
	size_t n = strlen(model);
	return n > 5 && strcmp(model + n - 5, "_bf16") == 0;
}

/* Compared with the float model's output, not with ORT's. */
static int is_lowp(const char *model)
{
	return is_int8(model) || bench_is_bf16(model);
}

/* Every cell of ORT's output 0 (n of them) into dst; -1 when the peer fails
 * or sends another count. */
static int peer_output(struct peer *p, struct result *r, int64_t n, float *dst)
{
	char *s = peer_ask(p, r, "out");
	if (!s)
		return -1;
	for (int64_t i = 0; i < n; i++) {
		char *end;
		dst[i] = strtof(s, &end);
		if (end == s) {
			note_add(r, "ORT sent %lld of %lld output cells", (long long)i, (long long)n);
			return -1;
		}
		s = end;
	}
	return 0;
}

/* Run the float model fp on f and fill r's errors from the two low-precision
 * outputs (int8 or bf16; n cells each; ort may be NULL). */
static void lowp_error(const char *fp, const struct feeds *f, const float *strata,
                       const float *ort, int64_t n, struct result *r)
{
	struct strata_error err;
	struct rt_model *m = NULL;
	struct rt_ctx *cx = NULL;
	struct rt_tensor out[MAX_INPUTS];
	if (runtime_model_load(fp, &m, &err) != 0 || runtime_ctx_new(m, &cx, &err) != 0 ||
	    runtime_run(cx, f->t, out, &err) != 0) {
		note_add(r, "int8 error not measured: %s: %.200s", fp, err.msg);
	} else if (out[0].dtype != BASE_DT_FLOAT || runtime_tensor_count(&out[0]) != n) {
		note_add(r, "int8 error not measured: %s's output 0 differs in type or size", fp);
	} else {
		const float *ref = out[0].data;
		r->have_err = 1;
		r->err_ort = ort ? 0 : -1;
		for (int64_t i = 0; i < n; i++) {
			r->fp32_max = fmax(r->fp32_max, fabs(ref[i]));
			r->err_strata = fmax(r->err_strata, fabs((double)strata[i] - ref[i]));
			if (ort)
				r->err_ort = fmax(r->err_ort, fabs((double)ort[i] - ref[i]));
		}
		/* int8: the same quantization on both sides, so Strata's error may
		 * exceed ORT's by chance, by a little (a bf16 case's ORT runs float) */
		if (!r->bf16 && ort && !(r->err_strata <= 1.5 * r->err_ort + 1e-6))
			note_add(r, "Strata's int8 output is farther from fp32 (%.3g) than 1.5x ORT's (%.3g)",
			         r->err_strata, r->err_ort);
	}
	runtime_ctx_free(cx);
	runtime_model_free(m);
}

/* Load path, with session.bf16_weights when bf16. */
static int load_model(const char *path, int bf16, struct rt_model **m, struct strata_error *err)
{
	if (!bf16)
		return runtime_model_load(path, m, err);
	struct rt_options *o;
	int rc = runtime_options_new(&o, err);
	if (rc == 0 && (rc = runtime_options_set(o, "session.bf16_weights", "1", err)) == 0)
		rc = runtime_model_load_opts(path, o, m, err);
	runtime_options_free(o);
	return rc;
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
	double *st = NULL, *ot = NULL, *sc = NULL, *oc = NULL, peaks[64];
	uint64_t allocs = 0;
	int peer_ok = 0, ort_cpu = 1;
	float *qs = NULL, *qo = NULL; /* int8 models: each side's output 0 */
	int64_t nq = 0;
	int rounds = c->rounds, k = scaled(c->per_round, o->scale), warm = scaled(c->warmup, o->scale);
	if (k > MAX_PER_ROUND)
		k = MAX_PER_ROUND;
	size_t nt = (size_t)rounds * (size_t)k;

	memset(r, 0, sizeof *r);
	r->flops = r->int8_flops = r->vnni_gops = r->int8_share = -1;
	r->ort_ms = r->ort_rss_mb = -1;
	r->strata_cpu_ms = r->ort_cpu_ms = r->peak_gflops = -1;
	r->runs = (int)nt;
	p->pid = -1;
	snprintf(path, sizeof path, "%s/%.*s.onnx", o->models,
	         (int)strlen(c->model) - (bench_is_bf16(c->model) ? 5 : 0), c->model);
	r->bf16 = bench_is_bf16(c->model);
	if (r->bf16 && !rt_cpu_bf16()) {
		r->skipped = 1;
		note_add(r, "not measured: this CPU has no AVX512-BF16");
		return;
	}
	if (access(path, R_OK) != 0 && is_int8(c->model) && errno == ENOENT) {
		r->skipped = 1;
		note_add(r, "not measured: no %s (bench/quantize.js makes it, with the peer)", path);
		return;
	}
	if (access(path, R_OK) != 0) {
		note_add(r, "%s: %s", path, strerror(errno));
		return;
	}
	/* The peer first, while this process is small (see the file comment). */
	if (o->peer && peer_start(p, o->script, o->peer, path, c->batch, c->seq) != 0)
		note_add(r, "cannot start the ORT peer: %s", strerror(errno));

	if (load_model(path, r->bf16, &m, &err) != 0) {
		note_add(r, "Strata cannot load the model: %s", err.msg);
		goto done;
	}
	if (make_feeds(m, c->batch, c->seq, &f, why, sizeof why) != 0) {
		note_add(r, "%s", why);
		goto done;
	}
	st = base_alloc(nt * sizeof *st);
	ot = base_alloc(nt * sizeof *ot);
	sc = base_alloc(nt * sizeof *sc);
	oc = base_alloc(nt * sizeof *oc);
	if (!st || !ot || !sc || !oc || runtime_ctx_new(m, &cx, &err) != 0) {
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
	if (strata_runs(cx, &f, out, warm, NULL, NULL, r) != 0)
		goto done;
	if (peer_ok) {
		char cmd[32];
		snprintf(cmd, sizeof cmd, "warm %d", warm);
		char *vals = peer_ask(p, r, cmd);
		if (!vals)
			peer_ok = 0;
		else if (!is_lowp(c->model)) /* int8, bf16: see lowp_error */
			check_outputs(&out[0], vals, r);
	}

	/* Alternating rounds; the side that goes first alternates too, so
	 * neither always runs right after the other's cache traffic.  Each
	 * round also measures the FMA roof, under the load the runs saw. */
	for (int i = 0; i < rounds; i++) {
		for (int side = 0; side < 2; side++) {
			if ((side ^ (i & 1)) == 0) {
				uint64_t a0 = base_alloc_thread_count();
				if (strata_runs(cx, &f, out, k, st + (size_t)i * k,
				                sc + (size_t)i * k, r) != 0)
					goto done;
				allocs += base_alloc_thread_count() - a0;
			} else if (peer_ok && ort_runs(p, k, ot + (size_t)i * k, oc + (size_t)i * k,
			                               &ort_cpu, r) != 0) {
				peer_ok = 0;
			}
		}
		if (i < (int)(sizeof peaks / sizeof peaks[0]))
			peaks[i] = bench_fma_peak();
	}
	if (is_int8(c->model) && int8_profile(cx, &f, out, k, r) != 0)
		goto done;
	r->ran = 1;
	r->strata_ms = bench_median(st, nt);
	r->strata_cpu_ms = bench_median(sc, nt);
	r->peak_gflops = bench_median(peaks, rounds < 64 ? (size_t)rounds : 64);
	r->allocs_per_run = (double)allocs / (double)nt;
	if (peer_ok) {
		r->have_ort = 1;
		r->ort_ms = bench_median(ot, nt);
		if (ort_cpu)
			r->ort_cpu_ms = bench_median(oc, nt);
	}
	if (is_lowp(c->model) && out[0].dtype == BASE_DT_FLOAT) {
		nq = runtime_tensor_count(&out[0]);
		qs = base_alloc((size_t)nq * sizeof *qs);
		qo = base_alloc((size_t)nq * sizeof *qo);
		if (!qs || !qo) {
			note_add(r, "out of memory");
			goto done;
		}
		memcpy(qs, out[0].data, (size_t)nq * sizeof *qs);
		if (!peer_ok || peer_output(p, r, nq, qo) != 0) {
			base_free(qo, (size_t)nq * sizeof *qo);
			qo = NULL;
		}
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
		r->flops = count_flops(path, &f, &r->int8_flops, why, sizeof why);
		if (r->flops < 0)
			note_add(r, "%s", why);
	}
	if (qs) {
		/* the float model: the int8 one's name without "_int8"; a bf16
		 * case's file is its own */
		char fp[4096];
		snprintf(fp, sizeof fp, "%.*s.onnx", (int)(strlen(path) - strlen("_int8.onnx")), path);
		lowp_error(is_int8(c->model) ? fp : path, &f, qs, qo, nq, r);
	}
	if (qs)
		base_free(qs, (size_t)nq * sizeof *qs);
	if (qo)
		base_free(qo, (size_t)nq * sizeof *qo);
	feeds_free(&f);
	if (st)
		base_free(st, nt * sizeof *st);
	if (ot)
		base_free(ot, nt * sizeof *ot);
	if (sc)
		base_free(sc, nt * sizeof *sc);
	if (oc)
		base_free(oc, nt * sizeof *oc);
}

/* ---- output ------------------------------------------------------------------------------ */

int selected(const struct options *o, const char *model)
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
void put_ms(double ms, int w)
{
	if (ms < 0)
		printf(" %*s", w, "-");
	else
		printf(" %*.*f", w, ms < 1 ? 4 : ms < 100 ? 2 : 1, ms);
}

void put_num(double v, int w, int prec)
{
	if (v < 0 || !isfinite(v))
		printf(" %*s", w, "-");
	else
		printf(" %*.*f", w, prec, v);
}

/* A JSON number, or null for a missing figure. */
void json_num(const char *key, double v, int present)
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

/* Strata's CPU time over ORT's, or -1 when either is missing. */
static double cpu_ratio(const struct result *r)
{
	if (!r->ran || !r->have_ort || r->strata_cpu_ms <= 0 || r->ort_cpu_ms <= 0)
		return -1;
	return r->strata_cpu_ms / r->ort_cpu_ms;
}

/* The model's FLOPs per CPU second of Strata as a percentage of the FMA
 * roof measured beside them, or -1. */
static double peak_pct(const struct result *r)
{
	if (!r->ran || r->flops < 0 || r->strata_cpu_ms <= 0 || r->peak_gflops <= 0)
		return -1;
	return 100 * r->flops / (r->strata_cpu_ms * 1e6) / r->peak_gflops;
}

/* ---- the speed goals ------------------------------------------------------------
 * MiniLM (every case) and mlp_ranker at batch 1000 in at most 0.80 of ORT's
 * time and, for the float models, at 80% of the FMA peak or more.  Where
 * the int8 and bfloat16 products run on AMX tiles (rt_cpu_amx): the int8
 * MiniLM in at most 0.50 of ORT's int8 time, and MiniLM with
 * session.bf16_weights=1 in at most 0.40 of ORT's float time with its
 * output within 0.01 of the float model's; without AMX those two say why
 * they were not measured.  Beside a missed ratio, the figure that bounds
 * it, from this run: for a float model the share of the peak ORT itself
 * reaches (0.80 of its time needs that share over 0.80); for an int8 model
 * where the int8 layers stand against the int8 roof, what the run would
 * take with them at it, and the share of the roof they would need for the
 * goal with the rest as measured. */
static int goal_case(const struct bench_case *c)
{
	return strncmp(c->model, "minilm", 6) == 0 ||
	       (strcmp(c->model, "mlp_ranker") == 0 && c->batch == 1000);
}

/* The ratio a case must reach; 0 when its goal needs AMX and there is none. */
static double goal_limit(const struct bench_case *c)
{
	if (bench_is_bf16(c->model))
		return rt_cpu_amx() ? 0.40 : 0;
	if (is_int8(c->model))
		return rt_cpu_amx() ? 0.50 : 0.80;
	return 0.80;
}

/* Why AMX is not in use here. */
static const char *no_amx_reason(void)
{
	if (!rt_cpu_amx_usable())
		return "this CPU has no AMX, or Linux did not grant its tile state";
	return "STRATA_CPU holds the kernels to AVX-512 registers";
}

static void print_goals(const int *idx, const struct result *res, int n)
{
	int tally[3] = { 0, 0, 0 };
	char line[768];
	printf("\nspeed goals (ratio: Strata's median time over ORT's; the limit beside a miss is\n"
	       "measured in this run):\n");
	for (int i = 0; i < n; i++) {
		const struct bench_case *c = &cases[idx[i]];
		const struct result *r = &res[i];
		if (!goal_case(c) || r->skipped)
			continue;
		char name[64];
		snprintf(name, sizeof name, "%s b%d%s", c->model, c->batch, c->seq ? " s128" : "");
		int have = r->ran && r->have_ort;
		double ratio = have ? r->strata_ms / r->ort_ms : -1, lim = goal_limit(c);
		if (lim == 0 || (is_int8(c->model) && !rt_cpu_amx())) {
			snprintf(line, sizeof line, "%s: the AMX goal (at most %.2f of ORT's %s time) "
			         "skipped: %s", name, r->bf16 ? 0.40 : 0.50, r->bf16 ? "float" : "int8",
			         no_amx_reason());
			bench_goal(tally, 0, 0, line);
			if (lim == 0)
				continue;
		}
		int len = snprintf(line, sizeof line, "%s: %.3f of ORT's %stime (goal: at most %.2f)",
		                   name, ratio, r->bf16 ? "float " : is_int8(c->model) ? "int8 " : "",
		                   lim);
		if (r->bf16) {
			bench_goal(tally, have, ratio <= lim, line);
			snprintf(line, sizeof line,
			         "%s: output within %.3g of the float model's (goal: at most 0.01)", name,
			         r->err_strata);
			bench_goal(tally, r->ran && r->err_strata >= 0, r->err_strata <= 0.01, line);
			continue;
		}
		if (have && ratio > lim && !is_int8(c->model) && r->flops > 0 && r->peak_gflops > 0) {
			double ort = r->ort_cpu_ms > 0 ? r->ort_cpu_ms : r->ort_ms;
			double pct = 100 * r->flops / (ort * 1e6) / r->peak_gflops;
			snprintf(line + len, sizeof line - (size_t)len,
			         "; ORT runs at %.1f%% of the FMA peak, so 0.80 of its time needs %.1f%%",
			         pct, pct / 0.80);
		} else if (have && ratio > lim && is_int8(c->model) && r->int8_share > 0 &&
		           r->int8_flops > 0) {
			double ms = r->int8_share * r->strata_ms;
			double gops = r->int8_flops / (ms * 1e6);
			len += snprintf(line + len, sizeof line - (size_t)len,
			                "; the int8 layers take %.0f%% of the run at %.0f GOPS", 100 * r->int8_share,
			                gops);
			if (r->vnni_gops > 0) {
				double at_roof = r->strata_ms - ms + r->int8_flops / (r->vnni_gops * 1e6);
				len += snprintf(line + len, sizeof line - (size_t)len,
				                ", %.0f%% of the vpdpbusd roof (%.0f GOPS): at the roof the run "
				                "would take %.2f of ORT's time",
				                100 * gops / r->vnni_gops, r->vnni_gops, at_roof / r->ort_ms);
				/* what the int8 layers must reach for the goal, the rest as measured */
				double budget = lim * r->ort_ms - (r->strata_ms - ms);
				if (budget > 0)
					len += snprintf(line + len, sizeof line - (size_t)len,
					                "; %.2f needs them at %.0f%% of the roof", lim,
					                100 * r->int8_flops / (budget * 1e6) / r->vnni_gops);
			}
			if (r->others[0])
				snprintf(line + len, sizeof line - (size_t)len, "; the rest: %s", r->others);
		}
		bench_goal(tally, have, ratio <= lim, line);
		if (is_int8(c->model))
			continue;
		double pct = peak_pct(r);
		snprintf(line, sizeof line, "%s: %.1f%% of the FMA peak (goal: at least 80%%)", name, pct);
		bench_goal(tally, pct >= 0, pct >= 80, line);
	}
	printf("speed goals: %d met, %d not met, %d not measured\n", tally[0], tally[1], tally[2]);
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
	printf("%-27s %5s %4s %6s %10s %10s %7s %10s %10s %7s %8s %6s %6s %9s %7s %10s\n", "model",
	       "batch", "seq", "runs", "strata ms", "ort ms", "ratio", "strata cpu", "ort cpu",
	       "cpu r.", "GFLOP/s", "peak", "%peak", "strata MB", "ort MB", "allocs/run");
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
		put_ms(r->ran ? r->strata_cpu_ms : -1, 10);
		put_ms(r->ort_cpu_ms, 10);
		put_num(cpu_ratio(r), 7, 3);
		put_num(r->ran && r->flops >= 0 ? r->flops / (r->strata_ms * 1e6) : -1, 8, 1);
		put_num(r->ran ? r->peak_gflops : -1, 6, 0);
		put_num(is_lowp(c->model) ? -1 : peak_pct(r), 6, 1); /* int8, bf16: not FMA work */
		put_num(r->ran ? r->strata_rss_mb : -1, 9, 1);
		put_num(r->ort_rss_mb, 7, 1);
		put_num(r->ran ? r->allocs_per_run : -1, 10, 1);
		printf("\n");
	}
	int errs = 0;
	for (int i = 0; i < n; i++) {
		const struct result *r = &res[i];
		if (!r->have_err)
			continue;
		if (!errs++)
			printf("\nint8 and bf16 cases, output 0 against the float model's (largest |low "
			       "precision - fp32|; a bf16 case's ORT side runs in float):\n");
		char ort[32] = "-";
		if (r->err_ort >= 0)
			snprintf(ort, sizeof ort, "%.3g", r->err_ort);
		printf("  %-27s batch %2d: Strata %.3g, ORT %s (the fp32 output's largest |cell|: %.3g)\n",
		       cases[idx[i]].model, cases[idx[i]].batch, r->err_strata, ort, r->fp32_max);
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
	printf("\nratio = Strata ms / ORT ms (below 1: Strata is faster).  cpu = median CPU time per run (Strata's\n"
	       "thread; ORT's whole process), cpu r. their ratio: steadier than wall time on a shared machine.\n"
	       "GFLOP/s = 2 x the multiply-adds of the MatMul, Gemm and Conv nodes (shapes inferred at load) /\n"
	       "Strata's median.  peak = the %s FMA roof of one core (a register-only FMA loop, CPU time,\n"
	       "median of one measure per round), %%peak = those FLOPs over Strata's CPU median, as a share of\n"
	       "it (none for int8 models: their multiply-adds are not float FMAs).  MB = peak RSS of the process that ran only that model.  allocs/run = Strata heap\n"
	       "allocations per timed run.\n\n", runtime_isa());
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
		json_num("strata_cpu_ms", r->strata_cpu_ms, r->ran && r->strata_cpu_ms >= 0);
		json_num("ort_cpu_ms", r->ort_cpu_ms, r->have_ort && r->ort_cpu_ms >= 0);
		json_num("cpu_ratio", cpu_ratio(r), cpu_ratio(r) >= 0);
		json_num("gflops", r->ran && r->flops >= 0 ? r->flops / (r->strata_ms * 1e6) : 0,
		         r->ran && r->flops >= 0);
		json_num("peak_gflops", r->peak_gflops, r->ran && r->peak_gflops > 0);
		json_num("peak_fraction", peak_pct(r) / 100, peak_pct(r) >= 0 && !is_lowp(c->model));
		json_num("strata_rss_mb", r->strata_rss_mb, r->ran && r->strata_rss_mb >= 0);
		json_num("ort_rss_mb", r->ort_rss_mb, r->have_ort && r->ort_rss_mb >= 0);
		json_num("allocs_per_run", r->allocs_per_run, r->ran);
		if (r->int8_share > 0 && r->int8_flops > 0) {
			json_num("int8_share", r->int8_share, 1);
			json_num("int8_gops", r->int8_flops / (r->int8_share * r->strata_ms * 1e6), 1);
			json_num("vnni_peak_gops", r->vnni_gops, r->vnni_gops > 0);
		}
		if (r->have_err) {
			json_num(r->bf16 ? "bf16_err_strata" : "int8_err_strata", r->err_strata, 1);
			json_num(r->bf16 ? "bf16_err_ort" : "int8_err_ort", r->err_ort, r->err_ort >= 0);
		}
		printf("}\n");
	}
	print_goals(idx, res, n);
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
			status |= !res[i].ran && !res[i].skipped;
	}
	if (o.loads != LOADS_SKIP)
		status |= run_loads(&o);
	return status;
}
