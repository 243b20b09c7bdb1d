/* schedule.c - ordering, elementwise fusion and the buffer plan (module
 * prefix tgH_).  Fusion groups elementwise nodes by (shape, level): see
 * doc/kernels.md for why such groups never depend on themselves. */
#include "config.h"

#include <gc/gc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "codegen.h"
#include "error.h"
#include "index.h"
#include "schedule.h"
#include "random.h"
#include "scan.h"

static int *ints(size_t n, int fill)
{
    int *p = GC_MALLOC_ATOMIC((n ? n : 1) * sizeof *p);
    if (p)
        for (size_t i = 0; i < n; i++)
            p[i] = fill;
    return p;
}

/* Each node's users in g, an output counting as two (so a node that is
 * an output never counts as used once); NULL when out of memory. */
static int *user_counts(const tgV_graph *g)
{
    int *users = ints((size_t)g->n, 0);
    if (!users)
        return NULL;
    for (int v = 0; v < g->n; v++)
        for (int i = 0; i < g->nodes[v].nargs; i++)
            users[g->nodes[v].args[i]]++;
    for (int i = 0; i < g->noutputs; i++)
        users[g->outputs[i]] += 2;
    return users;
}

static bool is_leaf(const tgV_node *n) { return n->op == TGV_INPUT || n->op == TGV_CONST; }

static uint64_t cluster_hash(const tgV_node *n, int level)
{
    uint64_t h = (uint64_t)level * 0x9E3779B97F4A7C15ull ^ (uint64_t)n->ndim;
    for (int d = 0; d < n->ndim; d++)
        h = (h ^ (uint64_t)n->shape[d]) * 0xBF58476D1CE4E5B9ull;
    return h ^ h >> 31;
}

static bool same_shape(const tgV_node *a, const tgV_node *b)
{
    return a->ndim == b->ndim && memcmp(a->shape, b->shape, (size_t)a->ndim * sizeof *a->shape) == 0;
}

/* ---- alpha*dot(A,B) + beta*C as one GEMM ------------------------------ */

/* t as [scalars...] * dot: the dot node, scalars appended to sc. */
static int scaled_dot(const tgV_graph *g, int t, const int *users, int *sc, int *nsc)
{
    const tgV_node *n = &g->nodes[t];
    if (n->op == TGV_DOT)
        return t;
    if (n->op != TGV_MUL || users[t] != 1)
        return -1;
    int d = -1, k = *nsc;
    for (int i = 0; i < n->nargs; i++) {
        int a = n->args[i];
        if (g->nodes[a].op == TGV_DOT && d < 0)
            d = a;
        else if (g->nodes[a].ndim == 0)
            sc[k++] = a;
        else
            return -1;
    }
    if (d >= 0)
        *nsc = k;
    return d;
}

/* c as [scalars...] * C: C, with the scalars appended to sc. */
static int scaled_value(const tgV_graph *g, int c, const int *users, int *sc, int *nsc)
{
    const tgV_node *n = &g->nodes[c];
    if (n->op != TGV_MUL || users[c] != 1)
        return c;
    int x = -1, k = *nsc;
    for (int i = 0; i < n->nargs; i++) {
        int a = n->args[i];
        if (g->nodes[a].ndim == 0)
            sc[k++] = a;
        else if (x < 0)
            x = a;
        else
            return c;   /* two array factors: a product, not a scaling */
    }
    if (x < 0)
        return c;
    *nsc = k;
    return x;
}

/* Rewrite (add [s*]dot(A,B) [s*]C) with dot of two matrices into one
 * GEMM node when the dot and the products are used nowhere else. */
static int fuse_gemm(tgV_graph *g)
{
    int *users = user_counts(g);
    if (!users)
        return -1;
    for (int v = 0; v < g->n; v++) {
        tgV_node *n = &g->nodes[v];
        if (n->op != TGV_ADD || n->nargs != 2 || !tgV_is_float(n->dtype))
            continue;
        for (int w = 0; w < 2; w++) {
            int t = n->args[w], c = n->args[1 - w];
            int sc[2 * 64], na = 0, nb;
            if (g->nodes[t].nargs > 64 || g->nodes[c].nargs > 64)
                continue;
            int d = scaled_dot(g, t, users, sc, &na);
            if (d < 0 || users[d] != 1 || g->nodes[d].ndim != 2 || g->nodes[d].dtype != n->dtype ||
                !same_shape(&g->nodes[d], n))
                continue;
            nb = na;
            int x = scaled_value(g, c, users, sc, &nb);
            int *args = GC_MALLOC_ATOMIC((size_t)(3 + nb) * sizeof *args);
            if (!args)
                return -1;
            args[0] = g->nodes[d].args[0], args[1] = g->nodes[d].args[1], args[2] = x;
            memcpy(args + 3, sc, (size_t)nb * sizeof *args);
            g->nodes[d].dead = true;
            if (t != d)
                g->nodes[t].dead = true;
            if (x != c)
                g->nodes[c].dead = true;
            n->op = TGV_GEMM, n->args = args, n->nargs = 3 + nb, n->nalpha = na;
            break;
        }
    }
    return 0;
}

