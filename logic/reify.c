/* reify.c - reification: walk* the query variable, name its fresh
 * variables _.0, _.1, ... in order of appearance, and attach the
 * constraints that still matter, simplified and sorted as
 * faster-miniKanren does (the steps and their order follow its reify, so
 * answers print identically): extract the constraints of the variables
 * in the answer, normalize disequalities, drop those mentioning other
 * variables, drop the subsumed ones, then sort.
 */
#include "reify.h"

#include <gc/gc.h>
#include <stdlib.h>
#include <string.h>

typedef struct tlist {      /* a growable array of terms (collector memory) */
    tgK_vec v;
} tlist;

static int tl_push(tg_env *env, tlist *l, tg_term *t)
{
    if (tgK_vec_reserve(&l->v, 1) < 0)
        return env->oom = 1, -1;
    l->v.v[l->v.n++] = (uintptr_t)t;
    return 0;
}
#define TL_AT(l, i) ((tg_term *)(l)->v.v[i])

static tg_term *assoc_lhs(tg_term *p) { return tg_car(p); }
static tg_term *assoc_rhs(tg_env *env, tg_term *p) { return tg_cdr(env->ctx, p); }

/* ---- lex order ---------------------------------------------------- */

static int type_index(tg_env *env, const tg_term *t)
{
    switch (tg_kind_of(t)) {
    case TG_INT: case TG_RAT: case TG_DOUBLE: return 0;
    case TG_STRING: return 1;
    case TG_SYMBOL: return t == env->sym_f ? 3 : t == env->sym_t ? 4 : 2;
    case TG_NIL: return 5;
    case TG_PAIR: return 6;
    default: return 7;
    }
}

static int cmp_atoms(tg_term *x, tg_term *y, int ti)
{
    if (ti == 0) {          /* by value, as Scheme's < and = */
        mpq_t a, b;
        mpq_inits(a, b, NULL);
        int c;
        double dx, dy;
        if (tg_kind_of(x) == TG_DOUBLE || tg_kind_of(y) == TG_DOUBLE) {
            if (tg_double_get(x, &dx) < 0) {
                tg_rat_get_mpq(x, a);
                dx = mpq_get_d(a);
            }
            if (tg_double_get(y, &dy) < 0) {
                tg_rat_get_mpq(y, b);
                dy = mpq_get_d(b);
            }
            c = dx < dy ? -1 : dx > dy ? 1 : 0;
        } else {
            tg_rat_get_mpq(x, a);
            tg_rat_get_mpq(y, b);
            c = mpq_cmp(a, b);
        }
        mpq_clears(a, b, NULL);
        return c < 0 ? -1 : c > 0;
    }
    if (ti == 1 || ti == 2) {
        size_t nx, ny;
        const char *sx = ti == 1 ? tg_string_bytes(x, &nx) : tg_symbol_name(x, &nx);
        const char *sy = ti == 1 ? tg_string_bytes(y, &ny) : tg_symbol_name(y, &ny);
        int c = memcmp(sx, sy, nx < ny ? nx : ny);
        if (c)
            return c < 0 ? -1 : 1;
        return nx < ny ? -1 : nx > ny;
    }
    if (ti == 7)
        return tg_compare(x, y) < 0 ? -1 : tg_compare(x, y) > 0;
    return 0;
}

int tgY_lex_compare(tg_env *env, tg_term *x, tg_term *y)
{
    tgK_vec st = {0};
    int r = 0;
    if (tgK_push2(&st, (uintptr_t)x, (uintptr_t)y) < 0)
        return env->oom = 1, 0;
    while (st.n && !r) {
        st.n -= 2;
        x = (tg_term *)st.v[st.n];
        y = (tg_term *)st.v[st.n + 1];
        if (x == y)
            continue;
        int tx = type_index(env, x), ty = type_index(env, y);
        if (tx != ty) {
            r = tx < ty ? -1 : 1;
        } else if (tx == 6) {
            tg_term *dx = tg_cdr(env->ctx, x), *dy = tg_cdr(env->ctx, y);
            if (!dx || !dy || tgK_push2(&st, (uintptr_t)dx, (uintptr_t)dy) < 0 ||
                tgK_push2(&st, (uintptr_t)tg_car(x), (uintptr_t)tg_car(y)) < 0)
                return env->oom = 1, 0;
        } else {
            r = cmp_atoms(x, y, tx);
        }
    }
    return r;
}

/* A stable merge sort, as Chez's list-sort (bottom-up, through a
 * scratch array in collector memory). */
