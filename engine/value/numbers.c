/*
 * numbers.c: the numbers of document JSON, as Vespa's feed reads them.
 *
 * Vespa takes the text of a JSON value for a numeric field, so a number
 * may be written as a JSON string: "price": "1000", "tax": "0.24".  Here:
 *   - byte, int, long: a JSON integer, a real without a fraction, or a
 *     string of decimal digits with an optional sign ("-3", "+7"; Java's
 *     Long.parseLong: no spaces, no fraction, no exponent, no hex);
 *   - float, double: a JSON number, or a string in the form of Java's
 *     Double.parseDouble ("1.5", ".5", "1e3", "2.5f", "NaN", "-Infinity",
 *     "0x1.8p1"; spaces around it allowed); tensor cells also take
 *     Vespa's "inf", "-inf", "nan" in any case.
 * Tensor cells may also be given all at once as hex (eng_hex_cells): each
 * cell's bits, most significant digit first, 2 hex digits a cell for int8,
 * 4 for bfloat16, 8 for float, 16 for double; the width the string has
 * per cell is the encoding, so a float tensor may be fed double or int8
 * hex, but an int8 tensor only int8 hex (Vespa's rules).
 *
 * Used by feed.c and fieldtypes.c (single values), values.c (elements,
 * keys, weights), tensor_json.c and tensor_sparse_json.c (cells).  Nothing
 * here allocates.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "../engine_int.h"

#define NUM_TEXT_MAX 400 /* the longest numeric string read (Java has no limit; no number needs it) */

static int digit(char c)
{
	return c >= '0' && c <= '9';
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* The decimal integer of s[0..n): an optional sign, then digits only. */
static int int_text(const char *s, size_t n, int64_t *out)
{
	size_t i = 0;
	int neg = 0;
	if (i < n && (s[i] == '-' || s[i] == '+'))
		neg = s[i++] == '-';
	if (i == n)
		return ENG_NUM_NOT;
	uint64_t v = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	int over = 0;
	for (; i < n; i++) {
		if (!digit(s[i]))
			return ENG_NUM_NOT;
		unsigned d = (unsigned)(s[i] - '0');
		if (v > (lim - d) / 10)
			over = 1;
		else
			v = v * 10 + d;
	}
	if (over)
		return ENG_NUM_RANGE;
	*out = neg ? (v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v) : (int64_t)v;
	return 0;
}

int eng_num_int(const json_t *j, int64_t lo, int64_t hi, int64_t *out)
{
	int64_t v;
	if (json_is_integer(j)) {
		v = json_integer_value(j);
	} else if (json_is_real(j)) {
		double d = json_real_value(j);
		if (d != floor(d))
			return ENG_NUM_NOT;
		if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0))
			return ENG_NUM_RANGE;
		v = (int64_t)d;
	} else if (json_is_string(j)) {
		int rc = int_text(json_string_value(j), json_string_length(j), &v);
		if (rc)
			return rc;
	} else {
		return ENG_NUM_NOT;
	}
	if (v < lo || v > hi)
		return ENG_NUM_RANGE;
	*out = v;
	return 0;
}

/* Whether s[i..n) holds at least one digit of base 16 (hex) or 10, from
 * i on; *i moves past them. */
static int digits(const char *s, size_t n, size_t *i, int hex)
{
	size_t start = *i;
	while (*i < n && (hex ? hexval(s[*i]) >= 0 : digit(s[*i])))
		(*i)++;
	return *i > start;
}

/* Whether s[0..n) (trimmed) is a number of Java's Double.parseDouble
 * other than NaN and Infinity, and where its type suffix (f, F, d, D) is:
 * *body is the length without it. */
static int java_real(const char *s, size_t n, size_t *body)
{
	size_t i = 0;
	if (i < n && (s[i] == '-' || s[i] == '+'))
		i++;
	if (i + 1 < n && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X')) {
		i += 2;
		int whole = digits(s, n, &i, 1), frac = 0;
		if (i < n && s[i] == '.') {
			i++;
			frac = digits(s, n, &i, 1);
		}
		if (!whole && !frac)
			return 0;
		if (i >= n || (s[i] != 'p' && s[i] != 'P'))
			return 0; /* Java wants the binary exponent */
	} else {
		int whole = digits(s, n, &i, 0), frac = 0;
		if (i < n && s[i] == '.') {
			i++;
			frac = digits(s, n, &i, 0);
		}
		if (!whole && !frac)
			return 0;
		if (i < n && s[i] != 'e' && s[i] != 'E')
			goto suffix;
		if (i == n)
			goto suffix;
	}
	i++; /* the exponent's letter */
	if (i < n && (s[i] == '-' || s[i] == '+'))
		i++;
	if (!digits(s, n, &i, 0))
		return 0;
suffix:
	*body = i;
	if (i < n && (s[i] == 'f' || s[i] == 'F' || s[i] == 'd' || s[i] == 'D'))
		i++;
	return i == n;
}

/* A real from the text s[0..n), as Java's Double.parseDouble (and, tensor
 * = 1, Vespa's cell names) reads it. */
