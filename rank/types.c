/*
 * types.c: the field types beyond numbers, strings, tensors and
 * collections, parsed and resolved: byte (an int of -128 to 127), uri (a
 * string), raw (bytes), reference<T> (the id of a document of type T),
 * position (a geographical point),
 * predicate (a boolean constraint, with its index { arity ... } block), and
 * the schema items that go with them: "import field r.f as g { }" (g reads
 * the attribute f of the document the reference field r names) and
 * raw-as-base64-in-summary.  parse.c calls the parsing functions where the
 * constructs appear; rank_sds_types_resolve runs once every schema of the
 * application is parsed and its documents resolved (docs.c), because a
 * reference names another schema and an import takes the type of a field
 * declared there.
 *
 * Strings fields point at (a reference's type, an import's field) are
 * owned by the schema's refs and imports lists.  An imported field is a
 * field of the schema like the others, never fed nor stored: the engine
 * reads its value from the referenced document.
 */
#include <stdio.h>
#include <string.h>

#include "rank_syntax.h"

/* ---- field types ------------------------------------------------------------------- */

static const char *const more_types[] = {"byte", "uri", "raw", "reference", "predicate",
                                         "position", NULL};

int rank_more_type_is(const struct rank_tok *t)
{
	return rank_parser_name_in(t, more_types);
}

/* reference<T>, after "reference" (taken). */
static int reference_type(struct rank_parser *p, struct rank_field *f)
{
	struct rank_sd *sd = p->sd;
	struct rank_tok t;
	int rc = rank_parser_expect(p, "<", "after 'reference'");
	if (rc || (rc = rank_parser_expect_name(p, RANK_LEX_SCHEMA, &t, "a document type")) != 0 ||
	    (rc = rank_parser_expect(p, ">", "after the referenced document type")) != 0)
		return rc;
	if ((rc = rank_parser_push(p, &sd->refs, &sd->nrefs, sizeof *sd->refs)) != 0)
		return rc;
	struct rank_source_decl *d = &sd->refs[sd->nrefs - 1];
	d->pos = rank_parser_pos(p, &t);
	if (!(d->name = base_strdup(f->name)) || !(d->source = rank_parser_tokdup(p, &t)))
		return d->name ? STRATA_NOMEM : rank_parser_nomem(p);
	f->type = RANK_FT_REFERENCE;
	f->ref_doctype = d->source;
	return 0;
}

int rank_more_type(struct rank_parser *p, const struct rank_tok *t, struct rank_field *f)
{
	rank_lex_take(p->lx, t);
	if (rank_tok_is(t, "byte")) {
		f->type = RANK_FT_INT;
		f->byte = 1;
	} else if (rank_tok_is(t, "uri")) {
		f->type = RANK_FT_STRING; /* matched and shown as a string */
	} else if (rank_tok_is(t, "raw")) {
		f->type = RANK_FT_RAW;
	} else if (rank_tok_is(t, "position")) {
		f->type = RANK_FT_POSITION;
	} else if (rank_tok_is(t, "predicate")) {
		f->type = RANK_FT_PREDICATE;
		f->pred_lower = INT64_MIN;
		f->pred_upper = INT64_MAX;
	} else {
		return reference_type(p, f);
	}
	return 0;
}

/* ---- predicate index settings ------------------------------------------------------ */

/* An integer setting ": N" of the index block of predicate field f. */
static int int_setting(struct rank_parser *p, const struct rank_tok *kw, int64_t lo, int64_t hi,
                       int64_t *out)
{
	struct rank_tok t;
	double v;
	int neg = 0;
	int rc = rank_parser_expect(p, ":", "after the setting name");
	if (rc)
		return rc;
	if (rank_parser_take_if(p, RANK_LEX_SCHEMA, "-"))
		neg = 1;
	rank_lex_next(p->lx, RANK_LEX_SCHEMA, &t);
	if (t.kind != RT_NUM)
		return rank_parser_fail(p, &t, STRATA_PARSE, "expected an integer after %s, found %s",
		                        rank_tok_quote(kw), rank_tok_quote(&t));
	if ((rc = rank_tok_number(p->lx, &t, &v, p->err)) != 0)
		return rc;
	if (neg)
		v = -v;
	/* in int64's range before the cast (a cast of a value outside is undefined) */
	if (!(v >= -0x1p63 && v < 0x1p63) || v != (double)(int64_t)v || (int64_t)v < lo ||
	    (int64_t)v > hi)
		return rank_parser_fail(p, &t, STRATA_TYPE, "%s must be an integer from %lld to %lld",
		                        rank_tok_quote(kw), (long long)lo, (long long)hi);
	*out = (int64_t)v;
	return 0;
}

/* index { arity: N  lower-bound: L  upper-bound: U  dense-posting-list-threshold: X }
 * of a predicate field (after "index", taken).  The bounds limit the
 * range values of queries; arity and the threshold shape Vespa's index and
 * change nothing here (predicates are evaluated exactly). */
