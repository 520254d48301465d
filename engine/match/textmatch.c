/*
 * textmatch.c: 'contains' on a field with a text index.  Before a document
 * type's matching scan, each such condition's string is tokenized the way
 * the field's values were (so "Running" finds "runs" in a stemmed field)
 * and the posting list of each term is opened in the query's read
 * transaction.  The scan visits local ids in increasing order, so every
 * test is a forward seek in each list.  Several terms make a phrase, as in
 * Vespa: the terms at consecutive positions.  On a match: prefix field each
 * word matches the terms it begins (no phrase).  A string without any term
 * matches nothing.  The same lists give the text rank features while the
 * hits of the type are ranked: bm25 with Vespa's formula (k1 1.2, b 0.75,
 * or the profile's bm25(f).k1 and .b; idf log(1 + (N - n + 0.5) / (n +
 * 0.5)), N the type's documents, n those with the term; the average length
 * over the documents with a value, or bm25(f).averageFieldLength),
 * fieldLength and matches; and elementwise(bm25(f)), bm25 over each
 * element of a collection alone (its length over the average element
 * length, the field's tokens over its elements), which a document's
 * features compute once and keep for the VM's questions element by element.
 */
#include <math.h>
#include <string.h>

#include "../engine_int.h"

#define MAX_TERMS 32    /* words of one contains */
#define MAX_LISTS 1024  /* posting lists of one contains (prefix expansions) */
#define MAX_POS 4096

struct eng_text {
	int nterms;            /* posting lists */
	int nwords;            /* query words: pl[i] is for word grp[i] */
	int prefix;            /* match: prefix: each word's lists are the terms it begins */
	struct store_postings *pl[MAX_LISTS];
	short grp[MAX_LISTS];
	double ndocs;    /* documents of the type (bm25's N) */
	double avgdl;    /* average length of the field where it has a value */
	double avgel;    /* average length of its elements (of a string: avgdl) */
	/* The term's occurrences and the field's length in documents read
	 * already (a weakAnd's matches, wand.c): lids increasing, tf 0 where
	 * it is absent. */
	struct memo {
		uint32_t lid, tf, dl;
	} *memo;
	size_t nmemo, memo_cap;
};

static void text_free(struct eng_text *t)
{
	base_free(t->memo, t->memo_cap * sizeof *t->memo);
	for (int i = 0; i < t->nterms; i++)
		store_postings_close(t->pl[i]);
	base_free(t, sizeof *t);
}

#define MAX_CONDS 64
#define LEN_MEMO 4 /* fields whose lengths are remembered */

struct eng_textset {
	int n;
	const struct yql_node *node[MAX_CONDS];
	struct eng_text *t[MAX_CONDS];
	int first[MAX_CONDS];  /* the query term number of each one's first word */
	int nterms;            /* the query's terms (rank_term_feature) */
	double *sig;           /* nterms: each term's significance */
	/* the field lengths read last: the features of a document read each once */
	struct {
		int field;         /* -1: none */
		uint32_t lid, len;
		int has;
	} len[LEN_MEMO];
	/* elementwise(bm25(field)) of lid: the elements holding a term,
	 * increasing, with their scores */
	struct {
		int field;         /* -1: none */
		uint32_t lid, n;
		size_t cap;
		struct ew_cell {
			uint32_t elem;
			double score;
		} *c;
	} ew;
};

/* Where store_text_terms puts what it finds (and open_one one word). */
struct expand {
	struct store_txn *txn;
	const struct eng_doctype *dt;
	const struct yql_node *n;
	struct eng_text *t;
	struct strata_error *err;
};

static int add_list(void *ud, const char *term, size_t len)
{
	struct expand *x = ud;
	struct eng_text *t = x->t;
	if (t->nterms == MAX_LISTS)
		return base_err(x->err, STRATA_LIMIT, "yql:1:%d: a prefix that begins more than %d terms",
		                x->n->col, MAX_LISTS);
	int rc = store_postings_open(x->txn, x->dt->store_id, x->n->fidx, term, len, &t->pl[t->nterms],
	                             x->err);
	if (!rc)
		t->grp[t->nterms++] = (short)t->nwords;
	return rc;
}

