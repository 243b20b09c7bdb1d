/* blas.c - OpenBLAS opened at first use (module prefix tgBl_).  The
 * library is not linked: OpenBLAS picks its core (the kernels it runs)
 * once, in its constructor, from OPENBLAS_CORETYPE or its own table of
 * processors, and an OpenBLAS older than the processor takes a generic
 * core (Prescott, SSE3) four times slower than what the processor can
 * run.  So tgrel opens it itself: plain first; when OpenBLAS's choice
 * ranks below what cpuid says the processor runs, it is closed, opened
 * again with OPENBLAS_CORETYPE set for that load only, and the new core
 * is kept only if it computes a set of known-answer products exactly.
 * A user's OPENBLAS_CORETYPE, and an OpenBLAS the program already
 * loaded, are taken as they are.  See doc/kernels.md. */
#define _GNU_SOURCE 1   /* RTLD_DEFAULT */
#include "config.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "blas.h"
#include "error.h"

#ifndef TGREL_BLAS_SONAME
#define TGREL_BLAS_SONAME "libopenblas.so.0"
#endif

/* ---- the choice ------------------------------------------------------------ */

/* OpenBLAS's x86 core names (openblas_get_corename) by the widest
 * instructions their kernels use.  Cores of one level are not ranked
 * against each other: a vendor's tuned core (Zen, Excavator) is never
 * replaced by the generic one of its level. */
static const struct { const char *name; int rank; } cores[] = {
    {"Katmai", 1}, {"Coppermine", 1}, {"Northwood", 1}, {"Banias", 1},
    {"Athlon", 1}, {"Opteron", 1},
    {"Prescott", 2}, {"Opteron_SSE3", 2}, {"Atom", 2}, {"Nano", 2},
    {"Barcelona", 2}, {"Bobcat", 2},
    {"Core2", 3}, {"Penryn", 3}, {"Dunnington", 3},
    {"Nehalem", 4},
    {"Sandybridge", 5}, {"Bulldozer", 5}, {"Piledriver", 5}, {"Steamroller", 5},
    {"Haswell", 6}, {"Zen", 6}, {"Excavator", 6},
    {"SkylakeX", 7},
    {"Cooperlake", 8},
    {"SapphireRapids", 9},
};

int tgBl_rank(const char *core)
{
    if (!core)
        return 0;
    for (size_t i = 0; i < sizeof cores / sizeof cores[0]; i++)
        if (strcasecmp(core, cores[i].name) == 0)
            return cores[i].rank;
    return 0;
}

bool tgBl_better(const char *pick, const char *own)
{
    int r = tgBl_rank(own);
    return pick && r > 0 && tgBl_rank(pick) > r;
}

const char *tgBl_pick(const tgBl_cpu *c)
{
    bool ymm = c->avx && c->os_ymm;
    bool avx2 = ymm && c->avx2 && c->fma;
    if (avx2 && c->os_zmm && c->avx512f && c->avx512dq && c->avx512bw && c->avx512vl)
        return c->avx512bf16 ? "Cooperlake" : "SkylakeX";
    if (avx2)
        return "Haswell";
    if (ymm)
        return "Sandybridge";
    if (c->sse42 && c->sse41 && c->ssse3)
        return "Nehalem";
    if (c->ssse3)
        return "Core2";
    return c->sse3 ? "Prescott" : NULL;
}

#if defined(__x86_64__) || defined(__i386__)
static unsigned long long xcr0(void)
{
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((unsigned long long)hi << 32) | lo;
}

bool tgBl_cpu_read(tgBl_cpu *c)
{
    unsigned a, b, cx, d, max = __get_cpuid_max(0, NULL);
    memset(c, 0, sizeof *c);
    if (max < 1 || !__get_cpuid(1, &a, &b, &cx, &d))
        return false;
    c->sse3 = cx & 1, c->ssse3 = cx >> 9 & 1, c->fma = cx >> 12 & 1;
    c->sse41 = cx >> 19 & 1, c->sse42 = cx >> 20 & 1, c->avx = cx >> 28 & 1;
    if (cx >> 27 & 1) {     /* OSXSAVE: XCR0 says which registers are saved */
        unsigned long long x = xcr0();
        c->os_ymm = (x & 0x6) == 0x6;
        c->os_zmm = (x & 0xe6) == 0xe6;
    }
    if (max >= 7 && __get_cpuid_count(7, 0, &a, &b, &cx, &d)) {
        c->avx2 = b >> 5 & 1, c->avx512f = b >> 16 & 1, c->avx512dq = b >> 17 & 1;
        c->avx512bw = b >> 30 & 1, c->avx512vl = b >> 31 & 1;
        unsigned sub = a;
        if (sub >= 1 && __get_cpuid_count(7, 1, &a, &b, &cx, &d))
            c->avx512bf16 = a >> 5 & 1;
    }
    return true;
}
#else
bool tgBl_cpu_read(tgBl_cpu *c)
{
    memset(c, 0, sizeof *c);
    return false;
}
#endif

