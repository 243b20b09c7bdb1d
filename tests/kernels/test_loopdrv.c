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
    tgk_desc d = {2, 3, 1, 1, 0, 1u << 2, size, red, NULL};
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
    tgk_desc d = {1, 1, 1, 1, 0, 0, size, red, NULL};
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
    tgk_desc d = {1, 1, 0, 1, TGLD_BLOCKED | TGLD_PAR, 0, size, red, NULL};
    char *base[2] = {(char *)x, (char *)&acc};
    int64_t st[2] = {8, 0};
    tgLd_loop(&d, kern_prod, &n, base, st);
    TAP_CHECK(acc == want, "driver: a product to one value over 4 blocks, on the threads: the bits of the "
                           "hand-written blocked loop (%.17g, loop %.17g)", acc, want);
    free(x);
}

/* ---- short rows, several to a kernel call ---------------------------- */

/* The group kernel of kern_axpc: c read whole (the driver repeats each
 * row's scalar along its row); counts its calls and the elements. */
static int64_t kc_calls, kc_elems, k_calls;
static void kern_axpc_whole(int64_t n, char *const *p)
{
    const double *a = (const double *)p[0], *c = (const double *)p[2];
    const float *b = (const float *)p[1];
    double *o = (double *)p[3], *r = (double *)p[4];
    kc_calls++, kc_elems += n;
    for (int64_t i = 0; i < n; i++) {
        o[i] = a[i] * (double)b[i] + c[i];
        r[i] = o[i];
    }
}
static void kern_axpc_counted(int64_t n, char *const *p)
{
    k_calls++;
    kern_axpc(n, p);
}

/* rows x cols (cols short) as test_direct_2d, the group kernel given
 * (or not: then every row is a call of its own); out contiguous or
 * every other element; sums per row or per column.  Against the loop
 * bit for bit, and the calls counted: groups of 256 / cols whole rows. */
static void test_groups(int64_t rows, int64_t cols, int per_col, int strided_out, int with_kc)
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
    tgk_desc d = {2, 3, 1, 1, 0, 1u << 2, size, red, with_kc ? kern_axpc_whole : NULL};
    int64_t shape[2] = {rows, cols}, os = strided_out ? 16 : 8;
    char *base[5] = {(char *)a, (char *)bt, (char *)c, (char *)out, (char *)acc};
    int64_t st[10] = {cols * 8, 8, 4, rows * 4, 8, 0, cols * os, os, per_col ? 0 : 8, per_col ? 8 : 0};
    kc_calls = kc_elems = k_calls = 0;
    tgLd_loop(&d, kern_axpc_counted, shape, base, st);
    int ok = 1;
    double *want = calloc((size_t)(rows + cols) + 1, 8);
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) {
            double v = a[i * cols + j] * (double)bt[j * rows + i] + c[i];
            ok &= out[(os / 8) * (i * cols + j)] == v && (!strided_out || out[2 * (i * cols + j) + 1] == 0);
            want[per_col ? j : i] += v;
        }
    for (int64_t k = 0; k < (per_col ? cols : rows); k++)
        ok &= acc[k] == want[k];
    int64_t per = 256 / cols, groups = (rows + per - 1) / per;
    int calls = with_kc ? kc_calls == groups && kc_elems == rows * cols && k_calls == 0 : kc_calls == 0 && k_calls == rows;
    TAP_CHECK(ok && calls, "driver: %lld rows of %lld, %s output, sums per %s, %s: the hand-written loop's bits "
              "(%lld group calls of %lld rows, %lld row calls)", (long long)rows, (long long)cols,
              strided_out ? "a strided" : "a contiguous", per_col ? "column" : "row",
              with_kc ? "rows grouped" : "no group kernel, a call a row", (long long)kc_calls, (long long)per,
              (long long)k_calls);
    free(a), free(c), free(bt), free(out), free(acc), free(want);
}

