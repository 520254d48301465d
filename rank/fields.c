/*
 * fields.c: the document part of the schema language, parsed.  Collection
 * and struct field types (array<T>, weightedset<T>, map<K,V>, struct
 * declarations), struct-field settings, summary settings of fields,
 * and document-summary classes.  parse.c calls these where the
 * constructs appear; docs.c resolves what they name once every schema of
 * the application is parsed.
 *
 * Type nodes are allocated one by one and listed in rank_sd.vtypes, which
 * owns them: a field, a struct field or another node points at them, and
 * fields copied into an inheriting schema keep pointing at their parent's.
 * Structs are allocated one by one too (rank_sd.structs), so that a struct
 * type can point at one while more are declared.
 */
#include <string.h>

#include "rank_syntax.h"

#define MAX_TYPE_DEPTH 16 /* array<map<string, array<...>>> */

int rank_field_simple_type(const struct rank_tok *t)
{
	static const struct {
		const char *name;
		int type;
	} simple[] = {
		{"string", RANK_FT_STRING}, {"int", RANK_FT_INT}, {"long", RANK_FT_LONG},
		{"float", RANK_FT_FLOAT}, {"double", RANK_FT_DOUBLE}, {"bool", RANK_FT_BOOL},
	};
	for (size_t i = 0; i < sizeof simple / sizeof simple[0]; i++)
		if (rank_tok_is(t, simple[i].name))
			return simple[i].type;
	return 0;
}

/* Field types Vespa has that collections here do not hold. */
static const char *const unsupported_elements[] = {
	"byte", "position", "predicate", "raw", "uri", "reference", "annotationreference",
	"float16", "int8", "tensor", NULL,
};

/* A new type node of the given type at token t, owned by the schema. */
static int new_vtype(struct rank_parser *p, int type, const struct rank_tok *t,
                     struct rank_vtype_decl **out)
{
	struct rank_sd *sd = p->sd;
	struct rank_vtype_decl *v = base_calloc(1, sizeof *v);
	if (!v)
		return rank_parser_nomem(p);
	int rc = rank_parser_push(p, &sd->vtypes, &sd->nvtypes, sizeof *sd->vtypes);
	if (rc) {
		base_free(v, sizeof *v);
		return rc;
	}
	sd->vtypes[sd->nvtypes - 1] = v;
	v->pub.type = type;
	v->pos = rank_parser_pos(p, t);
	*out = v;
	return 0;
}

static int vtype(struct rank_parser *p, int depth, struct rank_vtype_decl **out);

/* "<T>" after array or weightedset, "<K,V>" after map. */
static int type_args(struct rank_parser *p, int depth, struct rank_vtype_decl *v,
                     const struct rank_tok *kw)
{
	struct rank_vtype_decl *a, *b = NULL;
	int rc = rank_parser_expect(p, "<", "after the collection type");
	if (rc || (rc = vtype(p, depth + 1, &a)) != 0)
		return rc;
	if (v->pub.type == RANK_FT_MAP) {
		if ((rc = rank_parser_expect(p, ",", "between a map's key and value types")) != 0 ||
		    (rc = vtype(p, depth + 1, &b)) != 0)
			return rc;
		if (a->pub.type > RANK_FT_BOOL)
			return rank_parser_fail_at(p, a->pos.line, a->pos.col, STRATA_TYPE,
			                           "a map's keys must be of a simple type");
		v->pub.key = &a->pub;
		v->pub.elem = &b->pub;
	} else {
		int t = a->pub.type;
		if (v->pub.type == RANK_FT_WSET && t != RANK_FT_STRING && t != RANK_FT_INT &&
		    t != RANK_FT_LONG)
			return rank_parser_fail_at(p, a->pos.line, a->pos.col, STRATA_TYPE,
			                           "a weightedset holds string, int or long keys");
		v->pub.elem = &a->pub;
	}
	(void)kw;
	return rank_parser_expect(p, ">", "after the collection's type");
}

