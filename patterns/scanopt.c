/* scanopt.c - the Scan rewrites (scanopt.h): drop unused and fold constant
 * inputs, merge identical inputs, keep only the taps the step reads, push
 * loop-invariant and per-step sequence work out of the loop; and the
 * relations, these and those over a whole graph (scangraph.c, scanout.c),
 * by name.  The scan term they edit is read and built in scanterm.c.
 *
 * Why C and not rules: each rewrite edits the parameter list, the results
 * and the outer lists of a scan in step (parameter i goes with sequence i),
 * substitutes terms for parameter symbols through the lambda, and makes
 * fresh parameter names; the graph rewrites also need every user of a
 * node.  The .rules language matches and builds terms of fixed shape, with
 * no positional edit of a list, no substitution and no view of a node's
 * users.  Each rewrite is a relation of two arguments (a C relation, as
 * logic/builtin.c's), so that scan.rules names them as rewriter items and
 * queries select them by name like rules.
 *
 * Nothing here recurses on the C stack: DAG walks and rebuilds use
 * explicit stacks and a map of what is done (terms are hash-consed DAGs).
 * A scan this module does not understand (malformed, or with a scan inside
 * its lambda) is left alone: the kernels report what is wrong with it.
 */
#include "scanopt.h"
#include "scanint.h"

#include <gc/gc.h>
#include <stdio.h>
#include <string.h>

/* ---- names ----------------------------------------------------------- */

static const char *const nm_text[NN] = {
    "scan", "lambda", "until", "steps", "sequences", "outputs", "non_sequences", "nitsot",
    "sitsot", "mitsot", "taps", "last", "scan_output", "scan_steps", "subtensor", "slice", "none",
    "graph", "inplace", "const", "input", "auto", "add", "sub", "neg", "mul", "true_div", "dot",
    "dimshuffle", "transpose", "sum", "mean", "axes", "perm", "x", "backwards", "prod", "max",
    "min", "all", "shared", "gemm", "reshape", "shape-of", "alloc", "logsumexp"};

/* Names a parameter may not take (doc/scan.md). */
static const char *const reserved[] = {"float64", "float32", "int64", "int32", "bool", "x",
                                       "all",     "none",    "auto",  "last",  "backwards"};

/* Heads of the tensor vocabulary: terms that may move in or out of a loop.
 * The first NELEM are elementwise (a whole-sequence form computes each
 * step's row). */
#define NELEM 32
static const char *const tensor_ops[] = {
    "add", "mul", "sub", "true_div", "int_div", "mod", "neg", "reciprocal", "pow", "sqr", "sqrt",
    "exp", "expm1", "log", "log1p", "sin", "cos", "tanh", "sigmoid", "abs", "maximum", "minimum",
    "lt", "le", "gt", "ge", "eq", "neq", "switch", "cast", "fill", "softplus",
    /* not elementwise */
    "sum", "prod", "max", "min", "mean", "dot", "gemm", "transpose", "dimshuffle",
    "reshape", "alloc", "subtensor", "logsumexp"};
#define NTENSOR (sizeof tensor_ops / sizeof *tensor_ops)

/* ---- rewrites of one scan node ---------------------------------------- */

/* Identical sequences, and identical non-sequences, become one: the
 * parameter of the second is renamed to that of the first. */
static int merge_inputs(so *s, scan *sc)
{
    tgW_map repl = {0};
    int changed = 0;
    vec *lists[2][2] = {{&sc->seq, &sc->seqp}, {&sc->ns, &sc->nsp}};
    for (int l = 0; l < 2; l++) {
        vec *in = lists[l][0], *par = lists[l][1];
        for (size_t i = 0; i < in->n; i++)
            for (size_t j = in->n; j-- > i + 1;)
                if (in->v[j] == in->v[i]) {
                    if (tgW_map_put(&repl, par->v[j], par->v[i]) < 0)
                        return s->oom = 1, -1;
                    vec_del(in, j), vec_del(par, j);
                    changed = 1;
                }
    }
    if (changed && tgSo_subst_body(s, sc, &repl) < 0)
        return -1;
    return changed;
}

