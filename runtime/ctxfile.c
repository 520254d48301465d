/*
 * ctxfile.c: the context binary ("<model>_strata.bin"), Strata's own format
 * for models compiled once (constants folded, operators fused, weights
 * packed) and memory-mapped at every later start.
 *
 * Layout, little-endian, offsets from the start of the binary:
 *
 *   header   128 bytes: magic "STRATACX", format version, Strata version,
 *            the instruction set the weights were packed for, the packing
 *            layout version, the binary's size, where the two regions below
 *            lie, the checksum of the meta region, counts, and a checksum
 *            of the header itself.
 *   meta     the section table (one section per compiled graph, named by its
 *            partition), the blob table (offset, size and hash of every
 *            blob), then one graph record per section: values with their
 *            element types and inferred shapes, nodes in run order with
 *            their attributes (subgraphs nested), the packed weights of each
 *            node, inputs and outputs.  Everything the loader interprets
 *            lies here: it is checked (size, checksum) at every load, and
 *            every count, index and length is bounds-checked as it is read.
 *   data     the blobs, each 64-byte aligned so that it is used in place:
 *            constant tensors and packed weight panels.  Identical blobs are
 *            stored once, across all sections (weight sharing).  Their
 *            hashes, in the blob table, are checked when the caller asks
 *            (ep.context_verify_weights=1): that reads every byte, and a
 *            flipped weight cannot crash the runtime, only change results.
 *
 * Strings in meta end with a NUL, so names point into the binary; arrays of
 * 8-byte cells are 8-byte aligned.  A graph record is decoded into a struct
 * rt_graph whose names, attribute arrays and constants point into the
 * binary: decoding allocates in proportion to the node and value counts,
 * never to the weights.
 */
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "ctxfile.h"
#include "kernel.h"

#define CX_MAGIC "STRATACX"
#define CX_FORMAT 1u
#define CX_HEADER 128u
#define CX_ALIGN 64u
#define CX_SEED 0x5354524154414358ull /* "STRATACX" */
#define CX_NOBLOB UINT64_MAX
#define CX_MAX_DEPTH 16

/* ---- a growable byte buffer ------------------------------------------------------------- */

struct cxbuf {
	unsigned char *p;
	size_t n, cap;
	int oom;
};

static void buf_free(struct cxbuf *b)
{
	if (b->p)
		base_free(b->p, b->cap);
	memset(b, 0, sizeof *b);
}

static void put(struct cxbuf *b, const void *s, size_t n)
{
	if (b->oom)
		return;
	if (b->n + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->n + n)
			cap *= 2;
		unsigned char *p = base_realloc(b->p, b->cap, cap);
		if (!p) {
			b->oom = 1;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	if (n)
		memcpy(b->p + b->n, s, n);
	b->n += n;
}

static void put_u32(struct cxbuf *b, uint32_t v) { put(b, &v, 4); }
static void put_i32(struct cxbuf *b, int32_t v) { put(b, &v, 4); }
static void put_u64(struct cxbuf *b, uint64_t v) { put(b, &v, 8); }
static void put_i64(struct cxbuf *b, int64_t v) { put(b, &v, 8); }

static void put_align(struct cxbuf *b, size_t a)
{
	static const unsigned char zero[CX_ALIGN];
	if (b->n % a)
		put(b, zero, a - b->n % a);
}

/* Bytes with a trailing NUL: u32 length, bytes, 0. */
static void put_bytes(struct cxbuf *b, const char *s, size_t n)
{
	put_u32(b, (uint32_t)n);
	put(b, s ? s : "", n);
	put(b, "", 1);
}

static void put_str(struct cxbuf *b, const char *s)
{
	put_bytes(b, s, s ? strlen(s) : 0);
}

/* ---- the writer -------------------------------------------------------------------------- */

struct cxblob {
	uint64_t hash;
	size_t bytes;
	void *data;               /* owned copy */
	uint64_t off;             /* in the data region, set when written */
};

struct cxsect {
	char *name;
	struct cxbuf rec;         /* the graph record */
};

struct rt_cxwriter {
	struct cxblob *blobs;
	size_t nblobs, capblobs;
	struct cxsect *sects;
	size_t nsects, capsects;
	int isa;
	size_t unique_bytes;      /* of blobs stored */
	size_t ref_bytes;         /* of blobs referenced (before sharing) */
};

int rt_cxw_new(struct rt_cxwriter **out, struct strata_error *err)
{
	*out = base_calloc(1, sizeof **out);
	if (!*out)
		return base_nomem(err, "a context");
	(*out)->isa = rt_cpu_isa();
	return 0;
}

void rt_cxw_free(struct rt_cxwriter *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->nblobs; i++)
		base_free(w->blobs[i].data, w->blobs[i].bytes ? w->blobs[i].bytes : 1);
	if (w->blobs)
		base_free(w->blobs, w->capblobs * sizeof *w->blobs);
	for (size_t i = 0; i < w->nsects; i++) {
		base_strfree(w->sects[i].name);
		buf_free(&w->sects[i].rec);
	}
	if (w->sects)
		base_free(w->sects, w->capsects * sizeof *w->sects);
	base_free(w, sizeof *w);
}

