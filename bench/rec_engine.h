/* rec_engine.h - one run of a REC benchmark on tgrel's rewriting engine:
 * a fresh context and rule set, every query normalised (timed) and its
 * normal form checked.  Shared by bench/rec and bench/rec_floor (which
 * times it against the hand-written floor in the same process). */
#ifndef TGREL_BENCH_REC_ENGINE_H
#define TGREL_BENCH_REC_ENGINE_H

#include "rec_convert.h"

/* What one repetition of one benchmark gave. */
typedef struct tg_rec_run {
    double cpu_ms, wall_ms;     /* of the tg_normalize calls only */
    unsigned long long rewrites, conditions;
    int verdict;            /* 1 verified, 0 wrong or failed, -1 nothing to check */
    char reason[600];
} tg_rec_run;

/* The whole benchmark once, from a fresh context (memo: TG_NF_MEMO);
 * file names the rules in messages. */
void tg_rec_run_once(const tg_rec_spec *spec, const char *file, int memo, tg_rec_run *r);

/* Zero the 256 KiB of stack below the caller's frame.  The collector
 * scans the stack conservatively, and a repetition's normal form, left in
 * a dead frame of the harness, stays reachable through the next
 * repetition's collections unless some deeper call overwrites that word:
 * factorial9's result (11 MB of nodes) was marked again by every
 * collection of the engine's next run, which doubled its marking, while
 * the floor's deeper recursion happened to overwrite it.  Called before
 * each timed repetition, outside the clock. */
void tg_rec_clear_stack(void);

#endif
