/*
 * test_infer.c: static shapes and constant folding at load (runtime/infer.c)
 * on models built with tests/modelbuild.h.  Covers the exporters' Shape ->
 * Gather -> Unsqueeze -> Concat -> Reshape chain with symbols, broadcasting
 * of symbols, Reshape's 0 and -1, a slice of a table by a symbol, declared
 * output shapes that contradict the inferred ones, folding (the node is
 * skipped, outputs bit-identical to an unfolded load), the run-time shape
 * check, and allocation failures while folding.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../runtime/runtime_int.h"
#include "modelbuild.h"

/* ---- helpers -------------------------------------------------------------------- */

/* How load_mb loads: with session.check_shapes (1) or not (0), or with the
 * optimizations off (NO_FOLD). */
enum { PLAIN, CHECK, NO_FOLD };
static int load_how = PLAIN;

static int load_mb(struct mb_model *mb, struct rt_model **m, struct strata_error *err)
{
	void *buf;
	size_t n;
	assert_int_equal(mb_serialize(mb, &buf, &n), 0);
	mb_free(mb);
	memset(err, 0, sizeof *err);
	struct rt_options *o;
	assert_int_equal(runtime_options_new(&o, err), 0);
	if (load_how == CHECK)
		assert_int_equal(runtime_options_set(o, "session.check_shapes", "1", err), 0);
	if (load_how == NO_FOLD)
		assert_int_equal(
			runtime_options_set(o, "session.graph_optimization_level", "disabled", err), 0);
	int rc = runtime_model_load_buffer_opts(buf, n, NULL, o, m, err);
	runtime_options_free(o);
	free(buf);
	return rc;
}

/* Assert that value name of m has the static shape want ("[batch,seq,4]"). */
static void shape_is(const struct rt_model *m, const char *name, const char *want)
{
	struct rt_shape s;
	char got[256];
	if (rt_model_value_shape(m, name, &s) != 0)
		fail_msg("no value \"%s\"", name);
	rt_shape_format(&s, got, sizeof got);
	if (strcmp(got, want) != 0)
		fail_msg("value \"%s\": shape %s, expected %s", name, got, want);
}

static int has(const char *hay, const char *needle)
{
	if (!strstr(hay, needle)) {
		print_error("message \"%s\" lacks \"%s\"\n", hay, needle);
		return 0;
	}
	return 1;
}

static const char *const batch_seq[] = { "batch", "seq", "" };

/* ---- shapes --------------------------------------------------------------------- */

/* x [batch,seq,8] -> Reshape to [batch,seq,2,4] with the target built from
 * Shape(x), the way exporters write multi-head attention, then attention
 * over the heads. */
