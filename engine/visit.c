/*
 * visit.c: visiting, the documents of one type or of a content cluster's
 * types read in pages, each page in a read transaction of its own (the
 * store's one reader per call, beside queries and the writer); and
 * removing the documents a selection picks.
 *
 * The store hands out documents in increasing local id order (store_next);
 * a page ends after count documents, and its continuation is the place to
 * start the next page from: "v1.LID" in a visit of one type, "v1.T.LID"
 * (T: the document type's index in the application) in a visit of several,
 * so that a token from anywhere else is refused rather than misread.  Local
 * ids only grow, so a document stored before the visit began and left alone
 * is seen exactly once.
 *
 * A selection (selection.c) is evaluated on each document of the
 * namespace as it is read; only those that match count toward the page.
 *
 * Content clusters are read from services.xml here, only their ids and
 * the document types each holds (<content id><documents><document
 * type>): a single node serves them all from one store, so a cluster is a
 * name for a set of document types.  An application whose services.xml
 * declares none, or that has no services.xml, has one cluster, "default",
 * holding every type.
 *
 * A removal by selection scans like a visit, but inside write
 * transactions of at most REMOVE_BATCH removals each, committed one after
 * the other: what it reports removed is durable, and store_remove keeps
 * every index in step with the documents.
 */
#include <errno.h>
#include <expat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_int.h"

#define MAX_PAGE 1024
#define MAX_CLUSTERS 64
#define CLUSTER_ID_MAX 128
#define REMOVE_BATCH 1000
#define DEFAULT_CLUSTER "default"

/* ---- content clusters ------------------------------------------------------------- */

struct cluster {
	char id[CLUSTER_ID_MAX];
	unsigned char *types; /* ndoctypes flags: the types it holds */
};

struct clusters {
	int n;
	int ntypes;
	struct cluster c[MAX_CLUSTERS];
};

struct cparse {
	struct strata *db;
	struct clusters *cs;
	const char *path;
	XML_Parser xp;
	int depth;          /* of the element being read; the root is 1 */
	int in_content;     /* depth of the <content> being read, 0: none */
	int in_documents;   /* depth of its <documents>, 0: none */
	int rc;
	struct strata_error *err;
};


static const char *cattr(const char **atts, const char *name)
{
	for (int i = 0; atts[i]; i += 2)
		if (!strcmp(atts[i], name))
			return atts[i + 1];
	return NULL;
}

static void cfail(struct cparse *p, int code, const char *what, const char *name)
{
	if (p->rc)
		return;
	p->rc = code == STRATA_NOMEM
	      ? base_nomem(p->err, "%s", p->path)
	      : base_err(p->err, code, "%s:%d:%d: %s '%.100s'", p->path,
	                 (int)XML_GetCurrentLineNumber(p->xp),
	                 (int)XML_GetCurrentColumnNumber(p->xp) + 1, what, name);
	XML_StopParser(p->xp, XML_FALSE);
}

