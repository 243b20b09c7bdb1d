/* schedule.h - the schedule of a typed graph (module prefix tgH_): steps in
 * order (fused elementwise loops, reductions, dots, views), and the buffer
 * plan (slots reused once dead, in-place writes).  See doc/kernels.md. */
#ifndef TG_KERNELS_SCHEDULE_H
#define TG_KERNELS_SCHEDULE_H

#include "tensor.h"

/* TGH_UPDATE: an inc_subtensor or set_subtensor (X copied into the
 * result unless it is written in place, then a generated loop over the
 * part, codegen.c) */
typedef enum tgH_kind { TGH_LOOP, TGH_REDUCE, TGH_DOT, TGH_VIEW, TGH_RESHAPE, TGH_GEMM, TGH_SCAN, TGH_RANDOM,
                        TGH_UPDATE } tgH_kind;

typedef struct tgH_step {
    tgH_kind kind;
    int node;               /* the node computed (a loop: its first node) */
    int *nodes, nnodes;     /* LOOP: cluster nodes, arguments first */
    int *ins, nins;         /* LOOP: nodes read from outside the cluster */
    int *outs, nouts;       /* LOOP, SCAN: nodes stored (used outside, or outputs) */
    int *reds, nreds;       /* LOOP: reductions of members, accumulated in the loop */
} tgH_step;

typedef struct tgH_sched {
    tgV_graph *g;
    tgH_step *steps;
    int nsteps;
    int *slot;              /* per node: workspace slot or -1 */
    int *inplace;           /* per node: a caller input it may overwrite, or -1 */
    int *output;            /* per node: first output position it is, or -1 */
    int *base;              /* per node: the node whose memory it views (itself if none) */
    int nslots;
} tgH_sched;

/* Schedule g; kept[i] nonzero (or kept NULL) keeps input i intact.  NULL
 * with err filled when out of memory. */
tgH_sched *tgH_schedule(tgV_graph *g, const unsigned char *kept, tg_error *err);
/* The schedule as a term (see doc/kernels.md). */
tg_term *tgH_term(const tgH_sched *s, tg_error *err);

/* Pieces of the schedule's text (for scan steps, kernels/scan.c). */
struct tgB_buf;
void tgH_put_name(const tgH_sched *s, struct tgB_buf *b, int v);
void tgH_put_dest(const tgH_sched *s, struct tgB_buf *b, int v);

#endif
