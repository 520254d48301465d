/*
 * expr.c: the parser of ranking expressions, used by parse.c for every
 * expression of a schema (phases, functions, feature lists, model inputs)
 * and by rank_expr_parse() for a lone expression.  Output: struct rank_ast
 * trees (rank_int.h) that compile.c types and compiles.
 *
 * From loosest to tightest binding: || ; && ; comparisons (== != < <= > >=,
 * left-associative) ; + - ; * / % ; unary - and ! ; ^ (right-associative;
 * its right operand may carry a unary sign, 2^-1) ; calls, names, numbers,
 * strings, parentheses.  A binary or unary node's position is its
 * operator's; its text spans both operands.  Calls take an optional ".out"
 * (onnx(m).score); f(a,b)(body) is a lambda.
 *
 * Invariants: recursion is bounded by RANK_PARSE_MAX_DEPTH, so deeply nested
 * input fails cleanly; on failure the entry points free whatever was built.
 * The parser state and the error helpers are shared with parse.c (parser.c).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rank_syntax.h"

/* ---- expressions ------------------------------------------------------------------ */

static int expr(struct rank_parser *p, struct rank_ast **out);
static int unary(struct rank_parser *p, struct rank_ast **out);

static struct rank_ast *node(struct rank_parser *p, int kind, const struct rank_tok *at)
{
	struct rank_ast *a = base_calloc(1, sizeof *a);
	if (!a) {
		rank_parser_nomem(p);
		return NULL;
	}
	a->kind = kind;
	a->pos = rank_parser_pos(p, at);
	return a;
}

/* Give a its source text: from start to the end of the last token taken. */
static int set_text(struct rank_parser *p, struct rank_ast *a, const char *start)
{
	const char *end = p->lx->text + p->lx->off;
	if (!(a->text = base_strndup(start, (size_t)(end - start))))
		return rank_parser_nomem(p);
	return 0;
}

static int add_arg(struct rank_parser *p, struct rank_ast *a, struct rank_ast *arg)
{
	int rc = rank_parser_push(p, &a->args, &a->nargs, sizeof *a->args);
	if (rc) {
		rank_ast_free(arg);
		return rc;
	}
	a->args[a->nargs - 1] = arg;
	return 0;
}

/* Parse one expression and append it to a's arguments. */
static int expr_arg(struct rank_parser *p, struct rank_ast *a)
{
	struct rank_ast *v = NULL;
	int rc = expr(p, &v);
	if (rc) {
		rank_ast_free(v);
		return rc;
	}
	return add_arg(p, a, v);
}

/* After an item of a list: ',' (another item follows) or close (the end:
 * *end set); anything else fails "expected ',' or 'close' in what". */
static int list_sep(struct rank_parser *p, const char *close, const char *what, int *end)
{
	struct rank_tok t;
	rank_lex_next(p->lx, RANK_LEX_EXPR, &t);
	*end = rank_tok_is(&t, close);
	if (*end || rank_tok_is(&t, ","))
		return 0;
	return rank_parser_fail(p, &t, STRATA_PARSE, "expected ',' or '%s' in %s, found %s", close,
	                        what, rank_tok_quote(&t));
}

/* Arguments of a call after its '(' up to and including ')'. */
static int call_args(struct rank_parser *p, struct rank_ast *call, const struct rank_tok *nm)
{
	struct rank_tok t;
	rank_lex_peek(p->lx, RANK_LEX_EXPR, &t);
	if (rank_tok_is(&t, ")")) {
		rank_lex_take(p->lx, &t);
		return 0;
	}
	for (;;) {
		int rc = expr_arg(p, call);
		if (rc)
			return rc;
		rank_lex_next(p->lx, RANK_LEX_EXPR, &t);
		if (rank_tok_is(&t, ")"))
			return 0;
		if (!rank_tok_is(&t, ","))
			return rank_parser_fail(p, &t, STRATA_PARSE,
			                        "expected ',' or ')' in the arguments of '%.*s', found %s",
			                        (int)nm->len, nm->s, rank_tok_quote(&t));
	}
}

