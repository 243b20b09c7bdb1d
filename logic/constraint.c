/* constraint.c - =/=, symbolo / numbero / stringo and absento, with the
 * same store layout and the same order of operations as faster-miniKanren
 * (which decides how constraints are later reified).
 *
 * A disequality is stored as the list of bindings that unifying its two
 * sides would add, e.g. ((x . 5) (y . z)); it is violated when all of them
 * hold at once, so it is attached to the first variable only (and to the
 * value too when that is a variable).  When a variable with constraints
 * gets bound, its record is removed and every constraint in it is posted
 * again against the value.
 */
#include "constraint.h"

#include <string.h>

static const tgC_rec empty_rec = {TGC_NONE, NULL, NULL};

/* (p . l), p a term or a disequality */
static const tgC_link *link_new(tg_env *env, const void *p, const tgC_link *l)
{
    tgC_link *k = tgT_alloc(env->ctx, sizeof *k);
    if (!k)
        return env->oom = 1, NULL;
    k->u.t = (tg_term *)p;
    k->next = l;
    return k;
}

const tgC_rec *tgC_lookup(const tgS_state *st, const tg_term *x)
{
    const tgC_rec *c = tgS_map_get(st->C, tgS_var_id(x));
    return c ? c : &empty_rec;
}

static tgS_state *set_c(tg_env *env, tgS_state *st, const tg_term *x, int T, const tgC_link *D,
                        const tgC_link *A)
{
    tgC_rec *c = tgT_alloc(env->ctx, sizeof *c);
    tgS_map *C;
    tgS_state *ns;
    if (!c)
        goto oom;
    c->T = T, c->D = D, c->A = A;
    if (!(C = tgS_map_set(env->ctx, st->C, tgS_var_id(x), c)) || !(ns = tgS_state_new(env->ctx, st->scope, st->S, C)))
        goto oom;
    return ns;
oom:
    env->oom = 1;
    return NULL;
}

int tgC_has_type(const tg_env *env, const tg_term *t, int T)
{
    switch (tg_kind_of(t)) {
    case TG_INT: case TG_RAT: case TG_DOUBLE:
        return T == TGC_NUM;
    case TG_STRING:
        return T == TGC_STR;
    case TG_SYMBOL:     /* #t and #f are the booleans, not symbols */
        return T == TGC_SYM && t != env->sym_t && t != env->sym_f;
    default:
        return 0;
    }
}

tgS_state *tgC_type(tg_env *env, tgS_state *st, tg_term *u, int T)
{
    tg_term *t = tgS_walk(u, st->S);
    if (tgC_has_type(env, t, T))
        return st;
    if (!tgT_islvar(t))
        return NULL;
    const tgC_rec *c = tgC_lookup(st, t);
    if (c->T == T)
        return st;
    if (c->T != TGC_NONE)
        return NULL;
    return set_c(env, st, t, T, c->D, c->A);
}

/* After unifying the two sides of a disequality (with no binding in
 * place) from mark on env->added: record it, or decide it. */
static tgS_state *diseq_after(tg_env *env, tgS_state *st, tgS_state *unified, size_t mark)
{
    tgK_vec *ad = &env->added;
    if (!unified) {
        ad->n = mark;
        return env->oom ? NULL : st;    /* can never be equal: satisfied */
    }
    if (ad->n == mark)
        return NULL;                     /* already equal: violated */
    /* the added bindings, in order */
    size_t k = (ad->n - mark) / 2;
    tgC_dis *d = tgT_alloc(env->ctx, sizeof *d + 2 * k * sizeof *d->p);
    if (!d) {
        ad->n = mark;
        return env->oom = 1, NULL;
    }
    d->n = k;
    memcpy(d->p, ad->v + mark, 2 * k * sizeof *d->p);
    tg_term *x = (tg_term *)ad->v[mark], *v = (tg_term *)ad->v[mark + 1];
    ad->n = mark;
    const tgC_rec *c = tgC_lookup(st, x);
    const tgC_link *D = link_new(env, d, c->D);
    if (!D || !(st = set_c(env, st, x, c->T, D, c->A)))
        return NULL;
    if (tgT_islvar(v)) {
        c = tgC_lookup(st, v);
        if (!(D = link_new(env, d, c->D)))
            return NULL;
        st = set_c(env, st, v, c->T, D, c->A);
    }
    return st;
}

