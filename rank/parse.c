/*
 * parse.c: the recursive-descent parser of the schema language.  Input: the
 * text of one .sd file; output: a struct rank_sd (rank_int.h).  Expressions
 * inside it are parsed by expr.c; schema.c then resolves inheritance and
 * compile.c types and compiles the expressions.
 *
 * The language is a subset of Vespa's.  What Vespa has and Strata lacks is
 * refused with STRATA_NOT_IMPLEMENTED and a message naming the construct
 * (the lists below: schema items, field types, field settings, indexing
 * statements, rank-profile settings); what is not Vespa at all is a
 * STRATA_PARSE error; names that clash, bad types and counts are STRATA_TYPE.
 * Every message starts with "file:line:col: " and quotes the token at fault.
 * attribute: fast-search is recorded on the field (the store keeps a value
 * dictionary for it).  Accepted and ignored because they change nothing in
 * what Strata computes: attribute: fast-access / paged / mutable (and
 * fast-search in a struct-field), onnx-model thread and device settings,
 * rank-profile thread settings, set_language in indexing (the stemmer is
 * English), and rank: filter / normal on a field; and the field settings
 * parse_field.c lists as accepted (linguistics profiles, rank-type: about,
 * id, dictionary: hash / btree / uncased, body, header, an English sorting
 * locale); raw-as-base64-in-summary: true (raw fields show as base64,
 * Vespa's default; false is refused), a uri field's type (a string here),
 * and a predicate field's index arity and dense-posting-list-threshold (they
 * shape Vespa's index; predicates here are evaluated exactly), a
 * rank-profile's target-hits-max-adjustment-factor (it tunes post-filtering,
 * which nearestNeighbor never does: post-filter-threshold is refused;
 * parse_hnsw.c), and bm25
 * rank properties of a name that is no field with a text index (props.c;
 * the loader's notice says so at deploy), and index (HNSW) on a tensor that
 * is neither of one indexed dimension nor a multi-vector field,
 * tensor(p{},x[n]) (no graph is built; nearestNeighbor on it is exact or
 * refused).  The field
 * types byte, uri, raw, reference and predicate and the import field item
 * are parsed by types.c.  The document part of the language (collection and
 * struct types, summaries) is parsed by fields.c, indexing statements by
 * indexing.c, rank profiles and onnx-model blocks by parse_profile.c, a
 * tensor's index (HNSW) block by parse_hnsw.c, all called from here.
 *
 * Invariants: the parser never reads past the text (the lexer bounds every
 * token); value nesting is bounded by RANK_PARSE_MAX_DEPTH; the partly built
 * AST is always freeable (see schema.c), so any error just frees the whole
 * struct rank_sd.  The parser state and the error helpers are shared with
 * expr.c (parser.c).
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rank_syntax.h"


/* Consume the punctuation or keyword s or fail, naming where (context). */
struct keyword {
	const char *name;
	int value;
};

/* The index in kw[0..n) of the keyword t, or -1. */
static int find_keyword(const struct rank_tok *t, const struct keyword *kw, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (rank_tok_is(t, kw[i].name))
			return (int)i;
	return -1;
}

/* t is none of the keywords of a set named what ("field type"): say whether
 * Strata lacks it (listed in unsupported), does not know it, or it is no
 * name at all (expected is "a field type"). */
static int bad_keyword(struct rank_parser *p, const struct rank_tok *t,
                       const char *const *unsupported, const char *what, const char *expected)
{
	if (rank_parser_name_in(t, unsupported))
		return rank_parser_fail(p, t, STRATA_NOT_IMPLEMENTED, "%s %s is not supported", what,
		                        rank_tok_quote(t));
	if (t->kind == RT_NAME)
		return rank_parser_fail(p, t, STRATA_TYPE, "unknown %s %s", what, rank_tok_quote(t));
	return rank_parser_fail(p, t, STRATA_PARSE, "expected %s, found %s", expected,
	                        rank_tok_quote(t));
}

/* ---- going on after an error ------------------------------------------------------ */

/* The items of a schema and of a document block: where skipping an item that
 * had no braces stops. */
static const char *const item_keywords[] = {
	"document", "rank-profile", "field", "onnx-model", "constant", "fieldset", "struct",
	"document-summary", "annotation", "import", "stemming", "index", "model",
	"raw-as-base64-in-summary", NULL,
};

static int schema_item(const struct rank_tok *t)
{
	return rank_parser_name_in(t, item_keywords);
}

/* ---- fields ----------------------------------------------------------------------- */