/* f(a, b)(body): call holds the parameters as bare-name arguments. */
static int lambda(struct rank_parser *p, struct rank_ast *call, const struct rank_tok *open)
{
	for (int i = 0; i < call->nargs; i++) {
		struct rank_ast *a = call->args[i];
		if (a->kind != RA_NAME || strchr(a->name, '.'))
			return rank_parser_fail_at(p, a->pos.line, a->pos.col, STRATA_PARSE,
			                           "a lambda parameter must be a name, found '%s'", a->text);
	}
	/* Move the parameter names over, then parse the body. */
	for (int i = 0; i < call->nargs; i++) {
		int rc = rank_parser_push(p, &call->params, &call->nparams, sizeof *call->params);
		if (rc)
			return rc;
		call->params[i] = call->args[i]->name;
		call->args[i]->name = NULL;
		rank_ast_free(call->args[i]);
		call->args[i] = NULL;
	}
	rank_vec_free(call->args, call->nargs, sizeof *call->args);
	call->args = NULL;
	call->nargs = 0;
	call->kind = RA_LAMBDA;
	base_strfree(call->name);
	call->name = NULL;
	int rc = expr_arg(p, call);
	if (rc)
		return rc;
	struct rank_tok t;
	rank_lex_next(p->lx, RANK_LEX_EXPR, &t);
	if (!rank_tok_is(&t, ")"))
		return rank_parser_fail(p, &t, STRATA_PARSE,
		                        "expected ')' closing the lambda opened at %d:%d, found %s",
		                        open->line, open->col, rank_tok_quote(&t));
	return 0;
}

/* ---- tensor literals and generators ------------------------------------------ */

/* Append one "dim:label" parameter to a. */
static int add_label(struct rank_parser *p, struct rank_ast *a, const char *dim, const char *label,
                     size_t len)
{
	int rc = rank_parser_push(p, &a->params, &a->nparams, sizeof *a->params);
	if (rc)
		return rc;
	size_t n = strlen(dim);
	char *buf = base_alloc(n + len + 2);
	if (!buf)
		return rank_parser_nomem(p);
	memcpy(buf, dim, n);
	buf[n] = ':';
	memcpy(buf + n + 1, label, len);
	buf[n + 1 + len] = 0;
	a->params[a->nparams - 1] = base_strdup(buf);
	base_free(buf, n + len + 2);
	return a->params[a->nparams - 1] ? 0 : rank_parser_nomem(p);
}

/* A label: a name, a number or a quoted string. */
static int label_tok(struct rank_parser *p, struct rank_tok *t, char **out)
{
	rank_lex_next(p->lx, RANK_LEX_EXPR, t);
	if (t->kind == RT_STR)
		*out = rank_tok_unquote(t);
	else if (t->kind == RT_NAME || t->kind == RT_NUM)
		*out = base_strndup(t->s, t->len);
	else
		return rank_parser_fail(p, t, STRATA_PARSE, "expected a label, found %s",
		                        rank_tok_quote(t));
	return *out ? 0 : rank_parser_nomem(p);
}

static int expect_tok(struct rank_parser *p, const char *what, const char *where)
{
	struct rank_tok t;
	rank_lex_next(p->lx, RANK_LEX_EXPR, &t);
	if (!rank_tok_is(&t, what))
		return rank_parser_fail(p, &t, STRATA_PARSE, "expected '%s' %s, found %s", what, where,
		                        rank_tok_quote(&t));
	return 0;
}

/* Values of a dense list "[..]" (nested lists flattened in order) into a's
 * args; each value's address is its position, given by the caller. */
static int dense_values(struct rank_parser *p, struct rank_ast *a)
{
	struct rank_tok t;
	rank_lex_peek(p->lx, RANK_LEX_EXPR, &t);
	if (rank_tok_is(&t, "]")) {
		rank_lex_take(p->lx, &t);
		return 0;
	}
	for (;;) {
		int rc;
		rank_lex_peek(p->lx, RANK_LEX_EXPR, &t);
		if (rank_tok_is(&t, "[")) {
			rank_lex_take(p->lx, &t);
			if ((rc = rank_parser_enter(p, &t)) || (rc = dense_values(p, a)))
				return rc;
			p->depth--;
		} else if ((rc = expr_arg(p, a)) != 0) {
			return rc;
		}
		int end;
		if ((rc = list_sep(p, "]", "a tensor literal", &end)) || end)
			return rc;
	}
}

