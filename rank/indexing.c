/*
 * indexing.c: Vespa's indexing language, parsed.  A field's "indexing:"
 * statement (to the end of the line or ';') or its "indexing { ... }" block
 * becomes a tree of struct rank_ix nodes (rank.h), checked once every field
 * of the application is known (indexing_check.c) and run by the engine when
 * a document is fed (engine/indexing.c).
 *
 * Grammar, loosest first:
 *   script    statement (';' or a line break) statement ...
 *   statement choice ('|' choice)*
 *   choice    cat ('||' cat)*          the first value that is not none
 *   cat       sum ('.' sum)*           string concatenation
 *   sum       term (('+' | '-') term)*, term: primary (('*' | '/' | '%') primary)*
 *   primary   '(' statement ')' | "text" | number | '_' | input f
 *             | attribute [f] | index [f] | summary [f] | for_each { script }
 *             | if (choice OP choice) { script } [else { script }]
 *             | embed [id [dim]] | chunk fixed-length [n] | chunk sentence
 *             | binarize [threshold] | pack_bits | split "re" | join "sep"
 *             | substring a b | to_array | to_string | to_int | to_long
 *             | to_float | to_double | to_bool | lowercase | trim | normalize
 *             | hash | now | set_language | flatten | to_epoch_second
 *             | hex_encode | hex_decode | to_wset | set_var v | get_var v
 *             | guard { script }
 *
 * A statement made of the field's own sinks alone ("summary | attribute",
 * or "input f | summary" in document field f) reads the field itself: it
 * only sets the field's flags and keeps no tree.  A statement
 * without a sink stores nothing and is dropped once parsed ("en" |
 * set_language).  The sinks of the statement's own field set its flags
 * here (attribute, summary, index with its checks); what names another
 * field is checked later.  Each embed learns here which field's type it
 * produces: the field of the first sink after it in its pipe, else that of
 * the pipe around it, else the statement's field.
 */
#include <string.h>

#include "rank_syntax.h"

/* Words of Vespa's indexing language that this version refuses by name. */
static const char *const refused[] = {
	"tokenize", "exact", "ngram", "get_field",
	"select_input", "switch", "clear_state",
	"base64_decode", "base64_encode", "to_byte", "to_position",
	"to_uri", "zcurve", "random", "sleep", "echo", "host_name",
	"optimize_predicate", NULL,
};

static const struct {
	const char *name;
	int op;
} simple_funcs[] = {
	{"to_array", RANK_IXF_TO_ARRAY}, {"to_string", RANK_IXF_TO_STRING},
	{"to_int", RANK_IXF_TO_INT}, {"to_long", RANK_IXF_TO_LONG},
	{"to_float", RANK_IXF_TO_FLOAT}, {"to_double", RANK_IXF_TO_DOUBLE},
	{"to_bool", RANK_IXF_TO_BOOL}, {"lowercase", RANK_IXF_LOWERCASE},
	{"trim", RANK_IXF_TRIM}, {"normalize", RANK_IXF_NORMALIZE}, {"hash", RANK_IXF_HASH},
	{"now", RANK_IXF_NOW}, {"pack_bits", RANK_IXF_PACK_BITS},
	{"set_language", RANK_IXF_PASS}, {"flatten", RANK_IXF_PASS},
	{"to_epoch_second", RANK_IXF_TO_EPOCH_SECOND}, {"hex_encode", RANK_IXF_HEX_ENCODE},
	{"hex_decode", RANK_IXF_HEX_DECODE}, {"to_wset", RANK_IXF_TO_WSET},
};

/* Every word that starts an expression: not taken as a field or embedder name. */
static int keyword(const struct rank_tok *t)
{
	static const char *const words[] = {
		"input", "attribute", "index", "summary", "for_each", "if", "else", "embed",
		"chunk", "binarize", "split", "join", "substring", "generate", "guard",
		"get_var", "set_var", NULL,
	};
	if (rank_parser_name_in(t, words) || rank_parser_name_in(t, refused))
		return 1;
	for (size_t i = 0; i < sizeof simple_funcs / sizeof simple_funcs[0]; i++)
		if (rank_tok_is(t, simple_funcs[i].name))
			return 1;
	return 0;
}

