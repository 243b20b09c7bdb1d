/* loopdrv.c - the driver of compiled loops (module prefix tgLd_): the N-d
 * walk, the chunks, short rows several to a kernel call, the gathering
 * of strided operands and the folding of fused reductions, shared by
 * every generated kernel (see loopdrv.h). */
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

/* Fold the n values v of a run into the accumulators of reduction kind
 * kind at acc, stride s: a row's sum (s 0) and column sums (s 8) by
 * loops of their own, any other by fold(); in element order. */
static inline void fold_run(int kind, char *acc, int64_t s, const double *v, int64_t n)
{
    if (kind == TGLD_SUM && s == 0) {   /* a row's sum: the common fold */
        double a;
        memcpy(&a, acc, sizeof a);
        for (int64_t i = 0; i < n; i++)
            a = a + v[i];
        memcpy(acc, &a, sizeof a);
    } else if (kind == TGLD_SUM && s == (int64_t)sizeof(double)) {
        /* column sums, four at a time: loaded before stored, so that
         * they go to vector adds whatever the aliasing */
        double *ac = (double *)(void *)acc;
        int64_t i = 0;
        for (; i + 4 <= n; i += 4) {
            double a0 = ac[i] + v[i], a1 = ac[i + 1] + v[i + 1], a2 = ac[i + 2] + v[i + 2], a3 = ac[i + 3] + v[i + 3];
            ac[i] = a0, ac[i + 1] = a1, ac[i + 2] = a2, ac[i + 3] = a3;
        }
        for (; i < n; i++)
            ac[i] = ac[i] + v[i];
    } else {
        fold(kind, acc, s, v, n);
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
        for (int r = 0; r < d->nred; r++)
            fold_run(d->red[r], b[nio + r] + c0 * s[nio + r], s[nio + r], R->buf[r], n);
    }
}

/* The N-d walk: the next outer index after idx (axes 0 .. nd - 2), the
 * operands' row pointers b moved along. */
static void next_row(int nd, int nall, const int64_t *shape, const int64_t *st, int64_t *idx, char **b)
{
    for (int a = nd - 2; a >= 0; a--) {
        for (int q = 0; q < nall; q++)
            b[q] += st[q * nd + a];
        if (++idx[a] < shape[a])
            break;
        for (int q = 0; q < nall; q++)
            b[q] -= st[q * nd + a] * shape[a];
        idx[a] = 0;
    }
}

/* Short rows run several to a kernel call (tgLd_range): the whole rows
 * of a group, up to TGLD_CHUNK elements, go to kernel kc as one run.
 * flat[q]: operand q steps from row to row as one contiguous run (its
 * outer strides those of a C-ordered array), so it is passed in place;
 * any other input (a row's broadcast scalar, a strided or transposed
 * one) is gathered into a buffer row by row (slot[q] >= 0), any other
 * output scattered from one, and each reduction's values folded row by
 * row into the row's accumulators, in element order as one row a run
 * does: the same bits. */
typedef struct rowgrp {
    tgk_kern kc;
    int64_t inner, per;     /* elements a row, rows a group */
    int *slot, nb;
    int *gin, ngin, *gout, ngout;   /* the gathered inputs, the scattered outputs */
    char **p;
    double (*buf)[TGLD_CHUNK];
} rowgrp;

/* Whether operand q of a loop of nd axes (sizes shape, strides st) is
 * C-contiguous over its axes of more than one element. */
static int flat_op(const tgk_desc *d, int q, int nd, const int64_t *shape, const int64_t *st)
{
    int64_t want = d->size[q];
    if (want == 0)
        return 1;
    for (int a = nd - 1; a >= 0; a--) {
        if (shape[a] == 1)
            continue;
        if (st[q * nd + a] != want)
            return 0;
        want *= shape[a];
    }
    return 1;
}

/* Whether a range of short rows goes by groups, and their plan (slots
 * into G->slot, which has nio places): only when kc can read every
 * operand as contiguous (no input read at element 0, or a kernel that
 * reads them whole) and a group holds at least two rows. */
