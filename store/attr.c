/*
 * attr.c: column attributes, read straight from the memory map.
 *
 * A fixed-size attribute field (number, bool, dense tensor) of a doctype
 * lives in the doctype's "cols" DB as blocks: key (column number << 32 |
 * block number), value = a presence bitmap padded to 64 bytes followed by the
 * cells of 2^block_shift consecutive local ids.  Blocks are sized (env.c,
 * derive) so every value is larger than two pages; LMDB keeps such values on
 * overflow pages, whose data starts 16 bytes into a page, so cells are 16-byte
 * aligned and store_attr() can hand out pointers into the map.  The feed path
 * rewrites a block with MDB_RESERVE: when the block is already dirty in this
 * transaction LMDB gives back the same buffer, so a run of puts into one block
 * copies it once per transaction, not once per document.  The old bytes are
 * then found in one of three places (see store_col_write): in the returned
 * buffer itself (a dirty block rewritten in place, or a block LMDB spilled to
 * disk and read back in), or at the old address in the map (a clean block:
 * LMDB never reuses pages freed in the running transaction, and nothing
 * writes over a page the transaction can see).
 *
 * A multi-vector field's graph keeps its vectors in such a column too,
 * indexed by node id instead of local id (hnsw_multi.c).
 *
 * Invariants: a cell whose presence bit is clear is all zero bytes; a
 * column holds values only for local ids already handed out (node ids
 * for a graph's vectors).  Debug builds
 * check both at every column write.
 */
#include <stdio.h>
#include <string.h>

#include "store_int.h"

/* Blocks are larger than two pages, so LMDB stores them on overflow pages,
 * which are page aligned: cells start 16 bytes into a page plus the
 * bitmap padding. */
void store_col_geometry(struct sfield *f, unsigned psize, int new_field)
{
	if (new_field) {
		size_t target = STORE_BLOCK_TARGET;
		if (target < 2 * (size_t)psize)
			target = 2 * (size_t)psize;
		size_t per = (target + f->cell_bytes - 1) / f->cell_bytes;
		uint32_t shift = 0;
		while (((size_t)1 << shift) < per)
			shift++;
		f->block_shift = shift;
	}
	size_t docs = (size_t)1 << f->block_shift;
	size_t bm = (docs + 7) / 8;
	f->bitmap_bytes = (uint32_t)((bm + STORE_BITMAP_ALIGN - 1) / STORE_BITMAP_ALIGN *
	                             STORE_BITMAP_ALIGN);
	f->block_bytes = f->bitmap_bytes + docs * f->cell_bytes;
}

static size_t col_key(int column, uint32_t block)
{
	_Static_assert(sizeof(size_t) == 8, "column keys need a 64-bit size_t");
	return ((size_t)(uint32_t)column << 32) | block;
}

/* Fetch a block; NULL when it is missing or not what its field expects. */
static const uint8_t *block_get(struct store_txn *txn, const struct doctype *dt, int sf,
                                uint32_t block)
{
	const struct sfield *f = &dt->stored[sf];
	size_t key = col_key(sf, block);
	MDB_val k = {sizeof key, &key}, v;
	if (mdb_get(txn->txn, dt->cols, &k, &v) != 0)
		return NULL;
	/* A short block or a misaligned one (never written by this code) is
	 * treated as absent rather than read out of bounds. */
	if (v.mv_size != f->block_bytes || ((uintptr_t)v.mv_data & 7) != 0)
		return NULL;
	return v.mv_data;
}

static const void *cell_in(const struct sfield *f, const uint8_t *b, uint32_t lid)
{
	uint32_t slot = lid & ((1u << f->block_shift) - 1);
	if (!(b[slot >> 3] & (1u << (slot & 7))))
		return NULL;
	return b + f->bitmap_bytes + (size_t)slot * f->cell_bytes;
}

const uint8_t *store_col_block(struct store_txn *txn, const struct doctype *dt, int sf,
                               uint32_t block)
{
	return block_get(txn, dt, sf, block);
}

const void *store_col_cell(const struct sfield *f, const uint8_t *b, uint32_t lid)
{
	return cell_in(f, b, lid);
}

const void *store_col_get(struct store_txn *txn, struct doctype *dt, int sf, uint32_t lid)
{
	const uint8_t *b = block_get(txn, dt, sf, lid >> dt->stored[sf].block_shift);
	return b ? cell_in(&dt->stored[sf], b, lid) : NULL;
}

/* The stored field of the caller's field when it is a column, else NULL. */
static const struct sfield *column_of(struct store_txn *txn, int doctype, int field,
                                      struct doctype **dt, int *sf)
{
	if (!txn || txn->failed || doctype < 0 || doctype >= txn->env->ntypes)
		return NULL;
	*dt = txn->env->types[doctype];
	if (field < 0 || field >= (*dt)->nuser)
		return NULL;
	*sf = (*dt)->ufield[field];
	const struct sfield *f = &(*dt)->stored[*sf];
	return f->column ? f : NULL;
}

void store_attr_rows(struct store_txn *txn, int doctype, int field, const uint32_t *lids,
                     size_t n, const void **out)
{
	struct doctype *dt;
	int sf;
	const struct sfield *f = column_of(txn, doctype, field, &dt, &sf);
	const uint8_t *b = NULL;
	uint32_t at = 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t block = f ? lids[i] >> f->block_shift : 0;
		if (f && (i == 0 || block != at)) {
			b = block_get(txn, dt, sf, block);
			at = block;
		}
		out[i] = b ? cell_in(f, b, lids[i]) : NULL;
	}
}

