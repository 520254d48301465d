/*
 * query_int.h: the state of one search request, shared by query.c (match,
 * phases, hit order, the result), summary.c (the hits' summaries),
 * select_elements.c (select-elements-by in them) and collapse.c
 * (collapsefield).
 */
#ifndef ENGINE_QUERY_INT_H
#define ENGINE_QUERY_INT_H

#include "engine_int.h"

struct dtstate {
	struct eng_doctype *dt;
	const struct rank_profile *prof;
	struct rank_query *rq;
	struct rank_docs docs;
	struct store_txn *txn;
	struct eng_match m;       /* what the operators match with (match/ops.c) */
	const struct rank_summary_class *summary; /* presentation.summary, or NULL */
	double nn_tune[RANK_NN_NSETTINGS]; /* the search's tuning (eng_nn_tuning) */
	struct eng_nnset nn[RANK_MAX_NN]; /* each nearestNeighbor item's set (owned; m.nn
	                                     borrows them) */
	int nnn;
	int nn_field;        /* the field of the item whose set is being found */
	struct qstate *qs;
	struct base_arena sparse; /* values of mapped tensor fields ranking read */
	uint64_t covered;    /* documents (or weakAnd matches, see span) matched and ranked */
	uint64_t span;       /* 0: covered counts documents; else the weakAnd's matches, of
	                        which covered were visited */
};

struct hit {
	struct dtstate *ds;
	uint32_t lid;
	int tier;            /* 1: final score (re-ranked, or no second phase) */
	double first;        /* before the first phase: documents visited before it */
	double score;
	const char *docid;
};

struct qstate {
	struct strata *db;
	struct yql_query *yql;
	struct store_txn *txn;
	int nds, ds_cap;
	struct dtstate *ds;
	struct hit *hits;
	size_t nhits, cap;
	struct strata_error *err;
	struct store_value *vals; /* the values of document vals_lid of type vals_ds */
	const struct dtstate *vals_ds; /* NULL: none loaded */
	uint32_t vals_lid;
	size_t vals_size;
	uint64_t rank_allocs;     /* allocations made inside rank_query_* calls */
	int match_nomem;          /* a collection value could not be read for lack of memory */
	json_t *embedded;         /* query inputs given as embed(...), by name (query_embed.c) */
	struct eng_deadline dl;   /* the request's timeout (deadline.c) */
	size_t want;              /* hits the page needs: offset + hits */
	uint64_t counted;         /* matches counted but not kept as hits (topk.c) */
	double t0;                /* base_now() when the search began */
	int timing;               /* presentation.timing: the result says its times */
	int short_value;          /* presentation.format.tensors short-value */
	int collapse;             /* collapsefield is given: every match is kept and ordered */
	double now;               /* seconds since 1970: ranking.properties.vespa.now, else the
	                             clock's when the search began */
	size_t nshown;            /* the hits the page shows from: all but those collapsed */
};

/* collapse.c: collapsefield over the ordered hits, reading field values
 * with value(qs, i, field, v) (query.c's, as grouping reads them): those
 * kept first, their number in qs->nshown.  Returns 0,
 * STRATA_INVALID_ARGUMENT (a field that is not there or no single value,
 * a bad collapsesize.FIELD), STRATA_LIMIT or STRATA_NOMEM. */
int eng_collapse(struct qstate *qs, const struct eng_request *req,
                 void (*value)(void *qs, size_t i, const char *field, struct eng_hitval *v));

/* The matches a first phase scores per call into rank. */
#define ENG_RANK_BLOCK 1024
/* The fewest matches a search thread takes when the profile does not set
 * min-hits-per-thread: fewer are scored faster than a thread wakes up. */
#define ENG_MIN_HITS_PER_THREAD 4096

/* firstphase.c: the first phase's scores of hits base .. base + n - 1 (all
 * of ds's matches) into their first, score and tier, over the handle's
 * search threads when it may.  When the query's soft deadline stops it,
 * the hits not scored leave (qs->nhits shrinks) and ds->covered counts the
 * documents before the first of them.  Returns 0 or the first phase's
 * error (STRATA_TIMEOUT at a hard deadline). */
int eng_first_phase(struct qstate *qs, struct dtstate *ds, size_t base, size_t n);

