/*
 * test_runtime.c: the runtime's core (loader, graph resolution, execution)
 * on models built in the test with tests/modelbuild.h.  Covers the decoding
 * of every initializer encoding, external data, input validation messages,
 * unknown ops, malformed files of every kind, the buffer pool (a warm run
 * allocates nothing), zero-size tensors and allocation failures.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "onnx.pb-c.h"
#include "../runtime/runtime_int.h"
#include "modelbuild.h"

/* ---- helpers -------------------------------------------------------------------- */

static int load_mb(struct mb_model *mb, const char *dir, struct rt_model **m,
                   struct strata_error *err)
{
	void *buf;
	size_t n;
	assert_int_equal(mb_serialize(mb, &buf, &n), 0);
	mb_free(mb);
	memset(err, 0, sizeof *err);
	int rc = runtime_model_load_buffer(buf, n, dir, m, err);
	free(buf);
	return rc;
}

static int has(const char *hay, const char *needle)
{
	if (!strstr(hay, needle)) {
		print_error("message \"%s\" lacks \"%s\"\n", hay, needle);
		return 0;
	}
	return 1;
}

static struct rt_tensor tensor2(int dt, int64_t d0, int64_t d1, void *data)
{
	struct rt_tensor t = { dt, 2, { d0, d1 }, data };
	return t;
}

/* y = x @ w + b with x [batch,4], w [4,2], b [2]. */
static struct mb_model *mlp(void)
{
	static const float w[8] = { 1, 0, 0, 1, 1, 1, -1, 2 };
	static const float b[2] = { 0.5f, -0.5f };
	struct mb_model *mb = mb_new("mlp", 17);
	mb_input(mb, "x", BASE_DT_FLOAT, 2, (int64_t[]){ -1, 4 }, (const char *[]){ "batch", "" });
	mb_init(mb, "w", BASE_DT_FLOAT, 2, (int64_t[]){ 4, 2 }, w);
	mb_init_typed(mb, "b", BASE_DT_FLOAT, 1, (int64_t[]){ 2 }, b);
	mb_node(mb, "MatMul", "x,w", "xw");
	mb_node(mb, "Add", "xw,b", "y");
	mb_output(mb, "y", BASE_DT_FLOAT, 2, (int64_t[]){ -1, 2 }, (const char *[]){ "batch", "" });
	return mb;
}

static void check_mlp_out(const float *x, int rows, const struct rt_tensor *y)
{
	static const float w[8] = { 1, 0, 0, 1, 1, 1, -1, 2 };
	assert_int_equal(y->dtype, BASE_DT_FLOAT);
	assert_int_equal(y->rank, 2);
	assert_int_equal(y->dims[0], rows);
	assert_int_equal(y->dims[1], 2);
	for (int r = 0; r < rows; r++)
		for (int c = 0; c < 2; c++) {
			float want = c ? -0.5f : 0.5f;
			for (int k = 0; k < 4; k++)
				want += x[r * 4 + k] * w[k * 2 + c];
			assert_float_equal(((float *)y->data)[r * 2 + c], want, 1e-5);
		}
}

/* ---- load and run ----------------------------------------------------------------- */

static void test_load_run(void **state)
{
	(void)state;
	struct rt_model *m;
	struct strata_error err;
	assert_int_equal(load_mb(mlp(), NULL, &m, &err), 0);
	assert_int_equal(runtime_model_ninputs(m), 1);
	assert_int_equal(runtime_model_noutputs(m), 1);
	const struct rt_value_info *in = runtime_model_input(m, 0);
	assert_string_equal(in->name, "x");
	assert_int_equal(in->rank, 2);
	assert_int_equal(in->dims[0], -1);
	assert_string_equal(in->dim_names[0], "batch");
	assert_int_equal(in->dims[1], 4);
	assert_int_equal(runtime_model_input_index(m, "x"), 0);
	assert_int_equal(runtime_model_input_index(m, "w"), -1);
	assert_int_equal(runtime_model_output_index(m, "y"), 0);
	assert_null(runtime_model_input(m, 1));

	struct rt_ctx *cx;
	assert_int_equal(runtime_ctx_new(m, &cx, &err), 0);
	float x[12] = { 1, 2, 3, 4, 0, 0, 0, 0, -1, 0.5f, 2, 8 };
	for (int rows = 1; rows <= 3; rows++) {
		struct rt_tensor t = tensor2(BASE_DT_FLOAT, rows, 4, x), y;
		assert_int_equal(runtime_run(cx, &t, &y, &err), 0);
		check_mlp_out(x, rows, &y);
	}
	runtime_ctx_free(cx);
	runtime_model_free(m);
}

/* Nodes listed out of order, a folded Constant node, and the model read from
 * a file. */
static void test_unsorted_and_constant(void **state)
{
	(void)state;
	char dir[] = "/tmp/strata_rt_XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[256];
	snprintf(path, sizeof path, "%s/m.onnx", dir);

	struct mb_model *mb = mb_new("unsorted", 13);
	mb_input(mb, "x", BASE_DT_FLOAT, 1, (int64_t[]){ 3 }, NULL);
	mb_node(mb, "Mul", "a,c", "y");
	mb_node(mb, "Add", "x,c", "a");
	struct mb_node *k = mb_node(mb, "Constant", "", "c");
	mb_attr_floats(k, "value_floats", 3, (float[]){ 1, 2, 3 });
	mb_output(mb, "y", BASE_DT_FLOAT, 1, (int64_t[]){ 3 }, NULL);
	assert_int_equal(mb_save(mb, path), 0);
	mb_free(mb);

	struct rt_model *m;
	struct strata_error err;
	assert_int_equal(runtime_model_load(path, &m, &err), 0);
	/* The Constant is a value, not a node. */
	assert_int_equal(m->g.nnodes, 2);
	assert_string_equal(m->g.nodes[0].op, "Add");
	struct rt_ctx *cx;
	assert_int_equal(runtime_ctx_new(m, &cx, &err), 0);
	float x[3] = { 1, 1, 1 };
	struct rt_tensor t = { BASE_DT_FLOAT, 1, { 3 }, x }, y;
	assert_int_equal(runtime_run(cx, &t, &y, &err), 0);
	assert_float_equal(((float *)y.data)[0], 2, 0);
	assert_float_equal(((float *)y.data)[1], 6, 0);
	assert_float_equal(((float *)y.data)[2], 12, 0);
	runtime_ctx_free(cx);
	runtime_model_free(m);
	unlink(path);
	rmdir(dir);
}

/* Every element type in raw_data and in the typed fields decodes to the
 * same cells; outputs that name constants come back as copies. */
