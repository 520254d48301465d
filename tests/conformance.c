/*
 * conformance.c: run ONNX backend test cases through Strata's runtime.
 *
 *     conformance [--rtol R] [--atol A] [--verbose] [--expect-pass N] [--check-shapes]
 *                 [--compare-opt] [--via-context] DIR...
 *
 * A case is a folder holding model.onnx and test_data_set_N/ folders of
 * input_K.pb / output_K.pb TensorProtos (the layout of the ONNX test suite
 * under /usr/share/libonnx-testdata/data/node).  DIR is a case or a folder
 * of cases.  Each data set is run in-process and compared the way the ONNX
 * backend tests compare: same output count, element type and shape, then
 * |got - want| <= atol + rtol * |want| for floating types (NaN matches NaN),
 * exact equality for integers, booleans and strings.
 *
 * Inputs and outputs may be sequences or optionals: their data files are
 * then SequenceProto / OptionalProto messages (onnx-data.proto), read here
 * with a small wire-format reader since only a few fields matter.
 *
 * Output: one line per case (pass, fail, error, not_implemented or random,
 * with the reason), a table of counts per operator (the op of the model's
 * first non-Constant node), totals, then one JSON line per DIR argument.
 * A case is "random" when its expected values come from a random number
 * generator and cannot be matched: its model uses RandomUniform,
 * RandomNormal, their Like forms, Bernoulli or Multinomial (never a pass),
 * or it has a Dropout node in training mode and does not pass.  The exit
 * status is 0, 2 when an argument is unusable, 1 when --expect-pass is given
 * and fewer cases pass, 3 when any case crashed (a crash is a bug, whatever
 * the counts).
 *
 * --check-shapes compares every tensor a node produces (and every output of
 * a node folded at load) with the static shape inferred at load; a
 * contradiction fails the case ("static shape" in the reason).
 *
 * --compare-opt also loads each model with session.graph_optimization_level
 * "disabled" and runs every data set through both: the case fails when an
 * output of the optimized run (the default level) moves from the unoptimized
 * one by more than 1e-4 relative, |opt - ref| <= 1e-4 * max(1, |ref|).  The
 * largest such difference is printed with each case ("opt-diff"), and per
 * DIR in the JSON line ("max_opt_diff").
 *
 * --via-context runs every case through a compiled context: the model is
 * loaded with ep.context_enable=1 (the binary embedded in the context
 * model, written to a scratch folder), and the context model is loaded and
 * run in its place.  The counts must equal those of the direct runs: the
 * serialization of every graph, attribute, constant and subgraph is
 * checked on the whole suite.
 *
 * A kernel that crashes would take the runner down; a signal handler turns a
 * crash into an "error ... crashed" line so that the rest of the suite still
 * runs (the crashed case's memory is abandoned).
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx.pb-c.h"
#include "../runtime/runtime_int.h"

enum { PASS, FAIL, ERROR, NOTIMPL, RANDOM, NSTATUS };
static const char *status_name[NSTATUS] = { "pass", "fail", "error", "not_implemented", "random" };

static double rel_tol = 1e-3, abs_tol = 1e-7;
static int verbose;
static int check_shapes;
static int compare_opt;
static char ctx_dir[64]; /* --via-context: the scratch folder, "" when off */
#define OPT_RTOL 1e-4 /* --compare-opt: optimized against unoptimized */

/* A run or load failure that is a static shape contradiction. */
static int shape_mismatch(const char *msg)
{
	return check_shapes && strstr(msg, "static shape") != NULL;
}

struct opcount {
	char op[64];
	int n[NSTATUS];
};
static struct opcount *ops;
static size_t nops, capops;

static void count_op(const char *op, int st)
{
	for (size_t i = 0; i < nops; i++)
		if (strcmp(ops[i].op, op) == 0) {
			ops[i].n[st]++;
			return;
		}
	if (nops == capops) {
		capops = capops ? 2 * capops : 64;
		ops = realloc(ops, capops * sizeof *ops);
		if (!ops) {
			fprintf(stderr, "conformance: out of memory\n");
			exit(2);
		}
	}
	memset(&ops[nops], 0, sizeof ops[nops]);
	snprintf(ops[nops].op, sizeof ops[nops].op, "%s", op);
	ops[nops++].n[st]++;
}

