/*
 * parse_text.c: the text-search part of the schema language, for parse.c:
 * the settings of a string field with 'indexing: index' (match, stemming,
 * normalizing, rank, index) and fieldset blocks.  Vespa's semantics:
 * match is text (tokenized, normalized, stemmed) unless it says word, exact,
 * prefix or gram (n-grams of gram-size characters, 2 unless set; a
 * query's words are split the same way, their grams a phrase); stemming is best unless 'none' (shortest and multiple are
 * taken as best: one stem per word); normalizing: none keeps accents.
 * Fieldsets are checked once the whole schema is parsed (a fieldset may
 * precede the fields it names): every field must exist and be a text field,
 * and all must agree on how they match.
 */

#include "rank_syntax.h"

static int setting_value(struct rank_parser *p, struct rank_field *f, const struct rank_tok *kw,
                         const struct rank_tok *v)
{
	if (rank_tok_is(kw, "match")) {
		if (rank_tok_is(v, "text"))
			f->match = RANK_MATCH_TEXT;
		else if (rank_tok_is(v, "word"))
			f->match = RANK_MATCH_WORD;
		else if (rank_tok_is(v, "exact"))
			f->match = RANK_MATCH_EXACT;
		else if (rank_tok_is(v, "prefix"))
			f->match = RANK_MATCH_PREFIX;
		else if (rank_tok_is(v, "cased"))
			f->cased = 1;
		else if (rank_tok_is(v, "uncased"))
			f->cased = 0;
		else if (rank_tok_is(v, "gram"))
			f->match = RANK_MATCH_GRAM;
		else if (rank_tok_is(v, "substring") || rank_tok_is(v, "suffix"))
			return rank_parser_fail(p, v, STRATA_NOT_IMPLEMENTED,
			                        "match: %s is not supported", rank_tok_quote(v));
		else
			return rank_parser_fail(p, v, STRATA_PARSE, "expected a match mode, found %s",
			                        rank_tok_quote(v));
		return 0;
	}
	if (rank_tok_is(kw, "stemming")) {
		if (rank_tok_is(v, "none"))
			f->stemming = RANK_STEM_NONE;
		else if (rank_tok_is(v, "best") || rank_tok_is(v, "shortest") ||
		         rank_tok_is(v, "multiple"))
			f->stemming = RANK_STEM_BEST;
		else
			return rank_parser_fail(p, v, STRATA_PARSE,
			                        "expected none, best, shortest or multiple, found %s",
			                        rank_tok_quote(v));
		return 0;
	}
	if (rank_tok_is(kw, "normalizing")) {
		if (!rank_tok_is(v, "none"))
			return rank_parser_fail(p, v, STRATA_PARSE, "expected 'none', found %s",
			                        rank_tok_quote(v));
		f->no_normalize = 1;
		return 0;
	}
	if (rank_tok_is(kw, "rank")) {
		if (rank_tok_is(v, "filter"))
			f->rank_filter = 1;
		else if (rank_tok_is(v, "normal"))
			f->rank_filter = 0;
		else
			return rank_parser_fail(p, v, STRATA_PARSE, "expected filter or normal, found %s",
			                        rank_tok_quote(v));
		return 0;
	}
	/* index */
	if (rank_tok_is(v, "enable-bm25"))
		f->bm25 = 1;
	else if (!rank_tok_is(v, "prefix"))
		return rank_parser_fail(p, v, STRATA_NOT_IMPLEMENTED, "index setting %s is not supported",
		                        rank_tok_quote(v));
	else
		f->match = RANK_MATCH_PREFIX;
	return 0;
}

int rank_text_setting_is(const struct rank_tok *kw)
{
	return rank_tok_is(kw, "match") || rank_tok_is(kw, "stemming") ||
	       rank_tok_is(kw, "normalizing") || rank_tok_is(kw, "rank");
}

/* gram-size: N, 1..BASE_TOKEN_GRAM_MAX. */
static int gram_size(struct rank_parser *p, struct rank_field *f, const struct rank_tok *kw)
{
	struct rank_tok c, v;
	rank_lex_next(p->lx, RANK_LEX_SCHEMA, &c);
	rank_lex_next(p->lx, RANK_LEX_SCHEMA, &v);
	if (!rank_tok_is(&c, ":") || v.kind != RT_NUM)
		return rank_parser_fail(p, &c, STRATA_PARSE, "expected ': number' after %s",
		                        rank_tok_quote(kw));
	return rank_parser_whole(p, &v, "gram-size", 1, BASE_TOKEN_GRAM_MAX, &f->gram_size);
}

