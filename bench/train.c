/* train.c - training steps (one JSON object a line, references in the
 * same run): one step of logistic regression (loss, gradient and update
 * of w and b in one compiled call) on N = 10^5 rows of F = 100 features
 * against the same step written in numpy (the system python's, or
 * $PYTHON's, when importable) and written by hand in C (one pass over
 * the rows); one minibatch step of the 64-32-10 perceptron of
 * examples/train_mlp.tgs (batch 256, rows drawn with random, softmax
 * cross-entropy) against numpy, and against PyTensor when that python
 * imports it (its C backend: loss, gradient and updates in one
 * function, the rows drawn by numpy); and the per-call cost of 20 updates
 * over the same function returning the 20 new values instead.
 *
 * The steps are timed on the wall clock, what a user waits for, medians
 * of 7 runs: first on the default threads (tgrel's row blocks and OpenMP
 * loops, numpy's OpenBLAS), then with one thread everywhere (and that
 * run's thread CPU time beside it, and the python thread's CPU time of
 * the references' one-thread runs: on a loaded machine the ratio of CPU
 * times is the steadier).  The machine may be shared: compare the
 * ratios of one run. */
#include "config.h"

#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tgrel.h"
#include "bench.h"

static tg_ctx *ctx;
static tg_error err;

static void die(const char *what)
{
    fprintf(stderr, "bench/train: %s: %s\n", what, err.message);
    exit(1);
}

/* The length snprintf returned, checked against the buffer it wrote:
 * a cut expression would fail to read with a misleading message. */
static size_t fits(int n, size_t room, const char *what)
{
    if (n < 0 || (size_t)n >= room) {
        fprintf(stderr, "bench/train: %s does not fit its buffer\n", what);
        exit(1);
    }
    return (size_t)n;
}

static tg_fn *compile(const char *ins, const char *outs, const char *upd)
{
    tg_term *it[8], *ot[64];
    size_t ni = bench_read_terms(ctx, ins, it, 8, &err);
    size_t no = bench_read_terms(ctx, outs, ot, 64, &err);
    tg_fn_options o;
    memset(&o, 0, sizeof o);
    if (upd && !(o.updates = tg_read_cstr(ctx, upd, &err)))
        die("reading the updates");
    tg_fn *fn = tg_fn_compile(ctx, ni, it, no, ot, &o, &err);
    if (!fn)
        die("compiling");
    return fn;
}

/* Median over 7 runs of the wall time of `calls` calls, in us; the
 * thread CPU time in *cpu (may be NULL). */
static double time_calls(tg_fn *fn, const tg_array *in, tg_array *out, int calls, double *cpu)
{
    double t[7], c[7];
    for (int r = 0; r < 7; r++) {
        double t0 = bench_now_ms(), c0 = bench_thread_cpu_ms();
        for (int k = 0; k < calls; k++)
            if (tg_fn_call(fn, in, out, &err) < 0)
                die("a call");
        t[r] = (bench_now_ms() - t0) * 1e3 / calls;
        c[r] = (bench_thread_cpu_ms() - c0) * 1e3 / calls;
    }
    if (cpu)
        *cpu = bench_median(c, 7);
    return bench_median(t, 7);
}

/* The threads of OpenMP (the compiled loops and the row blocks follow
 * it) and of OpenBLAS: set to n, or (n = 0) their count now. */
static int threads(int n)
{
    void *gomp = dlopen("libgomp.so.1", RTLD_NOW | RTLD_NOLOAD);
    void *set = gomp ? dlsym(gomp, "omp_set_num_threads") : NULL, *get = gomp ? dlsym(gomp, "omp_get_max_threads") : NULL;
    void *bset = bench_blas_sym("openblas_set_num_threads");
    if (n == 0)
        return get ? ((int (*)(void))get)() : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (set)
        ((void (*)(int))set)(n);
    if (bset)
        ((void (*)(int))bset)(n);
    return n;
}

/* tgrel's step on the default threads and on one: wall us (t[0], t[1]),
 * one thread's CPU us (t[2]); the threads back to the default after. */
