/* loopdrv.c - the driver of compiled loops (module prefix tgLd_): the N-d
 * walk, the chunks, the gathering of strided operands and the folding of
 * fused reductions, shared by every generated kernel (see loopdrv.h). */
#include "config.h"

#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "codegen.h"
#include "loopdrv.h"

/* Copy n elements of size es from strided src (stride ss) to dst (stride ds). */
static void copy_elems(char *dst, int64_t ds, const char *src, int64_t ss, int64_t n, int es)
{
    if (es == 8)
        for (int64_t i = 0; i < n; i++)
            memcpy(dst + i * ds, src + i * ss, 8);
    else if (es == 4)
        for (int64_t i = 0; i < n; i++)
            memcpy(dst + i * ds, src + i * ss, 4);
    else
        for (int64_t i = 0; i < n; i++)
            memcpy(dst + i * ds, src + i * ss, (size_t)es);
}

/* Fold n values v[] of reduction kind r into the accumulator at acc with
 * stride s (0: one accumulator for all), in element order (contiguous
 * accumulators, a kept innermost axis of column sums, take one value each
 * in a loop the compiler vectorizes); the
 * interpreter's fold_block: a NaN, once in a float max or min, stays. */
#define FOLD(T, OP)                                                         \
    do {                                                                    \
        const T *v = (const T *)vals;                                       \
        if (s == 0) {                                                       \
            T a;                                                            \
            memcpy(&a, acc, sizeof a);                                      \
            for (int64_t i = 0; i < n; i++) { T x = v[i]; a = OP; }         \
            memcpy(acc, &a, sizeof a);                                      \
        } else if (s == (int64_t)sizeof(T)) { /* column sums: vectorized */ \
            T *ac = (T *)(void *)acc;                                       \
            for (int64_t i = 0; i < n; i++) { T a = ac[i], x = v[i]; ac[i] = OP; } \
        } else {                                                            \
            for (int64_t i = 0; i < n; i++) {                               \
                T a, x = v[i];                                              \
                memcpy(&a, acc + i * s, sizeof a);                          \
                a = OP;                                                     \
                memcpy(acc + i * s, &a, sizeof a);                          \
            }                                                               \
        }                                                                   \
    } while (0)

#define IADD(a, b) ((int64_t)((uint64_t)(a) + (uint64_t)(b)))
#define IMUL(a, b) ((int64_t)((uint64_t)(a) * (uint64_t)(b)))

static void fold(int kind, char *acc, int64_t s, const void *vals, int64_t n)
{
    switch (kind) {
    case TGLD_SUM: FOLD(double, a + x); break;
    case TGLD_PROD: FOLD(double, a * x); break;
    case TGLD_MAX: FOLD(double, a != a ? a : x != x || x > a ? x : a); break;
    case TGLD_MIN: FOLD(double, a != a ? a : x != x || x < a ? x : a); break;
    case TGLD_INT | TGLD_SUM: FOLD(int64_t, IADD(a, x)); break;
    case TGLD_INT | TGLD_PROD: FOLD(int64_t, IMUL(a, x)); break;
    case TGLD_INT | TGLD_MAX: FOLD(int64_t, x > a ? x : a); break;
    default: FOLD(int64_t, x < a ? x : a); break;
    }
}

/* Whether operand q of inner stride s goes to the kernel in place: a
 * constant (no operand), an input the kernel reads at element 0, or
 * contiguous. */
static int in_place(const tgk_desc *d, int q, int64_t s)
{
    return d->size[q] == 0 || (q < 64 && (d->bm >> q & 1)) || s == d->size[q];
}

/* How the runs of a range go to the kernel, the same for every run of
 * it (the inner strides are): slot[q] the buffer of operand q when it
 * is not passed in place, else -1; nb the buffers, the reductions'
 * first; p the kernel's pointers, buf the buffers.  Set once a range,
 * not once a run: a loop over many short rows (256 rows of 10, a
 * softmax's) is mostly runs. */
