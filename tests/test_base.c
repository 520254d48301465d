/*
 * test_base.c: unit tests of base/, the layer every subsystem stands on.
 *
 * Covered: the allocator's counters and its fault injection (the Nth
 * allocation fails, then allocation works again, and nothing leaks),
 * base_grow's hard limit, arenas (alignment, reuse after reset without new
 * allocations, oversized requests), the bfloat16 and float16 conversions
 * (exact round trips over every 16-bit pattern, round-to-nearest-even at
 * the halfway points, overflow to infinity, NaN), error reporting
 * (base_err, base_err_prefix, truncation of long messages) and the file
 * helpers' error paths.
 *
 * The allocator counters are process-wide, so every test measures deltas
 * against a snapshot taken at its start rather than absolute values.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../base/base.h"

/* ---- helpers ----------------------------------------------------------------- */

static uint32_t f32_bits(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	return u;
}

static float bits_f32(uint32_t u)
{
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
}

static uint64_t live_now(void)
{
	struct base_alloc_stats st;
	base_alloc_stats(&st);
	return st.live_bytes;
}

/* A temporary file holding text; the name is written to path. */
static void make_temp_file(char *path, size_t cap, const char *text)
{
	snprintf(path, cap, "/tmp/strata_test_base_XXXXXX");
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	size_t n = strlen(text);
	assert_int_equal(write(fd, text, n), (ssize_t)n);
	close(fd);
}

/* ---- the allocator ------------------------------------------------------------ */

static void test_alloc_counters(void **state)
{
	(void)state;
	struct base_alloc_stats a, b;
	base_alloc_stats(&a);
	uint64_t thread0 = base_alloc_thread_count();

	char *p = base_alloc(1000);
	assert_non_null(p);
	/* The header promises 64-byte alignment to every block. */
	assert_int_equal((uintptr_t)p % 64, 0);
	memset(p, 0xab, 1000);

	base_alloc_stats(&b);
	assert_int_equal(b.allocs - a.allocs, 1);
	assert_int_equal(b.live_bytes - a.live_bytes, 1000);
	assert_true(b.peak_bytes >= b.live_bytes);
	assert_int_equal(base_alloc_thread_count() - thread0, 1);

	base_free(p, 1000);
	base_alloc_stats(&b);
	assert_int_equal(b.frees - a.frees, 1);
	assert_int_equal(b.live_bytes, a.live_bytes);

	/* Freeing NULL is allowed and counts nothing. */
	base_free(NULL, 0);
	struct base_alloc_stats c;
	base_alloc_stats(&c);
	assert_int_equal(c.frees, b.frees);
}

static void test_alloc_calloc_realloc_strdup(void **state)
{
	(void)state;
	uint64_t live0 = live_now();

	unsigned char *z = base_calloc(100, 3);
	assert_non_null(z);
	for (int i = 0; i < 300; i++)
		assert_int_equal(z[i], 0);
	for (int i = 0; i < 300; i++)
		z[i] = (unsigned char)i;

	/* Growing keeps the contents; live bytes follow the new size. */
	unsigned char *g = base_realloc(z, 300, 5000);
	assert_non_null(g);
	for (int i = 0; i < 300; i++)
		assert_int_equal(g[i], (unsigned char)i);
	assert_int_equal(live_now() - live0, 5000);

	/* Shrinking keeps the prefix. */
	g = base_realloc(g, 5000, 10);
	assert_non_null(g);
	for (int i = 0; i < 10; i++)
		assert_int_equal(g[i], (unsigned char)i);
	base_free(g, 10);

	char *s = base_strdup("bolt cutter");
	assert_non_null(s);
	assert_string_equal(s, "bolt cutter");
	char *t = base_strndup("bolt cutter", 4);
	assert_non_null(t);
	assert_string_equal(t, "bolt");
	base_strfree(s);
	base_strfree(t);
	base_strfree(NULL);

	assert_int_equal(live_now(), live0);
}

static void test_alloc_calloc_overflow(void **state)
{
	(void)state;
	uint64_t live0 = live_now();
	/* count * size overflows size_t: must fail, not allocate a small block. */
	assert_null(base_calloc(SIZE_MAX / 2, 4));
	assert_null(base_calloc(4, SIZE_MAX / 2));
	assert_int_equal(live_now(), live0);
}