static int open_one(struct store_txn *txn, const struct eng_doctype *dt, const struct yql_node *n,
                    struct base_tokenizer *tk, struct eng_text **out, struct strata_error *err)
{
	int flags = STORE_TEXT_TOKEN_FLAGS(dt->fields[n->fidx].text);
	if (n->term.no_stem) /* {stem: false}: the word as written */
		flags &= ~BASE_TOKEN_STEM;
	struct eng_text *t = base_calloc(1, sizeof *t);
	if (!t)
		return base_nomem(err, "a text condition");
	size_t off = 0, tn, len = strlen(n->str);
	const char *tok;
	int pos, rc = 0;
	t->prefix = rank_schema_field(dt->schema, n->fidx)->match == RANK_MATCH_PREFIX ||
	            n->term.prefix;
	while (base_token_next(tk, n->str, len, &off, flags, &tok, &tn, &pos) > 0) {
		if (t->nwords == MAX_TERMS) {
			rc = base_err(err, STRATA_LIMIT, "yql:1:%d: more than %d words in one 'contains'",
			              n->col, MAX_TERMS);
			break;
		}
		struct expand x = {txn, dt, n, t, err};
		if (t->prefix)
			rc = store_text_terms(txn, dt->store_id, n->fidx, tok, tn, add_list, &x, err);
		else
			rc = add_list(&x, tok, tn);
		if (rc)
			break;
		t->nwords++;
	}
	uint64_t docs, tokens, elems = 0;
	if (!rc && (rc = store_text_stats(txn, dt->store_id, n->fidx, &docs, &tokens, err)) == 0 &&
	    (rc = store_text_element_total(txn, dt->store_id, n->fidx, &elems, err)) == 0) {
		t->ndocs = (double)store_count(txn, dt->store_id);
		t->avgdl = docs ? (double)tokens / (double)docs : 0;
		t->avgel = elems ? (double)tokens / (double)elems : 0;
	}
	if (rc) {
		text_free(t);
		return rc;
	}
	*out = t;
	return 0;
}

/* yql_each: one 'contains' of the set. */
struct opening {
	struct store_txn *txn;
	const struct eng_doctype *dt;
	struct base_tokenizer *tk;
	struct eng_textset *s;
	struct strata_error *err;
};

static int open_node(void *ud, const struct yql_node *n)
{
	struct opening *o = ud;
	struct eng_textset *s = o->s;
	if (n->fidx < 0 || !o->dt->fields[n->fidx].text)
		return 0;
	if (s->n == MAX_CONDS)
		return base_err(o->err, STRATA_LIMIT, "yql:1:%d: more than %d text conditions", n->col,
		                MAX_CONDS);
	int rc = open_one(o->txn, o->dt, n, o->tk, &s->t[s->n], o->err);
	if (!rc)
		s->node[s->n++] = n;
	return rc;
}

#define SIGNIFICANCE_N 1e6    /* the corpus Vespa's fallback significance scales to */

/* Condition k's posting lists of word w: [*from, *to). */
static void word_lists(const struct eng_text *t, int w, int *from, int *to)
{
	if (!t->prefix) {
		*from = w;
		*to = w + 1;
		return;
	}
	*from = 0;
	while (*from < t->nterms && t->grp[*from] != w)
		(*from)++;
	*to = *from;
	while (*to < t->nterms && t->grp[*to] == w)
		(*to)++;
}

/* Vespa's fallback significance of a term in df of ndocs documents: its
 * idf over a corpus scaled to SIGNIFICANCE_N documents, normalized to
 * [0.5, 1]. */
static double significance(double df, double ndocs)
{
	if (ndocs <= 0)
		return 0.5;
	double f = df * SIGNIFICANCE_N / ndocs;
	f = f < 1 ? 1 : f > SIGNIFICANCE_N ? SIGNIFICANCE_N : f;
	return 0.5 + 0.5 * (log(SIGNIFICANCE_N) - log(f)) / log(SIGNIFICANCE_N);
}

/* The posting lists [*from, *to) of query term `term` of s in s->t[k]:
 * 0 when that condition does not hold the term. */
static int term_lists(const struct eng_textset *s, int k, int term, int *from, int *to)
{
	int w = term - s->first[k];
	if (w < 0 || w >= s->t[k]->nwords)
		return 0;
	word_lists(s->t[k], w, from, to);
	return 1;
}

/* The significance of query term `term` of s: of its most frequent list on
 * any field. */
