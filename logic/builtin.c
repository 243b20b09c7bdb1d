/* builtin.c - relations written in C that the prelude builds on:
 * permuteo, canonical forms modulo associativity and commutativity, and
 * the few non-relational tests the assoc/comm relations need (the ones
 * Python's kanren writes as goals that inspect the state).
 *
 * Each is a tg_relation_fn: it gets its arguments walked and returns its
 * answers one at a time.
 */
#include "builtin.h"

#include <gc/gc.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ------------------------------------------------------ */

static int is_fresh(const tg_term *t) { return tgT_islvar(t); }

/* Does fact (r x) hold?  No when r is not (or no longer) a fact table
 * of one column: a program may redefine it. */
static int holds1(tg_env *env, const tgG_rel *r, tg_term *x)
{
    if (!tgT_ground(x) || r->cfn != tgF_fn || r->arity != 1)
        return 0;
    tg_term *tuple = tg_list(env->ctx, 1, &x, NULL);
    return tuple && tgF_holds(r->cud, tuple);
}

static int one_answer(unsigned long i, tg_term **out, tg_term *answer)
{
    if (i > 0)
        return 0;
    *out = answer;
    return answer ? 1 : -1;
}

/* Is x an application (op y z ...) of op to at least one argument? */
static int same_app(const tg_term *x, const tg_term *op)
{
    return tgT_ispair(x) && tg_car(x) == op && tg_tail(x) == tg_nil() && tg_length(x) > 1;
}

/* Is x an application: a proper list of at least one element, its head?
 * An improper list is an atom to the assoc/comm relations: it can be no
 * op's argument list, and Python kanren also gives it back unchanged. */
static int is_app(const tg_term *x)
{
    return tgT_ispair(x) && tg_tail(x) == tg_nil();
}

/* Can x still be a proper list?  It is one, or it ends in a fresh
 * variable (the tail of (a . b) or the atom 5 can never become ()). */
static int listable(const tg_term *x)
{
    const tg_term *t = tg_tail(x);
    return t == tg_nil() || is_fresh(t);
}

/* Push the arguments of application x (its elements after the head) on
 * st, last first, so that they pop in order. */
static int push_args(tgK_vec *st, const tg_term *x)
{
    size_t k = tg_length(x);
    if (tgK_vec_reserve(st, k) < 0)
        return -1;
    tg_iter it;
    tg_iter_init(&it, x);
    tg_iter_next(&it);
    for (size_t j = k - 1; j-- > 0;)
        st->v[st->n + j] = (uintptr_t)tg_iter_next(&it);
    st->n += k - 1;
    return 0;
}

/* ---- permuteo ----------------------------------------------------- */

/* (permuteo a b): b is a permutation of a.  When a (or else b) is a
 * proper list its distinct permutations come in lexicographic order of
 * positions, the list itself first; when neither is, lists of 0, 1, 2...
 * fresh variables and their permutations. */
typedef struct perm {
    unsigned n;
    int side;               /* the argument that is a proper list, or -1 */
    int done;
    tg_term **e;            /* its elements */
    unsigned *first;        /* per element: the first position holding an equal one */
    unsigned *p;            /* the current permutation of positions */
} perm;

static perm *perm_new(unsigned n, int side)
{
    perm *s = GC_MALLOC(sizeof *s);
    if (!s)
        return NULL;
    s->n = n;
    s->side = side;
    s->e = GC_MALLOC((n + 1) * sizeof *s->e);
    s->first = GC_MALLOC_ATOMIC((n + 1) * sizeof *s->first);
    s->p = GC_MALLOC_ATOMIC((n + 1) * sizeof *s->p);
    if (!s->e || !s->first || !s->p)
        return NULL;
    for (unsigned i = 0; i < n; i++)
        s->p[i] = i;
    return s;
}

/* The next permutation of positions in lexicographic order; 0 after the last. */
static int next_perm(unsigned *p, unsigned n)
{
    if (n < 2)
        return 0;
    unsigned i = n - 1;
    while (i > 0 && p[i - 1] >= p[i])
        i--;
    if (i == 0)
        return 0;
    unsigned j = n - 1;
    while (p[j] <= p[i - 1])
        j--;
    unsigned t = p[i - 1];
    p[i - 1] = p[j];
    p[j] = t;
    for (unsigned a = i, b = n - 1; a < b; a++, b--)
        t = p[a], p[a] = p[b], p[b] = t;
    return 1;
}

