/*
 * strata.h: the Strata library, a ranking engine that evaluates machine-learned
 * models next to the documents they score.
 *
 * An application is a folder holding schemas/ (one .sd file per document type)
 * and models/ (ONNX files named by the rank profiles).  strata_open() opens it:
 * it parses and type-checks every schema and rank profile, loads every model
 * (from the compiled context `strata deploy` left in DATA/contexts while that
 * is fresh, else from the source) and opens the document store, which lives in
 * the application's data folder DATA (APP/.strata unless another folder is
 * given).  Documents go in as Vespa
 * document JSON operations; queries are Vespa search requests and come back as
 * Vespa result JSON.
 *
 *     struct strata *db;
 *     struct strata_error err;
 *     if (strata_open("myapp", NULL, &db, &err) != 0) {
 *         fprintf(stderr, "%s\n", err.msg);
 *         return 1;
 *     }
 *     strata_feed_json(db, "{\"put\": \"id:shop:product::1\","
 *                          " \"fields\": {\"title\": \"lamp\", \"price\": 30}}", &err);
 *     char *result;
 *     if (strata_query_json(db, "{\"yql\": \"select * from sources * where true\","
 *                               " \"ranking.profile\": \"default\"}", &result, &err) == 0) {
 *         puts(result);
 *         strata_free(result);
 *     }
 *     strata_close(db);
 *
 * Threads: one struct strata may be used by many query threads at once and by
 * one feeding thread; strata_close() must not race with any other call.
 *
 * Memory: the library allocates through one allocator of its own, which
 * counts what it holds; it routes jansson's allocations there too
 * (json_set_alloc_funcs), from the start of the program on.  A program that
 * uses jansson itself shares that allocator for its own JSON values, and must
 * not set jansson's allocator; nor may it give json_dumps()'s text to free():
 * strata_json_dump() (below) writes JSON text that strata_free() takes.
 *
 * Errors: every fallible call returns 0 on success, a negative STRATA_* code
 * below, or a positive errno value passed through from the system.  When a
 * struct strata_error is given it receives the code and a message; messages
 * about a file begin with "file:line:column: ".  strata_strerror() names any
 * code.  The codes are append-only.
 */
#ifndef STRATA_H
#define STRATA_H

#include <stddef.h>
#include <stdint.h>

#include "strata_defs.h"

