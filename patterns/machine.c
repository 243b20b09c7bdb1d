/* machine.c - the rewriting machine: innermost normalization of a term
 * under compiled rules, on explicit stacks (no C recursion, so terms and
 * rewrite chains of any depth).
 *
 * A call is an op and its arguments, already in normal form, on the value
 * stack.  The machine tries the op's rules in order; the first whose match
 * and conditions succeed runs its right side, whose own calls are reduced
 * the same way before the term around them is built.  So only normal forms
 * are ever interned, and a right side ending in a call replaces the frame
 * (a tail call): a chain such as (lt (s x) (s y)) -> (lt x y) runs in
 * constant space.  When no rule applies the call is its own normal form.
 *
 * A call tries only the rules its op's index (dispatch.h) gives for the
 * heads of its first arguments.  With memo on, every call of an op with
 * rules is first looked up in the memo table (memo.h), which maps calls
 * to normal forms; a call being reduced maps to a marker, so meeting it
 * again is a cycle, reported with the rules that fired since.
 */
#include "machine_int.h"
#include "memo.h"
#include "dispatch.h"
#include "arith.h"
#include "typed.h"
#include "relrw.h"
#include "prov.h"
#include "cext.h"
#include "error.h"
#include "clock.h"

#include <gc/gc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* ---- terms ------------------------------------------------------------ */

/* (head args...), or the bare symbol for a nullary op written so. */
static tg_term *build(tg_ctx *ctx, tg_term *head, int atom, uint32_t n, tg_term *const *args)
{
    return atom ? head : tg_app(ctx, head, n, args);
}

/* ---- matching --------------------------------------------------------- */

/* match for a plain rule (rset.h): the same outcome, without the choice
 * stack, the segments or the memory they may take, so that the function
 * needs few registers and no stack frame (a rule is matched per
 * rewrite).  A plain rule's registers start with the arguments. */
static __attribute__((noinline)) int match_plain(const tgW_rule *r, uint32_t n, tg_term **R)
{
    return n == r->match->a && plain_rest(r->match + 1, r->k, R);
}

/* ---- self loops -------------------------------------------------------- */

/* Whether self loop r (rset.h) may run as a loop among by's rules. */
static inline int loop_allowed(const struct tgW_byop *by, const tgW_rule *r)
{
    for (uint32_t i = 0; i < by->nloops; i++)
        if (by->loops[i] == r)
            return 1;
    return 0;
}

/* ---- built-in predicates -------------------------------------------- */

static int pred(int p, const tg_term *t)
{
    tg_kind k = tgT_kind(t);
    switch (p) {
    case P_CONST: return k == TG_INT || k == TG_RAT || k == TG_DOUBLE || k == TG_STRING;
    case P_NUMBER: return k == TG_INT || k == TG_RAT || k == TG_DOUBLE;
    case P_INT: return k == TG_INT;
    case P_RAT: return k == TG_INT || k == TG_RAT;
    case P_DOUBLE: return k == TG_DOUBLE;
    case P_SYMBOL: return k == TG_SYMBOL;
    case P_STRING: return k == TG_STRING;
    case P_ATOM: return k != TG_PAIR;
    case P_APP: return k == TG_PAIR;
    case P_NIL: return k == TG_NIL;
    }
    return 0;
}

/* ---- the machine ------------------------------------------------------ */

/* A right side's spliced segment gave an op a number of arguments its
 * arity refuses (the load checks every count but a segment's length). */
static void splice_arity_error(const tgW_rule *r, const tgW_op *op, uint32_t n, tg_error *err)
{
    size_t rl, ol;
    const char *rn = tg_symbol_name(r->name, &rl), *on = tg_symbol_name(op->name, &ol);
    char ar[40];
    if (op->flags & TGW_VARIADIC)
        snprintf(ar, sizeof ar, "%u or more", op->amin);
    else if (op->amin == op->amax)
        snprintf(ar, sizeof ar, "%u", op->amin);
    else
        snprintf(ar, sizeof ar, "%u to %u", op->amin, op->amax);
    tgE_set(err, TG_ERR_TYPE, r->file, r->line, r->col,
            "wrong arity: rule %.*s splices a segment into (%.*s ...) of %u argument%s, "
            "but %.*s takes %s", (int)rl, rn, (int)ol, on, n, n == 1 ? "" : "s", (int)ol, on, ar);
}

/* The c arguments on top of the stack (below top) of a call of an
 * assoc / comm op put in canonical order (ac.c): flattened, which may
 * make more of them, and sorted.  Their new count, -1 when out of
 * memory.  Out of line and without pointers to reduce's locals, which
 * then stay in registers. */
__attribute__((noinline)) long tgW_canon_top(tg_rules *rs, tgW_machine *M, uint32_t opid, tg_term *head,
                                             size_t top, uint32_t c)
{
    uint32_t fl = rs->ops[opid]->flags;
    size_t base = top - c;
    size_t nn = tgW_ac_flatlen(head, fl, M->vs + base, c);
    if (nn > UINT32_MAX / 2)
        return -1;
    if (nn != c) {
        if (vs_reserve(M, base + nn + 64) < 0)
            return -1;
        tgW_ac_flatten(head, M->vs + base, c, nn);
    }
    if ((fl & TGW_COMM) && tgW_ac_sort(M->vs + base, nn) < 0)
        return -1;
    return (long)nn;
}


/* The error of a call met again while being reduced (open in slot): the
 * rules fired since it was first met ("..." for those of calls not
 * remembered, memo.h). */
static void cycle_error(tg_rules *rs, size_t slot, tg_error *err)
{
    const tgW_memo *mt = &rs->m->memo;
    size_t i = mt->nopen;
    while (i > 0 && mt->open[i - 1].slot != slot)
        i--;
    char names[400];
    size_t len = 0;
    names[0] = 0;
    for (size_t j = i ? i - 1 : 0; j < mt->nopen && len < sizeof names - 80; j++) {
        const tgW_rule *r = mt->open[j].rule;
        if (!r)
            continue;
        size_t nl;
        const char *s = tg_symbol_name(r->name, &nl);
        int w = snprintf(names + len, sizeof names - len, "%s%.*s%s", len ? " -> " : "",
                         (int)(nl > 60 ? 60 : nl), s, r->backward ? " (reverse)" : "");
        if (w > 0)
            len += (size_t)w;
    }
    /* calls of dropped ops came in between: their rules are not known */
    if (i && mt->skipped != mt->open[i - 1].skipped && len < sizeof names - 8)
        len += (size_t)snprintf(names + len, sizeof names - len, "%s...", len ? " -> " : "");
    tg_term *key = tgW_memo_key(mt, rs->ctx, slot);
    char *p = key ? tg_print(key, NULL) : NULL;
    tgE_set(err, TG_ERR_RANGE, NULL, 0, 0, "rewriting cycles: %s comes back after %s", p ? p : "a term",
            len ? names : "no rule");
    free(p);
}

