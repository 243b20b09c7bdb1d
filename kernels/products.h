/* products.h - the interpreter's products (module prefix tgPr_): dot and
 * GEMM nodes (products.c).  Internal to kernels/. */
#ifndef TG_KERNELS_PRODUCTS_H
#define TG_KERNELS_PRODUCTS_H

#include "interp.h"

/* Node v of s, a dot or a GEMM, into its value: 0, or -1 with err. */
int tgPr_run_dot(const tgH_sched *s, tgI_state *st, int v, tg_error *err);

#endif
