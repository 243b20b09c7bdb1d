/* scan.c - benchmarks of compiled scans (doc/scan.md), each against a
 * hand-written C loop measured in the same run: a cumulative sum of 10^7
 * doubles, Fibonacci modulo a prime for 10^7 steps, a 64-unit RNN
 * h_t = tanh(W h_{t-1} + x_t) for 10^4 steps against a loop calling
 * cblas_dgemv per step and a plain C loop compiled at run time with
 * -O3 -march=native -ffast-math; rows of 10 summed and accumulated (a reduction
 * in the lambda); the loop's own cost per step in nanoseconds, and the
 * interpreter's; and (crossover) the RNN step at 8 to 512 units with its
 * product inline against a BLAS call, the first size where BLAS wins.  One JSON object per line; times are this thread's
 * CPU time (the machine is shared), medians of R runs. */
#include "config.h"

#include <cblas.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tgrel.h"
#include "bench.h"

enum { R = 7 };

static double now(void) { return bench_thread_cpu_ms() * 1e-3; }

/* Set when a benchmark could not run: the program then exits 1. */
static int failed;

static tg_fn *compile(tg_ctx *ctx, int nin, const char *const *ins, const char *out, int interpret)
{
    tg_fn *fn = bench_fn(ctx, "scan bench", nin, ins, out, interpret);
    failed |= !fn;
    return fn;
}

/* The references, kept out of line so that the compiler sees a loop;
 * each writes its result through a pointer, so that no call is moved
 * out of its timing (a pure function may be). */
__attribute__((noinline)) static void ref_cumsum(long n, const double *x, double *y)
{
    double acc = 0;
    for (long i = 0; i < n; i++)
        y[i] = acc += x[i];
}

__attribute__((noinline)) static void ref_fib(long n, int64_t a, int64_t b, int64_t p, int64_t *out)
{
    for (long i = 0; i < n; i++) {
        int64_t c = (a + b) % p;
        a = b, b = c;
    }
    *out = b;
}

/* The dgemv of the OpenBLAS tgrel opened, on the core it runs. */
static __typeof__(cblas_dgemv) *blas_dgemv;

__attribute__((noinline)) static void ref_rnn(long T, int H, const double *W, const double *x, const double *h0,
                                              double *h, double *tmp)
{
    const double *prev = h0;
    for (long t = 0; t < T; t++) {
        blas_dgemv(CblasRowMajor, CblasNoTrans, H, H, 1.0, W, H, prev, 1, 0.0, tmp, 1);
        double *cur = h + t * H;
        for (int i = 0; i < H; i++)
            cur[i] = tanh(tmp[i] + x[t * H + i]);
        prev = cur;
    }
}

/* The plain loop, as anyone would write it, for the C compiler at -O3
 * -march=native -ffast-math (which may reorder the sums and vectorize). */
static const char rnn_src[] =
    "#include <math.h>\n"
    "void rnn(long T, int H, const double *W, const double *x, const double *h0, double *h) {\n"
    "  const double *prev = h0;\n"
    "  for (long t = 0; t < T; t++) {\n"
    "    double *cur = h + t * H;\n"
    "    for (int i = 0; i < H; i++) {\n"
    "      double s = x[t * H + i];\n"
    "      for (int j = 0; j < H; j++) s += W[i * H + j] * prev[j];\n"
    "      cur[i] = tanh(s);\n"
    "    }\n"
    "    prev = cur;\n"
    "  }\n"
    "}\n";

typedef void (*rnn_fn)(long T, int H, const double *W, const double *x, const double *h0, double *h);

/* rnn_src compiled and loaded; NULL without a compiler. */
static rnn_fn load_rnn_ref(void)
{
    char dir[] = "/tmp/tgrel-scan-bench-XXXXXX", src[80], so[80], cmd[400];
    if (!mkdtemp(dir))
        return NULL;
    snprintf(src, sizeof src, "%s/rnn.c", dir);
    snprintf(so, sizeof so, "%s/rnn.so", dir);
    FILE *f = fopen(src, "w");
    if (!f)
        return NULL;
    fputs(rnn_src, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "cc -O3 -march=native -ffast-math -shared -fPIC -o '%s' '%s' -lm", so, src);
    void *h = system(cmd) == 0 ? dlopen(so, RTLD_NOW) : NULL;
    unlink(so), unlink(src), rmdir(dir);
    return h ? (rnn_fn)dlsym(h, "rnn") : NULL;
}