/* Reduce the call of op opid (head, atom) on the c arguments on top of
 * the value stack (at sp - c) to its normal form, which replaces them.
 * Returns the normal form, NULL with err filled. */
static const tgW_index no_rules = {0, NULL};

/* The memo lookup of a call (its c arguments at args): 1 with *result
 * when its normal form is known, 0 when its rules are to be tried (the
 * call then open in the memo table if *opened), -1 with err filled (out
 * of memory, or a cycle: the call is being reduced already). */
static __attribute__((noinline)) int memo_lookup(tg_rules *rs, uint32_t opid, tg_term *head, int atom,
                                                  uint32_t c, tg_term *const *args, tg_term **result,
                                                  int *opened, tg_error *err)
{
    *opened = 0;
    size_t slot = tgW_memo_enter(&rs->m->memo, rs->ctx, opid, head, atom, c, args,
                                 (size_t)(args - rs->m->vs), rs->rewrites, result);
    if (slot == (size_t)-1)
        return tgE_nomem(err), -1;
    if (slot == TGW_MEMO_SKIP)
        return 0;
    *opened = 1;
    if (*result == TGW_MEMO_OPEN) {
        cycle_error(rs, slot, err);
        return -1;
    }
    return *result != NULL;
}

/* A call about to be reduced (its c arguments at args; by: its op's
 * rules): 1 with *result when it has no rules (it is its own normal
 * form), else memo_lookup's answer (with memo on; without, 0). */
static inline __attribute__((always_inline)) int call_enter(tg_rules *rs, const struct tgW_byop *by, int memo,
                                                             uint32_t opid, tg_term *head, int atom,
                                                             uint32_t c, tg_term *const *args,
                                                             tg_term **result, int *opened, tg_error *err)
{
    *opened = 0;
    /* no rules (a constructor): its own normal form, nothing to remember */
    if (!by->n) {
        *result = build(rs->ctx, head, atom, c, args);
        return *result ? 1 : (tgE_nomem(err), -1);
    }
    /* a call of a dropped op not watched: counted, not looked up */
    if (!memo || tgW_memo_skip(&rs->m->memo, opid, head, c, args))
        return 0;
    return memo_lookup(rs, opid, head, atom, c, args, result, opened, err);
}

/* The first frame's deferred memo lookup (see reduce): memo_lookup's
 * answer, with f->opened set.  Out of line: reduce stays as it was on
 * the paths that make no such lookup. */
static __attribute__((noinline)) int deferred_lookup(tg_rules *rs, uint32_t opid, frame *f,
                                                     tg_term **result, tg_error *err)
{
    int opened;
    int k = memo_lookup(rs, opid, f->head, f->atom, f->n, rs->m->vs + f->base, result, &opened, err);
    f->opened = opened;
    return k;
}

/* With memo on, whether self loop r may run as a loop (loop_run) on
 * frame f's call, which it matched: its firing records no more than the
 * plain firing (f's call open: the rule fired on it, as fire_watched
 * does; its lookup deferred: not), and the calls it makes pass memo
 * unlooked-up (memo.h's tgW_memo_skips: *left of them, none with first
 * argument *w) at least for one round. */
static int loop_budget(tgW_machine *M, tgW_rule *r, frame *f, uint64_t *left, const tg_term **w)
{
    if (f->opened == 2)
        return 0;
    tg_term *wt;
    uint64_t k = tgW_memo_skips(&M->memo, r->op->id, f->n, &wt);
    if (k == 0)
        return 0;
    if (f->opened)
        M->memo.open[M->memo.nopen - 1].rule = r;
    *left = k, *w = wt;
    return 1;
}

/* Whether a body does work the profile counts (a condition test, a
 * call) before it fires; E_FIRE, and E_NORM when it makes a call, are
 * the other places such work begins. */
static int counts_before_fire(const tgW_ins *i)
{
    for (;; i++)
        switch (i->op) {
        case E_FIRE:
            return 0;
        case E_VAR: case E_VARS: case E_CONST: case E_STORE: case E_PRED: case E_NOT: case E_NUM: case E_TYPE:
        case E_LIST: case E_LISTT:
        case E_NORM:    /* a call only for an absorbed group: it looks up then */
            continue;
        default:
            return 1;
        }
}

/* Constructor chains.  A frame whose body goes on with E_CALLT of a
 * constructor builds a node as soon as the call it waits on returns,
 * and returns that node to the frame below.  A run of such frames (the
 * unwinding of (l ?E (conc ?L1 ?L2)) or (s (plus ?N ?M))) builds one
 * node after the other, each an element of the next, and the home bucket
 * of each new node is a cache miss that the processor cannot overlap
 * with the next, whose hash it needs.  A node's hash depends only on its
 * elements' hashes, so when the top frame of such a run is about to
 * build, the machine computes the hashes of all the run's nodes at once
 * (chain_start, into each frame's ahash), and each build then fetches
 * the home bucket of the node CHAIN_AHEAD frames further down (the
 * misses overlap) and is interned with its hash known.  pfk is the
 * run's lowest frame (SIZE_MAX outside a run): between chain_start and
 * a frame's build the frames run nothing but their E_CALLT, so the
 * hashes stay true until then. */
static inline int chain_frame(const tgW_index *bix, const frame *g)
{
    const tgW_ins *p = g->pc;
    /* a frame with ctorrec levels builds their nodes first (tgW_unwind_levels) */
    return p->op == E_CALLT && p->c - 1u < TGT_CHUNK - 1u && !g->lev && !byop(bix, p->a)->n;
}

/* Frame k (the top) is about to build (head args[0] .. args[c-1]),
 * 1 <= c < TGT_CHUNK; frames at fp0 and above belong to this run.  The
 * lowest frame of the chain that starts at k, with the hashes of its
 * nodes in the frames and the first buckets fetched, or SIZE_MAX when
 * no chain frame lies below k. */
static size_t chain_start(tg_ctx *ctx, tgW_machine *M, const tgW_index *bix, size_t fp0, size_t k,
                          tg_term *head, uint32_t c, tg_term *const *args)
{
    if (k == fp0 || !chain_frame(bix, &M->fs[k - 1]))
        return SIZE_MAX;
    uint64_t h = M->fs[k].ahash = tgT_app_hash(head, c, args, tgT_ehash(args[c - 1]));
    size_t j = k;
    for (; j > fp0 && chain_frame(bix, &M->fs[j - 1]); j--) {
        frame *g = &M->fs[j - 1];
        const tgW_ins *p = g->pc;
        tg_term *gh = g->rule->k[p->b], *const *ga = M->vs + M->fs[j].base - (p->c - 1);
        switch (p->c) {     /* the usual short nodes unrolled */
        case 1: h = tgT_app_hash(gh, 1, ga, h); break;
        case 2: h = tgT_app_hash(gh, 2, ga, h); break;
        default: h = tgT_app_hash(gh, p->c, ga, h); break;
        }
        g->ahash = h;
    }
    for (size_t i = 0; i < CHAIN_AHEAD && i <= k - j; i++)
        tgT_fetch(ctx, M->fs[k - i].ahash);
    return j;
}

