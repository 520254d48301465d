/*
 * rank.h: schemas and rank profiles.  Parses an application's .sd files,
 * type-checks and compiles every rank profile's expressions into programs for
 * a small VM, loads the ONNX models the profiles name, and evaluates the
 * phases over documents whose attributes it reads through a callback (the
 * engine points it into the store's memory map; rank knows nothing of LMDB).
 *
 *     struct rank_app *app;
 *     if (rank_app_load("myapp", &app, &err) != 0)
 *         die(err.msg);                       // "myapp/schemas/p.sd:12:5: ..."
 *     const struct rank_schema *s = rank_app_schema_find(app, "product");
 *     const struct rank_profile *p = rank_profile_find(s, "default");
 *     struct rank_query *q;
 *     rank_query_new(p, &q, &err);
 *     rank_query_set_input(q, "q_emb", cells, 384, &err);  // query(q_emb)
 *     rank_query_first_phase(q, &docs, lids, n, scores, &err);
 *     ... keep the best rank_profile_rerank_count(p) ...
 *     rank_query_second_phase(q, &docs, best, first, k, scores2, &err);
 *     rank_query_free(q);
 *     rank_app_free(app);
 *
 * A struct rank_app is immutable once loaded and shared by all threads,
 * but for its pools of retired queries, each behind its own mutex; a
 * struct rank_query belongs to one thread for one query.
 *
 * Reuse: rank_query_free retires a query into its profile's pool (at most
 * rank_app_set_query_pool of them, 1 by default) and rank_query_new takes
 * the most recent one back, reset, with every buffer it grew: once a query
 * of a given shape (inputs, candidates, models' batch sizes) has run, the
 * next one allocates nothing, provided the models were loaded with a
 * runtime session buffer pool (session.buffer_pool_generations) that keeps
 * their run contexts too.  One generation serves one query at a time.
 */
#ifndef RANK_H
#define RANK_H

#include <stddef.h>
#include <stdint.h>

#include "../base/base.h"
#include "../runtime/runtime.h"

#define RANK_MAX_RANK 8
#define RANK_MAX_THREADS 64 /* num-threads-per-search, at most */

enum rank_field_type {
	RANK_FT_STRING = 1,
	RANK_FT_INT,
	RANK_FT_LONG,
	RANK_FT_FLOAT,
	RANK_FT_DOUBLE,
	RANK_FT_BOOL,
	RANK_FT_TENSOR,
	RANK_FT_ARRAY,  /* array<T> */
	RANK_FT_WSET,   /* weightedset<T>: keys of T, each with an int weight */
	RANK_FT_MAP,    /* map<K,V> */
	RANK_FT_STRUCT, /* a struct the document declares */
	RANK_FT_RAW,       /* raw: bytes, fed and shown as base64 (types.c) */
	RANK_FT_REFERENCE, /* reference<T>: the id of a document of type T */
	RANK_FT_PREDICATE, /* predicate: a boolean constraint, matched by YQL predicate() */
	RANK_FT_POSITION,  /* position: a geographical point (latitude, longitude) */
};

struct rank_struct;

/* Settings of a weighted set field: create-if-nonexistent makes the key
 * an increment or decrement (a "match" update) names when it is missing;
 * remove-if-zero drops a key an update leaves with weight 0. */
enum { RANK_WSET_CREATE_IF_NONEXISTENT = 1, RANK_WSET_REMOVE_IF_ZERO = 2 };

/* The type of a collection or struct value, a tree: the elements of an
 * array or weighted set, the keys and values of a map, the fields of a
 * struct.  Leaves are the simple types (STRING to BOOL). */
struct rank_vtype {
	int type;                      /* enum rank_field_type, never TENSOR */
	const struct rank_vtype *elem; /* ARRAY, WSET: the elements; MAP: the values */
	const struct rank_vtype *key;  /* MAP: the keys (a simple type) */
	const struct rank_struct *st;  /* STRUCT */
};

struct rank_struct_field {
	const char *name;
	const struct rank_vtype *type;
};

/* struct name { field a type T {} ... } inside a document. */
struct rank_struct {
	const char *name;
	int nfields;
	const struct rank_struct_field *fields;
};

enum rank_distance {
	RANK_DIST_EUCLIDEAN = 0, /* the default */
	RANK_DIST_ANGULAR,
	RANK_DIST_DOTPRODUCT,
	RANK_DIST_PRENORMALIZED_ANGULAR, /* also Vespa's older name, innerproduct */
	RANK_DIST_HAMMING,      /* differing bits (int8 cells), else differing cells */
	RANK_DIST_GEODEGREES,   /* (latitude, longitude) in degrees: great-circle km */
};

/* How a text-indexed string field is matched (match: ...). */
enum rank_match {
	RANK_MATCH_TEXT = 0, /* the default: tokenized, normalized, stemmed */
	RANK_MATCH_WORD,     /* the whole value is one token, normalized */
	RANK_MATCH_EXACT,    /* the whole value is one token, lowercased only */
	RANK_MATCH_PREFIX,   /* tokens match query terms that are their prefixes */
	RANK_MATCH_GRAM,     /* n-grams of the words (gram-size, 2 by default) */
};

/* stemming: of a text field; DEFAULT takes the schema's (else BEST). */
enum rank_stemming { RANK_STEM_DEFAULT = 0, RANK_STEM_NONE, RANK_STEM_BEST };

/* What a summary field shows of its source (summary: dynamic, bolding: on,
 * summary: matched-elements-only, the documentid source). */
enum rank_summary_transform {
	RANK_SUMMARY_VALUE = 0,        /* the value as stored */
	RANK_SUMMARY_DYNAMIC,          /* a snippet around the query's terms, <hi> and <sep /> */
	RANK_SUMMARY_BOLDING,          /* the whole text, the query's terms within <hi> */
	RANK_SUMMARY_MATCHED_ELEMENTS, /* the elements of a collection the query matched */
	RANK_SUMMARY_DOCUMENTID,       /* the document id (no field: field is -1) */
};

