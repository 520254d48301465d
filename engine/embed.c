/*
 * embed.c: the embedders of an application, the components of its
 * services.xml that turn text into tensors (Vespa's 'embed' in indexing
 * statements and in query inputs).
 *
 * At open, services.c reads the components; here each gets its tokenizer
 * (tokenizer.c) and its model, loaded like an onnx-model block's
 * (eng_model_for: the compiled context while it is fresh, and deploy
 * compiles it).  Strata never downloads: a model or tokenizer given by url
 * or model-id, or a path with no file behind it, leaves the embedder
 * declared but unable to run; open says so once through the log callback,
 * and every embed with it fails with STRATA_NOT_IMPLEMENTED saying how to
 * give the file.  The models' inputs and output are checked at open.
 *
 * An embed tokenizes (the component's prefix for queries or documents
 * first), runs the model once on a batch of one, and shapes the output
 * into the destination's type as Vespa's embedders do:
 *   hugging-face-embedder, bert-embedder: one vector, pooled over the
 *     tokens (mean over the attention mask, or the first token), the
 *     first N of its values (N the destination's size), then normalized
 *     to length 1 if asked; an int8 destination gets the first 8N values
 *     binarized (> 0 is 1) and packed 8 to a cell, first value in the high
 *     bit;
 *   colbert-embedder: one vector per token into a mixed tensor (dt{},
 *     x[N]) labelled "0", "1", ...; queries are padded with the mask token
 *     to max-query-tokens, documents lose punctuation tokens; int8 packs
 *     bits as above (documents only);
 *   splade-embedder: per vocabulary term, log(1 + max over tokens of
 *     relu(logit)), the terms scoring above term-score-threshold into a
 *     mapped tensor labelled by their tokens (special tokens left out);
 *   hugging-face-tokenizer: the token ids themselves, in a dense vector
 *     padded with zeros.
 * The result is feed JSON, so storing it is storing a fed tensor.
 *
 * Immutable after open: any number of threads may embed at once (each run
 * has its own model context).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "engine_int.h"
#include "../runtime/runtime.h"

#define MAX_IN 8
enum { IN_IDS = 1, IN_MASK, IN_TYPES };

struct embedder {
	const struct eng_component *c;
	char *why;                  /* NULL: it runs; else why it cannot */
	struct eng_tokenizer *tok;
	struct rt_model *model;
	char *model_path;           /* the model's file, joined to the application */
	int shared;                 /* the model is an earlier embedder's */
	char *tok_path;             /* the tokenizer's file, likewise */
	int tok_shared;             /* the tokenizer is an earlier embedder's */
	int nin;
	int role[MAX_IN];           /* IN_* per model input */
	int dtype[MAX_IN];          /* INT64 or INT32 */
	int out_k;
	long max_len;               /* tokens the model takes, special ones included */
};

struct eng_embedders {
	struct eng_services svc;
	struct embedder *e;         /* svc.n */
};

void eng_embedders_free(struct eng_embedders *es)
{
	if (!es)
		return;
	for (int i = 0; i < es->svc.n && es->e; i++) {
		struct embedder *e = &es->e[i];
		base_strfree(e->why);
		if (!e->tok_shared)
			eng_tokenizer_free(e->tok);
		base_strfree(e->tok_path);
		if (e->model && !e->shared)
			runtime_model_free(e->model);
		base_strfree(e->model_path);
	}
	if (es->e)
		base_free(es->e, (size_t)es->svc.n * sizeof *es->e);
	eng_services_free(&es->svc);
	base_free(es, sizeof *es);
}

/* ---- loading ---------------------------------------------------------------------- */

/* The local file of model setting m (named elem): 0 with *path set (joined
 * to the application), or 0 with *path NULL and e->why set when Strata
 * cannot have it. */