/* Labels "dim:i" for the indexed dimensions of ty at dense position k. */
static int dense_labels(struct rank_parser *p, struct rank_ast *a, const struct rank_type *ty,
                        size_t k)
{
	char num[32];
	size_t rest = k;
	int64_t idx[RANK_MAX_RANK] = { 0 };
	for (int i = ty->rank - 1; i >= 0; i--) {
		if (ty->dims[i] == RANK_DIM_MAPPED)
			continue;
		idx[i] = (int64_t)(rest % (size_t)ty->dims[i]);
		rest /= (size_t)ty->dims[i];
	}
	for (int i = 0; i < ty->rank; i++) {
		if (ty->dims[i] == RANK_DIM_MAPPED)
			continue;
		int n = snprintf(num, sizeof num, "%lld", (long long)idx[i]);
		int rc = add_label(p, a, ty->dim_names[i], num, (size_t)n);
		if (rc)
			return rc;
	}
	return 0;
}

/* The cells of "{...}": verbose {{x:a,y:0}:1, ...}, mapped short {a:1, ...}
 * (one mapped dimension) or mixed short {a:[1, 2], ...} (one mapped
 * dimension and indexed ones). */
static int cells_form(struct rank_parser *p, struct rank_ast *a, const struct rank_type *ty)
{
	struct rank_tok t;
	int rc, nmapped = rank_type_mapped(ty);
	rank_lex_peek(p->lx, RANK_LEX_EXPR, &t);
	if (rank_tok_is(&t, "}")) {
		rank_lex_take(p->lx, &t);
		return 0;
	}
	for (;;) {
		rank_lex_peek(p->lx, RANK_LEX_EXPR, &t);
		if (rank_tok_is(&t, "{")) {
			/* {dim:label, ...}:value */
			rank_lex_take(p->lx, &t);
			int n = 0;
			struct rank_tok e;
			rank_lex_peek(p->lx, RANK_LEX_EXPR, &e);
			while (!rank_tok_is(&e, "}")) {
				struct rank_tok d;
				char *label = NULL;
				if ((rc = rank_parser_expect_name(p, RANK_LEX_EXPR, &d, "a dimension name")) ||
				    (rc = expect_tok(p, ":", "after a dimension name")) ||
				    (rc = label_tok(p, &e, &label)))
					return rc;
				char *dim = rank_parser_tokdup(p, &d);
				rc = dim ? add_label(p, a, dim, label, strlen(label)) : STRATA_NOMEM;
				base_strfree(dim);
				base_strfree(label);
				if (rc)
					return rc;
				n++;
				rank_lex_next(p->lx, RANK_LEX_EXPR, &e);
				if (rank_tok_is(&e, "}"))
					break;
				if (!rank_tok_is(&e, ","))
					return rank_parser_fail(p, &e, STRATA_PARSE,
					                        "expected ',' or '}' in a cell address, found %s",
					                        rank_tok_quote(&e));
				rank_lex_peek(p->lx, RANK_LEX_EXPR, &e);
			}
			if (rank_tok_is(&e, "}") && n == 0)
				rank_lex_take(p->lx, &e);
			if (n != ty->rank)
				return rank_parser_fail(p, &t, STRATA_TYPE,
				                        "a cell address of %s names %d dimension%s, not %d",
				                        a->name, n, n == 1 ? "" : "s", ty->rank);
			if ((rc = expect_tok(p, ":", "after a cell address")) || (rc = expr_arg(p, a)))
				return rc;
		} else {
			/* label:value or label:[dense values] */
			char *label = NULL;
			if (nmapped != 1)
				return rank_parser_fail(p, &t, STRATA_TYPE,
				                        "the short form {label: ...} needs one mapped "
				                        "dimension, %s has %d", a->name, nmapped);
			if ((rc = label_tok(p, &t, &label)))
				return rc;
			const char *mdim = NULL;
			for (int i = 0; i < ty->rank; i++)
				if (ty->dims[i] == RANK_DIM_MAPPED)
					mdim = ty->dim_names[i];
			if ((rc = expect_tok(p, ":", "after a label"))) {
				base_strfree(label);
				return rc;
			}
			int first = a->nargs;
			struct rank_tok b;
			rank_lex_peek(p->lx, RANK_LEX_EXPR, &b);
			if (rank_tok_is(&b, "[")) {
				rank_lex_take(p->lx, &b);
				rc = dense_values(p, a);
			} else {
				rc = expr_arg(p, a);
			}
			/* the address of each value: the label, then its dense position */
			for (int k = first; rc == 0 && k < a->nargs; k++) {
				for (int i = 0; rc == 0 && i < ty->rank; i++)
					if (ty->dims[i] == RANK_DIM_MAPPED)
						rc = add_label(p, a, mdim, label, strlen(label));
				if (rc == 0)
					rc = dense_labels(p, a, ty, (size_t)(k - first));
			}
			base_strfree(label);
			if (rc)
				return rc;
		}
		int end;
		if ((rc = list_sep(p, "}", "a tensor literal", &end)) || end)
			return rc;
	}
}

