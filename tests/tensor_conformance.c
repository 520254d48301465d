/*
 * tensor_conformance.c: runs Vespa's tensor conformance cases
 * (tests/data/vespa_tensor_spec.jsonl) through Strata's expression compiler
 * and VM.
 *
 * Each line holds an expression, its named inputs and the expected result,
 * the tensors in Vespa's binary format written as hex.  The runner decodes
 * the inputs, declares them as query inputs of a one-profile schema (a
 * function of the input's name returns it, so the expression reads `a` as
 * Vespa does), compiles the expression against that profile, evaluates it
 * and compares the result with the expected tensor: the type (dimension
 * names, sizes or mapped, cell type) exactly, every cell by its address,
 * values within 1e-6 relative.
 *
 * Output: one line per failing case ("FAIL line N: expression: reason"),
 * then one JSON object: {"cases", "passed", "failed", "reasons": {reason:
 * count}}.  Usage: tensor_conformance FILE [--min N] [--quiet]; the exit
 * status is 1 when fewer than N cases pass (or the file cannot be read).
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "../rank/rank_eval.h"

#define MAXD RANK_MAX_RANK

/* ---- Vespa's binary tensor format ------------------------------------------------ */

/* A decoded tensor: mapped dimensions (their labels per block) and indexed
 * ones (one dense block of cells per address of the mapped ones), in the
 * order the format gives them.  Cell types: 0 double, 1 float, 2 bfloat16,
 * 3 int8. */
struct vtensor {
	int cell;
	int nmapped, nindexed;
	char mnames[MAXD][64], inames[MAXD][64];
	long isize[MAXD];
	size_t nblocks, block;
	char (*labels)[64];  /* nblocks * nmapped */
	double *cells;       /* nblocks * block */
};

struct reader {
	const unsigned char *p;
	size_t n, at;
	int bad;
};

static unsigned rd_byte(struct reader *r)
{
	if (r->at >= r->n) {
		r->bad = 1;
		return 0;
	}
	return r->p[r->at++];
}

/* Vespa's compressed count: one byte below 0x80, else four bytes big
 * endian with the top bit set. */
static size_t rd_count(struct reader *r)
{
	unsigned b = rd_byte(r);
	if (!(b & 0x80))
		return b;
	size_t v = b & 0x7f;
	for (int i = 0; i < 3; i++)
		v = v << 8 | rd_byte(r);
	return v;
}

static void rd_str(struct reader *r, char *out, size_t cap)
{
	size_t n = rd_count(r);
	if (n >= cap || r->at + n > r->n) {
		r->bad = 1;
		out[0] = 0;
		return;
	}
	memcpy(out, r->p + r->at, n);
	out[n] = 0;
	r->at += n;
}

static double rd_cell(struct reader *r, int cell)
{
	uint64_t u = 0;
	int bytes = cell == 0 ? 8 : cell == 1 ? 4 : cell == 2 ? 2 : 1;
	for (int i = 0; i < bytes; i++)
		u = u << 8 | rd_byte(r);
	switch (cell) {
	case 0: { double d; memcpy(&d, &u, 8); return d; }
	case 1: { uint32_t w = (uint32_t)u; float f; memcpy(&f, &w, 4); return f; }
	case 2: { uint32_t w = (uint32_t)u << 16; float f; memcpy(&f, &w, 4); return f; }
	default: return (double)(int8_t)(uint8_t)u;
	}
}

static void vt_free(struct vtensor *t)
{
	free(t->labels);
	free(t->cells);
	memset(t, 0, sizeof *t);
}

static int hexval(int c)
{
	return isdigit(c) ? c - '0' : tolower(c) - 'a' + 10;
}

