/*
 * control.c: If, Loop, Scan.
 */
#include "../runtime_int.h"

const struct rt_opdef rt_ops_control[] = {
	{.op = NULL},
};