/* ---- the known-answer check ------------------------------------------------- */

/* Integers in [-4, 4]: every product and sum below is exact in float and
 * double, so BLAS may add in any order and still match bit for bit. */
static void fill(double *v, size_t n, unsigned *s)
{
    for (size_t i = 0; i < n; i++) {
        *s = *s * 1103515245u + 12345u;
        v[i] = (double)((int)(*s >> 16 & 0x7fff) % 9 - 4);
    }
}

static float *to_float(const double *v, size_t n)
{
    float *f = malloc((n ? n : 1) * sizeof *f);
    for (size_t i = 0; f && i < n; i++)
        f[i] = (float)v[i];
    return f;
}

typedef struct kat {
    const tgBl_fns *f;
    unsigned seed;
    char *what;
    size_t len;
} kat;

/* 1: every element of got equals want; 0 naming the call. */
static int agree(kat *K, const double *want, const double *gd, const float *gs, size_t n, const char *call)
{
    for (size_t i = 0; i < n; i++)
        if ((gd ? gd[i] : (double)gs[i]) != want[i]) {
            snprintf(K->what, K->len, "%s", call);
            return 0;
        }
    return 1;
}

/* C = 2 op(A) op(B) - C, row-major, m x n, inner extent k. */
static int kat_gemm(kat *K, bool dbl, int m, int n, int k, bool ta, bool tb)
{
    size_t na = (size_t)m * k, nb = (size_t)k * n, nc = (size_t)m * n;
    double *A = malloc(na * 8), *B = malloc(nb * 8), *C = malloc(nc * 8), *R = malloc(nc * 8);
    float *As = NULL, *Bs = NULL, *Cs = NULL;
    int rc = -1, lda = ta ? m : k, ldb = tb ? k : n;
    if (!A || !B || !C || !R)
        goto out;
    fill(A, na, &K->seed), fill(B, nb, &K->seed), fill(C, nc, &K->seed);
    /* row by row (i, p, j), the order that streams through memory: the
     * sums are exact, so the order of additions does not matter */
    for (size_t i = 0; i < nc; i++)
        R[i] = -C[i];
    for (int i = 0; i < m; i++)
        for (int p = 0; p < k; p++) {
            double a = 2 * (ta ? A[(size_t)p * lda + i] : A[(size_t)i * lda + p]);
            double *r = R + (size_t)i * n;
            if (tb)
                for (int j = 0; j < n; j++)
                    r[j] += a * B[(size_t)j * ldb + p];
            else
                for (int j = 0; j < n; j++)
                    r[j] += a * B[(size_t)p * ldb + j];
        }
    enum CBLAS_TRANSPOSE TA = ta ? CblasTrans : CblasNoTrans, TB = tb ? CblasTrans : CblasNoTrans;
    char call[64];
    snprintf(call, sizeof call, "%cgemm %dx%dx%d%s%s", dbl ? 'd' : 's', m, n, k, ta ? " A^T" : "", tb ? " B^T" : "");
    if (dbl) {
        K->f->dgemm(CblasRowMajor, TA, TB, m, n, k, 2.0, A, lda, B, ldb, -1.0, C, n);
        rc = agree(K, R, C, NULL, nc, call);
    } else if ((As = to_float(A, na)) && (Bs = to_float(B, nb)) && (Cs = to_float(C, nc))) {
        K->f->sgemm(CblasRowMajor, TA, TB, m, n, k, 2.0f, As, lda, Bs, ldb, -1.0f, Cs, n);
        rc = agree(K, R, NULL, Cs, nc, call);
    }
out:
    free(A), free(B), free(C), free(R), free(As), free(Bs), free(Cs);
    return rc;
}

