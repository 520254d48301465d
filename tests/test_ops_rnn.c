/*
 * test_ops_rnn.c: unit tests of runtime/ops/rnn.c (RNN, GRU, LSTM) and
 * runtime/ops/einsum.c (Einsum).
 *
 * Each test builds a one-node model with tests/opcase.h, runs it and
 * compares with values computed here by plain loops written from the
 * operator definitions (one cell at a time, in double).  Layout 1 is checked
 * against layout 0 on transposed data, Einsum against explicit loops on both
 * its GEMM path (float contractions) and its general path (double, int64,
 * diagonals, ellipsis).  Error paths check the code and a telling part of the
 * message: bad equations and attributes fail the load, shapes that do not
 * fit fail the run.
 */
#include <math.h>
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
#include "opcase.h"
#include "onnx.pb-c.h"

/* ---- harness --------------------------------------------------------------------- */

/* A model holding one node op(ins) -> outs; every named input and output is
 * a graph input / output of any shape, of type dt (sequence_lens: int32). */
static struct mb_node *one_node(struct mb_model *mb, const char *op, const char *ins,
                                const char *outs, int dt)
{
	char buf[256];
	const char *lists[2] = {ins, outs};
	for (int l = 0; l < 2; l++) {
		snprintf(buf, sizeof buf, "%s", lists[l]);
		char *save = NULL;
		for (char *s = strtok_r(buf, ",", &save); s; s = strtok_r(NULL, ",", &save)) {
			int t = strcmp(s, "sl") == 0 ? BASE_DT_INT32 : dt;
			if (l == 0)
				mb_input(mb, s, t, -1, NULL, NULL);
			else
				mb_output(mb, s, t, -1, NULL, NULL);
		}
	}
	return mb_node(mb, op, ins, outs);
}

static void assert_close(const float *got, const double *want, int64_t n, double tol)
{
	for (int64_t i = 0; i < n; i++) {
		if (fabs((double)got[i] - want[i]) > tol * (1.0 + fabs(want[i]))) {
			print_error("cell %lld: got %.9g, want %.9g\n", (long long)i, got[i], want[i]);
			fail();
		}
	}
}

static void fill(float *p, int n, unsigned seed)
{
	for (int i = 0; i < n; i++)
		p[i] = oc_frand(&seed);
}

static double sigm(double v)
{
	return 1.0 / (1.0 + exp(-v));
}

/* sum_j m[row, j] * v[j] over a row-major matrix with cols columns */
static double dot(const float *m, int row, int cols, const double *v)
{
	double s = 0;
	for (int j = 0; j < cols; j++)
		s += m[row * cols + j] * v[j];
	return s;
}

/* ---- RNN, GRU, LSTM values --------------------------------------------------------- */

enum { S = 3, NB = 2, I = 3, H = 2 }; /* sequence, batch, input, hidden */

static void test_rnn_values(void **st)
{
	(void)st;
	float X[S * NB * I], W[H * I], R[H * H], B[2 * H], H0[NB * H];
	fill(X, S * NB * I, 1), fill(W, H * I, 2), fill(R, H * H, 3), fill(B, 2 * H, 4);
	fill(H0, NB * H, 5);
	struct mb_model *mb = mb_new("t", 14);
	struct mb_node *nd = one_node(mb, "RNN", "x,w,r,b,,h0", "y,yh", BASE_DT_FLOAT);
	mb_attr_int(nd, "hidden_size", H);
	struct oc_case o;
	assert_int_equal(oc_load(mb, &o), 0);
	struct rt_tensor in[5] = {
		oc_tensor(BASE_DT_FLOAT, 3, (int64_t[]){S, NB, I}, X),
		oc_tensor(BASE_DT_FLOAT, 3, (int64_t[]){1, H, I}, W),
		oc_tensor(BASE_DT_FLOAT, 3, (int64_t[]){1, H, H}, R),
		oc_tensor(BASE_DT_FLOAT, 2, (int64_t[]){1, 2 * H}, B),
		oc_tensor(BASE_DT_FLOAT, 3, (int64_t[]){1, NB, H}, H0),
	};
	assert_int_equal(oc_run(&o, in), 0);
	double want[S * NB * H];
	for (int b = 0; b < NB; b++) {
		double h[H] = {H0[b * H], H0[b * H + 1]}, xt[I], nh[H];
		for (int t = 0; t < S; t++) {
			for (int i = 0; i < I; i++)
				xt[i] = X[(t * NB + b) * I + i];
			for (int k = 0; k < H; k++)
				nh[k] = tanh(dot(W, k, I, xt) + dot(R, k, H, h) + B[k] + B[H + k]);
			for (int k = 0; k < H; k++)
				want[(t * NB + b) * H + k] = h[k] = nh[k];
		}
	}
	assert_int_equal(o.out[0].rank, 4);
	assert_int_equal(o.out[0].dims[1], 1);
	assert_close(o.out[0].data, want, S * NB * H, 1e-5);
	assert_close(o.out[1].data, want + (S - 1) * NB * H, NB * H, 1e-5);
	oc_free(&o);
}