/* The deferred lookup, before the first frame does work the profile
 * counts; a known normal form ends the frame (no rule fires), as a
 * lookup at the call would have. */
#define LOOKUP_DEFERRED()                                                     \
    do {                                                                      \
        int k_ = deferred_lookup(rs, opid, f, &result, err);                  \
        if (k_ < 0)                                                           \
            goto fail;                                                        \
        if (k_)                                                               \
            goto ret;                                                         \
    } while (0)

/* A step's failure in reduce: -1 out of memory (err still to fill),
 * -2 with err filled. */
#define STEP_FAILED(k)                                                        \
    do {                                                                      \
        if ((k) == -1)                                                        \
            goto oom;                                                         \
        goto fail;                                                            \
    } while (0)

/* The dispatch of a body's instructions.  With GNU C each instruction
 * ends with its own jump through a table (threaded code): no bounds
 * check nor jump back to the one switch, and an indirect branch per
 * instruction kind, which the processor predicts better. */
#ifdef TGW_THREADED
#define OP(x) case x: x_##x
#define NEXT()                                                                \
    do {                                                                      \
        i = pc++;                                                             \
        goto *optab[i->op];                                                   \
    } while (0)
#else
#define OP(x) case x
#define NEXT() continue
#endif

/* ---- reduce's steps ---------------------------------------------------
 *
 * reduce below is the machine's loop: a call entered, its rules tried,
 * a right side's instructions run, a normal form returned to the frame
 * below.  The steps it takes are the functions of this section.  They
 * are always inlined: reduce was tuned instruction by instruction as one
 * function (doc/internals.md), and a call left out of line would move
 * GCC's allocation of its registers, which the hot paths depend on.  A
 * step with more than one way on returns a code that reduce's loop
 * turns into its jump (the codes fold away once inlined). */
#define STEP static inline __attribute__((always_inline))

/* -- the run's start -- */

/* What a run's firings do beyond counting.  *watched: more than count,
 * one test on E_FIRE's hot path; *busy: more than memo's part (a
 * max-use limit, a hook, provenance, rule timing).  In memo's lazy
 * phase (memo.h) no call of the run opens before it is over, so a
 * firing has nothing to record for memo until a call opens (call_by and
 * tail_call set watched then).  *can_loop: self loops run as loops
 * (loop_run) when a firing only counts (or does memo's part only, for
 * calls memo passes unlooked-up: see loop_budget) and the right side's
 * calls are reduced (not a step). */
STEP void run_modes(tg_rules *rs, const tgW_run *run, tgW_machine *M, int memo, int *watched,
                    int *busy, int *can_loop)
{
    *watched = memo || run->limit || run->hook || rs->prov || rs->timing;
    *busy = run->limit || run->hook || rs->prov || rs->timing;
    if (memo && M->memo.lazy && !*busy)
        *watched = 0;
    *can_loop = !*busy && !run->step;
}

/* The first call of a run with memo on (op opid on the c arguments
 * below *sp, from ix), when memo is past its lazy phase.  Its memo
 * lookup (a node of the input: distinct calls, by the input walk's done
 * map) is deferred until its rules do something the profile counts (a
 * condition test, a call, a firing), and left out when none does: most
 * nodes of a large graph are normal forms that no rule's match or
 * silent test accepts, and their entries were most of the memo table.
 * The lookup's outcome is then the same (matching and silent tests
 * change nothing), and tgW_memo_pass counts one left out, so profiles
 * and cycle reports are those of a lookup made at once.  Its frame's
 * opened is 2 (*copened) until the lookup is made.  0: a frame for the
 * call, at *cbase (*cby its rules); 1 with *result when it has no rules
 * (*sp at its arguments' place); -1 with err filled. */
STEP int first_call(tg_rules *rs, tgW_machine *M, const tgW_index *ix, uint32_t opid,
                    tg_term *head, int atom, uint32_t c, size_t *sp, size_t *cbase, size_t *ckn0,
                    const struct tgW_byop **cby, int *copened, tg_term **result, tg_error *err)
{
    *cbase = *sp - c, *ckn0 = M->memo.nopen;
    *cby = byop(ix, opid);
    int known = call_enter(rs, *cby, 0, opid, head, atom, c, M->vs + *cbase, result, copened, err);
    if (known > 0)
        *sp = *cbase;
    if (!known)
        *copened = 2;
    return known;
}

/* -- trying a call's rules -- */

/* Rule r's left side matched on frame f's call, its registers at R: 1
 * matched, 0 not, -1 out of memory, -2 with err filled.  A left side of
 * one application (most rules of recursions) is matched here, a plain
 * one without the choice stack (match_plain).  The arguments are read
 * from the stack at each use, as the general match may move it. */
STEP int rule_match(tg_rules *rs, tg_ctx *ctx, tgW_machine *M, const frame *f, const tgW_rule *r,
                    tg_term **R, tg_error *err)
{
    int m;
    if (r->plain == 2) {
        const tgW_ins *mp = r->match;
        m = f->n == mp->a && app_args_short(R[mp[1].a], r->k[mp[1].b], mp[1].c, R + mp[1].d);
    } else {
        m = r->plain ? match_plain(r, f->n, R) : tgW_match(ctx, r, M->vs + f->base, f->n, R);
    }
    if (m < 0) {
        if (m == -1)
            return -1;
        /* -2: modulo assoc / comm (ac.c) */
        if ((m = tgW_ac_match(rs, r, M->vs + f->base, f->n, R, err)) < 0)
            return -2;
    }
    return m;
}

/* Self loop r matched frame f's call: fired until it no longer matches
 * (loop_run; with memo on, also until its call is one memo must look
 * up: loop_budget).  1 when it ran (the frame's arguments are then those
 * of the call that ended it, left untried), 0 when it may not run as a
 * loop here, -1 with err filled. */
STEP int self_loop(tg_rules *rs, tgW_machine *M, frame *f, tgW_rule *r, int memo, tg_term **R,
                   tg_error *err)
{
    uint64_t left = UINT64_MAX;
    const tg_term *w = NULL;
    if (memo && !loop_budget(M, r, f, &left, &w))
        return 0;
    f->rule = r;
    uint64_t left0 = left;
    if (tgW_loop_run(rs, r, f->n, R, &left, w, err) < 0)
        return -1;
    if (memo)   /* the calls made and matched: passed */
        tgW_memo_skipped(&M->memo, left0 - left);
    return 1;
}

