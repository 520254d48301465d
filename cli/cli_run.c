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
 * with the values flat, in row-major order.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../engine/engine_int.h"
#include "../runtime/runtime.h"

#define MAX_INPUTS 64
#define MAX_MODELS 256

/* Find the shape of nested arrays j: returns 0, or -1 when ragged. */
static int shape_of(const json_t *j, int *rank, int64_t *dims)
{
	*rank = 0;
	const json_t *p = j;
	while (json_is_array(p)) {
		if (*rank == RT_MAX_RANK)
			return -1;
		dims[(*rank)++] = (int64_t)json_array_size(p);
		if (!json_array_size(p))
			break;
		p = json_array_get(p, 0);
	}
	return 0;
}

/* Copy the leaves of j (which must have shape dims) into cells of dtype. */
static int fill(const json_t *j, int depth, int rank, const int64_t *dims, int dtype, void *cells,
                size_t *k, const char *name)
{
	if (depth == rank) {
		if (json_is_boolean(j) && dtype == BASE_DT_BOOL) {
			((uint8_t *)cells)[(*k)++] = json_is_true(j);
			return 0;
		}
		if (!json_is_number(j))
			return eng_cli_fail("input '%s': expected numbers in nested arrays", name);
		if (dtype == BASE_DT_INT64)
			((int64_t *)cells)[*k] = json_is_integer(j) ? (int64_t)json_integer_value(j)
			                                            : (int64_t)json_number_value(j);
		else
			base_store_double(dtype, cells, *k, json_number_value(j));
		(*k)++;
		return 0;
	}
	if (!json_is_array(j) || (int64_t)json_array_size(j) != dims[depth])
		return eng_cli_fail("input '%s': the nested arrays are not rectangular", name);
	for (size_t i = 0; i < json_array_size(j); i++)
		if (fill(json_array_get(j, i), depth + 1, rank, dims, dtype, cells, k, name))
			return 1;
	return 0;
}

static json_t *output_json(const struct rt_tensor *t)
{
	json_t *o = json_object(), *shape = json_array(), *vals = json_array();
	int64_t n = runtime_tensor_count(t);
	json_object_set_new(o, "dtype", json_string(base_dtype_name(t->dtype)));
	for (int i = 0; i < t->rank; i++)
		json_array_append_new(shape, json_integer(t->dims[i]));
	for (int64_t i = 0; i < n; i++) {
		json_t *v;
		switch (t->dtype) {
		case BASE_DT_STRING:
			v = json_string(((char **)t->data)[i] ? ((char **)t->data)[i] : "");
			break;
		case BASE_DT_BOOL:
			v = json_boolean(((const uint8_t *)t->data)[i]);
			break;
		case BASE_DT_INT64:
			v = json_integer(((const int64_t *)t->data)[i]);
			break;
		case BASE_DT_UINT64:
			v = json_integer((json_int_t)((const uint64_t *)t->data)[i]);
			break;
		default:
			v = eng_json_number(t->dtype, base_load_double(t->dtype, t->data, (size_t)i));
		}
		json_array_append_new(vals, v);
	}
	json_object_set_new(o, "shape", shape);
	json_object_set_new(o, "values", vals);
	return o;
}

