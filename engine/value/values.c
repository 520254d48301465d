/*
 * values.c: values of collection and struct fields (array<T>,
 * weightedset<T>, map<K,V>, struct), between Vespa's document JSON and the
 * store, where they are kept as JSON text (STORE_T_JSON) in one canonical
 * form, the form summaries show (Vespa's, with weighted sets and maps as
 * objects):
 *   array        [e, ...]
 *   weightedset  {"key": weight, ...}     (weights are int32)
 *   map          {"key": value, ...}      (keys as strings)
 *   struct       {"field": value, ...}    (the fields set, in the struct's order)
 * A feed may also write a map as [{"key": k, "value": v}, ...].  Numbers
 * (elements, keys, values, weights) may be written as strings ("7", "1.5"),
 * as Vespa reads them (numbers.c).  Every value
 * is checked against the field's type, element by element; the first
 * mismatch fails the operation with the path to it ("field 'tags'[2]:
 * expected a string").
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../engine_int.h"

#define MAX_DEPTH 32

/* An error at path (the field and the way into its value). */
static int bad(struct strata_error *err, const char *path, const char *fmt, const char *detail)
{
	char msg[256];
	snprintf(msg, sizeof msg, fmt, detail);
	return base_err(err, STRATA_INVALID_ARGUMENT, "%s: %s", path, msg);
}

/* An integer from JSON: an integer, an integral real, or a string holding
 * one (Vespa reads a value's text, and object keys are strings):
 * numbers.c. */
static int json_int(const json_t *j, int64_t lo, int64_t hi, int64_t *out)
{
	return eng_num_int(j, lo, hi, out) ? -1 : 0;
}

static int canon(const struct rank_vtype *t, const json_t *j, const char *path, int depth,
                 json_t **out, struct strata_error *err);

/* A simple value (or, key = 1, an object key holding one) in canonical JSON. */
static int canon_simple(int type, const json_t *j, int key, const char *path, json_t **out,
                        struct strata_error *err)
{
	int64_t i;
	double d;
	char shown[64];
	switch (type) {
	case RANK_FT_STRING:
		if (!json_is_string(j))
			return bad(err, path, "expected a string, got %s",
			           eng_num_show(j, shown, sizeof shown));
		*out = json_incref((json_t *)j);
		return 0;
	case RANK_FT_INT:
	case RANK_FT_LONG:
		if (json_int(j, type == RANK_FT_INT ? INT32_MIN : INT64_MIN,
		             type == RANK_FT_INT ? INT32_MAX : INT64_MAX, &i)) {
			char msg[160];
			snprintf(msg, sizeof msg, "expected an integer that fits %s, got %s",
			         type == RANK_FT_INT ? "int" : "long", eng_num_show(j, shown, sizeof shown));
			return bad(err, path, "%s", msg);
		}
		break;
	case RANK_FT_FLOAT:
	case RANK_FT_DOUBLE:
		if (eng_num_real(j, 0, &d))
			return bad(err, path, "expected a number, got %s",
			           eng_num_show(j, shown, sizeof shown));
		if (key) {
			/* The shortest text that reads back as the same value. */
			char tmp[40];
			int flt = type == RANK_FT_FLOAT;
			for (int prec = flt ? 6 : 15; prec <= 17; prec++) {
				snprintf(tmp, sizeof tmp, "%.*g", prec, flt ? (double)(float)d : d);
				if (flt ? strtof(tmp, NULL) == (float)d : strtod(tmp, NULL) == d)
					break;
			}
			*out = json_string(tmp);
			goto made;
		}
		*out = eng_json_number(type == RANK_FT_FLOAT ? BASE_DT_FLOAT : BASE_DT_DOUBLE, d);
		goto made;
	case RANK_FT_BOOL:
		if (json_is_string(j) && (!strcmp(json_string_value(j), "true") ||
		                          !strcmp(json_string_value(j), "false"))) {
			*out = json_boolean(!strcmp(json_string_value(j), "true"));
			goto made;
		}
		if (!json_is_boolean(j))
			return bad(err, path, "expected true or false, got %s",
			           eng_num_show(j, shown, sizeof shown));
		*out = json_incref((json_t *)j);
		return 0;
	default:
		return bad(err, path, "a value of this type cannot be a key%s", "");
	}
	if (key) {
		char tmp[32];
		snprintf(tmp, sizeof tmp, "%lld", (long long)i);
		*out = json_string(tmp);
	} else {
		*out = json_integer((json_int_t)i);
	}
made:
	return *out ? 0 : base_nomem(err, "%s", path);
}

