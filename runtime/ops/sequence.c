/*
 * sequence.c: Sequence*, SplitToSequence, ConcatFromSequence, Optional*.
 */
#include "../runtime_int.h"

const struct rt_opdef rt_ops_sequence[] = {
	{.op = NULL},
};
