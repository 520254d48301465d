/*
 * indexing.c: the fields' indexing scripts (rank.h, struct rank_ix), run
 * when a document is put or updated.  feed.c hands over the values an
 * operation gives; each field whose script computes a value runs it, on
 * the document's values as JSON (what get would show for each field); what
 * the scripts' sinks write goes back to feed.c, which makes it those
 * fields' values in the same operation.  On a put every script runs; on an update the scripts that
 * read a field the update sets, on the stored values of the others.
 *
 * Values are jansson values; a missing one (an absent field) is NULL, and
 * flows through most expressions as NULL: a sink writes nothing then.
 * Inputs are the document as given, never what a script wrote (as in
 * Vespa, where sinks write to the index, not to the document).  Tensors
 * are in the feed's JSON forms: {"values": [...]} for dense ones,
 * {"blocks": {label: [...]}} for one mapped dimension and indexed ones.
 *
 * embed calls eng_embed (embed.c): a string into the destination field's
 * type; an array of strings into blocks labelled by the elements' indexes
 * "0", "1", ..., each embedded into the indexed part of the type, or, when
 * the type has a second mapped dimension (embed colbert context into
 * (context{}, token{}, v[16])), into the type without the one named, its
 * blocks (or cells) addressed by the element's index and their own label; with
 * pack_bits after it, into float cells, eight per int8 cell to be, which
 * pack_bits packs (a cell above 0 is a 1 bit).  Its failure fails the
 * document, with the embedder's message.
 */
#include <string.h>

#include "engine_int.h"

struct run {
	struct strata *db;
	struct eng_doctype *dt;
	const struct rank_field *f;    /* the field whose script runs */
	const struct store_value *vals; /* the operation's values */
	const struct store_value *cur;  /* the stored ones (update), or NULL */
	json_t **ins;                  /* per field: its value as input, once read */
	unsigned char *read;           /* per field: ins[i] is known */
	json_t **outs;                 /* per field: what sinks wrote (new references) */
	json_t *vars;                  /* set_var's variables (an object), or NULL */
	struct strata_error *err;
};

static int field_index(const struct run *r, const char *name)
{
	return rank_schema_field_index(r->dt->schema, name);
}

/* The value of document field fi as input (borrowed; NULL when absent). */
static int input(struct run *r, int fi, json_t **out)
{
	if (!r->read[fi]) {
		const struct store_value *v = r->vals[fi].set ? &r->vals[fi]
		                            : r->cur && r->cur[fi].set ? &r->cur[fi] : NULL;
		if (v && !(r->ins[fi] = eng_value_json(&r->dt->fields[fi],
		                                       rank_schema_field(r->dt->schema, fi)->dim_names, v)))
			return base_nomem(r->err, "field '%s'", rank_schema_field(r->dt->schema, fi)->name);
		r->read[fi] = 1;
	}
	*out = r->ins[fi];
	return 0;
}

static int eval(struct run *r, const struct rank_ix *n, json_t *in, json_t **out);

/* ---- embed ---------------------------------------------------------------------------- */

/* An embedder's failure fails this document only. */
static int embed_failed(struct run *r, int rc)
{
	if (rc == STRATA_NOMEM || rc == STRATA_NOT_FOUND || rc == STRATA_NOT_IMPLEMENTED ||
	    rc == STRATA_INVALID_ARGUMENT)
		return rc;
	r->err->code = STRATA_INVALID_ARGUMENT;
	return STRATA_INVALID_ARGUMENT;
}

/* Element i's embedding t (of the type without the elements' dimension
 * dim) into list, as {"address": {dim: i, other: label}, "values" | "value":
 * ...} entries: t has the other mapped dimension, named other, as blocks
 * or cells. */
