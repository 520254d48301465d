/*
 * load.c: turn the bytes of an .onnx file into a struct rt_graph.
 *
 * This is the first step of the runtime's data flow: protobuf-c decodes the
 * ModelProto (with an allocator that goes through base_alloc), then the
 * decoded messages are copied into graph structures owned by the model's
 * block set (struct rt_blocks), and the decoded message is freed.  graph.c
 * takes over from rt_graph_resolve().
 *
 * Invariants once a load succeeds:
 *  - every value has one producer: a graph input, a constant (initializer or
 *    Constant node, folded here so no kernel is needed) or one node output;
 *  - every node input names a value or is -1 (an omitted optional input);
 *  - every constant's cells are dense, little-endian and match its dims;
 *  - the node domain "ai.onnx" is stored as "".
 * Malformed input of any kind ends in STRATA_INVALID_PROTOBUF (not a readable
 * protobuf, no graph) or STRATA_INVALID_GRAPH (a readable protobuf that does
 * not describe a runnable graph), never in a crash.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/mman.h>

#include <protobuf-c/protobuf-c.h>

#include "onnx.pb-c.h"
#include "runtime_int.h"

/* Largest tensor the loader accepts, in cells; far beyond any real model but
 * small enough that byte counts never overflow. */
#define MAX_CELLS RT_MAX_CELLS

/* ---- memory ------------------------------------------------------------------ */

/* ud points to a flag set when an allocation fails, so that a failed decode
 * can be told apart from a malformed input. */
static void *pb_alloc(void *ud, size_t n)
{
	void *p = rt_hdr_alloc(n);
	if (!p && ud)
		*(int *)ud = 1;
	return p;
}

static void pb_free(void *ud, void *p)
{
	(void)ud;
	rt_hdr_free(p);
}


static char *bstrdup(struct rt_blocks *bl, const char *s)
{
	if (!s)
		s = "";
	return rt_blocks_strndup(bl, s, strlen(s));
}

/* ---- the loader ------------------------------------------------------------------ */

/* A raw_data payload left in the source bytes (see strip_raw). */
struct span {
	size_t off, len;
	int used;
};

struct loader {
	struct rt_blocks *mem;
	struct rt_model *m;      /* NULL when decoding a lone tensor */
	const char *dir;         /* external data folder, or NULL */
	const unsigned char *src; /* the model's bytes, when spans point into them */
	struct span *spans;
	size_t nspans;
	int mapped;              /* src is a private file mapping: pages may be dropped */
};

/* The tag standing for a stripped raw_data: an unknown field to the decoder
 * (kept in unknown_fields), 8 bytes holding the span index. */
#define SPAN_FIELD 536870000u

static int supported_dtype(int dt)
{
	switch (dt) {
	case BASE_DT_FLOAT: case BASE_DT_UINT8: case BASE_DT_INT8: case BASE_DT_UINT16:
	case BASE_DT_INT16: case BASE_DT_INT32: case BASE_DT_INT64: case BASE_DT_STRING:
	case BASE_DT_BOOL: case BASE_DT_FLOAT16: case BASE_DT_DOUBLE: case BASE_DT_UINT32:
	case BASE_DT_UINT64: case BASE_DT_BFLOAT16:
		return 1;
	default:
		return 0;
	}
}

/* Find or map the external data file called loc. */
static int ext_file(struct loader *L, const char *loc, const char *what,
                    const struct base_map **out, struct strata_error *err)
{
	struct rt_model *m = L->m;
	if (!m || !L->dir)
		return base_err(err, STRATA_INVALID_GRAPH,
		                "tensor \"%s\" has external data but the model has no folder to find it in",
		                what);
	/* A model may only reach files below its own folder. */
	if (loc[0] == '/' || strcmp(loc, "..") == 0 || strncmp(loc, "../", 3) == 0 ||
	    strstr(loc, "/../") || (strlen(loc) >= 3 && strcmp(loc + strlen(loc) - 3, "/..") == 0))
		return base_err(err, STRATA_INVALID_GRAPH,
		                "tensor \"%s\": external data location \"%s\" leaves the model's folder",
		                what, loc);
	for (size_t i = 0; i < m->next; i++)
		if (strcmp(m->ext[i].location, loc) == 0) {
			*out = &m->ext[i].map;
			return 0;
		}
	if (m->next == m->capext &&
	    base_grow((void **)&m->ext, &m->capext, m->next + 1, sizeof *m->ext, 1 << 20) != 0)
		return base_nomem(err, "loading the model");
	struct rt_extfile *f = &m->ext[m->next];
	memset(f, 0, sizeof *f);
	f->location = bstrdup(L->mem, loc);
	char *path = base_path_join(L->dir, loc);
	if (!f->location || !path) {
		base_strfree(path);
		return base_nomem(err, "loading the model");
	}
	int rc = base_map_file(path, &f->map, err);
	base_strfree(path);
	if (rc != 0)
		return base_err_prefix(err, rc, "tensor \"%s\": external data", what);
	m->next++;
	*out = &f->map;
	return 0;
}

static int parse_u64(const char *s, uint64_t *v)
{
	if (!s || !*s)
		return -1;
	uint64_t x = 0;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || x > (UINT64_MAX - 9) / 10)
			return -1;
		x = x * 10 + (uint64_t)(*s - '0');
	}
	*v = x;
	return 0;
}

static int external_data(struct loader *L, const Onnx__TensorProto *tp, struct rt_tensor *t,
                         size_t bytes, const char *what, struct strata_error *err)
{
	const char *loc = NULL;
	uint64_t off = 0, len = UINT64_MAX;
	for (size_t i = 0; i < tp->n_external_data; i++) {
		const char *k = tp->external_data[i]->key ? tp->external_data[i]->key : "";
		const char *v = tp->external_data[i]->value;
		if (strcmp(k, "location") == 0)
			loc = v;
		else if (strcmp(k, "offset") == 0 && parse_u64(v, &off) != 0)
			return base_err(err, STRATA_INVALID_GRAPH,
			                "tensor \"%s\": bad external data offset", what);
		else if (strcmp(k, "length") == 0 && parse_u64(v, &len) != 0)
			return base_err(err, STRATA_INVALID_GRAPH,
			                "tensor \"%s\": bad external data length", what);
	}
	if (t->dtype == BASE_DT_STRING)
		return base_err(err, STRATA_INVALID_GRAPH,
		                "tensor \"%s\": string tensors cannot use external data", what);
	if (!loc || !*loc)
		return base_err(err, STRATA_INVALID_GRAPH,
		                "tensor \"%s\": external data without a location", what);
	if (len != UINT64_MAX && len != bytes)
		return base_err(err, STRATA_INVALID_GRAPH,
		                "tensor \"%s\": external data length %llu, but its shape needs %zu bytes",
		                what, (unsigned long long)len, bytes);
	const struct base_map *map = NULL;
	int rc = ext_file(L, loc, what, &map, err);
	if (rc != 0)
		return rc;
	if (off > map->size || bytes > map->size - off)
		return base_err(err, STRATA_INVALID_GRAPH,
		                "tensor \"%s\": external data [%llu, +%zu) lies beyond the end of \"%s\" (%zu bytes)",
		                what, (unsigned long long)off, bytes, loc, map->size);
	const char *p = (const char *)map->data + off;
	size_t es = base_dtype_size(t->dtype);
	if (bytes > 0 && ((uintptr_t)p % es) == 0) {
		/* Aligned: read the cells straight from the map, never copied. */
		t->data = (void *)p;
		return 0;
	}
	t->data = rt_blocks_alloc(L->mem, bytes);
	if (!t->data)
		return base_nomem(err, "loading the model");
	if (bytes)
		memcpy(t->data, p, bytes);
	return 0;
}

