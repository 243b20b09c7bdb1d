/* rewriters.c - rewriters built from rules, as in PyTensor's rewrite
 * databases: equilibrium rewriters (normalize until nothing changes),
 * walking rewriters (one rewrite per node, inputs first or outputs
 * first), sequences, tags, and queries that choose what runs; profiles of
 * a run.
 *
 * A named rewriter is declared once; running it (or a query over it)
 * first resolves it into a plan: the rules each part uses, indexed by
 * head op, after the query's include / require / exclude filters.  The
 * equilibrium part runs the machine with memo on, so a term that comes
 * back is a cycle reported with its rules, never an endless loop.
 */
#include "rewriters.h"
#include "relrw.h"
#include "prov.h"
#include "error.h"
#include "clock.h"

#include <gc/gc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_NEST_RW 64      /* rewriters inside rewriters */
#define MAX_PASSES 10000

/* ---- declarations ------------------------------------------------------ */

tgW_rw *tgW_rw_find(const tg_rules *rs, const tg_term *name)
{
    return tgW_map_get(&rs->rwmap, name);
}

static int in_list(const tg_term *l, const tg_term *x)
{
    for (tg_iter it = {l, 0};;) {
        tg_term *e = tgT_iter_next(&it);
        if (!e)
            return 0;
        if (e == x)
            return 1;
    }
}

/* An item's tags: its name, its own tags, and those of the rewriters
 * around it. */
typedef struct tagset {
    const tg_term *name, *own;
    const struct tagset *outer;
} tagset;

static int has_tag(const tagset *ts, const tg_term *tag)
{
    for (; ts; ts = ts->outer)
        if (ts->name == tag || in_list(ts->own, tag))
            return 1;
    return 0;
}

/* Whether an item passes query q (NULL: everything): one include tag
 * (when there are any), every require tag, no exclude tag. */
static int selected(const tgW_query *q, const tagset *ts)
{
    if (!q)
        return 1;
    if (q->include != TGT_NIL) {
        int any = 0;
        for (tg_iter it = {q->include, 0}; !any;) {
            tg_term *t = tgT_iter_next(&it);
            if (!t)
                break;
            any = has_tag(ts, t);
        }
        if (!any)
            return 0;
    }
    for (tg_iter it = {q->require, 0};;) {
        tg_term *t = tgT_iter_next(&it);
        if (!t)
            break;
        if (!has_tag(ts, t))
            return 0;
    }
    for (tg_iter it = {q->exclude, 0};;) {
        tg_term *t = tgT_iter_next(&it);
        if (!t)
            break;
        if (has_tag(ts, t))
            return 0;
    }
    return selected(q->also, ts);
}

/* The query for the items of a nested rewriter: its subquery, if q
 * names one, else q itself; through every query q nests in (also).
 * *oom set when a composed query could not be made. */
static const tgW_query *subquery_for(const tgW_query *q, const tg_term *name, int *oom)
{
    if (!q)
        return NULL;
    const tgW_query *s = q;
    for (size_t i = 0; i < q->nsub; i++)
        if (q->subname[i] == name)
            s = q->sub[i];
    const tgW_query *a = subquery_for(q->also, name, oom);
    if (s == q && a == q->also)
        return q;
    tgW_query *c = GC_MALLOC(sizeof *c);
    if (!c) {
        *oom = 1;
        return q;
    }
    *c = *s;
    c->also = a;
    return c;
}

/* ---- named queries (defquery) ------------------------------------------ */

/* The rewriter a named query rw selects from, *q made the query its
 * items must pass: its clauses and those of the named queries it is
 * over, and *q as it was.  rw itself when it is not a named query; NULL
 * when out of memory. */
static tgW_rw *resolve_query(tgW_rw *rw, const tgW_query **q)
{
    for (unsigned depth = 0; rw && rw->kind == TGW_QUERY; depth++) {
        if (rw->q) {
            tgW_query *c = GC_MALLOC(sizeof *c);
            if (!c)
                return NULL;
            *c = *rw->q;
            c->also = *q;
            *q = c;
        }
        rw = rw->base;
    }
    return rw;
}

/* ---- plans -------------------------------------------------------------- */

typedef struct rvec {
    tgW_rule **v;
    uint32_t n;
    size_t cap;
} rvec;

static int rpush(rvec *v, tgW_rule *r)
{
    for (uint32_t i = 0; i < v->n; i++)
        if (v->v[i] == r)
            return 0;
    tgW_rule **n = tgW_grow(v->v, v->n, &v->cap, v->n + 1, sizeof *n);
    if (!n)
        return -1;
    v->v = n;
    v->v[v->n++] = r;
    return 0;
}

static int parts_push(tgW_plan *p, tgW_plan *part)
{
    tgW_plan **np = tgW_grow(p->parts, p->nparts, &p->capparts, p->nparts + 1, sizeof *np);
    if (!np)
        return -1;
    p->parts = np;
    p->parts[p->nparts++] = part;
    return 0;
}

uint32_t tgW_rules_named(const tg_rules *rs, const tg_term *name, int backward, uint32_t *first)
{
    uint32_t i = 0, n = 0;
    while (i < rs->nrules && (rs->rules[i]->name != name || rs->rules[i]->backward != backward))
        i++;
    *first = i;
    while (i + n < rs->nrules && rs->rules[i + n]->name == name && rs->rules[i + n]->backward == backward)
        n++;
    return n;
}

static tgW_plan *plan_of(tg_rules *rs, tgW_rw *rw, const tgW_query *q, const tagset *outer,
                         unsigned depth, tg_error *err);

/* Add item it of a rewriter to plan p: its rules to p's rules (a
 * relation to p's relations), or a nested rewriter as a part. */