static void test_exporter_chain(void **state)
{
	(void)state;
	struct rt_model *m;
	struct strata_error err;
	static const int64_t zero = 0, one = 1, axes0[1] = { 0 }, two[1] = { 2 }, four[1] = { 4 };
	struct mb_model *mb = mb_new("heads", 17);
	mb_input(mb, "x", BASE_DT_FLOAT, 3, (int64_t[]){ -1, -1, 8 }, batch_seq);
	mb_init(mb, "i0", BASE_DT_INT64, 0, NULL, &zero);
	mb_init(mb, "i1", BASE_DT_INT64, 0, NULL, &one);
	mb_init(mb, "axes", BASE_DT_INT64, 1, (int64_t[]){ 1 }, axes0);
	mb_init(mb, "c2", BASE_DT_INT64, 1, (int64_t[]){ 1 }, two);
	mb_init(mb, "c4", BASE_DT_INT64, 1, (int64_t[]){ 1 }, four);
	mb_node(mb, "Shape", "x", "sx");
	mb_node(mb, "Gather", "sx,i0", "b");
	mb_node(mb, "Gather", "sx,i1", "s");
	mb_node(mb, "Unsqueeze", "b,axes", "bu");
	mb_node(mb, "Unsqueeze", "s,axes", "su");
	mb_attr_int(mb_node(mb, "Concat", "bu,su,c2,c4", "target"), "axis", 0);
	mb_node(mb, "Reshape", "x,target", "r");
	mb_attr_ints(mb_node(mb, "Transpose", "r", "t"), "perm", 4, (int64_t[]){ 0, 2, 1, 3 });
	mb_attr_ints(mb_node(mb, "Transpose", "t", "tk"), "perm", 4, (int64_t[]){ 0, 1, 3, 2 });
	mb_node(mb, "MatMul", "t,tk", "scores");
	mb_attr_int(mb_node(mb, "Softmax", "scores", "p"), "axis", -1);
	mb_node(mb, "MatMul", "p,t", "ctx");
	mb_node(mb, "Size", "ctx", "n");
	mb_output(mb, "ctx", BASE_DT_FLOAT, 4, (int64_t[]){ -1, 2, -1, 4 }, NULL);
	mb_output(mb, "n", BASE_DT_INT64, 0, NULL, NULL);
	load_how = CHECK;
	assert_int_equal(load_mb(mb, &m, &err), 0);
	shape_is(m, "sx", "[3]");
	shape_is(m, "b", "[]");
	shape_is(m, "bu", "[1]");
	shape_is(m, "target", "[4]");
	shape_is(m, "r", "[batch,seq,2,4]");
	shape_is(m, "t", "[batch,2,seq,4]");
	shape_is(m, "tk", "[batch,2,4,seq]");
	shape_is(m, "scores", "[batch,2,seq,seq]");
	shape_is(m, "p", "[batch,2,seq,seq]");
	shape_is(m, "ctx", "[batch,2,seq,4]");
	shape_is(m, "n", "[]");
	/* The target's cells are tracked as symbols. */
	const struct rt_value *tv = &m->g.values[rt_graph_find(&m->g, "target")];
	assert_int_equal(tv->content.rank, 4);
	assert_string_equal(tv->content.d[0].sym, "batch");
	assert_string_equal(tv->content.d[1].sym, "seq");
	assert_int_equal(tv->content.d[2].size, 2);
	assert_int_equal(tv->content.d[3].size, 4);
	assert_int_equal(rt_shape_full(&m->g.values[rt_graph_find(&m->g, "ctx")].shape), 1);

	/* Runs agree with the static shapes (the check is on). */
	struct rt_ctx *cx;
	assert_int_equal(runtime_ctx_new(m, &cx, &err), 0);
	float x[3 * 5 * 8];
	for (int i = 0; i < 3 * 5 * 8; i++)
		x[i] = (float)(i % 11) * 0.1f;
	struct rt_tensor in = { BASE_DT_FLOAT, 3, { 3, 5, 8 }, x }, out[2];
	assert_int_equal(runtime_run(cx, &in, out, &err), 0);
	assert_int_equal(out[0].rank, 4);
	assert_int_equal(out[0].dims[0], 3);
	assert_int_equal(out[0].dims[2], 5);
	assert_int_equal(*(int64_t *)out[1].data, 3 * 2 * 5 * 4);
	runtime_ctx_free(cx);
	runtime_model_free(m);
	load_how = PLAIN;
}

