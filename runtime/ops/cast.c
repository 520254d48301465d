/*
 * cast.c: Cast and CastLike, and what the other elementwise kernels share:
 * the cell converter (float16/bfloat16 through float, Pow's mixed types),
 * shape strings and the "no kernel for this type" error.  elementwise.c and
 * unary.c use it; it uses neither.
 *
 * Data flow: init() reads the target type (Cast's 'to' attribute, or
 * CastLike's second input) and keeps it in n->state as a plain integer, so
 * the node needs no allocation; run() converts the input cells into a new
 * output of the same shape.
 *
 * Conversions between the eleven native types (float, double, the eight
 * integer types, bool) are one generated loop per pair.  C leaves a float
 * that does not fit the target integer undefined; here such a value (NaN
 * included) becomes what the x86 truncating conversion gives: the most
 * negative value of int32 or int64, and narrower types take the low bits of
 * the int32 or int64 result, which is what numpy and ONNX Runtime produce on
 * this machine.  float16 and bfloat16 go through float, a block at a time in
 * a stack buffer, rounding to nearest even.  Strings parse with strtod /
 * strtoll.
 *
 * Numbers become strings the way numpy prints them (the form the ONNX
 * reference produces): floats in the shortest decimal form that reads back
 * to the same value of their own type, positional between 1e-4 and 1e16
 * ("0.5", "100.0"), scientific outside ("1e-05", "1.5e+16"), and "nan",
 * "inf", "-inf"; integers in decimal; booleans "True" and "False".  The
 * cells are drawn with rt_string(), so they outlive the node.
 *
 * float to bfloat16 before opset 19: that version's specification says
 * nothing about rounding, and its reference (the backend test data) keeps
 * the upper 16 bits of the float, i.e. truncates; opset 19 makes rounding
 * to nearest even explicit.  Cast and CastLike below opset 19 therefore
 * truncate (a NaN stays a quiet NaN), and round from 19 on.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elementwise.h"

/* -O2 in gcc 12 vectorizes only loops whose trip count is a multiple of the
 * vector width; these loops run over any count and may need a run-time
 * alias check, so they ask for the ordinary cost model. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=dynamic")
#endif

int rt_ew_is_half(int dt)
{
	return dt == BASE_DT_FLOAT16 || dt == BASE_DT_BFLOAT16;
}

int rt_ew_no_kernel(const struct rt_node *n, int dt, struct strata_error *err)
{
	return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED, "%s (opset %d) has no kernel for type %s",
	                   n->op, n->opset, base_dtype_name(dt));
}

const char *rt_ew_shape_str(const struct rt_tensor *t, char *buf, size_t size)
{
	size_t k = 0;
	if (size == 0)
		return buf;
	buf[0] = 0;
	k += (size_t)snprintf(buf + k, size - k, "[");
	for (int i = 0; i < t->rank && k < size; i++)
		k += (size_t)snprintf(buf + k, size - k, "%s%lld", i ? "," : "",
		                      (long long)t->dims[i]);
	if (k < size)
		snprintf(buf + k, size - k, "]");
	return buf;
}

/* ---- float to integer without undefined behaviour ------------------------------ */

static inline int32_t f2i32(double v)
{
	return (v > -2147483649.0 && v < 2147483648.0) ? (int32_t)v : INT32_MIN;
}

static inline int64_t f2i64(double v)
{
	return (v >= -9223372036854775808.0 && v < 9223372036854775808.0) ? (int64_t)v : INT64_MIN;
}

static inline int8_t f2i_int8_t(double v) { return (int8_t)f2i32(v); }
static inline int16_t f2i_int16_t(double v) { return (int16_t)f2i32(v); }
static inline int32_t f2i_int32_t(double v) { return f2i32(v); }
static inline int64_t f2i_int64_t(double v) { return f2i64(v); }
static inline uint8_t f2i_uint8_t(double v) { return (uint8_t)f2i32(v); }
static inline uint16_t f2i_uint16_t(double v) { return (uint16_t)f2i32(v); }
static inline uint32_t f2i_uint32_t(double v) { return (uint32_t)f2i64(v); }
static inline uint64_t f2i_uint64_t(double v)
{
	if (v >= 9223372036854775808.0 && v < 18446744073709551616.0)
		return (uint64_t)v;
	return (uint64_t)f2i64(v);
}

/* ---- the native converters --------------------------------------------------------- */

typedef void convfn(const void *src, void *dst, int64_t n);

#define CV_PLAIN(DT, v) ((DT)(v))
#define CV_BOOL(DT, v) ((DT)((v) != 0))
#define CV_F2I(DT, v) f2i_##DT(v)

