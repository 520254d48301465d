/*
 * opcase.h: the harness of the operator unit tests (tests/test_ops_*.c).
 * A case is one ONNX node wrapped in a model whose graph inputs and outputs
 * are the node's own, built with tests/modelbuild.h, loaded from memory with
 * runtime_model_load_buffer and run on tensors that point at test data.
 *
 *     struct oc_case o;
 *     struct mb_node *nd;
 *     static const int F[] = {BASE_DT_FLOAT, BASE_DT_FLOAT};
 *     struct mb_model *mb = oc_model(13, "Softmax", "x", F, "y", F, &nd);
 *     mb_attr_int(nd, "axis", 1);                 // attributes go on the node
 *     assert_int_equal(oc_load(mb, &o), 0);       // mb is freed here
 *     float x[2] = {1, 1};
 *     struct rt_tensor in[1] = {oc_tensor(BASE_DT_FLOAT, 2, (int64_t[]){1, 2}, x)};
 *     assert_int_equal(oc_run(&o, in), 0);
 *     oc_assert_shape(&o.out[0], 2, (int64_t[]){1, 2});
 *     oc_free(&o);
 *
 * Error paths check the code and a telling part of the message:
 *
 *     assert_int_equal(oc_load(mb, &o), STRATA_INVALID_GRAPH);
 *     oc_assert_msg(&o, "axis");
 *
 * The oc_assert_* helpers and oc_load fail the current test through cmocka,
 * so this file serves cmocka test binaries only.  A struct oc_case is used
 * by one thread; its outputs are views into the run context, valid until the
 * next oc_run on it or until oc_free.
 */
#ifndef OPCASE_H
#define OPCASE_H

#include <stddef.h>
#include <stdint.h>

#include "../runtime/runtime.h"
#include "modelbuild.h"

/* The most graph outputs a case can receive. */
#define OC_MAX_OUT 8

/* A loaded case.  m and cx are NULL until a load succeeds; err holds the
 * code and message of the last failed load or run. */
struct oc_case {
	struct rt_model *m;
	struct rt_ctx *cx;
	struct rt_tensor out[OC_MAX_OUT]; /* filled by oc_run, in output order */
	struct strata_error err;
};

/* A model (graph opset `opset`) holding the single node op(ins) -> outs.
 *   ins, outs  comma-separated names (at most 255 characters); an empty name
 *              ("a,,c") is an omitted optional input and declares nothing.
 *   in_dt      one element type per non-empty name of ins: each becomes a
 *              graph input of undeclared shape.
 *   out_dt     the same for outs and the graph outputs; BASE_DT_UNDEFINED
 *              leaves the type to the node.
 *   node       receives the node, for mb_attr_* (it lives as long as the model).
 * Returns a builder owned by the caller: pass it to oc_load or mb_free it. */
struct mb_model *oc_model(int opset, const char *op, const char *ins, const int *in_dt,
                          const char *outs, const int *out_dt, struct mb_node **node);

/* Serialize mb, free it, and load the result into o (see oc_load_buffer).
 * Returns the load code: 0, or what runtime_model_load_buffer returns, with
 * the message in o->err.msg. */
int oc_load(struct mb_model *mb, struct oc_case *o);

/* Load the serialized model buf[0..n) into o, which is cleared first; on
 * success o also gets a run context (whose creation must succeed, or the
 * test fails).  buf stays the caller's.  Returns the load code as oc_load. */
int oc_load_buffer(const void *buf, size_t n, struct oc_case *o);

/* Serialize mb (which stays the caller's) and load it with
 * session.graph_optimization_level set to level ("all", "disabled", ...);
 * a failed load fails the test with its message.  Free with
 * runtime_model_free. */
struct rt_model *oc_load_level(struct mb_model *mb, const char *level);
/* mb loaded with the session option key = value. */
struct rt_model *oc_load_option(struct mb_model *mb, const char *key, const char *value);

/* Run a loaded case on in[] (one tensor per graph input, in order).  Returns
 * runtime_run's code; outputs go to o->out, the message to o->err.msg. */
int oc_run(struct oc_case *o, const struct rt_tensor *in);

/* Release o's context and model (either may be NULL).  o is not reusable
 * until the next oc_load. */
void oc_free(struct oc_case *o);

/* A tensor view of dtype dt and shape dims[0..rank) over data (borrowed:
 * not copied, never written by a run). */
struct rt_tensor oc_tensor(int dt, int rank, const int64_t *dims, const void *data);

/* Fail the test unless t has exactly the shape dims[0..rank). */
void oc_assert_shape(const struct rt_tensor *t, int rank, const int64_t *dims);

/* Fail the test unless o's error message contains part. */
void oc_assert_msg(const struct oc_case *o, const char *part);

/* Fail the test unless every got[i] is within tol * (1 + |want[i]|) of
 * want[i], i < n; the first cell off is printed. */
void oc_assert_close(const float *got, const float *want, int64_t n, double tol);

/* The next number in [-1, 1) of the sequence seeded by *s (updated): the
 * same seed gives the same data on every platform. */
float oc_frand(unsigned *s);

#endif
