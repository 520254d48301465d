/*
 * engine_int.h: what the files of engine/ share.  No other subsystem includes
 * it.
 *
 * Data flow inside engine/:
 *   db.c           strata_open/close: the rank application, the store, one
 *                  struct eng_doctype per schema; document id parsing;
 *                  strata_stats
 *   contexts.c     the models' compiled contexts in DATA/contexts (deploy
 *                  writes them, every open loads them while they are fresh)
 *   tensor_json.c  dense tensors between JSON and cells (feed, query inputs,
 *                  summaries, match features)
 *   tensor_sparse_json.c  tensors with mapped dimensions from JSON into
 *                  blocks (query inputs); the stored JSON text of document
 *                  fields of such types, and their values for ranking
 *   feed.c         Vespa document operations -> store transactions; get, remove
 *   feed_ahead.c   a large feed's operations parsed on a second thread
 *   visit.c        visiting: the documents of a type in pages, with a continuation
 *   selection.c    Vespa's document selection language: text -> struct eng_sel
 *   selection_eval.c  a selection evaluated on a stored document; test-and-set
 *                  conditions of feed operations
 *   yql.c          YQL text -> struct yql_query (a condition tree);
 *   yql_tree.c     walking, testing and dumping such trees
 *   grouping.c     order by and grouping over the matches (grouping.h;
 *                  grouping_expr.c: the grouping language and its expressions)
 *   query.c        a search request: match, phases, hit order, the result;
 *   firstphase.c   its first phase, in blocks, split over the search threads
 *                  when the profile allows (searchpool.c: the threads)
 *   summary.c      its hits' summaries (query_int.h: the request's state,
 *                  which only these, select_elements.c and collapse.c share)
 *   collapse.c     collapsefield: hits whose value better hits showed, left out
 *   select_elements.c  select-elements-by: the array elements a summary-feature's
 *                  mapped labels index
 *   textmatch.c    contains on text indexes, the text and query-term features
 *   attrmatch.c    attributeMatch(f) over the query's terms on attributes
 *   labels.c       arrays and weighted sets as tensors (tensorFromLabels,
 *                  tensorFromWeightedSet)
 *   fieldmatch.c   fieldMatch(f): Vespa's string segment match metrics
 *   result.c       JSON output: the result tree, documents, a JSON printer
 *                  that writes numbers in their shortest exact form
 *   json_alloc.c   jansson's allocations through base_alloc
 *   json_read.c    JSON text into jansson values, as jansson's parser reads it
 *   values.c       collection and struct values (arrays, weighted sets, maps,
 *                  structs): checked JSON text for the store, updates, contains
 *   snippet.c      summary fields made from the query: dynamic snippets,
 *                  highlighting, matched elements
 *   embed.c        the application's embedders (services.xml components):
 *                  text -> tensor for 'embed' in indexing and query inputs
 *   fieldtypes.c   byte, raw, reference and predicate values; imported fields
 *   predicate.c    predicate fields: their text, checked, and matched by YQL
 *                  predicate()
 *   position.c     position fields: their forms, geoLocation, distance features
 *   services.c     services.xml (expat): the embedder components, settings
 *   tokenizer.c    WordPiece and Unigram tokenizers (tokenizer.json, vocab.txt)
 *   query_embed.c  embed(...) as the value of a query input
 *   indexing.c     the fields' indexing scripts, run on each put and update;
 *   indexing_fn.c  its functions: conversions, strings, chunkers, pack_bits
 *   deadline.c     a search's timeout and soft timeout, checked as it runs
 *   api.c          strata.h beside the documents: deploy, single models and
 *                  their contexts, element types, JSON printing, timeouts
 *
 * The programs, not the library: cli/ (the strata command) and serve/
 * (strata serve, the HTTP server), on strata.h and their cli/tool.h alone.
 */
#ifndef ENGINE_INT_H
#define ENGINE_INT_H

#include <jansson.h>
#include <regex.h>
#include <stdatomic.h>

#include "../include/strata.h"
#include "../base/base.h"
#include "../rank/rank.h"
#include "../store/store.h"

/* One document type: its schema and its store layout.  Field i of the store
 * layout is field i of the schema. */
struct eng_doctype {
	const struct rank_schema *schema;
	const char *name;           /* borrowed from the schema */
	int store_id;               /* handle from store_doctype_add */
	int nfields;
	struct store_field *fields; /* nfields, names borrowed from the schema */
};

/* Operations per strata_feed_file transaction by default (strata.h's
 * feed_batch). */
#define ENG_FEED_BATCH 50000

struct strata {
	struct rank_app *app;
	struct store_env *env;
	char *appdir;
	char *datadir;
	int read_only;
	long feed_batch;          /* operations per strata_feed_file transaction */
	int ndoctypes;
	struct eng_doctype *doctypes;
	int ncontexts;              /* deploy: the models compiled into DATA/contexts */
	struct eng_embedders *embedders; /* embed.c; NULL when the application has none */
	struct eng_qprofiles *qprofiles; /* queryprofile.c; NULL when the application has none */
	struct eng_pool *pool;      /* search threads (searchpool.c); NULL: none */
	/* strata_stats(): the only fields that change after open (atomics) */
	atomic_ullong n_queries;
	atomic_ullong n_rank_allocs;
	atomic_ullong n_degraded; /* queries answered with what they had at a soft timeout */
	atomic_ullong n_split, n_split_parts; /* first phases split over threads, parts */
	atomic_ullong n_split2, n_split2_parts; /* second phases split over threads, parts */
	atomic_ullong n_split_global, n_split_global_parts; /* global phases, parts */
};

/* ---- searchpool.c: worker threads for a search's first phase ---------------- */

struct eng_pool;
/* A thread's share of a run: slot i (0 for the caller) takes work from a
 * queue in ud until it is empty. */
typedef void eng_part_fn(void *ud, int slot);
/* A pool of nworkers threads (>= 1), sleeping until a run.  Returns 0,
 * STRATA_NOMEM or an errno (a thread would not start). */
int eng_pool_new(int nworkers, struct eng_pool **out, struct strata_error *err);
/* Stop and join the threads; NULL is ignored.  No run may be going on. */
void eng_pool_free(struct eng_pool *p);
/* The threads a run may use: the workers and the caller (1 for NULL). */
int eng_pool_size(const struct eng_pool *p);
/* fn(ud, 0) on the calling thread, and fn(ud, i) for i in 1 .. nslots - 1
 * (nslots at most eng_pool_size) on each worker that wakes before that
 * call returns; returns once every call has, with the number of calls
 * made (1 when another run holds the pool, or p is NULL: the caller alone).
 * fn must leave no work behind when the caller's call returns.  Any
 * thread. */
int eng_pool_run(struct eng_pool *p, int nslots, eng_part_fn *fn, void *ud);

/* ---- db.c ------------------------------------------------------------------ */

/* strata_open() (deploy = ENG_OPEN_ANY); with ENG_OPEN_DEPLOY it also
 * compiles every model of the application into DATA/contexts/, one shared
 * binary for all of them, and records them in DATA/contexts/manifest.json
 * (what `strata deploy` does); with ENG_OPEN_DEPLOYED the application must
 * have been deployed before (its store exists in DATA), else
 * STRATA_NOT_FOUND "... is not deployed", and nothing is created (the CLI's
 * query, feed, get and remove).  Every open loads a model from its context
 * while the manifest says that the source and the context are still the
 * files deploy saw, and compiles the source otherwise, saying why through
 * opts->log. */
enum { ENG_OPEN_ANY = 0, ENG_OPEN_DEPLOY = 1, ENG_OPEN_DEPLOYED = 2 };
int eng_open(const char *app, const struct strata_options *opts, int deploy, struct strata **out,
             struct strata_error *err);

/* ---- contexts.c: the models of an application and their compiled contexts ---- */

struct eng_model_src {
	char *file;                /* as the schema names it, relative to the application */
	char *path;                /* joined to the application folder */
};

struct rt_options;

/* What eng_model_for() works with while an application opens. */
struct eng_models {
	char *dir;                 /* DATA/contexts */
	int deploy;                /* 1: load the sources, remember them for eng_models_compile() */
	struct rt_options *opts;   /* the session options of every load */
	json_t *manifest;          /* NULL when there is none */
	strata_log_fn *log;        /* where notices go (NULL: nowhere), with log_ud */
	void *log_ud;
	size_t n, cap;
	struct eng_model_src *src;     /* deploy: the models loaded, in order */
};

/* Set ms up for opening an application whose data folder is datadir
 * (contexts in datadir/contexts); deploy: 1 when `strata deploy` opens it;
 * generations: the models' session.buffer_pool_generations (0 to 1024);
 * log, log_ud: where notices go (strata_options.log; NULL: nowhere).
 * Returns 0, STRATA_INVALID_ARGUMENT (generations) or STRATA_NOMEM. */
int eng_models_init(struct eng_models *ms, const char *datadir, int deploy, int generations,
                    strata_log_fn *log, void *log_ud, struct strata_error *err);
void eng_models_release(struct eng_models *ms);
/* The rank loader's callback (struct rank_loader): the model the schema
 * names file (path: joined to the application folder), from its context
 * while that is fresh, else compiled from the source (one notice through
 * ms->log when a context exists but cannot be used). */
int eng_model_for(void *ud, const char *file, const char *path, struct rt_model **out,
                  struct strata_error *err);
/* Deploy: compile every model eng_model_for loaded into ms->dir (one shared
 * binary) and write the manifest last. */
int eng_models_compile(struct eng_models *ms, struct strata_error *err);

/* How to compile a model into a context (the ep.* session options of
 * runtime.h). */
struct eng_compile {
	const char *context; /* the context model to write; NULL: beside the source */
	const char *prefix;  /* of its EPContext node and graph names; NULL: none */
	int embed;           /* 1: the binary inside the context model */
	int share;           /* 1: into the shared binary; 2: the last such model, which writes it */
};

/* Load the model at src and write its context as c says.  *context is the
 * path of the context model written (base_strfree).  Returns 0 or the
 * runtime's error, whose message names src. */
int eng_compile_model(const char *src, const struct eng_compile *c, char **context,
                      struct strata_error *err);
/* "DIR/NAME_ctx.onnx" for the model src ("x/NAME.onnx"); dir NULL: beside
 * src.  base_strfree; NULL when out of memory. */
char *eng_context_path(const char *dir, const char *src);
/* The binary the runtime writes for the context model at context when it
 * is named after the model src: "NAME_strata.bin" beside the context.  With
 * sharing, src is the first model of the group. */
char *eng_context_binary(const char *context, const char *src);