static void sort_lex(tg_env *env, tlist *l)
{
    size_t n = l->v.n;
    uintptr_t *v = l->v.v, *tmp = n > 1 ? GC_MALLOC(n * sizeof *tmp) : NULL;
    if (n > 1 && !tmp) {
        env->oom = 1;
        return;
    }
    for (size_t w = 1; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                tmp[k++] = tgY_lex_compare(env, (tg_term *)v[j], (tg_term *)v[i]) < 0 ? v[j++] : v[i++];
            while (i < mid)
                tmp[k++] = v[i++];
            while (j < hi)
                tmp[k++] = v[j++];
        }
        memcpy(v, tmp, n * sizeof *v);
    }
}

/* ---- subsumption -------------------------------------------------- */

static int var_type(const tgS_state *st, tg_term *x)
{
    return tgT_islvar(x) ? tgC_lookup(st, x)->T : TGC_NONE;
}

/* d1 is subsumed by d2 (d1's constraint is implied by d2's). */
static int d_subsumed_by(tg_env *env, tg_term *d1, tg_term *d2)
{
    tgS_state empty = {.tag = TGS_STATE, .scope = 0, .S = NULL, .C = NULL};
    tgS_state *s = tgU_unify_assoc(env, &empty, d1, 0);
    if (!s)
        return 0;
    size_t mark = env->added.n;
    tgS_state *s2 = tgU_unify_assoc(env, s, d2, 1);
    int r = s2 && env->added.n == mark;
    env->added.n = mark;
    return r;
}

static int var_types_match(tg_env *env, const tgS_state *st, tg_term *t1, tg_term *t2)
{
    int T1 = var_type(st, t1);
    if (T1 == TGC_NONE)
        return 1;
    if (tgT_islvar(t2)) {
        int T2 = var_type(st, t2);
        return T2 == TGC_NONE || T1 == T2;
    }
    return tgC_has_type(env, t2, T1);
}

static int d_subsumed_by_T(tg_env *env, const tgS_state *st, tg_term *d)
{
    tg_iter it;
    tg_iter_init(&it, d);
    for (tg_term *pr; (pr = tgT_iter_next(&it));)
        if (!var_types_match(env, st, assoc_lhs(pr), assoc_rhs(env, pr)))
            return 1;
    return 0;
}

static int absento_rhs_atomic(const tgS_state *st, tg_env *env, tg_term *a)
{
    tg_term *r = assoc_rhs(env, a);
    return !(tgT_islvar(r) && var_type(st, r) == TGC_NONE);
}

static int d_subsumed_by_A(tg_env *env, const tgS_state *st, tg_term *d, tlist *A)
{
    for (size_t i = 0; i < A->v.n; i++) {
        tg_term *a = TL_AT(A, i);
        if (absento_rhs_atomic(st, env, a))
            continue;
        tg_term *ad = tg_cons(env->ctx, a, tg_nil());
        if (ad && d_subsumed_by(env, d, ad))
            return 1;
    }
    return 0;
}

/* u equals v or one of its subterms (cars and cdrs). */
static int member_star(tg_env *env, tg_term *u, tg_term *v)
{
    tgK_vec st = {0};
    if (tgK_vec_reserve(&st, 1) < 0)
        return env->oom = 1, 0;
    st.v[st.n++] = (uintptr_t)v;
    while (st.n) {
        tg_term *t = (tg_term *)st.v[--st.n];
        if (t == u)
            return 1;
        if (tgT_ispair(t)) {
            tg_term *d = tg_cdr(env->ctx, t);
            if (!d || tgK_push2(&st, (uintptr_t)d, (uintptr_t)tg_car(t)) < 0)
                return env->oom = 1, 0;
        }
    }
    return 0;
}

static int a_subsumed_by(tg_env *env, tg_term *t1, tg_term *t2)
{
    return assoc_rhs(env, t1) == assoc_rhs(env, t2) &&
           member_star(env, assoc_lhs(t2), assoc_lhs(t1));
}

typedef int subsumed_fn(tg_env *, tg_term *, tg_term *);

/* faster-miniKanren's rem-subsumed, result order included (reversed). */
static void rem_subsumed(tg_env *env, subsumed_fn *by, tlist *in, tlist *out)
{
    for (size_t i = 0; i < in->v.n; i++) {
        tg_term *el = TL_AT(in, i);
        int drop = 0;
        for (size_t j = i + 1; j < in->v.n && !drop; j++)
            drop = by(env, el, TL_AT(in, j));
        for (size_t j = 0; j < out->v.n && !drop; j++)
            drop = by(env, el, TL_AT(out, j));
        if (!drop)
            tl_push(env, out, el);
    }
    /* consed in Scheme: newest first */
    for (size_t i = 0, j = out->v.n ? out->v.n - 1 : 0; i < j; i++, j--) {
        uintptr_t x = out->v.v[i];
        out->v.v[i] = out->v.v[j];
        out->v.v[j] = x;
    }
}

