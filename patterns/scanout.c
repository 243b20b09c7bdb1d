/* scanout.c - the Scan rewrites that push work out of a loop, after it
 * (scanint.h): the stacks of work moved out (placeholders given a
 * sequence's rows or new stacked outputs), work that ends a step and only
 * feeds a stacked output done on whole stacks (scan-push-output), and
 * sums over the steps of an accumulator done as sums of stacks, one
 * matrix product for outer products (scan-push-sums).  See doc/scan.md,
 * "Rewrites". */
#include "scanint.h"

#include <gc/gc.h>
#include <string.h>

/* ---- the stacks of work moved out of a loop ---------------------------- */

/* (subtensor X (slice none none -1)): X's rows in reverse. */
static tg_term *reversed(so *s, tg_term *x)
{
    tg_term *sl[3] = {NM(s, N_NONE), NM(s, N_NONE), tg_int(s->ctx, -1)};
    tg_term *slc = sl[2] ? app(s, N_SLICE, 3, sl) : NULL;
    return slc ? app2(s, N_SUBTENSOR, x, slc) : NULL;
}

/* The whole-sequence rows a step symbol l stands for, or NULL. */
typedef tg_term *(*rows_fn)(so *s, const scan *sc, tg_term *l);

/* The outputs of the new scan of a push-out rewrite: o[0..n) (room for
 * the new nitsots), map[i] the new index of old output i (-1: gone),
 * exprs[i] the term old output i is read as instead (NULL: none). */
typedef struct newouts {
    out *o;
    size_t n;
    long *map;
    tg_term **exprs;
} newouts;

/* Start w from sc's outputs: output k goes when rk is NULL, else keeps
 * its place with result rk; room for extra more.  0, or -1. */
static int outputs_but(so *s, const scan *sc, size_t k, tg_term *rk, size_t extra, newouts *w)
{
    size_t nold = sc->no;
    w->o = GC_MALLOC((nold + extra + 1) * sizeof *w->o);
    w->map = GC_MALLOC_ATOMIC((nold + 1) * sizeof *w->map);
    w->exprs = GC_MALLOC((nold + 1) * sizeof *w->exprs);
    if (!w->o || !w->map || !w->exprs)
        return s->oom = 1, -1;
    w->n = 0;
    for (size_t i = 0; i < nold; i++) {
        w->exprs[i] = NULL;
        w->map[i] = i == k && !rk ? -1 : (long)w->n;
        if (i == k && !rk)
            continue;
        w->o[w->n] = sc->o[i];
        if (i == k)
            w->o[w->n].res = rk;
        w->n++;
    }
    return 0;
}

/* Both push-out rewrites end alike: the placeholders (lph, of the step
 * terms lv) that the moved work reads (inuse) get their stacks, in ph: a
 * sequence's rows (rows_of), else a stacked output of the new scan built
 * from no[0..*nnew): one that computes the value already when reuse is
 * set, else a new nitsot appended to no (which has room), read in reverse
 * when rev is set.  The new scan, with sc's lists and options (inplace
 * marks dropped: outputs are renumbered), goes in *t2 (NULL when it has
 * no output).  0, or -1. */