static int resolve(struct strata *db, const struct eng_services *svc, struct embedder *e,
                   const struct eng_model_ref *m, const char *elem, char **path,
                   struct strata_error *err)
{
	*path = NULL;
	const struct eng_component *c = e->c;
	if (!m->line)
		return base_err(err, STRATA_PARSE, "%s:%d:%d: component '%s' (%s) needs <%s>",
		                svc->path, c->line, c->col, c->id, c->type, elem);
	if (m->path) {
		char *p = base_path_join(db->appdir, m->path);
		if (!p)
			return base_nomem(err, "embedder '%s'", c->id);
		struct stat st;
		if (stat(p, &st) == 0) {
			*path = p;
			return 0;
		}
		base_strfree(p);
	}
	char part[STRATA_ERRMSG_MAX];
	if (m->url)
		snprintf(part, sizeof part, "its %s is the URL %s (%s:%d:%d)", elem, m->url, svc->path,
		         m->line, m->col);
	else if (m->model_id)
		snprintf(part, sizeof part, "its %s is the model-id '%s' (%s:%d:%d)", elem, m->model_id,
		         svc->path, m->line, m->col);
	else
		snprintf(part, sizeof part, "its %s file '%s' is not in the application (%s:%d:%d)",
		         elem, m->path, svc->path, m->line, m->col);
	/* the second file missing joins the first */
	char *why = e->why ? base_strprintf("%s; %s", e->why, part) : base_strdup(part);
	if (!why)
		return base_nomem(err, "embedder '%s'", c->id);
	base_strfree(e->why);
	e->why = why;
	return 0;
}

/* After resolve(): how to give the files Strata does not have. */
static int how_to(struct embedder *e, struct strata_error *err)
{
	const struct eng_component *c = e->c;
	if (!c->model.url && !c->model.model_id && !c->tokenizer.url && !c->tokenizer.model_id)
		return 0;
	char *why = base_strprintf("%s. Strata never downloads models: download the files into the "
	                       "application and give their paths, as <transformer-model "
	                       "path=\"models/model.onnx\"/>", e->why);
	if (!why)
		return base_nomem(err, "embedder '%s'", c->id);
	base_strfree(e->why);
	e->why = why;
	return 0;
}

/* Which of the token inputs each model input is; the output's index. */
static int check_model(const struct eng_services *svc, struct embedder *e,
                       struct strata_error *err)
{
	const struct eng_component *c = e->c;
	const struct rt_model *m = e->model;
	e->nin = runtime_model_ninputs(m);
	int seen[4] = { 0 };
	for (int k = 0; k < e->nin; k++) {
		const struct rt_value_info *vi = runtime_model_input(m, k);
		int role = !strcmp(vi->name, c->in_ids)    ? IN_IDS
		           : !strcmp(vi->name, c->in_mask) ? IN_MASK
		           : (*c->in_types && !strcmp(vi->name, c->in_types)) ? IN_TYPES
		                                                              : 0;
		if (!role || k >= MAX_IN)
			return base_err(err, STRATA_INVALID_ARGUMENT,
			                "%s:%d:%d: embedder '%s': model input '%s' is none of %s, %s%s%s",
			                svc->path, c->model.line, c->model.col, c->id, vi->name,
			                c->in_ids, c->in_mask, *c->in_types ? ", " : "", c->in_types);
		if (vi->dtype != BASE_DT_INT64 && vi->dtype != BASE_DT_INT32)
			return base_err(err, STRATA_INVALID_ARGUMENT,
			                "%s:%d:%d: embedder '%s': model input '%s' is %s, not int64 or int32",
			                svc->path, c->model.line, c->model.col, c->id, vi->name,
			                base_dtype_name(vi->dtype));
		e->role[k] = role;
		e->dtype[k] = vi->dtype;
		seen[role] = 1;
	}
	if (!seen[IN_IDS] || !seen[IN_MASK])
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "%s:%d:%d: embedder '%s': the model has no input '%s'", svc->path,
		                c->model.line, c->model.col, c->id,
		                seen[IN_IDS] ? c->in_mask : c->in_ids);
	e->out_k = runtime_model_output_index(m, c->output);
	if (e->out_k < 0) {
		char names[512] = "";
		for (int k = 0; k < runtime_model_noutputs(m); k++) {
			size_t l = strlen(names);
			snprintf(names + l, sizeof names - l, "%s%s", k ? ", " : "",
			         runtime_model_output(m, k)->name);
		}
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "%s:%d:%d: embedder '%s': the model has no output '%s' (it has %s); "
		                "name one with <transformer-output>",
		                svc->path, c->model.line, c->model.col, c->id, c->output, names);
	}
	return 0;
}