static void test_broadcast_symbols(void **state)
{
	(void)state;
	struct rt_model *m;
	struct strata_error err;
	struct mb_model *mb = mb_new("bcast", 17);
	mb_input(mb, "a", BASE_DT_FLOAT, 3, (int64_t[]){ -1, 1, 4 }, (const char *[]){ "batch", "", "" });
	mb_input(mb, "b", BASE_DT_FLOAT, 2, (int64_t[]){ -1, 1 }, (const char *[]){ "seq", "" });
	mb_input(mb, "c", BASE_DT_FLOAT, 2, (int64_t[]){ -1, 4 }, (const char *[]){ "other", "" });
	mb_input(mb, "d", BASE_DT_FLOAT, 1, (int64_t[]){ -1 }, (const char *[]){ "batch" });
	mb_input(mb, "u", BASE_DT_FLOAT, -1, NULL, NULL);
	mb_node(mb, "Add", "a,b", "ab");           /* [batch,1,4] + [seq,1] */
	mb_node(mb, "Mul", "ab,c", "abc");         /* different symbols: unknown */
	mb_node(mb, "Sub", "d,d", "dd");           /* equal symbols */
	mb_node(mb, "Max", "a,b,d", "m3");         /* n-ary */
	mb_node(mb, "Greater", "a,b", "g");
	mb_node(mb, "Where", "g,a,b", "w");
	mb_node(mb, "Add", "a,u", "au");           /* unknown rank */
	mb_node(mb, "Relu", "ab", "rl");
	mb_output(mb, "abc", BASE_DT_FLOAT, -1, NULL, NULL);
	mb_output(mb, "dd", BASE_DT_FLOAT, -1, NULL, NULL);
	mb_output(mb, "m3", BASE_DT_FLOAT, -1, NULL, NULL);
	mb_output(mb, "w", BASE_DT_FLOAT, -1, NULL, NULL);
	mb_output(mb, "au", BASE_DT_FLOAT, -1, NULL, NULL);
	mb_output(mb, "rl", BASE_DT_FLOAT, -1, NULL, NULL);
	assert_int_equal(load_mb(mb, &m, &err), 0);
	shape_is(m, "ab", "[batch,seq,4]");
	shape_is(m, "abc", "[batch,?,4]");
	shape_is(m, "dd", "[batch]");
	shape_is(m, "m3", "[batch,seq,4]"); /* 4 against batch: 4 when it runs */
	shape_is(m, "g", "[batch,seq,4]");
	shape_is(m, "w", "[batch,seq,4]");
	shape_is(m, "au", "?");
	shape_is(m, "rl", "[batch,seq,4]");
	runtime_model_free(m);
	/* A size other than 1 against a symbol is that size. */
	mb = mb_new("bcast2", 17);
	mb_input(mb, "a", BASE_DT_FLOAT, 2, (int64_t[]){ -1, 3 }, batch_seq);
	mb_input(mb, "b", BASE_DT_FLOAT, 2, (int64_t[]){ 5, -1 }, (const char *[]){ "", "" });
	mb_node(mb, "Add", "a,b", "y");
	mb_output(mb, "y", BASE_DT_FLOAT, 2, (int64_t[]){ 5, 3 }, NULL);
	assert_int_equal(load_mb(mb, &m, &err), 0);
	shape_is(m, "y", "[5,?]");
	runtime_model_free(m);
}

static void test_reshape(void **state)
{
	(void)state;
	struct rt_model *m;
	struct strata_error err;
	static const int64_t t1[4] = { 0, 0, -1, 2 }, t2[2] = { -1, 6 }, t3[2] = { 0, -1 };
	struct mb_model *mb = mb_new("reshape", 17);
	mb_input(mb, "x", BASE_DT_FLOAT, 3, (int64_t[]){ -1, -1, 8 }, batch_seq);
	mb_input(mb, "k", BASE_DT_FLOAT, 3, (int64_t[]){ 2, 3, 4 }, NULL);
	mb_init(mb, "t1", BASE_DT_INT64, 1, (int64_t[]){ 4 }, t1);
	mb_init(mb, "t2", BASE_DT_INT64, 1, (int64_t[]){ 2 }, t2);
	mb_init(mb, "t3", BASE_DT_INT64, 1, (int64_t[]){ 2 }, t3);
	mb_node(mb, "Reshape", "x,t1", "r1");     /* [batch,seq,4,2] */
	mb_node(mb, "Reshape", "k,t2", "r2");     /* [4,6] */
	mb_node(mb, "Reshape", "x,t3", "r3");     /* [batch, seq*8]: not a single symbol */
	mb_node(mb, "Flatten", "r1", "f1");       /* axis 1: [batch, seq*8] */
	mb_attr_int(mb_node(mb, "Flatten", "k", "f2"), "axis", 2);
	/* -1 with symbols on both sides cancelling: [batch*seq, 8] back to [batch,seq,-1]. */
	mb_node(mb, "Shape", "x", "sx");
	static const int64_t s0 = 0, e2 = 2, m1[1] = { -1 };
	mb_init(mb, "s0", BASE_DT_INT64, 1, (int64_t[]){ 1 }, &s0);
	mb_init(mb, "e2", BASE_DT_INT64, 1, (int64_t[]){ 1 }, &e2);
	mb_init(mb, "m1", BASE_DT_INT64, 1, (int64_t[]){ 1 }, m1);
	mb_node(mb, "Slice", "sx,s0,e2", "bs");   /* {batch, seq} */
	mb_attr_int(mb_node(mb, "Concat", "bs,m1", "t4"), "axis", 0);
	mb_node(mb, "Reshape", "r1,t4", "r4");    /* [batch,seq,8] */
	mb_output(mb, "r2", BASE_DT_FLOAT, -1, NULL, NULL);
	mb_output(mb, "r3", BASE_DT_FLOAT, -1, NULL, NULL);
	mb_output(mb, "f1", BASE_DT_FLOAT, -1, NULL, NULL);
	mb_output(mb, "f2", BASE_DT_FLOAT, -1, NULL, NULL);
	mb_output(mb, "r4", BASE_DT_FLOAT, 3, (int64_t[]){ -1, -1, 8 }, batch_seq);
	load_how = CHECK;
	assert_int_equal(load_mb(mb, &m, &err), 0);
	shape_is(m, "r1", "[batch,seq,4,2]");
	shape_is(m, "r2", "[4,6]");
	shape_is(m, "r3", "[batch,?]");
	shape_is(m, "f1", "[batch,?]");
	shape_is(m, "f2", "[6,4]");
	shape_is(m, "bs", "[2]");
	shape_is(m, "r4", "[batch,seq,8]");
	struct rt_ctx *cx;
	assert_int_equal(runtime_ctx_new(m, &cx, &err), 0);
	float x[2 * 3 * 8] = { 0 }, k[24] = { 0 };
	struct rt_tensor in[2] = { { BASE_DT_FLOAT, 3, { 2, 3, 8 }, x }, { BASE_DT_FLOAT, 3, { 2, 3, 4 }, k } };
	struct rt_tensor out[5];
	assert_int_equal(runtime_run(cx, in, out, &err), 0);
	runtime_ctx_free(cx);
	runtime_model_free(m);
	load_how = PLAIN;
}