/* Copy n typed values into the cells of t (count already checked). */
static void from_int32(struct rt_tensor *t, const int32_t *src, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		switch (t->dtype) {
		case BASE_DT_INT32: ((int32_t *)t->data)[i] = src[i]; break;
		case BASE_DT_INT16: ((int16_t *)t->data)[i] = (int16_t)src[i]; break;
		case BASE_DT_UINT16:
		case BASE_DT_FLOAT16:
		case BASE_DT_BFLOAT16: ((uint16_t *)t->data)[i] = (uint16_t)src[i]; break;
		case BASE_DT_INT8: ((int8_t *)t->data)[i] = (int8_t)src[i]; break;
		case BASE_DT_UINT8: ((uint8_t *)t->data)[i] = (uint8_t)src[i]; break;
		case BASE_DT_BOOL: ((uint8_t *)t->data)[i] = src[i] != 0; break;
		}
	}
}

/* Convert a TensorProto into t.  what names the tensor in messages. */
/* ---- raw_data read in place ----------------------------------------------------------
 *
 * protobuf-c copies every bytes field it decodes, so decoding a model whose
 * weights are raw_data would hold them twice (the file's pages and the
 * decoded copy) before the loader keeps them.  strip_raw() instead writes a
 * skeleton of the model where each large raw_data of the top graph's
 * initializers is replaced by a SPAN_FIELD naming its place in the source;
 * the loader copies each payload once, into the model's blocks, and lets the
 * file's pages go.  Anything the scanner does not understand makes it give
 * up, and the model is decoded as it is. */

/* Weights under this size stay in the skeleton: replacing them saves nothing. */
#define SPAN_MIN 64

static void drop_pages(const void *p, size_t n)
{
	uintptr_t a = (uintptr_t)p, e = a + n;
	uintptr_t pg = 4096;
	a = (a + pg - 1) & ~(pg - 1);
	e &= ~(pg - 1);
	if (e > a)
		madvise((void *)a, e - a, MADV_DONTNEED);
}

static int get_varint(const unsigned char *b, size_t n, size_t *i, uint64_t *v)
{
	*v = 0;
	for (int sh = 0; sh < 64 && *i < n; sh += 7) {
		unsigned char c = b[(*i)++];
		*v |= (uint64_t)(c & 0x7f) << sh;
		if (!(c & 0x80))
			return 0;
	}
	return -1;
}

