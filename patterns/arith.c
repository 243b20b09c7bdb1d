/* arith.c - the numeric built-ins of rules (see arith.h): exact integers
 * (immediate small integers with an overflow-checked fast path, GMP
 * beyond), exact rationals (GMP, normalized, so 6/3 is the integer 2),
 * and IEEE doubles.
 *
 * Promotion: when any argument of an arithmetic built-in is a double,
 * every argument is converted to the nearest double and the operation is
 * the IEEE one; otherwise the result is exact.  Comparisons (and the
 * choice made by min and max) are exact across kinds: 2^53 + 1 is greater
 * than the double 2^53.
 */
#include "arith.h"
#include "term.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum {
    Q_ADD, Q_SUB, Q_MUL, Q_DIV, Q_NEG, Q_ABS, Q_MIN, Q_MAX,
    Q_QUO, Q_REM, Q_FLOORDIV, Q_MOD, Q_POW,
    Q_LT, Q_LE, Q_GT, Q_GE, Q_EQ, Q_NE,
    Q_DOUBLE, Q_FLOAT32, Q_EXACT, Q_INT, Q_FLOOR, Q_CEIL, Q_TRUNC, Q_ROUND,
    Q_EXP, Q_LOG, Q_LOG1P, Q_SQRT, Q_SIN, Q_COS, Q_TANH, Q_SIGMOID,
    Q_LIKE
};

static const struct builtin {
    const char *name;
    int amin, amax;     /* amax -1: any number */
} builtins[] = {
    [Q_ADD] = {"num:+", 0, -1},     [Q_SUB] = {"num:-", 2, 2},
    [Q_MUL] = {"num:*", 0, -1},     [Q_DIV] = {"num:/", 2, 2},
    [Q_NEG] = {"num:neg", 1, 1},    [Q_ABS] = {"num:abs", 1, 1},
    [Q_MIN] = {"num:min", 1, -1},   [Q_MAX] = {"num:max", 1, -1},
    [Q_QUO] = {"num:quo", 2, 2},    [Q_REM] = {"num:rem", 2, 2},
    [Q_FLOORDIV] = {"num:floordiv", 2, 2}, [Q_MOD] = {"num:mod", 2, 2},
    [Q_POW] = {"num:pow", 2, 2},
    [Q_LT] = {"num:<", 2, 2},       [Q_LE] = {"num:<=", 2, 2},
    [Q_GT] = {"num:>", 2, 2},       [Q_GE] = {"num:>=", 2, 2},
    [Q_EQ] = {"num:=", 2, 2},       [Q_NE] = {"num:!=", 2, 2},
    [Q_DOUBLE] = {"num:double", 1, 1}, [Q_FLOAT32] = {"num:float32", 1, 1},
    [Q_EXACT] = {"num:exact", 1, 1},
    [Q_INT] = {"num:int", 1, 1},    [Q_FLOOR] = {"num:floor", 1, 1},
    [Q_CEIL] = {"num:ceil", 1, 1},  [Q_TRUNC] = {"num:trunc", 1, 1},
    [Q_ROUND] = {"num:round", 1, 1},
    [Q_EXP] = {"num:exp", 1, 1},    [Q_LOG] = {"num:log", 1, 1},
    [Q_LOG1P] = {"num:log1p", 1, 1}, [Q_SQRT] = {"num:sqrt", 1, 1},
    [Q_SIN] = {"num:sin", 1, 1},    [Q_COS] = {"num:cos", 1, 1},
    [Q_TANH] = {"num:tanh", 1, 1},  [Q_SIGMOID] = {"num:sigmoid", 1, 1},
    [Q_LIKE] = {"num:like", 2, -1},
};

#define NBUILTINS ((int)(sizeof builtins / sizeof *builtins))

int tgQ_reserved(const char *name, size_t len)
{
    return len >= TGQ_PREFIX_LEN && !memcmp(name, TGQ_PREFIX, TGQ_PREFIX_LEN);
}

