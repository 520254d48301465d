/*
 * model.c: onnx(m) features: feeding a model its inputs and reading its
 * outputs, per document or batched over the second phase's candidates.
 *
 * Each model input has a source program (compile.c); its value is handed to
 * the runtime in place when the cell type already matches the model's input
 * (an attribute's float cells straight from the store: zero copy), else it
 * is converted into a buffer the query keeps.  In the batched mode (the
 * model input has one more leading symbolic dimension than its source), the
 * second phase runs the model once: document inputs are stacked row by row
 * into a pooled buffer, query-side inputs repeated, and each candidate then
 * reads its own slice of the outputs, still with a leading dimension of 1,
 * so expressions read the same in both modes.
 *
 * Invariants: pooled buffers only grow, and stay with the query when it
 * is retired for reuse (steady state allocates nothing);
 * outputs of a per-document run are current while qm->serial equals the
 * query's serial; second-phase outputs are copied per candidate into the
 * cache so features of re-ranked documents never run the model again.
 */
#include <stdio.h>
#include <string.h>

#include "../runtime/runtime.h"
#include "rank_eval.h"

/* Hard limit of one pooled buffer: 1 GiB. */
#define POOL_MAX ((size_t)1 << 30)

static int grow(void **buf, size_t *cap, size_t need, struct strata_error *err)
{
	if (need <= *cap)
		return 0;
	if (need > POOL_MAX)
		return base_err(err, STRATA_LIMIT, "model buffer of %zu bytes exceeds the limit", need);
	size_t ncap = *cap ? *cap : 256;
	while (ncap < need)
		ncap *= 2;
	void *p = base_realloc(*buf, *cap, ncap);
	if (!p)
		return base_nomem(err, "model buffer of %zu bytes", ncap);
	*buf = p;
	*cap = ncap;
	return 0;
}

static size_t ncells(const struct rank_type *t)
{
	size_t n = 1;
	for (int i = 0; i < t->rank; i++)
		n *= (size_t)t->dims[i];
	return n;
}

/* Write value v (type t) as n cells of dtype into dst. */
static void convert(const struct rank_type *t, const struct rank_val *v, int dtype, void *dst,
                    size_t n)
{
	if (t->rank == 0) {
		base_store_double(dtype, dst, 0, v->num);
		return;
	}
	if (v->cell == dtype) {
		memcpy(dst, v->cells, n * base_dtype_size(dtype));
		return;
	}
	if (dtype == BASE_DT_FLOAT) {
		float *f = dst;
		for (size_t i = 0; i < n; i++)
			f[i] = (float)rank_cell(v->cell, v->cells, i);
		return;
	}
	for (size_t i = 0; i < n; i++)
		base_store_double(dtype, dst, i, rank_cell(v->cell, v->cells, i));
}

/* Shape of input i for a batch of `batch` rows (0: no extra dimension). */
static void set_shape(const struct rt_value_info *info, const struct rank_type *st, int extra,
                      int64_t batch, struct rt_tensor *t)
{
	t->dtype = info->dtype;
	t->rank = st->rank + (extra ? 1 : 0);
	int k = 0;
	if (extra)
		t->dims[k++] = batch;
	for (int i = 0; i < st->rank; i++)
		t->dims[k++] = st->dims[i];
}

static int run(struct rank_query *q, int m, struct strata_error *err)
{
	const struct rank_cmodel *cm = &q->p->models[m];
	struct rank_qmodel *qm = &q->models[m];
	int rc = runtime_run(qm->cx, qm->in, qm->out, err);
	if (rc == 0)
		return 0;
	if (rc == STRATA_NOMEM)
		return rc;
	char msg[STRATA_ERRMSG_MAX];
	snprintf(msg, sizeof msg, "%s", err ? err->msg : "");
	return base_err(err, STRATA_RUNTIME, "onnx model '%s': %s", cm->decl->name, msg);
}