int rank_predicate_index(struct rank_parser *p, struct rank_field *f, const struct rank_tok *kw)
{
	struct rank_tok t;
	int64_t v;
	int rc = rank_parser_expect(p, "{", "after 'index' of a predicate field");
	while (!rc) {
		if (!rank_parser_block_item(p, NULL, &t))
			break;
		if (rank_tok_is(&t, "arity")) {
			if (!(rc = int_setting(p, &t, 2, 64, &v)))
				f->pred_arity = (int)v;
		} else if (rank_tok_is(&t, "lower-bound")) {
			rc = int_setting(p, &t, INT64_MIN + 1, INT64_MAX, &f->pred_lower);
		} else if (rank_tok_is(&t, "upper-bound")) {
			rc = int_setting(p, &t, INT64_MIN + 1, INT64_MAX, &f->pred_upper);
		} else if (rank_tok_is(&t, "dense-posting-list-threshold")) {
			rc = rank_parser_skip_setting(p);
		} else {
			rc = rank_parser_unexpected_in(p, &t, "predicate index of field", f->name);
		}
	}
	if (!rc && f->pred_lower > f->pred_upper)
		rc = rank_parser_fail(p, kw, STRATA_TYPE, "lower-bound is above upper-bound in field '%s'",
		                      f->name);
	return rc;
}

/* What fields of these types may not be, once their body is parsed. */
int rank_more_field_check(struct rank_parser *p, const struct rank_field *f)
{
	if (f->type == RANK_FT_RAW && f->attribute)
		return rank_parser_fail_at(p, f->line, f->col, STRATA_NOT_IMPLEMENTED,
		                           "raw field '%s' cannot be an attribute (indexing: summary "
		                           "only)", f->name);
	if (f->type == RANK_FT_PREDICATE && !f->attribute)
		return rank_parser_fail_at(p, f->line, f->col, STRATA_TYPE,
		                           "predicate field '%s' needs 'indexing: attribute'", f->name);
	if (f->type == RANK_FT_PREDICATE && !f->pred_arity)
		return rank_parser_fail_at(p, f->line, f->col, STRATA_TYPE,
		                           "predicate field '%s' needs 'index { arity: N }'", f->name);
	return 0;
}

/* ---- schema items ------------------------------------------------------------------ */

/* raw-as-base64-in-summary [: true]: raw fields show as base64, the
 * default (kw taken). */
int rank_parse_raw_base64(struct rank_parser *p, const struct rank_tok *kw)
{
	struct rank_tok t;
	if (!rank_parser_take_if(p, RANK_LEX_SCHEMA, ":"))
		return 0;
	rank_lex_next(p->lx, RANK_LEX_SCHEMA, &t);
	if (rank_tok_is(&t, "true"))
		return 0;
	if (rank_tok_is(&t, "false"))
		return rank_parser_fail(p, &t, STRATA_NOT_IMPLEMENTED,
		                        "raw-as-base64-in-summary: false is not supported (summaries "
		                        "show raw fields as base64)");
	return rank_parser_fail(p, &t, STRATA_PARSE, "expected true or false after %s, found %s",
	                        rank_tok_quote(kw), rank_tok_quote(&t));
}

/* import field r.f as g { } (after "import", taken). */
int rank_parse_import(struct rank_parser *p, const struct rank_tok *kw)
{
	struct rank_sd *sd = p->sd;
	struct rank_tok ref, fld, as, t;
	int rc;
	(void)kw;
	if ((rc = rank_parser_expect(p, "field", "after 'import'")) != 0 ||
	    (rc = rank_parser_expect_name(p, RANK_LEX_SCHEMA, &ref, "a reference field")) != 0 ||
	    (rc = rank_parser_expect(p, ".", "between the reference field and the imported field")) ||
	    (rc = rank_parser_expect_name(p, RANK_LEX_SCHEMA, &fld, "the imported field")) != 0 ||
	    (rc = rank_parser_expect(p, "as", "after the imported field")) != 0 ||
	    (rc = rank_parser_expect_name(p, RANK_LEX_SCHEMA, &as, "the field's name here")) != 0)
		return rc;
	int i = rank_parser_find_name(sd->fields, sd->nfields, sizeof *sd->fields, &as);
	if (i >= 0)
		return rank_parser_fail(p, &as, STRATA_TYPE, "field %s is declared twice (first at %d:%d)",
		                        rank_tok_quote(&as), sd->fields[i].line, sd->fields[i].col);
	if ((rc = rank_parser_expect(p, "{", "after the imported field's name")) != 0)
		return rc;
	rank_lex_next(p->lx, RANK_LEX_SCHEMA, &t);
	if (!rank_tok_is(&t, "}"))
		return rank_parser_fail(p, &t, STRATA_NOT_IMPLEMENTED,
		                        "settings of an imported field (%s) are not supported",
		                        rank_tok_quote(&t));
	if ((rc = rank_parser_push(p, &sd->imports, &sd->nimports, sizeof *sd->imports)) != 0)
		return rc;
	struct rank_source_decl *d = &sd->imports[sd->nimports - 1];
	d->pos = rank_parser_pos(p, &ref);
	size_t n = ref.len + 1 + fld.len;
	if (!(d->name = rank_parser_tokdup(p, &as)) || !(d->source = base_alloc(n + 1)))
		return d->name ? rank_parser_nomem(p) : STRATA_NOMEM;
	memcpy(d->source, ref.s, ref.len);
	d->source[ref.len] = '.';
	memcpy(d->source + ref.len + 1, fld.s, fld.len);
	d->source[n] = 0; /* "r.f", freed by its length */
	struct rank_field *f = rank_parser_add_named(p, &sd->fields, &sd->nfields, sizeof *sd->fields,
	                                             &as, &rc);
	if (!f)
		return rc;
	f->line = as.line;
	f->col = as.col;
	f->source = -1;
	f->imported = 1;
	f->import_ref = -1;
	f->import_field = d->source + ref.len + 1;
	return 0;
}

