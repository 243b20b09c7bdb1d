/* scanopt.c - benchmarks of the Scan rewrites (doc/scan.md, "Rewrites"),
 * one JSON object per line, each against a reference measured in the
 * same run:
 *   scanopt_overhead  `default` on a graph without scans (an expression
 *                     of N terms) against the same rewrite with the Scan
 *                     rewrites left out ((exclude scan)): what scan_opt
 *                     costs every compile that has no scan;
 *   scanopt_rnn       a 64-unit RNN whose step scales its weights by
 *                     exp(V) (loop-invariant work), 10^4 steps, compiled
 *                     with default against default without
 *                     scan-push-invariant: the call time it saves;
 *   scanopt_bptt, scanopt_dot1, scanopt_push_output, scanopt_push_seq_dot
 *                     the gradient of a 64-unit RNN's loss (BPTT), an
 *                     accumulated dot of rows by a matrix, an RNN whose
 *                     output y_t = sigmoid(V h_t) is stacked, an RNN
 *                     whose input is projected by a matrix (V x_t): each
 *                     compiled with default against default without the
 *                     rewrite it shows (scan-push-sums, scan-push-output,
 *                     scan-push-sequences), the same values;
 *   scanopt_savemem   an RNN of 10^5 steps read only in its last 3 rows,
 *                     with default against default without
 *                     scan-last-rows: time, and the memory the function
 *                     holds after a call (its buffers), in the same run.
 * Times are this thread's CPU time (the machine is shared), medians of R
 * runs.  Usage: scanopt [scale] [overhead|rnn|rewrites|savemem ...]
 * (scale 1 = full size; the sections named, or all) */
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tgrel.h"
#include "bench.h"

enum { R = 7 };

static tg_ctx *ctx;
static tg_rules *rs;

static tg_term *rd(const char *s)
{
    tg_error err;
    tg_term *t = tg_read_cstr(ctx, s, &err);
    if (!t) {
        fprintf(stderr, "scanopt bench: %s\n", err.message);
        exit(1);
    }
    return t;
}

/* (graph (add t0 ... tn-1)), ti = (mul (exp (add xi 1)) (sin (mul 1 yi))) */
static tg_term *expression(int n)
{
    size_t cap = (size_t)n * 64 + 64, len = 0;
    char *s = malloc(cap);
    len += (size_t)snprintf(s + len, cap - len, "(graph (add");
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(s + len, cap - len, " (mul (exp (add x%d 1)) (sin (mul 1 y%d)))", i, i);
    snprintf(s + len, cap - len, "))");
    tg_term *t = rd(s);
    free(s);
    return t;
}

static double time_rewrite(tg_term *spec, tg_term *t)
{
    tg_error err;
    double t0 = bench_thread_cpu_ms();
    if (!tg_rewrite(rs, spec, t, &err)) {
        fprintf(stderr, "scanopt bench: %s\n", err.message);
        exit(1);
    }
    return bench_thread_cpu_ms() - t0;
}

static void overhead(int n)
{
    tg_term *t = expression(n);
    tg_term *with = tg_symbol_cstr(ctx, "default");
    tg_term *without = rd("(query default (exclude scan))");
    double a[R], b[R];
    for (int r = 0; r < R; r++) {
        a[r] = time_rewrite(with, t);
        b[r] = time_rewrite(without, t);
    }
    double ma = bench_median(a, R), mb = bench_median(b, R);
    printf("{\"bench\":\"scanopt_overhead\",\"terms\":%d,\"default_ms\":%.3f,"
           "\"without_scan_opt_ms\":%.3f,\"ratio\":%.3f}\n", n, ma, mb, ma / mb);
}

static const char rnn[] =
    "(scan (lambda (xt h w v) ((tanh (add (dot (mul w (exp v)) h) xt)))) (steps auto)"
    " (sequences (input x float64 (T 64))) (outputs (sitsot (input h0 float64 (64))))"
    " (non_sequences (input W float64 (64 64)) (input V float64 (64 64))))";