struct ixp {
	struct rank_parser *p;
	struct rank_field *f;
};

static int new_node(struct ixp *x, int kind, const struct rank_tok *t, struct rank_ix **out)
{
	struct rank_ix *n = base_calloc(1, sizeof *n);
	*out = n;
	if (!n)
		return rank_parser_nomem(x->p);
	n->kind = kind;
	n->line = t->line;
	n->col = t->col;
	return 0;
}

/* Append a to n's arguments; a is freed when that fails. */
static int add_arg(struct ixp *x, struct rank_ix *n, struct rank_ix *a)
{
	int rc = rank_parser_push(x->p, &n->args, &n->nargs, sizeof *n->args);
	if (rc) {
		rank_ix_free(a);
		return rc;
	}
	n->args[n->nargs - 1] = a;
	return 0;
}

/* The next token, if it is on the same line and is a name that is not a
 * keyword (a field or embedder name after a sink or embed). */
static int same_line_name(struct ixp *x, struct rank_tok *t)
{
	rank_lex_peek(x->p->lx, RANK_LEX_SCHEMA, t);
	return !t->nl_before && t->kind == RT_NAME && !keyword(t);
}

static int statement(struct ixp *x, struct rank_ix **out);
static int choice(struct ixp *x, struct rank_ix **out);

/* "{ script }" (the '{' next). */
static int block(struct ixp *x, const char *what, struct rank_ix **out)
{
	struct rank_tok t;
	rank_lex_peek(x->p->lx, RANK_LEX_SCHEMA, &t);
	if (!rank_tok_is(&t, "{"))
		return rank_parser_fail(x->p, &t, STRATA_PARSE, "expected '{' after %s, found %s", what,
		                        rank_tok_quote(&t));
	rank_lex_take(x->p->lx, &t);
	int rc = new_node(x, RANK_IX_SCRIPT, &t, out);
	while (!rc) {
		struct rank_ix *s;
		rank_lex_peek(x->p->lx, RANK_LEX_SCHEMA, &t);
		if (rank_tok_is(&t, "}")) {
			rank_lex_take(x->p->lx, &t);
			if ((*out)->nargs > 0)
				return 0;
			rc = rank_parser_fail(x->p, &t, STRATA_PARSE, "%s has no statement", what);
			break;
		}
		if (rank_tok_is(&t, ";")) {
			rank_lex_take(x->p->lx, &t);
			continue;
		}
		if ((rc = statement(x, &s)) != 0 || (rc = add_arg(x, *out, s)) != 0)
			break;
		rank_lex_peek(x->p->lx, RANK_LEX_SCHEMA, &t);
		if (!rank_tok_is(&t, ";") && !rank_tok_is(&t, "}") && !t.nl_before)
			rc = rank_parser_fail(x->p, &t, STRATA_PARSE,
			                      "expected ';', '|' or '}' after an indexing statement, found %s",
			                      rank_tok_quote(&t));
	}
	rank_ix_free(*out);
	*out = NULL;
	return rc;
}

/* attribute, index or summary [field] (t taken). */
static int sink(struct ixp *x, const struct rank_tok *t, struct rank_ix *n)
{
	struct rank_field *f = x->f;
	struct rank_tok nm;
	n->op = t->s[0];
	if (same_line_name(x, &nm)) {
		rank_lex_take(x->p->lx, &nm);
		if (!rank_tok_is(&nm, f->name))
			return (n->str = rank_parser_tokdup(x->p, &nm)) ? 0 : STRATA_NOMEM;
	}
	/* The field's own sink: its flags. */
	if (n->op == 'a') {
		f->attribute = 1;
	} else if (n->op == 's') {
		f->summary = 1;
	} else if (f->type == RANK_FT_STRING || rank_field_holds_text(f)) {
		/* a text index (parse_text.c), on a string or on an array or
		 * weighted set of them */
		f->index = 1;
	} else if (f->type == RANK_FT_TENSOR) {
		f->hnsw = 1; /* a nearest-neighbour graph (parse_hnsw.c, store/hnsw.c) */
	} else {
		return rank_parser_fail(x->p, t, STRATA_NOT_IMPLEMENTED,
		                        "'indexing: index' on field '%s' is not supported", f->name);
	}
	return 0;
}