/* One value type: simple, a collection of types, or a struct's name. */
static int vtype(struct rank_parser *p, int depth, struct rank_vtype_decl **out)
{
	struct rank_tok t;
	rank_lex_next(p->lx, RANK_LEX_SCHEMA, &t);
	if (depth > MAX_TYPE_DEPTH)
		return rank_parser_fail(p, &t, STRATA_LIMIT, "types nest deeper than %d",
		                        MAX_TYPE_DEPTH);
	int st = rank_field_simple_type(&t);
	if (st)
		return new_vtype(p, st, &t, out);
	int coll = rank_tok_is(&t, "array") ? RANK_FT_ARRAY
	         : rank_tok_is(&t, "weightedset") ? RANK_FT_WSET
	         : rank_tok_is(&t, "map") ? RANK_FT_MAP : 0;
	int rc;
	if (coll) {
		if ((rc = new_vtype(p, coll, &t, out)) != 0)
			return rc;
		return type_args(p, depth, *out, &t);
	}
	if (rank_parser_name_in(&t, unsupported_elements))
		return rank_parser_fail(p, &t, STRATA_NOT_IMPLEMENTED,
		                        "%s inside a collection or struct is not supported",
		                        rank_tok_quote(&t));
	if (t.kind != RT_NAME)
		return rank_parser_fail(p, &t, STRATA_PARSE, "expected a type, found %s",
		                        rank_tok_quote(&t));
	/* A struct, found by name once the documents are known. */
	if ((rc = new_vtype(p, RANK_FT_STRUCT, &t, out)) != 0)
		return rc;
	if (!((*out)->struct_name = rank_parser_tokdup(p, &t)))
		return STRATA_NOMEM;
	return 0;
}

int rank_field_vtype(struct rank_parser *p, const struct rank_tok *t, struct rank_field *f)
{
	struct rank_vtype_decl *v;
	(void)t;
	int rc = vtype(p, 0, &v);
	if (rc)
		return rc;
	f->type = v->pub.type;
	f->vtype = &v->pub;
	return 0;
}

/* ---- struct ------------------------------------------------------------------ */

static struct rank_struct_decl *find_struct(const struct rank_sd *sd, const struct rank_tok *t)
{
	for (int i = 0; i < sd->nstructs; i++)
		if (rank_tok_is(t, sd->structs[i]->name))
			return sd->structs[i];
	return NULL;
}

/* "{ }" after a struct's field: nothing may be set there. */
static int empty_body(struct rank_parser *p, const char *what)
{
	struct rank_tok t;
	if (!rank_parser_take_if(p, RANK_LEX_SCHEMA, "{"))
		return 0;
	if (!rank_parser_block_item(p, NULL, &t))
		return 0;
	return rank_parser_fail(p, &t, STRATA_NOT_IMPLEMENTED, "settings of %s (%s) are not supported",
	                        what, rank_tok_quote(&t));
}

static int struct_field(struct rank_parser *p, struct rank_struct_decl *s)
{
	struct rank_tok nm;
	int rc = rank_parser_expect_name(p, RANK_LEX_SCHEMA, &nm, "a struct field name");
	if (rc)
		return rc;
	if (rank_parser_find_name(s->fields, s->nfields, sizeof *s->fields, &nm) >= 0)
		return rank_parser_fail(p, &nm, STRATA_TYPE, "struct '%s' has field %s twice",
		                        s->name, rank_tok_quote(&nm));
	struct rank_struct_field *sf =
		rank_parser_add_named(p, &s->fields, &s->nfields, sizeof *s->fields, &nm, &rc);
	if (!sf)
		return rc;
	struct rank_vtype_decl *v;
	if ((rc = rank_parser_expect(p, "type", "after the struct field's name")) != 0 ||
	    (rc = vtype(p, 0, &v)) != 0)
		return rc;
	sf->type = &v->pub;
	return empty_body(p, "a struct's field");
}

