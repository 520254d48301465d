/*
 * test_ops_train.c: unit tests of the loss, training and random-number
 * kernels (runtime/ops/loss.c, training.c, random.c).
 *
 * Loss and optimizer values are checked against the formulas of the ONNX
 * definitions, written out here as plain loops in double.  Random operators
 * cannot be checked cell by cell: the tests check shapes, element types,
 * ranges, reproducibility under one seed and the degenerate probabilities
 * (0 and 1) whose outcome is certain.  Error paths check the code and a
 * telling part of the message: bad attributes and types fail the load,
 * hostile labels, shapes and probabilities fail the run.
 *
 * Gradient needs string-list attributes (xs, zs), which the model builder
 * does not write: the tests serialize the model, decode it with protobuf-c,
 * add them to the Gradient node and encode it again.
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

#define TRAINING "ai.onnx.preview.training"

/* ---- harness --------------------------------------------------------------------- */

/* oc_model at opset 17; a domain (TRAINING, say) other than NULL is imported
 * at version 1 and given to the node. */
static struct mb_model *one_node(const char *domain, const char *op, const char *ins,
                                 const int *in_dt, const char *outs, const int *out_dt,
                                 struct mb_node **node)
{
	struct mb_model *mb = oc_model(17, op, ins, in_dt, outs, out_dt, node);
	if (domain) {
		mb_opset(mb, domain, 1);
		mb_node_domain(*node, domain);
	}
	return mb;
}

static void assert_near(double got, double want, double tol)
{
	if (fabs(got - want) > tol * (1.0 + fabs(want))) {
		print_error("got %.9g, want %.9g\n", got, want);
		fail();
	}
}

static const int F[] = {BASE_DT_FLOAT, BASE_DT_FLOAT, BASE_DT_FLOAT, BASE_DT_FLOAT};
static const int FIF[] = {BASE_DT_FLOAT, BASE_DT_INT64, BASE_DT_FLOAT};

/* ---- losses ------------------------------------------------------------------------ */

/* input [2, 3, 2], target [2, 2], weight [3]. */
static const float LX[12] = {-1.2f, -0.3f, -2.0f, -0.7f, -0.9f, -1.5f,
                             -0.2f, -2.2f, -1.1f, -0.4f, -3.0f, -0.6f};
static const int64_t LT[4] = {2, 0, 1, -1};
static const float LW[3] = {0.5f, 2.0f, 1.5f};
static const int64_t LXD[3] = {2, 3, 2}, LTD[2] = {2, 2}, LWD[1] = {3};

/* The reference loss of (b, d) for log-probabilities lp and its weight. */
static double ref_loss(const double *lp, int b, int d, double *w)
{
	int64_t t = LT[b * 2 + d];
	if (t == -1) { /* ignore_index */
		*w = 0;
		return 0;
	}
	*w = LW[t];
	return -LW[t] * lp[(b * 3 + t) * 2 + d];
}

static void test_nll_values(void **state)
{
	(void)state;
	static const char *const red[] = {"none", "sum", "mean"};
	double lp[12];
	for (int i = 0; i < 12; i++)
		lp[i] = LX[i];
	for (int r = 0; r < 3; r++) {
		struct mb_node *nd;
		struct oc_case o;
		struct mb_model *mb = one_node(NULL, "NegativeLogLikelihoodLoss", "x,t,w", FIF, "y",
		                               F, &nd);
		mb_attr_string(nd, "reduction", red[r]);
		mb_attr_int(nd, "ignore_index", -1);
		assert_int_equal(oc_load(mb, &o), 0);
		struct rt_tensor in[3] = {oc_tensor(BASE_DT_FLOAT, 3, LXD, LX),
		                          oc_tensor(BASE_DT_INT64, 2, LTD, LT),
		                          oc_tensor(BASE_DT_FLOAT, 1, LWD, LW)};
		assert_int_equal(oc_run(&o, in), 0);
		double sum = 0, wsum = 0, w;
		const float *y = o.out[0].data;
		for (int b = 0; b < 2; b++)
			for (int d = 0; d < 2; d++) {
				double l = ref_loss(lp, b, d, &w);
				sum += l, wsum += w;
				if (r == 0)
					assert_near(y[b * 2 + d], l, 1e-6);
			}
		if (r == 0)
			oc_assert_shape(&o.out[0], 2, LTD);
		else
			assert_int_equal(o.out[0].rank, 0);
		if (r == 1)
			assert_near(y[0], sum, 1e-6);
		if (r == 2)
			assert_near(y[0], sum / wsum, 1e-6);
		oc_free(&o);
	}
}

static void test_sce_values(void **state)
{
	(void)state;
	double lp[12];
	for (int b = 0; b < 2; b++)
		for (int d = 0; d < 2; d++) {
			double s = 0;
			for (int c = 0; c < 3; c++)
				s += exp(LX[(b * 3 + c) * 2 + d]);
			for (int c = 0; c < 3; c++)
				lp[(b * 3 + c) * 2 + d] = LX[(b * 3 + c) * 2 + d] - log(s);
		}
	struct mb_node *nd;
	struct oc_case o;
	struct mb_model *mb = one_node(NULL, "SoftmaxCrossEntropyLoss", "x,t,w", FIF, "y,lp", F, &nd);
	mb_attr_int(nd, "ignore_index", -1);
	assert_int_equal(oc_load(mb, &o), 0);
	struct rt_tensor in[3] = {oc_tensor(BASE_DT_FLOAT, 3, LXD, LX),
	                          oc_tensor(BASE_DT_INT64, 2, LTD, LT),
	                          oc_tensor(BASE_DT_FLOAT, 1, LWD, LW)};
	assert_int_equal(oc_run(&o, in), 0);
	double sum = 0, wsum = 0, w;
	for (int b = 0; b < 2; b++)
		for (int d = 0; d < 2; d++) {
			sum += ref_loss(lp, b, d, &w);
			wsum += w;
		}
	assert_near(((float *)o.out[0].data)[0], sum / wsum, 1e-6);
	oc_assert_shape(&o.out[1], 3, LXD);
	for (int i = 0; i < 12; i++)
		assert_near(((float *)o.out[1].data)[i], lp[i], 1e-6);
	oc_free(&o);
}

