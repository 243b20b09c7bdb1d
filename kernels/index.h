/* index.h - indexing and slicing (module prefix tgIx_): the typing of
 * (subtensor X IDX ...), the sizes that slices of symbolic sizes derive,
 * and the view a subtensor is at run time, also the part of X that
 * inc_subtensor and set_subtensor write.  See doc/kernels.md. */
#ifndef TG_KERNELS_INDEX_H
#define TG_KERNELS_INDEX_H

#include "interp.h"

typedef enum tgIx_kind { TGIX_INDEX, TGIX_DYNAMIC, TGIX_SLICE } tgIx_kind;

/* One IDX of a subtensor.  INDEX: the literal index in start; DYNAMIC: a
 * 0-d integer tensor, args[arg] of the node; SLICE: start stop step as
 * written, has_* false for none (numpy's defaults). */
typedef struct tgIx_axis {
    tgIx_kind kind;
    int64_t start, stop, step;
    bool has_start, has_stop, has_step;
    int arg;
} tgIx_axis;

typedef struct tgIx_spec {
    int n;                  /* indices given; the other axes are kept */
    tgIx_axis ax[TGV_MAXDIM];
} tgIx_spec;

/* A size class some slice of a symbolic size makes (cls): the length of
 * slice sl of class src, computed once the inputs bound src. */
typedef struct tgIx_dsize {
    int cls;
    tgV_size src;
    tgIx_axis sl;
    tg_term *term;          /* the subtensor first slicing so, for errors */
} tgIx_dsize;

/* Whether IDX is a tensor term (a dynamic index), not a literal or a slice. */
bool tgIx_is_index_tensor(const tg_term *idx);
/* Type subtensor node n (args: X then the index tensors, in order);
 * argt are the term's arguments.  -1 with err naming the subterm. */
int tgIx_type(tgV_graph *g, tgV_node *n, tg_term **argt, int nt, tg_error *err);
/* Whether class root c holds a derived size (bound by tgIx_bind). */
bool tgIx_derived(const tgV_graph *g, tgV_size c);
/* The slice that derives the size of symbol c (a size < 0), or NULL. */
const tgIx_dsize *tgIx_dsize_of(const tgV_graph *g, tgV_size c);
/* The size of slice a of an axis of size n in g (static, n itself, or a
 * derived class; t names the subtensor in errors): for a scan's lambda,
 * whose derived sizes its outer graph derives again. */
int tgIx_derive(tgV_graph *g, tg_term *t, tgV_size n, const tgIx_axis *a, tgV_size *out, tg_error *err);
/* numpy's slice of an axis of size n: its length, *first the first index. */
int64_t tgIx_slice_len(int64_t n, const tgIx_axis *a, int64_t *first);
/* Compute the derived sizes from those the inputs bound in symv; -1 with
 * err naming the subtensor when one disagrees with its class.  partial:
 * a slice of a size not bound yet (one concatenate derives, arrange.h)
 * is left for a later call, and 1 says so; else it is an error. */
int tgIx_bind(const tgV_graph *g, int64_t *symv, bool partial, tg_error *err);
/* Set the data and strides of subtensor node v from its base's; -1 with
 * err on an index out of range at call time. */
int tgIx_view(const tgV_graph *g, tgI_state *st, int v, tg_error *err);
/* The part x[IDX ...] of array x (of X's shape) that inc_subtensor or
 * set_subtensor node v writes: *part's dtype, shape, strides and data;
 * -1 with err on an index out of range. */
int tgIx_part(const tgV_graph *g, const tgI_state *st, int v, const tgI_arr *x, tgI_arr *part, tg_error *err);

#endif
