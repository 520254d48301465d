/*
 * grouping.h: Vespa's grouping, shared by request/grouping_expr.c (the
 * language, parsed), grouping.c (its expressions evaluated per hit, the
 * groups and their JSON), request/yql.c (which hands it the text after
 * '|') and query.c (the request's "select", the matches as struct
 * eng_hits).
 */
#ifndef ENGINE_GROUPING_H
#define ENGINE_GROUPING_H

#include "engine_int.h"

/* Grouping (request/grouping_expr.c parses it).  A request is a tree of
 * levels.  A level with group(EXP) gathers its hits into groups: a
 * grouplist in the current group's children; each(...) says what each
 * group holds (outputs, a hit list, levels run over the group's hits);
 * output() beside group() goes to the current group's fields (count():
 * the number of groups).  A level without group() works on the hits
 * themselves: max(N) keeps the best N, output() fills the current group's
 * fields, each(output(summary())) lists them, all(...) inside runs levels
 * over them.  The request's outermost all(...) is one level of
 * q->grouping, its current group the root. */
enum yql_agg { YQL_AGG_COUNT = 1, YQL_AGG_SUM, YQL_AGG_AVG, YQL_AGG_MIN, YQL_AGG_MAX,
	       YQL_AGG_STDDEV };
struct grp_expr;   /* a grouping expression (request/grouping_expr.c) */
struct grp_filter; /* a filter(...) predicate (request/grouping_expr.c) */
struct yql_agg_expr {
	int agg;      /* enum yql_agg; in order(): the one aggregator the key is, or 0 */
	char *field;  /* the argument when it is an attribute's name, else NULL */
	struct grp_expr *arg; /* the argument (NULL for count()); in order(): the key, its
	                         aggregates the level's oaggs (leaves GX_AGG) */
	int desc;     /* in order(): '-' before it */
	char *label;  /* "count()", "sum(price)", "avg(relevance())", or as(label) */
	int col;
};
struct yql_grouping {
	char *field;  /* group(field) by an attribute's name, else NULL */
	struct grp_expr *key; /* group(EXP); NULL: a level over the hits */
	char *label;  /* the key as Vespa prints it: the grouplist's label */
	int col;
	struct grp_filter *filter; /* filter(...): the hits it keeps go on, or NULL */
	long max;     /* with a key: the groups shown; without: the best hits kept; -1: all */
	long precision; /* -1: not given (one node: every group is exact) */
	int norder, nout, nlout, noagg, nkids;
	struct yql_agg_expr *order; /* order(...): keys over oaggs */
	struct yql_agg_expr *oaggs; /* the aggregates order() reads */
	struct yql_agg_expr *out;   /* with a key: each group's (each(output(...))); without:
	                               the current group's */
	struct yql_agg_expr *lout;  /* output() beside group(): the current group's */
	struct yql_grouping *kids;  /* levels run over each group's hits (with a key) or
	                               over the hits kept (without) */
	struct yql_grouping *sub; /* kids' first level, or NULL: a shorthand for the common
	                             one-level nesting (test_yql reads it) */
	int hits_at;         /* the hit list's place among the kids' lists */
	int summary;         /* each(output(summary())): a hit list (per group with a key) */
	char *summary_class; /* summary(CLASS), or NULL: the request's */
	long hits_max;       /* with a key: each(max(N)) of the hits; -1: all */
	int tag, hits_tag;   /* the group list's and hit list's numbers (continuations) */
	char *continuations; /* the request's {continuations: [...]}, space-separated */
	int request;         /* the grouping request it is part of (0, 1, ...: each '|' and
	                        the "select" parameter one), a root of its own in the result */
};

/* A value of a grouping expression: kind 0 none, 1 a number (integral: a
 * long), 2 a string (s, n), 3 a number bucket [num, to) (fixedwidth,
 * predefined), 4 a string bucket [s, s2) (predefined; inf_lo, inf_hi:
 * an end at -inf or inf). */