static int check_outputs(struct rank_query *q, int m, size_t rows, struct strata_error *err)
{
	const struct rank_cmodel *cm = &q->p->models[m];
	struct rank_qmodel *qm = &q->models[m];
	for (int o = 0; o < cm->nout; o++) {
		size_t n = (size_t)runtime_tensor_count(&qm->out[o]);
		if (n != cm->out_cells[o] * rows || qm->out[o].dtype != q->p->types[cm->out_type[o]].cell)
			return base_err(err, STRATA_RUNTIME,
			                "onnx model '%s': output '%s' has %zu cells of %s, expected %zu "
			                "of %s", cm->decl->name,
			                runtime_model_output(cm->rt, o)->name, n,
			                base_dtype_name(qm->out[o].dtype), cm->out_cells[o] * rows,
			                base_dtype_name(q->p->types[cm->out_type[o]].cell));
	}
	return 0;
}

/* Run model m for the current document (q->lid). */
static int run_doc(struct rank_query *q, int m, struct strata_error *err)
{
	const struct rank_profile *p = q->p;
	const struct rank_cmodel *cm = &p->models[m];
	struct rank_qmodel *qm = &q->models[m];
	for (int i = 0; i < cm->nin; i++) {
		const struct rt_value_info *info = runtime_model_input(cm->rt, i);
		const struct rank_type *st = &p->types[cm->src[i].result];
		struct rank_val v;
		int rc = rank_vm_run(q, &cm->src[i], &v, err);
		if (rc)
			return rc;
		set_shape(info, st, cm->extra[i], 1, &qm->in[i]);
		if (st->rank > 0 && v.cell == info->dtype) {
			qm->in[i].data = (void *)v.cells; /* read in place: no copy */
		} else {
			size_t n = ncells(st);
			if ((rc = grow(&qm->conv[i], &qm->conv_cap[i], n * base_dtype_size(info->dtype),
			               err)))
				return rc;
			convert(st, &v, info->dtype, qm->conv[i], n);
			qm->in[i].data = qm->conv[i];
		}
	}
	int rc = run(q, m, err);
	if (rc)
		return rc;
	return check_outputs(q, m, 1, err);
}

static size_t slice_bytes(const struct rank_query *q, int m, int o)
{
	const struct rank_cmodel *cm = &q->p->models[m];
	return cm->out_cells[o] * base_dtype_size(q->p->types[cm->out_type[o]].cell);
}

/* Make the cache hold n candidates (lids) with nothing filled yet. */
static int cache_reset(struct rank_query *q, int m, const uint32_t *lids, size_t n,
                       struct strata_error *err)
{
	const struct rank_cmodel *cm = &q->p->models[m];
	struct rank_qmodel *qm = &q->models[m];
	if (n > qm->cache_lids_cap) {
		size_t cap = qm->cache_lids_cap, ncap = cap ? cap * 2 : 16;
		while (ncap < n)
			ncap *= 2;
		uint32_t *l = base_realloc(qm->cache_lids, cap * sizeof *l, ncap * sizeof *l);
		if (!l)
			return base_nomem(err, "model cache of %zu candidates", n);
		qm->cache_lids = l;
		uint8_t *ok = base_realloc(qm->cache_ok, cap, ncap);
		if (!ok) {
			/* keep both arrays at the old capacity */
			qm->cache_lids = base_realloc(l, ncap * sizeof *l, cap * sizeof *l);
			return base_nomem(err, "model cache of %zu candidates", n);
		}
		qm->cache_ok = ok;
		qm->cache_lids_cap = ncap;
	}
	for (int o = 0; o < cm->nout; o++) {
		int rc = grow(&qm->cache[o], &qm->cache_cap[o], n * slice_bytes(q, m, o), err);
		if (rc)
			return rc;
	}
	memcpy(qm->cache_lids, lids, n * sizeof *lids);
	memset(qm->cache_ok, 0, n);
	qm->cache_n = n;
	return 0;
}

