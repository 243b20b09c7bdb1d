/* kernels.c - benchmarks of compiled tensor functions, each against a
 * reference measured in the same run: the fused expression
 * exp(x)*y + sin(z)/(1+x*x) on 10^7 doubles against a hand-written fused
 * C loop (-O3 -march=native -ffast-math) and an unfused one pass per op
 * (what an array library without fusion does) and numpy (the system
 * python's, or $PYTHON's, when importable), with the 1-vs-2-thread speedup and the load
 * average; a sum of a product fused into one pass against hand-written
 * loops; the interpreter; the
 * overhead of a call on 1-element inputs; lowering time of a 100-node
 * graph, cold and on a warm cache hit in a new process; GEMM 2000x2000
 * against cblas_dgemm, and at tgrel's default OpenBLAS core against
 * every core type forced by hand (OPENBLAS_CORETYPE, in child processes);
 * small products (the perceptron's and squares of 2^17 to 2^22
 * multiply-adds) against cblas_dgemm on OpenBLAS's threads and on one;
 * C + u v^T as a ger step against one fused loop;
 * an inc_subtensor with its value fused against the unfused form and a
 * hand-written loop, and inc_take against the interpreter and a
 * hand-written loop.  One JSON object per line. */
#include "config.h"

#include <cblas.h>
#include <dlfcn.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#include "tgrel.h"
#include "bench.h"

/* Single-threaded work is timed in this thread's CPU time: the machine
 * is shared, and wall time mostly measures the other users.  GEMM runs
 * on BLAS threads and is timed on the wall clock. */
static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* The tick counter the profiles read (as src/clock.h). */
static uint64_t ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
    return __rdtsc();
#else
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
#endif
}

static double wall(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* The OpenBLAS functions tgrel opened, resolved after its first dot
 * (bench.h): the references run the same library on the same core. */
/* Set when a benchmark could not run: the program then exits 1, so that
 * a broken benchmark fails the suite's run at a tiny scale. */
static int failed;

static __typeof__(cblas_dgemm) *blas_dgemm;
static __typeof__(cblas_dgemv) *blas_dgemv;
static __typeof__(cblas_ddot) *blas_ddot;
static char *(*blas_corename)(void);
static int (*blas_threads)(void);

static int blas_resolve(void)
{
    blas_dgemm = (__typeof__(blas_dgemm))bench_blas_sym("cblas_dgemm");
    blas_dgemv = (__typeof__(blas_dgemv))bench_blas_sym("cblas_dgemv");
    blas_ddot = (__typeof__(blas_ddot))bench_blas_sym("cblas_ddot");
    blas_corename = (char *(*)(void))bench_blas_sym("openblas_get_corename");
    blas_threads = (int (*)(void))bench_blas_sym("openblas_get_num_threads");
    if (blas_dgemm && blas_dgemv && blas_ddot && blas_corename && blas_threads)
        return 0;
    fprintf(stderr, "kernels bench: the OpenBLAS tgrel opened is not found\n");
    failed = 1;
    return -1;
}

static const char ref_src[] =
    "#include <math.h>\n"
    "void fused(long n, const double *x, const double *y, const double *z, double *o) {\n"
    "  for (long i = 0; i < n; i++) o[i] = exp(x[i]) * y[i] + sin(z[i]) / (1 + x[i] * x[i]); }\n"
    "void unfused(long n, const double *x, const double *y, const double *z, double *o, double *t1, double *t2) {\n"
    "  for (long i = 0; i < n; i++) t1[i] = exp(x[i]);\n"
    "  for (long i = 0; i < n; i++) t1[i] = t1[i] * y[i];\n"
    "  for (long i = 0; i < n; i++) t2[i] = sin(z[i]);\n"
    "  for (long i = 0; i < n; i++) o[i] = x[i] * x[i];\n"
    "  for (long i = 0; i < n; i++) o[i] = 1 + o[i];\n"
    "  for (long i = 0; i < n; i++) t2[i] = t2[i] / o[i];\n"
    "  for (long i = 0; i < n; i++) o[i] = t1[i] + t2[i]; }\n"
    "double dotsum(long n, const double *x, const double *y) {\n"
    "  double s = 0;\n"
    "  for (long i = 0; i < n; i++) s += x[i] * y[i];\n"
    "  return s; }\n"
    "/* tgrel's order for a sum to one value: blocks of 65536 in order */\n"
    "double dotsum_blocked(long n, const double *x, const double *y) {\n"
    "  double s = 0;\n"
    "  for (long b = 0; b < n; b += 65536) {\n"
    "    double p = 0;\n"
    "    for (long i = b; i < n && i < b + 65536; i++) p += x[i] * y[i];\n"
    "    s += p; }\n"
    "  return s; }\n";

/* Compile the reference loops with the given flags and load them. */
static void *load_ref(const char *dir, const char *name, const char *flags)
{
    return bench_cc_load(dir, name, ref_src, flags);
}

static tg_fn *compile(tg_ctx *ctx, int nin, const char *const *ins, const char *out, int interpret)
{
    tg_fn *fn = bench_fn(ctx, "kernels bench", nin, ins, out, interpret);
    failed |= !fn;
    return fn;
}

static const char *const xyz[] = {"(input x float64 (n))", "(input y float64 (n))", "(input z float64 (n))"};
static const char expr[] =
    "(add (mul (exp (input x float64 (n))) (input y float64 (n)))"
    " (true_div (sin (input z float64 (n))) (add 1 (mul (input x float64 (n)) (input x float64 (n))))))";

/* numpy on the same expression and data, in this thread's CPU time as
 * the rest (numpy runs it on one thread): the plain expression and one
 * writing into preallocated arrays.  0 when numpy is not importable. */
static const char numpy_script[] =
    "import sys, time\n"
    "try:\n"
    "    import numpy as np\n"
    "except Exception:\n"
    "    print('absent'); sys.exit(0)\n"
    "n = int(sys.argv[1]); i = np.arange(n, dtype=np.float64)\n"
    "x = np.sin(i * 0.001) * 3; y = np.cos(i * 0.002); z = i * 1e-6\n"
    "o = np.empty(n); t1 = np.empty(n); t2 = np.empty(n)\n"
    "def plain(): return np.exp(x) * y + np.sin(z) / (1 + x * x)\n"
    "def pre():\n"
    "    np.exp(x, out=t1); np.multiply(t1, y, out=t1); np.sin(z, out=t2)\n"
    "    np.multiply(x, x, out=o); np.add(o, 1, out=o); np.divide(t2, o, out=t2); np.add(t1, t2, out=o)\n"
    "def med(f):\n"
    "    ts = []\n"
    "    for r in range(7):\n"
    "        t = time.thread_time(); f(); ts.append(time.thread_time() - t)\n"
    "    return sorted(ts)[3] * 1e3\n"
    "print('%.3f %.3f' % (med(plain), med(pre)))\n";

static int numpy_ms(long n, const char *dir, double *plain, double *pre)
{
    char args[32], line[200] = "";
    snprintf(args, sizeof args, "%ld", n);
    return bench_python(dir, "numpy_ref.py", numpy_script, args, 0, line, sizeof line) &&
           sscanf(line, "%lf %lf", plain, pre) == 2;
}

static void bench_fused(tg_ctx *ctx, const char *dir)
{
    long n = bench_size(10000000, 1000);
    double *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y), *z = malloc(n * sizeof *z);
    double *o = malloc(n * sizeof *o), *t1 = malloc(n * sizeof *t1), *t2 = malloc(n * sizeof *t2);
    for (long i = 0; i < n; i++)
        x[i] = sin(i * 0.001) * 3, y[i] = cos(i * 0.002), z[i] = i * 1e-6;
    void *fast = load_ref(dir, "ref_fast", "-O3 -march=native -ffast-math");
    void *plain = load_ref(dir, "ref_plain", "-O2 -march=native");
    if (!fast || !plain) {
        fprintf(stderr, "kernels bench: cannot build the reference loops\n");
        failed = 1;
        return;
    }
    void (*ffast)(long, const double *, const double *, const double *, double *);
    void (*funf)(long, const double *, const double *, const double *, double *, double *, double *);
    *(void **)&ffast = dlsym(fast, "fused");
    *(void **)&funf = dlsym(plain, "unfused");
    tg_fn *nat = compile(ctx, 3, xyz, expr, 0), *itp = compile(ctx, 3, xyz, expr, 1);
    /* the kernels' OpenMP runtime: one thread for the CPU-time figures */
    void *gomp = dlopen("libgomp.so.1", RTLD_NOW | RTLD_NOLOAD);
    void (*set_threads)(int) = NULL;
    if (gomp)
        *(void **)&set_threads = dlsym(gomp, "omp_set_num_threads");
    if (set_threads)
        set_threads(1);
    int64_t sh = n;
    tg_array in[3], out;
    tg_array_init(&in[0], TG_FLOAT64, 1, &sh, x);
    tg_array_init(&in[1], TG_FLOAT64, 1, &sh, y);
    tg_array_init(&in[2], TG_FLOAT64, 1, &sh, z);
    tg_array_init(&out, TG_FLOAT64, 1, &sh, o);
    enum { R = 7 };
    double tn[R], ti[R], tf[R], tu[R];
    tg_error err;
    for (int r = 0; r < R; r++) {
        double t = now();
        tg_fn_call(nat, in, &out, &err);
        tn[r] = now() - t;
        t = now();
        ffast(n, x, y, z, o);
        tf[r] = now() - t;
        t = now();
        funf(n, x, y, z, o, t1, t2);
        tu[r] = now() - t;
        if (r < 3) {
            t = now();
            tg_fn_call(itp, in, &out, &err);
            ti[r] = now() - t;
        }
    }
    double mn = bench_median(tn, R), mf = bench_median(tf, R), mu = bench_median(tu, R), mi = bench_median(ti, 3);
    /* both cores: the compiled loop splits over OpenMP threads; wall time */
    double w1 = -1, w2 = -1;
    if (set_threads) {
        double t1[R], t2[R];
        for (int r = 0; r < R; r++) {
            set_threads(1);
            double t = wall();
            tg_fn_call(nat, in, &out, &err);
            t1[r] = wall() - t;
            set_threads(2);
            t = wall();
            tg_fn_call(nat, in, &out, &err);
            t2[r] = wall() - t;
        }
        w1 = bench_median(t1, R), w2 = bench_median(t2, R);
    }
    printf("{\"bench\":\"fused_expr_threads\",\"n\":%ld,\"one_thread_wall_ms\":%.2f,"
           "\"two_threads_wall_ms\":%.2f,\"speedup\":%.2f,\"loadavg_1min\":%.2f}\n", n, w1 * 1e3, w2 * 1e3,
           w2 > 0 ? w1 / w2 : 0, bench_loadavg());
    double np_plain = 0, np_pre = 0;
    int have_np = numpy_ms(n, dir, &np_plain, &np_pre);
    char npj[200];
    if (have_np)
        snprintf(npj, sizeof npj, "\"ref_numpy_ms\":%.2f,\"ref_numpy_prealloc_ms\":%.2f,\"speedup_vs_numpy\":%.2f",
                 np_plain, np_pre, np_plain / (mn * 1e3));
    else
        snprintf(npj, sizeof npj, "\"ref_numpy_ms\":null,\"numpy\":\"absent\"");
    printf("{\"bench\":\"fused_expr\",\"n\":%ld,\"tgrel_ms\":%.2f,\"interp_ms\":%.2f,"
           "\"ref_fused_fastmath_ms\":%.2f,\"ref_unfused_ms\":%.2f,\"vs_fused_ref\":%.3f,"
           "\"speedup_vs_unfused\":%.2f,%s,\"native\":%d}\n",
           n, mn * 1e3, mi * 1e3, mf * 1e3, mu * 1e3, mn / mf, mu / mn, npj, tg_fn_native(nat));
    tg_fn_free(nat);
    tg_fn_free(itp);
    free(x), free(y), free(z), free(o), free(t1), free(t2);
}