static double term_significance(const struct eng_textset *s, int term)
{
	double best = 0;
	for (int k = 0; k < s->n; k++) {
		const struct eng_text *t = s->t[k];
		int from, to;
		if (!term_lists(s, k, term, &from, &to))
			continue;
		for (int i = from; i < to; i++) {
			double df = (double)store_postings_df(t->pl[i]);
			best = df > best ? df : best;
		}
	}
	return significance(best, s->t[0]->ndocs);
}

int eng_text_open(struct store_txn *txn, const struct eng_doctype *dt,
                  const struct yql_node *where, struct eng_textset **out,
                  struct strata_error *err)
{
	*out = NULL;
	if (!where)
		return 0;
	struct eng_textset *s = base_calloc(1, sizeof *s);
	if (!s)
		return base_nomem(err, "text conditions");
	struct base_tokenizer *tk;
	int rc = base_tokenizer_new(&tk, err);
	if (!rc) {
		struct opening o = {txn, dt, tk, s, err};
		rc = yql_each(where, YQL_CONTAINS, open_node, &o);
		base_tokenizer_free(tk);
	}
	if (rc || !s->n) {
		eng_text_close(s);
		return rc;
	}
	for (int i = 0; i < LEN_MEMO; i++)
		s->len[i].field = -1;
	s->ew.field = -1;
	/* A fieldset's condition became one per field, all with the same
	 * string: its words are one set of terms. */
	for (int k = 0; k < s->n; k++) {
		int j = 0;
		while (j < k && s->node[j]->str != s->node[k]->str)
			j++;
		s->first[k] = j < k ? s->first[j] : s->nterms;
		if (j == k)
			s->nterms += s->t[k]->nwords;
	}
	/* the terms' significances, constants of the query */
	if (s->nterms && !(s->sig = base_alloc((size_t)s->nterms * sizeof *s->sig))) {
		eng_text_close(s);
		return base_nomem(err, "text conditions");
	}
	for (int term = 0; term < s->nterms; term++)
		s->sig[term] = term_significance(s, term);
	*out = s;
	return 0;
}

void eng_text_close(struct eng_textset *s)
{
	if (!s)
		return;
	for (int i = 0; i < s->n; i++)
		text_free(s->t[i]);
	base_free(s->ew.c, s->ew.cap * sizeof *s->ew.c);
	base_free(s->sig, (size_t)s->nterms * sizeof *s->sig);
	base_free(s, sizeof *s);
}

const struct eng_text *eng_text_of(const struct eng_textset *s, const struct yql_node *n)
{
	for (int i = 0; s && i < s->n; i++)
		if (s->node[i] == n)
			return s->t[i];
	return NULL;
}

int eng_text_single(const struct eng_text *t, struct store_postings **p)
{
	*p = t->nterms == 1 ? t->pl[0] : NULL;
	return t->prefix ? -1 : t->nwords;
}

uint32_t eng_phrase_starts(struct store_postings *const *pl, int n, uint32_t cap,
                           uint32_t *starts, uint32_t max)
{
	static _Thread_local uint32_t pos[MAX_TERMS][MAX_POS];
	uint32_t np[MAX_TERMS], ns = 0;
	BASE_DEBUG_ASSERT(n <= MAX_TERMS && cap <= MAX_POS);
	for (int i = 0; i < n; i++) {
		np[i] = store_postings_positions(pl[i], pos[i], cap);
		if (np[i] > cap)
			np[i] = cap;
	}
	uint32_t at[MAX_TERMS] = {0};
	for (uint32_t k = 0; n && k < np[0] && ns < max; k++) {
		uint32_t p = pos[0][k];
		int i;
		for (i = 1; i < n; i++) {
			while (at[i] < np[i] && pos[i][at[i]] < p + (uint32_t)i)
				at[i]++;
			if (at[i] == np[i])
				return ns; /* term i occurs no later: no phrase starts after p */
			if (pos[i][at[i]] != p + (uint32_t)i)
				break;
		}
		if (i == n)
			starts[ns++] = p;
	}
	return ns;
}

/* Whether the terms follow one another somewhere: term i at p + i. */
static int phrase_at(const struct eng_text *t)
{
	uint32_t p;
	return eng_phrase_starts(t->pl, t->nterms, MAX_POS, &p, 1) > 0;
}

