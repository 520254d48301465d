/*
 * lex.c: the tokenizer of the schema language and of ranking expressions.
 *
 * parse.c and type.c pull tokens from here; nothing is buffered.  A token is
 * scanned by rank_lex_peek() from the lexer's current offset without moving
 * it, and consumed by rank_lex_take().  Peeking is cheap and has no side
 * effects, which lets the parser re-scan the same bytes in the other mode:
 * in RANK_LEX_SCHEMA names may contain '-' (rank-profile, first-phase,
 * prenormalized-angular), in RANK_LEX_EXPR a '-' is always the minus
 * operator.
 *
 * Invariants: line and col always describe the byte at off (1-based; a tab
 * counts as one column); whitespace and '#' comments are skipped before every
 * token; a token never extends past the text's end, and a string token that
 * runs into the end is RT_BAD rather than a read past it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rank_syntax.h"

void rank_lex_init(struct rank_lexer *lx, const char *file, const char *text, size_t len)
{
	lx->file = file;
	lx->text = text;
	lx->len = len;
	lx->off = 0;
	lx->line = 1;
	lx->col = 1;
}

static int is_alpha(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int is_digit(int c)
{
	return c >= '0' && c <= '9';
}

/* Advance (off, line, col) over n bytes of text. */
static void advance(const char *text, size_t *off, int *line, int *col, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (text[*off] == '\n') {
			(*line)++;
			*col = 1;
		} else {
			(*col)++;
		}
		(*off)++;
	}
}

/* Length of a number at s (at most n bytes): digits, an optional fraction and
 * an optional exponent; ".5" is a number, "5." too.  0 if none. */
static size_t number_len(const char *s, size_t n)
{
	size_t i = 0;
	int digits = 0;
	while (i < n && is_digit(s[i])) {
		i++;
		digits = 1;
	}
	if (i < n && s[i] == '.') {
		size_t j = i + 1;
		int frac = 0;
		while (j < n && is_digit(s[j])) {
			j++;
			frac = 1;
		}
		if (!digits && !frac)
			return 0;
		/* "5." followed by a name is a call suffix in no case we know of,
		 * but "onnx(m).out" never reaches here: only digits start numbers. */
		i = j;
		digits = 1;
	}
	if (!digits)
		return 0;
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		size_t j = i + 1;
		if (j < n && (s[j] == '+' || s[j] == '-'))
			j++;
		if (j < n && is_digit(s[j])) {
			while (j < n && is_digit(s[j]))
				j++;
			i = j;
		}
	}
	return i;
}

static const char *const two_char_ops[] = {"==", "!=", "<=", ">=", "&&", "||", "~=", NULL};

void rank_lex_peek(const struct rank_lexer *lx, int mode, struct rank_tok *t)
{
	const char *s = lx->text;
	size_t n = lx->len, off = lx->off;
	int line = lx->line, col = lx->col;
	int nl = 0;

	/* Skip blanks and comments. */
	while (off < n) {
		char c = s[off];
		if (c == '\n') {
			nl = 1;
			advance(s, &off, &line, &col, 1);
		} else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
			advance(s, &off, &line, &col, 1);
		} else if (c == '#') {
			while (off < n && s[off] != '\n')
				advance(s, &off, &line, &col, 1);
		} else {
			break;
		}
	}
	memset(t, 0, sizeof *t);
	t->s = s + off;
	t->line = line;
	t->col = col;
	t->nl_before = nl;
	if (off >= n || s[off] == 0) {
		t->kind = RT_EOF;
		return;
	}
	unsigned char c = (unsigned char)s[off];
	size_t rest = n - off;
	if (is_alpha(c)) {
		size_t i = 1;
		while (i < rest) {
			unsigned char d = (unsigned char)s[off + i];
			if (is_alpha(d) || is_digit(d)) {
				i++;
			} else if (d == '-' && mode == RANK_LEX_SCHEMA && i + 1 < rest &&
			           (is_alpha((unsigned char)s[off + i + 1]) ||
			            is_digit((unsigned char)s[off + i + 1]))) {
				/* A hyphen joins two name parts only when a name part
				 * follows, so "a-" still ends the name at 'a'. */
				i++;
			} else {
				break;
			}
		}
		t->kind = RT_NAME;
		t->len = i;
		return;
	}
	size_t nlen = (is_digit(c) || c == '.') ? number_len(s + off, rest) : 0;
	if (nlen) {
		t->kind = RT_NUM;
		t->len = nlen;
		return;
	}
	if (c == '"' || c == '\'') {
		size_t i = 1;
		while (i < rest && s[off + i] != (char)c && s[off + i] != '\n' && s[off + i] != 0) {
			if (s[off + i] == '\\' && i + 1 < rest && s[off + i + 1] != '\n')
				i++;
			i++;
		}
		if (i >= rest || s[off + i] != (char)c) {
			t->kind = RT_BAD; /* unterminated string */
			t->len = i;
			return;
		}
		t->kind = RT_STR;
		t->len = i + 1;
		return;
	}
	if (rest >= 2) {
		for (int k = 0; two_char_ops[k]; k++) {
			if (s[off] == two_char_ops[k][0] && s[off + 1] == two_char_ops[k][1]) {
				t->kind = RT_PUNCT;
				t->len = 2;
				return;
			}
		}
	}
	if (c < 0x20 || c >= 0x7f) {
		t->kind = RT_BAD;
		t->len = 1;
		return;
	}
	t->kind = RT_PUNCT;
	t->len = 1;
}

