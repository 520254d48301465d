/*
 * firstphase.c: the first phase over a search's matches of one document
 * type, in blocks of ENG_RANK_BLOCK, on the calling thread or split over
 * the handle's search threads (searchpool.c); and the second phase's
 * candidates and the global phase's split the same way (at the end).
 *
 * A split needs a profile whose first phase reads nothing but column
 * attributes and dense inputs (rank_profile_first_parallel), and enough
 * matches: each thread gets at least min-hits-per-thread of them (the
 * profile's, else ENG_MIN_HITS_PER_THREAD), and there are at most
 * num-threads-per-search threads (the profile's, else all), capped at
 * strata_options.search_threads.  The matches are cut into blocks that the
 * caller and each worker that joins (searchpool.c) take in turn from a
 * shared counter, each thread with its own rank query state
 * (rank_query_fork) and its own read transaction on the same snapshot
 * (store_txn_id; when a write came in between, the search scores alone).
 * Taking blocks rather than a fixed share each means a worker that the
 * machine runs late (or never, before the caller is done) delays nothing.
 * Each match's score is computed by the same code whichever thread runs it
 * and lands in the match's own slot, so the hits, their order and their
 * ties are those of one thread.  The error of the lowest failed block is
 * the search's.
 *
 * The search's soft deadline is checked by the calling thread before each
 * block but its first, as one thread would.  When it passes, the blocks not
 * yet taken are withdrawn at once (the counter jumps to the end), so the
 * blocks scored are those taken before, a prefix of the matches, which the
 * workers finish; the matches after it leave, as they would alone.
 */
#include <stdatomic.h>

#include "query_int.h"

/* A thread's state: the caller's is parts[0]. */
struct part {
	struct rank_query *rq;
	struct rank_docs docs;
	struct dtstate own;          /* a worker's: ds with its txn and rank query */
	struct store_txn *txn;       /* a worker's read transaction */
	int rc;
	size_t failed_at;            /* rc != 0: the block that failed */
	struct strata_error err, *errp;
	uint64_t allocs;             /* counted on the thread that ran it */
};

struct split {
	struct qstate *qs;
	struct part *parts;
	size_t base, n;              /* hits base .. base + n - 1 */
	atomic_size_t next;          /* the next block to take; n or more: none left */
	size_t cut;                  /* n, or where the deadline stopped the split */
};

/* Stop at the deadline: the hits from `at` on leave, and the documents
 * visited from the first of them on are not covered. */
static void cut_at(struct qstate *qs, struct dtstate *ds, size_t base, size_t at)
{
	ds->covered = (uint64_t)qs->hits[base + at].first;
	qs->nhits = base + at;
}

/* Scores of hits base + from .. base + to into their first and score.
 * With ds, the calling thread alone: the deadline is checked before each
 * block but the first, and *to_out gets where scoring stopped. */
static int score_run(struct qstate *qs, struct rank_query *rq, const struct rank_docs *docs,
                     size_t base, size_t from, size_t to, struct strata_error *err,
                     struct dtstate *ds)
{
	uint32_t lids[ENG_RANK_BLOCK];
	double scores[ENG_RANK_BLOCK];
	for (size_t off = from; off < to; off += ENG_RANK_BLOCK) {
		int stop = ds && off > from ? eng_deadline_check(&qs->dl, err) : 0;
		if (stop < 0)
			return stop;
		if (stop) {
			cut_at(qs, ds, base, off);
			return 0;
		}
		size_t k = to - off < ENG_RANK_BLOCK ? to - off : ENG_RANK_BLOCK;
		for (size_t i = 0; i < k; i++)
			lids[i] = qs->hits[base + off + i].lid;
		int rc = rank_query_first_phase(rq, docs, lids, k, scores, err);
		if (rc)
			return rc;
		for (size_t i = 0; i < k; i++) {
			struct hit *h = &qs->hits[base + off + i];
			h->first = h->score = scores[i];
			h->tier = 1;
		}
	}
	return 0;
}

