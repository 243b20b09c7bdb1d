/* products.c - the interpreter's products (module prefix tgPr_): dot
 * and GEMM nodes, by BLAS's vector calls (dot, gemv), rank-one updates
 * (ger), matrix products (gemm, in blocks where OpenBLAS would split a
 * small one over its threads, or smallmm.c's kernel where there are no
 * blocks); integer products by a plain loop.  See doc/kernels.md. */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "blas.h"
#include "error.h"
#include "interp_int.h"
#include "products.h"
#include "smallmm.h"

/* r = alpha*r + beta*c, elementwise (a GEMM whose alpha or beta is 0). */
typedef struct combctx {
    const tgI_arr *r, *c;
    double alpha, beta;
} combctx;

static void comb_visit(void *ud, int64_t orr, int64_t oc)
{
    combctx *X = ud;
    reg v;
    v.f = X->alpha * tgI_ld_f(X->r->data + orr, X->r->dtype) + X->beta * tgI_ld_f(X->c->data + oc, X->c->dtype);
    tgI_st_elem(X->r->data + orr, X->r->dtype, v);
}

/* C = alpha op(A) op(B) + beta C by BLAS, m x k by k x n of dtype d,
 * row-major, C's rows ldc apart (at least 1, as BLAS requires). */
static void blas_gemm(const tgBl_fns *bl, tg_dtype d, bool transa, bool transb, int64_t m, int64_t n, int64_t k,
                      double alpha, const char *A, int64_t lda, const char *B, int64_t ldb, double beta, char *C,
                      int64_t ldc)
{
    int tc = ldc > 1 ? (int)ldc : 1;
    if (d == TG_FLOAT64)
        bl->dgemm(CblasRowMajor, transa ? CblasTrans : CblasNoTrans, transb ? CblasTrans : CblasNoTrans, (int)m,
                  (int)n, (int)k, alpha, (const double *)A, (int)lda, (const double *)B, (int)ldb, beta, (double *)C,
                  tc);
    else
        bl->sgemm(CblasRowMajor, transa ? CblasTrans : CblasNoTrans, transb ? CblasTrans : CblasNoTrans, (int)m,
                  (int)n, (int)k, (float)alpha, (const float *)A, (int)lda, (const float *)B, (int)ldb, (float)beta,
                  (float *)C, tc);
}

/* A contiguous copy of a (as dtype d), for BLAS; malloc'd. */
static char *contig_copy(const tgI_arr *a, tg_dtype d, tgI_arr *out)
{
    *out = *a;
    out->dtype = d;
    tgI_c_strides(out);
    out->data = malloc((size_t)(tgI_count(a) ? tgI_count(a) : 1) * tgV_dtype_size(d));
    if (out->data)
        tgI_copy_arr(out, a);
    return out->data;
}

/* x as a (rows, cols) matrix: vectors are one row (first operand) or
 * one column (second). */
static void as_matrix(const tgI_arr *x, bool first, int64_t *rows, int64_t *cols, int64_t *rs, int64_t *cs)
{
    if (x->ndim == 2) {
        *rows = x->shape[0], *cols = x->shape[1], *rs = x->strides[0], *cs = x->strides[1];
    } else if (first) {
        *rows = 1, *cols = x->shape[0], *rs = 0, *cs = x->strides[0];
    } else {
        *rows = x->shape[0], *cols = 1, *rs = x->strides[0], *cs = 0;
    }
}

/* BLAS can read a matrix with unit stride along one axis and a leading
 * dimension of at least the other extent. */
static bool blas_ok(int64_t rows, int64_t cols, int64_t rs, int64_t cs, size_t es, bool *trans, int64_t *ld)
{
    if ((cs == (int64_t)es || cols <= 1) && rs % (int64_t)es == 0 && rs / (int64_t)es >= (cols > 1 ? cols : 1)) {
        *trans = false, *ld = rs / (int64_t)es;
        return true;
    }
    if ((rs == (int64_t)es || rows <= 1) && cs % (int64_t)es == 0 && cs / (int64_t)es >= (rows > 1 ? rows : 1)) {
        *trans = true, *ld = cs / (int64_t)es;
        return true;
    }
    if (rows <= 1 && cols <= 1) {
        *trans = false, *ld = 1;
        return true;
    }
    return false;
}

/* ---- BLAS vector calls for the vector cases of dot ----------------------- */

/* A vector BLAS reads with increment *inc: positive whole elements. */
static bool vec_ok(const tgI_arr *x, size_t es, int *inc)
{
    int64_t s = x->strides[0], n = x->shape[0];
    if (n <= 1) {
        *inc = 1;
        return true;
    }
    if (s <= 0 || s % (int64_t)es != 0 || s / (int64_t)es > INT32_MAX)
        return false;
    *inc = (int)(s / (int64_t)es);
    return true;
}

