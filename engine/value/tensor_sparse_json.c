/*
 * tensor_sparse_json.c: tensors with mapped dimensions (tensor(cat{}),
 * tensor(p{},x[4])) from JSON into blocks: one dense subspace of the
 * indexed dimensions per distinct set of labels of the mapped ones.
 *
 * Forms, as Vespa's document JSON has them:
 *   - {"cells": [{"address": {"cat": "a", "x": "0"}, "value": 1.5}, ...]}
 *     for any type; cells left out of a block given are 0;
 *   - {"cells": {"a": 1, "b": 2}} and the bare {"a": 1, "b": 2}, for one
 *     mapped dimension and no indexed one;
 *   - {"blocks": [{"address": {"p": "a"}, "values": [1, 2, 3, 4]}, ...]},
 *     for mixed types;
 *   - {"blocks": {"a": [1, 2, 3, 4]}} and the bare {"a": [1, 2, 3, 4]}, for
 *     one mapped dimension and indexed ones (values row-major, flat or nested);
 *   - in either blocks form a block's values may be one hex string, the
 *     cells' bits as Vespa encodes them (numbers.c: eng_hex_cells);
 *   - a cell value may be a string of a number ("1.5", "inf", "nan").
 * A "type" member beside "cells" or "blocks" (as in Vespa's output) is
 * ignored.  Labels are strings (integers are taken as their decimal text)
 * of 1 to ENG_LABEL_MAX bytes.
 *
 * Document fields of such types are kept as JSON text in the document
 * record (Vespa's short form, which summaries show as it is); ranking reads
 * them by parsing that text into the VM's struct rank_sparse.
 *
 * Invariant: on error nothing is kept (the blocks are freed), and the
 * message names the value (what), and the cell or block at fault.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../engine_int.h"

void eng_sparse_free(struct eng_sparse *s)
{
	for (size_t i = 0; i < s->nblocks * (size_t)s->nmapped; i++)
		base_strfree(s->labels[i]);
	if (s->labels)
		base_free(s->labels, s->cap * (size_t)(s->nmapped ? s->nmapped : 1) * sizeof *s->labels);
	if (s->cells)
		base_free(s->cells, s->cap * (s->sub ? s->sub : 1) * sizeof *s->cells);
	memset(s, 0, sizeof *s);
}

/* Room for one more block. */
static int grow(struct eng_sparse *s, struct strata_error *err)
{
	if (s->nblocks < s->cap)
		return 0;
	size_t nm = (size_t)(s->nmapped ? s->nmapped : 1), sub = s->sub ? s->sub : 1;
	size_t cap = s->cap ? s->cap * 2 : 8;
	char **l = base_realloc(s->labels, s->cap * nm * sizeof *l, cap * nm * sizeof *l);
	if (!l)
		return base_nomem(err, "tensor blocks");
	s->labels = l;
	double *c = base_realloc(s->cells, s->cap * sub * sizeof *c, cap * sub * sizeof *c);
	if (!c)
		return base_nomem(err, "tensor blocks");
	s->cells = c;
	s->cap = cap;
	return 0;
}

/* The label of a mapped dimension in an address: a string or an integer. */
static int label_of(const json_t *v, char *buf, size_t n)
{
	if (json_is_integer(v)) {
		snprintf(buf, n, "%lld", (long long)json_integer_value(v));
		return 0;
	}
	if (!json_is_string(v))
		return -1;
	size_t len = json_string_length(v);
	if (len == 0 || len > ENG_LABEL_MAX)
		return -1;
	memcpy(buf, json_string_value(v), len + 1);
	return 0;
}

/* The index of the block under labels (nmapped of them), or -1 when there
 * is none.  The last block is tried first: cells come block by block. */