static void run_part(void *ud, int slot)
{
	struct split *s = ud;
	struct part *p = &s->parts[slot];
	uint64_t a = base_alloc_thread_count();
	for (int took = 0;; took = 1) {
		if (slot == 0 && took) { /* the calling thread watches the deadline */
			int stop = eng_deadline_check(&s->qs->dl, p->errp);
			if (stop) {
				size_t cut = atomic_exchange(&s->next, s->n);
				if (stop < 0) {
					p->rc = stop;
					p->failed_at = cut;
				} else if (cut < s->n) {
					s->cut = cut;
				}
				break;
			}
		}
		size_t off = atomic_load(&s->next);
		do {
			if (off >= s->n)
				break;
		} while (!atomic_compare_exchange_weak(&s->next, &off, off + ENG_RANK_BLOCK));
		if (off >= s->n)
			break;
		size_t to = s->n - off < ENG_RANK_BLOCK ? s->n : off + ENG_RANK_BLOCK;
		int rc = score_run(s->qs, p->rq, &p->docs, s->base, off, to, p->errp, NULL);
		if (rc) {
			p->rc = rc;
			p->failed_at = off;
			break;
		}
	}
	p->allocs = base_alloc_thread_count() - a;
}

/* How many threads to split n matches over (1: none). */
static int threads_for(const struct qstate *qs, const struct dtstate *ds, size_t n)
{
	int t = eng_pool_size(qs->db->pool);
	int want = rank_profile_threads_per_search(ds->prof);
	if (want > 0 && want < t)
		t = want;
	int min = rank_profile_min_hits_per_thread(ds->prof);
	size_t per = min > 0 ? (size_t)min : ENG_MIN_HITS_PER_THREAD;
	if ((size_t)t > n / per)
		t = (int)(n / per);
	if (t > 1 && !rank_profile_first_parallel(ds->prof))
		t = 1;
	return t < 1 ? 1 : t;
}

/* Free what set_up made of parts[1..t). */
static void tear_down(struct qstate *qs, struct part *parts, int t)
{
	for (int i = 1; i < t; i++) {
		if (parts[i].rq) {
			uint64_t a = mark();
			rank_query_free(parts[i].rq);
			charge(qs, a);
		}
		store_txn_abort(parts[i].txn);
	}
}

/* A worker's state for each run but the first.  *alone: a write came in
 * since the search's snapshot, or the store has no reader slot left for a
 * worker, so the search scores alone. */
static int set_up(struct qstate *qs, struct dtstate *ds, struct part *parts, int t, int *alone)
{
	uint64_t snap = store_txn_id(qs->txn);
	for (int i = 1; i < t; i++) {
		struct part *p = &parts[i];
		int rc = store_txn_begin(qs->db->env, 0, &p->txn, &p->err);
		if (rc || store_txn_id(p->txn) != snap) {
			*alone = 1;
			return 0;
		}
		uint64_t a = mark();
		rc = rank_query_fork(ds->rq, &p->rq, qs->err);
		charge(qs, a);
		if (rc)
			return rc;
		p->own = *ds;
		p->own.txn = p->txn;
		p->own.rq = p->rq;
		p->docs = ds->docs;
		p->docs.ud = &p->own;
		p->errp = &p->err;
	}
	return 0;
}

/* After a run over parts[0 .. t): their allocations counted, and the
 * error of the lowest block that failed (the search's), or 0. */
static int gather(struct qstate *qs, struct part *parts, int t)
{
	int worst = -1;
	for (int i = 0; i < t; i++) {
		qs->rank_allocs += parts[i].allocs;
		if (parts[i].rc && (worst < 0 || parts[i].failed_at < parts[worst].failed_at))
			worst = i;
	}
	if (worst < 0)
		return 0;
	if (worst > 0)
		*qs->err = parts[worst].err;
	return parts[worst].rc;
}

/* The whole first phase on the calling thread. */
static int alone(struct qstate *qs, struct dtstate *ds, size_t base, size_t n)
{
	uint64_t a = mark();
	int rc = score_run(qs, ds->rq, &ds->docs, base, 0, n, qs->err, ds);
	charge(qs, a);
	return rc;
}