/* Parse a document id "id:NS:DOCTYPE:[n=N|g=G]:KEY" and find its doctype.
 * Returns 0 and *dt, or STRATA_INVALID_ARGUMENT (malformed, unknown doctype). */
int eng_docid_parse(struct strata *db, const char *id, struct eng_doctype **dt,
                    struct strata_error *err);
/* Check the form of document id id as eng_docid_parse does, and point
 * *type at its document type (len bytes, not NUL-terminated).  Returns 0 or
 * STRATA_INVALID_ARGUMENT. */
int eng_docid_type(const char *id, const char **type, size_t *len, struct strata_error *err);
struct eng_doctype *eng_doctype_find(struct strata *db, const char *name);

/* ---- services.c: the embedder components of services.xml ------------------------ */

enum eng_emb_kind {
	ENG_EMB_HF = 1,    /* hugging-face-embedder */
	ENG_EMB_BERT,      /* bert-embedder (vocab.txt) */
	ENG_EMB_COLBERT,   /* colbert-embedder */
	ENG_EMB_SPLADE,    /* splade-embedder */
	ENG_EMB_TOKENIZER, /* hugging-face-tokenizer: token ids */
	ENG_EMB_OTHER,     /* another embedder type: declared, never runs */
};
enum eng_pooling { ENG_POOL_MEAN = 1, ENG_POOL_CLS, ENG_POOL_NONE };

/* A model setting: <transformer-model path=".." url=".." model-id=".."/>. */
struct eng_model_ref {
	char *path, *url, *model_id; /* NULL when not given */
	int line, col;               /* of the element; 0 when there is none */
};

/* One embedder component with its settings, defaults filled in. */
struct eng_component {
	char *id, *type;
	int kind;                      /* enum eng_emb_kind */
	int line, col;                 /* of <component> in services.xml */
	struct eng_model_ref model;    /* transformer-model */
	struct eng_model_ref tokenizer; /* tokenizer-model, tokenizer-vocab or model */
	char *in_ids, *in_mask, *in_types, *output; /* in_types "": none */
	int pooling;                   /* enum eng_pooling */
	int normalize;
	char *prepend_query, *prepend_doc; /* NULL: none */
	long max_tokens, max_query_tokens, max_doc_tokens;
	int64_t start_tok, end_tok, mask_tok, pad_tok, q_tok, d_tok;
	double threshold;              /* splade: terms scoring above it are kept */
	int add_special;               /* hugging-face-tokenizer: [CLS] ... [SEP] */
};

struct eng_services {
	char *path;                    /* services.xml as messages name it */
	int n;
	size_t cap;
	struct eng_component *c;
};

/* Read the embedder components of the services.xml at path into s (none
 * when there is no such file).  Other components and elements are not
 * embedders and are left alone.  Returns 0, STRATA_PARSE (malformed XML,
 * a bad value), STRATA_NOT_IMPLEMENTED (a setting this version lacks),
 * STRATA_INVALID_ARGUMENT (a component without an id, an id declared
 * twice), STRATA_NOMEM, or an errno; messages begin "path:line:col:" and
 * name the element.  eng_services_free(s) in every case. */
int eng_services_read(const char *path, struct eng_services *s, struct strata_error *err);
void eng_services_free(struct eng_services *s);
/* A new expat parser (XML_Parser) that allocates with the library's
 * allocator, as every XML file of an application is read; NULL when memory
 * runs out.  XML_ParserFree() frees it. */
struct XML_ParserStruct *eng_xml_parser(void);

/* Tell log (NULL: nobody), one STRATA_LOG_WARNING each, of the Java
 * components of appdir/services.xml: <searcher>, <document-processor>,
 * <handler>, <processor>, <renderer>, <server>, <client>, <filter>,
 * <provider>, and a <component> that is no embedder ("path:line:col:
 * searcher 'ID' ... cannot run ...").  Returns 0 (no file too),
 * STRATA_PARSE (malformed XML), STRATA_NOMEM, or an errno. */
int eng_services_java(const char *appdir, strata_log_fn *log, void *ud, struct strata_error *err);

/* ---- queryprofile.c: query profiles and their types --------------------------- */

/* Read APP/search/query-profiles/ *.xml and types/ *.xml into db->qprofiles
 * (NULL when there are none) and give loader the query inputs the types
 * declare.  Returns 0, STRATA_PARSE, STRATA_NOT_FOUND (an unknown parent or
 * type), STRATA_NOT_IMPLEMENTED (what is not honoured: variants, strict),
 * STRATA_INVALID_ARGUMENT (a value of the wrong type), STRATA_NOMEM, or an
 * errno; messages begin "file:line:col:".  Freed by eng_qprofiles_free. */
int eng_qprofiles_load(struct strata *db, struct rank_loader *loader, struct strata_error *err);
void eng_qprofiles_free(struct eng_qprofiles *q);
/* Add the fields of the request's query profile (its "queryProfile", else
 * "default" when there is one) to req where req does not set them (or
 * where the profile says overridable="false").  Returns 0, STRATA_NOT_FOUND
 * (an unknown queryProfile), STRATA_INVALID_ARGUMENT (a value of the wrong
 * type, a mandatory field missing), STRATA_NOMEM. */
int eng_qprofiles_apply(const struct eng_qprofiles *q, json_t *req, struct strata_error *err);

/* ---- tokenizer.c: WordPiece and Unigram tokenizers ------------------------------ */

struct eng_tokenizer;
/* Load a HuggingFace tokenizer.json with a WordPiece or a Unigram
 * (SentencePiece) model, or (vocab_txt = 1) a BERT vocab.txt, one token a
 * line (lowercasing, accents removed).  Returns 0, STRATA_NOT_IMPLEMENTED
 * (another model type or a normalizer or pre-tokenizer this version lacks,
 * naming it), STRATA_PARSE, STRATA_NOT_FOUND, STRATA_NOMEM; messages name
 * the file. */
int eng_tokenizer_load(const char *path, int vocab_txt, struct eng_tokenizer **out,
                       struct strata_error *err);
void eng_tokenizer_free(struct eng_tokenizer *w);
/* The token ids of the len bytes of text, without special tokens around
 * it.  Added tokens written in the text ("[SEP]", "<s>": the file's special
 * ones and those it does not normalize) are their ids, as written; the
 * parts between them go through the model.  WordPiece: the BERT normalizer (clean-up, CJK characters apart, accents
 * stripped, lowercase as the file says), split at spaces and punctuation,
 * then longest pieces first, "##" pieces inside a word, [UNK] for a word
 * that cannot be pieced.  Unigram: the precompiled character map and the
 * other normalizers, spaces to the metaspace, then per word the pieces of
 * the highest total score (Viterbi), unknown characters one fused unk.  At
 * most max ids go into ids; *n is how many there are, counted until there
 * are more than max (then the text goes unread from there on: it is cut).
 * Returns 0 or STRATA_NOMEM (Unigram's work buffers). */
int eng_tokenizer_encode(const struct eng_tokenizer *w, const char *text, size_t len,
                         int64_t *ids, size_t max, size_t *n, struct strata_error *err);
/* The token of id, or NULL. */
const char *eng_tokenizer_token(const struct eng_tokenizer *w, int64_t id);
/* 1 when id is a special token ([CLS], [PAD], added special tokens). */
int eng_tokenizer_special(const struct eng_tokenizer *w, int64_t id);
/* The ids the file's post-processor puts around a text: *ncls ids before
 * (cls) and *nsep after (sep), at most 4 each; tokenizer.json without a
 * post-processor: none; vocab.txt: [CLS] and [SEP]. */
void eng_tokenizer_specials(const struct eng_tokenizer *w, int64_t cls[4], int *ncls,
                            int64_t sep[4], int *nsep);
/* The file's truncation max_length (LongestFirst), or -1 when it sets none. */
long eng_tokenizer_max_length(const struct eng_tokenizer *w);

/* ---- embed.c: embedders ------------------------------------------------------- */

struct eng_embedders;
struct eng_ttype;
/* Read the embedder components of db->appdir's services.xml (none when
 * there is no such file) into db->embedders, their models through
 * eng_model_for(ms) (compiled contexts, deploy).  An embedder whose model
 * is a URL or a model-id, or a file that is missing, cannot run: it is
 * declared all the same, and one notice through ms->log says so.  Returns
 * 0 or an error naming services.xml:line:col and the component. */
int eng_embedders_load(struct strata *db, struct eng_models *ms, struct strata_error *err);
void eng_embedders_free(struct eng_embedders *e);
/* Embed the len bytes of text with the embedder id (NULL: the application's
 * only one) into a value of the field dest's tensor type, as feed JSON
 * (*out, a new reference: {"values": [...]} for a dense type, {"cells":
 * {...}} or {"blocks": {...}} for mapped and mixed ones).  for_query: 1 when
 * the text is a query (embedders may prefix queries and documents
 * differently).  Returns 0, STRATA_NOT_FOUND (no such embedder),
 * STRATA_NOT_IMPLEMENTED (it cannot run: a model Strata does not have), or
 * another error naming the embedder. */
int eng_embed(struct strata *db, const char *id, const char *text, size_t len, int for_query,
              const struct rank_field *dest, json_t **out, struct strata_error *err);
/* eng_embed into the tensor type t (mapped dimensions -1); what names the
 * destination in messages ("field 'emb'", "query input 'query(q)'"). */
int eng_embed_type(struct strata *db, const char *id, const char *text, size_t len,
                   int for_query, const struct eng_ttype *t, const char *what, json_t **out,
                   struct strata_error *err);
/* Whether the application declares the embedder id (NULL: exactly one
 * embedder).  Returns 0, or STRATA_NOT_FOUND naming id and the declared
 * ones.  For checks at deploy: a declared embedder that cannot run is
 * found. */
int eng_embedder_find(struct strata *db, const char *id, struct strata_error *err);

/* ---- query_embed.c: embed() in query inputs -------------------------------------- */

/* When *v, the request's value of query input in, is a string
 * "embed(ID, "text")", "embed(ID, @param)", "embed(@param)" or
 * "embed("text")", replace *v with its embedding (for_query = 1) into in's
 * type, computed once per query: *cache (a JSON object, NULL at first;
 * json_decref it when the query ends) keeps it by input name and type.  Other
 * values are left as they are.  Returns 0, STRATA_INVALID_ARGUMENT (a
 * malformed call, a missing @param), or eng_embed's errors. */
int eng_query_embed(struct strata *db, const json_t *req, const struct rank_input_info *in,
                    const json_t **v, json_t **cache, struct strata_error *err);

/* ---- indexing.c, indexing_fn.c: the fields' indexing scripts ---------------------- */