/* The index of a blob holding these bytes: an existing identical one, or a
 * new copy.  CX_NOBLOB when out of memory. */
static uint64_t blob_of(struct rt_cxwriter *w, const void *p, size_t n)
{
	uint64_t h = base_hash64(p, n, CX_SEED);
	w->ref_bytes += n;
	for (size_t i = 0; i < w->nblobs; i++)
		if (w->blobs[i].hash == h && w->blobs[i].bytes == n &&
		    memcmp(w->blobs[i].data, p, n) == 0)
			return i;
	if (w->nblobs == w->capblobs) {
		size_t cap = w->capblobs ? 2 * w->capblobs : 64;
		struct cxblob *nb = base_realloc(w->blobs, w->capblobs * sizeof *nb, cap * sizeof *nb);
		if (!nb)
			return CX_NOBLOB;
		w->blobs = nb;
		w->capblobs = cap;
	}
	void *copy = base_alloc(n ? n : 1);
	if (!copy)
		return CX_NOBLOB;
	memcpy(copy, p, n);
	w->blobs[w->nblobs] = (struct cxblob){ h, n, copy, 0 };
	w->unique_bytes += n;
	return w->nblobs++;
}

struct wctx {
	struct rt_cxwriter *w;
	struct cxbuf *b;
	int oom;
};

static void put_blobref(struct wctx *c, const void *p, size_t n)
{
	uint64_t id = p ? blob_of(c->w, p, n) : CX_NOBLOB;
	if (p && id == CX_NOBLOB)
		c->oom = 1;
	put_u64(c->b, id);
}

/* A constant: dtype, rank, dims, then its cells (strings inline, others as
 * a blob; CX_NOBLOB when the model dropped the cells). */
static void put_tensor(struct wctx *c, const struct rt_tensor *t, int keep_data)
{
	put_i32(c->b, t->dtype);
	put_i32(c->b, t->rank);
	for (int d = 0; d < t->rank; d++)
		put_i64(c->b, t->dims[d]);
	int64_t count = runtime_tensor_count(t);
	if (t->dtype == BASE_DT_STRING) {
		int has = keep_data && t->data;
		put_u32(c->b, (uint32_t)has);
		for (int64_t i = 0; has && i < count; i++)
			put_str(c->b, ((char *const *)t->data)[i]);
		return;
	}
	int ok = 1;
	size_t bytes = rt_tensor_bytes(t->dtype, count, &ok);
	put_blobref(c, keep_data && ok ? t->data : NULL, bytes);
}

static void put_shape(struct cxbuf *b, const struct rt_shape *s)
{
	put_i32(b, s->rank);
	for (int d = 0; d < s->rank && d < RT_MAX_RANK; d++) {
		put_i64(b, s->d[d].size);
		put_u32(b, s->d[d].sym != NULL);
		if (s->d[d].sym)
			put_str(b, s->d[d].sym);
		put_i64(b, s->d[d].bound);
	}
}

static void put_info(struct cxbuf *b, const struct rt_value_info *vi)
{
	put_str(b, vi->name);
	put_i32(b, vi->dtype);
	put_i32(b, vi->rank);
	put_i32(b, vi->kind);
	for (int d = 0; d < vi->rank && d < RT_MAX_RANK; d++) {
		put_i64(b, vi->dims[d]);
		put_str(b, vi->dim_names[d] ? vi->dim_names[d] : "");
	}
}

static int put_graph(struct wctx *c, const struct rt_graph *g, int depth);

static void put_attr(struct wctx *c, const struct rt_attr *a, int depth)
{
	struct cxbuf *b = c->b;
	put_str(b, a->name);
	put_i32(b, a->type);
	put_bytes(b, a->s, a->s ? a->slen : 0);
	switch (a->type) {
	case RT_ATTR_FLOAT: put(b, &a->f, 4); break;
	case RT_ATTR_INT: put_i64(b, a->i); break;
	case RT_ATTR_FLOATS:
		put_u64(b, a->n);
		put_align(b, 8);
		put(b, a->floats, a->n * sizeof(float));
		break;
	case RT_ATTR_INTS:
		put_u64(b, a->n);
		put_align(b, 8);
		put(b, a->ints, a->n * sizeof(int64_t));
		break;
	case RT_ATTR_STRINGS:
		put_u64(b, a->n);
		for (size_t i = 0; i < a->n; i++)
			put_str(b, a->strings[i]);
		break;
	case RT_ATTR_TENSOR: put_tensor(c, a->t, 1); break;
	case RT_ATTR_GRAPH:
		if (put_graph(c, a->graph, depth + 1) != 0)
			c->oom = 1;
		break;
	case RT_ATTR_TYPE_PROTO:
		put_i32(b, a->type_kind);
		put_i32(b, a->type_dtype);
		break;
	default: break;
	}
}

/* 1 when value v is read or written by a node that runs, or is a graph
 * input or output: its cells are worth storing. */
static int live(const struct rt_graph *g, int v)
{
	if (g->values[v].is_input || g->values[v].is_output)
		return 1;
	for (int i = 0; i < g->nnodes; i++) {
		const struct rt_node *n = &g->nodes[i];
		if (n->folded)
			continue;
		for (int j = 0; j < n->nin; j++)
			if (n->in[j] == v)
				return 1;
		for (int j = 0; j < n->nimplicit; j++)
			if (n->implicit[j] == v)
				return 1;
	}
	return 0;
}