static void test_loss_bad_labels_and_shapes(void **state)
{
	(void)state;
	struct mb_node *nd;
	struct oc_case o;
	assert_int_equal(oc_load(one_node(NULL, "SoftmaxCrossEntropyLoss", "x,t,w", FIF, "y", F, &nd),
	                      &o), 0);
	struct rt_tensor in[3] = {oc_tensor(BASE_DT_FLOAT, 3, LXD, LX),
	                          oc_tensor(BASE_DT_INT64, 2, LTD, LT),
	                          oc_tensor(BASE_DT_FLOAT, 1, LWD, LW)};
	/* No ignore_index: the label -1 is out of range. */
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "outside [0, 3)");
	static const int64_t big[4] = {0, 1, 2, 3};
	in[1].data = (void *)big;
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "target 3");
	static const int64_t ok[4] = {0, 1, 2, 0};
	in[1].data = (void *)ok;
	assert_int_equal(oc_run(&o, in), 0);
	/* A target whose trailing dim differs from the input's. */
	static const int64_t td[2] = {2, 1};
	in[1] = oc_tensor(BASE_DT_INT64, 2, td, ok);
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "target dimension 1");
	/* A target of the wrong rank. */
	in[1] = oc_tensor(BASE_DT_INT64, 1, td, ok);
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "rank");
	/* A weight of the wrong length. */
	in[1] = oc_tensor(BASE_DT_INT64, 2, LTD, ok);
	static const int64_t wd[1] = {2};
	in[2] = oc_tensor(BASE_DT_FLOAT, 1, wd, LW);
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "weight");
	/* An input without a class axis. */
	in[0] = oc_tensor(BASE_DT_FLOAT, 1, LXD, LX);
	in[1] = oc_tensor(BASE_DT_INT64, 0, NULL, ok);
	in[2] = oc_tensor(BASE_DT_FLOAT, 1, LWD, LW);
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "rank 1");
	oc_free(&o);
}

static void test_loss_bad_attributes(void **state)
{
	(void)state;
	struct mb_node *nd;
	struct oc_case o;
	struct mb_model *mb = one_node(NULL, "NegativeLogLikelihoodLoss", "x,t", FIF, "y", F, &nd);
	mb_attr_string(nd, "reduction", "average");
	assert_int_equal(oc_load(mb, &o), STRATA_INVALID_GRAPH);
	oc_assert_msg(&o, "reduction");
	mb = one_node(NULL, "NegativeLogLikelihoodLoss", "x,t", F, "y", F, &nd);
	assert_int_equal(oc_load(mb, &o), STRATA_INVALID_GRAPH);
	oc_assert_msg(&o, "int32 or int64");
	static const int II[] = {BASE_DT_INT32, BASE_DT_INT64};
	static const int I1[] = {BASE_DT_INT32};
	mb = one_node(NULL, "NegativeLogLikelihoodLoss", "x,t", II, "y", I1, &nd);
	assert_int_equal(oc_load(mb, &o), STRATA_NOT_IMPLEMENTED);
	oc_assert_msg(&o, "int32");
	mb = one_node(NULL, "NegativeLogLikelihoodLoss", "x,t", FIF, "y", F, &nd);
	mb_attr_float(nd, "ignore_index", 1.5f);
	assert_int_equal(oc_load(mb, &o), STRATA_INVALID_GRAPH);
	oc_assert_msg(&o, "ignore_index");
	mb = one_node(NULL, "NegativeLogLikelihoodLoss", "x", F, "y", F, &nd);
	assert_int_equal(oc_load(mb, &o), STRATA_INVALID_GRAPH);
}

/* ---- optimizers ------------------------------------------------------------------------ */

static const float OX[3] = {1.0f, -2.0f, 0.5f}, OG[3] = {0.3f, -0.1f, 2.0f};
static const float OV[3] = {0.2f, 0.4f, -1.0f}, OH[3] = {0.1f, 2.0f, 0.0f};
static const int64_t OD[1] = {3};

