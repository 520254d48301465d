/*
 * feed.c: Vespa document operations into the store; get and remove by id.
 *
 * An operation ({"put": ID, "fields": {...}}, {"update": ID, "fields": {"f":
 * {"assign": v}}, "create": true}, {"remove": ID}; arrays and weighted sets
 * also take "add" and "remove" updates, numbers "increment", "decrement",
 * "multiply" and "divide") is checked against its
 * document type's schema and turned into an array of struct store_value
 * (field i of the schema is field i of the store), whose strings point into
 * the parsed JSON and whose tensor cells live in a per-operation arena; the
 * store copies everything, so both are released right after.
 *
 * A "condition" (test-and-set, a document selection: selection.c) is
 * checked against the stored document in the operation's write
 * transaction before anything is written (eng_sel_condition).
 *
 * strata_feed_file() reads JSON Lines, one JSON array, or objects one
 * after another over as many lines as each takes (a pretty-printed
 * operation; see struct spans), and writes in
 * batched transactions (db->feed_batch operations, ENG_FEED_BATCH unless
 * the handle was opened with another, or BATCH_BYTES of input).
 * Large batches are what makes a text index fast to build: a term's
 * postings and frequency are written once per batch, however many of its
 * documents hold the term.  A bad
 * operation is reported and skipped without touching the transaction (the
 * store guarantees that INVALID_ARGUMENT and NOT_FOUND leave it usable); any
 * other store failure loses the current batch only, which is reported and
 * counted as failed, so the ok count is exactly what was committed, and the
 * progress callback, called after each commit, tells the caller what is
 * durable.  Standard input is fed as it arrives, a batch also ending when
 * the feed is about to wait for input.
 */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "engine_int.h"

#define BATCH_BYTES ((size_t)64 << 20)
#define PROGRESS_SECONDS 0.5
#define STDIN_MAX ((size_t)1 << 34)  /* the longest line, or JSON array, on standard input */
#define STDIN_CHUNK ((size_t)1 << 16)
#define AHEAD_BYTES ((size_t)1 << 20) /* a text this large is parsed on a second thread */

/* ---- one field value -------------------------------------------------------------- */

static int field_value(struct eng_doctype *dt, int fi, const json_t *j, struct store_value *v,
                       struct base_arena *a, struct strata_error *err)
{
	const struct store_field *f = &dt->fields[fi];
	const struct rank_field *rf = rank_schema_field(dt->schema, fi);
	char what[160];
	snprintf(what, sizeof what, "field '%s'", f->name);
	memset(v, 0, sizeof *v);
	if (eng_typed_field(rf))
		return eng_typed_value(rf, j, a, v, what, err); /* fieldtypes.c */
	switch (f->type) {
	case STORE_T_STRING:
		if (!json_is_string(j))
			return base_err(err, STRATA_INVALID_ARGUMENT, "%s: expected a string", what);
		v->s = json_string_value(j);
		v->n = json_string_length(j);
		break;
	case STORE_T_INT:
	case STORE_T_LONG: {
		/* A JSON integer, an integral real, or a string of one (Vespa reads the
		 * value's text). */
		int is_int = f->type == STORE_T_INT;
		char shown[64];
		int64_t x;
		int r = eng_num_int(j, is_int ? INT32_MIN : INT64_MIN, is_int ? INT32_MAX : INT64_MAX,
		                    &x);
		if (r == ENG_NUM_RANGE)
			return base_err(err, STRATA_INVALID_ARGUMENT, "%s: %s is out of range for %s",
			                what, eng_num_show(j, shown, sizeof shown), is_int ? "int" : "long");
		if (r)
			return base_err(err, STRATA_INVALID_ARGUMENT, "%s: expected an integer (%s), got %s",
			                what, is_int ? "int" : "long", eng_num_show(j, shown, sizeof shown));
		v->i = x;
		break;
	}
	case STORE_T_FLOAT:
	case STORE_T_DOUBLE: {
		char shown[64];
		if (eng_num_real(j, 0, &v->d))
			return base_err(err, STRATA_INVALID_ARGUMENT, "%s: expected a number (%s), got %s",
			                what, f->type == STORE_T_FLOAT ? "float" : "double",
			                eng_num_show(j, shown, sizeof shown));
		if (f->type == STORE_T_FLOAT && isfinite(v->d) && fabs(v->d) > 3.4028234663852886e38)
			return base_err(err, STRATA_INVALID_ARGUMENT, "%s: %s is out of range for float",
			                what, eng_num_show(j, shown, sizeof shown));
		break;
	}
	case STORE_T_BOOL:
		if (json_is_boolean(j))
			v->i = json_is_true(j);
		else if (json_is_string(j) && !strcmp(json_string_value(j), "true"))
			v->i = 1;
		else if (json_is_string(j) && !strcmp(json_string_value(j), "false"))
			v->i = 0;
		else
			return base_err(err, STRATA_INVALID_ARGUMENT, "%s: expected true or false", what);
		break;
	case STORE_T_TENSOR: {
		struct eng_ttype t = { f->cell, f->rank, f->dims, rf->dim_names };
		size_t n = eng_ttype_cells(&t);
		void *cells = base_arena_alloc(a, n * base_dtype_size(f->cell) + 1, 64);
		if (!cells)
			return base_nomem(err, "%s: %zu cells", what, n);
		int rc = eng_tensor_from_json(j, &t, 0, cells, what, err);
		if (rc)
			return rc;
		v->cells = cells;
		v->n = n;
		break;
	}
	case STORE_T_JSON:
		if (eng_field_mapped(rf))
			return eng_sparse_field_text(rf, j, a, v, what, err);
		return eng_cvalue_from_json(rf, j, a, v, what, err);
	default:
		return base_err(err, STRATA_NOT_IMPLEMENTED, "%s: unsupported type", what);
	}
	v->set = 1;
	return 0;
}

