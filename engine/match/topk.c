/*
 * topk.c: the k best matches of an OR of words, exactly, without scoring
 * most of them.
 *
 * It applies where the where tree is 'contains' of one word each on fields
 * with a text index, alone or under OR, and the first phase is bias + a
 * sum of weight * bm25(field) with weights of at least 0
 * (rank_profile_bm25_sum).  Each posting block keeps the most occurrences
 * of its term and the shortest field length among its documents
 * (text_blocks.c); bm25 grows with the one and falls with the other, so
 * bm25 at those two bounds every score of the term in the block (a list's
 * block bound, ub; the most of them, the list's bound u).
 *
 * Two passes.  The count reads every list's ids, block by block, a bit per
 * id in chunks of CHUNK ids: the number of matches is exact, and it costs
 * a fraction of scoring them.  It also notes each block's span and bound.
 * (One list needs no count: it is its frequency.)
 *
 * Then MaxScore, in document order, with the threshold the k-th best score
 * so far.  The lists in order of their bounds u, the weakest whose bounds
 * together with the bias cannot reach the threshold are not essential: a
 * document they alone hold cannot be a top hit.  The essential lists are
 * walked in windows, each ending where the first of their current blocks
 * ends (at most WINDOW ids).  A window whose blocks' bounds, with those of
 * the other lists' blocks there, cannot reach the threshold is passed over.
 * In the others each document of an essential list gets the bound of the
 * blocks that span it; while it reaches the threshold the other lists are
 * sought to it, strongest first, each replacing its block's bound by its
 * posting's presence; and a document whose bound still reaches it is
 * scored from its postings (occurrences and length, bm25 as the rank
 * feature computes it).  A document that scores within a margin of the
 * threshold or above is a candidate.  As the threshold rises, fewer lists
 * stay essential, and once none does the search ends.
 *
 * The candidates then go through the first phase like any match, so their
 * scores are the profile's, to the bit.  The margin (MARGIN, relative)
 * covers the rounding by which a score computed here may differ from the
 * program's: every document of the exhaustive top k, ties included, is a
 * candidate, so the result is the exhaustive one.
 */
#include <math.h>
#include <string.h>

#include "../engine_int.h"

#define MAX_LISTS 64
#define WINDOW 4096           /* ids of a window of blocks */
#define CHUNK 65536           /* ids counted in one bitmap */
#define MARGIN 1e-9           /* relative; rounding is some 1e-16 */
#define END UINT64_MAX
#define STOP_EVERY 64         /* windows between deadline checks */

/* A block of a list: its first and last lid, w * bm25 at its bounds. */
struct tblock {
	uint32_t first, last;
	double ub;
};

struct tlist {
	struct store_postings *p;
	double w;                 /* the first phase's weight of its field's bm25; 0: none */
	double idf, avgdl;
	struct rank_bm25 bm;
	uint64_t cur;             /* the list's lid, END past its end */
	uint32_t last;            /* its block's last lid */
	double ub;                /* w * bm25 at its block's bounds */
	double u;                 /* the most of ub over all its blocks */
	struct tblock *b;         /* its blocks, as the count read them */
	size_t nb, bcap, bat;     /* bat: the first that may hold the next document */
};

struct topk {
	struct tlist l[MAX_LISTS];
	int n;
	double bias;
	size_t k;
	double *heap;             /* the k best scores so far, the least on top */
	size_t nheap;
	struct cand {
		uint32_t lid;
		double est;
	} *cand;                  /* candidates, lids increasing, and their scores */
	size_t ncand, ccap;
	uint64_t bits[CHUNK / 64];
	struct strata_error *err;
};

/* Whether a score or bound x may reach threshold th: x within the margin
 * of it, or above. */
static int reaches(double x, double th)
{
	if (th == -INFINITY)
		return 1;
	if (th == INFINITY)
		return 0;
	return x + MARGIN * (fabs(x) + fabs(th)) >= th;
}