/* Run the indexing scripts of dt's fields (rank_field.indexing; those with
 * a source only copy it, feed.c does that) for the put or update (update =
 * 1) of document id inside w: vals[i] holds what the operation gives field
 * i.  outs[i] (nfields of them, NULL on entry) receives what the scripts'
 * sinks write into field i, a new reference, also on failure (the caller
 * releases them).  A put runs every script; an update those that read a
 * field vals sets, on the stored values of the others (read in a).
 * Returns 0, STRATA_INVALID_ARGUMENT (a function's bad input, an
 * embedder's failure: "field 'f': ..." with its message), STRATA_NOT_FOUND
 * or STRATA_NOT_IMPLEMENTED (from an embedder), STRATA_LIMIT,
 * STRATA_NOMEM, store read errors. */
int eng_indexing_run(struct strata *db, struct eng_doctype *dt, struct store_txn *w,
                     const char *id, int update, const struct store_value *vals, json_t **outs,
                     struct base_arena *a, struct strata_error *err);
/* Function n (RANK_IX_FUNC) on in (borrowed; NULL: none, which gives none
 * but for now): *out a new reference or NULL.  Returns 0,
 * STRATA_INVALID_ARGUMENT naming the function, STRATA_NOMEM. */
int eng_ix_func(const struct rank_ix *n, const json_t *in, json_t **out, struct strata_error *err);
/* chunker "fixed-length" (length characters, cut at the first character
 * after them that is not a letter or digit) or "sentence" on the string
 * in: *out an array of strings that join back into in. */
int eng_ix_chunk(const json_t *in, const char *chunker, long length, json_t **out,
                 struct strata_error *err);
/* pack_bits on the tensor value in ({"values": [...]} or {"blocks":
 * {...}}): cells 0 or 1 (lenient: any number, > 0 a 1), 8 to an int8 cell,
 * the first in the highest bit. */
int eng_ix_pack_bits(const json_t *in, int lenient, json_t **out, struct strata_error *err);

/* ---- feed_ahead.c: a feed's operations parsed on a second thread ---------------- */

/* Where the next operation's text lies (1), or the end (0); called on the
 * parser's thread only. */
typedef int eng_span_fn(void *ud, const char **text, size_t *len, long *line);
/* Text fields of one operation tokenized ahead, at most. */
#define ENG_FEED_PRE 8
/* An operation as the parser leaves it: its span, its value (NULL: oom,
 * or the reason in je), and pre[0..npre) the text of its fields tokenized
 * ahead (store_pretext; pre[npre..] are buffers kept for reuse). */
struct eng_feed_op {
	const char *text;
	size_t len;
	long line;
	json_t *op;
	int oom;
	json_error_t je;
	struct store_pretext *pre[ENG_FEED_PRE];
	int npre;
};
/* Called on the parser's thread with each operation that parsed. */
typedef void eng_prep_fn(void *ud, struct eng_feed_op *op);
struct eng_ahead;
/* Start a thread that parses the operations next(ud) gives, in order, and
 * calls prep(ud, op) (NULL: nothing) with each that parsed. */
int eng_ahead_start(struct eng_ahead **out, eng_span_fn *next, eng_prep_fn *prep, void *ud,
                    struct strata_error *err);
/* The next operation, waiting for it, or NULL once next() said the end
 * (ud is then the caller's again).  The operation is the ahead's: read it
 * until the next call (which gives it back), never keep or free its value. */
const struct eng_feed_op *eng_ahead_next(struct eng_ahead *a);
/* Stop the parser (at once if the end was not reached) and free every
 * value and the ring.  NULL: nothing. */
void eng_ahead_stop(struct eng_ahead *a);

/* ---- json_alloc.c: jansson's memory ------------------------------------------- */

/* Route jansson's allocations through base_alloc/base_free (once per
 * process; any thread may call it any number of times).  It runs by itself
 * when the program starts; strata_open() calls it too. */
void eng_json_init(void);
/* How many of jansson's allocations failed on this thread so far: a value
 * built with jansson is whole when the count did not move meanwhile. */
unsigned long eng_json_failures(void);
/* Blocks that carry their size (for libraries that free without one, like
 * jansson and expat): NULL when out of memory; realloc keeps the old block
 * on failure. */
void *eng_block_alloc(size_t n);
void *eng_block_realloc(void *p, size_t n);
void eng_block_free(void *p);

/* ---- json_read.c: JSON text ------------------------------------------------------ */

/* Parse the len bytes at text: what jansson's json_loadb(text, len, flags,
 * je) accepts (but a NUL byte, always refused), into the same value (flags: 0, the text an object or an
 * array, or JSON_DECODE_ANY).  Returns the value, or NULL with *oom = 1
 * when an allocation failed on the way, or NULL with *oom = 0 and the
 * reason, line and column in je when the text is not JSON.  Any thread. */
json_t *eng_json_parse(const char *text, size_t len, size_t flags, json_error_t *je, int *oom);
/* strtod in the C locale, whatever the program set.  Any thread. */
double eng_json_strtod(const char *text);

/* ---- numbers.c: numbers in document JSON, as Vespa reads them --------------------- */

#define ENG_NUM_NOT (-1)   /* not a number of the type asked */
#define ENG_NUM_RANGE (-2) /* an integer, out of the range asked */
/* An integer of lo..hi: a JSON integer, a real without a fraction, or a
 * string of decimal digits with an optional sign.  0, ENG_NUM_NOT or
 * ENG_NUM_RANGE. */
int eng_num_int(const json_t *j, int64_t lo, int64_t hi, int64_t *out);
/* A real: a JSON number or a string as Java's Double.parseDouble reads it
 * (tensor = 1: also "inf", "nan" in any case).  0 or ENG_NUM_NOT. */
int eng_num_real(const json_t *j, int tensor, double *out);
/* j as a message shows it: a string quoted (cut at 40 bytes), a number. */
const char *eng_num_show(const json_t *j, char *buf, size_t n);
/* The n cells of hex[0..len) (2, 4, 8 or 16 digits a cell: int8, bfloat16,
 * float, double bits, high digit first) for cells of type cell into out.
 * 0 or STRATA_INVALID_ARGUMENT (what names the value). */
int eng_hex_cells(const char *hex, size_t len, int cell, size_t n, double *out, const char *what,
                  struct strata_error *err);
/* 1 when j is a non-empty string of hex digits only. */
int eng_hex_string(const json_t *j);

/* ---- tensor_json.c ------------------------------------------------------------ */

/* A tensor type: cell type and named dimensions.  Dense but for
 * eng_sparse_from_json, where a mapped dimension (x{}) has size -1. */
struct eng_ttype {
	int cell;  /* BASE_DT_FLOAT, DOUBLE, INT8, BFLOAT16, INT32, INT64 */
	int rank;
	const int64_t *dims;
	const char *const *dim_names; /* may be NULL (then "d0", "d1", ...) */
};

/* The cells of t (of one dense subspace when t has mapped dimensions). */
size_t eng_ttype_cells(const struct eng_ttype *t);
/* "tensor<float>(x[3],y[2])" ("tensor(x[3])" for double cells, "cat{}" for
 * a mapped dimension) into buf. */
const char *eng_ttype_str(const struct eng_ttype *t, char *buf, size_t n);

/* Fill cells (eng_ttype_cells(t) cells of t->cell) from JSON: nested arrays,
 * {"values": [...]}, {"cells": [{"address": {...}, "value": v}]}, a number for
 * rank 0, or (literal = 1) a string holding a Vespa tensor literal.  what
 * names the value in messages ("field 'emb'").  Returns 0 or
 * STRATA_INVALID_ARGUMENT. */
int eng_tensor_from_json(const json_t *j, const struct eng_ttype *t, int literal, void *cells,
                         const char *what, struct strata_error *err);

/* ---- tensor_sparse_json.c ----------------------------------------------------- */

/* The longest label of a mapped dimension, in bytes. */
#define ENG_LABEL_MAX 255

/* A tensor with mapped dimensions as blocks: block b has the labels
 * labels[b * nmapped ..] (the mapped dimensions in type order) and the sub
 * double cells cells[b * sub ..] of the indexed ones.  Labels are distinct
 * per block. */
struct eng_sparse {
	int nmapped;
	size_t sub;
	size_t nblocks, cap;
	char **labels;
	double *cells;
};

/* Fill s from JSON in Vespa's forms for mapped and mixed tensors (cells,
 * blocks, their short forms: tensor_sparse_json.c).  t has dims -1 for its
 * mapped dimensions, dim_names set; the cells are rounded to t->cell.
 * what names the value in messages.  Returns 0 (free s with eng_sparse_free), STRATA_INVALID_ARGUMENT (a bad
 * address, label or value; s is then empty) or STRATA_NOMEM. */
int eng_sparse_from_json(const json_t *j, const struct eng_ttype *t, struct eng_sparse *s,
                         const char *what, struct strata_error *err);
/* The same from a tensor literal (query inputs): "{{cat:a}:1, {cat:b}:2}",
 * the short forms "{a:1, b:2}" and "{a:[1,2], b:[3,4]}", labels bare or
 * quoted, with or without a leading "tensor<float>(cat{}):". */
int eng_sparse_from_literal(const char *text, const struct eng_ttype *t, struct eng_sparse *s,
                            const char *what, struct strata_error *err);
/* Free what s holds and zero it. */
void eng_sparse_free(struct eng_sparse *s);
/* 1 when rf is a tensor field with mapped dimensions (stored as JSON text). */
int eng_field_mapped(const struct rank_field *rf);
/* The graph settings of a tensor field (db.c): a nearest-neighbour graph in
 * the field's metric when the schema indexes a tensor attribute of one
 * indexed dimension, or of one mapped and some indexed (a multi-vector
 * field, whose vectors the store reads with eng_multivec_decode). */
void eng_hnsw_field(const struct rank_field *rf, struct store_field *sf);
/* store_field.vec_decode of a multi-vector field (rf: its struct
 * rank_field): the vectors of stored text s[0..n), block after block, in a. */
int eng_multivec_decode(const void *rf, const char *s, size_t n, struct base_arena *a,
                        const double **cells, size_t *nvec);

/* nearest.c: the document set of a nearestNeighbor item. */
struct eng_nn {
	struct store_txn *txn;
	int doctype, field;        /* store handles */
	int graph;                 /* the field has an HNSW graph */
	int approximate;           /* the item allows approximate search */
	uint32_t target_hits, explore;
	const double *tune;        /* RANK_NN_NSETTINGS values (eng_nn_tuning) */
	const double *query;       /* the query tensor's cells */
	size_t ncells;
	/* The filter (NULL: every document): 1 passes, 0 not, or an error code. */
	int (*filter)(void *ud, uint32_t lid);
	/* The exact distance in the field's metric; +inf: no value. */
	double (*distance)(void *ud, uint32_t lid);
	void *ud;
};
/* *set (n local ids, sorted; freed with base_free(*set, n * 4)) gets the
 * targetHits nearest documents that pass the filter, exactly or from the
 * graph (see nearest.c for when).  Returns 0, STRATA_NOMEM, or the store's
 * and the filter's errors. */