/* Decode "0x..." into t; 0, or -1 with why in msg. */
static int vt_decode(const char *hex, struct vtensor *t, char *msg, size_t nmsg)
{
	memset(t, 0, sizeof *t);
	if (strncmp(hex, "0x", 2) != 0 || strlen(hex) % 2) {
		snprintf(msg, nmsg, "not hex");
		return -1;
	}
	size_t n = strlen(hex) / 2 - 1;
	unsigned char *buf = malloc(n + 1);
	for (size_t i = 0; i < n; i++)
		buf[i] = (unsigned char)(hexval(hex[2 + 2 * i]) << 4 | hexval(hex[3 + 2 * i]));
	struct reader r = { buf, n, 0, 0 };
	unsigned kind = (unsigned)rd_count(&r);
	if (kind >= 5) {
		t->cell = (int)rd_count(&r);
		kind -= 4;
	}
	if (kind < 1 || kind > 3 || t->cell > 3) {
		snprintf(msg, nmsg, "unknown format %u, cell type %d", kind, t->cell);
		free(buf);
		return -1;
	}
	if (kind != 2) {
		t->nmapped = (int)rd_count(&r);
		for (int i = 0; i < t->nmapped && i < MAXD; i++)
			rd_str(&r, t->mnames[i], sizeof t->mnames[i]);
	}
	if (kind != 1) {
		t->nindexed = (int)rd_count(&r);
		for (int i = 0; i < t->nindexed && i < MAXD; i++) {
			rd_str(&r, t->inames[i], sizeof t->inames[i]);
			t->isize[i] = (long)rd_count(&r);
		}
	}
	if (t->nmapped > MAXD || t->nindexed > MAXD) {
		snprintf(msg, nmsg, "too many dimensions");
		free(buf);
		return -1;
	}
	t->block = 1;
	for (int i = 0; i < t->nindexed; i++)
		t->block *= (size_t)t->isize[i];
	t->nblocks = kind == 2 ? 1 : rd_count(&r);
	if (r.bad || t->nblocks > n || t->block > n) {
		snprintf(msg, nmsg, "truncated header");
		free(buf);
		return -1;
	}
	t->labels = calloc(t->nblocks * (size_t)t->nmapped + 1, sizeof *t->labels);
	t->cells = calloc(t->nblocks * t->block + 1, sizeof *t->cells);
	for (size_t b = 0; b < t->nblocks && !r.bad; b++) {
		for (int i = 0; i < t->nmapped; i++)
			rd_str(&r, t->labels[b * (size_t)t->nmapped + (size_t)i], 64);
		for (size_t j = 0; j < t->block; j++)
			t->cells[b * t->block + j] = rd_cell(&r, t->cell);
	}
	free(buf);
	if (r.bad || r.at != r.n) {
		snprintf(msg, nmsg, "%s", r.bad ? "truncated cells" : "bytes left after the cells");
		vt_free(t);
		return -1;
	}
	return 0;
}

/* ---- canonical form: type text and cells by address ------------------------------ */

static const char *const cell_names[] = { "double", "float", "bfloat16", "int8" };

struct dimref {
	const char *name;
	int mapped, k; /* k: index among mapped or indexed dims */
};

static int dim_cmp(const void *x, const void *y)
{
	return strcmp(((const struct dimref *)x)->name, ((const struct dimref *)y)->name);
}

/* The dims of t sorted by name. */
static int sorted_dims(const struct vtensor *t, struct dimref *d)
{
	int n = 0;
	for (int i = 0; i < t->nmapped; i++)
		d[n++] = (struct dimref){ t->mnames[i], 1, i };
	for (int i = 0; i < t->nindexed; i++)
		d[n++] = (struct dimref){ t->inames[i], 0, i };
	qsort(d, (size_t)n, sizeof *d, dim_cmp);
	return n;
}

