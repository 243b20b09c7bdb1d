/* printer.c - the canonical text of terms: tg_print, tg_print_shared,
 * tg_fprint and the internal entry points of printer.h.
 *
 * The output is chosen so that the reader gives back the very same term
 * (pointer-equal, terms being hash-consed): every atom has one spelling,
 * and symbols or variable names that would read as something else are
 * written between bars.
 *
 * Nothing here recurses on the C stack, because terms may nest millions
 * of levels deep.  The explicit stacks, the shared-subterm table and the
 * output buffer live in malloc'd memory, which the collector does not
 * scan; that is safe because every term they point to is a subterm of the
 * root, and each entry point keeps the root visible to the collector until
 * it returns.
 */
#include "printer.h"
#include "term.h"

#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* tg_fprint hands the buffer to stdio each time it grows past this */
#define FLUSH_AT ((size_t)1 << 16)
/* escaped text is produced in pieces of this many input bytes, so that a
 * huge string does not need four times its size at once */
#define ESC_CHUNK ((size_t)1 << 14)

/* ---- character classes -------------------------------------------- */

enum {
    C_SYMBAD = 1,   /* keeps a symbol from being printed bare */
    C_STRESC = 2,   /* escaped inside "..." */
    C_QESC = 4      /* escaped inside |...| */
};

static const unsigned char cls[256] = {
    7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
    7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
    1, 0, 3, 0, 0, 0, 0, 1, 1, 1, 0, 0, 1, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 6, 1, 0, 0,
    1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 7,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
};

static const char hexdig[] = "0123456789abcdef";

static int is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

/* ---- term access ---------------------------------------------------- */

/* The printer touches every node, and a function call per element was a
 * large share of its time, so it reads terms through the inline layout of
 * term.h (tgT_iter_next). */

static inline const char *bytes_of(const tg_term *t, size_t *len)
{
    *len = ((const tgT_bytes *)t)->len;
    return ((const tgT_bytes *)t)->s;
}

/* ---- printer state ------------------------------------------------ */

/* One open list: where its elements are up to. */
typedef struct frame {
    tg_iter it;
} frame;

/* Table of the pairs met while counting references.  v is NS_ONCE for one
 * reference, NS_SHARED for two or more, and the name number once the
 * output has used the name. */
typedef struct nslot {
    const tg_term *key;
    size_t v;
} nslot;

#define NS_ONCE ((size_t)0)
#define NS_SHARED SIZE_MAX

typedef struct nameset {
    nslot *slots;
    size_t mask;
    size_t count;
} nameset;

typedef struct printer {
    tgB_buf *b;
    FILE *f;            /* NULL, or the stream tg_fprint writes to */
    size_t limit;       /* flush to f once b->len reaches this */
    int ioerr;
    frame *stk;         /* local, or malloc'd once deeper than that */
    size_t sp, cap;
    int shared;         /* print named pairs as *N */
    nameset ns;
    const tg_term **defs;   /* named pairs in the order of their numbers */
    size_t ndefs, capdefs;
    frame local[32];    /* spares small terms a malloc */
} printer;

static void p_init(printer *p, tgB_buf *b, FILE *f)
{
    memset(p, 0, offsetof(printer, local));
    p->b = b;
    p->f = f;
    p->limit = f ? FLUSH_AT : SIZE_MAX;
    p->stk = p->local;
    p->cap = sizeof p->local / sizeof *p->local;
}

static void p_done(printer *p)
{
    if (p->stk != p->local)
        free(p->stk);
    free(p->ns.slots);
    free(p->defs);
    p->stk = NULL;
    p->ns.slots = NULL;
    p->defs = NULL;
}

/* Any failure spoils the whole text, so it is recorded as the buffer's
 * out-of-memory flag: appends stop and the result is dropped. */
static void p_fail(printer *p)
{
    tgB_fail(p->b);
}

static int p_broken(const printer *p)
{
    return p->b->oom || p->ioerr;
}