/* One permutation per distinct list: equal elements keep their order. */
static int canonical_perm(const perm *s)
{
    for (unsigned j = 0; j < s->n; j++)
        for (unsigned k = j + 1; k < s->n; k++)
            if (s->first[s->p[j]] == s->first[s->p[k]] && s->p[j] > s->p[k])
                return 0;
    return 1;
}

static int perm_start(tg_env *env, perm **sp, tg_term *const *args)
{
    int side = -1;
    for (int k = 0; k < 2 && side < 0; k++)
        if (tgT_ispair(args[k]) ? tg_tail(args[k]) == tg_nil() : args[k] == tg_nil())
            side = k;
    unsigned n = side >= 0 ? (unsigned)tg_length(args[side]) : 0;
    if (side >= 0 && n > 12) {
        tgK_error(env, TG_ERR_ARG, "permuteo: a list of %u elements has too many permutations", n);
        return -1;
    }
    perm *s = perm_new(n, side);
    if (!s)
        return -1;
    if (side >= 0) {
        tg_elements(args[side], s->e, n);
        for (unsigned i = 0; i < n; i++) {
            unsigned f = i;
            while (f > 0 && s->e[f - 1] != s->e[i])
                f--;
            s->first[i] = (f > 0 && s->e[f - 1] == s->e[i]) ? s->first[f - 1] : i;
        }
        /* the other side, if a proper list, must be as long */
        tg_term *o = args[1 - side];
        int proper = tgT_ispair(o) ? tg_tail(o) == tg_nil() : o == tg_nil();
        if (proper && tg_length(o) != n)
            s->done = 1;
    }
    *sp = s;
    return 0;
}

/* Fresh variables for the next length when neither side is a list. */
static int perm_grow(tg_env *env, perm *s, unsigned n)
{
    perm *t = perm_new(n, -1);
    if (!t)
        return -1;
    for (unsigned i = 0; i < n; i++) {
        if (!(t->e[i] = tg_env_var(env, NULL)))
            return -1;
        t->first[i] = i;
    }
    *s = *t;
    return 0;
}

static int permuteo_fn(tg_ctx *ctx, tg_term *const *args, unsigned nargs, unsigned long i,
                       void **state, tg_term **out, void *ud, tg_error *err)
{
    (void)nargs, (void)err;
    tg_env *env = ud;
    perm *s = *state;
    /* a side that can never be a list would have lists of every length
     * tried against it, forever */
    if (i == 0 && (!listable(args[0]) || !listable(args[1])))
        return 0;
    if (i == 0) {
        if (perm_start(env, &s, args) < 0)
            return -1;
        *state = s;
    } else if (!next_perm(s->p, s->n)) {
        if (s->side >= 0)
            return 0;
        if (perm_grow(env, s, s->n + 1) < 0)    /* lists of unknown length: one longer */
            return -1;
    }
    if (s->done)
        return 0;
    while (!canonical_perm(s))
        if (!next_perm(s->p, s->n))
            return 0;
    tg_term *buf[13], **v = s->n < 13 ? buf : GC_MALLOC(s->n * sizeof *v);
    if (!v)
        return -1;
    for (unsigned k = 0; k < s->n; k++)
        v[k] = s->e[s->p[k]];
    tg_term *pl = tg_list(ctx, s->n, v, NULL);
    tg_term *orig = tg_list(ctx, s->n, s->e, NULL);
    if (!pl || !orig)
        return -1;
    tg_term *pair[2];
    pair[0] = s->side == 1 ? pl : orig;
    pair[1] = s->side == 1 ? orig : pl;
    *out = tg_list(ctx, 2, pair, NULL);
    return *out ? 1 : -1;
}

/* ---- canonical forms modulo assoc / comm -------------------------- */

typedef struct props {
    int assoc, comm;
} props;

static int cmp_terms(const void *a, const void *b)
{
    return tg_compare(*(tg_term *const *)a, *(tg_term *const *)b);
}

/* Rebuild list x from its canonical elements v[0..n) (v[0] the head):
 * splice arguments that are applications of the same associative op,
 * sort the arguments of a commutative op. */
