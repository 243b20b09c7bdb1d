/* scangraph.c - the Scan rewrites over a whole graph (graph OUT ...)
 * (scanint.h): the analysis of how the graph reads each scan, the graph
 * with a scan replaced by a new one, the rewrites that need every reader
 * of a scan (drop unused outputs, merge identical outputs, keep only the
 * last value or rows where only those are read, merge scans over the
 * same sequences and steps, mark recurrent state that may be computed in
 * place), and the driver that tries one of them on the scans of a graph.
 * See doc/scan.md, "Rewrites". */
#include "scanint.h"

#include <gc/gc.h>
#include <string.h>

static int neg_one(const tg_term *t)
{
    int64_t v;
    return tg_int_get(t, &v) == 0 && v == -1;
}

/* P takes the last row of e: (subtensor e -1). */
static int takes_last(so *s, const tg_term *p, const tg_term *e)
{
    return is_app(p, NM(s, N_SUBTENSOR)) && tg_length(p) == 3 && tg_nth(p, 1) == e &&
           neg_one(tg_nth(p, 2));
}

/* The rows back from the end that index or slice start a reads, when it
 * is -K or (slice -K B none) with B none or negative; else 0. */
static int64_t tail_rows(so *s, const tg_term *a)
{
    int64_t k, b;
    if (tg_int_get(a, &k) == 0)
        return k < 0 ? -k : 0;
    if (!is_app(a, NM(s, N_SLICE)) || tg_length(a) != 4 || tg_nth(a, 3) != NM(s, N_NONE) ||
        tg_int_get(tg_nth(a, 1), &k) < 0 || k >= 0)
        return 0;
    if (tg_nth(a, 2) != NM(s, N_NONE) && (tg_int_get(tg_nth(a, 2), &b) < 0 || b >= 0))
        return 0;
    return -k;
}

/* How many rows back from the end P reads of e, when it reads only there
 * ((subtensor e I ...) with I as tail_rows takes it); else 0. */
static int64_t tail_reach(so *s, const tg_term *p, const tg_term *e)
{
    if (!is_app(p, NM(s, N_SUBTENSOR)) || tg_length(p) < 3 || tg_nth(p, 1) != e)
        return 0;
    return tail_rows(s, tg_nth(p, 2));
}

/* Output k of u is read by p (of element e): its reach grows, or is lost. */
static void note_reach(so *s, use *u, size_t k, const tg_term *p, const tg_term *e)
{
    int64_t r = tail_reach(s, p, e);
    if (!r || u->reach[k] < 0)
        u->reach[k] = -1;
    else if (r > u->reach[k])
        u->reach[k] = r;
}

static use *use_of(so *s, graph *g, tg_term *t)
{
    use *u = tgW_map_get(&g->users, t);
    if (u || !is_app(t, NM(s, N_SCAN)) || tgW_map_get(&g->bad, t))
        return u;
    if (!(u = GC_MALLOC(sizeof *u)))
        return s->oom = 1, NULL;
    if (!tgSo_parse(s, t, &u->sc)) {
        if (!s->oom && tgW_map_put(&g->bad, t, t) < 0)
            s->oom = 1;
        return NULL;
    }
    u->t = t;
    u->used = GC_MALLOC_ATOMIC(u->sc.no + 1);
    u->lastonly = GC_MALLOC_ATOMIC(u->sc.no + 1);
    u->reach = GC_MALLOC_ATOMIC((u->sc.no + 1) * sizeof *u->reach);
    if (!u->used || !u->lastonly || !u->reach || tgW_map_put(&g->users, t, u) < 0 ||
        push(s, &g->scans, t) < 0)
        return s->oom = 1, NULL;
    memset(u->reach, 0, (u->sc.no + 1) * sizeof *u->reach);
    memset(u->used, 0, u->sc.no + 1);
    memset(u->lastonly, 1, u->sc.no + 1);
    return u;
}

static void all_read(use *u)
{
    for (size_t i = 0; i < u->sc.no; i++)
        u->used[i] = 1, u->lastonly[i] = 0, u->reach[i] = -1;
}

