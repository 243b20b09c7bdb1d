/* scanterm.c - the scan term the Scan rewrites work on (scanint.h): DAG
 * walks with explicit stacks (into scan lambdas or not), substitution,
 * the symbols of a term, the scan term read into a record of parallel
 * lists (tgSo_parse) and built back (tgSo_build), substitution in the
 * step, and fresh parameter names. */
#include "scanint.h"

#include <gc/gc.h>
#include <stdio.h>
#include <string.h>

/* ---- walking and rebuilding DAGs -------------------------------------- */

static int walk_in(so *s, tg_term *root, tgW_map *seen, visit_fn fn, void *ud, int lambdas);

int tgSo_walk(so *s, tg_term *root, tgW_map *seen, visit_fn fn, void *ud)
{
    return walk_in(s, root, seen, fn, ud, 1);
}

int tgSo_walk_outer(so *s, tg_term *root, tgW_map *seen, visit_fn fn, void *ud)
{
    return walk_in(s, root, seen, fn, ud, 0);
}

/* walk, not looking into the lambdas of scans when lambdas is 0 */
static int walk_in(so *s, tg_term *root, tgW_map *seen, visit_fn fn, void *ud, int lambdas)
{
    vec st = {0};
    if (!is_pair(root) || tgW_map_get(seen, root))
        return 0;
    if (push(s, &st, root) < 0 || tgW_map_put(seen, root, root) < 0)
        return s->oom = 1, -1;
    while (st.n) {
        tg_term *t = st.v[--st.n];
        int rc = fn ? fn(s, t, ud) : 0;
        if (rc)
            return rc;
        tg_iter it;
        tg_iter_init(&it, t);
        for (tg_term *e; (e = tg_iter_next(&it));)
            if (is_pair(e) && !tgW_map_get(seen, e) && (lambdas || !is_app(e, NM(s, N_LAMBDA)))) {
                if (tgW_map_put(seen, e, e) < 0 || push(s, &st, e) < 0)
                    return s->oom = 1, -1;
            }
    }
    return 0;
}

/* root with every subterm found in repl replaced by its image (not looked
 * into), and the nodes above rebuilt.  memo keeps the images of the nodes
 * done (pass an empty map).  NULL when out of memory. */
static tg_term *rebuild(so *s, tg_term *root, const tgW_map *repl, tgW_map *memo)
{
    tg_term *r = tgW_map_get(repl, root);
    if (r || !is_pair(root))
        return r ? r : root;
    vec st = {0};
    vec done = {0};     /* parallel to st: 1 once the children are pushed */
    if (push(s, &st, root) < 0 || push_any(s, &done, NULL) < 0)
        return NULL;
    while (st.n) {
        tg_term *t = st.v[st.n - 1];
        if (tgW_map_get(memo, t)) {
            st.n--, done.n--;
            continue;
        }
        tg_iter it;
        tg_iter_init(&it, t);
        if (!done.v[done.n - 1]) {
            done.v[done.n - 1] = t;
            for (tg_term *e; (e = tg_iter_next(&it));)
                if (is_pair(e) && !tgW_map_get(repl, e) && !tgW_map_get(memo, e))
                    if (push(s, &st, e) < 0 || push_any(s, &done, NULL) < 0)
                        return NULL;
            continue;
        }
        size_t n;
        tg_term **v = elems(s, t, &n);
        if (!v)
            return NULL;
        int changed = 0;
        for (size_t i = 0; i < n; i++) {
            tg_term *img = tgW_map_get(repl, v[i]);
            if (!img && is_pair(v[i]))
                img = tgW_map_get(memo, v[i]);
            if (img && img != v[i])
                v[i] = img, changed = 1;
        }
        tg_term *tail = tg_tail(t);
        tg_term *nt = changed ? tg_list(s->ctx, n, v, tail == tg_nil() ? NULL : tail) : t;
        if (!nt || tgW_map_put(memo, t, nt) < 0)
            return s->oom = 1, NULL;
        st.n--, done.n--;
    }
    return tgW_map_get(memo, root);
}

tg_term *tgSo_subst(so *s, tg_term *t, const tgW_map *repl)
{
    tgW_map memo = {0};
    return rebuild(s, t, repl, &memo);
}

/* Symbols under t go in syms (as keys). */
static int add_sym(so *s, tg_term *e, tgW_map *syms)
{
    if (tg_kind_of(e) == TG_SYMBOL && !tgW_map_get(syms, e) && tgW_map_put(syms, e, e) < 0)
        return s->oom = 1, -1;
    return 0;
}

static int syms_fn(so *s, tg_term *node, void *ud)
{
    tg_iter it;
    tg_iter_init(&it, node);
    for (tg_term *e; (e = tg_iter_next(&it));)
        if (add_sym(s, e, ud) < 0)
            return -1;
    return 0;
}