/* "float [batch,384]": a declared input or output type, for messages. */
static const char *type_text(const struct rt_value_info *info, char *buf, size_t cap)
{
	size_t n = (size_t)snprintf(buf, cap, "%s", base_dtype_name(info->dtype));
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
static json_t *info_json(const struct rt_value_info *info)
{
	static const char *const kinds[] = { "tensor", "sequence", "optional tensor",
		                             "optional sequence" };
	json_t *o = json_object();
	json_object_set_new(o, "name", json_string(info->name));
	if (info->kind > 0 && info->kind < 4)
		json_object_set_new(o, "kind", json_string(kinds[info->kind]));
	json_object_set_new(o, "dtype", json_string(base_dtype_name(info->dtype)));
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

int eng_cli_inspect(int argc, char **argv)
{
	if (argc != 2 || argv[1][0] == '-')
		return eng_cli_usage("inspect", argc < 2 ? "missing MODEL" : "unexpected argument '%s'",
		                     argv[argc < 2 ? 0 : argc - 1]);
	struct strata_error err = { 0 };
	struct rt_model *m;
	int rc = runtime_model_load(argv[1], &m, &err);
	if (rc)
		return eng_cli_fail("%s", err.msg[0] ? err.msg : strata_strerror(rc));
	json_t *top = json_object(), *ins = json_array(), *outs = json_array();
	for (int i = 0; i < runtime_model_ninputs(m); i++)
		json_array_append_new(ins, info_json(runtime_model_input(m, i)));
	for (int i = 0; i < runtime_model_noutputs(m); i++)
		json_array_append_new(outs, info_json(runtime_model_output(m, i)));
	json_object_set_new(top, "inputs", ins);
	json_object_set_new(top, "outputs", outs);
	runtime_model_free(m);
	char *s = eng_json_dump(top, 1);
	json_decref(top);
	if (!s)
		return eng_cli_fail("out of memory");
	puts(s);
	base_strfree(s);
	return 0;
}

static int by_seconds(const void *a, const void *b)
{
	double x = ((const struct rt_op_time *)a)->seconds, y = ((const struct rt_op_time *)b)->seconds;
	return (x < y) - (x > y);
}

/* Run cx again on in, profiled: {"run_ms": .., "profile": [{"op", "calls",
 * "ms"}, ...]} with the costliest type first, or NULL (err set). */
static json_t *profile_run(struct rt_ctx *cx, const struct rt_tensor *in, struct rt_tensor *out,
                           struct strata_error *err)
{
	if (runtime_ctx_profile(cx, 1, err) != 0)
		return NULL;
	double t0 = base_now();
	if (runtime_run(cx, in, out, err) != 0)
		return NULL;
	double took = base_now() - t0;
	int n;
	const struct rt_op_time *rows = runtime_ctx_profile_rows(cx, &n);
	struct rt_op_time sorted[RUNTIME_PROFILE_ROWS + 1];
	memcpy(sorted, rows, (size_t)n * sizeof *rows);
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

int eng_cli_run(int argc, char **argv)
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
				return eng_cli_usage("run", "option --input needs a value");
			if (ninputs == MAX_INPUTS)
				return eng_cli_usage("run", "too many --input options");
			inputs[ninputs++] = v;
		} else if (a[0] == '-' && a[1]) {
			return eng_cli_usage("run", "unknown option '%s'", a);
		} else if (!model) {
			model = a;
		} else {
			return eng_cli_usage("run", "unexpected argument '%s'", a);
		}
	}
	if (!model)
		return eng_cli_usage("run", "missing MODEL");
	struct strata_error err = { 0 };
	struct rt_model *m;
	int rc = runtime_model_load(model, &m, &err);
	if (rc)
		return eng_cli_fail("%s", err.msg[0] ? err.msg : strata_strerror(rc));
	int nin = runtime_model_ninputs(m), nout = runtime_model_noutputs(m);
	struct rt_tensor *in = base_calloc((size_t)nin + 1, sizeof *in);
	struct rt_tensor *out = base_calloc((size_t)nout + 1, sizeof *out);
	size_t *sizes = base_calloc((size_t)nin + 1, sizeof *sizes);
	struct rt_ctx *cx = NULL;
	int status = 1;
	if (!in || !out || !sizes) {
		eng_cli_fail("out of memory");
		goto out;
	}
	for (int k = 0; k < ninputs; k++) {
		const char *eq = strchr(inputs[k], '=');
		if (!eq) {
			status = eng_cli_usage("run", "--input needs NAME=JSON, got '%s'", inputs[k]);
			goto out;
		}
		char name[256];
		snprintf(name, sizeof name, "%.*s", (int)(eq - inputs[k]), inputs[k]);
		int idx = runtime_model_input_index(m, name);
		if (idx < 0) {
			eng_cli_fail("the model has no input '%s'", name);
			goto out;
		}
		const struct rt_value_info *info = runtime_model_input(m, idx);
		if (in[idx].data) {
			eng_cli_fail("input '%s' given twice", name);
			goto out;
		}
		json_error_t je;
		int oom;
		json_t *j = eng_json_parse(eq + 1, strlen(eq + 1), JSON_DECODE_ANY, &je, &oom);
		if (!j) {
			if (oom)
				eng_cli_fail("input '%s': out of memory", name);
			else
				eng_cli_fail("input '%s': invalid JSON: %s", name, je.text);
			goto out;
		}
		struct rt_tensor *t = &in[idx];
		t->dtype = info->dtype;
		if (!base_dtype_size(t->dtype) || t->dtype == BASE_DT_STRING) {
			json_decref(j);
			eng_cli_fail("input '%s': element type %s is not supported here", name,
			             base_dtype_name(t->dtype));
			goto out;
		}
		if (shape_of(j, &t->rank, t->dims)) {
			json_decref(j);
			eng_cli_fail("input '%s': too many dimensions", name);
			goto out;
		}
		size_t n = (size_t)runtime_tensor_count(t);
		sizes[idx] = (n ? n : 1) * base_dtype_size(t->dtype);
		t->data = base_calloc(1, sizes[idx]);
		size_t filled = 0;
		int bad = !t->data || fill(j, 0, t->rank, t->dims, t->dtype, t->data, &filled, name);
		json_decref(j);
		if (bad)
			goto out;
	}
	for (int i = 0; i < nin; i++)
		if (!in[i].data) {
			char ty[256];
			eng_cli_fail("input '%s' (%s) not given (--input %s=JSON)",
			             runtime_model_input(m, i)->name,
			             type_text(runtime_model_input(m, i), ty, sizeof ty),
			             runtime_model_input(m, i)->name);
			goto out;
		}
	if ((rc = runtime_ctx_new(m, &cx, &err)) != 0 || (rc = runtime_run(cx, in, out, &err)) != 0) {
		eng_cli_fail("%s", err.msg[0] ? err.msg : strata_strerror(rc));
		goto out;
	}
	json_t *prof = NULL;
	if (profile && (prof = profile_run(cx, in, out, &err)) == NULL) {
		eng_cli_fail("%s", err.msg);
		goto out;
	}
	json_t *top = json_object(), *outs = json_object();
	for (int i = 0; i < nout; i++) {
		const struct rt_value_info *info = runtime_model_output(m, i);
		json_object_set_new(outs, info->name, output_json(&out[i]));
	}
	json_object_set_new(top, "outputs", outs);
	if (prof)
		json_object_update_new(top, prof);
	char *s = eng_json_dump(top, 1);
	json_decref(top);
	if (!s) {
		eng_cli_fail("out of memory");
		goto out;
	}
	puts(s);
	base_strfree(s);
	status = 0;
out:
	if (cx)
		runtime_ctx_free(cx);
	for (int i = 0; in && sizes && i < nin; i++)
		if (in[i].data)
			base_free(in[i].data, sizes[i]);
	if (in)
		base_free(in, ((size_t)nin + 1) * sizeof *in);
	if (out)
		base_free(out, ((size_t)nout + 1) * sizeof *out);
	if (sizes)
		base_free(sizes, ((size_t)nin + 1) * sizeof *sizes);
	runtime_model_free(m);
	return status;
}

