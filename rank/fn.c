/*
 * fn.c: the scalar functions of rank programs, by id.
 *
 * The compiler names a function by its id in an instruction (UN and MAP: a
 * unary id, BIN and JOIN: an enum rank_binop or a binary id) and the VM
 * applies it to numbers or to every cell of a tensor.  This file is the one
 * place that ties an id to its name in the schema language and to its
 * implementation, so the compiler and the VM agree without knowing each
 * other.  Ids are stable within one build only: nothing stores them.
 */
#include <math.h>
#include <string.h>

#include "rank_eval.h"

struct named_fn {
	const char *name;
	int fn;
};

/* The unary and binary math functions an expression may call by name. */
static const struct named_fn unary[] = {
	{ "exp", RANK_FN_EXP }, { "log", RANK_FN_LOG }, { "log10", RANK_FN_LOG10 },
	{ "sqrt", RANK_FN_SQRT }, { "tanh", RANK_FN_TANH }, { "sigmoid", RANK_FN_SIGMOID },
	{ "relu", RANK_FN_RELU }, { "fabs", RANK_FN_FABS }, { "abs", RANK_FN_FABS },
	{ "floor", RANK_FN_FLOOR }, { "ceil", RANK_FN_CEIL }, { "sin", RANK_FN_SIN },
	{ "cos", RANK_FN_COS }, { "isNan", RANK_FN_ISNAN }, { "tan", RANK_FN_TAN },
	{ "acos", RANK_FN_ACOS }, { "asin", RANK_FN_ASIN }, { "atan", RANK_FN_ATAN },
	{ "cosh", RANK_FN_COSH }, { "sinh", RANK_FN_SINH }, { "elu", RANK_FN_ELU },
	{ "round", RANK_FN_ROUND }, { "sign", RANK_FN_SIGN }, { "square", RANK_FN_SQUARE },
	{ "erf", RANK_FN_ERF },
};
static const struct named_fn binary[] = {
	{ "pow", RANK_FN_POW }, { "min", RANK_FN_MIN }, { "max", RANK_FN_MAX },
	{ "atan2", RANK_FN_ATAN2 }, { "fmod", RANK_FN_FMOD }, { "ldexp", RANK_FN_LDEXP },
	{ "bit", RANK_FN_BIT }, { "hamming", RANK_FN_HAMMING },
};

static int find(const struct named_fn *t, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(t[i].name, name) == 0)
			return t[i].fn;
	return 0;
}

static const char *name_of(const struct named_fn *t, size_t n, int fn)
{
	for (size_t i = 0; i < n; i++)
		if (t[i].fn == fn)
			return t[i].name;
	return "?";
}

int rank_fn_unary(const char *name)
{
	return find(unary, sizeof unary / sizeof unary[0], name);
}

int rank_fn_binary(const char *name)
{
	return find(binary, sizeof binary / sizeof binary[0], name);
}

const char *rank_fn_name(int fn, int is_binary)
{
	static const char *const ops[] = { "?", "+", "-", "*", "/", "%", "^", "==", "!=", "<",
	                                   "<=", ">", ">=", "&&", "||", "~=" };
	if (is_binary)
		return fn >= RB_ADD && fn <= RB_APPROX ? ops[fn] :
		       name_of(binary, sizeof binary / sizeof binary[0], fn);
	if (fn == RANK_FN_NEG)
		return "neg";
	if (fn == RANK_FN_NOT)
		return "not";
	if (fn == RANK_FN_TO_FLOAT)
		return "cell_cast<float>";
	if (fn == RANK_FN_TO_BFLOAT16)
		return "cell_cast<bfloat16>";
	if (fn == RANK_FN_TO_INT8)
		return "cell_cast<int8>";
	return name_of(unary, sizeof unary / sizeof unary[0], fn);
}

/* a ~= b: equal, or apart by at most 1e-6 of the larger magnitude. */
static double approx_equal(double x, double y)
{
	if (x == y)
		return 1.0;
	return fabs(x - y) <= 1e-6 * fmax(fabs(x), fabs(y)) ? 1.0 : 0.0;
}