static tg_term *canon_node(tg_env *env, const props *pr, tg_term **v, size_t n, tgK_vec *tmp)
{
    tg_term *op = v[0];
    /* a compound head is never an op: it is a subterm like the arguments
     * (canonicalized already), as op-kindo and ac-expando treat it */
    int atom = !tgT_ispair(op);
    int a = atom && pr->assoc && holds1(env, env->assoc, op);
    int c = atom && pr->comm && holds1(env, env->comm, op);
    tmp->n = 0;
    for (size_t i = 0; i < n; i++) {
        tg_term *x = v[i];
        if (i > 0 && a && same_app(x, op)) {
            size_t k = tg_length(x);
            if (tgK_vec_reserve(tmp, k) < 0)
                return NULL;
            tg_elements(x, (tg_term **)(tmp->v + tmp->n), k);
            memmove(tmp->v + tmp->n, tmp->v + tmp->n + 1, (k - 1) * sizeof *tmp->v);
            tmp->n += k - 1;
            continue;
        }
        if (tgK_vec_reserve(tmp, 1) < 0)
            return NULL;
        tmp->v[tmp->n++] = (uintptr_t)x;
    }
    if (c && tmp->n > 2)
        qsort(tmp->v + 1, tmp->n - 1, sizeof *tmp->v, cmp_terms);
    return tg_list(env->ctx, tmp->n, (tg_term **)tmp->v, NULL);
}

/* The canonical form of ground term t, bottom-up on explicit stacks:
 * tasks are (0, term): canonicalize; (1, n): build a node from the n
 * values on top of the value stack. */
static tg_term *canon(tg_env *env, tg_term *t, const props *pr)
{
    tgK_vec w = {0}, vals = {0}, tmp = {0};
    if (tgK_push2(&w, 0, (uintptr_t)t) < 0)
        return NULL;
    while (w.n) {
        w.n -= 2;
        uintptr_t kind = w.v[w.n], arg = w.v[w.n + 1];
        if (kind) {
            tg_term **v = (tg_term **)(vals.v + vals.n - arg);
            tg_term *r = canon_node(env, pr, v, arg, &tmp);
            if (!r)
                return NULL;
            vals.n -= arg;
            vals.v[vals.n++] = (uintptr_t)r;
            continue;
        }
        tg_term *x = (tg_term *)arg;
        if (!is_app(x)) {
            if (tgK_vec_reserve(&vals, 1) < 0)
                return NULL;
            vals.v[vals.n++] = (uintptr_t)x;
            continue;
        }
        size_t n = tg_length(x);
        if (tgK_vec_reserve(&w, 2 * n + 2) < 0 || tgK_vec_reserve(&tmp, n) < 0)
            return NULL;
        w.v[w.n++] = 1;
        w.v[w.n++] = n;
        tg_elements(x, (tg_term **)tmp.v, n);
        for (size_t i = n; i-- > 0;) {
            w.v[w.n++] = 0;
            w.v[w.n++] = tmp.v[i];
        }
    }
    return vals.n == 1 ? (tg_term *)vals.v[0] : NULL;
}

static int read_props(tg_env *env, tg_term *l, props *pr)
{
    pr->assoc = pr->comm = 0;
    tg_iter it;
    tg_iter_init(&it, l);
    for (tg_term *x; (x = tg_iter_next(&it));) {
        if (x == env->sym_assoc)
            pr->assoc = 1;
        else if (x == env->sym_comm)
            pr->comm = 1;
        else {
            tgK_error(env, TG_ERR_ARG, "unknown property (associative or commutative expected)");
            return -1;
        }
    }
    return 0;
}

/* The arguments (props t ...) of relation `name`: both ground, props
 * read into *pr; -1 with the error reported. */
static int ground_props(tg_env *env, const char *name, tg_term *const *args, props *pr)
{
    if (!tgT_ground(args[0]) || !tgT_ground(args[1])) {
        tgK_error(env, TG_ERR_ARG, "%s needs its properties and term ground", name);
        return -1;
    }
    return read_props(env, args[0], pr);
}

/* (ac-canono props t c): c is the canonical form of ground t modulo the
 * properties listed (associative: flattened; commutative: arguments
 * sorted in the term order), for the ops of the fact tables
 * associative and commutative. */
static int canono_fn(tg_ctx *ctx, tg_term *const *args, unsigned nargs, unsigned long i,
                     void **state, tg_term **out, void *ud, tg_error *err)
{
    (void)nargs, (void)state, (void)err;
    tg_env *env = ud;
    props pr;
    if (i > 0)
        return 0;
    if (ground_props(env, "ac-canono", args, &pr) < 0)
        return -1;
    tg_term *c = canon(env, args[1], &pr);
    tg_term *v[3] = {args[0], args[1], c};
    return one_answer(i, out, c ? tg_list(ctx, 3, v, NULL) : NULL);
}

/* (assoc-flatten a f): when a is an application of an associative op,
 * f is a with the arguments that apply the same op spliced in, through
 * any depth of them (Python kanren's assoc_flatten); otherwise f is a. */