/* sorting { function: ... } of a string field, used by order by. */
enum rank_sort_function {
	RANK_SORT_RAW = 0,   /* by the bytes (UTF-8 order); also no sorting block */
	RANK_SORT_LOWERCASE, /* by the lowercased text, then the bytes */
	RANK_SORT_UCA,       /* by the text without case and accents, then (unless strength
	                        primary) the bytes */
};

/* Indexing expressions: a field's "indexing:" statements, or its
 * "indexing { ... }" block, parsed and type-checked at deploy (rank/
 * indexing.c) and run by the engine when a document is fed.  A tree of
 * nodes; a value flows from each stage of a pipe into the next, and a
 * missing value (an absent field) flows as "none".  Field names are kept
 * as written (a schema that inherits the field resolves them itself). */
enum rank_ix_kind {
	RANK_IX_SCRIPT = 1, /* statements (args), each run on the same input; gives the last's value */
	RANK_IX_PIPE,       /* args[0] | args[1] | ...: each stage's value is the next one's input */
	RANK_IX_INPUT,      /* input str: the value of document field str */
	RANK_IX_STRING,     /* the string literal str */
	RANK_IX_NUMBER,     /* the number literal num (integral: a long) */
	RANK_IX_CURRENT,    /* _: the input (an element inside for_each) */
	RANK_IX_CAT,        /* args[0] . args[1] ...: strings (or arrays) joined; none if one is none */
	RANK_IX_CHOICE,     /* args[0] || args[1] ...: the first value that is not none */
	RANK_IX_ARITH,      /* args[0] op args[1], op one of + - * / % (numbers) */
	RANK_IX_FOR_EACH,   /* for_each { args[0] }: args[0] on each element of an array */
	RANK_IX_IF,         /* if (args[0] op args[1]) { args[2] } else { args[3] }; op one of
	                       RANK_IX_EQ ...; args[3] NULL without else (the input goes on) */
	RANK_IX_FUNC,       /* op (enum rank_ix_func) applied to the input; num, num2, str its
	                       arguments as that enum says */
	RANK_IX_EMBED,      /* embed [str [dim]]: the input text (or each string of an array)
	                       through embedder str (NULL: the only one) into a value of field
	                       dest's tensor type; pack: pack_bits follows (embed into float
	                       cells, 8 per int8 cell of dest's last dimension) */
	RANK_IX_CHUNK,      /* chunk str [num]: "fixed-length" (num characters, default 1000)
	                       or "sentence": a string into an array of strings */
	RANK_IX_SINK,       /* attribute, index or summary [str]: the input written into field
	                       str; the value goes on unchanged */
	RANK_IX_GUARD,      /* guard { args[0] }: args[0] (an update runs a script only when it
	                       reads a field the update sets, guarded or not) */
};
enum rank_ix_func {
	RANK_IXF_TO_ARRAY = 1, RANK_IXF_TO_STRING, RANK_IXF_TO_INT, RANK_IXF_TO_LONG,
	RANK_IXF_TO_FLOAT, RANK_IXF_TO_DOUBLE, RANK_IXF_TO_BOOL,
	RANK_IXF_LOWERCASE, RANK_IXF_TRIM, RANK_IXF_NORMALIZE, /* normalize: accents removed */
	RANK_IXF_SPLIT,     /* split str: a string cut at matches of the POSIX regex str */
	RANK_IXF_JOIN,      /* join str: an array's elements as strings, str between them */
	RANK_IXF_SUBSTRING, /* substring num num2: code points [num, num2) */
	RANK_IXF_HASH,      /* a string's 64-bit hash (an int field keeps the low 32 bits) */
	RANK_IXF_NOW,       /* seconds since 1970 */
	RANK_IXF_BINARIZE,  /* binarize [num]: tensor cells > num (default 0) become 1, others 0 */
	RANK_IXF_PACK_BITS, /* each 8 cells (0 or 1) of the dense dimension into one int8 cell,
	                       the first cell in the highest bit */
	RANK_IXF_PASS,      /* set_language, flatten (no annotations here): the input, unchanged */
	RANK_IXF_TO_EPOCH_SECOND, /* an ISO-8601 time ("2024-05-01T10:00:00Z", an offset or
	                       fraction allowed) into seconds since 1970 */
	RANK_IXF_HEX_ENCODE, /* a number into the lowercase hex of its 64 bits */
	RANK_IXF_HEX_DECODE, /* up to 16 hex digits into the long of those bits */
	RANK_IXF_TO_WSET,   /* a string or number into a weighted set of it, weight 1 */
	RANK_IXF_SET_VAR,   /* set_var str: the input kept as variable str of the document's
	                       scripts (which run in field order); it goes on unchanged */
	RANK_IXF_GET_VAR,   /* get_var str: that variable's value (none if not set) */
};
enum { RANK_IX_EQ = 1, RANK_IX_NE, RANK_IX_LT, RANK_IX_LE, RANK_IX_GT, RANK_IX_GE };
struct rank_ix {
	int kind;            /* enum rank_ix_kind */
	int op;              /* FUNC: enum rank_ix_func; ARITH: the operator's character;
	                        IF: RANK_IX_EQ ...; SINK: 'a', 'i' or 's' */
	char *str;           /* see the kinds; NULL when not given */
	double num, num2;
	int integral;        /* NUMBER: written without fraction or exponent */
	int nargs;
	struct rank_ix **args;
	char *dest;          /* EMBED: the field whose type the embedding takes */
	char *dim;           /* EMBED: its argument (embed id dim), the mapped dimension of
	                        dest each element of an array is embedded under, labelled
	                        by its index; NULL when not given */
	int pack;            /* EMBED: pack_bits follows */
	int line, col;       /* where it is written (in the field's schema file) */
};

