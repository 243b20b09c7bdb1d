/* grad_bench.h - the sections of bench/grad that live in files of their
 * own (called from grad.c's main). */
#ifndef TGREL_GRAD_BENCH_H
#define TGREL_GRAD_BENCH_H

/* grad_logreg.c: the logistic regression's loss and gradient, compiled
 * (cold, warm; not when compile is 0) and run against numpy and
 * hand-written C */
void bench_logreg(int compile);

#endif