/* Slicing a position table by a length read with Shape gives min(seq, 16);
 * added to [batch,seq,4] it is seq again. */
static void test_slice_by_symbol(void **state)
{
	(void)state;
	struct rt_model *m;
	struct strata_error err;
	static float table[16 * 4];
	static const int64_t one = 1, zero[1] = { 0 }, ax1[1] = { 1 };
	struct mb_model *mb = mb_new("pos", 17);
	mb_input(mb, "x", BASE_DT_FLOAT, 3, (int64_t[]){ -1, -1, 4 }, batch_seq);
	mb_init(mb, "table", BASE_DT_FLOAT, 3, (int64_t[]){ 1, 16, 4 }, table);
	mb_init(mb, "one", BASE_DT_INT64, 0, NULL, &one);
	mb_init(mb, "zero", BASE_DT_INT64, 1, (int64_t[]){ 1 }, zero);
	mb_init(mb, "ax1", BASE_DT_INT64, 1, (int64_t[]){ 1 }, ax1);
	mb_node(mb, "Shape", "x", "sx");
	mb_node(mb, "Gather", "sx,one", "s");
	mb_node(mb, "Unsqueeze", "s,zero", "su");
	mb_node(mb, "Slice", "table,zero,su,ax1", "pos");
	mb_node(mb, "Add", "x,pos", "y");
	mb_output(mb, "y", BASE_DT_FLOAT, -1, NULL, NULL);
	load_how = CHECK;
	assert_int_equal(load_mb(mb, &m, &err), 0);
	shape_is(m, "pos", "[1,min(seq,16),4]");
	shape_is(m, "y", "[batch,seq,4]");
	struct rt_ctx *cx;
	assert_int_equal(runtime_ctx_new(m, &cx, &err), 0);
	float x[2 * 5 * 4] = { 0 };
	struct rt_tensor in = { BASE_DT_FLOAT, 3, { 2, 5, 4 }, x }, out;
	assert_int_equal(runtime_run(cx, &in, &out, &err), 0);
	runtime_ctx_free(cx);
	runtime_model_free(m);
	load_how = PLAIN;
}

