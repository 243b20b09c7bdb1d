/* prov.c - provenance of a rewrite (module prefix tgO_, see prov.h): the
 * firing log the machine fills when a rule set has provenance on, and
 * the walk back from a term of the result to the firings it depends on.
 *
 * A term is attributed to the last firing that completed with it as its
 * after before the point asked about (terms are hash-consed, so a term
 * built twice is one term: the latest firing that built it stands for
 * all).  From a firing the walk goes on into its before (what the rule
 * consumed, as it stood when the rule fired) and into the parts of its
 * after (what the inner calls of its right side gave); from a term no
 * firing gave, into its elements.  The walk is iterative: terms of any
 * depth.
 */
#include "prov.h"
#include "error.h"

#include <gc/gc.h>
#include <stdlib.h>
#include <string.h>

/* An array of n elements grown to at least need (collector memory,
 * scanned when ptrs); NULL when out of memory. */
static void *grow(void *arr, size_t n, size_t *cap, size_t need, size_t size, int ptrs)
{
    if (need <= *cap)
        return arr;
    size_t nc = *cap ? 2 * *cap : 64;
    while (nc < need)
        nc *= 2;
    void *a = ptrs ? GC_MALLOC(nc * size) : GC_MALLOC_ATOMIC(nc * size);
    if (!a)
        return NULL;
    memset(a, 0, nc * size);
    if (n)
        memcpy(a, arr, n * size);
    *cap = nc;
    return a;
}

int tgO_set(tg_rules *rs, int on, size_t cap)
{
    if (!on) {
        rs->prov = NULL;
        return 0;
    }
    tgO_prov *p = GC_MALLOC(sizeof *p);
    if (!p)
        return -1;
    p->limit = cap ? cap : TGO_DEFAULT_CAP;
    if (p->limit > UINT32_MAX / 8)
        p->limit = UINT32_MAX / 8;
    rs->prov = p;
    return 0;
}

void tgO_begin(tgO_prov *p, tg_term *input)
{
    p->input = input;
    /* the arrays go too, so that a long log does not keep its terms alive */
    p->log = NULL, p->n = p->cap = 0;
    p->open = NULL, p->capopen = 0;
    p->parent = p->idx = p->depth = NULL, p->npos = p->cappos = 0;
    p->total = 0;
    p->at = p->atparent = p->atidx = 0;
    p->pass = 0;
    tgW_map_clear(&p->producer);
    tgW_map_clear(&p->from);
    p->nlinks = 0;
    p->result = NULL;
}

/* Position ids start at 1; 0 is "not known" (the table is full). */
static uint32_t pos_new(tgO_prov *p, uint32_t parent, uint32_t i)
{
    if (p->npos + 1 >= 2 * p->limit + 1024)
        return 0;
    size_t c1 = p->cappos, c2 = p->cappos, c3 = p->cappos;
    uint32_t *pa = grow(p->parent, p->cappos, &c1, p->npos + 2, sizeof *pa, 0);
    uint32_t *ix = grow(p->idx, p->cappos, &c2, p->npos + 2, sizeof *ix, 0);
    uint32_t *dp = grow(p->depth, p->cappos, &c3, p->npos + 2, sizeof *dp, 0);
    if (!pa || !ix || !dp)
        return 0;   /* out of memory: the position is not known */
    p->parent = pa, p->idx = ix, p->depth = dp, p->cappos = c1;
    uint32_t id = (uint32_t)++p->npos;
    pa[id] = parent, ix[id] = i, dp[id] = parent ? dp[parent] + 1 : 0;
    return id;
}

uint32_t tgO_pass(tgO_prov *p)
{
    p->pass++;
    return pos_new(p, 0, 0);
}

uint32_t tgO_pos(tgO_prov *p, uint32_t parent, uint32_t i)
{
    return parent ? pos_new(p, parent, i) : 0;
}

static uint32_t here(tgO_prov *p)
{
    if (!p->at && p->atparent) {
        p->at = tgO_pos(p, p->atparent, p->atidx);
        p->atparent = 0;
    }
    return p->at;
}