typedef struct runs {
    int *slot, nb;
    char **p;
    double (*buf)[TGLD_CHUNK];  /* double: aligned for every element type */
} runs;

static int runs_plan(const tgk_desc *d, const int64_t *s, int *slot)
{
    int nb = d->nred;
    for (int q = 0; q < d->nin + d->nout; q++)
        slot[q] = in_place(d, q, s[q]) ? -1 : nb++ - d->nred;
    return nb;
}

/* One run [j, i1) of the innermost axis, operands at b with inner strides
 * s: in chunks (of TGLD_CHUNK when something is gathered or folded, else
 * the whole run), each operand passed in place when it is contiguous (or
 * broadcast as the kernel expects), else through a buffer. */
static void run_row(const tgk_desc *d, tgk_kern k, const runs *R, char *const *b, const int64_t *s, int64_t j,
                    int64_t i1)
{
    int nio = d->nin + d->nout;
    char **p = R->p;
    if (i1 - j == 1 || R->nb == 0) {   /* a run of one element has no stride to mind */
        if (R->nb == 0 || d->nred == 0) {   /* all in place, nothing to fold: one call */
            for (int q = 0; q < nio; q++)
                p[q] = d->size[q] ? b[q] + j * s[q] : NULL;
            k(i1 - j, p);
            return;
        }
    }
    int one = i1 - j == 1;
    const int64_t chunk = TGLD_CHUNK;
    for (int64_t c0 = j; c0 < i1; c0 += chunk) {
        int64_t n = i1 - c0 < chunk ? i1 - c0 : chunk;
        for (int q = 0; q < nio; q++) {
            int es = d->size[q];
            char *at = b[q] + c0 * s[q], *t = one || R->slot[q] < 0 ? NULL : (char *)R->buf[d->nred + R->slot[q]];
            p[q] = !t ? (es ? at : NULL) : t;
            if (t && q < d->nin)
                copy_elems(t, es, at, s[q], n, es);
        }
        for (int r = 0; r < d->nred; r++)
            p[nio + r] = (char *)R->buf[r];
        k(n, p);
        for (int q = d->nin; q < nio; q++)
            if (!one && R->slot[q] >= 0)
                copy_elems(b[q] + c0 * s[q], s[q], p[q], d->size[q], n, d->size[q]);
        for (int r = 0; r < d->nred; r++) {
            char *acc = b[nio + r] + c0 * s[nio + r];
            const double *v = R->buf[r];
            if (d->red[r] == TGLD_SUM && s[nio + r] == 0) {    /* a row's sum: the common fold */
                double a;
                memcpy(&a, acc, sizeof a);
                for (int64_t i = 0; i < n; i++)
                    a = a + v[i];
                memcpy(acc, &a, sizeof a);
            } else if (d->red[r] == TGLD_SUM && s[nio + r] == (int64_t)sizeof(double)) {
                /* column sums, four at a time: loaded before stored, so
                 * that they go to vector adds whatever the aliasing */
                double *ac = (double *)(void *)acc;
                int64_t i = 0;
                for (; i + 4 <= n; i += 4) {
                    double a0 = ac[i] + v[i], a1 = ac[i + 1] + v[i + 1], a2 = ac[i + 2] + v[i + 2], a3 = ac[i + 3] + v[i + 3];
                    ac[i] = a0, ac[i + 1] = a1, ac[i + 2] = a2, ac[i + 3] = a3;
                }
                for (; i < n; i++)
                    ac[i] = ac[i] + v[i];
            } else {
                fold(d->red[r], acc, s[nio + r], R->buf[r], n);
            }
        }
    }
}

