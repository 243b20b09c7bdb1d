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

int tgDo_expand(tg_ctx *ctx, tg_rules *rs, size_t n, tg_term *const *terms, tg_term **out, tg_error *err)
{
    if (out != terms)
        memmove(out, terms, n * sizeof *out);
    tg_term *tag = tg_symbol_cstr(ctx, "defop");
    uint32_t nd = 0;
    for (uint32_t i = 0; rs && i < rs->nrules; i++)
        nd += tgT_ispair(rs->rules[i]->tags) && tg_car(rs->rules[i]->tags) == tag;
    if (!nd || !n)
        return 0;
    tgW_rule **defs = GC_MALLOC(nd * sizeof *defs);
    tgW_index ix;
    if (!defs)
        return tgE_nomem(err), -1;
    nd = 0;
    for (uint32_t i = 0; i < rs->nrules; i++)
        if (tgT_ispair(rs->rules[i]->tags) && tg_car(rs->rules[i]->tags) == tag)
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
