/*
 * attn.h: the per-head attention kernels behind strata.Attention (fused.c).
 *
 * One call computes, for one (batch, head) pair,
 *     out[i, :] = softmax_j(scale * q[i, :] . k[j, :] + mask[i, j]) v[j, :]
 * for i < sq, j < sk, over head width d, reading q, k and v in place with
 * row strides (the head split of a [batch, seq, heads * d] tensor is a
 * pointer offset and a stride, never a copy) and writing out with stride
 * ldo.  The scores of a block of query rows stay in `work` (L1-sized) from
 * the dot products through the softmax to the product with v, so the
 * [sq, sk] score matrix never travels through memory as a whole.
 *
 *     float *w = rt_scratch(x, rt_attn_work_bytes(sq, sk, d));
 *     rt_attn_head_avx512(sq, sk, d, scale, q, ldq, k, ldk, v, ldv,
 *                         mask, mask_ld, mask_step, out, ldo, w);
 *
 * mask: NULL, or the additive mask of this (batch, head) with rows mask_ld
 * apart; mask_step is 1 (one cell per key) or 0 (one cell per row, broadcast
 * over the keys).  sq, sk and d must be positive.  The AVX-512 kernel runs
 * only where rt_cpu_isa() reports RT_ISA_AVX512.  No allocation, no state;
 * concurrent calls need separate work buffers.
 */
#ifndef RUNTIME_OPS_ATTN_H
#define RUNTIME_OPS_ATTN_H

#include <stddef.h>
#include <stdint.h>

/* Query rows per block of the AVX-512 kernel: RT_ATTN_ROWS x 2 vector
 * accumulators fill half the registers, the row maxima most of the rest
 * (12 rows measured slower: the maxima spill). */
#define RT_ATTN_ROWS 8

/* Bytes of the work buffer one call needs (64-byte alignment suffices). */
size_t rt_attn_work_bytes(int64_t sq, int64_t sk, int64_t d);

void rt_attn_head_avx512(int64_t sq, int64_t sk, int64_t d, float scale, const float *q,
                         int64_t ldq, const float *k, int64_t ldk, const float *v, int64_t ldv,
                         const float *mask, int64_t mask_ld, int mask_step, float *out,
                         int64_t ldo, float *work);

/* attn_amx.c: the same with the products in bfloat16 on AMX tiles, for
 * models run with session.bf16_weights; only where rt_cpu_amx() says so,
 * with a work buffer of rt_attn_amx_work_bytes. */
size_t rt_attn_amx_work_bytes(int64_t sq, int64_t sk, int64_t d);
void rt_attn_head_amx(int64_t sq, int64_t sk, int64_t d, float scale, const float *q,
                      int64_t ldq, const float *k, int64_t ldk, const float *v, int64_t ldv,
                      const float *mask, int64_t mask_ld, int mask_step, float *out,
                      int64_t ldo, float *work);

#endif