static int load_one(struct strata *db, struct eng_models *ms, const struct eng_services *svc,
                    const struct embedder *first, struct embedder *e, struct strata_error *err)
{
	const struct eng_component *c = e->c;
	if (c->kind == ENG_EMB_OTHER) {
		e->why = base_strprintf("its type '%s' is not one Strata runs (hugging-face-embedder, "
		                    "bert-embedder, colbert-embedder, splade-embedder, "
		                    "hugging-face-tokenizer)", c->type);
		return e->why ? 0 : base_nomem(err, "embedder '%s'", c->id);
	}
	const char *telem = c->kind == ENG_EMB_BERT        ? "tokenizer-vocab"
	                    : c->kind == ENG_EMB_TOKENIZER ? "model"
	                                                   : "tokenizer-model";
	char *tpath = NULL, *mpath = NULL;
	int rc = 0;
	if (c->kind != ENG_EMB_TOKENIZER)
		rc = resolve(db, svc, e, &c->model, "transformer-model", &mpath, err);
	if (!rc)
		rc = resolve(db, svc, e, &c->tokenizer, telem, &tpath, err);
	if (!rc && e->why)
		rc = how_to(e, err);
	if (rc || e->why) {
		base_strfree(mpath);
		base_strfree(tpath);
		return rc;
	}
	/* embedders of one tokenizer file share it (read the same way) */
	for (const struct embedder *o = first; o < e && !e->tok; o++)
		if (o->tok && !strcmp(o->tok_path, tpath) &&
		    (o->c->kind == ENG_EMB_BERT) == (c->kind == ENG_EMB_BERT)) {
			e->tok = o->tok;
			e->tok_shared = 1;
		}
	e->tok_path = tpath;
	rc = e->tok ? 0 : eng_tokenizer_load(tpath, c->kind == ENG_EMB_BERT, &e->tok, err);
	if (rc) {
		base_strfree(mpath);
		return rc == STRATA_NOMEM ? rc
		                          : base_err_prefix(err, rc, "%s:%d:%d: embedder '%s'", svc->path,
		                                            c->tokenizer.line, c->tokenizer.col, c->id);
	}
	long ml = eng_tokenizer_max_length(e->tok);
	e->max_len = c->kind == ENG_EMB_BERT ? c->max_tokens : ml > 0 ? ml : c->max_tokens;
	if (c->kind == ENG_EMB_TOKENIZER)
		return 0;
	/* embedders of one model file share it (loaded and compiled once) */
	for (const struct embedder *o = first; o < e && !e->model; o++)
		if (o->model && !strcmp(o->model_path, mpath)) {
			e->model = o->model;
			e->shared = 1;
		}
	e->model_path = mpath;
	if (!e->model && (rc = eng_model_for(ms, c->model.path, mpath, &e->model, err)) != 0)
		return rc == STRATA_NOMEM ? rc
		                          : base_err_prefix(err, rc, "%s:%d:%d: embedder '%s'", svc->path,
		                                            c->model.line, c->model.col, c->id);
	return check_model(svc, e, err);
}

int eng_embedders_load(struct strata *db, struct eng_models *ms, struct strata_error *err)
{
	db->embedders = NULL;
	char *path = base_path_join(db->appdir, "services.xml");
	if (!path)
		return base_nomem(err, "services.xml");
	struct eng_embedders *es = base_calloc(1, sizeof *es);
	if (!es) {
		base_strfree(path);
		return base_nomem(err, "services.xml");
	}
	int rc = eng_services_read(path, &es->svc, err);
	base_strfree(path);
	if (!rc && es->svc.n && !(es->e = base_calloc((size_t)es->svc.n, sizeof *es->e)))
		rc = base_nomem(err, "embedders");
	for (int i = 0; !rc && i < es->svc.n; i++) {
		struct embedder *e = &es->e[i];
		e->c = &es->svc.c[i];
		rc = load_one(db, ms, &es->svc, es->e, e, err);
		if (!rc && e->why && ms->log) {
			char msg[3 * STRATA_ERRMSG_MAX];
			snprintf(msg, sizeof msg, "%s:%d:%d: embedder '%s' cannot run: %s", es->svc.path,
			         e->c->line, e->c->col, e->c->id, e->why);
			ms->log(ms->log_ud, STRATA_LOG_WARNING, msg);
		}
	}
	if (rc || !es->svc.n) {
		eng_embedders_free(es);
		return rc;
	}
	db->embedders = es;
	return 0;
}

static void declared(const struct eng_embedders *es, char *buf, size_t n)
{
	buf[0] = 0;
	for (int i = 0; es && i < es->svc.n; i++) {
		size_t l = strlen(buf);
		snprintf(buf + l, n - l, "%s'%s'", i ? ", " : "", es->svc.c[i].id);
	}
	if (!buf[0])
		snprintf(buf, n, "none: the application has no embedder components in services.xml");
}

