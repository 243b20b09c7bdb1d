/* bench.h - what the benchmark programs share: clocks (wall and thread
 * CPU time), the median of repeated runs, the load average, numpy
 * references run in python, JSON strings, the size factor of a run
 * ($TGREL_BENCH_SCALE), (after config.h) the OpenBLAS functions tgrel
 * opened and the library's default compiler flags (BENCH_CFLAGS), and
 * (after tgrel.h) compiling a one-output tensor function from text and
 * loading the rule library. */
#ifndef TGREL_BENCH_H
#define TGREL_BENCH_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The flags the library compiles with by default (doc/kernels.md), for
 * adding a -D to them (after config.h). */
#ifdef TGREL_OPENMP_FLAG
#define BENCH_OMP " " TGREL_OPENMP_FLAG
#else
#define BENCH_OMP " -fopenmp-simd"
#endif
#ifdef HAVE_LIBMVEC
#define BENCH_MVEC " -DTGK_MVEC"
#else
#define BENCH_MVEC ""
#endif
#define BENCH_CFLAGS "-O2 -march=native -fno-math-errno -ffp-contract=off" BENCH_OMP BENCH_MVEC

/* Wall-clock seconds and milliseconds (monotonic). */
static inline double bench_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}
static inline double bench_now_ms(void)
{
    return bench_now() * 1e3;
}

/* CPU milliseconds of the calling thread: on a loaded machine, wall times
 * include the time other jobs ran; this does not (collector marker
 * threads aside). */
static inline double bench_thread_cpu_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

/* CPU milliseconds of the whole process: the collector's marker threads
 * included, the time other jobs ran excluded. */
static inline double bench_process_cpu_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of v's n values (the upper one when n is even); sorts v. */
static inline double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return v[n / 2];
}

/* The 1-minute load average (-1 when unknown): the machine is shared. */
static inline double bench_loadavg(void)
{
    double l = -1;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &l) != 1)
            l = -1;
        fclose(f);
    }
    return l;
}

/* Write script to dir/file and run it with the system python (or
 * $PYTHON) on args, on OpenBLAS's and OpenMP's default threads or (one)
 * on one: its first line of output into line (n bytes), 1; 0 when it
 * could not run. */
static inline int bench_python(const char *dir, const char *file, const char *script, const char *args, int one,
                               char *line, size_t n)
{
    char path[800], cmd[1800];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *f = fopen(path, "w");
    if (!f)
        return 0;
    fputs(script, f);
    fclose(f);
    const char *py = getenv("PYTHON");     /* default: the system python */
    snprintf(cmd, sizeof cmd, "%s'%s' '%s' %s 2>/dev/null", one ? "OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 " : "",
             py && *py ? py : "/usr/bin/python3", path, args);
    FILE *p = popen(cmd, "r");
    if (!p)
        return 0;
    if (!fgets(line, (int)n, p))
        line[0] = 0;
    pclose(p);
    return 1;
}

/* s as a JSON string on stdout, quotes, backslashes and control
 * characters escaped. */
static inline void bench_json_string(const char *s)
{
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            printf("\\%c", *p);
        else if (*p < 0x20)
            printf("\\u%04x", *p);
        else
            putchar(*p);
    }
    putchar('"');
}

/* The size factor of a run: $TGREL_BENCH_SCALE when set (the test suite
 * runs every benchmark once at a tiny scale, so that one that breaks
 * fails there), else dflt (1 for the full sizes). */
static inline double bench_scale(double dflt)
{
    const char *s = getenv("TGREL_BENCH_SCALE");
    double v = s && *s ? atof(s) : 0;
    return v > 0 ? v : dflt;
}

/* n scaled by bench_scale(1), and at least min. */
static inline long bench_size(long n, long min)
{
    double v = (double)n * bench_scale(1);
    return v < (double)min ? min : (long)v;
}