/* Node a as (dimshuffle V (0 x)) (col) or (dimshuffle V (x 0)) (!col)
 * of a vector V of a's dtype: V, else -1. */
static int outer_side(const tgV_graph *g, int a, bool col)
{
    const tgV_node *n = &g->nodes[a];
    if (n->op != TGV_DIMSHUFFLE || n->ndim != 2)
        return -1;
    const tgV_node *v = &g->nodes[n->args[0]];
    if (v->ndim != 1 || v->dtype != n->dtype)
        return -1;
    bool ok = col ? n->perm[0] == 0 && n->perm[1] == -1 : n->perm[0] == -1 && n->perm[1] == 0;
    return ok ? n->args[0] : -1;
}

/* Rewrite (add C (mul (dimshuffle U (0 x)) (dimshuffle V (x 0)))), in
 * any order, into a GEMM node of the two vectors (args U V C, no
 * scalars): C + U V^T, a rank-one update (BLAS ger) that never makes the
 * product, when the product is used nowhere else.  An outer product
 * accumulated per step in a scan (a weight's gradient not pushed out of
 * the loop) is this.  Only where the graph asks (g->ger_steps): a scan's
 * body, whose C is its state updated in place step after step, and the
 * interpreter, whose elementwise loop is slower than BLAS.  A compiled
 * function outside a scan keeps C + u v^T a fused loop: one pass over C
 * and the result (on the OpenMP threads), where the ger step copies C
 * into the result and then updates it, two (bench/kernels ger measured
 * the loop faster at every size from 300 x 300 to 3000 x 3000). */
static int fuse_ger(tgV_graph *g)
{
    if (!g->ger_steps)
        return 0;
    int *users = user_counts(g);
    if (!users)
        return -1;
    for (int v = 0; v < g->n; v++) {
        tgV_node *n = &g->nodes[v];
        if (n->op != TGV_ADD || n->nargs != 2 || !tgV_is_float(n->dtype) || n->ndim != 2 || n->dead)
            continue;
        for (int w = 0; w < 2; w++) {
            int t = n->args[w], c = n->args[1 - w], u = -1, x = -1, q;
            const tgV_node *tn = &g->nodes[t];
            if (tn->op != TGV_MUL || tn->nargs != 2 || users[t] != 1 || tn->dtype != n->dtype ||
                !same_shape(tn, n) || g->nodes[c].dtype != n->dtype)
                continue;
            for (q = 0; q < 2 && (u < 0 || x < 0); q++)
                u = outer_side(g, tn->args[q], true), x = outer_side(g, tn->args[1 - q], false);
            if (u < 0 || x < 0)
                continue;
            int *args = GC_MALLOC_ATOMIC(3 * sizeof *args);
            if (!args)
                return -1;
            for (int i = 0; i < 2; i++)
                if (users[tn->args[i]] == 1)
                    g->nodes[tn->args[i]].dead = true;
            g->nodes[t].dead = true;
            args[0] = u, args[1] = x, args[2] = c;
            n->op = TGV_GEMM, n->args = args, n->nargs = 3, n->nalpha = 0;
            break;
        }
    }
    return 0;
}

static bool is_reduction(tgV_op op) { return op >= TGV_SUM && op <= TGV_MEAN; }

/* Whether a reduction of node a can be accumulated in the loop computing
 * a: a is computed by a fused loop (an elementwise node of a cluster). */
static bool fusable_source(const tgV_graph *g, int a, const int *unit)
{
    return !g->keep_reductions && a >= 0 && unit[a] >= 0 && tgV_elementwise(g->nodes[a].op) &&
           !g->nodes[a].dead;
}

