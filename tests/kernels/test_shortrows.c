/* test_shortrows.c - loops over short rows (a minibatch's 256 x 10
 * logits) run as one loop where every operand's memory allows it, and
 * reductions of float64 inputs folded a row at a time: each against a
 * loop written here, on the compiled path and in the interpreter, with
 * contiguous, strided and broadcast operands, axes of size 1, and NaN. */
#include "config.h"

#include <math.h>
#include <stdio.h>

#include "kt.h"

static tg_ctx *ctx;

/* Layouts of the inputs: contiguous, or kt_make's strided (every other
 * element, the first axis reversed). */
static const char *const lay[] = {"contiguous", "strided"};

/* v and w equal: the same bits, or both NaN. */
static int same(double v, double w) { return (isnan(v) && isnan(w)) || memcmp(&v, &w, 8) == 0; }

/* Elementwise and reduced results of a (n m k), b (m k), c (n 1 k):
 * e = a * b + exp(c), r = sum over the last axis of a * b, s = sum over
 * the first of a * a; compared with the loops here (e within libmvec's
 * 4 ulp of exp, r and s exactly: the same order of addition). */
static void test_loops(int64_t n, int64_t m, int64_t k, int strided)
{
    tg_error err;
    const char *ins = "(input a float64 (n m k)) (input b float64 (m k)) (input c float64 (n 1 k))";
    const char *outs = "(add (mul (input a float64 (n m k)) (input b float64 (m k))) (exp (input c float64 (n 1 k))))"
                       " (sum (mul (input a float64 (n m k)) (input b float64 (m k))) (axes 2))"
                       " (sum (mul (input a float64 (n m k)) (input a float64 (n m k))) (axes 0))";
    tg_fn *fn = kt_compile(ctx, ins, outs, NULL, kt_path, &err);
    if (!fn) {
        TAP_CHECK(0, "compiles (%s)", err.message);
        return;
    }
    int64_t sa[3] = {n, m, k}, sb[2] = {m, k}, sc[3] = {n, 1, k};
    kt_arr a, b, c;
    kt_make(&a, TG_FLOAT64, 3, sa, strided);
    kt_make(&b, TG_FLOAT64, 2, sb, strided);
    kt_make(&c, TG_FLOAT64, 3, sc, strided);
    kt_fill(&a.a, -2, 2), kt_fill(&b.a, -2, 2), kt_fill(&c.a, -3, 3);
    tg_array in[3] = {a.a, b.a, c.a}, out[3];
    memset(out, 0, sizeof out);
    int ok = tg_fn_call(fn, in, out, &err) == 0;
    int64_t bad = 0;
    for (int64_t i = 0; ok && i < n; i++)
        for (int64_t j = 0; j < m; j++) {
            double r = 0;
            for (int64_t q = 0; q < k; q++) {
                int64_t ia[3] = {i, j, q}, ib[2] = {j, q}, ic[3] = {i, 0, q};
                double ab = (double)kt_get(&a.a, ia) * (double)kt_get(&b.a, ib);
                double e = ab + exp((double)kt_get(&c.a, ic)), got = (double)kt_get(&out[0], ia);
                bad += !(fabs(got - e) <= 1e-14 * (fabs(e) + 1));
                r += ab;
            }
            int64_t ir[2] = {i, j};
            bad += !same((double)kt_get(&out[1], ir), r);
        }
    for (int64_t j = 0; ok && j < m; j++)
        for (int64_t q = 0; q < k; q++) {
            double s = 0;
            for (int64_t i = 0; i < n; i++) {
                int64_t ia[3] = {i, j, q};
                double x = (double)kt_get(&a.a, ia);
                s += x * x;
            }
            int64_t is[2] = {j, q};
            bad += !same((double)kt_get(&out[2], is), s);
        }
    TAP_CHECK(ok && bad == 0, "a %s, b %s, c %s, %s: elementwise, last-axis and first-axis sums as the loops here "
              "(%lld differ%s%s)", kt_shape(3, sa), kt_shape(2, sb), kt_shape(3, sc), lay[strided], (long long)bad,
              ok ? "" : ": ", ok ? "" : err.message);
    for (int q = 0; q < 3; q++)
        free(out[q].data);
    free(a.block), free(b.block), free(c.block);
    tg_fn_free(fn);
}

