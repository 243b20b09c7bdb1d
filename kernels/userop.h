/* userop.h - elementwise ops an embedder defines with a C expression
 * (module prefix tgUo_, and the public tg_fn_def_elementwise): kept per
 * context, typed as elementwise float ops (tensor.c), compiled into the
 * generated loops (codegen.c), run by the interpreter through the C
 * function given with them (interp.c).  See doc/kernels.md. */
#ifndef TG_KERNELS_USEROP_H
#define TG_KERNELS_USEROP_H

#include <stddef.h>

#include "tgrel.h"

#define TGUO_MAXARGS 8

typedef struct tgUo_op {
    char *name;
    unsigned nargs;
    char *expr;             /* C, over double x0 ... */
    tg_elementwise_fn fn;
    void *ud;
    struct tgUo_op *next;
} tgUo_op;

/* The op of ctx named name (len bytes), or NULL. */
const tgUo_op *tgUo_find(tg_ctx *ctx, const char *name, size_t len);
/* Every op of ctx as text (name, arity and expression), for the key of
 * compiled code: malloc'd ("" when none), NULL when out of memory. */
char *tgUo_key_text(tg_ctx *ctx);

#endif
