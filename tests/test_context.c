/*
 * test_context.c: compiled contexts (runtime/ctxfile.c, runtime/epctx.c).
 *
 * Small models made here (MatMul + Add + Relu + MatMul with a symbolic
 * batch, so the optimizer fuses and packs) are compiled with
 * ep.context_enable=1 in every mode the EPContext design has: from a path
 * and from a buffer, binary in a file or embedded, with a node name prefix,
 * shared between models.  Each context model is checked as written (its one
 * com.microsoft EPContext node and its attributes) and as loaded: nothing
 * recompiled, outputs bit-identical to the source model's.  Graphs made by
 * hand put several EPContext nodes, main_context=0 nodes and ordinary nodes
 * together.  Then every way a context can be unusable: options that do not
 * parse, binaries truncated, corrupted in each region, of another format,
 * Strata version or instruction set, nodes of another source, paths out of
 * the model's folder.  An int8 layer's packed weights travel in its context
 * too, fused or not.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "../runtime/runtime_int.h"
#include "modelbuild.h"
#include "onnx.pb-c.h"

/* The binary's header, as ctxfile.c lays it out. */
#define H_FORMAT 8
#define H_VERSION 16
#define H_ISA 32
#define H_META 48
#define H_SUM 120
#define CX_SEED 0x5354524154414358ull

static char dir[64];

static char *path(const char *name)
{
	static char buf[8][256];
	static int k;
	k = (k + 1) % 8;
	snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
	return buf[k];
}

static int exists(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0;
}

static long file_size(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 ? (long)st.st_size : -1;
}

static int setup(void **state)
{
	snprintf(dir, sizeof dir, "/tmp/strata-ctx-XXXXXX");
	assert_non_null(mkdtemp(dir));
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
	return 0;
}

/* ---- models ---------------------------------------------------------------------------- */

static float wcell(uint64_t seed, size_t i)
{
	uint64_t z = (seed + i) * 0x9E3779B97F4A7C15ull;
	z ^= z >> 31;
	z *= 0xBF58476D1CE4E5B9ull;
	z ^= z >> 29;
	return (float)((double)(z >> 11) / 9007199254740992.0 - 0.5);
}

static float *cells(uint64_t seed, size_t n)
{
	float *w = malloc(n * sizeof *w);
	assert_non_null(w);
	for (size_t i = 0; i < n; i++)
		w[i] = wcell(seed, i);
	return w;
}

/* x[batch,in] -> MatMul W1[in,hid] -> Add b1 -> Relu -> MatMul W2[hid,out] -> y.
 * trunk seeds W1 and b1, head seeds W2.  ext: W1 goes to an external file. */
static void make_mlp(const char *file, const char *xin, const char *yout, int64_t in,
                     int64_t hid, int64_t out, uint64_t trunk, uint64_t head, const char *ext)
{
	struct mb_model *m = mb_new("mlp", 17);
	mb_input(m, xin, BASE_DT_FLOAT, 2, (int64_t[]){ -1, in }, (const char *[]){ "batch", "" });
	float *w1 = cells(trunk, (size_t)(in * hid)), *b1 = cells(trunk + 7, (size_t)hid);
	float *w2 = cells(head, (size_t)(hid * out));
	if (ext) {
		FILE *f = fopen(path(ext), "wb");
		assert_non_null(f);
		assert_int_equal(fwrite(w1, sizeof *w1, (size_t)(in * hid), f), (size_t)(in * hid));
		fclose(f);
		mb_init_external(m, "w1", BASE_DT_FLOAT, 2, (int64_t[]){ in, hid }, ext, 0);
	} else {
		mb_init(m, "w1", BASE_DT_FLOAT, 2, (int64_t[]){ in, hid }, w1);
	}
	mb_init(m, "b1", BASE_DT_FLOAT, 1, (int64_t[]){ hid }, b1);
	mb_init(m, "w2", BASE_DT_FLOAT, 2, (int64_t[]){ hid, out }, w2);
	char list[128];
	snprintf(list, sizeof list, "%s,w1", xin);
	mb_node(m, "MatMul", list, "h");
	mb_node(m, "Add", "h,b1", "h2");
	mb_node(m, "Relu", "h2", "h3");
	mb_node(m, "MatMul", "h3,w2", yout);
	mb_output(m, yout, BASE_DT_FLOAT, 2, (int64_t[]){ -1, out }, (const char *[]){ "batch", "" });
	assert_int_equal(mb_save(m, path(file)), 0);
	mb_free(m);
	free(w1);
	free(b1);
	free(w2);
}

/* x[batch,in] -> DynamicQuantizeLinear -> MatMulInteger with an int8
 * Wq[in,out] -> Cast -> Mul by the product of the scales -> y: the layer
 * quantize_dynamic writes, which the optimizer fuses into QuantLinear. */
static void make_qlayer(const char *file, int64_t in, int64_t out, uint64_t seed)
{
	struct mb_model *m = mb_new("q", 13);
	mb_input(m, "x", BASE_DT_FLOAT, 2, (int64_t[]){ -1, in }, (const char *[]){ "batch", "" });
	float *wf = cells(seed, (size_t)(in * out));
	int8_t *wq = malloc((size_t)(in * out));
	assert_non_null(wq);
	for (int64_t i = 0; i < in * out; i++)
		wq[i] = (int8_t)(wf[i] * 250);
	float ws = 0.004f;
	mb_init(m, "wq", BASE_DT_INT8, 2, (int64_t[]){ in, out }, wq);
	mb_init(m, "ws", BASE_DT_FLOAT, 0, NULL, &ws);
	mb_node(m, "DynamicQuantizeLinear", "x", "xq,xs,xz");
	mb_node(m, "MatMulInteger", "xq,wq,xz", "acc");
	mb_attr_int(mb_node(m, "Cast", "acc", "accf"), "to", BASE_DT_FLOAT);
	mb_node(m, "Mul", "xs,ws", "sc");
	mb_node(m, "Mul", "accf,sc", "y");
	mb_output(m, "y", BASE_DT_FLOAT, 2, (int64_t[]){ -1, out }, (const char *[]){ "batch", "" });
	assert_int_equal(mb_save(m, path(file)), 0);
	mb_free(m);
	free(wf);
	free(wq);
}

static struct rt_options *opts(const char *kv[][2], int n)
{
	struct rt_options *o;
	struct strata_error err;
	assert_int_equal(runtime_options_new(&o, &err), 0);
	for (int i = 0; i < n; i++) {
		int rc = runtime_options_set(o, kv[i][0], kv[i][1], &err);
		if (rc)
			fail_msg("%s=%s: %s", kv[i][0], kv[i][1], err.msg);
	}
	return o;
}

static struct rt_model *load_opts(const char *file, const struct rt_options *o)
{
	struct rt_model *m = NULL;
	struct strata_error err;
	int rc = runtime_model_load_opts(path(file), o, &m, &err);
	if (rc)
		fail_msg("load %s: %s", file, err.msg);
	return m;
}