/* A reduction (op over axes) of the input x itself (a step of its own),
 * against the fold written here in C order; some elements NaN. */
static void test_reduce(const char *op, int ax0, int ax1, int strided)
{
    tg_error err;
    char outs[200];
    if (ax1 < 0)
        snprintf(outs, sizeof outs, "(%s (input x float64 (n m k)) (axes %d))", op, ax0);
    else
        snprintf(outs, sizeof outs, "(%s (input x float64 (n m k)) (axes %d %d))", op, ax0, ax1);
    tg_fn *fn = kt_compile(ctx, "(input x float64 (n m k))", outs, NULL, kt_path, &err);
    if (!fn) {
        TAP_CHECK(0, "%s compiles (%s)", outs, err.message);
        return;
    }
    int64_t sx[3] = {4, 3, 7};
    kt_arr x;
    kt_make(&x, TG_FLOAT64, 3, sx, strided);
    kt_fill(&x.a, 0.5, 1.5);
    int64_t nan_at[3] = {2, 1, 3};
    kt_set(&x.a, nan_at, NAN);
    tg_array out = {0};
    int ok = tg_fn_call(fn, &x.a, &out, &err) == 0;
    /* the expected values, in the output's C order */
    double want[4 * 3 * 7];
    int64_t cnt[4 * 3 * 7] = {0}, osh[3], on = 0, I[3] = {0};
    for (int d = 0; d < 3; d++)
        if (d != ax0 && d != ax1)
            osh[on++] = sx[d];
    int64_t nout = 1;
    for (int d = 0; d < on; d++)
        nout *= osh[d];
    bool isprod = !strcmp(op, "prod"), ismax = !strcmp(op, "max"), ismin = !strcmp(op, "min");
    for (int64_t i = 0; i < nout; i++)
        want[i] = isprod ? 1 : ismax ? -INFINITY : ismin ? INFINITY : 0;
    do {
        int64_t o = 0;
        for (int d = 0; d < 3; d++)
            if (d != ax0 && d != ax1)
                o = o * sx[d] + I[d];
        double v = (double)kt_get(&x.a, I), *w = &want[o];
        if (ismax)
            *w = isnan(*w) ? *w : isnan(v) || v > *w ? v : *w;
        else if (ismin)
            *w = isnan(*w) ? *w : isnan(v) || v < *w ? v : *w;
        else if (isprod)
            *w *= v;
        else
            *w += v;
        cnt[o]++;
    } while (kt_next(3, sx, I));
    int64_t bad = 0, J[3] = {0};
    for (int64_t i = 0; ok && i < nout; i++) {
        double w = !strcmp(op, "mean") ? want[i] / (double)cnt[i] : want[i];
        bad += !same((double)kt_get(&out, J), w);
        kt_next((int)on, osh, J);
    }
    TAP_CHECK(ok && out.ndim == on && bad == 0, "%s of x %s %s: as the fold here, NaN included (%lld differ%s%s)",
              outs, kt_shape(3, sx), lay[strided], (long long)bad, ok ? "" : ": ", ok ? "" : err.message);
    free(out.data), free(x.block);
    tg_fn_free(fn);
}

int main(void)
{
    tg_error err;
    ctx = tg_ctx_new(&err);
    static const int64_t shapes[][3] = {{256, 1, 10}, {3, 4, 10}, {5, 1, 1}, {1, 6, 3}, {2, 3, 33}};
    static const char *const ops[] = {"sum", "max", "min", "prod", "mean"};
    static const int axes[][2] = {{2, -1}, {1, -1}, {0, -1}, {1, 2}, {0, 2}};
    KT_EACH_PATH {
        for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
            for (int st = 0; st < 2; st++)
                test_loops(shapes[s][0], shapes[s][1], shapes[s][2], st);
        for (size_t o = 0; o < sizeof ops / sizeof *ops; o++)
            for (size_t a = 0; a < sizeof axes / sizeof *axes; a++)
                test_reduce(ops[o], axes[a][0], axes[a][1], (int)(a % 2));
    }
    tg_ctx_free(ctx);
    return TAP_DONE();
}