static size_t put_varint(unsigned char *o, uint64_t v)
{
	size_t k = 0;
	do {
		o[k++] = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	return k;
}

struct strip {
	const unsigned char *src;
	unsigned char *out;
	size_t nout, cap;
	struct span *spans;
	size_t nspans, capspans;
};

/* Rewrite the message src[a..b) of kind level (0 model, 1 graph, 2 tensor)
 * onto st->out.  Returns 0, -1 (not understood: give up) or STRATA_NOMEM. */
static int strip_msg(struct strip *st, size_t a, size_t b, int level)
{
	size_t i = a;
	while (i < b) {
		size_t start = i;
		uint64_t key, len = 0;
		if (get_varint(st->src, b, &i, &key) != 0)
			return -1;
		int wt = (int)(key & 7);
		uint64_t field = key >> 3;
		if (wt == 0) {
			if (get_varint(st->src, b, &i, &len) != 0)
				return -1;
		} else if (wt == 1 || wt == 5) {
			if (b - i < (wt == 1 ? 8u : 4u))
				return -1;
			i += wt == 1 ? 8 : 4;
		} else if (wt == 2) {
			if (get_varint(st->src, b, &i, &len) != 0 || len > b - i)
				return -1;
		} else {
			return -1;
		}
		int sub = wt == 2 && ((level == 0 && field == 7) || (level == 1 && field == 5));
		if (wt == 2 && level == 2 && field == 9 && len >= SPAN_MIN) {
			if (st->nspans == st->capspans &&
			    base_grow((void **)&st->spans, &st->capspans, st->nspans + 1,
			              sizeof *st->spans, SIZE_MAX / 64) != 0)
				return STRATA_NOMEM;
			st->spans[st->nspans] = (struct span){ i, (size_t)len, 0 };
			uint64_t k = st->nspans++;
			st->nout += put_varint(st->out + st->nout, ((uint64_t)SPAN_FIELD << 3) | 1);
			memcpy(st->out + st->nout, &k, 8);
			st->nout += 8;
			i += len;
		} else if (sub) {
			/* The key, then the rewritten body after room for its length. */
			st->nout += put_varint(st->out + st->nout, key);
			size_t at = st->nout;
			st->nout += 10;
			int rc = strip_msg(st, i, i + len, level + 1);
			if (rc != 0)
				return rc;
			size_t body = st->nout - at - 10;
			unsigned char lb[10];
			size_t k = put_varint(lb, body);
			memmove(st->out + at + k, st->out + at + 10, body);
			memcpy(st->out + at, lb, k);
			st->nout = at + k + body;
			i += len;
		} else {
			if (wt == 2)
				i += len;
			memcpy(st->out + st->nout, st->src + start, i - start);
			st->nout += i - start;
		}
	}
	return 0;
}

/* The skeleton of the model in buf (see above): 0 with *out set (NULL when
 * there is nothing to strip or the bytes are not understood), or
 * STRATA_NOMEM. */
static int strip_raw(const void *buf, size_t n, struct strip *st)
{
	memset(st, 0, sizeof *st);
	st->src = buf;
	/* A stripped field (at least SPAN_MIN bytes) is replaced by at most 14,
	 * and a rewritten length never needs more than the 10 bytes reserved. */
	st->cap = n + 64;
	st->out = base_alloc(st->cap);
	if (!st->out)
		return STRATA_NOMEM;
	int rc = strip_msg(st, 0, n, 0);
	if (rc == 0 && st->nspans > 0)
		return 0;
	base_free(st->out, st->cap);
	if (st->spans)
		base_free(st->spans, st->capspans * sizeof *st->spans);
	memset(st, 0, sizeof *st);
	return rc == STRATA_NOMEM ? rc : 0;
}

static int tensor_from_proto(struct loader *L, Onnx__TensorProto *tp, struct rt_tensor *t,
                             const char *what, struct strata_error *err)
{
	memset(t, 0, sizeof *t);
	if (!tp->has_data_type || tp->data_type == BASE_DT_UNDEFINED)
		return base_err(err, STRATA_INVALID_GRAPH, "tensor \"%s\" has no element type", what);
	if (!supported_dtype(tp->data_type))
		return base_err(err, STRATA_NOT_IMPLEMENTED,
		                "tensor \"%s\": element type %d is not supported", what,
		                (int)tp->data_type);
	if (tp->segment)
		return base_err(err, STRATA_NOT_IMPLEMENTED,
		                "tensor \"%s\" is segmented, which is not supported", what);
	if (tp->n_dims > RT_MAX_RANK)
		return base_err(err, STRATA_NOT_IMPLEMENTED,
		                "tensor \"%s\" has rank %zu; at most %d is supported", what,
		                tp->n_dims, RT_MAX_RANK);
	t->dtype = tp->data_type;
	t->rank = (int)tp->n_dims;
	int64_t count = 1;
	int zero = 0;
	for (int i = 0; i < t->rank; i++) {
		if (tp->dims[i] < 0)
			return base_err(err, STRATA_INVALID_GRAPH,
			                "tensor \"%s\" has a negative dimension (%lld)", what,
			                (long long)tp->dims[i]);
		t->dims[i] = tp->dims[i];
		zero |= tp->dims[i] == 0;
	}
	if (zero) {
		count = 0;
	} else {
		for (int i = 0; i < t->rank; i++) {
			if (t->dims[i] > MAX_CELLS / count)
				return base_err(err, STRATA_INVALID_GRAPH, "tensor \"%s\" is too large",
				                what);
			count *= t->dims[i];
		}
	}
	int ok;
	size_t bytes = rt_tensor_bytes(t->dtype, count, &ok);
	if (!ok)
		return base_err(err, STRATA_INVALID_GRAPH, "tensor \"%s\" is too large", what);

	if (tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
		return external_data(L, tp, t, bytes, what, err);

	for (unsigned u = 0; u < tp->base.n_unknown_fields; u++) {
		const ProtobufCMessageUnknownField *f = &tp->base.unknown_fields[u];
		if (f->tag != SPAN_FIELD)
			continue;
		uint64_t k = 0;
		if (f->wire_type == PROTOBUF_C_WIRE_TYPE_64BIT && f->len == 8)
			memcpy(&k, f->data, 8);
		if (!L->spans || k >= L->nspans || L->spans[k].used || tp->has_raw_data ||
		    t->dtype == BASE_DT_STRING)
			return base_err(err, STRATA_INVALID_GRAPH, "tensor \"%s\": malformed cells", what);
		struct span *sp = &L->spans[k];
		sp->used = 1;
		if (sp->len != bytes)
			return base_err(err, STRATA_INVALID_GRAPH,
			                "tensor \"%s\": raw_data holds %zu bytes, its shape needs %zu", what,
			                sp->len, bytes);
		t->data = rt_blocks_alloc(L->mem, bytes);
		if (!t->data)
			return base_nomem(err, "loading the model");
		memcpy(t->data, L->src + sp->off, bytes);
		if (L->mapped)
			drop_pages(L->src + sp->off, bytes);
		return 0;
	}
	if (tp->has_raw_data && t->dtype != BASE_DT_STRING) {
		if (tp->raw_data.len != bytes)
			return base_err(err, STRATA_INVALID_GRAPH,
			                "tensor \"%s\": raw_data holds %zu bytes, its shape needs %zu", what,
			                tp->raw_data.len, bytes);
		if (bytes == 0) {
			t->data = rt_blocks_alloc(L->mem, 0);
			return t->data ? 0 : base_nomem(err, "loading the model");
		}
		/* The decoder's buffer is ours to keep: same allocator, 64-byte
		 * aligned, and cells are little-endian like this machine. */
		if (rt_blocks_adopt(L->mem, tp->raw_data.data) != 0)
			return base_nomem(err, "loading the model");
		t->data = tp->raw_data.data;
		tp->raw_data.data = NULL;
		tp->raw_data.len = 0;
		return 0;
	}

	t->data = rt_blocks_alloc(L->mem, bytes);
	if (!t->data)
		return base_nomem(err, "loading the model");
	size_t have;
	const char *field;
	switch (t->dtype) {
	case BASE_DT_FLOAT: have = tp->n_float_data; field = "float_data"; break;
	case BASE_DT_DOUBLE: have = tp->n_double_data; field = "double_data"; break;
	case BASE_DT_INT64: have = tp->n_int64_data; field = "int64_data"; break;
	case BASE_DT_UINT32:
	case BASE_DT_UINT64: have = tp->n_uint64_data; field = "uint64_data"; break;
	case BASE_DT_STRING: have = tp->n_string_data; field = "string_data"; break;
	default: have = tp->n_int32_data; field = "int32_data"; break;
	}
	if (have != (size_t)count)
		return base_err(err, STRATA_INVALID_GRAPH,
		                "tensor \"%s\": %zu values in %s, its shape has %lld cells", what, have,
		                field, (long long)count);
	if (have == 0)
		return 0;
	switch (t->dtype) {
	case BASE_DT_FLOAT: memcpy(t->data, tp->float_data, bytes); break;
	case BASE_DT_DOUBLE: memcpy(t->data, tp->double_data, bytes); break;
	case BASE_DT_INT64: memcpy(t->data, tp->int64_data, bytes); break;
	case BASE_DT_UINT64: memcpy(t->data, tp->uint64_data, bytes); break;
	case BASE_DT_UINT32:
		for (size_t i = 0; i < have; i++)
			((uint32_t *)t->data)[i] = (uint32_t)tp->uint64_data[i];
		break;
	case BASE_DT_STRING:
		for (size_t i = 0; i < have; i++) {
			char *s = rt_blocks_strndup(L->mem, (const char *)tp->string_data[i].data,
			                            tp->string_data[i].len);
			if (!s)
				return base_nomem(err, "loading the model");
			((char **)t->data)[i] = s;
		}
		break;
	default:
		from_int32(t, tp->int32_data, have);
		break;
	}
	return 0;
}

int rt_tensor_from_pb(const void *buf, size_t n, struct rt_tensor *t, const char **name,
                      struct rt_blocks *bl, struct strata_error *err)
{
	int oom = 0;
	ProtobufCAllocator pb_allocator = { pb_alloc, pb_free, &oom };
	Onnx__TensorProto *tp = onnx__tensor_proto__unpack(&pb_allocator, n, buf);
	if (!tp && oom)
		return base_nomem(err, "loading the model");
	if (!tp)
		return base_err(err, STRATA_INVALID_PROTOBUF, "not a readable TensorProto");
	struct loader L = { .mem = bl };
	const char *nm = tp->name ? tp->name : "";
	int rc = tensor_from_proto(&L, tp, t, nm, err);
	if (rc == 0 && name) {
		*name = bstrdup(bl, nm);
		if (!*name)
			rc = base_nomem(err, "loading the model");
	}
	onnx__tensor_proto__free_unpacked(tp, &pb_allocator);
	return rc;
}

int rt_tensor_from_pb_file(const char *path, struct rt_tensor *t, const char **name,
                           struct rt_blocks *bl, struct strata_error *err)
{
	struct base_map map;
	int rc = base_map_file(path, &map, err);
	if (rc != 0)
		return rc;
	rc = rt_tensor_from_pb(map.data, map.size, t, name, bl, err);
	base_unmap(&map);
	if (rc != 0)
		base_err_prefix(err, rc, "%s", path);
	return rc;
}

/* ---- value table: names to value indices -------------------------------------------- */

struct names {
	int *slot;               /* value index + 1, 0 = empty */
	size_t cap;              /* power of two */
	size_t n;
};

/* The graph being built and its name table.  A subgraph's scope points at
 * its enclosing one: names it does not define are captured from there. */
struct scope {
	struct names nt;
	struct rt_graph *g;
	size_t capv;             /* capacity of g->values, a heap array while building */
	struct scope *parent;
	struct rt_node *owner;   /* the node of parent->g holding this subgraph */
	int depth;
};

/* Subgraphs nest at most this deep (each level costs C stack while loading
 * and running). */
#define MAX_DEPTH 32

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static int names_find(const struct names *nt, const struct rt_graph *g, const char *s)
{
	size_t i = hash_str(s) & (nt->cap - 1);
	while (nt->slot[i]) {
		if (strcmp(g->values[nt->slot[i] - 1].name, s) == 0)
			return nt->slot[i] - 1;
		i = (i + 1) & (nt->cap - 1);
	}
	return -1;
}

static void names_put(struct names *nt, const char *s, int v)
{
	size_t i = hash_str(s) & (nt->cap - 1);
	while (nt->slot[i])
		i = (i + 1) & (nt->cap - 1);
	nt->slot[i] = v + 1;
	nt->n++;
}

/* Keep the table at most half full (captures add names after sizing). */
static int names_reserve(struct names *nt, const struct rt_graph *g)
{
	if (2 * (nt->n + 1) <= nt->cap)
		return 0;
	struct names bigger = { base_calloc(nt->cap * 2, sizeof(int)), nt->cap * 2, 0 };
	if (!bigger.slot)
		return -1;
	for (size_t i = 0; i < nt->cap; i++)
		if (nt->slot[i])
			names_put(&bigger, g->values[nt->slot[i] - 1].name, nt->slot[i] - 1);
	base_free(nt->slot, nt->cap * sizeof(int));
	*nt = bigger;
	return 0;
}

/* Add a value called name; STRATA_INVALID_GRAPH if it exists already. */
static int add_value(struct loader *L, struct scope *S, const char *name, const char *role,
                     int *out, struct strata_error *err)
{
	struct rt_graph *g = S->g;
	if (names_find(&S->nt, g, name) >= 0)
		return base_err(err, STRATA_INVALID_GRAPH, "value \"%s\" (%s) is defined twice", name,
		                role);
	if (g->nvalues >= INT_MAX / 4)
		return base_err(err, STRATA_LIMIT, "the graph has too many values");
	if ((size_t)g->nvalues == S->capv &&
	    base_grow((void **)&g->values, &S->capv, (size_t)g->nvalues + 1, sizeof *g->values,
	              INT_MAX / 4) != 0)
		return base_nomem(err, "loading the model");
	if (names_reserve(&S->nt, g) != 0)
		return base_nomem(err, "loading the model");
	int v = g->nvalues++;
	struct rt_value *val = &g->values[v];
	memset(val, 0, sizeof *val);
	val->name = bstrdup(L->mem, name);
	if (!val->name)
		return base_nomem(err, "loading the model");
	val->producer = -1;
	val->last_use = -1;
	val->outer = -1;
	names_put(&S->nt, val->name, v);
	*out = v;
	return 0;
}

/* Append v to the implicit inputs of n (once). */
static int add_implicit(struct loader *L, struct rt_node *n, int v)
{
	for (int i = 0; i < n->nimplicit; i++)
		if (n->implicit[i] == v)
			return 0;
	/* Blocks cannot grow: a full list moves to a block twice its size (the
	 * old one stays with the model until it is freed). */
	if (n->nimplicit == 0 || (n->nimplicit >= 4 && (n->nimplicit & (n->nimplicit - 1)) == 0)) {
		int *p = rt_blocks_alloc(L->mem, (size_t)(n->nimplicit ? 2 * n->nimplicit : 4) * sizeof *p);
		if (!p)
			return -1;
		if (n->nimplicit)
			memcpy(p, n->implicit, (size_t)n->nimplicit * sizeof *p);
		n->implicit = p;
	}
	n->implicit[n->nimplicit++] = v;
	return 0;
}

/* The value called name as seen from scope S: its own, or one captured from
 * an enclosing scope (added to S as a value whose outer names it).  -1 when
 * no scope defines it; a negative STRATA code on failure. */
static int lookup(struct loader *L, struct scope *S, const char *name, struct strata_error *err)
{
	int v = names_find(&S->nt, S->g, name);
	if (v >= 0 || !S->parent)
		return v;
	int pv = lookup(L, S->parent, name, err);
	if (pv < 0)
		return pv;
	int rc = add_value(L, S, name, "captured value", &v, err);
	if (rc != 0)
		return rc;
	S->g->values[v].outer = pv;
	if (add_implicit(L, S->owner, pv) != 0)
		return base_nomem(err, "loading the model");
	return v;
}

/* ---- value infos, attributes, opsets ------------------------------------------------ */

static int value_info(struct loader *L, const Onnx__ValueInfoProto *vi, struct rt_value_info *info,
                      const char *role, struct strata_error *err)
{
	info->rank = -1;
	info->dtype = BASE_DT_UNDEFINED;
	info->kind = RT_KIND_TENSOR;
	const Onnx__TypeProto *tp = vi->type;
	if (!tp || tp->value_case == ONNX__TYPE_PROTO__VALUE__NOT_SET)
		return 0;
	/* Optional(Sequence(Tensor)), Optional(Tensor), Sequence(Tensor), Tensor:
	 * peel the wrappers, then read the element tensor type. */
	int opt = 0, seq = 0;
	if (tp->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE) {
		opt = 1;
		tp = tp->optional_type ? tp->optional_type->elem_type : NULL;
	}
	if (tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE) {
		seq = 1;
		tp = tp->sequence_type ? tp->sequence_type->elem_type : NULL;
	}
	info->kind = opt ? (seq ? RT_KIND_OPTIONAL_SEQUENCE : RT_KIND_OPTIONAL_TENSOR)
	                 : (seq ? RT_KIND_SEQUENCE : RT_KIND_TENSOR);
	if (!tp || tp->value_case == ONNX__TYPE_PROTO__VALUE__NOT_SET)
		return 0;
	if (tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type)
		return base_err(err, STRATA_NOT_IMPLEMENTED,
		                "%s \"%s\" is of a type without support (maps, sparse tensors and "
		                "nested sequences are not supported)", role, info->name);
	const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
	if (tt->has_elem_type && tt->elem_type != BASE_DT_UNDEFINED) {
		if (!supported_dtype(tt->elem_type))
			return base_err(err, STRATA_NOT_IMPLEMENTED,
			                "%s \"%s\": element type %d is not supported", role, info->name,
			                (int)tt->elem_type);
		info->dtype = tt->elem_type;
	}
	if (!tt->shape)
		return 0;
	if (tt->shape->n_dim > RT_MAX_RANK)
		return base_err(err, STRATA_NOT_IMPLEMENTED,
		                "%s \"%s\" has rank %zu; at most %d is supported", role, info->name,
		                tt->shape->n_dim, RT_MAX_RANK);
	info->rank = (int)tt->shape->n_dim;
	for (int i = 0; i < info->rank; i++) {
		const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
		info->dims[i] = -1;
		info->dim_names[i] = "";
		if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
			if (d->dim_value < 0)
				return base_err(err, STRATA_INVALID_GRAPH,
				                "%s \"%s\": dimension %d is negative (%lld)", role,
				                info->name, i, (long long)d->dim_value);
			info->dims[i] = d->dim_value;
		} else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
		           d->dim_param) {
			info->dim_names[i] = bstrdup(L->mem, d->dim_param);
			if (!info->dim_names[i])
				return base_nomem(err, "loading the model");
		}
	}
	return 0;
}