static int groups_plan(const tgk_desc *d, tgk_kern k, int nd, const int64_t *shape, const int64_t *st, rowgrp *G)
{
    int64_t inner = shape[nd - 1];
    if (inner <= 0 || inner > TGLD_CHUNK / 2 || (d->bm != 0 && !d->kc))
        return 0;
    G->kc = d->kc ? d->kc : k;
    G->inner = inner, G->per = TGLD_CHUNK / inner;
    G->nb = d->nred, G->ngin = G->ngout = 0;
    for (int q = 0; q < d->nin + d->nout; q++) {
        G->slot[q] = flat_op(d, q, nd, shape, st) ? -1 : G->nb++ - d->nred;
        if (G->slot[q] >= 0 && q < d->nin)
            G->gin[G->ngin++] = q;
        else if (G->slot[q] >= 0)
            G->gout[G->ngout++] = q;
    }
    return 1;
}

/* Fold g rows of inner values v (row after row) into the accumulators
 * at acc, os apart from row to row, stride s along a row.  Row sums into
 * accumulators of their own (os not 0) go four rows at a time, each row
 * still added in its order, so that four chains of dependent adds
 * overlap instead of waiting on each other. */
static void fold_rows(int kind, char *acc, int64_t os, int64_t s, const double *v, int64_t inner, int64_t g)
{
    int64_t r = 0;
    if (kind == TGLD_SUM && s == 0 && os != 0)
        for (; r + 4 <= g; r += 4) {
            double a0, a1, a2, a3;
            const double *v0 = v + r * inner, *v1 = v0 + inner, *v2 = v1 + inner, *v3 = v2 + inner;
            char *c = acc + r * os;
            memcpy(&a0, c, 8), memcpy(&a1, c + os, 8), memcpy(&a2, c + 2 * os, 8), memcpy(&a3, c + 3 * os, 8);
            for (int64_t i = 0; i < inner; i++)
                a0 = a0 + v0[i], a1 = a1 + v1[i], a2 = a2 + v2[i], a3 = a3 + v3[i];
            memcpy(c, &a0, 8), memcpy(c + os, &a1, 8), memcpy(c + 2 * os, &a2, 8), memcpy(c + 3 * os, &a3, 8);
        }
    for (; r < g; r++)
        fold_run(kind, acc + r * os, s, v + r * inner, inner);
}

/* A gathered input's row: n elements of size es from src (stride ss;
 * 0, a row's broadcast scalar, repeated) to contiguous dst. */
static inline void row_in(char *dst, const char *src, int64_t ss, int64_t n, int es)
{
    if (ss == 0 && es == 8) {
        uint64_t v;
        memcpy(&v, src, 8);
        int64_t i = 0;
        for (; i + 4 <= n; i += 4) {
            memcpy(dst + i * 8, &v, 8), memcpy(dst + i * 8 + 8, &v, 8);
            memcpy(dst + i * 8 + 16, &v, 8), memcpy(dst + i * 8 + 24, &v, 8);
        }
        for (; i < n; i++)
            memcpy(dst + i * 8, &v, 8);
    } else {
        copy_elems(dst, es, src, ss, n, es);
    }
}

/* g whole rows from row pointers b (outer index idx, both moved past
 * them), inner strides s, as one run of the group kernel.  Rows of a
 * 2-d loop are found by their outer stride, others by the N-d walk. */
