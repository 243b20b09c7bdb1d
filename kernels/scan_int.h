/* scan_int.h - what the scan's two files share (module prefix tgSc_):
 * scan.c, the scan term read, typed and run, and scan_loop.c, the
 * compiled loop (the generated function of a scan and its tables).
 * Internal to kernels/. */
#ifndef TG_KERNELS_SCAN_INT_H
#define TG_KERNELS_SCAN_INT_H

#include <stdint.h>

#include "scan.h"

/* The storage of output o: the stacked output (full) or a ring. */
typedef struct store {
    char *base;
    int64_t rowstride;      /* bytes between the rows of two steps */
    int64_t mask;           /* ring: rows - 1; full: -1 */
    int64_t strides[TGV_MAXDIM];   /* within a row */
} store;

struct tgSc_state {
    const tgSc_scan *sc;
    tgI_state in;           /* the inner schedule's interpreter state */
    tg_array *pin, *pout;   /* per parameter, per inner output */
    store *stor;            /* per output */
    char **ring;            /* per output: ring memory (malloc'd) or NULL */
    size_t *ringcap;
    char **scr;             /* per result of a MITMOT: this step's value (malloc'd) */
    size_t *scrcap;
    int64_t cond[2];        /* where the until condition lands */
};

/* The number of elements of shape (ndim, shape). */
int64_t tgSc_elems(int ndim, const int64_t *shape);
/* The output whose tap parameter p is, and the tap's distance; -1 if none. */
int tgSc_tap_of(const tgSc_scan *sc, int p, int *dist);

/* The generated function (doc/scan.md): steps done. */
typedef void (*blas_fn)(void);
typedef int64_t (*native_fn)(int64_t n, char *const *P, const int64_t *R, const int64_t *z, blas_fn const *fp);
/* Run fn over the scan of step `step` (scan_loop.c): steps done, or -1
 * when the arrays do not suit it (the interpreter runs the scan then). */
int64_t tgSc_run_native(const tgH_sched *s, tgI_state *st, const tgH_step *step, tgSc_state *ss,
                        native_fn fn, int64_t n);

#endif
