/* scanrank.c - the ranks of tensor terms, inside and outside scan
 * lambdas, that the Scan rewrites moving work between a step and whole
 * stacks of steps need (scanint.h; doc/scan.md, "Ranks"). */
#include "scanint.h"

static int rank_scan(so *s, tg_term *t, rk *outer, int64_t k);

static int rank_get(rk *r, const tg_term *t)
{
    tg_kind k = tg_kind_of(t);
    if (k == TG_INT || k == TG_RAT || k == TG_DOUBLE)
        return 0;
    if (k == TG_SYMBOL)
        return r->env && tgW_map_get(r->env, t) ? (int)(uintptr_t)tgW_map_get(r->env, t) - 2 : -1;
    void *m = tgW_map_get(&r->memo, t);
    return m ? (int)(uintptr_t)m - 2 : -1;
}

/* The number of elements of list t after its head when the head is h
 * (or of t itself when h is NN, none, or not its head). */
static int list_len(so *s, const tg_term *t, int h)
{
    if (!is_pair(t))
        return -1;
    int n = (int)tg_length(t);
    return h >= 0 && h < NN && tg_car(t) == NM(s, h) ? n - 1 : n;
}

static int rank_node(rk *r, tg_term *t)
{
    so *s = r->s;
    size_t n;
    tg_term **v = elems(s, t, &n);
    if (!v || !n || tg_tail(t) != tg_nil())
        return -1;
    tg_term *h = v[0];
    int a1 = n > 1 ? rank_get(r, v[1]) : -1;
    if (h == NM(s, N_CONST) && n == 3) {
        int d = 0;
        for (tg_term *e = v[2]; is_pair(e) && d < 64; e = tg_car(e))
            d++;
        return d;
    }
    if ((h == NM(s, N_INPUT) || h == NM(s, N_SHARED)) && n == 4)
        return list_len(s, v[3], NN);
    if (tensor_op(s, t) == 2) {
        int m = 0;
        for (size_t i = 1; i < n; i++) {
            if (tg_kind_of(v[i]) == TG_SYMBOL && tgW_map_get(&s->nm->reserved, v[i]))
                continue;       /* a dtype */
            int ri = rank_get(r, v[i]);
            if (ri < 0)
                return -1;
            m = ri > m ? ri : m;
        }
        return m;
    }
    if (h == NM(s, N_SUM) || h == NM(s, N_PROD) || h == NM(s, N_MAX) || h == NM(s, N_MIN) ||
        h == NM(s, N_MEAN) || h == NM(s, N_LOGSUMEXP)) {
        if (n == 2 || (n == 3 && v[2] == NM(s, N_ALL)))
            return a1 < 0 ? -1 : 0;
        int c = n == 3 ? list_len(s, v[2], N_AXES) : -1;
        return a1 < 0 || c < 0 || c > a1 ? -1 : a1 - c;
    }
    if (h == NM(s, N_DOT) && n == 3) {
        int a2 = rank_get(r, v[2]);
        if (a1 < 1 || a1 > 2 || a2 < 1 || a2 > 2)
            return -1;
        return a1 + a2 - 2;
    }
    if (h == NM(s, N_GEMM) || h == NM(s, N_TRANSPOSE))
        return a1;
    if (h == NM(s, N_DIMSHUFFLE) && n == 3)
        return a1 < 0 ? -1 : list_len(s, v[2], N_PERM);
    if (h == NM(s, N_RESHAPE) && n == 3)
        return a1 < 0 ? -1 : list_len(s, v[2], N_SHAPE_OF);
    if (h == NM(s, N_ALLOC))
        return a1 < 0 ? -1 : (int)n - 2;
    if (h == NM(s, N_SUBTENSOR) && a1 >= 0) {
        int d = a1;
        for (size_t i = 2; i < n; i++)
            d -= !is_app(v[i], NM(s, N_SLICE));
        return d < 0 ? -1 : d;
    }
    if (h == NM(s, N_SCAN_STEPS))
        return 0;
    if (!r->env && h == NM(s, N_SCAN))
        return rank_scan(s, t, r, 0);
    if (!r->env && h == NM(s, N_SCAN_OUTPUT) && n == 3) {
        int64_t k;
        return tg_int_get(v[2], &k) == 0 ? rank_scan(s, v[1], r, k) : -1;
    }
    return -1;
}

/* The rank of every node under t (post-order, explicit stack); t's. */
int tgSo_rank_of(rk *r, tg_term *t)
{
    if (!is_pair(t))
        return rank_get(r, t);
    vec st = {0}, done = {0};
    if (!tgW_map_get(&r->memo, t) && (push(r->s, &st, t) < 0 || push_any(r->s, &done, NULL) < 0))
        return -1;
    while (st.n) {
        tg_term *n = st.v[st.n - 1];
        if (tgW_map_get(&r->memo, n)) {
            st.n--, done.n--;
            continue;
        }
        if (!done.v[done.n - 1]) {
            done.v[done.n - 1] = n;
            tg_iter it;
            tg_iter_init(&it, n);
            for (tg_term *e; (e = tg_iter_next(&it));)
                if (is_pair(e) && !tgW_map_get(&r->memo, e) && !is_app(e, NM(r->s, N_LAMBDA)))
                    if (push(r->s, &st, e) < 0 || push_any(r->s, &done, NULL) < 0)
                        return -1;
            continue;
        }
        int k = rank_node(r, n);
        if (r->s->oom || tgW_map_put(&r->memo, n, (void *)(uintptr_t)(k + 2)) < 0)
            return r->s->oom = 1, -1;
        st.n--, done.n--;
    }
    return rank_get(r, t);
}

/* The ranks of the parameters of scan sc, its outer arguments' ranks
 * taken from outer (whose memo holds them). */
int tgSo_param_ranks(so *s, const scan *sc, rk *outer, tgW_map *env)
{
    for (size_t i = 0; i < sc->seq.n; i++) {
        int q = tgSo_rank_of(outer, sc->seq.v[i]);
        if (tgW_map_put(env, sc->seqp.v[i], (void *)(uintptr_t)(q > 0 ? q + 1 : 1)) < 0)
            return s->oom = 1, -1;
    }
    for (size_t i = 0; i < sc->no; i++) {
        const out *o = &sc->o[i];
        int q = o->kind == NITSOT ? -1 : tgSo_rank_of(outer, o->init);
        q = o->kind == MITSOT ? (q > 0 ? q - 1 : -1) : q;
        for (size_t j = 0; j < o->ntaps; j++)
            if (tgW_map_put(env, o->tp[j], (void *)(uintptr_t)(q + 2)) < 0)
                return s->oom = 1, -1;
    }
    for (size_t i = 0; i < sc->ns.n; i++) {
        int q = tgSo_rank_of(outer, sc->ns.v[i]);
        if (tgW_map_put(env, sc->nsp.v[i], (void *)(uintptr_t)(q + 2)) < 0)
            return s->oom = 1, -1;
    }
    return 0;
}

/* Output k of scan t: its result's rank, plus the stacked axis. */
static int rank_scan(so *s, tg_term *t, rk *outer, int64_t k)
{
    scan sc;
    if (!tgSo_parse(s, t, &sc) || k < 0 || (size_t)k >= sc.no)
        return -1;
    tgW_map env = {0};
    if (tgSo_param_ranks(s, &sc, outer, &env) < 0)
        return -1;
    rk in = {s, {0}, &env};
    int q = tgSo_rank_of(&in, sc.o[k].res);
    return q < 0 ? -1 : q + !sc.o[k].last;
}