static void test_alloc_fault_injection(void **state)
{
	(void)state;
	uint64_t live0 = live_now();

	/* 1 = the very next allocation fails, and only that one. */
	base_alloc_fail_after(1);
	assert_null(base_alloc(16));
	void *p = base_alloc(16);
	assert_non_null(p);
	base_free(p, 16);

	/* 3: two succeed, the third fails, the fourth succeeds again. */
	base_alloc_fail_after(3);
	void *a = base_alloc(8), *b = base_alloc(8);
	assert_non_null(a);
	assert_non_null(b);
	assert_null(base_alloc(8));
	void *c = base_alloc(8);
	assert_non_null(c);
	base_free(a, 8);
	base_free(b, 8);
	base_free(c, 8);

	/* Every allocating entry point honours the injection. */
	base_alloc_fail_after(1);
	assert_null(base_calloc(4, 4));
	base_alloc_fail_after(1);
	assert_null(base_strdup("x"));
	base_alloc_fail_after(1);
	assert_null(base_strndup("xyz", 2));

	/* A failed realloc leaves the old block allocated and intact. */
	char *r = base_alloc(32);
	assert_non_null(r);
	memcpy(r, "keep me", 8);
	base_alloc_fail_after(1);
	assert_null(base_realloc(r, 32, 1 << 20));
	assert_string_equal(r, "keep me");
	base_free(r, 32);

	/* 0 and negative values disable injection. */
	base_alloc_fail_after(2);
	base_alloc_fail_after(0);
	for (int i = 0; i < 4; i++) {
		void *q = base_alloc(8);
		assert_non_null(q);
		base_free(q, 8);
	}
	base_alloc_fail_after(-1);
	p = base_alloc(8);
	assert_non_null(p);
	base_free(p, 8);

	assert_int_equal(live_now(), live0);
}

/* A failed allocation is not counted as one. */
static void test_alloc_failure_not_counted(void **state)
{
	(void)state;
	struct base_alloc_stats a, b;
	base_alloc_stats(&a);
	base_alloc_fail_after(1);
	assert_null(base_alloc(64));
	base_alloc_stats(&b);
	assert_int_equal(b.allocs, a.allocs);
	assert_int_equal(b.live_bytes, a.live_bytes);
}

static void test_grow(void **state)
{
	(void)state;
	uint64_t live0 = live_now();
	int *v = NULL;
	size_t cap = 0;

	assert_int_equal(base_grow((void **)&v, &cap, 10, sizeof *v, 1000), 0);
	assert_non_null(v);
	assert_true(cap >= 10 && cap <= 1000);
	for (int i = 0; i < 10; i++)
		v[i] = i * 7;

	/* Asking for what is already there changes nothing. */
	int *before = v;
	size_t cap_before = cap;
	assert_int_equal(base_grow((void **)&v, &cap, 5, sizeof *v, 1000), 0);
	assert_ptr_equal(v, before);
	assert_int_equal(cap, cap_before);

	assert_int_equal(base_grow((void **)&v, &cap, 600, sizeof *v, 1000), 0);
	assert_true(cap >= 600 && cap <= 1000);
	for (int i = 0; i < 10; i++)
		assert_int_equal(v[i], i * 7);

	/* Exactly the limit is allowed; past it is STRATA_LIMIT and the array
	 * stays as it was. */
	assert_int_equal(base_grow((void **)&v, &cap, 1000, sizeof *v, 1000), 0);
	assert_int_equal(cap, 1000);
	before = v;
	assert_int_equal(base_grow((void **)&v, &cap, 1001, sizeof *v, 1000), STRATA_LIMIT);
	assert_ptr_equal(v, before);
	assert_int_equal(cap, 1000);
	for (int i = 0; i < 10; i++)
		assert_int_equal(v[i], i * 7);
	base_free(v, cap * sizeof *v);

	/* An allocation failure reports STRATA_NOMEM and keeps the array. */
	v = NULL;
	cap = 0;
	assert_int_equal(base_grow((void **)&v, &cap, 4, sizeof *v, 1 << 20), 0);
	v[0] = 42;
	size_t old = cap;
	base_alloc_fail_after(1);
	assert_int_equal(base_grow((void **)&v, &cap, 1 << 16, sizeof *v, 1 << 20), STRATA_NOMEM);
	assert_int_equal(cap, old);
	assert_int_equal(v[0], 42);
	base_free(v, cap * sizeof *v);

	/* need * elem overflowing size_t must be refused, not wrapped. */
	v = NULL;
	cap = 0;
	assert_int_not_equal(base_grow((void **)&v, &cap, SIZE_MAX / 2, 16, SIZE_MAX), 0);
	assert_null(v);

	assert_int_equal(live_now(), live0);
}

/* ---- arenas ------------------------------------------------------------------------ */

static void test_arena_basic(void **state)
{
	(void)state;
	uint64_t live0 = live_now();
	struct base_arena a;
	base_arena_init(&a, 4096);

	char *p[64];
	for (int i = 0; i < 64; i++) {
		size_t align = (size_t)1 << (i % 7); /* 1 .. 64 */
		p[i] = base_arena_alloc(&a, 100, align);
		assert_non_null(p[i]);
		assert_int_equal((uintptr_t)p[i] % align, 0);
		memset(p[i], i, 100);
	}
	/* Later allocations never overwrote earlier ones. */
	for (int i = 0; i < 64; i++)
		for (int j = 0; j < 100; j++)
			assert_int_equal((unsigned char)p[i][j], i);

	char *s = base_arena_strdup(&a, "noise-cancelling headphones");
	assert_non_null(s);
	assert_string_equal(s, "noise-cancelling headphones");

	/* A request larger than the block size still succeeds. */
	char *big = base_arena_alloc(&a, 100000, 64);
	assert_non_null(big);
	assert_int_equal((uintptr_t)big % 64, 0);
	memset(big, 1, 100000);

	base_arena_free(&a);
	assert_int_equal(live_now(), live0);

	/* Freeing an arena that allocated nothing is fine, and twice too. */
	base_arena_init(&a, 1024);
	base_arena_free(&a);
	base_arena_free(&a);
	assert_int_equal(live_now(), live0);
}