static tg_fn *compile(const char *spec)
{
    tg_term *ins[4] = {rd("(input x float64 (T 64))"), rd("(input h0 float64 (64))"),
                       rd("(input W float64 (64 64))"), rd("(input V float64 (64 64))")};
    tg_term *out = rd(rnn);
    tg_fn_options o = {.rules = rs, .rewrite = rd(spec)};
    tg_error err;
    tg_fn *fn = tg_fn_compile(ctx, 4, ins, 1, &out, &o, &err);
    if (!fn) {
        fprintf(stderr, "scanopt bench: %s\n", err.message);
        exit(1);
    }
    return fn;
}

static double call(tg_fn *fn, const tg_array *in, double *y)
{
    tg_array out;
    int64_t shape[2] = {in[0].shape[0], 64};
    tg_array_init(&out, TG_FLOAT64, 2, shape, y);
    tg_error err;
    double t0 = bench_thread_cpu_ms();
    if (tg_fn_call(fn, in, &out, &err) < 0) {
        fprintf(stderr, "scanopt bench: %s\n", err.message);
        exit(1);
    }
    return bench_thread_cpu_ms() - t0;
}

static void rnn_bench(int64_t T)
{
    double *x = malloc((size_t)T * 64 * sizeof *x), *y1 = malloc((size_t)T * 64 * sizeof *y1),
           *y2 = malloc((size_t)T * 64 * sizeof *y2), h0[64], W[64 * 64], V[64 * 64];
    srand(7);
    for (int64_t i = 0; i < T * 64; i++)
        x[i] = rand() / (double)RAND_MAX - 0.5;
    for (int i = 0; i < 64; i++)
        h0[i] = 0;
    for (int i = 0; i < 64 * 64; i++)
        W[i] = (rand() / (double)RAND_MAX - 0.5) / 8, V[i] = (rand() / (double)RAND_MAX - 0.5) / 8;
    tg_array in[4];
    int64_t sx[2] = {T, 64}, sh[1] = {64}, sw[2] = {64, 64};
    tg_array_init(&in[0], TG_FLOAT64, 2, sx, x);
    tg_array_init(&in[1], TG_FLOAT64, 1, sh, h0);
    tg_array_init(&in[2], TG_FLOAT64, 2, sw, W);
    tg_array_init(&in[3], TG_FLOAT64, 2, sw, V);
    tg_fn *with = compile("default");
    tg_fn *without = compile("(query default (exclude scan-push-invariant))");
    double a[R], b[R];
    for (int r = 0; r < R; r++) {
        a[r] = call(with, in, y1);
        b[r] = call(without, in, y2);
    }
    double ma = bench_median(a, R), mb = bench_median(b, R), diff = 0;
    for (int64_t i = 0; i < T * 64; i++)
        diff = fabs(y1[i] - y2[i]) > diff ? fabs(y1[i] - y2[i]) : diff;
    printf("{\"bench\":\"scanopt_rnn\",\"steps\":%lld,\"native\":%d,\"default_ms\":%.3f,"
           "\"without_push_invariant_ms\":%.3f,\"ratio\":%.3f,\"max_abs_diff\":%.3g}\n",
           (long long)T, tg_fn_native(with) && tg_fn_native(without), ma, mb, ma / mb, diff);
    tg_fn_free(with), tg_fn_free(without);
    free(x), free(y1), free(y2);
}

/* A function of (x (T 64)), (h0 (64)), (W (64 64)), (V (64 64)) and its
 * outputs, compiled with default and without one rewrite, called
 * alternately; medians and the largest difference of their results. */