/* Median seconds of R calls of fn. */
static double time_fn(tg_fn *fn, const tg_array *in, tg_array *out, int reps)
{
    double v[R];
    tg_error err;
    for (int r = 0; r < reps; r++) {
        double t = now();
        if (tg_fn_call(fn, in, out, &err) < 0) {
            fprintf(stderr, "scan bench: %s\n", err.message);
            failed = 1;
        }
        v[r] = now() - t;
    }
    return bench_median(v, reps);
}

static void bench_cumsum(tg_ctx *ctx)
{
    long n = bench_size(10000000, 100);
    double *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y), *y2 = malloc(n * sizeof *y2);
    for (long i = 0; i < n; i++)
        x[i] = (double)(i % 1000) - 500;
    const char *ins[] = {"(input x float64 (n))"};
    const char *e = "(scan (lambda (xt acc) ((add acc xt))) (steps auto) (sequences (input x float64 (n)))"
                    " (outputs (sitsot (const float64 0))) (non_sequences))";
    tg_fn *nat = compile(ctx, 1, ins, e, 0), *itp = compile(ctx, 1, ins, e, 1);
    if (!nat || !itp)
        return;
    int64_t sh = n;
    tg_array in, out;
    tg_array_init(&in, TG_FLOAT64, 1, &sh, x);
    tg_array_init(&out, TG_FLOAT64, 1, &sh, y);
    double tr[R];
    for (int r = 0; r < R; r++) {
        double t = now();
        ref_cumsum(n, x, y2);
        tr[r] = now() - t;
    }
    double tn = time_fn(nat, &in, &out, R), ti = time_fn(itp, &in, &out, 3), mr = bench_median(tr, R);
    int same = memcmp(y, y2, n * sizeof *y) == 0;
    printf("{\"bench\":\"scan_cumsum\",\"steps\":%ld,\"tgrel_ms\":%.2f,\"ref_c_loop_ms\":%.2f,\"vs_ref\":%.3f,"
           "\"interp_ms\":%.1f,\"ns_per_step\":%.2f,\"ref_ns_per_step\":%.2f,\"loop_overhead_ns_per_step\":%.2f,"
           "\"interp_ns_per_step\":%.1f,\"same_bits\":%d,\"native\":%d}\n",
           n, tn * 1e3, mr * 1e3, tn / mr, ti * 1e3, tn / n * 1e9, mr / n * 1e9, (tn - mr) / n * 1e9,
           ti / n * 1e9, same, tg_fn_native(nat));
    tg_fn_free(nat), tg_fn_free(itp);
    free(x), free(y), free(y2);
}

__attribute__((noinline)) static void ref_rowsum(long n, const double *x, double *y)
{
    double acc = 0;
    for (long t = 0; t < n; t++) {
        double s = 0;
        for (int j = 0; j < 10; j++)
            s += x[t * 10 + j];
        y[t] = acc += s;
    }
}

/* A reduction in the lambda (rows of 10 summed, then accumulated):
 * compiled, and with a view in the lambda, which the generated loop does
 * not take, so that the loop is interpreted and calls the compiled inner
 * loops; and the interpreter alone. */