/* Sequences and non-sequences whose parameter the step never reads go. */
static int drop_inputs(so *s, scan *sc)
{
    tgW_map syms = {0};
    if (tgSo_body_symbols(s, sc, &syms) < 0)
        return -1;
    int changed = 0;
    vec *lists[2][2] = {{&sc->seq, &sc->seqp}, {&sc->ns, &sc->nsp}};
    for (int l = 0; l < 2; l++)
        for (size_t i = lists[l][0]->n; i-- > 0;)
            if (!tgW_map_get(&syms, lists[l][1]->v[i])) {
                /* (steps auto) counts the sequences' rows: keep one */
                if (l == 0 && lists[l][0]->n == 1 && tg_nth(sc->steps, 1) == NM(s, N_AUTO))
                    continue;
                vec_del(lists[l][0], i), vec_del(lists[l][1], i);
                changed = 1;
            }
    return changed;
}

/* A constant: a number or (const DTYPE VALUE). */
static int is_const(so *s, const tg_term *t)
{
    tg_kind k = tg_kind_of(t);
    return k == TG_INT || k == TG_RAT || k == TG_DOUBLE ||
           (is_app(t, NM(s, N_CONST)) && tg_length(t) == 3);
}

/* Non-sequences that are constants are written into the step. */
static int fold_constants(so *s, scan *sc)
{
    tgW_map repl = {0};
    int changed = 0;
    for (size_t i = sc->ns.n; i-- > 0;)
        if (is_const(s, sc->ns.v[i])) {
            if (tgW_map_put(&repl, sc->nsp.v[i], sc->ns.v[i]) < 0)
                return s->oom = 1, -1;
            vec_del(&sc->ns, i), vec_del(&sc->nsp, i);
            changed = 1;
        }
    if (changed && tgSo_subst_body(s, sc, &repl) < 0)
        return -1;
    return changed;
}

/* Taps whose parameter the step never reads go; INIT loses the rows only
 * they reached.  A recurrent output left with no tap read stacks its
 * results as a nitsot (not when it is `last`: with zero steps a sitsot's
 * last value is INIT's, a nitsot's is an error). */
static int prune_taps(so *s, scan *sc)
{
    tgW_map syms = {0};
    if (tgSo_body_symbols(s, sc, &syms) < 0)
        return -1;
    int changed = 0;
    for (size_t i = 0; i < sc->no; i++) {
        out *o = &sc->o[i];
        if (o->kind == NITSOT)
            continue;
        int64_t before = 0, after = 0;
        size_t k = 0;
        for (size_t j = 0; j < o->ntaps; j++) {
            before = o->taps[j] < before ? o->taps[j] : before;
            if (tgW_map_get(&syms, o->tp[j])) {
                after = o->taps[j] < after ? o->taps[j] : after;
                o->taps[k] = o->taps[j], o->tp[k++] = o->tp[j];
            }
        }
        if (k == o->ntaps || (k == 0 && o->last))
            continue;
        changed = 1;
        o->ntaps = k;
        if (k == 0) {
            o->kind = NITSOT, o->init = NULL;
            continue;
        }
        if (o->kind == SITSOT)
            continue;
        if (k == 1 && o->taps[0] == -1) {   /* INIT's last row */
            o->kind = SITSOT;
            o->init = app2(s, N_SUBTENSOR, o->init, tg_int(s->ctx, -1));
        } else if (after > before) {        /* drop the rows no tap reaches */
            tg_term *sl[3] = {tg_int(s->ctx, after - before), NM(s, N_NONE), NM(s, N_NONE)};
            o->init = app2(s, N_SUBTENSOR, o->init, app(s, N_SLICE, 3, sl));
        }
    }
    return s->oom ? -1 : changed;
}

static unsigned dep_atom(so *s, deps *d, const tg_term *t)
{
    if (tg_kind_of(t) != TG_SYMBOL)
        return 0;
    if (tgW_map_get(d->var, t))
        return D_VAR;
    if (d->seq && tgW_map_get(d->seq, t))
        return D_SEQ;
    return tgW_map_get(&s->nm->reserved, t) ? 0 : D_OTHER;
}

