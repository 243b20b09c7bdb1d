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
 *
 * Tabling adds one kind of stream, after Byrd's tabled miniKanren: a
 * waiting stream, the list of the consumers of answer tables that have
 * used every answer found so far.  A waiting stream is put after any
 * other stream in mplus; forcing it resumes the consumers whose tables
 * have grown; when the whole search is a waiting stream and no table has
 * grown, every table is complete and the search ends.
 */
#include "search.h"
#include "table.h"
#include "lang.h"

#include <gc/gc.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double search_clock(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

enum {
    C_ANSWER = 2,   /* a reified answer in a stream */
    C_PAIR,         /* (car . susp) */
    SU_APPLY,       /* apply goal a to state c in frame b */
    SU_FRESH,       /* make the variables of fresh a, then apply its body */
    SU_CONDE,       /* branch: new scope, then the clauses */
    SU_CLAUSES,     /* clauses i.. of conde a */
    SU_MPLUS,       /* (mplus (force a) b) */
    SU_BIND,        /* (bind (force a) goal c in frame b) */
    SU_FAIL,        /* i > 1: SU_FAIL i-1; else no answer */
    SU_CREL,        /* answer i of C relation call a, args b, state c */
    SU_REUSE,       /* answers i.. of table entry a for argument list b, state c */
    SU_MPLUSW,      /* (mplus (force a) W): waiting stream b parked at the end */
    C_WAIT = 64,    /* a waiting stream: a is the first waiter */
    C_WAITER        /* consumer of entry a that has seen i answers, suspension b, next c */
};

typedef struct cell {
    uint32_t tag;
    uint32_t i;
    void *a, *b, *c;
} cell;

static inline uint32_t tag_of(const void *s) { return *(const uint32_t *)s; }
static inline int is_susp(const void *s) { return tag_of(s) >= SU_APPLY && tag_of(s) < C_WAIT; }

enum { K_BIND = 1, K_MPLUS, K_CLAUSES, K_MPLUSW };

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

/* ---- the relation table -------------------------------------------- */

static size_t rel_home(const tg_term *name, size_t cap)
{
    return (tg_hash(name) * 0x9E3779B1u) & (cap - 1);
}

tgG_rel *tgG_rel_find(tg_env *env, const tg_term *name)
{
    if (env->relcap)
        for (size_t i = rel_home(name, env->relcap); env->rels[i]; i = (i + 1) & (env->relcap - 1))
            if (env->rels[i]->name == name)
                return env->rels[i];
    return NULL;
}

static int rels_grow(tg_env *env)
{
    size_t cap = env->relcap ? env->relcap * 2 : 64;
    tgG_rel **t = GC_MALLOC(cap * sizeof *t);
    if (!t)
        return -1;
    for (size_t i = 0; i < env->relcap; i++) {
        tgG_rel *r = env->rels[i];
        if (!r)
            continue;
        size_t j = rel_home(r->name, cap);
        while (t[j])
            j = (j + 1) & (cap - 1);
        t[j] = r;
    }
    env->rels = t;
    env->relcap = cap;
    return 0;
}

tgG_rel *tgG_rel_get(tg_env *env, tg_term *name)
{
    tgG_rel *r = tgG_rel_find(env, name);
    if (r)
        return r;
    if (2 * (env->nrels + 1) > env->relcap && rels_grow(env) < 0)
        return NULL;
    if (!(r = GC_MALLOC(sizeof *r)))
        return NULL;
    r->name = name;
    size_t i = rel_home(name, env->relcap);
    while (env->rels[i])
        i = (i + 1) & (env->relcap - 1);
    env->rels[i] = r;
    env->nrels++;
    return r;
}

/* ---- calls -------------------------------------------------------- */

static const char *rel_name(const tgG_rel *rel, int *len)
{
    size_t n;
    const char *s = tg_symbol_name(rel->name, &n);
    *len = (int)n;
    return s;
}

