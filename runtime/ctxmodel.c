/*
 * ctxmodel.c: the ONNX model that stands for a compiled context: the
 * source's inputs and outputs around one com.microsoft EPContext node with
 * source="Strata", built as protobuf-c messages and written in one go.
 */
#include <stdio.h>
#include <string.h>

#include "onnx.pb-c.h"
#include "ctxfile.h"

/* Protobuf messages of the context model, allocated from one set of blocks. */
struct pbw {
	struct rt_blocks mem;
	int oom;
};

static void *pbw_new(struct pbw *w, size_t n)
{
	void *p = rt_blocks_alloc(&w->mem, n);
	w->oom |= !p;
	return p;
}

static Onnx__TypeProto *tensor_type(struct pbw *w, int dtype, const struct rt_value_info *vi)
{
	Onnx__TypeProto *tp = pbw_new(w, sizeof *tp);
	Onnx__TypeProto__Tensor *tt = pbw_new(w, sizeof *tt);
	if (!tp || !tt)
		return NULL;
	onnx__type_proto__init(tp);
	onnx__type_proto__tensor__init(tt);
	tt->has_elem_type = 1;
	tt->elem_type = dtype;
	tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
	tp->tensor_type = tt;
	if (!vi || vi->rank < 0)
		return tp;
	Onnx__TensorShapeProto *sh = pbw_new(w, sizeof *sh);
	Onnx__TensorShapeProto__Dimension **dims = pbw_new(w, (size_t)(vi->rank + 1) * sizeof *dims);
	if (!sh || !dims)
		return NULL;
	onnx__tensor_shape_proto__init(sh);
	for (int d = 0; d < vi->rank; d++) {
		Onnx__TensorShapeProto__Dimension *dm = pbw_new(w, sizeof *dm);
		if (!dm)
			return NULL;
		onnx__tensor_shape_proto__dimension__init(dm);
		if (vi->dims[d] >= 0) {
			dm->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
			dm->dim_value = vi->dims[d];
		} else if (vi->dim_names[d] && *vi->dim_names[d]) {
			dm->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
			dm->dim_param = (char *)vi->dim_names[d];
		}
		dims[d] = dm;
	}
	sh->n_dim = (size_t)vi->rank;
	sh->dim = dims;
	tt->shape = sh;
	return tp;
}

/* A sequence (optional = 0) or an optional (1) of tp; NULL when tp is. */
static Onnx__TypeProto *wrap_type(struct pbw *w, Onnx__TypeProto *tp, int optional)
{
	Onnx__TypeProto *o = pbw_new(w, sizeof *o);
	if (!o || !tp)
		return NULL;
	onnx__type_proto__init(o);
	if (optional) {
		Onnx__TypeProto__Optional *ot = pbw_new(w, sizeof *ot);
		if (!ot)
			return NULL;
		onnx__type_proto__optional__init(ot);
		ot->elem_type = tp;
		o->value_case = ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE;
		o->optional_type = ot;
	} else {
		Onnx__TypeProto__Sequence *st = pbw_new(w, sizeof *st);
		if (!st)
			return NULL;
		onnx__type_proto__sequence__init(st);
		st->elem_type = tp;
		o->value_case = ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE;
		o->sequence_type = st;
	}
	return o;
}

static Onnx__ValueInfoProto *value_info(struct pbw *w, const struct rt_value_info *vi)
{
	Onnx__ValueInfoProto *v = pbw_new(w, sizeof *v);
	if (!v)
		return NULL;
	onnx__value_info_proto__init(v);
	v->name = (char *)vi->name;
	int seq = vi->kind == RT_KIND_SEQUENCE || vi->kind == RT_KIND_OPTIONAL_SEQUENCE;
	Onnx__TypeProto *tp = tensor_type(w, vi->dtype, seq ? NULL : vi);
	if (seq)
		tp = wrap_type(w, tp, 0);
	if (vi->kind == RT_KIND_OPTIONAL_TENSOR || vi->kind == RT_KIND_OPTIONAL_SEQUENCE)
		tp = wrap_type(w, tp, 1);
	v->type = tp;
	return tp ? v : NULL;
}

static Onnx__AttributeProto *attr_new(struct pbw *w, const char *name, int type)
{
	Onnx__AttributeProto *a = pbw_new(w, sizeof *a);
	if (!a)
		return NULL;
	onnx__attribute_proto__init(a);
	a->name = (char *)name;
	a->has_type = 1;
	a->type = type;
	return a;
}

