/* rwcache.h - the rewriting half of the pipeline cache (module prefix
 * tgZw_): what tg_fn_options.rules makes of a graph, stored under a key of
 * the unrewritten terms and the rule set's contents, so that compiling a
 * graph seen before skips the rewriter.  See doc/kernels.md. */
#ifndef TG_KERNELS_RWCACHE_H
#define TG_KERNELS_RWCACHE_H

#include "tgrel.h"

/* The outputs rewritten with opt->rules and opt->rewrite: from the cache
 * when an intact entry is there (*hit 1), else by the rewriter, the result
 * then validated (validate.h: each output keeps its type over inputs)
 * and stored.  A collector-scanned array, or NULL with err filled. */
tg_term **tgZw_rewrite(tg_ctx *ctx, size_t nin, tg_term *const *inputs, size_t nout, tg_term *const *outputs,
                       const tg_fn_options *opt, int *hit, tg_error *err);

/* The same rewrite run again, neither read from the cache nor stored
 * (the checking mode logs its firings). */
tg_term **tgZw_rewrite_again(tg_ctx *ctx, size_t nout, tg_term *const *outputs, const tg_fn_options *opt,
                             tg_error *err);

/* The terms as text that tgZw_decode reads back to the same pointers:
 * every distinct atom and list once (linear in the DAG).  malloc'd; NULL
 * when out of memory. */
char *tgZw_encode(size_t n, tg_term *const *terms, size_t *len);
/* Read n terms back from text into out; -1 when the text is not what
 * tgZw_encode writes for n terms. */
int tgZw_decode(tg_ctx *ctx, const char *text, size_t len, size_t n, tg_term **out);

#endif