/* (sum (mul x y) all) on 10^7 float64: the reduction fused into the
 * loop (one pass, no temporary), on one thread, against hand-written
 * loops (-O2 adding in tgrel's order, blocks of 65536, so the same bits;
 * -O3 -ffast-math, which may reorder), and against the same work unfused
 * (the product stored, then summed); then on 1 and 2 OpenMP threads
 * (fused_sum_of_product_threads). */
/* omp_set_num_threads of the kernels' OpenMP runtime (loaded by a first
 * compiled call), or NULL. */
static void (*omp_threads(void))(int)
{
    void *gomp = dlopen("libgomp.so.1", RTLD_NOW | RTLD_NOLOAD);
    void (*set)(int) = NULL;
    if (gomp)
        *(void **)&set = dlsym(gomp, "omp_set_num_threads");
    return set;
}

/* The fused sum on 1 and 2 threads, alternated: wall time and the whole
 * process's CPU time (both threads), medians.  On a shared machine the
 * wall ratio includes the other users; cpu_speedup is what two threads
 * give when each has a core: one thread's CPU time over the busier
 * thread's share, the two threads' total halved (the blocks are split
 * evenly). */
static void reduce_threads(tg_fn *fn, const tg_array *in, void (*set_threads)(int), long n)
{
    enum { R = 9 };
    double w1[R], w2[R], c1[R], c2[R], r1 = 0, r2 = 0;
    tg_array o1, o2;
    tg_array_init(&o1, TG_FLOAT64, 0, NULL, &r1);
    tg_array_init(&o2, TG_FLOAT64, 0, NULL, &r2);
    tg_error err;
    int same = 1;
    for (int k = 0; k < R; k++) {
        set_threads(1);
        double t = wall(), c = bench_process_cpu_ms();
        tg_fn_call(fn, in, &o1, &err);
        w1[k] = wall() - t, c1[k] = bench_process_cpu_ms() - c;
        set_threads(2);
        t = wall(), c = bench_process_cpu_ms();
        tg_fn_call(fn, in, &o2, &err);
        w2[k] = wall() - t, c2[k] = bench_process_cpu_ms() - c;
        same &= memcmp(&r1, &r2, sizeof r1) == 0;
    }
    double mw1 = bench_median(w1, R), mw2 = bench_median(w2, R);
    double mc1 = bench_median(c1, R), mc2 = bench_median(c2, R);
    printf("{\"bench\":\"fused_sum_of_product_threads\",\"n\":%ld,\"one_thread_wall_ms\":%.2f,"
           "\"two_threads_wall_ms\":%.2f,\"speedup\":%.2f,\"one_thread_cpu_ms\":%.2f,"
           "\"two_threads_cpu_ms\":%.2f,\"cpu_speedup\":%.2f,\"same_bits_1_and_2_threads\":%s,"
           "\"loadavg_1min\":%.2f,\"clock\":\"wall and process CPU, median of %d alternated\"}\n",
           n, mw1 * 1e3, mw2 * 1e3, mw1 / mw2, mc1, mc2, mc2 > 0 ? mc1 / (mc2 / 2) : 0,
           same ? "true" : "false", bench_loadavg(), R);
    set_threads(1);
}