static int plan_item(tg_rules *rs, tgW_plan *p, rvec *rules, rvec *rels, const tgW_item *it,
                     const tgW_query *q, const tagset *outer, unsigned depth, tg_error *err)
{
    if (depth > MAX_NEST_RW) {
        size_t n;
        const char *s = tg_symbol_name(p->rw->name, &n);
        tgE_set(err, TG_ERR_RANGE, NULL, 0, 0, "rewriter %.*s contains itself", (int)n, s);
        return -1;
    }
    if (it->rw) {
        tgW_rw *irw = it->rw;
        tagset qts = {irw->name, TGT_NIL, outer};
        int oom = 0;
        if (irw->kind == TGW_QUERY) {
            /* a named query: its base, under the query's clauses and
             * tagged with its name too */
            if (!selected(q, &qts))
                return 0;
            outer = &qts;
        }
        const tgW_query *sq = subquery_for(q, irw->name, &oom);
        if (irw->kind == TGW_QUERY && !(irw = resolve_query(irw, &sq)))
            return tgE_nomem(err), -1;
        if (oom)
            return tgE_nomem(err), -1;
        tagset ts = {irw->name, irw->tags, outer};
        if (!selected(q, &ts))
            return 0;
        if (irw != it->rw && !(sq = subquery_for(sq, irw->name, &oom)))
            sq = NULL;
        if (oom)
            return tgE_nomem(err), -1;
        if (p->kind == TGW_EQUIL && irw->kind == TGW_EQUIL) {
            /* an equilibrium inside one: its rules join the outer ones */
            for (size_t i = 0; i < irw->nitems; i++)
                if (plan_item(rs, p, rules, rels, &irw->items[i], sq, &ts, depth + 1, err) < 0)
                    return -1;
            return 0;
        }
        tgW_plan *sub = plan_of(rs, irw, sq, outer, depth + 1, err);
        if (!sub)
            return -1;
        return parts_push(p, sub) < 0 ? (tgE_nomem(err), -1) : 0;
    }
    if (it->rel) {
        tgW_rule *r = tgD_rule(rs, it->name, it->backward, err);
        if (!r)
            return -1;
        tagset ts = {r->name, r->tags, outer};
        if (selected(q, &ts) && rpush(rels, r) < 0)
            return tgE_nomem(err), -1;
        return 0;
    }
    uint32_t first, n = tgW_rules_named(rs, it->name, it->backward, &first);
    if (!n)
        return 0;
    tgW_rule *r0 = rs->rules[first];
    tagset ts = {r0->name, r0->tags, outer};
    if (!selected(q, &ts))
        return 0;
    for (uint32_t i = 0; i < n; i++)
        if (rpush(rules, rs->rules[first + i]) < 0)
            return tgE_nomem(err), -1;
    return 0;
}

