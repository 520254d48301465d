/*
 * json_read.c: JSON text into jansson values (eng_json_parse).
 *
 * Every JSON text the engine reads (feed operations, requests, stored
 * collection values, the contexts manifest) comes through here.  It
 * accepts exactly what jansson's own parser accepts (RFC 8259, UTF-8,
 * "\u0000" refused, duplicate keys the last one winning, integers as
 * json_int_t and out of range an error, reals by strtod in the C locale and
 * an overflow an error, nesting at most JSON_PARSER_MAX_DEPTH values deep),
 * and builds the same values through jansson's public constructors.  It
 * One difference, on purpose: a NUL byte is refused wherever it is, where
 * jansson skips one that follows a number or a literal.  It exists for
 * speed: jansson's lexer reads a byte at a time through a stream
 * with a callback per byte and copies every string twice, which made
 * parsing the largest cost of a feed.  Here a string is scanned eight bytes
 * at a time for its end, an escape, a control byte or a non-ASCII byte;
 * one without escapes goes to jansson straight from the input.
 *
 * An error sets je as jansson does (line and column, 1-based, of the byte
 * where the text stopped making sense; its offset; a reason), the source
 * being "<buffer>".  An allocation that fails stops the parse: NULL, *oom
 * set, and nothing kept.
 */
#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../engine_int.h"

#define NUMBER_MAX 64 /* longest number copied to the stack for strtod */

struct reader {
	const unsigned char *start, *p, *end;
	json_error_t *je;
	int failed;     /* an error was reported: stop */
	int oom;        /* ... and it was out of memory */
	int depth;      /* values open, as jansson counts them */
	char *scratch;  /* unescaped strings */
	size_t cap;
};

static json_t *read_value(struct reader *r);

/* ---- errors ------------------------------------------------------------------- */

static void fail_at(struct reader *r, const unsigned char *at, const char *fmt, ...)
{
	if (r->failed)
		return;
	r->failed = 1;
	json_error_t *je = r->je;
	int line = 1;
	const unsigned char *bol = r->start;
	for (const unsigned char *q = r->start; q < at; q++)
		if (*q == '\n') {
			line++;
			bol = q + 1;
		}
	je->line = line;
	je->column = (int)(at - bol) + 1;
	je->position = (int)(at - r->start);
	snprintf(je->source, sizeof je->source, "<buffer>");
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(je->text, sizeof je->text, fmt, ap);
	va_end(ap);
}

static void fail_oom(struct reader *r)
{
	if (!r->failed)
		fail_at(r, r->p, "out of memory");
	r->oom = 1;
}

/* What the text has at p, for a message: the byte quoted, or "end of input". */
static const char *what_at(const struct reader *r, const unsigned char *p, char buf[16])
{
	if (p >= r->end)
		return "end of input";
	if (*p >= 0x20 && *p < 0x7f)
		snprintf(buf, 16, "'%c'", *p);
	else
		snprintf(buf, 16, "byte 0x%02x", *p);
	return buf;
}

static void fail_expected(struct reader *r, const char *expected)
{
	char b[16];
	fail_at(r, r->p, "%s expected, found %s", expected, what_at(r, r->p, b));
}

/* ---- bytes -------------------------------------------------------------------- */

static void skip_space(struct reader *r)
{
	const unsigned char *p = r->p, *end = r->end;
	while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
		p++;
	r->p = p;
}

/* The lowest byte of w (read little-endian) that is '"', '\\', below 0x20
 * or above 0x7f has its high bit set in the result (higher ones may be
 * flagged falsely; only the lowest counts). */
static inline uint64_t special_bytes(uint64_t w)
{
	const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
	uint64_t q = w ^ (ones * '"'), b = w ^ (ones * '\\');
	return (((q - ones) & ~q) | ((b - ones) & ~b) | ((w - ones * 0x20) & ~w) | w) & high;
}

/* The length of the UTF-8 sequence at p (its first byte >= 0x80), or 0
 * when it is not one jansson accepts: no overlong forms, no surrogates,
 * nothing above U+10FFFF. */
static size_t utf8_length(const unsigned char *p, const unsigned char *end)
{
	unsigned c = p[0], n, v;
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		v = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		v = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		v = c & 0x07;
	} else
		return 0;
	if ((size_t)(end - p) < n)
		return 0;
	for (unsigned i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		v = v << 6 | (p[i] & 0x3f);
	}
	if ((n == 3 && v < 0x800) || (n == 4 && v < 0x10000) || v > 0x10ffff ||
	    (v >= 0xd800 && v <= 0xdfff))
		return 0;
	return n;
}

