/*
 * cli_run.c: the model commands.  `strata run MODEL [--input name=JSON ...]`,
 * one evaluation of an ONNX model from the command line; `strata inspect`,
 * its declared inputs and outputs; `strata compile`, models into compiled
 * contexts (below).
 *
 * Each input is JSON: a number (a scalar) or nested arrays, whose nesting
 * gives the shape (it must be rectangular); the element type is the one the
 * model declares for that input.  The outputs are printed as
 * {"outputs": {"name": {"dtype": "float", "shape": [...], "values": [...]}}}
 * with the values flat, in row-major order, each as the library writes a
 * cell of its type (strata_json_number).  Everything goes through the
 * public model API (struct strata_model, strata.h).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../include/strata.h"
#include "tool.h"

#define MAX_INPUTS 64
#define MAX_MODELS 256

/* Find the shape of nested arrays j: returns 0, or -1 when ragged. */
static int shape_of(const json_t *j, int *rank, int64_t *dims)
{
	*rank = 0;
	const json_t *p = j;
	while (json_is_array(p)) {
		if (*rank == STRATA_MAX_RANK)
			return -1;
		dims[(*rank)++] = (int64_t)json_array_size(p);
		if (!json_array_size(p))
			break;
		p = json_array_get(p, 0);
	}
	return 0;
}

/* The number of cells of t (1 for a scalar). */
static int64_t cell_count(const struct strata_tensor *t)
{
	int64_t n = 1;
	for (int i = 0; i < t->rank; i++)
		n *= t->dims[i];
	return n;
}

static int is_dtype(const struct strata_tensor *t, const char *name)
{
	return !strcmp(t->dtype, name);
}

/* Copy the leaves of j (which must have shape t->dims) into t's cells. */
static int fill(const json_t *j, int depth, struct strata_tensor *t, size_t *k, const char *name)
{
	if (depth == t->rank) {
		if (json_is_boolean(j) && is_dtype(t, "bool")) {
			((uint8_t *)t->data)[(*k)++] = json_is_true(j);
			return 0;
		}
		if (!json_is_number(j))
			return tool_fail("input '%s': expected numbers in nested arrays", name);
		if (is_dtype(t, "int64")) /* not through a double: all 64 bits */
			((int64_t *)t->data)[*k] = json_is_integer(j) ? (int64_t)json_integer_value(j)
			                                              : (int64_t)json_number_value(j);
		else
			strata_tensor_set(t, *k, json_number_value(j));
		(*k)++;
		return 0;
	}
	if (!json_is_array(j) || (int64_t)json_array_size(j) != t->dims[depth])
		return tool_fail("input '%s': the nested arrays are not rectangular", name);
	for (size_t i = 0; i < json_array_size(j); i++)
		if (fill(json_array_get(j, i), depth + 1, t, k, name))
			return 1;
	return 0;
}

static json_t *output_json(const struct strata_tensor *t)
{
	json_t *o = json_object(), *shape = json_array(), *vals = json_array();
	int64_t n = cell_count(t);
	json_object_set_new(o, "dtype", json_string(t->dtype));
	for (int i = 0; i < t->rank; i++)
		json_array_append_new(shape, json_integer(t->dims[i]));
	for (int64_t i = 0; i < n; i++) {
		json_t *v;
		double x;
		if (is_dtype(t, "string"))
			v = json_string(((char **)t->data)[i] ? ((char **)t->data)[i] : "");
		else if (is_dtype(t, "bool"))
			v = json_boolean(((const uint8_t *)t->data)[i]);
		else if (is_dtype(t, "int64"))
			v = json_integer(((const int64_t *)t->data)[i]);
		else if (is_dtype(t, "uint64"))
			v = json_integer((json_int_t)((const uint64_t *)t->data)[i]);
		else if (strata_tensor_get(t, (size_t)i, &x) == 0)
			v = strata_json_number(t->dtype, x);
		else
			v = json_null(); /* an element type without numbers */
		json_array_append_new(vals, v);
	}
	json_object_set_new(o, "shape", shape);
	json_object_set_new(o, "values", vals);
	return o;
}

/* "float [batch,384]": a declared input or output type, for messages. */
static const char *type_text(const struct strata_value_info *info, char *buf, size_t cap)
{
	size_t n = (size_t)snprintf(buf, cap, "%s", info->dtype);
	if (info->rank < 0 || n >= cap)
		return buf;
	n += (size_t)snprintf(buf + n, cap - n, " [");
	for (int d = 0; d < info->rank && n < cap; d++) {
		const char *sep = d ? "," : "";
		if (info->dims[d] >= 0)
			n += (size_t)snprintf(buf + n, cap - n, "%s%lld", sep, (long long)info->dims[d]);
		else
			n += (size_t)snprintf(buf + n, cap - n, "%s%s", sep,
			                      *info->dim_names[d] ? info->dim_names[d] : "?");
	}
	if (n < cap)
		snprintf(buf + n, cap - n, "]");
	return buf;
}

