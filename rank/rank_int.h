/*
 * rank_int.h: what the files of rank/ share.  No other subsystem includes it.
 *
 * Data flow inside rank/:
 *   lex.c, parse.c   .sd text -> struct rank_sd (schema AST, expressions as
 *   expr.c           struct rank_ast trees, every node with its position);
 *   parser.c         the two parsers share their state and helpers
 *   schema.c         resolves profile inheritance into flat profiles
 *   compile.c        types every expression (dense tensor shapes with named
 *                    dimensions), resolves features, inlines user functions,
 *                    emits a flat program (struct rank_prog)
 *   vm.c             runs programs; tensor.c is the dense tensor algebra;
 *   fn.c             the scalar functions by id, shared by compiler and VM
 *   model.c          onnx-model blocks: input mapping, batched and per-document
 *                    runs through runtime/
 *   query.c          the state of a query and the pools of retired ones;
 *                    inputs, phases, features
 *   profile.c        reading schemas and profiles (rank.h accessors)
 *   app.c            rank.h: loading an application: schemas, models, profiles
 */
#ifndef RANK_INT_H
#define RANK_INT_H

#include <pthread.h>

#include "rank.h"

/* A position in a schema file. */
struct rank_pos {
	const char *file; /* owned by the struct rank_sd */
	int line, col;    /* 1-based */
};

/* The type of a value: a number is rank 0 (cells double).  Dimension names
 * are owned by whoever owns the type (the AST or the program). */
struct rank_type {
	int cell;      /* BASE_DT_DOUBLE, FLOAT, INT8, BFLOAT16, INT32, INT64 */
	int rank;
	int64_t dims[RANK_MAX_RANK];
	char *dim_names[RANK_MAX_RANK];
};

/* ---- expressions ------------------------------------------------------------ */
enum rank_ast_kind {
	RA_NUM = 1,   /* num */
	RA_STR,       /* "text" (str) */
	RA_NAME,      /* bare identifier (name): user function without arguments,
	                 lambda parameter, firstPhase, aggregator or dimension name
	                 in an argument position */
	RA_CALL,      /* name(args): math and tensor functions, if, user functions,
	                 features (attribute, query, constant, onnx, closeness,
	                 distance).  out: the ".name" after the call
	                 (onnx(m).score), else NULL */
	RA_UNARY,     /* op ('-' or '!') applied to args[0] */
	RA_BINARY,    /* args[0] op args[1]; op is enum rank_binop */
	RA_LAMBDA,    /* f(params)(args[0]) */
};

enum rank_binop {
	RB_ADD = 1, RB_SUB, RB_MUL, RB_DIV, RB_MOD, RB_POW,
	RB_EQ, RB_NE, RB_LT, RB_LE, RB_GT, RB_GE,
	RB_AND, RB_OR,
};

struct rank_ast {
	int kind;            /* enum rank_ast_kind */
	int op;              /* RA_UNARY: '-' or '!'; RA_BINARY: enum rank_binop */
	double num;          /* RA_NUM */
	char *name;          /* RA_NAME, RA_CALL; RA_STR text */
	char *out;           /* RA_CALL: output after '.', or NULL */
	int nargs;
	struct rank_ast **args;
	int nparams;         /* RA_LAMBDA */
	char **params;
	struct rank_pos pos; /* RA_BINARY, RA_UNARY: the operator's position */
	char *text;          /* the source text of this expression (for feature names) */
};

/* ---- schema declarations -------------------------------------------------- */
struct rank_function_decl {
	char *name;
	int nparams;
	char **params;
	struct rank_ast *body;
	struct rank_pos pos;
};

struct rank_input_decl {     /* inputs { query(name) type: default } */
	char *name;
	struct rank_type type;
	int has_default;
	double *dflt;            /* ncells values when has_default */
	size_t ncells;
	struct rank_pos pos;
};

struct rank_constant_decl {  /* constants { name type: value } or constant name { ... } */
	char *name;
	struct rank_type type;
	double *cells;           /* ncells values (read from file: when given) */
	size_t ncells;
	struct rank_pos pos;
};

