/* rowpar.c - the row blocks' products and their team of threads (module
 * prefix tgRp_; see rowpar.h).  The products are written here, not
 * called in BLAS: their summation order is fixed (so the bits of a
 * result are the same whichever thread computes a block, and however
 * many there are), and OpenBLAS, called from several threads at once,
 * would start its own threads for each block.  On x86-64 with GCC each
 * product is also compiled for AVX2, chosen at load time (multiplies and
 * adds kept apart, so that both versions give the same bits). */
#define _GNU_SOURCE 1   /* RTLD_DEFAULT */
#include "config.h"

#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rowpar.h"

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__ELF__)
/* no contraction into fma: both versions give the same bits */
#define TGRP_CLONES __attribute__((target_clones("avx2,fma", "default"), optimize("fp-contract=off")))
#else
#define TGRP_CLONES
#endif

/* 32-byte vectors (4 doubles, 8 floats), loaded and stored unaligned */
typedef double vd __attribute__((vector_size(32)));
typedef double vdu __attribute__((vector_size(32), aligned(8)));
typedef float vs __attribute__((vector_size(32)));
typedef float vsu __attribute__((vector_size(32), aligned(4)));

/* rows_dot for element type T, vector VT (unaligned VU) of L lanes:
 * each row summed in two vectors (elements j of 2L apart, lanes
 * apart), added, then the lanes in a halving tree, then the elements
 * past the last whole 2L one by one; four rows at a time (so that w's
 * loads serve four), the rest one at a time in the same order. */
#define ROW_END(T, VT, L, v, a, acc)                                                               \
    do {                                                                                           \
        VT v_ = (v);                                                                               \
        for (int h = L / 2; h >= 1; h /= 2)                                                        \
            for (int k = 0; k < h; k++)                                                            \
                v_[k] = v_[k] + v_[k + h];                                                         \
        acc = v_[0];                                                                               \
        for (int64_t j = f2; j < f; j++)                                                           \
            acc += (a)[j] * w[j];                                                                  \
    } while (0)
#define ROWS_DOT(NAME, T, VT, VU, L)                                                               \
    TGRP_CLONES void NAME(int64_t b, int64_t f, const T *A, int64_t lda, const T *w, T *y)         \
    {                                                                                              \
        int64_t f2 = f - f % (2 * L), i = 0;                                                       \
        for (; i + 4 <= b; i += 4) {                                                               \
            const T *a0 = A + i * lda, *a1 = a0 + lda, *a2 = a1 + lda, *a3 = a2 + lda;             \
            VT s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0}, u0 = {0}, u1 = {0}, u2 = {0}, u3 = {0};     \
            for (int64_t j = 0; j < f2; j += 2 * L) {                                              \
                VT w0 = *(const VU *)(w + j), w1 = *(const VU *)(w + j + L);                       \
                s0 += *(const VU *)(a0 + j) * w0, u0 += *(const VU *)(a0 + j + L) * w1;            \
                s1 += *(const VU *)(a1 + j) * w0, u1 += *(const VU *)(a1 + j + L) * w1;            \
                s2 += *(const VU *)(a2 + j) * w0, u2 += *(const VU *)(a2 + j + L) * w1;            \
                s3 += *(const VU *)(a3 + j) * w0, u3 += *(const VU *)(a3 + j + L) * w1;            \
            }                                                                                      \
            ROW_END(T, VT, L, s0 + u0, a0, y[i]);                                                  \
            ROW_END(T, VT, L, s1 + u1, a1, y[i + 1]);                                              \
            ROW_END(T, VT, L, s2 + u2, a2, y[i + 2]);                                              \
            ROW_END(T, VT, L, s3 + u3, a3, y[i + 3]);                                              \
        }                                                                                          \
        for (; i < b; i++) {                                                                       \
            const T *a0 = A + i * lda;                                                             \
            VT s0 = {0}, u0 = {0};                                                                 \
            for (int64_t j = 0; j < f2; j += 2 * L) {                                              \
                s0 += *(const VU *)(a0 + j) * *(const VU *)(w + j);                                \
                u0 += *(const VU *)(a0 + j + L) * *(const VU *)(w + j + L);                        \
            }                                                                                      \
            ROW_END(T, VT, L, s0 + u0, a0, y[i]);                                                  \
        }                                                                                          \
    }

