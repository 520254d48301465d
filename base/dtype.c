/*
 * dtype.c: element types in ONNX's TensorProto numbering, shared by the
 * store (tensor cells), rank (attribute and model values) and the runtime.
 * Conversions of 16-bit floats round to nearest even, as the hardware does.
 */
#include <math.h>
#include <string.h>

#include "base.h"

static const struct {
	const char *name;
	size_t size;
} types[BASE_DT_COUNT] = {
	[BASE_DT_UNDEFINED] = {"undefined", 0},
	[BASE_DT_FLOAT] = {"float", 4},
	[BASE_DT_UINT8] = {"uint8", 1},
	[BASE_DT_INT8] = {"int8", 1},
	[BASE_DT_UINT16] = {"uint16", 2},
	[BASE_DT_INT16] = {"int16", 2},
	[BASE_DT_INT32] = {"int32", 4},
	[BASE_DT_INT64] = {"int64", 8},
	[BASE_DT_STRING] = {"string", sizeof(char *)},
	[BASE_DT_BOOL] = {"bool", 1},
	[BASE_DT_FLOAT16] = {"float16", 2},
	[BASE_DT_DOUBLE] = {"double", 8},
	[BASE_DT_UINT32] = {"uint32", 4},
	[BASE_DT_UINT64] = {"uint64", 8},
	[BASE_DT_COMPLEX64] = {"complex64", 8},
	[BASE_DT_COMPLEX128] = {"complex128", 16},
	[BASE_DT_BFLOAT16] = {"bfloat16", 2},
};

size_t base_dtype_size(int dt)
{
	return dt > 0 && dt < BASE_DT_COUNT ? types[dt].size : 0;
}

const char *base_dtype_name(int dt)
{
	return dt >= 0 && dt < BASE_DT_COUNT ? types[dt].name : "?";
}

int base_dtype_from_name(const char *name)
{
	for (int i = 1; i < BASE_DT_COUNT; i++)
		if (strcmp(types[i].name, name) == 0)
			return i;
	return BASE_DT_UNDEFINED;
}

float base_bf16_to_f32(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

uint16_t base_f32_to_bf16(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
	u += 0x7fffu + ((u >> 16) & 1);
	return (uint16_t)(u >> 16);
}

float base_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16;
	uint32_t exp = (h >> 10) & 0x1f;
	uint32_t man = h & 0x3ff;
	uint32_t u;
	if (exp == 0) {
		if (man == 0) {
			u = sign;
		} else { /* subnormal: normalize */
			exp = 127 - 15 + 1;
			while (!(man & 0x400)) {
				man <<= 1;
				exp--;
			}
			man &= 0x3ff;
			u = sign | (exp << 23) | (man << 13);
		}
	} else if (exp == 31) {
		u = sign | 0x7f800000u | (man << 13);
	} else {
		u = sign | ((exp + 127 - 15) << 23) | (man << 13);
	}
	float f;
	memcpy(&f, &u, 4);
	return f;
}

uint16_t base_f32_to_f16(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
	uint32_t au = u & 0x7fffffffu;
	if (au > 0x7f800000u)
		return sign | 0x7e00; /* NaN */
	if (au >= 0x477ff000u)    /* rounds to >= 65520: infinity */
		return sign | 0x7c00;
	if (au < 0x38800000u) {   /* below the smallest normal half: subnormal or zero */
		if (au < 0x33000000u)
			return sign; /* at most half the smallest subnormal */
		/* value = man * 2^(E-150); in units of 2^-24 that is man >> (126-E). */
		uint32_t man = (au & 0x7fffff) | 0x800000;
		int s = 126 - (int)(au >> 23); /* 14..24 */
		uint32_t q = man >> s;
		uint32_t rem = man & ((1u << s) - 1);
		uint32_t halfway = 1u << (s - 1);
		if (rem > halfway || (rem == halfway && (q & 1)))
			q++;
		return sign | (uint16_t)q;
	}
	uint32_t e = (au >> 23) - 127 + 15;
	uint32_t man = au & 0x7fffff;
	uint32_t h = (e << 10) | (man >> 13);
	uint32_t rem = man & 0x1fff;
	if (rem > 0x1000 || (rem == 0x1000 && (h & 1)))
		h++; /* may carry into the exponent, which is still right */
	return sign | (uint16_t)h;
}

double base_load_double(int dt, const void *cells, size_t i)
{
	switch (dt) {
	case BASE_DT_FLOAT: return ((const float *)cells)[i];
	case BASE_DT_DOUBLE: return ((const double *)cells)[i];
	case BASE_DT_INT8: return ((const int8_t *)cells)[i];
	case BASE_DT_UINT8: return ((const uint8_t *)cells)[i];
	case BASE_DT_INT16: return ((const int16_t *)cells)[i];
	case BASE_DT_UINT16: return ((const uint16_t *)cells)[i];
	case BASE_DT_INT32: return ((const int32_t *)cells)[i];
	case BASE_DT_UINT32: return ((const uint32_t *)cells)[i];
	case BASE_DT_INT64: return (double)((const int64_t *)cells)[i];
	case BASE_DT_UINT64: return (double)((const uint64_t *)cells)[i];
	case BASE_DT_BOOL: return ((const uint8_t *)cells)[i] != 0;
	case BASE_DT_FLOAT16: return base_f16_to_f32(((const uint16_t *)cells)[i]);
	case BASE_DT_BFLOAT16: return base_bf16_to_f32(((const uint16_t *)cells)[i]);
	}
	return NAN;
}

void base_store_double(int dt, void *cells, size_t i, double v)
{
	switch (dt) {
	case BASE_DT_FLOAT: ((float *)cells)[i] = (float)v; break;
	case BASE_DT_DOUBLE: ((double *)cells)[i] = v; break;
	case BASE_DT_INT8: ((int8_t *)cells)[i] = (int8_t)v; break;
	case BASE_DT_UINT8: ((uint8_t *)cells)[i] = (uint8_t)v; break;
	case BASE_DT_INT16: ((int16_t *)cells)[i] = (int16_t)v; break;
	case BASE_DT_UINT16: ((uint16_t *)cells)[i] = (uint16_t)v; break;
	case BASE_DT_INT32: ((int32_t *)cells)[i] = (int32_t)v; break;
	case BASE_DT_UINT32: ((uint32_t *)cells)[i] = (uint32_t)v; break;
	case BASE_DT_INT64: ((int64_t *)cells)[i] = (int64_t)v; break;
	case BASE_DT_UINT64: ((uint64_t *)cells)[i] = (uint64_t)v; break;
	case BASE_DT_BOOL: ((uint8_t *)cells)[i] = v != 0; break;
	case BASE_DT_FLOAT16: ((uint16_t *)cells)[i] = base_f32_to_f16((float)v); break;
	case BASE_DT_BFLOAT16: ((uint16_t *)cells)[i] = base_f32_to_bf16((float)v); break;
	}
}