static int stack_outputs(so *s, scan *sc, const vec *lv, const vec *lph, const tgW_map *inuse, rows_fn rows_of,
                         int reuse, int rev, out *no, size_t *nnew, tgW_map *ph, tg_term **t2)
{
    vec later = {0};        /* placeholder, then the output index + 1 */
    for (size_t i = 0; i < lv->n; i++) {
        if (!tgW_map_get(inuse, lph->v[i]))
            continue;
        tg_term *l = lv->v[i], *rows = tg_kind_of(l) == TG_SYMBOL ? rows_of(s, sc, l) : NULL;
        if (s->oom)
            return -1;
        if (rows) {
            if (tgW_map_put(ph, lph->v[i], rows) < 0)
                return s->oom = 1, -1;
            continue;
        }
        size_t j = 0;
        while (reuse && j < *nnew && !(no[j].res == l && !no[j].last && !no[j].keep))
            j++;
        if (!reuse || j == *nnew) {
            j = *nnew;
            memset(&no[j], 0, sizeof *no);
            no[j].kind = NITSOT, no[j].res = l;
            (*nnew)++;
        }
        if (push(s, &later, lph->v[i]) < 0 || push_any(s, &later, (tg_term *)(uintptr_t)(j + 1)) < 0)
            return -1;
    }
    out *old = sc->o;
    size_t nsc = sc->no;
    sc->o = no, sc->no = *nnew;
    tgSo_drop_inplace(s, sc);
    *t2 = *nnew ? tgSo_build(s, sc) : NULL;
    sc->o = old, sc->no = nsc;
    if (*nnew && !*t2)
        return -1;
    for (size_t i = 0; i < later.n; i += 2) {
        size_t j = (size_t)(uintptr_t)later.v[i + 1] - 1;
        tg_term *st = app2(s, N_SCAN_OUTPUT, *t2, tg_int(s->ctx, (int64_t)j));
        if (st && rev)
            st = reversed(s, st);
        if (!st || tgW_map_put(ph, later.v[i], st) < 0)
            return s->oom = 1, -1;
    }
    return 0;
}

/* push_output's rows: a sequence's own (with (steps auto): with N steps,
 * the first N rows would be a slice whose length the types do not know,
 * so the rows are stacked then), in the steps' order. */
static tg_term *output_rows(so *s, const scan *sc, tg_term *l)
{
    if (tg_nth(sc->steps, 1) != NM(s, N_AUTO))
        return NULL;
    tg_term *rows = tgSo_seq_rows(s, sc, l);
    return rows && tgSo_has_opt(s, sc, N_BACKWARDS) ? reversed(s, rows) : rows;
}

/* ---- work that ends a step, after the loop ------------------------------ */

/* Every node under t into set. */
static int node_set_fn(so *s, tg_term *node, void *ud)
{
    (void)s, (void)node, (void)ud;
    return 0;
}

/* A stacked nitsot output whose result ends in work that only it reads
 * (PyTensor's PushOutScanOutput): the work is done after the loop on the
 * stacks of what it reads, (dot W h_t) stacked as (dot H (transpose W)),
 * one matrix product, elementwise ops and reductions on whole stacks.
 * The stacks it reads: a stacked output that computes the value already,
 * a sequence's rows, or a new nitsot output. */
int tgSo_push_output(so *s, graph *g, use *u, tg_term **res)
{
    scan *sc = &u->sc;
    if (sc->until)
        return 0;
    for (size_t k = 0; k < sc->no; k++) {
        out *o = &sc->o[k];
        if (o->kind != NITSOT || o->last || o->keep || !u->used[k] || u->lastonly[k] ||
            (u->reach[k] > 0 && tgSo_runs_at_least(s, sc, u->reach[k])) || !tensor_op(s, o->res))
            continue;
        /* what the other results and the condition read stays in the loop */
        tgW_map avoid = {0};
        for (size_t i = 0; i < sc->no; i++)
            if (i != k && tgSo_walk(s, sc->o[i].res, &avoid, node_set_fn, NULL) < 0)
                return -1;
        if (sc->until && tgSo_walk(s, sc->until, &avoid, node_set_fn, NULL) < 0)
            return -1;
        if (tgW_map_get(&avoid, o->res))
            continue;
        tgW_map var = {0}, outm = {0}, used = {0}, env = {0};
        if (tgSo_param_maps(s, sc, &var, &var, &outm) < 0)
            return -1;
        rk outer = {s, {0}, NULL};
        if (tgSo_param_ranks(s, sc, &outer, &env) < 0 || tgSo_symbols(s, g->root, &used) < 0)
            return -1;
        stx x = {s, sc, {&var, NULL, {0}}, {s, {0}, &env}, &outer, &outm, 0, &avoid, &used, {0}, {0}, {0}};
        if (tgSo_dep_compute(s, &x.d, o->res) < 0)
            return -1;
        int moved = 0;
        tg_term *e = tgSo_st_of(&x, o->res, 0, &moved);
        if (s->oom)
            return -1;
        if (!e || !moved)
            continue;
        tgW_map inuse = {0};
        if (tgSo_symbols(s, e, &inuse) < 0)
            return -1;
        newouts w;
        tgW_map ph = {0};
        tg_term *t2;
        if (outputs_but(s, sc, k, NULL, x.lv.n, &w) < 0 ||
            stack_outputs(s, sc, &x.lv, &x.lph, &inuse, output_rows, 1, 0, w.o, &w.n, &ph, &t2) < 0)
            return -1;
        if (!(w.exprs[k] = tgSo_subst(s, e, &ph)))
            return -1;
        return (*res = tgSo_replace_x(s, g, u, sc->no, t2, w.map, NULL, w.exprs)) ? 1 : -1;
    }
    return 0;
}

