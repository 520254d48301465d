/*
 * resize.c: resampling operators: Resize (opsets 10-19), Upsample (7, 9),
 * GridSample (16) and RoiAlign (10, 16).
 *
 * Resize is separable: every axis maps each output index to a source
 * coordinate (coordinate_transformation_mode), and that coordinate to a small
 * set of taps (source index, weight) chosen by the mode (nearest, linear,
 * cubic, optionally antialiased).  An output cell is the sum over the tensor
 * product of its axes' taps, which is exactly what evaluating the 1-D
 * interpolation axis after axis gives.  Taps are computed once per run into
 * scratch memory; source indices are clamped to the axis, which is what
 * edge-padding the input does.  Nearest resizing copies cells and so works on
 * every fixed-size element type; linear and cubic compute in double.
 *
 * The "length_resized" of the coordinate formulas is scale * input length, as
 * in the ONNX reference, so scales that do not give a whole output length
 * (0.8 of 4) keep their exact ratio.  Every value that comes from a tensor
 * (scales, sizes, roi, grid coordinates, boxes, batch indices) is treated as
 * hostile: non-finite coordinates are clamped before any conversion to an
 * integer, and every computed index is kept inside its axis.
 *
 * GridSample and RoiAlign sample 4-D NCHW inputs bilinearly (GridSample also
 * nearest and bicubic) following the PyTorch and ONNX definitions; both
 * compute in double and store in the input's element type.
 */
#include <math.h>
#include <string.h>

#include "../kernel.h"

/* Upper bound on cells of any output, far from size_t overflow; rt_output()
 * applies the real memory limit. */
#define MAX_CELLS ((int64_t)1 << 40)
/* Taps per output index on one axis (an antialiased downscale by s uses
 * about 4/s); a bound keeps hostile scales from exhausting memory. */
#define MAX_TAPS 1024

/* ---- cells of any numeric type as doubles -------------------------------------- */

static int numeric(int dt)
{
	switch (dt) {
	case BASE_DT_FLOAT: case BASE_DT_DOUBLE: case BASE_DT_FLOAT16: case BASE_DT_BFLOAT16:
	case BASE_DT_INT8: case BASE_DT_UINT8: case BASE_DT_INT16: case BASE_DT_UINT16:
	case BASE_DT_INT32: case BASE_DT_UINT32: case BASE_DT_INT64: case BASE_DT_UINT64:
		return 1;
	default:
		return 0;
	}
}

static int floating(int dt)
{
	return dt == BASE_DT_FLOAT || dt == BASE_DT_DOUBLE || dt == BASE_DT_FLOAT16 ||
	       dt == BASE_DT_BFLOAT16;
}

static double load(const void *p, int dt, int64_t i)
{
	switch (dt) {
	case BASE_DT_FLOAT: return ((const float *)p)[i];
	case BASE_DT_DOUBLE: return ((const double *)p)[i];
	case BASE_DT_FLOAT16: return base_f16_to_f32(((const uint16_t *)p)[i]);
	case BASE_DT_BFLOAT16: return base_bf16_to_f32(((const uint16_t *)p)[i]);
	case BASE_DT_INT8: return ((const int8_t *)p)[i];
	case BASE_DT_UINT8: return ((const uint8_t *)p)[i];
	case BASE_DT_INT16: return ((const int16_t *)p)[i];
	case BASE_DT_UINT16: return ((const uint16_t *)p)[i];
	case BASE_DT_INT32: return ((const int32_t *)p)[i];
	case BASE_DT_UINT32: return ((const uint32_t *)p)[i];
	case BASE_DT_INT64: return (double)((const int64_t *)p)[i];
	case BASE_DT_UINT64: return (double)((const uint64_t *)p)[i];
	default: return 0;
	}
}

/* Integers round to nearest and saturate (NaN becomes 0). */
static double sat(double v, double lo, double hi)
{
	if (isnan(v))
		return 0;
	v = nearbyint(v);
	return v < lo ? lo : v > hi ? hi : v;
}

static void store(void *p, int dt, int64_t i, double v)
{
	switch (dt) {
	case BASE_DT_FLOAT: ((float *)p)[i] = (float)v; break;
	case BASE_DT_DOUBLE: ((double *)p)[i] = v; break;
	case BASE_DT_FLOAT16: ((uint16_t *)p)[i] = base_f32_to_f16((float)v); break;
	case BASE_DT_BFLOAT16: ((uint16_t *)p)[i] = base_f32_to_bf16((float)v); break;
	case BASE_DT_INT8: ((int8_t *)p)[i] = (int8_t)sat(v, INT8_MIN, INT8_MAX); break;
	case BASE_DT_UINT8: ((uint8_t *)p)[i] = (uint8_t)sat(v, 0, UINT8_MAX); break;
	case BASE_DT_INT16: ((int16_t *)p)[i] = (int16_t)sat(v, INT16_MIN, INT16_MAX); break;
	case BASE_DT_UINT16: ((uint16_t *)p)[i] = (uint16_t)sat(v, 0, UINT16_MAX); break;
	case BASE_DT_INT32: ((int32_t *)p)[i] = (int32_t)sat(v, INT32_MIN, INT32_MAX); break;
	case BASE_DT_UINT32: ((uint32_t *)p)[i] = (uint32_t)sat(v, 0, UINT32_MAX); break;
	/* 2^63 and 2^64 are exact doubles; stay strictly below them */
	case BASE_DT_INT64:
		((int64_t *)p)[i] = (int64_t)sat(v, -9223372036854775808.0, 9223372036854774784.0);
		break;
	case BASE_DT_UINT64:
		((uint64_t *)p)[i] = (uint64_t)sat(v, 0, 18446744073709549568.0);
		break;
	default: break;
	}
}