static void XMLCALL c_start(void *ud, const char *name, const char **atts)
{
	struct cparse *p = ud;
	p->depth++;
	if (p->rc)
		return;
	struct clusters *cs = p->cs;
	if (!p->in_content && !strcmp(name, "content") && p->depth <= 2) {
		/* a cluster: a child of <services>, or the root itself */
		const char *id = cattr(atts, "id");
		if (!id)
			id = "content"; /* the id a content cluster without one gets */
		if (strlen(id) >= CLUSTER_ID_MAX || !*id) {
			cfail(p, STRATA_INVALID_ARGUMENT, "a content cluster id must have 1 to 127 bytes, not",
			      id);
			return;
		}
		for (int i = 0; i < cs->n; i++)
			if (!strcmp(cs->c[i].id, id)) {
				cfail(p, STRATA_INVALID_ARGUMENT, "a second content cluster", id);
				return;
			}
		if (cs->n == MAX_CLUSTERS) {
			cfail(p, STRATA_LIMIT, "more than 64 content clusters, at", id);
			return;
		}
		struct cluster *c = &cs->c[cs->n];
		c->types = base_calloc((size_t)cs->ntypes + 1, 1);
		if (!c->types) {
			cfail(p, STRATA_NOMEM, "", "");
			return;
		}
		snprintf(c->id, sizeof c->id, "%s", id);
		cs->n++;
		p->in_content = p->depth;
	} else if (p->in_content && p->depth == p->in_content + 1 && !strcmp(name, "documents")) {
		p->in_documents = p->depth;
	} else if (p->in_documents && p->depth == p->in_documents + 1 &&
	           !strcmp(name, "document")) {
		const char *type = cattr(atts, "type");
		struct eng_doctype *dt = type ? eng_doctype_find(p->db, type) : NULL;
		if (!dt) {
			cfail(p, STRATA_INVALID_ARGUMENT,
			      "a content cluster's <document> names no schema's document type:",
			      type ? type : "(no type attribute)");
			return;
		}
		cs->c[cs->n - 1].types[dt - p->db->doctypes] = 1;
	}
}

static void XMLCALL c_end(void *ud, const char *name)
{
	(void)name;
	struct cparse *p = ud;
	if (p->depth == p->in_documents)
		p->in_documents = 0;
	if (p->depth == p->in_content)
		p->in_content = 0;
	p->depth--;
}

static void clusters_free(struct clusters *cs)
{
	for (int i = 0; i < cs->n; i++)
		base_free(cs->c[i].types, (size_t)cs->ntypes + 1);
	cs->n = 0;
}

/* The content clusters of db into cs (clusters_free in every case). */
static int clusters_read(struct strata *db, struct clusters *cs, struct strata_error *err)
{
	memset(cs, 0, sizeof *cs);
	cs->ntypes = db->ndoctypes;
	char *path = base_path_join(db->appdir, "services.xml");
	if (!path)
		return base_nomem(err, "services.xml");
	char *text = NULL;
	size_t n = 0;
	struct strata_error e2;
	int rc = base_read_file(path, &text, &n, &e2);
	if (rc && rc != ENOENT)
		*err = e2;
	if (!rc) {
		struct cparse p = { .db = db, .cs = cs, .path = path, .err = err };
		p.xp = eng_xml_parser();
		if (!p.xp) {
			rc = base_nomem(err, "parsing %s", path);
		} else {
			XML_SetUserData(p.xp, &p);
			XML_SetElementHandler(p.xp, c_start, c_end);
			if (XML_Parse(p.xp, text, (int)n, XML_TRUE) == XML_STATUS_ERROR && !p.rc)
				p.rc = XML_GetErrorCode(p.xp) == XML_ERROR_NO_MEMORY
				     ? base_nomem(err, "parsing %s", path)
				     : base_err(err, STRATA_PARSE, "%s:%d:%d: %s", path,
				                (int)XML_GetCurrentLineNumber(p.xp),
				                (int)XML_GetCurrentColumnNumber(p.xp) + 1,
				                XML_ErrorString(XML_GetErrorCode(p.xp)));
			rc = p.rc;
			XML_ParserFree(p.xp);
		}
		base_free(text, n + 1);
	} else if (rc == ENOENT) {
		rc = 0;
	}
	base_strfree(path);
	if (!rc && cs->n == 0) { /* no content cluster declared: one with every type */
		struct cluster *c = &cs->c[0];
		if (!(c->types = base_calloc((size_t)cs->ntypes + 1, 1)))
			return base_nomem(err, "the content clusters");
		memset(c->types, 1, (size_t)cs->ntypes);
		snprintf(c->id, sizeof c->id, DEFAULT_CLUSTER);
		cs->n = 1;
	}
	return rc;
}