static int put_graph(struct wctx *c, const struct rt_graph *g, int depth)
{
	struct cxbuf *b = c->b;
	if (depth >= CX_MAX_DEPTH)
		return STRATA_LIMIT;
	/* Folded nodes are gone: their outputs are constants now. */
	int *newidx = base_calloc((size_t)g->nnodes + 1, sizeof *newidx);
	if (!newidx)
		return STRATA_NOMEM;
	int kept = 0;
	for (int i = 0; i < g->nnodes; i++)
		newidx[i] = g->nodes[i].folded ? -1 : kept++;

	put_u32(b, (uint32_t)g->nvalues);
	put_u32(b, (uint32_t)kept);
	put_u32(b, (uint32_t)g->ninputs);
	put_u32(b, (uint32_t)g->noutputs);
	for (int v = 0; v < g->nvalues; v++) {
		const struct rt_value *val = &g->values[v];
		put_str(b, val->name);
		put_i32(b, val->dtype);
		put_i32(b, val->kind);
		put_i32(b, val->is_input);
		put_i32(b, val->is_output);
		put_i32(b, val->producer >= 0 ? newidx[val->producer] : -1);
		put_i32(b, val->outer);
		put_shape(b, &val->shape);
		put_u32(b, val->konst != NULL);
		if (val->konst)
			put_tensor(c, val->konst, live(g, v));
	}
	for (int i = 0; i < g->nnodes; i++) {
		const struct rt_node *n = &g->nodes[i];
		if (n->folded)
			continue;
		put_str(b, n->name);
		put_str(b, n->op);
		put_str(b, n->domain);
		put_i32(b, n->opset);
		put_i32(b, n->nin);
		put_i32(b, n->nout);
		put_i32(b, n->nimplicit);
		for (int j = 0; j < n->nin; j++)
			put_i32(b, n->in[j]);
		for (int j = 0; j < n->nout; j++)
			put_i32(b, n->out[j]);
		for (int j = 0; j < n->nimplicit; j++)
			put_i32(b, n->implicit[j]);
		put_u32(b, (uint32_t)n->nattr);
		for (int a = 0; a < n->nattr; a++)
			put_attr(c, &n->attr[a], depth);
		put_u32(b, (uint32_t)n->npacks);
		for (int p = 0; p < n->npacks; p++) {
			const struct rt_packed_b *pb = n->packs[p];
			put_i64(b, pb->K);
			put_i64(b, pb->N);
			put_i32(b, pb->version);
			put_i32(b, pb->isa);
			put_i32(b, pb->nr);
			put_i32(b, pb->kc);
			put_u64(b, pb->bytes);
			put_blobref(c, pb->data, pb->bytes);
		}
	}
	for (int k = 0; k < g->ninputs; k++) {
		put_i32(b, g->inputs[k]);
		put_info(b, &g->input_info[k]);
	}
	for (int k = 0; k < g->noutputs; k++) {
		put_i32(b, g->outputs[k]);
		put_info(b, &g->output_info[k]);
	}
	base_free(newidx, ((size_t)g->nnodes + 1) * sizeof *newidx);
	return 0;
}

int rt_cxw_add(struct rt_cxwriter *w, const struct rt_model *m, const char *name,
               struct strata_error *err)
{
	for (size_t i = 0; i < w->nsects; i++)
		if (strcmp(w->sects[i].name, name) == 0)
			return base_err(err, STRATA_INVALID_ARGUMENT,
			                "the context already holds a graph called \"%s\" (set "
			                "ep.context_node_name_prefix to tell them apart)",
			                name);
	if (m->g.nnodes == 0 && m->g.noutputs == 0)
		return base_err(err, STRATA_INVALID_GRAPH, "the model has an empty graph");
	if (w->nsects == w->capsects) {
		size_t cap = w->capsects ? 2 * w->capsects : 4;
		struct cxsect *ns = base_realloc(w->sects, w->capsects * sizeof *ns, cap * sizeof *ns);
		if (!ns)
			return base_nomem(err, "a context");
		w->sects = ns;
		w->capsects = cap;
	}
	struct cxsect *s = &w->sects[w->nsects];
	memset(s, 0, sizeof *s);
	s->name = base_strdup(name);
	if (!s->name)
		return base_nomem(err, "a context");
	struct wctx c = { w, &s->rec, 0 };
	put_i64(&s->rec, m->ir_version);
	put_i32(&s->rec, m->opset);
	int rc = put_graph(&c, &m->g, 0);
	if (rc == 0 && (c.oom || s->rec.oom))
		rc = STRATA_NOMEM;
	if (rc != 0) {
		base_strfree(s->name);
		buf_free(&s->rec);
		return rc == STRATA_LIMIT ? base_err(err, rc, "subgraphs nest too deep for a context")
		                          : base_nomem(err, "a context");
	}
	w->nsects++;
	return 0;
}

size_t rt_cxw_unique_bytes(const struct rt_cxwriter *w)
{
	return w->unique_bytes;
}