static int is_dir(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static int is_file(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static int is_random_op(const char *t)
{
	static const char *const names[] = { "RandomUniform", "RandomNormal", "RandomUniformLike",
	                                     "RandomNormalLike", "Bernoulli", "Multinomial" };
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (strcmp(t, names[i]) == 0)
			return 1;
	return 0;
}

/* Randomness of a graph and its subgraphs: 2 = a random op, 1 = Dropout in
 * training mode (its training_mode input is given), 0 = none. */
static int graph_random(const Onnx__GraphProto *g, int depth)
{
	int r = 0;
	for (size_t i = 0; g && depth < 16 && i < g->n_node; i++) {
		const Onnx__NodeProto *np = g->node[i];
		const char *t = np->op_type ? np->op_type : "";
		if (is_random_op(t))
			return 2;
		if (strcmp(t, "Dropout") == 0 && np->n_input >= 3 && np->input[2] && *np->input[2])
			r = 1;
		for (size_t a = 0; a < np->n_attribute; a++) {
			int s = graph_random(np->attribute[a]->g, depth + 1);
			if (s > r)
				r = s;
		}
	}
	return r;
}

/* The op of the model's first node that is not a Constant; *random as
 * graph_random(). */
static void model_op(const char *path, char *op, size_t cap, int *random)
{
	snprintf(op, cap, "?");
	*random = 0;
	struct base_map map;
	if (base_map_file(path, &map, NULL) != 0)
		return;
	Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, map.size, map.data);
	base_unmap(&map);
	if (!mp)
		return;
	if (mp->graph) {
		*random = graph_random(mp->graph, 0);
		for (size_t i = 0; i < mp->graph->n_node; i++) {
			const char *t = mp->graph->node[i]->op_type;
			if (t && strcmp(t, "Constant") != 0) {
				snprintf(op, cap, "%s", t);
				break;
			}
			if (t)
				snprintf(op, cap, "%s", t);
		}
	}
	onnx__model_proto__free_unpacked(mp, NULL);
}

/* ---- comparison ------------------------------------------------------------------- */

static int is_floating(int dt)
{
	return dt == BASE_DT_FLOAT || dt == BASE_DT_DOUBLE || dt == BASE_DT_FLOAT16 ||
	       dt == BASE_DT_BFLOAT16;
}

static void shape_str(const struct rt_tensor *t, char *s, size_t cap)
{
	size_t k = (size_t)snprintf(s, cap, "%s [", base_dtype_name(t->dtype));
	for (int d = 0; d < t->rank && k < cap; d++)
		k += (size_t)snprintf(s + k, cap - k, "%s%lld", d ? "," : "", (long long)t->dims[d]);
	if (k < cap)
		snprintf(s + k, cap - k, "]");
}

/* 0 when got matches want; else fills why. */
static int compare(const struct rt_tensor *got, const struct rt_tensor *want, char *why,
                   size_t cap)
{
	char gs[160], ws[160];
	shape_str(got, gs, sizeof gs);
	shape_str(want, ws, sizeof ws);
	if (got->dtype != want->dtype || got->rank != want->rank) {
		snprintf(why, cap, "got %s, want %s", gs, ws);
		return 1;
	}
	for (int d = 0; d < got->rank; d++)
		if (got->dims[d] != want->dims[d]) {
			snprintf(why, cap, "got %s, want %s", gs, ws);
			return 1;
		}
	int64_t n = runtime_tensor_count(want);
	int64_t bad = 0, first = -1;
	double fg = 0, fw = 0;
	for (int64_t i = 0; i < n; i++) {
		int ok;
		if (want->dtype == BASE_DT_STRING) {
			const char *a = ((char *const *)got->data)[i];
			const char *b = ((char *const *)want->data)[i];
			ok = a && b && strcmp(a, b) == 0;
		} else if (is_floating(want->dtype)) {
			double g = base_load_double(got->dtype, got->data, (size_t)i);
			double w = base_load_double(want->dtype, want->data, (size_t)i);
			if (isnan(w) || isnan(g))
				ok = isnan(w) && isnan(g);
			else if (isinf(w) || isinf(g))
				ok = g == w;
			else
				ok = fabs(g - w) <= abs_tol + rel_tol * fabs(w);
			if (!ok && first < 0) {
				fg = g;
				fw = w;
			}
		} else {
			size_t es = base_dtype_size(want->dtype);
			ok = memcmp((const char *)got->data + (size_t)i * es,
			            (const char *)want->data + (size_t)i * es, es) == 0;
			if (!ok && first < 0) {
				fg = base_load_double(got->dtype, got->data, (size_t)i);
				fw = base_load_double(want->dtype, want->data, (size_t)i);
			}
		}
		if (!ok) {
			if (first < 0)
				first = i;
			bad++;
		}
	}
	if (bad == 0)
		return 0;
	if (want->dtype == BASE_DT_STRING)
		snprintf(why, cap, "%lld of %lld cells differ, first at %lld", (long long)bad,
		         (long long)n, (long long)first);
	else
		snprintf(why, cap, "%lld of %lld cells differ, first at %lld: got %.9g, want %.9g",
		         (long long)bad, (long long)n, (long long)first, fg, fw);
	return 1;
}

/* ---- crash containment ---------------------------------------------------------------- */

static sigjmp_buf crash_jmp;
static int crashes; /* cases that crashed: any one fails the run */
static volatile sig_atomic_t in_case;

static void on_crash(int sig)
{
	if (in_case)
		siglongjmp(crash_jmp, sig);
	signal(sig, SIG_DFL);
	raise(sig);
}

static void install_crash_handler(void)
{
	static char altstack[1 << 16];
	stack_t ss = { .ss_sp = altstack, .ss_size = sizeof altstack, .ss_flags = 0 };
	sigaltstack(&ss, NULL);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_crash;
	sa.sa_flags = SA_ONSTACK | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
	sigaction(SIGFPE, &sa, NULL);
	sigaction(SIGILL, &sa, NULL);
	sigaction(SIGABRT, &sa, NULL);
}

/* ---- one case ---------------------------------------------------------------------------- */

static int dataset_cmp(const struct dirent **a, const struct dirent **b)
{
	const char *x = (*a)->d_name, *y = (*b)->d_name;
	size_t lx = strlen(x), ly = strlen(y);
	return lx != ly ? (lx < ly ? -1 : 1) : strcmp(x, y);
}

static int dataset_filter(const struct dirent *d)
{
	return strncmp(d->d_name, "test_data_set_", 14) == 0;
}

/* ---- sequences and optionals in data files ------------------------------------------ */

/* A field of a protobuf message: number, wire type, and for length-delimited
 * fields the bytes; for varints the value. */
struct field {
	uint32_t num, wire;
	const uint8_t *p;
	size_t len;
	uint64_t v;
};

static int get_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; shift < 64; shift += 7) {
		if (*p >= end)
			return -1;
		uint8_t b = *(*p)++;
		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return 0;
	}
	return -1;
}

