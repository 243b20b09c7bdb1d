/* load_forms.c - the forms of a .rules file that declare and define
 * (load_int.h, prefix tgW_): (op NAME ...) with its properties, rules
 * one way and both ways, the rewriters (equilibrium, walk, sequence)
 * with their items, and queries; each parsed, checked and added to the
 * rule set.  load.c reads the file and hands each form here. */
#include "compile.h"
#include "arith.h"
#include "typed.h"
#include "rewriters.h"
#include "error.h"
#include "load_int.h"

#include <gc/gc.h>
#include <stdlib.h>
#include <string.h>

/* (arity N), (arity N+), (arity MIN MAX) */
static int parse_arity(loader *L, tg_term *prop, tgW_op *op)
{
    size_t n = tg_length(prop);
    int64_t a, b;
    tg_term *x = n >= 2 ? tg_nth(prop, 1) : NULL;
    op->flags &= ~(uint32_t)TGW_VARIADIC;
    if (n == 2 && tg_int_get(x, &a) == 0 && a >= 0 && a <= 100000) {
        op->amin = op->amax = (uint32_t)a;
        return 0;
    }
    if (n == 2 && tg_kind_of(x) == TG_SYMBOL) {
        size_t len;
        const char *s = tg_symbol_name(x, &len);
        char *end;
        long v = len > 1 && s[len - 1] == '+' ? strtol(s, &end, 10) : -1;
        if (v >= 0 && v <= 100000 && end == s + len - 1) {
            op->amin = (uint32_t)v;
            op->amax = UINT32_MAX;
            op->flags |= TGW_VARIADIC;
            return 0;
        }
    }
    if (n == 3 && tg_int_get(x, &a) == 0 && tg_int_get(tg_nth(prop, 2), &b) == 0 && a >= 0 &&
        b >= a && b <= 100000) {
        op->amin = (uint32_t)a, op->amax = (uint32_t)b;
        return 0;
    }
    return tgW_lerr_term(L, prop, "malformed arity (write (arity 2), (arity 2+) or (arity 1 3)) in %s", prop);
}

/* (op NAME PROP...) */
int tgW_load_op(loader *L, tg_term *form)
{
    tg_rules *rs = L->rs;
    size_t n = tg_length(form);
    tg_term *name = n >= 2 ? tg_nth(form, 1) : NULL;
    if (!name || tg_kind_of(name) != TG_SYMBOL)
        return tgW_lerr_term(L, form, "malformed op declaration (op NAME (arity N) ...) in %s", form);
    size_t nl;
    const char *ns = tg_symbol_name(name, &nl);
    if (tgQ_reserved(ns, nl)) {
        tgW_lerr(L, form, "%.*s: names starting with num: are the numeric built-ins", (int)nl, ns);
        return -1;
    }
    if (tgTy_reserved(ns, nl)) {
        tgW_lerr(L, form, "%.*s: names starting with type: are the typed guards", (int)nl, ns);
        return -1;
    }
    tgW_op *op = GC_MALLOC(sizeof *op);
    if (!op)
        return tgE_nomem(L->err), -1;
    op->name = name;
    op->amax = UINT32_MAX;
    op->flags = TGW_VARIADIC;
    op->props = tg_nil();
    op->file = L->file, op->line = L->line, op->col = L->col;
    for (size_t i = n; i-- > 2;) {
        tg_term *p = tg_nth(form, i);
        if (tgT_ispair(p) && tg_car(p) == L->sym[F_ARITY]) {
            if (parse_arity(L, p, op) < 0)
                return -1;
        } else if (p == L->sym[F_ASSOC]) {
            op->flags |= TGW_ASSOC;
        } else if (p == L->sym[F_COMM]) {
            op->flags |= TGW_COMM;
        } else if (!(op->props = tg_cons(rs->ctx, p, op->props))) {
            return tgE_nomem(L->err), -1;
        }
    }
    if ((op->flags & (TGW_ASSOC | TGW_COMM)) && op->amax < 2) {
        tgW_lerr(L, form, "an assoc or comm op takes at least two arguments");
        return -1;
    }
    tgW_op *old = tgW_op_find(rs, name);
    if (old) {
        if (!tgW_same_decl(old, op)) {
            size_t len;
            const char *s = tg_symbol_name(name, &len);
            tgW_lerr(L, form, "op %.*s declared again differently (first at %s:%d:%d)", (int)len, s,
                 old->file ? old->file : "?", old->line, old->col);
            return -1;
        }
        return 0;
    }
    return tgW_ops_push(rs, op) < 0 ? (tgE_nomem(L->err), -1) : 0;
}

static int check_tags(loader *L, tg_term *w)
{
    for (tg_iter it = {w, 1};;) {
        tg_term *t = tgT_iter_next(&it);
        if (!t)
            return 0;
        if (tg_kind_of(t) != TG_SYMBOL)
            return tgW_lerr_term(L, w, "tags must be symbols in %s", w);
    }
}

