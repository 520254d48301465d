/*
 * gbdt.c: gradient-boosted tree models (the lightgbm("f.json") and
 * xgboost("f.json") rank features) as expressions.
 *
 * A model file lives under the application's models/ folder and is read
 * when a profile that uses it compiles.  Its trees become one expression
 * tree (struct rank_ast): each split an if(), each leaf a number, the trees
 * added up in a balanced sum, the objective's transform around it.  The
 * features the splits name ("attribute(price)", "query(q)", a function)
 * appear in that expression as bare names; each is also parsed as an
 * expression of its own, which compile.c evaluates once per document into
 * a local that the names refer to.  So a feature resolves like any other
 * feature of the profile, and the VM needs nothing of its own for trees.
 *
 * Splits decide exactly as the libraries do:
 *   LightGBM "<=": left when x <= threshold.  missing_type "NaN": a NaN goes
 *     the default_left way; "None": a NaN is taken as 0; "Zero": 0 and NaN
 *     go the default way.  "==" (categorical, integer categories): left when
 *     (int)x is one of the threshold's "a||b" categories; NaN and negative
 *     values go right.  Categories that pandas_categorical maps to strings
 *     and linear trees are refused.  The objective's transform is applied as Vespa and
 *     LightGBM's predict() do: binary (sigmoid:k) -> 1 / (1 + exp(-k * s)),
 *     cross_entropy -> sigmoid, poisson, gamma, tweedie -> exp; others
 *     (regression, lambdarank, ...) give the raw sum.  average_output
 *     divides the sum by the number of trees.
 *   XGBoost: yes when x < split_condition (the condition rounded to float,
 *     as XGBoost stores it); a NaN goes the "missing" way.  The dump holds
 *     neither base_score nor the objective: the sum is the raw margin.
 *
 * The expression lives in an arena owned by struct rank_gbdt; the parsed
 * features are ordinary ASTs (rank_ast_free).
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "rank_eval.h"

#define MAX_DEPTH 1000   /* of one tree */
#define MAX_FEATURES 100000

struct build {
	struct rank_gbdt *g;
	const struct rank_ast *call;
	const char *kind;  /* "lightgbm" or "xgboost" */
	const char *file;  /* as the call names it */
	struct strata_error *err;
	json_t *names;     /* LightGBM: feature_names */
	int string_categories; /* LightGBM: pandas_categorical maps categories to strings */
	int tree;          /* the tree being built, for messages */
};