static int reserve(struct reader *r, size_t n)
{
	if (n <= r->cap)
		return 0;
	size_t cap = r->cap ? r->cap : 256;
	while (cap < n)
		cap *= 2;
	char *s = base_realloc(r->scratch, r->cap, cap);
	if (!s) {
		fail_oom(r);
		return -1;
	}
	r->scratch = s;
	r->cap = cap;
	return 0;
}

static int hex4(const unsigned char *p, const unsigned char *end, unsigned *out)
{
	uint64_t v;
	if (end - p < 4 || base_hex_value((const char *)p, 4, &v) < 0)
		return -1;
	*out = (unsigned)v;
	return 0;
}

/* One escape at p (just after the backslash) decoded at o; returns the
 * bytes written, p moved past it; 0 on an error (reported). */
static size_t read_escape(struct reader *r, const unsigned char **pp, char *o)
{
	const unsigned char *p = *pp, *at = p - 1;
	if (p >= r->end) {
		fail_at(r, at, "a string is not closed");
		return 0;
	}
	unsigned c = *p++, v, lo;
	switch (c) {
	case '"': case '\\': case '/':
		*o = (char)c;
		break;
	case 'b': *o = '\b'; break;
	case 'f': *o = '\f'; break;
	case 'n': *o = '\n'; break;
	case 'r': *o = '\r'; break;
	case 't': *o = '\t'; break;
	case 'u':
		if (hex4(p, r->end, &v) < 0) {
			fail_at(r, at, "invalid \\u escape: four hexadecimal digits expected");
			return 0;
		}
		p += 4;
		if (v >= 0xdc00 && v <= 0xdfff) {
			fail_at(r, at, "invalid Unicode escape \\u%04X: a low surrogate alone", v);
			return 0;
		}
		if (v >= 0xd800 && v <= 0xdbff) {
			if (r->end - p < 6 || p[0] != '\\' || p[1] != 'u' || hex4(p + 2, r->end, &lo) < 0 ||
			    lo < 0xdc00 || lo > 0xdfff) {
				fail_at(r, at, "invalid Unicode escape \\u%04X: a high surrogate without its low one",
				        v);
				return 0;
			}
			p += 6;
			v = 0x10000 + ((v - 0xd800) << 10) + (lo - 0xdc00);
		}
		if (v == 0) {
			fail_at(r, at, "\\u0000 is not allowed in a string");
			return 0;
		}
		*pp = p;
		return base_utf8_encode((long)v, o);
	default:
		fail_at(r, at, "invalid escape '\\%c'", c >= 0x20 && c < 0x7f ? (int)c : '?');
		return 0;
	}
	*pp = p;
	return 1;
}

/* The string whose opening quote is at r->p: *s and *n its text, either in
 * the input (no escapes) or in r->scratch from offset 0.  -1 on an error
 * (reported). */
static int read_string(struct reader *r, const char **s, size_t *n)
{
	const unsigned char *open = r->p, *p = open + 1, *end = r->end, *first = p;
	for (;;) {
		while (end - p >= 8) {
			uint64_t w;
			memcpy(&w, p, 8);
			uint64_t m = special_bytes(w);
			if (m) {
				p += __builtin_ctzll(m) >> 3;
				break;
			}
			p += 8;
		}
		if (p >= end)
			goto unclosed;
		unsigned c = *p;
		if (c == '"') {
			*s = (const char *)first;
			*n = (size_t)(p - first);
			r->p = p + 1;
			return 0;
		}
		if (c >= 0x80) {
			size_t k = utf8_length(p, end);
			if (!k)
				goto bad_utf8;
			p += k;
		} else if (c == '\\')
			break;
		else if (c < 0x20)
			goto control;
		else
			p++;
	}
	/* An escape: the text so far, then the rest decoded into r->scratch
	 * (an escape never decodes longer than it is written). */
	size_t len = (size_t)(p - first);
	if (reserve(r, (size_t)(end - first) + 1) < 0)
		return -1;
	memcpy(r->scratch, first, len);
	while (p < end) {
		unsigned c = *p;
		if (c == '"') {
			*s = r->scratch;
			*n = len;
			r->p = p + 1;
			return 0;
		}
		if (c == '\\') {
			p++;
			size_t k = read_escape(r, &p, r->scratch + len);
			if (!k)
				return -1;
			len += k;
		} else if (c >= 0x80) {
			size_t k = utf8_length(p, end);
			if (!k)
				goto bad_utf8;
			memcpy(r->scratch + len, p, k);
			len += k;
			p += k;
		} else if (c < 0x20)
			goto control;
		else
			r->scratch[len++] = (char)*p++;
	}
unclosed:
	fail_at(r, open, "a string is not closed");
	return -1;
bad_utf8:
	fail_at(r, p, "invalid UTF-8 in a string");
	return -1;
control:
	fail_at(r, p, "control character 0x%02x in a string (write it escaped)", *p);
	return -1;
}