/* The relation a relation value denotes: its name, or a lambda's
 * (name captured ...), returned in *clo (else NULL) so that the call
 * takes the captured values from it where they are. */
static tgG_rel *resolve(tg_env *env, tg_term *v, const tgS_state *st, tg_term **clo)
{
    v = tgS_walk(v, st->S);
    *clo = NULL;
    tg_term *name = v;
    size_t ncap = 0;
    if (tgT_ispair(v)) {
        *clo = v;
        name = tg_car(v);
        ncap = tg_tail(v) == tg_nil() ? tg_length(v) - 1 : SIZE_MAX;
    }
    tgG_rel *rel = tg_kind_of(name) == TG_SYMBOL ? tgG_rel_find(env, name) : NULL;
    if (!rel || (!rel->body && !rel->cfn) || ncap != rel->ncap) {
        /* as an answer shows it: bound variables replaced, the others
         * _.0, _.1, ... (a runtime variable's own name, ?q.3, means
         * nothing to the user) */
        tg_term *w = tgU_walk_star(env, v, st->S, NULL), *named = w ? tgL_name_vars(env, w) : NULL;
        char *p = tg_print(named ? named : v, NULL);
        tgK_error(env, TG_ERR_ARG, "not a relation: %s", p ? p : "?");
        free(p);
        return NULL;
    }
    return rel;
}

/* A call of a C relation: its walked arguments and the iteration state. */
typedef struct ccall {
    tgG_rel *rel;
    unsigned long i;
    void *state;
    unsigned n;
    tg_term *args[];
} ccall;

static void *ccall_new(tg_env *env, tgG_rel *rel, tg_term **args, const tgS_state *st)
{
    ccall *cc = GC_MALLOC(sizeof *cc + rel->arity * sizeof *cc->args);
    if (!cc)
        return env->oom = 1, NULL;
    cc->rel = rel;
    cc->n = rel->arity;
    for (unsigned i = 0; i < rel->arity; i++)
        if (!(cc->args[i] = tgU_walk_star(env, args[i], st->S, NULL)))
            return env->oom = 1, NULL;
    return cc;
}

/* The next answer tuple of a C relation call, checked: 1 with *out, 0 at
 * the end, -1 on error (reported). */
static int ccall_next(tg_env *env, ccall *cc, tg_term **out)
{
    int len;
    const char *nm = rel_name(cc->rel, &len);
    tg_error *err = env->err;
    if (err)
        err->code = TG_OK;
    int rc = cc->rel->cfn(env->ctx, cc->args, cc->n, cc->i++, &cc->state, out, cc->rel->cud, err);
    if (rc < 0) {
        if (!err || err->code == TG_OK)
            tgK_error(env, TG_ERR_ARG, "relation %.*s failed", len, nm);
        env->failed = 1;
        return -1;
    }
    if (rc == 0)
        return 0;
    if (!*out || tg_length(*out) != cc->n || tg_tail(*out) != tg_nil()) {
        tgK_error(env, TG_ERR_ARG, "relation %.*s gave an answer that is not a list of %u terms",
                  len, nm, cc->n);
        return -1;
    }
    return 1;
}

static const tgG_goal master_goal = {.op = TGG_MASTER};

/* The first call of a tabled variant: the stream of the table's
 * consumer `use` merged with the producer, which runs the body on a fresh
 * instance of the call in an empty state, so that nothing the caller
 * knows (its constraints) narrows the answers the table records. */
static cell *producer(tg_env *env, tgG_rel *rel, tgA_entry *e, cell *use)
{
    tg_term *call = tgA_instance(env, e->key);
    tgS_state *st0 = call ? tgS_state_new(env->ctx, tgK_new_scope(env), NULL, NULL) : NULL;
    tg_term **nf = st0 ? tgT_alloc(env->ctx, (rel->nslots ? rel->nslots : 1) * sizeof *nf) : NULL;
    if (!nf)
        return env->oom = 1, NULL;
    memset(nf, 0, rel->nslots * sizeof *nf);
    e->args = tg_cdr(env->ctx, call);
    if (!e->args)
        return env->oom = 1, NULL;
    tg_elements(e->args, nf, rel->arity);
    cell *body = mk(env, SU_APPLY, 0, rel->body, nf, st0);
    cell *prod = body ? mk(env, SU_BIND, 0, body, e, (void *)&master_goal) : NULL;
    return prod ? mk(env, SU_MPLUS, 0, prod, use, NULL) : NULL;
}

