/*
 * hnsw_multi.c: the nearest-neighbour graphs of multi-vector fields (a
 * tensor of one mapped and one indexed dimension, several vectors per
 * document), kept as Vespa keeps them: every vector is a node of one graph,
 * and a search collects the nearest vectors until it has enough distinct
 * documents, each at the distance of its nearest vector.
 *
 * The field's value is JSON text in the document record; the store reads
 * its vectors with the caller's decoder (store_field.vec_decode) and keeps
 * them in a column of the field's number indexed by node id, each cell the
 * vector then its document's local id, so that the search reads vectors and
 * documents straight from the memory map as hnsw.c does for single vectors.
 * Node ids come from a counter (field 'n') and are never reused; a
 * document's nodes are listed under field lid 'd' (store_int.h).
 *
 * Every write of the document rewrites its nodes: the old ones are removed
 * (hnsw_remove, which repairs their neighbours) and their cells cleared,
 * then a node per vector of the new value is inserted.  All in the
 * document's transaction, so the graph and the documents always agree.
 */
#include <string.h>

#include "hnsw_int.h"

static int corrupt_value(struct hnsw_graph *g, uint32_t lid)
{
	return base_err(g->err, STRATA_CORRUPT,
	                "document type '%s', field '%s': the value of local id %u is not a "
	                "multi-vector tensor of %zu cells", g->dt->name, g->f->name, lid, g->n);
}

/* lid's vectors: *cells (nvec * g->n numbers, in a) from its stored value;
 * *nvec 0 when it has none. */
static int doc_vectors(struct hnsw_graph *g, uint32_t lid, struct base_arena *a,
                       const double **cells, size_t *nvec)
{
	const char *text;
	size_t n;
	*nvec = 0;
	int rc = g->dt->doc_bytes(g->stx, g->dt, lid, g->sf, &text, &n, g->err);
	if (rc || !text)
		return rc;
	rc = g->f->vec_decode(g->f->vec_ud, text, n, a, cells, nvec);
	if (rc == STRATA_NOMEM)
		return base_nomem(g->err, "the vectors of field '%s'", g->f->name);
	return rc ? corrupt_value(g, lid) : 0;
}

static void doc_key(const struct hnsw_graph *g, uint32_t lid, uint8_t key[7])
{
	hnsw_node_key(g, lid, key);
	key[6] = 'd';
}

/* A copy of lid's node list (*nodes, base_alloc'd, NULL when *n is 0). */
static int doc_nodes(struct hnsw_graph *g, uint32_t lid, uint32_t **nodes, size_t *n)
{
	uint8_t key[7];
	doc_key(g, lid, key);
	MDB_val v;
	*nodes = NULL;
	*n = 0;
	int rc = hnsw_db_get(g, key, sizeof key, &v);
	if (rc || !v.mv_data)
		return rc;
	if (v.mv_size == 0 || v.mv_size % 4)
		return base_err(g->err, STRATA_CORRUPT,
		                "document type '%s', field '%s': the node list of local id %u is "
		                "malformed", g->dt->name, g->f->name, lid);
	if (!(*nodes = base_alloc(v.mv_size)))
		return base_nomem(g->err, "nearest-neighbour graph");
	memcpy(*nodes, v.mv_data, v.mv_size);
	*n = v.mv_size / 4;
	return 0;
}

static int put(struct hnsw_graph *g, const void *key, size_t klen, const void *val, size_t n)
{
	MDB_val k = {klen, (void *)key}, v = {n, (void *)val};
	hnsw_forget(g);
	int rc = n ? mdb_put(g->txn, g->dt->hnsw, &k, &v, 0) : mdb_del(g->txn, g->dt->hnsw, &k, NULL);
	if (rc == MDB_NOTFOUND && !n)
		rc = 0;
	return rc ? store_mdb_err(g->err, rc, "writing the nearest-neighbour graph") : 0;
}

/* Set node's vector cell (NULL: clear it). */
static int put_cell(struct hnsw_graph *g, uint32_t node, const void *cell)
{
	hnsw_forget(g);
	int rc = store_col_write(g->stx, g->dt, g->sf, node, cell, g->err);
	hnsw_forget_block(g, node);
	return rc;
}

static int remove_doc(struct hnsw_graph *g, uint32_t lid)
{
	uint32_t *old;
	size_t nold;
	int rc = doc_nodes(g, lid, &old, &nold);
	for (size_t i = 0; i < nold && !rc; i++)
		if ((rc = hnsw_remove(g, old[i])) == 0)
			rc = put_cell(g, old[i], NULL);
	base_free(old, nold * 4);
	if (rc || !nold)
		return rc;
	uint8_t key[7];
	doc_key(g, lid, key);
	return put(g, key, sizeof key, NULL, 0);
}

