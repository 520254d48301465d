/*
 * modeleval.c: stateless model evaluation, as Vespa's container offers it
 * (/model-evaluation/v1/), over the ONNX models of an application's models/
 * folder.
 *
 * strata_modeleval_open() reads APP/services.xml (is <model-evaluation/> in a
 * <container>, and are its settings ones Strata takes), walks APP/models/
 * for .onnx files and names each as Vespa does: its path under models/
 * without the extension, '/' and '.' made '_'.  A model is loaded on its
 * first use (eng_model_for: from its compiled context while that is fresh,
 * else from the source) and keeps one run context; its functions are its
 * outputs and their arguments its inputs, named as valid identifiers and
 * typed as Vespa types ONNX values (float16 as float, the integer types but
 * int8 as double, a symbolic dimension unbound: tensor<float>(d0[],d1[3])).
 *
 * An evaluation binds each argument from a Vespa tensor literal or a JSON
 * tensor (sizes of unbound dimensions from the value), converts it to the
 * element type the model declares, runs the model and writes the output in
 * the format asked for (format.tensors).  The messages of failures are
 * Vespa's, with a detail after them where Vespa has none.
 *
 * Invariants: the model list is fixed at open; a model's load, its run
 * context and its runs are under the model's lock, so runs of one model are
 * serialized and runs of different models go on at once.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <expat.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "engine_int.h"
#include "../runtime/runtime.h"

#define MAX_MODELS 4096
#define MAX_DEPTH 16          /* folders under models/ */
#define MAX_CELLS (1 << 24)   /* of one argument */
#define MAX_TEXT (64u << 20)  /* of a string-format answer */

struct me_value {
	char *name;           /* a valid identifier made of the ONNX name */
	int dtype;            /* the model's element type */
	int cell;             /* Vespa's cell type (BASE_DT_FLOAT, DOUBLE, INT8, BFLOAT16) */
	int rank;
	int64_t dims[RT_MAX_RANK]; /* -1: unbound */
	char type[160];       /* Vespa's type, "tensor<float>(d0[],d1[3])" */
};

struct me_model {
	char *name, *file, *path; /* Vespa's name; "models/x.onnx"; joined to the application */
	pthread_mutex_t lock;
	int tried;                /* the load was made (rc says how it went) */
	int rc;
	char msg[STRATA_ERRMSG_MAX];
	struct rt_model *m;
	struct rt_ctx *cx;
	int nin, nout;
	struct me_value *in, *out;
	int *sorted;              /* input indexes by argument name */
};

struct strata_modeleval {
	int n;
	size_t cap;
	struct me_model *models;  /* by name; cap allocated */
	struct eng_models ms;     /* compiled contexts (under load_lock) */
	pthread_mutex_t load_lock;
};

/* ---- names -------------------------------------------------------------------------- */

/* Vespa's asValidIdentifier: characters other than letters, digits, '_',
 * '$' and '@' become '_'. */
static char *identifier(const char *s)
{
	char *r = base_strdup(s);
	for (char *p = r; p && *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '_' && *p != '$' && *p != '@')
			*p = '_';
	return r;
}

static int cmp_model(const void *a, const void *b)
{
	return strcmp(((const struct me_model *)a)->name, ((const struct me_model *)b)->name);
}

struct scan {
	struct strata_modeleval *me;
	const char *app;
	struct strata_error *err;
};

/* rel: the folder under the application ("models", "models/sub"). */
static int scan_dir(struct scan *sc, const char *rel, int depth)
{
	char *dir = base_path_join(sc->app, rel);
	if (!dir)
		return base_nomem(sc->err, "%s", rel);
	DIR *d = opendir(dir);
	if (!d) {
		int e = errno;
		base_strfree(dir);
		if (e == ENOENT && depth == 0)
			return 0; /* no models/: no models */
		return base_err(sc->err, e, "%s: %s", rel, strerror(e));
	}
	int rc = 0;
	struct dirent *de;
	while (!rc && (de = readdir(d))) {
		const char *nm = de->d_name;
		if (nm[0] == '.')
			continue;
		char *file = base_strprintf("%s/%s", rel, nm), *path = base_path_join(dir, nm);
		struct stat st;
		if (!file || !path) {
			rc = base_nomem(sc->err, "%s", rel);
		} else if (stat(path, &st) != 0) {
			rc = base_err(sc->err, errno, "%s: %s", file, strerror(errno));
		} else if (S_ISDIR(st.st_mode)) {
			rc = depth + 1 >= MAX_DEPTH
			             ? base_err(sc->err, STRATA_LIMIT, "%s: folders nest too deep", file)
			             : scan_dir(sc, file, depth + 1);
		} else if (strlen(nm) > 5 && !strcmp(nm + strlen(nm) - 5, ".onnx")) {
			/* Vespa's name: the path under models/ without the extension,
			 * each part letters, digits, '_' or '.' only. */
			const char *under = file + strlen("models/");
			char *name = base_strndup(under, strlen(under) - 5);
			for (char *p = name; p && *p && !rc; p++) {
				if (*p == '/' || *p == '.')
					*p = '_';
				else if (!isalnum((unsigned char)*p) && *p != '_')
					rc = base_err(sc->err, STRATA_INVALID_ARGUMENT,
					              "%s: a model's name is made of its path under models/, "
					              "which may hold only letters, digits, '_' and '.': rename it",
					              file);
			}
			if (!name && !rc)
				rc = base_nomem(sc->err, "%s", file);
			struct strata_modeleval *me = sc->me;
			if (!rc && base_grow((void **)&me->models, &me->cap, (size_t)me->n + 1,
			                     sizeof *me->models, MAX_MODELS))
				rc = base_err(sc->err, STRATA_LIMIT, "%s: more than %d models", file,
				              MAX_MODELS);
			if (rc) {
				base_strfree(name);
			} else {
				struct me_model *m = &me->models[me->n++];
				memset(m, 0, sizeof *m);
				m->name = name;
				m->file = file;
				m->path = path;
				pthread_mutex_init(&m->lock, NULL);
				file = path = NULL;
			}
		}
		base_strfree(file);
		base_strfree(path);
	}
	closedir(d);
	base_strfree(dir);
	return rc;
}

