/*
 * engine_int.h: what the files of engine/ share.  No other subsystem includes
 * it.
 *
 * Data flow inside engine/:
 *   db.c           strata_open/close: the rank application, the store, one
 *                  struct eng_doctype per schema; document id parsing;
 *                  strata_stats
 *   contexts.c     the models' compiled contexts in DATA/contexts (deploy
 *                  writes them, every open loads them while they are fresh)
 *   tensor_json.c  dense tensors between JSON and cells (feed, query inputs,
 *                  summaries, match features)
 *   tensor_sparse_json.c  tensors with mapped dimensions from JSON into
 *                  blocks (query inputs); the stored JSON text of document
 *                  fields of such types, and their values for ranking
 *   feed.c         Vespa document operations -> store transactions; get, remove
 *   yql.c          YQL text -> struct yql_query (a condition tree)
 *   grouping.c     order by and grouping over the matches
 *   query.c        a search request: match, phases, hit order, summaries
 *   result.c       JSON output: the result tree, documents, a JSON printer
 *                  that writes numbers in their shortest exact form
 *   json_alloc.c   jansson's allocations through base_alloc
 *   values.c       collection and struct values (arrays, weighted sets, maps,
 *                  structs): checked JSON text for the store, updates, contains
 *   embed.c        the application's embedders (services.xml components):
 *                  text -> tensor for 'embed' in indexing and query inputs
 */
#ifndef ENGINE_INT_H
#define ENGINE_INT_H

#include <jansson.h>
#include <regex.h>
#include <stdatomic.h>

#include "strata.h"
#include "../base/base.h"
#include "../rank/rank.h"
#include "../store/store.h"

/* One document type: its schema and its store layout.  Field i of the store
 * layout is field i of the schema. */
struct eng_doctype {
	const struct rank_schema *schema;
	const char *name;           /* borrowed from the schema */
	int store_id;               /* handle from store_doctype_add */
	int nfields;
	struct store_field *fields; /* nfields, names borrowed from the schema */
};

struct strata {
	struct rank_app *app;
	struct store_env *env;
	char *appdir;
	char *datadir;
	int read_only;
	int ndoctypes;
	struct eng_doctype *doctypes;
	int ncontexts;              /* deploy: the models compiled into DATA/contexts */
	struct eng_embedders *embedders; /* embed.c; NULL when the application has none */
	/* strata_stats(): the only fields that change after open (atomics) */
	atomic_ullong n_queries;
	atomic_ullong n_rank_allocs;
};

/* ---- db.c ------------------------------------------------------------------ */

/* strata_open() (deploy = ENG_OPEN_ANY); with ENG_OPEN_DEPLOY it also
 * compiles every model of the application into DATA/contexts/, one shared
 * binary for all of them, and records them in DATA/contexts/manifest.json
 * (what `strata deploy` does); with ENG_OPEN_DEPLOYED the application must
 * have been deployed before (its store exists in DATA), else
 * STRATA_NOT_FOUND "... is not deployed", and nothing is created (the CLI's
 * query, feed, get and remove).  Every open loads a model from its context
 * while the manifest says that the source and the context are still the
 * files deploy saw, and compiles the source otherwise, saying why through
 * opts->log. */
enum { ENG_OPEN_ANY = 0, ENG_OPEN_DEPLOY = 1, ENG_OPEN_DEPLOYED = 2 };
int eng_open(const char *app, const struct strata_options *opts, int deploy, struct strata **out,
             struct strata_error *err);

/* ---- contexts.c: the models of an application and their compiled contexts ---- */

struct eng_model_src {
	char *file;                /* as the schema names it, relative to the application */
	char *path;                /* joined to the application folder */
};

struct rt_options;

/* What eng_model_for() works with while an application opens. */
struct eng_models {
	char *dir;                 /* DATA/contexts */
	int deploy;                /* 1: load the sources, remember them for eng_models_compile() */
	struct rt_options *opts;   /* the session options of every load */
	json_t *manifest;          /* NULL when there is none */
	strata_log_fn *log;        /* where notices go (NULL: nowhere), with log_ud */
	void *log_ud;
	size_t n, cap;
	struct eng_model_src *src;     /* deploy: the models loaded, in order */
};

/* Set ms up for opening an application whose data folder is datadir
 * (contexts in datadir/contexts); deploy: 1 when `strata deploy` opens it;
 * generations: the models' session.buffer_pool_generations (0 to 1024);
 * log, log_ud: where notices go (strata_options.log; NULL: nowhere).
 * Returns 0, STRATA_INVALID_ARGUMENT (generations) or STRATA_NOMEM. */