/* The next field of [*p, end); 1 when there is one, 0 at the end, -1 if malformed. */
static int next_field(const uint8_t **p, const uint8_t *end, struct field *f)
{
	if (*p >= end)
		return 0;
	uint64_t key;
	if (get_varint(p, end, &key) != 0)
		return -1;
	f->num = (uint32_t)(key >> 3);
	f->wire = (uint32_t)(key & 7);
	switch (f->wire) {
	case 0:
		return get_varint(p, end, &f->v) == 0 ? 1 : -1;
	case 1:
		if (end - *p < 8)
			return -1;
		*p += 8;
		return 1;
	case 5:
		if (end - *p < 4)
			return -1;
		*p += 4;
		return 1;
	case 2:
		if (get_varint(p, end, &f->v) != 0 || f->v > (uint64_t)(end - *p))
			return -1;
		f->p = *p;
		f->len = (size_t)f->v;
		*p += f->len;
		return 1;
	default:
		return -1;
	}
}

/* Decode a SequenceProto of tensors into a; dtype is the declared element
 * type (an empty sequence names none). */
static int seq_from_pb(const uint8_t *buf, size_t n, int dtype, struct rt_arg *a,
                       struct rt_blocks *bl, char *why, size_t cap)
{
	const uint8_t *p = buf, *end = buf + n;
	struct field f;
	int count = 0, r;
	while ((r = next_field(&p, end, &f)) == 1)
		if (f.num == 3 && f.wire == 2)
			count++;
		else if (f.num >= 4 && f.num <= 7 && f.wire == 2) {
			snprintf(why, cap, "sequences of non-tensors are not supported");
			return -1;
		}
	if (r < 0) {
		snprintf(why, cap, "not a readable SequenceProto");
		return -1;
	}
	struct rt_tensor *items = rt_blocks_alloc(bl, (size_t)(count + 1) * sizeof *items);
	if (!items) {
		snprintf(why, cap, "out of memory");
		return -1;
	}
	p = buf;
	int k = 0;
	while (next_field(&p, end, &f) == 1) {
		if (f.num != 3 || f.wire != 2)
			continue;
		struct strata_error err = { 0 };
		if (rt_tensor_from_pb(f.p, f.len, &items[k], NULL, bl, &err) != 0) {
			snprintf(why, cap, "item %d: %.700s", k, err.msg);
			return -1;
		}
		k++;
	}
	memset(a, 0, sizeof *a);
	a->kind = RT_ARG_SEQUENCE;
	a->seq.dtype = count ? items[0].dtype : dtype;
	a->seq.count = count;
	a->seq.items = items;
	return 0;
}