static void test_arena_reset_reuses(void **state)
{
	(void)state;
	uint64_t live0 = live_now();
	struct base_arena a;
	base_arena_init(&a, 1 << 14);

	void *first = base_arena_alloc(&a, 256, 16);
	assert_non_null(first);
	for (int i = 0; i < 40; i++)
		assert_non_null(base_arena_alloc(&a, 100, 8));
	base_arena_reset(&a);

	/* Steady state: after a reset the same work allocates nothing from the
	 * heap, and starts again at the first block. */
	uint64_t n0 = base_alloc_thread_count();
	void *again = base_arena_alloc(&a, 256, 16);
	assert_ptr_equal(again, first);
	for (int i = 0; i < 40; i++)
		assert_non_null(base_arena_alloc(&a, 100, 8));
	assert_int_equal(base_alloc_thread_count(), n0);

	base_arena_free(&a);
	assert_int_equal(live_now(), live0);
}

static void test_arena_alloc_failure(void **state)
{
	(void)state;
	uint64_t live0 = live_now();
	struct base_arena a;
	base_arena_init(&a, 1024);
	base_alloc_fail_after(1);
	/* The arena needs a block from the heap: the failure comes back as NULL. */
	assert_null(base_arena_alloc(&a, 64, 8));
	/* And the arena still works afterwards. */
	char *p = base_arena_alloc(&a, 64, 8);
	assert_non_null(p);
	/* A request that fits the current block needs no heap allocation, so
	 * a pending fault does not touch it. */
	base_alloc_fail_after(1);
	assert_non_null(base_arena_strdup(&a, "x"));
	base_alloc_fail_after(0);
	base_arena_free(&a);
	assert_int_equal(live_now(), live0);
}

/* SQLite-style sweep: fail the 1st, 2nd, ... heap allocation of a piece of
 * work that needs several blocks.  Each run must report the failure (a NULL
 * at some point), leave what it already has intact, and free cleanly, until
 * a run where no injected fault is reached. */
static void test_arena_fault_sweep(void **state)
{
	(void)state;
	uint64_t live0 = live_now();
	int completed = 0, faults = 0;
	for (long n = 1; n < 64 && !completed; n++) {
		struct base_arena a;
		base_arena_init(&a, 512);
		base_alloc_fail_after(n);
		int failed_at = -1;
		char *blocks[12];
		for (int i = 0; i < 12; i++) {
			blocks[i] = base_arena_alloc(&a, 400, 16); /* about one block each */
			if (!blocks[i]) {
				failed_at = i;
				break;
			}
			memset(blocks[i], i + 1, 400);
		}
		base_alloc_fail_after(0);
		int upto = failed_at < 0 ? 12 : failed_at;
		for (int i = 0; i < upto; i++)
			for (int j = 0; j < 400; j += 57)
				assert_int_equal(blocks[i][j], i + 1);
		if (failed_at < 0)
			completed = 1;
		else
			faults++;
		base_arena_free(&a);
		assert_int_equal(live_now(), live0);
	}
	assert_true(completed); /* the sweep got past every allocation */
	assert_true(faults >= 2); /* 12 blocks of 512 bytes cannot come from one allocation */
}

/* ---- element types ---------------------------------------------------------- */

static void test_dtype_table(void **state)
{
	(void)state;
	assert_int_equal(base_dtype_size(BASE_DT_FLOAT), 4);
	assert_int_equal(base_dtype_size(BASE_DT_DOUBLE), 8);
	assert_int_equal(base_dtype_size(BASE_DT_INT8), 1);
	assert_int_equal(base_dtype_size(BASE_DT_BOOL), 1);
	assert_int_equal(base_dtype_size(BASE_DT_BFLOAT16), 2);
	assert_int_equal(base_dtype_size(BASE_DT_FLOAT16), 2);
	assert_int_equal(base_dtype_size(BASE_DT_INT64), 8);
	assert_int_equal(base_dtype_size(BASE_DT_UNDEFINED), 0);
	assert_int_equal(base_dtype_size(9999), 0);
	assert_int_equal(base_dtype_size(-3), 0);

	assert_string_equal(base_dtype_name(BASE_DT_FLOAT), "float");
	assert_string_equal(base_dtype_name(BASE_DT_INT64), "int64");
	assert_string_equal(base_dtype_name(12345), "?");

	/* Names and numbers map both ways for every defined type. */
	for (int dt = 1; dt < BASE_DT_COUNT; dt++) {
		const char *name = base_dtype_name(dt);
		assert_string_not_equal(name, "?");
		assert_int_equal(base_dtype_from_name(name), dt);
	}
	assert_int_equal(base_dtype_from_name("quaternion"), BASE_DT_UNDEFINED);
	assert_int_equal(base_dtype_from_name(""), BASE_DT_UNDEFINED);
}

