/*
 * fieldmatch.c: Vespa's fieldMatch(f) rank feature (its string segment
 * match metrics) for one document, from the positions of the query's terms
 * on the text-indexed field f.  The query's terms on f are followed in
 * query order: a term found within proximityLimit (10) tokens after the
 * previous one, or before it, continues the segment (a pair, scored by
 * Vespa's default proximity table); otherwise a new segment starts at the
 * term's next occurrence to the right (else its nearest to the left).
 * Of the segmentations that begin at each occurrence of the first term the
 * field has, the best by Vespa's score (absoluteProximity / segments^2) is
 * kept.  Vespa also explores other start points for the later segments:
 * the two agree when the segments after the first are found where they
 * first occur (always when each term occurs once).  The metrics and the match score are Vespa's, with
 * its default parameters; every term has weight 100 and connectedness 0.1,
 * and the significance of term(n).significance.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../engine_int.h"

#define MAX_TERMS 64
#define PROXIMITY_LIMIT 10
#define MAX_OCCURRENCES 100
#define PROXIMITY_COMPLETENESS_IMPORTANCE 0.9
#define RELATEDNESS_IMPORTANCE 0.9
#define EARLINESS_IMPORTANCE 0.05
#define SEGMENT_PROXIMITY_IMPORTANCE 0.05
#define OCCURRENCE_IMPORTANCE 0.05
#define FIELD_COMPLETENESS_IMPORTANCE 0.05
#define CONNECTEDNESS 0.1

/* Vespa's default proximity table: distances -10..10 between a term and
 * the previous one (0: adjacent, in order). */
static const double proximity_table[2 * PROXIMITY_LIMIT + 1] = {
	0.01, 0.02, 0.03, 0.04, 0.06, 0.08, 0.12, 0.17, 0.24, 0.33, 1,
	0.71, 0.50, 0.35, 0.25, 0.18, 0.13, 0.09, 0.06, 0.04, 0.03,
};

struct metrics {
	uint32_t field_length, query_length;
	int matches, segments, gaps, gap_length, out_of_order, pairs;
	int longest, current, head, tail;
	double proximity, unweighted;
	double segment_distance, occurrence, absolute_occurrence;
	double weight, significance;     /* of the terms matched, relative to the query's */
	double weighted_occurrence, significant_occurrence;
	uint32_t starts[MAX_TERMS];
};

/* Each term's share of the query's weight (all weigh 100) and significance. */
static _Thread_local double term_weight[MAX_TERMS], term_significance[MAX_TERMS];

static void on_match(struct metrics *m, int i)
{
	if ((uint32_t)m->matches >= m->field_length)
		return;
	m->matches++;
	m->weight += term_weight[i];
	m->significance += term_significance[i];
}

static void sequence_start(struct metrics *m, uint32_t j)
{
	if (m->head < 0 || (int)j < m->head)
		m->head = (int)j;
	m->current = 1;
}

static void sequence_end(struct metrics *m, uint32_t j)
{
	int tail = (int)m->field_length - (int)j - 1;
	if (m->tail < 0 || tail < m->tail)
		m->tail = tail;
	if (m->current > m->longest)
		m->longest = m->current;
	m->current = 0;
}

static void new_segment(struct metrics *m, int i, uint32_t j)
{
	m->starts[m->segments++] = j;
	sequence_start(m, j);
	on_match(m, i);
}

/* Term at j after the previous one at prev, in the same segment. */
static void in_segment(struct metrics *m, int i, uint32_t j, uint32_t prev)
{
	int d = (int)j - (int)prev - 1;
	if (d < 0)
		d++; /* two terms at one position are not a gap */
	if (d >= -PROXIMITY_LIMIT && d <= PROXIMITY_LIMIT) {
		double p = proximity_table[d + PROXIMITY_LIMIT];
		m->unweighted += p;
		m->proximity += pow(p, CONNECTEDNESS / 0.1) * CONNECTEDNESS;
		m->pairs++;
	}
	if (j == prev + 1) {
		m->current++;
	} else {
		m->gaps++;
		if (j > prev) {
			m->gap_length += (int)(j - prev) - 1;
		} else {
			m->out_of_order++;
			m->gap_length += (int)(prev - j);
		}
		sequence_end(m, prev);
		sequence_start(m, j);
	}
	on_match(m, i);
}