static void bench_rowsum(tg_ctx *ctx)
{
    long nr = bench_size(1000000, 100);
    double *x = malloc(nr * 10 * sizeof *x), *y = malloc(nr * sizeof *y), *y2 = malloc(nr * sizeof *y2);
    for (long i = 0; i < nr * 10; i++)
        x[i] = (double)(i % 1000) - 500;
    const char *ins[] = {"(input x float64 (r 10))"};
    const char *e = "(scan (lambda (xt acc) ((add acc (sum xt all)))) (steps auto)"
                    " (sequences (input x float64 (r 10))) (outputs (sitsot (const float64 0))) (non_sequences))";
    const char *ev = "(scan (lambda (xt acc) ((add acc (sum (transpose xt) all)))) (steps auto)"
                     " (sequences (input x float64 (r 10))) (outputs (sitsot (const float64 0))) (non_sequences))";
    tg_fn *nat = compile(ctx, 1, ins, e, 0), *view = compile(ctx, 1, ins, ev, 0), *itp = compile(ctx, 1, ins, e, 1);
    if (!nat || !view || !itp)
        return;
    int64_t sh[2] = {nr, 10};
    tg_array in, out;
    tg_array_init(&in, TG_FLOAT64, 2, sh, x);
    tg_array_init(&out, TG_FLOAT64, 1, sh, y);
    double tr[R];
    for (int r = 0; r < R; r++) {
        double t = now();
        ref_rowsum(nr, x, y2);
        tr[r] = now() - t;
    }
    double tn = time_fn(nat, &in, &out, R), mr = bench_median(tr, R);
    int same = memcmp(y, y2, nr * sizeof *y) == 0;
    double tv = time_fn(view, &in, &out, R), ti = time_fn(itp, &in, &out, 3);
    printf("{\"bench\":\"scan_rowsum_10\",\"steps\":%ld,\"tgrel_ns_per_step\":%.1f,\"ref_c_loop_ns_per_step\":%.1f,"
           "\"vs_ref\":%.3f,\"interpreted_loop_compiled_inner_ns_per_step\":%.1f,\"interp_ns_per_step\":%.1f,"
           "\"same_bits\":%d}\n",
           nr, tn / nr * 1e9, mr / nr * 1e9, tn / mr, tv / nr * 1e9, ti / nr * 1e9, same);
    tg_fn_free(nat), tg_fn_free(view), tg_fn_free(itp);
    free(x), free(y), free(y2);
}

static void bench_fib(tg_ctx *ctx)
{
    long n = bench_size(10000000, 100);
    const int64_t P = 1000000007;
    int64_t f0[2] = {0, 1}, last = 0, two = 2;
    const char *ins[] = {"(input f0 int64 (2))"};
    char e[400];
    snprintf(e, sizeof e, "(scan (lambda (a b) ((mod (add a b) %lld))) (steps %ld) (sequences)"
             " (outputs (mitsot (input f0 int64 (2)) (taps -2 -1) last)) (non_sequences))", (long long)P, n);
    tg_fn *nat = compile(ctx, 1, ins, e, 0);
    if (!nat)
        return;
    tg_array in, out;
    tg_array_init(&in, TG_INT64, 1, &two, f0);
    tg_array_init(&out, TG_INT64, 0, NULL, &last);
    double tr[R];
    int64_t want = 0;
    for (int r = 0; r < R; r++) {
        double t = now();
        ref_fib(n, f0[0], f0[1], P, &want);
        tr[r] = now() - t;
    }
    double tn = time_fn(nat, &in, &out, R), mr = bench_median(tr, R);
    printf("{\"bench\":\"scan_fibonacci_mod_p\",\"steps\":%ld,\"tgrel_ms\":%.2f,\"ref_c_loop_ms\":%.2f,"
           "\"vs_ref\":%.3f,\"ns_per_step\":%.2f,\"same_value\":%d,\"native\":%d}\n",
           n, tn * 1e3, mr * 1e3, tn / mr, tn / n * 1e9, last == want, tg_fn_native(nat));
    tg_fn_free(nat);
}

