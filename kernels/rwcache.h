/* rwcache.h - the rewriting half of the pipeline cache (module prefix
 * tgZw_): what tg_fn_options.rules makes of a graph, stored under a key of
 * the unrewritten terms and the rule set's contents, so that compiling a
 * graph seen before skips the rewriter.  See doc/kernels.md. */
#ifndef TG_KERNELS_RWCACHE_H
#define TG_KERNELS_RWCACHE_H

#include "tgrel.h"

/* The expansion the outputs need before they are rewritten (fn.c: the
 * ops the rule sets define, then the grads), run on a miss only: a hit
 * is keyed by the unexpanded outputs and everything the expansion is a
 * function of (opt->rules, opt->grad, the context's C-expression ops,
 * and the library's own grad rules, which its build stands for), so a
 * warm compile never parses the grad rules nor sweeps.  run fills out
 * (0, or -1 with err filled); nodes and ms are set by tgZw_rewrite: the
 * distinct nodes of the expanded outputs (stored with the entry) and
 * run's time (0 on a hit). */
typedef struct tgZw_expansion {
    int (*run)(void *ud, size_t n, tg_term *const *in, tg_term **out, tg_error *err);
    void *ud;
    size_t nodes;
    double ms;
} tgZw_expansion;

/* The outputs rewritten with opt->rules and opt->rewrite: from the cache
 * when an intact entry is there (*hit 1), else by the rewriter, the result
 * then validated (validate.h: each output keeps its type over inputs)
 * and stored.  ex NULL: the outputs are expanded already; else they are
 * expanded by ex on a miss.  A collector-scanned array, or NULL with err
 * filled. */
tg_term **tgZw_rewrite(tg_ctx *ctx, size_t nin, tg_term *const *inputs, size_t nout, tg_term *const *outputs,
                       const tg_fn_options *opt, tgZw_expansion *ex, int *hit, tg_error *err);

/* A firing of a rewrite: the rule, its redex and what it gave. */
typedef struct tgZw_firing {
    struct tgW_rule *rule;
    tg_term *before, *after;
} tgZw_firing;

/* The firings that changed a term when rs rewrites the outputs with spec
 * (NULL: default) again, not from the cache, with provenance on: a
 * collector array of *n in the order they fired, or NULL when the
 * rewrite did not run.  rs's provenance setting is left as it was. */
tgZw_firing *tgZw_firings(tg_ctx *ctx, tg_rules *rs, tg_term *spec, size_t nout, tg_term *const *outputs,
                          size_t *n);

/* The terms as text that tgZw_decode reads back to the same pointers:
 * every distinct atom and list once (linear in the DAG).  malloc'd; NULL
 * when out of memory. */
char *tgZw_encode(size_t n, tg_term *const *terms, size_t *len);
/* Read n terms back from text into out; -1 when the text is not what
 * tgZw_encode writes for n terms. */
int tgZw_decode(tg_ctx *ctx, const char *text, size_t len, size_t n, tg_term **out);

#endif
