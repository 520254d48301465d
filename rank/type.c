/*
 * type.c: value types of the schema language ("double",
 * "tensor<float>(x[3],y[2])") as struct rank_type: parsing, formatting,
 * copying.  parse.c calls rank_type_lex() for field, input and constant
 * types; compile.c uses the helpers on the types it derives.
 *
 * Schema types are dense: every dimension is indexed and bound (x[N],
 * N >= 1).  Types in expressions (tensor literals and generators) may also
 * have mapped dimensions (x{}), marked RANK_DIM_MAPPED.  Dimensions keep
 * their declared order.  A number is rank 0 with double cells;
 * "tensor<float>()" is rank 0 with float cells.  The cell count of a type
 * always fits in RANK_TYPE_MAX_CELLS, so products never overflow
 * downstream.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rank_syntax.h"

#define RANK_TYPE_MAX_CELLS ((int64_t)1 << 31)

size_t rank_type_cells(const struct rank_type *t)
{
	size_t n = 1;
	for (int i = 0; i < t->rank; i++)
		if (t->dims[i] != RANK_DIM_MAPPED)
			n *= (size_t)t->dims[i];
	return n;
}

int rank_type_same_dims(const struct rank_type *a, const struct rank_type *b)
{
	if (a->rank != b->rank)
		return 0;
	for (int i = 0; i < a->rank; i++)
		if (a->dims[i] != b->dims[i] || strcmp(a->dim_names[i], b->dim_names[i]) != 0)
			return 0;
	return 1;
}

void rank_type_clear(struct rank_type *t)
{
	for (int i = 0; i < RANK_MAX_RANK; i++) {
		base_strfree(t->dim_names[i]);
		t->dim_names[i] = NULL;
	}
	t->rank = 0;
	t->cell = BASE_DT_DOUBLE;
}

int rank_type_copy(struct rank_type *dst, const struct rank_type *src)
{
	memset(dst, 0, sizeof *dst);
	dst->cell = src->cell;
	dst->rank = src->rank;
	for (int i = 0; i < src->rank; i++) {
		dst->dims[i] = src->dims[i];
		if (src->dim_names[i] && !(dst->dim_names[i] = base_strdup(src->dim_names[i]))) {
			rank_type_clear(dst);
			return STRATA_NOMEM;
		}
	}
	return 0;
}

/* The cell types a tensor type may name; int32 and int64 go beyond Vespa. */
static int cell_from_name(const char *s, size_t n)
{
	static const struct {
		const char *name;
		int dt;
	} cells[] = {
		{"float", BASE_DT_FLOAT}, {"double", BASE_DT_DOUBLE}, {"int8", BASE_DT_INT8},
		{"bfloat16", BASE_DT_BFLOAT16}, {"int32", BASE_DT_INT32}, {"int64", BASE_DT_INT64},
	};
	for (size_t i = 0; i < sizeof cells / sizeof cells[0]; i++)
		if (strlen(cells[i].name) == n && memcmp(cells[i].name, s, n) == 0)
			return cells[i].dt;
	return BASE_DT_UNDEFINED;
}

static int expect(struct rank_lexer *lx, const char *what, struct strata_error *err)
{
	struct rank_tok t;
	char b[64];
	rank_lex_peek(lx, RANK_LEX_SCHEMA, &t);
	if (!rank_tok_is(&t, what))
		return rank_lex_err(lx, &t, err, STRATA_PARSE, "expected '%s' in tensor type, found %s",
		                    what, rank_tok_show(&t, b, sizeof b));
	rank_lex_take(lx, &t);
	return 0;
}

