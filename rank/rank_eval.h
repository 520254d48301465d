/*
 * rank_eval.h: the evaluation back end of rank/ (fn.c, compile_base.c,
 * compile.c, compile_tensor.c, compile_feature.c, gbdt.c, explain.c,
 * literal.c, vm.c, tensor.c, dot.c, dot_avx512.c, firstdot.c, tensor_sparse.c, model.c, query.c, nearest.c, profile.c,
 * app.c), private to those
 * files and to the tests that look inside it.
 *
 * A profile compiles to a set of flat programs (struct rank_prog) sharing
 * one table of value types; vm.c runs them over one document at a time with
 * temporaries in the query's arena.  Model inputs are programs too (their
 * source expression), so a model input fed by attribute(f) is a single load
 * that hands the stored cells to the runtime in place.
 *
 * Who uses whom (one way): app.c loads, then compiles (compile.c) and makes
 * the query pools (query.c); query.c runs the phases on the VM (vm.c) and
 * the models (model.c); model.c runs model inputs on the VM; the VM reads
 * model outputs only through the query's model_value; compile.c uses
 * compile_tensor.c, both compile_base.c, and the tensor constructs
 * literal.c; compile.c has gbdt.c turn tree models into expressions; the
 * VM uses tensor_sparse.c, which uses tensor.c.  fn.c uses nothing of
 * rank/, tensor.c only type.c's helpers; profile.c only reads.
 */
#ifndef RANK_EVAL_H
#define RANK_EVAL_H

#include <pthread.h>

#include "rank_int.h"

struct rt_model;
struct rt_ctx;

/*
 * The opcodes.  Operands not listed are unused; t is the type index of the
 * pushed value.
 *
 * NUM        k                 push the number k
 * ATTR       a=field           push attribute a of the document (number, or
 *                              its stored cells in place; zeros when missing;
 *                              t mapped: an array or weighted set read as
 *                              a tensor too)
 * QUERY      a=input           push query(a) (number, or its double cells)
 * CONST      a=constant        push constant a (t mapped: its blocks)
 * FIRST                        push the document's first-phase score
 * GET        a=local           push local a
 * SET        a=local           pop into local a
 * UN         a=fn              pop number x, push fn(x) (a unary enum rank_fn)
 * BIN        a=fn              pop y, pop x, push fn(x, y) (enum rank_binop or a
 *                              binary enum rank_fn)
 * JUMPF      a=pc              pop a number; jump to a when it is 0
 * JUMP       a=pc              jump to a
 * RET                          end of a program or a lambda: the value on top
 *                              is the result
 * MAP        a=lambda pc|-1, b=local, c=fn1, d=operand type
 *                              pop tensor, push each cell through the lambda
 *                              (its parameter in local b) or through fn1 c
 * JOIN       a=lambda pc|-1, b=local, c=fn2, d=type of x, e=type of y
 *                              pop y, pop x, join them by dimension name
 *                              (lambda parameters in locals b and b+1)
 * REDUCE     a=enum rank_agg, d=operand type
 *                              pop tensor, aggregate over the dims t lacks
 * DOT        d=operand type    pop y, pop x (same type): push sum(x * y),
 *                              reading both in place
 * CLOSE      a=field|-1, b=1 for distance, 0 for closeness, c=label
 *                              push closeness/distance of attribute a to the
 *                              query's nearestNeighbor tensor; a -1: of the
 *                              field of the item labelled the profile's
 *                              label c (none: distance +inf, closeness 0);
 *                              b=2: closest(field[, label]), the tensor t
 *                              (the field's mapped dimension) holding 1 at
 *                              the label of the nearest vector (none: empty)
 * ONNX       a=model, b=output push the model output for the document
 * CONCAT     a=dim of t, d=type of x, e=type of y
 *                              pop y, pop x, push x's cells then y's along
 *                              dimension a of t
 * LIT        a=literal, b=n    pop n computed cells, push the profile's
 *                              tensor literal a with them filled in
 * GEN        a=lambda pc, b=local
 *                              push a tensor of type t, each cell the
 *                              lambda of its indices (locals b, b+1, ...)
 * SMAP, SJOIN, SREDUCE         MAP, JOIN, REDUCE where a type involved has
 *                              mapped dimensions (values are struct
 *                              rank_sparse; tensor_sparse.c)
 * SMERGE     as SJOIN          pop y, pop x (same dimensions): every cell of
 *                              either, through the lambda or fn2 c where
 *                              both have it
 * SCONCAT    as CONCAT         CONCAT where a type has mapped dimensions
 * PEEK       a=address, b=n, d=operand type
 *                              pop the n computed labels of address a
 *                              (the profile's peeks), pop a tensor, push
 *                              its slice at the address
 * NORM       a=normalizer      push the value of the profile's normalizer a
 *                              for the current global-phase candidate (its
 *                              argument's value normalized over all of them)
 * TEXT       a=enum rank_text_feature, b=field
 *                              push the text feature of field b for the
 *                              document (rank_docs.text; 0 without it)
 * UNPACK     a=1 little endian, b=dim of t, d=operand type
 *                              pop a tensor of int8 cells, push the bits of
 *                              each cell along dimension b (unpack_bits)
 * NOW                          push the query's time (rank_query_set_now)
 * RANDOM     a=1 stable, k=salt
 *                              push a pseudorandom number in [0, 1) of the
 *                              document, the salt and the query's seed
 *                              (a: the fixed seed 1024, as random.match)
 * TERM       a=enum rank_term_feature, b=field|-1, c=term|-1
 *                              push the term feature for the document
 *                              (rank_docs.term; 0 without it); t of
 *                              type tensor(term{}): a cell per query term
 *                              whose value is not NaN, labelled by number
 * TOP        d=operand type    pop a tensor (mapped dimensions only), pop
 *                              n: push its n cells of the largest values
 *                              (top; ties: the earlier cell, NaN last)
 */
