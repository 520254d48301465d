/*
 * rank_int.h: what the files of rank/ share: the schema AST, which the front
 * end produces and the back end reads.  No other subsystem includes it.
 *
 * Data flow inside rank/:
 *   lex.c, parse.c   .sd text -> struct rank_sd (schema AST, expressions as
 *   expr.c           struct rank_ast trees, every node with its position);
 *   parse_profile.c  parse.c's rank-profile and onnx-model blocks;
 *   parse_text.c,    its text-index settings and fieldsets, its document
 *   fields.c         part (collections, structs, summaries), its other
 *   parse_field.c    field settings (weight, sorting, bolding, ...);
 *   indexing.c       fields' indexing statements -> struct rank_ix trees;
 *   indexing_check.c their fields and types, once the documents are known;
 *   parser.c         the parsers share their state and helpers
 *   types.c          byte, uri, raw, reference, predicate; import field
 *                    (resolved across the schemas after docs.c)
 *   type.c           tensor types: parsing, copying, printing
 *   schema.c         resolves profile inheritance into flat profiles
 *   inputs.c         the query(x) they read undeclared, added as number inputs
 *   compile.c        types every expression (tensor types with named indexed
 *                    or mapped dimensions), resolves features, inlines user functions,
 *                    emits a flat program (struct rank_prog)
 *   compile_base.c   the compiler's errors, type table and emission;
 *   compile_tensor.c its tensor constructs (rename, concat, merge, slices,
 *                    literals, generators, ...)
 *   compile_feature.c foreach, query-term features, now, age, freshness
 *   gbdt.c           lightgbm()/xgboost() model dumps -> expressions for it
 *   explain.c        the EXPLAIN dump of compiled programs
 *   literal.c        the values of tensor literals, made when a profile compiles
 *   vm.c             runs programs; tensor.c is the dense tensor algebra,
 *                    tensor_sparse.c the algebra of mapped and mixed tensors;
 *   fn.c             the scalar functions by id, shared by compiler and VM
 *   model.c          onnx-model blocks: input mapping, batched and per-document
 *                    runs through runtime/
 *   query.c          the state of a query and the pools of retired ones;
 *                    inputs, phases, features
 *   profile.c        reading schemas and profiles (rank.h accessors)
 *   app.c            rank.h: loading an application: schemas, models, profiles
 *
 * Two more private headers, each for one audience, include this one:
 * rank_syntax.h, the front end's own (tokens, the lexer, the parsers' shared
 * state: lex.c to schema.c), and rank_eval.h, the back end's (programs, the
 * VM, models, queries: fn.c to app.c).  Neither side includes the other's.
 */
#ifndef RANK_INT_H
#define RANK_INT_H

#include "rank.h"

/* A position in a schema file. */
struct rank_pos {
	const char *file; /* owned by the struct rank_sd */
	int line, col;    /* 1-based */
};

/* The type of a value: a number is rank 0 (cells double).  Dimension names
 * are owned by whoever owns the type (the AST or the program).  A mapped
 * dimension (x{}, labels instead of indices) has size RANK_DIM_MAPPED. */
#define RANK_DIM_MAPPED ((int64_t)-1)
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
	RA_TENSOR,    /* a tensor literal: name is its type's text ("tensor(x{},y[2])");
	                 args are the cell values; in the short dense form ([..])
	                 params is empty, else each cell has one "dim:label" param
	                 per dimension (nparams = nargs * rank) */
	RA_GEN,       /* tensor(x[2],y[3])(args[0]): name is the type's text, params
	                 its dimension names, bound to each cell's indices */
};

enum rank_binop {
	RB_ADD = 1, RB_SUB, RB_MUL, RB_DIV, RB_MOD, RB_POW,
	RB_EQ, RB_NE, RB_LT, RB_LE, RB_GT, RB_GE,
	RB_AND, RB_OR,
	RB_APPROX,    /* ~=: equal within a relative 1e-6 */
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
	int string;              /* declared string: the default is its hash */
	int implicit;            /* not declared: read by the profile, a number (inputs.c) */
	double *dflt;            /* ncells values when has_default */
	size_t ncells;
	struct rank_pos pos;
};