static void test_load_store_double(void **state)
{
	(void)state;
	float f[3] = {0};
	int64_t l[2] = {0};
	int8_t b[2] = {0};
	uint16_t h[2] = {0};

	base_store_double(BASE_DT_FLOAT, f, 1, 2.5);
	assert_true(f[1] == 2.5f);
	assert_true(base_load_double(BASE_DT_FLOAT, f, 1) == 2.5);

	base_store_double(BASE_DT_INT64, l, 1, -7.0);
	assert_int_equal(l[1], -7);
	assert_true(base_load_double(BASE_DT_INT64, l, 1) == -7.0);

	base_store_double(BASE_DT_INT8, b, 0, -100.0);
	assert_int_equal(b[0], -100);
	assert_true(base_load_double(BASE_DT_INT8, b, 0) == -100.0);

	base_store_double(BASE_DT_BFLOAT16, h, 1, 1.5);
	assert_int_equal(h[1], 0x3fc0);
	assert_true(base_load_double(BASE_DT_BFLOAT16, h, 1) == 1.5);

	base_store_double(BASE_DT_FLOAT16, h, 0, -2.0);
	assert_int_equal(h[0], 0xc000);
	assert_true(base_load_double(BASE_DT_FLOAT16, h, 0) == -2.0);
}

/* ---- bfloat16 ------------------------------------------------------------------ */

static void test_bf16_known_values(void **state)
{
	(void)state;
	assert_int_equal(base_f32_to_bf16(1.0f), 0x3f80);
	assert_int_equal(base_f32_to_bf16(-2.0f), 0xc000);
	assert_int_equal(base_f32_to_bf16(0.0f), 0x0000);
	assert_int_equal(base_f32_to_bf16(-0.0f), 0x8000);
	assert_int_equal(base_f32_to_bf16(INFINITY), 0x7f80);
	assert_int_equal(base_f32_to_bf16(-INFINITY), 0xff80);
	assert_true(base_bf16_to_f32(0x3f80) == 1.0f);
	assert_true(base_bf16_to_f32(0x4049) == 3.140625f);
	assert_true(isinf(base_bf16_to_f32(0x7f80)));
}

static void test_bf16_round_trip_all(void **state)
{
	(void)state;
	/* Every bfloat16 widens exactly and narrows back to itself. */
	for (uint32_t h = 0; h <= 0xffff; h++) {
		float f = base_bf16_to_f32((uint16_t)h);
		assert_int_equal(f32_bits(f), h << 16);
		if (isnan(f))
			assert_true(isnan(base_bf16_to_f32(base_f32_to_bf16(f))));
		else
			assert_int_equal(base_f32_to_bf16(f), h);
	}
}

static void test_bf16_rounding(void **state)
{
	(void)state;
	/* Exactly halfway: ties go to the even neighbour. */
	assert_int_equal(base_f32_to_bf16(bits_f32(0x3f808000)), 0x3f80); /* even below */
	assert_int_equal(base_f32_to_bf16(bits_f32(0x3f818000)), 0x3f82); /* even above */
	/* Just above or below halfway: nearest. */
	assert_int_equal(base_f32_to_bf16(bits_f32(0x3f808001)), 0x3f81);
	assert_int_equal(base_f32_to_bf16(bits_f32(0x3f807fff)), 0x3f80);
	assert_int_equal(base_f32_to_bf16(bits_f32(0xbf80c000)), 0xbf81);
	/* Rounding carries into the exponent. */
	assert_int_equal(base_f32_to_bf16(bits_f32(0x3fffffff)), 0x4000);
	/* The largest finite floats round up to infinity. */
	assert_int_equal(base_f32_to_bf16(bits_f32(0x7f7fffff)), 0x7f80);
	/* Subnormals round like any other value. */
	assert_int_equal(base_f32_to_bf16(bits_f32(0x00018000)), 0x0002);

	/* NaN stays NaN, including a NaN whose payload sits only in the low
	 * bits that truncation would drop (that would turn it into infinity). */
	uint16_t n = base_f32_to_bf16(bits_f32(0x7f800001));
	assert_true((n & 0x7f80) == 0x7f80 && (n & 0x007f) != 0);
	n = base_f32_to_bf16(NAN);
	assert_true(isnan(base_bf16_to_f32(n)));
	n = base_f32_to_bf16(bits_f32(0xffc00000));
	assert_true(isnan(base_bf16_to_f32(n)));
}

/* ---- float16 ------------------------------------------------------------------------- */

