/* scan_dot.h - small products written into the generated scan loop
 * instead of BLAS calls (module prefix tgSd_; doc/scan.md, Small
 * products). */
#ifndef TG_KERNELS_SCAN_DOT_H
#define TG_KERNELS_SCAN_DOT_H

struct tgB_buf;

/* Products of at most this many multiply-adds (m k n) run inline in the
 * generated loop; larger ones call BLAS.  Measured by bench/scan (rnn_
 * crossover): an RNN step's gemv inline against the BLAS call, by size. */
#define TGSD_INLINE_MAX 65536

/* The inline kernels tgk_idot_T, tgk_igemv_T, tgk_igevm_T, tgk_igemm_T
 * (T double and float), once per source however often called. */
void tgSd_put_defs(struct tgB_buf *b);

/* "if (m * k * nn <= TGK_DOT_INLINE_MAX) <inline product>; else" for a
 * dot of an andim-d by a bndim-d operand of C type T, over the locals a,
 * bb, c (char pointers), m, k, nn of the generated dot block; the caller
 * writes the BLAS call after it. */
void tgSd_put_inline(struct tgB_buf *b, int andim, int bndim, const char *T);

/* The rank-one update C += u v^T (a GEMM step of two vectors, fuse_ger
 * in schedule.c) over the locals u, vv, c (char pointers), m, nn:
 * inline when m nn <= TGK_DOT_INLINE_MAX or when u or v holds an inf or
 * NaN (BLAS ger skips the columns where v is 0), else BLAS ger, the
 * function pointer fp[fp]. */
void tgSd_put_ger(struct tgB_buf *b, const char *T, int fp);

#endif