/* One GRU pass (forward) over X [S, NB, I]; y [S, NB, H]. */
static void gru_ref(const float *X, const float *W, const float *R, const float *B, int lbr,
                    double *y)
{
	for (int b = 0; b < NB; b++) {
		double h[H] = {0}, xt[I], nh[H];
		for (int t = 0; t < S; t++) {
			for (int i = 0; i < I; i++)
				xt[i] = X[(t * NB + b) * I + i];
			double z[H], r[H], rh[H];
			for (int k = 0; k < H; k++) {
				z[k] = sigm(dot(W, k, I, xt) + dot(R, k, H, h) + B[k] + B[3 * H + k]);
				r[k] = sigm(dot(W, H + k, I, xt) + dot(R, H + k, H, h) + B[H + k] +
				            B[4 * H + k]);
				rh[k] = r[k] * h[k];
			}
			for (int k = 0; k < H; k++) {
				double cand;
				if (lbr)
					cand = dot(W, 2 * H + k, I, xt) + B[2 * H + k] +
					       r[k] * (dot(R, 2 * H + k, H, h) + B[5 * H + k]);
				else
					cand = dot(W, 2 * H + k, I, xt) + dot(R, 2 * H + k, H, rh) +
					       B[2 * H + k] + B[5 * H + k];
				nh[k] = (1 - z[k]) * tanh(cand) + z[k] * h[k];
			}
			for (int k = 0; k < H; k++)
				y[(t * NB + b) * H + k] = h[k] = nh[k];
		}
	}
}

static void test_gru_values(void **st)
{
	(void)st;
	float X[S * NB * I], W[3 * H * I], R[3 * H * H], B[6 * H];
	fill(X, S * NB * I, 11), fill(W, 3 * H * I, 12), fill(R, 3 * H * H, 13);
	fill(B, 6 * H, 14);
	for (int lbr = 0; lbr < 2; lbr++) {
		struct mb_model *mb = mb_new("t", 14);
		struct mb_node *nd = one_node(mb, "GRU", "x,w,r,b", "y", BASE_DT_FLOAT);
		mb_attr_int(nd, "hidden_size", H);
		mb_attr_int(nd, "linear_before_reset", lbr);
		struct oc_case o;
		assert_int_equal(oc_load(mb, &o), 0);
		struct rt_tensor in[4] = {
			oc_tensor(BASE_DT_FLOAT, 3, (int64_t[]){S, NB, I}, X),
			oc_tensor(BASE_DT_FLOAT, 3, (int64_t[]){1, 3 * H, I}, W),
			oc_tensor(BASE_DT_FLOAT, 3, (int64_t[]){1, 3 * H, H}, R),
			oc_tensor(BASE_DT_FLOAT, 2, (int64_t[]){1, 6 * H}, B),
		};
		assert_int_equal(oc_run(&o, in), 0);
		double want[S * NB * H];
		gru_ref(X, W, R, B, lbr, want);
		assert_close(o.out[0].data, want, S * NB * H, 1e-5);
		oc_free(&o);
	}
}

