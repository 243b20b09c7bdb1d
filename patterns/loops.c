/* loops.c - self loops run as loops (tgW_loop_run: a rule whose right
 * side calls its own op, matched again on the call it makes, without the
 * machine's dispatch), and the run's poll every 2^16 rewrites
 * (tgW_run_poll) that they and the machine share.
 */
#include "machine_int.h"
#include "error.h"

/* Every 2^16 rewrites of a run: an interrupt, the step limit, the
 * deadline, a heap near its limit.  -1 with err filled to stop. */
__attribute__((noinline)) int tgW_run_poll(tg_rules *rs, tg_error *err)
{
    if (rs->interrupt) {
        tgE_set(err, TG_ERR_RANGE, NULL, 0, 0, "interrupted");
        return -1;
    }
    if ((rs->max_steps || rs->deadline) && tgW_limits_over(rs, err))
        return -1;
    if (tgT_heap_tight())
        return tgE_nomem(err), -1;
    return 0;
}

/* The first half of a round of loop_run for n arguments (a constant
 * where inlined): r's right side's call made the frame's (its arguments
 * into R[0..n) from src, through next[] unless direct: src reads none of
 * them). */
static inline __attribute__((always_inline)) void loop_args(const uint32_t *src, int direct,
                                                            tg_term *const *K, uint32_t n, tg_term **R)
{
    if (direct) {
        for (uint32_t j = 0; j < n; j++)
            R[j] = src[j] & TGW_LOOP_K ? K[src[j] & ~TGW_LOOP_K] : R[src[j]];
    } else {
        tg_term *next[TGW_LOOP_MAX];
        for (uint32_t j = 0; j < n; j++)
            next[j] = src[j] & TGW_LOOP_K ? K[src[j] & ~TGW_LOOP_K] : R[src[j]];
        for (uint32_t j = 0; j < n; j++)
            R[j] = next[j];
    }
}


/* One round of loop_run: the call made, then whether it may be tried
 * here (with memo on, a call it may not pass unlooked-up ends the run
 * before its match, -1: *left such calls still, none with first argument
 * watch, memo.h's tgW_memo_skips) and whether r matches it (then it is
 * one of them). */
static inline __attribute__((always_inline)) int loop_step(const uint32_t *src, int direct, const tgW_ins *m,
                                                           tg_term *const *K, uint32_t n, tg_term **R,
                                                           uint64_t *left, const tg_term *watch)
{
    loop_args(src, direct, K, n, R);
    if (__builtin_expect(*left == 0 || R[0] == watch, 0))
        return -1;
    /* a call that fails goes on through the tail call, memo's test too */
    if (!plain_rest(m, K, R))
        return 0;
    --*left;
    return 1;
}

/* Self loop r has matched its call (n arguments, the registers R, whose
 * first n are the arguments, as in every plain rule): fire it, make its
 * right side's call the frame's (the arguments in R[0..n)), and go on
 * while r matches that call, as the machine's firing, tail call and
 * dispatch would one call at a time (r is the rule they pick for any call
 * it matches: tgW_loop_safe).  The counts are those of the firings one at
 * a time.  With memo on, the calls made and matched here are ones memo
 * would pass without a lookup: at most *left of them, none with first
 * argument watch (loop_step); *left is decreased by their number.  0
 * when the run ends (r no longer matches, or the call is memo's to look
 * up: the frame's call, its rules still to try), -1 with err set when
 * the firing's poll says stop. */
__attribute__((noinline)) int tgW_loop_run(tg_rules *rs, tgW_rule *r, uint32_t n, tg_term **R,
                                               uint64_t *left, const tg_term *watch, tg_error *err)
{
    const uint32_t *src = r->loop;
    const tgW_ins *m = r->match + 1;
    tg_term *const *K = r->k;
    int direct = r->loop_direct, rc = 0, more = 0;
    unsigned long long rw = rs->rewrites, rw0 = rw;
    do {
        /* every 2^16 rewrites of the run: E_FIRE's poll */
        if (__builtin_expect((++rw & 0xffff) == 0, 0)) {
            /* the counts so far first: a limit's error names the rules
             * that fired most */
            rs->rewrites = rw;
            r->fired += rw - rw0, r->built += rw - rw0, r->tried += rw - rw0;
            rw0 = rw;
            if ((rc = tgW_run_poll(rs, err)) < 0)
                break;
        }
        /* the usual counts unrolled */
        more = n == 1 ? loop_step(src, direct, m, K, 1, R, left, watch)
             : n == 2 ? loop_step(src, direct, m, K, 2, R, left, watch)
                      : loop_step(src, direct, m, K, n, R, left, watch);
    } while (more > 0);
    rs->rewrites = rw;
    r->fired += rw - rw0, r->built += rw - rw0, r->tried += rw - rw0;
    if (more < 0)   /* the last call not tried here */
        r->tried--;
    return rc;
}
