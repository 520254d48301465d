/*
 * parse_field.c: field settings outside text matching and summaries, for
 * parse.c: weight, bolding, sorting, linguistics, rank-type, id, dictionary,
 * body and header, and the clear refusals of alias, query-command,
 * literal-boost and summary-to.  Vespa's meaning, and what each does here:
 *
 *   weight: N          the field's weight in nativeRank (default 100): the
 *                      fields' scores are averaged weighted by it (compile.c)
 *   bolding: on|off    the field's summary shows the whole text with the
 *                      query's terms within <hi> (engine/snippet.c)
 *   sorting { order: ascending|descending  function: uca|lowercase|raw
 *             strength: primary|...  locale: en... }, or sorting: descending
 *                      how order by sorts the field: the direction when the
 *                      query gives none, and the comparison of strings
 *                      (raw: bytes; lowercase: lowercased; uca: without case
 *                      and accents, then by the bytes unless strength is
 *                      primary).  Locales other than English ones change a
 *                      collation's order in ways Strata does not know: refused.
 *   linguistics { profile: p } or { profile { index: p  search: q } }
 *                      accepted: profiles name analyzers of a Lucene
 *                      linguistics component, and Strata has one linguistics
 *                      (base/tokenize.c), used for every field
 *   rank-type: about   accepted (the default tables nativeRank uses); the other
 *                      rank types change those tables and are refused
 *   id: N              accepted: a field's number in Vespa's serialized
 *                      documents, which Strata does not use
 *   dictionary: hash|btree|uncased  accepted: the attribute dictionary's
 *                      structure, not what matches; cased is refused
 *   body, header       accepted: old document-layout hints without effect
 *   alias, query-command, literal-boost, summary-to
 *                      refused with STRATA_NOT_IMPLEMENTED and their position.
 *
 * And a rank-profile's settings of one field (rank_parse_profile_rank):
 *
 *   rank f { element-gap: N|infinity }
 *                      the positions between the elements of a collection
 *                      field f for the features that measure distances
 *                      across elements (nativeProximity): kept as the rank
 *                      property "elementGap(f)" (-1 for infinity), which
 *                      props.c resolves and inheritance merges by field;
 *                      rank f: filter and filter-threshold are refused.
 */
#include <stdio.h>
#include <string.h>

#include "rank_syntax.h"

static const char *const field_settings[] = {
	"weight", "bolding", "sorting", "linguistics", "rank-type", "id", "dictionary", "body",
	"header", "alias", "query-command", "literal-boost", "summary-to", NULL,
};

int rank_field_setting_is(const struct rank_tok *kw)
{
	return rank_parser_name_in(kw, field_settings);
}

/* The word after "name:" (a name, or a number for id). */
static int word_value(struct rank_parser *p, struct rank_tok *t)
{
	int rc = rank_parser_expect(p, ":", "after the setting name");
	if (rc)
		return rc;
	rank_lex_next(p->lx, RANK_LEX_SCHEMA, t);
	if (t->kind != RT_NAME && t->kind != RT_NUM && t->kind != RT_STR)
		return rank_parser_fail(p, t, STRATA_PARSE, "expected a value, found %s",
		                        rank_tok_quote(t));
	return 0;
}