static int add_addressed(struct run *r, const char *dim, const char *other, const char *label,
                         const json_t *t, json_t *list)
{
	const json_t *blocks = json_object_get(t, "blocks"), *cells = json_object_get(t, "cells");
	const json_t *parts = blocks ? blocks : cells;
	if (!json_is_object(parts))
		return base_err(r->err, STRATA_INVALID_ARGUMENT,
		                "embed: the embedder gave no blocks or cells");
	const char *key;
	json_t *v;
	json_object_foreach((json_t *)parts, key, v) {
		json_t *e = json_pack("{s:{s:s,s:s},s:O}", "address", dim, label, other, key,
		                      blocks ? "values" : "value", v);
		if (!e || json_array_append_new(list, e))
			return base_nomem(r->err, "embed");
	}
	return 0;
}

static int embed(struct run *r, const struct rank_ix *n, json_t *in, json_t **out)
{
	int fi = field_index(r, n->dest);
	if (!in || fi < 0)
		return 0;
	struct rank_field d = *rank_schema_field(r->dt->schema, fi);
	if (n->pack) { /* float cells, 8 for each int8 of the last dimension */
		d.cell = BASE_DT_FLOAT;
		d.dims[d.rank - 1] *= 8;
	}
	if (json_is_string(in)) {
		int rc = eng_embed(r->db, n->str, json_string_value(in), json_string_length(in), 0, &d,
		                   out, r->err);
		return rc ? embed_failed(r, rc) : 0;
	}
	if (!json_is_array(in))
		return base_err(r->err, STRATA_INVALID_ARGUMENT, "embed takes a string or an array of "
		                "strings");
	/* Each element into the type without the elements' dimension (n->dim,
	 * else the only mapped one); the other mapped one, if any, is the
	 * embedder's (other). */
	struct rank_field elem = d;
	const char *dim = NULL, *other = NULL;
	elem.rank = 0;
	for (int k = 0; k < d.rank; k++) {
		int mapped = d.dims[k] < 0;
		if (mapped && !dim && (!n->dim || strcmp(d.dim_names[k], n->dim) == 0)) {
			dim = d.dim_names[k];
			continue;
		}
		if (mapped)
			other = d.dim_names[k];
		elem.dims[elem.rank] = d.dims[k];
		elem.dim_names[elem.rank++] = d.dim_names[k];
	}
	json_t *all = other ? json_array() : json_object(), *e;
	size_t i;
	int rc = all ? 0 : base_nomem(r->err, "embed");
	json_array_foreach(in, i, e) {
		json_t *t = NULL;
		char label[32];
		if (rc)
			break;
		if (!json_is_string(e)) {
			rc = base_err(r->err, STRATA_INVALID_ARGUMENT, "embed: element %zu is not a string", i);
			break;
		}
		rc = eng_embed(r->db, n->str, json_string_value(e), json_string_length(e), 0, &elem, &t,
		               r->err);
		if (rc) {
			rc = embed_failed(r, rc);
			break;
		}
		snprintf(label, sizeof label, "%zu", i);
		json_t *values = json_object_get(t, "values");
		if (other)
			rc = add_addressed(r, dim, other, label, t, all);
		else if (!values)
			rc = base_err(r->err, STRATA_INVALID_ARGUMENT, "embed: the embedder gave no values");
		else if (json_object_set(all, label, values))
			rc = base_nomem(r->err, "embed");
		json_decref(t);
	}
	/* {"blocks": {label: values}}, or with two mapped dimensions
	 * {"blocks": [{"address": ..., "values": ...}]} ({"cells": [...]} when
	 * there is no indexed one) */
	const char *form = other && elem.rank == 1 ? "cells" : "blocks";
	json_t *o = rc ? NULL : json_object();
	if (!rc && (!o || json_object_set(o, form, all)))
		rc = base_nomem(r->err, "embed");
	json_decref(all);
	if (rc) {
		json_decref(o);
		return rc;
	}
	*out = o;
	return 0;
}

/* ---- expressions ---------------------------------------------------------------------- */

