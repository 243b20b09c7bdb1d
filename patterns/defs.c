/* defs.c - the forms of a .rules file that extend what is loaded or
 * define an op by others: (register DATABASE ITEM ...) adds items to a
 * rewriter, (defquery NAME (query ...)) names a query, (defop (NAME
 * ?PARAM ...) BODY) declares an op and the rule that expands it.  load.c
 * reads the files and calls these.
 */
#include "load_int.h"
#include "rewriters.h"
#include "error.h"

#include <gc/gc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- extending databases: register, defquery -------------------------- */

/* The rewriter a register form names, or NULL after the error. */
static tgW_rw *register_target(loader *L, tg_term *db)
{
    tgW_rw *rw = tg_kind_of(db) == TG_SYMBOL ? tgW_rw_find(L->rs, db) : NULL;
    if (!rw)
        tgW_lerr_term(L, db, "register: unknown rewriter %s (declare it with equilibrium, walk or sequence)", db);
    else if (rw->kind == TGW_QUERY)
        tgW_lerr_term(L, db, "register: %s is a named query, not a rewriter of its own (register into the rewriter it "
                      "selects from)", db);
    return rw && rw->kind != TGW_QUERY ? rw : NULL;
}

/* Whether item it is in rw already (the same name, the same way). */
static const tgW_item *item_in(const tgW_rw *rw, const tgW_item *it, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (rw->items[i].name == it->name && rw->items[i].backward == it->backward)
            return &rw->items[i];
    return NULL;
}

/* Item x of a register form into rw, as items[k] (items[0..k) are rw's
 * and the ones before it): 0, or -1 with the error. */
static int register_item(loader *L, const tgW_rw *rw, tgW_item *items, size_t k, tg_term *x)
{
    tg_term *nm = x;
    double pos = 0;
    if (rw->kind == TGW_SEQ) {
        int64_t iv;
        if (!tgT_ispair(x) || tg_length(x) != 2 || tg_tail(x) != tg_nil() ||
            (tg_int_get(tg_car(x), &iv) < 0 && tg_double_get(tg_car(x), &pos) < 0))
            return tgW_lerr_terms(L, x, "register: an item of sequence %s is (POSITION NAME), found %s", rw->name, x);
        if (tg_int_get(tg_car(x), &iv) == 0)
            pos = (double)iv;
        nm = tg_nth(x, 1);
    }
    if (tgW_parse_item(L, nm, &items[k]) < 0)
        return -1;
    items[k].pos = pos;
    tgW_rw tmp = *rw;
    tmp.items = items;
    if (item_in(&tmp, &items[k], k))
        return tgW_lerr_terms(L, nm, "register: %s is in %s already", nm, rw->name);
    for (size_t j = 0; rw->kind == TGW_SEQ && j < k; j++)
        if (items[j].pos == pos) {
            char f[160];    /* the position written in, then the two names */
            snprintf(f, sizeof f, "register: position %g of sequence %%s is taken by %%s (a position is free or "
                     "given once)", pos);
            return tgW_lerr_terms(L, x, f, rw->name, items[j].name);
        }
    if (items[k].rw == rw)
        return tgW_lerr_term(L, nm, "register: %s into itself", rw->name);
    return 0;
}

/* (register DB ITEM ...) into an equilibrium or walk, (register DB (POS
 * ITEM) ...) into a sequence, whose positions must be free: the items
 * join DB as if DB's form had named them (PyTensor's register_canonicalize
 * and optdb.register).  The rewriter's old items are kept to undo a
 * failed load. */
