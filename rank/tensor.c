/*
 * tensor.c: the dense tensor algebra the VM calls.
 *
 * Operands are (type, cells) pairs whose cells may be of any numeric
 * BASE_DT_* type: attribute and query tensors are read where they are stored
 * (the store's memory map, the query's input buffer), never converted first.
 * Results are double cells drawn from the caller's arena, so evaluating a
 * document allocates nothing once the arena has grown to its working size.
 * Dimensions are matched by name; an operand missing a dimension of the
 * result is broadcast along it (stride 0).  Types were checked by compile.c,
 * so shapes here always agree.
 */
#include <math.h>
#include <string.h>

#include "rank_eval.h"

double rank_cell(int cell, const void *cells, size_t i)
{
	switch (cell) {
	case BASE_DT_FLOAT: return ((const float *)cells)[i];
	case BASE_DT_DOUBLE: return ((const double *)cells)[i];
	case BASE_DT_INT8: return ((const int8_t *)cells)[i];
	case BASE_DT_INT32: return ((const int32_t *)cells)[i];
	case BASE_DT_INT64: return (double)((const int64_t *)cells)[i];
	case BASE_DT_BFLOAT16: return base_bf16_to_f32(((const uint16_t *)cells)[i]);
	default: return base_load_double(cell, cells, i);
	}
}

static size_t cells_of(const struct rank_type *t)
{
	size_t n = 1;
	for (int i = 0; i < t->rank; i++)
		n *= (size_t)t->dims[i];
	return n;
}

/* Strides of t's dimensions laid along r's: str[k] is how far one step in
 * r's dimension k moves in t's cells (0 when t lacks it). */
static void strides_along(const struct rank_type *t, const struct rank_type *r, size_t *str)
{
	size_t own[RANK_MAX_RANK], s = 1;
	for (int i = t->rank - 1; i >= 0; i--) {
		own[i] = s;
		s *= (size_t)t->dims[i];
	}
	for (int k = 0; k < r->rank; k++) {
		str[k] = 0;
		for (int i = 0; i < t->rank; i++)
			if (strcmp(t->dim_names[i], r->dim_names[k]) == 0)
				str[k] = own[i];
	}
}

/* A value's i-th cell; a number (rank 0) is its own single cell. */
static inline double val_cell(const struct rank_type *t, const struct rank_val *v, size_t i)
{
	return t->rank == 0 ? v->num : rank_cell(v->cell, v->cells, i);
}

int rank_tensor_join(struct base_arena *a, const struct rank_type *ta, struct rank_val va,
                     const struct rank_type *tb, struct rank_val vb, const struct rank_type *tr,
                     double (*fn)(void *ud, double x, double y), void *ud, double **out)
{
	size_t n = cells_of(tr);
	double *r = base_arena_alloc(a, n * sizeof *r, 64);
	if (!r)
		return STRATA_NOMEM;
	*out = r;
	/* Common shapes first: same layout on both sides, or a number on one. */
	int la = ta->rank == 0 || rank_type_same_dims(ta, tr);
	int lb = tb->rank == 0 || rank_type_same_dims(tb, tr);
	if (la && lb) {
		for (size_t i = 0; i < n; i++)
			r[i] = fn(ud, val_cell(ta, &va, i), val_cell(tb, &vb, i));
		return 0;
	}
	size_t sa[RANK_MAX_RANK], sb[RANK_MAX_RANK], idx[RANK_MAX_RANK] = { 0 };
	strides_along(ta, tr, sa);
	strides_along(tb, tr, sb);
	size_t ia = 0, ib = 0;
	for (size_t i = 0; i < n; i++) {
		r[i] = fn(ud, val_cell(ta, &va, ia), val_cell(tb, &vb, ib));
		/* odometer step over the result's dimensions */
		for (int k = tr->rank - 1; k >= 0; k--) {
			ia += sa[k];
			ib += sb[k];
			if (++idx[k] < (size_t)tr->dims[k])
				break;
			ia -= sa[k] * idx[k];
			ib -= sb[k] * idx[k];
			idx[k] = 0;
		}
	}
	return 0;
}