/* ---- waiting streams ---------------------------------------------- */

/* W with every waiter's suspension bound to goal g in frame fr. */
static cell *wait_bind(tg_env *env, cell *W, tgG_goal *g, tg_term **fr)
{
    cell *first = NULL, **link = &first;
    for (cell *w = W->a; w; w = w->c) {
        cell *b = mk(env, SU_BIND, 0, w->b, fr, g);
        cell *n = b ? mk(env, C_WAITER, w->i, w->a, b, NULL) : NULL;
        if (!n)
            return NULL;
        *link = n;
        link = (cell **)&n->c;
    }
    return mk(env, C_WAIT, 0, first, NULL, NULL);
}

static cell *wait_concat(tg_env *env, cell *A, cell *B)
{
    cell *first = B->a, **link = &first;
    for (cell *w = A->a; w; w = w->c) {
        cell *n = mk(env, C_WAITER, w->i, w->a, w->b, B->a);
        if (!n)
            return NULL;
        *link = n;
        link = (cell **)&n->c;
    }
    return mk(env, C_WAIT, 0, first, NULL, NULL);
}

/* The waiters of W whose tables grew, as one suspension followed by the
 * rest of W; NULL when none grew (*oom set on failure). */
static cell *wait_split(tg_env *env, cell *W)
{
    cell *ready = NULL, *rest = NULL;
    for (cell *w = W->a; w; w = w->c) {
        if (((tgA_entry *)w->a)->nans > w->i)
            ready = ready ? mk(env, SU_MPLUS, 0, w->b, ready, NULL) : w->b;
        else
            rest = mk(env, C_WAITER, w->i, w->a, w->b, rest);
        if (env->oom)
            return NULL;
    }
    if (ready && rest) {
        cell *rw = mk(env, C_WAIT, 0, rest, NULL, NULL);
        ready = rw ? mk(env, SU_MPLUS, 0, ready, rw, NULL) : NULL;
    }
    return ready;
}

/* (mplus s W) for a stream s that is not empty: W stays at the end and
 * is not forced again (forcing a waiting stream makes no progress, and
 * swapping it to the front at every step would cost a step per nesting
 * level, exponential in the depth of nested tabled calls). */
