/*
 * elementwise.c: the broadcasting elementwise operators: arithmetic (Add Sub
 * Mul Div Mod Pow PRelu, bitwise ops), comparisons, boolean logic, the
 * variadic Sum/Mean/Max/Min, Where, and the operator table of the whole
 * family (the unary ops and Clip live in unary.c, Cast in cast.c).
 *
 * Data flow: graph.c calls an init() here once per node at load; it checks
 * the input element types, sets the output type and leaves in n->state a
 * pointer to a static descriptor of the op (no allocation, no fini).  At run
 * time the kernel computes the numpy broadcast shape, builds a plan that
 * drops size-1 dimensions and merges dimensions that are contiguous in every
 * input, and calls a type-specialized inner loop once per row of the
 * innermost plan dimension.  The inner loop has three variants (vector op
 * vector, scalar op vector, vector op scalar) so the same-shape, bias and
 * scalar cases are all plain loops the compiler vectorizes.  When a bias
 * row is shorter than SHORT_ROW cells, it is repeated into a stack buffer so
 * one call covers many rows.
 *
 * Invariants: outputs never alias inputs, except the running accumulator of
 * the variadic ops, which is read and written at the same index (the inner
 * loops do not use restrict for that reason).  Integer arithmetic wraps (it
 * is done in the unsigned type); integer division or modulo by zero gives 0
 * and INT_MIN / -1 wraps, so no input can trap.  float16 and bfloat16 are
 * computed through float in scratch memory.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "elementwise.h"

/* -O2 in gcc 12 vectorizes only loops whose trip count is a multiple of the
 * vector width; these loops run over any count and may need a run-time
 * alias check, so they ask for the ordinary cost model. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=dynamic")
#endif

/* ---- inner loops ------------------------------------------------------------ */

enum { VV, SV, VS }; /* which operands advance: both, only b, only a */

typedef void binfn(const void *a, const void *b, void *c, int64_t n, int mode);

#define BIN_DEF(OP, DT, T, UT, OT, EXPR)                                              \
	static void OP##_##DT(const void *pa, const void *pb, void *pc, int64_t n, int mode) \
	{                                                                             \
		const T *a = pa;                                                      \
		const T *b = pb;                                                      \
		OT *c = pc;                                                           \
		if (mode == VV) {                                                     \
			for (int64_t i = 0; i < n; i++) {                             \
				T x = a[i], y = b[i];                                 \
				c[i] = (OT)(EXPR);                                    \
			}                                                             \
		} else if (mode == SV) {                                              \
			const T x = a[0];                                             \
			for (int64_t i = 0; i < n; i++) {                             \
				T y = b[i];                                           \
				c[i] = (OT)(EXPR);                                    \
			}                                                             \
		} else {                                                              \
			const T y = b[0];                                             \
			for (int64_t i = 0; i < n; i++) {                             \
				T x = a[i];                                           \
				c[i] = (OT)(EXPR);                                    \
			}                                                             \
		}                                                                     \
	}

#define SIGNED(X)                      \
	X(INT8, int8_t, uint8_t)       \
	X(INT16, int16_t, uint16_t)    \
	X(INT32, int32_t, uint32_t)    \
	X(INT64, int64_t, uint64_t)
#define UNSIGNED(X)                    \
	X(UINT8, uint8_t, uint8_t)     \
	X(UINT16, uint16_t, uint16_t)  \
	X(UINT32, uint32_t, uint32_t)  \
	X(UINT64, uint64_t, uint64_t)
#define FLOATS(X)                      \
	X(FLOAT, float, float)         \
	X(DOUBLE, double, double)

#define TAB_INTS(OP)                                                               \
	[BASE_DT_INT8] = OP##_INT8, [BASE_DT_INT16] = OP##_INT16,                  \
	[BASE_DT_INT32] = OP##_INT32, [BASE_DT_INT64] = OP##_INT64,                \
	[BASE_DT_UINT8] = OP##_UINT8, [BASE_DT_UINT16] = OP##_UINT16,              \
	[BASE_DT_UINT32] = OP##_UINT32, [BASE_DT_UINT64] = OP##_UINT64
#define TAB_FLOATS(OP) [BASE_DT_FLOAT] = OP##_FLOAT, [BASE_DT_DOUBLE] = OP##_DOUBLE
#define TAB_SIGNED(OP)                                                             \
	[BASE_DT_INT8] = OP##_INT8, [BASE_DT_INT16] = OP##_INT16,                  \
	[BASE_DT_INT32] = OP##_INT32, [BASE_DT_INT64] = OP##_INT64

/* Python-style remainder: the sign of the divisor. */
static inline int64_t pymod_i64(int64_t x, int64_t y)
{
	if (y == 0 || y == -1)
		return 0;
	int64_t r = x % y;
	if (r != 0 && ((r < 0) != (y < 0)))
		r += y;
	return r;
}

static inline float pymod_f(float x, float y)
{
	float r = fmodf(x, y);
	if (r != 0 && ((r < 0) != (y < 0)))
		r += y;
	return r;
}

static inline double pymod_d(double x, double y)
{
	double r = fmod(x, y);
	if (r != 0 && ((r < 0) != (y < 0)))
		r += y;
	return r;
}

/* Integer power by squaring, wrapping like repeated multiplication.  A
 * negative exponent gives the truncated value of 1 / x^-e. */
static inline int64_t ipow(int64_t x, int64_t e)
{
	if (e < 0) {
		if (x == 1)
			return 1;
		if (x == -1)
			return (e & 1) ? -1 : 1;
		return 0;
	}
	uint64_t r = 1, b = (uint64_t)x;
	uint64_t k = (uint64_t)e;
	while (k) {
		if (k & 1)
			r *= b;
		b *= b;
		k >>= 1;
	}
	return (int64_t)r;
}