/* A number token as a double. */
static int number(struct ixp *x, const char *what, double *v, struct rank_tok *t)
{
	rank_lex_next(x->p->lx, RANK_LEX_SCHEMA, t);
	if (t->kind != RT_NUM)
		return rank_parser_fail(x->p, t, STRATA_PARSE, "expected %s, found %s", what,
		                        rank_tok_quote(t));
	return rank_tok_number(x->p->lx, t, v, x->p->err);
}

/* A string literal's text into *s. */
static int string_arg(struct ixp *x, const char *what, char **s)
{
	struct rank_tok t;
	rank_lex_next(x->p->lx, RANK_LEX_SCHEMA, &t);
	if (t.kind != RT_STR)
		return rank_parser_fail(x->p, &t, STRATA_PARSE, "expected %s, found %s", what,
		                        rank_tok_quote(&t));
	return (*s = rank_tok_unquote(&t)) ? 0 : rank_parser_nomem(x->p);
}

/* embed [id [dim]] (t taken): dim, the one argument Vespa's embedders take
 * here, names the mapped dimension an array's elements go under; more
 * arguments are refused. */
static int embed(struct ixp *x, struct rank_ix *n)
{
	struct rank_tok t;
	if (same_line_name(x, &t) || (!t.nl_before && t.kind == RT_STR)) {
		rank_lex_take(x->p->lx, &t);
		n->str = t.kind == RT_STR ? rank_tok_unquote(&t) : rank_parser_tokdup(x->p, &t);
		if (!n->str)
			return rank_parser_nomem(x->p);
		if (same_line_name(x, &t)) {
			rank_lex_take(x->p->lx, &t);
			if (!(n->dim = rank_parser_tokdup(x->p, &t)))
				return rank_parser_nomem(x->p);
		}
	}
	if (same_line_name(x, &t) || (!t.nl_before && (t.kind == RT_STR || t.kind == RT_NUM)))
		return rank_parser_fail(x->p, &t, STRATA_NOT_IMPLEMENTED,
		                        "embed takes one argument after the embedder, the dimension "
		                        "of an array's elements; %s is not supported",
		                        rank_tok_quote(&t));
	return 0;
}

/* chunk fixed-length [n] | chunk sentence (t taken). */
static int chunk(struct ixp *x, struct rank_ix *n)
{
	struct rank_tok t, id;
	rank_lex_next(x->p->lx, RANK_LEX_SCHEMA, &id);
	t = id;
	if (rank_tok_is(&t, "fixed-length")) {
		n->num = 1000;
		rank_lex_peek(x->p->lx, RANK_LEX_SCHEMA, &t);
		if (!t.nl_before && t.kind == RT_NUM) {
			int rc = number(x, "a chunk length", &n->num, &t);
			if (rc)
				return rc;
			if (n->num < 1 || n->num > 1e9 || n->num != (double)(long)n->num)
				return rank_parser_fail(x->p, &t, STRATA_TYPE,
				                        "a chunk length is a whole number of characters "
				                        "from 1, not %s", rank_tok_quote(&t));
		}
	} else if (!rank_tok_is(&t, "sentence")) {
		if (t.kind == RT_NAME)
			return rank_parser_fail(x->p, &t, STRATA_NOT_IMPLEMENTED,
			                        "chunker %s is not supported (fixed-length and sentence are)",
			                        rank_tok_quote(&t));
		return rank_parser_fail(x->p, &t, STRATA_PARSE, "expected a chunker after 'chunk', found %s",
		                        rank_tok_quote(&t));
	}
	return (n->str = rank_parser_tokdup(x->p, &id)) ? 0 : STRATA_NOMEM;
}