static void run_group(const tgk_desc *d, const rowgrp *G, int nd, const int64_t *shape, const int64_t *st,
                      const int64_t *s, int64_t *idx, char **b, int64_t g)
{
    int nio = d->nin + d->nout, nall = nio + d->nred, two = nd == 2;
    int64_t inner = G->inner, n = g * inner, idx0[nd];
    char *b0[nall], **p = G->p;
    memcpy(b0, b, sizeof b0);
    memcpy(idx0, idx, sizeof idx0);
    for (int64_t r = 0; G->ngin && r < g; r++) {   /* the gathered inputs, row by row */
        for (int x = 0; x < G->ngin; x++) {
            int q = G->gin[x], es = d->size[q];
            row_in((char *)G->buf[d->nred + G->slot[q]] + r * inner * es, two ? b0[q] + r * st[2 * q] : b[q], s[q],
                   inner, es);
        }
        if (!two)
            next_row(nd, nall, shape, st, idx, b);
    }
    for (int q = 0; q < nio; q++)
        p[q] = !d->size[q] ? NULL : G->slot[q] >= 0 ? (char *)G->buf[d->nred + G->slot[q]] : b0[q];
    for (int r = 0; r < d->nred; r++)
        p[nio + r] = (char *)G->buf[r];
    G->kc(n, p);
    memcpy(b, b0, sizeof b0);
    memcpy(idx, idx0, sizeof idx0);
    if (two) {      /* the scattered outputs, then each reduction's rows */
        for (int x = 0; x < G->ngout; x++) {
            int q = G->gout[x], es = d->size[q];
            for (int64_t r = 0; r < g; r++)
                copy_elems(b0[q] + r * st[2 * q], s[q], p[q] + r * inner * es, es, inner, es);
        }
        for (int q = 0; q < d->nred; q++)
            fold_rows(d->red[q], b0[nio + q], st[2 * (nio + q)], s[nio + q], G->buf[q], inner, g);
    }
    for (int64_t r = 0; !two && r < g; r++) {   /* the same by the N-d walk, row by row */
        for (int x = 0; x < G->ngout; x++) {
            int q = G->gout[x], es = d->size[q];
            copy_elems(b[q], s[q], p[q] + r * inner * es, es, inner, es);
        }
        for (int q = 0; q < d->nred; q++)
            fold_run(d->red[q], b[nio + q], s[nio + q], G->buf[q] + r * inner, inner);
        next_row(nd, nall, shape, st, idx, b);
    }
    if (two) {
        for (int q = 0; q < nall; q++)
            b[q] += g * st[2 * q];
        idx[0] += g;
    }
}

/* Part of a group: elements [off, off + cnt) of the group of gn
 * elements, the first at column j of the row at b (idx), as the whole
 * group's call would compute them: every operand through a buffer, the
 * part at its place in the group, the rest of the inputs copies of the
 * part's first element (values the loop's operations meet anyway: no
 * integer division by a zero the data never had), and only the part
 * scattered and folded.  So an element's place in its
 * kernel call, where a vectorized kernel may switch from its vector
 * loop to its scalar remainder (whose math functions round differently),
 * depends on the shape alone, not on where a range (a thread's share,
 * a reduction's block) starts or ends.  b and idx end on the row after
 * the part when it ends a row. */
static void run_part(const tgk_desc *d, const rowgrp *G, int nd, const int64_t *shape, const int64_t *st,
                     const int64_t *s, int64_t *idx, char **b, int64_t gn, int64_t off, int64_t cnt, int64_t j)
{
    int nio = d->nin + d->nout, nall = nio + d->nred;
    int64_t inner = G->inner, idx0[nd];
    char *b0[nall], **p = G->p;
    memcpy(b0, b, sizeof b0);
    memcpy(idx0, idx, sizeof idx0);
    for (int64_t e = 0, c = j; e < cnt; c = 0) {     /* the inputs, row by row */
        int64_t len = inner - c < cnt - e ? inner - c : cnt - e;
        for (int q = 0; q < d->nin; q++)
            if (d->size[q])
                row_in((char *)G->buf[d->nred + q] + (off + e) * d->size[q], b[q] + c * s[q], s[q], len, d->size[q]);
        e += len;
        if (c + len == inner)
            next_row(nd, nall, shape, st, idx, b);
    }
    for (int q = 0; q < d->nin; q++)     /* the rest: the part's first element again */
        if (d->size[q]) {
            int es = d->size[q];
            char *t = (char *)G->buf[d->nred + q];
            for (int64_t e = 0; e < gn; e++)
                if (e < off || e >= off + cnt)
                    memcpy(t + e * es, t + off * es, (size_t)es);
        }
    for (int q = 0; q < nio; q++)
        p[q] = d->size[q] ? (char *)G->buf[d->nred + q] : NULL;
    for (int r = 0; r < d->nred; r++)
        p[nio + r] = (char *)G->buf[r];
    G->kc(gn, p);
    memcpy(b, b0, sizeof b0);
    memcpy(idx, idx0, sizeof idx0);
    for (int64_t e = 0, c = j; e < cnt; c = 0) {     /* the outputs and the folds, row by row */
        int64_t len = inner - c < cnt - e ? inner - c : cnt - e;
        for (int q = d->nin; q < nio; q++)
            if (d->size[q])
                copy_elems(b[q] + c * s[q], s[q], p[q] + (off + e) * d->size[q], d->size[q], len, d->size[q]);
        for (int r = 0; r < d->nred; r++)
            fold_run(d->red[r], b[nio + r] + c * s[nio + r], s[nio + r], G->buf[r] + off + e, len);
        e += len;
        if (c + len == inner)
            next_row(nd, nall, shape, st, idx, b);
    }
}

