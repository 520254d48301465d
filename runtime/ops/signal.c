/*
 * signal.c: DFT, STFT, window functions, MelWeightMatrix.
 */
#include "../runtime_int.h"

const struct rt_opdef rt_ops_signal[] = {
	{.op = NULL},
};
