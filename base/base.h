/*
 * base.h: what every subsystem shares: error reporting, the one allocator,
 * arenas, element types and a few file helpers.  Nothing here knows about
 * documents, schemas or models.
 *
 *     struct strata_error err;
 *     float *v = base_alloc(n * sizeof *v);
 *     if (!v)
 *         return base_nomem(&err, "embedding of %zu cells", n);
 *     ...
 *     base_free(v, n * sizeof *v);
 *
 *     struct base_arena a;
 *     base_arena_init(&a, 1 << 16);
 *     char *tmp = base_arena_alloc(&a, 100, 8);   // lives until reset or free
 *     base_arena_reset(&a);                        // keeps its first block
 *     base_arena_free(&a);
 *
 * Errors: functions return 0, a negative STRATA_* code (include/strata_defs.h is the
 * one list of codes) or a positive errno.  Details go into a struct
 * strata_error passed by the caller (it may be NULL); base_err() fills it and
 * returns the code, so a failure is reported in one statement.
 *
 * Memory: all heap traffic goes through base_alloc/base_free (the size is
 * passed back to base_free).  The counters let tests count allocations and
 * base_alloc_fail_after() makes the Nth allocation fail.  Counters are
 * global and atomic; base_alloc_thread_count() counts the calling thread's
 * allocations only.
 */
#ifndef BASE_H
#define BASE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "../include/strata_defs.h"

/* ---- errors ------------------------------------------------------------ */

