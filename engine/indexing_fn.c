/*
 * indexing_fn.c: the functions of the indexing language that transform one
 * value (engine/indexing.c runs the scripts and calls these): conversions,
 * string functions, the chunkers, binarize and pack_bits.  Each takes its
 * input as a borrowed JSON value and gives a new one (to_epoch_second,
 * hex_encode and hex_decode as Vespa's); errors are
 * STRATA_INVALID_ARGUMENT naming the function (the document is refused),
 * or STRATA_NOMEM.
 *
 * Text is UTF-8.  Characters count as code points.  lowercase knows ASCII,
 * Latin-1, Latin Extended-A, Greek and Cyrillic capitals; normalize removes
 * the accents of Latin-1 letters (é -> e, ß -> ss); letters and digits,
 * for the chunkers, are ASCII ones and every character beyond ASCII.
 */
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine_int.h"

/* ---- UTF-8 --------------------------------------------------------------------------- */

/* The code point at s[*i] (n bytes), *i moved past it; a bad byte stands
 * for itself. */
static unsigned next_cp(const char *s, size_t n, size_t *i)
{
	size_t len;
	long c = base_utf8_next(s + *i, n - *i, &len);
	if (c < 0)
		c = (unsigned char)s[*i];
	*i += len;
	return (unsigned)c;
}

/* The letters of U+00C0..U+00FF without their accents ("" for the two
 * signs among them, x and /). */
static const char *const latin1_base[64] = {
	"A", "A", "A", "A", "A", "A", "AE", "C", "E", "E", "E", "E", "I", "I", "I", "I",
	"D", "N", "O", "O", "O", "O", "O", NULL, "O", "U", "U", "U", "U", "Y", "TH", "ss",
	"a", "a", "a", "a", "a", "a", "ae", "c", "e", "e", "e", "e", "i", "i", "i", "i",
	"d", "n", "o", "o", "o", "o", "o", NULL, "o", "u", "u", "u", "u", "y", "th", "y",
};

static json_t *str_or_nomem(const char *s, size_t n, struct strata_error *err, int *rc)
{
	json_t *j = json_stringn_nocheck(s, n);
	*rc = j ? 0 : base_nomem(err, "an indexing value");
	return j;
}

/* lowercase or normalize the string in. */
static int map_text(const json_t *in, int normalize, json_t **out, struct strata_error *err)
{
	const char *s = json_string_value(in);
	size_t n = json_string_length(in), i = 0, k = 0;
	char *d = base_alloc(n * 2 + 1);
	if (!d)
		return base_nomem(err, "an indexing value of %zu bytes", n);
	while (i < n) {
		size_t at = i;
		unsigned c = next_cp(s, n, &i);
		if (!normalize) {
			k += base_utf8_encode(base_char_lower(c), d + k);
		} else if (c >= 0xc0 && c <= 0xff && latin1_base[c - 0xc0]) {
			size_t len = strlen(latin1_base[c - 0xc0]);
			memcpy(d + k, latin1_base[c - 0xc0], len);
			k += len;
		} else {
			memcpy(d + k, s + at, i - at);
			k += i - at;
		}
	}
	int rc;
	*out = str_or_nomem(d, k, err, &rc);
	base_free(d, n * 2 + 1);
	return rc;
}

static int is_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* A letter or a digit, for the chunkers: ASCII ones and everything beyond. */
static int is_word(unsigned c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       c >= 0x80;
}

/* ---- conversions ---------------------------------------------------------------------- */

static int to_text(const json_t *in, json_t **out, struct strata_error *err)
{
	char buf[64];
	int rc = 0;
	if (json_is_string(in)) {
		*out = json_incref((json_t *)in);
		return 0;
	}
	if (json_is_integer(in))
		snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(in));
	else if (json_is_real(in))
		eng_real_str(json_real_value(in), buf, sizeof buf);
	else if (json_is_boolean(in))
		snprintf(buf, sizeof buf, "%s", json_is_true(in) ? "true" : "false");
	else {
		char *s = eng_json_dump(in, 0);
		if (!s)
			return base_nomem(err, "to_string");
		*out = str_or_nomem(s, strlen(s), err, &rc);
		base_strfree(s);
		return rc;
	}
	*out = str_or_nomem(buf, strlen(buf), err, &rc);
	return rc;
}