static void p_flush(printer *p)
{
    tgB_buf *b = p->b;

    if (!p->f || b->oom)
        return;
    if (!p->ioerr && b->len && fwrite(b->data, 1, b->len, p->f) != b->len)
        p->ioerr = 1;
    tgB_reset(b);
}

static inline void p_maybe_flush(printer *p)
{
    if (p->b->len >= p->limit)
        p_flush(p);
}

/* ---- atoms -------------------------------------------------------- */

static void put_u64(tgB_buf *b, uint64_t u, int neg)
{
    char tmp[24], *e = tmp + sizeof tmp, *q = e;

    do {
        *--q = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (neg)
        *--q = '-';
    tgB_append(b, q, (size_t)(e - q));
}

static void put_int(tgB_buf *b, const tg_term *t)
{
    int64_t v;
    mpz_t z;

    if (tgT_isfix(t)) {
        v = tgT_fixval(t);
        put_u64(b, v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v, v < 0);
        return;
    }
    if (tg_int_get(t, &v) == 0) {
        put_u64(b, v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v, v < 0);
        return;
    }
    mpz_init(z);
    if (tg_int_get_mpz(t, z) == 0) {
        /* sizeinbase may count one digit too many; strlen settles it */
        char *d = tgB_reserve(b, mpz_sizeinbase(z, 10) + 2);
        if (d) {
            mpz_get_str(d, 10, z);
            tgB_commit(b, strlen(d));
        }
    }
    mpz_clear(z);
}

static void put_rat(tgB_buf *b, const tg_term *t)
{
    mpq_t q;

    mpq_init(q);
    if (tg_rat_get_mpq(t, q) == 0) {
        char *d = tgB_reserve(b, mpz_sizeinbase(mpq_numref(q), 10)
                                 + mpz_sizeinbase(mpq_denref(q), 10) + 3);
        if (d) {
            mpq_get_str(d, 10, q);
            tgB_commit(b, strlen(d));
        }
    }
    mpq_clear(q);
}

static int same_bits(double a, double b)
{
    uint64_t x, y;

    memcpy(&x, &a, sizeof x);
    memcpy(&y, &b, sizeof y);
    return x == y;
}

/* Significant digits in a %g text: from the first non-zero digit to the
 * last non-zero digit of the part before the exponent. */
static int sig_digits(const char *s)
{
    int k = 0, zeros = 0;

    for (; *s && *s != 'e' && *s != 'E'; s++) {
        if (*s == '0') {
            if (k)
                zeros++;
        } else if (is_digit((unsigned char)*s)) {
            k += zeros + 1;
            zeros = 0;
        }
    }
    return k ? k : 1;
}

static int try_prec(char *tmp, size_t size, int prec, double v)
{
    snprintf(tmp, size, "%.*g", prec, v);
    return same_bits(strtod(tmp, NULL), v);
}

#if FLT_EVAL_METHOD == 0
/* The powers of ten that doubles hold exactly. */
static const double pow10_exact[] = {
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22
};

/* Find m and j with m * 10^-j reading back as a (normal, positive), m
 * below 10^15.  Dividing the exact integer m by the exact power of ten
 * rounds once, to nearest, just as strtod rounds the decimal, so the test
 * is exact; it needs double arithmetic without excess precision. */
static int short_decimal(double a, uint64_t *m, int *j)
{
    int k;

    for (k = 0; k < (int)(sizeof pow10_exact / sizeof *pow10_exact); k++) {
        double s = a * pow10_exact[k], r;
        if (s >= 1e15)
            return 0;
        r = floor(s + 0.5);
        if (r / pow10_exact[k] == a) {
            *m = (uint64_t)r;
            *j = k;
            return 1;
        }
    }
    return 0;
}

/* m * 10^-j with the significant digits of m: positional (with ".0" when
 * it would have no point) from 1e-4 up, which in this range (below 1e15)
 * is what people read best (100.0, not %g's 1e+02, as Python's repr); an
 * exponent below 1e-4. */
static size_t format_decimal(char *out, int neg, uint64_t m, int j)
{
    char dig[24], *e = dig + sizeof dig, *q = e;
    int nd, k, x, i;
    size_t n = 0;

    do {
        *--q = (char)('0' + m % 10);
        m /= 10;
    } while (m);
    nd = (int)(e - q);
    for (k = nd; k > 1 && q[k - 1] == '0'; k--)
        ;
    x = nd - 1 - j;     /* the exponent of the leading digit */
    if (neg)
        out[n++] = '-';
    if (x < -4) {
        out[n++] = q[0];
        if (k > 1) {
            out[n++] = '.';
            memcpy(out + n, q + 1, (size_t)k - 1);
            n += (size_t)k - 1;
        }
        out[n++] = 'e';
        out[n++] = x < 0 ? '-' : '+';
        if (x < 0)
            x = -x;
        if (x >= 100)
            out[n++] = (char)('0' + x / 100);
        out[n++] = (char)('0' + x / 10 % 10);
        out[n++] = (char)('0' + x % 10);
    } else if (x >= 0) {
        memcpy(out + n, q, (size_t)x + 1);
        n += (size_t)x + 1;
        out[n++] = '.';
        if (k > x + 1) {
            memcpy(out + n, q + x + 1, (size_t)(k - x - 1));
            n += (size_t)(k - x - 1);
        } else {
            out[n++] = '0';
        }
    } else {
        out[n++] = '0';
        out[n++] = '.';
        for (i = 0; i < -x - 1; i++)
            out[n++] = '0';
        memcpy(out + n, q, (size_t)k);
        n += (size_t)k;
    }
    out[n] = '\0';
    return n;
}
#endif

size_t tgP_format_double(char *out, double v)
{
    char tmp[48];
    const char *s;
    size_t n = 0;
    int prec = 0, found = 0, dotted = 0;
    double a;

    if (isnan(v)) {
        memcpy(out, "nan", 4);
        return 3;
    }
    if (isinf(v)) {
        if (v < 0) {
            memcpy(out, "-inf", 5);
            return 4;
        }
        memcpy(out, "inf", 4);
        return 3;
    }
    if (v == 0) {
        if (signbit(v)) {
            memcpy(out, "-0.0", 5);
            return 4;
        }
        memcpy(out, "0.0", 4);
        return 3;
    }
    /* The rule is "the first precision 1..17 whose %g reads back", which
     * costs up to 17 conversions each way.  For normal numbers the answer
     * is known sooner: any decimal of <= 15 digits survives a trip through
     * a double (DBL_DIG), so at most one such decimal reads back as v,
     * and it is what %.15g gives, trailing zeros aside; the first
     * precision that works is its number of significant digits.  When no
     * decimal of <= 15 digits reads back, none of the precisions <= 15
     * does.  Subnormals have fewer digits of precision and take the long
     * way. */
    a = fabs(v);
#if FLT_EVAL_METHOD == 0
    if (a >= 1e-5 && a < 1e15) {
        uint64_t m;
        int j;
        /* every decimal of <= 15 digits in this range is some m * 10^-j
         * that short_decimal tries */
        if (short_decimal(a, &m, &j))
            return format_decimal(out, v < 0, m, j);
        prec = 15;
    } else
#endif
    if (a >= DBL_MIN) {
        if (try_prec(tmp, sizeof tmp, 15, v)) {
            prec = sig_digits(tmp);
            found = try_prec(tmp, sizeof tmp, prec, v);
            if (!found)
                prec = 0;   /* cannot happen with a correct libc; be safe */
        } else {
            prec = 15;
        }
    }
    while (!found && prec < 16)
        found = try_prec(tmp, sizeof tmp, ++prec, v);
    if (!found)     /* 17 digits always read back */
        snprintf(tmp, sizeof tmp, "%.17g", v);
    /* the decimal point follows the C locale whatever the program set */
    for (s = tmp; *s; ) {
        unsigned char c = (unsigned char)*s;
        if (is_digit(c) || c == '-' || c == '+' || c == 'e') {
            if (c == 'e')
                dotted = 1;
            out[n++] = (char)c;
            s++;
        } else {
            out[n++] = '.';
            dotted = 1;
            while (*s && !is_digit((unsigned char)*s) && *s != 'e')
                s++;
        }
    }
    if (!dotted) {
        out[n++] = '.';
        out[n++] = '0';
    }
    out[n] = '\0';
    return n;
}

void tgP_double(tgB_buf *b, double v)
{
    char *d = tgB_reserve(b, 40);

    if (d)
        tgB_commit(b, tgP_format_double(d, v));
}

/* Write n bytes of s escaped for the class bit mask. */
static char *escape_into(char *d, const unsigned char *s, size_t n, unsigned mask)
{
    size_t i;

    for (i = 0; i < n; i++) {
        unsigned c = s[i];
        if (!(cls[c] & mask)) {
            *d++ = (char)c;
            continue;
        }
        *d++ = '\\';
        switch (c) {
        case '\n': *d++ = 'n'; break;
        case '\t': *d++ = 't'; break;
        case '\r': *d++ = 'r'; break;
        case '"': case '\\': case '|': *d++ = (char)c; break;
        default:
            *d++ = 'x';
            *d++ = hexdig[c >> 4];
            *d++ = hexdig[c & 15];
            break;
        }
    }
    return d;
}

static void put_quoted(printer *p, const char *text, size_t n, char quote, unsigned mask)
{
    const unsigned char *s = (const unsigned char *)text;
    tgB_buf *b = p->b;

    tgB_putc(b, quote);
    do {
        size_t k = n < ESC_CHUNK ? n : ESC_CHUNK;
        char *d = tgB_reserve(b, 4 * k + 1);
        if (!d)
            return;
        tgB_commit(b, (size_t)(escape_into(d, s, k, mask) - d));
        s += k;
        n -= k;
        if (n)
            p_maybe_flush(p);
    } while (n && !p_broken(p));
    tgB_putc(b, quote);
}

/* Would the reader take this text for a number?  Integers, n/d, decimal
 * and exponent forms, and the signed or unsigned inf and nan. */
static int looks_numeric(const unsigned char *s, size_t n)
{
    size_t i = 0, d0, nd;

    if (n && (s[0] == '+' || s[0] == '-'))
        i = 1;
    if (n - i == 3 && (memcmp(s + i, "inf", 3) == 0 || memcmp(s + i, "nan", 3) == 0))
        return 1;
    d0 = i;
    while (i < n && is_digit(s[i]))
        i++;
    nd = i - d0;
    if (i == n)
        return nd > 0;
    if (s[i] == '/') {
        if (!nd)
            return 0;
        d0 = ++i;
        while (i < n && is_digit(s[i]))
            i++;
        return i == n && i > d0;
    }
    if (s[i] == '.') {
        d0 = ++i;
        while (i < n && is_digit(s[i]))
            i++;
        if (!nd && i == d0)
            return 0;
        if (i == n)
            return 1;
    } else if (!nd) {
        return 0;
    }
    if (s[i] != 'e' && s[i] != 'E')
        return 0;
    i++;
    if (i < n && (s[i] == '+' || s[i] == '-'))
        i++;
    d0 = i;
    while (i < n && is_digit(s[i]))
        i++;
    return i == n && i > d0;
}

/* The checks for a bare symbol other than its characters: len > 0 and no
 * byte of class C_SYMBAD are the caller's. */
static int bare_start(const unsigned char *s, size_t len)
{
    switch (s[0]) {
    case '#':
        /* #| and #; open comments */
        return !(len >= 2 && (s[1] == '|' || s[1] == ';'));
    case '?':
        /* ?x is a variable; the lone ? is not */
        return len == 1;
    case '.':
        if (len == 1)
            return 0;
        break;
    case '+': case '-': case 'i': case 'n':
        break;
    case 0xEF:
        /* a UTF-8 byte-order mark at the start of a text is skipped by
         * the reader (tgR_init), so it must not start a bare symbol */
        return !(len >= 3 && s[1] == 0xBB && s[2] == 0xBF);
    default:
        if (!is_digit(s[0]))
            return 1;
        break;
    }
    return !looks_numeric(s, len);
}

int tgP_symbol_is_bare(const char *name, size_t len)
{
    const unsigned char *s = (const unsigned char *)name;
    size_t i;

    if (len == 0)
        return 0;
    for (i = 0; i < len; i++)
        if (cls[s[i]] & C_SYMBAD)
            return 0;
    return bare_start(s, len);
}

static void put_symbol(printer *p, const char *name, size_t len)
{
    const unsigned char *s = (const unsigned char *)name;
    tgB_buf *b = p->b;
    unsigned bad = 0;
    size_t i;
    char *d;

    /* copy while checking, the common case being a bare name */
    if (len && (d = tgB_reserve(b, len)) != NULL) {
        for (i = 0; i < len; i++) {
            bad |= cls[s[i]];
            d[i] = (char)s[i];
        }
        if (!(bad & C_SYMBAD) && bare_start(s, len)) {
            tgB_commit(b, len);
            return;
        }
    }
    put_quoted(p, name, len, '|', C_QESC);
}

/* Does the name end in "." and a canonical decimal, which the reader would
 * take for an id? */
static int has_id_suffix(const char *name, size_t len)
{
    size_t i = len;

    while (i > 0 && is_digit((unsigned char)name[i - 1]))
        i--;
    if (i == len || i == 0 || name[i - 1] != '.')
        return 0;
    return len - i == 1 || name[i] != '0';
}

static void put_var(printer *p, const char *name, size_t len, uint64_t id)
{
    tgB_buf *b = p->b;

    tgB_putc(b, '?');
    if (len && name[0] != '?' && tgP_symbol_is_bare(name, len))
        tgB_append(b, name, len);
    else
        put_quoted(p, name, len, '|', C_QESC);
    if (id) {
        tgB_putc(b, '.');
        put_u64(b, id, 0);
    } else if (has_id_suffix(name, len)) {
        tgB_append(b, ".0", 2);
    }
}

static void put_atom(printer *p, const tg_term *t)
{
    tgB_buf *b = p->b;
    const char *s;
    size_t len;

    switch (tgT_kind(t)) {
    case TG_NIL:
        tgB_append(b, "()", 2);
        break;
    case TG_INT:
        put_int(b, t);
        break;
    case TG_RAT:
        put_rat(b, t);
        break;
    case TG_DOUBLE:
        tgP_double(b, ((const tgT_dbl *)t)->v);
        break;
    case TG_SYMBOL:
        s = bytes_of(t, &len);
        put_symbol(p, s, len);
        break;
    case TG_STRING:
        s = bytes_of(t, &len);
        put_quoted(p, s, len, '"', C_STRESC);
        break;
    case TG_VAR:
        s = bytes_of(((const tgT_var *)t)->name, &len);
        put_var(p, s, len, ((const tgT_var *)t)->id);
        break;
    default:
        /* pairs are opened by put_term; anything else is a broken term */
        p_fail(p);
        break;
    }
}

/* ---- lists -------------------------------------------------------- */

/* The reader macro for (quote x), (quasiquote x), (unquote x) and
 * (unquote-splicing x), with *arg set to x; NULL for any other pair. */
static const char *quote_prefix(const tg_term *t, const tg_term **arg)
{
    const tg_term *h = t->e[0], *x;
    const char *s, *pre;
    size_t n;
    tg_iter it;

    if (tgT_kind(h) != TG_SYMBOL)
        return NULL;
    s = bytes_of(h, &n);
    switch (n) {
    case 5:
        if (memcmp(s, "quote", 5) != 0)
            return NULL;
        pre = "'";
        break;
    case 7:
        if (memcmp(s, "unquote", 7) != 0)
            return NULL;
        pre = ",";
        break;
    case 10:
        if (memcmp(s, "quasiquote", 10) != 0)
            return NULL;
        pre = "`";
        break;
    case 16:
        if (memcmp(s, "unquote-splicing", 16) != 0)
            return NULL;
        pre = ",@";
        break;
    default:
        return NULL;
    }
    tg_iter_init(&it, t);
    tgT_iter_next(&it);
    x = tgT_iter_next(&it);
    if (!x || tgT_iter_next(&it) || tgT_kind(it.node) != TG_NIL)
        return NULL;
    if (pre[0] == ',' && !pre[1] && tgT_kind(x) == TG_SYMBOL) {
        /* ,@foo would read as unquote-splicing */
        s = bytes_of(x, &n);
        if (n && s[0] == '@' && tgP_symbol_is_bare(s, n))
            return NULL;
    }
    *arg = x;
    return pre;
}

static int push_frame(printer *p, const tg_term *list)
{
    frame *fr;

    if (p->sp == p->cap) {
        size_t cap = 2 * p->cap;
        frame *stk;
        if (cap > SIZE_MAX / sizeof *stk)
            return -1;
        if (p->stk == p->local) {
            stk = malloc(cap * sizeof *stk);
            if (stk)
                memcpy(stk, p->local, sizeof p->local);
        } else {
            stk = realloc(p->stk, cap * sizeof *stk);
        }
        if (!stk)
            return -1;
        p->stk = stk;
        p->cap = cap;
    }
    fr = &p->stk[p->sp++];
    tg_iter_init(&fr->it, list);
    return 0;
}

static size_t name_of(printer *p, const tg_term *t);

/* Print t.  In the shared display a named pair prints as *N, except the
 * pair t itself when body is set (it is the right side of its own
 * definition). */
static void put_term(printer *p, const tg_term *t, int body)
{
    tgB_buf *b = p->b;
    size_t base = p->sp;

    for (;;) {
        /* down through t until an atom or a name has been printed */
        for (;;) {
            const tg_term *x;
            const char *pre;

            if (!tgT_ispair(t)) {
                put_atom(p, t);
                break;
            }
            if (p->shared && !body) {
                size_t k = name_of(p, t);
                if (k) {
                    tgB_putc(b, '*');
                    put_u64(b, k, 0);
                    break;
                }
            }
            body = 0;
            pre = quote_prefix(t, &x);
            if (pre) {
                tgB_puts(b, pre);
                t = x;
                continue;
            }
            if (push_frame(p, t) != 0) {
                p_fail(p);
                p->sp = base;
                return;
            }
            tgB_putc(b, '(');
            p_maybe_flush(p);
            t = tgT_iter_next(&p->stk[p->sp - 1].it);
            if (!t) {
                /* a pair always has a first element */
                p_fail(p);
                p->sp = base;
                return;
            }
        }
        /* up until an open list has another element */
        for (;;) {
            frame *fr;
            const tg_term *x, *tail;

            if (p->sp == base)
                return;
            fr = &p->stk[p->sp - 1];
            x = tgT_iter_next(&fr->it);
            if (x) {
                tgB_putc(b, ' ');
                t = x;
                break;
            }
            /* the final tail is never a pair, so it needs no frame */
            tail = fr->it.node;
            if (tgT_kind(tail) != TG_NIL) {
                tgB_append(b, " . ", 3);
                put_atom(p, tail);
            }
            tgB_putc(b, ')');
            /* after a failure appends do nothing; stop at the next list end
             * rather than test at every element */
            if (--p->sp > base && p_broken(p)) {
                p->sp = base;
                return;
            }
        }
        p_maybe_flush(p);
    }
}

/* ---- shared subterms ---------------------------------------------- */

static size_t ns_hash(const tg_term *t)
{
    uint64_t x = (uint64_t)(uintptr_t)t;

    x ^= x >> 31;
    x *= UINT64_C(0x9e3779b97f4a7c15);
    x ^= x >> 29;
    return (size_t)x;
}

/* The slot of t, or the empty slot where it would go. */
static nslot *ns_slot(nameset *ns, const tg_term *t)
{
    size_t i = ns_hash(t) & ns->mask;

    while (ns->slots[i].key && ns->slots[i].key != t)
        i = (i + 1) & ns->mask;
    return &ns->slots[i];
}

static int ns_grow(nameset *ns)
{
    size_t cap = ns->slots ? 2 * (ns->mask + 1) : 256, i;
    nslot *old = ns->slots, *slots;
    size_t oldcap = old ? ns->mask + 1 : 0;

    if (cap > SIZE_MAX / sizeof *slots)
        return -1;
    slots = calloc(cap, sizeof *slots);
    if (!slots)
        return -1;
    ns->slots = slots;
    ns->mask = cap - 1;
    for (i = 0; i < oldcap; i++)
        if (old[i].key)
            *ns_slot(ns, old[i].key) = old[i];
    free(old);
    return 0;
}

static size_t name_of(printer *p, const tg_term *t)
{
    nslot *s = ns_slot(&p->ns, t);

    if (s->key != t || s->v == NS_ONCE)
        return 0;
    if (s->v == NS_SHARED) {
        /* first use in the text: the next number, and a definition due */
        if (p->ndefs == p->capdefs) {
            size_t cap = p->capdefs ? 2 * p->capdefs : 16;
            const tg_term **defs;
            if (cap > SIZE_MAX / sizeof *defs)
                goto fail;
            defs = realloc(p->defs, cap * sizeof *defs);
            if (!defs)
                goto fail;
            p->defs = defs;
            p->capdefs = cap;
        }
        p->defs[p->ndefs++] = t;
        s->v = p->ndefs;
    }
    return s->v;
fail:
    /* still print something sensible; the failure voids the result */
    p_fail(p);
    return 0;
}

/* Count the references to every pair of the DAG below root, visiting each
 * distinct pair once (the unfolded tree may be exponentially larger).
 * Returns how many pairs have two or more, or -1 when out of memory. */
static long long count_refs(printer *p, const tg_term *root)
{
    const tg_term **todo;
    size_t n = 0, cap = 256;
    long long shared = 0;

    todo = malloc(cap * sizeof *todo);
    if (!todo || ns_grow(&p->ns) != 0) {
        free(todo);
        return -1;
    }
    ns_slot(&p->ns, root)->key = root;
    p->ns.count = 1;
    todo[n++] = root;
    while (n) {
        const tg_term *t = todo[--n], *x;
        tg_iter it;

        tg_iter_init(&it, t);
        while ((x = tgT_iter_next(&it)) != NULL) {
            nslot *s;

            if (!tgT_ispair(x))
                continue;
            s = ns_slot(&p->ns, x);
            if (s->key) {
                if (s->v == NS_ONCE) {
                    s->v = NS_SHARED;
                    shared++;
                }
                continue;
            }
            s->key = x;
            s->v = NS_ONCE;
            if (n == cap) {
                const tg_term **nt;
                if (cap > SIZE_MAX / 2 / sizeof *nt)
                    goto fail;
                nt = realloc(todo, 2 * cap * sizeof *nt);
                if (!nt)
                    goto fail;
                todo = nt;
                cap *= 2;
            }
            todo[n++] = x;
            /* keep the load under 2/3 so probes stay short */
            if (++p->ns.count * 3 > 2 * (p->ns.mask + 1) && ns_grow(&p->ns) != 0)
                goto fail;
        }
    }
    free(todo);
    return shared;
fail:
    free(todo);
    return -1;
}

static void put_shared(printer *p, const tg_term *t)
{
    tgB_buf *b = p->b;
    long long nshared;
    size_t i;

    if (!tgT_ispair(t)) {
        put_term(p, t, 0);
        return;
    }
    nshared = count_refs(p, t);
    if (nshared < 0) {
        p_fail(p);
        return;
    }
    p->shared = nshared > 0;
    put_term(p, t, 1);
    /* definitions may name further pairs, which join the end of the list */
    for (i = 0; i < p->ndefs && !p_broken(p); i++) {
        tgB_append(b, i ? ", *" : " where *", i ? 3 : 8);
        put_u64(b, i + 1, 0);
        tgB_append(b, " = ", 3);
        put_term(p, p->defs[i], 1);
        p_maybe_flush(p);
    }
}

/* ---- entry points ------------------------------------------------- */

/* The root pointer is read through a volatile copy at the end of every
 * entry point so that it stays on the stack, where the collector sees it,
 * while the malloc'd structures above point into the term. */
#define KEEP_ROOT(t) const tg_term *volatile keep_root_ = (t)
#define RELEASE_ROOT() ((void)keep_root_)

int tgP_print_buf(tgB_buf *b, const tg_term *t)
{
    printer p;
    KEEP_ROOT(t);

    if (!t)
        return -1;
    p_init(&p, b, NULL);
    put_term(&p, t, 0);
    p_done(&p);
    RELEASE_ROOT();
    return b->oom ? -1 : 0;
}

int tgP_print_shared_buf(tgB_buf *b, const tg_term *t)
{
    printer p;
    KEEP_ROOT(t);

    if (!t)
        return -1;
    p_init(&p, b, NULL);
    put_shared(&p, t);
    p_done(&p);
    RELEASE_ROOT();
    return b->oom ? -1 : 0;
}

int tgP_print_file(FILE *f, const tg_term *t, int shared)
{
    tgB_buf b = TGB_INIT;
    printer p;
    int rc;
    KEEP_ROOT(t);

    if (!f || !t)
        return -1;
    p_init(&p, &b, f);
    if (tgB_grow(&b, FLUSH_AT) != 0) {
        tgB_free(&b);
        return -1;
    }
    if (shared)
        put_shared(&p, t);
    else
        put_term(&p, t, 0);
    p_flush(&p);
    rc = p_broken(&p) ? -1 : 0;
    p_done(&p);
    tgB_free(&b);
    RELEASE_ROOT();
    return rc;
}

void tgP_symbol(tgB_buf *b, const char *name, size_t len)
{
    printer p;

    p_init(&p, b, NULL);
    put_symbol(&p, name, len);
}

void tgP_string(tgB_buf *b, const char *bytes, size_t len)
{
    printer p;

    p_init(&p, b, NULL);
    put_quoted(&p, bytes, len, '"', C_STRESC);
}

void tgP_var(tgB_buf *b, const char *name, size_t len, uint64_t id)
{
    printer p;

    p_init(&p, b, NULL);
    put_var(&p, name, len, id);
}

char *tg_print(const tg_term *t, size_t *len)
{
    tgB_buf b = TGB_INIT;

    if (tgP_print_buf(&b, t) != 0) {
        tgB_free(&b);
        if (len)
            *len = 0;
        return NULL;
    }
    return tgB_take(&b, len);
}

char *tg_print_shared(const tg_term *t, size_t *len)
{
    tgB_buf b = TGB_INIT;

    if (tgP_print_shared_buf(&b, t) != 0) {
        tgB_free(&b);
        if (len)
            *len = 0;
        return NULL;
    }
    return tgB_take(&b, len);
}

int tg_fprint(FILE *f, const tg_term *t)
{
    return tgP_print_file(f, t, 0);
}