static void test_lstm_peepholes(void **st)
{
	(void)st;
	float X[S * NB * I], W[4 * H * I], R[4 * H * H], B[8 * H], P[3 * H];
	fill(X, S * NB * I, 21), fill(W, 4 * H * I, 22), fill(R, 4 * H * H, 23);
	fill(B, 8 * H, 24), fill(P, 3 * H, 25);
	struct mb_model *mb = mb_new("t", 14);
	struct mb_node *nd = one_node(mb, "LSTM", "x,w,r,b,,,,p", "y,yh,yc", BASE_DT_FLOAT);
	mb_attr_int(nd, "hidden_size", H);
	struct oc_case o;
	assert_int_equal(oc_load(mb, &o), 0);
	struct rt_tensor in[5] = {
		oc_tensor(BASE_DT_FLOAT, 3, (int64_t[]){S, NB, I}, X),
		oc_tensor(BASE_DT_FLOAT, 3, (int64_t[]){1, 4 * H, I}, W),
		oc_tensor(BASE_DT_FLOAT, 3, (int64_t[]){1, 4 * H, H}, R),
		oc_tensor(BASE_DT_FLOAT, 2, (int64_t[]){1, 8 * H}, B),
		oc_tensor(BASE_DT_FLOAT, 2, (int64_t[]){1, 3 * H}, P),
	};
	assert_int_equal(oc_run(&o, in), 0);
	double want[S * NB * H], wc[NB * H];
	for (int b = 0; b < NB; b++) {
		double h[H] = {0}, c[H] = {0}, xt[I], nh[H];
		for (int t = 0; t < S; t++) {
			for (int i = 0; i < I; i++)
				xt[i] = X[(t * NB + b) * I + i];
			/* gate g's pre-activation: W rows g*H.., biases Wb + Rb */
#define PRE(g, k) (dot(W, (g) * H + (k), I, xt) + dot(R, (g) * H + (k), H, h) + B[(g) * H + (k)] + \
                   B[4 * H + (g) * H + (k)])
			for (int k = 0; k < H; k++) {
				double ig = sigm(PRE(0, k) + P[k] * c[k]);
				double fg = sigm(PRE(2, k) + P[2 * H + k] * c[k]);
				double cg = tanh(PRE(3, k));
				double cn = fg * c[k] + ig * cg;
				double og = sigm(PRE(1, k) + P[H + k] * cn);
				nh[k] = og * tanh(cn);
				c[k] = cn; /* c[k] is read only by cell k */
			}
#undef PRE
			for (int k = 0; k < H; k++)
				want[(t * NB + b) * H + k] = h[k] = nh[k];
		}
		wc[b * H] = c[0], wc[b * H + 1] = c[1];
	}
	assert_close(o.out[0].data, want, S * NB * H, 1e-5);
	assert_close(o.out[1].data, want + (S - 1) * NB * H, NB * H, 1e-5);
	assert_close(o.out[2].data, wc, NB * H, 1e-5);
	oc_free(&o);
}

/* Bidirectional with sequence_lens: Y past each length is zero, the reverse
 * pass starts at the entry's last valid step and ends at step 0. */
static void test_rnn_bidi_seqlens(void **st)
{
	(void)st;
	float X[S * NB * I], W[2 * H * I], R[2 * H * H];
	fill(X, S * NB * I, 31), fill(W, 2 * H * I, 32), fill(R, 2 * H * H, 33);
	int32_t len[NB] = {3, 1};
	struct mb_model *mb = mb_new("t", 14);
	struct mb_node *nd = one_node(mb, "RNN", "x,w,r,,sl", "y,yh", BASE_DT_FLOAT);
	mb_attr_int(nd, "hidden_size", H);
	mb_attr_string(nd, "direction", "bidirectional");
	struct oc_case o;
	assert_int_equal(oc_load(mb, &o), 0);
	struct rt_tensor in[4] = {
		oc_tensor(BASE_DT_FLOAT, 3, (int64_t[]){S, NB, I}, X),
		oc_tensor(BASE_DT_FLOAT, 3, (int64_t[]){2, H, I}, W),
		oc_tensor(BASE_DT_FLOAT, 3, (int64_t[]){2, H, H}, R),
		oc_tensor(BASE_DT_INT32, 1, (int64_t[]){NB}, len),
	};
	assert_int_equal(oc_run(&o, in), 0);
	double want[S * 2 * NB * H] = {0}, wh[2 * NB * H];
	for (int d = 0; d < 2; d++) {
		for (int b = 0; b < NB; b++) {
			double h[H] = {0}, xt[I], nh[H];
			for (int s = 0; s < len[b]; s++) {
				int t = d ? len[b] - 1 - s : s;
				for (int i = 0; i < I; i++)
					xt[i] = X[(t * NB + b) * I + i];
				for (int k = 0; k < H; k++)
					nh[k] = tanh(dot(W + d * H * I, k, I, xt) + dot(R + d * H * H, k, H, h));
				for (int k = 0; k < H; k++)
					want[((t * 2 + d) * NB + b) * H + k] = h[k] = nh[k];
			}
			for (int k = 0; k < H; k++)
				wh[(d * NB + b) * H + k] = h[k];
		}
	}
	assert_close(o.out[0].data, want, S * 2 * NB * H, 1e-5);
	assert_close(o.out[1].data, wh, 2 * NB * H, 1e-5);
	oc_free(&o);
}

