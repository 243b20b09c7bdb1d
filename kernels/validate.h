/* validate.h - validated replacements (module prefix tgVa_): rewritten
 * outputs keep the types of the outputs they replace.  See
 * doc/kernels.md. */
#ifndef TG_KERNELS_VALIDATE_H
#define TG_KERNELS_VALIDATE_H

#include "rset.h"

/* Runs the rewrite again with provenance on; its rule set, or NULL. */
typedef tg_rules *(*tgVa_rerun_fn)(void *ud);

/* 0 when each after[i] has before[i]'s dtype, rank and sizes (over the
 * inputs), or when the befores do not type (the caller's typer reports
 * that); else -1 with err naming the first firing whose replacement
 * changed its node's type (found through rerun, when not NULL), or the
 * output. */
int tgVa_check(tg_ctx *ctx, size_t nin, tg_term *const *inputs, size_t nout, tg_term *const *before,
               tg_term *const *after, tgVa_rerun_fn rerun, void *ud, tg_error *err);

#endif