/* y = 2 op(A) x - y, A m x n row-major, x read with increment incx. */
static int kat_gemv(kat *K, bool dbl, int m, int n, bool t, int incx)
{
    int lx = t ? m : n, ly = t ? n : m;
    size_t na = (size_t)m * n, nx = (size_t)lx * incx;
    double *A = malloc(na * 8), *x = malloc(nx * 8), *y = malloc((size_t)ly * 8), *R = malloc((size_t)ly * 8);
    float *As = NULL, *xs = NULL, *ys = NULL;
    int rc = -1;
    if (!A || !x || !y || !R)
        goto out;
    fill(A, na, &K->seed), fill(x, nx, &K->seed), fill(y, (size_t)ly, &K->seed);
    for (int i = 0; i < ly; i++) {
        double s = 0;
        for (int p = 0; p < lx; p++)
            s += (t ? A[(size_t)p * n + i] : A[(size_t)i * n + p]) * x[(size_t)p * incx];
        R[i] = 2 * s - y[i];
    }
    enum CBLAS_TRANSPOSE T = t ? CblasTrans : CblasNoTrans;
    char call[64];
    snprintf(call, sizeof call, "%cgemv %dx%d%s", dbl ? 'd' : 's', m, n, t ? " A^T" : "");
    if (dbl) {
        K->f->dgemv(CblasRowMajor, T, m, n, 2.0, A, n, x, incx, -1.0, y, 1);
        rc = agree(K, R, y, NULL, (size_t)ly, call);
    } else if ((As = to_float(A, na)) && (xs = to_float(x, nx)) && (ys = to_float(y, (size_t)ly))) {
        K->f->sgemv(CblasRowMajor, T, m, n, 2.0f, As, n, xs, incx, -1.0f, ys, 1);
        rc = agree(K, R, NULL, ys, (size_t)ly, call);
    }
out:
    free(A), free(x), free(y), free(R), free(As), free(xs), free(ys);
    return rc;
}

static int kat_dot(kat *K, bool dbl, int n, int incx, int incy)
{
    size_t nx = (size_t)n * incx, ny = (size_t)n * incy;
    double *x = malloc(nx * 8), *y = malloc(ny * 8);
    float *xs = NULL, *ys = NULL;
    int rc = -1;
    if (!x || !y)
        goto out;
    fill(x, nx, &K->seed), fill(y, ny, &K->seed);
    double want = 0, got = 0;
    for (int i = 0; i < n; i++)
        want += x[(size_t)i * incx] * y[(size_t)i * incy];
    if (dbl)
        got = K->f->ddot(n, x, incx, y, incy), rc = 1;
    else if ((xs = to_float(x, nx)) && (ys = to_float(y, ny)))
        got = K->f->sdot(n, xs, incx, ys, incy), rc = 1;
    if (rc == 1 && got != want) {
        snprintf(K->what, K->len, "%cdot %d", dbl ? 'd' : 's', n);
        rc = 0;
    }
out:
    free(x), free(y), free(xs), free(ys);
    return rc;
}

int tgBl_check(const tgBl_fns *f, char *what, size_t len)
{
    kat K = {f, 12345u, what, len};
    /* odd sizes, so that every kernel's edge (remainder) paths run, and
     * one product past the cache blocking of k; both layouts of each
     * operand, as the interpreter passes transposed views */
    static const struct { bool dbl; int m, n, k; bool ta, tb; } g[] = {
        {true, 37, 29, 41, false, false}, {true, 67, 53, 71, true, false},
        {true, 19, 45, 33, false, true},  {true, 9, 7, 5, true, true},
        {true, 131, 127, 263, false, false},
        {false, 37, 29, 41, false, true}, {false, 67, 53, 71, true, false},
    };
    int rc = 1;
    for (size_t i = 0; rc == 1 && i < sizeof g / sizeof g[0]; i++)
        rc = kat_gemm(&K, g[i].dbl, g[i].m, g[i].n, g[i].k, g[i].ta, g[i].tb);
    if (rc == 1)
        rc = kat_gemv(&K, true, 61, 47, false, 1);
    if (rc == 1)
        rc = kat_gemv(&K, true, 61, 47, true, 2);
    if (rc == 1)
        rc = kat_gemv(&K, false, 61, 47, false, 2);
    if (rc == 1)
        rc = kat_gemv(&K, false, 61, 47, true, 1);
    if (rc == 1)
        rc = kat_dot(&K, true, 101, 1, 3);
    if (rc == 1)
        rc = kat_dot(&K, false, 101, 2, 1);
    return rc;
}

/* ---- loading ---------------------------------------------------------------- */