int rank_struct_parse(struct rank_parser *p, const struct rank_tok *kw)
{
	struct rank_sd *sd = p->sd;
	struct rank_tok nm, t;
	(void)kw;
	int rc = rank_parser_expect_name(p, RANK_LEX_SCHEMA, &nm, "a struct name");
	if (rc)
		return rc;
	if (find_struct(sd, &nm) || rank_field_simple_type(&nm))
		return rank_parser_fail(p, &nm, STRATA_TYPE, "struct %s is declared twice or names a type",
		                        rank_tok_quote(&nm));
	struct rank_struct_decl *s = base_calloc(1, sizeof *s);
	if (!s)
		return rank_parser_nomem(p);
	if ((rc = rank_parser_push(p, &sd->structs, &sd->nstructs, sizeof *sd->structs)) != 0) {
		base_free(s, sizeof *s);
		return rc;
	}
	sd->structs[sd->nstructs - 1] = s;
	s->pos = rank_parser_pos(p, &nm);
	if (!(s->name = rank_parser_tokdup(p, &nm)))
		return STRATA_NOMEM;
	rank_lex_peek(p->lx, RANK_LEX_SCHEMA, &t);
	if (rank_tok_is(&t, "inherits"))
		return rank_parser_fail(p, &t, STRATA_NOT_IMPLEMENTED, "struct inheritance is not supported");
	if ((rc = rank_parser_expect(p, "{", "after the struct's name")) != 0)
		return rc;
	while (rank_parser_block_item(p, NULL, &t)) {
		if (!rank_tok_is(&t, "field"))
			return rank_parser_fail(p, &t, STRATA_PARSE,
			                        "expected 'field' or '}' in struct '%s', found %s", s->name,
			                        rank_tok_quote(&t));
		if ((rc = struct_field(p, s)) != 0)
			return rc;
	}
	s->pub.name = s->name;
	s->pub.nfields = s->nfields;
	s->pub.fields = s->fields;
	return 0;
}

/* struct-field name { indexing: attribute | summary; attribute: ...;
 * struct-field ... }: accepted as Vespa's are; they make the element
 * an attribute for searching and ranking by name (f.key), which queries
 * here do not address, so nothing else changes. */
int rank_struct_field_parse(struct rank_parser *p, struct rank_field *f, const struct rank_tok *kw)
{
	struct rank_tok nm, t;
	int rc = rank_parser_expect_name(p, RANK_LEX_SCHEMA, &nm, "a struct field name");
	if (rc)
		return rc;
	if (!f->vtype)
		return rank_parser_fail(p, kw, STRATA_TYPE,
		                        "struct-field in field '%s', which holds no struct or map",
		                        f->name);
	if ((rc = rank_parser_expect(p, "{", "after the struct-field's name")) != 0 ||
	    (rc = rank_parser_enter(p, &nm)) != 0)
		return rc;
	while (rank_parser_block_item(p, NULL, &t)) {
		if (rank_tok_is(&t, "struct-field")) {
			rc = rank_struct_field_parse(p, f, &t);
		} else if (rank_tok_is(&t, "indexing")) {
			rc = rank_parser_expect(p, ":", "after 'indexing'");
			for (int first = 1; !rc; first = 0) {
				rank_lex_peek(p->lx, RANK_LEX_SCHEMA, &t);
				if (!first && !rank_parser_take_if(p, RANK_LEX_SCHEMA, "|"))
					break;
				rank_lex_next(p->lx, RANK_LEX_SCHEMA, &t);
				if (!rank_tok_is(&t, "attribute") && !rank_tok_is(&t, "summary"))
					rc = rank_parser_fail(p, &t, STRATA_NOT_IMPLEMENTED,
					                      "indexing statement %s in a struct-field is not "
					                      "supported (only attribute, summary)",
					                      rank_tok_quote(&t));
			}
		} else if (rank_tok_is(&t, "attribute")) {
			rc = rank_parser_expect(p, ":", "after 'attribute'");
			rank_lex_next(p->lx, RANK_LEX_SCHEMA, &t);
			if (!rc && !rank_tok_is(&t, "fast-search") && !rank_tok_is(&t, "fast-access"))
				rc = rank_parser_fail(p, &t, STRATA_NOT_IMPLEMENTED,
				                      "attribute setting %s in a struct-field is not supported",
				                      rank_tok_quote(&t));
		} else {
			rc = rank_parser_fail(p, &t, STRATA_NOT_IMPLEMENTED,
			                      "%s in a struct-field is not supported", rank_tok_quote(&t));
		}
		if (rc)
			return rc;
	}
	p->depth--;
	return 0;
}

