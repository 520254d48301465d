/*
 * resize.c: Resize, Upsample, GridSample, RoiAlign.
 */
#include "../runtime_int.h"

const struct rt_opdef rt_ops_resize[] = {
	{.op = NULL},
};