/* if (a OP b) { ... } [else { ... }] (t taken). */
static int if_else(struct ixp *x, struct rank_ix *n)
{
	static const char *const ops[] = {"==", "!=", "<", "<=", ">", ">="};
	struct rank_tok t;
	struct rank_ix *a;
	int rc = rank_parser_expect(x->p, "(", "after 'if'");
	if (rc || (rc = choice(x, &a)) != 0 || (rc = add_arg(x, n, a)) != 0)
		return rc;
	rank_lex_next(x->p->lx, RANK_LEX_SCHEMA, &t);
	for (int i = 0; i < 6 && !n->op; i++)
		if (rank_tok_is(&t, ops[i]))
			n->op = RANK_IX_EQ + i;
	if (!n->op)
		return rank_parser_fail(x->p, &t, STRATA_PARSE,
		                        "expected a comparison (==, !=, <, <=, >, >=) in 'if', found %s",
		                        rank_tok_quote(&t));
	if ((rc = choice(x, &a)) != 0 || (rc = add_arg(x, n, a)) != 0 ||
	    (rc = rank_parser_expect(x->p, ")", "after the condition of 'if'")) != 0 ||
	    (rc = block(x, "'if (...)'", &a)) != 0 || (rc = add_arg(x, n, a)) != 0)
		return rc;
	a = NULL;
	if (rank_parser_take_if(x->p, RANK_LEX_SCHEMA, "else") && (rc = block(x, "'else'", &a)) != 0)
		return rc;
	return add_arg(x, n, a);
}

/* A keyword expression whose word t is taken. */
static int word(struct ixp *x, const struct rank_tok *t, struct rank_ix **out)
{
	struct rank_tok nm;
	int rc;
	for (size_t i = 0; i < sizeof simple_funcs / sizeof simple_funcs[0]; i++)
		if (rank_tok_is(t, simple_funcs[i].name)) {
			if ((rc = new_node(x, RANK_IX_FUNC, t, out)) == 0)
				(*out)->op = simple_funcs[i].op;
			return rc;
		}
	if (rank_tok_is(t, "input")) {
		if ((rc = rank_parser_expect_name(x->p, RANK_LEX_SCHEMA, &nm, "a field name after 'input'")) ||
		    (rc = new_node(x, RANK_IX_INPUT, &nm, out))) /* at the name */
			return rc;
		return ((*out)->str = rank_parser_tokdup(x->p, &nm)) ? 0 : STRATA_NOMEM;
	}
	if (rank_tok_is(t, "attribute") || rank_tok_is(t, "index") || rank_tok_is(t, "summary"))
		return (rc = new_node(x, RANK_IX_SINK, t, out)) ? rc : sink(x, t, *out);
	if (rank_tok_is(t, "_"))
		return new_node(x, RANK_IX_CURRENT, t, out);
	if (rank_tok_is(t, "for_each")) {
		struct rank_ix *b;
		if ((rc = new_node(x, RANK_IX_FOR_EACH, t, out)) || (rc = block(x, "'for_each'", &b)))
			return rc;
		return add_arg(x, *out, b);
	}
	if (rank_tok_is(t, "guard")) {
		struct rank_ix *b;
		if ((rc = new_node(x, RANK_IX_GUARD, t, out)) || (rc = block(x, "'guard'", &b)))
			return rc;
		return add_arg(x, *out, b);
	}
	if (rank_tok_is(t, "if"))
		return (rc = new_node(x, RANK_IX_IF, t, out)) ? rc : if_else(x, *out);
	if (rank_tok_is(t, "embed"))
		return (rc = new_node(x, RANK_IX_EMBED, t, out)) ? rc : embed(x, *out);
	if (rank_tok_is(t, "chunk"))
		return (rc = new_node(x, RANK_IX_CHUNK, t, out)) ? rc : chunk(x, *out);
	if (rank_tok_is(t, "generate"))
		return rank_parser_fail(x->p, t, STRATA_NOT_IMPLEMENTED,
		                        "'generate' (field values written by a language model) is not "
		                        "supported: Strata runs no language model");
	if (rank_parser_name_in(t, refused))
		return rank_parser_fail(x->p, t, STRATA_NOT_IMPLEMENTED,
		                        "indexing expression %s is not supported", rank_tok_quote(t));
	int op = rank_tok_is(t, "binarize") ? RANK_IXF_BINARIZE : rank_tok_is(t, "split") ? RANK_IXF_SPLIT
	       : rank_tok_is(t, "join") ? RANK_IXF_JOIN : rank_tok_is(t, "substring") ? RANK_IXF_SUBSTRING
	       : rank_tok_is(t, "set_var") ? RANK_IXF_SET_VAR : rank_tok_is(t, "get_var") ? RANK_IXF_GET_VAR
	       : 0;
	if (!op)
		return rank_parser_fail(x->p, t, STRATA_PARSE, "expected an indexing expression, found %s",
		                        rank_tok_quote(t));
	if ((rc = new_node(x, RANK_IX_FUNC, t, out)) != 0)
		return rc;
	struct rank_ix *n = *out;
	n->op = op;
	if (op == RANK_IXF_SET_VAR || op == RANK_IXF_GET_VAR) {
		if ((rc = rank_parser_expect_name(x->p, RANK_LEX_SCHEMA, &nm, "a variable name")) != 0)
			return rc;
		return (n->str = rank_parser_tokdup(x->p, &nm)) ? 0 : STRATA_NOMEM;
	}
	if (op == RANK_IXF_SPLIT)
		return string_arg(x, "a regular expression after 'split'", &n->str);
	if (op == RANK_IXF_JOIN)
		return string_arg(x, "a separator string after 'join'", &n->str);
	if (op == RANK_IXF_SUBSTRING) {
		if ((rc = number(x, "a start after 'substring'", &n->num, &nm)) ||
		    (rc = number(x, "an end after 'substring'", &n->num2, &nm)))
			return rc;
		if (n->num < 0 || n->num2 < n->num || n->num2 > 2e9)
			return rank_parser_fail(x->p, &nm, STRATA_TYPE,
			                        "substring needs 0 <= start <= end, got %g and %g", n->num,
			                        n->num2);
		return 0;
	}
	rank_lex_peek(x->p->lx, RANK_LEX_SCHEMA, &nm); /* binarize [threshold] */
	if (!nm.nl_before && (nm.kind == RT_NUM || rank_tok_is(&nm, "-"))) {
		int neg = rank_parser_take_if(x->p, RANK_LEX_SCHEMA, "-");
		if ((rc = number(x, "a threshold after 'binarize'", &n->num, &nm)) != 0)
			return rc;
		n->num = neg ? -n->num : n->num;
	}
	return 0;
}

