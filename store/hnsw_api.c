/*
 * hnsw_api.c: the store's calls on its nearest-neighbour graphs: search
 * (store_hnsw_search, store_hnsw_search_with: the descent through the
 * upper levels, then hnsw.c's search of level 0, or hnsw_multi.c's for a
 * multi-vector field), check (store_hnsw_check: every link and every
 * document against the graph) and size (store_hnsw_bytes).  Reads only.
 */
#include <string.h>

#include "hnsw_int.h"

/* Convert the query to the field's cell type into s->q. */
static int query_cells(struct hnsw_graph *g, const double *query)
{
	int rc = hnsw_reserve(g, (void **)&g->s->q, &g->s->qcap, g->vbytes, 1);
	if (rc)
		return rc;
	hnsw_cells(g, query, g->s->q);
	return 0;
}

/* The stored field of a caller's field with a graph, or an error. */
static int graph_field(struct store_txn *txn, int doctype, int field, int write,
                       struct doctype **dtp, int *sfp, struct strata_error *err)
{
	int rc = store_txn_check(txn, write, doctype, err);
	if (rc)
		return rc;
	struct doctype *dt = txn->env->types[doctype];
	if (field < 0 || field >= dt->nuser)
		return base_err(err, STRATA_INVALID_ARGUMENT, "no field %d in document type '%s'",
		                field, dt->name);
	int sf = dt->ufield[field];
	if (!dt->stored[sf].hnsw_metric)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "field '%s' of document type '%s' has no nearest-neighbour graph",
		                dt->stored[sf].name, dt->name);
	*dtp = dt;
	*sfp = sf;
	/* the graph is read from the store: what this transaction changed in
	 * it goes there first */
	return txn->hnsw_flush ? txn->hnsw_flush(txn, err) : 0;
}

int store_hnsw_search(struct store_txn *txn, int doctype, int field, const double *query,
                      size_t n, uint32_t k, uint32_t ef, const uint64_t *filter, size_t nbits,
                      struct store_hit *out, size_t *nout, struct strata_error *err)
{
	struct store_hnsw_params sp = {.k = k, .ef = ef, .filter = filter, .nbits = nbits};
	return store_hnsw_search_with(txn, doctype, field, query, n, &sp, out, nout, err);
}

int store_hnsw_search_with(struct store_txn *txn, int doctype, int field, const double *query,
                           size_t n, const struct store_hnsw_params *sp, struct store_hit *out,
                           size_t *nout, struct strata_error *err)
{
	struct doctype *dt;
	int sf;
	uint32_t k = sp->k, ef = sp->ef;
	*nout = 0;
	int rc = graph_field(txn, doctype, field, 0, &dt, &sf, err);
	if (rc)
		return rc;
	if (n != dt->stored[sf].ncells)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "nearest-neighbour query of %zu cells on field '%s' of %llu", n,
		                dt->stored[sf].name, (unsigned long long)dt->stored[sf].ncells);
	if (!(sp->slack >= 0) || !(sp->exploration >= 0))
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "nearest-neighbour search: slack %g and exploration %g must not be "
		                "negative", sp->slack, sp->exploration);
	if (k == 0)
		return 0;
	struct hnsw_scratch s = {0};
	struct hnsw_graph g;
	hnsw_graph_init(&g, txn, dt, sf, &s, err);
	g.filter = sp->filter;
	g.nbits = sp->nbits;
	g.slack = sp->slack;
	g.filter_first = sp->filter_first;
	g.exploration = sp->exploration;
	struct hnsw_head h;
	if ((rc = hnsw_head_get(&g, &h)) != 0 || !h.count || (rc = query_cells(&g, query)) != 0)
		goto out;
	/* the visited set at its size at once, not doubled up to it */
	if (g.snap && (rc = hnsw_visited_reserve(&g, hnsw_snap_lids(g.snap))) != 0)
		goto out;
	struct hnsw_cand ep = {0, h.entry};
	if (hnsw_dist_to(&g, s.q, h.entry, &ep.d) != 0) {
		rc = base_err(err, STRATA_CORRUPT,
		              "document type '%s', field '%s': the graph's entry point %u has no value",
		              dt->name, dt->stored[sf].name, h.entry);
		goto out;
	}
	for (uint32_t l = h.level; l > 0; l--)
		if ((rc = hnsw_greedy(&g, s.q, &ep, l)) != 0)
			goto out;
	if (g.multi) {
		rc = hnsw_multi_search(&g, ep, k, ef, h.count, out, nout);
		goto out;
	}
	if ((rc = hnsw_search_layer(&g, s.q, ep, ef > k ? ef : k, 0)) != 0)
		goto out;
	if (g.filter_first && s.nres < k) {
		/* filter-first search lost its way among nodes the filter drops:
		 * the plain search goes through them */
		g.filter_first = 0;
		if ((rc = hnsw_search_layer(&g, s.q, ep, ef > k ? ef : k, 0)) != 0)
			goto out;
	}
	hnsw_sort_results(&s);
	for (size_t i = 0; i < s.nres && i < k; i++) {
		out[i].lid = s.res[i].lid;
		out[i].distance = s.res[i].d;
	}
	*nout = s.nres < k ? s.nres : k;