/* X(source name, source C type, dest name, dest C type, conversion) with
 * the conversion chosen by whether the source is a float (CF) or not (CI). */
#define SOURCES(X, D, DT, CI, CF)     \
	X(FLOAT, float, D, DT, CF)    \
	X(DOUBLE, double, D, DT, CF)  \
	X(INT8, int8_t, D, DT, CI)    \
	X(INT16, int16_t, D, DT, CI)  \
	X(INT32, int32_t, D, DT, CI)  \
	X(INT64, int64_t, D, DT, CI)  \
	X(UINT8, uint8_t, D, DT, CI)  \
	X(UINT16, uint16_t, D, DT, CI) \
	X(UINT32, uint32_t, D, DT, CI) \
	X(UINT64, uint64_t, D, DT, CI) \
	X(BOOL, uint8_t, D, DT, CI)

#define CONV_DEF(S, ST, D, DT, CV)                                         \
	static void conv_##S##_##D(const void *ps, void *pd, int64_t n)    \
	{                                                                  \
		const ST *s = ps;                                          \
		DT *d = pd;                                                \
		for (int64_t i = 0; i < n; i++)                            \
			d[i] = CV(DT, s[i]);                               \
	}

#define DESTS(X)                                  \
	X(FLOAT, float, CV_PLAIN, CV_PLAIN)       \
	X(DOUBLE, double, CV_PLAIN, CV_PLAIN)     \
	X(INT8, int8_t, CV_PLAIN, CV_F2I)         \
	X(INT16, int16_t, CV_PLAIN, CV_F2I)       \
	X(INT32, int32_t, CV_PLAIN, CV_F2I)       \
	X(INT64, int64_t, CV_PLAIN, CV_F2I)       \
	X(UINT8, uint8_t, CV_PLAIN, CV_F2I)       \
	X(UINT16, uint16_t, CV_PLAIN, CV_F2I)     \
	X(UINT32, uint32_t, CV_PLAIN, CV_F2I)     \
	X(UINT64, uint64_t, CV_PLAIN, CV_F2I)     \
	X(BOOL, uint8_t, CV_BOOL, CV_BOOL)

#define GEN_DEST(D, DT, CI, CF) SOURCES(CONV_DEF, D, DT, CI, CF)
DESTS(GEN_DEST)

#define ENTRY(S, D) [BASE_DT_##D] = conv_##S##_##D,
#define ROW(S)                                                                    \
	[BASE_DT_##S] = { ENTRY(S, FLOAT) ENTRY(S, DOUBLE) ENTRY(S, INT8) ENTRY(S, INT16) \
	                  ENTRY(S, INT32) ENTRY(S, INT64) ENTRY(S, UINT8) ENTRY(S, UINT16) \
	                  ENTRY(S, UINT32) ENTRY(S, UINT64) ENTRY(S, BOOL) },

static convfn *const conv_tab[BASE_DT_COUNT][BASE_DT_COUNT] = {
	ROW(FLOAT) ROW(DOUBLE) ROW(INT8) ROW(INT16) ROW(INT32) ROW(INT64)
	ROW(UINT8) ROW(UINT16) ROW(UINT32) ROW(UINT64) ROW(BOOL)
};

static int valid_dt(int dt)
{
	return dt > 0 && dt < BASE_DT_COUNT;
}

static int is_native(int dt)
{
	return valid_dt(dt) && conv_tab[dt][dt] != NULL;
}

int rt_ew_convertible(int sdt, int ddt)
{
	return (is_native(sdt) || rt_ew_is_half(sdt)) && (is_native(ddt) || rt_ew_is_half(ddt));
}

static void widen(int dt, const uint16_t *src, float *dst, int64_t n)
{
	if (dt == BASE_DT_FLOAT16)
		for (int64_t i = 0; i < n; i++)
			dst[i] = base_f16_to_f32(src[i]);
	else
		for (int64_t i = 0; i < n; i++)
			dst[i] = base_bf16_to_f32(src[i]);
}

static void narrow(int dt, const float *src, uint16_t *dst, int64_t n)
{
	if (dt == BASE_DT_FLOAT16)
		for (int64_t i = 0; i < n; i++)
			dst[i] = base_f32_to_f16(src[i]);
	else
		for (int64_t i = 0; i < n; i++)
			dst[i] = base_f32_to_bf16(src[i]);
}