int rank_tensor_reduce(struct base_arena *a, const struct rank_type *ti, struct rank_val v,
                       const struct rank_type *tr, int agg, double **out)
{
	size_t n = cells_of(ti), m = cells_of(tr);
	double *r = base_arena_alloc(a, m * sizeof *r, 64);
	if (!r)
		return STRATA_NOMEM;
	*out = r;
	double init = agg == RANK_AGG_PROD ? 1.0 : agg == RANK_AGG_MAX ? -INFINITY :
	              agg == RANK_AGG_MIN ? INFINITY : 0.0;
	for (size_t j = 0; j < m; j++)
		r[j] = init;
	/* Where each input cell lands: strides of the result along the input's
	 * dimensions (0 for the reduced ones). */
	size_t so[RANK_MAX_RANK], idx[RANK_MAX_RANK] = { 0 };
	strides_along(tr, ti, so);
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		double x = val_cell(ti, &v, i);
		switch (agg) {
		case RANK_AGG_SUM: case RANK_AGG_AVG: r[o] += x; break;
		case RANK_AGG_PROD: r[o] *= x; break;
		case RANK_AGG_MAX: if (x > r[o]) r[o] = x; break;
		case RANK_AGG_MIN: if (x < r[o]) r[o] = x; break;
		case RANK_AGG_COUNT: r[o] += 1.0; break;
		}
		for (int k = ti->rank - 1; k >= 0; k--) {
			o += so[k];
			if (++idx[k] < (size_t)ti->dims[k])
				break;
			o -= so[k] * idx[k];
			idx[k] = 0;
		}
	}
	if (agg == RANK_AGG_AVG) {
		double per = (double)n / (double)(m ? m : 1);
		for (size_t j = 0; j < m; j++)
			r[j] /= per;
	}
	return 0;
}

int rank_tensor_concat(struct base_arena *a, const struct rank_type *ta, struct rank_val va,
                       const struct rank_type *tb, struct rank_val vb, const struct rank_type *tr,
                       int dim, double **out)
{
	size_t n = cells_of(tr);
	double *r = base_arena_alloc(a, n * sizeof *r, 64);
	if (!r)
		return STRATA_NOMEM;
	*out = r;
	/* Strides of each side along the result's dimensions; along dim, x
	 * covers the first na positions and y the rest. */
	size_t sa[RANK_MAX_RANK], sb[RANK_MAX_RANK], idx[RANK_MAX_RANK] = { 0 };
	strides_along(ta, tr, sa);
	strides_along(tb, tr, sb);
	int64_t na = 1;
	for (int i = 0; i < ta->rank; i++)
		if (strcmp(ta->dim_names[i], tr->dim_names[dim]) == 0)
			na = ta->dims[i];
	for (size_t i = 0; i < n; i++) {
		int from_a = (int64_t)idx[dim] < na;
		size_t off = 0;
		for (int k = 0; k < tr->rank; k++) {
			size_t at = k == dim && !from_a ? idx[k] - (size_t)na : idx[k];
			off += at * (from_a ? sa[k] : sb[k]);
		}
		r[i] = from_a ? val_cell(ta, &va, off) : val_cell(tb, &vb, off);
		for (int k = tr->rank - 1; k >= 0; k--) {
			if (++idx[k] < (size_t)tr->dims[k])
				break;
			idx[k] = 0;
		}
	}
	return 0;
}

/* Sum of x[i] * y[i] over eight running sums (i mod 8), added pairwise at
 * the end: independent sums keep the vector units busy where one sum waits
 * on each addition, and the order is fixed, so every machine gives the same
 * bits. */
#define DOT8(X, Y)                                                                    \
	do {                                                                          \
		double p[8] = { 0 };                                                  \
		size_t i = 0;                                                         \
		for (; i + 8 <= n; i += 8)                                            \
			for (int k = 0; k < 8; k++)                                   \
				p[k] += (double)(X)[i + k] * (double)(Y)[i + k];      \
		for (int k = 0; i < n; i++, k++)                                      \
			p[k] += (double)(X)[i] * (double)(Y)[i];                      \
		s = rank_dot_combine(p);                                              \
	} while (0)

double rank_tensor_dot(int ca, const void *a, int cb, const void *b, size_t n)
{
	double s = 0.0;
	if (ca == BASE_DT_FLOAT && cb == BASE_DT_FLOAT) {
		const float *x = a, *y = b;
		DOT8(x, y);
	} else if (ca == BASE_DT_FLOAT && cb == BASE_DT_DOUBLE) {
		const float *x = a;
		const double *y = b;
		DOT8(x, y);
	} else if (ca == BASE_DT_DOUBLE && cb == BASE_DT_FLOAT) {
		return rank_tensor_dot(cb, b, ca, a, n);
	} else if (ca == BASE_DT_DOUBLE && cb == BASE_DT_DOUBLE) {
		const double *x = a, *y = b;
		DOT8(x, y);
	} else {
		/* bfloat16, int8 and the integer cells: widened to double exactly,
		 * then summed as the others (dot.c's kernels read them so) */
		double p[8] = { 0 };
		size_t i = 0;
		for (; i + 8 <= n; i += 8)
			for (int k = 0; k < 8; k++)
				p[k] += rank_cell(ca, a, i + k) * rank_cell(cb, b, i + k);
		for (int k = 0; i < n; i++, k++)
			p[k] += rank_cell(ca, a, i) * rank_cell(cb, b, i);
		s = rank_dot_combine(p);
	}
	return s;
}

