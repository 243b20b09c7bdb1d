/* dispatch.c - building the index of an op's rules by the heads of its
 * first arguments (see dispatch.h), and the decision trees that look
 * deeper into a call where a cell keeps many rules.  The table's keys
 * come from the left sides as written (a ground argument, which the
 * match tests by identity, as the whole term: see whole_key), the trees'
 * from the match programs, so the index holds whatever the match
 * programs check.
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

/* Whether rule r's match program tests argument p for identity with the
 * application x (a ground subpattern compiled to one M_CONST): then x
 * itself is the key there, a call's argument fits it only by being x. */
static int whole_key(const tgW_rule *r, uint32_t p, const tg_term *x)
{
    const tgW_ins *i = r->match;
    if (!tgT_ispair(x) || !i || i->op != M_ROOT || p >= i->a)
        return 0;
    for (i++; i->op == M_APP || i->op == M_CONST || i->op == M_SAME; i++)
        if (i->op == M_CONST && i->a == p && r->k[i->b] == x)
            return 1;
    return 0;
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
        if (p < TGW_DISP_POS) {
            key[p] = whole_key(r, (uint32_t)p, x) ? x : pat_key(x, quote);
            p++;
        }
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
    for (uint32_t j = 0; j < m; j++)
        if (tgT_ispair(k[j]))
            d->whole |= 1u << p;
    return 0;
}

/* Whether a rule with key `want` at a position fits class c there: a
 * whole argument's class also fits the rules that name its head. */