/* cols_dot: four rows at a time added into t, row after row for each
 * element (L elements at a time, the rest one by one): each element of t
 * gets its rows' products in row order, so a block given in pieces gives
 * the same bits as given whole. */
#define COLS_DOT(NAME, T, VT, VU, L)                                                               \
    TGRP_CLONES void NAME(int64_t b, int64_t f, const T *A, int64_t lda, const T *g, T *t)        \
    {                                                                                              \
        int64_t fl = f - f % L, i = 0;                                                             \
        for (; i + 4 <= b; i += 4) {                                                               \
            const T *a0 = A + i * lda, *a1 = a0 + lda, *a2 = a1 + lda, *a3 = a2 + lda;             \
            T g0 = g[i], g1 = g[i + 1], g2 = g[i + 2], g3 = g[i + 3];                              \
            VT G0, G1, G2, G3;                                                                     \
            for (int k = 0; k < L; k++)                                                            \
                G0[k] = g0, G1[k] = g1, G2[k] = g2, G3[k] = g3;                                    \
            for (int64_t j = 0; j < fl; j += L) {                                                  \
                VT v = *(VU *)(t + j);                                                             \
                v += G0 * *(const VU *)(a0 + j);                                                   \
                v += G1 * *(const VU *)(a1 + j);                                                   \
                v += G2 * *(const VU *)(a2 + j);                                                   \
                v += G3 * *(const VU *)(a3 + j);                                                   \
                *(VU *)(t + j) = v;                                                                \
            }                                                                                      \
            for (int64_t j = fl; j < f; j++)                                                       \
                t[j] = (((t[j] + g0 * a0[j]) + g1 * a1[j]) + g2 * a2[j]) + g3 * a3[j];             \
        }                                                                                          \
        for (; i < b; i++) {                                                                       \
            const T *a0 = A + i * lda;                                                             \
            T g0 = g[i];                                                                           \
            VT G0;                                                                                 \
            for (int k = 0; k < L; k++)                                                            \
                G0[k] = g0;                                                                        \
            for (int64_t j = 0; j < fl; j += L)                                                    \
                *(VU *)(t + j) = *(VU *)(t + j) + G0 * *(const VU *)(a0 + j);                      \
            for (int64_t j = fl; j < f; j++)                                                       \
                t[j] += g0 * a0[j];                                                                \
        }                                                                                          \
    }

ROWS_DOT(tgRp_rows_dot_d, double, vd, vdu, 4)
ROWS_DOT(tgRp_rows_dot_s, float, vs, vsu, 8)
COLS_DOT(tgRp_cols_dot_d, double, vd, vdu, 4)
COLS_DOT(tgRp_cols_dot_s, float, vs, vsu, 8)

void tgRp_fetch(const void *p, int64_t rows, int64_t stride, int64_t bytes)
{
    for (int64_t r = 0; r < rows; r++)
        for (int64_t o = 0; o < bytes; o += 64)
            __builtin_prefetch((const char *)p + r * stride + o, 0, 3);
}

static atomic_long windows;

void tgRp_count_window(void)
{
    atomic_fetch_add_explicit(&windows, 1, memory_order_relaxed);
}

long tgRp_windows(void)
{
    return atomic_load_explicit(&windows, memory_order_relaxed);
}

/* ---- threads ---------------------------------------------------------------- */

int tgRp_threads(void)
{
    int n = 0;
    /* the compiled loops' libgomp, opened in their own scope */
    void *h = dlopen("libgomp.so.1", RTLD_NOW | RTLD_NOLOAD);
    void *f = h ? dlsym(h, "omp_get_max_threads") : dlsym(RTLD_DEFAULT, "omp_get_max_threads");
    if (h)
        dlclose(h);     /* only the reference NOLOAD took */
    if (f) {
        int (*get)(void);
        memcpy(&get, &f, sizeof get);
        n = get();
    } else {
        const char *e = getenv("OMP_NUM_THREADS");
        n = e && *e ? atoi(e) : (int)sysconf(_SC_NPROCESSORS_ONLN);
    }
    return n < 1 ? 1 : n > 64 ? 64 : n;
}