/* to_int, to_long (integral), to_float, to_double. */
static int to_number(const json_t *in, int integral, int bits32, json_t **out,
                     struct strata_error *err)
{
	double v;
	if (json_is_number(in)) {
		v = json_number_value(in);
	} else if (json_is_boolean(in)) {
		v = json_is_true(in);
	} else if (json_is_string(in)) {
		char *end;
		const char *s = json_string_value(in);
		v = strtod(s, &end);
		while (is_space((unsigned char)*end))
			end++;
		if (end == s || *end)
			return base_err(err, STRATA_INVALID_ARGUMENT, "'%.60s' is not a number", s);
	} else {
		return base_err(err, STRATA_INVALID_ARGUMENT, "a collection is not a number");
	}
	if (integral) {
		if (!(v > -9223372036854775808.0 && v < 9223372036854775808.0) ||
		    (bits32 && (v < -2147483648.0 || v > 2147483647.0)))
			return base_err(err, STRATA_INVALID_ARGUMENT, "%g is out of range for %s", v,
			                bits32 ? "int" : "long");
		*out = json_integer((json_int_t)v);
	} else {
		*out = json_real(v);
	}
	return *out ? 0 : base_nomem(err, "an indexing value");
}

/* ---- strings -------------------------------------------------------------------------- */

static int split(const json_t *in, const char *pattern, json_t **out, struct strata_error *err)
{
	regex_t re;
	if (regcomp(&re, pattern, REG_EXTENDED)) /* compiled once at deploy already */
		return base_err(err, STRATA_INVALID_ARGUMENT, "split: bad regular expression");
	const char *s = json_string_value(in);
	size_t n = json_string_length(in), at = 0, keep = 0;
	json_t *a = json_array();
	int rc = a ? 0 : base_nomem(err, "split");
	while (!rc && n > 0 && at <= n) {
		regmatch_t m;
		int flags = at > 0 ? REG_NOTBOL : 0;
		size_t end = n, next = n + 1;
		if (at < n && regexec(&re, s + at, 1, &m, flags) == 0) {
			end = at + (size_t)m.rm_so;
			next = at + (size_t)m.rm_eo;
			if (m.rm_eo == 0) { /* an empty match: cut after one character */
				size_t i = at;
				next_cp(s, n, &i);
				end = next = i;
			}
		}
		json_t *e = json_stringn_nocheck(s + at, end - at);
		if (!e || json_array_append_new(a, e))
			rc = base_nomem(err, "split");
		if (end > at)
			keep = json_array_size(a);
		at = next;
	}
	regfree(&re);
	/* Empty strings at the end are dropped. */
	while (!rc && json_array_size(a) > keep)
		json_array_remove(a, json_array_size(a) - 1);
	if (rc) {
		json_decref(a);
		return rc;
	}
	*out = a;
	return 0;
}

static int join(const json_t *in, const char *sep, json_t **out, struct strata_error *err)
{
	size_t cap = 64, len = 0, i;
	json_t *e;
	char *b = base_alloc(cap);
	int rc = b ? 0 : base_nomem(err, "join");
	json_array_foreach(in, i, e) {
		json_t *t = NULL;
		if (rc || (rc = to_text(e, &t, err)) != 0)
			break;
		size_t sl = i ? strlen(sep) : 0, tl = json_string_length(t);
		if (len + sl + tl + 1 > cap &&
		    (rc = base_grow((void **)&b, &cap, len + sl + tl + 1, 1, (size_t)1 << 30)) != 0)
			rc = rc == STRATA_NOMEM ? base_nomem(err, "join") : base_err(err, rc, "join: too long");
		if (!rc) {
			memcpy(b + len, sep, sl);
			memcpy(b + len + sl, json_string_value(t), tl);
			len += sl + tl;
		}
		json_decref(t);
	}
	if (!rc)
		*out = str_or_nomem(b ? b : "", len, err, &rc);
	if (b)
		base_free(b, cap);
	return rc;
}

static int substring(const json_t *in, double from, double to, json_t **out,
                     struct strata_error *err)
{
	const char *s = json_string_value(in);
	size_t n = json_string_length(in), i = 0, start = n, end = n;
	for (long k = 0; i <= n; k++) {
		if (k == (long)from)
			start = i;
		if (k == (long)to || i == n) {
			end = i;
			break;
		}
		next_cp(s, n, &i);
	}
	int rc;
	*out = str_or_nomem(s + start, end > start ? end - start : 0, err, &rc);
	return rc;
}

static int trim(const json_t *in, json_t **out, struct strata_error *err)
{
	const char *s = json_string_value(in);
	size_t a = 0, b = json_string_length(in);
	while (a < b && is_space((unsigned char)s[a]))
		a++;
	while (b > a && is_space((unsigned char)s[b - 1]))
		b--;
	int rc;
	*out = str_or_nomem(s + a, b - a, err, &rc);
	return rc;
}

