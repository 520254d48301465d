/*
 * random.c: RandomUniform, RandomNormal, their Like forms, Bernoulli, Multinomial.
 */
#include "../runtime_int.h"

const struct rt_opdef rt_ops_random[] = {
	{.op = NULL},
};
