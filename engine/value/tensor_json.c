/*
 * tensor_json.c: dense tensors between JSON and cells.
 *
 * Used by the feed (document fields), by queries (input.query(name) values)
 * and by summaries and match features (cells back to JSON).  Input forms, as
 * Vespa's document JSON has them for indexed tensors:
 *   - nested arrays, one level per dimension ([[1,2],[3,4]]); a flat array of
 *     all cells is accepted too;
 *   - {"values": [...]} (flat, row-major, or nested);
 *   - {"cells": [{"address": {"x": "0"}, "value": 1.5}, ...]}: unset cells are 0;
 *   - "0a04ff..." or {"values": "0a04ff..."}: the cells in hex (numbers.c);
 *   - a number for a rank 0 tensor; a cell may be a string of a number
 *     ("1.5", "inf", "nan");
 *   - for query inputs, a string holding a tensor literal: "[1,2,3]",
 *     "{{x:0}:1.0,{x:1}:2.0}", optionally after a type ("tensor(x[2]):[1,2]").
 * Output is Vespa's short form: {"type": "tensor<float>(x[3])", "values":
 * [...]} with nested arrays for more than one dimension.
 *
 * Invariant: eng_tensor_from_json() writes every cell or returns an error;
 * every error names the value (field or input) and what is wrong.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../engine_int.h"

size_t eng_ttype_cells(const struct eng_ttype *t)
{
	size_t n = 1;
	for (int i = 0; i < t->rank; i++)
		if (t->dims[i] >= 0)
			n *= (size_t)t->dims[i];
	return n;
}

static const char *dim_name(const struct eng_ttype *t, int i, char *buf, size_t n)
{
	if (t->dim_names && t->dim_names[i] && t->dim_names[i][0])
		return t->dim_names[i];
	snprintf(buf, n, "d%d", i);
	return buf;
}

const char *eng_ttype_str(const struct eng_ttype *t, char *buf, size_t n)
{
	size_t off = 0;
	if (t->cell == BASE_DT_DOUBLE)
		off += (size_t)snprintf(buf, n, "tensor(");
	else
		off += (size_t)snprintf(buf, n, "tensor<%s>(", base_dtype_name(t->cell));
	for (int i = 0; i < t->rank && off < n; i++) {
		char tmp[16];
		if (t->dims[i] < 0)
			off += (size_t)snprintf(buf + off, n - off, "%s%s{}", i ? "," : "",
			                        dim_name(t, i, tmp, sizeof tmp));
		else
			off += (size_t)snprintf(buf + off, n - off, "%s%s[%lld]", i ? "," : "",
			                        dim_name(t, i, tmp, sizeof tmp), (long long)t->dims[i]);
	}
	if (off < n)
		snprintf(buf + off, n - off, ")");
	return buf;
}

static int is_int_cell(int cell)
{
	return cell == BASE_DT_INT8 || cell == BASE_DT_INT32 || cell == BASE_DT_INT64 ||
	       cell == BASE_DT_INT16 || cell == BASE_DT_UINT8;
}

static int put_value(double d, const struct eng_ttype *t, void *cells, size_t i,
                     const char *what, struct strata_error *err);

/* Store one JSON number (or a string of one) as cell i, checking integer
 * cells for range. */
static int put_cell(const json_t *v, const struct eng_ttype *t, void *cells, size_t i,
                    const char *what, struct strata_error *err)
{
	char tb[256], shown[64];
	double d;
	if (t->cell == BASE_DT_INT64 && json_is_integer(v)) {
		((int64_t *)cells)[i] = (int64_t)json_integer_value(v);
		return 0;
	}
	if (eng_num_real(v, 1, &d)) /* a number, or a string of one as Vespa reads it */
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "%s: cell %zu is not a number: %s (%s)", what, i,
		                eng_num_show(v, shown, sizeof shown), eng_ttype_str(t, tb, sizeof tb));
	return put_value(d, t, cells, i, what, err);
}