const void *store_attr(struct store_txn *txn, int doctype, int field, uint32_t lid)
{
	struct doctype *dt;
	int sf;
	const struct sfield *f = column_of(txn, doctype, field, &dt, &sf);
	if (!f)
		return NULL;
	uint32_t block = lid >> f->block_shift;
	if (doctype >= txn->ntypes)
		return store_col_get(txn, dt, sf, lid);
	struct attr_slot *s = &txn->slots[doctype][field];
	if (!s->valid || s->block != block) {
		s->p = block_get(txn, dt, sf, block);
		s->block = block;
		s->valid = 1;
	}
	return s->p ? cell_in(f, s->p, lid) : NULL;
}

void store_attr_reset(struct store_txn *txn)
{
	/* Any write may move or spill any dirty page, so every slot goes. */
	if (txn->slot_mem)
		memset(txn->slot_mem, 0, txn->slot_count * sizeof *txn->slot_mem);
}

#ifdef STRATA_DEBUG
/* lid was handed out: it is below its type's next local id (an unreadable
 * counter proves nothing here; writes report it). */
static int lid_handed_out(struct store_txn *txn, const struct doctype *dt, uint32_t lid)
{
	char key[STORE_MAX_NAME + 8];
	MDB_val k = {(size_t)snprintf(key, sizeof key, "n/%s", dt->name), key}, v;
	uint32_t next;
	if (mdb_get(txn->txn, txn->env->meta, &k, &v) != 0 || v.mv_size != sizeof next)
		return 1;
	memcpy(&next, v.mv_data, sizeof next);
	return lid < next;
}

/* The file's invariant for one slot of block b: absent means all zero. */
static int absent_is_zero(const struct sfield *f, const uint8_t *b, uint32_t slot)
{
	if (b[slot >> 3] & (1u << (slot & 7)))
		return 1;
	const uint8_t *c = b + f->bitmap_bytes + (size_t)slot * f->cell_bytes;
	for (uint32_t i = 0; i < f->cell_bytes; i++)
		if (c[i])
			return 0;
	return 1;
}
#endif

/* The map's address is unknown (env.c could not find it): keep a copy of a
 * block in the txn's buffer before rewriting it.  Slower, always safe. */
static int copy_aside(struct store_txn *txn, const uint8_t **old, size_t n,
                      struct strata_error *err)
{
	if (n > txn->buf_cap) {
		uint8_t *b = base_alloc(n);
		if (!b)
			return base_nomem(err, "a column block of %zu bytes", n);
		base_free(txn->buf, txn->buf_cap);
		txn->buf = b;
		txn->buf_cap = n;
	}
	memcpy(txn->buf, *old, n);
	*old = txn->buf;
	return 0;
}

int store_col_write(struct store_txn *txn, struct doctype *dt, int sf, uint32_t lid,
                    const void *cell, struct strata_error *err)
{
	const struct sfield *f = &dt->stored[sf];
	uint32_t block = lid >> f->block_shift;
	uint32_t slot = lid & ((1u << f->block_shift) - 1);
	uint8_t mask = (uint8_t)(1u << (slot & 7));
	size_t key = col_key(sf, block);
	MDB_val k = {sizeof key, &key}, v;
	const uint8_t *old = NULL;
	BASE_DEBUG_ASSERT(f->multi || lid_handed_out(txn, dt, lid)); /* multi: node ids */
	int rc = mdb_get(txn->txn, dt->cols, &k, &v);
	if (rc == MDB_NOTFOUND) {
		if (!cell)
			return 0;
	} else if (rc) {
		return store_mdb_err(err, rc, "reading a column block");
	} else {
		if (v.mv_size != f->block_bytes)
			return base_err(err, STRATA_CORRUPT,
			                "field '%s': column block %u has %zu bytes, expected %zu",
			                f->name, block, v.mv_size, f->block_bytes);
		old = v.mv_data;
		BASE_DEBUG_ASSERT(absent_is_zero(f, old, slot));
		if (!cell && !(old[slot >> 3] & mask))
			return 0;
		if (!txn->env->map_lo && (rc = copy_aside(txn, &old, f->block_bytes, err)) != 0)
			return rc;
	}
	v.mv_size = f->block_bytes;
	v.mv_data = NULL;
	if ((rc = mdb_put(txn->txn, dt->cols, &k, &v, MDB_RESERVE)) != 0)
		return store_mdb_err(err, rc, "writing a column block");
	uint8_t *b = v.mv_data;
	/* A new buffer for a block that was clean: copy from its old place in
	 * the map.  A new buffer for a block that was dirty (not in the map)
	 * means LMDB spilled it and read it back into b: the old address may
	 * be freed memory, and b already holds the bytes. */
	if (!old)
		memset(b, 0, f->block_bytes);
	else if (b != old && (old == txn->buf || store_in_map(txn->env, old)))
		memcpy(b, old, f->block_bytes);
	uint8_t *c = b + f->bitmap_bytes + (size_t)slot * f->cell_bytes;
	if (cell) {
		b[slot >> 3] |= mask;
		memcpy(c, cell, f->cell_bytes);
	} else {
		b[slot >> 3] &= (uint8_t)~mask;
		memset(c, 0, f->cell_bytes);
	}
	return 0;
}