/* The declared type as JSON: {"name", "dtype", "shape": [384, "batch", null]}. */
static json_t *info_json(const struct strata_value_info *info)
{
	json_t *o = json_object();
	json_object_set_new(o, "name", json_string(info->name));
	if (strcmp(info->kind, "tensor") != 0)
		json_object_set_new(o, "kind", json_string(info->kind));
	json_object_set_new(o, "dtype", json_string(info->dtype));
	if (info->rank >= 0) {
		json_t *shape = json_array();
		for (int d = 0; d < info->rank; d++)
			json_array_append_new(shape, info->dims[d] >= 0 ? json_integer(info->dims[d])
			                             : *info->dim_names[d] ? json_string(info->dim_names[d])
			                                                   : json_null());
		json_object_set_new(o, "shape", shape);
	}
	return o;
}

/* Print j (consumed) on stdout as the library writes JSON, indented
 * (pretty) or on one line. */
static int print_json(json_t *j, int pretty)
{
	char *s = j ? strata_json_dump(j, pretty ? STRATA_JSON_PRETTY : 0) : NULL;
	json_decref(j);
	if (!s)
		return tool_fail("out of memory");
	puts(s);
	strata_free(s);
	return 0;
}

int cli_cmd_inspect(int argc, char **argv)
{
	if (argc != 2 || argv[1][0] == '-')
		return tool_usage("inspect", argc < 2 ? "missing MODEL" : "unexpected argument '%s'",
		                  argv[argc < 2 ? 0 : argc - 1]);
	struct strata_error err = { 0 };
	struct strata_model *m;
	int rc = strata_model_open(argv[1], &m, &err);
	if (rc)
		return tool_fail("%s", err.msg[0] ? err.msg : strata_strerror(rc));
	json_t *top = json_object(), *ins = json_array(), *outs = json_array();
	struct strata_value_info info;
	for (int i = 0; strata_model_input(m, i, &info) == 0; i++)
		json_array_append_new(ins, info_json(&info));
	for (int i = 0; strata_model_output(m, i, &info) == 0; i++)
		json_array_append_new(outs, info_json(&info));
	json_object_set_new(top, "inputs", ins);
	json_object_set_new(top, "outputs", outs);
	strata_model_close(m);
	return print_json(top, 1);
}

static int by_seconds(const void *a, const void *b)
{
	double x = ((const struct strata_op_time *)a)->seconds;
	double y = ((const struct strata_op_time *)b)->seconds;
	return (x < y) - (x > y);
}

/* Run m again on in, profiled: {"run_ms": .., "profile": [{"op", "calls",
 * "ms"}, ...]} with the costliest type first, or NULL (err set). */
static json_t *profile_run(struct strata_model *m, const struct strata_tensor *in,
                           struct strata_tensor *out, struct strata_error *err)
{
	if (strata_model_profile(m, 1, err) != 0)
		return NULL;
	double t0 = tool_now();
	if (strata_model_run(m, in, out, err) != 0)
		return NULL;
	double took = tool_now() - t0;
	struct strata_op_time sorted[128];
	int n = strata_model_profile_rows(m, sorted, 128);
	if (n > 128)
		n = 128;
	qsort(sorted, (size_t)n, sizeof *sorted, by_seconds);
	json_t *o = json_object(), *list = json_array();
	for (int i = 0; i < n; i++)
		json_array_append_new(list, json_pack("{s:s, s:I, s:f}", "op", sorted[i].op, "calls",
		                                      (json_int_t)sorted[i].calls, "ms",
		                                      sorted[i].seconds * 1e3));
	json_object_set_new(o, "run_ms", json_real(took * 1e3));
	json_object_set_new(o, "profile", list);
	return o;
}