/* The value of field fi of document id that an update changes: what an
 * earlier part of the same operation made, else what is stored (NULL: the
 * document or value is absent). */
static const struct store_value *current_value(struct eng_doctype *dt, struct store_txn *w,
                                               const char *id, int fi,
                                               const struct store_value *vals,
                                               struct base_arena *a, struct strata_error *err,
                                               int *rc)
{
	uint32_t lid;
	*rc = 0;
	if (vals[fi].set)
		return &vals[fi];
	if (store_lookup(w, dt->store_id, id, &lid, NULL) != 0)
		return NULL;
	struct store_value *cur = base_arena_alloc(a, (size_t)(dt->nfields + 1) * sizeof *cur, 8);
	if (!cur) {
		*rc = base_nomem(err, "document '%s'", id);
		return NULL;
	}
	memset(cur, 0, (size_t)(dt->nfields + 1) * sizeof *cur);
	if ((*rc = store_get(w, dt->store_id, lid, cur, err)) != 0)
		return NULL;
	return cur[fi].set ? &cur[fi] : NULL;
}

/* Vespa's arithmetic updates of a single-value number: {"increment" |
 * "decrement" | "multiply" | "divide": x}.  As Vespa applies them, the
 * operand is a double; an integer field's result is truncated toward zero,
 * and a field without a value counts as 0.  A result its type cannot hold
 * (or an integer divided by 0) is refused, not wrapped. */
static const char *const arith_ops[] = { "increment", "decrement", "multiply", "divide" };

static int arith_update(struct eng_doctype *dt, struct store_txn *w, const char *id, int fi,
                        const char *key, int op, const json_t *val, struct store_value *vals,
                        struct base_arena *a, struct strata_error *err)
{
	const struct store_field *f = &dt->fields[fi];
	const struct rank_field *rf = rank_schema_field(dt->schema, fi);
	int integral = f->type == STORE_T_INT || f->type == STORE_T_LONG;
	if ((!integral && f->type != STORE_T_FLOAT && f->type != STORE_T_DOUBLE) ||
	    (eng_typed_field(rf) && !rf->byte) || rf->outside)
		return base_err(err, STRATA_INVALID_ARGUMENT, "field '%s': '%s' needs a single-value "
		                "number field (byte, int, long, float or double)", key, arith_ops[op]);
	double x;
	char shown[64];
	if (eng_num_real(val, 0, &x) || !isfinite(x))
		return base_err(err, STRATA_INVALID_ARGUMENT, "field '%s': '%s' needs a finite number, "
		                "got %s", key, arith_ops[op], eng_num_show(val, shown, sizeof shown));
	int rc;
	const struct store_value *cur = current_value(dt, w, id, fi, vals, a, err, &rc);
	if (rc)
		return rc;
	double v = !cur ? 0 : integral ? (double)cur->i : cur->d;
	if (integral && op == 3 && x == 0)
		return base_err(err, STRATA_INVALID_ARGUMENT, "field '%s': an integer divided by 0",
		                key);
	double r = op == 0 ? v + x : op == 1 ? v - x : op == 2 ? v * x : v / x;
	struct store_value nv = { .set = 1 };
	if (integral) {
		double lo = rf->byte ? -128 : f->type == STORE_T_INT ? INT32_MIN : -0x1p63;
		double hi = rf->byte ? 127 : f->type == STORE_T_INT ? INT32_MAX : 0x1p63;
		r = trunc(r);
		if (!(r >= lo && (f->type == STORE_T_LONG && !rf->byte ? r < hi : r <= hi)))
			return base_err(err, STRATA_INVALID_ARGUMENT, "field '%s': %s by %g gives %.17g, "
			                "out of range for %s", key, arith_ops[op], x, r,
			                rf->byte ? "byte" : f->type == STORE_T_INT ? "int" : "long");
		/* an int64 operand beyond 2^53 loses its low bits in a double, as in Vespa */
		nv.i = (int64_t)r;
	} else {
		if (f->type == STORE_T_FLOAT && isfinite(r) && fabs(r) > 3.4028234663852886e38)
			return base_err(err, STRATA_INVALID_ARGUMENT, "field '%s': %s by %g gives %g, out "
			                "of range for float", key, arith_ops[op], x, r);
		nv.d = r;
	}
	vals[fi] = nv;
	return 0;
}

/* One field's update operation {"assign" | "add" | "remove": arg} into
 * vals[fi]. */
static int field_update(struct eng_doctype *dt, struct store_txn *w, const char *id, int fi,
                        const char *key, const json_t *jv, struct store_value *vals,
                        struct base_arena *a, struct strata_error *err)
{
	if (!json_is_object(jv) || json_object_size(jv) != 1)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "field '%s': an update needs {\"assign\": value}", key);
	const char *kind = json_object_iter_key(json_object_iter((json_t *)jv));
	const json_t *val = json_object_get(jv, kind);
	const struct rank_field *rf = rank_schema_field(dt->schema, fi);
	int coll = dt->fields[fi].type == STORE_T_JSON && !eng_field_mapped(rf);
	if (coll && (!strcmp(kind, "add") || !strcmp(kind, "remove") || !strcmp(kind, "match"))) {
		char what[160];
		int rc;
		snprintf(what, sizeof what, "field '%s'", key);
		const struct store_value *cur = current_value(dt, w, id, fi, vals, a, err, &rc);
		return rc ? rc : eng_cvalue_update(rf, kind, val, cur, a, &vals[fi], what, err);
	}
	for (int op = 0; op < (int)(sizeof arith_ops / sizeof *arith_ops); op++)
		if (!strcmp(kind, arith_ops[op]))
			return arith_update(dt, w, id, fi, key, op, val, vals, a, err);
	if (strcmp(kind, "assign") != 0)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "field '%s': update operation '%s' is not supported%s", key, kind,
		                coll ? " (assign, add, remove, match are)"
		                     : " (assign, increment, decrement, multiply, divide are)");
	if (json_is_null(val))
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "field '%s': clearing a field is not supported", key);
	return field_value(dt, fi, val, &vals[fi], a, err);
}