static void time_both(tg_fn *fn, const tg_array *in, tg_array *out, int calls, double t[3], int *nthreads)
{
    *nthreads = threads(0);
    t[0] = time_calls(fn, in, out, calls, NULL);
    threads(1);
    t[1] = time_calls(fn, in, out, calls, &t[2]);
    threads(*nthreads);
}

/* ---- numpy, in the system python: the script prints the median step
 * time in us of each section asked for */
static const char numpy_script[] =
    "import sys, time\n"
    "try:\n"
    "    import numpy as np\n"
    "except ImportError:\n"
    "    print('absent'); sys.exit(0)\n"
    "d = sys.argv[1]; what = sys.argv[2]\n"
    "def med(f, calls):\n"
    "    ts = []; cs = []\n"
    "    for r in range(7):\n"
    "        t = time.perf_counter(); c0 = time.thread_time()\n"
    "        for c in range(calls): f()\n"
    "        ts.append((time.perf_counter() - t) / calls); cs.append((time.thread_time() - c0) / calls)\n"
    "    return '%.3f %.3f' % (sorted(ts)[3] * 1e6, sorted(cs)[3] * 1e6)\n"
    "if what == 'logreg':\n"
    "    X = np.load(d + '/X.npy'); y = np.load(d + '/y.npy')\n"
    "    n, f = X.shape; s = {'w': np.zeros(f), 'b': 0.0}\n"
    "    def step():\n"
    "        z = X @ s['w'] + s['b']\n"
    "        loss = np.mean(np.maximum(z, 0) + np.log1p(np.exp(-np.abs(z))) - y * z)\n"
    "        g = (1 / (1 + np.exp(-z)) - y) / n\n"
    "        s['w'] = s['w'] - 0.5 * (X.T @ g); s['b'] = s['b'] - 0.5 * g.sum()\n"
    "        return loss\n"
    "    print(med(step, 10))\n"
    "elif what == 'mlp_pytensor':\n"
    "    try:\n"
    "        import pytensor, pytensor.tensor as pt\n"
    "    except ImportError:\n"
    "        print('absent'); sys.exit(0)\n"
    "    X = np.load(d + '/dX.npy')[:1437] / 16; y = np.load(d + '/dy.npy')[:1437]\n"
    "    rng = np.random.default_rng(0); sh = pytensor.shared\n"
    "    W1 = sh(rng.normal(0, 0.125, (64, 32))); b1 = sh(np.zeros(32))\n"
    "    W2 = sh(rng.normal(0, 0.18, (32, 10))); b2 = sh(np.zeros(10))\n"
    "    Xs = sh(X); Ys = sh(np.eye(10)[y]); i = pt.lvector('i')\n"
    "    xb = Xs[i]; yb = Ys[i]; h = pt.tanh(xb @ W1 + b1); lo = h @ W2 + b2\n"
    "    m = lo.max(axis=1); s = pt.exp(lo - m[:, None]).sum(axis=1)\n"
    "    loss = pt.mean(m + pt.log(s) - (yb * lo).sum(axis=1))\n"
    "    ps = [W1, b1, W2, b2]; gs = pytensor.grad(loss, ps)\n"
    "    f = pytensor.function([i], loss, updates=[(p, p - 0.5 * g) for p, g in zip(ps, gs)])\n"
    "    print(med(lambda: f(rng.integers(0, 1437, 256)), 200))\n"
    "else:\n"
    "    X = np.load(d + '/dX.npy')[:1437] / 16; y = np.load(d + '/dy.npy')[:1437]\n"
    "    rng = np.random.default_rng(0)\n"
    "    W1 = rng.normal(0, 0.125, (64, 32)); b1 = np.zeros(32)\n"
    "    W2 = rng.normal(0, 0.18, (32, 10)); b2 = np.zeros(10); eye = np.eye(10)\n"
    "    def step():\n"
    "        global W1, b1, W2, b2\n"
    "        i = rng.integers(0, 1437, 256); xb = X[i]; yb = eye[y[i]]\n"
    "        h = np.tanh(xb @ W1 + b1); lo = h @ W2 + b2\n"
    "        m = lo.max(axis=1); e = np.exp(lo - m[:, None]); s = e.sum(axis=1)\n"
    "        loss = np.mean(m + np.log(s) - (yb * lo).sum(axis=1))\n"
    "        dl = (e / s[:, None] - yb) / 256\n"
    "        dh = (dl @ W2.T) * (1 - h * h)\n"
    "        W2 = W2 - 0.5 * (h.T @ dl); b2 = b2 - 0.5 * dl.sum(axis=0)\n"
    "        W1 = W1 - 0.5 * (xb.T @ dh); b1 = b1 - 0.5 * dh.sum(axis=0)\n"
    "        return loss\n"
    "    print(med(step, 200))\n";

