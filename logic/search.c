/* search.c - the search machine: faster-miniKanren's stream monad run on
 * an explicit continuation stack.
 *
 * A stream is NULL (no answer), a state, a pair (state . suspension) or a
 * suspension; suspensions are small records saying what forcing them
 * does.  The machine has three registers modes: APPLY a goal to a state,
 * FORCE a suspension, RETURN a stream to the continuation on top of the
 * stack (bind it with a goal, mplus it with a suspension, or go on with
 * the remaining clauses of a conde).  Each mode and each continuation is
 * one case of faster-miniKanren's mplus, bind, fresh, conde or take.
 */
#include "search.h"

#include <gc/gc.h>
#include <string.h>

enum {
    C_ANSWER = 2,   /* a reified answer in a stream */
    C_PAIR,         /* (car . susp) */
    SU_APPLY,       /* apply goal a to state c in frame b */
    SU_FRESH,       /* make the variables of fresh a, then apply its body */
    SU_CONDE,       /* branch: new scope, then the clauses */
    SU_CLAUSES,     /* clauses i.. of conde a */
    SU_MPLUS,       /* (mplus (force a) b) */
    SU_BIND,        /* (bind (force a) goal c in frame b) */
    SU_FAIL         /* i > 1: SU_FAIL i-1; else no answer */
};

typedef struct cell {
    uint32_t tag;
    uint32_t i;
    void *a, *b, *c;
} cell;

static inline uint32_t tag_of(const void *s) { return *(const uint32_t *)s; }
static inline int is_susp(const void *s) { return tag_of(s) >= SU_APPLY; }

enum { K_BIND = 1, K_MPLUS, K_CLAUSES };

static cell *mk(tg_env *env, uint32_t tag, uint32_t i, void *a, void *b, void *c)
{
    cell *x = tgT_alloc(env->ctx, sizeof *x);
    if (!x) {
        env->oom = 1;
        return NULL;
    }
    x->tag = tag, x->i = i, x->a = a, x->b = b, x->c = c;
    return x;
}

/* Streams are used linearly: once the machine has forced a suspension of
 * the kinds below, or taken a pair apart, nothing refers to its cell any
 * more.  Such cells go to a pool local to one run of the machine and make
 * its next cells; most cells of a long search are the bind and mplus
 * wrappers rebuilt around a suspension on every step, so this spares the
 * collector most of them. */
static inline void recycle(cell **pool, cell *x)
{
    x->a = *pool;
    x->b = x->c = NULL;     /* let go of what it held */
    *pool = x;
}

static inline cell *mkp(tg_env *env, cell **pool, uint32_t tag, uint32_t i, void *a, void *b, void *c)
{
    cell *x = *pool;
    if (!x)
        return mk(env, tag, i, a, b, c);
    *pool = x->a;
    x->tag = tag, x->i = i, x->a = a, x->b = b, x->c = c;
    return x;
}

static int kpush(tg_env *env, uintptr_t k, void *a, void *b, void *c)
{
    tgK_vec *s = &env->kont;
    if (s->n + 4 > s->cap && tgK_vec_reserve(s, 4) < 0)
        return env->oom = 1, -1;
    uintptr_t *w = s->v + s->n;
    w[0] = k, w[1] = (uintptr_t)a, w[2] = (uintptr_t)b, w[3] = (uintptr_t)c;
    s->n += 4;
    return 0;
}

/* ---- templates ---------------------------------------------------- */

static tg_term *inst_from(tg_env *env, const tgG_expr *e, unsigned i0, tg_term **fr);

/* Template nesting is bounded when compiling, so this recursion is. */
static tg_term *inst(tg_env *env, const tgG_expr *e, tg_term **fr)
{
    switch (e->op) {
    case TGG_CONST:
        return e->t;
    case TGG_SLOT:
        return fr[e->slot];
    default:
        return inst_from(env, e, 0, fr);
    }
}