unsigned tgSo_dep_get(so *s, deps *d, const tg_term *t)
{
    if (!is_pair(t))
        return dep_atom(s, d, t);
    return (unsigned)(uintptr_t)tgW_map_get(&d->memo, t) - 32;
}

/* The flags of every node under t, post-order with an explicit stack. */
int tgSo_dep_compute(so *s, deps *d, tg_term *t)
{
    if (!is_pair(t) || tgW_map_get(&d->memo, t))
        return 0;
    vec st = {0}, done = {0};
    if (push(s, &st, t) < 0 || push_any(s, &done, NULL) < 0)
        return -1;
    while (st.n) {
        tg_term *n = st.v[st.n - 1];
        if (tgW_map_get(&d->memo, n)) {
            st.n--, done.n--;
            continue;
        }
        tg_iter it;
        tg_iter_init(&it, n);
        if (!done.v[done.n - 1]) {
            done.v[done.n - 1] = n;
            for (tg_term *e; (e = tg_iter_next(&it));)
                if (is_pair(e) && !tgW_map_get(&d->memo, e))
                    if (push(s, &st, e) < 0 || push_any(s, &done, NULL) < 0)
                        return -1;
            continue;
        }
        int op = tensor_op(s, n);
        unsigned f = is_const(s, n) ? 0 : op == 2 ? 0 : op == 1 ? D_NONELEM : D_STUCK;
        tg_iter_next(&it);      /* the head */
        for (tg_term *e; !is_const(s, n) && (e = tg_iter_next(&it));) {
            unsigned fe = tgSo_dep_get(s, d, e);
            /* the axes of a reduction, a slice, a shape: not tensors,
             * they only matter by the parameters they read */
            if (op == 1 && is_pair(e) && !tensor_op(s, e) && !is_const(s, e))
                fe &= D_VAR | D_SEQ;
            f |= fe;
        }
        if (tgW_map_put(&d->memo, n, (void *)(uintptr_t)(f + 32)) < 0)
            return s->oom = 1, -1;
        st.n--, done.n--;
    }
    return 0;
}

/* What a walk of the step's largest subterms does with tensor op t: take
 * it (1: not looked into), look into it (0), or fail (-1). */
typedef int (*take_fn)(so *s, tg_term *t, void *ud);

/* Walk the step's results and condition (their flags computed in d) from
 * the top through tensor ops in tensor positions, each once, offering
 * each to take. */
static int largest(so *s, scan *sc, deps *d, take_fn take, void *ud)
{
    vec st = {0};
    tgW_map seen = {0};
    for (size_t i = 0; i < sc->no; i++)
        if (push(s, &st, sc->o[i].res) < 0)
            return -1;
    if (sc->until && push(s, &st, sc->until) < 0)
        return -1;
    for (size_t i = 0; i < st.n; i++)
        if (tgSo_dep_compute(s, d, st.v[i]) < 0)
            return -1;
    while (st.n) {
        tg_term *t = st.v[--st.n];
        if (!tensor_op(s, t) || tgW_map_get(&seen, t))
            continue;
        if (tgW_map_put(&seen, t, t) < 0)
            return s->oom = 1, -1;
        int rc = take(s, t, ud);
        if (rc < 0)
            return -1;
        if (rc)
            continue;
        tg_iter it;
        tg_iter_init(&it, t);
        tg_iter_next(&it);
        for (tg_term *e; (e = tg_iter_next(&it));)
            if (tensor_op(s, e) && push(s, &st, e) < 0)
                return -1;
    }
    return 0;
}

typedef int (*ok_fn)(unsigned flags);

typedef struct movex {
    deps *d;
    ok_fn ok;
    vec *found;
    tgW_map *isfound;
} movex;

static int take_ok(so *s, tg_term *t, void *ud)
{
    movex *m = ud;
    if (!m->ok(tgSo_dep_get(s, m->d, t)))
        return 0;
    if (!tgW_map_get(m->isfound, t) && (tgW_map_put(m->isfound, t, t) < 0 || push(s, m->found, t) < 0))
        return s->oom = 1, -1;
    return 1;
}