/* A document field as the schema declares it. */
struct rank_field {
	const char *name;
	int type;            /* enum rank_field_type */
	int attribute;       /* indexing: attribute */
	int summary;         /* indexing: summary */
	int summary_tokens;  /* summary: tokens (the summary shows the field's tokens) */
	int cell;            /* TENSOR: BASE_DT_FLOAT, DOUBLE, INT8, BFLOAT16, INT32, INT64 */
	int rank;            /* TENSOR: dimensions */
	int64_t dims[RANK_MAX_RANK];   /* TENSOR: sizes; -1 for a mapped dimension */
	const char *dim_names[RANK_MAX_RANK];
	int distance_metric; /* enum rank_distance (attribute { distance-metric: ... }) */
	int fast_search;     /* attribute: fast-search (or attribute { fast-search }): a value
	                        dictionary that finds the documents holding a value */
	int hnsw;            /* TENSOR: indexing: index, a nearest-neighbour graph */
	int hnsw_m, hnsw_ef; /* index { hnsw { max-links-per-node, neighbors-to-explore-at-insert } };
	                        0: the defaults (16, 200) */
	int line, col;       /* where it is declared */
	/* Text search, on string fields (see rank_schema_fieldset too). */
	int index;           /* indexing: index: a text index */
	int match;           /* enum rank_match */
	int cased;           /* match: cased (terms keep their case) */
	int stemming;        /* enum rank_stemming; after parsing never DEFAULT */
	int no_normalize;    /* normalizing: none (no accent removal) */
	int rank_filter;     /* rank: filter (matches, but no term statistics) */
	int bm25;            /* index: enable-bm25 */
	int gram_size;       /* match { gram-size: N }; 0 when not given (2 for gram) */
	const struct rank_vtype *vtype; /* ARRAY, WSET, MAP, STRUCT: the whole type; else NULL */
	int wset_flags;      /* WSET: RANK_WSET_* (weightedset { ... } settings) */
	int source;          /* a field outside the document block whose indexing only reads
	                        a field of the same type ("input g | attribute"): g's index,
	                        whose value it takes when a document is fed; else -1 */
	int outside;         /* declared outside the document block: never fed itself */
	struct rank_ix *indexing; /* read-only: the statements that compute the field's value
	                        (and perhaps other fields', through their sinks) when a
	                        document is fed; NULL when the field keeps what is fed (or
	                        takes source's value) */
	int weight;          /* weight: N, the field's weight in nativeRank (0: not given,
	                        which weighs RANK_FIELD_WEIGHT) */
	int summary_transform; /* enum rank_summary_transform of the field's own summary */
	int sort_desc;       /* sorting: descending (order by f without asc or desc) */
	int sort_function;   /* enum rank_sort_function */
	int sort_primary;    /* sorting { strength: primary }: no tie-break by the bytes */
	/* The types of types.c. */
	int byte;            /* INT: declared byte (values -128 to 127, kept as an int) */
	const char *ref_doctype;  /* REFERENCE: the document type T of reference<T> */
	int imported;        /* import field ref.f as name: the value is the attribute f of the
	                        document the reference field ref names (type copied from f) */
	int import_ref;      /* imported: the index of the reference field */
	const char *import_field; /* imported: f, a field of the referenced type */
	int pred_arity;      /* PREDICATE: index { arity: N } */
	int64_t pred_lower, pred_upper; /* PREDICATE: index { lower-bound upper-bound }: range
	                        values a query gives must lie within (default: any int64) */
};
#define RANK_FIELD_WEIGHT 100 /* a field's weight when the schema gives none */

struct rank_app;
struct rank_schema;
struct rank_profile;
struct rank_query;

/* Parse and compile every APP/schemas/ *.sd file and load the models they
 * name (paths relative to APP).  Returns 0, an errno (unreadable folder or
 * file), STRATA_PARSE or STRATA_TYPE ("file:line:col: message"),
 * STRATA_NOT_IMPLEMENTED (a construct this version lacks, named with its
 * position), STRATA_NOT_FOUND (a model file), model load errors prefixed
 * with the onnx-model's position, STRATA_NOMEM. */
int rank_app_load(const char *appdir, struct rank_app **out, struct strata_error *err);

/* Where an application's models come from.  load() is called once per
 * model file the schemas name: file as an onnx-model's "file:" writes it,
 * path the same file joined to the application folder.  It returns what
 * runtime_model_load(path) would (the engine answers from its compiled
 * contexts when it can); the application frees the model. */
struct rank_input_info;
struct json_t;       /* jansson's */
struct json_error_t;
struct rank_loader {
	int (*load)(void *ud, const char *file, const char *path, struct rt_model **out,
	            struct strata_error *err);
	void *ud;
	/* Read the constant of file path (a constants { c TYPE: file: F }
	 * entry's F joined to the application folder) into shape->ncells double
	 * cells, row-major, of the dense shape given (its name is the
	 * constant's).  Returns 0 or an error with a message naming the file;
	 * ENOENT becomes STRATA_NOT_FOUND.  NULL: such a constant is refused
	 * with STRATA_NOT_IMPLEMENTED. */
	int (*load_constant)(void *ud, const char *path, const struct rank_input_info *shape,
	                     double *cells, struct strata_error *err);
	/* The same for a shape with mapped dimensions (dims -1): *nblocks
	 * blocks, *labels (nblocks * mapped dimensions strings, each and the
	 * array from base_alloc, the array of at least one entry) and *cells
	 * (nblocks * shape->ncells, at least one, base_alloc), which the caller
	 * owns.  NULL: such a constant is refused with STRATA_NOT_IMPLEMENTED. */
	int (*load_sparse_constant)(void *ud, const char *path, const struct rank_input_info *shape,
	                            size_t *nblocks, char ***labels, double **cells,
	                            struct strata_error *err);
	/* Told, once each, what the schemas say that Strata accepts though it
	 * changes nothing (msg "file:line:col: what and why", valid during the
	 * call); NULL: nobody is told. */
	void (*notice)(void *ud, const char *msg);
	/* Query inputs typed outside the schemas (a query profile type's
	 * ranking.features.query(NAME) fields): each profile that does not
	 * declare query(name) declares it with type ("tensor<float>(x[3])",
	 * "double"), without a default.  A type that does not parse fails
	 * the load with STRATA_PARSE at file:line:col, which live as long as
	 * the application. */
	const struct rank_typed_input {
		const char *name, *type, *file;
		int line, col;
	} *typed_inputs;
	int ntyped_inputs;
	/* Parse the JSON text of a model file (lightgbm("f.json"),
	 * xgboost("f.json")) as jansson's json_loadb(text, len, flags, je) does,
	 * but NULL with *oom set when memory ran out during the parse (jansson
	 * cannot say so itself).  NULL: json_loadb, and a parse that ran out of
	 * memory is reported as not JSON. */
	struct json_t *(*parse_json)(const char *text, size_t len, size_t flags,
	                             struct json_error_t *je, int *oom);
};