enum rank_opcode {
	RANK_OP_NUM = 1, RANK_OP_ATTR, RANK_OP_QUERY, RANK_OP_CONST, RANK_OP_FIRST, RANK_OP_GET,
	RANK_OP_SET, RANK_OP_UN, RANK_OP_BIN, RANK_OP_JUMPF, RANK_OP_JUMP, RANK_OP_RET, RANK_OP_MAP,
	RANK_OP_JOIN, RANK_OP_REDUCE, RANK_OP_DOT, RANK_OP_CLOSE, RANK_OP_ONNX, RANK_OP_CONCAT,
	RANK_OP_LIT, RANK_OP_GEN, RANK_OP_SMAP, RANK_OP_SJOIN, RANK_OP_SREDUCE,
	RANK_OP_SMERGE, RANK_OP_PEEK, RANK_OP_SCONCAT, RANK_OP_NORM, RANK_OP_TEXT,
	RANK_OP_NOW, RANK_OP_TERM, RANK_OP_RANDOM, RANK_OP_UNPACK, RANK_OP_TOP,
	RANK_OP_COUNT_
};

/* vm.c: the opcode's name ("NUM", "ONNX"), "?" for none. */
const char *rank_op_name(int op);

/* fn.c: the scalar functions instructions name.  UN and MAP take a unary
 * id; BIN and JOIN take an enum rank_binop or a binary id (from
 * RANK_FN_MIN on, beyond every rank_binop). */
enum rank_fn {
	RANK_FN_NEG = 1, RANK_FN_NOT, RANK_FN_EXP, RANK_FN_LOG, RANK_FN_LOG10, RANK_FN_SQRT,
	RANK_FN_TANH, RANK_FN_SIGMOID, RANK_FN_RELU, RANK_FN_FABS, RANK_FN_FLOOR, RANK_FN_CEIL,
	RANK_FN_SIN, RANK_FN_COS, RANK_FN_ISNAN, RANK_FN_TAN, RANK_FN_ACOS, RANK_FN_ASIN,
	RANK_FN_ATAN, RANK_FN_COSH, RANK_FN_SINH, RANK_FN_ELU, RANK_FN_ROUND, RANK_FN_SIGN,
	RANK_FN_SQUARE, RANK_FN_ERF,
	RANK_FN_TO_FLOAT, RANK_FN_TO_BFLOAT16, RANK_FN_TO_INT8, /* cell_cast's roundings */
	RANK_FN_MIN = 32, RANK_FN_MAX, RANK_FN_ATAN2, RANK_FN_FMOD, RANK_FN_POW, RANK_FN_LDEXP,
	RANK_FN_BIT, RANK_FN_HAMMING,
};
/* The unary (binary) function an expression calls by name ("exp", "atan2"):
 * its id, or 0 when name is none. */