/* ---- reify -------------------------------------------------------- */

static int all_relevant(tg_env *env, tg_term *t, tgU_names *rel)
{
    tgK_vec vs = {0};
    tgU_vars(env, t, &vs);
    for (size_t i = 0; i < vs.n; i++)
        if (!tgU_names_get(rel, (tg_term *)vs.v[i]))
            return 0;
    return 1;
}

/* walk* the added bindings of a normalized disequality back into an
 * association list */
static tg_term *added_assoc(tg_env *env, size_t mark, const tgS_map *S)
{
    tgK_vec *ad = &env->added;
    size_t k = (ad->n - mark) / 2;
    tg_term *d = tg_nil();
    for (size_t i = k; i-- > 0 && d;) {
        tg_term *pr = tg_cons(env->ctx, (tg_term *)ad->v[mark + 2 * i], (tg_term *)ad->v[mark + 2 * i + 1]);
        d = pr ? tg_cons(env->ctx, pr, d) : NULL;
    }
    return d ? tgU_walk_star(env, d, S, NULL) : NULL;
}

static tg_term *list_of(tg_env *env, tlist *l, tg_term *tail)
{
    return tg_list(env->ctx, l->v.n, (tg_term *const *)l->v.v, tail);
}

/* (l . r) -> (l r) */
static tg_term *drop_dot(tg_env *env, tg_term *pr)
{
    tg_term *e[2] = {assoc_lhs(pr), assoc_rhs(env, pr)};
    return tg_list(env->ctx, 2, e, NULL);
}

static int reified_var(const tg_term *t)
{
    size_t n;
    const char *s = tg_kind_of(t) == TG_SYMBOL ? tg_symbol_name(t, &n) : NULL;
    return s && n > 0 && s[0] == '_';
}

/* sort-d: orient each pair, sort the pairs, drop the dots */
static tg_term *format_d(tg_env *env, tg_term *d)
{
    tlist prs = {0};
    tg_iter it;
    tg_iter_init(&it, d);
    for (tg_term *pr; (pr = tgT_iter_next(&it));) {
        tg_term *l = assoc_lhs(pr), *r = assoc_rhs(env, pr);
        if (reified_var(r) && tg_kind_of(l) == TG_SYMBOL && cmp_atoms(r, l, 2) < 0)
            pr = tg_cons(env->ctx, r, l);
        if (!pr || tl_push(env, &prs, pr) < 0)
            return NULL;
    }
    sort_lex(env, &prs);
    return list_of(env, &prs, NULL);
}