/* ---- times and hex ------------------------------------------------------------------ */

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian). */
static long long days_from_civil(long long y, int m, int d)
{
	y -= m <= 2;
	long long era = (y >= 0 ? y : y - 399) / 400;
	long long yoe = y - era * 400;
	long long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	long long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

/* "YYYY-MM-DDTHH:MM:SS[.fff][Z | +HH:MM | -HH:MM]" into seconds since 1970. */
static int epoch_second(const json_t *in, json_t **out, struct strata_error *err)
{
	const char *s = json_string_value(in);
	int y, mo, d, h, mi, sec, used = 0, oh = 0, om = 0;
	if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &used) != 6 ||
	    mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60 || h < 0 ||
	    mi < 0 || sec < 0)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "to_epoch_second: '%.60s' is not an ISO-8601 time", s);
	const char *t = s + used;
	if (*t == '.')
		for (t++; *t >= '0' && *t <= '9'; t++)
			;
	int sign = *t == '-' ? -1 : 1, n = 0;
	if (*t == 'Z' || *t == 'z')
		t++;
	else if ((*t == '+' || *t == '-') &&
	         (sscanf(t + 1, "%2d:%2d%n", &oh, &om, &n) == 2 || sscanf(t + 1, "%2d%2d%n", &oh, &om, &n) == 2))
		t += 1 + n;
	if (*t)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "to_epoch_second: '%.60s' is not an ISO-8601 time", s);
	long long v = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec -
	              sign * (oh * 3600 + om * 60);
	*out = json_integer((json_int_t)v);
	return *out ? 0 : base_nomem(err, "to_epoch_second");
}

static int hex_encode(const json_t *in, json_t **out, struct strata_error *err)
{
	char buf[24];
	double d = json_number_value(in);
	if (json_is_real(in) && !(d > -9223372036854775808.0 && d < 9223372036854775808.0))
		return base_err(err, STRATA_INVALID_ARGUMENT, "hex_encode: %g is out of range", d);
	long long v = json_is_integer(in) ? (long long)json_integer_value(in) : (long long)d;
	snprintf(buf, sizeof buf, "%llx", (unsigned long long)v);
	int rc;
	*out = str_or_nomem(buf, strlen(buf), err, &rc);
	return rc;
}

static int hex_decode(const json_t *in, json_t **out, struct strata_error *err)
{
	const char *s = json_string_value(in);
	size_t n = json_string_length(in);
	uint64_t v;
	if (base_hex_value(s, n, &v) < 0)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "hex_decode: '%.60s' is not 1 to 16 hex digits", s);
	*out = json_integer((json_int_t)(long long)v);
	return *out ? 0 : base_nomem(err, "hex_decode");
}

/* ---- chunkers ------------------------------------------------------------------------- */

static int is_sentence_end(unsigned c)
{
	return c == '.' || c == '!' || c == '?' || c == 0x203d || c == 0x1362 || c == 0x964 ||
	       c == 0x965 || c == 0x2e2e || c == 0x61f || c == 0xff01 || c == 0xff1f ||
	       c == 0xff61 || c == 0x3002;
}

static int is_symbol(unsigned c)
{
	return c == '$' || c == '+' || c == '<' || c == '=' || c == '>' || c == '^' || c == '`' ||
	       c == '|' || c == '~';
}

int eng_ix_chunk(const json_t *in, const char *chunker, long length, json_t **out,
                 struct strata_error *err)
{
	const char *s = json_string_value(in);
	size_t n = json_string_length(in), i = 0, from = 0;
	int sentence = strcmp(chunker, "sentence") == 0;
	long count = 0;
	int content = 0;
	json_t *a = json_array();
	if (!a)
		return base_nomem(err, "chunk");
	while (i < n) {
		unsigned c = next_cp(s, n, &i);
		int cut;
		if (sentence) {
			size_t j = i;
			cut = content && is_sentence_end(c) && !(j < n && is_sentence_end(next_cp(s, n, &j)));
			content = !cut && (content || is_word(c) || is_symbol(c));
		} else {
			cut = ++count >= length && !is_word(c);
		}
		if (cut || i == n) {
			json_t *e = json_stringn_nocheck(s + from, i - from);
			if (!e || json_array_append_new(a, e)) {
				json_decref(a);
				return base_nomem(err, "chunk");
			}
			from = i;
			count = 0;
		}
	}
	*out = a;
	return 0;
}

