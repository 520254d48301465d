/*
 * engine_int.h: what the files of engine/ share.  No other subsystem includes
 * it.
 *
 * Data flow inside engine/:
 *   db.c           strata_open/close: the rank application, the store, one
 *                  struct eng_doctype per schema; document id parsing
 *   tensor_json.c  dense tensors between JSON and cells (feed, query inputs,
 *                  summaries, match features)
 *   feed.c         Vespa document operations -> store transactions; get, remove
 *   yql.c          YQL text -> struct yql_query (a condition tree)
 *   query.c        a search request: match, phases, hit order, summaries
 *   result.c       JSON output: the result tree, documents, a JSON printer
 *                  that writes numbers in their shortest exact form
 */
#ifndef ENGINE_INT_H
#define ENGINE_INT_H

#include <jansson.h>

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
};

/* ---- db.c ------------------------------------------------------------------ */

/* Parse a document id "id:NS:DOCTYPE:[n=N|g=G]:KEY" and find its doctype.
 * Returns 0 and *dt, or STRATA_INVALID_ARGUMENT (malformed, unknown doctype). */
int eng_docid_parse(struct strata *db, const char *id, struct eng_doctype **dt,
                    struct strata_error *err);
struct eng_doctype *eng_doctype_find(struct strata *db, const char *name);

/* ---- tensor_json.c ------------------------------------------------------------ */

/* A dense tensor type: cell type and named dimensions. */
struct eng_ttype {
	int cell;  /* BASE_DT_FLOAT, DOUBLE, INT8, BFLOAT16, INT32, INT64 */
	int rank;
	const int64_t *dims;
	const char *const *dim_names; /* may be NULL (then "d0", "d1", ...) */
};

size_t eng_ttype_cells(const struct eng_ttype *t);
/* "tensor<float>(x[3],y[2])" ("tensor(x[3])" for double cells) into buf. */
const char *eng_ttype_str(const struct eng_ttype *t, char *buf, size_t n);

/* Fill cells (eng_ttype_cells(t) cells of t->cell) from JSON: nested arrays,
 * {"values": [...]}, {"cells": [{"address": {...}, "value": v}]}, a number for
 * rank 0, or (literal = 1) a string holding a Vespa tensor literal.  what
 * names the value in messages ("field 'emb'").  Returns 0 or
 * STRATA_INVALID_ARGUMENT. */
int eng_tensor_from_json(const json_t *j, const struct eng_ttype *t, int literal, void *cells,
                         const char *what, struct strata_error *err);

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

/* The JSON of one stored field value (NULL when it is not set).  dim_names
 * name a tensor's dimensions (may be NULL). */
json_t *eng_value_json(const struct store_field *f, const char *const *dim_names,
                       const struct store_value *v);

/* The JSON of a feature value (number or tensor). */
json_t *eng_feature_json(const struct rank_feature *f);

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
	char *label;       /* NN: or NULL */
	int nkids;
	struct yql_node **kids;
	int fidx;          /* set by query.c per doctype: field index or -1 */
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
};

/* Parse a YQL statement.  Returns 0, STRATA_PARSE ("yql:1:COL: message"),
 * STRATA_NOMEM.  Free with yql_free. */
int yql_parse(const char *text, struct yql_query **out, struct strata_error *err);
void yql_free(struct yql_query *q);
/* A readable dump of the condition tree (for tests): "AND(CMP(price<30),...)". */
char *yql_dump(const struct yql_node *n);

/* ---- the CLI (cli.c, cli_run.c) ------------------------------------------------------- */

/* `strata run MODEL [--input name=JSON ...]`: argv[0] is "run".  Returns the
 * exit code. */
int eng_cli_run(int argc, char **argv);
/* strata inspect MODEL (cli_run.c). */
int eng_cli_inspect(int argc, char **argv);
/* Print "strata: msg" on stderr; returns 1. */
int eng_cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print msg and the command's usage on stderr; returns 2. */
int eng_cli_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
