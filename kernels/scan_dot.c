/* scan_dot.c - small products written into the generated scan loop
 * (module prefix tgSd_): dot, gemv either way round and gemm as plain
 * C loops the compiler vectorizes, called instead of BLAS when the
 * product is small (the call's fixed cost is then most of the time:
 * doc/scan.md, Small products).  Sizes known at compile time reach the
 * loops as constants (the kernels are always inlined), so the size test
 * folds away and the loops are unrolled for them. */
#include "config.h"

#include <string.h>

#include "buf.h"
#include "scan_dot.h"

/* The kernels, once per dtype: $T the C type, $F its fused multiply-add.
 * Sums are split over independent accumulators (8 rows at once for
 * gemv, vector lanes through `omp simd reduction`), so that they
 * vectorize without -ffast-math; a row-major matrix is read along its
 * rows only. */
static const char kernels[] =
    "static inline __attribute__((always_inline)) $T tgk_idot_$T(int64_t k, const $T *restrict a,"
    " const $T *restrict b) {\n"
    "  $T s = 0;\n"
    "  #pragma omp simd reduction(+:s)\n"
    "  for (int64_t j = 0; j < k; j++) s = $F(a[j], b[j], s);\n"
    "  return s; }\n"
    /* c (m) = A (m x k) x (k) */
    "static inline __attribute__((always_inline)) void tgk_igemv_$T(int64_t m, int64_t k, const $T *restrict A,"
    " const $T *restrict x, $T *restrict c) {\n"
    "  int64_t i = 0;\n"
    "  for (; i + 8 <= m; i += 8) {\n"
    "    const $T *r = A + i * k;\n"
    "    $T s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;\n"
    "    #pragma omp simd reduction(+:s0, s1, s2, s3, s4, s5, s6, s7)\n"
    "    for (int64_t j = 0; j < k; j++) {\n"
    "      $T xj = x[j];\n"
    "      s0 = $F(r[j], xj, s0); s1 = $F(r[k + j], xj, s1);\n"
    "      s2 = $F(r[2 * k + j], xj, s2); s3 = $F(r[3 * k + j], xj, s3);\n"
    "      s4 = $F(r[4 * k + j], xj, s4); s5 = $F(r[5 * k + j], xj, s5);\n"
    "      s6 = $F(r[6 * k + j], xj, s6); s7 = $F(r[7 * k + j], xj, s7); }\n"
    "    c[i] = s0; c[i + 1] = s1; c[i + 2] = s2; c[i + 3] = s3;\n"
    "    c[i + 4] = s4; c[i + 5] = s5; c[i + 6] = s6; c[i + 7] = s7; }\n"
    "  for (; i < m; i++) c[i] = tgk_idot_$T(k, A + i * k, x); }\n"
    /* c (n) = a (k) B (k x n): rows of B scaled and added, 4 at once */
    "static inline __attribute__((always_inline)) void tgk_igevm_$T(int64_t k, int64_t n, const $T *restrict a,"
    " const $T *restrict B, $T *restrict c) {\n"
    "  for (int64_t j = 0; j < n; j++) c[j] = 0;\n"
    "  int64_t i = 0;\n"
    "  for (; i + 4 <= k; i += 4) {\n"
    "    const $T a0 = a[i], a1 = a[i + 1], a2 = a[i + 2], a3 = a[i + 3], *r = B + i * n;\n"
    "    #pragma omp simd\n"
    "    for (int64_t j = 0; j < n; j++)\n"
    "      c[j] = $F(a3, r[3 * n + j], $F(a2, r[2 * n + j], $F(a1, r[n + j], $F(a0, r[j], c[j])))); }\n"
    "  for (; i < k; i++) {\n"
    "    const $T ai = a[i], *r = B + i * n;\n"
    "    #pragma omp simd\n"
    "    for (int64_t j = 0; j < n; j++) c[j] = $F(ai, r[j], c[j]); } }\n"
    /* C (m x n) = A (m x k) B (k x n), row by row */
    "static inline __attribute__((always_inline)) void tgk_igemm_$T(int64_t m, int64_t n, int64_t k,"
    " const $T *restrict A, const $T *restrict B, $T *restrict C) {\n"
    "  for (int64_t i = 0; i < m; i++) tgk_igevm_$T(k, n, A + i * k, B, C + i * n); }\n"
    /* C (m x n) += u v^T, the product rounded then added (the bits of the
     * unfused loop) */
    "static inline __attribute__((always_inline)) void tgk_iger_$T(int64_t m, int64_t n, const $T *restrict u,"
    " const $T *restrict v, $T *restrict C) {\n"
    "  for (int64_t i = 0; i < m; i++) {\n"
    "    const $T ui = u[i];\n"
    "    $T *r = C + i * n;\n"
    "    #pragma omp simd\n"
    "    for (int64_t j = 0; j < n; j++) r[j] = r[j] + ui * v[j]; } }\n"
    /* no inf or NaN among x's n values (x * 0 is NaN only for those) */
    "static inline int tgk_finite_$T(int64_t n, const $T *x) {\n"
    "  $T s = 0;\n"
    "  #pragma omp simd reduction(+:s)\n"
    "  for (int64_t j = 0; j < n; j++) s += x[j] * 0;\n"
    "  return s == 0; }\n"
    "typedef void (*tgk_ger_$T)(int, int, int, $T, const $T *, int, const $T *, int, $T *, int);\n";