static int cat(struct run *r, const struct rank_ix *n, json_t *in, json_t **out)
{
	json_t *parts[64];
	int np = n->nargs, rc = 0, none = 0, arrays = 0;
	if (np > 64)
		return base_err(r->err, STRATA_LIMIT, "'.' joins at most 64 values");
	for (int i = 0; i < np; i++)
		parts[i] = NULL;
	for (int i = 0; i < np && !rc; i++) {
		rc = eval(r, n->args[i], in, &parts[i]);
		none |= !rc && !parts[i];
		arrays += json_is_array(parts[i]);
		if (!rc && parts[i] && !json_is_string(parts[i]) && !json_is_array(parts[i]))
			rc = base_err(r->err, STRATA_INVALID_ARGUMENT, "'.' joins strings (or arrays)");
	}
	if (!rc && !none && arrays && arrays != np)
		rc = base_err(r->err, STRATA_INVALID_ARGUMENT, "'.' joins strings or arrays, not both");
	if (!rc && !none) {
		if (arrays) {
			*out = json_array();
			for (int i = 0; i < np && *out; i++)
				if (json_array_extend(*out, parts[i]))
					json_decref(*out), *out = NULL;
		} else {
			size_t len = 0;
			for (int i = 0; i < np; i++)
				len += json_string_length(parts[i]);
			char *s = base_alloc(len + 1);
			if (s) {
				size_t k = 0;
				for (int i = 0; i < np; i++) {
					memcpy(s + k, json_string_value(parts[i]), json_string_length(parts[i]));
					k += json_string_length(parts[i]);
				}
				*out = json_stringn_nocheck(s, len);
				base_free(s, len + 1);
			}
		}
		if (!*out)
			rc = base_nomem(r->err, "'.'");
	}
	for (int i = 0; i < np; i++)
		json_decref(parts[i]);
	return rc;
}

static int arith(struct run *r, const struct rank_ix *n, json_t *in, json_t **out)
{
	json_t *a = NULL, *b = NULL;
	int rc = eval(r, n->args[0], in, &a);
	if (!rc)
		rc = eval(r, n->args[1], in, &b);
	if (!rc && a && b) {
		if (!json_is_number(a) || !json_is_number(b)) {
			rc = base_err(r->err, STRATA_INVALID_ARGUMENT, "'%c' takes numbers", n->op);
		} else if (json_is_integer(a) && json_is_integer(b)) {
			json_int_t x = json_integer_value(a), y = json_integer_value(b), z = 0;
			if ((n->op == '/' || n->op == '%') && y == 0)
				rc = base_err(r->err, STRATA_INVALID_ARGUMENT, "'%c' by zero", n->op);
			else
				z = n->op == '+' ? x + y : n->op == '-' ? x - y : n->op == '*' ? x * y
				  : n->op == '/' ? x / y : x % y;
			if (!rc && !(*out = json_integer(z)))
				rc = base_nomem(r->err, "'%c'", n->op);
		} else {
			double x = json_number_value(a), y = json_number_value(b);
			double z = n->op == '+' ? x + y : n->op == '-' ? x - y : n->op == '*' ? x * y
			         : n->op == '/' ? x / y : x - y * (double)(long long)(x / y);
			if (!(*out = json_real(z)))
				rc = base_err(r->err, STRATA_INVALID_ARGUMENT, "'%c' gives no number", n->op);
		}
	}
	json_decref(a);
	json_decref(b);
	return rc;
}

/* if (a op b): both there and comparable. */
static int holds(const struct rank_ix *n, const json_t *a, const json_t *b)
{
	int c;
	if (!a || !b)
		return 0;
	if (json_is_number(a) && json_is_number(b)) {
		double x = json_number_value(a), y = json_number_value(b);
		c = x < y ? -1 : x > y;
	} else if (json_is_string(a) && json_is_string(b)) {
		c = strcmp(json_string_value(a), json_string_value(b));
	} else {
		c = json_equal((json_t *)a, (json_t *)b) ? 0 : 2;
		if (c && n->op != RANK_IX_NE)
			return 0;
	}
	switch (n->op) {
	case RANK_IX_EQ: return c == 0;
	case RANK_IX_NE: return c != 0;
	case RANK_IX_LT: return c < 0;
	case RANK_IX_LE: return c <= 0;
	case RANK_IX_GT: return c > 0;
	default: return c >= 0;
	}
}