/* x as BLAS can take it: itself, or a contiguous copy in dtype d (*own). */
static const tgI_arr *vec_arg(const tgI_arr *x, tg_dtype d, tgI_arr *tmp, char **own, int *inc)
{
    size_t es = tgV_dtype_size(d);
    if (x->dtype == d && vec_ok(x, es, inc))
        return x;
    if (!(*own = contig_copy(x, d, tmp)))
        return NULL;
    *inc = 1;
    return tmp;
}

/* dot of two vectors (ddot / sdot), or of a matrix and a vector either
 * way round (dgemv / sgemv), for float dtypes: 1 when done, 0 when the
 * operands are two matrices, -1 with err on out of memory. */
static int run_dot_vec(const tgI_arr *A, const tgI_arr *B, const tgI_arr *C, tg_dtype d, const tgBl_fns *bl,
                       tg_error *err)
{
    if (A->ndim == 2 && B->ndim == 2)
        return 0;
    size_t es = tgV_dtype_size(d);
    tgI_arr ta, tb, tc;
    char *fa = NULL, *fb = NULL, *fc = NULL;
    int ia = 1, ib = 1, ic = 1, rc = 1;
    if (A->ndim == 1 && B->ndim == 1) {
        const tgI_arr *x = vec_arg(A, d, &ta, &fa, &ia), *y = x ? vec_arg(B, d, &tb, &fb, &ib) : NULL;
        if (!y) {
            rc = -1;
        } else {
            int n = (int)A->shape[0];
            reg r;
            r.f = d == TG_FLOAT64 ? bl->ddot(n, (const double *)x->data, ia, (const double *)y->data, ib)
                                  : bl->sdot(n, (const float *)x->data, ia, (const float *)y->data, ib);
            tgI_st_elem(C->data, d, r);
        }
        free(fa), free(fb);
        return rc < 0 ? (tgE_nomem(err), -1) : 1;
    }
    /* the matrix M (rows x cols as BLAS reads it) and the vector x */
    const tgI_arr *M = A->ndim == 2 ? A : B, *V = A->ndim == 2 ? B : A;
    bool vm = A->ndim == 1;   /* x^T M: M read transposed */
    int64_t rows = M->shape[0], cols = M->shape[1], ld;
    bool trans;
    if (M->dtype != d || !blas_ok(rows, cols, M->strides[0], M->strides[1], es, &trans, &ld)) {
        if (!(fa = contig_copy(M, d, &ta)))
            return tgE_nomem(err), -1;
        M = &ta;
        blas_ok(rows, cols, M->strides[0], M->strides[1], es, &trans, &ld);
    }
    const tgI_arr *x = vec_arg(V, d, &tb, &fb, &ib);
    const tgI_arr *y = C;
    if (x && !vec_ok(C, es, &ic)) {     /* the result through a contiguous buffer */
        tc = *C;
        tgI_c_strides(&tc);
        if ((fc = tc.data = malloc((size_t)(C->shape[0] ? C->shape[0] : 1) * es)))
            y = &tc, ic = 1;
    }
    if (!x || (y == C && fc)) {
        rc = -1;
    } else if (C->shape[0] > 0) {
        if (V->shape[0] == 0) {     /* an empty inner extent: zeros (BLAS may not write) */
            for (int64_t i = 0; i < C->shape[0]; i++)
                memset(y->data + i * ic * (int64_t)es, 0, es);
        } else {
            /* row-major M (not trans) is read as is; stored transposed it
             * is the row-major matrix cols x rows */
            bool t = vm != trans;
            int m = (int)(trans ? cols : rows), n = (int)(trans ? rows : cols);
            if (d == TG_FLOAT64)
                bl->dgemv(CblasRowMajor, t ? CblasTrans : CblasNoTrans, m, n, 1.0, (const double *)M->data,
                          (int)ld, (const double *)x->data, ib, 0.0, (double *)y->data, ic);
            else
                bl->sgemv(CblasRowMajor, t ? CblasTrans : CblasNoTrans, m, n, 1.0f, (const float *)M->data,
                          (int)ld, (const float *)x->data, ib, 0.0f, (float *)y->data, ic);
        }
        if (fc)
            tgI_copy_arr(C, &tc);
    }
    free(fa), free(fb), free(fc);
    return rc < 0 ? (tgE_nomem(err), -1) : 1;
}

/* ---- rank-one updates: a GEMM node of two vectors, C + u v^T --------------- */

static bool all_finite(const tgI_arr *x)
{
    for (int64_t i = 0; i < x->shape[0]; i++)
        if (!isfinite(tgI_ld_f(x->data + i * x->strides[0], x->dtype)))
            return false;
    return true;
}

