/* state.c - the cost of shared variables and updates (one JSON object a
 * line, references in the same run): an update written in place against
 * the same function staging it (double buffering: the buffer swapped in
 * after the call) and against a hand-written C loop; the per-call
 * overhead of 20 shared variables with 20 updates against the same
 * function taking and giving plain arrays. */
#include <stdint.h>

#include "tgrel.h"
#include "bench.h"

static tg_ctx *ctx;

static tg_fn *compile(const char *ins, const char *outs, const char *upd)
{
    tg_error err;
    tg_term *it[64], *ot[64];
    size_t ni = bench_read_terms(ctx, ins, it, 64, &err);
    size_t no = bench_read_terms(ctx, outs, ot, 64, &err);
    tg_fn_options o;
    memset(&o, 0, sizeof o);
    o.updates = upd ? tg_read_cstr(ctx, upd, &err) : NULL;
    tg_fn *fn = tg_fn_compile(ctx, ni, it, no, ot, &o, &err);
    if (!fn) {
        fprintf(stderr, "bench/state: %s\n", err.message);
        exit(1);
    }
    return fn;
}

/* The median over 7 runs of the thread CPU time per call of fn, in us;
 * with view set, *slot is pointed at its storage before each call (a
 * staged update swaps buffers, so the storage moves). */
static double time_calls(tg_fn *fn, tg_array *in, tg_array *out, int calls, const tg_shared *view,
                         tg_array *slot)
{
    double t[7];
    tg_error err;
    for (int r = 0; r < 7; r++) {
        double t0 = bench_thread_cpu_ms();
        for (int c = 0; c < calls; c++)
            if ((view && tg_shared_view(view, slot, &err) < 0) || tg_fn_call(fn, in, out, &err) < 0) {
                fprintf(stderr, "bench/state: %s\n", err.message);
                exit(1);
            }
        t[r] = (bench_thread_cpu_ms() - t0) * 1e3 / calls;
    }
    return bench_median(t, 7);
}

/* W := W - 0.01 G over n doubles; D is an argument the function does not
 * read: pointed at W's storage it makes the call stage the update. */
static void inplace_vs_staged(int64_t n)
{
    tg_error err;
    double *w = calloc((size_t)n, 8), *g = malloc((size_t)n * 8), *d = calloc((size_t)n, 8);
    for (int64_t i = 0; i < n; i++)
        g[i] = (double)(i % 7) - 3;
    tg_array a;
    tg_array_init(&a, TG_FLOAT64, 1, &n, w);
    tg_shared *sw = tg_shared_new(ctx, "W", &a, &err);
    tg_fn *fn = compile("(input G float64 (n)) (input D float64 (n))", "",
                        "(((shared W float64 (n)) (sub (shared W float64 (n)) (mul 0.01 (input G float64 (n))))))");
    tg_array in[2];
    tg_array_init(&in[0], TG_FLOAT64, 1, &n, g);
    tg_array_init(&in[1], TG_FLOAT64, 1, &n, d);
    int calls = n >= 1000000 ? 20 : (int)bench_size(2000, 10);
    double tin = time_calls(fn, in, NULL, calls, NULL, NULL);
    double tst = time_calls(fn, in, NULL, calls, sw, &in[1]);
    /* the C loop on a buffer of its own */
    double tc[7];
    for (int r = 0; r < 7; r++) {
        double t0 = bench_thread_cpu_ms();
        for (int c = 0; c < calls; c++) {
            for (int64_t i = 0; i < n; i++)
                w[i] -= 0.01 * g[i];
            __asm__ __volatile__("" ::"r"(w) : "memory");
        }
        tc[r] = (bench_thread_cpu_ms() - t0) * 1e3 / calls;
    }
    double tref = bench_median(tc, 7);
    printf("{\"bench\": \"update W := W - 0.01*G\", \"n\": %lld, \"inplace_us\": %.3f, \"staged_us\": %.3f, "
           "\"c_loop_us\": %.3f, \"staged_over_inplace\": %.3f, \"inplace_over_c\": %.3f}\n",
           (long long)n, tin, tst, tref, tst / tin, tin / tref);
    tg_fn_free(fn);
    tg_shared_free(sw);
    free(w), free(g), free(d);
}

/* s_k := s_k + x for 20 scalar variables, against the same function over
 * 20 inputs and 20 outputs (what the caller would pass back and forth). */
static void overhead(void)
{
    enum { K = 20 };
    tg_error err;
    char ins[64 * K], outs[128 * K], upd[256 * K], name[16];
    size_t oi = 0, oo = 0, ou = 0;
    double zero = 0, x = 1, in[K + 1], out[K];
    tg_array a;
    tg_array_init(&a, TG_FLOAT64, 0, NULL, &zero);
    tg_shared *sv[K];
    oi += (size_t)snprintf(ins + oi, sizeof ins - oi, "(input x float64 ())");
    ou += (size_t)snprintf(upd + ou, sizeof upd - ou, "(");
    for (int k = 0; k < K; k++) {
        snprintf(name, sizeof name, "s%d", k);
        sv[k] = tg_shared_new(ctx, name, &a, &err);
        oi += (size_t)snprintf(ins + oi, sizeof ins - oi, " (input p%d float64 ())", k);
        oo += (size_t)snprintf(outs + oo, sizeof outs - oo, " (add (input p%d float64 ()) (input x float64 ()))", k);
        ou += (size_t)snprintf(upd + ou, sizeof upd - ou,
                               " ((shared s%d float64 ()) (add (shared s%d float64 ()) (input x float64 ())))", k, k);
    }
    snprintf(upd + ou, sizeof upd - ou, ")");
    tg_fn *plain = compile(ins, outs, NULL);
    tg_fn *state = compile("(input x float64 ())", "", upd);
    tg_array pin[K + 1], pout[K], sin;
    in[0] = x;
    for (int k = 0; k <= K; k++)
        tg_array_init(&pin[k], TG_FLOAT64, 0, NULL, &in[k]);
    for (int k = 0; k < K; k++)
        tg_array_init(&pout[k], TG_FLOAT64, 0, NULL, &out[k]);
    tg_array_init(&sin, TG_FLOAT64, 0, NULL, &x);
    double tp = time_calls(plain, pin, pout, (int)bench_size(100000, 100), NULL, NULL);
    double ts = time_calls(state, &sin, NULL, (int)bench_size(100000, 100), NULL, NULL);
    printf("{\"bench\": \"20 shared variables, 20 updates, per call\", \"plain_us\": %.3f, \"updates_us\": %.3f, "
           "\"added_us\": %.3f}\n", tp, ts, ts - tp);
    tg_fn_free(plain);
    tg_fn_free(state);
    for (int k = 0; k < K; k++)
        tg_shared_free(sv[k]);
}

int main(void)
{
    tg_error err;
    ctx = tg_ctx_new(&err);
    inplace_vs_staged(bench_size(1000, 10));
    inplace_vs_staged(bench_size(100000, 100));
    inplace_vs_staged(bench_size(4000000, 1000));
    overhead();
    tg_ctx_free(ctx);
    return 0;
}