#ifdef __cplusplus
extern "C" {
#endif

struct strata; /* an open application */

/* How much a message of the log callback matters. */
enum strata_log_level {
	STRATA_LOG_WARNING = 1, /* something was worked around, and the caller may want to act:
	                           a stale or damaged compiled context was passed over and the
	                           model compiled from its source */
	STRATA_LOG_NOTICE,      /* the application says something Strata accepts though it changes
	                           nothing (a rank property of a field the schema lacks), told
	                           when it is deployed */
};

/* The library never prints.  What it has to say beside its results and
 * errors goes to this callback, given in struct strata_options: level is an
 * enum strata_log_level, msg one line of text without a newline (it names
 * the file concerned first, "path: why"), valid during the call only.  It
 * runs on the thread of the library call that has something to say, so
 * when several threads use one handle it must be safe to call from them
 * at once.  Today only strata_open() logs, while it loads the application
 * (its schemas and models). */
typedef void strata_log_fn(void *ud, int level, const char *msg);

struct strata_options {
	const char *data_dir; /* where the store lives; NULL: APP/.strata */
	int read_only;        /* 1: no feeding; the store must exist */
	/* Generations of evaluation state kept for reuse: per model, run
	 * contexts with their buffers (the runtime's session buffer pool), and
	 * per rank profile, the state of ended queries.  One generation serves
	 * one query at a time: with N, up to N queries running at once take
	 * their state back instead of allocating it, and once a query of a
	 * given shape (profile, inputs, number of candidates) has run, the next
	 * ones allocate nothing while ranking.  More generations cost memory
	 * only: each holds the buffers of the largest query it served.  0: the
	 * default, 1; -1: none (every query allocates its state and frees it);
	 * at most 1024. */
	int pool_generations;
	/* The most threads one search may split its first phase over (Vespa's
	 * requestthreads persearch): a rank profile's num-threads-per-search
	 * asks for fewer or more, capped at this.  The handle keeps
	 * search_threads - 1 worker threads for that, shared by the searches
	 * of all threads: one search uses them at a time, the others run on
	 * their own thread alone meanwhile.  Results do not depend on it.  0:
	 * the default, 1 (no workers); at most 64. */
	int search_threads;
	/* Where messages go (see strata_log_fn) with log_ud; NULL: nowhere,
	 * the library says nothing.  The strata CLI prints them on stderr as
	 * "strata: MSG". */
	strata_log_fn *log;
	void *log_ud;
	/* Not NULL: strata_open() lists every error it finds in the
	 * application's schemas and profiles here (n is 0 when there is none),
	 * going on after each as struct strata_errors says; err and the return
	 * value are still those of the first.  NULL: it stops at the first. */
	struct strata_errors *errors;
	/* Operations per transaction of strata_feed_file(): 0 is the default,
	 * 50,000; at most STRATA_FEED_BATCH_MAX.  Larger batches build a text
	 * index faster (a term's postings are written once per batch, however
	 * many of its documents hold the term); smaller ones make documents
	 * durable sooner.  A batch also ends at 64 MiB of input, and on
	 * standard input when the feed is about to wait for more. */
	long feed_batch;
	/* 1: the application must have been deployed before (strata_deploy()
	 * made its store in the data folder), else strata_open() fails with
	 * STRATA_NOT_FOUND ("application 'APP' is not deployed ...") and
	 * creates nothing; the strata CLI opens applications this way for
	 * feed, query, get, remove and serve.  0: strata_open() creates the
	 * store when there is none.  strata_deploy() ignores it. */
	int must_be_deployed;
};
#define STRATA_FEED_BATCH_MAX 10000000

/* Deploy and open the application in folder app.  opts may be NULL.
 * Returns 0, STRATA_PARSE or STRATA_TYPE (message has file:line:column),
 * STRATA_NOT_FOUND (a model file or the schemas folder is missing),
 * STRATA_INVALID_PROTOBUF / STRATA_INVALID_GRAPH / STRATA_NOT_IMPLEMENTED (a
 * model), STRATA_INVALID_ARGUMENT (an option out of range), STRATA_STORE,
 * STRATA_NOMEM, or an errno.  The embedders of app/services.xml are read
 * too: a malformed file, an unsupported setting or an embedder model
 * without the inputs and output it needs fails the open
 * (services.xml:line:column); an embedder whose model is a URL, a model-id
 * or a missing file is declared but cannot run, which opts->log is told
 * once.  On success *out is a new handle for strata_close(). */
int strata_open(const char *app, const struct strata_options *opts,
                struct strata **out, struct strata_error *err);

/* Close the handle and free everything it holds.  NULL is ignored. */
void strata_close(struct strata *db);

/* Deploy the application in folder app, as `strata deploy` does, and open
 * it: strata_open(), and before it returns every model the rank profiles
 * name is compiled into DATA/contexts/ (one shared binary for all of
 * them, weights they share stored once) and recorded in
 * DATA/contexts/manifest.json, so that later opens load the models from
 * there while their sources are unchanged; the notices of the schemas
 * (things accepted that change nothing) go to opts->log.  Deploying again
 * compiles again.  opts as strata_open() (must_be_deployed is ignored).
 * Returns strata_open()'s codes, and a model's compile errors, whose
 * message names the model.  On success *out is a new handle for
 * strata_close(); strata_app_info() says what was deployed. */
int strata_deploy(const char *app, const struct strata_options *opts, struct strata **out,
                  struct strata_error *err);

/* What an open application is made of, for a summary. */
struct strata_app_info {
	const char *data_dir; /* the data folder: the store, and the compiled contexts in
	                         DATA/contexts; valid until strata_close() */
	int ndoctypes;        /* its document types, one per schema */
	int ncompiled;        /* models strata_deploy() compiled into DATA/contexts (0 when
	                         the handle came from strata_open()) */
};
void strata_app_info(struct strata *db, struct strata_app_info *info);

/* The name of document type i (0 to ndoctypes - 1, in schema file name
 * order), valid until strata_close(); NULL when i is out of range. */
const char *strata_doctype_name(struct strata *db, int i);

/* Check the store's indexes against its documents: for each document type
 * its text index (blocks, their score bounds, field lengths, frequencies,
 * totals), the value dictionary of each fast-search attribute and the
 * graph of each nearest-neighbour field.  Reads everything: for tests
 * and after a crash.  *report (NULL: not wanted; free with strata_free)
 * gets JSON, {"doctypes": [{"name", "documents", "postings",
 * "dictionaries", "graphs"}]}.  Returns 0 when they agree, STRATA_CORRUPT
 * naming the first fault (its doctype and field), or another error. */
int strata_check(struct strata *db, char **report, struct strata_error *err);

/* Apply one Vespa document operation given as JSON text: {"put": ID, "fields":
 * {...}}, {"update": ID, "fields": {"f": {"assign": v}}} or {"remove": ID}.
 * It is committed before the call returns.  An operation may carry a
 * test-and-set "condition", a document selection ("music.year > 2000"),
 * evaluated against the stored document in the write transaction: when it
 * does not match, or there is no such document, nothing is written and the
 * call returns STRATA_CONDITION_FAILED; a put or update with "create": true
 * on a missing document ignores its condition and creates it (Vespa's
 * rule).  Returns 0, STRATA_PARSE (not JSON, or a condition's syntax,
 * "condition:1:COL: ..."), STRATA_INVALID_ARGUMENT (does not fit the schema;
 * nothing is written), STRATA_NOT_FOUND (update or remove of a missing
 * document), STRATA_CONDITION_FAILED, or a store error.  For many operations
 * use strata_feed_file(). */
int strata_feed_json(struct strata *db, const char *op, struct strata_error *err);

/* Statistics of a feed. */
struct strata_feed_stats {
	long ok;        /* operations written (committed) */
	long failed;    /* operations that failed, each reported */
	long not_met;   /* operations whose test-and-set condition did not match: each
	                   reported with STRATA_CONDITION_FAILED, not written, not failed */
	double seconds;
	long last_line; /* the line where the last operation fed begins: it and
	                   every one before it are written or reported failed */
	long applied;   /* operations applied so far: ok, and in a progress call
	                   between commits those of the open batch too */
	long long bytes_done;  /* input fed so far */
	long long bytes_total; /* the file's size; 0 on standard input (unknown) */
	int durable;    /* in a progress call: 1 after a commit, 0 between */
};

/* Called for each operation that failed, or whose condition did not match
 * (code STRATA_CONDITION_FAILED): line is its first line in the input
 * (1-based), msg the reason. */
typedef void strata_feed_report_fn(void *ud, long line, int code, const char *msg);

/* Feed every operation of a JSON Lines stream or a JSON array read from path
 * ("-" is standard input).  A bad operation is reported through report (may be
 * NULL) and skipped; the others are written in batched transactions.  An
 * operation whose condition does not match is reported too, and counted in
 * stats->not_met, not as failed (Vespa's feed clients count it a success).
 * Returns 0 when every operation went in or was left out by its condition,
 * STRATA_INVALID_ARGUMENT when some failed (see stats), or an error that
 * stopped the feed (I/O, store).  stats may be NULL.
 * An operation the store could not take (out of memory, a full store) loses
 * the batch it was in: those operations are reported and counted as failed,
 * so stats->ok is always what was committed.  JSON Lines on standard input
 * are fed as they arrive, and what has been read is committed before the
 * feed waits for more; a JSON array is read whole first. */
int strata_feed_file(struct strata *db, const char *path, strata_feed_report_fn *report,
                     void *ud, struct strata_feed_stats *stats, struct strata_error *err);

/* Called after each committed batch of a feed with the counts so far
 * (st->durable = 1): st->ok documents are written and survive a crash from
 * then on, and every operation up to the one on line st->last_line is
 * settled.  Also called about twice a second between commits, for a
 * progress display (st->durable = 0): st->ok is still what is durable,
 * st->applied what has been applied, st->bytes_done of st->bytes_total
 * how far the input is. */
typedef void strata_feed_progress_fn(void *ud, const struct strata_feed_stats *st);

/* strata_feed_file() with a progress callback (may be NULL) that gets ud too. */
int strata_feed_file_progress(struct strata *db, const char *path, strata_feed_report_fn *report,
                              strata_feed_progress_fn *progress, void *ud,
                              struct strata_feed_stats *stats, struct strata_error *err);

/* Run a search request given as Vespa search JSON: {"yql": ...,
 * "ranking.profile": ..., "input.query(q)": ..., "hits": N, "offset": N}.
 * On success *result is a new NUL-terminated Vespa result JSON text that the
 * caller frees with strata_free().  Returns 0, STRATA_PARSE (bad JSON or YQL),
 * STRATA_INVALID_ARGUMENT (bad input value or option), STRATA_NOT_FOUND
 * (unknown profile, field or input), STRATA_RUNTIME (a model failed),
 * STRATA_TIMEOUT (see below), or a store error.
 *
 * Time limit, as Vespa's: "timeout" (seconds, or "500ms", "2s", "1m"; or
 * the YQL's "timeout N", N milliseconds, which wins; counted from this
 * call; none when left out) with Vespa's soft timeout,
 * on unless "ranking.softtimeout.enable" is false.  On, the query stops at
 * timeout x "ranking.softtimeout.factor" (above 0, at most 1; default 0.5)
 * and answers with what it has: the documents matched and first-phase
 * ranked by then (the matches not yet ranked leave), the candidates
 * re-ranked by then (the others keep their first-phase order below them),
 * and a result whose "coverage" says so: "documents" (those covered),
 * "coverage" (their percentage, below 100), "full": false, "resultsFull": 0
 * and "degraded": {"timeout": true, ...}.  Off, running past the timeout
 * fails the query with STRATA_TIMEOUT.  The deadline is looked at after
 * every 1024 documents matched or first-phase ranked and after every 1024
 * candidates re-ranked, never before the first of them, so every query
 * covers some documents; the global phase, the summaries and the
 * nearest-neighbour search are not cut. */
int strata_query_json(struct strata *db, const char *request, char **result,
                      struct strata_error *err);

/* Get a document by id ("id:ns:doctype::key") as Vespa document JSON
 * ({"id": ..., "fields": {...}}: its own fields, not those imported from a
 * referenced document nor those outside the document block; raw fields in
 * base64), a new string freed with strata_free().
 * Returns 0, STRATA_NOT_FOUND, STRATA_INVALID_ARGUMENT (malformed id). */
int strata_get_json(struct strata *db, const char *id, char **doc, struct strata_error *err);

/* Remove a document by id.  Returns 0, STRATA_NOT_FOUND, STRATA_INVALID_ARGUMENT. */
int strata_remove(struct strata *db, const char *id, struct strata_error *err);

/* Visit the documents of type doctype, in pages: at most count (1 to
 * 1024) of them after the place continuation names (NULL or "" to start),
 * restricted to ids of namespace ns unless ns is NULL.  *out is a new
 * string freed with strata_free(): {"documents": [{"id", "fields"}, ...],
 * "documentCount": N, "continuation": TOKEN}, as strata_get_json()
 * shows each document, in the store's order; "continuation" is left out
 * on the last page.  A page sees the store as it was when the call began;
 * documents written or removed between calls may or may not be seen (one
 * removed and put again may be seen twice); the others are seen once
 * each.  Returns 0, STRATA_NOT_FOUND (unknown document type),
 * STRATA_INVALID_ARGUMENT (count out of range, a continuation this call did
 * not make), STRATA_NOMEM, or a store error.  Safe beside queries and a
 * writer, like strata_get_json(). */
int strata_visit_json(struct strata *db, const char *doctype, const char *ns,
                      const char *continuation, long count, char **out,
                      struct strata_error *err);

/* strata_visit_json() that keeps only the documents matching selection, a
 * Vespa document selection ("product.price < 100 and id.namespace ==
 * \"shop\""; NULL or "": every document): count is the most a page shows
 * of those, and a page reads on until it has them or the type ends.
 * Returns strata_visit_json()'s codes, and STRATA_PARSE,
 * STRATA_INVALID_ARGUMENT or STRATA_NOT_IMPLEMENTED for a selection that
 * cannot be parsed ("selection:1:COL: why"). */
int strata_visit_select_json(struct strata *db, const char *doctype, const char *ns,
                             const char *selection, const char *continuation, long count,
                             char **out, struct strata_error *err);

/* What strata_visit_where_json() and strata_remove_where() go through.
 * Content clusters are the <content id> elements of the application's
 * services.xml (an id left out is "content"), each holding the types its
 * <documents><document type> name; an application whose services.xml
 * declares none, or that has no services.xml, has one, "default", holding
 * every type. */
struct strata_visit {
	const char *cluster;      /* a content cluster, or NULL (then doctype is needed) */
	const char *doctype;      /* one type (in cluster, when given), or NULL: every type
	                             of cluster, in schema order */
	const char *ns;           /* ids of this namespace only, or NULL: any */
	const char *selection;    /* a document selection, or NULL or "": every document */
	const char *continuation; /* where the page begins: NULL or "" to start */
	long count;               /* documents a page shows: 1 to 1024 (visits only); 0:
	                             strata_visit_where_json() only checks v (cluster,
	                             types, selection, continuation), reads no document and
	                             leaves *out NULL */
};

/* strata_visit_select_json() over v's types: a visit of several types
 * makes continuations that only such a visit takes.  Returns its codes,
 * and STRATA_INVALID_ARGUMENT for a cluster the application lacks ("no
 * content cluster 'x', only 'a', 'b'"), a doctype the cluster does not hold,
 * or no cluster and no doctype; STRATA_PARSE and the others of
 * services.xml ("services.xml:line:col: ..."). */
int strata_visit_where_json(struct strata *db, const struct strata_visit *v, char **out,
                            struct strata_error *err);

/* Remove every document of v's types (and namespace) that matches
 * v->selection, which must be given ("true" for all); v->continuation must
 * be NULL, v->count is not read.  The removals are committed in
 * transactions of up to 1,000 as they go, each durable when committed and
 * every index kept in step with the documents; *removed counts those
 * committed, also when an error stops it.  Returns 0,
 * strata_visit_where_json()'s codes (nothing removed), STRATA_INVALID_ARGUMENT
 * (no selection; a read-only handle), or a store error.  Call it from the
 * writer thread, as strata_feed_json(). */
int strata_remove_where(struct strata *db, const struct strata_visit *v, long *removed,
                        struct strata_error *err);

/* Free a string returned by this library. */
void strata_free(char *s);

/* Counters of an open application since strata_open(), summed over every
 * thread; for monitoring and benchmarks.  Each is read on its own, so
 * figures taken while queries run may be a query apart. */
struct strata_stats {
	unsigned long long queries;     /* strata_query_json calls that succeeded */
	unsigned long long rank_allocs; /* heap allocations made by ranking: the expression
	                                   VM, its query state and the model runtime, in
	                                   every strata_query_json call (not the request,
	                                   the match or the result JSON) */
	unsigned long long pool_hits;   /* model run contexts taken back from the pools */
	unsigned long long pool_misses; /* model run contexts made anew */
	unsigned long long degraded;    /* of the queries, those stopped by their soft timeout
	                                   (answered with a degraded coverage) */
	unsigned long long split_first_phases; /* first phases (of one document type in
	                                          a search) split over search threads */
	unsigned long long split_parts;        /* the threads that scored them (the
	                                          searching thread and the workers that
	                                          joined it in time) */
	unsigned long long split_second_phases; /* second phases whose candidates were
	                                           split over search threads */
	unsigned long long split_second_parts;  /* the threads that scored those */
	unsigned long long split_global_phases; /* global phases whose candidates were
	                                           split over search threads */
	unsigned long long split_global_parts;  /* the threads that took part in them
	                                           (counted per pass: the normalizers'
	                                           arguments, then the expression) */
};
void strata_stats(struct strata *db, struct strata_stats *st);

/* ---- models ---------------------------------------------------------------------
 * One ONNX model on its own, outside any application: its declared inputs
 * and outputs, runs on the caller's tensors, compiled contexts.
 *
 *     struct strata_model *m;
 *     struct strata_error err;
 *     if (strata_model_open("ranker.onnx", &m, &err) != 0)
 *         die(err.msg);                   // "ranker.onnx: No such file or directory"
 *     float q[16] = {...}, d[16] = {...};
 *     struct strata_tensor in[2] = {
 *         { "float", 2, {1, 16}, q },     // in the order of strata_model_input()
 *         { NULL, 2, {1, 16}, d },        // NULL: the type the model declares
 *     };
 *     struct strata_tensor out[1];
 *     if (strata_model_run(m, in, out, &err) == 0)
 *         printf("%g\n", ((float *)out[0].data)[0]);
 *     strata_model_close(m);
 *
 * A model file is an .onnx model or a compiled context (MODEL_ctx.onnx,
 * from strata_model_compile() or strata_deploy()), which loads without
 * compiling again; one compiled by another release or for another CPU
 * feature set is refused with STRATA_INVALID_GRAPH saying why.
 *
 * Threads: a struct strata_model holds the buffers of its runs and is used
 * by one thread at a time; threads that run the same model open one each
 * (from a compiled context that is quick).  Inputs are read in place,
 * never copied nor changed. */

struct strata_model; /* an open model and the state of its runs */

#define STRATA_MAX_RANK 8 /* the most dimensions of a tensor */

/* A tensor view: a small value carrier, owning nothing.  dtype names the
 * element type as ONNX does: "float", "double", "float16", "bfloat16",
 * "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64",
 * "uint64", "bool" (one byte, 0 or 1), "string" (cells are char *,
 * NUL-terminated).  Cells are dense, row-major; a scalar has rank 0 and
 * one cell. */
struct strata_tensor {
	const char *dtype;
	int rank;
	int64_t dims[STRATA_MAX_RANK];
	void *data;
};

/* A declared input or output of a model.  The strings live as long as the
 * model is open. */
struct strata_value_info {
	const char *name;
	const char *kind;    /* "tensor", "sequence", "optional tensor" or "optional sequence"
	                        (strata_model_run() takes tensors only); dtype and shape are
	                        those of the element */
	const char *dtype;   /* the element type, as in struct strata_tensor */
	int rank;            /* -1 when the model declares no shape */
	int64_t dims[STRATA_MAX_RANK];          /* -1 where symbolic or unknown */
	const char *dim_names[STRATA_MAX_RANK]; /* a symbolic dimension's name ("batch"), else "" */
};

/* Open the model at path (an .onnx model or a compiled context); its
 * external data files are looked up beside it and memory-mapped.  Returns
 * 0, an errno (the file cannot be read; the message names it),
 * STRATA_INVALID_PROTOBUF (not an ONNX model), STRATA_INVALID_GRAPH (a
 * graph that cannot run, or a context that cannot be used here),
 * STRATA_NOT_IMPLEMENTED (an operator without a kernel: the message names
 * it, its domain and opset), STRATA_NOMEM.  On success *out is a new
 * handle for strata_model_close(). */
int strata_model_open(const char *path, struct strata_model **out, struct strata_error *err);

/* Close the model and free what it holds; its outputs are invalid from
 * here.  NULL is ignored. */
void strata_model_close(struct strata_model *m);

/* The number of inputs (initializers excluded) and of outputs. */
int strata_model_ninputs(const struct strata_model *m);
int strata_model_noutputs(const struct strata_model *m);

/* Describe input (output) i, in declaration order, into *info.  Returns 0
 * or STRATA_NOT_FOUND (i out of range; *info is left alone). */
int strata_model_input(const struct strata_model *m, int i, struct strata_value_info *info);
int strata_model_output(const struct strata_model *m, int i, struct strata_value_info *info);

/* The index of the input (output) called name, or -1 when there is none. */
int strata_model_input_index(const struct strata_model *m, const char *name);
int strata_model_output_index(const struct strata_model *m, const char *name);

/* Run the model once.  in[] has one tensor per input, in input order, each
 * of the declared element type (dtype NULL: that type), rank and fixed
 * dimensions, and one symbolic name takes one size throughout.  out[]
 * (strata_model_noutputs() of them) receives a view of each output, valid
 * until the next run, strata_model_profile() or strata_model_close().
 * Returns 0, STRATA_INVALID_ARGUMENT (an input does not fit, or has an
 * unknown element type or more than STRATA_MAX_RANK dimensions: the
 * message names the input, what it expects and what it was given; or the
 * model has an input or output that is not a tensor), STRATA_RUNTIME (an
 * operator failed: the message names the node), STRATA_NOMEM.  Once a run
 * of some shape has been made, the next ones of that shape allocate
 * nothing. */
int strata_model_run(struct strata_model *m, const struct strata_tensor *in,
                     struct strata_tensor *out, struct strata_error *err);

/* Profiling: where the runs spend their time, per operator type.  on != 0
 * starts an empty table (replacing the one before), and every later run
 * adds each node's own time and one call to the row of its operator type;
 * on = 0 stops and drops it.  It costs two clock reads per node.  Returns
 * 0 or STRATA_NOMEM. */
int strata_model_profile(struct strata_model *m, int on, struct strata_error *err);

/* One row of the profile. */
struct strata_op_time {
	const char *op;           /* the operator type ("MatMul"; "(other)" past the
	                             table's rows), valid while the model is open */
	double seconds;           /* the nodes' own time, summed over the runs */
	unsigned long long calls; /* node runs */
};

/* Copy the rows of the profile, in the order their types were first
 * counted, into rows[0 .. cap) and return how many there are (which may
 * be more than cap: then only cap were copied; 0 when profiling is off).
 * At most 65 rows. */
int strata_model_profile_rows(const struct strata_model *m, struct strata_op_time *rows, int cap);

/* How strata_model_compile() writes a context.  All zero: the context model
 * MODEL_ctx.onnx beside the source, its binary MODEL_strata.bin beside
 * that. */
struct strata_compile_options {
	const char *context; /* the context model to write; NULL: strata_context_path(NULL, src) */
	const char *prefix;  /* prefix of the compiled graph's name; NULL: none */
	int embed;           /* 1: the binary inside the context model, no .bin file */
	/* Several models into one binary, where weights they share are stored
	 * once: 1 for each model of the group but the last, compiled in turn
	 * in one thread, and 2 for the last, which writes the binary, named
	 * after the group's first model, beside its context model (the
	 * contexts of a group go into one folder).  0: a binary of its own. */
	int share;
};

/* Load the model at src and write its compiled context as opts says (NULL:
 * all zero).  The files are written through temporary files and renamed,
 * so a failure leaves none of its own.  Returns 0, strata_model_open()'s
 * codes (a context given as src is refused with STRATA_INVALID_ARGUMENT:
 * it is compiled already), STRATA_INVALID_ARGUMENT (embed with share), or
 * an errno from writing; the message names src. */
int strata_model_compile(const char *src, const struct strata_compile_options *opts,
                         struct strata_error *err);

/* The context model path for the model src ("x/NAME.onnx"):
 * "DIR/NAME_ctx.onnx", or beside src when dir is NULL.  A new string freed
 * with strata_free(); NULL when memory runs out. */
char *strata_context_path(const char *dir, const char *src);

/* The binary strata_model_compile() writes for the context model at context
 * when it is named after the model src: "NAME_strata.bin" beside the
 * context (with share, src is the group's first model).  A new string
 * freed with strata_free(); NULL when memory runs out. */
char *strata_context_binary(const char *context, const char *src);

/* Bytes per cell of element type dtype (a struct strata_tensor name); 0 for
 * "string" and for a name that is not an element type. */
size_t strata_dtype_size(const char *dtype);

/* Cell i of t (i below its cell count, not checked) as a double, into *v;
 * float16 and bfloat16 widened, bool as 0 or 1, 64-bit integers rounded to
 * the nearest double.  Returns 0, or STRATA_INVALID_ARGUMENT when t's dtype
 * is not numeric or bool. */
int strata_tensor_get(const struct strata_tensor *t, size_t i, double *v);

/* Store v as cell i of t (i below its cell count, not checked), converted
 * to t's dtype as a C cast does (float16 and bfloat16 rounded to nearest,
 * bool: v != 0).  Returns 0, or STRATA_INVALID_ARGUMENT when t's dtype is
 * not numeric or bool. */
int strata_tensor_set(struct strata_tensor *t, size_t i, double v);

/* ---- stateless model evaluation -------------------------------------------------
 * Vespa's stateless model evaluation over the ONNX models of the application's
 * models/ folder (what `strata serve` answers at /model-evaluation/v1/):
 *
 *     struct strata_modeleval *me;
 *     if (strata_modeleval_open(db, &me, &err) == 0) {
 *         char *t;
 *         if (strata_modeleval_run(me, "add_mul", "output1",
 *                                  "{\"input1\": \"[2]\", \"input2\": \"[3]\"}",
 *                                  NULL, &t, &err) == 0) {
 *             puts(t);          // {"type":"tensor<float>(d0[1])","values":[6.0]}
 *             strata_free(t);
 *         }
 *         strata_modeleval_close(me);
 *     }
 *
 * Every .onnx file under models/ (sub-folders too) is a model, named as Vespa
 * names it: its path under models/ without the extension, '/' and '.' made '_'
 * ("models/a/b.v2.onnx": "a_b_v2").  Its functions are its outputs and their
 * arguments its inputs, both named as identifiers (characters other than
 * letters, digits, '_', '$', '@' made '_') and typed as Vespa types them:
 * float16 cells as float, int8 and bfloat16 as themselves, the other integer
 * types and bool as double; dimensions d0, d1, ..., a symbolic one unbound
 * ("tensor<float>(d0[],d1[3])").  A model is loaded on its first use, from its
 * compiled context while that is fresh (strata_deploy), else from the source.
 *
 * Names: a model or function is found by its name, or by the name in other
 * case (Vespa matches lower-cased paths); a function by Vespa's rules: NULL
 * when the model has one, else the name, or the only function whose name
 * begins "NAME." or ends ".NAME".  Messages are Vespa's: "No model named 'x'.
 * Available models: a, b", "No function 'f' in model 'm'. Available
 * functions: ...", "More than one function is available in model 'm', but no
 * name is given. ...", "'x' is not a valid argument in function ...",
 * "Argument 'a' must be bound to a value of type T[: why]".
 *
 * Threads: any thread may call any of these at once, but close; runs of one
 * model wait for each other (one run context per model).  The handle reads
 * the application's folder when it opens; it does not use db afterwards. */
struct strata_modeleval;

/* Open model evaluation over db's application: read services.xml and list
 * models/.  With a services.xml, a <container> of it must hold
 * <model-evaluation/>, else STRATA_NOT_FOUND ("model evaluation is not
 * enabled: ..."); without one it is on.  Inside <model-evaluation>, <onnx>
 * <models><model name="M"> with intraop-threads, interop-threads,
 * execution-mode and gpu-device is taken and changes nothing (a model runs on
 * the calling thread); anything else is refused (STRATA_NOT_IMPLEMENTED,
 * services.xml:line:col).  Also STRATA_PARSE (malformed XML),
 * STRATA_INVALID_ARGUMENT (a <model name> that models/ lacks, a file name
 * that is not a valid model name, two files of one name), STRATA_LIMIT,
 * STRATA_NOMEM, an errno.  On success *out is a new handle for
 * strata_modeleval_close(). */
int strata_modeleval_open(struct strata *db, struct strata_modeleval **out,
                          struct strata_error *err);
/* Free the handle and the models it loaded.  NULL is ignored. */
void strata_modeleval_close(struct strata_modeleval *me);

/* The models as Vespa's API root lists them: {"NAME": "BASE" "NAME", ...} in
 * name order; base (NULL: "") is the API's URL, "/model-evaluation/v1/".
 * *out is a new string (strata_free).  Returns 0 or STRATA_NOMEM. */
int strata_modeleval_list(struct strata_modeleval *me, const char *base, char **out,
                          struct strata_error *err);

/* A model's functions, {"model": M, "functions": [F, ...]}, or (function not
 * NULL) one of them, {"model": M, "function": ..., "info", "eval",
 * "arguments"}; each F is {"function": NAME, "info": URL, "eval": URL,
 * "arguments": [{"name", "type"}]} with the arguments in name order, the URLs
 * under base (NULL: no "info" nor "eval").  *out is a new string
 * (strata_free).  Returns 0, STRATA_NOT_FOUND (no such model or function),
 * the model's load error (its message names the file), or STRATA_NOMEM. */
int strata_modeleval_describe(struct strata_modeleval *me, const char *model,
                              const char *function, const char *base, char **out,
                              struct strata_error *err);

/* Evaluate a function of a model.  args is a JSON object text (NULL: {}):
 * argument name -> a string holding a Vespa tensor literal ("[2, 3]",
 * "tensor<float>(d0[2]):[2,3]", "{{d0:0}:2, {d0:1}:3}", "2.5" for a tensor()),
 * or a tensor in Vespa's JSON forms (nested arrays, {"values": ...},
 * {"cells": [...]}, a number).  An unbound dimension takes its size from the
 * value; a literal's leading type must have the argument's dimensions (cell
 * types convert).  Cells are converted to the element type the model declares
 * as a C cast does.  "missing-value" (a value as above) binds every argument
 * not given, when it fits.  format is Vespa's format.tensors (NULL: "short"):
 *   short        {"type": T, "values": nested arrays}
 *   long         {"type": T, "cells": [{"address": {"d0": "0"}, "value": v}]}
 *   short-value  the nested arrays alone;  long-value: the cells array alone
 *   string       "T:[[1.0, 2.0], [3.0, 4.0]]";  string-long: "T:{{d0:0,d1:0}:1.0, ...}"
 * with T the output's type and its sizes; a rank 0 output is [v], or "T:{v}".
 * *out is a new string (strata_free).  Returns 0, STRATA_NOT_FOUND (no such
 * model, function or argument), STRATA_INVALID_ARGUMENT (an unknown format, a
 * value that does not fit its argument, one given twice or missing),
 * STRATA_PARSE (args is not JSON), STRATA_RUNTIME (the model failed),
 * the model's load error, or STRATA_NOMEM. */
int strata_modeleval_run(struct strata_modeleval *me, const char *model, const char *function,
                         const char *args, const char *format, char **out,
                         struct strata_error *err);

/* ---- JSON as the library writes it ---------------------------------------------
 * For programs that use jansson (struct json_t is jansson's json_t;
 * strata.h does not include jansson.h) and print JSON beside the
 * library's results: the same printer, so that their numbers read alike.
 * It differs from json_dumps() in the reals: each is written in the
 * shortest form that reads back as the same double ("0.1", where
 * json_dumps() writes 0.10000000000000001), with ".0" on integral ones,
 * and null for infinities and NaN. */
struct json_t;

/* strata_json_dump() flags. */
#define STRATA_JSON_PRETTY 1 /* two-space indent; arrays of numbers on one line */

/* j as JSON text: compact (no spaces) or as flags say, object members in
 * the order they were added.  A new string freed with strata_free(); NULL
 * when memory runs out. */
char *strata_json_dump(const struct json_t *j, int flags);

/* A new JSON number for a cell value v of element type dtype, as the
 * library writes tensor cells: an integer for int8, uint8, int16, int32
 * and int64; for float, float16 and bfloat16 the real of the shortest
 * decimal that reads back as the same float ("0.1" rather than
 * 0.10000000149011612); for the others a real; null when v is not
 * finite (and a real type).  NULL when memory runs out. */
struct json_t *strata_json_number(const char *dtype, double v);

/* ---- requests -------------------------------------------------------------------- */

/* Search request req (a JSON object) with every parameter by its full
 * name, as Vespa's query API defines them: aliases ("hits" for count,
 * "summary", "tracelevel", "type", ...; case-insensitive) and nested
 * objects ({"ranking": {"profile": "p"}}) resolved to flat keys
 * ("ranking.profile"); other keys (the application's own parameters, for
 * userInput(@name)) kept as they are.  A new object in *out.  Returns 0,
 * STRATA_NOT_IMPLEMENTED naming a parameter of Vespa's that Strata does not
 * honour (and what to do instead), or STRATA_INVALID_ARGUMENT for one given
 * twice or of a wrong form.  strata_query_json() does this itself; a server
 * calls it to read "timeout" and "trace.level" as the library will. */
int strata_request_flatten(const struct json_t *req, struct json_t **out,
                           struct strata_error *err);

/* A timeout as Vespa's query API writes one: a number of seconds, with an
 * optional unit after it, "ms", "s" or "m", spaces between allowed ("500ms",
 * "2 s", "1.5"); at least 0.  Into *seconds.  Returns 0, or
 * STRATA_INVALID_ARGUMENT (*seconds left alone) for anything else. */
int strata_timeout_parse(const char *text, double *seconds);

/* ---- the build ------------------------------------------------------------------- */

/* The kernels this process runs, e.g. "avx512, int8: avx512-vnni,
 * bf16_weights: float": the instruction set of the float kernels ("avx512"
 * or "avx2"), that of the int8 GEMM ("avx512-vnni", "avx-vnni" or "avx2"),
 * and what session.bf16_weights multiplies with ("avx512-bf16" where that
 * is faster than float, else "float": the option keeps float weights
 * there).  Chosen once from
 * the CPU's features; STRATA_CPU=avx2 in the environment holds both to
 * AVX2 (what an AVX2-only machine runs).  A static string; any thread. */
const char *strata_kernels(void);

#ifdef __cplusplus
}
#endif
#endif