/* NaN-propagating max and min (numpy's maximum/minimum). */
#define FMAX(x, y) (((x) != (x) || (x) > (y)) ? (x) : (y))
#define FMIN(x, y) (((x) != (x) || (x) < (y)) ? (x) : (y))

#define ADD_I(DT, T, UT) BIN_DEF(add, DT, T, UT, T, (UT)x + (UT)y)
#define ADD_F(DT, T, UT) BIN_DEF(add, DT, T, UT, T, x + y)
#define SUB_I(DT, T, UT) BIN_DEF(sub, DT, T, UT, T, (UT)x - (UT)y)
#define SUB_F(DT, T, UT) BIN_DEF(sub, DT, T, UT, T, x - y)
#define MUL_I(DT, T, UT) BIN_DEF(mul, DT, T, UT, T, (UT)x * (UT)y)
#define MUL_F(DT, T, UT) BIN_DEF(mul, DT, T, UT, T, x * y)
#define DIV_S(DT, T, UT) \
	BIN_DEF(div, DT, T, UT, T, y == 0 ? (T)0 : y == -1 ? (T)((UT)0 - (UT)x) : (T)(x / y))
#define DIV_U(DT, T, UT) BIN_DEF(div, DT, T, UT, T, y == 0 ? (T)0 : (T)(x / y))
#define DIV_F(DT, T, UT) BIN_DEF(div, DT, T, UT, T, x / y)
#define MOD_S(DT, T, UT) BIN_DEF(mod, DT, T, UT, T, pymod_i64(x, y))
#define MOD_U(DT, T, UT) BIN_DEF(mod, DT, T, UT, T, y == 0 ? (T)0 : (T)(x % y))
#define FMOD_S(DT, T, UT) \
	BIN_DEF(fmod, DT, T, UT, T, (y == 0 || y == -1) ? (T)0 : (T)(x % y))
#define MAX_I(DT, T, UT) BIN_DEF(max, DT, T, UT, T, x > y ? x : y)
#define MAX_F(DT, T, UT) BIN_DEF(max, DT, T, UT, T, FMAX(x, y))
#define MIN_I(DT, T, UT) BIN_DEF(min, DT, T, UT, T, x < y ? x : y)
#define MIN_F(DT, T, UT) BIN_DEF(min, DT, T, UT, T, FMIN(x, y))
#define PRELU_S(DT, T, UT) BIN_DEF(prelu, DT, T, UT, T, x < 0 ? (T)((UT)x * (UT)y) : x)
#define PRELU_U(DT, T, UT) BIN_DEF(prelu, DT, T, UT, T, ((void)y, x))
#define PRELU_F(DT, T, UT) BIN_DEF(prelu, DT, T, UT, T, x < 0 ? x * y : x)
#define BAND(DT, T, UT) BIN_DEF(band, DT, T, UT, T, x & y)
#define BOR(DT, T, UT) BIN_DEF(bor, DT, T, UT, T, x | y)
#define BXOR(DT, T, UT) BIN_DEF(bxor, DT, T, UT, T, x ^ y)
#define SHL(DT, T, UT) BIN_DEF(shl, DT, T, UT, T, y >= sizeof(T) * 8 ? (T)0 : (T)((UT)x << y))
#define SHR(DT, T, UT) BIN_DEF(shr, DT, T, UT, T, y >= sizeof(T) * 8 ? (T)0 : (T)(x >> y))
#define EQ(DT, T, UT) BIN_DEF(eq, DT, T, UT, uint8_t, x == y)
#define LT(DT, T, UT) BIN_DEF(lt, DT, T, UT, uint8_t, x < y)
#define LE(DT, T, UT) BIN_DEF(le, DT, T, UT, uint8_t, x <= y)
#define GT(DT, T, UT) BIN_DEF(gt, DT, T, UT, uint8_t, x > y)
#define GE(DT, T, UT) BIN_DEF(ge, DT, T, UT, uint8_t, x >= y)

SIGNED(ADD_I) UNSIGNED(ADD_I) FLOATS(ADD_F)
SIGNED(SUB_I) UNSIGNED(SUB_I) FLOATS(SUB_F)
SIGNED(MUL_I) UNSIGNED(MUL_I) FLOATS(MUL_F)
SIGNED(DIV_S) UNSIGNED(DIV_U) FLOATS(DIV_F)
SIGNED(MOD_S) UNSIGNED(MOD_U)
SIGNED(FMOD_S)
SIGNED(MAX_I) UNSIGNED(MAX_I) FLOATS(MAX_F)
SIGNED(MIN_I) UNSIGNED(MIN_I) FLOATS(MIN_F)
SIGNED(PRELU_S) UNSIGNED(PRELU_U) FLOATS(PRELU_F)
SIGNED(BAND) UNSIGNED(BAND)
SIGNED(BOR) UNSIGNED(BOR)
SIGNED(BXOR) UNSIGNED(BXOR)
UNSIGNED(SHL) UNSIGNED(SHR)
SIGNED(EQ) UNSIGNED(EQ) FLOATS(EQ)
SIGNED(LT) UNSIGNED(LT) FLOATS(LT)
SIGNED(LE) UNSIGNED(LE) FLOATS(LE)
SIGNED(GT) UNSIGNED(GT) FLOATS(GT)
SIGNED(GE) UNSIGNED(GE) FLOATS(GE)

BIN_DEF(mod, FLOAT, float, float, float, pymod_f(x, y))
BIN_DEF(mod, DOUBLE, double, double, double, pymod_d(x, y))
BIN_DEF(fmod, FLOAT, float, float, float, fmodf(x, y))
BIN_DEF(fmod, DOUBLE, double, double, double, fmod(x, y))
BIN_DEF(pow, FLOAT, float, float, float, powf(x, y))
BIN_DEF(pow, DOUBLE, double, double, double, pow(x, y))
BIN_DEF(pow, INT64, int64_t, uint64_t, int64_t, ipow(x, y))
BIN_DEF(land, BOOL, uint8_t, uint8_t, uint8_t, (x != 0) & (y != 0))
BIN_DEF(lor, BOOL, uint8_t, uint8_t, uint8_t, (x != 0) | (y != 0))
BIN_DEF(lxor, BOOL, uint8_t, uint8_t, uint8_t, (x != 0) ^ (y != 0))