/* Output k of scan u, or -1, read as (scan_output S K) by p. */
static int64_t output_index(const use *u, const tg_term *p)
{
    int64_t k;
    if (tg_int_get(tg_nth(p, 2), &k) < 0 || k < 0 || (size_t)k >= u->sc.no)
        return -1;
    return k;
}

/* Node p has element e: what it tells of the scans' reads. */
static int note(so *s, graph *g, tg_term *p, tg_term *e)
{
    size_t c = (size_t)(uintptr_t)tgW_map_get(&g->parents, e);
    if (tgW_map_put(&g->parents, e, (void *)(uintptr_t)(c + 1)) < 0)
        return s->oom = 1, -1;
    use *u = use_of(s, g, e);
    if (s->oom)
        return -1;
    int outp = is_app(p, NM(s, N_SCAN_OUTPUT)) && tg_length(p) == 3 && tg_nth(p, 1) == e;
    if (u && outp) {                /* which output: the reads of p tell how */
        int64_t k = output_index(u, p);
        if (k < 0)
            all_read(u);
        else
            u->used[k] = 1;
    } else if (u && !(is_app(p, NM(s, N_SCAN_STEPS)) && tg_length(p) == 2)) {
        u->used[0] = 1;             /* the scan itself is its output 0 */
        if (!takes_last(s, p, e))
            u->lastonly[0] = 0;
        note_reach(s, u, 0, p, e);
    }
    if (is_app(e, NM(s, N_SCAN_OUTPUT)) && tg_length(e) == 3) {
        use *v = use_of(s, g, tg_nth(e, 1));
        int64_t k = v ? output_index(v, e) : -1;
        if (s->oom)
            return -1;
        if (k >= 0 && !takes_last(s, p, e))
            v->lastonly[k] = 0;
        if (k >= 0)
            note_reach(s, v, (size_t)k, p, e);
    }
    return 0;
}

static int graph_fn(so *s, tg_term *p, void *ud)
{
    graph *g = ud;
    tg_iter it;
    tg_iter_init(&it, p);
    for (tg_term *e; (e = tg_iter_next(&it));)
        if (is_pair(e) && note(s, g, p, e) < 0)
            return -1;
    return 0;
}

static int analyze(so *s, tg_term *root, graph *g)
{
    memset(g, 0, sizeof *g);
    g->root = root;
    tgW_map seen = {0};
    /* a lambda sees only its parameters: no reader of an outer scan is
     * inside one, and the scans inside one are left alone */
    return tgSo_walk_outer(s, root, &seen, graph_fn, g);
}

/* The graph with scan u->t replaced by t2, its output k by output
 * map[k] of t2 (k < nold; map[k] < 0: not read), and, when lastmap is set, each
 * (subtensor OUTPUT_k -1) with lastmap[k] by output map[k] itself. */
tg_term *tgSo_replace_x(so *s, graph *g, use *u, size_t nold, tg_term *t2, const long *map,
                        const unsigned char *lastmap, tg_term *const *exprs);

static tg_term *replace(so *s, graph *g, use *u, size_t nold, tg_term *t2, const long *map,
                        const unsigned char *lastmap)
{
    return tgSo_replace_x(s, g, u, nold, t2, map, lastmap, NULL);
}

/* replace, where exprs[k] (when exprs and exprs[k] are set) is the term
 * old output k is read as instead of an output of t2. */