/* ---- values ------------------------------------------------------------------- */

static int is_digit(const unsigned char *p, const unsigned char *end)
{
	return p < end && *p >= '0' && *p <= '9';
}

/* Reals are read in the C locale, whatever the program set. */
static locale_t c_numeric;
static pthread_once_t c_numeric_once = PTHREAD_ONCE_INIT;

static void make_c_numeric(void)
{
	c_numeric = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
}

static double strtod_c(const char *text)
{
	pthread_once(&c_numeric_once, make_c_numeric);
	return c_numeric ? strtod_l(text, NULL, c_numeric) : strtod(text, NULL);
}

double eng_json_strtod(const char *text)
{
	return strtod_c(text);
}

static json_t *read_number(struct reader *r)
{
	const unsigned char *s = r->p, *p = s, *end = r->end;
	int neg = 0, real = 0;
	if (*p == '-') {
		neg = 1;
		p++;
	}
	if (!is_digit(p, end))
		goto bad;
	if (*p == '0') {
		p++;
		if (is_digit(p, end))
			goto bad;
	} else
		while (is_digit(p, end))
			p++;
	if (p < end && *p == '.') {
		p++;
		if (!is_digit(p, end))
			goto bad;
		while (is_digit(p, end))
			p++;
		real = 1;
	}
	if (p < end && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < end && (*p == '+' || *p == '-'))
			p++;
		if (!is_digit(p, end))
			goto bad;
		while (is_digit(p, end))
			p++;
		real = 1;
	}
	json_t *v;
	if (!real) {
		/* The magnitude, at most 2^63 (- 1 when positive). */
		uint64_t m = 0, limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
		for (const unsigned char *q = s + neg; q < p; q++) {
			unsigned d = *q - '0';
			if (m > (limit - d) / 10) {
				fail_at(r, s, "integer %.*s is out of range", (int)(p - s), (const char *)s);
				return NULL;
			}
			m = m * 10 + d;
		}
		v = json_integer(neg ? (json_int_t)(0 - m) : (json_int_t)m);
	} else {
		char stack[NUMBER_MAX + 1], *text = stack;
		size_t n = (size_t)(p - s);
		if (n > NUMBER_MAX) {
			text = base_alloc(n + 1);
			if (!text) {
				fail_oom(r);
				return NULL;
			}
		}
		memcpy(text, s, n);
		text[n] = 0;
		double d = strtod_c(text);
		if (text != stack)
			base_free(text, n + 1);
		if (d == HUGE_VAL || d == -HUGE_VAL) {
			fail_at(r, s, "real number %.*s is out of range", (int)(n > 40 ? 40 : n),
			        (const char *)s);
			return NULL;
		}
		v = json_real(d);
	}
	if (!v)
		fail_oom(r);
	r->p = p;
	return v;
bad:
	fail_at(r, s, "invalid number");
	return NULL;
}

static json_t *read_word(struct reader *r)
{
	static const struct { const char *w; size_t n; } words[] = {
		{ "true", 4 }, { "false", 5 }, { "null", 4 },
	};
	for (int i = 0; i < 3; i++)
		if ((size_t)(r->end - r->p) >= words[i].n && !memcmp(r->p, words[i].w, words[i].n)) {
			r->p += words[i].n;
			json_t *v = i == 0 ? json_true() : i == 1 ? json_false() : json_null();
			return v;
		}
	const unsigned char *q = r->p;
	while (q < r->end && q - r->p < 24 && ((*q | 0x20) >= 'a' && (*q | 0x20) <= 'z'))
		q++;
	if (q > r->p)
		fail_at(r, r->p, "unknown word '%.*s' (true, false or null expected)", (int)(q - r->p),
		        (const char *)r->p);
	else
		fail_expected(r, "a value");
	return NULL;
}

/* After an element of a container closed by `close`: 1 at a ',' (taken),
 * 0 at the close (taken), -1 when neither (reported). */
