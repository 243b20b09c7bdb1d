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
/* The same, but the ops that have a vjp rule in keep (a gradient rule
 * set; NULL: none) are left whole, for their gradient to be that rule. */
int tgDo_expand_keep(tg_ctx *ctx, tg_rules *rs, const tg_rules *keep, size_t n, tg_term *const *terms,
                     tg_term **out, tg_error *err);
/* Whether rule set grs has a vjp rule for op (a symbol): (vjp (OP ...) ?g). */
int tgDo_has_vjp(tg_ctx *ctx, const tg_rules *grs, const tg_term *op);

/* The normal form of t under rs's rules but its definitions (a vjp of a
 * node kept whole: its vjp rule must see the node, not its expansion);
 * NULL with err filled. */
tg_term *tgDo_normalize_undefined(tg_rules *rs, tg_term *t, tg_error *err);

/* The rule sets whose definitions a gradient's typer expands. */
typedef struct tgDo_defs {
    tg_ctx *ctx;
    tg_rules *rs[2];
} tgDo_defs;
/* For tgV_set_defined: the definition of t, fully expanded, when t is an
 * application of an op one of ud's (a tgDo_defs) rule sets defines;
 * else NULL. */
tg_term *tgDo_define(void *ud, tg_term *t);

#endif