int rt_ew_convert(int sdt, const void *src, int ddt, void *dst, int64_t n)
{
	if (!rt_ew_convertible(sdt, ddt))
		return STRATA_NOT_IMPLEMENTED;
	if (n <= 0)
		return 0;
	if (sdt == ddt && sdt != BASE_DT_BOOL) {
		memcpy(dst, src, (size_t)n * base_dtype_size(sdt));
		return 0;
	}
	if (!rt_ew_is_half(sdt) && !rt_ew_is_half(ddt)) {
		conv_tab[sdt][ddt](src, dst, n);
		return 0;
	}
	/* Through float, a block at a time. */
	enum { BLOCK = 256 };
	float buf[BLOCK];
	size_t ss = base_dtype_size(sdt), ds = base_dtype_size(ddt);
	const char *s = src;
	char *d = dst;
	for (int64_t off = 0; off < n; off += BLOCK) {
		int64_t m = n - off < BLOCK ? n - off : BLOCK;
		if (rt_ew_is_half(sdt))
			widen(sdt, (const uint16_t *)(s + off * (int64_t)ss), buf, m);
		else
			conv_tab[sdt][BASE_DT_FLOAT](s + off * (int64_t)ss, buf, m);
		if (rt_ew_is_half(ddt))
			narrow(ddt, buf, (uint16_t *)(d + off * (int64_t)ds), m);
		else
			conv_tab[BASE_DT_FLOAT][ddt](buf, d + off * (int64_t)ds, m);
	}
	return 0;
}

int rt_ew_as(struct rt_exec *x, const struct rt_node *n, const struct rt_tensor *t, int dt,
             struct rt_tensor *view)
{
	*view = *t;
	if (t->dtype == dt)
		return 0;
	int64_t count = runtime_tensor_count(t);
	size_t bytes = (size_t)count * base_dtype_size(dt);
	view->dtype = dt;
	view->data = rt_scratch(x, bytes ? bytes : 1);
	if (!view->data)
		return rt_nomem(x, n, "scratch of %zu bytes", bytes);
	if (rt_ew_convert(t->dtype, t->data, dt, view->data, count) != 0)
		return rt_fail(x, n, STRATA_NOT_IMPLEMENTED, "no conversion from %s to %s",
		               base_dtype_name(t->dtype), base_dtype_name(dt));
	return 0;
}

/* ---- strings ------------------------------------------------------------------------ */

static int only_space(const char *s)
{
	while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
		s++;
	return *s == 0;
}

/* Parse string s into one cell of type dt at dst.  Integers parse exactly
 * when written as integers; anything else goes through strtod. */
static int parse_cell(const char *s, int dt, void *dst)
{
	char *end;
	if (!s)
		return -1;
	if (dt == BASE_DT_BOOL) {
		if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE")) {
			*(uint8_t *)dst = 1;
			return 0;
		}
		if (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "FALSE")) {
			*(uint8_t *)dst = 0;
			return 0;
		}
	}
	if (dt != BASE_DT_FLOAT && dt != BASE_DT_DOUBLE && !rt_ew_is_half(dt) &&
	    dt != BASE_DT_BOOL) {
		errno = 0;
		if (dt == BASE_DT_UINT64) {
			unsigned long long u = strtoull(s, &end, 10);
			if (end != s && errno == 0 && only_space(end) && !strchr(s, '-')) {
				uint64_t v = u;
				return rt_ew_convert(BASE_DT_UINT64, &v, dt, dst, 1);
			}
		} else {
			long long l = strtoll(s, &end, 10);
			if (end != s && errno == 0 && only_space(end)) {
				int64_t v = l;
				return rt_ew_convert(BASE_DT_INT64, &v, dt, dst, 1);
			}
		}
	}
	double d = strtod(s, &end);
	if (end == s || !only_space(end))
		return -1;
	return rt_ew_convert(BASE_DT_DOUBLE, &d, dt, dst, 1);
}

/* ---- numbers to strings -------------------------------------------------------------- */

/* Does the decimal text s read back to v in type dt (float, double,
 * float16 or bfloat16)? */
static int reads_back(const char *s, int dt, double v)
{
	switch (dt) {
	case BASE_DT_DOUBLE: return strtod(s, NULL) == v;
	case BASE_DT_FLOAT: return strtof(s, NULL) == (float)v;
	case BASE_DT_FLOAT16: return base_f16_to_f32(base_f32_to_f16(strtof(s, NULL))) == (float)v;
	default: return base_bf16_to_f32(base_f32_to_bf16(strtof(s, NULL))) == (float)v;
	}
}

/* Format v (a value of type dt, finite or not) as numpy prints it into buf
 * (at least 48 bytes); the length. */