/* No rule applies to frame f's call (op opid): the call is its own
 * normal form, built; NULL when out of memory.  A deferred lookup never
 * made is counted as made (see reduce). */
STEP tg_term *no_rule_applies(tg_ctx *ctx, tgW_machine *M, const frame *f, uint32_t opid)
{
    tg_term *t = build(ctx, f->head, f->atom, f->n, M->vs + f->base);
    if (t && f->opened == 2)
        tgW_memo_pass(&M->memo, opid, f->head, f->atom, f->n, M->vs + f->base);
    return t;
}

/* -- calls in a right side -- */

/* The node (head args..) of the c arguments below *sp, which it
 * replaces: a constructor's call built in place; -1 when out of memory. */
STEP int push_node(tg_ctx *ctx, tgW_machine *M, tg_term *head, int atom, uint32_t c, size_t *sp)
{
    tg_term *t = build(ctx, head, atom, c, M->vs + *sp - c);
    if (!t)
        return -1;
    *sp -= c;
    M->vs[(*sp)++] = t;
    return 0;
}

/* Where E_CALL's call of an op with rules (the c arguments below sp) goes
 * from frame f (call_way). */
enum {
    CALL_ENTER,     /* the call's entry: the memo lookup (call_by) */
    CALL_FRAME,     /* a frame at once, nothing to look up */
    CALL_LEVELS     /* frame f's ctorrec levels (ctor_rec) */
};

/* Which of the above, with *cbase, *ckn0 and *copened set for the
 * latter two.  Memo off: levels unless a firing is watched.  Memo on:
 * levels while memo passes their calls (only memo watches), and no
 * lookup in memo's lazy phase. */
STEP int call_way(tgW_machine *M, const frame *f, int memo, int watched, int busy, uint32_t opid,
                  size_t sp, uint32_t c, size_t *cbase, size_t *ckn0, int *copened)
{
    if (!memo) {
        *cbase = sp - c, *copened = 0;
        return f->rule->ctorrec && !watched ? CALL_LEVELS : CALL_FRAME;
    }
    /* a deep chain's op held (memo.h, TGW_MEMO_NEST), then levels while
     * memo passes their calls */
    if (f->rule->ctorrec) {
        tgW_memo_level(&M->memo, opid);
        if (!busy) {
            *cbase = sp - c, *ckn0 = M->memo.nopen, *copened = 0;
            return CALL_LEVELS;
        }
    }
    if (M->memo.lazy) {
        M->memo.lazy--;
        *cbase = sp - c, *ckn0 = M->memo.nopen, *copened = 0;
        return CALL_FRAME;
    }
    return CALL_ENTER;
}

/* Frame f's ctorrec rule calls its own op (pc: the constructor's
 * E_CALLT after the call; the call of opid on the c arguments at *cbase,
 * cby its rules): the call is made levels of f while the rule keeps
 * matching (tgW_run_levels; with memo on, while memo passes the calls
 * unlooked-up).  0 with lv the rules of the call that ends them, for a
 * frame of its own at *cbase (*ckn0 the memo calls open before it); 1
 * when that call is one memo is to look up (its arguments end at *sp):
 * it goes the usual way; -1 out of memory, -2 with err filled.  An op
 * with rules in the constructor's place (a rewriter's index may give it
 * some) takes no levels. */
STEP int ctor_levels(tg_rules *rs, tgW_machine *M, frame *f, const tgW_index *bix,
                     const struct tgW_byop *cby, const tgW_ins *pc, int memo, uint32_t opid,
                     uint32_t c, size_t *cbase, size_t *sp, size_t *ckn0, struct tgW_levels *lv,
                     tg_error *err)
{
    if (byop(bix, pc->a)->n) {
        if (memo)
            return 1;
        lv->rr = call_rules(cby, M->vs + *cbase, c, &lv->nr);
        lv->tried = 0;
        return 0;
    }
    uint64_t left = UINT64_MAX, left0;
    tg_term *w = NULL;
    if (memo && !(left = tgW_memo_skips(&M->memo, opid, c, &w)))
        return 1;
    left0 = left;
    int k = tgW_run_levels(rs, M, f, cby, pc - 1, *cbase, c, &left, w, lv, err);
    if (memo)   /* the calls that were levels, or were tried as one */
        tgW_memo_skipped(&M->memo, left0 - left);
    if (k < 0)
        return k;
    *cbase = lv->cbase;
    if (!lv->entered) {     /* the call that ended them: memo's to look up */
        *sp = *cbase + c;
        return 1;
    }
    *ckn0 = M->memo.nopen;
    return 0;
}

/* The call of op opid (head) on the *c arguments below *sp, of an
 * assoc / comm op, in canonical order (canon_top): *sp and *c moved to
 * their new count; -1 when out of memory. */
STEP int canon_call(tg_rules *rs, tgW_machine *M, uint32_t opid, tg_term *head, size_t *sp,
                    uint32_t *c)
{
    long nc = tgW_canon_top(rs, M, opid, head, *sp, *c);
    if (nc < 0)
        return -1;
    *sp = *sp - *c + (size_t)nc;
    *c = (uint32_t)nc;
    return 0;
}

/* E_CALLV i: a call whose last arguments are a spliced list, on top of
 * the stack after the i->c others.  An improper list makes no call: the
 * list (head args.. . tail) is pushed, 0.  Else its elements pushed,
 * the call's count in *c (the registers at *R, as the stack may move)
 * and 1; -1 out of memory, -2 with err filled (an arity the op
 * refuses). */
STEP int spliced_call(tg_rules *rs, tg_ctx *ctx, tgW_machine *M, frame *f, const tgW_ins *i,
                      tg_term *const *K, size_t *sp, tg_term ***R, uint32_t *c, tg_error *err)
{
    tg_term *tl = M->vs[--*sp];
    size_t len = tg_length(tl);
    if (tg_tail(tl) != TGT_NIL) {   /* improper: a list, no call */
        tg_term *t = tg_list(ctx, i->c, M->vs + *sp - i->c, tl);
        tg_term *whole = t ? tg_cons(ctx, K[i->b], t) : NULL;
        if (!whole)
            return -1;
        *sp -= i->c;
        M->vs[(*sp)++] = whole;
        return 0;
    }
    if (vs_reserve(M, *sp + len + 64) < 0)
        return -1;
    *R = M->vs + f->regs;
    tg_elements(tl, M->vs + *sp, len);
    *sp += len;
    const tgW_op *op = rs->ops[i->a];
    *c = (uint32_t)(i->c + len);
    if (__builtin_expect(*c < op->amin || (*c > op->amax && !(op->flags & TGW_VARIADIC)), 0)) {
        splice_arity_error(f->rule, op, *c, err);
        return -2;
    }
    if (i->d && canon_call(rs, M, i->a, K[i->b], sp, c) < 0)
        return -1;
    f->rule->built++;
    return 1;
}

