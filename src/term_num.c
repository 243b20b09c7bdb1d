/* term_num.c - numbers: integers (immediate, or GMP limbs in a node)
 * and rationals made from C and GMP values, the accessors of integers,
 * rationals and doubles, and the exact comparison of numbers that the
 * total order uses.  The interning of doubles, big integers and
 * rationals is in term.c (tg_double, tgT_big_intern, tgT_rat_intern),
 * with the other interners.
 */
#include "term.h"
#include "error.h"

#include <math.h>
#include <string.h>

/* mpz has no int64 setter on every platform: go through the magnitude. */
static void mpz_set_i64(mpz_t z, int64_t v)
{
    uint64_t mag = v < 0 ? -(uint64_t)v : (uint64_t)v;
    mpz_import(z, 1, 1, sizeof mag, 0, 0, &mag);
    if (v < 0)
        mpz_neg(z, z);
}

/* Out of line, so that tg_int itself needs no stack frame. */
static __attribute__((noinline)) tg_term *int_big(tg_ctx *ctx, int64_t v)
{
    mpz_t z;
    mpz_init(z);
    mpz_set_i64(z, v);
    tg_term *t = tg_int_mpz(ctx, z);
    mpz_clear(z);
    return t;
}

tg_term *tg_int(tg_ctx *ctx, int64_t v)
{
    /* one unsigned compare for the immediate range */
    if ((uint64_t)v - (uint64_t)TGT_FIXMIN <= (uint64_t)TGT_FIXMAX - (uint64_t)TGT_FIXMIN)
        return tgT_mkfix(v);
    return ctx ? int_big(ctx, v) : NULL;
}

tg_term *tg_int_mpz(tg_ctx *ctx, const mpz_t v)
{
    if (!ctx)
        return NULL;
    if (mpz_fits_slong_p(v)) {
        long x = mpz_get_si(v);
        if (x >= TGT_FIXMIN && x <= TGT_FIXMAX)
            return tgT_mkfix(x);
    }
    return tgT_big_intern(ctx, v->_mp_size, v->_mp_d);
}

tg_term *tg_int_parse(tg_ctx *ctx, const char *s, tg_error *err)
{
    if (!ctx || !s)
        return (tgE_arg(err, "tg_int_parse: NULL argument"), NULL);
    const char *p = s;
    if (*p == '+' || *p == '-')
        p++;
    if (!*p || strspn(p, "0123456789") != strlen(p)) {
        tgE_set(err, TG_ERR_SYNTAX, NULL, 0, 0, "not an integer: %.60s", s);
        return NULL;
    }
    mpz_t z;
    mpz_init_set_str(z, *s == '+' ? s + 1 : s, 10);
    tg_term *t = tg_int_mpz(ctx, z);
    mpz_clear(z);
    if (!t)
        tgE_set(err, TG_ERR_NOMEM, NULL, 0, 0, "out of memory");
    return t;
}

tg_term *tg_rat_mpq(tg_ctx *ctx, const mpq_t v, tg_error *err)
{
    if (mpz_sgn(mpq_denref(v)) == 0) {
        tgE_set(err, TG_ERR_RANGE, NULL, 0, 0, "zero denominator in rational");
        return NULL;
    }
    mpq_t q;
    mpq_init(q);
    /* mpq_set assumes a positive denominator; copy the parts instead */
    mpz_set(mpq_numref(q), mpq_numref(v));
    mpz_set(mpq_denref(q), mpq_denref(v));
    mpq_canonicalize(q);
    tg_term *t = NULL;
    if (mpz_cmp_ui(mpq_denref(q), 1) == 0) {
        t = tg_int_mpz(ctx, mpq_numref(q));
        goto done;
    }
    t = tgT_rat_intern(ctx, mpq_numref(q)->_mp_size, mpq_numref(q)->_mp_d,
                       mpq_denref(q)->_mp_size, mpq_denref(q)->_mp_d);
done:
    mpq_clear(q);
    if (!t)
        tgE_set(err, TG_ERR_NOMEM, NULL, 0, 0, "out of memory");
    return t;
}

tg_term *tg_rat(tg_ctx *ctx, int64_t num, int64_t den, tg_error *err)
{
    mpq_t q;
    mpq_init(q);
    mpz_set_i64(mpq_numref(q), num);
    mpz_set_i64(mpq_denref(q), den);
    tg_term *t = tg_rat_mpq(ctx, q, err);
    mpq_clear(q);
    return t;
}

