/*
 * arena.c: request-scoped memory.  Allocations bump a pointer through a chain
 * of blocks; reset rewinds to the first block and keeps every block, so a
 * request that fits what earlier requests needed allocates nothing.  A
 * request larger than the block size gets a block of its own size.
 */
#include <string.h>

#include "base.h"

struct base_arena_block {
	struct base_arena_block *next;
	size_t size; /* usable bytes after the header */
	size_t used;
	/* data follows, 64-byte aligned */
};

#define HDR (((sizeof(struct base_arena_block) + 63) / 64) * 64)

static unsigned char *block_data(struct base_arena_block *b)
{
	return (unsigned char *)b + HDR;
}

void base_arena_init(struct base_arena *a, size_t block_size)
{
	a->head = a->first = NULL;
	a->block_size = block_size ? block_size : 65536;
	a->used_total = 0;
}

static struct base_arena_block *new_block(size_t size)
{
	struct base_arena_block *b = base_alloc(HDR + size);
	if (!b)
		return NULL;
	b->next = NULL;
	b->size = size;
	b->used = 0;
	return b;
}

void *base_arena_alloc(struct base_arena *a, size_t n, size_t align)
{
	if (align == 0)
		align = 1;
	struct base_arena_block *b = a->head;
	while (b) {
		size_t off = (b->used + align - 1) & ~(align - 1);
		if (off <= b->size && n <= b->size - off) {
			b->used = off + n;
			a->head = b;
			a->used_total += n;
			return block_data(b) + off;
		}
		/* Try the next kept block (after a reset), else grow the chain. */
		if (!b->next)
			break;
		b = b->next;
		b->used = 0;
	}
	size_t size = n > a->block_size ? n : a->block_size;
	struct base_arena_block *nb = new_block(size);
	if (!nb)
		return NULL;
	if (b) {
		nb->next = b->next;
		b->next = nb;
	} else {
		a->first = nb;
	}
	a->head = nb;
	nb->used = n;
	a->used_total += n;
	return block_data(nb);
}

char *base_arena_strdup(struct base_arena *a, const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = base_arena_alloc(a, n, 1);
	if (d)
		memcpy(d, s, n);
	return d;
}

char *base_arena_strndup(struct base_arena *a, const char *s, size_t n)
{
	char *d = base_arena_alloc(a, n + 1, 1);
	if (d) {
		memcpy(d, s, n);
		d[n] = 0;
	}
	return d;
}

void base_arena_reset(struct base_arena *a)
{
	if (a->first)
		a->first->used = 0;
	a->head = a->first;
	a->used_total = 0;
}

void base_arena_free(struct base_arena *a)
{
	struct base_arena_block *b = a->first;
	while (b) {
		struct base_arena_block *next = b->next;
		base_free(b, HDR + b->size);
		b = next;
	}
	a->head = a->first = NULL;
	a->used_total = 0;
}