/* ---- services.xml --------------------------------------------------------------------- */

struct xml {
	XML_Parser xp;
	const char *path;
	char stack[MAX_DEPTH][24]; /* element names, "" past the 23rd byte */
	int depth;
	int enabled;
	int rc;
	struct strata_error *err;
	/* <model name=".."> of <model-evaluation><onnx><models>, checked once the
	 * models are known */
	char *names[64];
	int lines[64], cols[64], nnames;
};


static void xml_fail(struct xml *x, int code, const char *what)
{
	if (!x->rc)
		x->rc = base_err(x->err, code, "%s:%d:%d: %s", x->path,
		                 (int)XML_GetCurrentLineNumber(x->xp),
		                 (int)XML_GetCurrentColumnNumber(x->xp) + 1, what);
	XML_StopParser(x->xp, XML_FALSE);
}

static const char *up(const struct xml *x, int k)
{
	return x->depth - k >= 0 ? x->stack[x->depth - k] : "";
}

static void on_start(void *ud, const char *el, const char **atts)
{
	struct xml *x = ud;
	if (x->rc)
		return;
	if (x->depth + 1 >= MAX_DEPTH) {
		x->depth++;
		return;
	}
	/* Where inside <model-evaluation> this element is (0: outside). */
	int in_me = 0;
	for (int i = 0; i <= x->depth; i++)
		if (!strcmp(x->stack[i], "model-evaluation"))
			in_me = x->depth - i + 1;
	x->depth++;
	snprintf(x->stack[x->depth], sizeof x->stack[0], "%s", strlen(el) < 24 ? el : "");
	if (!strcmp(el, "model-evaluation") && !in_me) {
		if (strcmp(up(x, 1), "container"))
			return xml_fail(x, STRATA_PARSE, "<model-evaluation> belongs in a <container>");
		for (int i = 0; atts[i]; i += 2) {
			char msg[160];
			snprintf(msg, sizeof msg, "<model-evaluation %.60s=...> is not supported",
			         atts[i]);
			return xml_fail(x, STRATA_NOT_IMPLEMENTED, msg);
		}
		x->enabled = 1;
		return;
	}
	if (!in_me)
		return;
	/* The ONNX inference options: <onnx><models><model name="..">
	 * <intraop-threads>, <interop-threads>, <execution-mode>, <gpu-device>:
	 * taken, and they change nothing (a model runs on the calling thread). */
	static const char *const opts[] = { "intraop-threads", "interop-threads", "execution-mode",
		                            "gpu-device" };
	int ok = (in_me == 1 && !strcmp(el, "onnx")) || (in_me == 2 && !strcmp(el, "models")) ||
	         (in_me == 3 && !strcmp(el, "model"));
	for (size_t i = 0; in_me == 4 && i < sizeof opts / sizeof *opts; i++)
		ok |= !strcmp(el, opts[i]);
	if (!ok) {
		char msg[320];
		snprintf(msg, sizeof msg, "<%.40s> is not supported in <model-evaluation> (<onnx><models>"
		         "<model name=\"..\"> with intraop-threads, interop-threads, execution-mode, "
		         "gpu-device)", el);
		return xml_fail(x, STRATA_NOT_IMPLEMENTED, msg);
	}
	if (in_me == 3) {
		const char *name = NULL;
		for (int i = 0; atts[i]; i += 2)
			if (!strcmp(atts[i], "name"))
				name = atts[i + 1];
		if (!name)
			return xml_fail(x, STRATA_PARSE, "<model> needs a name attribute");
		if (x->nnames == 64)
			return xml_fail(x, STRATA_LIMIT, "more than 64 <model> elements");
		if (!(x->names[x->nnames] = base_strdup(name)))
			return xml_fail(x, STRATA_NOMEM, "out of memory");
		x->lines[x->nnames] = (int)XML_GetCurrentLineNumber(x->xp);
		x->cols[x->nnames++] = (int)XML_GetCurrentColumnNumber(x->xp) + 1;
	}
}

static void on_end(void *ud, const char *el)
{
	(void)el;
	struct xml *x = ud;
	if (x->depth > 0)
		x->depth--;
}

/* *enabled: 1 when there is no services.xml or a container of it has
 * <model-evaluation/>. */
static int read_services(struct strata_modeleval *me, const char *app, int *enabled,
                         struct strata_error *err)
{
	char *path = base_path_join(app, "services.xml");
	if (!path)
		return base_nomem(err, "services.xml");
	char *text;
	size_t n;
	struct strata_error e2;
	int rc = base_read_file(path, &text, &n, &e2);
	if (rc == ENOENT) {
		base_strfree(path);
		*enabled = 1;
		return 0;
	}
	if (rc) {
		base_strfree(path);
		*err = e2;
		return rc;
	}
	struct xml x = { .path = "services.xml", .err = err, .depth = -1 };
	x.xp = eng_xml_parser();
	if (!x.xp) {
		rc = base_nomem(err, "services.xml");
	} else {
		XML_SetUserData(x.xp, &x);
		XML_SetElementHandler(x.xp, on_start, on_end);
		if (XML_Parse(x.xp, text, (int)n, XML_TRUE) == XML_STATUS_ERROR && !x.rc)
			x.rc = base_err(err, STRATA_PARSE, "services.xml:%d:%d: %s",
			                (int)XML_GetCurrentLineNumber(x.xp),
			                (int)XML_GetCurrentColumnNumber(x.xp) + 1,
			                XML_ErrorString(XML_GetErrorCode(x.xp)));
		rc = x.rc;
		XML_ParserFree(x.xp);
	}
	/* Settings of a model that is not there would be lost: refused. */
	for (int i = 0; !rc && i < x.nnames; i++) {
		int found = 0;
		for (int k = 0; k < me->n; k++)
			found |= !strcmp(me->models[k].name, x.names[i]);
		if (!found)
			rc = base_err(err, STRATA_INVALID_ARGUMENT,
			              "services.xml:%d:%d: <model name=\"%s\">: models/ has no such model",
			              x.lines[i], x.cols[i], x.names[i]);
	}
	for (int i = 0; i < x.nnames; i++)
		base_strfree(x.names[i]);
	base_free(text, n + 1);
	base_strfree(path);
	*enabled = x.enabled;
	return rc;
}