static void test_initializer_encodings(void **state)
{
	(void)state;
	static const int types[] = {
		BASE_DT_FLOAT, BASE_DT_DOUBLE, BASE_DT_INT8, BASE_DT_UINT8, BASE_DT_INT16,
		BASE_DT_UINT16, BASE_DT_INT32, BASE_DT_INT64, BASE_DT_UINT32, BASE_DT_UINT64,
		BASE_DT_BOOL, BASE_DT_FLOAT16, BASE_DT_BFLOAT16,
	};
	enum { NT = sizeof types / sizeof types[0] };
	unsigned char cells[NT][6 * 8];
	struct mb_model *mb = mb_new("inits", 17);
	char names[NT][2][24];
	for (int i = 0; i < NT; i++) {
		size_t es = base_dtype_size(types[i]);
		for (size_t j = 0; j < 6 * es; j++)
			cells[i][j] = (unsigned char)(j * 37 + (size_t)i * 11 + 1);
		if (types[i] == BASE_DT_BOOL)
			for (int j = 0; j < 6; j++)
				cells[i][j] = (unsigned char)(j & 1);
		if (types[i] == BASE_DT_FLOAT || types[i] == BASE_DT_DOUBLE)
			for (int j = 0; j < 6; j++)
				base_store_double(types[i], cells[i], (size_t)j, j * 1.25 - 2);
		snprintf(names[i][0], 24, "raw%d", i);
		snprintf(names[i][1], 24, "typed%d", i);
		mb_init(mb, names[i][0], types[i], 2, (int64_t[]){ 2, 3 }, cells[i]);
		mb_init_typed(mb, names[i][1], types[i], 2, (int64_t[]){ 2, 3 }, cells[i]);
		mb_output(mb, names[i][0], types[i], 2, (int64_t[]){ 2, 3 }, NULL);
		mb_output(mb, names[i][1], types[i], 2, (int64_t[]){ 2, 3 }, NULL);
	}
	const char *strs[3] = { "alpha", "", "gamma" };
	mb_init_typed(mb, "s", BASE_DT_STRING, 1, (int64_t[]){ 3 }, strs);
	mb_output(mb, "s", BASE_DT_STRING, 1, (int64_t[]){ 3 }, NULL);

	struct rt_model *m;
	struct strata_error err;
	assert_int_equal(load_mb(mb, NULL, &m, &err), 0);
	struct rt_ctx *cx;
	assert_int_equal(runtime_ctx_new(m, &cx, &err), 0);
	struct rt_tensor out[2 * NT + 1];
	assert_int_equal(runtime_run(cx, NULL, out, &err), 0);
	for (int i = 0; i < NT; i++) {
		size_t es = base_dtype_size(types[i]);
		for (int e = 0; e < 2; e++) {
			const struct rt_tensor *t = &out[2 * i + e];
			assert_int_equal(t->dtype, types[i]);
			assert_int_equal(t->rank, 2);
			assert_int_equal(t->dims[0], 2);
			assert_int_equal(t->dims[1], 3);
			assert_memory_equal(t->data, cells[i], 6 * es);
		}
		/* A copy, not the model's own cells. */
		int v = m->g.outputs[2 * i];
		assert_ptr_not_equal(out[2 * i].data, m->g.values[v].konst->data);
	}
	assert_int_equal(out[2 * NT].dtype, BASE_DT_STRING);
	assert_string_equal(((char **)out[2 * NT].data)[0], "alpha");
	assert_string_equal(((char **)out[2 * NT].data)[1], "");
	assert_string_equal(((char **)out[2 * NT].data)[2], "gamma");
	runtime_ctx_free(cx);
	runtime_model_free(m);
}

/* ---- protobuf surgery for malformed models -------------------------------------- */

typedef void mutate_fn(Onnx__ModelProto *mp, void *ud);

/* Serialize mb, apply fn to the decoded message, re-serialize, load. */
static int load_mutated(struct mb_model *mb, mutate_fn *fn, void *ud, const char *dir,
                        struct rt_model **m, struct strata_error *err)
{
	void *buf;
	size_t n;
	assert_int_equal(mb_serialize(mb, &buf, &n), 0);
	mb_free(mb);
	Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, n, buf);
	assert_non_null(mp);
	free(buf);
	fn(mp, ud);
	n = onnx__model_proto__get_packed_size(mp);
	buf = malloc(n + 1);
	onnx__model_proto__pack(mp, buf);
	onnx__model_proto__free_unpacked(mp, NULL);
	memset(err, 0, sizeof *err);
	*m = NULL;
	int rc = runtime_model_load_buffer(buf, n, dir, m, err);
	free(buf);
	if (rc == 0)
		runtime_model_free(*m);
	return rc;
}

static struct mb_model *one_init(void)
{
	static const float w[6] = { 1, 2, 3, 4, 5, 6 };
	struct mb_model *mb = mb_new("one", 17);
	mb_init(mb, "w", BASE_DT_FLOAT, 2, (int64_t[]){ 2, 3 }, w);
	mb_output(mb, "w", BASE_DT_FLOAT, 2, (int64_t[]){ 2, 3 }, NULL);
	return mb;
}

static void set_kv(Onnx__StringStringEntryProto **e, const char *k, const char *v)
{
	*e = malloc(sizeof **e);
	onnx__string_string_entry_proto__init(*e);
	(*e)->key = strdup(k);
	(*e)->value = strdup(v);
}

struct ext {
	const char *location, *offset, *length;
};

/* Turn initializer 0 into external data. */
static void make_external(Onnx__ModelProto *mp, void *ud)
{
	const struct ext *e = ud;
	Onnx__TensorProto *t = mp->graph->initializer[0];
	free(t->raw_data.data);
	t->raw_data.data = NULL;
	t->raw_data.len = 0;
	t->has_raw_data = 0;
	t->has_data_location = 1;
	t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
	t->n_external_data = 0;
	t->external_data = malloc(3 * sizeof *t->external_data);
	set_kv(&t->external_data[t->n_external_data++], "location", e->location);
	if (e->offset)
		set_kv(&t->external_data[t->n_external_data++], "offset", e->offset);
	if (e->length)
		set_kv(&t->external_data[t->n_external_data++], "length", e->length);
}

static void test_external_data(void **state)
{
	(void)state;
	char dir[] = "/tmp/strata_rt_XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[256];
	snprintf(path, sizeof path, "%s/w.bin", dir);
	float cells[4 + 6] = { -1, -1, -1, -1, 1, 2, 3, 4, 5, 6 };
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	fwrite(cells, sizeof cells, 1, f);
	fclose(f);

	/* Good: offset 16 (aligned, read from the map) and 2 (copied). */
	struct strata_error err;
	struct rt_model *m;
	void *buf;
	size_t n;
	{
		struct mb_model *mb = one_init();
		assert_int_equal(mb_serialize(mb, &buf, &n), 0);
		mb_free(mb);
		Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, n, buf);
		free(buf);
		struct ext e = { "w.bin", "16", "24" };
		make_external(mp, &e);
		n = onnx__model_proto__get_packed_size(mp);
		buf = malloc(n);
		onnx__model_proto__pack(mp, buf);
		onnx__model_proto__free_unpacked(mp, NULL);
		assert_int_equal(runtime_model_load_buffer(buf, n, dir, &m, &err), 0);
		free(buf);
		struct rt_ctx *cx;
		struct rt_tensor out;
		assert_int_equal(runtime_ctx_new(m, &cx, &err), 0);
		assert_int_equal(runtime_run(cx, NULL, &out, &err), 0);
		assert_memory_equal(out.data, cells + 4, sizeof(float) * 6);
		runtime_ctx_free(cx);
		runtime_model_free(m);
	}
	struct ext bad_off = { "w.bin", "24", NULL };     /* runs past the end */
	assert_int_equal(load_mutated(one_init(), make_external, &bad_off, dir, &m, &err),
	                 STRATA_INVALID_GRAPH);
	assert_true(has(err.msg, "beyond the end"));
	struct ext bad_len = { "w.bin", "0", "20" };      /* length is not 24 */
	assert_int_equal(load_mutated(one_init(), make_external, &bad_len, dir, &m, &err),
	                 STRATA_INVALID_GRAPH);
	assert_true(has(err.msg, "length"));
	struct ext escape = { "../w.bin", "0", NULL };
	assert_int_equal(load_mutated(one_init(), make_external, &escape, dir, &m, &err),
	                 STRATA_INVALID_GRAPH);
	assert_true(has(err.msg, "leaves the model's folder"));
	struct ext missing = { "nope.bin", "0", NULL };
	int rc = load_mutated(one_init(), make_external, &missing, dir, &m, &err);
	assert_true(rc > 0); /* errno: the file cannot be opened */
	assert_true(has(err.msg, "nope.bin"));
	struct ext nodir = { "w.bin", "0", NULL };
	assert_int_equal(load_mutated(one_init(), make_external, &nodir, NULL, &m, &err),
	                 STRATA_INVALID_GRAPH);
	struct ext garbage_off = { "w.bin", "12x", NULL };
	assert_int_equal(load_mutated(one_init(), make_external, &garbage_off, dir, &m, &err),
	                 STRATA_INVALID_GRAPH);
	unlink(path);
	rmdir(dir);
}

static void raw_short(Onnx__ModelProto *mp, void *ud)
{
	(void)ud;
	mp->graph->initializer[0]->raw_data.len -= 4;
}

static void neg_dim(Onnx__ModelProto *mp, void *ud)
{
	(void)ud;
	mp->graph->initializer[0]->dims[1] = -3;
}

static void huge_dims(Onnx__ModelProto *mp, void *ud)
{
	(void)ud;
	mp->graph->initializer[0]->dims[0] = INT64_MAX / 2;
	mp->graph->initializer[0]->dims[1] = INT64_MAX / 2;
}

static void no_graph(Onnx__ModelProto *mp, void *ud)
{
	(void)ud;
	onnx__graph_proto__free_unpacked(mp->graph, NULL);
	mp->graph = NULL;
}