int tgSo_symbols(so *s, tg_term *t, tgW_map *syms)
{
    tgW_map seen = {0};
    if (!is_pair(t))
        return add_sym(s, t, syms);
    return tgSo_walk(s, t, &seen, syms_fn, syms);
}

static int scan_fn(so *s, tg_term *node, void *ud)
{
    (void)ud;
    return tg_car(node) == NM(s, N_SCAN);
}

static int parse_out(so *s, tg_term *t, out *o, tg_term *const *params, size_t np, size_t *k)
{
    size_t n;
    tg_term **v = is_pair(t) && tg_tail(t) == tg_nil() ? elems(s, t, &n) : NULL;
    if (!v || !n)
        return 0;
    memset(o, 0, sizeof *o);
    o->last = n > 1 && v[n - 1] == NM(s, N_LAST);
    if (n > 1 && is_app(v[n - 1], NM(s, N_LAST))) {     /* (last N) */
        if (tg_length(v[n - 1]) != 2 || tg_int_get(tg_nth(v[n - 1], 1), &o->keep) < 0 || o->keep < 1)
            return 0;
        n--;
    }
    n -= (size_t)o->last;
    if (v[0] == NM(s, N_NITSOT) && n == 1)
        o->kind = NITSOT;
    else if (v[0] == NM(s, N_SITSOT) && n == 2)
        o->kind = SITSOT, o->init = v[1], o->ntaps = 1;
    else if (v[0] == NM(s, N_MITSOT) && n == 3 && is_app(v[2], NM(s, N_TAPS)))
        o->kind = MITSOT, o->init = v[1], o->ntaps = tg_length(v[2]) - 1;
    else
        return 0;
    if (o->kind == MITSOT && !o->ntaps)
        return 0;
    o->taps = GC_MALLOC_ATOMIC((o->ntaps ? o->ntaps : 1) * sizeof *o->taps);
    o->tp = GC_MALLOC((o->ntaps ? o->ntaps : 1) * sizeof *o->tp);
    if (!o->taps || !o->tp)
        return s->oom = 1, 0;
    if (o->kind == SITSOT)
        o->taps[0] = -1;
    for (size_t i = 0; o->kind == MITSOT && i < o->ntaps; i++)
        if (tg_int_get(tg_nth(v[2], i + 1), &o->taps[i]) < 0 || o->taps[i] >= 0 ||
            o->taps[i] < -(1 << 30))
            return 0;
    if (*k + o->ntaps > np)
        return 0;
    for (size_t i = 0; i < o->ntaps; i++)
        o->tp[i] = params[(*k)++];
    return 1;
}

/* 1 when t is a scan this module understands (sc filled), 0 when not. */
int tgSo_parse(so *s, tg_term *t, scan *sc)
{
    memset(sc, 0, sizeof *sc);
    size_t n, nl, np, nr;
    tg_term **v = is_app(t, NM(s, N_SCAN)) ? elems(s, t, &n) : NULL;
    if (!v || n < 6 || !is_app(v[1], NM(s, N_LAMBDA)) || !is_app(v[2], NM(s, N_STEPS)) ||
        tg_length(v[2]) != 2 || !is_app(v[3], NM(s, N_SEQS)) || !is_app(v[4], NM(s, N_OUTS)) ||
        !is_app(v[5], NM(s, N_NSEQS)))
        return 0;
    tg_term **l = elems(s, v[1], &nl);
    if (!l || (nl != 3 && nl != 4) || tg_tail(l[1]) != tg_nil() || tg_tail(l[2]) != tg_nil())
        return 0;
    if (nl == 4 && (!is_app(l[3], NM(s, N_UNTIL)) || tg_length(l[3]) != 2))
        return 0;
    tg_term **p = elems(s, l[1], &np), **r = elems(s, l[2], &nr);
    if (!p || !r)
        return 0;
    /* distinct symbols, none of them a nested scan's business */
    tgW_map seen = {0};
    for (size_t i = 0; i < np; i++)
        if (tg_kind_of(p[i]) != TG_SYMBOL || tgW_map_get(&seen, p[i]) ||
            tgW_map_put(&seen, p[i], p[i]) < 0)
            return 0;
    tgW_map walked = {0};
    if (tgSo_walk(s, v[1], &walked, scan_fn, NULL) != 0)
        return 0;
    sc->steps = v[2];
    sc->until = nl == 4 ? tg_nth(l[3], 1) : NULL;
    size_t k = 0;
    tg_iter it;
    tg_iter_init(&it, tg_cdr(s->ctx, v[3]));
    for (tg_term *e; (e = tg_iter_next(&it));)
        if (k >= np || push(s, &sc->seq, e) < 0 || push(s, &sc->seqp, p[k++]) < 0)
            return 0;
    sc->no = tg_length(v[4]) - 1;
    if (sc->no != nr || !(sc->o = GC_MALLOC((sc->no ? sc->no : 1) * sizeof *sc->o)))
        return 0;
    for (size_t i = 0; i < sc->no; i++) {
        if (!parse_out(s, tg_nth(v[4], i + 1), &sc->o[i], p, np, &k))
            return 0;
        sc->o[i].res = r[i];
    }
    tg_iter_init(&it, tg_cdr(s->ctx, v[5]));
    for (tg_term *e; (e = tg_iter_next(&it));)
        if (k >= np || push(s, &sc->ns, e) < 0 || push(s, &sc->nsp, p[k++]) < 0)
            return 0;
    for (size_t i = 6; i < n; i++)
        if (push(s, &sc->opts, v[i]) < 0)
            return 0;
    return k == np;
}