static const char *const unsupported_field_types[] = {
	"annotationreference", NULL,
};

/* Field settings Vespa has and Strata does not (yet); parse_field.c has
 * the others. */
static const char *const unsupported_field_settings[] = {"indexing-rewrite", NULL};

static const char *const ignored_attribute_settings[] = {
	"fast-access", "paged", "mutable", "fast-rank", "enable-bit-vectors",
	"enable-only-bit-vector", NULL,
};

static int field_type(struct rank_parser *p, struct rank_field *f)
{
	struct rank_tok t;
	rank_lex_peek(p->lx, RANK_LEX_SCHEMA, &t);
	int st = rank_field_simple_type(&t);
	if (st) {
		rank_lex_take(p->lx, &t);
		f->type = st;
		return 0;
	}
	if (rank_tok_is(&t, "tensor")) {
		struct rank_type ty;
		int rc = rank_type_lex_mapped(p->lx, &ty, p->err);
		if (rc)
			return rc;
		if (ty.rank == 0) {
			rank_type_clear(&ty);
			return rank_parser_fail(p, &t, STRATA_TYPE,
			                        "a tensor field needs at least one dimension");
		}
		f->type = RANK_FT_TENSOR;
		f->cell = ty.cell;
		f->rank = ty.rank;
		for (int d = 0; d < ty.rank; d++) {
			f->dims[d] = ty.dims[d];
			f->dim_names[d] = ty.dim_names[d]; /* moved */
		}
		return 0;
	}
	if (rank_more_type_is(&t))
		return rank_more_type(p, &t, f); /* byte, uri, raw, reference, predicate (types.c) */
	if (rank_tok_is(&t, "int8") || rank_tok_is(&t, "float16"))
		return rank_parser_fail(p, &t, STRATA_TYPE, "unknown field type %s (Vespa's field "
		                        "types have byte for 8-bit integers, and float16 only as "
		                        "bfloat16 tensor cells)", rank_tok_quote(&t));
	if (t.kind == RT_NAME && !rank_parser_name_in(&t, unsupported_field_types))
		return rank_field_vtype(p, &t, f); /* collections, structs */
	return bad_keyword(p, &t, unsupported_field_types, "field type", "a field type");
}

static int distance_metric(struct rank_parser *p, struct rank_field *f)
{
	static const struct keyword metrics[] = {
		{"euclidean", RANK_DIST_EUCLIDEAN}, {"angular", RANK_DIST_ANGULAR},
		{"dotproduct", RANK_DIST_DOTPRODUCT},
		{"prenormalized-angular", RANK_DIST_PRENORMALIZED_ANGULAR},
		{"innerproduct", RANK_DIST_PRENORMALIZED_ANGULAR}, /* its name before Vespa 8 */
		{"hamming", RANK_DIST_HAMMING}, {"geodegrees", RANK_DIST_GEODEGREES},
	};
	static const char *const unsupported[] = {NULL};
	struct rank_tok t;
	int rc = rank_parser_expect(p, ":", "after 'distance-metric'");
	if (rc)
		return rc;
	rank_lex_next(p->lx, RANK_LEX_SCHEMA, &t);
	int k = find_keyword(&t, metrics, sizeof metrics / sizeof metrics[0]);
	if (k >= 0) {
		f->distance_metric = metrics[k].value;
		return 0;
	}
	return bad_keyword(p, &t, unsupported, "distance-metric", "a distance metric");
}

static int attribute_setting(struct rank_parser *p, struct rank_field *f, const struct rank_tok *t)
{
	if (rank_tok_is(t, "distance-metric"))
		return distance_metric(p, f);
	if (rank_tok_is(t, "fast-search")) {
		f->fast_search = 1;
		return 0;
	}
	if (rank_parser_name_in(t, ignored_attribute_settings))
		return 0;
	if (t->kind == RT_NAME)
		return rank_parser_fail(p, t, STRATA_NOT_IMPLEMENTED,
		                        "attribute setting %s is not supported", rank_tok_quote(t));
	return rank_parser_fail(p, t, STRATA_PARSE, "expected an attribute setting, found %s",
	                        rank_tok_quote(t));
}