static int primary(struct ixp *x, struct rank_ix **out)
{
	struct rank_tok t;
	*out = NULL;
	rank_lex_next(x->p->lx, RANK_LEX_SCHEMA, &t);
	int rc = rank_parser_enter(x->p, &t);
	if (rc)
		return rc;
	if (rank_tok_is(&t, "(")) {
		if ((rc = statement(x, out)) == 0)
			rc = rank_parser_expect(x->p, ")", "to close the '('");
	} else if (t.kind == RT_STR) {
		if ((rc = new_node(x, RANK_IX_STRING, &t, out)) == 0 &&
		    !((*out)->str = rank_tok_unquote(&t)))
			rc = rank_parser_nomem(x->p);
	} else if (t.kind == RT_NUM) {
		if ((rc = new_node(x, RANK_IX_NUMBER, &t, out)) == 0 &&
		    (rc = rank_tok_number(x->p->lx, &t, &(*out)->num, x->p->err)) == 0)
			(*out)->integral = !memchr(t.s, '.', t.len) && !memchr(t.s, 'e', t.len) &&
			                   !memchr(t.s, 'E', t.len) && (*out)->num < 9.2e18;
	} else if (t.kind == RT_NAME) {
		rc = word(x, &t, out);
	} else {
		rc = rank_parser_fail(x->p, &t, STRATA_PARSE, "expected an indexing expression, found %s",
		                      rank_tok_quote(&t));
	}
	x->p->depth--;
	if (rc) {
		rank_ix_free(*out);
		*out = NULL;
	}
	return rc;
}