static void bench_reduce(tg_ctx *ctx, const char *dir)
{
    long n = bench_size(10000000, 1000);
    double *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y), *p = malloc(n * sizeof *p), r;
    for (long i = 0; i < n; i++)
        x[i] = sin(i * 0.001), y[i] = cos(i * 0.002);
    void *fast = load_ref(dir, "ref_fast", "-O3 -march=native -ffast-math");
    /* the order of additions and no FMA contraction, as tgrel's code */
    void *plain = load_ref(dir, "ref_seq", "-O2 -march=native -ffp-contract=off");
    double (*dfast)(long, const double *, const double *) = NULL, (*dplain)(long, const double *, const double *) = NULL;
    if (fast)
        *(void **)&dfast = dlsym(fast, "dotsum");
    if (plain)
        *(void **)&dplain = dlsym(plain, "dotsum_blocked");
    const char *xy[2] = {xyz[0], xyz[1]};
    tg_fn *fused = compile(ctx, 2, xy, "(sum (mul (input x float64 (n)) (input y float64 (n))) all)", 0);
    tg_fn *prod = compile(ctx, 2, xy, "(mul (input x float64 (n)) (input y float64 (n)))", 0);
    tg_fn *sum = compile(ctx, 1, xyz, "(sum (input x float64 (n)) all)", 0);
    if (!dfast || !dplain || !fused || !prod || !sum) {
        fprintf(stderr, "kernels bench: cannot build the reduction benchmark\n");
        failed = 1;
        return;
    }
    int64_t sh = n;
    tg_array in[2], out, mid, res;
    tg_array_init(&in[0], TG_FLOAT64, 1, &sh, x);
    tg_array_init(&in[1], TG_FLOAT64, 1, &sh, y);
    tg_array_init(&out, TG_FLOAT64, 0, NULL, &r);
    tg_array_init(&mid, TG_FLOAT64, 1, &sh, p);
    double r2;
    tg_array_init(&res, TG_FLOAT64, 0, NULL, &r2);
    tg_error err;
    enum { R = 7 };
    double tf[R], tp[R], tq[R], tu[R];
    volatile double sink = 0;
    int same = 1;
    void (*set_threads)(int) = omp_threads();
    if (set_threads)
        set_threads(1);     /* the thread-CPU figures below: one thread */
    for (int k = 0; k < R; k++) {
        double t = now();
        tg_fn_call(fused, in, &out, &err);
        tf[k] = now() - t;
        t = now();
        double s1 = dplain(n, x, y);
        tp[k] = now() - t;
        t = now();
        sink += dfast(n, x, y);
        tq[k] = now() - t;
        t = now();
        tg_fn_call(prod, in, &mid, &err);
        tg_fn_call(sum, &mid, &res, &err);
        tu[k] = now() - t;
        same &= r == s1 && r == r2;     /* one order of additions: the same bits */
        if (!same)
            failed = 1;
        if (k == 0 && !same)
            fprintf(stderr, "kernels bench: fused %.17g, loop %.17g, unfused %.17g\n", r, s1, r2);
    }
    double mf = bench_median(tf, R), mp = bench_median(tp, R), mq = bench_median(tq, R), mu = bench_median(tu, R);
    printf("{\"bench\":\"fused_sum_of_product\",\"n\":%ld,\"tgrel_ms\":%.2f,\"ref_loop_O2_ms\":%.2f,"
           "\"ref_loop_fastmath_ms\":%.2f,\"tgrel_unfused_ms\":%.2f,\"vs_O2_loop\":%.3f,\"speedup_vs_unfused\":%.2f,"
           "\"same_bits_as_O2_loop_and_unfused\":%s,\"native\":%d}\n",
           n, mf * 1e3, mp * 1e3, mq * 1e3, mu * 1e3, mf / mp, mu / mf, same ? "true" : "false", tg_fn_native(fused));
    (void)sink;
    if (set_threads)
        reduce_threads(fused, in, set_threads, n);
    tg_fn_free(fused), tg_fn_free(prod), tg_fn_free(sum);
    free(x), free(y), free(p);
}

static void bench_overhead(tg_ctx *ctx)
{
    tg_fn *fn = compile(ctx, 3, xyz, expr, 0);
    double x = 1, y = 2, z = 3, o;
    int64_t one = 1;
    tg_array in[3], out;
    tg_array_init(&in[0], TG_FLOAT64, 1, &one, &x);
    tg_array_init(&in[1], TG_FLOAT64, 1, &one, &y);
    tg_array_init(&in[2], TG_FLOAT64, 1, &one, &z);
    tg_array_init(&out, TG_FLOAT64, 1, &one, &o);
    tg_error err;
    long calls = bench_size(1000000, 100);
    double ts[5];
    for (int r = 0; r < 5; r++) {
        double t = now();
        for (long i = 0; i < calls; i++)
            tg_fn_call(fn, in, &out, &err);
        ts[r] = (now() - t) / calls;
    }
    /* the same element through a direct C call of the expression */
    volatile double sink = 0;
    double tr[5];
    for (int r = 0; r < 5; r++) {
        double t = now();
        for (long i = 0; i < calls; i++)
            sink += exp(x + i * 1e-12) * y + sin(z) / (1 + x * x);
        tr[r] = (now() - t) / calls;
    }
    /* what timing every call for its profile would cost: two reads of
     * the tick counter (tg_fn_profile reads them on one call in 8 of a
     * function this short, and on every call of a long one) */
    double tt[5];
    uint64_t acc = 0;
    for (int r = 0; r < 5; r++) {
        double t = now();
        for (long i = 0; i < calls; i++) {
            uint64_t t0 = ticks();
            acc += ticks() - t0;
        }
        tt[r] = (now() - t) / calls;
    }
    sink += (double)acc;
    printf("{\"bench\":\"call_overhead_1elem\",\"ns_per_call\":%.1f,\"ref_inline_ns\":%.1f,"
           "\"profile_timing_every_call_ns\":%.1f}\n",
           bench_median(ts, 5) * 1e9, bench_median(tr, 5) * 1e9, bench_median(tt, 5) * 1e9);
    tg_fn_free(fn);
}

/* A 100-node elementwise-and-reduction graph. */
static char *graph100(void)
{
    static char a[20000], b[20000];
    char *cur = a, *next = b;
    snprintf(cur, sizeof a, "(input x float64 (n))");
    for (int i = 0; i < 33; i++) {
        int r = snprintf(next, sizeof a, "(add (mul (sin %s) %d.5) (input y float64 (n)))", cur, i);
        if (r < 0 || r >= (int)sizeof a)
            break;
        char *t = cur;
        cur = next, next = t;
    }
    return cur;
}