static void test_adam_values(void **state)
{
	(void)state;
	static const int dts[] = {BASE_DT_FLOAT, BASE_DT_INT64, BASE_DT_FLOAT, BASE_DT_FLOAT,
	                          BASE_DT_FLOAT, BASE_DT_FLOAT};
	const double alpha = 0.8, beta = 0.7, eps = 1e-3, nc = 0.01, post = 0.05, r = 0.1;
	for (int64_t t = 0; t < 3; t += 2) {
		struct mb_node *nd;
		struct oc_case o;
		struct mb_model *mb = one_node(TRAINING, "Adam", "R,T,X,G,V,H", dts, "X2,V2,H2", F, &nd);
		mb_attr_float(nd, "alpha", (float)alpha);
		mb_attr_float(nd, "beta", (float)beta);
		mb_attr_float(nd, "epsilon", (float)eps);
		mb_attr_float(nd, "norm_coefficient", (float)nc);
		mb_attr_float(nd, "norm_coefficient_post", (float)post);
		assert_int_equal(oc_load(mb, &o), 0);
		float rf = (float)r;
		struct rt_tensor in[6] = {oc_tensor(BASE_DT_FLOAT, 0, NULL, &rf),
		                          oc_tensor(BASE_DT_INT64, 0, NULL, &t),
		                          oc_tensor(BASE_DT_FLOAT, 1, OD, OX),
		                          oc_tensor(BASE_DT_FLOAT, 1, OD, OG),
		                          oc_tensor(BASE_DT_FLOAT, 1, OD, OV),
		                          oc_tensor(BASE_DT_FLOAT, 1, OD, OH)};
		assert_int_equal(oc_run(&o, in), 0);
		for (int i = 0; i < 3; i++) {
			double g = OG[i] + nc * OX[i];
			double v = alpha * OV[i] + (1 - alpha) * g;
			double h = beta * OH[i] + (1 - beta) * g * g;
			double lr = t > 0 ? r * sqrt(1 - pow(beta, (double)t)) / (1 - pow(alpha, (double)t)) : r;
			double x = (1 - post) * (OX[i] - lr * v / (sqrt(h) + eps));
			assert_near(((float *)o.out[0].data)[i], x, 1e-5);
			assert_near(((float *)o.out[1].data)[i], v, 1e-5);
			assert_near(((float *)o.out[2].data)[i], h, 1e-5);
		}
		oc_free(&o);
	}
}

static void test_adagrad_values(void **state)
{
	(void)state;
	static const int dts[] = {BASE_DT_DOUBLE, BASE_DT_INT64, BASE_DT_DOUBLE, BASE_DT_DOUBLE,
	                          BASE_DT_DOUBLE};
	static const int D2[] = {BASE_DT_DOUBLE, BASE_DT_DOUBLE};
	const double decay = 0.25, eps = 1e-4, nc = 0.02, r = 0.3;
	struct mb_node *nd;
	struct oc_case o;
	struct mb_model *mb = one_node(TRAINING, "Adagrad", "R,T,X,G,H", dts, "X2,H2", D2, &nd);
	mb_attr_float(nd, "decay_factor", (float)decay);
	mb_attr_float(nd, "epsilon", (float)eps);
	mb_attr_float(nd, "norm_coefficient", (float)nc);
	assert_int_equal(oc_load(mb, &o), 0);
	double X[3], G[3], H[3];
	for (int i = 0; i < 3; i++)
		X[i] = OX[i], G[i] = OG[i], H[i] = OH[i];
	int64_t t = 3;
	struct rt_tensor in[5] = {oc_tensor(BASE_DT_DOUBLE, 0, NULL, &r),
	                          oc_tensor(BASE_DT_INT64, 0, NULL, &t),
	                          oc_tensor(BASE_DT_DOUBLE, 1, OD, X),
	                          oc_tensor(BASE_DT_DOUBLE, 1, OD, G),
	                          oc_tensor(BASE_DT_DOUBLE, 1, OD, H)};
	assert_int_equal(oc_run(&o, in), 0);
	for (int i = 0; i < 3; i++) {
		/* decay_factor and the like are float attributes: use their float values. */
		double lr = r / (1 + 3 * (double)(float)decay);
		double g = (double)(float)nc * X[i] + G[i], h = H[i] + g * g;
		double x = X[i] - lr * g / (sqrt(h) + (double)(float)eps);
		assert_near(((double *)o.out[0].data)[i], x, 1e-12);
		assert_near(((double *)o.out[1].data)[i], h, 1e-12);
	}
	oc_free(&o);
}

static void test_momentum_values(void **state)
{
	(void)state;
	static const int dts[] = {BASE_DT_FLOAT, BASE_DT_INT64, BASE_DT_FLOAT, BASE_DT_FLOAT,
	                          BASE_DT_FLOAT};
	const double alpha = 0.9, beta = 0.5, nc = 0.1, r = 0.2;
	for (int nest = 0; nest < 2; nest++)
		for (int64_t t = 0; t < 2; t++) {
			struct mb_node *nd;
			struct oc_case o;
			struct mb_model *mb = one_node(TRAINING, "Momentum", "R,T,X,G,V", dts, "X2,V2", F, &nd);
			mb_attr_float(nd, "alpha", (float)alpha);
			mb_attr_float(nd, "beta", (float)beta);
			mb_attr_float(nd, "norm_coefficient", (float)nc);
			mb_attr_string(nd, "mode", nest ? "nesterov" : "standard");
			assert_int_equal(oc_load(mb, &o), 0);
			float rf = (float)r;
			struct rt_tensor in[5] = {oc_tensor(BASE_DT_FLOAT, 0, NULL, &rf),
			                          oc_tensor(BASE_DT_INT64, 0, NULL, &t),
			                          oc_tensor(BASE_DT_FLOAT, 1, OD, OX),
			                          oc_tensor(BASE_DT_FLOAT, 1, OD, OG),
			                          oc_tensor(BASE_DT_FLOAT, 1, OD, OV)};
			assert_int_equal(oc_run(&o, in), 0);
			for (int i = 0; i < 3; i++) {
				double g = nc * OX[i] + OG[i], b = t > 0 ? beta : 1.0;
				double v = alpha * OV[i] + b * g;
				double x = nest ? OX[i] - r * (g + alpha * v) : OX[i] - r * v;
				assert_near(((float *)o.out[0].data)[i], x, 1e-5);
				assert_near(((float *)o.out[1].data)[i], v, 1e-5);
			}
			oc_free(&o);
		}
}