/* ---- tensors -------------------------------------------------------------------------- */

/* A copy of j with every number v made (v > threshold) (labels are
 * strings: only cell values are numbers). */
static json_t *binarize(const json_t *j, double threshold)
{
	if (json_is_number(j))
		return json_integer(json_number_value(j) > threshold);
	if (json_is_array(j)) {
		json_t *a = json_array(), *e;
		size_t i;
		json_array_foreach(j, i, e) {
			if (!a || json_array_append_new(a, binarize(e, threshold))) {
				json_decref(a);
				return NULL;
			}
		}
		return a;
	}
	if (json_is_object(j)) {
		json_t *o = json_object(), *e;
		const char *k;
		json_object_foreach((json_t *)j, k, e) {
			if (!o || json_object_set_new(o, k, binarize(e, threshold))) {
				json_decref(o);
				return NULL;
			}
		}
		return o;
	}
	return json_incref((json_t *)j);
}

/* The cells of one dense dimension (an array of 0 and 1, or any numbers
 * when lenient: > 0 is 1) packed 8 to an int8, the first in the highest
 * bit. */
static json_t *pack(const json_t *cells, int lenient, const char *what, struct strata_error *err)
{
	size_t n = json_array_size(cells);
	json_t *a = json_array();
	if (!a) {
		base_nomem(err, "pack_bits");
		return NULL;
	}
	for (size_t i = 0; i < n; i += 8) {
		int byte = 0;
		for (size_t k = 0; k < 8 && i + k < n; k++) {
			const json_t *c = json_array_get(cells, i + k);
			double v = json_number_value(c);
			if (!json_is_number(c) || (!lenient && v != 0 && v != 1)) {
				json_decref(a);
				base_err(err, STRATA_INVALID_ARGUMENT,
				         "pack_bits: %s cell %zu is not 0 or 1 (binarize it first)", what, i + k);
				return NULL;
			}
			if (v > 0)
				byte |= 1 << (7 - k);
		}
		if (json_array_append_new(a, json_integer(byte >= 128 ? byte - 256 : byte))) {
			json_decref(a);
			base_nomem(err, "pack_bits");
			return NULL;
		}
	}
	return a;
}

int eng_ix_pack_bits(const json_t *in, int lenient, json_t **out, struct strata_error *err)
{
	const json_t *values = json_object_get(in, "values");
	const json_t *blocks = json_object_get(in, "blocks");
	json_t *o = json_object();
	if (!o)
		return base_nomem(err, "pack_bits");
	if (json_is_array(values) && !json_is_array(json_array_get(values, 0))) {
		json_t *p = pack(values, lenient, "the", err);
		if (!p || json_object_set_new(o, "values", p))
			goto fail;
	} else if (json_is_object(blocks)) {
		json_t *b = json_object(), *e;
		const char *k;
		if (!b || json_object_set_new(o, "blocks", b))
			goto nomem;
		json_object_foreach((json_t *)blocks, k, e) {
			json_t *p = json_is_array(e) ? pack(e, lenient, "a block's", err) : NULL;
			if (!json_is_array(e))
				base_err(err, STRATA_INVALID_ARGUMENT, "pack_bits: block '%s' is not a list", k);
			if (!p || json_object_set_new(b, k, p))
				goto fail;
		}
	} else {
		base_err(err, STRATA_INVALID_ARGUMENT,
		         "pack_bits takes a tensor with one indexed dimension ({\"values\": [...]}) or "
		         "blocks of one ({\"blocks\": {...}})");
		goto fail;
	}
	*out = o;
	return 0;
nomem:
	base_nomem(err, "pack_bits");
fail:
	json_decref(o);
	return err ? err->code : STRATA_INVALID_ARGUMENT;
}

/* ---- by function ---------------------------------------------------------------------- */

static const char *kind_name(const json_t *j)
{
	return json_is_string(j) ? "a string" : json_is_number(j) ? "a number"
	     : json_is_boolean(j) ? "a bool" : json_is_array(j) ? "an array" : "an object";
}

