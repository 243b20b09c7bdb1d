/* grad_logreg.c - bench/grad's logistic regression (the "logreg"
 * section): the loss and its gradient as one function,
 *   p = sigmoid(X w + b),
 *   loss = mean(-y log p - (1-y) log(1-p)) + 0.01 sum(w^2),
 * outputs loss, d loss/dw and d loss/db, written with (grad COST WRT) and
 * rewritten by the rule library's default rewriter.  It prints:
 * - the compile times: cold (the C compiler included, an empty cache;
 *   the loops on two compilers at once and on one, TGREL_CC_JOBS=2 and
 *   1, alternated), again in the same process, and warm in a new
 *   process from the disk cache; beside them the floors of a cold
 *   compile on this machine (starting a process, the C compiler on an
 *   empty file, tgrel's cold compile of one loop);
 * - the size of the rewritten graph (op nodes, and the schedule's steps)
 *   beside PyTensor 2.34's count for the same function;
 * - a call at N = 10^5, F = 100 against numpy computing the same loss and
 *   gradient by hand (the system python's, in the same run) and against
 *   hand-written C loops compiled in the same run (one pass over X per
 *   row, at the flags of tgrel's own code and at -O3 -ffast-math).
 * The compile times are in CPU time (see each line's "clock"); the call
 * is timed on the wall clock, what a user waits for: on the default
 * threads (tgrel's and numpy's BLAS's), then with one thread everywhere
 * (OpenMP, OpenBLAS, numpy's BLAS), medians of R calls.  The machine
 * may be shared: compare the ratios of one run. */
#include "config.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tgrel.h"
#include "bench.h"
#include "grad_bench.h"

/* PyTensor 2.34's node count for this function (the figure:
 * len(f.maker.fgraph.apply_nodes) after its rewrites, fusion included) */
#define PYTENSOR_NODES 18

static const char *const lr_inputs[4] = {
    "(input X float64 (n f))", "(input y float64 (n))", "(input w float64 (f))", "(input b float64 ())"};

#define LR_P "(sigmoid (add (dot (input X float64 (n f)) (input w float64 (f))) (input b float64 ())))"
#define LR_COST                                                                                         \
    "(add (mean (sub (neg (mul (input y float64 (n)) (log " LR_P ")))"                                \
    " (mul (sub 1 (input y float64 (n))) (log (sub 1 " LR_P ")))) all)"                               \
    " (mul 0.01 (sum (sqr (input w float64 (f))) all)))"

static const char lr_outputs[] =
    "(graph " LR_COST " (grad " LR_COST " (input w float64 (f))) (grad " LR_COST " (input b float64 ())))";

/* The function, compiled with the library's default rewriter (rs) or
 * interpreted; NULL with the error on stderr. */
static tg_fn *lr_compile(tg_ctx *ctx, tg_rules *rs, int interpret)
{
    tg_error err;
    tg_term *in[4], *outs = tg_read_cstr(ctx, lr_outputs, &err), *o[3];
    for (int i = 0; i < 4; i++)
        in[i] = tg_read_cstr(ctx, lr_inputs[i], &err);
    for (int i = 0; i < 3; i++)
        o[i] = tg_nth(outs, (size_t)i + 1);
    tg_fn_options opt = {.rules = rs, .interpret = interpret};
    tg_fn *fn = tg_fn_compile(ctx, 4, in, 3, o, &opt, &err);
    if (!fn)
        fprintf(stderr, "grad bench: logreg: %s\n", err.message);
    return fn;
}

/* ---- node counts ------------------------------------------------------- */

static int is_sym(const tg_term *t, const char *name)
{
    const char *s = tg_kind_of(t) == TG_SYMBOL ? tg_symbol_name(t, NULL) : NULL;
    return s && strcmp(s, name) == 0;
}

/* The distinct op nodes of t: compound terms headed by an op, leaving out
 * leaves (input, const) and the arguments that are not tensors (axes,
 * perm, shape-of, slice) and the (graph ...) around the outputs. */
