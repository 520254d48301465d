/*
 * hex.c: hexadecimal digits, as JSON's \u escapes, URLs' %XX escapes,
 * document selections' string escapes and the indexing language's
 * hex_decode write them.
 */
#include "base.h"

int base_hex_digit(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int base_hex_value(const char *s, size_t n, uint64_t *v)
{
	if (n == 0 || n > 16)
		return -1;
	uint64_t x = 0;
	for (size_t i = 0; i < n; i++) {
		int d = base_hex_digit((unsigned char)s[i]);
		if (d < 0)
			return -1;
		x = x << 4 | (uint64_t)d;
	}
	*v = x;
	return 0;
}