static int pipe_run(struct run *r, const struct rank_ix *n, json_t *in, json_t **out)
{
	json_t *v = json_incref(in);
	int rc = 0;
	for (int i = 0; i < n->nargs && !rc; i++) {
		const struct rank_ix *s = n->args[i];
		json_t *nv = NULL;
		if (s->kind == RANK_IX_FUNC && s->op == RANK_IXF_PACK_BITS && i > 0 &&
		    n->args[i - 1]->kind == RANK_IX_EMBED)
			rc = v ? eng_ix_pack_bits(v, 1, &nv, r->err) : 0; /* the embedder's floats */
		else
			rc = eval(r, s, v, &nv);
		json_decref(v);
		v = nv;
	}
	if (rc)
		json_decref(v);
	else
		*out = v;
	return rc;
}

static int eval(struct run *r, const struct rank_ix *n, json_t *in, json_t **out)
{
	json_t *v = NULL, *w = NULL;
	int rc = 0;
	*out = NULL;
	switch (n->kind) {
	case RANK_IX_SCRIPT:
		for (int i = 0; i < n->nargs && !rc; i++) {
			json_decref(*out);
			*out = NULL;
			rc = eval(r, n->args[i], in, out);
		}
		return rc;
	case RANK_IX_PIPE:
		return pipe_run(r, n, in, out);
	case RANK_IX_GUARD: /* updates run only scripts whose inputs changed */
		return eval(r, n->args[0], in, out);
	case RANK_IX_INPUT: {
		int fi = field_index(r, n->str);
		if (fi >= 0 && (rc = input(r, fi, &v)) == 0)
			*out = json_incref(v);
		return rc;
	}
	case RANK_IX_STRING:
		*out = json_string_nocheck(n->str);
		return *out ? 0 : base_nomem(r->err, "a string");
	case RANK_IX_NUMBER:
		*out = n->integral ? json_integer((json_int_t)n->num) : json_real(n->num);
		return *out ? 0 : base_nomem(r->err, "a number");
	case RANK_IX_CURRENT:
		*out = json_incref(in);
		return 0;
	case RANK_IX_CAT:
		return cat(r, n, in, out);
	case RANK_IX_CHOICE:
		for (int i = 0; i < n->nargs && !rc && !*out; i++)
			rc = eval(r, n->args[i], in, out);
		return rc;
	case RANK_IX_ARITH:
		return arith(r, n, in, out);
	case RANK_IX_FOR_EACH: {
		json_t *e;
		size_t i;
		if (!in)
			return 0;
		if (!json_is_array(in))
			return base_err(r->err, STRATA_INVALID_ARGUMENT, "for_each takes an array");
		if (!(v = json_array()))
			return base_nomem(r->err, "for_each");
		json_array_foreach(in, i, e) {
			if ((rc = eval(r, n->args[0], e, &w)) != 0)
				break;
			if (w && json_array_append_new(v, w)) {
				rc = base_nomem(r->err, "for_each");
				break;
			}
			w = NULL;
		}
		if (rc)
			json_decref(v);
		else
			*out = v;
		return rc;
	}
	case RANK_IX_IF:
		if ((rc = eval(r, n->args[0], in, &v)) == 0 && (rc = eval(r, n->args[1], in, &w)) == 0) {
			const struct rank_ix *branch = holds(n, v, w) ? n->args[2] : n->args[3];
			if (branch)
				rc = eval(r, branch, in, out);
			else
				*out = json_incref(in);
		}
		json_decref(v);
		json_decref(w);
		return rc;
	case RANK_IX_FUNC:
		if (n->op == RANK_IXF_GET_VAR) {
			*out = json_incref(json_object_get(r->vars, n->str));
			return 0;
		}
		if (n->op == RANK_IXF_SET_VAR) {
			if (in && !r->vars && !(r->vars = json_object()))
				return base_nomem(r->err, "set_var");
			if (in && json_object_set(r->vars, n->str, in))
				return base_nomem(r->err, "set_var");
			*out = json_incref(in);
			return 0;
		}
		return eng_ix_func(n, in, out, r->err);
	case RANK_IX_EMBED:
		return embed(r, n, in, out);
	case RANK_IX_CHUNK:
		if (!in)
			return 0;
		if (!json_is_string(in))
			return base_err(r->err, STRATA_INVALID_ARGUMENT, "chunk takes a string");
		return eng_ix_chunk(in, n->str, (long)n->num, out, r->err);
	case RANK_IX_SINK: {
		int fi = field_index(r, n->str ? n->str : r->f->name);
		if (in && fi >= 0) {
			json_decref(r->outs[fi]);
			r->outs[fi] = json_incref(in);
		}
		*out = json_incref(in);
		return 0;
	}
	}
	return base_err(r->err, STRATA_NOT_IMPLEMENTED, "indexing expression %d", n->kind);
}

