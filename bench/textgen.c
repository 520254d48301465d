/*
 * textgen.c: the text benchmark's corpus and queries (textbench.h), the
 * same on every machine for a given seed.
 *
 * Vocabulary: VOCAB made-up words, word r (0 the most frequent) being r +
 * 20 written in base 20 with one two-letter syllable per digit ("baba" ...),
 * so that every word is distinct, lowercase ASCII and left alone by every
 * tokenizer of the benchmark (no stemming is asked for anywhere).  Word
 * frequencies follow Zipf's law, P(r) proportional to 1 / (r + 1)^ZIPF_S, as
 * the words of natural text do.
 *
 * Documents: a length drawn from a log-normal distribution (median 90
 * words, a long tail; kept within 12..1200, mean about 110), the length of
 * an abstract, a product description or a short news item; then that many
 * words drawn independently by frequency.
 *
 * Queries: NQ_PER_CASE for each term count (1, 3, 8), their distinct terms
 * drawn by frequency from the same law (so frequent words come often, as in
 * real query logs), from a generator of their own.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../tests/vecgen.h"
#include "textbench.h"

#define ZIPF_S 1.0
#define LEN_MEDIAN 90.0
#define LEN_SIGMA 0.6
#define LEN_MIN 12
#define LEN_MAX 1200

static const char syll[20][3] = {
	"ba", "ko", "mi", "te", "ru", "sa", "lo", "ne", "di", "fa",
	"gu", "pe", "to", "vi", "za", "ho", "ju", "ce", "wy", "xo",
};

void tg_word(uint32_t r, char *out)
{
	char d[16];
	int n = 0;
	for (uint32_t v = r + 20; v; v /= 20)
		d[n++] = (char)(v % 20);
	char *p = out;
	while (n--) {
		memcpy(p, syll[(int)d[n]], 2);
		p += 2;
	}
	*p = 0;
}

int tg_init(struct textgen *g, uint64_t seed)
{
	g->cdf = malloc(VOCAB * sizeof *g->cdf);
	if (!g->cdf)
		return -1;
	double sum = 0;
	for (uint32_t r = 0; r < VOCAB; r++) {
		sum += 1.0 / pow(r + 1.0, ZIPF_S);
		g->cdf[r] = sum;
	}
	for (uint32_t r = 0; r < VOCAB; r++)
		g->cdf[r] /= sum;
	g->seed = seed;
	return 0;
}

void tg_free(struct textgen *g)
{
	free(g->cdf);
	g->cdf = NULL;
}

/* A word's rank drawn by frequency. */
static uint32_t draw_word(const struct textgen *g, uint64_t *s)
{
	double u = vg_unit(s);
	uint32_t lo = 0, hi = VOCAB - 1;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (g->cdf[mid] < u)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

size_t tg_doc(const struct textgen *g, long i, char *buf, size_t cap)
{
	uint64_t s = g->seed ^ (0x5851f42d4c957f2dull * (uint64_t)(i + 1));
	/* log-normal length: Box-Muller from two uniforms */
	double u1 = vg_unit(&s), u2 = vg_unit(&s);
	double z = sqrt(-2 * log(u1 > 0 ? u1 : 1e-300)) * cos(2 * M_PI * u2);
	long len = lround(LEN_MEDIAN * exp(LEN_SIGMA * z));
	if (len < LEN_MIN)
		len = LEN_MIN;
	if (len > LEN_MAX)
		len = LEN_MAX;
	size_t n = 0;
	for (long k = 0; k < len && n + 32 < cap; k++) {
		if (k)
			buf[n++] = ' ';
		tg_word(draw_word(g, &s), buf + n);
		n += strlen(buf + n);
	}
	buf[n] = 0;
	return n;
}

void tg_query(const struct textgen *g, int nterms, int q, uint32_t *terms)
{
	uint64_t s = g->seed ^ 0xd1b54a32d192ed03ull ^ ((uint64_t)nterms << 32 | (uint64_t)q);
	for (int k = 0; k < nterms;) {
		uint32_t r = draw_word(g, &s);
		int dup = 0;
		for (int j = 0; j < k; j++)
			dup |= terms[j] == r;
		if (!dup)
			terms[k++] = r;
	}
}
