/*
 * rank_compile.h: the compile state that compile_base.c, compile.c and
 * compile_tensor.c share (private to those files).  compile_base.c holds
 * errors, the type table and emission; compile.c features, calls, programs
 * and models; compile_tensor.c the tensor constructs compile.c dispatches
 * to, which compile inner expressions through the state's compile.  Every
 * helper reports through the state's error with "file:line:col: " of the
 * node it names.
 */
#ifndef RANK_COMPILE_H
#define RANK_COMPILE_H

#include "rank_eval.h"

/* Names bound while compiling: function parameters and lambda parameters. */
struct env {
	const struct env *up;
	const struct rank_function_decl *fn; /* the function whose body this is, or NULL */
	int lambda;                          /* a lambda body: only its parameters are visible */
	int n;
	char *const *names;
	const int *locals;
	const int *types;
	struct rank_ast *const *args; /* a function's: the arguments of the call (names
	                                 that must be known while compiling, such as
	                                 term numbers, are read through them), or NULL */
};

struct cc {
	struct rank_profile *p;
	const struct rank_models *models;
	struct rank_prog *prog;
	struct strata_error *err;
	int allow_first; /* firstPhase is valid here */
	int too_long;    /* emit failed at MAX_CODE, not for want of memory */
	int global;      /* 1: the global phase (normalizers allowed); 2: a normalizer's argument */
	/* rank_cc_compile: how compile_base.c and compile_tensor.c compile
	 * the expressions inside theirs */
	int (*compile)(struct cc *c, const struct env *env, const struct rank_ast *a, int *type);
};

#define MAX_CODE (1 << 20) /* instructions in one program */

/* The type at index t of the profile's table. */
static inline const struct rank_type *T(struct cc *c, int t)
{
	return &c->p->types[t];
}

/* Type t has mapped dimensions: its values take the S* instructions. */
static inline int mapped(struct cc *c, int t)
{
	return rank_type_mapped(T(c, t)) > 0;
}

/* compile_base.c.  An error at a's position; returns code. */
int rank_cc_at(struct cc *c, const struct rank_ast *a, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* STRATA_NOMEM for the profile being compiled, or STRATA_LIMIT when the
 * last emit failed because the program reached MAX_CODE instructions. */
int rank_cc_nomem(struct cc *c);
/* A copy of s in the profile's pool (a dimension name a type keeps); NULL
 * when memory runs out. */
char *rank_cc_pool_str(struct cc *c, const char *s);
/* Add t (borrowed names) to p's type table; its index, or -1 (no memory). */
int rank_cc_add_type(struct rank_profile *p, const struct rank_type *t);
/* Emit one instruction; its index, or -1 (no memory, or MAX_CODE reached:
 * rank_cc_nomem tells which). */
int rank_cc_emit(struct cc *c, int op, int a, int b, int cc_, int d, int e, int t, double k);
#define EMIT(c, ...) do { if (rank_cc_emit(c, __VA_ARGS__) < 0) return rank_cc_nomem(c); } while (0)
/* The type of join(x, y) (dimensions by name), and its cell type. */
int rank_cc_join_type(struct cc *c, const struct rank_ast *a, int tx, int ty, int *tr);
int rank_cc_join_cell(const struct rank_type *x, const struct rank_type *y);
/* t for a message: "double" for any number. */
const char *rank_cc_type_str(const struct rank_type *t, char *buf, size_t n);
/* Emit fn1 over the value on top of the stack, of type t. */
int rank_cc_emit_un(struct cc *c, int fn, int t, int *tr);
/* A new local of the program. */
int rank_cc_new_local(struct cc *c);
/* STRATA_TYPE "expected what" unless a is a name or string. */
int rank_cc_name_arg(struct cc *c, const struct rank_ast *a, const char *what);
/* The dimension names args[from..nargs) of a. */
int rank_cc_dim_args(struct cc *c, const struct rank_ast *a, int from, char **names, int *n);
/* Emit lambda lam of nparams parameters (jumped over); its entry and the
 * first of its locals. */
int rank_cc_lambda(struct cc *c, const struct rank_ast *lam, int nparams, int *lam_pc, int *base);

/* compile.c: compile a (in env) onto the stack; *type its type index. */
int rank_cc_compile(struct cc *c, const struct env *env, const struct rank_ast *a, int *type);

/* compile_feature.c: closeness(label, l) or (distance) distance(label, l). */
int rank_cc_close_label(struct cc *c, const char *label, int distance, int *type);
/* The number of the query-item label in the profile's table (added when
 * new); -1 with STRATA_NOMEM reported when memory runs out. */
int rank_cc_label(struct cc *c, const char *label);
/* compile_feature.c: foreach, the query-term features, now, age and
 * freshness.  *handled is 0 when a names none of them (nothing emitted). */
int rank_cc_feature(struct cc *c, const struct env *env, const struct rank_ast *a, int *type,
                    int *handled);

/* compile_tensor.c: x in [..], rename, concat, merge, cell_cast,
 * unpack_bits, slices, literals, generators. */
int rank_cc_in(struct cc *c, const struct env *env, const struct rank_ast *a, int *type);
int rank_cc_rename(struct cc *c, const struct env *env, const struct rank_ast *a, int *type);
int rank_cc_concat(struct cc *c, const struct env *env, const struct rank_ast *a, int *type);
int rank_cc_merge(struct cc *c, const struct env *env, const struct rank_ast *a, int *type);
int rank_cc_cell_cast(struct cc *c, const struct env *env, const struct rank_ast *a, int *type);
int rank_cc_top(struct cc *c, const struct env *env, const struct rank_ast *a, int *type);
int rank_cc_unpack_bits(struct cc *c, const struct env *env, const struct rank_ast *a,
                        int *type);
int rank_cc_slice(struct cc *c, const struct env *env, const struct rank_ast *a, int *type);
int rank_cc_literal(struct cc *c, const struct env *env, const struct rank_ast *a, int *type);
int rank_cc_generator(struct cc *c, const struct env *env, const struct rank_ast *a, int *type);

/* props.c: check the rank properties of rank features of profile p
 * against its schema: where bm25(f) names a field with a text index, k1 >=
 * 0, b in [0, 1], averageFieldLength > 0 (one of another name changes
 * nothing: rank_fprop_notice); and make p->bm25, each field's parameters.
 * Returns 0, STRATA_TYPE with "file:line:col: " of the property, or
 * STRATA_NOMEM. */
int rank_fprops_resolve(struct rank_profile *p, struct strata_error *err);

/* compile_raw.c: rawScore(field) and itemRawScore(label). */
int rank_cc_raw_score(struct cc *c, const struct rank_ast *a, int *type);

#endif