/* An update of a part of a field: "m{key}", "a[i]" or "s.f" (key), whose
 * field is the name before the first of "{[.". */
static int path_update(struct eng_doctype *dt, struct store_txn *w, const char *id,
                       const char *key, const json_t *jv, struct store_value *vals,
                       struct base_arena *a, struct strata_error *err)
{
	size_t n = strcspn(key, "{[.");
	int fi = -1;
	for (int i = 0; i < dt->nfields && fi < 0; i++) {
		const char *name = rank_schema_field(dt->schema, i)->name;
		if (strlen(name) == n && strncmp(name, key, n) == 0)
			fi = i;
	}
	if (fi < 0 || dt->fields[fi].type != STORE_T_JSON ||
	    eng_field_mapped(rank_schema_field(dt->schema, fi)) ||
	    rank_schema_field(dt->schema, fi)->outside)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "field '%s': '%.*s' is not a map, array or struct field of the "
		                "document '%s'", key, (int)n, key, dt->name);
	if (!json_is_object(jv) || json_object_size(jv) != 1 || !json_object_get(jv, "assign"))
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "field '%s': a part of a field takes {\"assign\": value}", key);
	char what[160];
	int rc;
	snprintf(what, sizeof what, "field '%s'", key);
	const struct store_value *cur = current_value(dt, w, id, fi, vals, a, err, &rc);
	if (rc)
		return rc;
	return eng_cvalue_assign_path(rank_schema_field(dt->schema, fi), key + n,
	                              json_object_get(jv, "assign"), cur, a, &vals[fi], what, err);
}

/* The values the fields' indexing scripts write (indexing.c), into vals;
 * a string is copied into a (field_value leaves it in the JSON). */
static int indexed_values(struct strata *db, struct eng_doctype *dt, struct store_txn *w,
                          const char *id, int update, struct store_value *vals,
                          struct base_arena *a, struct strata_error *err)
{
	json_t **outs = base_arena_alloc(a, (size_t)dt->nfields * sizeof *outs + 1, 8);
	if (!outs)
		return base_nomem(err, "document '%s'", id);
	memset(outs, 0, (size_t)dt->nfields * sizeof *outs);
	int rc = eng_indexing_run(db, dt, w, id, update, vals, outs, a, err);
	for (int i = 0; i < dt->nfields; i++) {
		if (!rc && outs[i] && (rc = field_value(dt, i, outs[i], &vals[i], a, err)) == 0 &&
		    dt->fields[i].type == STORE_T_STRING) {
			char *s = base_arena_alloc(a, vals[i].n + 1, 1);
			if (s) {
				memcpy(s, vals[i].s, vals[i].n);
				s[vals[i].n] = 0;
			}
			vals[i].s = s;
			rc = s ? 0 : base_nomem(err, "field '%s'", dt->fields[i].name);
		}
		json_decref(outs[i]);
	}
	return rc;
}

/* Fields outside the document take the value of the field they read. */
static void derived_values(struct eng_doctype *dt, struct store_value *vals)
{
	for (int i = 0; i < dt->nfields; i++) {
		const struct rank_field *rf = rank_schema_field(dt->schema, i);
		if (rf->source >= 0 && vals[rf->source].set)
			vals[i] = vals[rf->source];
	}
}

static int fields_values(struct eng_doctype *dt, const json_t *fields, struct store_txn *w,
                         const char *id, int update, struct store_value *vals,
                         struct base_arena *a, struct strata_error *err)
{
	if (!json_is_object(fields))
		return base_err(err, STRATA_INVALID_ARGUMENT, "\"fields\" must be an object");
	const char *key;
	json_t *jv;
	json_object_foreach((json_t *)fields, key, jv) {
		int fi = rank_schema_field_index(dt->schema, key);
		if (fi < 0 && update && strpbrk(key, "{[.")) {
			int rc = path_update(dt, w, id, key, jv, vals, a, err);
			if (rc)
				return rc;
			continue;
		}
		if (fi < 0)
			return base_err(err, STRATA_INVALID_ARGUMENT,
			                "field '%s' is not in document type '%s'", key, dt->name);
		const struct rank_field *rf = rank_schema_field(dt->schema, fi);
		if (rf->outside)
			return base_err(err, STRATA_INVALID_ARGUMENT,
			                "field '%s' is outside the document: %s%s%s", key,
			                rf->source >= 0 ? "it takes the value of '" : "its indexing computes it",
			                rf->source >= 0 ? rank_schema_field(dt->schema, rf->source)->name : "",
			                rf->source >= 0 ? "'" : "");
		int rc;
		if (update)
			rc = field_update(dt, w, id, fi, key, jv, vals, a, err);
		else if (json_is_null(jv))
			continue; /* an absent value */
		else
			rc = field_value(dt, fi, jv, &vals[fi], a, err);
		if (rc)
			return rc;
	}
	derived_values(dt, vals);
	return 0;
}

/* ---- one operation -------------------------------------------------------------------- */

enum { OP_PUT = 1, OP_UPDATE, OP_REMOVE };

/* Apply one parsed operation inside w.  A return of INVALID_ARGUMENT or
 * NOT_FOUND leaves w usable; anything else means w failed. */
