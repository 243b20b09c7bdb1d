/* info.c - a rule set described as terms (tg_rules_list): its ops, rules
 * and rewriters written back as the forms that declare them, and the
 * names of its relations; for listings in the REPL and for tools. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "rewriters.h"
#include "search.h"
#include "term.h"

typedef struct lister {
    tg_ctx *ctx;
    tg_term **v;        /* the items so far (collector memory) */
    size_t n, cap;
    int oom;
} lister;

static tg_term *sym(lister *l, const char *s)
{
    tg_term *t = tg_symbol_cstr(l->ctx, s);
    l->oom |= !t;
    return t;
}

static tg_term *list(lister *l, size_t n, tg_term *const *x, tg_term *tail)
{
    if (l->oom)
        return NULL;
    for (size_t i = 0; i < n; i++)
        if (!x[i])
            return l->oom = 1, NULL;
    tg_term *t = tg_list(l->ctx, n, x, tail ? tail : tg_nil());
    l->oom |= !t;
    return t;
}

static void push(lister *l, tg_term *t)
{
    tg_term **v = l->oom || !t ? NULL : tgW_grow(l->v, l->n, &l->cap, l->n + 1, sizeof *v);
    if (!v) {
        l->oom = 1;
        return;
    }
    l->v = v;
    l->v[l->n++] = t;
}

/* (arity N), (arity N+), (arity MIN MAX), or NULL for "any number". */
static tg_term *arity(lister *l, const tgW_op *op)
{
    tg_term *x[3] = {sym(l, "arity"), NULL, NULL};
    if (op->flags & TGW_VARIADIC) {
        if (op->amin == 0)
            return NULL;
        char s[24];
        snprintf(s, sizeof s, "%u+", (unsigned)op->amin);
        x[1] = sym(l, s);
        return list(l, 2, x, NULL);
    }
    x[1] = tg_int(l->ctx, op->amin);
    if (op->amin == op->amax)
        return list(l, 2, x, NULL);
    x[2] = tg_int(l->ctx, op->amax);
    return list(l, 3, x, NULL);
}

static tg_term *op_form(lister *l, const tgW_op *op)
{
    tg_term *x[5];
    size_t n = 0;
    x[n++] = sym(l, "op");
    x[n++] = op->name;
    tg_term *a = arity(l, op);
    if (a)
        x[n++] = a;
    if (op->flags & TGW_ASSOC)
        x[n++] = sym(l, "assoc");
    if (op->flags & TGW_COMM)
        x[n++] = sym(l, "comm");
    return list(l, n, x, op->props);
}

/* 1 when rule i (a forward one) also has a backward direction: one rule
 * form loads its directions next to each other, the backward one last. */
static int has_backward(const tg_rules *rs, uint32_t i)
{
    const tgW_rule *n = i + 1 < rs->nrules ? rs->rules[i + 1] : NULL;
    return n && n->backward && n->name == rs->rules[i]->name;
}

/* (rule NAME LHS => RHS [(tags ...)]), one per left side (a rule with
 * alternative left sides lists each); the backward direction of a <=>
 * rule is its forward entry, written with <=>.  A C node rewriter is
 * (c-rewriter NAME OP [(tags ...)]), OP _ when it is for every op. */
static tg_term *rule_form(lister *l, const tg_rules *rs, uint32_t i)
{
    const tgW_rule *r = rs->rules[i];
    tg_term *x[6];
    size_t n = 0;
    if (r->body && r->body[0].op == E_CEXT) {
        /* a C node rewriter (cext.c): (c-rewriter NAME OP [(tags ...)]) */
        x[n++] = sym(l, "c-rewriter");
        x[n++] = r->name;
        x[n++] = r->op->name;
    } else {
        x[n++] = sym(l, "rule");
        x[n++] = r->name;
        x[n++] = r->lhs;
        x[n++] = sym(l, has_backward(rs, i) ? "<=>" : "=>");
        x[n++] = r->rhs;
    }
    if (r->tags && r->tags != tg_nil()) {
        tg_term *t[1] = {sym(l, "tags")};
        x[n++] = list(l, 1, t, r->tags);
    }
    return list(l, n, x, NULL);
}