/* C (broadcast) copied into the result, then u v^T added: by BLAS ger
 * when the result is C-contiguous and u and v are finite (ger skips the
 * columns where v is 0, which would lose an inf or NaN of u), else
 * element by element, the product rounded then added, as the unfused
 * loop does. */
static int run_ger(const tgH_sched *s, tgI_state *st, int v, tg_error *err)
{
    const tgV_node *n = &s->g->nodes[v];
    const tgI_arr *U = &st->vals[n->args[0]], *V = &st->vals[n->args[1]], *Cin = &st->vals[n->args[2]];
    const tgI_arr *C = &st->vals[v];
    tg_dtype d = n->dtype;
    tgI_arr cview = *Cin;
    cview.ndim = C->ndim;
    memcpy(cview.shape, C->shape, sizeof cview.shape);
    tgI_loop_strides(Cin, C, cview.strides);
    tgI_copy_arr(C, &cview);
    int64_t m = C->shape[0], nn = C->shape[1];
    if (m == 0 || nn == 0)
        return 0;
    const tgBl_fns *bl = tgI_is_c_contig(C) && m <= INT32_MAX && nn <= INT32_MAX && all_finite(U) && all_finite(V)
                             ? tgBl_get(NULL) : NULL;
    if (bl) {
        tgI_arr tu, tv;
        char *fu = NULL, *fv = NULL;
        int iu = 1, iv = 1;
        const tgI_arr *x = vec_arg(U, d, &tu, &fu, &iu), *y = x ? vec_arg(V, d, &tv, &fv, &iv) : NULL;
        if (y && d == TG_FLOAT64)
            bl->dger(CblasRowMajor, (int)m, (int)nn, 1.0, (const double *)x->data, iu, (const double *)y->data, iv,
                     (double *)C->data, (int)nn);
        else if (y)
            bl->sger(CblasRowMajor, (int)m, (int)nn, 1.0f, (const float *)x->data, iu, (const float *)y->data, iv,
                     (float *)C->data, (int)nn);
        free(fu), free(fv);
        return y ? 0 : (tgE_nomem(err), -1);
    }
    for (int64_t i = 0; i < m; i++) {
        double ui = tgI_ld_f(U->data + i * U->strides[0], U->dtype);
        for (int64_t j = 0; j < nn; j++) {
            char *p = C->data + i * C->strides[0] + j * C->strides[1];
            double prod = ui * tgI_ld_f(V->data + j * V->strides[0], V->dtype);
            reg r;
            r.f = tgI_ld_f(p, d) + (d == TG_FLOAT32 ? (double)(float)prod : prod);
            tgI_st_elem(p, d, r);
        }
    }
    return 0;
}