/* rank_app_load with the models and constant files from loader (NULL:
 * runtime_model_load, and no constant files). */
int rank_app_load_with(const char *appdir, const struct rank_loader *loader,
                       struct rank_app **out, struct strata_error *err);
/* rank_app_load_with that, when errs is not NULL, goes on after an error
 * and lists every one it finds there, as struct strata_errors (strata.h)
 * says; it returns the first error's code with that error in err (out of
 * memory stops it at once and is the one reported). */
int rank_app_load_all(const char *appdir, const struct rank_loader *loader,
                      struct strata_errors *errs, struct rank_app **out,
                      struct strata_error *err);
/* Free the application, its models and every retired query.  No query may
 * be live. */
void rank_app_free(struct rank_app *app);

/* Keep at most n (0 to RANK_QUERY_POOL_MAX) retired queries per profile;
 * 0 frees every query at rank_query_free.  Call it before queries begin
 * (it is not synchronized with them).  Queries already retired beyond n are
 * freed.  Returns 0 or STRATA_INVALID_ARGUMENT. */
#define RANK_QUERY_POOL_MAX RUNTIME_POOL_MAX /* one option sizes both pools */
int rank_app_set_query_pool(struct rank_app *app, int n, struct strata_error *err);

/* The runtime's session buffer pools, summed over the application's models:
 * run contexts taken back (hits) and made anew (misses) since they loaded. */
void rank_app_pool_stats(const struct rank_app *app, uint64_t *hits, uint64_t *misses);

int rank_app_nschemas(const struct rank_app *app);
const struct rank_schema *rank_app_schema(const struct rank_app *app, int i);
const struct rank_schema *rank_app_schema_find(const struct rank_app *app, const char *doctype);

const char *rank_schema_name(const struct rank_schema *s);        /* the document type */
int rank_schema_nfields(const struct rank_schema *s);
const struct rank_field *rank_schema_field(const struct rank_schema *s, int i);
int rank_schema_field_index(const struct rank_schema *s, const char *name); /* -1 if none */
/* 1 when fd is a tensor with exactly one mapped dimension and some indexed
 * ones (tensor(p{},x[n])): a multi-vector field, one vector per label,
 * which nearestNeighbor searches by its nearest vector. (nearest.c) */
int rank_field_multivec(const struct rank_field *fd);
/* The fields of fieldset name (fieldset name { fields: a, b }), as field
 * indexes in *fields (borrowed, valid while the schema lives) and their
 * number as the return value; -1 when there is no such fieldset. */
int rank_schema_fieldset(const struct rank_schema *s, const char *name, const int **fields);
/* The tokenizer flags (BASE_TOKEN_*, base.h) of a text-indexed string field
 * (or array or weighted set of strings: each element is tokenized so) as
 * its match, stemming and normalizing settings ask: text is NORMALIZE |
 * STEM, word is WHOLE | NORMALIZE, exact is WHOLE, prefix is NORMALIZE,
 * gram is BASE_TOKEN_GRAMS(gram-size) | NORMALIZE;
 * normalizing: none drops NORMALIZE, match: cased adds CASED.  -1 when the
 * field has no text index. */
int rank_field_token_flags(const struct rank_field *f);

/* A document-summary class: the fields a hit shows, each an output name
 * and the index of the schema field whose value it shows, and how.
 * "default" always exists: the fields with summary in their indexing (or a
 * summary setting), in declaration order, then the fields of the schema's
 * own "document-summary default" (which replace those of the same name). */
struct rank_summary_field {
	const char *name;
	int field;     /* -1 for RANK_SUMMARY_DOCUMENTID */
	int tokens;    /* show the field's tokens (an array of strings), not its value */
	int transform; /* enum rank_summary_transform */
	/* select-elements-by (transform RANK_SUMMARY_VALUE, an array field):
	 * the summary-feature whose one mapped dimension's labels are the
	 * indexes of the elements shown, in array order; NULL: all.  The
	 * request's rank profile must list it among its summary-features. */
	const char *select_by;
};
struct rank_summary_class {
	const char *name;
	int nfields;
	const struct rank_summary_field *fields;
	int omit_summary_features; /* omit-summary-features */
};
/* The class called name, NULL if none. */
const struct rank_summary_class *rank_schema_summary(const struct rank_schema *s, const char *name);

/* The profile called name ("default" always exists: first-phase nativeRank unless the
 * schema defines it).  NULL if none. */
const struct rank_profile *rank_profile_find(const struct rank_schema *s, const char *name);
const char *rank_profile_name(const struct rank_profile *p);
int rank_profile_has_second_phase(const struct rank_profile *p);
int rank_profile_rerank_count(const struct rank_profile *p); /* default 100 */
/* num-threads-per-search and min-hits-per-thread (the threads a search may
 * split its first phase over, and the fewest matches each must get): 0
 * when the profile and those it inherits from do not set them. */
int rank_profile_threads_per_search(const struct rank_profile *p);
int rank_profile_min_hits_per_thread(const struct rank_profile *p);
/* The global phase: evaluated after the second phase over the best
 * rank_profile_global_rerank_count(p) hits (default 100) of the whole
 * result, see rank_query_global_phase. */