static size_t op_nodes(tg_term *t)
{
    size_t cap = 1024, n = 0, top = 0, count = 0;
    const tg_term **seen = calloc(cap, sizeof *seen);
    tg_term **stack = malloc(cap * sizeof *stack);
    stack[top++] = t;
    while (top) {
        tg_term *u = stack[--top];
        if (tg_kind_of(u) != TG_PAIR)
            continue;
        size_t i = tg_hash(u) & (cap - 1);
        while (seen[i] && seen[i] != u)
            i = (i + 1) & (cap - 1);
        if (seen[i])
            continue;
        if (2 * (n + 1) >= cap)
            break;  /* far larger than any graph here: the count is a floor */
        seen[i] = u, n++;
        tg_term *h = tg_car(u);
        if (is_sym(h, "input") || is_sym(h, "const") || is_sym(h, "axes") || is_sym(h, "perm") ||
            is_sym(h, "shape-of") || is_sym(h, "slice"))
            continue;
        count += !is_sym(h, "graph");
        size_t len = tg_length(u);
        for (size_t k = 1; k < len && top + 1 < cap; k++)
            stack[top++] = tg_nth(u, k);
    }
    free(seen), free(stack);
    return count;
}

/* The steps of a schedule (its items other than inputs, outputs, slots). */
static size_t sched_steps(tg_term *s)
{
    size_t n = 0, len = tg_length(s);
    for (size_t k = 1; k < len; k++) {
        tg_term *h = tg_car(tg_nth(s, k));
        n += !(is_sym(h, "inputs") || is_sym(h, "outputs") || is_sym(h, "slots"));
    }
    return n;
}

/* ---- compile times ------------------------------------------------------- */