/* One item of a sorting block, or the value of "sorting:" (kw the word). */
static int sorting_item(struct rank_parser *p, struct rank_field *f, const struct rank_tok *t)
{
	struct rank_tok v;
	int rc;
	if (rank_tok_is(t, "ascending") || rank_tok_is(t, "descending")) {
		f->sort_desc = rank_tok_is(t, "descending");
		return 0;
	}
	if (rank_tok_is(t, "order")) {
		if ((rc = word_value(p, &v)) != 0)
			return rc;
		if (!rank_tok_is(&v, "ascending") && !rank_tok_is(&v, "descending"))
			return rank_parser_fail(p, &v, STRATA_PARSE,
			                        "expected ascending or descending, found %s",
			                        rank_tok_quote(&v));
		f->sort_desc = rank_tok_is(&v, "descending");
		return 0;
	}
	if (rank_tok_is(t, "function")) {
		if ((rc = word_value(p, &v)) != 0)
			return rc;
		if (rank_tok_is(&v, "raw"))
			f->sort_function = RANK_SORT_RAW;
		else if (rank_tok_is(&v, "lowercase"))
			f->sort_function = RANK_SORT_LOWERCASE;
		else if (rank_tok_is(&v, "uca"))
			f->sort_function = RANK_SORT_UCA;
		else
			return rank_parser_fail(p, &v, STRATA_PARSE,
			                        "expected uca, lowercase or raw, found %s",
			                        rank_tok_quote(&v));
		return 0;
	}
	if (rank_tok_is(t, "strength")) {
		static const char *const strengths[] = {
			"primary", "secondary", "tertiary", "quaternary", "identical", NULL,
		};
		if ((rc = word_value(p, &v)) != 0)
			return rc;
		if (!rank_parser_name_in(&v, strengths))
			return rank_parser_fail(p, &v, STRATA_PARSE,
			                        "expected primary, secondary, tertiary, quaternary or "
			                        "identical, found %s", rank_tok_quote(&v));
		f->sort_primary = rank_tok_is(&v, "primary");
		return 0;
	}
	if (rank_tok_is(t, "locale")) {
		if ((rc = word_value(p, &v)) != 0)
			return rc;
		if (v.len < 2 || (strncmp(v.s, "en", 2) != 0 && strncmp(v.s, "\"en", 3) != 0))
			return rank_parser_fail(p, &v, STRATA_NOT_IMPLEMENTED,
			                        "sorting locale %s is not supported (only English "
			                        "locales: the collation here is the same for all of them)",
			                        rank_tok_quote(&v));
		return 0;
	}
	return rank_parser_fail(p, t, STRATA_PARSE,
	                        "expected order, function, strength, locale, ascending or "
	                        "descending in sorting, found %s", rank_tok_quote(t));
}

static int sorting(struct rank_parser *p, struct rank_field *f, const struct rank_tok *kw)
{
	struct rank_tok t;
	int block, rc = rank_parser_colon_or_block(p, kw, &block);
	if (rc)
		return rc;
	if (f->type != RANK_FT_STRING && (f->type < RANK_FT_INT || f->type > RANK_FT_BOOL))
		return rank_parser_fail(p, kw, STRATA_TYPE,
		                        "sorting on field '%s', which holds no single number or string",
		                        f->name);
	if (!block) {
		rank_lex_next(p->lx, RANK_LEX_SCHEMA, &t);
		return sorting_item(p, f, &t);
	}
	while ((rc = rank_parser_block_item(p, kw, &t)) > 0)
		if ((rc = sorting_item(p, f, &t)) != 0)
			return rc;
	return rc;
}

/* linguistics { profile: p } or linguistics { profile { index: p  search: q } }. */
static int linguistics(struct rank_parser *p, const struct rank_tok *kw)
{
	struct rank_tok t, v;
	int rc = rank_parser_expect(p, "{", "after 'linguistics'");
	for (; !rc;) {
		if (!rank_parser_block_item(p, NULL, &t))
			return 0;
		if (!rank_tok_is(&t, "profile"))
			return rank_parser_fail(p, &t, STRATA_PARSE,
			                        "expected 'profile' or '}' in linguistics, found %s",
			                        rank_tok_quote(&t));
		int block;
		if ((rc = rank_parser_colon_or_block(p, &t, &block)) != 0)
			return rc;
		if (!block) {
			rc = rank_parser_expect_name(p, RANK_LEX_SCHEMA, &v, "a linguistics profile name");
			continue;
		}
		for (;;) { /* profile { index: p  search: q } */
			if (!rank_parser_block_item(p, NULL, &t))
				break;
			if (!rank_tok_is(&t, "index") && !rank_tok_is(&t, "search"))
				return rank_parser_fail(p, t.kind == RT_EOF ? kw : &t, STRATA_PARSE,
				                        "expected 'index', 'search' or '}' in a linguistics "
				                        "profile, found %s", rank_tok_quote(&t));
			if ((rc = rank_parser_expect(p, ":", "after the profile's side")) != 0 ||
			    (rc = rank_parser_expect_name(p, RANK_LEX_SCHEMA, &v,
			                                  "a linguistics profile name")) != 0)
				return rc;
		}
	}
	return rc;
}