static tg_term *item_term(lister *l, const tgW_rw *rw, const tgW_item *it)
{
    tg_term *x[2] = {sym(l, "reverse"), it->name};
    tg_term *t = it->backward ? list(l, 2, x, NULL) : it->name;
    if (rw->kind != TGW_SEQ)
        return t;
    tg_term *p[2] = {NULL, t};
    double pos = it->pos;
    p[0] = pos == (double)(int64_t)pos ? tg_int(l->ctx, (int64_t)pos) : tg_double(l->ctx, pos);
    return list(l, 2, p, NULL);
}

static tg_term *rewriter_form(lister *l, const tgW_rw *rw)
{
    tg_term *head[4], *items = tg_nil();
    size_t n = 0;
    if (rw->kind == TGW_QUERY) {    /* a named query: as it was written */
        tg_term *d[3] = {sym(l, "defquery"), rw->name, rw->spec};
        return list(l, 3, d, NULL);
    }
    for (size_t i = rw->nitems; i-- > 0 && !l->oom;) {
        tg_term *it = item_term(l, rw, &rw->items[i]);
        items = it ? tg_cons(l->ctx, it, items) : NULL;
        l->oom |= !items;
    }
    head[n++] = sym(l, rw->kind == TGW_EQUIL ? "equilibrium" : rw->kind == TGW_SEQ ? "sequence" : "walk");
    head[n++] = rw->name;
    if (rw->tags && rw->tags != tg_nil()) {
        tg_term *t[1] = {sym(l, "tags")};
        head[n++] = list(l, 1, t, rw->tags);
    }
    if (rw->kind == TGW_EQUIL && rw->max_use_ratio > 0) {
        tg_term *m[2] = {sym(l, "max-use-ratio"), tg_double(l->ctx, rw->max_use_ratio)};
        head[n++] = list(l, 2, m, NULL);
    } else if (rw->kind == TGW_WALK_OUT) {
        tg_term *o[2] = {sym(l, "order"), sym(l, "out-to-in")};
        head[n++] = list(l, 2, o, NULL);
    }
    return list(l, n, head, items);
}

static int by_name(const void *a, const void *b)
{
    return tg_compare(tg_car(*(tg_term *const *)a), tg_car(*(tg_term *const *)b));
}

/* (NAME ARITY) of every defined relation, sorted by name (the table's
 * order is its hash order). */
static void relations(lister *l, tg_env *env)
{
    for (size_t i = 0; env && i < env->relcap; i++) {
        tgG_rel *r = env->rels[i];
        size_t len;
        const char *nm = r ? tg_symbol_name(r->name, &len) : NULL;
        /* lambdas are named #<lambda N>: nobody can call them by name */
        if (nm && (r->body || r->cfn) && !(len > 2 && nm[0] == '#' && nm[1] == '<')) {
            tg_term *x[2] = {r->name, tg_int(l->ctx, r->arity)};
            push(l, list(l, 2, x, NULL));
        }
    }
    if (!l->oom && l->n > 1)
        qsort(l->v, l->n, sizeof *l->v, by_name);
}

tg_term *tg_rules_list(tg_rules *rs, tg_list_kind kind, tg_error *err)
{
    if (!rs)
        return tgE_set(err, TG_ERR_ARG, NULL, 0, 0, "no rule set"), NULL;
    lister l = {rs->ctx, NULL, 0, 0, 0};
    switch (kind) {
    case TG_LIST_OPS:
        for (uint32_t i = 0; i < rs->nops; i++)
            if (!rs->ops[i]->dead)
                push(&l, op_form(&l, rs->ops[i]));
        break;
    case TG_LIST_RULES:
        for (uint32_t i = 0; i < rs->nrules; i++)
            if (!rs->rules[i]->backward)
                push(&l, rule_form(&l, rs, i));
        break;
    case TG_LIST_REWRITERS:
        for (uint32_t i = 0; i < rs->nrws; i++)
            push(&l, rewriter_form(&l, rs->rws[i]));
        break;
    case TG_LIST_RELATIONS: {
        /* the environment (and with it the prelude's relations) is made
         * on first use; make it now, so the listing does not depend on
         * whether something used it already (a failed load may have) */
        tg_env *env = tg_rules_env(rs, err);
        if (!env)
            return NULL;
        relations(&l, env);
        break;
    }
    default:
        return tgE_set(err, TG_ERR_ARG, NULL, 0, 0, "unknown listing kind %d", (int)kind), NULL;
    }
    tg_term *t = l.oom ? NULL : tg_list(rs->ctx, l.n, l.v, tg_nil());
    if (!t)
        tgE_nomem(err);
    return t;
}