/* E_NORM's call: the arguments x (an application of the absorbing op)
 * absorbed, pushed over x, their count in *c (the registers at *R, as
 * the stack may move); -1 when out of memory. */
STEP int absorbed_args(tgW_machine *M, const frame *f, tg_term *x, size_t *sp, tg_term ***R,
                       uint32_t *c)
{
    size_t len = tg_length(x) - 1;
    --*sp;
    if (vs_reserve(M, *sp + len + 64) < 0)
        return -1;
    *R = M->vs + f->regs;
    tg_iter it = {x, 1};
    for (tg_term *y; (y = tgT_iter_next(&it));)
        M->vs[(*sp)++] = y;
    *c = (uint32_t)len;
    return 0;
}

/* -- a frame's last call: its constructor or a tail call -- */

/* E_CALLT i of a constructor in frame f (the top, fp - 1): the frame's
 * result, the node of K[i->b] on the c arguments below sp; NULL when out
 * of memory.  A frame of a constructor chain (chain_start, *pfk its
 * lowest frame) has its node's hash known and fetches the bucket of the
 * node CHAIN_AHEAD frames down; the chain's last frame ends it. */
STEP tg_term *ctor_result(tg_ctx *ctx, tgW_machine *M, const tgW_index *bix, size_t fp0, size_t fp,
                          const frame *f, const tgW_ins *i, tg_term *const *K, uint32_t c,
                          size_t sp, size_t *pfk)
{
    if (c - 1u < TGT_CHUNK - 1u) {
        size_t k = fp - 1;
        if (*pfk > k)
            *pfk = chain_start(ctx, M, bix, fp0, k, K[i->b], c, M->vs + sp - c);
        if (*pfk <= k) {     /* a chain frame: its hash is known */
            uint64_t ahead = f->ahash;
            if (k >= *pfk + CHAIN_AHEAD)
                ahead = M->fs[k - CHAIN_AHEAD].ahash;
            else if (k == *pfk)
                *pfk = SIZE_MAX;     /* the chain's last node */
            return tgT_app_hashed(ctx, f->ahash, ahead, K[i->b], c, M->vs + sp - c);
        }
    }
    return build(ctx, K[i->b], i->pad, c, M->vs + sp - c);
}

/* E_CALLT of an op with rules (of any op, with provenance, whose log
 * records tail calls) in frame f, the top: the call's c arguments, below
 * *sp, moved down to the frame's base, a few words each (not a library
 * call); -1 when out of memory. */
STEP int tail_args(tg_ctx *ctx, tgW_machine *M, frame *f, size_t fp, tgO_prov *pv, tg_term *head,
                   int atom, uint32_t c, size_t *sp)
{
    size_t base = f->base;
    for (uint32_t j = 0, from = (uint32_t)(*sp - c - base); j < c; j++)
        M->vs[base + j] = M->vs[base + from + j];
    *sp = base + c;
    f->rule->built++;
    if (pv && tgO_done_call(pv, ctx, fp - 1, head, atom, c, M->vs + base) < 0)
        return -1;
    return 0;
}

/* Frame f becomes the call of head (opid, atom) on the c arguments at
 * its base (a tail call): entered as any call (*cby its op's rules), the
 * frame then trying the call's rules: 0; 1 with *result when the call is
 * known (a constructor's, or memo's); -1 with err filled. */
STEP int tail_enter(tg_rules *rs, tgW_machine *M, frame *f, const tgW_index *bix, int memo,
                    uint32_t opid, tg_term *head, int atom, uint32_t c,
                    const struct tgW_byop **cby, int *watched, tg_term **result, tg_error *err)
{
    int opened;
    tg_term **args = M->vs + f->base;
    *cby = byop(bix, opid);
    int known = call_enter(rs, *cby, memo, opid, head, atom, c, args, result, &opened, err);
    if (known)
        return known;
    f->opened = opened;
    *watched |= opened;
    f->n = c, f->head = head, f->atom = atom;
    f->rules = call_rules(*cby, args, c, &f->nrules);
    f->ri = 0;
    return 0;
}

/* -- firing -- */

/* What reduce does after a watched firing (watched_fire). */
enum { FIRE_ON, FIRE_POLL, FIRE_KNOWN };

/* E_FIRE of frame f's rule in a watched run (see reduce's watched):
 * memo's part (the deferred lookup made, the rule recorded for the
 * call open), then, when busy, the rule's time, the max-use limit, the
 * hook (the registers at *R after it, as the stack may move) and
 * provenance.  FIRE_ON; FIRE_POLL when the run's rewrite count reached a
 * multiple of 2^16 (an interrupt, the step limit); FIRE_KNOWN with
 * *result when the deferred lookup knew the call's normal form (no rule
 * fires); -1 out of memory, -2 with err filled. */
STEP int watched_fire(tg_rules *rs, tg_ctx *ctx, const tgW_run *run, tgW_machine *M, frame *f,
                      size_t fp, uint32_t opid, int busy, int timing, tgO_prov *pv, tg_term ***R,
                      tg_term **result, tg_error *err)
{
    tgW_rule *r = f->rule;
    if (f->opened) {
        if (f->opened == 2) {
            int k = deferred_lookup(rs, opid, f, result, err);
            if (k < 0)
                return -2;
            if (k)
                return FIRE_KNOWN;
        }
        if (f->opened)
            M->memo.open[M->memo.nopen - 1].rule = r;
    }
    if (!busy) {    /* memo only: counted as plain counts */
        r->fired++;
        if (__builtin_expect((++rs->rewrites & 0xffff) == 0, 0))
            return FIRE_POLL;
        return FIRE_ON;
    }
    rs->rewrites++;
    r->fired++;
    if (timing)
        r->ticks += tgTm_ticks() - f->t0;
    /* the nodes walked so far bound the input's count from below */
    if (run->limit && r->fired - r->fired0 > run->limit->n &&
        tgW_limit_over(rs, run->limit, r->fired - r->fired0,
                       M->input == run->limit->start ? M->done.n + 1 : 0)) {
        size_t nl;
        const char *nm = tg_symbol_name(r->name, &nl);
        tgE_set(err, TG_ERR_RANGE, NULL, 0, 0,
                "rule %.*s fired more than %llu times (the max-use ratio): stopped", (int)nl, nm,
                run->limit->n);
        return -2;
    }
    if (run->hook) {
        tg_term *before = build(ctx, f->head, f->atom, f->n, M->vs + f->base);
        if (!before)
            return -1;
        if (run->hook(run->hook_ud, r, before, *R) < 0) {
            tgE_set(err, TG_ERR_RANGE, NULL, 0, 0, "stopped by a hook");
            return -2;
        }
        *R = M->vs + f->regs;
    }
    if (pv && tgO_fire_at(pv, ctx, r, f->head, f->atom, f->n, M->vs + f->base, fp - 1) < 0)
        return -1;
    return (rs->rewrites & 0xffff) == 0 ? FIRE_POLL : FIRE_ON;
}

