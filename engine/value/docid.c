/*
 * docid.c: Vespa document ids (id:NAMESPACE:DOCTYPE:KEY-VALUES:KEY) and the
 * document type they name among an application's.  The key/value part
 * (n=NUMBER or g=GROUP) only steers distribution in Vespa; a single node
 * ignores it, but it must be well formed.
 */
#include <string.h>

#include "../engine_int.h"

struct eng_doctype *eng_doctype_find(struct strata *db, const char *name)
{
	for (int i = 0; i < db->ndoctypes; i++)
		if (strcmp(db->doctypes[i].name, name) == 0)
			return &db->doctypes[i];
	return NULL;
}

int eng_docid_parse(struct strata *db, const char *id, struct eng_doctype **out,
                    struct strata_error *err)
{
	const char *type;
	size_t tl;
	*out = NULL;
	int rc = eng_docid_type(id, &type, &tl, err);
	if (rc)
		return rc;
	for (int i = 0; i < db->ndoctypes; i++) {
		const char *n = db->doctypes[i].name;
		if (strlen(n) == tl && memcmp(n, type, tl) == 0) {
			*out = &db->doctypes[i];
			return 0;
		}
	}
	return base_err(err, STRATA_INVALID_ARGUMENT,
	                "document id '%s': unknown document type '%.*s'", id, (int)tl, type);
}

int eng_docid_type(const char *id, const char **type_out, size_t *len, struct strata_error *err)
{
	if (!id)
		return base_err(err, STRATA_INVALID_ARGUMENT, "no document id given");
	if (strncmp(id, "id:", 3) != 0)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "bad document id '%s': expected id:NAMESPACE:DOCTYPE::KEY", id);
	const char *ns = id + 3;
	const char *c1 = strchr(ns, ':');
	if (!c1)
		goto malformed;
	const char *type = c1 + 1;
	const char *c2 = strchr(type, ':');
	if (!c2)
		goto malformed;
	const char *kv = c2 + 1;
	const char *c3 = strchr(kv, ':');
	if (!c3)
		goto malformed;
	if (c1 == ns)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "bad document id '%s': empty namespace", id);
	if (c2 == type)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "bad document id '%s': empty document type", id);
	if (c3 != kv) {
		int ok = (kv[0] == 'n' || kv[0] == 'g') && kv[1] == '=' && c3 > kv + 2;
		if (ok && kv[0] == 'n')
			for (const char *p = kv + 2; p < c3; p++)
				if (*p < '0' || *p > '9')
					ok = 0;
		if (!ok)
			return base_err(err, STRATA_INVALID_ARGUMENT,
			                "bad document id '%s': the part after the document type "
			                "must be empty, n=NUMBER or g=GROUP", id);
	}
	if (!c3[1])
		return base_err(err, STRATA_INVALID_ARGUMENT, "bad document id '%s': empty key", id);
	*type_out = type;
	*len = (size_t)(c2 - type);
	return 0;
malformed:
	return base_err(err, STRATA_INVALID_ARGUMENT,
	                "bad document id '%s': expected id:NAMESPACE:DOCTYPE::KEY", id);
}
