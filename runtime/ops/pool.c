/*
 * pool.c: MaxPool, AveragePool, LpPool, Global*Pool, MaxUnpool.
 */
#include "../runtime_int.h"

const struct rt_opdef rt_ops_pool[] = {
	{.op = NULL},
};