int eng_nn_set(const struct eng_nn *r, uint32_t **set, size_t *n, struct strata_error *err);
/* The tuning of profile prof's nearestNeighbor searches into
 * tune[RANK_NN_NSETTINGS]: the profile's settings, overridden by the
 * request's ranking.matching.<name> (flat or nested in "ranking").
 * Returns 0 or STRATA_INVALID_ARGUMENT (not a number in the range). */
int eng_nn_tuning(const struct rank_profile *prof, const json_t *req, double *tune,
                  struct strata_error *err);
/* The stored text of such a field's value from JSON in any of the forms
 * above: Vespa's short form, {"type": T, "cells": {label: v}} for one mapped
 * dimension, {"type": T, "blocks": {label: [...]}} for one mapped and
 * indexed ones, else {"type": T, "cells": [{"address": ..., "value": v}]},
 * cells rounded to the field's cell type, in arena a.  Returns 0,
 * STRATA_INVALID_ARGUMENT, STRATA_NOMEM. */
int eng_sparse_field_text(const struct rank_field *rf, const json_t *j, struct base_arena *a,
                          struct store_value *v, const char *what, struct strata_error *err);
/* The value of such a field as the VM reads it, from its stored text, made
 * in arena a; NULL when memory runs out or the text is not a value. */
const struct rank_sparse *eng_sparse_from_text(const struct rank_field *rf, const char *s,
                                               size_t n, struct base_arena *a);

/* The JSON of a dense tensor: {"type": ..., "values": nested arrays}; a
 * number for rank 0.  NULL on allocation failure. */
json_t *eng_tensor_to_json(const struct eng_ttype *t, const void *cells);

/* A JSON number for a cell value: integers stay integers, floats keep their
 * shortest decimal form. */
json_t *eng_json_number(int cell, double v);


/* ---- request/request.c: a search request, read once ----------------------------------- */

#define ENG_DEFAULT_HITS 10
#define ENG_MAX_HITS 400
#define ENG_MAX_OFFSET 100000
#define ENG_MAX_COLLAPSE 1000000 /* collapsesize */

/* How userQuery() and userInput() read their text: Vespa's model.type
 * (all, any, weakAnd, phrase, web, tokenize, linguistics), or its parts. */
enum eng_composite { ENG_COMPOSITE_AND = 1, ENG_COMPOSITE_OR, ENG_COMPOSITE_WEAKAND,
	             ENG_COMPOSITE_PHRASE };
enum eng_syntax { ENG_SYNTAX_SIMPLE = 1, ENG_SYNTAX_WEB, ENG_SYNTAX_NONE };
struct eng_grammar {
	int composite;   /* enum eng_composite */
	int syntax;      /* enum eng_syntax */
	int linguistics; /* model.type.tokenization linguistics: the words as the
	                    field's tokenizer finds them, not stemmed again */
};

/* The keys every search reads, typed (request.c lists every key a request
 * may hold); the others stay in json: query inputs, nearest-neighbour
 * settings, parameters for userInput(@p) and embed(ID, @p). */
struct eng_request {
	const json_t *json;        /* the request with every key by its full name (flat) */
	json_t *flat;              /* owned: json */
	const char *yql;           /* given, or userQuery() when only a query is */
	long hits, offset;         /* -1: not given */
	const char *profile;       /* "default" when not given */
	const char *query_profile; /* queryProfile, NULL */
	const char *summary;       /* presentation.summary, NULL */
	int timing;                /* presentation.timing */
	const char *tensor_format; /* presentation.format.tensors, NULL */
	int short_value;           /* it is short-value */
	const json_t *timeout;     /* deadline.c reads these three, NULL when not given */
	const json_t *soft_enable, *soft_factor;
	const json_t *now;         /* ranking.properties.vespa.now (a number), NULL */
	const char *query;         /* userQuery()'s text, NULL */
	const char *default_index; /* model.defaultIndex, NULL */
	const char *type;          /* model.type and its parts, NULL when not given */
	const char *composite, *tokenization, *syntax;
	struct eng_grammar grammar; /* what they say: weakAnd over the simple syntax
	                               when none is given */
	const char *filter;         /* model.filter, NULL (userquery.c) */
	const char *sorting;        /* ranking.sorting, NULL (yql_sorting reads it) */
	const char *collapse_field; /* collapsefield, NULL */
	long collapse_size;         /* collapsesize; -1: not given (1) */
};
/* Read the request json into r: every key by its full name, Vespa's
 * aliases and nested objects ({"ranking": {"profile": ...}}) resolved, into
 * r->flat; a parameter of Vespa's that Strata does not honour is refused
 * (STRATA_NOT_IMPLEMENTED naming it and what to do instead).  Returns 0
 * (then eng_request_done() frees it), or STRATA_INVALID_ARGUMENT naming the
 * key of a wrong type or value, or a missing "yql" (without "query"). */
int eng_request_read(const json_t *json, struct eng_request *r, struct strata_error *err);
void eng_request_done(struct eng_request *r);
/* The flat form of request json (a new object in *out), as above. */
int eng_request_flatten(const json_t *json, json_t **out, struct strata_error *err);
/* r->grammar from r->type and its parts (userquery.c); STRATA_INVALID_ARGUMENT
 * for a value Vespa does not have, STRATA_NOT_IMPLEMENTED for near and oNear. */
int eng_query_type(struct eng_request *r, struct strata_error *err);
/* The grammar of Vespa's model.type or grammar annotation value name into
 * *g; -1 when it is none of them. */
int eng_grammar_named(const char *name, struct eng_grammar *g);
const json_t *eng_request_param(const json_t *req, const char *name);

/* ---- deadline.c: a search's time limit ---------------------------------------- */

/* When a search must stop (Vespa's timeout and soft timeout). */
struct eng_deadline {
	double at;      /* base_now() when it passes; INFINITY: never */
	double timeout; /* the request's timeout, seconds */
	int soft;       /* 1: work stops there and the result is degraded;
	                   0: the query fails with STRATA_TIMEOUT */
	int passed;     /* a soft deadline was found passed: the result is degraded */
};

/* Vespa's timeout value v: a number of seconds, or a string of a number
 * with unit ms, s or m ("500ms", "2 s"), at least 0, into *out seconds.
 * Returns 0, or -1 for anything else. */
int eng_timeout_parse(const json_t *v, double *out);
/* The same of the text s ("2.5", "500ms", "1 s", "2m"). */
int eng_timeout_text(const char *s, double *out);

/* The deadline of request req from now: its YQL's timeout (yql_ms
 * milliseconds; -1: none) or else its "timeout", and
 * "ranking.softtimeout.enable" and "ranking.softtimeout.factor" (flat keys
 * or nested objects).  None without either timeout.  Returns 0 or
 * STRATA_INVALID_ARGUMENT naming the bad setting. */
int eng_deadline_init(struct eng_deadline *d, const struct eng_request *req, long yql_ms,
                      struct strata_error *err);

/* Whether the work must stop: 0 go on; 1 stop, returning what is done (a
 * soft deadline passed, now or before); STRATA_TIMEOUT (a hard one passed;
 * err says so). */
int eng_deadline_check(struct eng_deadline *d, struct strata_error *err);

/* Vespa's "coverage" object of a result over docs documents of which covered
 * were searched, degraded by timeout or not.  NULL when memory runs out. */
json_t *eng_coverage_json(uint64_t docs, uint64_t covered, int degraded);

/* ---- result.c ------------------------------------------------------------------ */

/* Serialize j into a new string (base_strfree).  pretty: two-space indent.
 * Numbers print in their shortest round-trip form.  NULL on allocation
 * failure. */
char *eng_json_dump(const json_t *j, int pretty);
/* values.c: the compact text of JSON value c, copied into arena a, as v's
 * string.  Returns 0 or STRATA_NOMEM (naming what). */
int eng_json_to_text(json_t *c, struct base_arena *a, struct store_value *v, const char *what,
                     struct strata_error *err);
/* v as the printer writes a real: the shortest form that reads back as v,
 * ".0" kept on integral values ("3.0", "0.1"); "null" when not finite. */
void eng_real_str(double v, char *buf, size_t n);

/* The JSON of one stored field value, which must be set (v->set).
 * dim_names name a tensor's dimensions (may be NULL).  NULL on allocation
 * failure (or a tensor value whose cells are missing). */
json_t *eng_value_json(const struct store_field *f, const char *const *dim_names,
                       const struct store_value *v);

/* The JSON of a feature value (number or tensor). */
json_t *eng_feature_json(const struct rank_feature *f);

/* ---- values.c: collection and struct fields ------------------------------------- */

/* Check j against the type of rf (an ARRAY, WSET, MAP or STRUCT field) and
 * set v to its canonical JSON text, allocated in a.  what names the field
 * in messages.  Returns 0, STRATA_INVALID_ARGUMENT (with the path to the
 * bad element), STRATA_NOMEM. */
int eng_cvalue_from_json(const struct rank_field *rf, const json_t *j, struct base_arena *a,
                         struct store_value *v, const char *what, struct strata_error *err);
/* An update of rf's value: op "add" (array elements appended, weighted set
 * keys set), "remove" (array elements equal to one given, weighted set
 * keys given) or "match" (a weighted set key's weight incremented or
 * decremented: {"element": key, "increment": n}; a missing key is made
 * only with create-if-nonexistent), applied to cur (NULL or unset:
 * empty); the result in v, in a.  remove-if-zero then drops keys of
 * weight 0.  Returns 0, STRATA_INVALID_ARGUMENT (a map or struct, a bad argument),
 * STRATA_NOMEM. */
int eng_cvalue_update(const struct rank_field *rf, const char *op, const json_t *arg,
                      const struct store_value *cur, struct base_arena *a, struct store_value *v,
                      const char *what, struct strata_error *err);
/* 1 when rf is an array or weighted set of numbers (int, long, float,
 * double). */
int eng_cvalue_holds_numbers(const struct rank_field *rf);
/* 1 when an element (a key of a weighted set) of the stored value (n
 * bytes at s) of rf, an array or weighted set of numbers, passes test; 0
 * when none does; -1 when memory ran out. */
int eng_cvalue_any_number(const struct rank_field *rf, const char *s, size_t n,
                          int (*test)(const void *ud, double v), const void *ud);