static long find_block(const struct eng_sparse *s, char labels[][ENG_LABEL_MAX + 1])
{
	size_t nm = (size_t)s->nmapped;
	for (size_t i = 0; i < s->nblocks; i++) {
		size_t b = s->nblocks - 1 - i;
		int same = 1;
		for (size_t k = 0; k < nm && same; k++)
			same = strcmp(s->labels[b * nm + k], labels[k]) == 0;
		if (same)
			return (long)b;
	}
	return -1;
}

/* A new block under labels, with zero cells: its index, or -1 with err
 * set. */
static long add_block(struct eng_sparse *s, char labels[][ENG_LABEL_MAX + 1],
                      struct strata_error *err)
{
	size_t nm = (size_t)s->nmapped;
	if (grow(s, err))
		return -1;
	size_t b = s->nblocks;
	for (size_t k = 0; k < nm; k++)
		if (!(s->labels[b * nm + k] = base_strdup(labels[k]))) {
			while (k--)
				base_strfree(s->labels[b * nm + k]);
			base_nomem(err, "tensor label");
			return -1;
		}
	memset(s->cells + b * s->sub, 0, s->sub * sizeof *s->cells);
	s->nblocks++;
	return (long)b;
}

/* A cell value: a number, or a string of one as Vespa reads it
 * ("1.5", "inf", "nan": numbers.c). */
static int number(const json_t *v, double *out)
{
	return eng_num_real(v, 1, out) ? -1 : 0;
}

/* One cell of the cells form: {"address": {...}, "value": v}. */
static int put_cell(struct eng_sparse *s, const struct eng_ttype *t, const json_t *c, size_t idx,
                    const char *what, struct strata_error *err)
{
	char tb[256];
	char labels[RANK_MAX_RANK][ENG_LABEL_MAX + 1];
	const json_t *addr = json_object_get(c, "address");
	const json_t *val = json_object_get(c, "value");
	double d;
	if (!json_is_object(addr) || !val)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "%s: cell %zu needs \"address\" (an object) and \"value\"", what, idx);
	if ((int)json_object_size(addr) != t->rank)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "%s: cell %zu: address has %zu dimensions, expected %d (%s)", what, idx,
		                json_object_size(addr), t->rank, eng_ttype_str(t, tb, sizeof tb));
	size_t flat = 0;
	int m = 0;
	for (int k = 0; k < t->rank; k++) {
		const char *dn = t->dim_names[k];
		const json_t *iv = json_object_get(addr, dn);
		if (!iv)
			return base_err(err, STRATA_INVALID_ARGUMENT,
			                "%s: cell %zu: address lacks dimension '%s' (%s)", what, idx, dn,
			                eng_ttype_str(t, tb, sizeof tb));
		if (t->dims[k] < 0) {
			if (label_of(iv, labels[m++], sizeof labels[0]))
				return base_err(err, STRATA_INVALID_ARGUMENT,
				                "%s: cell %zu: bad label for dimension '%s' (a string of 1 "
				                "to %d bytes)",
				                what, idx, dn, ENG_LABEL_MAX);
			continue;
		}
		long long i = -1;
		if (json_is_integer(iv))
			i = json_integer_value(iv);
		else if (json_is_string(iv)) {
			char *end;
			i = strtoll(json_string_value(iv), &end, 10);
			if (end == json_string_value(iv) || *end)
				i = -1;
		}
		if (i < 0 || i >= t->dims[k])
			return base_err(err, STRATA_INVALID_ARGUMENT,
			                "%s: cell %zu: bad index for dimension '%s' (%s)", what, idx, dn,
			                eng_ttype_str(t, tb, sizeof tb));
		flat = flat * (size_t)t->dims[k] + (size_t)i;
	}
	if (number(val, &d))
		return base_err(err, STRATA_INVALID_ARGUMENT, "%s: cell %zu: value is not a number",
		                what, idx);
	long b = find_block(s, labels);
	if (b < 0 && (b = add_block(s, labels, err)) < 0)
		return STRATA_NOMEM;
	s->cells[(size_t)b * s->sub + flat] = d;
	return 0;
}

