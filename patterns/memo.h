/* memo.h - the machine's memo table (module prefix tgW_memo_): calls
 * (an op's head and its normalized arguments) to their normal forms,
 * for one normalization with memo on.
 *
 * A call is its key as it stands on the value stack: the head and up to
 * two arguments inline, so a lookup is one probe and needs no term to be
 * built; a call with more arguments is keyed by its interned term.  The
 * table also keeps the stack of open calls (those being reduced): an
 * entry's slot moves when the table grows, and the table renumbers the
 * open ones then.
 *
 * Remembering costs a probe of a large table per call, and keeps every
 * normal form alive; where calls never repeat (a Peano addition, a list
 * copy) that is all loss.  So each op's lookups and the rewrites its hits
 * saved are counted, and an op whose hits saved fewer than one rewrite
 * per 8 lookups (judged at its 256th reduction and each doubling, a
 * reduction being a run of its calls closed at once with one normal
 * form, see memo.c) is dropped: its calls are no longer remembered for
 * the rest of the normalization.  It is judged alike when the calls of
 * its reductions ended before reach 1024 and each doubling: a chain
 * counts once as a reduction but each of its calls took an entry.
 * Cycles through dropped ops are still found, Brent's way: every 2^k-th
 * call of a dropped op is remembered as usual and watched, and a call of
 * a dropped op equal to the watched one is looked up; a cycle of length
 * L entered after T such calls is reported after at most about T + L.
 * Ops of more arguments than an entry holds are judged and dropped
 * alike (they were always remembered, and each call built its key term:
 * 7 to 10 times the time without memo where their calls never repeat);
 * their watched call is compared by a hash of its arguments, then by
 * its term.
 *
 * The first TGW_MEMO_FIRST slots lie in the struct itself (nothing
 * allocated for a short normalization); a larger table lies outside
 * the collector's heap (malloc'd, or mapped from 1 MB on; a root) and
 * is freed when the normalization ends, or kept zeroed for the next
 * one up to 2^17 slots (memo.c, pool); it is bounded: at its largest
 * size (memo.c, bound) it keeps, when it is full, only its open calls
 * and those found again since the previous cut, and makes room for new
 * ones by dropping the rest.  Growing never holds two whole tables
 * (memo.c, grow).  The start is lazy (TGW_MEMO_PREFIX below), and deep
 * chains of nested calls are held (TGW_MEMO_NEST below).
 */
#ifndef TG_MEMO_H
#define TG_MEMO_H

#include "rset.h"

#define TGW_MEMO_INLINE 2   /* arguments kept in an entry */

typedef struct tgW_mentry {
    tg_term *head;      /* the op's symbol, or the whole call (more arguments) */
    tg_term *nf;        /* the normal form, TGW_MEMO_OPEN, or NULL (unknown) */
    tg_term *a[TGW_MEMO_INLINE];
    uint64_t meta;      /* 0: empty slot; else hash, count and flags (memo.c) */
} tgW_mentry;

/* An open call: its slot and the rule that fired on it (NULL until one
 * does), for the cycle report. */
typedef struct tgW_mopen {
    size_t slot;
    tgW_rule *rule;
    unsigned long long start;   /* rewrites when it opened */
    uint64_t skipped;           /* calls not remembered before it opened */
    uint32_t op;
    uint32_t at;        /* its arguments' place on the machine's value stack */
    uint32_t nest;      /* its depth in a chain of nested calls of op (memo.c, open_push) */
} tgW_mopen;

/* What remembering the calls of one op gave. */
typedef struct tgW_mstat {
    uint64_t lookups, saved;
    uint64_t closed;    /* reductions (memo.c, judge) */
    uint64_t calls;     /* calls remembered and closed (memo.c, judge_calls) */
    uint64_t calls_next;    /* and where they are judged next (0: the first time) */
    int dropped;        /* 0: remembered; TGW_MEMO_DROPPED or TGW_MEMO_HELD: its calls pass */
    uint32_t holds;     /* its chains held (tgW_memo_hold) */
} tgW_mstat;

/* The table's first size: held in the struct itself (see first). */
#define TGW_MEMO_FIRST 256

/* The lazy start: the first TGW_MEMO_PREFIX calls of a normalization are
 * remembered (a cycle of a few calls is reported as it always was), the
 * next TGW_MEMO_LAZY are not looked up at all, and the calls after them
 * are remembered as usual.  A normalization of a few thousand calls
 * then costs about what it costs without memo: memo's lookups, closes
 * and first allocations (some hundreds of instructions a call) would be
 * a third to half again its time, with nothing to win back in so short
 * a run.  A longer run loses little: what it computed in the lazy phase
 * it computes again at most once with memo on (fibonacci or tak stay
 * linear).  A cycle entered after the prefix is found once the lazy
 * phase is over, and the calls that phase left out show as "..." in
 * its report, as those of dropped ops do. */
#define TGW_MEMO_PREFIX 8
#define TGW_MEMO_LAZY 2048