/* Store d as cell i, checking it fits the cell type. */
static int put_value(double d, const struct eng_ttype *t, void *cells, size_t i,
                     const char *what, struct strata_error *err)
{
	char tb[256];
	if (is_int_cell(t->cell)) {
		double lo, hi;
		switch (t->cell) {
		case BASE_DT_INT8: lo = -128; hi = 127; break;
		case BASE_DT_UINT8: lo = 0; hi = 255; break;
		case BASE_DT_INT16: lo = -32768; hi = 32767; break;
		case BASE_DT_INT32: lo = -2147483648.0; hi = 2147483647.0; break;
		default: lo = -9223372036854775808.0; hi = 9223372036854775807.0; break;
		}
		if (d != floor(d))
			return base_err(err, STRATA_INVALID_ARGUMENT,
			                "%s: cell %zu is %g, not an integer (%s)", what, i, d,
			                eng_ttype_str(t, tb, sizeof tb));
		if (d < lo || d > hi)
			return base_err(err, STRATA_INVALID_ARGUMENT,
			                "%s: cell %zu is %g, out of range for %s (%s)", what, i, d,
			                base_dtype_name(t->cell), eng_ttype_str(t, tb, sizeof tb));
	}
	if (t->cell == BASE_DT_FLOAT && isfinite(d) && fabs(d) > 3.4028234663852886e38)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "%s: cell %zu is %g, out of range for float", what, i, d);
	base_store_double(t->cell, cells, i, d);
	return 0;
}

/* Nested arrays: level depth of the value at flat offset base. */
static int put_nested(const json_t *a, const struct eng_ttype *t, int depth, size_t base,
                      void *cells, const char *what, struct strata_error *err)
{
	char tb[256], nb[16];
	if (!json_is_array(a))
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "%s: expected an array for dimension '%s' (%s)", what,
		                dim_name(t, depth, nb, sizeof nb), eng_ttype_str(t, tb, sizeof tb));
	size_t n = json_array_size(a);
	if ((int64_t)n != t->dims[depth]) {
		if (t->rank == 1)
			return base_err(err, STRATA_INVALID_ARGUMENT, "%s: %zu values, expected %lld (%s)",
			                what, n, (long long)t->dims[0], eng_ttype_str(t, tb, sizeof tb));
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "%s: dimension '%s' has %zu values, expected %lld (%s)", what,
		                dim_name(t, depth, nb, sizeof nb), n, (long long)t->dims[depth],
		                eng_ttype_str(t, tb, sizeof tb));
	}
	size_t stride = 1;
	for (int k = depth + 1; k < t->rank; k++)
		stride *= (size_t)t->dims[k];
	for (size_t i = 0; i < n; i++) {
		const json_t *e = json_array_get(a, i);
		int rc = depth + 1 == t->rank ? put_cell(e, t, cells, base + i, what, err)
		                              : put_nested(e, t, depth + 1, base + i * stride, cells,
		                                           what, err);
		if (rc)
			return rc;
	}
	return 0;
}

static int put_array(const json_t *a, const struct eng_ttype *t, void *cells, const char *what,
                     struct strata_error *err)
{
	size_t total = eng_ttype_cells(t);
	if (t->rank == 0) {
		if (json_array_size(a) == 1)
			return put_cell(json_array_get(a, 0), t, cells, 0, what, err);
		char tb[64];
		return base_err(err, STRATA_INVALID_ARGUMENT, "%s: expected a number (%s)", what,
		                eng_ttype_str(t, tb, sizeof tb));
	}
	/* A flat list of every cell is accepted for any rank. */
	if (t->rank > 1 && json_array_size(a) == total && json_array_size(a) > 0 &&
	    (json_is_number(json_array_get(a, 0)) || json_is_string(json_array_get(a, 0)))) {
		for (size_t i = 0; i < total; i++) {
			int rc = put_cell(json_array_get(a, i), t, cells, i, what, err);
			if (rc)
				return rc;
		}
		return 0;
	}
	return put_nested(a, t, 0, 0, cells, what, err);
}

static int parse_index(const json_t *v, long long *out)
{
	if (json_is_integer(v)) {
		*out = json_integer_value(v);
		return 0;
	}
	if (json_is_string(v)) {
		const char *s = json_string_value(v);
		char *end;
		if (!*s || !isdigit((unsigned char)*s))
			return -1;
		*out = strtoll(s, &end, 10);
		return *end ? -1 : 0;
	}
	return -1;
}

