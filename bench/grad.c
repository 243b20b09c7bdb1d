/* grad.c - how long expanding a gradient takes (tg_grad_expand,
 * kernels/grad.c) on the two shapes whose cost must stay linear: a chain
 * of 10^5 ops (exp, log, mul, add in turn) and a DAG of 10^4 nodes each
 * using the one before twice (t + 1e-4 sin t: 2^10000 paths).  The
 * reference, measured in the same run, is building the forward graph
 * itself (tg_app over the same ops), and the ratio is printed; so is the
 * time to type and schedule the expanded graph (tg_fn_compile in the
 * interpreter).  One JSON object per line; this thread's CPU time,
 * medians of R runs, each in a context of its own. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tgrel.h"
#include "bench.h"
#include "grad_bench.h"

enum { R = 5 };

typedef struct built {
    tg_ctx *ctx;
    tg_term *x, *cost;
} built;

/* The forward graph: the chain of n ops, or the DAG of n steps. */
static void build(built *b, int chain, int n)
{
    tg_ctx *c = b->ctx;
    b->x = tg_read_cstr(c, "(input x float64 ())", NULL);
    tg_term *exp_ = tg_symbol_cstr(c, "exp"), *log_ = tg_symbol_cstr(c, "log"),
            *mul = tg_symbol_cstr(c, "mul"), *add = tg_symbol_cstr(c, "add"),
            *sin_ = tg_symbol_cstr(c, "sin");
    tg_term *c1 = tg_double(c, 1.0001), *c2 = tg_double(c, -0.0001), *eps = tg_double(c, 1e-4);
    tg_term *t = b->x;
    for (int k = 0; k < n; k++) {
        if (chain) {
            tg_term *a[2] = {t, k % 4 == 2 ? c1 : c2};
            t = k % 4 == 0 ? tg_app(c, exp_, 1, a) : k % 4 == 1 ? tg_app(c, log_, 1, a)
                : tg_app(c, k % 4 == 2 ? mul : add, 2, a);
        } else {
            tg_term *s = tg_app(c, sin_, 1, &t);
            tg_term *m[2] = {eps, s};
            tg_term *a[2] = {t, tg_app(c, mul, 2, m)};
            t = tg_app(c, add, 2, a);
        }
    }
    b->cost = t;
}

static void run(const char *name, int chain, int n)
{
    double tb[R], tx[R], tc[R];
    for (int r = 0; r < R; r++) {
        built b = {tg_ctx_new(NULL), NULL, NULL};
        double t0 = bench_thread_cpu_ms();
        build(&b, chain, n);
        double t1 = bench_thread_cpu_ms();
        tg_term *ga[2] = {b.cost, b.x};
        tg_term *g = tg_app(b.ctx, tg_symbol_cstr(b.ctx, "grad"), 2, ga);
        tg_error err;
        tg_term *ex = tg_grad_expand(b.ctx, g, NULL, &err);
        double t2 = bench_thread_cpu_ms();
        if (!ex) {
            fprintf(stderr, "grad bench: %s\n", err.message);
            exit(1);
        }
        tg_fn_options o = {.interpret = 1};
        tg_fn *f = tg_fn_compile(b.ctx, 1, &b.x, 1, &ex, &o, &err);
        double t3 = bench_thread_cpu_ms();
        if (!f) {
            fprintf(stderr, "grad bench: %s\n", err.message);
            exit(1);
        }
        tg_fn_free(f);
        tg_ctx_free(b.ctx);
        tb[r] = t1 - t0, tx[r] = t2 - t1, tc[r] = t3 - t2;
    }
    double b = bench_median(tb, R), x = bench_median(tx, R), c = bench_median(tc, R);
    printf("{\"bench\": \"grad\", \"case\": ");
    bench_json_string(name);
    printf(", \"nodes\": %d, \"expand_ms\": %.2f, \"forward_build_ms\": %.2f, \"ratio\": %.1f, "
           "\"compile_interpreted_ms\": %.2f}\n", chain ? n : 3 * n, x, b, x / b, c);
    fflush(stdout);
}