/* tensor<cell>(dims):value or tensor<cell>(dims)(generator body), at the
 * name token "tensor" (taken). */
static int tensor_expr(struct rank_parser *p, const struct rank_tok *nm, struct rank_ast **out)
{
	struct rank_lexer lx = *p->lx;
	struct rank_type ty;
	/* the type, read again from "tensor" */
	lx.off = (size_t)(nm->s - lx.text);
	lx.line = nm->line;
	lx.col = nm->col;
	int rc = rank_type_lex_mapped(&lx, &ty, p->err);
	if (rc)
		return rc;
	*p->lx = lx;
	struct rank_ast *a = node(p, RA_TENSOR, nm);
	if (!a) {
		rank_type_clear(&ty);
		return STRATA_NOMEM;
	}
	*out = a;
	if (!(a->name = base_strndup(nm->s, (size_t)(p->lx->text + p->lx->off - nm->s)))) {
		rank_type_clear(&ty);
		return rank_parser_nomem(p);
	}
	struct rank_tok t;
	rank_lex_next(p->lx, RANK_LEX_EXPR, &t);
	if (rank_tok_is(&t, "(")) {
		a->kind = RA_GEN;
		for (int i = 0; i < ty.rank && rc == 0; i++)
			if ((rc = rank_parser_push(p, &a->params, &a->nparams, sizeof *a->params)) == 0 &&
			    !(a->params[i] = base_strdup(ty.dim_names[i])))
				rc = rank_parser_nomem(p);
		if (rc == 0 && (rc = expr_arg(p, a)) == 0)
			rc = expect_tok(p, ")", "closing the tensor generator");
	} else if (!rank_tok_is(&t, ":")) {
		rc = rank_parser_fail(p, &t, STRATA_PARSE,
		                      "expected ':' (a literal) or '(' (a generator) after %s, found %s",
		                      a->name, rank_tok_quote(&t));
	} else {
		rank_lex_next(p->lx, RANK_LEX_EXPR, &t);
		if (rank_tok_is(&t, "["))
			rc = dense_values(p, a);
		else if (rank_tok_is(&t, "{"))
			rc = cells_form(p, a, &ty);
		else
			rc = rank_parser_fail(p, &t, STRATA_PARSE,
			                      "expected '[' or '{' after %s:, found %s", a->name,
			                      rank_tok_quote(&t));
	}
	rank_type_clear(&ty);
	return rc;
}

/* A name, a call name(args) with an optional ".out", or a lambda. */
static int name_expr(struct rank_parser *p, const struct rank_tok *nm, struct rank_ast **out)
{
	struct rank_tok t;
	rank_lex_peek(p->lx, RANK_LEX_EXPR, &t);
	if (rank_tok_is(nm, "tensor") && (rank_tok_is(&t, "(") || rank_tok_is(&t, "<")))
		return tensor_expr(p, nm, out);
	struct rank_ast *a = node(p, RA_NAME, nm);
	if (!a)
		return STRATA_NOMEM;
	*out = a;
	if (!(a->name = rank_parser_tokdup(p, nm)))
		return STRATA_NOMEM;
	if (!rank_tok_is(&t, "(")) {
		/* A dotted name (a.b) stays one name; compile.c decides. */
		while (rank_tok_is(&t, ".")) {
			struct rank_tok part;
			rank_lex_take(p->lx, &t);
			int rc = rank_parser_expect_name(p, RANK_LEX_EXPR, &part, "a name after '.'");
			if (rc)
				return rc;
			size_t n = strlen(a->name);
			char *joined = base_alloc(n + part.len + 2);
			if (!joined)
				return rank_parser_nomem(p);
			memcpy(joined, a->name, n);
			joined[n] = '.';
			memcpy(joined + n + 1, part.s, part.len);
			joined[n + 1 + part.len] = 0;
			char *exact = base_strdup(joined);
			base_free(joined, n + part.len + 2);
			if (!exact)
				return rank_parser_nomem(p);
			base_strfree(a->name);
			a->name = exact;
			rank_lex_peek(p->lx, RANK_LEX_EXPR, &t);
		}
		return 0;
	}
	struct rank_tok open = t;
	rank_lex_take(p->lx, &t);
	a->kind = RA_CALL;
	int rc = call_args(p, a, nm);
	if (rc)
		return rc;
	rank_lex_peek(p->lx, RANK_LEX_EXPR, &t);
	if (rank_tok_is(nm, "f") && rank_tok_is(&t, "(")) {
		rank_lex_take(p->lx, &t);
		return lambda(p, a, &open);
	}
	if (rank_tok_is(&t, ".")) {
		struct rank_tok o;
		rank_lex_take(p->lx, &t);
		if ((rc = rank_parser_expect_name(p, RANK_LEX_EXPR, &o, "an output name after '.'")) != 0)
			return rc;
		if (!(a->out = rank_parser_tokdup(p, &o)))
			return STRATA_NOMEM;
		rank_lex_peek(p->lx, RANK_LEX_EXPR, &t);
	}
	return 0;
}