static int attr_type_of(const Onnx__AttributeProto *a)
{
	if (a->has_type && a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED)
		return a->type;
	/* Models from before IR 2 leave the type out: infer it from the field. */
	if (a->has_f) return RT_ATTR_FLOAT;
	if (a->has_i) return RT_ATTR_INT;
	if (a->has_s) return RT_ATTR_STRING;
	if (a->t) return RT_ATTR_TENSOR;
	if (a->g) return RT_ATTR_GRAPH;
	if (a->n_floats) return RT_ATTR_FLOATS;
	if (a->n_ints) return RT_ATTR_INTS;
	if (a->n_strings) return RT_ATTR_STRINGS;
	if (a->n_tensors) return RT_ATTR_TENSORS;
	if (a->n_graphs) return RT_ATTR_GRAPHS;
	if (a->tp) return RT_ATTR_TYPE_PROTO;
	return RT_ATTR_UNDEFINED;
}

static int convert_attr(struct loader *L, Onnx__AttributeProto *a, struct rt_attr *r,
                        const char *node, struct strata_error *err)
{
	r->name = bstrdup(L->mem, a->name);
	if (!r->name)
		return base_nomem(err, "loading the model");
	r->type = attr_type_of(a);
	r->f = a->f;
	r->i = a->i;
	r->s = rt_blocks_strndup(L->mem, a->s.data ? (const char *)a->s.data : "", a->s.len);
	r->slen = a->s.len;
	if (!r->s)
		return base_nomem(err, "loading the model");
	switch (r->type) {
	case RT_ATTR_FLOATS: {
		float *f = rt_blocks_alloc(L->mem, a->n_floats * sizeof *f);
		if (!f)
			return base_nomem(err, "loading the model");
		if (a->n_floats)
			memcpy(f, a->floats, a->n_floats * sizeof *f);
		r->floats = f;
		r->n = a->n_floats;
		break;
	}
	case RT_ATTR_INTS: {
		int64_t *v = rt_blocks_alloc(L->mem, a->n_ints * sizeof *v);
		if (!v)
			return base_nomem(err, "loading the model");
		if (a->n_ints)
			memcpy(v, a->ints, a->n_ints * sizeof *v);
		r->ints = v;
		r->n = a->n_ints;
		break;
	}
	case RT_ATTR_STRINGS: {
		char **v = rt_blocks_alloc(L->mem, a->n_strings * sizeof *v);
		if (!v)
			return base_nomem(err, "loading the model");
		for (size_t i = 0; i < a->n_strings; i++) {
			v[i] = rt_blocks_strndup(L->mem,
			                         a->strings[i].data ? (const char *)a->strings[i].data : "",
			                         a->strings[i].len);
			if (!v[i])
				return base_nomem(err, "loading the model");
		}
		r->strings = (const char *const *)v;
		r->n = a->n_strings;
		break;
	}
	case RT_ATTR_TENSOR: {
		if (!a->t)
			return base_err(err, STRATA_INVALID_GRAPH,
			                "node \"%s\": tensor attribute \"%s\" has no tensor", node, r->name);
		struct rt_tensor *t = rt_blocks_alloc(L->mem, sizeof *t);
		if (!t)
			return base_nomem(err, "loading the model");
		int rc = tensor_from_proto(L, a->t, t, r->name, err);
		if (rc != 0)
			return rc;
		r->t = t;
		break;
	}
	case RT_ATTR_TYPE_PROTO: {
		/* Read like a graph input's type (Optional's "type"). */
		Onnx__ValueInfoProto vi = ONNX__VALUE_INFO_PROTO__INIT;
		struct rt_value_info info = { .name = r->name };
		vi.type = a->tp;
		r->type_kind = -1;
		if (a->tp && value_info(L, &vi, &info, "type attribute", err) == 0) {
			r->type_kind = info.kind;
			r->type_dtype = info.dtype;
		}
		break;
	}
	default:
		/* Subgraphs are built once the node's graph is complete
		 * (build_subgraphs); tensor lists have no kernel that reads them. */
		break;
	}
	return 0;
}