/* The call of head to args as a term (NULL when out of memory). */
static tg_term *call_term(tg_ctx *ctx, tg_term *head, int atom, uint32_t n, tg_term *const *args)
{
    return atom ? head : tg_app(ctx, head, n, args);
}

/* Log rule r firing in the frame at depth d on before, or (before
 * NULL) on the call of head to args, built only when logged. */
static int fire(tgO_prov *p, tg_ctx *ctx, tgW_rule *r, tg_term *before, tg_term *head, int atom,
                uint32_t n, tg_term *const *args, size_t d)
{
    p->total++;
    uint32_t *o = grow(p->open, p->capopen, &p->capopen, d + 1, sizeof *o, 0);
    if (!o)
        return -1;
    p->open = o;
    o[d] = 0;
    if (p->n >= p->limit)
        return 0;   /* counted, not logged (nor built) */
    if (!before && !(before = call_term(ctx, head, atom, n, args)))
        return -1;
    tgO_fire *l = grow(p->log, p->n, &p->cap, p->n + 1, sizeof *l, 1);
    if (!l)
        return -1;
    p->log = l;
    tgO_fire *e = &l[p->n];
    e->rule = r, e->before = before, e->after = NULL;
    e->pass = p->pass, e->end = 0;
    /* a call of a right side: inside the nearest firing whose right side
     * runs; a frame in between without one is testing conditions */
    size_t j = d;
    while (j > 0 && !o[j - 1])
        j--;
    e->in = j > 0;
    e->pos = j > 0 ? o[j - 1] : here(p);
    e->cond = (j < d) || (j > 0 && l[o[j - 1] - 1].cond);
    o[d] = (uint32_t)++p->n;
    return 0;
}

int tgO_fire_at(tgO_prov *p, tg_ctx *ctx, tgW_rule *r, tg_term *head, int atom, uint32_t n,
                tg_term *const *args, size_t d)
{
    return fire(p, ctx, r, NULL, head, atom, n, args, d);
}

int tgO_fired(tgO_prov *p, tgW_rule *r, tg_term *before, tg_term *after)
{
    if (fire(p, NULL, r, before, NULL, 0, 0, NULL, 0) < 0)
        return -1;
    return tgO_done(p, 0, after);
}

/* The firings that gave one term, in the order they completed (their
 * ends never decrease).  A term given once, the common case, has no
 * such list: its map value is the firing number, tagged odd. */
typedef struct prods {
    uint32_t n, cap;
    uint32_t k[];
} prods;

static int prod_add(tgW_map *m, tg_term *t, uint32_t k)
{
    void *v = tgW_map_get(m, t);
    if (!v)
        return tgW_map_put(m, t, (void *)(((uintptr_t)k << 1) | 1));
    prods *ps = ((uintptr_t)v & 1) ? NULL : v;
    if (!ps || ps->n == ps->cap) {
        uint32_t n = ps ? ps->n : 1, nc = 2 * n;
        prods *q = GC_MALLOC_ATOMIC(sizeof *q + nc * sizeof q->k[0]);
        if (!q)
            return -1;
        if (ps)
            memcpy(q->k, ps->k, n * sizeof q->k[0]);
        else
            q->k[0] = (uint32_t)((uintptr_t)v >> 1);
        q->n = n, q->cap = nc;
        if (tgW_map_put(m, t, q) < 0)
            return -1;
        ps = q;
    }
    ps->k[ps->n++] = k;
    return 0;
}

/* Add (time, orig) to the links of t in map m; 0 or -1. */
static int hist_add(tgW_map *m, tg_term *t, uint32_t time, tg_term *orig)
{
    tgO_hist *h = tgW_map_get(m, t);
    if (!h) {
        if (!(h = GC_MALLOC(sizeof *h)) || tgW_map_put(m, t, h) < 0)
            return -1;
    }
    if (h->n == h->cap) {
        uint32_t nc = h->cap ? 2 * h->cap : 1;
        uint32_t *tm = GC_MALLOC_ATOMIC(nc * sizeof *tm);
        tg_term **os = GC_MALLOC(nc * sizeof *os);
        if (!tm || !os)
            return -1;
        if (h->n) {
            memcpy(tm, h->time, h->n * sizeof *tm);
            memcpy(os, h->orig, h->n * sizeof *os);
        }
        h->time = tm, h->orig = os, h->cap = nc;
    }
    h->time[h->n] = time;
    h->orig[h->n] = orig;
    h->n++;
    return 0;
}