/* The rest of a list of names "(a, b, ...)" after its first name, taken
 * with its ',': a call "()" of the names (rename's dimension lists). */
static int name_list(struct rank_parser *p, const struct rank_tok *open, struct rank_ast **out)
{
	struct rank_ast *first = *out;
	struct rank_ast *a = node(p, RA_CALL, open);
	if (!a)
		return STRATA_NOMEM;
	int rc;
	if (!(a->name = base_strdup("()"))) {
		rank_ast_free(a);
		return rank_parser_nomem(p);
	}
	*out = a;
	if ((rc = add_arg(p, a, first)) != 0)
		return rc;
	for (;;) {
		struct rank_tok t;
		if ((rc = rank_parser_expect_name(p, RANK_LEX_EXPR, &t, "a dimension name")) != 0)
			return rc;
		struct rank_ast *n = node(p, RA_NAME, &t);
		if (!n)
			return STRATA_NOMEM;
		if (!(n->name = rank_parser_tokdup(p, &t))) {
			rank_ast_free(n);
			return STRATA_NOMEM;
		}
		int end;
		if ((rc = add_arg(p, a, n)) != 0 ||
		    (rc = list_sep(p, ")", "a list of dimensions", &end)))
			return rc;
		if (end)
			return set_text(p, a, open->s);
	}
}

static int primary(struct rank_parser *p, struct rank_ast **out)
{
	struct rank_tok t;
	rank_lex_next(p->lx, RANK_LEX_EXPR, &t);
	const char *start = t.s;
	int rc;
	switch (t.kind) {
	case RT_NUM: {
		struct rank_ast *a = node(p, RA_NUM, &t);
		if (!a)
			return STRATA_NOMEM;
		*out = a;
		if ((rc = rank_tok_number(p->lx, &t, &a->num, p->err)) != 0)
			return rc;
		break;
	}
	case RT_STR: {
		struct rank_ast *a = node(p, RA_STR, &t);
		if (!a)
			return STRATA_NOMEM;
		*out = a;
		if (!(a->name = rank_tok_unquote(&t)))
			return rank_parser_nomem(p);
		break;
	}
	case RT_NAME:
		if ((rc = name_expr(p, &t, out)) != 0)
			return rc;
		break;
	case RT_PUNCT:
		if (rank_tok_is(&t, "(")) {
			if ((rc = rank_parser_enter(p, &t)) != 0)
				return rc;
			if ((rc = expr(p, out)) != 0)
				return rc;
			p->depth--;
			struct rank_tok c;
			rank_lex_next(p->lx, RANK_LEX_EXPR, &c);
			if (rank_tok_is(&c, ","))
				return name_list(p, &t, out);
			if (!rank_tok_is(&c, ")"))
				return rank_parser_fail(p, &c, STRATA_PARSE,
				                        "expected ')' closing the '(' at %d:%d, found %s", t.line,
				                        t.col,
				                        rank_tok_quote(&c));
			return 0; /* the inner node keeps its own text */
		}
		if (rank_tok_is(&t, "{") || rank_tok_is(&t, "["))
			return rank_parser_fail(p, &t, STRATA_NOT_IMPLEMENTED,
			                        "tensor literals in expressions are not supported (found %s)",
			                        rank_tok_quote(&t));
		return rank_parser_fail(p, &t, STRATA_PARSE, "expected an expression, found %s",
		                        rank_tok_quote(&t));
	case RT_BAD:
		if (t.s[0] == '"' || t.s[0] == '\'')
			return rank_parser_fail(p, &t, STRATA_PARSE, "unterminated string %s",
			                        rank_tok_quote(&t));
		return rank_parser_fail(p, &t, STRATA_PARSE, "unexpected %s in expression",
		                        rank_tok_quote(&t));
	default:
		return rank_parser_fail(p, &t, STRATA_PARSE, "expected an expression, found %s",
		                        rank_tok_quote(&t));
	}
	return set_text(p, *out, start);
}