/* Find the largest subterms of the step (tensor ops in tensor positions)
 * whose flags pass ok; they go in found, in the order met. */
static int find_moves(so *s, scan *sc, deps *d, ok_fn ok, vec *found, tgW_map *isfound)
{
    movex m = {d, ok, found, isfound};
    return largest(s, sc, d, take_ok, &m);
}

static int invariant_ok(unsigned f) { return !(f & (D_VAR | D_STUCK)); }

/* A step's parameters into maps, each to itself: the sequences' into seq,
 * the outputs' taps into var; the non-sequences' into outm (when not
 * NULL) to their values outside the loop.  -1 when out of memory. */
int tgSo_param_maps(so *s, scan *sc, tgW_map *seq, tgW_map *var, tgW_map *outm)
{
    for (size_t i = 0; i < sc->seqp.n; i++)
        if (tgW_map_put(seq, sc->seqp.v[i], sc->seqp.v[i]) < 0)
            return s->oom = 1, -1;
    for (size_t i = 0; i < sc->no; i++)
        for (size_t j = 0; j < sc->o[i].ntaps; j++)
            if (tgW_map_put(var, sc->o[i].tp[j], sc->o[i].tp[j]) < 0)
                return s->oom = 1, -1;
    for (size_t i = 0; outm && i < sc->nsp.n; i++)
        if (tgW_map_put(outm, sc->nsp.v[i], sc->ns.v[i]) < 0)
            return s->oom = 1, -1;
    return 0;
}

/* Work that reads no sequence nor tap is computed once, before the loop,
 * and passed in as a new non-sequence (non-sequence parameters replaced
 * by their values outside). */
static int push_invariant(so *s, scan *sc, tg_term *whole)
{
    tgW_map var = {0}, isfound = {0}, used = {0}, out = {0}, repl = {0};
    if (tgSo_param_maps(s, sc, &var, &var, &out) < 0)
        return -1;
    deps d = {&var, NULL, {0}};
    vec found = {0};
    if (find_moves(s, sc, &d, invariant_ok, &found, &isfound) < 0)
        return -1;
    if (!found.n)
        return 0;
    if (tgSo_symbols(s, whole, &used) < 0)
        return -1;
    for (size_t i = 0; i < found.n; i++) {
        tg_term *p = tgSo_fresh(s, &used, "w");
        tg_term *w = p ? tgSo_subst(s, found.v[i], &out) : NULL;
        if (!w || push(s, &sc->ns, w) < 0 || push(s, &sc->nsp, p) < 0 ||
            tgW_map_put(&repl, found.v[i], p) < 0)
            return s->oom = 1, -1;
    }
    return tgSo_subst_body(s, sc, &repl) < 0 ? -1 : 1;
}

/* ---- per-step work as work on whole stacks ------------------------- */

/* The stack over the steps of a step term (row t: the term's value at
 * step t) written over whole stacks: f(x_t) as f(X).  Used two ways: to
 * turn work on sequence rows into new sequences (only sequence rows may
 * be read: seqmode), and to do after the loop the work that ends a step
 * and only feeds a stacked output (the values it reads stacked by new
 * nitsot outputs, or read from stacked outputs and sequences). */
/* The placeholder of the stack of per-step values t over the steps (both
 * push-out rewrites): the one given before, or a fresh name recorded in
 * leaf, with t in lv and the name in lph; NULL when out of memory. */
tg_term *tgSo_stack_leaf(so *s, tgW_map *used, tgW_map *leaf, vec *lv, vec *lph, tg_term *t)
{
    tg_term *p = tgW_map_get(leaf, t);
    if (p)
        return p;
    if (!(p = tgSo_fresh(s, used, "stk")) || tgW_map_put(leaf, t, p) < 0 || push(s, lv, t) < 0 || push(s, lph, p) < 0)
        return s->oom = 1, NULL;
    return p;
}

static tg_term *outside_st(stx *x, tg_term *t) { return tgSo_subst(x->s, t, x->out); }

static int st_varying(stx *x, tg_term *t)
{
    return (tgSo_dep_get(x->s, &x->d, t) & (D_VAR | D_SEQ | D_STUCK)) != 0;
}

