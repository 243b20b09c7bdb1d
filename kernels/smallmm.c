/* smallmm.c - small matrix products (module prefix tgMm_; see smallmm.h
 * and doc/kernels.md, "Small products"): which products are taken
 * apart, their blocks for OpenBLAS, and the kernel for those that have
 * none.  C is computed in blocks of 4
 * rows by one or two vectors of columns held in registers: each step of
 * p reads a row of B's block (B itself when its columns are contiguous,
 * else a copy packed k x NR, zero-padded past n) and four elements of
 * A, so no operand is packed as OpenBLAS packs both, and nothing starts
 * a thread.  On x86-64 with GCC the functions are also compiled for
 * AVX2, chosen at load time; multiplies and adds are kept apart (no
 * contraction into fma), so both versions give the same bits. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "smallmm.h"

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__ELF__)
#define TGMM_CLONES __attribute__((target_clones("avx2", "default"), optimize("fp-contract=off")))
#else
#define TGMM_CLONES
#endif
#define INLINE static inline __attribute__((always_inline))

/* 32-byte vectors (4 doubles, 8 floats), loaded and stored unaligned */
typedef double vd __attribute__((vector_size(32)));
typedef double vdu __attribute__((vector_size(32), aligned(8)));
typedef float vs __attribute__((vector_size(32)));
typedef float vsu __attribute__((vector_size(32), aligned(4)));

bool tgMm_use(int64_t m, int64_t k, int64_t n, int blas_threads)
{
    if (blas_threads <= 1 || m <= 0 || k <= 0 || n <= 0 || m > TGMM_MAX || k > TGMM_MAX || n > TGMM_MAX ||
        m * k > TGMM_MAX)   /* each product checked before the next: no overflow */
        return false;
    int64_t mkn = m * k * n;
    return mkn > TGMM_BLAS_ONE && mkn <= TGMM_MAX;
}

bool tgMm_blocks(int64_t m, int64_t k, int64_t n, int64_t *rows, int64_t *cols)
{
    *rows = *cols = 0;
    if (m <= 0 || k <= 0 || n <= 0)
        return false;
    int64_t *out, len, other;   /* the dimension cut, its length, k times the other one */
    if (k <= TGMM_BLAS_ONE / n)
        out = rows, len = m, other = k * n;
    else if (k <= TGMM_BLAS_ONE / m)
        out = cols, len = n, other = k * m;
    else
        return false;
    int64_t most = TGMM_BLAS_ONE / other, blocks = (len + most - 1) / most;
    *out = (len + blocks - 1) / blocks;
    return true;
}

/* One row of a block into C: alpha acc + beta C for its nc columns (acc
 * the NV vectors of the row). */
#define STORE_ROW(T, VT, VU, L)                                                                    \
    INLINE void store_##T(int nv, const VT *acc, int64_t nc, T alpha, T beta, T *c, int64_t ccs)   \
    {                                                                                              \
        VT a0 = acc[0], a1 = acc[1];                                                               \
        if (ccs == 1 && nc == nv * L) {                                                            \
            VT x0 = alpha * a0, x1 = alpha * a1;                                                   \
            if (beta != 0) {                                                                       \
                x0 += beta * *(const VU *)c;                                                       \
                if (nv == 2)                                                                       \
                    x1 += beta * *(const VU *)(c + L);                                             \
            }                                                                                      \
            *(VU *)c = x0;                                                                         \
            if (nv == 2)                                                                           \
                *(VU *)(c + L) = x1;                                                               \
            return;                                                                                \
        }                                                                                          \
        T t[2 * L];                                                                                \
        memcpy(t, &a0, sizeof a0);                                                                 \
        memcpy(t + L, &a1, sizeof a1);                                                             \
        for (int64_t j = 0; j < nc; j++) {                                                         \
            T v = alpha * t[j];                                                                    \
            c[j * ccs] = beta != 0 ? v + beta * c[j * ccs] : v;                                    \
        }                                                                                          \
    }

/* A block of columns (NV vectors; P its rows, ps apart) for every row of
 * C: four rows at a time, then one by one. */
