/*
 * misc.c: TopK, Unique, CumSum, Hardmax, Det, Dropout, NonMaxSuppression.
 */
#include "../runtime_int.h"

const struct rt_opdef rt_ops_misc[] = {
	{.op = NULL},
};