int rank_profile_has_global_phase(const struct rank_profile *p);
int rank_profile_global_rerank_count(const struct rank_profile *p);
/* first-phase { rank-score-drop-limit: X }: 1 and *limit = X when set (a
 * hit whose first-phase score is X or less, or NaN, is dropped), else 0. */
int rank_profile_drop_limit(const struct rank_profile *p, double *limit);
/* A first phase that is bias + the sum of weight[i] * bm25(field[i]) with
 * every weight at least 0 (sums, differences, products and quotients with
 * constants, folded; a field named twice has its weights added), so that
 * bounds on each bm25 bound the score (firstsum.c): 1 with *out filled,
 * else 0. */
#define RANK_SUM_FIELDS 8
struct rank_bm25_sum {
	int n;
	int field[RANK_SUM_FIELDS];    /* fields, as in the schema */
	double weight[RANK_SUM_FIELDS];
	double bias;
};
int rank_profile_bm25_sum(const struct rank_profile *p, struct rank_bm25_sum *out);
/* The rank-score-drop-limit of phase 1 (first), 2 (second) or 3 (global):
 * 1 and *limit when set, else 0.  After the second and the global phase,
 * the hits that phase re-ranked and scored the limit or less (or NaN) are
 * dropped. */
int rank_profile_phase_drop_limit(const struct rank_profile *p, int phase, double *limit);

/* The tuning of approximate nearestNeighbor search, set in a rank profile
 * (Vespa's settings of the names below) and overridden by a query
 * (ranking.matching.<query name>). */
enum rank_nn_setting {
	RANK_NN_APPROXIMATE_THRESHOLD,    /* approximate-threshold: with a filter passing a
	                                     smaller share of the documents, search exactly */
	RANK_NN_FILTER_FIRST_THRESHOLD,   /* filter-first-threshold: below it, the graph
	                                     search checks the filter before a distance */
	RANK_NN_FILTER_FIRST_EXPLORATION, /* filter-first-exploration: how far that search
	                                     looks past documents the filter drops */
	RANK_NN_EXPLORATION_SLACK,        /* exploration-slack: the search goes on while a
	                                     candidate is within (1 + slack) of the worst kept */
	RANK_NN_TARGET_HITS_MAX_ADJUSTMENT_FACTOR, /* target-hits-max-adjustment-factor: of
	                                     post-filtering, which Strata never does */
	RANK_NN_NSETTINGS
};
struct rank_nn_setting_info {
	const char *name;       /* in a rank profile */
	const char *query_name; /* in a query, after "ranking.matching." */
	double lo, hi, def;     /* the range allowed (hi may be infinite), the default */
};
/* The names, range and default of setting which (0 <= which < RANK_NN_NSETTINGS). */
const struct rank_nn_setting_info *rank_nn_setting_info(int which);
/* The profile's value of setting which (its default when the profile and
 * those it inherits leave it unset). */
double rank_profile_nn_setting(const struct rank_profile *p, int which);

/* Declared query inputs of a profile: name (as in query(name)), shape (rank 0
 * for a number; a mapped dimension, x{}, has size -1), and the number of
 * cells (of one dense subspace when there are mapped dimensions). */
struct rank_input_info {
	const char *name;
	int rank;
	int64_t dims[RANK_MAX_RANK];
	const char *dim_names[RANK_MAX_RANK];
	size_t ncells;
	int cell;            /* the declared cell type (BASE_DT_DOUBLE, FLOAT, ...): the
	                        cells of a mapped input are rounded to it */
	int has_default;     /* the declaration gives a value */
	int required;        /* a tensor the profile reads with no default: a query
	                        that leaves it out fails (a number defaults to 0) */
	int string;          /* declared `string`: a number, the rank_string_hash of
	                        the string a query gives */
	int implicit;        /* not declared: query(name) read by the profile, a
	                        number (0 unless the query gives one) */
};
int rank_profile_ninputs(const struct rank_profile *p);
const struct rank_input_info *rank_profile_input(const struct rank_profile *p, int i);
int rank_profile_input_index(const struct rank_profile *p, const char *name);

/* Dump the compiled programs of a profile, EXPLAIN-style, into a new string
 * (base_strfree). */
char *rank_profile_explain(const struct rank_profile *p);

/* A string as rank expressions see it, as in Vespa: a whole number (exact
 * in a double) hashed from its n bytes.  String attributes, string query
 * inputs and string literals ("abc") compare equal when their strings are. */
double rank_string_hash(const char *s, size_t n);

/* How ranking reads documents: attr() returns a pointer to the value of
 * field (index in the schema) for document lid: the cells of a tensor (a
 * struct rank_sparse when its type has mapped dimensions), or one
 * int32_t/int64_t/float/double/uint8_t for a number or bool, or a double
 * holding the rank_string_hash of a string attribute, or a struct
 * rank_sparse of one mapped dimension for an array or weighted set (each
 * distinct element holding 1, each key its weight); NULL when the
 * document has no value.  The pointer must stay valid for the whole query. */
/* Text rank features (bm25(f), fieldLength(f), matches(f), the parts of
 * nativeRank) of a field with a text index, for the query being ranked. */
