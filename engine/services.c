/*
 * services.c: the embedder components of an application's services.xml.
 *
 * Vespa's services.xml describes a whole deployment (containers, content
 * clusters, nodes, resources); a single Strata node needs none of that but
 * the embedders: the <component id=".." type=".."> elements whose type is
 * one of hugging-face-embedder, bert-embedder, colbert-embedder,
 * splade-embedder or hugging-face-tokenizer.  Those are read here, with
 * their settings, into struct eng_component (defaults as Vespa's embedding
 * reference gives them); embed.c loads their tokenizers and models.  Other
 * components (Java classes, bundles) are no embedders: eng_services_java
 * (at the end) names each, once at deploy, as what a single node without a
 * JVM cannot run.
 * A component whose type ends in "-embedder" but is none of the above is
 * kept as ENG_EMB_OTHER: declared, so that schemas naming it deploy, and
 * refused when asked to embed.
 *
 * Inside an embedder component every setting is either read or refused
 * with its position; the ONNX execution settings (onnx-execution-mode,
 * onnx-interop-threads, onnx-intraop-threads, onnx-gpu-device) are
 * accepted and change nothing: Strata runs a model on the calling thread.
 *
 * expat parses; its memory comes from the one allocator (sized blocks of
 * json_alloc.c).  Positions are expat's: line 1-based, column made
 * 1-based.
 */
#include <errno.h>
#include <expat.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_int.h"

#define TEXT_MAX (1 << 16) /* bytes of one setting's text */

static const struct {
	const char *type;
	int kind;
} types[] = {
	{ "hugging-face-embedder", ENG_EMB_HF },
	{ "bert-embedder", ENG_EMB_BERT },
	{ "colbert-embedder", ENG_EMB_COLBERT },
	{ "splade-embedder", ENG_EMB_SPLADE },
	{ "hugging-face-tokenizer", ENG_EMB_TOKENIZER },
};

/* The settings of a component: the element, the kinds it belongs to, and
 * what its text is. */
enum { S_MODEL = 1, S_TOKENIZER, S_STRING, S_LONG, S_TOKEN, S_BOOL, S_DOUBLE, S_POOLING,
       S_PREPEND, S_IGNORED };
#define K(k) (1 << (k))
#define K_ONNX (K(ENG_EMB_HF) | K(ENG_EMB_BERT) | K(ENG_EMB_COLBERT) | K(ENG_EMB_SPLADE))
#define K_HF (K(ENG_EMB_HF) | K(ENG_EMB_COLBERT) | K(ENG_EMB_SPLADE))
static const struct setting {
	const char *name;
	int kinds;
	int what;
	size_t off; /* into struct eng_component, for the simple ones */
} settings[] = {
	{ "transformer-model", K_ONNX, S_MODEL, 0 },
	{ "tokenizer-model", K_HF, S_TOKENIZER, 0 },
	{ "tokenizer-vocab", K(ENG_EMB_BERT), S_TOKENIZER, 0 },
	{ "model", K(ENG_EMB_TOKENIZER), S_TOKENIZER, 0 },
	{ "transformer-input-ids", K_ONNX, S_STRING, offsetof(struct eng_component, in_ids) },
	{ "transformer-attention-mask", K_ONNX, S_STRING,
	  offsetof(struct eng_component, in_mask) },
	{ "transformer-token-type-ids", K_ONNX, S_STRING,
	  offsetof(struct eng_component, in_types) },
	{ "transformer-output", K_ONNX, S_STRING, offsetof(struct eng_component, output) },
	{ "max-tokens", K_ONNX, S_LONG, offsetof(struct eng_component, max_tokens) },
	{ "transformer-max-tokens", K_ONNX, S_LONG, offsetof(struct eng_component, max_tokens) },
	{ "max-query-tokens", K(ENG_EMB_COLBERT), S_LONG,
	  offsetof(struct eng_component, max_query_tokens) },
	{ "max-document-tokens", K(ENG_EMB_COLBERT), S_LONG,
	  offsetof(struct eng_component, max_doc_tokens) },
	{ "max-length", K(ENG_EMB_TOKENIZER), S_LONG, offsetof(struct eng_component, max_tokens) },
	{ "transformer-start-sequence-token", K(ENG_EMB_BERT) | K(ENG_EMB_COLBERT), S_TOKEN,
	  offsetof(struct eng_component, start_tok) },
	{ "transformer-end-sequence-token", K(ENG_EMB_BERT) | K(ENG_EMB_COLBERT), S_TOKEN,
	  offsetof(struct eng_component, end_tok) },
	{ "transformer-mask-token", K(ENG_EMB_COLBERT), S_TOKEN,
	  offsetof(struct eng_component, mask_tok) },
	{ "transformer-pad-token", K(ENG_EMB_COLBERT), S_TOKEN,
	  offsetof(struct eng_component, pad_tok) },
	{ "query-token-id", K(ENG_EMB_COLBERT), S_TOKEN, offsetof(struct eng_component, q_tok) },
	{ "document-token-id", K(ENG_EMB_COLBERT), S_TOKEN,
	  offsetof(struct eng_component, d_tok) },
	{ "normalize", K(ENG_EMB_HF), S_BOOL, offsetof(struct eng_component, normalize) },
	{ "add-special-tokens", K(ENG_EMB_TOKENIZER), S_BOOL,
	  offsetof(struct eng_component, add_special) },
	{ "term-score-threshold", K(ENG_EMB_SPLADE), S_DOUBLE,
	  offsetof(struct eng_component, threshold) },
	{ "pooling-strategy", K(ENG_EMB_HF) | K(ENG_EMB_BERT), S_POOLING, 0 },
	{ "prepend", K(ENG_EMB_HF), S_PREPEND, 0 },
	{ "onnx-execution-mode", K_ONNX, S_IGNORED, 0 },
	{ "onnx-interop-threads", K_ONNX, S_IGNORED, 0 },
	{ "onnx-intraop-threads", K_ONNX, S_IGNORED, 0 },
	{ "onnx-gpu-device", K_ONNX, S_IGNORED, 0 },
	{ "truncation", K(ENG_EMB_TOKENIZER), S_IGNORED, 0 },
};