/* layout 1 (batch-major) on transposed data equals layout 0 transposed back. */
static void test_lstm_layout1(void **st)
{
	(void)st;
	float X[S * NB * I], XT[NB * S * I], W[2 * 4 * H * I], R[2 * 4 * H * H], H0[2 * NB * H];
	float H0T[NB * 2 * H];
	fill(X, S * NB * I, 41), fill(W, 2 * 4 * H * I, 42), fill(R, 2 * 4 * H * H, 43);
	fill(H0, 2 * NB * H, 44);
	for (int t = 0; t < S; t++)
		for (int b = 0; b < NB; b++)
			memcpy(XT + (b * S + t) * I, X + (t * NB + b) * I, I * sizeof *X);
	for (int d = 0; d < 2; d++)
		for (int b = 0; b < NB; b++)
			memcpy(H0T + (b * 2 + d) * H, H0 + (d * NB + b) * H, H * sizeof *X);
	float y0[S * 2 * NB * H], yh0[2 * NB * H];
	for (int layout = 0; layout < 2; layout++) {
		struct mb_model *mb = mb_new("t", 14);
		struct mb_node *nd = one_node(mb, "LSTM", "x,w,r,,,h0", "y,yh", BASE_DT_FLOAT);
		mb_attr_int(nd, "hidden_size", H);
		mb_attr_int(nd, "layout", layout);
		mb_attr_string(nd, "direction", "bidirectional");
		struct oc_case o;
		assert_int_equal(oc_load(mb, &o), 0);
		struct rt_tensor in[4] = {
			layout ? oc_tensor(BASE_DT_FLOAT, 3, (int64_t[]){NB, S, I}, XT)
			       : oc_tensor(BASE_DT_FLOAT, 3, (int64_t[]){S, NB, I}, X),
			oc_tensor(BASE_DT_FLOAT, 3, (int64_t[]){2, 4 * H, I}, W),
			oc_tensor(BASE_DT_FLOAT, 3, (int64_t[]){2, 4 * H, H}, R),
			layout ? oc_tensor(BASE_DT_FLOAT, 3, (int64_t[]){NB, 2, H}, H0T)
			       : oc_tensor(BASE_DT_FLOAT, 3, (int64_t[]){2, NB, H}, H0),
		};
		assert_int_equal(oc_run(&o, in), 0);
		const float *y = o.out[0].data, *yh = o.out[1].data;
		if (!layout) {
			memcpy(y0, y, sizeof y0);
			memcpy(yh0, yh, sizeof yh0);
		} else {
			assert_int_equal(o.out[0].dims[0], NB);
			assert_int_equal(o.out[0].dims[1], S);
			assert_int_equal(o.out[0].dims[2], 2);
			for (int t = 0; t < S; t++)
				for (int d = 0; d < 2; d++)
					for (int b = 0; b < NB; b++)
						for (int k = 0; k < H; k++)
							assert_float_equal(y[((b * S + t) * 2 + d) * H + k],
							                   y0[((t * 2 + d) * NB + b) * H + k], 0);
			for (int d = 0; d < 2; d++)
				for (int b = 0; b < NB; b++)
					for (int k = 0; k < H; k++)
						assert_float_equal(yh[(b * 2 + d) * H + k],
						                   yh0[(d * NB + b) * H + k], 0);
		}
		oc_free(&o);
	}
}

/* activation_alpha / activation_beta feed only the activations that take
 * them: with the default Sigmoid and Tanh they change nothing.  W and R are
 * zero, so each gate is a known function of one bias value. */
static void test_gru_activations(void **st)
{
	(void)st;
	float X[1 * 1 * 1] = {0}, W[3] = {0}, R[3] = {0}, B[6] = {0.4f, 0, 0.3f, 0, 0, 0};
	struct mb_model *mb = mb_new("t", 14);
	struct mb_node *nd = one_node(mb, "GRU", "x,w,r,b", "y", BASE_DT_FLOAT);
	mb_attr_int(nd, "hidden_size", 1);
	mb_attr_floats(nd, "activation_alpha", 2, (float[]){0.5f, 2.0f});
	mb_attr_floats(nd, "activation_beta", 2, (float[]){0.25f, 3.0f});
	struct oc_case o;
	assert_int_equal(oc_load(mb, &o), 0);
	struct rt_tensor in[4] = {
		oc_tensor(BASE_DT_FLOAT, 3, (int64_t[]){1, 1, 1}, X),
		oc_tensor(BASE_DT_FLOAT, 3, (int64_t[]){1, 3, 1}, W),
		oc_tensor(BASE_DT_FLOAT, 3, (int64_t[]){1, 3, 1}, R),
		oc_tensor(BASE_DT_FLOAT, 2, (int64_t[]){1, 6}, B),
	};
	assert_int_equal(oc_run(&o, in), 0);
	/* defaults (Sigmoid, Tanh) take no alpha: the lists are ignored */
	double z = sigm(0.4), want = (1 - z) * tanh(0.3);
	assert_close(o.out[0].data, &want, 1, 1e-6);
	oc_free(&o);
}

/* The builder has no list-of-strings attribute: serialize, add
 * "activations" to the (only) node with protobuf-c, and load. */