static void bench_rnn(tg_ctx *ctx)
{
    long T = bench_size(10000, 10);
    int H = 64;
    double *W = malloc(sizeof(double) * H * H), *x = malloc(sizeof(double) * T * H);
    double *h0 = malloc(sizeof(double) * H), *h = malloc(sizeof(double) * T * H);
    double *h2 = malloc(sizeof(double) * T * H), *tmp = malloc(sizeof(double) * H);
    for (int i = 0; i < H * H; i++)
        W[i] = sin(i * 0.37) * 0.2;
    for (long i = 0; i < T * H; i++)
        x[i] = cos(i * 0.011);
    for (int i = 0; i < H; i++)
        h0[i] = 0.1 * i / H;
    const char *ins[] = {"(input x float64 (t h))", "(input w float64 (h h))", "(input h0 float64 (h))"};
    const char *e = "(scan (lambda (xt hp W) ((tanh (add (dot W hp) xt)))) (steps auto)"
                    " (sequences (input x float64 (t h))) (outputs (sitsot (input h0 float64 (h))))"
                    " (non_sequences (input w float64 (h h))))";
    tg_fn *nat = compile(ctx, 3, ins, e, 0), *itp = compile(ctx, 3, ins, e, 1);
    if (!nat || !itp)
        return;
    int64_t th[2] = {T, H}, hh[2] = {H, H}, hs = H;
    tg_array in[3], out;
    tg_array_init(&in[0], TG_FLOAT64, 2, th, x);
    tg_array_init(&in[1], TG_FLOAT64, 2, hh, W);
    tg_array_init(&in[2], TG_FLOAT64, 1, &hs, h0);
    tg_array_init(&out, TG_FLOAT64, 2, th, h);
    tg_error err;
    if (tg_fn_call(itp, in, &out, &err) < 0 || !(blas_dgemv = bench_blas_sym("cblas_dgemv"))) {
        fprintf(stderr, "scan bench: no BLAS: %s\n", err.message);
        failed = 1;
        return;
    }
    double tr[R];
    for (int r = 0; r < R; r++) {
        double t = now();
        ref_rnn(T, H, W, x, h0, h2, tmp);
        tr[r] = now() - t;
    }
    double tn = time_fn(nat, in, &out, R), mr = bench_median(tr, R);
    double worst = 0;       /* the compiled loop's values against the dgemv loop's */
    for (long i = 0; i < T * H; i++)
        worst = fmax(worst, fabs(h[i] - h2[i]));
    double ti = time_fn(itp, in, &out, 3);
    /* the plain -O3 -ffast-math loop, alternated with tgrel's */
    rnn_fn plain = load_rnn_ref();
    double tp[R], tt[R], worst_plain = 0;
    for (int r = 0; plain && r < R; r++) {
        double t = now();
        plain(T, H, W, x, h0, h2);
        tp[r] = now() - t;
        tt[r] = time_fn(nat, in, &out, 1);
    }
    for (long i = 0; plain && i < T * H; i++)
        worst_plain = fmax(worst_plain, fabs(h[i] - h2[i]));
    double mp = plain ? bench_median(tp, R) : 0, mt = plain ? bench_median(tt, R) : 0;
    printf("{\"bench\":\"scan_rnn_64\",\"steps\":%ld,\"tgrel_ms\":%.2f,\"ref_c_dgemv_loop_ms\":%.2f,"
           "\"vs_ref\":%.3f,\"interp_ms\":%.1f,\"us_per_step\":%.3f,\"max_abs_diff\":%.1e,\"native\":%d,"
           "\"plain_O3_fast_math_ms\":%.2f,\"tgrel_alternated_ms\":%.2f,\"vs_plain_O3\":%.3f,"
           "\"plain_us_per_step\":%.3f,\"plain_max_abs_diff\":%.1e}\n",
           T, tn * 1e3, mr * 1e3, tn / mr, ti * 1e3, tn / T * 1e6, worst, tg_fn_native(nat), mp * 1e3, mt * 1e3,
           mp > 0 ? mt / mp : 0, mp / T * 1e6, worst_plain);
    tg_fn_free(nat), tg_fn_free(itp);
    free(W), free(x), free(h0), free(h), free(h2), free(tmp);
}

/* The RNN compiled with its products forced inline (-DTGK_DOT_INLINE_MAX
 * huge) or forced to BLAS (0); NULL when it does not compile. */