tg_term *tgSo_replace_x(so *s, graph *g, use *u, size_t nold, tg_term *t2, const long *map,
                        const unsigned char *lastmap, tg_term *const *exprs)
{
    tgW_map repl = {0};
    tg_term *st = app(s, N_SCAN_STEPS, 1, &u->t), *st2 = t2 ? app(s, N_SCAN_STEPS, 1, &t2) : st;
    if (!st || !st2 || tgW_map_put(&repl, st, st2) < 0)
        return s->oom = 1, NULL;
    for (size_t k = 0; k < nold; k++) {
        if (exprs && exprs[k]) {
            tg_term *o = app2(s, N_SCAN_OUTPUT, u->t, tg_int(s->ctx, (int64_t)k));
            if (!o || tgW_map_put(&repl, o, exprs[k]) < 0 || (k == 0 && tgW_map_put(&repl, u->t, exprs[k]) < 0))
                return s->oom = 1, NULL;
            continue;
        }
        if (map[k] < 0)
            continue;
        tg_term *o = app2(s, N_SCAN_OUTPUT, u->t, tg_int(s->ctx, (int64_t)k));
        tg_term *o2 = app2(s, N_SCAN_OUTPUT, t2, tg_int(s->ctx, map[k]));
        if (!o || !o2 || tgW_map_put(&repl, o, o2) < 0)
            return s->oom = 1, NULL;
        if (k == 0 && tgW_map_put(&repl, u->t, map[0] == 0 ? t2 : o2) < 0)
            return s->oom = 1, NULL;
        if (lastmap && lastmap[k]) {
            tg_term *m1 = tg_int(s->ctx, -1);
            tg_term *l = app2(s, N_SUBTENSOR, o, m1);
            if (!l || tgW_map_put(&repl, l, o2) < 0)
                return s->oom = 1, NULL;
            if (k == 0 && (!(l = app2(s, N_SUBTENSOR, u->t, m1)) ||
                           tgW_map_put(&repl, l, map[0] == 0 ? t2 : o2) < 0))
                return s->oom = 1, NULL;
        }
    }
    return tgSo_subst(s, g->root, &repl);
}

/* The (inplace K ...) option goes when outputs are renumbered or merged:
 * scan-inplace marks the new scan again where it still holds. */
void tgSo_drop_inplace(so *s, scan *sc)
{
    for (size_t i = sc->opts.n; i-- > 0;)
        if (is_app(sc->opts.v[i], NM(s, N_INPLACE)))
            vec_del(&sc->opts, i);
}

/* Outputs that nothing reads, neither the graph nor (through their taps)
 * the outputs kept or the condition, go; the scan keeps at least one. */
int tgSo_unused_outputs(so *s, graph *g, use *u, tg_term **res)
{
    scan *sc = &u->sc;
    unsigned char *need = GC_MALLOC_ATOMIC(sc->no + 1);
    if (!need)
        return s->oom = 1, -1;
    memcpy(need, u->used, sc->no);
    for (int again = 1; again;) {   /* needed outputs' results read taps */
        again = 0;
        tgW_map syms = {0};
        for (size_t i = 0; i < sc->no; i++)
            if (need[i] && tgSo_symbols(s, sc->o[i].res, &syms) < 0)
                return -1;
        if (sc->until && tgSo_symbols(s, sc->until, &syms) < 0)
            return -1;
        for (size_t i = 0; i < sc->no; i++)
            for (size_t j = 0; j < sc->o[i].ntaps && !need[i]; j++)
                if (tgW_map_get(&syms, sc->o[i].tp[j]))
                    need[i] = 1, again = 1;
    }
    size_t kept = 0;
    for (size_t i = 0; i < sc->no; i++)
        kept += need[i];
    if (kept == sc->no || (kept == 0 && sc->no == 1))
        return 0;
    if (kept == 0)
        need[0] = 1;
    long *map = GC_MALLOC_ATOMIC(sc->no * sizeof *map);
    if (!map)
        return s->oom = 1, -1;
    size_t n = 0;
    for (size_t i = 0; i < sc->no; i++) {
        map[i] = need[i] ? (long)n : -1;
        if (need[i])
            sc->o[n++] = sc->o[i];
    }
    size_t nold = sc->no;
    sc->no = n;
    tgSo_drop_inplace(s, sc);
    tg_term *t2 = tgSo_build(s, sc);
    return t2 && (*res = replace(s, g, u, nold, t2, map, NULL)) ? 1 : -1;
}

/* Outputs whose every read takes the last row become `last` outputs (not
 * with until: a stacked output then keeps rows past the last step done). */