/* The values of one dense subspace, flat or nested, into cells. */
static int put_values(const json_t *a, const struct eng_ttype *t, int depth, double *cells,
                      size_t *at, size_t sub, const char *what, const char *label,
                      struct strata_error *err)
{
	size_t i;
	const json_t *v;
	json_array_foreach(a, i, v) {
		if (json_is_array(v)) {
			int rc = put_values(v, t, depth + 1, cells, at, sub, what, label, err);
			if (rc)
				return rc;
			continue;
		}
		if (*at >= sub || number(v, &cells[*at]))
			break;
		(*at)++;
	}
	if (i < json_array_size(a) || (depth == 0 && *at != sub))
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "%s: block '%s' needs %zu numbers", what, label, sub);
	return 0;
}

/* One new block: its labels and its values. */
static int put_block(struct eng_sparse *s, const struct eng_ttype *t,
                     char labels[][ENG_LABEL_MAX + 1], const json_t *values, const char *what,
                     struct strata_error *err)
{
	if (!json_is_array(values) && !json_is_string(values))
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "%s: block '%s' needs an array of %zu numbers", what, labels[0],
		                s->sub);
	long b = add_block(s, labels, err);
	if (b < 0)
		return STRATA_NOMEM;
	if (json_is_string(values)) {
		char bwhat[ENG_LABEL_MAX + 200];
		snprintf(bwhat, sizeof bwhat, "%s: block '%s'", what, labels[0]);
		return eng_hex_cells(json_string_value(values), json_string_length(values), t->cell,
		                     s->sub, s->cells + (size_t)b * s->sub, bwhat, err);
	}
	size_t at = 0;
	return put_values(values, t, 0, s->cells + (size_t)b * s->sub, &at, s->sub, what, labels[0],
	                  err);
}

/* {"blocks": [{"address": {...}, "values": [...]}, ...]} */
static int put_block_list(struct eng_sparse *s, const struct eng_ttype *t, const json_t *list,
                          const char *what, struct strata_error *err)
{
	char labels[RANK_MAX_RANK][ENG_LABEL_MAX + 1];
	size_t idx;
	const json_t *bl;
	json_array_foreach(list, idx, bl) {
		const json_t *addr = json_object_get(bl, "address");
		if (!json_is_object(addr) || (int)json_object_size(addr) != s->nmapped)
			return base_err(err, STRATA_INVALID_ARGUMENT,
			                "%s: block %zu needs an \"address\" of the %d mapped dimensions",
			                what, idx, s->nmapped);
		int m = 0;
		for (int k = 0; k < t->rank; k++) {
			if (t->dims[k] >= 0)
				continue;
			const json_t *lv = json_object_get(addr, t->dim_names[k]);
			if (!lv || label_of(lv, labels[m++], sizeof labels[0]))
				return base_err(err, STRATA_INVALID_ARGUMENT,
				                "%s: block %zu: bad or missing label for dimension '%s' (a "
				                "string of 1 to %d bytes)",
				                what, idx, t->dim_names[k], ENG_LABEL_MAX);
		}
		const json_t *values = json_object_get(bl, "values");
		if ((json_is_array(values) || json_is_string(values)) && find_block(s, labels) >= 0)
			return base_err(err, STRATA_INVALID_ARGUMENT, "%s: block '%s' is given twice",
			                what, labels[0]);
		int rc = put_block(s, t, labels, values, what, err);
		if (rc)
			return rc;
	}
	return 0;
}

/* The short forms of one mapped dimension: {"a": 1} or {"a": [values]}.
 * An object's keys are distinct: each is a new block. */
