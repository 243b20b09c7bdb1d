/* term_access.c - what a term says about itself (its kind, the bytes
 * of a symbol or string, a variable's name and id, groundness, hash) and
 * the total order of terms (tg_compare), which never recurses on the C
 * stack.  Numbers have their accessors and comparison in term_num.c.
 */
#include "term.h"

#include <string.h>

tg_kind tg_kind_of(const tg_term *t)
{
    return tgT_kind(t);
}

const char *tg_kind_name(tg_kind k)
{
    static const char *const names[] = {"nil", "integer", "rational", "double",
                                        "symbol", "string", "variable", "pair"};
    return (unsigned)k < sizeof names / sizeof *names ? names[k] : "unknown";
}

static const char *bytes_of(const tg_term *t, tg_kind kind, size_t *len)
{
    if (!t)
        return NULL;
    if (tgT_kind(t) != kind)
        return NULL;
    if (len)
        *len = ((const tgT_bytes *)t)->len;
    return ((const tgT_bytes *)t)->s;
}

const char *tg_symbol_name(const tg_term *t, size_t *len)
{
    return bytes_of(t, TG_SYMBOL, len);
}
const char *tg_string_bytes(const tg_term *t, size_t *len)
{
    return bytes_of(t, TG_STRING, len);
}
const char *tg_var_name(const tg_term *t, size_t *len)
{
    if (!t)
        return NULL;
    if (tgT_kind(t) != TG_VAR)
        return NULL;
    return bytes_of(((const tgT_var *)t)->name, TG_SYMBOL, len);
}
uint64_t tg_var_id(const tg_term *t)
{
    if (!t)
        return 0;
    return tgT_kind(t) == TG_VAR ? ((const tgT_var *)t)->id : 0;
}

int tg_is_ground(const tg_term *t)
{
    if (!t)
        return 1;
    return tgT_ground(t);
}

uint32_t tg_hash(const tg_term *t)
{
    if (!t)
        return 0;
    return tgT_hash(t);
}

/* ---- the total order ---------------------------------------------- */

static int rank(tg_kind k)
{
    switch (k) {
    case TG_INT: case TG_RAT: case TG_DOUBLE: return 0;
    case TG_SYMBOL: return 1;
    case TG_STRING: return 2;
    case TG_VAR: return 3;
    case TG_NIL: return 4;
    default: return 5;
    }
}

static int sign(int c)
{
    return (c > 0) - (c < 0);
}

static int cmp_bytes(const char *a, size_t an, const char *b, size_t bn)
{
    int c = memcmp(a, b, an < bn ? an : bn);
    return c ? sign(c) : (an > bn) - (an < bn);
}

/* Lists compare element by element.  Two distinct terms differ, so the
 * first pointer-different pair of elements decides, and the comparison
 * descends into it: a loop, never recursion. */
int tg_compare(const tg_term *a, const tg_term *b)
{
    for (;;) {
        if (a == b)
            return 0;
        tg_kind ka = tgT_kind(a), kb = tgT_kind(b);
        int ra = rank(ka), rb = rank(kb);
        if (ra != rb)
            return ra < rb ? -1 : 1;
        switch (ka) {
        case TG_INT: case TG_RAT: case TG_DOUBLE:
            return tgT_num_cmp(a, b);
        case TG_SYMBOL: case TG_STRING: {
            const tgT_bytes *x = (const tgT_bytes *)a, *y = (const tgT_bytes *)b;
            return cmp_bytes(x->s, x->len, y->s, y->len);
        }
        case TG_VAR: {
            const tgT_var *x = (const tgT_var *)a, *y = (const tgT_var *)b;
            if (x->name != y->name)
                return tg_compare(x->name, y->name);    /* symbols: no descent */
            if ((a->h.flags ^ b->h.flags) & TGT_LVAR)  /* ?x.5 and a runtime x #5 */
                return (a->h.flags & TGT_LVAR) ? 1 : -1;
            return x->id < y->id ? -1 : 1;
        }
        case TG_NIL:
            return 0;
        default:
            break;
        }
        tg_iter ia, ib;
        tg_iter_init(&ia, a);
        tg_iter_init(&ib, b);
        for (;;) {
            tg_term *x = tgT_iter_next(&ia), *y = tgT_iter_next(&ib);
            if (!x || !y) {
                if (x)      /* b ended: its tail (not a pair) < a's rest */
                    return 1;
                if (y)
                    return -1;
                a = ia.node;    /* both ended: compare the final tails */
                b = ib.node;
                break;
            }
            if (x != y) {
                a = x;
                b = y;
                break;
            }
        }
    }
}