int cli_cmd_run(int argc, char **argv)
{
	const char *model = NULL;
	const char *inputs[MAX_INPUTS];
	int ninputs = 0, profile = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--profile")) {
			profile = 1;
		} else if (!strcmp(a, "--input") || !strncmp(a, "--input=", 8)) {
			const char *v = a[7] == '=' ? a + 8 : (i + 1 < argc ? argv[++i] : NULL);
			if (!v)
				return tool_usage("run", "option --input needs a value");
			if (ninputs == MAX_INPUTS)
				return tool_usage("run", "too many --input options");
			inputs[ninputs++] = v;
		} else if (a[0] == '-' && a[1]) {
			return tool_usage("run", "unknown option '%s'", a);
		} else if (!model) {
			model = a;
		} else {
			return tool_usage("run", "unexpected argument '%s'", a);
		}
	}
	if (!model)
		return tool_usage("run", "missing MODEL");
	struct strata_error err = { 0 };
	struct strata_model *m;
	int rc = strata_model_open(model, &m, &err);
	if (rc)
		return tool_fail("%s", err.msg[0] ? err.msg : strata_strerror(rc));
	int nin = strata_model_ninputs(m), nout = strata_model_noutputs(m);
	struct strata_tensor *in = tool_calloc((size_t)nin + 1, sizeof *in);
	struct strata_tensor *out = tool_calloc((size_t)nout + 1, sizeof *out);
	int status = 1;
	if (!in || !out) {
		tool_fail("out of memory");
		goto out;
	}
	for (int k = 0; k < ninputs; k++) {
		const char *eq = strchr(inputs[k], '=');
		if (!eq) {
			status = tool_usage("run", "--input needs NAME=JSON, got '%s'", inputs[k]);
			goto out;
		}
		char name[256];
		snprintf(name, sizeof name, "%.*s", (int)(eq - inputs[k]), inputs[k]);
		int idx = strata_model_input_index(m, name);
		if (idx < 0) {
			tool_fail("the model has no input '%s'", name);
			goto out;
		}
		struct strata_value_info info;
		strata_model_input(m, idx, &info);
		if (in[idx].data) {
			tool_fail("input '%s' given twice", name);
			goto out;
		}
		json_error_t je;
		int oom;
		json_t *j = tool_json_parse(eq + 1, strlen(eq + 1), JSON_DECODE_ANY, &je, &oom);
		if (!j) {
			if (oom)
				tool_fail("input '%s': out of memory", name);
			else
				tool_fail("input '%s': invalid JSON: %s", name, je.text);
			goto out;
		}
		struct strata_tensor *t = &in[idx];
		t->dtype = info.dtype;
		size_t size = strata_dtype_size(t->dtype);
		double probe;
		struct strata_tensor one = { t->dtype, 0, { 0 }, &probe };
		if (!size || size > sizeof probe || strata_tensor_set(&one, 0, 0) != 0) {
			json_decref(j);
			tool_fail("input '%s': element type %s is not supported here", name, t->dtype);
			goto out;
		}
		if (shape_of(j, &t->rank, t->dims)) {
			json_decref(j);
			tool_fail("input '%s': too many dimensions", name);
			goto out;
		}
		size_t n = (size_t)cell_count(t);
		t->data = tool_calloc(n ? n : 1, size);
		size_t filled = 0;
		int bad = !t->data || fill(j, 0, t, &filled, name);
		if (!t->data)
			tool_fail("input '%s': out of memory", name);
		json_decref(j);
		if (bad)
			goto out;
	}
	for (int i = 0; i < nin; i++)
		if (!in[i].data) {
			char ty[256];
			struct strata_value_info info;
			strata_model_input(m, i, &info);
			tool_fail("input '%s' (%s) not given (--input %s=JSON)", info.name,
			          type_text(&info, ty, sizeof ty), info.name);
			goto out;
		}
	if ((rc = strata_model_run(m, in, out, &err)) != 0) {
		tool_fail("%s", err.msg[0] ? err.msg : strata_strerror(rc));
		goto out;
	}
	json_t *prof = NULL;
	if (profile && (prof = profile_run(m, in, out, &err)) == NULL) {
		tool_fail("%s", err.msg);
		goto out;
	}
	json_t *top = json_object(), *outs = json_object();
	for (int i = 0; i < nout; i++) {
		struct strata_value_info info;
		strata_model_output(m, i, &info);
		json_object_set_new(outs, info.name, output_json(&out[i]));
	}
	json_object_set_new(top, "outputs", outs);
	if (prof)
		json_object_update_new(top, prof);
	status = print_json(top, 1);
out:
	for (int i = 0; in && i < nin; i++)
		tool_free(in[i].data);
	tool_free(in);
	tool_free(out);
	strata_model_close(m);
	return status;
}

/* ---- strata compile ------------------------------------------------------------------
 * Each model is compiled by strata_model_compile() (strata.h) and
 * one JSON line per model goes to stdout once its files are complete:
 *     {"model": "a.onnx", "context": "a_ctx.onnx", "binary": "a_strata.bin", "ms": 4.2}
 * ("binary" is null with --embed).  With --share the binary is written by
 * the last model's load, so the lines come after it, then
 *     {"binary": "a_strata.bin", "bytes": 9216, "models": 2}.
 * A model that fails is reported on stderr and leaves nothing of its own
 * (the runtime writes through a temporary file and a rename); with --share
 * a failure abandons the group, and the context models it wrote, which
 * would point at a binary that was never written, are removed. */