/* kw: value, or kw { value ... }; inside match blocks also gram-size: N,
 * and exact-terminator: "..." (accepted, no effect). */
int rank_parse_text_setting(struct rank_parser *p, struct rank_field *f, const struct rank_tok *kw)
{
	struct rank_tok t;
	rank_lex_next(p->lx, RANK_LEX_SCHEMA, &t);
	if (rank_tok_is(&t, ":")) {
		rank_lex_next(p->lx, RANK_LEX_SCHEMA, &t);
		return setting_value(p, f, kw, &t);
	}
	if (!rank_tok_is(&t, "{"))
		return rank_parser_fail(p, &t, STRATA_PARSE, "expected ':' or '{' after %s, found %s",
		                        rank_tok_quote(kw), rank_tok_quote(&t));
	int rc;
	while ((rc = rank_parser_block_item(p, kw, &t)) > 0) {
		if (rank_tok_is(&t, "gram-size")) {
			rc = gram_size(p, f, &t);
			if (rc)
				return rc;
			continue;
		}
		if (rank_tok_is(&t, "exact-terminator") ||
		    rank_tok_is(&t, "max-length") || rank_tok_is(&t, "max-token-length")) {
			struct rank_tok c, v;
			rank_lex_next(p->lx, RANK_LEX_SCHEMA, &c);
			rank_lex_next(p->lx, RANK_LEX_SCHEMA, &v);
			if (!rank_tok_is(&c, ":") || (v.kind != RT_STR && v.kind != RT_NUM))
				return rank_parser_fail(p, &c, STRATA_PARSE,
				                        "expected ': value' after %s",
				                        rank_tok_quote(&t));
			continue;
		}
		if ((rc = setting_value(p, f, kw, &t)) != 0)
			return rc;
	}
	return rc;
}

/* fieldset name { fields: a, b, c  query-command: ...  match: ... } */
int rank_parse_fieldset(struct rank_parser *p)
{
	struct rank_sd *sd = p->sd;
	struct rank_tok nm, t;
	int rc = rank_parser_expect_name(p, RANK_LEX_SCHEMA, &nm, "a fieldset name");
	if (rc)
		return rc;
	if (rank_parser_find_name(sd->fieldsets, sd->nfieldsets, sizeof *sd->fieldsets, &nm) >= 0)
		return rank_parser_fail(p, &nm, STRATA_TYPE, "fieldset %s is declared twice",
		                        rank_tok_quote(&nm));
	struct rank_fieldset *fs =
		rank_parser_add_named(p, &sd->fieldsets, &sd->nfieldsets, sizeof *sd->fieldsets, &nm, &rc);
	if (!fs)
		return rc;
	fs->line = nm.line;
	fs->col = nm.col;
	rank_lex_next(p->lx, RANK_LEX_SCHEMA, &t);
	if (!rank_tok_is(&t, "{"))
		return rank_parser_fail(p, &t, STRATA_PARSE, "expected '{' after 'fieldset %s', found %s",
		                        fs->name, rank_tok_quote(&t));
	while (rank_parser_block_item(p, NULL, &t)) {
		if (rank_tok_is(&t, "fields")) {
			if ((rc = rank_parser_expect(p, ":", "after 'fields'")) != 0)
				return rc;
			do {
				if ((rc = rank_parser_expect_name(p, RANK_LEX_SCHEMA, &t, "a field name")) != 0)
					return rc;
				if ((rc = rank_parser_push(p, &fs->names, &fs->nfields, sizeof *fs->names)) != 0)
					return rc;
				if (!(fs->names[fs->nfields - 1] = rank_parser_tokdup(p, &t)))
					return STRATA_NOMEM;
			} while (rank_parser_take_if(p, RANK_LEX_SCHEMA, ","));
		} else if (rank_tok_is(&t, "match")) {
			/* accepted; the fields' own match settings decide */
			struct rank_field scratch = {0};
			if ((rc = rank_parse_text_setting(p, &scratch, &t)) != 0)
				return rc;
		} else if (rank_tok_is(&t, "query-command")) {
			/* accepted, no effect */
			if ((rc = rank_parser_skip_setting(p)) != 0)
				return rc;
		} else {
			return rank_parser_fail(p, &t, t.kind == RT_EOF ? STRATA_PARSE : STRATA_NOT_IMPLEMENTED,
			                        "expected 'fields:' in fieldset '%s', found %s", fs->name,
			                        rank_tok_quote(&t));
		}
	}
	return 0;
}