static int known_rule(tg_rules *rs, tg_term *name, int backward)
{
    uint32_t first;
    return tgW_rules_named(rs, name, backward, &first) > 0;
}

/* An item that is neither a rule nor a rewriter: a relation, checked
 * after the load's relation forms are evaluated (check_relrefs). */
static int relref(loader *L, tg_term *x, tgW_item *it)
{
    struct relref *r = tgW_grow(L->relrefs, L->nrelrefs, &L->caprelrefs, L->nrelrefs + 1, sizeof *r);
    char *f = GC_MALLOC_ATOMIC(strlen(L->file) + 1);
    if (!r || !f)
        return tgE_nomem(L->err), -1;
    L->relrefs = r;
    r += L->nrelrefs++;
    r->name = it->name, r->backward = it->backward;
    r->file = strcpy(f, L->file);
    tgW_form_pos(L, x, &r->line, &r->col);
    it->rel = 1;
    return 0;
}

/* An item of a rewriter: NAME (a rule, a rewriter or a relation) or
 * (reverse RULE-OR-RELATION). */
int tgW_parse_item(loader *L, tg_term *x, tgW_item *it)
{
    tg_rules *rs = L->rs;
    memset(it, 0, sizeof *it);
    if (tgT_ispair(x) && tg_car(x) == L->sym[F_REVERSE] && tg_length(x) == 2 &&
        tg_tail(x) == tg_nil() && tg_kind_of(tg_nth(x, 1)) == TG_SYMBOL) {
        it->name = tg_nth(x, 1);
        it->backward = 1;
        if (!known_rule(rs, it->name, 0) && !tgW_rw_find(rs, it->name))
            return relref(L, x, it);
        if (!known_rule(rs, it->name, 1)) {
            size_t n;
            const char *s = tg_symbol_name(it->name, &n);
            tgW_lerr(L, x, "(reverse %.*s): %.*s is not a <=> rule", (int)n, s, (int)n, s);
            return -1;
        }
        return 0;
    }
    if (tg_kind_of(x) != TG_SYMBOL)
        return tgW_lerr_term(L, x, "expected a rule or rewriter name, or (reverse RULE), found %s", x);
    it->name = x;
    it->rw = tgW_rw_find(rs, x);
    if (!it->rw && !known_rule(rs, x, 0))
        return relref(L, x, it);
    return 0;
}

int tgW_rws_push(tg_rules *rs, tgW_rw *rw)
{
    tgW_rw **n = tgW_grow(rs->rws, rs->nrws, &rs->caprws, rs->nrws + 1, sizeof *n);
    if (!n)
        return -1;
    rs->rws = n;
    rw->fid = rs->fid;
    rw->nown = rw->nitems;
    rs->rws[rs->nrws++] = rw;
    tgW_plans_clear(rs);
    return tgW_map_put(&rs->rwmap, rw->name, rw);
}

/* (equilibrium NAME CLAUSE... ITEM...), (walk NAME CLAUSE... ITEM...),
 * (sequence NAME CLAUSE... (POS ITEM)...) */