static Onnx__AttributeProto *attr_int(struct pbw *w, const char *name, int64_t i)
{
	Onnx__AttributeProto *a = attr_new(w, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
	if (a) {
		a->has_i = 1;
		a->i = i;
	}
	return a;
}

static Onnx__AttributeProto *attr_bytes(struct pbw *w, const char *name, const void *p, size_t n)
{
	Onnx__AttributeProto *a = attr_new(w, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
	if (a) {
		a->has_s = 1;
		a->s.data = (uint8_t *)p;
		a->s.len = n;
	}
	return a;
}

static Onnx__AttributeProto *attr_str(struct pbw *w, const char *name, const char *s)
{
	return attr_bytes(w, name, s, strlen(s));
}

int rt_ctxmodel_write(const struct rt_model *m, const struct rt_ctxnode *cn, const char *path,
                      struct strata_error *err)
{
	struct pbw w = { { 0 }, 0 };
	const struct rt_graph *g = &m->g;
	char notes[256];
	snprintf(notes, sizeof notes,
	         "Strata compiled graph: %d nodes, weights packed for %s kernels; run it with Strata "
	         "%s",
	         g->nnodes, runtime_isa(), STRATA_VERSION);
	char arch[32];
	snprintf(arch, sizeof arch, "x86_64-%s", runtime_isa());

	Onnx__AttributeProto *attrs[10] = {
		attr_int(&w, "main_context", 1),
		attr_bytes(&w, "ep_cache_context", cn->cache, cn->ncache),
		attr_int(&w, "embed_mode", cn->embed),
		attr_str(&w, "ep_sdk_version", STRATA_VERSION),
		attr_str(&w, "onnx_model_filename", cn->source_file),
		attr_str(&w, "hardware_architecture", arch),
		attr_str(&w, "partition_name", cn->part),
		attr_str(&w, "source", RT_CTX_SOURCE),
		attr_str(&w, "notes", notes),
		attr_int(&w, "max_size", (int64_t)cn->weight_bytes),
	};
	Onnx__NodeProto node;
	onnx__node_proto__init(&node);
	node.name = (char *)cn->part;
	node.op_type = "EPContext";
	node.domain = "com.microsoft";
	node.n_attribute = 10;
	node.attribute = attrs;
	node.n_input = (size_t)g->ninputs;
	node.input = pbw_new(&w, (size_t)(g->ninputs + 1) * sizeof(char *));
	node.n_output = (size_t)g->noutputs;
	node.output = pbw_new(&w, (size_t)(g->noutputs + 1) * sizeof(char *));
	Onnx__ValueInfoProto **ins = pbw_new(&w, (size_t)(g->ninputs + 1) * sizeof *ins);
	Onnx__ValueInfoProto **outs = pbw_new(&w, (size_t)(g->noutputs + 1) * sizeof *outs);
	for (int k = 0; !w.oom && k < g->ninputs; k++) {
		node.input[k] = (char *)g->input_info[k].name;
		w.oom |= !(ins[k] = value_info(&w, &g->input_info[k]));
	}
	for (int k = 0; !w.oom && k < g->noutputs; k++) {
		node.output[k] = (char *)g->output_info[k].name;
		w.oom |= !(outs[k] = value_info(&w, &g->output_info[k]));
	}
	Onnx__NodeProto *nodes[1] = { &node };
	Onnx__GraphProto graph;
	onnx__graph_proto__init(&graph);
	graph.name = (char *)cn->part;
	graph.n_node = 1;
	graph.node = nodes;
	graph.n_input = (size_t)g->ninputs;
	graph.input = ins;
	graph.n_output = (size_t)g->noutputs;
	graph.output = outs;

	/* the source's opsets, and com.microsoft for the node */
	int nops = m->nopsets + 2;
	Onnx__OperatorSetIdProto *ops = pbw_new(&w, (size_t)nops * sizeof *ops);
	Onnx__OperatorSetIdProto **opp = pbw_new(&w, (size_t)nops * sizeof *opp);
	Onnx__ModelProto mp;
	onnx__model_proto__init(&mp);
	int rc = 0;
	if (!w.oom) {
		int k = 0, ms = 0;
		onnx__operator_set_id_proto__init(&ops[k]);
		ops[k].domain = "";
		ops[k].has_version = 1;
		ops[k].version = m->opset > 0 ? m->opset : 1;
		k++;
		for (int i = 0; i < m->nopsets; i++) {
			onnx__operator_set_id_proto__init(&ops[k]);
			ops[k].domain = m->opset_domains[i];
			ops[k].has_version = 1;
			ops[k].version = m->opset_versions[i];
			ms |= strcmp(m->opset_domains[i], "com.microsoft") == 0;
			k++;
		}
		if (!ms) {
			onnx__operator_set_id_proto__init(&ops[k]);
			ops[k].domain = "com.microsoft";
			ops[k].has_version = 1;
			ops[k].version = 1;
			k++;
		}
		for (int i = 0; i < k; i++)
			opp[i] = &ops[i];
		mp.has_ir_version = 1;
		mp.ir_version = m->ir_version >= 3 ? m->ir_version : 8;
		mp.n_opset_import = (size_t)k;
		mp.opset_import = opp;
		mp.producer_name = "strata";
		mp.producer_version = STRATA_VERSION;
		mp.graph = &graph;
		size_t n = onnx__model_proto__get_packed_size(&mp);
		uint8_t *buf = base_alloc(n ? n : 1);
		if (!buf) {
			rc = base_nomem(err, "the context model");
		} else {
			onnx__model_proto__pack(&mp, buf);
			rc = base_write_file(path, buf, n, err);
			base_free(buf, n ? n : 1);
		}
	} else {
		rc = base_nomem(err, "the context model");
	}
	rt_blocks_free(&w.mem);
	return rc;
}