static double children_cpu_ms(void)
{
    struct rusage u;
    getrusage(RUSAGE_CHILDREN, &u);
    return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3 +
           (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-3;
}

/* The smallest function with a compiled loop: one elementwise add (the
 * floor of a cold compile through tgrel: the C compiler on the prelude
 * and one loop). */
static tg_fn *one_loop(tg_ctx *ctx)
{
    tg_error err;
    tg_term *x = tg_read_cstr(ctx, "(input x float64 (n))", &err);
    tg_term *o = tg_read_cstr(ctx, "(add (input x float64 (n)) 1)", &err);
    return x && o ? tg_fn_compile(ctx, 1, &x, 1, &o, NULL, &err) : NULL;
}

/* A child process: a new context, the library loaded, then the compile
 * (the logistic regression, or one_loop when tiny) timed: d[0] in thread
 * CPU time, plus (cold) the CPU time of the C compiler's processes, and
 * d[1] on the wall clock.  -1 on a failure or an interpreted result. */
static void compile_in_child(int cold, int tiny, double d[2])
{
    int p[2];
    d[0] = d[1] = -1;
    if (pipe(p) != 0)
        return;
    pid_t pid = fork();
    if (pid == 0) {
        tg_error err;
        tg_ctx *c = tg_ctx_new(&err);
        tg_rules *rs = c ? bench_library(c, "grad bench") : NULL;
        double w0 = bench_now_ms(), t0 = bench_thread_cpu_ms(), c0 = children_cpu_ms();
        tg_fn *f = !rs ? NULL : tiny ? one_loop(c) : lr_compile(c, rs, 0);
        if (f && tg_fn_native(f)) {
            d[0] = bench_thread_cpu_ms() - t0 + (cold ? children_cpu_ms() - c0 : 0);
            d[1] = bench_now_ms() - w0;
        }
        _exit(write(p[1], d, 2 * sizeof *d) == 2 * sizeof *d ? 0 : 1);
    }
    close(p[1]);
    if (read(p[0], d, 2 * sizeof *d) != 2 * sizeof *d)
        d[0] = d[1] = -1;
    close(p[0]);
    waitpid(pid, NULL, 0);
}

/* The wall and CPU time (its own and its children's) of a command run
 * through the shell: *wall and *cpu, medians of R runs. */
static void command_ms(const char *cmd, int runs, double *wall, double *cpu)
{
    double w[9], c[9];
    for (int r = 0; r < runs; r++) {
        double w0 = bench_now_ms(), c0 = children_cpu_ms();
        if (system(cmd) != 0)
            w0 = -1e9;
        w[r] = bench_now_ms() - w0, c[r] = children_cpu_ms() - c0;
    }
    *wall = bench_median(w, runs), *cpu = bench_median(c, runs);
}

/* The floors under a cold compile on this machine: starting a process
 * (fork, exec, exit of /bin/true), the C compiler making a shared object
 * of an empty file with the library's default flags (as doc/kernels.md
 * gives them; -fopenmp, libmvec), and the cold compile of one_loop; all
 * wall-clock medians of R. */
static void floors(const char *dir, int runs, double *start, double *cc_empty, double *cc_empty_cpu, double *one)
{
    char cmd[1600], c[800];
    double cpu, d[2], o[9];
    command_ms("/bin/true", runs, start, &cpu);
    snprintf(c, sizeof c, "%s/empty.c", dir);
    FILE *f = fopen(c, "w");
    if (f)
        fclose(f);
    snprintf(cmd, sizeof cmd, "cc -O2 -march=native -fno-math-errno -ffp-contract=off -fopenmp -shared -fPIC "
             "-o '%s/empty.so' '%s' %s-lm", dir, c,
#ifdef HAVE_LIBMVEC
             "-lmvec "
#else
             ""
#endif
             );
    command_ms(cmd, runs, cc_empty, cc_empty_cpu);
    for (int r = 0; r < runs; r++) {
        snprintf(cmd, sizeof cmd, "%s/one-loop-cache-%d", dir, r);
        setenv("TGREL_CACHE_DIR", cmd, 1);
        compile_in_child(1, 1, d);
        o[r] = d[1];
    }
    *one = bench_median(o, runs);
}

static void lr_compile_times(const char *dir)
{
    enum { R = 5 };
    char cdir[700];
    double cold[R], cold_cpu[R], serial[R], serial_cpu[R], warm[R], warm_wall[R], again[R], load[R], d[2];
    for (int r = 0; r < 2 * R; r++) {   /* each cold compile in a cache of its own, alternated */
        snprintf(cdir, sizeof cdir, "%s/logreg-cache-%d", dir, r);
        setenv("TGREL_CACHE_DIR", cdir, 1);
        setenv("TGREL_CC_JOBS", r % 2 ? "1" : "2", 1);
        compile_in_child(1, 0, d);
        unsetenv("TGREL_CC_JOBS");
        if (r % 2)
            serial_cpu[r / 2] = d[0], serial[r / 2] = d[1];
        else
            cold_cpu[r / 2] = d[0], cold[r / 2] = d[1];
    }
    for (int r = 0; r < R; r++) {
        compile_in_child(0, 0, d);
        warm[r] = d[0], warm_wall[r] = d[1];
    }
    tg_error err;
    tg_ctx *ctx = tg_ctx_new(&err);
    for (int r = 0; r < R; r++) {
        double t0 = bench_thread_cpu_ms();
        tg_rules *rs = bench_library(ctx, "grad bench");
        load[r] = bench_thread_cpu_ms() - t0;
        tg_fn_free(lr_compile(ctx, rs, 0));
        t0 = bench_thread_cpu_ms();
        tg_fn *f = lr_compile(ctx, rs, 0);
        again[r] = bench_thread_cpu_ms() - t0;
        tg_fn_free(f);
        tg_rules_free(rs);
    }
    double start, cc_empty, cc_empty_cpu, one;
    floors(dir, R, &start, &cc_empty, &cc_empty_cpu, &one);
    /* the sizes: the rewritten terms, and the schedule */
    tg_rules *rs = bench_library(ctx, "grad bench");
    tg_term *outs = tg_read_cstr(ctx, lr_outputs, &err);
    tg_term *ex = outs ? tg_grad_expand(ctx, outs, NULL, &err) : NULL;
    tg_term *rw = ex && rs ? tg_rewrite(rs, tg_symbol_cstr(ctx, "default"), ex, &err) : NULL;
    tg_fn *f = rs ? lr_compile(ctx, rs, 1) : NULL;
    size_t steps = f ? sched_steps(tg_fn_schedule(f)) : 0;
    printf("{\"bench\": \"grad_logreg_compile\", \"cold_with_cc_ms\": %.1f, \"cold_cpu_with_cc_ms\": %.1f, "
           "\"cold_one_cc_job_ms\": %.1f, \"cold_one_cc_job_cpu_ms\": %.1f, "
           "\"warm_new_process_ms\": %.3f, \"warm_new_process_wall_ms\": %.3f, "
           "\"again_in_process_ms\": %.3f, \"rules_load_ms\": %.2f, "
           "\"targets\": {\"cold_ms\": 150, \"warm_new_process_ms\": 2}, "
           "\"pytensor_2_34\": {\"cold_ms\": 5500, \"warm_new_process_ms\": 550, \"again_in_process_ms\": 92}, "
           "\"floors\": {\"process_start_ms\": %.2f, \"cc_empty_file_ms\": %.1f, \"cc_empty_file_cpu_ms\": %.1f, "
           "\"tgrel_cold_one_loop_ms\": %.1f}, "
           "\"loadavg_1min\": %.1f, \"clock\": \"cold: wall, and cpu of this thread and the C compiler (the loops on "
           "two compilers, TGREL_CC_JOBS=2, alternated with one, TGREL_CC_JOBS=1: the default takes two when "
           "a processor is idle); warm: thread cpu, and wall; "
           "floors: wall; medians of %d new processes, the library's rules loaded before\"}\n",
           bench_median(cold, R), bench_median(cold_cpu, R), bench_median(serial, R), bench_median(serial_cpu, R),
           bench_median(warm, R), bench_median(warm_wall, R), bench_median(again, R), bench_median(load, R), start,
           cc_empty, cc_empty_cpu, one, bench_loadavg(), R);
    printf("{\"bench\": \"grad_logreg_graph\", \"expanded_op_nodes\": %zu, \"rewritten_op_nodes\": %zu, "
           "\"schedule_steps\": %zu, \"pytensor_2_34_nodes\": %d}\n",
           ex ? op_nodes(ex) : 0, rw ? op_nodes(rw) : 0, steps, PYTENSOR_NODES);
    fflush(stdout);
    tg_fn_free(f);
    tg_rules_free(rs);
    tg_ctx_free(ctx);
}

/* ---- the call against numpy and C ------------------------------------------- */

/* The data, the same formulas in C and in the numpy script. */
static void lr_data(long n, long f, double *X, double *y, double *w, double *b)
{
    for (long i = 0; i < n; i++) {
        for (long j = 0; j < f; j++)
            X[i * f + j] = sin((double)i * 0.001 + (double)j * 0.37);
        y[i] = cos((double)i * 0.01) > 0 ? 1 : 0;
    }
    for (long j = 0; j < f; j++)
        w[j] = cos((double)j * 0.3) * 0.1;
    *b = 0.1;
}

static const char ref_src[] =
    "#include <math.h>\n"
    "double logreg(long n, long f, const double *X, const double *y, const double *w, double b,\n"
    "              double *dw, double *db) {\n"
    "  double loss = 0, gb = 0, r = 0;\n"
    "  for (long j = 0; j < f; j++) dw[j] = 0, r += w[j] * w[j];\n"
    "  for (long i = 0; i < n; i++) {\n"
    "    const double *x = X + i * f;\n"
    "    double z = b;\n"
    "    for (long j = 0; j < f; j++) z += x[j] * w[j];\n"
    "    double p = 1 / (1 + exp(-z));\n"
    "    loss += -y[i] * log(p) - (1 - y[i]) * log(1 - p);\n"
    "    double g = (p - y[i]) / n;\n"
    "    gb += g;\n"
    "    for (long j = 0; j < f; j++) dw[j] += g * x[j];\n"
    "  }\n"
    "  for (long j = 0; j < f; j++) dw[j] += 0.02 * w[j];\n"
    "  *db = gb;\n"
    "  return loss / n + 0.01 * r; }\n";

typedef double ref_fn(long, long, const double *, const double *, const double *, double, double *, double *);

static ref_fn *load_ref(const char *dir, const char *name, const char *flags)
{
    void *h = bench_cc_load(dir, name, ref_src, flags);
    void *fp = h ? dlsym(h, "logreg") : NULL;
    ref_fn *r;
    memcpy(&r, &fp, sizeof r);
    return r;
}

static const char numpy_script[] =
    "import sys, time\n"
    "try:\n"
    "    import numpy as np\n"
    "except Exception:\n"
    "    print('absent'); sys.exit(0)\n"
    "n, f = int(sys.argv[1]), int(sys.argv[2])\n"
    "i = np.arange(n, dtype=np.float64)[:, None]; j = np.arange(f, dtype=np.float64)[None, :]\n"
    "X = np.sin(i * 0.001 + j * 0.37); y = (np.cos(i[:, 0] * 0.01) > 0).astype(np.float64)\n"
    "w = np.cos(j[0] * 0.3) * 0.1; b = 0.1\n"
    "def step():\n"
    "    p = 1 / (1 + np.exp(-(X @ w + b)))\n"
    "    loss = np.mean(-y * np.log(p) - (1 - y) * np.log(1 - p)) + 0.01 * np.sum(w * w)\n"
    "    g = (p - y) / n\n"
    "    return loss, X.T @ g + 0.02 * w, g.sum()\n"
    "ts = []\n"
    "step()\n"
    "for r in range(15):\n"
    "    t = time.perf_counter(); out = step(); ts.append(time.perf_counter() - t)\n"
    "print('%.4f %.17g' % (sorted(ts)[7] * 1e3, out[0]))\n";

/* numpy's median wall time of the step, on BLAS's default threads or
 * (one) on one; 0 when numpy is absent. */
static int numpy_ms(long n, long f, const char *dir, int one, double *ms, double *loss)
{
    char args[64], line[200] = "";
    snprintf(args, sizeof args, "%ld %ld", n, f);
    return bench_python(dir, "logreg_numpy.py", numpy_script, args, one, line, sizeof line) &&
           sscanf(line, "%lf %lf", ms, loss) == 2;
}

/* One thread for the kernels' OpenMP loops and for OpenBLAS (opened by
 * tgrel at its first dot). */
static void one_thread(void)
{
    void *gomp = dlopen("libgomp.so.1", RTLD_NOW | RTLD_NOLOAD);
    void *set = gomp ? dlsym(gomp, "omp_set_num_threads") : NULL;
    if (set)
        ((void (*)(int))set)(1);
    void *bset = bench_blas_sym("openblas_set_num_threads");
    if (bset)
        ((void (*)(int))bset)(1);
}

/* Median wall and thread-CPU milliseconds of R calls of fn. */
static void time_fn(tg_fn *fn, const tg_array *in, tg_array *out, int R, double *wall, double *cpu)
{
    double tw[R], tc[R];
    tg_error err;
    for (int r = 0; r < R; r++) {
        double w0 = bench_now_ms(), c0 = bench_thread_cpu_ms();
        tg_fn_call(fn, in, out, &err);
        tc[r] = bench_thread_cpu_ms() - c0, tw[r] = bench_now_ms() - w0;
    }
    *wall = bench_median(tw, R), *cpu = bench_median(tc, R);
}

/* The threads a call runs on by default: OpenMP's count (the compiled
 * loops and the row blocks follow it). */
static int default_threads(void)
{
    void *gomp = dlopen("libgomp.so.1", RTLD_NOW | RTLD_NOLOAD);
    void *get = gomp ? dlsym(gomp, "omp_get_max_threads") : NULL;
    return get ? ((int (*)(void))get)() : (int)sysconf(_SC_NPROCESSORS_ONLN);
}

static void lr_run(const char *dir)
{
    long n = 100000, f = 100;
    double *X = malloc((size_t)(n * f) * sizeof *X), *y = malloc((size_t)n * sizeof *y);
    double *w = malloc((size_t)f * sizeof *w), *dw = malloc((size_t)f * sizeof *dw);
    double *rdw = malloc((size_t)f * sizeof *rdw), b, loss, db, rloss = 0, rdb;
    lr_data(n, f, X, y, w, &b);
    ref_fn *plain = load_ref(dir, "logreg_plain", "-O2 -march=native -fno-math-errno -ffp-contract=off");
    ref_fn *fast = load_ref(dir, "logreg_fast", "-O3 -march=native -ffast-math");
    tg_error err;
    tg_ctx *ctx = tg_ctx_new(&err);
    tg_rules *rs = bench_library(ctx, "grad bench");
    tg_fn *nat = rs ? lr_compile(ctx, rs, 0) : NULL, *itp = rs ? lr_compile(ctx, rs, 1) : NULL;
    if (!plain || !fast || !nat || !itp) {
        fprintf(stderr, "grad bench: logreg: no function or no reference loops\n");
        return;
    }
    int64_t sx[2] = {n, f};
    tg_array in[4], out[3];
    tg_array_init(&in[0], TG_FLOAT64, 2, sx, X);
    tg_array_init(&in[1], TG_FLOAT64, 1, &sx[0], y);
    tg_array_init(&in[2], TG_FLOAT64, 1, &sx[1], w);
    tg_array_init(&in[3], TG_FLOAT64, 0, NULL, &b);
    tg_array_init(&out[0], TG_FLOAT64, 0, NULL, &loss);
    tg_array_init(&out[1], TG_FLOAT64, 1, &sx[1], dw);
    tg_array_init(&out[2], TG_FLOAT64, 0, NULL, &db);
    if (tg_fn_call(nat, in, out, &err) < 0) {   /* opens OpenBLAS */
        fprintf(stderr, "grad bench: logreg: %s\n", err.message);
        return;
    }
    enum { R = 15 };
    double tw, tc, t1w, t1c, tp[R], tf[R], ti, tic;
    /* what a user gets: the default threads (the machine's processors) */
    time_fn(nat, in, out, R, &tw, &tc);
    double *dw_def = malloc((size_t)f * sizeof *dw_def), loss_def = loss;
    memcpy(dw_def, dw, (size_t)f * sizeof *dw_def);
    int threads = default_threads();
    one_thread();
    time_fn(nat, in, out, R, &t1w, &t1c);
    int same_bits = loss == loss_def && !memcmp(dw, dw_def, (size_t)f * sizeof *dw_def);
    free(dw_def);
    for (int r = 0; r < R; r++) {
        double t = bench_now_ms();
        rloss = plain(n, f, X, y, w, b, rdw, &rdb);
        tp[r] = bench_now_ms() - t;
        t = bench_now_ms();
        fast(n, f, X, y, w, b, rdw, &rdb);
        tf[r] = bench_now_ms() - t;
    }
    rloss = plain(n, f, X, y, w, b, rdw, &rdb);
    time_fn(itp, in, out, 3, &ti, &tic);
    /* agreement with the C loop (the interpreter's values, last written) */
    double diff = fabs(db - rdb) + fabs(loss - rloss);
    for (long j = 0; j < f; j++)
        diff = fmax(diff, fabs(dw[j] - rdw[j]));
    double mp = bench_median(tp, R), mf = bench_median(tf, R);
    double np_ms = 0, np1_ms = 0, np_loss = 0;
    char npj[400];
    if (numpy_ms(n, f, dir, 0, &np_ms, &np_loss) && numpy_ms(n, f, dir, 1, &np1_ms, &np_loss))
        snprintf(npj, sizeof npj, "\"ref_numpy_ms\": %.2f, \"speedup_vs_numpy\": %.2f, \"ref_numpy_1thread_ms\": %.2f, "
                 "\"speedup_vs_numpy_1thread\": %.2f, \"numpy_loss_diff\": %.2g",
                 np_ms, np_ms / tw, np1_ms, np1_ms / t1w, fabs(np_loss - rloss));
    else
        snprintf(npj, sizeof npj, "\"ref_numpy_ms\": null, \"numpy\": \"absent\"");
    printf("{\"bench\": \"grad_logreg_run\", \"n\": %ld, \"f\": %ld, \"tgrel_ms\": %.2f, \"tgrel_1thread_ms\": %.2f, "
           "\"tgrel_1thread_cpu_ms\": %.2f, \"interp_1thread_ms\": %.2f, "
           "\"ref_c_ms\": %.2f, \"vs_c\": %.2f, \"vs_c_1thread\": %.2f, \"ref_c_fastmath_ms\": %.2f, "
           "\"vs_c_fastmath\": %.2f, %s, \"max_abs_diff_vs_c\": %.2g, \"same_bits_1_and_default_threads\": %d, "
           "\"threads\": %d, \"native\": %d, \"targets\": {\"speedup_vs_numpy\": 2, \"vs_c\": 1.3}, \"loadavg_1min\": %.1f, "
           "\"clock\": \"wall time of tg_fn_call (and of numpy's step, of the C loop), median of %d; tgrel_ms and "
           "ref_numpy_ms on the default threads (tgrel: its row blocks and OpenMP loops; numpy: OpenBLAS's), "
           "the _1thread figures with one thread everywhere; the C loop runs on one\"}\n",
           n, f, tw, t1w, t1c, ti, mp, tw / mp, t1w / mp, mf, tw / mf, npj, diff, same_bits,
           threads, tg_fn_native(nat), bench_loadavg(), R);
    fflush(stdout);
    tg_fn_free(nat), tg_fn_free(itp);
    tg_rules_free(rs);
    tg_ctx_free(ctx);
    free(X), free(y), free(w), free(dw), free(rdw);
}

void bench_logreg(int compile)
{
    char dir[] = "/tmp/tgrel-bench-grad-XXXXXX";
    if (!mkdtemp(dir))
        return;
    if (compile)
        lr_compile_times(dir);
    lr_run(dir);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "grad bench: could not remove %s\n", dir);
}
