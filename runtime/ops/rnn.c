/*
 * rnn.c: RNN, GRU, LSTM.
 */
#include "../runtime_int.h"

const struct rt_opdef rt_ops_rnn[] = {
	{.op = NULL},
};
