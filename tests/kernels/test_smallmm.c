/* test_smallmm.c - the small products written in smallmm.c (doc/kernels.md,
 * Small products): tgMm_dgemm and tgMm_sgemm on every size from 1 to
 * past the blocks (4 rows, 2 vectors of columns), A and B plain,
 * transposed, strided and reversed, C strided, alpha and beta, against
 * a long double loop and bit for bit against a plain loop in the
 * documented order; beta 0 not reading C; the rule of tgMm_use and the
 * blocks of tgMm_blocks; and a
 * compiled and an interpreted (add (dot A B) bias) of the perceptron's
 * shapes with OpenBLAS on one and on two threads (its own kernel and
 * BLAS), against long double. */
#include "config.h"

#include <dlfcn.h>
#include <float.h>

#include "kt.h"
#include "../../kernels/blas.h"
#include "../../kernels/smallmm.h"

static tg_ctx *ctx;

/* Element (i, j) of a matrix of strides rs, cs (elements) at p. */
#define AT(p, i, j, rs, cs) ((p)[(i) * (rs) + (j) * (cs)])

/* One case: C = alpha A B + beta C of m x k by k x n, A stored as lay_a
 * (0 row-major, 1 transposed, 2 every other row and column, 3 rows
 * reversed), B likewise, C row-major or (cstride) every other column.
 * Checked against long double within k + 2 roundings of the sum of
 * absolute values, and bit for bit against the plain loop in the
 * documented order; 1 when both hold. */
static int check_d(int64_t m, int64_t k, int64_t n, int lay_a, int lay_b, int cstride, double alpha, double beta)
{
    int64_t ra = m > 1 ? m : 1, ca = k > 1 ? k : 1, rb = k > 1 ? k : 1, cb = n > 1 ? n : 1;
    double *ab = malloc(sizeof(double) * (size_t)(4 * ra * ca)), *bb = malloc(sizeof(double) * (size_t)(4 * rb * cb));
    double *C = malloc(sizeof(double) * (size_t)(2 * m * n + 1)), *C0 = malloc(sizeof(double) * (size_t)(2 * m * n + 1));
    double *ref = malloc(sizeof(double) * (size_t)(m * n + 1));
    for (int64_t i = 0; i < 4 * ra * ca; i++)
        ab[i] = kt_unif(-1, 1);
    for (int64_t i = 0; i < 4 * rb * cb; i++)
        bb[i] = kt_unif(-1, 1);
    for (int64_t i = 0; i < 2 * m * n + 1; i++)
        C[i] = C0[i] = kt_unif(-1, 1);
    /* strides and origin of each layout */
    int64_t ars, acs, brs, bcs;
    const double *A = ab, *B = bb;
    switch (lay_a) {
    case 0: ars = k, acs = 1; break;
    case 1: ars = 1, acs = m; break;
    case 2: ars = 4 * k, acs = 2; break;
    default: ars = -k, acs = 1, A = ab + (m - 1) * k; break;
    }
    switch (lay_b) {
    case 0: brs = n, bcs = 1; break;
    case 1: brs = 1, bcs = k; break;
    case 2: brs = 4 * n, bcs = 2; break;
    default: brs = -n, bcs = 1, B = bb + (k - 1) * n; break;
    }
    int64_t crs = cstride ? 2 * n : n, ccs = cstride ? 2 : 1;
    int ok = tgMm_dgemm(m, n, k, alpha, A, ars, acs, B, brs, bcs, beta, C, crs, ccs) == 0;
    for (int64_t i = 0; i < m && ok; i++)
        for (int64_t j = 0; j < n && ok; j++) {
            long double s = 0, abs_ = 0;
            double plain = 0;
            for (int64_t p = 0; p < k; p++) {
                long double x = AT(A, i, p, ars, acs), y = AT(B, p, j, brs, bcs);
                s += x * y, abs_ += fabsl(x * y);
                plain = plain + AT(A, i, p, ars, acs) * AT(B, p, j, brs, bcs);
            }
            double c0 = AT(C0, i, j, crs, ccs), got = AT(C, i, j, crs, ccs);
            long double want = alpha * s + (beta != 0 ? beta * (long double)c0 : 0);
            long double tol = (long double)(k + 3) * DBL_EPSILON * (fabsl(alpha) * abs_ + fabsl(beta * c0)) + 1e-300L;
            double bits = beta != 0 ? alpha * plain + beta * c0 : alpha * plain;
            if (fabsl(got - want) > tol || memcmp(&got, &bits, sizeof got) != 0) {
                tap_diag("(%lld, %lld): %.17g, long double %.17Lg, plain loop %.17g", (long long)i, (long long)j, got,
                         want, bits);
                ok = 0;
            }
        }
    /* the elements of C between the strided ones are not touched */
    for (int64_t i = 0; i < m && ok && cstride; i++)
        for (int64_t j = 0; j < n; j++)
            ok &= memcmp(&C[i * crs + 2 * j + 1], &C0[i * crs + 2 * j + 1], sizeof(double)) == 0;
    free(ab), free(bb), free(C), free(C0), free(ref);
    return ok;
}