/* ==== backpropagation through time (gradients of scans) =====================
 * An RNN h_t = tanh(W h_{t-1} + x_t), 64 units, 10^4 steps, loss the sum
 * of all h; its gradient with respect to W, x and h0 as one function
 * compiled with the library's default rewriter, against a hand-written
 * C BPTT loop in the same run: the forward pass with cblas_dgemv and
 * tanh, the backward pass with cblas_dgemv (transposed) and cblas_dger
 * per step.  This thread's CPU time, medians of R runs. */

#define BPTT_ROW 101
#define BPTT_NOTRANS 111
#define BPTT_TRANS 112
typedef void (*bptt_gemv)(int, int, int, int, double, const double *, int, const double *, int, double, double *,
                          int);
typedef void (*bptt_ger)(int, int, int, double, const double *, int, const double *, int, double *, int);

__attribute__((noinline)) static void ref_bptt(bptt_gemv gemv, bptt_ger ger, long T, int H, const double *W,
                                               const double *x, const double *h0, double *h, double *gW,
                                               double *gx, double *gh0, double *tmp)
{
    const double *prev = h0;
    for (long t = 0; t < T; t++) {
        gemv(BPTT_ROW, BPTT_NOTRANS, H, H, 1.0, W, H, prev, 1, 0.0, tmp, 1);
        double *cur = h + t * H;
        for (int i = 0; i < H; i++)
            cur[i] = tanh(tmp[i] + x[t * H + i]);
        prev = cur;
    }
    memset(gW, 0, sizeof(double) * H * H);
    double *carry = gh0;     /* dL/dh_t from the steps after t */
    memset(carry, 0, sizeof(double) * H);
    for (long t = T - 1; t >= 0; t--) {
        double *dz = gx + t * H;
        const double *ht = h + t * H, *hp = t ? h + (t - 1) * H : h0;
        for (int i = 0; i < H; i++)
            dz[i] = (1 + carry[i]) * (1 - ht[i] * ht[i]);
        ger(BPTT_ROW, H, H, 1.0, dz, 1, hp, 1, gW, H);
        gemv(BPTT_ROW, BPTT_TRANS, H, H, 1.0, W, H, dz, 1, 0.0, tmp, 1);
        memcpy(carry, tmp, sizeof(double) * H);
    }
}

static double bptt_diff(const double *a, const double *b, long n)
{
    double w = 0;
    for (long i = 0; i < n; i++)
        w = fmax(w, fabs(a[i] - b[i]) / (1 + fabs(b[i])));
    return w;
}