static void test_optimizer_errors(void **state)
{
	(void)state;
	static const int dts[] = {BASE_DT_FLOAT, BASE_DT_INT64, BASE_DT_FLOAT, BASE_DT_FLOAT,
	                          BASE_DT_FLOAT, BASE_DT_FLOAT};
	struct mb_node *nd;
	struct oc_case o;
	/* Momentum without mode, then with an unknown one. */
	struct mb_model *mb = one_node(TRAINING, "Momentum", "R,T,X,G,V", dts, "X2,V2", F, &nd);
	mb_attr_float(nd, "alpha", 0.9f);
	mb_attr_float(nd, "beta", 0.9f);
	mb_attr_float(nd, "norm_coefficient", 0.0f);
	assert_int_equal(oc_load(mb, &o), STRATA_INVALID_GRAPH);
	oc_assert_msg(&o, "mode");
	mb = one_node(TRAINING, "Momentum", "R,T,X,G,V", dts, "X2,V2", F, &nd);
	mb_attr_float(nd, "alpha", 0.9f);
	mb_attr_float(nd, "beta", 0.9f);
	mb_attr_float(nd, "norm_coefficient", 0.0f);
	mb_attr_string(nd, "mode", "heavy");
	assert_int_equal(oc_load(mb, &o), STRATA_INVALID_GRAPH);
	/* Momentum without alpha. */
	mb = one_node(TRAINING, "Momentum", "R,T,X,G,V", dts, "X2,V2", F, &nd);
	mb_attr_float(nd, "beta", 0.9f);
	mb_attr_float(nd, "norm_coefficient", 0.0f);
	mb_attr_string(nd, "mode", "standard");
	assert_int_equal(oc_load(mb, &o), STRATA_INVALID_GRAPH);
	oc_assert_msg(&o, "alpha");
	/* Adagrad with a group short (X, G but no H). */
	mb = one_node(TRAINING, "Adagrad", "R,T,X,G", dts, "X2,H2", F, &nd);
	assert_int_equal(oc_load(mb, &o), STRATA_INVALID_GRAPH);
	oc_assert_msg(&o, "groups");
	/* Adam with one output too few. */
	mb = one_node(TRAINING, "Adam", "R,T,X,G,V,H", dts, "X2,V2", F, &nd);
	assert_int_equal(oc_load(mb, &o), STRATA_INVALID_GRAPH);
	oc_assert_msg(&o, "outputs");
	/* T of the wrong type. */
	static const int f5[] = {BASE_DT_FLOAT, BASE_DT_FLOAT, BASE_DT_FLOAT, BASE_DT_FLOAT,
	                         BASE_DT_FLOAT};
	mb = one_node(TRAINING, "Adagrad", "R,T,X,G,H", f5, "X2,H2", F, &nd);
	assert_int_equal(oc_load(mb, &o), STRATA_INVALID_GRAPH);
	oc_assert_msg(&o, "T must be int64");
	/* int32 tensors have no kernel. */
	static const int di[] = {BASE_DT_FLOAT, BASE_DT_INT64, BASE_DT_INT32, BASE_DT_INT32,
	                         BASE_DT_INT32};
	static const int I2[] = {BASE_DT_INT32, BASE_DT_INT32};
	mb = one_node(TRAINING, "Adagrad", "R,T,X,G,H", di, "X2,H2", I2, &nd);
	assert_int_equal(oc_load(mb, &o), STRATA_NOT_IMPLEMENTED);
	oc_assert_msg(&o, "int32");
	/* G's shape differs from X's at run time; R is not a scalar. */
	mb = one_node(TRAINING, "Adagrad", "R,T,X,G,H", dts, "X2,H2", F, &nd);
	assert_int_equal(oc_load(mb, &o), 0);
	float r = 0.1f, r2[2] = {0.1f, 0.2f};
	int64_t t = 1;
	static const int64_t two[1] = {2};
	struct rt_tensor in[5] = {oc_tensor(BASE_DT_FLOAT, 0, NULL, &r),
	                          oc_tensor(BASE_DT_INT64, 0, NULL, &t),
	                          oc_tensor(BASE_DT_FLOAT, 1, OD, OX),
	                          oc_tensor(BASE_DT_FLOAT, 1, two, OG),
	                          oc_tensor(BASE_DT_FLOAT, 1, OD, OH)};
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "shape of X 0");
	in[3] = oc_tensor(BASE_DT_FLOAT, 1, OD, OG);
	in[0] = oc_tensor(BASE_DT_FLOAT, 1, two, r2);
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "one value");
	oc_free(&o);
}

/* ---- random numbers ------------------------------------------------------------------------ */

static void test_random_uniform(void **state)
{
	(void)state;
	static const int64_t shape[3] = {4, 5, 6};
	static const int D1[] = {BASE_DT_DOUBLE};
	double first[120];
	for (int k = 0; k < 2; k++) {
		struct mb_node *nd;
		struct oc_case o;
		struct mb_model *mb = one_node(NULL, "RandomUniform", "", NULL, "y", D1, &nd);
		mb_attr_ints(nd, "shape", 3, shape);
		mb_attr_int(nd, "dtype", BASE_DT_DOUBLE);
		mb_attr_float(nd, "low", -2.0f);
		mb_attr_float(nd, "high", 3.0f);
		mb_attr_float(nd, "seed", 7.0f);
		assert_int_equal(oc_load(mb, &o), 0);
		assert_int_equal(oc_run(&o, NULL), 0);
		assert_int_equal(o.out[0].dtype, BASE_DT_DOUBLE);
		oc_assert_shape(&o.out[0], 3, shape);
		const double *y = o.out[0].data;
		double mn = 1e9, mx = -1e9;
		for (int i = 0; i < 120; i++) {
			assert_true(y[i] >= -2.0 && y[i] < 3.0);
			mn = fmin(mn, y[i]), mx = fmax(mx, y[i]);
			if (k == 0)
				first[i] = y[i];
			else
				assert_true(first[i] == y[i]); /* same seed, same values */
		}
		/* 120 draws spread over most of the range. */
		assert_true(mn < -1.0 && mx > 2.0);
		/* And again on the same context. */
		assert_int_equal(oc_run(&o, NULL), 0);
		assert_true(((const double *)o.out[0].data)[5] == first[5]);
		oc_free(&o);
	}
}

