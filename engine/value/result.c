/*
 * result.c: the engine's JSON output.
 *
 * Query results, documents and features are built as jansson trees (the
 * shapes of Vespa's result and document JSON) and serialized here rather than
 * with json_dumps(), for one reason: jansson prints reals with 17 digits, so
 * a relevance of 0.1 would come out as 0.10000000000000001.  This printer
 * writes each real in the shortest form that reads back as the same double
 * (and keeps a ".0" on integral reals, as Vespa does), and keeps the order in
 * which object members were added.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../engine_int.h"

#define DUMP_MAX ((size_t)1 << 31) /* a hard limit on one JSON text */

struct buf {
	char *p;
	size_t len, cap;
	int failed;
};

static void put(struct buf *b, const char *s, size_t n)
{
	if (b->failed)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap;
		if (base_grow((void **)&b->p, &cap, b->len + n + 1, 1, DUMP_MAX) != 0) {
			b->failed = 1;
			return;
		}
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = 0;
}

static void puts_(struct buf *b, const char *s)
{
	put(b, s, strlen(s));
}

static void put_string(struct buf *b, const char *s, size_t n)
{
	put(b, "\"", 1);
	size_t start = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		const char *esc = NULL;
		char tmp[8];
		switch (c) {
		case '"': esc = "\\\""; break;
		case '\\': esc = "\\\\"; break;
		case '\n': esc = "\\n"; break;
		case '\r': esc = "\\r"; break;
		case '\t': esc = "\\t"; break;
		case '\b': esc = "\\b"; break;
		case '\f': esc = "\\f"; break;
		default:
			if (c < 0x20) {
				snprintf(tmp, sizeof tmp, "\\u%04x", c);
				esc = tmp;
			}
		}
		if (esc) {
			put(b, s + start, i - start);
			puts_(b, esc);
			start = i + 1;
		}
	}
	put(b, s + start, n - start);
	put(b, "\"", 1);
}