/* ---- the fields ------------------------------------------------------------------------ */

/* Whether script n reads a field the operation sets. */
static int reads_changed(const struct run *r, const struct rank_ix *n)
{
	if (!n)
		return 0;
	if (n->kind == RANK_IX_INPUT) {
		int fi = field_index(r, n->str);
		return fi >= 0 && r->vals[fi].set;
	}
	for (int i = 0; i < n->nargs; i++)
		if (reads_changed(r, n->args[i]))
			return 1;
	return 0;
}

/* The stored values of the document (update), in a. */
static int stored(struct eng_doctype *dt, struct store_txn *w, const char *id,
                  struct base_arena *a, const struct store_value **cur, struct strata_error *err)
{
	uint32_t lid;
	*cur = NULL;
	if (store_lookup(w, dt->store_id, id, &lid, NULL) != 0)
		return 0;
	struct store_value *c = base_arena_alloc(a, (size_t)(dt->nfields + 1) * sizeof *c, 8);
	if (!c)
		return base_nomem(err, "document '%s'", id);
	memset(c, 0, (size_t)(dt->nfields + 1) * sizeof *c);
	int rc = store_get(w, dt->store_id, lid, c, err);
	if (!rc)
		*cur = c;
	return rc;
}

int eng_indexing_run(struct strata *db, struct eng_doctype *dt, struct store_txn *w,
                     const char *id, int update, const struct store_value *vals, json_t **outs,
                     struct base_arena *a, struct strata_error *err)
{
	int n = dt->nfields, any = 0;
	for (int i = 0; i < n && !any; i++) {
		const struct rank_field *rf = rank_schema_field(dt->schema, i);
		any = rf->indexing && rf->source < 0;
	}
	if (!any)
		return 0;
	for (int i = 0; i < n; i++)
		BASE_DEBUG_ASSERT(!outs[i]); /* the caller's array is empty */
	struct run r = {db, dt, NULL, vals, NULL, NULL, NULL, outs, NULL, err};
	size_t sz = (size_t)n * sizeof(json_t *);
	r.ins = base_calloc(1, sz);
	r.read = base_calloc(1, (size_t)n);
	int rc = r.ins && r.read ? 0 : base_nomem(err, "document '%s'", id);
	if (!rc && update)
		rc = stored(dt, w, id, a, &r.cur, err);
	for (int i = 0; i < n && !rc; i++) {
		const struct rank_field *rf = rank_schema_field(dt->schema, i);
		/* A document field's script also reads the field itself. */
		int changed = (!rf->outside && vals[i].set) || reads_changed(&r, rf->indexing);
		if (!rf->indexing || rf->source >= 0 || (update && !changed))
			continue;
		json_t *self = NULL, *v = NULL;
		r.f = rf;
		if (!rf->outside)
			rc = input(&r, i, &self);
		if (!rc)
			rc = eval(&r, rf->indexing, self, &v);
		json_decref(v);
		if (rc)
			rc = base_err_prefix(err, rc, "field '%s'", rf->name);
	}
	json_decref(r.vars);
	for (int i = 0; i < n && r.ins; i++)
		json_decref(r.ins[i]);
	if (r.ins)
		base_free(r.ins, sz);
	if (r.read)
		base_free(r.read, (size_t)n);
	return rc;
}
