/*
 * nn.c: BatchNormalization, InstanceNormalization, LRN, MeanVarianceNormalization, DepthToSpace, SpaceToDepth.
 */
#include "../runtime_int.h"

const struct rt_opdef rt_ops_nn[] = {
	{.op = NULL},
};
