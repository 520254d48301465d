/*
 * parser.c: the state and the small helpers that the two recursive-descent
 * parsers of rank/ share: parse.c (the schema language) and expr.c (ranking
 * expressions, which parse.c calls into for every expression it meets).
 * Both pull tokens from lex.c and report errors the same way, so a message
 * reads alike whichever grammar found the fault.
 *
 * Invariants: every error carries "file:line:col: " of the token at fault
 * (or, for memory and size limits, of the lexer's current position); the
 * helpers never consume a token they do not report on; nesting through
 * rank_parser_enter() is bounded by RANK_PARSE_MAX_DEPTH in both grammars.
 */
#include <stdio.h>
#include <string.h>

#include "rank_syntax.h"

int rank_parser_fail(struct rank_parser *p, const struct rank_tok *t, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = rank_lex_verr(p->lx, t->line, t->col, p->err, code, fmt, ap);
	va_end(ap);
	return rc;
}

int rank_parser_fail_at(struct rank_parser *p, int line, int col, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = rank_lex_verr(p->lx, line, col, p->err, code, fmt, ap);
	va_end(ap);
	return rc;
}

int rank_parser_nomem(struct rank_parser *p)
{
	return base_nomem(p->err, "parsing %s:%d:%d", p->lx->file, p->lx->line, p->lx->col);
}

int rank_parser_push(struct rank_parser *p, void *arrp, int *n, size_t elem)
{
	int rc = rank_vec_push(arrp, n, elem);
	if (rc == STRATA_LIMIT)
		return base_err(p->err, rc, "%s:%d:%d: too many elements", p->lx->file, p->lx->line,
		                p->lx->col);
	return rc ? rank_parser_nomem(p) : 0;
}

/* Two buffers take turns, so one message may quote two tokens; each quote is
 * formatted into the message before the next call reuses its buffer. */
const char *rank_tok_quote(const struct rank_tok *t)
{
	static _Thread_local char buf[2][64];
	static _Thread_local int turn;
	turn ^= 1;
	return rank_tok_show(t, buf[turn], sizeof buf[turn]);
}

char *rank_parser_tokdup(struct rank_parser *p, const struct rank_tok *t)
{
	char *s = base_strndup(t->s, t->len);
	if (!s)
		rank_parser_nomem(p);
	return s;
}

struct rank_pos rank_parser_pos(const struct rank_parser *p, const struct rank_tok *t)
{
	struct rank_pos ps = {p->lx->file, t->line, t->col};
	return ps;
}

int rank_parser_expect_name(struct rank_parser *p, int mode, struct rank_tok *t, const char *what)
{
	rank_lex_next(p->lx, mode, t);
	if (t->kind != RT_NAME)
		return rank_parser_fail(p, t, STRATA_PARSE, "expected %s, found %s", what,
		                        rank_tok_quote(t));
	return 0;
}

int rank_parser_enter(struct rank_parser *p, const struct rank_tok *t)
{
	if (++p->depth > RANK_PARSE_MAX_DEPTH)
		return rank_parser_fail(p, t, STRATA_LIMIT, "expression nested more than %d deep",
		                        RANK_PARSE_MAX_DEPTH);
	return 0;
}

int rank_parser_expect(struct rank_parser *p, const char *s, const char *context)
{
	struct rank_tok t;
	rank_lex_peek(p->lx, RANK_LEX_SCHEMA, &t);
	if (!rank_tok_is(&t, s))
		return rank_parser_fail(p, &t, STRATA_PARSE, "expected '%s' %s, found %s", s, context,
		                        rank_tok_quote(&t));
	rank_lex_take(p->lx, &t);
	return 0;
}

int rank_parser_take_if(struct rank_parser *p, int mode, const char *s)
{
	struct rank_tok t;
	rank_lex_peek(p->lx, mode, &t);
	if (!rank_tok_is(&t, s))
		return 0;
	rank_lex_take(p->lx, &t);
	return 1;
}

/* ---- helpers of the schema parsers (parse.c, parse_profile.c, fields.c) ---- */