/* List template e from its element i0 on. */
static tg_term *inst_from(tg_env *env, const tgG_expr *e, unsigned i0, tg_term **fr)
{
    unsigned n = e->n - i0;
    tg_term *buf[16], **v = n <= 16 ? buf : GC_MALLOC(n * sizeof *v);
    if (!v)
        return env->oom = 1, NULL;
    for (unsigned i = 0; i < n; i++)
        if (!(v[i] = inst(env, e->e[i0 + i], fr)))
            return NULL;
    tg_term *tail = e->tail ? inst(env, e->tail, fr) : tg_nil();
    if (!tail)
        return NULL;
    tg_term *r = n ? tg_list(env->ctx, n, v, tail) : tail;
    if (!r)
        env->oom = 1;
    return r;
}

/* ---- unifying a template without building it ---------------------- */

/* (== template term) unifies the template's lists element by element
 * against the term's, exactly as unify would visit the built term, so
 * only the parts met by an unbound variable are built (and interned).
 * The pairs unify would meet are put on env->work in visiting order;
 * a position in the term is a term (index 0) or a list chunk and an
 * element index, as in unify.c.  Deciding the term's shape before
 * unifying is sound: bindings only ever add structure, so a position
 * that is a list now is the same list when unify gets there, and one
 * that is a variable now is walked again by unify then. */
typedef struct tpl {
    tg_env *env;
    tg_term **fr;
    const tgS_map *S;
    int left;               /* the template is the left side of == */
    const tgG_goal *fresh;  /* a fresh whose variables are not all made yet */
    uint64_t scope;         /* ... and its scope */
} tpl;

/* Make the variables of c->fresh that are still missing, in the order of
 * the fresh (which gives them their ids, so their order is the order
 * eager making would give). */
static int make_missing(tpl *c)
{
    const tgG_goal *g = c->fresh;
    if (!g)
        return 0;
    c->fresh = NULL;
    for (unsigned i = 0; i < g->n; i++)
        if (!c->fr[g->slots[i]] &&
            !(c->fr[g->slots[i]] = tgT_lvar_new(c->env->ctx, g->names[i], c->scope)))
            return c->env->oom = 1, -1;
    return 0;
}

static int emit(tpl *c, tg_term *x, tg_term *t, unsigned it)
{
    tgK_vec *w = &c->env->work;
    if (w->n + 4 > w->cap && tgK_vec_reserve(w, 4) < 0)
        return c->env->oom = 1, -1;
    uintptr_t *e = w->v + w->n;
    int left = c->left;
    e[left ? 0 : 2] = (uintptr_t)x, e[left ? 1 : 3] = 0;
    e[left ? 2 : 0] = (uintptr_t)t, e[left ? 3 : 1] = it;
    w->n += 4;
    return 0;
}

static int flatten(tpl *c, const tgG_expr *e, tg_term *t, unsigned it);

/* Template element or tail e against position (t, it).  A variable of a
 * fresh not made yet would be made and bound in place to the position's
 * value, nobody having seen it: the slot takes the value instead. */
static int flatten_part(tpl *c, const tgG_expr *e, tg_term *t, unsigned it)
{
    if (!e)
        return emit(c, tg_nil(), t, it);
    if (e->op == TGG_LIST)
        return flatten(c, e, t, it);
    if (e->op == TGG_CONST)
        return emit(c, e->t, t, it);
    if (!c->fr[e->slot] && c->fresh) {
        tg_term *v = it ? tgU_suffix(c->env, t, it) : t;
        if (!v)
            return c->env->oom = 1, -1;
        c->fr[e->slot] = v;
        return 0;
    }
    return emit(c, c->fr[e->slot], t, it);
}

/* List template e against position (t, it); -1 when they cannot unify
 * (or out of memory: env->oom).  Recursion follows the template's
 * nesting, bounded when compiling. */
static int flatten(tpl *c, const tgG_expr *e, tg_term *t, unsigned it)
{
    for (unsigned i = 0;; i++) {
        if (i == e->n)
            return flatten_part(c, e->tail, t, it);
        if (it == 0) {
            t = tgS_walk(t, c->S);
            if (!tgT_ispair(t)) {
                if (!tgT_islvar(t))
                    return -1;  /* an atom (or ()) against more elements */
                if (make_missing(c) < 0)
                    return -1;
                tg_term *x = inst_from(c->env, e, i, c->fr);
                return x ? emit(c, x, t, 0) : -1;
            }
        }
        tg_term *x = t->e[it];
        if (++it == t->h.n)
            t = tgT_rest(t), it = 0;
        if (flatten_part(c, e->e[i], x, 0) < 0)
            return -1;
    }
}