/* One level of binary operators: operand ((op) operand)*, as a node of
 * kind with the operands for arguments (ARITH: one node per operator). */
static int binary(struct ixp *x, int kind, const char *const *ops,
                  int (*operand)(struct ixp *, struct rank_ix **), struct rank_ix **out)
{
	struct rank_ix *a, *n = NULL; /* the tree so far; the node taking operands */
	int rc = operand(x, &a);
	*out = NULL;
	if (rc)
		return rc;
	for (;;) {
		struct rank_tok t;
		rank_lex_peek(x->p->lx, RANK_LEX_SCHEMA, &t);
		int k = -1;
		for (int i = 0; ops[i] && k < 0; i++)
			if (rank_tok_is(&t, ops[i]))
				k = i;
		if (k < 0)
			break;
		rank_lex_take(x->p->lx, &t);
		if (!n || kind == RANK_IX_ARITH) {
			struct rank_ix *m;
			if ((rc = new_node(x, kind, &t, &m)) != 0)
				goto fail;
			m->op = ops[k][0];
			if ((rc = add_arg(x, m, a)) != 0) { /* a is freed */
				a = m;
				goto fail;
			}
			a = n = m;
		}
		struct rank_ix *b;
		if ((rc = operand(x, &b)) != 0 || (rc = add_arg(x, n, b)) != 0)
			goto fail;
	}
	*out = a;
	return 0;
fail:
	rank_ix_free(a);
	return rc;
}

static int term(struct ixp *x, struct rank_ix **out)
{
	static const char *const ops[] = {"*", "/", "%", NULL};
	return binary(x, RANK_IX_ARITH, ops, primary, out);
}

static int sum(struct ixp *x, struct rank_ix **out)
{
	static const char *const ops[] = {"+", "-", NULL};
	return binary(x, RANK_IX_ARITH, ops, term, out);
}

static int cat(struct ixp *x, struct rank_ix **out)
{
	static const char *const ops[] = {".", NULL};
	return binary(x, RANK_IX_CAT, ops, sum, out);
}

static int choice(struct ixp *x, struct rank_ix **out)
{
	static const char *const ops[] = {"||", NULL};
	return binary(x, RANK_IX_CHOICE, ops, cat, out);
}

static int statement(struct ixp *x, struct rank_ix **out)
{
	static const char *const ops[] = {"|", NULL};
	return binary(x, RANK_IX_PIPE, ops, choice, out);
}

/* ---- what a statement is ------------------------------------------------------------- */

static int is_pass(const struct rank_ix *n)
{
	return n->kind == RANK_IX_FUNC && n->op == RANK_IXF_PASS;
}

/* Sinks (and set_language) alone, perhaps after "input f" of the document
 * field f itself: the field's value as fed. */
static int sinks_only(const struct ixp *x, const struct rank_ix *s)
{
	if (s->kind != RANK_IX_PIPE)
		return (s->kind == RANK_IX_SINK && !s->str) || is_pass(s);
	for (int i = 0; i < s->nargs; i++) {
		const struct rank_ix *a = s->args[i];
		int self = i == 0 && a->kind == RANK_IX_INPUT && !x->f->outside &&
		           strcmp(a->str, x->f->name) == 0;
		if (!self && (a->kind != RANK_IX_SINK || a->str) && !is_pass(a))
			return 0;
	}
	return 1;
}

static int has_sink(const struct rank_ix *n)
{
	if (n->kind == RANK_IX_SINK)
		return 1;
	for (int i = 0; i < n->nargs; i++)
		if (n->args[i] && has_sink(n->args[i]))
			return 1;
	return 0;
}

/* Give each embed under n its destination: the first sink after it in its
 * pipe, else dest (the pipe's around it); pack as pack_bits follows. */
