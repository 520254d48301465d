/*
 * quant.c: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, MatMulInteger, QLinearMatMul.
 */
#include "../runtime_int.h"

const struct rt_opdef rt_ops_quant[] = {
	{.op = NULL},
};