static int is_default_domain(const char *d)
{
	return !d || !*d || strcmp(d, "ai.onnx") == 0;
}

static int read_opsets(struct loader *L, const Onnx__ModelProto *mp, struct strata_error *err)
{
	struct rt_model *m = L->m;
	/* Without any opset_import (IR version < 3) the default domain is at
	 * opset 1. */
	m->opset = mp->n_opset_import ? 0 : 1;
	m->opset_domains = rt_blocks_alloc(L->mem, mp->n_opset_import * sizeof(char *));
	m->opset_versions = rt_blocks_alloc(L->mem, mp->n_opset_import * sizeof(int));
	if (!m->opset_domains || !m->opset_versions)
		return base_nomem(err, "loading the model");
	for (size_t i = 0; i < mp->n_opset_import; i++) {
		const Onnx__OperatorSetIdProto *o = mp->opset_import[i];
		if (!o->has_version || o->version < 1 || o->version > INT_MAX)
			return base_err(err, STRATA_INVALID_GRAPH, "opset import of domain \"%s\" has a bad version",
			                o->domain ? o->domain : "");
		if (is_default_domain(o->domain)) {
			m->opset = (int)o->version;
			continue;
		}
		m->opset_domains[m->nopsets] = bstrdup(L->mem, o->domain);
		if (!m->opset_domains[m->nopsets])
			return base_nomem(err, "loading the model");
		m->opset_versions[m->nopsets++] = (int)o->version;
	}
	/* A model may use other domains only (training ops, say); a default
	 * domain node in it then fails as a domain that is not imported. */
	return 0;
}