int tgQ_lookup(const char *name, size_t len, int *amin, int *amax, int *test)
{
    for (int i = 0; i < NBUILTINS; i++)
        if (strlen(builtins[i].name) == len && !memcmp(builtins[i].name, name, len)) {
            *amin = builtins[i].amin, *amax = builtins[i].amax;
            *test = i >= Q_LT && i <= Q_NE;
            return i;
        }
    return -1;
}

/* ---- kinds and conversions ---------------------------------------------- */

enum { K_FIX, K_BIG, K_RAT, K_DBL, K_NONE };

static int nkind(const tg_term *t)
{
    if (tgT_isfix(t))
        return K_FIX;
    switch (t->h.kind) {
    case TG_INT: return K_BIG;
    case TG_RAT: return K_RAT;
    case TG_DOUBLE: return K_DBL;
    default: return K_NONE;
    }
}

static double dval(const tg_term *t) { return ((const tgT_dbl *)t)->v; }

/* |num/den| correctly rounded to a double (to nearest, ties to even; in
 * the subnormal range the result may be off by one unit): the quotient
 * is taken to 55 or 56 bits, with a sticky bit for the remainder, and
 * rounded to 53 by hand (mpq_get_d truncates). */
static double q_to_d(const mpz_t num, const mpz_t den)
{
    if (!mpz_sgn(num))
        return 0.0;
    long k = 55 - ((long)mpz_sizeinbase(num, 2) - (long)mpz_sizeinbase(den, 2));
    mpz_t a, b, q, r;
    mpz_inits(a, b, q, r, NULL);
    mpz_abs(a, num);
    mpz_set(b, den);
    if (k >= 0)
        mpz_mul_2exp(a, a, (mp_bitcnt_t)k);
    else
        mpz_mul_2exp(b, b, (mp_bitcnt_t)-k);
    mpz_tdiv_qr(q, r, a, b);
    int sticky = mpz_sgn(r) != 0;
    long extra = (long)mpz_sizeinbase(q, 2) - 53;     /* 1 to 3 */
    uint64_t m = 0;
    size_t cnt = 0;
    mpz_export(&m, &cnt, -1, sizeof m, 0, 0, q);    /* q < 2^57 */
    uint64_t low = m & ((UINT64_C(1) << extra) - 1), half = UINT64_C(1) << (extra - 1);
    m >>= extra;
    if (low > half || (low == half && (sticky || (m & 1))))
        m++;
    long e = extra - k;
    e = e > 4000 ? 4000 : e < -4000 ? -4000 : e;
    double d = ldexp((double)m, (int)e);
    int neg = mpz_sgn(num) < 0;
    mpz_clears(a, b, q, r, NULL);
    return neg ? -d : d;
}

/* t, a number, as an exact rational (t not a NaN or an infinity when a
 * double). */
static void to_q(const tg_term *t, mpq_t out)
{
    if (nkind(t) == K_DBL)
        mpq_set_d(out, dval(t));
    else
        tg_rat_get_mpq(t, out);
}

static double to_d(const tg_term *t)
{
    switch (nkind(t)) {
    case K_FIX: return (double)tgT_fixval(t);   /* the FPU rounds to nearest */
    case K_DBL: return dval(t);
    default: {
        mpq_t q;
        mpq_init(q);
        tg_rat_get_mpq(t, q);
        double d = q_to_d(mpq_numref(q), mpq_denref(q));
        mpq_clear(q);
        return d;
    }
    }
}

/* The result out of an exact value (normalized: an integral value is an
 * integer term). */
static int put_q(tg_ctx *ctx, const mpq_t q, tg_term **out)
{
    return (*out = tg_rat_mpq(ctx, q, NULL)) ? 1 : -1;
}

static int put_z(tg_ctx *ctx, const mpz_t z, tg_term **out)
{
    return (*out = tg_int_mpz(ctx, z)) ? 1 : -1;
}

static int put_d(tg_ctx *ctx, double d, tg_term **out)
{
    return (*out = tg_double(ctx, d)) ? 1 : -1;
}

static int put_i(tg_ctx *ctx, int64_t v, tg_term **out)
{
    return (*out = tg_int(ctx, v)) ? 1 : -1;
}