/* Compile file with the options kv; returns the context path written. */
static void compile(const char *file, const char *kv[][2], int n)
{
	struct rt_options *o = opts(kv, n);
	assert_int_equal(runtime_options_set(o, "ep.context_enable", "1", &(struct strata_error){ 0 }),
	                 0);
	struct rt_model *m = load_opts(file, o);
	assert_non_null(runtime_model_context_path(m));
	assert_int_equal(runtime_model_compiled(m), 0);
	runtime_model_free(m);
	runtime_options_free(o);
}

/* The error of loading file with o: its code, the message into msg. */
static int load_fails(const char *file, const struct rt_options *o, char *msg)
{
	struct rt_model *m = NULL;
	struct strata_error err;
	int rc = runtime_model_load_opts(path(file), o, &m, &err);
	if (rc == 0) {
		runtime_model_free(m);
		return 0;
	}
	assert_null(m);
	snprintf(msg, STRATA_ERRMSG_MAX, "%s", err.msg);
	return rc;
}

/* Run a one-input one-output float model on x[batch,in] into out (batch*nout). */
static void run(struct rt_model *m, const float *x, int64_t batch, int64_t in, float *out,
                size_t nout)
{
	struct rt_ctx *cx;
	struct strata_error err;
	assert_int_equal(runtime_ctx_new(m, &cx, &err), 0);
	struct rt_tensor t = { BASE_DT_FLOAT, 2, { batch, in }, (void *)x }, y;
	int rc = runtime_run(cx, &t, &y, &err);
	if (rc)
		fail_msg("run: %s", err.msg);
	assert_int_equal(runtime_tensor_count(&y), (int64_t)nout);
	memcpy(out, y.data, nout * sizeof *out);
	runtime_ctx_free(cx);
}

/* Outputs of file and of ctx (loaded plainly) are bit-identical. */
static void same_outputs_io(const char *file, const char *ctx, const struct rt_options *ctx_opts,
                            int64_t in, int64_t out)
{
	const int64_t batch = 5;
	float *x = cells(99, (size_t)(batch * in));
	float a[5 * 64], b[5 * 64];
	assert_true(out <= 64);
	struct rt_model *ms = load_opts(file, NULL);
	struct rt_model *mc = load_opts(ctx, ctx_opts);
	assert_int_equal(runtime_model_compiled(mc), 1);
	run(ms, x, batch, in, a, (size_t)(batch * out));
	run(mc, x, batch, in, b, (size_t)(batch * out));
	assert_memory_equal(a, b, (size_t)(batch * out) * sizeof *a);
	runtime_model_free(ms);
	runtime_model_free(mc);
	free(x);
}

static void same_outputs(const char *file, const char *ctx, const struct rt_options *ctx_opts)
{
	same_outputs_io(file, ctx, ctx_opts, 32, 8);
}

/* ---- the context model as written ----------------------------------------------------- */

static Onnx__ModelProto *read_model(const char *file, void **buf, size_t *n)
{
	struct strata_error err;
	char *p;
	assert_int_equal(base_read_file(path(file), &p, n, &err), 0);
	*buf = p;
	Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, *n, (const uint8_t *)p);
	assert_non_null(mp);
	return mp;
}

static const Onnx__AttributeProto *attr(const Onnx__NodeProto *n, const char *name)
{
	for (size_t i = 0; i < n->n_attribute; i++)
		if (strcmp(n->attribute[i]->name, name) == 0)
			return n->attribute[i];
	fail_msg("attribute %s missing", name);
	return NULL;
}

static int attr_is(const Onnx__NodeProto *n, const char *name, const char *s)
{
	const Onnx__AttributeProto *a = attr(n, name);
	return a->s.len == strlen(s) && memcmp(a->s.data, s, a->s.len) == 0;
}

static void test_generate_from_path(void **state)
{
	make_mlp("mlp.onnx", "x", "y", 32, 64, 8, 1, 2, NULL);
	compile("mlp.onnx", NULL, 0);
	assert_true(exists(path("mlp_ctx.onnx")));
	assert_true(exists(path("mlp_strata.bin")));

	void *buf;
	size_t n;
	Onnx__ModelProto *mp = read_model("mlp_ctx.onnx", &buf, &n);
	assert_int_equal(mp->graph->n_node, 1);
	assert_int_equal(mp->graph->n_initializer, 0);
	const Onnx__NodeProto *node = mp->graph->node[0];
	assert_string_equal(node->op_type, "EPContext");
	assert_string_equal(node->domain, "com.microsoft");
	assert_string_equal(node->name, "mlp");
	assert_int_equal(attr(node, "main_context")->i, 1);
	assert_int_equal(attr(node, "embed_mode")->i, 0);
	assert_true(attr_is(node, "ep_cache_context", "mlp_strata.bin"));
	assert_true(attr_is(node, "source", "Strata"));
	assert_true(attr_is(node, "partition_name", "mlp"));
	assert_true(attr_is(node, "onnx_model_filename", "mlp.onnx"));
	assert_true(attr_is(node, "ep_sdk_version", STRATA_VERSION));
	char arch[32];
	snprintf(arch, sizeof arch, "x86_64-%s", runtime_isa());
	assert_true(attr_is(node, "hardware_architecture", arch));
	assert_true(attr(node, "notes")->s.len > 0);
	assert_true(attr(node, "max_size")->i > 32 * 64 * 4);
	/* the graph keeps the source's interface, symbolic dims included */
	assert_int_equal(mp->graph->n_input, 1);
	assert_string_equal(mp->graph->input[0]->name, "x");
	const Onnx__TensorShapeProto *sh = mp->graph->input[0]->type->tensor_type->shape;
	assert_int_equal(sh->n_dim, 2);
	assert_string_equal(sh->dim[0]->dim_param, "batch");
	assert_int_equal(sh->dim[1]->dim_value, 32);
	int ms = 0;
	for (size_t i = 0; i < mp->n_opset_import; i++)
		ms |= strcmp(mp->opset_import[i]->domain, "com.microsoft") == 0;
	assert_true(ms);
	onnx__model_proto__free_unpacked(mp, NULL);
	base_free(buf, n + 1);

	same_outputs("mlp.onnx", "mlp_ctx.onnx", NULL);
	/* the compiled graph is the optimized one: fewer nodes than the source */
	struct rt_model *mc = load_opts("mlp_ctx.onnx", NULL);
	assert_true(mc->g.nnodes < 4);
	assert_int_equal(runtime_model_ninputs(mc), 1);
	assert_string_equal(runtime_model_input(mc, 0)->dim_names[0], "batch");
	runtime_model_free(mc);
}

/* A model compiled with session.bf16_weights keeps its bfloat16 packing:
 * the context, loaded plainly, gives the bits the source gives with the
 * option (not the float ones), and is refused by a process on the AVX2
 * kernels. */