/* The model's opset of domain d, or 0 if it does not import it. */
static int opset_of(const struct rt_model *m, const char *d)
{
	if (is_default_domain(d))
		return m->opset;
	for (int i = 0; i < m->nopsets; i++)
		if (strcmp(m->opset_domains[i], d) == 0)
			return m->opset_versions[i];
	return 0;
}

/* ---- graph -------------------------------------------------------------------------- */

static int is_constant_node(const Onnx__NodeProto *np)
{
	return np->op_type && strcmp(np->op_type, "Constant") == 0 && is_default_domain(np->domain);
}

/* Fold a Constant node into the value of its output. */
static int constant_value(struct loader *L, Onnx__NodeProto *np, struct rt_tensor *t,
                          struct strata_error *err)
{
	const char *nm = np->name && *np->name ? np->name : np->output[0];
	if (np->n_attribute != 1)
		return base_err(err, STRATA_INVALID_GRAPH,
		                "Constant node \"%s\" must have exactly one attribute, it has %zu", nm,
		                np->n_attribute);
	Onnx__AttributeProto *a = np->attribute[0];
	const char *an = a->name ? a->name : "";
	memset(t, 0, sizeof *t);
	size_t n = 1;
	if (strcmp(an, "value") == 0) {
		if (!a->t)
			return base_err(err, STRATA_INVALID_GRAPH, "Constant node \"%s\": no tensor in \"value\"", nm);
		return tensor_from_proto(L, a->t, t, nm, err);
	} else if (strcmp(an, "value_float") == 0) {
		t->dtype = BASE_DT_FLOAT;
	} else if (strcmp(an, "value_floats") == 0) {
		t->dtype = BASE_DT_FLOAT;
		n = a->n_floats;
	} else if (strcmp(an, "value_int") == 0) {
		t->dtype = BASE_DT_INT64;
	} else if (strcmp(an, "value_ints") == 0) {
		t->dtype = BASE_DT_INT64;
		n = a->n_ints;
	} else if (strcmp(an, "value_string") == 0) {
		t->dtype = BASE_DT_STRING;
	} else if (strcmp(an, "value_strings") == 0) {
		t->dtype = BASE_DT_STRING;
		n = a->n_strings;
	} else if (strcmp(an, "sparse_value") == 0) {
		return base_err(err, STRATA_NOT_IMPLEMENTED,
		                "Constant node \"%s\": sparse_value is not supported", nm);
	} else {
		return base_err(err, STRATA_INVALID_GRAPH, "Constant node \"%s\": unknown attribute \"%s\"",
		                nm, an);
	}
	int list = an[strlen(an) - 1] == 's'; /* value_floats, value_ints, value_strings */
	t->rank = list ? 1 : 0;
	t->dims[0] = list ? (int64_t)n : 0;
	int ok;
	size_t bytes = rt_tensor_bytes(t->dtype, (int64_t)n, &ok);
	t->data = rt_blocks_alloc(L->mem, bytes);
	if (!t->data)
		return base_nomem(err, "loading the model");
	if (strcmp(an, "value_float") == 0)
		*(float *)t->data = a->f;
	else if (strcmp(an, "value_floats") == 0 && n)
		memcpy(t->data, a->floats, bytes);
	else if (strcmp(an, "value_int") == 0)
		*(int64_t *)t->data = a->i;
	else if (strcmp(an, "value_ints") == 0 && n)
		memcpy(t->data, a->ints, bytes);
	else {
		const ProtobufCBinaryData *src = strcmp(an, "value_string") == 0 ? &a->s : a->strings;
		for (size_t i = 0; i < n; i++) {
			char *s = rt_blocks_strndup(L->mem, src[i].data ? (const char *)src[i].data : "",
			                            src[i].len);
			if (!s)
				return base_nomem(err, "loading the model");
			((char **)t->data)[i] = s;
		}
	}
	return 0;
}

static int build_graph(struct loader *L, struct scope *S, Onnx__GraphProto *gp,
                       struct strata_error *err);

/* Build the subgraph of every GRAPH attribute of g's nodes (after all of g's
 * values exist, so that subgraphs can capture any of them). */