static void test_more_rules(void **state)
{
	(void)state;
	struct rt_model *m;
	struct strata_error err;
	static const int64_t ax[2] = { 0, 2 }, sp[2] = { 3, 5 }, k2 = 2, rep[3] = { 2, 1, 3 };
	struct mb_model *mb = mb_new("rules", 17);
	mb_input(mb, "x", BASE_DT_FLOAT, 3, (int64_t[]){ -1, 8, 6 }, (const char *[]){ "batch", "", "" });
	mb_input(mb, "g", BASE_DT_FLOAT, 2, (int64_t[]){ 6, 3 }, NULL);
	mb_input(mb, "idx", BASE_DT_INT64, 2, (int64_t[]){ -1, -1 }, batch_seq);
	mb_init(mb, "ax", BASE_DT_INT64, 1, (int64_t[]){ 2 }, ax);
	mb_init(mb, "sp", BASE_DT_INT64, 1, (int64_t[]){ 2 }, sp);
	mb_init(mb, "k", BASE_DT_INT64, 1, (int64_t[]){ 1 }, &k2);
	mb_init(mb, "rep", BASE_DT_INT64, 1, (int64_t[]){ 3 }, rep);
	mb_attr_int(mb_node(mb, "ReduceSum", "x,ax", "rs"), "keepdims", 0);
	mb_node(mb, "ReduceSum", "x,ax", "rk");
	struct mb_node *rm = mb_node(mb, "ReduceMean", "x", "rm");
	mb_attr_ints(rm, "axes", 1, (int64_t[]){ -1 });
	mb_attr_int(mb_node(mb, "ArgMax", "x", "am"), "axis", 1);
	mb_attr_int(mb_node(mb, "Split", "x,sp", "s1,s2"), "axis", 1);
	mb_node(mb, "TopK", "x,k", "tv,ti");
	mb_attr_int(mb_node(mb, "Gemm", "g,g", "gm"), "transA", 1);
	mb_node(mb, "Tile", "x,rep", "tl");
	mb_attr_int(mb_node(mb, "Gather", "g,idx", "ga"), "axis", 1);
	static const float ones[6] = { 1, 1, 1, 1, 1, 1 };
	mb_init(mb, "scale", BASE_DT_FLOAT, 1, (int64_t[]){ 6 }, ones);
	mb_node(mb, "LayerNormalization", "x,scale", "ln");
	mb_node(mb, "GlobalAveragePool", "x", "gp");
	mb_output(mb, "rs", BASE_DT_FLOAT, -1, NULL, NULL);
	mb_output(mb, "rk", BASE_DT_FLOAT, -1, NULL, NULL);
	mb_output(mb, "rm", BASE_DT_FLOAT, -1, NULL, NULL);
	mb_output(mb, "am", BASE_DT_INT64, -1, NULL, NULL);
	mb_output(mb, "s1", BASE_DT_FLOAT, -1, NULL, NULL);
	mb_output(mb, "s2", BASE_DT_FLOAT, -1, NULL, NULL);
	mb_output(mb, "tv", BASE_DT_FLOAT, -1, NULL, NULL);
	mb_output(mb, "gm", BASE_DT_FLOAT, -1, NULL, NULL);
	mb_output(mb, "tl", BASE_DT_FLOAT, -1, NULL, NULL);
	mb_output(mb, "ga", BASE_DT_FLOAT, -1, NULL, NULL);
	mb_output(mb, "gp", BASE_DT_FLOAT, -1, NULL, NULL);
	if (load_mb(mb, &m, &err) != 0)
		fail_msg("%s", err.msg);
	shape_is(m, "rs", "[8]");
	shape_is(m, "rk", "[1,8,1]");
	shape_is(m, "rm", "[batch,8,1]");
	shape_is(m, "am", "[batch,1,6]");
	shape_is(m, "s1", "[batch,3,6]");
	shape_is(m, "s2", "[batch,5,6]");
	shape_is(m, "tv", "[batch,8,2]");
	shape_is(m, "ti", "[batch,8,2]");
	shape_is(m, "gm", "[3,3]");
	shape_is(m, "tl", "[?,8,18]");
	shape_is(m, "ga", "[6,batch,seq]");
	shape_is(m, "ln", "[batch,8,6]");
	shape_is(m, "gp", "[batch,8,1]");
	runtime_model_free(m);
}