static int apply_op(struct strata *db, struct store_txn *w, const json_t *op,
                    struct base_arena *a, struct strata_error *err)
{
	if (!json_is_object(op))
		return base_err(err, STRATA_INVALID_ARGUMENT, "a document operation must be an object");
	int kind = 0;
	const char *id = NULL;
	const json_t *fields = NULL;
	int create = 0;
	const char *cond = NULL;
	const char *key;
	json_t *v;
	json_object_foreach((json_t *)op, key, v) {
		int k = !strcmp(key, "put") ? OP_PUT : !strcmp(key, "update") ? OP_UPDATE
		      : !strcmp(key, "remove") ? OP_REMOVE : 0;
		if (k) {
			if (kind)
				return base_err(err, STRATA_INVALID_ARGUMENT,
				                "an operation has one of \"put\", \"update\", \"remove\"");
			if (!json_is_string(v))
				return base_err(err, STRATA_INVALID_ARGUMENT,
				                "\"%s\" must be a document id string", key);
			kind = k;
			id = json_string_value(v);
		} else if (!strcmp(key, "fields")) {
			fields = v;
		} else if (!strcmp(key, "create")) {
			if (!json_is_boolean(v))
				return base_err(err, STRATA_INVALID_ARGUMENT, "\"create\" must be a boolean");
			create = json_is_true(v);
		} else if (!strcmp(key, "condition")) {
			if (!json_is_string(v))
				return base_err(err, STRATA_INVALID_ARGUMENT, "\"condition\" must be a string");
			cond = json_string_value(v);
		} else {
			return base_err(err, STRATA_INVALID_ARGUMENT,
			                "unknown key \"%s\" in a document operation", key);
		}
	}
	if (!kind)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "an operation needs \"put\", \"update\" or \"remove\"");
	struct eng_doctype *dt;
	int rc = eng_docid_parse(db, id, &dt, err);
	if (rc || (cond && (rc = eng_sel_condition(db, w, dt, id, cond, kind != OP_REMOVE && create,
	                                           err)) != 0))
		return rc;
	if (kind == OP_REMOVE) {
		if (fields)
			return base_err(err, STRATA_INVALID_ARGUMENT, "a remove takes no \"fields\"");
		rc = store_remove(w, dt->store_id, id, err);
		if (rc == STRATA_NOT_FOUND)
			return base_err(err, STRATA_NOT_FOUND, "document '%s' not found", id);
		return rc;
	}
	if (kind == OP_UPDATE && !fields)
		return base_err(err, STRATA_INVALID_ARGUMENT, "an update needs \"fields\"");
	struct store_value *vals = base_arena_alloc(a, (size_t)(dt->nfields + 1) * sizeof *vals, 8);
	if (!vals)
		return base_nomem(err, "document '%s'", id);
	memset(vals, 0, (size_t)(dt->nfields + 1) * sizeof *vals);
	if ((fields && (rc = fields_values(dt, fields, w, id, kind == OP_UPDATE, vals, a, err)) != 0) ||
	    (rc = indexed_values(db, dt, w, id, kind == OP_UPDATE, vals, a, err)) != 0)
		return base_err_prefix(err, rc, "document '%s'", id);
	if (kind == OP_PUT)
		return store_put(w, dt->store_id, id, vals, err);
	rc = store_update(w, dt->store_id, id, vals, err);
	if (rc == STRATA_NOT_FOUND && create)
		return store_put(w, dt->store_id, id, vals, err);
	if (rc == STRATA_NOT_FOUND)
		return base_err(err, STRATA_NOT_FOUND, "document '%s' not found", id);
	return rc;
}

static int op_level(int rc)
{
	return rc == STRATA_INVALID_ARGUMENT || rc == STRATA_NOT_FOUND || rc == STRATA_PARSE ||
	       rc == STRATA_NOT_IMPLEMENTED || rc == STRATA_CONDITION_FAILED;
}

static int check_writable(struct strata *db, struct strata_error *err)
{
	if (db->read_only)
		return base_err(err, STRATA_INVALID_ARGUMENT, "the application was opened read-only");
	return 0;
}

int strata_feed_json(struct strata *db, const char *text, struct strata_error *err)
{
	int rc = check_writable(db, err);
	if (rc)
		return rc;
	json_error_t je;
	int oom;
	json_t *op = eng_json_parse(text, strlen(text), 0, &je, &oom);
	if (oom)
		return base_nomem(err, "document operation");
	if (!op)
		return base_err(err, STRATA_PARSE, "invalid JSON at line %d, column %d: %s", je.line,
		                je.column, je.text);
	struct store_txn *w;
	rc = store_txn_begin(db->env, 1, &w, err);
	if (rc) {
		json_decref(op);
		return rc;
	}
	struct base_arena a;
	base_arena_init(&a, 1 << 16);
	rc = apply_op(db, w, op, &a, err);
	if (rc)
		store_txn_abort(w);
	else
		rc = store_txn_commit(w, err);
	base_arena_free(&a);
	json_decref(op);
	return rc;
}

/* ---- files ------------------------------------------------------------------------ */

struct feeder {
	struct strata *db;
	strata_feed_report_fn *report;
	strata_feed_progress_fn *progress;
	void *ud;
	struct strata_feed_stats st;
	struct store_txn *w;
	long batch_ok;       /* operations applied in the open batch */
	size_t batch_bytes;
	long batch_first;    /* first line of the open batch */
	long batch_last;
	struct base_arena arena;
	int fatal;           /* a transaction could not even begin */
	double t0;
	double shown;        /* base_now() at the last progress call */
	const char *base;    /* the text being fed (columns are counted from its lines) */
	struct strata_feed_stats told; /* what the last durable progress call said */
	int told_any;
	struct strata_error ferr;
};

/* Tell the progress callback what is durable now, unless its last durable
 * call said the same (a stdin feed that committed while its input paused,
 * then ended with nothing more). */