int rank_fn_unary(const char *name);
int rank_fn_binary(const char *name);
/* The name of function fn, unary or binary ("exp", "+", "atan2"; "?" for
 * an unknown id), for EXPLAIN. */
const char *rank_fn_name(int fn, int is_binary);
/* Apply unary (binary) function fn; an unknown id is a bug and aborts. */
double rank_fn1(int fn, double x);
double rank_fn2(int fn, double x, double y);

/* One instruction: see enum rank_opcode for a..e, t and k. */
struct rank_ins {
	int op;
	int a, b, c, d, e;
	int t;        /* type index of the value the instruction pushes, -1 none */
	double k;
};

struct rank_prog {
	char *name;           /* "first-phase", a feature's text, "model m input x" */
	struct rank_ins *code;
	int ncode, capcode;
	int nlocals;
	int result;           /* type index of the result */
	int doc_dependent;    /* reads the document (attributes, models, firstPhase) */
};

/* A model as one profile uses it. */
struct rank_cmodel {
	const struct rank_model_decl *decl;
	const struct rt_model *rt;   /* owned by the app */
	int state;                   /* 0 unused, 1 compiling, 2 compiled */
	int nin, nout;
	struct rank_prog *src;       /* per model input: the source expression */
	int *extra;                  /* per input: 1 if it adds a leading symbolic dim */
	int *out_type;               /* per output: type index (per document) */
	size_t *out_cells;           /* per output: cells per document */
	int batched;                 /* second phase may run it once for all candidates */
};

/* A cross-hit normalizer of the global phase: normalize_linear(arg) or
 * reciprocal_rank(arg, k) (reciprocal_rank_fusion(a, b) is the sum of one
 * per argument).  arg is a program of its own, run for every candidate
 * before the global-phase program, which reads the results through NORM. */
enum rank_norm_kind { RANK_NORM_LINEAR = 1, RANK_NORM_RECIPROCAL };
struct rank_norm {
	int kind;
	double k;                    /* RECIPROCAL: 1 / (k + rank) */
	struct rank_prog arg;
};

struct rank_schema;
struct rank_qpool;

struct rank_profile {
	const struct rank_schema *schema;
	const struct rank_sd *sd;
	const struct rank_profile_decl *decl;
	struct base_arena pool;      /* types and names made by the compiler */
	struct rank_type *types;
	int ntypes, captypes;
	struct rank_prog first, second, global;
	int has_first, has_second, has_global;
	int nnorms;                  /* the global phase's normalizers */
	struct rank_norm *norms;
	int global_rerank;           /* global-phase rerank-count (100 by default) */
	struct rank_bm25 *bm25;      /* bm25's parameters per field (props.c), in pool; NULL
	                                when the profile sets none (the defaults hold) */
	int *elem_gap;               /* rank f { element-gap } per field (props.c), in pool, -1
	                                infinity; NULL when the profile sets none */
	int nmatch, nsummary;
	struct rank_prog *match, *summary;
	int nmodels;                 /* profile-level, then schema-level models */
	struct rank_cmodel *models;
	int ninputs;
	struct rank_input_info *inputs;
	int nconsts;                 /* constants visible to the profile */
	const struct rank_constant_decl **consts;
	int rerank;
	struct rank_qpool *qpool;    /* its retired queries (query.c); NULL: none kept */
	int nlits, caplits;          /* tensor literals of expressions (LIT), in pool */
	struct rank_lit *lits;
	int npeeks, cappeeks;        /* addresses of slices (PEEK), in pool */
	const struct rank_peek **peeks;
	int nlabels, caplabels;      /* the labels of query items (nearestNeighbor, dotProduct,
	                                wand) that closeness(label, l), distance(label, l)
	                                (CLOSE) and itemRawScore(l) name (rank_cc_label), in pool */
	const char **labels;
};