int eng_models_init(struct eng_models *ms, const char *datadir, int deploy, int generations,
                    strata_log_fn *log, void *log_ud, struct strata_error *err);
void eng_models_release(struct eng_models *ms);
/* The rank loader's callback (struct rank_loader): the model the schema
 * names file (path: joined to the application folder), from its context
 * while that is fresh, else compiled from the source (one notice through
 * ms->log when a context exists but cannot be used). */
int eng_model_for(void *ud, const char *file, const char *path, struct rt_model **out,
                  struct strata_error *err);
/* Deploy: compile every model eng_model_for loaded into ms->dir (one shared
 * binary) and write the manifest last. */
int eng_models_compile(struct eng_models *ms, struct strata_error *err);

/* How to compile a model into a context (the ep.* session options of
 * runtime.h). */
struct eng_compile {
	const char *context; /* the context model to write; NULL: beside the source */
	const char *prefix;  /* of its EPContext node and graph names; NULL: none */
	int embed;           /* 1: the binary inside the context model */
	int share;           /* 1: into the shared binary; 2: the last such model, which writes it */
};

/* Load the model at src and write its context as c says.  *context is the
 * path of the context model written (base_strfree).  Returns 0 or the
 * runtime's error, whose message names src. */
int eng_compile_model(const char *src, const struct eng_compile *c, char **context,
                      struct strata_error *err);
/* "DIR/NAME_ctx.onnx" for the model src ("x/NAME.onnx"); dir NULL: beside
 * src.  base_strfree; NULL when out of memory. */
char *eng_context_path(const char *dir, const char *src);
/* The binary the runtime writes for the context model at context when it
 * is named after the model src: "NAME_strata.bin" beside the context.  With
 * sharing, src is the first model of the group. */
char *eng_context_binary(const char *context, const char *src);

/* Parse a document id "id:NS:DOCTYPE:[n=N|g=G]:KEY" and find its doctype.
 * Returns 0 and *dt, or STRATA_INVALID_ARGUMENT (malformed, unknown doctype). */
int eng_docid_parse(struct strata *db, const char *id, struct eng_doctype **dt,
                    struct strata_error *err);
struct eng_doctype *eng_doctype_find(struct strata *db, const char *name);

/* ---- embed.c: embedders ------------------------------------------------------- */

struct eng_embedders;
/* Read the embedder components of db->appdir's services.xml (none when
 * there is no such file) into db->embedders.  Returns 0 or an error naming
 * services.xml and the component. */
int eng_embedders_load(struct strata *db, struct strata_error *err);
void eng_embedders_free(struct eng_embedders *e);
/* Embed the len bytes of text with the embedder id (NULL: the application's
 * only one) into a value of the field dest's tensor type, as feed JSON
 * (*out, a new reference: {"values": [...]} for a dense type, {"cells":
 * {...}} or {"blocks": {...}} for mapped and mixed ones).  for_query: 1 when
 * the text is a query (embedders may prefix queries and documents
 * differently).  Returns 0, STRATA_NOT_FOUND (no such embedder),
 * STRATA_NOT_IMPLEMENTED (it cannot run: a model Strata does not have), or
 * another error naming the embedder. */
int eng_embed(struct strata *db, const char *id, const char *text, size_t len, int for_query,
              const struct rank_field *dest, json_t **out, struct strata_error *err);

/* ---- json_alloc.c: jansson's memory ------------------------------------------- */

/* Route jansson's allocations through base_alloc/base_free (once per
 * process; any thread may call it any number of times).  It runs by itself
 * when the program starts; strata_open() calls it too. */
void eng_json_init(void);
/* Parse the len bytes at text (jansson's flags).  Returns the value, or
 * NULL with *oom = 1 when an allocation failed on the way (even one jansson
 * shrugged off: the value could be wrong), or NULL with *oom = 0 and the
 * reason in je when the text is not JSON. */
json_t *eng_json_parse(const char *text, size_t len, size_t flags, json_error_t *je, int *oom);

/* ---- tensor_json.c ------------------------------------------------------------ */

/* A tensor type: cell type and named dimensions.  Dense but for
 * eng_sparse_from_json, where a mapped dimension (x{}) has size -1. */
struct eng_ttype {
	int cell;  /* BASE_DT_FLOAT, DOUBLE, INT8, BFLOAT16, INT32, INT64 */
	int rank;
	const int64_t *dims;
	const char *const *dim_names; /* may be NULL (then "d0", "d1", ...) */
};

