/* dispatch.h - the rules of one op indexed by the heads of its first two
 * arguments (module prefix tgW_disp_), so that a call tries only the
 * rules that can match it.
 *
 * Each argument position p (0 and 1) has the keys the rules' left sides
 * name there: the head symbol of an application pattern, or a constant.
 * A call's argument has the key of its head (an application) or of
 * itself (an atom); a key that no rule names is the class "other".  For
 * each pair of classes the index holds the rules, in their order, whose
 * patterns there are variables or name those keys: every other rule
 * would fail its match on the heads alone.  A ground argument (which the
 * match tests by identity: terms are hash-consed) names the whole term;
 * a call's argument that is that term has its class, which also fits
 * the rules naming its head.
 */
#ifndef TG_DISPATCH_H
#define TG_DISPATCH_H

#include "rset.h"

#define TGW_DISP_POS 2      /* argument positions indexed */
#define TGW_DISP_DEEP 0x80000000u  /* a cell's count flag: it has a tree */
#define TGW_DISP_LEVELS 40  /* the deepest decision tree (levels 0, 1: the table's) */

/* A cell whose rules all name the same heads there but differ deeper
 * (many rules on one op, such as (succ17 (s (s zero))) ... (succ17 (s^16
 * zero))) goes on with a decision tree: each node looks at the key of
 * one more position of the call, an argument or an element of a
 * position already looked at, and keeps the rules, in their order, that
 * name that key there or nothing.  The keys come from the rules' match
 * programs (the checks they make), so a rule left out would fail its
 * match. */
typedef struct tgW_dnode tgW_dnode;
typedef struct tgW_dkid {
    tgW_rule **r;               /* the rules of a class ... */
    uint32_t n;
    const tgW_dnode *sub;       /* ... or the node that looks further */
} tgW_dkid;
struct tgW_dnode {
    int16_t src;                /* -1: the position is argument idx; else element
                                 * idx of the term the node of level src saw */
    uint16_t idx;
    uint16_t lev;               /* its own level: where it keeps its term */
    uint32_t nkeys;             /* keys named there, sorted by address */
    tg_term **keys;
    tgW_dkid *kid;              /* per class; "other" is kid[nkeys] */
    tgW_rule **all;             /* a call without that position: every rule */
    uint32_t nall;
};

typedef struct tgW_disp {
    /* The short form, for an op whose rules name at most two keys, all
     * at the first position, and no tree (most ops of two or three
     * rules): each class's rules at hand, without the table's
     * indirections; "other" is class 2 (and class 1 with one key, whose
     * second key is then d itself, which no argument has). */
    int few;
    tg_term *fk[2];
    uint32_t fn[3];
    tgW_rule *const *fr[3];
    uint32_t npos;                      /* positions indexed (1 or 2) */
    uint32_t whole;                     /* bit p: a key at p is a whole argument */
    uint32_t nkeys[TGW_DISP_POS];       /* keys named at each position */
    tg_term **keys[TGW_DISP_POS];       /* ... class i is keys[p][i], "other" is nkeys[p] */
    uint32_t (*cell)[2];                /* each pair of classes: its rules' start and count
                                         * (TGW_DISP_DEEP set: sub[] has its tree) ... */
    tgW_rule **rules;                   /* ... in this array */
    const tgW_dnode **sub;              /* each cell's decision tree or NULL; NULL: none */
} tgW_disp;

/* The index of the n rules of one op, or NULL when it would not help
 * (a single rule: its match fails on the heads as soon as the index
 * would; nothing named in the arguments, a commutative,
 * associative or variadic op, a left side with a segment at its root) or
 * memory ran out (then the machine tries every rule, as it may). */
tgW_disp *tgW_disp_build(tgW_rule *const *rules, uint32_t n, tg_term *quote);

/* The key of an argument: its head when it is an application. */
static inline tg_term *tgW_disp_key(tg_term *t)
{
    return tgT_ispair(t) ? t->e[0] : t;
}

/* The class of key among the n keys k, sorted by address: its index,
 * n for none. */
static inline uint32_t tgW_disp_find(tg_term *const *k, uint32_t n, tg_term *key)
{
    if (n <= 8) {
        for (uint32_t i = 0; i < n; i++)
            if (k[i] == key)
                return i;
        return n;
    }
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if ((uintptr_t)k[mid] < (uintptr_t)key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && k[lo] == key ? lo : n;
}

/* The class of application t at position p where rules name whole
 * arguments (bit p of d->whole): t's own when it is one, else its head's
 * (out of line: the common case below stays small enough to inline). */
uint32_t tgW_disp_whole(const tgW_disp *d, uint32_t p, tg_term *t);

/* The class of argument t at position p: t itself when a rule names it
 * whole there (a ground application, matched by identity), else its
 * key's. */
static inline uint32_t tgW_disp_class(const tgW_disp *d, uint32_t p, tg_term *t)
{
    if (__builtin_expect(d->whole >> p & 1, 0) && tgT_ispair(t))
        return tgW_disp_whole(d, p, t);
    return tgW_disp_find(d->keys[p], d->nkeys[p], tgW_disp_key(t));
}

/* The rules that decision tree nd leaves for a call of n arguments at
 * args: *nr of them. */
tgW_rule *const *tgW_disp_deep(const tgW_dnode *nd, tg_term *const *args, uint32_t n, uint32_t *nr);

/* The rules that may match a call of n arguments at args: *nr of them. */
static inline tgW_rule *const *tgW_disp_rules(const tgW_disp *d, tg_term *const *args, uint32_t n,
                                              uint32_t *nr)
{
    if (__builtin_expect(d->few, 1)) {
        tg_term *k = n ? tgW_disp_key(args[0]) : (tg_term *)d;
        uint32_t f = k == d->fk[0] ? 0 : k == d->fk[1] ? 1 : 2;
        *nr = d->fn[f];
        return d->fr[f];
    }
    /* two positions at most: unrolled (a call per rewrite comes here) */
    uint32_t c = n ? tgW_disp_class(d, 0, args[0]) : d->nkeys[0];
    if (d->npos == 2)
        c = c * (d->nkeys[1] + 1) + (n > 1 ? tgW_disp_class(d, 1, args[1]) : d->nkeys[1]);
    uint32_t m = d->cell[c][1];
    if (__builtin_expect(m & TGW_DISP_DEEP, 0))
        return tgW_disp_deep(d->sub[c], args, n, nr);
    *nr = m;
    return d->rules + d->cell[c][0];
}

#endif