/* unit[v]: the step computing v (-1 for leaves); returns the unit count. */
static int assign_units(const tgV_graph *g, int *unit, int *level)
{
    size_t cap = 64;
    while (cap < 2 * (size_t)g->n + 2)
        cap *= 2;
    int *tab = ints(cap, -1);   /* cluster -> its first node, by hash */
    int *tabu = ints(cap, -1);
    int *tabl = ints(cap, 0);
    if (!tab || !tabu || !tabl)
        return -1;
    int units = 0;
    for (int v = 0; v < g->n; v++) {
        const tgV_node *n = &g->nodes[v];
        int lv = 0;
        for (int i = 0; i < n->nargs; i++) {
            int a = n->args[i];
            const tgV_node *an = &g->nodes[a];
            int l = level[a] + (!is_leaf(an) && !tgV_elementwise(an->op));
            lv = l > lv ? l : lv;
        }
        level[v] = lv;
        if (is_leaf(n) || n->dead) {
            unit[v] = -1;
            continue;
        }
        if (n->op == TGV_SCAN && v > 0 && g->nodes[v - 1].scan == n->scan) {
            unit[v] = unit[v - 1];  /* one step computes all of a scan's nodes */
            continue;
        }
        if (!tgV_elementwise(n->op)) {
            int a = n->nargs ? n->args[0] : -1;
            /* a reduction of a loop member joins its loop (levels stay
             * right: its users are a level up, so the loop never needs it) */
            unit[v] = is_reduction(n->op) && fusable_source(g, a, unit) ? unit[a] : units++;
            continue;
        }
        size_t i = cluster_hash(n, lv) & (cap - 1);
        for (; tab[i] >= 0; i = (i + 1) & (cap - 1))
            if (tabl[i] == lv && same_shape(&g->nodes[tab[i]], n))
                break;
        if (tab[i] < 0)
            tab[i] = v, tabl[i] = lv, tabu[i] = units++;
        unit[v] = tabu[i];
    }
    return units;
}

/* Fuse the loop computing an update's value into the update
 * (TGH_UPDATE_LOOP): for (inc_subtensor X V IDX ...) or set_subtensor
 * whose V is elementwise, when V's cluster is read from outside only by
 * that update (V once, no other member, no output, no fused reduction)
 * and does not read X (which the update may overwrite in place).  Then
 * nothing else waits on the cluster, so the merged unit depends on no
 * unit that depends on it.  upd[u] is the update node of merged unit u
 * (else -1); the units are renumbered densely; returns their count. */
static int fuse_updates(const tgV_graph *g, int *unit, int nu, int *upd)
{
    int *ext = ints((size_t)g->n, 0), *size = ints((size_t)nu, 0), *bad = ints((size_t)nu, 0);
    int *into = ints((size_t)nu, -1), *ren = ints((size_t)nu, -1);
    if (!ext || !size || !bad || !into || !ren)
        return -1;
    for (int v = 0; v < g->n; v++) {
        const tgV_node *n = &g->nodes[v];
        if (unit[v] < 0)
            continue;
        size[unit[v]]++;
        if (!tgV_elementwise(n->op))
            bad[unit[v]] = 1;   /* a fused reduction, or not a loop at all */
        for (int i = 0; i < n->nargs; i++)
            if (unit[n->args[i]] != unit[v])
                ext[n->args[i]]++;
    }
    for (int i = 0; i < g->noutputs; i++)
        ext[g->outputs[i]] += 2;
    for (int v = 0; v < g->n; v++) {
        const tgV_node *n = &g->nodes[v];
        if (unit[v] < 0 || n->dead || (n->op != TGV_INC_SUBTENSOR && n->op != TGV_SET_SUBTENSOR))
            continue;
        int val = n->args[1], c = unit[val];
        if (c < 0 || bad[c] || ext[val] != 1 || into[c] >= 0 || size[c] > TGJ_MAX_NODES ||
            !tgV_elementwise(g->nodes[val].op) || g->nodes[val].dead)
            continue;
        for (int i = 2; i < n->nargs; i++)
            if (n->args[i] == val)
                goto next;
        into[c] = v;
    next:;
    }
    /* the other members: read by their cluster only; X not read */
    for (int v = 0; v < g->n; v++) {
        int c = unit[v];
        if (c < 0 || into[c] < 0)
            continue;
        const tgV_node *u = &g->nodes[into[c]], *n = &g->nodes[v];
        if (v != u->args[1] && ext[v] > 0)
            into[c] = -1;
        for (int i = 0; into[c] >= 0 && i < n->nargs; i++)
            if (n->args[i] == u->args[0])
                into[c] = -1;
    }
    for (int v = 0; v < g->n; v++)
        if (unit[v] >= 0 && into[unit[v]] >= 0)
            unit[v] = unit[into[unit[v]]];
    int k = 0;
    for (int c = 0; c < nu; c++)
        upd[c] = -1;
    for (int v = 0; v < g->n; v++) {
        int c = unit[v];
        if (c < 0)
            continue;
        if (ren[c] < 0)
            ren[c] = k++;
        unit[v] = ren[c];
    }
    for (int c = 0; c < nu; c++)
        if (into[c] >= 0)
            upd[unit[into[c]]] = into[c];
    return k;
}

/* Order units topologically (Kahn, FIFO seeded in node order, so the
 * result is deterministic); order[k] is the k-th unit. */