static struct rank_ast *binary_node(struct rank_parser *p, int op, const struct rank_tok *at,
                                    struct rank_ast *l, struct rank_ast *r)
{
	struct rank_ast *a = node(p, RA_BINARY, at);
	if (!a)
		return NULL;
	a->op = op;
	a->args = base_calloc(rank_vec_cap(2), sizeof *a->args);
	if (!a->args) {
		base_free(a, sizeof *a);
		rank_parser_nomem(p);
		return NULL;
	}
	a->args[0] = l;
	a->args[1] = r;
	a->nargs = 2;
	return a;
}

/* One entry of a slice's address after '{': dim:label, or a lone label; a
 * label is a name, number or string, or (expression). */
static int slice_entry(struct rank_parser *p, struct rank_ast *a)
{
	struct rank_tok t, c;
	int rc;
	const char *dim = "";
	char *dimbuf = NULL;
	rank_lex_peek(p->lx, RANK_LEX_EXPR, &t);
	struct rank_lexer save = *p->lx;
	if (t.kind == RT_NAME) {
		rank_lex_take(p->lx, &t);
		rank_lex_peek(p->lx, RANK_LEX_EXPR, &c);
		if (rank_tok_is(&c, ":")) {
			rank_lex_take(p->lx, &c);
			if (!(dimbuf = rank_parser_tokdup(p, &t)))
				return STRATA_NOMEM;
			dim = dimbuf;
		} else {
			*p->lx = save; /* a lone label */
		}
	}
	rc = rank_parser_push(p, &a->params, &a->nparams, sizeof *a->params);
	if (rc == 0 && !(a->params[a->nparams - 1] = base_strdup(dim)))
		rc = rank_parser_nomem(p);
	base_strfree(dimbuf);
	if (rc)
		return rc;
	rank_lex_peek(p->lx, RANK_LEX_EXPR, &t);
	if (rank_tok_is(&t, "("))
		return expr_arg(p, a); /* a computed label: the parentheses are an expression */
	char *label = NULL;
	if ((rc = label_tok(p, &t, &label)))
		return rc;
	struct rank_ast *l = node(p, RA_STR, &t);
	if (!l) {
		base_strfree(label);
		return STRATA_NOMEM;
	}
	l->name = label;
	return add_arg(p, a, l);
}

/* Slices after a value: v{dim:label, ...} and v[index] (the only indexed
 * dimension), as a call "$slice" of the value and the labels, each label's
 * dimension in params ("" for v{label}, "[" for v[index]). */
static int slices(struct rank_parser *p, struct rank_ast **out, const char *start)
{
	struct rank_tok t;
	for (;;) {
		rank_lex_peek(p->lx, RANK_LEX_EXPR, &t);
		int brace = rank_tok_is(&t, "{");
		if (!brace && !rank_tok_is(&t, "["))
			return 0;
		rank_lex_take(p->lx, &t);
		struct rank_ast *a = node(p, RA_CALL, &t);
		if (!a)
			return STRATA_NOMEM;
		int rc, end = 0;
		if (!(a->name = base_strdup("$slice"))) {
			rank_ast_free(a);
			return rank_parser_nomem(p);
		}
		if ((rc = add_arg(p, a, *out)) != 0) {
			*out = NULL;
			rank_ast_free(a);
			return rc;
		}
		*out = a;
		if (!brace) {
			if ((rc = rank_parser_push(p, &a->params, &a->nparams, sizeof *a->params)) ||
			    !(a->params[0] = base_strdup("[")))
				return rc ? rc : rank_parser_nomem(p);
			if ((rc = expr_arg(p, a)) || (rc = expect_tok(p, "]", "closing the index")))
				return rc;
		}
		while (brace && !end)
			if ((rc = slice_entry(p, a)) || (rc = list_sep(p, "}", "a slice", &end)))
				return rc;
		if ((rc = set_text(p, a, start)))
			return rc;
	}
}

