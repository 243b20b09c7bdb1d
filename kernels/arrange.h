/* arrange.h - ops that pick and arrange elements (module prefix tgAr_):
 * argmax / argmin over an axis, concatenate and stack, take (rows by an
 * index vector) and inc_take, one_hot, and the parts of concatenate and
 * stack that their gradients are made of.  Each is a step of its own run
 * by the interpreter's code on both paths.  See doc/kernels.md,
 * "Picking and arranging". */
#ifndef TG_KERNELS_ARRANGE_H
#define TG_KERNELS_ARRANGE_H

#include "interp.h"

/* A size class concatenate makes from symbolic sizes: the sum of parts,
 * computed once the inputs bound them. */
typedef struct tgAr_dsum {
    int cls;
    int nparts;
    tgV_size *parts;
    tg_term *term;          /* the concatenate, for errors */
} tgAr_dsum;

/* Whether op is one of this module's. */
bool tgAr_op(tgV_op op);
/* Type node n of op tgAr_op (args: its tensor arguments, set); argt are
 * the term's arguments.  -1 with the error set (naming the subterm). */
int tgAr_type(tgV_builder *b, tgV_node *n, tg_term **argt, int nt);
/* Whether class root c holds a size concatenate derived. */
bool tgAr_derived(const tgV_graph *g, tgV_size c);
/* The sum that derives the size of symbol c (a size < 0), or NULL. */
const tgAr_dsum *tgAr_dsum_of(const tgV_graph *g, tgV_size c);
/* The size of the sum of parts[0..k) in b's graph (static, or a derived
 * class; t names the concatenate in errors): for a scan's lambda, whose
 * derived sizes its outer graph derives again. */
int tgAr_derive(tgV_builder *b, tg_term *t, tgV_size *parts, int k, tgV_size *out);
/* Compute the derived sums from the sizes bound in symv; -1 with err
 * when one disagrees with its class; partial as tgIx_bind's. */
int tgAr_bind(const tgV_graph *g, int64_t *symv, bool partial, tg_error *err);
/* Run node v (a step of kind TGH_REDUCE; inc_take of TGH_UPDATE); 0, or -1 with err naming the
 * term (an index out of range, argmax of an empty axis). */
int tgAr_run(const tgH_sched *s, tgI_state *st, int v, tg_error *err);
/* Run inc_take node v (an update step): the indices checked, then by
 * the generated loop fn or, fn NULL, as tgAr_run. */
int tgAr_inc_take(const tgH_sched *s, tgI_state *st, int v, tgJ_loop_fn fn, tg_error *err);

#endif
