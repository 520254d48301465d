/*
 * profile.c: where a run context's time goes, per operator type
 * (runtime.h's "profiling").
 *
 * A top context holds at most one table (struct rt_prof, exec_int.h),
 * made when profiling is turned on; exec.c times each node it runs and
 * adds the node's own time here.  The table is one block with a fixed
 * number of rows, so a profiled run allocates nothing.
 *
 * Invariants:
 *  - rows[0 .. nrows) name distinct types; rows[RUNTIME_PROFILE_ROWS] is
 *    "(other)" and holds the types that found no free row;
 *  - own is the sum of every row's seconds.
 */
#include <string.h>

#include "exec_int.h"

int runtime_ctx_profile(struct rt_ctx *cx, int on, struct strata_error *err)
{
	struct rt_exec *x = &cx->x;
	struct rt_prof *p = NULL;
	if (on) {
		p = base_calloc(1, sizeof *p);
		if (!p)
			return base_nomem(err, "a run profile");
		p->rows[RUNTIME_PROFILE_ROWS].op = "(other)";
	}
	if (x->prof)
		base_free(x->prof, sizeof *x->prof);
	x->prof = p;
	return 0;
}

const struct rt_op_time *runtime_ctx_profile_rows(const struct rt_ctx *cx, int *n)
{
	const struct rt_prof *p = cx->x.prof;
	*n = 0;
	if (!p)
		return NULL;
	*n = p->nrows + (p->rows[RUNTIME_PROFILE_ROWS].calls > 0);
	return p->rows;
}

void rt_prof_add(struct rt_prof *p, const char *op, double seconds)
{
	struct rt_op_time *r = NULL;
	for (int i = 0; i < p->nrows; i++)
		if (p->rows[i].op == op || strcmp(p->rows[i].op, op) == 0) {
			r = &p->rows[i];
			break;
		}
	if (!r)
		r = p->nrows < RUNTIME_PROFILE_ROWS ? &p->rows[p->nrows++] : &p->rows[RUNTIME_PROFILE_ROWS];
	if (!r->op)
		r->op = op;
	r->seconds += seconds;
	r->calls++;
	p->own += seconds;
}
