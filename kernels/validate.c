/* validate.c - validated replacements (module prefix tgVa_): a rewrite
 * made for a compile may change how a function computes, never what type
 * its outputs have.  Each rewritten output must keep the dtype, rank and
 * sizes of the output it replaces (a static size the same number, a
 * symbolic one a class that shares a symbol with the old one's, so that
 * x*y/y -> x, which drops y's size from x's class, is fine, but a
 * transposed (m n) for (n m) is not).  When one does not, the rewrite is
 * run again with provenance on to name the first firing whose replacement
 * changed its node's type. */
#include "config.h"

#include <gc/gc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "compile.h"
#include "rwcache.h"
#include "tensor.h"
#include "validate.h"

/* Whether size a of graph A and size b of graph B can be one size. */
static int same_size(const tgV_graph *A, tgV_size a, const tgV_graph *B, tgV_size b)
{
    if (a >= 0 || b >= 0)
        return a == b;
    for (int i = 0; i < A->nsyms; i++) {
        if (tgV_canon(A, -(tgV_size)i - 1) != a)
            continue;
        for (int j = 0; j < B->nsyms; j++)
            if (B->syms[j] == A->syms[i] && tgV_canon(B, -(tgV_size)j - 1) == b)
                return 1;
    }
    return 0;
}

static int same_type(const tgV_graph *A, const tgV_node *a, const tgV_graph *B, const tgV_node *b)
{
    if (a->dtype != b->dtype || a->ndim != b->ndim)
        return 0;
    for (int d = 0; d < a->ndim; d++)
        if (!same_size(A, a->shape[d], B, b->shape[d]))
            return 0;
    return 1;
}

/* "float64 (3 n)" */
static void type_text(const tgV_graph *g, const tgV_node *v, char *buf, size_t size)
{
    char sh[200];
    snprintf(buf, size, "%s %s", tgV_dtype_name(v->dtype), tgV_shape_text(g, v->ndim, v->shape, sh, sizeof sh));
}

static const tgV_node *out_node(const tgV_graph *g, int i)
{
    return &g->nodes[g->outputs[i]];
}

/* The typed graph of t alone, or NULL (t does not type: a firing inside
 * a term that is not a tensor, or with a size the whole fixes). */
static tgV_graph *type_of(tg_ctx *ctx, size_t nin, tg_term *const *inputs, tg_term *t)
{
    tg_error e;
    tg_error_clear(&e);
    return tgV_build(ctx, nin, inputs, 1, &t, &e);
}

/* The first of the n firings whose after is typed other than its
 * before: err filled naming it, 1; 0 when none is. */
static int name_firing(tg_ctx *ctx, const tgZw_firing *fs, size_t n, size_t nin, tg_term *const *inputs,
                       tg_error *err)
{
    for (size_t k = 0; k < n; k++) {
        const tgZw_firing *f = &fs[k];
        tgV_graph *A = type_of(ctx, nin, inputs, f->before), *B = A ? type_of(ctx, nin, inputs, f->after) : NULL;
        if (!B || same_type(A, out_node(A, 0), B, out_node(B, 0)))
            continue;
        char ta[240], tb[240];
        type_text(A, out_node(A, 0), ta, sizeof ta);
        type_text(B, out_node(B, 0), tb, sizeof tb);
        char *sb = tgW_show(f->before), *sa = tgW_show(f->after);
        tgE_set(err, TG_ERR_TYPE, f->rule->file, f->rule->line, f->rule->col,
                "kernels: rule %s%s changed a node's type, refused: %s (%s) became %s (%s)",
                tg_symbol_name(f->rule->name, NULL), f->rule->backward ? " (reverse)" : "", sb ? sb : "?", ta,
                sa ? sa : "?", tb);
        free(sb);
        free(sa);
        return 1;
    }
    return 0;
}

int tgVa_check(tg_ctx *ctx, size_t nin, tg_term *const *inputs, size_t nout, tg_term *const *before,
               tg_term *const *after, tg_rules *rs, tg_term *spec, tg_error *err)
{
    tg_error e;
    tg_error_clear(&e);
    /* an unrewritten graph that does not type is the typer's to report,
     * on the rewritten terms, as without rules */
    tgV_graph *A = tgV_build(ctx, nin, inputs, nout, before, &e);
    if (!A)
        return 0;
    tgV_graph *B = tgV_build(ctx, nin, inputs, nout, after, &e);
    if (!B) {
        *err = e;
        return -1;
    }
    for (size_t i = 0; i < nout; i++) {
        const tgV_node *a = out_node(A, (int)i), *b = out_node(B, (int)i);
        if (same_type(A, a, B, b))
            continue;
        size_t nf;
        tgZw_firing *fs = tgZw_firings(ctx, rs, spec, nout, before, &nf);
        if (fs && name_firing(ctx, fs, nf, nin, inputs, err))
            return -1;
        char ta[240], tb[240];
        type_text(A, a, ta, sizeof ta);
        type_text(B, b, tb, sizeof tb);
        char *sb = tgW_show(before[i]), *sa = tgW_show(after[i]);
        tgE_set(err, TG_ERR_TYPE, NULL, 0, 0,
                "kernels: the rewrite changed output %zu's type, refused: %s (%s) became %s (%s)", i,
                sb ? sb : "?", ta, sa ? sa : "?", tb);
        free(sb);
        free(sa);
        return -1;
    }
    return 0;
}
