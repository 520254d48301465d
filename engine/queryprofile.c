/*
 * queryprofile.c: query profiles and query profile types, as Vespa's
 * search/query-profiles/ folder of an application holds them.
 *
 * At open, every APP/search/query-profiles/NAME.xml (a <query-profile>)
 * and APP/search/query-profiles/types/NAME.xml (a <query-profile-type>) is
 * read with expat, checked, and each profile flattened once into the list
 * of request parameters it sets: its own fields first (a <ref> field
 * brings the referenced profile's fields under "name."), then those of the
 * profiles it inherits, depth first, left to right, a name set once.  Its
 * type (its own, else the first its parents have) gives each field a type,
 * checked here against the profile's values, and says which are mandatory
 * or not overridable.  The types' ranking.features.query(X) fields declare
 * query(X) in every rank profile (struct rank_loader.typed_inputs), so that
 * a query may pass such a tensor as text.
 *
 * At each search, eng_qprofiles_apply() adds the chosen profile's
 * parameters to the request's JSON under the request's own: the request
 * wins unless the field says overridable="false".  Values substitute
 * %{name} (the request's value, else the profile's) and %{.name} (the
 * profile's) first.
 *
 * What Strata does not honour is refused at open with file:line:col:
 * variants (<dimensions>, nested <query-profile for=...>), strict types,
 * <match path>, versioned ids, unknown elements and attributes.
 *
 * Everything read lives in one arena, freed with the handle; a search
 * allocates only the JSON values it adds and its substitutions' text.
 */
#include <dirent.h>
#include <errno.h>
#include <expat.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "engine_int.h"

#define MAX_FILES 4096       /* profile and type files */
#define MAX_FLAT (1 << 16)   /* parameters one profile sets, references expanded */
#define MAX_TEXT (1 << 20)   /* bytes of one field's value */
#define MAX_SUBST_DEPTH 16   /* %{a} whose value holds %{b} ... */

/* A <field> of a profile or of a type. */
struct qfield {
	const char *name;
	const char *value;   /* a profile's: the trimmed text; NULL for a <ref> */
	const char *ref;     /* a profile's <ref>ID</ref> */
	const char *type;    /* a type's: its type */
	const char *alias;   /* a type's: space-separated aliases, or NULL */
	int overridable;     /* 1, 0, or -1 when not said */
	int mandatory;
	const char *file;
	int line, col;
	struct qfield *next;
};

/* A parameter a profile sets, after inheritance and references. */
struct flat {
	const char *name, *value;
	const char *full;         /* a profile's: the name as the request reads it (its
	                             full name: aliases and nesting resolved) */
	int dropped;              /* searchChain naming a chain of Java components */
	int overridable;
	const struct qfield *tf;  /* its field in the profile's type, or NULL */
	const struct qfield *src; /* where it is set */
	const char *refused;      /* a parameter Strata does not honour: why (a search
	                             with the profile fails with it), or NULL */
};

/* A profile or a type. */
struct qnode {
	const char *id, *file;
	int line, col;
	int is_type;
	const char *type;      /* a profile's type attribute, or NULL */
	const char *inherits;  /* space-separated ids, or NULL */
	struct qfield *fields, **tail;
	int state;             /* 0 not flattened, 1 being flattened, 2 flat */
	struct flat *flat;     /* base_grow'n: flatcap entries */
	int nflat;
	size_t flatcap;
	const struct qnode *tnode; /* a profile's type, or NULL */
	struct qnode *next;
};

struct eng_qprofiles {
	struct base_arena a;
	void (*notice)(void *ud, const char *msg); /* the loader's, at deploy */
	void *notice_ud;
	struct qnode *profiles, *types;
	struct rank_typed_input *inputs;
	int ninputs;
};

/* ---- reading the files ------------------------------------------------------------------ */

struct parse {
	XML_Parser xp;
	struct eng_qprofiles *q;
	const char *file;
	int want_type;         /* the file is in types/ */
	struct strata_error *err;
	int rc;
	int depth;
	struct qnode *node;
	struct qfield *field;  /* the open <field> */
	int in_ref;
	char *text;
	size_t ntext, captext;
};


static int line_of(struct parse *p)
{
	return (int)XML_GetCurrentLineNumber(p->xp);
}

static int col_of(struct parse *p)
{
	return (int)XML_GetCurrentColumnNumber(p->xp) + 1;
}

