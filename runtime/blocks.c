/*
 * blocks.c: the model's memory.  Every block carries a 64-byte header
 * holding its size, so the payload is 64-byte aligned and a block can be
 * freed knowing only its address: the protobuf decoder allocates the same
 * way (load.c), which lets the loader keep a decoded buffer in the model's
 * blocks instead of copying it.
 */
#include <stdint.h>
#include <string.h>

#include "runtime_int.h"

/* Header in front of every block (keeps the payload 64-byte aligned). */
#define HDR 64

void *rt_hdr_alloc(size_t n)
{
	if (n > SIZE_MAX - HDR)
		return NULL;
	char *b = base_alloc(n + HDR);
	if (!b)
		return NULL;
	*(size_t *)b = n + HDR;
	return b + HDR;
}

void rt_hdr_free(void *p)
{
	if (!p)
		return;
	char *b = (char *)p - HDR;
	base_free(b, *(size_t *)b);
}

/* Take ownership of a block that came from rt_hdr_alloc (a decoded raw_data). */
int rt_blocks_adopt(struct rt_blocks *bl, void *p)
{
	if (bl->n == bl->cap &&
	    base_grow((void **)&bl->b, &bl->cap, bl->n + 1, sizeof *bl->b, SIZE_MAX / 16) != 0)
		return -1;
	bl->b[bl->n++] = p;
	return 0;
}

void *rt_blocks_alloc(struct rt_blocks *bl, size_t n)
{
	void *p = rt_hdr_alloc(n ? n : 1);
	if (!p)
		return NULL;
	memset(p, 0, n ? n : 1);
	if (rt_blocks_adopt(bl, p) != 0) {
		rt_hdr_free(p);
		return NULL;
	}
	return p;
}

char *rt_blocks_strndup(struct rt_blocks *bl, const char *s, size_t n)
{
	if (n == SIZE_MAX)
		return NULL;
	char *d = rt_blocks_alloc(bl, n + 1);
	if (d && n)
		memcpy(d, s, n);
	return d;
}

void rt_blocks_free(struct rt_blocks *bl)
{
	for (size_t i = 0; i < bl->n; i++)
		rt_hdr_free(bl->b[i]);
	if (bl->b)
		base_free(bl->b, bl->cap * sizeof *bl->b);
	bl->b = NULL;
	bl->n = bl->cap = 0;
}