/* ---- summaries ------------------------------------------------------------------- */

/* Summary transforms Vespa has and these summaries lack: each shows
 * something else than the field's value. */
static const char *const unsupported_transforms[] = {
	"attribute", "geopos", "positions", "distance", "summary-to", "to", NULL,
};

/* A summary transform at t (dynamic, matched-elements-only, bolding: on|off)
 * into *transform; 0 when t is none of them (nothing taken), 1 when it was
 * one, or an error. */
static int summary_transform(struct rank_parser *p, const struct rank_tok *t, int *transform)
{
	struct rank_tok v;
	if (rank_tok_is(t, "dynamic")) {
		*transform = RANK_SUMMARY_DYNAMIC;
		return 1;
	}
	if (rank_tok_is(t, "matched-elements-only")) {
		*transform = RANK_SUMMARY_MATCHED_ELEMENTS;
		return 1;
	}
	if (rank_tok_is(t, "select-elements-by"))
		return rank_parser_fail(p, t, STRATA_NOT_IMPLEMENTED,
		                        "summary setting 'select-elements-by' on a field is not "
		                        "supported (only in a document-summary's field)");
	if (!rank_tok_is(t, "bolding"))
		return 0;
	int rc = rank_parser_expect(p, ":", "after 'bolding'");
	if (rc)
		return rc;
	rank_lex_next(p->lx, RANK_LEX_SCHEMA, &v);
	if (rank_tok_is(&v, "on") || rank_tok_is(&v, "true"))
		*transform = RANK_SUMMARY_BOLDING;
	else if (rank_tok_is(&v, "off") || rank_tok_is(&v, "false"))
		*transform = RANK_SUMMARY_VALUE;
	else
		return rank_parser_fail(p, &v, STRATA_PARSE, "expected on or off, found %s",
		                        rank_tok_quote(&v));
	return 1;
}

/* The optional "type T" of a summary field: read and dropped, the value
 * shown is the source field's. */
static int summary_type(struct rank_parser *p)
{
	struct rank_tok t;
	if (!rank_parser_take_if(p, RANK_LEX_SCHEMA, "type"))
		return 0;
	rank_lex_peek(p->lx, RANK_LEX_SCHEMA, &t);
	if (rank_tok_is(&t, "tensor")) {
		struct rank_type ty;
		int rc = rank_type_lex(p->lx, &ty, p->err);
		if (!rc)
			rank_type_clear(&ty);
		return rc;
	}
	struct rank_vtype_decl *v;
	return vtype(p, 0, &v);
}