typedef const char *cstr;
static inline int streq(cstr x, cstr y)
{
	return strcmp(x ? x : "", y ? y : "") == 0;
}
BIN_DEF(eq, STRING, cstr, cstr, uint8_t, streq(x, y))

/* ---- operator descriptors ---------------------------------------------------- */

struct binop {
	binfn *const *tab; /* by element type; NULL where there is no kernel */
	int out_bool;      /* comparisons: the output is bool */
	int half_ok;       /* float16/bfloat16 computed with the float kernel */
};

#define NUM_TAB(OP) { TAB_INTS(OP), TAB_FLOATS(OP) }

static binfn *const add_tab[BASE_DT_COUNT] = NUM_TAB(add);
static binfn *const sub_tab[BASE_DT_COUNT] = NUM_TAB(sub);
static binfn *const mul_tab[BASE_DT_COUNT] = NUM_TAB(mul);
static binfn *const div_tab[BASE_DT_COUNT] = NUM_TAB(div);
static binfn *const mod_tab[BASE_DT_COUNT] = NUM_TAB(mod);
static binfn *const fmod_tab[BASE_DT_COUNT] = {
	TAB_SIGNED(fmod), TAB_FLOATS(fmod),
	[BASE_DT_UINT8] = mod_UINT8, [BASE_DT_UINT16] = mod_UINT16,
	[BASE_DT_UINT32] = mod_UINT32, [BASE_DT_UINT64] = mod_UINT64,
};
static binfn *const max_tab[BASE_DT_COUNT] = NUM_TAB(max);
static binfn *const min_tab[BASE_DT_COUNT] = NUM_TAB(min);
static binfn *const prelu_tab[BASE_DT_COUNT] = NUM_TAB(prelu);
static binfn *const band_tab[BASE_DT_COUNT] = { TAB_INTS(band) };
static binfn *const bor_tab[BASE_DT_COUNT] = { TAB_INTS(bor) };
static binfn *const bxor_tab[BASE_DT_COUNT] = { TAB_INTS(bxor) };
static binfn *const shl_tab[BASE_DT_COUNT] = {
	[BASE_DT_UINT8] = shl_UINT8, [BASE_DT_UINT16] = shl_UINT16,
	[BASE_DT_UINT32] = shl_UINT32, [BASE_DT_UINT64] = shl_UINT64,
};
static binfn *const shr_tab[BASE_DT_COUNT] = {
	[BASE_DT_UINT8] = shr_UINT8, [BASE_DT_UINT16] = shr_UINT16,
	[BASE_DT_UINT32] = shr_UINT32, [BASE_DT_UINT64] = shr_UINT64,
};
static binfn *const eq_tab[BASE_DT_COUNT] = {
	TAB_INTS(eq), TAB_FLOATS(eq), [BASE_DT_BOOL] = eq_UINT8, [BASE_DT_STRING] = eq_STRING,
};
static binfn *const lt_tab[BASE_DT_COUNT] = NUM_TAB(lt);
static binfn *const le_tab[BASE_DT_COUNT] = NUM_TAB(le);
static binfn *const gt_tab[BASE_DT_COUNT] = NUM_TAB(gt);
static binfn *const ge_tab[BASE_DT_COUNT] = NUM_TAB(ge);
static binfn *const and_tab[BASE_DT_COUNT] = { [BASE_DT_BOOL] = land_BOOL };
static binfn *const or_tab[BASE_DT_COUNT] = { [BASE_DT_BOOL] = lor_BOOL };
static binfn *const xor_tab[BASE_DT_COUNT] = { [BASE_DT_BOOL] = lxor_BOOL };
/* Pow runs in one of three compute types; see pow_type(). */
static binfn *const pow_tab[BASE_DT_COUNT] = {
	[BASE_DT_FLOAT] = pow_FLOAT, [BASE_DT_DOUBLE] = pow_DOUBLE, [BASE_DT_INT64] = pow_INT64,
};

static const struct binop op_add = { add_tab, 0, 1 };
static const struct binop op_sub = { sub_tab, 0, 1 };
static const struct binop op_mul = { mul_tab, 0, 1 };
static const struct binop op_div = { div_tab, 0, 1 };
static const struct binop op_mod = { mod_tab, 0, 1 };
static const struct binop op_fmod = { fmod_tab, 0, 1 };
static const struct binop op_max = { max_tab, 0, 1 };
static const struct binop op_min = { min_tab, 0, 1 };
static const struct binop op_prelu = { prelu_tab, 0, 1 };
static const struct binop op_band = { band_tab, 0, 0 };
static const struct binop op_bor = { bor_tab, 0, 0 };
static const struct binop op_bxor = { bxor_tab, 0, 0 };
static const struct binop op_shl = { shl_tab, 0, 0 };
static const struct binop op_shr = { shr_tab, 0, 0 };
static const struct binop op_eq = { eq_tab, 1, 1 };
static const struct binop op_lt = { lt_tab, 1, 1 };
static const struct binop op_le = { le_tab, 1, 1 };
static const struct binop op_gt = { gt_tab, 1, 1 };
static const struct binop op_ge = { ge_tab, 1, 1 };
static const struct binop op_and = { and_tab, 1, 0 };
static const struct binop op_or = { or_tab, 1, 0 };
static const struct binop op_xor = { xor_tab, 1, 0 };

/* Variadic ops: the binary kernel folded over the inputs; Mean divides at
 * the end. */