size_t rt_cxw_ref_bytes(const struct rt_cxwriter *w)
{
	return w->ref_bytes;
}

/* Where the serialized binary goes: a file or a growing buffer. */
struct sink {
	FILE *f;
	struct cxbuf *b;
	int fail;
};

static void emit(struct sink *s, const void *p, size_t n)
{
	if (s->fail || !n)
		return;
	if (s->f)
		s->fail = fwrite(p, 1, n, s->f) != n;
	else {
		put(s->b, p, n);
		s->fail = s->b->oom;
	}
}

static void emit_pad(struct sink *s, uint64_t *at)
{
	static const unsigned char zero[CX_ALIGN];
	if (*at % CX_ALIGN) {
		size_t k = CX_ALIGN - *at % CX_ALIGN;
		emit(s, zero, k);
		*at += k;
	}
}

static void le32(unsigned char *p, uint32_t v) { memcpy(p, &v, 4); }
static void le64(unsigned char *p, uint64_t v) { memcpy(p, &v, 8); }

static int serialize(struct rt_cxwriter *w, struct sink *out, struct strata_error *err)
{
	/* meta: section table, blob table, records */
	struct cxbuf meta = { 0 };
	size_t table = 0;
	for (size_t i = 0; i < w->nsects; i++)
		table += 4 + strlen(w->sects[i].name) + 1 + 16;
	uint64_t data_at = 0;
	for (size_t i = 0; i < w->nblobs; i++) {
		w->blobs[i].off = data_at;
		data_at += (w->blobs[i].bytes + CX_ALIGN - 1) / CX_ALIGN * CX_ALIGN;
	}
	uint64_t rec_at = table + 24 * w->nblobs;
	rec_at = (rec_at + 7) / 8 * 8;
	for (size_t i = 0; i < w->nsects; i++) {
		put_str(&meta, w->sects[i].name);
		put_u64(&meta, rec_at);
		put_u64(&meta, w->sects[i].rec.n);
		rec_at += (w->sects[i].rec.n + 7) / 8 * 8;
	}
	for (size_t i = 0; i < w->nblobs; i++) {
		put_u64(&meta, w->blobs[i].off);
		put_u64(&meta, w->blobs[i].bytes);
		put_u64(&meta, w->blobs[i].hash);
	}
	for (size_t i = 0; i < w->nsects; i++) {
		put_align(&meta, 8);
		put(&meta, w->sects[i].rec.p, w->sects[i].rec.n);
	}
	put_align(&meta, CX_ALIGN);
	if (meta.oom) {
		buf_free(&meta);
		return base_nomem(err, "writing a context");
	}
	unsigned char h[CX_HEADER] = { 0 };
	memcpy(h, CX_MAGIC, 8);
	le32(h + 8, CX_FORMAT);
	le32(h + 12, CX_HEADER);
	strncpy((char *)h + 16, STRATA_VERSION, 15);
	le32(h + 32, (uint32_t)w->isa);
	le32(h + 36, (uint32_t)rt_packed_b_layout());
	le64(h + 40, CX_HEADER + meta.n + data_at);
	le64(h + 48, CX_HEADER);
	le64(h + 56, meta.n);
	le64(h + 64, CX_HEADER + meta.n);
	le64(h + 72, data_at);
	le64(h + 80, base_hash64(meta.p, meta.n, CX_SEED));
	le32(h + 96, (uint32_t)w->nsects);
	le32(h + 100, (uint32_t)w->nblobs);
	le64(h + 120, base_hash64(h, 120, CX_SEED));
	emit(out, h, sizeof h);
	emit(out, meta.p, meta.n);
	buf_free(&meta);
	uint64_t at = 0;
	for (size_t i = 0; i < w->nblobs; i++) {
		emit(out, w->blobs[i].data, w->blobs[i].bytes);
		at += w->blobs[i].bytes;
		emit_pad(out, &at);
	}
	return 0;
}

int rt_cxw_bytes(struct rt_cxwriter *w, unsigned char **out, size_t *n, size_t *cap,
                 struct strata_error *err)
{
	struct cxbuf b = { 0 };
	struct sink s = { NULL, &b, 0 };
	int rc = serialize(w, &s, err);
	if (rc == 0 && s.fail)
		rc = base_nomem(err, "writing a context");
	if (rc != 0) {
		buf_free(&b);
		return rc;
	}
	*out = b.p;
	*n = b.n;
	*cap = b.cap;
	return 0;
}

int rt_cxw_write(struct rt_cxwriter *w, const char *path, struct strata_error *err)
{
	size_t len = strlen(path);
	char *tmp = base_alloc(len + 5);
	if (!tmp)
		return base_nomem(err, "writing a context");
	memcpy(tmp, path, len);
	memcpy(tmp + len, ".tmp", 5);
	FILE *f = fopen(tmp, "wb");
	int rc = 0;
	if (!f) {
		rc = base_err(err, errno, "%s: cannot create: %s", tmp, strerror(errno));
	} else {
		struct sink s = { f, NULL, 0 };
		rc = serialize(w, &s, err);
		int werr = s.fail ? errno : 0;
		if (fclose(f) != 0 && !werr)
			werr = errno;
		if (rc == 0 && werr)
			rc = base_err(err, werr ? werr : EIO, "%s: cannot write: %s", tmp,
			              strerror(werr ? werr : EIO));
		if (rc == 0 && rename(tmp, path) != 0)
			rc = base_err(err, errno, "%s: cannot rename to %s: %s", tmp, path,
			              strerror(errno));
		if (rc != 0)
			remove(tmp);
	}
	base_free(tmp, len + 5);
	return rc;
}