/* A field path assignment: step is "{key}" (rf a map), "[index]" (an
 * array, index below its length) or ".field" (a struct); arg, checked
 * against the part's type, replaces that part of cur (NULL or unset: an
 * empty value); the result in v, in a.  Returns 0,
 * STRATA_INVALID_ARGUMENT, STRATA_NOMEM. */
int eng_cvalue_assign_path(const struct rank_field *rf, const char *step, const json_t *arg,
                           const struct store_value *cur, struct base_arena *a,
                           struct store_value *v, const char *what, struct strata_error *err);
/* The simple type (RANK_FT_STRING to BOOL) at path inside the values of
 * rf: "key" or "value" of a map, a struct's field by name, arrays stepped
 * through ("people.name" in an array of structs, "m.value.f"); 0 when path
 * names no simple value. */
int eng_cvalue_path_type(const struct rank_field *rf, const char *path);
/* 1 when a value at path inside the stored value (n bytes at s) of rf
 * matches: equals str when str is not NULL, else passes test; 0 when none
 * does; -1 when memory ran out (so the answer is unknown). */
int eng_cvalue_path_match(const struct rank_field *rf, const char *s, size_t n, const char *path,
                          const char *str, int (*test)(const void *ud, double v), const void *ud);
/* The simple type at path inside rf's values, as eng_cvalue_path_type,
 * and also a weighted set's keys (path "" of a weighted set); 0 when none. */
int eng_cvalue_path_simple(const struct rank_field *rf, const char *path);
/* fn(ud, leaf) for each of those values in the stored value (n bytes at s)
 * of rf: a jansson string, number or boolean, valid during the call.
 * Returns 0, what fn returned when not 0, or -1 when memory ran out. */
int eng_cvalue_path_each(const struct rank_field *rf, const char *s, size_t n, const char *path,
                         int (*fn)(void *ud, const json_t *leaf), void *ud);
/* 1 when rf is an array or weighted set of strings. */
int eng_cvalue_holds_strings(const struct rank_field *rf);
/* 1 when the stored value (n bytes at s) of rf, an array or weighted set of
 * strings, holds the element (key) str; 0 when not; -1 when memory ran out. */
int eng_cvalue_contains(const struct rank_field *rf, const char *s, size_t n, const char *str);

/* ---- yql.c ------------------------------------------------------------------------ */

enum yql_kind {
	YQL_TRUE = 1,
	YQL_FALSE,
	YQL_CMP,      /* field op num */
	YQL_RANGE,    /* range(field, lo, hi), bounds included */
	YQL_CONTAINS, /* field contains "str" */
	YQL_AND,
	YQL_OR,
	YQL_NOT,      /* !kids[0] */
	YQL_NN,       /* {targetHits: K}nearestNeighbor(field, input) */
	YQL_IN,       /* field in (v, ...): numbers (nums) or strings (strs) */
	YQL_MATCHES,  /* field matches "regex" (re) */
	YQL_RANK,     /* rank(c, ...): matches as kids[0]; the others feed rank features */
	YQL_USERQUERY, /* userQuery(): replaced by the query parameter's conditions */
	YQL_USERINPUT, /* userInput(@str) or userInput("text" in field): likewise */
	YQL_PREDICATE, /* predicate(field, {features}, {ranges}) (predicate.c) */
	YQL_GEO,       /* geoLocation(field, lat, lng, "radius"): lo lat, hi lng (degrees),
	                  num the radius in millionths of a degree (< 0: any) (position.c) */
	YQL_WSET,     /* dotProduct, wand or weightedSet(field, {token: weight, ...}) (op) */
	YQL_SAME,     /* field contains sameElement("a", "b c"): strs all in one element */
	YQL_WEAKAND,  /* [{targetHits: K}]weakAnd(c, ...): the top K of its terms (wand.c) */
	YQL_KINDS     /* the number of kinds, 1 + the last: eng_ops has one row per kind */
};

/* YQL_WSET's op: the operator (wsetmatch.c). */
enum yql_wset_op { YQL_DOTPRODUCT = 1, YQL_WAND, YQL_WEIGHTEDSET };

/* weakAnd's targetHits when not annotated: Vespa's default. */
#define YQL_WEAKAND_TARGET 100

enum yql_cmp { YQL_LT = 1, YQL_LE, YQL_GT, YQL_GE, YQL_EQ };

/* A word's annotations: {prefix: true}, {stem: false}, {ranked: false},
 * {filter: true}, {weight: N}, given on it or on a condition around it. */
struct yql_term {
	unsigned char prefix;   /* matches every word that begins with it */
	unsigned char no_stem;  /* looked up as written, not stemmed */
	unsigned char unranked; /* ranked: false or filter: true: matches, feeds no text rank feature */
	unsigned char set;      /* YQL_TERM_* bits: which were given (for inheritance) */
	int weight;             /* 0: Vespa's 100 */
};
#define YQL_TERM_PREFIX 1
#define YQL_TERM_STEM 2
#define YQL_TERM_RANKED 4
#define YQL_TERM_WEIGHT 8

/* userInput()'s annotations. */
struct yql_user {
	const char *default_index;  /* defaultIndex, NULL */
	const char *grammar;        /* grammar, NULL */
	struct eng_grammar grammar_of;
	int allow_empty;            /* allowEmpty: true */
	int raw;                    /* grammar raw or segment: the text is one term */
};

struct yql_node {
	int kind;          /* enum yql_kind */
	int op;            /* YQL_CMP: enum yql_cmp; YQL_WSET: enum yql_wset_op */
	int col;           /* 1-based column in the YQL text */
	char *field;       /* CMP, RANGE, CONTAINS, NN */
	double num;        /* CMP; WSET: wand's scoreThreshold (-Infinity: none) */
	double lo, hi;     /* RANGE */
	char *str;         /* CONTAINS */
	char *input;       /* NN: the query input name */
	long target_hits;  /* NN, WSET (wand), WEAKAND */
	int approximate;   /* NN: 1 unless approximate:false */
	long explore;      /* NN: hnsw.exploreAdditionalHits */
	char *label;       /* NN, WSET: or NULL */
	int nvals;         /* IN: the values, numbers or strings; WSET: the tokens; SAME: the
	                      strings */
	double *nums;      /* WSET: the tokens' weights */
	char **strs;       /* IN: NULL for numbers; WSET: the tokens (numbers as written) */
	int nranges;       /* PREDICATE: the features are nvals (key, value) pairs in
	                      strs (strs[2i], strs[2i + 1]); the range attributes nranges
	                      pairs (rkeys[i], rvals[i]) */
	char **rkeys;
	int64_t *rvals;
	uint64_t *fmasks;  /* PREDICATE: the subqueries of each feature and range (bit i: */
	uint64_t *rmasks;  /* subquery i); all ones unless the query names some */
	unsigned char pred_first[64]; /* PREDICATE: the first subquery holding the same
	                                 attributes as each (one evaluation serves them) */
	regex_t *re;       /* MATCHES: compiled (str is its text); yql_free frees it */
	struct yql_node *re_next; /* MATCHES: the one compiled before, or NULL */
	int nkids;
	struct yql_node **kids;
	int fidx;          /* set by query.c per doctype: field index or -1 */
	struct yql_term term; /* CONTAINS, USERQUERY, USERINPUT: word annotations */
	struct yql_user *user; /* USERINPUT: its annotations, or NULL */
};

/* order by field [asc|desc], ... */
struct yql_order {
	char *field;  /* NULL: by relevance ([relevance] in the sorting parameter) */
	int desc;
	int given;    /* asc or desc was written (else the field's sorting order) */
	int col;
	int function; /* -1: the field's sorting function; else enum rank_sort_function */
	int primary;  /* with function: uca's strength is primary */
	int missing;  /* a hit without a value: 0 Vespa's default (first when ascending,
	                 else last), 1 first, 2 last */
	int from_sorting; /* given by the sorting parameter (col is in its text) */
};

struct yql_grouping; /* grouping.h */

struct yql_query {
	struct base_arena arena; /* everything below lives here */
	int all_fields;          /* select * */
	int nfields;
	char **fields;
	int all_sources;         /* from sources * */
	int nsources;
	char **sources;
	struct yql_node *where;
	long limit;              /* -1 when not given */
	long offset;             /* -1 when not given */
	long timeout_ms;         /* the query's timeout in milliseconds; -1 when not given */
	int norder;              /* order by: replaces the rank order */
	struct yql_order *order;
	int ngroupings;          /* after '|': all(...), or all(all(...) all(...) ...) */
	struct yql_grouping *grouping;
	struct yql_node *regexes;      /* the last MATCHES compiled (then re_next) */
};

/* Parse a YQL statement.  Returns 0, STRATA_PARSE ("yql:1:COL: message"),
 * STRATA_NOMEM.  Free with yql_free. */
int yql_parse(const char *text, struct yql_query **out, struct strata_error *err);
void yql_free(struct yql_query *q);
/* The request's sorting (ranking.sorting): Vespa's sorting language, into
 * q->order.  Errors "sorting:1:COL: ..." (STRATA_PARSE), STRATA_INVALID_ARGUMENT
 * beside an order by, STRATA_NOT_IMPLEMENTED (a part Strata lacks, named). */
int yql_sorting(struct yql_query *q, const char *spec, struct strata_error *err);
/* The first node of kind on field in the tree at n (depth first), or NULL. */
const struct yql_node *yql_find(const struct yql_node *n, int kind, const char *field);
/* A readable dump of the condition tree (for tests): "AND(CMP(price<30),...)". */
char *yql_dump(const struct yql_node *n);
/* Whether number v passes condition ud (a struct yql_node, CMP or RANGE). */
int yql_number_test(const void *ud, double v);

/* fn(ud, node) for each node of kind in the tree at n (NULL: none), a node's
 * children before it, until fn returns non-zero, which is returned. */
int yql_each(const struct yql_node *n, int kind, int (*fn)(void *ud, const struct yql_node *n),
             void *ud);

/* ---- fieldtypes.c: byte, raw, reference, predicate values; imported fields ---------- */

/* 1 when the values of rf are made by eng_typed_value: a byte, raw,
 * reference, predicate or imported field. */
int eng_typed_field(const struct rank_field *rf);
/* The store value of such a field from JSON j (raw from base64, a byte in
 * range, a reference to a document id of its type, a predicate's canonical
 * text), in arena a.  An imported field cannot be fed.  Returns 0,
 * STRATA_INVALID_ARGUMENT ("what: ..."), STRATA_NOMEM. */
int eng_typed_value(const struct rank_field *rf, const json_t *j, struct base_arena *a,
                    struct store_value *v, const char *what, struct strata_error *err);