struct varop {
	const struct binop *op;
	int mean;
};
static const struct varop var_sum = { &op_add, 0 };
static const struct varop var_mean = { &op_add, 1 };
static const struct varop var_max = { &op_max, 0 };
static const struct varop var_min = { &op_min, 0 };

/* ---- broadcasting plans -------------------------------------------------------- */

/* The output shape with size-1 dimensions dropped and neighbours merged
 * where every input is contiguous across them; st[k][d] is input k's step
 * in cells along plan dimension d (0 where it is broadcast).  The innermost
 * step is then 0 or 1 for every input. */
struct bplan {
	int rank; /* >= 1 */
	int64_t dims[RT_MAX_RANK];
	int64_t st[3][RT_MAX_RANK];
};

static void plan_build(struct bplan *p, int nin, const struct rt_tensor *const *in, int orank,
                       const int64_t *odims)
{
	int64_t dims[RT_MAX_RANK], st[3][RT_MAX_RANK];
	int r = 0;

	for (int i = 0; i < orank; i++) {
		if (odims[i] == 1)
			continue;
		dims[r] = odims[i];
		for (int k = 0; k < nin; k++) {
			int j = i - (orank - in[k]->rank);
			int64_t s = 0;
			if (j >= 0 && in[k]->dims[j] != 1) {
				s = 1;
				for (int q = j + 1; q < in[k]->rank; q++)
					s *= in[k]->dims[q];
			}
			st[k][r] = s;
		}
		r++;
	}
	p->rank = 0;
	for (int i = 0; i < r; i++) {
		if (p->rank > 0) {
			int last = p->rank - 1, ok = 1;
			for (int k = 0; k < nin; k++)
				if (p->st[k][last] != st[k][i] * dims[i])
					ok = 0;
			if (ok) {
				p->dims[last] *= dims[i];
				for (int k = 0; k < nin; k++)
					p->st[k][last] = st[k][i];
				continue;
			}
		}
		p->dims[p->rank] = dims[i];
		for (int k = 0; k < nin; k++)
			p->st[k][p->rank] = st[k][i];
		p->rank++;
	}
	if (p->rank == 0) {
		p->rank = 1;
		p->dims[0] = 1;
		for (int k = 0; k < nin; k++)
			p->st[k][0] = 0;
	}
}

static size_t cell_size(int dt)
{
	return dt == BASE_DT_STRING ? sizeof(char *) : base_dtype_size(dt);
}

/* Rows shorter than this many cells make the per-row call cost more than
 * the arithmetic; see bias_rows(). */
#define SHORT_ROW 32
#define REP_BYTES 4096

/* [M,n] op [n] (or [n] op [M,n]) with n short: the repeated row is copied k
 * times into a stack buffer so that each call covers k rows as one
 * vector-vector loop.  row is the broadcast operand, which is b when
 * row_is_b, else a.  Returns 1 when it handled the plan. */
static int bias_rows(binfn *fn, const struct bplan *p, const char *pa, const char *pb, char *pc,
                     size_t erow, size_t ec, int row_is_b)
{
	_Alignas(64) unsigned char rep[REP_BYTES];
	int64_t n = p->dims[1], rows = p->dims[0];
	size_t rowbytes = (size_t)n * erow;
	int64_t k = (int64_t)(REP_BYTES / rowbytes);
	const char *row = row_is_b ? pb : pa, *full = row_is_b ? pa : pb;

	if (k < 2)
		return 0;
	if (k > rows)
		k = rows;
	for (int64_t i = 0; i < k; i++)
		memcpy(rep + (size_t)i * rowbytes, row, rowbytes);
	for (int64_t i = 0; i < rows; i += k) {
		int64_t m = rows - i < k ? rows - i : k;
		const char *f = full + i * n * (int64_t)erow;
		char *c = pc + i * n * (int64_t)ec;
		if (row_is_b)
			fn(f, rep, c, m * n, VV);
		else
			fn(rep, f, c, m * n, VV);
	}
	return 1;
}

/* out = fn(a, b) with broadcasting; out has the broadcast shape and at
 * least one cell. */
static void apply2(binfn *fn, const struct rt_tensor *a, const struct rt_tensor *b,
                   struct rt_tensor *out)
{
	const struct rt_tensor *in[2] = { a, b };
	struct bplan p;
	plan_build(&p, 2, in, out->rank, out->dims);

	int r = p.rank;
	int64_t n = p.dims[r - 1];
	int64_t sa = p.st[0][r - 1], sb = p.st[1][r - 1];
	BASE_ASSERT(fn && (sa || sb || n == 1));
	int mode = sa ? (sb ? VV : VS) : (sb ? SV : VV);
	size_t ea = cell_size(a->dtype), eb = cell_size(b->dtype), ec = cell_size(out->dtype);
	const char *pa = a->data, *pb = b->data;
	char *pc = out->data;
	/* Short bias rows.  Operands always share a cell size here (Pow
	 * converts both to its compute type); the path relies on it. */
	if (r == 2 && n < SHORT_ROW && ea == eb && mode == VV) {
		if (p.st[0][0] == n && p.st[1][0] == 0 && bias_rows(fn, &p, pa, pb, pc, ea, ec, 1))
			return;
		if (p.st[1][0] == n && p.st[0][0] == 0 && bias_rows(fn, &p, pa, pb, pc, ea, ec, 0))
			return;
	}
	int64_t idx[RT_MAX_RANK] = { 0 };
	int64_t oa = 0, ob = 0, oc = 0;

	for (;;) {
		fn(pa + oa * (int64_t)ea, pb + ob * (int64_t)eb, pc + oc * (int64_t)ec, n, mode);
		oc += n;
		int d = r - 2;
		for (; d >= 0; d--) {
			idx[d]++;
			oa += p.st[0][d];
			ob += p.st[1][d];
			if (idx[d] < p.dims[d])
				break;
			oa -= p.st[0][d] * p.dims[d];
			ob -= p.st[1][d] * p.dims[d];
			idx[d] = 0;
		}
		if (d < 0)
			break;
	}
}