/* stemming: none|best|... at schema level: the default of the fields. */
int rank_parse_schema_stemming(struct rank_parser *p, const struct rank_tok *kw)
{
	struct rank_field scratch = {0};
	int rc = rank_parse_text_setting(p, &scratch, kw);
	if (!rc)
		p->sd->stemming = scratch.stemming;
	return rc;
}

static int fieldset_check(struct rank_parser *p, struct rank_fieldset *fs)
{
	struct rank_sd *sd = p->sd;
	if (!fs->nfields)
		return rank_parser_fail_at(p, fs->line, fs->col, STRATA_TYPE, "fieldset '%s' has no fields",
		                           fs->name);
	if (!(fs->fields = base_calloc((size_t)fs->nfields, sizeof *fs->fields)))
		return rank_parser_nomem(p);
	for (int i = 0; i < fs->nfields; i++) {
		int k = rank_sd_field_index(sd, fs->names[i]);
		/* A field of a parent is known once the documents are resolved. */
		if (k < 0 && !sd->inherits && !sd->ndoc_inherits)
			return rank_parser_fail_at(p, fs->line, fs->col, STRATA_TYPE,
			                           "fieldset '%s' names field '%s', which is not declared",
			                           fs->name, fs->names[i]);
		fs->fields[i] = k;
	}
	return 0;
}

int rank_fieldsets_resolve(struct rank_sd *sd, struct strata_error *err)
{
	for (int s = 0; s < sd->nfieldsets; s++) {
		struct rank_fieldset *fs = &sd->fieldsets[s];
		for (int i = 0; i < fs->nfields; i++) {
			/* inheritance may have moved the fields */
			fs->fields[i] = rank_sd_field_index(sd, fs->names[i]);
			if (fs->fields[i] < 0)
				return base_err(err, STRATA_TYPE,
				                "%s:%d:%d: fieldset '%s' names field '%s', which is not declared",
				                sd->file, fs->line, fs->col, fs->name, fs->names[i]);
		}
	}
	return 0;
}

int rank_text_fields_check(struct rank_parser *p)
{
	struct rank_sd *sd = p->sd;
	for (int i = 0; i < sd->nfields; i++) {
		struct rank_field *f = &sd->fields[i];
		if (f->stemming == RANK_STEM_DEFAULT)
			f->stemming = sd->stemming ? sd->stemming : RANK_STEM_BEST;
		if (f->match != RANK_MATCH_TEXT)
			f->stemming = RANK_STEM_NONE;
	}
	for (int i = 0; i < sd->nfieldsets; i++) {
		int rc = fieldset_check(p, &sd->fieldsets[i]);
		if (rc)
			return rc;
	}
	return 0;
}

int rank_field_token_flags(const struct rank_field *f)
{
	if (!f->index || (f->type != RANK_FT_STRING && !rank_field_holds_text(f)))
		return -1;
	int fl = f->no_normalize ? 0 : BASE_TOKEN_NORMALIZE;
	switch (f->match) {
	case RANK_MATCH_WORD:
		fl |= BASE_TOKEN_WHOLE;
		break;
	case RANK_MATCH_EXACT:
		fl = BASE_TOKEN_WHOLE;
		break;
	case RANK_MATCH_TEXT:
		if (f->stemming == RANK_STEM_BEST)
			fl |= BASE_TOKEN_STEM;
		break;
	case RANK_MATCH_GRAM:
		fl |= BASE_TOKEN_GRAMS(f->gram_size ? f->gram_size : 2);
		break;
	}
	return f->cased ? fl | BASE_TOKEN_CASED : fl;
}