/* The occurrence of term t nearest after j within limit (any when limit
 * < 0), else nearest before it within limit; 0 when none, 1 with *at. */
static int next_at(const struct eng_term_pos *t, uint32_t j, int limit, uint32_t *at)
{
	for (uint32_t k = 0; k < t->n; k++)
		if (t->pos[k] > j && (limit < 0 || t->pos[k] - j <= (uint32_t)limit)) {
			*at = t->pos[k];
			return 1;
		}
	for (uint32_t k = t->n; k-- > 0;)
		if (t->pos[k] < j && (limit < 0 || j - t->pos[k] <= (uint32_t)limit)) {
			*at = t->pos[k];
			return 1;
		}
	return 0;
}

/* The segmentation that starts at occurrence `first` of term k, the first
 * the field has. */
static void segment_from(struct metrics *m, const struct eng_term_pos *t, int n, int k,
                         uint32_t first)
{
	uint32_t j = t[k].pos[first], at;
	new_segment(m, k, j);
	for (int i = k + 1; i < n; i++) {
		if (!t[i].n)
			continue; /* a term the field lacks is skipped */
		at = t[i].pos[0]; /* where it is only at j itself */
		if (next_at(&t[i], j, PROXIMITY_LIMIT, &at)) {
			in_segment(m, i, at, j);
		} else {
			next_at(&t[i], j, -1, &at);
			sequence_end(m, j);
			new_segment(m, i, at);
		}
		j = at;
	}
	sequence_end(m, j);
}

/* Vespa's score of a segmentation: absoluteProximity / segments^2. */
static double score(const struct metrics *m)
{
	double abs_prox = m->pairs < 1 ? 0.1 : m->proximity / m->pairs;
	return m->segments ? abs_prox / ((double)m->segments * m->segments) : 0;
}

/* The best of the segmentations from each occurrence of the first term the
 * field has (the earliest among equals). */
static void segment(struct metrics *m, const struct eng_term_pos *t, int n)
{
	int k = 0;
	while (k < n && !t[k].n)
		k++;
	if (k == n)
		return;
	struct metrics best = *m, cur;
	for (uint32_t o = 0; o < t[k].n; o++) {
		cur = *m;
		segment_from(&cur, t, n, k, o);
		if (o == 0 || score(&cur) > score(&best))
			best = cur;
	}
	*m = best;
}