/* numpy's step: median wall us, on OpenBLAS's default threads or (one)
 * on one, and in *cpu (may be NULL) the median thread CPU us of the
 * python thread; -1 when numpy is absent. */
static double numpy_us(const char *dir, const char *what, int one, double *cpu)
{
    char args[700], line[200] = "";
    snprintf(args, sizeof args, "'%s' %s", dir, what);
    if (!bench_python(dir, "numpy_train.py", numpy_script, args, one, line, sizeof line))
        return -1;
    double v, c = -1;
    int got = sscanf(line, "%lf %lf", &v, &c);
    if (cpu)
        *cpu = got == 2 ? c : -1;
    return got >= 1 ? v : -1;
}

/* The numpy part of a line: both figures and the ratios to tgrel's. */
static void print_numpy(const char *dir, const char *what, const double t[3])
{
    double c1, tn = numpy_us(dir, what, 0, NULL), tn1 = numpy_us(dir, what, 1, &c1);
    if (tn > 0 && tn1 > 0)
        printf("\"numpy_us\": %.1f, \"numpy_steps_per_s\": %.1f, \"numpy_over_tgrel\": %.2f, "
               "\"numpy_1thread_us\": %.1f, \"numpy_over_tgrel_1thread\": %.2f, \"numpy_1thread_cpu_us\": %.1f, "
               "\"numpy_over_tgrel_1thread_cpu\": %.2f, ",
               tn, 1e6 / tn, tn / t[0], tn1, tn1 / t[1], c1, c1 / t[2]);
    else
        printf("\"numpy\": \"absent\", ");
}

/* ---- logistic regression ------------------------------------------------- */

/* The step by hand: one pass over the rows (z, the loss, the gradient
 * accumulated row by row), then the update. */
static double c_step(const double *X, const double *y, double *w, double *b, double *g, long n, long f)
{
    double loss = 0, gb = 0;
    memset(g, 0, (size_t)f * sizeof *g);
    for (long i = 0; i < n; i++) {
        const double *x = X + i * f;
        double z = *b;
        for (long j = 0; j < f; j++)
            z += x[j] * w[j];
        loss += (z > 0 ? z : 0) + log1p(exp(-fabs(z))) - y[i] * z;
        double r = 1 / (1 + exp(-z)) - y[i];
        gb += r;
        for (long j = 0; j < f; j++)
            g[j] += r * x[j];
    }
    for (long j = 0; j < f; j++)
        w[j] -= 0.5 * g[j] / (double)n;
    *b -= 0.5 * gb / (double)n;
    return loss / (double)n;
}