static int shape_fail(struct rt_exec *x, const struct rt_node *n, const struct rt_tensor *a,
                      const struct rt_tensor *b)
{
	char sa[128], sb[128];
	return rt_fail(x, n, STRATA_RUNTIME, "cannot broadcast shapes %s and %s",
	               rt_ew_shape_str(a, sa, sizeof sa), rt_ew_shape_str(b, sb, sizeof sb));
}

/* Binary ops of opset < 7 broadcast b against a only when the attribute
 * broadcast=1, and then 'axis' says where b's dimensions start in a's
 * shape (trailing alignment when absent, which is numpy's rule).  Returns 1
 * and a reshaped view of b in v when axis applies. */
static int legacy_view(const struct rt_node *n, const struct rt_tensor *a, const struct rt_tensor *b,
                       struct rt_tensor *v)
{
	if (n->opset >= 7)
		return 0;
	/* PRelu before opset 7 applies a slope of C values per channel (axis 1). */
	if (!strcmp(n->op, "PRelu") && b->rank == 1 && a->rank >= 2 && b->dims[0] > 1 &&
	    b->dims[0] == a->dims[1]) {
		*v = *b;
		v->rank = a->rank - 1;
		for (int i = 1; i < v->rank; i++)
			v->dims[i] = 1;
		return 1;
	}
	if (!rt_attr_int(n, "broadcast", 0) || !rt_attr_find(n, "axis"))
		return 0;
	int axis = rt_axis(rt_attr_int(n, "axis", 0), a->rank);
	if (axis < 0 || axis + b->rank > a->rank)
		return 0; /* the ordinary check reports the mismatch */
	*v = *b;
	v->rank = a->rank - axis;
	for (int i = b->rank; i < v->rank; i++)
		v->dims[i] = 1;
	return 1;
}

/* Scratch cells for count values of type dt, or NULL after rt_fail. */
static void *scratch_cells(struct rt_exec *x, const struct rt_node *n, int dt, int64_t count)
{
	size_t bytes = (size_t)count * base_dtype_size(dt);
	void *p = rt_scratch(x, bytes ? bytes : 1);
	if (!p)
		rt_nomem(x, n, "scratch of %zu bytes", bytes);
	return p;
}

/* out = op(a, b) where a and b are float16 or bfloat16: widen both to
 * float, run the float kernel, narrow the result. */
static int apply2_half(struct rt_exec *x, const struct rt_node *n, const struct binop *op,
                       const struct rt_tensor *a, const struct rt_tensor *b, struct rt_tensor *out)
{
	struct rt_tensor fa, fb, fo;
	int rc;
	if ((rc = rt_ew_as(x, n, a, BASE_DT_FLOAT, &fa)) != 0 ||
	    (rc = rt_ew_as(x, n, b, BASE_DT_FLOAT, &fb)) != 0)
		return rc;
	if (op->out_bool) {
		apply2(op->tab[BASE_DT_FLOAT], &fa, &fb, out);
		return 0;
	}
	int64_t count = runtime_tensor_count(out);
	fo = *out;
	fo.dtype = BASE_DT_FLOAT;
	if (!(fo.data = scratch_cells(x, n, BASE_DT_FLOAT, count)))
		return STRATA_NOMEM;
	apply2(op->tab[BASE_DT_FLOAT], &fa, &fb, &fo);
	return rt_ew_convert(BASE_DT_FLOAT, fo.data, out->dtype, out->data, count);
}

/* ---- binary ops ------------------------------------------------------------------ */

static int run_binary(struct rt_node *n, struct rt_exec *x)
{
	const struct binop *op = n->state;
	const struct rt_tensor *a = rt_input(x, n, 0), *b = rt_input(x, n, 1);
	struct rt_tensor legacy, *out;
	int rank, rc;
	int64_t dims[RT_MAX_RANK];

	if (!a || !b)
		return rt_fail(x, n, STRATA_RUNTIME, "missing input");
	if (legacy_view(n, a, b, &legacy))
		b = &legacy;
	if (rt_broadcast_shape(a, b, &rank, dims) != 0)
		return shape_fail(x, n, a, b);
	if ((rc = rt_output(x, n, 0, op->out_bool ? BASE_DT_BOOL : a->dtype, rank, dims, &out)) != 0)
		return rc;
	if (runtime_tensor_count(out) == 0)
		return 0;
	if (rt_ew_is_half(a->dtype))
		return apply2_half(x, n, op, a, b, out);
	apply2(op->tab[a->dtype], a, b, out);
	return 0;
}

static int check_outputs(const struct rt_node *n, struct strata_error *err)
{
	if (n->nout < 1 || n->out[0] < 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "output 0 is missing");
	return 0;
}

static int supports(const struct binop *op, int dt)
{
	if (dt <= 0 || dt >= BASE_DT_COUNT)
		return 0;
	return op->tab[dt] || (op->half_ok && rt_ew_is_half(dt));
}

static int binary_init(struct rt_node *n, struct rt_graph *g, struct strata_error *err,
                       const struct binop *op)
{
	int ta, tb, rc;
	if (n->nin != 2)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "takes 2 inputs, has %d", n->nin);
	if ((rc = rt_node_input_dtype(n, g, 0, &ta, err)) || (rc = rt_node_input_dtype(n, g, 1, &tb, err)) ||
	    (rc = check_outputs(n, err)))
		return rc;
	if (ta != tb)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "input types differ: %s and %s",
		                   base_dtype_name(ta), base_dtype_name(tb));
	if (!supports(op, ta))
		return rt_ew_no_kernel(n, ta, err);
	rt_graph_set_dtype(g, n->out[0], op->out_bool ? BASE_DT_BOOL : ta);
	/* The descriptor is static and never written through state. */
	n->state = (void *)op;
	n->run = run_binary;
	return 0;
}