static void test_random_normal_like(void **state)
{
	(void)state;
	static const int64_t dims[2] = {50, 40};
	static const int I1[] = {BASE_DT_INT32}, U1[] = {BASE_DT_UNDEFINED};
	static int32_t zeros[2000];
	struct mb_node *nd;
	struct oc_case o;
	struct mb_model *mb = one_node(NULL, "RandomNormalLike", "x", I1, "y", U1, &nd);
	mb_attr_int(nd, "dtype", BASE_DT_FLOAT);
	mb_attr_float(nd, "mean", 10.0f);
	mb_attr_float(nd, "scale", 2.0f);
	assert_int_equal(oc_load(mb, &o), 0);
	struct rt_tensor in[1] = {oc_tensor(BASE_DT_INT32, 2, dims, zeros)};
	assert_int_equal(oc_run(&o, in), 0);
	assert_int_equal(o.out[0].dtype, BASE_DT_FLOAT);
	oc_assert_shape(&o.out[0], 2, dims);
	double s = 0, s2 = 0;
	const float *y = o.out[0].data;
	for (int i = 0; i < 2000; i++)
		s += y[i], s2 += (double)y[i] * y[i];
	double mean = s / 2000, sd = sqrt(s2 / 2000 - mean * mean);
	/* 2000 draws: the mean is within 0.3 (7 standard errors), the spread within 15%. */
	assert_true(fabs(mean - 10.0) < 0.3);
	assert_true(fabs(sd - 2.0) < 0.3);
	oc_free(&o);
	/* Without dtype the output takes the input's type: int32 has no kernel. */
	mb = one_node(NULL, "RandomUniformLike", "x", I1, "y", U1, &nd);
	assert_int_equal(oc_load(mb, &o), STRATA_NOT_IMPLEMENTED);
	oc_assert_msg(&o, "int32");
}

static void test_random_errors(void **state)
{
	(void)state;
	static const int U1[] = {BASE_DT_UNDEFINED};
	struct mb_node *nd;
	struct oc_case o;
	/* No shape. */
	struct mb_model *mb = one_node(NULL, "RandomNormal", "", NULL, "y", U1, &nd);
	assert_int_equal(oc_load(mb, &o), STRATA_INVALID_GRAPH);
	oc_assert_msg(&o, "shape");
	/* A negative dimension. */
	static const int64_t neg[2] = {3, -1};
	mb = one_node(NULL, "RandomNormal", "", NULL, "y", U1, &nd);
	mb_attr_ints(nd, "shape", 2, neg);
	assert_int_equal(oc_load(mb, &o), STRATA_INVALID_GRAPH);
	oc_assert_msg(&o, "negative");
	/* Too many dimensions. */
	static const int64_t deep[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
	mb = one_node(NULL, "RandomNormal", "", NULL, "y", U1, &nd);
	mb_attr_ints(nd, "shape", 9, deep);
	assert_int_equal(oc_load(mb, &o), STRATA_NOT_IMPLEMENTED);
	/* Cells past the memory limit fail the run, not the process. */
	static const int64_t huge[4] = {1 << 20, 1 << 20, 1 << 20, 1 << 20};
	mb = one_node(NULL, "RandomUniform", "", NULL, "y", U1, &nd);
	mb_attr_ints(nd, "shape", 4, huge);
	assert_int_equal(oc_load(mb, &o), 0);
	assert_int_equal(oc_run(&o, NULL), STRATA_LIMIT);
	oc_free(&o);
	/* An integer dtype, an unknown one. */
	static const int64_t sh[1] = {2};
	mb = one_node(NULL, "RandomUniform", "", NULL, "y", U1, &nd);
	mb_attr_ints(nd, "shape", 1, sh);
	mb_attr_int(nd, "dtype", BASE_DT_INT64);
	assert_int_equal(oc_load(mb, &o), STRATA_NOT_IMPLEMENTED);
	oc_assert_msg(&o, "int64");
	mb = one_node(NULL, "RandomUniform", "", NULL, "y", U1, &nd);
	mb_attr_ints(nd, "shape", 1, sh);
	mb_attr_int(nd, "dtype", 999);
	assert_int_equal(oc_load(mb, &o), STRATA_INVALID_GRAPH);
	oc_assert_msg(&o, "dtype");
	/* An empty range. */
	mb = one_node(NULL, "RandomUniform", "", NULL, "y", U1, &nd);
	mb_attr_ints(nd, "shape", 1, sh);
	mb_attr_float(nd, "low", 2.0f);
	mb_attr_float(nd, "high", 1.0f);
	assert_int_equal(oc_load(mb, &o), STRATA_INVALID_GRAPH);
	oc_assert_msg(&o, "range");
	/* A seed that is not a float. */
	mb = one_node(NULL, "RandomUniform", "", NULL, "y", U1, &nd);
	mb_attr_ints(nd, "shape", 1, sh);
	mb_attr_string(nd, "seed", "abc");
	assert_int_equal(oc_load(mb, &o), STRATA_INVALID_GRAPH);
	oc_assert_msg(&o, "seed");
}

static void test_bernoulli(void **state)
{
	(void)state;
	static const int B1[] = {BASE_DT_BOOL};
	static const float p[6] = {0, 1, 0, 1, 1, 0};
	static const int64_t d[2] = {2, 3};
	struct mb_node *nd;
	struct oc_case o;
	struct mb_model *mb = one_node(NULL, "Bernoulli", "p", F, "y", B1, &nd);
	mb_attr_int(nd, "dtype", BASE_DT_BOOL);
	assert_int_equal(oc_load(mb, &o), 0);
	struct rt_tensor in[1] = {oc_tensor(BASE_DT_FLOAT, 2, d, p)};
	assert_int_equal(oc_run(&o, in), 0);
	assert_int_equal(o.out[0].dtype, BASE_DT_BOOL);
	oc_assert_shape(&o.out[0], 2, d);
	for (int i = 0; i < 6; i++)
		assert_int_equal(((uint8_t *)o.out[0].data)[i], (uint8_t)p[i]);
	/* A probability outside [0, 1] (or NaN) fails the run. */
	static const float bad[6] = {0, 1, 0, 1.5f, 1, 0};
	in[0].data = (void *)bad;
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "outside [0, 1]");
	static const float nan6[6] = {NAN, 0, 0, 0, 0, 0};
	in[0].data = (void *)nan6;
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_free(&o);
	/* Half probabilities give both outcomes, and the output keeps p's type. */
	static const int D1[] = {BASE_DT_DOUBLE};
	static double half[400];
	static const int64_t d400[1] = {400};
	for (int i = 0; i < 400; i++)
		half[i] = 0.5;
	mb = one_node(NULL, "Bernoulli", "p", D1, "y", D1, &nd);
	assert_int_equal(oc_load(mb, &o), 0);
	in[0] = oc_tensor(BASE_DT_DOUBLE, 1, d400, half);
	assert_int_equal(oc_run(&o, in), 0);
	int ones = 0;
	for (int i = 0; i < 400; i++) {
		double v = ((double *)o.out[0].data)[i];
		assert_true(v == 0.0 || v == 1.0);
		ones += v == 1.0;
	}
	assert_true(ones > 140 && ones < 260);
	oc_free(&o);
	/* An integer input has no kernel. */
	static const int I1[] = {BASE_DT_INT32};
	mb = one_node(NULL, "Bernoulli", "p", I1, "y", I1, &nd);
	assert_int_equal(oc_load(mb, &o), STRATA_NOT_IMPLEMENTED);
}