int tgSo_last_outputs(so *s, graph *g, use *u, tg_term **res)
{
    scan *sc = &u->sc;
    if (sc->until)
        return 0;
    unsigned char *lm = GC_MALLOC_ATOMIC(sc->no);
    long *map = GC_MALLOC_ATOMIC(sc->no * sizeof *map);
    if (!lm || !map)
        return s->oom = 1, -1;
    int any = 0;
    for (size_t i = 0; i < sc->no; i++) {
        map[i] = (long)i;
        lm[i] = u->used[i] && u->lastonly[i] && !sc->o[i].last;
        if (lm[i])
            sc->o[i].last = 1, sc->o[i].keep = 0, any = 1;
    }
    if (!any)
        return 0;
    tg_term *t2 = tgSo_build(s, sc);
    return t2 && (*res = replace(s, g, u, sc->no, t2, map, lm)) ? 1 : -1;
}

/* The leading size of outer term t when it is a number here, else -1:
 * an (input NAME DTYPE (L ...)) or (shared ...) gives L, an elementwise op
 * or a dot the leading size of an operand of the result's rank (an
 * operand of size 1 there broadcasts); depth bounds the walk. */
static int64_t lead_size(so *s, rk *r, tg_term *t, int depth)
{
    int64_t n;
    tg_term *sz;
    if ((is_app(t, NM(s, N_INPUT)) || is_app(t, NM(s, N_SHARED))) && tg_length(t) == 4)
        return is_pair(sz = tg_nth(t, 3)) && tg_int_get(tg_car(sz), &n) == 0 ? n : -1;
    int op = tensor_op(s, t);
    if (depth > 32 || !(op == 2 || is_app(t, NM(s, N_DOT))))
        return -1;
    int q = tgSo_rank_of(r, t);
    if (q < 1)
        return -1;
    size_t ne;
    tg_term **v = elems(s, t, &ne);
    for (size_t i = 1; v && i < ne && i < (op == 2 ? ne : 2); i++) {
        if (!is_pair(v[i]) || tgSo_rank_of(r, v[i]) != q)
            continue;
        int64_t l = lead_size(s, r, v[i], depth + 1);
        if (l != 1)
            return l;
    }
    return -1;
}

/* The scan runs at least k steps: (steps N) with N >= k, or (steps auto)
 * over a sequence whose leading size is known to be >= k. */
int tgSo_runs_at_least(so *s, const scan *sc, int64_t k)
{
    int64_t n;
    tg_term *st = tg_nth(sc->steps, 1);
    if (tg_int_get(st, &n) == 0)
        return n >= k;
    if (st != NM(s, N_AUTO))
        return 0;
    rk r = {s, {0}, NULL};
    for (size_t i = 0; i < sc->seq.n; i++)
        if (lead_size(s, &r, sc->seq.v[i], 0) >= k)
            return 1;
    return 0;
}

/* Stacked outputs whose every read takes rows among the last N (an index
 * -K, a slice (slice -K B none), K <= N) keep only those N rows, (last N)
 * (save-mem: the loop keeps a ring of them); the reads are the same terms
 * over the new output, whose rows are the last N.  Not with until, not
 * when the scan may run fewer than N steps, not where every read takes
 * the last row alone (scan-last).  A backward scan of a gradient reads
 * the whole forward trace: that read takes every row, so the trace stays. */
int tgSo_last_rows(so *s, graph *g, use *u, tg_term **res)
{
    scan *sc = &u->sc;
    if (sc->until)
        return 0;
    long *map = GC_MALLOC_ATOMIC((sc->no + 1) * sizeof *map);
    if (!map)
        return s->oom = 1, -1;
    int any = 0;
    for (size_t i = 0; i < sc->no; i++) {
        out *o = &sc->o[i];
        map[i] = (long)i;
        int64_t r = u->reach[i];
        if (!u->used[i] || u->lastonly[i] || r < 1 || o->last || (o->keep && o->keep <= r) ||
            !tgSo_runs_at_least(s, sc, r))
            continue;
        o->keep = r, any = 1;
    }
    if (!any)
        return 0;
    tg_term *t2 = tgSo_build(s, sc);
    return t2 && (*res = replace(s, g, u, sc->no, t2, map, NULL)) ? 1 : -1;
}