struct rank_model_input {    /* input "name": source */
	char *name;
	struct rank_ast *source; /* attribute(f), query(q), constant(c) or a function name */
	struct rank_pos pos;
};
struct rank_model_output {   /* output "name": alias */
	char *name;
	char *alias;
	struct rank_pos pos;
};
struct rank_model_decl {     /* onnx-model name { file: ... input ... output ... } */
	char *name;
	char *file;              /* relative to the application folder */
	int ninputs, noutputs;
	struct rank_model_input *inputs;
	struct rank_model_output *outputs;
	struct rank_pos pos;
};

struct rank_profile_decl {
	char *name;
	int ninherits;
	char **inherits;
	struct rank_pos *inherits_pos;
	int ninputs, nconstants, nfunctions, nmodels;
	struct rank_input_decl *inputs;
	struct rank_constant_decl *constants;
	struct rank_function_decl *functions;
	struct rank_model_decl *models;
	struct rank_ast *first_phase;   /* NULL when not set (here or inherited) */
	struct rank_ast *second_phase;
	int rerank_count;               /* -1 when not set */
	struct rank_ast *global_phase;
	int global_rerank_count;        /* -1 when not set */
	int nmatch_features, nsummary_features;
	struct rank_ast **match_features;   /* each with text = the feature's name */
	struct rank_ast **summary_features;
	struct rank_pos pos;
};

/* One parsed .sd file.  After schema.c's resolution, profiles[] are flat:
 * every profile holds what it inherits (its own definitions win) and a
 * "default" profile exists. */
struct rank_sd {
	char *file;
	char *name;                     /* schema name = document type */
	int nfields;
	struct rank_field *fields;      /* names and dim names owned here */
	int nmodels, nconstants;        /* schema-level onnx-model and constant blocks */
	struct rank_model_decl *models;
	struct rank_constant_decl *constants;
	int nprofiles;
	struct rank_profile_decl *profiles;
	struct rank_pos pos;
	int resolved;                   /* rank_sd_resolve() ran (it runs once) */
};

/* Parse one .sd file's text (file names it in messages).  Returns 0,
 * STRATA_PARSE, STRATA_TYPE, STRATA_NOT_IMPLEMENTED, STRATA_NOMEM; messages
 * begin with "file:line:col: ". */
int rank_sd_parse(const char *file, const char *text, size_t len, struct rank_sd **out,
                  struct strata_error *err);
/* Resolve inheritance (profiles may inherit from several, in any order of
 * declaration; cycles and unknown parents are errors) and add "default". */
int rank_sd_resolve(struct rank_sd *sd, struct strata_error *err);
void rank_sd_free(struct rank_sd *sd);

/* Parse a standalone expression (for tests and tools). */
int rank_expr_parse(const char *file, const char *text, struct rank_ast **out,
                    struct strata_error *err);
void rank_ast_free(struct rank_ast *a);

/* Helpers for type values. */
size_t rank_type_cells(const struct rank_type *t);
/* Parse "tensor<float>(x[3],y[2])" or "double" etc. into t (dim names
 * allocated with base_strdup).  Returns 0 or STRATA_PARSE. */
int rank_type_parse(const char *text, struct rank_type *t);
void rank_type_clear(struct rank_type *t);
/* Format t ("tensor<float>(x[3])") into buf. */
const char *rank_type_str(const struct rank_type *t, char *buf, size_t n);

/* ==== evaluation back end (fn.c, compile.c, vm.c, tensor.c, model.c, query.c,
 *      profile.c, app.c) ====
 * Everything below is private to those files.  A profile compiles to a set of
 * flat programs (struct rank_prog) sharing one table of value types; vm.c
 * runs them over one document at a time with temporaries in the query's
 * arena.  Model inputs are programs too (their source expression), so a
 * model input fed by attribute(f) is a single load that hands the stored
 * cells to the runtime in place. */

struct rt_model;
struct rt_ctx;

