/*
 * grouping.h: Vespa's grouping, shared by request/grouping_expr.c (the
 * language, parsed, and its expressions, evaluated per hit), request/yql.c
 * (which hands it the text after '|'), grouping.c (the groups and their
 * JSON) and query.c (the request's "select", the matches as struct
 * eng_hits).
 */
#ifndef ENGINE_GROUPING_H
#define ENGINE_GROUPING_H

#include "engine_int.h"

/* Grouping (request/grouping_expr.c parses it): | all(group(EXP) [max(N)] [precision(N)]
 * [order(...)] each(...)), or | all(output(...)) over all matches; several
 * side by side in | all(all(...) all(...)). */
enum yql_agg { YQL_AGG_COUNT = 1, YQL_AGG_SUM, YQL_AGG_AVG, YQL_AGG_MIN, YQL_AGG_MAX,
	       YQL_AGG_STDDEV };
struct grp_expr; /* a grouping expression (request/grouping_expr.c) */
struct yql_agg_expr {
	int agg;      /* enum yql_agg */
	char *field;  /* the argument when it is an attribute's name, else NULL */
	struct grp_expr *arg; /* the argument; NULL for count() */
	int desc;     /* in order(): '-' before it */
	char *label;  /* "count()", "sum(price)", "avg(relevance())", or as(label) */
	int col;
};
struct yql_grouping {
	char *field;  /* group(field) by an attribute's name, else NULL */
	struct grp_expr *key; /* group(EXP); NULL: all(output(...)) */
	char *label;  /* the key as Vespa prints it: the grouplist's label */
	int col;
	long max;     /* -1: every group */
	long precision; /* -1: not given (one node: every group is exact) */
	int norder, nout;
	struct yql_agg_expr *order, *out; /* out: each(output(...)), or all(output(...)) */
	struct yql_grouping *sub;         /* each(group(g) ...): the hits of each group
	                                     grouped in turn, or NULL */
	int summary;         /* each(each(output(summary()))): the hits shown per group */
	char *summary_class; /* summary(CLASS), or NULL: the request's */
	long hits_max;       /* max(N) of those hits; -1: all */
	int tag, hits_tag;   /* the group list's and hit list's numbers (continuations) */
	char *continuations; /* the request's {continuations: [...]}, space-separated */
};

/* A value of a grouping expression: kind 0 none, 1 a number (integral: a
 * long), 2 a string (s, n), 3 a bucket [num, to) (fixedwidth). */
struct grp_val {
	int kind, integral;
	double num, to;
	const char *s;
	size_t n;
};
/* Parse the grouping language at text + at (after YQL's
 * '|'), appending to q->grouping (in q's arena); *end: the offset where it
 * stopped.  Errors "NAME:LINE:COL: ...": STRATA_PARSE, STRATA_NOT_IMPLEMENTED
 * (a part of the language Strata lacks, named), STRATA_NOMEM. */
int eng_grouping_parse(const char *name, const char *text, size_t at, struct yql_query *q,
                       size_t *end, struct strata_error *err);
/* The request's "select": a whole grouping, appended to q's ("select:1:COL"). */
int eng_grouping_select(struct yql_query *q, const char *text, struct strata_error *err);
/* fn(ud, field, col, what) for every attribute q's groupings read, until it
 * returns non-zero, which is returned. */
int eng_grouping_fields(const struct yql_query *q,
                        int (*fn)(void *ud, const char *field, int col, const char *what),
                        void *ud);
/* e for hit i of h into *v (strings in a); 0, or -1 when a runs out. */
int grp_eval(const struct grp_expr *e, const struct eng_hits *h, size_t i, struct base_arena *a,
             struct grp_val *v);
/* Vespa's grouping result for q's groupings over h: the "group:root:0" hit.
 * Returns 0 and *out, STRATA_INVALID_ARGUMENT (a bad continuation),
 * STRATA_LIMIT, an error of h->hit_json, or STRATA_NOMEM. */
int eng_grouping_json(const struct yql_query *q, const struct eng_hits *h, json_t **out,
                      struct strata_error *err);

#endif