/* Two outputs computing the same values: the same kind, initial value,
 * taps and `last`, and results equal once the taps of the second are
 * named as those of the first.  The second goes; its reads read the
 * first. */
int tgSo_same_outputs(so *s, graph *g, use *u, tg_term **res)
{
    scan *sc = &u->sc;
    for (size_t j = 1; j < sc->no; j++)
        for (size_t i = 0; i < j; i++) {
            out *a = &sc->o[i], *b = &sc->o[j];
            if (a->kind != b->kind || a->init != b->init || a->ntaps != b->ntaps ||
                a->last != b->last || a->keep != b->keep || memcmp(a->taps, b->taps, a->ntaps * sizeof *a->taps))
                continue;
            tgW_map repl = {0};
            for (size_t k = 0; k < b->ntaps; k++)
                if (tgW_map_put(&repl, b->tp[k], a->tp[k]) < 0)
                    return s->oom = 1, -1;
            tg_term *rb = tgSo_subst(s, b->res, &repl);
            if (!rb)
                return -1;
            if (rb != a->res)
                continue;
            /* the second's taps read the same values as the first's */
            if (tgSo_subst_body(s, sc, &repl) < 0)
                return -1;
            long *map = GC_MALLOC_ATOMIC(sc->no * sizeof *map);
            if (!map)
                return s->oom = 1, -1;
            for (size_t k = 0; k < sc->no; k++)
                map[k] = k < j ? (long)k : k == j ? (long)i : (long)k - 1;
            memmove(sc->o + j, sc->o + j + 1, (sc->no - j - 1) * sizeof *sc->o);
            sc->no--;
            tgSo_drop_inplace(s, sc);
            tg_term *t2 = tgSo_build(s, sc);
            return t2 && (*res = replace(s, g, u, sc->no + 1, t2, map, NULL)) ? 1 : -1;
        }
    return 0;
}

/* Does a contain b (a DAG walk)? */
static int contains(so *s, tg_term *a, tg_term *b)
{
    if (a == b)
        return 1;
    tgW_map seen = {0};
    vec st = {0};
    if (!is_pair(a) || push(s, &st, a) < 0)
        return s->oom ? -1 : 0;
    while (st.n) {
        tg_term *t = st.v[--st.n];
        tg_iter it;
        tg_iter_init(&it, t);
        for (tg_term *e; (e = tg_iter_next(&it));) {
            if (e == b)
                return 1;
            if (is_pair(e) && !tgW_map_get(&seen, e) &&
                (tgW_map_put(&seen, e, e) < 0 || push(s, &st, e) < 0))
                return s->oom = 1, -1;
        }
    }
    return 0;
}

/* The same sequences (as a set), steps and options, no condition. */
static int mergeable(const scan *a, const scan *b)
{
    if (a->steps != b->steps || a->until || b->until || a->opts.n != b->opts.n)
        return 0;
    for (size_t i = 0; i < a->opts.n; i++)
        if (a->opts.v[i] != b->opts.v[i])
            return 0;
    const scan *x[2] = {a, b};
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < x[k]->seq.n; i++) {
            size_t j = 0;
            while (j < x[!k]->seq.n && x[!k]->seq.v[j] != x[k]->seq.v[i])
                j++;
            if (j == x[!k]->seq.n)
                return 0;
        }
    return 1;
}

/* Rename the parameters of sc that are in clash and not in keep to names
 * in none of used; the step follows. */