static void logreg(const char *dir)
{
    const long n = 100000, f = 100;
    double *X = malloc((size_t)(n * f) * sizeof *X), *y = malloc((size_t)n * sizeof *y);
    double *w = calloc((size_t)f, sizeof *w), *g = malloc((size_t)f * sizeof *g), b = 0;
    uint64_t s = 88172645463325252ull;
    for (long i = 0; i < n * f; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        X[i] = (double)(s >> 11) * 0x1p-53 * 2 - 1;
    }
    for (long i = 0; i < n; i++)
        y[i] = X[i * f] + 0.5 * X[i * f + 1] > 0;
    int64_t xs[2] = {n, f}, ys = n, fs = f;
    tg_array ax, ay, a;
    tg_array_init(&ax, TG_FLOAT64, 2, xs, X);
    tg_array_init(&ay, TG_FLOAT64, 1, &ys, y);
    char path[700];
    snprintf(path, sizeof path, "%s/X.npy", dir);
    if (tg_npy_write(path, &ax, &err) < 0)
        die("writing X");
    snprintf(path, sizeof path, "%s/y.npy", dir);
    if (tg_npy_write(path, &ay, &err) < 0)
        die("writing y");
    tg_array_init(&a, TG_FLOAT64, 1, &fs, w);
    tg_shared *sw = tg_shared_new(ctx, "w", &a, &err);
    tg_array_init(&a, TG_FLOAT64, 0, NULL, &b);
    tg_shared *sb = sw ? tg_shared_new(ctx, "b", &a, &err) : NULL;
    if (!sb)
        die("the shared variables");
    const char *z = "(add (dot (input X float64 (n f)) (shared w float64 (f))) (shared b float64 ()))";
    char loss[2000], upd[6000];
    fits(snprintf(loss, sizeof loss,
             "(mean (sub (add (maximum %s 0) (log1p (exp (neg (abs %s))))) (mul (input y float64 (n)) %s)))", z, z, z),
         sizeof loss, "the loss");
    fits(snprintf(upd, sizeof upd,
             "(((shared w float64 (f)) (sub (shared w float64 (f)) (mul 0.5 (grad %s (shared w float64 (f))))))"
             " ((shared b float64 ()) (sub (shared b float64 ()) (mul 0.5 (grad %s (shared b float64 ()))))))",
             loss, loss), sizeof upd, "the updates");
    tg_fn *step = compile("(input X float64 (n f)) (input y float64 (n))", loss, upd);
    tg_array in[2] = {ax, ay}, out;
    double l;
    tg_array_init(&out, TG_FLOAT64, 0, NULL, &l);
    double tt[3];
    int nth;
    time_both(step, in, &out, 10, tt, &nth);
    /* the C step, on the same data from zero weights */
    double tc[7];
    memset(w, 0, (size_t)f * sizeof *w), b = 0;
    for (int r = 0; r < 7; r++) {
        double t0 = bench_now_ms();
        for (int c = 0; c < 10; c++)
            l = c_step(X, y, w, &b, g, n, f);
        __asm__ __volatile__("" ::"r"(w) : "memory");
        tc[r] = (bench_now_ms() - t0) * 1e3 / 10;
    }
    double tcm = bench_median(tc, 7);
    printf("{\"bench\": \"logistic regression step (loss, grad, update)\", \"n\": %ld, \"f\": %ld, "
           "\"tgrel_us\": %.1f, \"tgrel_steps_per_s\": %.1f, \"tgrel_1thread_us\": %.1f, \"tgrel_1thread_cpu_us\": %.1f, "
           "\"c_us\": %.1f, \"c_steps_per_s\": %.1f, ", n, f, tt[0], 1e6 / tt[0], tt[1], tt[2], tcm, 1e6 / tcm);
    print_numpy(dir, "logreg", tt);
    printf("\"tgrel_over_c\": %.2f, \"tgrel_1thread_over_c\": %.2f, \"threads\": %d, \"load_avg\": %.1f, "
           "\"targets\": {\"numpy_over_tgrel\": 3, \"tgrel_over_c\": 1.3}, \"clock\": \"wall, median of 7 runs of 10 "
           "steps; tgrel_us and numpy_us on the default threads, the _1thread figures on one; the C step runs on one\"}\n",
           tt[0] / tcm, tt[1] / tcm, nth, bench_loadavg());
    tg_fn_free(step);
    tg_shared_free(sw);
    tg_shared_free(sb);
    free(X), free(y), free(w), free(g);
}

/* ---- the perceptron's minibatch step ------------------------------------ */

