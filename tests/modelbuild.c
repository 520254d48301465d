/*
 * modelbuild.c: a small builder of ONNX models for tests and for the example
 * application's generator.  It fills protobuf-c's generated structs with
 * heap copies (plain malloc: this is tooling, kept out of the allocation
 * counts of the code under test) and frees them with protobuf-c's own
 * free_unpacked, which walks the same structure.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx.pb-c.h"
#include "modelbuild.h"

struct mb_model {
	Onnx__ModelProto *m;
	Onnx__GraphProto *g;
	size_t nhandles;
	struct mb_node **handles; /* node handles given out, freed with the model */
};

struct mb_node {
	Onnx__NodeProto *n;
};

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p) {
		fprintf(stderr, "modelbuild: out of memory\n");
		abort();
	}
	return p;
}

static char *xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = xcalloc(n, 1);
	memcpy(d, s, n);
	return d;
}

/* Append one pointer to a protobuf-c repeated field. */
#define PUSH(count, array, value)                                               \
	do {                                                                    \
		void *grown_ = realloc((array), ((count) + 1) * sizeof *(array)); \
		if (!grown_)                                                    \
			abort();                                                \
		(array) = grown_;                                               \
		(array)[(count)++] = (value);                                   \
	} while (0)

struct mb_model *mb_new(const char *graph_name, int opset)
{
	struct mb_model *mb = xcalloc(1, sizeof *mb);
	mb->m = xcalloc(1, sizeof *mb->m);
	onnx__model_proto__init(mb->m);
	mb->m->has_ir_version = 1;
	mb->m->ir_version = 8;
	mb->m->producer_name = xstrdup("strata-modelbuild");
	mb->g = xcalloc(1, sizeof *mb->g);
	onnx__graph_proto__init(mb->g);
	mb->g->name = xstrdup(graph_name);
	mb->m->graph = mb->g;
	mb_opset(mb, "", opset);
	return mb;
}

void mb_opset(struct mb_model *mb, const char *domain, int version)
{
	Onnx__OperatorSetIdProto *o = xcalloc(1, sizeof *o);
	onnx__operator_set_id_proto__init(o);
	o->domain = xstrdup(domain);
	o->has_version = 1;
	o->version = version;
	PUSH(mb->m->n_opset_import, mb->m->opset_import, o);
}

static Onnx__ValueInfoProto *value_info(const char *name, int dtype, int rank,
                                        const int64_t *dims, const char *const *dim_names)
{
	Onnx__ValueInfoProto *v = xcalloc(1, sizeof *v);
	onnx__value_info_proto__init(v);
	v->name = xstrdup(name);
	Onnx__TypeProto *t = xcalloc(1, sizeof *t);
	onnx__type_proto__init(t);
	Onnx__TypeProto__Tensor *tt = xcalloc(1, sizeof *tt);
	onnx__type_proto__tensor__init(tt);
	if (dtype) {
		tt->has_elem_type = 1;
		tt->elem_type = dtype;
	}
	if (rank >= 0) {
		Onnx__TensorShapeProto *s = xcalloc(1, sizeof *s);
		onnx__tensor_shape_proto__init(s);
		for (int i = 0; i < rank; i++) {
			Onnx__TensorShapeProto__Dimension *d = xcalloc(1, sizeof *d);
			onnx__tensor_shape_proto__dimension__init(d);
			if (dims[i] >= 0) {
				d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
				d->dim_value = dims[i];
			} else if (dim_names && dim_names[i] && dim_names[i][0]) {
				d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
				d->dim_param = xstrdup(dim_names[i]);
			}
			PUSH(s->n_dim, s->dim, d);
		}
		tt->shape = s;
	}
	t->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
	t->tensor_type = tt;
	v->type = t;
	return v;
}

void mb_input(struct mb_model *mb, const char *name, int dtype, int rank, const int64_t *dims,
              const char *const *dim_names)
{
	PUSH(mb->g->n_input, mb->g->input, value_info(name, dtype, rank, dims, dim_names));
}

void mb_output(struct mb_model *mb, const char *name, int dtype, int rank, const int64_t *dims,
               const char *const *dim_names)
{
	PUSH(mb->g->n_output, mb->g->output, value_info(name, dtype, rank, dims, dim_names));
}

static size_t count_of(int rank, const int64_t *dims)
{
	size_t n = 1;
	for (int i = 0; i < rank; i++)
		n *= (size_t)dims[i];
	return n;
}