/* Kinds of the arguments: the widest (K_NONE when one is not a number). */
static int widest(unsigned n, tg_term *const *a)
{
    int w = K_FIX;
    for (unsigned i = 0; i < n; i++) {
        int k = nkind(a[i]);
        if (k == K_NONE)
            return K_NONE;
        if (k > w)
            w = k;
    }
    return w;
}

/* ---- comparison ----------------------------------------------------------- */

/* -1, 0, 1, or 2 when unordered (a NaN). */
static int cmp(const tg_term *a, const tg_term *b)
{
    int ka = nkind(a), kb = nkind(b);
    if (ka == K_FIX && kb == K_FIX) {
        int64_t x = tgT_fixval(a), y = tgT_fixval(b);
        return (x > y) - (x < y);
    }
    if (ka == K_DBL && kb == K_DBL) {
        double x = dval(a), y = dval(b);
        return isnan(x) || isnan(y) ? 2 : (x > y) - (x < y);
    }
    /* exact against exact or double: compared exactly */
    for (int s = 0; s < 2; s++) {
        const tg_term *d = s ? b : a;
        if (nkind(d) == K_DBL && !isfinite(dval(d))) {
            double v = dval(d);
            if (isnan(v))
                return 2;
            int r = v > 0 ? 1 : -1;     /* +inf above every exact value */
            return s ? -r : r;
        }
    }
    mpq_t x, y;
    mpq_init(x);
    mpq_init(y);
    to_q(a, x);
    to_q(b, y);
    int r = mpq_cmp(x, y);
    mpq_clear(x);
    mpq_clear(y);
    return (r > 0) - (r < 0);
}

static int compare(tg_ctx *ctx, int id, tg_term *a, tg_term *b, tg_term **out)
{
    int c = cmp(a, b), v = 0;
    switch (id) {
    case Q_LT: v = c == -1; break;
    case Q_LE: v = c == -1 || c == 0; break;
    case Q_GT: v = c == 1; break;
    case Q_GE: v = c == 1 || c == 0; break;
    case Q_EQ: v = c == 0; break;
    case Q_NE: v = c != 0; break;
    }
    return put_i(ctx, v, out);
}

/* min or max: the extreme argument (exact choice; a NaN wins; -0.0 is
 * below 0.0), as a double when any argument is one. */
static int minmax(tg_ctx *ctx, int id, unsigned n, tg_term *const *a, int w, tg_term **out)
{
    tg_term *best = a[0];
    for (unsigned i = 1; i < n; i++) {
        if (nkind(best) == K_DBL && isnan(dval(best)))
            break;
        int c = cmp(a[i], best);
        if (c == 0 && nkind(a[i]) == K_DBL && nkind(best) == K_DBL)
            c = signbit(dval(a[i])) == signbit(dval(best)) ? 0 : signbit(dval(a[i])) ? -1 : 1;
        if (c == 2 || (id == Q_MIN ? c < 0 : c == 1))
            best = a[i];
    }
    if (w == K_DBL)
        return put_d(ctx, to_d(best), out);
    *out = best;
    return 1;
}

/* ---- + - * / ------------------------------------------------------------- */

static int fix_fold(tg_ctx *ctx, int id, unsigned n, tg_term *const *a, tg_term **out)
{
    int64_t acc = id == Q_MUL ? 1 : 0;
    for (unsigned i = 0; i < n; i++) {
        int64_t x = tgT_fixval(a[i]);
        int ovf = id == Q_ADD ? __builtin_add_overflow(acc, x, &acc)
                : id == Q_SUB ? (i ? __builtin_sub_overflow(acc, x, &acc) : (acc = x, 0))
                              : __builtin_mul_overflow(acc, x, &acc);
        if (ovf)
            return 0;   /* beyond 64 bits: the exact path */
    }
    return put_i(ctx, acc, out);
}