out:
	hnsw_snap_release(txn->env, g.snap);
	hnsw_scratch_release(&s);
	return rc;
}

/* ---- checking ------------------------------------------------------------------------- */

static int check_node(struct hnsw_graph *g, uint32_t lid, const void *rec, uint32_t lv,
                      uint32_t top)
{
	if (!hnsw_vec(g, lid))
		return hnsw_check_fail(g, "node %u has no document value", lid);
	if (lv > top)
		return hnsw_check_fail(g, "node %u is above the top level %u", lid, top);
	for (uint32_t l = 0; l <= lv; l++) {
		size_t off = hnsw_list_off(g, l);
		uint32_t cnt = hnsw_rd(rec, off);
		if (cnt > hnsw_cap(g, l))
			return hnsw_check_fail(g, "node %u has too many links on level %u", lid, l);
		for (uint32_t i = 0; i < cnt; i++) {
			uint32_t nb = hnsw_rd(rec, off + 1 + i);
			if (nb == lid)
				return hnsw_check_fail(g, "node %u links to itself on level %u", lid, l);
			const void *r2;
			uint32_t lv2;
			int rc = hnsw_node_get(g, nb, &r2, &lv2);
			if (rc)
				return rc;
			if (!r2)
				return hnsw_check_fail(g, "node %u links to %u, no node", lid, nb);
			if (lv2 < l)
				return hnsw_check_fail(g, "node %u links on level %u to a node below it",
				                       lid, l);
			size_t off2 = hnsw_list_off(g, l);
			int back = 0;
			for (uint32_t j = 0; j < hnsw_rd(r2, off2) && !back; j++)
				back = hnsw_rd(r2, off2 + 1 + j) == lid;
			if (!back)
				return hnsw_check_fail(g, "node %u links to %u on level %u, not back",
				                       lid, nb, l);
		}
	}
	return 0;
}

/* Every document with a value is a node (or its vectors are). */
static int check_docs(struct hnsw_graph *g, uint64_t *nodes)
{
	MDB_cursor *c;
	int rc = mdb_cursor_open(g->txn, g->dt->docs, &c);
	if (rc)
		return store_mdb_err(g->err, rc, "checking the nearest-neighbour graph");
	*nodes = 0;
	MDB_val dk, dv;
	int drc;
	for (drc = mdb_cursor_get(c, &dk, &dv, MDB_FIRST); drc == 0 && !rc;
	     drc = mdb_cursor_get(c, &dk, &dv, MDB_NEXT)) {
		uint32_t lid;
		memcpy(&lid, dk.mv_data, sizeof lid);
		if (g->multi) {
			rc = hnsw_multi_check_doc(g, lid, nodes);
			continue;
		}
		if (!hnsw_vec(g, lid))
			continue;
		const void *rec;
		uint32_t lv;
		(*nodes)++;
		if ((rc = hnsw_node_get(g, lid, &rec, &lv)) == 0 && !rec)
			rc = hnsw_check_fail(g, "lacks document %u", lid);
	}
	mdb_cursor_close(c);
	if (rc)
		return rc;
	if (drc != MDB_NOTFOUND)
		return store_mdb_err(g->err, drc, "checking the nearest-neighbour graph");
	return 0;
}