/* The cells of t (of one dense subspace when t has mapped dimensions). */
size_t eng_ttype_cells(const struct eng_ttype *t);
/* "tensor<float>(x[3],y[2])" ("tensor(x[3])" for double cells, "cat{}" for
 * a mapped dimension) into buf. */
const char *eng_ttype_str(const struct eng_ttype *t, char *buf, size_t n);

/* Fill cells (eng_ttype_cells(t) cells of t->cell) from JSON: nested arrays,
 * {"values": [...]}, {"cells": [{"address": {...}, "value": v}]}, a number for
 * rank 0, or (literal = 1) a string holding a Vespa tensor literal.  what
 * names the value in messages ("field 'emb'").  Returns 0 or
 * STRATA_INVALID_ARGUMENT. */
int eng_tensor_from_json(const json_t *j, const struct eng_ttype *t, int literal, void *cells,
                         const char *what, struct strata_error *err);

/* ---- tensor_sparse_json.c ----------------------------------------------------- */

/* The longest label of a mapped dimension, in bytes. */
#define ENG_LABEL_MAX 255

/* A tensor with mapped dimensions as blocks: block b has the labels
 * labels[b * nmapped ..] (the mapped dimensions in type order) and the sub
 * double cells cells[b * sub ..] of the indexed ones.  Labels are distinct
 * per block. */
struct eng_sparse {
	int nmapped;
	size_t sub;
	size_t nblocks, cap;
	char **labels;
	double *cells;
};

/* Fill s from JSON in Vespa's forms for mapped and mixed tensors (cells,
 * blocks, their short forms: tensor_sparse_json.c).  t has dims -1 for its
 * mapped dimensions, dim_names set.  what names the value in messages.
 * Returns 0 (free s with eng_sparse_free), STRATA_INVALID_ARGUMENT (a bad
 * address, label or value; s is then empty) or STRATA_NOMEM. */
int eng_sparse_from_json(const json_t *j, const struct eng_ttype *t, struct eng_sparse *s,
                         const char *what, struct strata_error *err);
/* Free what s holds and zero it. */
void eng_sparse_free(struct eng_sparse *s);
/* 1 when rf is a tensor field with mapped dimensions (stored as JSON text). */
int eng_field_mapped(const struct rank_field *rf);
/* The graph settings of a dense tensor field (db.c): a nearest-neighbour
 * graph in the field's metric when the schema indexes a tensor attribute of
 * one indexed dimension. */
void eng_hnsw_field(const struct rank_field *rf, struct store_field *sf);

/* nearest.c: the document set of a nearestNeighbor item. */
struct eng_nn {
	struct store_txn *txn;
	int doctype, field;        /* store handles */
	int graph;                 /* the field has an HNSW graph */
	int approximate;           /* the item allows approximate search */
	uint32_t target_hits, explore;
	const double *query;       /* the query tensor's cells */
	size_t ncells;
	/* The filter (NULL: every document): 1 passes, 0 not, or an error code. */
	int (*filter)(void *ud, uint32_t lid);
	/* The exact distance in the field's metric; +inf: no value. */
	double (*distance)(void *ud, uint32_t lid);
	void *ud;
};
/* *set (n local ids, sorted; freed with base_free(*set, n * 4)) gets the
 * targetHits nearest documents that pass the filter, exactly or from the
 * graph (see nearest.c for when).  Returns 0, STRATA_NOMEM, or the store's
 * and the filter's errors. */
int eng_nn_set(const struct eng_nn *r, uint32_t **set, size_t *n, struct strata_error *err);
/* The stored text of such a field's value from JSON in any of the forms
 * above: Vespa's short form, {"type": T, "cells": {label: v}} for one mapped
 * dimension, {"type": T, "blocks": {label: [...]}} for one mapped and
 * indexed ones, else {"type": T, "cells": [{"address": ..., "value": v}]},
 * cells rounded to the field's cell type, in arena a.  Returns 0,
 * STRATA_INVALID_ARGUMENT, STRATA_NOMEM. */
int eng_sparse_field_text(const struct rank_field *rf, const json_t *j, struct base_arena *a,
                          struct store_value *v, const char *what, struct strata_error *err);
/* The value of such a field as the VM reads it, from its stored text, made
 * in arena a; NULL when memory runs out or the text is not a value. */