static int load_acts(struct mb_model *mb, const char *const *names, size_t count, struct oc_case *o)
{
	void *buf;
	size_t n;
	assert_int_equal(mb_serialize(mb, &buf, &n), 0);
	mb_free(mb);
	Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, n, buf);
	assert_non_null(mp);
	free(buf);
	Onnx__NodeProto *nd = mp->graph->node[0];
	nd->attribute = realloc(nd->attribute, (nd->n_attribute + 1) * sizeof *nd->attribute);
	Onnx__AttributeProto *a = malloc(sizeof *a);
	assert_non_null(nd->attribute);
	assert_non_null(a);
	onnx__attribute_proto__init(a);
	a->name = strdup("activations");
	a->has_type = 1;
	a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS;
	a->n_strings = count;
	a->strings = calloc(count, sizeof *a->strings);
	for (size_t i = 0; i < count; i++) {
		a->strings[i].data = (uint8_t *)strdup(names[i]);
		a->strings[i].len = strlen(names[i]);
	}
	nd->attribute[nd->n_attribute++] = a;
	n = onnx__model_proto__get_packed_size(mp);
	buf = malloc(n);
	assert_non_null(buf);
	onnx__model_proto__pack(mp, buf);
	onnx__model_proto__free_unpacked(mp, NULL);
	int rc = oc_load_buffer(buf, n, o);
	free(buf);
	return rc;
}

/* Named activations with their alpha/beta, and clip.  W and R are zero, so
 * every gate is a function of its bias alone. */
static void test_activations(void **st)
{
	(void)st;
	float X[2] = {0}, W[4] = {0}, R[4] = {0};
	float B1[2] = {0.3f, 0}; /* RNN: Wb, Rb */
	struct rt_tensor in[4] = {
		oc_tensor(BASE_DT_FLOAT, 3, (int64_t[]){2, 1, 1}, X),
		oc_tensor(BASE_DT_FLOAT, 3, (int64_t[]){1, 1, 1}, W),
		oc_tensor(BASE_DT_FLOAT, 3, (int64_t[]){1, 1, 1}, R),
		oc_tensor(BASE_DT_FLOAT, 2, (int64_t[]){1, 2}, B1),
	};
	for (int clipped = 0; clipped < 2; clipped++) {
		struct mb_model *mb = mb_new("t", 14);
		struct mb_node *nd = one_node(mb, "RNN", "x,w,r,b", "y", BASE_DT_FLOAT);
		mb_attr_int(nd, "hidden_size", 1);
		mb_attr_floats(nd, "activation_alpha", 1, (float[]){0.5f});
		mb_attr_floats(nd, "activation_beta", 1, (float[]){0.25f});
		if (clipped)
			mb_attr_float(nd, "clip", 0.2f);
		struct oc_case o;
		assert_int_equal(load_acts(mb, (const char *[]){"hardsigmoid"}, 1, &o), 0);
		assert_int_equal(oc_run(&o, in), 0);
		double v = 0.5 * (clipped ? 0.2 : 0.3) + 0.25, want[2] = {v, v};
		assert_close(o.out[0].data, want, 2, 1e-6);
		oc_free(&o);
	}

	/* LSTM: Sigmoid, ScaledTanh(2, 0.5), Affine(3, 1); gate blocks i, o, f, c */
	float B4[8] = {0.1f, 0.2f, 0.3f, 0.4f, 0, 0, 0, 0};
	in[1] = oc_tensor(BASE_DT_FLOAT, 3, (int64_t[]){1, 4, 1}, W);
	in[2] = oc_tensor(BASE_DT_FLOAT, 3, (int64_t[]){1, 4, 1}, R);
	in[3] = oc_tensor(BASE_DT_FLOAT, 2, (int64_t[]){1, 8}, B4);
	struct mb_model *mb = mb_new("t", 14);
	struct mb_node *nd = one_node(mb, "LSTM", "x,w,r,b", "y,yh,yc", BASE_DT_FLOAT);
	mb_attr_int(nd, "hidden_size", 1);
	mb_attr_floats(nd, "activation_alpha", 2, (float[]){2.0f, 3.0f});
	mb_attr_floats(nd, "activation_beta", 2, (float[]){0.5f, 1.0f});
	struct oc_case o;
	assert_int_equal(load_acts(mb, (const char *[]){"Sigmoid", "ScaledTanh", "Affine"}, 3, &o),
	                 0);
	assert_int_equal(oc_run(&o, in), 0);
	double c = 0, h = 0;
	for (int t = 0; t < 2; t++) {
		c = sigm(0.3) * c + sigm(0.1) * 2.0 * tanh(0.5 * 0.4);
		h = sigm(0.2) * (3.0 * c + 1.0);
	}
	assert_close(o.out[1].data, &h, 1, 1e-6);
	assert_close(o.out[2].data, &c, 1, 1e-6);
	oc_free(&o);

	/* an unknown activation, and a list of the wrong length */
	mb = mb_new("t", 14);
	one_node(mb, "GRU", "x,w,r", "y", BASE_DT_FLOAT);
	assert_int_equal(load_acts(mb, (const char *[]){"Sigmoid", "Swish"}, 2, &o),
	                 STRATA_NOT_IMPLEMENTED);
	oc_assert_msg(&o, "activation \"Swish\"");
	oc_free(&o);
	mb = mb_new("t", 14);
	one_node(mb, "RNN", "x,w,r", "y", BASE_DT_FLOAT);
	assert_int_equal(load_acts(mb, (const char *[]){"Tanh", "Tanh", "Tanh"}, 3, &o),
	                 STRATA_INVALID_GRAPH);
	oc_assert_msg(&o, "3 activations");
	oc_free(&o);
}