int eng_text_match(const struct eng_text *t, uint32_t lid)
{
	if (!t->nterms || t->nterms < t->nwords)
		return 0;
	if (t->prefix) { /* each word: one of its terms */
		int word = -1;
		for (int i = 0; i < t->nterms; i++) {
			if (t->grp[i] == word)
				continue;
			if (t->grp[i] != word + 1)
				return 0; /* word + 1 has no term in lid */
			uint32_t at = lid;
			if (store_postings_seek(t->pl[i], &at) == 0 && at == lid)
				word = t->grp[i];
		}
		return word == t->nwords - 1;
	}
	for (int i = 0; i < t->nterms; i++) {
		uint32_t at = lid;
		if (store_postings_seek(t->pl[i], &at) != 0 || at != lid)
			return 0;
	}
	return t->nterms == 1 || phrase_at(t);
}

int eng_text_memo(struct eng_text *t, uint32_t lid, uint32_t tf, uint32_t dl,
                  struct strata_error *err)
{
	if (base_grow((void **)&t->memo, &t->memo_cap, t->nmemo + 1, sizeof *t->memo,
	              SIZE_MAX / sizeof *t->memo) != 0)
		return base_nomem(err, "weakAnd matches");
	BASE_DEBUG_ASSERT(!t->nmemo || t->memo[t->nmemo - 1].lid < lid);
	t->memo[t->nmemo++] = (struct memo){lid, tf, dl};
	return 0;
}

size_t eng_lid_find(const uint32_t *v, size_t n, uint32_t lid)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (v[mid] < lid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && v[lo] == lid ? lo : n;
}

/* What t remembers of lid (its one term's occurrences and the field's
 * length), or NULL. */
static const struct memo *memo_of(const struct eng_text *t, uint32_t lid)
{
	size_t lo = 0, hi = t->nmemo;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->memo[mid].lid < lid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < t->nmemo && t->memo[lo].lid == lid ? &t->memo[lo] : NULL;
}

double eng_bm25_idf(double ndocs, double df)
{
	return log(1 + (ndocs - df + 0.5) / (df + 0.5));
}

double eng_bm25(double idf, double tf, double dl, double avgdl, const struct rank_bm25 *bm)
{
	double norm = avgdl > 0 ? dl / avgdl : 1;
	return idf * tf * (bm->k1 + 1) / (tf + bm->k1 * (1 - bm->b + bm->b * norm));
}

double eng_text_avgdl(const struct eng_text *t, const struct rank_bm25 *bm)
{
	return bm->avgdl > 0 ? bm->avgdl : t->avgdl;
}

double eng_text_ndocs(const struct eng_text *t)
{
	return t->ndocs;
}

/* bm25 of term i of t for a document of length dl holding it tf times,
 * with the profile's k1, b and average length (bm; the index's average
 * without). */
static double bm25_term(const struct eng_text *t, int i, double tf, double dl,
                        const struct rank_bm25 *bm)
{
	double idf = eng_bm25_idf(t->ndocs, (double)store_postings_df(t->pl[i]));
	return eng_bm25(idf, tf, dl, eng_text_avgdl(t, bm), bm);
}

json_t *eng_tokens_json(const struct store_field *f, const struct store_value *v,
                        struct strata_error *err)
{
	struct base_tokenizer *tk;
	if (base_tokenizer_new(&tk, err))
		return NULL;
	json_t *a = json_array();
	const char *tok;
	size_t off = 0, n;
	int pos;
	int flags = STORE_TEXT_TOKEN_FLAGS(f->text);
	while (a && v->s && base_token_next(tk, v->s, v->n, &off, flags, &tok, &n, &pos) > 0)
		if (json_array_append_new(a, json_stringn(tok, n))) {
			json_decref(a);
			a = NULL;
		}
	base_tokenizer_free(tk);
	if (!a)
		base_nomem(err, "tokens");
	return a;
}

/* nativeFieldMatch's default tables, 256 entries each as in Vespa:
 * firstOccurrenceTable expdecay(8000,12.50) over the token position and
 * occurrenceCountTable loggrowth(1500,4000,19) over the occurrences, mixed
 * by firstOccurrenceImportance 0.5 and divided by the largest mix. */
#define NATIVE_TABLE 256
#define NATIVE_FIRST_OCC_IMPORTANCE 0.5

static double native_first_occ(uint32_t pos)
{
	if (pos >= NATIVE_TABLE)
		pos = NATIVE_TABLE - 1;
	return 8000 * exp(-(double)pos / 12.5);
}

