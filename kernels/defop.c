/* defop.c - expanding the ops a rule set defines (module prefix tgDo_).
 * A definition is a rule of the rule set tagged defop (patterns/load.c);
 * the expansion normalizes the terms under those rules alone, so it
 * needs no stack of its own for deep terms and never sees the other
 * rules.  Definitions cannot recurse (the load refuses them), so it
 * ends. */
#include "config.h"

#include <gc/gc.h>
#include <string.h>

#include "defop.h"
#include "error.h"
#include "rset.h"

static int is_def(const tgW_rule *r, tg_term *tag)
{
    return tgT_ispair(r->tags) && tg_car(r->tags) == tag;
}

int tgDo_has_vjp(tg_ctx *ctx, const tg_rules *grs, const tg_term *op)
{
    tg_term *vjp = tg_symbol_cstr(ctx, "vjp");
    for (uint32_t i = 0; grs && i < grs->nrules; i++) {
        const tgW_rule *r = grs->rules[i];
        tg_term *node = r->op && r->op->name == vjp && !r->backward ? tg_nth(r->lhs, 1) : NULL;
        if (node && tgT_ispair(node) && tg_car(node) == op)
            return 1;
    }
    return 0;
}

int tgDo_expand(tg_ctx *ctx, tg_rules *rs, size_t n, tg_term *const *terms, tg_term **out, tg_error *err)
{
    return tgDo_expand_keep(ctx, rs, NULL, n, terms, out, err);
}

int tgDo_expand_keep(tg_ctx *ctx, tg_rules *rs, const tg_rules *keep, size_t n, tg_term *const *terms,
                     tg_term **out, tg_error *err)
{
    if (out != terms)
        memmove(out, terms, n * sizeof *out);
    tg_term *tag = tg_symbol_cstr(ctx, "defop");
    uint32_t nd = 0;
    for (uint32_t i = 0; rs && i < rs->nrules; i++)
        nd += is_def(rs->rules[i], tag) && !tgDo_has_vjp(ctx, keep, rs->rules[i]->op->name);
    if (!nd || !n)
        return 0;
    tgW_rule **defs = GC_MALLOC(nd * sizeof *defs);
    tgW_index ix;
    if (!defs)
        return tgE_nomem(err), -1;
    nd = 0;
    for (uint32_t i = 0; i < rs->nrules; i++)
        if (is_def(rs->rules[i], tag) && !tgDo_has_vjp(ctx, keep, rs->rules[i]->op->name))
            defs[nd++] = rs->rules[i];
    if (tgW_index_build(rs, &ix, defs, nd) < 0)
        return tgE_nomem(err), -1;
    /* all the terms as one, so shared subterms are expanded once */
    tg_term *head = tg_symbol_cstr(ctx, "graph");
    tg_term *g = head ? tg_app(ctx, head, n, out) : NULL;
    if (!g)
        return tgE_nomem(err), -1;
    tgW_run run = {&ix, 0, 0, NULL, NULL, NULL, 0};
    tg_term *r = tgW_normalize(rs, &run, g, err);
    if (!r)
        return -1;
    tg_elements(tg_cdr(ctx, r), out, n);
    return 0;
}

/* Whether rs defines op (a defop rule of that op). */
static int defines(tg_ctx *ctx, const tg_rules *rs, const tg_term *op)
{
    tg_term *tag = tg_symbol_cstr(ctx, "defop");
    for (uint32_t i = 0; rs && i < rs->nrules; i++)
        if (is_def(rs->rules[i], tag) && rs->rules[i]->op->name == op)
            return 1;
    return 0;
}

tg_term *tgDo_define(void *ud, tg_term *t)
{
    tgDo_defs *d = ud;
    tg_term *op = tgT_ispair(t) ? tg_car(t) : NULL;
    if (!op || (!defines(d->ctx, d->rs[0], op) && !defines(d->ctx, d->rs[1], op)))
        return NULL;
    tg_term *e = t;
    tg_error err;
    for (int k = 0; k < 2; k++)
        if (d->rs[k] && (k == 0 || d->rs[1] != d->rs[0]) && tgDo_expand(d->ctx, d->rs[k], 1, &e, &e, &err) < 0)
            return NULL;
    return e != t ? e : NULL;
}

tg_term *tgDo_normalize_undefined(tg_rules *rs, tg_term *t, tg_error *err)
{
    tg_term *tag = tg_symbol_cstr(rs->ctx, "defop");
    tgW_rule **keep = GC_MALLOC((rs->nrules ? rs->nrules : 1) * sizeof *keep);
    tgW_index ix;
    uint32_t n = 0;
    if (!keep)
        return tgE_nomem(err), NULL;
    for (uint32_t i = 0; i < rs->nrules; i++)
        if (!is_def(rs->rules[i], tag) && !rs->rules[i]->backward)
            keep[n++] = rs->rules[i];
    if (tgW_index_build(rs, &ix, keep, n) < 0)
        return tgE_nomem(err), NULL;
    tgW_run run = {&ix, 0, 0, NULL, NULL, NULL, 0};
    return tgW_normalize(rs, &run, t, err);
}