static int put_short(struct eng_sparse *s, const struct eng_ttype *t, const json_t *obj,
                     const char *what, struct strata_error *err)
{
	char tb[256];
	char labels[1][ENG_LABEL_MAX + 1];
	if (s->nmapped != 1)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "%s: the short form needs one mapped dimension; use \"cells\" (%s)",
		                what, eng_ttype_str(t, tb, sizeof tb));
	const char *key;
	const json_t *v;
	json_object_foreach((json_t *)obj, key, v) {
		size_t len = strlen(key);
		if (len == 0 || len > ENG_LABEL_MAX)
			return base_err(err, STRATA_INVALID_ARGUMENT,
			                "%s: bad label '%.40s' (a string of 1 to %d bytes)", what, key,
			                ENG_LABEL_MAX);
		memcpy(labels[0], key, len + 1);
		int rc;
		if (s->sub == 1 && t->rank == 1) {
			double d;
			if (number(v, &d))
				return base_err(err, STRATA_INVALID_ARGUMENT,
				                "%s: cell '%s' is not a number", what, key);
			long b = add_block(s, labels, err);
			if (b < 0)
				return STRATA_NOMEM;
			s->cells[b] = d;
			rc = 0;
		} else {
			rc = put_block(s, t, labels, v, what, err);
		}
		if (rc)
			return rc;
	}
	return 0;
}

static int from_json(const json_t *j, const struct eng_ttype *t, struct eng_sparse *s,
                     const char *what, struct strata_error *err)
{
	char tb[256];
	if (!json_is_object(j))
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "%s: expected a tensor object (%s)", what,
		                eng_ttype_str(t, tb, sizeof tb));
	const json_t *c = json_object_get(j, "cells");
	const json_t *b = json_object_get(j, "blocks");
	if (c && b)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "%s: give \"cells\" or \"blocks\", not both", what);
	if (json_is_array(c)) {
		size_t idx;
		const json_t *cell;
		json_array_foreach(c, idx, cell) {
			int rc = put_cell(s, t, cell, idx, what, err);
			if (rc)
				return rc;
		}
		return 0;
	}
	if (json_is_array(b))
		return put_block_list(s, t, b, what, err);
	if (c || b) {
		if (!json_is_object(c ? c : b))
			return base_err(err, STRATA_INVALID_ARGUMENT,
			                "%s: \"%s\" must be an array or an object", what,
			                c ? "cells" : "blocks");
		if (c && s->sub != 1)
			return base_err(err, STRATA_INVALID_ARGUMENT,
			                "%s: \"cells\" as an object needs a type without indexed "
			                "dimensions; use \"blocks\" (%s)",
			                what, eng_ttype_str(t, tb, sizeof tb));
		return put_short(s, t, c ? c : b, what, err);
	}
	if (json_object_get(j, "values") || json_object_get(j, "type"))
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "%s: a tensor with mapped dimensions needs \"cells\" or \"blocks\" (%s)",
		                what, eng_ttype_str(t, tb, sizeof tb));
	return put_short(s, t, j, what, err);
}

/* Cell value d as the field's cell type keeps it. */
static double rounded(int cell, double d)
{
	switch (cell) {
	case BASE_DT_FLOAT: return (float)d;
	case BASE_DT_BFLOAT16: return base_bf16_to_f32(base_f32_to_bf16((float)d));
	case BASE_DT_INT8:
	case BASE_DT_INT32:
	case BASE_DT_INT64: return trunc(d);
	}
	return d;
}

int eng_sparse_from_json(const json_t *j, const struct eng_ttype *t, struct eng_sparse *s,
                         const char *what, struct strata_error *err)
{
	memset(s, 0, sizeof *s);
	s->sub = eng_ttype_cells(t);
	for (int k = 0; k < t->rank; k++)
		s->nmapped += t->dims[k] < 0;
	int rc = from_json(j, t, s, what, err);
	if (rc)
		eng_sparse_free(s);
	for (size_t i = 0; !rc && i < s->nblocks * s->sub; i++)
		s->cells[i] = rounded(t->cell, s->cells[i]);
	return rc;
}

/* ---- tensor literals in strings (query inputs) ------------------------------------ */

