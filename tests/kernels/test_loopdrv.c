/* test_loopdrv.c - the driver of compiled loops (kernels/loopdrv.c): the
 * N-d walk, chunks, gathering strided operands and scattering strided
 * results, inputs broadcast along the innermost axis, and the folds of
 * fused reductions (along the innermost axis, along an outer one, to one
 * value in blocks on the OpenMP threads), checked against hand-written
 * loops; first with kernels written here, called through the driver
 * directly, then through compiled functions on both paths (compiled code
 * and the interpreter), whose loops are the driver and a generated
 * kernel. */
#include "config.h"

#include "kt.h"
#include "codegen.h"
#include "loopdrv.h"

static tg_ctx *ctx;

/* ---- the driver with kernels written here ----------------------------- */

/* out = a * b + c (a double, b float, c double read at element 0, out
 * double), and a row's sum of out into a reduction (double). */
static void kern_axpc(int64_t n, char *const *p)
{
    const double *a = (const double *)p[0], *c = (const double *)p[2];
    const float *b = (const float *)p[1];
    double *o = (double *)p[3], *r = (double *)p[4];
    for (int64_t i = 0; i < n; i++) {
        o[i] = a[i] * (double)b[i] + c[0];
        r[i] = o[i];
    }
}

/* A 2-d run: a of rows x cols contiguous, b transposed (strided), c one
 * value per row, out every other element; sums of out per row (stride 0
 * along the row) or per column (stride 8 along the row). */
static void test_direct_2d(int64_t rows, int64_t cols, int per_col)
{
    double *a = malloc((size_t)(rows * cols) * 8), *c = malloc((size_t)rows * 8);
    float *bt = malloc((size_t)(rows * cols) * 4);
    double *out = calloc((size_t)(rows * cols) * 2 + 1, 8), *acc = calloc((size_t)(rows + cols) + 1, 8);
    for (int64_t i = 0; i < rows; i++) {
        c[i] = kt_unif(-1, 1);
        for (int64_t j = 0; j < cols; j++) {
            a[i * cols + j] = kt_unif(-2, 2);
            bt[j * rows + i] = (float)kt_unif(-3, 3);
        }
    }
    static const unsigned char size[] = {8, 4, 8, 8}, red[] = {TGLD_SUM};
    tgk_desc d = {2, 3, 1, 1, 0, 1u << 2, size, red};
    int64_t shape[2] = {rows, cols};
    char *base[5] = {(char *)a, (char *)bt, (char *)c, (char *)out, (char *)acc};
    int64_t st[10] = {cols * 8, 8, 4, rows * 4, 8, 0, cols * 16, 16, per_col ? 0 : 8, per_col ? 8 : 0};
    tgLd_loop(&d, kern_axpc, shape, base, st);
    int ok = 1;
    double *want = calloc((size_t)(rows + cols) + 1, 8);
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) {
            double v = a[i * cols + j] * (double)bt[j * rows + i] + c[i];
            ok &= out[2 * (i * cols + j)] == v && out[2 * (i * cols + j) + 1] == 0;
            want[per_col ? j : i] += v;
        }
    for (int64_t k = 0; k < (per_col ? cols : rows); k++)
        ok &= acc[k] == want[k];
    TAP_CHECK(ok, "driver: %lld x %lld, a strided input gathered, a broadcast one read in place, a strided output "
                  "scattered, sums per %s: the hand-written loop's bits", (long long)rows, (long long)cols,
              per_col ? "column" : "row");
    free(a), free(c), free(bt), free(out), free(acc), free(want);
}

/* x int32 (gathered when strided) to an int64 max and a bool output. */
static void kern_imax(int64_t n, char *const *p)
{
    const int32_t *x = (const int32_t *)p[0];
    unsigned char *o = (unsigned char *)p[1];
    int64_t *r = (int64_t *)p[2];
    for (int64_t i = 0; i < n; i++) {
        o[i] = x[i] > 0;
        r[i] = x[i];
    }
}

static void test_direct_int(int64_t n, int strided)
{
    int32_t *x = malloc((size_t)n * 8 + 8);
    unsigned char *o = calloc((size_t)n * 3 + 1, 1);
    for (int64_t i = 0; i < n * 2; i++)
        x[i] = (int32_t)(kt_rand() >> 33) - (1 << 30);
    static const unsigned char size[] = {4, 1}, red[] = {TGLD_MAX | TGLD_INT};
    tgk_desc d = {1, 1, 1, 1, 0, 0, size, red};
    int64_t acc = INT64_MIN, want = INT64_MIN, sx = strided ? 8 : 4, so = strided ? 3 : 1;
    char *base[3] = {(char *)x, (char *)o, (char *)&acc};
    int64_t st[3] = {sx, so, 0};
    tgLd_loop(&d, kern_imax, &n, base, st);
    int ok = 1;
    for (int64_t i = 0; i < n; i++) {
        int32_t v = x[i * (strided ? 2 : 1)];
        ok &= o[i * so] == (v > 0);
        want = v > want ? v : want;
    }
    TAP_CHECK(ok && acc == want, "driver: int32 %s input, bool output, int64 max over %lld: %lld, loop %lld",
              strided ? "strided" : "contiguous", (long long)n, (long long)acc, (long long)want);
    free(x), free(o);
}

/* A reduction to one value over several blocks: the blocks' partials
 * from the identity, folded in block order, whatever the threads. */