struct rank_schema {
	struct rank_sd *sd;
	int nprofiles;
	struct rank_profile *profiles;
	struct rank_qpool *qpools;   /* nprofiles, once every profile compiled */
};

/* The retired queries of one profile, which rank_query_new takes back
 * (query.c): a stack, the most recently retired on top, linked through
 * struct rank_query's next, of at most keep queries: all that rank/ changes
 * in a loaded application, under lock.  A retired query keeps every buffer
 * it grew (value stack, arena blocks, input cells, model buffers and
 * caches) but not its runtime contexts, which runtime_ctx_free hands to
 * the model's own pool, shared by every profile that uses the model. */
struct rank_qpool {
	pthread_mutex_t lock;
	int keep;                    /* rank_app_set_query_pool; 1 by default */
	int n;
	struct rank_query *top;
};

/* The models an application loaded, one entry per onnx-model block of its
 * schemas (profile-level blocks and inherited copies included).  app.c
 * loads them all before any profile compiles; the compiler only looks a
 * block's model up here. */
struct rank_model_ref {
	const struct rank_model_decl *decl;
	const struct rt_model *rt;   /* owned by the application */
};
struct rank_models {
	int n;
	const struct rank_model_ref *refs;
	const struct rank_loader *loader; /* its parse_json reads tree models; NULL: none */
};

/* compile.c.  Compile profile declaration d of schema s into p, its models
 * taken from models (NULL: none loaded, and an onnx() feature or a
 * profile-level onnx-model block is STRATA_NOT_FOUND).  Returns 0,
 * STRATA_TYPE, STRATA_NOT_IMPLEMENTED, STRATA_LIMIT, STRATA_NOT_FOUND,
 * STRATA_NOMEM, with "file:line:col: " in front of the message where the
 * error has a position.  On failure p is left for rank_profile_release. */
int rank_profile_compile(struct rank_profile *p, const struct rank_schema *s,
                         const struct rank_profile_decl *d, const struct rank_models *models,
                         struct strata_error *err);
/* profile.c: fill has_default and required of p's inputs (rank.h) from
 * its compiled programs; app.c calls it once p compiled. */
void rank_profile_mark_inputs(struct rank_profile *p);
/* Free what rank_profile_compile made in p, compiled or half-made, and
 * zero it. */
void rank_profile_release(struct rank_profile *p);
/* Compile one standalone expression against profile p into prog (tests),
 * with no model loaded.  Errors as rank_profile_compile; free prog with
 * rank_prog_release either way. */
int rank_expr_compile(struct rank_profile *p, const struct rank_ast *a, struct rank_prog *prog,
                      struct strata_error *err);