static int order_units(const tgV_graph *g, const int *unit, int nu, int *order)
{
    int *indeg = ints((size_t)nu, 0), *first = ints((size_t)nu, -1);
    int *nedge = ints((size_t)nu + 1, 0);
    if (!indeg || !first || !nedge)
        return -1;
    /* edges u' -> u, counted then stored (CSR) */
    size_t ne = 0;
    for (int v = 0; v < g->n; v++)
        if (unit[v] >= 0) {
            if (first[unit[v]] < 0)
                first[unit[v]] = v;
            for (int i = 0; i < g->nodes[v].nargs; i++) {
                int u2 = unit[g->nodes[v].args[i]];
                if (u2 >= 0 && u2 != unit[v])
                    nedge[u2 + 1]++, ne++;
            }
        }
    for (int u = 0; u < nu; u++)
        nedge[u + 1] += nedge[u];
    int *edge = ints(ne, 0), *fill = ints((size_t)nu, 0);
    if (!edge || !fill)
        return -1;
    for (int v = 0; v < g->n; v++)
        if (unit[v] >= 0)
            for (int i = 0; i < g->nodes[v].nargs; i++) {
                int u2 = unit[g->nodes[v].args[i]];
                if (u2 >= 0 && u2 != unit[v]) {
                    edge[nedge[u2] + fill[u2]++] = unit[v];
                    indeg[unit[v]]++;
                }
            }
    int head = 0, tail = 0;
    for (int v = 0; v < g->n; v++)   /* seed in order of first node */
        if (unit[v] >= 0 && first[unit[v]] == v && indeg[unit[v]] == 0)
            order[tail++] = unit[v];
    while (head < tail) {
        int u = order[head++];
        for (int e = nedge[u]; e < nedge[u + 1]; e++)
            if (--indeg[edge[e]] == 0)
                order[tail++] = edge[e];
    }
    return tail == nu ? 0 : -1;
}

/* Fill the steps from the unit order. */
static int make_steps(tgH_sched *s, const int *unit, int nu, const int *order, const int *upd)
{
    const tgV_graph *g = s->g;
    int *pos = ints((size_t)nu, 0), *count = ints((size_t)nu, 0), *nargs = ints((size_t)nu, 0);
    int *inmark = ints((size_t)g->n, -1);
    bool *used_out = GC_MALLOC_ATOMIC((size_t)g->n + 1);
    if (!pos || !count || !nargs || !inmark || !used_out)
        return -1;
    memset(used_out, 0, (size_t)g->n + 1);
    for (int k = 0; k < nu; k++)
        pos[order[k]] = k;
    for (int v = 0; v < g->n; v++) {
        if (g->nodes[v].dead)
            continue;
        if (unit[v] >= 0) {
            count[unit[v]]++;
            nargs[unit[v]] += g->nodes[v].nargs;
        }
        for (int i = 0; i < g->nodes[v].nargs; i++)
            if (unit[g->nodes[v].args[i]] != unit[v] || unit[v] < 0)
                used_out[g->nodes[v].args[i]] = true;
    }
    for (int i = 0; i < g->noutputs; i++)
        used_out[g->outputs[i]] = true;
    s->steps = GC_MALLOC((size_t)(nu ? nu : 1) * sizeof *s->steps);
    if (!s->steps)
        return -1;
    s->nsteps = nu;
    for (int v = 0; v < g->n; v++) {
        if (unit[v] < 0)
            continue;
        tgH_step *st = &s->steps[pos[unit[v]]];
        const tgV_node *n = &g->nodes[v];
        if (!st->nodes) {
            st->node = v;
            st->kind = upd[unit[v]] >= 0 ? TGH_UPDATE_LOOP
                     : tgV_elementwise(n->op) ? TGH_LOOP
                     : n->op == TGV_DOT ? TGH_DOT
                     : n->op == TGV_GEMM ? TGH_GEMM
                     : n->op == TGV_SCAN ? TGH_SCAN
                     : n->op == TGV_RANDOM ? TGH_RANDOM
                     : n->op == TGV_INC_SUBTENSOR || n->op == TGV_SET_SUBTENSOR || n->op == TGV_INC_TAKE
                         ? TGH_UPDATE
                     : n->op == TGV_RESHAPE ? TGH_RESHAPE
                     : n->op == TGV_TRANSPOSE || n->op == TGV_DIMSHUFFLE || n->op == TGV_SUBTENSOR
                         ? TGH_VIEW : TGH_REDUCE;
            int c = count[unit[v]];
            st->nodes = ints((size_t)c, -1);
            st->outs = ints((size_t)c, -1);
            st->reds = ints((size_t)c, -1);
            /* a loop reads at most every argument of every member */
            st->ins = ints((size_t)nargs[unit[v]], -1);
            if (!st->nodes || !st->outs || !st->ins || !st->reds)
                return -1;
            if (st->kind == TGH_UPDATE_LOOP)
                st->node = upd[unit[v]];
        }
        if (st->kind == TGH_LOOP && !tgV_elementwise(n->op)) {
            st->reds[st->nreds++] = v;  /* its source is a member: nothing to read */
            continue;
        }
        if (st->kind != TGH_UPDATE_LOOP || v != st->node)    /* the update itself is no loop member */
            st->nodes[st->nnodes++] = v;
        if (used_out[v])
            st->outs[st->nouts++] = v;
        for (int i = 0; i < n->nargs; i++) {
            int a = n->args[i];
            if (unit[a] == unit[v] && unit[v] >= 0)
                continue;
            if (inmark[a] != unit[v]) {   /* not yet read by this step */
                inmark[a] = unit[v];
                st->ins[st->nins++] = a;
            }
        }
    }
    return 0;
}

