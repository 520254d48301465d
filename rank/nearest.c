/*
 * nearest.c: the distance of a document's tensor attribute to the query
 * tensor of a nearestNeighbor item, for the engine's nearest set (through
 * rank_query_nn_distance) and the closeness, distance and closest features
 * (vm.c).
 *
 * A dense field holds one vector.  A multi-vector field (one mapped and
 * one or more indexed dimensions, tensor(p{},x[384])) holds one vector per
 * label of its mapped dimension, read as a struct rank_sparse whose blocks
 * are the vectors; as in Vespa its distance is that of its nearest vector,
 * and closest(field) names that vector.  Ties go to the first block in the
 * stored order, so the answer is the same in every phase.
 */
#include <math.h>
#include <stdint.h>

#include "rank_eval.h"

int rank_field_multivec(const struct rank_field *fd)
{
	int mapped = 0;
	for (int k = 0; k < fd->rank; k++)
		mapped += fd->dims[k] == RANK_DIM_MAPPED;
	return fd->type == RANK_FT_TENSOR && mapped == 1 && fd->rank > 1;
}

double rank_field_nn_distance(const struct rank_field *fd, const void *v, const double *q,
                              size_t n, size_t *best)
{
	if (best)
		*best = SIZE_MAX;
	if (!v)
		return INFINITY;
	if (!rank_field_multivec(fd))
		return rank_tensor_distance(fd->distance_metric, fd->cell, v, BASE_DT_DOUBLE, q, n);
	const struct rank_sparse *s = v;
	double d = INFINITY;
	for (size_t b = 0; b < s->nblocks; b++) {
		double e = rank_tensor_distance(fd->distance_metric, BASE_DT_DOUBLE, s->cells + b * n,
		                                BASE_DT_DOUBLE, q, n);
		if (e < d || (best && *best == SIZE_MAX && !isnan(e))) {
			d = e;
			if (best)
				*best = b;
		}
	}
	return d;
}