/* Decode the data file of a value of the given kind (enum rt_kind). */
static int arg_from_pb(const uint8_t *buf, size_t n, int kind, int dtype, struct rt_arg *a,
                       struct rt_blocks *bl, char *why, size_t cap)
{
	memset(a, 0, sizeof *a);
	if (kind == RT_KIND_TENSOR) {
		struct strata_error err = { 0 };
		if (rt_tensor_from_pb(buf, n, &a->tensor, NULL, bl, &err) != 0) {
			snprintf(why, cap, "%.700s", err.msg);
			return -1;
		}
		a->kind = RT_ARG_TENSOR;
		return 0;
	}
	if (kind == RT_KIND_SEQUENCE)
		return seq_from_pb(buf, n, dtype, a, bl, why, cap);
	/* OptionalProto: tensor_value = 3, sequence_value = 5; neither = empty. */
	const uint8_t *p = buf, *end = buf + n;
	struct field f;
	int r;
	a->kind = RT_ARG_NONE;
	while ((r = next_field(&p, end, &f)) == 1) {
		if (f.num == 3 && f.wire == 2)
			return arg_from_pb(f.p, f.len, RT_KIND_TENSOR, dtype, a, bl, why, cap);
		if (f.num == 5 && f.wire == 2)
			return seq_from_pb(f.p, f.len, dtype, a, bl, why, cap);
		if (f.num >= 4 && f.num <= 7 && f.wire == 2) {
			snprintf(why, cap, "optionals of this type are not supported");
			return -1;
		}
	}
	if (r < 0) {
		snprintf(why, cap, "not a readable OptionalProto");
		return -1;
	}
	return 0;
}

/* Load data set files prefix_K.pb for K = 0, 1, ...; returns the count or
 * -1.  info(m, k) gives the kind and type of value K (none past the model's
 * count: such files are read as tensors and the count check fails). */
static int load_args(const char *dir, const char *prefix, const struct rt_model *m, int inputs,
                     struct rt_arg *a, int max, struct rt_blocks *bl, char *why, size_t cap)
{
	int k;
	for (k = 0; k < max; k++) {
		char p[4096];
		snprintf(p, sizeof p, "%s/%s_%d.pb", dir, prefix, k);
		if (!is_file(p))
			break;
		const struct rt_value_info *info = inputs ? runtime_model_input(m, k)
		                                          : runtime_model_output(m, k);
		struct base_map map;
		struct strata_error err = { 0 };
		if (base_map_file(p, &map, &err) != 0) {
			snprintf(why, cap, "%s", err.msg);
			return -1;
		}
		char w[900] = "";
		int rc = arg_from_pb(map.data, map.size, info ? info->kind : RT_KIND_TENSOR,
		                     info ? info->dtype : 0, &a[k], bl, w, sizeof w);
		base_unmap(&map);
		if (rc != 0) {
			snprintf(why, cap, "%.300s: %.700s", p, w);
			return -1;
		}
	}
	return k;
}

#define MAXIO 64

/* numpy has no bfloat16, so the ONNX test data stores bfloat16 cells as
 * uint16 bits: read them as the model declares them. */
static void bf16_fixup(const struct rt_model *m, struct rt_arg *in, struct rt_arg *want,
                       int nin, int nout)
{
	for (int k = 0; k < nin; k++)
		if (in[k].kind == RT_ARG_TENSOR && in[k].tensor.dtype == BASE_DT_UINT16 &&
		    runtime_model_input(m, k)->dtype == BASE_DT_BFLOAT16)
			in[k].tensor.dtype = BASE_DT_BFLOAT16;
	for (int k = 0; k < nout; k++)
		if (want[k].kind == RT_ARG_TENSOR && want[k].tensor.dtype == BASE_DT_UINT16 &&
		    runtime_model_output(m, k)->dtype == BASE_DT_BFLOAT16)
			want[k].tensor.dtype = BASE_DT_BFLOAT16;
}

static const char *arg_kind_name(int k)
{
	return k == RT_ARG_TENSOR ? "a tensor" : k == RT_ARG_SEQUENCE ? "a sequence" : "nothing";
}

