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
 * Accepted and ignored because they change nothing in what Strata computes:
 * attribute: fast-search / fast-access / paged / mutable, HNSW index blocks on
 * tensor fields (search is exact), onnx-model thread and device settings, and
 * rank-profile thread settings.
 *
 * Invariants: the parser never reads past the text (the lexer bounds every
 * token); value nesting is bounded by MAX_DEPTH; the partly built AST is
 * always freeable (see schema.c), so any error just frees the whole struct
 * rank_sd.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rank_int.h"

#define MAX_DEPTH 200       /* nesting of value lists */
#define MAX_VALUES (1 << 24) /* cells in one constant or default value */

struct parser {
	struct rank_lexer *lx;
	struct strata_error *err;
	struct rank_sd *sd; /* NULL when parsing a lone expression */
	int depth;
};

static int fail(struct parser *p, const struct rank_tok *t, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int fail(struct parser *p, const struct rank_tok *t, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = rank_lex_verr(p->lx, t->line, t->col, p->err, code, fmt, ap);
	va_end(ap);
	return rc;
}

static int nomem(struct parser *p)
{
	return base_err(p->err, STRATA_NOMEM, "%s:%d:%d: out of memory", p->lx->file, p->lx->line,
	                p->lx->col);
}

static int push(struct parser *p, void *arrp, int *n, size_t elem)
{
	int rc = rank_vec_push(arrp, n, elem);
	if (rc == STRATA_LIMIT)
		return base_err(p->err, rc, "%s:%d:%d: too many elements", p->lx->file, p->lx->line,
		                p->lx->col);
	return rc ? nomem(p) : 0;
}

/* Quote t for a message.  Two buffers take turns, so one message may quote
 * two tokens; it is formatted before the next call. */
static const char *show(const struct rank_tok *t)
{
	static _Thread_local char buf[2][64];
	static _Thread_local int turn;
	turn ^= 1;
	return rank_tok_show(t, buf[turn], sizeof buf[turn]);
}

static char *tokdup(struct parser *p, const struct rank_tok *t)
{
	char *s = base_strndup(t->s, t->len);
	if (!s)
		nomem(p);
	return s;
}

static struct rank_pos tokpos(struct parser *p, const struct rank_tok *t)
{
	struct rank_pos ps = {p->lx->file, t->line, t->col};
	return ps;
}

static void peek(struct parser *p, int mode, struct rank_tok *t)
{
	rank_lex_peek(p->lx, mode, t);
}

static void next(struct parser *p, int mode, struct rank_tok *t)
{
	rank_lex_next(p->lx, mode, t);
}

/* Consume the punctuation or keyword s or fail, naming where (context). */
static int expect(struct parser *p, const char *s, const char *context)
{
	struct rank_tok t;
	peek(p, RANK_LEX_SCHEMA, &t);
	if (!rank_tok_is(&t, s))
		return fail(p, &t, STRATA_PARSE, "expected '%s' %s, found %s", s, context, show(&t));
	rank_lex_take(p->lx, &t);
	return 0;
}

static int expect_name(struct parser *p, int mode, struct rank_tok *t, const char *what)
{
	next(p, mode, t);
	if (t->kind != RT_NAME)
		return fail(p, t, STRATA_PARSE, "expected %s, found %s", what, show(t));
	return 0;
}

static int name_in(const struct rank_tok *t, const char *const *list)
{
	for (int i = 0; list[i]; i++)
		if (rank_tok_is(t, list[i]))
			return 1;
	return 0;
}

static int enter(struct parser *p, const struct rank_tok *t)
{
	if (++p->depth > MAX_DEPTH)
		return fail(p, t, STRATA_LIMIT, "expression nested more than %d deep", MAX_DEPTH);
	return 0;
}

/* ---- values: numbers and dense tensor literals ---------------------------------- */

/* A number with an optional sign. */
static int signed_number(struct parser *p, double *v)
{
	struct rank_tok t;
	int neg = 0;
	next(p, RANK_LEX_SCHEMA, &t);
	if (rank_tok_is(&t, "-") || rank_tok_is(&t, "+")) {
		neg = t.s[0] == '-';
		next(p, RANK_LEX_SCHEMA, &t);
	}
	if (t.kind != RT_NUM)
		return fail(p, &t, STRATA_PARSE, "expected a number, found %s", show(&t));
	int rc = rank_tok_number(p->lx, &t, v, p->err);
	if (neg)
		*v = -*v;
	return rc;
}

struct cells {
	double *v;
	size_t n, cap;
};

/* A '[' list of numbers or of nested lists, flattened in order. */
static int value_list(struct parser *p, struct cells *c)
{
	struct rank_tok t;
	next(p, RANK_LEX_SCHEMA, &t); /* the '[' */
	int rc = enter(p, &t);
	if (rc)
		return rc;
	peek(p, RANK_LEX_SCHEMA, &t);
	if (rank_tok_is(&t, "]")) {
		rank_lex_take(p->lx, &t);
		p->depth--;
		return 0;
	}
	for (;;) {
		peek(p, RANK_LEX_SCHEMA, &t);
		if (rank_tok_is(&t, "[")) {
			if ((rc = value_list(p, c)) != 0)
				return rc;
		} else {
			double v;
			if ((rc = signed_number(p, &v)) != 0)
				return rc;
			rc = base_grow((void **)&c->v, &c->cap, c->n + 1, sizeof *c->v, MAX_VALUES);
			if (rc == STRATA_LIMIT)
				return fail(p, &t, rc, "more than %d values", MAX_VALUES);
			if (rc)
				return nomem(p);
			c->v[c->n++] = v;
		}
		next(p, RANK_LEX_SCHEMA, &t);
		if (rank_tok_is(&t, "]"))
			break;
		if (!rank_tok_is(&t, ","))
			return fail(p, &t, STRATA_PARSE, "expected ',' or ']' in a tensor value, found %s",
			            show(&t));
	}
	p->depth--;
	return 0;
}

/* The value of a constant or an input default, of type ty: a number for a
 * rank-0 type, else a dense literal with exactly the type's cell count. */
static int value(struct parser *p, const struct rank_type *ty, double **out, size_t *nout)
{
	struct rank_tok t;
	peek(p, RANK_LEX_SCHEMA, &t);
	size_t want = rank_type_cells(ty);
	struct cells c = {NULL, 0, 0};
	int rc;
	if (rank_tok_is(&t, "{"))
		return fail(p, &t, STRATA_NOT_IMPLEMENTED, "mapped tensor values ({...}) are not supported");
	if (rank_tok_is(&t, "file") || rank_tok_is(&t, "uri"))
		return fail(p, &t, STRATA_NOT_IMPLEMENTED, "constant values read from files are not supported");
	if (rank_tok_is(&t, "[")) {
		rc = value_list(p, &c);
	} else {
		rc = base_grow((void **)&c.v, &c.cap, 1, sizeof *c.v, MAX_VALUES) ? nomem(p) : 0;
		if (!rc && (rc = signed_number(p, &c.v[0])) == 0)
			c.n = 1;
		/* A single number fills a rank-0 type only. */
		if (!rc && ty->rank > 0)
			rc = fail(p, &t, STRATA_TYPE, "a tensor value must be a '[...]' list, found %s",
			          show(&t));
	}
	if (!rc && c.n != want)
		rc = fail(p, &t, STRATA_TYPE, "the value has %zu cells, its type %zu", c.n, want);
	if (!rc) {
		/* Keep exactly n cells: the AST frees with ncells. */
		double *v = base_alloc(want * sizeof *v);
		if (!v) {
			rc = nomem(p);
		} else {
			memcpy(v, c.v, want * sizeof *v);
			*out = v;
			*nout = want;
		}
	}
	if (c.v)
		base_free(c.v, c.cap * sizeof *c.v);
	return rc;
}

/* 1 if the next token starts a type (the type of an input or a constant is optional). */
static int starts_type(struct parser *p)
{
	struct rank_tok t;
	peek(p, RANK_LEX_SCHEMA, &t);
	return rank_tok_is(&t, "tensor") || rank_tok_is(&t, "double") || rank_tok_is(&t, "float");
}

/* ---- fields ----------------------------------------------------------------------- */

static const char *const unsupported_field_types[] = {
	"byte", "position", "array", "weightedset", "map", "predicate", "raw", "uri", "reference",
	"annotationreference", "float16", "int8", NULL,
};

/* Field settings Vespa has and Strata does not (yet). */
static const char *const unsupported_field_settings[] = {
	"match", "rank", "weight", "bolding", "stemming", "normalizing", "alias", "sorting",
	"rank-type", "id", "query-command", "dictionary", "struct-field", "summary-to",
	"indexing-rewrite", "literal-boost", "body", "header", NULL,
};

static const char *const ignored_attribute_settings[] = {
	"fast-search", "fast-access", "paged", "mutable", "fast-rank", "enable-bit-vectors",
	"enable-only-bit-vector", NULL,
};

static int field_type(struct parser *p, struct rank_field *f)
{
	static const struct {
		const char *name;
		int type;
	} simple[] = {
		{"string", RANK_FT_STRING}, {"int", RANK_FT_INT}, {"long", RANK_FT_LONG},
		{"float", RANK_FT_FLOAT}, {"double", RANK_FT_DOUBLE}, {"bool", RANK_FT_BOOL},
	};
	struct rank_tok t;
	peek(p, RANK_LEX_SCHEMA, &t);
	for (size_t i = 0; i < sizeof simple / sizeof simple[0]; i++) {
		if (rank_tok_is(&t, simple[i].name)) {
			rank_lex_take(p->lx, &t);
			f->type = simple[i].type;
			return 0;
		}
	}
	if (rank_tok_is(&t, "tensor")) {
		struct rank_type ty;
		int rc = rank_type_lex(p->lx, &ty, p->err);
		if (rc)
			return rc;
		if (ty.rank == 0) {
			rank_type_clear(&ty);
			return fail(p, &t, STRATA_TYPE, "a tensor field needs at least one dimension");
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
	if (name_in(&t, unsupported_field_types))
		return fail(p, &t, STRATA_NOT_IMPLEMENTED, "field type %s is not supported", show(&t));
	if (t.kind == RT_NAME)
		return fail(p, &t, STRATA_TYPE, "unknown field type %s", show(&t));
	return fail(p, &t, STRATA_PARSE, "expected a field type, found %s", show(&t));
}

static int distance_metric(struct parser *p, struct rank_field *f)
{
	static const struct {
		const char *name;
		int metric;
	} metrics[] = {
		{"euclidean", RANK_DIST_EUCLIDEAN}, {"angular", RANK_DIST_ANGULAR},
		{"dotproduct", RANK_DIST_DOTPRODUCT},
		{"prenormalized-angular", RANK_DIST_PRENORMALIZED_ANGULAR},
	};
	static const char *const unsupported[] = {"innerproduct", "hamming", "geodegrees", NULL};
	struct rank_tok t;
	int rc = expect(p, ":", "after 'distance-metric'");
	if (rc)
		return rc;
	next(p, RANK_LEX_SCHEMA, &t);
	for (size_t i = 0; i < sizeof metrics / sizeof metrics[0]; i++) {
		if (rank_tok_is(&t, metrics[i].name)) {
			f->distance_metric = metrics[i].metric;
			return 0;
		}
	}
	if (name_in(&t, unsupported))
		return fail(p, &t, STRATA_NOT_IMPLEMENTED, "distance-metric %s is not supported", show(&t));
	if (t.kind == RT_NAME)
		return fail(p, &t, STRATA_TYPE, "unknown distance-metric %s", show(&t));
	return fail(p, &t, STRATA_PARSE, "expected a distance metric, found %s", show(&t));
}

/* indexing: a | b | c, up to the end of the line, ';' or '}'. */
static int indexing(struct parser *p, struct rank_field *f)
{
	struct rank_tok t;
	peek(p, RANK_LEX_SCHEMA, &t);
	if (rank_tok_is(&t, "{"))
		return fail(p, &t, STRATA_NOT_IMPLEMENTED, "indexing blocks (indexing { ... }) are not supported");
	int rc = expect(p, ":", "after 'indexing'");
	if (rc)
		return rc;
	for (;;) {
		next(p, RANK_LEX_SCHEMA, &t);
		if (rank_tok_is(&t, "summary")) {
			f->summary = 1;
		} else if (rank_tok_is(&t, "attribute")) {
			f->attribute = 1;
		} else if (rank_tok_is(&t, "index")) {
			/* On a tensor, index asks for an HNSW graph; search stays exact. */
			if (f->type == RANK_FT_STRING)
				return fail(p, &t, STRATA_NOT_IMPLEMENTED,
				            "text indexes ('indexing: index' on string field '%s') are not "
				            "supported", f->name);
			if (f->type != RANK_FT_TENSOR)
				return fail(p, &t, STRATA_NOT_IMPLEMENTED,
				            "'indexing: index' on field '%s' is not supported", f->name);
		} else if (t.kind == RT_NAME || t.kind == RT_STR) {
			return fail(p, &t, STRATA_NOT_IMPLEMENTED,
			            "indexing statement %s is not supported (only summary, attribute, index)",
			            show(&t));
		} else {
			return fail(p, &t, STRATA_PARSE, "expected an indexing statement, found %s", show(&t));
		}
		peek(p, RANK_LEX_SCHEMA, &t);
		if (rank_tok_is(&t, "|")) {
			rank_lex_take(p->lx, &t);
			continue;
		}
		if (rank_tok_is(&t, ";")) {
			rank_lex_take(p->lx, &t);
			return 0;
		}
		if (t.nl_before || rank_tok_is(&t, "}") || t.kind == RT_EOF)
			return 0;
		return fail(p, &t, STRATA_PARSE, "expected '|' between indexing statements, found %s",
		            show(&t));
	}
}

/* Skip a balanced { ... } block whose '{' is next. */
static int skip_block(struct parser *p)
{
	struct rank_tok t, open;
	int level = 0;
	peek(p, RANK_LEX_SCHEMA, &open);
	do {
		next(p, RANK_LEX_SCHEMA, &t);
		if (t.kind == RT_EOF)
			return fail(p, &open, STRATA_PARSE, "the '{' here is never closed");
		if (rank_tok_is(&t, "{"))
			level++;
		else if (rank_tok_is(&t, "}"))
			level--;
	} while (level > 0);
	return 0;
}

static int attribute_setting(struct parser *p, struct rank_field *f, const struct rank_tok *t)
{
	if (rank_tok_is(t, "distance-metric"))
		return distance_metric(p, f);
	if (name_in(t, ignored_attribute_settings))
		return 0;
	if (t->kind == RT_NAME)
		return fail(p, t, STRATA_NOT_IMPLEMENTED, "attribute setting %s is not supported", show(t));
	return fail(p, t, STRATA_PARSE, "expected an attribute setting, found %s", show(t));
}

static int field_body(struct parser *p, struct rank_field *f)
{
	struct rank_tok t;
	int rc;
	for (;;) {
		next(p, RANK_LEX_SCHEMA, &t);
		if (rank_tok_is(&t, "}"))
			return 0;
		if (rank_tok_is(&t, "indexing")) {
			rc = indexing(p, f);
		} else if (rank_tok_is(&t, "attribute")) {
			struct rank_tok s;
			next(p, RANK_LEX_SCHEMA, &s);
			if (rank_tok_is(&s, ":")) {
				next(p, RANK_LEX_SCHEMA, &s);
				rc = attribute_setting(p, f, &s);
			} else if (rank_tok_is(&s, "{")) {
				rc = 0;
				for (;;) {
					next(p, RANK_LEX_SCHEMA, &s);
					if (rank_tok_is(&s, "}") || rc)
						break;
					rc = attribute_setting(p, f, &s);
				}
			} else {
				rc = fail(p, &s, STRATA_PARSE, "expected ':' or '{' after 'attribute', found %s",
				          show(&s));
			}
		} else if (rank_tok_is(&t, "summary")) {
			rc = fail(p, &t, STRATA_NOT_IMPLEMENTED,
			          "summary settings are not supported (use 'indexing: summary')");
		} else if (rank_tok_is(&t, "index")) {
			struct rank_tok s;
			peek(p, RANK_LEX_SCHEMA, &s);
			/* HNSW parameters of a tensor field: accepted, search is exact. */
			if (f->type == RANK_FT_TENSOR && rank_tok_is(&s, "{"))
				rc = skip_block(p);
			else
				rc = fail(p, &t, STRATA_NOT_IMPLEMENTED, "index settings are not supported");
		} else if (name_in(&t, unsupported_field_settings)) {
			rc = fail(p, &t, STRATA_NOT_IMPLEMENTED, "field setting %s is not supported", show(&t));
		} else if (t.kind == RT_EOF) {
			rc = fail(p, &t, STRATA_PARSE, "field '%s' is not closed: expected '}', found end of file",
			          f->name);
		} else {
			rc = fail(p, &t, STRATA_PARSE, "unexpected %s in field '%s'", show(&t), f->name);
		}
		if (rc)
			return rc;
	}
}

static int field(struct parser *p)
{
	struct rank_sd *sd = p->sd;
	struct rank_tok nm, t;
	int rc = expect_name(p, RANK_LEX_SCHEMA, &nm, "a field name");
	if (rc)
		return rc;
	for (int i = 0; i < sd->nfields; i++)
		if (strlen(sd->fields[i].name) == nm.len && memcmp(sd->fields[i].name, nm.s, nm.len) == 0)
			return fail(p, &nm, STRATA_TYPE, "field %s is declared twice (first at %d:%d)",
			            show(&nm), sd->fields[i].line, sd->fields[i].col);
	if ((rc = push(p, &sd->fields, &sd->nfields, sizeof *sd->fields)) != 0)
		return rc;
	struct rank_field *f = &sd->fields[sd->nfields - 1];
	f->line = nm.line;
	f->col = nm.col;
	f->distance_metric = RANK_DIST_EUCLIDEAN;
	if (!(f->name = tokdup(p, &nm)))
		return STRATA_NOMEM;
	if ((rc = expect(p, "type", "after the field name")) != 0)
		return rc;
	if ((rc = field_type(p, f)) != 0)
		return rc;
	peek(p, RANK_LEX_SCHEMA, &t);
	if (!rank_tok_is(&t, "{"))
		return fail(p, &t, STRATA_PARSE, "expected '{' after the type of field '%s', found %s",
		            f->name, show(&t));
	rank_lex_take(p->lx, &t);
	return field_body(p, f);
}

static const char *const unsupported_document_items[] = {"struct", "annotation", "compression", NULL};

static int document(struct parser *p, const struct rank_tok *kw)
{
	struct rank_tok t;
	next(p, RANK_LEX_SCHEMA, &t);
	if (t.kind == RT_NAME) {
		if (strlen(p->sd->name) != t.len || memcmp(p->sd->name, t.s, t.len) != 0)
			return fail(p, &t, STRATA_TYPE, "document %s must have the schema's name '%s'",
			            show(&t), p->sd->name);
		next(p, RANK_LEX_SCHEMA, &t);
	}
	if (rank_tok_is(&t, "inherits"))
		return fail(p, &t, STRATA_NOT_IMPLEMENTED, "document inheritance is not supported");
	if (!rank_tok_is(&t, "{"))
		return fail(p, &t, STRATA_PARSE, "expected '{' after 'document %s', found %s", p->sd->name,
		            show(&t));
	for (;;) {
		int rc;
		next(p, RANK_LEX_SCHEMA, &t);
		if (rank_tok_is(&t, "}"))
			return 0;
		if (rank_tok_is(&t, "field"))
			rc = field(p);
		else if (name_in(&t, unsupported_document_items))
			rc = fail(p, &t, STRATA_NOT_IMPLEMENTED, "%s is not supported", show(&t));
		else if (t.kind == RT_EOF)
			rc = fail(p, kw, STRATA_PARSE, "the document block is never closed");
		else
			rc = fail(p, &t, STRATA_PARSE, "expected 'field' or '}' in the document, found %s",
			          show(&t));
		if (rc)
			return rc;
	}
}

/* ---- onnx-model ----------------------------------------------------------------------- */

static const char *const ignored_model_settings[] = {
	"gpu-device", "intraop-threads", "interop-threads", "execution-mode", NULL,
};

/* The name of a model input or output: "quoted" or a bare name. */
static int io_name(struct parser *p, const char *what, struct rank_tok *t, char **out)
{
	next(p, RANK_LEX_SCHEMA, t);
	if (t->kind == RT_STR)
		*out = rank_tok_unquote(t);
	else if (t->kind == RT_NAME)
		*out = tokdup(p, t);
	else
		return fail(p, t, STRATA_PARSE, "expected the %s name, found %s", what, show(t));
	return *out ? 0 : STRATA_NOMEM;
}

static int model(struct parser *p, struct rank_model_decl **arr, int *n)
{
	struct rank_tok nm, t;
	int rc = expect_name(p, RANK_LEX_SCHEMA, &nm, "an onnx-model name");
	if (rc)
		return rc;
	for (int i = 0; i < *n; i++)
		if (strlen((*arr)[i].name) == nm.len && memcmp((*arr)[i].name, nm.s, nm.len) == 0)
			return fail(p, &nm, STRATA_TYPE, "onnx-model %s is declared twice", show(&nm));
	if ((rc = push(p, arr, n, sizeof **arr)) != 0)
		return rc;
	struct rank_model_decl *m = &(*arr)[*n - 1];
	m->pos = tokpos(p, &nm);
	if (!(m->name = tokdup(p, &nm)))
		return STRATA_NOMEM;
	if ((rc = expect(p, "{", "after the onnx-model name")) != 0)
		return rc;
	for (;;) {
		next(p, RANK_LEX_SCHEMA, &t);
		if (rank_tok_is(&t, "}"))
			break;
		if (rank_tok_is(&t, "file")) {
			if ((rc = expect(p, ":", "after 'file'")) != 0)
				return rc;
			struct rank_tok w;
			rank_lex_word(p->lx, &w);
			if (w.kind != RT_NAME)
				return fail(p, &w, STRATA_PARSE, "expected a file path after 'file:'");
			rank_lex_take(p->lx, &w);
			base_strfree(m->file);
			if (!(m->file = tokdup(p, &w)))
				return STRATA_NOMEM;
		} else if (rank_tok_is(&t, "input")) {
			if ((rc = push(p, &m->inputs, &m->ninputs, sizeof *m->inputs)) != 0)
				return rc;
			struct rank_model_input *in = &m->inputs[m->ninputs - 1];
			struct rank_tok at;
			if ((rc = io_name(p, "input", &at, &in->name)) != 0)
				return rc;
			in->pos = tokpos(p, &at);
			if ((rc = expect(p, ":", "after the model input name")) != 0)
				return rc;
			if ((rc = rank_feature_lex(p->lx, &in->source, p->err)) != 0)
				return rc;
		} else if (rank_tok_is(&t, "output")) {
			if ((rc = push(p, &m->outputs, &m->noutputs, sizeof *m->outputs)) != 0)
				return rc;
			struct rank_model_output *o = &m->outputs[m->noutputs - 1];
			struct rank_tok at, al;
			if ((rc = io_name(p, "output", &at, &o->name)) != 0)
				return rc;
			o->pos = tokpos(p, &at);
			if ((rc = expect(p, ":", "after the model output name")) != 0)
				return rc;
			if ((rc = io_name(p, "output alias", &al, &o->alias)) != 0)
				return rc;
		} else if (name_in(&t, ignored_model_settings)) {
			/* How the model runs elsewhere; Strata runs it its own way. */
			struct rank_tok w;
			if ((rc = expect(p, ":", "after the setting name")) != 0)
				return rc;
			rank_lex_word(p->lx, &w);
			rank_lex_take(p->lx, &w);
		} else {
			return fail(p, &t, STRATA_PARSE,
			            "expected 'file', 'input', 'output' or '}' in onnx-model '%s', found %s",
			            m->name, show(&t));
		}
	}
	if (!m->file)
		return fail(p, &nm, STRATA_TYPE, "onnx-model '%s' has no 'file:'", m->name);
	return 0;
}

/* ---- rank profiles ------------------------------------------------------------------ */

/* After 'expression': ": EXPR" or "{ EXPR }". */
static int expression_def(struct parser *p, const struct rank_tok *kw, struct rank_ast **slot)
{
	struct rank_tok t;
	if (*slot)
		return fail(p, kw, STRATA_TYPE, "the expression is given twice");
	next(p, RANK_LEX_SCHEMA, &t);
	int block = rank_tok_is(&t, "{");
	if (!block && !rank_tok_is(&t, ":"))
		return fail(p, &t, STRATA_PARSE, "expected ':' or '{' after 'expression', found %s", show(&t));
	struct rank_lexer save = *p->lx;
	struct rank_tok w, c;
	next(p, RANK_LEX_EXPR, &w);
	peek(p, RANK_LEX_EXPR, &c);
	*p->lx = save;
	if (rank_tok_is(&w, "file") && rank_tok_is(&c, ":"))
		return fail(p, &w, STRATA_NOT_IMPLEMENTED, "expressions read from files are not supported");
	int rc = rank_expr_lex(p->lx, slot, p->err);
	if (rc)
		return rc;
	if (block)
		return expect(p, "}", "closing the expression block");
	return 0;
}

static int rerank_count(struct parser *p, int *slot)
{
	struct rank_tok t;
	int rc = expect(p, ":", "after 'rerank-count'");
	if (rc)
		return rc;
	next(p, RANK_LEX_SCHEMA, &t);
	if (rank_tok_is(&t, "-"))
		return fail(p, &t, STRATA_TYPE, "rerank-count must be a positive integer");
	if (t.kind != RT_NUM)
		return fail(p, &t, STRATA_PARSE, "expected a number after 'rerank-count:', found %s", show(&t));
	long v = 0;
	for (size_t i = 0; i < t.len; i++) {
		if (t.s[i] < '0' || t.s[i] > '9' || v > 1000000000L)
			return fail(p, &t, STRATA_TYPE, "rerank-count must be a positive integer, found %s",
			            show(&t));
		v = v * 10 + (t.s[i] - '0');
	}
	if (v < 1 || v > 1000000000L)
		return fail(p, &t, STRATA_TYPE, "rerank-count must be a positive integer, found %s", show(&t));
	*slot = (int)v;
	return 0;
}

/* first-phase, second-phase or global-phase { ... }; rerank is NULL for the
 * first phase, which has no rerank-count. */
static int phase(struct parser *p, const struct rank_tok *kw, struct rank_ast **expr_slot, int *rerank)
{
	struct rank_tok t;
	int rc = expect(p, "{", "after the phase name");
	if (rc)
		return rc;
	for (;;) {
		next(p, RANK_LEX_SCHEMA, &t);
		if (rank_tok_is(&t, "}"))
			return 0;
		if (rank_tok_is(&t, "expression"))
			rc = expression_def(p, &t, expr_slot);
		else if (rerank && rank_tok_is(&t, "rerank-count"))
			rc = rerank_count(p, rerank);
		else if (rank_tok_is(&t, "keep-rank-count") || rank_tok_is(&t, "rank-score-drop-limit") ||
		         rank_tok_is(&t, "rerank-count"))
			rc = fail(p, &t, STRATA_NOT_IMPLEMENTED, "%s in %.*s is not supported", show(&t),
			          (int)kw->len, kw->s);
		else
			rc = fail(p, &t, STRATA_PARSE, "expected 'expression'%s or '}' in %.*s, found %s",
			          rerank ? ", 'rerank-count'" : "", (int)kw->len, kw->s, show(&t));
		if (rc)
			return rc;
	}
}

static int function(struct parser *p, struct rank_profile_decl *pr)
{
	struct rank_tok nm, t;
	int rc = expect_name(p, RANK_LEX_EXPR, &nm, "a function name");
	if (rc)
		return rc;
	if (rank_tok_is(&nm, "inline") &&
	    (rc = expect_name(p, RANK_LEX_EXPR, &nm, "a function name after 'inline'")) != 0)
		return rc;
	for (int i = 0; i < pr->nfunctions; i++)
		if (strlen(pr->functions[i].name) == nm.len &&
		    memcmp(pr->functions[i].name, nm.s, nm.len) == 0)
			return fail(p, &nm, STRATA_TYPE, "function %s is defined twice in rank-profile '%s'",
			            show(&nm), pr->name);
	if ((rc = push(p, &pr->functions, &pr->nfunctions, sizeof *pr->functions)) != 0)
		return rc;
	struct rank_function_decl *f = &pr->functions[pr->nfunctions - 1];
	f->pos = tokpos(p, &nm);
	if (!(f->name = tokdup(p, &nm)))
		return STRATA_NOMEM;
	if ((rc = expect(p, "(", "after the function name")) != 0)
		return rc;
	peek(p, RANK_LEX_EXPR, &t);
	if (rank_tok_is(&t, ")")) {
		rank_lex_take(p->lx, &t);
	} else {
		for (;;) {
			if ((rc = expect_name(p, RANK_LEX_EXPR, &t, "a parameter name")) != 0)
				return rc;
			for (int i = 0; i < f->nparams; i++)
				if (strlen(f->params[i]) == t.len && memcmp(f->params[i], t.s, t.len) == 0)
					return fail(p, &t, STRATA_TYPE, "parameter %s appears twice", show(&t));
			if ((rc = push(p, &f->params, &f->nparams, sizeof *f->params)) != 0)
				return rc;
			if (!(f->params[f->nparams - 1] = tokdup(p, &t)))
				return STRATA_NOMEM;
			next(p, RANK_LEX_EXPR, &t);
			if (rank_tok_is(&t, ")"))
				break;
			if (!rank_tok_is(&t, ","))
				return fail(p, &t, STRATA_PARSE, "expected ',' or ')' after a parameter, found %s",
				            show(&t));
		}
	}
	if ((rc = expect(p, "{", "after the function's parameters")) != 0)
		return rc;
	for (;;) {
		next(p, RANK_LEX_SCHEMA, &t);
		if (rank_tok_is(&t, "}"))
			break;
		if (!rank_tok_is(&t, "expression"))
			return fail(p, &t, STRATA_PARSE, "expected 'expression' or '}' in function '%s', found %s",
			            f->name, show(&t));
		if ((rc = expression_def(p, &t, &f->body)) != 0)
			return rc;
	}
	if (!f->body)
		return fail(p, &nm, STRATA_PARSE, "function '%s' has no expression", f->name);
	return 0;
}

/* match-features / summary-features: ": f1 f2 ..." to the end of the line,
 * or "{ f1 f2 ... }". */
static int features(struct parser *p, const struct rank_tok *kw, struct rank_ast ***arr, int *n)
{
	struct rank_tok t;
	int rc;
	if (*n)
		return fail(p, kw, STRATA_TYPE, "%s is given twice", show(kw));
	next(p, RANK_LEX_SCHEMA, &t);
	int block = rank_tok_is(&t, "{");
	if (!block && !rank_tok_is(&t, ":"))
		return fail(p, &t, STRATA_PARSE, "expected ':' or '{' after %s, found %s", show(kw), show(&t));
	for (;;) {
		peek(p, RANK_LEX_EXPR, &t);
		if (block && rank_tok_is(&t, "}")) {
			rank_lex_take(p->lx, &t);
			return 0;
		}
		if (!block && (rank_tok_is(&t, "}") || t.kind == RT_EOF || (t.nl_before && *n > 0)))
			return 0;
		if (!block && rank_tok_is(&t, ";")) {
			rank_lex_take(p->lx, &t);
			return 0;
		}
		if ((rc = push(p, arr, n, sizeof **arr)) != 0)
			return rc;
		if ((rc = rank_feature_lex(p->lx, &(*arr)[*n - 1], p->err)) != 0)
			return rc;
	}
}

/* The name of an input or constant: name, query(name) or constant(name). */
static int decl_name(struct parser *p, const char *wrapper, struct rank_tok *nm)
{
	int rc = expect_name(p, RANK_LEX_EXPR, nm, wrapper[0] == 'q' ? "an input name" : "a constant name");
	if (rc)
		return rc;
	struct rank_tok t;
	peek(p, RANK_LEX_EXPR, &t);
	if (rank_tok_is(nm, wrapper) && rank_tok_is(&t, "(")) {
		rank_lex_take(p->lx, &t);
		if ((rc = expect_name(p, RANK_LEX_EXPR, nm, "a name")) != 0)
			return rc;
		return expect(p, ")", "after the name");
	}
	return 0;
}

static int inputs(struct parser *p, struct rank_profile_decl *pr)
{
	struct rank_tok t, nm;
	int rc = expect(p, "{", "after 'inputs'");
	if (rc)
		return rc;
	for (;;) {
		peek(p, RANK_LEX_SCHEMA, &t);
		if (rank_tok_is(&t, "}")) {
			rank_lex_take(p->lx, &t);
			return 0;
		}
		if ((rc = decl_name(p, "query", &nm)) != 0)
			return rc;
		for (int i = 0; i < pr->ninputs; i++)
			if (strlen(pr->inputs[i].name) == nm.len && memcmp(pr->inputs[i].name, nm.s, nm.len) == 0)
				return fail(p, &nm, STRATA_TYPE, "input %s is declared twice", show(&nm));
		if ((rc = push(p, &pr->inputs, &pr->ninputs, sizeof *pr->inputs)) != 0)
			return rc;
		struct rank_input_decl *in = &pr->inputs[pr->ninputs - 1];
		in->pos = tokpos(p, &nm);
		in->type.cell = BASE_DT_DOUBLE;
		if (!(in->name = tokdup(p, &nm)))
			return STRATA_NOMEM;
		if (starts_type(p) && (rc = rank_type_lex(p->lx, &in->type, p->err)) != 0)
			return rc;
		in->ncells = rank_type_cells(&in->type);
		peek(p, RANK_LEX_SCHEMA, &t);
		if (rank_tok_is(&t, ":")) {
			rank_lex_take(p->lx, &t);
			if ((rc = value(p, &in->type, &in->dflt, &in->ncells)) != 0)
				return rc;
			in->has_default = 1;
		}
	}
}

static int constants(struct parser *p, struct rank_profile_decl *pr)
{
	struct rank_tok t, nm;
	int rc = expect(p, "{", "after 'constants'");
	if (rc)
		return rc;
	for (;;) {
		peek(p, RANK_LEX_SCHEMA, &t);
		if (rank_tok_is(&t, "}")) {
			rank_lex_take(p->lx, &t);
			return 0;
		}
		if ((rc = decl_name(p, "constant", &nm)) != 0)
			return rc;
		for (int i = 0; i < pr->nconstants; i++)
			if (strlen(pr->constants[i].name) == nm.len &&
			    memcmp(pr->constants[i].name, nm.s, nm.len) == 0)
				return fail(p, &nm, STRATA_TYPE, "constant %s is declared twice", show(&nm));
		if ((rc = push(p, &pr->constants, &pr->nconstants, sizeof *pr->constants)) != 0)
			return rc;
		struct rank_constant_decl *c = &pr->constants[pr->nconstants - 1];
		c->pos = tokpos(p, &nm);
		c->type.cell = BASE_DT_DOUBLE;
		if (!(c->name = tokdup(p, &nm)))
			return STRATA_NOMEM;
		if (starts_type(p) && (rc = rank_type_lex(p->lx, &c->type, p->err)) != 0)
			return rc;
		if ((rc = expect(p, ":", "before the constant's value")) != 0)
			return rc;
		if ((rc = value(p, &c->type, &c->cells, &c->ncells)) != 0)
			return rc;
	}
}

/* Settings that tune how Vespa spreads work; nothing Strata computes changes. */
static const char *const ignored_profile_settings[] = {
	"num-threads-per-search", "num-search-partitions", "min-hits-per-thread", "termwise-limit",
	NULL,
};

static const char *const unsupported_profile_settings[] = {
	"rank-properties", "match-phase", "diversity", "mutate", "strict", "rank", "rank-type",
	"weakand", "significance", "filter-threshold", "approximate-threshold",
	"post-filter-threshold", "target-hits-max-adjustment-factor", "rank-features",
	"ignore-default-rank-features", "constant", "macro", "second-phase-rerank-count",
	"global-phase-rerank-count", "normalizer", "input", NULL,
};

static int profile_body(struct parser *p, struct rank_profile_decl *pr)
{
	struct rank_tok t;
	unsigned seen = 0;
	for (;;) {
		int rc;
		next(p, RANK_LEX_SCHEMA, &t);
		if (rank_tok_is(&t, "}"))
			return 0;
		static const char *const phases[] = {"first-phase", "second-phase", "global-phase"};
		int ph = -1;
		for (int i = 0; i < 3; i++)
			if (rank_tok_is(&t, phases[i]))
				ph = i;
		if (ph >= 0) {
			if (seen & (1u << ph))
				return fail(p, &t, STRATA_TYPE, "%s is given twice in rank-profile '%s'", show(&t),
				            pr->name);
			seen |= 1u << ph;
			if (ph == 0)
				rc = phase(p, &t, &pr->first_phase, NULL);
			else if (ph == 1)
				rc = phase(p, &t, &pr->second_phase, &pr->rerank_count);
			else
				rc = phase(p, &t, &pr->global_phase, &pr->global_rerank_count);
		} else if (rank_tok_is(&t, "function")) {
			rc = function(p, pr);
		} else if (rank_tok_is(&t, "inputs")) {
			rc = inputs(p, pr);
		} else if (rank_tok_is(&t, "constants")) {
			rc = constants(p, pr);
		} else if (rank_tok_is(&t, "match-features")) {
			rc = features(p, &t, &pr->match_features, &pr->nmatch_features);
		} else if (rank_tok_is(&t, "summary-features")) {
			rc = features(p, &t, &pr->summary_features, &pr->nsummary_features);
		} else if (rank_tok_is(&t, "onnx-model")) {
			rc = model(p, &pr->models, &pr->nmodels);
		} else if (name_in(&t, ignored_profile_settings)) {
			struct rank_tok w;
			rc = expect(p, ":", "after the setting name");
			rank_lex_word(p->lx, &w);
			if (!rc)
				rank_lex_take(p->lx, &w);
		} else if (name_in(&t, unsupported_profile_settings)) {
			rc = fail(p, &t, STRATA_NOT_IMPLEMENTED, "%s in a rank-profile is not supported", show(&t));
		} else if (t.kind == RT_EOF) {
			rc = fail(p, &t, STRATA_PARSE, "rank-profile '%s' is not closed: expected '}', found end of file",
			          pr->name);
		} else {
			rc = fail(p, &t, STRATA_PARSE, "unexpected %s in rank-profile '%s'", show(&t), pr->name);
		}
		if (rc)
			return rc;
	}
}

static int profile(struct parser *p)
{
	struct rank_sd *sd = p->sd;
	struct rank_tok nm, t;
	int rc = expect_name(p, RANK_LEX_SCHEMA, &nm, "a rank-profile name");
	if (rc)
		return rc;
	for (int i = 0; i < sd->nprofiles; i++)
		if (strlen(sd->profiles[i].name) == nm.len && memcmp(sd->profiles[i].name, nm.s, nm.len) == 0)
			return fail(p, &nm, STRATA_TYPE, "rank-profile %s is declared twice (first at %d:%d)",
			            show(&nm), sd->profiles[i].pos.line, sd->profiles[i].pos.col);
	if ((rc = push(p, &sd->profiles, &sd->nprofiles, sizeof *sd->profiles)) != 0)
		return rc;
	struct rank_profile_decl *pr = &sd->profiles[sd->nprofiles - 1];
	pr->pos = tokpos(p, &nm);
	pr->rerank_count = -1;
	pr->global_rerank_count = -1;
	if (!(pr->name = tokdup(p, &nm)))
		return STRATA_NOMEM;
	next(p, RANK_LEX_SCHEMA, &t);
	if (rank_tok_is(&t, "inherits")) {
		do {
			if ((rc = expect_name(p, RANK_LEX_SCHEMA, &t, "a rank-profile name after 'inherits'")) != 0)
				return rc;
			/* Both arrays grow together: inherits_pos has ninherits too. */
			int npos = pr->ninherits;
			if ((rc = push(p, &pr->inherits_pos, &npos, sizeof *pr->inherits_pos)) != 0)
				return rc;
			pr->inherits_pos[npos - 1] = tokpos(p, &t);
			if ((rc = push(p, &pr->inherits, &pr->ninherits, sizeof *pr->inherits)) != 0) {
				/* The two counts would disagree: drop the positions
				 * so the profile still frees by its counts. */
				rank_vec_free(pr->inherits_pos, npos, sizeof *pr->inherits_pos);
				pr->inherits_pos = NULL;
				return rc;
			}
			if (!(pr->inherits[pr->ninherits - 1] = tokdup(p, &t)))
				return STRATA_NOMEM;
			next(p, RANK_LEX_SCHEMA, &t);
		} while (rank_tok_is(&t, ","));
	}
	if (!rank_tok_is(&t, "{"))
		return fail(p, &t, STRATA_PARSE, "expected '{' after 'rank-profile %s', found %s", pr->name,
		            show(&t));
	return profile_body(p, pr);
}

/* ---- the schema ------------------------------------------------------------------------ */

static const char *const unsupported_schema_items[] = {
	"fieldset", "struct", "document-summary", "annotation", "import", "stemming", "index",
	"raw-as-base64-in-summary", "constant", "model", "field", NULL,
};

static int schema_body(struct parser *p, const struct rank_tok *open)
{
	struct rank_tok t;
	int have_doc = 0;
	for (;;) {
		int rc;
		next(p, RANK_LEX_SCHEMA, &t);
		if (rank_tok_is(&t, "}"))
			break;
		if (rank_tok_is(&t, "document")) {
			if (have_doc)
				return fail(p, &t, STRATA_TYPE, "a schema has one document block");
			have_doc = 1;
			rc = document(p, &t);
		} else if (rank_tok_is(&t, "rank-profile")) {
			rc = profile(p);
		} else if (rank_tok_is(&t, "onnx-model")) {
			rc = model(p, &p->sd->models, &p->sd->nmodels);
		} else if (rank_tok_is(&t, "field")) {
			rc = fail(p, &t, STRATA_NOT_IMPLEMENTED, "fields outside the document block are not supported");
		} else if (rank_tok_is(&t, "constant")) {
			rc = fail(p, &t, STRATA_NOT_IMPLEMENTED,
			          "schema-level constant blocks (constants read from files) are not supported; "
			          "use 'constants { }' in a rank-profile");
		} else if (name_in(&t, unsupported_schema_items)) {
			rc = fail(p, &t, STRATA_NOT_IMPLEMENTED, "%s is not supported", show(&t));
		} else if (t.kind == RT_EOF) {
			rc = fail(p, open, STRATA_PARSE, "schema '%s' is not closed: expected '}' before the end of file",
			          p->sd->name);
		} else {
			rc = fail(p, &t, STRATA_PARSE, "unexpected %s in schema '%s'", show(&t), p->sd->name);
		}
		if (rc)
			return rc;
	}
	next(p, RANK_LEX_SCHEMA, &t);
	if (t.kind != RT_EOF)
		return fail(p, &t, STRATA_PARSE, "unexpected %s after the end of schema '%s'", show(&t),
		            p->sd->name);
	return 0;
}

static int schema(struct parser *p)
{
	struct rank_tok t, nm;
	next(p, RANK_LEX_SCHEMA, &t);
	if (!rank_tok_is(&t, "schema") && !rank_tok_is(&t, "search"))
		return fail(p, &t, STRATA_PARSE, "expected 'schema', found %s", show(&t));
	int rc = expect_name(p, RANK_LEX_SCHEMA, &nm, "the schema name");
	if (rc)
		return rc;
	p->sd->pos = tokpos(p, &nm);
	if (!(p->sd->name = tokdup(p, &nm)))
		return STRATA_NOMEM;
	next(p, RANK_LEX_SCHEMA, &t);
	if (rank_tok_is(&t, "inherits"))
		return fail(p, &t, STRATA_NOT_IMPLEMENTED, "schema inheritance is not supported");
	if (!rank_tok_is(&t, "{"))
		return fail(p, &t, STRATA_PARSE, "expected '{' after 'schema %s', found %s", p->sd->name,
		            show(&t));
	return schema_body(p, &t);
}

int rank_sd_parse(const char *file, const char *text, size_t len, struct rank_sd **out,
                  struct strata_error *err)
{
	*out = NULL;
	struct rank_sd *sd = base_calloc(1, sizeof *sd);
	if (!sd)
		return base_err(err, STRATA_NOMEM, "%s: out of memory", file);
	if (!(sd->file = base_strdup(file))) {
		base_free(sd, sizeof *sd);
		return base_err(err, STRATA_NOMEM, "%s: out of memory", file);
	}
	/* Positions point at sd->file, which lives as long as the AST. */
	struct rank_lexer lx;
	rank_lex_init(&lx, sd->file, text, len);
	struct parser p = {&lx, err, sd, 0};
	int rc = schema(&p);
	if (rc) {
		rank_sd_free(sd);
		return rc;
	}
	*out = sd;
	return 0;
}