static void test_f16_known_values(void **state)
{
	(void)state;
	assert_int_equal(base_f32_to_f16(1.0f), 0x3c00);
	assert_int_equal(base_f32_to_f16(-2.0f), 0xc000);
	assert_int_equal(base_f32_to_f16(0.5f), 0x3800);
	assert_int_equal(base_f32_to_f16(65504.0f), 0x7bff);
	assert_int_equal(base_f32_to_f16(0.0f), 0x0000);
	assert_int_equal(base_f32_to_f16(-0.0f), 0x8000);
	assert_int_equal(base_f32_to_f16(INFINITY), 0x7c00);
	assert_int_equal(base_f32_to_f16(-INFINITY), 0xfc00);
	assert_true(base_f16_to_f32(0x3555) == 0.333251953125f);
	assert_true(base_f16_to_f32(0x0001) == ldexpf(1.0f, -24)); /* smallest subnormal */
	assert_true(base_f16_to_f32(0x0400) == ldexpf(1.0f, -14)); /* smallest normal */
	assert_true(base_f16_to_f32(0x7bff) == 65504.0f);
	assert_true(isinf(base_f16_to_f32(0xfc00)) && base_f16_to_f32(0xfc00) < 0);
	assert_true(isnan(base_f16_to_f32(0x7e00)));
}

static void test_f16_round_trip_all(void **state)
{
	(void)state;
	for (uint32_t h = 0; h <= 0xffff; h++) {
		float f = base_f16_to_f32((uint16_t)h);
		if (isnan(f)) {
			assert_true((h & 0x7c00) == 0x7c00 && (h & 0x03ff) != 0);
			assert_true(isnan(base_f16_to_f32(base_f32_to_f16(f))));
		} else {
			assert_int_equal(base_f32_to_f16(f), h);
		}
	}
}

static void test_f16_rounding(void **state)
{
	(void)state;
	/* Between 1 and 1 + 2^-10: halfway ties to even (1.0). */
	assert_int_equal(base_f32_to_f16(1.0f + ldexpf(1.0f, -11)), 0x3c00);
	/* Between 1 + 2^-10 and 1 + 2^-9: halfway ties to even (above). */
	assert_int_equal(base_f32_to_f16(1.0f + 3 * ldexpf(1.0f, -11)), 0x3c02);
	/* A hair above halfway rounds up. */
	assert_int_equal(base_f32_to_f16(bits_f32(0x3f801001)), 0x3c01);
	/* Overflow: 65519 rounds down to 65504, 65520 (halfway) up to infinity. */
	assert_int_equal(base_f32_to_f16(65519.0f), 0x7bff);
	assert_int_equal(base_f32_to_f16(65520.0f), 0x7c00);
	assert_int_equal(base_f32_to_f16(1e10f), 0x7c00);
	assert_int_equal(base_f32_to_f16(-1e10f), 0xfc00);
	/* Subnormal results: 2^-25 is halfway between 0 and 2^-24 -> 0;
	 * 1.5 * 2^-25 rounds up to the smallest subnormal; 3 * 2^-25 (halfway
	 * between 1 and 2 subnormal steps) ties to 2. */
	assert_int_equal(base_f32_to_f16(ldexpf(1.0f, -25)), 0x0000);
	assert_int_equal(base_f32_to_f16(1.5f * ldexpf(1.0f, -25)), 0x0001);
	assert_int_equal(base_f32_to_f16(3.0f * ldexpf(1.0f, -25)), 0x0002);
	assert_int_equal(base_f32_to_f16(-ldexpf(1.0f, -30)), 0x8000);
	/* The largest subnormal rounds up into the smallest normal. */
	assert_int_equal(base_f32_to_f16(ldexpf(1.0f, -14) - ldexpf(1.0f, -26)), 0x0400);
	/* NaN stays NaN, also with a payload only in the dropped bits. */
	uint16_t n = base_f32_to_f16(bits_f32(0x7f800001));
	assert_true((n & 0x7c00) == 0x7c00 && (n & 0x03ff) != 0);
	assert_true(isnan(base_f16_to_f32(base_f32_to_f16(NAN))));
}

/* ---- errors -------------------------------------------------------------------------- */

static void test_err_fill(void **state)
{
	(void)state;
	struct strata_error err;
	memset(&err, 0x55, sizeof err);
	int rc = base_err(&err, STRATA_NOT_FOUND, "no field '%s' in %d schemas", "price", 2);
	assert_int_equal(rc, STRATA_NOT_FOUND);
	assert_int_equal(err.code, STRATA_NOT_FOUND);
	assert_string_equal(err.msg, "no field 'price' in 2 schemas");

	/* A NULL err still gives the code back, so callers can return base_err(). */
	assert_int_equal(base_err(NULL, STRATA_PARSE, "x"), STRATA_PARSE);
	/* errno values pass through unchanged. */
	assert_int_equal(base_err(&err, ENOENT, "%s", "gone"), ENOENT);
	assert_int_equal(err.code, ENOENT);
}

static void test_err_truncates(void **state)
{
	(void)state;
	struct strata_error err;
	size_t n = 3 * STRATA_ERRMSG_MAX;
	char *longs = malloc(n + 1);
	assert_non_null(longs);
	memset(longs, 'q', n);
	longs[n] = 0;
	assert_int_equal(base_err(&err, STRATA_LIMIT, "%s", longs), STRATA_LIMIT);
	size_t len = strlen(err.msg); /* terminated inside the buffer */
	assert_true(len > 0 && len < STRATA_ERRMSG_MAX);
	assert_int_equal(err.msg[0], 'q');
	free(longs);
}