static void test_bf16_context(void **state)
{
	(void)state;
	if (!rt_cpu_bf16() || rt_cpu_isa() != RT_ISA_AVX512)
		skip();
	rt_cpu_bf16_force(1); /* packed as bfloat16 whether or not it is faster here */
	make_mlp("b16.onnx", "x", "y", 32, 64, 8, 1, 2, NULL);
	const char *kv[][2] = { { "session.bf16_weights", "1" } };
	compile("b16.onnx", kv, 1);
	struct rt_options *o = opts(kv, 1);
	enum { BATCH = 5, IN = 32, OUT = 8 };
	float *x = cells(7, BATCH * IN);
	float a[BATCH * OUT], b[BATCH * OUT], c[BATCH * OUT];
	struct rt_model *src = load_opts("b16.onnx", o), *plain = load_opts("b16.onnx", NULL);
	struct rt_model *ctx = load_opts("b16_ctx.onnx", NULL);
	assert_int_equal(runtime_model_compiled(ctx), 1);
	run(src, x, BATCH, IN, a, BATCH * OUT);
	run(ctx, x, BATCH, IN, b, BATCH * OUT);
	run(plain, x, BATCH, IN, c, BATCH * OUT);
	assert_memory_equal(a, b, sizeof a);
	assert_memory_not_equal(a, c, sizeof a);
	runtime_model_free(src);
	runtime_model_free(plain);
	runtime_model_free(ctx);
	char msg[STRATA_ERRMSG_MAX];
	assert_int_equal(rt_cpu_force(RT_ISA_AVX2), 0);
	assert_int_not_equal(load_fails("b16_ctx.onnx", NULL, msg), 0);
	assert_int_equal(rt_cpu_force(RT_ISA_AUTO), 0);
	rt_cpu_bf16_force(-1);
	runtime_options_free(o);
	free(x);
}

static void *read_all(const char *file, size_t *n);

static void test_generate_embedded(void **state)
{
	make_mlp("emb.onnx", "x", "y", 32, 64, 8, 3, 4, NULL);
	const char *kv[][2] = { { "ep.context_embed_mode", "1" } };
	compile("emb.onnx", kv, 1);
	assert_true(exists(path("emb_ctx.onnx")));
	assert_false(exists(path("emb_strata.bin")));
	void *buf;
	size_t n;
	Onnx__ModelProto *mp = read_model("emb_ctx.onnx", &buf, &n);
	const Onnx__NodeProto *node = mp->graph->node[0];
	assert_int_equal(attr(node, "embed_mode")->i, 1);
	const Onnx__AttributeProto *c = attr(node, "ep_cache_context");
	assert_true(c->s.len > 32 * 64 * 4);
	assert_memory_equal(c->s.data, "STRATACX", 8);
	onnx__model_proto__free_unpacked(mp, NULL);
	base_free(buf, n + 1);
	same_outputs("emb.onnx", "emb_ctx.onnx", NULL);

	/* from a buffer: an embedded context needs no path at all */
	void *ctx = read_all("emb_ctx.onnx", &n);
	struct rt_model *mc = NULL, *ms = load_opts("emb.onnx", NULL);
	struct strata_error err;
	assert_int_equal(runtime_model_load_buffer_opts(ctx, n, NULL, NULL, &mc, &err), 0);
	base_free(ctx, n + 1); /* the model keeps its own copy */
	assert_int_equal(runtime_model_compiled(mc), 1);
	float *x = cells(12, 3 * 32), a[3 * 8], b[3 * 8];
	run(ms, x, 3, 32, a, sizeof a / sizeof *a);
	run(mc, x, 3, 32, b, sizeof b / sizeof *b);
	assert_memory_equal(a, b, sizeof a);
	runtime_model_free(mc);
	runtime_model_free(ms);
	free(x);
}

static void test_prefix_and_file_path(void **state)
{
	make_mlp("pre.onnx", "x", "y", 32, 64, 8, 5, 6, NULL);
	assert_int_equal(mkdir(path("out"), 0755), 0);
	assert_int_equal(mkdir(path("out/sub"), 0755), 0);
	const char *kv[][2] = { { "ep.context_node_name_prefix", "ranker_" },
		                { "ep.context_file_path", path("out/sub/pre_ctx.onnx") } };
	compile("pre.onnx", kv, 2);
	assert_false(exists(path("pre_ctx.onnx")));
	assert_true(exists(path("out/sub/pre_ctx.onnx")));
	assert_true(exists(path("out/sub/pre_strata.bin")));
	void *buf;
	size_t n;
	Onnx__ModelProto *mp = read_model("out/sub/pre_ctx.onnx", &buf, &n);
	assert_string_equal(mp->graph->node[0]->name, "ranker_pre");
	assert_true(attr_is(mp->graph->node[0], "partition_name", "ranker_pre"));
	onnx__model_proto__free_unpacked(mp, NULL);
	base_free(buf, n + 1);
	same_outputs("pre.onnx", "out/sub/pre_ctx.onnx", NULL);
}

/* A binary in a subfolder of the model's folder is found by its relative
 * path; one outside it is refused. */
static void test_binary_in_subfolder(void **state)
{
	make_mlp("sf.onnx", "x", "y", 32, 64, 8, 7, 8, NULL);
	compile("sf.onnx", NULL, 0);
	assert_int_equal(mkdir(path("bins"), 0755), 0);
	assert_int_equal(rename(path("sf_strata.bin"), path("bins/sf_strata.bin")), 0);
	struct mb_model *m = mb_new("sf", 17);
	mb_opset(m, "com.microsoft", 1);
	mb_input(m, "x", BASE_DT_FLOAT, 2, (int64_t[]){ -1, 32 }, (const char *[]){ "batch", "" });
	struct mb_node *n = mb_node(m, "EPContext", "x", "y");
	mb_node_domain(n, "com.microsoft");
	mb_attr_int(n, "embed_mode", 0);
	mb_attr_string(n, "ep_cache_context", "bins/sf_strata.bin");
	mb_attr_string(n, "source", "Strata");
	mb_output(m, "y", BASE_DT_FLOAT, 2, (int64_t[]){ -1, 8 }, (const char *[]){ "batch", "" });
	assert_int_equal(mb_save(m, path("sf_sub_ctx.onnx")), 0);
	mb_free(m);
	same_outputs("sf.onnx", "sf_sub_ctx.onnx", NULL);

	/* the same node pointing out of the folder */
	m = mb_new("sf", 17);
	mb_opset(m, "com.microsoft", 1);
	mb_input(m, "x", BASE_DT_FLOAT, 2, (int64_t[]){ -1, 32 }, NULL);
	n = mb_node(m, "EPContext", "x", "y");
	mb_node_domain(n, "com.microsoft");
	mb_attr_int(n, "embed_mode", 0);
	mb_attr_string(n, "ep_cache_context", "../sf_strata.bin");
	mb_attr_string(n, "source", "Strata");
	mb_output(m, "y", BASE_DT_FLOAT, 2, (int64_t[]){ -1, 8 }, NULL);
	assert_int_equal(mb_save(m, path("bins/up_ctx.onnx")), 0);
	mb_free(m);
	char msg[STRATA_ERRMSG_MAX];
	assert_int_equal(load_fails("bins/up_ctx.onnx", NULL, msg), STRATA_INVALID_GRAPH);
	assert_non_null(strstr(msg, "not a path inside the model's folder"));
}