tgS_state *tgC_diseq(tg_env *env, tgS_state *st, tg_term *u, tg_term *v)
{
    tgS_state tmp = *st;
    tmp.scope = 0;
    size_t mark = env->added.n;
    return diseq_after(env, st, tgU_unify(env, &tmp, u, v, 1), mark);
}

/* Does some binding x := v of disequality d have two different ground
 * sides now?  Then the bindings can never all hold (hash-consing: equal
 * ground terms are one pointer) and unifying them would just fail. */
static int diseq_settled(const tgS_state *st, const tgC_dis *d)
{
    for (size_t i = 0; i < 2 * d->n; i += 2) {
        tg_term *a = tgS_walk(d->p[i], st->S), *b = tgS_walk(d->p[i + 1], st->S);
        if (a != b && tgT_ground(a) && tgT_ground(b))
            return 1;
    }
    return 0;
}

tgS_state *tgC_dis_unify(tg_env *env, tgS_state *st, const tgC_dis *d, int record)
{
    tgK_vec *w = &env->work;
    size_t base = w->n;
    if (tgK_vec_reserve(w, 4 * d->n) < 0)
        return env->oom = 1, NULL;
    /* the first binding on top: unified first */
    for (size_t i = d->n; i-- > 0;) {
        uintptr_t *e = w->v + w->n;
        e[0] = (uintptr_t)d->p[2 * i], e[1] = 0;
        e[2] = (uintptr_t)d->p[2 * i + 1], e[3] = 0;
        w->n += 4;
    }
    return tgU_unify_pushed(env, st, base, record);
}

static tgS_state *diseq_assoc(tg_env *env, tgS_state *st, const tgC_dis *d)
{
    if (diseq_settled(st, d))
        return st;
    tgS_state tmp = *st;
    tmp.scope = 0;
    size_t mark = env->added.n;
    return diseq_after(env, st, tgC_dis_unify(env, &tmp, d, 1), mark);
}

static int memv(const tg_term *x, const tgC_link *l)
{
    for (; l; l = l->next)
        if (l->u.t == x)
            return 1;
    return 0;
}

/* At a variable b under absento of a: the disequality, then a joins the
 * terms that must not occur in b. */
static tgS_state *absent_var(tg_env *env, tgS_state *st, tg_term *a, tg_term *b)
{
    if (!(st = tgC_diseq(env, st, a, b)))
        return NULL;
    const tgC_rec *c = tgC_lookup(st, b);
    if (memv(a, c->A))
        return st;
    const tgC_link *A = link_new(env, a, c->A);
    return A ? set_c(env, st, b, c->T, c->D, A) : NULL;
}

/* absent_var for an atom a and an unbound variable b, in one step: the
 * disequality's unification would add just b := a, so it is recorded as
 * that, with a among b's absent terms in the same record. */
static tgS_state *absent_atom_var(tg_env *env, tgS_state *st, tg_term *a, tg_term *b)
{
    tgC_dis *d = tgT_alloc(env->ctx, sizeof *d + 2 * sizeof *d->p);
    if (!d)
        return env->oom = 1, NULL;
    d->n = 1;
    d->p[0] = b, d->p[1] = a;
    const tgC_rec *c = tgC_lookup(st, b);
    const tgC_link *D = link_new(env, d, c->D);
    const tgC_link *A = memv(a, c->A) ? c->A : link_new(env, a, c->A);
    return D && A ? set_c(env, st, b, c->T, D, A) : NULL;
}

/* absento of an atom a: only an equal atom violates it and only a
 * variable takes a constraint, so list nodes (which can never unify with
 * an atom) need no disequality and their suffixes are never built: the
 * stack holds positions, a term (index 0) or a list chunk and the index of
 * an element.  Same visiting order as the general case. */