static void tell_durable(struct feeder *f)
{
	f->shown = base_now();
	f->st.seconds = f->shown - f->t0;
	f->st.applied = f->st.ok;
	f->st.durable = 1;
	if (f->told_any && f->told.ok == f->st.ok && f->told.failed == f->st.failed &&
	    f->told.last_line == f->st.last_line && f->told.bytes_done == f->st.bytes_done)
		return;
	f->told = f->st;
	f->told_any = 1;
	f->progress(f->ud, &f->st);
}

static void report(struct feeder *f, long line, int code, const char *msg)
{
	if (f->report)
		f->report(f->ud, line, code, msg);
}

static void batch_lost(struct feeder *f, const struct strata_error *e)
{
	char msg[STRATA_ERRMSG_MAX + 128];
	snprintf(msg, sizeof msg, "%ld operations on lines %ld-%ld not written: %s", f->batch_ok,
	         f->batch_first, f->batch_last, e->msg);
	report(f, f->batch_first, e->code, msg);
	f->st.ok -= f->batch_ok;
	f->st.failed += f->batch_ok;
	f->batch_ok = 0;
	f->batch_bytes = 0;
}

static void commit_batch(struct feeder *f)
{
	/* What the open batch applied is part of the ok count, and nothing
	 * is pending without a transaction. */
	BASE_DEBUG_ASSERT(f->batch_ok >= 0 && f->batch_ok <= f->st.ok);
	BASE_DEBUG_ASSERT(f->w || f->batch_ok == 0);
	if (!f->w)
		return;
	struct strata_error e = { 0 };
	int rc = store_txn_commit(f->w, &e);
	f->w = NULL;
	if (rc)
		batch_lost(f, &e);
	f->batch_ok = 0;
	f->batch_bytes = 0;
	if (f->progress)
		tell_durable(f);
}

/* Between commits, about every PROGRESS_SECONDS: how far the feed is. */
static void show_progress(struct feeder *f)
{
	double now = base_now();
	if (!f->progress || now - f->shown < PROGRESS_SECONDS)
		return;
	f->shown = now;
	struct strata_feed_stats st = f->st;
	st.seconds = now - f->t0;
	st.applied = f->st.ok;
	st.ok = f->st.ok - f->batch_ok;
	st.durable = 0;
	f->progress(f->ud, &st);
}

/* An operation parsed (op, or NULL with oom or the reason in je): apply it
 * in the open batch, beginning one when there is none, offering the write
 * the text of its fields tokenized ahead, pre[0..npre).  op stays the
 * caller's. */
static void feed_parsed(struct feeder *f, json_t *op, int oom, const json_error_t *je,
                        const char *text, size_t len, long line,
                        struct store_pretext *const *pre, int npre)
{
	struct strata_error e = { 0 };
	f->st.last_line = line;
	f->st.bytes_done += (long long)len + 1; /* and its newline or comma */
	if (f->st.bytes_total && f->st.bytes_done > f->st.bytes_total)
		f->st.bytes_done = f->st.bytes_total;
	if (!op) {
		/* Where in the input: the operation may begin inside a line (an
		 * element of an array, an object after another). */
		long col = je->column;
		if (je->line <= 1 && f->base)
			for (const char *p = text; p > f->base && p[-1] != '\n'; p--)
				col++;
		if (oom)
			base_nomem(&e, "the operation");
		else
			base_err(&e, STRATA_PARSE, "invalid JSON at line %ld, column %ld: %s",
			         line + (je->line > 1 ? je->line - 1 : 0), col, je->text);
		report(f, line, e.code, e.msg);
		f->st.failed++;
		return;
	}
	if (!f->w) {
		int rc = store_txn_begin(f->db->env, 1, &f->w, &f->ferr);
		if (rc) {
			f->fatal = rc;
			f->w = NULL;
			return;
		}
		f->batch_first = line;
	}
	base_arena_reset(&f->arena);
	store_txn_pretext(f->w, pre, npre);
	int rc = apply_op(f->db, f->w, op, &f->arena, &e);
	if (f->w)
		store_txn_pretext(f->w, NULL, 0);
	f->batch_last = line;
	if (rc == 0) {
		BASE_DEBUG_ASSERT(f->w);
		f->st.ok++;
		f->batch_ok++;
		f->batch_bytes += len;
	} else if (op_level(rc)) {
		report(f, line, rc, e.msg);
		if (rc == STRATA_CONDITION_FAILED)
			f->st.not_met++;
		else
			f->st.failed++;
	} else {
		/* The transaction failed: this operation and the batch are lost. */
		report(f, line, rc, e.msg);
		f->st.failed++;
		store_txn_abort(f->w);
		f->w = NULL;
		if (f->batch_ok)
			batch_lost(f, &e);
		return;
	}
	if (f->batch_ok >= f->db->feed_batch || f->batch_bytes >= BATCH_BYTES)
		commit_batch(f);
	else
		show_progress(f);
}

static void feed_one(struct feeder *f, const char *text, size_t len, long line)
{
	json_error_t je;
	int oom;
	json_t *op = eng_json_parse(text, len, 0, &je, &oom);
	feed_parsed(f, op, oom, &je, text, len, line, NULL, 0);
	json_decref(op);
}

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static int blank(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!is_space(s[i]))
			return 0;
	return 1;
}

/* Where the operations of a text lie: its JSON Lines that are not blank,
 * the elements of one JSON array, or JSON objects one after another each
 * over as many lines as it takes (a pretty-printed operation: the
 * stream), whose spans are found by tracking strings and nesting only, so
 * that a bad element is reported once, with its line and column, and the
 * next one is still fed.  A fault in the array's own frame (not closed, a
 * stray character, text after it) ends the walk with rc and err set. */
struct spans {
	const char *s;
	size_t n, i;      /* the text; where the walk is */
	long line;        /* the line at i */
	int array;        /* one JSON array (i inside it) */
	int stream;       /* objects one after another, not one a line */
	int partial;      /* lines: a last one without its newline may be cut: left */
	int after;        /* array: an element was just given; its separator next */
	int rc;
	struct strata_error err;
};