/* The last link of t in m at a time <= bound: its index, or -1. */
static long hist_find(const tgW_map *m, const tg_term *t, uint32_t bound, const tgO_hist **hp)
{
    const tgO_hist *h = tgW_map_get(m, t);
    *hp = h;
    if (!h || h->time[0] > bound)
        return -1;
    uint32_t lo = 0, hi = h->n - 1;     /* time[lo] <= bound */
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo + 1) / 2;
        if (h->time[mid] <= bound)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

int tgO_done_call(tgO_prov *p, tg_ctx *ctx, size_t d, tg_term *head, int atom, uint32_t n,
                  tg_term *const *args)
{
    if (d >= p->capopen || !p->open[d])
        return 0;
    return tgO_done(p, d, call_term(ctx, head, atom, n, args));
}

int tgO_done(tgO_prov *p, size_t d, tg_term *after)
{
    if (!after)
        return -1;
    if (d >= p->capopen || !p->open[d])
        return 0;
    uint32_t k = p->open[d];
    p->open[d] = 0;
    tgO_fire *e = &p->log[k - 1];
    e->after = after;
    e->end = (uint32_t)p->n;
    if (e->cond)    /* what a condition computes is compared, not kept */
        return 0;
    return prod_add(&p->producer, after, k);
}

int tgO_link(tgO_prov *p, tg_term *nf, tg_term *orig)
{
    if (nf == orig || p->nlinks >= p->limit + 1024)
        return 0;
    p->nlinks++;
    return hist_add(&p->from, nf, (uint32_t)p->n, orig);
}

/* ---- the walk back ------------------------------------------------------ */

/* The last firing that gave t among those completed when bound firings
 * were logged; 0 when none. */
static uint32_t producer(const tgO_prov *p, tg_term *t, uint32_t bound)
{
    void *v = tgW_map_get(&p->producer, t);
    if (!v)
        return 0;
    if ((uintptr_t)v & 1) {
        uint32_t k = (uint32_t)((uintptr_t)v >> 1);
        return p->log[k - 1].end <= bound ? k : 0;
    }
    const prods *ps = v;
    if (p->log[ps->k[0] - 1].end > bound)
        return 0;
    uint32_t lo = 0, hi = ps->n - 1;    /* the end of k[lo] <= bound */
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo + 1) / 2;
        if (p->log[ps->k[mid] - 1].end <= bound)
            lo = mid;
        else
            hi = mid - 1;
    }
    return ps->k[lo];
}

typedef struct item {
    tg_term *t;
    uint32_t bound;
    int shallow;    /* its firing or older version only, not its elements */
} item;

typedef struct stack {
    item *v;
    size_t n, cap;
} stack;

static int push(stack *s, tg_term *t, uint32_t bound)
{
    if (s->n == s->cap) {
        size_t nc = s->cap ? 2 * s->cap : 256;
        item *v = realloc(s->v, nc * sizeof *v);
        if (!v)
            return -1;
        s->v = v, s->cap = nc;
    }
    s->v[s->n].t = t, s->v[s->n].bound = bound, s->v[s->n].shallow = 0;
    s->n++;
    return 0;
}

/* t's elements (and a tail that is not nil), each with bound. */
static int push_elements(stack *s, tg_term *t, uint32_t bound)
{
    tg_iter it = {t, 0};
    for (tg_term *e; (e = tgT_iter_next(&it));)
        if (push(s, e, bound) < 0)
            return -1;
    if (it.node != TGT_NIL && push(s, (tg_term *)it.node, bound) < 0)
        return -1;
    return 0;
}

/* A set of (term, bound) pairs (malloc'd: the terms are held by the log
 * and the result). */
typedef struct pairset {
    struct pair {
        tg_term *t;
        uint32_t b;
    } *v;
    size_t n, cap;
} pairset;