/* A step term stacked as a whole: a sequence's own rows (seqmode), or a
 * placeholder for a new stacked output (else). */
static tg_term *st_leaf(stx *x, tg_term *t)
{
    if (x->seqmode) {
        for (size_t i = 0; i < x->sc->seqp.n; i++)
            if (x->sc->seqp.v[i] == t)
                return x->sc->seq.v[i];
        return NULL;
    }
    return tgSo_stack_leaf(x->s, x->used, &x->leaf, &x->lv, &x->lph, t);
}

/* (axes I+1 ...) of a reduction's axes over a term of rank q. */
static tg_term *shift_axes(stx *x, tg_term *ax, int q)
{
    so *s = x->s;
    vec w = {0};
    if (!ax || ax == NM(s, N_ALL)) {
        for (int i = 1; i <= q; i++)
            push(s, &w, tg_int(s->ctx, i));
    } else {
        if (!is_pair(ax))
            return NULL;
        tg_iter it;
        tg_iter_init(&it, ax);
        for (tg_term *e; (e = tg_iter_next(&it));) {
            int64_t a;
            if (e == NM(s, N_AXES))
                continue;
            if (tg_int_get(e, &a) < 0 || a < 0 || a >= q)
                return NULL;
            push(s, &w, tg_int(s->ctx, a + 1));
        }
    }
    return s->oom || !w.n ? NULL : vlist(s, N_AXES, &w);
}

/* The stack of step term t, varying, over outer names and placeholders;
 * NULL when not known here.  *moved set when an op moved. */
tg_term *tgSo_st_of(stx *x, tg_term *t, int depth, int *moved)
{
    so *s = x->s;
    int q = tgSo_rank_of(&x->in, t);
    size_t n = 0;
    int op = tensor_op(s, t);
    tg_term **v = depth < 32 && op && q >= 0 && !(x->avoid && tgW_map_get(x->avoid, t)) ? elems(s, t, &n) : NULL;
    if (s->oom)
        return NULL;
    tg_term *h = v ? v[0] : NULL, *r = NULL;
    if (op == 2 && v) {
        int ok = 1;
        for (size_t i = 1; ok && i < n; i++) {
            if (tg_kind_of(v[i]) == TG_SYMBOL && tgW_map_get(&s->nm->reserved, v[i]))
                continue;
            int qi = tgSo_rank_of(&x->in, v[i]);
            if (st_varying(x, v[i]))
                ok = qi == q && (v[i] = tgSo_st_of(x, v[i], depth + 1, moved)) != NULL;
            else            /* broadcast from the right the same way */
                ok = qi >= 0 && qi <= q && (v[i] = outside_st(x, v[i])) != NULL;
        }
        r = ok ? list(s, n, v) : NULL;
    } else if (v && (h == NM(s, N_SUM) || h == NM(s, N_PROD) || h == NM(s, N_MAX) || h == NM(s, N_MIN) ||
                     h == NM(s, N_MEAN)) && (n == 2 || n == 3)) {
        int q1 = tgSo_rank_of(&x->in, v[1]);
        tg_term *ax = q1 > 0 ? shift_axes(x, n == 3 ? v[2] : NULL, q1) : NULL;
        tg_term *a = ax ? tgSo_st_of(x, v[1], depth + 1, moved) : NULL;
        r = a ? list(s, 3, (tg_term *[]){h, a, ax}) : NULL;
    } else if (v && h == NM(s, N_DOT) && n == 3) {
        int va = st_varying(x, v[1]), vb = st_varying(x, v[2]);
        int qa = tgSo_rank_of(&x->in, v[1]), qb = tgSo_rank_of(&x->in, v[2]);
        if (va && !vb && qa == 1 && (qb == 1 || qb == 2)) {
            tg_term *a = tgSo_st_of(x, v[1], depth + 1, moved), *b = outside_st(x, v[2]);
            r = a && b ? app2(s, N_DOT, a, b) : NULL;
        } else if (!va && vb && qb == 1 && (qa == 1 || qa == 2)) {
            tg_term *b = tgSo_st_of(x, v[2], depth + 1, moved), *a = outside_st(x, v[1]);
            if (a && qa == 2)
                a = app(s, N_TRANSPOSE, 1, &a);
            r = a && b ? app2(s, N_DOT, b, a) : NULL;
        }
    } else if (v && h == NM(s, N_DIMSHUFFLE) && n == 3 && is_pair(v[2])) {
        vec w = {0};
        push(s, &w, tg_int(s->ctx, 0));
        tg_iter it;
        tg_iter_init(&it, v[2]);
        int ok = 1;
        for (tg_term *e; ok && (e = tg_iter_next(&it));) {
            int64_t a;
            if (e == NM(s, N_PERM))
                continue;
            if (e == NM(s, N_X))
                push(s, &w, e);
            else if ((ok = tg_int_get(e, &a) == 0 && a >= 0))
                push(s, &w, tg_int(s->ctx, a + 1));
        }
        tg_term *a = ok ? tgSo_st_of(x, v[1], depth + 1, moved) : NULL;
        tg_term *pm = a ? vlist(s, N_PERM, &w) : NULL;
        r = pm ? app2(s, N_DIMSHUFFLE, a, pm) : NULL;
    }
    if (s->oom)
        return NULL;
    if (r) {
        *moved |= h != NM(s, N_DIMSHUFFLE);     /* a view alone is no work moved */
        return r;
    }
    return x->seqmode && tg_kind_of(t) != TG_SYMBOL ? NULL : st_leaf(x, t);
}