static int put_cells_form(const json_t *list, const struct eng_ttype *t, void *cells,
                          const char *what, struct strata_error *err)
{
	char tb[256], nb[16];
	if (!json_is_array(list))
		return base_err(err, STRATA_INVALID_ARGUMENT, "%s: \"cells\" must be an array", what);
	size_t idx;
	const json_t *c;
	json_array_foreach(list, idx, c) {
		const json_t *addr = json_object_get(c, "address");
		const json_t *val = json_object_get(c, "value");
		if (!json_is_object(addr) || !val)
			return base_err(err, STRATA_INVALID_ARGUMENT,
			                "%s: cell %zu needs \"address\" (an object) and \"value\"", what,
			                idx);
		if ((int)json_object_size(addr) != t->rank)
			return base_err(err, STRATA_INVALID_ARGUMENT,
			                "%s: cell %zu: address has %zu dimensions, expected %d (%s)", what,
			                idx, json_object_size(addr), t->rank,
			                eng_ttype_str(t, tb, sizeof tb));
		size_t flat = 0;
		for (int d = 0; d < t->rank; d++) {
			const char *dn = dim_name(t, d, nb, sizeof nb);
			const json_t *iv = json_object_get(addr, dn);
			long long k = 0;
			if (!iv)
				return base_err(err, STRATA_INVALID_ARGUMENT,
				                "%s: cell %zu: address lacks dimension '%s' (%s)", what, idx,
				                dn, eng_ttype_str(t, tb, sizeof tb));
			if (parse_index(iv, &k) != 0 || k < 0 || k >= t->dims[d])
				return base_err(err, STRATA_INVALID_ARGUMENT,
				                "%s: cell %zu: bad index for dimension '%s' (%s)", what, idx,
				                dn, eng_ttype_str(t, tb, sizeof tb));
			flat = flat * (size_t)t->dims[d] + (size_t)k;
		}
		int rc = put_cell(val, t, cells, flat, what, err);
		if (rc)
			return rc;
	}
	return 0;
}

/* ---- tensor literals in strings -------------------------------------------------- */

static const char *skip_ws(const char *p)
{
	while (isspace((unsigned char)*p))
		p++;
	return p;
}

/* "{{x:0,y:1}:1.5, {x:1,y:0}:2}" */
static int put_literal_cells(const char *p, const struct eng_ttype *t, void *cells,
                             const char *what, struct strata_error *err)
{
	char tb[256], nb[16];
	p = skip_ws(p + 1);
	if (*p == '}')
		return 0;
	for (;;) {
		if (*p != '{')
			goto bad;
		p = skip_ws(p + 1);
		long long idx[RANK_MAX_RANK];
		int seen[RANK_MAX_RANK] = { 0 };
		int nseen = 0;
		while (*p != '}') {
			const char *ns = p;
			while (isalnum((unsigned char)*p) || *p == '_')
				p++;
			size_t nl = (size_t)(p - ns);
			p = skip_ws(p);
			if (!nl || *p != ':')
				goto bad;
			p = skip_ws(p + 1);
			int quoted = *p == '"' || *p == '\'';
			if (quoted)
				p++;
			char *end;
			long long k = strtoll(p, &end, 10);
			if (end == p)
				goto bad;
			p = end;
			if (quoted) {
				if (*p != '"' && *p != '\'')
					goto bad;
				p++;
			}
			int d;
			for (d = 0; d < t->rank; d++) {
				const char *dn = dim_name(t, d, nb, sizeof nb);
				if (strlen(dn) == nl && memcmp(dn, ns, nl) == 0)
					break;
			}
			if (d == t->rank)
				return base_err(err, STRATA_INVALID_ARGUMENT,
				                "%s: unknown dimension '%.*s' in tensor literal (%s)", what,
				                (int)nl, ns, eng_ttype_str(t, tb, sizeof tb));
			if (k < 0 || k >= t->dims[d])
				return base_err(err, STRATA_INVALID_ARGUMENT,
				                "%s: index %lld out of range for dimension '%.*s' (%s)", what,
				                k, (int)nl, ns, eng_ttype_str(t, tb, sizeof tb));
			if (!seen[d])
				nseen++;
			seen[d] = 1;
			idx[d] = k;
			p = skip_ws(p);
			if (*p == ',')
				p = skip_ws(p + 1);
			else if (*p != '}')
				goto bad;
		}
		if (nseen != t->rank)
			return base_err(err, STRATA_INVALID_ARGUMENT,
			                "%s: a cell address in the tensor literal lacks a dimension (%s)",
			                what, eng_ttype_str(t, tb, sizeof tb));
		p = skip_ws(p + 1);
		if (*p != ':')
			goto bad;
		p = skip_ws(p + 1);
		char *end;
		double v = strtod(p, &end);
		if (end == p)
			goto bad;
		p = skip_ws(end);
		size_t flat = 0;
		for (int d = 0; d < t->rank; d++)
			flat = flat * (size_t)t->dims[d] + (size_t)idx[d];
		json_t *num = json_real(v);
		if (!num)
			return base_nomem(err, "%s", what);
		int rc = put_cell(num, t, cells, flat, what, err);
		json_decref(num);
		if (rc)
			return rc;
		if (*p == ',') {
			p = skip_ws(p + 1);
			continue;
		}
		if (*p == '}' && !*skip_ws(p + 1))
			return 0;
		goto bad;
	}
bad:
	return base_err(err, STRATA_INVALID_ARGUMENT, "%s: malformed tensor literal near '%.20s'",
	                what, p);
}