/* float32: within k + 3 float roundings of the long double sum. */
static int check_s(int64_t m, int64_t k, int64_t n, int trans_a, int trans_b)
{
    float *A = malloc(sizeof(float) * (size_t)(m * k + 1)), *B = malloc(sizeof(float) * (size_t)(k * n + 1));
    float *C = malloc(sizeof(float) * (size_t)(m * n + 1));
    for (int64_t i = 0; i < m * k; i++)
        A[i] = (float)kt_unif(-1, 1);
    for (int64_t i = 0; i < k * n; i++)
        B[i] = (float)kt_unif(-1, 1);
    int64_t ars = trans_a ? 1 : k, acs = trans_a ? m : 1, brs = trans_b ? 1 : n, bcs = trans_b ? k : 1;
    int ok = tgMm_sgemm(m, n, k, 1.5f, A, ars, acs, B, brs, bcs, 0.0f, C, n, 1) == 0;
    for (int64_t i = 0; i < m && ok; i++)
        for (int64_t j = 0; j < n && ok; j++) {
            long double s = 0, abs_ = 0;
            for (int64_t p = 0; p < k; p++) {
                long double x = AT(A, i, p, ars, acs), y = AT(B, p, j, brs, bcs);
                s += x * y, abs_ += fabsl(x * y);
            }
            if (fabsl(C[i * n + j] - 1.5L * s) > (long double)(k + 3) * FLT_EPSILON * 1.5L * abs_ + 1e-30L)
                ok = 0;
        }
    free(A), free(B), free(C);
    return ok;
}

static void direct(void)
{
    static const int64_t sizes[] = {1, 2, 3, 4, 5, 7, 8, 9, 10, 13, 17, 33};
    enum { NS = sizeof sizes / sizeof sizes[0] };
    int bad = 0, cases = 0;
    for (int a = 0; a < NS; a++)
        for (int b = 0; b < NS; b += 2)
            for (int c = 0; c < NS; c += 3) {
                int64_t m = sizes[a], k = sizes[b], n = sizes[(c + a) % NS];
                for (int lay = 0; lay < 4; lay++) {
                    cases++;
                    bad += !check_d(m, k, n, lay, (lay + a) % 4, lay == 2, lay == 1 ? 2.5 : 1, lay == 3 ? -0.5 : 1);
                }
            }
    TAP_CHECK(bad == 0, "dgemm: %d cases of m, k, n from 1 to 33, A and B plain, transposed, strided, reversed, C "
                        "strided, alpha and beta: within rounding of long double, the plain loop's bits (%d bad)",
              cases, bad);
    TAP_CHECK(check_d(256, 64, 32, 0, 0, 0, 1, 1) && check_d(64, 256, 32, 1, 0, 0, 1, 0) &&
                  check_d(256, 32, 10, 0, 0, 0, 1, 1) && check_d(256, 10, 32, 0, 1, 0, 1, 0) &&
                  check_d(32, 256, 10, 1, 0, 0, 1, 0),
              "dgemm: the perceptron's five products");
    TAP_CHECK(check_d(5, 0, 3, 0, 0, 0, 1, 1) && check_d(5, 0, 3, 0, 0, 0, 1, 0), "dgemm: k = 0 gives beta C, or 0");
    /* beta 0: a NaN in C is not read */
    double A[6] = {1, 2, 3, 4, 5, 6}, B[6] = {1, 0, 0, 1, 1, 1}, C[4] = {NAN, NAN, INFINITY, NAN};
    tgMm_dgemm(2, 2, 3, 1, A, 3, 1, B, 2, 1, 0, C, 2, 1);
    TAP_CHECK(C[0] == 4 && C[1] == 5 && C[2] == 10 && C[3] == 11, "dgemm: beta 0 does not read C (%g %g %g %g)", C[0],
              C[1], C[2], C[3]);
    /* NaN and infinities in A or B reach C */
    double An[4] = {INFINITY, 1, 0, NAN}, Bn[4] = {0, 1, 1, 1}, Cn[4];
    tgMm_dgemm(2, 2, 2, 1, An, 2, 1, Bn, 2, 1, 0, Cn, 2, 1);
    TAP_CHECK(isnan(Cn[0]) && isinf(Cn[1]) && isnan(Cn[2]) && isnan(Cn[3]), "dgemm: inf * 0 and NaN propagate");
    bad = 0;
    for (int a = 0; a < NS; a += 2)
        for (int b = 1; b < NS; b += 3)
            bad += !check_s(sizes[a], sizes[b], sizes[(a + b) % NS], a % 2, b % 2) +
                   !check_s(sizes[a] * 3, sizes[b], 35, 0, 1);
    TAP_CHECK(bad == 0, "sgemm: within rounding of long double, plain and transposed, 8 and 16 columns a block (%d bad)",
              bad);
}