static int64_t clampi(int64_t v, int64_t lo, int64_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/* ---- Resize: attributes ------------------------------------------------------------- */

enum { M_NEAREST, M_LINEAR, M_CUBIC };
enum { C_HALF_PIXEL, C_PYTORCH, C_ALIGN_CORNERS, C_ASYMMETRIC, C_TF_NN, C_TF_CROP, C_SYMMETRIC };
enum { N_PREFER_FLOOR, N_PREFER_CEIL, N_FLOOR, N_CEIL, N_SIMPLE };
enum { K_STRETCH, K_NOT_LARGER, K_NOT_SMALLER };

struct resize {
	int upsample;         /* Upsample (scales as attribute before opset 9) */
	int mode, ctm, nearest, keep;
	int antialias, exclude;
	double a, extrap;
	int naxes;            /* 0: all axes */
	int64_t axes[RT_MAX_RANK];
	int nscales;          /* Upsample-7's attribute */
	double scales[RT_MAX_RANK];
};

static int pick(const char *s, const char *const *names, int count)
{
	for (int i = 0; i < count; i++)
		if (strcmp(s, names[i]) == 0)
			return i;
	return -1;
}

static const char *const mode_names[] = {"nearest", "linear", "cubic"};
static const char *const ctm_names[] = {"half_pixel", "pytorch_half_pixel", "align_corners",
	"asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize", "half_pixel_symmetric"};
static const char *const nearest_names[] = {"round_prefer_floor", "round_prefer_ceil", "floor",
	"ceil"};
static const char *const keep_names[] = {"stretch", "not_larger", "not_smaller"};

/* ---- Resize: taps of one axis -------------------------------------------------------- */

struct axis_taps {
	int64_t in, out;
	double scale;         /* out / in, as given or derived from sizes */
	double roi0, roi1;    /* tf_crop_and_resize window, in [0, 1] units */
	int ntap;
	int64_t *idx;         /* out * ntap source indices (clamped) */
	double *w;            /* out * ntap weights; NULL for nearest */
	unsigned char *outside; /* per output index: extrapolate (tf_crop_and_resize) */
	int any_outside;
};

/* Source coordinate of output index x along an axis. */
static double src_coord(const struct resize *p, const struct axis_taps *t, double x)
{
	double in = (double)t->in, s = t->scale, len = s * in;
	switch (p->ctm) {
	case C_PYTORCH:
		return t->out > 1 ? (x + 0.5) / s - 0.5 : 0;
	case C_ALIGN_CORNERS:
		return t->out > 1 && len != 1 ? x * (in - 1) / (len - 1) : 0;
	case C_ASYMMETRIC:
		return x / s;
	case C_TF_NN:
		return (x + 0.5) / s;
	case C_TF_CROP:
		if (t->out > 1 && len != 1)
			return t->roi0 * (in - 1) + x * (t->roi1 - t->roi0) * (in - 1) / (len - 1);
		return 0.5 * (t->roi0 + t->roi1) * (in - 1);
	case C_SYMMETRIC: {
		double adj = (double)t->out / len, center = in / 2;
		return center * (1 - adj) + (x + 0.5) / s - 0.5;
	}
	default:
		return (x + 0.5) / s - 0.5;
	}
}

static double cubic_w(double x, double a)
{
	x = fabs(x);
	if (x <= 1)
		return ((a + 2) * x - (a + 3)) * x * x + 1;
	if (x < 2)
		return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
	return 0;
}

/* Number of taps per output index on an axis of scale s. */
static int tap_count(const struct resize *p, double s)
{
	if (p->mode == M_NEAREST)
		return 1;
	double support = p->mode == M_LINEAR ? 1 : 2;
	if (!p->antialias || s >= 1)
		return (int)(2 * support);
	double f = floor(-support / s) + 1; /* first tap, relative to the base index */
	if (f < -MAX_TAPS)
		return MAX_TAPS + 1;
	return (int)(2 - 2 * f);
}

/* Fill t's taps for every output index. */
static void axis_taps_fill(const struct resize *p, struct axis_taps *t)
{
	int nt = t->ntap;
	double in = (double)t->in;
	/* Coordinates beyond this margin all clamp to the same edge taps. */
	double lo = -(double)nt - 4, hi = in + nt + 4;
	for (int64_t o = 0; o < t->out; o++) {
		double xo = src_coord(p, t, (double)o);
		int64_t *ix = t->idx + o * nt;
		double *w = t->w ? t->w + o * nt : NULL;
		if (t->outside) {
			t->outside[o] = !(xo >= 0 && xo <= in - 1);
			t->any_outside |= t->outside[o];
		}
		if (isnan(xo))
			xo = 0;
		xo = xo < lo ? lo : xo > hi ? hi : xo;
		double fl = floor(xo);
		if (p->mode == M_NEAREST) {
			double r = xo - fl;
			int64_t k = (int64_t)fl;
			if (r != 0) {
				switch (p->nearest) {
				case N_PREFER_FLOOR: k += r > 0.5; break;
				case N_PREFER_CEIL: k += r >= 0.5; break;
				case N_CEIL: k += 1; break;
				case N_SIMPLE: k += t->scale < 1; break;
				default: break;
				}
			}
			ix[0] = clampi(k, 0, t->in - 1);
			continue;
		}
		/* The base index is the last source index strictly left of xo, so
		 * the ratio lies in (0, 1] (the reference's convention: an exact
		 * hit takes the right-hand tap with weight 1). */
		int64_t base = (int64_t)fl;
		double r = xo - fl;
		if (r == 0) {
			base -= 1;
			r = 1;
		}
		double s = p->antialias && t->scale < 1 ? t->scale : 1;
		int64_t first = 1 - nt / 2;
		double sum = 0;
		for (int k = 0; k < nt; k++) {
			double d = (double)(first + k) - r; /* tap position relative to xo */
			double v;
			if (p->mode == M_LINEAR) {
				v = 1 - fabs(d * s);
				v = v < 0 ? 0 : v;
			} else {
				v = cubic_w(d * s, p->a);
			}
			int64_t src = base + first + k;
			if (p->exclude && (src < 0 || src >= t->in))
				v = 0;
			w[k] = v;
			sum += v;
			ix[k] = clampi(src, 0, t->in - 1);
		}
		/* Plain linear and cubic weights already sum to one; antialiased
		 * and edge-excluded ones are renormalized. */
		if ((p->antialias || p->exclude) && sum != 0)
			for (int k = 0; k < nt; k++)
				w[k] /= sum;
	}
}

/* ---- Resize: the kernel ------------------------------------------------------------ */

struct resize_run {
	int r;
	const struct axis_taps *ax;
	int64_t ist[RT_MAX_RANK]; /* input strides in cells */
	const void *in;
	int dt;
};

/* Sum over the tap product of axes d.. for the output index o[]. */
static double accumulate(const struct resize_run *rr, const int64_t *o, int d, int64_t off)
{
	if (d == rr->r)
		return load(rr->in, rr->dt, off);
	const struct axis_taps *t = &rr->ax[d];
	const int64_t *ix = t->idx + o[d] * t->ntap;
	const double *w = t->w + o[d] * t->ntap;
	double acc = 0;
	for (int k = 0; k < t->ntap; k++) {
		if (w[k] == 0)
			continue;
		acc += w[k] * accumulate(rr, o, d + 1, off + ix[k] * rr->ist[d]);
	}
	return acc;
}

/* Read the scales, sizes and roi of a Resize or Upsample into the axes. */
static int resize_params(struct rt_exec *x, const struct rt_node *n, const struct resize *p,
                         const struct rt_tensor *X, struct axis_taps *ax)
{
	int r = X->rank;
	const struct rt_tensor *roi = NULL, *sc = NULL, *sz = NULL;
	if (p->upsample) {
		if (n->opset >= 9)
			sc = rt_input(x, n, 1);
	} else if (n->opset < 11) {
		sc = rt_input(x, n, 1);
	} else {
		roi = rt_input(x, n, 1);
		sc = rt_input(x, n, 2);
		sz = rt_input(x, n, 3);
	}
	if (sc && runtime_tensor_count(sc) == 0)
		sc = NULL; /* opset 11 passes an empty scales next to sizes */
	if (sz && runtime_tensor_count(sz) == 0)
		sz = NULL;
	if (sc && sz)
		return rt_fail(x, n, STRATA_RUNTIME, "scales and sizes are both given");

	/* which axes the scales, sizes and roi speak of */
	int na = p->naxes ? p->naxes : r;
	int axis[RT_MAX_RANK];
	for (int i = 0; i < na; i++) {
		int a = p->naxes ? rt_axis(p->axes[i], r) : i;
		if (a < 0)
			return rt_fail(x, n, STRATA_RUNTIME, "axis %lld out of range for rank %d",
			               (long long)p->axes[i], r);
		for (int j = 0; j < i; j++)
			if (axis[j] == a)
				return rt_fail(x, n, STRATA_RUNTIME, "axis %d repeated", a);
		axis[i] = a;
	}
	for (int d = 0; d < r; d++) {
		ax[d].in = X->dims[d];
		ax[d].out = X->dims[d];
		ax[d].scale = 1;
		ax[d].roi0 = 0;
		ax[d].roi1 = 1;
	}

	if (p->upsample && n->opset < 9) {
		if (p->nscales != r)
			return rt_fail(x, n, STRATA_RUNTIME, "scales has %d entries for rank %d",
			               p->nscales, r);
		for (int d = 0; d < r; d++)
			ax[d].scale = p->scales[d];
	} else if (sc) {
		if (sc->dtype != BASE_DT_FLOAT && sc->dtype != BASE_DT_DOUBLE)
			return rt_fail(x, n, STRATA_RUNTIME, "scales must be float, not %s",
			               base_dtype_name(sc->dtype));
		if (sc->rank != 1 || sc->dims[0] != na)
			return rt_fail(x, n, STRATA_RUNTIME, "scales must have %d entries", na);
		for (int i = 0; i < na; i++)
			ax[axis[i]].scale = load(sc->data, sc->dtype, i);
	} else if (sz) {
		int64_t v[RT_MAX_RANK];
		if (sz->dtype != BASE_DT_INT64 || sz->rank != 1 || sz->dims[0] != na ||
		    rt_tensor_to_ints(sz, v, RT_MAX_RANK) != na)
			return rt_fail(x, n, STRATA_RUNTIME, "sizes must be int64 with %d entries", na);
		for (int i = 0; i < na; i++) {
			if (v[i] < 0 || v[i] > MAX_CELLS)
				return rt_fail(x, n, STRATA_RUNTIME, "sizes[%d] = %lld is out of range", i,
				               (long long)v[i]);
			if (ax[axis[i]].in == 0 && v[i] != 0)
				return rt_fail(x, n, STRATA_RUNTIME, "cannot resize an empty axis %d",
				               axis[i]);
		}
		if (p->keep != K_STRETCH) {
			/* one scale for every listed axis, then whole lengths */
			double s = p->keep == K_NOT_LARGER ? INFINITY : 0;
			for (int i = 0; i < na; i++) {
				if (ax[axis[i]].in == 0)
					continue;
				double si = (double)v[i] / (double)ax[axis[i]].in;
				s = p->keep == K_NOT_LARGER ? fmin(s, si) : fmax(s, si);
			}
			if (!isfinite(s))
				s = 1;
			for (int i = 0; i < na; i++) {
				struct axis_taps *t = &ax[axis[i]];
				double o = nearbyint(s * (double)t->in);
				if (o > (double)MAX_CELLS)
					return rt_fail(x, n, STRATA_RUNTIME, "output too large");
				t->out = (int64_t)o;
				t->scale = s;
			}
		} else {
			for (int i = 0; i < na; i++) {
				struct axis_taps *t = &ax[axis[i]];
				t->out = v[i];
				t->scale = t->in ? (double)v[i] / (double)t->in : 1;
			}
		}
	} else {
		return rt_fail(x, n, STRATA_RUNTIME, "neither scales nor sizes is given");
	}

	for (int d = 0; d < r; d++) {
		struct axis_taps *t = &ax[d];
		if (!(t->scale > 0) || !isfinite(t->scale))
			return rt_fail(x, n, STRATA_RUNTIME, "scale %g on axis %d is not positive",
			               t->scale, d);
		if (!sz) {
			double o = floor(t->scale * (double)t->in);
			if (o > (double)MAX_CELLS)
				return rt_fail(x, n, STRATA_RUNTIME, "output too large");
			t->out = (int64_t)o;
		}
	}

	if (p->ctm == C_TF_CROP) {
		if (!roi)
			return rt_fail(x, n, STRATA_RUNTIME, "tf_crop_and_resize needs roi");
		if (!floating(roi->dtype) || roi->rank != 1 || roi->dims[0] != 2 * na)
			return rt_fail(x, n, STRATA_RUNTIME, "roi must be float with %d entries",
			               2 * na);
		for (int i = 0; i < na; i++) {
			ax[axis[i]].roi0 = load(roi->data, roi->dtype, i);
			ax[axis[i]].roi1 = load(roi->data, roi->dtype, na + i);
		}
	}
	return 0;
}

static int run_resize(struct rt_node *n, struct rt_exec *x)
{
	const struct resize *p = n->state;
	const struct rt_tensor *X = rt_input(x, n, 0);
	int r = X->rank;
	struct axis_taps ax[RT_MAX_RANK];
	memset(ax, 0, sizeof ax);
	int rc = resize_params(x, n, p, X, ax);
	if (rc)
		return rc;

	int64_t od[RT_MAX_RANK], cells = 1;
	for (int d = 0; d < r; d++) {
		od[d] = ax[d].out;
		if (od[d] && cells > MAX_CELLS / od[d])
			return rt_fail(x, n, STRATA_RUNTIME, "output too large");
		cells *= od[d];
	}
	struct rt_tensor *Y;
	if ((rc = rt_output(x, n, 0, X->dtype, r, od, &Y)))
		return rc;
	if (cells == 0)
		return 0;

	/* taps of every axis */
	int64_t work = 1;
	for (int d = 0; d < r; d++) {
		struct axis_taps *t = &ax[d];
		t->ntap = tap_count(p, t->scale);
		if (t->ntap > MAX_TAPS || work > MAX_CELLS / t->ntap)
			return rt_fail(x, n, STRATA_RUNTIME, "scale %g on axis %d needs too many taps",
			               t->scale, d);
		work *= t->ntap;
		/* hostile scales must not turn into unbounded work either */
		if (cells > MAX_CELLS / work)
			return rt_fail(x, n, STRATA_RUNTIME, "resize needs %lld taps per cell for %lld cells",
			               (long long)work, (long long)cells);
		size_t m = (size_t)(t->out * t->ntap);
		t->idx = rt_scratch(x, m * sizeof *t->idx);
		if (p->mode != M_NEAREST)
			t->w = rt_scratch(x, m * sizeof *t->w);
		if (p->ctm == C_TF_CROP)
			t->outside = rt_scratch(x, (size_t)t->out);
		if (!t->idx || (p->mode != M_NEAREST && !t->w) ||
		    (p->ctm == C_TF_CROP && !t->outside))
			return rt_nomem(x, n, "resize taps");
		axis_taps_fill(p, t);
	}

	struct resize_run rr = {.r = r, .ax = ax, .in = X->data, .dt = X->dtype};
	int64_t st = 1;
	for (int d = r - 1; d >= 0; d--) {
		rr.ist[d] = st;
		st *= X->dims[d];
	}

	size_t es = base_dtype_size(X->dtype);
	double extrap[2]; /* one cell of any type, aligned for it */
	store(extrap, X->dtype, 0, p->extrap);
	int64_t o[RT_MAX_RANK] = {0};
	for (int64_t c = 0; c < cells; c++) {
		int out = 0;
		for (int d = 0; d < r; d++)
			out |= ax[d].outside && ax[d].outside[o[d]];
		if (out) {
			memcpy((char *)Y->data + c * (int64_t)es, extrap, es);
		} else if (p->mode == M_NEAREST) {
			int64_t off = 0;
			for (int d = 0; d < r; d++)
				off += ax[d].idx[o[d]] * rr.ist[d];
			memcpy((char *)Y->data + c * (int64_t)es, (const char *)X->data + off * (int64_t)es,
			       es);
		} else {
			store(Y->data, X->dtype, c, accumulate(&rr, o, 0, 0));
		}
		for (int d = r - 1; d >= 0; d--) {
			if (++o[d] < od[d])
				break;
			o[d] = 0;
		}
	}
	return 0;
}

static void fini_resize(struct rt_node *n)
{
	if (n->state)
		base_free(n->state, sizeof(struct resize));
	n->state = NULL;
}

static int init_resize(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	if (n->nin < 1 || n->in[0] < 0 || n->nout < 1 || n->out[0] < 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "needs an input and an output");
	int up = strcmp(n->op, "Upsample") == 0;
	int dt = rt_graph_dtype(g, n->in[0]);
	if (!numeric(dt))
		return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED, "%s (opset %d): element type %s",
		                   n->op, n->opset, base_dtype_name(dt));
	struct resize p = {.upsample = up, .a = -0.75};

	const char *mode = rt_attr_string(n, "mode", "nearest");
	p.mode = pick(mode, mode_names, 3);
	if (up && strcmp(mode, "bilinear") == 0)
		p.mode = M_LINEAR; /* Upsample-7's spelling */
	if (p.mode < 0 || (p.mode == M_CUBIC && (up || n->opset < 11)))
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "unknown mode \"%s\" (opset %d)",
		                   mode, n->opset);
	if (p.mode != M_NEAREST && !floating(dt))
		return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED,
		                   "%s (opset %d): %s mode on element type %s", n->op, n->opset,
		                   mode, base_dtype_name(dt));

	if (up || n->opset < 11) {
		/* the original behaviour: source = output / scale, nearest truncates */
		p.ctm = C_ASYMMETRIC;
		p.nearest = N_SIMPLE;
	} else {
		const char *c = rt_attr_string(n, "coordinate_transformation_mode", "half_pixel");
		p.ctm = pick(c, ctm_names, 7);
		if (p.ctm < 0 || (p.ctm == C_SYMMETRIC && n->opset < 19) ||
		    (p.ctm == C_TF_NN && n->opset >= 13))
			return rt_node_err(n, err, STRATA_INVALID_GRAPH,
			                   "unknown coordinate_transformation_mode \"%s\" (opset %d)", c,
			                   n->opset);
		const char *nm = rt_attr_string(n, "nearest_mode", "round_prefer_floor");
		p.nearest = pick(nm, nearest_names, 4);
		if (p.nearest < 0)
			return rt_node_err(n, err, STRATA_INVALID_GRAPH, "unknown nearest_mode \"%s\"",
			                   nm);
		p.a = rt_attr_float(n, "cubic_coeff_a", -0.75f);
		p.exclude = rt_attr_int(n, "exclude_outside", 0) != 0;
		p.extrap = rt_attr_float(n, "extrapolation_value", 0.0f);
	}
	if (n->opset >= 18 && !up) {
		p.antialias = rt_attr_int(n, "antialias", 0) != 0;
		if (p.antialias && p.mode == M_NEAREST)
			return rt_node_err(n, err, STRATA_INVALID_GRAPH,
			                   "antialias applies to linear and cubic modes only");
		const char *k = rt_attr_string(n, "keep_aspect_ratio_policy", "stretch");
		p.keep = pick(k, keep_names, 3);
		if (p.keep < 0)
			return rt_node_err(n, err, STRATA_INVALID_GRAPH,
			                   "unknown keep_aspect_ratio_policy \"%s\"", k);
		size_t na;
		const int64_t *a = rt_attr_ints(n, "axes", &na);
		if (a) {
			if (na == 0 || na > RT_MAX_RANK)
				return rt_node_err(n, err, STRATA_INVALID_GRAPH, "axes has %zu entries",
				                   na);
			memcpy(p.axes, a, na * sizeof *a);
			p.naxes = (int)na;
		}
	}
	if (up && n->opset < 9) {
		const struct rt_attr *s = rt_attr_find(n, "scales");
		if (!s || s->type != RT_ATTR_FLOATS || s->n == 0 || s->n > RT_MAX_RANK)
			return rt_node_err(n, err, STRATA_INVALID_GRAPH,
			                   "Upsample needs a scales attribute of 1 to %d floats",
			                   RT_MAX_RANK);
		for (size_t i = 0; i < s->n; i++) {
			if (!(s->floats[i] >= 1) || !isfinite(s->floats[i]))
				return rt_node_err(n, err, STRATA_INVALID_GRAPH,
				                   "Upsample scales[%zu] = %g must be >= 1", i,
				                   (double)s->floats[i]);
			p.scales[i] = s->floats[i];
		}
		p.nscales = (int)s->n;
	} else if (n->nin < 2 || (n->opset >= 11 && !up && n->nin < 3)) {
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "missing scales or sizes input");
	}

	struct resize *st = base_alloc(sizeof *st);
	if (!st)
		return rt_node_nomem(n, err, "kernel state");
	*st = p;
	n->state = st;
	rt_graph_set_dtype(g, n->out[0], dt);
	n->run = run_resize;
	return 0;
}