/* x as an int8 cell (truncated, held in range), as hamming() reads it. */
static int8_t int8_bits(double x)
{
	if (!(x > -128.0))
		return -128;
	return x > 127.0 ? 127 : (int8_t)x;
}

/* hamming: with int8 cells the number of bits that differ (each cell is 8
 * bits; the other side's cells are taken as int8), else the number of
 * cells that differ. */
static double hamming(int ca, const void *a, int cb, const void *b, size_t n)
{
	double s = 0;
	if (ca == BASE_DT_INT8 || cb == BASE_DT_INT8) {
		for (size_t i = 0; i < n; i++) {
			unsigned x = (uint8_t)int8_bits(rank_cell(ca, a, i));
			unsigned y = (uint8_t)int8_bits(rank_cell(cb, b, i));
			s += __builtin_popcount(x ^ y);
		}
		return s;
	}
	for (size_t i = 0; i < n; i++)
		s += rank_cell(ca, a, i) != rank_cell(cb, b, i);
	return s;
}

/* geodegrees: cells 0 and 1 are latitude and longitude in degrees; the
 * great-circle distance in kilometres (haversine, mean earth radius). */
static double geodegrees(int ca, const void *a, int cb, const void *b, size_t n)
{
	if (n < 2)
		return INFINITY;
	const double r = M_PI / 180.0;
	double lat1 = rank_cell(ca, a, 0) * r, lon1 = rank_cell(ca, a, 1) * r;
	double lat2 = rank_cell(cb, b, 0) * r, lon2 = rank_cell(cb, b, 1) * r;
	double sa = sin((lat2 - lat1) / 2), so = sin((lon2 - lon1) / 2);
	double h = sa * sa + cos(lat1) * cos(lat2) * so * so;
	if (h > 1.0)
		h = 1.0;
	return 2.0 * 6371.0088 * asin(sqrt(h));
}

/* Distances as Vespa defines them for nearest-neighbor search:
 * euclidean sqrt(sum (a-b)^2); angular the angle acos(cos) in radians;
 * dotproduct -a.b; prenormalized-angular 1 - a.b (vectors of length 1);
 * hamming and geodegrees above. */
double rank_tensor_distance(int metric, int ca, const void *a, int cb, const void *b, size_t n)
{
	switch (metric) {
	case RANK_DIST_HAMMING:
		return hamming(ca, a, cb, b, n);
	case RANK_DIST_GEODEGREES:
		return geodegrees(ca, a, cb, b, n);
	case RANK_DIST_ANGULAR: {
		double ab = 0, aa = 0, bb = 0;
		for (size_t i = 0; i < n; i++) {
			double x = rank_cell(ca, a, i), y = rank_cell(cb, b, i);
			ab += x * y;
			aa += x * x;
			bb += y * y;
		}
		if (aa == 0.0 || bb == 0.0)
			return M_PI / 2; /* no direction: orthogonal to everything */
		double c = ab / sqrt(aa * bb);
		if (c > 1.0)
			c = 1.0;
		if (c < -1.0)
			c = -1.0;
		return acos(c);
	}
	case RANK_DIST_DOTPRODUCT:
		return -rank_tensor_dot(ca, a, cb, b, n);
	case RANK_DIST_PRENORMALIZED_ANGULAR:
		return 1.0 - rank_tensor_dot(ca, a, cb, b, n);
	default: {
		double s = 0;
		for (size_t i = 0; i < n; i++) {
			double d = rank_cell(ca, a, i) - rank_cell(cb, b, i);
			s += d * d;
		}
		return sqrt(s);
	}
	}
}

/* closeness: the dot product itself for dotproduct, else 1 / (1 + distance);
 * a missing value (distance +inf) gives 0. */
double rank_closeness_of(int metric, double distance)
{
	if (isinf(distance) && distance > 0)
		return 0.0;
	if (metric == RANK_DIST_DOTPRODUCT)
		return -distance;
	return 1.0 / (1.0 + distance);
}