static void bench_compile(tg_ctx *ctx, const char *dir)
{
    const char *g = graph100();
    const char *xy[2] = {xyz[0], xyz[1]};
    enum { R = 9 };
    double tl[R];
    for (int r = 0; r < R; r++) {
        double t = now();
        tg_fn *fn = compile(ctx, 2, xy, g, 1);   /* types, schedule, buffers */
        tl[r] = now() - t;
        tg_fn_free(fn);
    }
    char cdir[600];
    snprintf(cdir, sizeof cdir, "%s/cache", dir);
    setenv("TGREL_CACHE_DIR", cdir, 1);
    double t = wall(), c0 = now();
    tg_fn *fn = compile(ctx, 2, xy, g, 0);   /* + C code, cc, store */
    /* this thread's CPU time leaves out the C compiler (a child process) */
    double cold = wall() - t, cold_cpu = now() - c0;
    int native = tg_fn_native(fn);
    tg_fn_free(fn);
    /* a warm hit in a new process */
    int p[2];
    double warm = -1;
    if (pipe(p) == 0) {
        pid_t pid = fork();
        if (pid == 0) {
            tg_error err;
            tg_ctx *c2 = tg_ctx_new(&err);
            double t0 = now();
            tg_fn *f2 = compile(c2, 2, xy, g, 0);
            double d = tg_fn_native(f2) ? now() - t0 : -1;
            if (write(p[1], &d, sizeof d) != sizeof d)
                _exit(1);
            _exit(0);
        }
        close(p[1]);
        if (read(p[0], &warm, sizeof warm) != sizeof warm)
            warm = -1;
        close(p[0]);
        waitpid(pid, NULL, 0);
    }
    printf("{\"bench\":\"compile_100_nodes\",\"lower_ms\":%.3f,\"cold_with_cc_ms\":%.1f,"
           "\"cold_without_cc_ms\":%.3f,\"warm_hit_new_process_ms\":%.3f,\"native\":%d,"
           "\"clock\":\"cold: wall, and thread cpu without cc; lower, warm: thread cpu\"}\n",
           bench_median(tl, R) * 1e3, cold * 1e3, cold_cpu * 1e3, warm * 1e3, native);
}

/* The rule library of the source tree ($srcdir), or NULL. */
static tg_rules *library(tg_ctx *ctx)
{
    tg_rules *rs = bench_library(ctx, "kernels bench");
    failed |= !rs;
    return rs;
}

static tg_fn *compile_rules(tg_ctx *ctx, tg_rules *rs, const char *out)
{
    tg_error err;
    tg_term *it[2] = {tg_read_cstr(ctx, xyz[0], &err), tg_read_cstr(ctx, xyz[1], &err)};
    tg_term *o = tg_read_cstr(ctx, out, &err);
    tg_fn_options opt = {.rules = rs};
    tg_fn *fn = tg_fn_compile(ctx, 2, it, 1, &o, &opt, &err);
    if (!fn) {
        fprintf(stderr, "kernels bench: %s\n", err.message);
        failed = 1;
    }
    return fn;
}

/* The whole pipeline cached: the 100-node graph compiled with the rule
 * library's default rewriter, cold, then in new processes (rules loaded
 * before the clock starts): the warm hit against the rewrite alone. */
static void bench_compile_rules(const char *dir)
{
    const char *g = graph100();
    char cdir[600];
    snprintf(cdir, sizeof cdir, "%s/cache-rules", dir);
    setenv("TGREL_CACHE_DIR", cdir, 1);
    tg_error err;
    tg_ctx *ctx = tg_ctx_new(&err);
    tg_rules *rs = library(ctx);
    if (!rs)
        return;
    double t = wall();
    tg_fn *fn = compile_rules(ctx, rs, g);
    double cold = wall() - t;
    int native = tg_fn_native(fn);
    tg_fn_free(fn);
    enum { R = 5 };
    double warm[R], rewrite[R];
    for (int r = 0; r < R; r++) {
        int p[2];
        double d[2] = {-1, -1};
        if (pipe(p) != 0)
            return;
        pid_t pid = fork();
        if (pid == 0) {
            tg_ctx *c2 = tg_ctx_new(&err);
            tg_rules *r2 = library(c2);
            double t0 = now();
            tg_fn *f2 = r2 ? compile_rules(c2, r2, g) : NULL;
            d[0] = f2 && tg_fn_native(f2) ? now() - t0 : -1;
            /* the reference: what the hit skipped, the rewrite alone */
            tg_term *o = tg_read_cstr(c2, g, &err);
            t0 = now();
            d[1] = r2 && tg_rewrite(r2, tg_symbol_cstr(c2, "default"), o, &err) ? now() - t0 : -1;
            _exit(write(p[1], d, sizeof d) == sizeof d ? 0 : 1);
        }
        close(p[1]);
        if (read(p[0], d, sizeof d) != sizeof d)
            d[0] = d[1] = -1;
        close(p[0]);
        waitpid(pid, NULL, 0);
        warm[r] = d[0], rewrite[r] = d[1];
    }
    printf("{\"bench\":\"compile_100_nodes_with_rules\",\"cold_with_cc_ms\":%.1f,"
           "\"warm_hit_new_process_ms\":%.3f,\"rewrite_alone_ms\":%.3f,\"native\":%d,"
           "\"clock\":\"cold: wall; warm, rewrite: thread cpu, median of %d new processes\"}\n",
           cold * 1e3, bench_median(warm, R) * 1e3, bench_median(rewrite, R) * 1e3, native, R);
    tg_rules_free(rs);
    tg_ctx_free(ctx);
}

/* GEMM 2000x2000 float64, 2 OpenBLAS threads on the machines this runs
 * on (BLAS threads: wall clock).  gemm_2000 compares tgrel's call with
 * the direct cblas_dgemm; gemm_2000_core compares tgrel's default core
 * with each core type a user could force (OPENBLAS_CORETYPE in a child
 * process: the rate there is tgrel's, on that core), the best of them
 * measured again alternating with the default, so that a drift of the
 * machine's speed hits both. */
enum { GEMM_REPS = 3, GEMM_ROUNDS = 5 };
static int GEMM_N = 2000;       /* bench_size(2000) from main */

typedef struct gemm_setup {
    tg_fn *fn;
    tg_array in[2], out;
    double *a, *b, *c;
} gemm_setup;

static int gemm_open(tg_ctx *ctx, gemm_setup *g)
{
    int n = GEMM_N;
    size_t nn = (size_t)n * n;
    g->a = malloc(nn * 8), g->b = malloc(nn * 8), g->c = malloc(nn * 8);
    for (size_t i = 0; i < nn; i++)
        g->a[i] = (double)(i % 7) - 3, g->b[i] = (double)(i % 5) - 2;
    const char *ab[2] = {"(input a float64 (n n))", "(input b float64 (n n))"};
    g->fn = compile(ctx, 2, ab, "(dot (input a float64 (n n)) (input b float64 (n n)))", 0);
    int64_t sh[2] = {n, n};
    tg_array_init(&g->in[0], TG_FLOAT64, 2, sh, g->a);
    tg_array_init(&g->in[1], TG_FLOAT64, 2, sh, g->b);
    tg_array_init(&g->out, TG_FLOAT64, 2, sh, g->c);
    tg_error err;
    if (!g->a || !g->b || !g->c || !g->fn || tg_fn_call(g->fn, g->in, &g->out, &err) < 0)
        return -1;      /* the call also opens OpenBLAS */
    return blas_resolve();
}

static void gemm_close(gemm_setup *g)
{
    tg_fn_free(g->fn);
    free(g->a), free(g->b), free(g->c);
}

/* GFLOP/s of tgrel's GEMM, median of GEMM_REPS calls, on the wall
 * clock and (*cpu) per second of the whole process's CPU time, which
 * the other users of a shared machine do not inflate. */
static double gemm_rate(gemm_setup *g, double *cpu)
{
    double t[GEMM_REPS], c[GEMM_REPS], flop = 2.0 * GEMM_N * GEMM_N * GEMM_N;
    tg_error err;
    for (int r = 0; r < GEMM_REPS; r++) {
        double t0 = wall(), c0 = bench_process_cpu_ms();
        tg_fn_call(g->fn, g->in, &g->out, &err);
        t[r] = wall() - t0, c[r] = (bench_process_cpu_ms() - c0) * 1e-3;
    }
    *cpu = flop / bench_median(c, GEMM_REPS) * 1e-9;
    return flop / bench_median(t, GEMM_REPS) * 1e-9;
}