static int build_subgraphs(struct loader *L, struct scope *S, Onnx__GraphProto *gp,
                           struct strata_error *err)
{
	struct rt_graph *g = S->g;
	int k = 0;
	for (size_t i = 0; i < gp->n_node; i++) {
		Onnx__NodeProto *np = gp->node[i];
		if (is_constant_node(np))
			continue;
		struct rt_node *n = &g->nodes[k++];
		for (size_t j = 0; j < np->n_attribute; j++) {
			Onnx__AttributeProto *a = np->attribute[j];
			if (n->attr[j].type == RT_ATTR_GRAPHS)
				return base_err(err, STRATA_NOT_IMPLEMENTED,
				                "node \"%s\" (%s): GRAPHS attributes are not supported",
				                n->name, n->op);
			if (n->attr[j].type != RT_ATTR_GRAPH)
				continue;
			if (!a->g)
				return base_err(err, STRATA_INVALID_GRAPH,
				                "node \"%s\" (%s): graph attribute \"%s\" has no graph",
				                n->name, n->op, n->attr[j].name);
			if (S->depth + 1 >= MAX_DEPTH)
				return base_err(err, STRATA_LIMIT,
				                "node \"%s\" (%s): subgraphs nest deeper than %d", n->name,
				                n->op, MAX_DEPTH);
			struct rt_graph *sg = rt_blocks_alloc(L->mem, sizeof *sg);
			if (!sg)
				return base_nomem(err, "loading the model");
			sg->parent = g;
			sg->model = L->m;
			struct scope sub = { { NULL, 16, 0 }, sg, 0, S, n, S->depth + 1 };
			int rc = build_graph(L, &sub, a->g, err);
			if (rc != 0)
				return base_err_prefix(err, rc, "node \"%s\" (%s), graph \"%s\"", n->name,
				                       n->op, n->attr[j].name);
			n->attr[j].graph = sg;
		}
	}
	return 0;
}

/* Fill S->g from gp.  The values array is a heap array while the graph and
 * its subgraphs are built (captures may add values to it), then moves into
 * the model's blocks. */
static int build_graph(struct loader *L, struct scope *S, Onnx__GraphProto *gp,
                       struct strata_error *err)
{
	struct rt_model *m = L->m;
	struct rt_graph *g = S->g;
	int rc = 0;
	if (gp->n_sparse_initializer)
		return base_err(err, STRATA_NOT_IMPLEMENTED, "sparse initializers are not supported");

	/* Upper bound of the value count: every initializer, input and node output. */
	size_t maxv = gp->n_initializer + gp->n_input;
	size_t nnodes = 0;
	for (size_t i = 0; i < gp->n_node; i++) {
		maxv += gp->node[i]->n_output;
		if (!is_constant_node(gp->node[i]))
			nnodes++;
	}
	if (maxv > INT_MAX / 4 || gp->n_node > INT_MAX / 4)
		return base_err(err, STRATA_LIMIT, "the graph is too large");
	S->capv = maxv ? maxv : 1;
	g->values = base_calloc(S->capv, sizeof *g->values);
	g->nodes = rt_blocks_alloc(L->mem, (nnodes ? nnodes : 1) * sizeof *g->nodes);
	while (S->nt.cap < 2 * maxv + 2)
		S->nt.cap *= 2;
	S->nt.slot = base_calloc(S->nt.cap, sizeof *S->nt.slot);
	if (!g->values || !g->nodes || !S->nt.slot) {
		rc = base_nomem(err, "loading the model");
		goto out;
	}

	/* Initializers first: an input that is also an initializer is a constant
	 * with a default value (old models list every initializer as an input). */
	for (size_t i = 0; i < gp->n_initializer && rc == 0; i++) {
		Onnx__TensorProto *tp = gp->initializer[i];
		const char *nm = tp->name ? tp->name : "";
		int v;
		if (!*nm) {
			rc = base_err(err, STRATA_INVALID_GRAPH, "initializer %zu has no name", i);
			break;
		}
		if ((rc = add_value(L, S, nm, "initializer", &v, err)) != 0)
			break;
		struct rt_tensor *t = rt_blocks_alloc(L->mem, sizeof *t);
		if (!t) {
			rc = base_nomem(err, "loading the model");
			break;
		}
		if ((rc = tensor_from_proto(L, tp, t, nm, err)) != 0)
			break;
		g->values[v].konst = t;
		g->values[v].dtype = t->dtype;
	}

	/* Graph inputs.  A subgraph's inputs may leave their type out (the
	 * enclosing op's init then sets it). */
	if (rc == 0) {
		g->inputs = rt_blocks_alloc(L->mem, (gp->n_input + 1) * sizeof *g->inputs);
		g->input_info = rt_blocks_alloc(L->mem, (gp->n_input + 1) * sizeof *g->input_info);
		if (!g->inputs || !g->input_info)
			rc = base_nomem(err, "loading the model");
	}
	for (size_t i = 0; i < gp->n_input && rc == 0; i++) {
		const Onnx__ValueInfoProto *vi = gp->input[i];
		const char *nm = vi->name ? vi->name : "";
		int v = names_find(&S->nt, g, nm);
		if (v >= 0 && g->values[v].konst && !S->parent)
			continue;
		if (!*nm) {
			rc = base_err(err, STRATA_INVALID_GRAPH, "graph input %zu has no name", i);
			break;
		}
		if ((rc = add_value(L, S, nm, "graph input", &v, err)) != 0)
			break;
		struct rt_value_info *info = &g->input_info[g->ninputs];
		info->name = g->values[v].name;
		if ((rc = value_info(L, vi, info, "input", err)) != 0)
			break;
		if (info->dtype == BASE_DT_UNDEFINED && !S->parent) {
			rc = base_err(err, STRATA_INVALID_GRAPH, "input \"%s\" has no element type", nm);
			break;
		}
		g->values[v].dtype = info->dtype;
		g->values[v].kind = info->kind;
		g->values[v].is_input = g->ninputs + 1;
		g->inputs[g->ninputs++] = v;
	}