/*
 * The opcodes.  Operands not listed are unused; t is the type index of the
 * pushed value.
 *
 * NUM        k                 push the number k
 * ATTR       a=field           push attribute a of the document (number, or
 *                              its stored cells in place; zeros when missing)
 * QUERY      a=input           push query(a) (number, or its double cells)
 * CONST      a=constant        push constant a
 * FIRST                        push the document's first-phase score
 * GET        a=local           push local a
 * SET        a=local           pop into local a
 * UN         a=fn              pop number x, push fn(x) (enum fn1)
 * BIN        a=fn              pop y, pop x, push fn(x, y) (enum rank_binop or fn2)
 * JUMPF      a=pc              pop a number; jump to a when it is 0
 * JUMP       a=pc              jump to a
 * RET                          end of a program or a lambda: the value on top
 *                              is the result
 * MAP        a=lambda pc|-1, b=local, c=fn1, d=operand type
 *                              pop tensor, push each cell through the lambda
 *                              (its parameter in local b) or through fn1 c
 * JOIN       a=lambda pc|-1, b=local, c=fn2, d=type of x, e=type of y
 *                              pop y, pop x, join them by dimension name
 *                              (lambda parameters in locals b and b+1)
 * REDUCE     a=enum rank_agg, d=operand type
 *                              pop tensor, aggregate over the dims t lacks
 * DOT        d=operand type    pop y, pop x (same type): push sum(x * y),
 *                              reading both in place
 * CLOSE      a=field, b=1 for distance, 0 for closeness
 *                              push closeness/distance of attribute a to the
 *                              query's nearestNeighbor tensor
 * ONNX       a=model, b=output push the model output for the document
 */
enum rank_opcode {
	RANK_OP_NUM = 1, RANK_OP_ATTR, RANK_OP_QUERY, RANK_OP_CONST, RANK_OP_FIRST, RANK_OP_GET,
	RANK_OP_SET, RANK_OP_UN, RANK_OP_BIN, RANK_OP_JUMPF, RANK_OP_JUMP, RANK_OP_RET, RANK_OP_MAP,
	RANK_OP_JOIN, RANK_OP_REDUCE, RANK_OP_DOT, RANK_OP_CLOSE, RANK_OP_ONNX, RANK_OP_COUNT_
};

/* vm.c: the opcode's name ("NUM", "ONNX"), "?" for none. */
const char *rank_op_name(int op);

/* fn.c: the scalar functions instructions name.  UN and MAP take a unary
 * id; BIN and JOIN take an enum rank_binop or a binary id (from
 * RANK_FN_MIN on, beyond every rank_binop). */
enum rank_fn {
	RANK_FN_NEG = 1, RANK_FN_NOT, RANK_FN_EXP, RANK_FN_LOG, RANK_FN_LOG10, RANK_FN_SQRT,
	RANK_FN_TANH, RANK_FN_SIGMOID, RANK_FN_RELU, RANK_FN_FABS, RANK_FN_FLOOR, RANK_FN_CEIL,
	RANK_FN_SIN, RANK_FN_COS, RANK_FN_ISNAN, RANK_FN_TAN, RANK_FN_ACOS, RANK_FN_ASIN,
	RANK_FN_ATAN,
	RANK_FN_MIN = 32, RANK_FN_MAX, RANK_FN_ATAN2, RANK_FN_FMOD, RANK_FN_POW,
};
/* The unary (binary) function an expression calls by name ("exp", "atan2"):
 * its id, or 0 when name is none. */
int rank_fn_unary(const char *name);
int rank_fn_binary(const char *name);
/* The name of function fn, unary or binary ("exp", "+", "atan2"; "?" for
 * an unknown id), for EXPLAIN. */
const char *rank_fn_name(int fn, int is_binary);
/* Apply unary (binary) function fn; an unknown id is a bug and aborts. */
double rank_fn1(int fn, double x);
double rank_fn2(int fn, double x, double y);

/* One instruction: see enum rank_opcode for a..e, t and k. */
struct rank_ins {
	int op;
	int a, b, c, d, e;
	int t;        /* type index of the value the instruction pushes, -1 none */
	double k;
};