static double native_occ_count(uint32_t n)
{
	if (n >= NATIVE_TABLE)
		n = NATIVE_TABLE - 1;
	return 1500 + 4000 * log(1 + n / 19.0);
}

static double native_term(uint32_t first, uint32_t n)
{
	double w = NATIVE_FIRST_OCC_IMPORTANCE;
	double max = w * native_first_occ(0) + (1 - w) * native_occ_count(NATIVE_TABLE - 1);
	return (w * native_first_occ(first) + (1 - w) * native_occ_count(n)) / max;
}

/* The nativeFieldMatch score of word (a term, or a prefix's expansions: the
 * best of them) of t for lid. */
static double native_word(const struct eng_text *t, int *i, uint32_t lid)
{
	int word = t->prefix ? t->grp[*i] : *i;
	double best = 0;
	for (; *i < t->nterms && (t->prefix ? t->grp[*i] : *i) == word; (*i)++) {
		uint32_t at = lid, first = 0;
		if (store_postings_seek(t->pl[*i], &at) != 0 || at != lid)
			continue;
		uint32_t n = store_postings_positions(t->pl[*i], &first, 1);
		double v = n ? native_term(first, n) : 0;
		if (v > best)
			best = v;
	}
	return best;
}

/* The weight of condition n's words: {weight: N}, Vespa's 100 without. */
static int cond_weight(const struct yql_node *n)
{
	return n->term.weight > 0 ? n->term.weight : n->term.weight < 0 ? 0 : 100;
}

/* What word w of condition k weighs in nativeFieldMatch, as in Vespa: its
 * significance times its weight. */
static double native_weight(const struct eng_textset *s, int k, int w)
{
	return cond_weight(s->node[k]) * s->sig[s->first[k] + w];
}

int eng_text_length(struct store_txn *txn, const struct eng_doctype *dt, struct eng_textset *s,
                    int field, uint32_t lid, uint32_t *len)
{
	int slot = (field % LEN_MEMO + LEN_MEMO) % LEN_MEMO;
	if (s && s->len[slot].field == field && s->len[slot].lid == lid) {
		*len = s->len[slot].len;
		return s->len[slot].has;
	}
	*len = 0;
	int has = store_text_length(txn, dt->store_id, field, lid, len, NULL) == 0;
	if (!has)
		*len = 0;
	if (s) {
		s->len[slot].field = field;
		s->len[slot].lid = lid;
		s->len[slot].len = *len;
		s->len[slot].has = has;
	}
	return has;
}

double eng_text_feature(struct store_txn *txn, const struct eng_doctype *dt,
                        const struct rank_profile *prof, struct eng_textset *s, int feature,
                        int field, uint32_t lid)
{
	uint32_t len = 0;
	int has = -1; /* lid's length read: on first use, as the terms do not need it */
	if (feature == RANK_TF_FIELD_LENGTH)
		return eng_text_length(txn, dt, s, field, lid, &len) ? len : 0;
	double sum = 0;
	struct rank_bm25 bm;
	rank_profile_bm25(prof, field, &bm);
	for (int k = 0; s && k < s->n; k++) {
		const struct eng_text *t = s->t[k];
		if (s->node[k]->fidx != field || s->node[k]->term.unranked)
			continue;
		if (feature == RANK_TF_NATIVE_TERMS) {
			for (int w = 0; w < t->nwords; w++)
				sum += native_weight(s, k, w);
			continue;
		}
		if (feature == RANK_TF_NATIVE_SUM) {
			if (has < 0)
				has = eng_text_length(txn, dt, s, field, lid, &len);
			if (!has)
				break;
			for (int i = 0; i < t->nterms;) {
				double wt = native_weight(s, k, t->grp[i]);
				sum += wt * native_word(t, &i, lid);
			}
			continue;
		}
		const struct memo *known = t->nterms == 1 ? memo_of(t, lid) : NULL;
		if (known) { /* read by weakAnd already */
			if (known->tf && feature == RANK_TF_MATCHES)
				return 1;
			if (known->tf)
				sum += bm25_term(t, 0, known->tf, known->dl, &bm);
			continue;
		}
		/* the field's length is the posting's: no value, no posting */
		for (int i = 0; i < t->nterms; i++) {
			uint32_t at = lid;
			if (store_postings_seek(t->pl[i], &at) != 0 || at != lid)
				continue;
			if (feature == RANK_TF_MATCHES)
				return 1;
			sum += bm25_term(t, i, store_postings_tf(t->pl[i]), store_postings_dl(t->pl[i]),
			                 &bm);
		}
	}
	return sum;
}

