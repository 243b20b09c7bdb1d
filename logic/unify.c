/* unify.c - unification with an occurs check that skips ground terms,
 * walk*, and reified variable names.
 *
 * The unify stack holds pairs of "list positions": a term with index 0, or
 * a chunk node with the index of an element inside it (the suffix of the
 * list from there), so that matching (a . ?d) against a long list does
 * not build the cdr unless ?d gets bound to it.
 */
#include "unify.h"

#include <gc/gc.h>
#include <stdio.h>
#include <string.h>

int tgK_vec_reserve(tgK_vec *s, size_t k)
{
    if (s->n + k <= s->cap)
        return 0;
    size_t cap = s->cap ? s->cap * 2 : 64;
    while (cap < s->n + k)
        cap *= 2;
    uintptr_t *v = GC_MALLOC(cap * sizeof *v);
    if (!v)
        return -1;
    if (s->n)
        memcpy(v, s->v, s->n * sizeof *v);
    s->v = v;
    s->cap = cap;
    return 0;
}

tg_term *tgU_suffix(tg_env *env, tg_term *p, unsigned i)
{
    if (i == 0)
        return p;
    return tgT_chunk(env->ctx, p->h.n - i, p->e + i, tgT_rest(p));
}

static inline int push4(tgK_vec *s, tg_term *a, unsigned ia, tg_term *b, unsigned ib)
{
    if (s->n + 4 > s->cap && tgK_vec_reserve(s, 4) < 0)
        return -1;
    uintptr_t *w = s->v + s->n;
    w[0] = (uintptr_t)a;
    w[1] = ia;
    w[2] = (uintptr_t)b;
    w[3] = ib;
    s->n += 4;
    return 0;
}

int tgU_occurs(tg_env *env, tg_term *x, tg_term *v, const tgS_map *S)
{
    if (tgT_ground(v))
        return 0;
    if (tgT_islvar(v) && tgS_walk(v, S) == v)
        return v == x;  /* binding to a variable: the common case, no stack */
    tgK_vec *w = &env->work;
    size_t base = w->n;
    int found = 0;
    if (tgK_vec_reserve(w, 1) < 0) {
        env->oom = 1;
        return 1;
    }
    w->v[w->n++] = (uintptr_t)v;
    while (w->n > base && !found) {
        tg_term *t = tgS_walk((tg_term *)w->v[--w->n], S);
        if (tgT_ground(t))
            continue;
        if (tgT_islvar(t)) {
            found = t == x;
            continue;
        }
        if (!tgT_ispair(t))
            continue;
        unsigned n = t->h.n;
        if (tgK_vec_reserve(w, n + 1) < 0) {
            env->oom = found = 1;
            break;
        }
        tg_term *r = tgT_rest(t);
        if (!tgT_ground(r))
            w->v[w->n++] = (uintptr_t)r;
        for (unsigned i = n; i-- > 0;)
            if (!tgT_ground(t->e[i]))
                w->v[w->n++] = (uintptr_t)t->e[i];
    }
    w->n = base;
    return found;
}

typedef struct ustate {
    tg_env *env;
    tgS_map *S;
    uint64_t scope;
    int record;
} ustate;

/* Bind variable x to v (which is not x). */
static int bind(ustate *u, tg_term *x, tg_term *v)
{
    tg_env *env = u->env;
    if (env->occurs_check && tgU_occurs(env, x, v, u->S))
        return -1;
    if (u->record && tgK_push2(&env->added, (uintptr_t)x, (uintptr_t)v) < 0)
        return env->oom = 1, -1;
    tgT_lvar *xv = (tgT_lvar *)x;
    if (xv->scope == u->scope) {
        xv->val = v;
        return 0;
    }
    tgS_map *S = tgS_map_set(env->ctx, u->S, xv->id, v);
    if (!S)
        return env->oom = 1, -1;
    u->S = S;
    /* From now on walks look x up.  No state can bind x in place any
     * more: that needs x's own scope, which ended with the branch point
     * that made this binding go to a map (or this is a trial binding of
     * a disequality, scope 0, after which x may still be bound in place,
     * overwriting the mark, as no real map holds x then). */
    xv->val = TGS_MAPPED;
    return 0;
}