static int exact_fold(tg_ctx *ctx, int id, unsigned n, tg_term *const *a, tg_term **out)
{
    mpq_t acc, x;
    mpq_init(acc);
    mpq_init(x);
    if (id == Q_MUL)
        mpq_set_ui(acc, 1, 1);
    int rc = 1;
    for (unsigned i = 0; i < n && rc == 1; i++) {
        to_q(a[i], x);
        if (i == 0 && (id == Q_SUB || id == Q_DIV))
            mpq_set(acc, x);
        else if (id == Q_ADD)
            mpq_add(acc, acc, x);
        else if (id == Q_SUB)
            mpq_sub(acc, acc, x);
        else if (id == Q_MUL)
            mpq_mul(acc, acc, x);
        else if (!mpq_sgn(x))
            rc = 0;     /* an exact division by zero */
        else
            mpq_div(acc, acc, x);
    }
    if (rc == 1)
        rc = put_q(ctx, acc, out);
    mpq_clear(acc);
    mpq_clear(x);
    return rc;
}

/* Integers only (no division): GMP integers, no rationals. */
static int int_fold(tg_ctx *ctx, int id, unsigned n, tg_term *const *a, tg_term **out)
{
    mpz_t acc, x;
    mpz_init_set_ui(acc, id == Q_MUL);
    mpz_init(x);
    for (unsigned i = 0; i < n; i++) {
        tg_int_get_mpz(a[i], x);
        if (i == 0 && id == Q_SUB)
            mpz_set(acc, x);
        else if (id == Q_ADD)
            mpz_add(acc, acc, x);
        else if (id == Q_SUB)
            mpz_sub(acc, acc, x);
        else
            mpz_mul(acc, acc, x);
    }
    int rc = put_z(ctx, acc, out);
    mpz_clear(acc);
    mpz_clear(x);
    return rc;
}

static int double_fold(tg_ctx *ctx, int id, unsigned n, tg_term *const *a, tg_term **out)
{
    if (!n)
        return put_i(ctx, id == Q_MUL, out);
    double acc = to_d(a[0]);    /* not the identity: (num:+ -0.0) is -0.0 */
    for (unsigned i = 1; i < n; i++) {
        double x = to_d(a[i]);
        switch (id) {
        case Q_ADD: acc += x; break;
        case Q_SUB: acc -= x; break;
        case Q_MUL: acc *= x; break;
        case Q_DIV: acc /= x; break;
        }
    }
    return put_d(ctx, acc, out);
}

static int fold(tg_ctx *ctx, int id, unsigned n, tg_term *const *a, int w, tg_term **out)
{
    if (w == K_DBL)
        return double_fold(ctx, id, n, a, out);
    if (w == K_FIX && id != Q_DIV) {
        int rc = fix_fold(ctx, id, n, a, out);
        if (rc)
            return rc;
    }
    if (w != K_RAT && id != Q_DIV)
        return int_fold(ctx, id, n, a, out);
    return exact_fold(ctx, id, n, a, out);
}

/* ---- one-argument exact operations ----------------------------------------- */

static int exact_unary(tg_ctx *ctx, int id, tg_term *a, tg_term **out)
{
    if (nkind(a) == K_FIX && (id == Q_NEG || id == Q_ABS)) {
        int64_t v = tgT_fixval(a);      /* |v| < 2^61: no overflow */
        return put_i(ctx, id == Q_NEG || v < 0 ? -v : v, out);
    }
    if (nkind(a) != K_RAT && (id == Q_INT || id == Q_FLOOR || id == Q_CEIL || id == Q_TRUNC ||
                               id == Q_ROUND || id == Q_EXACT)) {
        *out = a;   /* an integer already */
        return 1;
    }
    mpq_t q;
    mpq_init(q);
    tg_rat_get_mpq(a, q);
    int rc;
    if (id == Q_NEG || id == Q_ABS) {
        if (id == Q_NEG)
            mpq_neg(q, q);
        else
            mpq_abs(q, q);
        rc = put_q(ctx, q, out);
    } else if (id == Q_EXACT) {
        *out = a;
        rc = 1;
    } else {
        mpz_t z;
        mpz_init(z);
        const mpz_ptr nu = mpq_numref(q), de = mpq_denref(q);
        if (id == Q_FLOOR)
            mpz_fdiv_q(z, nu, de);
        else if (id == Q_CEIL)
            mpz_cdiv_q(z, nu, de);
        else if (id == Q_ROUND) {
            /* half to even: floor(q + 1/2), one less on an exact odd tie */
            mpz_t t;
            mpz_init(t);
            mpz_mul_2exp(t, nu, 1);
            mpz_add(t, t, de);
            mpz_mul_2exp(z, de, 1);
            int tie = mpz_divisible_p(t, z);
            mpz_fdiv_q(t, t, z);
            if (tie && mpz_odd_p(t))
                mpz_sub_ui(t, t, 1);
            mpz_swap(z, t);
            mpz_clear(t);
        } else
            mpz_tdiv_q(z, nu, de);      /* trunc, int */
        rc = put_z(ctx, z, out);
        mpz_clear(z);
    }
    mpq_clear(q);
    return rc;
}

