/*
 * conv.c: Conv, ConvTranspose, ConvInteger, QLinearConv.
 */
#include "../runtime_int.h"

const struct rt_opdef rt_ops_conv[] = {
	{.op = NULL},
};