struct rank_prog {
	char *name;           /* "first-phase", a feature's text, "model m input x" */
	struct rank_ins *code;
	int ncode, capcode;
	int nlocals;
	int result;           /* type index of the result */
	int doc_dependent;    /* reads the document (attributes, models, firstPhase) */
};

/* A model as one profile uses it. */
struct rank_cmodel {
	const struct rank_model_decl *decl;
	const struct rt_model *rt;   /* owned by the app */
	int state;                   /* 0 unused, 1 compiling, 2 compiled */
	int nin, nout;
	struct rank_prog *src;       /* per model input: the source expression */
	int *extra;                  /* per input: 1 if it adds a leading symbolic dim */
	int *out_type;               /* per output: type index (per document) */
	size_t *out_cells;           /* per output: cells per document */
	int batched;                 /* second phase may run it once for all candidates */
};

struct rank_schema;
struct rank_qpool;

struct rank_profile {
	const struct rank_schema *schema;
	const struct rank_sd *sd;
	const struct rank_profile_decl *decl;
	struct base_arena pool;      /* types and names made by the compiler */
	struct rank_type *types;
	int ntypes, captypes;
	struct rank_prog first, second;
	int has_first, has_second;
	int nmatch, nsummary;
	struct rank_prog *match, *summary;
	int nmodels;                 /* profile-level, then schema-level models */
	struct rank_cmodel *models;
	int ninputs;
	struct rank_input_info *inputs;
	int nconsts;                 /* constants visible to the profile */
	const struct rank_constant_decl **consts;
	int rerank;
	struct rank_qpool *qpool;    /* its retired queries (query.c); NULL: none kept */
};

struct rank_schema {
	struct rank_sd *sd;
	int nprofiles;
	struct rank_profile *profiles;
	struct rank_qpool *qpools;   /* nprofiles, once every profile compiled */
};

/* The retired queries of one profile, which rank_query_new takes back
 * (query.c): a stack, the most recently retired on top, linked through
 * struct rank_query's next, of at most keep queries: all that rank/ changes
 * in a loaded application, under lock.  A retired query keeps every buffer
 * it grew (value stack, arena blocks, input cells, model buffers and
 * caches) but not its runtime contexts, which runtime_ctx_free hands to
 * the model's own pool, shared by every profile that uses the model. */
struct rank_qpool {
	pthread_mutex_t lock;
	int keep;                    /* rank_app_set_query_pool; 1 by default */
	int n;
	struct rank_query *top;
};

/* The models an application loaded, one entry per onnx-model block of its
 * schemas (profile-level blocks and inherited copies included).  app.c
 * loads them all before any profile compiles; the compiler only looks a
 * block's model up here. */
struct rank_model_ref {
	const struct rank_model_decl *decl;
	const struct rt_model *rt;   /* owned by the application */
};
struct rank_models {
	int n;
	const struct rank_model_ref *refs;
};

/* compile.c.  Compile profile declaration d of schema s into p, its models
 * taken from models (NULL: none loaded, and an onnx() feature or a
 * profile-level onnx-model block is STRATA_NOT_FOUND).  Returns 0,
 * STRATA_TYPE, STRATA_NOT_IMPLEMENTED, STRATA_LIMIT, STRATA_NOT_FOUND,
 * STRATA_NOMEM, with "file:line:col: " in front of the message where the
 * error has a position.  On failure p is left for rank_profile_release. */
int rank_profile_compile(struct rank_profile *p, const struct rank_schema *s,
                         const struct rank_profile_decl *d, const struct rank_models *models,
                         struct strata_error *err);
void rank_profile_release(struct rank_profile *p);
/* Compile one standalone expression against profile p into prog (tests). */
int rank_expr_compile(struct rank_profile *p, const struct rank_ast *a, struct rank_prog *prog,
                      struct strata_error *err);
void rank_prog_release(struct rank_prog *prog);

/* vm.c: a value on the VM stack.  Numbers live in num (cells == &num is not
 * used); tensors point at their cells, typed cell (BASE_DT_*). */
struct rank_val {
	const void *cells;
	double num;
	int cell;
};
int rank_vm_run(struct rank_query *q, const struct rank_prog *prog, struct rank_val *out,
                struct strata_error *err);