static void bad_dtype(Onnx__ModelProto *mp, void *ud)
{
	(void)ud;
	mp->graph->initializer[0]->data_type = *(int *)ud;
}

static void test_malformed_tensors(void **state)
{
	(void)state;
	struct rt_model *m;
	struct strata_error err;
	assert_int_equal(load_mutated(one_init(), raw_short, NULL, NULL, &m, &err),
	                 STRATA_INVALID_GRAPH);
	assert_true(has(err.msg, "raw_data holds 20 bytes, its shape needs 24"));
	assert_int_equal(load_mutated(one_init(), neg_dim, NULL, NULL, &m, &err),
	                 STRATA_INVALID_GRAPH);
	assert_true(has(err.msg, "negative dimension"));
	assert_int_equal(load_mutated(one_init(), huge_dims, NULL, NULL, &m, &err),
	                 STRATA_INVALID_GRAPH);
	assert_true(has(err.msg, "too large"));
	assert_int_equal(load_mutated(one_init(), no_graph, NULL, NULL, &m, &err),
	                 STRATA_INVALID_PROTOBUF);
	assert_true(has(err.msg, "no graph"));
	int dt = 0;
	assert_int_equal(load_mutated(one_init(), bad_dtype, &dt, NULL, &m, &err),
	                 STRATA_INVALID_GRAPH);
	dt = BASE_DT_COMPLEX64;
	assert_int_equal(load_mutated(one_init(), bad_dtype, &dt, NULL, &m, &err),
	                 STRATA_NOT_IMPLEMENTED);
	dt = 9999;
	assert_int_equal(load_mutated(one_init(), bad_dtype, &dt, NULL, &m, &err),
	                 STRATA_NOT_IMPLEMENTED);
	/* Typed field with the wrong count. */
	struct mb_model *mb = mb_new("typed", 17);
	mb_init_typed(mb, "w", BASE_DT_INT64, 1, (int64_t[]){ 2 }, (int64_t[]){ 1, 2 });
	mb_output(mb, "w", BASE_DT_INT64, 1, (int64_t[]){ 2 }, NULL);
	struct rt_model *ok;
	assert_int_equal(load_mb(mb, NULL, &ok, &err), 0);
	runtime_model_free(ok);
}

/* ---- malformed bytes -------------------------------------------------------------------- */

static void test_garbage_and_truncation(void **state)
{
	(void)state;
	struct rt_model *m;
	struct strata_error err;
	/* An empty buffer is an empty ModelProto: no graph. */
	assert_int_equal(runtime_model_load_buffer("", 0, NULL, &m, &err), STRATA_INVALID_PROTOBUF);

	unsigned seed = 12345;
	unsigned char junk[512];
	for (int round = 0; round < 300; round++) {
		size_t n = 1 + (size_t)round % sizeof junk;
		for (size_t i = 0; i < n; i++) {
			seed = seed * 1103515245u + 12345u;
			junk[i] = (unsigned char)(seed >> 16);
		}
		int rc = runtime_model_load_buffer(junk, n, NULL, &m, &err);
		assert_true(rc == STRATA_INVALID_PROTOBUF || rc == STRATA_INVALID_GRAPH ||
		            rc == STRATA_NOT_IMPLEMENTED);
	}

	void *buf;
	size_t n;
	struct mb_model *mb = mlp();
	struct mb_node *k = mb_node(mb, "Constant", "", "c");
	mb_attr_tensor(k, "value", BASE_DT_INT64, 1, (int64_t[]){ 2 }, (int64_t[]){ 3, 4 });
	mb_output(mb, "c", BASE_DT_INT64, 1, (int64_t[]){ 2 }, NULL);
	assert_int_equal(mb_serialize(mb, &buf, &n), 0);
	mb_free(mb);
	int ok = 0;
	for (size_t len = 0; len < n; len++) {
		/* A private copy of exactly len bytes, so ASan sees any overread. */
		unsigned char *cut = malloc(len + 1);
		memcpy(cut, buf, len);
		int rc = runtime_model_load_buffer(cut, len, NULL, &m, &err);
		free(cut);
		if (rc == 0) {
			/* Cut at a field boundary: still a valid (smaller) model. */
			runtime_model_free(m);
			ok++;
			continue;
		}
		assert_true(rc == STRATA_INVALID_PROTOBUF || rc == STRATA_INVALID_GRAPH ||
		            rc == STRATA_NOT_IMPLEMENTED);
		assert_int_equal(err.code, rc);
		assert_true(err.msg[0] != 0);
	}
	assert_true(ok < (int)n / 4);
	/* Every byte flipped in turn: a clean error or a model that still loads. */
	unsigned char *flip = malloc(n);
	for (size_t i = 0; i < n; i++) {
		static const unsigned char masks[3] = { 0xff, 0x80, 0x01 };
		for (int j = 0; j < 3; j++) {
			memcpy(flip, buf, n);
			flip[i] ^= masks[j];
			int rc = runtime_model_load_buffer(flip, n, NULL, &m, &err);
			if (rc == 0)
				runtime_model_free(m);
			else
				assert_true(rc == STRATA_INVALID_PROTOBUF || rc == STRATA_INVALID_GRAPH ||
				            rc == STRATA_NOT_IMPLEMENTED);
		}
	}
	free(flip);
	assert_int_equal(runtime_model_load_buffer(buf, n, NULL, &m, &err), 0);
	runtime_model_free(m);
	free(buf);
}

static void test_graph_errors(void **state)
{
	(void)state;
	struct rt_model *m;
	struct strata_error err;

	struct mb_model *mb = mb_new("dangling", 17);
	mb_input(mb, "x", BASE_DT_FLOAT, 1, (int64_t[]){ 3 }, NULL);
	mb_node(mb, "Add", "x,ghost", "y");
	mb_output(mb, "y", BASE_DT_FLOAT, 1, (int64_t[]){ 3 }, NULL);
	assert_int_equal(load_mb(mb, NULL, &m, &err), STRATA_INVALID_GRAPH);
	assert_true(has(err.msg, "\"ghost\""));

	mb = mb_new("cycle", 17);
	mb_input(mb, "x", BASE_DT_FLOAT, 1, (int64_t[]){ 3 }, NULL);
	mb_node(mb, "Add", "x,b", "a");
	mb_node(mb, "Add", "a,x", "b");
	mb_node(mb, "Add", "x,x", "y");
	mb_output(mb, "y", BASE_DT_FLOAT, 1, (int64_t[]){ 3 }, NULL);
	assert_int_equal(load_mb(mb, NULL, &m, &err), STRATA_INVALID_GRAPH);
	assert_true(has(err.msg, "cycle"));

	mb = mb_new("twice", 17);
	mb_input(mb, "x", BASE_DT_FLOAT, 1, (int64_t[]){ 3 }, NULL);
	mb_node(mb, "Add", "x,x", "y");
	mb_node(mb, "Mul", "x,x", "y");
	mb_output(mb, "y", BASE_DT_FLOAT, 1, (int64_t[]){ 3 }, NULL);
	assert_int_equal(load_mb(mb, NULL, &m, &err), STRATA_INVALID_GRAPH);
	assert_true(has(err.msg, "\"y\""));

	mb = mb_new("noout", 17);
	mb_input(mb, "x", BASE_DT_FLOAT, 1, (int64_t[]){ 3 }, NULL);
	mb_node(mb, "Add", "x,x", "y");
	mb_output(mb, "z", BASE_DT_FLOAT, 1, (int64_t[]){ 3 }, NULL);
	assert_int_equal(load_mb(mb, NULL, &m, &err), STRATA_INVALID_GRAPH);
	assert_true(has(err.msg, "\"z\""));

	mb = mb_new("foreign", 17);
	mb_input(mb, "x", BASE_DT_FLOAT, 1, (int64_t[]){ 3 }, NULL);
	mb_node_domain(mb_node(mb, "Add", "x,x", "y"), "com.example");
	mb_output(mb, "y", BASE_DT_FLOAT, 1, (int64_t[]){ 3 }, NULL);
	assert_int_equal(load_mb(mb, NULL, &m, &err), STRATA_INVALID_GRAPH);
	assert_true(has(err.msg, "com.example"));
}