/* ---- resolution -------------------------------------------------------------------- */

static const struct rank_sd *find_sd(struct rank_sd **sds, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (sds[i]->docs_resolved && strcmp(sds[i]->name, name) == 0)
			return sds[i];
	return NULL;
}

/* An error at pos: "file:line:col: msg". */
static int fail_at(struct strata_error *err, const struct rank_pos *pos, int code, const char *msg)
{
	return base_err(err, code, "%s:%d:%d: %s", pos->file, pos->line, pos->col, msg);
}

/* Field g of sd, imported as d says, takes the type of the field it reads. */
static int resolve_import(struct rank_sd **sds, int n, struct rank_sd *sd,
                          const struct rank_source_decl *d, struct strata_error *err)
{
	struct rank_field *g = &sd->fields[rank_sd_field_index(sd, d->name)];
	int len = (int)(g->import_field - 1 - d->source), r = -1;
	for (int i = 0; i < sd->nfields && r < 0; i++)
		if ((int)strlen(sd->fields[i].name) == len && !strncmp(sd->fields[i].name, d->source, len))
			r = i;
	char msg[512];
	if (r < 0 || sd->fields[r].type != RANK_FT_REFERENCE) {
		snprintf(msg, sizeof msg, "import field: '%.*s' is not a reference field of document "
		         "'%s'", len, d->source, sd->name);
		return fail_at(err, &d->pos, STRATA_TYPE, msg);
	}
	const struct rank_sd *parent = find_sd(sds, n, sd->fields[r].ref_doctype);
	int pf = parent ? rank_sd_field_index(parent, g->import_field) : -1;
	if (pf < 0 || !parent->fields[pf].attribute || parent->fields[pf].imported) {
		snprintf(msg, sizeof msg, "import field: '%s' is not an attribute of document type "
		         "'%s'", g->import_field, sd->fields[r].ref_doctype);
		return fail_at(err, &d->pos, STRATA_TYPE, msg);
	}
	const struct rank_field *f = &parent->fields[pf];
	g->type = f->type;
	g->attribute = 1;
	g->byte = f->byte;
	g->cell = f->cell;
	g->rank = f->rank;
	g->vtype = f->vtype;
	g->wset_flags = f->wset_flags;
	g->ref_doctype = f->ref_doctype;
	g->pred_lower = f->pred_lower;
	g->pred_upper = f->pred_upper;
	g->pred_arity = f->pred_arity;
	g->import_ref = r;
	for (int k = 0; k < f->rank; k++) {
		g->dims[k] = f->dims[k];
		if (!(g->dim_names[k] = base_strdup(f->dim_names[k])))
			return base_nomem(err, "importing field '%s'", d->name);
	}
	return 0;
}

static int resolve_sd(struct rank_sd **sds, int n, struct rank_sd *sd, struct strata_error *err)
{
	char msg[512];
	for (int i = 0; i < sd->nrefs; i++) {
		if (find_sd(sds, n, sd->refs[i].source))
			continue;
		snprintf(msg, sizeof msg, "field '%s' references document type '%s', which no schema "
		         "of the application declares", sd->refs[i].name, sd->refs[i].source);
		return fail_at(err, &sd->refs[i].pos, STRATA_TYPE, msg);
	}
	for (int i = 0; i < sd->nimports; i++) {
		int rc = resolve_import(sds, n, sd, &sd->imports[i], err);
		if (rc)
			return rc;
	}
	return 0;
}

int rank_sds_types_resolve(struct rank_sd **sds, int n, struct strata_errors *errs,
                           struct strata_error *err)
{
	int rc = 0;
	struct strata_error first;
	for (int i = 0; i < n; i++) {
		if (!sds[i]->docs_resolved)
			continue;
		int r = resolve_sd(sds, n, sds[i], err);
		if (!r)
			continue;
		if (!errs || r == STRATA_NOMEM) {
			rc = r;
			break;
		}
		base_errs_add(errs, err);
		sds[i]->docs_resolved = 0; /* the application leaves it out */
		if (!rc) {
			rc = r;
			first = *err;
		}
	}
	if (rc && errs && rc != STRATA_NOMEM)
		*err = first;
	return rc;
}