static int flatten_fn(tg_ctx *ctx, tg_term *const *args, unsigned nargs, unsigned long i,
                      void **state, tg_term **out, void *ud, tg_error *err)
{
    (void)nargs, (void)state, (void)err;
    tg_env *env = ud;
    tg_term *a = args[0], *f = a;
    if (is_app(a) && !tgT_ispair(tg_car(a)) && holds1(env, env->assoc, tg_car(a))) {
        /* depth-first, left to right: a stack of the terms still to emit */
        tg_term *op = tg_car(a);
        tgK_vec st = {0}, res = {0};
        if (push_args(&st, a) < 0 || tgK_vec_reserve(&res, 1) < 0)
            return -1;
        res.v[res.n++] = (uintptr_t)op;
        while (st.n) {
            tg_term *x = (tg_term *)st.v[--st.n];
            if (same_app(x, op)) {
                if (push_args(&st, x) < 0)
                    return -1;
            } else if (tgK_vec_reserve(&res, 1) < 0) {
                return -1;
            } else {
                res.v[res.n++] = (uintptr_t)x;
            }
        }
        if (!(f = tg_list(ctx, res.n, (tg_term **)res.v, NULL)))
            return -1;
    }
    tg_term *v[2] = {a, f};
    return one_answer(i, out, tg_list(ctx, 2, v, NULL));
}

/* ---- non-relational tests ------------------------------------------ */

/* The one answer of a one-argument test that holds unless fails, or
 * none: what atomo and ac-atomo give. */
static int test_answer(tg_ctx *ctx, tg_term *const *args, unsigned long i, int fails,
                       tg_term **out)
{
    if (i > 0 || fails || is_fresh(args[0]))
        return 0;
    *out = tg_list(ctx, 1, args, NULL);
    return *out ? 1 : -1;
}

/* (atomo t): t is neither a list cell nor a fresh variable. */
static int atomo_fn(tg_ctx *ctx, tg_term *const *args, unsigned nargs, unsigned long i,
                    void **state, tg_term **out, void *ud, tg_error *err)
{
    (void)nargs, (void)state, (void)ud, (void)err;
    return test_answer(ctx, args, i, tgT_ispair(args[0]), out);
}

/* (ac-atomo t): t is no application to the assoc/comm relations: not a
 * list cell, or a list whose final tail is not () (see is_app); never a
 * fresh variable. */
static int acatomo_fn(tg_ctx *ctx, tg_term *const *args, unsigned nargs, unsigned long i,
                      void **state, tg_term **out, void *ud, tg_error *err)
{
    (void)nargs, (void)state, (void)ud, (void)err;
    return test_answer(ctx, args, i, is_app(args[0]), out);
}

/* (op-kindo props t a c): t is an application (fails otherwise); a is #t
 * when associative is in props and (associative op) is a fact for its
 * head op, else #f; c likewise for commutative.  A compound head is
 * never an op (#f, #f): ac-expando expands it as it does an argument. */
static int opkind_fn(tg_ctx *ctx, tg_term *const *args, unsigned nargs, unsigned long i,
                     void **state, tg_term **out, void *ud, tg_error *err)
{
    (void)nargs, (void)state, (void)err;
    tg_env *env = ud;
    props pr;
    if (i > 0)
        return 0;
    if (!tgT_ground(args[0]) || read_props(env, args[0], &pr) < 0)
        return -1;
    if (!is_app(args[1]))
        return 0;
    tg_term *op = tg_car(args[1]);
    tg_term *v[4] = {args[0], args[1], env->sym_f, env->sym_f};
    if (!tgT_ispair(op)) {
        if (pr.assoc && holds1(env, env->assoc, op))
            v[2] = env->sym_t;
        if (pr.comm && holds1(env, env->comm, op))
            v[3] = env->sym_t;
    }
    return one_answer(i, out, tg_list(ctx, 4, v, NULL));
}

/* Does ground t hold an application of an associative op (in props)
 * with an argument that applies the same op, where either has exactly
 * one argument: (aop (aop 1 2)), (aop 1 (aop 2))?  Such a term flattens
 * like the others (Python kanren's flatten_assoc_args splices a same-op
 * argument of any arity but 0) but is no member of the class ac-expando
 * enumerates, which regroups into runs of two or more: with one-argument
 * wrappers the class would be infinite.  Visits what canon does. */