static tg_fn *compile_rnn_forced(tg_ctx *ctx, int inl)
{
    const char *src[] = {"(input x float64 (t h))", "(input w float64 (h h))", "(input h0 float64 (h))"};
    const char *e = "(scan (lambda (xt hp W) ((tanh (add (dot W hp) xt)))) (steps auto)"
                    " (sequences (input x float64 (t h))) (outputs (sitsot (input h0 float64 (h))))"
                    " (non_sequences (input w float64 (h h))))";
    tg_error err;
    tg_term *it[3], *o = tg_read_cstr(ctx, e, &err);
    for (int i = 0; i < 3; i++)
        it[i] = tg_read_cstr(ctx, src[i], &err);
    tg_fn_options opt = {.cflags = inl ? BENCH_CFLAGS " -DTGK_DOT_INLINE_MAX=1000000000000LL"
                                       : BENCH_CFLAGS " -DTGK_DOT_INLINE_MAX=0"};
    tg_fn *fn = tg_fn_compile(ctx, 3, it, 1, &o, &opt, &err);
    if (!fn)
        fprintf(stderr, "scan bench: %s\n", err.message);
    failed |= !fn;
    return fn;
}

/* Where inline products stop paying: the RNN step at sizes H, its gemv
 * inline against the BLAS call (same generated loop otherwise),
 * alternated; the crossover is the first H where BLAS is faster (the
 * library's default threshold, TGK_DOT_INLINE_MAX in doc/scan.md, comes
 * from it). */
static void bench_rnn_crossover(tg_ctx *ctx)
{
    tg_fn *fi = compile_rnn_forced(ctx, 1), *fb = compile_rnn_forced(ctx, 0);
    if (!fi || !fb)
        return;
    int cross = 0;
    for (int H = 8; H <= 512; H *= 2) {
        long T = bench_size(20000000L / ((long)H * H) + 20, 4);
        double *W = malloc(sizeof(double) * H * H), *x = malloc(sizeof(double) * T * H);
        double *h0 = calloc((size_t)H, sizeof(double)), *h = malloc(sizeof(double) * T * H);
        double *hb = malloc(sizeof(double) * T * H);
        for (int i = 0; i < H * H; i++)
            W[i] = sin(i * 0.37) * 2.0 / H;
        for (long i = 0; i < T * H; i++)
            x[i] = cos(i * 0.011);
        int64_t th[2] = {T, H}, hh[2] = {H, H}, hs = H;
        tg_array in[3], out, outb;
        tg_array_init(&in[0], TG_FLOAT64, 2, th, x);
        tg_array_init(&in[1], TG_FLOAT64, 2, hh, W);
        tg_array_init(&in[2], TG_FLOAT64, 1, &hs, h0);
        tg_array_init(&out, TG_FLOAT64, 2, th, h);
        tg_array_init(&outb, TG_FLOAT64, 2, th, hb);
        double ti[R], tb[R], worst = 0;
        for (int r = 0; r < R; r++) {
            ti[r] = time_fn(fi, in, &out, 1);
            tb[r] = time_fn(fb, in, &outb, 1);
        }
        for (long i = 0; i < T * H; i++)
            worst = fmax(worst, fabs(h[i] - hb[i]));
        double mi = bench_median(ti, R), mb = bench_median(tb, R);
        if (!cross && mb < mi)
            cross = H;
        printf("{\"bench\":\"scan_rnn_inline_vs_blas\",\"units\":%d,\"steps\":%ld,\"inline_us_per_step\":%.3f,"
               "\"blas_us_per_step\":%.3f,\"inline_vs_blas\":%.3f,\"max_abs_diff\":%.1e}\n",
               H, T, mi / T * 1e6, mb / T * 1e6, mi / mb, worst);
        free(W), free(x), free(h0), free(h), free(hb);
    }
    printf("{\"bench\":\"scan_rnn_crossover\",\"first_units_where_blas_wins\":%d,\"note\":\"0: inline won at"
           " every size up to 512\"}\n", cross);
    tg_fn_free(fi), tg_fn_free(fb);
}

int main(int argc, char **argv)
{
    tg_error err;
    tg_ctx *ctx = tg_ctx_new(&err);
    if (bench_want(argc, argv, "cumsum"))
        bench_cumsum(ctx);
    if (bench_want(argc, argv, "rowsum"))
        bench_rowsum(ctx);
    if (bench_want(argc, argv, "fib"))
        bench_fib(ctx);
    if (bench_want(argc, argv, "rnn"))
        bench_rnn(ctx);
    if (bench_want(argc, argv, "crossover"))
        bench_rnn_crossover(ctx);
    tg_ctx_free(ctx);
    return failed;
}