/* A cursor over a literal's text; err set once, at the first fault. */
struct lit {
	const char *p;
	int bad;   /* STRATA_INVALID_ARGUMENT or STRATA_NOMEM once something failed */
};

static void lit_ws(struct lit *l)
{
	while (*l->p == ' ' || *l->p == '\t' || *l->p == '\n' || *l->p == '\r')
		l->p++;
}

static int lit_take(struct lit *l, char c)
{
	lit_ws(l);
	if (*l->p != c)
		return 0;
	l->p++;
	return 1;
}

/* A label: a name, a number, or 'quoted' / "quoted" (no escapes), into buf. */
static int lit_label(struct lit *l, char *buf, size_t cap)
{
	lit_ws(l);
	const char *s = l->p;
	size_t n;
	if (*s == '"' || *s == '\'') {
		const char *e = strchr(s + 1, *s);
		if (!e)
			return -1;
		n = (size_t)(e - s - 1);
		l->p = e + 1;
		s++;
	} else {
		while (isalnum((unsigned char)*l->p) || *l->p == '_' || *l->p == '-' || *l->p == '.')
			l->p++;
		n = (size_t)(l->p - s);
	}
	if (n == 0 || n >= cap)
		return -1;
	memcpy(buf, s, n);
	buf[n] = 0;
	return 0;
}

/* A number, or a '[' list of numbers or lists, as JSON. */
static json_t *lit_value(struct lit *l, int depth)
{
	lit_ws(l);
	if (*l->p == '[') {
		l->p++;
		json_t *a = json_array();
		if (!a || depth > RANK_MAX_RANK)
			return json_decref(a), NULL;
		if (lit_take(l, ']'))
			return a;
		do {
			json_t *v = lit_value(l, depth + 1);
			if (!v || json_array_append_new(a, v))
				return json_decref(a), NULL;
		} while (lit_take(l, ','));
		if (!lit_take(l, ']'))
			return json_decref(a), NULL;
		return a;
	}
	char *end;
	double d = strtod(l->p, &end);
	if (end == l->p)
		return NULL;
	l->p = end;
	return json_real(d);
}

/* The literal's cells after its '{' as the JSON of Vespa's feed forms:
 * {"cells": [...]} for the verbose form ({{x:a,y:b}:1, ...}), the object
 * itself for the short forms ({a:1, b:2}, {a:[1,2], ...}). */
static json_t *lit_cells(struct lit *l)
{
	char label[ENG_LABEL_MAX + 1], dim[ENG_LABEL_MAX + 1];
	json_t *obj = json_object(), *cells = NULL;
	if (!obj)
		return NULL;
	lit_ws(l);
	int verbose = *l->p == '{';
	if (verbose && (!(cells = json_array()) || json_object_set_new(obj, "cells", cells)))
		return json_decref(obj), NULL;
	if (lit_take(l, '}'))
		return obj;
	do {
		if (verbose) {
			json_t *addr = json_object(), *cell = json_object();
			if (!addr || !cell || json_object_set_new(cell, "address", addr) ||
			    json_array_append_new(cells, cell)) {
				json_decref(addr);
				return json_decref(obj), NULL;
			}
			if (!lit_take(l, '{'))
				return json_decref(obj), NULL;
			if (!lit_take(l, '}')) {
				do {
					if (lit_label(l, dim, sizeof dim) || !lit_take(l, ':') ||
					    lit_label(l, label, sizeof label) ||
					    json_object_set_new(addr, dim, json_string(label)))
						return json_decref(obj), NULL;
				} while (lit_take(l, ','));
				if (!lit_take(l, '}'))
					return json_decref(obj), NULL;
			}
			json_t *v;
			if (!lit_take(l, ':') || !(v = lit_value(l, 0)) ||
			    json_object_set_new(cell, "value", v))
				return json_decref(obj), NULL;
		} else {
			json_t *v;
			if (lit_label(l, label, sizeof label) || !lit_take(l, ':') ||
			    !(v = lit_value(l, 0)) || json_object_set_new(obj, label, v))
				return json_decref(obj), NULL;
		}
	} while (lit_take(l, ','));
	if (!lit_take(l, '}'))
		return json_decref(obj), NULL;
	return obj;
}