/* r repetitions, or at most 2 at a scale below 1 (a check, not timing). */
static inline int bench_reps(int r)
{
    return bench_scale(1) < 1 && r > 2 ? 2 : r;
}

/* Sections to run: all when none is named on the command line, else
 * those named. */
static inline int bench_want(int argc, char **argv, const char *name)
{
    if (argc < 2)
        return 1;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], name) == 0)
            return 1;
    return 0;
}

#include <dlfcn.h>

/* The C text src written to DIR/NAME.c, compiled with cc and flags into
 * DIR/NAME.so and opened: the reference loops a benchmark measures
 * against, built with flags of its choosing; NULL when any step fails. */
static inline void *bench_cc_load(const char *dir, const char *name, const char *src, const char *flags)
{
    char c[800], so[800], cmd[2000];
    snprintf(c, sizeof c, "%s/%s.c", dir, name);
    snprintf(so, sizeof so, "%s/%s.so", dir, name);
    FILE *f = fopen(c, "w");
    if (!f)
        return NULL;
    fputs(src, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "cc %s -shared -fPIC -o '%s' '%s' -lm", flags, so, c);
    if (system(cmd) != 0)
        return NULL;
    return dlopen(so, RTLD_NOW);
}

#ifdef TGREL_BLAS_SONAME

/* A function of the OpenBLAS that tgrel opened (after a tgrel function
 * ran a dot): the benchmarks call the same library, on the same core,
 * as their reference; NULL before.  (Linking -lopenblas would load it
 * before tgrel could choose its core.) */
static inline void *bench_blas_sym(const char *name)
{
    void *h = dlopen(TGREL_BLAS_SONAME, RTLD_LAZY | RTLD_NOLOAD);
    void *f = h ? dlsym(h, name) : NULL;
    if (h)
        dlclose(h);     /* tgrel still holds it */
    return f;
}
#endif

#ifdef TGREL_H

/* The terms of text into t[0..max): their number; stops at the first
 * error (in *err) or at max. */
static inline size_t bench_read_terms(tg_ctx *ctx, const char *text, tg_term **t, size_t max, tg_error *err)
{
    size_t n = 0;
    tg_reader *r = tg_reader_new(ctx, text, strlen(text), NULL, err);
    while (r && n < max && tg_reader_next(r, &t[n], err) == 1)
        n++;
    tg_reader_free(r);
    return n;
}

/* The rule library of the source tree ($srcdir), or NULL with the error
 * on stderr, prefixed by who. */
static inline tg_rules *bench_library(tg_ctx *ctx, const char *who)
{
    const char *sd = getenv("srcdir");
    char path[1024];
    snprintf(path, sizeof path, "%s/patterns/lib/all.rules", sd ? sd : ".");
    tg_error err;
    tg_rules *rs = tg_rules_new(ctx, &err);
    if (rs && tg_rules_load_file(rs, path, &err) < 0) {
        fprintf(stderr, "%s: %s (set srcdir)\n", who, err.message);
        tg_rules_free(rs);
        rs = NULL;
    }
    return rs;
}

/* The function of output term out over the nin input terms ins (text),
 * compiled (interpret 0) or interpreted; NULL with the error on stderr,
 * prefixed by who. */
static inline tg_fn *bench_fn(tg_ctx *ctx, const char *who, int nin, const char *const *ins,
                              const char *out, int interpret)
{
    tg_error err;
    tg_term *it[8];
    for (int i = 0; i < nin && i < 8; i++)
        it[i] = tg_read_cstr(ctx, ins[i], &err);
    tg_term *o = tg_read_cstr(ctx, out, &err);
    tg_fn_options opt = {.interpret = interpret};
    tg_fn *fn = tg_fn_compile(ctx, (size_t)(nin < 8 ? nin : 8), it, 1, &o, &opt, &err);
    if (!fn)
        fprintf(stderr, "%s: %s\n", who, err.message);
    return fn;
}
#endif

#endif