/* base ^ exponent, right-associative. */
static int power(struct rank_parser *p, struct rank_ast **out)
{
	struct rank_tok t;
	rank_lex_peek(p->lx, RANK_LEX_EXPR, &t);
	const char *start = t.s;
	int rc = primary(p, out);
	if (rc || (rc = slices(p, out, start)))
		return rc;
	rank_lex_peek(p->lx, RANK_LEX_EXPR, &t);
	if (!rank_tok_is(&t, "^"))
		return 0;
	rank_lex_take(p->lx, &t);
	if ((rc = rank_parser_enter(p, &t)) != 0)
		return rc;
	struct rank_ast *r = NULL;
	rc = unary(p, &r); /* unary -> power: right-associative, 2^-1 allowed */
	if (rc) {
		rank_ast_free(r);
		return rc;
	}
	p->depth--;
	struct rank_ast *a = binary_node(p, RB_POW, &t, *out, r);
	if (!a) {
		rank_ast_free(r);
		return STRATA_NOMEM;
	}
	*out = a;
	return set_text(p, a, start);
}

static int unary(struct rank_parser *p, struct rank_ast **out)
{
	struct rank_tok t;
	rank_lex_peek(p->lx, RANK_LEX_EXPR, &t);
	if (!rank_tok_is(&t, "-") && !rank_tok_is(&t, "!"))
		return power(p, out);
	rank_lex_take(p->lx, &t);
	int rc = rank_parser_enter(p, &t);
	if (rc)
		return rc;
	struct rank_ast *a = node(p, RA_UNARY, &t);
	if (!a)
		return STRATA_NOMEM;
	*out = a;
	a->op = t.s[0];
	struct rank_ast *arg = NULL;
	if ((rc = unary(p, &arg)) != 0) {
		rank_ast_free(arg);
		return rc;
	}
	p->depth--;
	if ((rc = add_arg(p, a, arg)) != 0)
		return rc;
	return set_text(p, a, t.s);
}

/* Binary levels from loosest (0) to tightest; unary() is below the last. */
static const struct {
	const char *tok;
	int op;
	int level;
} binops[] = {
	{"||", RB_OR, 0}, {"&&", RB_AND, 1},
	{"==", RB_EQ, 2}, {"!=", RB_NE, 2}, {"~=", RB_APPROX, 2}, {"<", RB_LT, 2}, {"<=", RB_LE, 2},
	{">", RB_GT, 2}, {">=", RB_GE, 2},
	{"+", RB_ADD, 3}, {"-", RB_SUB, 3},
	{"*", RB_MUL, 4}, {"/", RB_DIV, 4}, {"%", RB_MOD, 4},
};
#define NLEVELS 5

static int binop_at(const struct rank_tok *t, int level)
{
	if (t->kind != RT_PUNCT)
		return 0;
	for (size_t i = 0; i < sizeof binops / sizeof binops[0]; i++)
		if (binops[i].level == level && rank_tok_is(t, binops[i].tok))
			return binops[i].op;
	return 0;
}

/* x in [n1, n2, ...]: a call "$in" of x and the numbers (1 where x is one
 * of them, else 0). */