/* 0 when got matches want (tensors, sequences item by item, or nothing). */
static int compare_arg(const struct rt_arg *got, const struct rt_arg *want, char *why, size_t cap)
{
	if (got->kind != want->kind) {
		snprintf(why, cap, "got %s, want %s", arg_kind_name(got->kind), arg_kind_name(want->kind));
		return 1;
	}
	if (want->kind == RT_ARG_TENSOR)
		return compare(&got->tensor, &want->tensor, why, cap);
	if (want->kind == RT_ARG_NONE)
		return 0;
	if (got->seq.count != want->seq.count) {
		snprintf(why, cap, "got %d items, want %d", got->seq.count, want->seq.count);
		return 1;
	}
	for (int i = 0; i < want->seq.count; i++) {
		char w[700];
		if (compare(&got->seq.items[i], &want->seq.items[i], w, sizeof w)) {
			snprintf(why, cap, "item %d: %s", i, w);
			return 1;
		}
	}
	return 0;
}

struct counts {
	int n[NSTATUS];
	int datasets, datasets_pass;
	double max_opt_diff; /* --compare-opt: largest relative difference seen */
};

/* ---- optimized against unoptimized (--compare-opt) ---------------------------------------- */

/* The largest |a - b| / max(1, |b|) over the cells of a (optimized) and b
 * (unoptimized): 0 when equal, INFINITY when the types or shapes differ or
 * a non-floating cell, a NaN or an infinity differs. */
static double opt_diff(const struct rt_tensor *a, const struct rt_tensor *b)
{
	if (a->dtype != b->dtype || a->rank != b->rank)
		return INFINITY;
	for (int d = 0; d < a->rank; d++)
		if (a->dims[d] != b->dims[d])
			return INFINITY;
	int64_t n = runtime_tensor_count(b);
	double worst = 0;
	for (int64_t i = 0; i < n; i++) {
		double r;
		if (b->dtype == BASE_DT_STRING) {
			const char *x = ((char *const *)a->data)[i], *y = ((char *const *)b->data)[i];
			r = x && y && strcmp(x, y) == 0 ? 0 : INFINITY;
		} else if (is_floating(b->dtype)) {
			double x = base_load_double(a->dtype, a->data, (size_t)i);
			double y = base_load_double(b->dtype, b->data, (size_t)i);
			if (isnan(x) || isnan(y))
				r = isnan(x) && isnan(y) ? 0 : INFINITY;
			else if (isinf(x) || isinf(y))
				r = x == y ? 0 : INFINITY;
			else
				r = fabs(x - y) / fmax(1.0, fabs(y));
		} else {
			size_t es = base_dtype_size(b->dtype);
			r = memcmp((const char *)a->data + (size_t)i * es,
			           (const char *)b->data + (size_t)i * es, es) == 0 ? 0 : INFINITY;
		}
		if (r > worst)
			worst = r;
	}
	return worst;
}

static double opt_diff_arg(const struct rt_arg *a, const struct rt_arg *b)
{
	if (a->kind != b->kind)
		return INFINITY;
	if (b->kind == RT_ARG_TENSOR)
		return opt_diff(&a->tensor, &b->tensor);
	if (b->kind == RT_ARG_NONE)
		return 0;
	if (a->seq.count != b->seq.count)
		return INFINITY;
	double worst = 0;
	for (int i = 0; i < b->seq.count; i++)
		worst = fmax(worst, opt_diff(&a->seq.items[i], &b->seq.items[i]));
	return worst;
}

/* New session options: session.check_shapes with --check-shapes, then
 * key=value pairs (NULL-terminated); NULL when one is refused. */
static struct rt_options *options(struct strata_error *err, ...)
{
	struct rt_options *o;
	if (runtime_options_new(&o, err) != 0)
		return NULL;
	int rc = runtime_options_set(o, "session.check_shapes", check_shapes ? "1" : "0", err);
	va_list ap;
	va_start(ap, err);
	for (const char *k; rc == 0 && (k = va_arg(ap, const char *));)
		rc = runtime_options_set(o, k, va_arg(ap, const char *), err);
	va_end(ap);
	if (rc != 0) {
		runtime_options_free(o);
		return NULL;
	}
	return o;
}

/* Load path with the options o (freed here; NULL: fail as refused). */
static int load_with(const char *path, struct rt_options *o, struct rt_model **out,
                     struct strata_error *err)
{
	if (!o)
		return err->code;
	int rc = runtime_model_load_opts(path, o, out, err);
	runtime_options_free(o);
	return rc;
}

/* The model at path loaded with the optimizations off. */
static int load_unoptimized(const char *path, struct rt_model **out, struct strata_error *err)
{
	return load_with(path,
	                 options(err, "session.graph_optimization_level", "disabled", NULL), out,
	                 err);
}

/* The model under test: the one at path, or (--via-context) its compiled
 * context, which must load without compiling anything again. */
