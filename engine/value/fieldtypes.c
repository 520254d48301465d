/*
 * fieldtypes.c: the values of the field types of rank/types.c between
 * document JSON and the store (imports.c reads imported fields; match/typedmatch.c
 * matches positions and predicates).
 *
 *   byte       an int of -128 to 127 (kept as an int; feed checks the range;
 *              a string of one is taken, as Vespa takes it: numbers.c)
 *   raw        bytes, fed as base64 and shown as base64 (Vespa's
 *              raw-as-base64-in-summary, its default); kept as the bytes
 *   reference  a document id of the referenced type, kept as a string
 *   predicate  kept in its canonical text (predicate.c)
 *   position   kept as a long (position.c)
 *   imported   never fed nor stored: its value is the attribute of the
 *              document the reference field names, read when a query
 *              ranks, matches or summarises (the parent may be fed before
 *              or after the child; no parent, or none of that id, reads as
 *              no value, which ranking takes as the type's default)
 *
 * Every other type goes through feed.c and result.c as before.
 */
#include <stdio.h>
#include <string.h>

#include "../engine_int.h"

/* ---- base64 ------------------------------------------------------------------------ */

/* The base64 text of the n bytes at p as a JSON string; NULL when memory
 * runs out. */
static json_t *b64_json(const unsigned char *p, size_t n)
{
	size_t m = (n + 2) / 3 * 4;
	char *t = base_alloc(m + 1);
	if (!t)
		return NULL;
	base_b64_encode(p, n, t);
	json_t *j = json_stringn(t, m);
	base_free(t, m + 1);
	return j;
}

/* ---- feeding ------------------------------------------------------------------------- */

int eng_typed_field(const struct rank_field *rf)
{
	return rf->byte || rf->imported || rf->type == RANK_FT_RAW ||
	       rf->type == RANK_FT_REFERENCE || rf->type == RANK_FT_PREDICATE ||
	       rf->type == RANK_FT_POSITION;
}

static int raw_value(const json_t *j, struct base_arena *a, struct store_value *v,
                     const char *what, struct strata_error *err)
{
	if (!json_is_string(j))
		return base_err(err, STRATA_INVALID_ARGUMENT, "%s: expected raw bytes as a base64 string",
		                what);
	size_t n = json_string_length(j), len = 0;
	unsigned char *out = base_arena_alloc(a, n / 4 * 3 + 1, 1);
	if (!out)
		return base_nomem(err, "%s", what);
	long bad = base_b64_decode(json_string_value(j), n, out, &len);
	if (bad >= 0)
		return base_err(err, STRATA_INVALID_ARGUMENT, "%s: not base64: %s at character %ld",
		                what, (size_t)bad >= n ? "the length is not a multiple of 4"
		                                       : "a bad character", bad + 1);
	v->s = (const char *)out;
	v->n = len;
	v->set = 1;
	return 0;
}

static int reference_value(const struct rank_field *rf, const json_t *j, struct store_value *v,
                           const char *what, struct strata_error *err)
{
	const char *type;
	size_t tl;
	if (!json_is_string(j))
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "%s: expected the id of a '%s' document as a string", what,
		                rf->ref_doctype);
	int rc = eng_docid_type(json_string_value(j), &type, &tl, err);
	if (rc)
		return base_err_prefix(err, rc, "%s", what);
	if (strlen(rf->ref_doctype) != tl || memcmp(type, rf->ref_doctype, tl) != 0)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "%s: '%s' is a document of type '%.*s'; the field references '%s'", what,
		                json_string_value(j), (int)tl, type, rf->ref_doctype);
	v->s = json_string_value(j);
	v->n = json_string_length(j);
	v->set = 1;
	return 0;
}

int eng_typed_value(const struct rank_field *rf, const json_t *j, struct base_arena *a,
                    struct store_value *v, const char *what, struct strata_error *err)
{
	memset(v, 0, sizeof *v);
	if (rf->imported)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "%s is imported (from field '%s' of the referenced document): it cannot "
		                "be fed", what, rf->import_field);
	if (rf->byte) {
		char shown[64];
		int64_t x;
		int r = eng_num_int(j, -128, 127, &x); /* "7" as 7, as Vespa reads it (numbers.c) */
		if (r == ENG_NUM_NOT)
			return base_err(err, STRATA_INVALID_ARGUMENT, "%s: expected an integer (byte), "
			                "got %s", what, eng_num_show(j, shown, sizeof shown));
		if (r)
			return base_err(err, STRATA_INVALID_ARGUMENT,
			                "%s: %s is out of range for byte (-128 to 127)", what,
			                eng_num_show(j, shown, sizeof shown));
		v->i = x;
		v->set = 1;
		return 0;
	}
	switch (rf->type) {
	case RANK_FT_RAW:
		return raw_value(j, a, v, what, err);
	case RANK_FT_REFERENCE:
		return reference_value(rf, j, v, what, err);
	case RANK_FT_POSITION:
		return eng_position_value(j, v, what, err);
	}
	return eng_predicate_text(j, a, v, what, err);
}

json_t *eng_field_json(const struct eng_doctype *dt, int fi, const struct store_value *v)
{
	const struct rank_field *rf = rank_schema_field(dt->schema, fi);
	if (rf->type == RANK_FT_RAW)
		return b64_json((const unsigned char *)v->s, v->s ? v->n : 0);
	if (rf->type == RANK_FT_POSITION)
		return eng_position_json(v->i);
	return eng_value_json(&dt->fields[fi], rf->dim_names, v);
}
