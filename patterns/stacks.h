/* stacks.h - the rewriting machine's state and its two stacks (stacks.c;
 * used by machine.c): the value stack, collector memory that a run uses
 * up to a high-water mark and clears after it, and the frame stack,
 * mapped memory the collector neither clears nor scans.  The bound checks
 * are inline, for every push makes one; growing is out of line.  Not a
 * public header. */
#ifndef TGREL_STACKS_H
#define TGREL_STACKS_H

#include "rset.h"
#include "memo.h"

typedef struct frame {
    tgW_rule *const *rules;
    uint32_t nrules, ri;
    uint32_t base, n;           /* arguments at vs[base..base+n) */
    uint32_t regs;              /* registers at vs[regs..] */
    uint32_t chain;             /* memo: its open calls start at memo.open[chain] */
    tgW_rule *rule;             /* the rule whose body runs */
    const tgW_ins *pc;          /* where the body goes on after a call */
    tg_term *head;
    int16_t atom;               /* a nullary op written as a bare symbol */
    int16_t opened;             /* memo: its current call is open (memo.open's top) */
    uint32_t lev;               /* ctorrec levels run in this frame above its own (ctor_rec) */
    uint64_t ahash;             /* in a constructor chain: its node's hash (chain_start) */
    uint64_t t0;                /* rule timing: when its rule's try began */
} frame;

typedef struct tgW_machine {
    tg_term **vs;               /* the value stack (collector memory) */
    size_t vcap;
    size_t vlim;                /* the part of it this run may use (vs_reserve) */
    frame *fs;                  /* frames (mapped: fs_grow) */
    size_t fcap;
    tgW_memo memo;              /* calls to normal forms (memo on) */
    tgW_map done;               /* the input's nodes already normalized */
    tg_term *stepped;           /* tgW_step: the term whose call is reduced */
    size_t seen;                /* the last tgW_normalize's distinct input nodes */
    tg_term *input;             /* the current tgW_normalize's input */
    uint64_t *lh;               /* the hashes of a frame's ctorrec levels (no pointers) */
    size_t lhcap;
} tgW_machine;

/* The rule set's machine, made on first use: NULL when out of memory. */
tgW_machine *tgW_machine_get(tg_rules *rs);
/* vs_reserve's and fs_reserve's out-of-line parts: 0, or -1 when out of
 * memory (or, for frames, past half the heap limit). */
int tgW_vs_raise(tgW_machine *M, size_t need);
int tgW_fs_grow(tgW_machine *M, size_t need);
/* After a run that succeeded: clear what it left on the value stack. */
void tgW_vs_scrub(tgW_machine *M);
/* After a run that failed: drop the machine (its stacks cleared and freed). */
void tgW_machine_drop(tg_rules *rs);

/* Room for need values: the part of the value stack this run may use is
 * raised (and the stack grown) when it is short. */
static inline int vs_reserve(tgW_machine *M, size_t need)
{
    if (__builtin_expect(need <= M->vlim, 1))
        return 0;
    return tgW_vs_raise(M, need);
}

/* Room for need frames. */
static inline int fs_reserve(tgW_machine *M, size_t need)
{
    return __builtin_expect(need <= M->fcap, 1) ? 0 : tgW_fs_grow(M, need);
}

#endif