const struct rank_sparse *eng_sparse_from_text(const struct rank_field *rf, const char *s,
                                               size_t n, struct base_arena *a);

/* The JSON of a dense tensor: {"type": ..., "values": nested arrays}; a
 * number for rank 0.  NULL on allocation failure. */
json_t *eng_tensor_to_json(const struct eng_ttype *t, const void *cells);

/* A JSON number for a cell value: integers stay integers, floats keep their
 * shortest decimal form. */
json_t *eng_json_number(int cell, double v);

/* ---- result.c ------------------------------------------------------------------ */

/* Serialize j into a new string (base_strfree).  pretty: two-space indent.
 * Numbers print in their shortest round-trip form.  NULL on allocation
 * failure. */
char *eng_json_dump(const json_t *j, int pretty);
/* values.c: the compact text of JSON value c, copied into arena a, as v's
 * string.  Returns 0 or STRATA_NOMEM (naming what). */
int eng_json_to_text(json_t *c, struct base_arena *a, struct store_value *v, const char *what,
                     struct strata_error *err);
/* v as the printer writes a real: the shortest form that reads back as v,
 * ".0" kept on integral values ("3.0", "0.1"); "null" when not finite. */
void eng_real_str(double v, char *buf, size_t n);

/* The JSON of one stored field value, which must be set (v->set).
 * dim_names name a tensor's dimensions (may be NULL).  NULL on allocation
 * failure (or a tensor value whose cells are missing). */
json_t *eng_value_json(const struct store_field *f, const char *const *dim_names,
                       const struct store_value *v);

/* The JSON of a feature value (number or tensor). */
json_t *eng_feature_json(const struct rank_feature *f);

/* ---- values.c: collection and struct fields ------------------------------------- */

/* Check j against the type of rf (an ARRAY, WSET, MAP or STRUCT field) and
 * set v to its canonical JSON text, allocated in a.  what names the field
 * in messages.  Returns 0, STRATA_INVALID_ARGUMENT (with the path to the
 * bad element), STRATA_NOMEM. */
int eng_cvalue_from_json(const struct rank_field *rf, const json_t *j, struct base_arena *a,
                         struct store_value *v, const char *what, struct strata_error *err);
/* An update of rf's value: op "add" (array elements appended, weighted set
 * keys set), "remove" (array elements equal to one given, weighted set
 * keys given) or "match" (a weighted set key's weight incremented or
 * decremented: {"element": key, "increment": n}; a missing key is made
 * only with create-if-nonexistent), applied to cur (NULL or unset:
 * empty); the result in v, in a.  remove-if-zero then drops keys of
 * weight 0.  Returns 0, STRATA_INVALID_ARGUMENT (a map or struct, a bad argument),
 * STRATA_NOMEM. */
int eng_cvalue_update(const struct rank_field *rf, const char *op, const json_t *arg,
                      const struct store_value *cur, struct base_arena *a, struct store_value *v,
                      const char *what, struct strata_error *err);
/* 1 when rf is an array or weighted set of numbers (int, long, float,
 * double). */
int eng_cvalue_holds_numbers(const struct rank_field *rf);
/* 1 when an element (a key of a weighted set) of the stored value (n
 * bytes at s) of rf, an array or weighted set of numbers, passes test; 0
 * when none does; -1 when memory ran out. */
int eng_cvalue_any_number(const struct rank_field *rf, const char *s, size_t n,
                          int (*test)(const void *ud, double v), const void *ud);
/* A field path assignment: step is "{key}" (rf a map), "[index]" (an
 * array, index below its length) or ".field" (a struct); arg, checked
 * against the part's type, replaces that part of cur (NULL or unset: an
 * empty value); the result in v, in a.  Returns 0,
 * STRATA_INVALID_ARGUMENT, STRATA_NOMEM. */
int eng_cvalue_assign_path(const struct rank_field *rf, const char *step, const json_t *arg,
                           const struct store_value *cur, struct base_arena *a,
                           struct store_value *v, const char *what, struct strata_error *err);
/* The simple type (RANK_FT_STRING to BOOL) at path inside the values of
 * rf: "key" or "value" of a map, a struct's field by name, arrays stepped
 * through ("people.name" in an array of structs, "m.value.f"); 0 when path
 * names no simple value. */
int eng_cvalue_path_type(const struct rank_field *rf, const char *path);
/* 1 when a value at path inside the stored value (n bytes at s) of rf
 * matches: equals str when str is not NULL, else passes test; 0 when none
 * does; -1 when memory ran out (so the answer is unknown). */
