/* dispatch.c - building the index of an op's rules by the heads of its
 * first arguments (see dispatch.h).  Keys come from the left sides as
 * written, so the index holds whatever the match programs check.
 */
#include "dispatch.h"

#include <gc/gc.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CELLS 1024      /* two positions only when the table stays small */

/* The key a left-side argument names, NULL for none (it matches any
 * head: a variable, a quoted term, a list with a variable head). */
static tg_term *pat_key(tg_term *p, tg_term *quote)
{
    tg_kind k = tg_kind_of(p);
    if (k == TG_VAR)
        return NULL;
    if (k != TG_PAIR)
        return p;
    tg_term *h = tg_car(p);
    return tg_kind_of(h) == TG_SYMBOL && h != quote ? h : NULL;
}

/* The keys of rule r at the positions (NULL: any); -1 when its left
 * side has a segment at its root. */
static int rule_keys(const tgW_rule *r, tg_term *quote, tg_term **key)
{
    for (int p = 0; p < TGW_DISP_POS; p++)
        key[p] = NULL;
    if (!tgT_ispair(r->lhs))
        return 0;   /* a nullary op's bare symbol */
    tg_iter it = {r->lhs, 1};
    int p = 0;
    for (tg_term *x; (x = tgT_iter_next(&it));)
        if (p < TGW_DISP_POS)
            key[p++] = pat_key(x, quote);
    return it.node == TGT_NIL ? 0 : -1;
}

static int by_address(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)*(tg_term *const *)a, y = (uintptr_t)*(tg_term *const *)b;
    return x < y ? -1 : x > y;
}

/* The distinct keys of position p, sorted, into d; -1 out of memory. */
static int collect(tgW_disp *d, int p, tg_term **const *keys, uint32_t n)
{
    tg_term **k = GC_MALLOC((n ? n : 1) * sizeof *k);
    if (!k)
        return -1;
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; i++) {
        tg_term *x = keys[i][p];
        uint32_t j = 0;
        while (j < m && k[j] != x)
            j++;
        if (x && j == m)
            k[m++] = x;
    }
    qsort(k, m, sizeof *k, by_address);
    d->keys[p] = k;
    d->nkeys[p] = m;
    return 0;
}

/* Whether a rule with key `want` at a position fits class c there. */
static int fits(const tgW_disp *d, int p, const tg_term *want, uint32_t c)
{
    return !want || (c < d->nkeys[p] && d->keys[p][c] == want);
}

/* The rules, in order, that fit the classes of cell c: their count, and
 * into out (at d->rules + its start) unless NULL. */
static uint32_t cell_fill(tgW_disp *d, uint32_t c, tgW_rule *const *rules, tg_term **const *keys,
                          uint32_t n, tgW_rule **out)
{
    uint32_t cls[TGW_DISP_POS], rest = c;
    for (int p = (int)d->npos - 1; p >= 0; p--) {
        cls[p] = rest % (d->nkeys[p] + 1);
        rest /= d->nkeys[p] + 1;
    }
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; i++) {
        int ok = 1;
        for (uint32_t p = 0; p < d->npos; p++)
            ok &= fits(d, (int)p, keys[i][p], cls[p]);
        if (ok && out)
            out[m] = rules[i];
        m += (uint32_t)ok;
    }
    if (out) {
        d->cell[c][0] = (uint32_t)(out - d->rules);
        d->cell[c][1] = m;
    }
    return m;
}

/* Every cell's rules, one array for all. */
static int fill(tgW_disp *d, tgW_rule *const *rules, tg_term **const *keys, uint32_t n,
                uint32_t ncells)
{
    /* the cells' sizes are counted in a first pass, filled in the second */
    size_t total = 0;
    d->cell = GC_MALLOC_ATOMIC(ncells * sizeof *d->cell);
    if (!d->cell)
        return -1;
    for (int pass = 0; pass < 2; pass++) {
        if (pass && !(d->rules = GC_MALLOC((total ? total : 1) * sizeof *d->rules)))
            return -1;
        total = 0;
        for (uint32_t c = 0; c < ncells; c++)
            total += cell_fill(d, c, rules, keys, n, pass ? d->rules + total : NULL);
    }
    return 0;
}

tgW_disp *tgW_disp_build(tgW_rule *const *rules, uint32_t n, tg_term *quote)
{
    if (n < 3 || (rules[0]->op->flags & (TGW_ASSOC | TGW_COMM | TGW_VARIADIC)))
        return NULL;
    tg_term ***keys = GC_MALLOC(n * sizeof *keys);
    tgW_disp *d = GC_MALLOC(sizeof *d);
    if (!keys || !d)
        return NULL;
    for (uint32_t i = 0; i < n; i++) {
        if (!(keys[i] = GC_MALLOC(TGW_DISP_POS * sizeof *keys[i])))
            return NULL;
        if (rule_keys(rules[i], quote, keys[i]) < 0)
            return NULL;
    }
    for (int p = 0; p < TGW_DISP_POS; p++)
        if (collect(d, p, (tg_term **const *)keys, n) < 0)
            return NULL;
    if (!d->nkeys[0] && !d->nkeys[1])
        return NULL;
    uint64_t both = (uint64_t)(d->nkeys[0] + 1) * (d->nkeys[1] + 1);
    /* a second position that names no key would only double the work */
    d->npos = both <= MAX_CELLS && d->nkeys[1] ? 2 : 1;
    uint32_t ncells = d->npos == 2 ? (uint32_t)both : d->nkeys[0] + 1;
    if (d->npos == 1 && !d->nkeys[0])
        return NULL;
    if (fill(d, rules, (tg_term **const *)keys, n, ncells) < 0)
        return NULL;
    return d;
}