/* The INIT node whose buffer scan output node v may take: v is a
 * recurrent last output marked (inplace K) (*row set for a mitsot: its
 * final value goes in INIT's first row), or a mitmot output whose INIT is
 * no other argument of the scan; -1 otherwise.  Safe because the scan
 * reads INIT only before it writes a last output (the final value is
 * stored after the loop; state lives in a ring or in locals), and a
 * mitmot's buffer starts as INIT's copy: INIT's own buffer, the copy
 * skipped. */
static int scan_donor(const tgV_graph *g, int v, bool *row)
{
    const tgV_node *n = &g->nodes[v];
    *row = false;
    if (n->op != TGV_SCAN || n->sout < 0)
        return -1;
    const tgSc_out *o = &n->scan->outs[n->sout];
    if (o->kind == TGSC_MITMOT) {
        for (int i = 0; i < n->nargs; i++)
            if (i != o->arg && n->args[i] == n->args[o->arg])
                return -1;
        return n->args[o->arg];
    }
    *row = o->kind == TGSC_MITSOT;
    return o->inplace && o->kind != TGSC_NITSOT && o->last ? n->args[o->arg] : -1;
}

/* Is b's shape a's without its leading axis (b a row of a)? */
static bool row_shape(const tgV_node *a, const tgV_node *b)
{
    return a->ndim == b->ndim + 1 && memcmp(a->shape + 1, b->shape, (size_t)b->ndim * sizeof *b->shape) == 0;
}

/* The X whose buffer update node v (an inc_subtensor or set_subtensor;
 * an inc_take, a concatenate_inc or stack_inc, arrange.c) may take: the
 * result is X with a part changed, so when X dies at that step the copy
 * is skipped and only the part is written.  Not when another argument is
 * X itself (a view of X makes X viewed). */
static int update_donor(const tgV_graph *g, int v)
{
    const tgV_node *n = &g->nodes[v];
    if (n->op != TGV_INC_SUBTENSOR && n->op != TGV_SET_SUBTENSOR && n->op != TGV_INC_TAKE &&
        n->op != TGV_CONCAT_INC && n->op != TGV_STACK_INC)
        return -1;
    for (int i = 1; i < n->nargs; i++)
        if (n->args[i] == n->args[0])
            return -1;
    return n->args[0];
}

/* Slots: reuse dead ones, write in place on a last use. */
static int plan_buffers(tgH_sched *s, const unsigned char *kept)
{
    const tgV_graph *g = s->g;
    int *last = ints((size_t)g->n, -1), *viewed = ints((size_t)g->n, 0);
    int *freelist = ints((size_t)g->n + 1, -1);
    s->slot = ints((size_t)g->n, -1);
    s->inplace = ints((size_t)g->n, -1);
    s->output = ints((size_t)g->n, -1);
    s->base = ints((size_t)g->n, -1);
    if (!last || !viewed || !freelist || !s->slot || !s->inplace || !s->output || !s->base)
        return -1;
    for (int i = g->noutputs - 1; i >= 0; i--)
        s->output[g->outputs[i]] = i;
    for (int v = 0; v < g->n; v++) {
        tgV_op op = g->nodes[v].op;
        s->base[v] = op == TGV_TRANSPOSE || op == TGV_DIMSHUFFLE || op == TGV_RESHAPE || op == TGV_SUBTENSOR
                         ? s->base[g->nodes[v].args[0]] : v;
        if (s->base[v] != v)
            viewed[s->base[v]] = 1;
    }
    for (int k = 0; k < s->nsteps; k++)
        for (int j = 0; j < s->steps[k].nins; j++) {
            int a = s->steps[k].ins[j];
            last[a] = k;
            if (last[s->base[a]] < k)
                last[s->base[a]] = k;
        }
    /* views keep their base alive as long as they are read */
    for (int v = g->n - 1; v >= 0; v--)
        if (s->base[v] != v && last[v] > last[s->base[v]])
            last[s->base[v]] = last[v];
    for (int i = 0; i < g->noutputs; i++)
        last[s->base[g->outputs[i]]] = s->nsteps;
    int nfree = 0;
    for (int k = 0; k < s->nsteps; k++) {
        tgH_step *st = &s->steps[k];
        bool many = st->kind == TGH_LOOP || st->kind == TGH_SCAN;
        int *produced = many ? st->outs : &st->node;
        int np = many ? st->nouts + (st->kind == TGH_LOOP ? st->nreds : 0) : 1;
        for (int j = 0; j < np; j++) {
            /* a loop's fused reductions are produced after its stores */
            int v = st->kind == TGH_LOOP && j >= st->nouts ? st->reds[j - st->nouts] : produced[j];
            const tgV_node *n = &g->nodes[v];
            if (st->kind == TGH_VIEW || (s->output[v] >= 0 && st->kind != TGH_RESHAPE))
                continue;
            bool row = false;
            int taken = -1, donor = st->kind == TGH_SCAN ? scan_donor(g, v, &row)
                                  : st->kind == TGH_UPDATE || st->kind == TGH_UPDATE_LOOP || st->kind == TGH_REDUCE
                                      ? update_donor(g, v) : -1;
            bool may = (st->kind == TGH_LOOP && j < st->nouts) || donor >= 0;
            for (int i = 0; may && i < st->nins && taken < 0; i++) {
                int a = st->ins[i];
                if (donor >= 0 && a != donor)
                    continue;
                const tgV_node *an = &g->nodes[a];
                if (last[a] != k || viewed[a] || s->base[a] != a || !(row ? row_shape(an, n) : same_shape(an, n)) ||
                    tgV_dtype_size(an->dtype) != tgV_dtype_size(n->dtype))
                    continue;
                if (s->slot[a] >= 0)
                    taken = a;
                else if (an->op == TGV_INPUT && kept && !kept[an->input] && s->inplace[v] < 0) {
                    s->inplace[v] = a;
                    last[a] = -3;   /* one writer per donated input */
                }
            }
            if (taken >= 0) {
                s->slot[v] = s->slot[taken];
                last[taken] = -2;   /* its slot moved on: do not free it */
                continue;
            }
            s->slot[v] = nfree ? freelist[--nfree] : s->nslots++;
        }
        /* free what died here */
        for (int i = 0; i < st->nins; i++) {
            int a = s->base[st->ins[i]];
            if (last[a] == k && s->slot[a] >= 0) {
                freelist[nfree++] = s->slot[a];
                last[a] = -2;
            }
        }
    }
    return 0;
}