static double threshold(const struct topk *q)
{
	if (q->k == 0)
		return INFINITY;
	return q->nheap < q->k ? -INFINITY : q->heap[0];
}

/* The lists of the where tree (a contains, or an OR of them and of such
 * ORs) into q (NULL: only counted, in *n); 0 when a leaf is not one word
 * on a text index. */
static int gather(struct topk *q, int *n, const struct eng_match *m, const struct yql_node *node,
                  const struct rank_profile *prof, const struct rank_bm25_sum *sum)
{
	if (node->kind == YQL_OR) {
		for (int i = 0; i < node->nkids; i++)
			if (!gather(q, n, m, node->kids[i], prof, sum))
				return 0;
		return node->nkids > 0;
	}
	if (node->kind != YQL_CONTAINS || *n == MAX_LISTS || node->term.unranked)
		return 0;
	const struct eng_text *t = eng_text_of(m->text, node);
	struct store_postings *p;
	struct rank_bm25 bm;
	if (!t || eng_text_single(t, &p) != 1 || !p)
		return 0;
	rank_profile_bm25(prof, node->fidx, &bm);
	/* bm25 grows with the occurrences and falls with the length only so */
	if (!(bm.k1 >= 0) || !(bm.b >= 0 && bm.b <= 1))
		return 0;
	if (q) {
		struct tlist *l = &q->l[*n];
		l->p = p;
		l->bm = bm;
		l->w = 0;
		for (int i = 0; i < sum->n; i++)
			if (sum->field[i] == node->fidx)
				l->w = sum->weight[i];
		l->idf = eng_bm25_idf(eng_text_ndocs(t), (double)store_postings_df(p));
		l->avgdl = eng_text_avgdl(t, &l->bm);
	}
	(*n)++;
	return 1;
}

int eng_topk_fits(const struct eng_match *m, const struct yql_node *where,
                  const struct rank_profile *prof)
{
	struct rank_bm25_sum sum;
	int n = 0;
	return rank_profile_bm25_sum(prof, &sum) && gather(NULL, &n, m, where, prof, &sum);
}

/* Move l to its first posting from want on, with its block's bound. */
static int advance(struct tlist *l, uint64_t want, struct strata_error *err)
{
	uint32_t lid = (uint32_t)want, last, tf, dl;
	int rc = want > UINT32_MAX ? STRATA_NOT_FOUND : store_postings_seek(l->p, &lid);
	if (rc == STRATA_NOT_FOUND) {
		l->cur = END;
		return 0;
	}
	if (!rc && store_postings_block(l->p, &last, &tf, &dl) != 0)
		rc = STRATA_CORRUPT;
	if (rc)
		return base_err(err, rc, "reading the text index: %s",
		                rc == STRATA_CORRUPT ? "a bad posting block" : "the store failed");
	l->cur = lid;
	if (last != l->last || l->ub < 0) { /* a block not read before */
		l->last = last;
		l->ub = l->w > 0 ? l->w * eng_bm25(l->idf, tf, dl, l->avgdl, &l->bm) : 0;
	}
	return 0;
}

/* Sift the heap's top down (a min-heap of the k best scores). */
static void heap_down(double *h, size_t n)
{
	size_t i = 0;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= n)
			return;
		if (c + 1 < n && h[c + 1] < h[c])
			c++;
		if (!(h[c] < h[i]))
			return;
		double t = h[i];
		h[i] = h[c];
		h[c] = t;
		i = c;
	}
}

/* Drop the candidates that can no longer reach the threshold. */
static void compact(struct topk *q)
{
	double th = threshold(q);
	size_t kept = 0;
	for (size_t i = 0; i < q->ncand; i++)
		if (reaches(q->cand[i].est, th))
			q->cand[kept++] = q->cand[i];
	q->ncand = kept;
}