/* Add the canonical form of v under key k (already canonical) to obj. */
static int put_member(json_t *obj, const char *k, json_t *v, const char *path,
                      struct strata_error *err)
{
	if (json_object_set_new(obj, k, v))
		return base_nomem(err, "%s", path);
	return 0;
}

static int canon_array(const struct rank_vtype *t, const json_t *j, const char *path, int depth,
                       json_t **out, struct strata_error *err)
{
	if (!json_is_array(j))
		return bad(err, path, "expected an array%s", "");
	json_t *a = json_array();
	if (!a)
		return base_nomem(err, "%s", path);
	for (size_t i = 0; i < json_array_size(j); i++) {
		char sub[200];
		snprintf(sub, sizeof sub, "%s[%zu]", path, i);
		json_t *e;
		int rc = canon(t->elem, json_array_get(j, i), sub, depth + 1, &e, err);
		if (!rc && json_array_append_new(a, e))
			rc = base_nomem(err, "%s", path);
		if (rc) {
			json_decref(a);
			return rc;
		}
	}
	*out = a;
	return 0;
}

/* A key of a weighted set or map, canonical: a JSON string. */
static int canon_key(int type, const char *k, const char *path, json_t **out,
                     struct strata_error *err)
{
	json_t *s = json_string(k);
	if (!s)
		return base_nomem(err, "%s", path);
	int rc = canon_simple(type, s, 1, path, out, err);
	json_decref(s);
	return rc;
}

static int canon_object(const struct rank_vtype *t, const json_t *j, const char *path, int depth,
                        json_t **out, struct strata_error *err)
{
	int wset = t->type == RANK_FT_WSET;
	const struct rank_vtype *kt = wset ? t->elem : t->key;
	json_t *legacy = NULL;
	if (!wset && json_is_array(j)) {
		/* A map written [{"key": k, "value": v}, ...]. */
		legacy = json_object();
		if (!legacy)
			return base_nomem(err, "%s", path);
		for (size_t i = 0; i < json_array_size(j); i++) {
			const json_t *e = json_array_get(j, i), *k = json_object_get(e, "key");
			const json_t *v = json_object_get(e, "value");
			char sub[200];
			snprintf(sub, sizeof sub, "%s[%zu]", path, i);
			if (!json_is_object(e) || !k || !v || json_object_size(e) != 2) {
				json_decref(legacy);
				return bad(err, sub, "expected {\"key\": k, \"value\": v}%s", "");
			}
			json_t *ck;
			int rc = canon_simple(kt->type, k, 1, sub, &ck, err);
			if (!rc && !json_is_string(ck))
				rc = bad(err, sub, "a map key must be a simple value%s", "");
			if (!rc && json_object_set(legacy, json_string_value(ck), (json_t *)v))
				rc = base_nomem(err, "%s", path);
			json_decref(ck);
			if (rc) {
				json_decref(legacy);
				return rc;
			}
		}
		j = legacy;
	}
	if (!json_is_object(j))
		return bad(err, path, wset ? "expected an object of weights ({\"key\": weight})%s"
		                           : "expected an object%s", "");
	json_t *o = json_object();
	int rc = o ? 0 : base_nomem(err, "%s", path);
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)j, k, v) {
		if (rc)
			break;
		char sub[200];
		snprintf(sub, sizeof sub, "%s{%s}", path, k);
		json_t *ck = NULL, *cv = NULL;
		int64_t w;
		rc = canon_key(kt->type, k, sub, &ck, err);
		if (!rc && wset) {
			if (json_int(v, INT32_MIN, INT32_MAX, &w))
				rc = bad(err, sub, "a weight must be an integer that fits int%s", "");
			else if (!(cv = json_integer((json_int_t)w)))
				rc = base_nomem(err, "%s", path);
		} else if (!rc) {
			rc = canon(t->elem, v, sub, depth + 1, &cv, err);
		}
		if (!rc)
			rc = put_member(o, json_string_value(ck), cv, path, err);
		else
			json_decref(cv);
		json_decref(ck);
	}
	json_decref(legacy);
	if (rc) {
		json_decref(o);
		return rc;
	}
	*out = o;
	return 0;
}