/* The child's side: one line, the core it ran and its rate. */
static int gemm_child(void)
{
    tg_error err;
    tg_ctx *ctx = tg_ctx_new(&err);
    gemm_setup g;
    if (!ctx || gemm_open(ctx, &g) < 0)
        return 1;
    double cpu, rate = gemm_rate(&g, &cpu);
    printf("%s %.3f %.3f\n", blas_corename(), rate, cpu);
    gemm_close(&g);
    tg_ctx_free(ctx);
    return 0;
}

/* tgrel's rate with OPENBLAS_CORETYPE=core in a child process; 0 when
 * the child failed (a core the processor cannot run dies of SIGILL). */
static double gemm_forced(const char *core, char *ran, size_t len, double *cpu)
{
    char cmd[200], line[200] = "";
    snprintf(cmd, sizeof cmd, "OPENBLAS_CORETYPE='%s' /proc/%ld/exe gemm-child 2>/dev/null", core, (long)getpid());
    FILE *p = popen(cmd, "r");
    bool got = p && fgets(line, sizeof line, p);
    int st = p ? pclose(p) : -1;
    double rate = 0;
    char name[64];
    if (!got || st != 0 || sscanf(line, "%63s %lf %lf", name, &rate, cpu) != 3)
        return 0;
    snprintf(ran, len, "%s", name);
    return rate;
}

static void gemm_cores(gemm_setup *g)
{
    const char *list = getenv("BENCH_BLAS_CORES");
    char buf[256], best[64] = "", ran[64];
    snprintf(buf, sizeof buf, "%s", list && *list ? list : "Prescott Sandybridge Haswell Zen SkylakeX Cooperlake");
    printf("{\"bench\":\"gemm_2000_forced\",\"cores\":[");
    double top = 0, cpu;
    int k = 0;
    for (char *save, *c = strtok_r(buf, " ,", &save); c; c = strtok_r(NULL, " ,", &save)) {
        double r = gemm_forced(c, ran, sizeof ran, &cpu);
        printf("%s{\"forced\":", k++ ? "," : "");
        bench_json_string(c);
        if (r > 0) {
            printf(",\"ran_as\":");
            bench_json_string(ran);
            printf(",\"gflops\":%.2f,\"gflop_per_cpu_s\":%.2f}", r, cpu);
        } else {
            printf(",\"failed\":true}");
        }
        if (r > top)
            top = r, snprintf(best, sizeof best, "%s", c);
    }
    printf("]}\n");
    fflush(stdout);
    if (!best[0])
        return;
    double d[GEMM_ROUNDS], f[GEMM_ROUNDS], dc[GEMM_ROUNDS], fc[GEMM_ROUNDS];
    for (int i = 0; i < GEMM_ROUNDS; i++) {
        d[i] = gemm_rate(g, &dc[i]);
        f[i] = gemm_forced(best, ran, sizeof ran, &fc[i]);
    }
    double md = bench_median(d, GEMM_ROUNDS), mf = bench_median(f, GEMM_ROUNDS);
    double mdc = bench_median(dc, GEMM_ROUNDS), mfc = bench_median(fc, GEMM_ROUNDS);
    printf("{\"bench\":\"gemm_2000_core\",\"tgrel_core\":");
    bench_json_string(blas_corename());
    printf(",\"tgrel_gflops\":%.2f,\"best_forced_core\":", md);
    bench_json_string(best);
    printf(",\"best_forced_gflops\":%.2f,\"fraction_of_best\":%.3f,"
           "\"tgrel_gflop_per_cpu_s\":%.2f,\"best_forced_gflop_per_cpu_s\":%.2f,\"cpu_fraction_of_best\":%.3f,"
           "\"blas_threads\":%d,\"clock\":\"wall (and process CPU), median of %d alternated rounds of %d calls\"}\n",
           mf, mf > 0 ? md / mf : 0, mdc, mfc, mfc > 0 ? mdc / mfc : 0, blas_threads(), GEMM_ROUNDS, GEMM_REPS);
}

static void bench_gemm(tg_ctx *ctx)
{
    gemm_setup g;
    if (gemm_open(ctx, &g) < 0) {
        fprintf(stderr, "kernels bench: gemm: no function or no BLAS\n");
        failed = 1;
        return;
    }
    int n = GEMM_N;
    tg_error err;
    double tt[GEMM_REPS], tb[GEMM_REPS];
    for (int r = 0; r < GEMM_REPS; r++) {
        double t = wall();
        tg_fn_call(g.fn, g.in, &g.out, &err);
        tt[r] = wall() - t;
        t = wall();
        blas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, g.a, n, g.b, n, 0.0, g.c, n);
        tb[r] = wall() - t;
    }
    double mt = bench_median(tt, GEMM_REPS), mb = bench_median(tb, GEMM_REPS);
    printf("{\"bench\":\"gemm_2000\",\"n\":%d,\"tgrel_ms\":%.1f,\"cblas_ms\":%.1f,\"fraction_of_cblas\":%.3f}\n",
           n, mt * 1e3, mb * 1e3, mb / mt);
    fflush(stdout);
    gemm_cores(&g);
    gemm_close(&g);
}

/* Small products (smallmm.c): a compiled (dot A B) of m x k by k x n,
 * the perceptron's five shapes (bench/train) and squares around the
 * thresholds, on the wall clock: tgrel on the default threads (where
 * OpenBLAS has more than one, products over TGMM_BLAS_ONE multiply-adds
 * go to it in blocks it runs on the calling thread, tgMm_blocks) against
 * cblas_dgemm on OpenBLAS's default threads and on one; medians of 15
 * runs. */