/* Print j as one line on stdout and release it. */
static int print_line(json_t *j)
{
	return print_json(j, 0);
}

/* Create dir unless it is a folder already. */
static int ensure_dir(const char *dir)
{
	struct stat st;
	if (stat(dir, &st) == 0 && !S_ISDIR(st.st_mode))
		return tool_fail("%s: not a folder", dir);
	if (mkdir(dir, 0777) != 0 && errno != EEXIST)
		return tool_fail("cannot create %s: %s", dir, strerror(errno));
	return 0;
}

int cli_cmd_compile(int argc, char **argv)
{
	const char *models[MAX_MODELS];
	const char *prefix = NULL, *outdir = NULL;
	int n = 0, embed = 0, share = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--embed")) {
			embed = 1;
		} else if (!strcmp(a, "--share")) {
			share = 1;
		} else if (!strcmp(a, "--prefix") || !strcmp(a, "-o")) {
			if (i + 1 >= argc)
				return tool_usage("compile", "option %s needs a value", a);
			if (a[1] == 'o')
				outdir = argv[++i];
			else
				prefix = argv[++i];
		} else if (!strncmp(a, "--prefix=", 9)) {
			prefix = a + 9;
		} else if (a[0] == '-' && a[1]) {
			return tool_usage("compile", "unknown option '%s'", a);
		} else if (n == MAX_MODELS) {
			return tool_usage("compile", "more than %d models", MAX_MODELS);
		} else {
			models[n++] = a;
		}
	}
	if (!n)
		return tool_usage("compile", "missing MODEL");
	if (share && embed)
		return tool_usage("compile", "--share writes one binary file for all the models "
		                  "and --embed puts each binary inside its context model: choose one");
	if (outdir && !*outdir)
		return tool_usage("compile", "-o needs a folder");

	char *ctx[MAX_MODELS] = { 0 };
	json_t *lines = json_array();
	char *bin = NULL;
	int status = 1;
	if (!lines) {
		tool_fail("out of memory");
		goto out;
	}
	for (int i = 0; i < n; i++) {
		if (!(ctx[i] = strata_context_path(outdir, models[i]))) {
			tool_fail("out of memory");
			goto out;
		}
		for (int j = 0; j < i; j++)
			if (!strcmp(ctx[i], ctx[j])) {
				tool_fail("%s and %s would both write %s", models[j], models[i], ctx[i]);
				goto out;
			}
	}
	if (outdir && ensure_dir(outdir))
		goto out;
	status = 0;
	for (int i = 0; i < n; i++) {
		struct strata_compile_options c = { ctx[i], prefix, embed,
		                                    share ? (i + 1 < n ? 1 : 2) : 0 };
		struct strata_error err = { 0 };
		double t0 = tool_now();
		int rc = strata_model_compile(models[i], &c, &err);
		double ms = floor((tool_now() - t0) * 1e6 + 0.5) / 1e3;
		if (rc) {
			tool_fail("%s", err.msg); /* it names the model */
			status = 1;
			if (!share)
				continue;
			for (int j = 0; j <= i; j++)
				unlink(ctx[j]);
			if (i > 0)
				fprintf(stderr, "strata: --share: nothing written; the context models of "
				        "the %d model%s before %s were removed\n", i, i == 1 ? "" : "s",
				        models[i]);
			goto out;
		}
		strata_free(bin);
		bin = embed ? NULL : strata_context_binary(ctx[i], models[share ? 0 : i]);
		if (!embed && !bin) {
			status = tool_fail("out of memory");
			goto out;
		}
		struct stat st;
		if (bin && !share && stat(bin, &st) != 0) {
			status = tool_fail("%s: no binary at %s: %s", models[i], bin, strerror(errno));
			goto out;
		}
		json_t *line = json_pack("{s:s, s:s, s:o, s:o}", "model", models[i], "context", ctx[i],
		                         "binary", bin ? json_string(bin) : json_null(), "ms",
		                         strata_json_number("double", ms));
		if (!share) {
			if (print_line(line))
				status = 1;
			fflush(stdout);
		} else if (!line || json_array_append_new(lines, line)) {
			status = tool_fail("out of memory");
			goto out;
		}
	}
	if (share) {
		struct stat st;
		if (stat(bin, &st) != 0) {
			status = tool_fail("no shared binary at %s: %s", bin, strerror(errno));
			goto out;
		}
		size_t i;
		json_t *line;
		json_array_foreach(lines, i, line)
			print_line(json_incref(line));
		print_line(json_pack("{s:s, s:I, s:i}", "binary", bin, "bytes",
		                     (json_int_t)st.st_size, "models", n));
	}
out:
	for (int i = 0; i < n; i++)
		strata_free(ctx[i]);
	strata_free(bin);
	json_decref(lines);
	return status;
}