/* A fault of the frame at s[at] (on line sp->line). */
static int spans_fail(struct spans *sp, size_t at, const char *what)
{
	size_t bol = at < sp->n ? at : sp->n;
	while (bol > 0 && sp->s[bol - 1] != '\n')
		bol--;
	sp->rc = base_err(&sp->err, STRATA_PARSE, "line %ld, column %zu: %s", sp->line,
	                  (at < sp->n ? at : sp->n) - bol + 1, what);
	sp->i = sp->n;
	return 0;
}

/* The end (one past the close) of the object or array that begins at
 * s[i], found by its strings and nesting, or 0 when it does not close
 * before s[n]; *lines counts the newlines passed. */
static size_t value_end(const char *s, size_t n, size_t i, long *lines)
{
	int depth = 0, in_str = 0;
	for (; i < n; i++) {
		char c = s[i];
		if (c == '\n')
			++*lines;
		if (in_str) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_str = 0;
		} else if (c == '"') {
			in_str = 1;
		} else if (c == '{' || c == '[') {
			depth++;
		} else if ((c == '}' || c == ']') && --depth == 0) {
			return i + 1;
		}
	}
	return 0;
}

/* The stream: the next object, from '{' to its close; other text up to
 * the end of its line, to be reported; an object that does not close, the
 * rest of the text (one error, where the text ends). */
static int next_object(struct spans *sp, const char **text, size_t *len, long *line)
{
	const char *s = sp->s;
	size_t n = sp->n, i = sp->i;
	while (i < n && is_space(s[i]))
		if (s[i++] == '\n')
			sp->line++;
	sp->i = i;
	if (i >= n)
		return 0;
	*text = s + i;
	*line = sp->line;
	size_t end;
	if (s[i] != '{') {
		const char *nl = memchr(s + i, '\n', n - i);
		end = nl ? (size_t)(nl - s) : n;
	} else if ((end = value_end(s, n, i, &sp->line)) == 0) {
		end = n;
	}
	*len = end - i;
	sp->i = end;
	return 1;
}

/* Whether the object that begins at s[first] closes on its line. */
static int first_line_closes(const char *s, size_t n, size_t first)
{
	const char *nl = memchr(s + first, '\n', n - first);
	long lines = 0;
	return !nl || value_end(s, (size_t)(nl - s), first, &lines) != 0;
}

/* Whether the text s[0..n), whose first byte that is not white space is
 * '{' at s[first], holds objects over several lines: the first object does
 * not close on its first line (else it is JSON Lines, where a line that
 * does not close is one bad line). */
static int is_stream(const char *s, size_t n, size_t first)
{
	long lines = 0;
	if (first_line_closes(s, n, first))
		return 0;
	if (value_end(s, n, first, &lines) != 0)
		return 1;
	/* It never closes: a broken first line of JSON Lines when the next line
	 * is an object of its own, else one broken object (one error). */
	size_t i = (size_t)((const char *)memchr(s + first, '\n', n - first) - s);
	while (i < n && is_space(s[i]))
		i++;
	return !(i < n && s[i] == '{' && first_line_closes(s, n, i));
}

static int next_line(struct spans *sp, const char **text, size_t *len, long *line)
{
	while (sp->i < sp->n) {
		size_t i = sp->i;
		const char *nl = memchr(sp->s + i, '\n', sp->n - i);
		if (!nl && sp->partial)
			return 0;
		size_t end = nl ? (size_t)(nl - sp->s) : sp->n;
		sp->i = nl ? end + 1 : sp->n;
		long at = sp->line++;
		if (!blank(sp->s + i, end - i)) {
			*text = sp->s + i;
			*len = end - i;
			*line = at;
			return 1;
		}
	}
	return 0;
}

static int next_element(struct spans *sp, const char **text, size_t *len, long *line)
{
	const char *s = sp->s;
	size_t n = sp->n, i = sp->i;
	if (sp->after) {
		sp->after = 0;
		if (i >= n)
			return spans_fail(sp, i, "the JSON array is not closed");
		if (s[i] == ',')
			i++;
		else if (s[i] != ']') {
			char what[64];
			snprintf(what, sizeof what, "unexpected '%c' in the JSON array", s[i]);
			return spans_fail(sp, i, what);
		}
	}
	while (i < n && is_space(s[i]))
		if (s[i++] == '\n')
			sp->line++;
	sp->i = i;
	if (i >= n)
		return spans_fail(sp, i, "the JSON array is not closed");
	if (s[i] == ']') {
		for (i++; i < n; i++) {
			if (s[i] == '\n')
				sp->line++;
			else if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
				return spans_fail(sp, i, "text after the JSON array");
		}
		sp->i = n;
		return 0;
	}
	size_t start = i;
	long start_line = sp->line;
	int depth = 0, in_str = 0;
	for (; i < n; i++) {
		char c = s[i];
		if (c == '\n')
			sp->line++;
		if (in_str) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_str = 0;
			continue;
		}
		if (c == '"')
			in_str = 1;
		else if (c == '{' || c == '[')
			depth++;
		else if (c == '}' || c == ']') {
			if (depth == 0)
				break;
			depth--;
		} else if (c == ',' && depth == 0)
			break;
	}
	if (i > n)
		i = n;
	sp->i = i;
	sp->after = 1;
	*text = s + start;
	*len = i - start;
	*line = start_line;
	return 1;
}

/* The next operation's span (1), or the end of the text (0). */
static int span_next(void *ud, const char **text, size_t *len, long *line)
{
	struct spans *sp = ud;
	return sp->array ? next_element(sp, text, len, line)
	     : sp->stream ? next_object(sp, text, len, line) : next_line(sp, text, len, line);
}

/* Feed the lines of s[0..n), the first of them line *line (advanced past
 * those fed).  last = 0: a last line without its newline may be cut, and
 * is left for later.  Returns how many bytes were fed. */