/* Elementwise nodes no output needs are dead: a fill's model, typed
 * for its type alone, is never computed.  Nodes are in topological
 * order, so one pass from the last marks what the outputs read. */
static int mark_unused(tgV_graph *g)
{
    unsigned char *live = GC_MALLOC_ATOMIC((size_t)g->n + 1);
    if (!live)
        return -1;
    memset(live, 0, (size_t)g->n + 1);
    for (int i = 0; i < g->noutputs; i++)
        live[g->outputs[i]] = 1;
    for (int v = g->n - 1; v >= 0; v--) {
        tgV_node *n = &g->nodes[v];
        if (!live[v] && tgV_elementwise(n->op)) {
            n->dead = true;
            continue;
        }
        for (int i = 0; i < n->nargs; i++)
            live[n->args[i]] = 1;
    }
    return 0;
}

tgH_sched *tgH_schedule(tgV_graph *g, const unsigned char *kept, tg_error *err)
{
    tgH_sched *s = GC_MALLOC(sizeof *s);
    int *unit = ints((size_t)g->n, -1), *level = ints((size_t)g->n, 0);
    if (!s || !unit || !level)
        return tgE_nomem(err), NULL;
    s->g = g;
    if (mark_unused(g) < 0 || fuse_gemm(g) < 0 || fuse_ger(g) < 0)
        return tgE_nomem(err), NULL;
    int nu = assign_units(g, unit, level);
    int *upd = nu >= 0 ? ints((size_t)nu, -1) : NULL;
    if (upd && !g->keep_reductions)     /* not in a scan's body, whose steps scan.c reads as they are */
        nu = fuse_updates(g, unit, nu, upd);
    int *order = nu >= 0 && upd ? ints((size_t)nu, -1) : NULL;
    if (nu < 0 || !order || order_units(g, unit, nu, order) < 0 ||
        make_steps(s, unit, nu, order, upd) < 0 || plan_buffers(s, kept) < 0)
        return tgE_nomem(err), NULL;
    return s;
}

/* ---- the schedule as a term ------------------------------------------- */

static void put_name(const tgH_sched *s, tgB_buf *b, int v)
{
    const tgV_node *n = &s->g->nodes[v];
    if (n->op == TGV_INPUT) {
        size_t len;
        const char *name = tg_symbol_name(tg_nth(n->term, 1), &len);
        if (name) {
            tgB_append(b, name, len);
            return;
        }
    }
    if (n->op == TGV_CONST) {
        char *p = tg_print(n->term, NULL);
        if (p) {
            tgB_puts(b, p);
            free(p);
            return;
        }
    }
    tgB_printf(b, "%%%d", v);
}