static int fits(const tgW_disp *d, int p, const tg_term *want, uint32_t c)
{
    if (!want)
        return 1;
    if (c >= d->nkeys[p])
        return 0;
    tg_term *k = d->keys[p][c];
    return k == want || (tgT_ispair(k) && !tgT_ispair(want) && k->e[0] == want);
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

/* ---- decision trees ---------------------------------------------------- */

#define MAX_NODES 256       /* tree nodes per op */
#define MIN_RULES 3         /* fewer rules left: trying them costs less */
#define MAX_RULES 64        /* more in a cell: no tree (building one is quadratic) */

typedef struct dpath {      /* a position: argument p[0], its element p[1], ... */
    uint8_t len, p[TGW_DISP_LEVELS];
} dpath;
typedef struct fact {       /* a match checks that the key at `at` is `key` */
    dpath at;
    tg_term *key;
} fact;
typedef struct rfacts {
    fact *f;
    uint32_t n, cap;
} rfacts;
typedef struct seen {       /* a position some node above (or the table) looked at */
    dpath at;
    int lev;
} seen;
typedef struct tbuild {
    tgW_rule *const *rules;
    rfacts *rf;             /* per rule of the op */
    uint32_t nodes;
    int oom;
} tbuild;

static int path_eq(const dpath *a, const dpath *b)
{
    return a->len == b->len && !memcmp(a->p, b->p, a->len);
}

static int fact_add(rfacts *rf, const dpath *at, tg_term *key)
{
    if (rf->n == rf->cap) {
        uint32_t cap = rf->cap ? 2 * rf->cap : 8;
        fact *f = realloc(rf->f, cap * sizeof *f);
        if (!f)
            return -1;
        rf->f = f, rf->cap = cap;
    }
    rf->f[rf->n].at = *at;
    rf->f[rf->n++].key = key;
    return 0;
}

/* The positions whose keys rule r's match program checks, read off its
 * instructions: the arguments are registers 0 .. k-1, and an M_APP puts
 * the elements of a known position into registers.  Registers a choice
 * or an assoc / comm match fills have no known position; the scan stops
 * at the first instruction it does not know.  -1: out of memory. */
static int rule_facts(const tgW_rule *r, rfacts *rf)
{
    const tgW_ins *pc = r->match;
    if (!pc || (pc->op != M_ROOT && pc->op != M_ROOTSEG))
        return 0;
    uint32_t bound = pc->a + 1u;
    for (const tgW_ins *i = pc + 1; i->op == M_APP || i->op == M_APPSEG || i->op == M_COMM ||
                                    i->op == M_LIST || i->op == M_CONST || i->op == M_SAME; i++) {
        uint32_t top = i->op == M_CONST || i->op == M_SAME ? i->a + 1u : i->d + i->c + 1u;
        if (i->a + 1u > top)
            top = i->a + 1u;
        if (top > bound)
            bound = top;
    }
    dpath *at = calloc(bound, sizeof *at);   /* len 0: not known */
    if (!at)
        return -1;
    for (uint32_t a = 0; a < pc->a; a++)
        at[a].len = 1, at[a].p[0] = (uint8_t)(a < 256 ? a : 255);
    int rc = 0;
    for (const tgW_ins *i = pc + 1; rc == 0; i++) {
        const dpath *pa = i->a < bound ? &at[i->a] : NULL;
        int known = pa && pa->len && !(pa->len == 1 && pa->p[0] == 255);
        if (i->op == M_APP || i->op == M_APPSEG) {
            if (known)
                rc = fact_add(rf, pa, r->k[i->b]);
            uint32_t ne = i->c + (i->op == M_APPSEG);    /* a segment's rest: not known */
            for (uint32_t e = 0; e < ne && i->d + e < bound; e++) {
                dpath *q = &at[i->d + e];
                q->len = 0;
                if (known && e < i->c && e < 255 && pa->len < TGW_DISP_LEVELS) {
                    *q = *pa;
                    q->p[q->len++] = (uint8_t)e;
                }
            }
        } else if (i->op == M_COMM || i->op == M_LIST) {
            if (known && i->op == M_COMM)
                rc = fact_add(rf, pa, r->k[i->b]);
            for (uint32_t e = 0; e < i->c && i->d + e < bound; e++)
                at[i->d + e].len = 0;
        } else if (i->op == M_CONST) {
            if (known)
                rc = fact_add(rf, pa, tgW_disp_key(r->k[i->b]));
        } else if (i->op != M_SAME) {
            break;
        }
    }
    free(at);
    return rc;
}

/* The key rule facts f name at position P, NULL for none. */
static tg_term *key_at(const rfacts *f, const dpath *P)
{
    for (uint32_t i = 0; i < f->n; i++)
        if (path_eq(&f->f[i].at, P))
            return f->f[i].key;
    return NULL;
}

/* The position the next node looks at for the rules S: the first that
 * the first rule checks, not looked at yet, whose parent was; its
 * parent's entry in T into *par (NULL for an argument).  0: none. */
static int next_position(const tbuild *b, const uint32_t *S, uint32_t m, const seen *T, uint32_t nt,
                         dpath *P, const seen **par)
{
    for (uint32_t s = 0; s < m; s++) {
        const rfacts *f = &b->rf[S[s]];
        for (uint32_t i = 0; i < f->n; i++) {
            const dpath *q = &f->f[i].at;
            int done = 0;
            const seen *up = NULL;
            for (uint32_t t = 0; t < nt; t++) {
                done |= path_eq(&T[t].at, q);
                if (T[t].at.len + 1 == q->len && !memcmp(T[t].at.p, q->p, T[t].at.len))
                    up = &T[t];
            }
            if (!done && (q->len == 1 || up)) {
                *P = *q, *par = q->len == 1 ? NULL : up;
                return 1;
            }
        }
    }
    return 0;
}

static const tgW_dnode *tree(tbuild *b, const uint32_t *S, uint32_t m, seen *T, uint32_t nt, int lev);

/* The rules of S (m of them) as an array of the collector's. */
static tgW_rule **rule_array(tbuild *b, const uint32_t *S, uint32_t m)
{
    tgW_rule **r = GC_MALLOC((m ? m : 1) * sizeof *r);
    if (!r) {
        b->oom = 1;
        return NULL;
    }
    for (uint32_t i = 0; i < m; i++)
        r[i] = (tgW_rule *)b->rules[S[i]];
    return r;
}

/* Node lev's classes: for each key at P and "other", the rules of S that
 * name it or nothing there, and the tree below them. */
static int node_kids(tbuild *b, tgW_dnode *nd, const uint32_t *S, uint32_t m, seen *T, uint32_t nt,
                     const dpath *P, int lev)
{
    uint32_t *sub = malloc((m ? m : 1) * sizeof *sub);
    tg_term **want = malloc((m ? m : 1) * sizeof *want);
    if (!sub || !want) {
        free(sub), free(want);
        return -1;
    }
    T[nt].at = *P, T[nt].lev = lev;
    for (uint32_t i = 0; i < m; i++)
        want[i] = key_at(&b->rf[S[i]], P);
    for (uint32_t c = 0; c <= nd->nkeys && !b->oom; c++) {
        uint32_t k = 0;
        for (uint32_t i = 0; i < m; i++)
            if (!want[i] || (c < nd->nkeys && want[i] == nd->keys[c]))
                sub[k++] = S[i];
        nd->kid[c].n = k;
        nd->kid[c].r = rule_array(b, sub, k);
        nd->kid[c].sub = tree(b, sub, k, T, nt + 1, lev + 1);
    }
    free(sub), free(want);
    return b->oom ? -1 : 0;
}

/* The decision tree for the rules S (indexes into b->rules, in order)
 * at level lev, the positions T looked at above; NULL for none (too few
 * rules, nothing more to look at, the budget spent, out of memory). */
static const tgW_dnode *tree(tbuild *b, const uint32_t *S, uint32_t m, seen *T, uint32_t nt, int lev)
{
    dpath P;
    const seen *par;
    if (b->oom || m < MIN_RULES || m > MAX_RULES || lev >= TGW_DISP_LEVELS || b->nodes >= MAX_NODES ||
        !next_position(b, S, m, T, nt, &P, &par))
        return NULL;
    b->nodes++;
    tgW_dnode *nd = GC_MALLOC(sizeof *nd);
    tg_term **keys = GC_MALLOC(m * sizeof *keys);
    if (!nd || !keys) {
        b->oom = 1;
        return NULL;
    }
    nd->src = par ? (int16_t)par->lev : -1;
    nd->idx = P.p[P.len - 1];
    nd->lev = (uint16_t)lev;
    uint32_t nk = 0;
    for (uint32_t i = 0; i < m; i++) {
        tg_term *x = key_at(&b->rf[S[i]], &P);
        uint32_t j = 0;
        while (j < nk && keys[j] != x)
            j++;
        if (x && j == nk)
            keys[nk++] = x;
    }
    qsort(keys, nk, sizeof *keys, by_address);
    nd->keys = keys, nd->nkeys = nk;
    nd->all = rule_array(b, S, m), nd->nall = m;
    if (!(nd->kid = GC_MALLOC((nk + 1) * sizeof *nd->kid)))
        b->oom = 1;
    if (b->oom || node_kids(b, nd, S, m, T, nt, &P, lev) < 0) {
        b->oom = 1;
        return NULL;
    }
    return nd;
}

/* Decision trees under the cells that keep MIN_RULES rules or more, when
 * their rules check positions the table does not look at.  -1: out of
 * memory (then the table alone serves). */
static int deepen(tgW_disp *d, tgW_rule *const *rules, uint32_t n, uint32_t ncells)
{
    uint32_t want = 0;
    for (uint32_t c = 0; c < ncells; c++)
        want |= d->cell[c][1] >= MIN_RULES && d->cell[c][1] <= MAX_RULES;
    if (!want)
        return 0;
    tbuild b = {rules, calloc(n, sizeof(rfacts)), 0, 0};
    uint32_t *S = malloc(n * sizeof *S);
    seen *T = malloc((TGW_DISP_LEVELS + 2) * sizeof *T);
    int rc = -1;
    if (!b.rf || !S || !T)
        goto out;
    for (uint32_t i = 0; i < n; i++)
        if (rule_facts(rules[i], &b.rf[i]) < 0)
            goto out;
    for (uint32_t c = 0; c < ncells; c++) {
        uint32_t m = 0, cls[TGW_DISP_POS] = {0, 0}, rest = c;
        tgW_rule *const *cr = d->rules + d->cell[c][0];
        if (d->cell[c][1] < MIN_RULES || d->cell[c][1] > MAX_RULES)
            continue;
        for (uint32_t i = 0; i < n && m < d->cell[c][1]; i++)   /* the cell's rules, in order */
            if (rules[i] == cr[m])
                S[m++] = i;
        for (int p = (int)d->npos - 1; p >= 0; p--)
            cls[p] = rest % (d->nkeys[p] + 1), rest /= d->nkeys[p] + 1;
        uint32_t nt = 0;    /* the table looked at the positions whose class is a key */
        for (uint32_t p = 0; p < d->npos; p++)
            if (cls[p] < d->nkeys[p]) {
                T[nt].at.len = 1, T[nt].at.p[0] = (uint8_t)p, T[nt].lev = (int)p;
                nt++;
            }
        const tgW_dnode *t = tree(&b, S, m, T, nt, TGW_DISP_POS);
        if (b.oom)
            goto out;
        if (t && !d->sub && !(d->sub = GC_MALLOC(ncells * sizeof *d->sub)))
            goto out;
        if (t)
            d->sub[c] = t;
    }
    if (d->sub)     /* the cells' flags, once no count is read any more */
        for (uint32_t c = 0; c < ncells; c++)
            if (d->sub[c])
                d->cell[c][1] |= TGW_DISP_DEEP;
    rc = 0;
out:
    if (b.rf)
        for (uint32_t i = 0; i < n; i++)
            free(b.rf[i].f);
    free(b.rf), free(S), free(T);
    if (rc < 0)
        d->sub = NULL;
    return rc;
}

uint32_t tgW_disp_whole(const tgW_disp *d, uint32_t p, tg_term *t)
{
    uint32_t w = tgW_disp_find(d->keys[p], d->nkeys[p], t);
    return w < d->nkeys[p] ? w : tgW_disp_find(d->keys[p], d->nkeys[p], t->e[0]);
}

tgW_rule *const *tgW_disp_deep(const tgW_dnode *nd, tg_term *const *args, uint32_t n, uint32_t *nr)
{
    tg_term *at[TGW_DISP_LEVELS];
    at[0] = n > 0 ? args[0] : NULL;
    at[1] = n > 1 ? args[1] : NULL;
    for (;;) {
        tg_term *t = NULL;
        if (nd->src < 0) {
            if (nd->idx < n)
                t = args[nd->idx];
        } else {
            tg_term *up = at[nd->src];
            /* an element of its first chunk (an atom or a short list: none) */
            if (up && tgT_ispair(up) && nd->idx + 1u < up->h.n)
                t = up->e[nd->idx + 1];
        }
        if (!t) {
            *nr = nd->nall;
            return nd->all;
        }
        at[nd->lev] = t;
        const tgW_dkid *k = &nd->kid[tgW_disp_find(nd->keys, nd->nkeys, tgW_disp_key(t))];
        if (!k->sub) {
            *nr = k->n;
            return k->r;
        }
        nd = k->sub;
    }
}

tgW_disp *tgW_disp_build(tgW_rule *const *rules, uint32_t n, tg_term *quote)
{
    if (n < 2 || (rules[0]->op->flags & (TGW_ASSOC | TGW_COMM | TGW_VARIADIC)))
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
    deepen(d, rules, n, ncells);    /* out of memory: the table alone */
    if (d->npos == 1 && d->nkeys[0] <= 2 && !d->sub && !d->whole) {
        d->few = 1;
        for (uint32_t f = 0; f < 3; f++) {
            uint32_t c = f < d->nkeys[0] ? f : d->nkeys[0];   /* past the keys: other */
            if (f < 2)
                d->fk[f] = f < d->nkeys[0] ? d->keys[0][f] : (tg_term *)d;
            d->fr[f] = d->rules + d->cell[c][0];
            d->fn[f] = d->cell[c][1];
        }
    }
    return d;
}