static void test_not_implemented(void **state)
{
	(void)state;
	struct rt_model *m;
	struct strata_error err;
	struct mb_model *mb = mb_new("foo", 17);
	mb_input(mb, "x", BASE_DT_FLOAT, 1, (int64_t[]){ 3 }, NULL);
	mb_node(mb, "Foo", "x", "y");
	mb_output(mb, "y", BASE_DT_FLOAT, 1, (int64_t[]){ 3 }, NULL);
	assert_int_equal(load_mb(mb, NULL, &m, &err), STRATA_NOT_IMPLEMENTED);
	assert_true(has(err.msg, "op \"Foo\" (domain ai.onnx, opset 17) is not implemented"));

	/* BitwiseAnd arrived in opset 18. */
	mb = mb_new("early", 17);
	mb_input(mb, "x", BASE_DT_INT32, 1, (int64_t[]){ 3 }, NULL);
	mb_node(mb, "BitwiseAnd", "x,x", "y");
	mb_output(mb, "y", BASE_DT_INT32, 1, (int64_t[]){ 3 }, NULL);
	assert_int_equal(load_mb(mb, NULL, &m, &err), STRATA_NOT_IMPLEMENTED);
	assert_true(has(err.msg, "opset 17"));
	assert_true(has(err.msg, "other opsets"));

	mb = mb_new("ms", 17);
	mb_opset(mb, "com.microsoft", 1);
	mb_input(mb, "x", BASE_DT_FLOAT, 1, (int64_t[]){ 3 }, NULL);
	mb_node_domain(mb_node(mb, "FusedGemm", "x,x", "y"), "com.microsoft");
	mb_output(mb, "y", BASE_DT_FLOAT, 1, (int64_t[]){ 3 }, NULL);
	assert_int_equal(load_mb(mb, NULL, &m, &err), STRATA_NOT_IMPLEMENTED);
	assert_true(has(err.msg, "op \"FusedGemm\" (domain com.microsoft, opset 1)"));
}

/* ---- input validation -------------------------------------------------------------------- */

static void test_input_validation(void **state)
{
	(void)state;
	struct rt_model *m;
	struct strata_error err;
	struct mb_model *mb = mb_new("sym", 17);
	mb_input(mb, "query", BASE_DT_FLOAT, 2, (int64_t[]){ -1, 4 }, (const char *[]){ "batch", "" });
	mb_input(mb, "doc", BASE_DT_FLOAT, 2, (int64_t[]){ -1, 4 }, (const char *[]){ "batch", "" });
	mb_node(mb, "Add", "query,doc", "y");
	mb_output(mb, "y", BASE_DT_FLOAT, 2, (int64_t[]){ -1, 4 }, (const char *[]){ "batch", "" });
	assert_int_equal(load_mb(mb, NULL, &m, &err), 0);
	struct rt_ctx *cx;
	assert_int_equal(runtime_ctx_new(m, &cx, &err), 0);
	float a[16] = { 0 }, b[16] = { 0 };
	struct rt_tensor in[2], out;

	in[0] = tensor2(BASE_DT_FLOAT, 2, 4, a);
	in[1] = tensor2(BASE_DT_FLOAT, 2, 3, b);
	assert_int_equal(runtime_run(cx, in, &out, &err), STRATA_INVALID_ARGUMENT);
	assert_true(has(err.msg, "input \"doc\""));
	assert_true(has(err.msg, "expected float [batch,4], given float [2,3]"));

	in[1] = tensor2(BASE_DT_FLOAT, 3, 4, b);
	assert_int_equal(runtime_run(cx, in, &out, &err), STRATA_INVALID_ARGUMENT);
	assert_true(has(err.msg, "input \"doc\""));
	assert_true(has(err.msg, "\"batch\" is 3 here but 2 in input \"query\""));

	in[1] = tensor2(BASE_DT_INT64, 2, 4, b);
	assert_int_equal(runtime_run(cx, in, &out, &err), STRATA_INVALID_ARGUMENT);
	assert_true(has(err.msg, "given int64 [2,4]"));

	in[1] = (struct rt_tensor){ BASE_DT_FLOAT, 1, { 8 }, b };
	assert_int_equal(runtime_run(cx, in, &out, &err), STRATA_INVALID_ARGUMENT);
	assert_true(has(err.msg, "given float [8]"));

	in[1] = tensor2(BASE_DT_FLOAT, 2, 4, NULL);
	assert_int_equal(runtime_run(cx, in, &out, &err), STRATA_INVALID_ARGUMENT);
	assert_true(has(err.msg, "no data"));

	in[1] = tensor2(BASE_DT_FLOAT, -2, 4, b);
	assert_int_equal(runtime_run(cx, in, &out, &err), STRATA_INVALID_ARGUMENT);

	/* After failures the context still works. */
	a[0] = 1.5f;
	b[0] = 2;
	in[1] = tensor2(BASE_DT_FLOAT, 2, 4, b);
	assert_int_equal(runtime_run(cx, in, &out, &err), 0);
	assert_float_equal(((float *)out.data)[0], 3.5f, 0);
	runtime_ctx_free(cx);
	runtime_model_free(m);
}

/* A kernel failure names the node. */
static void test_kernel_error(void **state)
{
	(void)state;
	struct rt_model *m;
	struct strata_error err;
	struct mb_model *mb = mb_new("bcast", 17);
	mb_input(mb, "a", BASE_DT_FLOAT, 1, (int64_t[]){ -1 }, (const char *[]){ "n" });
	mb_input(mb, "b", BASE_DT_FLOAT, 1, (int64_t[]){ -1 }, (const char *[]){ "m" });
	mb_node(mb, "Add", "a,b", "y");
	mb_output(mb, "y", BASE_DT_FLOAT, 1, (int64_t[]){ -1 }, NULL);
	assert_int_equal(load_mb(mb, NULL, &m, &err), 0);
	struct rt_ctx *cx;
	assert_int_equal(runtime_ctx_new(m, &cx, &err), 0);
	float a[4] = { 0 }, b[4] = { 0 };
	struct rt_tensor in[2] = { { BASE_DT_FLOAT, 1, { 3 }, a }, { BASE_DT_FLOAT, 1, { 4 }, b } };
	struct rt_tensor out;
	int rc = runtime_run(cx, in, &out, &err);
	assert_true(rc != 0);
	assert_true(has(err.msg, "(Add)"));
	in[1].dims[0] = 3;
	assert_int_equal(runtime_run(cx, in, &out, &err), 0);
	assert_int_equal(out.dims[0], 3);
	runtime_ctx_free(cx);
	runtime_model_free(m);
}

/* ---- the buffer pool ------------------------------------------------------------------------- */

static void test_warm_run_allocates_nothing(void **state)
{
	(void)state;
	struct rt_model *m;
	struct strata_error err;
	struct mb_model *mb = mlp();
	/* A chain of intermediates so that buffers are released and reused. */
	mb_node(mb, "Relu", "y", "r1");
	mb_node(mb, "Sigmoid", "r1", "r2");
	mb_node(mb, "Mul", "r2,y", "r3");
	mb_output(mb, "r3", BASE_DT_FLOAT, 2, (int64_t[]){ -1, 2 }, NULL);
	mb_output(mb, "x", BASE_DT_FLOAT, 2, (int64_t[]){ -1, 4 }, NULL);
	assert_int_equal(load_mb(mb, NULL, &m, &err), 0);
	struct rt_ctx *cx;
	assert_int_equal(runtime_ctx_new(m, &cx, &err), 0);
	float x[64];
	for (int i = 0; i < 64; i++)
		x[i] = (float)(i % 7) - 3;
	struct rt_tensor in = tensor2(BASE_DT_FLOAT, 16, 4, x), out[3];
	assert_int_equal(runtime_run(cx, &in, out, &err), 0);
	uint64_t before = base_alloc_thread_count();
	for (int i = 0; i < 3; i++)
		assert_int_equal(runtime_run(cx, &in, out, &err), 0);
	assert_int_equal(base_alloc_thread_count(), before);
	check_mlp_out(x, 16, &out[0]);
	/* The input that is also an output comes back as a copy. */
	assert_ptr_not_equal(out[2].data, x);
	assert_memory_equal(out[2].data, x, sizeof x);
	/* A smaller batch is another input-shape class: its first run records a
	 * plan, and from then on runs of either class allocate nothing. */
	in.dims[0] = 5;
	assert_int_equal(runtime_run(cx, &in, out, &err), 0);
	check_mlp_out(x, 5, &out[0]);
	in.dims[0] = 16;
	assert_int_equal(runtime_run(cx, &in, out, &err), 0);
	before = base_alloc_thread_count();
	for (int i = 0; i < 4; i++) {
		in.dims[0] = i % 2 ? 16 : 5;
		assert_int_equal(runtime_run(cx, &in, out, &err), 0);
		check_mlp_out(x, in.dims[0], &out[0]);
	}
	assert_int_equal(base_alloc_thread_count(), before);
	runtime_ctx_free(cx);
	runtime_model_free(m);
}