struct rank_constant_decl {  /* constants { name type: value } or constant name { ... } */
	char *name;
	struct rank_type type;
	double *cells;           /* ncells values (read from file: when given) */
	size_t ncells;
	size_t nblocks;          /* a type with mapped dimensions: its blocks, each */
	char **labels;           /* under one label per mapped dimension (nblocks * them),
	                            with rank_type_cells() of the cells */
	char *file;              /* "file: path" (relative to the application folder), or NULL */
	struct rank_pos pos;
	struct rank_pos file_pos; /* of the path */
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

/* A rank property tuning a rank feature (rank-properties { bm25(f).k1: 0.9 },
 * props.c). */
struct rank_fprop_decl {
	char *name;          /* the whole key, "bm25(title).k1": inheritance merges by it */
	double value;
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
	int nfprops;                    /* rank properties of rank features */
	struct rank_fprop_decl *fprops;
	struct rank_ast *first_phase;   /* NULL when not set (here or inherited) */
	int has_drop_limit;             /* first-phase { rank-score-drop-limit } given */
	double drop_limit;              /* hits scoring <= this (or NaN) are dropped */
	int has_drop2, has_drop3;       /* the same in second-phase and global-phase, */
	double drop2, drop3;            /* for the hits each re-ranks */
	struct rank_ast *second_phase;
	int rerank_count;               /* -1 when not set */
	struct rank_ast *global_phase;
	int global_rerank_count;        /* -1 when not set */
	unsigned nn_given;              /* bit i: nn[i] set (enum rank_nn_setting) */
	double nn[RANK_NN_NSETTINGS];
	int threads_per_search;         /* num-threads-per-search, 0 when not set */
	int min_hits_per_thread;        /* min-hits-per-thread, 0 when not set */
	int nmatch_features, nsummary_features;
	struct rank_ast **match_features;   /* each with text = the feature's name */
	struct rank_ast **summary_features;
	struct rank_pos pos;
	int unresolved;                 /* its inheritance failed (rank_sd_resolve_all) */
};

/* ---- documents: structs, collection types, summaries (fields.c) ---------- */

/* A type node as parsed: a struct type names its struct, found once the
 * application's documents are known (structs may come from an inherited
 * document). */
struct rank_vtype_decl {
	struct rank_vtype pub;
	char *struct_name;        /* STRUCT: the name written */
	struct rank_pos pos;
};

struct rank_struct_decl {
	struct rank_struct pub;   /* name and fields point into the members below */
	char *name;
	int nfields;
	struct rank_struct_field *fields; /* names owned, types in rank_sd.vtypes */
	struct rank_pos pos;
};

/* summary NAME { source: g } in a document-summary or a field. */
struct rank_source_decl {
	char *name;               /* the summary field, or the field outside the document */
	char *source;             /* the field read (NULL: the field called name) */
	int tokens;               /* the summary setting tokens: show the field's tokens */
	int transform;            /* enum rank_summary_transform (dynamic, bolding: on, ...) */
	char *select_by;          /* select-elements-by: the summary-feature (NULL: none) */
	struct rank_pos pos;
};

struct rank_summary_decl {   /* document-summary name inherits p { ... } */
	char *name;
	char *inherits;           /* NULL when none */
	struct rank_pos inherits_pos;
	int nfields;
	struct rank_source_decl *fields;
	int omit_summary_features;
	struct rank_pos pos;
};

/* One parsed .sd file.  After schema.c's resolution, profiles[] are flat:
 * every profile holds what it inherits (its own definitions win) and a
 * "default" profile exists. */
/* fieldset name { fields: a, b }: the fields as named and their indexes in
 * rank_sd.fields (set once the whole schema is parsed). */
struct rank_fieldset {
	char *name;
	int nfields;
	char **names;
	int *fields;
	int line, col;
};

struct rank_sd {
	char *file;
	int npfiles;                    /* the schema's .profile files (rank_sd_parse_profiles): */
	char **pfiles;                  /* positions in their profiles point at these names */
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
	int nfieldsets;                 /* fieldset blocks (parse_text.c) */
	struct rank_fieldset *fieldsets;
	int stemming;                   /* schema-level stemming: (enum rank_stemming) */
	/* Documents (fields.c).  fields[] first holds the document's own
	 * fields, then the fields outside the document block; inheritance
	 * (rank_sd_inherit) appends what the parents have. */
	char *inherits;                 /* schema a inherits b: b, or NULL */
	struct rank_pos inherits_pos;
	int ndoc_inherits;              /* document a inherits b, c (names, positions) */
	struct rank_source_decl *doc_inherits;
	int nvtypes, nstructs, nsummaries, nixs, nfield_summaries;
	struct rank_vtype_decl **vtypes;   /* every type node of the fields (owned) */
	struct rank_struct_decl **structs;
	struct rank_summary_decl *summaries;
	struct rank_ix **ixs;                     /* the indexing scripts of the fields (owned) */
	struct rank_source_decl *field_summaries; /* summary settings inside fields, then
	                                              the schema's document-summary default */
	int default_omit_summary_features; /* document-summary default { omit-summary-features } */
	int nclasses;                   /* resolved summary classes; [0] is "default" */
	struct rank_summary_class *classes;
	int docs_resolved;              /* rank_sd_inherit() ran */
	/* types.c: reference<T> fields (name: the field, source: T) and
	 * import field r.f as g (name: g, source: "r.f"); fields point at
	 * their strings. */
	int nrefs, nimports;
	struct rank_source_decl *refs, *imports;
};

/* Resolve what documents share across the schemas of an application
 * (fields.c): document and schema inheritance (the parents' fields,
 * structs, document-summaries and, for schema inheritance, rank profiles
 * are added to each child), struct types, the inputs of fields outside the
 * document, and the summary classes.  sds[n] are every parsed schema of the
 * application, not yet resolved (rank_sd_resolve runs after this).
 * Returns 0, STRATA_TYPE (an unknown parent, struct or field, a cycle, a
 * field declared again with another type; "file:line:col: ..."),
 * STRATA_NOMEM.  errs (may be NULL) receives every error, each unknown type
 * on its own; err and the result are those of the first. */
int rank_sds_inherit(struct rank_sd **sds, int n, struct strata_errors *errs,
                     struct strata_error *err);
/* types.c, once rank_sds_inherit ran: every reference<T> must name a
 * schema T of the application, and every imported field takes the type of
 * the attribute it reads there.  Returns 0, STRATA_TYPE
 * ("file:line:col: ..."), STRATA_NOT_IMPLEMENTED; errs (may be NULL)
 * receives each error, err the first. */
int rank_sds_types_resolve(struct rank_sd **sds, int n, struct strata_errors *errs,
                           struct strata_error *err);
/* Check the indexing script of field f of sd (f->indexing, not NULL; the
 * documents resolved): every field it names, the types flowing through
 * it into each sink, what embed, chunk, binarize and pack_bits take and
 * give.  Sinks naming another field set that field's flags.  Returns 0,
 * STRATA_TYPE or STRATA_NOT_IMPLEMENTED ("file:line:col: ..."). */
int rank_indexing_check(struct rank_sd *sd, struct rank_field *f, struct strata_error *err);
/* The fields the fieldsets of sd name, looked up again once inheritance
 * added the parents' fields, which may come before sd's own (parse_text.c;
 * rank_sds_inherit calls it).  Returns 0 or STRATA_TYPE
 * ("file:line:col: fieldset 'f' names field 'x', which is not declared"). */
int rank_fieldsets_resolve(struct rank_sd *sd, struct strata_error *err);
/* The index of sd's field called name, or -1 (schema.c). */
int rank_sd_field_index(const struct rank_sd *sd, const char *name);
/* Free what the document part of sd owns (schema.c; rank_sd_free calls it). */
void rank_sd_docs_free(struct rank_sd *sd);
/* dst becomes a flat copy of the resolved profile src (same name).
 * Returns 0 or STRATA_NOMEM (dst is then cleared). */
int rank_profile_decl_copy(struct rank_profile_decl *dst, const struct rank_profile_decl *src);

/* Parse one .sd file's text (file names it in messages).  Returns 0,
 * STRATA_PARSE, STRATA_TYPE, STRATA_NOT_IMPLEMENTED, STRATA_NOMEM; messages
 * begin with "file:line:col: " (an allocation failure's with "out of
 * memory: ", the position after it). */
int rank_sd_parse(const char *file, const char *text, size_t len, struct rank_sd **out,
                  struct strata_error *err);
/* rank_sd_parse that goes on after an error when errs is not NULL, at the
 * next field, rank-profile or schema item (struct strata_errors), and lists
 * every error in errs.  Returns the first error's code, with that error in
 * err; *out is NULL after any error. */
/* Parse the rank-profile blocks of a .profile file (file names it, text
 * its len bytes) into sd, as if they were written in its schema.  Errors as
 * rank_sd_parse_all's (errs, when not NULL, receives each); sd stays
 * freeable whatever happens. */
int rank_sd_parse_profiles(struct rank_sd *sd, const char *file, const char *text, size_t len,
                           struct strata_errors *errs, struct strata_error *err);
int rank_sd_parse_all(const char *file, const char *text, size_t len,
                      struct strata_errors *errs, struct rank_sd **out,
                      struct strata_error *err);
/* Resolve inheritance (profiles may inherit from several, in any order of
 * declaration; cycles and unknown parents are errors) and add "default". */
int rank_sd_resolve(struct rank_sd *sd, struct strata_error *err);
/* rank_sd_resolve that, when errs is not NULL, goes on after a profile
 * fails to resolve: its error goes into errs, it and the profiles that
 * inherit it are marked unresolved, the others resolve.  Returns the first
 * error (in err) or 0. */
int rank_sd_resolve_all(struct rank_sd *sd, struct strata_errors *errs, struct strata_error *err);
/* inputs.c: add to flat profile p's inputs (after rank_sd_resolve), as
 * doubles with no default, the query(x) its expressions read that it does
 * not declare.  Returns 0 or STRATA_NOMEM. */
int rank_profile_implicit_inputs(struct rank_profile_decl *p, struct strata_error *err);
/* inputs.c: declare each of ts[0..n) that p does not declare (a query
 * profile type's typed query(x)).  Returns 0, STRATA_PARSE or STRATA_NOMEM. */
struct rank_typed_input;
int rank_profile_typed_inputs(struct rank_profile_decl *p, const struct rank_typed_input *ts,
                              int n, struct strata_error *err);
/* Free sd and everything it owns; NULL is ignored. */
void rank_sd_free(struct rank_sd *sd);

/* Parse a standalone expression (for tests and tools). */
int rank_expr_parse(const char *file, const char *text, struct rank_ast **out,
                    struct strata_error *err);
/* Free a and its whole tree; NULL is ignored. */
void rank_ast_free(struct rank_ast *a);

/* Helpers for type values.  The number of cells of t (1 for a number); with
 * mapped dimensions, the cells of one dense subspace (its indexed ones). */
size_t rank_type_cells(const struct rank_type *t);
/* a and b have the same dimensions: names, sizes (or mapped), order. */
int rank_type_same_dims(const struct rank_type *a, const struct rank_type *b);
/* How many of t's dimensions are mapped (inline: the VM asks per document). */
static inline int rank_type_mapped(const struct rank_type *t)
{
	int n = 0;
	for (int i = 0; i < t->rank; i++)
		n += t->dims[i] == RANK_DIM_MAPPED;
	return n;
}
/* rank_type_parse that also takes mapped dimensions (x{}). */
int rank_type_parse_mapped(const char *text, struct rank_type *t);
/* Parse "tensor<float>(x[3],y[2])" or "double" etc. into t (dim names
 * allocated with base_strdup).  Returns 0 or STRATA_PARSE. */
int rank_type_parse(const char *text, struct rank_type *t);
/* Free t's dimension names and make it a number. */
void rank_type_clear(struct rank_type *t);
/* Format t ("tensor<float>(x[3])") into buf. */
const char *rank_type_str(const struct rank_type *t, char *buf, size_t n);

#endif