static int in_list(struct rank_parser *p, const struct rank_tok *op, struct rank_ast **out)
{
	struct rank_tok t;
	rank_lex_take(p->lx, op);
	struct rank_ast *a = node(p, RA_CALL, op);
	if (!a)
		return STRATA_NOMEM;
	int rc;
	if (!(a->name = base_strdup("$in"))) {
		rank_ast_free(a);
		return rank_parser_nomem(p);
	}
	if ((rc = add_arg(p, a, *out)) != 0) {
		*out = NULL;
		rank_ast_free(a);
		return rc;
	}
	*out = a;
	rank_lex_next(p->lx, RANK_LEX_EXPR, &t);
	if (!rank_tok_is(&t, "["))
		return rank_parser_fail(p, &t, STRATA_PARSE, "expected '[' after 'in', found %s",
		                        rank_tok_quote(&t));
	for (;;) {
		rank_lex_next(p->lx, RANK_LEX_EXPR, &t);
		int neg = rank_tok_is(&t, "-");
		if (neg)
			rank_lex_next(p->lx, RANK_LEX_EXPR, &t);
		if (t.kind != RT_NUM)
			return rank_parser_fail(p, &t, STRATA_NOT_IMPLEMENTED,
			                        "only numbers are supported in the list of 'in', found %s",
			                        rank_tok_quote(&t));
		struct rank_ast *n = node(p, RA_NUM, &t);
		if (!n)
			return STRATA_NOMEM;
		if ((rc = rank_tok_number(p->lx, &t, &n->num, p->err)) != 0) {
			rank_ast_free(n);
			return rc;
		}
		if (neg)
			n->num = -n->num;
		int end;
		if ((rc = add_arg(p, a, n)) != 0 || (rc = list_sep(p, "]", "the list of 'in'", &end)) ||
		    end)
			return rc;
	}
}

static int binary(struct rank_parser *p, int level, struct rank_ast **out)
{
	if (level == NLEVELS)
		return unary(p, out);
	struct rank_tok t;
	rank_lex_peek(p->lx, RANK_LEX_EXPR, &t);
	const char *start = t.s;
	int rc = binary(p, level + 1, out);
	if (rc)
		return rc;
	for (;;) {
		rank_lex_peek(p->lx, RANK_LEX_EXPR, &t);
		if (level == 2 && rank_tok_is(&t, "in")) {
			if ((rc = in_list(p, &t, out)) != 0 || (rc = set_text(p, *out, start)) != 0)
				return rc;
			continue;
		}
		int op = binop_at(&t, level);
		if (!op)
			return 0;
		rank_lex_take(p->lx, &t);
		struct rank_ast *r = NULL;
		if ((rc = binary(p, level + 1, &r)) != 0) {
			rank_ast_free(r);
			return rc;
		}
		struct rank_ast *a = binary_node(p, op, &t, *out, r);
		if (!a) {
			rank_ast_free(r);
			return STRATA_NOMEM;
		}
		*out = a;
		if ((rc = set_text(p, a, start)) != 0)
			return rc;
	}
}

static int expr(struct rank_parser *p, struct rank_ast **out)
{
	struct rank_tok t;
	rank_lex_peek(p->lx, RANK_LEX_EXPR, &t);
	int rc = rank_parser_enter(p, &t);
	if (rc)
		return rc;
	rc = binary(p, 0, out);
	p->depth--;
	return rc;
}

/* Entry points parse into a local root and hand it over only on success,
 * so the caller never sees a half-built tree. */
int rank_expr_lex(struct rank_lexer *lx, struct rank_ast **out, struct strata_error *err)
{
	struct rank_parser p = { .lx = lx, .err = err };
	struct rank_ast *a = NULL;
	int rc = expr(&p, &a);
	if (rc) {
		rank_ast_free(a);
		*out = NULL;
		return rc;
	}
	*out = a;
	return 0;
}

int rank_feature_lex(struct rank_lexer *lx, struct rank_ast **out, struct strata_error *err)
{
	struct rank_parser p = { .lx = lx, .err = err };
	struct rank_ast *a = NULL;
	struct rank_tok t;
	rank_lex_peek(lx, RANK_LEX_EXPR, &t);
	int rc = primary(&p, &a);
	if (rc == 0)
		rc = slices(&p, &a, t.s); /* attribute(t){x:1} */
	if (rc) {
		rank_ast_free(a);
		*out = NULL;
		return rc;
	}
	*out = a;
	return 0;
}

int rank_expr_parse(const char *file, const char *text, struct rank_ast **out,
                    struct strata_error *err)
{
	struct rank_lexer lx;
	struct rank_tok t;
	*out = NULL;
	rank_lex_init(&lx, file, text, strlen(text));
	int rc = rank_expr_lex(&lx, out, err);
	if (rc)
		return rc;
	rank_lex_peek(&lx, RANK_LEX_EXPR, &t);
	if (t.kind != RT_EOF) {
		char b[64];
		rc = rank_lex_err(&lx, &t, err, STRATA_PARSE, "unexpected %s after the expression",
		                  rank_tok_show(&t, b, sizeof b));
		rank_ast_free(*out);
		*out = NULL;
	}
	return rc;
}