/* The OpenMP runtime's parallel region and thread number, when the
 * compiled loops have loaded it (0 otherwise). */
typedef void (*gomp_parallel_fn)(void (*)(void *), void *, unsigned, unsigned);
static int gomp_fns(gomp_parallel_fn *par, int (**num)(void))
{
    void *h = dlopen("libgomp.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!h)
        return 0;
    void *p = dlsym(h, "GOMP_parallel"), *n = dlsym(h, "omp_get_thread_num");
    dlclose(h);     /* only the reference NOLOAD took: the loops hold theirs */
    if (!p || !n)
        return 0;
    memcpy(par, &p, sizeof *par);
    memcpy(num, &n, sizeof *num);
    return 1;
}

struct tgRp_team {
    int nt;
    tgRp_fn fn;
    void *ud;
    gomp_parallel_fn gpar;  /* phases on OpenMP's threads, when set */
    int (*gnum)(void);
    atomic_uint gen;        /* bumped to start a phase */
    atomic_int left;        /* members still running the phase */
    atomic_int stop;
    pthread_t th[64];
    struct member { tgRp_team *t; int tid; } m[64];
};

static void relax(unsigned *spins)
{
    if (++*spins < 4096) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    } else {
        sched_yield();      /* the machine may have fewer free cores than threads */
    }
}

static void *member(void *arg)
{
    struct member *m = arg;
    tgRp_team *t = m->t;
    unsigned seen = 0;
    for (;;) {
        unsigned spins = 0, g;
        while ((g = atomic_load_explicit(&t->gen, memory_order_acquire)) == seen)
            relax(&spins);
        seen = g;
        if (atomic_load_explicit(&t->stop, memory_order_relaxed))
            return NULL;
        t->fn(t->ud, m->tid);
        atomic_fetch_sub_explicit(&t->left, 1, memory_order_release);
    }
}

tgRp_team *tgRp_start(int nt, tgRp_fn fn, void *ud)
{
    if (nt < 2)
        return NULL;
    tgRp_team *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->fn = fn, t->ud = ud, t->nt = 1;
    /* With the compiled loops' OpenMP runtime loaded, its threads run the
     * phases: threads of our own beside them would share the cores with
     * its workers, which spin a while after each parallel loop. */
    if (gomp_fns(&t->gpar, &t->gnum)) {
        t->nt = nt > 64 ? 64 : nt;
        return t;
    }
    for (int i = 1; i < nt && i < 64; i++) {
        t->m[i] = (struct member){t, i};
        if (pthread_create(&t->th[i], NULL, member, &t->m[i]) != 0)
            break;
        t->nt++;
    }
    if (t->nt < 2) {
        free(t);
        return NULL;
    }
    return t;
}

int tgRp_size(const tgRp_team *t)
{
    return t ? t->nt : 1;
}

static void gomp_member(void *arg)
{
    tgRp_team *t = arg;
    t->fn(t->ud, t->gnum());
}

void tgRp_phase(tgRp_team *t)
{
    if (t->gpar) {
        t->gpar(gomp_member, t, (unsigned)t->nt, 0);
        return;
    }
    atomic_store_explicit(&t->left, t->nt - 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&t->gen, 1, memory_order_release);
    t->fn(t->ud, 0);
    unsigned spins = 0;
    while (atomic_load_explicit(&t->left, memory_order_acquire) > 0)
        relax(&spins);
}

void tgRp_stop(tgRp_team *t)
{
    if (!t)
        return;
    if (t->gpar) {
        free(t);
        return;
    }
    atomic_store_explicit(&t->stop, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&t->gen, 1, memory_order_release);
    for (int i = 1; i < t->nt; i++)
        pthread_join(t->th[i], NULL);
    free(t);
}