/* Copy the current per-document outputs into candidate slot c. */
static void cache_store(struct rank_query *q, int m, size_t c)
{
	const struct rank_cmodel *cm = &q->p->models[m];
	struct rank_qmodel *qm = &q->models[m];
	for (int o = 0; o < cm->nout; o++) {
		size_t b = slice_bytes(q, m, o);
		memcpy((char *)qm->cache[o] + c * b, qm->out[o].data, b);
	}
	qm->cache_ok[c] = 1;
}

int rank_model_value(struct rank_query *q, int m, int out, struct rank_val *v,
                     struct strata_error *err)
{
	const struct rank_cmodel *cm = &q->p->models[m];
	struct rank_qmodel *qm = &q->models[m];
	long c = -1;
	if (q->cand >= 0 && (size_t)q->cand < qm->cache_n && qm->cache_lids[q->cand] == q->lid)
		c = q->cand;
	else if (q->ncand_lookup)
		for (size_t j = 0; j < qm->cache_n; j++)
			if (qm->cache_lids[j] == q->lid && qm->cache_ok[j]) {
				c = (long)j;
				break;
			}
	if (c >= 0 && qm->cache_ok[c]) {
		v->cells = (const char *)qm->cache[out] + (size_t)c * slice_bytes(q, m, out);
		v->cell = q->p->types[cm->out_type[out]].cell;
		v->num = 0;
		return 0;
	}
	if (qm->serial != q->serial) {
		int rc = run_doc(q, m, err);
		if (rc)
			return rc;
		qm->serial = q->serial;
		if (c >= 0)
			cache_store(q, m, (size_t)c);
	}
	v->cells = qm->out[out].data;
	v->cell = qm->out[out].dtype;
	v->num = 0;
	return 0;
}

int rank_model_cache_begin(struct rank_query *q, const uint32_t *lids, size_t n,
                           struct strata_error *err)
{
	for (int m = 0; m < q->p->nmodels; m++) {
		if (q->p->models[m].state != 2)
			continue;
		int rc = cache_reset(q, m, lids, n, err);
		if (rc)
			return rc;
	}
	return 0;
}

int rank_model_batch(struct rank_query *q, int m, const uint32_t *lids, const double *first,
                     size_t n, struct strata_error *err)
{
	const struct rank_profile *p = q->p;
	const struct rank_cmodel *cm = &p->models[m];
	struct rank_qmodel *qm = &q->models[m];
	int rc;
	if (n == 0)
		return 0;
	/* Document inputs first, one candidate at a time (the arena is reset
	 * between them); then the query-side ones, evaluated once, whose values
	 * must stay valid until the run. */
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < cm->nin; i++) {
			const struct rank_prog *src = &cm->src[i];
			if (src->doc_dependent != (pass == 0))
				continue;
			const struct rt_value_info *info = runtime_model_input(cm->rt, i);
			const struct rank_type *st = &p->types[src->result];
			size_t cells = ncells(st), row = cells * base_dtype_size(info->dtype);
			struct rank_val v;
			set_shape(info, st, cm->extra[i], (int64_t)n, &qm->in[i]);
			if (pass == 0) {
				if ((rc = grow(&qm->conv[i], &qm->conv_cap[i], n * row, err)))
					return rc;
				for (size_t j = 0; j < n; j++) {
					base_arena_reset(&q->arena);
					q->lid = lids[j];
					q->first = first ? first[j] : 0.0;
					q->cand = (long)j;
					q->serial++;
					if ((rc = rank_vm_run(q, src, &v, err)))
						return rc;
					convert(st, &v, info->dtype, (char *)qm->conv[i] + j * row, cells);
				}
				qm->in[i].data = qm->conv[i];
			} else {
				if ((rc = rank_vm_run(q, src, &v, err)))
					return rc;
				size_t reps = cm->extra[i] ? n : 1;
				if (reps == 1 && st->rank > 0 && v.cell == info->dtype) {
					qm->in[i].data = (void *)v.cells;
				} else {
					if ((rc = grow(&qm->conv[i], &qm->conv_cap[i], reps * row, err)))
						return rc;
					convert(st, &v, info->dtype, qm->conv[i], cells);
					for (size_t j = 1; j < reps; j++)
						memcpy((char *)qm->conv[i] + j * row, qm->conv[i], row);
					qm->in[i].data = qm->conv[i];
				}
			}
		}
	}
	if ((rc = run(q, m, err)) || (rc = check_outputs(q, m, n, err)))
		return rc;
	for (int o = 0; o < cm->nout; o++)
		memcpy(qm->cache[o], qm->out[o].data, n * slice_bytes(q, m, o));
	memset(qm->cache_ok, 1, n);
	qm->serial = -1;
	return 0;
}