static void type_text(const struct vtensor *t, char *buf, size_t cap)
{
	struct dimref d[2 * MAXD];
	int n = sorted_dims(t, d);
	if (n == 0 && t->cell == 0) {
		snprintf(buf, cap, "double");
		return;
	}
	size_t k = (size_t)snprintf(buf, cap, "tensor%s%s%s(", t->cell ? "<" : "",
	                            t->cell ? cell_names[t->cell] : "", t->cell ? ">" : "");
	for (int i = 0; i < n && k < cap; i++) {
		if (d[i].mapped)
			k += (size_t)snprintf(buf + k, cap - k, "%s%s{}", i ? "," : "", d[i].name);
		else
			k += (size_t)snprintf(buf + k, cap - k, "%s%s[%ld]", i ? "," : "", d[i].name,
			                      t->isize[d[i].k]);
	}
	if (k < cap)
		snprintf(buf + k, cap - k, ")");
}

struct entry {
	char addr[256];
	double v;
};

static int entry_cmp(const void *x, const void *y)
{
	return strcmp(((const struct entry *)x)->addr, ((const struct entry *)y)->addr);
}

/* Every cell of t with its address "dim:label,..." (dims by name), sorted. */
static struct entry *entries(const struct vtensor *t, size_t *n)
{
	struct dimref d[2 * MAXD];
	int nd = sorted_dims(t, d);
	*n = t->nblocks * t->block;
	struct entry *e = calloc(*n + 1, sizeof *e);
	for (size_t b = 0; b < t->nblocks; b++)
		for (size_t j = 0; j < t->block; j++) {
			long idx[MAXD];
			size_t rest = j;
			for (int i = t->nindexed - 1; i >= 0; i--) {
				idx[i] = (long)(rest % (size_t)t->isize[i]);
				rest /= (size_t)t->isize[i];
			}
			struct entry *x = &e[b * t->block + j];
			size_t k = 0;
			for (int i = 0; i < nd && k < sizeof x->addr; i++) {
				if (d[i].mapped)
					k += (size_t)snprintf(x->addr + k, sizeof x->addr - k, "%s:%s,",
					                      d[i].name,
					                      t->labels[b * (size_t)t->nmapped + (size_t)d[i].k]);
				else
					k += (size_t)snprintf(x->addr + k, sizeof x->addr - k, "%s:%ld,",
					                      d[i].name, idx[d[i].k]);
			}
			x->v = t->cells[b * t->block + j];
		}
	qsort(e, *n, sizeof *e, entry_cmp);
	return e;
}

static int close_enough(double a, double b)
{
	if (isnan(a) || isnan(b))
		return isnan(a) && isnan(b);
	if (a == b)
		return 1;
	return fabs(a - b) <= 1e-6 * fmax(fabs(a), fabs(b));
}

/* Compare got with want; 0 when equal, else why in msg. */
static int vt_compare(const struct vtensor *got, const struct vtensor *want, char *msg, size_t nmsg)
{
	char tg[512], tw[512];
	type_text(got, tg, sizeof tg);
	type_text(want, tw, sizeof tw);
	if (strcmp(tg, tw) != 0) {
		snprintf(msg, nmsg, "wrong type: %.400s, expected %.400s", tg, tw);
		return -1;
	}
	size_t ng, nw;
	struct entry *g = entries(got, &ng), *w = entries(want, &nw);
	int rc = 0;
	if (ng != nw) {
		snprintf(msg, nmsg, "wrong result: %zu cells, expected %zu", ng, nw);
		rc = -1;
	}
	for (size_t i = 0; rc == 0 && i < ng; i++) {
		if (strcmp(g[i].addr, w[i].addr) != 0) {
			snprintf(msg, nmsg, "wrong result: cell {%s} where {%s} was expected", g[i].addr,
			         w[i].addr);
			rc = -1;
		} else if (!close_enough(g[i].v, w[i].v)) {
			snprintf(msg, nmsg, "wrong result: cell {%s} is %.17g, expected %.17g", g[i].addr,
			         g[i].v, w[i].v);
			rc = -1;
		}
	}
	free(g);
	free(w);
	return rc;
}

/* ---- evaluation --------------------------------------------------------------------- */

static int cell_code(int dt)
{
	switch (dt) {
	case BASE_DT_FLOAT: return 1;
	case BASE_DT_BFLOAT16: return 2;
	case BASE_DT_INT8: return 3;
	default: return 0;
	}
}

