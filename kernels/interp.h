/* interp.h - the built-in interpreter of schedules (module prefix tgI_):
 * binds symbolic sizes from the call's arrays, plans the workspace and
 * runs fused loops block by block.  See doc/kernels.md. */
#ifndef TG_KERNELS_INTERP_H
#define TG_KERNELS_INTERP_H

#include "codegen.h"

#include <signal.h>
#include <stdint.h>
#include <string.h>

/* A value at run time: like tg_array (strides in bytes). */
typedef struct tgI_arr {
    tg_dtype dtype;
    int ndim;
    int64_t shape[TGV_MAXDIM];
    int64_t strides[TGV_MAXDIM];
    char *data;
} tgI_arr;

/* What a function keeps between calls (malloc'd memory, never terms). */
typedef struct tgI_state {
    tgI_arr *vals;          /* per node */
    int64_t *symv;          /* per size class */
    int64_t *last;          /* symv when the node shapes were last computed */
    int shaped;             /* vals' shapes, consts and slots fit last */
    char **slots;           /* workspace slots and their capacities */
    size_t *slotcap;
    size_t *slotneed;
    int nslots;
    double *regs;           /* loop block registers */
    size_t nregs;
    int *regof;             /* per loop member: its block register */
    int64_t *consts;        /* per node: storage of a constant's value */
    int *pos;               /* per node: register of the loop running */
    tgJ_loop_fn *kern;      /* per step: compiled loop (a scan: its function), or NULL */
    struct tgSc_state **scans;  /* per step: a scan's runtime state, or NULL */
    size_t nscansteps;
    uint32_t rstream;       /* random draws' stream: 0 for a function, one per
                             * step of a scan's body (random.c) */
    /* tg_fn_interrupt sets intr; intrp is the flag the running call
     * polls: its own, or for a scan's inner schedule the outer call's */
    volatile sig_atomic_t intr;
    volatile sig_atomic_t *intrp;
} tgI_state;

int tgI_init(tgI_state *st, const tgH_sched *s);
void tgI_free(tgI_state *st);
/* Run s on the inputs, writing the outputs (allocating those with NULL
 * data); 0 or -1 with err filled. */
int tgI_run(const tgH_sched *s, tgI_state *st, const tg_array *in, tg_array *out, tg_error *err);

/* For scans, which run an inner schedule many times per call: tgI_bind
 * binds the sizes from in and computes shapes and workspace (outputs must
 * have their data); tgI_exec then runs the steps on whatever data the
 * input and output values point at (st->vals), and copies the outputs
 * not written in place into out. */
int tgI_bind(const tgH_sched *s, tgI_state *st, const tg_array *in, tg_array *out, tg_error *err);
int tgI_exec(const tgH_sched *s, tgI_state *st, tg_array *out, tg_error *err);

/* Elements of a. */
int64_t tgI_count(const tgI_arr *a);
/* a's strides set to C order. */
void tgI_c_strides(tgI_arr *a);
/* Is a laid out in C order (axes of extent 1 aside)? */
bool tgI_is_c_contig(const tgI_arr *a);

/* Step idx to the next index of shape (ndim axes) in C order: the bytes
 * that move a pointer along strides with it (back to the start after
 * the last index). */
static inline int64_t tgI_next(int ndim, const int64_t *shape, const int64_t *strides, int64_t *idx)
{
    int64_t off = 0;
    for (int d = ndim - 1; d >= 0; d--) {
        off += strides[d];
        if (++idx[d] < shape[d])
            return off;
        off -= strides[d] * shape[d];
        idx[d] = 0;
    }
    return off;
}

/* One element at p of dtype d, as a double, or as an integer (of an
 * integer or bool dtype; a float is truncated), for the interpreter's
 * loops and the ops that pick elements (arrange.c). */
static inline double tgI_ld_f(const char *p, tg_dtype d)
{
    switch (d) {
    case TG_FLOAT64: { double v; memcpy(&v, p, 8); return v; }
    case TG_FLOAT32: { float v; memcpy(&v, p, 4); return v; }
    case TG_INT64: { int64_t v; memcpy(&v, p, 8); return (double)v; }
    case TG_INT32: { int32_t v; memcpy(&v, p, 4); return v; }
    default: return *(const unsigned char *)p != 0;
    }
}

static inline int64_t tgI_ld_i(const char *p, tg_dtype d)
{
    switch (d) {
    case TG_INT64: { int64_t v; memcpy(&v, p, 8); return v; }
    case TG_INT32: { int32_t v; memcpy(&v, p, 4); return v; }
    case TG_BOOL: return *(const unsigned char *)p != 0;
    default: return (int64_t)tgI_ld_f(p, d);
    }
}

#endif
