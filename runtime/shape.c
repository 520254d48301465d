/*
 * shape.c: small shape helpers shared by the runtime and its kernels: cell
 * counts, numpy-style broadcasting, axis normalization and reading shape-like
 * integer tensors (the second input of Reshape, the axes of Unsqueeze).
 * Pure functions of their arguments; nothing here allocates.
 */
#include "runtime_int.h"

int64_t runtime_tensor_count(const struct rt_tensor *t)
{
	int64_t n = 1;
	for (int i = 0; i < t->rank; i++)
		n *= t->dims[i];
	return n;
}

int rt_broadcast_shape(const struct rt_tensor *a, const struct rt_tensor *b, int *rank,
                       int64_t *dims)
{
	int r = a->rank > b->rank ? a->rank : b->rank;
	if (r > RT_MAX_RANK)
		return STRATA_RUNTIME;
	/* Align the shapes on their last dimension; a missing leading dimension
	 * counts as 1. */
	for (int i = 0; i < r; i++) {
		int ia = a->rank - r + i, ib = b->rank - r + i;
		int64_t da = ia >= 0 ? a->dims[ia] : 1;
		int64_t db = ib >= 0 ? b->dims[ib] : 1;
		if (da == db || db == 1)
			dims[i] = da;
		else if (da == 1)
			dims[i] = db;
		else
			return STRATA_RUNTIME;
	}
	*rank = r;
	return 0;
}

int rt_axis(int64_t axis, int r)
{
	if (axis < -(int64_t)r || axis >= (int64_t)r)
		return -1;
	return (int)(axis < 0 ? axis + r : axis);
}

int rt_tensor_to_ints(const struct rt_tensor *t, int64_t *dst, int max)
{
	if (!t || t->rank > 1)
		return -1;
	int64_t n = runtime_tensor_count(t);
	if (n > max)
		return -1;
	for (int64_t i = 0; i < n; i++) {
		if (t->dtype == BASE_DT_INT64)
			dst[i] = ((const int64_t *)t->data)[i];
		else if (t->dtype == BASE_DT_INT32)
			dst[i] = ((const int32_t *)t->data)[i];
		else
			return -1;
	}
	return (int)n;
}

int64_t rt_cells(int rank, const int64_t *dims, int64_t max)
{
	int64_t c = 1;
	for (int i = 0; i < rank; i++) {
		if (dims[i] < 0)
			return -1;
		if (dims[i] != 0 && c > max / dims[i])
			return -1;
		c *= dims[i];
	}
	return c;
}