/* Reverse the order of the 4-word pairs on env->work above base: unify
 * pops them, so the first met must be on top. */
static void reverse_pairs(tgK_vec *w, size_t base)
{
    for (size_t i = base, j = w->n - 4; i < j; i += 4, j -= 4)
        for (unsigned k = 0; k < 4; k++) {
            uintptr_t x = w->v[i + k];
            w->v[i + k] = w->v[j + k];
            w->v[j + k] = x;
        }
}

/* (== a b) where a or b is a list template; c->fresh: see fresh_unify. */
static tgS_state *unify_tpl(tpl *c, tgS_state *st, const tgG_expr *a, const tgG_expr *b)
{
    tg_env *env = c->env;
    size_t base = env->work.n;
    c->S = st->S;
    c->left = a->op == TGG_LIST;
    const tgG_expr *o = c->left ? b : a;
    if (o->op != TGG_CONST && (o->op == TGG_LIST || !c->fr[o->slot]) && make_missing(c) < 0)
        return NULL;
    tg_term *other = inst(env, o, c->fr);
    if (!other || flatten(c, c->left ? a : b, other, 0) < 0) {
        env->work.n = base;
        return NULL;
    }
    if (env->work.n == base)
        return st;      /* every part went to a variable not yet made */
    reverse_pairs(&env->work, base);
    return tgC_unify_pushed(env, st, base);
}

static int is_tpl_unify(const tgG_goal *u)
{
    return u->op == TGG_UNIFY && (u->a->op == TGG_LIST || u->b->op == TGG_LIST);
}

/* How many goals (== template term) body b of a fresh starts with. */
static unsigned leading_unifies(const tgG_goal *b)
{
    if (b->op != TGG_CONJ)
        return is_tpl_unify(b);
    unsigned k = 0;
    while (k < b->n && is_tpl_unify(b->g[k]))
        k++;
    return k;
}

/* Fresh g (in frame fr, its slots not shared with any other branch: a
 * fresh runs once per frame or copies it) followed by the first k goals
 * of its body b, each (== template term).  Variables matched against
 * parts of a term are never made, their slots take those parts; the rest
 * are made once a template part must be built, or after.  This is what
 * making them all first would do: they would be bound in place (a
 * unification makes no branch point, the scope stays) before anything
 * else could see them, and made in the same order, so with ids in the
 * same order. */
static tgS_state *fresh_unify(tg_env *env, tgS_state *st, const tgG_goal *g, tg_term **fr,
                              const tgG_goal *b, unsigned k)
{
    for (unsigned i = 0; i < g->n; i++)
        fr[g->slots[i]] = NULL;
    tpl c = {env, fr, NULL, 0, g, st->scope};
    for (unsigned i = 0; i < k && st; i++) {
        const tgG_goal *u = b->op == TGG_CONJ ? b->g[i] : b;
        st = unify_tpl(&c, st, u->a, u->b);
    }
    return st && make_missing(&c) < 0 ? NULL : st;
}

/* ---- the machine -------------------------------------------------- */

/* A suspension returned to the continuations from the top of the stack
 * down to base: each wraps it (bind: a bind suspension; mplus: an mplus
 * suspension, the waiting stream first).  Stops early at a continuation
 * of another kind, left on the stack.  NULL when out of memory. */
static cell *bubble(tg_env *env, cell **pool, cell *s, size_t base)
{
    tgK_vec *K = &env->kont;
    size_t n = K->n;        /* kept here: nothing below touches the stack */
    while (s && n > base) {
        uintptr_t *w = K->v + n - 4;
        switch (w[0] & 0xff) {
        case K_BIND:
            s = mkp(env, pool, SU_BIND, 0, s, (void *)w[2], (void *)w[1]);
            break;
        case K_MPLUS:
            s = mkp(env, pool, SU_MPLUS, 0, (void *)w[1], s, NULL);
            break;
        case K_CLAUSES: {
            cell *c = mkp(env, pool, SU_CLAUSES, (uint32_t)(w[0] >> 8), (void *)w[1], (void *)w[2],
                          (void *)w[3]);
            s = c ? mkp(env, pool, SU_MPLUS, 0, c, s, NULL) : NULL;
            break;
        }
        default:
            K->n = n;
            return s;
        }
        n -= 4;
    }
    K->n = n;
    return s;
}