static void pair_bench(const char *name, const char *rewrite, int64_t T, int nout, const char *const *outs,
                       const int *out_rows)
{
    tg_term *ins[4] = {rd("(input x float64 (T 64))"), rd("(input h0 float64 (64))"),
                       rd("(input W float64 (64 64))"), rd("(input V float64 (64 64))")};
    tg_term *ot[4];
    for (int i = 0; i < nout; i++)
        ot[i] = rd(outs[i]);
    char spec[200];
    snprintf(spec, sizeof spec, "(query default (exclude %s))", rewrite);
    tg_fn *fn[2];
    tg_error err;
    for (int m = 0; m < 2; m++) {
        tg_fn_options o = {.rules = rs, .rewrite = rd(m ? spec : "default")};
        if (!(fn[m] = tg_fn_compile(ctx, 4, ins, (size_t)nout, ot, &o, &err))) {
            fprintf(stderr, "scanopt bench: %s\n", err.message);
            exit(1);
        }
    }
    double *x = malloc((size_t)T * 64 * sizeof *x), h0[64], W[64 * 64], V[64 * 64];
    srand(11);
    for (int64_t i = 0; i < T * 64; i++)
        x[i] = rand() / (double)RAND_MAX - 0.5;
    for (int i = 0; i < 64; i++)
        h0[i] = 0.01 * i;
    for (int i = 0; i < 64 * 64; i++)
        W[i] = (rand() / (double)RAND_MAX - 0.5) / 8, V[i] = (rand() / (double)RAND_MAX - 0.5) / 8;
    tg_array in[4], out[2][4];
    int64_t sx[2] = {T, 64}, sh[1] = {64}, sw[2] = {64, 64};
    tg_array_init(&in[0], TG_FLOAT64, 2, sx, x);
    tg_array_init(&in[1], TG_FLOAT64, 1, sh, h0);
    tg_array_init(&in[2], TG_FLOAT64, 2, sw, W);
    tg_array_init(&in[3], TG_FLOAT64, 2, sw, V);
    size_t len[4];
    for (int m = 0; m < 2; m++)
        for (int i = 0; i < nout; i++) {
            /* out_rows: -1 (64), 0 (64 64), 1 (T 64) */
            int64_t shp[2] = {out_rows[i] > 0 ? T : 64, 64};
            int nd = out_rows[i] < 0 ? 1 : 2;
            len[i] = (size_t)(nd == 1 ? 64 : shp[0] * 64);
            tg_array_init(&out[m][i], TG_FLOAT64, nd, nd == 1 ? sh : shp, malloc(len[i] * sizeof(double)));
        }
    double t[2][R];
    for (int r = 0; r < R; r++)
        for (int m = 0; m < 2; m++) {
            double t0 = bench_thread_cpu_ms();
            if (tg_fn_call(fn[m], in, out[m], &err) < 0) {
                fprintf(stderr, "scanopt bench: %s\n", err.message);
                exit(1);
            }
            t[m][r] = bench_thread_cpu_ms() - t0;
        }
    double diff = 0;
    for (int i = 0; i < nout; i++)
        for (size_t j = 0; j < len[i]; j++) {
            double a = ((double *)out[0][i].data)[j], b = ((double *)out[1][i].data)[j];
            double d = fabs(a - b) / (fabs(b) > 1 ? fabs(b) : 1);
            diff = d > diff ? d : diff;
        }
    double ma = bench_median(t[0], R), mb = bench_median(t[1], R);
    printf("{\"bench\":\"%s\",\"steps\":%lld,\"native\":%d,\"default_ms\":%.3f,\"without_%s_ms\":%.3f,"
           "\"ratio\":%.3f,\"us_per_step\":%.3f,\"max_rel_diff\":%.3g}\n",
           name, (long long)T, tg_fn_native(fn[0]) && tg_fn_native(fn[1]), ma, rewrite, mb, ma / mb,
           ma * 1e3 / (double)T, diff);
    for (int m = 0; m < 2; m++) {
        for (int i = 0; i < nout; i++)
            free(out[m][i].data);
        tg_fn_free(fn[m]);
    }
    free(x);
}