static Onnx__TensorProto *tensor(const char *name, int dtype, int rank, const int64_t *dims,
                                 const void *data, int typed)
{
	Onnx__TensorProto *t = xcalloc(1, sizeof *t);
	onnx__tensor_proto__init(t);
	t->name = xstrdup(name);
	t->has_data_type = 1;
	t->data_type = dtype;
	t->n_dims = (size_t)rank;
	t->dims = xcalloc((size_t)rank, sizeof(int64_t));
	if (rank)
		memcpy(t->dims, dims, (size_t)rank * sizeof(int64_t));
	size_t n = count_of(rank, dims);
	if (!data)
		return t; /* the cells live elsewhere (external data) */
	if (dtype == BASE_DT_STRING) {
		const char *const *s = data;
		t->n_string_data = n;
		t->string_data = xcalloc(n, sizeof *t->string_data);
		for (size_t i = 0; i < n; i++) {
			size_t len = strlen(s[i]);
			t->string_data[i].len = len;
			t->string_data[i].data = xcalloc(len + 1, 1);
			memcpy(t->string_data[i].data, s[i], len);
		}
		return t;
	}
	size_t esz = base_dtype_size(dtype);
	if (!typed) {
		t->has_raw_data = 1;
		t->raw_data.len = n * esz;
		t->raw_data.data = xcalloc(n * esz, 1);
		if (n)
			memcpy(t->raw_data.data, data, n * esz);
		return t;
	}
	switch (dtype) {
	case BASE_DT_FLOAT:
		t->n_float_data = n;
		t->float_data = xcalloc(n, sizeof(float));
		memcpy(t->float_data, data, n * sizeof(float));
		break;
	case BASE_DT_DOUBLE:
		t->n_double_data = n;
		t->double_data = xcalloc(n, sizeof(double));
		memcpy(t->double_data, data, n * sizeof(double));
		break;
	case BASE_DT_INT64:
		t->n_int64_data = n;
		t->int64_data = xcalloc(n, sizeof(int64_t));
		memcpy(t->int64_data, data, n * sizeof(int64_t));
		break;
	case BASE_DT_UINT32:
	case BASE_DT_UINT64:
		t->n_uint64_data = n;
		t->uint64_data = xcalloc(n, sizeof(uint64_t));
		for (size_t i = 0; i < n; i++)
			t->uint64_data[i] = dtype == BASE_DT_UINT32 ? ((const uint32_t *)data)[i]
			                                            : ((const uint64_t *)data)[i];
		break;
	default: /* int32 carries the small types, bool, float16 and bfloat16 bits */
		t->n_int32_data = n;
		t->int32_data = xcalloc(n, sizeof(int32_t));
		for (size_t i = 0; i < n; i++) {
			int32_t v;
			switch (dtype) {
			case BASE_DT_INT8: v = ((const int8_t *)data)[i]; break;
			case BASE_DT_UINT8:
			case BASE_DT_BOOL: v = ((const uint8_t *)data)[i]; break;
			case BASE_DT_INT16: v = ((const int16_t *)data)[i]; break;
			case BASE_DT_UINT16:
			case BASE_DT_FLOAT16:
			case BASE_DT_BFLOAT16: v = ((const uint16_t *)data)[i]; break;
			default: v = ((const int32_t *)data)[i]; break;
			}
			t->int32_data[i] = v;
		}
		break;
	}
	return t;
}

void mb_init(struct mb_model *mb, const char *name, int dtype, int rank, const int64_t *dims,
             const void *data)
{
	PUSH(mb->g->n_initializer, mb->g->initializer, tensor(name, dtype, rank, dims, data, 0));
}

void mb_init_typed(struct mb_model *mb, const char *name, int dtype, int rank,
                   const int64_t *dims, const void *data)
{
	PUSH(mb->g->n_initializer, mb->g->initializer, tensor(name, dtype, rank, dims, data, 1));
}

void mb_init_external(struct mb_model *mb, const char *name, int dtype, int rank,
                      const int64_t *dims, const char *location, int64_t offset)
{
	Onnx__TensorProto *t = tensor(name, dtype, rank, dims, NULL, 0);
	t->has_data_location = 1;
	t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
	char off[32], len[32];
	snprintf(off, sizeof off, "%lld", (long long)offset);
	snprintf(len, sizeof len, "%zu", count_of(rank, dims) * base_dtype_size(dtype));
	const char *kv[3][2] = { { "location", location }, { "offset", off }, { "length", len } };
	for (int i = 0; i < 3; i++) {
		Onnx__StringStringEntryProto *e = xcalloc(1, sizeof *e);
		onnx__string_string_entry_proto__init(e);
		e->key = xstrdup(kv[i][0]);
		e->value = xstrdup(kv[i][1]);
		PUSH(t->n_external_data, t->external_data, e);
	}
	PUSH(mb->g->n_initializer, mb->g->initializer, t);
}