/* ---- the reader -------------------------------------------------------------------------- */

static uint32_t rd32(const unsigned char *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t rd64(const unsigned char *p) { uint64_t v; memcpy(&v, p, 8); return v; }

static int corrupt(struct strata_error *err, const char *what)
{
	return base_err(err, STRATA_INVALID_GRAPH, "context binary is corrupted (%s)", what);
}

int rt_cx_open(const void *data, size_t n, int verify, struct rt_cxfile *cf,
               struct strata_error *err)
{
	const unsigned char *p = data;
	memset(cf, 0, sizeof *cf);
	if (n < 8 || memcmp(p, CX_MAGIC, 8) != 0)
		return base_err(err, STRATA_INVALID_GRAPH,
		                "not a Strata context binary (no STRATACX header)");
	if (n < CX_HEADER)
		return base_err(err, STRATA_INVALID_GRAPH,
		                "context binary is truncated (%zu bytes, the header alone takes %u)", n,
		                CX_HEADER);
	if (rd64(p + 120) != base_hash64(p, 120, CX_SEED))
		return corrupt(err, "header checksum mismatch");
	uint32_t format = rd32(p + 8);
	if (format != CX_FORMAT)
		return base_err(err, STRATA_INVALID_GRAPH,
		                "context binary has format version %u, this Strata reads version %u "
		                "(compile the model again)",
		                format, CX_FORMAT);
	char ver[17] = { 0 };
	memcpy(ver, p + 16, 16);
	if (strcmp(ver, STRATA_VERSION) != 0)
		return base_err(err, STRATA_INVALID_GRAPH,
		                "context binary was compiled by Strata %s, this is Strata %s (compile "
		                "the model again)",
		                ver, STRATA_VERSION);
	uint32_t isa = rd32(p + 32), layout = rd32(p + 36);
	if (isa != RT_ISA_AVX2 && isa != RT_ISA_AVX512)
		return corrupt(err, "unknown instruction set");
	if (isa == RT_ISA_AVX512 && rt_cpu_isa() != RT_ISA_AVX512)
		return base_err(err, STRATA_INVALID_GRAPH,
		                "context binary was compiled for AVX-512 kernels, and this process "
		                "runs the %s kernels (%s); compile the model again on this machine",
		                rt_cpu_isa_name(rt_cpu_isa()),
		                rt_cpu_best() == RT_ISA_AVX512 ? "STRATA_CPU asks for them"
		                                               : "the CPU lacks AVX-512");
	if ((int)layout != rt_packed_b_layout())
		return base_err(err, STRATA_INVALID_GRAPH,
		                "context binary packs weights in layout %u, this Strata uses %d "
		                "(compile the model again)",
		                layout, rt_packed_b_layout());
	uint64_t size = rd64(p + 40), moff = rd64(p + 48), mlen = rd64(p + 56);
	uint64_t doff = rd64(p + 64), dlen = rd64(p + 72);
	if (size != n) {
		if (n < size)
			return base_err(err, STRATA_INVALID_GRAPH,
			                "context binary is truncated (%zu bytes of %llu)", n,
			                (unsigned long long)size);
		return corrupt(err, "longer than its header says");
	}
	if (moff != CX_HEADER || mlen > n - moff || doff != moff + mlen || dlen != n - doff ||
	    doff % CX_ALIGN)
		return corrupt(err, "region bounds");
	if (rd64(p + 80) != base_hash64(p + moff, mlen, CX_SEED))
		return corrupt(err, "checksum mismatch in the graph records");
	cf->base = p;
	cf->size = n;
	cf->meta = p + moff;
	cf->meta_bytes = mlen;
	cf->data = p + doff;
	cf->data_bytes = dlen;
	cf->isa = (int)isa;
	cf->nsections = rd32(p + 96);
	cf->nblobs = rd32(p + 100);
	/* the tables */
	struct rt_cxcur c = { cf->meta, mlen, 0, 0 };
	if (cf->nsections == 0 || cf->nsections > mlen / 20 || cf->nblobs > mlen / 24)
		return corrupt(err, "table sizes");
	for (uint32_t i = 0; i < cf->nsections; i++) {
		(void)rt_cx_str(&c, NULL);
		(void)rt_cx_u64(&c);
		(void)rt_cx_u64(&c);
	}
	cf->blobtab = c.i;
	for (uint32_t i = 0; i < cf->nblobs; i++) {
		uint64_t off = rt_cx_u64(&c), bytes = rt_cx_u64(&c), hash = rt_cx_u64(&c);
		if (c.bad || off % CX_ALIGN || off > dlen || bytes > dlen - off)
			return corrupt(err, "blob table");
		if (verify && base_hash64(cf->data + off, bytes, CX_SEED) != hash)
			return base_err(err, STRATA_INVALID_GRAPH,
			                "context binary is corrupted (weights: blob %u of %u, %llu bytes at "
			                "offset %llu, fails its checksum)",
			                i, cf->nblobs, (unsigned long long)bytes,
			                (unsigned long long)(doff + off));
	}
	if (c.bad)
		return corrupt(err, "section table");
	return 0;
}

/* Section i: its name, and where its record lies. */
static int section(const struct rt_cxfile *cf, uint32_t i, const char **name, uint64_t *off,
                   uint64_t *bytes)
{
	struct rt_cxcur c = { cf->meta, cf->meta_bytes, 0, 0 };
	for (uint32_t k = 0; k <= i; k++) {
		*name = rt_cx_str(&c, NULL);
		*off = rt_cx_u64(&c);
		*bytes = rt_cx_u64(&c);
	}
	return c.bad || *off > cf->meta_bytes || *bytes > cf->meta_bytes - *off ? -1 : 0;
}

int rt_cx_find(const struct rt_cxfile *cf, const char *name)
{
	for (uint32_t i = 0; i < cf->nsections; i++) {
		const char *s;
		uint64_t off, bytes;
		if (section(cf, i, &s, &off, &bytes) == 0 && strcmp(s, name) == 0)
			return (int)i;
	}
	return -1;
}

const char *rt_cx_section_name(const struct rt_cxfile *cf, int i)
{
	const char *s;
	uint64_t off, bytes;
	return i >= 0 && (uint32_t)i < cf->nsections && section(cf, (uint32_t)i, &s, &off, &bytes) == 0
	               ? s
	               : NULL;
}

/* ---- cursor reads (bounds-checked; a bad read sets c->bad and yields 0) ------------------- */

static const unsigned char *take(struct rt_cxcur *c, size_t n)
{
	if (c->bad || n > c->n - c->i) {
		c->bad = 1;
		return NULL;
	}
	const unsigned char *p = c->p + c->i;
	c->i += n;
	return p;
}

uint32_t rt_cx_u32(struct rt_cxcur *c)
{
	const unsigned char *p = take(c, 4);
	return p ? rd32(p) : 0;
}

uint64_t rt_cx_u64(struct rt_cxcur *c)
{
	const unsigned char *p = take(c, 8);
	return p ? rd64(p) : 0;
}

static int32_t get_i32(struct rt_cxcur *c) { return (int32_t)rt_cx_u32(c); }
static int64_t get_i64(struct rt_cxcur *c) { return (int64_t)rt_cx_u64(c); }

const char *rt_cx_str(struct rt_cxcur *c, size_t *len)
{
	uint32_t n = rt_cx_u32(c);
	const unsigned char *p = take(c, (size_t)n + 1);
	if (!p || p[n] != 0) {
		c->bad = 1;
		if (len)
			*len = 0;
		return "";
	}
	if (len)
		*len = n;
	return (const char *)p;
}

static const void *get_array(struct rt_cxcur *c, uint64_t count, size_t cell)
{
	if (c->i % 8)
		take(c, 8 - c->i % 8);
	if (count > (c->n - (c->i < c->n ? c->i : c->n)) / cell) {
		c->bad = 1;
		return NULL;
	}
	return take(c, (size_t)count * cell);
}

/* ---- decoding a graph record -------------------------------------------------------------- */

struct rctx {
	struct rt_model *m;
	const struct rt_cxfile *cf;
	struct rt_cxcur *c;
	struct strata_error *err;
	int rc;                  /* first error (besides c->bad) */
};

static void *ralloc(struct rctx *r, size_t n)
{
	void *p = rt_blocks_alloc(&r->m->mem, n ? n : 1);
	if (!p && !r->rc)
		r->rc = base_nomem(r->err, "loading a context");
	return p;
}

static int rank_ok(int32_t r) { return r >= 0 && r <= RT_MAX_RANK; }

static int get_blob(struct rctx *r, size_t want, const void **data)
{
	uint64_t id = rt_cx_u64(r->c);
	*data = NULL;
	if (id == CX_NOBLOB)
		return 0;
	if (id >= r->cf->nblobs)
		return -1;
	const unsigned char *e = r->cf->meta + r->cf->blobtab + id * 24;
	uint64_t off = rd64(e), bytes = rd64(e + 8);
	if (bytes != want)
		return -1;
	*data = r->cf->data + off;
	return 0;
}

static struct rt_tensor *get_tensor(struct rctx *r)
{
	struct rt_cxcur *c = r->c;
	struct rt_tensor *t = ralloc(r, sizeof *t);
	if (!t)
		return NULL;
	t->dtype = get_i32(c);
	t->rank = get_i32(c);
	if (!rank_ok(t->rank)) {
		c->bad = 1;
		return NULL;
	}
	for (int d = 0; d < t->rank; d++)
		if ((t->dims[d] = get_i64(c)) < 0)
			c->bad = 1;
	int ok = 1;
	int64_t count = rt_cells(t->rank, t->dims, (int64_t)1 << 48);
	size_t bytes = count < 0 ? 0 : rt_tensor_bytes(t->dtype, count, &ok);
	if (c->bad || count < 0 || !ok)
		return c->bad = 1, NULL;
	if (t->dtype == BASE_DT_STRING) {
		if (rt_cx_u32(c)) {
			if ((uint64_t)count > c->n / 5)
				return c->bad = 1, NULL;
			char **s = ralloc(r, (size_t)count * sizeof *s);
			for (int64_t i = 0; s && i < count; i++)
				s[i] = (char *)rt_cx_str(c, NULL);
			t->data = s;
		}
		return t;
	}
	const void *data;
	if (get_blob(r, bytes, &data) != 0)
		return c->bad = 1, NULL;
	t->data = (void *)data;
	return t;
}

static void get_shape(struct rt_cxcur *c, struct rt_shape *s)
{
	s->rank = get_i32(c);
	if (s->rank < -1 || s->rank > RT_MAX_RANK) {
		c->bad = 1;
		s->rank = -1;
		return;
	}
	for (int d = 0; d < s->rank; d++) {
		s->d[d].size = get_i64(c);
		s->d[d].sym = rt_cx_u32(c) ? rt_cx_str(c, NULL) : NULL;
		s->d[d].bound = get_i64(c);
	}
}

static void get_info(struct rt_cxcur *c, struct rt_value_info *vi)
{
	vi->name = rt_cx_str(c, NULL);
	vi->dtype = get_i32(c);
	vi->rank = get_i32(c);
	vi->kind = get_i32(c);
	if (vi->rank < -1 || vi->rank > RT_MAX_RANK) {
		c->bad = 1;
		vi->rank = -1;
	}
	for (int d = 0; d < vi->rank; d++) {
		vi->dims[d] = get_i64(c);
		vi->dim_names[d] = rt_cx_str(c, NULL);
	}
}

static int get_graph(struct rctx *r, struct rt_graph *g, int depth);

static int index_ok(int32_t v, int n) { return v >= -1 && v < n; }

static void get_attr(struct rctx *r, struct rt_graph *g, struct rt_attr *a, int depth)
{
	struct rt_cxcur *c = r->c;
	a->name = rt_cx_str(c, NULL);
	a->type = get_i32(c);
	a->s = rt_cx_str(c, &a->slen);
	switch (a->type) {
	case RT_ATTR_FLOAT: {
		uint32_t u = rt_cx_u32(c);
		memcpy(&a->f, &u, 4);
		break;
	}
	case RT_ATTR_INT: a->i = get_i64(c); break;
	case RT_ATTR_FLOATS:
		a->n = rt_cx_u64(c);
		a->floats = get_array(c, a->n, sizeof(float));
		break;
	case RT_ATTR_INTS:
		a->n = rt_cx_u64(c);
		a->ints = get_array(c, a->n, sizeof(int64_t));
		break;
	case RT_ATTR_STRINGS: {
		a->n = rt_cx_u64(c);
		if (a->n > c->n / 5) {
			c->bad = 1;
			break;
		}
		const char **s = ralloc(r, a->n * sizeof *s);
		for (size_t i = 0; s && i < a->n; i++)
			s[i] = rt_cx_str(c, NULL);
		a->strings = (const char *const *)s;
		break;
	}
	case RT_ATTR_TENSOR: a->t = get_tensor(r); break;
	case RT_ATTR_GRAPH: {
		struct rt_graph *sg = ralloc(r, sizeof *sg);
		if (!sg)
			break;
		sg->parent = g;
		sg->model = r->m;
		if (get_graph(r, sg, depth + 1) == 0)
			a->graph = sg;
		for (int v = 0; v < sg->nvalues; v++)
			if (!index_ok(sg->values[v].outer, g->nvalues))
				c->bad = 1;
		break;
	}
	case RT_ATTR_TYPE_PROTO:
		a->type_kind = get_i32(c);
		a->type_dtype = get_i32(c);
		break;
	default: break;
	}
}

static int get_ints(struct rctx *r, int **out, int n, int nvalues)
{
	*out = ralloc(r, (size_t)n * sizeof **out);
	for (int j = 0; *out && j < n; j++)
		if (!index_ok((*out)[j] = get_i32(r->c), nvalues))
			r->c->bad = 1;
	return *out ? 0 : -1;
}

static int get_graph(struct rctx *r, struct rt_graph *g, int depth)
{
	struct rt_cxcur *c = r->c;
	if (depth >= CX_MAX_DEPTH)
		return c->bad = 1, -1;
	uint32_t nv = rt_cx_u32(c), nn = rt_cx_u32(c), ni = rt_cx_u32(c), no = rt_cx_u32(c);
	/* every value, node, input and output takes at least 8 bytes */
	if (c->bad || (uint64_t)nv + nn + ni + no > (c->n - c->i) / 8 || ni > nv || no > nv)
		return c->bad = 1, -1;
	g->nvalues = (int)nv;
	g->nnodes = (int)nn;
	g->ninputs = (int)ni;
	g->noutputs = (int)no;
	g->values = ralloc(r, nv * sizeof *g->values);
	g->nodes = ralloc(r, nn * sizeof *g->nodes);
	g->inputs = ralloc(r, ni * sizeof *g->inputs);
	g->outputs = ralloc(r, no * sizeof *g->outputs);
	g->input_info = ralloc(r, ni * sizeof *g->input_info);
	g->output_info = ralloc(r, no * sizeof *g->output_info);
	if (r->rc)
		return -1;
	for (uint32_t v = 0; v < nv && !c->bad; v++) {
		struct rt_value *val = &g->values[v];
		val->name = (char *)rt_cx_str(c, NULL);
		val->dtype = get_i32(c);
		val->kind = get_i32(c);
		val->is_input = get_i32(c);
		val->is_output = get_i32(c);
		val->producer = get_i32(c);
		val->outer = get_i32(c);
		val->last_use = -1;
		val->content.rank = -1;
		get_shape(c, &val->shape);
		if (val->is_input < 0 || val->is_input > (int)ni || val->is_output < 0 ||
		    val->is_output > (int)no || !index_ok(val->producer, (int)nn) ||
		    val->kind < RT_KIND_TENSOR || val->kind > RT_KIND_OPTIONAL_SEQUENCE)
			c->bad = 1;
		if (rt_cx_u32(c))
			val->konst = get_tensor(r);
		if (r->rc)
			return -1;
	}
	for (uint32_t i = 0; i < nn && !c->bad; i++) {
		struct rt_node *n = &g->nodes[i];
		n->name = (char *)rt_cx_str(c, NULL);
		n->op = (char *)rt_cx_str(c, NULL);
		n->domain = (char *)rt_cx_str(c, NULL);
		n->opset = get_i32(c);
		n->nin = get_i32(c);
		n->nout = get_i32(c);
		n->nimplicit = get_i32(c);
		if (n->nin < 0 || n->nout < 0 || n->nimplicit < 0 ||
		    (uint64_t)n->nin + (uint64_t)n->nout + (uint64_t)n->nimplicit > (c->n - c->i) / 4)
			return c->bad = 1, -1;
		if (get_ints(r, &n->in, n->nin, (int)nv) || get_ints(r, &n->out, n->nout, (int)nv) ||
		    get_ints(r, &n->implicit, n->nimplicit, (int)nv))
			return -1;
		uint32_t na = rt_cx_u32(c);
		if (na > (c->n - c->i) / 8)
			return c->bad = 1, -1;
		n->nattr = (int)na;
		n->attr = ralloc(r, na * sizeof *n->attr);
		for (uint32_t a = 0; n->attr && a < na && !c->bad; a++)
			get_attr(r, g, &n->attr[a], depth);
		uint32_t np = rt_cx_u32(c);
		if (np > RT_NODE_PACKS)
			return c->bad = 1, -1;
		struct rt_packed_b *pre = np ? ralloc(r, np * sizeof *pre) : NULL;
		for (uint32_t p = 0; pre && p < np; p++) {
			pre[p].K = get_i64(c);
			pre[p].N = get_i64(c);
			pre[p].version = get_i32(c);
			pre[p].isa = get_i32(c);
			pre[p].nr = get_i32(c);
			pre[p].kc = get_i32(c);
			pre[p].bytes = rt_cx_u64(c);
			const void *data;
			if (get_blob(r, pre[p].bytes, &data) != 0 || !data)
				c->bad = 1;
			pre[p].data = (float *)data;
			pre[p].owned = 0;
		}
		if (np) {
			n->pre = pre;
			n->npre = (int)np;
		}
		if (r->rc)
			return -1;
	}
	for (uint32_t k = 0; k < ni && !c->bad; k++) {
		g->inputs[k] = get_i32(c);
		get_info(c, &g->input_info[k]);
		if (g->inputs[k] < 0 || g->inputs[k] >= (int)nv)
			c->bad = 1;
	}
	for (uint32_t k = 0; k < no && !c->bad; k++) {
		g->outputs[k] = get_i32(c);
		get_info(c, &g->output_info[k]);
		if (g->outputs[k] < 0 || g->outputs[k] >= (int)nv)
			c->bad = 1;
	}
	/* what the run relies on: producers write what they claim */
	for (uint32_t v = 0; v < nv && !c->bad; v++) {
		int p = g->values[v].producer, writes = 0;
		for (int j = 0; p >= 0 && j < g->nodes[p].nout; j++)
			writes |= g->nodes[p].out[j] == (int)v;
		if (p >= 0 && !writes)
			c->bad = 1;
	}
	return c->bad || r->rc ? -1 : 0;
}

int rt_cx_graph(struct rt_model *m, const struct rt_cxfile *cf, int s, struct rt_graph *g,
                struct strata_error *err)
{
	const char *name;
	uint64_t off, bytes;
	if (s < 0 || (uint32_t)s >= cf->nsections || section(cf, (uint32_t)s, &name, &off, &bytes))
		return corrupt(err, "section table");
	struct rt_cxcur c = { cf->meta + off, bytes, 0, 0 };
	struct rctx r = { m, cf, &c, err, 0 };
	m->ir_version = get_i64(&c);
	m->opset = get_i32(&c);
	g->model = m;
	if (get_graph(&r, g, 0) != 0 || c.i != c.n) {
		if (r.rc)
			return r.rc;
		return base_err(err, STRATA_INVALID_GRAPH,
		                "context binary is corrupted (graph \"%s\" does not decode)", name);
	}
	return 0;
}