/* Run the unify stack down to base. */
static int run(ustate *u, size_t base)
{
    tg_env *env = u->env;
    tgK_vec *w = &env->work;
    while (w->n > base) {
        w->n -= 4;
        uintptr_t *e = w->v + w->n;
        tg_term *a = (tg_term *)e[0], *b = (tg_term *)e[2];
        unsigned ia = (unsigned)e[1], ib = (unsigned)e[3];
        if (ia == 0)
            a = tgS_walk(a, u->S);
        if (ib == 0)
            b = tgS_walk(b, u->S);
        if (a == b && ia == ib)
            continue;
        if (ia == 0 && tgT_islvar(a)) {
            if (ib == 0 && tgT_islvar(b) && tgS_var_id(b) > tgS_var_id(a)) {
                if (bind(u, b, a) < 0)
                    return -1;
                continue;
            }
            tg_term *bt = tgU_suffix(env, b, ib);
            if (!bt || bind(u, a, bt) < 0)
                return bt ? -1 : (env->oom = 1, -1);
            continue;
        }
        if (ib == 0 && tgT_islvar(b)) {
            tg_term *at = tgU_suffix(env, a, ia);
            if (!at || bind(u, b, at) < 0)
                return at ? -1 : (env->oom = 1, -1);
            continue;
        }
        if (!tgT_ispair(a) || !tgT_ispair(b))
            return -1;      /* distinct atoms, or an atom against a list */
        if (ia == 0 && ib == 0 && tgT_ground(a) && tgT_ground(b))
            return -1;      /* hash-consed: equal ground terms are one pointer */
        tg_term *na = a, *nb = b;
        unsigned ja = ia + 1, jb = ib + 1;
        if (ja == a->h.n)
            na = tgT_rest(a), ja = 0;
        if (jb == b->h.n)
            nb = tgT_rest(b), jb = 0;
        if (push4(w, na, ja, nb, jb) < 0 || push4(w, a->e[ia], 0, b->e[ib], 0) < 0)
            return env->oom = 1, -1;
    }
    return 0;
}

static tgS_state *finish(ustate *u, tgS_state *st, size_t base, int rc)
{
    u->env->work.n = base;
    if (rc < 0)
        return NULL;
    if (u->S == st->S)
        return st;
    tgS_state *ns = tgS_state_new(u->env->ctx, st->scope, u->S, st->C);
    if (!ns)
        u->env->oom = 1;
    return ns;
}

tgS_state *tgU_unify(tg_env *env, tgS_state *st, tg_term *a, tg_term *b, int record)
{
    ustate u = {env, st->S, st->scope, record};
    size_t base = env->work.n;
    if (push4(&env->work, a, 0, b, 0) < 0)
        return env->oom = 1, NULL;
    return finish(&u, st, base, run(&u, base));
}

tgS_state *tgU_unify_pushed(tg_env *env, tgS_state *st, size_t base, int record)
{
    ustate u = {env, st->S, st->scope, record};
    return finish(&u, st, base, run(&u, base));
}

tgS_state *tgU_unify_assoc(tg_env *env, tgS_state *st, tg_term *assoc, int record)
{
    ustate u = {env, st->S, st->scope, record};
    size_t base = env->work.n;
    /* pushed last first, so that the first pair is unified first */
    size_t n = tg_length(assoc);
    if (tgK_vec_reserve(&env->work, 4 * n) < 0)
        return env->oom = 1, NULL;
    env->work.n += 4 * n;
    tg_iter it;
    tg_iter_init(&it, assoc);
    size_t k = env->work.n;
    for (tg_term *p; (p = tgT_iter_next(&it));) {
        k -= 4;
        uintptr_t *e = env->work.v + k;
        e[0] = (uintptr_t)tg_car(p);
        e[1] = 0;
        e[2] = (uintptr_t)tg_cdr(env->ctx, p);
        e[3] = 0;
        if (!e[2])
            return finish(&u, st, base, (env->oom = 1, -1));
    }
    return finish(&u, st, base, run(&u, base));
}

/* ---- walk* and renaming ------------------------------------------- */

struct tgU_names {
    tg_term **keys, **vals;     /* open addressing on the variable's id */
    size_t n, cap;
};

tgU_names *tgU_names_new(void)
{
    tgU_names *nm = GC_MALLOC(sizeof *nm);
    return nm;
}

tg_term *tgU_names_get(const tgU_names *nm, const tg_term *x)
{
    if (!nm->cap)
        return NULL;
    size_t i = (size_t)(tgS_var_id(x) * 0x9E3779B97F4A7C15ull) & (nm->cap - 1);
    for (; nm->keys[i]; i = (i + 1) & (nm->cap - 1))
        if (nm->keys[i] == x)
            return nm->vals[i];
    return NULL;
}

int tgU_names_put(tgU_names *nm, tg_term *x, tg_term *name)
{
    if (2 * (nm->n + 1) > nm->cap) {
        size_t cap = nm->cap ? nm->cap * 2 : 16;
        tg_term **k = GC_MALLOC(cap * sizeof *k), **v = GC_MALLOC(cap * sizeof *v);
        if (!k || !v)
            return -1;
        tgU_names old = *nm;
        nm->keys = k, nm->vals = v, nm->cap = cap, nm->n = 0;
        for (size_t i = 0; i < old.cap; i++)
            if (old.keys[i])
                tgU_names_put(nm, old.keys[i], old.vals[i]);
    }
    size_t i = (size_t)(tgS_var_id(x) * 0x9E3779B97F4A7C15ull) & (nm->cap - 1);
    while (nm->keys[i])
        i = (i + 1) & (nm->cap - 1);
    nm->keys[i] = x;
    nm->vals[i] = name;
    nm->n++;
    return 0;
}

