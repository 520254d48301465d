/*
 * labels.c: an array or weighted set attribute as rank expressions read it
 * through tensorFromLabels and tensorFromWeightedSet: a tensor with one
 * mapped dimension, a block per distinct element (its text: a string, or
 * an integer written in decimal) holding 1, or per key holding its weight.
 * The value is read from the document's stored JSON text.  A string
 * attribute is seen as its hash.
 */
#include <stdio.h>
#include <string.h>

#include "../engine_int.h"

/* The label of element e (a string or an integer) in buf; NULL otherwise. */
static const char *label_of(const json_t *e, char *buf, size_t n)
{
	if (json_is_string(e))
		return json_string_value(e);
	if (json_is_integer(e)) {
		snprintf(buf, n, "%lld", (long long)json_integer_value(e));
		return buf;
	}
	return NULL;
}

const struct rank_sparse *eng_collection_sparse(const struct rank_field *rf, const char *s,
                                                size_t n, struct base_arena *a)
{
	json_error_t je;
	int oom;
	json_t *j = eng_json_parse(s, n, JSON_DECODE_ANY, &je, &oom);
	if (!j)
		return NULL;
	size_t cap = json_is_object(j) ? json_object_size(j) : json_array_size(j);
	struct rank_sparse *r = base_arena_alloc(a, sizeof *r, 8);
	const char **lab = base_arena_alloc(a, (cap ? cap : 1) * sizeof *lab, 8);
	double *c = base_arena_alloc(a, (cap ? cap : 1) * sizeof *c, 8);
	size_t nb = 0;
	int ok = r && lab && c;
	if (ok && json_is_object(j) && rf->type == RANK_FT_WSET) {
		const char *k;
		const json_t *w;
		json_object_foreach(j, k, w) {
			if (!(lab[nb] = base_arena_strdup(a, k))) {
				ok = 0;
				break;
			}
			c[nb++] = json_number_value(w);
		}
	}
	for (size_t i = 0; ok && json_is_array(j) && i < cap; i++) {
		char buf[32];
		const char *l = label_of(json_array_get(j, i), buf, sizeof buf);
		size_t k = 0;
		while (l && k < nb && strcmp(lab[k], l) != 0)
			k++;
		if (!l || k < nb)
			continue; /* not a label, or one seen already */
		if (!(lab[nb] = base_arena_strdup(a, l)))
			ok = 0;
		c[nb++] = 1;
	}
	json_decref(j);
	if (!ok)
		return NULL;
	r->nblocks = nb;
	r->labels = lab;
	r->cells = c;
	return r;
}

const void *eng_rank_value(const struct rank_field *rf, const struct store_value *sv,
                           struct base_arena *a)
{
	if (!sv || !sv->set)
		return NULL;
	if (rf->type != RANK_FT_STRING)
		return eng_collection_sparse(rf, sv->s, sv->n, a);
	double *h = base_arena_alloc(a, sizeof *h, 8);
	if (h)
		*h = rank_string_hash(sv->s, sv->n);
	return h;
}