int tgW_load_register(loader *L, tg_term *form)
{
    tg_rules *rs = L->rs;
    size_t n = tg_length(form);
    if (n < 3 || tg_tail(form) != tg_nil())
        return tgW_lerr_term(L, form, "malformed register: (register DATABASE ITEM ...), (POSITION ITEM) for a "
                             "sequence, in %s", form);
    tgW_rw *rw = register_target(L, tg_nth(form, 1));
    if (!rw)
        return -1;
    tgW_item *items = GC_MALLOC((rw->nitems + n) * sizeof *items);
    tgW_reg *regs = tgW_grow(rs->regs, rs->nregs, &rs->capregs, rs->nregs + 1, sizeof *regs);
    if (!items || !regs)
        return tgE_nomem(L->err), -1;
    rs->regs = regs;
    if (rw->nitems)
        memcpy(items, rw->items, rw->nitems * sizeof *items);
    size_t k = rw->nitems;
    for (size_t i = 2; i < n; i++, k++)
        if (register_item(L, rw, items, k, tg_nth(form, i)) < 0)
            return -1;
    tgW_item *add = GC_MALLOC((k - rw->nitems + 1) * sizeof *add);
    char *f = L->file ? GC_MALLOC_ATOMIC(strlen(L->file) + 1) : NULL;
    if (!add || (L->file && !f))
        return tgE_nomem(L->err), -1;
    memcpy(add, items + rw->nitems, (k - rw->nitems) * sizeof *add);
    rs->regs[rs->nregs++] = (tgW_reg){rw, rw->items, rw->nitems, rw->name, add, k - rw->nitems, rs->fid,
                                      f ? strcpy(f, L->file) : NULL, L->line, L->col};
    rw->items = items;
    rw->nitems = k;
    tgW_plans_clear(rs);
    return 0;
}

/* (defquery NAME SPEC): a name for SPEC, a rewriter's name or (query
 * NAME CLAUSE ...), usable wherever a rewriter is (rewrite, items,
 * sequences, other queries, which nest). */
int tgW_load_defquery(loader *L, tg_term *form)
{
    tg_rules *rs = L->rs;
    tg_term *name = tg_length(form) == 3 && tg_tail(form) == tg_nil() ? tg_nth(form, 1) : NULL;
    if (!name || tg_kind_of(name) != TG_SYMBOL)
        return tgW_lerr_term(L, form, "malformed defquery: (defquery NAME (query DATABASE CLAUSE ...)) in %s", form);
    if (tgW_rw_find(rs, name) || tgW_map_get(&rs->rulemap, name)) {
        size_t len;
        const char *s = tg_symbol_name(name, &len);
        tgW_lerr(L, name, "%.*s is already the name of a %s", (int)len, s, tgW_rw_find(rs, name) ? "rewriter" : "rule");
        return -1;
    }
    tgW_query *q;
    tg_term *spec = tg_nth(form, 2);
    tgW_rw *base = tgW_parse_spec(L, spec, &q);
    tgW_rw *rw = base ? GC_MALLOC(sizeof *rw) : NULL;
    if (!rw)
        return base ? (tgE_nomem(L->err), -1) : -1;
    rw->name = name, rw->kind = TGW_QUERY, rw->tags = tg_nil();
    rw->base = base, rw->q = q, rw->spec = spec;
    rw->file = L->file, rw->line = L->line, rw->col = L->col;
    return tgW_rws_push(rs, rw) < 0 ? (tgE_nomem(L->err), -1) : 0;
}

/* ---- ops defined in terms of others: defop ------------------------------ */

/* The definition rule of op name (a rule tagged defop), or NULL. */
static const tgW_rule *defop_rule(const tg_rules *rs, const tg_term *name, tg_term *tag)
{
    for (uint32_t i = 0; i < rs->nrules; i++)
        if (rs->rules[i]->op->name == name && tgT_ispair(rs->rules[i]->tags) && tg_car(rs->rules[i]->tags) == tag)
            return rs->rules[i];
    return NULL;
}

/* Whether term t, or the definitions of the defined ops it applies,
 * applies op name: the chain that leads there in path (as text).  An
 * explicit stack: bodies may be deep. */
static int defop_reaches(const tg_rules *rs, tg_term *t, const tg_term *name, tg_term *tag, char *path, size_t cap)
{
    tgW_map seen = {0};
    size_t n = 0, c = 64;
    tg_term **st = GC_MALLOC(c * sizeof *st);
    if (!st)
        return 0;
    st[n++] = t;
    while (n) {
        tg_term *x = st[--n];
        if (!tgT_ispair(x) || tgW_map_get(&seen, x))
            continue;
        tgW_map_put(&seen, x, x);
        tg_term *h = tg_car(x);
        if (h == name) {
            size_t nl;
            const char *s = tg_symbol_name(name, &nl);
            size_t used = strlen(path);
            snprintf(path + used, cap - used, "%.*s", (int)nl, s);
            return 1;
        }
        const tgW_rule *d = tg_kind_of(h) == TG_SYMBOL ? defop_rule(rs, h, tag) : NULL;
        size_t need = n + tg_length(x) + 2;
        if (need > c) {
            tg_term **ns = GC_MALLOC(2 * need * sizeof *ns);
            if (!ns)
                return 0;
            memcpy(ns, st, n * sizeof *ns);
            st = ns, c = 2 * need;
        }
        if (d && defop_reaches(rs, d->rhs, name, tag, path, cap)) {
            /* prepend this op: path reads from the outermost */
            size_t hl, used = strlen(path);
            const char *hs = tg_symbol_name(h, &hl);
            if (used + hl + 4 < cap) {
                memmove(path + hl + 4, path, used + 1);
                memcpy(path, hs, hl);
                memcpy(path + hl, " -> ", 4);
            }
            return 1;
        }
        tg_iter it = {x, 0};
        for (tg_term *e; (e = tgT_iter_next(&it));)
            st[n++] = e;
    }
    return 0;
}