int eng_sparse_from_literal(const char *text, const struct eng_ttype *t, struct eng_sparse *s,
                            const char *what, struct strata_error *err)
{
	memset(s, 0, sizeof *s);
	struct lit l = { text, 0 };
	lit_ws(&l);
	if (strncmp(l.p, "tensor", 6) == 0) {
		/* a leading type: up to the ':' after its closing parenthesis */
		const char *close = strchr(l.p, ')');
		if (close) {
			l.p = close + 1;
			if (!lit_take(&l, ':'))
				close = NULL;
		}
		if (!close)
			return base_err(err, STRATA_INVALID_ARGUMENT, "%s: malformed tensor literal "
			                "'%.40s'", what, text);
	}
	unsigned long before = eng_json_failures();
	json_t *j = lit_take(&l, '{') ? lit_cells(&l) : NULL;
	if (j)
		lit_ws(&l);
	if (!j || *l.p) {
		json_decref(j);
		if (eng_json_failures() != before)
			return base_nomem(err, "%s", what);
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "%s: malformed tensor literal near '%.20s'", what, l.p);
	}
	int rc = eng_sparse_from_json(j, t, s, what, err);
	json_decref(j);
	return rc;
}

/* ---- document fields -------------------------------------------------------------- */

int eng_field_mapped(const struct rank_field *rf)
{
	if (rf->type != RANK_FT_TENSOR)
		return 0;
	for (int k = 0; k < rf->rank; k++)
		if (rf->dims[k] < 0)
			return 1;
	return 0;
}

/* The short or general JSON of s, of type t (see eng_sparse_field_text). */
static json_t *sparse_json(const struct eng_ttype *t, const struct eng_sparse *s)
{
	char tb[512];
	json_t *o = json_object(), *body = NULL;
	if (!o || json_object_set_new(o, "type", json_string(eng_ttype_str(t, tb, sizeof tb))))
		goto fail;
	int indexed = t->rank - s->nmapped;
	size_t nm = (size_t)s->nmapped;
	if (s->nmapped == 1) {
		if (!(body = json_object()))
			goto fail;
		for (size_t b = 0; b < s->nblocks; b++) {
			json_t *v;
			if (indexed == 0) {
				v = eng_json_number(t->cell, s->cells[b]);
			} else {
				v = json_array();
				for (size_t i = 0; v && i < s->sub; i++)
					if (json_array_append_new(v, eng_json_number(t->cell, s->cells[b * s->sub + i])))
						json_decref(v), v = NULL;
			}
			if (!v || json_object_set_new(body, s->labels[b], v))
				goto fail;
		}
	} else {
		if (!(body = json_array()))
			goto fail;
		for (size_t b = 0; b < s->nblocks; b++)
			for (size_t i = 0; i < s->sub; i++) {
				json_t *addr = json_object(), *cell = json_object();
				if (!addr || !cell) {
					json_decref(addr);
					json_decref(cell);
					goto fail;
				}
				size_t rest = i, m = 0;
				int ok = 1;
				for (int k = t->rank - 1; k >= 0; k--) {
					if (t->dims[k] >= 0) {
						char ib[24];
						snprintf(ib, sizeof ib, "%zu", rest % (size_t)t->dims[k]);
						rest /= (size_t)t->dims[k];
						ok = !json_object_set_new(addr, t->dim_names[k], json_string(ib)) && ok;
					}
				}
				for (int k = 0; k < t->rank; k++)
					if (t->dims[k] < 0)
						ok = !json_object_set_new(addr, t->dim_names[k],
						                          json_string(s->labels[b * nm + m++])) && ok;
				/* jansson takes the references even when it fails */
				ok = !json_object_set_new(cell, "address", addr) && ok;
				ok = !json_object_set_new(cell, "value",
				                          eng_json_number(t->cell, s->cells[b * s->sub + i])) && ok;
				if (json_array_append_new(body, cell) || !ok)
					goto fail;
			}
	}
	if (json_object_set_new(o, indexed && s->nmapped == 1 ? "blocks" : "cells", body)) {
		json_decref(o);
		return NULL;
	}
	return o;
fail:
	json_decref(body);
	json_decref(o);
	return NULL;
}

