/* normalize.c - the rewriting machine's entry points (tgW_normalize,
 * tgW_step): the walk over the input term, its nodes each normalized
 * once (the done map), atoms and nullary ops, assoc / comm terms made
 * canonical on the way, provenance positions, and each call handed to
 * reduce (machine.c).  A run that succeeds clears what it left on the
 * value stack; one that fails drops the machine (stacks.c). */
#include "machine_int.h"
#include "memo.h"
#include "prov.h"
#include "cext.h"
#include "error.h"

#include <gc/gc.h>
#include <string.h>

/* Walking the input: a node and the elements pushed so far. */
typedef struct walk {
    tg_term *t;
    tg_iter it;
    size_t vbase;
    uint32_t pos;       /* provenance: its position id */
    /* t applies an assoc op: its name, whose nested applications are
     * spliced into t's arguments (splice: this is one) */
    tg_term *assoc;
    int splice;
} walk;

/* The name of the assoc op t applies (a proper list), or NULL. */
static tg_term *assoc_of(const tg_rules *rs, const tg_term *t)
{
    const tgW_op *op = tgW_ac_op_of(rs, t);
    return op && (op->flags & TGW_ASSOC) ? op->name : NULL;
}

/* The op a symbol names, with rules or not. */
static uint32_t op_id(const tg_rules *rs, const tg_term *sym, int *known)
{
    tgW_op *op = tgW_op_find(rs, sym);
    *known = op != NULL;
    return op ? op->id : UINT32_MAX;
}

/* Normalize an atom: a nullary op's call, else itself. */
static tg_term *norm_atom(tg_rules *rs, const tgW_run *run, tg_term *t, size_t *sp, tg_error *err)
{
    const tgW_index *ix = run->ix;
    if (tgT_kind(t) != TG_SYMBOL)
        return t;
    int known;
    uint32_t id = op_id(rs, t, &known);
    if (!known || !byop(ix, id)->n)
        return t;
    return tgW_reduce(rs, run, id, t, 1, 0, sp, err);
}

/* The machine's stacks are the rule set's: a C function it calls may not
 * run it again. */
static int reentered(const tg_rules *rs, tg_error *err)
{
    if (!tgX_busy(rs))
        return 0;
    tgE_set(err, TG_ERR_ARG, NULL, 0, 0,
            "a C rewriter or predicate may not rewrite with its own rule set");
    return 1;
}