/* tensor.c: dense algebra over rank_types with cells of any BASE_DT_*.
 * Results are double cells in arena memory. */
double rank_cell(int cell, const void *cells, size_t i);
int rank_tensor_join(struct base_arena *a, const struct rank_type *ta, struct rank_val va,
                     const struct rank_type *tb, struct rank_val vb, const struct rank_type *tr,
                     double (*fn)(void *ud, double x, double y), void *ud, double **out);
int rank_tensor_reduce(struct base_arena *a, const struct rank_type *ti, struct rank_val v,
                       const struct rank_type *tr, int agg, double **out);
double rank_tensor_dot(int ca, const void *a, int cb, const void *b, size_t n);
double rank_tensor_distance(int metric, int ca, const void *a, int cb, const void *b, size_t n);
double rank_closeness_of(int metric, double distance);

enum rank_agg { RANK_AGG_SUM = 1, RANK_AGG_AVG, RANK_AGG_MAX, RANK_AGG_MIN, RANK_AGG_PROD,
                RANK_AGG_COUNT };

/* The query state vm.c and model.c share with query.c. */
struct rank_qmodel {
	struct rt_ctx *cx;
	struct rt_tensor *in, *out;  /* nin, nout */
	void **conv;                 /* per input: pooled conversion / stacking buffer */
	size_t *conv_cap;            /* bytes */
	long serial;                 /* doc evaluation whose outputs in out[] are current */
	/* second-phase cache: per output, n candidates' slices (raw cells) */
	void **cache;
	size_t *cache_cap;
	uint32_t *cache_lids;
	uint8_t *cache_ok;           /* per candidate: its slices are filled */
	size_t cache_n, cache_lids_cap;
};

/* How the VM's ONNX instruction reads output `out` of model m for the
 * query's current document (model.c's rank_model_value): the VM knows
 * models only through it, and model.c runs their inputs on the VM. */
typedef int rank_model_value_fn(struct rank_query *q, int m, int out, struct rank_val *v,
                                struct strata_error *err);

struct rank_query {
	const struct rank_profile *p;
	rank_model_value_fn *model_value;
	struct base_arena arena;     /* temporaries of one document */
	double **inputs;             /* per profile input: ncells values */
	int *nn_input;               /* per field: query input of nearestNeighbor, -1 */
	struct rank_val *stack;      /* shared by all programs (see vm.c) */
	size_t nstack, top;
	size_t nslots;               /* of the stack, what the profile's programs need */
	struct rank_qmodel *models;  /* per profile model */
	const struct rank_docs *docs;
	uint32_t lid;
	double first;
	long serial;                 /* bumped per document evaluation */
	long cand;                   /* candidate index during second phase, else -1 */
	int ncand_lookup;            /* features: look model outputs up in the cache */
	struct rank_query *next;     /* retired: the one below it in its profile's pool */
};

/* query.c: the pools of retired queries.  One pool per profile of s, each
 * keeping one query, and each profile pointed at its own.  Returns 0,
 * STRATA_NOMEM, or an errno (a mutex that would not initialize). */
int rank_qpools_init(struct rank_schema *s, struct strata_error *err);
/* Free s's pools and every query retired into them.  No query of s may be
 * live.  Nothing happens when s has no pools. */
void rank_qpools_free(struct rank_schema *s);
/* From now on keep at most n retired queries in pl; those beyond n are
 * freed now. */
void rank_qpool_keep(struct rank_qpool *pl, int n);

/* model.c */
int rank_model_value(struct rank_query *q, int m, int out, struct rank_val *v,
                     struct strata_error *err);
int rank_model_batch(struct rank_query *q, int m, const uint32_t *lids, const double *first,
                     size_t n, struct strata_error *err);
/* Prepare every model's second-phase cache for these candidates. */
int rank_model_cache_begin(struct rank_query *q, const uint32_t *lids, size_t n,
                           struct strata_error *err);
int rank_qmodel_init(struct rank_query *q, int m, struct strata_error *err);
void rank_qmodel_release(struct rank_query *q, int m);
/* A retired query: its runtime context goes back to the runtime (cx NULL),
 * its buffers stay.  Taken back: a context again, nothing cached. */