/* The body of a summary field: "{ source: g  full }" or nothing. */
static int summary_body(struct rank_parser *p, struct rank_source_decl *d)
{
	struct rank_tok t;
	int rc;
	if (!rank_parser_take_if(p, RANK_LEX_SCHEMA, "{"))
		return 0;
	while (rank_parser_block_item(p, NULL, &t)) {
		if (rank_tok_is(&t, "full") || rank_tok_is(&t, ";"))
			continue;
		if (rank_tok_is(&t, "tokens")) {
			d->tokens = 1;
			continue;
		}
		if (rank_tok_is(&t, "select-elements-by")) {
			struct rank_tok s;
			if (d->select_by)
				return rank_parser_fail(p, &t, STRATA_TYPE,
				                        "select-elements-by is given twice");
			if ((rc = rank_parser_expect(p, ":", "after 'select-elements-by'")) != 0 ||
			    (rc = rank_parser_expect_name(p, RANK_LEX_SCHEMA, &s,
			                                  "a summary-feature's name")) != 0)
				return rc;
			if (!(d->select_by = rank_parser_tokdup(p, &s)))
				return STRATA_NOMEM;
			continue;
		}
		if ((rc = summary_transform(p, &t, &d->transform)) != 0) {
			if (rc < 0)
				return rc;
			continue;
		}
		if (rank_tok_is(&t, "source")) {
			if (d->source)
				return rank_parser_fail(p, &t, STRATA_TYPE, "source is given twice");
			struct rank_tok s;
			if ((rc = rank_parser_expect(p, ":", "after 'source'")) != 0 ||
			    (rc = rank_parser_expect_name(p, RANK_LEX_SCHEMA, &s, "a field name")) != 0)
				return rc;
			if (!(d->source = rank_parser_tokdup(p, &s)))
				return STRATA_NOMEM;
			if (rank_parser_take_if(p, RANK_LEX_SCHEMA, ","))
				return rank_parser_fail(p, &s, STRATA_NOT_IMPLEMENTED,
				                        "a summary field with several sources is not supported");
			continue;
		}
		if (rank_parser_name_in(&t, unsupported_transforms))
			return rank_parser_fail(p, &t, STRATA_NOT_IMPLEMENTED,
			                        "summary setting %s is not supported", rank_tok_quote(&t));
		return rank_parser_fail(p, &t, STRATA_PARSE,
		                        "expected 'source', 'full', 'tokens', 'dynamic', "
		                        "'matched-elements-only', 'bolding', 'select-elements-by' or "
		                        "'}' in summary '%s', "
		                        "found %s",
		                        d->name, rank_tok_quote(&t));
	}
	return 0;
}

/* Append a summary field named nm to the array at arrp (n elements). */
static struct rank_source_decl *add_source(struct rank_parser *p, struct rank_source_decl **arr,
                                           int *n, const struct rank_tok *nm, int *rc)
{
	struct rank_source_decl *d = rank_parser_add_named(p, arr, n, sizeof **arr, nm, rc);
	if (d)
		d->pos = rank_parser_pos(p, nm);
	return d;
}

static int summary_fields(struct rank_parser *p, const char *name, struct rank_source_decl **arr,
                          int *n, int *omit);

int rank_summary_parse(struct rank_parser *p, const struct rank_tok *kw)
{
	struct rank_sd *sd = p->sd;
	struct rank_tok nm, t;
	(void)kw;
	int rc = rank_parser_expect_name(p, RANK_LEX_SCHEMA, &nm, "a document-summary name");
	if (rc)
		return rc;
	if (rank_parser_find_name(sd->summaries, sd->nsummaries, sizeof *sd->summaries, &nm) >= 0)
		return rank_parser_fail(p, &nm, STRATA_TYPE, "document-summary %s is declared twice",
		                        rank_tok_quote(&nm));
	/* The schema's own "default" extends the default class, as in Vespa:
	 * its fields join (or replace) those the fields' settings put there. */
	if (rank_tok_is(&nm, "default")) {
		rank_lex_peek(p->lx, RANK_LEX_SCHEMA, &t);
		if (rank_tok_is(&t, "inherits"))
			return rank_parser_fail(p, &t, STRATA_TYPE,
			                        "the document-summary 'default' cannot inherit another");
		return summary_fields(p, "default", &sd->field_summaries, &sd->nfield_summaries,
		                      &sd->default_omit_summary_features);
	}
	struct rank_summary_decl *s =
		rank_parser_add_named(p, &sd->summaries, &sd->nsummaries, sizeof *sd->summaries, &nm, &rc);
	if (!s)
		return rc;
	s->pos = rank_parser_pos(p, &nm);
	if (rank_parser_take_if(p, RANK_LEX_SCHEMA, "inherits")) {
		if ((rc = rank_parser_expect_name(p, RANK_LEX_SCHEMA, &t, "a document-summary name")) != 0)
			return rc;
		s->inherits_pos = rank_parser_pos(p, &t);
		if (!(s->inherits = rank_parser_tokdup(p, &t)))
			return STRATA_NOMEM;
		if (rank_parser_take_if(p, RANK_LEX_SCHEMA, ","))
			return rank_parser_fail(p, &t, STRATA_NOT_IMPLEMENTED,
			                        "a document-summary inheriting several is not supported");
	}
	return summary_fields(p, s->name, &s->fields, &s->nfields, &s->omit_summary_features);
}