/* A kernel writing each element's place in its call, and an int64 max
 * of the places per row: a loop of 3 axes (rows crossing the middle
 * one), 20 rows of 9 in groups of 28 rows, run whole and as ranges split
 * at row boundaries and inside rows (as the threads and a reduction's
 * blocks split a loop): an element gets the same place in its call
 * however the range is split, and the per-row maxima are the same. */
static int place_zero;   /* a call read an input of 0, which the data has not */
static void kern_place(int64_t n, char *const *p)
{
    const int64_t *x = (const int64_t *)p[0];
    int64_t *o = (int64_t *)p[1], *r = (int64_t *)p[2];
    for (int64_t i = 0; i < n; i++) {
        place_zero |= x[i] == 0;
        o[i] = i + x[i], r[i] = o[i];
    }
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static void test_group_places(int64_t a0, int64_t a1, int64_t a2)
{
    int64_t n = a0 * a1 * a2, rows = a0 * a1, per = 256 / a2;
    int64_t *x = malloc((size_t)rows * 8), *whole = malloc((size_t)n * 8), *split = malloc((size_t)n * 8);
    int64_t *mw = malloc((size_t)rows * 8), *ms = malloc((size_t)rows * 8);
    for (int64_t r = 0; r < rows; r++)
        mw[r] = ms[r] = INT64_MIN, x[r] = 1000 * (r + 1);
    place_zero = 0;
    static const unsigned char size[] = {8, 8}, red[] = {TGLD_MAX | TGLD_INT};
    tgk_desc d = {3, 1, 1, 1, 0, 1u, size, red, kern_place};
    int64_t shape[3] = {a0, a1, a2};
    int64_t st[9] = {a1 * 8, 8, 0, a1 * a2 * 8, a2 * 8, 8, a1 * 8, 8, 0};
    char *bw[3] = {(char *)x, (char *)whole, (char *)mw}, *bs[3] = {(char *)x, (char *)split, (char *)ms};
    tgLd_range(&d, kern_place, shape, bw, st, 0, n);
    int64_t cuts[8] = {0, 5 * a2, 11 * a2, 11 * a2 + 4, 19 * a2 - 2, (per + 1) * a2 + 1, n - 1, n};
    for (int c = 0; c < 8; c++)     /* at most n, in order */
        cuts[c] = cuts[c] < n ? cuts[c] : n;
    qsort(cuts, 8, sizeof cuts[0], cmp_i64);
    for (int c = 0; c + 1 < 8; c++)
        tgLd_range(&d, kern_place, shape, bs, st, cuts[c], cuts[c + 1]);
    int ok = 1;
    for (int64_t e = 0; e < n; e++) {
        int64_t row = e / a2;
        ok &= whole[e] == (row % per) * a2 + e % a2 + 1000 * (row + 1) && split[e] == whole[e];
    }
    for (int64_t r = 0; r < rows; r++)
        ok &= mw[r] == whole[r * a2 + a2 - 1] && ms[r] == mw[r];
    TAP_CHECK(ok && !place_zero, "driver: %lld x %lld rows of %lld, %lld rows a call from the loop's first row, a "
              "row's broadcast input repeated along it: the same place in its call for every element whatever the "
              "split of the range, the maxima folded per row, and a split group's other places given the data's "
              "values", (long long)a0, (long long)a1, (long long)a2, (long long)per);
    free(x), free(whole), free(split), free(mw), free(ms);
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
    test_groups(100, 10, 0, 0, 1);
    test_groups(100, 10, 1, 1, 1);
    test_groups(37, 3, 0, 1, 1);
    test_groups(9, 128, 1, 0, 1);
    test_groups(100, 10, 0, 1, 0);
    test_group_places(3, 7, 9);
    test_group_places(4, 13, 9);
    test_group_places(2, 40, 3);
    KT_EACH_PATH {
        test_fn(5, 600);
        test_fn(300, 3);
    }
    tg_ctx_free(ctx);
    return TAP_DONE();
}
