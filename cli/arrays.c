/* arrays.c - arrays for the REPL's :eval: from nested lists of numbers,
 * from .npy files (numpy's format: a magic string, a header that is a
 * Python dict literal, then the raw elements), and back to terms.
 * Nothing recurses: arrays have at most TG_MAXDIM dimensions, walked with
 * index vectors. */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arrays.h"

#include <gc/gc.h>

static const char *dtype_names[] = {"bool", "int32", "int64", "float32", "float64"};
static const size_t dtype_size[] = {1, 4, 8, 4, 8};

int tgM_dtype_of(const tg_term *name)
{
    size_t n;
    const char *s = tg_kind_of(name) == TG_SYMBOL ? tg_symbol_name(name, &n) : NULL;
    for (int i = 0; s && i < 5; i++)
        if (strlen(dtype_names[i]) == n && !memcmp(dtype_names[i], s, n))
            return i;
    return -1;
}

/* Store number x as element i of a's contiguous data; -1 when it does not
 * fit the dtype. */
static int put(tg_array *a, size_t i, const tg_term *x)
{
    int64_t v;
    double d;
    int isint = tg_int_get(x, &v) == 0;
    if (isint)
        d = (double)v;
    else if (tg_double_get(x, &d) < 0) {
        mpq_t q;
        mpq_init(q);
        int ok = tg_rat_get_mpq(x, q) == 0;
        d = ok ? mpq_get_d(q) : 0;
        mpq_clear(q);
        if (!ok)
            return -1;
    }
    char *p = (char *)a->data + i * dtype_size[a->dtype];
    switch (a->dtype) {
    case TG_BOOL:
        if (!isint || (v != 0 && v != 1))
            return -1;
        *(unsigned char *)p = (unsigned char)v;
        return 0;
    case TG_INT32:
        if (!isint || v < INT32_MIN || v > INT32_MAX)
            return -1;
        *(int32_t *)p = (int32_t)v;
        return 0;
    case TG_INT64:
        if (!isint)
            return -1;
        *(int64_t *)p = v;
        return 0;
    case TG_FLOAT32:
        *(float *)p = (float)d;
        return 0;
    case TG_FLOAT64:
        *(double *)p = d;
        return 0;
    }
    return -1;
}

static int64_t shape_count(const tg_array *a)
{
    int64_t n = 1;
    for (int k = 0; k < a->ndim; k++)
        n *= a->shape[k];
    return n;
}

/* The shape of t from its first elements at each depth. */
static int shape_of(const tg_term *t, tg_array *a, tg_error *err)
{
    a->ndim = 0;
    while (tg_kind_of(t) == TG_PAIR || t == tg_nil()) {
        if (a->ndim == TG_MAXDIM) {
            tg_error_set(err, TG_ERR_RANGE, "more than %d dimensions", TG_MAXDIM);
            return -1;
        }
        size_t n = tg_length(t);
        a->shape[a->ndim++] = (int64_t)n;
        if (n == 0)
            break;
        t = tg_car(t);
    }
    int64_t n = 1;
    for (int k = 0; k < a->ndim; k++) {
        if (a->shape[k] && n > ((int64_t)1 << 32) / a->shape[k]) {
            tg_error_set(err, TG_ERR_RANGE, "array too large");
            return -1;
        }
        n *= a->shape[k];
    }
    return 0;
}