#define BINARY_INIT(NAME, OP)                                                               \
	static int NAME(struct rt_node *n, struct rt_graph *g, struct strata_error *err) \
	{                                                                                   \
		return binary_init(n, g, err, &OP);                                         \
	}
BINARY_INIT(init_add, op_add)
BINARY_INIT(init_sub, op_sub)
BINARY_INIT(init_mul, op_mul)
BINARY_INIT(init_div, op_div)
BINARY_INIT(init_prelu, op_prelu)
BINARY_INIT(init_band, op_band)
BINARY_INIT(init_bor, op_bor)
BINARY_INIT(init_bxor, op_bxor)
BINARY_INIT(init_eq, op_eq)
BINARY_INIT(init_lt, op_lt)
BINARY_INIT(init_le, op_le)
BINARY_INIT(init_gt, op_gt)
BINARY_INIT(init_ge, op_ge)
BINARY_INIT(init_and, op_and)
BINARY_INIT(init_or, op_or)
BINARY_INIT(init_xor, op_xor)

static int init_mod(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	int64_t f = rt_attr_int(n, "fmod", 0);
	if (f != 0 && f != 1)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "fmod must be 0 or 1, not %lld",
		                   (long long)f);
	/* fmod=0 on floats is outside the spec; it gets the divisor's sign too. */
	return binary_init(n, g, err, f ? &op_fmod : &op_mod);
}

static int init_bitshift(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	const char *dir = rt_attr_string(n, "direction", "");
	if (strcmp(dir, "LEFT") == 0)
		return binary_init(n, g, err, &op_shl);
	if (strcmp(dir, "RIGHT") == 0)
		return binary_init(n, g, err, &op_shr);
	return rt_node_err(n, err, STRATA_INVALID_GRAPH, "direction must be LEFT or RIGHT, not '%s'",
	                   dir);
}

/* ---- Pow: base and exponent may differ in type -------------------------------- */

static int is_float_type(int dt)
{
	return dt == BASE_DT_FLOAT || dt == BASE_DT_DOUBLE || rt_ew_is_half(dt);
}

static int is_int_type(int dt)
{
	switch (dt) {
	case BASE_DT_INT8: case BASE_DT_INT16: case BASE_DT_INT32: case BASE_DT_INT64:
	case BASE_DT_UINT8: case BASE_DT_UINT16: case BASE_DT_UINT32: case BASE_DT_UINT64:
		return 1;
	}
	return 0;
}

/* The type Pow computes in: the base's float type, int64 for integer
 * powers of integers, double for fractional powers of integers. */
static int pow_type(int base, int expo)
{
	if (base == BASE_DT_DOUBLE)
		return BASE_DT_DOUBLE;
	if (is_float_type(base))
		return BASE_DT_FLOAT;
	return is_int_type(expo) ? BASE_DT_INT64 : BASE_DT_DOUBLE;
}

static int run_pow(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *a = rt_input(x, n, 0), *b = rt_input(x, n, 1);
	struct rt_tensor legacy, ca, cb, co, *out;
	int rank, rc;
	int64_t dims[RT_MAX_RANK];

	if (!a || !b)
		return rt_fail(x, n, STRATA_RUNTIME, "missing input");
	if (legacy_view(n, a, b, &legacy))
		b = &legacy;
	if (rt_broadcast_shape(a, b, &rank, dims) != 0)
		return shape_fail(x, n, a, b);
	if ((rc = rt_output(x, n, 0, a->dtype, rank, dims, &out)) != 0)
		return rc;
	int64_t count = runtime_tensor_count(out);
	if (count == 0)
		return 0;
	int ct = pow_type(a->dtype, b->dtype);
	if ((rc = rt_ew_as(x, n, a, ct, &ca)) != 0 || (rc = rt_ew_as(x, n, b, ct, &cb)) != 0)
		return rc;
	if (ct == out->dtype) {
		apply2(pow_tab[ct], &ca, &cb, out);
		return 0;
	}
	co = *out;
	co.dtype = ct;
	if (!(co.data = scratch_cells(x, n, ct, count)))
		return STRATA_NOMEM;
	apply2(pow_tab[ct], &ca, &cb, &co);
	return rt_ew_convert(ct, co.data, out->dtype, out->data, count);
}

static int init_pow(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	int ta, tb, rc;
	if (n->nin != 2)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "takes 2 inputs, has %d", n->nin);
	if ((rc = rt_node_input_dtype(n, g, 0, &ta, err)) || (rc = rt_node_input_dtype(n, g, 1, &tb, err)) ||
	    (rc = check_outputs(n, err)))
		return rc;
	if (!is_float_type(ta) && !is_int_type(ta))
		return rt_ew_no_kernel(n, ta, err);
	if (!is_float_type(tb) && !is_int_type(tb))
		return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED,
		                   "Pow (opset %d) has no kernel for exponent type %s", n->opset,
		                   base_dtype_name(tb));
	/* Before opset 12 base and exponent share one type. */
	if (n->opset < 12 && ta != tb)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH,
		                   "input types differ: %s and %s (opset %d)", base_dtype_name(ta),
		                   base_dtype_name(tb), n->opset);
	rt_graph_set_dtype(g, n->out[0], ta);
	n->run = run_pow;
	return 0;
}

/* ---- Sum, Mean, Max, Min over any number of inputs ------------------------------ */

static void mean_divide(int dt, void *cells, int64_t count, int k)
{
	if (dt == BASE_DT_DOUBLE) {
		double *c = cells;
		for (int64_t i = 0; i < count; i++)
			c[i] /= k;
	} else {
		float *c = cells;
		for (int64_t i = 0; i < count; i++)
			c[i] /= (float)k;
	}
}

