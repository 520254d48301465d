/*
 * hnsw_rec.c: the graph's records as stored (the layout is in hnsw.c):
 * words, list offsets and keys, reading a node, the head or another key
 * (hnsw_multi.c's node lists and counter) from the store, and dropping a
 * scratch's column blocks.  The bottom of the graph files: hnsw_cache.c and
 * hnsw_snap.c read through it, hnsw.c, hnsw_write.c and hnsw_multi.c
 * through them.
 */
#include <string.h>

#include "hnsw_int.h"

size_t hnsw_list_off(const struct hnsw_graph *g, uint32_t level)
{
	if (level == 0)
		return 1;
	return 1 + (1 + (size_t)g->cap0) + (size_t)(level - 1) * (1 + g->m);
}

size_t hnsw_rec_words(const struct hnsw_graph *g, uint32_t level)
{
	return hnsw_list_off(g, level + 1);
}

void hnsw_node_key(const struct hnsw_graph *g, uint32_t lid, uint8_t key[6])
{
	hnsw_key_of(g->sf, lid, key);
}

void hnsw_key_of(int sf, uint32_t lid, uint8_t key[6])
{
	key[0] = (uint8_t)(sf >> 8);
	key[1] = (uint8_t)sf;
	key[2] = (uint8_t)(lid >> 24);
	key[3] = (uint8_t)(lid >> 16);
	key[4] = (uint8_t)(lid >> 8);
	key[5] = (uint8_t)lid;
}

int hnsw_db_get(struct hnsw_graph *g, const void *key, size_t klen, MDB_val *v)
{
	MDB_val k = {klen, (void *)key};
	int rc = mdb_get(g->txn, g->dt->hnsw, &k, v);
	if (rc == MDB_NOTFOUND) {
		*v = (MDB_val){0, NULL};
		return 0;
	}
	return rc ? store_mdb_err(g->err, rc, "reading the nearest-neighbour graph") : 0;
}

int hnsw_node_read(struct hnsw_graph *g, uint32_t lid, const void **rec, uint32_t *level)
{
	uint8_t key[6];
	hnsw_node_key(g, lid, key);
	MDB_val v;
	int rc = hnsw_db_get(g, key, sizeof key, &v);
	*rec = NULL;
	*level = 0;
	if (rc || !v.mv_data)
		return rc;
	uint32_t lv = v.mv_size >= 4 ? hnsw_rd(v.mv_data, 0) : 0;
	if (v.mv_size < 4 || lv > HNSW_MAX_LEVEL || v.mv_size != hnsw_rec_words(g, lv) * 4)
		return base_err(g->err, STRATA_CORRUPT,
		                "document type '%s', field '%s': graph node %u is malformed",
		                g->dt->name, g->f->name, lid);
	*rec = v.mv_data;
	*level = lv;
	return 0;
}

int hnsw_head_read(struct hnsw_graph *g, struct hnsw_head *h)
{
	uint8_t key[2] = {(uint8_t)(g->sf >> 8), (uint8_t)g->sf};
	MDB_val v;
	int rc = hnsw_db_get(g, key, sizeof key, &v);
	memset(h, 0, sizeof *h);
	if (rc || !v.mv_data)
		return rc;
	if (v.mv_size != sizeof *h)
		return base_err(g->err, STRATA_CORRUPT,
		                "document type '%s', field '%s': the graph's head is malformed",
		                g->dt->name, g->f->name);
	memcpy(h, v.mv_data, sizeof *h);
	return 0;
}

void hnsw_forget_all(struct hnsw_scratch *s)
{
	if (++s->epoch == 0) { /* wrapped: no entry may look valid */
		if (s->blocks)
			memset(s->blocks, 0, s->nblk * sizeof *s->blocks);
		s->epoch = 1;
	}
}

void hnsw_scratch_forget(struct hnsw_scratch *s)
{
	if (++s->gen == 0) {
		s->gen = 1;
		hnsw_forget_all(s);
	}
}
