/*
 * json_alloc.c: jansson's memory through the one allocator.
 *
 * The engine builds and parses its JSON (requests, documents, results, the
 * contexts manifest) with jansson, whose allocations would otherwise go to
 * malloc, out of reach of the allocation counters and of the fault
 * injection the tests sweep error paths with.  jansson's allocator is one
 * setting for the whole process: it is set once, before the first JSON
 * value is made (by an initializer that runs when the program starts, and
 * again, harmlessly, by strata_open()), so no value is ever freed by an
 * allocator that did not make it.
 *
 * jansson frees without a size and base_free() wants one, so each block
 * carries its size in a header in front of it.  The header is as large as
 * the strictest alignment of a C type (max_align_t), so the bytes handed to
 * jansson keep that alignment: base_alloc() returns 64-byte aligned blocks.
 *
 * jansson's constructors report a failed allocation by returning NULL, but
 * code that builds a large value may not check each one; so every failed
 * allocation is also counted, per thread (eng_json_failures).
 *
 * The same sized blocks serve other libraries that free without a size
 * (expat, for services.xml): eng_block_alloc and friends.
 */
#include <pthread.h>
#include <stdalign.h>
#include <stddef.h>
#include <string.h>

#include "../engine_int.h"

#define HEADER (alignof(max_align_t) > sizeof(size_t) ? alignof(max_align_t) : sizeof(size_t))

/* Allocations jansson asked for and did not get, on this thread. */
static _Thread_local unsigned long failed;

static void *json_block_alloc(size_t n)
{
	unsigned char *p = n <= SIZE_MAX - HEADER ? base_alloc(HEADER + n) : NULL;
	if (!p) {
		failed++;
		return NULL;
	}
	*(size_t *)p = n;
	return p + HEADER;
}

static void json_block_free(void *q)
{
	if (!q)
		return;
	unsigned char *p = (unsigned char *)q - HEADER;
	base_free(p, HEADER + *(size_t *)p);
}

void *eng_block_alloc(size_t n)
{
	return json_block_alloc(n);
}

void *eng_block_realloc(void *q, size_t n)
{
	if (!q)
		return json_block_alloc(n);
	size_t old = *(size_t *)((unsigned char *)q - HEADER);
	void *r = json_block_alloc(n);
	if (r) {
		memcpy(r, q, old < n ? old : n);
		json_block_free(q);
	}
	return r;
}

void eng_block_free(void *q)
{
	json_block_free(q);
}

static pthread_once_t json_once = PTHREAD_ONCE_INIT;

static void set_funcs(void)
{
	json_set_alloc_funcs(json_block_alloc, json_block_free);
}

void eng_json_init(void)
{
	pthread_once(&json_once, set_funcs);
}

/* Before main(), so that even JSON values a program makes before it opens
 * an application come from the same allocator as the library's. */
__attribute__((constructor)) static void json_init_at_start(void)
{
	eng_json_init();
}

unsigned long eng_json_failures(void)
{
	return failed;
}