static void *read_all(const char *file, size_t *n)
{
	char *p;
	struct strata_error err;
	assert_int_equal(base_read_file(path(file), &p, n, &err), 0);
	return p;
}

/* Generation and inference from memory buffers. */
static void test_buffers(void **state)
{
	make_mlp("buf.onnx", "x", "y", 32, 64, 8, 9, 10, NULL);
	size_t n;
	void *src = read_all("buf.onnx", &n);
	struct strata_error err;
	struct rt_model *m = NULL;

	/* generating from a buffer needs ep.context_file_path */
	const char *on[][2] = { { "ep.context_enable", "1" } };
	struct rt_options *o = opts(on, 1);
	assert_int_equal(runtime_model_load_buffer_opts(src, n, NULL, o, &m, &err),
	                 STRATA_INVALID_ARGUMENT);
	assert_non_null(strstr(err.msg, "ep.context_file_path"));
	assert_false(exists(path("buf_ctx.onnx")));
	assert_int_equal(runtime_options_set(o, "ep.context_file_path", path("frommem_ctx.onnx"), &err),
	                 0);
	assert_int_equal(runtime_model_load_buffer_opts(src, n, NULL, o, &m, &err), 0);
	assert_string_equal(runtime_model_context_path(m), path("frommem_ctx.onnx"));
	runtime_model_free(m);
	runtime_options_free(o);
	base_free(src, n + 1);
	assert_true(exists(path("frommem_strata.bin")));
	same_outputs("buf.onnx", "frommem_ctx.onnx", NULL);

	/* a context model from a buffer finds its binary through ep.context_file_path */
	void *ctx = read_all("frommem_ctx.onnx", &n);
	assert_int_equal(runtime_model_load_buffer_opts(ctx, n, NULL, NULL, &m, &err),
	                 STRATA_INVALID_ARGUMENT);
	assert_non_null(strstr(err.msg, "ep.context_file_path"));
	const char *where[][2] = { { "ep.context_file_path", path("frommem_ctx.onnx") } };
	o = opts(where, 1);
	assert_int_equal(runtime_model_load_buffer_opts(ctx, n, NULL, o, &m, &err), 0);
	assert_int_equal(runtime_model_compiled(m), 1);
	const int64_t batch = 3;
	float *x = cells(5, 3 * 32), a[3 * 8], b[3 * 8];
	run(m, x, batch, 32, a, sizeof a / sizeof *a);
	runtime_model_free(m);
	struct rt_model *ms = load_opts("buf.onnx", NULL);
	run(ms, x, batch, 32, b, sizeof b / sizeof *b);
	assert_memory_equal(a, b, sizeof a);
	runtime_model_free(ms);
	runtime_options_free(o);
	base_free(ctx, n + 1);
	free(x);
}

/* A source with external data: the context never needs the data file, and
 * a buffer finds the data through the external-initializer folder option. */
static void test_external_data(void **state)
{
	make_mlp("ext.onnx", "x", "y", 32, 64, 8, 11, 12, "ext.weights");
	const char *kv[][2] = { { "ep.context_model_external_initializers_file_name",
		                  "ext_ctx.weights" } };
	compile("ext.onnx", kv, 1);
	/* every initializer went into the context: no external file written */
	assert_false(exists(path("ext_ctx.weights")));
	struct rt_model *ms = load_opts("ext.onnx", NULL);
	const int64_t batch = 2;
	float *x = cells(6, 2 * 32), a[2 * 8], b[2 * 8];
	run(ms, x, batch, 32, a, sizeof a / sizeof *a);
	runtime_model_free(ms);

	/* from a buffer, the data file is found through the folder option */
	size_t n;
	void *src = read_all("ext.onnx", &n);
	struct strata_error err;
	struct rt_model *m = NULL;
	assert_int_not_equal(runtime_model_load_buffer_opts(src, n, "/nonexistent", NULL, &m, &err), 0);
	const char *folder[][2] = { { "session.model_external_initializers_file_folder_path", dir } };
	struct rt_options *o = opts(folder, 1);
	assert_int_equal(runtime_model_load_buffer_opts(src, n, "/nonexistent", o, &m, &err), 0);
	runtime_model_free(m);
	runtime_options_free(o);
	base_free(src, n + 1);

	assert_int_equal(unlink(path("ext.weights")), 0);
	struct rt_model *mc = load_opts("ext_ctx.onnx", NULL);
	run(mc, x, batch, 32, b, sizeof b / sizeof *b);
	assert_memory_equal(a, b, sizeof a);
	runtime_model_free(mc);
	free(x);
}

/* ---- several contexts in one graph ------------------------------------------------------ */

/* x[batch,32] -> EPContext(a: 32->16) -> Relu -> EPContext(b: 16->4) -> z */
static void save_two_node_model(const char *file, const char *cache_a, int main_b,
                                const char *cache_b, const char *part_b)
{
	struct mb_model *m = mb_new("two", 17);
	mb_opset(m, "com.microsoft", 1);
	mb_input(m, "x", BASE_DT_FLOAT, 2, (int64_t[]){ -1, 32 }, (const char *[]){ "batch", "" });
	struct mb_node *n = mb_node(m, "EPContext", "x", "ya");
	mb_node_domain(n, "com.microsoft");
	mb_attr_int(n, "embed_mode", 0);
	mb_attr_string(n, "ep_cache_context", cache_a);
	mb_attr_string(n, "partition_name", "a");
	mb_attr_string(n, "source", "Strata");
	mb_node(m, "Relu", "ya", "r");
	n = mb_node(m, "EPContext", "r", "z");
	mb_node_domain(n, "com.microsoft");
	mb_attr_int(n, "main_context", main_b);
	mb_attr_string(n, "partition_name", part_b);
	mb_attr_string(n, "source", "Strata");
	if (cache_b) {
		mb_attr_int(n, "embed_mode", 0);
		mb_attr_string(n, "ep_cache_context", cache_b);
	}
	mb_output(m, "z", BASE_DT_FLOAT, 2, (int64_t[]){ -1, 4 }, (const char *[]){ "batch", "" });
	assert_int_equal(mb_save(m, path(file)), 0);
	mb_free(m);
}

/* What the two-node model must compute: b(relu(a(x))) with the sources. */
static void expect_two(const float *x, int64_t batch, float *z)
{
	float ya[4 * 16];
	struct rt_model *ma = load_opts("a.onnx", NULL), *mb = load_opts("b.onnx", NULL);
	run(ma, x, batch, 32, ya, (size_t)(batch * 16));
	for (int64_t i = 0; i < batch * 16; i++)
		ya[i] = ya[i] > 0 ? ya[i] : 0;
	run(mb, ya, batch, 16, z, (size_t)(batch * 4));
	runtime_model_free(ma);
	runtime_model_free(mb);
}