#define PANEL(T, VT, VU, L)                                                                        \
    INLINE void panel_##T(int nv, int64_t m, int64_t nc, int64_t k, T alpha, const T *A, int64_t ars, \
                          int64_t acs, const T *P, int64_t ps, T beta, T *C, int64_t crs, int64_t ccs) \
    {                                                                                              \
        int64_t i = 0;                                                                             \
        for (; i + 4 <= m; i += 4) {                                                               \
            const T *a = A + i * ars;                                                              \
            VT c00 = {0}, c01 = {0}, c10 = {0}, c11 = {0}, c20 = {0}, c21 = {0}, c30 = {0}, c31 = {0}; \
            for (int64_t p = 0; p < k; p++) {                                                      \
                const T *ap = a + p * acs, *bp = P + p * ps;                                       \
                T x0 = ap[0], x1 = ap[ars], x2 = ap[2 * ars], x3 = ap[3 * ars];                    \
                VT b0 = *(const VU *)bp;                                                           \
                c00 += x0 * b0, c10 += x1 * b0, c20 += x2 * b0, c30 += x3 * b0;                    \
                if (nv == 2) {                                                                     \
                    VT b1 = *(const VU *)(bp + L);                                                 \
                    c01 += x0 * b1, c11 += x1 * b1, c21 += x2 * b1, c31 += x3 * b1;                \
                }                                                                                  \
            }                                                                                      \
            T *c = C + i * crs;                                                                    \
            store_##T(nv, (VT[2]){c00, c01}, nc, alpha, beta, c, ccs);                             \
            store_##T(nv, (VT[2]){c10, c11}, nc, alpha, beta, c + crs, ccs);                       \
            store_##T(nv, (VT[2]){c20, c21}, nc, alpha, beta, c + 2 * crs, ccs);                   \
            store_##T(nv, (VT[2]){c30, c31}, nc, alpha, beta, c + 3 * crs, ccs);                   \
        }                                                                                          \
        for (; i < m; i++) {                                                                       \
            const T *a = A + i * ars;                                                              \
            VT c00 = {0}, c01 = {0};                                                               \
            for (int64_t p = 0; p < k; p++) {                                                      \
                const T *bp = P + p * ps;                                                          \
                T x0 = a[p * acs];                                                                 \
                c00 += x0 * *(const VU *)bp;                                                       \
                if (nv == 2)                                                                       \
                    c01 += x0 * *(const VU *)(bp + L);                                             \
            }                                                                                      \
            store_##T(nv, (VT[2]){c00, c01}, nc, alpha, beta, C + i * crs, ccs);                   \
        }                                                                                          \
    }

/* The product, block of columns after block: 2L columns, the last block
 * L when that is enough; B's block read in place when its columns are
 * contiguous and whole, else packed (k x NV L, zero-padded past n). */
#define GEMM(NAME, T, VT, VU, L)                                                                   \
    STORE_ROW(T, VT, VU, L)                                                                        \
    PANEL(T, VT, VU, L)                                                                            \
    TGMM_CLONES int NAME(int64_t m, int64_t n, int64_t k, T alpha, const T *A, int64_t ars, int64_t acs, \
                         const T *B, int64_t brs, int64_t bcs, T beta, T *C, int64_t crs, int64_t ccs) \
    {                                                                                              \
        if (m <= 0 || n <= 0)                                                                      \
            return 0;                                                                              \
        enum { NR = 2 * L, STACK = 4096 };                                                         \
        T stack[STACK], *heap = NULL, *pk = stack;                                                 \
        if (k * NR > STACK && !(pk = heap = malloc((size_t)(k * NR) * sizeof(T))))                 \
            return -1;                                                                             \
        for (int64_t j0 = 0; j0 < n; j0 += NR) {                                                   \
            int64_t nc = n - j0 < NR ? n - j0 : NR;                                                \
            int nv = nc > L ? 2 : 1;                                                               \
            const T *P = B + j0 * bcs;                                                             \
            int64_t ps = brs;                                                                      \
            if (nc != nv * L || bcs != 1) {                                                        \
                for (int64_t p = 0; p < k; p++)                                                    \
                    for (int64_t j = 0; j < nv * L; j++)                                           \
                        pk[p * nv * L + j] = j < nc ? B[p * brs + (j0 + j) * bcs] : 0;             \
                P = pk, ps = nv * L;                                                               \
            }                                                                                      \
            T *c = C + j0 * ccs;                                                                   \
            if (nv == 2)                                                                           \
                panel_##T(2, m, nc, k, alpha, A, ars, acs, P, ps, beta, c, crs, ccs);              \
            else                                                                                   \
                panel_##T(1, m, nc, k, alpha, A, ars, acs, P, ps, beta, c, crs, ccs);              \
        }                                                                                          \
        free(heap);                                                                                \
        return 0;                                                                                  \
    }

GEMM(tgMm_dgemm, double, vd, vdu, 4)
GEMM(tgMm_sgemm, float, vs, vsu, 8)