static int cmp_pos(const void *a, const void *b)
{
    const tgW_item *x = a, *y = b;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static tgW_plan *plan_of(tg_rules *rs, tgW_rw *rw, const tgW_query *q, const tagset *outer,
                         unsigned depth, tg_error *err)
{
    if (depth > MAX_NEST_RW) {
        size_t n;
        const char *s = tg_symbol_name(rw->name, &n);
        tgE_set(err, TG_ERR_RANGE, NULL, 0, 0, "rewriter %.*s contains itself", (int)n, s);
        return NULL;
    }
    tagset me = {rw->name, rw->tags, outer};
    outer = &me;
    tgW_plan *p = GC_MALLOC(sizeof *p);
    if (!p)
        return tgE_nomem(err), NULL;
    p->rw = rw;
    p->kind = rw->kind;
    tgW_item *items = rw->items;
    if (rw->kind == TGW_SEQ && rw->nitems) {
        /* stable: equal positions keep their order */
        items = GC_MALLOC(rw->nitems * sizeof *items);
        if (!items)
            return tgE_nomem(err), NULL;
        memcpy(items, rw->items, rw->nitems * sizeof *items);
        for (size_t i = 0; i < rw->nitems; i++)
            items[i].order = (uint32_t)i;
        qsort(items, rw->nitems, sizeof *items, cmp_pos);
    }
    rvec rules = {0}, rels = {0};
    for (size_t i = 0; i < rw->nitems; i++) {
        if (rw->kind == TGW_SEQ && !items[i].rw) {
            /* a rule or relation in a sequence: a walk of its own */
            if (plan_item(rs, p, &rules, &rels, &items[i], q, outer, depth, err) < 0)
                return NULL;
            if (rules.n || rels.n) {
                tgW_plan *w = GC_MALLOC(sizeof *w);
                if (!w || tgW_index_build(rs, &w->ix, rules.v, rules.n) < 0)
                    return tgE_nomem(err), NULL;
                w->kind = TGW_WALK_IN;
                w->rules = rules.v, w->nrules = rules.n;
                w->rels = rels.v, w->nrels = rels.n;
                w->rw = rw;
                rules = (rvec){0}, rels = (rvec){0};
                if (parts_push(p, w) < 0)
                    return tgE_nomem(err), NULL;
            }
            continue;
        }
        if (plan_item(rs, p, &rules, &rels, &items[i], q, outer, depth, err) < 0)
            return NULL;
    }
    p->rules = rules.v, p->nrules = rules.n;
    p->rels = rels.v, p->nrels = rels.n;
    if (tgW_index_build(rs, &p->ix, rules.v, rules.n) < 0)
        return tgE_nomem(err), NULL;
    return p;
}

/* ---- running -------------------------------------------------------------- */

static double now_ms(void)
{
    return tgTm_ms();
}

/* ---- timed profiles, part by part --------------------------------------- */

/* The profile tree of plan p (one node per part, as the plan nests). */
static tgW_pnode *pnode_make(const tgW_plan *p)
{
    tgW_pnode *pn = GC_MALLOC(sizeof *pn);
    uint32_t n = p->nrules + p->nrels;
    if (!pn)
        return NULL;
    pn->p = p;
    pn->fired = GC_MALLOC_ATOMIC((n + 1) * sizeof *pn->fired);
    pn->built = GC_MALLOC_ATOMIC((n + 1) * sizeof *pn->built);
    pn->tried = GC_MALLOC_ATOMIC((n + 1) * sizeof *pn->tried);
    pn->ticks = GC_MALLOC_ATOMIC((n + 1) * sizeof *pn->ticks);
    pn->kids = GC_MALLOC((p->nparts + 1) * sizeof *pn->kids);
    if (!pn->fired || !pn->built || !pn->tried || !pn->ticks || !pn->kids)
        return NULL;
    for (size_t i = 0; i < p->nparts; i++)
        if (!(pn->kids[i] = pnode_make(p->parts[i])))
            return NULL;
    return pn;
}

static void pnode_clear(tgW_pnode *pn)
{
    uint32_t n = pn->p->nrules + pn->p->nrels;
    memset(pn->fired, 0, n * sizeof *pn->fired);
    memset(pn->built, 0, n * sizeof *pn->built);
    memset(pn->tried, 0, n * sizeof *pn->tried);
    memset(pn->ticks, 0, n * sizeof *pn->ticks);
    pn->ms = 0, pn->runs = pn->passes = 0, pn->npass = 0;
    for (size_t i = 0; i < pn->p->nparts; i++)
        pnode_clear(pn->kids[i]);
}

/* Around a run of p's own rules and relations: sign -1 before, +1 after,
 * so that pn keeps what the runs added to the rules' counters (the same
 * rule may be in other parts too). */
static void pnode_own(tgW_pnode *pn, int sign)
{
    const tgW_plan *p = pn->p;
    for (uint32_t i = 0; i < p->nrules + p->nrels; i++) {
        const tgW_rule *r = i < p->nrules ? p->rules[i] : p->rels[i - p->nrules];
        if (sign < 0)
            pn->fired[i] -= r->fired, pn->built[i] -= r->built, pn->tried[i] -= r->tried,
                pn->ticks[i] -= r->ticks;
        else
            pn->fired[i] += r->fired, pn->built[i] += r->built, pn->tried[i] += r->tried,
                pn->ticks[i] += r->ticks;
    }
}

/* An equilibrium pass done: its time, firings and result. */
static int pnode_pass(tgW_pnode *pn, double ms, unsigned long long fired, tg_term *out)
{
    pn->passes++;
    if (pn->npass >= TGW_PASSES_KEPT)
        return 0;
    if (pn->npass == pn->cappass) {
        size_t nc = pn->cappass ? 2 * pn->cappass : 8;
        double *a = GC_MALLOC_ATOMIC(nc * sizeof *a);
        unsigned long long *b = GC_MALLOC_ATOMIC(nc * sizeof *b);
        tg_term **c = GC_MALLOC(nc * sizeof *c);
        if (!a || !b || !c)
            return -1;
        if (pn->npass) {
            memcpy(a, pn->pass_ms, pn->npass * sizeof *a);
            memcpy(b, pn->pass_fired, pn->npass * sizeof *b);
            memcpy(c, pn->pass_out, pn->npass * sizeof *c);
        }
        pn->pass_ms = a, pn->pass_fired = b, pn->pass_out = c, pn->cappass = nc;
    }
    pn->pass_ms[pn->npass] = ms, pn->pass_fired[pn->npass] = fired, pn->pass_out[pn->npass] = out;
    pn->npass++;
    return 0;
}

/* Distinct compound nodes of t (a DAG).  Every node it meets is
 * reachable from t, which the caller holds, so the set and the stack are
 * plain malloc memory the collector need not scan (profiles count large
 * graphs several times per rewrite: this is on their path). */
size_t tgW_count_nodes(tg_ctx *ctx, tg_term *t)
{
    (void)ctx;
    if (!tgT_ispair(t))
        return 0;
    size_t cap = 1024, used = 0, n = 0, scap = 256, count = 0;
    const tg_term **set = calloc(cap, sizeof *set);
    const tg_term **st = malloc(scap * sizeof *st);
    if (!set || !st)
        goto out;
    st[n++] = t;
    set[(uintptr_t)t * 0x9E3779B97F4A7C15ull >> 40 & (cap - 1)] = t;
    used = 1;
    while (n) {
        const tg_term *x = st[--n];
        count++;
        tg_iter it = {x, 0};
        for (tg_term *e; (e = tgT_iter_next(&it));) {
            if (!tgT_ispair(e))
                continue;
            if (2 * (used + 1) > cap) {     /* grow the set */
                const tg_term **ns = calloc(2 * cap, sizeof *ns);
                if (!ns)
                    goto out;
                for (size_t i = 0; i < cap; i++)
                    if (set[i]) {
                        size_t j = (uintptr_t)set[i] * 0x9E3779B97F4A7C15ull >> 40 & (2 * cap - 1);
                        while (ns[j])
                            j = (j + 1) & (2 * cap - 1);
                        ns[j] = set[i];
                    }
                free(set);
                set = ns, cap *= 2;
            }
            size_t j = (uintptr_t)e * 0x9E3779B97F4A7C15ull >> 40 & (cap - 1);
            while (set[j] && set[j] != e)
                j = (j + 1) & (cap - 1);
            if (set[j])
                continue;
            set[j] = e;
            used++;
            if (n == scap) {
                const tg_term **ns = realloc(st, 2 * scap * sizeof *ns);
                if (!ns)
                    goto out;
                st = ns, scap *= 2;
            }
            st[n++] = e;
        }
    }
out:
    free(set);
    free(st);
    return count;
}

/* Keep t to count its nodes when the profile is asked for. */
static int prof_note(tgW_prof *prof, tg_term *t)
{
    if (prof->ncounted && prof->counted[prof->ncounted - 1] == t)
        return 0;
    tg_term **v = tgW_grow(prof->counted, prof->ncounted, &prof->capcounted, prof->ncounted + 1, sizeof *v);
    if (!v)
        return -1;
    prof->counted = v;
    v[prof->ncounted++] = t;
    return 0;
}

/* The node counts of the profile, once: each distinct term counted once. */
static int prof_count(tg_rules *rs, tgW_prof *prof)
{
    if (prof->nodes_known)
        return 0;
    tgW_map done = {0};
    size_t max = 0;
    for (size_t i = 0; i < prof->ncounted; i++) {
        tg_term *t = prof->counted[i];
        if (tgW_map_get(&done, t))
            continue;
        size_t n = tgW_count_nodes(rs->ctx, t);
        if (tgW_map_put(&done, t, (void *)(uintptr_t)(n + 1)) < 0)
            return -1;
        if (n > max)
            max = n;
    }
    /* start and end are among the terms counted */
    prof->nodes_start = (size_t)(uintptr_t)tgW_map_get(&done, prof->start) - 1;
    prof->nodes_end = prof->end ? (size_t)(uintptr_t)tgW_map_get(&done, prof->end) - 1 : 0;
    prof->nodes_max = max;
    prof->nodes_known = 1;
    prof->counted = NULL, prof->ncounted = prof->capcounted = 0;
    return 0;
}

typedef struct runner {
    tg_rules *rs;
    tg_error *err;
    tgW_prof *prof;
} runner;

static tg_term *run_plan(runner *u, const tgW_plan *p, tgW_pnode *pn, tg_term *t);

static void rules_mark(const tgW_plan *p)
{
    for (uint32_t i = 0; i < p->nrules; i++)
        p->rules[i]->fired0 = p->rules[i]->fired;
    for (uint32_t i = 0; i < p->nrels; i++)
        p->rels[i]->fired0 = p->rels[i]->fired;
}

/* One rewrite of t at its root: by the first of p's rules that
 * applies, else by the first of its relations with an answer; t itself
 * when none does, NULL with err filled. */
static tg_term *step(runner *u, const tgW_plan *p, const tgW_run *run, tg_term *t)
{
    tg_term *y = p->nrules ? tgW_step(u->rs, run, t, u->err) : t;
    if (!y || y != t || !p->nrels)
        return y;
    int k = tgD_step(u->rs, p->rels, p->nrels, t, run->limit, &y, u->err);
    return k < 0 ? NULL : k ? y : t;
}

/* Walk t once: at each node (after its elements when inputs first,
 * before them when outputs first) one rewrite by the first rule that
 * applies, or else the first relation.  What a rewrite gives is not
 * walked again: with hash-consing a right side can rebuild the very node
 * it came from, which would otherwise be rewritten forever.
 *
 * With assoc / comm ops, each node is rewritten in canonical form
 * (ac.c).  Inputs first, the walk makes it so on the way (as the
 * machine's walk does): a nested application of an assoc op is spliced
 * into its parent on the way down, and each node is put in canonical
 * order when it is built on the way up, so a node is interned once.
 * Outputs first, a node is rewritten before its elements are walked, so
 * the whole input is made canonical first; so it is with provenance,
 * whose positions are those of the canonical input. */
static tg_term *walk(runner *u, const tgW_plan *p, tg_term *t)
{
    tg_rules *rs = u->rs;
    tgW_run run = {&p->ix, 0, 1, NULL, NULL, NULL, 0};
    int in_first = p->kind == TGW_WALK_IN;
    tgO_prov *pv = rs->prov;
    uint32_t root = pv ? tgO_pass(pv) : 0;
    if (pv)
        tgO_at(pv, root);
    if (!tgT_ispair(t))
        return step(u, p, &run, t);
    typedef struct wf {
        tg_term *t;
        tg_iter it;
        size_t vb;
        uint32_t pos;       /* provenance: its position id */
        int changed;    /* an element was rewritten: the node is built again */
        const tgW_op *op;   /* assoc / comm op of the node, when canonicalizing on the way */
        int splice;     /* a nested application of op: its elements are its parent's */
    } wf;
    wf *st = NULL;
    size_t n = 0, cap = 0;
    tg_term **vals = NULL;
    size_t nv = 0, capv = 0;
    tgW_map done = {0};
    tg_term *res = NULL;
#define GROW(arr, cnt, cp, extra)                                               \
    do {                                                                        \
        if ((cnt) + (extra) > (cp)) {                                           \
            size_t nc = (cp) ? 2 * (cp) : 256;                                  \
            while (nc < (cnt) + (extra))                                        \
                nc *= 2;                                                        \
            void *na = GC_MALLOC(nc * sizeof *(arr));                           \
            if (!na)                                                            \
                goto oom;                                                       \
            if (cnt)                                                            \
                memcpy(na, (arr), (cnt) * sizeof *(arr));                       \
            (arr) = na, (cp) = nc;                                              \
        }                                                                       \
    } while (0)
    int ac = tgW_ac_any(rs), onway = ac && in_first && !pv;
    if (ac && !onway && !(t = tgW_ac_canon_deep(rs, t)))     /* flat first: see ac.c */
        goto oom;
    tg_term *start = t;
    if (!in_first && (!(start = step(u, p, &run, t)) || start != t))
        return start;   /* rewritten at the root: not walked again */
    GROW(st, n, cap, 1);
    st[n] = (wf){start, {start, 0}, nv, root, 0, onway ? tgW_ac_op_of(rs, start) : NULL, 0};
    n++;
    while (n) {
        wf *w = &st[n - 1];
        tg_term *x = tgT_iter_next(&w->it);
        if (x && w->op && (w->op->flags & TGW_ASSOC) && tgT_ispair(x) &&
            x->e[0] == w->op->name && tg_tail(x) == TGT_NIL) {
            /* spliced even when met before: it is not an argument of
             * its own (as in tgW_ac_canon_deep) */
            w->changed = 1;
            GROW(st, n, cap, 1);
            st[n] = (wf){x, {x, 1}, nv, 0, 0, st[n - 1].op, 1};
            n++;
            continue;
        }
        if (x) {
            tg_term *v = tgT_ispair(x) ? tgW_map_get(&done, x) : NULL;
            if (!v && tgT_ispair(x)) {
                tg_term *y = x;
                uint32_t pos = pv ? tgO_pos(pv, w->pos, (uint32_t)(nv - w->vb)) : 0;
                if (pv)
                    tgO_at(pv, pos);
                if (!in_first && !(y = step(u, p, &run, x)))
                    goto out;
                if (y == x) {
                    GROW(st, n, cap, 1);
                    st[n] = (wf){x, {x, 0}, nv, pos, 0, onway ? tgW_ac_op_of(rs, x) : NULL, 0};
                    n++;
                    continue;
                }
                v = y;      /* rewritten: not walked again */
                if (tgW_map_put(&done, x, y) < 0)
                    goto oom;
            }
            GROW(vals, nv, capv, 1);
            vals[nv++] = v ? v : x;
            w->changed |= v && v != x;
            continue;
        }
        if (w->splice) {
            n--;    /* its elements stay, in the node around it */
            continue;
        }
        tg_term *tail = (tg_term *)w->it.node;
        size_t cnt = nv - w->vb;
        /* unchanged elements: the node itself (what building it would find) */
        tg_term *node = !w->changed ? w->t
                                    : tg_list(rs->ctx, cnt, vals + w->vb, tail == TGT_NIL ? NULL : tail);
        /* its elements may have changed (even its head, to an assoc /
         * comm op's); on the way, an unchanged node needs it only when
         * its op is one (w->op) */
        if (!node ||
            (ac && (!onway || w->op || node != w->t) && !(node = tgW_ac_canon(rs, node))))
            goto oom;
        if (pv)
            tgO_at(pv, w->pos);
        if (in_first && !(node = step(u, p, &run, node)))
            goto out;
        nv = w->vb;
        tg_term *orig = w->t;
        if (pv && tgO_link(pv, node, orig) < 0)
            goto oom;
        n--;
        if (!n) {
            res = node;
            break;
        }
        if (tgW_map_put(&done, orig, node) < 0)
            goto oom;
        GROW(vals, nv, capv, 1);
        vals[nv++] = node;
        st[n - 1].changed |= node != orig;
    }
#undef GROW
out:
    return res;
oom:
    tgE_nomem(u->err);
    return NULL;
}

/* Whether rule r, tried on a normal form, calls no user code before it
 * fires: no C predicate or rewriter, no relation (which may be a C
 * function).  Its equality tests and the calls of its conditions only
 * read terms and run the same rules. */
static int pure_on_normal_forms(const tgW_rule *r)
{
    if (r->rel)
        return 0;
    for (const tgW_ins *i = r->body;; i++)
        switch (i->op) {
        case E_FIRE: case E_RET: case E_CRET:
            return 1;
        case E_CEXT: case E_CPRED: case E_GOAL:
            return 0;
        default:
            continue;
        }
}

/* Whether a machine pass over its own output may be left out: that
 * output is a normal form under the same rules, so the pass would only
 * repeat the tests that failed in the pass before and change nothing.
 * The profile counts it as a pass and counts none of those tests
 * (doc/rules.md).  Not when a user function would see the tests, nor
 * with provenance (it logs every pass). */
static int pass_skippable(const tg_rules *rs, const tgW_index *ix)
{
    if (rs->prov)
        return 0;
    for (uint32_t o = 0; o < ix->nops; o++)
        for (uint32_t k = 0; k < ix->by[o].n; k++)
            if (!pure_on_normal_forms(ix->by[o].r[k]))
                return 0;
    return 1;
}

static unsigned long long limit_of(double ratio, size_t nodes)
{
    return (unsigned long long)(ratio * (double)(nodes ? nodes : 1)) + 1;
}

int tgW_limit_over(tg_rules *rs, tgW_limit *L, unsigned long long fired, size_t lower)
{
    if (!L->exact) {
        if (lower && fired <= limit_of(L->ratio, lower)) {
            L->n = limit_of(L->ratio, lower);
            return 0;
        }
        L->n = limit_of(L->ratio, tgW_count_nodes(rs->ctx, L->start));
        L->exact = 1;
    }
    return fired > L->n;
}

static tg_term *equilibrium(runner *u, const tgW_plan *p, tgW_pnode *pn, tg_term *t)
{
    tg_rules *rs = u->rs;
    double ratio = p->rw ? p->rw->max_use_ratio : 0;
    tgW_limit lim = {ratio, t, limit_of(ratio, 1), 0};
    tgW_run run = {&p->ix, 1, 0, ratio > 0 ? &lim : NULL, rs->hook, rs->hook_ud, 0};
    tgW_map seen = {0}, relmemo = {0};
    /* the last machine pass's output when passes over it may be left out */
    tg_term *normal = NULL;
    int skippable = p->nrules && pass_skippable(rs, &p->ix);
    for (unsigned pass = 0; pass < MAX_PASSES; pass++) {
        if (u->prof)
            u->prof->passes++;
        double pt0 = now_ms();
        unsigned long long pr0 = rs->rewrites;
        tg_term *t1 = t;
        pnode_own(pn, -1);
        if (p->nrules && t != normal) {
            t1 = tgW_normalize(rs, &run, t, u->err);
            if (skippable)
                normal = t1;
            if (t1)
                run.nodes = tgW_normalize_seen(rs);     /* the next pass's done map sized from this one's */
        }
        if (t1 && p->nrels)
            t1 = tgD_normalize(rs, p->rels, p->nrels, t1, run.limit, &relmemo, u->err);
        pnode_own(pn, +1);
        if (!t1)
            return NULL;
        for (size_t i = 0; i < p->nparts && t1; i++)
            t1 = run_plan(u, p->parts[i], pn->kids[i], t1);
        if (!t1)
            return NULL;
        if (pnode_pass(pn, now_ms() - pt0, rs->rewrites - pr0, t1) < 0)
            return tgE_nomem(u->err), NULL;
        if (u->prof && prof_note(u->prof, t1) < 0)
            return tgE_nomem(u->err), NULL;
        if (t1 == t)
            return t;
        if (tgW_map_get(&seen, t1)) {
            char *s = tg_print(t1, NULL);
            size_t nl;
            const char *nm = p->rw ? tg_symbol_name(p->rw->name, &nl) : "?";
            if (!p->rw)
                nl = 1;
            tgE_set(u->err, TG_ERR_RANGE, NULL, 0, 0,
                    "rewriting cycles: %s comes back after a pass of %.*s", s ? s : "a term",
                    (int)nl, nm);
            free(s);
            return NULL;
        }
        if (tgW_map_put(&seen, t, t) < 0)
            return tgE_nomem(u->err), NULL;
        t = t1;
    }
    tgE_set(u->err, TG_ERR_RANGE, NULL, 0, 0, "no equilibrium after %d passes", MAX_PASSES);
    return NULL;
}

static tg_term *run_part(runner *u, const tgW_plan *p, tgW_pnode *pn, tg_term *t)
{
    switch (p->kind) {
    case TGW_EQUIL:
        return equilibrium(u, p, pn, t);
    case TGW_WALK_IN: case TGW_WALK_OUT: {
        if (u->prof)
            u->prof->passes++;
        pn->passes++;
        pnode_own(pn, -1);
        tg_term *r = p->nrules || p->nrels ? walk(u, p, t) : t;
        pnode_own(pn, +1);
        for (size_t i = 0; i < p->nparts && r; i++)
            r = run_plan(u, p->parts[i], pn->kids[i], r);
        return r;
    }
    case TGW_SEQ:
        for (size_t i = 0; i < p->nparts && t; i++)
            t = run_plan(u, p->parts[i], pn->kids[i], t);
        return t;
    }
    return t;
}

/* Run part p of a plan on t, timed in its profile node pn. */
static tg_term *run_plan(runner *u, const tgW_plan *p, tgW_pnode *pn, tg_term *t)
{
    if (u->prof && prof_note(u->prof, t) < 0)
        return tgE_nomem(u->err), NULL;
    rules_mark(p);
    double t0 = now_ms();
    tg_term *r = run_part(u, p, pn, t);
    pn->ms += now_ms() - t0;
    pn->runs++;
    return r;
}

/* ---- the entry points -------------------------------------------------------- */

static void collect_rules(const tgW_plan *p, rvec *out)
{
    for (uint32_t i = 0; i < p->nrules; i++)
        rpush(out, p->rules[i]);
    for (uint32_t i = 0; i < p->nrels; i++)
        rpush(out, p->rels[i]);
    for (size_t i = 0; i < p->nparts; i++)
        collect_rules(p->parts[i], out);
}

tgW_cplan *tgW_plan_cached(tg_rules *rs, tg_term *spec)
{
    return tgW_map_get(&rs->plans, spec);
}

void tgW_plans_clear(tg_rules *rs)
{
    tgW_map_clear(&rs->plans);
}

tgW_cplan *tgW_plan_make(tg_rules *rs, tg_term *spec, tgW_rw *rw, const tgW_query *q, tg_error *err)
{
    tagset top = {NULL, TGT_NIL, NULL};
    if (rw->kind == TGW_QUERY && !(rw = resolve_query(rw, &q)))
        return tgE_nomem(err), NULL;
    tgW_plan *p = plan_of(rs, rw, q, &top, 0, err);
    if (!p)
        return NULL;
    tgW_cplan *cp = GC_MALLOC(sizeof *cp);
    if (!cp)
        return tgE_nomem(err), NULL;
    rvec rules = {0};
    collect_rules(p, &rules);
    cp->p = p, cp->rules = rules.v, cp->nrules = rules.n;
    if (spec && tgW_map_put(&rs->plans, spec, cp) < 0)
        return tgE_nomem(err), NULL;
    return cp;
}

tg_term *tgW_rewrite(tg_rules *rs, tgW_rw *rw, const tgW_query *q, tg_term *t, tg_error *err)
{
    tgW_cplan *cp = tgW_plan_make(rs, NULL, rw, q, err);
    return cp ? tgW_rewrite_plan(rs, cp, t, err) : NULL;
}

tg_term *tgW_rewrite_plan(tg_rules *rs, const tgW_cplan *cp, tg_term *t, tg_error *err)
{
    tgW_plan *p = cp->p;
    tgW_prof *prof = GC_MALLOC(sizeof *prof);
    if (!prof)
        return tgE_nomem(err), NULL;
    uint32_t n = cp->nrules;
    prof->rules = cp->rules, prof->nrules = n;
    prof->fired = GC_MALLOC_ATOMIC((n ? n : 1) * sizeof *prof->fired);
    prof->built = GC_MALLOC_ATOMIC((n ? n : 1) * sizeof *prof->built);
    prof->tried = GC_MALLOC_ATOMIC((n ? n : 1) * sizeof *prof->tried);
    if (!prof->fired || !prof->built || !prof->tried)
        return tgE_nomem(err), NULL;
    for (uint32_t i = 0; i < n; i++) {
        prof->fired[i] = cp->rules[i]->fired;
        prof->built[i] = cp->rules[i]->built;
        prof->tried[i] = cp->rules[i]->tried;
    }
    prof->name = p->rw->name;
    prof->start = t;
    tgW_pnode *tree = cp->tree ? cp->tree : pnode_make(p);
    if (!tree)
        return tgE_nomem(err), NULL;
    ((tgW_cplan *)cp)->tree = tree;     /* made once, cleared at each run */
    pnode_clear(tree);
    prof->tree = tree;
    if (prof_note(prof, t) < 0)
        return tgE_nomem(err), NULL;
    runner u = {rs, err, prof};
    rs->hook = rs->trace_on && rs->trace ? tgW_trace_hook : NULL;
    rs->hook_ud = rs;
    rs->rewrites = rs->conditions = 0;
    rs->interrupt = 0;
    tgW_limits_start(rs);
    if (rs->prov)
        tgO_begin(rs->prov, t);
    double t0 = now_ms();
    tg_term *r = run_plan(&u, p, tree, t);
    prof->ms = now_ms() - t0;
    if (rs->prov)
        rs->prov->result = r;
    for (uint32_t i = 0; i < n; i++) {
        prof->fired[i] = cp->rules[i]->fired - prof->fired[i];
        prof->built[i] = cp->rules[i]->built - prof->built[i];
        prof->tried[i] = cp->rules[i]->tried - prof->tried[i];
    }
    prof->rewrites = rs->rewrites;
    prof->conditions = rs->conditions;
    prof->end = r;
    if (r && prof_note(prof, r) < 0)
        return tgE_nomem(err), NULL;
    prof->ok = r != NULL;
    rs->last = prof;
    return r;
}

int tgW_trace_hook(void *ud, tgW_rule *r, tg_term *before, tg_term *const *R)
{
    tg_rules *rs = ud;
    tg_term *after = tgW_instantiate(rs, r, R);
    char *b = tg_print(before, NULL), *a = after ? tg_print(after, NULL) : NULL;
    size_t nl;
    const char *nm = tg_symbol_name(r->name, &nl);
    if (b && a)
        fprintf(rs->trace, "%.*s%s: %s => %s\n", (int)nl, nm, r->backward ? " (reverse)" : "", b, a);
    free(b);
    free(a);
    return b && a ? 0 : -1;
}

static tg_term *sym(tg_rules *rs, const char *s)
{
    return tg_symbol_cstr(rs->ctx, s);
}

static tg_term *list_of(tg_rules *rs, size_t n, ...)
{
    tg_term *v[8];
    va_list ap;
    va_start(ap, n);
    for (size_t i = 0; i < n; i++)
        v[i] = va_arg(ap, tg_term *);
    va_end(ap);
    for (size_t i = 0; i < n; i++)
        if (!v[i])
            return NULL;
    return tg_list(rs->ctx, n, v, NULL);
}

tg_term *tgW_profile_term(tg_rules *rs)
{
    tgW_prof *p = rs->last;
    if (!p || prof_count(rs, p) < 0)
        return NULL;
    tg_ctx *ctx = rs->ctx;
    tg_term **fired = GC_MALLOC((p->nrules + 1) * sizeof *fired);
    tg_term **never = GC_MALLOC((p->nrules + 1) * sizeof *never);
    if (!fired || !never)
        return NULL;
    size_t nf = 0, nn = 0;
    fired[nf++] = sym(rs, "rules");
    never[nn++] = sym(rs, "never-fired");
    for (uint32_t i = 0; i < p->nrules; i++) {
        const tgW_rule *r = p->rules[i];
        /* alternatives of one rule count together, under its name */
        int dup = 0;
        for (uint32_t j = 0; j < i; j++)
            dup |= p->rules[j]->name == r->name && p->rules[j]->backward == r->backward;
        if (dup)
            continue;
        unsigned long long f = 0, b = 0;
        for (uint32_t j = i; j < p->nrules; j++)
            if (p->rules[j]->name == r->name && p->rules[j]->backward == r->backward)
                f += p->fired[j], b += p->built[j];
        tg_term *nm = r->backward ? list_of(rs, 2, sym(rs, "reverse"), r->name) : r->name;
        if (f)
            fired[nf++] = list_of(rs, 3, nm, tg_int(ctx, (int64_t)f), tg_int(ctx, (int64_t)b));
        else
            never[nn++] = nm;
        if (!fired[nf - 1] || !never[nn - 1])
            return NULL;
    }
    tg_term *parts[8];
    parts[0] = sym(rs, "profile");
    parts[1] = p->name;
    parts[2] = list_of(rs, 2, sym(rs, "passes"), tg_int(ctx, (int64_t)p->passes));
    parts[3] = list_of(rs, 4, sym(rs, "nodes"), tg_int(ctx, (int64_t)p->nodes_start),
                       tg_int(ctx, (int64_t)p->nodes_end), tg_int(ctx, (int64_t)p->nodes_max));
    parts[4] = list_of(rs, 2, sym(rs, "rewrites"), tg_int(ctx, (int64_t)p->rewrites));
    parts[5] = list_of(rs, 2, sym(rs, "conditions"), tg_int(ctx, (int64_t)p->conditions));
    parts[6] = tg_list(ctx, nf, fired, NULL);
    parts[7] = tg_list(ctx, nn, never, NULL);
    for (int i = 0; i < 8; i++)
        if (!parts[i])
            return NULL;
    return tg_list(ctx, 8, parts, NULL);
}

/* ---- the timed profile: as a term, as text -------------------------------- */

static const char *kind_name(int kind)
{
    switch (kind) {
    case TGW_EQUIL: return "equilibrium";
    case TGW_WALK_IN: return "walk";
    case TGW_WALK_OUT: return "walk-out";
    default: return "sequence";
    }
}

/* The rules of a profile node, alternatives of one rule summed under its
 * name: (rule index of the first, fired, built, tried, ticks). */
typedef struct rsum {
    const tgW_rule *r;
    unsigned long long fired, built, tried, ticks;
} rsum;

static int by_time(const void *a, const void *b)
{
    const rsum *x = a, *y = b;
    if (x->ticks != y->ticks)
        return x->ticks < y->ticks ? 1 : -1;
    return x->fired < y->fired ? 1 : x->fired > y->fired ? -1 : 0;
}

/* The node's rules summed by name, in load order or slowest first: their
 * count in *n. */
static rsum *rules_summed(const tgW_pnode *pn, size_t *n, int slowest_first)
{
    const tgW_plan *p = pn->p;
    uint32_t all = p->nrules + p->nrels;
    rsum *v = GC_MALLOC_ATOMIC((all + 1) * sizeof *v);
    *n = 0;
    if (!v)
        return NULL;
    for (uint32_t i = 0; i < all; i++) {
        const tgW_rule *r = i < p->nrules ? p->rules[i] : p->rels[i - p->nrules];
        size_t k = 0;
        while (k < *n && !(v[k].r->name == r->name && v[k].r->backward == r->backward))
            k++;
        if (k == *n)
            v[(*n)++] = (rsum){r, 0, 0, 0, 0};
        v[k].fired += pn->fired[i], v[k].built += pn->built[i];
        v[k].tried += pn->tried[i], v[k].ticks += pn->ticks[i];
    }
    if (slowest_first)
        qsort(v, *n, sizeof *v, by_time);
    return v;
}

static tg_term *rule_name(tg_rules *rs, const tgW_rule *r)
{
    return r->backward ? list_of(rs, 2, sym(rs, "reverse"), r->name) : r->name;
}

static tg_term *ms_term(tg_rules *rs, double ms)
{
    return tg_double(rs->ctx, ms);
}

/* (rewriter NAME KIND (time MS) (runs N) (passes P ((PASS MS FIRED NODES) ...))
 *  (rules (RULE MS FIRED BUILT TRIED) ...) (parts PART ...)), NAME being
 * the rewriter's name or its kind for an unnamed part. */
static tg_term *pnode_term(tg_rules *rs, const tgW_pnode *pn, double mspt, int depth)
{
    tg_ctx *ctx = rs->ctx;
    const tgW_plan *p = pn->p;
    if (depth > MAX_NEST_RW)
        return NULL;
    size_t nr;
    rsum *v = rules_summed(pn, &nr, 1);
    tg_term **rl = GC_MALLOC((nr + 1) * sizeof *rl), **pl = GC_MALLOC((pn->npass + 1) * sizeof *pl),
            **kl = GC_MALLOC((p->nparts + 1) * sizeof *kl);
    if (!v || !rl || !pl || !kl)
        return NULL;
    rl[0] = sym(rs, "rules");
    for (size_t i = 0; i < nr; i++)
        if (!(rl[i + 1] = list_of(rs, 5, rule_name(rs, v[i].r), ms_term(rs, (double)v[i].ticks * mspt),
                                  tg_int(ctx, (int64_t)v[i].fired), tg_int(ctx, (int64_t)v[i].built),
                                  tg_int(ctx, (int64_t)v[i].tried))))
            return NULL;
    for (size_t i = 0; i < pn->npass; i++)
        if (!(pl[i] = list_of(rs, 4, tg_int(ctx, (int64_t)i), ms_term(rs, pn->pass_ms[i]),
                              tg_int(ctx, (int64_t)pn->pass_fired[i]),
                              tg_int(ctx, (int64_t)tgW_count_nodes(ctx, pn->pass_out[i])))))
            return NULL;
    kl[0] = sym(rs, "parts");
    for (size_t i = 0; i < p->nparts; i++)
        if (!(kl[i + 1] = pnode_term(rs, pn->kids[i], mspt, depth + 1)))
            return NULL;
    tg_term *passes = tg_list(ctx, pn->npass, pl, NULL);
    tg_term *parts[8] = {
        sym(rs, "rewriter"), p->rw ? p->rw->name : sym(rs, kind_name(p->kind)), sym(rs, kind_name(p->kind)),
        list_of(rs, 2, sym(rs, "time"), ms_term(rs, pn->ms)),
        list_of(rs, 2, sym(rs, "runs"), tg_int(ctx, (int64_t)pn->runs)),
        passes ? list_of(rs, 3, sym(rs, "passes"), tg_int(ctx, (int64_t)pn->passes), passes) : NULL,
        tg_list(ctx, nr + 1, rl, NULL), tg_list(ctx, p->nparts + 1, kl, NULL)};
    for (int i = 0; i < 8; i++)
        if (!parts[i])
            return NULL;
    return tg_list(ctx, 8, parts, NULL);
}

tg_term *tgW_profile_tree(tg_rules *rs)
{
    tgW_prof *p = rs->last;
    if (!p || !p->tree || prof_count(rs, p) < 0)
        return NULL;
    tg_term *tree = pnode_term(rs, p->tree, tgTm_calibrated(), 0);
    tg_term *parts[4] = {sym(rs, "profile-tree"),
                         list_of(rs, 2, sym(rs, "time"), ms_term(rs, p->ms)),
                         list_of(rs, 4, sym(rs, "nodes"), tg_int(rs->ctx, (int64_t)p->nodes_start),
                                 tg_int(rs->ctx, (int64_t)p->nodes_end), tg_int(rs->ctx, (int64_t)p->nodes_max)),
                         tree};
    for (int i = 0; i < 4; i++)
        if (!parts[i])
            return NULL;
    return tg_list(rs->ctx, 4, parts, NULL);
}

static void put_name(FILE *out, const tg_term *name)
{
    size_t nl;
    const char *s = tg_symbol_name(name, &nl);
    fprintf(out, "%.*s", (int)nl, s ? s : "?");
}

static int pnode_print(tg_rules *rs, const tgW_pnode *pn, double mspt, int depth, FILE *out)
{
    const tgW_plan *p = pn->p;
    int ind = 2 * depth;
    if (depth > MAX_NEST_RW)
        return -1;
    fprintf(out, "%*s", ind, "");
    put_name(out, p->rw ? p->rw->name : sym(rs, kind_name(p->kind)));
    fprintf(out, " (%s): %.3f ms, %lu run%s", kind_name(p->kind), pn->ms, pn->runs, pn->runs == 1 ? "" : "s");
    if (p->kind != TGW_SEQ)
        fprintf(out, ", %lu pass%s", pn->passes, pn->passes == 1 ? "" : "es");
    fputc('\n', out);
    for (size_t i = 0; i < pn->npass; i++)
        fprintf(out, "%*s  pass %zu: %.3f ms, %llu firing%s, %zu nodes after\n", ind, "", i, pn->pass_ms[i],
                pn->pass_fired[i], pn->pass_fired[i] == 1 ? "" : "s", tgW_count_nodes(rs->ctx, pn->pass_out[i]));
    size_t nr, never = 0;
    rsum *v = rules_summed(pn, &nr, 1), *w = rules_summed(pn, &nr, 0);
    if (!v || !w)
        return -1;
    if (nr)
        fprintf(out, "%*s  %11s %8s %8s %8s  rule\n", ind, "", "time", "fired", "built", "tried");
    for (size_t i = 0; i < nr; i++) {
        if (!v[i].fired) {
            never++;
            continue;
        }
        fprintf(out, "%*s  %8.1f us %8llu %8llu %8llu  ", ind, "", (double)v[i].ticks * mspt * 1e3, v[i].fired,
                v[i].built, v[i].tried);
        put_name(out, v[i].r->name);
        fputs(v[i].r->backward ? " (reverse)\n" : "\n", out);
    }
    if (never) {
        fprintf(out, "%*s  never fired:", ind, "");
        for (size_t i = 0; i < nr; i++)    /* in load order */
            if (!w[i].fired) {
                fputc(' ', out);
                put_name(out, w[i].r->name);
                if (w[i].r->backward)
                    fputs(" (reverse)", out);
            }
        fputc('\n', out);
    }
    for (size_t i = 0; i < p->nparts; i++)
        if (pnode_print(rs, pn->kids[i], mspt, depth + 1, out) < 0)
            return -1;
    return 0;
}

int tgW_profile_print(tg_rules *rs, FILE *out)
{
    tgW_prof *p = rs->last;
    if (!p || !p->tree || prof_count(rs, p) < 0)
        return -1;
    fprintf(out, "rewrite ");
    put_name(out, p->name);
    fprintf(out, ": %.3f ms, nodes %zu at the start, %zu at the end, %zu at most; %llu rewrites, %llu conditions%s\n",
            p->ms, p->nodes_start, p->nodes_end, p->nodes_max, p->rewrites, p->conditions,
            rs->timing ? "" : " (rule times: tg_rules_set_timing)");
    return pnode_print(rs, p->tree, tgTm_calibrated(), 1, out);
}

/* ---- the public entry points of timed profiles -------------------------- */

void tg_rules_set_timing(tg_rules *rs, int on)
{
    if (rs)
        rs->timing = on != 0;
}

tg_term *tg_rules_profile_tree(tg_rules *rs)
{
    return rs ? tgW_profile_tree(rs) : NULL;
}

int tg_rules_profile_print(tg_rules *rs, FILE *out)
{
    return rs && out ? tgW_profile_print(rs, out) : -1;
}
