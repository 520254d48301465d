/*
 * conformance.c: run ONNX backend test cases through Strata's runtime.
 *
 *     conformance [--rtol R] [--atol A] [--verbose] [--expect-pass N] DIR...
 *
 * A case is a folder holding model.onnx and test_data_set_N/ folders of
 * input_K.pb / output_K.pb TensorProtos (the layout of the ONNX test suite
 * under /usr/share/libonnx-testdata/data/node).  DIR is a case or a folder
 * of cases.  Each data set is run in-process and compared the way the ONNX
 * backend tests compare: same output count, element type and shape, then
 * |got - want| <= atol + rtol * |want| for floating types (NaN matches NaN),
 * exact equality for integers, booleans and strings.
 *
 * Output: one line per case (pass, fail, error or not_implemented, with the
 * reason), a table of counts per operator (the op of the model's first
 * non-Constant node), totals, then one JSON line per DIR argument.  The exit
 * status is 0, 2 when an argument is unusable, 1 when --expect-pass is given
 * and fewer cases pass.
 *
 * A kernel that crashes would take the runner down; a signal handler turns a
 * crash into an "error ... crashed" line so that the rest of the suite still
 * runs (the crashed case's memory is abandoned).
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "onnx.pb-c.h"
#include "../runtime/runtime_int.h"

enum { PASS, FAIL, ERROR, NOTIMPL, NSTATUS };
static const char *status_name[NSTATUS] = { "pass", "fail", "error", "not_implemented" };

static double rel_tol = 1e-3, abs_tol = 1e-7;
static int verbose;

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

/* The op of the model's first node that is not a Constant. */
static void model_op(const char *path, char *op, size_t cap)
{
	snprintf(op, cap, "?");
	struct base_map map;
	if (base_map_file(path, &map, NULL) != 0)
		return;
	Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, map.size, map.data);
	base_unmap(&map);
	if (!mp)
		return;
	if (mp->graph) {
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

/* Load data set files prefix_K.pb for K = 0, 1, ...; returns the count or -1. */
static int load_tensors(const char *dir, const char *prefix, struct rt_tensor *t, int max,
                        struct rt_blocks *bl, char *why, size_t cap)
{
	int k;
	for (k = 0; k < max; k++) {
		char p[4096];
		snprintf(p, sizeof p, "%s/%s_%d.pb", dir, prefix, k);
		if (!is_file(p))
			break;
		struct strata_error err = { 0 };
		if (rt_tensor_from_pb_file(p, &t[k], NULL, bl, &err) != 0) {
			snprintf(why, cap, "%s", err.msg);
			return -1;
		}
	}
	return k;
}

#define MAXIO 64

/* numpy has no bfloat16, so the ONNX test data stores bfloat16 cells as
 * uint16 bits: read them as the model declares them. */
static void bf16_fixup(const struct rt_model *m, struct rt_tensor *in, struct rt_tensor *want,
                       int nin, int nout)
{
	for (int k = 0; k < nin; k++)
		if (in[k].dtype == BASE_DT_UINT16 &&
		    runtime_model_input(m, k)->dtype == BASE_DT_BFLOAT16)
			in[k].dtype = BASE_DT_BFLOAT16;
	for (int k = 0; k < nout; k++)
		if (want[k].dtype == BASE_DT_UINT16 &&
		    runtime_model_output(m, k)->dtype == BASE_DT_BFLOAT16)
			want[k].dtype = BASE_DT_BFLOAT16;
}

struct counts {
	int n[NSTATUS];
	int datasets, datasets_pass;
};

static int run_case(const char *dir, const char *name, struct counts *c)
{
	char path[4096], why[2048] = "", op[64];
	snprintf(path, sizeof path, "%s/model.onnx", dir);
	model_op(path, op, sizeof op);

	struct rt_model *m = NULL;
	struct rt_ctx *cx = NULL;
	struct strata_error err = { 0 };
	struct dirent **sets = NULL;
	int nsets = 0, st = PASS, npass = 0;
	struct rt_blocks bl = { 0 };

	int sig = sigsetjmp(crash_jmp, 1);
	if (sig != 0) {
		in_case = 0;
		snprintf(why, sizeof why, "crashed (signal %d)", sig);
		st = ERROR;
		m = NULL; /* abandoned */
		cx = NULL;
		memset(&bl, 0, sizeof bl);
		sets = NULL;
		nsets = 0;
		goto done;
	}
	in_case = 1;
	int rc = runtime_model_load(path, &m, &err);
	if (rc != 0) {
		st = rc == STRATA_NOT_IMPLEMENTED ? NOTIMPL : ERROR;
		snprintf(why, sizeof why, "%s", err.msg);
		goto done;
	}
	if ((rc = runtime_ctx_new(m, &cx, &err)) != 0) {
		st = ERROR;
		snprintf(why, sizeof why, "%s", err.msg);
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
		struct rt_tensor in[MAXIO], want[MAXIO], got[MAXIO];
		char swhy[1024] = "";
		int sst = PASS;
		c->datasets++;
		int nin = load_tensors(sdir, "input", in, MAXIO, &bl, swhy, sizeof swhy);
		int nout = nin < 0 ? -1 : load_tensors(sdir, "output", want, MAXIO, &bl, swhy, sizeof swhy);
		if (nin < 0 || nout < 0) {
			sst = ERROR;
		} else if (nin != runtime_model_ninputs(m) || nout != runtime_model_noutputs(m)) {
			sst = ERROR;
			snprintf(swhy, sizeof swhy, "the data set has %d inputs and %d outputs, the model %d and %d",
			         nin, nout, runtime_model_ninputs(m), runtime_model_noutputs(m));
		} else if (bf16_fixup(m, in, want, nin, nout),
		           (rc = runtime_run(cx, in, got, &err)) != 0) {
			sst = rc == STRATA_NOT_IMPLEMENTED ? NOTIMPL : ERROR;
			snprintf(swhy, sizeof swhy, "%s", err.msg);
		} else {
			for (int k = 0; k < nout; k++) {
				char cwhy[900];
				if (compare(&got[k], &want[k], cwhy, sizeof cwhy)) {
					sst = FAIL;
					snprintf(swhy, sizeof swhy, "output %d (%s): %s", k,
					         runtime_model_output(m, k)->name, cwhy);
					break;
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
	for (int s = 0; s < nsets; s++)
		free(sets[s]);
	free(sets);
	if (st == PASS && nsets > 0)
		snprintf(why, sizeof why, "%d data set%s", npass, npass == 1 ? "" : "s");
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
	fprintf(stderr, "usage: conformance [--rtol R] [--atol A] [--verbose] [--expect-pass N] DIR...\n");
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
	printf("\n%-28s %6s %6s %6s %6s %6s\n", "op", "total", "pass", "fail", "error", "notimp");
	for (size_t i = 0; i < nops; i++) {
		int t = 0;
		for (int s = 0; s < NSTATUS; s++) {
			t += ops[i].n[s];
			tot[s] += ops[i].n[s];
		}
		printf("%-28s %6d %6d %6d %6d %6d\n", ops[i].op, t, ops[i].n[PASS], ops[i].n[FAIL],
		       ops[i].n[ERROR], ops[i].n[NOTIMPL]);
	}
	printf("%-28s %6d %6d %6d %6d %6d\n\n", "TOTAL", tot[0] + tot[1] + tot[2] + tot[3], tot[PASS],
	       tot[FAIL], tot[ERROR], tot[NOTIMPL]);
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
		       "\"not_implemented\": %d, \"datasets\": %d, \"datasets_pass\": %d}\n",
		       (int)(len - b), dir + b, c->n[0] + c->n[1] + c->n[2] + c->n[3], c->n[PASS],
		       c->n[FAIL], c->n[ERROR], c->n[NOTIMPL], c->datasets, c->datasets_pass);
	}
	free(per);
	free(dirs);
	free(ops);
	if (unusable)
		return 2;
	if (expect >= 0 && tot[PASS] < expect)
		return 1;
	return 0;
}