static void rule(void)
{
    TAP_CHECK(tgMm_use(256, 64, 32, 2) && tgMm_use(64, 256, 32, 4) && tgMm_use(101, 101, 101, 2),
              "use: products OpenBLAS would split, up to TGMM_MAX, taken apart on more than one BLAS thread");
    TAP_CHECK(!tgMm_use(256, 64, 32, 1) && !tgMm_use(64, 64, 64, 2) && !tgMm_use(256, 32, 10, 2) &&
                  !tgMm_use(128, 128, 128, 2) && !tgMm_use(0, 64, 64, 2),
              "use: not on one thread, not at or under TGMM_BLAS_ONE, not over TGMM_MAX, not empty");
    TAP_CHECK(!tgMm_use(INT64_MAX / 2, INT64_MAX / 2, 4, 2) && !tgMm_use(1 << 20, 1 << 20, 1 << 20, 2) &&
                  !tgMm_use(-256, 64, 32, 2),
              "use: sizes whose product overflows or is negative are refused");
    int64_t r, c;
    bool got = tgMm_blocks(256, 64, 32, &r, &c);
    TAP_CHECK(got && r == 128 && c == 0, "blocks: 256x64x32 in 2 blocks of 128 rows (%lld %lld)", (long long)r,
              (long long)c);
    got = tgMm_blocks(101, 101, 101, &r, &c);
    TAP_CHECK(got && r == 21 && c == 0,
              "blocks: 101x101x101 in 5 blocks of at most 21 rows, not 4 of 25 and one of 1 (%lld %lld)", (long long)r,
              (long long)c);
    got = tgMm_blocks(2, 131072, 4, &r, &c);
    TAP_CHECK(got && r == 0 && c == 1, "blocks: 2x131072x4 by single columns, a row being too large (%lld %lld)",
              (long long)r, (long long)c);
    got = tgMm_blocks(2, 262144, 2, &r, &c);
    TAP_CHECK(!got && r == 0 && c == 0 && !tgMm_blocks(0, 64, 64, &r, &c),
              "blocks: none when a row and a column are both too large, or the product is empty");
    /* every product of the range: blocks within OpenBLAS's one-thread
     * threshold, as few as that allows, as even */
    int bad = 0, cases = 0, none = 0;
    for (int64_t m = 1; m <= 4096; m = m * 3 / 2 + 1)
        for (int64_t k = 1; k <= 1 << 20; k = k * 3 / 2 + 1)
            for (int64_t n = 1; n <= 4096; n = n * 3 / 2 + 1) {
                if (!tgMm_use(m, k, n, 2))
                    continue;
                cases++;
                if (!tgMm_blocks(m, k, n, &r, &c)) {
                    none++;
                    bad += m * k <= TGMM_BLAS_ONE || k * n <= TGMM_BLAS_ONE;
                    continue;
                }
                int64_t len = r ? m : n, b = r ? r : c, other = r ? k * n : k * m;
                int64_t most = TGMM_BLAS_ONE / other, blocks = (len + b - 1) / b;
                bad += (r != 0) == (c != 0) || b < 1 || b * other > TGMM_BLAS_ONE ||
                       blocks != (len + most - 1) / most || (blocks - 1) * b >= len || (r == 0 && k * n <= TGMM_BLAS_ONE);
            }
    TAP_CHECK(bad == 0 && cases > 100, "blocks: %d products of the range, each block within TGMM_BLAS_ONE multiply-adds, "
              "as few blocks as that allows, rows first; %d without blocks (%d bad)", cases, none, bad);
}