static int load_model(const char *path, struct rt_model **out, struct strata_error *err)
{
	if (!*ctx_dir)
		return load_with(path, options(err, NULL), out, err);
	char ctx[128];
	snprintf(ctx, sizeof ctx, "%s/case_ctx.onnx", ctx_dir);
	struct rt_model *m = NULL;
	int rc = load_with(path,
	                   options(err, "ep.context_enable", "1", "ep.context_embed_mode", "1",
	                           "ep.context_file_path", ctx, NULL),
	                   &m, err);
	runtime_model_free(m);
	if (rc == 0)
		rc = load_with(ctx, options(err, NULL), out, err);
	if (rc == 0 && !runtime_model_compiled(*out)) {
		runtime_model_free(*out);
		*out = NULL;
		rc = base_err(err, STRATA_INVALID_GRAPH, "the context model was compiled again");
	}
	return rc;
}

static int run_case(const char *dir, const char *name, struct counts *c)
{
	char path[4096], why[2048] = "", op[64];
	int random;
	snprintf(path, sizeof path, "%s/model.onnx", dir);
	model_op(path, op, sizeof op, &random);

	struct rt_model *m = NULL, *mref = NULL;
	struct rt_ctx *cx = NULL, *cxref = NULL;
	struct strata_error err = { 0 };
	double case_diff = 0;
	struct dirent **sets = NULL;
	int nsets = 0, st = PASS, npass = 0;
	struct rt_blocks bl = { 0 };

	int sig = sigsetjmp(crash_jmp, 1);
	if (sig != 0) {
		in_case = 0;
		snprintf(why, sizeof why, "crashed (signal %d)", sig);
		st = ERROR;
		crashes++;
		m = mref = NULL; /* abandoned */
		cx = cxref = NULL;
		memset(&bl, 0, sizeof bl);
		sets = NULL;
		nsets = 0;
		goto done;
	}
	in_case = 1;
	int rc = load_model(path, &m, &err);
	if (rc != 0) {
		st = rc == STRATA_NOT_IMPLEMENTED ? NOTIMPL : shape_mismatch(err.msg) ? FAIL : ERROR;
		snprintf(why, sizeof why, "%s", err.msg);
		goto done;
	}
	if ((rc = runtime_ctx_new(m, &cx, &err)) != 0) {
		st = ERROR;
		snprintf(why, sizeof why, "%s", err.msg);
		goto done;
	}
	if (compare_opt && ((rc = load_unoptimized(path, &mref, &err)) != 0 ||
	                    (rc = runtime_ctx_new(mref, &cxref, &err)) != 0)) {
		st = ERROR;
		snprintf(why, sizeof why, "unoptimized: %s", err.msg);
		goto done;
	}
	nsets = scandir(dir, &sets, dataset_filter, dataset_cmp);
	if (nsets <= 0) {
		st = ERROR;
		snprintf(why, sizeof why, "no test_data_set_N folders");
		nsets = nsets < 0 ? 0 : nsets;
		goto done;
	}
	for (int s = 0; s < nsets; s++) {
		char sdir[4096];
		snprintf(sdir, sizeof sdir, "%s/%s", dir, sets[s]->d_name);
		struct rt_arg in[MAXIO], want[MAXIO], got[MAXIO], ref[MAXIO];
		char swhy[1024] = "";
		int sst = PASS;
		c->datasets++;
		int nin = load_args(sdir, "input", m, 1, in, MAXIO, &bl, swhy, sizeof swhy);
		int nout = nin < 0 ? -1 : load_args(sdir, "output", m, 0, want, MAXIO, &bl, swhy,
		                                    sizeof swhy);
		if (nin < 0 || nout < 0) {
			sst = ERROR;
		} else if (nin != runtime_model_ninputs(m) || nout != runtime_model_noutputs(m)) {
			sst = ERROR;
			snprintf(swhy, sizeof swhy, "the data set has %d inputs and %d outputs, the model %d and %d",
			         nin, nout, runtime_model_ninputs(m), runtime_model_noutputs(m));
		} else if (bf16_fixup(m, in, want, nin, nout),
		           (rc = runtime_run_args(cx, in, got, &err)) != 0) {
			sst = rc == STRATA_NOT_IMPLEMENTED ? NOTIMPL : shape_mismatch(err.msg) ? FAIL : ERROR;
			snprintf(swhy, sizeof swhy, "%s", err.msg);
		} else {
			for (int k = 0; k < nout; k++) {
				char cwhy[900];
				if (compare_arg(&got[k], &want[k], cwhy, sizeof cwhy)) {
					sst = FAIL;
					snprintf(swhy, sizeof swhy, "output %d (%s): %s", k,
					         runtime_model_output(m, k)->name, cwhy);
					break;
				}
			}
		}
		if (compare_opt && (sst == PASS || sst == FAIL)) {
			/* got[] lives until the next run on cx: cxref is another context. */
			if ((rc = runtime_run_args(cxref, in, ref, &err)) != 0) {
				sst = ERROR;
				snprintf(swhy, sizeof swhy, "unoptimized run: %.900s", err.msg);
			}
			for (int k = 0; rc == 0 && k < nout; k++) {
				double d = opt_diff_arg(&got[k], &ref[k]);
				case_diff = fmax(case_diff, d);
				if (!(d <= OPT_RTOL) && sst == PASS) {
					sst = FAIL;
					snprintf(swhy, sizeof swhy,
					         "output %d (%s): optimized and unoptimized runs differ by %.3g relative",
					         k, runtime_model_output(m, k)->name, d);
				}
			}
		}
		rt_blocks_free(&bl);
		if (sst == PASS)
			c->datasets_pass++, npass++;
		if (verbose)
			printf("  %s %s/%s%s%s\n", status_name[sst], name, sets[s]->d_name,
			       *swhy ? ": " : "", swhy);
		/* The worst data set decides: error and not_implemented over fail. */
		if (sst != PASS && (st == PASS || (st == FAIL && sst != FAIL))) {
			st = sst;
			snprintf(why, sizeof why, "%s: %s", sets[s]->d_name, swhy);
		}
	}
done:
	in_case = 0;
	rt_blocks_free(&bl);
	runtime_ctx_free(cx);
	runtime_model_free(m);
	runtime_ctx_free(cxref);
	runtime_model_free(mref);
	for (int s = 0; s < nsets; s++)
		free(sets[s]);
	free(sets);
	if (st == PASS && nsets > 0)
		snprintf(why, sizeof why, "%d data set%s", npass, npass == 1 ? "" : "s");
	/* Values drawn from a generator cannot be matched: never a pass, and a
	 * training-mode Dropout that does not match is not a failure. */
	if (random == 2 || (random == 1 && st != PASS)) {
		char tmp[2048];
		snprintf(tmp, sizeof tmp, "%s", why);
		snprintf(why, sizeof why, "random values (%s: %.1900s)", status_name[st], tmp);
		st = RANDOM;
	}
	if (compare_opt && nsets > 0) {
		size_t len = strlen(why);
		snprintf(why + len, sizeof why - len, " (opt-diff %.3g)", case_diff);
		c->max_opt_diff = fmax(c->max_opt_diff, case_diff);
	}
	printf("%s %s: %s\n", status_name[st], name, why);
	fflush(stdout);
	count_op(op, st);
	c->n[st]++;
	return st;
}