/* ---- sums over the steps, after the loop ---------------------------- */

/* An accumulator (sitsot INIT last) whose step is (add acc E ...), acc
 * read nowhere else, holds INIT plus the sum of E over the steps.  Where
 * that sum is a linear map of stacked per-step values, it is computed
 * after the loop on the whole stacks: the sum of dot(a_t, W) is dot(sum a,
 * W) (PyTensor's PushOutDot1), the sum of the outer products a_t b_t' is
 * A' B, one GEMM (the BPTT weight gradient; PushOutScanOutput's sum).  The
 * per-step values are stacked by new nitsot outputs (a sequence's rows
 * are read from the sequence itself). */
typedef struct sumx {
    so *s;
    scan *sc;
    deps d;                 /* D_VAR: reads a sequence row or a tap */
    tgW_map *out;           /* non-sequence parameter -> its outer value */
    tgW_map *used;          /* every symbol in sight (fresh names) */
    tgW_map leaf;           /* stacked per-step term -> its placeholder */
    vec lv, lph;            /* the leaves met and their placeholders */
} sumx;

static int varying(sumx *x, tg_term *t) { return (tgSo_dep_get(x->s, &x->d, t) & (D_VAR | D_STUCK)) != 0; }

/* An invariant subterm of the step, over outer names. */
static tg_term *outside(sumx *x, tg_term *t) { return tgSo_subst(x->s, t, x->out); }

/* The placeholder of the stack of per-step values t over the steps. */
static tg_term *stack_of(sumx *x, tg_term *t)
{
    return tgSo_stack_leaf(x->s, x->used, &x->leaf, &x->lv, &x->lph, t);
}

/* (dimshuffle V (perm 0 x)) is a column of vector V (col 1), (dimshuffle
 * V (perm x 0)) a row (col 0): V, or NULL. */
static tg_term *vec_of(sumx *x, tg_term *t, int col)
{
    so *s = x->s;
    if (!is_app(t, NM(s, N_DIMSHUFFLE)) || tg_length(t) != 3)
        return NULL;
    tg_term *pm = tg_nth(t, 2);
    if (is_app(pm, NM(s, N_PERM)))
        pm = tg_cdr(s->ctx, pm);
    if (!is_pair(pm) || tg_length(pm) != 2)
        return NULL;
    tg_term *a = tg_nth(pm, 0), *b = tg_nth(pm, 1);
    int64_t z;
    tg_term *zero = col ? a : b, *xx = col ? b : a;
    return xx == NM(s, N_X) && tg_int_get(zero, &z) == 0 && z == 0 ? tg_nth(t, 1) : NULL;
}

/* The sum over the steps of the outer product of a column and a row, one
 * matrix product of their stacks; NULL when a and b are not such. */