static void bench_small_gemm(tg_ctx *ctx)
{
    static const int sz[][5] = {{256, 64, 32, 0, 0}, {256, 32, 10, 0, 0}, {256, 10, 32, 0, 1}, {32, 256, 10, 1, 0},
                                {64, 256, 32, 1, 0}, {48, 48, 48, 0, 0}, {64, 64, 64, 0, 0}, {80, 80, 80, 0, 0},
                                {101, 101, 101, 0, 0}, {128, 128, 128, 0, 0}, {160, 160, 160, 0, 0}};
    tg_error err;
    /* at a tiny scale (the suite's smoke run) the first two shapes, twice */
    int reps = bench_reps(15);
    size_t shapes = bench_scale(1) < 1 ? 2 : sizeof sz / sizeof sz[0];
    for (size_t c = 0; c < shapes; c++) {
        int m = sz[c][0], k = sz[c][1], n = sz[c][2], ta = sz[c][3], tb = sz[c][4];
        char ins[2][120], ta_[160], tb_[160], o2[400];
        snprintf(ins[0], sizeof ins[0], "(input a float64 (%d %d))", ta ? k : m, ta ? m : k);
        snprintf(ins[1], sizeof ins[1], "(input b float64 (%d %d))", tb ? n : k, tb ? k : n);
        snprintf(ta_, sizeof ta_, ta ? "(transpose %s (1 0))" : "%s", ins[0]);
        snprintf(tb_, sizeof tb_, tb ? "(transpose %s (1 0))" : "%s", ins[1]);
        snprintf(o2, sizeof o2, "(dot %s %s)", ta_, tb_);
        const char *iv[2] = {ins[0], ins[1]};
        tg_fn *fn = bench_fn(ctx, "small_gemm", 2, iv, o2, 0);
        double *a = malloc(sizeof(double) * (size_t)(m * k)), *b = malloc(sizeof(double) * (size_t)(k * n));
        double *o = malloc(sizeof(double) * (size_t)(m * n));
        if (!fn || !a || !b || !o) {
            failed = 1;
            free(a), free(b), free(o), tg_fn_free(fn);
            return;
        }
        for (int i = 0; i < m * k; i++)
            a[i] = (i % 17) * 0.125 - 1;
        for (int i = 0; i < k * n; i++)
            b[i] = (i % 13) * 0.25 - 1.5;
        int64_t as[2] = {ta ? k : m, ta ? m : k}, bs[2] = {tb ? n : k, tb ? k : n}, os[2] = {m, n};
        tg_array in[2], res;
        tg_array_init(&in[0], TG_FLOAT64, 2, as, a);
        tg_array_init(&in[1], TG_FLOAT64, 2, bs, b);
        tg_array_init(&res, TG_FLOAT64, 2, os, o);
        if (tg_fn_call(fn, in, &res, &err) < 0 || (!blas_dgemm && blas_resolve() < 0)) {
            failed = 1;
            free(a), free(b), free(o), tg_fn_free(fn);
            return;
        }
        /* resolved once tgrel has opened OpenBLAS */
        void (*set)(int) = (void (*)(int))bench_blas_sym("openblas_set_num_threads");
        int calls = (int)(2e6 / ((double)m * k * n) + 1), nth = blas_threads();
        double t[4][15];
        for (int w = 0; w < 4; w += 2) {    /* default threads, then one */
            if (w == 2 && set)
                set(1);
            for (int r = 0; r < reps; r++)
                for (int v = w; v < w + 2; v++) {
                    double t0 = wall();
                    for (int i = 0; i < calls; i++)
                        if (v % 2 == 0)
                            tg_fn_call(fn, in, &res, &err);
                        else
                            blas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m,
                                       n, k, 1.0, a, ta ? m : k, b, tb ? k : n, 0.0, o, n);
                    t[v][r] = (wall() - t0) * 1e6 / calls;
                }
        }
        if (set)
            set(nth);
        double mt = bench_median(t[0], reps), mb = bench_median(t[1], reps);
        double mt1 = bench_median(t[2], reps), mb1 = bench_median(t[3], reps);
        printf("{\"bench\":\"small_gemm\",\"m\":%d,\"k\":%d,\"n\":%d,\"trans_a\":%d,\"trans_b\":%d,\"mkn\":%ld,"
               "\"blas_threads\":%d,\"tgrel_us\":%.2f,\"cblas_us\":%.2f,\"cblas_over_tgrel\":%.2f,"
               "\"tgrel_1thread_us\":%.2f,\"cblas_1thread_us\":%.2f,\"cblas_1thread_over_tgrel_1thread\":%.2f,"
               "\"loadavg_1min\":%.2f,\"clock\":\"wall, median of 15 alternated runs\"}\n",
               m, k, n, ta, tb, (long)m * k * n, nth, mt, mb, mb / mt, mt1, mb1, mb1 / mt1, bench_loadavg());
        fflush(stdout);
        free(a), free(b), free(o);
        tg_fn_free(fn);
    }
}

/* The vector cases of dot: matrix-vector 4000x4000 and vector-vector
 * 10^7, float64, against the direct cblas_dgemv / cblas_ddot calls (wall
 * time: BLAS may use threads). */
static void bench_dot_vec(tg_ctx *ctx)
{
    int n = (int)bench_size(4000, 16);
    long nv = bench_size(10000000, 1000);
    double *a = malloc((size_t)n * n * 8), *x = malloc((size_t)nv * 8), *y = malloc((size_t)nv * 8);
    double *o = malloc((size_t)n * 8), r;
    for (long i = 0; i < (long)n * n; i++)
        a[i] = (double)(i % 7) - 3;
    for (long i = 0; i < nv; i++)
        x[i] = sin(i * 0.001), y[i] = cos(i * 0.002);
    const char *ax[2] = {"(input a float64 (n n))", "(input x float64 (n))"};
    const char *xy[2] = {xyz[0], xyz[1]};
    tg_fn *mv = compile(ctx, 2, ax, "(dot (input a float64 (n n)) (input x float64 (n)))", 0);
    tg_fn *vv = compile(ctx, 2, xy, "(dot (input x float64 (n)) (input y float64 (n)))", 0);
    int64_t sh[2] = {n, n}, shv = nv;
    tg_array in[2], out, vin[2], vout;
    tg_array_init(&in[0], TG_FLOAT64, 2, sh, a);
    tg_array_init(&in[1], TG_FLOAT64, 1, sh, x);
    tg_array_init(&out, TG_FLOAT64, 1, sh, o);
    tg_array_init(&vin[0], TG_FLOAT64, 1, &shv, x);
    tg_array_init(&vin[1], TG_FLOAT64, 1, &shv, y);
    tg_array_init(&vout, TG_FLOAT64, 0, NULL, &r);
    tg_error err;
    if (!mv || !vv || tg_fn_call(mv, in, &out, &err) < 0 || blas_resolve() < 0) {
        failed = 1;
        return;     /* the first call opens OpenBLAS */
    }
    enum { R = 9 };
    double tm[R], bm[R], tv[R], bv[R], gm[R], gv[R];
    volatile double sink = 0;
    for (int k = 0; k < R; k++) {
        double t = wall();
        tg_fn_call(mv, in, &out, &err);
        tm[k] = wall() - t;
        t = wall();
        blas_dgemv(CblasRowMajor, CblasNoTrans, n, n, 1.0, a, n, x, 1, 0.0, o, 1);
        bm[k] = wall() - t;
        t = wall();
        tg_fn_call(vv, vin, &vout, &err);
        tv[k] = wall() - t;
        t = wall();
        sink += blas_ddot((int)nv, x, 1, y, 1);
        bv[k] = wall() - t;
        /* what the kernels called before: dgemm with a unit extent */
        t = wall();
        blas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, 1, n, 1.0, a, n, x, 1, 0.0, o, 1);
        gm[k] = wall() - t;
        t = wall();
        blas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 1, 1, (int)nv, 1.0, x, (int)nv, y, 1, 0.0, &r, 1);
        gv[k] = wall() - t;
    }
    double m1 = bench_median(tm, R), m2 = bench_median(bm, R), v1 = bench_median(tv, R), v2 = bench_median(bv, R);
    printf("{\"bench\":\"dot_vector_cases\",\"gemv_4000_tgrel_ms\":%.3f,\"gemv_4000_cblas_ms\":%.3f,"
           "\"gemv_fraction_of_cblas\":%.3f,\"dot_1e7_tgrel_ms\":%.3f,\"dot_1e7_cblas_ms\":%.3f,"
           "\"dot_fraction_of_cblas\":%.3f,\"gemv_as_dgemm_ms\":%.3f,\"dot_as_dgemm_ms\":%.3f,"
           "\"clock\":\"wall, median of %d\"}\n",
           m1 * 1e3, m2 * 1e3, m2 / m1, v1 * 1e3, v2 * 1e3, v2 / v1, bench_median(gm, R) * 1e3,
           bench_median(gv, R) * 1e3, R);
    (void)sink;
    tg_fn_free(mv), tg_fn_free(vv);
    free(a), free(x), free(y), free(o);
}


/* C + u v^T at m x m, C a caller's input: the ger step (BLAS
 * dger on C's copy, or in place; a step the interpreter runs in compiled
 * functions too, as they ran it before fuse_ger was restricted; here in
 * an interpreted function, where fuse_ger still makes it) against the
 * compiled function's one fused loop, and the interpreter's loop (the
 * outer product written with reshapes, which fuse_ger leaves alone). */