static int canon_struct(const struct rank_struct *st, const json_t *j, const char *path,
                        int depth, json_t **out, struct strata_error *err)
{
	if (!json_is_object(j))
		return bad(err, path, "expected an object (struct '%s')", st->name);
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)j, k, v) {
		int known = 0;
		for (int i = 0; i < st->nfields && !known; i++)
			known = strcmp(st->fields[i].name, k) == 0;
		if (!known) {
			char sub[200];
			snprintf(sub, sizeof sub, "%s.%s", path, k);
			return bad(err, sub, "struct '%s' has no such field", st->name);
		}
	}
	json_t *o = json_object();
	if (!o)
		return base_nomem(err, "%s", path);
	for (int i = 0; i < st->nfields; i++) {
		const json_t *fv = json_object_get(j, st->fields[i].name);
		if (!fv || json_is_null(fv))
			continue;
		char sub[200];
		snprintf(sub, sizeof sub, "%s.%s", path, st->fields[i].name);
		json_t *c;
		int rc = canon(st->fields[i].type, fv, sub, depth + 1, &c, err);
		if (!rc)
			rc = put_member(o, st->fields[i].name, c, path, err);
		if (rc) {
			json_decref(o);
			return rc;
		}
	}
	*out = o;
	return 0;
}

static int canon(const struct rank_vtype *t, const json_t *j, const char *path, int depth,
                 json_t **out, struct strata_error *err)
{
	*out = NULL;
	if (depth > MAX_DEPTH)
		return bad(err, path, "nested deeper than the type allows%s", "");
	switch (t->type) {
	case RANK_FT_ARRAY:
		return canon_array(t, j, path, depth, out, err);
	case RANK_FT_WSET:
	case RANK_FT_MAP:
		return canon_object(t, j, path, depth, out, err);
	case RANK_FT_STRUCT:
		return canon_struct(t->st, j, path, depth, out, err);
	}
	return canon_simple(t->type, j, 0, path, out, err);
}

int eng_json_to_text(json_t *c, struct base_arena *a, struct store_value *v, const char *what,
                     struct strata_error *err)
{
	char *s = eng_json_dump(c, 0);
	if (!s)
		return base_nomem(err, "%s", what);
	size_t n = strlen(s);
	char *d = base_arena_alloc(a, n + 1, 1);
	if (d)
		memcpy(d, s, n + 1);
	base_strfree(s);
	if (!d)
		return base_nomem(err, "%s", what);
	memset(v, 0, sizeof *v);
	v->set = 1;
	v->s = d;
	v->n = n;
	return 0;
}

int eng_cvalue_from_json(const struct rank_field *rf, const json_t *j, struct base_arena *a,
                         struct store_value *v, const char *what, struct strata_error *err)
{
	json_t *c;
	int rc = canon(rf->vtype, j, what, 0, &c, err);
	if (rc)
		return rc;
	rc = eng_json_to_text(c, a, v, what, err);
	json_decref(c);
	return rc;
}

/* The JSON of a stored value's text; NULL when memory runs out. */
static json_t *stored_json(const char *s, size_t n)
{
	json_error_t je;
	int oom;
	return eng_json_parse(s, n, JSON_DECODE_ANY, &je, &oom);
}