static int run_variadic(struct rt_node *n, struct rt_exec *x)
{
	const struct varop *v = n->state;
	const struct rt_tensor *first = rt_input(x, n, 0);
	struct rt_tensor shape, acc, conv, *out;
	int rc;

	if (!first)
		return rt_fail(x, n, STRATA_RUNTIME, "missing input 0");
	shape = *first;
	for (int k = 1; k < n->nin; k++) {
		const struct rt_tensor *t = rt_input(x, n, k);
		struct rt_tensor next = shape;
		if (!t)
			return rt_fail(x, n, STRATA_RUNTIME, "missing input %d", k);
		if (rt_broadcast_shape(&shape, t, &next.rank, next.dims) != 0)
			return shape_fail(x, n, &shape, t);
		shape = next;
	}
	int dt = first->dtype;
	if ((rc = rt_output(x, n, 0, dt, shape.rank, shape.dims, &out)) != 0)
		return rc;
	int64_t count = runtime_tensor_count(out);
	if (count == 0)
		return 0;

	/* acc has the output's shape; half types accumulate in float. */
	int ct = rt_ew_is_half(dt) ? BASE_DT_FLOAT : dt;
	acc = *out;
	acc.dtype = ct;
	if (ct != dt && !(acc.data = scratch_cells(x, n, ct, count)))
		return STRATA_NOMEM;
	binfn *fn = v->op->tab[ct];

	if (n->nin == 1) {
		if ((rc = rt_ew_as(x, n, first, ct, &conv)) != 0)
			return rc;
		memcpy(acc.data, conv.data, (size_t)count * base_dtype_size(ct));
	} else {
		struct rt_tensor c0, c1;
		if ((rc = rt_ew_as(x, n, first, ct, &c0)) != 0 ||
		    (rc = rt_ew_as(x, n, rt_input(x, n, 1), ct, &c1)) != 0)
			return rc;
		apply2(fn, &c0, &c1, &acc);
		for (int k = 2; k < n->nin; k++) {
			if ((rc = rt_ew_as(x, n, rt_input(x, n, k), ct, &conv)) != 0)
				return rc;
			apply2(fn, &acc, &conv, &acc);
		}
	}
	if (v->mean)
		mean_divide(ct, acc.data, count, n->nin);
	if (ct != dt)
		return rt_ew_convert(ct, acc.data, dt, out->data, count);
	return 0;
}

static int variadic_init(struct rt_node *n, struct rt_graph *g, struct strata_error *err,
                         const struct varop *v)
{
	int t0, rc;
	if (n->nin < 1)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "needs at least one input");
	if ((rc = rt_node_input_dtype(n, g, 0, &t0, err)) || (rc = check_outputs(n, err)))
		return rc;
	for (int k = 1; k < n->nin; k++) {
		int t;
		if ((rc = rt_node_input_dtype(n, g, k, &t, err)) != 0)
			return rc;
		if (t != t0)
			return rt_node_err(n, err, STRATA_INVALID_GRAPH,
			                   "input types differ: %s (input 0) and %s (input %d)",
			                   base_dtype_name(t0), base_dtype_name(t), k);
	}
	/* Mean is defined for floating-point types only. */
	if (!supports(v->op, t0) || (v->mean && !is_float_type(t0)))
		return rt_ew_no_kernel(n, t0, err);
	rt_graph_set_dtype(g, n->out[0], t0);
	n->state = (void *)v; /* static, never written through state */
	n->run = run_variadic;
	return 0;
}

static int init_sum(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	return variadic_init(n, g, err, &var_sum);
}
static int init_mean(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	return variadic_init(n, g, err, &var_mean);
}
static int init_max(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	return variadic_init(n, g, err, &var_max);
}
static int init_min(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	return variadic_init(n, g, err, &var_min);
}

/* ---- Where ------------------------------------------------------------------------ */

/* o = c ? x : y over n cells; sc, sx, sy are 0 (broadcast) or 1.  Cells are
 * copied by size, so strings share the input's string pointers. */
typedef void wherefn(const uint8_t *c, const void *x, const void *y, void *o, int64_t n,
                     int64_t sc, int64_t sx, int64_t sy);

#define WHERE_DEF(NAME, T)                                                                    \
	static void NAME(const uint8_t *c, const void *px, const void *py, void *po, int64_t n, \
	                 int64_t sc, int64_t sx, int64_t sy)                                  \
	{                                                                                     \
		const T *xs = px;                                                             \
		const T *ys = py;                                                             \
		T *o = po;                                                                    \
		if (sc && sx && sy) {                                                         \
			for (int64_t i = 0; i < n; i++)                                       \
				o[i] = c[i] ? xs[i] : ys[i];                                  \
		} else {                                                                      \
			for (int64_t i = 0; i < n; i++)                                       \
				o[i] = c[i * sc] ? xs[i * sx] : ys[i * sy];                   \
		}                                                                             \
	}
WHERE_DEF(where1, uint8_t)
WHERE_DEF(where2, uint16_t)
WHERE_DEF(where4, uint32_t)
WHERE_DEF(where8, uint64_t)

static wherefn *where_fn(size_t size)
{
	switch (size) {
	case 1: return where1;
	case 2: return where2;
	case 4: return where4;
	case 8: return where8;
	}
	return NULL;
}