static int fail(struct build *b, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* An error at the call: "sd:line:col: lightgbm model 'f.json': message". */
static int fail(struct build *b, int code, const char *fmt, ...)
{
	char msg[STRATA_ERRMSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	const struct rank_pos *p = &b->call->pos;
	return base_err(b->err, code, "%s:%d:%d: %s model '%s': %s", p->file ? p->file : "?",
	                p->line, p->col, b->kind, b->file, msg);
}

static int nomem(struct build *b)
{
	return base_nomem(b->err, "%s model '%s'", b->kind, b->file);
}

/* A new node in the arena; NULL when memory runs out. */
static struct rank_ast *node(struct build *b, int kind, int nargs)
{
	struct rank_ast *a = base_arena_alloc(&b->g->arena, sizeof *a, _Alignof(struct rank_ast));
	if (!a)
		return NULL;
	memset(a, 0, sizeof *a);
	a->kind = kind;
	a->pos = b->call->pos;
	if (nargs) {
		a->args = base_arena_alloc(&b->g->arena, (size_t)nargs * sizeof *a->args,
		                           _Alignof(struct rank_ast *));
		if (!a->args)
			return NULL;
		a->nargs = nargs;
	}
	return a;
}

static struct rank_ast *num(struct build *b, double v)
{
	struct rank_ast *a = node(b, RA_NUM, 0);
	if (a)
		a->num = v;
	return a;
}

static struct rank_ast *bin(struct build *b, int op, struct rank_ast *x, struct rank_ast *y)
{
	struct rank_ast *a = x && y ? node(b, RA_BINARY, 2) : NULL;
	if (a) {
		a->op = op;
		a->args[0] = x;
		a->args[1] = y;
	}
	return a;
}

static struct rank_ast *call1(struct build *b, const char *fn, struct rank_ast *x)
{
	struct rank_ast *a = x ? node(b, RA_CALL, 1) : NULL;
	if (a) {
		a->name = (char *)fn; /* static: never freed, the arena owns the node */
		a->args[0] = x;
	}
	return a;
}

static struct rank_ast *negate(struct build *b, struct rank_ast *x)
{
	struct rank_ast *a = x ? node(b, RA_UNARY, 1) : NULL;
	if (a) {
		a->op = '!';
		a->args[0] = x;
	}
	return a;
}

static struct rank_ast *if3(struct build *b, struct rank_ast *c, struct rank_ast *l,
                            struct rank_ast *r)
{
	struct rank_ast *a = c && l && r ? node(b, RA_CALL, 3) : NULL;
	if (a) {
		a->name = "if";
		a->args[0] = c;
		a->args[1] = l;
		a->args[2] = r;
	}
	return a;
}

/* The name that stands for feature `name` in the expression: one parameter
 * per distinct feature. */
static struct rank_ast *feature(struct build *b, const char *name)
{
	struct rank_gbdt *g = b->g;
	int i;
	for (i = 0; i < g->nfeatures; i++)
		if (strcmp(g->names[i], name) == 0)
			break;
	if (i == g->nfeatures) {
		if (g->nfeatures == MAX_FEATURES) {
			fail(b, STRATA_LIMIT, "more than %d features", MAX_FEATURES);
			return NULL;
		}
		size_t cap = (size_t)g->capfeatures;
		if (base_grow((void **)&g->names, &cap, (size_t)g->nfeatures + 1, sizeof *g->names,
		              MAX_FEATURES)) {
			nomem(b);
			return NULL;
		}
		g->capfeatures = (int)cap;
		if (!(g->names[i] = base_arena_strdup(&g->arena, name))) {
			nomem(b);
			return NULL;
		}
		g->nfeatures++;
	}
	struct rank_ast *a = node(b, RA_NAME, 0);
	if (!a) {
		nomem(b);
		return NULL;
	}
	a->name = g->names[i];
	return a;
}

static int number(json_t *v, double *out)
{
	if (!json_is_number(v))
		return 0;
	*out = json_number_value(v);
	return 1;
}

/* ---- LightGBM ------------------------------------------------------------------ */

static int lgb_node(struct build *b, json_t *n, int depth, struct rank_ast **out);

/* The condition "go left" of a numerical split on x. */
static struct rank_ast *lgb_numerical(struct build *b, struct rank_ast *x, double t,
                                      const char *missing, int dleft)
{
	if (strcmp(missing, "Zero") == 0) {
		/* 0 (|x| <= 1e-35, as LightGBM tests it) and NaN are missing */
		struct rank_ast *ax = call1(b, "fabs", x);
		if (dleft) /* missing || x <= t; NaN makes !(x > t) true */
			return bin(b, RB_OR, bin(b, RB_LE, ax, num(b, 1e-35)),
			           negate(b, bin(b, RB_GT, x, num(b, t))));
		return bin(b, RB_AND, bin(b, RB_GT, ax, num(b, 1e-35)), bin(b, RB_LE, x, num(b, t)));
	}
	/* "NaN": a NaN goes the default way; "None": a NaN is 0, which goes left
	 * when 0 <= t.  !(x > t) is true for NaN, x <= t false. */
	int nan_left = strcmp(missing, "NaN") == 0 ? dleft : 0 <= t;
	if (nan_left)
		return negate(b, bin(b, RB_GT, x, num(b, t)));
	return bin(b, RB_LE, x, num(b, t));
}

/* The condition of a categorical split: (int)x in the categories "a||b". */
static int lgb_categorical(struct build *b, struct rank_ast *x, json_t *thr, struct rank_ast **out)
{
	const char *s = json_string_value(thr);
	if (!s)
		return fail(b, STRATA_PARSE, "tree %d: a categorical split's threshold is not a string",
		            b->tree);
	struct rank_ast *cond = NULL;
	while (*s) {
		char *end;
		long k = strtol(s, &end, 10);
		if (end == s || k < 0 || k > 1L << 30 || (*end && strncmp(end, "||", 2) != 0))
			return fail(b, STRATA_PARSE, "tree %d: bad categorical threshold '%s'", b->tree,
			            json_string_value(thr));
		s = *end ? end + 2 : end;
		/* (int)x == k: x in [k, k + 1), and (-1, 1) for 0 (truncation) */
		struct rank_ast *lo = k == 0 ? bin(b, RB_GT, x, num(b, -1)) :
		                               bin(b, RB_GE, x, num(b, (double)k));
		struct rank_ast *one = bin(b, RB_AND, lo, bin(b, RB_LT, x, num(b, (double)k + 1)));
		cond = cond ? bin(b, RB_OR, cond, one) : one;
		if (!cond)
			return nomem(b);
	}
	if (!cond)
		return fail(b, STRATA_PARSE, "tree %d: a categorical split without categories", b->tree);
	*out = cond;
	return 0;
}

static int lgb_split(struct build *b, json_t *n, int depth, struct rank_ast **out)
{
	json_t *jf = json_object_get(n, "split_feature");
	json_t *jd = json_object_get(n, "decision_type");
	json_t *jm = json_object_get(n, "missing_type");
	json_t *thr = json_object_get(n, "threshold");
	if (!json_is_integer(jf) || !json_is_string(jd) || !thr)
		return fail(b, STRATA_PARSE,
		            "tree %d: a split needs split_feature, decision_type and threshold", b->tree);
	json_int_t fi = json_integer_value(jf);
	const char *fname = json_string_value(json_array_get(b->names, (size_t)fi));
	if (fi < 0 || !fname)
		return fail(b, STRATA_PARSE, "tree %d: split_feature %lld has no name in feature_names",
		            b->tree, (long long)fi);
	struct rank_ast *x = feature(b, fname);
	if (!x)
		return b->err->code;
	const char *dt = json_string_value(jd);
	const char *missing = json_is_string(jm) ? json_string_value(jm) : "None";
	int dleft = json_is_true(json_object_get(n, "default_left"));
	struct rank_ast *cond = NULL, *l, *r;
	int rc;
	if (strcmp(dt, "<=") == 0) {
		double t;
		if (!number(thr, &t))
			return fail(b, STRATA_PARSE, "tree %d: threshold is not a number", b->tree);
		if (strcmp(missing, "None") != 0 && strcmp(missing, "NaN") != 0 &&
		    strcmp(missing, "Zero") != 0)
			return fail(b, STRATA_PARSE, "tree %d: unknown missing_type '%s'", b->tree,
			            missing);
		if (!(cond = lgb_numerical(b, x, t, missing, dleft)))
			return nomem(b);
	} else if (strcmp(dt, "==") == 0) {
		if (b->string_categories)
			return fail(b, STRATA_NOT_IMPLEMENTED, "tree %d: a split on string categories "
			            "(pandas_categorical) is not supported", b->tree);
		if ((rc = lgb_categorical(b, x, thr, &cond)))
			return rc;
	} else {
		return fail(b, STRATA_NOT_IMPLEMENTED, "tree %d: decision_type '%s' is not supported",
		            b->tree, dt);
	}
	if ((rc = lgb_node(b, json_object_get(n, "left_child"), depth + 1, &l)) ||
	    (rc = lgb_node(b, json_object_get(n, "right_child"), depth + 1, &r)))
		return rc;
	if (!(*out = if3(b, cond, l, r)))
		return nomem(b);
	return 0;
}

static int lgb_node(struct build *b, json_t *n, int depth, struct rank_ast **out)
{
	if (!json_is_object(n))
		return fail(b, STRATA_PARSE, "tree %d: a node is not an object", b->tree);
	if (depth > MAX_DEPTH)
		return fail(b, STRATA_LIMIT, "tree %d is deeper than %d", b->tree, MAX_DEPTH);
	json_t *leaf = json_object_get(n, "leaf_value");
	if (leaf) {
		double v;
		if (!number(leaf, &v))
			return fail(b, STRATA_PARSE, "tree %d: leaf_value is not a number", b->tree);
		if (json_array_size(json_object_get(n, "leaf_coeff")))
			return fail(b, STRATA_NOT_IMPLEMENTED, "tree %d: linear trees (leaf_coeff) are "
			            "not supported", b->tree);
		return (*out = num(b, v)) ? 0 : nomem(b);
	}
	return lgb_split(b, n, depth, out);
}

/* ---- XGBoost ------------------------------------------------------------------- */

static int xgb_node(struct build *b, json_t *n, int depth, struct rank_ast **out);

/* The child of n whose nodeid is id. */
static json_t *xgb_child(json_t *n, json_int_t id)
{
	json_t *kids = json_object_get(n, "children");
	for (size_t i = 0; i < json_array_size(kids); i++) {
		json_t *k = json_array_get(kids, i);
		if (json_integer_value(json_object_get(k, "nodeid")) == id)
			return k;
	}
	return NULL;
}

static int xgb_node(struct build *b, json_t *n, int depth, struct rank_ast **out)
{
	if (!json_is_object(n))
		return fail(b, STRATA_PARSE, "tree %d: a node is not an object", b->tree);
	if (depth > MAX_DEPTH)
		return fail(b, STRATA_LIMIT, "tree %d is deeper than %d", b->tree, MAX_DEPTH);
	double v;
	json_t *leaf = json_object_get(n, "leaf");
	if (leaf) {
		if (!number(leaf, &v))
			return fail(b, STRATA_PARSE, "tree %d: leaf is not a number", b->tree);
		return (*out = num(b, v)) ? 0 : nomem(b);
	}
	json_t *split = json_object_get(n, "split"), *yes = json_object_get(n, "yes");
	json_t *no = json_object_get(n, "no"), *miss = json_object_get(n, "missing");
	if (!json_is_string(split) || !json_is_integer(yes) || !json_is_integer(no))
		return fail(b, STRATA_PARSE, "tree %d: a node needs leaf, or split, yes and no",
		            b->tree);
	if (!number(json_object_get(n, "split_condition"), &v))
		return fail(b, STRATA_NOT_IMPLEMENTED,
		            "tree %d: split on '%s' has no numeric split_condition (indicator and "
		            "categorical splits are not supported)", b->tree, json_string_value(split));
	json_t *ny = xgb_child(n, json_integer_value(yes)), *nn = xgb_child(n, json_integer_value(no));
	if (!ny || !nn)
		return fail(b, STRATA_PARSE, "tree %d: node %lld: no child with the yes or no nodeid",
		            b->tree, (long long)json_integer_value(json_object_get(n, "nodeid")));
	struct rank_ast *x = feature(b, json_string_value(split)), *l, *r;
	if (!x)
		return b->err->code;
	double t = (double)(float)v; /* XGBoost keeps split conditions as float */
	struct rank_ast *cond;
	if (json_is_integer(miss) && json_integer_value(miss) == json_integer_value(yes))
		cond = negate(b, bin(b, RB_GE, x, num(b, t))); /* a NaN goes yes */
	else
		cond = bin(b, RB_LT, x, num(b, t));
	if (!cond)
		return nomem(b);
	int rc;
	if ((rc = xgb_node(b, ny, depth + 1, &l)) || (rc = xgb_node(b, nn, depth + 1, &r)))
		return rc;
	return (*out = if3(b, cond, l, r)) ? 0 : nomem(b);
}

/* ---- the model ----------------------------------------------------------------- */

/* The sum of trees[lo..hi), balanced so that its depth is log2 of their number. */
static struct rank_ast *sum(struct build *b, struct rank_ast **trees, size_t lo, size_t hi)
{
	if (hi - lo == 1)
		return trees[lo];
	size_t mid = lo + (hi - lo) / 2;
	return bin(b, RB_ADD, sum(b, trees, lo, mid), sum(b, trees, mid, hi));
}

static int lightgbm(struct build *b, json_t *root, struct rank_ast **trees, size_t *ntrees)
{
	json_t *info = json_object_get(root, "tree_info");
	b->names = json_object_get(root, "feature_names");
	if (!json_is_object(root) || !json_is_array(info) || !json_is_array(b->names))
		return fail(b, STRATA_PARSE, "not a LightGBM model dump (no tree_info and "
		            "feature_names; write it with dump_model())");
	json_t *nc = json_object_get(root, "num_class");
	if (json_is_integer(nc) && json_integer_value(nc) > 1)
		return fail(b, STRATA_NOT_IMPLEMENTED, "multiclass models (num_class %lld) are not "
		            "supported", (long long)json_integer_value(nc));
	json_t *pc = json_object_get(root, "pandas_categorical");
	for (size_t i = 0; i < json_array_size(pc); i++)
		b->string_categories |= json_array_size(json_array_get(pc, i)) > 0;
	for (size_t i = 0; i < *ntrees; i++) {
		b->tree = (int)i;
		int rc = lgb_node(b, json_object_get(json_array_get(info, i), "tree_structure"), 0,
		                  &trees[i]);
		if (rc)
			return rc;
	}
	return 0;
}

/* Wrap the sum s of n trees in the objective's transform. */
static struct rank_ast *lgb_objective(struct build *b, json_t *root, struct rank_ast *s, size_t n)
{
	if (json_is_true(json_object_get(root, "average_output")))
		s = bin(b, RB_DIV, s, num(b, (double)n));
	const char *obj = json_string_value(json_object_get(root, "objective"));
	if (!obj || !s)
		return s;
	if (strncmp(obj, "binary", 6) == 0) {
		const char *k = strstr(obj, "sigmoid:");
		double scale = k ? strtod(k + 8, NULL) : 1;
		if (scale != 1)
			s = bin(b, RB_MUL, num(b, scale), s);
		return call1(b, "sigmoid", s);
	}
	if (strncmp(obj, "cross_entropy", 13) == 0 && (obj[13] == 0 || obj[13] == ' '))
		return call1(b, "sigmoid", s);
	if (strncmp(obj, "poisson", 7) == 0 || strncmp(obj, "gamma", 5) == 0 ||
	    strncmp(obj, "tweedie", 7) == 0)
		return call1(b, "exp", s);
	return s;
}

/* Every node of a to the position pos (features are named at the call). */
static void place(struct rank_ast *a, const struct rank_pos *pos)
{
	a->pos = *pos;
	for (int i = 0; i < a->nargs; i++)
		place(a->args[i], pos);
}

/* Parse each feature name as an expression. */
static int parse_features(struct build *b)
{
	struct rank_gbdt *g = b->g;
	if (!(g->features = base_calloc((size_t)g->nfeatures + 1, sizeof *g->features)))
		return nomem(b);
	for (int i = 0; i < g->nfeatures; i++) {
		struct strata_error perr;
		int rc = rank_expr_parse(b->call->pos.file, g->names[i], &g->features[i], &perr);
		if (rc == STRATA_NOMEM)
			return nomem(b);
		if (rc)
			return fail(b, STRATA_TYPE, "feature '%s' is not a rank feature name",
			            g->names[i]);
		place(g->features[i], &b->call->pos);
	}
	return 0;
}

/* The models folder beside the schemas folder that holds sdfile. */
static char *model_path(const char *sdfile, const char *file)
{
	const char *slash = strrchr(sdfile, '/');
	size_t n = slash ? (size_t)(slash - sdfile) : 0; /* the schema's folder */
	if (n >= 7 && strncmp(sdfile + n - 7, "schemas", 7) == 0 &&
	    (n == 7 || sdfile[n - 8] == '/'))
		n -= 7;
	else if (slash)
		n++;
	size_t k = strlen(file);
	char *p = base_alloc(n + 7 + k + 1);
	if (!p)
		return NULL;
	memcpy(p, sdfile, n);
	memcpy(p + n, "models/", 7);
	memcpy(p + n + 7, file, k + 1);
	return p;
}

int rank_gbdt_load(const char *sdfile, const struct rank_ast *call,
                   const struct rank_loader *loader, struct rank_gbdt **out,
                   struct strata_error *err)
{
	*out = NULL;
	struct build b = { .call = call, .kind = call->name, .file = "?", .err = err };
	if (call->nargs != 1 || call->args[0]->kind != RA_STR)
		return base_err(err, STRATA_TYPE, "%s:%d:%d: %s() takes one file name in quotes",
		                call->pos.file ? call->pos.file : "?", call->pos.line, call->pos.col,
		                call->name);
	b.file = call->args[0]->name;
	if (!b.file[0] || b.file[0] == '/' || strstr(b.file, ".."))
		return fail(&b, STRATA_TYPE, "the file must be a path inside the models folder");
	char *path = model_path(sdfile ? sdfile : "", b.file);
	if (!path)
		return nomem(&b);
	size_t plen = strlen(path) + 1;
	struct base_map map;
	int rc = base_map_file(path, &map, err);
	if (rc) {
		base_free(path, plen);
		char why[STRATA_ERRMSG_MAX];
		snprintf(why, sizeof why, "%s", err ? err->msg : "");
		return rc == STRATA_NOMEM ? rc : fail(&b, STRATA_NOT_FOUND, "%s", why);
	}
	json_error_t je;
	int oom = 0;
	json_t *root = loader && loader->parse_json
	                       ? loader->parse_json(map.data, map.size, 0, &je, &oom)
	                       : json_loadb(map.data, map.size, 0, &je);
	base_unmap(&map);
	if (oom) {
		base_free(path, plen);
		return nomem(&b);
	}
	if (!root) {
		/* the position in the model file, then where the profile uses it */
		rc = base_err(err, STRATA_PARSE, "%s:%d:%d: %s (%s model used at %s:%d:%d)", path,
		              je.line, je.column, je.text, b.kind,
		              call->pos.file ? call->pos.file : "?", call->pos.line, call->pos.col);
		base_free(path, plen);
		return rc;
	}
	base_free(path, plen);
	struct rank_gbdt *g = base_calloc(1, sizeof *g);
	if (!g) {
		json_decref(root);
		return nomem(&b);
	}
	base_arena_init(&g->arena, 1 << 16);
	b.g = g;
	int lgb = strcmp(call->name, "lightgbm") == 0;
	size_t n = lgb ? json_array_size(json_object_get(root, "tree_info")) : json_array_size(root);
	struct rank_ast **trees = base_calloc(n + 1, sizeof *trees);
	if (!trees)
		rc = nomem(&b);
	else if (lgb)
		rc = lightgbm(&b, root, trees, &n);
	else if (!json_is_array(root))
		rc = fail(&b, STRATA_PARSE, "not an XGBoost model dump (a JSON array of trees; write "
		          "it with dump_model(..., dump_format='json'))");
	else
		for (size_t i = 0; !rc && i < n; i++) {
			b.tree = (int)i;
			rc = xgb_node(&b, json_array_get(root, i), 0, &trees[i]);
		}
	if (!rc) {
		g->body = n ? sum(&b, trees, 0, n) : num(&b, 0);
		if (g->body && lgb)
			g->body = lgb_objective(&b, root, g->body, n);
		rc = g->body ? parse_features(&b) : nomem(&b);
	}
	base_free(trees, (n + 1) * sizeof *trees);
	json_decref(root);
	if (rc) {
		rank_gbdt_free(g);
		return rc;
	}
	*out = g;
	return 0;
}

void rank_gbdt_free(struct rank_gbdt *g)
{
	if (!g)
		return;
	if (g->features)
		for (int i = 0; i < g->nfeatures; i++)
			rank_ast_free(g->features[i]);
	base_free(g->features, ((size_t)g->nfeatures + 1) * sizeof *g->features);
	base_free(g->names, (size_t)g->capfeatures * sizeof *g->names);
	base_arena_free(&g->arena);
	base_free(g, sizeof *g);
}