void tgLd_range(const tgk_desc *d, tgk_kern k, const int64_t *shape, char *const *base, const int64_t *st,
                int64_t lo, int64_t hi)
{
    int nd = d->nd, nio = d->nin + d->nout, nall = nio + d->nred, sd = nd ? nd : 1;
    char *b[nall > 0 ? nall : 1], *p[nall > 0 ? nall : 1];
    int64_t s[nall > 0 ? nall : 1], idx[sd];
    int slot[nio > 0 ? nio : 1], gslot[nio > 0 ? nio : 1], gin[nio > 0 ? nio : 1], gout[nio > 0 ? nio : 1];
    for (int q = 0; q < nall; q++)
        s[q] = nd ? st[q * sd + sd - 1] : 0;
    int nb = runs_plan(d, s, slot);
    rowgrp G = {NULL, 0, 0, gslot, 0, gin, 0, gout, 0, p, NULL};
    int64_t rows = 1;   /* the loop's rows */
    for (int a = 0; a + 1 < nd; a++)
        rows *= shape[a];
    int grouped = nd >= 2 && rows >= 2 && groups_plan(d, k, nd, shape, st, &G);
    /* buffers: the runs', or the groups' (every operand in a part) */
    int nbuf = grouped && nall > nb ? nall : nb;
    double buf[nbuf ? nbuf : 1][TGLD_CHUNK];
    runs R = {slot, nb, p, buf};
    G.buf = buf;
    if (nd <= 1) {  /* one row: the common case, and the one of the shortest calls */
        if (hi > lo)
            run_row(d, k, &R, base, s, lo, hi);
        return;
    }
    int64_t inner = shape[nd - 1], rem = inner ? lo / inner : 0, j = inner ? lo % inner : 0;
    int64_t left = hi - lo, row = rem;    /* row: the outer index, flat */
    for (int a = nd - 2; a >= 0; a--) {
        idx[a] = rem % shape[a];
        rem /= shape[a];
    }
    for (int q = 0; q < nall; q++) {
        b[q] = base[q];
        for (int a = 0; a + 1 < nd; a++)
            b[q] += idx[a] * st[q * sd + a];
    }
    while (grouped && left > 0) {
        /* groups of G.per rows from the loop's first row: whole ones as
         * one run, a range's first or last part of one as that group */
        int64_t g0 = row - row % G.per, gr = rows - g0 < G.per ? rows - g0 : G.per;
        int64_t off = (row - g0) * inner + j, cnt = gr * inner - off < left ? gr * inner - off : left;
        if (off == 0 && cnt == gr * inner)
            run_group(d, &G, nd, shape, st, s, idx, b, gr);
        else
            run_part(d, &G, nd, shape, st, s, idx, b, gr * inner, off, cnt, j);
        left -= cnt;
        row = g0 + (off + cnt) / inner, j = 0;
    }
    while (left > 0) {
        int64_t i1 = inner - j < left ? inner : j + left;
        run_row(d, k, &R, b, s, j, i1);
        left -= i1 - j;
        j = 0;
        next_row(nd, nall, shape, st, idx, b);
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