static int find(struct strata *db, const char *id, const struct embedder **out,
                struct strata_error *err)
{
	const struct eng_embedders *es = db->embedders;
	*out = NULL;
	int n = es ? es->svc.n : 0;
	if (!id && n == 1) {
		*out = &es->e[0];
		return 0;
	}
	for (int i = 0; id && i < n; i++)
		if (!strcmp(es->svc.c[i].id, id)) {
			*out = &es->e[i];
			return 0;
		}
	char names[STRATA_ERRMSG_MAX / 2];
	declared(es, names, sizeof names);
	if (!id)
		return base_err(err, STRATA_NOT_FOUND,
		                "embed without an embedder id needs exactly one embedder; declared: %s",
		                names);
	return base_err(err, STRATA_NOT_FOUND, "no embedder '%s'; declared: %s", id, names);
}

int eng_embedder_find(struct strata *db, const char *id, struct strata_error *err)
{
	const struct embedder *e;
	return find(db, id, &e, err);
}

/* ---- running ----------------------------------------------------------------------- */

/* A token sequence and its attention mask. */
struct seq {
	int64_t *ids, *mask;
	size_t n, cap;
};

static int seq_new(struct seq *s, size_t cap, const char *id, struct strata_error *err)
{
	s->n = 0;
	s->cap = cap ? cap : 1;
	s->ids = base_calloc(s->cap, sizeof *s->ids);
	s->mask = base_calloc(s->cap, sizeof *s->mask);
	if (!s->ids || !s->mask) {
		if (s->ids)
			base_free(s->ids, s->cap * sizeof *s->ids);
		if (s->mask)
			base_free(s->mask, s->cap * sizeof *s->mask);
		s->ids = s->mask = NULL;
		return base_nomem(err, "tokens of embedder '%s'", id);
	}
	return 0;
}

static void seq_free(struct seq *s)
{
	if (s->ids)
		base_free(s->ids, s->cap * sizeof *s->ids);
	if (s->mask)
		base_free(s->mask, s->cap * sizeof *s->mask);
	s->ids = s->mask = NULL;
}

static void seq_push(struct seq *s, int64_t id, int64_t mask)
{
	if (s->n < s->cap) {
		s->ids[s->n] = id;
		s->mask[s->n] = mask;
		s->n++;
	}
}

/* The text with the component's prefix for queries or documents: "prefix
 * text", in a new buffer (*own, base_free(*own, *n + 1)), or text itself. */
static int prefixed(const struct eng_component *c, const char *text, size_t len, int for_query,
                    const char **out, size_t *n, char **own, struct strata_error *err)
{
	const char *pre = for_query && c->prepend_query && *c->prepend_query ? c->prepend_query
	                  : !for_query && c->prepend_doc && *c->prepend_doc ? c->prepend_doc
	                                                                    : NULL;
	*own = NULL;
	*out = text;
	*n = len;
	if (!pre)
		return 0;
	size_t pl = strlen(pre);
	if (!(*own = base_alloc(pl + 1 + len + 1)))
		return base_nomem(err, "text of embedder '%s'", c->id);
	memcpy(*own, pre, pl);
	(*own)[pl] = ' ';
	memcpy(*own + pl + 1, text, len);
	(*own)[pl + 1 + len] = 0;
	*out = *own;
	*n = pl + 1 + len;
	return 0;
}

/* [CLS] text [SEP] (the tokenizer's special tokens, or the component's
 * for bert-embedder), max tokens in all; special 0: the text's alone. */