static void test_zero_size(void **state)
{
	(void)state;
	struct rt_model *m;
	struct strata_error err;
	assert_int_equal(load_mb(mlp(), NULL, &m, &err), 0);
	struct rt_ctx *cx;
	assert_int_equal(runtime_ctx_new(m, &cx, &err), 0);
	float dummy;
	struct rt_tensor in = tensor2(BASE_DT_FLOAT, 0, 4, &dummy), out;
	assert_int_equal(runtime_run(cx, &in, &out, &err), 0);
	assert_int_equal(out.rank, 2);
	assert_int_equal(out.dims[0], 0);
	assert_int_equal(out.dims[1], 2);
	in.data = NULL; /* no cells: no data needed */
	assert_int_equal(runtime_run(cx, &in, &out, &err), 0);
	runtime_ctx_free(cx);
	runtime_model_free(m);
}

/* Every allocation of a load and a run may fail: the result is NOMEM (or
 * success), never a crash or a leak (checked under ASan). */
static void test_alloc_failures(void **state)
{
	(void)state;
	void *buf;
	size_t n;
	struct mb_model *mb = mlp();
	assert_int_equal(mb_serialize(mb, &buf, &n), 0);
	mb_free(mb);
	float x[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	int succeeded = 0;
	for (long k = 1; k < 400 && !succeeded; k++) {
		struct rt_model *m = NULL;
		struct rt_ctx *cx = NULL;
		struct strata_error err;
		base_alloc_fail_after(k);
		int rc = runtime_model_load_buffer(buf, n, NULL, &m, &err);
		if (rc == 0)
			rc = runtime_ctx_new(m, &cx, &err);
		if (rc == 0) {
			struct rt_tensor in = tensor2(BASE_DT_FLOAT, 2, 4, x), out;
			rc = runtime_run(cx, &in, &out, &err);
			if (rc == 0) {
				check_mlp_out(x, 2, &out);
				succeeded = 1;
			}
		}
		base_alloc_fail_after(0);
		if (rc != 0)
			assert_int_equal(rc, STRATA_NOMEM);
		runtime_ctx_free(cx);
		runtime_model_free(m);
	}
	assert_true(succeeded);
	free(buf);
}

/* One load (and a run) of the model at path with options o, failing at the
 * k-th allocation (k 0: none); returns its code, and checks that a failure
 * says so ("out of memory: ...") and that nothing stays allocated. */
static int load_failing_at(const char *path, const struct rt_options *o, long k)
{
	struct base_alloc_stats before, after;
	base_alloc_stats(&before);
	struct rt_model *m = NULL;
	struct rt_ctx *cx = NULL;
	struct strata_error err;
	float x[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	base_alloc_fail_after(k);
	int rc = runtime_model_load_opts(path, o, &m, &err);
	if (rc == 0)
		rc = runtime_ctx_new(m, &cx, &err);
	if (rc == 0) {
		struct rt_tensor in = tensor2(BASE_DT_FLOAT, 2, 4, x), out;
		if ((rc = runtime_run(cx, &in, &out, &err)) == 0)
			check_mlp_out(x, 2, &out);
	}
	base_alloc_fail_after(0);
	if (rc != 0) {
		assert_int_equal(rc, STRATA_NOMEM);
		assert_non_null(strstr(err.msg, "out of memory: "));
	}
	runtime_ctx_free(cx);
	runtime_model_free(m);
	base_alloc_stats(&after);
	assert_int_equal(after.live_bytes, before.live_bytes);
	return rc;
}

/* Every allocation of a load from a file can fail, with a buffer pool and a
 * compiled context written beside the model: each failure is reported as
 * such and frees everything the load had made. */
static void test_load_failures_free_everything(void **state)
{
	(void)state;
	char dir[] = "/tmp/strata_rtfail_XXXXXX", path[256];
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/mlp.onnx", dir);
	void *buf;
	size_t n;
	struct mb_model *mb = mlp();
	assert_int_equal(mb_serialize(mb, &buf, &n), 0);
	mb_free(mb);
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, n, f), n);
	fclose(f);
	free(buf);

	struct strata_error err;
	struct rt_options *plain, *pooled, *compile;
	assert_int_equal(runtime_options_new(&plain, &err), 0);
	assert_int_equal(runtime_options_new(&pooled, &err), 0);
	assert_int_equal(runtime_options_set(pooled, "session.buffer_pool_generations", "2", &err), 0);
	assert_int_equal(runtime_options_new(&compile, &err), 0);
	assert_int_equal(runtime_options_set(compile, "ep.context_enable", "1", &err), 0);
	assert_int_equal(runtime_options_set(compile, "ep.context_embed_mode", "0", &err), 0);
	const struct rt_options *all[] = { plain, pooled, compile };
	for (size_t i = 0; i < 3; i++) {
		/* A clean load counts the allocations to fail. */
		struct base_alloc_stats a, b;
		base_alloc_stats(&a);
		assert_int_equal(load_failing_at(path, all[i], 0), 0);
		base_alloc_stats(&b);
		long total = (long)(b.allocs - a.allocs);
		assert_true(total > 10);
		int failed = 0;
		for (long k = 1; k <= total; k++)
			failed += load_failing_at(path, all[i], k) != 0;
		/* A few allocations may fail harmlessly (a cache not kept), most not. */
		assert_true(failed > total / 2);
	}
	runtime_options_free(plain);
	runtime_options_free(pooled);
	runtime_options_free(compile);
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

/* Constant nodes of every attribute kind become constants; an initializer
 * listed among the inputs (as old exporters did) is not an input; a model
 * without opset_import is at opset 1. */
static void add_init_as_input(Onnx__ModelProto *mp, void *ud)
{
	(void)ud;
	Onnx__GraphProto *g = mp->graph;
	g->input = realloc(g->input, (g->n_input + 1) * sizeof *g->input);
	Onnx__ValueInfoProto *vi = malloc(sizeof *vi);
	onnx__value_info_proto__init(vi);
	vi->name = strdup(g->initializer[0]->name);
	g->input[g->n_input++] = vi;
}

static void drop_opsets(Onnx__ModelProto *mp, void *ud)
{
	*(int *)ud = (int)mp->n_opset_import;
	for (size_t i = 0; i < mp->n_opset_import; i++)
		onnx__operator_set_id_proto__free_unpacked(mp->opset_import[i], NULL);
	free(mp->opset_import);
	mp->opset_import = NULL;
	mp->n_opset_import = 0;
}

static void test_constants_and_old_models(void **state)
{
	(void)state;
	struct rt_model *m;
	struct strata_error err;
	struct mb_model *mb = mb_new("consts", 13);
	mb_attr_int(mb_node(mb, "Constant", "", "ci"), "value_int", -7);
	mb_attr_ints(mb_node(mb, "Constant", "", "cis"), "value_ints", 3, (int64_t[]){ 1, 2, 3 });
	mb_attr_float(mb_node(mb, "Constant", "", "cf"), "value_float", 0.25f);
	mb_attr_string(mb_node(mb, "Constant", "", "cs"), "value_string", "hello");
	mb_attr_tensor(mb_node(mb, "Constant", "", "ct"), "value", BASE_DT_INT32, 2,
	               (int64_t[]){ 1, 2 }, (int32_t[]){ 40, 41 });
	mb_output(mb, "ci", BASE_DT_INT64, 0, NULL, NULL);
	mb_output(mb, "cis", BASE_DT_INT64, 1, (int64_t[]){ 3 }, NULL);
	mb_output(mb, "cf", BASE_DT_FLOAT, 0, NULL, NULL);
	mb_output(mb, "cs", BASE_DT_STRING, 0, NULL, NULL);
	mb_output(mb, "ct", BASE_DT_INT32, 2, (int64_t[]){ 1, 2 }, NULL);
	assert_int_equal(load_mb(mb, NULL, &m, &err), 0);
	assert_int_equal(m->g.nnodes, 0);
	struct rt_ctx *cx;
	assert_int_equal(runtime_ctx_new(m, &cx, &err), 0);
	struct rt_tensor o[5];
	assert_int_equal(runtime_run(cx, NULL, o, &err), 0);
	assert_int_equal(o[0].rank, 0);
	assert_int_equal(*(int64_t *)o[0].data, -7);
	assert_int_equal(o[1].rank, 1);
	assert_int_equal(((int64_t *)o[1].data)[2], 3);
	assert_float_equal(*(float *)o[2].data, 0.25f, 0);
	assert_string_equal(*(char **)o[3].data, "hello");
	assert_int_equal(o[4].dims[1], 2);
	assert_int_equal(((int32_t *)o[4].data)[1], 41);
	runtime_ctx_free(cx);
	runtime_model_free(m);

	/* Two attributes on a Constant is malformed. */
	mb = mb_new("twoattrs", 13);
	struct mb_node *k = mb_node(mb, "Constant", "", "c");
	mb_attr_int(k, "value_int", 1);
	mb_attr_float(k, "value_float", 1);
	mb_output(mb, "c", BASE_DT_INT64, 0, NULL, NULL);
	assert_int_equal(load_mb(mb, NULL, &m, &err), STRATA_INVALID_GRAPH);

	/* The initializer listed as an input stays a constant. */
	mb = mlp();
	void *buf;
	size_t n;
	assert_int_equal(mb_serialize(mb, &buf, &n), 0);
	mb_free(mb);
	Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, n, buf);
	free(buf);
	add_init_as_input(mp, NULL);
	n = onnx__model_proto__get_packed_size(mp);
	buf = malloc(n);
	onnx__model_proto__pack(mp, buf);
	onnx__model_proto__free_unpacked(mp, NULL);
	assert_int_equal(runtime_model_load_buffer(buf, n, NULL, &m, &err), 0);
	free(buf);
	assert_int_equal(runtime_model_ninputs(m), 1);
	assert_string_equal(runtime_model_input(m, 0)->name, "x");
	assert_int_equal(m->opset, 17);
	runtime_model_free(m);

	/* No opset_import at all: the default domain is at opset 1. */
	int had = 0;
	mb = mb_new("old", 17);
	mb_input(mb, "x", BASE_DT_INT32, 1, (int64_t[]){ 3 }, NULL);
	mb_node(mb, "BitwiseAnd", "x,x", "y");
	mb_output(mb, "y", BASE_DT_INT32, 1, (int64_t[]){ 3 }, NULL);
	assert_int_equal(load_mutated(mb, drop_opsets, &had, NULL, &m, &err),
	                 STRATA_NOT_IMPLEMENTED);
	assert_true(had > 0);
	assert_true(has(err.msg, "opset 1)"));
}