/* Suspension s returned to the continuations above base.  Wrapped up to
 * base, take would force it again at once, which pushes the binds at the
 * bottom of the stack back as they were and stops at the lowest mplus (or
 * remaining conde clauses), forcing its waiting stream with the wrapped
 * rest waiting instead.  So: wrap s only above that level and change the
 * level in place.  Returns 1 with *f the suspension to force next, 0 when
 * a continuation of another kind is met (s updated, the stack popped down
 * to it), -1 when out of memory. */
static int resume(tg_env *env, cell **pool, cell **s, size_t base, cell **f)
{
    tgK_vec *K = &env->kont;
    size_t low = base;
    while (low < K->n && (K->v[low] & 0xff) == K_BIND)
        low += 4;
    if (low == K->n) {      /* only binds: they stay, s is forced */
        *f = *s;
        return 1;
    }
    if (!(*s = bubble(env, pool, *s, low + 4)))
        return -1;
    if (K->n != low + 4)
        return 0;
    uintptr_t *w = K->v + low;
    switch (w[0] & 0xff) {
    case K_MPLUS:
        *f = (cell *)w[1];
        break;
    case K_CLAUSES:
        if (!(*f = mkp(env, pool, SU_CLAUSES, (uint32_t)(w[0] >> 8), (void *)w[1], (void *)w[2],
                       (void *)w[3])))
            return -1;
        w[0] = K_MPLUS;
        break;
    default:
        return 0;
    }
    w[1] = (uintptr_t)*s;
    return 1;
}

/* Force a chain of mplus and bind suspensions: push their continuations
 * and return the innermost suspension, to be forced next. */
static cell *unwrap(tg_env *env, cell **pool, cell *f)
{
    tgK_vec *K = &env->kont;
    do {
        if (K->n + 4 > K->cap && tgK_vec_reserve(K, 4) < 0)
            return env->oom = 1, NULL;
        uintptr_t *w = K->v + K->n;
        if (f->tag == SU_MPLUS)
            w[0] = K_MPLUS, w[1] = (uintptr_t)f->b;
        else
            w[0] = K_BIND, w[1] = (uintptr_t)f->c, w[2] = (uintptr_t)f->b;
        K->n += 4;
        cell *next = f->a;
        recycle(pool, f);
        f = next;
    } while (f->tag == SU_MPLUS || f->tag == SU_BIND);
    return f;
}

#define ERR ((void *)1)

enum { APPLY, FORCE, RETURN };