static int tokens(const struct embedder *e, const char *text, size_t len, int for_query,
                  int special, long max, struct seq *s, struct strata_error *err)
{
	const struct eng_component *c = e->c;
	int64_t cls[4], sep[4];
	int ncls = 0, nsep = 0;
	if (special && c->kind == ENG_EMB_BERT) {
		cls[ncls++] = c->start_tok;
		sep[nsep++] = c->end_tok;
	} else if (special) {
		eng_tokenizer_specials(e->tok, cls, &ncls, sep, &nsep);
	}
	if (max < ncls + nsep + 1)
		max = ncls + nsep + 1;
	const char *t;
	size_t n;
	char *own;
	int rc = prefixed(c, text, len, for_query, &t, &n, &own, err);
	if (rc || (rc = seq_new(s, (size_t)max, c->id, err)) != 0) {
		if (own)
			base_free(own, n + 1);
		return rc;
	}
	for (int i = 0; i < ncls; i++)
		seq_push(s, cls[i], 1);
	size_t room = (size_t)max - (size_t)ncls - (size_t)nsep, all = 0;
	rc = eng_tokenizer_encode(e->tok, t, n, s->ids + s->n, room, &all, err);
	if (rc) {
		seq_free(s);
		if (own)
			base_free(own, n + 1);
		return rc;
	}
	size_t got = all < room ? all : room;
	for (size_t i = 0; i < got; i++)
		s->mask[s->n + i] = 1;
	s->n += got;
	for (int i = 0; i < nsep; i++)
		seq_push(s, sep[i], 1);
	if (own)
		base_free(own, n + 1);
	return 0;
}

/* Run the model on s; *o is its output (a view valid until *cx is freed). */
static int run(const struct embedder *e, const struct seq *s, struct rt_ctx **cx,
               struct rt_tensor *o, struct strata_error *err)
{
	const char *id = e->c->id;
	size_t n = s->n;
	struct rt_tensor in[MAX_IN], out[16];
	int32_t *i32[MAX_IN] = { 0 };
	*cx = NULL;
	int64_t *zeros = base_calloc(n, sizeof *zeros);
	int rc = zeros ? 0 : base_nomem(err, "embedder '%s'", id);
	for (int k = 0; !rc && k < e->nin; k++) {
		const int64_t *src = e->role[k] == IN_IDS ? s->ids : e->role[k] == IN_MASK ? s->mask : zeros;
		in[k] = (struct rt_tensor){ e->dtype[k], 2, { 1, (int64_t)n }, (void *)src };
		if (e->dtype[k] == BASE_DT_INT32) {
			if (!(i32[k] = base_alloc(n * sizeof **i32))) {
				rc = base_nomem(err, "embedder '%s'", id);
				break;
			}
			for (size_t i = 0; i < n; i++)
				i32[k][i] = (int32_t)src[i];
			in[k].data = i32[k];
		}
	}
	if (!rc && runtime_model_noutputs(e->model) > 16)
		rc = base_err(err, STRATA_INVALID_ARGUMENT, "embedder '%s': the model has more than 16 "
		              "outputs", id);
	if (!rc)
		rc = runtime_ctx_new(e->model, cx, err);
	if (!rc && (rc = runtime_run(*cx, in, out, err)) != 0)
		rc = rc == STRATA_NOMEM ? rc : base_err_prefix(err, rc, "embedder '%s'", id);
	for (int k = 0; k < e->nin; k++)
		if (i32[k])
			base_free(i32[k], n * sizeof **i32);
	if (zeros)
		base_free(zeros, n * sizeof *zeros);
	if (rc) {
		if (*cx)
			runtime_ctx_free(*cx);
		*cx = NULL;
		return rc;
	}
	*o = out[e->out_k];
	return 0;
}

/* ---- shaping the output ----------------------------------------------------------------- */

static double cell(const struct rt_tensor *t, size_t i)
{
	return base_load_double(t->dtype, t->data, i);
}

static int type_err(const struct embedder *e, const struct eng_ttype *t, const char *what,
                    const char *want, struct strata_error *err)
{
	char ts[256];
	eng_ttype_str(t, ts, sizeof ts);
	return base_err(err, STRATA_TYPE, "embedder '%s' (%s) makes %s; %s is %s", e->c->id,
	                e->c->type, want, what, ts);
}

/* The n values v as a JSON array of cell type cellt, or packed 8 bits to an
 * int8 cell (first value in the high bit) when pack. */