	/* Node outputs next, so that inputs can name values produced by nodes
	 * that come later in the file (graph.c sorts them). */
	int k = 0;
	for (size_t i = 0; i < gp->n_node && rc == 0; i++) {
		Onnx__NodeProto *np = gp->node[i];
		const char *op = np->op_type ? np->op_type : "";
		const char *nm = np->name ? np->name : "";
		if (!*op) {
			rc = base_err(err, STRATA_INVALID_GRAPH, "node %zu (\"%s\") has no op_type", i, nm);
			break;
		}
		if (is_constant_node(np)) {
			int v;
			if (np->n_output != 1 || !np->output[0] || !*np->output[0]) {
				rc = base_err(err, STRATA_INVALID_GRAPH,
				              "Constant node %zu (\"%s\") must have one named output", i, nm);
				break;
			}
			if ((rc = add_value(L, S, np->output[0], "Constant output", &v, err)) != 0)
				break;
			struct rt_tensor *t = rt_blocks_alloc(L->mem, sizeof *t);
			if (!t) {
				rc = base_nomem(err, "loading the model");
				break;
			}
			if ((rc = constant_value(L, np, t, err)) != 0)
				break;
			g->values[v].konst = t;
			g->values[v].dtype = t->dtype;
			continue;
		}
		struct rt_node *n = &g->nodes[k];
		n->name = bstrdup(L->mem, nm);
		n->op = bstrdup(L->mem, op);
		n->domain = bstrdup(L->mem, is_default_domain(np->domain) ? "" : np->domain);
		if (!n->name || !n->op || !n->domain) {
			rc = base_nomem(err, "loading the model");
			break;
		}
		n->opset = opset_of(m, n->domain);
		if (n->opset == 0) {
			rc = base_err(err, STRATA_INVALID_GRAPH,
			              "node \"%s\" (%s) is in domain \"%s\", which the model does not import",
			              nm, op, *n->domain ? n->domain : "ai.onnx");
			break;
		}
		n->nout = (int)np->n_output;
		n->nin = (int)np->n_input;
		n->out = rt_blocks_alloc(L->mem, (np->n_output + 1) * sizeof *n->out);
		n->in = rt_blocks_alloc(L->mem, (np->n_input + 1) * sizeof *n->in);
		n->attr = rt_blocks_alloc(L->mem, (np->n_attribute + 1) * sizeof *n->attr);
		if (!n->out || !n->in || !n->attr) {
			rc = base_nomem(err, "loading the model");
			break;
		}
		for (int j = 0; j < n->nout && rc == 0; j++) {
			const char *o = np->output[j] ? np->output[j] : "";
			n->out[j] = -1;
			if (!*o)
				continue;
			rc = add_value(L, S, o, "node output", &n->out[j], err);
			if (rc == 0)
				g->values[n->out[j]].producer = k;
		}
		for (size_t j = 0; j < np->n_attribute && rc == 0; j++) {
			rc = convert_attr(L, np->attribute[j], &n->attr[j], nm, err);
			n->nattr++;
		}
		k++;
	}
	g->nnodes = k;

	/* Node inputs, now that every value of this graph exists; a name this
	 * graph does not define may come from an enclosing one. */
	k = 0;
	for (size_t i = 0; i < gp->n_node && rc == 0; i++) {
		const Onnx__NodeProto *np = gp->node[i];
		if (is_constant_node(np))
			continue;
		struct rt_node *n = &g->nodes[k++];
		for (int j = 0; j < n->nin; j++) {
			const char *in = np->input[j] ? np->input[j] : "";
			n->in[j] = -1;
			if (!*in)
				continue;
			n->in[j] = lookup(L, S, in, err);
			if (n->in[j] < -1) {
				rc = n->in[j];
				break;
			}
			if (n->in[j] < 0) {
				rc = base_err(err, STRATA_INVALID_GRAPH,
				              "node \"%s\" (%s): input \"%s\" names no graph input, initializer "
				              "or node output", n->name, n->op, in);
				break;
			}
		}
	}
	if (rc == 0)
		rc = build_subgraphs(L, S, gp, err);

	/* Graph outputs. */
	if (rc == 0) {
		g->outputs = rt_blocks_alloc(L->mem, (gp->n_output + 1) * sizeof *g->outputs);
		g->output_info = rt_blocks_alloc(L->mem, (gp->n_output + 1) * sizeof *g->output_info);
		if (!g->outputs || !g->output_info)
			rc = base_nomem(err, "loading the model");
	}
	if (rc == 0 && gp->n_output == 0)
		rc = base_err(err, STRATA_INVALID_GRAPH, "the graph has no outputs");
	for (size_t i = 0; i < gp->n_output && rc == 0; i++) {
		const Onnx__ValueInfoProto *vi = gp->output[i];
		const char *nm = vi->name ? vi->name : "";
		int v = lookup(L, S, nm, err);
		if (v < -1) {
			rc = v;
			break;
		}
		if (v < 0) {
			rc = base_err(err, STRATA_INVALID_GRAPH,
			              "graph output \"%s\" names no input, initializer or node output", nm);
			break;
		}
		if (g->values[v].is_output) {
			rc = base_err(err, STRATA_INVALID_GRAPH, "graph output \"%s\" is listed twice", nm);
			break;
		}
		struct rt_value_info *info = &g->output_info[g->noutputs];
		info->name = g->values[v].name;
		if ((rc = value_info(L, vi, info, "output", err)) != 0)
			break;
		g->values[v].is_output = g->noutputs + 1;
		g->outputs[g->noutputs++] = v;
	}

out:
	/* The values move into the model's blocks, where nothing grows. */
	if (g->values) {
		struct rt_value *vals = rc == 0 ? rt_blocks_alloc(L->mem, S->capv * sizeof *vals) : NULL;
		if (vals)
			memcpy(vals, g->values, (size_t)g->nvalues * sizeof *vals);
		else if (rc == 0)
			rc = base_nomem(err, "loading the model");
		base_free(g->values, S->capv * sizeof *g->values);
		g->values = vals;
		if (!vals)
			g->nvalues = 0;
	}
	if (S->nt.slot)
		base_free(S->nt.slot, S->nt.cap * sizeof *S->nt.slot);
	S->nt.slot = NULL;
	return rc;
}

static int build_model(struct loader *L, Onnx__ModelProto *mp, struct strata_error *err)
{
	struct rt_model *m = L->m;
	int rc = read_opsets(L, mp, err);
	if (rc != 0)
		return rc;
	m->g.model = m;
	struct scope top = { { NULL, 16, 0 }, &m->g, 0, NULL, NULL, 0 };
	return build_graph(L, &top, mp->graph, err);
}

/* ---- entry point ------------------------------------------------------------------------ */

int rt_load_graph(struct rt_model *m, const void *buf, size_t n, int mapped,
                  struct strata_error *err)
{
	int oom = 0, rc = 0;
	ProtobufCAllocator pb_allocator = { pb_alloc, pb_free, &oom };
	struct strip st;
	if (strip_raw(buf, n, &st) != 0)
		return base_nomem(err, "loading the model");
	Onnx__ModelProto *mp = st.out ? onnx__model_proto__unpack(&pb_allocator, st.nout, st.out)
	                              : onnx__model_proto__unpack(&pb_allocator, n, buf);
	if (st.out)
		base_free(st.out, st.cap);
	if (!mp && oom)
		rc = base_nomem(err, "loading the model");
	else if (!mp)
		rc = base_err(err, STRATA_INVALID_PROTOBUF, "not a readable ONNX model (protobuf decoding failed)");
	else if (!mp->graph)
		rc = base_err(err, STRATA_INVALID_PROTOBUF, "not an ONNX model: it has no graph");
	if (rc == 0) {
		struct loader L = { &m->mem, m, m->dir, buf, st.spans, st.nspans, mapped };
		m->ir_version = mp->has_ir_version ? mp->ir_version : 0;
		rc = build_model(&L, mp, err);
	}
	if (mp)
		onnx__model_proto__free_unpacked(mp, &pb_allocator);
	if (st.spans)
		base_free(st.spans, st.capspans * sizeof *st.spans);
	return rc;
}