/* ---- through a function -------------------------------------------------- */

static void (*blas_set)(int);

/* (add (dot A B) bias) of m x k by k x n (A given transposed when
 * trans), on path interp, against long double; 1 when within rounding. */
static int through_fn(int m, int k, int n, int trans, int interp)
{
    char ins[300], outs[300];
    snprintf(ins, sizeof ins, "(input a float64 (%d %d)) (input b float64 (%d %d)) (input c float64 (%d))",
             trans ? k : m, trans ? m : k, k, n, n);
    snprintf(outs, sizeof outs, "(add (dot %s(input a float64 (%d %d))%s (input b float64 (%d %d))) (input c float64 (%d)))",
             trans ? "(transpose " : "", trans ? k : m, trans ? m : k, trans ? " (1 0))" : "", k, n, n);
    tg_error err;
    tg_fn *fn = kt_compile(ctx, ins, outs, NULL, interp, &err);
    if (!fn) {
        tap_diag("%s", err.message);
        return 0;
    }
    int64_t as[2] = {trans ? k : m, trans ? m : k}, bs[2] = {k, n}, cs = n, os[2] = {m, n};
    double *a = malloc(sizeof(double) * (size_t)(m * k)), *b = malloc(sizeof(double) * (size_t)(k * n));
    double *c = malloc(sizeof(double) * (size_t)n), *o = malloc(sizeof(double) * (size_t)(m * n));
    for (int i = 0; i < m * k; i++)
        a[i] = kt_unif(-1, 1);
    for (int i = 0; i < k * n; i++)
        b[i] = kt_unif(-1, 1);
    for (int j = 0; j < n; j++)
        c[j] = kt_unif(-1, 1);
    tg_array in[3], out;
    tg_array_init(&in[0], TG_FLOAT64, 2, as, a);
    tg_array_init(&in[1], TG_FLOAT64, 2, bs, b);
    tg_array_init(&in[2], TG_FLOAT64, 1, &cs, c);
    tg_array_init(&out, TG_FLOAT64, 2, os, o);
    int ok = tg_fn_call(fn, in, &out, &err) == 0;
    if (!blas_set) {    /* OpenBLAS is open now */
        void *h = dlopen(TGREL_BLAS_SONAME, RTLD_LAZY | RTLD_NOLOAD);
        blas_set = h ? (void (*)(int))dlsym(h, "openblas_set_num_threads") : NULL;
        if (h)
            dlclose(h);
    }
    for (int i = 0; i < m && ok; i++)
        for (int j = 0; j < n && ok; j++) {
            long double s = c[j], abs_ = fabsl((long double)c[j]);
            for (int p = 0; p < k; p++) {
                long double x = trans ? a[p * m + i] : a[i * k + p];
                s += x * b[p * n + j], abs_ += fabsl(x * b[p * n + j]);
            }
            ok = fabsl(o[i * n + j] - s) <= (long double)(k + 2) * DBL_EPSILON * abs_;
        }
    free(a), free(b), free(c), free(o);
    tg_fn_free(fn);
    return ok;
}

/* (dot A B) of views read in place on the own kernel's path: A the rows
 * of a reversed and every other column of a taken (m x 2k), B a
 * transposed b (n x k); on path interp, against long double; 1 when
 * within rounding. */