static void test_multinomial(void **state)
{
	(void)state;
	static const int L1[] = {BASE_DT_INT64};
	/* Row 0 can only draw class 2, row 1 classes 0 and 1 equally. */
	static const float lg[6] = {-INFINITY, -INFINITY, 0.0f, 1.0f, 1.0f, -INFINITY};
	static const int64_t d[2] = {2, 3}, od[2] = {2, 100};
	struct mb_node *nd;
	struct oc_case o;
	struct mb_model *mb = one_node(NULL, "Multinomial", "x", F, "y", L1, &nd);
	mb_attr_int(nd, "dtype", BASE_DT_INT64);
	mb_attr_int(nd, "sample_size", 100);
	mb_attr_float(nd, "seed", 3.0f);
	assert_int_equal(oc_load(mb, &o), 0);
	struct rt_tensor in[1] = {oc_tensor(BASE_DT_FLOAT, 2, d, lg)};
	assert_int_equal(oc_run(&o, in), 0);
	oc_assert_shape(&o.out[0], 2, od);
	const int64_t *y = o.out[0].data;
	int zeros = 0;
	for (int i = 0; i < 100; i++) {
		assert_int_equal(y[i], 2);
		assert_true(y[100 + i] == 0 || y[100 + i] == 1);
		zeros += y[100 + i] == 0;
	}
	assert_true(zeros > 25 && zeros < 75);
	/* A row without probability mass, and a NaN. */
	static const float dead[6] = {-INFINITY, -INFINITY, -INFINITY, 0, 0, 0};
	in[0].data = (void *)dead;
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "mass");
	static const float nanrow[6] = {0, NAN, 0, 0, 0, 0};
	in[0].data = (void *)nanrow;
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	/* Rank 1 input. */
	in[0] = oc_tensor(BASE_DT_FLOAT, 1, d, lg);
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_assert_msg(&o, "rank 1");
	oc_free(&o);
	/* Bad sample_size and dtype. */
	mb = one_node(NULL, "Multinomial", "x", F, "y", L1, &nd);
	mb_attr_int(nd, "dtype", BASE_DT_INT64);
	mb_attr_int(nd, "sample_size", 0);
	assert_int_equal(oc_load(mb, &o), STRATA_INVALID_GRAPH);
	oc_assert_msg(&o, "sample_size");
	mb = one_node(NULL, "Multinomial", "x", F, "y", F, &nd);
	mb_attr_int(nd, "dtype", BASE_DT_FLOAT);
	assert_int_equal(oc_load(mb, &o), STRATA_INVALID_GRAPH);
	oc_assert_msg(&o, "dtype");
}

/* ---- Gradient ------------------------------------------------------------------------ */