/* One dimension: name[N], or name{} where mapped dimensions are allowed. */
static int dim_lex(struct rank_lexer *lx, struct rank_type *t, int mapped, struct strata_error *err)
{
	struct rank_tok nm, tk;
	char b[64];
	rank_lex_next(lx, RANK_LEX_EXPR, &nm);
	if (nm.kind != RT_NAME)
		return rank_lex_err(lx, &nm, err, STRATA_PARSE,
		                    "expected a dimension name in tensor type, found %s",
		                    rank_tok_show(&nm, b, sizeof b));
	if (t->rank == RANK_MAX_RANK)
		return rank_lex_err(lx, &nm, err, STRATA_NOT_IMPLEMENTED,
		                    "tensor types of more than %d dimensions are not supported",
		                    RANK_MAX_RANK);
	for (int i = 0; i < t->rank; i++)
		if (strlen(t->dim_names[i]) == nm.len && memcmp(t->dim_names[i], nm.s, nm.len) == 0)
			return rank_lex_err(lx, &nm, err, STRATA_TYPE,
			                    "dimension %s appears twice in tensor type",
			                    rank_tok_show(&nm, b, sizeof b));
	rank_lex_next(lx, RANK_LEX_SCHEMA, &tk);
	if (rank_tok_is(&tk, "{") && !mapped)
		return rank_lex_err(lx, &nm, err, STRATA_NOT_IMPLEMENTED,
		                    "mapped tensor dimensions are not supported (%.*s{})",
		                    (int)nm.len, nm.s);
	if (rank_tok_is(&tk, "{")) {
		int rc = expect(lx, "}", err);
		if (rc)
			return rc;
		if (!(t->dim_names[t->rank] = base_strndup(nm.s, nm.len)))
			return base_nomem(err, "tensor type");
		t->dims[t->rank++] = RANK_DIM_MAPPED;
		return 0;
	}
	if (!rank_tok_is(&tk, "["))
		return rank_lex_err(lx, &tk, err, STRATA_PARSE,
		                    "expected '[' or '{' after dimension name, found %s",
		                    rank_tok_show(&tk, b, sizeof b));
	rank_lex_next(lx, RANK_LEX_SCHEMA, &tk);
	if (rank_tok_is(&tk, "]"))
		return rank_lex_err(lx, &nm, err, STRATA_NOT_IMPLEMENTED,
		                    "indexed tensor dimensions without a size are not supported (%.*s[])",
		                    (int)nm.len, nm.s);
	int64_t size = 0;
	int ok = tk.kind == RT_NUM;
	for (size_t i = 0; ok && i < tk.len; i++) {
		if (tk.s[i] < '0' || tk.s[i] > '9' || size > RANK_TYPE_MAX_CELLS)
			ok = 0;
		else
			size = size * 10 + (tk.s[i] - '0');
	}
	if (!ok || size < 1 || size > RANK_TYPE_MAX_CELLS)
		return rank_lex_err(lx, &tk, err, tk.kind == RT_NUM ? STRATA_TYPE : STRATA_PARSE,
		                    "dimension size must be a positive integer, found %s",
		                    rank_tok_show(&tk, b, sizeof b));
	if ((int64_t)rank_type_cells(t) * size > RANK_TYPE_MAX_CELLS)
		return rank_lex_err(lx, &tk, err, STRATA_LIMIT,
		                    "tensor type has more than %lld cells",
		                    (long long)RANK_TYPE_MAX_CELLS);
	int rc = expect(lx, "]", err);
	if (rc)
		return rc;
	if (!(t->dim_names[t->rank] = base_strndup(nm.s, nm.len)))
		return base_nomem(err, "tensor type");
	t->dims[t->rank++] = size;
	return 0;
}