static int field_body(struct rank_parser *p, struct rank_field *f)
{
	struct rank_tok t;
	int rc;
	while (rank_parser_block_item(p, NULL, &t)) {
		if (rank_tok_is(&t, "indexing")) {
			rc = rank_indexing_parse(p, f, &t);
		} else if (rank_tok_is(&t, "attribute")) {
			struct rank_tok s;
			int block;
			rc = rank_parser_colon_or_block(p, &t, &block);
			if (!rc && !block) {
				rank_lex_next(p->lx, RANK_LEX_SCHEMA, &s);
				rc = attribute_setting(p, f, &s);
			}
			while (!rc && block) { /* attribute { setting ... } */
				rank_lex_next(p->lx, RANK_LEX_SCHEMA, &s);
				if (rank_tok_is(&s, "}"))
					break;
				rc = attribute_setting(p, f, &s);
			}
		} else if (rank_tok_is(&t, "summary")) {
			rc = rank_field_summary(p, f, &t);
		} else if (rank_tok_is(&t, "struct-field")) {
			rc = rank_struct_field_parse(p, f, &t);
		} else if (rank_tok_is(&t, "weightedset")) {
			rc = rank_wset_settings(p, f, &t);
		} else if (rank_tok_is(&t, "index")) {
			if (f->type == RANK_FT_TENSOR)
				rc = rank_parse_tensor_index(p, f, &t);
			else if (f->type == RANK_FT_PREDICATE)
				rc = rank_predicate_index(p, f, &t);
			else if (f->type == RANK_FT_STRING || rank_field_holds_text(f))
				rc = rank_parse_text_setting(p, f, &t);
			else
				rc = rank_parser_fail(p, &t, STRATA_NOT_IMPLEMENTED,
				                      "index settings are not supported");
		} else if (rank_text_setting_is(&t)) {
			rc = rank_parse_text_setting(p, f, &t);
		} else if (rank_field_setting_is(&t)) {
			rc = rank_parse_field_setting(p, f, &t);
		} else if (rank_parser_name_in(&t, unsupported_field_settings)) {
			rc = rank_parser_fail(p, &t, STRATA_NOT_IMPLEMENTED,
			                      "field setting %s is not supported", rank_tok_quote(&t));
		} else {
			rc = rank_parser_unexpected_in(p, &t, "field", f->name);
		}
		if (rc)
			return rc;
	}
	return 0;
}

/* A field of the document (outside = 0) or after it (outside = 1). */
static int field(struct rank_parser *p, int outside)
{
	struct rank_sd *sd = p->sd;
	struct rank_tok nm, t;
	int rc = rank_parser_expect_name(p, RANK_LEX_SCHEMA, &nm, "a field name");
	if (rc)
		return rc;
	int i = rank_parser_find_name(sd->fields, sd->nfields, sizeof *sd->fields, &nm);
	if (i >= 0)
		return rank_parser_fail(p, &nm, STRATA_TYPE, "field %s is declared twice (first at %d:%d)",
		                        rank_tok_quote(&nm), sd->fields[i].line, sd->fields[i].col);
	struct rank_field *f = rank_parser_add_named(p, &sd->fields, &sd->nfields, sizeof *sd->fields, &nm, &rc);
	if (!f)
		return rc;
	f->line = nm.line;
	f->col = nm.col;
	f->distance_metric = RANK_DIST_EUCLIDEAN;
	f->source = outside ? -2 : -1; /* -2: resolved by the input it reads */
	f->outside = outside;
	if ((rc = rank_parser_expect(p, "type", "after the field name")) != 0)
		return rc;
	if ((rc = field_type(p, f)) != 0)
		return rc;
	rank_lex_peek(p->lx, RANK_LEX_SCHEMA, &t);
	if (!rank_tok_is(&t, "{"))
		return rank_parser_fail(p, &t, STRATA_PARSE,
		                        "expected '{' after the type of field '%s', found %s",
		                        f->name, rank_tok_quote(&t));
	rank_lex_take(p->lx, &t);
	if ((rc = field_body(p, f)) != 0)
		return rc;
	return rank_more_field_check(p, f);
}

static const char *const unsupported_document_items[] = {"annotation", "compression", NULL};