int eng_ix_func(const struct rank_ix *n, const json_t *in, json_t **out, struct strata_error *err)
{
	static const char *const names[] = {
		"", "to_array", "to_string", "to_int", "to_long", "to_float", "to_double", "to_bool",
		"lowercase", "trim", "normalize", "split", "join", "substring", "hash", "now",
		"binarize", "pack_bits", "set_language", "to_epoch_second", "hex_encode", "hex_decode",
		"to_wset", "set_var", "get_var",
	};
	int op = n->op;
	*out = NULL;
	if (op == RANK_IXF_NOW) {
		*out = json_integer((json_int_t)time(NULL));
		return *out ? 0 : base_nomem(err, "now");
	}
	if (!in)
		return 0; /* none in, none out */
	int text = op == RANK_IXF_LOWERCASE || op == RANK_IXF_TRIM || op == RANK_IXF_NORMALIZE ||
	           op == RANK_IXF_SPLIT || op == RANK_IXF_SUBSTRING || op == RANK_IXF_HASH ||
	           op == RANK_IXF_TO_EPOCH_SECOND || op == RANK_IXF_HEX_DECODE;
	if ((text && !json_is_string(in)) || (op == RANK_IXF_JOIN && !json_is_array(in)) ||
	    ((op == RANK_IXF_BINARIZE || op == RANK_IXF_PACK_BITS) && !json_is_object(in)) ||
	    (op == RANK_IXF_HEX_ENCODE && !json_is_number(in)))
		return base_err(err, STRATA_INVALID_ARGUMENT, "%s cannot take %s", names[op],
		                kind_name(in));
	int rc = 0;
	switch (op) {
	case RANK_IXF_TO_ARRAY:
		if (json_is_array(in))
			*out = json_incref((json_t *)in);
		else if ((*out = json_array()) && json_array_append((json_t *)*out, (json_t *)in))
			json_decref(*out), *out = NULL;
		return *out ? 0 : base_nomem(err, "to_array");
	case RANK_IXF_TO_STRING: return to_text(in, out, err);
	case RANK_IXF_TO_INT: return to_number(in, 1, 1, out, err);
	case RANK_IXF_TO_LONG: return to_number(in, 1, 0, out, err);
	case RANK_IXF_TO_FLOAT:
	case RANK_IXF_TO_DOUBLE: return to_number(in, 0, 0, out, err);
	case RANK_IXF_TO_BOOL:
		if (json_is_string(in))
			*out = json_boolean(json_string_length(in) > 0 &&
			                    strcmp(json_string_value(in), "false") != 0);
		else
			*out = json_boolean(json_is_true(in) || (json_is_number(in) && json_number_value(in) != 0));
		return 0;
	case RANK_IXF_LOWERCASE: return map_text(in, 0, out, err);
	case RANK_IXF_NORMALIZE: return map_text(in, 1, out, err);
	case RANK_IXF_TRIM: return trim(in, out, err);
	case RANK_IXF_SPLIT: return split(in, n->str, out, err);
	case RANK_IXF_JOIN: return join(in, n->str, out, err);
	case RANK_IXF_SUBSTRING: return substring(in, n->num, n->num2, out, err);
	case RANK_IXF_HASH: {
		uint64_t h = base_hash64(json_string_value(in), json_string_length(in), 0);
		*out = json_integer(n->num == 32 ? (json_int_t)(int32_t)(uint32_t)h : (json_int_t)(int64_t)h);
		return *out ? 0 : base_nomem(err, "hash");
	}
	case RANK_IXF_BINARIZE:
		*out = binarize(in, n->num);
		return *out ? 0 : base_nomem(err, "binarize");
	case RANK_IXF_PACK_BITS: return eng_ix_pack_bits(in, 0, out, err);
	case RANK_IXF_PASS:
		*out = json_incref((json_t *)in);
		return 0;
	case RANK_IXF_TO_EPOCH_SECOND: return epoch_second(in, out, err);
	case RANK_IXF_HEX_ENCODE: return hex_encode(in, out, err);
	case RANK_IXF_HEX_DECODE: return hex_decode(in, out, err);
	case RANK_IXF_TO_WSET: {
		json_t *key = NULL;
		if (json_is_string(in))
			key = json_incref((json_t *)in);
		else if (json_is_integer(in) && (rc = to_text(in, &key, err)) != 0)
			return rc;
		if (!key)
			return base_err(err, STRATA_INVALID_ARGUMENT, "to_wset takes a string or an "
			                "integer, not %s", kind_name(in));
		*out = json_object();
		if (*out && json_object_set_new(*out, json_string_value(key), json_integer(1)))
			json_decref(*out), *out = NULL;
		json_decref(key);
		return *out ? 0 : base_nomem(err, "to_wset");
	}
	}
	(void)rc;
	return base_err(err, STRATA_NOT_IMPLEMENTED, "indexing function %d", op);
}