static tgS_state *absento_atom(tg_env *env, tgS_state *st, tg_term *a, tg_term *t2)
{
    uintptr_t buf[64];      /* the C stack is scanned: no collector memory */
    tgK_vec todo = {buf, 2, 64};
    buf[0] = (uintptr_t)t2, buf[1] = 0;
    while (todo.n && st) {
        todo.n -= 2;
        tg_term *b = (tg_term *)todo.v[todo.n];
        unsigned i = (unsigned)todo.v[todo.n + 1];
        if (i == 0) {
            b = tgS_walk(b, st->S);
            if (b == a)
                return NULL;
            if (tgT_islvar(b)) {
                st = absent_atom_var(env, st, a, b);
                continue;
            }
            if (!tgT_ispair(b))
                continue;
        }
        if (tgK_vec_reserve(&todo, 4) < 0)
            return env->oom = 1, NULL;
        uintptr_t *w = todo.v + todo.n;
        if (i + 1 < b->h.n)
            w[0] = (uintptr_t)b, w[1] = i + 1;
        else
            w[0] = (uintptr_t)tgT_rest(b), w[1] = 0;
        w[2] = (uintptr_t)b->e[i], w[3] = 0;
        todo.n += 4;
    }
    return st;
}

/* absento: pushed down to the leaves of t2, the car before the cdr, with
 * a disequality against t1 at every node on the way. */
tgS_state *tgC_absento(tg_env *env, tgS_state *st, tg_term *t1, tg_term *t2)
{
    tg_term *a0 = tgS_walk(t1, st->S);
    if (!tgT_ispair(a0) && !tgT_islvar(a0))
        return absento_atom(env, st, a0, t2);
    uintptr_t buf[32];      /* the C stack is scanned: no collector memory */
    tgK_vec todo = {buf, 1, 32};
    buf[0] = (uintptr_t)t2;
    while (todo.n && st) {
        tg_term *a = tgS_walk(t1, st->S);
        tg_term *b = tgS_walk((tg_term *)todo.v[--todo.n], st->S);
        if (tgT_islvar(b)) {
            st = absent_var(env, st, a, b);
            continue;
        }
        if (!(st = tgC_diseq(env, st, a, b)))
            break;
        if (tgT_ispair(b)) {
            tg_term *cdr = b->h.n == 1 ? tgT_rest(b) : tgU_suffix(env, b, 1);
            if (!cdr || tgK_vec_reserve(&todo, 2) < 0)
                return env->oom = 1, NULL;
            todo.v[todo.n++] = (uintptr_t)cdr;
            todo.v[todo.n++] = (uintptr_t)b->e[0];
        }
    }
    return st;
}

/* A binding x := v was made: post x's constraints again against v. */
static tgS_state *update(tg_env *env, tgS_state *st, tg_term *x, tg_term *v)
{
    const tgC_rec *c = tgC_lookup(st, x);
    if (c == &empty_rec || (c->T == TGC_NONE && !c->D && !c->A))
        return st;
    int T = c->T;
    const tgC_link *A = c->A, *D = c->D;
    tgC_rec *e = (tgC_rec *)&empty_rec;
    tgS_map *C = tgS_map_set(env->ctx, st->C, tgS_var_id(x), e);
    if (!C || !(st = tgS_state_new(env->ctx, st->scope, st->S, C)))
        return env->oom = 1, NULL;
    if (T != TGC_NONE && !(st = tgC_type(env, st, v, T)))
        return NULL;
    for (; A; A = A->next)
        if (!(st = tgC_absento(env, st, A->u.t, v)))
            return NULL;
    for (; D; D = D->next)
        if (!(st = diseq_assoc(env, st, D->u.d)))
            return NULL;
    return st;
}

/* After a unification that recorded its bindings from mark on. */
static tgS_state *post(tg_env *env, tgS_state *ns, size_t mark)
{
    /* update() may unify again (disequalities), stacking above this
     * unification's bindings; read ours by index, they stay put */
    size_t end = env->added.n;
    for (size_t i = mark; ns && i < end; i += 2)
        ns = update(env, ns, (tg_term *)env->added.v[i], (tg_term *)env->added.v[i + 1]);
    env->added.n = mark;
    return ns;
}

tgS_state *tgC_unify(tg_env *env, tgS_state *st, tg_term *u, tg_term *v)
{
    if (!st->C)     /* no constraints anywhere: nothing to re-check */
        return tgU_unify(env, st, u, v, 0);
    size_t mark = env->added.n;
    return post(env, tgU_unify(env, st, u, v, 1), mark);
}

tgS_state *tgC_unify_pushed(tg_env *env, tgS_state *st, size_t base)
{
    if (!st->C)
        return tgU_unify_pushed(env, st, base, 0);
    size_t mark = env->added.n;
    return post(env, tgU_unify_pushed(env, st, base, 1), mark);
}
