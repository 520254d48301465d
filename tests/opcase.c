/*
 * opcase.c: the one-node harness shared by the operator unit tests.  It sits
 * between tests/modelbuild.c (which writes the ModelProto) and the runtime's
 * public entry points: a case is built, serialized, loaded from memory and
 * run exactly as an application would, so a test sees the codes and messages
 * a caller would see.  Failures of the harness itself (a model that will not
 * serialize, a context that cannot be made for a loaded model) fail the test
 * through cmocka rather than returning, so that a test's own assertions only
 * ever speak about the operator under test.
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

#include "opcase.h"

/* Declare each name of the comma-separated list as a graph input (or output)
 * of undeclared shape, of type dt[k] for the k-th name. */
static void declare(struct mb_model *mb, const char *list, const int *dt, int output)
{
	char buf[256];
	snprintf(buf, sizeof buf, "%s", list);
	int k = 0;
	char *save = NULL;
	/* strtok_r skips empty fields, so an omitted optional input ("a,,c")
	 * takes no type from dt. */
	for (char *s = buf;; s = NULL) {
		char *name = strtok_r(s, ",", &save);
		if (!name)
			break;
		if (output)
			mb_output(mb, name, dt[k++], -1, NULL, NULL);
		else
			mb_input(mb, name, dt[k++], -1, NULL, NULL);
	}
}

struct mb_model *oc_model(int opset, const char *op, const char *ins, const int *in_dt,
                          const char *outs, const int *out_dt, struct mb_node **node)
{
	struct mb_model *mb = mb_new("t", opset);
	declare(mb, ins, in_dt, 0);
	declare(mb, outs, out_dt, 1);
	*node = mb_node(mb, op, ins, outs);
	return mb;
}

int oc_load(struct mb_model *mb, struct oc_case *o)
{
	void *buf;
	size_t n;
	assert_int_equal(mb_serialize(mb, &buf, &n), 0);
	mb_free(mb);
	int rc = oc_load_buffer(buf, n, o);
	free(buf);
	return rc;
}

int oc_load_buffer(const void *buf, size_t n, struct oc_case *o)
{
	memset(o, 0, sizeof *o);
	int rc = runtime_model_load_buffer(buf, n, NULL, &o->m, &o->err);
	if (rc == 0)
		assert_int_equal(runtime_ctx_new(o->m, &o->cx, &o->err), 0);
	return rc;
}

int oc_run(struct oc_case *o, const struct rt_tensor *in)
{
	return runtime_run(o->cx, in, o->out, &o->err);
}

void oc_free(struct oc_case *o)
{
	runtime_ctx_free(o->cx);
	runtime_model_free(o->m);
}

struct rt_tensor oc_tensor(int dt, int rank, const int64_t *dims, const void *data)
{
	struct rt_tensor t;
	memset(&t, 0, sizeof t);
	t.dtype = dt;
	t.rank = rank;
	for (int i = 0; i < rank; i++)
		t.dims[i] = dims[i];
	/* rt_tensor serves outputs too, so data is not const; a run only reads
	 * its inputs. */
	t.data = (void *)data;
	return t;
}

void oc_assert_shape(const struct rt_tensor *t, int rank, const int64_t *dims)
{
	assert_int_equal(t->rank, rank);
	for (int i = 0; i < rank; i++)
		assert_int_equal(t->dims[i], dims[i]);
}

void oc_assert_msg(const struct oc_case *o, const char *part)
{
	if (!strstr(o->err.msg, part)) {
		print_error("message \"%s\" lacks \"%s\"\n", o->err.msg, part);
		fail();
	}
}

void oc_assert_close(const float *got, const float *want, int64_t n, double tol)
{
	for (int64_t i = 0; i < n; i++) {
		double d = fabs((double)got[i] - (double)want[i]);
		if (d > tol * (1.0 + fabs((double)want[i]))) {
			print_error("cell %lld: got %.9g, want %.9g\n", (long long)i, got[i], want[i]);
			fail();
		}
	}
}

float oc_frand(unsigned *s)
{
	/* The C library's example LCG, written out so that random test data does
	 * not depend on the platform's rand(). */
	*s = *s * 1103515245u + 12345u;
	return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

struct rt_model *oc_load_option(struct mb_model *mb, const char *key, const char *value)
{
	void *p;
	size_t n;
	struct strata_error err = { 0 };
	struct rt_options *o;
	struct rt_model *m;
	assert_int_equal(mb_serialize(mb, &p, &n), 0);
	assert_int_equal(runtime_options_new(&o, &err), 0);
	assert_int_equal(runtime_options_set(o, key, value, &err), 0);
	if (runtime_model_load_buffer_opts(p, n, NULL, o, &m, &err) != 0)
		fail_msg("load (%s=%s): %s", key, value, err.msg);
	runtime_options_free(o);
	free(p);
	return m;
}

struct rt_model *oc_load_level(struct mb_model *mb, const char *level)
{
	return oc_load_option(mb, "session.graph_optimization_level", level);
}