/* A declared output shape that contradicts the inferred one fails the load. */
static void test_contradiction(void **state)
{
	(void)state;
	struct rt_model *m = NULL;
	struct strata_error err;
	static const float w[8] = { 0 };
	struct mb_model *mb = mb_new("bad", 17);
	mb_input(mb, "x", BASE_DT_FLOAT, 2, (int64_t[]){ -1, 4 }, batch_seq);
	mb_init(mb, "w", BASE_DT_FLOAT, 2, (int64_t[]){ 4, 2 }, w);
	mb_node(mb, "MatMul", "x,w", "y");
	mb_output(mb, "y", BASE_DT_FLOAT, 2, (int64_t[]){ -1, 3 }, batch_seq);
	assert_int_equal(load_mb(mb, &m, &err), STRATA_INVALID_GRAPH);
	assert_null(m);
	assert_true(has(err.msg, "\"y\""));
	assert_true(has(err.msg, "[batch,3]"));
	assert_true(has(err.msg, "[batch,2]"));

	/* A different rank. */
	mb = mb_new("bad2", 17);
	mb_input(mb, "x", BASE_DT_FLOAT, 2, (int64_t[]){ -1, 4 }, batch_seq);
	mb_init(mb, "w", BASE_DT_FLOAT, 2, (int64_t[]){ 4, 2 }, w);
	mb_node(mb, "MatMul", "x,w", "y");
	mb_output(mb, "y", BASE_DT_FLOAT, 3, (int64_t[]){ -1, -1, 2 }, NULL);
	assert_int_equal(load_mb(mb, &m, &err), STRATA_INVALID_GRAPH);
	assert_true(has(err.msg, "\"y\""));
	assert_true(has(err.msg, "[?,?,2]"));

	/* Other symbol names, unknown dims: no contradiction. */
	mb = mb_new("ok", 17);
	mb_input(mb, "x", BASE_DT_FLOAT, 2, (int64_t[]){ -1, 4 }, batch_seq);
	mb_init(mb, "w", BASE_DT_FLOAT, 2, (int64_t[]){ 4, 2 }, w);
	mb_node(mb, "MatMul", "x,w", "y");
	mb_output(mb, "y", BASE_DT_FLOAT, 2, (int64_t[]){ -1, -1 }, (const char *[]){ "N", "" });
	assert_int_equal(load_mb(mb, &m, &err), 0);
	runtime_model_free(m);
}

/* ---- folding -------------------------------------------------------------------- */

/* y = x @ (transpose(w) * sqrt(c) / 3) + (shape-derived constant), where
 * everything right of x is constant. */
static struct mb_model *fold_model(void)
{
	static const float w[6] = { 0.1f, -1.7f, 2.3f, 0.77f, 3.14159f, -0.001f };
	static const float c = 2.0f, three = 3.0f;
	static const int64_t i1 = 1;
	struct mb_model *mb = mb_new("fold", 17);
	mb_input(mb, "x", BASE_DT_FLOAT, 2, (int64_t[]){ -1, 2 }, batch_seq);
	mb_init(mb, "w", BASE_DT_FLOAT, 2, (int64_t[]){ 3, 2 }, w);
	mb_init(mb, "c", BASE_DT_FLOAT, 0, NULL, &c);
	mb_init(mb, "three", BASE_DT_FLOAT, 0, NULL, &three);
	mb_init(mb, "i1", BASE_DT_INT64, 0, NULL, &i1);
	mb_node(mb, "Transpose", "w", "wt");
	mb_node(mb, "Sqrt", "c", "sc");
	mb_node(mb, "Mul", "wt,sc", "ws");
	mb_node(mb, "Div", "ws,three", "wd");
	mb_node(mb, "Shape", "w", "sw");
	mb_node(mb, "Gather", "sw,i1", "n");
	mb_attr_int(mb_node(mb, "Cast", "n", "nf2"), "to", BASE_DT_FLOAT);
	mb_node(mb, "MatMul", "x,wd", "xw");
	mb_node(mb, "Add", "xw,nf2", "y");
	mb_node(mb, "RandomUniformLike", "w", "noise"); /* never folded */
	mb_output(mb, "y", BASE_DT_FLOAT, 2, (int64_t[]){ -1, 3 }, batch_seq);
	mb_output(mb, "wd", BASE_DT_FLOAT, -1, NULL, NULL);
	mb_output(mb, "noise", BASE_DT_FLOAT, -1, NULL, NULL);
	return mb;
}

static void run_fold_model(struct rt_model *m, struct rt_tensor *out)
{
	struct strata_error err;
	struct rt_ctx *cx;
	static float x[8] = { 1.5f, -2.25f, 0.3f, 7.0f, -0.0001f, 1e6f, 3.0f, 0.5f };
	assert_int_equal(runtime_ctx_new(m, &cx, &err), 0);
	struct rt_tensor in = { BASE_DT_FLOAT, 2, { 4, 2 }, x }, o[3];
	assert_int_equal(runtime_run(cx, &in, o, &err), 0);
	for (int k = 0; k < 2; k++) {
		out[k] = o[k];
		size_t bytes = (size_t)runtime_tensor_count(&o[k]) * sizeof(float);
		out[k].data = malloc(bytes);
		memcpy(out[k].data, o[k].data, bytes);
	}
	runtime_ctx_free(cx);
}