static void bench_ger(tg_ctx *ctx)
{
    static const int sizes[] = {300, 1000, 2000, 3000};
    const char *in[3] = {"(input c float64 (m m))", "(input u float64 (m))", "(input v float64 (m))"};
    static const char *const forms[2] = {
        "(add (input c float64 (m m)) (mul (dimshuffle (input u float64 (m)) (0 x)) "
        "(dimshuffle (input v float64 (m)) (x 0))))",
        "(add (input c float64 (m m)) (mul (reshape (input u float64 (m)) (m 1)) "
        "(reshape (input v float64 (m)) (1 m))))"};
    {
        tg_fn *fns[3] = {compile(ctx, 3, in, forms[0], 1), compile(ctx, 3, in, forms[0], 0),
                         compile(ctx, 3, in, forms[1], 1)};
        if (!fns[0] || !fns[1] || !fns[2])
            return;
        if (getenv("TGREL_BENCH_SCHEDULE"))
            for (int k = 0; k < 3; k++)
                tg_fprint(stderr, tg_fn_schedule(fns[k])), fputs("\n", stderr);
        for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
            int m = (int)bench_size(sizes[k], 8);
            double *c = malloc((size_t)m * m * 8), *u = malloc((size_t)m * 8), *v = malloc((size_t)m * 8);
            double *o[3];
            for (int q = 0; q < 3; q++)
                o[q] = malloc((size_t)m * m * 8);
            for (long i = 0; i < (long)m * m; i++)
                c[i] = sin(i * 0.001);
            for (int i = 0; i < m; i++)
                u[i] = cos(i * 0.01), v[i] = sin(i * 0.02);
            int64_t sh[2] = {m, m};
            tg_array a[3], out[3];
            tg_array_init(&a[0], TG_FLOAT64, 2, sh, c);
            tg_array_init(&a[1], TG_FLOAT64, 1, sh, u);
            tg_array_init(&a[2], TG_FLOAT64, 1, sh, v);
            tg_error err;
            enum { R = 11 };
            double t[3][R];
            int ok = 1;
            for (int q = 0; q < 3; q++) {
                tg_array_init(&out[q], TG_FLOAT64, 2, sh, o[q]);
                ok &= tg_fn_call(fns[q], a, &out[q], &err) == 0;
            }
            for (int r = 0; ok && r < R; r++)
                for (int q = 0; q < 3; q++) {
                    double t0 = wall();
                    tg_fn_call(fns[q], a, &out[q], &err);
                    t[q][r] = wall() - t0;
                }
            double diff = 0;
            for (long i = 0; ok && i < (long)m * m; i++)
                diff = fmax(diff, fmax(fabs(o[0][i] - o[1][i]), fabs(o[2][i] - o[1][i])));
            failed |= !ok;
            double g = bench_median(t[0], R), l = bench_median(t[1], R), il = bench_median(t[2], R);
            if (ok)
                printf("{\"bench\":\"ger_step_vs_fused_loop\",\"m\":%d,\"ger_step_ms\":%.3f,"
                       "\"compiled_loop_ms\":%.3f,\"ger_over_compiled_loop\":%.2f,\"interp_loop_ms\":%.3f,"
                       "\"ger_over_interp_loop\":%.2f,\"max_abs_diff\":%.2g,\"loadavg_1min\":%.1f,"
                       "\"clock\":\"wall, median of %d, on the default threads\"}\n",
                       m, g * 1e3, l * 1e3, g / l, il * 1e3, g / il,
                       diff, bench_loadavg(), R);
            fflush(stdout);
            free(c), free(u), free(v);
            for (int q = 0; q < 3; q++)
                free(o[q]);
        }
        for (int q = 0; q < 3; q++)
            tg_fn_free(fns[q]);
    }
}

/* ---- updates: inc_subtensor with its value fused, inc_take ----------- */

static const char upd_src[] =
    "#include <string.h>\n"
    "#include <stdint.h>\n"
    "void upd(long r, const double *x, const double *a, const double *b, const double *c, double *o) {\n"
    "  memcpy(o, x, (size_t)(2 * r) * sizeof *o);\n"
    "  for (long i = 0; i < r; i++) o[i] += a[i] * b[i] + c[i]; }\n"
    "void addat(long rows, long ni, long w, const double *x, const double *v, const int64_t *ix, double *o) {\n"
    "  memcpy(o, x, (size_t)(rows * w) * sizeof *o);\n"
    "  for (long i = 0; i < ni; i++) {\n"
    "    int64_t k = ix[i] < 0 ? ix[i] + rows : ix[i];\n"
    "    for (long j = 0; j < w; j++) o[k * w + j] += v[i * w + j]; } }\n";

/* Compile outs (1 or 2 terms) over ins, X kept. */
static tg_fn *compile_n(tg_ctx *ctx, int nin, const char *const *ins, int nout, const char *const *outs, int interp)
{
    tg_error err;
    tg_term *it[8], *ot[2];
    for (int i = 0; i < nin; i++)
        it[i] = tg_read_cstr(ctx, ins[i], &err);
    for (int i = 0; i < nout; i++)
        ot[i] = tg_read_cstr(ctx, outs[i], &err);
    tg_fn_options opt = {.interpret = interp};
    tg_fn *fn = tg_fn_compile(ctx, (size_t)nin, it, (size_t)nout, ot, &opt, &err);
    if (!fn)
        fprintf(stderr, "kernels bench: %s\n", err.message);
    failed |= !fn;
    return fn;
}

/* (inc_subtensor X (add (mul a b) c) 0) on X of 2 x r float64, r = 2*10^6,
 * one thread, CPU time: the value's loop fused into the update (one pass
 * over the part, no temporary) against the same function with V also an
 * output (so not fused: V stored by a loop of its own, then read by the
 * update), the interpreter, and a hand-written C loop (memcpy of X, then
 * o[i] += a[i]*b[i] + c[i]; -O2 -march=native -ffp-contract=off, as
 * tgrel compiles, so the same bits).  Then inc_take (the
 * gradient of take, np.add.at) of 10^5 rows of 64 into 1000, random
 * indices, compiled and interpreted, against a hand-written loop. */