/* Insert a node per vector: cells[nvec * g->n]. */
static int add_doc(struct hnsw_graph *g, uint32_t lid, const double *cells, size_t nvec)
{
	uint8_t nkey[3] = {(uint8_t)(g->sf >> 8), (uint8_t)g->sf, 'n'};
	MDB_val v;
	uint32_t next = 0;
	int rc = hnsw_db_get(g, nkey, sizeof nkey, &v);
	if (rc)
		return rc;
	if (v.mv_data && v.mv_size != 4)
		return base_err(g->err, STRATA_CORRUPT,
		                "document type '%s', field '%s': bad node counter", g->dt->name,
		                g->f->name);
	if (v.mv_data)
		memcpy(&next, v.mv_data, 4);
	if (nvec >= UINT32_MAX - (size_t)next)
		return base_err(g->err, STRATA_LIMIT,
		                "document type '%s', field '%s': the graph's node ids are used up",
		                g->dt->name, g->f->name);
	struct hnsw_scratch *s = g->s;
	uint32_t *nodes = base_alloc(nvec * 4);
	uint8_t *cell = base_calloc(1, g->f->cell_bytes);
	if (!nodes || !cell ||
	    hnsw_reserve(g, (void **)&s->q, &s->qcap, g->vbytes, 1) != 0) {
		base_free(nodes, nvec * 4);
		base_free(cell, cell ? g->f->cell_bytes : 0);
		return base_nomem(g->err, "nearest-neighbour graph");
	}
	rc = 0;
	for (size_t i = 0; i < nvec && !rc; i++) {
		nodes[i] = next + (uint32_t)i;
		hnsw_cells(g, cells + i * g->n, cell);
		memcpy(cell + g->lid_off, &lid, 4);
		memcpy(s->q, cell, g->vbytes);
		if ((rc = put_cell(g, nodes[i], cell)) == 0)
			rc = hnsw_insert(g, nodes[i]);
	}
	uint8_t dkey[7];
	doc_key(g, lid, dkey);
	next += (uint32_t)nvec;
	if (!rc && (rc = put(g, dkey, sizeof dkey, nodes, nvec * 4)) == 0)
		rc = put(g, nkey, sizeof nkey, &next, 4);
	base_free(nodes, nvec * 4);
	base_free(cell, g->f->cell_bytes);
	return rc;
}

int hnsw_multi_sync(struct hnsw_graph *g, uint32_t lid)
{
	int rc = remove_doc(g, lid);
	if (rc)
		return rc;
	struct base_arena a;
	base_arena_init(&a, 1 << 14);
	const double *cells;
	size_t nvec;
	rc = doc_vectors(g, lid, &a, &cells, &nvec);
	if (!rc && nvec)
		rc = add_doc(g, lid, cells, nvec);
	base_arena_free(&a);
	return rc;
}

int hnsw_multi_search(struct hnsw_graph *g, struct hnsw_cand ep, uint32_t k, uint32_t ef,
                      uint64_t count, struct store_hit *out, size_t *nout)
{
	struct hnsw_scratch *s = g->s;
	uint64_t want = ef > k ? ef : k, e = want;
	for (;;) {
		uint32_t ee = e > UINT32_MAX ? UINT32_MAX : (uint32_t)e;
		int rc = hnsw_search_layer(g, s->q, ep, ee, 0);
		if (rc)
			return rc;
		hnsw_sort_results(s);
		/* the nearest node of each document; the visited set now holds
		 * documents */
		hnsw_visited_clear(s);
		uint64_t docs = 0;
		*nout = 0;
		for (size_t i = 0; i < s->nres; i++) {
			uint32_t lid = hnsw_node_doc(g, s->res[i].lid);
			if (lid == UINT32_MAX)
				continue;
			if ((rc = hnsw_visit(g, lid)) <= 0) {
				if (rc < 0)
					return rc;
				continue;
			}
			docs++;
			if (*nout < k)
				out[(*nout)++] = (struct store_hit){lid, s->res[i].d};
		}
		if (docs >= want)
			return 0;
		if (s->nres < ee || ee >= count) {
			/* every node the search can reach is in, or filter-first
			 * search lost its way: then the plain search */
			if (!g->filter_first)
				return 0;
			g->filter_first = 0;
			continue;
		}
		e = e * 2 < count ? e * 2 : count;
	}
}

int hnsw_multi_drop(MDB_txn *t, struct doctype *dt, int sf, struct strata_error *err)
{
	MDB_cursor *c;
	int rc = mdb_cursor_open(t, dt->cols, &c);
	if (rc)
		return store_mdb_err(err, rc, "dropping a nearest-neighbour graph");
	size_t key = (size_t)(uint32_t)sf << 32; /* attr.c's column keys */
	MDB_val k = {sizeof key, &key}, v;
	for (rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE); rc == 0;
	     rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
		size_t got;
		memcpy(&got, k.mv_data, sizeof got);
		if (got >> 32 != (uint32_t)sf || (rc = mdb_cursor_del(c, 0)) != 0)
			break;
	}
	mdb_cursor_close(c);
	return rc == 0 || rc == MDB_NOTFOUND
	               ? 0 : store_mdb_err(err, rc, "dropping a nearest-neighbour graph");
}

int hnsw_multi_check_doc(struct hnsw_graph *g, uint32_t lid, uint64_t *nodes)
{
	struct base_arena a;
	base_arena_init(&a, 1 << 14);
	const double *cells;
	size_t nvec, n = 0;
	uint32_t *list = NULL;
	uint8_t *cell = base_arena_alloc(&a, g->vbytes, 8);
	int rc = cell ? doc_vectors(g, lid, &a, &cells, &nvec)
	              : base_nomem(g->err, "checking the nearest-neighbour graph");
	if (!rc && (rc = doc_nodes(g, lid, &list, &n)) == 0 && n != nvec)
		rc = hnsw_check_fail(g, "has %zu nodes for the %zu vectors of document %u", n, nvec,
		                     lid);
	for (size_t i = 0; i < n && !rc; i++) {
		const void *rec;
		uint32_t lv;
		if ((rc = hnsw_node_get(g, list[i], &rec, &lv)) != 0)
			break;
		hnsw_cells(g, cells + i * g->n, cell);
		const uint8_t *have = hnsw_vec(g, list[i]);
		if (!rec || hnsw_node_doc(g, list[i]) != lid)
			rc = hnsw_check_fail(g, "lacks node %u of document %u", list[i], lid);
		else if (memcmp(have, cell, g->vbytes) != 0)
			rc = hnsw_check_fail(g, "node %u holds another vector than document %u's",
			                     list[i], lid);
	}
	base_free(list, n * 4);
	base_arena_free(&a);
	*nodes += n;
	return rc;
}