static void test_folding(void **state)
{
	(void)state;
	struct rt_model *m, *u;
	struct strata_error err;
	load_how = CHECK;
	assert_int_equal(load_mb(fold_model(), &m, &err), 0);
	load_how = NO_FOLD;
	assert_int_equal(load_mb(fold_model(), &u, &err), 0);
	load_how = PLAIN;
	/* Transpose, Sqrt, Mul, Div, Shape, Gather and Cast fold; the MatMul,
	 * the Add and the random draw do not. */
	assert_int_equal(m->nfolded, 7);
	assert_int_equal(u->nfolded, 0);
	int ran = 0;
	for (int i = 0; i < m->g.nnodes; i++)
		ran += !m->g.nodes[i].folded;
	assert_int_equal(ran, 3);
	const struct rt_value *wd = &m->g.values[rt_graph_find(&m->g, "wd")];
	assert_non_null(wd->konst);
	assert_int_equal(wd->producer, -1);
	assert_null(u->g.values[rt_graph_find(&u->g, "wd")].konst);
	shape_is(m, "wd", "[2,3]");
	shape_is(u, "wd", "[2,3]");
	shape_is(m, "n", "[]");
	shape_is(u, "y", "[batch,3]");
	assert_int_equal(m->g.values[rt_graph_find(&m->g, "n")].content.d[0].size, 2);
	assert_int_equal(u->g.values[rt_graph_find(&u->g, "n")].content.d[0].size, 2);

	/* Bit-identical results, folded or not. */
	struct rt_tensor a[2], b[2];
	run_fold_model(m, a);
	run_fold_model(u, b);
	for (int k = 0; k < 2; k++) {
		assert_int_equal(a[k].rank, b[k].rank);
		assert_memory_equal(a[k].dims, b[k].dims, sizeof a[k].dims);
		assert_memory_equal(a[k].data, b[k].data,
		                    (size_t)runtime_tensor_count(&a[k]) * sizeof(float));
		free(a[k].data);
		free(b[k].data);
	}
	/* A warm run of the folded model allocates nothing either. */
	struct rt_ctx *cx;
	float x[4] = { 1, 2, 3, 4 };
	struct rt_tensor in = { BASE_DT_FLOAT, 2, { 2, 2 }, x }, o[3];
	assert_int_equal(runtime_ctx_new(m, &cx, &err), 0);
	assert_int_equal(runtime_run(cx, &in, o, &err), 0);
	uint64_t before = base_alloc_thread_count();
	assert_int_equal(runtime_run(cx, &in, o, &err), 0);
	assert_int_equal(base_alloc_thread_count(), before);
	runtime_ctx_free(cx);
	runtime_model_free(m);
	runtime_model_free(u);
}

/* A node whose kernel fails on its constant inputs is left to fail at run
 * time, with the same message. */
static void test_fold_failure_deferred(void **state)
{
	(void)state;
	struct rt_model *m;
	struct strata_error err;
	static const float d[3] = { 1, 2, 3 };
	static const int64_t bad = 7;
	struct mb_model *mb = mb_new("badgather", 17);
	mb_input(mb, "x", BASE_DT_FLOAT, 0, NULL, NULL);
	mb_init(mb, "d", BASE_DT_FLOAT, 1, (int64_t[]){ 3 }, d);
	mb_init(mb, "i", BASE_DT_INT64, 0, NULL, &bad);
	mb_node(mb, "Gather", "d,i", "g");
	mb_node(mb, "Add", "g,x", "y");
	mb_output(mb, "y", BASE_DT_FLOAT, 0, NULL, NULL);
	assert_int_equal(load_mb(mb, &m, &err), 0);
	assert_int_equal(m->nfolded, 0);
	struct rt_ctx *cx;
	assert_int_equal(runtime_ctx_new(m, &cx, &err), 0);
	float x = 1;
	struct rt_tensor in = { BASE_DT_FLOAT, 0, { 0 }, &x }, out;
	assert_int_equal(runtime_run(cx, &in, &out, &err), STRATA_RUNTIME);
	assert_true(has(err.msg, "Gather"));
	runtime_ctx_free(cx);
	runtime_model_free(m);
}

/* x -> Relu -> r -> Neg -> y, x of shape [batch,2], loaded as load_how says,
 * with r's static shape then changed to [batch,5] as if a rule had said so. */
