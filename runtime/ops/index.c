/*
 * index.c: GatherElements, GatherND, ScatterElements, ScatterND, Scatter, Compress, NonZero, ReverseSequence, Pad, Trilu, OneHot, EyeLike.
 */
#include "../runtime_int.h"

const struct rt_opdef rt_ops_index[] = {
	{.op = NULL},
};