static ProtobufCBinaryData bin(const char *s)
{
	return (ProtobufCBinaryData){strlen(s), (uint8_t *)s};
}

/* Load mb (and free it) after giving its Gradient node the attributes xs and
 * zs (lists of nx and nz names, NULL to leave them out) and y (when not NULL). */
static int load_grad(struct mb_model *mb, const char *const *xs, size_t nx,
                     const char *const *zs, size_t nz, const char *y, struct oc_case *o)
{
	void *buf;
	size_t n;
	assert_int_equal(mb_serialize(mb, &buf, &n), 0);
	mb_free(mb);
	Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, n, buf);
	free(buf);
	assert_non_null(m);
	Onnx__NodeProto *nd = NULL;
	for (size_t i = 0; i < m->graph->n_node; i++)
		if (strcmp(m->graph->node[i]->op_type, "Gradient") == 0)
			nd = m->graph->node[i];
	assert_non_null(nd);
	Onnx__AttributeProto a[3];
	Onnx__AttributeProto *all[8];
	ProtobufCBinaryData sx[8], sz[8];
	size_t na = 0;
	assert_true(nd->n_attribute + 3 <= 8 && nx <= 8 && nz <= 8);
	for (size_t i = 0; i < nd->n_attribute; i++)
		all[na++] = nd->attribute[i];
	const char *const *lists[2] = {xs, zs};
	size_t counts[2] = {nx, nz};
	ProtobufCBinaryData *cells[2] = {sx, sz};
	static const char *const names[2] = {"xs", "zs"};
	int k = 0;
	for (int l = 0; l < 2; l++) {
		if (!lists[l])
			continue;
		onnx__attribute_proto__init(&a[k]);
		a[k].name = (char *)names[l];
		a[k].has_type = 1;
		a[k].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS;
		for (size_t i = 0; i < counts[l]; i++)
			cells[l][i] = bin(lists[l][i]);
		a[k].n_strings = counts[l];
		a[k].strings = cells[l];
		all[na++] = &a[k++];
	}
	if (y) {
		onnx__attribute_proto__init(&a[k]);
		a[k].name = (char *)"y";
		a[k].has_type = 1;
		a[k].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
		a[k].has_s = 1;
		a[k].s = bin(y);
		all[na++] = &a[k++];
	}
	/* Borrow the arrays for packing; the decoder's own ones go back before
	 * the message is freed. */
	size_t keep_n = nd->n_attribute;
	Onnx__AttributeProto **keep = nd->attribute;
	nd->n_attribute = na;
	nd->attribute = all;
	n = onnx__model_proto__get_packed_size(m);
	buf = malloc(n);
	assert_non_null(buf);
	onnx__model_proto__pack(m, buf);
	nd->n_attribute = keep_n;
	nd->attribute = keep;
	onnx__model_proto__free_unpacked(m, NULL);
	int rc = oc_load_buffer(buf, n, o);
	free(buf);
	return rc;
}

/* y = Neg((a * b - a) / b) + Identity(a) + k = a / b + k, with b broadcast
 * along a's rows and k a constant: dy/da = 1 / b and dy/db[j] = -sum_i
 * a[i][j] / b[j]^2 (the terms in a alone cancel, through every op). */
static struct mb_model *grad_model(int with_gradient)
{
	struct mb_model *mb = mb_new("g", 17);
	mb_opset(mb, TRAINING, 1);
	mb_input(mb, "a", BASE_DT_FLOAT, -1, NULL, NULL);
	mb_input(mb, "b", BASE_DT_FLOAT, -1, NULL, NULL);
	static const float k = 0.25f;
	mb_init(mb, "k", BASE_DT_FLOAT, 1, (int64_t[]){1}, &k);
	/* The Gradient node first: it must not depend on the others' order. */
	if (with_gradient) {
		struct mb_node *g = mb_node(mb, "Gradient", "a,b", "ga,gb");
		mb_node_domain(g, TRAINING);
	}
	mb_node(mb, "Mul", "a,b", "ab");
	mb_node(mb, "Sub", "ab,a", "d");
	mb_node(mb, "Div", "d,b", "e");
	mb_node(mb, "Neg", "e", "f");
	mb_node(mb, "Identity", "a", "ia");
	mb_node(mb, "Add", "f,ia", "h");
	mb_node(mb, "Add", "h,k", "y");
	mb_output(mb, "y", BASE_DT_FLOAT, -1, NULL, NULL);
	if (with_gradient) {
		mb_output(mb, "ga", BASE_DT_FLOAT, -1, NULL, NULL);
		mb_output(mb, "gb", BASE_DT_FLOAT, -1, NULL, NULL);
	}
	return mb;
}

static void test_gradient_broadcast(void **state)
{
	(void)state;
	static const char *const xs[2] = {"a", "b"};
	static const float A[6] = {1, 2, 3, -4, 5, 0.5f}, B[3] = {2, -0.5f, 4};
	static const int64_t ad[2] = {2, 3}, bd[1] = {3};
	struct oc_case o;
	assert_int_equal(load_grad(grad_model(1), xs, 2, NULL, 0, "y", &o), 0);
	struct rt_tensor in[2] = {oc_tensor(BASE_DT_FLOAT, 2, ad, A),
	                          oc_tensor(BASE_DT_FLOAT, 1, bd, B)};
	assert_int_equal(oc_run(&o, in), 0);
	oc_assert_shape(&o.out[1], 2, ad);
	oc_assert_shape(&o.out[2], 1, bd);
	const float *ga = o.out[1].data, *gb = o.out[2].data;
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 3; j++) {
			assert_near(((float *)o.out[0].data)[i * 3 + j],
			            A[i * 3 + j] / B[j] + 0.25, 1e-6);
			assert_near(ga[i * 3 + j], 1.0 / B[j], 1e-6);
		}
	for (int j = 0; j < 3; j++)
		assert_near(gb[j], -(A[j] + A[3 + j]) / ((double)B[j] * B[j]), 1e-6);
	/* Shapes that do not broadcast fail the run. */
	static const int64_t bad[1] = {2};
	in[1] = oc_tensor(BASE_DT_FLOAT, 1, bad, B);
	assert_int_equal(oc_run(&o, in), STRATA_RUNTIME);
	oc_free(&o);
}