static int double_unary(tg_ctx *ctx, int id, double x, tg_term **out)
{
    double r;
    switch (id) {
    case Q_NEG: r = -x; break;
    case Q_ABS: r = fabs(x); break;
    case Q_FLOOR: r = floor(x); break;
    case Q_CEIL: r = ceil(x); break;
    case Q_TRUNC: r = trunc(x); break;
    case Q_ROUND: r = nearbyint(x); break;      /* the default mode: half to even */
    case Q_DOUBLE: r = x; break;
    case Q_FLOAT32:     /* the nearest single, as a double; from the midpoint
                         * above FLT_MAX on, infinite (C leaves such a cast undefined) */
        r = fabs(x) >= 0x1.ffffffp127 ? copysign(INFINITY, x) : (double)(float)x;
        break;
    case Q_EXP: r = exp(x); break;
    case Q_LOG: r = log(x); break;
    case Q_LOG1P: r = log1p(x); break;
    case Q_SQRT: r = sqrt(x); break;
    case Q_SIN: r = sin(x); break;
    case Q_COS: r = cos(x); break;
    case Q_TANH: r = tanh(x); break;
    case Q_SIGMOID: r = 1.0 / (1.0 + exp(-x)); break;
    case Q_INT: case Q_EXACT: {
        if (!isfinite(x))
            return 0;   /* no exact value */
        mpq_t q;
        mpq_init(q);
        mpq_set_d(q, id == Q_INT ? trunc(x) : x);
        int rc = put_q(ctx, q, out);
        mpq_clear(q);
        return rc;
    }
    default: return 0;
    }
    return put_d(ctx, r, out);
}

static int unary(tg_ctx *ctx, int id, tg_term *a, tg_term **out)
{
    int k = nkind(a);
    if (id >= Q_EXP || id == Q_DOUBLE || id == Q_FLOAT32 || k == K_DBL)
        return double_unary(ctx, id, to_d(a), out);
    return exact_unary(ctx, id, a, out);
}

/* ---- quotients and remainders -------------------------------------------- */

static int int_division(tg_ctx *ctx, int id, tg_term *a, tg_term *b, tg_term **out)
{
    mpz_t x, y, r;
    mpz_inits(x, y, r, NULL);
    tg_int_get_mpz(a, x);
    tg_int_get_mpz(b, y);
    int rc = 0;
    if (mpz_sgn(y)) {
        switch (id) {
        case Q_QUO: mpz_tdiv_q(r, x, y); break;
        case Q_REM: mpz_tdiv_r(r, x, y); break;
        case Q_FLOORDIV: mpz_fdiv_q(r, x, y); break;
        case Q_MOD: mpz_fdiv_r(r, x, y); break;
        }
        rc = put_z(ctx, r, out);
    }
    mpz_clears(x, y, r, NULL);
    return rc;
}

/* Doubles: rem is C's fmod (the sign of the dividend), mod Python's %
 * (the sign of the divisor); the quotients are the matching (a - r) / b. */
static int double_division(tg_ctx *ctx, int id, double x, double y, tg_term **out)
{
    double r = fmod(x, y);
    if ((id == Q_MOD || id == Q_FLOORDIV) && r != 0 && (r < 0) != (y < 0))
        r += y;
    if (id == Q_REM || id == Q_MOD) {
        if (r == 0)
            r = copysign(0.0, id == Q_MOD ? y : x);
        return put_d(ctx, r, out);
    }
    double q = (x - r) / y;
    if (isfinite(q) && q != 0)
        q = nearbyint(q);   /* (x - r) / y is integral up to rounding */
    return put_d(ctx, q, out);
}