static void test_mixed_and_secondary_contexts(void **state)
{
	make_mlp("a.onnx", "x", "ya", 32, 48, 16, 21, 22, NULL);
	make_mlp("b.onnx", "r", "z", 16, 24, 4, 23, 24, NULL);
	/* two primary contexts, each its own binary, an ordinary Relu between */
	compile("a.onnx", NULL, 0);
	compile("b.onnx", NULL, 0);
	save_two_node_model("two_ctx.onnx", "a_strata.bin", 1, "b_strata.bin", "b");
	const int64_t batch = 4;
	float *x = cells(31, 4 * 32), want[4 * 4], got[4 * 4];
	expect_two(x, batch, want);
	struct rt_model *m = load_opts("two_ctx.onnx", NULL);
	run(m, x, batch, 32, got, sizeof got / sizeof *got);
	assert_memory_equal(want, got, sizeof got);
	runtime_model_free(m);

	/* one shared binary holding both graphs: node b (main_context=0) takes
	 * its graph from node a's binary */
	assert_int_equal(mkdir(path("shared"), 0755), 0);
	const char *s1[][2] = { { "ep.share_ep_contexts", "1" },
		                { "ep.context_file_path", path("shared/a_ctx.onnx") } };
	const char *s2[][2] = { { "ep.share_ep_contexts", "1" },
		                { "ep.stop_share_ep_contexts", "1" },
		                { "ep.context_file_path", path("shared/b_ctx.onnx") } };
	compile("a.onnx", s1, 2);
	compile("b.onnx", s2, 3);
	assert_true(exists(path("shared/a_strata.bin")));
	assert_false(exists(path("shared/b_strata.bin")));
	save_two_node_model("shared/two_ctx.onnx", "a_strata.bin", 0, NULL, "b");
	m = load_opts("shared/two_ctx.onnx", NULL);
	run(m, x, batch, 32, got, sizeof got / sizeof *got);
	assert_memory_equal(want, got, sizeof got);
	runtime_model_free(m);

	/* a secondary node naming a graph no primary holds */
	char msg[STRATA_ERRMSG_MAX];
	save_two_node_model("shared/bad_ctx.onnx", "a_strata.bin", 0, NULL, "nope");
	assert_int_equal(load_fails("shared/bad_ctx.onnx", NULL, msg), STRATA_INVALID_GRAPH);
	assert_non_null(strstr(msg, "\"nope\""));
	free(x);
}

/* ---- sharing ------------------------------------------------------------------------------ */

static void test_share_generation_and_load(void **state)
{
	/* three models on one trunk (the same W1 [256,512] and b1: 514 KiB), each
	 * with its own head (W2 [512,64]: 128 KiB) */
	make_mlp("s1.onnx", "x", "y", 256, 512, 64, 40, 41, NULL);
	make_mlp("s2.onnx", "x", "y", 256, 512, 64, 40, 42, NULL);
	make_mlp("s3.onnx", "x", "y", 256, 512, 64, 40, 43, NULL);
	assert_int_equal(mkdir(path("one"), 0755), 0);
	compile("s1.onnx", (const char *[][2]){ { "ep.context_file_path", path("one/s1_ctx.onnx") } },
	        1);
	long single = file_size(path("one/s1_strata.bin"));

	assert_int_equal(mkdir(path("sh"), 0755), 0);
	const char *names[3] = { "s1", "s2", "s3" };
	for (int i = 0; i < 3; i++) {
		char ctx[64], src[16];
		snprintf(ctx, sizeof ctx, "sh/%s_ctx.onnx", names[i]);
		snprintf(src, sizeof src, "%s.onnx", names[i]);
		const char *kv[][2] = { { "ep.share_ep_contexts", "1" },
			                { "ep.context_file_path", path(ctx) },
			                { "ep.stop_share_ep_contexts", i == 2 ? "1" : "0" } };
		compile(src, kv, 3);
		/* the binary is written by the last session only */
		assert_int_equal(exists(path("sh/s1_strata.bin")), i == 2);
	}
	assert_false(exists(path("sh/s2_strata.bin")));
	assert_false(exists(path("sh/s3_strata.bin")));
	/* N models, N + 1 files */
	int files = 0;
	for (const char *const *f = (const char *const[]){ "s1_ctx.onnx", "s2_ctx.onnx",
		                                             "s3_ctx.onnx", "s1_strata.bin", NULL };
	     *f; f++) {
		char rel[64];
		snprintf(rel, sizeof rel, "sh/%s", *f);
		files += exists(path(rel));
	}
	assert_int_equal(files, 4);
	/* the trunk is stored once: the shared binary holds one model and two
	 * more heads (three separate binaries would hold three trunks) */
	long shared = file_size(path("sh/s1_strata.bin")), head = 512 * 64 * 4;
	assert_true(shared > single + 2 * head - 4096);
	assert_true(shared < single + 2 * head + 16384);
	for (int i = 0; i < 3; i++) {
		char ctx[64], src[16];
		snprintf(ctx, sizeof ctx, "sh/%s_ctx.onnx", names[i]);
		snprintf(src, sizeof src, "%s.onnx", names[i]);
		same_outputs_io(src, ctx, NULL, 256, 64);
	}

	/* loading with sharing on: the first load offers the other graphs, the
	 * next loads take them without opening the binary (gone here) */
	const char *share[][2] = { { "ep.share_ep_contexts", "1" } };
	struct rt_options *o = opts(share, 1);
	struct rt_model *m1 = load_opts("sh/s1_ctx.onnx", o);
	assert_int_equal(rename(path("sh/s1_strata.bin"), path("sh/moved.bin")), 0);
	struct rt_model *m2 = load_opts("sh/s2_ctx.onnx", o);
	struct rt_model *m3 = load_opts("sh/s3_ctx.onnx", o);
	const int64_t batch = 2;
	float *x = cells(50, 2 * 256), a[2 * 64], b[2 * 64];
	struct rt_model *ms = load_opts("s2.onnx", NULL);
	run(ms, x, batch, 256, a, sizeof a / sizeof *a);
	run(m2, x, batch, 256, b, sizeof b / sizeof *b);
	assert_memory_equal(a, b, sizeof a);
	/* a graph is taken once: a fourth load must read the file, gone */
	char msg[STRATA_ERRMSG_MAX];
	assert_int_equal(load_fails("sh/s2_ctx.onnx", o, msg), ENOENT);
	/* without sharing the file is needed too */
	assert_int_equal(load_fails("sh/s3_ctx.onnx", NULL, msg), ENOENT);
	runtime_model_free(m1);
	runtime_model_free(m3);
	run(m2, x, batch, 256, b, sizeof b / sizeof *b); /* still mapped */
	assert_memory_equal(a, b, sizeof a);
	runtime_model_free(m2);
	runtime_model_free(ms);
	runtime_options_free(o);
	free(x);

	/* sharing writes one file: embedding is refused */
	const char *bad[][2] = { { "ep.context_enable", "1" }, { "ep.share_ep_contexts", "1" },
		                 { "ep.context_embed_mode", "1" } };
	o = opts(bad, 3);
	assert_int_equal(load_fails("s1.onnx", o, msg), STRATA_INVALID_ARGUMENT);
	assert_non_null(strstr(msg, "ep.context_embed_mode=0"));
	runtime_options_free(o);
}