void tgLd_range(const tgk_desc *d, tgk_kern k, const int64_t *shape, char *const *base, const int64_t *st,
                int64_t lo, int64_t hi)
{
    int nd = d->nd, nio = d->nin + d->nout, nall = nio + d->nred, sd = nd ? nd : 1;
    char *b[nall > 0 ? nall : 1], *p[nall > 0 ? nall : 1];
    int64_t s[nall > 0 ? nall : 1], idx[sd];
    int slot[nio > 0 ? nio : 1];
    for (int q = 0; q < nall; q++)
        s[q] = nd ? st[q * sd + sd - 1] : 0;
    int nb = runs_plan(d, s, slot);
    double buf[nb ? nb : 1][TGLD_CHUNK];
    runs R = {slot, nb, p, buf};
    if (nd <= 1) {  /* one row: the common case, and the one of the shortest calls */
        if (hi > lo)
            run_row(d, k, &R, base, s, lo, hi);
        return;
    }
    int64_t inner = shape[nd - 1], rem = inner ? lo / inner : 0, j = inner ? lo % inner : 0;
    int64_t left = hi - lo;
    for (int a = nd - 2; a >= 0; a--) {
        idx[a] = rem % shape[a];
        rem /= shape[a];
    }
    for (int q = 0; q < nall; q++) {
        b[q] = base[q];
        for (int a = 0; a + 1 < nd; a++)
            b[q] += idx[a] * st[q * sd + a];
    }
    while (left > 0) {
        int64_t i1 = inner - j < left ? inner : j + left;
        run_row(d, k, &R, b, s, j, i1);
        left -= i1 - j;
        j = 0;
        for (int a = nd - 2; a >= 0; a--) {   /* the next outer index */
            for (int q = 0; q < nall; q++)
                b[q] += st[q * sd + a];
            if (++idx[a] < shape[a])
                break;
            for (int q = 0; q < nall; q++)
                b[q] -= st[q * sd + a] * shape[a];
            idx[a] = 0;
        }
    }
}

/* ---- threads ------------------------------------------------------------- */

/* The OpenMP runtime the compiled code links (cache.c loads it first and
 * keeps it): its entry for a parallel region, which is what the compiler
 * makes of `#pragma omp parallel`, so the loops run on the same threads
 * (OMP_NUM_THREADS, nesting) as when the region was generated code.
 * NULL when there is none: then every loop runs on the calling thread. */
static struct {
    void (*parallel)(void (*fn)(void *), void *data, unsigned nthreads, unsigned flags);
    int (*thread_num)(void), (*num_threads)(void);
} omp;
static pthread_once_t omp_once = PTHREAD_ONCE_INIT;

static void find_omp(void)
{
    void *h = dlopen("libgomp.so.1", RTLD_NOW | RTLD_NOLOAD), *f[3];
    static const char *const names[3] = {"GOMP_parallel", "omp_get_thread_num", "omp_get_num_threads"};
    for (int i = 0; i < 3; i++)
        f[i] = h ? dlsym(h, names[i]) : dlsym(RTLD_DEFAULT, names[i]);
    if (h)
        dlclose(h);     /* only the reference NOLOAD took */
    if (f[0] && f[1] && f[2]) {     /* object to function pointers */
        memcpy(&omp.parallel, &f[0], sizeof f[0]);
        memcpy(&omp.thread_num, &f[1], sizeof f[1]);
        memcpy(&omp.num_threads, &f[2], sizeof f[2]);
    }
}

/* The part of [0, n) of thread t of T (OpenMP's static split). */
static void part_of(int64_t n, int64_t t, int64_t T, int64_t *lo, int64_t *hi)
{
    *lo = n / T * t + (t < n % T ? t : n % T);
    *hi = n / T * (t + 1) + (t + 1 < n % T ? t + 1 : n % T);
}

enum { NR = 256 };      /* the blocks of a reduction run at once */

typedef struct job {
    const tgk_desc *d;
    tgk_kern k;
    const int64_t *shape, *st;
    char *const *base;
    int64_t total, nb, r0, r1;
    uint64_t *part;     /* blocked: [reduction][block - r0], each 8 bytes */
} job;