static int has_unary_wrapper(tg_env *env, const props *pr, tg_term *t, int *found)
{
    tgK_vec st = {0};
    *found = 0;
    if (!pr->assoc)
        return 0;
    if (tgK_vec_reserve(&st, 1) < 0)
        return -1;
    st.v[st.n++] = (uintptr_t)t;
    while (st.n && !*found) {
        tg_term *x = (tg_term *)st.v[--st.n];
        if (!is_app(x))
            continue;
        size_t n = tg_length(x);
        tg_term *op = tg_car(x);
        int a = !tgT_ispair(op) && holds1(env, env->assoc, op);
        if (tgK_vec_reserve(&st, n) < 0)
            return -1;
        tg_iter it;
        tg_iter_init(&it, x);
        for (tg_term *y; (y = tg_iter_next(&it));) {
            if (a && same_app(y, op) && (n == 2 || tg_length(y) == 2))
                *found = 1;
            st.v[st.n++] = (uintptr_t)y;
        }
    }
    return 0;
}

/* (ac-caseo props g o k): how eq-modo relates ground g to o.  k is ground
 * when o is ground too: the two are equal when their canonical forms are
 * (whatever one-argument wrappers they hold, and without enumerating a
 * class); given when g is not among the members of its class that
 * ac-expando lists (has_unary_wrapper), so it is answered first on its
 * own; class otherwise. */
static int acase_fn(tg_ctx *ctx, tg_term *const *args, unsigned nargs, unsigned long i,
                    void **state, tg_term **out, void *ud, tg_error *err)
{
    (void)nargs, (void)state, (void)err;
    tg_env *env = ud;
    props pr;
    if (i > 0)
        return 0;
    if (ground_props(env, "ac-caseo", args, &pr) < 0)
        return -1;
    int given = 0;
    if (!tgT_ground(args[2]) && has_unary_wrapper(env, &pr, args[1], &given) < 0)
        return -1;
    const char *k = tgT_ground(args[2]) ? "ground" : given ? "given" : "class";
    tg_term *v[4] = {args[0], args[1], args[2], tg_symbol_cstr(ctx, k)};
    return one_answer(i, out, v[3] ? tg_list(ctx, 4, v, NULL) : NULL);
}

/* (ground-ordero u v g o): g is whichever of u, v is ground (u first),
 * o the other; an error when neither is. */
static int gorder_fn(tg_ctx *ctx, tg_term *const *args, unsigned nargs, unsigned long i,
                     void **state, tg_term **out, void *ud, tg_error *err)
{
    (void)nargs, (void)state, (void)err;
    tg_env *env = ud;
    if (i > 0)
        return 0;
    int k = tgT_ground(args[0]) ? 0 : tgT_ground(args[1]) ? 1 : -1;
    if (k < 0) {
        tgK_error(env, TG_ERR_ARG, "equality modulo associativity or commutativity "
                                   "needs one of its two terms ground");
        return -1;
    }
    tg_term *v[4] = {args[0], args[1], args[k], args[1 - k]};
    return one_answer(i, out, tg_list(ctx, 4, v, NULL));
}

/* ---- registration -------------------------------------------------- */

int tgN_register(tg_env *env, tg_error *err)
{
    static const struct {
        const char *name;
        unsigned arity;
        tg_relation_fn fn;
    } b[] = {
        {"permuteo", 2, permuteo_fn},
        {"ac-canono", 3, canono_fn},
        {"assoc-flatten", 2, flatten_fn},
        {"atomo", 1, atomo_fn},
        {"ac-atomo", 1, acatomo_fn},
        {"op-kindo", 4, opkind_fn},
        {"ac-caseo", 4, acase_fn},
        {"ground-ordero", 4, gorder_fn},
    };
    for (size_t i = 0; i < sizeof b / sizeof *b; i++)
        if (tgK_defrel_lib(env, b[i].name, b[i].arity, b[i].fn, env, err) < 0)
            return -1;
    /* the property tables the assoc/comm relations consult: empty */
    tgG_rel **rels[2] = {&env->assoc, &env->comm};
    tg_term **names[2] = {&env->sym_assoc, &env->sym_comm};
    static const char *const tables[] = {"associative", "commutative"};
    for (size_t i = 0; i < 2; i++) {
        tg_term *name = *names[i] = tg_symbol_cstr(env->ctx, tables[i]);
        tgG_rel *r = *rels[i] = name ? tgG_rel_get(env, name) : NULL;
        void *f = tgF_new();
        if (!r || !f) {
            tgE_nomem(err);
            return -1;
        }
        r->arity = 1;
        r->cfn = tgF_fn;
        r->cud = f;
    }
    return 0;
}