static tg_term *build_out(so *s, const out *o)
{
    tg_term *v[4];
    size_t n = 0;
    v[n++] = NM(s, o->kind == NITSOT ? N_NITSOT : o->kind == SITSOT ? N_SITSOT : N_MITSOT);
    if (o->kind != NITSOT)
        v[n++] = o->init;
    if (o->kind == MITSOT) {
        tg_term **t = GC_MALLOC((o->ntaps + 1) * sizeof *t);
        if (!t)
            return s->oom = 1, NULL;
        t[0] = NM(s, N_TAPS);
        for (size_t i = 0; i < o->ntaps; i++)
            t[i + 1] = tg_int(s->ctx, o->taps[i]);
        v[n++] = list(s, o->ntaps + 1, t);
    }
    if (o->last)
        v[n++] = NM(s, N_LAST);
    else if (o->keep) {
        tg_term *kv = tg_int(s->ctx, o->keep);
        if (!kv || !(v[n++] = app(s, N_LAST, 1, &kv)))
            return s->oom = 1, NULL;
    }
    return list(s, n, v);
}

tg_term *tgSo_build(so *s, const scan *sc)
{
    vec p = {0}, r = {0}, outs = {0};
    for (size_t i = 0; i < sc->seqp.n; i++)
        push(s, &p, sc->seqp.v[i]);
    for (size_t i = 0; i < sc->no; i++) {
        for (size_t j = 0; j < sc->o[i].ntaps; j++)
            push(s, &p, sc->o[i].tp[j]);
        push(s, &r, sc->o[i].res);
        push(s, &outs, build_out(s, &sc->o[i]));
    }
    for (size_t i = 0; i < sc->nsp.n; i++)
        push(s, &p, sc->nsp.v[i]);
    if (s->oom)
        return NULL;
    tg_term *l[4] = {list(s, p.n, p.v), list(s, r.n, r.v), NULL};
    size_t nl = 2;
    if (sc->until)
        l[nl++] = app(s, N_UNTIL, 1, &sc->until);
    tg_term *lam = app(s, N_LAMBDA, nl, l);
    vec a = {0};
    push(s, &a, lam);
    push(s, &a, sc->steps);
    push(s, &a, vlist(s, N_SEQS, &sc->seq));
    push(s, &a, vlist(s, N_OUTS, &outs));
    push(s, &a, vlist(s, N_NSEQS, &sc->ns));
    for (size_t i = 0; i < sc->opts.n; i++)
        push(s, &a, sc->opts.v[i]);
    return s->oom ? NULL : app(s, N_SCAN, a.n, a.v);
}

/* Apply repl to the step's results and condition. */
int tgSo_subst_body(so *s, scan *sc, const tgW_map *repl)
{
    tgW_map memo = {0};
    for (size_t i = 0; i < sc->no; i++)
        if (!(sc->o[i].res = rebuild(s, sc->o[i].res, repl, &memo)))
            return -1;
    if (sc->until && !(sc->until = rebuild(s, sc->until, repl, &memo)))
        return -1;
    return 0;
}

/* The symbols the step's results and condition mention. */
int tgSo_body_symbols(so *s, const scan *sc, tgW_map *syms)
{
    for (size_t i = 0; i < sc->no; i++)
        if (tgSo_symbols(s, sc->o[i].res, syms) < 0)
            return -1;
    return sc->until ? tgSo_symbols(s, sc->until, syms) : 0;
}

/* A parameter name made from base that is in none of used (every symbol
 * of the scans concerned) nor reserved; it is added to used. */
tg_term *tgSo_fresh(so *s, tgW_map *used, const char *base)
{
    char buf[80];
    for (unsigned i = 0;; i++) {
        snprintf(buf, sizeof buf, "%s%u", base, i);
        tg_term *t = tg_symbol_cstr(s->ctx, buf);
        if (!t)
            return s->oom = 1, NULL;
        if (!tgW_map_get(used, t) && !tgW_map_get(&s->nm->reserved, t))
            return tgW_map_put(used, t, t) < 0 ? (s->oom = 1, NULL) : t;
    }
}
