/*
 * einsum.c: Einsum.
 */
#include "../runtime_int.h"

const struct rt_opdef rt_ops_einsum[] = {
	{.op = NULL},
};