/* Set err (may be NULL) to code and a printf-style message; return code. */
int base_err(struct strata_error *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int base_verr(struct strata_error *err, int code, const char *fmt, va_list ap);

/* Out of memory: the one way every subsystem reports it.  Sets err to
 * STRATA_NOMEM and "out of memory: WHAT" (what the memory was for, printf
 * style) and returns STRATA_NOMEM, so that a failed allocation is reported
 * in one statement: `if (!p) return base_nomem(err, "row %d", r);`. */
int base_nomem(struct strata_error *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Put "prefix: " before err's message, keeping its code; return err->code
 * (or code if err is NULL). */
int base_err_prefix(struct strata_error *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Append a copy of e to list (struct strata_errors), or count it in
 * list->dropped when the list is full; an error with the code and message
 * of one already listed (an inherited function checked in each profile
 * that inherits it) is not listed again.  list may be NULL. */
void base_errs_add(struct strata_errors *list, const struct strata_error *e);

/* Bugs abort with file:line; bad input never reaches here. */
#define BASE_ASSERT(c) \
	((c) ? (void)0 : base_assert_fail(#c, __FILE__, __LINE__))
_Noreturn void base_assert_fail(const char *what, const char *file, int line);

/* Invariants too costly for a production run (a walk over a structure, a
 * check on a hot path): checked in debug builds only, those compiled with
 * -DSTRATA_DEBUG (the sanitizer builds of make asan and make tsan, and
 * make DEBUG=1).  The condition must have no side effects. */
#ifdef STRATA_DEBUG
#define BASE_DEBUG_ASSERT(c) BASE_ASSERT(c)
#else
#define BASE_DEBUG_ASSERT(c) ((void)0)
#endif

/* ---- the allocator -------------------------------------------------------
 * Every block is aligned to 64 bytes.  base_free and base_realloc take the
 * size the block was allocated with.  All return NULL on failure. */
void *base_alloc(size_t n);
void *base_calloc(size_t count, size_t size);
void *base_realloc(void *p, size_t old_n, size_t new_n);
void base_free(void *p, size_t n);
char *base_strdup(const char *s);           /* free with base_strfree */
/* The first n bytes of s, or fewer when s has a NUL in them (as POSIX
 * strndup); free with base_strfree. */
char *base_strndup(const char *s, size_t n);
/* A new string (base_strfree) formatted as printf does; NULL when out of
 * memory. */
char *base_strprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void base_strfree(char *s);

struct base_alloc_stats {
	uint64_t allocs;     /* successful allocations (realloc counts once) */
	uint64_t frees;
	uint64_t live_bytes;
	uint64_t peak_bytes;
};
void base_alloc_stats(struct base_alloc_stats *st);
uint64_t base_alloc_thread_count(void); /* allocations made by this thread */
/* Make the n-th allocation from now (1 = the next) fail, then all after it
 * succeed again; n <= 0 disables.  For tests. */
void base_alloc_fail_after(long n);

/* Grow an array of elements of size elem so that it holds at least need;
 * *cap is updated.  Fails with STRATA_LIMIT past max elements. */
int base_grow(void **p, size_t *cap, size_t need, size_t elem, size_t max);

/* ---- arenas: request-scoped memory freed in one call -------------------- */
struct base_arena_block;
struct base_arena {
	struct base_arena_block *head; /* current block */
	struct base_arena_block *first;
	size_t block_size;
	size_t used_total;
};
void base_arena_init(struct base_arena *a, size_t block_size);
/* NULL on failure.  align is a power of two <= 64. */
void *base_arena_alloc(struct base_arena *a, size_t n, size_t align);
char *base_arena_strdup(struct base_arena *a, const char *s);
/* The n bytes at s and a terminating NUL, in a; NULL on failure. */
char *base_arena_strndup(struct base_arena *a, const char *s, size_t n);
/* Forget everything allocated; keeps the blocks for reuse (no allocation in
 * steady state). */
void base_arena_reset(struct base_arena *a);
void base_arena_free(struct base_arena *a);

/* ---- element types: ONNX TensorProto.DataType numbering ----------------- */
enum base_dtype {
	BASE_DT_UNDEFINED = 0,
	BASE_DT_FLOAT = 1,
	BASE_DT_UINT8 = 2,
	BASE_DT_INT8 = 3,
	BASE_DT_UINT16 = 4,
	BASE_DT_INT16 = 5,
	BASE_DT_INT32 = 6,
	BASE_DT_INT64 = 7,
	BASE_DT_STRING = 8, /* cells are char * (NUL-terminated) */
	BASE_DT_BOOL = 9,   /* one byte, 0 or 1 */
	BASE_DT_FLOAT16 = 10,
	BASE_DT_DOUBLE = 11,
	BASE_DT_UINT32 = 12,
	BASE_DT_UINT64 = 13,
	BASE_DT_COMPLEX64 = 14,
	BASE_DT_COMPLEX128 = 15,
	BASE_DT_BFLOAT16 = 16,
	BASE_DT_COUNT
};
size_t base_dtype_size(int dt);       /* 0 for UNDEFINED or unknown */
const char *base_dtype_name(int dt);  /* "float", "int64", ...; "?" if unknown */
int base_dtype_from_name(const char *name); /* BASE_DT_UNDEFINED if unknown */

float base_bf16_to_f32(uint16_t h);
uint16_t base_f32_to_bf16(float f); /* round to nearest even; NaN stays NaN */
float base_f16_to_f32(uint16_t h);
uint16_t base_f32_to_f16(float f);

/* Read element i of a buffer of type dt as a double / store a double into it
 * (converting with C rules, saturating nothing).  For numeric and bool types. */
double base_load_double(int dt, const void *cells, size_t i);
void base_store_double(int dt, void *cells, size_t i, double v);

/* ---- files ---------------------------------------------------------------- */

/* A read-only memory map of a whole file (or an empty region for an empty file). */
struct base_map {
	const void *data;
	size_t size;
};
/* Returns 0 or errno; message names the path. */
int base_map_file(const char *path, struct base_map *m, struct strata_error *err);
void base_unmap(struct base_map *m);

/* Read a whole file into a new NUL-terminated buffer (free with base_free(p,
 * *n + 1)). */
int base_read_file(const char *path, char **out, size_t *n, struct strata_error *err);

/* Write n bytes at p as the file path, atomically: into "path.tmp", then
 * renamed over path, so a reader sees the old file or the whole new one.
 * Returns 0, an errno (the message names the file) or STRATA_NOMEM. */
int base_write_file(const char *path, const void *p, size_t n, struct strata_error *err);

/* Join dir and a relative name into a new string (base_strfree).  An absolute
 * name is returned as it is. */
char *base_path_join(const char *dir, const char *name);

/* A 64-bit hash of n bytes (not cryptographic): checksums and content keys.
 * Reads 32 bytes per step; the same bytes and seed give the same value on
 * every machine. */
uint64_t base_hash64(const void *p, size_t n, uint64_t seed);

/* Monotonic seconds. */
double base_now(void);

/* hex.c: the value of hexadecimal digit c (either case), or -1. */
int base_hex_digit(int c);
/* The n (1 to 16) hexadecimal digits at s as a number into *v: 0, or -1
 * when n is out of range or a character is no digit. */
int base_hex_value(const char *s, size_t n, uint64_t *v);

/* regex.c: an estimate of what regcomp builds for POSIX extended regular
 * expression p: each character, bracket expression and escape one, an
 * operand repeated by + or {n,m} counted once per copy regcomp makes (2,
 * or max(n, m)), so a repetition of a repetition multiplies; + of an
 * operand that can match nothing counts 4 (its copies cost regcomp the
 * square of their number).  Callers refuse a pattern over BASE_REGEX_MAX
 * before regcomp, which builds such trees in full: a few hundred bytes of
 * nested repetitions take gigabytes or minutes. */
#define BASE_REGEX_MAX 10000
size_t base_regex_size(const char *p);

/* base64.c: decode the n base64 characters at s (padded: n a multiple of
 * 4) into out (room for n / 4 * 3 bytes), their number in *len.  Returns
 * -1, or the offset of the first bad character (n when n is no multiple of
 * 4). */
long base_b64_decode(const char *s, size_t n, unsigned char *out, size_t *len);
/* Encode the n bytes at p into out (room for (n + 2) / 3 * 4 characters, no
 * NUL written); returns how many were written. */
size_t base_b64_encode(const unsigned char *p, size_t n, char *out);

/* 1 when this machine runs the AVX-512 kernels (cpu.c: the CPU has F, DQ,
 * BW and VL and the operating system saves their state), else 0.  The
 * hardware's answer only: callers apply their own STRATA_CPU policy. */
int base_cpu_avx512(void);

/* ---- text tokens (tokenize.c) ------------------------------------------------ */

/* How text becomes index terms, the way Vespa's default linguistics does it:
 * tokens are runs of letters or of digits (a change between the two splits
 * them; punctuation, symbols and spaces separate); each is lowercased, its
 * accents removed (NORMALIZE: Latin, Greek and Cyrillic letters; combining
 * marks dropped) and stemmed with the Snowball English stemmer (STEM).
 * WHOLE makes the whole text one token (match: word and exact), folded the
 * same way.  CASED keeps the case.  Example:
 *
 *     struct base_tokenizer *tk;
 *     if (base_tokenizer_new(&tk, err)) return ...;
 *     size_t off = 0; const char *t; size_t n; int pos;
 *     while (base_token_next(tk, text, len, &off, BASE_TOKEN_TEXT, &t, &n, &pos) > 0)
 *             use(t, n, pos);   // "Running Cafés" -> "run" 0, "cafe" 1
 *     base_tokenizer_free(tk);
 *
 * A tokenizer is used by one thread at a time (the stemmer keeps state). */
enum {
	BASE_TOKEN_NORMALIZE = 1, /* remove accents */
	BASE_TOKEN_STEM = 2,      /* English stems */
	BASE_TOKEN_WHOLE = 4,     /* the whole text is one token */
	BASE_TOKEN_CASED = 8,     /* keep the case */
	BASE_TOKEN_GRAM = 16,     /* n-grams of each word: BASE_TOKEN_GRAMS(n) gives n */
	BASE_TOKEN_TEXT = BASE_TOKEN_NORMALIZE | BASE_TOKEN_STEM,
};
/* GRAM with n characters a gram (1..BASE_TOKEN_GRAM_MAX): each word (a run
 * of letters or of digits, folded as the other flags say, never stemmed)
 * becomes its grams, the n characters from each character on ("tokyo", 2:
 * "to" "ok" "ky" "yo"), at consecutive positions; a word of n characters or
 * fewer is one gram.  Where words are not separated by spaces (Chinese,
 * Japanese) a run of letters is one word, so its grams cover the text. */
#define BASE_TOKEN_GRAMS(n) (BASE_TOKEN_GRAM | (n) << 16)
#define BASE_TOKEN_GRAM_SIZE(flags) ((flags) >> 16 & 0xff)
#define BASE_TOKEN_GRAM_MAX 32
#define BASE_TOKEN_MAX 255 /* bytes of one token: longer ones are cut at a character */
struct base_tokenizer;
/* Returns 0 or STRATA_NOMEM. */
int base_tokenizer_new(struct base_tokenizer **out, struct strata_error *err);
void base_tokenizer_free(struct base_tokenizer *tk);
/* The next token of text[0..len) from byte *off on (start with *off = 0):
 * 1 with the token in *tok, *n (borrowed: valid until the next call on tk),
 * its number in the text in *pos (0, 1, ... counting every token), *off
 * moved past it; 0 at the end.  Bad UTF-8 bytes separate tokens.  Never
 * fails: a stemmer that runs out of memory leaves the word unstemmed. */
int base_token_next(struct base_tokenizer *tk, const char *text, size_t len, size_t *off,
                    int flags, const char **tok, size_t *n, int *pos);
/* Where in the text the token base_token_next returned last begins: its
 * bytes are text[base_token_start(tk) .. *off) (highlighting, snippets). */
size_t base_token_start(const struct base_tokenizer *tk);
/* The code point at s[0..n) (n > 0) and its length in bytes (*len); a bad
 * byte gives -1 and a length of 1. */
long base_utf8_next(const char *s, size_t n, size_t *len);
/* c lowercased as the tokens are (Latin-1, Latin Extended-A, Greek,
 * Cyrillic; others as they are). */
long base_char_lower(long c);
/* The UTF-8 bytes of code point c (0 to 0x10FFFF) into b; returns how many. */
size_t base_utf8_encode(long c, char b[4]);

#endif