/* -- data and built-ins -- */

/* E_LIST, E_LISTT: the list of the n values below *sp (and the tail
 * above them: tailed), which replaces them; -1 when out of memory.  A
 * proper list's computed head may name an assoc / comm op: canonical
 * order (ac.c). */
STEP int push_list(tg_rules *rs, tg_ctx *ctx, tgW_machine *M, uint32_t n, int tailed, size_t *sp)
{
    tg_term *t;
    if (tailed) {
        t = tg_list(ctx, n, M->vs + *sp - 1 - n, M->vs[*sp - 1]);
    } else {
        t = tg_list(ctx, n, M->vs + *sp - n, NULL);
        if (t && tgT_ispair(t) && tgT_kind(t->e[0]) == TG_SYMBOL)
            t = tgW_ac_canon(rs, t);
    }
    if (!t)
        return -1;
    *sp -= n + (size_t)tailed;
    M->vs[(*sp)++] = t;
    return 0;
}

/* E_NUM, E_TYPE: a built-in's value v (q: whether it applies) of the
 * i->c arguments below *sp, which it replaces, into register i->d or
 * pushed; 0 when it does not apply (the rule fails), else 1. */
STEP int push_value(tgW_machine *M, tg_term **R, const tgW_ins *i, int q, tg_term *v, size_t *sp)
{
    *sp -= i->c;
    if (!q)
        return 0;
    if (i->pad)
        R[i->d] = v;
    else
        M->vs[(*sp)++] = v;
    return 1;
}

/* -- C rewriters -- */

/* E_CEXT i: C rewriter i->a on frame f's call, as a term (known when
 * stepping: the only call with rules is the stepped term; with memo: its
 * key).  1 with its result pushed and in register 0, 0 when it does not
 * apply (the rule fails), -1 out of memory, -2 with err filled. */
STEP int c_rewrite(tg_rules *rs, tg_ctx *ctx, const tgW_run *run, tgW_machine *M, const frame *f,
                   const tgW_ins *i, tg_term **R, size_t *sp, tg_error *err)
{
    tg_term *call = run->step && M->stepped ? M->stepped
                                            : build(ctx, f->head, f->atom, f->n, M->vs + f->base);
    tg_term *out = NULL;
    if (!call)
        return -1;
    int rc = tgX_rewrite(rs, i->a, f->rule, call, &out, err);
    if (rc < 0)
        return -2;
    if (!rc)
        return 0;
    R[0] = out;
    M->vs[(*sp)++] = out;
    return 1;
}

/* E_CRET: the C rewriter's result on top of the stack.  A call of an op
 * with rules (in canonical order for an assoc / comm op, ac.c) is
 * reduced in frame f, its arguments taken as they are: 1, its c
 * arguments at the frame's base, *opid and *head its op.  Anything else
 * is the frame's normal form: 0 with *result.  -1 out of memory. */
STEP int c_result(tg_rules *rs, const tgW_run *run, tgW_machine *M, const frame *f,
                  const tgW_index *bix, size_t *sp, uint32_t *c, tg_term **head, uint32_t *opid,
                  tg_term **result)
{
    tg_term *t = M->vs[*sp - 1];
    if (tgT_ispair(t) && tgT_kind(t->e[0]) == TG_SYMBOL && !(t = tgW_ac_canon(rs, t)))
        return -1;
    tgW_op *op = run->step || !tgT_ispair(t) || tgT_kind(t->e[0]) != TG_SYMBOL ||
                         tg_tail(t) != TGT_NIL
                     ? NULL
                     : tgW_op_find(rs, t->e[0]);
    if (!op || !byop(bix, op->id)->n) {
        *result = t;
        return 0;
    }
    size_t base = f->base;
    *c = (uint32_t)(tg_length(t) - 1);
    if (vs_reserve(M, base + *c + 1 + 64) < 0)
        return -1;
    tg_iter it = {t, 1};
    for (uint32_t k = 0; k < *c; k++)
        M->vs[base + k] = tgT_iter_next(&it);
    *sp = base + *c;
    *head = t->e[0], *opid = op->id;
    if ((op->flags & (TGW_ASSOC | TGW_COMM)) && canon_call(rs, M, *opid, *head, sp, c) < 0)
        return -1;
    return 1;
}

/* -- returning -- */

/* A normal form *result returned to frame f, which has ctorrec levels:
 * their nodes built (tgW_unwind_levels), level 1's in the place of the
 * frame's own call, *sp just above it; -1 when out of memory. */
STEP int levels_returned(tg_ctx *ctx, tgW_machine *M, frame *f, tg_term *const *K,
                         tg_term **result, size_t *sp)
{
    if (!(*result = tgW_unwind_levels(ctx, M, f, K, *result)))
        return -1;
    M->vs[f->regs] = *result;
    *sp = f->regs + 1;
    return 0;
}

/* The machine's loop (see the top of the file), on explicit stacks of
 * values and frames.  Its labels are the machine's states:
 *   call, call_by  a call entered (memo looked up), or known at once;
 *   frame          a frame pushed for it, its rules picked by the index;
 *   try_rules      the next rule matched (self loops run here);
 *   ctor_rec       a ctorrec rule's call run as levels of its frame;
 *   exec           the rule's right side, one instruction after the other;
 *   failed_rule    a condition failed: the next rule;
 *   ret, returned  a normal form back to the frame below, which goes on
 *                  (a constructor chain's frame builds its node at once);
 *   oom, fail      the error paths: open memo calls closed unknown.
 * The work of each is in the steps above. */