/* Deep chains.  A remembered op's calls made by constructor levels
 * (as (plus (s ?n) ?m) => (s (plus ?n ?m)): machine.c, ctor_rec) run
 * one by one while memo looks them up: each takes a frame, a lookup,
 * an entry and a close, where a level costs a tenth of that.  A chain
 * of such nested calls opens all its calls before the first one
 * closes, so an op whose calls never repeat was remembered through a
 * whole chain (hundreds of calls: a Peano addition in factorial7)
 * before its first judgement could drop it.  So when the open call on
 * top is the TGW_MEMO_NEST-th of a chain of nested calls of its op
 * (each made inside the reduction of the one below: its arguments lie
 * higher on the value stack) and the machine is about to make the next
 * one as a level (tgW_memo_level), the op is held: its calls pass as a
 * dropped op's (watch points and all) until that call closes, and it is
 * remembered again after.  The chain's first TGW_MEMO_NEST calls stay
 * remembered, so a chain met again is found at its top; the deeper ones
 * run as levels.  At the op's second held chain and each after, it is
 * judged first as at its doublings (memo.c, verdict), and dropped when
 * its hits saved too little.  TGW_MEMO_HOLDS ops may be held at once
 * (holds within holds), more are not held. */
#define TGW_MEMO_NEST 16
#define TGW_MEMO_HOLDS 8
#define TGW_MEMO_DROPPED 1  /* tgW_mstat's dropped: for the rest of the normalization */
#define TGW_MEMO_HELD 2     /* until the held chain's call closes */

typedef struct tgW_memo {
    tgW_mentry *e;      /* first, or a collector root (memo.c, table_alloc): keys and normal forms stay alive */
    size_t cap, n;
    tgW_mopen *open;    /* malloc memory, freed by tgW_memo_clear (no pointer the
                         * collector must see: its rules are the rule set's; in
                         * collector memory, a deep recursion's stack of open
                         * calls, hundreds of KB, was scanned at each collection) */
    size_t nopen, capopen;
    tgW_mstat *stat;    /* by op id (malloc memory, freed by tgW_memo_clear) */
    size_t nstat;
    uint64_t skipped;   /* calls of dropped ops */
    tg_term *watch[1 + TGW_MEMO_INLINE];    /* head and (first) arguments of the watched call */
    tg_term *watch_term;    /* with more arguments: the call as a term */
    uint64_t watch_meta;    /* and its key_meta over its arguments (memo.c) */
    uint32_t watch_n;   /* its argument count; UINT32_MAX: none */
    int watch_atom;
    uint64_t cuts;      /* evictions (the table at its size bound) */
    uint64_t grows;     /* tables allocated (growths and cuts) */
    size_t cap_max;     /* the bound in slots (0: memo.c's policy; tests set less) */
    uint32_t prefix_left;   /* calls still remembered before the lazy phase */
    uint32_t lazy;      /* calls still to pass unremembered (the lazy phase) */
    int eager;          /* no lazy phase (tests drive the table call by call) */
    struct { uint32_t op, anchor; } held[TGW_MEMO_HOLDS];  /* ops held, and the open
                         * stack position of the call each is held on */
    uint32_t nheld;
    uint32_t deep;      /* op + 1 when the open call on top is of op, TGW_MEMO_NEST
                         * deep in a chain, and none has closed since it opened; else 0 */
    int used;           /* since the last clear: first touched (memo.c, grow) */
    uint64_t firstmap[TGW_MEMO_FIRST / 64];    /* first's slots taken since it was last cleared */
    /* The table up to TGW_MEMO_FIRST slots: no allocation, no root to
     * register, and only what was used cleared at the end, so that a
     * normalization of a few hundred calls pays for no more than its
     * lookups: clearing the whole of it (10 KB, out of the cache by the
     * next normalization) took about a microsecond, more than the
     * lookups of a few calls (REC's `calls`: 1.23 times plain's time).
     * The tgW_memo lies in the machine, collector memory that the
     * collector scans.  Last: tgW_memo_clear resets the fields above
     * it. */
    tgW_mentry first[TGW_MEMO_FIRST];
} tgW_memo;

/* The marker of a call being reduced. */
extern tg_term tgW_memo_open_obj;
#define TGW_MEMO_OPEN (&tgW_memo_open_obj)

#define TGW_MEMO_SKIP ((size_t)-2)

/* Look up the call of op `op` (head, atom: a bare nullary symbol) with
 * the n arguments at args, at position `at` of the machine's value stack
 * (a call made inside another's reduction lies higher, a tail call at its
 * caller's place: see TGW_MEMO_NEST), `rewrites` having been done so far.  Returns
 * its slot; *nf is its normal form, or TGW_MEMO_OPEN when it is being
 * reduced (a cycle), or NULL when it is not known: it then becomes open
 * (pushed on the open stack, marked).  Returns TGW_MEMO_SKIP (*nf NULL)
 * when the call is not remembered (its op was dropped), (size_t)-1 when
 * out of memory. */