/* The library opened: configure's soname unless a test names another. */
static const char *soname = TGREL_BLAS_SONAME;

typedef struct lib {
    void *h;
    tgBl_fns f;
    char *(*corename)(void);
    char *(*config)(void);
    int (*threads)(void);
} lib;

/* The functions from handle h; false when one is missing. */
static bool resolve(void *h, lib *L)
{
    L->h = h;
    L->f.ddot = (__typeof__(L->f.ddot))dlsym(h, "cblas_ddot");
    L->f.sdot = (__typeof__(L->f.sdot))dlsym(h, "cblas_sdot");
    L->f.dgemv = (__typeof__(L->f.dgemv))dlsym(h, "cblas_dgemv");
    L->f.sgemv = (__typeof__(L->f.sgemv))dlsym(h, "cblas_sgemv");
    L->f.dgemm = (__typeof__(L->f.dgemm))dlsym(h, "cblas_dgemm");
    L->f.sgemm = (__typeof__(L->f.sgemm))dlsym(h, "cblas_sgemm");
    L->f.dger = (__typeof__(L->f.dger))dlsym(h, "cblas_dger");
    L->f.sger = (__typeof__(L->f.sger))dlsym(h, "cblas_sger");
    L->corename = (char *(*)(void))dlsym(h, "openblas_get_corename");
    L->config = (char *(*)(void))dlsym(h, "openblas_get_config");
    L->threads = (int (*)(void))dlsym(h, "openblas_get_num_threads");
    return L->f.ddot && L->f.sdot && L->f.dgemv && L->f.sgemv && L->f.dgemm && L->f.sgemm && L->f.dger && L->f.sger;
}

static void core_of(const lib *L, char *out)
{
    const char *c = L->corename ? L->corename() : NULL;
    snprintf(out, 32, "%s", c ? c : "unknown");
}

/* An OpenBLAS the process already has (linked by the program, or opened
 * by another library): used as it is, since its core is chosen. */
static bool present(lib *L)
{
    void *h = dlopen(soname, RTLD_LAZY | RTLD_NOLOAD);
    if (h && resolve(h, L))
        return true;
    if (h)
        dlclose(h);
    return dlsym(RTLD_DEFAULT, "openblas_get_corename") && resolve(RTLD_DEFAULT, L);
}

static bool open_lib(lib *L, char *msg, size_t len)
{
    void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(msg, len, "kernels: cannot load OpenBLAS (%s; on Debian, install libopenblas0): %s", soname,
                 e ? e : "not found");
        return false;
    }
    if (!resolve(h, L)) {
        snprintf(msg, len, "kernels: %s lacks a cblas function", soname);
        dlclose(h);
        return false;
    }
    return true;
}

/* Closes L and tells whether the library really left the process (no
 * other reference to it): only then does a new load choose again. */
static bool close_lib(lib *L)
{
    dlclose(L->h);
    void *h = dlopen(soname, RTLD_LAZY | RTLD_NOLOAD);
    if (!h)
        return true;
    resolve(h, L);
    return false;
}

/* Opens the library with OPENBLAS_CORETYPE=core for its constructor
 * only; the variable is then restored as it was. */