int tgSo_has_opt(so *s, const scan *sc, int name)
{
    for (size_t i = 0; i < sc->opts.n; i++)
        if (sc->opts.v[i] == NM(s, name))
            return 1;
    return 0;
}

/* The rows sequence parameter p reads over the steps, in the sequence's
 * order: the whole sequence with (steps auto), its first N rows with an
 * integer N; NULL when not known here (a size symbol N may be fewer). */
tg_term *tgSo_seq_rows(so *s, const scan *sc, tg_term *p)
{
    tg_term *n = tg_nth(sc->steps, 1);
    if (n != NM(s, N_AUTO) && tg_kind_of(n) != TG_INT)
        return NULL;
    for (size_t i = 0; i < sc->seqp.n; i++)
        if (sc->seqp.v[i] == p) {
            if (n == NM(s, N_AUTO))
                return sc->seq.v[i];
            tg_term *sl[3] = {tg_int(s->ctx, 0), n, NM(s, N_NONE)};
            return app2(s, N_SUBTENSOR, sc->seq.v[i], app(s, N_SLICE, 3, sl));
        }
    return NULL;
}

/* Elementwise work on sequence rows and constants only. */
static int seqwork_ok(unsigned f)
{
    return (f & D_SEQ) && !(f & (D_VAR | D_STUCK | D_OTHER | D_NONELEM));
}

typedef struct rankx {
    stx *x;
    const tgW_map *accd;    /* left to scan-push-sums */
    vec *found, *forms;
} rankx;

/* seq_ranked's walk: t and its whole-sequence form when it has one. */
static int take_ranked(so *s, tg_term *t, void *ud)
{
    rankx *r = ud;
    unsigned f = tgSo_dep_get(s, &r->x->d, t);
    if (!(f & D_SEQ) || (f & (D_VAR | D_STUCK)) || tgW_map_get(r->accd, t))
        return 0;
    int moved = 0;
    tg_term *e = tgSo_st_of(r->x, t, 0, &moved);
    if (s->oom)
        return -1;
    if (!e || !moved)
        return 0;
    return push(s, r->found, t) < 0 || push(s, r->forms, e) < 0 ? -1 : 1;
}

/* Work on sequence rows through reductions, dots with a non-sequence and
 * elementwise ops with non-sequences, where the ranks are known here: the
 * largest such subterms of the step (found) and their whole-sequence
 * forms (forms), f(x_t) and f(X): (dot x_t W) becomes the sequence
 * (dot X W), one matrix product, (sum x_t (axes 0)) (sum X (axes 1)). */