/* ---- open and close --------------------------------------------------------------------- */

static void model_unload(struct me_model *m)
{
	if (m->cx)
		runtime_ctx_free(m->cx);
	if (m->m)
		runtime_model_free(m->m);
	for (int i = 0; m->in && i < m->nin; i++)
		base_strfree(m->in[i].name);
	for (int i = 0; m->out && i < m->nout; i++)
		base_strfree(m->out[i].name);
	size_t nin = (size_t)(m->nin ? m->nin : 1), nout = (size_t)(m->nout ? m->nout : 1);
	if (m->in)
		base_free(m->in, nin * sizeof *m->in);
	if (m->out)
		base_free(m->out, nout * sizeof *m->out);
	if (m->sorted)
		base_free(m->sorted, nin * sizeof *m->sorted);
	m->cx = NULL;
	m->m = NULL;
	m->in = m->out = NULL;
	m->sorted = NULL;
}

void strata_modeleval_close(struct strata_modeleval *me)
{
	if (!me)
		return;
	for (int i = 0; i < me->n; i++) {
		struct me_model *m = &me->models[i];
		model_unload(m);
		pthread_mutex_destroy(&m->lock);
		base_strfree(m->name);
		base_strfree(m->file);
		base_strfree(m->path);
	}
	if (me->models)
		base_free(me->models, me->cap * sizeof *me->models);
	eng_models_release(&me->ms);
	pthread_mutex_destroy(&me->load_lock);
	base_free(me, sizeof *me);
}

int strata_modeleval_open(struct strata *db, struct strata_modeleval **out,
                          struct strata_error *err)
{
	*out = NULL;
	struct strata_modeleval *me = base_calloc(1, sizeof *me);
	if (!me)
		return base_nomem(err, "model evaluation");
	pthread_mutex_init(&me->load_lock, NULL);
	struct scan sc = { me, db->appdir, err };
	int rc = eng_models_init(&me->ms, db->datadir, 0, 1, NULL, NULL, err);
	if (!rc)
		rc = scan_dir(&sc, "models", 0);
	if (!rc) {
		qsort(me->models, (size_t)me->n, sizeof *me->models, cmp_model);
		for (int i = 1; i < me->n && !rc; i++)
			if (!strcmp(me->models[i - 1].name, me->models[i].name))
				rc = base_err(err, STRATA_INVALID_ARGUMENT,
				              "the models in %s and %s both resolve to the model name '%s'",
				              me->models[i - 1].file, me->models[i].file,
				              me->models[i].name);
	}
	int enabled = 0;
	if (!rc)
		rc = read_services(me, db->appdir, &enabled, err);
	if (!rc && !enabled)
		rc = base_err(err, STRATA_NOT_FOUND, "model evaluation is not enabled: services.xml has "
		              "no <model-evaluation/> in a <container>");
	if (rc) {
		strata_modeleval_close(me);
		return rc;
	}
	*out = me;
	return 0;
}

/* ---- a model's functions and arguments ---------------------------------------------------- */

/* Vespa's cell type for an ONNX element type. */
static int vespa_cell(int dtype)
{
	switch (dtype) {
	case BASE_DT_INT8: return BASE_DT_INT8;
	case BASE_DT_BFLOAT16: return BASE_DT_BFLOAT16;
	case BASE_DT_FLOAT16: case BASE_DT_FLOAT: return BASE_DT_FLOAT;
	default: return BASE_DT_DOUBLE;
	}
}

static void type_str(int cell, int rank, const int64_t *dims, char *buf, size_t n)
{
	size_t off = (size_t)snprintf(buf, n, cell == BASE_DT_DOUBLE ? "tensor(" : "tensor<%s>(",
	                              base_dtype_name(cell));
	for (int i = 0; i < rank && off < n; i++) {
		if (dims[i] < 0)
			off += (size_t)snprintf(buf + off, n - off, "%sd%d[]", i ? "," : "", i);
		else
			off += (size_t)snprintf(buf + off, n - off, "%sd%d[%lld]", i ? "," : "", i,
			                        (long long)dims[i]);
	}
	if (off < n)
		snprintf(buf + off, n - off, ")");
}

static int describe_value(const struct me_model *m, const struct rt_value_info *v, const char *what,
                          struct me_value *mv, struct strata_error *err)
{
	if (v->kind != RT_KIND_TENSOR)
		return base_err(err, STRATA_NOT_IMPLEMENTED, "%s: %s '%s' is not a tensor: it has no "
		                "Vespa tensor type", m->file, what, v->name);
	if (v->rank < 0)
		return base_err(err, STRATA_NOT_IMPLEMENTED, "%s: %s '%s' declares no shape: it has no "
		                "Vespa tensor type", m->file, what, v->name);
	if (v->dtype == BASE_DT_STRING)
		return base_err(err, STRATA_NOT_IMPLEMENTED, "%s: %s '%s' holds strings: Vespa tensors "
		                "hold numbers", m->file, what, v->name);
	if (!(mv->name = identifier(v->name)))
		return base_nomem(err, "%s", m->file);
	mv->dtype = v->dtype;
	mv->cell = vespa_cell(v->dtype);
	mv->rank = v->rank;
	for (int d = 0; d < v->rank; d++)
		mv->dims[d] = v->dims[d] > 0 ? v->dims[d] : -1;
	type_str(mv->cell, mv->rank, mv->dims, mv->type, sizeof mv->type);
	return 0;
}

