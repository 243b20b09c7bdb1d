/* table.c - answer tables for tabled relations: variant keys, answer
 * sets, fresh instances of stored answers. */
#include "table.h"

#include <gc/gc.h>
#include <stdio.h>

typedef struct tables {
    tgA_entry **e;          /* open addressing on the key pointer */
    size_t n, cap;
} tables;

static size_t home(const void *p, size_t cap)
{
    return (size_t)(((uintptr_t)p >> 4) * 0x9E3779B97F4A7C15ull >> 20) & (cap - 1);
}

/* The i-th canonical variable (made on first use, kept by the env). */
static tg_term *canon_var(tg_env *env, size_t i)
{
    while (env->canon.n <= i) {
        char buf[32];
        int len = snprintf(buf, sizeof buf, "_.%zu", env->canon.n);
        tg_term *name = tg_symbol(env->ctx, buf, (size_t)len);
        tg_term *v = name ? tgT_lvar_new(env->ctx, name, 0) : NULL;
        if (!v || tgK_vec_reserve(&env->canon, 1) < 0)
            return NULL;
        env->canon.v[env->canon.n++] = (uintptr_t)v;
    }
    return (tg_term *)env->canon.v[i];
}

/* Rename the variables of t (already walked) through fn(i): the i-th
 * variable met in preorder becomes fn(env, i). */
static tg_term *rename_vars(tg_env *env, tg_term *t, tg_term *(*fn)(tg_env *, size_t))
{
    if (tgT_ground(t))
        return t;
    tgK_vec vars = {0};
    tgU_vars(env, t, &vars);
    tgU_names *nm = tgU_names_new();
    if (env->oom || !nm)
        return NULL;
    for (size_t i = 0; i < vars.n; i++) {
        tg_term *to = fn(env, i);
        if (!to || tgU_names_put(nm, (tg_term *)vars.v[i], to) < 0)
            return NULL;
    }
    return tgU_walk_star(env, t, TGU_NOWALK, nm);
}

tg_term *tgA_canon(tg_env *env, const tgS_state *st, tg_term *t)
{
    tg_term *w = tgU_walk_star(env, t, st->S, NULL);
    return w ? rename_vars(env, w, canon_var) : NULL;
}

static tg_term *fresh_var(tg_env *env, size_t i)
{
    tg_term *cv = canon_var(env, i);
    return cv ? tgT_lvar_new(env->ctx, ((tgT_lvar *)cv)->name, 0) : NULL;
}

tg_term *tgA_instance(tg_env *env, tg_term *a)
{
    return rename_vars(env, a, fresh_var);
}

void tgA_reset(tg_env *env)
{
    env->tables = NULL;
}

static int grow(tables *t)
{
    size_t cap = t->cap ? 2 * t->cap : 64;
    tgA_entry **e = GC_MALLOC(cap * sizeof *e);
    if (!e)
        return -1;
    for (size_t i = 0; i < t->cap; i++) {
        if (!t->e[i])
            continue;
        size_t j = home(t->e[i]->key, cap);
        while (e[j])
            j = (j + 1) & (cap - 1);
        e[j] = t->e[i];
    }
    t->e = e;
    t->cap = cap;
    return 0;
}

tgA_entry *tgA_entry_get(tg_env *env, tg_term *key, int *made)
{
    tables *t = env->tables;
    *made = 0;
    if (!t && !(t = env->tables = GC_MALLOC(sizeof *t)))
        return NULL;
    if (2 * (t->n + 1) > t->cap && grow(t) < 0)
        return NULL;
    size_t i = home(key, t->cap);
    for (; t->e[i]; i = (i + 1) & (t->cap - 1))
        if (t->e[i]->key == key)
            return t->e[i];
    tgA_entry *e = GC_MALLOC(sizeof *e);
    if (!e)
        return NULL;
    e->key = key;
    t->e[i] = e;
    t->n++;
    *made = 1;
    return e;
}

/* The answer set: open addressing on the answer pointer. */
static tg_term **set_slot(tgA_entry *e, tg_term *a)
{
    size_t i = home(a, e->setcap);
    while (e->set[i] && e->set[i] != a)
        i = (i + 1) & (e->setcap - 1);
    return &e->set[i];
}

static int set_grow(tgA_entry *e)
{
    size_t cap = e->setcap ? 2 * e->setcap : 16;
    tg_term **old = e->set;
    size_t oldcap = e->setcap;
    if (!(e->set = GC_MALLOC(cap * sizeof *e->set))) {
        e->set = old;
        return -1;
    }
    e->setcap = cap;
    for (size_t i = 0; i < oldcap; i++)
        if (old[i])
            *set_slot(e, old[i]) = old[i];
    return 0;
}

int tgA_add(tg_env *env, tgA_entry *e, tg_term *a)
{
    (void)env;
    if (2 * (e->nans + 1) > e->setcap && set_grow(e) < 0)
        return -1;
    tg_term **s = set_slot(e, a);
    if (*s)
        return 0;
    if (e->nans == e->anscap) {
        size_t cap = e->anscap ? 2 * e->anscap : 8;
        tg_term **v = GC_REALLOC(e->ans, cap * sizeof *v);
        if (!v)
            return -1;
        e->ans = v;
        e->anscap = cap;
    }
    *s = a;
    e->ans[e->nans++] = a;
    return 1;
}