int rank_parser_name_in(const struct rank_tok *t, const char *const *list)
{
	for (int i = 0; list[i]; i++)
		if (rank_tok_is(t, list[i]))
			return 1;
	return 0;
}

/* The declarations of the AST (fields, models, profiles, functions, inputs,
 * constants, struct fields, summaries and their fields, fieldsets) all start
 * with their name, and so does a parameter, a bare
 * char *: one lookup and one append serve every kind.  The name pointer is
 * copied with memcpy because its declared type is char * in some structs and
 * const char * in struct rank_field. */
_Static_assert(offsetof(struct rank_field, name) == 0, "name first");
_Static_assert(offsetof(struct rank_model_decl, name) == 0, "name first");
_Static_assert(offsetof(struct rank_profile_decl, name) == 0, "name first");
_Static_assert(offsetof(struct rank_function_decl, name) == 0, "name first");
_Static_assert(offsetof(struct rank_input_decl, name) == 0, "name first");
_Static_assert(offsetof(struct rank_constant_decl, name) == 0, "name first");
_Static_assert(offsetof(struct rank_struct_field, name) == 0, "name first");
_Static_assert(offsetof(struct rank_source_decl, name) == 0, "name first");
_Static_assert(offsetof(struct rank_summary_decl, name) == 0, "name first");
_Static_assert(offsetof(struct rank_fieldset, name) == 0, "name first");

/* The index of the element of arr (n elements of elem bytes) named like the
 * name token nm, or -1. */
int rank_parser_find_name(const void *arr, int n, size_t elem, const struct rank_tok *nm)
{
	for (int i = 0; i < n; i++) {
		const char *name;
		memcpy(&name, (const char *)arr + (size_t)i * elem, sizeof name);
		if (rank_tok_is(nm, name))
			return i;
	}
	return -1;
}

/* Append a zeroed element named nm to the array at arrp; NULL, with *rc
 * set, when that fails. */
void *rank_parser_add_named(struct rank_parser *p, void *arrp, int *n, size_t elem,
                       const struct rank_tok *nm, int *rc)
{
	if ((*rc = rank_parser_push(p, arrp, n, elem)) != 0)
		return NULL;
	char *e;
	memcpy(&e, arrp, sizeof e);
	e += (size_t)(*n - 1) * elem;
	char *name = rank_parser_tokdup(p, nm);
	if (!name) {
		*rc = STRATA_NOMEM;
		return NULL;
	}
	memcpy(e, &name, sizeof name);
	return e;
}

/* After the keyword kw: ':' (*block = 0) or '{' (*block = 1). */
int rank_parser_colon_or_block(struct rank_parser *p, const struct rank_tok *kw, int *block)
{
	struct rank_tok t;
	rank_lex_next(p->lx, RANK_LEX_SCHEMA, &t);
	*block = rank_tok_is(&t, "{");
	if (!*block && !rank_tok_is(&t, ":"))
		return rank_parser_fail(p, &t, STRATA_PARSE, "expected ':' or '{' after %s, found %s",
		                        rank_tok_quote(kw), rank_tok_quote(&t));
	return 0;
}

/* Inside a block whose '{' is taken: the next token into t; 1 when it begins
 * an item, 0 when it is the closing '}'.  With kw (the keyword the block
 * belongs to), the end of the file is the error "the block of 'kw' is never
 * closed"; without, the caller reports it as the item it expected. */
int rank_parser_block_item(struct rank_parser *p, const struct rank_tok *kw, struct rank_tok *t)
{
	rank_lex_next(p->lx, RANK_LEX_SCHEMA, t);
	if (rank_tok_is(t, "}"))
		return 0;
	if (kw && t->kind == RT_EOF)
		return rank_parser_fail(p, kw, STRATA_PARSE, "the block of %s is never closed",
		                        rank_tok_quote(kw));
	return 1;
}

/* The value of a setting Strata accepts and ignores: ": word". */
int rank_parser_skip_setting(struct rank_parser *p)
{
	struct rank_tok w;
	int rc = rank_parser_expect(p, ":", "after the setting name");
	if (rc)
		return rc;
	rank_lex_word(p->lx, &w);
	rank_lex_take(p->lx, &w);
	return 0;
}