static int seq_ranked(so *s, scan *sc, tg_term *whole, vec *found, vec *forms)
{
    tgW_map var = {0}, seq = {0}, outm = {0}, used = {0}, env = {0};
    if (tgSo_param_maps(s, sc, &seq, &var, &outm) < 0)
        return -1;
    rk outer = {s, {0}, NULL};
    if (tgSo_param_ranks(s, sc, &outer, &env) < 0 || tgSo_symbols(s, whole, &used) < 0)
        return -1;
    stx x = {s, sc, {&var, &seq, {0}}, {s, {0}, &env}, &outer, &outm, 1, NULL, &used, {0}, {0}, {0}};
    /* the terms an accumulator (sitsot INIT last) adds are left to
     * scan-push-sums: the sum of dot(x_t, W) is better dot(sum X, W) than
     * a sequence dot(X, W) summed in the loop */
    tgW_map accd = {0};
    for (size_t i = 0; i < sc->no; i++)
        if (sc->o[i].kind == SITSOT && sc->o[i].last && is_app(sc->o[i].res, NM(s, N_ADD))) {
            tg_iter it;
            tg_iter_init(&it, sc->o[i].res);
            for (tg_term *e; (e = tg_iter_next(&it));)
                if (tgW_map_put(&accd, e, e) < 0)
                    return s->oom = 1, -1;
        }
    rankx r = {&x, &accd, found, forms};
    return largest(s, sc, &x.d, take_ranked, &r);
}

/* Elementwise work that reads only sequence rows (and constants) is done
 * once on the whole sequences, before the loop, and read row by row as a
 * new sequence.  Non-sequences are left out: their shape is unknown
 * here, and a whole sequence would broadcast against them otherwise than
 * a row does. */
static int push_sequences(so *s, scan *sc, tg_term *whole)
{
    tgW_map var = {0}, seq = {0}, isfound = {0}, used = {0}, out = {0}, repl = {0};
    if (tgSo_param_maps(s, sc, &seq, &var, NULL) < 0)
        return -1;
    for (size_t i = 0; i < sc->seqp.n; i++)     /* a row's whole sequence */
        if (tgW_map_put(&out, sc->seqp.v[i], sc->seq.v[i]) < 0)
            return s->oom = 1, -1;
    for (size_t i = 0; i < sc->nsp.n; i++)      /* non-sequences stay in the loop */
        if (tgW_map_put(&var, sc->nsp.v[i], sc->nsp.v[i]) < 0)
            return s->oom = 1, -1;
    deps d = {&var, &seq, {0}};
    vec found = {0}, whole_form = {0};
    if (find_moves(s, sc, &d, seqwork_ok, &found, &isfound) < 0)
        return -1;
    if (!found.n && seq_ranked(s, sc, whole, &found, &whole_form) < 0)
        return -1;
    if (!found.n)
        return 0;
    if (tgSo_symbols(s, whole, &used) < 0)
        return -1;
    for (size_t i = 0; i < found.n; i++) {
        tg_term *p = tgSo_fresh(s, &used, "r");
        tg_term *x = !p ? NULL : whole_form.n ? whole_form.v[i] : tgSo_subst(s, found.v[i], &out);
        if (!x || push(s, &sc->seq, x) < 0 || push(s, &sc->seqp, p) < 0 ||
            tgW_map_put(&repl, found.v[i], p) < 0)
            return s->oom = 1, -1;
    }
    return tgSo_subst_body(s, sc, &repl) < 0 ? -1 : 1;
}

typedef int (*local_fn)(so *s, scan *sc, tg_term *whole);

static int merge_inputs_w(so *s, scan *sc, tg_term *w) { (void)w; return merge_inputs(s, sc); }
static int drop_inputs_w(so *s, scan *sc, tg_term *w) { (void)w; return drop_inputs(s, sc); }
static int fold_constants_w(so *s, scan *sc, tg_term *w) { (void)w; return fold_constants(s, sc); }
static int prune_taps_w(so *s, scan *sc, tg_term *w) { (void)w; return prune_taps(s, sc); }