static int put_literal(const char *s, const struct eng_ttype *t, void *cells, const char *what,
                       struct strata_error *err)
{
	const char *p = skip_ws(s);
	if (strncmp(p, "tensor", 6) == 0) {
		/* A leading type: skip to the ':' after its closing parenthesis. */
		const char *close = strchr(p, ')');
		if (!close || *skip_ws(close + 1) != ':')
			return base_err(err, STRATA_INVALID_ARGUMENT,
			                "%s: malformed tensor literal '%.40s'", what, s);
		p = skip_ws(skip_ws(close + 1) + 1);
	}
	if (*p == '{')
		return put_literal_cells(p, t, cells, what, err);
	json_error_t je;
	int oom;
	json_t *j = eng_json_parse(p, strlen(p), JSON_DECODE_ANY, &je, &oom);
	if (oom)
		return base_nomem(err, "%s", what);
	if (!j)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "%s: malformed tensor literal '%.40s': %s", what, s, je.text);
	int rc = json_is_string(j) ? base_err(err, STRATA_INVALID_ARGUMENT,
	                                      "%s: malformed tensor literal '%.40s'", what, s)
	                           : eng_tensor_from_json(j, t, 0, cells, what, err);
	json_decref(j);
	return rc;
}

/* Cells given as one hex string (numbers.c has the encodings). */
static int put_hex(const json_t *j, const struct eng_ttype *t, void *cells, const char *what,
                   struct strata_error *err)
{
	size_t n = eng_ttype_cells(t);
	if (t->rank == 0)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "%s: hex cells need a tensor with indexed dimensions", what);
	double *v = base_alloc(n * sizeof *v);
	if (!v)
		return base_nomem(err, "%s: %zu cells", what, n);
	int rc = eng_hex_cells(json_string_value(j), json_string_length(j), t->cell, n, v, what,
	                       err);
	for (size_t i = 0; !rc && i < n; i++)
		rc = put_value(v[i], t, cells, i, what, err);
	base_free(v, n * sizeof *v);
	return rc;
}

