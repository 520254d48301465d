/*
 * fuzz_onnx.c: the ONNX model loader (runtime/load.c, graph building,
 * kernel resolution, shape inference, optimization and planning, and the
 * compiled-context reader for an EPContext model whose binary is embedded).
 *
 * The input is the bytes of a model file, loaded from memory with no
 * folder (external data is refused).  A model that loads runs once on
 * inputs of its declared shapes (symbolic dimensions 1, cells zero or empty
 * strings; empty sequences; absent optionals) when they are small, and
 * every byte of each tensor it outputs is read.  A failed load or run is an
 * outcome; a crash, a sanitizer report or a leak is a finding.
 */
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define MAX_INPUT_BYTES ((size_t)1 << 20)
#define MAX_INPUTS 64

static volatile unsigned char sink;

/* The input for info: 0, or -1 when it is too large or of no known type.
 * Tensor cells are calloc'd into *mem (freed by the caller). */
static int make_input(const struct rt_value_info *info, struct rt_arg *a, void **mem)
{
	memset(a, 0, sizeof *a);
	*mem = NULL;
	if (info->kind == RT_KIND_OPTIONAL_TENSOR || info->kind == RT_KIND_OPTIONAL_SEQUENCE) {
		a->kind = RT_ARG_NONE;
		return 0;
	}
	if (info->kind == RT_KIND_SEQUENCE) {
		a->kind = RT_ARG_SEQUENCE;
		a->seq.dtype = info->dtype;
		return 0;
	}
	if (info->kind != RT_KIND_TENSOR)
		return -1;
	size_t esz = info->dtype == BASE_DT_STRING ? sizeof(char *) : base_dtype_size(info->dtype);
	if (!esz)
		return -1;
	struct rt_tensor *t = &a->tensor;
	a->kind = RT_ARG_TENSOR;
	t->dtype = info->dtype;
	t->rank = info->rank < 0 ? 0 : info->rank;
	size_t n = 1;
	for (int d = 0; d < t->rank; d++) {
		t->dims[d] = info->dims[d] < 0 ? 1 : info->dims[d];
		if (n && (size_t)t->dims[d] > MAX_INPUT_BYTES / esz / n)
			return -1;
		n *= (size_t)t->dims[d];
	}
	if (!(*mem = calloc(n + 1, esz)))
		fuzz_fail("out of memory");
	if (info->dtype == BASE_DT_STRING)
		for (size_t i = 0; i < n; i++)
			((const char **)*mem)[i] = "";
	t->data = *mem;
	return 0;
}

static void touch(const struct rt_tensor *t)
{
	int64_t n = runtime_tensor_count(t);
	size_t esz = t->dtype == BASE_DT_STRING ? sizeof(char *) : base_dtype_size(t->dtype);
	if (n < 0 || (n > 0 && !t->data))
		fuzz_fail("an output of %lld cells without data", (long long)n);
	const unsigned char *p = t->data;
	unsigned char s = 0;
	for (size_t i = 0; i < (size_t)n * esz; i++)
		s ^= p[i];
	if (t->dtype == BASE_DT_STRING)
		for (int64_t i = 0; i < n; i++)
			s ^= (unsigned char)strlen(((char *const *)t->data)[i]);
	sink = s;
}

static void run_once(const struct rt_model *m)
{
	int nin = runtime_model_ninputs(m), nout = runtime_model_noutputs(m);
	if (nin > MAX_INPUTS || nout > MAX_INPUTS)
		return;
	struct rt_arg in[MAX_INPUTS], out[MAX_INPUTS];
	void *mem[MAX_INPUTS] = { 0 };
	int ok = 1;
	size_t total = 0;
	for (int i = 0; i < nin && ok; i++) {
		ok = make_input(runtime_model_input(m, i), &in[i], &mem[i]) == 0;
		if (ok && in[i].kind == RT_ARG_TENSOR)
			total += (size_t)runtime_tensor_count(&in[i].tensor) *
			         base_dtype_size(in[i].tensor.dtype);
		ok = ok && total <= MAX_INPUT_BYTES;
	}
	struct strata_error err = { 0 };
	struct rt_ctx *cx;
	if (ok && runtime_ctx_new(m, &cx, &err) == 0) {
		memset(out, 0, sizeof out);
		if (runtime_run_args(cx, in, out, &err) == 0) {
			for (int i = 0; i < nout; i++) {
				if (out[i].kind == RT_ARG_TENSOR)
					touch(&out[i].tensor);
				else if (out[i].kind == RT_ARG_SEQUENCE)
					for (int k = 0; k < out[i].seq.count; k++)
						touch(&out[i].seq.items[k]);
			}
		}
		runtime_ctx_free(cx);
	}
	for (int i = 0; i < nin; i++)
		free(mem[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t live = fuzz_live_bytes();
	struct strata_error err = { 0 };
	struct rt_model *m;
	int rc = runtime_model_load_buffer(data, size, NULL, &m, &err);
	if (rc == 0) {
		run_once(m);
		runtime_model_free(m);
	} else if (err.code != rc) {
		fuzz_fail("load error %d reported as %d: %s", rc, err.code, err.msg);
	}
	fuzz_check_live(live, "onnx");
	return 0;
}