static void *with_wait(tg_env *env, void *s, cell *W)
{
    if (tag_of(s) == C_WAIT)
        return wait_concat(env, s, W);
    if (is_susp(s))
        return mk(env, SU_MPLUSW, 0, s, W, NULL);
    if (tag_of(s) == C_PAIR) {
        cell *p = s;
        void *rest = with_wait(env, p->b, W);
        return rest ? mk(env, C_PAIR, 0, p->a, rest, NULL) : NULL;
    }
    return mk(env, C_PAIR, 0, s, W, NULL);
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
                tg_term *clo = NULL;
                if (!rel) {
                    tg_term *v = inst(env, g->a, fr);
                    if (!v || !(rel = resolve(env, v, st, &clo)))
                        goto fail;
                }
                if (!rel->body && !rel->cfn) {
                    int len;
                    const char *nm = rel_name(rel, &len);
                    tgK_error(env, TG_ERR_ARG, "undefined relation %.*s", len, nm);
                    tgK_error_at(env, g->src);
                    goto fail;
                }
                /* every search that runs long calls relations: checking
                 * here is enough to stop it */
                if (env->interrupt) {
                    tgK_error(env, TG_ERR_RANGE, "interrupted");
                    goto fail;
                }
                if (__builtin_expect((++env->calls & 0x3fff) == 0, 0)) {
                    if (tgT_heap_tight()) {
                        tgK_error(env, TG_ERR_NOMEM, "out of memory");
                        goto fail;
                    }
                    if (env->deadline && search_clock() > env->deadline) {
                        tgK_error(env, TG_ERR_RANGE, "stopped at the time limit");
                        goto fail;
                    }
                }
                if (rel->arity != g->n) {
                    int len;
                    const char *nm = rel_name(rel, &len);
                    tgK_error(env, TG_ERR_ARG, "%.*s takes %u argument%s, called with %u",
                              len, nm, rel->arity, rel->arity == 1 ? "" : "s", g->n);
                    tgK_error_at(env, g->src);
                    goto fail;
                }
                if (rel->cfn || rel->tabled) {
                    /* several answers from one state: variables made so
                     * far must not be bound in place (a branch point) */
                    if (!(st = tgS_state_new(env->ctx, tgK_new_scope(env), st->S, st->C)))
                        goto oom;
                }
                unsigned ns = rel->nslots > g->n ? rel->nslots : g->n;
                tg_term **nf = tgT_alloc(env->ctx, (ns ? ns : 1) * sizeof *nf);
                if (!nf)
                    goto oom;
                memset(nf, 0, ns * sizeof *nf);
                for (unsigned i = 0; i < g->n; i++)
                    if (!(nf[i] = inst(env, g->args[i], fr)))
                        goto fail;
                for (unsigned i = 0; i < rel->ncap; i++)
                    nf[rel->cap[i]] = tg_nth(clo, i + 1);
                if (rel->cfn) {
                    /* a C relation: its answers come one by one, like clauses */
                    void *cc = ccall_new(env, rel, nf, st);
                    tg_term *al = cc ? tg_list(env->ctx, g->n, nf, NULL) : NULL;
                    if (!al || !(s = mk(env, SU_CREL, 0, cc, al, st)))
                        goto oom;
                    break;
                }
                if (rel->tabled) {
                    tg_term *al = tg_list(env->ctx, g->n, nf, NULL);
                    tg_term *call = al ? tg_cons(env->ctx, rel->name, al) : NULL;
                    tg_term *key = call ? tgA_canon(env, st, call) : NULL;
                    int made;
                    tgA_entry *e = key ? tgA_entry_get(env, key, &made) : NULL;
                    cell *use = e ? mk(env, SU_REUSE, 0, e, al, st) : NULL;
                    if (!use)
                        goto oom;
                    s = use;
                    if (made && !(s = producer(env, rel, e, use)))
                        goto fail;
                    break;
                }
                fr = nf;
                g = rel->body;
                continue;
            }
            case TGG_MASTER: {
                /* the producer's answers go to the table only */
                tgA_entry *e = (tgA_entry *)fr;
                tg_term *a = tgA_canon(env, st, e->args);
                if (!a || tgA_add(env, e, a) < 0)
                    goto oom;
                s = NULL;
                break;
            }
            case TGG_REIFY: {
                tg_term *ans;
                if (g->type) {  /* raw: the values of slots 0..n-1, walked */
                    tg_term *l = tg_list(env->ctx, g->n, fr, NULL);
                    ans = l ? tgU_walk_star(env, l, st->S, NULL) : NULL;
                } else {
                    tgS_state nl = *st;
                    nl.scope = 0;
                    ans = tgY_reify(env, &nl, fr[0]);
                }
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
            case SU_CREL: {
                tg_term *out;
                int rc = ccall_next(env, f->a, &out);
                if (rc < 0)
                    goto fail;
                if (rc == 0) {
                    s = NULL;
                } else {
                    tgS_state *s2 = tgC_unify(env, f->c, f->b, out);
                    cell *next = mk(env, SU_CREL, 0, f->a, f->b, f->c);
                    s = s2 && next ? mk(env, C_PAIR, 0, s2, next, NULL) : next;
                    if (!s)
                        goto fail;
                }
                mode = RETURN;
                continue;
            }
            case SU_REUSE: {
                tgA_entry *e = f->a;
                if (f->i < e->nans) {
                    tg_term *a = tgA_instance(env, e->ans[f->i]);
                    tgS_state *s2 = a ? tgC_unify(env, f->c, f->b, a) : NULL;
                    cell *next = a ? mk(env, SU_REUSE, f->i + 1, e, f->b, f->c) : NULL;
                    s = s2 && next ? mk(env, C_PAIR, 0, s2, next, NULL) : next;
                } else {
                    /* every answer so far used: wait for more */
                    cell *w = mk(env, C_WAITER, f->i, e, f, NULL);
                    s = w ? mk(env, C_WAIT, 0, w, NULL, NULL) : NULL;
                }
                if (!s)
                    goto fail;
                mode = RETURN;
                continue;
            }
            case SU_MPLUSW: {
                cell *r = wait_split(env, f->b);
                if (env->oom)
                    goto fail;
                if (r) {    /* some waiters can go on: interleave them */
                    if (!(f = mk(env, SU_MPLUS, 0, f->a, r, NULL)))
                        goto fail;
                    continue;
                }
                if (kpush(env, K_MPLUSW, f->b, NULL, NULL) < 0)
                    goto fail;
                f = f->a;
                continue;
            }
            case C_WAIT: {
                cell *r = wait_split(env, f);
                if (env->oom)
                    goto fail;
                if (r) {
                    f = r;
                    continue;
                }
                s = f;
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
                if (tag_of(s) == C_WAIT) {
                    if (!(s = wait_bind(env, s, g, fr)))
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
            case K_MPLUSW:
                s = s ? with_wait(env, s, (cell *)w[1]) : (void *)w[1];
                if (!s)
                    goto fail;
                continue;
            }
            goto fail;
        mplus:
            if (!s) {
                mode = FORCE;
                continue;
            }
            if (tag_of(f) == C_WAIT) {
                s = with_wait(env, s, f);
            } else if (is_susp(s)) {
                s = mkp(env, &pool, SU_MPLUS, 0, f, s, NULL);
            } else if (tag_of(s) == C_WAIT) {
                /* waiting goes last: the other stream first, and the
                 * waiters whose tables grew interleaved with it */
                cell *r = wait_split(env, s);
                if (env->oom)
                    goto fail;
                s = r ? mkp(env, &pool, SU_MPLUS, 0, f, r, NULL)
                      : mkp(env, &pool, SU_MPLUSW, 0, f, s, NULL);
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

void tgK_set_deadline(tg_env *env, double deadline)
{
    env->deadline = deadline;
}

long tgG_run(tg_env *env, tgG_goal *g, unsigned nslots, long n, tgG_emit *emit, void *ud)
{
    return tgG_run_frame(env, g, GC_MALLOC((nslots ? nslots : 1) * sizeof(tg_term *)), n, emit, ud);
}

long tgG_run_frame(tg_env *env, tgG_goal *g, tg_term **fr, long n, tgG_emit *emit, void *ud)
{
    tgS_state *st = tgS_state_new(env->ctx, tgK_new_scope(env), NULL, NULL);
    tgA_reset(env);
    cell *f = fr && st ? mk(env, SU_APPLY, 0, g, fr, st) : NULL;
    long count = 0;
    env->oom = 0;
    env->failed = 0;
    env->interrupt = 0;
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
        if (tag_of(s) == C_WAIT) {
            /* only waiting consumers left: go on if a table grew, else
             * every table is complete */
            cell *r = wait_split(env, s);
            if (env->oom)
                goto oom;
            if (!r)
                break;
            f = r;
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
    tgA_reset(env);
    return count;
err:
    tgA_reset(env);
    if (!env->oom)
        return -1;
oom:
    tgK_error(env, TG_ERR_NOMEM, "out of memory during the search");
    return -1;
}
