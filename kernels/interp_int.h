/* interp_int.h - what the interpreter's files share (module prefix
 * tgI_): interp.c, the steps of a schedule, interp_rows.c, the row
 * blocks (a linear model's forward and backward pass over blocks of
 * rows), and products.c, the products (module prefix tgPr_).  Internal to
 * kernels/. */
#ifndef TG_KERNELS_INTERP_INT_H
#define TG_KERNELS_INTERP_INT_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "codegen.h"
#include "interp.h"

typedef union reg {
    double f;
    int64_t i;
} reg;

/* Fold v into accumulator a (doubles when fl, else int64). */
static inline void fold1(tgV_op op, bool fl, reg *a, reg v)
{
    if (fl) {
        switch (op) {
        case TGV_PROD: a->f *= v.f; break;
        case TGV_MAX: a->f = a->f != a->f ? a->f : v.f != v.f || v.f > a->f ? v.f : a->f; break;
        case TGV_MIN: a->f = a->f != a->f ? a->f : v.f != v.f || v.f < a->f ? v.f : a->f; break;
        default: a->f += v.f;
        }
    } else {
        switch (op) {
        case TGV_PROD: a->i = (int64_t)((uint64_t)a->i * (uint64_t)v.i); break;
        case TGV_MAX: a->i = v.i > a->i ? v.i : a->i; break;
        case TGV_MIN: a->i = v.i < a->i ? v.i : a->i; break;
        default: a->i = (int64_t)((uint64_t)a->i + (uint64_t)v.i);
        }
    }
}

/* The identity of reduction op (the accumulators' start). */
static inline reg red_identity(tgV_op op, bool fl)
{
    reg r;
    if (fl)
        r.f = op == TGV_PROD ? 1 : op == TGV_MAX ? -INFINITY : op == TGV_MIN ? INFINITY : 0;
    else
        r.i = op == TGV_PROD ? 1 : op == TGV_MAX ? INT64_MIN : op == TGV_MIN ? INT64_MAX : 0;
    return r;
}

/* A reduction to one value folds blocks of TGJ_RED_BLOCK elements
 * (codegen.h): the current block's value and the elements left in it. */
typedef struct rblock {
    bool on;
    reg part;
    int64_t left;
} rblock;

/* The accumulators of a reduction fused into a loop: one reg per result
 * element, at byte strides over the loop's shape (0 on reduced axes). */
typedef struct facc {
    reg *acc;
    int64_t strides[TGV_MAXDIM];
    bool fl;                /* accumulated in double (else int64) */
    int64_t nred;           /* elements per result (mean divides by it) */
    rblock blk;             /* a reduction to one value: its blocks */
} facc;

/* interp.c (the elements and layouts products.c uses too, then the steps) */
/* Store register v as one element of dtype d at p. */
void tgI_st_elem(char *p, tg_dtype d, reg v);
/* Call fn(ud, offset_a, offset_b) over every index of shape (ndim,
 * shape), with byte offsets through strides sa and sb. */
typedef void (*tgI_visit_fn)(void *ud, int64_t oa, int64_t ob);
void tgI_for_each(int ndim, const int64_t *shape, const int64_t *sa, const int64_t *sb,
                  tgI_visit_fn fn, void *ud);
/* Copy src into dst (same shape), converting the dtype. */
void tgI_copy_arr(const tgI_arr *dst, const tgI_arr *src);
/* Write registers (C order over dst's shape, in dtype from) into dst. */
void tgI_store_regs(const tgI_arr *dst, const reg *acc, tg_dtype from);
void tgI_loop_strides(const tgI_arr *a, const tgI_arr *shape, int64_t *out);
void tgI_run_loop(const tgH_sched *s, tgI_state *st, const tgH_step *step, int *pos, facc *F);
int tgI_reduce_begin(const tgH_sched *s, tgI_state *st, int v, facc *F, tg_error *err);
void tgI_reduce_end(const tgH_sched *s, tgI_state *st, int v, facc *F);
void tgI_donated(const tgH_sched *s, tgI_state *st, const tgH_step *step);
int tgI_run_step(const tgH_sched *s, tgI_state *st, int k, tg_error *err);

/* interp_rows.c: steps k1 to k2 as row blocks when they are of that form:
 * k2, or 0 when they are not (the caller runs them one by one), or -1
 * with err. */
int tgI_row_blocks(const tgH_sched *s, tgI_state *st, int k1, tg_error *err);

#endif