static void test_err_prefix(void **state)
{
	(void)state;
	struct strata_error err;
	base_err(&err, STRATA_PARSE, "3:14: unexpected '}'");
	/* The prefix keeps err's own code, whatever code is passed. */
	int rc = base_err_prefix(&err, STRATA_ERROR, "schemas/%s.sd", "product");
	assert_int_equal(rc, STRATA_PARSE);
	assert_int_equal(err.code, STRATA_PARSE);
	assert_string_equal(err.msg, "schemas/product.sd: 3:14: unexpected '}'");

	/* Prefixes nest. */
	base_err_prefix(&err, STRATA_ERROR, "deploy");
	assert_string_equal(err.msg, "deploy: schemas/product.sd: 3:14: unexpected '}'");

	assert_int_equal(base_err_prefix(NULL, STRATA_TYPE, "ctx"), STRATA_TYPE);

	/* A prefix that overflows the buffer still leaves a terminated message. */
	char big[STRATA_ERRMSG_MAX + 100];
	memset(big, 'p', sizeof big - 1);
	big[sizeof big - 1] = 0;
	base_err_prefix(&err, STRATA_ERROR, "%s", big);
	assert_true(strlen(err.msg) < STRATA_ERRMSG_MAX);
	assert_int_equal(err.code, STRATA_PARSE);
}

