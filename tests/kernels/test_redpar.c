/* test_redpar.c - reductions to one value fold fixed blocks of
 * TGJ_RED_BLOCK elements (kernels/codegen.h), which the compiled loop runs
 * on every OpenMP thread: the results are the same bits on 1, 2 and 16
 * threads, on the interpreter, and in a hand-written loop that folds the
 * same blocks; within rounding of a plain sequential loop; for fused and
 * unfused reductions, sum / prod / mean / max / min, float64 and int64,
 * contiguous and strided inputs, below, at and above one block.  Both
 * paths. */
#include "config.h"

#include <dlfcn.h>

#include "kt.h"

#define BLOCK 65536     /* TGJ_RED_BLOCK */

static tg_ctx *ctx;

/* The OpenMP runtime the compiled loops run on (loaded by the first
 * compiled call), or NULL when there is none. */
static void (*set_threads)(int);

static void find_openmp(void)
{
    void *h = dlopen("libgomp.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (h)
        *(void **)&set_threads = dlsym(h, "omp_set_num_threads");
}

static double xval(int64_t i)
{
    /* magnitudes over many binades, so that the order of additions shows */
    return sin((double)i * 0.37) * exp((double)(i % 29) - 14.0);
}

static double yval(int64_t i)
{
    return 1.0 + (double)(i % 7) * 0.125;
}

/* The hand-written references of op over f(i), i < n: the blocks of
 * BLOCK folded as the library documents (exact), and one plain
 * sequential loop (within rounding). */
static double ref_fold(const char *op, double a, double v)
{
    if (!strcmp(op, "prod"))
        return a * v;
    if (!strcmp(op, "max"))
        return a != a ? a : v != v || v > a ? v : a;
    if (!strcmp(op, "min"))
        return a != a ? a : v != v || v < a ? v : a;
    return a + v;
}

static double ref_identity(const char *op)
{
    return !strcmp(op, "prod") ? 1 : !strcmp(op, "max") ? -INFINITY : !strcmp(op, "min") ? INFINITY : 0;
}

static void refs(const char *op, int fused, int64_t n, double *blocked, double *plain, double *sumabs)
{
    double acc = ref_identity(op), seq = acc;
    *sumabs = 0;
    for (int64_t b0 = 0; b0 < n; b0 += BLOCK) {
        double part = ref_identity(op);
        for (int64_t i = b0; i < n && i < b0 + BLOCK; i++) {
            double v = fused ? xval(i) * yval(i) : xval(i);
            part = ref_fold(op, part, v);
            *sumabs += fabs(v);
            seq = ref_fold(op, seq, v);
        }
        acc = ref_fold(op, acc, part);
    }
    if (!strcmp(op, "mean"))
        acc /= (double)n, seq /= (double)n;
    *blocked = acc, *plain = seq;
}

/* The arrays x and y of n elements (strided: every other element of a
 * buffer twice as long). */
static void make_inputs(int64_t n, int strided, kt_arr *x, kt_arr *y)
{
    kt_make(x, TG_FLOAT64, 1, &n, strided);
    kt_make(y, TG_FLOAT64, 1, &n, strided);
    for (int64_t i = 0; i < n; i++) {
        kt_set(&x->a, &i, xval(i));
        kt_set(&y->a, &i, yval(i));
    }
}

/* The results of path kt_path, kept for the other path's comparison:
 * [op][fused][size][strided]. */
static uint64_t kept[5][2][4][2];
static const char *const ops[] = {"sum", "prod", "mean", "max", "min"};
static const int64_t sizes[] = {1000, BLOCK, BLOCK + 1, 4 * BLOCK + 4099};
static int differs;     /* cases where the blocks' order changed the bits */

static void test_float(void)
{
    for (int o = 0; o < 5; o++)
        for (int fused = 0; fused < 2; fused++) {
            char out[200];
            if (fused)
                snprintf(out, sizeof out, "(%s (mul (input x float64 (n)) (input y float64 (n))) all)", ops[o]);
            else
                snprintf(out, sizeof out, "(%s (input x float64 (n)) all)", ops[o]);
            tg_error err;
            tg_fn *fn = kt_compile(ctx, "(input x float64 (n)) (input y float64 (n))", out, NULL, kt_path, &err);
            if (!TAP_CHECK(fn != NULL, "%s compiles (%s)", out, fn ? "" : err.message))
                continue;
            for (int z = 0; z < 4; z++)
                for (int strided = 0; strided < 2; strided++) {
                    int64_t n = sizes[z];
                    kt_arr x, y;
                    make_inputs(n, strided, &x, &y);
                    tg_array in[2] = {x.a, y.a}, res;
                    double r[3] = {0, 0, 0}, blocked, plain, sumabs;
                    int threads[3] = {1, 2, 16}, ok = 1;
                    for (int t = 0; t < 3; t++) {
                        if (set_threads)
                            set_threads(threads[t]);
                        tg_array_init(&res, TG_FLOAT64, 0, NULL, &r[t]);
                        ok &= tg_fn_call(fn, in, &res, &err) == 0;
                        if (!set_threads && !kt_path)
                            find_openmp();
                    }
                    if (set_threads)
                        set_threads(2);
                    refs(ops[o], fused, n, &blocked, &plain, &sumabs);
                    uint64_t bits;
                    memcpy(&bits, &r[0], 8);
                    TAP_CHECK(ok && !memcmp(&r[0], &r[1], 8) && !memcmp(&r[0], &r[2], 8),
                              "%s, n = %lld%s: the same bits on 1, 2 and 16 threads (%.17g %.17g %.17g)", out,
                              (long long)n, strided ? ", strided" : "", r[0], r[1], r[2]);
                    TAP_CHECK(!memcmp(&r[0], &blocked, 8),
                              "%s, n = %lld%s: the bits of the hand-written blocked loop (%.17g, loop %.17g)", out,
                              (long long)n, strided ? ", strided" : "", r[0], blocked);
                    /* the bound of any order of n additions; a product
                     * of these factors overflows or underflows alike */
                    double tol = (double)n * 2.3e-16 * sumabs / (!strcmp(ops[o], "mean") ? (double)n : 1);
                    TAP_CHECK(r[0] == plain || fabs(r[0] - plain) <= tol || (r[0] != r[0] && plain != plain),
                              "%s, n = %lld%s: within rounding of a plain loop (%.17g vs %.17g)", out,
                              (long long)n, strided ? ", strided" : "", r[0], plain);
                    differs += memcmp(&blocked, &plain, 8) != 0;
                    if (kt_path == 0)
                        kept[o][fused][z][strided] = bits;
                    else
                        TAP_CHECK(kept[o][fused][z][strided] == bits,
                                  "%s, n = %lld%s: the interpreter gives the compiled loop's bits", out,
                                  (long long)n, strided ? ", strided" : "");
                    free(x.block), free(y.block);
                }
            tg_fn_free(fn);
        }
}

/* Integer sums wrap: any order gives the same value; the blocks must
 * still cover every element once. */
static void test_int(void)
{
    tg_error err;
    tg_fn *fn = kt_compile(ctx, "(input x int64 (n))", "(sum (mul (input x int64 (n)) 3) all)", NULL, kt_path, &err);
    int64_t n = 3 * BLOCK + 17;
    int64_t *x = malloc((size_t)n * 8), want = 0, got[2] = {0, 0};
    for (int64_t i = 0; i < n; i++) {
        x[i] = (int64_t)(kt_rand() >> 1);
        want = (int64_t)((uint64_t)want + (uint64_t)x[i] * 3u);
    }
    tg_array in, res;
    tg_array_init(&in, TG_INT64, 1, &n, x);
    int ok = fn != NULL;
    for (int t = 0; t < 2 && ok; t++) {
        if (set_threads)
            set_threads(t ? 16 : 1);
        tg_array_init(&res, TG_INT64, 0, NULL, &got[t]);
        ok &= tg_fn_call(fn, &in, &res, &err) == 0;
    }
    if (set_threads)
        set_threads(2);
    TAP_CHECK(ok && got[0] == want && got[1] == want, "int64 sum over 3 blocks and a part, wrapping: %lld %lld, loop %lld",
              (long long)got[0], (long long)got[1], (long long)want);
    tg_fn_free(fn);
    free(x);
}

int main(void)
{
    /* 16 threads on a machine of fewer cores: let waiting threads sleep */
    setenv("OMP_WAIT_POLICY", "passive", 0);
    tg_error err;
    ctx = tg_ctx_new(&err);
    KT_EACH_PATH {
        test_float();
        test_int();
        /* else the blocked and the plain loops agree and prove nothing */
        TAP_CHECK(differs > 0, "the blocks' order gives other bits than a plain loop in %d cases", differs);
        differs = 0;
#ifdef TGREL_OPENMP_FLAG
        if (kt_path == 0)
            TAP_CHECK(set_threads != NULL, "the compiled loops run on an OpenMP runtime whose thread count is set");
#endif
    }
    tg_ctx_free(ctx);
    return TAP_DONE();
}