static int document(struct rank_parser *p, const struct rank_tok *kw)
{
	struct rank_tok t;
	rank_lex_next(p->lx, RANK_LEX_SCHEMA, &t);
	if (t.kind == RT_NAME) {
		if (!rank_tok_is(&t, p->sd->name))
			return rank_parser_fail(p, &t, STRATA_TYPE,
			                        "document %s must have the schema's name '%s'",
			                        rank_tok_quote(&t), p->sd->name);
		rank_lex_next(p->lx, RANK_LEX_SCHEMA, &t);
	}
	if (rank_tok_is(&t, "inherits")) {
		int rc = rank_document_inherits(p);
		if (rc)
			return rc;
		rank_lex_next(p->lx, RANK_LEX_SCHEMA, &t);
	}
	if (!rank_tok_is(&t, "{"))
		return rank_parser_fail(p, &t, STRATA_PARSE, "expected '{' after 'document %s', found %s",
		                        p->sd->name,
		                        rank_tok_quote(&t));
	for (;;) {
		int rc;
		struct rank_lexer save = *p->lx;
		if (!rank_parser_block_item(p, NULL, &t))
			return 0;
		if (rank_tok_is(&t, "field"))
			rc = field(p, 0);
		else if (rank_tok_is(&t, "struct"))
			rc = rank_struct_parse(p, &t);
		else if (rank_parser_name_in(&t, unsupported_document_items))
			rc = rank_parser_fail(p, &t, STRATA_NOT_IMPLEMENTED, "%s is not supported",
			                      rank_tok_quote(&t));
		else if (t.kind == RT_EOF)
			rc = rank_parser_fail(p, kw, STRATA_PARSE, "the document block is never closed");
		else
			rc = rank_parser_fail(p, &t, STRATA_PARSE,
			                      "expected 'field' or '}' in the document, found %s",
			                      rank_tok_quote(&t));
		if (rc && t.kind != RT_EOF)
			rc = rank_parser_recover(p, rc, &save, schema_item);
		if (rc)
			return rc;
	}
}

/* ---- the schema ------------------------------------------------------------------------ */

static const char *const unsupported_schema_items[] = {
	"struct", "annotation", "index", "model", NULL,
};

static int schema_body(struct rank_parser *p, const struct rank_tok *open)
{
	struct rank_tok t;
	int have_doc = 0;
	for (;;) {
		int rc;
		struct rank_lexer save = *p->lx;
		if (!rank_parser_block_item(p, NULL, &t))
			break;
		if (rank_tok_is(&t, "document")) {
			if (have_doc)
				return rank_parser_fail(p, &t, STRATA_TYPE, "a schema has one document block");
			have_doc = 1;
			rc = document(p, &t);
		} else if (rank_tok_is(&t, "rank-profile")) {
			rc = rank_parse_profile(p);
		} else if (rank_tok_is(&t, "onnx-model")) {
			rc = rank_parse_model(p, &p->sd->models, &p->sd->nmodels);
		} else if (rank_tok_is(&t, "fieldset")) {
			rc = rank_parse_fieldset(p);
		} else if (rank_tok_is(&t, "stemming")) {
			rc = rank_parse_schema_stemming(p, &t);
		} else if (rank_tok_is(&t, "field")) {
			rc = field(p, 1);
		} else if (rank_tok_is(&t, "document-summary")) {
			rc = rank_summary_parse(p, &t);
		} else if (rank_tok_is(&t, "import")) {
			rc = rank_parse_import(p, &t);
		} else if (rank_tok_is(&t, "raw-as-base64-in-summary")) {
			rc = rank_parse_raw_base64(p, &t);
		} else if (rank_tok_is(&t, "constant")) {
			rc = rank_parse_schema_constant(p, &t);
		} else if (rank_parser_name_in(&t, unsupported_schema_items)) {
			rc = rank_parser_fail(p, &t, STRATA_NOT_IMPLEMENTED, "%s is not supported",
			                      rank_tok_quote(&t));
		} else if (t.kind == RT_EOF) {
			rc = rank_parser_fail(p, open, STRATA_PARSE,
			                      "schema '%s' is not closed: expected '}' before the end of file",
			                      p->sd->name);
		} else {
			rc = rank_parser_unexpected_in(p, &t, "schema", p->sd->name);
			if (rc && p->errs && t.kind != RT_EOF) {
				/* a stray token: note it and go on after it */
				save = *p->lx;
				save.off = (size_t)(t.s - save.text);
				save.line = t.line;
				save.col = t.col;
			}
		}
		if (rc && t.kind != RT_EOF)
			rc = rank_parser_recover(p, rc, &save, schema_item);
		if (rc)
			return rc;
	}
	rank_lex_next(p->lx, RANK_LEX_SCHEMA, &t);
	if (t.kind != RT_EOF)
		return rank_parser_fail(p, &t, STRATA_PARSE, "unexpected %s after the end of schema '%s'",
		                        rank_tok_quote(&t),
		                        p->sd->name);
	return 0;
}