static struct me_model *sort_model; /* for cmp_arg, under load_lock */
static int cmp_arg(const void *a, const void *b)
{
	return strcmp(sort_model->in[*(const int *)a].name, sort_model->in[*(const int *)b].name);
}

/* Load m once (under m->lock); the failure of the first try is kept. */
static int model_load(struct strata_modeleval *me, struct me_model *m, struct strata_error *err)
{
	if (m->tried) {
		if (m->rc)
			base_err(err, m->rc, "%s", m->msg);
		return m->rc;
	}
	struct strata_error e = { 0 };
	pthread_mutex_lock(&me->load_lock);
	int rc = eng_model_for(&me->ms, m->file, m->path, &m->m, &e);
	if (!rc) {
		m->nin = runtime_model_ninputs(m->m);
		m->nout = runtime_model_noutputs(m->m);
		m->in = base_calloc((size_t)(m->nin ? m->nin : 1), sizeof *m->in);
		m->out = base_calloc((size_t)(m->nout ? m->nout : 1), sizeof *m->out);
		m->sorted = base_calloc((size_t)(m->nin ? m->nin : 1), sizeof *m->sorted);
		if (!m->in || !m->out || !m->sorted)
			rc = base_nomem(&e, "%s", m->file);
		for (int i = 0; !rc && i < m->nin; i++)
			rc = describe_value(m, runtime_model_input(m->m, i), "input", &m->in[i], &e);
		for (int i = 0; !rc && i < m->nout; i++)
			rc = describe_value(m, runtime_model_output(m->m, i), "output", &m->out[i], &e);
		for (int i = 0; !rc && i < m->nin; i++)
			m->sorted[i] = i;
		if (!rc) {
			sort_model = m;
			qsort(m->sorted, (size_t)m->nin, sizeof *m->sorted, cmp_arg);
		}
		if (!rc)
			rc = runtime_ctx_new(m->m, &m->cx, &e);
	}
	pthread_mutex_unlock(&me->load_lock);
	if (rc) {
		model_unload(m);
		m->nin = m->nout = 0;
		if (e.msg[0] && strncmp(e.msg, m->file, strlen(m->file)) &&
		    strncmp(e.msg, m->path, strlen(m->path)))
			snprintf(m->msg, sizeof m->msg, "%.200s: %.*s", m->file,
			         (int)sizeof m->msg - 210, e.msg);
		else
			snprintf(m->msg, sizeof m->msg, "%s", e.msg[0] ? e.msg : strata_strerror(rc));
		m->rc = rc;
		/* Out of memory may pass: tried again next time. */
		m->tried = rc != STRATA_NOMEM;
		return base_err(err, rc, "%s", m->msg);
	}
	m->tried = 1;
	return 0;
}

static int find_model(struct strata_modeleval *me, const char *name, struct me_model **out,
                      struct strata_error *err)
{
	for (int i = 0; name && i < me->n; i++)
		if (!strcmp(me->models[i].name, name))
			return *out = &me->models[i], 0;
	/* Vespa matches the path in lower case: names differing in case only
	 * are found too. */
	for (int i = 0; name && i < me->n; i++)
		if (!strcasecmp(me->models[i].name, name))
			return *out = &me->models[i], 0;
	char list[1024] = "";
	for (int i = 0, off = 0; i < me->n && off < (int)sizeof list; i++)
		off += snprintf(list + off, sizeof list - (size_t)off, "%s%s", i ? ", " : "",
		                me->models[i].name);
	return base_err(err, STRATA_NOT_FOUND, "No model named '%s'. Available models: %s",
	                name ? name : "", list);
}

static void function_list(const struct me_model *m, char *buf, size_t n)
{
	buf[0] = 0;
	for (int i = 0, off = 0; i < m->nout && off < (int)n; i++)
		off += snprintf(buf + off, n - (size_t)off, "%s%s", i ? ", " : "", m->out[i].name);
}

/* Vespa's Model.evaluatorOf(names): the only function when none is named,
 * else the one of that name, or the only one whose name begins "NAME." or
 * ends ".NAME". */
static int find_function(const struct me_model *m, const char *fn, int *out,
                         struct strata_error *err)
{
	char list[1024];
	function_list(m, list, sizeof list);
	if (!fn || !*fn) {
		if (m->nout == 1)
			return *out = 0, 0;
		return base_err(err, STRATA_NOT_FOUND, "More than one function is available in model "
		                "'%s', but no name is given. Available functions: %s", m->name, list);
	}
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < m->nout; i++)
			if (pass ? !strcasecmp(m->out[i].name, fn) : !strcmp(m->out[i].name, fn))
				return *out = i, 0;
	size_t fl = strlen(fn);
	for (int pass = 0; pass < 2; pass++) {
		int found = -1, count = 0;
		for (int i = 0; i < m->nout; i++) {
			const char *nm = m->out[i].name;
			size_t nl = strlen(nm);
			int hit = pass == 0 ? nl > fl && !strncmp(nm, fn, fl) && nm[fl] == '.'
			                    : nl > fl && !strcmp(nm + nl - fl, fn) && nm[nl - fl - 1] == '.';
			if (hit)
				found = i, count++;
		}
		if (count == 1)
			return *out = found, 0;
		if (count > 1)
			return base_err(err, STRATA_NOT_FOUND, "Multiple functions %s '%s' in model '%s'. "
			                "Available functions: %s", pass ? "called" : "start by", fn,
			                m->name, list);
	}
	return base_err(err, STRATA_NOT_FOUND, "No function '%s' in model '%s'. Available "
	                "functions: %s", fn, m->name, list);
}

