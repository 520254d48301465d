/*
 * api.c: the parts of strata.h that are not about one open application's
 * documents: deploying, a summary of an open application, single models
 * (struct strata_model over the runtime's model and run context),
 * compiled contexts, element types, the library's JSON printer, timeouts
 * and the kernels in use.
 *
 * It sits on top of the engine and the runtime and adds no behaviour of
 * its own beyond translating names: element types cross the public API as
 * strings (base_dtype_name / base_dtype_from_name) and tensors as struct
 * strata_tensor, copied field by field into the runtime's struct
 * rt_tensor.  The programs (cli/, serve/) reach the library only through
 * here and strata.h's other functions.
 *
 * Invariant: a struct strata_model holds everything a run needs (the run
 * context and the arrays of runtime tensors), made when it opens, so that
 * strata_model_run() allocates nothing of its own.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "engine_int.h"
#include "../runtime/runtime.h"

_Static_assert(STRATA_MAX_RANK == RT_MAX_RANK, "a public tensor has the runtime's ranks");

/* ---- deploying, and what an application holds --------------------------------------- */

int strata_deploy(const char *app, const struct strata_options *opts, struct strata **out,
                  struct strata_error *err)
{
	return eng_open(app, opts, ENG_OPEN_DEPLOY, out, err);
}

void strata_app_info(struct strata *db, struct strata_app_info *info)
{
	info->data_dir = db->datadir;
	info->ndoctypes = db->ndoctypes;
	info->ncompiled = db->ncontexts;
}

const char *strata_doctype_name(struct strata *db, int i)
{
	return i >= 0 && i < db->ndoctypes ? db->doctypes[i].name : NULL;
}

/* ---- checking the store ------------------------------------------------------------- */

/* The checks of one document type into o; 0 or the first fault. */
static int check_doctype(const struct eng_doctype *dt, struct store_txn *txn,
                         json_t *o, struct strata_error *err)
{
	uint64_t postings = 0;
	int dicts = 0, graphs = 0;
	const char *field = NULL; /* the field whose check failed, NULL: the text index */
	int rc = store_text_check(txn, dt->store_id, &postings, err);
	for (int f = 0; !rc && f < dt->nfields; f++) {
		field = dt->fields[f].name;
		if (dt->fields[f].fast_search) {
			rc = store_dict_check(txn, dt->store_id, f, err);
			dicts++;
		}
		if (!rc && dt->fields[f].hnsw_metric) {
			rc = store_hnsw_check(txn, dt->store_id, f, NULL, err);
			graphs++;
		}
	}
	if (rc) { /* where: the doctype, and the field past the text index */
		char msg[sizeof err->msg];
		memcpy(msg, err->msg, sizeof msg);
		if (dicts || graphs)
			return base_err(err, rc, "%s.%s: %s", dt->name, field, msg);
		return base_err(err, rc, "%s: %s", dt->name, msg);
	}
	if (!rc && (json_object_set_new(o, "name", json_string(dt->name)) ||
	            json_object_set_new(o, "documents",
	                                json_integer((json_int_t)store_count(txn, dt->store_id))) ||
	            json_object_set_new(o, "postings", json_integer((json_int_t)postings)) ||
	            json_object_set_new(o, "dictionaries", json_integer(dicts)) ||
	            json_object_set_new(o, "graphs", json_integer(graphs))))
		rc = base_nomem(err, "the check's report");
	return rc;
}

int strata_check(struct strata *db, char **report, struct strata_error *err)
{
	struct store_txn *txn;
	if (report)
		*report = NULL;
	int rc = store_txn_begin(db->env, 0, &txn, err);
	if (rc)
		return rc;
	json_t *top = json_object(), *arr = json_array();
	if (!top || !arr || json_object_set(top, "doctypes", arr))
		rc = base_nomem(err, "the check's report");
	for (int i = 0; !rc && i < db->ndoctypes; i++) {
		json_t *o = json_object();
		rc = !o || json_array_append_new(arr, o) ? base_nomem(err, "the check's report")
		                                         : check_doctype(&db->doctypes[i], txn, o, err);
	}
	store_txn_abort(txn);
	if (!rc && report && !(*report = eng_json_dump(top, 0)))
		rc = base_nomem(err, "the check's report");
	json_decref(arr);
	json_decref(top);
	return rc;
}

/* ---- models ------------------------------------------------------------------------ */

struct strata_model {
	struct rt_model *m;
	struct rt_ctx *cx;
	int nin, nout;
	struct rt_tensor *in, *out; /* nin and nout of them (at least one each) */
	struct strata_op_time *rows; /* the profile's rows, as strata_model_profile_rows copies */
};

static size_t tensors_size(int n)
{
	return (size_t)(n > 0 ? n : 1) * sizeof(struct rt_tensor);
}

