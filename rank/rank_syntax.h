/*
 * rank_syntax.h: the front end's internals (lex.c, parser.c, expr.c,
 * parse.c, type.c, schema.c): tokens, the lexer, the state and helpers the
 * parsers share, and the AST's constructors and destructors.  The back end
 * reads the finished AST through rank_int.h and never includes this.
 */
#ifndef RANK_SYNTAX_H
#define RANK_SYNTAX_H

#include "rank_int.h"

/* Tokens.  A token points into the text; nothing is copied. */
enum rank_tok_kind { RT_EOF = 0, RT_NAME, RT_NUM, RT_STR, RT_PUNCT, RT_BAD };
enum { RANK_LEX_SCHEMA = 0, RANK_LEX_EXPR = 1 }; /* in SCHEMA mode names may contain '-' */

struct rank_tok {
	int kind;         /* enum rank_tok_kind */
	const char *s;    /* first byte in the text */
	size_t len;
	int line, col;
	int nl_before;    /* a line break separates it from what came before */
};

struct rank_lexer {
	const char *file; /* for messages */
	const char *text;
	size_t len;
	size_t off;       /* the next byte to scan */
	int line, col;    /* of the byte at off */
};

/* Start lx at the beginning of text (len bytes; file names it in
 * positions and messages, and must outlive the tokens). */
void rank_lex_init(struct rank_lexer *lx, const char *file, const char *text, size_t len);
/* Scan the next token in mode without consuming it. */
void rank_lex_peek(const struct rank_lexer *lx, int mode, struct rank_tok *t);
/* Consume t, a token just peeked. */
void rank_lex_take(struct rank_lexer *lx, const struct rank_tok *t);
/* Scan the next token in mode and consume it. */
void rank_lex_next(struct rank_lexer *lx, int mode, struct rank_tok *t);
/* Peek a blank-free word up to the end of the line, '}' or '#' (file paths). */
void rank_lex_word(const struct rank_lexer *lx, struct rank_tok *t);
/* The value of a number token; STRATA_PARSE when out of range. */
int rank_tok_number(const struct rank_lexer *lx, const struct rank_tok *t, double *v,
                    struct strata_error *err);
/* The text of a string token without quotes, escapes resolved (base_strfree);
 * NULL when memory runs out. */