/* dictionary: x, or dictionary { x y }. */
static int dictionary(struct rank_parser *p, const struct rank_tok *kw)
{
	struct rank_tok t;
	int block, rc = rank_parser_colon_or_block(p, kw, &block);
	while (!rc) {
		rank_lex_next(p->lx, RANK_LEX_SCHEMA, &t);
		if (block && rank_tok_is(&t, "}"))
			return 0;
		if (rank_tok_is(&t, "cased"))
			return rank_parser_fail(p, &t, STRATA_NOT_IMPLEMENTED,
			                        "dictionary: cased is not supported (attributes match "
			                        "uncased)");
		if (!rank_tok_is(&t, "hash") && !rank_tok_is(&t, "btree") && !rank_tok_is(&t, "uncased"))
			return rank_parser_fail(p, &t, STRATA_PARSE,
			                        "expected hash, btree, cased or uncased, found %s",
			                        rank_tok_quote(&t));
		if (!block)
			return 0;
	}
	return rc;
}

int rank_parse_field_setting(struct rank_parser *p, struct rank_field *f, const struct rank_tok *kw)
{
	struct rank_tok t;
	int rc;
	if (rank_tok_is(kw, "weight"))
		return rank_parser_whole_setting(p, kw, 1, 1000000, &f->weight);
	if (rank_tok_is(kw, "bolding")) {
		if ((rc = word_value(p, &t)) != 0)
			return rc;
		if (!rank_tok_is(&t, "on") && !rank_tok_is(&t, "off") && !rank_tok_is(&t, "true") &&
		    !rank_tok_is(&t, "false"))
			return rank_parser_fail(p, &t, STRATA_PARSE, "expected on or off, found %s",
			                        rank_tok_quote(&t));
		int on = rank_tok_is(&t, "on") || rank_tok_is(&t, "true");
		if (on && f->type != RANK_FT_STRING &&
		    !(f->type == RANK_FT_ARRAY && rank_field_holds_text(f)))
			return rank_parser_fail(p, kw, STRATA_NOT_IMPLEMENTED,
			                        "bolding on field '%s' is not supported (only on strings "
			                        "and arrays of strings)", f->name);
		if (on)
			f->summary_transform = RANK_SUMMARY_BOLDING;
		else if (f->summary_transform == RANK_SUMMARY_BOLDING)
			f->summary_transform = RANK_SUMMARY_VALUE;
		return 0;
	}
	if (rank_tok_is(kw, "sorting"))
		return sorting(p, f, kw);
	if (rank_tok_is(kw, "linguistics"))
		return linguistics(p, kw);
	if (rank_tok_is(kw, "rank-type")) {
		if ((rc = word_value(p, &t)) != 0)
			return rc;
		if (!rank_tok_is(&t, "about"))
			return rank_parser_fail(p, &t, STRATA_NOT_IMPLEMENTED,
			                        "rank-type %s is not supported (only about, the default "
			                        "tables of nativeRank)", rank_tok_quote(&t));
		return 0;
	}
	if (rank_tok_is(kw, "id"))
		return word_value(p, &t);
	if (rank_tok_is(kw, "dictionary"))
		return dictionary(p, kw);
	if (rank_tok_is(kw, "body") || rank_tok_is(kw, "header"))
		return 0;
	if (rank_tok_is(kw, "summary-to"))
		return rank_parser_fail(p, kw, STRATA_NOT_IMPLEMENTED,
		                        "field setting 'summary-to' is not supported; name the field "
		                        "in a document-summary instead");
	return rank_parser_fail(p, kw, STRATA_NOT_IMPLEMENTED, "field setting %s is not supported",
	                        rank_tok_quote(kw));
}