/* "'a', 'b'": the names of cs (or of the types of c) into buf. */
static void name_list(const struct clusters *cs, const struct cluster *c, struct strata *db,
                      char *buf, size_t n)
{
	size_t k = 0;
	buf[0] = 0;
	int count = c ? db->ndoctypes : cs->n;
	for (int i = 0; i < count && k + 1 < n; i++) {
		if (c && !c->types[i])
			continue;
		const char *s = c ? db->doctypes[i].name : cs->c[i].id;
		int w = snprintf(buf + k, n - k, "%s'%s'", k ? ", " : "", s);
		if (w < 0)
			break;
		k += (size_t)w;
	}
	if (c && !buf[0])
		snprintf(buf, n, "none");
}

/* The document types a visit or removal covers into types (ndoctypes
 * flags): doctype (NULL: every type of cluster), which cluster (NULL: no
 * cluster named) must hold. */
static int visit_types(struct strata *db, const char *cluster, const char *doctype,
                       unsigned char *types, struct strata_error *err)
{
	memset(types, 0, (size_t)db->ndoctypes);
	struct eng_doctype *dt = NULL;
	if (doctype && !(dt = eng_doctype_find(db, doctype)))
		return base_err(err, STRATA_NOT_FOUND, "unknown document type '%s'", doctype);
	if (!cluster && !dt)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "a visit of every document type needs a content cluster (cluster=...)");
	if (!cluster) {
		types[dt - db->doctypes] = 1;
		return 0;
	}
	struct clusters cs;
	int rc = clusters_read(db, &cs, err);
	const struct cluster *c = NULL;
	for (int i = 0; !rc && i < cs.n && !c; i++)
		if (!strcmp(cs.c[i].id, cluster))
			c = &cs.c[i];
	char names[512];
	if (!rc && !c) {
		name_list(&cs, NULL, db, names, sizeof names);
		rc = base_err(err, STRATA_INVALID_ARGUMENT, "no content cluster '%.128s', only %s",
		              cluster, names);
	} else if (!rc && dt && !c->types[dt - db->doctypes]) {
		name_list(&cs, c, db, names, sizeof names);
		rc = base_err(err, STRATA_INVALID_ARGUMENT,
		              "no document type '%s' in content cluster '%s', only %s", dt->name,
		              c->id, names);
	} else if (!rc) {
		for (int i = 0; i < db->ndoctypes; i++)
			types[i] = dt ? &db->doctypes[i] == dt : c->types[i];
	}
	clusters_free(&cs);
	return rc;
}

/* ---- visiting ------------------------------------------------------------------- */

/* A continuation: "v1.LID" (one type, *t left 0) or "v1.T.LID" (several). */
static int parse_continuation(const char *c, int several, int ntypes, int *t, uint32_t *lid,
                              struct strata_error *err)
{
	*lid = 0;
	*t = 0;
	if (!c || !*c)
		return 0;
	char *end = NULL;
	unsigned long long x = 0, y = 0;
	int ok = !strncmp(c, "v1.", 3) && c[3] >= '0' && c[3] <= '9';
	if (ok)
		x = strtoull(c + 3, &end, 10);
	if (ok && several) {
		ok = *end == '.' && end[1] >= '0' && end[1] <= '9' && x < (unsigned long long)ntypes;
		if (ok)
			y = strtoull(end + 1, &end, 10);
	} else {
		y = x;
	}
	if (!ok || *end || y > UINT32_MAX)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "continuation '%.64s' was not made by a visit of %s", c,
		                several ? "several document types" : "one document type");
	*t = several ? (int)x : 0;
	*lid = (uint32_t)y;
	return 0;
}

/* Whether id is in namespace ns (NULL: any). */
static int in_namespace(const char *id, const char *ns)
{
	size_t n = ns ? strlen(ns) : 0;
	return !ns || (!strncmp(id, "id:", 3) && !strncmp(id + 3, ns, n) && id[3 + n] == ':');
}

int strata_visit_json(struct strata *db, const char *doctype, const char *ns,
                      const char *continuation, long count, char **out,
                      struct strata_error *err)
{
	return strata_visit_select_json(db, doctype, ns, NULL, continuation, count, out, err);
}