/* ---- RNN error paths ----------------------------------------------------------------- */

static int load_rnn(const char *op, const char *attr, int64_t v, const char *sattr,
                    const char *sval, struct oc_case *o)
{
	struct mb_model *mb = mb_new("t", 14);
	struct mb_node *nd = one_node(mb, op, "x,w,r,,sl", "y", BASE_DT_FLOAT);
	if (attr)
		mb_attr_int(nd, attr, v);
	if (sattr)
		mb_attr_string(nd, sattr, sval);
	return oc_load(mb, o);
}

static void test_rnn_errors(void **st)
{
	(void)st;
	struct oc_case o;
	/* hostile hidden_size: refused at load */
	assert_int_equal(load_rnn("LSTM", "hidden_size", (int64_t)1 << 40, NULL, NULL, &o),
	                 STRATA_INVALID_GRAPH);
	oc_assert_msg(&o, "hidden_size");
	oc_free(&o);
	assert_int_equal(load_rnn("GRU", "hidden_size", -3, NULL, NULL, &o), STRATA_INVALID_GRAPH);
	oc_free(&o);
	assert_int_equal(load_rnn("RNN", "layout", 2, NULL, NULL, &o), STRATA_INVALID_GRAPH);
	oc_assert_msg(&o, "layout");
	oc_free(&o);
	assert_int_equal(load_rnn("RNN", NULL, 0, "direction", "sideways", &o),
	                 STRATA_INVALID_GRAPH);
	oc_assert_msg(&o, "sideways");
	oc_free(&o);

	/* hidden_size that W and R do not match: refused at run */
	assert_int_equal(load_rnn("RNN", "hidden_size", 5, NULL, NULL, &o), 0);
	float X[S * NB * I] = {0}, W[H * I] = {0}, R[H * H] = {0};
	int32_t len[NB] = {3, 1};
	struct rt_tensor in[4] = {
		oc_tensor(BASE_DT_FLOAT, 3, (int64_t[]){S, NB, I}, X),
		oc_tensor(BASE_DT_FLOAT, 3, (int64_t[]){1, H, I}, W),
		oc_tensor(BASE_DT_FLOAT, 3, (int64_t[]){1, H, H}, R),
		oc_tensor(BASE_DT_INT32, 1, (int64_t[]){NB}, len),
	};
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "W has shape [1,2,3], expected [1,5,3]");
	oc_free(&o);

	/* sequence_lens past the sequence, then a W of the wrong rank */
	assert_int_equal(load_rnn("RNN", "hidden_size", H, NULL, NULL, &o), 0);
	len[1] = 4;
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "sequence_lens[1] = 4");
	len[1] = -1;
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	len[1] = 1;
	in[1] = oc_tensor(BASE_DT_FLOAT, 2, (int64_t[]){H, I}, W);
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "W has shape");
	in[1] = oc_tensor(BASE_DT_FLOAT, 3, (int64_t[]){1, H, I}, W);
	in[0] = oc_tensor(BASE_DT_FLOAT, 2, (int64_t[]){S, NB}, X);
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "rank 3");
	/* and a good run on the same context afterwards */
	in[0] = oc_tensor(BASE_DT_FLOAT, 3, (int64_t[]){S, NB, I}, X);
	assert_int_equal(oc_run(&o, in), 0);
	oc_free(&o);

	/* integer X has no kernel */
	struct mb_model *mb = mb_new("t", 14);
	one_node(mb, "RNN", "x,w,r", "y", BASE_DT_INT32);
	assert_int_equal(oc_load(mb, &o), STRATA_NOT_IMPLEMENTED);
	oc_assert_msg(&o, "RNN (opset 14)");
	oc_free(&o);
}

/* ---- Einsum ---------------------------------------------------------------------------- */

static int load_einsum(const char *eq, const char *ins, int dt, struct oc_case *o)
{
	struct mb_model *mb = mb_new("t", 13);
	struct mb_node *nd = one_node(mb, "Einsum", ins, "y", dt);
	mb_attr_string(nd, "equation", eq);
	return oc_load(mb, o);
}

/* bij,bjk->bik and bij,bjk->kbi (the GEMM path) and bij,bjk->bk, where i
 * is summed within the first operand alone (the general path). */