static tg_term *outer_sum(sumx *x, tg_term *a, tg_term *b)
{
    tg_term *u = vec_of(x, a, 1), *v = vec_of(x, b, 0);
    if (!u || !v) {
        u = vec_of(x, b, 1), v = vec_of(x, a, 0);
        if (!u || !v)
            return NULL;
    }
    if (!varying(x, u) || !varying(x, v))
        return NULL;
    tg_term *U = stack_of(x, u), *V = stack_of(x, v);
    tg_term *tu = U ? app(x->s, N_TRANSPOSE, 1, &U) : NULL;
    return tu && V ? app2(x->s, N_DOT, tu, V) : NULL;
}

/* The sum over the steps of step term t, varying, over outer names and
 * placeholders of stacks; *gain set when a dot or an outer product moved
 * (else the caller keeps t in the loop).  Bounded depth: deeper terms
 * are summed as stacks. */
static tg_term *sum_of(sumx *x, tg_term *t, int depth, int *gain)
{
    so *s = x->s;
    int g = 0;
    tg_term *r = NULL;
    size_t n = 0;
    tg_term **v = depth < 32 && tensor_op(s, t) ? elems(s, t, &n) : NULL;
    if (s->oom)
        return NULL;
    tg_term *h = v ? v[0] : NULL;
    if (h == NM(s, N_ADD) || h == NM(s, N_SUB) || h == NM(s, N_NEG)) {
        int ok = (h != NM(s, N_SUB) || n == 3) && (h != NM(s, N_NEG) || n == 2);
        for (size_t i = 1; ok && i < n; i++)
            ok = varying(x, v[i]) && (v[i] = sum_of(x, v[i], depth + 1, &g)) != NULL;
        if (ok)
            r = list(s, n, v);
    } else if (h == NM(s, N_MUL) || (h == NM(s, N_DOT) && n == 3)) {
        size_t nv = 0, iv[2] = {0, 0};
        for (size_t i = 1; i < n; i++)
            if (varying(x, v[i]))
                iv[nv < 2 ? nv : 1] = i, nv++;
        for (size_t i = 1; i < n; i++)
            if (!varying(x, v[i]) && !(v[i] = outside(x, v[i])))
                return NULL;
        if (nv == 1 && (v[iv[0]] = sum_of(x, v[iv[0]], depth + 1, &g))) {
            g |= h == NM(s, N_DOT);
            r = list(s, n, v);
        } else if (nv == 2) {
            tg_term *o = outer_sum(x, v[iv[0]], v[iv[1]]);
            if (o) {
                g = 1;
                vec w = {0};
                for (size_t i = 1; i < n; i++)
                    if (i != iv[0] && i != iv[1] && push(s, &w, v[i]) < 0)
                        return NULL;
                if (push(s, &w, o) < 0)
                    return NULL;
                r = w.n == 1 ? o : app(s, N_MUL, w.n, w.v);
            }
        }
    } else if (h == NM(s, N_TRUE_DIV) && n == 3 && !varying(x, v[2])) {
        if ((v[1] = sum_of(x, v[1], depth + 1, &g)) && (v[2] = outside(x, v[2])))
            r = list(s, n, v);
    } else if ((h == NM(s, N_DIMSHUFFLE) || h == NM(s, N_TRANSPOSE) || h == NM(s, N_SUM) ||
                h == NM(s, N_MEAN)) && n >= 2) {
        /* linear in their tensor; the rest are axes, not tensors */
        if ((v[1] = sum_of(x, v[1], depth + 1, &g)))
            r = list(s, n, v);
    }
    if (s->oom)
        return NULL;
    if (r && g) {
        *gain = 1;
        return r;
    }
    tg_term *p = stack_of(x, t), *ax = tg_int(s->ctx, 0);
    tg_term *axes = p ? app(s, N_AXES, 1, &ax) : NULL;
    return axes ? app2(s, N_SUM, p, axes) : NULL;
}

