/* rtypes.c - the tensor types the typed guards of rules see (module
 * prefix tgRt_): the typer of patterns/typed.h over the kernels' typed
 * graph (tensor.h), installed in a rule set by tg_rules_tensor_types and
 * by the compile pipeline for its rewrite.  One run of the rules types
 * into one graph, so each subterm is typed once per run, and sizes known
 * by name are those of that graph's classes. */
#include "config.h"

#include <gc/gc.h>

#include "error.h"
#include "rtypes.h"
#include "tensor.h"
#include "typed.h"

typedef struct state {
    tgV_builder *b;
    tg_error e;
} state;

static void *open_state(tg_ctx *ctx)
{
    state *s = GC_MALLOC(sizeof *s);
    if (!s)
        return NULL;
    tg_error_clear(&s->e);
    return (s->b = tgV_open_any(ctx, &s->e)) ? s : NULL;
}

static int type_of(void *st, tg_term *t, tgTy_type *out)
{
    state *s = st;
    int v = tgV_add(s->b, t);
    if (v < 0)
        return s->e.code == TG_ERR_NOMEM ? -1 : 0;
    const tgV_graph *g = tgV_graph_of(s->b);
    const tgV_node *n = &g->nodes[v];
    out->dtype = n->dtype, out->ndim = n->ndim, out->weak = n->weak;
    for (int d = 0; d < n->ndim; d++) {
        tgV_size z = tgV_canon(g, n->shape[d]);
        out->size[d] = z >= 0 ? tg_int(g->ctx, z) : g->syms[-(z + 1)];
        if (!out->size[d])
            return -1;
    }
    return 1;
}

static const tgTy_typer typer = {open_state, type_of};

const tgTy_typer *tgRt_install(tg_rules *rs)
{
    const tgTy_typer *old = rs->typer;
    if (old != &typer)
        tgTy_set(rs, &typer);
    return old;
}

void tgRt_restore(tg_rules *rs, const tgTy_typer *old)
{
    if (rs->typer != old)
        tgTy_set(rs, old);
}

int tg_rules_tensor_types(tg_rules *rs, int on, tg_error *err)
{
    if (!rs)
        return tgE_arg(err, "tg_rules_tensor_types: NULL rule set"), -1;
    tgTy_set(rs, on ? &typer : NULL);
    return 0;
}