int rank_qmodel_init(struct rank_query *q, int m, struct strata_error *err)
{
	const struct rank_cmodel *cm = &q->p->models[m];
	struct rank_qmodel *qm = &q->models[m];
	memset(qm, 0, sizeof *qm);
	qm->serial = -1;
	if (cm->state != 2)
		return 0;
	size_t ni = (size_t)cm->nin + 1, no = (size_t)cm->nout + 1;
	qm->in = base_calloc(ni, sizeof *qm->in);
	qm->out = base_calloc(no, sizeof *qm->out);
	qm->conv = base_calloc(ni, sizeof *qm->conv);
	qm->conv_cap = base_calloc(ni, sizeof *qm->conv_cap);
	qm->cache = base_calloc(no, sizeof *qm->cache);
	qm->cache_cap = base_calloc(no, sizeof *qm->cache_cap);
	if (!qm->in || !qm->out || !qm->conv || !qm->conv_cap || !qm->cache || !qm->cache_cap)
		return base_nomem(err, "query state of model '%s'", cm->decl->name);
	return runtime_ctx_new(cm->rt, &qm->cx, err);
}

void rank_qmodel_release(struct rank_query *q, int m)
{
	const struct rank_cmodel *cm = &q->p->models[m];
	struct rank_qmodel *qm = &q->models[m];
	size_t ni = (size_t)cm->nin + 1, no = (size_t)cm->nout + 1;
	if (qm->cx)
		runtime_ctx_free(qm->cx);
	/* A failed rank_qmodel_init may leave a buffer table without its
	 * capacities: its buffers are all NULL then. */
	if (qm->conv && qm->conv_cap)
		for (size_t i = 0; i < ni; i++)
			base_free(qm->conv[i], qm->conv_cap[i]);
	if (qm->cache && qm->cache_cap)
		for (size_t o = 0; o < no; o++)
			base_free(qm->cache[o], qm->cache_cap[o]);
	base_free(qm->in, ni * sizeof *qm->in);
	base_free(qm->out, no * sizeof *qm->out);
	base_free(qm->conv, ni * sizeof *qm->conv);
	base_free(qm->conv_cap, ni * sizeof *qm->conv_cap);
	base_free(qm->cache, no * sizeof *qm->cache);
	base_free(qm->cache_cap, no * sizeof *qm->cache_cap);
	base_free(qm->cache_lids, qm->cache_lids_cap * sizeof *qm->cache_lids);
	base_free(qm->cache_ok, qm->cache_lids_cap);
	memset(qm, 0, sizeof *qm);
}

void rank_qmodel_retire(struct rank_query *q, int m)
{
	struct rank_qmodel *qm = &q->models[m];
	if (qm->cx)
		runtime_ctx_free(qm->cx);
	qm->cx = NULL;
}

int rank_qmodel_reuse(struct rank_query *q, int m, struct strata_error *err)
{
	const struct rank_cmodel *cm = &q->p->models[m];
	struct rank_qmodel *qm = &q->models[m];
	if (cm->state != 2)
		return 0;
	qm->serial = -1;
	qm->cache_n = 0;
	return runtime_ctx_new(cm->rt, &qm->cx, err);
}