_Static_assert(sizeof settings / sizeof *settings <= 64, "settings fit struct parse's seen");

struct parse {
	XML_Parser xp;
	struct eng_services *s;
	struct strata_error *err;
	int rc;
	int depth;
	int comp_depth;                 /* depth of the open embedder component, or 0 */
	uint64_t seen;                  /* the settings it gave, by index in settings[] */
	struct eng_component *comp;
	const struct setting *set;      /* the open setting (comp_depth + 1) */
	int set_line, set_col;
	char sub[16];                   /* prepend's <query> or <document> (comp_depth + 2) */
	char *text;
	size_t ntext, captext;
};

static void *xml_malloc(size_t n)
{
	return eng_block_alloc(n);
}

static void *xml_realloc(void *p, size_t n)
{
	return eng_block_realloc(p, n);
}

static void xml_free(void *p)
{
	eng_block_free(p);
}

XML_Parser eng_xml_parser(void)
{
	XML_Memory_Handling_Suite mem = { xml_malloc, xml_realloc, xml_free };
	return XML_ParserCreate_MM(NULL, &mem, NULL);
}

static int line_of(struct parse *p)
{
	return (int)XML_GetCurrentLineNumber(p->xp);
}

static int col_of(struct parse *p)
{
	return (int)XML_GetCurrentColumnNumber(p->xp) + 1;
}