int strata_model_open(const char *path, struct strata_model **out, struct strata_error *err)
{
	*out = NULL;
	if (!path || !*path)
		return base_err(err, STRATA_INVALID_ARGUMENT, "no model file given");
	struct strata_model *sm = base_calloc(1, sizeof *sm);
	if (!sm)
		return base_nomem(err, "%s", path);
	int rc = runtime_model_load(path, &sm->m, err);
	if (rc) {
		base_free(sm, sizeof *sm);
		return rc;
	}
	sm->nin = runtime_model_ninputs(sm->m);
	sm->nout = runtime_model_noutputs(sm->m);
	sm->in = base_calloc(1, tensors_size(sm->nin));
	sm->out = base_calloc(1, tensors_size(sm->nout));
	if (!sm->in || !sm->out) {
		strata_model_close(sm);
		return base_nomem(err, "%s", path);
	}
	if ((rc = runtime_ctx_new(sm->m, &sm->cx, err)) != 0) {
		strata_model_close(sm);
		return rc;
	}
	*out = sm;
	return 0;
}

void strata_model_close(struct strata_model *m)
{
	if (!m)
		return;
	if (m->cx)
		runtime_ctx_free(m->cx);
	runtime_model_free(m->m);
	if (m->in)
		base_free(m->in, tensors_size(m->nin));
	if (m->out)
		base_free(m->out, tensors_size(m->nout));
	base_free(m, sizeof *m);
}

int strata_model_ninputs(const struct strata_model *m)
{
	return m->nin;
}

int strata_model_noutputs(const struct strata_model *m)
{
	return m->nout;
}

static void describe(const struct rt_value_info *v, struct strata_value_info *info)
{
	static const char *const kinds[] = { "tensor", "sequence", "optional tensor",
		                             "optional sequence" };
	memset(info, 0, sizeof *info);
	info->name = v->name;
	info->kind = v->kind >= 0 && v->kind < 4 ? kinds[v->kind] : "tensor";
	info->dtype = base_dtype_name(v->dtype);
	info->rank = v->rank;
	for (int d = 0; d < v->rank && d < STRATA_MAX_RANK; d++) {
		info->dims[d] = v->dims[d];
		info->dim_names[d] = v->dims[d] < 0 && v->dim_names[d] ? v->dim_names[d] : "";
	}
}

int strata_model_input(const struct strata_model *m, int i, struct strata_value_info *info)
{
	if (i < 0 || i >= m->nin)
		return STRATA_NOT_FOUND;
	describe(runtime_model_input(m->m, i), info);
	return 0;
}

int strata_model_output(const struct strata_model *m, int i, struct strata_value_info *info)
{
	if (i < 0 || i >= m->nout)
		return STRATA_NOT_FOUND;
	describe(runtime_model_output(m->m, i), info);
	return 0;
}

int strata_model_input_index(const struct strata_model *m, const char *name)
{
	return name ? runtime_model_input_index(m->m, name) : -1;
}

int strata_model_output_index(const struct strata_model *m, const char *name)
{
	return name ? runtime_model_output_index(m->m, name) : -1;
}

int strata_model_run(struct strata_model *m, const struct strata_tensor *in,
                     struct strata_tensor *out, struct strata_error *err)
{
	for (int i = 0; i < m->nin; i++) {
		const struct rt_value_info *v = runtime_model_input(m->m, i);
		struct rt_tensor *t = &m->in[i];
		t->dtype = in[i].dtype ? base_dtype_from_name(in[i].dtype) : v->dtype;
		if (t->dtype == BASE_DT_UNDEFINED)
			return base_err(err, STRATA_INVALID_ARGUMENT,
			                "input \"%s\": unknown element type '%s' (float, int64, ...)",
			                v->name, in[i].dtype);
		if (in[i].rank < 0 || in[i].rank > STRATA_MAX_RANK)
			return base_err(err, STRATA_INVALID_ARGUMENT,
			                "input \"%s\": rank %d, expected 0 to %d", v->name, in[i].rank,
			                STRATA_MAX_RANK);
		t->rank = in[i].rank;
		memcpy(t->dims, in[i].dims, (size_t)t->rank * sizeof t->dims[0]);
		t->data = in[i].data;
	}
	int rc = runtime_run(m->cx, m->in, m->out, err);
	if (rc)
		return rc;
	for (int i = 0; i < m->nout; i++) {
		const struct rt_tensor *t = &m->out[i];
		out[i].dtype = base_dtype_name(t->dtype);
		out[i].rank = t->rank;
		memcpy(out[i].dims, t->dims, (size_t)t->rank * sizeof t->dims[0]);
		out[i].data = t->data;
	}
	return 0;
}