/* ---- GridSample --------------------------------------------------------------- */

enum { G_BILINEAR, G_NEAREST, G_BICUBIC };
enum { P_ZEROS, P_BORDER, P_REFLECTION };

static const char *const gmode_names[] = {"bilinear", "nearest", "bicubic"};
static const char *const gmode20_names[] = {"linear", "nearest", "cubic"};
static const char *const pad_names[] = {"zeros", "border", "reflection"};

/* Reflect v into the span [lo2/2, hi2/2] (bounds given doubled, as PyTorch
 * does, so that half-pixel bounds stay exact). */
static double reflect(double v, double lo2, double hi2)
{
	if (lo2 == hi2)
		return 0;
	double mn = lo2 / 2, span = (hi2 - lo2) / 2;
	v = fabs(v - mn);
	double extra = fmod(v, span);
	double flips = floor(v / span);
	return fmod(flips, 2) == 0 ? extra + mn : span - extra + mn;
}

/* Apply the padding mode to a coordinate on an axis of size len. */
static double pad_coord(double v, int64_t len, int pad, int align)
{
	if (pad == P_REFLECTION)
		v = align ? reflect(v, 0, 2.0 * (double)(len - 1)) : reflect(v, -1, 2.0 * (double)len - 1);
	if (pad != P_ZEROS)
		v = v < 0 ? 0 : v > (double)(len - 1) ? (double)(len - 1) : v;
	return v;
}