/* The block of document-summary name: its fields appended to *arr (n of
 * them), omit-summary-features into *omit. */
static int summary_fields(struct rank_parser *p, const char *name, struct rank_source_decl **arr,
                          int *n, int *omit)
{
	struct rank_tok t, nm;
	int first = *n, rc = rank_parser_expect(p, "{", "after the document-summary's name");
	if (rc)
		return rc;
	while (rank_parser_block_item(p, NULL, &t)) {
		if (rank_tok_is(&t, "from-disk"))
			continue; /* every summary here is read from the stored document */
		if (rank_tok_is(&t, "omit-summary-features")) {
			*omit = 1;
			continue;
		}
		if (!rank_tok_is(&t, "summary"))
			return rank_parser_fail(p, &t, STRATA_PARSE,
			                        "expected 'summary' or '}' in document-summary '%s', found %s",
			                        name, rank_tok_quote(&t));
		if ((rc = rank_parser_expect_name(p, RANK_LEX_SCHEMA, &nm, "a summary field name")) != 0)
			return rc;
		if (*n > first && rank_parser_find_name(*arr + first, *n - first, sizeof **arr, &nm) >= 0)
			return rank_parser_fail(p, &nm, STRATA_TYPE, "summary field %s is given twice",
			                        rank_tok_quote(&nm));
		struct rank_source_decl *d = add_source(p, arr, n, &nm, &rc);
		if (!d || (rc = summary_type(p)) != 0 || (rc = summary_body(p, d)) != 0)
			return rc;
	}
	return 0;
}