/* The size regcomp would build a pattern to: repetitions multiply. */
static void test_regex_size(void **state)
{
	(void)state;
	static const struct {
		const char *p;
		size_t n;
	} cases[] = {
		{"", 0}, {"abc", 3}, {"a*b?", 2}, {"a+", 2}, {"a++", 4}, {"a+++", 8},
		{"(ab){3}", 6}, {"a{2,5}", 5}, {"a{3,}", 4}, {"a{0}", 1}, {"((a{9}){9}){9}", 729},
		{"(a|bc)+", 6}, {"[a-z]+", 2}, {"[]a]+", 2}, {"[^]a]{4}", 4}, {"[[:alpha:]]{4}", 4},
		{"\\++", 2}, {"\\(a", 2}, {"x{", 2}, {"x{2", 3}, {"a)+", 3}, {"(a", 1},
		/* + of what can match nothing counts 4 */
		{"()+", 4}, {"(a?)+", 4}, {"(a*)+", 4}, {"(a|)+", 4}, {"(|a)+", 4}, {"(a?b?)+", 8},
		{"(abc?)+", 6}, {"a{0,3}+", 12}, {"(a?){2}+", 8}, {"x()++++++", 4097},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		if (base_regex_size(cases[i].p) != cases[i].n)
			fail_msg("'%s': %zu, want %zu", cases[i].p, base_regex_size(cases[i].p), cases[i].n);
	char many[80];
	memset(many, '+', sizeof many - 1);
	many[0] = 'n';
	many[sizeof many - 1] = 0;
	assert_true(base_regex_size(many) > BASE_REGEX_MAX); /* 2^78: saturated, not wrapped */
	char deep[200];
	memset(deep, '(', sizeof deep - 1);
	deep[sizeof deep - 1] = 0;
	assert_true(base_regex_size(deep) > BASE_REGEX_MAX); /* deeper than it follows */
}

/* An error list keeps each error once, and counts what does not fit. */
static void test_errs_add(void **state)
{
	(void)state;
	struct strata_errors list = {0};
	struct strata_error a, b;
	base_err(&a, STRATA_TYPE, "p.sd:3:4: unknown function 'f'");
	base_err(&b, STRATA_PARSE, "p.sd:3:4: unknown function 'f'");
	base_errs_add(&list, &a);
	base_errs_add(&list, &a); /* the same error found again */
	base_errs_add(&list, &b); /* another code: another error */
	assert_int_equal(list.n, 2);
	assert_int_equal(list.dropped, 0);
	for (int i = 0; list.n < STRATA_MAX_ERRORS; i++) {
		base_err(&a, STRATA_TYPE, "e%d", i);
		base_errs_add(&list, &a);
	}
	base_err(&a, STRATA_TYPE, "one more");
	base_errs_add(&list, &a);
	assert_int_equal(list.n, STRATA_MAX_ERRORS);
	assert_int_equal(list.dropped, 1);
	base_errs_add(NULL, &a);
}

static void test_strerror(void **state)
{
	(void)state;
	/* Every code has its own non-empty description; errno values too. */
	for (int c = STRATA_RUNTIME; c <= STRATA_OK; c++) {
		const char *s = strata_strerror(c);
		assert_non_null(s);
		assert_true(strlen(s) > 0);
		for (int d = STRATA_RUNTIME; d < c; d++)
			assert_string_not_equal(s, strata_strerror(d));
	}
	assert_non_null(strata_strerror(ENOENT));
	assert_true(strlen(strata_strerror(ENOENT)) > 0);
	assert_non_null(strata_strerror(-9999));
}

/* ---- files ----------------------------------------------------------------------- */

static void test_read_file(void **state)
{
	(void)state;
	uint64_t live0 = live_now();
	char path[64];
	make_temp_file(path, sizeof path, "schema product {\n}\n");

	char *text = NULL;
	size_t n = 0;
	struct strata_error err;
	assert_int_equal(base_read_file(path, &text, &n, &err), 0);
	assert_int_equal(n, 19);
	assert_string_equal(text, "schema product {\n}\n");
	assert_int_equal(text[n], 0);
	base_free(text, n + 1);

	struct base_map m;
	assert_int_equal(base_map_file(path, &m, &err), 0);
	assert_int_equal(m.size, 19);
	assert_memory_equal(m.data, "schema product {\n}\n", 19);
	base_unmap(&m);

	unlink(path);
	assert_int_equal(live_now(), live0);
}

static void test_empty_file(void **state)
{
	(void)state;
	char path[64];
	make_temp_file(path, sizeof path, "");
	struct base_map m;
	struct strata_error err;
	assert_int_equal(base_map_file(path, &m, &err), 0);
	assert_int_equal(m.size, 0);
	base_unmap(&m);

	char *text = NULL;
	size_t n = 99;
	assert_int_equal(base_read_file(path, &text, &n, &err), 0);
	assert_int_equal(n, 0);
	assert_non_null(text);
	assert_int_equal(text[0], 0);
	base_free(text, n + 1);
	unlink(path);
}

static void test_file_errors(void **state)
{
	(void)state;
	uint64_t live0 = live_now();
	const char *missing = "/tmp/strata_test_base_no_such_dir/model.onnx";
	struct strata_error err;
	char *text = NULL;
	size_t n = 0;

	int rc = base_read_file(missing, &text, &n, &err);
	assert_int_equal(rc, ENOENT);
	assert_int_equal(err.code, ENOENT);
	assert_non_null(strstr(err.msg, missing)); /* the message names the path */

	struct base_map m;
	rc = base_map_file(missing, &m, &err);
	assert_int_equal(rc, ENOENT);
	assert_non_null(strstr(err.msg, missing));

	/* A directory is not a readable file: an error, not a crash. */
	rc = base_read_file("/tmp", &text, &n, &err);
	assert_true(rc > 0);
	assert_non_null(strstr(err.msg, "/tmp"));
	rc = base_map_file("/tmp", &m, &err);
	assert_true(rc > 0);

	/* NULL err is allowed on the error path too. */
	assert_int_equal(base_read_file(missing, &text, &n, NULL), ENOENT);
	assert_int_equal(base_map_file(missing, &m, NULL), ENOENT);

	/* Allocation failure while reading gives STRATA_NOMEM and leaks nothing. */
	char path[64];
	make_temp_file(path, sizeof path, "{}");
	base_alloc_fail_after(1);
	rc = base_read_file(path, &text, &n, &err);
	base_alloc_fail_after(0);
	assert_int_equal(rc, STRATA_NOMEM);
	unlink(path);

	assert_int_equal(live_now(), live0);
}

static void test_path_join(void **state)
{
	(void)state;
	char *p = base_path_join("app", "models/ranker.onnx");
	assert_non_null(p);
	assert_string_equal(p, "app/models/ranker.onnx");
	base_strfree(p);

	p = base_path_join("app/", "schemas");
	assert_non_null(p);
	/* One separator, not two. */
	assert_null(strstr(p, "//"));
	assert_string_equal(p, "app/schemas");
	base_strfree(p);

	p = base_path_join("app", "/abs/model.onnx");
	assert_non_null(p);
	assert_string_equal(p, "/abs/model.onnx");
	base_strfree(p);

	base_alloc_fail_after(1);
	assert_null(base_path_join("a", "b"));
	base_alloc_fail_after(0);
}

static void test_now_monotonic(void **state)
{
	(void)state;
	double a = base_now(), b = base_now();
	assert_true(a > 0);
	assert_true(b >= a);
}

/* A test that fails half-way may leave a fault armed: disarm it before
 * every test so one failure does not cascade into the next. */
static int disarm_faults(void **state)
{
	(void)state;
	base_alloc_fail_after(0);
	return 0;
}

/* base_strprintf: the whole text however long, NULL when memory runs out. */
static void test_strprintf(void **state)
{
	(void)state;
	char *s = base_strprintf("%s-%d", "abc", 42);
	assert_string_equal(s, "abc-42");
	base_strfree(s);
	s = base_strprintf("%5000d|", 7);
	assert_non_null(s);
	assert_int_equal(strlen(s), 5001);
	assert_string_equal(s + 4999, "7|");
	base_strfree(s);
	base_alloc_fail_after(1);
	assert_null(base_strprintf("%d", 1));
}

/* RFC 4648's test vectors both ways, and what a decoder must refuse. */
/* Hexadecimal digits of either case, and numbers of 1 to 16 of them. */
static void test_hex(void **state)
{
	(void)state;
	const char *digits = "0123456789abcdefABCDEF";
	for (int i = 0; digits[i]; i++)
		assert_int_equal(base_hex_digit(digits[i]), i < 16 ? i : i - 6);
	assert_int_equal(base_hex_digit('g'), -1);
	assert_int_equal(base_hex_digit('/'), -1);
	assert_int_equal(base_hex_digit(':'), -1);
	assert_int_equal(base_hex_digit('@'), -1);
	assert_int_equal(base_hex_digit(0), -1);
	uint64_t v = 7;
	assert_int_equal(base_hex_value("00e9", 4, &v), 0);
	assert_int_equal(v, 0xe9);
	assert_int_equal(base_hex_value("FFFFffffFFFFffff", 16, &v), 0);
	assert_true(v == UINT64_MAX);
	v = 7;
	assert_int_equal(base_hex_value("1FFFFffffFFFFffff", 17, &v), -1);
	assert_int_equal(base_hex_value("12x4", 4, &v), -1);
	assert_int_equal(base_hex_value("", 0, &v), -1);
	assert_int_equal(v, 7); /* untouched on failure */
}

static void test_base64(void **state)
{
	(void)state;
	static const char *const plain[] = { "", "f", "fo", "foo", "foob", "fooba", "foobar" };
	static const char *const coded[] = { "", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=",
		                             "Zm9vYmFy" };
	for (int i = 0; i < 7; i++) {
		char out[16];
		size_t n = base_b64_encode((const unsigned char *)plain[i], strlen(plain[i]), out);
		assert_int_equal(n, strlen(coded[i]));
		assert_memory_equal(out, coded[i], n);
		unsigned char back[16];
		size_t len = 99;
		assert_int_equal(base_b64_decode(coded[i], strlen(coded[i]), back, &len), -1);
		assert_int_equal(len, strlen(plain[i]));
		assert_memory_equal(back, plain[i], len);
	}
	unsigned char b[16];
	size_t len;
	assert_int_equal(base_b64_decode("Zm9", 3, b, &len), 3);       /* not a multiple of 4 */
	assert_int_equal(base_b64_decode("Zm!v", 4, b, &len), 2);      /* a bad character */
	assert_int_equal(base_b64_decode("Zg==Zg==", 8, b, &len), 2);  /* padding inside */
	assert_int_equal(base_b64_decode("Z===", 4, b, &len), 1);      /* too much padding */
	assert_int_equal(base_b64_decode("Zm=v", 4, b, &len), 2);      /* '=' before a digit */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_alloc_counters, disarm_faults),
		cmocka_unit_test_setup(test_alloc_calloc_realloc_strdup, disarm_faults),
		cmocka_unit_test_setup(test_alloc_calloc_overflow, disarm_faults),
		cmocka_unit_test_setup(test_alloc_fault_injection, disarm_faults),
		cmocka_unit_test_setup(test_alloc_failure_not_counted, disarm_faults),
		cmocka_unit_test_setup(test_grow, disarm_faults),
		cmocka_unit_test_setup(test_arena_basic, disarm_faults),
		cmocka_unit_test_setup(test_arena_reset_reuses, disarm_faults),
		cmocka_unit_test_setup(test_arena_alloc_failure, disarm_faults),
		cmocka_unit_test_setup(test_arena_fault_sweep, disarm_faults),
		cmocka_unit_test_setup(test_dtype_table, disarm_faults),
		cmocka_unit_test_setup(test_load_store_double, disarm_faults),
		cmocka_unit_test_setup(test_bf16_known_values, disarm_faults),
		cmocka_unit_test_setup(test_bf16_round_trip_all, disarm_faults),
		cmocka_unit_test_setup(test_bf16_rounding, disarm_faults),
		cmocka_unit_test_setup(test_f16_known_values, disarm_faults),
		cmocka_unit_test_setup(test_f16_round_trip_all, disarm_faults),
		cmocka_unit_test_setup(test_f16_rounding, disarm_faults),
		cmocka_unit_test_setup(test_err_fill, disarm_faults),
		cmocka_unit_test_setup(test_err_truncates, disarm_faults),
		cmocka_unit_test_setup(test_err_prefix, disarm_faults),
		cmocka_unit_test_setup(test_strerror, disarm_faults),
		cmocka_unit_test_setup(test_read_file, disarm_faults),
		cmocka_unit_test_setup(test_empty_file, disarm_faults),
		cmocka_unit_test_setup(test_file_errors, disarm_faults),
		cmocka_unit_test_setup(test_path_join, disarm_faults),
		cmocka_unit_test_setup(test_now_monotonic, disarm_faults),
		cmocka_unit_test_setup(test_base64, disarm_faults),
		cmocka_unit_test_setup(test_hex, disarm_faults),
		cmocka_unit_test_setup(test_strprintf, disarm_faults),
		cmocka_unit_test_setup(test_errs_add, disarm_faults),
		cmocka_unit_test_setup(test_regex_size, disarm_faults),
	};
	return cmocka_run_group_tests_name("base", tests, NULL, NULL);
}
