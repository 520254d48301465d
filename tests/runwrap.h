/*
 * runwrap.h: for the tests that watch the model runs the library makes.
 * Such a test binary is linked with -Wl,--wrap=runtime_run (Makefile): the
 * library's calls to runtime_run reach the test's __wrap_runtime_run, which
 * notes what it was given and calls __real_runtime_run, the runtime's own.
 */
#ifndef TESTS_RUNWRAP_H
#define TESTS_RUNWRAP_H

#include "../runtime/runtime.h"

int __real_runtime_run(struct rt_ctx *cx, const struct rt_tensor *in, struct rt_tensor *out,
                       struct strata_error *err);
int __wrap_runtime_run(struct rt_ctx *cx, const struct rt_tensor *in, struct rt_tensor *out,
                       struct strata_error *err);

#endif