static void put_shape(const tgH_sched *s, tgB_buf *b, const tgV_node *n)
{
    tgB_putc(b, '(');
    for (int d = 0; d < n->ndim; d++) {
        if (d)
            tgB_putc(b, ' ');
        if (n->shape[d] >= 0) {
            tgB_printf(b, "%lld", (long long)n->shape[d]);
        } else {
            size_t len;
            const char *name = tg_symbol_name(s->g->syms[-n->shape[d] - 1], &len);
            tgB_append(b, name, len);
        }
    }
    tgB_putc(b, ')');
}

/* A subtensor's indices as written: integers, index nodes, slices. */
static void put_indices(const tgH_sched *s, tgB_buf *b, const tgV_node *n)
{
    for (int d = 0; d < n->index->n; d++) {
        const tgIx_axis *a = &n->index->ax[d];
        tgB_putc(b, ' ');
        if (a->kind == TGIX_DYNAMIC) {
            put_name(s, b, n->args[a->arg]);
        } else if (a->kind == TGIX_INDEX) {
            tgB_printf(b, "%lld", (long long)a->start);
        } else {
            const int64_t *v[3] = {a->has_start ? &a->start : NULL, a->has_stop ? &a->stop : NULL,
                                   a->has_step ? &a->step : NULL};
            tgB_puts(b, "(slice");
            for (int k = 0; k < 3; k++)
                if (v[k])
                    tgB_printf(b, " %lld", (long long)*v[k]);
                else
                    tgB_puts(b, " none");
            tgB_putc(b, ')');
        }
    }
}

/* (%k (op arg ... params)) */
static void put_op(const tgH_sched *s, tgB_buf *b, int v)
{
    const tgV_node *n = &s->g->nodes[v];
    if (n->op == TGV_SUBTENSOR || n->op == TGV_INC_SUBTENSOR || n->op == TGV_SET_SUBTENSOR) {
        tgB_putc(b, '(');
        put_name(s, b, v);
        tgB_printf(b, " (%s ", tgV_op_name(n->op));
        put_name(s, b, n->args[0]);
        if (n->op != TGV_SUBTENSOR) {
            tgB_putc(b, ' ');
            put_name(s, b, n->args[1]);
        }
        put_indices(s, b, n);
        tgB_puts(b, "))");
        return;
    }
    /* a rank-one update (fuse_ger): (ger U V C), C + U V^T */
    bool ger = n->op == TGV_GEMM && s->g->nodes[n->args[0]].ndim == 1;
    tgB_putc(b, '(');
    put_name(s, b, v);
    tgB_printf(b, " (%s", ger ? "ger" : tgV_node_op_name(n));
    if (n->op == TGV_CAST)
        tgB_printf(b, " %s", tgV_dtype_name(n->dtype));
    if (n->op == TGV_RANDOM)
        tgB_printf(b, " %s", tgRn_kind_name(n->rkind));
    for (int i = 0; i < n->nargs; i++) {
        if (n->op == TGV_GEMM && (i == 3 || i == 3 + n->nalpha))
            tgB_puts(b, i == 3 ? " (alpha" : ") (beta");
        if (n->op == TGV_GEMM && i == 3 + n->nalpha && i == 3)
            tgB_puts(b, ") (beta");
        tgB_putc(b, ' ');
        put_name(s, b, n->args[i]);
    }
    if (n->op == TGV_GEMM && !ger)
        tgB_puts(b, n->nargs == 3 ? " (alpha) (beta)" : n->nargs == 3 + n->nalpha ? ") (beta)" : ")");
    if (n->op >= TGV_SUM && n->op <= TGV_MEAN) {
        tgB_puts(b, " (");
        const tgV_node *x = &s->g->nodes[n->args[0]];
        for (int d = 0, k = 0; d < x->ndim; d++)
            if (n->axes & (1u << d))
                tgB_printf(b, k++ ? " %d" : "%d", d);
        tgB_putc(b, ')');
    }
    if (n->op == TGV_TRANSPOSE || n->op == TGV_DIMSHUFFLE) {
        tgB_puts(b, " (");
        for (int d = 0; d < n->ndim; d++)
            if (n->perm[d] < 0)
                tgB_puts(b, d ? " x" : "x");
            else
                tgB_printf(b, d ? " %d" : "%d", n->perm[d]);
        tgB_putc(b, ')');
    }
    if (n->op == TGV_RESHAPE || n->op == TGV_ALLOC) {
        tgB_putc(b, ' ');
        put_shape(s, b, n);
    }
    tgB_puts(b, "))");
}

static void put_dest(const tgH_sched *s, tgB_buf *b, int v)
{
    if (s->output[v] >= 0)
        tgB_printf(b, " (output %d)", s->output[v]);
    if (s->slot[v] >= 0)
        tgB_printf(b, " (slot %d)", s->slot[v]);
    if (s->inplace[v] >= 0) {
        tgB_puts(b, " (inplace ");
        put_name(s, b, s->inplace[v]);
        tgB_putc(b, ')');
    }
}