int eng_sparse_field_text(const struct rank_field *rf, const json_t *j, struct base_arena *a,
                          struct store_value *v, const char *what, struct strata_error *err)
{
	struct eng_ttype t = { rf->cell, rf->rank, rf->dims, (const char *const *)rf->dim_names };
	struct eng_sparse s;
	int rc = eng_sparse_from_json(j, &t, &s, what, err);
	if (rc)
		return rc;
	json_t *o = sparse_json(&t, &s);
	eng_sparse_free(&s);
	if (!o)
		return base_nomem(err, "%s", what);
	rc = eng_json_to_text(o, a, v, what, err);
	json_decref(o);
	return rc;
}

const struct rank_sparse *eng_sparse_from_text(const struct rank_field *rf, const char *s,
                                               size_t n, struct base_arena *a)
{
	json_error_t je;
	int oom;
	json_t *j = eng_json_parse(s, n, 0, &je, &oom);
	if (!j)
		return NULL;
	struct eng_ttype t = { rf->cell, rf->rank, rf->dims, (const char *const *)rf->dim_names };
	struct eng_sparse sp;
	int rc = eng_sparse_from_json(j, &t, &sp, "stored value", NULL);
	json_decref(j);
	if (rc)
		return NULL;
	size_t nl = sp.nblocks * (size_t)sp.nmapped, nc = sp.nblocks * sp.sub;
	struct rank_sparse *r = base_arena_alloc(a, sizeof *r, 8);
	const char **lab = base_arena_alloc(a, (nl ? nl : 1) * sizeof *lab, 8);
	double *c = base_arena_alloc(a, (nc ? nc : 1) * sizeof *c, 8);
	for (size_t i = 0; lab && i < nl; i++)
		if (!(lab[i] = base_arena_strdup(a, sp.labels[i])))
			lab = NULL;
	if (r && lab && c) {
		for (size_t i = 0; i < nc; i++)
			c[i] = sp.cells[i];
		r->nblocks = sp.nblocks;
		r->labels = lab;
		r->cells = c;
	}
	eng_sparse_free(&sp);
	return r && lab && c ? r : NULL;
}

int eng_multivec_decode(const void *field, const char *s, size_t n, struct base_arena *a,
                        const double **cells, size_t *nvec)
{
	const struct rank_field *rf = field;
	json_error_t je;
	int oom;
	*cells = NULL;
	*nvec = 0;
	json_t *j = eng_json_parse(s, n, 0, &je, &oom);
	if (!j)
		return oom ? STRATA_NOMEM : STRATA_CORRUPT;
	struct eng_ttype t = { rf->cell, rf->rank, rf->dims, (const char *const *)rf->dim_names };
	struct eng_sparse sp;
	int rc = eng_sparse_from_json(j, &t, &sp, "stored value", NULL);
	json_decref(j);
	if (rc)
		return rc == STRATA_NOMEM ? rc : STRATA_CORRUPT;
	size_t nc = sp.nblocks * sp.sub;
	double *c = base_arena_alloc(a, (nc ? nc : 1) * sizeof *c, 8);
	if (c) {
		for (size_t i = 0; i < nc; i++)
			c[i] = sp.cells[i];
		*cells = c;
		*nvec = sp.nblocks;
	}
	eng_sparse_free(&sp);
	return c ? 0 : STRATA_NOMEM;
}
