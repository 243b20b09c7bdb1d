/* loopdrv.h - the part of a compiled loop that is the same for every loop
 * (module prefix tgLd_): walking the loop's N-d index range, splitting
 * rows into chunks, gathering operands that are not contiguous into
 * buffers and scattering results back, and folding fused reductions.
 * The generated code holds only the element work, a kernel over a
 * contiguous run of elements (codegen.c), and calls this driver through
 * a pointer the loader sets (tgLd_bind), so the C compiler never sees the
 * boilerplate: it is compiled once, with the library. */
#ifndef TG_KERNELS_LOOPDRV_H
#define TG_KERNELS_LOOPDRV_H

#include <stdint.h>

/* The declarations the generated code and the driver share (one text for
 * both, stringized into the generated prelude as TGJ_DIVMOD_DEFS is).
 * A loop's descriptor: nd axes; nin inputs, nout outputs, nred fused
 * reductions (operands in that order); flags: TGLD_BLOCKED when every
 * reduction is to one value (codegen.h's TGJ_RED_BLOCK blocking),
 * TGLD_PAR when the code was compiled with OpenMP (the loop may run on
 * its threads); bm the inputs broadcast along the innermost axis (bit q:
 * the kernel reads element 0 of operand q for every i); size[q] the bytes
 * of an element of input or output q (0: a constant, no operand); red[r]
 * reduction r's fold, TGLD_SUM ... plus TGLD_INT when it accumulates in
 * int64_t (else double); kc, when not NULL, the same kernel reading every
 * operand as contiguous, the inputs of bm too (NULL with bm 0: k itself),
 * for runs of several short rows (tgLd_range).
 * A kernel runs elements [0, n) with p[q] the first element of operand q
 * (contiguous, or read at 0 when broadcast), and writes reduction r's
 * values, converted to its accumulator type, to p[nin + nout + r][i]; n is
 * at most TGLD_CHUNK when the loop has reductions. */
#define TGLD_DEFS                                                                                        \
    enum { TGLD_SUM = 0, TGLD_PROD = 1, TGLD_MAX = 2, TGLD_MIN = 3, TGLD_INT = 4, TGLD_CHUNK = 256,       \
           TGLD_BLOCKED = 1, TGLD_PAR = 2 };                                                             \
    typedef struct tgk_desc {                                                                            \
        int nd, nin, nout, nred, flags;                                                                  \
        unsigned long long bm;                                                                           \
        const unsigned char *size, *red;                                                                 \
        void (*kc)(int64_t n, char *const *p);                                                           \
    } tgk_desc;                                                                                          \
    typedef void (*tgk_kern)(int64_t n, char *const *p);                                                 \
    typedef void (*tgk_drive_fn)(const tgk_desc *d, tgk_kern k, const int64_t *shape, char *const *base, \
                                 const int64_t *st);

TGLD_DEFS

/* Elements below which a loop runs on one thread. */
#define TGLD_PAR_MIN 32768

/* Run the whole loop of sizes shape (d->nd of them): operands at base
 * with byte strides st[q * max(nd, 1) + axis] (q over inputs, outputs,
 * then the reductions' accumulators, which move with the index and have
 * stride 0 along reduced axes), the element work done by kernel k.  What
 * the generated tgk_loopK did: a loop without reductions of at least
 * TGLD_PAR_MIN elements split over the OpenMP threads (TGLD_PAR), a
 * blocked one's blocks run on them, each from the reductions' identities,
 * and folded in block order; any other in one piece.  Elements are
 * visited, and reductions folded, in C order: the bits do not depend on
 * the threads, and are those of one element at a time. */
void tgLd_loop(const tgk_desc *d, tgk_kern k, const int64_t *shape, char *const *base, const int64_t *st);

/* Flat indices [lo, hi) of such a loop, on this thread.  Rows of at
 * most TGLD_CHUNK / 2 elements go to the kernel (kc when there is one)
 * in groups of TGLD_CHUNK / length whole rows counted from the loop's
 * first; a part of a group at either end of the range runs as its
 * whole group would, through buffers, so an element's place in its
 * kernel call depends on the shape alone. */
void tgLd_range(const tgk_desc *d, tgk_kern k, const int64_t *shape, char *const *base, const int64_t *st,
                int64_t lo, int64_t hi);

/* Point the compiled code of so (a dlopen handle) at the driver: 0, or -1
 * when the code has no driver pointer (it was not made by codegen.c). */
int tgLd_bind(void *so);

#endif