enum rank_text_feature {
	RANK_TF_BM25 = 1,      /* bm25(field) over the query's terms on the field */
	RANK_TF_FIELD_LENGTH,  /* fieldLength(field): tokens in the value */
	RANK_TF_MATCHES,       /* matches(field): 1 when a query term on it matched */
	RANK_TF_NATIVE_SUM,    /* nativeFieldMatch scores of the query's words on the field */
	RANK_TF_NATIVE_TERMS,  /* the query's words on the field (matched or not) */
	RANK_TF_NATIVE_PROX_SUM,    /* nativeProximity: the term pairs' weights times their
	                               normalized proximity boosts on the field */
	RANK_TF_NATIVE_PROX_WEIGHT, /* the term pairs' weights (matched or not) */
	RANK_TF_SUBQUERIES_LSB, /* subqueries(field).lsb of a predicate field: the low 32
	                           bits of the bitmap of the query's subqueries the document's
	                           predicate holds for (without subqueries: all or none) */
	RANK_TF_SUBQUERIES_MSB, /* subqueries(field).msb: the high 32 bits, the same way */
	RANK_TF_GEO_DISTANCE,  /* distance(field) of a position field to the query's
	                          geoLocation on it, in millionths of a degree */
	RANK_TF_GEO_KM,        /* distance(field).km */
	RANK_TF_GEO_LATITUDE,  /* distance(field).latitude: the document's, in degrees */
	RANK_TF_GEO_LONGITUDE, /* distance(field).longitude */
	RANK_TF_GEO_CLOSENESS, /* closeness(field): max(1 - distance / 9013305, 0) */
	RANK_TF_RAW_SCORE,     /* rawScore(field): the dot products of the query's dotProduct
	                          and wand operators on the field */
	RANK_TF_ITEM_RAW_SCORE, /* itemRawScore(label): the one labelled so; the argument
	                           is not a field but the label's number
	                           (rank_profile_item_label) */
};

/* The label of itemRawScore number i in profile p (valid while the
 * application is loaded), or NULL. */
const char *rank_profile_item_label(const struct rank_profile *p, int i);

/* bm25's parameters for a field in a profile: Vespa's defaults (k1 1.2,
 * b 0.75), or the profile's rank-properties bm25(f).k1, bm25(f).b and
 * bm25(f).averageFieldLength (avgdl; 0 when not given: the index's
 * average). */
struct rank_bm25 {
	double k1, b, avgdl;
};
/* The bm25 parameters of field (index in the schema) in profile p (NULL:
 * the defaults) into *out: a lookup in a table the profile made when it
 * compiled; thread-safe. */
void rank_profile_bm25(const struct rank_profile *p, int field, struct rank_bm25 *out);
/* The element gap of field in profile p (rank f { element-gap: N }): N, or
 * -1 for infinity (the default, and for p NULL): how many positions lie
 * between two adjacent elements of a collection field for the features
 * that measure distances across elements.  Thread-safe. */
int rank_profile_element_gap(const struct rank_profile *p, int field);

/* A tensor with mapped dimensions: nblocks dense subspaces (the type's
 * indexed dimensions, rank_type_cells() double cells each), each under the
 * labels of the type's mapped dimensions, in the type's order.  Blocks have
 * distinct labels, in no particular order. */
struct rank_sparse {
	size_t nblocks;
	const char *const *labels;   /* nblocks * mapped dimensions */
	const double *cells;         /* nblocks * subspace cells */
};

/* Rank features of the query's terms and of text-indexed fields that
 * count them (Vespa's term(n), fieldTermMatch(f, n), ...).  The query's
 * terms are its words in text conditions, numbered from 0 in the order the
 * conditions appear; a condition on a fieldset is one term per word, which
 * searches each field of the set. */
enum rank_term_feature {
	RANK_TT_COUNT = 1,      /* queryTermCount (field, term and lid unused) */
	RANK_TT_SIGNIFICANCE,   /* term(n).significance: 0.5 + 0.5 * normalized idf, as
	                           Vespa's fallback; 0 past the last term */
	RANK_TT_WEIGHT,         /* term(n).weight: 100; 0 past the last term */
	RANK_TT_CONNECTEDNESS,  /* term(n).connectedness: 0.1; 0 past the last term */
	RANK_TT_OCCURRENCES,    /* fieldTermMatch(f, n).occurrences in lid (0: none) */
	RANK_TT_FIRST_POSITION, /* fieldTermMatch(f, n).firstPosition (1000000: none) */
	RANK_TT_MATCH_COUNT,    /* matchCount(f): terms on f that lid has */
	RANK_TT_AVG_LENGTH,     /* averageFieldLength(f): tokens per document with a value */
	RANK_TT_NUM_DOCS,       /* num_docs_indexed: documents of the type (bm25's N) */
	RANK_TT_DOC_FREQ,       /* documents with term n in f; NaN when term n does not
	                           search f (queryTermDocumentFrequency) */
	RANK_TT_ATTR_MATCH,     /* attributeMatch(f), the output term (enum
	                           rank_attr_match) */
	RANK_TT_FIELD_MATCH,    /* fieldMatch(f), the output term (enum
	                           rank_field_match) */
	RANK_TT_TEXT_SIMILARITY, /* textSimilarity(f), the output term: 0 the score,
	                           1 proximity, 2 order, 3 queryCoverage, 4 fieldCoverage */
	RANK_TT_ELEM_SIMILARITY, /* elementSimilarity(f): the best element's
	                           (0.35 p + 0.15 o + 0.30 q + 0.20 f) * w (0: none) */
	RANK_TT_TERM_WEIGHT,    /* fieldTermMatch(f, n).weight: the weights of the elements
	                           of term n's occurrences, summed (1 each but in weighted
	                           sets) */
	RANK_TT_ELEM_BM25,      /* elementwise(bm25(f)): with term an element number e,
	                           bm25 of the query's terms on f over element e of lid's
	                           value (NaN when none is in it); with term -1, one past
	                           the last element that holds one (0: none) */
};

/* The outputs of fieldMatch(f), in the order of fieldMatch_outputs[]
 * (compile_feature.c). */
