/*
 * base64.c: base64 as RFC 4648 writes it (the standard alphabet, '='
 * padding): raw fields' values in feeds and summaries, and the precompiled
 * character maps of tokenizer files.
 */
#include <string.h>

#include "base.h"

static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int digit(unsigned char c)
{
	const char *p = c ? strchr(digits, c) : NULL;
	return p ? (int)(p - digits) : -1;
}

long base_b64_decode(const char *s, size_t n, unsigned char *out, size_t *len)
{
	size_t k = 0;
	if (n % 4)
		return (long)n;
	for (size_t i = 0; i < n; i += 4) {
		int d[4];
		for (int j = 0; j < 4; j++) {
			d[j] = digit((unsigned char)s[i + j]);
			int pad = s[i + j] == '=' && i + 4 == n && j >= 2 && (j == 3 || s[i + 3] == '=');
			if (d[j] < 0 && !pad)
				return (long)(i + j);
		}
		out[k++] = (unsigned char)(d[0] << 2 | d[1] >> 4);
		if (d[2] >= 0)
			out[k++] = (unsigned char)((d[1] & 15) << 4 | d[2] >> 2);
		if (d[3] >= 0) {
			if (d[2] < 0)
				return (long)(i + 2);
			out[k++] = (unsigned char)((d[2] & 3) << 6 | d[3]);
		}
	}
	*len = k;
	return -1;
}

size_t base_b64_encode(const unsigned char *p, size_t n, char *out)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned)p[i] << 16 | (i + 1 < n ? (unsigned)p[i + 1] << 8 : 0) |
		             (i + 2 < n ? p[i + 2] : 0);
		out[k++] = digits[v >> 18 & 63];
		out[k++] = digits[v >> 12 & 63];
		out[k++] = i + 1 < n ? digits[v >> 6 & 63] : '=';
		out[k++] = i + 2 < n ? digits[v & 63] : '=';
	}
	return k;
}
