/* grad.h - reverse-mode gradients (module prefix tgGr_): the expansion of
 * (grad COST WRT) terms, for the pipeline (fn.c).  See doc/grad.md. */
#ifndef TG_KERNELS_GRAD_H
#define TG_KERNELS_GRAD_H

#include <stddef.h>

#include "tgrel.h"

/* out[i] = ts[i] with every grad expanded (innermost first), the n terms
 * sharing one sweep's rules and memo; 0, or -1 with err filled.  out
 * must be memory the collector scans. */
int tgGr_expand(tg_ctx *ctx, size_t n, tg_term *const *ts, tg_term **out, const tg_grad_options *opt,
                tg_error *err);
/* The same where ts may hold applications of ops that define(ud, t)
 * gives a definition of (defop ops whose gradient is a vjp rule of
 * their own): each is a node of its definition's type, differentiated
 * by its vjp rule; define NULL: as tgGr_expand. */
int tgGr_expand_defined(tg_ctx *ctx, size_t n, tg_term *const *ts, tg_term **out, const tg_grad_options *opt,
                        tg_term *(*define)(void *ud, tg_term *t), void *ud, tg_error *err);

#endif