/* Split "a,b,,c" into a repeated string field (empty entries kept). */
static void split_names(const char *list, size_t *count, char ***out)
{
	*count = 0;
	*out = NULL;
	if (!list || !list[0])
		return;
	const char *p = list;
	for (;;) {
		const char *q = strchr(p, ',');
		size_t len = q ? (size_t)(q - p) : strlen(p);
		char *s = xcalloc(len + 1, 1);
		memcpy(s, p, len);
		PUSH(*count, *out, s);
		if (!q)
			break;
		p = q + 1;
	}
}

struct mb_node *mb_node(struct mb_model *mb, const char *op, const char *inputs,
                        const char *outputs)
{
	Onnx__NodeProto *n = xcalloc(1, sizeof *n);
	onnx__node_proto__init(n);
	n->op_type = xstrdup(op);
	char name[64];
	snprintf(name, sizeof name, "%s_%zu", op, mb->g->n_node);
	n->name = xstrdup(name);
	split_names(inputs, &n->n_input, &n->input);
	split_names(outputs, &n->n_output, &n->output);
	PUSH(mb->g->n_node, mb->g->node, n);
	struct mb_node *h = xcalloc(1, sizeof *h);
	h->n = n;
	PUSH(mb->nhandles, mb->handles, h);
	return h;
}

void mb_node_domain(struct mb_node *h, const char *domain)
{
	free(h->n->domain);
	h->n->domain = xstrdup(domain);
}

static Onnx__AttributeProto *attr(struct mb_node *h, const char *name, int type)
{
	Onnx__AttributeProto *a = xcalloc(1, sizeof *a);
	onnx__attribute_proto__init(a);
	a->name = xstrdup(name);
	a->has_type = 1;
	a->type = type;
	PUSH(h->n->n_attribute, h->n->attribute, a);
	return a;
}

void mb_attr_int(struct mb_node *h, const char *name, int64_t v)
{
	Onnx__AttributeProto *a = attr(h, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
	a->has_i = 1;
	a->i = v;
}

void mb_attr_float(struct mb_node *h, const char *name, float v)
{
	Onnx__AttributeProto *a = attr(h, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
	a->has_f = 1;
	a->f = v;
}

void mb_attr_string(struct mb_node *h, const char *name, const char *v)
{
	Onnx__AttributeProto *a = attr(h, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
	a->has_s = 1;
	a->s.len = strlen(v);
	a->s.data = (uint8_t *)xstrdup(v);
}

void mb_attr_ints(struct mb_node *h, const char *name, size_t count, const int64_t *v)
{
	Onnx__AttributeProto *a = attr(h, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
	a->n_ints = count;
	a->ints = xcalloc(count, sizeof(int64_t));
	if (count)
		memcpy(a->ints, v, count * sizeof(int64_t));
}

void mb_attr_floats(struct mb_node *h, const char *name, size_t count, const float *v)
{
	Onnx__AttributeProto *a = attr(h, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
	a->n_floats = count;
	a->floats = xcalloc(count, sizeof(float));
	if (count)
		memcpy(a->floats, v, count * sizeof(float));
}

void mb_attr_tensor(struct mb_node *h, const char *name, int dtype, int rank,
                    const int64_t *dims, const void *data)
{
	Onnx__AttributeProto *a = attr(h, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
	a->t = tensor("", dtype, rank, dims, data, 0);
}

int mb_serialize(struct mb_model *mb, void **buf, size_t *n)
{
	size_t size = onnx__model_proto__get_packed_size(mb->m);
	uint8_t *b = xcalloc(size, 1);
	onnx__model_proto__pack(mb->m, b);
	*buf = b;
	*n = size;
	return 0;
}

static int write_all(const char *path, const void *buf, size_t n)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return errno;
	int e = 0;
	if (n && fwrite(buf, 1, n, f) != n)
		e = errno ? errno : EIO;
	if (fclose(f) != 0 && !e)
		e = errno;
	return e;
}

int mb_save(struct mb_model *mb, const char *path)
{
	void *buf;
	size_t n;
	mb_serialize(mb, &buf, &n);
	int e = write_all(path, buf, n);
	free(buf);
	return e;
}

void mb_free(struct mb_model *mb)
{
	if (!mb)
		return;
	protobuf_c_message_free_unpacked(&mb->m->base, NULL);
	for (size_t i = 0; i < mb->nhandles; i++)
		free(mb->handles[i]);
	free(mb->handles);
	free(mb);
}

int mb_save_tensor(const char *path, const char *name, int dtype, int rank, const int64_t *dims,
                   const void *data)
{
	Onnx__TensorProto *t = tensor(name, dtype, rank, dims, data, 0);
	size_t size = onnx__tensor_proto__get_packed_size(t);
	uint8_t *b = xcalloc(size, 1);
	onnx__tensor_proto__pack(t, b);
	int e = write_all(path, b, size);
	free(b);
	protobuf_c_message_free_unpacked(&t->base, NULL);
	return e;
}