static bool open_forced(lib *L, const char *core, char *msg, size_t len)
{
    const char *prev = getenv("OPENBLAS_CORETYPE");
    char *saved = prev ? strdup(prev) : NULL;
    if (prev && !saved) {
        snprintf(msg, len, "out of memory");
        return false;
    }
    setenv("OPENBLAS_CORETYPE", core, 1);
    bool ok = open_lib(L, msg, len);
    if (saved)
        setenv("OPENBLAS_CORETYPE", saved, 1);
    else
        unsetenv("OPENBLAS_CORETYPE");
    free(saved);
    return ok;
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(const tgBl_fns *) ready;
static lib cur;
static tgBl_status status;
static char failure[256];

/* OpenBLAS's own choice was loaded plain into cur: replace it with the
 * core picked from cpuid when that ranks higher and passes the check. */
static bool choose(const tgBl_opts *o, char *msg, size_t len)
{
    tgBl_cpu c;
    const char *pick = tgBl_cpu_read(&c) ? tgBl_pick(&c) : NULL;
    const char *own = o->own_as ? o->own_as : status.own;
    snprintf(status.picked, sizeof status.picked, "%s", pick ? pick : "");
    if (!tgBl_better(pick, own))
        return true;
    if (!close_lib(&cur))
        return true;     /* held elsewhere: its core stays */
    lib forced;
    if (!open_forced(&forced, pick, msg, len))
        return open_lib(&cur, msg, len);
    if (o->tamper)
        o->tamper(&forced.f);
    char what[80] = "", got[32];
    core_of(&forced, got);
    int ok = tgBl_check(&forced.f, what, sizeof what);
    if (ok == 1 && tgBl_rank(got) >= tgBl_rank(status.own)) {
        cur = forced;
        status.origin = TGBL_CHOSEN;
        return true;
    }
    if (ok == 0)
        fprintf(stderr, "tgrel: OpenBLAS core %s gave a wrong result in a known-answer check (%s); "
                        "using OpenBLAS's own choice (%s)\n", got, what, status.own);
    status.origin = ok == 0 ? TGBL_FALLBACK : TGBL_OWN;
    if (!close_lib(&forced)) {
        snprintf(msg, len, "kernels: OpenBLAS core %s failed its check and stays loaded", got);
        return false;
    }
    return open_lib(&cur, msg, len);
}

static void say(const tgBl_opts *o)
{
    static const char *const why[] = {
        "OpenBLAS's own choice", "chosen by tgrel from cpuid", "OpenBLAS's own choice after tgrel's failed its check",
        "set by OPENBLAS_CORETYPE", "OpenBLAS's own choice, TGREL_BLAS_CORE=off", "already loaded in the process"};
    if (!o->verbose)
        return;
    const char *cfg = cur.config ? cur.config() : NULL;
    fprintf(stderr, "tgrel: BLAS core %s (%s", status.core, why[status.origin]);
    if (status.origin == TGBL_CHOSEN || status.origin == TGBL_FALLBACK)
        fprintf(stderr, "; OpenBLAS's own: %s", status.own);
    if (status.origin == TGBL_OWN && status.picked[0])
        fprintf(stderr, "; tgrel's pick %s ranks no higher", status.picked);
    fprintf(stderr, ")%s%s\n", cfg ? ": " : "", cfg ? cfg : "");
}

static bool load(const tgBl_opts *o, char *msg, size_t len)
{
    memset(&status, 0, sizeof status);
    if (present(&cur)) {
        status.origin = TGBL_PRESENT;
    } else {
        if (!open_lib(&cur, msg, len))
            return false;
        status.origin = o->user_core ? TGBL_USER : o->off ? TGBL_OFF : TGBL_OWN;
        if (status.origin == TGBL_OWN) {
            core_of(&cur, status.own);
            if (!choose(o, msg, len))
                return false;
        }
    }
    core_of(&cur, status.core);
    say(o);
    return true;
}

const tgBl_fns *tgBl_init(const tgBl_opts *o, tg_error *err)
{
    pthread_mutex_lock(&mu);
    const tgBl_fns *f = atomic_load(&ready);
    if (!f && !failure[0]) {
        if (o->soname)
            soname = o->soname;
        if (load(o, failure, sizeof failure))
            atomic_store(&ready, f = &cur.f);
        else if (!failure[0])
            snprintf(failure, sizeof failure, "kernels: cannot load OpenBLAS");
    }
    if (!f)
        tgE_set(err, TG_ERR_IO, NULL, 0, 0, "%s", failure);
    pthread_mutex_unlock(&mu);
    return f;
}

const tgBl_fns *tgBl_get(tg_error *err)
{
    const tgBl_fns *f = atomic_load_explicit(&ready, memory_order_acquire);
    if (f)
        return f;
    const char *u = getenv("OPENBLAS_CORETYPE"), *m = getenv("TGREL_BLAS_CORE"), *v = getenv("TGREL_BLAS_VERBOSE");
    tgBl_opts o = {u && *u ? u : NULL, m && strcmp(m, "off") == 0, v && *v && strcmp(v, "0") != 0, NULL, NULL, NULL};
    return tgBl_init(&o, err);
}

bool tgBl_status_get(tgBl_status *st)
{
    pthread_mutex_lock(&mu);
    bool ok = atomic_load(&ready) != NULL;
    if (ok)
        *st = status;
    pthread_mutex_unlock(&mu);
    return ok;
}

int tgBl_threads(void)
{
    /* cur is written before ready is set, and never again after */
    if (!atomic_load_explicit(&ready, memory_order_acquire) || !cur.threads)
        return 1;
    int n = cur.threads();
    return n > 1 ? n : 1;
}
