/* smallmm.h - small matrix products written here instead of called in
 * BLAS (module prefix tgMm_): a product of a few hundred thousand
 * multiply-adds spends as much in OpenBLAS's packing, its call and its
 * threads as in its kernel.  See doc/kernels.md, "Small products". */
#ifndef TG_KERNELS_SMALLMM_H
#define TG_KERNELS_SMALLMM_H

#include <stdbool.h>
#include <stdint.h>

/* The products run here: those OpenBLAS splits over its threads (more
 * than TGMM_BLAS_ONE multiply-adds, OpenBLAS 0.3's threshold, when it
 * has more than one thread) up to TGMM_MAX, where its threads cost more
 * than they gain; smaller ones stay in BLAS, whose kernel is faster on
 * one thread.  Measured by bench/kernels (small_gemm), doc/kernels.md. */
#define TGMM_BLAS_ONE 262144
#define TGMM_MAX 1048576

/* Whether an m x k by k x n product runs here, OpenBLAS having
 * blas_threads threads (tgBl_threads). */
bool tgMm_use(int64_t m, int64_t k, int64_t n, int blas_threads);

/* C = alpha A B + beta C for A m x k, B k x n, C m x n, all strides in
 * elements, any sign (A(i, p) at A[i * ars + p * acs], ...); beta 0:
 * C is not read (as BLAS, so a NaN there is not kept).  Every element
 * of C is its k products added in order of p from 0, then scaled by
 * alpha, then beta C added: the same bits on any thread and path, and
 * in the AVX-512, AVX2 and generic versions (no fused multiply-add).
 * -1 when out of memory (nothing written), else 0. */
int tgMm_dgemm(int64_t m, int64_t n, int64_t k, double alpha, const double *A, int64_t ars, int64_t acs,
               const double *B, int64_t brs, int64_t bcs, double beta, double *C, int64_t crs, int64_t ccs);
int tgMm_sgemm(int64_t m, int64_t n, int64_t k, float alpha, const float *A, int64_t ars, int64_t acs,
               const float *B, int64_t brs, int64_t bcs, float beta, float *C, int64_t crs, int64_t ccs);

/* Whether the products run in their AVX-512 versions (64-byte vectors,
 * 4 rows by 16 doubles or 32 floats a block), which they do where the
 * processor and the system support AVX-512 F, unless turned off.  allow
 * 0 turns them off, 1 back on (the tests check every version on one
 * processor), -1 changes nothing. */
bool tgMm_wide(int allow);

#endif
