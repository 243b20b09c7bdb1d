/* codegen.h - C source for the loops of a schedule (module prefix tgJ_).
 * Each fused loop becomes one function `tgk_loopK` (K its step index) of
 * the signature below, computing exactly what the interpreter computes
 * (same promotions, roundings and wraparounds; see doc/kernels.md). */
#ifndef TG_KERNELS_CODEGEN_H
#define TG_KERNELS_CODEGEN_H

#include "schedule.h"

/* shape: the loop's sizes; base: a pointer per input then per output (in
 * the step's ins / outs order; constants are immediates and get a NULL);
 * strides: bytes, [input-or-output][axis]. */
typedef void (*tgJ_loop_fn)(const int64_t *shape, char *const *base, const int64_t *strides);

/* The version of the lowering (types, schedule, code generation): it is
 * part of the compile cache's key, which is computed from the input terms
 * without generating the source.  Change it with any change to what
 * tensor.c, schedule.c or codegen.c make of a term (the key also holds
 * the library's build ID where the linker writes one). */
#define TGJ_LOWERING_VERSION "1"

/* Loops of more nodes than this stay in the interpreter: the compiler's
 * time grows faster than the loop. */
#define TGJ_MAX_NODES 4096
static inline int tgJ_compiles(const tgH_step *st)
{
    return st->kind == TGH_LOOP && st->nnodes <= TGJ_MAX_NODES;
}

/* The C source of every loop of s (malloc'd, NUL-terminated); NULL when
 * out of memory.  The same schedule always gives the same text. */
char *tgJ_source(const tgH_sched *s, size_t *len);

#endif