/* A declared output type the graph does not produce is refused at load. */
static void test_output_type_mismatch(void **state)
{
	(void)state;
	struct rt_model *m;
	struct strata_error err;
	struct mb_model *mb = mb_new("mismatch", 17);
	mb_input(mb, "x", BASE_DT_FLOAT, 1, (int64_t[]){ 3 }, NULL);
	mb_node(mb, "Add", "x,x", "y");
	mb_output(mb, "y", BASE_DT_INT64, 1, (int64_t[]){ 3 }, NULL);
	assert_int_equal(load_mb(mb, NULL, &m, &err), STRATA_INVALID_GRAPH);
	assert_true(has(err.msg, "output \"y\" is declared int64 but its producer makes float"));
}

/* ---- test data tensors ------------------------------------------------------------------------- */

static void test_tensor_pb(void **state)
{
	(void)state;
	char dir[] = "/tmp/strata_rt_XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[256];
	snprintf(path, sizeof path, "%s/input_0.pb", dir);
	int64_t v[3] = { 7, -8, 9 };
	assert_int_equal(mb_save_tensor(path, "ids", BASE_DT_INT64, 1, (int64_t[]){ 3 }, v), 0);
	struct rt_blocks bl = { 0 };
	struct rt_tensor t;
	const char *name;
	struct strata_error err;
	assert_int_equal(rt_tensor_from_pb_file(path, &t, &name, &bl, &err), 0);
	assert_string_equal(name, "ids");
	assert_int_equal(t.dtype, BASE_DT_INT64);
	assert_int_equal(t.rank, 1);
	assert_int_equal(t.dims[0], 3);
	assert_memory_equal(t.data, v, sizeof v);
	assert_int_equal(rt_tensor_from_pb("\xff\xff\xff", 3, &t, NULL, &bl, &err),
	                 STRATA_INVALID_PROTOBUF);
	snprintf(path, sizeof path, "%s/missing.pb", dir);
	assert_true(rt_tensor_from_pb_file(path, &t, NULL, &bl, &err) > 0);
	rt_blocks_free(&bl);
	snprintf(path, sizeof path, "%s/input_0.pb", dir);
	unlink(path);
	rmdir(dir);
}

/* ---- sequences, optionals and subgraphs ------------------------------------------- */

/* x [6] -> SplitToSequence (chunks of 2) -> erase item 1 -> insert x[0:2]
 * at the front -> ConcatFromSequence; length and SequenceAt alongside. */
static struct mb_model *seq_model(void)
{
	static const int64_t two = 2, one = 1, zero = 0;
	struct mb_model *mb = mb_new("seq", 17);
	mb_input(mb, "x", BASE_DT_FLOAT, 1, (int64_t[]){ 6 }, NULL);
	mb_init(mb, "two", BASE_DT_INT64, 0, NULL, &two);
	mb_init(mb, "one", BASE_DT_INT64, 0, NULL, &one);
	mb_init(mb, "zero", BASE_DT_INT64, 0, NULL, &zero);
	struct mb_node *n = mb_node(mb, "SplitToSequence", "x,two", "s");
	mb_attr_int(n, "axis", 0);
	mb_node(mb, "SequenceErase", "s,one", "s2");
	mb_node(mb, "SequenceAt", "s,zero", "first");
	mb_node(mb, "SequenceInsert", "s2,first,zero", "s3");
	mb_node(mb, "SequenceLength", "s3", "len");
	n = mb_node(mb, "ConcatFromSequence", "s3", "y");
	mb_attr_int(n, "axis", 0);
	mb_output(mb, "y", BASE_DT_FLOAT, 1, (int64_t[]){ -1 }, NULL);
	mb_output(mb, "len", BASE_DT_INT64, 0, NULL, NULL);
	return mb;
}

static void test_sequences(void **state)
{
	(void)state;
	struct rt_model *m;
	struct strata_error err;
	assert_int_equal(load_mb(seq_model(), NULL, &m, &err), 0);
	struct rt_ctx *cx;
	assert_int_equal(runtime_ctx_new(m, &cx, &err), 0);
	float x[6] = { 1, 2, 3, 4, 5, 6 };
	struct rt_tensor in = { BASE_DT_FLOAT, 1, { 6 }, x }, out[2];
	assert_int_equal(runtime_run(cx, &in, out, &err), 0);
	/* [1 2] [3 4] [5 6] -> erase 1 -> [1 2] [5 6] -> insert [1 2] at 0. */
	const float want[6] = { 1, 2, 1, 2, 5, 6 };
	assert_int_equal(out[0].dims[0], 6);
	assert_memory_equal(out[0].data, want, sizeof want);
	assert_int_equal(*(int64_t *)out[1].data, 3);
	/* Warm runs take sequence items from the pool. */
	uint64_t before = base_alloc_thread_count();
	assert_int_equal(runtime_run(cx, &in, out, &err), 0);
	assert_int_equal(runtime_run(cx, &in, out, &err), 0);
	assert_int_equal(base_alloc_thread_count(), before);
	assert_memory_equal(out[0].data, want, sizeof want);
	runtime_ctx_free(cx);
	runtime_model_free(m);
}