int tgM_array_from_term(const tg_term *t, tg_dtype dtype, tg_array *a, tg_error *err)
{
    memset(a, 0, sizeof *a);
    a->dtype = dtype;
    if (shape_of(t, a, err) < 0)
        return -1;
    int64_t count = shape_count(a);
    a->data = malloc((size_t)(count ? count : 1) * dtype_size[dtype]);
    if (!a->data) {
        tg_error_set(err, TG_ERR_NOMEM, "out of memory");
        return -1;
    }
    int64_t shape[TG_MAXDIM];
    memcpy(shape, a->shape, sizeof shape);
    tg_array_init(a, dtype, a->ndim, shape, a->data);
    /* walk the lists depth-first with one iterator per dimension */
    tg_iter it[TG_MAXDIM];
    int depth = 0;
    size_t i = 0;
    if (a->ndim == 0) {
        if (put(a, 0, t) < 0)
            goto bad;
        return 0;
    }
    if (tg_tail(t) != tg_nil())
        goto ragged;
    tg_iter_init(&it[0], t);
    for (;;) {
        tg_term *x = tg_iter_next(&it[depth]);
        if (!x) {
            if (depth == 0)
                break;
            depth--;
            continue;
        }
        if (depth + 1 < a->ndim) {
            if ((tg_kind_of(x) != TG_PAIR && x != tg_nil()) || tg_tail(x) != tg_nil() ||
                (int64_t)tg_length(x) != a->shape[depth + 1])
                goto ragged;
            tg_iter_init(&it[++depth], x);
            continue;
        }
        if (tg_kind_of(x) == TG_PAIR || x == tg_nil())
            goto ragged;
        if (put(a, i++, x) < 0)
            goto bad;
    }
    if ((int64_t)i != count)
        goto ragged;
    return 0;
ragged:
    free(a->data);
    a->data = NULL;
    tg_error_set(err, TG_ERR_TYPE, "not a rectangular array of numbers");
    return -1;
bad:
    free(a->data);
    a->data = NULL;
    tg_error_set(err, TG_ERR_TYPE, "an element is not a %s value", dtype_names[dtype]);
    return -1;
}

/* ---- .npy: the library's reader (tg_npy_parse) -------------------------- */

int tgM_array_read_npy(const char *path, tg_array *a, tg_error *err)
{
    return tg_npy_read(path, a, err);
}

int tgM_array_parse_npy(const char *f, size_t len, const char *name, tg_array *a, tg_error *err)
{
    return tg_npy_parse(f, len, name, a, err);
}

/* ---- back to terms --------------------------------------------------------- */

/* A float32 value as the double of its shortest decimal spelling that
 * reads back as the same float (0.6f is 0.6, not 0.6000000238418579):
 * the double printed is then that spelling. */
static double float32_shortest(float f)
{
    if (!isfinite(f) || f == 0)
        return f;
    char buf[32];
    for (int prec = 1; prec < 9; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, (double)f);
        if (strtof(buf, NULL) == f)
            return strtod(buf, NULL);
    }
    return f;
}

static tg_term *element(tg_ctx *ctx, const tg_array *a, const int64_t *idx)
{
    const char *p = a->data;
    for (int k = 0; k < a->ndim; k++)
        p += idx[k] * a->strides[k];
    switch (a->dtype) {
    case TG_BOOL: return tg_int(ctx, *(const unsigned char *)p != 0);
    case TG_INT32: return tg_int(ctx, *(const int32_t *)p);
    case TG_INT64: return tg_int(ctx, *(const int64_t *)p);
    case TG_FLOAT32: return tg_double(ctx, float32_shortest(*(const float *)p));
    case TG_FLOAT64: return tg_double(ctx, *(const double *)p);
    }
    return NULL;
}

tg_term *tgM_array_to_term(tg_ctx *ctx, const tg_array *a)
{
    int64_t count = shape_count(a);
    int64_t idx[TG_MAXDIM] = {0};
    if (a->ndim == 0)
        return element(ctx, a, idx);
    /* the leaves in order, then grouped into lists from the last axis;
     * in collector memory, which it scans: the terms made so far are
     * held nowhere else, and the next ones may collect */
    size_t cap = (size_t)(count ? count : 1);
    tg_term **v = GC_MALLOC(cap * sizeof *v);
    if (!v)
        return NULL;
    for (int64_t i = 0; i < count; i++) {
        if (!(v[i] = element(ctx, a, idx)))
            goto oom;
        for (int k = a->ndim - 1; k >= 0 && ++idx[k] == a->shape[k]; k--)
            idx[k] = 0;
    }
    size_t n = (size_t)count;
    for (int d = a->ndim - 1; d >= 0; d--) {
        size_t outer = 1;
        for (int k = 0; k < d; k++)
            outer *= (size_t)a->shape[k];
        size_t w = (size_t)a->shape[d];
        if (outer > cap) {      /* an empty axis below: more lists than leaves */
            tg_term **b = GC_REALLOC(v, outer * sizeof *v);
            if (!b)
                goto oom;
            v = b, cap = outer;
        }
        for (size_t j = 0; j < outer; j++)
            if (!(v[j] = tg_list(ctx, w, w ? v + j * w : NULL, tg_nil())))
                goto oom;
        n = outer;
    }
    return n ? v[0] : tg_nil();
oom:
    return NULL;
}