size_t tgU_vars(tg_env *env, tg_term *v, tgK_vec *out)
{
    /* preorder: a stack of terms, elements pushed last-first */
    tgK_vec *w = &env->work;
    size_t base = w->n, n0 = out->n;
    tgU_names *seen = tgU_names_new();
    if (!seen || tgK_vec_reserve(w, 1) < 0)
        return env->oom = 1, 0;
    w->v[w->n++] = (uintptr_t)v;
    while (w->n > base) {
        tg_term *t = (tg_term *)w->v[--w->n];
        if (tgT_ground(t))
            continue;
        if (tgT_islvar(t)) {
            if (!tgU_names_get(seen, t)) {
                if (tgU_names_put(seen, t, t) < 0 || tgK_vec_reserve(out, 1) < 0) {
                    env->oom = 1;
                    break;
                }
                out->v[out->n++] = (uintptr_t)t;
            }
            continue;
        }
        if (!tgT_ispair(t))
            continue;
        if (tgK_vec_reserve(w, t->h.n + 1) < 0) {
            env->oom = 1;
            break;
        }
        w->v[w->n++] = (uintptr_t)tgT_rest(t);
        for (unsigned i = t->h.n; i-- > 0;)
            w->v[w->n++] = (uintptr_t)t->e[i];
    }
    w->n = base;
    return out->n - n0;
}

int tgU_names_add(tg_env *env, tgU_names *nm, tg_term *v)
{
    uintptr_t buf[32];
    tgK_vec vars = {buf, 0, 32};
    tgU_vars(env, v, &vars);
    if (env->oom)
        return -1;
    for (size_t i = 0; i < vars.n; i++) {
        tg_term *x = (tg_term *)vars.v[i];
        if (tgU_names_get(nm, x))
            continue;
        char buf[32];
        int len = snprintf(buf, sizeof buf, "_.%zu", nm->n);
        tg_term *name = tg_symbol(env->ctx, buf, (size_t)len);
        if (!name || tgU_names_put(nm, x, name) < 0)
            return env->oom = 1, -1;
    }
    return 0;
}

/* walk*: tasks on env->work are pairs (0, term to evaluate) or (1, k):
 * "build a list from the k values and the tail on top of the value
 * stack".  Evaluating the elements first-to-last visits the variables in
 * preorder, which the renaming relies on. */
tg_term *tgU_walk_star(tg_env *env, tg_term *v, const tgS_map *S, tgU_names *nm)
{
    tgK_vec *w = &env->work;
    /* small terms need no collector memory: the stack is scanned too */
    uintptr_t vbuf[32], tbuf[32];
    tgK_vec vals = {vbuf, 0, 32}, tmp = {tbuf, 0, 32};
    size_t base = w->n;
    if (tgK_push2(w, 0, (uintptr_t)v) < 0)
        goto oom;
    while (w->n > base) {
        w->n -= 2;
        uintptr_t kind = w->v[w->n], arg = w->v[w->n + 1];
        if (kind) {
            size_t k = arg;
            tg_term **e = (tg_term **)(vals.v + vals.n - k - 1);
            tg_term *r = tg_list(env->ctx, k, e, e[k]);
            if (!r)
                goto oom;
            vals.n -= k + 1;
            vals.v[vals.n++] = (uintptr_t)r;
            continue;
        }
        tg_term *t = S != TGU_NOWALK ? tgS_walk((tg_term *)arg, S) : (tg_term *)arg;
        if (tgT_ground(t) || !tgT_ispair(t)) {
            if (nm && tgT_islvar(t)) {
                tg_term *name = tgU_names_get(nm, t);
                if (name)
                    t = name;
            }
            if (tgK_vec_reserve(&vals, 1) < 0)
                goto oom;
            vals.v[vals.n++] = (uintptr_t)t;
            continue;
        }
        /* a list: gather its elements, following tails bound to lists */
        tmp.n = 0;
        for (;;) {
            if (tgK_vec_reserve(&tmp, t->h.n + 1) < 0)
                goto oom;
            for (unsigned i = 0; i < t->h.n; i++)
                tmp.v[tmp.n++] = (uintptr_t)t->e[i];
            tg_term *r = tgT_rest(t);
            if (S != TGU_NOWALK)
                r = tgS_walk(r, S);
            if (!tgT_ispair(r) || tgT_ground(r)) {
                tmp.v[tmp.n++] = (uintptr_t)r;
                break;
            }
            t = r;
        }
        size_t k = tmp.n - 1;
        if (tgK_vec_reserve(w, 2 * (k + 2)) < 0)
            goto oom;
        w->v[w->n++] = 1;
        w->v[w->n++] = k;
        for (size_t i = tmp.n; i-- > 0;) {
            w->v[w->n++] = 0;
            w->v[w->n++] = tmp.v[i];
        }
    }
    w->n = base;
    return vals.n == 1 ? (tg_term *)vals.v[0] : NULL;
oom:
    w->n = base;
    env->oom = 1;
    return NULL;
}