static int run_where(struct rt_node *n, struct rt_exec *x)
{
	const struct rt_tensor *in[3];
	struct rt_tensor shape, *out;
	int rc;

	for (int k = 0; k < 3; k++)
		if (!(in[k] = rt_input(x, n, k)))
			return rt_fail(x, n, STRATA_RUNTIME, "missing input %d", k);
	shape = *in[0];
	for (int k = 1; k < 3; k++) {
		struct rt_tensor next = shape;
		if (rt_broadcast_shape(&shape, in[k], &next.rank, next.dims) != 0)
			return shape_fail(x, n, &shape, in[k]);
		shape = next;
	}
	int dt = in[1]->dtype;
	if ((rc = rt_output(x, n, 0, dt, shape.rank, shape.dims, &out)) != 0)
		return rc;
	if (runtime_tensor_count(out) == 0)
		return 0;

	size_t es = cell_size(dt);
	wherefn *fn = where_fn(es);
	BASE_ASSERT(fn);
	struct bplan p;
	plan_build(&p, 3, in, out->rank, out->dims);
	int r = p.rank;
	int64_t len = p.dims[r - 1];
	const uint8_t *pc = in[0]->data;
	const char *px = in[1]->data, *py = in[2]->data;
	char *po = out->data;
	int64_t idx[RT_MAX_RANK] = { 0 };
	int64_t off[3] = { 0, 0, 0 }, oo = 0;

	for (;;) {
		fn(pc + off[0], px + off[1] * (int64_t)es, py + off[2] * (int64_t)es,
		   po + oo * (int64_t)es, len, p.st[0][r - 1], p.st[1][r - 1], p.st[2][r - 1]);
		oo += len;
		int d = r - 2;
		for (; d >= 0; d--) {
			idx[d]++;
			for (int k = 0; k < 3; k++)
				off[k] += p.st[k][d];
			if (idx[d] < p.dims[d])
				break;
			for (int k = 0; k < 3; k++)
				off[k] -= p.st[k][d] * p.dims[d];
			idx[d] = 0;
		}
		if (d < 0)
			break;
	}
	return 0;
}

static int init_where(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	int tc, tx, ty, rc;
	if (n->nin != 3)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "takes 3 inputs, has %d", n->nin);
	if ((rc = rt_node_input_dtype(n, g, 0, &tc, err)) || (rc = rt_node_input_dtype(n, g, 1, &tx, err)) ||
	    (rc = rt_node_input_dtype(n, g, 2, &ty, err)) || (rc = check_outputs(n, err)))
		return rc;
	if (tc != BASE_DT_BOOL)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "condition must be bool, not %s",
		                   base_dtype_name(tc));
	if (tx != ty)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "input types differ: %s and %s",
		                   base_dtype_name(tx), base_dtype_name(ty));
	if (!where_fn(cell_size(tx)))
		return rt_ew_no_kernel(n, tx, err);
	rt_graph_set_dtype(g, n->out[0], tx);
	n->run = run_where;
	return 0;
}

/* ---- the table ---------------------------------------------------------------------- */

#define UNARY(OP, SINCE) { "", OP, SINCE, rt_ew_unary_init, rt_ew_unary_fini }

const struct rt_opdef rt_ops_elementwise[] = {
	{ "", "Add", 1, init_add, NULL },
	{ "", "Sub", 1, init_sub, NULL },
	{ "", "Mul", 1, init_mul, NULL },
	{ "", "Div", 1, init_div, NULL },
	{ "", "Mod", 10, init_mod, NULL },
	{ "", "Pow", 1, init_pow, NULL },
	{ "", "PRelu", 1, init_prelu, NULL },
	{ "", "BitShift", 11, init_bitshift, NULL },
	{ "", "BitwiseAnd", 18, init_band, NULL },
	{ "", "BitwiseOr", 18, init_bor, NULL },
	{ "", "BitwiseXor", 18, init_bxor, NULL },
	{ "", "Equal", 1, init_eq, NULL },
	{ "", "Less", 1, init_lt, NULL },
	{ "", "LessOrEqual", 12, init_le, NULL },
	{ "", "Greater", 1, init_gt, NULL },
	{ "", "GreaterOrEqual", 12, init_ge, NULL },
	{ "", "And", 1, init_and, NULL },
	{ "", "Or", 1, init_or, NULL },
	{ "", "Xor", 1, init_xor, NULL },
	{ "", "Sum", 1, init_sum, NULL },
	{ "", "Mean", 1, init_mean, NULL },
	{ "", "Max", 1, init_max, NULL },
	{ "", "Min", 1, init_min, NULL },
	{ "", "Where", 9, init_where, NULL },
	{ "", "Clip", 1, rt_ew_clip_init, rt_ew_unary_fini },
	{ "", "Cast", 1, rt_ew_cast_init, NULL },
	{ "", "CastLike", 15, rt_ew_castlike_init, NULL },
	UNARY("Not", 1),
	UNARY("BitwiseNot", 18),
	UNARY("Relu", 1),
	UNARY("LeakyRelu", 1),
	UNARY("Elu", 1),
	UNARY("Selu", 1),
	UNARY("Celu", 12),
	UNARY("ThresholdedRelu", 10),
	UNARY("Shrink", 9),
	UNARY("Sigmoid", 1),
	UNARY("HardSigmoid", 1),
	UNARY("HardSwish", 14),
	UNARY("Softplus", 1),
	UNARY("Softsign", 1),
	UNARY("Mish", 18),
	UNARY("Gelu", 20),
	UNARY("Tanh", 1),
	UNARY("Erf", 9),
	UNARY("Sqrt", 1),
	UNARY("Exp", 1),
	UNARY("Log", 1),
	UNARY("Neg", 1),
	UNARY("Abs", 1),
	UNARY("Reciprocal", 1),
	UNARY("Floor", 1),
	UNARY("Ceil", 1),
	UNARY("Round", 11),
	UNARY("Sign", 9),
	UNARY("Sin", 7),
	UNARY("Cos", 7),
	UNARY("Tan", 7),
	UNARY("Asin", 7),
	UNARY("Acos", 7),
	UNARY("Atan", 7),
	UNARY("Sinh", 9),
	UNARY("Cosh", 9),
	UNARY("Asinh", 9),
	UNARY("Acosh", 9),
	UNARY("Atanh", 9),
	UNARY("IsNaN", 9),
	UNARY("IsInf", 10),
	{ "com.microsoft", "Gelu", 1, rt_ew_unary_init, rt_ew_unary_fini },
	{ .op = NULL },
};
