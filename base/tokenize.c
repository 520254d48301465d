/*
 * tokenize.c: text to index terms (see base.h).  Both sides of text search
 * use it: feeding turns field values into terms, queries turn their words
 * into the same terms, so a word matches whatever way it was written.
 *
 * A character is decoded from UTF-8 and classified as letter, digit or
 * separator.  Letters beyond ASCII count as letters unless they fall in a
 * punctuation or symbol block; combining marks (U+0300..U+036F) stay inside
 * a word and are dropped when normalizing.  Folding covers Latin-1, Latin
 * Extended-A, Greek and Cyrillic: enough for the languages the stemmer
 * knows; other scripts keep their characters as they are.
 */
#include <libstemmer.h>
#include <stdint.h>
#include <string.h>

#include "base.h"

struct base_tokenizer {
	struct sb_stemmer *stem;
	int count;                       /* tokens returned for the current text */
	size_t start;                    /* the byte where the last token began */
	size_t n;
	char buf[BASE_TOKEN_MAX + 1];
	/* GRAM: the word whose grams are being returned, folded, its
	 * characters' byte offsets, and where the next gram starts; its grams
	 * go on while the caller's offset is still gram_end. */
	char word[BASE_TOKEN_MAX + 1];
	uint16_t at[BASE_TOKEN_MAX + 2];
	int nchars, next_gram;
	size_t gram_end;
};

int base_tokenizer_new(struct base_tokenizer **out, struct strata_error *err)
{
	struct base_tokenizer *tk = base_calloc(1, sizeof *tk);
	if (!tk)
		return base_nomem(err, "a tokenizer");
	if (!(tk->stem = sb_stemmer_new("english", "UTF_8"))) {
		base_free(tk, sizeof *tk);
		return base_nomem(err, "the English stemmer");
	}
	*out = tk;
	return 0;
}

void base_tokenizer_free(struct base_tokenizer *tk)
{
	if (!tk)
		return;
	sb_stemmer_delete(tk->stem);
	base_free(tk, sizeof *tk);
}

/* Decode one code point at s[0..n); bad bytes give -1 and a length of 1. */
static long decode(const unsigned char *s, size_t n, size_t *len)
{
	*len = 1;
	if (s[0] < 0x80)
		return s[0];
	int k = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 ? 2 : 0;
	if (!k || s[0] > 0xf4 || (size_t)k > n)
		return -1;
	long c = s[0] & (0x7f >> k);
	for (int i = 1; i < k; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return -1;
		c = c << 6 | (s[i] & 0x3f);
	}
	static const long least[5] = {0, 0, 0x80, 0x800, 0x10000};
	if (c < least[k] || (c >= 0xd800 && c < 0xe000))
		return -1;
	*len = (size_t)k;
	return c;
}

enum { SEP = 0, LETTER, DIGIT, MARK };

/* classify() of each ASCII byte, and its lowercase: the common case without
 * branches. */
#define L_ LETTER
#define D_ DIGIT
static const unsigned char ascii_class[128] = {
	['0'] = D_, D_, D_, D_, D_, D_, D_, D_, D_, D_,
	['A'] = L_, L_, L_, L_, L_, L_, L_, L_, L_, L_, L_, L_, L_, L_, L_, L_, L_, L_, L_, L_, L_,
	L_, L_, L_, L_, L_,
	['a'] = L_, L_, L_, L_, L_, L_, L_, L_, L_, L_, L_, L_, L_, L_, L_, L_, L_, L_, L_, L_, L_,
	L_, L_, L_, L_, L_,
};
#undef L_
#undef D_

static unsigned char ascii_lower(unsigned char c)
{
	return (unsigned char)(c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c);
}

static int classify(long c)
{
	if (c < 0)
		return SEP;
	if (c < 0x80) {
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
			return LETTER;
		return c >= '0' && c <= '9' ? DIGIT : SEP;
	}
	if (c < 0xc0)
		return c == 0xaa || c == 0xb5 || c == 0xba ? LETTER : SEP;
	if (c == 0xd7 || c == 0xf7)
		return SEP;
	if (c >= 0x300 && c <= 0x36f)
		return MARK;
	if ((c >= 0x2000 && c <= 0x2bff) || (c >= 0x2e00 && c <= 0x2e7f) ||
	    (c >= 0x3000 && c <= 0x303f) || (c >= 0xfe30 && c <= 0xfe4f) ||
	    (c >= 0xff00 && c <= 0xff0f) || (c >= 0xff1a && c <= 0xff20) ||
	    (c >= 0x1f000 && c <= 0x1faff) || c == 0xfeff)
		return SEP;
	if (c >= 0xff10 && c <= 0xff19)
		return DIGIT;
	return LETTER;
}

/* Latin-1 and Latin Extended-A letters without their accents, lowercase;
 * U+00C0 first.  Two letters where the letter is a ligature. */