static void kern_prod(int64_t n, char *const *p)
{
    const double *x = (const double *)p[0];
    double *r = (double *)p[1];
    for (int64_t i = 0; i < n; i++)
        r[i] = x[i];
}

static void test_direct_blocked(void)
{
    int64_t n = 3 * TGJ_RED_BLOCK + 1001;
    double *x = malloc((size_t)n * 8), acc = 1, want = 1;
    for (int64_t i = 0; i < n; i++)
        x[i] = 1 + kt_unif(-1e-5, 1e-5);
    for (int64_t b0 = 0; b0 < n; b0 += TGJ_RED_BLOCK) {
        double part = 1;
        for (int64_t i = b0; i < n && i < b0 + TGJ_RED_BLOCK; i++)
            part *= x[i];
        want *= part;
    }
    static const unsigned char size[] = {8}, red[] = {TGLD_PROD};
    tgk_desc d = {1, 1, 0, 1, TGLD_BLOCKED | TGLD_PAR, 0, size, red};
    char *base[2] = {(char *)x, (char *)&acc};
    int64_t st[2] = {8, 0};
    tgLd_loop(&d, kern_prod, &n, base, st);
    TAP_CHECK(acc == want, "driver: a product to one value over 4 blocks, on the threads: the bits of the "
                           "hand-written blocked loop (%.17g, loop %.17g)", acc, want);
    free(x);
}

/* ---- through compiled functions, both paths ---------------------------- */

/* (exp x) * y + z with z one value per row and x transposed: the result,
 * and its sums over each row and over each column, against loops. */
static void test_fn(int64_t rows, int64_t cols)
{
    tg_error err;
    const char *ins = "(input x float64 (m n)) (input y float32 (n m)) (input z float64 (n 1))";
#define E "(add (mul (exp (transpose (input x float64 (m n)) (perm 1 0))) (input y float32 (n m))) " \
          "(input z float64 (n 1)))"
    tg_fn *fn = kt_compile(ctx, ins, E " (sum " E " (axes 1)) (max " E " (axes 0))", NULL, kt_path, &err);
#undef E
    if (!TAP_CHECK(fn != NULL && tg_fn_native(fn) == !kt_path, "the function compiles, %s (%s)",
                   kt_path ? "interpreted" : "to native loops", fn ? "" : err.message))
        return;
    int64_t xs[2] = {cols, rows}, ys[2] = {rows, cols}, zs[2] = {rows, 1};
    kt_arr x, y, z, o;
    kt_make(&x, TG_FLOAT64, 2, xs, 1);
    kt_make(&y, TG_FLOAT32, 2, ys, 0);
    kt_make(&z, TG_FLOAT64, 2, zs, 1);
    kt_make(&o, TG_FLOAT64, 2, ys, 1);     /* the result strided too */
    kt_fill(&x.a, -1, 1), kt_fill(&y.a, -2, 2), kt_fill(&z.a, -1, 1);
    double *rs = malloc((size_t)rows * 8), *cm = malloc((size_t)cols * 8);
    tg_array in[3] = {x.a, y.a, z.a}, out[3];
    out[0] = o.a;
    tg_array_init(&out[1], TG_FLOAT64, 1, &rows, rs);
    tg_array_init(&out[2], TG_FLOAT64, 1, &cols, cm);
    int ok = tg_fn_call(fn, in, out, &err) == 0, exact = 1;
    if (!ok)
        tap_diag("%s", err.message);
    double worst = 0;
    for (int64_t i = 0; ok && i < rows; i++) {
        double sum = 0;
        for (int64_t j = 0; j < cols; j++) {
            int64_t ij[2] = {i, j}, ji[2] = {j, i}, i0[2] = {i, 0};
            double p = exp((double)kt_get(&x.a, ji)) * (double)kt_get(&y.a, ij), q = (double)kt_get(&z.a, i0);
            double got = (double)kt_get(&o.a, ij), d = fabs(got - (p + q)) / (fabs(p) + fabs(q));
            worst = d > worst ? d : worst;   /* exp of the vector library: a few ulp */
            sum += got;
        }
        exact &= rs[i] == sum;  /* the result's values, folded in the same order */
    }
    for (int64_t j = 0; ok && j < cols; j++) {  /* the max of each column of the result, exactly */
        double m = -INFINITY;
        for (int64_t i = 0; i < rows; i++) {
            int64_t ij[2] = {i, j};
            double v = (double)kt_get(&o.a, ij);
            m = v > m ? v : m;
        }
        exact &= cm[j] == m;
    }
    TAP_CHECK(ok && worst <= 1e-15 && exact, "%lld x %lld, a transposed and a strided input, a broadcast column, a "
              "strided result, row sums and column maxima: within %.2g of the loop", (long long)rows,
              (long long)cols, worst);
    free(x.block), free(y.block), free(z.block), free(o.block), free(rs), free(cm);
    tg_fn_free(fn);
}

int main(void)
{
    tg_error err;
    ctx = tg_ctx_new(&err);
    test_direct_2d(7, 300, 0);
    test_direct_2d(7, 300, 1);
    test_direct_2d(33, 257, 0);
    test_direct_2d(1, 1, 1);
    test_direct_int(1000, 1);
    test_direct_int(256, 0);
    test_direct_int(513, 1);
    test_direct_blocked();
    KT_EACH_PATH {
        test_fn(5, 600);
        test_fn(300, 3);
    }
    tg_ctx_free(ctx);
    return TAP_DONE();
}
