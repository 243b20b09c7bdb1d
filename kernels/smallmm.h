/* smallmm.h - small matrix products (module prefix tgMm_): a product of
 * a few hundred thousand multiply-adds that OpenBLAS would split over its
 * threads spends as much in waking them as in its kernel.  It is given
 * to OpenBLAS in blocks it runs on the calling thread, or, where there
 * are none, run by a kernel written here.  See doc/kernels.md, "Small
 * products". */
#ifndef TG_KERNELS_SMALLMM_H
#define TG_KERNELS_SMALLMM_H

#include <stdbool.h>
#include <stdint.h>

/* The products taken apart: those OpenBLAS splits over its threads
 * (more than TGMM_BLAS_ONE multiply-adds, OpenBLAS 0.3's threshold, when
 * it has more than one thread) up to TGMM_MAX, where its threads cost
 * more than they gain; smaller ones stay in BLAS whole, which runs them
 * on the calling thread.  Measured by bench/kernels (small_gemm),
 * doc/kernels.md. */
#define TGMM_BLAS_ONE 262144
#define TGMM_MAX 1048576

/* Whether an m x k by k x n product is one OpenBLAS would split over
 * its blas_threads threads (tgBl_threads) though they cost more than
 * they gain: then it is given to BLAS in blocks (tgMm_blocks), or,
 * where there are none, run here. */
bool tgMm_use(int64_t m, int64_t k, int64_t n, int blas_threads);

/* The blocks of such a product that OpenBLAS runs on the calling thread,
 * each of at most TGMM_BLAS_ONE multiply-adds: *rows rows of A and C
 * each (*cols 0) when k n allows a block of one row, else *cols columns
 * of B and C each (*rows 0); the blocks as even as that allows.  False
 * when neither a row nor a column is that small (m and n at most 4):
 * the product then runs here. */
bool tgMm_blocks(int64_t m, int64_t k, int64_t n, int64_t *rows, int64_t *cols);

/* C = alpha A B + beta C for A m x k, B k x n, C m x n, all strides in
 * elements, any sign (A(i, p) at A[i * ars + p * acs], ...); beta 0:
 * C is not read (as BLAS, so a NaN there is not kept).  Every element
 * of C is its k products added in order of p from 0, then scaled by
 * alpha, then beta C added: the same bits on any thread and path, and
 * in both the AVX2 and the generic versions (no fused multiply-add).
 * -1 when out of memory (nothing written), else 0. */
int tgMm_dgemm(int64_t m, int64_t n, int64_t k, double alpha, const double *A, int64_t ars, int64_t acs,
               const double *B, int64_t brs, int64_t bcs, double beta, double *C, int64_t crs, int64_t ccs);
int tgMm_sgemm(int64_t m, int64_t n, int64_t k, float alpha, const float *A, int64_t ars, int64_t acs,
               const float *B, int64_t brs, int64_t bcs, float beta, float *C, int64_t crs, int64_t ccs);

#endif