/* A failed load abandons its sharing group; a binary written anew at the
 * same path is read again rather than taken from an old offer. */
static void test_share_failures_and_rewrites(void **state)
{
	make_mlp("g1.onnx", "x", "y", 32, 64, 8, 110, 111, NULL);
	make_mlp("g2.onnx", "x", "y", 32, 64, 8, 110, 112, NULL);
	assert_int_equal(mkdir(path("grp"), 0755), 0);
	const char *kv1[][2] = { { "ep.share_ep_contexts", "1" },
		                 { "ep.context_file_path", path("grp/g1_ctx.onnx") } };
	compile("g1.onnx", kv1, 2);
	char msg[STRATA_ERRMSG_MAX];
	const char *bad[][2] = { { "ep.context_enable", "1" }, { "ep.share_ep_contexts", "1" },
		                 { "ep.context_file_path", path("grp/x_ctx.onnx") } };
	struct rt_options *o = opts(bad, 3);
	assert_int_not_equal(load_fails("missing.onnx", o, msg), 0);
	runtime_options_free(o);
	/* g2 starts a group of its own: the binary is named after it */
	const char *kv2[][2] = { { "ep.share_ep_contexts", "1" },
		                 { "ep.stop_share_ep_contexts", "1" },
		                 { "ep.context_file_path", path("grp/g2_ctx.onnx") } };
	compile("g2.onnx", kv2, 3);
	assert_false(exists(path("grp/g1_strata.bin")));
	assert_true(exists(path("grp/g2_strata.bin")));
	same_outputs("g2.onnx", "grp/g2_ctx.onnx", NULL);

	/* a group of two, loaded with sharing: g1 offers g2's graph ... */
	const char *a[][2] = { { "ep.share_ep_contexts", "1" },
		               { "ep.context_file_path", path("grp/g1_ctx.onnx") } };
	const char *b[][2] = { { "ep.share_ep_contexts", "1" },
		               { "ep.stop_share_ep_contexts", "1" },
		               { "ep.context_file_path", path("grp/g2_ctx.onnx") } };
	compile("g1.onnx", a, 2);
	compile("g2.onnx", b, 3);
	const char *share[][2] = { { "ep.share_ep_contexts", "1" } };
	o = opts(share, 1);
	struct rt_model *m1 = load_opts("grp/g1_ctx.onnx", o);
	/* ... then the group is compiled again with another g2 */
	make_mlp("g2.onnx", "x", "y", 32, 64, 8, 110, 113, NULL);
	compile("g1.onnx", a, 2);
	compile("g2.onnx", b, 3);
	struct rt_model *m2 = load_opts("grp/g2_ctx.onnx", o);
	float *x = cells(8, 2 * 32), want[2 * 8], got[2 * 8];
	struct rt_model *ms = load_opts("g2.onnx", NULL);
	run(ms, x, 2, 32, want, 16);
	run(m2, x, 2, 32, got, 16);
	assert_memory_equal(want, got, sizeof got);
	runtime_model_free(ms);
	runtime_model_free(m2);
	runtime_model_free(m1);
	runtime_options_free(o);
	free(x);
}

/* Sessions on several threads loading from one shared binary at once: each
 * gets its own graph, whoever opens the file first. */
struct loader_arg {
	const char *ctx;
	const struct rt_options *o;
	struct rt_model *m;
	int rc;
};

static void *load_thread(void *p)
{
	struct loader_arg *a = p;
	struct strata_error err;
	a->rc = runtime_model_load_opts(a->ctx, a->o, &a->m, &err);
	return NULL;
}

static void test_share_load_threads(void **state)
{
	make_mlp("t1.onnx", "x", "y", 32, 64, 8, 100, 101, NULL);
	make_mlp("t2.onnx", "x", "y", 32, 64, 8, 100, 102, NULL);
	make_mlp("t3.onnx", "x", "y", 32, 64, 8, 100, 103, NULL);
	assert_int_equal(mkdir(path("th"), 0755), 0);
	const char *names[3] = { "t1", "t2", "t3" };
	for (int i = 0; i < 3; i++) {
		char ctx[64], src[16];
		snprintf(ctx, sizeof ctx, "th/%s_ctx.onnx", names[i]);
		snprintf(src, sizeof src, "%s.onnx", names[i]);
		const char *kv[][2] = { { "ep.share_ep_contexts", "1" },
			                { "ep.context_file_path", path(ctx) },
			                { "ep.stop_share_ep_contexts", i == 2 ? "1" : "0" } };
		compile(src, kv, 3);
	}
	const char *share[][2] = { { "ep.share_ep_contexts", "1" } };
	struct rt_options *o = opts(share, 1);
	for (int round = 0; round < 4; round++) {
		pthread_t t[3];
		struct loader_arg a[3];
		char ctx[3][256];
		for (int i = 0; i < 3; i++) {
			snprintf(ctx[i], sizeof ctx[i], "%s/th/%s_ctx.onnx", dir, names[i]);
			a[i] = (struct loader_arg){ ctx[i], o, NULL, -1 };
			assert_int_equal(pthread_create(&t[i], NULL, load_thread, &a[i]), 0);
		}
		for (int i = 0; i < 3; i++) {
			assert_int_equal(pthread_join(t[i], NULL), 0);
			assert_int_equal(a[i].rc, 0);
		}
		for (int i = 0; i < 3; i++) {
			char src[16];
			snprintf(src, sizeof src, "%s.onnx", names[i]);
			float *x = cells(7, 2 * 32), want[2 * 8], got[2 * 8];
			struct rt_model *ms = load_opts(src, NULL);
			run(ms, x, 2, 32, want, 16);
			run(a[i].m, x, 2, 32, got, 16);
			assert_memory_equal(want, got, sizeof got);
			runtime_model_free(ms);
			runtime_model_free(a[i].m);
			free(x);
		}
	}
	runtime_options_free(o);
}

/* ---- errors ------------------------------------------------------------------------------- */