static void mlp(const char *dir, const char *data)
{
    char path[600];
    tg_array dx, dy;
    snprintf(path, sizeof path, "%s/digits_X.npy", data);
    if (tg_npy_read(path, &dx, &err) < 0)
        die("the digits");
    snprintf(path, sizeof path, "%s/digits_y.npy", data);
    if (tg_npy_read(path, &dy, &err) < 0)
        die("the digits' labels");
    snprintf(path, sizeof path, "%s/dX.npy", dir);
    tg_npy_write(path, &dx, &err);
    snprintf(path, sizeof path, "%s/dy.npy", dir);
    tg_npy_write(path, &dy, &err);
    for (int64_t i = 0; i < dx.shape[0] * dx.shape[1]; i++)
        ((double *)dx.data)[i] /= 16;
    double w1[64 * 32], w2[32 * 10], b1[32] = {0}, b2[10] = {0};
    uint64_t s = 1;
    for (int i = 0; i < 64 * 32 + 32 * 10; i++) {     /* small uniform weights */
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        double u = ((double)(s >> 11) * 0x1p-53 - 0.5) * 0.4;
        if (i < 64 * 32)
            w1[i] = u;
        else
            w2[i - 64 * 32] = u;
    }
    int64_t s1[2] = {64, 32}, s2[2] = {32, 10}, n1 = 32, n2 = 10;
    tg_array a;
    int64_t zero = 0;
    tg_array_init(&a, TG_FLOAT64, 2, s1, w1);
    tg_shared_new(ctx, "W1", &a, &err);
    tg_array_init(&a, TG_FLOAT64, 2, s2, w2);
    tg_shared_new(ctx, "W2", &a, &err);
    tg_array_init(&a, TG_FLOAT64, 1, &n1, b1);
    tg_shared_new(ctx, "b1", &a, &err);
    tg_array_init(&a, TG_FLOAT64, 1, &n2, b2);
    tg_shared_new(ctx, "b2", &a, &err);
    tg_array_init(&a, TG_INT64, 0, NULL, &zero);
    tg_shared_new(ctx, "rng", &a, &err);
    const char *batch = "(random integers (shared rng int64 ()) (256) 0 1437)";
    char logits[1500], loss[6000], upd[40000];
    fits(snprintf(logits, sizeof logits,
             "(add (dot (tanh (add (dot (take (subtensor (input X float64 (1797 64)) (slice 0 1437 none)) %s)"
             " (shared W1 float64 (64 32))) (shared b1 float64 (32)))) (shared W2 float64 (32 10))) (shared b2 float64 (10)))",
             batch), sizeof logits, "the logits");
    fits(snprintf(loss, sizeof loss,
             "(mean (sub (add (max %s (axes 1)) (log (sum (exp (sub %s (dimshuffle (max %s (axes 1)) (perm 0 x)))) (axes 1))))"
             " (sum (mul (one_hot (take (subtensor (input y int64 (1797)) (slice 0 1437 none)) %s) 10) %s) (axes 1))))",
             logits, logits, logits, batch, logits), sizeof loss, "the loss");
    const char *p[4] = {"(shared W1 float64 (64 32))", "(shared b1 float64 (32))", "(shared W2 float64 (32 10))",
                        "(shared b2 float64 (10))"};
    size_t u = fits(snprintf(upd, sizeof upd, "("), sizeof upd, "the updates");
    for (int i = 0; i < 4; i++)
        u += fits(snprintf(upd + u, sizeof upd - u, "(%s (sub %s (mul 0.5 (grad %s %s)))) ", p[i], p[i], loss, p[i]),
                  sizeof upd - u, "the updates");
    fits(snprintf(upd + u, sizeof upd - u, "((shared rng int64 ()) (add (shared rng int64 ()) 1)))"), sizeof upd - u,
         "the updates");
    tg_fn *step = compile("(input X float64 (1797 64)) (input y int64 (1797))", loss, upd);
    tg_array in[2] = {dx, dy}, out;
    double l;
    tg_array_init(&out, TG_FLOAT64, 0, NULL, &l);
    double tt[3];
    int nth;
    time_both(step, in, &out, 200, tt, &nth);
    printf("{\"bench\": \"perceptron 64-32-10 minibatch step (batch 256)\", \"tgrel_us\": %.1f, "
           "\"tgrel_steps_per_s\": %.1f, \"tgrel_1thread_us\": %.1f, \"tgrel_1thread_cpu_us\": %.1f, "
           "\"loss_after\": %.4f, ", tt[0], 1e6 / tt[0], tt[1], tt[2], l);
    print_numpy(dir, "mlp", tt);
    /* PyTensor (C backend), when the python that runs numpy imports it */
    double pc1, tp = numpy_us(dir, "mlp_pytensor", 0, NULL), tp1 = tp > 0 ? numpy_us(dir, "mlp_pytensor", 1, &pc1) : -1;
    if (tp > 0 && tp1 > 0)
        printf("\"pytensor_us\": %.1f, \"pytensor_over_tgrel\": %.2f, \"pytensor_1thread_us\": %.1f, "
               "\"pytensor_over_tgrel_1thread\": %.2f, \"pytensor_1thread_cpu_us\": %.1f, "
               "\"pytensor_over_tgrel_1thread_cpu\": %.2f, ", tp, tp / tt[0], tp1, tp1 / tt[1], pc1, pc1 / tt[2]);
    else
        printf("\"pytensor\": \"absent\", ");
    printf("\"threads\": %d, \"load_avg\": %.1f, \"targets\": {\"numpy_over_tgrel\": 2}, "
           "\"clock\": \"wall, median of 7 runs of 200 steps; tgrel_us and numpy_us on the default threads, the "
           "_1thread figures on one\"}\n", nth, bench_loadavg());
    tg_fn_free(step);
    free(dx.data), free(dy.data);
}

