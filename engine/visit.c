/*
 * visit.c: visiting, the documents of one type read in pages, each page in
 * a read transaction of its own (the store's one reader per call, beside
 * queries and the writer).
 *
 * The store hands out documents in increasing local id order (store_next);
 * a page ends after count documents, and its continuation is the local id
 * to start the next page from, written "v1.LID" so that a token from
 * anywhere else is refused rather than misread.  Local ids only grow, so a
 * document stored before the visit began and left alone is seen exactly
 * once.
 *
 * A selection (selection.c) is evaluated on each document of the
 * namespace as it is read; only those that match count toward the page.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_int.h"

#define MAX_PAGE 1024

static int parse_continuation(const char *c, uint32_t *lid, struct strata_error *err)
{
	*lid = 0;
	if (!c || !*c)
		return 0;
	char *end;
	unsigned long long x = strncmp(c, "v1.", 3) ? 0 : strtoull(c + 3, &end, 10);
	if (strncmp(c, "v1.", 3) || !c[3] || *end || x > UINT32_MAX)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "continuation '%.64s' was not made by a visit", c);
	*lid = (uint32_t)x;
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

int strata_visit_select_json(struct strata *db, const char *doctype, const char *ns,
                             const char *selection, const char *continuation, long count,
                             char **out, struct strata_error *err)
{
	*out = NULL;
	struct eng_doctype *dt = doctype ? eng_doctype_find(db, doctype) : NULL;
	if (!dt)
		return base_err(err, STRATA_NOT_FOUND, "unknown document type '%s'",
		                doctype ? doctype : "(none)");
	if (count < 1 || count > MAX_PAGE)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "a visit takes 1 to %d documents a page, not %ld", MAX_PAGE, count);
	uint32_t lid;
	struct eng_sel *sel = NULL;
	int rc = parse_continuation(continuation, &lid, err);
	if (rc || (selection && *selection &&
	           (rc = eng_sel_parse(db, selection, "selection", &sel, err)) != 0))
		return rc;
	struct store_txn *r;
	if ((rc = store_txn_begin(db->env, 0, &r, err))) {
		eng_sel_free(sel);
		return rc;
	}
	size_t vsize = (size_t)(dt->nfields + 1) * sizeof(struct store_value);
	struct store_value *vals = base_calloc(1, vsize);
	json_t *docs = json_array(), *page = json_object();
	if (!vals || !docs || !page) {
		rc = base_nomem(err, "visit");
		goto out;
	}
	long n = 0;
	int more = 0;
	while (store_next(r, dt->store_id, &lid) == 0) {
		if (n == count) {
			more = 1;
			break;
		}
		const char *id = store_docid(r, dt->store_id, lid);
		int match = 0;
		if (id && in_namespace(id, ns)) {
			memset(vals, 0, vsize);
			if ((rc = selected(sel, dt, r, lid, id, vals, &match, err)))
				goto out;
		}
		if (match) {
			json_t *doc;
			memset(vals, 0, vsize);
			if ((rc = eng_doc_json(dt, r, lid, id, vals, &doc, err)))
				goto out;
			if (json_array_append_new(docs, doc)) {
				rc = base_nomem(err, "visit");
				goto out;
			}
			n++;
		}
		if (lid == UINT32_MAX)
			break;
		lid++;
	}
	char token[32];
	snprintf(token, sizeof token, "v1.%lu", (unsigned long)lid);
	if (json_object_set(page, "documents", docs) ||
	    json_object_set_new(page, "documentCount", json_integer(n)) ||
	    (more && json_object_set_new(page, "continuation", json_string(token))) ||
	    !(*out = eng_json_dump(page, 0)))
		rc = base_nomem(err, "visit");
out:
	json_decref(docs);
	json_decref(page);
	if (vals)
		base_free(vals, vsize);
	store_txn_abort(r);
	eng_sel_free(sel);
	return rc;
}