static const char *const latin[] = {
	"a", "a", "a", "a", "a", "a", "ae", "c", "e", "e", "e", "e", "i", "i", "i", "i",      /* C0 */
	"d", "n", "o", "o", "o", "o", "o", "", "o", "u", "u", "u", "u", "y", "th", "ss",      /* D0 */
	"a", "a", "a", "a", "a", "a", "ae", "c", "e", "e", "e", "e", "i", "i", "i", "i",      /* E0 */
	"d", "n", "o", "o", "o", "o", "o", "", "o", "u", "u", "u", "u", "y", "th", "y",       /* F0 */
	"a", "a", "a", "a", "a", "a", "c", "c", "c", "c", "c", "c", "c", "c", "d", "d",       /* 100 */
	"d", "d", "e", "e", "e", "e", "e", "e", "e", "e", "e", "e", "g", "g", "g", "g",       /* 110 */
	"g", "g", "g", "g", "h", "h", "h", "h", "i", "i", "i", "i", "i", "i", "i", "i",       /* 120 */
	"i", "i", "ij", "ij", "j", "j", "k", "k", "k", "l", "l", "l", "l", "l", "l", "l",     /* 130 */
	"l", "l", "l", "n", "n", "n", "n", "n", "n", "n", "n", "n", "o", "o", "o", "o",       /* 140 */
	"o", "o", "oe", "oe", "r", "r", "r", "r", "r", "r", "s", "s", "s", "s", "s", "s",     /* 150 */
	"s", "s", "t", "t", "t", "t", "t", "t", "u", "u", "u", "u", "u", "u", "u", "u",       /* 160 */
	"u", "u", "u", "u", "w", "w", "y", "y", "y", "z", "z", "z", "z", "z", "z", "s",       /* 170 */
};

/* Lowercase c (Latin-1, Latin Extended-A, Greek, Cyrillic). */
static long lower(long c)
{
	if (c < 0x80)
		return c >= 'A' && c <= 'Z' ? c + 32 : c;
	if ((c >= 0xc0 && c <= 0xde && c != 0xd7))
		return c + 32;
	if (c == 0x178)
		return 0xff;
	if (c >= 0x100 && c <= 0x17f) {
		/* pairs: even upper, odd lower, except 0x139..0x148 and 0x179..0x17e */
		if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17e))
			return c & 1 ? c + 1 : c;
		if (c == 0x130 || c == 0x131 || c == 0x138 || c == 0x149 || c == 0x17f)
			return c;
		return c & 1 ? c : c + 1;
	}
	if (c >= 0x391 && c <= 0x3ab && c != 0x3a2)
		return c + 32;
	if (c >= 0x410 && c <= 0x42f)
		return c + 32;
	if (c >= 0x400 && c <= 0x40f)
		return c + 80;
	return c;
}

/* Greek letters with tonos or dialytika, lowercase, to the plain letter. */
static long greek_plain(long c)
{
	switch (c) {
	case 0x3ac: return 0x3b1;
	case 0x3ad: return 0x3b5;
	case 0x3ae: return 0x3b7;
	case 0x3af: case 0x3ca: case 0x390: return 0x3b9;
	case 0x3cc: return 0x3bf;
	case 0x3cd: case 0x3cb: case 0x3b0: return 0x3c5;
	case 0x3ce: return 0x3c9;
	case 0x3c2: return 0x3c3; /* final sigma */
	}
	return c;
}

static void put(struct base_tokenizer *tk, const char *s, size_t n)
{
	if (tk->n + n <= BASE_TOKEN_MAX) {
		memcpy(tk->buf + tk->n, s, n);
		tk->n += n;
	}
}

size_t base_utf8_encode(long c, char b[4])
{
	if (c < 0x80) {
		b[0] = (char)c;
		return 1;
	}
	if (c < 0x800) {
		b[0] = (char)(0xc0 | c >> 6);
		b[1] = (char)(0x80 | (c & 0x3f));
		return 2;
	}
	if (c < 0x10000) {
		b[0] = (char)(0xe0 | c >> 12);
		b[1] = (char)(0x80 | (c >> 6 & 0x3f));
		b[2] = (char)(0x80 | (c & 0x3f));
		return 3;
	}
	b[0] = (char)(0xf0 | c >> 18);
	b[1] = (char)(0x80 | (c >> 12 & 0x3f));
	b[2] = (char)(0x80 | (c >> 6 & 0x3f));
	b[3] = (char)(0x80 | (c & 0x3f));
	return 4;
}

static void put_code(struct base_tokenizer *tk, long c)
{
	char b[4];
	put(tk, b, base_utf8_encode(c, b));
}