/* ---- 20 updates against 20 outputs ------------------------------------- */

/* s_k := s_k * 0.5 + x for 20 scalar variables: written by updates,
 * against the same function returning the 20 values. */
static void overhead(void)
{
    enum { K = 20 };
    char outs[200 * K], upd[300 * K], name[16];
    size_t oo = 0, ou = 0;
    double zero = 0, x = 1, out[K];
    tg_array a;
    tg_array_init(&a, TG_FLOAT64, 0, NULL, &zero);
    tg_shared *sv[K];
    ou += fits(snprintf(upd + ou, sizeof upd - ou, "("), sizeof upd - ou, "the updates");
    for (int k = 0; k < K; k++) {
        snprintf(name, sizeof name, "u%d", k);
        if (!(sv[k] = tg_shared_new(ctx, name, &a, &err)))
            die("a variable");
        oo += fits(snprintf(outs + oo, sizeof outs - oo,
                            " (add (mul (shared u%d float64 ()) 0.5) (input x float64 ()))", k),
                   sizeof outs - oo, "the outputs");
        ou += fits(snprintf(upd + ou, sizeof upd - ou,
                            " ((shared u%d float64 ()) (add (mul (shared u%d float64 ()) 0.5) (input x float64 ())))",
                            k, k),
                   sizeof upd - ou, "the updates");
    }
    fits(snprintf(upd + ou, sizeof upd - ou, ")"), sizeof upd - ou, "the updates");
    tg_fn *plain = compile("(input x float64 ())", outs, NULL);
    tg_fn *state = compile("(input x float64 ())", "", upd);
    tg_array in, pout[K];
    tg_array_init(&in, TG_FLOAT64, 0, NULL, &x);
    for (int k = 0; k < K; k++)
        tg_array_init(&pout[k], TG_FLOAT64, 0, NULL, &out[k]);
    /* in thread CPU time: a difference of a fraction of a microsecond */
    double tp, ts;
    time_calls(plain, &in, pout, 100000, &tp);
    time_calls(state, &in, NULL, 100000, &ts);
    printf("{\"bench\": \"20 shared variables: 20 updates against 20 outputs, per call\", \"outputs_us\": %.3f, "
           "\"updates_us\": %.3f, \"added_us\": %.3f, \"load_avg\": %.1f, \"clock\": \"thread cpu, median of 7 runs of 10^5 calls\"}\n", tp, ts, ts - tp, bench_loadavg());
    tg_fn_free(plain);
    tg_fn_free(state);
    for (int k = 0; k < K; k++)
        tg_shared_free(sv[k]);
}

int main(int argc, char **argv)
{
    const char *data = getenv("TGREL_TRAIN_DATA");
    const char *tmp = getenv("TMPDIR");
    char dir[600];
    snprintf(dir, sizeof dir, "%s/tgrel-train-bench.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir))
        return 1;
    if (!(ctx = tg_ctx_new(&err)))
        return 1;
    if (bench_want(argc, argv, "logreg"))
        logreg(dir);
    if (bench_want(argc, argv, "mlp"))
        mlp(dir, data && *data ? data : "examples/data");
    if (bench_want(argc, argv, "overhead"))
        overhead();
    tg_ctx_free(ctx);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) != 0;
}