int eng_tensor_from_json(const json_t *j, const struct eng_ttype *t, int literal, void *cells,
                         const char *what, struct strata_error *err)
{
	char tb[256];
	size_t total = eng_ttype_cells(t);
	memset(cells, 0, total * base_dtype_size(t->cell));
	/* A string is the cells in hex (Vespa's form for indexed tensors); for a
	 * query input, a string that is not hex is a tensor literal. */
	if (json_is_string(j) && t->rank > 0 && (!literal || eng_hex_string(j)))
		return put_hex(j, t, cells, what, err);
	if (json_is_string(j) && t->rank == 0 && !literal)
		return put_cell(j, t, cells, 0, what, err);
	if (json_is_number(j)) {
		if (t->rank == 0)
			return put_cell(j, t, cells, 0, what, err);
		return base_err(err, STRATA_INVALID_ARGUMENT, "%s: expected %zu values, got a number (%s)",
		                what, total, eng_ttype_str(t, tb, sizeof tb));
	}
	if (json_is_array(j))
		return put_array(j, t, cells, what, err);
	if (json_is_object(j)) {
		const json_t *v = json_object_get(j, "values");
		const json_t *c = json_object_get(j, "cells");
		if (v && c)
			return base_err(err, STRATA_INVALID_ARGUMENT,
			                "%s: give \"values\" or \"cells\", not both", what);
		if (v) {
			if (json_is_string(v))
				return put_hex(v, t, cells, what, err);
			if (!json_is_array(v))
				return base_err(err, STRATA_INVALID_ARGUMENT,
				                "%s: \"values\" must be an array or a hex string (%s)", what,
				                eng_ttype_str(t, tb, sizeof tb));
			return put_array(v, t, cells, what, err);
		}
		if (c)
			return put_cells_form(c, t, cells, what, err);
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "%s: a tensor object needs \"values\" or \"cells\" (%s)", what,
		                eng_ttype_str(t, tb, sizeof tb));
	}
	if (json_is_string(j) && literal)
		return put_literal(json_string_value(j), t, cells, what, err);
	return base_err(err, STRATA_INVALID_ARGUMENT, "%s: expected a tensor (%s), got %s", what,
	                eng_ttype_str(t, tb, sizeof tb),
	                json_is_string(j) ? "a string" : json_is_boolean(j) ? "a boolean" : "null");
}

/* ---- cells -> JSON -------------------------------------------------------------- */

json_t *eng_json_number(int cell, double v)
{
	if (is_int_cell(cell))
		return json_integer((json_int_t)v);
	if (!isfinite(v))
		return json_null(); /* JSON has no infinities */
	if (cell == BASE_DT_FLOAT || cell == BASE_DT_BFLOAT16 || cell == BASE_DT_FLOAT16) {
		/* The shortest decimal that reads back as the same float, so that 0.1f
		 * prints as 0.1 rather than 0.10000000149011612. */
		float f = (float)v;
		char buf[32];
		for (int prec = 6; prec <= 9; prec++) {
			snprintf(buf, sizeof buf, "%.*g", prec, (double)f);
			if (strtof(buf, NULL) == f)
				break;
		}
		return json_real(strtod(buf, NULL));
	}
	return json_real(v);
}

static double load_cell(int cell, const void *cells, size_t i)
{
	return base_load_double(cell, cells, i);
}

static json_t *nested_json(const struct eng_ttype *t, const void *cells, int depth, size_t base)
{
	json_t *a = json_array();
	if (!a)
		return NULL;
	size_t stride = 1;
	for (int k = depth + 1; k < t->rank; k++)
		stride *= (size_t)t->dims[k];
	for (int64_t i = 0; i < t->dims[depth]; i++) {
		json_t *e;
		if (depth + 1 == t->rank) {
			if (t->cell == BASE_DT_INT64)
				e = json_integer(((const int64_t *)cells)[base + (size_t)i]);
			else
				e = eng_json_number(t->cell, load_cell(t->cell, cells, base + (size_t)i));
		} else {
			e = nested_json(t, cells, depth + 1, base + (size_t)i * stride);
		}
		if (!e || json_array_append_new(a, e) != 0) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

json_t *eng_tensor_to_json(const struct eng_ttype *t, const void *cells)
{
	if (t->rank == 0)
		return eng_json_number(t->cell, load_cell(t->cell, cells, 0));
	char tb[256];
	json_t *o = json_object();
	json_t *v = nested_json(t, cells, 0, 0);
	if (!o || !v) {
		json_decref(o);
		json_decref(v);
		return NULL;
	}
	/* "type" first, as Vespa writes it; the values are o's from the
	 * second set on, even when that fails. */
	if (json_object_set_new(o, "type", json_string(eng_ttype_str(t, tb, sizeof tb)))) {
		json_decref(v);
		json_decref(o);
		return NULL;
	}
	if (json_object_set_new(o, "values", v)) {
		json_decref(o);
		return NULL;
	}
	return o;
}
