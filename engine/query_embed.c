/*
 * query_embed.c: embed(...) as the value of a query input, as in Vespa:
 *
 *     "input.query(q)": "embed(e5, \"running shoes\")"
 *     "input.query(q)": "embed(e5, @text)", "text": "running shoes"
 *     "input.query(q)": "embed(@text)"      (the application's only embedder)
 *
 * The embedder runs with for_query = 1 (its query prefix, colbert's query
 * padding) into the input's type, once per query: the profiles of several
 * document types that declare the same input share the value (kept in the
 * query's cache by input name and type).  The text is a quoted string
 * ("..." or '...', backslash escapes the next character) or @name, the
 * request parameter name (flat or nested, as userInput(@name) reads it),
 * which must be a string.
 */
#include <stdio.h>
#include <string.h>

#include "engine_int.h"

static const char *skip_ws(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	return p;
}

/* One argument at *p: a quoted string (unescaped into buf), @name or a bare
 * word; *kind is '"', '@' or 'w'.  Returns 0 or -1 (malformed). */
static int arg(const char **p, char *buf, size_t cap, int *kind)
{
	const char *s = skip_ws(*p);
	size_t n = 0;
	if (*s == '"' || *s == '\'') {
		char q = *s++;
		*kind = '"';
		while (*s && *s != q) {
			if (*s == '\\' && s[1])
				s++;
			if (n + 1 < cap)
				buf[n++] = *s;
			s++;
		}
		if (*s != q)
			return -1;
		s++;
	} else {
		*kind = *s == '@' ? '@' : 'w';
		if (*s == '@')
			s++;
		while ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
		       *s == '_' || *s == '-' || *s == '.')
			if (n + 1 < cap)
				buf[n++] = *s++;
			else
				s++;
		if (!n)
			return -1;
	}
	buf[n] = 0;
	*p = skip_ws(s);
	return 0;
}

int eng_query_embed(struct strata *db, const json_t *req, const struct rank_input_info *in,
                    const json_t **v, json_t **cache, struct strata_error *err)
{
	if (!json_is_string(*v))
		return 0;
	const char *s = skip_ws(json_string_value(*v));
	if (strncmp(s, "embed(", 6) != 0)
		return 0;
	/* by name and type: profiles may declare one name with two types */
	struct eng_ttype t = { BASE_DT_FLOAT, in->rank, in->dims, in->dim_names };
	char key[600], ts[300];
	snprintf(key, sizeof key, "%s %s", in->name, eng_ttype_str(&t, ts, sizeof ts));
	json_t *hit = *cache ? json_object_get(*cache, key) : NULL;
	if (hit) {
		*v = hit;
		return 0;
	}
	size_t cap = strlen(s) + 1;
	char *a1 = base_alloc(2 * cap);
	if (!a1)
		return base_nomem(err, "query input 'query(%s)'", in->name);
	char *a2 = a1 + cap;
	const char *p = s + 6;
	int k1, k2 = 0, rc = 0;
	int nargs = 0;
	if (arg(&p, a1, cap, &k1) == 0) {
		nargs = 1;
		if (*p == ',') {
			p++;
			nargs = arg(&p, a2, cap, &k2) == 0 ? 2 : 0;
		}
	}
	if (nargs && *p == ')' && !*skip_ws(p + 1)) {
		const char *id = nargs == 2 ? a1 : NULL;
		const char *text = nargs == 2 ? a2 : a1;
		int kind = nargs == 2 ? k2 : k1;
		if (kind == 'w' || (nargs == 2 && k1 == '@')) {
			rc = base_err(err, STRATA_INVALID_ARGUMENT,
			              "query input 'query(%s)': %s: the text must be a quoted string or "
			              "@parameter", in->name, s);
		} else if (kind == '@') {
			const json_t *pv = eng_request_param(req, text);
			if (!json_is_string(pv))
				rc = base_err(err, STRATA_INVALID_ARGUMENT,
				              "query input 'query(%s)': %s: the request parameter '%s' %s",
				              in->name, s, text, pv ? "is not a string" : "is not given");
			else
				text = json_string_value(pv);
		}
		if (!rc) {
			char what[300];
			snprintf(what, sizeof what, "query input 'query(%s)'", in->name);
			json_t *out;
			rc = eng_embed_type(db, id, text, strlen(text), 1, &t, what, &out, err);
			if (!rc && !*cache && !(*cache = json_object()))
				rc = base_nomem(err, "query input 'query(%s)'", in->name);
			if (!rc && json_object_set_new(*cache, key, out))
				rc = base_nomem(err, "query input 'query(%s)'", in->name);
			else if (rc)
				json_decref(out);
			if (!rc)
				*v = json_object_get(*cache, key);
		}
	} else {
		rc = base_err(err, STRATA_INVALID_ARGUMENT,
		              "query input 'query(%s)': malformed %s: expected embed(ID, \"text\"), "
		              "embed(ID, @parameter) or embed(@parameter)", in->name, s);
	}
	base_free(a1, 2 * cap);
	return rc;
}