static size_t pair_home(const tg_term *t, uint32_t b, size_t cap)
{
    /* one term comes with many bounds: both must reach every bit */
    uint64_t x = (uintptr_t)t * 0x9E3779B97F4A7C15ull + b * 0xC2B2AE3D27D4EB4Full;
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 29;
    return (size_t)x & (cap - 1);
}

/* Add (t, b): 1 when new, 0 when already there, -1 out of memory. */
static int pair_add(pairset *s, tg_term *t, uint32_t b)
{
    if (2 * (s->n + 1) > s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 256;
        struct pair *v = calloc(cap, sizeof *v);
        if (!v)
            return -1;
        for (size_t i = 0; i < s->cap; i++)
            if (s->v[i].t) {
                size_t j = pair_home(s->v[i].t, s->v[i].b, cap);
                while (v[j].t)
                    j = (j + 1) & (cap - 1);
                v[j] = s->v[i];
            }
        free(s->v);
        s->v = v, s->cap = cap;
    }
    size_t i = pair_home(t, b, s->cap);
    for (; s->v[i].t; i = (i + 1) & (s->cap - 1))
        if (s->v[i].t == t && s->v[i].b == b)
            return 0;
    s->v[i].t = t, s->v[i].b = b;
    s->n++;
    return 1;
}

/* Whether a firing gave t or a pass rebuilt it. */
static int changed(const tgO_prov *p, const tg_term *t)
{
    return tgW_map_get(&p->producer, t) || tgW_map_get(&p->from, t);
}

/* The compound subterms of the run's input below which no term was
 * changed (given by a firing or rebuilt) into quiet: nothing there needs
 * explaining.  An iterative post-order walk of the DAG; 0 or -1. */
static int quiet_inputs(const tgO_prov *p, tgW_map *quiet)
{
    typedef struct fr {
        tg_term *t;
        tg_iter it;
        int noisy;
    } fr;
    fr *st = NULL;
    size_t n = 0, cap = 0;
    tgW_map done = {0};
    int rc = 0;
    tg_term *x = p->input;
    if (!tgT_ispair(x))
        return 0;
    for (;;) {
        if (x) {    /* enter x */
            if (n == cap) {
                size_t nc = cap ? 2 * cap : 256;
                fr *ns = realloc(st, nc * sizeof *ns);
                if (!ns) {
                    rc = -1;
                    break;
                }
                st = ns, cap = nc;
            }
            st[n].t = x, st[n].it.node = x, st[n].it.i = 0, st[n].noisy = changed(p, x);
            n++;
            x = NULL;
        }
        fr *f = &st[n - 1];
        tg_term *e = tgT_iter_next(&f->it);
        if (!e && f->it.node != TGT_NIL) {  /* an improper tail */
            e = (tg_term *)f->it.node;
            f->it.node = TGT_NIL;
        }
        if (e) {
            if (!tgT_ispair(e))
                f->noisy |= changed(p, e);
            else if (tgW_map_get(&done, e))
                f->noisy |= !tgW_map_get(quiet, e);
            else
                x = e;
            continue;
        }
        /* x's elements done */
        int noisy = f->noisy;
        tg_term *t = f->t;
        if (tgW_map_put(&done, t, t) < 0 || (!noisy && tgW_map_put(quiet, t, t) < 0)) {
            rc = -1;
            break;
        }
        if (--n == 0)
            break;
        st[n - 1].noisy |= noisy;
    }
    free(st);
    return rc;
}

/* Mark in marks[1..n] the firings t depends on.  A work item is a term
 * as it stood when bound firings were logged: the same term at two
 * times can owe itself to different firings (hash-consing makes a term
 * built again the same term), so a term is entered once per bound, the
 * bound being that of what built it (a rebuilt node: when it was
 * rebuilt).  Subterms of the run's input below which nothing changed
 * are not entered.  0 or -1 (out of memory). */