/* kernels with $T and $F replaced. */
static void put_kernels(tgB_buf *b, const char *T, const char *F)
{
    for (const char *p = kernels; *p; p++) {
        if (p[0] == '$' && p[1] == 'T')
            tgB_puts(b, T), p++;
        else if (p[0] == '$' && p[1] == 'F')
            tgB_puts(b, F), p++;
        else
            tgB_putc(b, *p);
    }
}

void tgSd_put_defs(tgB_buf *b)
{
    tgB_puts(b, "\n#ifndef TGK_DOT_INLINE_DEFS\n#define TGK_DOT_INLINE_DEFS 1\n"
                "/* products of at most this many multiply-adds run inline, larger\n"
                " * ones call BLAS (-DTGK_DOT_INLINE_MAX=N in the flags overrides) */\n"
                "#ifndef TGK_DOT_INLINE_MAX\n");
    tgB_printf(b, "#define TGK_DOT_INLINE_MAX %ldLL\n#endif\n", (long)TGSD_INLINE_MAX);
    put_kernels(b, "double", "fma");
    put_kernels(b, "float", "fmaf");
    tgB_puts(b, "#endif\n");
}

void tgSd_put_inline(tgB_buf *b, int andim, int bndim, const char *T)
{
    tgB_puts(b, "     if (m * k * nn <= TGK_DOT_INLINE_MAX)\n");
    if (andim == 2 && bndim == 1)
        tgB_printf(b, "      tgk_igemv_%s(m, k, (const %s *)a, (const %s *)bb, (%s *)c);\n", T, T, T, T);
    else if (andim == 1 && bndim == 2)
        tgB_printf(b, "      tgk_igevm_%s(k, nn, (const %s *)a, (const %s *)bb, (%s *)c);\n", T, T, T, T);
    else if (andim == 2)
        tgB_printf(b, "      tgk_igemm_%s(m, nn, k, (const %s *)a, (const %s *)bb, (%s *)c);\n", T, T, T, T);
    else
        tgB_printf(b, "      *(%s *)c = tgk_idot_%s(k, (const %s *)a, (const %s *)bb);\n", T, T, T, T);
    tgB_puts(b, "     else\n");
}

void tgSd_put_ger(tgB_buf *b, const char *T, int fp)
{
    tgB_printf(b, "     if (m * nn <= TGK_DOT_INLINE_MAX || !tgk_finite_%s(m, (const %s *)u) ||"
                  " !tgk_finite_%s(nn, (const %s *)vv))\n", T, T, T, T);
    tgB_printf(b, "      tgk_iger_%s(m, nn, (const %s *)u, (const %s *)vv, (%s *)c);\n", T, T, T, T);
    tgB_printf(b, "     else\n      ((tgk_ger_%s)fp[%d])(101, (int)m, (int)nn, 1, (const %s *)u, 1, (const %s *)vv, 1,"
                  " (%s *)c, (int)(nn > 1 ? nn : 1));\n", T, fp, T, T, T);
}