static int real_text(const char *s, size_t n, int tensor, double *out)
{
	while (n && (unsigned char)s[0] <= ' ')
		s++, n--;
	while (n && (unsigned char)s[n - 1] <= ' ')
		n--;
	if (n == 0 || n > NUM_TEXT_MAX)
		return ENG_NUM_NOT;
	size_t i = s[0] == '-' || s[0] == '+';
	double sign = s[0] == '-' ? -1 : 1;
	const char *w = s + i;
	size_t wn = n - i;
	if ((wn == 3 && !memcmp(w, "NaN", 3)) || (tensor && wn == 3 && !strncasecmp(w, "nan", 3))) {
		*out = copysign(NAN, sign);
		return 0;
	}
	if ((wn == 8 && !memcmp(w, "Infinity", 8)) ||
	    (tensor && ((wn == 8 && !strncasecmp(w, "infinity", 8)) ||
	                (wn == 3 && !strncasecmp(w, "inf", 3))))) {
		*out = sign * INFINITY;
		return 0;
	}
	size_t body;
	if (!java_real(s, n, &body))
		return ENG_NUM_NOT;
	char buf[NUM_TEXT_MAX + 1];
	memcpy(buf, s, body);
	buf[body] = 0;
	*out = eng_json_strtod(buf);
	return 0;
}

int eng_num_real(const json_t *j, int tensor, double *out)
{
	if (json_is_number(j)) {
		*out = json_number_value(j);
		return 0;
	}
	if (json_is_string(j))
		return real_text(json_string_value(j), json_string_length(j), tensor, out);
	return ENG_NUM_NOT;
}

const char *eng_num_show(const json_t *j, char *buf, size_t n)
{
	if (json_is_string(j)) {
		const char *s = json_string_value(j);
		size_t len = json_string_length(j);
		snprintf(buf, n, len > 40 ? "'%.40s...'" : "'%s'", s);
	} else if (json_is_integer(j)) {
		snprintf(buf, n, "%lld", (long long)json_integer_value(j));
	} else if (json_is_real(j)) {
		snprintf(buf, n, "%.17g", json_real_value(j));
	} else {
		snprintf(buf, n, "%s", json_is_boolean(j) ? (json_is_true(j) ? "true" : "false")
		                       : json_is_null(j) ? "null" : json_is_array(j) ? "an array"
		                       : "an object");
	}
	return buf;
}

/* ---- tensor cells in hex --------------------------------------------------------- */

int eng_hex_cells(const char *hex, size_t len, int cell, size_t n, double *out, const char *what,
                  struct strata_error *err)
{
	int want = cell == BASE_DT_INT8 ? 2 : cell == BASE_DT_BFLOAT16 ? 4
	         : cell == BASE_DT_FLOAT ? 8 : cell == BASE_DT_DOUBLE ? 16 : 0;
	if (!want)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "%s: hex cells are for tensors of double, float, bfloat16 or int8 "
		                "cells, not %s", what, base_dtype_name(cell));
	if (n == 0)
		return base_err(err, STRATA_INVALID_ARGUMENT, "%s: hex cells for a tensor without "
		                "indexed cells", what);
	for (size_t i = 0; i < len; i++)
		if (hexval(hex[i]) < 0)
			return base_err(err, STRATA_INVALID_ARGUMENT,
			                "%s: expected a tensor or its cells in hex, got a string whose "
			                "character %zu ('%c') is not a hex digit", what, i + 1,
			                hex[i] >= ' ' && hex[i] < 127 ? hex[i] : '?');
	size_t per = len / n;
	if (len % n || (per != 2 && per != 4 && per != 8 && per != 16) ||
	    (cell == BASE_DT_INT8 && per != 2))
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "%s: %zu hex digits for %zu cells; expected %zu (%d a cell of %s%s)",
		                what, len, n, n * (size_t)want, want, base_dtype_name(cell),
		                cell == BASE_DT_INT8 ? "" : "; or 2, 4, 8 or 16 a cell: the bits of "
		                "int8, bfloat16, float or double");
	for (size_t c = 0; c < n; c++) {
		uint64_t bits = 0;
		for (size_t k = 0; k < per; k++)
			bits = bits << 4 | (uint64_t)hexval(hex[c * per + k]);
		double v;
		if (per == 2) {
			v = (int8_t)(uint8_t)bits;
		} else if (per == 4) {
			v = base_bf16_to_f32((uint16_t)bits);
		} else if (per == 8) {
			uint32_t b = (uint32_t)bits;
			float f;
			memcpy(&f, &b, sizeof f);
			v = f;
		} else {
			memcpy(&v, &bits, sizeof v);
		}
		out[c] = v;
	}
	return 0;
}

int eng_hex_string(const json_t *j)
{
	if (!json_is_string(j) || json_string_length(j) == 0)
		return 0;
	const char *s = json_string_value(j);
	for (size_t i = 0; i < json_string_length(j); i++)
		if (hexval(s[i]) < 0)
			return 0;
	return 1;
}