static struct rt_model *check_model(void)
{
	struct rt_model *m;
	struct strata_error err;
	struct mb_model *mb = mb_new("chk", 17);
	mb_input(mb, "x", BASE_DT_FLOAT, 2, (int64_t[]){ -1, 2 }, batch_seq);
	mb_node(mb, "Relu", "x", "r");
	mb_node(mb, "Neg", "r", "y");
	mb_output(mb, "y", BASE_DT_FLOAT, -1, NULL, NULL);
	assert_int_equal(load_mb(mb, &m, &err), 0);
	struct rt_value *r = &m->g.values[rt_graph_find(&m->g, "r")];
	assert_int_equal(r->shape.rank, 2);
	r->shape.d[1].size = 5;
	return m;
}

/* The run-time check (session.check_shapes) reports a static shape the real
 * tensor contradicts; without it nothing looks. */
static void test_check_shapes(void **state)
{
	(void)state;
	struct strata_error err;
	float x[4] = { 1, -2, 3, -4 };
	struct rt_tensor in = { BASE_DT_FLOAT, 2, { 2, 2 }, x }, out;
	struct rt_ctx *cx;
	struct rt_model *m = check_model();
	assert_int_equal(runtime_ctx_new(m, &cx, &err), 0);
	assert_int_equal(runtime_run(cx, &in, &out, &err), 0); /* off: nothing looks */
	runtime_ctx_free(cx);
	runtime_model_free(m);

	load_how = CHECK;
	m = check_model();
	load_how = PLAIN;
	struct rt_value *r = &m->g.values[rt_graph_find(&m->g, "r")];
	assert_int_equal(runtime_ctx_new(m, &cx, &err), 0);
	assert_int_equal(runtime_run(cx, &in, &out, &err), STRATA_RUNTIME);
	assert_true(has(err.msg, "static shape is [batch,5]"));
	assert_true(has(err.msg, "[2,2]"));
	/* A symbol is checked against the size the inputs bound it to. */
	r->shape.d[1] = (struct rt_dim){ .size = -1, .sym = "batch" };
	assert_int_equal(runtime_run(cx, &in, &out, &err), 0); /* batch = 2 */
	in.dims[0] = 1;
	assert_int_equal(runtime_run(cx, &in, &out, &err), STRATA_RUNTIME);
	assert_true(has(err.msg, "static shape is [batch,batch]"));
	r->shape.d[1] = (struct rt_dim){ .size = -1, .sym = "seq" }; /* bound by no input */
	assert_int_equal(runtime_run(cx, &in, &out, &err), 0);
	/* A context the session buffer pool gives back checks as well. */
	runtime_ctx_free(cx);
	r->shape.d[1].size = 5;
	r->shape.d[1].sym = NULL;
	assert_int_equal(runtime_ctx_new(m, &cx, &err), 0);
	assert_int_equal(runtime_run(cx, &in, &out, &err), STRATA_RUNTIME);
	runtime_ctx_free(cx);
	runtime_model_free(m);
}

/* Every allocation of a load that folds may fail: NOMEM, never a crash. */
static void test_fold_alloc_failures(void **state)
{
	(void)state;
	void *buf;
	size_t n;
	struct mb_model *mb = fold_model();
	assert_int_equal(mb_serialize(mb, &buf, &n), 0);
	mb_free(mb);
	int succeeded = 0;
	for (long k = 1; k < 2000 && !succeeded; k++) {
		struct rt_model *m = NULL;
		struct strata_error err;
		base_alloc_fail_after(k);
		int rc = runtime_model_load_buffer(buf, n, NULL, &m, &err);
		base_alloc_fail_after(0);
		if (rc == 0)
			succeeded = 1;
		else
			assert_int_equal(rc, STRATA_NOMEM);
		runtime_model_free(m);
	}
	assert_true(succeeded);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exporter_chain),
		cmocka_unit_test(test_broadcast_symbols),
		cmocka_unit_test(test_reshape),
		cmocka_unit_test(test_slice_by_symbol),
		cmocka_unit_test(test_more_rules),
		cmocka_unit_test(test_contradiction),
		cmocka_unit_test(test_folding),
		cmocka_unit_test(test_fold_failure_deferred),
		cmocka_unit_test(test_check_shapes),
		cmocka_unit_test(test_fold_alloc_failures),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