static void test_einsum_batch_matmul(void **st)
{
	(void)st;
	enum { BB = 3, MM = 4, KK = 5, NN = 6 };
	float a[BB * MM * KK], b[BB * KK * NN];
	fill(a, BB * MM * KK, 51), fill(b, BB * KK * NN, 52);
	struct rt_tensor in[2] = {
		oc_tensor(BASE_DT_FLOAT, 3, (int64_t[]){BB, MM, KK}, a),
		oc_tensor(BASE_DT_FLOAT, 3, (int64_t[]){BB, KK, NN}, b),
	};
	struct oc_case o;
	assert_int_equal(load_einsum("bij, bjk -> bik", "a,b", BASE_DT_FLOAT, &o), 0);
	assert_int_equal(oc_run(&o, in), 0);
	double want[BB * MM * NN];
	for (int x = 0; x < BB; x++)
		for (int i = 0; i < MM; i++)
			for (int k = 0; k < NN; k++) {
				double s = 0;
				for (int j = 0; j < KK; j++)
					s += a[(x * MM + i) * KK + j] * b[(x * KK + j) * NN + k];
				want[(x * MM + i) * NN + k] = s;
			}
	assert_int_equal(o.out[0].rank, 3);
	assert_close(o.out[0].data, want, BB * MM * NN, 1e-5);
	oc_free(&o);

	/* transposed output order on the GEMM path: bij,bjk->kbi */
	assert_int_equal(load_einsum("bij,bjk->kbi", "a,b", BASE_DT_FLOAT, &o), 0);
	assert_int_equal(oc_run(&o, in), 0);
	double wt[NN * BB * MM];
	for (int x = 0; x < BB; x++)
		for (int i = 0; i < MM; i++)
			for (int k = 0; k < NN; k++)
				wt[(k * BB + x) * MM + i] = want[(x * MM + i) * NN + k];
	assert_close(o.out[0].data, wt, NN * BB * MM, 1e-5);
	oc_free(&o);

	/* i is summed within the first operand only */
	assert_int_equal(load_einsum("bij,bjk->bk", "a,b", BASE_DT_FLOAT, &o), 0);
	assert_int_equal(oc_run(&o, in), 0);
	double wk[BB * NN];
	for (int x = 0; x < BB; x++)
		for (int k = 0; k < NN; k++) {
			double s = 0;
			for (int i = 0; i < MM; i++)
				for (int j = 0; j < KK; j++)
					s += a[(x * MM + i) * KK + j] * b[(x * KK + j) * NN + k];
			wk[x * NN + k] = s;
		}
	assert_close(o.out[0].data, wk, BB * NN, 1e-5);
	oc_free(&o);
}

/* ...ii->...i in double, an implicit trace in int64, and an ellipsis that
 * broadcasts a size-1 axis. */
static void test_einsum_general(void **st)
{
	(void)st;
	double d[2 * 3 * 3];
	for (int i = 0; i < 18; i++)
		d[i] = i * 0.5 - 3;
	struct oc_case o;
	assert_int_equal(load_einsum("...ii ->...i", "a", BASE_DT_DOUBLE, &o), 0);
	struct rt_tensor in[2] = {oc_tensor(BASE_DT_DOUBLE, 3, (int64_t[]){2, 3, 3}, d)};
	assert_int_equal(oc_run(&o, in), 0);
	assert_int_equal(o.out[0].rank, 2);
	const double *y = o.out[0].data;
	for (int b = 0; b < 2; b++)
		for (int i = 0; i < 3; i++)
			assert_float_equal(y[b * 3 + i], d[b * 9 + i * 3 + i], 0);
	oc_free(&o);

	int64_t m[3 * 3] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
	assert_int_equal(load_einsum("ii", "a", BASE_DT_INT64, &o), 0);
	in[0] = oc_tensor(BASE_DT_INT64, 2, (int64_t[]){3, 3}, m);
	assert_int_equal(oc_run(&o, in), 0);
	assert_int_equal(o.out[0].rank, 0);
	assert_int_equal(((int64_t *)o.out[0].data)[0], 15);
	oc_free(&o);

	/* implicit output of "ba,cb": a and c, alphabetical */
	int64_t p[2 * 3] = {1, 2, 3, 4, 5, 6}, q[4 * 2] = {1, -1, 2, 0, 3, 1, -2, 2};
	assert_int_equal(load_einsum("ba,cb", "p,q", BASE_DT_INT64, &o), 0);
	struct rt_tensor pq[2] = {oc_tensor(BASE_DT_INT64, 2, (int64_t[]){2, 3}, p),
	                          oc_tensor(BASE_DT_INT64, 2, (int64_t[]){4, 2}, q)};
	assert_int_equal(oc_run(&o, pq), 0);
	assert_int_equal(o.out[0].rank, 2);
	assert_int_equal(o.out[0].dims[0], 3);
	assert_int_equal(o.out[0].dims[1], 4);
	const int64_t *yi = o.out[0].data;
	for (int a = 0; a < 3; a++)
		for (int c = 0; c < 4; c++) {
			int64_t s = 0;
			for (int b = 0; b < 2; b++)
				s += p[b * 3 + a] * q[c * 2 + b];
			assert_int_equal(yi[a * 4 + c], s);
		}
	oc_free(&o);

	/* "...j,...j->..." with shapes [2,1,3] and [4,3]: the ellipsis is [2,4] */
	float u[2 * 3], v[4 * 3];
	fill(u, 6, 61), fill(v, 12, 62);
	assert_int_equal(load_einsum("...j,...j->...", "u,v", BASE_DT_FLOAT, &o), 0);
	struct rt_tensor uv[2] = {oc_tensor(BASE_DT_FLOAT, 3, (int64_t[]){2, 1, 3}, u),
	                          oc_tensor(BASE_DT_FLOAT, 2, (int64_t[]){4, 3}, v)};
	assert_int_equal(oc_run(&o, uv), 0);
	assert_int_equal(o.out[0].rank, 2);
	assert_int_equal(o.out[0].dims[0], 2);
	assert_int_equal(o.out[0].dims[1], 4);
	double w8[8];
	for (int a = 0; a < 2; a++)
		for (int b = 0; b < 4; b++)
			w8[a * 4 + b] = (double)u[a * 3] * v[b * 3] + (double)u[a * 3 + 1] * v[b * 3 + 1] +
			                (double)u[a * 3 + 2] * v[b * 3 + 2];
	assert_close(o.out[0].data, w8, 8, 1e-5);
	oc_free(&o);
}

