/* validate.h - validated replacements (module prefix tgVa_): rewritten
 * outputs keep the types of the outputs they replace.  See
 * doc/kernels.md. */
#ifndef TG_KERNELS_VALIDATE_H
#define TG_KERNELS_VALIDATE_H

#include "rset.h"

/* 0 when each after[i], what rs made of before[i] with rewriter spec,
 * has before[i]'s dtype, rank and sizes (over the inputs), or when the
 * befores do not type (the caller's typer reports that); else -1 with
 * err naming the first firing whose replacement changed its node's type
 * (the rewrite is run again to find it), or the output. */
int tgVa_check(tg_ctx *ctx, size_t nin, tg_term *const *inputs, size_t nout, tg_term *const *before,
               tg_term *const *after, tg_rules *rs, tg_term *spec, tg_error *err);

#endif
