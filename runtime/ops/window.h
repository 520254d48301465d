/*
 * window.h: the sliding-window geometry shared by ops/conv.c and ops/pool.c:
 * how kernel_shape, strides, dilations, pads, auto_pad and ceil_mode turn
 * the spatial input dims into output dims and leading/trailing pads.
 * Private to those two files.
 */
#ifndef RT_OPS_WINDOW_H
#define RT_OPS_WINDOW_H

#include "../kernel.h"

/* Spatial rank at most RT_MAX_RANK - 2 (the batch and channel axes come first). */
#define RT_WINDOW_MAX (RT_MAX_RANK - 2)

struct rt_window {
	int r;                       /* spatial rank */
	int64_t in[RT_WINDOW_MAX];   /* input extent */
	int64_t out[RT_WINDOW_MAX];  /* output extent (>= 1) */
	int64_t k[RT_WINDOW_MAX];    /* kernel extent */
	int64_t s[RT_WINDOW_MAX];    /* stride (>= 1) */
	int64_t d[RT_WINDOW_MAX];    /* dilation (>= 1) */
	int64_t pb[RT_WINDOW_MAX];   /* leading pad */
	int64_t pe[RT_WINDOW_MAX];   /* trailing pad */
};

enum { RT_AUTOPAD_NOTSET, RT_AUTOPAD_SAME_UPPER, RT_AUTOPAD_SAME_LOWER, RT_AUTOPAD_VALID };

/* Load-time check of the window attributes of n: kernel_shape (required
 * when need_kernel), strides and dilations positive, pads non-negative and
 * twice as long as the others, auto_pad a known value, every list of one
 * length.  Returns 0 or STRATA_INVALID_GRAPH with err filled. */
int rt_window_check(const struct rt_node *n, int need_kernel, struct strata_error *err);

/* auto_pad of n as RT_AUTOPAD_*, or -1 for an unknown value. */
int rt_window_autopad(const struct rt_node *n);

/* Run-time geometry of a forward window (Conv, pools): r spatial dims in[],
 * kernel k[] (from W or kernel_shape).  Fills w; ceil_mode rounds the output
 * extent up (pools).  Fails the run (STRATA_RUNTIME) when an attribute
 * list does not have r entries or the output would be empty. */
int rt_window_make(struct rt_exec *x, const struct rt_node *n, int r, const int64_t *in,
                   const int64_t *k, int ceil_mode, struct rt_window *w);

/* Cells of dims[0..r), or -1 for a negative dim or past 2^48 cells. */
int64_t rt_window_cells(int r, const int64_t *dims);

#endif