/* Vespa's occurrence metrics over the terms with distinct first positions. */
static void occurrences(struct metrics *m, const struct eng_term_pos *t, int n)
{
	int unique = 0;
	for (int i = 0; i < n; i++) {
		int seen = 0;
		for (int k = 0; k < i; k++)
			seen |= t[k].n && t[i].n && t[k].pos[0] == t[i].pos[0];
		unique += t[i].n && !seen;
	}
	uint32_t divider = m->field_length < (uint32_t)(MAX_OCCURRENCES * unique)
	                           ? m->field_length
	                           : (uint32_t)(MAX_OCCURRENCES * unique);
	double max_occ = m->field_length < MAX_OCCURRENCES ? m->field_length : MAX_OCCURRENCES;
	double wsum = 0, wmax = 0, ssum = 0, smax = 0;
	for (int i = 0; i < n && divider; i++) {
		int seen = 0;
		for (int k = 0; k < i; k++)
			seen |= t[k].n && t[i].n && t[k].pos[0] == t[i].pos[0];
		if (!t[i].n || seen)
			continue;
		double occ = t[i].n < MAX_OCCURRENCES ? t[i].n : MAX_OCCURRENCES;
		m->occurrence += occ / divider;
		m->absolute_occurrence += occ / ((double)MAX_OCCURRENCES * unique);
		wsum += occ * 100, wmax += max_occ * 100;
		ssum += occ * term_significance[i], smax += max_occ * term_significance[i];
	}
	m->weighted_occurrence = wmax > 0 ? wsum / wmax : 0;
	m->significant_occurrence = smax > 0 ? ssum / smax : 0;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

double eng_field_match(struct store_txn *txn, const struct eng_doctype *dt,
                       struct eng_textset *s, int field, uint32_t lid, int output)
{
	static _Thread_local struct eng_term_pos t[MAX_TERMS];
	struct metrics m = { .longest = 1, .head = -1, .tail = -1 };
	int n = eng_text_positions(s, field, lid, t, MAX_TERMS);
	eng_text_length(txn, dt, s, field, lid, &m.field_length);
	m.query_length = (uint32_t)n;
	/* weights (all 100) and significances relative to the whole query's */
	int nq = (int)eng_text_term(txn, dt, s, RANK_TT_COUNT, -1, -1, lid);
	double total = 0;
	for (int q = 0; q < nq; q++)
		total += eng_text_term(txn, dt, s, RANK_TT_SIGNIFICANCE, -1, q, lid);
	for (int i = 0; i < n; i++) {
		term_weight[i] = nq ? 1.0 / nq : 0;
		term_significance[i] =
			total > 0 ? eng_text_term(txn, dt, s, RANK_TT_SIGNIFICANCE, -1, t[i].term, lid) / total
			          : 0;
	}
	segment(&m, t, n);
	occurrences(&m, t, n);
	if (m.segments > 1) {
		qsort(m.starts, (size_t)m.segments, sizeof *m.starts, cmp_u32);
		for (int i = 1; i < m.segments; i++)
			m.segment_distance += m.starts[i] - m.starts[i - 1] + 1;
	}
	if (m.head < 0)
		m.head = 0;
	if (m.tail < 0)
		m.tail = 0;
	double fl = m.field_length, qc = n ? (double)m.matches / n : 0;
	double fc = fl ? m.matches / fl : 0;
	double completeness = qc * (1 - FIELD_COMPLETENESS_IMPORTANCE) +
	                      FIELD_COMPLETENESS_IMPORTANCE * fc;
	double abs_prox = m.pairs < 1 ? 0.1 : m.proximity / m.pairs;
	double proximity = abs_prox / CONNECTEDNESS; /* every term: connectedness 0.1 */
	double relatedness = m.matches == 0 ? 0 : m.matches == 1 ? 1
	                     : 1 - (double)(m.segments - 1) / (m.matches - 1);
	double earliness = m.matches == 0 ? 0 : m.field_length == 1 ? 1
	                   : 1 - m.head / ((fl > 6 ? fl : 6) - 1);
	double seg_prox = !fl || !m.matches ? 0 : 1 - m.segment_distance / fl;
	switch (output) {
	case RANK_FM_MATCH: {
		double rel = 1 - RELATEDNESS_IMPORTANCE + RELATEDNESS_IMPORTANCE * relatedness;
		return (PROXIMITY_COMPLETENESS_IMPORTANCE * rel * proximity * completeness * completeness +
		        EARLINESS_IMPORTANCE * earliness + SEGMENT_PROXIMITY_IMPORTANCE * seg_prox +
		        OCCURRENCE_IMPORTANCE * m.occurrence) /
		       (PROXIMITY_COMPLETENESS_IMPORTANCE + EARLINESS_IMPORTANCE +
		        SEGMENT_PROXIMITY_IMPORTANCE + OCCURRENCE_IMPORTANCE);
	}
	case RANK_FM_PROXIMITY: return proximity;
	case RANK_FM_COMPLETENESS: return completeness;
	case RANK_FM_QUERY_COMPLETENESS: return qc;
	case RANK_FM_FIELD_COMPLETENESS: return fc;
	case RANK_FM_ORDERNESS: return m.pairs < 1 ? 1 : 1 - (double)m.out_of_order / m.pairs;
	case RANK_FM_RELATEDNESS: return relatedness;
	case RANK_FM_EARLINESS: return earliness;
	case RANK_FM_LONGEST_SEQUENCE_RATIO:
		return m.matches ? (double)m.longest / m.matches : 0;
	case RANK_FM_SEGMENT_PROXIMITY: return seg_prox;
	case RANK_FM_UNWEIGHTED_PROXIMITY: return m.pairs < 1 ? 1 : m.unweighted / m.pairs;
	case RANK_FM_ABSOLUTE_PROXIMITY: return abs_prox;
	case RANK_FM_OCCURRENCE: return m.occurrence;
	case RANK_FM_ABSOLUTE_OCCURRENCE: return m.absolute_occurrence;
	case RANK_FM_SEGMENTS: return m.segments;
	case RANK_FM_MATCHES: return m.matches;
	case RANK_FM_DEGRADED_MATCHES: return 0;
	case RANK_FM_OUT_OF_ORDER: return m.out_of_order;
	case RANK_FM_GAPS: return m.gaps;
	case RANK_FM_GAP_LENGTH: return m.gap_length;
	case RANK_FM_LONGEST_SEQUENCE: return m.longest;
	case RANK_FM_HEAD: return m.head;
	case RANK_FM_TAIL: return m.tail;
	case RANK_FM_SEGMENT_DISTANCE: return m.segment_distance;
	case RANK_FM_WEIGHT: return m.weight;
	case RANK_FM_SIGNIFICANCE: return m.significance;
	case RANK_FM_IMPORTANCE: return (m.weight + m.significance) / 2;
	case RANK_FM_WEIGHTED_OCCURRENCE: return m.weighted_occurrence;
	case RANK_FM_WEIGHTED_ABSOLUTE_OCCURRENCE: return m.absolute_occurrence;
	case RANK_FM_SIGNIFICANT_OCCURRENCE: return m.significant_occurrence;
	}
	return 0;
}

/* nativeProximity's default tables: expdecay(500,3) forward, expdecay(400,3)
 * reverse, 256 entries, mixed half and half (proximityImportance 0.5) and
 * normalized by the largest mix; pairs within a sliding window of 4 terms,
 * weighted by their connectedness (0.1, over the distance in the query for
 * terms not adjacent there).  In a collection, as in Vespa, occurrences
 * pair within an element, and across two adjacent ones only when the
 * profile gives the field an element gap. */
#define NATIVE_WINDOW 4
#define NATIVE_TABLE 256

static double native_table(double scale, int64_t dist)
{
	return dist >= 1 && dist <= NATIVE_TABLE ? scale * exp(-(double)(dist - 1) / 3) : 0;
}

/* The elements of the positions of the n terms of t in lid's value of a
 * collection field (el[i][k] for t[i].pos[k]): 0 when they are read. */
static int term_elements(struct store_txn *txn, const struct eng_doctype *dt, int field,
                         uint32_t lid, const struct eng_term_pos *t, int n,
                         uint32_t (*el)[ENG_TERM_POS_MAX])
{
	static _Thread_local int32_t w[ENG_TERM_POS_MAX];
	for (int i = 0; i < n; i++)
		if (t[i].n && store_text_elements(txn, dt->store_id, field, lid, t[i].pos, t[i].n, el[i],
		                                  w, NULL) != 0)
			return -1;
	return 0;
}

/* The distance from an occurrence at position a (in element ea) to one
 * at b (in eb) after it, as Vespa measures it: within an element, b - a;
 * from an element to the next, the positions between them counted as gap
 * (b - a - 1 + gap: the store leaves one unused position between elements);
 * else, or with gap -1 (infinity), none (INT64_MAX). */
static int64_t forward(uint32_t a, uint32_t ea, uint32_t b, uint32_t eb, int gap)
{
	if (b <= a || ea == UINT32_MAX || eb == UINT32_MAX)
		return INT64_MAX;
	if (ea == eb)
		return (int64_t)b - a;
	if (gap < 0 || eb != ea + 1)
		return INT64_MAX;
	return (int64_t)b - a - 1 + gap;
}

double eng_native_proximity(struct store_txn *txn, const struct eng_doctype *dt,
                            const struct rank_profile *prof, const struct eng_textset *s,
                            int feature, int field, uint32_t lid)
{
	static _Thread_local struct eng_term_pos t[MAX_TERMS];
	static _Thread_local uint32_t el[MAX_TERMS][ENG_TERM_POS_MAX];
	int n = eng_text_positions(s, field, lid, t, MAX_TERMS);
	int coll = (dt->fields[field].text & (STORE_TEXT_ARRAY | STORE_TEXT_WSET)) != 0;
	int gap = rank_profile_element_gap(prof, field);
	if (coll && term_elements(txn, dt, field, lid, t, n, el) != 0)
		n = 0; /* unread: no pairs */
	double sum = 0, weight = 0;
	for (int a = 0; a < n; a++) {
		for (int b = a + 1; b < n && b - a < NATIVE_WINDOW; b++) {
			int qd = t[b].term - t[a].term;
			double w = CONNECTEDNESS / (qd > 1 ? qd : 1);
			int64_t fwd = INT64_MAX, rev = INT64_MAX;
			for (uint32_t i = 0; i < t[a].n; i++)
				for (uint32_t k = 0; k < t[b].n; k++) {
					uint32_t pa = t[a].pos[i], pb = t[b].pos[k];
					/* a string field: one element */
					uint32_t ea = coll ? el[a][i] : 0, eb = coll ? el[b][k] : 0;
					int64_t f = forward(pa, ea, pb, eb, gap), r = forward(pb, eb, pa, ea, gap);
					if (f < fwd)
						fwd = f;
					if (r < rev)
						rev = r;
				}
			weight += w;
			sum += w * (0.5 * native_table(500, fwd) + 0.5 * native_table(400, rev)) /
			       (0.5 * 500 + 0.5 * 400);
		}
	}
	return feature == RANK_TF_NATIVE_PROX_SUM ? sum : weight;
}

/* textSimilarity: the occurrences of the query's terms on the field walked
 * in increasing position, each term taken once, at its first occurrence
 * after the last one taken; pairs closer than 9 tokens score 1 - ((d - 1) /
 * 8)^2, in query order or not. */
static double similarity_proximity(uint32_t d)
{
	return d > 8 ? 0 : 1.0 - ((d - 1) / 8.0) * ((d - 1) / 8.0);
}

double eng_text_similarity(struct store_txn *txn, const struct eng_doctype *dt,
                           struct eng_textset *s, int field, uint32_t lid, int output)
{
	static _Thread_local struct eng_term_pos t[MAX_TERMS];
	uint32_t at[MAX_TERMS] = { 0 };
	int n = eng_text_positions(s, field, lid, t, MAX_TERMS), used[MAX_TERMS] = { 0 };
	uint32_t len = 0, matched = 0, in_order = 0, last = 0;
	int last_idx = -1;
	double prox = 0;
	eng_text_length(txn, dt, s, field, lid, &len);
	for (;;) {
		int best = -1;
		for (int i = 0; i < n; i++) {
			while (!used[i] && at[i] < t[i].n && matched && t[i].pos[at[i]] <= last)
				at[i]++;
			if (!used[i] && at[i] < t[i].n && (best < 0 || t[i].pos[at[i]] < t[best].pos[at[best]]))
				best = i;
		}
		if (best < 0)
			break;
		uint32_t pos = t[best].pos[at[best]];
		if (matched) {
			prox += similarity_proximity(pos - last);
			in_order += best > last_idx;
		}
		used[best] = 1;
		matched++;
		last = pos;
		last_idx = best;
	}
	if (!matched || !len)
		return 0;
	double m = matched < len ? matched : len, p, o;
	if (m < 2) {
		p = similarity_proximity(len);
		o = n == 1;
	} else {
		p = prox / (m - 1);
		o = in_order / (m - 1);
	}
	double qc = (double)matched / n, fc = m / len;
	double v[5] = { 0.35 * p + 0.15 * o + 0.30 * qc + 0.20 * fc, p, o, qc, fc };
	return output >= 0 && output < 5 ? v[output] : 0;
}

/* elementSimilarity(f), Vespa's default output: for each element holding
 * a query term on f, the textSimilarity walk inside it (each term once, at
 * its first occurrence after the last one taken) gives p (proximity), o
 * (order), q (the terms matched over the terms on f) and f (matched over
 * the element's length); the feature is the largest (0.35 p + 0.15 o +
 * 0.30 q + 0.20 f) * w, w the element's weight, 0 when none. */
double eng_element_similarity(struct store_txn *txn, const struct eng_doctype *dt,
                              const struct eng_textset *s, int field, uint32_t lid)
{
	static _Thread_local struct eng_term_pos t[MAX_TERMS];
	static _Thread_local uint32_t el[MAX_TERMS][ENG_TERM_POS_MAX], len[MAX_TERMS][ENG_TERM_POS_MAX];
	static _Thread_local int32_t wt[MAX_TERMS][ENG_TERM_POS_MAX];
	int n = eng_text_positions(s, field, lid, t, MAX_TERMS);
	for (int i = 0; i < n; i++)
		if (t[i].n && (store_text_element_spans(txn, dt->store_id, field, lid, t[i].pos, t[i].n,
		                                        el[i], len[i], NULL) != 0 ||
		               store_text_elements(txn, dt->store_id, field, lid, t[i].pos, t[i].n,
		                                   el[i], wt[i], NULL) != 0))
			return 0;
	uint32_t at[MAX_TERMS] = { 0 };
	double best = 0;
	int any = 0;
	for (;;) {
		uint32_t e = UINT32_MAX;
		for (int i = 0; i < n; i++) {
			while (at[i] < t[i].n && el[i][at[i]] == UINT32_MAX)
				at[i]++;
			if (at[i] < t[i].n && el[i][at[i]] < e)
				e = el[i][at[i]];
		}
		if (e == UINT32_MAX)
			break;
		uint32_t k[MAX_TERMS], last = 0, matched = 0, in_order = 0, elen = 0;
		int used[MAX_TERMS] = { 0 }, last_idx = -1;
		double prox = 0, w = 1;
		for (int i = 0; i < n; i++)
			k[i] = at[i];
		for (;;) { /* the term at the least position in e after the last one taken */
			int b = -1;
			for (int i = 0; i < n; i++) {
				while (!used[i] && k[i] < t[i].n && el[i][k[i]] == e && matched &&
				       t[i].pos[k[i]] <= last)
					k[i]++;
				if (!used[i] && k[i] < t[i].n && el[i][k[i]] == e &&
				    (b < 0 || t[i].pos[k[i]] < t[b].pos[k[b]]))
					b = i;
			}
			if (b < 0)
				break;
			uint32_t pos = t[b].pos[k[b]];
			if (matched) {
				prox += similarity_proximity(pos - last);
				in_order += b > last_idx;
			} else {
				elen = len[b][k[b]];
				w = wt[b][k[b]];
			}
			used[b] = 1;
			matched++;
			last = pos;
			last_idx = b;
		}
		if (elen < matched)
			elen = matched;
		double p = matched < 2 ? similarity_proximity(elen) : prox / (matched - 1);
		double o = matched < 2 ? matched : (double)in_order / (matched - 1);
		double score = (0.35 * p + 0.15 * o + 0.30 * matched / n + 0.20 * matched / elen) * w;
		if (!any || score > best)
			best = score;
		any = 1;
		for (int i = 0; i < n; i++) /* on to the next element */
			while (at[i] < t[i].n && el[i][at[i]] <= e)
				at[i]++;
	}
	return best;
}
