/* kt.h - helpers shared by the kernels tests: compiling functions from
 * text, random arrays (contiguous or strided, any dtype), element access
 * in long double, and broadcasting index arithmetic for references. */
#ifndef TGREL_TESTS_KT_H
#define TGREL_TESTS_KT_H

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "tgrel.h"

/* 0: compiled code, 1: the interpreter; tests run on both. */
static int kt_path TAP_UNUSED_;

static unsigned long long kt_seed = 88172645463325252ull;
static TAP_UNUSED_ uint64_t kt_rand(void)
{
    kt_seed ^= kt_seed << 13;
    kt_seed ^= kt_seed >> 7;
    kt_seed ^= kt_seed << 17;
    return kt_seed;
}
/* The start of a round on path kt_path (0 when there is none left): it
 * is named in the output, and the random cases restart so that both
 * paths see the same ones.  Loop: KT_EACH_PATH { ... }. */
static TAP_UNUSED_ int kt_path_begin(void)
{
    if (kt_path >= 2)
        return 0;
    tap_diag("%s", kt_path ? "the interpreter" : "compiled code");
    kt_seed = 88172645463325252ull;
    return 1;
}
#define KT_EACH_PATH for (kt_path = 0; kt_path_begin(); kt_path++)

static TAP_UNUSED_ double kt_unif(double lo, double hi)
{
    return lo + (hi - lo) * (double)(kt_rand() >> 11) / 9007199254740992.0;
}

static TAP_UNUSED_ size_t kt_esize(tg_dtype d)
{
    static const size_t s[] = {1, 4, 8, 4, 8};
    return s[d];
}

/* The terms of text, at most 16, into t: their count. */
static TAP_UNUSED_ size_t kt_read_terms(tg_ctx *ctx, const char *text, tg_term **t, tg_error *err)
{
    size_t n = 0;
    tg_reader *r = tg_reader_new(ctx, text, strlen(text), NULL, err);
    while (r && n < 16 && tg_reader_next(r, &t[n], err) == 1)
        n++;
    tg_reader_free(r);
    return n;
}

/* Compile: ins is text of input terms, outs text of output terms. */
static TAP_UNUSED_ tg_fn *kt_compile(tg_ctx *ctx, const char *ins, const char *outs, const unsigned char *kept,
                         int interpret, tg_error *err)
{
    tg_term *it[16], *ot[16];
    size_t ni = kt_read_terms(ctx, ins, it, err), no = kt_read_terms(ctx, outs, ot, err);
    tg_fn_options o = {.kept = kept, .interpret = interpret};
    return tg_fn_compile(ctx, ni, it, no, ot, &o, err);
}

/* An array of the given shape; strided: every other element, and the
 * first axis reversed.  The memory is one malloc block at a->data or
 * before it (kt_base gives it back for free). */
typedef struct kt_arr {
    tg_array a;
    void *block;
} kt_arr;

static TAP_UNUSED_ void kt_make(kt_arr *k, tg_dtype d, int ndim, const int64_t *shape, int strided)
{
    int64_t n = 1;
    for (int i = 0; i < ndim; i++)
        n *= shape[i];
    size_t es = kt_esize(d), step = strided ? 2 : 1;
    k->block = calloc((size_t)(n ? n : 1) * step, es);
    tg_array_init(&k->a, d, ndim, shape, k->block);
    if (strided && ndim > 0 && n > 0) {
        for (int i = 0; i < ndim; i++)
            k->a.strides[i] *= 2;
        /* reverse axis 0: start at its last row */
        k->a.data = (char *)k->block + (shape[0] - 1) * k->a.strides[0];
        k->a.strides[0] = -k->a.strides[0];
    }
}

static TAP_UNUSED_ char *kt_ptr(const tg_array *a, const int64_t *idx)
{
    char *p = a->data;
    for (int i = 0; i < a->ndim; i++)
        p += idx[i] * a->strides[i];
    return p;
}

static TAP_UNUSED_ long double kt_get(const tg_array *a, const int64_t *idx)
{
    const char *p = kt_ptr(a, idx);
    switch (a->dtype) {
    case TG_FLOAT64: { double v; memcpy(&v, p, 8); return v; }
    case TG_FLOAT32: { float v; memcpy(&v, p, 4); return v; }
    case TG_INT64: { int64_t v; memcpy(&v, p, 8); return (long double)v; }
    case TG_INT32: { int32_t v; memcpy(&v, p, 4); return v; }
    default: return *(const unsigned char *)p;
    }
}

static TAP_UNUSED_ int64_t kt_geti(const tg_array *a, const int64_t *idx)
{
    const char *p = kt_ptr(a, idx);
    switch (a->dtype) {
    case TG_INT64: { int64_t v; memcpy(&v, p, 8); return v; }
    case TG_INT32: { int32_t v; memcpy(&v, p, 4); return v; }
    case TG_BOOL: return *(const unsigned char *)p;
    default: return (int64_t)kt_get(a, idx);
    }
}

static TAP_UNUSED_ void kt_set(const tg_array *a, const int64_t *idx, long double v)
{
    char *p = kt_ptr(a, idx);
    switch (a->dtype) {
    case TG_FLOAT64: { double x = (double)v; memcpy(p, &x, 8); break; }
    case TG_FLOAT32: { float x = (float)v; memcpy(p, &x, 4); break; }
    case TG_INT64: { int64_t x = (int64_t)v; memcpy(p, &x, 8); break; }
    case TG_INT32: { int32_t x = (int32_t)v; memcpy(p, &x, 4); break; }
    default: *(unsigned char *)p = v != 0;
    }
}

