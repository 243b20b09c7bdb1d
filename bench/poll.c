/* poll.c - what reading the interrupt flag costs a compiled scan
 * (tg_fn_interrupt, Ctrl-C in the REPL; doc/scan.md): the cumulative sum
 * of 10^7 doubles, the cheapest step there is, compiled with the default
 * flags and again with -DTGK_NO_POLL (the same loop without the read),
 * the two called alternately in one process; the median of the ratios
 * of the pairs, and each one's median time.  The target: under
 * 1% (a ratio below 1.01; the shared machine's noise is about that
 * size, so several runs are compared).  One JSON object per line; times
 * are this thread's CPU time. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tgrel.h"
#include "bench.h"

enum { PAIRS = 41 };

static tg_fn *cumsum(tg_ctx *ctx, const char *cflags)
{
    tg_error err;
    tg_term *x = tg_read_cstr(ctx, "(input x float64 (n))", &err);
    tg_term *e = tg_read_cstr(ctx, "(scan (lambda (xt acc) ((add acc xt))) (steps auto)"
                                   " (sequences (input x float64 (n))) (outputs (sitsot (const float64 0)))"
                                   " (non_sequences))", &err);
    tg_fn_options opt = {.cflags = cflags};
    tg_fn *fn = x && e ? tg_fn_compile(ctx, 1, &x, 1, &e, &opt, &err) : NULL;
    if (!fn)
        fprintf(stderr, "poll bench: %s\n", err.message);
    return fn;
}

static double call_ms(tg_fn *fn, const tg_array *in, tg_array *out, int *bad)
{
    tg_error err;
    double t = bench_thread_cpu_ms();
    if (tg_fn_call(fn, in, out, &err) < 0) {
        fprintf(stderr, "poll bench: %s\n", err.message);
        *bad = 1;
    }
    return bench_thread_cpu_ms() - t;
}

int main(void)
{
    tg_error err;
    tg_ctx *ctx = tg_ctx_new(&err);
    long n = bench_size(10000000, 1000);
    int pairs = bench_scale(1) < 1 ? 3 : PAIRS, bad = 0;
    double *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y), *y2 = malloc(n * sizeof *y2);
    tg_fn *poll = ctx ? cumsum(ctx, BENCH_CFLAGS) : NULL, *nopoll = ctx ? cumsum(ctx, BENCH_CFLAGS " -DTGK_NO_POLL") : NULL;
    if (!x || !y || !y2 || !poll || !nopoll)
        return 1;
    for (long i = 0; i < n; i++)
        x[i] = (double)(i % 1000) - 500;
    int64_t sh = n;
    tg_array in, out, out2;
    tg_array_init(&in, TG_FLOAT64, 1, &sh, x);
    tg_array_init(&out, TG_FLOAT64, 1, &sh, y);
    tg_array_init(&out2, TG_FLOAT64, 1, &sh, y2);
    double tp[PAIRS], tn[PAIRS], ratio[PAIRS];
    for (int i = 0; i < pairs; i++) {  /* alternate which goes first */
        if (i % 2) {
            tn[i] = call_ms(nopoll, &in, &out2, &bad);
            tp[i] = call_ms(poll, &in, &out, &bad);
        } else {
            tp[i] = call_ms(poll, &in, &out, &bad);
            tn[i] = call_ms(nopoll, &in, &out2, &bad);
        }
        ratio[i] = tn[i] > 0 ? tp[i] / tn[i] : 1;
    }
    int same = memcmp(y, y2, n * sizeof *y) == 0;
    printf("{\"bench\":\"scan_poll_cost\",\"steps\":%ld,\"pairs\":%d,\"polling_ms\":%.2f,\"no_poll_ms\":%.2f,"
           "\"median_ratio\":%.4f,\"same_bits\":%d,\"native\":%d}\n",
           n, pairs, bench_median(tp, pairs), bench_median(tn, pairs), bench_median(ratio, pairs), same,
           tg_fn_native(poll));
    tg_fn_free(poll), tg_fn_free(nopoll);
    free(x), free(y), free(y2);
    tg_ctx_free(ctx);
    return bad || !same;
}