static int candidate(struct topk *q, uint32_t lid, double est)
{
	if (q->nheap < q->k) {
		size_t i = q->nheap++;
		q->heap[i] = est;
		while (i && q->heap[(i - 1) / 2] > q->heap[i]) { /* up */
			double t = q->heap[i];
			q->heap[i] = q->heap[(i - 1) / 2];
			q->heap[(i - 1) / 2] = t;
			i = (i - 1) / 2;
		}
	} else if (est > q->heap[0]) {
		q->heap[0] = est;
		heap_down(q->heap, q->nheap);
	}
	if (q->ncand == q->ccap && q->ccap >= 2 * q->k + 1024)
		compact(q); /* before growing: the threshold has risen since */
	if (base_grow((void **)&q->cand, &q->ccap, q->ncand + 1, sizeof *q->cand,
	              SIZE_MAX / sizeof *q->cand) != 0)
		return base_nomem(q->err, "top hits");
	q->cand[q->ncand++] = (struct cand){lid, est};
	return 0;
}

/* ---- the count: every list's ids, a chunk of ids at a time --------------------------- */

/* Count the documents of the lists (their union) from their blocks' ids,
 * a bit per id in chunks of CHUNK ids; each list's bound over all its
 * blocks into its u.  The lists end past their last posting. */
static int count_all(struct topk *q, uint64_t *matched)
{
	for (uint64_t base = 0;;) {
		uint64_t top = base + CHUNK, next = END;
		memset(q->bits, 0, sizeof q->bits);
		for (int i = 0; i < q->n; i++) {
			struct tlist *l = &q->l[i];
			while (l->cur < top) {
				const uint32_t *a;
				uint32_t n = store_postings_rest(l->p, &a), j = 0;
				l->u = l->ub > l->u ? l->ub : l->u;
				if (!l->nb || l->b[l->nb - 1].last != l->last) { /* a block not seen */
					int rc = base_grow((void **)&l->b, &l->bcap, l->nb + 1, sizeof *l->b,
					                   SIZE_MAX / sizeof *l->b);
					if (rc)
						return base_nomem(q->err, "top hits");
					l->b[l->nb++] = (struct tblock){a[0], l->last, l->ub};
				}
				/* a word's bits gathered in a register, stored once */
				uint64_t w = (a[0] - base) / 64, acc = 0;
				for (; j < n && a[j] < top; j++) {
					uint64_t bit = a[j] - base;
					if (bit / 64 != w) {
						q->bits[w] |= acc;
						acc = 0;
						w = bit / 64;
					}
					acc |= (uint64_t)1 << (bit % 64);
				}
				q->bits[w] |= acc;
				int rc = advance(l, j < n ? top : (uint64_t)a[n - 1] + 1, q->err);
				if (rc)
					return rc;
			}
			next = l->cur < next ? l->cur : next;
		}
		for (size_t w = 0; w < CHUNK / 64; w++)
			*matched += (uint64_t)__builtin_popcountll(q->bits[w]);
		if (next == END)
			return 0;
		base = next / CHUNK * CHUNK; /* on to the next chunk that holds one */
	}
}

/* ---- the top k: MaxScore over the lists' bounds, block-max in windows ---------------- */

/* The first essential list: the lists ordered by their bounds u, the
 * weakest whose bounds with the bias stay below the threshold are not
 * essential (a document they alone hold cannot reach it); q->n when none
 * is essential. */
static int essential(const struct topk *q)
{
	double th = threshold(q), sum = q->bias;
	int e = 0;
	while (e < q->n && !reaches(sum + q->l[e].u, th))
		sum += q->l[e++].u;
	return e;
}

/* An essential list's postings in a window: a[0..n), a[at] the next. */
struct span {
	struct tlist *l;
	const uint32_t *a;
	uint32_t n, at;
};

/* The bound of non-essential list l at x from its blocks: the block's
 * bound when one spans x, else 0 (x is in no block).  Calls come with x
 * increasing. */
static double shallow(struct tlist *l, uint64_t x)
{
	while (l->bat < l->nb && l->b[l->bat].last < x)
		l->bat++;
	return l->bat < l->nb && l->b[l->bat].first <= x ? l->b[l->bat].ub : 0;
}