struct plane {
	const void *p;
	int dt;
	int64_t off, h, w;
	int pad, align;
};

/* A pixel of the plane; outside it 0 (zeros) or the padded pixel. */
static double pixel(const struct plane *pl, int64_t y, int64_t xx)
{
	if (y < 0 || y >= pl->h || xx < 0 || xx >= pl->w) {
		if (pl->pad == P_ZEROS)
			return 0;
		double fy = pad_coord((double)y, pl->h, pl->pad, pl->align);
		double fx = pad_coord((double)xx, pl->w, pl->pad, pl->align);
		y = clampi((int64_t)fy, 0, pl->h - 1);
		xx = clampi((int64_t)fx, 0, pl->w - 1);
	}
	return load(pl->p, pl->dt, pl->off + y * pl->w + xx);
}

static double gs_sample(const struct plane *pl, int mode, double gx, double gy)
{
	/* unnormalize [-1, 1] to pixel coordinates */
	double fx, fy;
	if (pl->align) {
		fx = (gx + 1) / 2 * (double)(pl->w - 1);
		fy = (gy + 1) / 2 * (double)(pl->h - 1);
	} else {
		fx = ((gx + 1) * (double)pl->w - 1) / 2;
		fy = ((gy + 1) * (double)pl->h - 1) / 2;
	}
	/* keep hostile coordinates where conversions to integers are defined;
	 * everything this far out is padding anyway */
	double bx = (double)pl->w + 8, by = (double)pl->h + 8;
	if (isnan(fx) || isnan(fy))
		return NAN;
	if (mode != G_BICUBIC) {
		fx = pad_coord(fx, pl->w, pl->pad, pl->align);
		fy = pad_coord(fy, pl->h, pl->pad, pl->align);
	}
	fx = fx < -bx ? -bx : fx > bx ? bx : fx;
	fy = fy < -by ? -by : fy > by ? by : fy;
	if (mode == G_NEAREST)
		return pixel(pl, (int64_t)nearbyint(fy), (int64_t)nearbyint(fx));
	int64_t x0 = (int64_t)floor(fx), y0 = (int64_t)floor(fy);
	double tx = fx - (double)x0, ty = fy - (double)y0;
	if (mode == G_BILINEAR) {
		/* out-of-range corners read 0 under every padding mode: the
		 * coordinate is already padded, so only a zero-weight corner is out */
		struct plane z = *pl;
		z.pad = P_ZEROS;
		return pixel(&z, y0, x0) * (1 - tx) * (1 - ty) + pixel(&z, y0, x0 + 1) * tx * (1 - ty) +
		       pixel(&z, y0 + 1, x0) * (1 - tx) * ty + pixel(&z, y0 + 1, x0 + 1) * tx * ty;
	}
	double wx[4], wy[4], acc = 0;
	for (int k = 0; k < 4; k++) {
		wx[k] = cubic_w(tx - (k - 1), -0.75);
		wy[k] = cubic_w(ty - (k - 1), -0.75);
	}
	for (int i = 0; i < 4; i++) {
		double row = 0;
		for (int j = 0; j < 4; j++)
			row += wx[j] * pixel(pl, y0 - 1 + i, x0 - 1 + j);
		acc += wy[i] * row;
	}
	return acc;
}