/* A rewrite of one scan node t: 1 with *out, 0, -1. */
static int local(so *s, local_fn fn, tg_term *t, tg_term **out)
{
    scan sc;
    if (!tgSo_parse(s, t, &sc))
        return s->oom ? -1 : 0;
    int rc = fn(s, &sc, t);
    if (rc <= 0)
        return rc;
    *out = tgSo_build(s, &sc);
    return *out ? (*out != t) : -1;
}

/* ---- the relations ---------------------------------------------------- */

typedef struct rel {
    const char *name;
    local_fn lfn;
    graph_fn_t gfn;
} rel;

static const rel rels[] = {
    {"scan-merge-inputs", merge_inputs_w, NULL},
    {"scan-drop-inputs", drop_inputs_w, NULL},
    {"scan-fold-constants", fold_constants_w, NULL},
    {"scan-prune-taps", prune_taps_w, NULL},
    {"scan-push-invariant", push_invariant, NULL},
    {"scan-push-sequences", push_sequences, NULL},
    {"scan-merge-outputs", NULL, tgSo_same_outputs},
    {"scan-drop-outputs", NULL, tgSo_unused_outputs},
    {"scan-last", NULL, tgSo_last_outputs},
    {"scan-last-rows", NULL, tgSo_last_rows},
    {"scan-merge", NULL, tgSo_merge_scans},
    {"scan-inplace", NULL, tgSo_inplace},
    {"scan-push-sums", NULL, tgSo_push_sums},
    {"scan-push-output", NULL, tgSo_push_output},
};
#define NRELS (sizeof rels / sizeof *rels)

typedef struct relud {
    const rel *r;
    names *nm;
} relud;

static int rel_fn(tg_ctx *ctx, tg_term *const *args, unsigned nargs, unsigned long i,
                  void **state, tg_term **answer, void *ud, tg_error *err)
{
    (void)state;
    const relud *u = ud;
    if (i > 0 || nargs != 2 || !is_pair(args[0]) || !tg_is_ground(args[0]))
        return 0;
    so s = {ctx, u->nm, 0};
    tg_term *out = NULL;
    int rc = u->r->lfn ? local(&s, u->r->lfn, args[0], &out) : tgSo_global(&s, u->r->gfn, args[0], &out);
    if (rc < 0 || s.oom) {
        tg_error_set(err, TG_ERR_NOMEM, "out of memory");
        return -1;
    }
    if (!rc)
        return 0;
    tg_term *v[2] = {args[0], out};
    if (!(*answer = tg_list(ctx, 2, v, NULL))) {
        tg_error_set(err, TG_ERR_NOMEM, "out of memory");
        return -1;
    }
    return 1;
}

int tgSo_define(tg_env *env, tg_ctx *ctx, tg_error *err)
{
    names *nm = GC_MALLOC(sizeof *nm);
    relud *uds = GC_MALLOC(NRELS * sizeof *uds);    /* kept by the relations */
    if (!nm || !uds)
        return tg_error_set(err, TG_ERR_NOMEM, "out of memory"), -1;
    for (int i = 0; i < NN; i++)
        if (!(nm->n[i] = tg_symbol_cstr(ctx, nm_text[i])))
            return tg_error_set(err, TG_ERR_NOMEM, "out of memory"), -1;
    for (size_t i = 0; i < NTENSOR; i++) {
        tg_term *o = tg_symbol_cstr(ctx, tensor_ops[i]);
        if (!o || tgW_map_put(&nm->ops, o, (void *)(uintptr_t)(i < NELEM ? 2 : 1)) < 0)
            return tg_error_set(err, TG_ERR_NOMEM, "out of memory"), -1;
    }
    for (size_t i = 0; i < sizeof reserved / sizeof *reserved; i++) {
        tg_term *r = tg_symbol_cstr(ctx, reserved[i]);
        if (!r || tgW_map_put(&nm->reserved, r, r) < 0)
            return tg_error_set(err, TG_ERR_NOMEM, "out of memory"), -1;
    }
    for (size_t i = 0; i < NRELS; i++) {
        uds[i] = (relud){&rels[i], nm};
        if (tgK_defrel_lib(env, rels[i].name, 2, rel_fn, &uds[i], err) < 0)
            return -1;
    }
    return 0;
}