static int rename_params(so *s, scan *sc, const tgW_map *clash, const tgW_map *keep, tgW_map *used)
{
    tgW_map repl = {0};
    tg_term **ps[3] = {sc->seqp.v, sc->nsp.v, NULL};
    size_t ns[3] = {sc->seqp.n, sc->nsp.n, 0};
    for (size_t k = 0; k <= sc->no; k++) {
        if (k < sc->no)
            ps[2] = sc->o[k].tp, ns[2] = sc->o[k].ntaps;
        for (int l = k ? 2 : 0; l < 3; l++)
            for (size_t i = 0; i < ns[l]; i++) {
                tg_term *q = ps[l][i];
                if (!tgW_map_get(clash, q) || (keep && tgW_map_get(keep, q)))
                    continue;
                tg_term *p = tgSo_fresh(s, used, tg_symbol_name(q, NULL));
                if (!p || tgW_map_put(&repl, q, p) < 0)
                    return s->oom = 1, -1;
                ps[l][i] = p;
            }
        ns[2] = 0;
    }
    return repl.n ? tgSo_subst_body(s, sc, &repl) : 0;
}

/* The parameters of sc as a set. */
static int param_set(so *s, const scan *sc, tgW_map *set)
{
    const vec *v[2] = {&sc->seqp, &sc->nsp};
    for (int l = 0; l < 2; l++)
        for (size_t i = 0; i < v[l]->n; i++)
            if (tgW_map_put(set, v[l]->v[i], v[l]->v[i]) < 0)
                return s->oom = 1, -1;
    for (size_t k = 0; k < sc->no; k++)
        for (size_t j = 0; j < sc->o[k].ntaps; j++)
            if (tgW_map_put(set, sc->o[k].tp[j], sc->o[k].tp[j]) < 0)
                return s->oom = 1, -1;
    return 0;
}

/* Make the lambdas of a and b safe to join: b's parameters that a
 * mentions are renamed, and a's that b mentions other than as its own
 * parameters (a size symbol, say), so that no name is captured. */
static int rename_apart(so *s, scan *a, scan *b, tg_term *ta, tg_term *tb)
{
    tgW_map used = {0}, asyms = {0}, bsyms = {0}, bpar = {0};
    if (tgSo_symbols(s, ta, &asyms) < 0 || tgSo_symbols(s, tb, &bsyms) < 0 || tgSo_symbols(s, ta, &used) < 0 ||
        tgSo_symbols(s, tb, &used) < 0 || param_set(s, b, &bpar) < 0)
        return -1;
    if (rename_params(s, b, &asyms, NULL, &used) < 0)
        return -1;
    return rename_params(s, a, &bsyms, &bpar, &used);
}

/* Two scans over the same sequences and steps, neither reading the
 * other, become one: the first's inputs and outputs, then the second's
 * (its parameters renamed apart).  The inputs they share are merged by
 * scan-merge-inputs afterwards. */
int tgSo_merge_scans(so *s, graph *g, use *ua, tg_term **res)
{
    for (size_t j = 0; j < g->scans.n; j++) {
        use *ub = tgW_map_get(&g->users, g->scans.v[j]);
        if (ub == ua || !mergeable(&ua->sc, &ub->sc))
            continue;
        int c1 = contains(s, ua->t, ub->t), c2 = c1 ? 0 : contains(s, ub->t, ua->t);
        if (c1 < 0 || c2 < 0)
            return -1;
        if (c1 || c2)
            continue;
        scan m = ua->sc, b = ub->sc;
        if (rename_apart(s, &m, &b, ua->t, ub->t) < 0)
            return -1;
        for (size_t i = 0; i < b.seq.n; i++)
            if (push(s, &m.seq, b.seq.v[i]) < 0 || push(s, &m.seqp, b.seqp.v[i]) < 0)
                return -1;
        for (size_t i = 0; i < b.ns.n; i++)
            if (push(s, &m.ns, b.ns.v[i]) < 0 || push(s, &m.nsp, b.nsp.v[i]) < 0)
                return -1;
        out *o = GC_MALLOC((m.no + b.no) * sizeof *o);
        if (!o)
            return s->oom = 1, -1;
        memcpy(o, m.o, m.no * sizeof *o);
        memcpy(o + m.no, b.o, b.no * sizeof *o);
        size_t na = m.no;
        m.o = o, m.no += b.no;
        tgSo_drop_inplace(s, &m);
        tg_term *t2 = tgSo_build(s, &m);
        long *map = GC_MALLOC_ATOMIC((na + b.no) * sizeof *map);
        if (!t2 || !map)
            return s->oom = 1, -1;
        for (size_t k = 0; k < na; k++)
            map[k] = (long)k;
        tg_term *r1 = replace(s, g, ua, na, t2, map, NULL);
        for (size_t k = 0; k < b.no; k++)
            map[k] = (long)(na + k);
        g->root = r1;
        *res = r1 ? replace(s, g, ub, b.no, t2, map, NULL) : NULL;
        return *res ? 1 : -1;
    }
    return 0;
}