static json_t *values_json(const double *v, size_t n, int cellt, int pack)
{
	json_t *a = json_array();
	for (size_t i = 0; a && i < (pack ? n / 8 : n); i++) {
		json_t *x;
		if (pack) {
			int b = 0;
			for (int k = 0; k < 8; k++)
				b = b << 1 | (v[i * 8 + k] > 0);
			x = json_integer(b > 127 ? b - 256 : b);
		} else {
			x = eng_json_number(cellt, v[i]);
		}
		if (!x || json_array_append_new(a, x)) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

static json_t *wrap(const char *key, json_t *v)
{
	json_t *o = v ? json_object() : NULL;
	if (o && json_object_set_new(o, key, v)) {
		json_decref(o);
		return NULL;
	}
	if (!o)
		json_decref(v);
	return o;
}

static int dense_rank1(const struct eng_ttype *t)
{
	return t->rank == 1 && t->dims[0] > 0;
}

/* colbert-embedder's documents lose the tokens of ASCII punctuation. */
static int punct_token(const struct eng_tokenizer *w, int64_t id)
{
	const char *t = eng_tokenizer_token(w, id);
	return t && t[0] && !t[1] && strchr("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", t[0]);
}

static int colbert_tokens(const struct embedder *e, const char *text, size_t len, int for_query,
                          struct seq *s, struct strata_error *err)
{
	const struct eng_component *c = e->c;
	long max = for_query ? c->max_query_tokens : c->max_doc_tokens;
	if (max < 4)
		max = 4;
	struct seq body;
	int rc = tokens(e, text, len, for_query, 0, e->max_len, &body, err);
	if (rc || (rc = seq_new(s, (size_t)max, c->id, err)) != 0) {
		seq_free(&body);
		return rc;
	}
	seq_push(s, c->start_tok, 1);
	seq_push(s, for_query ? c->q_tok : c->d_tok, 1);
	for (size_t i = 0; i < body.n && s->n < (size_t)max - 1; i++)
		if (for_query || !punct_token(e->tok, body.ids[i]))
			seq_push(s, body.ids[i], 1);
	seq_push(s, c->end_tok, 1);
	while (for_query && s->n < (size_t)max)
		seq_push(s, c->mask_tok, 0);
	seq_free(&body);
	return 0;
}

/* The tokens of text for e (colbert's own sequence for colbert), then a
 * run whose output must be [1, tokens, last] unless last is NULL; on
 * failure nothing is held. */
static int encode_run(const struct embedder *e, const char *text, size_t len, int for_query,
                      const char *last, struct seq *s, struct rt_ctx **cx, struct rt_tensor *o,
                      struct strata_error *err)
{
	int rc = e->c->kind == ENG_EMB_COLBERT
	                 ? colbert_tokens(e, text, len, for_query, s, err)
	                 : tokens(e, text, len, for_query, 1, e->max_len, s, err);
	if (rc)
		return rc;
	if ((rc = run(e, s, cx, o, err)) != 0) {
		seq_free(s);
		return rc;
	}
	if (last && (o->rank != 3 || o->dims[0] != 1 || (size_t)o->dims[1] != s->n)) {
		runtime_ctx_free(*cx);
		seq_free(s);
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "embedder '%s': output '%s' must be [1, tokens, %s]", e->c->id,
		                e->c->output, last);
	}
	return 0;
}

/* The end of an embed: *out = {key: val} when rc is 0 (else val goes);
 * the run and the tokens released. */
static int finish(const struct embedder *e, int rc, const char *key, json_t *val, json_t **out,
                  struct rt_ctx *cx, struct seq *s, struct strata_error *err)
{
	if (!rc && !(*out = wrap(key, val)))
		rc = base_nomem(err, "embedding of '%s'", e->c->id);
	else if (rc)
		json_decref(val);
	if (cx)
		runtime_ctx_free(cx);
	seq_free(s);
	return rc;
}

/* hugging-face-embedder, bert-embedder: one pooled vector. */
static int embed_vector(const struct embedder *e, const char *text, size_t len, int for_query,
                        const struct eng_ttype *t, const char *what, json_t **out,
                        struct strata_error *err)
{
	const struct eng_component *c = e->c;
	if (!dense_rank1(t))
		return type_err(e, t, what, "a dense vector, tensor<float>(x[N])", err);
	int pack = t->cell == BASE_DT_INT8;
	size_t want = (size_t)t->dims[0] * (pack ? 8 : 1);
	struct seq s;
	struct rt_ctx *cx;
	struct rt_tensor ot, *o = &ot;
	int rc = encode_run(e, text, len, for_query, c->pooling == ENG_POOL_NONE ? NULL : "dim", &s,
	                    &cx, o, err);
	if (rc)
		return rc;
	size_t seq = 1, dim;
	/* pooling none: the model pooled, [1, dim] */
	int ok = c->pooling != ENG_POOL_NONE || (o->rank == 2 && o->dims[0] == 1);
	if (c->pooling != ENG_POOL_NONE)
		seq = (size_t)o->dims[1];
	dim = ok ? (size_t)o->dims[o->rank - 1] : 0;
	double *v = NULL;
	if (!ok)
		rc = base_err(err, STRATA_INVALID_ARGUMENT,
		              "embedder '%s': output '%s' must be [1, dim] with pooling-strategy none",
		              c->id, c->output);
	else if (want > dim)
		rc = base_err(err, STRATA_TYPE,
		              "embedder '%s' makes %zu values; %s needs %zu%s", c->id, dim, what, want,
		              pack ? " (8 bits for each int8 cell)" : "");
	else if (!(v = base_calloc(want, sizeof *v)))
		rc = base_nomem(err, "embedder '%s'", c->id);
	if (!rc) {
		double msum = 0;
		for (size_t i = 0; i < seq; i++)
			msum += (double)s.mask[i];
		for (size_t i = 0; i < (c->pooling == ENG_POOL_MEAN ? seq : 1); i++)
			for (size_t d = 0; d < want; d++)
				v[d] += cell(o, i * dim + d) * (c->pooling == ENG_POOL_MEAN ? (double)s.mask[i] : 1);
		if (c->pooling == ENG_POOL_MEAN && msum > 0)
			for (size_t d = 0; d < want; d++)
				v[d] /= msum;
		if (c->normalize) {
			double sq = 0;
			for (size_t d = 0; d < want; d++)
				sq += v[d] * v[d];
			if (sq > 0)
				for (size_t d = 0; d < want; d++)
					v[d] /= sqrt(sq);
		}
	}
	json_t *vals = rc ? NULL : values_json(v, want, t->cell, pack);
	if (!rc && !vals)
		rc = base_nomem(err, "embedding of '%s'", c->id);
	if (v)
		base_free(v, want * sizeof *v);
	return finish(e, rc, "values", vals, out, cx, &s, err);
}

/* colbert-embedder: a vector per token into (dt{}, x[N]). */
static int embed_tokens(const struct embedder *e, const char *text, size_t len, int for_query,
                        const struct eng_ttype *t, const char *what, json_t **out,
                        struct strata_error *err)
{
	const struct eng_component *c = e->c;
	if (t->rank != 2 || (t->dims[0] < 0) == (t->dims[1] < 0))
		return type_err(e, t, what, "a vector per token, tensor<float>(dt{}, x[N])", err);
	int pack = t->cell == BASE_DT_INT8;
	if (pack && for_query)
		return type_err(e, t, what, "float vectors for a query, not int8", err);
	size_t n = (size_t)(t->dims[0] < 0 ? t->dims[1] : t->dims[0]);
	size_t want = n * (pack ? 8 : 1);
	struct seq s;
	struct rt_ctx *cx;
	struct rt_tensor ot, *o = &ot;
	int rc = encode_run(e, text, len, for_query, "dim", &s, &cx, o, err);
	if (rc)
		return rc;
	double *v = NULL;
	size_t dim = (size_t)o->dims[2];
	if (dim != want)
		rc = base_err(err, STRATA_TYPE, "embedder '%s' makes %zu values per token; %s holds %zu%s",
		              c->id, dim, what, want, pack ? " (8 bits for each int8 cell)" : "");
	else if (!(v = base_alloc(want * sizeof *v)))
		rc = base_nomem(err, "embedder '%s'", c->id);
	json_t *blocks = rc ? NULL : json_object();
	if (!rc && !blocks)
		rc = base_nomem(err, "embedding of '%s'", c->id);
	for (size_t i = 0; !rc && i < s.n; i++) {
		for (size_t d = 0; d < want; d++)
			v[d] = cell(o, i * dim + d);
		char label[32];
		snprintf(label, sizeof label, "%zu", i);
		json_t *a = values_json(v, want, t->cell, pack);
		if (!a || json_object_set_new(blocks, label, a))
			rc = base_nomem(err, "embedding of '%s'", c->id);
	}
	if (v)
		base_free(v, want * sizeof *v);
	return finish(e, rc, "blocks", blocks, out, cx, &s, err);
}

/* splade-embedder: term weights into (token{}). */
static int embed_terms(const struct embedder *e, const char *text, size_t len, int for_query,
                       const struct eng_ttype *t, const char *what, json_t **out,
                       struct strata_error *err)
{
	const struct eng_component *c = e->c;
	if (t->rank != 1 || t->dims[0] >= 0)
		return type_err(e, t, what, "term weights, tensor<float>(token{})", err);
	struct seq s;
	struct rt_ctx *cx;
	struct rt_tensor ot, *o = &ot;
	int rc = encode_run(e, text, len, for_query, "vocabulary", &s, &cx, o, err);
	if (rc)
		return rc;
	/* the largest logit of each term over the tokens, read row by row as
	 * the output lies in memory */
	size_t nv = (size_t)o->dims[2];
	double *m = base_calloc(nv ? nv : 1, sizeof *m);
	json_t *cells = m ? json_object() : NULL;
	if (!cells)
		rc = base_nomem(err, "embedding of '%s'", c->id);
	for (size_t i = 0; !rc && i < s.n; i++)
		for (size_t v = 0; v < nv; v++) {
			double x = cell(o, i * nv + v);
			if (x > m[v])
				m[v] = x;
		}
	for (size_t v = 0; !rc && v < nv; v++) {
		double score = log1p(m[v]);
		const char *label = eng_tokenizer_token(e->tok, (int64_t)v);
		if (!(score > c->threshold) || !label || eng_tokenizer_special(e->tok, (int64_t)v) ||
		    strlen(label) > ENG_LABEL_MAX)
			continue;
		json_t *x = eng_json_number(t->cell, score);
		if (!x || json_object_set_new(cells, label, x))
			rc = base_nomem(err, "embedding of '%s'", c->id);
	}
	if (m)
		base_free(m, (nv ? nv : 1) * sizeof *m);
	return finish(e, rc, "cells", cells, out, cx, &s, err);
}

/* hugging-face-tokenizer: the token ids, padded with zeros. */
static int embed_ids(const struct embedder *e, const char *text, size_t len, int for_query,
                     const struct eng_ttype *t, const char *what, json_t **out,
                     struct strata_error *err)
{
	if (!dense_rank1(t))
		return type_err(e, t, what, "token ids, tensor<float>(d0[N])", err);
	size_t n = (size_t)t->dims[0];
	long max = e->c->max_tokens > 0 && (size_t)e->c->max_tokens < n ? e->c->max_tokens : (long)n;
	struct seq s;
	int rc = tokens(e, text, len, for_query, e->c->add_special, max, &s, err);
	if (rc)
		return rc;
	double *v = base_calloc(n, sizeof *v);
	if (!v) {
		seq_free(&s);
		return base_nomem(err, "embedding of '%s'", e->c->id);
	}
	for (size_t i = 0; i < s.n && i < n; i++)
		v[i] = (double)s.ids[i];
	json_t *vals = values_json(v, n, t->cell, 0);
	base_free(v, n * sizeof *v);
	return finish(e, vals ? 0 : base_nomem(err, "embedding of '%s'", e->c->id), "values", vals,
	              out, NULL, &s, err);
}

int eng_embed_type(struct strata *db, const char *id, const char *text, size_t len,
                   int for_query, const struct eng_ttype *t, const char *what, json_t **out,
                   struct strata_error *err)
{
	*out = NULL;
	const struct embedder *e;
	int rc = find(db, id, &e, err);
	if (rc)
		return rc;
	if (e->why)
		return base_err(err, STRATA_NOT_IMPLEMENTED, "embedder '%s' cannot run: %s", e->c->id,
		                e->why);
	switch (e->c->kind) {
	case ENG_EMB_HF:
	case ENG_EMB_BERT:
		return embed_vector(e, text, len, for_query, t, what, out, err);
	case ENG_EMB_COLBERT:
		return embed_tokens(e, text, len, for_query, t, what, out, err);
	case ENG_EMB_SPLADE:
		return embed_terms(e, text, len, for_query, t, what, out, err);
	default:
		return embed_ids(e, text, len, for_query, t, what, out, err);
	}
}

int eng_embed(struct strata *db, const char *id, const char *text, size_t len, int for_query,
              const struct rank_field *dest, json_t **out, struct strata_error *err)
{
	*out = NULL;
	char what[300];
	snprintf(what, sizeof what, "field '%s'", dest->name);
	if (dest->type != RANK_FT_TENSOR) {
		const struct embedder *e;
		int rc = find(db, id, &e, err);
		return rc ? rc : base_err(err, STRATA_TYPE, "embedder '%s' makes a tensor; %s is no tensor",
		                          e->c->id, what);
	}
	struct eng_ttype t = { dest->cell, dest->rank, dest->dims, dest->dim_names };
	return eng_embed_type(db, id, text, len, for_query, &t, what, out, err);
}
