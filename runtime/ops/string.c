/*
 * string.c: StringNormalizer, TfIdfVectorizer, and the other string operators.
 */
#include "../runtime_int.h"

const struct rt_opdef rt_ops_string[] = {
	{.op = NULL},
};