static void test_options_strict(void **state)
{
	struct rt_options *o;
	struct strata_error err;
	assert_int_equal(runtime_options_new(&o, &err), 0);
	const char *flags[] = { "ep.context_enable", "ep.context_embed_mode", "ep.share_ep_contexts",
		                "ep.stop_share_ep_contexts", "ep.context_verify_weights" };
	const char *bad[] = { "1foo", "", "2", "-1", "true", " 1" };
	for (size_t k = 0; k < sizeof flags / sizeof *flags; k++) {
		for (size_t v = 0; v < sizeof bad / sizeof *bad; v++) {
			assert_int_equal(runtime_options_set(o, flags[k], bad[v], &err),
			                 STRATA_INVALID_ARGUMENT);
			assert_non_null(strstr(err.msg, flags[k]));
		}
		assert_int_equal(runtime_options_set(o, flags[k], "0", &err), 0);
		assert_int_equal(runtime_options_set(o, flags[k], "1", &err), 0);
	}
	assert_int_equal(runtime_options_set(o, "ep.context_enabled", "1", &err),
	                 STRATA_INVALID_ARGUMENT);
	assert_non_null(strstr(err.msg, "ep.context_enabled"));
	char longv[RT_OPT_STR + 8];
	memset(longv, 'a', sizeof longv - 1);
	longv[sizeof longv - 1] = 0;
	assert_int_equal(runtime_options_set(o, "ep.context_file_path", longv, &err),
	                 STRATA_INVALID_ARGUMENT);
	assert_int_equal(runtime_options_set(o, "ep.context_node_name_prefix", "", &err), 0);
	runtime_options_free(o);
}

/* Rewrite the binary file with one change (fixing the header's checksum
 * when asked, so that the check behind it is the one hit). */
