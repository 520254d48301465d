/*
 * training.c: Gradient, Adam, Adagrad, Momentum (ai.onnx.preview.training).
 */
#include "../runtime_int.h"

const struct rt_opdef rt_ops_training[] = {
	{.op = NULL},
};