static int type_lex(struct rank_lexer *lx, struct rank_type *t, int mapped,
                    struct strata_error *err)
{
	struct rank_tok tk;
	char b[64];
	rank_lex_next(lx, RANK_LEX_SCHEMA, &tk);
	if (rank_tok_is(&tk, "double") || rank_tok_is(&tk, "float"))
		return 0; /* a number: rank 0, double cells */
	if (!rank_tok_is(&tk, "tensor")) {
		if (tk.kind == RT_NAME)
			return rank_lex_err(lx, &tk, err, STRATA_TYPE,
			                    "unknown type %s (expected double or tensor<cell>(dims))",
			                    rank_tok_show(&tk, b, sizeof b));
		return rank_lex_err(lx, &tk, err, STRATA_PARSE, "expected a type, found %s",
		                    rank_tok_show(&tk, b, sizeof b));
	}
	rank_lex_peek(lx, RANK_LEX_SCHEMA, &tk);
	if (rank_tok_is(&tk, "<")) {
		rank_lex_take(lx, &tk);
		rank_lex_next(lx, RANK_LEX_SCHEMA, &tk);
		if (tk.kind != RT_NAME)
			return rank_lex_err(lx, &tk, err, STRATA_PARSE,
			                    "expected a cell type after 'tensor<', found %s",
			                    rank_tok_show(&tk, b, sizeof b));
		int cell = cell_from_name(tk.s, tk.len);
		if (cell == BASE_DT_UNDEFINED)
			return rank_lex_err(lx, &tk, err, STRATA_TYPE,
			                    "unknown tensor cell type %s (expected float, double, int8, "
			                    "bfloat16, int32 or int64)",
			                    rank_tok_show(&tk, b, sizeof b));
		t->cell = cell;
		int rc = expect(lx, ">", err);
		if (rc)
			return rc;
	}
	int rc = expect(lx, "(", err);
	if (rc)
		return rc;
	rank_lex_peek(lx, RANK_LEX_SCHEMA, &tk);
	if (rank_tok_is(&tk, ")")) {
		rank_lex_take(lx, &tk);
		return 0;
	}
	for (;;) {
		if ((rc = dim_lex(lx, t, mapped, err)) != 0)
			return rc;
		rank_lex_next(lx, RANK_LEX_SCHEMA, &tk);
		if (rank_tok_is(&tk, ")"))
			return 0;
		if (!rank_tok_is(&tk, ","))
			return rank_lex_err(lx, &tk, err, STRATA_PARSE,
			                    "expected ',' or ')' in tensor type, found %s",
			                    rank_tok_show(&tk, b, sizeof b));
	}
}

static int lex_type(struct rank_lexer *lx, struct rank_type *t, int mapped,
                    struct strata_error *err)
{
	memset(t, 0, sizeof *t);
	t->cell = BASE_DT_DOUBLE;
	int rc = type_lex(lx, t, mapped, err);
	if (rc)
		rank_type_clear(t);
	return rc;
}

int rank_type_lex(struct rank_lexer *lx, struct rank_type *t, struct strata_error *err)
{
	return lex_type(lx, t, 0, err);
}

int rank_type_lex_mapped(struct rank_lexer *lx, struct rank_type *t, struct strata_error *err)
{
	return lex_type(lx, t, 1, err);
}

static int parse_type(const char *text, struct rank_type *t, int mapped)
{
	struct rank_lexer lx;
	struct rank_tok tk;
	rank_lex_init(&lx, "type", text, strlen(text));
	int rc = lex_type(&lx, t, mapped, NULL);
	if (rc == 0) {
		rank_lex_peek(&lx, RANK_LEX_SCHEMA, &tk);
		if (tk.kind != RT_EOF) {
			rank_type_clear(t);
			rc = STRATA_PARSE;
		}
	}
	/* The contract of this helper is parse-or-not; only memory differs. */
	return rc == 0 || rc == STRATA_NOMEM ? rc : STRATA_PARSE;
}

int rank_type_parse(const char *text, struct rank_type *t)
{
	return parse_type(text, t, 0);
}

int rank_type_parse_mapped(const char *text, struct rank_type *t)
{
	return parse_type(text, t, 1);
}

const char *rank_type_str(const struct rank_type *t, char *buf, size_t n)
{
	if (!n)
		return buf;
	if (t->rank == 0 && t->cell == BASE_DT_DOUBLE) {
		snprintf(buf, n, "double");
		return buf;
	}
	size_t at = 0;
	int w;
	if (t->cell == BASE_DT_DOUBLE)
		w = snprintf(buf, n, "tensor(");
	else
		w = snprintf(buf, n, "tensor<%s>(", base_dtype_name(t->cell));
	at = w < 0 ? n : (size_t)w;
	for (int i = 0; i < t->rank && at < n; i++) {
		if (t->dims[i] == RANK_DIM_MAPPED)
			w = snprintf(buf + at, n - at, "%s%s{}", i ? "," : "",
			             t->dim_names[i] ? t->dim_names[i] : "?");
		else
			w = snprintf(buf + at, n - at, "%s%s[%lld]", i ? "," : "",
			             t->dim_names[i] ? t->dim_names[i] : "?", (long long)t->dims[i]);
		at += w < 0 ? n : (size_t)w;
	}
	if (at < n)
		snprintf(buf + at, n - at, ")");
	return buf;
}