/* add: an array's elements appended, a weighted set's keys set. */
static int add_to(const struct rank_vtype *t, json_t *cur, const json_t *arg, const char *what,
                  struct strata_error *err)
{
	json_t *c;
	int rc = canon(t, arg, what, 0, &c, err);
	if (rc)
		return rc;
	if (t->type == RANK_FT_ARRAY)
		rc = json_array_extend(cur, c) ? base_nomem(err, "%s", what) : 0;
	else
		rc = json_object_update(cur, c) ? base_nomem(err, "%s", what) : 0;
	json_decref(c);
	return rc;
}

/* remove: an array's elements equal to any given, a weighted set's keys
 * given ({"key": 0}). */
static int remove_from(const struct rank_vtype *t, json_t *cur, const json_t *arg,
                       const char *what, struct strata_error *err)
{
	json_t *c;
	int rc = canon(t, arg, what, 0, &c, err);
	if (rc)
		return rc;
	if (t->type == RANK_FT_ARRAY) {
		for (size_t i = json_array_size(cur); i-- > 0;)
			for (size_t k = 0; k < json_array_size(c); k++)
				if (json_equal(json_array_get(cur, i), json_array_get(c, k))) {
					json_array_remove(cur, i);
					break;
				}
	} else {
		const char *key;
		json_t *v;
		json_object_foreach(c, key, v)
			json_object_del(cur, key);
	}
	json_decref(c);
	return 0;
}

/* match: {"element": key, "increment" | "decrement": n} on a weighted set:
 * the key's weight changes by n; a missing key is made (weight 0 first)
 * only with create-if-nonexistent. */
static int match_weight(const struct rank_field *rf, json_t *cur, const json_t *arg,
                        const char *what, struct strata_error *err)
{
	const json_t *el = json_object_get(arg, "element");
	const json_t *inc = json_object_get(arg, "increment");
	const json_t *dec = json_object_get(arg, "decrement");
	int64_t d;
	if (!json_is_object(arg) || !json_is_string(el) || json_object_size(arg) != 2 ||
	    !(inc || dec) || json_int(inc ? inc : dec, INT32_MIN, INT32_MAX, &d))
		return bad(err, what, "a weighted set's match takes {\"element\": key, \"increment\" "
		           "or \"decrement\": integer}%s", "");
	json_t *ck;
	int rc = canon_key(rf->vtype->elem->type, json_string_value(el), what, &ck, err);
	if (rc)
		return rc;
	const char *k = json_string_value(ck);
	json_t *w = json_object_get(cur, k);
	if (w || (rf->wset_flags & RANK_WSET_CREATE_IF_NONEXISTENT)) {
		int64_t nw = (w ? json_integer_value(w) : 0) + (inc ? d : -d);
		if (nw < INT32_MIN || nw > INT32_MAX)
			rc = bad(err, what, "the weight of '%s' would not fit an int", k);
		else if (json_object_set_new(cur, k, json_integer((json_int_t)nw)))
			rc = base_nomem(err, "%s", what);
	}
	json_decref(ck);
	return rc;
}

int eng_cvalue_update(const struct rank_field *rf, const char *op, const json_t *arg,
                      const struct store_value *cur, struct base_arena *a, struct store_value *v,
                      const char *what, struct strata_error *err)
{
	int type = rf->vtype->type;
	if (type != RANK_FT_ARRAY && type != RANK_FT_WSET)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "%s: '%s' updates an array or a weighted set; assign a %s whole", what,
		                op, type == RANK_FT_MAP ? "map" : "struct");
	json_t *c = cur && cur->set ? stored_json(cur->s, cur->n)
	                            : (type == RANK_FT_ARRAY ? json_array() : json_object());
	if (!c)
		return base_nomem(err, "%s", what);
	int rc;
	if (!strcmp(op, "match") && type == RANK_FT_WSET)
		rc = match_weight(rf, c, arg, what, err);
	else if (!strcmp(op, "match"))
		rc = bad(err, what, "'match' updates a weighted set's weights%s", "");
	else if (!strcmp(op, "add"))
		rc = add_to(rf->vtype, c, arg, what, err);
	else
		rc = remove_from(rf->vtype, c, arg, what, err);
	if (!rc && type == RANK_FT_WSET && (rf->wset_flags & RANK_WSET_REMOVE_IF_ZERO)) {
		const char *key;
		json_t *w;
		void *tmp;
		json_object_foreach_safe(c, tmp, key, w)
			if (json_integer_value(w) == 0)
				json_object_del(c, key);
	}
	if (!rc)
		rc = eng_json_to_text(c, a, v, what, err);
	json_decref(c);
	return rc;
}