/* The model's lock is taken and the model loaded; *mp is it. */
static int enter(struct strata_modeleval *me, const char *model, struct me_model **mp,
                 struct strata_error *err)
{
	int rc = find_model(me, model, mp, err);
	if (rc)
		return rc;
	pthread_mutex_lock(&(*mp)->lock);
	if ((rc = model_load(me, *mp, err)) != 0)
		pthread_mutex_unlock(&(*mp)->lock);
	return rc;
}

int strata_modeleval_list(struct strata_modeleval *me, const char *base, char **out,
                          struct strata_error *err)
{
	*out = NULL;
	json_t *j = json_object();
	for (int i = 0; j && i < me->n; i++) {
		char *url = base_strprintf("%s%s", base ? base : "", me->models[i].name);
		if (!url || json_object_set_new(j, me->models[i].name, json_string(url))) {
			json_decref(j);
			j = NULL;
		}
		base_strfree(url);
	}
	*out = j ? eng_json_dump(j, 0) : NULL;
	json_decref(j);
	return *out ? 0 : base_nomem(err, "the model list");
}

static json_t *function_json(const struct me_model *m, int f, const char *base)
{
	json_t *j = json_object(), *args = json_array();
	char *info = base ? base_strprintf("%s%s/%s", base, m->name, m->out[f].name) : NULL;
	char *eval = base ? base_strprintf("%s%s/%s/eval", base, m->name, m->out[f].name) : NULL;
	int bad = !j || !args || (base && (!info || !eval)) ||
	          json_object_set_new(j, "function", json_string(m->out[f].name));
	if (!bad && base)
		bad = json_object_set_new(j, "info", json_string(info)) ||
		      json_object_set_new(j, "eval", json_string(eval));
	for (int k = 0; !bad && k < m->nin; k++) {
		const struct me_value *v = &m->in[m->sorted[k]];
		bad = json_array_append_new(args, json_pack("{s:s, s:s}", "name", v->name, "type",
		                                            v->type));
	}
	base_strfree(info);
	base_strfree(eval);
	if (bad || json_object_set_new(j, "arguments", args)) {
		json_decref(j);
		return NULL;
	}
	return j;
}

int strata_modeleval_describe(struct strata_modeleval *me, const char *model,
                              const char *function, const char *base, char **out,
                              struct strata_error *err)
{
	*out = NULL;
	struct me_model *m;
	int rc = enter(me, model, &m, err);
	if (rc)
		return rc;
	json_t *j = json_pack("{s:s}", "model", m->name);
	if (function) {
		int f;
		if ((rc = find_function(m, function, &f, err)) == 0) {
			json_t *fj = function_json(m, f, base);
			if (!j || !fj || json_object_update(j, fj))
				rc = base_nomem(err, "%s", m->name);
			json_decref(fj);
		}
	} else {
		json_t *fns = json_array();
		if (!j || !fns || json_object_set(j, "functions", fns))
			rc = base_nomem(err, "%s", m->name);
		for (int f = 0; !rc && f < m->nout; f++)
			if (json_array_append_new(fns, function_json(m, f, base)))
				rc = base_nomem(err, "%s", m->name);
		json_decref(fns);
	}
	pthread_mutex_unlock(&m->lock);
	if (!rc && !(*out = eng_json_dump(j, 0)))
		rc = base_nomem(err, "%s", m->name);
	json_decref(j);
	return rc;
}

/* ---- binding an argument ------------------------------------------------------------------ */

static const char *skip_ws(const char *p)
{
	while (isspace((unsigned char)*p))
		p++;
	return p;
}

/* A literal's leading type, "tensor<float>(d0[2],d1[])": checked against v
 * (cell types convert; dimension names and fixed sizes must agree), sizes
 * it gives put into dims.  *body is the text after its ':'. */
static int literal_type(const char *s, const struct me_value *v, int64_t *dims, const char **body,
                        char *why, size_t nwhy)
{
	const char *p = skip_ws(s);
	*body = p;
	if (strncmp(p, "tensor", 6))
		return 0;
	const char *q = p + 6;
	if (*q == '<') {
		const char *e = strchr(q, '>');
		if (!e)
			goto bad;
		q = e + 1;
	}
	q = skip_ws(q);
	if (*q++ != '(')
		goto bad;
	int d = 0;
	q = skip_ws(q);
	while (*q != ')') {
		const char *ns = q;
		while (isalnum((unsigned char)*q) || *q == '_')
			q++;
		char want[16];
		snprintf(want, sizeof want, "d%d", d);
		if (d >= v->rank || (size_t)(q - ns) != strlen(want) || strncmp(ns, want, strlen(want)))
			goto mismatch;
		if (*q++ != '[')
			goto mismatch; /* a mapped dimension: an indexed one is wanted */
		char *end;
		long long k = strtoll(q, &end, 10);
		if (end != q) {
			if (k <= 0 || (v->dims[d] >= 0 && k != v->dims[d]))
				goto mismatch;
			dims[d] = k;
			q = end;
		}
		if (*q++ != ']')
			goto bad;
		d++;
		q = skip_ws(q);
		if (*q == ',')
			q = skip_ws(q + 1);
		else if (*q != ')')
			goto bad;
	}
	if (d != v->rank)
		goto mismatch;
	q = skip_ws(q + 1);
	if (*q != ':')
		goto bad;
	*body = skip_ws(q + 1);
	return 0;
mismatch:
	snprintf(why, nwhy, "the value's type '%.*s' is another", (int)(strchr(p, ')') ?
	         strchr(p, ')') - p + 1 : 20), p);
	return STRATA_INVALID_ARGUMENT;
bad:
	snprintf(why, nwhy, "malformed tensor type in '%.40s'", p);
	return STRATA_INVALID_ARGUMENT;
}

