/*
 * window.c: sliding-window geometry for ops/conv.c and ops/pool.c.
 *
 * Attributes are checked once at load (rt_window_check) and bounded so that
 * every later product stays far from int64 overflow: kernel extents,
 * strides and dilations lie in [1, 2^31], pads in [0, 2^31].  At run time
 * rt_window_make() derives the output extents from the actual input dims,
 * following the ONNX formulas:
 *   explicit pads   out = floor_or_ceil((in + pb + pe - ek) / s) + 1
 *   SAME_UPPER/LOWER out = ceil(in / s), the pad total split with the odd
 *                    cell at the end (UPPER) or the start (LOWER)
 *   VALID           out = floor((in - ek) / s) + 1, no pads
 * where ek = (k - 1) * d + 1 is the dilated kernel extent.  With ceil_mode a
 * last window that would start inside the trailing pad is dropped, so every
 * window covers at least one input cell.
 */
#include <string.h>

#include "window.h"

#define LIM ((int64_t)1 << 31)

int64_t rt_window_cells(int r, const int64_t *dims)
{
	int64_t c = 1;
	for (int i = 0; i < r; i++) {
		if (dims[i] < 0)
			return -1;
		if (dims[i] != 0 && c > ((int64_t)1 << 48) / dims[i])
			return -1;
		c *= dims[i];
	}
	return c;
}

int rt_window_autopad(const struct rt_node *n)
{
	const char *a = rt_attr_string(n, "auto_pad", "NOTSET");
	if (strcmp(a, "NOTSET") == 0 || a[0] == 0)
		return RT_AUTOPAD_NOTSET;
	if (strcmp(a, "SAME_UPPER") == 0)
		return RT_AUTOPAD_SAME_UPPER;
	if (strcmp(a, "SAME_LOWER") == 0)
		return RT_AUTOPAD_SAME_LOWER;
	if (strcmp(a, "VALID") == 0)
		return RT_AUTOPAD_VALID;
	return -1;
}

/* One INTS attribute: every value in [lo, hi], count recorded in *len
 * (-1 when absent).  Returns 0 or the error. */
static int check_list(const struct rt_node *n, const char *name, int64_t lo, int64_t hi,
                      long *len, struct strata_error *err)
{
	const struct rt_attr *a = rt_attr_find(n, name);
	*len = -1;
	if (!a)
		return 0;
	if (a->type != RT_ATTR_INTS)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "attribute %s must be a list of ints",
		                   name);
	for (size_t i = 0; i < a->n; i++)
		if (a->ints[i] < lo || a->ints[i] > hi)
			return rt_node_err(n, err, STRATA_INVALID_GRAPH,
			                   "%s[%zu] = %lld is outside [%lld, %lld]", name, i,
			                   (long long)a->ints[i], (long long)lo, (long long)hi);
	*len = (long)a->n;
	return 0;
}

int rt_window_check(const struct rt_node *n, int need_kernel, struct strata_error *err)
{
	long lk, ls, ld, lp;
	int rc;
	if ((rc = check_list(n, "kernel_shape", 1, LIM, &lk, err)) ||
	    (rc = check_list(n, "strides", 1, LIM, &ls, err)) ||
	    (rc = check_list(n, "dilations", 1, LIM, &ld, err)) ||
	    (rc = check_list(n, "pads", 0, LIM, &lp, err)))
		return rc;
	if (need_kernel && lk < 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "missing attribute kernel_shape");
	long r = lk >= 0 ? lk : ls >= 0 ? ls : ld >= 0 ? ld : lp >= 0 ? lp / 2 : -1;
	if (r == 0 || r > RT_WINDOW_MAX)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH,
		                   "%ld spatial dimensions (1 to %d supported)", r, RT_WINDOW_MAX);
	if ((lk >= 0 && lk != r) || (ls >= 0 && ls != r) || (ld >= 0 && ld != r) ||
	    (lp >= 0 && lp != 2 * r))
		return rt_node_err(n, err, STRATA_INVALID_GRAPH,
		                   "kernel_shape, strides, dilations and pads disagree on the "
		                   "number of spatial dimensions");
	if (rt_window_autopad(n) < 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "unknown auto_pad \"%s\"",
		                   rt_attr_string(n, "auto_pad", ""));
	return 0;
}

/* Copy the INTS attribute name (r entries) into dst, or fill it with dflt. */
static int get_list(struct rt_exec *x, const struct rt_node *n, const char *name, int r,
                    int64_t dflt, int64_t *dst)
{
	size_t c;
	const int64_t *v = rt_attr_ints(n, name, &c);
	if (!v) {
		for (int i = 0; i < r; i++)
			dst[i] = dflt;
		return 0;
	}
	if ((long)c != r)
		return rt_fail(x, n, STRATA_RUNTIME, "%s has %zu entries for %d spatial dimensions",
		               name, c, r);
	memcpy(dst, v, (size_t)r * sizeof *dst);
	return 0;
}

int rt_window_make(struct rt_exec *x, const struct rt_node *n, int r, const int64_t *in,
                   const int64_t *k, int ceil_mode, struct rt_window *w)
{
	if (r < 1 || r > RT_WINDOW_MAX)
		return rt_fail(x, n, STRATA_RUNTIME, "%d spatial dimensions (1 to %d supported)", r,
		               RT_WINDOW_MAX);
	memset(w, 0, sizeof *w);
	w->r = r;
	int64_t pads[2 * RT_WINDOW_MAX];
	int rc;
	if ((rc = get_list(x, n, "strides", r, 1, w->s)) ||
	    (rc = get_list(x, n, "dilations", r, 1, w->d)) ||
	    (rc = get_list(x, n, "pads", 2 * r, 0, pads)))
		return rc;
	int ap = rt_window_autopad(n);
	for (int i = 0; i < r; i++) {
		if (k[i] < 1 || k[i] > LIM)
			return rt_fail(x, n, STRATA_RUNTIME, "kernel extent %lld out of range",
			               (long long)k[i]);
		w->in[i] = in[i];
		w->k[i] = k[i];
		int64_t ek = (k[i] - 1) * w->d[i] + 1, s = w->s[i], o;
		if (ap == RT_AUTOPAD_SAME_UPPER || ap == RT_AUTOPAD_SAME_LOWER) {
			o = (in[i] + s - 1) / s;
			int64_t tot = (o - 1) * s + ek - in[i];
			if (tot < 0)
				tot = 0;
			w->pb[i] = ap == RT_AUTOPAD_SAME_UPPER ? tot / 2 : tot - tot / 2;
			w->pe[i] = tot - w->pb[i];
		} else {
			if (ap == RT_AUTOPAD_NOTSET) {
				w->pb[i] = pads[i];
				w->pe[i] = pads[i + r];
			}
			int64_t span = in[i] + w->pb[i] + w->pe[i] - ek;
			if (span < 0)
				return rt_fail(x, n, STRATA_RUNTIME,
				               "kernel extent %lld exceeds the padded input %lld in "
				               "spatial dimension %d",
				               (long long)ek, (long long)(in[i] + w->pb[i] + w->pe[i]), i);
			o = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
			if (ceil_mode && (o - 1) * s >= in[i] + w->pb[i])
				o--;
		}
		if (o < 1)
			return rt_fail(x, n, STRATA_RUNTIME, "empty output in spatial dimension %d", i);
		w->out[i] = o;
	}
	return 0;
}
