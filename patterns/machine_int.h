/* machine_int.h - what the rewriting machine's files share (machine.c,
 * normalize.c, match.c, loops.c, levels.c; its state and stacks in
 * stacks.h): the short application test and the plain match inlined on
 * the hot paths, reduce for the input's walk, the out-of-line parts the
 * machine's loop calls, and the ctorrec levels (levels.c).  Not a
 * public header.
 */
#ifndef TGREL_MACHINE_INT_H
#define TGREL_MACHINE_INT_H

#include "rset.h"
#include "stacks.h"
#include "dispatch.h"

#include <string.h>

/* The dispatch of match and body instructions: with GNU C a jump through
 * a table ends each (threaded code). */
#if defined(__GNUC__) && !defined(TGW_NO_THREADED)
#define TGW_THREADED 1
#endif

/* Whether t is (head ...) of exactly c + 1 < TGT_CHUNK elements, a
 * proper list (its kind, flags and length read as one header word). */
static inline int app_short(const tg_term *t, const tg_term *head, unsigned c)
{
    if (tgT_isfix(t))
        return 0;
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    /* kind, flags and n from the low end of the header (as tgT_hash52) */
    uint32_t w;
    memcpy(&w, &t->h, sizeof w);
    if ((w & (0xfu | TGT_HASTAIL << 4 | 0xfu << 8)) != (TG_PAIR | (c + 1) << 8))
        return 0;
#else
    if (t->h.kind != TG_PAIR || t->h.n != c + 1 || (t->h.flags & TGT_HASTAIL))
        return 0;
#endif
    return t->e[0] == head;
}

/* app_args for c + 1 < TGT_CHUNK: t is then one chunk. */
static inline int app_args_short(const tg_term *t, const tg_term *head, unsigned c, tg_term **out)
{
    if (!app_short(t, head, c))
        return 0;
    for (unsigned i = 0; i < c; i++)
        out[i] = t->e[i + 1];
    return 1;
}

/* A plain match program's instructions after its M_ROOT (pc), over
 * registers R: whether they matched (match_plain's and loop_run's). */
static inline __attribute__((always_inline)) int plain_rest(const tgW_ins *pc, tg_term *const *K, tg_term **R)
{
    for (;; pc++) {
        if (pc->op == M_APP) {
            if (!app_args_short(R[pc->a], K[pc->b], pc->c, R + pc->d))
                return 0;
        } else if (pc->op == M_CONST) {
            if (R[pc->a] != K[pc->b])
                return 0;
        } else if (pc->op == M_SAME) {
            if (R[pc->a] != R[pc->b])
                return 0;
        } else {    /* M_DONE */
            return 1;
        }
    }
}


/* The op's rules in index ix (none for an op without). */
static inline const struct tgW_byop *byop(const tgW_index *ix, uint32_t opid)
{
    static const struct tgW_byop none = {NULL, 0, NULL, NULL, 0};
    return opid < ix->nops ? &ix->by[opid] : &none;
}

/* machine.c: reduce the call of op opid (head, atom) on the c arguments
 * on top of the value stack (*spp its top): the normal form, or NULL
 * with err set; and put a call of an assoc / comm op's arguments in
 * canonical order (their new count, -1 when out of memory). */
tg_term *tgW_reduce(tg_rules *rs, const tgW_run *run, uint32_t opid, tg_term *head, int atom, uint32_t c,
                    size_t *spp, tg_error *err);
long tgW_canon_top(tg_rules *rs, tgW_machine *M, uint32_t opid, tg_term *head, size_t top, uint32_t c);

/* match.c: match rule r against the n arguments A, filling R: 1, 0 (no
 * match), -1 when out of memory, -2 for a rule that tgW_ac_match runs. */
int tgW_match(tg_ctx *ctx, const tgW_rule *r, tg_term **A, uint32_t n, tg_term **R);

/* loops.c: every 2^16 rewrites of a run, the poll (tgW_run_poll); a self
 * loop run as a loop (tgW_loop_run). */
int tgW_run_poll(tg_rules *rs, tg_error *err);
int tgW_loop_run(tg_rules *rs, tgW_rule *r, uint32_t n, tg_term **R, uint64_t *left,
                 const tg_term *watch, tg_error *err);

/* The levels of a ctorrec rule (rset.h) in frame f: the call of c
 * arguments at cbase that its right side makes (call: its E_CALL, a
 * constructor's E_CALLT after it) is one more level while the call's
 * rules start with the same rule and it matches: its registers at the
 * call's arguments, its right side run here (the firing, the pushes, the
 * call: compile.c's ctor_rec), and the constructors around the levels
 * built when the innermost call returns (tgW_unwind_levels): no frame,
 * dispatch, return or chain walk per level.  Out: the call that ended
 * them (its arguments' place, its rules, whether the first was tried,
 * so that its frame does not try it again).  0, -1 out of memory, -2
 * with err filled. */
struct tgW_levels {
    tgW_rule *const *rr;
    uint32_t nr, tried;
    int entered;        /* the call that ended them passed memo (else memo's to look up) */
    size_t cbase;
};

/* The rules to try on a call of by's op with the c arguments at args:
 * those whose left sides fit the heads of the first arguments. */
static inline tgW_rule *const *call_rules(const struct tgW_byop *by, tg_term *const *args, uint32_t c,
                                          uint32_t *nr)
{
    if (by->disp)
        return tgW_disp_rules(by->disp, args, c, nr);
    *nr = by->n;
    return by->r;
}

/* The constructor chains' lookahead (machine.c, "Constructor chains"):
 * each node built fetches the home bucket of the node this many further. */
#define CHAIN_AHEAD 4

/* levels.c: a ctorrec rule's levels, as described above struct
 * tgW_levels (tgW_run_levels), and their constructors built when the
 * innermost call returns (tgW_unwind_levels: level 1's node, NULL when
 * out of memory). */
int tgW_run_levels(tg_rules *rs, tgW_machine *M, frame *f, const struct tgW_byop *cby,
                   const tgW_ins *call, size_t cbase, uint32_t c, uint64_t *left,
                   const tg_term *watch, struct tgW_levels *out, tg_error *err);
tg_term *tgW_unwind_levels(tg_ctx *ctx, tgW_machine *M, frame *f, tg_term *const *K, tg_term *result);

#endif