static void test_sequence_errors(void **state)
{
	(void)state;
	struct rt_model *m;
	struct strata_error err;
	/* A position past the end fails the run, naming the node. */
	static const int64_t far = 7;
	struct mb_model *mb = mb_new("seq", 17);
	mb_input(mb, "x", BASE_DT_FLOAT, 1, (int64_t[]){ 2 }, NULL);
	mb_init(mb, "far", BASE_DT_INT64, 0, NULL, &far);
	mb_node(mb, "SequenceConstruct", "x,x", "s");
	mb_node(mb, "SequenceAt", "s,far", "y");
	mb_output(mb, "y", BASE_DT_FLOAT, -1, NULL, NULL);
	assert_int_equal(load_mb(mb, NULL, &m, &err), 0);
	struct rt_ctx *cx;
	assert_int_equal(runtime_ctx_new(m, &cx, &err), 0);
	float x[2] = { 1, 2 };
	struct rt_tensor in = { BASE_DT_FLOAT, 1, { 2 }, x }, out[1];
	assert_int_equal(runtime_run(cx, &in, out, &err), STRATA_RUNTIME);
	assert_true(has(err.msg, "out of range"));
	runtime_ctx_free(cx);
	runtime_model_free(m);

	/* A tensor kernel never sees a sequence. */
	mb = mb_new("seq", 17);
	mb_input(mb, "x", BASE_DT_FLOAT, 1, (int64_t[]){ 2 }, NULL);
	mb_node(mb, "SequenceConstruct", "x", "s");
	mb_node(mb, "Relu", "s", "y");
	mb_output(mb, "y", BASE_DT_FLOAT, -1, NULL, NULL);
	assert_int_equal(load_mb(mb, NULL, &m, &err), STRATA_NOT_IMPLEMENTED);
	assert_true(has(err.msg, "not a tensor"));

	/* A sequence kernel refuses a tensor where a sequence belongs. */
	mb = mb_new("seq", 17);
	mb_input(mb, "x", BASE_DT_FLOAT, 1, (int64_t[]){ 2 }, NULL);
	mb_node(mb, "SequenceLength", "x", "y");
	mb_output(mb, "y", BASE_DT_INT64, 0, NULL, NULL);
	assert_int_equal(load_mb(mb, NULL, &m, &err), STRATA_INVALID_GRAPH);
	assert_true(has(err.msg, "not a sequence"));

	/* Mixed element types cannot make one sequence. */
	mb = mb_new("seq", 17);
	mb_input(mb, "x", BASE_DT_FLOAT, 1, (int64_t[]){ 2 }, NULL);
	mb_input(mb, "i", BASE_DT_INT64, 1, (int64_t[]){ 2 }, NULL);
	mb_node(mb, "SequenceConstruct", "x,i", "s");
	mb_node(mb, "SequenceLength", "s", "y");
	mb_output(mb, "y", BASE_DT_INT64, 0, NULL, NULL);
	assert_int_equal(load_mb(mb, NULL, &m, &err), STRATA_INVALID_GRAPH);

	/* runtime_run refuses a model with a sequence output. */
	mb = mb_new("seq", 17);
	mb_input(mb, "x", BASE_DT_FLOAT, 1, (int64_t[]){ 2 }, NULL);
	mb_node(mb, "SequenceConstruct", "x", "s");
	mb_output(mb, "s", BASE_DT_UNDEFINED, -1, NULL, NULL);
	assert_int_equal(load_mb(mb, NULL, &m, &err), 0);
	assert_int_equal(runtime_model_output(m, 0)->kind, RT_KIND_SEQUENCE);
	assert_int_equal(runtime_ctx_new(m, &cx, &err), 0);
	assert_int_equal(runtime_run(cx, &in, out, &err), STRATA_INVALID_ARGUMENT);
	struct rt_arg ain = { .kind = RT_ARG_TENSOR, .tensor = in }, aout[1];
	assert_int_equal(runtime_run_args(cx, &ain, aout, &err), 0);
	assert_int_equal(aout[0].kind, RT_ARG_SEQUENCE);
	assert_int_equal(aout[0].seq.count, 1);
	assert_memory_equal(aout[0].seq.items[0].data, x, sizeof x);
	/* A sequence given where a tensor is declared is refused. */
	ain.kind = RT_ARG_SEQUENCE;
	ain.seq = aout[0].seq;
	assert_int_equal(runtime_run_args(cx, &ain, aout, &err), STRATA_INVALID_ARGUMENT);
	runtime_ctx_free(cx);
	runtime_model_free(m);
}

/* Loop with a sequence carried through the body (ONNX test data, when
 * installed): runs twice on one context and under allocation failures. */
/* ONNX's test_loop11 (when the test data is installed): y = y + x[i] for
 * i < trip count, y and the partial sums of y as the scan output. */
struct loop11 {
	int64_t trip;
	uint8_t cond;
	float y0;
	struct rt_tensor in[3];
	struct rt_model *m;
	struct rt_ctx *cx;
};

/* Load it and make a context, with a trip count of 5; the test is
 * skipped when the test data is not there. */
static void loop11_open(struct loop11 *l)
{
	const char *path = "/usr/share/libonnx-testdata/data/node/test_loop11/model.onnx";
	if (access(path, R_OK) != 0)
		skip();
	struct strata_error err;
	assert_int_equal(runtime_model_load(path, &l->m, &err), 0);
	assert_int_equal(runtime_ctx_new(l->m, &l->cx, &err), 0);
	l->trip = 5;
	l->cond = 1;
	l->y0 = 0;
	l->in[0] = (struct rt_tensor){ BASE_DT_INT64, 0, { 0 }, &l->trip };
	l->in[1] = (struct rt_tensor){ BASE_DT_BOOL, 0, { 0 }, &l->cond };
	l->in[2] = (struct rt_tensor){ BASE_DT_FLOAT, 1, { 1 }, &l->y0 };
}

static void test_loop_model(void **state)
{
	(void)state;
	struct loop11 l;
	loop11_open(&l);
	struct rt_model *m = l.m;
	struct rt_ctx *cx = l.cx;
	struct strata_error err;
	int64_t *trip = &l.trip;
	const struct rt_tensor *in = l.in;
	struct rt_tensor out[2];
	for (int r = 0; r < 2; r++) {
		assert_int_equal(runtime_run(cx, in, out, &err), 0);
		const float x[5] = { 1, 2, 3, 4, 5 };
		float y = 0;
		assert_int_equal(out[1].dims[0], 5);
		for (int i = 0; i < 5; i++) {
			y += x[i];
			assert_true(((float *)out[1].data)[i] == y);
		}
		assert_true(((float *)out[0].data)[0] == y);
	}
	/* Stop at cond: trip count 0 runs nothing and returns y0. */
	*trip = 0;
	assert_int_equal(runtime_run(cx, in, out, &err), 0);
	assert_true(((float *)out[0].data)[0] == 0);
	assert_int_equal(out[1].dims[0], 0);
	*trip = 3;
	for (long k = 1; k < 400; k++) {
		base_alloc_fail_after(k);
		struct rt_ctx *c2;
		int rc = runtime_ctx_new(m, &c2, &err);
		if (rc == 0) {
			rc = runtime_run(c2, in, out, &err);
			runtime_ctx_free(c2);
		}
		base_alloc_fail_after(-1);
		assert_true(rc == 0 || rc == STRATA_NOMEM);
		if (rc == 0)
			break;
	}
	runtime_ctx_free(cx);
	runtime_model_free(m);
}

/* ---- profiling ---------------------------------------------------------------------- */

/* The row of op in rows[0 .. n), or NULL. */
static const struct rt_op_time *prof_row(const struct rt_op_time *rows, int n, const char *op)
{
	for (int i = 0; i < n; i++)
		if (strcmp(rows[i].op, op) == 0)
			return &rows[i];
	return NULL;
}

/* y = |-x| + -x, unoptimized so that each node runs as written: per-type
 * rows in first-run order, calls per run, times that add up to no more
 * than the runs took, nothing allocated by a profiled run once warm, a
 * reset by turning it on again, off, and allocation failure. */