int strata_visit_select_json(struct strata *db, const char *doctype, const char *ns,
                             const char *selection, const char *continuation, long count,
                             char **out, struct strata_error *err)
{
	struct strata_visit v = { .doctype = doctype, .ns = ns, .selection = selection,
	                          .continuation = continuation, .count = count };
	*out = NULL;
	if (!doctype)
		return base_err(err, STRATA_NOT_FOUND, "unknown document type '(none)'");
	if (count < 1) /* 0 would only check */
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "a visit takes 1 to %d documents a page, not %ld", MAX_PAGE, count);
	return strata_visit_where_json(db, &v, out, err);
}

/* Whether document lid (id) of dt matches sel (NULL: every one); vals has
 * room for its values. */
static int selected(const struct eng_sel *sel, struct eng_doctype *dt, struct store_txn *r,
                    uint32_t lid, const char *id, struct store_value *vals, int *match,
                    struct strata_error *err)
{
	*match = 1;
	if (!sel)
		return 0;
	int rc = store_get(r, dt->store_id, lid, vals, err);
	return rc ? rc : eng_sel_eval(sel, dt, id, vals, match, err);
}

/* The largest value buffer a document of the flagged types needs. */
static size_t vals_size(const struct strata *db, const unsigned char *types)
{
	int most = 0;
	for (int i = 0; i < db->ndoctypes; i++)
		if (types[i] && db->doctypes[i].nfields > most)
			most = db->doctypes[i].nfields;
	return (size_t)(most + 1) * sizeof(struct store_value);
}

/* What a visit and a removal share: the types, the selection, the place. */
struct scan {
	unsigned char *types;
	size_t ntypes;
	struct eng_sel *sel;
	int several;
	int t;
	uint32_t lid;
	struct store_value *vals;
	size_t vsize;
};

static void scan_end(struct scan *s)
{
	if (s->types)
		base_free(s->types, s->ntypes);
	if (s->vals)
		base_free(s->vals, s->vsize);
	eng_sel_free(s->sel);
}

static int scan_begin(struct strata *db, const struct strata_visit *v, int need_selection,
                      struct scan *s, struct strata_error *err)
{
	memset(s, 0, sizeof *s);
	s->ntypes = (size_t)db->ndoctypes + 1;
	if (!(s->types = base_calloc(s->ntypes, 1)))
		return base_nomem(err, "visit");
	int rc = visit_types(db, v->cluster, v->doctype, s->types, err);
	if (rc)
		return rc;
	s->several = !v->doctype;
	if (need_selection && (!v->selection || !*v->selection))
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "removing by selection needs a selection ('true' selects every "
		                "document)");
	if ((rc = parse_continuation(v->continuation, s->several, db->ndoctypes, &s->t, &s->lid,
	                             err)))
		return rc;
	if (!s->several)
		s->t = (int)(eng_doctype_find(db, v->doctype) - db->doctypes);
	if (v->selection && *v->selection &&
	    (rc = eng_sel_parse(db, v->selection, "selection", &s->sel, err)))
		return rc;
	s->vsize = vals_size(db, s->types);
	if (!(s->vals = base_calloc(1, s->vsize)))
		return base_nomem(err, "visit");
	return 0;
}