int tgW_load_rewriter(loader *L, tg_term *form, int kind)
{
    tg_rules *rs = L->rs;
    size_t n = tg_length(form);
    tg_term *name = n >= 2 ? tg_nth(form, 1) : NULL;
    if (!name || tg_kind_of(name) != TG_SYMBOL || tg_tail(form) != tg_nil()) {
        char *p = tgW_show(form);
        tgW_lerr(L, form, "malformed rewriter: (%s NAME CLAUSE... ITEM...) in %s",
             tgW_form_names[kind == TGW_SEQ ? F_SEQ : kind == TGW_EQUIL ? F_EQUIL : F_WALK], p ? p : "?");
        free(p);
        return -1;
    }
    if (tgW_rw_find(rs, name) || tgW_map_get(&rs->rulemap, name)) {
        size_t len;
        const char *s = tg_symbol_name(name, &len);
        tgW_lerr(L, form, "%.*s is already the name of a %s", (int)len, s,
             tgW_rw_find(rs, name) ? "rewriter" : "rule");
        return -1;
    }
    tgW_rw *rw = GC_MALLOC(sizeof *rw);
    tgW_item *items = GC_MALLOC((n ? n : 1) * sizeof *items);
    if (!rw || !items)
        return tgE_nomem(L->err), -1;
    rw->name = name, rw->kind = kind, rw->tags = tg_nil(), rw->items = items;
    rw->file = L->file, rw->line = L->line, rw->col = L->col;
    for (size_t i = 2; i < n; i++) {
        tg_term *x = tg_nth(form, i);
        tg_term *h = tgT_ispair(x) ? tg_car(x) : NULL;
        if (h == L->sym[F_TAGS]) {
            if (check_tags(L, x) < 0)
                return -1;
            rw->tags = tg_cdr(rs->ctx, x);
        } else if (h == L->sym[F_MAXUSE] && kind == TGW_EQUIL) {
            double r = -1;
            if (tg_length(x) != 2 || tg_double_get(tg_nth(x, 1), &r) < 0 || !(r > 0)) {
                int64_t v;
                if (tg_length(x) == 2 && tg_int_get(tg_nth(x, 1), &v) == 0 && v > 0)
                    r = (double)v;
                else
                    return tgW_lerr_term(L, x, "malformed max-use-ratio (a positive number) in %s", x);
            }
            rw->max_use_ratio = r;
        } else if (h == L->sym[F_ORDER] && kind != TGW_SEQ && kind != TGW_EQUIL) {
            tg_term *o = tg_length(x) == 2 ? tg_nth(x, 1) : NULL;
            if (o != L->sym[F_IN2OUT] && o != L->sym[F_OUT2IN])
                return tgW_lerr_term(L, x, "malformed order: (order in-to-out) or (order out-to-in) in %s", x);
            rw->kind = o == L->sym[F_IN2OUT] ? TGW_WALK_IN : TGW_WALK_OUT;
        } else if (kind == TGW_SEQ) {
            double pos;
            int64_t iv;
            if (!tgT_ispair(x) || tg_length(x) != 2 || tg_tail(x) != tg_nil() ||
                (tg_int_get(tg_car(x), &iv) < 0 && tg_double_get(tg_car(x), &pos) < 0)) {
                return tgW_lerr_term(L, x, "a sequence item is (POSITION NAME), found %s", x);
            }
            if (tg_int_get(tg_car(x), &iv) == 0)
                pos = (double)iv;
            if (tgW_parse_item(L, tg_nth(x, 1), &items[rw->nitems]) < 0)
                return -1;
            items[rw->nitems++].pos = pos;
        } else {
            if (tgW_parse_item(L, x, &items[rw->nitems]) < 0)
                return -1;
            rw->nitems++;
        }
    }
    return tgW_rws_push(rs, rw) < 0 ? (tgE_nomem(L->err), -1) : 0;
}

/* (query NAME (include T...) (require T...) (exclude T...) (subquery NAME CLAUSE...)) or
 * the clauses alone (for a subquery). */
static tgW_query *parse_query(loader *L, tg_term *form, size_t first)
{
    tg_rules *rs = L->rs;
    tgW_query *q = GC_MALLOC(sizeof *q);
    size_t n = tg_length(form);
    if (!q || !(q->subname = GC_MALLOC((n ? n : 1) * sizeof *q->subname)) ||
        !(q->sub = GC_MALLOC((n ? n : 1) * sizeof *q->sub)))
        return tgE_nomem(L->err), NULL;
    q->include = q->require = q->exclude = tg_nil();
    for (size_t i = first; i < n; i++) {
        tg_term *x = tg_nth(form, i);
        tg_term *h = tgT_ispair(x) ? tg_car(x) : NULL;
        if (h && (h == L->sym[F_INCL] || h == L->sym[F_REQ] || h == L->sym[F_EXCL])) {
            if (check_tags(L, x) < 0)
                return NULL;
            tg_term *l = tg_cdr(rs->ctx, x);
            tg_term **dst = h == L->sym[F_INCL] ? &q->include : h == L->sym[F_REQ] ? &q->require
                                                                                  : &q->exclude;
            /* clauses of one kind add up */
            tg_term *tmp[256];
            size_t k = 0;
            for (tg_iter it = {*dst, 0}; k < 128;) {
                tg_term *e = tgT_iter_next(&it);
                if (!e)
                    break;
                tmp[k++] = e;
            }
            for (tg_iter it = {l, 0}; k < 256;) {
                tg_term *e = tgT_iter_next(&it);
                if (!e)
                    break;
                tmp[k++] = e;
            }
            if (!(*dst = tg_list(rs->ctx, k, tmp, NULL)))
                return tgE_nomem(L->err), NULL;
        } else if (h == L->sym[F_SUBQ] && tg_length(x) >= 2 &&
                   tg_kind_of(tg_nth(x, 1)) == TG_SYMBOL) {
            tg_term *sn = tg_nth(x, 1);
            if (!tgW_rw_find(rs, sn)) {
                size_t len;
                const char *s = tg_symbol_name(sn, &len);
                tgW_lerr(L, x, "unknown rewriter %.*s in a subquery", (int)len, s);
                return NULL;
            }
            tgW_query *sq = parse_query(L, x, 2);
            if (!sq)
                return NULL;
            q->subname[q->nsub] = sn;
            q->sub[q->nsub++] = sq;
        } else {
            tgW_lerr_term(L, x, "expected (include T...), (require T...), (exclude T...) or (subquery NAME ...), found %s",
                          x);
            return NULL;
        }
    }
    return q;
}