#define RNN_SCAN(STEP, OUTS) \
    "(scan (lambda (xt hp W V) (" STEP ")) (steps auto) (sequences (input x float64 (T 64)))" \
    " (outputs (sitsot (input h0 float64 (64))) " OUTS ") (non_sequences (input W float64 (64 64)) (input V float64 (64 64))))"

static void rewrite_benches(int64_t T)
{
    static const char loss[] = "(sum " RNN_SCAN("(tanh (add (dot W hp) xt))", "") " all)";
    char g[3][sizeof loss + 64];
    const char *wrt[3] = {"(input W float64 (64 64))", "(input x float64 (T 64))", "(input h0 float64 (64))"};
    for (int i = 0; i < 3; i++)
        snprintf(g[i], sizeof g[i], "(grad %s %s)", loss, wrt[i]);
    const char *gr[3] = {g[0], g[1], g[2]};
    pair_bench("scanopt_bptt", "scan-push-sums", T, 3, gr, (const int[]){0, 1, -1});
    const char *dot1 = "(scan (lambda (xt acc W) ((add acc (dot xt W)))) (steps auto) (sequences (input x float64 (T 64)))"
                       " (outputs (sitsot (input h0 float64 (64)) last)) (non_sequences (input W float64 (64 64))))";
    pair_bench("scanopt_dot1", "scan-push-sums", T, 1, &dot1, (const int[]){-1});
    const char *y = "(scan_output " RNN_SCAN("(tanh (add (dot W hp) xt)) (sigmoid (dot V (tanh (add (dot W hp) xt))))",
                                             "(nitsot)") " 1)";
    pair_bench("scanopt_push_output", "scan-push-output", T, 1, &y, (const int[]){1});
    const char *proj = RNN_SCAN("(tanh (add (dot W hp) (dot V xt)))", "");
    pair_bench("scanopt_push_seq_dot", "scan-push-sequences", T, 1, &proj, (const int[]){1});
}