static TAP_UNUSED_ int64_t kt_count(const tg_array *a)
{
    int64_t n = 1;
    for (int i = 0; i < a->ndim; i++)
        n *= a->shape[i];
    return n;
}

/* Next index in C order; 0 after the last. */
static TAP_UNUSED_ int kt_next(int ndim, const int64_t *shape, int64_t *idx)
{
    for (int d = ndim - 1; d >= 0; d--) {
        if (++idx[d] < shape[d])
            return 1;
        idx[d] = 0;
    }
    return 0;
}

/* Fill with uniform values in [lo, hi) (integers: rounded down). */
static TAP_UNUSED_ void kt_fill(const tg_array *a, double lo, double hi)
{
    int64_t idx[TG_MAXDIM] = {0};
    if (kt_count(a) == 0)
        return;
    do {
        double v = kt_unif(lo, hi);
        kt_set(a, idx, a->dtype == TG_FLOAT64 || a->dtype == TG_FLOAT32 ? v : floor(v));
    } while (kt_next(a->ndim, a->shape, idx));
}

/* The index into an operand of rank r (shape sh) for result index I of
 * rank R under broadcasting. */
static TAP_UNUSED_ void kt_bidx(int R, const int64_t *I, int r, const int64_t *sh, int64_t *out)
{
    for (int k = 0; k < r; k++)
        out[k] = sh[k] == 1 ? 0 : I[R - r + k];
}

/* "(3 n 4)" of a shape, for messages. */
static TAP_UNUSED_ const char *kt_shape(int ndim, const int64_t *shape)
{
    static char buf[4][128];
    static int k;
    k = (k + 1) % 4;
    size_t o = (size_t)snprintf(buf[k], sizeof buf[k], "(");
    for (int i = 0; i < ndim; i++)
        o += (size_t)snprintf(buf[k] + o, sizeof buf[k] - o, i ? " %lld" : "%lld", (long long)shape[i]);
    snprintf(buf[k] + o, sizeof buf[k] - o, ")");
    return buf[k];
}

/* A rule set of the .rules text (file names it in errors), or NULL
 * with the error shown. */
static TAP_UNUSED_ tg_rules *kt_rules(tg_ctx *ctx, const char *text, const char *file)
{
    tg_error err;
    tg_rules *rs = tg_rules_new(ctx, &err);
    if (rs && tg_rules_load_string(rs, text, strlen(text), file, &err) < 0) {
        tap_diag("%s", err.message);
        tg_rules_free(rs);
        return NULL;
    }
    return rs;
}

/* Compiled loops may take vector math functions (libmvec) whose results
 * are within a few ulps of libm's, not always the same: what a
 * transcendental function computes is compared within this. */
#define KT_ULPS (4 * DBL_EPSILON)

/* Relative closeness with NaN == NaN and infinities exact. */
static TAP_UNUSED_ int kt_close(long double got, long double want, long double rel)
{
    if (isnan(want))
        return isnan(got);
    if (isinf(want))
        return got == want;
    long double d = fabsl(got - want), m = fabsl(want);
    return d <= rel * (m > 1e-300L ? m : 1e-300L) || d <= rel * 1e-300L;
}

/* The logistic regression of bench/grad logreg: its inputs and its
 * outputs (the cost mean(-y log p - (1-y) log(1-p)) + 0.01 sum(w^2),
 * p = sigmoid(X w + b), and its gradients in w and b). */
#define KT_LOGREG_INS "(input X float64 (n f)) (input y float64 (n)) (input w float64 (f)) (input b float64 ())"
#define KT_LOGREG_P_ "(sigmoid (add (dot (input X float64 (n f)) (input w float64 (f))) (input b float64 ())))"
#define KT_LOGREG_COST_ "(add (mean (sub (neg (mul (input y float64 (n)) (log " KT_LOGREG_P_ "))) " \
                        "(mul (sub 1 (input y float64 (n))) (log (sub 1 " KT_LOGREG_P_ ")))) all) " \
                        "(mul 0.01 (sum (sqr (input w float64 (f))) all)))"
#define KT_LOGREG_OUTS KT_LOGREG_COST_ " (grad " KT_LOGREG_COST_ " (input w float64 (f))) " \
                       "(grad " KT_LOGREG_COST_ " (input b float64 ()))"

/* Its cost, d/dw and d/db in long double, the reference; X row i at
 * X + i * rs. */
static TAP_UNUSED_ long double kt_ref_logreg(long n, long f, const double *X, long rs, const double *y,
                                             const double *w, double b, long double *dw, long double *db)
{
    long double loss = 0, gb = 0;
    for (long j = 0; j < f; j++)
        dw[j] = 0.02L * w[j];
    for (long i = 0; i < n; i++) {
        long double z = b;
        for (long j = 0; j < f; j++)
            z += (long double)X[i * rs + j] * w[j];
        long double p = 1 / (1 + expl(-z)), g = (p - y[i]) / n;
        loss += y[i] * log1pl(expl(-z)) + (1 - y[i]) * log1pl(expl(z));
        gb += g;
        for (long j = 0; j < f; j++)
            dw[j] += g * X[i * rs + j];
    }
    long double r = 0;
    for (long j = 0; j < f; j++)
        r += (long double)w[j] * w[j];
    *db = gb;
    return loss / n + 0.01L * r;
}

#endif