struct sb {
	char *s;
	size_t n, cap;
};

static void sb_add(struct sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_add(struct sb *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (b->n + (size_t)k + 1 > b->cap) {
		b->cap = (b->n + (size_t)k + 1) * 2;
		b->s = realloc(b->s, b->cap);
	}
	va_start(ap, fmt);
	vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap);
	va_end(ap);
	b->n += (size_t)k;
}

/* The message of err without its "file:line:col: " prefix. */
static const char *bare(const char *msg)
{
	const char *s = msg;
	int colons = 0;
	while (*s && colons < 3) {
		if (*s == ':')
			colons++;
		else if (colons > 0 && !isdigit((unsigned char)*s))
			return msg;
		s++;
	}
	return colons == 3 && *s == ' ' ? s + 1 : msg;
}

/* t as a tensor literal in the verbose form. */
static void literal(struct sb *b, const struct vtensor *t)
{
	char tt[512];
	type_text(t, tt, sizeof tt);
	sb_add(b, "%s:{", tt);
	for (size_t blk = 0; blk < t->nblocks; blk++)
		for (size_t j = 0; j < t->block; j++) {
			sb_add(b, "%s{", blk || j ? "," : "");
			for (int i = 0; i < t->nmapped; i++)
				sb_add(b, "%s%s:\"%s\"", i ? "," : "", t->mnames[i],
				       t->labels[blk * (size_t)t->nmapped + (size_t)i]);
			size_t rest = j;
			long idx[MAXD];
			for (int i = t->nindexed - 1; i >= 0; i--) {
				idx[i] = (long)(rest % (size_t)t->isize[i]);
				rest /= (size_t)t->isize[i];
			}
			for (int i = 0; i < t->nindexed; i++)
				sb_add(b, ",%s:%ld", t->inames[i], idx[i]);
			double x = t->cells[blk * t->block + j];
			if (isnan(x))
				sb_add(b, "}:(0/0)");
			else if (isinf(x))
				sb_add(b, "}:(%s1/0)", x < 0 ? "-" : "");
			else
				sb_add(b, "}:%.17g", x);
		}
	sb_add(b, "}");
}

#define NAMES_MAX 16

/* Evaluate case `expr` with inputs names[i] = in[i]; on success *got is the
 * result.  Returns 0, or -1 with the reason in msg. */
static int eval_case(const char *expr, int nin, char names[][32], const struct vtensor *in,
                     struct vtensor *got, char *msg, size_t nmsg)
{
	struct sb sd = { 0 };
	char tt[512];
	sb_add(&sd, "schema c {\n  document c {\n  }\n  rank-profile p {\n    inputs {\n");
	for (int i = 0; i < nin; i++) {
		if (in[i].nmapped > 0)
			continue; /* a literal, below */
		type_text(&in[i], tt, sizeof tt);
		if (strcmp(tt, "tensor()") == 0)
			snprintf(tt, sizeof tt, "double");
		sb_add(&sd, "      query(%s) %s\n", names[i], tt);
	}
	sb_add(&sd, "    }\n");
	for (int i = 0; i < nin; i++) {
		sb_add(&sd, "    function %s() {\n      expression: ", names[i]);
		if (in[i].nmapped > 0)
			literal(&sd, &in[i]);
		else
			sb_add(&sd, "query(%s)", names[i]);
		sb_add(&sd, "\n    }\n");
	}
	sb_add(&sd, "  }\n}\n");