int tgSo_push_sums(so *s, graph *g, use *u, tg_term **res)
{
    scan *sc = &u->sc;
    if (sc->until)
        return 0;
    for (size_t k = 0; k < sc->no; k++) {
        out *o = &sc->o[k];
        if (o->kind != SITSOT || !o->last || !u->used[k] || !is_app(o->res, NM(s, N_ADD)))
            continue;
        tg_term *acc = o->tp[0];
        size_t n;
        tg_term **a = elems(s, o->res, &n);
        if (!a)
            return -1;
        /* acc once among the operands, read by nothing else */
        size_t ia = 0, seen = 0;
        for (size_t i = 1; i < n; i++)
            if (a[i] == acc)
                ia = i, seen++;
        if (seen != 1)
            continue;
        tgW_map syms = {0};
        for (size_t i = 0; i < sc->no; i++)
            if (i != k && tgSo_symbols(s, sc->o[i].res, &syms) < 0)
                return -1;
        if (sc->until && tgSo_symbols(s, sc->until, &syms) < 0)
            return -1;
        for (size_t i = 1; i < n; i++)
            if (i != ia && tgSo_symbols(s, a[i], &syms) < 0)
                return -1;
        if (tgW_map_get(&syms, acc))
            continue;
        /* the step-varying parameters */
        tgW_map var = {0}, outm = {0}, used = {0};
        if (tgSo_param_maps(s, sc, &var, &var, &outm) < 0)
            return -1;
        if (tgSo_symbols(s, g->root, &used) < 0)
            return -1;
        sumx x = {s, sc, {&var, NULL, {0}}, &outm, &used, {0}, {0}, {0}};
        vec kept = {0}, moved = {0};
        if (push(s, &kept, acc) < 0)
            return -1;
        for (size_t i = 1; i < n; i++) {
            if (i == ia)
                continue;
            if (tgSo_dep_compute(s, &x.d, a[i]) < 0)
                return -1;
            int gain = 0;
            tg_term *e = varying(&x, a[i]) ? sum_of(&x, a[i], 0, &gain) : NULL;
            if (s->oom)
                return -1;
            int rc = e && gain ? push(s, &moved, e) : push(s, &kept, a[i]);
            if (rc < 0)
                return -1;
        }
        if (!moved.n)
            continue;
        /* the stacks the moved sums read: new nitsot outputs, or sequences */
        tgW_map inuse = {0};
        for (size_t i = 0; i < moved.n; i++)
            if (tgSo_symbols(s, moved.v[i], &inuse) < 0)
                return -1;
        /* output k keeps what stays in the loop, or goes when only acc does */
        tg_term *rk = kept.n == 1 ? NULL : app(s, N_ADD, kept.n, kept.v);
        newouts w;
        if ((kept.n > 1 && !rk) || outputs_but(s, sc, k, rk, x.lv.n, &w) < 0)
            return -1;
        /* the stacks in the sequences' order: a backwards scan's new
         * nitsots reversed (the pairs of an outer product meet in step) */
        tgW_map ph = {0};
        tg_term *t2;
        if (stack_outputs(s, sc, &x.lv, &x.lph, &inuse, tgSo_seq_rows, 0, tgSo_has_opt(s, sc, N_BACKWARDS), w.o,
                          &w.n, &ph, &t2) < 0)
            return -1;
        /* the reads of output k: what stays in the loop plus the sums */
        vec sum = {0};
        if (push(s, &sum, kept.n == 1 ? o->init : app2(s, N_SCAN_OUTPUT, t2, tg_int(s->ctx, w.map[k]))) < 0)
            return -1;
        for (size_t i = 0; i < moved.n; i++)
            if (push(s, &sum, tgSo_subst(s, moved.v[i], &ph)) < 0)
                return -1;
        if (!(w.exprs[k] = app(s, N_ADD, sum.n, sum.v)))
            return -1;
        return (*res = tgSo_replace_x(s, g, u, sc->no, t2, w.map, NULL, w.exprs)) ? 1 : -1;
    }
    return 0;
}
