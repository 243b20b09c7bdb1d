/* check.h - the checking mode (module prefix tgCk_): the unrewritten
 * graph run in the interpreter beside a function compiled from rewritten
 * terms, and the first rule whose firing changed the values named.  See
 * doc/kernels.md. */
#ifndef TG_KERNELS_CHECK_H
#define TG_KERNELS_CHECK_H

#include "rset.h"

#define TGCK_TOL 1e-7       /* the default relative tolerance */
#define TGCK_TOL32 1e-4     /* the least one for float32 outputs */

typedef struct tgCk tgCk;

/* The check of a function of outputs (unrewritten) over inputs whose
 * terms rs rewrote with spec (NULL: default): the interpreted function
 * of outputs, and the firings of the rewrite (run again to log them).  tol: relative tolerance (0: the
 * default; not a finite number >= 0: an error).  NULL with err filled. */
tgCk *tgCk_new(tg_ctx *ctx, size_t nin, tg_term *const *inputs, size_t nout, tg_term *const *outputs,
               double tol, tg_rules *rs, tg_term *spec, tg_error *err);
/* Compare out, the outputs of a call on in, with the unrewritten graph's
 * on in: 0 when within the tolerance, else -1 with err (TG_ERR_CHECK)
 * naming the first firing that changed the values. */
int tgCk_run(tgCk *c, const tg_array *in, const tg_array *out, tg_error *err);
void tgCk_free(tgCk *c);

#endif