int rank_field_summary(struct rank_parser *p, struct rank_field *f, const struct rank_tok *kw)
{
	struct rank_sd *sd = p->sd;
	struct rank_tok t, nm = *kw;
	int rc;
	rank_lex_peek(p->lx, RANK_LEX_SCHEMA, &t);
	if (rank_tok_is(&t, ":")) {
		rank_lex_take(p->lx, &t);
		rank_lex_next(p->lx, RANK_LEX_SCHEMA, &t);
		if (rank_tok_is(&t, "full") || rank_tok_is(&t, "tokens")) {
			f->summary = 1;
			f->summary_tokens = rank_tok_is(&t, "tokens");
			return 0;
		}
		if ((rc = summary_transform(p, &t, &f->summary_transform)) != 0) {
			f->summary = 1;
			return rc < 0 ? rc : 0;
		}
		if (rank_parser_name_in(&t, unsupported_transforms))
			return rank_parser_fail(p, &t, STRATA_NOT_IMPLEMENTED,
			                        "summary setting %s is not supported", rank_tok_quote(&t));
		return rank_parser_fail(p, &t, STRATA_PARSE, "expected a summary setting, found %s",
		                        rank_tok_quote(&t));
	}
	int named = t.kind == RT_NAME && !rank_tok_is(&t, "type");
	if (named) {
		rank_lex_take(p->lx, &t);
		nm = t;
	}
	/* A summary setting is ": transform" or has a body (after a name
	 * and a type, perhaps). */
	if ((rc = summary_type(p)) != 0)
		return rc;
	rank_lex_peek(p->lx, RANK_LEX_SCHEMA, &t);
	if (!rank_tok_is(&t, "{"))
		return rank_parser_fail(p, &t, STRATA_PARSE, "expected '{' or ':' after %s, found %s",
		                        named ? "the summary's name" : "'summary'", rank_tok_quote(&t));
	struct rank_source_decl d = {0};
	if ((rc = summary_body(p, &d)) != 0) {
		base_strfree(d.source);
		return rc;
	}
	const char *src = d.source ? d.source : f->name;
	if (!named || rank_tok_is(&nm, f->name)) {
		/* The field's own summary, perhaps from another field. */
		int self = strcmp(src, f->name) == 0;
		base_strfree(d.source);
		if (d.tokens)
			return rank_parser_fail(p, kw, STRATA_NOT_IMPLEMENTED,
			                        "the summary setting 'tokens' on the field's own summary is "
			                        "not supported; give the summary another name");
		if (!self)
			return rank_parser_fail(p, kw, STRATA_NOT_IMPLEMENTED,
			                        "field '%s' showing another field in its summary is not "
			                        "supported; use a document-summary",
			                        f->name);
		f->summary = 1;
		if (d.transform)
			f->summary_transform = d.transform;
		return 0;
	}
	struct rank_source_decl *e =
		add_source(p, &sd->field_summaries, &sd->nfield_summaries, &nm, &rc);
	if (!e) {
		base_strfree(d.source);
		return rc;
	}
	e->tokens = d.tokens;
	e->transform = d.transform;
	e->source = d.source ? d.source : rank_parser_tokdup(p, &(struct rank_tok){
		RT_NAME, f->name, strlen(f->name), kw->line, kw->col, 0});
	return e->source ? 0 : STRATA_NOMEM;
}

/* ---- document inherits, rank: filter ---------------------------------------------- */

int rank_document_inherits(struct rank_parser *p)
{
	struct rank_sd *sd = p->sd;
	struct rank_tok t;
	do {
		int rc = rank_parser_expect_name(p, RANK_LEX_SCHEMA, &t, "a document name after 'inherits'");
		if (rc || !add_source(p, &sd->doc_inherits, &sd->ndoc_inherits, &t, &rc))
			return rc;
	} while (rank_parser_take_if(p, RANK_LEX_SCHEMA, ","));
	return 0;
}

int rank_field_holds_text(const struct rank_field *f)
{
	return f->vtype && (f->type == RANK_FT_ARRAY || f->type == RANK_FT_WSET) &&
	       f->vtype->elem->type == RANK_FT_STRING;
}

static int wset_setting(struct rank_parser *p, struct rank_field *f, const struct rank_tok *t)
{
	if (rank_tok_is(t, "create-if-nonexistent"))
		f->wset_flags |= RANK_WSET_CREATE_IF_NONEXISTENT;
	else if (rank_tok_is(t, "remove-if-zero"))
		f->wset_flags |= RANK_WSET_REMOVE_IF_ZERO;
	else
		return rank_parser_fail(p, t, STRATA_PARSE,
		                        "expected create-if-nonexistent or remove-if-zero, found %s",
		                        rank_tok_quote(t));
	return 0;
}

int rank_wset_settings(struct rank_parser *p, struct rank_field *f, const struct rank_tok *kw)
{
	struct rank_tok t;
	int rc;
	if (f->type != RANK_FT_WSET)
		return rank_parser_fail(p, kw, STRATA_TYPE, "field '%s' is not a weightedset", f->name);
	if (rank_parser_take_if(p, RANK_LEX_SCHEMA, ":")) {
		rank_lex_next(p->lx, RANK_LEX_SCHEMA, &t);
		return wset_setting(p, f, &t);
	}
	if ((rc = rank_parser_expect(p, "{", "after 'weightedset'")) != 0)
		return rc;
	while (rank_parser_block_item(p, NULL, &t)) {
		if ((rc = wset_setting(p, f, &t)) != 0)
			return rc;
	}
	return 0;
}