int store_hnsw_check(struct store_txn *txn, int doctype, int field, uint64_t *nodes,
                     struct strata_error *err)
{
	struct doctype *dt;
	int sf;
	int rc = graph_field(txn, doctype, field, 0, &dt, &sf, err);
	if (rc)
		return rc;
	struct hnsw_graph g;
	hnsw_graph_init(&g, txn, dt, sf, NULL, err);
	struct hnsw_head h;
	if ((rc = hnsw_head_get(&g, &h)) != 0)
		return rc;
	int have_head = h.count > 0;
	uint64_t docs = 0;
	if ((rc = check_docs(&g, &docs)) != 0)
		return rc;
	MDB_cursor *c;
	MDB_val k, v;
	/* Every node is a document with a value, with sound links. */
	if ((rc = mdb_cursor_open(g.txn, dt->hnsw, &c)) != 0)
		return store_mdb_err(err, rc, "checking the nearest-neighbour graph");
	uint8_t key[6];
	hnsw_node_key(&g, 0, key);
	k = (MDB_val){sizeof key, key};
	uint64_t count = 0;
	uint32_t top = 0;
	int mrc;
	for (mrc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE); mrc == 0;
	     mrc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
		const uint8_t *kb = k.mv_data;
		if (k.mv_size < 2 || kb[0] != key[0] || kb[1] != key[1])
			break;
		if (k.mv_size != 6)
			continue;
		uint32_t lid = (uint32_t)kb[2] << 24 | (uint32_t)kb[3] << 16 |
		               (uint32_t)kb[4] << 8 | kb[5];
		const void *rec;
		uint32_t lv;
		if ((rc = hnsw_node_get(&g, lid, &rec, &lv)) != 0 ||
		    (rc = check_node(&g, lid, rec, lv, have_head ? h.level : 0)) != 0)
			break;
		count++;
		top = lv > top ? lv : top;
	}
	mdb_cursor_close(c);
	if (rc)
		return rc;
	if (mrc && mrc != MDB_NOTFOUND)
		return store_mdb_err(err, mrc, "checking the nearest-neighbour graph");
	if (count != docs)
		return hnsw_check_fail(&g, "has %llu nodes for %llu document values",
		                       (unsigned long long)count, (unsigned long long)docs);
	if (count && !have_head)
		return hnsw_check_fail(&g, "has %llu nodes and no head", (unsigned long long)count);
	if (have_head) {
		const void *rec;
		uint32_t lv;
		if (h.count != count)
			return hnsw_check_fail(&g, "head counts %llu nodes, the graph has %llu",
			                       (unsigned long long)h.count, (unsigned long long)count);
		if ((rc = hnsw_node_get(&g, h.entry, &rec, &lv)) != 0)
			return rc;
		if (!rec)
			return hnsw_check_fail(&g, "entry point %u is not a node", h.entry);
		if (lv != h.level || top != h.level)
			return hnsw_check_fail(&g, "entry point is on level %u, the top level is %u",
			                       lv, top);
	}
	if (nodes)
		*nodes = count;
	return 0;
}

uint64_t store_hnsw_bytes(struct store_txn *txn, int doctype, int field)
{
	struct doctype *dt;
	int sf;
	struct strata_error err = {0};
	if (graph_field(txn, doctype, field, 0, &dt, &sf, &err) != 0)
		return 0;
	MDB_cursor *c;
	if (mdb_cursor_open(txn->txn, dt->hnsw, &c) != 0)
		return 0;
	uint8_t key[2] = {(uint8_t)(sf >> 8), (uint8_t)sf};
	MDB_val k = {sizeof key, key}, v;
	uint64_t bytes = 0;
	for (int mrc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE); mrc == 0;
	     mrc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
		const uint8_t *kb = k.mv_data;
		if (kb[0] != key[0] || kb[1] != key[1])
			break;
		bytes += k.mv_size + v.mv_size;
	}
	mdb_cursor_close(c);
	return bytes;
}
