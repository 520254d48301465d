/*
 * text_elems.c: the elements of a text-indexed collection field, read from
 * the value the document record keeps: the compact JSON text of an array of
 * strings (["a", "b"]) or of a weighted set of strings ({"a": 3, "b": -1}),
 * as the engine checked and wrote it.  text.c indexes each element on its
 * own.  The store links no JSON library: this reader knows exactly these two
 * shapes, and anything else is a corrupt value (STRATA_CORRUPT), never a
 * crash.  Strings are decoded (escapes, \uXXXX with surrogate pairs) into a
 * buffer of the text's length, so a value in LMDB's pages is only read.
 */
#include <string.h>

#include "store_int.h"

struct rd {
	const char *s;
	size_t n, i;
	char *buf;      /* decoded strings; n bytes suffice */
};

static void ws(struct rd *r)
{
	while (r->i < r->n && (r->s[r->i] == ' ' || r->s[r->i] == '\t' || r->s[r->i] == '\n' ||
	                       r->s[r->i] == '\r'))
		r->i++;
}

static int hex4(struct rd *r, long *v)
{
	uint64_t x;
	if (r->n - r->i < 4 || base_hex_value(r->s + r->i, 4, &x) < 0)
		return -1;
	r->i += 4;
	*v = (long)x;
	return 0;
}

/* A JSON string at r->i into r->buf: its length, or -1 when malformed.  An
 * escape never decodes longer than its text, so the buffer suffices. */
static long string(struct rd *r)
{
	if (r->i >= r->n || r->s[r->i] != '"')
		return -1;
	r->i++;
	size_t o = 0;
	while (r->i < r->n) {
		char c = r->s[r->i++];
		if (c == '"')
			return (long)o;
		if (c != '\\') {
			r->buf[o++] = c;
			continue;
		}
		if (r->i >= r->n)
			return -1;
		c = r->s[r->i++];
		long u;
		switch (c) {
		case '"': case '\\': case '/': r->buf[o++] = c; break;
		case 'b': r->buf[o++] = '\b'; break;
		case 'f': r->buf[o++] = '\f'; break;
		case 'n': r->buf[o++] = '\n'; break;
		case 'r': r->buf[o++] = '\r'; break;
		case 't': r->buf[o++] = '\t'; break;
		case 'u':
			if (hex4(r, &u))
				return -1;
			if (u >= 0xd800 && u < 0xdc00) { /* a pair: \uD8xx\uDCxx, 12 bytes for 4 */
				long lo;
				if (r->n - r->i < 6 || r->s[r->i] != '\\' || r->s[r->i + 1] != 'u')
					return -1;
				r->i += 2;
				if (hex4(r, &lo) || lo < 0xdc00 || lo >= 0xe000)
					return -1;
				u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
			} else if (u >= 0xdc00 && u < 0xe000) {
				return -1;
			}
			o += base_utf8_encode(u, r->buf + o);
			break;
		default:
			return -1;
		}
	}
	return -1;
}

/* An int32 weight. */
static int weight(struct rd *r, int32_t *w)
{
	int neg = r->i < r->n && r->s[r->i] == '-';
	if (neg)
		r->i++;
	int64_t v = 0;
	size_t start = r->i;
	while (r->i < r->n && r->s[r->i] >= '0' && r->s[r->i] <= '9' && v <= INT32_MAX)
		v = v * 10 + (r->s[r->i++] - '0');
	if (r->i == start || v > (int64_t)INT32_MAX + neg)
		return -1;
	*w = (int32_t)(neg ? -v : v);
	return 0;
}

int store_text_elems(const char *s, size_t n, int kind,
                     int (*fn)(void *ud, const char *str, size_t len, int32_t weight), void *ud,
                     struct strata_error *err)
{
	struct rd r = {s, n, 0, NULL};
	char open = kind == STORE_TEXT_WSET ? '{' : '[', close = open == '{' ? '}' : ']';
	if (n && !(r.buf = base_alloc(n)))
		return base_nomem(err, "indexing text");
	int rc = 0;
	ws(&r);
	if (r.i >= n || s[r.i++] != open)
		goto bad;
	ws(&r);
	if (r.i < n && s[r.i] == close) {
		r.i++;
	} else {
		for (;;) {
			ws(&r);
			long len = string(&r);
			int32_t w = 1;
			if (len < 0)
				goto bad;
			ws(&r);
			if (open == '{') {
				if (r.i >= n || s[r.i++] != ':')
					goto bad;
				ws(&r);
				if (weight(&r, &w))
					goto bad;
				ws(&r);
			}
			if ((rc = fn(ud, r.buf, (size_t)len, w)) != 0)
				goto out;
			if (r.i < n && s[r.i] == ',') {
				r.i++;
				continue;
			}
			if (r.i < n && s[r.i++] == close)
				break;
			goto bad;
		}
	}
	ws(&r);
	if (r.i == n)
		goto out;
bad:
	rc = base_err(err, STRATA_CORRUPT, "text index: a stored %s of strings is malformed",
	              open == '{' ? "weighted set" : "array");
out:
	base_free(r.buf, n);
	return rc;
}