/* The value loop of a fused update: " (in A ...) (ops (%k (op ...)) ...)",
 * the inputs being those its members read. */
static void put_fused_value(const tgH_sched *s, tgB_buf *b, const tgH_step *st)
{
    tgB_puts(b, " (in");
    for (int i = 0; i < st->nins; i++)
        if (tgH_value_reads(s, st, st->ins[i])) {
            tgB_putc(b, ' ');
            put_name(s, b, st->ins[i]);
        }
    tgB_puts(b, ") (ops");
    for (int i = 0; i < st->nnodes; i++) {
        tgB_putc(b, ' ');
        put_op(s, b, st->nodes[i]);
    }
    tgB_putc(b, ')');
}

bool tgH_value_reads(const tgH_sched *s, const tgH_step *st, int a)
{
    for (int j = 0; j < st->nnodes; j++) {
        const tgV_node *n = &s->g->nodes[st->nodes[j]];
        for (int i = 0; i < n->nargs; i++)
            if (n->args[i] == a)
                return true;
    }
    return false;
}

tg_term *tgH_term(const tgH_sched *s, tg_error *err)
{
    const tgV_graph *g = s->g;
    tgB_buf b;
    tgB_init(&b);
    tgB_puts(&b, "(schedule (inputs");
    for (int i = 0; i < g->ninputs; i++) {
        const tgV_node *n = &g->nodes[g->inputs[i]];
        tgB_puts(&b, " (");
        put_name(s, &b, g->inputs[i]);
        tgB_printf(&b, " %s ", tgV_dtype_name(n->dtype));
        put_shape(s, &b, n);
        tgB_putc(&b, ')');
    }
    tgB_putc(&b, ')');
    static const char *const kinds[] = {"loop", "reduce", "dot", "view", "reshape", "gemm", "scan", "random",
                                        "update", "update"};
    for (int k = 0; k < s->nsteps; k++) {
        const tgH_step *st = &s->steps[k];
        bool ger = st->kind == TGH_GEMM && g->nodes[g->nodes[st->node].args[0]].ndim == 1;
        tgB_printf(&b, "\n  (%s", ger ? "ger" : kinds[st->kind]);
        if (st->kind == TGH_SCAN) {
            tgSc_put_step(&b, s, k);
        } else if (st->kind == TGH_LOOP) {
            tgB_putc(&b, ' ');
            put_shape(s, &b, &g->nodes[st->node]);
            tgB_puts(&b, " (in");
            for (int i = 0; i < st->nins; i++) {
                tgB_putc(&b, ' ');
                put_name(s, &b, st->ins[i]);
            }
            tgB_puts(&b, ") (out");
            for (int i = 0; i < st->nouts; i++) {
                int v = st->outs[i];
                tgB_puts(&b, " (");
                put_name(s, &b, v);
                tgB_printf(&b, " %s", tgV_dtype_name(g->nodes[v].dtype));
                put_dest(s, &b, v);
                tgB_putc(&b, ')');
            }
            tgB_puts(&b, ") (ops");
            for (int i = 0; i < st->nnodes; i++) {
                tgB_putc(&b, ' ');
                put_op(s, &b, st->nodes[i]);
            }
            tgB_putc(&b, ')');
            for (int i = 0; i < st->nreds; i++) {
                tgB_puts(&b, " (reduce ");
                put_op(s, &b, st->reds[i]);
                tgB_printf(&b, " %s", tgV_dtype_name(g->nodes[st->reds[i]].dtype));
                put_dest(s, &b, st->reds[i]);
                tgB_putc(&b, ')');
            }
        } else {
            tgB_putc(&b, ' ');
            put_op(s, &b, st->node);
            tgB_printf(&b, " %s", tgV_dtype_name(g->nodes[st->node].dtype));
            put_dest(s, &b, st->node);
            if (st->kind == TGH_UPDATE_LOOP)
                put_fused_value(s, &b, st);
        }
        tgB_putc(&b, ')');
    }
    tgB_puts(&b, "\n  (outputs");
    for (int i = 0; i < g->noutputs; i++) {
        tgB_putc(&b, ' ');
        put_name(s, &b, g->outputs[i]);
    }
    tgB_puts(&b, ") (slots ");
    tgB_printf(&b, "%d))", s->nslots);
    size_t len;
    char *text = tgB_take(&b, &len);
    if (!text)
        return tgE_nomem(err), NULL;
    tg_term *t = tg_read(g->ctx, text, len, err);
    free(text);
    return t;
}

/* ---- for kernels/scan.c ------------------------------------------------ */

void tgH_put_name(const tgH_sched *s, tgB_buf *b, int v) { put_name(s, b, v); }
void tgH_put_dest(const tgH_sched *s, tgB_buf *b, int v) { put_dest(s, b, v); }