/* The number token v as a whole number from lo to hi; what names the
 * setting in the message. */
int rank_parser_whole(struct rank_parser *p, const struct rank_tok *v, const char *what, int lo,
                      int hi, int *out)
{
	double d;
	int rc = rank_tok_number(p->lx, v, &d, p->err);
	if (rc)
		return rc;
	if (d < lo || d > hi || d != (double)(int)d)
		return rank_parser_fail(p, v, STRATA_TYPE, "%s must be a whole number from %d to %d, found %s",
		                        what, lo, hi, rank_tok_quote(v));
	*out = (int)d;
	return 0;
}

/* ": N" after the setting kw, N a whole number from lo to hi. */
int rank_parser_whole_setting(struct rank_parser *p, const struct rank_tok *kw, int lo, int hi,
                              int *out)
{
	struct rank_tok t;
	int rc = rank_parser_expect(p, ":", "after the setting name");
	if (rc)
		return rc;
	rank_lex_next(p->lx, RANK_LEX_SCHEMA, &t);
	if (t.kind != RT_NUM)
		return rank_parser_fail(p, &t, STRATA_PARSE, "expected a number after %s, found %s",
		                        rank_tok_quote(kw), rank_tok_quote(&t));
	return rank_parser_whole(p, &t, rank_tok_quote(kw), lo, hi, out);
}

/* t does not belong in the block of the what (a field, a rank-profile, a
 * schema) called name. */
int rank_parser_unexpected_in(struct rank_parser *p, const struct rank_tok *t, const char *what,
                         const char *name)
{
	if (t->kind == RT_EOF)
		return rank_parser_fail(p, t, STRATA_PARSE,
		                        "%s '%s' is not closed: expected '}', found end of file", what, name);
	return rank_parser_fail(p, t, STRATA_PARSE, "unexpected %s in %s '%s'", rank_tok_quote(t), what,
	                        name);
}

/* A keyword of a closed set (field types, distance metrics). */

/* After error rc in the item that begins at save: when the parser lists
 * errors, note this one and skip the item (to the '}' closing its first
 * '{', or to the enclosing '}' or a token that starts another item
 * (is_item) when no '{' comes first; braces inside parentheses, as in
 * tensor(x{}), do not count) and return 0 to go on; else return rc. */
int rank_parser_recover(struct rank_parser *p, int rc, const struct rank_lexer *save,
                   int (*is_item)(const struct rank_tok *))
{
	if (!p->errs || rc == STRATA_NOMEM || p->errs->n >= STRATA_MAX_ERRORS)
		return rc;
	base_errs_add(p->errs, p->err);
	if (!p->first_rc) {
		p->first_rc = rc;
		p->first = *p->err;
	}
	*p->lx = *save;
	p->depth = 0;
	struct rank_tok t;
	rank_lex_next(p->lx, RANK_LEX_SCHEMA, &t); /* the item's keyword */
	/* inner: braces opened inside parentheses; a '}' beyond them means the
	 * parentheses were never closed (the error itself, often). */
	for (int depth = 0, opened = 0, parens = 0, inner = 0;;) {
		rank_lex_peek(p->lx, RANK_LEX_SCHEMA, &t);
		if (t.kind == RT_EOF)
			return 0;
		int brace = rank_tok_is(&t, "}");
		if (brace && parens && !inner)
			parens = 0;
		if (!opened && !parens && (brace || is_item(&t)))
			return 0;
		rank_lex_take(p->lx, &t);
		if (rank_tok_is(&t, "("))
			parens++;
		else if (rank_tok_is(&t, ")") && parens > 0)
			parens--, inner = parens ? inner : 0;
		else if (parens && rank_tok_is(&t, "{"))
			inner++;
		else if (parens && brace)
			inner--;
		else if (rank_tok_is(&t, "{"))
			depth++, opened = 1;
		else if (brace && --depth == 0)
			return 0;
	}
}