static void run_bptt(void)
{
    long T = 10000;
    int H = 64;
    tg_error err;
    tg_ctx *ctx = tg_ctx_new(NULL);
    tg_rules *rs = bench_library(ctx, "grad bench");
    if (!rs)
        exit(1);
    tg_term *in[3] = {tg_read_cstr(ctx, "(input x float64 (t h))", NULL),
                      tg_read_cstr(ctx, "(input w float64 (h h))", NULL),
                      tg_read_cstr(ctx, "(input h0 float64 (h))", NULL)};
    tg_term *L = tg_read_cstr(ctx, "(sum (scan (lambda (xt hp W) ((tanh (add (dot W hp) xt)))) (steps auto) "
                                   "(sequences (input x float64 (t h))) (outputs (sitsot (input h0 float64 (h)))) "
                                   "(non_sequences (input w float64 (h h)))) all)", NULL);
    tg_term *outs[3];
    for (int i = 0; i < 3; i++) {
        tg_term *a[2] = {L, in[(i + 1) % 3]};   /* W, h0, x */
        outs[i] = tg_app(ctx, tg_symbol_cstr(ctx, "grad"), 2, a);
    }
    tg_fn_options o = {.rules = rs};
    tg_fn *fn = tg_fn_compile(ctx, 3, in, 3, outs, &o, &err);
    if (!fn) {
        fprintf(stderr, "grad bench: %s\n", err.message);
        exit(1);
    }
    double *W = malloc(sizeof(double) * H * H), *x = malloc(sizeof(double) * T * H), *h0 = malloc(sizeof(double) * H);
    double *h = malloc(sizeof(double) * T * H), *tmp = malloc(sizeof(double) * H);
    double *rW = malloc(sizeof(double) * H * H), *rx = malloc(sizeof(double) * T * H), *rh0 = malloc(sizeof(double) * H);
    double *gW = malloc(sizeof(double) * H * H), *gx = malloc(sizeof(double) * T * H), *gh0 = malloc(sizeof(double) * H);
    for (int i = 0; i < H * H; i++)
        W[i] = sin(i * 0.37) * 0.2;
    for (long i = 0; i < T * H; i++)
        x[i] = cos(i * 0.011);
    for (int i = 0; i < H; i++)
        h0[i] = 0.1 * i / H;
    int64_t th[2] = {T, H}, hh[2] = {H, H}, hs = H;
    tg_array ia[3], oa[3];
    tg_array_init(&ia[0], TG_FLOAT64, 2, th, x);
    tg_array_init(&ia[1], TG_FLOAT64, 2, hh, W);
    tg_array_init(&ia[2], TG_FLOAT64, 1, &hs, h0);
    tg_array_init(&oa[0], TG_FLOAT64, 2, hh, gW);
    tg_array_init(&oa[1], TG_FLOAT64, 1, &hs, gh0);
    tg_array_init(&oa[2], TG_FLOAT64, 2, th, gx);
    if (getenv("TGREL_BENCH_SCHEDULE")) {      /* the schedule, to see what runs */
        char *p = tg_print(tg_fn_schedule(fn), NULL);
        fprintf(stderr, "%s\n", p);
        free(p);
    }
    int rc = tg_fn_call(fn, ia, oa, &err);     /* opens OpenBLAS, whose functions the reference calls */
    bptt_gemv gemv = (bptt_gemv)bench_blas_sym("cblas_dgemv");
    bptt_ger ger = (bptt_ger)bench_blas_sym("cblas_dger");
    if (rc < 0 || !gemv || !ger) {
        fprintf(stderr, "grad bench: %s\n", gemv && ger ? err.message : "no BLAS");
        exit(1);
    }
    double tt[R], tr[R];
    for (int r = 0; r < R; r++) {     /* alternated */
        double t0 = bench_thread_cpu_ms();
        tg_fn_call(fn, ia, oa, &err);
        double t1 = bench_thread_cpu_ms();
        ref_bptt(gemv, ger, T, H, W, x, h0, h, rW, rx, rh0, tmp);
        double t2 = bench_thread_cpu_ms();
        tt[r] = t1 - t0, tr[r] = t2 - t1;
    }
    double mt = bench_median(tt, R), mr = bench_median(tr, R);
    double d = fmax(bptt_diff(gW, rW, (long)H * H), fmax(bptt_diff(gx, rx, T * H), bptt_diff(gh0, rh0, H)));
    printf("{\"bench\": \"grad\", \"case\": \"BPTT, RNN of 64 units, 10^4 steps, d/dW d/dx d/dh0\", "
           "\"tgrel_ms\": %.2f, \"ref_c_bptt_dgemv_dger_ms\": %.2f, \"vs_ref\": %.3f, \"us_per_step\": %.3f, "
           "\"ref_us_per_step\": %.3f, \"max_rel_diff\": %.1e, \"native\": %d}\n",
           mt, mr, mt / mr, mt * 1e3 / T, mr * 1e3 / T, d, tg_fn_native(fn));
    fflush(stdout);
    tg_fn_free(fn);
    tg_rules_free(rs);
    free(W), free(x), free(h0), free(h), free(tmp), free(rW), free(rx), free(rh0), free(gW), free(gx), free(gh0);
    tg_ctx_free(ctx);
}

/* ==== end of backpropagation through time =================================== */

int main(int argc, char **argv)
{
    if (bench_want(argc, argv, "chain"))
        run("chain of 10^5 ops", 1, (int)bench_size(100000, 100));
    if (bench_want(argc, argv, "dag"))
        run("DAG of 10^4 steps, each using the one before twice", 0, (int)bench_size(10000, 10));
    if (bench_want(argc, argv, "logreg"))
        bench_logreg(1);    /* grad_logreg.c */
    else if (bench_want(argc, argv, "logreg_call"))
        bench_logreg(0);    /* the call alone */
    if (bench_want(argc, argv, "bptt"))
        run_bptt();
    return 0;
}