tg_term *tgW_reduce(tg_rules *rs, const tgW_run *run, uint32_t opid, tg_term *head, int atom, uint32_t c,
                    size_t *spp, tg_error *err)
{
    const tgW_index *ix = run->ix;
    /* the index of the calls in right sides: none when stepping */
    const tgW_index *bix = run->step ? &no_rules : ix;
    int memo = run->memo && !run->step;
    tgW_machine *M = rs->m;
    tg_ctx *ctx = rs->ctx;
    size_t sp = *spp;
    size_t fp0 = 0, fp;
    size_t open0 = M->memo.nopen;   /* memo: the calls opened since */
    tg_term *result = NULL;
    frame *f = NULL;
    const tgW_ins *pc = NULL;
    tg_term **R = NULL;
    tg_term *const *K = NULL;
    tgO_prov *pv = rs->prov;    /* provenance: NULL when off */
    /* what a firing does beyond counting (see run_modes) */
    int watched, busy, can_loop;
    run_modes(rs, run, M, memo, &watched, &busy, &can_loop);
    /* rule timing (profiles): a try's ticks, from its match to its firing
     * or failure, conditions included */
    int timing = rs->timing;
    size_t cbase;               /* the call being entered: its arguments, */
    size_t ckn0 = open0;        /* the open memo calls before it */
    int copened;                /* and whether it is open in the memo */
    const struct tgW_byop *cby; /* its op's rules */

#ifdef TGW_THREADED
    /* the body's instructions: a jump through this table ends each */
    static const void *const optab[] = {
        [E_VAR] = &&x_E_VAR, [E_VARS] = &&x_E_VARS, [E_CONST] = &&x_E_CONST,
        [E_STORE] = &&x_E_STORE, [E_CALL] = &&x_E_CALL, [E_CALLV] = &&x_E_CALLV,
        [E_CALLAC] = &&x_E_CALLAC, [E_NORM] = &&x_E_NORM, [E_CALLT] = &&x_E_CALLT,
        [E_LIST] = &&x_E_LIST, [E_LISTT] = &&x_E_LISTT, [E_EQ] = &&x_E_EQ, [E_NE] = &&x_E_NE,
        [E_GOAL] = &&x_E_GOAL, [E_PRED] = &&x_E_PRED, [E_NOT] = &&x_E_NOT,
        [E_FIRE] = &&x_E_FIRE, [E_RET] = &&x_E_RET, [E_CEXT] = &&x_E_CEXT,
        [E_CRET] = &&x_E_CRET, [E_CPRED] = &&x_E_CPRED, [E_NUM] = &&x_E_NUM, [E_TYPE] = &&x_E_TYPE,
    };
#endif
    const tgW_ins *i;           /* the body's instruction being run */
    size_t pfk = SIZE_MAX;      /* constructor chains: see chain_start */

    /* frames above the ones of enclosing runs: none (reduce is not reentrant) */
    fp = fp0;

    if (memo && !M->memo.lazy) {
        /* the first call: its lookup deferred (in the lazy phase there is
         * none to make: the call goes as any other, below) */
        int known = first_call(rs, M, ix, opid, head, atom, c, &sp, &cbase, &ckn0, &cby, &copened,
                               &result, err);
        if (known < 0)
            goto fail;
        if (known)
            goto returned;
        goto frame;
    }

call:
    /* c arguments at vs[sp - c]: op opid */
    cby = byop(ix, opid);
call_by:
    /* the same, cby its rules */
    cbase = sp - c, ckn0 = M->memo.nopen;
    {
        int known = call_enter(rs, cby, memo, opid, head, atom, c, M->vs + cbase, &result, &copened, err);
        if (known < 0)
            goto fail;
        if (known) {
            sp = cbase;
            goto returned;
        }
        watched |= copened;
    }
frame:
    if (fs_reserve(M, fp + 1) < 0)
        goto oom;
    f = &M->fs[fp++];
    f->rules = call_rules(cby, M->vs + cbase, c, &f->nrules);
    f->ri = 0;
frame_rules:
    f->lev = 0;
    f->base = (uint32_t)cbase, f->n = c;
    f->head = head, f->atom = atom;
    f->chain = (uint32_t)ckn0;
    f->opened = copened;

try_rules:
    while (f->ri < f->nrules) {
        tgW_rule *r = f->rules[f->ri++];
        size_t regs = r->seg ? f->base + f->n : f->base;
        if (vs_reserve(M, regs + r->nregs + r->maxstack + 4) < 0)
            goto oom;
        R = M->vs + regs;
        r->tried++;
        if (__builtin_expect(timing, 0))
            f->t0 = tgTm_ticks();
        int m = rule_match(rs, ctx, M, f, r, R, err);
        if (m < 0)
            STEP_FAILED(m);
        if (!m) {
            if (__builtin_expect(timing, 0))
                r->ticks += tgTm_ticks() - f->t0;
            continue;
        }
        if (r->loop && can_loop && loop_allowed(byop(ix, r->op->id), r)) {
            int k = self_loop(rs, M, f, r, memo, R, err);
            if (k < 0)
                goto fail;
            if (k) {    /* the call that ended the loop: the frame's */
                c = f->n, head = f->head, atom = f->atom, opid = r->op->id;
                goto tail_call;
            }
        }
        if (__builtin_expect(f->opened == 2, 0) && counts_before_fire(r->body))
            LOOKUP_DEFERRED();
        f->rule = r;
        f->regs = (uint32_t)regs;
        sp = regs + r->nregs;
        K = r->k;
        pc = r->body;
        goto exec;
    }
    if (!(result = no_rule_applies(ctx, M, f, opid)))
        goto oom;
    goto ret;

ctor_rec: {
    /* A ctorrec rule's right side calls its own op: levels of frame f
     * while the rule keeps matching, then a frame for the call that ends
     * them (or the call's usual way, when memo is to look it up) */
    struct tgW_levels lv;
    int k = ctor_levels(rs, M, f, bix, cby, pc, memo, opid, c, &cbase, &sp, &ckn0, &lv, err);
    if (k < 0)
        STEP_FAILED(k);
    if (k)
        goto call_by;
    if (fs_reserve(M, fp + 1) < 0)
        goto oom;
    f = &M->fs[fp++];
    f->rules = lv.rr, f->nrules = lv.nr, f->ri = lv.tried;
    goto frame_rules;
}

exec:
#ifdef TGW_THREADED
    NEXT();
#endif
    for (;;) {
        i = pc++;
        switch (i->op) {
        OP(E_VAR):
            M->vs[sp++] = R[i->a];
            NEXT();
        OP(E_VARS):
            M->vs[sp] = R[i->a];
            M->vs[sp + 1] = R[i->b];
            if (i->pad == 3)
                M->vs[sp + 2] = R[i->c];
            sp += i->pad;
            NEXT();
        OP(E_CONST):
            M->vs[sp++] = K[i->a];
            NEXT();
        OP(E_STORE):
            R[i->a] = M->vs[sp - 1];
            NEXT();
        OP(E_CALL):
            opid = i->a, head = K[i->b], atom = i->pad, c = i->c;
            f->rule->built++;
            cby = byop(bix, opid);
            if (!cby->n) {
                /* a constructor: its node, built in place (the call
                 * would only build it, with no frame and no memo) */
                if (push_node(ctx, M, head, atom, c, &sp) < 0)
                    goto oom;
                NEXT();
            }
            f->pc = pc;
            switch (call_way(M, f, memo, watched, busy, opid, sp, c, &cbase, &ckn0, &copened)) {
            case CALL_LEVELS:
                goto ctor_rec;
            case CALL_FRAME:
                goto frame;
            }
            goto call_by;
        OP(E_CALLV): {
            int k = spliced_call(rs, ctx, M, f, i, K, &sp, &R, &c, err);
            if (k < 0)
                STEP_FAILED(k);
            if (!k)
                NEXT();
            f->pc = pc;
            opid = i->a, head = K[i->b], atom = 0;
            ix = bix;
            goto call;
        }
        OP(E_CALLAC):
            f->pc = pc;
            opid = i->a, head = K[i->b], atom = i->pad, c = i->c;
            if (canon_call(rs, M, opid, head, &sp, &c) < 0)
                goto oom;
            ix = bix;
            f->rule->built++;
            goto call;
        OP(E_NORM): {
            /* a variable's absorbed arguments (ac.c): a call if several */
            tg_term *x = M->vs[sp - 1];
            if (!tgT_ispair(x) || x->e[0] != K[i->b])
                NEXT();
            if (__builtin_expect(f->opened == 2, 0))
                LOOKUP_DEFERRED();
            if (absorbed_args(M, f, x, &sp, &R, &c) < 0)
                goto oom;
            f->pc = pc;
            opid = i->a, head = K[i->b], atom = 0;
            ix = bix;
            goto call;
        }
        OP(E_CALLT): {
            c = i->c;
            if (!pv && !byop(bix, i->a)->n) {
            build_ctor:
                /* a constructor: the frame's result, built in place */
                f->rule->built++;
                if (!(result = ctor_result(ctx, M, bix, fp0, fp, f, i, K, c, sp, &pfk)))
                    goto oom;
                goto ret;
            }
            /* the frame becomes the call's: arguments moved down */
            head = K[i->b], atom = i->pad, opid = i->a;
            if (tail_args(ctx, M, f, fp, pv, head, atom, c, &sp) < 0)
                goto oom;
        }
        tail_call: {
            /* the frame becomes the call of head (opid, atom) on its c
             * arguments, at its base: E_CALLT and a C rewriter's result */
            int known = tail_enter(rs, M, f, bix, memo, opid, head, atom, c, &cby, &watched, &result, err);
            if (known < 0)
                goto fail;
            if (known)
                goto ret;
            goto try_rules;
        }
        OP(E_LIST):
            if (push_list(rs, ctx, M, i->c, 0, &sp) < 0)
                goto oom;
            NEXT();
        OP(E_LISTT):
            if (push_list(rs, ctx, M, i->c, 1, &sp) < 0)
                goto oom;
            NEXT();
        OP(E_EQ): OP(E_NE): {
            sp -= 2;
            rs->conditions++;
            if ((M->vs[sp] == M->vs[sp + 1]) != (i->op == E_EQ))
                goto failed_rule;
            NEXT();
        }
        OP(E_GOAL):
            sp -= i->c;
            rs->conditions++;
            switch (tgD_goal(rs, K[i->b], M->vs + sp, i->c, R, f->rule, err)) {
            case -1:
                goto fail;
            case 0:
                goto failed_rule;
            }
            NEXT();
        OP(E_PRED): OP(E_NOT):
            sp--;
            if (pred(i->a, M->vs[sp]) != (i->op == E_PRED))
                goto failed_rule;
            NEXT();
        OP(E_FIRE): {
            tgW_rule *r = f->rule;
            if (__builtin_expect(watched, 0))
                goto fire_watched;
            r->fired++;
            /* every 2^16 rewrites of the run: an interrupt, the step limit */
            if (__builtin_expect((++rs->rewrites & 0xffff) == 0, 0))
                goto fire_poll;
            NEXT();
        fire_poll:
            if (tgW_run_poll(rs, err) < 0)
                goto fail;
            NEXT();
        fire_watched: {
            /* memo's part, the max-use limit, a hook or provenance */
            int k = watched_fire(rs, ctx, run, M, f, fp, opid, busy, timing, pv, &R, &result, err);
            if (k < 0)
                STEP_FAILED(k);
            if (k == FIRE_KNOWN)
                goto ret;
            if (k == FIRE_POLL)
                goto fire_poll;
            NEXT();
        }
        }
        OP(E_RET):
            result = M->vs[sp - 1];
            if (pv && tgO_done(pv, fp - 1, result) < 0)
                goto oom;
            goto ret;
        OP(E_CEXT): {
            int k = c_rewrite(rs, ctx, run, M, f, i, R, &sp, err);
            if (k < 0)
                STEP_FAILED(k);
            if (!k)
                goto failed_rule;
            NEXT();
        }
        OP(E_CRET): {
            /* a C rewriter's result: the frame's normal form, or a call
             * of an op with rules reduced in this frame */
            int k = c_result(rs, run, M, f, bix, &sp, &c, &head, &opid, &result);
            if (k < 0)
                goto oom;
            if (!k)
                goto ret;
            atom = 0;
            goto tail_call;
        }
        OP(E_CPRED): {
            sp -= i->c;
            rs->conditions++;
            int rc = tgX_pred_call(rs, i->a, M->vs + sp, i->c, err);
            if (rc < 0)
                goto fail;
            if (rc == i->pad)
                goto failed_rule;
            NEXT();
        }
        OP(E_NUM): {
            tg_term *v;
            int q = tgQ_apply(ctx, i->a, i->c, M->vs + sp - i->c, &v);
            if (q < 0)
                goto oom;
            if (!push_value(M, R, i, q, v, &sp))
                goto failed_rule;
            NEXT();
        }
        OP(E_TYPE): {
            tg_term *v;
            int q = tgTy_apply(rs, i->a, i->c, M->vs + sp - i->c, &v);
            if (q < 0)
                goto oom;
            if (!push_value(M, R, i, q, v, &sp))
                goto failed_rule;
            NEXT();
        }
        }
    }

failed_rule:
    /* a condition failed: the next rule, from the same arguments */
    if (__builtin_expect(timing, 0))
        f->rule->ticks += tgTm_ticks() - f->t0;
    goto try_rules;

ret:
    /* result is the normal form of frame f's call */
    if (memo && f->chain < M->memo.nopen)   /* else nothing to close */
        tgW_memo_close(&M->memo, f->chain, result, rs->rewrites);
    sp = f->base;
    fp--;
returned:
    M->vs[sp++] = result;
    if (fp == fp0) {
        *spp = sp - 1;
        return result;
    }
    f = &M->fs[fp - 1];
    K = f->rule->k;
    pc = f->pc;
    /* its ctorrec levels' nodes, then its own as below */
    if (__builtin_expect(f->lev != 0, 0) && levels_returned(ctx, M, f, K, &result, &sp) < 0)
        goto oom;
    /* A frame of a constructor chain (see chain_start; known to be one
     * at or above pfk, else tested) builds its node at once: its E_CALLT
     * without the dispatch, the registers or the tests of the general
     * path. */
    if (fp - 1 >= pfk || (!pv && chain_frame(bix, f))) {
        i = pc;
        c = i->c;
        goto build_ctor;
    }
    R = M->vs + f->regs;
    goto exec;

oom:
    tgE_nomem(err);
fail:
    if (memo)   /* the open calls have no normal form */
        tgW_memo_close(&M->memo, open0, NULL, rs->rewrites);
    return NULL;
}