/* A rewriter spec: NAME or (query NAME CLAUSE...). */
tgW_rw *tgW_parse_spec(loader *L, tg_term *spec, tgW_query **q)
{
    *q = NULL;
    tg_term *name = spec;
    if (tgT_ispair(spec) && tg_car(spec) == L->sym[F_QUERY] && tg_length(spec) >= 2)
        name = tg_nth(spec, 1);
    tgW_rw *rw = tg_kind_of(name) == TG_SYMBOL ? tgW_rw_find(L->rs, name) : NULL;
    if (!rw) {
        tgW_lerr_term(L, spec, "unknown rewriter %s (declare it with equilibrium, walk or sequence)", name);
        return NULL;
    }
    if (name != spec && !(*q = parse_query(L, spec, 2)))
        return NULL;
    return rw;
}

int tgW_add_rule(loader *L, tg_term *name, tg_term *lhs, tg_term *rhs, tg_term *const *conds, size_t nc,
                 int backward, tg_term *tags)
{
    tgW_comp c;
    tgW_comp_init(&c, L->rs, L->err);
    c.file = L->file, c.line = L->line, c.col = L->col;
    c.pos = tgW_form_pos, c.pos_ud = L;
    tgW_rule *r = tgW_compile_rule(&c, name, lhs, rhs, conds, nc, backward);
    if (!r)
        return -1;
    r->tags = tags;
    return tgW_rules_push(L->rs, r) < 0 ? (tgE_nomem(L->err), -1) : 0;
}

/* (rule NAME LHS... => RHS (when C...)) and (rule NAME LHS <=> RHS ...) */
int tgW_load_rule(loader *L, tg_term *form)
{
    tg_rules *rs = L->rs;
    tg_term *buf[64], *tail;
    size_t n = 0;
    tg_iter it = {form, 0};
    for (tg_term *x; (x = tgT_iter_next(&it));)
        if (n < 64)
            buf[n++] = x;
        else
            n++;
    tail = (tg_term *)it.node;
    size_t arrow = 0;
    for (size_t i = 2; i < n && i < 64; i++)
        if (buf[i] == L->sym[F_TO] || buf[i] == L->sym[F_BOTH]) {
            arrow = i;
            break;
        }
    if (n > 64 || tail != tg_nil() || n < 5 || tg_kind_of(buf[1]) != TG_SYMBOL || arrow < 3 ||
        arrow + 1 >= n) {
        return tgW_lerr_term(L, form, "malformed rule (rule NAME LHS => RHS (when COND ...)) in %s", form);
    }
    tg_term *name = buf[1], *rhs = buf[arrow + 1];
    int both = buf[arrow] == L->sym[F_BOTH];
    if (tgW_map_get(&rs->rulemap, name)) {
        size_t len;
        const char *s = tg_symbol_name(name, &len);
        const tgW_rule *o = tgW_map_get(&rs->rulemap, name);
        if (!o->line)   /* a C node rewriter (cext.c) */
            tgW_lerr(L, form, "rule %.*s defined twice (first as a C node rewriter)", (int)len, s);
        else
            tgW_lerr(L, form, "rule %.*s defined twice (first at %s:%d:%d)", (int)len, s,
                 o->file ? o->file : "?", o->line, o->col);
        return -1;
    }
    /* conditions: every (when ...) after the right side */
    tg_term *conds[64];
    size_t nc = 0;
    tg_term *tags = tg_nil();
    for (size_t i = arrow + 2; i < n; i++) {
        tg_term *w = buf[i];
        if (tgT_ispair(w) && tg_car(w) == L->sym[F_TAGS] && tg_tail(w) == tg_nil()) {
            if (check_tags(L, w) < 0)
                return -1;
            tags = tg_cdr(rs->ctx, w);
            continue;
        }
        if (!tgT_ispair(w) || tg_car(w) != L->sym[F_WHEN] || tg_tail(w) != tg_nil())
            return tgW_lerr_term(L, w, "expected (when COND ...) or (tags ...) after the right side, found %s", w);
        tg_iter ci = {w, 1};
        for (tg_term *x; (x = tgT_iter_next(&ci));)
            if (nc < 64)
                conds[nc++] = x;
            else {
                tgW_lerr(L, w, "more than 64 conditions");
                return -1;
            }
    }
    if (both && arrow != 3) {
        tgW_lerr(L, form, "a <=> rule has one left side");
        return -1;
    }
    for (size_t i = 2; i < arrow; i++)
        if (tgW_add_rule(L, name, buf[i], rhs, conds, nc, 0, tags) < 0)
            return -1;
    return both ? tgW_add_rule(L, name, rhs, buf[2], conds, nc, 1, tags) : 0;
}