/* Fail the parse with code and a message after "path:line:col: ". */
static void fail(struct parse *p, int code, int line, int col, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static void fail(struct parse *p, int code, int line, int col, const char *fmt, ...)
{
	if (p->rc)
		return;
	char msg[STRATA_ERRMSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	p->rc = code == STRATA_NOMEM ? base_nomem(p->err, "%s", msg)
	                             : base_err(p->err, code, "%s:%d:%d: %s", p->s->path, line, col,
	                                        msg);
	XML_StopParser(p->xp, XML_FALSE);
}

static const char *attr(const char **atts, const char *name)
{
	for (int i = 0; atts[i]; i += 2)
		if (!strcmp(atts[i], name))
			return atts[i + 1];
	return NULL;
}

/* Replace *dst by a copy of src. */
static int set_str(struct parse *p, char **dst, const char *src)
{
	char *c = base_strdup(src);
	if (!c) {
		fail(p, STRATA_NOMEM, 0, 0, "services.xml");
		return -1;
	}
	base_strfree(*dst);
	*dst = c;
	return 0;
}

static void defaults(struct eng_component *c)
{
	c->pooling = ENG_POOL_MEAN;
	c->max_tokens = c->kind == ENG_EMB_BERT ? 384 : c->kind == ENG_EMB_TOKENIZER ? -1 : 512;
	c->max_query_tokens = 32;
	c->max_doc_tokens = 512;
	c->start_tok = 101;
	c->end_tok = 102;
	c->mask_tok = 103;
	c->pad_tok = 0;
	c->q_tok = 1;
	c->d_tok = 2;
	c->add_special = 1;
}

/* The names a component's model inputs and output take when not set. */
static int name_defaults(struct parse *p, struct eng_component *c)
{
	const char *out = c->kind == ENG_EMB_BERT      ? "output_0"
	                  : c->kind == ENG_EMB_COLBERT ? "contextual"
	                  : c->kind == ENG_EMB_SPLADE  ? "logits"
	                                               : "last_hidden_state";
	if ((!c->in_ids && set_str(p, &c->in_ids, "input_ids")) ||
	    (!c->in_mask && set_str(p, &c->in_mask, "attention_mask")) ||
	    (!c->in_types && set_str(p, &c->in_types, "token_type_ids")) ||
	    (!c->output && set_str(p, &c->output, out)))
		return -1;
	return 0;
}

static void start_component(struct parse *p, const char **atts)
{
	const char *type = attr(atts, "type");
	if (!type)
		return;
	int kind = 0;
	for (size_t i = 0; i < sizeof types / sizeof *types; i++)
		if (!strcmp(type, types[i].type))
			kind = types[i].kind;
	size_t tl = strlen(type);
	if (!kind && tl > 9 && !strcmp(type + tl - 9, "-embedder"))
		kind = ENG_EMB_OTHER;
	if (!kind)
		return;
	int line = line_of(p), col = col_of(p);
	const char *id = attr(atts, "id");
	if (!id || !*id)
		return fail(p, STRATA_INVALID_ARGUMENT, line, col,
		            "component of type '%s' has no id", type);
	for (int i = 0; i < p->s->n; i++)
		if (!strcmp(p->s->c[i].id, id))
			return fail(p, STRATA_INVALID_ARGUMENT, line, col,
			            "component '%s' is declared twice (first at line %d)", id,
			            p->s->c[i].line);
	if (base_grow((void **)&p->s->c, &p->s->cap, (size_t)p->s->n + 1, sizeof *p->s->c, 1024))
		return fail(p, STRATA_NOMEM, 0, 0, "component '%s'", id);
	struct eng_component *c = &p->s->c[p->s->n];
	memset(c, 0, sizeof *c);
	c->kind = kind;
	c->line = line;
	c->col = col;
	defaults(c);
	if (!(c->id = base_strdup(id)) || !(c->type = base_strdup(type))) {
		base_strfree(c->id);
		return fail(p, STRATA_NOMEM, 0, 0, "component '%s'", id);
	}
	p->s->n++;
	p->comp = c;
	p->comp_depth = p->depth;
	p->seen = 0;
}

static void model_ref(struct parse *p, struct eng_model_ref *m, const char **atts)
{
	m->line = p->set_line;
	m->col = p->set_col;
	static const char *const names[] = { "path", "url", "model-id" };
	char **dst[] = { &m->path, &m->url, &m->model_id };
	for (int i = 0; atts[i]; i += 2) {
		int k = -1;
		for (int j = 0; j < 3; j++)
			if (!strcmp(atts[i], names[j]))
				k = j;
		if (k >= 0) {
			if (set_str(p, dst[k], atts[i + 1]))
				return;
		} else if (strcmp(atts[i], "secret-ref") && strcmp(atts[i], "language")) {
			return fail(p, STRATA_NOT_IMPLEMENTED, m->line, m->col,
			            "component '%s': <%s %s=...> is not supported (path, url or model-id)",
			            p->comp->id, p->set->name, atts[i]);
		}
	}
	if (!m->path && !m->url && !m->model_id)
		fail(p, STRATA_PARSE, m->line, m->col,
		     "component '%s': <%s> needs a path, url or model-id attribute", p->comp->id,
		     p->set->name);
}

static void XMLCALL on_start(void *ud, const char *name, const char **atts)
{
	struct parse *p = ud;
	p->depth++;
	if (p->rc)
		return;
	if (!p->comp) {
		if (!strcmp(name, "component"))
			start_component(p, atts);
		return;
	}
	p->ntext = 0;
	if (p->depth == p->comp_depth + 1) {
		p->set_line = line_of(p);
		p->set_col = col_of(p);
		p->set = NULL;
		for (size_t i = 0; i < sizeof settings / sizeof *settings; i++)
			if (!strcmp(settings[i].name, name) && settings[i].kinds & K(p->comp->kind))
				p->set = &settings[i];
		if (p->comp->kind == ENG_EMB_OTHER)
			return;
		if (!p->set)
			return fail(p, STRATA_NOT_IMPLEMENTED, p->set_line, p->set_col,
			            "component '%s' (%s): setting <%s> is not supported", p->comp->id,
			            p->comp->type, name);
		uint64_t bit = (uint64_t)1 << (p->set - settings);
		if (p->seen & bit)
			return fail(p, STRATA_NOT_IMPLEMENTED, p->set_line, p->set_col,
			            "component '%s': <%s> is given twice (one of each is supported)",
			            p->comp->id, name);
		p->seen |= bit;
		if (p->set->what == S_MODEL)
			model_ref(p, &p->comp->model, atts);
		else if (p->set->what == S_TOKENIZER)
			model_ref(p, &p->comp->tokenizer, atts);
		return;
	}
	if (p->comp->kind == ENG_EMB_OTHER)
		return;
	if (p->depth == p->comp_depth + 2 && p->set && p->set->what == S_PREPEND &&
	    (!strcmp(name, "query") || !strcmp(name, "document"))) {
		strcpy(p->sub, name);
		return;
	}
	fail(p, STRATA_NOT_IMPLEMENTED, line_of(p), col_of(p),
	     "component '%s' (%s): element <%s> is not supported here", p->comp->id, p->comp->type,
	     name);
}

static void XMLCALL on_text(void *ud, const char *s, int len)
{
	struct parse *p = ud;
	if (p->rc || !p->comp || len <= 0)
		return;
	if (p->ntext + (size_t)len + 1 > TEXT_MAX)
		return fail(p, STRATA_LIMIT, line_of(p), col_of(p), "a setting longer than %d bytes",
		            TEXT_MAX);
	if (base_grow((void **)&p->text, &p->captext, p->ntext + (size_t)len + 1, 1, TEXT_MAX))
		return fail(p, STRATA_NOMEM, 0, 0, "services.xml text");
	memcpy(p->text + p->ntext, s, (size_t)len);
	p->ntext += (size_t)len;
	p->text[p->ntext] = 0;
}

/* The trimmed text of the setting just closed. */
static const char *trimmed(struct parse *p)
{
	if (!p->text)
		return "";
	p->text[p->ntext] = 0;
	char *t = p->text;
	while (*t == ' ' || *t == '\t' || *t == '\n' || *t == '\r')
		t++;
	size_t n = strlen(t);
	while (n && (t[n - 1] == ' ' || t[n - 1] == '\t' || t[n - 1] == '\n' || t[n - 1] == '\r'))
		t[--n] = 0;
	return t;
}

static void bad_value(struct parse *p, const char *t, const char *want)
{
	fail(p, STRATA_PARSE, p->set_line, p->set_col, "component '%s': <%s> is '%s': expected %s",
	     p->comp->id, p->set->name, t, want);
}

/* Close the setting p->set with its text t. */
static void end_setting(struct parse *p, const char *t)
{
	struct eng_component *c = p->comp;
	char *base = (char *)c;
	char *end;
	switch (p->set->what) {
	case S_STRING:
		set_str(p, (char **)(base + p->set->off), t);
		break;
	case S_LONG:
	case S_TOKEN: {
		errno = 0;
		long long v = strtoll(t, &end, 10);
		if (!*t || *end || errno || v < 0 || v > (1 << 30))
			return bad_value(p, t, "a count");
		if (p->set->what == S_LONG)
			*(long *)(base + p->set->off) = (long)v;
		else
			*(int64_t *)(base + p->set->off) = v;
		break;
	}
	case S_BOOL:
		if (strcmp(t, "true") && strcmp(t, "false"))
			return bad_value(p, t, "true or false");
		*(int *)(base + p->set->off) = !strcmp(t, "true");
		break;
	case S_DOUBLE: {
		double v = strtod(t, &end);
		if (!*t || *end)
			return bad_value(p, t, "a number");
		*(double *)(base + p->set->off) = v;
		break;
	}
	case S_POOLING:
		if (!strcmp(t, "mean"))
			c->pooling = ENG_POOL_MEAN;
		else if (!strcmp(t, "cls"))
			c->pooling = ENG_POOL_CLS;
		else if (!strcmp(t, "none") && c->kind == ENG_EMB_HF)
			c->pooling = ENG_POOL_NONE;
		else
			return bad_value(p, t, c->kind == ENG_EMB_HF ? "mean, cls or none" : "mean or cls");
		break;
	}
}

static void XMLCALL on_end(void *ud, const char *name)
{
	struct parse *p = ud;
	int depth = p->depth--;
	if (p->rc || !p->comp)
		return;
	if (depth == p->comp_depth) {
		if (p->comp->kind != ENG_EMB_OTHER)
			name_defaults(p, p->comp);
		p->comp = NULL;
		p->comp_depth = 0;
		return;
	}
	if (p->comp->kind == ENG_EMB_OTHER)
		return;
	const char *t = trimmed(p);
	if (depth == p->comp_depth + 2) {
		char **dst = !strcmp(p->sub, "query") ? &p->comp->prepend_query : &p->comp->prepend_doc;
		set_str(p, dst, t);
	} else if (depth == p->comp_depth + 1 && p->set && p->set->what != S_MODEL &&
	           p->set->what != S_TOKENIZER && p->set->what != S_PREPEND &&
	           p->set->what != S_IGNORED) {
		end_setting(p, t);
	}
	(void)name;
	p->ntext = 0;
}

static void free_ref(struct eng_model_ref *m)
{
	base_strfree(m->path);
	base_strfree(m->url);
	base_strfree(m->model_id);
}

void eng_services_free(struct eng_services *s)
{
	for (int i = 0; i < s->n; i++) {
		struct eng_component *c = &s->c[i];
		base_strfree(c->id);
		base_strfree(c->type);
		free_ref(&c->model);
		free_ref(&c->tokenizer);
		base_strfree(c->in_ids);
		base_strfree(c->in_mask);
		base_strfree(c->in_types);
		base_strfree(c->output);
		base_strfree(c->prepend_query);
		base_strfree(c->prepend_doc);
	}
	if (s->c)
		base_free(s->c, s->cap * sizeof *s->c);
	base_strfree(s->path);
	memset(s, 0, sizeof *s);
}

int eng_services_read(const char *path, struct eng_services *s, struct strata_error *err)
{
	memset(s, 0, sizeof *s);
	char *text;
	size_t n;
	struct strata_error e2;
	int rc = base_read_file(path, &text, &n, &e2);
	if (rc == ENOENT)
		return 0;
	if (rc) {
		*err = e2;
		return rc;
	}
	if (!(s->path = base_strdup(path))) {
		base_free(text, n + 1);
		return base_nomem(err, "%s", path);
	}
	struct parse p = { .s = s, .err = err };
	p.xp = eng_xml_parser();
	if (!p.xp) {
		base_free(text, n + 1);
		return base_nomem(err, "parsing %s", path);
	}
	XML_SetUserData(p.xp, &p);
	XML_SetElementHandler(p.xp, on_start, on_end);
	XML_SetCharacterDataHandler(p.xp, on_text);
	if (XML_Parse(p.xp, text, (int)n, XML_TRUE) == XML_STATUS_ERROR && !p.rc) {
		enum XML_Error code = XML_GetErrorCode(p.xp);
		if (code == XML_ERROR_NO_MEMORY)
			p.rc = base_nomem(err, "parsing %s", path);
		else
			p.rc = base_err(err, STRATA_PARSE, "%s:%d:%d: %s", path, line_of(&p), col_of(&p),
			                XML_ErrorString(code));
	}
	XML_ParserFree(p.xp);
	base_free(text, n + 1);
	if (p.text)
		base_free(p.text, p.captext);
	/* every component begun was closed unless the parse stopped */
	return p.rc;
}

/* ---- the Java components ------------------------------------------------------------- */

/* Elements whose every instance is a Java class run by a container. */
static const char *const java_elements[] = {
	"searcher", "document-processor", "documentprocessor", "handler", "processor",
	"renderer", "server", "client", "filter", "provider",
};

struct java {
	XML_Parser xp;
	const char *path;
	strata_log_fn *log;
	void *ud;
	int depth;
	int skip_depth;  /* depth of the Java component being passed over, or 0 */
	char chain[128]; /* id of the open <chain>, or "" */
	int chain_depth;
};

static int java_line(struct java *j)
{
	return (int)XML_GetCurrentLineNumber(j->xp);
}

/* Whether a <component> of this type is one embed.c runs or declares. */
static int native_component(const char *type)
{
	if (!type)
		return 0;
	for (size_t i = 0; i < sizeof types / sizeof *types; i++)
		if (!strcmp(type, types[i].type))
			return 1;
	size_t tl = strlen(type);
	return tl > 9 && !strcmp(type + tl - 9, "-embedder");
}

static void XMLCALL java_start(void *ud, const char *name, const char **atts)
{
	struct java *j = ud;
	j->depth++;
	if (j->skip_depth)
		return;
	if (!strcmp(name, "chain")) {
		const char *id = attr(atts, "id");
		snprintf(j->chain, sizeof j->chain, "%s", id ? id : "");
		j->chain_depth = j->depth;
		return;
	}
	int java = !strcmp(name, "component") && !native_component(attr(atts, "type"));
	for (size_t i = 0; !java && i < sizeof java_elements / sizeof *java_elements; i++)
		java = !strcmp(name, java_elements[i]);
	if (!java)
		return;
	j->skip_depth = j->depth; /* what it holds is its own configuration */
	if (!j->log)
		return;
	const char *id = attr(atts, "id"), *cls = attr(atts, "class"), *type = attr(atts, "type");
	const char *bundle = attr(atts, "bundle");
	char what[STRATA_ERRMSG_MAX] = "";
	size_t n = 0;
#define ADD(...) \
	if (n < sizeof what) \
		n += (size_t)snprintf(what + n, sizeof what - n, __VA_ARGS__)
	if (cls && (!id || strcmp(cls, id)))
		ADD(", class '%s'", cls);
	if (type)
		ADD(", type '%s'", type);
	if (bundle)
		ADD(", bundle '%s'", bundle);
	if (j->chain[0])
		ADD(", in chain '%s'", j->chain);
#undef ADD
	char msg[2 * STRATA_ERRMSG_MAX];
	snprintf(msg, sizeof msg,
	         "%s:%d:%d: %s '%s'%s%s%s is a Java component: a single node without a JVM cannot "
	         "run it; the rest of the application works without it",
	         j->path, java_line(j), (int)XML_GetCurrentColumnNumber(j->xp) + 1, name,
	         id ? id : cls ? cls : "(no id)", n ? " (" : "", n ? what + 2 : "", n ? ")" : "");
	j->log(j->ud, STRATA_LOG_WARNING, msg);
}

static void XMLCALL java_end(void *ud, const char *name)
{
	struct java *j = ud;
	if (j->depth == j->skip_depth)
		j->skip_depth = 0;
	if (j->depth == j->chain_depth) {
		j->chain[0] = 0;
		j->chain_depth = 0;
	}
	j->depth--;
	(void)name;
}

int eng_services_java(const char *appdir, strata_log_fn *log, void *ud, struct strata_error *err)
{
	char *path = base_path_join(appdir, "services.xml");
	if (!path)
		return base_nomem(err, "services.xml");
	char *text = NULL;
	size_t n = 0;
	struct strata_error e2;
	int rc = base_read_file(path, &text, &n, &e2);
	if (rc == ENOENT) {
		base_strfree(path);
		return 0;
	}
	if (rc) {
		*err = e2;
		base_strfree(path);
		return rc;
	}
	struct java j = { .path = path, .log = log, .ud = ud };
	j.xp = eng_xml_parser();
	if (!j.xp)
		rc = base_nomem(err, "parsing %s", path);
	if (j.xp) {
		XML_SetUserData(j.xp, &j);
		XML_SetElementHandler(j.xp, java_start, java_end);
		if (XML_Parse(j.xp, text, (int)n, XML_TRUE) == XML_STATUS_ERROR) {
			enum XML_Error code = XML_GetErrorCode(j.xp);
			rc = code == XML_ERROR_NO_MEMORY
			             ? base_nomem(err, "parsing %s", path)
			             : base_err(err, STRATA_PARSE, "%s:%d:%d: %s", path, java_line(&j),
			                        (int)XML_GetCurrentColumnNumber(j.xp) + 1,
			                        XML_ErrorString(code));
		}
		XML_ParserFree(j.xp);
	}
	base_free(text, n + 1);
	base_strfree(path);
	return rc;
}