	struct strata_error err = { 0 };
	struct rank_sd *sdp = NULL;
	struct rank_profile prof;
	struct rank_schema schema;
	struct rank_query *q = NULL;
	struct rank_ast *ast = NULL;
	struct rank_prog prog = { 0 };
	const struct rank_profile_decl *pd = NULL;
	int ok = -1, rc;
	memset(&prof, 0, sizeof prof);
	if ((rc = rank_sd_parse("case.sd", sd.s, sd.n, &sdp, &err)) ||
	    (rc = rank_sd_resolve(sdp, &err))) {
		snprintf(msg, nmsg, "not supported: input types: %.900s", bare(err.msg));
		goto out;
	}
	memset(&schema, 0, sizeof schema);
	schema.sd = sdp;
	pd = NULL;
	for (int i = 0; i < sdp->nprofiles; i++)
		if (strcmp(sdp->profiles[i].name, "p") == 0)
			pd = &sdp->profiles[i];
	if ((rc = rank_profile_compile(&prof, &schema, pd, NULL, &err))) {
		snprintf(msg, nmsg, "harness: %.900s", err.msg);
		goto out;
	}
	if ((rc = rank_expr_parse("expr", expr, &ast, &err))) {
		snprintf(msg, nmsg, "%s: %.900s", rc == STRATA_PARSE ? "not parsed" : "not supported",
		         bare(err.msg));
		goto out;
	}
	if ((rc = rank_expr_compile(&prof, ast, &prog, &err))) {
		snprintf(msg, nmsg, "not supported: %.900s", bare(err.msg));
		goto out;
	}
	if ((rc = rank_query_new(&prof, &q, &err))) {
		snprintf(msg, nmsg, "harness: %.900s", err.msg);
		goto out;
	}
	for (int i = 0; i < nin; i++)
		if (in[i].nmapped == 0 &&
		    (rc = rank_query_set_input(q, names[i], in[i].cells, in[i].block, &err))) {
			snprintf(msg, nmsg, "harness: input %s: %.400s", names[i], err.msg);
			goto out;
		}
	struct rank_val v;
	if ((rc = rank_query_eval(q, &prog, NULL, 0, 0.0, &v, &err))) {
		snprintf(msg, nmsg, "evaluation failed: %.900s", err.msg);
		goto out;
	}
	const struct rank_type *t = &prof.types[prog.result];
	memset(got, 0, sizeof *got);
	got->cell = cell_code(t->cell);
	got->nblocks = 1;
	got->block = rank_type_cells(t);
	for (int i = 0; i < t->rank; i++) {
		if (t->dims[i] == RANK_DIM_MAPPED) {
			snprintf(got->mnames[got->nmapped++], sizeof got->mnames[0], "%s", t->dim_names[i]);
		} else {
			snprintf(got->inames[got->nindexed], sizeof got->inames[0], "%s", t->dim_names[i]);
			got->isize[got->nindexed++] = (long)t->dims[i];
		}
	}
	const double *src = NULL;
	if (got->nmapped > 0) {
		const struct rank_sparse *sp = v.cells;
		got->nblocks = sp->nblocks;
		got->labels = calloc(got->nblocks * (size_t)got->nmapped + 1, sizeof *got->labels);
		for (size_t i = 0; i < got->nblocks * (size_t)got->nmapped; i++)
			snprintf(got->labels[i], sizeof got->labels[i], "%s", sp->labels[i]);
		src = sp->cells;
	}
	got->cells = calloc(got->nblocks * got->block + 1, sizeof *got->cells);
	for (size_t i = 0; i < got->nblocks * got->block; i++)
		got->cells[i] = src ? src[i] : t->rank == 0 ? v.num : rank_cell(v.cell, v.cells, i);
	ok = 0;
out:
	if (q)
		rank_query_free(q);
	rank_prog_release(&prog);
	rank_ast_free(ast);
	if (pd || prof.decl)
		rank_profile_release(&prof);
	rank_sd_free(sdp);
	free(sd.s);
	return ok;
}

/* ---- the run -------------------------------------------------------------------------- */

struct reason {
	char text[160];
	int n;
};

static void count_reason(struct reason **rs, int *nr, const char *msg)
{
	char key[160];
	snprintf(key, sizeof key, "%.159s", msg);
	/* wrong results differ by cell: count them as one reason */
	if (strncmp(key, "wrong result", 12) == 0)
		key[12] = 0;
	for (int i = 0; i < *nr; i++)
		if (strcmp((*rs)[i].text, key) == 0) {
			(*rs)[i].n++;
			return;
		}
	*rs = realloc(*rs, (size_t)(*nr + 1) * sizeof **rs);
	snprintf((*rs)[*nr].text, sizeof (*rs)[*nr].text, "%s", key);
	(*rs)[(*nr)++].n = 1;
}

