/* grad_bench.h - the sections of bench/grad that live in files of their
 * own (called from grad.c's main). */
#ifndef TGREL_GRAD_BENCH_H
#define TGREL_GRAD_BENCH_H

/* grad_logreg.c: the logistic regression's loss and gradient, compiled
 * (cold, warm) and run against numpy and hand-written C */
void bench_logreg(void);

#endif