static void fail(struct parse *p, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void fail(struct parse *p, int code, const char *fmt, ...)
{
	if (p->rc)
		return;
	char msg[STRATA_ERRMSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	p->rc = code == STRATA_NOMEM ? base_nomem(p->err, "%s", p->file)
	                             : base_err(p->err, code, "%s:%d:%d: %s", p->file, line_of(p),
	                                        col_of(p), msg);
	XML_StopParser(p->xp, XML_FALSE);
}

static char *adup(struct parse *p, const char *s)
{
	char *c = base_arena_strdup(&p->q->a, s);
	if (!c)
		fail(p, STRATA_NOMEM, "query profiles");
	return c;
}

/* Check atts against the names allowed (NULL-terminated); 0 or failed. */
static int only(struct parse *p, const char *elem, const char **atts, const char *const *ok)
{
	for (int i = 0; atts[i]; i += 2) {
		int known = !strncmp(atts[i], "xmlns", 5);
		for (int k = 0; ok[k] && !known; k++)
			known = !strcmp(atts[i], ok[k]);
		if (!known) {
			fail(p, STRATA_NOT_IMPLEMENTED, "<%s %s=...> is not supported", elem, atts[i]);
			return -1;
		}
	}
	return 0;
}

static const char *attr(const char **atts, const char *name)
{
	for (int i = 0; atts[i]; i += 2)
		if (!strcmp(atts[i], name))
			return atts[i + 1];
	return NULL;
}

/* true/false into *out (left alone when v is NULL); 0 or failed. */
static int boolean(struct parse *p, const char *elem, const char *name, const char *v, int *out)
{
	if (!v)
		return 0;
	if (strcmp(v, "true") && strcmp(v, "false")) {
		fail(p, STRATA_PARSE, "<%s %s=\"%s\">: expected true or false", elem, name, v);
		return -1;
	}
	*out = !strcmp(v, "true");
	return 0;
}

static void start_root(struct parse *p, const char *name, const char **atts)
{
	const char *want = p->want_type ? "query-profile-type" : "query-profile";
	if (strcmp(name, want))
		return fail(p, STRATA_PARSE, "<%s> where <%s> was expected%s", name, want,
		            p->want_type ? " (types/ holds query profile types)" : "");
	static const char *const pok[] = { "id", "type", "inherits", NULL };
	static const char *const tok[] = { "id", "inherits", NULL };
	if (only(p, name, atts, p->want_type ? tok : pok))
		return;
	const char *id = attr(atts, "id");
	if (!id || !*id)
		return fail(p, STRATA_PARSE, "<%s> has no id", name);
	for (const char *c = id; *c; c++)
		if (!(*c == '_' || *c == '/' || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		      (c > id && ((*c >= '0' && *c <= '9') || *c == '-' || *c == '.'))))
			return fail(p, *c == ':' ? STRATA_NOT_IMPLEMENTED : STRATA_PARSE,
			            *c == ':' ? "id '%s': versioned ids are not supported"
			                      : "id '%s' is not a name ([a-zA-Z_/][a-zA-Z0-9_/.-]*)",
			            id);
	/* the file is named after the id, '/' written '_' */
	const char *base = strrchr(p->file, '/');
	base = base ? base + 1 : p->file;
	size_t il = strlen(id);
	int same = strlen(base) == il + 4 && !strcmp(base + il, ".xml");
	for (size_t i = 0; same && i < il; i++)
		same = base[i] == (id[i] == '/' ? '_' : id[i]);
	if (!same)
		return fail(p, STRATA_PARSE, "the file of %s '%s' must be named after it", name, id);
	struct qnode **list = p->want_type ? &p->q->types : &p->q->profiles;
	for (struct qnode *n = *list; n; n = n->next)
		if (!strcmp(n->id, id))
			return fail(p, STRATA_PARSE, "%s '%s' is defined twice (also in %s)", name, id,
			            n->file);
	struct qnode *n = base_arena_alloc(&p->q->a, sizeof *n, 8);
	if (!n)
		return fail(p, STRATA_NOMEM, "query profiles");
	memset(n, 0, sizeof *n);
	n->is_type = p->want_type;
	n->file = p->file;
	n->line = line_of(p);
	n->col = col_of(p);
	n->tail = &n->fields;
	if (!(n->id = adup(p, id)))
		return;
	const char *t = attr(atts, "type"), *inh = attr(atts, "inherits");
	if ((t && !(n->type = adup(p, t))) || (inh && !(n->inherits = adup(p, inh))))
		return;
	while (*list) /* in file order, for the messages */
		list = &(*list)->next;
	*list = n;
	p->node = n;
}

static void start_field(struct parse *p, const char **atts)
{
	static const char *const pok[] = { "name", "overridable", NULL };
	static const char *const tok[] = { "name", "type", "mandatory", "overridable", "alias",
		                           "description", NULL };
	if (only(p, "field", atts, p->want_type ? tok : pok))
		return;
	const char *name = attr(atts, "name"), *type = attr(atts, "type");
	if (!name || !*name)
		return fail(p, STRATA_PARSE, "<field> has no name");
	if (p->want_type && (!type || !*type))
		return fail(p, STRATA_PARSE, "<field name=\"%s\"> has no type", name);
	for (struct qfield *f = p->node->fields; f; f = f->next)
		if (!strcmp(f->name, name))
			return fail(p, STRATA_PARSE, "field '%s' is given twice (first at line %d)", name,
			            f->line);
	struct qfield *f = base_arena_alloc(&p->q->a, sizeof *f, 8);
	if (!f)
		return fail(p, STRATA_NOMEM, "query profiles");
	memset(f, 0, sizeof *f);
	f->overridable = -1;
	f->file = p->file;
	f->line = line_of(p);
	f->col = col_of(p);
	if (!(f->name = adup(p, name)) || (type && !(f->type = adup(p, type))) ||
	    boolean(p, "field", "overridable", attr(atts, "overridable"), &f->overridable) ||
	    boolean(p, "field", "mandatory", attr(atts, "mandatory"), &f->mandatory))
		return;
	const char *alias = attr(atts, "alias");
	if (alias && !(f->alias = adup(p, alias)))
		return;
	*p->node->tail = f;
	p->node->tail = &f->next;
	p->field = f;
	p->ntext = 0;
}

static void XMLCALL on_start(void *ud, const char *name, const char **atts)
{
	struct parse *p = ud;
	p->depth++;
	if (p->rc)
		return;
	if (p->depth == 1)
		return start_root(p, name, atts);
	if (p->depth == 2 && !strcmp(name, "description"))
		return;
	if (p->depth == 2 && !strcmp(name, "field"))
		return start_field(p, atts);
	if (p->depth == 3 && p->field && !p->want_type && !strcmp(name, "ref")) {
		if (p->field->ref || p->ntext)
			return fail(p, STRATA_PARSE, "field '%s': a <ref> is all a field may hold",
			            p->field->name);
		p->in_ref = 1;
		p->ntext = 0;
		return;
	}
	if (p->depth == 2 && (!strcmp(name, "dimensions") || !strcmp(name, "query-profile")))
		return fail(p, STRATA_NOT_IMPLEMENTED,
		            "<%s>: query profile variants are not supported (one set of values per "
		            "profile; use one profile per variant and choose it with queryProfile)",
		            name);
	if (p->depth == 2 && p->want_type && !strcmp(name, "strict"))
		return fail(p, STRATA_NOT_IMPLEMENTED,
		            "<strict/>: strict query profile types are not supported");
	if (p->depth == 2 && p->want_type && !strcmp(name, "match"))
		return fail(p, STRATA_NOT_IMPLEMENTED,
		            "<match>: path matching of query profile names is not supported");
	fail(p, STRATA_NOT_IMPLEMENTED, "<%s> is not supported here", name);
}

static void XMLCALL on_text(void *ud, const char *s, int len)
{
	struct parse *p = ud;
	if (p->rc || !p->field || len <= 0 || (p->depth != 2 && !p->in_ref))
		return;
	if (p->want_type) {
		for (int i = 0; i < len; i++)
			if (s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r')
				return fail(p, STRATA_PARSE, "a type's <field> holds no text");
		return;
	}
	if (p->ntext + (size_t)len + 1 > MAX_TEXT)
		return fail(p, STRATA_LIMIT, "a value longer than %d bytes", MAX_TEXT);
	if (base_grow((void **)&p->text, &p->captext, p->ntext + (size_t)len + 1, 1, MAX_TEXT))
		return fail(p, STRATA_NOMEM, "query profiles");
	memcpy(p->text + p->ntext, s, (size_t)len);
	p->ntext += (size_t)len;
	p->text[p->ntext] = 0;
}

/* The text gathered, trimmed, into the arena. */
static char *take_text(struct parse *p)
{
	size_t b = 0, e = p->ntext;
	while (b < e && strchr(" \t\r\n", p->text[b]))
		b++;
	while (e > b && strchr(" \t\r\n", p->text[e - 1]))
		e--;
	char *c = base_arena_strndup(&p->q->a, p->text ? p->text + b : "", e - b);
	if (!c)
		fail(p, STRATA_NOMEM, "query profiles");
	p->ntext = 0;
	return c;
}

static void XMLCALL on_end(void *ud, const char *name)
{
	struct parse *p = ud;
	int depth = p->depth--;
	if (p->rc || !p->field)
		return;
	if (depth == 3 && p->in_ref) {
		p->in_ref = 0;
		if ((p->field->ref = take_text(p)) && !*p->field->ref)
			fail(p, STRATA_PARSE, "field '%s': an empty <ref>", p->field->name);
	} else if (depth == 2) {
		if (!p->want_type && !p->field->ref) {
			p->field->value = take_text(p);
		} else if (p->field->ref) {
			for (size_t i = 0; i < p->ntext; i++)
				if (!strchr(" \t\r\n", p->text[i]))
					return fail(p, STRATA_PARSE, "field '%s': a <ref> is all a field may hold",
					            p->field->name);
		}
		p->field = NULL;
		p->ntext = 0;
	}
	(void)name;
}

static int read_file(struct eng_qprofiles *q, const char *file, int want_type,
                     struct strata_error *err)
{
	char *text;
	size_t n;
	int rc = base_read_file(file, &text, &n, err);
	if (rc)
		return rc;
	struct parse p = { .q = q, .file = file, .want_type = want_type, .err = err };
	p.xp = eng_xml_parser();
	if (!p.xp) {
		base_free(text, n + 1);
		return base_nomem(err, "parsing %s", file);
	}
	XML_SetUserData(p.xp, &p);
	XML_SetElementHandler(p.xp, on_start, on_end);
	XML_SetCharacterDataHandler(p.xp, on_text);
	if (XML_Parse(p.xp, text, (int)n, XML_TRUE) == XML_STATUS_ERROR && !p.rc) {
		enum XML_Error code = XML_GetErrorCode(p.xp);
		p.rc = code == XML_ERROR_NO_MEMORY
		               ? base_nomem(err, "parsing %s", file)
		               : base_err(err, STRATA_PARSE, "%s:%d:%d: %s", file, line_of(&p),
		                          col_of(&p), XML_ErrorString(code));
	}
	XML_ParserFree(p.xp);
	base_free(text, n + 1);
	if (p.text)
		base_free(p.text, p.captext);
	return p.rc;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Read every DIR/ *.xml, in name order. */
static int read_dir(struct eng_qprofiles *q, const char *dir, int want_type,
                    struct strata_error *err)
{
	DIR *d = opendir(dir);
	if (!d)
		return errno == ENOENT || errno == ENOTDIR
		               ? 0
		               : base_err(err, errno, "%s: %s", dir, strerror(errno));
	char **names = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;
	struct dirent *e;
	while (!rc && (e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (l < 5 || strcmp(e->d_name + l - 4, ".xml"))
			continue;
		if (n == MAX_FILES)
			rc = base_err(err, STRATA_LIMIT, "%s: more than %d files", dir, MAX_FILES);
		else if (base_grow((void **)&names, &cap, n + 1, sizeof *names, MAX_FILES) ||
		         !(names[n] = base_path_join(dir, e->d_name)))
			rc = base_nomem(err, "%s", dir);
		else
			n++;
	}
	closedir(d);
	if (n)
		qsort(names, n, sizeof *names, name_cmp);
	for (size_t i = 0; i < n; i++) {
		char *kept = rc ? NULL : base_arena_strdup(&q->a, names[i]);
		if (!rc && !kept)
			rc = base_nomem(err, "%s", dir);
		if (!rc)
			rc = read_file(q, kept, want_type, err);
		base_strfree(names[i]);
	}
	if (names)
		base_free(names, cap * sizeof *names);
	return rc;
}

/* ---- flattening ---------------------------------------------------------------------- */

static const struct qnode *find(const struct qnode *list, const char *id, size_t len)
{
	for (; list; list = list->next)
		if (strlen(list->id) == len && !strncmp(list->id, id, len))
			return list;
	return NULL;
}

static struct flat *flat_find(struct flat *f, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(f[i].name, name))
			return &f[i];
	return NULL;
}

/* The next space-separated word of *s, its length in *len; NULL at the end. */
static const char *word(const char **s, size_t *len)
{
	const char *p = *s;
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == ',')
		p++;
	if (!*p)
		return NULL;
	const char *b = p;
	while (*p && *p != ' ' && *p != '\t' && *p != '\n' && *p != '\r' && *p != ',')
		p++;
	*len = (size_t)(p - b);
	*s = p;
	return b;
}

static int flatten(struct eng_qprofiles *q, struct qnode *n, struct strata_error *err);

/* Add f to n's flat list, unless its name is there. */
static int add_flat(struct eng_qprofiles *q, struct qnode *n, const struct flat *f,
                    struct strata_error *err)
{
	struct flat **out = &n->flat;
	int *nout = &n->nflat;
	size_t *cap = &n->flatcap;
	if (flat_find(*out, *nout, f->name))
		return 0;
	if (*nout == MAX_FLAT)
		return base_err(err, STRATA_LIMIT, "%s:%d:%d: %s '%s' sets more than %d parameters",
		                n->file, n->line, n->col, n->is_type ? "type" : "query profile", n->id,
		                MAX_FLAT);
	if (base_grow((void **)out, cap, (size_t)*nout + 1, sizeof **out, MAX_FLAT))
		return base_nomem(err, "query profiles");
	(*out)[(*nout)++] = *f;
	(void)q;
	return 0;
}

/* What type t wants when text v is not of it, else NULL. */
static const char *want_of(const char *v, const char *t)
{
	char *end;
	const char *want = NULL;
	if (!strcmp(t, "integer") || !strcmp(t, "long")) {
		errno = 0;
		long long x = strtoll(v, &end, 10);
		if (!*v || *end || errno || (t[0] == 'i' && (x < INT_MIN || x > INT_MAX)))
			want = t[0] == 'i' ? "a 32-bit integer" : "a 64-bit integer";
	} else if (!strcmp(t, "float") || !strcmp(t, "double")) {
		strtod(v, &end);
		if (!*v || *end)
			want = "a number";
	} else if (!strcmp(t, "boolean")) {
		if (strcmp(v, "true") && strcmp(v, "false"))
			want = "true or false";
	}
	return want;
}

/* Check value v of field src against type t; 0 or an error at src. */
static int check_value(const struct qfield *src, const char *v, const char *t,
                       struct strata_error *err)
{
	const char *want = want_of(v, t);
	if (!want)
		return 0;
	return base_err(err, STRATA_INVALID_ARGUMENT, "%s:%d:%d: field '%s' is '%s': its type %s wants %s",
	                src->file, src->line, src->col, src->name, v, t, want);
}

static int is_ref_type(const char *t)
{
	return t && (!strcmp(t, "query-profile") || !strncmp(t, "query-profile:", 14));
}

static int known_type(const char *t)
{
	static const char *const prim[] = { "string", "integer", "long", "float", "double",
		                            "boolean" };
	for (size_t i = 0; i < sizeof prim / sizeof *prim; i++)
		if (!strcmp(t, prim[i]))
			return 1;
	return is_ref_type(t) || !strncmp(t, "tensor", 6);
}

/* The flat fields of type n (inherited ones after its own). */
static int flatten_type(struct eng_qprofiles *q, struct qnode *n, struct strata_error *err)
{
	int rc = 0;
	for (struct qfield *f = n->fields; f && !rc; f = f->next) {
		if (!known_type(f->type))
			return base_err(err, STRATA_NOT_IMPLEMENTED,
			                "%s:%d:%d: field '%s': type '%s' is not supported (string, "
			                "integer, long, float, double, boolean, a tensor type, "
			                "query-profile[:TYPE])",
			                f->file, f->line, f->col, f->name, f->type);
		struct flat fl = { f->name, NULL, NULL, 0, f->overridable, f, f, NULL };
		rc = add_flat(q, n, &fl, err);
	}
	const char *s = n->inherits ? n->inherits : "";
	size_t len;
	const char *w;
	while (!rc && (w = word(&s, &len))) {
		if (len == 6 && !strncmp(w, "native", 6))
			continue; /* the built-in parameters: untyped here */
		struct qnode *p = (struct qnode *)find(q->types, w, len);
		if (!p)
			return base_err(err, STRATA_NOT_FOUND,
			                "%s:%d:%d: query profile type '%s' inherits '%.*s', which is not "
			                "defined in query-profiles/types/",
			                n->file, n->line, n->col, n->id, (int)len, w);
		if ((rc = flatten(q, p, err)) != 0)
			break;
		for (int i = 0; i < p->nflat && !rc; i++)
			rc = add_flat(q, n, &p->flat[i], err);
	}
	return rc;
}

/* The flat fields of profile n, its type found. */
static int flatten_profile(struct eng_qprofiles *q, struct qnode *n, struct strata_error *err)
{
	int rc = 0;
	char key[1024];
	for (struct qfield *f = n->fields; f && !rc; f = f->next) {
		if (!f->ref) {
			struct flat fl = { f->name, f->value, NULL, 0, f->overridable, NULL, f, NULL };
			rc = add_flat(q, n, &fl, err);
			continue;
		}
		struct qnode *r = (struct qnode *)find(q->profiles, f->ref, strlen(f->ref));
		if (!r)
			return base_err(err, STRATA_NOT_FOUND,
			                "%s:%d:%d: field '%s' refers to query profile '%s', which is not "
			                "defined",
			                f->file, f->line, f->col, f->name, f->ref);
		if ((rc = flatten(q, r, err)) != 0)
			return rc;
		for (int i = 0; i < r->nflat && !rc; i++) {
			if ((size_t)snprintf(key, sizeof key, "%s.%s", f->name, r->flat[i].name) >= sizeof key)
				return base_err(err, STRATA_LIMIT, "%s:%d:%d: a parameter name longer than %zu",
				                f->file, f->line, f->col, sizeof key - 1);
			struct flat fl = r->flat[i];
			if (!(fl.name = base_arena_strdup(&q->a, key)))
				return base_nomem(err, "query profiles");
			if (f->overridable >= 0)
				fl.overridable = f->overridable;
			fl.tf = NULL;
			fl.full = NULL; /* a new name, checked anew */
			fl.dropped = 0;
			rc = add_flat(q, n, &fl, err);
		}
	}
	const char *s = n->inherits ? n->inherits : "";
	size_t len;
	const char *w;
	while (!rc && (w = word(&s, &len))) {
		struct qnode *p = (struct qnode *)find(q->profiles, w, len);
		if (!p)
			return base_err(err, STRATA_NOT_FOUND,
			                "%s:%d:%d: query profile '%s' inherits '%.*s', which is not defined",
			                n->file, n->line, n->col, n->id, (int)len, w);
		if ((rc = flatten(q, p, err)) != 0)
			break;
		if (!n->type && !n->tnode)
			n->tnode = p->tnode;
		for (int i = 0; i < p->nflat && !rc; i++) {
			struct flat fl = p->flat[i];
			fl.tf = NULL;
			rc = add_flat(q, n, &fl, err);
		}
	}
	if (rc)
		return rc;
	if (n->type) {
		struct qnode *t = (struct qnode *)find(q->types, n->type, strlen(n->type));
		if (!t && strcmp(n->type, "native"))
			return base_err(err, STRATA_NOT_FOUND,
			                "%s:%d:%d: query profile '%s' has type '%s', which is not defined "
			                "in query-profiles/types/",
			                n->file, n->line, n->col, n->id, n->type);
		if (t && (rc = flatten(q, t, err)) != 0)
			return rc;
		n->tnode = t;
	}
	/* each value against its type; the type's overridable where the field says none */
	for (int i = 0; i < n->nflat; i++) {
		struct flat *fl = &n->flat[i];
		fl->tf = NULL;
		struct flat *tf = n->tnode ? flat_find(n->tnode->flat, n->tnode->nflat, fl->name) : NULL;
		if (tf) {
			fl->tf = tf->tf;
			if (fl->overridable < 0)
				fl->overridable = tf->tf->overridable;
			if (is_ref_type(tf->tf->type))
				return base_err(err, STRATA_INVALID_ARGUMENT,
				                "%s:%d:%d: field '%s' has type %s: its value must be a <ref>",
				                fl->src->file, fl->src->line, fl->src->col, fl->name,
				                tf->tf->type);
			if (!strstr(fl->value, "%{") &&
			    (rc = check_value(fl->src, fl->value, tf->tf->type, err)) != 0)
				return rc;
		}
	}
	return 0;
}

/* Check %{...} in the values of profile n: closed, and local ones known. */
static int check_subst(const struct qnode *n, struct strata_error *err)
{
	for (int i = 0; i < n->nflat; i++) {
		const struct flat *fl = &n->flat[i];
		for (const char *s = strstr(fl->value, "%{"); s; s = strstr(s, "%{")) {
			const char *e = strchr(s, '}');
			if (!e)
				return base_err(err, STRATA_PARSE, "%s:%d:%d: field '%s': '%%{' is not closed",
				                fl->src->file, fl->src->line, fl->src->col, fl->name);
			int found = s[2] != '.';
			for (int k = 0; !found && k < n->nflat; k++)
				found = strlen(n->flat[k].name) == (size_t)(e - s - 3) &&
				        !strncmp(n->flat[k].name, s + 3, (size_t)(e - s - 3));
			if (!found)
				return base_err(err, STRATA_NOT_FOUND,
				                "%s:%d:%d: field '%s': %.*s names no field of query profile "
				                "'%s'",
				                fl->src->file, fl->src->line, fl->src->col, fl->name,
				                (int)(e - s + 1), s, n->id);
			s = e + 1;
		}
	}
	return 0;
}

/* Each value of profile n as a request would give it: a parameter Strata
 * refuses is refused here, at its field; each one's full name noted.  A
 * searchChain other than Vespa's own names a chain of Java components
 * (told at deploy, once, and left out). */
static int check_params(struct eng_qprofiles *q, struct qnode *n, struct strata_error *err)
{
	for (int i = 0; i < n->nflat; i++) {
		struct flat *fl = &n->flat[i];
		if (fl->full || fl->dropped)
			continue; /* inherited, checked in its own profile */
		json_t *one = json_object(), *flat = NULL;
		int rc = 0;
		/* a value substituted at each search is checked then */
		json_t *v = json_string(strstr(fl->value, "%{") ? "vespa" : fl->value);
		if (!one || !v || json_object_set_new(one, fl->name, v))
			rc = base_nomem(err, "query profiles");
		if (!rc)
			rc = eng_request_flatten(one, &flat, err);
		const char *key = NULL;
		json_t *val;
		if (!rc && json_object_size(flat) == 1)
			json_object_foreach(flat, key, val) break;
		if (!rc && !key)
			rc = base_err(err, STRATA_INVALID_ARGUMENT, "%s:%d:%d: field '%s': not a parameter",
			              fl->src->file, fl->src->line, fl->src->col, fl->name);
		if (!rc && !(fl->full = base_arena_strdup(&q->a, key)))
			rc = base_nomem(err, "query profiles");
		json_decref(one);
		json_decref(flat);
		if (rc && rc != STRATA_NOMEM && !strcmp(fl->name, "searchChain")) {
			fl->dropped = 1;
			if (q->notice) {
				char msg[2 * STRATA_ERRMSG_MAX];
				snprintf(msg, sizeof msg,
				         "%s:%d:%d: query profile '%s': searchChain '%s' is a chain of Java "
				         "components, which a single node without a JVM cannot run; its "
				         "queries run without it",
				         fl->src->file, fl->src->line, fl->src->col, n->id, fl->value);
				q->notice(q->notice_ud, msg);
			}
			continue;
		}
		if (rc == STRATA_NOMEM)
			return rc;
		if (rc == STRATA_NOT_IMPLEMENTED) {
			/* as Vespa with a feature a single node lacks: told at deploy,
			 * and the searches that use the profile fail with the reason */
			char msg[2 * STRATA_ERRMSG_MAX];
			snprintf(msg, sizeof msg, "%s:%d:%d: query profile '%s': %s", fl->src->file,
			         fl->src->line, fl->src->col, n->id, err ? err->msg : "not supported");
			if (!(fl->refused = base_arena_strdup(&q->a, msg)))
				return base_nomem(err, "query profiles");
			fl->dropped = 1;
			if (q->notice) {
				char note[2 * STRATA_ERRMSG_MAX + 64];
				snprintf(note, sizeof note, "%s; searches with this profile are refused", msg);
				q->notice(q->notice_ud, note);
			}
			if (err)
				memset(err, 0, sizeof *err);
			continue;
		}
		if (rc)
			return base_err_prefix(err, rc, "%s:%d:%d: query profile '%s'", fl->src->file,
			                       fl->src->line, fl->src->col, n->id);
	}
	return 0;
}

static int flatten(struct eng_qprofiles *q, struct qnode *n, struct strata_error *err)
{
	if (n->state == 2)
		return 0;
	if (n->state == 1)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "%s:%d:%d: %s '%s' inherits or refers to itself", n->file, n->line,
		                n->col, n->is_type ? "query profile type" : "query profile", n->id);
	n->state = 1;
	int rc = n->is_type ? flatten_type(q, n, err) : flatten_profile(q, n, err);
	if (!rc && !n->is_type)
		rc = check_subst(n, err);
	if (!rc && !n->is_type)
		rc = check_params(q, n, err);
	n->state = rc ? 1 : 2;
	return rc;
}

/* ---- the typed query inputs ------------------------------------------------------------ */

/* X of "ranking.features.query(X)" (or the request's forms input.query(X),
 * query(X)) into *x, *xl; 0 when name is none of them. */
static int feature_name(const char *name, const char **x, size_t *xl)
{
	static const char *const pre[] = { "ranking.features.query(", "input.query(", "query(" };
	size_t l = strlen(name);
	for (size_t i = 0; i < sizeof pre / sizeof *pre; i++) {
		size_t pl = strlen(pre[i]);
		if (l > pl + 1 && !strncmp(name, pre[i], pl) && name[l - 1] == ')') {
			*x = name + pl;
			*xl = l - pl - 1;
			return 1;
		}
	}
	return 0;
}

/* The typed ranking.features.query(X) fields of every type, for the rank
 * profiles: tensors as typed, numbers as double. */
static int collect_inputs(struct eng_qprofiles *q, struct strata_error *err)
{
	int n = 0;
	for (const struct qnode *t = q->types; t; t = t->next)
		for (const struct qfield *f = t->fields; f; f = f->next)
			n++;
	if (!n)
		return 0;
	q->inputs = base_arena_alloc(&q->a, (size_t)n * sizeof *q->inputs, 8);
	if (!q->inputs)
		return base_nomem(err, "query profile types");
	for (const struct qnode *t = q->types; t; t = t->next)
		for (const struct qfield *f = t->fields; f; f = f->next) {
			const char *x;
			size_t xl;
			if (!feature_name(f->name, &x, &xl))
				continue;
			const char *type = !strncmp(f->type, "tensor", 6) ? f->type
			                   : (!strcmp(f->type, "float") || !strcmp(f->type, "double") ||
			                      !strcmp(f->type, "integer") || !strcmp(f->type, "long"))
			                           ? "double"
			                           : NULL;
			if (!type)
				continue;
			char *name = base_arena_strndup(&q->a, x, xl);
			if (!name)
				return base_nomem(err, "query profile types");
			int dup = 0;
			for (int i = 0; i < q->ninputs && !dup; i++) {
				if (strcmp(q->inputs[i].name, name))
					continue;
				if (strcmp(q->inputs[i].type, type))
					return base_err(err, STRATA_TYPE,
					                "%s:%d:%d: query(%s) is typed %s here and %s at %s:%d",
					                f->file, f->line, f->col, name, type, q->inputs[i].type,
					                q->inputs[i].file, q->inputs[i].line);
				dup = 1;
			}
			if (!dup)
				q->inputs[q->ninputs++] =
				        (struct rank_typed_input){ name, type, f->file, f->line, f->col };
		}
	return 0;
}

/* ---- the handle --------------------------------------------------------------------------- */

void eng_qprofiles_free(struct eng_qprofiles *q)
{
	if (!q)
		return;
	for (int k = 0; k < 2; k++)
		for (struct qnode *n = k ? q->types : q->profiles; n; n = n->next)
			if (n->flat)
				base_free(n->flat, n->flatcap * sizeof *n->flat);
	base_arena_free(&q->a);
	base_free(q, sizeof *q);
}

int eng_qprofiles_load(struct strata *db, struct rank_loader *loader, struct strata_error *err)
{
	db->qprofiles = NULL;
	char *dir = base_path_join(db->appdir, "search/query-profiles");
	char *tdir = dir ? base_path_join(dir, "types") : NULL;
	struct eng_qprofiles *q = tdir ? base_calloc(1, sizeof *q) : NULL;
	int rc = 0;
	if (!q) {
		rc = base_nomem(err, "query profiles");
		goto out;
	}
	base_arena_init(&q->a, 1 << 14);
	q->notice = loader->notice;
	q->notice_ud = loader->ud;
	if ((rc = read_dir(q, tdir, 1, err)) != 0 || (rc = read_dir(q, dir, 0, err)) != 0)
		goto out;
	for (int k = 0; k < 2 && !rc; k++)
		for (struct qnode *n = k ? q->profiles : q->types; n && !rc; n = n->next)
			rc = flatten(q, n, err);
	if (rc || (rc = collect_inputs(q, err)) != 0)
		goto out;
	if (q->profiles || q->types) {
		loader->typed_inputs = q->inputs;
		loader->ntyped_inputs = q->ninputs;
		db->qprofiles = q;
		q = NULL;
	}
out:
	eng_qprofiles_free(q);
	base_strfree(dir);
	base_strfree(tdir);
	return rc;
}

/* ---- a request ----------------------------------------------------------------------------- */

struct buf {
	char *p;
	size_t n, cap;
};

static int put(struct buf *b, const char *s, size_t n, struct strata_error *err)
{
	if (b->n + n + 1 > 4 * (size_t)MAX_TEXT)
		return base_err(err, STRATA_LIMIT, "a query profile value longer than %d bytes",
		                4 * MAX_TEXT);
	if (base_grow((void **)&b->p, &b->cap, b->n + n + 1, 1, 4 * (size_t)MAX_TEXT))
		return base_nomem(err, "query profile value");
	memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = 0;
	return 0;
}

/* v with its %{name} and %{.name} replaced, appended to b. */
static int subst(const struct qnode *prof, const json_t *req, const char *v, int depth,
                 struct buf *b, struct strata_error *err)
{
	if (depth > MAX_SUBST_DEPTH)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "query profile '%s': substitutions nested more than %d deep (a loop?)",
		                prof->id, MAX_SUBST_DEPTH);
	int rc = 0;
	while (!rc && *v) {
		const char *s = strstr(v, "%{"), *e = s ? strchr(s, '}') : NULL;
		if (!s || !e)
			return put(b, v, strlen(v), err);
		if ((rc = put(b, v, (size_t)(s - v), err)) != 0)
			return rc;
		int local = s[2] == '.';
		char name[512];
		snprintf(name, sizeof name, "%.*s", (int)(e - s - 2 - local), s + 2 + local);
		v = e + 1;
		const json_t *rv = local ? NULL : eng_request_param(req, name);
		if (json_is_string(rv)) {
			rc = put(b, json_string_value(rv), json_string_length(rv), err);
		} else if (rv) {
			char *t = eng_json_dump(rv, 0);
			rc = t ? put(b, t, strlen(t), err) : base_nomem(err, "query profile value");
			base_strfree(t);
		} else {
			const struct flat *fl = flat_find(prof->flat, prof->nflat, name);
			if (fl)
				rc = subst(prof, req, fl->value, depth + 1, b, err);
		}
	}
	return rc;
}

/* The JSON value of text v for field fl. */
static int to_json(const struct qnode *prof, const struct flat *fl, const char *v, json_t **out,
                   struct strata_error *err)
{
	const char *t = fl->tf ? fl->tf->type : NULL;
	const char *want = t ? want_of(v, t) : NULL;
	const char *x;
	size_t xl;
	char *end;
	if (want)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "query profile '%s': field '%s' is '%s': its type %s wants %s",
		                prof->id, fl->name, v, t, want);
	if (t && (!strcmp(t, "integer") || !strcmp(t, "long")))
		*out = json_integer(strtoll(v, NULL, 10));
	else if (t && (!strcmp(t, "float") || !strcmp(t, "double")))
		*out = json_real(strtod(v, NULL));
	else if (t && !strcmp(t, "boolean"))
		*out = json_boolean(!strcmp(v, "true"));
	else if (!t && feature_name(fl->name, &x, &xl) && *v && (strtod(v, &end), !*end) &&
	         isfinite(strtod(v, NULL)))
		*out = json_real(strtod(v, NULL)); /* a number input, as a number */
	else
		*out = json_string(v);
	return *out ? 0 : base_nomem(err, "query profile value");
}