static void test_einsum_errors(void **st)
{
	(void)st;
	struct oc_case o;
	static const struct {
		const char *eq, *ins, *msg;
	} bad[] = {
		{"ij,jk", "a,b,c", "2 terms for 3 inputs"},
		{"ij,jk,kl", "a,b", "more terms"},
		{"i.j", "a", "lone '.'"},
		{"......", "a", "two ellipses"},
		{"ij->k", "a", "'k' is in no input"},
		{"ij->ii", "a", "repeated"},
		{"i1", "a", "unexpected '1'"},
		{"ij-k", "a", "without '>'"},
		{"abcdefghi", "a", "more than 8"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		assert_int_equal(load_einsum(bad[i].eq, bad[i].ins, BASE_DT_FLOAT, &o),
		                 STRATA_INVALID_GRAPH);
		oc_assert_msg(&o, bad[i].msg);
		oc_free(&o);
	}
	assert_int_equal(load_einsum("ij", "a", BASE_DT_STRING, &o), STRATA_NOT_IMPLEMENTED);
	oc_assert_msg(&o, "Einsum (opset 13)");
	oc_free(&o);

	/* mismatched dimensions and ranks at run */
	float a[6] = {0}, b[6] = {0};
	assert_int_equal(load_einsum("ij,jk->ik", "a,b", BASE_DT_FLOAT, &o), 0);
	struct rt_tensor in[2] = {oc_tensor(BASE_DT_FLOAT, 2, (int64_t[]){2, 3}, a),
	                          oc_tensor(BASE_DT_FLOAT, 2, (int64_t[]){2, 3}, b)};
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "label 'j'");
	in[1] = oc_tensor(BASE_DT_FLOAT, 1, (int64_t[]){6}, b);
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "input 1 has rank 1");
	in[1] = oc_tensor(BASE_DT_FLOAT, 2, (int64_t[]){3, 2}, b);
	assert_int_equal(oc_run(&o, in), 0);
	oc_free(&o);

	/* ellipses that do not broadcast */
	assert_int_equal(load_einsum("...i,...i->...", "a,b", BASE_DT_FLOAT, &o), 0);
	in[0] = oc_tensor(BASE_DT_FLOAT, 2, (int64_t[]){2, 3}, a);
	in[1] = oc_tensor(BASE_DT_FLOAT, 3, (int64_t[]){3, 1, 2}, b);
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_free(&o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rnn_values),
		cmocka_unit_test(test_gru_values),
		cmocka_unit_test(test_lstm_peepholes),
		cmocka_unit_test(test_rnn_bidi_seqlens),
		cmocka_unit_test(test_lstm_layout1),
		cmocka_unit_test(test_gru_activations),
		cmocka_unit_test(test_activations),
		cmocka_unit_test(test_rnn_errors),
		cmocka_unit_test(test_einsum_batch_matmul),
		cmocka_unit_test(test_einsum_general),
		cmocka_unit_test(test_einsum_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