int eng_cvalue_path_match(const struct rank_field *rf, const char *s, size_t n, const char *path,
                          const char *str, int (*test)(const void *ud, double v), const void *ud);
/* 1 when rf is an array or weighted set of strings. */
int eng_cvalue_holds_strings(const struct rank_field *rf);
/* 1 when the stored value (n bytes at s) of rf, an array or weighted set of
 * strings, holds the element (key) str; 0 when not; -1 when memory ran out. */
int eng_cvalue_contains(const struct rank_field *rf, const char *s, size_t n, const char *str);

/* ---- yql.c ------------------------------------------------------------------------ */

enum yql_kind {
	YQL_TRUE = 1,
	YQL_FALSE,
	YQL_CMP,      /* field op num */
	YQL_RANGE,    /* range(field, lo, hi), bounds included */
	YQL_CONTAINS, /* field contains "str" */
	YQL_AND,
	YQL_OR,
	YQL_NOT,      /* !kids[0] */
	YQL_NN,       /* {targetHits: K}nearestNeighbor(field, input) */
	YQL_IN,       /* field in (v, ...): numbers (nums) or strings (strs) */
	YQL_MATCHES,  /* field matches "regex" (re) */
	YQL_RANK,     /* rank(c, ...): matches as kids[0]; the others feed rank features */
	YQL_USERQUERY, /* userQuery(): replaced by the query parameter's conditions */
	YQL_USERINPUT, /* userInput(@str) or userInput("text" in field): likewise */
};

enum yql_cmp { YQL_LT = 1, YQL_LE, YQL_GT, YQL_GE, YQL_EQ };

struct yql_node {
	int kind;          /* enum yql_kind */
	int op;            /* YQL_CMP: enum yql_cmp */
	int col;           /* 1-based column in the YQL text */
	char *field;       /* CMP, RANGE, CONTAINS, NN */
	double num;        /* CMP */
	double lo, hi;     /* RANGE */
	char *str;         /* CONTAINS */
	char *input;       /* NN: the query input name */
	long target_hits;  /* NN */
	int approximate;   /* NN: 1 unless approximate:false */
	long explore;      /* NN: hnsw.exploreAdditionalHits */
	char *label;       /* NN: or NULL */
	int nvals;         /* IN: the values, numbers or strings */
	double *nums;
	char **strs;       /* IN: NULL for numbers */
	regex_t *re;       /* MATCHES: compiled (str is its text); yql_free frees it */
	struct yql_node *re_next; /* MATCHES: the one compiled before, or NULL */
	int nkids;
	struct yql_node **kids;
	int fidx;          /* set by query.c per doctype: field index or -1 */
};

/* order by field [asc|desc], ... */
struct yql_order {
	char *field;
	int desc;
	int col;
};

/* Grouping: | all(group(field) [max(N)] [order(...)] each(output(...))), or
 * | all(output(...)) over all matches; several side by side in
 * | all(all(...) all(...)). */
enum yql_agg { YQL_AGG_COUNT = 1, YQL_AGG_SUM, YQL_AGG_AVG, YQL_AGG_MIN, YQL_AGG_MAX };
struct yql_agg_expr {
	int agg;      /* enum yql_agg */
	char *field;  /* NULL for count() */
	int desc;     /* in order(): '-' before it */
	char *label;  /* "count()", "sum(price)" */
	int col;
};
struct yql_grouping {
	char *field;  /* group(field); NULL: all(output(...)) */
	int col;
	long max;     /* -1: every group */
	int norder, nout;
	struct yql_agg_expr *order, *out; /* out: each(output(...)), or all(output(...)) */
	struct yql_grouping *sub;         /* each(group(g) ...): the hits of each group
	                                     grouped in turn, or NULL */
};

struct yql_query {
	struct base_arena arena; /* everything below lives here */
	int all_fields;          /* select * */
	int nfields;
	char **fields;
	int all_sources;         /* from sources * */
	int nsources;
	char **sources;
	struct yql_node *where;
	long limit;              /* -1 when not given */
	long offset;             /* -1 when not given */
	int norder;              /* order by: replaces the rank order */
	struct yql_order *order;
	int ngroupings;          /* after '|': all(...), or all(all(...) all(...) ...) */
	struct yql_grouping *grouping;
	struct yql_node *regexes;      /* the last MATCHES compiled (then re_next) */
};

/* Parse a YQL statement.  Returns 0, STRATA_PARSE ("yql:1:COL: message"),
 * STRATA_NOMEM.  Free with yql_free. */
