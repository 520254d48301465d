/*
 * textbench.h: what the text benchmark's driver (textbench.c) and its
 * corpus generator (textgen.c) share.  Private to build/bench/textbench.
 */
#ifndef TEXTBENCH_H
#define TEXTBENCH_H

#include <stddef.h>
#include <stdint.h>

#define VOCAB 100000u   /* words of the vocabulary */
#define WORD_MAX 16     /* bytes of the longest word, with its NUL */

struct textgen {
	double *cdf;    /* cumulative Zipf probabilities by rank */
	uint64_t seed;
};

/* Set up the generator for seed.  Returns 0, or -1 when memory ran out. */
int tg_init(struct textgen *g, uint64_t seed);
void tg_free(struct textgen *g);
/* The word of rank r, NUL-terminated, into out (WORD_MAX bytes). */
void tg_word(uint32_t r, char *out);
/* Document i's text (words separated by single spaces) into buf, at most
 * cap - 1 bytes and a NUL; returns its length.  The same for the same seed
 * and i, whatever the order of the calls. */
size_t tg_doc(const struct textgen *g, long i, char *buf, size_t cap);
/* Query q of nterms distinct terms: their ranks into terms. */
void tg_query(const struct textgen *g, int nterms, int q, uint32_t *terms);

#endif