static void *machine(tg_env *env, cell *f0)
{
    tgK_vec *K = &env->kont;
    size_t base = K->n;
    int mode = FORCE;
    cell *f = f0;
    void *s = NULL;
    tgG_goal *g = NULL;
    tg_term **fr = NULL;
    tgS_state *st = NULL;
    uint32_t ci = 0;
    cell *pool = NULL;

    for (;;) {
        switch (mode) {
        case APPLY:
            switch (g->op) {
            case TGG_SUCCEED:
                s = st;
                break;
            case TGG_FAIL:
                s = NULL;
                break;
            case TGG_UNIFY: case TGG_DISEQ: case TGG_ABSENTO: {
                if (g->op == TGG_UNIFY && (g->a->op == TGG_LIST || g->b->op == TGG_LIST)) {
                    tpl c = {env, fr, NULL, 0, NULL, 0};
                    s = unify_tpl(&c, st, g->a, g->b);
                    break;
                }
                tg_term *u = inst(env, g->a, fr), *v = u ? inst(env, g->b, fr) : NULL;
                if (!v)
                    s = NULL;
                else if (g->op == TGG_UNIFY)
                    s = tgC_unify(env, st, u, v);
                else if (g->op == TGG_DISEQ)
                    s = tgC_diseq(env, st, u, v);
                else
                    s = tgC_absento(env, st, u, v);
                break;
            }
            case TGG_TYPE: {
                tg_term *u = inst(env, g->a, fr);
                s = u ? tgC_type(env, st, u, g->type) : NULL;
                break;
            }
            case TGG_CONJ:
                for (unsigned i = g->n; i-- > 1;)
                    if (kpush(env, K_BIND, g->g[i], fr, NULL) < 0)
                        goto fail;
                g = g->g[0];
                continue;
            case TGG_FRESH:
                s = mkp(env, &pool, SU_FRESH, 0, g, fr, st);
                break;
            case TGG_CONDE:
                s = mkp(env, &pool, SU_CONDE, 0, g, fr, st);
                break;
            case TGG_CALL: {
                tgG_rel *rel = g->rel;
                if (!rel->body) {
                    size_t len;
                    const char *nm = tg_symbol_name(rel->name, &len);
                    tgK_error(env, TG_ERR_ARG, "undefined relation %.*s", (int)len, nm);
                    goto fail;
                }
                if (rel->arity != g->n) {
                    size_t len;
                    const char *nm = tg_symbol_name(rel->name, &len);
                    tgK_error(env, TG_ERR_ARG, "%.*s takes %u arguments, called with %u",
                              (int)len, nm, rel->arity, g->n);
                    goto fail;
                }
                tg_term **nf = tgT_alloc(env->ctx, (rel->nslots ? rel->nslots : 1) * sizeof *nf);
                if (!nf)
                    goto oom;
                memset(nf, 0, rel->nslots * sizeof *nf);
                for (unsigned i = 0; i < g->n; i++)
                    if (!(nf[i] = inst(env, g->args[i], fr)))
                        goto fail;
                fr = nf;
                g = rel->body;
                continue;
            }
            case TGG_REIFY: {
                tgS_state nl = *st;
                nl.scope = 0;
                tg_term *ans = tgY_reify(env, &nl, fr[0]);
                cell *a = ans ? mk(env, C_ANSWER, 0, ans, NULL, NULL) : NULL;
                cell *tl = a ? mk(env, SU_FAIL, 2, NULL, NULL, NULL) : NULL;
                s = tl ? mk(env, C_PAIR, 0, a, tl, NULL) : NULL;
                if (!s)
                    goto fail;
                break;
            }
            }
            mode = RETURN;
            continue;

        case FORCE:
            switch (f->tag) {
            case SU_APPLY:
                g = f->a, fr = f->b, st = f->c;
                recycle(&pool, f);
                mode = APPLY;
                continue;
            case SU_FRESH: {
                g = f->a, fr = f->b, st = f->c;
                recycle(&pool, f);
                if (g->copy) {
                    tg_term **nf = tgT_alloc(env->ctx, g->nslots * sizeof *nf);
                    if (!nf)
                        goto oom;
                    memcpy(nf, fr, g->nslots * sizeof *nf);
                    fr = nf;
                }
                unsigned k = g->n ? leading_unifies(g->g[0]) : 0;
                if (k) {
                    tgG_goal *b = g->g[0];
                    s = fresh_unify(env, st, g, fr, b, k);
                    if (s && b->op == TGG_CONJ)     /* the rest of the body */
                        for (unsigned i = b->n; i-- > k;)
                            if (kpush(env, K_BIND, b->g[i], fr, NULL) < 0)
                                goto fail;
                    mode = RETURN;
                    continue;
                }
                for (unsigned i = 0; i < g->n; i++)
                    if (!(fr[g->slots[i]] = tgT_lvar_new(env->ctx, g->names[i], st->scope)))
                        goto oom;
                g = g->g[0];
                mode = APPLY;
                continue;
            }
            case SU_CONDE:
                g = f->a, fr = f->b, st = f->c;
                recycle(&pool, f);
                if (!(st = tgS_state_new(env->ctx, tgK_new_scope(env), st->S, st->C)))
                    goto oom;
                ci = 0;
                goto clauses;
            case SU_CLAUSES:
                g = f->a, fr = f->b, st = f->c, ci = f->i;
                recycle(&pool, f);
                goto clauses;
            case SU_MPLUS: case SU_BIND:
                if (!(f = unwrap(env, &pool, f)))
                    goto fail;
                continue;
            case SU_FAIL: {
                uint32_t i = f->i;
                recycle(&pool, f);
                s = i > 1 ? mkp(env, &pool, SU_FAIL, i - 1, NULL, NULL, NULL) : NULL;
                mode = RETURN;
                continue;
            }
            }
            goto fail;
        clauses:
            /* (mplus* clause_ci ...): the rest waits in a continuation */
            if (ci + 1 < g->n && kpush(env, K_CLAUSES | (uintptr_t)(ci + 1) << 8, g, fr, st) < 0)
                goto fail;
            g = g->g[ci];
            mode = APPLY;
            continue;

        case RETURN: {
            /* goals report running out of memory (or an error) by failing:
             * every result passes here, and forcing or applying sets no
             * flag without leaving at once */
            if (env->oom || env->failed)
                goto fail;
            if (s && is_susp(s)) {
                int r = resume(env, &pool, (cell **)&s, base, &f);
                if (r < 0)
                    goto fail;
                if (r > 0) {
                    mode = FORCE;
                    continue;
                }
            }
            if (K->n == base)
                return s;
            K->n -= 4;
            uintptr_t *w = K->v + K->n;
            uintptr_t k = w[0];
            switch (k & 0xff) {
            case K_BIND:
                g = (tgG_goal *)w[1], fr = (tg_term **)w[2];
                if (!s)
                    continue;
                if (is_susp(s)) {
                    if (!(s = mkp(env, &pool, SU_BIND, 0, s, fr, g)))
                        goto fail;
                    continue;
                }
                if (tag_of(s) == C_PAIR) {
                    cell *p = s;
                    st = p->a;
                    void *tl = p->b;
                    recycle(&pool, p);
                    cell *b = mkp(env, &pool, SU_BIND, 0, tl, fr, g);
                    if (!b || kpush(env, K_MPLUS, b, NULL, NULL) < 0)
                        goto fail;
                } else {
                    st = s;
                }
                mode = APPLY;
                continue;
            case K_CLAUSES:
                if (!s) {
                    g = (tgG_goal *)w[1], fr = (tg_term **)w[2], st = (tgS_state *)w[3];
                    ci = (uint32_t)(k >> 8);
                    mode = FORCE;
                    goto clauses;
                }
                if (!(f = mkp(env, &pool, SU_CLAUSES, (uint32_t)(k >> 8), (void *)w[1], (void *)w[2], (void *)w[3])))
                    goto fail;
                goto mplus;
            case K_MPLUS:
                f = (cell *)w[1];
                goto mplus;
            }
            goto fail;
        mplus:
            if (!s) {
                mode = FORCE;
                continue;
            }
            if (is_susp(s)) {
                s = mkp(env, &pool, SU_MPLUS, 0, f, s, NULL);
            } else if (tag_of(s) == C_PAIR) {
                cell *p = s;
                cell *m = mkp(env, &pool, SU_MPLUS, 0, f, p->b, NULL);
                if (m)
                    p->b = m;   /* the pair is ours alone: reuse it */
                s = m ? p : NULL;
            } else {
                s = mkp(env, &pool, C_PAIR, 0, s, f, NULL);
            }
            if (!s)
                goto fail;
            continue;
        }
        }
    }
oom:
    env->oom = 1;
fail:
    K->n = base;
    return ERR;
}

long tgG_run(tg_env *env, tgG_goal *g, unsigned nslots, long n, tgG_emit *emit, void *ud)
{
    tg_term **fr = GC_MALLOC((nslots ? nslots : 1) * sizeof *fr);
    tgS_state *st = tgS_state_new(env->ctx, tgK_new_scope(env), NULL, NULL);
    cell *f = fr && st ? mk(env, SU_APPLY, 0, g, fr, st) : NULL;
    long count = 0;
    env->oom = 0;
    env->failed = 0;
    if (!f)
        goto oom;
    while (n != 0) {
        void *s = machine(env, f);
        if (s == ERR)
            goto err;
        if (!s)
            break;
        if (is_susp(s)) {
            f = s;
            continue;
        }
        cell *ans = tag_of(s) == C_PAIR ? ((cell *)s)->a : s;
        count++;
        if (emit(ud, ans->a))
            break;
        if (tag_of(s) != C_PAIR)
            break;
        f = ((cell *)s)->b;
        if (n > 0)
            n--;
    }
    return count;
err:
    if (!env->oom)
        return -1;
oom:
    tgK_error(env, TG_ERR_NOMEM, "out of memory during the search");
    return -1;
}
