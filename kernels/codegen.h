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
#define TGJ_LOWERING_VERSION "13"

/* Floored division and modulo (Python's // and %, numpy's floor_divide
 * and remainder): integer division by 0 gives 0, the float ones follow
 * numpy's divmod.  One text for both paths: the interpreter expands it,
 * the generated code gets it stringized (TGJ_STR). */
#define TGJ_DIVMOD_DEFS \
    static inline int64_t tgk_idiv(int64_t a, int64_t b) { \
        if (b == 0) return 0; \
        if (b == -1) return (int64_t)(0 - (uint64_t)a); \
        int64_t q = a / b; \
        return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q; } \
    static inline int64_t tgk_imod(int64_t a, int64_t b) { \
        if (b == 0 || b == -1) return 0; \
        int64_t r = a % b; \
        return (r != 0 && (r < 0) != (b < 0)) ? r + b : r; } \
    static inline double tgk_fdiv(double a, double b) { \
        if (b == 0) return a / b; \
        double m = fmod(a, b), d = (a - m) / b; \
        if (m != 0 && (b < 0) != (m < 0)) d -= 1.0; \
        if (d == 0) return copysign(0.0, a / b); \
        double f = floor(d); \
        return d - f > 0.5 ? f + 1.0 : f; } \
    static inline double tgk_fmod(double a, double b) { \
        double m = fmod(a, b); \
        if (b == 0 || m != m) return m; \
        if (m == 0) return copysign(0.0, b); \
        return (b < 0) != (m < 0) ? m + b : m; }
/* softplus, log(1 + e^x), written so that nothing overflows: max(x, 0)
 * + log1p(e^-|x|) (x for large x, e^x for very negative x; NaN stays
 * NaN); both paths, as TGJ_DIVMOD_DEFS. */
#define TGJ_SOFTPLUS_DEF \
    static inline double tgk_softplus(double x) { return (x > 0 ? x : 0) + log1p(exp(-fabs(x))); }

/* A reduction to one value (every axis reduced) of more elements than
 * this folds its elements in blocks of this many, in C order, each block
 * from the reduction's identity, and the blocks' results into the
 * accumulator in block order.  The blocking does not depend on the thread
 * count, so the compiled loop runs the blocks on every OpenMP thread and
 * gives the same bits on any number of them; the interpreter and the
 * generated scan bodies fold in the same order.  Up to one block it is
 * the plain element order (the identity folded with a value is that
 * value). */
#define TGJ_RED_BLOCK 65536

#define TGJ_STR_(...) #__VA_ARGS__
#define TGJ_STR(...) TGJ_STR_(__VA_ARGS__)

/* Loops of more nodes than this stay in the interpreter: the compiler's
 * time grows faster than the loop.  An update step (inc_subtensor,
 * set_subtensor, with its value's loop fused in or not; inc_take) is a
 * loop over the part it writes, tgk_loopK too.  A value's loop of more
 * nodes is not fused into its update (schedule.c). */
#define TGJ_MAX_NODES 4096
static inline int tgJ_compiles(const tgH_step *st)
{
    return (st->kind == TGH_LOOP && st->nnodes <= TGJ_MAX_NODES) || st->kind == TGH_UPDATE ||
           st->kind == TGH_UPDATE_LOOP;
}

/* Whether loop k of a function's (outer) schedule is compiled: as
 * tgJ_compiles, except a loop whose nodes all have one element, 0-d or
 * of static sizes 1 (the
 * interpreter runs it about as fast as a call, and every loop compiled
 * costs the C compiler tens of milliseconds).  A scan's inner loops are
 * all compiled (tgJ_compiles). */
int tgJ_compiles_outer(const tgH_sched *s, int k);

/* The statements of one element of loop step st: loads of its inputs
 * through A(k, T) (k: position in ins then outs; T: C type), one local
 * v<node> per node (c<node> for comparisons), stores. */
struct tgB_buf;
void tgJ_put_body(struct tgB_buf *b, const tgH_sched *s, const tgH_step *st);

/* The functions tgk_loopK of the loops of s, without the prelude (for a
 * scan's inner schedule, whose names the caller renames with #define). */
void tgJ_put_loops(struct tgB_buf *b, const tgH_sched *s);

/* The C source of every loop of s (malloc'd, NUL-terminated); NULL when
 * out of memory.  The same schedule always gives the same text. */
char *tgJ_source(const tgH_sched *s, size_t *len);

#endif