/* Sizes of unbound dimensions from nested arrays: the length at each
 * level; a flat array of all cells fills one unbound dimension. */
static void sizes_from_array(const json_t *a, const struct me_value *v, int64_t *dims)
{
	int unbound = 0, u = -1;
	size_t fixed = 1;
	for (int d = 0; d < v->rank; d++) {
		if (dims[d] < 0)
			unbound++, u = d;
		else
			fixed *= (size_t)dims[d];
	}
	if (!unbound || !json_is_array(a))
		return;
	const json_t *e = a;
	int level = 0;
	while (level < v->rank && json_is_array(e)) {
		if (dims[level] < 0 && json_array_size(e))
			dims[level] = (int64_t)json_array_size(e);
		e = json_array_get(e, 0);
		level++;
	}
	if (level == 1 && v->rank > 1 && unbound == 1 && json_array_size(a) &&
	    json_array_size(a) % fixed == 0) {
		dims[u] = (int64_t)(json_array_size(a) / fixed); /* flat */
		for (int d = 0; d < v->rank; d++)
			if (d != u && dims[d] < 0)
				dims[d] = -1;
	}
}

/* Sizes of unbound dimensions from a cells literal "{{d0:0,d1:2}:1.5, ...}":
 * the largest index given, plus one. */
static void sizes_from_cells(const char *body, const struct me_value *v, int64_t *dims)
{
	int64_t max[RT_MAX_RANK];
	for (int d = 0; d < v->rank; d++)
		max[d] = -1;
	for (const char *p = body; *p; p++) {
		if (*p != 'd' || (p > body && (isalnum((unsigned char)p[-1]) || p[-1] == '_')))
			continue;
		char *end;
		long d = strtol(p + 1, &end, 10);
		if (end == p + 1 || d < 0 || d >= v->rank)
			continue;
		const char *q = skip_ws(end);
		if (*q != ':')
			continue;
		q = skip_ws(q + 1);
		if (*q == '"' || *q == '\'')
			q++;
		long long k = strtoll(q, &end, 10);
		if (end != q && k > max[d])
			max[d] = k;
	}
	for (int d = 0; d < v->rank; d++)
		if (dims[d] < 0 && max[d] >= 0)
			dims[d] = max[d] + 1;
}

static void sizes_from_json_cells(const json_t *cells, const struct me_value *v, int64_t *dims)
{
	size_t i;
	const json_t *c;
	json_array_foreach(cells, i, c) {
		const json_t *addr = json_object_get(c, "address");
		for (int d = 0; d < v->rank; d++) {
			char nm[16];
			snprintf(nm, sizeof nm, "d%d", d);
			const json_t *l = json_object_get(addr, nm);
			long long k = json_is_string(l) ? strtoll(json_string_value(l), NULL, 10)
			                                : json_is_integer(l) ? json_integer_value(l) : -1;
			if (v->dims[d] < 0 && k + 1 > dims[d])
				dims[d] = k + 1;
		}
	}
}

/* Bind value val (a literal string or a JSON tensor) to argument v: its
 * cells as v->dtype into a new block *cells (*size bytes) of shape dims. */
static int bind(const struct me_value *v, const json_t *val, int64_t *dims, void **cells,
                size_t *size, struct strata_error *err)
{
	char why[STRATA_ERRMSG_MAX] = "";
	int rc = 0;
	memcpy(dims, v->dims, sizeof v->dims);
	json_t *parsed = NULL;
	if (json_is_string(val)) {
		const char *body;
		rc = literal_type(json_string_value(val), v, dims, &body, why, sizeof why);
		if (!rc && *body == '{') {
			sizes_from_cells(body, v, dims);
		} else if (!rc && *body == '[') {
			json_error_t je;
			int oom;
			parsed = eng_json_parse(body, strlen(body), JSON_DECODE_ANY, &je, &oom);
			sizes_from_array(parsed, v, dims);
		}
	} else if (json_is_array(val)) {
		sizes_from_array(val, v, dims);
	} else if (json_is_object(val)) {
		const json_t *vals = json_object_get(val, "values");
		if (vals)
			sizes_from_array(vals, v, dims);
		else
			sizes_from_json_cells(json_object_get(val, "cells"), v, dims);
	}
	json_decref(parsed);
	size_t n = 1;
	for (int d = 0; !rc && d < v->rank; d++) {
		if (dims[d] <= 0) {
			snprintf(why, sizeof why, "the value does not tell the size of dimension d%d", d);
			rc = STRATA_INVALID_ARGUMENT;
		} else if ((n *= (size_t)dims[d]) > MAX_CELLS) {
			snprintf(why, sizeof why, "more than %d cells", MAX_CELLS);
			rc = STRATA_INVALID_ARGUMENT;
		}
	}
	double *dv = NULL;
	if (!rc && !(dv = base_alloc(n * sizeof *dv)))
		return base_nomem(err, "argument '%s'", v->name);
	if (!rc) {
		struct eng_ttype t = { BASE_DT_DOUBLE, v->rank, dims, NULL };
		struct strata_error e = { 0 };
		char what[80];
		snprintf(what, sizeof what, "'%s'", v->name);
		rc = eng_tensor_from_json(val, &t, 1, dv, what, &e);
		if (rc == STRATA_NOMEM) {
			base_free(dv, n * sizeof *dv);
			return base_err(err, rc, "%s", e.msg);
		}
		if (rc) {
			/* "'x': why": the name is said already */
			const char *m = e.msg;
			if (!strncmp(m, what, strlen(what)) && m[strlen(what)] == ':')
				m = skip_ws(m + strlen(what) + 1);
			snprintf(why, sizeof why, "%s", m);
			/* the type in parentheses at the end is said already */
			char *tail = strstr(why, " (tensor");
			if (tail && why[strlen(why) - 1] == ')')
				*tail = 0;
		}
	}
	if (!rc) {
		size_t es = base_dtype_size(v->dtype);
		size_t bytes = n * es > 0 ? n * es : 1;
		void *c = base_alloc(bytes);
		if (!c) {
			base_free(dv, n * sizeof *dv);
			return base_nomem(err, "argument '%s'", v->name);
		}
		struct strata_tensor st = { base_dtype_name(v->dtype), v->rank, { 0 }, c };
		for (size_t i = 0; i < n; i++)
			strata_tensor_set(&st, i, dv[i]);
		*cells = c;
		*size = bytes;
	}
	if (dv)
		base_free(dv, n * sizeof *dv);
	if (rc)
		return base_err(err, STRATA_INVALID_ARGUMENT, "Argument '%s' must be bound to a value "
		                "of type %s: %s", v->name, v->type, why);
	return 0;
}