static int embed_dests(struct ixp *x, struct rank_ix *n, const char *dest, int pack)
{
	if (n->kind == RANK_IX_EMBED) {
		n->pack = pack;
		return (n->dest = base_strdup(dest)) ? 0 : rank_parser_nomem(x->p);
	}
	for (int i = 0; i < n->nargs; i++) {
		struct rank_ix *a = n->args[i];
		if (!a)
			continue;
		const char *d = dest;
		int pk = pack;
		if (n->kind == RANK_IX_PIPE) {
			for (int k = n->nargs - 1; k > i; k--)
				if (n->args[k]->kind == RANK_IX_SINK)
					d = n->args[k]->str ? n->args[k]->str : x->f->name;
			pk = i + 1 < n->nargs ? n->args[i + 1]->kind == RANK_IX_FUNC &&
			                            n->args[i + 1]->op == RANK_IXF_PACK_BITS
			                      : pack;
		}
		int rc = embed_dests(x, a, d, pk);
		if (rc)
			return rc;
	}
	return 0;
}

/* Keep statement s in field f's script (f->indexing, owned by the schema). */
static int keep(struct ixp *x, struct rank_ix *s)
{
	struct rank_sd *sd = x->p->sd;
	struct rank_field *f = x->f;
	int rc = embed_dests(x, s, f->name, 0);
	if (!rc && !f->indexing) {
		struct rank_tok at = {RT_NAME, "", 0, s->line, s->col, 0};
		struct rank_ix *root;
		if ((rc = new_node(x, RANK_IX_SCRIPT, &at, &root)) == 0 &&
		    (rc = rank_parser_push(x->p, &sd->ixs, &sd->nixs, sizeof *sd->ixs)) != 0)
			rank_ix_free(root);
		if (!rc)
			f->indexing = sd->ixs[sd->nixs - 1] = root;
	}
	if (rc) {
		rank_ix_free(s);
		return rc;
	}
	return add_arg(x, f->indexing, s);
}

/* One statement of field f, kept or dropped as the top comment says. */
static int field_statement(struct ixp *x)
{
	struct rank_ix *s;
	int rc = statement(x, &s);
	if (rc)
		return rc;
	if (sinks_only(x, s) || !has_sink(s)) {
		rank_ix_free(s);
		return 0;
	}
	return keep(x, s);
}

int rank_indexing_parse(struct rank_parser *p, struct rank_field *f, const struct rank_tok *kw)
{
	struct ixp x = {p, f};
	struct rank_tok t;
	(void)kw;
	rank_lex_next(p->lx, RANK_LEX_SCHEMA, &t);
	if (rank_tok_is(&t, "{")) { /* a block: statements up to the '}' */
		for (;;) {
			rank_lex_peek(p->lx, RANK_LEX_SCHEMA, &t);
			if (rank_tok_is(&t, "}")) {
				rank_lex_take(p->lx, &t);
				return 0;
			}
			if (rank_tok_is(&t, ";")) {
				rank_lex_take(p->lx, &t);
				continue;
			}
			if (t.kind == RT_EOF)
				return rank_parser_fail(p, &t, STRATA_PARSE, "the indexing block is never closed");
			int rc = field_statement(&x);
			if (rc)
				return rc;
			rank_lex_peek(p->lx, RANK_LEX_SCHEMA, &t);
			if (!rank_tok_is(&t, ";") && !rank_tok_is(&t, "}") && !t.nl_before)
				return rank_parser_fail(p, &t, STRATA_PARSE,
				                        "expected ';', '|' or '}' after an indexing statement, "
				                        "found %s", rank_tok_quote(&t));
		}
	}
	if (!rank_tok_is(&t, ":"))
		return rank_parser_fail(p, &t, STRATA_PARSE, "expected ':' or '{' after 'indexing', found %s",
		                        rank_tok_quote(&t));
	int rc = field_statement(&x);
	if (rc)
		return rc;
	rank_lex_peek(p->lx, RANK_LEX_SCHEMA, &t);
	if (rank_tok_is(&t, ";")) {
		rank_lex_take(p->lx, &t);
		return 0;
	}
	if (t.nl_before || rank_tok_is(&t, "}") || t.kind == RT_EOF)
		return 0;
	return rank_parser_fail(p, &t, STRATA_PARSE, "expected '|' between indexing statements, found %s",
	                        rank_tok_quote(&t));
}
