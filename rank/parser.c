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