static int case_filter(const struct dirent *d)
{
	return d->d_name[0] != '.';
}

/* Run DIR (a case or a folder of cases); -1 if it is unusable. */
static int run_dir(const char *dir, struct counts *c)
{
	char p[4200];
	const char *base = strrchr(dir, '/');
	base = base && base[1] ? base + 1 : dir;
	snprintf(p, sizeof p, "%s/model.onnx", dir);
	if (is_file(p)) {
		run_case(dir, base, c);
		return 0;
	}
	if (!is_dir(dir))
		return -1;
	struct dirent **list;
	int n = scandir(dir, &list, case_filter, alphasort);
	if (n < 0)
		return -1;
	int found = 0;
	for (int i = 0; i < n; i++) {
		char sub[4096];
		snprintf(sub, sizeof sub, "%s/%s", dir, list[i]->d_name);
		snprintf(p, sizeof p, "%s/model.onnx", sub);
		if (is_file(p)) {
			run_case(sub, list[i]->d_name, c);
			found++;
		}
		free(list[i]);
	}
	free(list);
	return found ? 0 : -1;
}

static void usage(void)
{
	fprintf(stderr, "usage: conformance [--rtol R] [--atol A] [--verbose] [--expect-pass N] "
	        "[--check-shapes] [--compare-opt] [--via-context] DIR...\n");
	exit(2);
}

static int cmp_op(const void *a, const void *b)
{
	return strcmp(((const struct opcount *)a)->op, ((const struct opcount *)b)->op);
}

