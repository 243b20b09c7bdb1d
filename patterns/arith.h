/* arith.h - the numeric built-ins of rules (module prefix tgQ_): exact
 * integer and rational arithmetic on GMP, IEEE doubles, comparisons and
 * conversions, called by name `num:...` in conditions and right sides.
 *
 * A built-in either computes a number or declines (a non-number argument,
 * a division by an exact zero, an exponent beyond the limit, ...): the
 * rule that called it then does not fire.  Nothing here aborts on input
 * or recurses.
 */
#ifndef TG_ARITH_H
#define TG_ARITH_H

#include "tgrel.h"

/* The reserved prefix: no op may be declared with a name starting so. */
#define TGQ_PREFIX "num:"
#define TGQ_PREFIX_LEN 4

/* A pow whose exact result would take more bits than this declines. */
#define TGQ_POW_MAX_BITS (1L << 24)

/* True when the symbol name (len bytes) is in the reserved namespace. */
int tgQ_reserved(const char *name, size_t len);

/* The built-in called name (len bytes, prefix included): its id, >= 0,
 * with its argument counts (*amax -1: any number); -1 when unknown.
 * *test is set for comparisons (their value is 1 or 0). */
int tgQ_lookup(const char *name, size_t len, int *amin, int *amax, int *test);

/* Apply built-in id to the n arguments: 1 with *out, 0 when it declines,
 * -1 when out of memory. */
int tgQ_apply(tg_ctx *ctx, int id, unsigned n, tg_term *const *args, tg_term **out);

#endif
