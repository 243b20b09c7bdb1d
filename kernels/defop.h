/* defop.h - ops a rule set defines in terms of others (module prefix
 * tgDo_): (defop (NAME ?P ...) BODY) in a .rules file, expanded in a
 * function's terms before anything else (doc/rules.md, Ops defined in
 * terms of others). */
#ifndef TG_KERNELS_DEFOP_H
#define TG_KERNELS_DEFOP_H

#include "tgrel.h"

/* terms[0..n) with every application of an op rs defines replaced by its
 * definition, innermost first (definitions inside definitions too), into
 * out (may be terms).  rs NULL, or without definitions: copied.  0, or
 * -1 with err filled. */
int tgDo_expand(tg_ctx *ctx, tg_rules *rs, size_t n, tg_term *const *terms, tg_term **out, tg_error *err);

#endif