static void bench_update(tg_ctx *ctx, const char *dir)
{
    long r = bench_size(2000000, 1000);
    void *ref = bench_cc_load(dir, "ref_update", upd_src, "-O2 -march=native -ffp-contract=off");
    void (*fupd)(long, const double *, const double *, const double *, const double *, double *);
    void (*faddat)(long, long, long, const double *, const double *, const int64_t *, double *);
    if (!ref) {
        fprintf(stderr, "kernels bench: cannot build the update reference loops\n");
        failed = 1;
        return;
    }
    *(void **)&fupd = dlsym(ref, "upd");
    *(void **)&faddat = dlsym(ref, "addat");
    static const char *const ins[] = {"(input x float64 (2 r))", "(input a float64 (r))", "(input b float64 (r))",
                                      "(input c float64 (r))"};
    const char *outs[2] = {"(inc_subtensor (input x float64 (2 r))"
                           " (add (mul (input a float64 (r)) (input b float64 (r))) (input c float64 (r))) 0)",
                           "(add (mul (input a float64 (r)) (input b float64 (r))) (input c float64 (r)))"};
    tg_fn *fused = compile_n(ctx, 4, ins, 1, outs, 0), *unf = compile_n(ctx, 4, ins, 2, outs, 0);
    tg_fn *itp = compile_n(ctx, 4, ins, 1, outs, 1);
    double *x = malloc(2 * r * sizeof *x), *a = malloc(r * sizeof *a), *b = malloc(r * sizeof *b);
    double *c = malloc(r * sizeof *c), *o = malloc(2 * r * sizeof *o), *o2 = malloc(2 * r * sizeof *o2);
    double *vo = malloc(r * sizeof *vo);
    if (!fused || !unf || !itp || !x || !a || !b || !c || !o || !o2 || !vo) {
        failed = 1;
        return;
    }
    for (long i = 0; i < 2 * r; i++)
        x[i] = sin(i * 0.001);
    for (long i = 0; i < r; i++)
        a[i] = cos(i * 0.002), b[i] = i * 1e-7, c[i] = 0.5;
    void (*set_threads)(int) = NULL;
    int64_t xs[2] = {2, r}, vs = r;
    tg_array in[4], out[2];
    tg_array_init(&in[0], TG_FLOAT64, 2, xs, x);
    tg_array_init(&in[1], TG_FLOAT64, 1, &vs, a);
    tg_array_init(&in[2], TG_FLOAT64, 1, &vs, b);
    tg_array_init(&in[3], TG_FLOAT64, 1, &vs, c);
    tg_array_init(&out[0], TG_FLOAT64, 2, xs, o);
    tg_array_init(&out[1], TG_FLOAT64, 1, &vs, vo);
    tg_error err;
    tg_fn_call(fused, in, out, &err);   /* loads the kernels' OpenMP runtime */
    if ((set_threads = omp_threads()))
        set_threads(1);
    enum { R = 7 };
    double tf[R], tu[R], tc[R], ti[3];
    for (int k = 0; k < R; k++) {
        double t = now();
        tg_fn_call(fused, in, out, &err);
        tf[k] = now() - t;
        t = now();
        tg_fn_call(unf, in, out, &err);
        tu[k] = now() - t;
        t = now();
        fupd(r, x, a, b, c, o2);
        tc[k] = now() - t;
        if (k < 3) {
            t = now();
            tg_fn_call(itp, in, out, &err);
            ti[k] = now() - t;
        }
    }
    tg_fn_call(fused, in, out, &err);
    int same = memcmp(o, o2, 2 * r * sizeof *o) == 0;
    double mf = bench_median(tf, R), mu = bench_median(tu, R), mc = bench_median(tc, R), mi = bench_median(ti, 3);
    printf("{\"bench\":\"update_fused_value\",\"part\":%ld,\"tgrel_fused_ms\":%.2f,\"tgrel_unfused_ms\":%.2f,"
           "\"interp_ms\":%.2f,\"ref_c_loop_ms\":%.2f,\"speedup_vs_unfused\":%.2f,\"vs_c_loop\":%.3f,"
           "\"same_as_c_loop\":%s,\"native\":%d,\"clock\":\"thread CPU, one thread, median of %d\"}\n",
           r, mf * 1e3, mu * 1e3, mi * 1e3, mc * 1e3, mu / mf, mf / mc, same ? "true" : "false",
           tg_fn_native(fused), R);
    tg_fn_free(fused), tg_fn_free(unf), tg_fn_free(itp);
    free(x), free(a), free(b), free(c), free(o), free(o2), free(vo);

    long ni = bench_size(100000, 100), rows = 1000, w = 64;
    static const char *const tins[] = {"(input x float64 (r w))", "(input v float64 (k w))", "(input i int64 (k))"};
    const char *tout[1] = {"(inc_take (input x float64 (r w)) (input v float64 (k w)) (input i int64 (k)))"};
    tg_fn *nat = compile_n(ctx, 3, tins, 1, tout, 0), *tit = compile_n(ctx, 3, tins, 1, tout, 1);
    double *tx = malloc(rows * w * sizeof *tx), *tv = malloc(ni * w * sizeof *tv);
    double *to = malloc(rows * w * sizeof *to), *to2 = malloc(rows * w * sizeof *to2);
    int64_t *ix = malloc(ni * sizeof *ix);
    if (!nat || !tit || !tx || !tv || !to || !to2 || !ix) {
        failed = 1;
        return;
    }
    uint64_t st = 88172645463325252ull;
    for (long i = 0; i < rows * w; i++)
        tx[i] = cos(i * 0.01);
    for (long i = 0; i < ni; i++) {
        st ^= st << 13, st ^= st >> 7, st ^= st << 17;
        ix[i] = (int64_t)(st % (2 * rows)) - rows;     /* negative ones too */
    }
    for (long i = 0; i < ni * w; i++)
        tv[i] = sin(i * 0.003);
    int64_t xs2[2] = {rows, w}, vs2[2] = {ni, w}, is = ni;
    tg_array tin[3], tout_a;
    tg_array_init(&tin[0], TG_FLOAT64, 2, xs2, tx);
    tg_array_init(&tin[1], TG_FLOAT64, 2, vs2, tv);
    tg_array_init(&tin[2], TG_INT64, 1, &is, ix);
    tg_array_init(&tout_a, TG_FLOAT64, 2, xs2, to);
    double tn[R], tr[R], tt[3];
    for (int k = 0; k < R; k++) {
        double t = now();
        tg_fn_call(nat, tin, &tout_a, &err);
        tn[k] = now() - t;
        t = now();
        faddat(rows, ni, w, tx, tv, ix, to2);
        tr[k] = now() - t;
        if (k < 3) {
            t = now();
            tg_fn_call(tit, tin, &tout_a, &err);
            tt[k] = now() - t;
        }
    }
    tg_fn_call(nat, tin, &tout_a, &err);
    same = memcmp(to, to2, rows * w * sizeof *to) == 0;
    double mn = bench_median(tn, R), mr = bench_median(tr, R), mt = bench_median(tt, 3);
    printf("{\"bench\":\"inc_take\",\"indices\":%ld,\"row\":%ld,\"rows\":%ld,\"tgrel_ms\":%.2f,\"interp_ms\":%.2f,"
           "\"ref_c_loop_ms\":%.2f,\"vs_c_loop\":%.3f,\"speedup_vs_interp\":%.2f,\"same_as_c_loop\":%s,"
           "\"native\":%d,\"clock\":\"thread CPU, one thread, median of %d\"}\n",
           ni, w, rows, mn * 1e3, mt * 1e3, mr * 1e3, mn / mr, mt / mn, same ? "true" : "false", tg_fn_native(nat), R);
    tg_fn_free(nat), tg_fn_free(tit);
    free(tx), free(tv), free(to), free(to2), free(ix);
}

int main(int argc, char **argv)
{
    GEMM_N = (int)bench_size(2000, 16);
    if (argc == 2 && strcmp(argv[1], "gemm-child") == 0)
        return gemm_child();
    char dir[] = "/tmp/tgrel-bench-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    tg_error err;
    tg_ctx *ctx = tg_ctx_new(&err);
    if (bench_want(argc, argv, "compile"))
        bench_compile(ctx, dir);
    if (bench_want(argc, argv, "rules"))
        bench_compile_rules(dir);
    if (bench_want(argc, argv, "fused"))
        bench_fused(ctx, dir);
    if (bench_want(argc, argv, "reduce"))
        bench_reduce(ctx, dir);
    if (bench_want(argc, argv, "overhead"))
        bench_overhead(ctx);
    if (bench_want(argc, argv, "dotvec"))
        bench_dot_vec(ctx);
    if (bench_want(argc, argv, "gemm"))
        bench_gemm(ctx);
    if (bench_want(argc, argv, "small_gemm"))
        bench_small_gemm(ctx);
    if (bench_want(argc, argv, "ger"))
        bench_ger(ctx);
    if (bench_want(argc, argv, "update"))
        bench_update(ctx, dir);
    tg_ctx_free(ctx);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? failed : 1;
}