void rank_qmodel_retire(struct rank_query *q, int m);
int rank_qmodel_reuse(struct rank_query *q, int m, struct strata_error *err);
/* query.c: evaluate prog (compiled with rank_expr_compile against q's profile)
 * for document lid; the result lives until the next evaluation (tests). */
int rank_query_eval(struct rank_query *q, const struct rank_prog *prog, const struct rank_docs *d,
                    uint32_t lid, double first, struct rank_val *out, struct strata_error *err);

/* ---- front end internals (lex.c, parser.c, expr.c, parse.c, type.c, schema.c) */

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

void rank_lex_init(struct rank_lexer *lx, const char *file, const char *text, size_t len);
/* Scan the next token in mode without consuming it. */
void rank_lex_peek(const struct rank_lexer *lx, int mode, struct rank_tok *t);
/* Consume t, a token just peeked. */
void rank_lex_take(struct rank_lexer *lx, const struct rank_tok *t);
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
int rank_lex_verr(const struct rank_lexer *lx, int line, int col, struct strata_error *err, int code,
                  const char *fmt, va_list ap);

/* Parse a type at the lexer ("double", "tensor<float>(x[3])"); errors carry
 * positions.  STRATA_PARSE, STRATA_TYPE (unknown cell type, bad or duplicate
 * dimension), STRATA_NOT_IMPLEMENTED (mapped or indexed-unbound dimensions),
 * STRATA_NOMEM.  t is cleared on failure. */
int rank_type_lex(struct rank_lexer *lx, struct rank_type *t, struct strata_error *err);
int rank_type_copy(struct rank_type *dst, const struct rank_type *src);

/* parser.c: the state parse.c and expr.c share, and their common helpers.
 * Every rank_parser_* error function formats "file:line:col: message" onto
 * p->err and returns code (STRATA_NOMEM, STRATA_LIMIT for the fixed ones). */
#define RANK_PARSE_MAX_DEPTH 200 /* nesting of expressions and of value lists */

struct rank_parser {
	struct rank_lexer *lx;
	struct strata_error *err;
	struct rank_sd *sd; /* NULL when parsing a lone expression */
	int depth;          /* see rank_parser_enter */
};

/* An error at token t, or at (line, col). */
int rank_parser_fail(struct rank_parser *p, const struct rank_tok *t, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
int rank_parser_fail_at(struct rank_parser *p, int line, int col, int code, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
/* STRATA_NOMEM at the lexer's position. */
int rank_parser_nomem(struct rank_parser *p);
/* rank_vec_push with its failures reported (STRATA_NOMEM, STRATA_LIMIT). */
int rank_parser_push(struct rank_parser *p, void *arrp, int *n, size_t elem);
/* t quoted for a message (rank_tok_show); the text stays valid until the
 * second call after this one in the same thread. */
const char *rank_tok_quote(const struct rank_tok *t);
/* A copy of t's text (base_strfree); NULL, with STRATA_NOMEM reported, when
 * memory runs out. */
char *rank_parser_tokdup(struct rank_parser *p, const struct rank_tok *t);
struct rank_pos rank_parser_pos(const struct rank_parser *p, const struct rank_tok *t);
/* Take the next token (in mode) into t; STRATA_PARSE "expected <what>" unless
 * it is a name. */
int rank_parser_expect_name(struct rank_parser *p, int mode, struct rank_tok *t, const char *what);
/* One level deeper (at token t); STRATA_LIMIT past RANK_PARSE_MAX_DEPTH.  The
 * caller decrements p->depth when it leaves the level. */
int rank_parser_enter(struct rank_parser *p, const struct rank_tok *t);

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

void rank_function_decl_clear(struct rank_function_decl *f);
void rank_input_decl_clear(struct rank_input_decl *in);
void rank_constant_decl_clear(struct rank_constant_decl *c);
void rank_model_decl_clear(struct rank_model_decl *m);
void rank_profile_decl_clear(struct rank_profile_decl *p);

#endif
