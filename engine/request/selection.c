/*
 * selection.c: Vespa's document selection language, parsed into a tree
 * (struct eng_sel, engine_int.h) that selection_eval.c evaluates against
 * stored documents.  Test-and-set conditions of feed operations and the
 * selections of visits are written in it.
 *
 * Grammar, loosest first (keywords in any case):
 *
 *   or      = and { "or" and }
 *   and     = not { "and" not }
 *   not     = "not" not | cmp
 *   cmp     = add [ ("==" | "!=" | "<" | "<=" | ">" | ">=" | "=" | "=~") add ]
 *   add     = mul { ("+" | "-") mul }
 *   mul     = mod { ("*" | "/") mod }
 *   mod     = postfix { "%" postfix }
 *   postfix = primary { "." ("lowercase" | "abs") "(" ")" }
 *   primary = "(" or ")" | number | string | "null" | "true" | "false"
 *           | "id" [ "." part ] | "now" "(" ")" | doctype [ "." field path ]
 *
 * Modulo binds tighter than multiplication, as Vespa's reference has it.
 * Strings take double or single quotes and the escapes \n \t \r \f \" \'
 * \\ and \xHH.  A field path is the field's name followed by struct
 * members (".m"), array indexes ("[2]") and map or weighted set keys
 * ("{k}").  Every node is checked as it is made: and/or/not take
 * conditions (comparisons, a document type, a field, true, false),
 * comparisons and arithmetic take values; a document type or field that
 * the application lacks is an error at its column.  hash() and version()
 * are refused as not implemented, never ignored.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../engine_int.h"

#define MAX_DEPTH 200 /* nesting of parentheses and operators */

struct parser {
	struct strata *db;
	const char *text, *p;
	const char *what;
	struct eng_sel *sel;
	struct strata_error *err;
	int depth;
};

static int col_of(const struct parser *ps, const char *at)
{
	return (int)(at - ps->text) + 1;
}