int strata_model_profile(struct strata_model *m, int on, struct strata_error *err)
{
	return runtime_ctx_profile(m->cx, on, err);
}

int strata_model_profile_rows(const struct strata_model *m, struct strata_op_time *rows, int cap)
{
	int n;
	const struct rt_op_time *r = runtime_ctx_profile_rows(m->cx, &n);
	for (int i = 0; i < n && i < cap; i++) {
		rows[i].op = r[i].op;
		rows[i].seconds = r[i].seconds;
		rows[i].calls = (unsigned long long)r[i].calls;
	}
	return n;
}

/* ---- compiled contexts -------------------------------------------------------------- */

int strata_model_compile(const char *src, const struct strata_compile_options *opts,
                         struct strata_error *err)
{
	static const struct strata_compile_options none;
	if (!opts)
		opts = &none;
	if (!src || !*src)
		return base_err(err, STRATA_INVALID_ARGUMENT, "no model file given");
	if (opts->share < 0 || opts->share > 2)
		return base_err(err, STRATA_INVALID_ARGUMENT, "%s: share is %d: 0, 1 or 2", src,
		                opts->share);
	struct eng_compile c = { opts->context, opts->prefix, opts->embed != 0, opts->share };
	char *written = NULL;
	int rc = eng_compile_model(src, &c, &written, err);
	base_strfree(written); /* opts->context, or the path beside src */
	/* The message names the model, whichever layer wrote it. */
	if (rc && err && strncmp(err->msg, src, strlen(src)) != 0) {
		char msg[STRATA_ERRMSG_MAX];
		snprintf(msg, sizeof msg, "%s", err->msg[0] ? err->msg : strata_strerror(rc));
		base_err(err, rc, "%s: %s", src, msg);
	}
	return rc;
}

char *strata_context_path(const char *dir, const char *src)
{
	return eng_context_path(dir && *dir ? dir : NULL, src);
}

char *strata_context_binary(const char *context, const char *src)
{
	return eng_context_binary(context, src);
}

/* ---- element types ------------------------------------------------------------------ */

/* The enum base_dtype of a numeric or bool type name, else BASE_DT_UNDEFINED. */
static int numeric(const char *dtype)
{
	int dt = dtype ? base_dtype_from_name(dtype) : BASE_DT_UNDEFINED;
	return dt == BASE_DT_STRING || dt == BASE_DT_COMPLEX64 || dt == BASE_DT_COMPLEX128
	     ? BASE_DT_UNDEFINED : dt;
}

size_t strata_dtype_size(const char *dtype)
{
	int dt = dtype ? base_dtype_from_name(dtype) : BASE_DT_UNDEFINED;
	return dt == BASE_DT_STRING ? 0 : base_dtype_size(dt);
}

int strata_tensor_get(const struct strata_tensor *t, size_t i, double *v)
{
	int dt = numeric(t->dtype);
	if (dt == BASE_DT_UNDEFINED)
		return STRATA_INVALID_ARGUMENT;
	*v = base_load_double(dt, t->data, i);
	return 0;
}

int strata_tensor_set(struct strata_tensor *t, size_t i, double v)
{
	int dt = numeric(t->dtype);
	if (dt == BASE_DT_UNDEFINED)
		return STRATA_INVALID_ARGUMENT;
	base_store_double(dt, t->data, i, v);
	return 0;
}

/* ---- JSON ------------------------------------------------------------------------------ */

char *strata_json_dump(const struct json_t *j, int flags)
{
	return j ? eng_json_dump(j, (flags & STRATA_JSON_PRETTY) != 0) : NULL;
}

struct json_t *strata_json_number(const char *dtype, double v)
{
	int dt = dtype ? base_dtype_from_name(dtype) : BASE_DT_UNDEFINED;
	return eng_json_number(dt == BASE_DT_UNDEFINED ? BASE_DT_DOUBLE : dt, v);
}

/* ---- requests ------------------------------------------------------------------------ */

int strata_timeout_parse(const char *text, double *seconds)
{
	if (!text)
		return STRATA_INVALID_ARGUMENT;
	double x;
	if (eng_timeout_text(text, &x))
		return STRATA_INVALID_ARGUMENT;
	*seconds = x;
	return 0;
}

/* ---- the build ------------------------------------------------------------------------ */

static char kernels[96];
static pthread_once_t kernels_once = PTHREAD_ONCE_INIT;

static void name_kernels(void)
{
	snprintf(kernels, sizeof kernels, "%s, int8: %s, bf16_weights: %s", runtime_isa(),
	         runtime_int8_isa(), runtime_bf16_isa());
}

const char *strata_kernels(void)
{
	pthread_once(&kernels_once, name_kernels);
	return kernels;
}
