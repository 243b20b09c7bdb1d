/* grad.c - how long expanding a gradient takes (tg_grad_expand,
 * kernels/grad.c) on the two shapes whose cost must stay linear: a chain
 * of 10^5 ops (exp, log, mul, add in turn) and a DAG of 10^4 nodes each
 * using the one before twice (t + 1e-4 sin t: 2^10000 paths).  The
 * reference, measured in the same run, is building the forward graph
 * itself (tg_app over the same ops), and the ratio is printed; so is the
 * time to type and schedule the expanded graph (tg_fn_compile in the
 * interpreter).  One JSON object per line; this thread's CPU time,
 * medians of R runs, each in a context of its own. */
#include <stdio.h>
#include <stdlib.h>

#include "tgrel.h"
#include "bench.h"

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

int main(int argc, char **argv)
{
    if (bench_want(argc, argv, "chain"))
        run("chain of 10^5 ops", 1, (int)bench_size(100000, 100));
    if (bench_want(argc, argv, "dag"))
        run("DAG of 10^4 steps, each using the one before twice", 0, (int)bench_size(10000, 10));
    return 0;
}