/* Block c of a blocked loop, its reductions into its own partials. */
static void run_block(const job *J, int64_t c)
{
    const tgk_desc *d = J->d;
    int nio = d->nin + d->nout;
    char *lb[nio + d->nred];
    for (int q = 0; q < nio; q++)
        lb[q] = J->base[q];
    for (int r = 0; r < d->nred; r++) {
        uint64_t *p = &J->part[(size_t)r * NR + (size_t)(c - J->r0)];
        int kind = d->red[r];
        if (kind & TGLD_INT) {
            int64_t id = (kind & 3) == TGLD_PROD ? 1 : (kind & 3) == TGLD_MAX ? INT64_MIN
                       : (kind & 3) == TGLD_MIN ? INT64_MAX : 0;
            memcpy(p, &id, 8);
        } else {
            double id = kind == TGLD_PROD ? 1 : kind == TGLD_MAX ? -INFINITY : kind == TGLD_MIN ? INFINITY : 0;
            memcpy(p, &id, 8);
        }
        lb[nio + r] = (char *)p;
    }
    int64_t lo = c * TGJ_RED_BLOCK, hi = c + 1 < J->nb ? (c + 1) * TGJ_RED_BLOCK : J->total;
    tgLd_range(d, J->k, J->shape, lb, J->st, lo, hi);
}

static void par_blocks(void *data)
{
    const job *J = data;
    int64_t lo, hi;
    part_of(J->r1 - J->r0, omp.thread_num(), omp.num_threads(), &lo, &hi);
    for (int64_t c = J->r0 + lo; c < J->r0 + hi; c++)
        run_block(J, c);
}

static void par_range(void *data)
{
    const job *J = data;
    int64_t lo, hi;
    part_of(J->total, omp.thread_num(), omp.num_threads(), &lo, &hi);
    tgLd_range(J->d, J->k, J->shape, J->base, J->st, lo, hi);
}

void tgLd_loop(const tgk_desc *d, tgk_kern k, const int64_t *shape, char *const *base, const int64_t *st)
{
    int64_t total = 1;
    for (int a = 0; a < d->nd; a++)
        total *= shape[a];
    if (total == 0)
        return;
    int par = (d->flags & TGLD_PAR) && omp.parallel;
    job J = {d, k, shape, st, base, total, 0, 0, 0, NULL};
    if (!(d->flags & TGLD_BLOCKED) || total <= TGJ_RED_BLOCK) {
        if (par && d->nred == 0 && total >= TGLD_PAR_MIN)
            omp.parallel(par_range, &J, 0, 0);
        else    /* other fused reductions fold in element order: one thread */
            tgLd_range(d, k, shape, base, st, 0, total);
        return;
    }
    int nio = d->nin + d->nout;
    uint64_t part[d->nred > 0 ? d->nred : 1][NR];
    J.part = &part[0][0];
    J.nb = (total + TGJ_RED_BLOCK - 1) / TGJ_RED_BLOCK;
    for (J.r0 = 0; J.r0 < J.nb; J.r0 += NR) {
        J.r1 = J.nb - J.r0 < NR ? J.nb : J.r0 + NR;
        if (par)
            omp.parallel(par_blocks, &J, 0, 0);
        else
            for (int64_t c = J.r0; c < J.r1; c++)
                run_block(&J, c);
        for (int64_t c = 0; c < J.r1 - J.r0; c++)   /* the blocks' results in block order */
            for (int r = 0; r < d->nred; r++)
                fold(d->red[r], base[nio + r], 0, &part[r][c], 1);
    }
}

int tgLd_bind(void *so)
{
    void *p = dlsym(so, "tgk_drive");
    if (!p)
        return -1;
    pthread_once(&omp_once, find_omp);
    tgk_drive_fn f = tgLd_loop;
    /* the same value from every loader: a store that races another one
     * writes what is there already */
    __atomic_store((tgk_drive_fn *)p, &f, __ATOMIC_RELEASE);
    return 0;
}