/* The JSON of set value v of field fi of dt as get and summaries show it:
 * eng_value_json's, but raw as base64.  NULL when memory runs out. */
json_t *eng_field_json(const struct eng_doctype *dt, int fi, const struct store_value *v);
/* Document lid of dt (id id) in read transaction r as get shows it,
 * {"id": id, "fields": {...}}, a new value in *out; vals has room for
 * dt->nfields + 1 values (feed.c).  Returns 0 or store_get's errors,
 * STRATA_NOMEM. */
int eng_doc_json(struct eng_doctype *dt, struct store_txn *r, uint32_t lid, const char *id,
                 struct store_value *vals, json_t **out, struct strata_error *err);
/* The checks of a YQL condition n on field rf when either is of these
 * types: predicate() (predicate.c's), geoLocation() on a position field,
 * and nothing else on one.  Returns 0 or STRATA_INVALID_ARGUMENT. */
int eng_typed_check(const struct rank_field *rf, const struct yql_node *n,
                    struct strata_error *err);
/* Whether the stored value v (set) passes n, a predicate() or a
 * geoLocation(). */
int eng_typed_match(const struct yql_node *n, const struct store_value *v);
/* The rank feature (RANK_TF_SUBQUERIES_* of a predicate field, RANK_TF_GEO_*
 * of a position field) of field rf for a document whose stored value is v
 * (NULL: none), for the query's condition tree where (may be NULL). */
double eng_typed_feature(const struct yql_node *where, const struct rank_field *rf, int feature,
                         const struct store_value *v);
/* The attribute of imported field rf as the rank_docs callback returns it,
 * for the child document whose reference value is ref: from the
 * referenced document's column, or (a tensor with mapped dimensions) made
 * in arena a.  NULL when there is no such document or value. */
const void *eng_import_attr(struct strata *db, struct store_txn *txn, const struct rank_field *rf,
                            const struct store_value *ref, struct base_arena *a);
/* Set vals[i] of every imported field i of dt (only = -1), or of field
 * only, from the referenced document named by the reference value already
 * in vals (a document store_get read), unset when there is none.  Views
 * live until txn ends; the parent records are read into arena a.  Returns
 * 0 or STRATA_NOMEM (unreported). */
int eng_imports_fill(struct strata *db, struct store_txn *txn, const struct eng_doctype *dt,
                     int only, struct store_value *vals, struct base_arena *a);

/* ---- predicate.c: predicate fields ------------------------------------------------ */

/* The canonical text of the predicate j (a JSON string) into v, in arena
 * a.  Returns 0, STRATA_INVALID_ARGUMENT ("what: bad predicate: column N:
 * ..."), STRATA_NOMEM. */
int eng_predicate_text(const json_t *j, struct base_arena *a, struct store_value *v,
                       const char *what, struct strata_error *err);
/* The subqueries of the YQL predicate() node q for which the stored
 * predicate (n bytes at s) holds, bit i for subquery i (each holds the
 * attributes whose bitmap has bit i; all of them without subqueries); 0
 * when none does (or the text is no predicate).  The document matches q
 * when it is not 0. */
uint64_t eng_predicate_match(const char *s, size_t n, const struct yql_node *q);
/* Whether q suits field rf: a predicate field, range values within its
 * bounds.  Returns 0 or STRATA_INVALID_ARGUMENT ("yql:1:COL: ..."). */
int eng_predicate_check(const struct rank_field *rf, const struct yql_node *q,
                        struct strata_error *err);

/* ---- position.c: position fields ---------------------------------------------- */

/* The store value (a long) of the position j ({"lat": .., "lng": ..},
 * "N63.4;E10.4" or {"x": .., "y": ..} in millionths).  Returns 0 or
 * STRATA_INVALID_ARGUMENT ("what: ..."). */
int eng_position_value(const json_t *j, struct store_value *v, const char *what,
                       struct strata_error *err);
/* {"lat": degrees, "lng": degrees} of a stored position; NULL when memory
 * runs out. */
json_t *eng_position_json(int64_t packed);
/* The radius text of geoLocation ("10 km", "500 m", "2 mi", "1 deg", a
 * negative number for any) in millionths of a degree (-1 for any): 0, or
 * -1 when it is no radius. */
int eng_geo_radius(const char *s, double *out);
/* 1 when the stored position lies within the radius of geoLocation node n. */
int eng_geo_match(const struct yql_node *n, int64_t packed);
/* The geo rank feature (RANK_TF_GEO_*) for a document at the stored
 * position *packed (NULL: none), against geoLocation node g (NULL: the
 * query has none on the field). */
double eng_geo_feature(const struct yql_node *g, int feature, const int64_t *packed);

/* ---- ops.c: the operator table; iter.c: iterators ------------------------------------- */

struct eng_iter;
struct eng_textset;
struct eng_wset;
struct eng_same;
struct eng_wandset;

/* What the operators read while they match the documents of one type: the
 * state each family opened for the where tree, and the document's values
 * through the query's reader (it keeps one document's values at a time). */
/* The documents of one nearestNeighbor item, lids increasing. */
struct eng_nnset {
	const struct yql_node *node;
	uint32_t *lids;
	size_t n;
};

struct eng_match {
	struct store_txn *txn;
	const struct eng_doctype *dt;
	struct eng_textset *text; /* contains on text-indexed fields (textmatch.c) */
	struct eng_wset *wset;    /* dotProduct, wand, weightedSet (wsetmatch.c) */
	struct eng_same *same;    /* contains sameElement (samematch.c) */
	struct eng_wandset *wand; /* the matches of each weakAnd (wand.c) */
	const struct eng_nnset *nn; /* each nearestNeighbor item's set */
	int nnn;
	int nn_true;              /* nearestNeighbor matches every document (its filter) */
	int nomem;                /* a value could not be read for lack of memory */
	/* The document's stored value of field fidx, or NULL when it has none. */
	const struct store_value *(*value)(void *ud, uint32_t lid, int fidx);
	void *ud;
	struct strata_error *err; /* iterators' errors */
};

/* One kind of where-tree node.  A kind is its parse (yql.c), one file of
 * match/ and one row of eng_ops, indexed by the kind.  For a leaf, check
 * and match see n->fidx >= 0 (the document type has the field; without it
 * the condition is false there) and no path inside it (f.path conditions
 * are checked and matched as collection values, value.c). */
struct eng_op {
	const char *name;      /* as YQL writes it */
	int connective;        /* its kids are conditions (and, or, not, rank, weakAnd) */
	/* 0, or the error (STRATA_INVALID_ARGUMENT "yql:1:COL: ...") that
	 * n's field does not suit it; NULL: any field suits. */
	int (*check)(const struct eng_doctype *dt, const struct yql_node *n,
	             struct strata_error *err);
	/* 1 when document lid matches n, else 0 (m->nomem set when a value
	 * could not be read). */
	int (*match)(struct eng_match *m, const struct yql_node *n, uint32_t lid);
	/* An iterator over the documents n can match (a superset, in
	 * increasing lid order, each tested with match after) into *out, or
	 * *out NULL when n cannot drive a match (each document is tested).
	 * Returns 0 or an error (m->err).  NULL: never drives. */
	int (*open)(struct eng_match *m, const struct yql_node *n, struct eng_iter **out);
};
/* The rows, each defined in its operator's file. */
extern const struct eng_op eng_op_true, eng_op_false, eng_op_and, eng_op_or, eng_op_not,
	eng_op_rank, eng_op_cmp, eng_op_range, eng_op_in, eng_op_matches, eng_op_contains,
	eng_op_nn, eng_op_userquery, eng_op_userinput, eng_op_predicate, eng_op_geo, eng_op_wset,
	eng_op_same, eng_op_weakand;
/* The table, indexed by enum yql_kind (row 0 is NULL; ops.c). */
extern const struct eng_op *const eng_ops[YQL_KINDS];

/* Whether document lid matches n: eng_ops[n->kind].match, false for a
 * field the document type lacks. */
int eng_match_node(struct eng_match *m, const struct yql_node *n, uint32_t lid);

/* An iterator: the documents of a condition in increasing lid order. */
struct eng_iter {
	/* Move to the first document >= *lid and set *lid: 0, STRATA_NOT_FOUND
	 * past the end, or an error.  Targets never decrease. */
	int (*seek)(struct eng_iter *it, uint32_t *lid);
	void (*close)(struct eng_iter *it);
	uint64_t est;          /* at most this many documents */
};
/* The iterator of n (eng_ops[n->kind].open), *out NULL when it cannot
 * drive; an empty one for a field the type lacks.  Returns 0 or an error. */
int eng_iter_open(struct eng_match *m, const struct yql_node *n, struct eng_iter **out);
void eng_iter_close(struct eng_iter *it); /* NULL is ignored */
/* *out = it; 0, or STRATA_NOMEM (m->err) when it is NULL (memory ran out). */
int eng_iter_give(struct eng_match *m, struct eng_iter *it, struct eng_iter **out);
/* Over lids[0..n), increasing; own: freed with the iterator (base_free,
 * cap entries).  Returns NULL when memory runs out (own is freed). */
struct eng_iter *eng_iter_array(const uint32_t *lids, size_t n, uint32_t *own, size_t cap);
/* Over the documents of the posting lists pl[0..n) (borrowed): all of them
 * (and) or any (or).  NULL when memory runs out. */
struct eng_iter *eng_iter_postings(struct store_postings *const *pl, int n, int any);
/* The documents of every one (and) or of any (or) of kids[0..n), which it
 * takes over (closed with it, also when this fails); one kid is returned
 * itself, none gives no document.  and: the kid of the lowest estimate
 * leads, the others are sought to its documents.  NULL when memory runs
 * out. */
struct eng_iter *eng_iter_and(struct eng_iter **kids, int n);
struct eng_iter *eng_iter_or(struct eng_iter **kids, int n);

/* compare.c: contains on a field without a text index: the value is the
 * string (a string field), or holds it (a collection of strings, or the
 * values at a path inside a collection or struct field). */
int eng_value_contains(struct eng_match *m, const struct yql_node *n, uint32_t lid);
/* Its iterator: the documents of the string in the field's value
 * dictionary (fast-search), else *out NULL.  Returns 0 or an error. */
int eng_value_open(struct eng_match *m, const struct yql_node *n, struct eng_iter **out);
/* 1 when a store type is numeric (int, long, float, double, bool). */
int eng_numeric_type(int store_type);
/* The numeric value of field fidx of lid into *out: 1, or 0 without one. */
int eng_num_value(struct eng_match *m, uint32_t lid, int fidx, double *out);

/* ---- textmatch.c: contains on text-indexed fields ----------------------------------- */