/* ldexp's exponent: y truncated towards zero, held within int's range. */
static int exponent(double y)
{
	if (isnan(y))
		return 0;
	if (y > 100000.0)
		return 100000;
	if (y < -100000.0)
		return -100000;
	return (int)y;
}

/* x as the int8 cell bit and hamming read (truncated, held in range). */
static int int8_of(double x)
{
	if (!(x > -128.0))
		return -128;
	if (x > 127.0)
		return 127;
	return (int)x;
}

double rank_fn1(int fn, double x)
{
	switch (fn) {
	case RANK_FN_NEG: return -x;
	case RANK_FN_NOT: return x == 0.0 ? 1.0 : 0.0;
	case RANK_FN_EXP: return exp(x);
	case RANK_FN_LOG: return log(x);
	case RANK_FN_LOG10: return log10(x);
	case RANK_FN_SQRT: return sqrt(x);
	case RANK_FN_TANH: return tanh(x);
	case RANK_FN_SIGMOID: return 1.0 / (1.0 + exp(-x));
	case RANK_FN_RELU: return x > 0.0 ? x : 0.0;
	case RANK_FN_FABS: return fabs(x);
	case RANK_FN_FLOOR: return floor(x);
	case RANK_FN_CEIL: return ceil(x);
	case RANK_FN_SIN: return sin(x);
	case RANK_FN_COS: return cos(x);
	case RANK_FN_ISNAN: return isnan(x) ? 1.0 : 0.0;
	case RANK_FN_TAN: return tan(x);
	case RANK_FN_ACOS: return acos(x);
	case RANK_FN_ASIN: return asin(x);
	case RANK_FN_ATAN: return atan(x);
	case RANK_FN_COSH: return cosh(x);
	case RANK_FN_SINH: return sinh(x);
	case RANK_FN_ELU: return x < 0.0 ? exp(x) - 1.0 : x;
	case RANK_FN_ROUND: return round(x);
	case RANK_FN_SIGN: return x > 0.0 ? 1.0 : x < 0.0 ? -1.0 : 0.0;
	case RANK_FN_SQUARE: return x * x;
	case RANK_FN_ERF: return erf(x);
	case RANK_FN_TO_FLOAT: return (double)(float)x;
	case RANK_FN_TO_BFLOAT16: return (double)base_bf16_to_f32(base_f32_to_bf16((float)x));
	case RANK_FN_TO_INT8: return isnan(x) ? 0.0 : (double)int8_of(x);
	}
	base_assert_fail("unknown unary function", __FILE__, __LINE__);
}

double rank_string_hash(const char *s, size_t n)
{
	/* 53 bits: every value is a whole number a double holds exactly */
	return (double)(base_hash64(s, n, 0x5eed) >> 11);
}

double rank_fn2(int fn, double x, double y)
{
	switch (fn) {
	case RB_ADD: return x + y;
	case RB_SUB: return x - y;
	case RB_MUL: return x * y;
	case RB_DIV: return x / y;
	case RB_MOD: return fmod(x, y);
	case RB_POW: return pow(x, y);
	case RB_EQ: return x == y;
	case RB_NE: return x != y;
	case RB_LT: return x < y;
	case RB_LE: return x <= y;
	case RB_GT: return x > y;
	case RB_GE: return x >= y;
	case RB_AND: return x != 0.0 && y != 0.0;
	case RB_OR: return x != 0.0 || y != 0.0;
	case RB_APPROX: return approx_equal(x, y);
	case RANK_FN_MIN: return x < y ? x : y;
	case RANK_FN_MAX: return x > y ? x : y;
	case RANK_FN_ATAN2: return atan2(x, y);
	case RANK_FN_FMOD: return fmod(x, y);
	case RANK_FN_POW: return pow(x, y);
	case RANK_FN_LDEXP: return ldexp(x, exponent(y));
	case RANK_FN_BIT: {
		int n = exponent(y);
		return n < 0 || n > 7 ? 0.0 : (double)(((unsigned)(uint8_t)int8_of(x) >> n) & 1u);
	}
	case RANK_FN_HAMMING: return (double)__builtin_popcount((unsigned)(uint8_t)(int8_of(x) ^
	                                                                           int8_of(y)));
	}
	base_assert_fail("unknown binary function", __FILE__, __LINE__);
}