static void test_profile(void **state)
{
	(void)state;
	struct mb_model *mb = mb_new("prof", 17);
	mb_input(mb, "x", BASE_DT_FLOAT, 1, (int64_t[]){ 4096 }, NULL);
	mb_node(mb, "Neg", "x", "a");
	mb_node(mb, "Abs", "a", "b");
	mb_node(mb, "Add", "b,a", "y");
	mb_node(mb, "Neg", "y", "z");
	mb_output(mb, "z", BASE_DT_FLOAT, 1, (int64_t[]){ 4096 }, NULL);
	void *buf;
	size_t nb;
	assert_int_equal(mb_serialize(mb, &buf, &nb), 0);
	mb_free(mb);
	struct strata_error err;
	struct rt_options *o;
	struct rt_model *m;
	assert_int_equal(runtime_options_new(&o, &err), 0);
	assert_int_equal(runtime_options_set(o, "session.graph_optimization_level", "disabled", &err), 0);
	assert_int_equal(runtime_model_load_buffer_opts(buf, nb, NULL, o, &m, &err), 0);
	free(buf);
	runtime_options_free(o);
	struct rt_ctx *cx;
	assert_int_equal(runtime_ctx_new(m, &cx, &err), 0);
	static float x[4096];
	for (int i = 0; i < 4096; i++)
		x[i] = (float)(i % 7) - 3;
	struct rt_tensor in = { BASE_DT_FLOAT, 1, { 4096 }, x }, out;
	int n = -1;
	assert_null(runtime_ctx_profile_rows(cx, &n));
	assert_int_equal(n, 0);
	assert_int_equal(runtime_run(cx, &in, &out, &err), 0); /* before: not counted */
	assert_int_equal(runtime_ctx_profile(cx, 1, &err), 0);
	const struct rt_op_time *rows = runtime_ctx_profile_rows(cx, &n);
	assert_non_null(rows);
	assert_int_equal(n, 0);
	double t0 = base_now();
	uint64_t a0 = base_alloc_thread_count();
	for (int r = 0; r < 3; r++)
		assert_int_equal(runtime_run(cx, &in, &out, &err), 0);
	assert_int_equal(base_alloc_thread_count() - a0, 0);
	double took = base_now() - t0;
	rows = runtime_ctx_profile_rows(cx, &n);
	assert_int_equal(n, 3);
	assert_string_equal(rows[0].op, "Neg");
	assert_string_equal(rows[1].op, "Abs");
	assert_string_equal(rows[2].op, "Add");
	assert_int_equal(rows[0].calls, 6);
	assert_int_equal(rows[1].calls, 3);
	assert_int_equal(rows[2].calls, 3);
	double sum = 0;
	for (int i = 0; i < n; i++) {
		assert_true(rows[i].seconds > 0);
		sum += rows[i].seconds;
	}
	assert_true(sum <= took);
	for (int i = 0; i < 4096; i++) /* the runs are the same runs */
		assert_true(((float *)out.data)[i] == -(fabsf(-x[i]) - x[i]));
	/* On again: an empty table; a failed one keeps the old. */
	base_alloc_fail_after(1);
	assert_int_equal(runtime_ctx_profile(cx, 1, &err), STRATA_NOMEM);
	base_alloc_fail_after(-1);
	assert_true(has(err.msg, "profile"));
	rows = runtime_ctx_profile_rows(cx, &n);
	assert_int_equal(n, 3);
	assert_int_equal(runtime_ctx_profile(cx, 1, &err), 0);
	rows = runtime_ctx_profile_rows(cx, &n);
	assert_int_equal(n, 0);
	assert_int_equal(runtime_run(cx, &in, &out, &err), 0);
	rows = runtime_ctx_profile_rows(cx, &n);
	assert_int_equal(n, 3);
	assert_int_equal(rows[0].calls, 2);
	/* Off: no rows, and runs count nowhere; freed with the context when on. */
	assert_int_equal(runtime_ctx_profile(cx, 0, &err), 0);
	assert_null(runtime_ctx_profile_rows(cx, &n));
	assert_int_equal(n, 0);
	assert_int_equal(runtime_run(cx, &in, &out, &err), 0);
	assert_int_equal(runtime_ctx_profile(cx, 1, &err), 0);
	runtime_ctx_free(cx);
	/* A pooled context comes back with profiling off. */
	assert_int_equal(runtime_ctx_new(m, &cx, &err), 0);
	assert_null(runtime_ctx_profile_rows(cx, &n));
	runtime_ctx_free(cx);
	runtime_model_free(m);
}

/* A node running a subgraph counts its own time, its body's nodes under
 * their own types (ONNX test data, when installed): test_loop11's Loop
 * runs its body trip times a run. */
static void test_profile_subgraph(void **state)
{
	(void)state;
	struct loop11 l;
	loop11_open(&l);
	struct strata_error err;
	assert_int_equal(runtime_ctx_profile(l.cx, 1, &err), 0);
	struct rt_tensor out[2];
	double t0 = base_now();
	for (int r = 0; r < 2; r++)
		assert_int_equal(runtime_run(l.cx, l.in, out, &err), 0);
	double took = base_now() - t0;
	int n;
	const struct rt_op_time *rows = runtime_ctx_profile_rows(l.cx, &n);
	const struct rt_op_time *loop = prof_row(rows, n, "Loop");
	assert_non_null(loop);
	assert_int_equal(loop->calls, 2);
	assert_true(n > 1);
	double sum = 0;
	for (int i = 0; i < n; i++) {
		sum += rows[i].seconds;
		assert_true(rows[i].seconds >= 0);
		if (&rows[i] != loop) /* body nodes: 5 times a run */
			assert_int_equal(rows[i].calls % 10, 0);
	}
	assert_true(sum <= took);
	runtime_ctx_free(l.cx);
	runtime_model_free(l.m);
}

static void test_shape_helpers(void **state)
{
	(void)state;
	struct rt_tensor a = { BASE_DT_FLOAT, 3, { 2, 1, 4 }, NULL };
	struct rt_tensor b = { BASE_DT_FLOAT, 2, { 3, 1 }, NULL };
	struct rt_tensor s = { BASE_DT_FLOAT, 0, { 0 }, NULL };
	int r;
	int64_t d[RT_MAX_RANK];
	assert_int_equal(rt_broadcast_shape(&a, &b, &r, d), 0);
	assert_int_equal(r, 3);
	assert_int_equal(d[0], 2);
	assert_int_equal(d[1], 3);
	assert_int_equal(d[2], 4);
	assert_int_equal(rt_broadcast_shape(&s, &a, &r, d), 0);
	assert_int_equal(r, 3);
	b.dims[1] = 3;
	assert_int_equal(rt_broadcast_shape(&a, &b, &r, d), STRATA_RUNTIME);
	assert_int_equal(runtime_tensor_count(&a), 8);
	assert_int_equal(runtime_tensor_count(&s), 1);
	assert_int_equal(rt_axis(-1, 3), 2);
	assert_int_equal(rt_axis(3, 3), -1);
	assert_int_equal(rt_axis(-4, 3), -1);
	int32_t i32[3] = { 5, -1, 2 };
	struct rt_tensor it = { BASE_DT_INT32, 1, { 3 }, i32 };
	int64_t out[4];
	assert_int_equal(rt_tensor_to_ints(&it, out, 4), 3);
	assert_int_equal(out[1], -1);
	assert_int_equal(rt_tensor_to_ints(&it, out, 2), -1);
	it.dtype = BASE_DT_FLOAT;
	assert_int_equal(rt_tensor_to_ints(&it, out, 4), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_load_run),
		cmocka_unit_test(test_unsorted_and_constant),
		cmocka_unit_test(test_initializer_encodings),
		cmocka_unit_test(test_external_data),
		cmocka_unit_test(test_malformed_tensors),
		cmocka_unit_test(test_garbage_and_truncation),
		cmocka_unit_test(test_graph_errors),
		cmocka_unit_test(test_not_implemented),
		cmocka_unit_test(test_input_validation),
		cmocka_unit_test(test_kernel_error),
		cmocka_unit_test(test_warm_run_allocates_nothing),
		cmocka_unit_test(test_zero_size),
		cmocka_unit_test(test_alloc_failures),
		cmocka_unit_test(test_load_failures_free_everything),
		cmocka_unit_test(test_constants_and_old_models),
		cmocka_unit_test(test_output_type_mismatch),
		cmocka_unit_test(test_tensor_pb),
		cmocka_unit_test(test_shape_helpers),
		cmocka_unit_test(test_sequences),
		cmocka_unit_test(test_sequence_errors),
		cmocka_unit_test(test_loop_model),
		cmocka_unit_test(test_profile),
		cmocka_unit_test(test_profile_subgraph),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