/* ---- elementwise(bm25(f)) ------------------------------------------------------ */

#define EW_MAX_ELEMS (1u << 24) /* elements of one document the feature scores */

/* Where element e is or goes in the set's elementwise list. */
static uint32_t ew_find(const struct eng_textset *s, uint32_t e)
{
	uint32_t lo = 0, hi = s->ew.n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (s->ew.c[mid].elem < e)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Add score to element e of the set's elementwise list (kept increasing). */
static int ew_add(struct eng_textset *s, uint32_t e, double score)
{
	uint32_t at = ew_find(s, e);
	if (at < s->ew.n && s->ew.c[at].elem == e) {
		s->ew.c[at].score += score;
		return 0;
	}
	if (base_grow((void **)&s->ew.c, &s->ew.cap, (size_t)s->ew.n + 1, sizeof *s->ew.c,
	              EW_MAX_ELEMS))
		return STRATA_NOMEM;
	memmove(s->ew.c + at + 1, s->ew.c + at, (s->ew.n - at) * sizeof *s->ew.c);
	s->ew.c[at] = (struct ew_cell){e, score};
	s->ew.n++;
	return 0;
}

/* The elementwise scores of lid on field into the set's list: for each
 * posting list of a condition on field that holds lid, its occurrences
 * grouped by element (positions increase, so elements do), each group
 * scored by bm25 with the element's length. */
static int ew_compute(struct store_txn *txn, const struct eng_doctype *dt,
                      const struct rank_profile *prof, struct eng_textset *s, int field,
                      uint32_t lid)
{
	static _Thread_local uint32_t pos[MAX_POS], el[MAX_POS], len[MAX_POS];
	struct rank_bm25 bm;
	rank_profile_bm25(prof, field, &bm);
	s->ew.field = -1;
	s->ew.n = 0;
	for (int k = 0; k < s->n; k++) {
		const struct eng_text *t = s->t[k];
		if (s->node[k]->fidx != field || s->node[k]->term.unranked)
			continue;
		for (int i = 0; i < t->nterms; i++) {
			uint32_t at = lid;
			if (store_postings_seek(t->pl[i], &at) != 0 || at != lid)
				continue;
			uint32_t c = store_postings_positions(t->pl[i], pos, MAX_POS);
			if (c > MAX_POS)
				c = MAX_POS;
			int rc = store_text_element_spans(txn, dt->store_id, field, lid, pos, c, el, len,
			                                  NULL);
			if (rc)
				return rc;
			double idf = eng_bm25_idf(t->ndocs, (double)store_postings_df(t->pl[i]));
			for (uint32_t a = 0; a < c;) {
				uint32_t b = a + 1;
				while (b < c && el[b] == el[a])
					b++;
				if (el[a] != UINT32_MAX &&
				    (rc = ew_add(s, el[a], eng_bm25(idf, b - a, len[a], t->avgel, &bm))) != 0)
					return rc;
				a = b;
			}
		}
	}
	s->ew.field = field;
	s->ew.lid = lid;
	return 0;
}

double eng_text_elementwise(struct store_txn *txn, const struct eng_doctype *dt,
                            const struct rank_profile *prof, struct eng_textset *s, int field,
                            int elem, uint32_t lid)
{
	if (!s)
		return elem < 0 ? 0 : NAN;
	if ((s->ew.field != field || s->ew.lid != lid) &&
	    ew_compute(txn, dt, prof, s, field, lid) != 0) {
		s->ew.field = -1; /* a read failed or memory ran out: no cells */
		return elem < 0 ? 0 : NAN;
	}
	if (elem < 0)
		return s->ew.n ? (double)s->ew.c[s->ew.n - 1].elem + 1 : 0;
	uint32_t i = ew_find(s, (uint32_t)elem);
	return i < s->ew.n && s->ew.c[i].elem == (uint32_t)elem ? s->ew.c[i].score : NAN;
}

/* ---- query-term features (rank_term_feature) ------------------------------ */

#define NO_POSITION 1000000.0 /* fieldTermMatch's firstPosition when none */

/* Occurrences of term (its lists from..to of t) in lid; the first position. */
static uint32_t occurrences(const struct eng_text *t, int from, int to, uint32_t lid,
                            uint32_t *first)
{
	uint32_t n = 0;
	*first = UINT32_MAX;
	for (int i = from; i < to; i++) {
		uint32_t at = lid, pos = 0;
		if (store_postings_seek(t->pl[i], &at) != 0 || at != lid)
			continue;
		uint32_t c = store_postings_positions(t->pl[i], &pos, 1);
		if (c && pos < *first)
			*first = pos;
		n += c;
	}
	return n;
}

/* The weights of the elements of the occurrences of a term (lists
 * from..to of t) in lid's value of field, summed: 1 each but in a weighted
 * set. */
static double occurrence_weights(struct store_txn *txn, const struct eng_doctype *dt, int field,
                                 const struct eng_text *t, int from, int to, uint32_t lid)
{
	static _Thread_local uint32_t pos[MAX_POS], el[MAX_POS];
	static _Thread_local int32_t w[MAX_POS];
	int wset = (dt->fields[field].text & STORE_TEXT_WSET) != 0;
	double sum = 0;
	for (int i = from; i < to; i++) {
		uint32_t at = lid;
		if (store_postings_seek(t->pl[i], &at) != 0 || at != lid)
			continue;
		uint32_t c = store_postings_positions(t->pl[i], wset ? pos : NULL, wset ? MAX_POS : 0);
		if (!wset) {
			sum += c;
			continue;
		}
		if (c > MAX_POS)
			c = MAX_POS;
		if (store_text_elements(txn, dt->store_id, field, lid, pos, c, el, w, NULL) != 0)
			continue;
		for (uint32_t k = 0; k < c; k++)
			sum += w[k];
	}
	return sum;
}

double eng_text_term(struct store_txn *txn, const struct eng_doctype *dt,
                     const struct eng_textset *s, int feature, int field, int term, uint32_t lid)
{
	/* the set read these constants of the query when it opened */
	if (feature == RANK_TT_NUM_DOCS)
		return s ? s->t[0]->ndocs : (double)store_count(txn, dt->store_id);
	if (feature == RANK_TT_AVG_LENGTH) {
		for (int k = 0; s && k < s->n; k++)
			if (s->node[k]->fidx == field)
				return s->t[k]->avgdl;
		uint64_t docs = 0, tokens = 0;
		if (store_text_stats(txn, dt->store_id, field, &docs, &tokens, NULL) != 0 || !docs)
			return 0;
		return (double)tokens / (double)docs;
	}
	int nterms = s ? s->nterms : 0;
	if (feature == RANK_TT_COUNT)
		return nterms;
	if (feature == RANK_TT_MATCH_COUNT) {
		double n = 0;
		for (int k = 0; s && k < s->n; k++) {
			uint32_t first;
			for (int w = 0; s->node[k]->fidx == field && w < s->t[k]->nwords; w++) {
				int from, to;
				word_lists(s->t[k], w, &from, &to);
				n += occurrences(s->t[k], from, to, lid, &first) > 0;
			}
		}
		return n;
	}
	if (term < 0 || term >= nterms)
		return feature == RANK_TT_FIRST_POSITION ? NO_POSITION
		       : feature == RANK_TT_DOC_FREQ     ? NAN
		                                         : 0;
	if (feature == RANK_TT_WEIGHT) { /* {weight: N} */
		for (int k = 0; k < s->n; k++)
			if (term >= s->first[k] && term < s->first[k] + s->t[k]->nwords)
				return cond_weight(s->node[k]);
		return 100;
	}
	if (feature == RANK_TT_CONNECTEDNESS)
		return 0.1;
	if (feature == RANK_TT_SIGNIFICANCE)
		return s->sig[term];
	double sum = 0, occ = 0, first = NO_POSITION, weights = 0;
	int on_field = 0;
	for (int k = 0; k < s->n; k++) {
		const struct eng_text *t = s->t[k];
		int from, to;
		if (!term_lists(s, k, term, &from, &to))
			continue;
		for (int i = from; i < to; i++)
			sum += (double)store_postings_df(t->pl[i]);
		if (s->node[k]->fidx != field)
			continue;
		on_field = 1;
		uint32_t f;
		occ += occurrences(t, from, to, lid, &f);
		if (feature == RANK_TT_TERM_WEIGHT)
			weights += occurrence_weights(txn, dt, field, t, from, to, lid);
		if (f != UINT32_MAX && f < first)
			first = f;
	}
	switch (feature) {
	case RANK_TT_OCCURRENCES: return occ;
	case RANK_TT_TERM_WEIGHT: return weights;
	case RANK_TT_FIRST_POSITION: return first;
	case RANK_TT_DOC_FREQ: return on_field ? sum : NAN;
	}
	return 0;
}

int eng_text_positions(const struct eng_textset *s, int field, uint32_t lid,
                       struct eng_term_pos *out, int max)
{
	int n = 0;
	for (int k = 0; s && k < s->n; k++) {
		const struct eng_text *t = s->t[k];
		if (s->node[k]->fidx != field || s->node[k]->term.unranked)
			continue; /* a filter term feeds no rank feature */
		for (int w = 0; w < t->nwords && n < max; w++) {
			int from, to;
			word_lists(t, w, &from, &to);
			struct eng_term_pos *tp = &out[n++];
			tp->term = s->first[k] + w;
			tp->n = 0;
			/* the positions of the word's lists (a prefix's expansions
			 * merged), increasing */
			for (int i = from; i < to; i++) {
				uint32_t at = lid, pos[ENG_TERM_POS_MAX];
				if (store_postings_seek(t->pl[i], &at) != 0 || at != lid)
					continue;
				uint32_t c = store_postings_positions(t->pl[i], pos, ENG_TERM_POS_MAX);
				for (uint32_t q = 0; q < c && q < ENG_TERM_POS_MAX; q++) {
					uint32_t m = tp->n;
					while (m > 0 && tp->pos[m - 1] > pos[q])
						m--;
					if (tp->n == ENG_TERM_POS_MAX)
						break;
					memmove(tp->pos + m + 1, tp->pos + m, (tp->n - m) * sizeof *tp->pos);
					tp->pos[m] = pos[q];
					tp->n++;
				}
			}
		}
	}
	return n;
}

/* ---- the contains operator ------------------------------------------------------- */

static int contains_check(const struct eng_doctype *dt, const struct yql_node *n,
                          struct strata_error *err)
{
	if (n->term.prefix && !dt->fields[n->fidx].text && dt->fields[n->fidx].type != STORE_T_STRING)
		return base_err(err, STRATA_NOT_IMPLEMENTED,
		                "yql:1:%d: a prefix ('%s*' or {prefix: true}) on the collection '%s' is "
		                "not supported: only on text and single string fields", n->col, n->str,
		                n->field);
	if (dt->fields[n->fidx].type == STORE_T_STRING ||
	    eng_cvalue_holds_strings(rank_schema_field(dt->schema, n->fidx)))
		return 0;
	return base_err(err, STRATA_INVALID_ARGUMENT,
	                "yql:1:%d: 'contains' needs a string field, or an array or weightedset "
	                "of strings; '%s' is not one", n->col, n->field);
}

static int contains_match(struct eng_match *m, const struct yql_node *n, uint32_t lid)
{
	const struct eng_text *t = eng_text_of(m->text, n);
	return t ? eng_text_match(t, lid) : eng_value_contains(m, n, lid);
}

/* On a text index: the documents of every word's lists (of any of a
 * prefix word's expansions); a phrase's positions are tested after. */
static int contains_open(struct eng_match *m, const struct yql_node *n, struct eng_iter **out)
{
	const struct eng_text *t = eng_text_of(m->text, n);
	*out = NULL;
	if (!t) /* a fast-search string attribute (a prefix is tested per document) */
		return n->term.prefix ? 0 : eng_value_open(m, n, out);
	if (!t->nterms || t->nterms < t->nwords)
		return eng_iter_give(m, eng_iter_array(NULL, 0, NULL, 0), out);
	if (!t->prefix)
		return eng_iter_give(m, eng_iter_postings(t->pl, t->nterms, 0), out);
	struct eng_iter *words[MAX_TERMS];
	for (int w = 0; w < t->nwords; w++) { /* a word without terms gives none */
		int from, to;
		word_lists(t, w, &from, &to);
		if (!(words[w] = eng_iter_postings(t->pl + from, to - from, 1))) {
			while (w)
				eng_iter_close(words[--w]);
			return base_nomem(m->err, "an iterator");
		}
	}
	return eng_iter_give(m, eng_iter_and(words, t->nwords), out);
}

const struct eng_op eng_op_contains = { "contains", 0, contains_check, contains_match,
                                        contains_open };