static void test_gradient_zs(void **state)
{
	(void)state;
	/* Only a is differentiated; b is held constant. */
	struct mb_model *mb = mb_new("g", 17);
	mb_opset(mb, TRAINING, 1);
	mb_input(mb, "a", BASE_DT_DOUBLE, -1, NULL, NULL);
	mb_input(mb, "b", BASE_DT_DOUBLE, -1, NULL, NULL);
	mb_node(mb, "Mul", "a,a", "aa");
	mb_node(mb, "Mul", "aa,b", "y");
	struct mb_node *g = mb_node(mb, "Gradient", "a,b", "ga");
	mb_node_domain(g, TRAINING);
	mb_output(mb, "ga", BASE_DT_DOUBLE, -1, NULL, NULL);
	static const char *const xs[1] = {"a"}, *const zs[1] = {"b"};
	struct oc_case o;
	assert_int_equal(load_grad(mb, xs, 1, zs, 1, "y", &o), 0);
	static const double A[3] = {1, -2, 3}, B[1] = {1.5};
	static const int64_t ad[1] = {3}, bd[1] = {1};
	struct rt_tensor in[2] = {oc_tensor(BASE_DT_DOUBLE, 1, ad, A),
	                          oc_tensor(BASE_DT_DOUBLE, 1, bd, B)};
	assert_int_equal(oc_run(&o, in), 0);
	for (int i = 0; i < 3; i++)
		assert_near(((double *)o.out[0].data)[i], 2 * A[i] * B[0], 1e-12);
	oc_free(&o);
}

static void test_gradient_errors(void **state)
{
	(void)state;
	static const char *const xs[2] = {"a", "b"}, *const xa[1] = {"a"}, *const xq[2] = {"a", "q"};
	struct oc_case o;
	/* No xs, no y, an unknown y, an unknown x. */
	assert_int_equal(load_grad(grad_model(1), NULL, 0, NULL, 0, "y", &o), STRATA_INVALID_GRAPH);
	oc_assert_msg(&o, "xs");
	assert_int_equal(load_grad(grad_model(1), xs, 2, NULL, 0, NULL, &o), STRATA_INVALID_GRAPH);
	assert_int_equal(load_grad(grad_model(1), xs, 2, NULL, 0, "nope", &o), STRATA_INVALID_GRAPH);
	oc_assert_msg(&o, "nope");
	assert_int_equal(load_grad(grad_model(1), xq, 2, NULL, 0, "y", &o), STRATA_INVALID_GRAPH);
	oc_assert_msg(&o, "\"q\"");
	/* Counts that do not match the node's inputs and outputs. */
	assert_int_equal(load_grad(grad_model(1), xa, 1, NULL, 0, "y", &o), STRATA_INVALID_GRAPH);
	oc_assert_msg(&o, "inputs");
	/* y depends on b, which is neither differentiated nor held constant. */
	struct mb_model *mb = grad_model(0);
	struct mb_node *g = mb_node(mb, "Gradient", "a", "ga");
	mb_node_domain(g, TRAINING);
	mb_output(mb, "ga", BASE_DT_FLOAT, -1, NULL, NULL);
	assert_int_equal(load_grad(mb, xa, 1, NULL, 0, "y", &o), STRATA_NOT_IMPLEMENTED);
	oc_assert_msg(&o, "neither in xs nor in zs");
	/* An operator without a derivative here. */
	mb = mb_new("g", 17);
	mb_opset(mb, TRAINING, 1);
	mb_input(mb, "a", BASE_DT_FLOAT, -1, NULL, NULL);
	mb_node(mb, "Exp", "a", "y");
	g = mb_node(mb, "Gradient", "a", "ga");
	mb_node_domain(g, TRAINING);
	mb_output(mb, "y", BASE_DT_FLOAT, -1, NULL, NULL);
	mb_output(mb, "ga", BASE_DT_FLOAT, -1, NULL, NULL);
	assert_int_equal(load_grad(mb, xa, 1, NULL, 0, "y", &o), STRATA_NOT_IMPLEMENTED);
	oc_assert_msg(&o, "Exp");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nll_values),
		cmocka_unit_test(test_sce_values),
		cmocka_unit_test(test_loss_bad_labels_and_shapes),
		cmocka_unit_test(test_loss_bad_attributes),
		cmocka_unit_test(test_adam_values),
		cmocka_unit_test(test_adagrad_values),
		cmocka_unit_test(test_momentum_values),
		cmocka_unit_test(test_optimizer_errors),
		cmocka_unit_test(test_random_uniform),
		cmocka_unit_test(test_random_normal_like),
		cmocka_unit_test(test_random_errors),
		cmocka_unit_test(test_bernoulli),
		cmocka_unit_test(test_multinomial),
		cmocka_unit_test(test_gradient_broadcast),
		cmocka_unit_test(test_gradient_zs),
		cmocka_unit_test(test_gradient_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