int eng_cvalue_holds_strings(const struct rank_field *rf)
{
	const struct rank_vtype *t = rf->vtype;
	return t && (t->type == RANK_FT_ARRAY || t->type == RANK_FT_WSET) &&
	       t->elem->type == RANK_FT_STRING;
}

int eng_cvalue_contains(const struct rank_field *rf, const char *s, size_t n, const char *str)
{
	if (!eng_cvalue_holds_strings(rf))
		return 0;
	json_t *j = stored_json(s, n);
	int found = j ? 0 : -1;
	if (json_is_array(j)) {
		for (size_t i = 0; i < json_array_size(j) && !found; i++) {
			const json_t *e = json_array_get(j, i);
			found = json_is_string(e) && strcmp(json_string_value(e), str) == 0;
		}
	} else if (json_is_object(j)) {
		found = json_object_get(j, str) != NULL;
	}
	json_decref(j);
	return found;
}

int eng_cvalue_holds_numbers(const struct rank_field *rf)
{
	const struct rank_vtype *t = rf->vtype;
	return t && (t->type == RANK_FT_ARRAY || t->type == RANK_FT_WSET) &&
	       t->elem->type >= RANK_FT_INT && t->elem->type <= RANK_FT_DOUBLE;
}

int eng_cvalue_any_number(const struct rank_field *rf, const char *s, size_t n,
                          int (*test)(const void *ud, double v), const void *ud)
{
	if (!eng_cvalue_holds_numbers(rf))
		return 0;
	json_t *j = stored_json(s, n);
	int found = j ? 0 : -1;
	if (json_is_array(j)) {
		for (size_t i = 0; i < json_array_size(j) && !found; i++)
			found = test(ud, json_number_value(json_array_get(j, i)));
	} else if (json_is_object(j)) {
		const char *key;
		json_t *w;
		json_object_foreach(j, key, w) {
			if (test(ud, strtod(key, NULL))) {
				found = 1;
				break;
			}
		}
	}
	json_decref(j);
	return found;
}

/* ---- paths into values: m.key, m.value.f, people.name ------------------------------ */

/* The length of path's first component. */
static size_t head_len(const char *path)
{
	const char *dot = strchr(path, '.');
	return dot ? (size_t)(dot - path) : strlen(path);
}

/* The type at path inside t (arrays are stepped through), or NULL. */
static const struct rank_vtype *path_type(const struct rank_vtype *t, const char *path, int depth)
{
	while (t && t->type == RANK_FT_ARRAY)
		t = t->elem;
	if (!t || !*path)
		return t;
	if (depth > MAX_DEPTH)
		return NULL;
	size_t h = head_len(path);
	const char *rest = path[h] ? path + h + 1 : path + h;
	if (t->type == RANK_FT_MAP) {
		if (h == 3 && !strncmp(path, "key", 3))
			return *rest ? NULL : t->key;
		if (h == 5 && !strncmp(path, "value", 5))
			return path_type(t->elem, rest, depth + 1);
		return NULL;
	}
	if (t->type == RANK_FT_STRUCT)
		for (int i = 0; i < t->st->nfields; i++)
			if (strlen(t->st->fields[i].name) == h && !strncmp(t->st->fields[i].name, path, h))
				return path_type(t->st->fields[i].type, rest, depth + 1);
	return NULL;
}