enum rank_field_match {
	RANK_FM_MATCH = 0, RANK_FM_PROXIMITY, RANK_FM_COMPLETENESS, RANK_FM_QUERY_COMPLETENESS,
	RANK_FM_FIELD_COMPLETENESS, RANK_FM_ORDERNESS, RANK_FM_RELATEDNESS, RANK_FM_EARLINESS,
	RANK_FM_LONGEST_SEQUENCE_RATIO, RANK_FM_SEGMENT_PROXIMITY, RANK_FM_UNWEIGHTED_PROXIMITY,
	RANK_FM_ABSOLUTE_PROXIMITY, RANK_FM_OCCURRENCE, RANK_FM_ABSOLUTE_OCCURRENCE,
	RANK_FM_SEGMENTS, RANK_FM_MATCHES, RANK_FM_DEGRADED_MATCHES, RANK_FM_OUT_OF_ORDER,
	RANK_FM_GAPS, RANK_FM_GAP_LENGTH, RANK_FM_LONGEST_SEQUENCE, RANK_FM_HEAD, RANK_FM_TAIL,
	RANK_FM_SEGMENT_DISTANCE, RANK_FM_WEIGHT, RANK_FM_SIGNIFICANCE, RANK_FM_IMPORTANCE,
	RANK_FM_WEIGHTED_OCCURRENCE, RANK_FM_WEIGHTED_ABSOLUTE_OCCURRENCE,
	RANK_FM_SIGNIFICANT_OCCURRENCE,
};

/* The outputs of attributeMatch(f), as Vespa computes them over the query's
 * terms on attribute f (its 'contains' conditions). */
enum rank_attr_match {
	RANK_AM_COMPLETENESS = 0,           /* attributeMatch(f) too */
	RANK_AM_QUERY_COMPLETENESS,         /* matches / terms on f */
	RANK_AM_FIELD_COMPLETENESS,         /* matches / values (sets: weights matched / all) */
	RANK_AM_NORMALIZED_WEIGHT,
	RANK_AM_NORMALIZED_WEIGHTED_WEIGHT,
	RANK_AM_MATCHES,
	RANK_AM_TOTAL_WEIGHT,               /* weighted sets: weights of the keys matched */
	RANK_AM_AVERAGE_WEIGHT,
	RANK_AM_MAX_WEIGHT,
	RANK_AM_NATIVE,                     /* nativeAttributeMatch's sum of boosts */
	RANK_AM_TERMS,                      /* the terms on f */
};

struct rank_docs {
	void *ud;
	const void *(*attr)(void *ud, int field, uint32_t lid);
	/* The text feature (enum rank_text_feature) of field for lid; may be
	 * NULL (every text feature is then 0). */
	double (*text)(void *ud, int feature, int field, uint32_t lid);
	/* The term feature (enum rank_term_feature) of term (a query term
	 * number, or -1) on field (or -1) for lid; may be NULL (every term
	 * feature is then 0, queryTermDocumentFrequency empty). */
	double (*term)(void *ud, int feature, int field, int term, uint32_t lid);
	/* May be NULL: attr's answers for lids[0..n) into out[0..n), a block of
	 * documents at a time (the first phase's dot products read so). */
	void (*attr_rows)(void *ud, int field, const uint32_t *lids, size_t n, const void **out);
};

/* Evaluation state of one query against one profile: a retired one taken
 * back from the profile's pool when there is one, else a new one.  Inputs
 * start at their defaults, with no nearestNeighbor item.  Returns 0 or
 * STRATA_NOMEM. */
int rank_query_new(const struct rank_profile *p, struct rank_query **out, struct strata_error *err);
/* End the query: retired into its profile's pool, or freed when the pool is
 * full or off.  Pointers it handed out (feature values, model outputs) are
 * invalid from here.  NULL is ignored. */
void rank_query_free(struct rank_query *q);

/* Give query(name), an input whose type has mapped dimensions, a value:
 * nblocks dense subspaces, block b under labels[b * M .. b * M + M - 1] (M
 * the mapped dimensions, in the declared order) with cells[b * S .. b * S +
 * S - 1] (S the input's ncells).  Everything is copied.  Not given, such an
 * input is the empty tensor.  Returns 0, STRATA_NOT_FOUND (not declared),
 * STRATA_INVALID_ARGUMENT (no mapped dimension, an address given twice),
 * STRATA_NOMEM. */
int rank_query_set_input_sparse(struct rank_query *q, const char *name, size_t nblocks,
                                const char *const *labels, const double *cells,
                                struct strata_error *err);
/* Give query(name) a value: n cells in row-major order (n must equal the
 * declared ncells).  Inputs not given take their declared default; a number
 * with none is 0, and a tensor with none that the profile reads makes the
 * first phase fail with STRATA_INVALID_ARGUMENT naming it.  Returns 0,
 * STRATA_NOT_FOUND (not declared), STRATA_INVALID_ARGUMENT (wrong number of
 * cells, or the input has mapped dimensions: rank_query_set_input_sparse). */
int rank_query_set_input(struct rank_query *q, const char *name, const double *cells, size_t n,
                         struct strata_error *err);

/* The query's time, the `now` feature (seconds since the epoch), from which
 * age(f) and freshness(f) count: the clock's when the query was made. */
void rank_query_set_now(struct rank_query *q, double now);

/* *out: a second state for the query q, with which another thread runs q's
 * first phase over other documents.  It has q's profile, its dense inputs
 * (given or not), its `now` and its random seed; not its inputs with mapped
 * dimensions nor its nearestNeighbor items, which a first phase that
 * rank_profile_first_parallel() accepts never reads, so the scores it gives
 * are q's to the bit.  Call it on q's thread; free the copy with
 * rank_query_free (on any one thread).  Returns 0 or STRATA_NOMEM. */
int rank_query_fork(const struct rank_query *q, struct rank_query **out, struct strata_error *err);
/* 1 when p's first phase reads only what rank_query_fork copies and the
 * rank_docs attribute callback (attributes that are numbers or dense
 * tensors, not imported), so its documents may be split over threads, each
 * with its own fork; 0 when it reads text or term features, models, mapped
 * values, nearestNeighbor items or firstPhase. */
int rank_profile_first_parallel(const struct rank_profile *p);
/* The same for p's second phase, which may also run ONNX models whose
 * inputs read only those (each fork has its own model contexts), and the
 * candidates' first-phase scores: its candidates may be split over threads.
 * 0 without a second phase. */