/* The most of the bounds of l's blocks that overlap [d, end], d increasing
 * from call to call. */
static double shallow_max(struct tlist *l, uint64_t d, uint64_t end)
{
	double m = 0;
	while (l->bat < l->nb && l->b[l->bat].last < d)
		l->bat++;
	for (size_t i = l->bat; i < l->nb && l->b[i].first <= end; i++)
		m = l->b[i].ub > m ? l->b[i].ub : m;
	return m;
}

/* Document x, held by the spans s[0..ns) of essential lists whose next it
 * is: its bound from their blocks and the non-essential lists' blocks
 * that span it; those lists, strongest first, sought to x while the bound
 * reaches the threshold (each one that lacks x lowers it); then its score
 * from the postings; a candidate when that reaches the threshold. */
static int visit(struct topk *q, struct span *s, int ns, int e, uint32_t x)
{
	double ub = q->bias, sh[MAX_LISTS];
	for (int i = 0; i < ns; i++)
		if (s[i].at < s[i].n && s[i].a[s[i].at] == x)
			ub += s[i].l->ub;
	for (int j = 0; j < e; j++)
		ub += sh[j] = q->l[j].nb ? shallow(&q->l[j], x) : q->l[j].u;
	for (int j = e - 1; j >= 0 && reaches(ub, threshold(q)); j--) {
		struct tlist *l = &q->l[j];
		if (sh[j] <= 0)
			continue;
		int rc = l->cur < x ? advance(l, x, q->err) : 0;
		if (rc)
			return rc;
		ub += (l->cur == x ? l->ub : 0) - sh[j];
	}
	if (!reaches(ub, threshold(q)))
		return 0;
	double est = q->bias;
	for (int i = 0; i < ns; i++) {
		struct tlist *l = s[i].l;
		uint32_t at = x;
		if (s[i].at >= s[i].n || s[i].a[s[i].at] != x || l->w <= 0)
			continue;
		int rc = store_postings_seek(l->p, &at);
		if (rc || at != x)
			return base_err(q->err, rc ? rc : STRATA_CORRUPT, "reading the text index");
		est += l->w * eng_bm25(l->idf, store_postings_tf(l->p), store_postings_dl(l->p),
		                       l->avgdl, &l->bm);
	}
	for (int j = 0; j < e; j++) {
		struct tlist *l = &q->l[j];
		if (l->cur == x && l->w > 0)
			est += l->w * eng_bm25(l->idf, store_postings_tf(l->p), store_postings_dl(l->p),
			                       l->avgdl, &l->bm);
	}
	return reaches(est, threshold(q)) ? candidate(q, x, est) : 0;
}

/* One step: the essential lists' window [d, end], from the first of their
 * documents to the first end of their blocks (at most WINDOW ids).  When
 * its blocks' bounds with those of the other lists' blocks there cannot
 * reach the threshold, the window is passed over; else its documents are
 * visited in order, until the threshold rises so that fewer lists are
 * essential.  Returns 0, 2 when no list is essential or all are past
 * their ends, or an error. */