/* ---- the output ----------------------------------------------------------------------------- */

enum { F_SHORT, F_LONG, F_SHORT_VALUE, F_LONG_VALUE, F_STRING, F_STRING_LONG };

static int format_of(const char *f, int *out)
{
	static const char *const names[] = { "short", "long", "short-value", "long-value", "string",
		                             "string-long" };
	for (int i = 0; i < 6; i++)
		if (!strcasecmp(f ? f : "short", names[i]))
			return *out = i, 0;
	return -1;
}

static json_t *cell_json(const struct rt_tensor *t, int cell, size_t i)
{
	struct strata_tensor st = { base_dtype_name(t->dtype), t->rank, { 0 }, t->data };
	double v = 0;
	strata_tensor_get(&st, i, &v);
	return eng_json_number(cell, v);
}

/* Nested arrays from cell *i on, level d down. */
static json_t *nested(const struct rt_tensor *t, int cell, int d, size_t *i)
{
	json_t *a = json_array();
	if (t->rank == 0) {
		json_array_append_new(a, cell_json(t, cell, (*i)++));
		return a;
	}
	for (int64_t k = 0; a && k < t->dims[d]; k++) {
		json_t *e = d + 1 < t->rank ? nested(t, cell, d + 1, i) : cell_json(t, cell, (*i)++);
		if (json_array_append_new(a, e)) {
			json_decref(a);
			a = NULL;
		}
	}
	return a;
}

static json_t *cells_json(const struct rt_tensor *t, int cell, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; a && i < n; i++) {
		json_t *addr = json_object();
		for (int d = 0; addr && d < t->rank; d++) {
			size_t below = 1;
			for (int e = d + 1; e < t->rank; e++)
				below *= (size_t)t->dims[e];
			char nm[16], lab[24];
			snprintf(nm, sizeof nm, "d%d", d);
			snprintf(lab, sizeof lab, "%llu", (unsigned long long)(i / below % (size_t)t->dims[d]));
			if (json_object_set_new(addr, nm, json_string(lab))) {
				json_decref(addr);
				addr = NULL;
			}
		}
		if (!addr || json_array_append_new(a, json_pack("{s:o, s:o}", "address", addr,
		                                                "value", cell_json(t, cell, i)))) {
			json_decref(a);
			a = NULL;
		}
	}
	return a;
}

struct text {
	char *p;
	size_t len, cap;
	int failed;
};

static void put(struct text *b, const char *s)
{
	size_t n = strlen(s);
	if (b->failed || base_grow((void **)&b->p, &b->cap, b->len + n + 1, 1, MAX_TEXT)) {
		b->failed = 1;
		return;
	}
	memcpy(b->p + b->len, s, n + 1);
	b->len += n;
}

static void put_cell(struct text *b, const struct rt_tensor *t, int cell, size_t i)
{
	json_t *num = cell_json(t, cell, i);
	char *s = num ? eng_json_dump(num, 0) : NULL;
	json_decref(num);
	if (!s)
		b->failed = 1;
	else
		put(b, s);
	base_strfree(s);
}

/* Vespa's tensor strings: "TYPE:[[1.0, 2.0], [3.0, 4.0]]" (short) or
 * "TYPE:{{d0:0,d1:0}:1.0, ...}" (long); rank 0: "TYPE:{1.0}". */
static char *tensor_string(const struct rt_tensor *t, int cell, const char *type, size_t n,
                           int longform)
{
	struct text b = { 0 };
	put(&b, type);
	put(&b, ":");
	if (t->rank == 0) {
		put(&b, "{");
		put_cell(&b, t, cell, 0);
		put(&b, "}");
	} else if (!longform) {
		for (size_t i = 0; i < n; i++) {
			size_t stride = 1;
			if (i)
				put(&b, ", ");
			for (int d = t->rank - 1; d >= 0; d--) /* brackets opening here */
				if (i % (stride *= (size_t)t->dims[d]) == 0)
					put(&b, "[");
			put_cell(&b, t, cell, i);
			stride = 1;
			for (int d = t->rank - 1; d >= 0; d--)
				if ((i + 1) % (stride *= (size_t)t->dims[d]) == 0)
					put(&b, "]");
		}
		if (!n)
			put(&b, "[]");
	} else {
		put(&b, "{");
		for (size_t i = 0; i < n; i++) {
			char lab[48];
			put(&b, i ? ", {" : "{");
			for (int d = 0; d < t->rank; d++) {
				size_t below = 1;
				for (int e = d + 1; e < t->rank; e++)
					below *= (size_t)t->dims[e];
				snprintf(lab, sizeof lab, "%sd%d:%llu", d ? "," : "", d,
				         (unsigned long long)(i / below % (size_t)t->dims[d]));
				put(&b, lab);
			}
			put(&b, "}:");
			put_cell(&b, t, cell, i);
		}
		put(&b, "}");
	}
	if (b.failed) {
		if (b.p)
			base_free(b.p, b.cap);
		return NULL;
	}
	char *s = base_strndup(b.p, b.len);
	base_free(b.p, b.cap);
	return s;
}