int strata_visit_where_json(struct strata *db, const struct strata_visit *v, char **out,
                            struct strata_error *err)
{
	*out = NULL;
	if (v->count < 0 || v->count > MAX_PAGE)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "a visit takes 1 to %d documents a page, not %ld", MAX_PAGE, v->count);
	struct scan s;
	int rc = scan_begin(db, v, 0, &s, err);
	if (rc || v->count == 0) { /* 0: only checked */
		scan_end(&s);
		return rc;
	}
	struct store_txn *r;
	if ((rc = store_txn_begin(db->env, 0, &r, err))) {
		scan_end(&s);
		return rc;
	}
	json_t *docs = json_array(), *page = json_object();
	if (!docs || !page) {
		rc = base_nomem(err, "visit");
		goto out;
	}
	long n = 0;
	int more = 0;
	for (; !more && s.t < db->ndoctypes; s.t++, s.lid = 0) {
		struct eng_doctype *dt = &db->doctypes[s.t];
		if (!s.types[s.t])
			continue;
		while (store_next(r, dt->store_id, &s.lid) == 0) {
			if (n == v->count) {
				more = 1;
				break;
			}
			const char *id = store_docid(r, dt->store_id, s.lid);
			int match = 0;
			if (id && in_namespace(id, v->ns)) {
				memset(s.vals, 0, s.vsize);
				if ((rc = selected(s.sel, dt, r, s.lid, id, s.vals, &match, err)))
					goto out;
			}
			if (match) {
				json_t *doc;
				memset(s.vals, 0, s.vsize);
				if ((rc = eng_doc_json(dt, r, s.lid, id, s.vals, &doc, err)))
					goto out;
				if (json_array_append_new(docs, doc)) {
					rc = base_nomem(err, "visit");
					goto out;
				}
				n++;
			}
			if (s.lid == UINT32_MAX)
				break;
			s.lid++;
		}
		if (more)
			break;
	}
	char token[48];
	if (s.several)
		snprintf(token, sizeof token, "v1.%d.%lu", s.t, (unsigned long)s.lid);
	else
		snprintf(token, sizeof token, "v1.%lu", (unsigned long)s.lid);
	if (json_object_set(page, "documents", docs) ||
	    json_object_set_new(page, "documentCount", json_integer(n)) ||
	    (more && json_object_set_new(page, "continuation", json_string(token))) ||
	    !(*out = eng_json_dump(page, 0)))
		rc = base_nomem(err, "visit");
out:
	json_decref(docs);
	json_decref(page);
	store_txn_abort(r);
	scan_end(&s);
	return rc;
}

/* ---- removing by selection ---------------------------------------------------------- */

/* One write transaction: up to REMOVE_BATCH documents of s's type s->t
 * from s->lid on that match, removed; *done set when the type has no more. */
static int remove_batch(struct strata *db, const struct strata_visit *v, struct scan *s,
                        long *removed, int *done, struct strata_error *err)
{
	struct eng_doctype *dt = &db->doctypes[s->t];
	struct store_txn *w;
	int rc = store_txn_begin(db->env, 1, &w, err);
	if (rc)
		return rc;
	long k = 0;
	*done = 1;
	while (store_next(w, dt->store_id, &s->lid) == 0) {
		if (k == REMOVE_BATCH) {
			*done = 0;
			break;
		}
		const char *id = store_docid(w, dt->store_id, s->lid);
		int match = 0;
		if (id && in_namespace(id, v->ns)) {
			memset(s->vals, 0, s->vsize);
			if ((rc = selected(s->sel, dt, w, s->lid, id, s->vals, &match, err)))
				break;
		}
		if (match) {
			char *copy = base_strdup(id); /* id lives in the pages the removal changes */
			rc = copy ? store_remove(w, dt->store_id, copy, err)
			          : base_nomem(err, "removing by selection");
			base_strfree(copy);
			if (rc)
				break;
			k++;
		}
		if (s->lid == UINT32_MAX)
			break;
		s->lid++;
	}
	if (rc) {
		store_txn_abort(w);
		return rc;
	}
	if ((rc = store_txn_commit(w, err)))
		return rc;
	*removed += k;
	return 0;
}

int strata_remove_where(struct strata *db, const struct strata_visit *v, long *removed,
                        struct strata_error *err)
{
	*removed = 0;
	if (db->read_only)
		return base_err(err, STRATA_INVALID_ARGUMENT, "the application was opened read-only");
	struct scan s;
	int rc = scan_begin(db, v, 1, &s, err);
	for (; !rc && s.t < db->ndoctypes; s.t++, s.lid = 0) {
		int done = 0;
		while (!rc && s.types[s.t] && !done)
			rc = remove_batch(db, v, &s, removed, &done, err);
	}
	scan_end(&s);
	return rc;
}