/* compile_base.c: base_err() with "file:line:col: " of pos in front. */
int rank_pos_err(struct strata_error *err, const struct rank_pos *pos, int code,
                 const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* literal.c.  The type of tensor literal or generator a (its dimension
 * names in p's pool).  Returns 0, STRATA_PARSE, STRATA_NOMEM. */
int rank_literal_type(struct rank_profile *p, const struct rank_ast *a, struct rank_type *ty,
                      struct strata_error *err);
struct rank_lit;
/* 1 if literal cell v is a constant expression of numbers. */
int rank_literal_const(const struct rank_ast *v);
/* Literal a, made in p's pool, and its type.  Returns 0, STRATA_TYPE (a
 * bad address, a cell given twice, a wrong count), STRATA_NOMEM; the
 * messages carry a's position. */
int rank_literal_make(struct rank_profile *p, const struct rank_ast *a, struct rank_type *ty,
                      struct rank_lit *lit, struct strata_error *err);
/* Free prog's code and name and zero it. */
void rank_prog_release(struct rank_prog *prog);

/* vm.c: a value on the VM stack.  Numbers live in num (cells == &num is not
 * used); tensors point at their cells, typed cell (BASE_DT_*); a tensor
 * whose type has mapped dimensions points at a struct rank_sparse (cell
 * BASE_DT_UNDEFINED). */
struct rank_val {
	const void *cells;
	double num;
	int cell;
};

/* A tensor literal: its value with every constant cell, and where the
 * ndyn computed cells go (indices into its ncells cells, in the order of
 * the literal's values that are not constant). */
struct rank_lit {
	struct rank_val v;
	size_t ncells;
	int ndyn;
	const size_t *where;
};


/* The address of a slice t{x:1,k:a,...}: n of the operand type's
 * dimensions, each given a label (mapped) or an index (indexed), or
 * computed: then the next of the values PEEK pops holds it. */
struct rank_peek {
	int n;
	int dim[RANK_MAX_RANK];          /* index in the operand type */
	int computed[RANK_MAX_RANK];
	const char *label[RANK_MAX_RANK];
	int64_t index[RANK_MAX_RANK];
};

/* tensor_sparse.c: the algebra where a type has mapped dimensions.  Values
 * of types without mapped dimensions are read as one block; results go to
 * *out as a struct rank_sparse when tr has mapped dimensions, else as dense
 * double cells (a number when tr has rank 0), all in arena memory.  Each
 * returns 0 or STRATA_NOMEM. */
int rank_sparse_map(struct base_arena *a, const struct rank_type *t, struct rank_val v,
                    double (*fn)(void *ud, double x, double y), void *ud, struct rank_val *out);
int rank_sparse_join(struct base_arena *a, const struct rank_type *ta, struct rank_val va,
                     const struct rank_type *tb, struct rank_val vb, const struct rank_type *tr,
                     double (*fn)(void *ud, double x, double y), void *ud, struct rank_val *out);
int rank_sparse_reduce(struct base_arena *a, const struct rank_type *ti, struct rank_val v,
                       const struct rank_type *tr, int agg, struct rank_val *out);
/* The slice of v (type ti) at address pk, labels and indices given in
 * label[] and index[] (per entry of pk), of type tr (ti without the
 * addressed dimensions); cells the address misses are absent (0 in a
 * dense result). */
int rank_sparse_peek(struct base_arena *a, const struct rank_type *ti, struct rank_val v,
                     const struct rank_type *tr, const struct rank_peek *pk,
                     const char *const *label, const int64_t *index, struct rank_val *out);
/* concat along dimension dim of tr (an indexed one): the blocks that
 * agree on their shared mapped dimensions, their subspaces concatenated. */
int rank_sparse_concat(struct base_arena *a, const struct rank_type *ta, struct rank_val va,
                       const struct rank_type *tb, struct rank_val vb, const struct rank_type *tr,
                       int dim, struct rank_val *out);
/* merge: the cells of va and vb (types of the same dimensions), fn(x, y)
 * where both have a cell. */
int rank_sparse_merge(struct base_arena *a, const struct rank_type *ta, struct rank_val va,
                      const struct rank_type *tb, struct rank_val vb, const struct rank_type *tr,
                      double (*fn)(void *ud, double x, double y), void *ud, struct rank_val *out);
/* unpack_bits: each cell of v (type ti, int8 values) as 8 cells of 0 or 1
 * along indexed dimension dim of tr, which has 8 times its size in ti:
 * the most significant bit first, or the least when little. */
int rank_sparse_unpack_bits(struct base_arena *a, const struct rank_type *ti, struct rank_val v,
                            const struct rank_type *tr, int dim, int little,
                            struct rank_val *out);
/* top: the n cells of v (type t, mapped dimensions only) of the largest
 * values, in v's order; of equal values the earlier, NaN below every
 * number.  n <= 0 (or NaN) keeps none. */
int rank_sparse_top(struct base_arena *a, const struct rank_type *t, struct rank_val v, double n,
                    struct rank_val *out);
/* props.c: when rank property i of compiled profile p (p->decl->fprops)
 * changes nothing (bm25(f) of a name that is no field with a text index),
 * 1 with the line that says so in buf ("file:line:col: rank property ...
 * changes nothing: ..."), else 0. */
int rank_fprop_notice(const struct rank_profile *p, int i, char *buf, size_t n);
/* Run prog (compiled for q's profile) for q's current document, on a frame
 * at the top of q's value stack.  *out is valid until the query's arena is
 * reset (the next document).  Returns 0, STRATA_NOMEM, or what a model's
 * evaluation returned (STRATA_RUNTIME, ...). */
int rank_vm_run(struct rank_query *q, const struct rank_prog *prog, struct rank_val *out,
                struct strata_error *err);

/* tensor.c: dense algebra over rank_types with cells of any BASE_DT_*.
 * Results are double cells in arena memory. */
/* Cell i of cells, of type cell, as a double. */
double rank_cell(int cell, const void *cells, size_t i);
/* fn(ud, x, y) over the cells of va (type ta) and vb (tb) matched by
 * dimension name, into *out of type tr (the union of their dimensions).
 * Returns 0 or STRATA_NOMEM (the arena). */
int rank_tensor_join(struct base_arena *a, const struct rank_type *ta, struct rank_val va,
                     const struct rank_type *tb, struct rank_val vb, const struct rank_type *tr,
                     double (*fn)(void *ud, double x, double y), void *ud, double **out);
/* Aggregate v (type ti) by agg (enum rank_agg) over the dimensions tr lacks,
 * into *out of type tr.  Returns 0 or STRATA_NOMEM (the arena). */
int rank_tensor_reduce(struct base_arena *a, const struct rank_type *ti, struct rank_val v,
                       const struct rank_type *tr, int agg, double **out);
/* concat: va (type ta) then vb (tb) along dimension dim of tr, into *out of
 * type tr (a side without that dimension has size 1 there).  Returns 0 or
 * STRATA_NOMEM (the arena). */
int rank_tensor_concat(struct base_arena *a, const struct rank_type *ta, struct rank_val va,
                       const struct rank_type *tb, struct rank_val vb, const struct rank_type *tr,
                       int dim, double **out);
/* sum(a[i] * b[i]) over n cells of types ca and cb, read in place. */
double rank_tensor_dot(int ca, const void *a, int cb, const void *b, size_t n);
/* dot.c: out[r] = rank_tensor_dot(cell, rows[r], BASE_DT_DOUBLE, q, n), the
 * same bits, for r < nrows, in SIMD: the AVX-512 kernels when avx512 (the
 * value of rank_dot_avx512()), else AVX2.  cell is one rank_dot_cell_ok()
 * accepts; rows and q are read in place, unaligned. */
void rank_dot_rows(int avx512, int cell, const void *const *rows, size_t nrows, const double *q,
                   size_t n, double *out);
/* 1 when rank_dot_rows reads cells of type cell: float, double, bfloat16
 * and int8. */
int rank_dot_cell_ok(int cell);
/* 1 when this machine runs the AVX-512 kernels and STRATA_CPU is not
 * "avx2". */
int rank_dot_avx512(void);
/* What tensor.c, dot.c and dot_avx512.c share: the eight sums'
 * combination, and the cells i..n past the last whole group of eight added
 * to them (inline: the kernels call them once per row). */
static inline double rank_dot_combine(const double p[8])
{
	return ((p[0] + p[4]) + (p[2] + p[6])) + ((p[1] + p[5]) + (p[3] + p[7]));
}
static inline void rank_dot_tail(int cell, const void *row, const double *q, size_t i, size_t n,
                                 double p[8])
{
	for (int k = 0; i < n; i++, k++)
		p[k] += rank_cell(cell, row, i) * q[i];
}
/* firstdot.c: a first phase that is sum(query(q) * attribute(f)) over a
 * dense tensor field f (cells rank_dot_cell_ok() reads), run a block at a
 * time through rank_dot_rows. */
struct rank_first_dot {
	int field, input, cell;
	size_t n;                    /* cells */
};
/* 1 and *out filled when p's first phase has that shape, else 0. */
int rank_first_dot_shape(const struct rank_profile *p, struct rank_first_dot *out);
/* The first phase's scores of lids[0..m) (m at most RANK_FIRST_DOT_CHUNK)
 * as the VM gives them, to the bit, for the documents that have the field;
 * returns the others (bit i for lids[i]), whose scores are left for the VM. */
#define RANK_FIRST_DOT_CHUNK 64
uint64_t rank_first_dot_run(const struct rank_query *q, const struct rank_first_dot *s,
                            const struct rank_docs *d, const uint32_t *lids, size_t m,
                            double *scores);
/* dot_avx512.c: rank_dot_rows's AVX-512 kernel, one row. */
double rank_dot_row_avx512(int cell, const void *row, const double *q, size_t n);
/* The distance of a to b (n cells each) in metric (enum rank_distance). */
double rank_tensor_distance(int metric, int ca, const void *a, int cb, const void *b, size_t n);
/* closeness() for a distance in metric: 0 for +inf (no value). */
double rank_closeness_of(int metric, double distance);
/* The nearestNeighbor distance of field value v (fd's: the cells of a
 * dense tensor, or a multi-vector field's struct rank_sparse) to the n
 * query cells q, in fd's metric: +inf for NULL or no vectors; a
 * multi-vector value's is that of its nearest vector, whose block goes to
 * *best (may be NULL; SIZE_MAX when none). (nearest.c) */
double rank_field_nn_distance(const struct rank_field *fd, const void *v, const double *q,
                              size_t n, size_t *best);

enum rank_agg { RANK_AGG_SUM = 1, RANK_AGG_AVG, RANK_AGG_MAX, RANK_AGG_MIN, RANK_AGG_PROD,
                RANK_AGG_COUNT };

/* The query state vm.c and model.c share with query.c. */
struct rank_qmodel {
	struct rt_ctx *cx;
	struct rt_tensor *in, *out;  /* nin, nout */
	void **conv;                 /* per input: pooled conversion / stacking buffer */
	size_t *conv_cap;            /* bytes */
	long serial;                 /* doc evaluation whose outputs in out[] are current */
	/* second-phase cache: per output, n candidates' slices (raw cells) */
	void **cache;
	size_t *cache_cap;
	uint32_t *cache_lids;
	uint8_t *cache_ok;           /* per candidate: its slices are filled */
	size_t cache_n, cache_lids_cap;
};

/* How the VM's ONNX instruction reads output `out` of model m for the
 * query's current document (model.c's rank_model_value): the VM knows
 * models only through it, and model.c runs their inputs on the VM. */
typedef int rank_model_value_fn(struct rank_query *q, int m, int out, struct rank_val *v,
                                struct strata_error *err);

struct rank_query {
	const struct rank_profile *p;
	rank_model_value_fn *model_value;
	struct base_arena arena;     /* temporaries of one document */
	double **inputs;             /* per profile input: ncells values */
	int *nn_input;               /* per field: query input of nearestNeighbor, -1 */
	struct rank_val *stack;      /* shared by all programs (see vm.c) */
	size_t nstack, top;
	size_t nslots;               /* of the stack, what the profile's programs need */
	struct rank_qmodel *models;  /* per profile model */
	const struct rank_docs *docs;
	uint32_t lid;
	double first;
	double now;                  /* the `now` feature (rank_query_set_now) */
	uint64_t seed;               /* random's: the clock's microseconds at the query */
	/* the nearestNeighbor items' labels (in in_arena) and their fields */
	const char *nn_labels[RANK_MAX_NN];
	int nn_label_fields[RANK_MAX_NN];
	int nnn_labels;
	long serial;                 /* bumped per document evaluation */
	long cand;                   /* candidate index during second phase, else -1 */
	int ncand_lookup;            /* features: look model outputs up in the cache */
	size_t gcand;                /* global phase: the candidate NORM reads */
	size_t norm_n;               /* global phase: candidates per normalizer */
	const double *norm_read;     /* the normalized values NORM reads (nnorms x norm_n) */
	double *norm_vals;           /* this query's own, for rank_query_global_phase */
	size_t norm_cap;             /* doubles */
	size_t *norm_order;          /* reciprocal_rank's sort of the candidates */
	size_t order_cap;
	int *given;                  /* per profile input: set by the query */
	struct rank_sparse *sparse;  /* per profile input: the value of one with
	                                mapped dimensions (empty until given) */
	struct base_arena in_arena;  /* labels and cells of those values */
	const char **term_labels;    /* "0", "1", ...: tensor(term{}) labels, in in_arena */
	int nterm_labels;
	struct rank_query *next;     /* retired: the one below it in its profile's pool */
};

/* query.c: the pools of retired queries.  One pool per profile of s, each
 * keeping one query, and each profile pointed at its own.  Returns 0,
 * STRATA_NOMEM, or an errno (a mutex that would not initialize). */
int rank_qpools_init(struct rank_schema *s, struct strata_error *err);
/* Free s's pools and every query retired into them.  No query of s may be
 * live.  Nothing happens when s has no pools. */
void rank_qpools_free(struct rank_schema *s);
/* From now on keep at most n retired queries in pl; those beyond n are
 * freed now. */
void rank_qpool_keep(struct rank_qpool *pl, int n);

/* model.c.  Output `out` of profile model m for q's current document, in
 * *v (cells valid until the model runs again, or for a cached candidate
 * until the next second phase): from the second-phase cache when it holds
 * the document, else from a run of the model, which its inputs' programs
 * feed.  Returns 0, STRATA_RUNTIME ("onnx model 'm': ..."), STRATA_LIMIT
 * (a pooled buffer past 1 GiB), STRATA_NOMEM. */
int rank_model_value(struct rank_query *q, int m, int out, struct rank_val *v,
                     struct strata_error *err);
/* Run batched model m once for the n candidates lids (first-phase scores
 * first, may be NULL), their rows stacked, and fill its second-phase cache
 * (rank_model_cache_begin ran for them).  Errors as rank_model_value. */
int rank_model_batch(struct rank_query *q, int m, const uint32_t *lids, const double *first,
                     size_t n, struct strata_error *err);
/* Prepare every model's second-phase cache for these candidates. */
int rank_model_cache_begin(struct rank_query *q, const uint32_t *lids, size_t n,
                           struct strata_error *err);
/* Set up the state of profile model m in new query q: its tables and a
 * runtime context.  Returns 0, STRATA_NOMEM, or the runtime's error; on
 * failure rank_qmodel_release frees what was made. */
int rank_qmodel_init(struct rank_query *q, int m, struct strata_error *err);
/* Free the state of model m in q (context, buffers, caches), whole or
 * half-made, and zero it. */
void rank_qmodel_release(struct rank_query *q, int m);
/* A retired query: its runtime context goes back to the runtime (cx NULL),
 * its buffers stay.  Taken back: a context again, nothing cached. */
void rank_qmodel_retire(struct rank_query *q, int m);
int rank_qmodel_reuse(struct rank_query *q, int m, struct strata_error *err);
/* gbdt.c: a LightGBM or XGBoost model, read for one lightgbm("f.json") or
 * xgboost("f.json") call of a profile, as an expression over its features:
 * body names feature i by names[i]; features[i] is that name parsed as an
 * expression (positioned at the call).  compile.c evaluates each feature
 * once into a local and binds the names to them. */
struct rank_gbdt {
	int nfeatures, capfeatures;
	char **names;
	struct rank_ast **features;
	struct rank_ast *body;
	struct base_arena arena;      /* body and names */
};
/* Read the model file that call (lightgbm("f") or xgboost("f")) names, from
 * the models folder beside the schemas folder of sdfile.  Returns 0 and
 * *out (rank_gbdt_free), or STRATA_TYPE (a bad call or feature name),
 * STRATA_NOT_FOUND (no such file), STRATA_PARSE (not JSON: "model
 * file:line:col: ..."; not a model dump), STRATA_NOT_IMPLEMENTED
 * (multiclass, unsupported splits), STRATA_LIMIT, STRATA_NOMEM; other
 * messages begin with the call's "file:line:col: ".  The file is parsed by
 * loader's parse_json when there is one (loader may be NULL), else by
 * json_loadb. */
int rank_gbdt_load(const char *sdfile, const struct rank_ast *call,
                   const struct rank_loader *loader, struct rank_gbdt **out,
                   struct strata_error *err);
void rank_gbdt_free(struct rank_gbdt *g);

/* query.c: evaluate prog (compiled with rank_expr_compile against q's profile)
 * for document lid; the result lives until the next evaluation (tests). */
int rank_query_eval(struct rank_query *q, const struct rank_prog *prog, const struct rank_docs *d,
                    uint32_t lid, double first, struct rank_val *out, struct strata_error *err);

#endif
