/* schedule.h - the schedule of a typed graph (module prefix tgH_): steps in
 * order (fused elementwise loops, reductions, dots, views), and the buffer
 * plan (slots reused once dead, in-place writes).  See doc/kernels.md. */
#ifndef TG_KERNELS_SCHEDULE_H
#define TG_KERNELS_SCHEDULE_H

#include "tensor.h"

/* TGH_UPDATE: an inc_subtensor or set_subtensor (X copied into the
 * result unless it is written in place, then a generated loop over the
 * part, codegen.c), or an inc_take (a generated loop over IDX's rows).
 * TGH_UPDATE_LOOP: an inc_subtensor or set_subtensor whose value V is
 * elementwise and read by nothing else: V's loop is fused into the
 * update's (nodes: V's cluster, V among them; ins: what the cluster
 * reads, then X and the index tensors; node: the update), so V is never
 * stored. */
typedef enum tgH_kind { TGH_LOOP, TGH_REDUCE, TGH_DOT, TGH_VIEW, TGH_RESHAPE, TGH_GEMM, TGH_SCAN, TGH_RANDOM,
                        TGH_UPDATE, TGH_UPDATE_LOOP } tgH_kind;

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

/* Whether a member of fused update step st's value loop reads node a
 * (else st reads a for the update: X, an index tensor). */
bool tgH_value_reads(const tgH_sched *s, const tgH_step *st, int a);

/* Pieces of the schedule's text (for scan steps, kernels/scan.c). */
struct tgB_buf;
void tgH_put_name(const tgH_sched *s, struct tgB_buf *b, int v);
void tgH_put_dest(const tgH_sched *s, struct tgB_buf *b, int v);

#endif