int eng_cvalue_path_type(const struct rank_field *rf, const char *path)
{
	const struct rank_vtype *t = rf->vtype ? path_type(rf->vtype, path, 0) : NULL;
	return t && t->type <= RANK_FT_BOOL ? t->type : 0;
}

struct path_match {
	const char *str;
	int (*test)(const void *ud, double v);
	const void *ud;
};

static int leaf_matches(const json_t *j, const struct path_match *m)
{
	if (!j)
		return -1;
	if (m->str)
		return json_is_string(j) && strcmp(json_string_value(j), m->str) == 0;
	if (json_is_string(j)) /* a map key */
		return m->test(m->ud, strtod(json_string_value(j), NULL));
	return json_is_number(j) && m->test(m->ud, json_number_value(j));
}

/* Whether a leaf at path inside value j (of type t) matches. */
static int match_path(const struct rank_vtype *t, const json_t *j, const char *path,
                      const struct path_match *m, int depth)
{
	if (depth > MAX_DEPTH)
		return 0;
	if (t->type == RANK_FT_ARRAY) {
		for (size_t i = 0; i < json_array_size(j); i++) {
			int hit = match_path(t->elem, json_array_get(j, i), path, m, depth + 1);
			if (hit)
				return hit;
		}
		return 0;
	}
	if (!*path)
		return leaf_matches(j, m);
	size_t h = head_len(path);
	const char *rest = path[h] ? path + h + 1 : path + h;
	const char *k;
	json_t *v;
	if (t->type == RANK_FT_MAP) {
		int key = h == 3;
		json_object_foreach((json_t *)j, k, v) {
			json_t *ks = key ? json_string(k) : NULL;
			int hit = key ? leaf_matches(ks, m) : match_path(t->elem, v, rest, m, depth + 1);
			json_decref(ks);
			if (hit)
				return 1;
		}
		return 0;
	}
	for (int i = 0; t->type == RANK_FT_STRUCT && i < t->st->nfields; i++)
		if (strlen(t->st->fields[i].name) == h && !strncmp(t->st->fields[i].name, path, h)) {
			const json_t *fv = json_object_get(j, t->st->fields[i].name);
			return fv && match_path(t->st->fields[i].type, fv, rest, m, depth + 1);
		}
	return 0;
}

int eng_cvalue_path_match(const struct rank_field *rf, const char *s, size_t n, const char *path,
                          const char *str, int (*test)(const void *ud, double v), const void *ud)
{
	if (!eng_cvalue_path_type(rf, path))
		return 0;
	json_t *j = stored_json(s, n);
	struct path_match m = {str, test, ud};
	int found = j ? match_path(rf->vtype, j, path, &m, 0) : -1;
	json_decref(j);
	return found;
}

/* fn(ud, leaf) for each simple value at path inside value j of type t;
 * a weighted set at the end of the path gives its keys. */
static int each_leaf(const struct rank_vtype *t, const json_t *j, const char *path,
                     int (*fn)(void *ud, const json_t *leaf), void *ud, int depth)
{
	if (depth > MAX_DEPTH || !j)
		return 0;
	if (t->type == RANK_FT_ARRAY) {
		for (size_t i = 0; i < json_array_size(j); i++) {
			int rc = each_leaf(t->elem, json_array_get(j, i), path, fn, ud, depth + 1);
			if (rc)
				return rc;
		}
		return 0;
	}
	const char *k;
	json_t *v;
	size_t h = head_len(path);
	const char *rest = path[h] ? path + h + 1 : path + h;
	int keys = (t->type == RANK_FT_WSET && !*path) || (t->type == RANK_FT_MAP && h == 3);
	if (keys || t->type == RANK_FT_MAP) {
		json_object_foreach((json_t *)j, k, v) {
			json_t *ks = keys ? json_string(k) : NULL;
			int rc = keys ? (ks ? fn(ud, ks) : -1) : each_leaf(t->elem, v, rest, fn, ud, depth + 1);
			json_decref(ks);
			if (rc)
				return rc;
		}
		return 0;
	}
	if (!*path)
		return fn(ud, j);
	for (int i = 0; t->type == RANK_FT_STRUCT && i < t->st->nfields; i++)
		if (strlen(t->st->fields[i].name) == h && !strncmp(t->st->fields[i].name, path, h))
			return each_leaf(t->st->fields[i].type, json_object_get(j, t->st->fields[i].name),
			                 rest, fn, ud, depth + 1);
	return 0;
}