void eng_real_str(double v, char *buf, size_t n)
{
	if (!isfinite(v)) {
		snprintf(buf, n, "null");
		return;
	}
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(buf, n, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	if (!strpbrk(buf, ".eE") && strlen(buf) + 3 <= n)
		strcat(buf, ".0");
}

static void put_real(struct buf *b, double v)
{
	char tmp[40];
	eng_real_str(v, tmp, sizeof tmp);
	puts_(b, tmp);
}

static void indent(struct buf *b, int pretty, int depth)
{
	if (!pretty)
		return;
	put(b, "\n", 1);
	for (int i = 0; i < depth; i++)
		put(b, "  ", 2);
}

static void dump(struct buf *b, const json_t *j, int pretty, int depth)
{
	char tmp[32];
	switch (json_typeof(j)) {
	case JSON_OBJECT: {
		if (json_object_size(j) == 0) {
			puts_(b, "{}");
			return;
		}
		put(b, "{", 1);
		const char *k;
		json_t *v;
		int first = 1;
		json_object_foreach((json_t *)j, k, v) {
			if (!first)
				put(b, ",", 1);
			first = 0;
			indent(b, pretty, depth + 1);
			put_string(b, k, strlen(k));
			puts_(b, pretty ? ": " : ":");
			dump(b, v, pretty, depth + 1);
		}
		indent(b, pretty, depth);
		put(b, "}", 1);
		return;
	}
	case JSON_ARRAY: {
		size_t n = json_array_size(j);
		if (n == 0) {
			puts_(b, "[]");
			return;
		}
		/* Arrays of numbers stay on one line: tensors would be unreadable
		 * one cell per line. */
		int flat = 1;
		for (size_t i = 0; i < n && flat; i++)
			flat = json_is_number(json_array_get(j, i));
		put(b, "[", 1);
		for (size_t i = 0; i < n; i++) {
			if (i)
				puts_(b, flat && pretty ? ", " : ",");
			if (!flat)
				indent(b, pretty, depth + 1);
			dump(b, json_array_get(j, i), pretty, depth + 1);
		}
		if (!flat)
			indent(b, pretty, depth);
		put(b, "]", 1);
		return;
	}
	case JSON_STRING:
		put_string(b, json_string_value(j), json_string_length(j));
		return;
	case JSON_INTEGER:
		snprintf(tmp, sizeof tmp, "%lld", (long long)json_integer_value(j));
		puts_(b, tmp);
		return;
	case JSON_REAL:
		put_real(b, json_real_value(j));
		return;
	case JSON_TRUE:
		puts_(b, "true");
		return;
	case JSON_FALSE:
		puts_(b, "false");
		return;
	case JSON_NULL:
		puts_(b, "null");
		return;
	}
}

char *eng_json_dump(const json_t *j, int pretty)
{
	struct buf b = { 0 };
	dump(&b, j, pretty, 0);
	if (b.failed || !b.p) {
		if (b.p)
			base_free(b.p, b.cap);
		return NULL;
	}
	/* Hand back a block whose size base_strfree() can recompute. */
	char *s = base_strndup(b.p, b.len);
	base_free(b.p, b.cap);
	return s;
}

json_t *eng_value_json(const struct store_field *f, const char *const *dim_names,
                       const struct store_value *v)
{
	switch (f->type) {
	case STORE_T_STRING:
		return json_stringn(v->s ? v->s : "", v->s ? v->n : 0);
	case STORE_T_INT:
	case STORE_T_LONG:
		return json_integer((json_int_t)v->i);
	case STORE_T_FLOAT:
		return eng_json_number(BASE_DT_FLOAT, v->d);
	case STORE_T_DOUBLE:
		return eng_json_number(BASE_DT_DOUBLE, v->d);
	case STORE_T_BOOL:
		return json_boolean(v->i != 0);
	case STORE_T_JSON: {
		json_error_t je;
		int oom;
		return eng_json_parse(v->s, v->n, JSON_DECODE_ANY, &je, &oom);
	}
	case STORE_T_TENSOR: {
		struct eng_ttype t = { f->cell, f->rank, f->dims, dim_names };
		if (!v->cells || v->n != eng_ttype_cells(&t))
			return NULL;
		return eng_tensor_to_json(&t, v->cells);
	}
	}
	return NULL;
}

/* A feature with mapped dimensions in Vespa's short forms: one mapped
 * dimension alone as {"type", "cells": {label: value}}, else each cell
 * as {"address": {dim: label}, "value"}. */
static json_t *sparse_feature_json(const struct rank_feature *f)
{
	char type[512];
	size_t k = (size_t)snprintf(type, sizeof type, "tensor(");
	int nm = 0;
	for (int i = 0; i < f->rank && k < sizeof type; i++) {
		nm += f->dims[i] < 0;
		k += (size_t)(f->dims[i] < 0 ? snprintf(type + k, sizeof type - k, "%s%s{}", i ? "," : "",
		                                        f->dim_names[i])
		                             : snprintf(type + k, sizeof type - k, "%s%s[%lld]",
		                                        i ? "," : "", f->dim_names[i],
		                                        (long long)f->dims[i]));
	}
	if (k < sizeof type)
		snprintf(type + k, sizeof type - k, ")");
	const struct rank_sparse *s = f->sparse;
	int short_form = nm == 1 && f->rank == 1;
	json_t *o = json_object(), *cells = short_form ? json_object() : json_array();
	int bad = !o || !cells || json_object_set_new(o, "type", json_string(type)) ||
	          json_object_set(o, "cells", cells);
	for (size_t b = 0; s && !bad && b < s->nblocks; b++) {
		for (size_t c = 0; !bad && c < f->ncells; c++) {
			double v = s->cells[b * f->ncells + c];
			if (short_form) {
				bad = json_object_set_new(cells, s->labels[b], eng_json_number(BASE_DT_DOUBLE, v));
				continue;
			}
			json_t *cell = json_object(), *addr = json_object();
			bad = !cell || !addr || json_object_set_new(cell, "address", addr) ||
			      json_object_set_new(cell, "value", eng_json_number(BASE_DT_DOUBLE, v)) ||
			      json_array_append_new(cells, cell);
			if (bad && !cell)
				json_decref(addr);
			/* indexed labels count c through the dense subspace, last fastest */
			size_t rest = c;
			int m = nm;
			for (int i = f->rank - 1; !bad && i >= 0; i--) {
				char num[32];
				const char *label = num;
				if (f->dims[i] < 0) {
					label = s->labels[b * (size_t)nm + (size_t)--m];
				} else {
					snprintf(num, sizeof num, "%zu", rest % (size_t)f->dims[i]);
					rest /= (size_t)f->dims[i];
				}
				bad = json_object_set_new(addr, f->dim_names[i], json_string(label));
			}
		}
	}
	json_decref(cells);
	if (bad) {
		json_decref(o);
		return NULL;
	}
	return o;
}

json_t *eng_feature_json(const struct rank_feature *f)
{
	if (f->sparse)
		return sparse_feature_json(f);
	if (f->rank == 0)
		return eng_json_number(BASE_DT_DOUBLE, f->ncells ? f->cells[0] : 0.0);
	struct eng_ttype t = { BASE_DT_DOUBLE, f->rank, f->dims, f->dim_names };
	return eng_tensor_to_json(&t, f->cells);
}