/* (defop (NAME ?P ...) BODY): op NAME of that many arguments, declared
 * here if it is not yet, stands for BODY, written with existing ops and
 * the parameters.  Its definition is a rule (named defop:NAME, tagged
 * defop), so normalize expands it, and tg_fn_compile expands it before
 * anything else (kernels/fn.c).  A definition that reaches NAME again,
 * through itself or other definitions, is an error. */
int tgW_load_defop(loader *L, tg_term *form)
{
    tg_rules *rs = L->rs;
    tg_term *head = tg_length(form) == 3 && tg_tail(form) == tg_nil() ? tg_nth(form, 1) : NULL;
    tg_term *name = head && tgT_ispair(head) && tg_tail(head) == tg_nil() ? tg_car(head) : NULL;
    size_t np = name ? tg_length(head) - 1 : 0;
    int ok = name && tg_kind_of(name) == TG_SYMBOL && np <= 64;
    for (size_t i = 1; ok && i <= np; i++) {
        tg_term *v = tg_nth(head, i);
        ok = tg_kind_of(v) == TG_VAR;
        for (size_t j = 1; ok && j < i; j++)
            ok = tg_nth(head, j) != v;
    }
    if (!ok)
        return tgW_lerr_term(L, form, "malformed defop: (defop (NAME ?PARAM ...) BODY), distinct parameters, in %s",
                             form);
    tg_term *tag = tg_symbol_cstr(rs->ctx, "defop");
    size_t nl;
    const char *ns = tg_symbol_name(name, &nl);
    char *rn = malloc(nl + 7);
    tg_term *rname = NULL;
    if (rn) {
        memcpy(rn, "defop:", 6);
        memcpy(rn + 6, ns, nl);
        rname = tg_symbol(rs->ctx, rn, nl + 6);
        free(rn);
    }
    tg_term *tags = tag ? tg_list(rs->ctx, 1, &tag, NULL) : NULL;
    if (!rname || !tags)
        return tgE_nomem(L->err), -1;
    if (defop_rule(rs, name, tag)) {
        tgW_lerr(L, head, "defop %.*s: %.*s is defined already", (int)nl, ns, (int)nl, ns);
        return -1;
    }
    /* declared as (op NAME (arity N)), or as it was */
    tgW_op *op = tgW_op_find(rs, name);
    if (op && (np < op->amin || np > op->amax)) {
        tgW_lerr(L, head, "defop %.*s: %zu parameter%s, but the op takes %u to %u arguments (declared at %s:%d:%d)",
             (int)nl, ns, np, np == 1 ? "" : "s", op->amin, op->amax, op->file ? op->file : "?", op->line, op->col);
        return -1;
    }
    if (!op) {
        tg_term *ar[2] = {L->sym[F_ARITY], tg_int(rs->ctx, (int64_t)np)};
        tg_term *decl[3] = {L->sym[F_OP], name, ar[1] ? tg_list(rs->ctx, 2, ar, NULL) : NULL};
        tg_term *df = decl[2] ? tg_list(rs->ctx, 3, decl, NULL) : NULL;
        if (!df)
            return tgE_nomem(L->err), -1;
        if (tgW_load_op(L, df) < 0)
            return -1;
    }
    char path[300] = "";
    if (defop_reaches(rs, tg_nth(form, 2), name, tag, path, sizeof path)) {
        tgW_lerr(L, tg_nth(form, 2), "defop %.*s is recursive: %.*s -> %s", (int)nl, ns, (int)nl, ns, path);
        return -1;
    }
    return tgW_add_rule(L, rname, head, tg_nth(form, 2), NULL, 0, 0, tags);
}