static int run_gridsample(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *X = rt_input(x, n, 0), *G = rt_input(x, n, 1);
	int mode = (int)(intptr_t)n->state >> 4, pad = (int)(intptr_t)n->state & 15;
	int align = rt_attr_int(n, "align_corners", 0) != 0;
	if (X->rank != 4 || G->rank != 4 || G->dims[3] != 2 || G->dims[0] != X->dims[0])
		return rt_fail(x, n, STRATA_RUNTIME,
		               "X must be [N, C, H, W] and grid [N, H_out, W_out, 2] "
		               "(only 2-D sampling is implemented)");
	int64_t N = X->dims[0], C = X->dims[1], H = X->dims[2], W = X->dims[3];
	int64_t Ho = G->dims[1], Wo = G->dims[2];
	int64_t od[4] = {N, C, Ho, Wo};
	if (Ho && Wo && C && N && (Ho > MAX_CELLS / Wo || C > MAX_CELLS / (Ho * Wo) ||
	                           N > MAX_CELLS / (C * Ho * Wo)))
		return rt_fail(x, n, STRATA_RUNTIME, "output too large");
	struct rt_tensor *Y;
	int rc = rt_output(x, n, 0, X->dtype, 4, od, &Y);
	if (rc)
		return rc;
	if (N * C * Ho * Wo == 0)
		return 0;
	if (H == 0 || W == 0)
		return rt_fail(x, n, STRATA_RUNTIME, "cannot sample an empty image");
	struct plane pl = {.p = X->data, .dt = X->dtype, .h = H, .w = W, .pad = pad, .align = align};
	for (int64_t b = 0; b < N; b++) {
		for (int64_t c = 0; c < C; c++) {
			pl.off = (b * C + c) * H * W;
			int64_t yo = (b * C + c) * Ho * Wo;
			for (int64_t i = 0; i < Ho * Wo; i++) {
				int64_t gi = (b * Ho * Wo + i) * 2;
				double gx = load(G->data, G->dtype, gi), gy = load(G->data, G->dtype, gi + 1);
				store(Y->data, X->dtype, yo + i, gs_sample(&pl, mode, gx, gy));
			}
		}
	}
	return 0;
}