static size_t parents(const graph *g, const tg_term *t)
{
    return (size_t)(uintptr_t)tgW_map_get(&g->parents, t);
}

/* A `last` recurrent output whose INIT is computed by the graph (not an
 * input, not a constant) for this output alone may keep its state in
 * INIT's buffer: marked by the option (inplace K ...). */
int tgSo_inplace(so *s, graph *g, use *u, tg_term **res)
{
    scan *sc = &u->sc;
    tg_term *opt = NULL;
    size_t oi = 0;
    for (; oi < sc->opts.n; oi++)
        if (is_app(sc->opts.v[oi], NM(s, N_INPLACE))) {
            opt = sc->opts.v[oi];
            break;
        }
    tg_term *outs = tg_nth(u->t, 4);
    vec ks = {0};
    int any = 0;
    for (size_t k = 0; k < sc->no; k++) {
        out *o = &sc->o[k];
        int marked = 0;
        for (size_t i = 1; opt && i < tg_length(opt); i++) {
            int64_t v;
            marked |= tg_int_get(tg_nth(opt, i), &v) == 0 && v == (int64_t)k;
        }
        tg_term *ot = tg_nth(outs, k + 1);
        int ok = !marked && o->kind != NITSOT && o->last && is_pair(o->init) &&
                 tg_car(o->init) != NM(s, N_INPUT) && tg_car(o->init) != NM(s, N_CONST) &&
                 parents(g, o->init) == 1 && parents(g, ot) == 1 && parents(g, outs) == 1;
        if (marked || ok)
            if (push(s, &ks, tg_int(s->ctx, (int64_t)k)) < 0)
                return -1;
        any |= ok;
    }
    if (!any)
        return 0;
    tg_term *mark = vlist(s, N_INPLACE, &ks);
    if (!mark || (!opt && push(s, &sc->opts, mark) < 0))
        return -1;
    if (opt)
        sc->opts.v[oi] = mark;
    tg_term *t2 = tgSo_build(s, sc);
    long *map = GC_MALLOC_ATOMIC(sc->no * sizeof *map);
    if (!t2 || !map)
        return s->oom = 1, -1;
    for (size_t k = 0; k < sc->no; k++)
        map[k] = (long)k;
    return (*res = replace(s, g, u, sc->no, t2, map, NULL)) ? 1 : -1;
}

/* A rewrite of a whole graph (graph OUT ...): the first scan it applies
 * to.  1 with *out, 0, -1. */
int tgSo_global(so *s, graph_fn_t fn, tg_term *t, tg_term **out)
{
    if (!is_app(t, NM(s, N_GRAPH)))
        return 0;
    graph *g = s->nm->groot == t ? s->nm->gcache : NULL;
    if (!g) {
        s->nm->groot = NULL;
        if (!(g = GC_MALLOC(sizeof *g)))
            return s->oom = 1, -1;
        if (analyze(s, t, g) < 0)
            return -1;
        s->nm->groot = t, s->nm->gcache = g;
    }
    for (size_t i = 0; i < g->scans.n; i++) {
        use *u = tgW_map_get(&g->users, g->scans.v[i]);
        int rc = fn(s, g, u, out);
        if (rc) {
            s->nm->groot = NULL, s->nm->gcache = NULL;
            return rc < 0 ? -1 : *out != t;
        }
    }
    return 0;
}