tg_term *tgW_normalize(tg_rules *rs, const tgW_run *run, tg_term *t, tg_error *err)
{
    if (reentered(rs, err))
        return NULL;
    tgW_machine *M = tgW_machine_get(rs);
    if (!M)
        return tgE_nomem(err), NULL;
    tgW_memo_clear(&M->memo);
    tgW_map_clear(&M->done);
    M->done.scratch = 1;
    M->input = t;
    size_t sp = 0;
    walk *ws = NULL;
    size_t nw = 0, capw = 0;
    tg_term *res = NULL;
    tgO_prov *pv = rs->prov;

    if (pv)
        tgO_at(pv, tgO_pass(pv));
    if (!tgT_ispair(t)) {
        res = norm_atom(rs, run, t, &sp, err);
        tgW_memo_clear(&M->memo);
        if (res)
            tgW_vs_scrub(M);
        return res;
    }
    if (vs_reserve(M, 1024) < 0)
        return tgE_nomem(err), NULL;
    /* sized once rather than grown (and rehashed) from empty on a large graph */
    if (run->nodes > 1024)
        tgW_map_reserve(&M->done, run->nodes);
    /* Assoc / comm terms are made canonical on the way: a nested
     * application of an assoc op is spliced into its parent's arguments
     * before either is normalized, and canon_top sorts them.  Provenance
     * names positions in the canonical input, so it has it made first
     * (doc/internals.md). */
    int ac = tgW_ac_any(rs);
    if (ac && pv) {
        if (!(t = tgW_ac_canon_deep(rs, t)))
            goto oom;
        ac = 0;
        M->input = t;
    }

#define PUSHW(x, spl)                                                         \
    do {                                                                      \
        if (nw == capw) {                                                     \
            size_t nc = capw ? 2 * capw : 64;                                 \
            walk *nws = GC_MALLOC(nc * sizeof *nws);                          \
            if (!nws)                                                         \
                goto oom;                                                     \
            if (nw)                                                           \
                memcpy(nws, ws, nw * sizeof *nws);                            \
            ws = nws, capw = nc;                                              \
        }                                                                     \
        ws[nw].t = (x), ws[nw].it.node = (x), ws[nw].it.i = (spl);            \
        ws[nw].splice = (spl);                                                \
        ws[nw].assoc = (spl) ? ws[nw - 1].assoc : ac ? assoc_of(rs, x) : NULL; \
        ws[nw].vbase = sp;                                                    \
        ws[nw].pos = !pv ? 0 : nw ? tgO_pos(pv, ws[nw - 1].pos,               \
                                            (uint32_t)(sp - ws[nw - 1].vbase)) \
                                  : pv->at;                                   \
        nw++;                                                                 \
    } while (0)

    PUSHW(t, 0);
    while (nw) {
        walk *w = &ws[nw - 1];
        tg_term *x = tgT_iter_next(&w->it);
        if (x) {
            /* spliced even when met before: not an argument of its own */
            if (w->assoc && tgT_ispair(x) && x->e[0] == w->assoc && tg_tail(x) == TGT_NIL) {
                PUSHW(x, 1);
                continue;
            }
            tg_term *v = tgT_ispair(x) ? tgW_map_get(&M->done, x) : NULL;
            if (!v && tgT_ispair(x)) {
                PUSHW(x, 0);
                continue;
            }
            if (pv)
                tgO_at_arg(pv, w->pos, (uint32_t)(sp - w->vbase));
            if (!v && !(v = (x == w->t->e[0] && w->it.node == w->t && w->it.i == 1)
                                ? x : norm_atom(rs, run, x, &sp, err)))
                goto out;
            if (vs_reserve(M, sp + 1024) < 0)
                goto oom;
            M->vs[sp++] = v;
            continue;
        }
        if (w->splice) {    /* its arguments stay, among its parent's */
            nw--;
            continue;
        }
        /* every element done: vs[vbase..sp) */
        tg_term *node = w->t, *tail = (tg_term *)w->it.node, *nf;
        size_t vb = w->vbase, n = sp - vb;
        tg_term *h = M->vs[vb];
        if (tail == TGT_NIL && tgT_kind(h) == TG_SYMBOL) {
            int known;
            uint32_t id = op_id(rs, h, &known);
            uint32_t na = (uint32_t)(n - 1);
            if (known && (rs->ops[id]->flags & (TGW_ASSOC | TGW_COMM))) {
                long nc = tgW_canon_top(rs, M, id, h, sp, na);
                if (nc < 0)
                    goto oom;
                sp = sp - na + (size_t)nc;
                na = (uint32_t)nc;
            }
            /* arguments above the head: reduce consumes them */
            if (pv)
                tgO_at(pv, w->pos);
            nf = tgW_reduce(rs, run, id, h, 0, na, &sp, err);
            if (!nf)
                goto out;
            sp = vb;
        } else {
            /* not an op application: its elements, normalized */
            tg_term *tl = tail == TGT_NIL ? NULL : tail;
            if (tl && !(tl = tgT_ispair(tl) ? tl : norm_atom(rs, run, tl, &sp, err)))
                goto out;
            if (!(nf = tg_list(rs->ctx, n, M->vs + vb, tl)))
                goto oom;
            sp = vb;
        }
        if (pv && tgO_link(pv, nf, node) < 0)
            goto oom;
        nw--;
        if (!nw) {
            res = nf;
            break;
        }
        if (tgW_map_put(&M->done, node, nf) < 0)
            goto oom;
        M->vs[sp++] = nf;
    }
#undef PUSHW
out:
    M->seen = M->done.n;
    M->input = NULL;
    tgW_map_clear(&M->done);
    tgW_memo_clear(&M->memo);
    if (res)
        tgW_vs_scrub(M);
    else
        tgW_machine_drop(rs);
    return res;
oom:
    tgE_nomem(err);
    goto out;
}

size_t tgW_normalize_seen(const tg_rules *rs)
{
    return rs->m ? rs->m->seen : 0;
}

tg_term *tgW_step(tg_rules *rs, const tgW_run *run, tg_term *t, tg_error *err)
{
    if (reentered(rs, err))
        return NULL;
    tgW_machine *M = tgW_machine_get(rs);
    if (!M)
        return tgE_nomem(err), NULL;
    tgW_run one = *run;
    one.step = 1;
    size_t sp = 0;
    if (!tgT_ispair(t)) {
        M->stepped = t;     /* a nullary op's call is its symbol */
        tg_term *r = norm_atom(rs, &one, t, &sp, err);
        M->stepped = NULL;
        if (r)
            tgW_vs_scrub(M);
        return r;
    }
    tg_term *h = t->e[0];
    size_t n = tg_length(t);
    if (tgT_kind(h) != TG_SYMBOL || tg_tail(t) != TGT_NIL)
        return t;
    int known;
    uint32_t id = op_id(rs, h, &known);
    if (!known || !byop(run->ix, id)->n)
        return t;
    if (vs_reserve(M, n + 1024) < 0)
        return tgE_nomem(err), NULL;
    M->memo.nopen = 0;
    tg_elements(t, M->vs, n);
    sp = n;
    uint32_t na = (uint32_t)(n - 1);
    /* a C rewriter gets t itself as the call, unless its arguments are
     * put in another order here */
    M->stepped = t;
    if (rs->ops[id]->flags & (TGW_ASSOC | TGW_COMM)) {
        long nc = tgW_canon_top(rs, M, id, h, sp, na);
        if (nc < 0)
            return tgE_nomem(err), NULL;
        sp = sp - na + (size_t)nc;
        na = (uint32_t)nc;
        M->stepped = NULL;
    }
    tg_term *r = tgW_reduce(rs, &one, id, h, 0, na, &sp, err);
    M->stepped = NULL;
    if (r)
        tgW_vs_scrub(M);
    else
        tgW_machine_drop(rs);
    return r;
}