/* Append character c (class cls) of a token, folded as flags say. */
static void fold(struct base_tokenizer *tk, long c, int cls, int flags)
{
	int norm = flags & BASE_TOKEN_NORMALIZE;
	if (cls == MARK) {
		if (!norm)
			put_code(tk, c);
		return;
	}
	if (c <= 0) /* a bad byte or NUL inside a WHOLE token */
		return;
	if (!(flags & BASE_TOKEN_CASED))
		c = lower(c);
	if (norm && c >= 0xc0 && c <= 0x17f && c != 0xd7 && c != 0xf7) {
		const char *s = latin[c - 0xc0];
		if (flags & BASE_TOKEN_CASED && c < 0xe0 && c != 0xdf) {
			char up[3] = {0};
			for (int i = 0; s[i] && i < 2; i++)
				up[i] = (char)(s[i] - 32);
			put(tk, up, strlen(up));
		} else {
			put(tk, s, strlen(s));
		}
		return;
	}
	if (norm)
		c = greek_plain(c);
	put_code(tk, c);
}

static void stem(struct base_tokenizer *tk)
{
	const sb_symbol *s = sb_stemmer_stem(tk->stem, (const sb_symbol *)tk->buf, (int)tk->n);
	if (!s)
		return;
	size_t n = (size_t)sb_stemmer_length(tk->stem);
	if (n <= BASE_TOKEN_MAX) {
		memcpy(tk->buf, s, n);
		tk->n = n;
	}
}

/* GRAM: keep the word in tk->buf as the word whose grams come next. */
static void gram_word(struct base_tokenizer *tk, size_t end)
{
	memcpy(tk->word, tk->buf, tk->n);
	tk->nchars = 0;
	for (size_t b = 0; b < tk->n; b++)
		if (((unsigned char)tk->word[b] & 0xc0) != 0x80)
			tk->at[tk->nchars++] = (uint16_t)b;
	tk->at[tk->nchars] = (uint16_t)tk->n;
	tk->next_gram = 0;
	tk->gram_end = end;
}

/* GRAM: the next gram of the word into tk->buf. */
static void gram_next(struct base_tokenizer *tk, int size)
{
	int from = tk->next_gram, to = from + size;
	if (to >= tk->nchars) {
		to = tk->nchars;
		tk->next_gram = -1; /* the last one */
	} else {
		tk->next_gram++;
	}
	tk->n = (size_t)(tk->at[to] - tk->at[from]);
	memcpy(tk->buf, tk->word + tk->at[from], tk->n);
}

int base_token_next(struct base_tokenizer *tk, const char *text, size_t len, size_t *off,
                    int flags, const char **tok, size_t *n, int *pos)
{
	const unsigned char *s = (const unsigned char *)text;
	size_t i = *off, k;
	int gram = flags & BASE_TOKEN_GRAM ? BASE_TOKEN_GRAM_SIZE(flags) : 0;
	if (gram < 1 && (flags & BASE_TOKEN_GRAM))
		gram = 1;
	if (i == 0) {
		tk->count = 0;
		tk->next_gram = -1;
	}
	if (gram && tk->next_gram >= 0 && i == tk->gram_end) {
		gram_next(tk, gram);
	} else if (flags & BASE_TOKEN_WHOLE) {
		if (i >= len || tk->count)
			return 0;
		tk->start = i;
		tk->n = 0;
		for (; i < len; i += k) {
			long c = decode(s + i, len - i, &k);
			fold(tk, c, classify(c) == MARK ? MARK : LETTER, flags);
		}
	} else {
		int cls = SEP;
		for (; i < len; i += k) { /* skip separators */
			if (s[i] < 0x80) { /* ASCII, the common case, without decoding */
				k = 1;
				if ((cls = ascii_class[s[i]]) != SEP)
					break;
				continue;
			}
			long c = decode(s + i, len - i, &k);
			if ((cls = classify(c)) == LETTER || cls == DIGIT)
				break;
		}
		if (i >= len)
			return 0;
		tk->start = i;
		tk->n = 0;
		int kind = cls, cased = flags & BASE_TOKEN_CASED;
		for (; i < len; i += k) {
			/* fold() of ASCII letters or digits, a run at a time */
			size_t m = tk->n;
			while (i < len && s[i] < 0x80 && ascii_class[s[i]] == kind && m < BASE_TOKEN_MAX)
				tk->buf[m++] = (char)(cased ? s[i++] : ascii_lower(s[i++]));
			tk->n = m;
			if (i >= len)
				break;
			if (s[i] < 0x80) {
				k = 1;
				if (ascii_class[s[i]] != kind)
					break;
				continue; /* past BASE_TOKEN_MAX: the rest of the word is dropped */
			}
			long c = decode(s + i, len - i, &k);
			int cc = classify(c);
			if (cc != kind && cc != MARK)
				break;
			fold(tk, c, cc, flags);
		}
		if (gram) {
			gram_word(tk, i);
			gram_next(tk, gram);
		} else if (kind == LETTER && (flags & BASE_TOKEN_STEM)) {
			stem(tk);
		}
	}
	tk->buf[tk->n] = 0;
	*off = i;
	*tok = tk->buf;
	*n = tk->n;
	*pos = tk->count++;
	return 1;
}

size_t base_token_start(const struct base_tokenizer *tk)
{
	return tk->start;
}

long base_utf8_next(const char *s, size_t n, size_t *len)
{
	return decode((const unsigned char *)s, n, len);
}

long base_char_lower(long c)
{
	return lower(c);
}