static int schema(struct rank_parser *p)
{
	struct rank_tok t, nm;
	rank_lex_next(p->lx, RANK_LEX_SCHEMA, &t);
	if (!rank_tok_is(&t, "schema") && !rank_tok_is(&t, "search"))
		return rank_parser_fail(p, &t, STRATA_PARSE, "expected 'schema', found %s",
		                        rank_tok_quote(&t));
	int rc = rank_parser_expect_name(p, RANK_LEX_SCHEMA, &nm, "the schema name");
	if (rc)
		return rc;
	p->sd->pos = rank_parser_pos(p, &nm);
	if (!(p->sd->name = rank_parser_tokdup(p, &nm)))
		return STRATA_NOMEM;
	rank_lex_next(p->lx, RANK_LEX_SCHEMA, &t);
	if (rank_tok_is(&t, "inherits")) {
		if ((rc = rank_parser_expect_name(p, RANK_LEX_SCHEMA, &t, "a schema name")) != 0)
			return rc;
		p->sd->inherits_pos = rank_parser_pos(p, &t);
		if (!(p->sd->inherits = rank_parser_tokdup(p, &t)))
			return STRATA_NOMEM;
		rank_lex_next(p->lx, RANK_LEX_SCHEMA, &t);
	}
	if (!rank_tok_is(&t, "{"))
		return rank_parser_fail(p, &t, STRATA_PARSE, "expected '{' after 'schema %s', found %s",
		                        p->sd->name,
		                        rank_tok_quote(&t));
	return schema_body(p, &t);
}

int rank_sd_parse(const char *file, const char *text, size_t len, struct rank_sd **out,
                  struct strata_error *err)
{
	return rank_sd_parse_all(file, text, len, NULL, out, err);
}

int rank_sd_parse_all(const char *file, const char *text, size_t len,
                      struct strata_errors *errs, struct rank_sd **out,
                      struct strata_error *err)
{
	*out = NULL;
	struct rank_sd *sd = base_calloc(1, sizeof *sd);
	if (!sd)
		return base_nomem(err, "parsing %s", file);
	if (!(sd->file = base_strdup(file))) {
		base_free(sd, sizeof *sd);
		return base_nomem(err, "parsing %s", file);
	}
	/* Positions point at sd->file, which lives as long as the AST. */
	struct rank_lexer lx;
	rank_lex_init(&lx, sd->file, text, len);
	struct rank_parser p = { .lx = &lx, .err = err, .sd = sd, .errs = errs };
	int rc = schema(&p);
	if (!rc && !p.first_rc)
		rc = rank_text_fields_check(&p);
	if (rc && errs && rc != STRATA_NOMEM)
		base_errs_add(errs, err);
	if (p.first_rc && rc != STRATA_NOMEM) {
		/* the first error is the one reported */
		rc = p.first_rc;
		if (err)
			*err = p.first;
	}
	if (rc) {
		rank_sd_free(sd);
		return rc;
	}
	*out = sd;
	return 0;
}

static int profile_file_item(const struct rank_tok *t)
{
	return rank_tok_is(t, "rank-profile");
}

int rank_sd_parse_profiles(struct rank_sd *sd, const char *file, const char *text, size_t len,
                           struct strata_errors *errs, struct strata_error *err)
{
	/* Positions point at the name kept in sd, which outlives the AST's use. */
	char *name = base_strdup(file);
	if (!name || rank_vec_push(&sd->pfiles, &sd->npfiles, sizeof *sd->pfiles)) {
		base_strfree(name);
		return base_nomem(err, "parsing %s", file);
	}
	sd->pfiles[sd->npfiles - 1] = name;
	struct rank_lexer lx;
	rank_lex_init(&lx, name, text, len);
	struct rank_parser p = { .lx = &lx, .err = err, .sd = sd, .errs = errs };
	int rc = 0;
	for (;;) {
		struct rank_tok t;
		struct rank_lexer save = lx;
		rank_lex_next(&lx, RANK_LEX_SCHEMA, &t);
		if (t.kind == RT_EOF)
			break;
		if (rank_tok_is(&t, "rank-profile"))
			rc = rank_parse_profile(&p);
		else
			rc = rank_parser_fail(&p, &t, STRATA_PARSE,
			                      "a .profile file holds rank-profile blocks, found %s",
			                      rank_tok_quote(&t));
		if (rc)
			rc = rank_parser_recover(&p, rc, &save, profile_file_item);
		if (rc)
			break;
	}
	if (rc && errs && rc != STRATA_NOMEM)
		base_errs_add(errs, err);
	if (p.first_rc && rc != STRATA_NOMEM) {
		rc = p.first_rc;
		if (err)
			*err = p.first;
	}
	return rc;
}