tg_term *tgY_reify(tg_env *env, tgS_state *st, tg_term *x)
{
    tg_ctx *ctx = env->ctx;
    tgS_map *S = st->S;
    tg_term *v = tgU_walk_star(env, x, S, NULL);
    if (!v)
        return NULL;
    tgU_names *R = tgU_names_new();
    if (!R || tgU_names_add(env, R, v) < 0)
        return NULL;
    if (!st->C)     /* no constraints at all: the common case */
        return tgU_walk_star(env, v, TGU_NOWALK, R);

    /* relevant variables: faster-miniKanren lists them last-seen first */
    tgK_vec rv = {0};
    tgU_vars(env, v, &rv);
    size_t nrel = rv.n;
    tg_term **rel = GC_MALLOC((nrel + 1) * sizeof *rel);
    if (!rel)
        return env->oom = 1, NULL;
    for (size_t i = 0; i < nrel; i++)
        rel[i] = (tg_term *)rv.v[nrel - 1 - i];

    tlist T[TGC_NTYPES] = {{{0}}}, D = {{0}}, A = {{0}};
    for (int tc = TGC_NUM; tc < TGC_NTYPES; tc++)
        for (size_t i = 0; i < nrel; i++)
            if (tgC_lookup(st, rel[i])->T == tc)
                tl_push(env, &T[tc], rel[i]);
    tgS_state nonlocal = *st;
    nonlocal.scope = 0;
    for (size_t i = 0; i < nrel; i++) {
        for (const tgC_link *l = tgC_lookup(st, rel[i])->D; l; l = l->next) {
            size_t mark = env->added.n;
            tgS_state *s2 = tgC_dis_unify(env, &nonlocal, l->u.d, 1);
            tg_term *nd = s2 ? added_assoc(env, mark, S) : NULL;
            env->added.n = mark;
            if (nd && all_relevant(env, nd, R))
                tl_push(env, &D, nd);
        }
    }
    for (size_t i = 0; i < nrel; i++) {
        for (const tgC_link *l = tgC_lookup(st, rel[i])->A; l; l = l->next) {
            tg_term *a = l->u.t;
            tg_term *lhs = tgU_walk_star(env, a, S, NULL);
            tg_term *pr = lhs ? tg_cons(ctx, lhs, rel[i]) : NULL;
            if (pr && all_relevant(env, pr, R))
                tl_push(env, &A, pr);
        }
    }
    if (env->oom)
        return NULL;

    /* drop subsumed */
    tlist D1 = {{0}}, D2 = {{0}}, A1 = {{0}}, A2 = {{0}};
    for (size_t i = 0; i < D.v.n; i++) {
        tg_term *d = TL_AT(&D, i);
        if (!d_subsumed_by_T(env, st, d) && !d_subsumed_by_A(env, st, d, &A))
            tl_push(env, &D1, d);
    }
    rem_subsumed(env, d_subsumed_by, &D1, &D2);
    for (size_t i = 0; i < A.v.n; i++) {
        tg_term *a = TL_AT(&A, i);
        if (!absento_rhs_atomic(st, env, a) && !tgU_occurs(env, assoc_rhs(env, a), assoc_lhs(a), S))
            tl_push(env, &A1, a);
    }
    rem_subsumed(env, a_subsumed_by, &A1, &A2);
    if (env->oom)
        return NULL;

    /* form */
    tg_term *rv_ = tgU_walk_star(env, v, TGU_NOWALK, R);
    tlist out = {{0}};
    if (!rv_ || tl_push(env, &out, rv_) < 0)
        return NULL;
    if (D2.v.n) {
        tlist fd = {{0}};
        for (size_t i = 0; i < D2.v.n; i++) {
            tg_term *d = tgU_walk_star(env, TL_AT(&D2, i), TGU_NOWALK, R);
            d = d ? format_d(env, d) : NULL;
            if (!d || tl_push(env, &fd, d) < 0)
                return NULL;
        }
        sort_lex(env, &fd);
        for (size_t i = 0; i < fd.v.n; i++) {
            tlist dd = {{0}};
            tg_iter it;
            tg_iter_init(&it, TL_AT(&fd, i));
            for (tg_term *pr; (pr = tgT_iter_next(&it));)
                tl_push(env, &dd, drop_dot(env, pr));
            fd.v.v[i] = (uintptr_t)list_of(env, &dd, NULL);
        }
        tg_term *l = list_of(env, &fd, NULL);
        tl_push(env, &out, l ? tg_cons(ctx, tg_symbol_cstr(ctx, "=/="), l) : NULL);
    }
    static const char *const tname[TGC_NTYPES] = {NULL, "num", "str", "sym"};
    for (int tc = TGC_NUM; tc < TGC_NTYPES; tc++) {
        if (!T[tc].v.n)
            continue;
        for (size_t i = 0; i < T[tc].v.n; i++)
            T[tc].v.v[i] = (uintptr_t)tgU_walk_star(env, TL_AT(&T[tc], i), TGU_NOWALK, R);
        sort_lex(env, &T[tc]);
        tg_term *l = list_of(env, &T[tc], NULL);
        tl_push(env, &out, l ? tg_cons(ctx, tg_symbol_cstr(ctx, tname[tc]), l) : NULL);
    }
    if (A2.v.n) {
        tlist fa = {{0}};
        for (size_t i = 0; i < A2.v.n; i++)
            tl_push(env, &fa, tgU_walk_star(env, TL_AT(&A2, i), TGU_NOWALK, R));
        sort_lex(env, &fa);
        for (size_t i = 0; i < fa.v.n; i++)
            fa.v.v[i] = (uintptr_t)drop_dot(env, TL_AT(&fa, i));
        tg_term *l = list_of(env, &fa, NULL);
        tl_push(env, &out, l ? tg_cons(ctx, tg_symbol_cstr(ctx, "absento"), l) : NULL);
    }
    if (env->oom)
        return NULL;
    for (size_t i = 0; i < out.v.n; i++)
        if (!TL_AT(&out, i))
            return env->oom = 1, NULL;
    return out.v.n == 1 ? rv_ : list_of(env, &out, NULL);
}