int main(int argc, char **argv)
{
	long expect = -1;
	int ndirs = 0;
	const char **dirs = calloc((size_t)argc + 1, sizeof *dirs);
	if (!dirs)
		return 2;
	for (int i = 1; i < argc; i++) {
		char *end;
		if (strcmp(argv[i], "--rtol") == 0 && i + 1 < argc) {
			rel_tol = strtod(argv[++i], &end);
			if (*end || rel_tol < 0)
				usage();
		} else if (strcmp(argv[i], "--atol") == 0 && i + 1 < argc) {
			abs_tol = strtod(argv[++i], &end);
			if (*end || abs_tol < 0)
				usage();
		} else if (strcmp(argv[i], "--expect-pass") == 0 && i + 1 < argc) {
			expect = strtol(argv[++i], &end, 10);
			if (*end || expect < 0)
				usage();
		} else if (strcmp(argv[i], "--check-shapes") == 0) {
			check_shapes = 1;
		} else if (strcmp(argv[i], "--compare-opt") == 0) {
			compare_opt = 1;
		} else if (strcmp(argv[i], "--via-context") == 0) {
			snprintf(ctx_dir, sizeof ctx_dir, "/tmp/strata-conformance-XXXXXX");
			if (!mkdtemp(ctx_dir)) {
				fprintf(stderr, "conformance: cannot make a scratch folder: %s\n",
				        strerror(errno));
				return 2;
			}
		} else if (strcmp(argv[i], "--verbose") == 0) {
			verbose = 1;
		} else if (argv[i][0] == '-') {
			usage();
		} else {
			dirs[ndirs++] = argv[i];
		}
	}
	if (ndirs == 0)
		usage();
	install_crash_handler();

	struct counts *per = calloc((size_t)ndirs, sizeof *per);
	if (!per)
		return 2;
	int unusable = 0;
	for (int d = 0; d < ndirs; d++)
		if (run_dir(dirs[d], &per[d]) != 0) {
			fprintf(stderr, "conformance: %s: not a test case nor a folder of test cases\n",
			        dirs[d]);
			unusable = 1;
		}

	qsort(ops, nops, sizeof *ops, cmp_op);
	int tot[NSTATUS] = { 0 };
	printf("\n%-28s %6s %6s %6s %6s %6s %6s\n", "op", "total", "pass", "fail", "error", "notimp",
	       "random");
	for (size_t i = 0; i < nops; i++) {
		int t = 0;
		for (int s = 0; s < NSTATUS; s++) {
			t += ops[i].n[s];
			tot[s] += ops[i].n[s];
		}
		printf("%-28s %6d %6d %6d %6d %6d %6d\n", ops[i].op, t, ops[i].n[PASS], ops[i].n[FAIL],
		       ops[i].n[ERROR], ops[i].n[NOTIMPL], ops[i].n[RANDOM]);
	}
	printf("%-28s %6d %6d %6d %6d %6d %6d\n\n", "TOTAL",
	       tot[0] + tot[1] + tot[2] + tot[3] + tot[4], tot[PASS], tot[FAIL], tot[ERROR],
	       tot[NOTIMPL], tot[RANDOM]);
	for (int d = 0; d < ndirs; d++) {
		const char *dir = dirs[d];
		size_t len = strlen(dir);
		while (len > 1 && dir[len - 1] == '/')
			len--;
		size_t b = len;
		while (b > 0 && dir[b - 1] != '/')
			b--;
		const struct counts *c = &per[d];
		printf("{\"suite\": \"%.*s\", \"total\": %d, \"pass\": %d, \"fail\": %d, \"error\": %d, "
		       "\"not_implemented\": %d, \"random\": %d, \"datasets\": %d, "
		       "\"datasets_pass\": %d",
		       (int)(len - b), dir + b, c->n[0] + c->n[1] + c->n[2] + c->n[3] + c->n[4],
		       c->n[PASS], c->n[FAIL], c->n[ERROR], c->n[NOTIMPL], c->n[RANDOM], c->datasets,
		       c->datasets_pass);
		/* JSON has no infinity: a mismatch of shape or type prints as -1. */
		if (compare_opt)
			printf(", \"max_opt_diff\": %.3g",
			       isfinite(c->max_opt_diff) ? c->max_opt_diff : -1.0);
		printf("}\n");
	}
	if (*ctx_dir) {
		char ctx[128];
		snprintf(ctx, sizeof ctx, "%s/case_ctx.onnx", ctx_dir);
		remove(ctx);
		rmdir(ctx_dir);
	}
	free(per);
	free(dirs);
	free(ops);
	if (unusable)
		return 2;
	if (crashes) {
		fprintf(stderr, "conformance: %d case(s) crashed\n", crashes);
		return 3;
	}
	if (expect >= 0 && tot[PASS] < expect)
		return 1;
	return 0;
}