static int reason_cmp(const void *x, const void *y)
{
	const struct reason *a = x, *b = y;
	return a->n != b->n ? b->n - a->n : strcmp(a->text, b->text);
}

int main(int argc, char **argv)
{
	const char *file = NULL;
	long min = 0;
	int quiet = 0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--min") == 0 && i + 1 < argc)
			min = atol(argv[++i]);
		else if (strcmp(argv[i], "--quiet") == 0)
			quiet = 1;
		else
			file = argv[i];
	}
	if (!file) {
		fprintf(stderr, "usage: tensor_conformance FILE [--min N] [--quiet]\n");
		return 2;
	}
	FILE *f = fopen(file, "r");
	if (!f) {
		perror(file);
		return 1;
	}
	char *line = NULL;
	size_t cap = 0;
	long lineno = 0, cases = 0, passed = 0;
	struct reason *rs = NULL;
	int nr = 0;
	while (getline(&line, &cap, f) > 0) {
		lineno++;
		json_error_t je;
		json_t *j = json_loads(line, 0, &je);
		const char *expr = json_string_value(json_object_get(j, "expression"));
		if (!expr) {
			json_decref(j);
			continue;
		}
		cases++;
		char msg[1024] = "", names[NAMES_MAX][32];
		struct vtensor in[NAMES_MAX], want, got;
		memset(&got, 0, sizeof got);
		memset(&want, 0, sizeof want);
		int nin = 0, bad = 0;
		const char *key;
		json_t *val;
		json_object_foreach(json_object_get(j, "inputs"), key, val) {
			if (nin == NAMES_MAX || bad)
				break;
			snprintf(names[nin], sizeof names[nin], "%s", key);
			char m[256];
			if (vt_decode(json_string_value(val), &in[nin], m, sizeof m)) {
				snprintf(msg, sizeof msg, "harness: input %s: %s", key, m);
				bad = 1;
			} else {
				nin++;
			}
		}
		char m[256];
		if (!bad && vt_decode(json_string_value(json_object_get(json_object_get(j, "result"),
		                                                         "expect")), &want, m, sizeof m)) {
			snprintf(msg, sizeof msg, "harness: expected result: %s", m);
			bad = 1;
		}
		if (!bad && eval_case(expr, nin, names, in, &got, msg, sizeof msg) == 0 &&
		    vt_compare(&got, &want, msg, sizeof msg) == 0)
			passed++;
		else {
			if (!quiet)
				printf("FAIL line %ld: %s: %s\n", lineno, expr, msg);
			count_reason(&rs, &nr, msg);
		}
		for (int i = 0; i < nin; i++)
			vt_free(&in[i]);
		vt_free(&want);
		vt_free(&got);
		json_decref(j);
	}
	free(line);
	fclose(f);
	if (nr > 0)
		qsort(rs, (size_t)nr, sizeof *rs, reason_cmp);
	json_t *reasons = json_object();
	for (int i = 0; i < nr; i++)
		json_object_set_new(reasons, rs[i].text, json_integer(rs[i].n));
	json_t *sum = json_pack("{s:I, s:I, s:I, s:I, s:o}", "cases", (json_int_t)cases, "passed",
	                        (json_int_t)passed, "failed", (json_int_t)(cases - passed), "min",
	                        (json_int_t)min, "reasons", reasons);
	char *s = json_dumps(sum, JSON_PRESERVE_ORDER | JSON_INDENT(1));
	printf("%s\n", s);
	free(s);
	json_decref(sum);
	free(rs);
	if (passed < min) {
		fprintf(stderr, "tensor conformance: %ld passed, fewer than the %ld expected\n", passed,
		        min);
		return 1;
	}
	return 0;
}