size_t tgW_memo_enter(tgW_memo *m, tg_ctx *ctx, uint32_t op, tg_term *head, int atom, uint32_t n,
                      tg_term *const *args, size_t at, unsigned long long rewrites, tg_term **nf);

/* The fast path of tgW_memo_enter for a call not remembered: 1 (and
 * counted as tgW_memo_enter counts it) when the call of op with the n
 * arguments at args is of a dropped op, neither the watched call nor a
 * 2^k-th one; 0 when tgW_memo_enter is to decide.  Inline and short:
 * after the drop, most calls take only this.  A call whose first
 * argument is the watched call's (or without arguments) may be the
 * watched one, and so may a call of more arguments with the watched
 * call's op, count and first two arguments: tgW_memo_enter compares the
 * whole call. */
static inline int tgW_memo_skip(tgW_memo *m, uint32_t op, tg_term *head, uint32_t n, tg_term *const *args)
{
    if (m->lazy) {      /* the lazy phase: nothing remembered, nothing counted */
        m->lazy--;
        return 1;
    }
    if (op >= m->nstat || !m->stat[op].dropped || n == 0)
        return 0;
    if (n <= TGW_MEMO_INLINE ? args[0] == m->watch[1]
                             : m->watch[0] == head && m->watch_n == n && args[0] == m->watch[1] &&
                                   args[1] == m->watch[2])
        return 0;
    uint64_t k = m->skipped + 1;
    if (!(k & (k - 1)))
        return 0;   /* a new watch point: tgW_memo_enter sets it */
    m->skipped = k;
    return 1;
}

/* Hold op (see TGW_MEMO_NEST): 1 when its calls now pass. */
int tgW_memo_hold(tgW_memo *m, uint32_t op);

/* The machine is about to make a call of op as a constructor level
 * (machine.c: E_CALL of a ctorrec rule, with or without its fast path,
 * so that both remember alike): op is held when the open call on top is
 * its own, TGW_MEMO_NEST deep in a chain (deep is set only after op's
 * counts exist). */
static inline void tgW_memo_level(tgW_memo *m, uint32_t op)
{
    if (m->deep == op + 1 && !m->stat[op].dropped)
        (void)tgW_memo_hold(m, op);
}

/* The machine's fast paths (self loops, ctorrec levels: machine.c) make
 * calls of one op one after the other without a lookup; they may do so
 * for calls that tgW_memo_skip would pass.  How many calls from now on
 * it passes whatever they are (the lazy phase's rest), or, for a dropped
 * op of n > 0 arguments, how many before the next 2^k-th one, provided
 * none has *watch as its first argument (then it may be the watched
 * call: tgW_memo_enter is to decide); 0 when the next call is to be
 * looked up.  tgW_memo_skipped then counts the calls passed so. */
static inline uint64_t tgW_memo_skips(const tgW_memo *m, uint32_t op, uint32_t n, tg_term **watch)
{
    *watch = NULL;
    if (m->lazy)
        return m->lazy;
    if (op >= m->nstat || !m->stat[op].dropped || n == 0)
        return 0;
    *watch = m->watch[1];
    uint64_t k = m->skipped + 1;
    if (!(k & (k - 1)) || k >> 62)
        return 0;
    return ((uint64_t)1 << (64 - __builtin_clzll(k))) - k;
}

static inline void tgW_memo_skipped(tgW_memo *m, uint64_t calls)
{
    if (m->lazy)
        m->lazy -= (uint32_t)calls;
    else
        m->skipped += calls;
}

/* A call that was not looked up (the machine defers the lookup of the
 * call it starts from, see machine.c) turned out to be its own normal
 * form without a rewrite, a condition test or a call: count it as its
 * lookup would have been counted (a hit or a miss, it saves nothing), so
 * that the drop heuristics, and thus the hits, are those of a lookup. */
void tgW_memo_pass(tgW_memo *m, uint32_t op, tg_term *head, int atom, uint32_t n, tg_term *const *args);

/* The open calls from the open stack's position `from` on get normal
 * form nf (NULL: unknown again, after an error) and are closed;
 * `rewrites` have been done so far. */
void tgW_memo_close(tgW_memo *m, size_t from, tg_term *nf, unsigned long long rewrites);

/* The call in slot as a term (for messages); NULL when out of memory. */
tg_term *tgW_memo_key(const tgW_memo *m, tg_ctx *ctx, size_t slot);

/* Forget everything: a grown table and the open stack are freed; the
 * counts by op keep their memory, emptied.  A freed table of at most
 * 2^17 slots is kept, zeroed, for the next normalization (memo.c,
 * pool): the system's fresh pages cost a fault each. */
void tgW_memo_clear(tgW_memo *m);

/* The bytes of freed tables kept for the next normalizations (memo.c,
 * pool; tests): at most one table of each size from 2^9 to 2^17 slots. */
size_t tgW_memo_pool_bytes(void);

#endif