int eng_cvalue_path_simple(const struct rank_field *rf, const char *path)
{
	if (!rf->vtype)
		return 0;
	const struct rank_vtype *t = path_type(rf->vtype, path, 0);
	if (t && t->type == RANK_FT_WSET && !*path) /* its keys */
		t = t->elem;
	return t && t->type <= RANK_FT_BOOL ? t->type : 0;
}

int eng_cvalue_path_each(const struct rank_field *rf, const char *s, size_t n, const char *path,
                         int (*fn)(void *ud, const json_t *leaf), void *ud)
{
	if (!eng_cvalue_path_simple(rf, path))
		return 0;
	json_t *j = stored_json(s, n);
	int rc = j ? each_leaf(rf->vtype, j, path, fn, ud, 0) : -1;
	json_decref(j);
	return rc;
}

/* ---- field path updates: m{key}, a[i], s.f ------------------------------------------ */

int eng_cvalue_assign_path(const struct rank_field *rf, const char *step, const json_t *arg,
                           const struct store_value *cur, struct base_arena *a,
                           struct store_value *v, const char *what, struct strata_error *err)
{
	const struct rank_vtype *t = rf->vtype;
	size_t n = strlen(step);
	char key[256];
	const struct rank_vtype *et = NULL;
	int kind = step[0];
	if ((kind == '{' && step[n - 1] == '}' && t->type == RANK_FT_MAP) ||
	    (kind == '[' && step[n - 1] == ']' && t->type == RANK_FT_ARRAY)) {
		if (n - 2 >= sizeof key || n < 3)
			return bad(err, what, "the key in %.64s is empty or too long", step);
		memcpy(key, step + 1, n - 2);
		key[n - 2] = 0;
		et = t->elem;
	} else if (kind == '.' && t->type == RANK_FT_STRUCT) {
		snprintf(key, sizeof key, "%s", step + 1);
		for (int i = 0; i < t->st->nfields; i++)
			if (!strcmp(t->st->fields[i].name, key))
				et = t->st->fields[i].type;
	}
	if (!et || strpbrk(key, "{}[]."))
		return bad(err, what, "'%.64s' addresses no part of the field (one level: map{key}, "
		           "array[index] or struct.field)", step);
	json_t *c = cur && cur->set ? stored_json(cur->s, cur->n)
	                            : (t->type == RANK_FT_ARRAY ? json_array() : json_object());
	json_t *val = NULL, *ck = NULL;
	int rc = c ? canon(et, arg, what, 0, &val, err) : base_nomem(err, "%s", what);
	if (!rc && kind == '{')
		rc = canon_key(t->key->type, key, what, &ck, err);
	if (!rc && kind == '[') {
		char *end;
		unsigned long long i = strtoull(key, &end, 10);
		if (*end || i >= json_array_size(c))
			rc = bad(err, what, "index %.64s is past the end of the array", key);
		else if (json_array_set(c, (size_t)i, val))
			rc = base_nomem(err, "%s", what);
	} else if (!rc && json_object_set(c, kind == '{' ? json_string_value(ck) : key, val)) {
		rc = base_nomem(err, "%s", what);
	}
	if (!rc)
		rc = eng_json_to_text(c, a, v, what, err);
	json_decref(ck);
	json_decref(val);
	json_decref(c);
	return rc;
}