static int explain(const tgO_prov *p, tg_term *t, uint32_t k0, unsigned char *marks)
{
    stack s = {0};
    pairset seen = {0};
    pairset linked = {0};   /* links followed */
    tgW_map quiet = {0};
    int rc = quiet_inputs(p, &quiet);
    if (rc == 0 && k0) {    /* t as a part of k0's right side */
        marks[k0] = 1;
        rc = push(&s, p->log[k0 - 1].before, k0 - 1) < 0 ||
             push_elements(&s, t, p->log[k0 - 1].end) < 0 ? -1 : 0;
    } else if (rc == 0) {
        rc = push(&s, t, (uint32_t)p->n);
    }
    while (rc == 0 && s.n) {
        item it = s.v[--s.n];
        /* a rebuilt node: the node it was, in the pass before */
        const tgO_hist *h;
        long li = hist_find(&p->from, it.t, it.bound, &h);
        tg_term *orig = li < 0 ? NULL : h->orig[li];
        uint32_t ltime = li < 0 ? 0 : h->time[li];
        int fresh = orig ? pair_add(&linked, orig, ltime) : 0;
        if (fresh > 0 && push(&s, orig, ltime) == 0)
            /* the old node's elements are reached through the new node's,
             * whose own links lead back to them */
            s.v[s.n - 1].shallow = 1;
        else if (fresh != 0)
            rc = -1;
        uint32_t k = producer(p, it.t, it.bound);
        if (k) {
            if (marks[k])
                continue;
            marks[k] = 1;
            const tgO_fire *e = &p->log[k - 1];
            /* its before as it stood when the rule fired; its after's parts
             * as the right side's inner calls left them */
            if (push(&s, e->before, k - 1) < 0 ||
                (tgT_ispair(e->after) && push_elements(&s, e->after, e->end) < 0))
                rc = -1;
            continue;
        }
        if (it.shallow || !tgT_ispair(it.t) || tgW_map_get(&quiet, it.t))
            continue;
        uint32_t b = orig ? ltime : it.bound;
        int a = pair_add(&seen, it.t, b);
        if (a < 0 || (a > 0 && push_elements(&s, it.t, b) < 0))
            rc = -1;
    }
    free(s.v);
    free(seen.v);
    free(linked.v);
    return rc;
}

/* Whether t occurs in r (a DAG walk): 1, 0, or -1 out of memory. */
static int occurs(tg_term *t, tg_term *r)
{
    if (t == r)
        return 1;
    if (!tgT_ispair(r))
        return 0;
    stack s = {0};
    tgW_map seen = {0};
    int found = push(&s, r, 0) < 0 ? -1 : 0;
    while (!found && s.n) {
        tg_term *x = s.v[--s.n].t;
        if (x == t)
            found = 1;
        else if (tgT_ispair(x) && !tgW_map_get(&seen, x) &&
                 (tgW_map_put(&seen, x, x) < 0 || push_elements(&s, x, 0) < 0))
            found = -1;
    }
    free(s.v);
    return found;
}

/* Fill parent (child -> the first parent met) walking r until t is met:
 * 1 when found, 0, or -1 out of memory. */
static int parents(tg_term *t, tg_term *r, tgW_map *parent)
{
    if (t == r)
        return 1;
    stack s = {0};
    int found = push(&s, r, 0) < 0 ? -1 : 0;
    while (!found && s.n) {
        tg_term *x = s.v[--s.n].t;
        tg_iter it = {x, 0};
        for (tg_term *e; found == 0 && tgT_ispair(x) && (e = tgT_iter_next(&it));) {
            if (!tgT_ispair(e) && e != t)
                continue;
            if (tgW_map_get(parent, e))
                continue;
            if (tgW_map_put(parent, e, x) < 0 || push(&s, e, 0) < 0)
                found = -1;
            else if (e == t)
                found = 1;
        }
    }
    free(s.v);
    return found;
}

/* The firing whose right side built t when no firing gave t whole (a
 * part of a right side, as (k a) of (h (k a))): the firing that gave
 * t's nearest ancestor in the result, if t was not already in what that
 * firing consumed (else the same question inside its before, as of just
 * before it fired).  0 when none: t was there from the start, or a pass
 * rebuilt its parent around it. */