static int render(const struct rt_tensor *t, int fmt, char **out, struct strata_error *err)
{
	int cell = vespa_cell(t->dtype);
	char type[160];
	int64_t dims[RT_MAX_RANK];
	size_t n = 1;
	for (int d = 0; d < t->rank; d++)
		n *= (size_t)(dims[d] = t->dims[d]);
	type_str(cell, t->rank, dims, type, sizeof type);
	if (fmt == F_STRING || fmt == F_STRING_LONG) {
		*out = tensor_string(t, cell, type, n, fmt == F_STRING_LONG);
	} else {
		size_t i = 0;
		json_t *v = fmt == F_SHORT || fmt == F_SHORT_VALUE ? nested(t, cell, 0, &i)
		                                                   : cells_json(t, cell, n);
		json_t *j = fmt == F_SHORT_VALUE || fmt == F_LONG_VALUE
		                    ? v
		                    : json_pack("{s:s, s:o}", "type", type,
		                                fmt == F_SHORT ? "values" : "cells", v);
		*out = j ? eng_json_dump(j, 0) : NULL;
		json_decref(j);
	}
	return *out ? 0 : base_nomem(err, "the result");
}

/* ---- evaluation ------------------------------------------------------------------------------ */

int strata_modeleval_run(struct strata_modeleval *me, const char *model, const char *function,
                         const char *args, const char *format, char **out,
                         struct strata_error *err)
{
	*out = NULL;
	int fmt;
	if (format_of(format, &fmt))
		return base_err(err, STRATA_INVALID_ARGUMENT, "Unknown tensor format '%s' (short, "
		                "long, short-value, long-value, string, string-long)", format);
	json_error_t je;
	int oom = 0;
	json_t *a = args ? eng_json_parse(args, strlen(args), 0, &je, &oom) : json_object();
	if (!a)
		return oom ? base_nomem(err, "the arguments")
		           : base_err(err, STRATA_PARSE, "arguments:%d:%d: %s", je.line, je.column,
		                      je.text);
	if (!json_is_object(a)) {
		json_decref(a);
		return base_err(err, STRATA_INVALID_ARGUMENT, "the arguments must be a JSON object");
	}
	struct me_model *m;
	int rc = enter(me, model, &m, err);
	if (rc) {
		json_decref(a);
		return rc;
	}
	int f = 0;
	rc = find_function(m, function, &f, err);
	struct rt_tensor *in = NULL, outs[64];
	size_t *sizes = NULL;
	if (!rc && m->nout > 64)
		rc = base_err(err, STRATA_LIMIT, "%s: more than 64 outputs", m->file);
	if (!rc) {
		in = base_calloc((size_t)(m->nin ? m->nin : 1), sizeof *in);
		sizes = base_calloc((size_t)(m->nin ? m->nin : 1), sizeof *sizes);
		if (!in || !sizes)
			rc = base_nomem(err, "%s", m->name);
	}
	/* Every name given is an argument (Vespa's bind() refuses others). */
	const char *key;
	json_t *val;
	const json_t *missing = json_object_get(a, "missing-value");
	json_object_foreach(a, key, val) {
		if (rc || !strcmp(key, "missing-value"))
			continue;
		int i = -1;
		for (int k = 0; k < m->nin; k++)
			if (!strcmp(m->in[k].name, key))
				i = k;
		if (i < 0) {
			char list[1024] = "";
			for (int k = 0, off = 0; k < m->nin && off < (int)sizeof list; k++)
				off += snprintf(list + off, sizeof list - (size_t)off, "%s%s: %s",
				                k ? ", " : "", m->in[m->sorted[k]].name,
				                m->in[m->sorted[k]].type);
			rc = base_err(err, STRATA_NOT_FOUND, "'%s' is not a valid argument in function "
			              "'%s' of model '%s'. Expected arguments: %s", key, m->out[f].name,
			              m->name, list);
		} else if (in[i].data) {
			rc = base_err(err, STRATA_INVALID_ARGUMENT, "argument '%s' is given twice", key);
		} else {
			in[i].dtype = m->in[i].dtype;
			in[i].rank = m->in[i].rank;
			rc = bind(&m->in[i], val, in[i].dims, &in[i].data, &sizes[i], err);
		}
	}
	/* Unbound arguments, in name order: missing-value when it fits. */
	for (int k = 0; !rc && k < m->nin; k++) {
		int i = m->sorted[k];
		if (in[i].data)
			continue;
		if (missing) {
			in[i].dtype = m->in[i].dtype;
			in[i].rank = m->in[i].rank;
			rc = bind(&m->in[i], missing, in[i].dims, &in[i].data, &sizes[i], err);
			if (!rc)
				continue;
		}
		rc = base_err(err, STRATA_INVALID_ARGUMENT, "Argument '%s' must be bound to a value of "
		              "type %s", m->in[i].name, m->in[i].type);
	}
	if (!rc)
		rc = runtime_run(m->cx, in, outs, err);
	if (!rc)
		rc = render(&outs[f], fmt, out, err);
	for (int i = 0; in && i < m->nin; i++)
		if (in[i].data)
			base_free(in[i].data, sizes[i]);
	if (in)
		base_free(in, (size_t)(m->nin ? m->nin : 1) * sizeof *in);
	if (sizes)
		base_free(sizes, (size_t)(m->nin ? m->nin : 1) * sizeof *sizes);
	pthread_mutex_unlock(&m->lock);
	json_decref(a);
	return rc;
}
