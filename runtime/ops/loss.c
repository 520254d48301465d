/*
 * loss.c: NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss.
 */
#include "../runtime_int.h"

const struct rt_opdef rt_ops_loss[] = {
	{.op = NULL},
};