struct eng_text;
struct eng_textset;
/* For each CONTAINS node of where on a field of dt with a text index (its
 * fidx resolved for dt): tokenize its string as the field is tokenized and
 * open the terms' posting lists in txn, into *out (NULL when there is no
 * such node).  Returns 0, STRATA_LIMIT (too many words), STRATA_NOMEM,
 * store errors; on error nothing stays open.  Close with eng_text_close
 * (NULL is ignored) before txn ends. */
int eng_text_open(struct store_txn *txn, const struct eng_doctype *dt,
                  const struct yql_node *where, struct eng_textset **out,
                  struct strata_error *err);
void eng_text_close(struct eng_textset *s);
/* The text state of node n, or NULL (s may be NULL). */
const struct eng_text *eng_text_of(const struct eng_textset *s, const struct yql_node *n);
/* Whether document lid has the term, or the terms as a phrase (cheapest
 * with lids in increasing order). */
int eng_text_match(const struct eng_text *t, uint32_t lid);
/* Where lid is in v[0..n) (increasing), or n when it is not there. */
size_t eng_lid_find(const uint32_t *v, size_t n, uint32_t lid);
/* Remember that t's one term occurs tf times in lid (0: not at all), whose
 * field is dl long, lids given in increasing order: its rank features read
 * that instead of the posting list.  Returns 0 or STRATA_NOMEM. */
int eng_text_memo(struct eng_text *t, uint32_t lid, uint32_t tf, uint32_t dl,
                  struct strata_error *err);
/* bm25's parts, as the rank feature computes them: the idf of a term in
 * df of ndocs documents, log(1 + (ndocs - df + 0.5) / (df + 0.5)); a
 * term's score in a document of length dl holding it tf times, idf * tf *
 * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl)); the documents of t's
 * type (bm25's N); the average length bm25 uses for t's field (the
 * profile's, else the index's). */
double eng_bm25_idf(double ndocs, double df);
double eng_bm25(double idf, double tf, double dl, double avgdl, const struct rank_bm25 *bm);
double eng_text_ndocs(const struct eng_text *t);
double eng_text_avgdl(const struct eng_text *t, const struct rank_bm25 *bm);
/* topk.c: the exact top k of an OR of words ranked by a sum of bm25.
 * eng_topk_fits: 1 when where is 'contains' of one word on a text index
 * (m->text open), alone or under OR, and prof's first phase is a sum of
 * weighted bm25 with weights of at least 0 (rank_profile_bm25_sum), else
 * 0.  eng_topk_run: for such a query, keep(ud, lid) for every candidate of
 * the k best (by the first phase; a superset of them, ties and near ties
 * included, as few as it can), in lid order, and the exact number of
 * matches in *matched.  Returns 0, 1 when the deadline dl stopped it
 * (the candidates and matches so far are given), or an error (keep's, or
 * the store's, reported). */
int eng_topk_fits(const struct eng_match *m, const struct yql_node *where,
                  const struct rank_profile *prof);
int eng_topk_run(struct eng_match *m, const struct yql_node *where,
                 const struct rank_profile *prof, size_t k, struct eng_deadline *dl,
                 int (*keep)(void *ud, uint32_t lid), void *ud, uint64_t *matched);
/* The words of t (-1 on a field with match: prefix), and in *p the posting
 * list of its one term when it has one word (else NULL), borrowed from t. */
int eng_text_single(const struct eng_text *t, struct store_postings **p);
/* The positions where the terms of the posting lists pl[0..n) (n at most
 * 32, each list on the same document) follow one another, term i at
 * position p + i: the phrase's starts p, increasing, into starts (at most
 * max); their number.  Only each term's first cap positions (at most 4096)
 * are looked at. */
uint32_t eng_phrase_starts(struct store_postings *const *pl, int n, uint32_t cap,
                           uint32_t *starts, uint32_t max);
/* The summary setting tokens: the terms the text index holds for value v of
 * text-indexed field f (its tokenizer flags), as a JSON array of strings.
 * Returns NULL on failure, err set (STRATA_NOMEM). */
json_t *eng_tokens_json(const struct store_field *f, const struct store_value *v,
                        struct strata_error *err);
/* The length in tokens of lid's value of text-indexed field into *len (0
 * without one): 1 when it has a value, else 0.  The set (NULL: none)
 * remembers the last few, so a document's features read each once. */
int eng_text_length(struct store_txn *txn, const struct eng_doctype *dt, struct eng_textset *s,
                    int field, uint32_t lid, uint32_t *len);
/* The text rank feature (enum rank_text_feature) of field for lid, over the
 * CONTAINS conditions of the set on that field; bm25 with the parameters
 * profile prof gives the field (rank_profile_bm25). */
double eng_text_feature(struct store_txn *txn, const struct eng_doctype *dt,
                        const struct rank_profile *prof, struct eng_textset *s, int feature,
                        int field, uint32_t lid);
/* elementwise(bm25(field)) of lid (RANK_TT_ELEM_BM25): with elem >= 0,
 * bm25 of the set's terms on field over element elem alone (NaN when none
 * is in it), with prof's k1 and b; with elem -1, one past the last element
 * scored.  The set keeps the document's scores, computed at its first
 * question.  A failed read gives no cells. */
double eng_text_elementwise(struct store_txn *txn, const struct eng_doctype *dt,
                            const struct rank_profile *prof, struct eng_textset *s, int field,
                            int elem, uint32_t lid);
/* labels.c: an array or weighted set field's stored value (n bytes at s) as
 * the tensor with one mapped dimension that tensorFromLabels and
 * tensorFromWeightedSet read: each distinct element holding 1, or each key
 * its weight; made in arena a; NULL when memory runs out or the text is
 * not a value. */
const struct rank_sparse *eng_collection_sparse(const struct rank_field *rf, const char *s,
                                                size_t n, struct base_arena *a);
/* What rank_docs.attr gives for a string, array or weighted set field rf
 * whose stored value is sv (NULL: none): the string's rank_string_hash, or
 * eng_collection_sparse; made in a; NULL without a value (or memory). */
const void *eng_rank_value(const struct rank_field *rf, const struct store_value *sv,
                           struct base_arena *a);
/* The positions of the query's terms on a text-indexed field in a document,
 * for fieldMatch: each term (its query number) that searches field, in
 * query order, with its first ENG_TERM_POS_MAX positions, increasing. */
#define ENG_TERM_POS_MAX 128
struct eng_term_pos {
	int term;
	uint32_t n;
	uint32_t pos[ENG_TERM_POS_MAX];
};
/* textmatch.c: the ranked terms of s (not {filter: true} or {ranked:
 * false}) on field for lid into out (at most max); their number. */
int eng_text_positions(const struct eng_textset *s, int field, uint32_t lid,
                       struct eng_term_pos *out, int max);
/* fieldmatch.c: output (enum rank_field_match) of fieldMatch(field) for
 * lid, over the terms of s. */
double eng_field_match(struct store_txn *txn, const struct eng_doctype *dt,
                       struct eng_textset *s, int field, uint32_t lid, int output);
/* fieldmatch.c: nativeProximity's parts on field for lid, feature
 * RANK_TF_NATIVE_PROX_SUM (the term pairs' boosts, each times its weight,
 * normalized) or RANK_TF_NATIVE_PROX_WEIGHT (the pairs' weights).  In a
 * collection, occurrences in one element pair up, and in adjacent ones
 * only with prof's element gap for the field (rank_profile_element_gap). */
double eng_native_proximity(struct store_txn *txn, const struct eng_doctype *dt,
                            const struct rank_profile *prof, const struct eng_textset *s,
                            int feature, int field, uint32_t lid);
/* fieldmatch.c: output (RANK_TT_TEXT_SIMILARITY's) of textSimilarity(field)
 * for lid, over the terms of s. */
double eng_text_similarity(struct store_txn *txn, const struct eng_doctype *dt,
                           struct eng_textset *s, int field, uint32_t lid, int output);
/* fieldmatch.c: elementSimilarity(field) for lid (Vespa's default output),
 * over the terms of s. */
double eng_element_similarity(struct store_txn *txn, const struct eng_doctype *dt,
                              const struct eng_textset *s, int field, uint32_t lid);
/* attrmatch.c: output (enum rank_attr_match) of attributeMatch(field) for a
 * document whose value of field is sv (NULL or unset: none), over the
 * 'contains' conditions of where. */
double eng_attr_match(const struct yql_node *where, const struct eng_doctype *dt, int field,
                      const struct store_value *sv, int output);
/* Term feature (enum rank_term_feature) of query term `term` (or -1) on
 * field (or -1) for lid, over s's terms (s may be NULL: a query without
 * text conditions has no terms).  The terms are the words of s's
 * conditions in order; those a fieldset made share their numbers. */
double eng_text_term(struct store_txn *txn, const struct eng_doctype *dt,
                     const struct eng_textset *s, int feature, int field, int term, uint32_t lid);

/* ---- snippet.c: summary fields made from the query --------------------------------- */

/* The summary of field fi (a string for RANK_SUMMARY_DYNAMIC and
 * RANK_SUMMARY_BOLDING, a collection for RANK_SUMMARY_MATCHED_ELEMENTS)
 * with value v, for a query whose condition tree is where: a snippet, the
 * highlighted text, or the matched elements, into *out (NULL when there is
 * nothing to show: no element matched).  Returns 0 or STRATA_NOMEM. */
int eng_summary_transform(const struct eng_doctype *dt, const struct yql_node *where, int fi,
                          int transform, const struct store_value *v, json_t **out,
                          struct strata_error *err);

/* ---- wsetmatch.c: dotProduct, wand and weightedSet ------------------------------------ */

struct eng_wset;
/* Check the field of YQL_WSET node n (fidx set for dt): a weighted set, an
 * array or a single value of strings or integers.  Returns 0 or
 * STRATA_INVALID_ARGUMENT ("yql:1:COL: ..."). */
int eng_wset_check(const struct eng_doctype *dt, const struct yql_node *n,
                   struct strata_error *err);
/* The operators of where (fields resolved for dt), made ready to match in
 * read transaction txn (posting lists stay open in it): *out is NULL when
 * there are none.  Returns 0, STRATA_LIMIT, STRATA_NOMEM, STRATA_STORE;
 * close with eng_wset_close (NULL is ignored) before txn ends. */
int eng_wset_open(struct store_txn *txn, const struct eng_doctype *dt,
                  const struct yql_node *where, struct eng_wset **out, struct strata_error *err);
void eng_wset_close(struct eng_wset *w);
/* Whether document lid matches n: 1 with the dot product in *score (0 for
 * weightedSet), 0, or -1 when memory ran out.  value(ud, field, lid) gives
 * the document's value of a field (NULL: none) when the index cannot
 * answer. */