int eng_first_phase(struct qstate *qs, struct dtstate *ds, size_t base, size_t n)
{
	int t = threads_for(qs, ds, n);
	if (t == 1)
		return alone(qs, ds, base, n);
	struct part *parts = base_calloc((size_t)t, sizeof *parts);
	if (!parts)
		return base_nomem(qs->err, "the first phase's threads");
	int single = 0;
	int rc = set_up(qs, ds, parts, t, &single);
	if (rc == 0 && !single) {
		parts[0].rq = ds->rq;
		parts[0].docs = ds->docs;
		parts[0].errp = qs->err;
		struct split s = { .qs = qs, .parts = parts, .base = base, .n = n, .cut = n };
		atomic_init(&s.next, 0);
		int ran = eng_pool_run(qs->db->pool, t, run_part, &s);
		atomic_fetch_add(&qs->db->n_split, 1);
		atomic_fetch_add(&qs->db->n_split_parts, (unsigned long long)ran);
		rc = gather(qs, parts, t);
		if (!rc && s.cut < n)
			cut_at(qs, ds, base, s.cut);
	}
	parts[0].rq = NULL; /* the search's own */
	tear_down(qs, parts, t);
	base_free(parts, (size_t)t * sizeof *parts);
	return rc == 0 && single ? alone(qs, ds, base, n) : rc;
}

/* ---- re-ranking over the threads: the second phase's candidates, the
 * global phase's arguments and scores ------------------------------------------- */

struct rerank;
/* One stage's work for candidates from .. to - 1, on part p's fork. */
typedef int stage_fn(struct rerank *r, struct part *p, size_t from, size_t to);

struct rerank {
	struct qstate *qs;
	struct part *parts;
	stage_fn *run;
	size_t base, n, chunk;       /* candidates 0 .. n - 1, chunk at a time */
	atomic_size_t next;
	/* the global phase's candidates, normalizer arguments and scores */
	const uint32_t *lids;
	const double *firsts;
	double *vals, *scores;
};

/* Second-phase scores of the hits base + from .. base + to - 1. */
static int second_stage(struct rerank *r, struct part *p, size_t from, size_t to)
{
	struct qstate *qs = r->qs;
	uint32_t lids[ENG_RANK_BLOCK];
	double scores[ENG_RANK_BLOCK], firsts[ENG_RANK_BLOCK];
	for (size_t off = from; off < to; off += ENG_RANK_BLOCK) {
		size_t k = to - off < ENG_RANK_BLOCK ? to - off : ENG_RANK_BLOCK;
		for (size_t i = 0; i < k; i++) {
			lids[i] = qs->hits[r->base + off + i].lid;
			firsts[i] = qs->hits[r->base + off + i].first;
		}
		int rc = rank_query_second_phase(p->rq, &p->docs, lids, firsts, k, scores, p->errp);
		if (rc)
			return rc;
		for (size_t i = 0; i < k; i++)
			qs->hits[r->base + off + i].score = scores[i];
	}
	return 0;
}

static int args_stage(struct rerank *r, struct part *p, size_t from, size_t to)
{
	return rank_query_global_args(p->rq, &p->docs, r->lids, r->firsts, from, to, r->n, r->vals,
	                              p->errp);
}

static int scores_stage(struct rerank *r, struct part *p, size_t from, size_t to)
{
	return rank_query_global_scores(p->rq, &p->docs, r->lids, r->firsts, from, to, r->vals,
	                                r->n, r->scores, p->errp);
}

/* Chunks taken from the shared counter by whichever thread runs: each
 * chunk is the same whoever scores it, so the scores are too. */
static void rerank_part(void *ud, int slot)
{
	struct rerank *r = ud;
	struct part *p = &r->parts[slot];
	uint64_t a = base_alloc_thread_count();
	for (;;) {
		size_t off = atomic_fetch_add(&r->next, r->chunk);
		if (off >= r->n)
			break;
		size_t to = r->n - off < r->chunk ? r->n : off + r->chunk;
		int rc = r->run(r, p, off, to);
		if (rc) {
			p->rc = rc;
			p->failed_at = off;
			break;
		}
	}
	p->allocs = base_alloc_thread_count() - a;
}

/* The threads a re-ranking of n candidates may take: the pool's, at most
 * the profile's num-threads-per-search, at most one a candidate. */