static void patch(const char *file, size_t at, const void *bytes, size_t n, int fix_sum)
{
	size_t len;
	unsigned char *p = read_all(file, &len);
	assert_true(at + n <= len);
	memcpy(p + at, bytes, n);
	if (fix_sum) {
		uint64_t h = base_hash64(p, H_SUM, CX_SEED);
		memcpy(p + H_SUM, &h, 8);
	}
	FILE *f = fopen(path(file), "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(p, 1, len, f), len);
	fclose(f);
	base_free(p, len + 1);
}

static void fresh_copy(const char *name)
{
	char cmd[512];
	snprintf(cmd, sizeof cmd, "cp %s %s && cp %s %s", path("err_strata.bin.good"),
	         path("err_strata.bin"), path("err_ctx.onnx.good"), path(name));
	assert_int_equal(system(cmd), 0);
}

static void expect_refused(const char *what, const struct rt_options *o)
{
	char msg[STRATA_ERRMSG_MAX];
	assert_int_equal(load_fails("err_ctx.onnx", o, msg), STRATA_INVALID_GRAPH);
	if (!strstr(msg, what))
		fail_msg("expected \"%s\" in: %s", what, msg);
}

static void test_unusable_binaries(void **state)
{
	make_mlp("err.onnx", "x", "y", 32, 64, 8, 60, 61, NULL);
	compile("err.onnx", NULL, 0);
	char cmd[512];
	snprintf(cmd, sizeof cmd, "cp %s %s.good && cp %s %s.good", path("err_strata.bin"),
	         path("err_strata.bin"), path("err_ctx.onnx"), path("err_ctx.onnx"));
	assert_int_equal(system(cmd), 0);
	long size = file_size(path("err_strata.bin"));
	uint64_t meta;
	{
		size_t n;
		unsigned char *p = read_all("err_strata.bin", &n);
		memcpy(&meta, p + H_META + 8, 8); /* meta bytes */
		base_free(p, n + 1);
	}

	/* truncated: at every cut the load refuses, never crashes */
	for (long cut = 0; cut < size; cut += cut < 256 ? 17 : size / 7) {
		fresh_copy("err_ctx.onnx");
		assert_int_equal(truncate(path("err_strata.bin"), cut), 0);
		char msg[STRATA_ERRMSG_MAX];
		assert_int_equal(load_fails("err_ctx.onnx", NULL, msg), STRATA_INVALID_GRAPH);
		assert_true(strstr(msg, "truncated") || strstr(msg, "not a Strata context"));
	}
	/* one flipped byte in the header, in the graph records */
	fresh_copy("err_ctx.onnx");
	patch("err_strata.bin", 100, "\x7f", 1, 0);
	expect_refused("corrupted (header checksum", NULL);
	for (uint64_t at = 128; at < 128 + meta; at += meta / 5) {
		fresh_copy("err_ctx.onnx");
		unsigned char b;
		size_t n;
		unsigned char *p = read_all("err_strata.bin", &n);
		b = p[at] ^ 0x40;
		base_free(p, n + 1);
		patch("err_strata.bin", at, &b, 1, 0);
		expect_refused("corrupted (checksum mismatch in the graph records)", NULL);
	}
	/* a flipped weight: found by the weight check, which reads every byte */
	fresh_copy("err_ctx.onnx");
	patch("err_strata.bin", (size_t)(size - 64 * 8), "\x55\x55", 2, 0);
	const char *verify[][2] = { { "ep.context_verify_weights", "1" } };
	struct rt_options *o = opts(verify, 1);
	expect_refused("corrupted (weights: blob", o);
	runtime_options_free(o);
	/* another format version, another Strata version */
	fresh_copy("err_ctx.onnx");
	patch("err_strata.bin", H_FORMAT, "\x09\0\0\0", 4, 1);
	expect_refused("format version 9", NULL);
	fresh_copy("err_ctx.onnx");
	char ver[16] = "9.9.9";
	patch("err_strata.bin", H_VERSION, ver, 16, 1);
	expect_refused("compiled by Strata 9.9.9", NULL);
	/* not a context at all */
	fresh_copy("err_ctx.onnx");
	patch("err_strata.bin", 0, "NOTACTX!", 8, 0);
	expect_refused("not a Strata context binary", NULL);
	/* the binary missing */
	fresh_copy("err_ctx.onnx");
	assert_int_equal(unlink(path("err_strata.bin")), 0);
	char msg[STRATA_ERRMSG_MAX];
	assert_int_equal(load_fails("err_ctx.onnx", NULL, msg), ENOENT);
	assert_non_null(strstr(msg, "err_strata.bin"));
}

/* Weights packed for AVX-512 kernels where the process runs AVX2 ones. */
static void test_other_instruction_set(void **state)
{
	make_mlp("isa.onnx", "x", "y", 32, 64, 8, 70, 71, NULL);
	char msg[STRATA_ERRMSG_MAX];
	if (rt_cpu_best() == RT_ISA_AVX512) {
		assert_int_equal(rt_cpu_force(RT_ISA_AVX512), 0);
		compile("isa.onnx", NULL, 0);
		assert_int_equal(rt_cpu_force(RT_ISA_AVX2), 0);
		assert_int_equal(load_fails("isa_ctx.onnx", NULL, msg), STRATA_INVALID_GRAPH);
		assert_non_null(strstr(msg, "AVX-512"));
		/* compiled for AVX2, it runs anywhere */
		compile("isa.onnx", NULL, 0);
		same_outputs("isa.onnx", "isa_ctx.onnx", NULL);
		assert_int_equal(rt_cpu_force(RT_ISA_AUTO), 0);
		struct rt_model *m = load_opts("isa_ctx.onnx", NULL);
		runtime_model_free(m);
	}
	/* the same refusal from the header alone, on any machine */
	assert_int_equal(rt_cpu_force(RT_ISA_AVX2), 0);
	compile("isa.onnx", NULL, 0);
	uint32_t isa = RT_ISA_AVX512;
	size_t n;
	unsigned char *p = read_all("isa_strata.bin", &n);
	memcpy(p + H_ISA, &isa, 4);
	uint64_t h = base_hash64(p, H_SUM, CX_SEED);
	memcpy(p + H_SUM, &h, 8);
	FILE *f = fopen(path("isa_strata.bin"), "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(p, 1, n, f), n);
	fclose(f);
	base_free(p, n + 1);
	assert_int_equal(load_fails("isa_ctx.onnx", NULL, msg), STRATA_INVALID_GRAPH);
	assert_non_null(strstr(msg, "compiled for AVX-512 kernels"));
	assert_int_equal(rt_cpu_force(RT_ISA_AUTO), 0);
}

/* EPContext nodes of another execution provider are not Strata's to run. */
static void test_other_source(void **state)
{
	make_mlp("src.onnx", "x", "y", 32, 64, 8, 80, 81, NULL);
	compile("src.onnx", NULL, 0);
	const char *sources[] = { "QNNExecutionProvider", NULL };
	for (int k = 0; k < 2; k++) {
		struct mb_model *m = mb_new("other", 17);
		mb_opset(m, "com.microsoft", 1);
		mb_input(m, "x", BASE_DT_FLOAT, 2, (int64_t[]){ -1, 32 }, NULL);
		struct mb_node *n = mb_node(m, "EPContext", "x", "y");
		mb_node_domain(n, "com.microsoft");
		mb_attr_int(n, "embed_mode", 0);
		mb_attr_string(n, "ep_cache_context", "src_strata.bin");
		if (sources[k])
			mb_attr_string(n, "source", sources[k]);
		mb_output(m, "y", BASE_DT_FLOAT, 2, (int64_t[]){ -1, 8 }, NULL);
		assert_int_equal(mb_save(m, path("other_ctx.onnx")), 0);
		mb_free(m);
		char msg[STRATA_ERRMSG_MAX];
		assert_int_equal(load_fails("other_ctx.onnx", NULL, msg), STRATA_INVALID_GRAPH);
		assert_non_null(strstr(msg, sources[k] ? "QNNExecutionProvider" : "not given"));
	}
	/* the context model may not replace its source */
	const char *self[][2] = { { "ep.context_enable", "1" },
		                  { "ep.context_file_path", path("src.onnx") } };
	struct rt_options *so = opts(self, 2);
	char why[STRATA_ERRMSG_MAX];
	assert_int_equal(load_fails("src.onnx", so, why), STRATA_INVALID_ARGUMENT);
	assert_non_null(strstr(why, "the source model itself"));
	runtime_options_free(so);
	struct rt_model *still = load_opts("src.onnx", NULL);
	assert_int_equal(runtime_model_compiled(still), 0);
	runtime_model_free(still);
	/* and a context model cannot be compiled again */
	const char *on[][2] = { { "ep.context_enable", "1" },
		                { "ep.context_file_path", path("again_ctx.onnx") } };
	struct rt_options *o = opts(on, 2);
	char msg[STRATA_ERRMSG_MAX];
	assert_int_equal(load_fails("src_ctx.onnx", o, msg), STRATA_INVALID_ARGUMENT);
	assert_non_null(strstr(msg, "compiled context already"));
	runtime_options_free(o);
}

/* A loaded context allocates nothing in proportion to its weights. */
static int64_t live_bytes(void)
{
	struct base_alloc_stats st;
	base_alloc_stats(&st);
	return (int64_t)st.live_bytes;
}

static void test_load_allocates_little(void **state)
{
	make_mlp("big.onnx", "x", "y", 32, 4096, 8, 90, 91, NULL); /* 512 KiB of W1 */
	compile("big.onnx", NULL, 0);
	int64_t before = live_bytes();
	struct rt_model *m = load_opts("big_ctx.onnx", NULL);
	int64_t used = live_bytes() - before;
	assert_true(used < 64 * 1024);
	runtime_model_free(m);
	before = live_bytes();
	m = load_opts("big.onnx", NULL);
	assert_true(live_bytes() - before > 512 * 1024);
	runtime_model_free(m);
}

/* An int8 layer, fused (QuantLinear) and not (MatMulInteger): its packed
 * weights travel in the context, so a load packs nothing and keeps no copy
 * of the weights, and the outputs are the source model's bit for bit. */
static void test_int8_packs(void **state)
{
	static const char *disabled[][2] = { { "session.graph_optimization_level", "disabled" } };
	for (int fused = 1; fused >= 0; fused--) {
		make_qlayer("q8.onnx", 4096, 64, 17); /* 256 KiB of Wq */
		struct rt_options *o = fused ? NULL : opts(disabled, 1);
		compile("q8.onnx", fused ? NULL : disabled, fused ? 0 : 1);
		int64_t before = live_bytes();
		struct rt_model *m = load_opts("q8_ctx.onnx", o);
		int64_t used = live_bytes() - before;
		if (used >= 64 * 1024)
			fail_msg("%s: loading the context took %lld bytes", fused ? "fused" : "unfused",
			         (long long)used);
		int found = 0;
		for (int i = 0; i < m->g.nnodes; i++)
			found += strcmp(m->g.nodes[i].op, fused ? "QuantLinear" : "MatMulInteger") == 0 &&
			         m->g.nodes[i].npre == 1;
		assert_int_equal(found, 1);
		runtime_model_free(m);
		same_outputs_io("q8.onnx", "q8_ctx.onnx", o, 4096, 64);
		runtime_options_free(o);
		remove(path("q8_ctx.onnx"));
		remove(path("q8_ctx_strata.bin"));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_options_strict),
		cmocka_unit_test(test_generate_from_path),
		cmocka_unit_test(test_generate_embedded),
		cmocka_unit_test(test_bf16_context),
		cmocka_unit_test(test_prefix_and_file_path),
		cmocka_unit_test(test_binary_in_subfolder),
		cmocka_unit_test(test_buffers),
		cmocka_unit_test(test_external_data),
		cmocka_unit_test(test_mixed_and_secondary_contexts),
		cmocka_unit_test(test_share_generation_and_load),
		cmocka_unit_test(test_share_load_threads),
		cmocka_unit_test(test_share_failures_and_rewrites),
		cmocka_unit_test(test_unusable_binaries),
		cmocka_unit_test(test_other_instruction_set),
		cmocka_unit_test(test_other_source),
		cmocka_unit_test(test_load_allocates_little),
		cmocka_unit_test(test_int8_packs),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
