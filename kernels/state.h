/* state.h - shared variables and the updates of tensor functions (module
 * prefix tgSt_): the per-context storage behind tg_shared_*, and what a
 * function with shared variables, updates or non-strict inputs does
 * around the interpreter's run.  See doc/kernels.md, "Shared variables
 * and updates". */
#ifndef TG_KERNELS_STATE_H
#define TG_KERNELS_STATE_H

#include "interp.h"

/* What a function keeps for its shared variables and updates (malloc'd
 * memory; the variables are referenced, not terms). */
typedef struct tgSt_fn tgSt_fn;

/* Split ((SHARED VALUE) ...) into targets and values (collector memory);
 * 0, or -1 with err filled when it is not a list of pairs. */
/* The slot of ctx's kernels registry that userop.c keeps its ops in
 * (made when make is set; NULL when there is none), free_fn (when not
 * NULL) freeing them with the context. */
void **tgSt_userops(tg_ctx *ctx, int make, void (*free_fn)(void *));
int tgSt_split(tg_ctx *ctx, tg_term *updates, size_t *n, tg_term ***targets, tg_term ***values,
               tg_error *err);

/* The state of a function over schedule s, whose graph has nin inputs of
 * the caller's (then its shared leaves) and nout outputs of the caller's
 * (then its update values): the leaves resolved to ctx's variables (of
 * the dtype and rank declared) and the plan of each update.  NULL with
 * err filled. */
tgSt_fn *tgSt_new(tg_ctx *ctx, const tgH_sched *s, size_t nin, size_t nout, int downcast,
                  tg_error *err);
void tgSt_free(tgSt_fn *f);

/* tgI_run with the shared variables bound and the updates written once
 * every value is computed; a failed call changes no variable. */
int tgSt_call(const tgH_sched *s, tgI_state *st, tgSt_fn *f, const tg_array *in, tg_array *out,
              tg_error *err);

/* sched with (updates (NAME VALUE inplace|staged) ...) appended. */
tg_term *tgSt_schedule(const tgH_sched *s, const tgSt_fn *f, tg_term *sched);

#endif