static size_t format_real(double v, int dt, char *buf)
{
	if (isnan(v))
		return (size_t)snprintf(buf, 48, "nan");
	if (isinf(v))
		return (size_t)snprintf(buf, 48, v < 0 ? "-inf" : "inf");
	/* The fewest significant digits that read back to v. */
	char e[40];
	int maxp = dt == BASE_DT_DOUBLE ? 17 : 9;
	for (int p = 1; p <= maxp; p++) {
		snprintf(e, sizeof e, "%.*e", p - 1, v);
		if (reads_back(e, dt, v))
			break;
	}
	/* e is "-d.ddde+XX": split it into sign, digits and exponent. */
	char digits[24];
	size_t nd = 0;
	const char *c = e;
	int neg = *c == '-';
	if (neg)
		c++;
	for (; *c && *c != 'e'; c++)
		if (*c >= '0' && *c <= '9' && nd < sizeof digits - 1)
			digits[nd++] = *c;
	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	digits[nd] = 0;
	int ex = *c == 'e' ? atoi(c + 1) : 0;
	double a = fabs(v);
	size_t k = 0;
	if (neg)
		buf[k++] = '-';
	if (a == 0 || (a >= 1e-4 && a < 1e16)) {
		if (ex < 0) {
			buf[k++] = '0';
			buf[k++] = '.';
			for (int i = 0; i < -ex - 1; i++)
				buf[k++] = '0';
			for (size_t i = 0; i < nd; i++)
				buf[k++] = digits[i];
		} else {
			for (int i = 0; i <= ex; i++)
				buf[k++] = (size_t)i < nd ? digits[i] : '0';
			buf[k++] = '.';
			if ((size_t)ex + 1 < nd)
				for (size_t i = (size_t)ex + 1; i < nd; i++)
					buf[k++] = digits[i];
			else
				buf[k++] = '0';
		}
		buf[k] = 0;
		return k;
	}
	buf[k++] = digits[0];
	if (nd > 1) {
		buf[k++] = '.';
		for (size_t i = 1; i < nd; i++)
			buf[k++] = digits[i];
	}
	k += (size_t)snprintf(buf + k, 48 - k, "e%c%02d", ex < 0 ? '-' : '+', ex < 0 ? -ex : ex);
	return k;
}

static int cells_to_strings(const struct rt_node *n, struct rt_exec *x,
                            const struct rt_tensor *in, char **out, int64_t count)
{
	char buf[48];
	for (int64_t i = 0; i < count; i++) {
		size_t len;
		const void *d = in->data;
		switch (in->dtype) {
		case BASE_DT_FLOAT: len = format_real(((const float *)d)[i], in->dtype, buf); break;
		case BASE_DT_DOUBLE: len = format_real(((const double *)d)[i], in->dtype, buf); break;
		case BASE_DT_FLOAT16:
			len = format_real(base_f16_to_f32(((const uint16_t *)d)[i]), in->dtype, buf);
			break;
		case BASE_DT_BFLOAT16:
			len = format_real(base_bf16_to_f32(((const uint16_t *)d)[i]), in->dtype, buf);
			break;
		case BASE_DT_BOOL:
			len = (size_t)snprintf(buf, sizeof buf, "%s",
			                       ((const uint8_t *)d)[i] ? "True" : "False");
			break;
		case BASE_DT_UINT64:
			len = (size_t)snprintf(buf, sizeof buf, "%llu",
			                       (unsigned long long)((const uint64_t *)d)[i]);
			break;
		default: {
			int64_t v;
			/* Every other integer fits int64 exactly. */
			if (rt_ew_convert(in->dtype, (const char *)d + i * (int64_t)base_dtype_size(in->dtype),
			                  BASE_DT_INT64, &v, 1) != 0)
				return rt_fail(x, n, STRATA_NOT_IMPLEMENTED, "no conversion from %s to string",
				               base_dtype_name(in->dtype));
			len = (size_t)snprintf(buf, sizeof buf, "%lld", (long long)v);
		}
		}
		if (!(out[i] = rt_string(x, buf, len)))
			return rt_nomem(x, n, "kernel scratch");
	}
	return 0;
}

/* float (or any convertible type, through float) to bfloat16 by keeping
 * the upper 16 bits: the opset < 19 behaviour (see the top of the file). */