char *rank_tok_unquote(const struct rank_tok *t);
/* 1 if t is the name or punctuation s. */
int rank_tok_is(const struct rank_tok *t, const char *s);
/* t quoted for a message ('foo', end of file) in buf. */
const char *rank_tok_show(const struct rank_tok *t, char *buf, size_t n);
/* base_err() with "file:line:col: " of t (or of line, col) in front. */
int rank_lex_err(const struct rank_lexer *lx, const struct rank_tok *t, struct strata_error *err,
                 int code, const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* rank_lex_err at (line, col), the message's arguments in ap. */
int rank_lex_verr(const struct rank_lexer *lx, int line, int col, struct strata_error *err, int code,
                  const char *fmt, va_list ap);

/* Parse a type at the lexer ("double", "tensor<float>(x[3])"); errors carry
 * positions.  STRATA_PARSE, STRATA_TYPE (unknown cell type, bad or duplicate
 * dimension), STRATA_NOT_IMPLEMENTED (mapped or indexed-unbound dimensions),
 * STRATA_NOMEM.  t is cleared on failure. */
int rank_type_lex(struct rank_lexer *lx, struct rank_type *t, struct strata_error *err);
/* rank_type_lex that also takes mapped dimensions (x{}), for the types of
 * tensor literals and generators in expressions. */
int rank_type_lex_mapped(struct rank_lexer *lx, struct rank_type *t, struct strata_error *err);
/* dst becomes a copy of src with its own dimension names.  Returns 0 or
 * STRATA_NOMEM (unreported: dst is cleared). */
int rank_type_copy(struct rank_type *dst, const struct rank_type *src);

/* parser.c: the state parse.c and expr.c share, and their common helpers.
 * Every rank_parser_* error function formats "file:line:col: message" onto
 * p->err and returns code (STRATA_NOMEM, STRATA_LIMIT for the fixed ones;
 * an allocation failure reads "out of memory: parsing file:line:col"). */
#define RANK_PARSE_MAX_DEPTH 200 /* nesting of expressions and of value lists */

struct rank_parser {
	struct rank_lexer *lx;
	struct strata_error *err;
	struct rank_sd *sd; /* NULL when parsing a lone expression */
	int depth;          /* see rank_parser_enter */
	struct strata_errors *errs; /* not NULL: go on after errors, listing them here */
	int first_rc;       /* with errs: the code of the first error (0: none yet) */
	struct strata_error first; /* ... and the error itself */
};

/* An error at token t, or at (line, col). */
int rank_parser_fail(struct rank_parser *p, const struct rank_tok *t, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
int rank_parser_fail_at(struct rank_parser *p, int line, int col, int code, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
/* STRATA_NOMEM at the lexer's position, through base_nomem. */
int rank_parser_nomem(struct rank_parser *p);
/* rank_vec_push with its failures reported (STRATA_NOMEM, STRATA_LIMIT). */
int rank_parser_push(struct rank_parser *p, void *arrp, int *n, size_t elem);
/* t quoted for a message (rank_tok_show); the text stays valid until the
 * second call after this one in the same thread. */
const char *rank_tok_quote(const struct rank_tok *t);
/* A copy of t's text (base_strfree); NULL, with STRATA_NOMEM reported, when
 * memory runs out. */
char *rank_parser_tokdup(struct rank_parser *p, const struct rank_tok *t);
/* The position of t in the file being parsed. */
struct rank_pos rank_parser_pos(const struct rank_parser *p, const struct rank_tok *t);
/* Take the next token (in mode) into t; STRATA_PARSE "expected <what>" unless
 * it is a name. */
int rank_parser_expect_name(struct rank_parser *p, int mode, struct rank_tok *t, const char *what);
/* Consume the punctuation or keyword s (schema mode) or fail: "expected
 * 's' <context>, found ...". */
int rank_parser_expect(struct rank_parser *p, const char *s, const char *context);
/* Consume s if it is the next token (in mode); 1 when it was. */
int rank_parser_take_if(struct rank_parser *p, int mode, const char *s);
/* One level deeper (at token t); STRATA_LIMIT past RANK_PARSE_MAX_DEPTH.  The
 * caller decrements p->depth when it leaves the level. */
int rank_parser_enter(struct rank_parser *p, const struct rank_tok *t);
/* 1 when t is one of the words of the NULL-terminated list. */
int rank_parser_name_in(const struct rank_tok *t, const char *const *list);
/* The index of the element of arr (n elements of elem bytes, each starting
 * with its name, a char *) named like the token nm, or -1. */
int rank_parser_find_name(const void *arr, int n, size_t elem, const struct rank_tok *nm);
/* Append a zeroed element named nm to the array at arrp; NULL, with *rc set,
 * when that fails. */
void *rank_parser_add_named(struct rank_parser *p, void *arrp, int *n, size_t elem,
                            const struct rank_tok *nm, int *rc);
/* After the keyword kw: ':' (*block = 0) or '{' (*block = 1). */
int rank_parser_colon_or_block(struct rank_parser *p, const struct rank_tok *kw, int *block);
/* Inside a block whose '{' is taken: the next token into t; 1 when it begins
 * an item, 0 when it is the closing '}' (taken).  With kw, the keyword of the
 * block, the end of the file is STRATA_PARSE "the block of 'kw' is never
 * closed" (at kw), returned; without kw it is an item for the caller to
 * refuse.  Loops read: while ((rc = rank_parser_block_item(p, kw, &t)) > 0). */
int rank_parser_block_item(struct rank_parser *p, const struct rank_tok *kw, struct rank_tok *t);
/* The value of a setting accepted and ignored: ": word". */
int rank_parser_skip_setting(struct rank_parser *p);
/* The number token v as a whole number from lo to hi into *out; what names
 * the setting in the message (STRATA_TYPE "what must be a whole number from
 * lo to hi, found v"). */
int rank_parser_whole(struct rank_parser *p, const struct rank_tok *v, const char *what, int lo,
                      int hi, int *out);
/* After the setting kw: ": N", N a whole number from lo to hi, into *out
 * (STRATA_PARSE without ':' or a number, else as rank_parser_whole). */
int rank_parser_whole_setting(struct rank_parser *p, const struct rank_tok *kw, int lo, int hi,
                              int *out);
/* t does not belong in the block of the what (a field, a rank-profile, a
 * schema) called name. */
int rank_parser_unexpected_in(struct rank_parser *p, const struct rank_tok *t, const char *what,
                              const char *name);
/* After error rc in the item that begins at save: when the parser lists
 * errors (p->errs), note this one, skip the item (to the '}' closing its
 * first '{', or to the enclosing '}' or a token for which is_item is true
 * when no '{' comes first) and return 0 to go on; else return rc. */
int rank_parser_recover(struct rank_parser *p, int rc, const struct rank_lexer *save,
                        int (*is_item)(const struct rank_tok *));

/* parse_profile.c: after 'rank-profile', the profile into p->sd; after
 * 'onnx-model' (in a schema or a profile), the model appended to *arr. */
int rank_parse_profile(struct rank_parser *p);
int rank_parse_model(struct rank_parser *p, struct rank_model_decl **arr, int *n);
/* After the keyword kw (constant) of a schema: NAME { file: PATH  type: TYPE }
 * into the schema's constants, read at load like a profile's (parse_profile.c). */
int rank_parse_schema_constant(struct rank_parser *p, const struct rank_tok *kw);

/* parse_text.c: text-search settings and fieldsets, for parse.c.
 * rank_text_setting_is: kw is match, stemming, normalizing or rank.
 * rank_parse_text_setting: after keyword kw (one of those, or index on a
 * string field), its ": value" or "{ values }" into f.
 * rank_parse_fieldset: after 'fieldset', the block into p->sd.
 * rank_parse_schema_stemming: after a schema-level 'stemming'.
 * rank_text_fields_check: once the schema is parsed, the fields' stemming
 * defaults and the fieldsets' field names (STRATA_TYPE when one is not
 * declared). */
int rank_text_setting_is(const struct rank_tok *kw);
/* parse_hnsw.c: index { hnsw { ... } } (or index: hnsw) of a tensor field,
 * kw being "index". */
int rank_parse_tensor_index(struct rank_parser *p, struct rank_field *f, const struct rank_tok *kw);
/* parse_hnsw.c: the nearestNeighbor settings of a rank profile
 * (approximate-threshold, ...): which one t names (enum rank_nn_setting),
 * or -1; after such a t, its ": number" into pr. */
int rank_nn_setting_of(const struct rank_tok *t);
int rank_parse_nn_setting(struct rank_parser *p, const struct rank_tok *t,
                          struct rank_profile_decl *pr);
int rank_parse_text_setting(struct rank_parser *p, struct rank_field *f, const struct rank_tok *kw);
int rank_parse_fieldset(struct rank_parser *p);
int rank_parse_schema_stemming(struct rank_parser *p, const struct rank_tok *kw);
int rank_text_fields_check(struct rank_parser *p);

/* parse_field.c: after keyword kw, a field setting (weight, bolding,
 * sorting, linguistics, rank-type, id, dictionary, body, header; alias,
 * query-command, literal-boost and summary-to are refused) into f.
 * rank_field_setting_is: kw is one of them. */
int rank_field_setting_is(const struct rank_tok *kw);
int rank_parse_field_setting(struct rank_parser *p, struct rank_field *f, const struct rank_tok *kw);
/* parse_field.c: after "rank" (kw) in a rank-profile, "FIELD { element-gap:
 * N|infinity }", kept in pr as the rank property "elementGap(FIELD)" (-1:
 * infinity).  Returns 0 or the parser's error (STRATA_NOT_IMPLEMENTED for
 * filter and filter-threshold). */
#define RANK_ELEMENT_GAP_KEY_MAX 300
int rank_parse_profile_rank(struct rank_parser *p, struct rank_profile_decl *pr,
                            const struct rank_tok *kw);

/* fields.c: the document part of the schema language, called by parse.c.
 * Each returns 0 or a parse error as above. */
/* The type after "type" when it is array<T>, weightedset<T>, map<K,V> or a
 * struct's name (t, peeked); f->type and f->vtype are set. */
int rank_field_vtype(struct rank_parser *p, const struct rank_tok *t, struct rank_field *f);
/* struct name { field a type T { } ... } inside the document (kw: "struct"). */
int rank_struct_parse(struct rank_parser *p, const struct rank_tok *kw);
/* document-summary name [inherits parent] { ... } (kw: "document-summary"). */
int rank_summary_parse(struct rank_parser *p, const struct rank_tok *kw);
/* A summary setting inside field f (kw: "summary"): "summary: full",
 * "summary [name] [type T] { source: g }". */
int rank_field_summary(struct rank_parser *p, struct rank_field *f, const struct rank_tok *kw);
/* struct-field name { indexing: ... attribute ... } inside field f. */
int rank_struct_field_parse(struct rank_parser *p, struct rank_field *f, const struct rank_tok *kw);

/* "a, b" after "document x inherits". */
int rank_document_inherits(struct rank_parser *p);

/* The field type t names when it is one of the simple ones (string, int,
 * long, float, double, bool), else 0. */
int rank_field_simple_type(const struct rank_tok *t);
/* 1 when f is an array or weighted set of strings (text, if indexed). */
int rank_field_holds_text(const struct rank_field *f);
/* indexing.c: after the keyword kw ("indexing", taken), ": statement" or
 * "{ statements }" of field f: its flags set, the statements that compute
 * a value kept in f->indexing (listed in p->sd->ixs, which owns them).
 * rank_ix_free (schema.c) frees a tree (NULL is ignored). */
int rank_indexing_parse(struct rank_parser *p, struct rank_field *f, const struct rank_tok *kw);
void rank_ix_free(struct rank_ix *n);
/* weightedset: setting, or weightedset { settings }, in field f. */
int rank_wset_settings(struct rank_parser *p, struct rank_field *f, const struct rank_tok *kw);

/* types.c: byte, uri, raw, reference<T>, predicate; import field, the
 * raw summary setting.  rank_more_type_is: t names one of the types;
 * rank_more_type: t (peeked) is one: f->type and the type's settings set.
 * rank_predicate_index: the index block of a predicate field (after kw,
 * "index", taken).  rank_more_field_check: what f may not be once its body
 * is parsed (a raw attribute, a predicate without attribute or arity).
 * rank_parse_import: after "import" at schema level, the imported field
 * added to p->sd.  rank_parse_raw_base64: after raw-as-base64-in-summary. */
int rank_more_type_is(const struct rank_tok *t);
int rank_more_type(struct rank_parser *p, const struct rank_tok *t, struct rank_field *f);
int rank_predicate_index(struct rank_parser *p, struct rank_field *f, const struct rank_tok *kw);
int rank_more_field_check(struct rank_parser *p, const struct rank_field *f);
int rank_parse_import(struct rank_parser *p, const struct rank_tok *kw);
int rank_parse_raw_base64(struct rank_parser *p, const struct rank_tok *kw);

/* expr.c.  Parse one expression at the lexer (tokens in RANK_LEX_EXPR mode); stops
 * before the first token that cannot continue it.  pos.file of every node
 * is lx->file. */
int rank_expr_lex(struct rank_lexer *lx, struct rank_ast **out, struct strata_error *err);
/* A feature of a feature list: a name or call with its optional ".out". */
int rank_feature_lex(struct rank_lexer *lx, struct rank_ast **out, struct strata_error *err);
struct rank_ast *rank_ast_copy(const struct rank_ast *a); /* NULL on NULL or no memory */

/* Arrays of the AST grow by powers of two; their capacity follows from the
 * count alone (rank_vec_cap), so no capacity field is stored.  rank_vec_push
 * appends one zeroed element.  Returns 0, STRATA_NOMEM, STRATA_LIMIT. */
size_t rank_vec_cap(int n);
int rank_vec_push(void *arrp, int *n, size_t elem);
void rank_vec_free(void *arr, int n, size_t elem);

/* Free what a declaration owns (not the struct itself, which is zeroed). */
void rank_function_decl_clear(struct rank_function_decl *f);
void rank_input_decl_clear(struct rank_input_decl *in);
void rank_constant_decl_clear(struct rank_constant_decl *c);
void rank_model_decl_clear(struct rank_model_decl *m);
void rank_profile_decl_clear(struct rank_profile_decl *p);
void rank_fprop_decl_clear(struct rank_fprop_decl *f);
/* dst becomes a copy of src.  Returns 0 or STRATA_NOMEM (dst's name NULL). */
int rank_fprop_decl_copy(struct rank_fprop_decl *dst, const struct rank_fprop_decl *src);

/* props.c: a rank property of a rank feature, key "feature(args).name" (a
 * token of the text) with a number value, added to profile pr: bm25(f).k1,
 * .b and .averageFieldLength; others are refused (STRATA_NOT_IMPLEMENTED),
 * a key given twice too (STRATA_TYPE).  Returns 0 or the parser's error. */
int rank_fprop_parse(struct rank_parser *p, struct rank_profile_decl *pr,
                     const struct rank_tok *key, double value);

#endif