struct grp_val {
	int kind, integral;
	double num, to;
	const char *s, *s2;
	size_t n, n2;
	int inf_lo, inf_hi;
};
/* The expression tree: grouping_expr.c builds it (in the query's arena),
 * grouping.c evaluates it per hit. */
enum {
	GX_ATTR = 1, GX_REL, GX_NUM, GX_STR, GX_ADD, GX_SUB, GX_MUL, GX_DIV, GX_MOD, GX_NEG,
	GX_MIN, GX_MAX, GX_AND, GX_OR, GX_XOR, GX_MATH1, GX_MATH2, GX_TIME, GX_STRCAT, GX_STRLEN,
	GX_TOSTRING, GX_TOLONG, GX_TODOUBLE, GX_FIXEDWIDTH,
	GX_AGG,     /* in order(): the value of the level's oaggs[fn] */
	GX_PREDEF,  /* predefined(EXP, bucket, ...): the bucket holding the value */
	GX_MAPGET,  /* field{"key"}: the value of map field at key (v.s) */
	GX_NOW,     /* now(): the query's time, seconds since 1970 (struct eng_hits' now) */
};

/* A bucket of predefined(), as the half-open [lo, hi) the brackets mean. */
struct grp_bucket {
	struct grp_val lo, hi; /* numbers (num) or strings (s, n); inf_lo, inf_hi: -inf, inf */
};

enum { BK_LONG = 1, BK_DOUBLE, BK_STRING };

struct grp_expr {
	int op;
	int fn;          /* GX_MATH1, GX_MATH2, GX_TIME: which function */
	int nargs;
	struct grp_expr **args;
	char *field;     /* GX_ATTR */
	struct grp_val v; /* GX_NUM, GX_STR */
	struct grp_bucket *buckets; /* GX_PREDEF, ascending, fn of them; nargs 1 */
	int btype;       /* GX_PREDEF: BK_LONG, BK_DOUBLE or BK_STRING */
	int col;
};

enum { FX_REGEX = 1, FX_RANGE, FX_ISTRUE, FX_NOT, FX_AND, FX_OR };

struct grp_filter {
	int op;
	struct grp_filter *a, *b; /* FX_NOT: a; FX_AND, FX_OR: a, b */
	struct grp_expr *e;       /* FX_REGEX, FX_RANGE, FX_ISTRUE: the value tested */
	char *re;                 /* FX_REGEX: the pattern, anchored: ^(PATTERN)$ */
	double lo, hi;            /* FX_RANGE */
	int lo_incl, hi_incl;
};

/* Compare bucket ends a and b of bucket type t (BK_*): -inf below all, inf above. */
int grp_bucket_cmp(const struct grp_val *a, const struct grp_val *b, int t);
/* One past the largest list number (continuations' tags) of s and its kids. */
int grp_tags(const struct yql_grouping *s);

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
/* An order() key e over one group's aggregates: agg(ud, k, v) gives the
 * value of oaggs[k].  0, or -1 when a runs out. */
int grp_eval_aggs(const struct grp_expr *e, void (*agg)(void *ud, int k, struct grp_val *v),
                  void *ud, struct base_arena *a, struct grp_val *v);
/* The regular expressions of filters, compiled on first use (one run's). */
struct grp_regexes;
/* Does hit i of h pass f?  *keep: 1 or 0.  0, or -1 out of memory. */
int grp_filter_eval(const struct grp_filter *f, const struct eng_hits *h, size_t i,
                    struct base_arena *a, struct grp_regexes **res, int *keep);
void grp_regexes_free(struct grp_regexes *res);
/* The grouping requests of q: one result root each. */
int eng_grouping_requests(const struct yql_query *q);
/* Vespa's grouping result of q's request req over h: the hit
 * "group:root:REQ".  Returns 0 and *out, STRATA_INVALID_ARGUMENT (a bad
 * continuation), STRATA_LIMIT, an error of h->hit_json, or STRATA_NOMEM. */
int eng_grouping_json(const struct yql_query *q, int req, const struct eng_hits *h,
                      json_t **out, struct strata_error *err);

#endif