static uint32_t builder(const tgO_prov *p, tg_term *t)
{
    tg_term *root = p->result;
    uint32_t bound = (uint32_t)p->n;
    for (;;) {
        tgW_map parent = {0};
        if (parents(t, root, &parent) != 1)
            return 0;
        const tgO_hist *h;
        tg_term *a = t;
        uint32_t k = 0;
        while (a != root && !k) {
            a = tgW_map_get(&parent, a);
            /* a node a pass rebuilt around its rewritten arguments: the
             * argument holding t was not rewritten, so t was there */
            if (!(k = producer(p, a, bound)) && hist_find(&p->from, a, bound, &h) >= 0)
                return 0;
        }
        if (!k)
            return 0;
        tg_term *before = p->log[k - 1].before;
        if (occurs(t, before) != 1)
            return k;
        root = before, bound = k - 1;
    }
}

#define MAXPATH 32

/* (at I ...) from position id pos, (at ?) when it is not known; a path
 * longer than MAXPATH is (at (skip N) I ...), its innermost MAXPATH
 * indices after the number of those left out. */
static tg_term *position(tg_ctx *ctx, const tgO_prov *p, uint32_t pos)
{
    tg_term *at = tg_symbol_cstr(ctx, "at");
    if (!at)
        return NULL;
    if (!pos) {
        tg_term *q = tg_symbol_cstr(ctx, "?");
        return q ? tg_list(ctx, 2, (tg_term *[]){at, q}, NULL) : NULL;
    }
    /* the innermost MAXPATH indices only, else explaining a deep term
     * would take time quadratic in its depth */
    tg_term *v[MAXPATH + 2];
    size_t len = MAXPATH + 2;
    uint32_t x = pos;
    for (; p->parent[x] && len > 2; x = p->parent[x])
        if (!(v[--len] = tg_int(ctx, (int64_t)p->idx[x])))
            return NULL;
    if (p->parent[x]) {     /* (skip N): N more indices from the root */
        size_t skip = p->depth[x];
        tg_term *sk = tg_symbol_cstr(ctx, "skip"), *sn = tg_int(ctx, (int64_t)skip);
        if (!sk || !sn || !(v[--len] = tg_list(ctx, 2, (tg_term *[]){sk, sn}, NULL)))
            return NULL;
    }
    v[--len] = at;
    return tg_list(ctx, MAXPATH + 2 - len, v + len, NULL);
}

static tg_term *rule_name(tg_ctx *ctx, const tgW_rule *r)
{
    if (!r->backward)
        return r->name;
    tg_term *rev = tg_symbol_cstr(ctx, "reverse");
    return rev ? tg_list(ctx, 2, (tg_term *[]){rev, r->name}, NULL) : NULL;
}

/* (K RULE (pass P) POSITION BEFORE AFTER) */
static tg_term *entry(tg_ctx *ctx, const tgO_prov *p, uint32_t k)
{
    const tgO_fire *e = &p->log[k - 1];
    tg_term *pos;
    if (e->in) {
        tg_term *in = tg_symbol_cstr(ctx, "in"), *j = tg_int(ctx, e->pos);
        pos = in && j ? tg_list(ctx, 2, (tg_term *[]){in, j}, NULL) : NULL;
    } else {
        pos = position(ctx, p, e->pos);
    }
    tg_term *ps = tg_symbol_cstr(ctx, "pass"), *pn = tg_int(ctx, e->pass);
    tg_term *pass = ps && pn ? tg_list(ctx, 2, (tg_term *[]){ps, pn}, NULL) : NULL;
    tg_term *v[6] = {tg_int(ctx, k), rule_name(ctx, e->rule), pass, pos, e->before,
                     e->after ? e->after : tg_symbol_cstr(ctx, "?")};
    for (int i = 0; i < 6; i++)
        if (!v[i])
            return NULL;
    return tg_list(ctx, 6, v, NULL);
}