int yql_parse(const char *text, struct yql_query **out, struct strata_error *err);
void yql_free(struct yql_query *q);
/* A readable dump of the condition tree (for tests): "AND(CMP(price<30),...)". */
char *yql_dump(const struct yql_node *n);

/* ---- textmatch.c: contains on text-indexed fields ----------------------------------- */

struct eng_text;
struct eng_textset;
/* For each CONTAINS node of where on a field of dt with a text index (its
 * fidx resolved for dt): tokenize its string as the field is tokenized and
 * open the terms' posting lists in txn, into *out (NULL when there is no
 * such node).  Returns 0, STRATA_LIMIT (too many words), STRATA_NOMEM,
 * store errors; on error nothing stays open.  Close with eng_text_close
 * (NULL is ignored) before txn ends. */
int eng_text_open(struct store_txn *txn, const struct eng_doctype *dt,
                  const struct yql_node *where, struct eng_textset **out,
                  struct strata_error *err);
void eng_text_close(struct eng_textset *s);
/* The text state of node n, or NULL (s may be NULL). */
const struct eng_text *eng_text_of(const struct eng_textset *s, const struct yql_node *n);
/* Whether document lid has the term, or the terms as a phrase (cheapest
 * with lids in increasing order). */
int eng_text_match(const struct eng_text *t, uint32_t lid);
/* The text rank feature (enum rank_text_feature) of field for lid, over the
 * CONTAINS conditions of the set on that field. */
/* The summary setting tokens: the terms the text index holds for value v of
 * text-indexed field f (its tokenizer flags), as a JSON array of strings.
 * Returns NULL on failure, err set (STRATA_NOMEM). */
json_t *eng_tokens_json(const struct store_field *f, const struct store_value *v,
                        struct strata_error *err);
double eng_text_feature(struct store_txn *txn, const struct eng_doctype *dt,
                        const struct eng_textset *s, int feature, int field, uint32_t lid);

/* ---- userquery.c: the where tree completed from the request and the schema ----------- */

/* Replace userQuery() and userInput(@p) by the conditions of request
 * parameter query or p (words in model.defaultIndex, else "default"), then
 * each contains on a fieldset of s by an OR over its fields.  Returns 0,
 * STRATA_LIMIT (too many words), STRATA_NOMEM. */
int eng_text_expand(struct yql_query *q, const json_t *req, const struct rank_schema *s,
                    struct strata_error *err);

/* ---- grouping.c: order by and grouping over the matches ----------------------------- */

/* A field's value in one hit: none, a number (integral: of an int, long or
 * bool field) or a string (s, n bytes, valid while the query runs). */
struct eng_hitval {
	int kind;      /* 0 none, 1 number, 2 string */
	int integral;
	double num;
	const char *s;
	size_t n;
};

/* The matches as grouping.c reads them (query.c provides it). */
struct eng_hits {
	size_t n;
	void *ud;
	double (*relevance)(void *ud, size_t i);
	/* the value of field (a name) in hit i */
	void (*value)(void *ud, size_t i, const char *field, struct eng_hitval *v);
};

/* The order of the hits by q's order by: perm[0..n) receives hit indexes,
 * the first hit first (a hit without a value after those with one, then
 * by document id as tiebreak(i, j) < 0 says).  Returns 0 or STRATA_NOMEM. */
int eng_order_hits(const struct yql_query *q, const struct eng_hits *h,
                   int (*tiebreak)(void *ud, size_t i, size_t j), size_t *perm,
                   struct strata_error *err);
/* Vespa's grouping result for q's groupings over h: the "group:root:0" hit.
 * Returns 0 and *out, or STRATA_NOMEM. */
int eng_grouping_json(const struct yql_query *q, const struct eng_hits *h, json_t **out,
                      struct strata_error *err);

/* ---- the CLI (cli.c, cli_run.c) ------------------------------------------------------- */

/* `strata run MODEL [--input name=JSON ...]`: argv[0] is "run".  Returns the
 * exit code. */
int eng_cli_run(int argc, char **argv);
/* strata inspect MODEL (cli_run.c). */
int eng_cli_inspect(int argc, char **argv);
/* strata compile MODEL... [--embed] [--share] [--prefix P] [-o DIR] (cli_run.c). */
int eng_cli_compile(int argc, char **argv);
/* Print "strata: msg" on stderr; returns 1. */
int eng_cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print msg and the command's usage on stderr; returns 2. */
int eng_cli_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