int eng_wset_match(struct eng_wset *w, const struct yql_node *n, uint32_t lid,
                   const struct store_value *(*value)(void *ud, int field, uint32_t lid),
                   void *ud, double *score);
/* rawScore(field) (feature RANK_TF_RAW_SCORE) or itemRawScore(label)
 * (RANK_TF_ITEM_RAW_SCORE) of document lid, whose field values value(ud,
 * field, lid) gives: the sum of the matching operators' dot products.
 * *nomem is set to 1 when a value could not be read for lack of memory. */
double eng_wset_feature(struct eng_wset *w, int feature, int field, const char *label,
                        uint32_t lid,
                        const struct store_value *(*value)(void *ud, int field, uint32_t lid),
                        void *ud, int *nomem);

/* ---- samematch.c: contains sameElement(...) ---------------------------------------- */

struct eng_same;
/* Check the field of YQL_SAME node n (fidx set for dt): it has a text
 * index.  Returns 0, STRATA_INVALID_ARGUMENT or STRATA_LIMIT ("yql:1:COL: ..."). */
int eng_same_check(const struct eng_doctype *dt, const struct yql_node *n,
                   struct strata_error *err);
/* The sameElement conditions of where, their posting lists opened in txn:
 * *out is NULL when there are none.  Returns 0, STRATA_LIMIT, STRATA_NOMEM,
 * STRATA_STORE; close with eng_same_close (NULL is ignored) before txn ends. */
int eng_same_open(struct store_txn *txn, const struct eng_doctype *dt,
                  const struct yql_node *where, struct eng_same **out, struct strata_error *err);
void eng_same_close(struct eng_same *s);
/* Whether one element of document lid holds all of n's strings. */
int eng_same_match(struct eng_same *s, const struct yql_node *n, uint32_t lid);

/* ---- wand.c: weakAnd with top-k pruning ---------------------------------------------- */

struct eng_wandset;
/* For each WEAKAND node of where: the documents of dt it matches (Vespa's
 * weakAnd: the WAND walk over its terms' posting lists, opened in ts, with
 * a heap of its targetHits best weakAnd scores), into *out (NULL when where
 * has no weakAnd).  Returns 0, STRATA_NOT_IMPLEMENTED (a term that is not
 * a one-word contains on a text-indexed field, with its position),
 * STRATA_LIMIT, STRATA_NOMEM.  Close with eng_wand_close (NULL is
 * ignored). */
int eng_wand_open(struct store_txn *txn, const struct eng_doctype *dt,
                  const struct eng_textset *ts, const struct yql_node *where,
                  struct eng_wandset **out, struct strata_error *err);
void eng_wand_close(struct eng_wandset *s);
/* Whether weakAnd node n matches lid (s may be NULL: no). */
int eng_wand_match(const struct eng_wandset *s, const struct yql_node *n, uint32_t lid);

/* ---- userquery.c: the where tree completed from the request and the schema ----------- */

/* Replace userQuery() and userInput(@p) by the conditions of request
 * parameter query or p (words in model.defaultIndex, else "default"), then
 * each contains on a fieldset of s by an OR over its fields.  Returns 0,
 * STRATA_LIMIT (too many words), STRATA_NOMEM. */
int eng_text_expand(struct yql_query *q, const struct eng_request *req,
                    const struct rank_schema *s, struct strata_error *err);

/* ---- grouping.c: order by and grouping over the matches ----------------------------- */

/* A field's value in one hit: none, a number (integral: of an int, long or
 * bool field) or a string (s, n bytes, valid while the query runs). */
struct eng_hitval {
	int kind;      /* 0 none, 1 number, 2 string */
	int integral;
	double num;
	const char *s;
	size_t n;
	int store_type;    /* the field's STORE_T_ type (0: no such field): what grouping
	                      reads for a value that is not set (Vespa's undefined value) */
	int byte;          /* a byte field (store_type STORE_T_INT) */
	/* the field's sorting settings (rank.h): for order by */
	int sort_desc;     /* its order when the query gives none */
	int sort_function; /* enum rank_sort_function */
	int sort_primary;  /* strength: primary */
};

/* The matches as grouping.c reads them (query.c provides it). */
struct eng_hits {
	size_t n;
	void *ud;
	double (*relevance)(void *ud, size_t i);
	/* the value of field (a name) in hit i */
	void (*value)(void *ud, size_t i, const char *field, struct eng_hitval *v);
	/* hit i as a result hit in summary class cls (NULL: the request's), for
	 * grouping's summary(); 0 or an error (an unknown class: STRATA_NOT_FOUND) */
	int (*hit_json)(void *ud, size_t i, const char *cls, json_t **out, struct strata_error *err);
	/* the values of a collection field or path (an array's elements, a
	 * weighted set's keys, "m.key", "m.value") in hit i, into *out (in a),
	 * *n of them: 1; 0 when field names no collection (value() reads it);
	 * -1 when a runs out */
	int (*values)(void *ud, size_t i, const char *field, struct base_arena *a,
	              struct eng_hitval **out, size_t *n);
	double now;    /* the query's time, whole seconds since 1970 (grouping's now()) */
};

/* The order of the hits by q's order by: perm[0..n) receives hit indexes,
 * the first hit first (a hit without a value after those with one, then
 * by document id as tiebreak(i, j) < 0 says).  Returns 0 or STRATA_NOMEM. */
int eng_order_hits(const struct yql_query *q, const struct eng_hits *h,
                   int (*tiebreak)(void *ud, size_t i, size_t j), size_t *perm,
                   struct strata_error *err);
/* Grouping: grouping.h. */

/* ---- selection.c, selection_eval.c: Vespa's document selection language ---------
 *
 * The conditions of test-and-set operations and the selections of visits:
 * "music.year > 2000 and not music.title = \"*live*\"".  eng_sel_parse
 * turns the text into a tree whose document types and fields are resolved
 * against the application; eng_sel_eval tells whether one stored document
 * matches it.  Values are null, integers, floats, strings, and the
 * elements (keys) of a collection field; a comparison that makes no sense
 * (an order between a number and a string, anything but == and != with
 * null) is "invalid", which and/or/not carry on as Vespa does and which
 * never matches at the top. */

enum eng_sel_kind {
	/* booleans */
	ENG_SEL_TRUE = 1, ENG_SEL_FALSE, ENG_SEL_AND, ENG_SEL_OR, ENG_SEL_NOT,
	ENG_SEL_CMP,      /* a op b: op is an enum eng_sel_op */
	ENG_SEL_DOCTYPE,  /* the bare name of a document type: dt */
	/* values (ENG_SEL_FIELD, TRUE and FALSE are booleans too) */
	ENG_SEL_FIELD,    /* dt's field fi, then path (NULL or ".s", "[2]", "{k}" parts) */
	ENG_SEL_NULL, ENG_SEL_INT, ENG_SEL_FLOAT, ENG_SEL_STRING,
	ENG_SEL_ID,       /* the document id, or its part op (enum eng_sel_idpart) */
	ENG_SEL_NOW,      /* now(): seconds since the epoch */
	ENG_SEL_ARITH,    /* a op b, op one of + - * / % */
	ENG_SEL_FUNC,     /* a.lowercase() (op 'l') or a.abs() (op 'a') */
};

enum eng_sel_op { ENG_SEL_EQ = 1, ENG_SEL_NE, ENG_SEL_LT, ENG_SEL_LE, ENG_SEL_GT, ENG_SEL_GE,
                  ENG_SEL_GLOB, ENG_SEL_REGEX };
enum eng_sel_idpart { ENG_SEL_ID_ALL = 0, ENG_SEL_ID_SCHEME, ENG_SEL_ID_NAMESPACE,
                      ENG_SEL_ID_TYPE, ENG_SEL_ID_SPECIFIC, ENG_SEL_ID_USER, ENG_SEL_ID_GROUP };

struct eng_sel_node {
	int kind;                    /* enum eng_sel_kind */
	int op;                      /* CMP: enum eng_sel_op; ARITH: the character; ID: the part */
	int col;                     /* where it begins in the text, from 1 */
	struct eng_sel_node *a, *b;  /* operands (NOT, FUNC: a only) */
	int64_t i;                   /* INT */
	double d;                    /* FLOAT */
	const char *s;               /* STRING: its bytes (escapes resolved); FIELD: path */
	size_t n;                    /* STRING: length */
	struct eng_doctype *dt;      /* DOCTYPE, FIELD */
	int fi;                      /* FIELD */
	regex_t *re;                 /* CMP =~ with a string on the right: compiled once */
	struct eng_sel_node *re_next; /* the next node with a regex */
};

/* A parsed selection: its tree, all in one arena. */
struct eng_sel {
	struct eng_sel_node *root;
	struct base_arena arena;     /* the nodes and their strings */
	struct eng_sel_node *regexes; /* the nodes whose regexes eng_sel_free frees */
};

/* Parse text, a document selection, against db's document types into a
 * new *out (eng_sel_free).  what names the text in messages ("condition",
 * "selection"): "what:1:COL: why".  Returns 0, STRATA_PARSE (syntax, a
 * bad regular expression, a value where a condition belongs),
 * STRATA_INVALID_ARGUMENT (an unknown document type or field),
 * STRATA_NOT_IMPLEMENTED (hash(), version(), an imported field) or
 * STRATA_NOMEM. */
int eng_sel_parse(struct strata *db, const char *text, const char *what, struct eng_sel **out,
                  struct strata_error *err);
void eng_sel_free(struct eng_sel *s);
/* Whether the document id of type dt, whose values vals (dt->nfields,
 * as store_get reads them) are, matches s: *match is 1 or 0 (an invalid
 * result does not match).  Returns 0 or STRATA_NOMEM. */
int eng_sel_eval(const struct eng_sel *s, const struct eng_doctype *dt, const char *id,
                 const struct store_value *vals, int *match, struct strata_error *err);
/* Test-and-set: whether an operation on document id (of type dt) whose
 * condition is cond may be applied, judged on the document as write
 * transaction w holds it.  A missing document fails the condition unless
 * create is 1 (a put or update with "create": true), which ignores it.
 * Returns 0 (go on), STRATA_CONDITION_FAILED ("condition 'c' did not match
 * document 'id'", or "document 'id' does not exist"), eng_sel_parse's
 * errors ("condition:1:COL: ..."), STRATA_NOMEM or a store error (w
 * failed).  Writes nothing. */
int eng_sel_condition(struct strata *db, struct store_txn *w, struct eng_doctype *dt,
                      const char *id, const char *cond, int create, struct strata_error *err);

#endif