static int after_element(struct reader *r, char close, const char *expected)
{
	skip_space(r);
	if (r->p < r->end && (*r->p == ',' || *r->p == close))
		return *r->p++ == ',';
	fail_expected(r, expected);
	return -1;
}

/* At a container's opening byte: 1 when it closes at once (both taken). */
static int empty_container(struct reader *r, char close)
{
	r->p++;
	skip_space(r);
	if (r->p < r->end && *r->p == close) {
		r->p++;
		return 1;
	}
	return 0;
}

static json_t *read_array(struct reader *r)
{
	json_t *a = json_array();
	if (!a) {
		fail_oom(r);
		return NULL;
	}
	if (empty_container(r, ']'))
		return a;
	for (;;) {
		json_t *v = read_value(r);
		if (!v)
			goto fail;
		if (json_array_append_new(a, v) < 0) {
			fail_oom(r);
			goto fail;
		}
		int more = after_element(r, ']', "',' or ']'");
		if (more < 0)
			goto fail;
		if (!more)
			return a;
	}
fail:
	json_decref(a);
	return NULL;
}

static json_t *read_object(struct reader *r)
{
	json_t *o = json_object();
	char *key = NULL;
	size_t key_cap = 0;
	if (!o) {
		fail_oom(r);
		return NULL;
	}
	if (empty_container(r, '}'))
		return o;
	for (;;) {
		const char *k;
		size_t kn;
		skip_space(r); /* after a ',' */
		if (r->p >= r->end || *r->p != '"') {
			fail_expected(r, "a string (an object's key)");
			goto fail;
		}
		if (read_string(r, &k, &kn) < 0)
			goto fail;
		if (k == r->scratch) {
			/* Unescaped into the scratch, which the value may reuse. */
			if (kn + 1 > key_cap) {
				char *nk = base_realloc(key, key_cap, kn + 1);
				if (!nk) {
					fail_oom(r);
					goto fail;
				}
				key = nk;
				key_cap = kn + 1;
			}
			memcpy(key, k, kn);
			k = key;
		}
		skip_space(r);
		if (r->p >= r->end || *r->p != ':') {
			fail_expected(r, "':'");
			goto fail;
		}
		r->p++;
		json_t *v = read_value(r);
		if (!v)
			goto fail;
		if (json_object_setn_new_nocheck(o, k, kn, v) < 0) {
			fail_oom(r);
			goto fail;
		}
		int more = after_element(r, '}', "',' or '}'");
		if (more < 0)
			goto fail;
		if (!more) {
			base_free(key, key_cap);
			return o;
		}
	}
fail:
	base_free(key, key_cap);
	json_decref(o);
	return NULL;
}

static json_t *read_value(struct reader *r)
{
	json_t *v;
	skip_space(r);
	if (r->p >= r->end) {
		fail_expected(r, "a value");
		return NULL;
	}
	if (++r->depth > JSON_PARSER_MAX_DEPTH) {
		fail_at(r, r->p, "values nested more than %d deep", JSON_PARSER_MAX_DEPTH);
		return NULL;
	}
	switch (*r->p) {
	case '{':
		v = read_object(r);
		break;
	case '[':
		v = read_array(r);
		break;
	case '"': {
		const char *s;
		size_t n;
		v = NULL;
		if (read_string(r, &s, &n) == 0 && !(v = json_stringn_nocheck(s, n)))
			fail_oom(r);
		break;
	}
	case '-': case '0': case '1': case '2': case '3': case '4':
	case '5': case '6': case '7': case '8': case '9':
		v = read_number(r);
		break;
	default:
		v = read_word(r);
		break;
	}
	r->depth--;
	return v;
}

json_t *eng_json_parse(const char *text, size_t len, size_t flags, json_error_t *je, int *oom)
{
	struct reader r = { .start = (const unsigned char *)text, .p = (const unsigned char *)text,
	                    .end = (const unsigned char *)text + len, .je = je };
	json_error_t local;
	if (!je)
		r.je = &local;
	*oom = 0;
	skip_space(&r);
	json_t *v = NULL;
	if (!(flags & JSON_DECODE_ANY) && (r.p >= r.end || (*r.p != '{' && *r.p != '[')))
		fail_expected(&r, "'{' or '['");
	else if ((v = read_value(&r))) {
		skip_space(&r);
		if (r.p < r.end) {
			char b[16];
			fail_at(&r, r.p, "end of input expected after the value, found %s",
			        what_at(&r, r.p, b));
			json_decref(v);
			v = NULL;
		}
	}
	base_free(r.scratch, r.cap);
	*oom = r.oom;
	return v;
}