/* The heap in use (malloc'd, mapped chunks included). */
static size_t heap_used(void)
{
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

/* save-mem: an RNN of 64 units over T steps whose output is read only in
 * its last 3 rows, compiled with default against default without
 * scan-last-rows (the stacked states in the workspace, T rows), called
 * alternately; the memory a call needs is what the function holds after
 * its first call (its workspace and rings are kept between calls). */
static void savemem_bench(int64_t T)
{
    const char *out = "(subtensor " RNN_SCAN("(tanh (add (dot W hp) xt))", "") " (slice -3 none none))";
    char ins[4][64] = {"(input x float64 (T 64))", "(input h0 float64 (64))", "(input W float64 (64 64))",
                       "(input V float64 (64 64))"};
    /* T static: save-mem needs the steps known to be at least 3 */
    for (int i = 0; i < 1; i++)
        snprintf(ins[i], sizeof ins[i], "(input x float64 (%lld 64))", (long long)T);
    char o[1024];
    const char *p = strstr(out, "(T 64)");
    snprintf(o, sizeof o, "%.*s(%lld 64)%s", (int)(p - out), out, (long long)T, p + 6);
    tg_term *it[4];
    for (int i = 0; i < 4; i++)
        it[i] = rd(ins[i]);
    tg_term *ot = rd(o);
    tg_term *spec[2] = {tg_symbol_cstr(ctx, "default"), rd("(query default (exclude scan-last-rows))")};
    double *x = malloc((size_t)T * 64 * sizeof *x), h0[64], W[64 * 64], V[64 * 64], y[2][3 * 64];
    srand(11);
    for (int64_t i = 0; i < T * 64; i++)
        x[i] = rand() / (double)RAND_MAX - 0.5;
    for (int i = 0; i < 64; i++)
        h0[i] = 0;
    for (int i = 0; i < 64 * 64; i++)
        W[i] = (rand() / (double)RAND_MAX - 0.5) / 8, V[i] = 0;
    tg_array in[4], res[2];
    int64_t sx[2] = {T, 64}, sh[1] = {64}, sw[2] = {64, 64}, so[2] = {3, 64};
    tg_array_init(&in[0], TG_FLOAT64, 2, sx, x);
    tg_array_init(&in[1], TG_FLOAT64, 1, sh, h0);
    tg_array_init(&in[2], TG_FLOAT64, 2, sw, W);
    tg_array_init(&in[3], TG_FLOAT64, 2, sw, V);
    tg_fn *fn[2];
    size_t held[2];
    tg_error err;
    for (int m = 0; m < 2; m++) {
        tg_fn_options opt = {.rules = rs, .rewrite = spec[m]};
        if (!(fn[m] = tg_fn_compile(ctx, 4, it, 1, &ot, &opt, &err))) {
            fprintf(stderr, "scanopt bench: %s\n", err.message);
            exit(1);
        }
        tg_array_init(&res[m], TG_FLOAT64, 2, so, y[m]);
        size_t h = heap_used();
        if (tg_fn_call(fn[m], in, &res[m], &err) < 0) {
            fprintf(stderr, "scanopt bench: %s\n", err.message);
            exit(1);
        }
        held[m] = heap_used() - h;
    }
    double t[2][R];
    for (int r = 0; r < R; r++)
        for (int m = 0; m < 2; m++) {
            double t0 = bench_thread_cpu_ms();
            if (tg_fn_call(fn[m], in, &res[m], &err) < 0) {
                fprintf(stderr, "scanopt bench: %s\n", err.message);
                exit(1);
            }
            t[m][r] = bench_thread_cpu_ms() - t0;
        }
    double diff = 0;
    for (int i = 0; i < 3 * 64; i++)
        diff = fmax(diff, fabs(y[0][i] - y[1][i]));
    double a = bench_median(t[0], R), b = bench_median(t[1], R);
    printf("{\"bench\":\"scanopt_savemem\",\"steps\":%lld,\"rows_read\":3,\"native\":%d,\"default_ms\":%.3f,"
           "\"without_scan-last-rows_ms\":%.3f,\"ratio\":%.3f,\"default_held_bytes\":%zu,"
           "\"without_held_bytes\":%zu,\"max_abs_diff\":%.3g}\n",
           (long long)T, tg_fn_native(fn[0]), a, b, a / b, held[0], held[1], diff);
    tg_fn_free(fn[0]), tg_fn_free(fn[1]);
    free(x);
}

/* Sections named on the command line (words, not the scale), or all. */
static int want(int argc, char **argv, const char *name)
{
    int named = 0;
    for (int i = 1; i < argc; i++)
        if (atof(argv[i]) <= 0) {
            named = 1;
            if (strcmp(argv[i], name) == 0)
                return 1;
        }
    return !named;
}

int main(int argc, char **argv)
{
    double scale = argc > 1 && atof(argv[1]) > 0 ? atof(argv[1]) : bench_scale(1);
    tg_error err;
    ctx = tg_ctx_new(&err);
    rs = tg_rules_new(ctx, &err);
    const char *inc = "(include \"all.rules\")";
    if (tg_rules_load_string(rs, inc, strlen(inc), NULL, &err) < 0) {
        fprintf(stderr, "scanopt bench: %s (set TGREL_RULES_PATH to patterns/lib)\n", err.message);
        return 1;
    }
    if (want(argc, argv, "overhead"))
        overhead((int)(2000 * scale) + 1);
    if (want(argc, argv, "rnn"))
        rnn_bench((int64_t)(10000 * scale) + 1);
    if (want(argc, argv, "rewrites"))
        rewrite_benches((int64_t)(10000 * scale) + 1);
    if (want(argc, argv, "savemem"))
        savemem_bench((int64_t)(100000 * scale) + 3);
    tg_rules_free(rs);
    tg_ctx_free(ctx);
    return 0;
}