static int fail_at(struct parser *ps, const char *at, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int fail_at(struct parser *ps, const char *at, int code, const char *fmt, ...)
{
	char msg[STRATA_ERRMSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return base_err(ps->err, code, "%s:1:%d: %s", ps->what, col_of(ps, at), msg);
}

static void skip_space(struct parser *ps)
{
	while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r' || *ps->p == '\f')
		ps->p++;
}

static int ident_start(char c)
{
	return isalpha((unsigned char)c) || c == '_';
}

static int ident_char(char c)
{
	return isalnum((unsigned char)c) || c == '_';
}

/* The length of the identifier at s (0: none). */
static size_t ident_len(const char *s)
{
	size_t n = 0;
	if (!ident_start(s[0]))
		return 0;
	while (ident_char(s[n]))
		n++;
	return n;
}

static int is_word(const char *s, size_t n, const char *word)
{
	return strlen(word) == n && strncasecmp(s, word, n) == 0;
}

/* Whether the keyword word is next (whole, in any case); if so, skip it. */
static int take_word(struct parser *ps, const char *word)
{
	skip_space(ps);
	size_t n = ident_len(ps->p);
	if (!n || !is_word(ps->p, n, word))
		return 0;
	ps->p += n;
	return 1;
}

static struct eng_sel_node *node(struct parser *ps, int kind, const char *at)
{
	struct eng_sel_node *n = base_arena_alloc(&ps->sel->arena, sizeof *n, 8);
	if (!n) {
		base_nomem(ps->err, "%s", ps->what);
		return NULL;
	}
	memset(n, 0, sizeof *n);
	n->kind = kind;
	n->col = col_of(ps, at);
	return n;
}

static int is_cond(const struct eng_sel_node *n)
{
	return n->kind <= ENG_SEL_FIELD;
}

static int is_value(const struct eng_sel_node *n)
{
	return n->kind >= ENG_SEL_FIELD || n->kind == ENG_SEL_TRUE || n->kind == ENG_SEL_FALSE;
}

static const char *kind_name(const struct eng_sel_node *n)
{
	switch (n->kind) {
	case ENG_SEL_DOCTYPE: return "a document type";
	case ENG_SEL_AND: case ENG_SEL_OR: case ENG_SEL_NOT: return "a condition";
	case ENG_SEL_CMP: return "a comparison";
	default: return "a value";
	}
}

static int want_cond(struct parser *ps, const struct eng_sel_node *n, const char *where)
{
	if (is_cond(n))
		return 0;
	return base_err(ps->err, STRATA_PARSE, "%s:1:%d: %s where a condition belongs (%s); "
	                "compare it with ==, !=, <, <=, >, >=, = or =~", ps->what, n->col,
	                kind_name(n), where);
}

static int want_value(struct parser *ps, const struct eng_sel_node *n, const char *where)
{
	if (is_value(n))
		return 0;
	return base_err(ps->err, STRATA_PARSE, "%s:1:%d: %s where a value belongs (%s)", ps->what,
	                n->col, kind_name(n), where);
}

/* ---- primaries ------------------------------------------------------------------------------ */

static struct eng_sel_node *string_lit(struct parser *ps)
{
	const char *start = ps->p;
	char q = *ps->p++;
	size_t cap = strlen(ps->p) + 1, n = 0;
	char *s = base_arena_alloc(&ps->sel->arena, cap, 1);
	if (!s) {
		base_nomem(ps->err, "%s", ps->what);
		return NULL;
	}
	for (;;) {
		char c = *ps->p;
		if (!c) {
			fail_at(ps, start, STRATA_PARSE, "the string is not closed");
			return NULL;
		}
		ps->p++;
		if (c == q)
			break;
		if (c != '\\') {
			s[n++] = c;
			continue;
		}
		const char *esc = ps->p - 1;
		c = *ps->p++;
		switch (c) {
		case 'n': s[n++] = '\n'; break;
		case 't': s[n++] = '\t'; break;
		case 'r': s[n++] = '\r'; break;
		case 'f': s[n++] = '\f'; break;
		case '"': case '\'': case '\\': s[n++] = c; break;
		case 'x':
			if (!isxdigit((unsigned char)ps->p[0]) || !isxdigit((unsigned char)ps->p[1])) {
				fail_at(ps, esc, STRATA_PARSE, "\\x needs two hexadecimal digits");
				return NULL;
			}
			s[n++] = (char)(base_hex_digit((unsigned char)ps->p[0]) * 16 +
			                base_hex_digit((unsigned char)ps->p[1]));
			ps->p += 2;
			break;
		default:
			fail_at(ps, esc, STRATA_PARSE, "unknown escape '\\%c' in a string", c ? c : ' ');
			return NULL;
		}
	}
	s[n] = 0;
	struct eng_sel_node *nd = node(ps, ENG_SEL_STRING, start);
	if (nd) {
		nd->s = s;
		nd->n = n;
	}
	return nd;
}

/* A number: digits with a sign, a fraction (a '.' and digits) and an
 * exponent; "3.abs()" is 3 and a function call. */
static struct eng_sel_node *number_lit(struct parser *ps)
{
	const char *start = ps->p, *q = start + (*start == '+' || *start == '-');
	while (isdigit((unsigned char)*q))
		q++;
	int is_float = 0;
	if (q[0] == '.' && isdigit((unsigned char)q[1])) {
		is_float = 1;
		for (q++; isdigit((unsigned char)*q); q++)
			;
	}
	int exp = q[0] == 'e' || q[0] == 'E';
	int sign = exp && (q[1] == '+' || q[1] == '-'); /* q[1] exists when q[0] is no NUL */
	if (exp && isdigit((unsigned char)q[1 + sign])) {
		is_float = 1;
		for (q += 1 + sign; isdigit((unsigned char)*q); q++)
			;
	}
	char text[64];
	int len = (int)(q - start);
	struct eng_sel_node *nd = node(ps, is_float ? ENG_SEL_FLOAT : ENG_SEL_INT, start);
	if (!nd)
		return NULL;
	if (len >= (int)sizeof text) {
		fail_at(ps, start, STRATA_PARSE, "the number '%.*s' is too long", len, start);
		return NULL;
	}
	memcpy(text, start, (size_t)len);
	text[len] = 0;
	errno = 0;
	if (is_float)
		nd->d = strtod(text, NULL);
	else
		nd->i = strtoll(text, NULL, 10);
	if (errno == ERANGE) {
		fail_at(ps, start, STRATA_PARSE, "the number '%s' is out of range", text);
		return NULL;
	}
	ps->p = q;
	return nd;
}

static const struct { const char *name; int part; } id_parts[] = {
	{ "scheme", ENG_SEL_ID_SCHEME }, { "namespace", ENG_SEL_ID_NAMESPACE },
	{ "type", ENG_SEL_ID_TYPE }, { "specific", ENG_SEL_ID_SPECIFIC },
	{ "user", ENG_SEL_ID_USER }, { "group", ENG_SEL_ID_GROUP },
};

/* "id" was read at start: the whole id, or ".part". */
static struct eng_sel_node *id_ref(struct parser *ps, const char *start)
{
	struct eng_sel_node *nd = node(ps, ENG_SEL_ID, start);
	if (!nd || ps->p[0] != '.')
		return nd;
	const char *w = ps->p + 1;
	size_t n = ident_len(w);
	if (n && w[n] == '(')
		return nd; /* id.hash(): a function of the whole id */
	for (size_t i = 0; i < sizeof id_parts / sizeof id_parts[0]; i++)
		if (is_word(w, n, id_parts[i].name)) {
			nd->op = id_parts[i].part;
			ps->p = w + n;
			return nd;
		}
	fail_at(ps, w, STRATA_PARSE, "'%.*s' is not a part of a document id (scheme, namespace, "
	        "type, specific, user, group)", (int)n, w);
	return NULL;
}

/* The field path after "doctype.", whose first name (the field) is at w. */
static struct eng_sel_node *field_ref(struct parser *ps, const char *start,
                                      struct eng_doctype *dt, const char *w)
{
	size_t n = ident_len(w);
	if (!n) {
		fail_at(ps, w, STRATA_PARSE, "expected a field name after '%s.'", dt->name);
		return NULL;
	}
	if (w[n] == '(') {
		fail_at(ps, w, is_word(w, n, "version") ? STRATA_NOT_IMPLEMENTED : STRATA_PARSE,
		        "'%.*s()' of a document type is not %s", (int)n, w,
		        is_word(w, n, "version") ? "implemented" : "a function of the language");
		return NULL;
	}
	char name[256];
	snprintf(name, sizeof name, "%.*s", (int)n, w);
	int fi = rank_schema_field_index(dt->schema, name);
	const struct rank_field *rf = fi >= 0 ? rank_schema_field(dt->schema, fi) : NULL;
	if (!rf || rf->outside) {
		fail_at(ps, w, STRATA_INVALID_ARGUMENT, "'%s' is not a field of document type '%s'%s",
		        name, dt->name, rf ? " (it is declared outside the document)" : "");
		return NULL;
	}
	if (rf->imported) {
		fail_at(ps, w, STRATA_NOT_IMPLEMENTED, "imported field '%s' in a selection is not "
		        "implemented", name);
		return NULL;
	}
	/* The path: ".m", "[N]", "{key}" parts, up to a function call. */
	const char *q = w + n;
	for (;;) {
		if (q[0] == '.' && ident_len(q + 1) && q[1 + ident_len(q + 1)] != '(') {
			q += 1 + ident_len(q + 1);
		} else if (q[0] == '[' || q[0] == '{') {
			const char *close = strchr(q, q[0] == '[' ? ']' : '}');
			if (!close) {
				fail_at(ps, q, STRATA_PARSE, "'%c' is not closed", q[0]);
				return NULL;
			}
			if (q[0] == '[') {
				for (const char *d = q + 1; d < close; d++)
					if (!isdigit((unsigned char)*d) || close == q + 1) {
						fail_at(ps, q, STRATA_PARSE, "an array index is a number");
						return NULL;
					}
			}
			q = close + 1;
		} else {
			break;
		}
	}
	struct eng_sel_node *nd = node(ps, ENG_SEL_FIELD, start);
	if (!nd)
		return NULL;
	nd->dt = dt;
	nd->fi = fi;
	if (q > w + n && !(nd->s = base_arena_strndup(&ps->sel->arena, w + n, (size_t)(q - w - n)))) {
		base_nomem(ps->err, "%s", ps->what);
		return NULL;
	}
	ps->p = q;
	return nd;
}

static struct eng_sel_node *parse_or(struct parser *ps);

static struct eng_sel_node *primary(struct parser *ps)
{
	skip_space(ps);
	const char *start = ps->p;
	char c = *start;
	if (c == '(') {
		ps->p++;
		struct eng_sel_node *in = parse_or(ps);
		if (!in)
			return NULL;
		skip_space(ps);
		if (*ps->p != ')') {
			fail_at(ps, ps->p, STRATA_PARSE, "expected ')' to close the '(' at column %d",
			        col_of(ps, start));
			return NULL;
		}
		ps->p++;
		return in;
	}
	if (c == '"' || c == '\'')
		return string_lit(ps);
	if (isdigit((unsigned char)c) || ((c == '-' || c == '+') && isdigit((unsigned char)start[1])))
		return number_lit(ps);
	size_t n = ident_len(start);
	if (!n) {
		if (!c)
			fail_at(ps, start, STRATA_PARSE, "the %s ends where a value or condition belongs",
			        ps->what);
		else
			fail_at(ps, start, STRATA_PARSE, "unexpected '%c'", c);
		return NULL;
	}
	ps->p += n;
	if (is_word(start, n, "null"))
		return node(ps, ENG_SEL_NULL, start);
	if (is_word(start, n, "true") || is_word(start, n, "false"))
		return node(ps, tolower((unsigned char)c) == 't' ? ENG_SEL_TRUE : ENG_SEL_FALSE, start);
	if (is_word(start, n, "id"))
		return id_ref(ps, start);
	if (is_word(start, n, "now") && ps->p[0] == '(' && ps->p[1] == ')') {
		ps->p += 2;
		return node(ps, ENG_SEL_NOW, start);
	}
	if (is_word(start, n, "and") || is_word(start, n, "or") || is_word(start, n, "not")) {
		fail_at(ps, start, STRATA_PARSE, "'%.*s' where a value or condition belongs", (int)n,
		        start);
		return NULL;
	}
	char name[256];
	snprintf(name, sizeof name, "%.*s", (int)n, start);
	struct eng_doctype *dt = eng_doctype_find(ps->db, name);
	if (!dt) {
		fail_at(ps, start, STRATA_INVALID_ARGUMENT, "'%s' is not a document type of the "
		        "application", name);
		return NULL;
	}
	if (ps->p[0] == '.')
		return field_ref(ps, start, dt, ps->p + 1);
	struct eng_sel_node *nd = node(ps, ENG_SEL_DOCTYPE, start);
	if (nd)
		nd->dt = dt;
	return nd;
}

/* ---- operators ------------------------------------------------------------------------------ */

static struct eng_sel_node *postfix(struct parser *ps)
{
	struct eng_sel_node *a = primary(ps);
	while (a && ps->p[0] == '.') {
		const char *w = ps->p + 1;
		size_t n = ident_len(w);
		if (!n || w[n] != '(' || w[n + 1] != ')') {
			fail_at(ps, ps->p, STRATA_PARSE, "expected a function call such as .lowercase()");
			return NULL;
		}
		int op = is_word(w, n, "lowercase") ? 'l' : is_word(w, n, "abs") ? 'a' : 0;
		if (!op) {
			fail_at(ps, w, is_word(w, n, "hash") ? STRATA_NOT_IMPLEMENTED : STRATA_PARSE,
			        "'%.*s()' is not %s", (int)n, w,
			        is_word(w, n, "hash") ? "implemented" : "a function of the language "
			        "(lowercase, abs)");
			return NULL;
		}
		if (want_value(ps, a, "a function's argument"))
			return NULL;
		struct eng_sel_node *f = node(ps, ENG_SEL_FUNC, w);
		if (!f)
			return NULL;
		f->op = op;
		f->a = a;
		ps->p = w + n + 2;
		a = f;
	}
	return a;
}

/* One level of left-associative operators, operands from next: with word
 * NULL, the characters of ops (ENG_SEL_ARITH, between values); else the
 * keyword word (kind, between conditions). */
static struct eng_sel_node *binary(struct parser *ps, const char *ops, const char *word, int kind,
                                   struct eng_sel_node *(*next)(struct parser *))
{
	struct eng_sel_node *a = next(ps);
	for (;;) {
		if (!a)
			return NULL;
		skip_space(ps);
		const char *at = ps->p;
		char c = *at;
		if (word ? !take_word(ps, word) : !c || !strchr(ops, c))
			return a;
		if (!word)
			ps->p++;
		struct eng_sel_node *b = next(ps);
		if (!b)
			return NULL;
		char where[32];
		snprintf(where, sizeof where, "an operand of '%s'", word ? word : (char[2]){ c, 0 });
		int (*want)(struct parser *, const struct eng_sel_node *, const char *) =
			word ? want_cond : want_value;
		struct eng_sel_node *x = want(ps, a, where) || want(ps, b, where) ? NULL
		                       : node(ps, kind, at);
		if (!x)
			return NULL;
		x->op = word ? 0 : c;
		x->a = a;
		x->b = b;
		a = x;
	}
}

static struct eng_sel_node *mod_level(struct parser *ps)
{
	return binary(ps, "%", NULL, ENG_SEL_ARITH, postfix);
}

static struct eng_sel_node *mul_level(struct parser *ps)
{
	return binary(ps, "*/", NULL, ENG_SEL_ARITH, mod_level);
}

static struct eng_sel_node *add_level(struct parser *ps)
{
	return binary(ps, "+-", NULL, ENG_SEL_ARITH, mul_level);
}

/* The comparison operator at s and its length (0: none). */
static int cmp_op(const char *s, int *len)
{
	static const struct { const char *t; int op; } ops[] = {
		{ "==", ENG_SEL_EQ }, { "!=", ENG_SEL_NE }, { "<=", ENG_SEL_LE }, { ">=", ENG_SEL_GE },
		{ "=~", ENG_SEL_REGEX }, { "<", ENG_SEL_LT }, { ">", ENG_SEL_GT }, { "=", ENG_SEL_GLOB },
	};
	for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
		size_t n = strlen(ops[i].t);
		if (!strncmp(s, ops[i].t, n)) {
			*len = (int)n;
			return ops[i].op;
		}
	}
	return 0;
}

static struct eng_sel_node *comparison(struct parser *ps)
{
	struct eng_sel_node *a = add_level(ps);
	if (!a)
		return NULL;
	skip_space(ps);
	int len, op = cmp_op(ps->p, &len);
	if (!op)
		return a;
	const char *at = ps->p;
	ps->p += len;
	struct eng_sel_node *b = add_level(ps);
	if (!b || want_value(ps, a, "the left of a comparison") ||
	    want_value(ps, b, "the right of a comparison"))
		return NULL;
	struct eng_sel_node *x = node(ps, ENG_SEL_CMP, at);
	if (!x)
		return NULL;
	x->op = op;
	x->a = a;
	x->b = b;
	if (op == ENG_SEL_REGEX && b->kind == ENG_SEL_STRING) {
		regex_t *re = base_arena_alloc(&ps->sel->arena, sizeof *re, 8);
		if (!re) {
			base_nomem(ps->err, "%s", ps->what);
			return NULL;
		}
		if (base_regex_size(b->s) > BASE_REGEX_MAX) {
			base_err(ps->err, STRATA_PARSE, "%s:1:%d: regular expression too complex: its "
			         "repetitions would grow to more than %d nodes", ps->what, b->col,
			         BASE_REGEX_MAX);
			return NULL;
		}
		int rc = regcomp(re, b->s, REG_EXTENDED | REG_NOSUB);
		if (rc) {
			char why[128];
			regerror(rc, re, why, sizeof why);
			regfree(re);
			base_err(ps->err, STRATA_PARSE, "%s:1:%d: bad regular expression: %s", ps->what,
			         b->col, why);
			return NULL;
		}
		x->re = re;
		x->re_next = ps->sel->regexes;
		ps->sel->regexes = x;
	}
	return x;
}

static struct eng_sel_node *parse_not(struct parser *ps)
{
	if (++ps->depth > MAX_DEPTH) {
		fail_at(ps, ps->p, STRATA_LIMIT, "nested more than %d deep", MAX_DEPTH);
		return NULL;
	}
	skip_space(ps);
	const char *at = ps->p;
	struct eng_sel_node *r;
	if (take_word(ps, "not")) {
		struct eng_sel_node *a = parse_not(ps);
		r = a && !want_cond(ps, a, "after 'not'") ? node(ps, ENG_SEL_NOT, at) : NULL;
		if (r)
			r->a = a;
	} else {
		r = comparison(ps);
	}
	ps->depth--;
	return r;
}

static struct eng_sel_node *parse_and(struct parser *ps)
{
	return binary(ps, NULL, "and", ENG_SEL_AND, parse_not);
}

static struct eng_sel_node *parse_or(struct parser *ps)
{
	if (++ps->depth > MAX_DEPTH) {
		fail_at(ps, ps->p, STRATA_LIMIT, "nested more than %d deep", MAX_DEPTH);
		return NULL;
	}
	struct eng_sel_node *r = binary(ps, NULL, "or", ENG_SEL_OR, parse_and);
	ps->depth--;
	return r;
}

/* ---- the API -------------------------------------------------------------------------------- */

void eng_sel_free(struct eng_sel *s)
{
	if (!s)
		return;
	for (struct eng_sel_node *n = s->regexes; n; n = n->re_next)
		regfree(n->re);
	base_arena_free(&s->arena);
	base_free(s, sizeof *s);
}

int eng_sel_parse(struct strata *db, const char *text, const char *what, struct eng_sel **out,
                  struct strata_error *err)
{
	*out = NULL;
	struct eng_sel *s = base_calloc(1, sizeof *s);
	if (!s)
		return base_nomem(err, "%s", what);
	base_arena_init(&s->arena, 4096);
	struct strata_error e = { 0 };
	struct parser ps = { .db = db, .text = text, .p = text, .what = what, .sel = s, .err = &e };
	struct eng_sel_node *root = parse_or(&ps);
	int rc = 0;
	if (!root) {
		rc = e.code;
	} else {
		s->root = root;
		skip_space(&ps);
		if (*ps.p)
			rc = fail_at(&ps, ps.p, STRATA_PARSE, "unexpected '%.20s' after the %s", ps.p,
			             what);
		else
			rc = want_cond(&ps, root, "the whole selection");
	}
	if (rc) {
		eng_sel_free(s); /* with the regexes compiled before the failure */
		if (err)
			*err = e;
		return rc;
	}
	*out = s;
	return 0;
}