int rank_profile_second_parallel(const struct rank_profile *p);

/* Declare the query's nearestNeighbor item: field (a tensor attribute) is
 * compared with query(input).  closeness(field, f) and distance(field, f)
 * refer to it.  Call it after the inputs are set.  Returns 0,
 * STRATA_NOT_FOUND (unknown field or input), STRATA_TYPE (not a tensor
 * attribute, or shapes differ), STRATA_INVALID_ARGUMENT (the input was not
 * given and declares no default). */
int rank_query_set_nn(struct rank_query *q, const char *field, const char *input,
                      struct strata_error *err);
/* The most nearestNeighbor items a query may hold (on as many fields). */
#define RANK_MAX_NN 8

/* The nearestNeighbor item on field (set with rank_query_set_nn) carries
 * label ({label: "l"}): closeness(label, l) and distance(label, l) are
 * those of field (for any other label: 0 and +inf).  label is copied.
 * Returns 0, STRATA_NOT_FOUND (no item on field), STRATA_NOMEM. */
int rank_query_set_nn_label(struct rank_query *q, const char *field, const char *label,
                            struct strata_error *err);

/* The distance of lid's value of field to the query tensor of the
 * nearestNeighbor item on it, in the field's metric; +inf when the document
 * has no value or the field no item. */
double rank_query_nn_distance(struct rank_query *q, const struct rank_docs *d, int field,
                              uint32_t lid);
/* The cells of the query tensor of the nearestNeighbor item on field (*n of
 * them), valid until the query's inputs change; NULL with no item. */
const double *rank_query_nn_cells(const struct rank_query *q, int field, size_t *n);

/* First phase for n documents: scores[i] for lids[i].  A first phase that
 * is sum(query(q) * attribute(f)) over a dense field runs as SIMD dot
 * products over the documents' cells (gathered through d->attr_rows when
 * set), with the VM's results to the bit.  Returns 0,
 * STRATA_INVALID_ARGUMENT (a required input was not given: see
 * rank_query_set_input), STRATA_RUNTIME (a model failed), STRATA_NOMEM. */
int rank_query_first_phase(struct rank_query *q, const struct rank_docs *d, const uint32_t *lids,
                           size_t n, double *scores, struct strata_error *err);

/* Second phase for the n re-ranked candidates, whose first-phase scores are
 * first[i] (the firstPhase feature).  Models with a symbolic batch dimension
 * run once for all n.  Returns 0, STRATA_RUNTIME, STRATA_NOMEM. */
int rank_query_second_phase(struct rank_query *q, const struct rank_docs *d, const uint32_t *lids,
                            const double *first, size_t n, double *scores,
                            struct strata_error *err);

/* Global phase for the n best hits of the result (after the second phase,
 * best first; lids[i] with first-phase score first[i]), all at once: each
 * normalizer's argument (normalize_linear, reciprocal_rank,
 * reciprocal_rank_fusion) is evaluated for every one of them and normalized
 * over them, then the expression gives scores[i].  normalize_linear maps the
 * candidates' values linearly onto [0, 1] (all equal: 0.5 each);
 * reciprocal_rank(x, k) is 1 / (k + r), r the 1-based rank of x among them,
 * highest first (ties by position in lids, NaN last), k 60 by default.
 * With no global phase, scores are the first-phase scores.  Returns 0,
 * STRATA_RUNTIME, STRATA_NOMEM. */
int rank_query_global_phase(struct rank_query *q, const struct rank_docs *d, const uint32_t *lids,
                            const double *first, size_t n, double *scores,
                            struct strata_error *err);
/* The same in three steps, so that the first and the last may run over
 * threads (each thread its own fork, all sharing vals; the result is the
 * one-thread result whatever the split):
 *   1. rank_query_global_args: normalizer k's argument for candidates
 *      from .. to - 1 of n into vals[k * n + i] (vals holds
 *      rank_profile_global_norms(p) * n doubles);
 *   2. rank_query_global_normalize: each normalizer over its n values, in
 *      place (on one thread: they compare the candidates);
 *   3. rank_query_global_scores: the expression for candidates from .. to
 *      - 1 into scores[i], reading the normalized vals.
 * rank_profile_global_parallel(p) is 1 when the arguments and the
 * expression read only what a fork has (rank_profile_second_parallel's
 * rule). */
int rank_profile_global_norms(const struct rank_profile *p);
int rank_profile_global_parallel(const struct rank_profile *p);
int rank_query_global_args(struct rank_query *q, const struct rank_docs *d, const uint32_t *lids,
                           const double *first, size_t from, size_t to, size_t n, double *vals,
                           struct strata_error *err);
int rank_query_global_normalize(struct rank_query *q, double *vals, size_t n,
                                struct strata_error *err);
int rank_query_global_scores(struct rank_query *q, const struct rank_docs *d, const uint32_t *lids,
                             const double *first, size_t from, size_t to, const double *vals,
                             size_t n, double *scores, struct strata_error *err);

/* A feature value handed to a callback: rank 0 is a number.  A type with
 * mapped dimensions (dims -1) comes as sparse (cells NULL, ncells the
 * cells of one block). */
struct rank_feature {
	const char *name;          /* as written in the profile: "attribute(price)" */
	int rank;
	const int64_t *dims;
	const char *const *dim_names;
	size_t ncells;
	const double *cells;
	const struct rank_sparse *sparse;
};
typedef int rank_feature_fn(void *ud, const struct rank_feature *f);

enum { RANK_MATCH_FEATURES = 1, RANK_SUMMARY_FEATURES = 2 };

/* Evaluate the match-features or summary-features of lid (after the phases
 * ran for it; first is its first-phase score) and hand each to fn.  Returns
 * 0, what fn returned if non-zero, STRATA_RUNTIME, STRATA_NOMEM. */
int rank_query_features(struct rank_query *q, const struct rank_docs *d, uint32_t lid, double first,
                        int which, rank_feature_fn *fn, void *ud, struct strata_error *err);

#endif
