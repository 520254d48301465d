/*
 * shape.c: small shape helpers shared by the runtime and its kernels: cell
 * counts, numpy-style broadcasting, axis normalization and reading shape-like
 * integer tensors (the second input of Reshape, the axes of Unsqueeze),
 * byte sizes, and the static shapes of the loader (struct rt_shape):
 * printing them and checking a tensor against one.  Pure functions of
 * their arguments; nothing here allocates.  The bottom of runtime/: it uses
 * nothing of the runtime's own.
 */
#include <stdio.h>

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

size_t rt_tensor_bytes(int dtype, int64_t count, int *ok)
{
	size_t es = dtype == BASE_DT_STRING ? sizeof(char *) : base_dtype_size(dtype);
	*ok = 0;
	if (es == 0 || count < 0 || count > RT_MAX_CELLS)
		return 0;
	*ok = 1;
	return (size_t)count * es;
}

int rt_shape_full(const struct rt_shape *s)
{
	if (s->rank < 0)
		return 0;
	for (int i = 0; i < s->rank; i++)
		if (!rt_dim_is_full(s->d[i]))
			return 0;
	return 1;
}

void rt_shape_format(const struct rt_shape *s, char *buf, size_t cap)
{
	if (!cap)
		return;
	if (s->rank < 0) {
		snprintf(buf, cap, "?");
		return;
	}
	size_t k = (size_t)snprintf(buf, cap, "[");
	for (int i = 0; i < s->rank && i < RT_MAX_RANK && k < cap; i++) {
		const char *sep = i ? "," : "";
		if (rt_dim_is_int(s->d[i]))
			k += (size_t)snprintf(buf + k, cap - k, "%s%lld", sep, (long long)s->d[i].size);
		else if (rt_dim_is_capped(s->d[i]))
			k += (size_t)snprintf(buf + k, cap - k, "%smin(%s,%lld)", sep, s->d[i].sym,
			                      (long long)s->d[i].bound);
		else
			k += (size_t)snprintf(buf + k, cap - k, "%s%s", sep,
			                      rt_dim_is_sym(s->d[i]) ? s->d[i].sym : "?");
	}
	if (k < cap)
		snprintf(buf + k, cap - k, "]");
}

int rt_shape_fits(const struct rt_shape *s, const struct rt_tensor *t,
                  int64_t (*sym_size)(void *ud, const char *name), void *ud)
{
	if (s->rank < 0)
		return 1;
	if (s->rank != t->rank)
		return 0;
	for (int i = 0; i < s->rank; i++) {
		if (rt_dim_is_int(s->d[i]) && s->d[i].size != t->dims[i])
			return 0;
		if (!rt_dim_is_int(s->d[i]) && s->d[i].sym && sym_size) {
			int64_t v = sym_size(ud, s->d[i].sym);
			if (v >= 0 && rt_dim_is_capped(s->d[i]) && v > s->d[i].bound)
				v = s->d[i].bound;
			if (v >= 0 && v != t->dims[i])
				return 0;
		}
	}
	return 1;
}