/* ---- powers ----------------------------------------------------------------- */

static int exact_pow(tg_ctx *ctx, tg_term *b, tg_term *e, tg_term **out)
{
    mpq_t q;
    mpz_t ez;
    mpq_init(q);
    mpz_init(ez);
    tg_rat_get_mpq(b, q);
    tg_int_get_mpz(e, ez);
    int rc = 0, neg = mpz_sgn(ez) < 0;
    mpz_abs(ez, ez);
    const mpz_ptr nu = mpq_numref(q), de = mpq_denref(q);
    if (!mpz_sgn(nu)) {
        if (!neg)   /* 0^0 = 1; 0^-k has no value */
            rc = put_i(ctx, mpz_sgn(ez) ? 0 : 1, out);
        goto done;
    }
    if (!mpz_cmp_ui(de, 1) && mpz_cmpabs_ui(nu, 1) == 0) {     /* 1 and -1 */
        rc = put_i(ctx, mpz_sgn(nu) < 0 && mpz_odd_p(ez) ? -1 : 1, out);
        goto done;
    }
    size_t bits = mpz_sizeinbase(nu, 2) + mpz_sizeinbase(de, 2);
    if (!mpz_fits_ulong_p(ez) || mpz_get_ui(ez) > (unsigned long)(TGQ_POW_MAX_BITS / (long)bits))
        goto done;  /* beyond the documented limit: declines */
    unsigned long k = mpz_get_ui(ez);
    mpz_pow_ui(nu, nu, k);
    mpz_pow_ui(de, de, k);
    if (neg)
        mpq_inv(q, q);
    rc = put_q(ctx, q, out);
done:
    mpq_clear(q);
    mpz_clear(ez);
    return rc;
}

static int power(tg_ctx *ctx, tg_term *b, tg_term *e, tg_term **out)
{
    int kb = nkind(b), ke = nkind(e);
    if (kb == K_NONE || ke == K_NONE)
        return 0;
    if (kb != K_DBL && (ke == K_FIX || ke == K_BIG))
        return exact_pow(ctx, b, e, out);
    if (kb != K_DBL && ke == K_RAT)
        return 0;   /* an exact base to a fractional power: not exact */
    return put_d(ctx, pow(to_d(b), to_d(e)), out);
}

/* ---- entry -------------------------------------------------------------------- */

int tgQ_apply(tg_ctx *ctx, int id, unsigned n, tg_term *const *a, tg_term **out)
{
    if (id < 0 || id >= NBUILTINS)
        return 0;
    int w = widest(n, a);
    if (w == K_NONE)
        return 0;
    switch (id) {
    case Q_ADD: case Q_SUB: case Q_MUL: case Q_DIV:
        return fold(ctx, id, n, a, w, out);
    case Q_MIN: case Q_MAX:
        return minmax(ctx, id, n, a, w, out);
    case Q_LT: case Q_LE: case Q_GT: case Q_GE: case Q_EQ: case Q_NE:
        return compare(ctx, id, a[0], a[1], out);
    case Q_QUO: case Q_REM: case Q_FLOORDIV: case Q_MOD:
        if (w == K_DBL)
            return double_division(ctx, id, to_d(a[0]), to_d(a[1]), out);
        return w == K_RAT ? 0 : int_division(ctx, id, a[0], a[1], out);
    case Q_POW:
        return power(ctx, a[0], a[1], out);
    case Q_LIKE:
        /* a[0] as a double when any of the others is not an integer: what
         * a tensor op on those numbers computes (the kernels take every
         * non-integer number for a float) */
        if (widest(n - 1, a + 1) >= K_RAT && nkind(a[0]) != K_DBL)
            return put_d(ctx, to_d(a[0]), out);
        *out = a[0];
        return 1;
    default:
        return unary(ctx, id, a[0], out);
    }
}