#define ELEMENT_GAP_MAX 1000000 /* a gap beyond any distance a feature scores */

int rank_parse_profile_rank(struct rank_parser *p, struct rank_profile_decl *pr,
                            const struct rank_tok *kw)
{
	struct rank_tok nm, t, v;
	int block, rc = rank_parser_expect_name(p, RANK_LEX_SCHEMA, &nm, "a field name after 'rank'");
	if (rc || (rc = rank_parser_colon_or_block(p, &nm, &block)) != 0)
		return rc;
	if (!block) {
		rank_lex_next(p->lx, RANK_LEX_SCHEMA, &t);
		if (rank_tok_is(&t, "filter"))
			return rank_parser_fail(p, &t, STRATA_NOT_IMPLEMENTED,
			                        "rank %.*s: filter in a rank-profile is not supported",
			                        (int)nm.len, nm.s);
		return rank_parser_fail(p, &t, STRATA_PARSE, "expected filter or '{' after 'rank %.*s', "
		                        "found %s", (int)nm.len, nm.s, rank_tok_quote(&t));
	}
	while ((rc = rank_parser_block_item(p, kw, &t)) > 0) {
		if (rank_tok_is(&t, "filter-threshold"))
			return rank_parser_fail(p, &t, STRATA_NOT_IMPLEMENTED,
			                        "filter-threshold in 'rank %.*s' is not supported",
			                        (int)nm.len, nm.s);
		if (!rank_tok_is(&t, "element-gap"))
			return rank_parser_fail(p, &t, STRATA_PARSE,
			                        "expected element-gap or '}' in 'rank %.*s', found %s",
			                        (int)nm.len, nm.s, rank_tok_quote(&t));
		int gap = -1;
		if ((rc = rank_parser_expect(p, ":", "after 'element-gap'")) != 0)
			return rc;
		rank_lex_next(p->lx, RANK_LEX_SCHEMA, &v);
		if (v.kind == RT_NUM) {
			if ((rc = rank_parser_whole(p, &v, "element-gap", 0, ELEMENT_GAP_MAX, &gap)) != 0)
				return rc;
		} else if (!rank_tok_is(&v, "infinity")) {
			return rank_parser_fail(p, &v, STRATA_PARSE,
			                        "expected a whole number or infinity after 'element-gap', "
			                        "found %s", rank_tok_quote(&v));
		}
		char name[RANK_ELEMENT_GAP_KEY_MAX];
		if (nm.len > sizeof name - 16)
			return rank_parser_fail(p, &nm, STRATA_LIMIT, "field name too long");
		snprintf(name, sizeof name, "elementGap(%.*s)", (int)nm.len, nm.s);
		for (int i = 0; i < pr->nfprops; i++)
			if (strcmp(pr->fprops[i].name, name) == 0)
				return rank_parser_fail(p, &t, STRATA_TYPE,
				                        "element-gap of '%.*s' is given twice", (int)nm.len,
				                        nm.s);
		if ((rc = rank_parser_push(p, &pr->fprops, &pr->nfprops, sizeof *pr->fprops)) != 0)
			return rc;
		struct rank_fprop_decl *d = &pr->fprops[pr->nfprops - 1];
		d->value = gap;
		d->pos = rank_parser_pos(p, &nm);
		if (!(d->name = base_strdup(name)))
			return rank_parser_nomem(p);
	}
	return rc;
}