/* Read-only GMP views of stored numbers (no allocation). */
static void big_view(const tg_term *t, mpz_t out)
{
    const tgT_big *b = (const tgT_big *)t;
    mpz_roinit_n(out, b->d, b->size);
}
static void rat_view(const tg_term *t, mpq_t out)
{
    const tgT_rat *r = (const tgT_rat *)t;
    size_t nn = (size_t)(r->nsize < 0 ? -r->nsize : r->nsize);
    mpz_roinit_n(mpq_numref(out), r->d, r->nsize);
    mpz_roinit_n(mpq_denref(out), r->d + nn, r->dsize);
}

/* ---- accessors ---------------------------------------------------- */

int tg_int_get(const tg_term *t, int64_t *out)
{
    if (!t)
        return -1;
    if (tgT_isfix(t)) {
        *out = tgT_fixval(t);
        return 0;
    }
    if (t->h.kind != TG_INT)
        return -1;
    const tgT_big *b = (const tgT_big *)t;
    if (b->size != 1 && b->size != -1)
        return -1;
    uint64_t mag = b->d[0];
    if (b->size > 0 && mag <= (uint64_t)INT64_MAX) {
        *out = (int64_t)mag;
        return 0;
    }
    if (b->size < 0 && mag <= (uint64_t)INT64_MAX + 1) {
        *out = (int64_t)(0 - mag);
        return 0;
    }
    return -1;
}

int tg_int_get_mpz(const tg_term *t, mpz_t out)
{
    if (!t)
        return -1;
    if (tgT_isfix(t)) {
        mpz_set_i64(out, tgT_fixval(t));
        return 0;
    }
    if (t->h.kind != TG_INT)
        return -1;
    mpz_t view;
    big_view(t, view);
    mpz_set(out, view);
    return 0;
}

int tg_rat_get_mpq(const tg_term *t, mpq_t out)
{
    if (!t)
        return -1;
    if (tgT_kind(t) == TG_INT) {
        tg_int_get_mpz(t, mpq_numref(out));
        mpz_set_ui(mpq_denref(out), 1);
        return 0;
    }
    if (t->h.kind != TG_RAT)
        return -1;
    mpq_t view;
    rat_view(t, view);
    mpq_set(out, view);
    return 0;
}

int tg_double_get(const tg_term *t, double *out)
{
    if (!t)
        return -1;
    if (tgT_kind(t) != TG_DOUBLE)
        return -1;
    *out = ((const tgT_dbl *)t)->v;
    return 0;
}

/* ---- comparison --------------------------------------------------- */

/* Exact numeric comparison of distinct number terms; NaN after +inf;
 * equal values of different kinds order int < rat < double, and -0.0
 * before 0.0. */
int tgT_num_cmp(const tg_term *a, const tg_term *b)
{
    tg_kind ka = tgT_kind(a), kb = tgT_kind(b);
    if (ka == TG_INT && kb == TG_INT && tgT_isfix(a) && tgT_isfix(b))
        return tgT_fixval(a) < tgT_fixval(b) ? -1 : 1;
    if (ka == TG_DOUBLE && kb == TG_DOUBLE) {
        double x = ((const tgT_dbl *)a)->v, y = ((const tgT_dbl *)b)->v;
        if (isnan(x) || isnan(y))
            return isnan(x) ? 1 : -1;
        if (x != y)
            return x < y ? -1 : 1;
        return signbit(x) ? -1 : 1;
    }
    double d;
    if ((ka == TG_DOUBLE && isnan(((const tgT_dbl *)a)->v)))
        return 1;
    if ((kb == TG_DOUBLE && isnan(((const tgT_dbl *)b)->v)))
        return -1;
    if (ka == TG_DOUBLE && isinf(d = ((const tgT_dbl *)a)->v))
        return d > 0 ? 1 : -1;
    if (kb == TG_DOUBLE && isinf(d = ((const tgT_dbl *)b)->v))
        return d > 0 ? -1 : 1;
    mpq_t x, y;
    mpq_init(x);
    mpq_init(y);
    if (ka == TG_DOUBLE)
        mpq_set_d(x, ((const tgT_dbl *)a)->v);
    else
        tg_rat_get_mpq(a, x);
    if (kb == TG_DOUBLE)
        mpq_set_d(y, ((const tgT_dbl *)b)->v);
    else
        tg_rat_get_mpq(b, y);
    int c = mpq_cmp(x, y);
    c = (c > 0) - (c < 0);
    mpq_clear(x);
    mpq_clear(y);
    if (c)
        return c;
    if (ka != kb)
        return ka < kb ? -1 : 1;
    return signbit(((const tgT_dbl *)a)->v) ? -1 : 1;  /* 0.0 vs -0.0 */
}