static size_t feed_lines(struct feeder *f, const char *s, size_t n, long *line, int last)
{
	struct spans sp = { .s = s, .n = n, .line = *line, .partial = !last };
	f->base = s;
	const char *t;
	size_t len;
	long at;
	while (!f->fatal && span_next(&sp, &t, &len, &at))
		feed_one(f, t, len, at);
	*line = sp.line;
	return sp.i;
}

/* What the parser thread of a feed works with. */
struct ahead_src {
	struct spans *sp;
	struct strata *db;
};

static int ahead_next(void *ud, const char **text, size_t *len, long *line)
{
	return span_next(((struct ahead_src *)ud)->sp, text, len, line);
}

/* On the parser's thread: the values of a put's text fields tokenized
 * ahead.  Whatever fails here is left to the writer, which tokenizes what
 * it is not offered. */
static void ahead_prep(void *ud, struct eng_feed_op *o)
{
	struct strata *db = ((struct ahead_src *)ud)->db;
	json_t *id = json_object_get(o->op, "put"), *fields = json_object_get(o->op, "fields"), *v;
	struct eng_doctype *dt;
	const char *key;
	if (!json_is_string(id) || !json_is_object(fields) ||
	    eng_docid_parse(db, json_string_value(id), &dt, NULL) != 0)
		return;
	json_object_foreach(fields, key, v) {
		int fi = json_is_string(v) ? rank_schema_field_index(dt->schema, key) : -1;
		if (o->npre == ENG_FEED_PRE)
			break;
		if (fi < 0 || fi >= dt->nfields || !(dt->fields[fi].text & STORE_TEXT_ON) ||
		    (dt->fields[fi].text & (STORE_TEXT_ARRAY | STORE_TEXT_WSET)))
			continue;
		if (store_pretext_make(db->env, dt->store_id, fi, json_string_value(v),
		                       json_string_length(v), &o->pre[o->npre], NULL) == 0)
			o->npre++;
	}
}

/* A whole text: JSON Lines, or one JSON array.  One of AHEAD_BYTES or more
 * is parsed, and the text of its puts tokenized, ahead on a second thread
 * (feed_ahead.c) when there is a second CPU. */
static int feed_text(struct feeder *f, const char *s, size_t n, struct strata_error *err)
{
	struct spans sp = { .s = s, .n = n, .line = 1 };
	size_t i = 0;
	long line = 1;
	while (i < n && is_space(s[i]))
		if (s[i++] == '\n')
			line++;
	if (i < n && s[i] == '[') {
		sp.array = 1;
		sp.i = i + 1;
		sp.line = line;
	} else if (i < n && s[i] == '{' && is_stream(s, n, i)) {
		sp.stream = 1;
		sp.i = i;
		sp.line = line;
	}
	f->base = s;
	struct eng_ahead *a = NULL;
	struct strata_error e = { 0 };
	struct ahead_src src = { &sp, f->db };
	if (n >= AHEAD_BYTES && sysconf(_SC_NPROCESSORS_ONLN) > 1 &&
	    eng_ahead_start(&a, ahead_next, ahead_prep, &src, &e) == 0) {
		const struct eng_feed_op *op;
		while (!f->fatal && (op = eng_ahead_next(a)) != NULL)
			feed_parsed(f, op->op, op->oom, &op->je, op->text, op->len, op->line, op->pre,
			            op->npre);
		eng_ahead_stop(a);
	} else {
		const char *t;
		size_t len;
		long at;
		while (!f->fatal && span_next(&sp, &t, &len, &at))
			feed_one(f, t, len, at);
	}
	if (sp.rc && !f->fatal) {
		if (err)
			*err = sp.err;
		return sp.rc;
	}
	return 0;
}

/* Whether a read of fd would return without waiting (an error: read and
 * see). */
static int input_ready(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	return poll(&p, 1, 0) != 0;
}

/* Standard input.  JSON Lines are fed as they arrive, and before the
 * feed waits for more input it commits what it has read, so that what a
 * producer has sent is written (and reported so) while it is still at
 * work.  A JSON array, or an object that does not close on its first line
 * (a pretty-printed operation), is read whole, then fed as a file. */
static int feed_stdin(struct feeder *f, struct strata_error *err)
{
	char *buf = NULL;
	size_t cap = 0, len = 0;
	long line = 1;
	int array = -1; /* read whole (1) or as lines (0): not known until the first line */
	size_t first = 0; /* the first byte that is not white space, once seen */
	int seen = 0;
	int rc = 0;
	while (!f->fatal) {
		if (array == 0 && !input_ready(0))
			commit_batch(f);
		if (len + STDIN_CHUNK + 1 > cap &&
		    (rc = base_grow((void **)&buf, &cap, len + STDIN_CHUNK + 1, 1, STDIN_MAX)) != 0) {
			rc = rc == STRATA_NOMEM ? base_nomem(err, "standard input")
			                        : base_err(err, rc, "standard input: a %s of more "
			                                   "than %zu bytes", array == 1 ? "JSON array"
			                                   : "line", STDIN_MAX);
			break;
		}
		ssize_t r = read(0, buf + len, cap - len - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			rc = base_err(err, e, "reading standard input: %s", strerror(e));
			break;
		}
		if (r == 0)
			break;
		for (size_t i = len; !seen && i < len + (size_t)r; i++)
			if (!is_space(buf[i]))
				seen = 1, first = i;
		len += (size_t)r;
		if (array < 0 && seen && buf[first] != '{')
			array = buf[first] == '[';
		else if (array < 0 && seen && memchr(buf + first, '\n', len - first))
			array = !first_line_closes(buf, len, first);
		if (array == 0) {
			size_t used = feed_lines(f, buf, len, &line, 0);
			memmove(buf, buf + used, len - used);
			len -= used;
		}
	}
	if (!rc && !f->fatal && array != 0 && buf) {
		buf[len] = 0;
		rc = feed_text(f, buf, len, err);
	} else if (!rc && !f->fatal && len) {
		feed_lines(f, buf, len, &line, 1);
	}
	if (buf)
		base_free(buf, cap);
	return rc;
}