static int through_views(int m, int k, int n, int interp)
{
    char ins[300], outs[400];
    snprintf(ins, sizeof ins, "(input a float64 (%d %d)) (input b float64 (%d %d))", m, 2 * k, n, k);
    snprintf(outs, sizeof outs, "(dot (subtensor (input a float64 (%d %d)) (slice none none -1) (slice 0 none 2)) "
             "(transpose (input b float64 (%d %d)) (1 0)))", m, 2 * k, n, k);
    tg_error err;
    tg_fn *fn = kt_compile(ctx, ins, outs, NULL, interp, &err);
    if (!fn) {
        tap_diag("%s", err.message);
        return 0;
    }
    int64_t as[2] = {m, 2 * k}, bs[2] = {n, k}, os[2] = {m, n};
    double *a = malloc(sizeof(double) * (size_t)(2 * m * k)), *b = malloc(sizeof(double) * (size_t)(k * n));
    double *o = malloc(sizeof(double) * (size_t)(m * n));
    for (int i = 0; i < 2 * m * k; i++)
        a[i] = kt_unif(-1, 1);
    for (int i = 0; i < k * n; i++)
        b[i] = kt_unif(-1, 1);
    tg_array in[2], out;
    tg_array_init(&in[0], TG_FLOAT64, 2, as, a);
    tg_array_init(&in[1], TG_FLOAT64, 2, bs, b);
    tg_array_init(&out, TG_FLOAT64, 2, os, o);
    int ok = tg_fn_call(fn, in, &out, &err) == 0;
    for (int i = 0; i < m && ok; i++)
        for (int j = 0; j < n && ok; j++) {
            long double s = 0, abs_ = 0;
            for (int p = 0; p < k; p++) {
                long double x = a[(m - 1 - i) * 2 * k + 2 * p], y = b[j * k + p];
                s += x * y, abs_ += fabsl(x * y);
            }
            ok = fabsl(o[i * n + j] - s) <= (long double)(k + 2) * DBL_EPSILON * abs_;
        }
    free(a), free(b), free(o);
    tg_fn_free(fn);
    return ok;
}

static void functions(void)
{
    /* the first call opens OpenBLAS, after which its threads can be set */
    through_fn(4, 4, 4, 0, 0);
    TAP_CHECK(blas_set != NULL, "openblas_set_num_threads found in the OpenBLAS tgrel opened");
    if (!blas_set)
        return;
    KT_EACH_PATH {
        for (int th = 1; th <= 2; th++) {
            blas_set(th);
            TAP_CHECK(tgMm_use(256, 64, 32, tgBl_threads()) == (th > 1), "OpenBLAS on %d thread%s: the rule says %s",
                      th, th > 1 ? "s" : "", th > 1 ? "BLAS in blocks" : "BLAS whole");
            TAP_CHECK(through_fn(256, 64, 32, 0, kt_path) && through_fn(80, 101, 70, 0, kt_path) &&
                          through_fn(64, 256, 32, 1, kt_path) && through_fn(256, 32, 10, 0, kt_path) &&
                          through_fn(2, 131072, 4, 1, kt_path),
                      "(add (dot A B) bias), 256x64x32, 80x101x70, 64x256x32 with A transposed, 256x32x10, "
                      "2x131072x4 with A transposed (blocks of columns), OpenBLAS on %d thread%s: within rounding of "
                      "long double",
                      th, th > 1 ? "s" : "");
            TAP_CHECK(through_views(96, 64, 48, kt_path) && through_views(40, 90, 100, kt_path),
                      "(dot A B) of a reversed and strided A and a transposed B, 96x64x48 and 40x90x100, OpenBLAS on "
                      "%d thread%s (BLAS%s, from copies): within rounding of long double", th, th > 1 ? "s" : "",
                      th > 1 ? " in blocks of rows" : "");
            /* a row and a column each over the threshold: no blocks */
            TAP_CHECK(through_fn(3, 100000, 3, 0, kt_path) && through_views(2, 200000, 2, kt_path),
                      "3x100000x3 (add (dot A B) bias), 2x200000x2 (dot A B) of views, OpenBLAS on %d thread%s (%s): "
                      "within rounding of long double", th, th > 1 ? "s" : "",
                      th > 1 ? "the own kernel, reading the views in place" : "BLAS whole, from copies");
        }
    }
    blas_set(2);
}

int main(void)
{
    tg_error err;
    ctx = tg_ctx_new(&err);
    direct();
    rule();
    functions();
    tg_ctx_free(ctx);
    return TAP_DONE();
}
