/* random.h - random draws (module prefix tgRn_): (random KIND STATE (SIZE
 * ...) PARAM ...) typed as a node of its own and run as a step of its
 * own, from the counter-based generator Philox4x32-10.  See
 * doc/kernels.md, "Random numbers". */
#ifndef TG_KERNELS_RANDOM_H
#define TG_KERNELS_RANDOM_H

#include "interp.h"

enum { TGRN_UNIFORM, TGRN_NORMAL, TGRN_BERNOULLI, TGRN_INTEGERS };

/* The op name of a random draw. */
bool tgRn_head(const char *name, size_t len);
/* Type t as tensor.c's builder meets it: 1 when its node is made, 0 with
 * *need set to an argument to build first, -1 with the error set. */
int tgRn_build(tgV_builder *b, tg_term *t, tg_term **need);
/* Fill node v's value (step of kind TGH_RANDOM); 0, or -1 with err
 * naming the term (invalid parameters). */
int tgRn_run(const tgH_sched *s, tgI_state *st, int v, tg_error *err);
/* The stream of the draws of step `step` of a scan's body run within
 * stream parent (0: a function's own draws). */
uint32_t tgRn_stream(uint32_t parent, int64_t step);
/* The name of kind k. */
const char *tgRn_kind_name(int k);

/* Philox4x32-10 of counter ctr under key (in place). */
void tgRn_philox(uint32_t ctr[4], const uint32_t key[2]);

#endif