int tgPr_run_dot(const tgH_sched *s, tgI_state *st, int v, tg_error *err)
{
    if (s->g->nodes[v].op == TGV_GEMM && s->g->nodes[s->g->nodes[v].args[0]].ndim == 1)
        return run_ger(s, st, v, err);
    const tgV_node *n = &s->g->nodes[v];
    const tgI_arr *A = &st->vals[n->args[0]], *B = &st->vals[n->args[1]], *C = &st->vals[v];
    tg_dtype d = n->dtype;
    /* a GEMM: alpha and beta are products of scalars, C is first copied
     * (broadcast) into the result, which the dgemm then updates */
    double alpha = 1, beta = 0;
    const tgI_arr *Cin = NULL;
    tgI_arr cview;
    if (n->op == TGV_GEMM) {
        beta = 1;
        for (int i = 3; i < n->nargs; i++) {
            const tgI_arr *a = &st->vals[n->args[i]];
            double x = tgI_ld_f(a->data, a->dtype);
            if (d == TG_FLOAT32)
                x = (float)x;
            if (i < 3 + n->nalpha)
                alpha *= x;
            else
                beta *= x;
        }
        Cin = &st->vals[n->args[2]];
        cview = *Cin;
        cview.ndim = C->ndim;
        memcpy(cview.shape, C->shape, sizeof cview.shape);
        tgI_loop_strides(Cin, C, cview.strides);
    }
    int64_t m, k, k2, nn, ars, acs, brs, bcs;
    as_matrix(A, true, &m, &k, &ars, &acs);
    as_matrix(B, false, &k2, &nn, &brs, &bcs);
    (void)k2;
    int64_t total = m * nn;
    reg *acc = NULL;
    if (!tgV_is_float(d)) {
        acc = calloc((size_t)(total ? total : 1), sizeof *acc);
        if (!acc)
            return tgE_nomem(err), -1;
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < nn; j++) {
                uint64_t sum = 0;
                for (int64_t p = 0; p < k; p++)
                    sum += (uint64_t)tgI_ld_i(A->data + i * ars + p * acs, A->dtype) *
                           (uint64_t)tgI_ld_i(B->data + p * brs + j * bcs, B->dtype);
                acc[i * nn + j].i = (int64_t)sum;
            }
        tgI_store_regs(C, acc, TG_INT64);
        free(acc);
        return 0;
    }
    const tgBl_fns *bl = tgBl_get(err);
    if (!bl)
        return -1;
    if (n->op == TGV_DOT) {
        int done = run_dot_vec(A, B, C, d, bl, err);
        if (done != 0)
            return done < 0 ? -1 : 0;
    }
    size_t es = tgV_dtype_size(d);
    tgI_arr ta, tb, tc;
    char *fa = NULL, *fb = NULL, *fc = NULL;
    bool transa = false, transb = false;
    int64_t lda = 0, ldb = 0;
    /* a product OpenBLAS would split over its threads goes to it in
     * blocks it runs on this thread (tgMm_blocks), else to smallmm.c,
     * which reads A and B with any strides of whole elements: on its
     * path an operand of the product's dtype is read where it is */
    int64_t rows = 0, cols = 0;
    bool small = total > 0 && tgMm_use(m, k, nn, tgBl_threads()) && !tgMm_blocks(m, k, nn, &rows, &cols);
    bool keep_a = small && A->dtype == d && ars % (int64_t)es == 0 && acs % (int64_t)es == 0;
    bool keep_b = small && B->dtype == d && brs % (int64_t)es == 0 && bcs % (int64_t)es == 0;
    if (!keep_a && (A->dtype != d || !blas_ok(m, k, ars, acs, es, &transa, &lda))) {
        if (!(fa = contig_copy(A, d, &ta)))
            return tgE_nomem(err), -1;
        A = &ta;
        as_matrix(A, true, &m, &k, &ars, &acs);
        blas_ok(m, k, ars, acs, es, &transa, &lda);
    }
    if (!keep_b && (B->dtype != d || !blas_ok(k, nn, brs, bcs, es, &transb, &ldb))) {
        if (!(fb = contig_copy(B, d, &tb))) {
            free(fa);
            return tgE_nomem(err), -1;
        }
        B = &tb;
        as_matrix(B, false, &k2, &nn, &brs, &bcs);
        blas_ok(k, nn, brs, bcs, es, &transb, &ldb);
    }
    /* the result: written straight when C-contiguous */
    char *cd = C->data;
    if (!tgI_is_c_contig(C)) {
        tc = *C;
        tgI_c_strides(&tc);
        if (!(fc = cd = malloc((size_t)(total ? total : 1) * es))) {
            free(fa), free(fb);
            return tgE_nomem(err), -1;
        }
        tc.data = fc;
    }
    /* BLAS skips A*B when alpha is 0 and C when beta is 0, losing NaN
     * and inf there: then the product is taken alone and combined after */
    bool split = Cin && (alpha == 0 || beta == 0);
    double a0 = alpha, b0 = beta;
    if (split)
        alpha = 1, beta = 0;
    else if (Cin)
        tgI_copy_arr(fc ? &tc : C, &cview);
    if (small) {
        /* small, where OpenBLAS would start its threads: written here
         * (smallmm.c); A and B where they are, or their copies above,
         * strides in whole elements */
        int64_t e = (int64_t)es;
        int rc = d == TG_FLOAT64
                     ? tgMm_dgemm(m, nn, k, alpha, (const double *)A->data, ars / e, acs / e,
                                  (const double *)B->data, brs / e, bcs / e, beta, (double *)cd, nn, 1)
                     : tgMm_sgemm(m, nn, k, (float)alpha, (const float *)A->data, ars / e, acs / e,
                                  (const float *)B->data, brs / e, bcs / e, (float)beta, (float *)cd, nn, 1);
        if (rc < 0) {
            free(fa), free(fb), free(fc);
            return tgE_nomem(err), -1;
        }
    } else if (total > 0) {
        /* whole, or block after block of rows (A's and C's) or columns
         * (B's and C's) */
        int64_t step_i = rows ? rows : m, step_j = cols ? cols : nn;
        for (int64_t i = 0; i < m; i += step_i)
            for (int64_t j = 0; j < nn; j += step_j)
                blas_gemm(bl, d, transa, transb, m - i < step_i ? m - i : step_i, nn - j < step_j ? nn - j : step_j,
                          k, alpha, A->data + i * ars, lda, B->data + j * bcs, ldb, beta,
                          cd + (i * nn + j) * (int64_t)es, nn);
    }
    if (split) {
        combctx X = {fc ? &tc : C, &cview, a0, b0};
        const tgI_arr *R = X.r;
        tgI_for_each(R->ndim, R->shape, R->strides, cview.strides, comb_visit, &X);
    }
    if (fc)
        tgI_copy_arr(C, &tc);
    free(fa), free(fb), free(fc);
    return 0;
}