/* ---- strata compile ------------------------------------------------------------------
 * Each model is loaded with the runtime's context options (runtime.h) and
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
	char *s = j ? eng_json_dump(j, 0) : NULL;
	json_decref(j);
	if (!s)
		return eng_cli_fail("out of memory");
	puts(s);
	base_strfree(s);
	return 0;
}

/* Create dir unless it is a folder already. */
static int ensure_dir(const char *dir)
{
	struct stat st;
	if (stat(dir, &st) == 0 && !S_ISDIR(st.st_mode))
		return eng_cli_fail("%s: not a folder", dir);
	if (mkdir(dir, 0777) != 0 && errno != EEXIST)
		return eng_cli_fail("cannot create %s: %s", dir, strerror(errno));
	return 0;
}

int eng_cli_compile(int argc, char **argv)
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
				return eng_cli_usage("compile", "option %s needs a value", a);
			if (a[1] == 'o')
				outdir = argv[++i];
			else
				prefix = argv[++i];
		} else if (!strncmp(a, "--prefix=", 9)) {
			prefix = a + 9;
		} else if (a[0] == '-' && a[1]) {
			return eng_cli_usage("compile", "unknown option '%s'", a);
		} else if (n == MAX_MODELS) {
			return eng_cli_usage("compile", "more than %d models", MAX_MODELS);
		} else {
			models[n++] = a;
		}
	}
	if (!n)
		return eng_cli_usage("compile", "missing MODEL");
	if (share && embed)
		return eng_cli_usage("compile", "--share writes one binary file for all the models "
		                     "and --embed puts each binary inside its context model: choose one");
	if (outdir && !*outdir)
		return eng_cli_usage("compile", "-o needs a folder");

	char *ctx[MAX_MODELS] = { 0 };
	json_t *lines = json_array();
	char *bin = NULL;
	int status = 1;
	if (!lines) {
		eng_cli_fail("out of memory");
		goto out;
	}
	for (int i = 0; i < n; i++) {
		if (!(ctx[i] = eng_context_path(outdir, models[i]))) {
			eng_cli_fail("out of memory");
			goto out;
		}
		for (int j = 0; j < i; j++)
			if (!strcmp(ctx[i], ctx[j])) {
				eng_cli_fail("%s and %s would both write %s", models[j], models[i], ctx[i]);
				goto out;
			}
	}
	if (outdir && ensure_dir(outdir))
		goto out;
	status = 0;
	for (int i = 0; i < n; i++) {
		struct eng_compile c = { ctx[i], prefix, embed, share ? (i + 1 < n ? 1 : 2) : 0 };
		struct strata_error err = { 0 };
		char *written = NULL;
		double t0 = base_now();
		int rc = eng_compile_model(models[i], &c, &written, &err);
		double ms = floor((base_now() - t0) * 1e6 + 0.5) / 1e3;
		base_strfree(written); /* ctx[i], as asked */
		if (rc) {
			const char *msg = err.msg[0] ? err.msg : strata_strerror(rc);
			if (!strncmp(msg, models[i], strlen(models[i])))
				eng_cli_fail("%s", msg);
			else
				eng_cli_fail("%s: %s", models[i], msg);
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
		base_strfree(bin);
		bin = embed ? NULL : eng_context_binary(ctx[i], models[share ? 0 : i]);
		if (!embed && !bin) {
			status = eng_cli_fail("out of memory");
			goto out;
		}
		struct stat st;
		if (bin && !share && stat(bin, &st) != 0) {
			status = eng_cli_fail("%s: no binary at %s: %s", models[i], bin, strerror(errno));
			goto out;
		}
		json_t *line = json_pack("{s:s, s:s, s:o, s:o}", "model", models[i], "context", ctx[i],
		                         "binary", bin ? json_string(bin) : json_null(), "ms",
		                         eng_json_number(BASE_DT_DOUBLE, ms));
		if (!share) {
			if (print_line(line))
				status = 1;
			fflush(stdout);
		} else if (!line || json_array_append_new(lines, line)) {
			status = eng_cli_fail("out of memory");
			goto out;
		}
	}
	if (share) {
		struct stat st;
		if (stat(bin, &st) != 0) {
			status = eng_cli_fail("no shared binary at %s: %s", bin, strerror(errno));
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
		base_strfree(ctx[i]);
	base_strfree(bin);
	json_decref(lines);
	return status;
}