static int step(struct topk *q)
{
	int e = essential(q);
	uint64_t d = END, end = END;
	for (int i = e; i < q->n; i++)
		d = q->l[i].cur < d ? q->l[i].cur : d;
	if (d == END)
		return 2;
	for (int i = e; i < q->n; i++)
		if (q->l[i].cur != END && q->l[i].last < end)
			end = q->l[i].last;
	if (end - d >= WINDOW)
		end = d + WINDOW - 1;
	struct span s[MAX_LISTS];
	int ns = 0;
	double ub = q->bias;
	for (int j = 0; j < e; j++)
		ub += q->l[j].nb ? shallow_max(&q->l[j], d, end) : q->l[j].u;
	for (int i = e; i < q->n; i++) {
		struct tlist *l = &q->l[i];
		if (l->cur > end)
			continue;
		ub += l->ub;
		const uint32_t *a;
		uint32_t n = store_postings_rest(l->p, &a), j = 0;
		while (j < n && a[j] <= end)
			j++;
		s[ns++] = (struct span){l, a, j, 0};
	}
	int rc = 0;
	uint64_t past = end + 1; /* where the spans' lists go on from */
	while (reaches(ub, threshold(q)) && !rc) {
		uint64_t x = END;
		for (int i = 0; i < ns; i++)
			if (s[i].at < s[i].n && s[i].a[s[i].at] < x)
				x = s[i].a[s[i].at];
		if (x == END)
			break;
		rc = visit(q, s, ns, e, (uint32_t)x);
		for (int i = 0; i < ns; i++)
			s[i].at += s[i].at < s[i].n && s[i].a[s[i].at] == x;
		if (essential(q) != e) { /* the threshold rose: fewer lists are essential */
			past = x + 1;
			break;
		}
	}
	for (int i = 0; i < ns && !rc; i++)
		rc = advance(s[i].l, past, q->err);
	return rc;
}

static void topk_free(struct topk *q)
{
	for (int i = 0; i < q->n; i++)
		base_free(q->l[i].b, q->l[i].bcap * sizeof *q->l[i].b);
	base_free(q->heap, q->k * sizeof *q->heap);
	base_free(q->cand, q->ccap * sizeof *q->cand);
	base_free(q, sizeof *q);
}

int eng_topk_run(struct eng_match *m, const struct yql_node *where,
                 const struct rank_profile *prof, size_t k, struct eng_deadline *dl,
                 int (*keep)(void *ud, uint32_t lid), void *ud, uint64_t *matched)
{
	struct rank_bm25_sum sum;
	*matched = 0;
	if (!rank_profile_bm25_sum(prof, &sum))
		return base_err(m->err, STRATA_INVALID_ARGUMENT, "the first phase is no sum of bm25");
	struct topk *q = base_calloc(1, sizeof *q);
	if (!q || (k && !(q->heap = base_alloc(k * sizeof *q->heap)))) {
		base_free(q, sizeof *q);
		return base_nomem(m->err, "top hits");
	}
	q->k = k;
	q->bias = sum.bias;
	q->err = m->err;
	int rc = gather(q, &q->n, m, where, prof, &sum) ? 0 : STRATA_INVALID_ARGUMENT;
	if (rc)
		base_err(m->err, rc, "the where tree is no OR of words");
	for (int i = 0; !rc && i < q->n; i++) {
		q->l[i].ub = -1; /* no block read yet */
		rc = advance(&q->l[i], 0, q->err);
	}
	/* the count, and the lists' bounds; one list: its frequency, and no
	 * bound needed (it is always essential) */
	if (!rc && q->n == 1) {
		*matched = store_postings_df(q->l[0].p);
		q->l[0].u = INFINITY;
	} else if (!rc && (rc = count_all(q, matched)) == 0) {
		for (int i = 0; !rc && i < q->n; i++)
			rc = advance(&q->l[i], 0, q->err);
	}
	/* by bound, weakest first */
	for (int i = 1; i < q->n; i++)
		for (int j = i; j > 0 && q->l[j - 1].u > q->l[j].u; j--) {
			struct tlist t = q->l[j];
			q->l[j] = q->l[j - 1];
			q->l[j - 1] = t;
		}
	for (uint64_t steps = 0; !rc; steps++) {
		if (steps % STOP_EVERY == STOP_EVERY - 1 && (rc = eng_deadline_check(dl, m->err)))
			break;
		rc = step(q);
	}
	if (rc == 2)
		rc = 0;
	if (rc >= 0) {
		compact(q);
		for (size_t i = 0; i < q->ncand && rc >= 0; i++) {
			int krc = keep(ud, q->cand[i].lid);
			if (krc)
				rc = krc;
		}
	}
	topk_free(q);
	return rc;
}