/* Request parameters that are aliases of the type's fields, renamed. */
static int rename_aliases(const struct qnode *t, json_t *req, struct strata_error *err)
{
	for (int i = 0; t && i < t->nflat; i++) {
		const struct qfield *f = t->flat[i].tf;
		const char *s = f->alias ? f->alias : "";
		const char *w;
		size_t len;
		while ((w = word(&s, &len))) {
			const char *key;
			json_t *v, *hit = NULL;
			char k[512];
			json_object_foreach(req, key, v) {
				if (strlen(key) == len && !strncasecmp(key, w, len) && strcmp(key, f->name)) {
					hit = v;
					snprintf(k, sizeof k, "%s", key);
					break;
				}
			}
			if (!hit)
				continue;
			if (!eng_request_param(req, f->name) && json_object_set(req, f->name, hit))
				return base_nomem(err, "request");
			json_object_del(req, k);
		}
	}
	return 0;
}

int eng_qprofiles_apply(const struct eng_qprofiles *q, json_t *req, struct strata_error *err)
{
	const json_t *pv = eng_request_param(req, "queryProfile");
	if (pv && !json_is_string(pv))
		return base_err(err, STRATA_INVALID_ARGUMENT, "\"queryProfile\" must be a string");
	const char *pname = pv ? json_string_value(pv) : "default";
	const struct qnode *prof = q ? find(q->profiles, pname, strlen(pname)) : NULL;
	if (!prof) {
		if (!pv || !strcmp(pname, "default"))
			return 0;
		char known[STRATA_ERRMSG_MAX / 2] = "";
		size_t n = 0;
		for (const struct qnode *p = q ? q->profiles : NULL; p && n < sizeof known; p = p->next)
			n += (size_t)snprintf(known + n, sizeof known - n, "%s'%s'", n ? ", " : "", p->id);
		return base_err(err, STRATA_NOT_FOUND,
		                "queryProfile '%s' is not defined (search/query-profiles/ has %s)", pname,
		                n ? known : "none");
	}
	int rc = rename_aliases(prof->tnode, req, err);
	json_t *flat = NULL;
	if (rc || (rc = eng_request_flatten(req, &flat, err)) != 0)
		return rc;
	/* the values, substituted from the request as it came, set where it sets none */
	json_t *vals = json_object();
	if (!vals)
		rc = base_nomem(err, "request");
	struct buf b = { 0 };
	for (int i = 0; i < prof->nflat && !rc; i++) {
		const struct flat *fl = &prof->flat[i];
		if (fl->refused)
			rc = base_err(err, STRATA_NOT_IMPLEMENTED, "%s", fl->refused);
		if (fl->dropped)
			continue;
		const json_t *rv = json_object_get(flat, fl->full);
		const char *t = fl->tf ? fl->tf->type : NULL;
		if (rv && fl->overridable != 0) {
			const char *want = t && json_is_string(rv) ? want_of(json_string_value(rv), t) : NULL;
			if (want)
				rc = base_err(err, STRATA_INVALID_ARGUMENT,
				              "\"%s\" is '%s': query profile type '%s' wants %s", fl->name,
				              json_string_value(rv), prof->tnode->id, want);
			continue;
		}
		b.n = 0;
		json_t *jv = NULL;
		if ((rc = put(&b, "", 0, err)) || (rc = subst(prof, flat, fl->value, 0, &b, err)) ||
		    (rc = to_json(prof, fl, b.p, &jv, err)))
			break;
		if (json_object_set_new(vals, fl->name, jv))
			rc = base_nomem(err, "request");
	}
	if (b.p)
		base_free(b.p, b.cap);
	/* a substituted value is checked as a request's */
	json_t *cvals = NULL;
	if (!rc && (rc = eng_request_flatten(vals, &cvals, err)) != 0)
		rc = base_err_prefix(err, rc, "query profile '%s'", prof->id);
	if (!rc && json_object_update(flat, cvals))
		rc = base_nomem(err, "request");
	json_decref(cvals);
	json_decref(vals);
	for (int i = 0; !rc && prof->tnode && i < prof->tnode->nflat; i++) {
		const struct qfield *f = prof->tnode->flat[i].tf;
		if (f->mandatory && !json_object_get(flat, f->name))
			rc = base_err(err, STRATA_INVALID_ARGUMENT,
			              "\"%s\" is mandatory in query profile type '%s' (query profile '%s'), "
			              "and neither the profile nor the request sets it",
			              f->name, prof->tnode->id, prof->id);
	}
	/* the request becomes its flat form with the profile's values */
	if (!rc && (json_object_clear(req) || json_object_update(req, flat)))
		rc = base_nomem(err, "request");
	json_decref(flat);
	return rc;
}