static int to_bf16_truncating(const struct rt_node *n, struct rt_exec *x,
                              const struct rt_tensor *in, uint16_t *out, int64_t count)
{
	const float *f = in->data;
	if (in->dtype != BASE_DT_FLOAT) {
		float *tmp = rt_scratch(x, count > 0 ? (size_t)count * sizeof *tmp : 1);
		if (!tmp)
			return rt_nomem(x, n, "kernel scratch");
		if (rt_ew_convert(in->dtype, in->data, BASE_DT_FLOAT, tmp, count) != 0)
			return rt_fail(x, n, STRATA_NOT_IMPLEMENTED, "no conversion from %s to bfloat16",
			               base_dtype_name(in->dtype));
		f = tmp;
	}
	for (int64_t i = 0; i < count; i++) {
		uint32_t u;
		memcpy(&u, &f[i], sizeof u);
		uint16_t h = (uint16_t)(u >> 16);
		/* A NaN whose payload sits in the low bits would become infinity. */
		if (isnan(f[i]))
			h |= 0x0040;
		out[i] = h;
	}
	return 0;
}

/* ---- Cast and CastLike ---------------------------------------------------------------- */

static int target_of(const struct rt_node *n)
{
	return (int)(intptr_t)n->state;
}

static int run_cast(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *in = rt_input(x, n, 0);
	struct rt_tensor *out;
	int to = target_of(n), rc;

	if (!in)
		return rt_fail(x, n, STRATA_RUNTIME, "missing input");
	if ((rc = rt_output(x, n, 0, to, in->rank, in->dims, &out)) != 0)
		return rc;
	int64_t count = runtime_tensor_count(in);
	if (to == BASE_DT_STRING && in->dtype != BASE_DT_STRING)
		return cells_to_strings(n, x, in, out->data, count);
	if (to == BASE_DT_BFLOAT16 && in->dtype != BASE_DT_BFLOAT16 && in->dtype != BASE_DT_STRING &&
	    n->opset < 19)
		return to_bf16_truncating(n, x, in, out->data, count);
	if (in->dtype == BASE_DT_STRING) {
		char *const *s = in->data;
		if (to == BASE_DT_STRING) {
			/* The cells share the input's strings, as Identity would. */
			memcpy(out->data, s, (size_t)count * sizeof(char *));
			return 0;
		}
		size_t ds = base_dtype_size(to);
		for (int64_t i = 0; i < count; i++)
			if (parse_cell(s[i], to, (char *)out->data + i * (int64_t)ds) != 0)
				return rt_fail(x, n, STRATA_RUNTIME, "cell %lld: cannot read '%.40s' as %s",
				               (long long)i, s[i] ? s[i] : "", base_dtype_name(to));
		return 0;
	}
	if (rt_ew_convert(in->dtype, in->data, to, out->data, count) != 0)
		return rt_fail(x, n, STRATA_NOT_IMPLEMENTED, "no conversion from %s to %s",
		               base_dtype_name(in->dtype), base_dtype_name(to));
	return 0;
}

/* Check that from -> to has a kernel and set up the node. */
static int cast_setup(struct rt_node *n, struct rt_graph *g, int from, int to,
                      struct strata_error *err)
{
	if (n->nout < 1 || n->out[0] < 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "output 0 is missing");
	int ok = rt_ew_convertible(from, to) ||
	         (from == BASE_DT_STRING && (to == BASE_DT_STRING || rt_ew_convertible(to, to))) ||
	         (to == BASE_DT_STRING && rt_ew_convertible(from, from));
	if (!ok)
		return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED,
		                   "%s (opset %d) has no kernel from %s to %s", n->op, n->opset,
		                   base_dtype_name(from), valid_dt(to) ? base_dtype_name(to) : "?");
	rt_graph_set_dtype(g, n->out[0], to);
	/* The target type is all the kernel needs: kept in state as an integer. */
	n->state = (void *)(intptr_t)to;
	n->run = run_cast;
	return 0;
}

int rt_ew_cast_init(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	int from, rc;
	if ((rc = rt_node_input_dtype(n, g, 0, &from, err)) != 0)
		return rc;
	const struct rt_attr *a = rt_attr_find(n, "to");
	if (!a || a->type != RT_ATTR_INT)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "attribute 'to' is missing");
	if (a->i <= 0 || a->i > 1000)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "'to' = %lld is not a type",
		                   (long long)a->i);
	/* 'saturate' (opset 19) only concerns the float8 types, which have no
	 * kernel here, so it changes nothing. */
	if (!valid_dt((int)a->i))
		return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED,
		                   "Cast (opset %d) has no kernel from %s to type %lld", n->opset,
		                   base_dtype_name(from), (long long)a->i);
	return cast_setup(n, g, from, (int)a->i, err);
}

int rt_ew_castlike_init(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	int from, to, rc;
	if (n->nin != 2)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "takes 2 inputs, has %d", n->nin);
	if ((rc = rt_node_input_dtype(n, g, 0, &from, err)) || (rc = rt_node_input_dtype(n, g, 1, &to, err)))
		return rc;
	return cast_setup(n, g, from, to, err);
}