static int rerank_threads(struct qstate *qs, struct dtstate *ds, size_t n)
{
	int t = eng_pool_size(qs->db->pool);
	int want = rank_profile_threads_per_search(ds->prof);
	if (want > 0 && want < t)
		t = want;
	if ((size_t)t > n)
		t = (int)n;
	return t;
}

/* One stage over the t threads of r's parts; *ran gets how many took
 * part.  Returns the error of the lowest chunk that failed, or 0. */
static int stage(struct rerank *r, int t, stage_fn *fn, unsigned long long *ran)
{
	r->run = fn;
	atomic_store(&r->next, 0);
	*ran += (unsigned long long)eng_pool_run(r->qs->db->pool, t, rerank_part, r);
	return gather(r->qs, r->parts, t);
}

/* Parts for t threads (part 0 the search's own fork), or a refusal:
 * returns 0 with *parts NULL when the forks could not all be had (*single:
 * the caller runs on its own thread), an error otherwise. */
static int rerank_begin(struct qstate *qs, struct dtstate *ds, int t, struct part **out,
                        const char *what)
{
	*out = NULL;
	struct part *parts = base_calloc((size_t)t, sizeof *parts);
	if (!parts)
		return base_nomem(qs->err, "%s's threads", what);
	int single = 0;
	int rc = set_up(qs, ds, parts, t, &single);
	if (rc == 0 && !single) {
		parts[0].rq = ds->rq;
		parts[0].docs = ds->docs;
		parts[0].errp = qs->err;
		*out = parts;
		return 0;
	}
	parts[0].rq = NULL;
	tear_down(qs, parts, t);
	base_free(parts, (size_t)t * sizeof *parts);
	return rc;
}

static void rerank_end(struct qstate *qs, struct part *parts, int t)
{
	parts[0].rq = NULL; /* the search's own */
	tear_down(qs, parts, t);
	base_free(parts, (size_t)t * sizeof *parts);
}

int eng_second_phase_split(struct qstate *qs, struct dtstate *ds, size_t base, size_t n)
{
	int t = rerank_threads(qs, ds, n);
	if (t < 2 || !rank_profile_second_parallel(ds->prof))
		return 0;
	struct part *parts;
	int rc = rerank_begin(qs, ds, t, &parts, "the second phase");
	if (rc || !parts)
		return rc;
	struct rerank r = { .qs = qs, .parts = parts, .base = base, .n = n,
	                    .chunk = (n + (size_t)t - 1) / (size_t)t };
	unsigned long long ran = 0;
	rc = stage(&r, t, second_stage, &ran);
	atomic_fetch_add(&qs->db->n_split2, 1);
	atomic_fetch_add(&qs->db->n_split2_parts, ran);
	rerank_end(qs, parts, t);
	return rc ? rc : 1;
}

int eng_global_phase_split(struct qstate *qs, struct dtstate *ds, const uint32_t *lids,
                           const double *firsts, size_t n, double *vals, double *scores)
{
	int t = rerank_threads(qs, ds, n);
	if (t < 2 || !rank_profile_global_parallel(ds->prof))
		return 0;
	struct part *parts;
	int rc = rerank_begin(qs, ds, t, &parts, "the global phase");
	if (rc || !parts)
		return rc;
	struct rerank r = { .qs = qs, .parts = parts, .n = n,
	                    .chunk = (n + (size_t)t - 1) / (size_t)t, .lids = lids,
	                    .firsts = firsts, .vals = vals, .scores = scores };
	unsigned long long ran = 0;
	/* the arguments over the threads, their normalization (which compares
	 * the candidates) on this one, then the expression over the threads */
	rc = rank_profile_global_norms(ds->prof) ? stage(&r, t, args_stage, &ran) : 0;
	if (!rc)
		rc = rank_query_global_normalize(ds->rq, vals, n, qs->err);
	if (!rc)
		rc = stage(&r, t, scores_stage, &ran);
	atomic_fetch_add(&qs->db->n_split_global, 1);
	atomic_fetch_add(&qs->db->n_split_global_parts, ran);
	rerank_end(qs, parts, t);
	return rc ? rc : 1;
}