tg_term *tgO_why(tg_rules *rs, tg_term *t, tg_error *err)
{
    tgO_prov *p = rs->prov;
    if (!p) {
        tgE_set(err, TG_ERR_ARG, NULL, 0, 0,
                "provenance is off: switch it on with (provenance on) before the rewrite");
        return NULL;
    }
    if (!p->result) {
        tgE_set(err, TG_ERR_ARG, NULL, 0, 0,
                "no result to explain: no normalize or rewrite has succeeded since (provenance on)");
        return NULL;
    }
    int oc = occurs(t, p->result);
    if (oc < 0)
        return tgE_nomem(err), NULL;
    if (!oc) {
        char *s = tg_print(t, NULL);
        tgE_set(err, TG_ERR_ARG, NULL, 0, 0, "%.200s is not a subterm of the last result",
                s ? s : "the term");
        free(s);
        return NULL;
    }
    tg_ctx *ctx = rs->ctx;
    const tgO_hist *h;
    uint32_t k0 = tgT_ispair(t) && !producer(p, t, (uint32_t)p->n) &&
                  hist_find(&p->from, t, (uint32_t)p->n, &h) < 0 ? builder(p, t) : 0;
    unsigned char *marks = calloc(p->n + 1, 1);
    if (!marks || explain(p, t, k0, marks) < 0) {
        free(marks);
        return tgE_nomem(err), NULL;
    }
    /* why, TERM, counts, then the firings in the order they fired */
    size_t n = 3;
    for (size_t k = 1; k <= p->n; k++)
        n += marks[k];
    tg_term **v = GC_MALLOC(n * sizeof *v);
    int ok = v != NULL;
    for (size_t k = 1, i = 3; k <= p->n && ok; k++)
        if (marks[k])
            ok = (v[i++] = entry(ctx, p, (uint32_t)k)) != NULL;
    free(marks);
    tg_term *fs = tg_symbol_cstr(ctx, "firings"), *nl = tg_int(ctx, (int64_t)p->n),
            *nt = tg_int(ctx, (int64_t)p->total), *why = tg_symbol_cstr(ctx, "why");
    tg_term *counts = fs && nl && nt ? tg_list(ctx, 3, (tg_term *[]){fs, nl, nt}, NULL) : NULL;
    tg_term *r = NULL;
    if (ok && counts && why) {
        v[0] = why, v[1] = t, v[2] = counts;
        r = tg_list(ctx, n, v, NULL);
    }
    if (!r)
        tgE_nomem(err);
    return r;
}

int tgO_print_why(tg_rules *rs, tg_term *t, FILE *out, tg_error *err)
{
    tg_term *w = tgO_why(rs, t, err);
    if (!w)
        return -1;
    tg_term *counts = tg_nth(w, 2);
    int64_t logged = 0, total = 0;
    tg_int_get(tg_nth(counts, 1), &logged);
    tg_int_get(tg_nth(counts, 2), &total);
    size_t n = tg_length(w) - 3;
    int rc = 0;
    tg_term *in_sym = tg_symbol_cstr(rs->ctx, "in");
    fputs("why ", out);
    rc |= tg_fprint(out, t);
    fprintf(out, ": %zu firing%s\n", n, n == 1 ? "" : "s");
    if (logged < total)
        fprintf(out, "  (the log holds the first %lld of %lld firings: the chain may be cut short)\n",
                (long long)logged, (long long)total);
    tg_iter it = {w, 3};
    for (tg_term *e; !rc && (e = tgT_iter_next(&it));) {
        int64_t k = 0, pass = 0;
        tg_int_get(tg_nth(e, 0), &k);
        tg_int_get(tg_nth(tg_nth(e, 2), 1), &pass);
        fprintf(out, "  #%lld ", (long long)k);
        rc |= tg_fprint(out, tg_nth(e, 1));
        fprintf(out, ", pass %lld, ", (long long)pass);
        tg_term *pos = tg_nth(e, 3);
        int64_t in;
        if (tg_length(pos) == 2 && tg_int_get(tg_nth(pos, 1), &in) == 0 &&
            tg_nth(pos, 0) == in_sym) {
            fprintf(out, "in #%lld", (long long)in);
        } else {
            fputs("at ", out);
            rc |= tg_fprint(out, tg_cdr(rs->ctx, pos));
        }
        fputs(": ", out);
        rc |= tg_fprint(out, tg_nth(e, 4));
        fputs(" => ", out);
        rc |= tg_fprint(out, tg_nth(e, 5));
        fputc('\n', out);
    }
    if (rc)
        return tgE_nomem(err), -1;
    return 0;
}