int strata_feed_file(struct strata *db, const char *path, strata_feed_report_fn *report_fn,
                     void *ud, struct strata_feed_stats *stats, struct strata_error *err)
{
	return strata_feed_file_progress(db, path, report_fn, NULL, ud, stats, err);
}

int strata_feed_file_progress(struct strata *db, const char *path,
                              strata_feed_report_fn *report_fn,
                              strata_feed_progress_fn *progress, void *ud,
                              struct strata_feed_stats *stats, struct strata_error *err)
{
	if (stats)
		memset(stats, 0, sizeof *stats);
	int rc = check_writable(db, err);
	if (rc)
		return rc;
	double t0 = base_now();
	char *text = NULL;
	size_t n = 0;
	int from_stdin = !path || !strcmp(path, "-");
	if (!from_stdin && (rc = base_read_file(path, &text, &n, err)) != 0)
		return rc;
	struct feeder f = { .db = db, .report = report_fn, .progress = progress, .ud = ud,
	                    .t0 = t0, .shown = t0 };
	f.st.bytes_total = from_stdin ? 0 : (long long)n;
	base_arena_init(&f.arena, 1 << 16);
	rc = from_stdin ? feed_stdin(&f, err) : feed_text(&f, text, n, err);
	if (!from_stdin && !f.fatal)
		f.st.bytes_done = f.st.bytes_total; /* blank lines and frames too */
	if (f.w) {
		if (f.fatal)
			store_txn_abort(f.w), f.w = NULL;
		else
			commit_batch(&f);
	} else if (progress && !f.fatal) {
		tell_durable(&f);
	}
	/* Every batch ended: the ok count is exactly what was committed. */
	BASE_DEBUG_ASSERT(!f.w && f.batch_ok == 0);
	base_arena_free(&f.arena);
	if (text)
		base_free(text, n + 1);
	f.st.seconds = base_now() - t0;
	f.st.applied = f.st.ok;
	if (stats)
		*stats = f.st;
	if (f.fatal) {
		if (err)
			*err = f.ferr;
		return f.fatal;
	}
	if (rc)
		return rc;
	if (f.st.failed)
		return base_err(err, STRATA_INVALID_ARGUMENT, "%ld of %ld operations failed",
		                f.st.failed, f.st.failed + f.st.ok);
	return 0;
}

/* ---- get and remove ------------------------------------------------------------------- */

int strata_get_json(struct strata *db, const char *id, char **doc, struct strata_error *err)
{
	*doc = NULL;
	struct eng_doctype *dt;
	int rc = eng_docid_parse(db, id, &dt, err);
	if (rc)
		return rc;
	struct store_txn *r;
	rc = store_txn_begin(db->env, 0, &r, err);
	if (rc)
		return rc;
	uint32_t lid;
	struct store_value *vals = NULL;
	json_t *root = NULL;
	size_t vsize = (size_t)(dt->nfields + 1) * sizeof *vals;
	if (store_lookup(r, dt->store_id, id, &lid, NULL) != 0) {
		rc = base_err(err, STRATA_NOT_FOUND, "document '%s' not found", id);
		goto out;
	}
	vals = base_calloc(1, vsize);
	if (!vals) {
		rc = base_nomem(err, "document '%s'", id);
		goto out;
	}
	rc = eng_doc_json(dt, r, lid, id, vals, &root, err);
	if (!rc && !(*doc = eng_json_dump(root, 0)))
		rc = base_nomem(err, "document '%s'", id);
out:
	json_decref(root);
	if (vals)
		base_free(vals, vsize);
	store_txn_abort(r);
	return rc;
}

int eng_doc_json(struct eng_doctype *dt, struct store_txn *r, uint32_t lid, const char *id,
                 struct store_value *vals, json_t **out, struct strata_error *err)
{
	*out = NULL;
	int rc = store_get(r, dt->store_id, lid, vals, err);
	if (rc)
		return rc;
	json_t *root = json_object(), *fields = json_object();
	if (!root || !fields || json_object_set_new(root, "id", json_string(id)))
		goto nomem;
	for (int i = 0; i < dt->nfields; i++) {
		const struct rank_field *rf = rank_schema_field(dt->schema, i);
		if (rf->outside || rf->imported)
			continue; /* outside the document */
		/* jansson refuses a NULL value: a value that could not be made
		 * fails the set. */
		if (vals[i].set &&
		    json_object_set_new(fields, rf->name, eng_field_json(dt, i, &vals[i])))
			goto nomem;
	}
	if (json_object_set_new(root, "fields", fields)) {
		fields = NULL;
		goto nomem;
	}
	*out = root;
	return 0;
nomem:
	json_decref(fields);
	json_decref(root);
	return base_nomem(err, "document '%s'", id);
}

int strata_remove(struct strata *db, const char *id, struct strata_error *err)
{
	int rc = check_writable(db, err);
	if (rc)
		return rc;
	struct eng_doctype *dt;
	rc = eng_docid_parse(db, id, &dt, err);
	if (rc)
		return rc;
	struct store_txn *w;
	rc = store_txn_begin(db->env, 1, &w, err);
	if (rc)
		return rc;
	rc = store_remove(w, dt->store_id, id, err);
	if (rc) {
		store_txn_abort(w);
		if (rc == STRATA_NOT_FOUND)
			return base_err(err, STRATA_NOT_FOUND, "document '%s' not found", id);
		return rc;
	}
	return store_txn_commit(w, err);
}