/* The second phase's scores of candidates base .. base + n - 1 (ordered
 * best first) split over the search threads, in chunks whose scores are
 * one thread's: 1 when it did so, 0 when the profile (its second phase
 * reads more than column attributes, dense inputs and models over them, or
 * num-threads-per-search 1), the candidates (one) or a write since the
 * search's snapshot leave it to the caller's thread, or the second phase's
 * error. */
int eng_second_phase_split(struct qstate *qs, struct dtstate *ds, size_t base, size_t n);
/* The global phase of n candidates (lids, firsts) over the search threads:
 * the normalizers' arguments into vals (rank_profile_global_norms x n)
 * and the scores, as rank_query_global_phase gives them on one thread.
 * Returns 1 when done, 0 when it cannot split (the caller runs it), or an
 * error. */
int eng_global_phase_split(struct qstate *qs, struct dtstate *ds, const uint32_t *lids,
                           const double *firsts, size_t n, double *vals, double *scores);

/* Bracket a call into rank: mark before, charge after. */
static inline uint64_t mark(void)
{
	return base_alloc_thread_count();
}

static inline void charge(struct qstate *qs, uint64_t since)
{
	qs->rank_allocs += base_alloc_thread_count() - since;
}

/* The hit's document id, read from the store the first time it is asked
 * for: most matches never need it. */
static inline const char *eng_hit_docid(const struct hit *hc)
{
	struct hit *h = (struct hit *)hc; /* the cache is no part of the order */
	if (!h->docid) {
		h->docid = store_docid(h->ds->txn, h->ds->dt->store_id, h->lid);
		if (!h->docid)
			h->docid = "";
	}
	return h->docid;
}

/* ---- summary.c ---------------------------------------------------------------- */

/* The summary class of the request's presentation.summary (each type's, in
 * ds->summary; NULL: the default).  Returns 0 or STRATA_INVALID_ARGUMENT
 * naming a class no type of the request has. */
int eng_pick_summary(struct qstate *qs, const struct eng_request *req);
/* Every field the YQL select list names must exist in some type of the
 * request.  Returns 0 or STRATA_INVALID_ARGUMENT. */
int eng_check_selected(struct qstate *qs);
/* The hit's "fields" object: its summary fields, match- and
 * summary-features (*out, a new reference).  Returns 0 or an error. */
int eng_summary(struct qstate *qs, const struct hit *h, json_t **out);

/* ---- select_elements.c ---------------------------------------------------------- */

/* What select-elements-by took from one summary-feature of a hit. */
struct eng_pick {
	const char *feature;  /* the select-elements-by of a field of the summary class */
	int found;            /* the profile's summary-features have it */
	int mapped;           /* its number of mapped dimensions */
	size_t *idx, n, cap;  /* its labels that are array indexes */
};

/* The summary-features of one hit, evaluated once, when first asked for
 * (eng_hit_features): as the "summaryfeatures" JSON object, and what
 * each select-elements-by of the hit's summary class needs.  The caller
 * zeroes it, sets c, and calls eng_hit_features_free after. */
struct eng_hit_features {
	const struct rank_summary_class *c; /* the hit's summary class */
	int done, rc;             /* evaluated, and with what result */
	json_t *json;             /* every summary-feature, by name */
	struct eng_pick *picks;   /* one per select-elements-by of c */
	int npicks;
	uint64_t own;             /* allocations of the features' callback, not rank's */
};

/* Evaluate h's summary-features into hf unless done already.  Returns 0,
 * STRATA_NOMEM, STRATA_RUNTIME (the same again on each later call). */
int eng_hit_features(struct qstate *qs, const struct hit *h, struct eng_hit_features *hf);
void eng_hit_features_free(struct eng_hit_features *hf);

/* select-elements-by: replace the array *v (a new reference, the field's
 * value) by the elements whose index is a label of summary-feature
 * feature's one mapped dimension, evaluated for h (through hf, see
 * eng_hit_features), in array order.  Returns 0, STRATA_NOT_FOUND (the
 * request's profile has no such summary-feature), STRATA_TYPE (not one
 * mapped dimension), STRATA_NOMEM, STRATA_RUNTIME; *v is unchanged on
 * error. */
int eng_select_elements(struct qstate *qs, const struct hit *h, struct eng_hit_features *hf,
                        const char *feature, json_t **v);

#endif