void rank_lex_take(struct rank_lexer *lx, const struct rank_tok *t)
{
	size_t end = (size_t)(t->s - lx->text) + t->len;
	BASE_ASSERT(end <= lx->len && end >= lx->off);
	advance(lx->text, &lx->off, &lx->line, &lx->col, end - lx->off);
}

void rank_lex_next(struct rank_lexer *lx, int mode, struct rank_tok *t)
{
	rank_lex_peek(lx, mode, t);
	rank_lex_take(lx, t);
}

int rank_tok_is(const struct rank_tok *t, const char *s)
{
	size_t n = strlen(s);
	return (t->kind == RT_NAME || t->kind == RT_PUNCT) && t->len == n && memcmp(t->s, s, n) == 0;
}

void rank_lex_word(const struct rank_lexer *lx, struct rank_tok *t)
{
	const char *s = lx->text;
	size_t n = lx->len, off = lx->off;
	int line = lx->line, col = lx->col;
	while (off < n && (s[off] == ' ' || s[off] == '\t' || s[off] == '\r'))
		advance(s, &off, &line, &col, 1);
	memset(t, 0, sizeof *t);
	t->s = s + off;
	t->line = line;
	t->col = col;
	size_t i = off;
	while (i < n && s[i] != 0 && s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n' &&
	       s[i] != '}' && s[i] != '#')
		i++;
	t->len = i - off;
	t->kind = t->len ? RT_NAME : (off >= n || s[off] == 0 ? RT_EOF : RT_BAD);
}

const char *rank_tok_show(const struct rank_tok *t, char *buf, size_t n)
{
	if (t->kind == RT_EOF) {
		snprintf(buf, n, "end of file");
		return buf;
	}
	size_t len = t->len;
	int cut = 0;
	if (len > 40) {
		len = 40;
		cut = 1;
	}
	if (t->kind == RT_BAD && len == 1 &&
	    ((unsigned char)t->s[0] < 0x20 || (unsigned char)t->s[0] >= 0x7f)) {
		snprintf(buf, n, "byte 0x%02x", (unsigned char)t->s[0]);
		return buf;
	}
	/* Keep the quote readable: a line break inside is shown as a space. */
	char tmp[48];
	for (size_t i = 0; i < len; i++)
		tmp[i] = (t->s[i] == '\n' || t->s[i] == '\r' || t->s[i] == '\t') ? ' ' : t->s[i];
	tmp[len] = 0;
	snprintf(buf, n, "'%s%s'", tmp, cut ? "..." : "");
	return buf;
}

int rank_lex_verr(const struct rank_lexer *lx, int line, int col, struct strata_error *err, int code,
                  const char *fmt, va_list ap)
{
	if (!err)
		return code;
	char msg[STRATA_ERRMSG_MAX];
	vsnprintf(msg, sizeof msg, fmt, ap);
	return base_err(err, code, "%s:%d:%d: %s", lx->file, line, col, msg);
}

int rank_lex_err(const struct rank_lexer *lx, const struct rank_tok *t, struct strata_error *err,
                 int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = rank_lex_verr(lx, t->line, t->col, err, code, fmt, ap);
	va_end(ap);
	return rc;
}

int rank_tok_number(const struct rank_lexer *lx, const struct rank_tok *t, double *v,
                    struct strata_error *err)
{
	char buf[80], b[64];
	if (t->len >= sizeof buf)
		return rank_lex_err(lx, t, err, STRATA_PARSE, "number %s is too long",
		                    rank_tok_show(t, b, sizeof b));
	memcpy(buf, t->s, t->len);
	buf[t->len] = 0;
	char *end;
	*v = strtod(buf, &end);
	if (*end || isinf(*v))
		return rank_lex_err(lx, t, err, STRATA_PARSE, "number %s is out of range",
		                    rank_tok_show(t, b, sizeof b));
	return 0;
}

char *rank_tok_unquote(const struct rank_tok *t)
{
	char tmp[256] = "";
	char *s = t->len < sizeof tmp ? tmp : base_alloc(t->len);
	if (!s)
		return NULL;
	size_t n = 0;
	for (size_t i = 1; i + 1 < t->len; i++) {
		char c = t->s[i];
		if (c == '\\' && i + 2 < t->len) {
			c = t->s[++i];
			if (c == 'n')
				c = '\n';
			else if (c == 't')
				c = '\t';
			/* Any other escaped byte stands for itself; "\0" is the
			 * digit, so a string never holds an embedded NUL. */
		}
		s[n++] = c;
	}
	char *d = base_strndup(s, n);
	if (s != tmp)
		base_free(s, t->len);
	return d;
}
