/*
 * elementwise.h: what the elementwise operator files share.  elementwise.c
 * holds the broadcasting binary, variadic, comparison, logic and Where
 * kernels and the one table rt_ops_elementwise[]; unary.c the unary math
 * kernels and Clip; cast.c Cast, CastLike and the cell converter the others
 * use to widen float16/bfloat16 to float and to mix Pow's base and exponent
 * types.  Only these three files include this header.
 */
#ifndef RT_OPS_ELEMENTWISE_H
#define RT_OPS_ELEMENTWISE_H

#include "../kernel.h"

/* Convert n cells of type sdt at src into cells of type ddt at dst (numeric
 * types, bool, float16, bfloat16; no strings).  Float to integer truncates
 * toward zero; a value outside the target's range (or NaN) gives what the
 * x86 conversion instructions give, without undefined behaviour.  Returns 0
 * or STRATA_NOT_IMPLEMENTED for a pair without a converter. */
int rt_ew_convert(int sdt, const void *src, int ddt, void *dst, int64_t n);
/* 1 when rt_ew_convert handles the pair. */
int rt_ew_convertible(int sdt, int ddt);

/* A view of t with its cells converted to type dt in scratch memory of x (t
 * itself when it already has that type).  Returns 0 or STRATA_NOMEM (after
 * rt_fail). */
int rt_ew_as(struct rt_exec *x, const struct rt_node *n, const struct rt_tensor *t, int dt,
             struct rt_tensor *view);

/* "[2,3,4]" into buf (truncated to size). */
const char *rt_ew_shape_str(const struct rt_tensor *t, char *buf, size_t size);

/* 1 for float16 and bfloat16, the types computed through float. */
int rt_ew_is_half(int dt);
/* NOT_IMPLEMENTED for n: "OP (opset N) has no kernel for type T". */
int rt_ew_no_kernel(const struct rt_node *n, int dt, struct strata_error *err);

/* unary.c: every unary math op (the node's op name picks the function),
 * and Clip.  rt_ew_unary_fini frees the state unary init sets. */
int rt_ew_unary_init(struct rt_node *n, struct rt_graph *g, struct strata_error *err);
void rt_ew_unary_fini(struct rt_node *n);
int rt_ew_clip_init(struct rt_node *n, struct rt_graph *g, struct strata_error *err);

/* cast.c */
int rt_ew_cast_init(struct rt_node *n, struct rt_graph *g, struct strata_error *err);
int rt_ew_castlike_init(struct rt_node *n, struct rt_graph *g, struct strata_error *err);

#endif