static int init_gridsample(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	if (n->nin < 2 || n->in[0] < 0 || n->in[1] < 0 || n->nout < 1 || n->out[0] < 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "needs X, grid and an output");
	int dt = rt_graph_dtype(g, n->in[0]), gdt = rt_graph_dtype(g, n->in[1]);
	if (!numeric(dt) || !floating(gdt))
		return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED,
		                   "GridSample (opset %d): element types %s, %s", n->opset,
		                   base_dtype_name(dt), base_dtype_name(gdt));
	const char *m = rt_attr_string(n, "mode", n->opset >= 20 ? "linear" : "bilinear");
	int mode = pick(m, n->opset >= 20 ? gmode20_names : gmode_names, 3);
	const char *pm = rt_attr_string(n, "padding_mode", "zeros");
	int pad = pick(pm, pad_names, 3);
	if (mode < 0 || pad < 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH,
		                   "unknown mode \"%s\" or padding_mode \"%s\"", m, pm);
	n->state = (void *)(intptr_t)(mode << 4 | pad);
	rt_graph_set_dtype(g, n->out[0], dt);
	n->run = run_gridsample;
	return 0;
}

/* ---- RoiAlign ---------------------------------------------------------------------- */

/* Bilinear sample at (y, x) with RoiAlign's edge rules: a point more than
 * one pixel outside contributes nothing, others clamp to the image.  With
 * use_max the largest weighted corner is returned instead of their sum (the
 * definition of max mode, which weights before taking the maximum). */
static double roi_sample(const struct plane *pl, double y, double xx, int use_max)
{
	if (y < -1 || y > (double)pl->h || xx < -1 || xx > (double)pl->w)
		return 0;
	y = y <= 0 ? 0 : y;
	xx = xx <= 0 ? 0 : xx;
	int64_t y0 = (int64_t)y, x0 = (int64_t)xx, y1, x1;
	if (y0 >= pl->h - 1) {
		y0 = y1 = pl->h - 1;
		y = (double)y0;
	} else {
		y1 = y0 + 1;
	}
	if (x0 >= pl->w - 1) {
		x0 = x1 = pl->w - 1;
		xx = (double)x0;
	} else {
		x1 = x0 + 1;
	}
	double ly = y - (double)y0, lx = xx - (double)x0, hy = 1 - ly, hx = 1 - lx;
	double v1 = hy * hx * load(pl->p, pl->dt, pl->off + y0 * pl->w + x0);
	double v2 = hy * lx * load(pl->p, pl->dt, pl->off + y0 * pl->w + x1);
	double v3 = ly * hx * load(pl->p, pl->dt, pl->off + y1 * pl->w + x0);
	double v4 = ly * lx * load(pl->p, pl->dt, pl->off + y1 * pl->w + x1);
	if (use_max)
		return fmax(fmax(v1, v2), fmax(v3, v4));
	return v1 + v2 + v3 + v4;
}

static int run_roialign(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *X = rt_input(x, n, 0), *R = rt_input(x, n, 1);
	const struct rt_tensor *B = rt_input(x, n, 2);
	int use_max = (int)(intptr_t)n->state & 1, half = (int)(intptr_t)n->state >> 1;
	if (!R || !B)
		return rt_fail(x, n, STRATA_RUNTIME, "missing rois or batch_indices");
	if (X->rank != 4 || R->rank != 2 || R->dims[1] != 4 || B->rank != 1 ||
	    B->dims[0] != R->dims[0])
		return rt_fail(x, n, STRATA_RUNTIME,
		               "X must be [N, C, H, W], rois [R, 4] and batch_indices [R]");
	if (!floating(R->dtype) || (B->dtype != BASE_DT_INT64 && B->dtype != BASE_DT_INT32))
		return rt_fail(x, n, STRATA_RUNTIME, "rois must be float, batch_indices int64");
	int64_t oh = rt_attr_int(n, "output_height", 1), ow = rt_attr_int(n, "output_width", 1);
	int64_t sr = rt_attr_int(n, "sampling_ratio", 0);
	double scale = rt_attr_float(n, "spatial_scale", 1.0f);
	int64_t nr = R->dims[0], C = X->dims[1], H = X->dims[2], W = X->dims[3];
	int64_t od[4] = {nr, C, oh, ow};
	if (nr && C && (C > MAX_CELLS / (oh * ow) || nr > MAX_CELLS / (C * oh * ow)))
		return rt_fail(x, n, STRATA_RUNTIME, "output too large");
	struct rt_tensor *Y;
	int rc = rt_output(x, n, 0, X->dtype, 4, od, &Y);
	if (rc)
		return rc;
	if (nr * C == 0)
		return 0;
	if (H == 0 || W == 0)
		return rt_fail(x, n, STRATA_RUNTIME, "cannot pool an empty image");
	struct plane pl = {.p = X->data, .dt = X->dtype, .h = H, .w = W};
	double off = half ? 0.5 : 0;
	for (int64_t r = 0; r < nr; r++) {
		int64_t b = B->dtype == BASE_DT_INT64 ? ((const int64_t *)B->data)[r]
		                                      : ((const int32_t *)B->data)[r];
		if (b < 0 || b >= X->dims[0])
			return rt_fail(x, n, STRATA_RUNTIME, "batch_indices[%lld] = %lld out of range [0, %lld)",
			               (long long)r, (long long)b, (long long)X->dims[0]);
		double x0 = load(R->data, R->dtype, r * 4) * scale - off;
		double y0 = load(R->data, R->dtype, r * 4 + 1) * scale - off;
		double x1 = load(R->data, R->dtype, r * 4 + 2) * scale - off;
		double y1 = load(R->data, R->dtype, r * 4 + 3) * scale - off;
		if (!isfinite(x0) || !isfinite(y0) || !isfinite(x1) || !isfinite(y1))
			return rt_fail(x, n, STRATA_RUNTIME, "roi %lld is not finite", (long long)r);
		double rw = x1 - x0, rh = y1 - y0;
		if (!half) {
			/* the legacy mode forces boxes to at least one pixel */
			rw = fmax(rw, 1);
			rh = fmax(rh, 1);
		}
		double bh = rh / (double)oh, bw = rw / (double)ow;
		double gh = sr > 0 ? (double)sr : ceil(rh / (double)oh);
		double gw = sr > 0 ? (double)sr : ceil(rw / (double)ow);
		/* an adaptive grid follows the box size; cap what a hostile box asks */
		if (!(gh <= 1024) || !(gw <= 1024))
			return rt_fail(x, n, STRATA_RUNTIME, "roi %lld needs a sampling grid too large",
			               (long long)r);
		int64_t ngh = gh < 0 ? 0 : (int64_t)gh, ngw = gw < 0 ? 0 : (int64_t)gw;
		double count = ngh * ngw > 0 ? (double)(ngh * ngw) : 1;
		for (int64_t c = 0; c < C; c++) {
			pl.off = (b * C + c) * H * W;
			for (int64_t ph = 0; ph < oh; ph++) {
				for (int64_t pw = 0; pw < ow; pw++) {
					double acc = 0;
					int first = 1;
					for (int64_t iy = 0; iy < ngh; iy++) {
						double yy = y0 + (double)ph * bh + ((double)iy + 0.5) * bh / (double)ngh;
						for (int64_t ix = 0; ix < ngw; ix++) {
							double xx = x0 + (double)pw * bw +
							            ((double)ix + 0.5) * bw / (double)ngw;
							double v = roi_sample(&pl, yy, xx, use_max);
							if (use_max)
								acc = first ? v : fmax(acc, v);
							else
								acc += v;
							first = 0;
						}
					}
					store(Y->data, X->dtype, ((r * C + c) * oh + ph) * ow + pw,
					      use_max ? acc : acc / count);
				}
			}
		}
	}
	return 0;
}

static int init_roialign(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	if (n->nin < 3 || n->in[0] < 0 || n->in[1] < 0 || n->in[2] < 0 || n->nout < 1 ||
	    n->out[0] < 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "needs X, rois, batch_indices");
	int dt = rt_graph_dtype(g, n->in[0]);
	if (!floating(dt))
		return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED, "RoiAlign (opset %d): element type %s",
		                   n->opset, base_dtype_name(dt));
	const char *m = rt_attr_string(n, "mode", "avg");
	int use_max = strcmp(m, "max") == 0;
	if (!use_max && strcmp(m, "avg") != 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "unknown mode \"%s\"", m);
	int half = 0;
	if (n->opset >= 16) {
		const char *c = rt_attr_string(n, "coordinate_transformation_mode", "half_pixel");
		half = strcmp(c, "half_pixel") == 0;
		if (!half && strcmp(c, "output_half_pixel") != 0)
			return rt_node_err(n, err, STRATA_INVALID_GRAPH,
			                   "unknown coordinate_transformation_mode \"%s\"", c);
	}
	int64_t oh = rt_attr_int(n, "output_height", 1), ow = rt_attr_int(n, "output_width", 1);
	int64_t sr = rt_attr_int(n, "sampling_ratio", 0);
	float scale = rt_attr_float(n, "spatial_scale", 1.0f);
	if (oh < 1 || ow < 1 || oh > 65536 || ow > 65536 || sr < 0 || sr > 1024 ||
	    !isfinite(scale))
		return rt_node_err(n, err, STRATA_INVALID_GRAPH,
		                   "bad output_height %lld, output_width %lld, sampling_ratio %lld "
		                   "or spatial_scale %g",
		                   (long long)oh, (long long)ow, (long long)sr, (double)scale);
	n->state = (void *)(intptr_t)(half << 1 | use_max);
	rt_graph_set_dtype(g, n->out[0], dt);
	n->run = run_roialign;
	return 0;
}

const struct rt_opdef rt_ops_resize[] = {
	{"", "Resize", 10, init_resize, fini_resize},
	{"", "Upsample", 7, init_resize, fini_resize},
	{"", "GridSample", 16, init_gridsample, NULL},
	{"", "RoiAlign", 10, init_roialign, NULL},
	{.op = NULL},
};
