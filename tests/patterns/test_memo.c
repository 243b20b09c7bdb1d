/* test_memo.c - the memo table's policy (patterns/memo.h), driven call by
 * call: growing to 2^20 slots without holding two whole tables (the peak
 * resident memory rises by about the new table, the open calls followed
 * through every move), the lazy start (the prefix remembered, the lazy
 * phase not looked up nor counted, memo as usual after it), the first
 * table in the struct, the bound and its cuts (a table evicted, keeping
 * the call found again), an op dropped at its 256th reduction, an op
 * dropped on the calls of its chains, a long chain kept because it is
 * found again, the table emptied between normalizations, the tables
 * kept for the next normalizations (zeroed, grown into again, none kept
 * past 2^17 slots), deep chains of nested calls held (the depth counted
 * by stack place, the deeper calls passed until the held call closes,
 * the chain's first calls remembered, the op judged at its second deep
 * chain, tail chains not held); then
 * normalizing with memo against without: a factorial's deep chains of
 * additions in the machine's own table, with plain's rewrites, and a
 * cycle in a chain of levels reported; the same normal forms, memo's
 * win in rewrites beside ops it drops, and a run shorter than the lazy
 * start with plain's very rewrites, the same normal forms and rewrites
 * after a run stopped by the step limit, after a cycle, after more
 * rules, with the tables kept between them; and the runs of calls that the
 * machine's fast paths may make without a lookup (tgW_memo_skips). */
#define GC_THREADS 1
#include <gc/gc.h>

#include "harness.h"
#include "memo.h"
#include "tgrel.h"

#include <stdio.h>
#include <string.h>

static tgW_memo *m;
static tg_ctx *ctx;
static unsigned long long rewrites;

/* The lookup of (head i): its normal form, NULL when it is now open;
 * *skipped when the call is not remembered. */
static tg_term *enter(uint32_t op, tg_term *head, long i, int *skipped)
{
    tg_term *arg = tg_int(ctx, i), *nf = NULL;
    size_t slot = tgW_memo_enter(m, ctx, op, head, 0, 1, &arg, 0, rewrites, &nf);
    if (skipped)
        *skipped = slot == TGW_MEMO_SKIP;
    return nf;
}

/* A call of (head i) reduced in `cost` rewrites to (head i+1): its lookup,
 * and when it was open, its close.  1 when it was a hit. */
static int call(uint32_t op, tg_term *head, long i, unsigned long long cost)
{
    int skipped;
    size_t from = m->nopen;
    tg_term *nf = enter(op, head, i, &skipped);
    if (nf)
        return 1;
    rewrites += cost;
    if (!skipped)
        tgW_memo_close(m, from, tg_int(ctx, i + 1), rewrites);
    return 0;
}

/* A tail chain: the calls (head first) .. (head first+len-1) opened one
 * after the other (each one rewrite), closed at once with one normal
 * form: one reduction of len calls. */
static void chain(uint32_t op, tg_term *head, long first, long len)
{
    size_t from = m->nopen;
    for (long i = first; i < first + len; i++) {
        enter(op, head, i, NULL);
        rewrites++;
    }
    tgW_memo_close(m, from, tg_int(ctx, -first), rewrites);
}

static void table_tests(void)
{
    m = GC_MALLOC(sizeof *m);
    m->eager = 1;   /* no lazy phase: these drive the table from its first call */
    tgW_memo_clear(m);
    tg_term *f = tg_symbol_cstr(ctx, "f"), *g = tg_symbol_cstr(ctx, "g");
    tg_term *h = tg_symbol_cstr(ctx, "h"), *q = tg_symbol_cstr(ctx, "q");

    /* the first table: the struct's own */
    TAP_CHECK(!call(0, f, 1, 5), "a first call is not known");
    TAP_CHECK(m->e == m->first && m->cap == TGW_MEMO_FIRST, "its table is the struct's own (%zu slots)",
              m->cap);
    TAP_CHECK(call(0, f, 1, 5), "found again");

    /* The bound: distinct calls of an op that pays (one call, found
     * again and again, saves 10^5 rewrites each time) fill the table to
     * its bound; it is cut, not grown, and keeps the call found again. */
    m->cap_max = 1024;
    call(0, f, -1, 100000);
    int hot_hits = 0;
    for (long i = 0; i < 20000; i++) {
        call(0, f, i, 1);
        if (i % 16 == 0)
            hot_hits += call(0, f, -1, 1);
    }
    TAP_CHECK(m->cuts > 0, "the table was cut (%llu times)", (unsigned long long)m->cuts);
    TAP_CHECK(m->cap <= 1024, "and never grew past its bound (%zu slots)", m->cap);
    TAP_EQ_INT(hot_hits, 1250, "the call found again stayed through every cut");
    TAP_CHECK(!m->stat[0].dropped, "its op pays and is not dropped");
    TAP_CHECK(call(0, f, 19999, 1), "the last call is still known");
    TAP_CHECK(!call(0, f, 0, 1), "an early call was evicted");
    TAP_EQ_INT(m->nopen, 0, "no call left open");

    /* calls open while the table is cut under them: each stays on the
     * open stack at its entry's new slot, and its entry is open (not a
     * normal form, nor a place on the stack left from the move) */
    enum { OPEN_N = 200 };
    long before_cuts = (long)m->cuts;
    for (long i = 0; i < OPEN_N; i++)
        enter(0, f, 500000 + i, NULL);
    for (long i = 0; i < 3000; i++)
        call(0, f, 600000 + i, 1);
    int followed = (long)m->cuts > before_cuts && m->nopen == OPEN_N;
    for (size_t k = 0; followed && k < m->nopen; k++) {
        const tgW_mentry *e = &m->e[m->open[k].slot];
        followed = e->nf == TGW_MEMO_OPEN && e->a[0] == tg_int(ctx, 500000 + (long)k);
    }
    TAP_CHECK(followed, "%d calls open through %ld cuts: each followed to its new slot, still open",
              OPEN_N, (long)m->cuts - before_cuts);
    TAP_CHECK(enter(0, f, 500000, NULL) == TGW_MEMO_OPEN, "the first of them is found open (a cycle)");
    tgW_memo_close(m, 0, tg_int(ctx, 7), rewrites);
    int known = 1;
    for (long i = 0; i < OPEN_N; i++)
        known &= enter(0, f, 500000 + i, NULL) == tg_int(ctx, 7);
    TAP_CHECK(known, "closed, all are known");

    /* an op whose calls never repeat: dropped at its 256th reduction */
    for (long i = 0; i < 255; i++)
        call(1, g, i, 3);
    TAP_CHECK(!m->stat[1].dropped, "not dropped after 255 reductions");
    call(1, g, 255, 3);
    TAP_CHECK(m->stat[1].dropped, "dropped at its 256th");
    int skipped, skips = 0;
    for (long i = 1000; i < 1100; i++) {
        tg_term *nf = enter(1, g, i, &skipped);
        skips += skipped;
        if (!skipped && !nf)    /* a watch point: open, closed as a reduction */
            tgW_memo_close(m, m->nopen - 1, tg_int(ctx, 0), rewrites);
    }
    TAP_CHECK(skips >= 90, "its calls are then not remembered (%d of 100)", skips);
    TAP_CHECK(tgW_memo_skip(m, 1, g, 1, (tg_term *[]){tg_int(ctx, 5000)}) == 1,
              "and most take the inline fast path");

    /* an op of tail chains that are never found again: judged on the
     * calls of its earlier chains (1100 after 11 chains of 100), long
     * before its 256th reduction */
    for (long c = 0; c < 11; c++)
        chain(2, h, 1000 * c, 100);
    TAP_CHECK(!m->stat[2].dropped, "11 chains of 100 calls: not judged yet");
    chain(2, h, 50000, 100);
    TAP_CHECK(m->stat[2].dropped, "dropped at the 12th chain (%llu reductions)",
              (unsigned long long)m->stat[2].closed);

    /* a first chain of 2000 calls, found again just after it closes (as
     * quicksort's comparisons are): judged at the next chain, it is kept */
    chain(3, q, 0, 2000);
    TAP_CHECK(!m->stat[3].dropped, "a first chain longer than the calls' threshold is not judged on itself");
    TAP_CHECK(enter(3, q, 0, NULL) == tg_int(ctx, 0), "found again: its normal form");
    chain(3, q, 10000, 10);
    TAP_CHECK(!m->stat[3].dropped, "the hit saved its 2000 rewrites: kept at the next judgement");

    /* the table emptied for the next normalization */
    tgW_memo_clear(m);
    int clean = m->e == NULL && m->cap == 0 && m->n == 0 && m->cap_max == 1024;
    for (size_t i = 0; i < TGW_MEMO_FIRST; i++)
        clean &= m->first[i].meta == 0 && m->first[i].nf == NULL && m->first[i].head == NULL;
    TAP_CHECK(clean, "cleared: the grown table freed, the first one empty, the bound kept");
    TAP_CHECK(m->stat == NULL && m->nstat == 0, "the counts freed: they start again");
    TAP_CHECK(!call(1, g, 1, 3) && call(1, g, 1, 3), "a dropped op's calls are found again");
    tgW_memo_clear(m);

    /* a table freed is kept for the next normalization's (no page to
     * fault in again), zeroed: none of its calls is found there, and it
     * holds no pointer the collector would follow while kept */
    m->cap_max = 0;
    call(0, f, -1, 100000);
    for (long i = 0; i < 5000; i++) {
        call(0, f, 100000 + i, 1);
        if (i % 16 == 0)
            call(0, f, -1, 1);  /* found: the op pays */
    }
    tgW_mentry *kept = m->e;
    size_t kept_cap = m->cap;
    TAP_CHECK(m->cap == 16384, "5000 calls: a table of 16384 slots (%zu)", m->cap);
    tgW_memo_clear(m);
    size_t pooled = tgW_memo_pool_bytes();
    TAP_CHECK(pooled >= kept_cap * sizeof(tgW_mentry) && pooled <= ((size_t)1 << 18) * sizeof(tgW_mentry),
              "kept: each size it grew through, within 2^18 slots' bytes (%zu bytes)", pooled);
    int zero = 1;
    for (size_t i = 0; i < kept_cap; i++)
        zero &= !kept[i].meta && !kept[i].nf && !kept[i].head && !kept[i].a[0] && !kept[i].a[1];
    TAP_CHECK(zero, "the kept table is all zeros");
    call(0, f, -1, 100000);
    for (long i = 0; i < 5000; i++) {
        call(0, f, 200000 + i, 1);
        if (i % 16 == 0)
            call(0, f, -1, 1);
    }
    TAP_CHECK(m->e == kept && m->cap == 16384, "the next normalization grows into it again");
    int stale = 0, found = 0;
    for (long i = 0; i < 5000; i += 7) {
        stale += enter(0, f, 100000 + i, NULL) != NULL;
        found += enter(0, f, 200000 + i, NULL) != NULL;
    }
    TAP_EQ_INT(stale, 0, "zeroed: the earlier calls are not found");
    TAP_EQ_INT(found, (5000 + 6) / 7, "its own are");
    tgW_memo_clear(m);

    /* a table grown past the pool's sizes empties it: what is kept
     * between normalizations stays bounded */
    call(0, f, -1, 100000);
    for (long i = 0; i < 140000; i++) {
        call(0, f, 300000 + i, 1);
        if (i % 16 == 0)
            call(0, f, -1, 1);
    }
    TAP_CHECK(m->cap == ((size_t)1 << 19), "140000 calls: a table of 2^19 slots (%zu)", m->cap);
    TAP_EQ_INT((long)tgW_memo_pool_bytes(), 0, "the pool emptied on growing past 2^17 slots");
    call(0, f, -1, 1);
    tgW_memo_clear(m);
    TAP_EQ_INT((long)tgW_memo_pool_bytes(), 0, "and the large table is not kept");
    /* ended at 2^18 slots: the 2^17 table it grew from was not kept either */
    call(0, f, -1, 100000);
    for (long i = 0; i < 70000; i++) {
        call(0, f, 300000 + i, 1);
        if (i % 16 == 0)
            call(0, f, -1, 1);
    }
    TAP_CHECK(m->cap == ((size_t)1 << 18), "70000 calls: a table of 2^18 slots (%zu)", m->cap);
    tgW_memo_clear(m);
    TAP_EQ_INT((long)tgW_memo_pool_bytes(), 0, "nor the 2^17 one it grew from");
}

/* ---- the lazy start ----------------------------------------------------- */

/* A call of (head i) as the machine makes it: the inline fast path
 * first, then the lookup.  0: not remembered, 1: open now (closed
 * here), 2: found. */
static int machine_call(uint32_t op, tg_term *head, long i)
{
    tg_term *arg = tg_int(ctx, i), *nf = NULL;
    if (tgW_memo_skip(m, op, head, 1, &arg))
        return 0;
    size_t from = m->nopen;
    size_t slot = tgW_memo_enter(m, ctx, op, head, 0, 1, &arg, 0, rewrites, &nf);
    if (slot == TGW_MEMO_SKIP)
        return 0;
    if (nf)
        return 2;
    tgW_memo_close(m, from, tg_int(ctx, i + 1), ++rewrites);
    return 1;
}

static void lazy_tests(void)
{
    m = GC_MALLOC(sizeof *m);
    tgW_memo_clear(m);
    tg_term *f = tg_symbol_cstr(ctx, "f");
    int opened = 0, found = 0, passed = 0;
    for (long i = 0; i < TGW_MEMO_PREFIX; i++)
        opened += machine_call(0, f, i) == 1;
    TAP_CHECK(opened == TGW_MEMO_PREFIX, "the first %d calls are remembered (%d)", TGW_MEMO_PREFIX, opened);
    for (long i = 0; i < TGW_MEMO_LAZY; i++)
        passed += machine_call(0, f, i % TGW_MEMO_PREFIX) == 0;
    TAP_CHECK(passed == TGW_MEMO_LAZY, "the next %d are not looked up, even those remembered (%d)",
              TGW_MEMO_LAZY, passed);
    TAP_CHECK(m->stat[0].lookups == TGW_MEMO_PREFIX, "nor counted (%llu lookups)",
              (unsigned long long)m->stat[0].lookups);
    for (long i = 0; i < TGW_MEMO_PREFIX; i++)
        found += machine_call(0, f, i) == 2;
    TAP_EQ_INT(found, TGW_MEMO_PREFIX, "then calls are looked up again: the prefix's are found");
    TAP_EQ_INT(machine_call(0, f, -5), 1, "and new ones remembered");
    TAP_EQ_INT(machine_call(0, f, -5), 2, "and found");

    /* a deferred lookup (machine.c: the call a run starts from) in the
     * lazy phase is not made either */
    tgW_memo_clear(m);
    for (long i = 0; i < TGW_MEMO_PREFIX; i++)
        machine_call(0, f, i);
    tg_term *arg = tg_int(ctx, 7), *nf = NULL;
    TAP_CHECK(tgW_memo_enter(m, ctx, 0, f, 0, 1, &arg, 0, rewrites, &nf) == TGW_MEMO_SKIP && !nf,
              "a deferred lookup in the lazy phase is left out");
    tgW_memo_clear(m);
    TAP_CHECK(m->lazy == 0 && m->prefix_left == TGW_MEMO_PREFIX, "each normalization starts with its prefix");
    tgW_memo_clear(m);
}

/* tgW_memo_skips (the machine's fast paths, machine.c: loop_run and
 * run_levels) against tgW_memo_skip call by call: the count it gives is
 * exactly the run of calls the inline path passes before one it leaves
 * to tgW_memo_enter, in the lazy phase and for a dropped op between its
 * watch points; and tgW_memo_skipped counts such a run as those calls. */
static void skips_tests(void)
{
    m = GC_MALLOC(sizeof *m);
    tgW_memo_clear(m);
    tg_term *f = tg_symbol_cstr(ctx, "f"), *w;
    for (long i = 0; i < TGW_MEMO_PREFIX; i++)
        machine_call(0, f, i);
    uint64_t k = tgW_memo_skips(m, 0, 1, &w);
    TAP_CHECK(k == TGW_MEMO_LAZY && w == NULL, "the lazy phase: %d calls pass whatever they are (%llu)",
              TGW_MEMO_LAZY, (unsigned long long)k);
    tgW_memo_skipped(m, 100);
    k = tgW_memo_skips(m, 0, 1, &w);
    uint64_t passed = 0;
    while (machine_call(0, f, (long)passed) == 0)
        passed++;
    TAP_CHECK(k == TGW_MEMO_LAZY - 100 && passed == k,
              "100 counted as passed: %llu left, and as many pass one at a time (%llu)",
              (unsigned long long)k, (unsigned long long)passed);

    /* a dropped op: runs up to each watch point (2^j-th call) */
    for (long i = 0; i < 300; i++)
        machine_call(1, f, 10000 + i);
    TAP_CHECK(m->stat[1].dropped, "an op of calls never found again is dropped");
    int exact = 1, rounds = 0;
    long arg = 20000;
    for (int j = 0; j < 12; j++) {
        k = tgW_memo_skips(m, 1, 1, &w);
        if (k == 0) {   /* the next call is to be looked up: made so */
            machine_call(1, f, arg++);
            continue;
        }
        rounds++;
        exact &= w == m->watch[1];
        uint64_t n = 0;
        for (;;) {
            tg_term *a = tg_int(ctx, arg++);
            if (!tgW_memo_skip(m, 1, f, 1, &a))
                break;
            n++;
        }
        exact &= n == k;
        /* the one left to the lookup, made */
        tg_term *a = tg_int(ctx, arg - 1), *nf = NULL;
        size_t from = m->nopen;
        if (tgW_memo_enter(m, ctx, 1, f, 0, 1, &a, 0, rewrites, &nf) != TGW_MEMO_SKIP && !nf)
            tgW_memo_close(m, from, tg_int(ctx, 0), ++rewrites);
    }
    TAP_CHECK(exact && rounds >= 6, "each count is the run the inline path passes (%d runs)", rounds);
    k = tgW_memo_skips(m, 1, 1, &w);
    if (k == 0) {
        machine_call(1, f, arg++);
        k = tgW_memo_skips(m, 1, 1, &w);
    }
    uint64_t sk = m->skipped;
    tgW_memo_skipped(m, k);
    tg_term *a = tg_int(ctx, arg++);
    TAP_CHECK(k > 0 && m->skipped == sk + k && !tgW_memo_skip(m, 1, f, 1, &a) &&
                  tgW_memo_skips(m, 1, 1, &w) == 0,
              "a run counted as passed ends at the watch point: the next call is looked up");
    tg_term *wa = m->watch[1];
    TAP_CHECK(tgW_memo_skip(m, 1, f, 1, &wa) == 0, "and so is a call with the watched call's argument");
    TAP_CHECK(tgW_memo_skips(m, 2, 1, &w) == 0, "an op not dropped: none passes");
    tgW_memo_clear(m);
}

/* ---- deep chains held --------------------------------------------------- */

/* The nested call (head i) of a chain, as the machine makes it: its
 * arguments at value stack place `at` (higher: made inside the call
 * below).  Its normal form, NULL when it is now open; *skipped when not
 * remembered. */
static tg_term *enter_at(uint32_t op, tg_term *head, long i, size_t at, int *skipped)
{
    tg_term *arg = tg_int(ctx, i), *nf = NULL;
    size_t slot = tgW_memo_enter(m, ctx, op, head, 0, 1, &arg, at, rewrites, &nf);
    if (skipped)
        *skipped = slot == TGW_MEMO_SKIP;
    return nf;
}

/* A chain of len nested calls (head first) .. (head first+len-1) made
 * by constructor levels, as the machine makes it with memo on: each
 * call is announced as a level first (tgW_memo_level, which may hold
 * the op), and the fast path asked whether it passes (tgW_memo_skips),
 * and made as a level when it passes, else looked up (and opened, one
 * place higher on the stack); then the calls closed one by one from the
 * innermost, each with a normal form of its own, `cost` rewrites each.
 * Returns the calls that passed as levels. */
static long nested(uint32_t op, tg_term *head, long first, long len, unsigned long long cost)
{
    size_t base = m->nopen;
    long levels = 0;
    uint64_t left = 0;
    tg_term *w;
    for (long i = first; i < first + len; i++) {
        if (i > first)
            tgW_memo_level(m, op);
        if (i > first && (left || (left = tgW_memo_skips(m, op, 1, &w)) > 0)) {
            left--;
            tgW_memo_skipped(m, 1);     /* a level: counted as passed */
            levels++;
            continue;
        }
        int skipped;
        tg_term *nf = enter_at(op, head, i, (size_t)(i - first) * 4, &skipped);
        if (nf)
            break;  /* found: the chain ends here */
        if (skipped)
            levels++;
    }
    while (m->nopen > base) {
        rewrites += cost;
        size_t k = m->nopen - 1;
        tgW_memo_close(m, k, tg_int(ctx, -1000000 - (long)k), rewrites);
    }
    return levels;
}

/* A remembered op's chain of nested constructor levels is held past its
 * TGW_MEMO_NEST-th call (memo.h): the deeper calls pass as levels, the
 * first ones stay remembered and found again, the op is remembered again
 * once the chain closes, and at its second held chain it is judged; a
 * tail chain (each call in its caller's place) and a shallow chain are
 * not held. */
static void hold_tests(void)
{
    m = GC_MALLOC(sizeof *m);
    m->eager = 1;
    tgW_memo_clear(m);
    tg_term *p = tg_symbol_cstr(ctx, "p"), *q = tg_symbol_cstr(ctx, "q"), *t = tg_symbol_cstr(ctx, "t");
    m->skipped = 100;   /* as after some calls passed: the watch points (2^k-th) farther apart */
    tg_term *w;

    /* depth counted by place: nested calls of one op, a tail call, another op */
    size_t at0 = m->nopen;
    for (long i = 0; i < 5; i++)
        enter_at(0, p, i, (size_t)i * 4, NULL);
    int depth_ok = m->open[m->nopen - 1].nest == 5;
    enter_at(0, p, 5, 16, NULL);    /* in the place of the one below: a tail call */
    depth_ok &= m->open[m->nopen - 1].nest == 1;
    enter_at(1, q, 6, 40, NULL);    /* another op */
    depth_ok &= m->open[m->nopen - 1].nest == 1;
    TAP_CHECK(depth_ok, "a call's depth: nested calls of its op counted, a tail call or another op's not");
    tgW_memo_close(m, at0, tg_int(ctx, 0), ++rewrites);

    /* a shallow chain is not held: every call remembered */
    TAP_CHECK(nested(0, p, 100, TGW_MEMO_NEST, 1) == 0, "a chain of %d nested calls: all remembered",
              TGW_MEMO_NEST);
    TAP_CHECK(m->stat[0].dropped == 0 && m->nheld == 0, "and the op not held");

    /* a deep one: held at its TGW_MEMO_NEST-th call */
    size_t open0 = m->nopen;
    for (long i = 0; i < TGW_MEMO_NEST; i++)
        enter_at(0, p, 1000 + i, (size_t)i * 4, NULL);
    tgW_memo_level(m, 0);
    TAP_CHECK(m->stat[0].dropped == TGW_MEMO_HELD && m->nheld == 1, "the %d-th nested call: the op held",
              TGW_MEMO_NEST);
    /* its calls now pass as a dropped op's: all but the watch points */
    int passed = 0;
    for (long i = 0; i < 100; i++) {
        tg_term *a = tg_int(ctx, 1000 + TGW_MEMO_NEST + i);
        if (tgW_memo_skip(m, 0, p, 1, &a))
            passed++;
        else
            enter_at(0, p, 1000 + TGW_MEMO_NEST + i, (size_t)(TGW_MEMO_NEST + i) * 4, NULL);
    }
    TAP_CHECK(passed >= 90, "the deeper calls pass (%d of 100)", passed);
    /* the chain closes, innermost first: the op is remembered again
     * once the call it was held on closes */
    tgW_memo_close(m, open0 + TGW_MEMO_NEST, tg_int(ctx, -2), ++rewrites);
    TAP_CHECK(m->stat[0].dropped == TGW_MEMO_HELD, "held while the calls above the %d-th close",
              TGW_MEMO_NEST);
    tgW_memo_close(m, open0 + TGW_MEMO_NEST - 1, tg_int(ctx, -1), ++rewrites);
    TAP_CHECK(m->stat[0].dropped == 0 && m->nheld == 0, "remembered again once the %d-th call closed",
              TGW_MEMO_NEST);
    while (m->nopen > open0)
        tgW_memo_close(m, m->nopen - 1, tg_int(ctx, -(long)m->nopen), ++rewrites);
    int top_known = 1;
    for (long i = 0; i < TGW_MEMO_NEST; i++)
        top_known &= enter_at(0, p, 1000 + i, 0, NULL) != NULL;
    TAP_CHECK(top_known, "the chain's first %d calls are known", TGW_MEMO_NEST);
    TAP_CHECK(tgW_memo_skips(m, 0, 1, &w) == 0, "and the next call is looked up again");

    /* an op whose deep chains are never found again: held at its first,
     * dropped when judged at its second */
    tg_term *r = tg_symbol_cstr(ctx, "r");
    long lv = nested(4, r, 0, 100, 1);
    TAP_CHECK(m->stat[4].holds == 1 && m->stat[4].dropped == 0 && lv >= 100 - TGW_MEMO_NEST - 10,
              "a first deep chain: held (%ld calls as levels), then remembered again", lv);
    nested(4, r, 1000, 100, 1);
    TAP_CHECK(m->stat[4].dropped == TGW_MEMO_DROPPED && m->stat[4].holds == 2,
              "its second, with no hit: dropped (%llu lookups)", (unsigned long long)m->stat[4].lookups);

    /* an op whose hits pay is judged and kept, and its chain held */
    nested(2, t, 0, 40, 1);     /* a first chain: held */
    TAP_CHECK(m->stat[2].holds == 1 && m->stat[2].dropped == 0, "another op: a chain held, then remembered");
    for (int r = 0; r < 10; r++)
        enter_at(2, t, 0, 0, NULL);     /* the chain's top found again and again */
    lv = nested(2, t, 10000, 60, 1);
    TAP_CHECK(m->stat[2].holds == 2 && m->stat[2].dropped == 0 && lv >= 60 - TGW_MEMO_NEST - 10,
              "its hits saved enough: kept at its second deep chain, which is held (%ld levels)", lv);

    /* a tail chain of many calls is not held */
    size_t from = m->nopen;
    for (long i = 0; i < 4 * TGW_MEMO_NEST; i++)
        enter_at(3, q, 20000 + i, 8, NULL);
    tgW_memo_level(m, 3);
    TAP_CHECK(tgW_memo_skips(m, 3, 1, &w) == 0 && m->stat[3].dropped == 0 && m->nheld == 0,
              "a tail chain of %d calls: not held", 4 * TGW_MEMO_NEST);
    tgW_memo_close(m, from, tg_int(ctx, 0), ++rewrites);
    tgW_memo_clear(m);
    TAP_CHECK(m->nheld == 0 && m->deep == 0, "cleared: nothing held");
}

/* ---- growing without both tables ------------------------------------------ */

/* The process's peak resident memory in KB (VmHWM), -1 when unknown. */
static long peak_kb(void)
{
    FILE *fp = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (fp && fgets(line, sizeof line, fp))
        if (sscanf(line, "VmHWM: %ld kB", &kb) == 1)
            break;
    if (fp)
        fclose(fp);
    return kb;
}

/* Grown to its bound of 2^20 slots (40 MB), the table never holds both
 * the old one and the new one whole: the peak rises by about the new
 * table (old code: one and a half times it).  Calls of two arguments
 * out of 1024 x 1024 terms made beforehand, so that the rise is the
 * table's alone; each call is open while the table grows under the
 * next ones (a chain of 64), so the open stack must follow its entries
 * through every growth; all are found again after. */
static void growth_tests(void)
{
    enum { SIDE = 1024, CHAIN = 64 };
    static tg_term *xs[SIDE];
    m = GC_MALLOC(sizeof *m);
    m->eager = 1;
    tgW_memo_clear(m);
    tg_term *f = tg_symbol_cstr(ctx, "f"), *nf0 = tg_symbol_cstr(ctx, "nf");
    for (int i = 0; i < SIDE; i++)
        xs[i] = tg_int(ctx, i);
    size_t calls = ((size_t)1 << 19) - 4 * CHAIN;  /* entries past 2^18: the table grows to 2^20 */
    long before = peak_kb();
    int lost = 0;
    for (size_t c = 0; c < calls + CHAIN; c += CHAIN) {
        size_t from = m->nopen;
        for (size_t k = c; k < c + CHAIN; k++) {
            tg_term *args[2] = {xs[k % SIDE], xs[k / SIDE % SIDE]}, *nf = NULL;
            size_t slot = tgW_memo_enter(m, ctx, 0, f, 0, 2, args, 0, rewrites, &nf);
            lost += slot == (size_t)-1 || slot == TGW_MEMO_SKIP || nf != NULL;
            rewrites += 1000;   /* each worth keeping: the op is not dropped */
        }
        for (size_t k = from; k < m->nopen; k++)
            lost += m->e[m->open[k].slot].nf != TGW_MEMO_OPEN ||
                    m->e[m->open[k].slot].a[0] != xs[(c + k - from) % SIDE];
        tgW_memo_close(m, from, nf0, rewrites);
        /* a hit now and then: the op pays */
        tg_term *args[2] = {xs[c % SIDE], xs[c / SIDE % SIDE]}, *nf = NULL;
        tgW_memo_enter(m, ctx, 0, f, 0, 2, args, 0, rewrites, &nf);
        lost += nf != nf0;
    }
    long after = peak_kb();
    TAP_EQ_INT(lost, 0, "every call opened, followed through the growths while open, then found");
    TAP_CHECK(m->cap == (size_t)1 << 20 && m->cuts == 0, "grown to 2^20 slots (%zu), not cut", m->cap);
    size_t found = 0;
    for (size_t k = 0; k < calls + CHAIN; k += 97) {
        tg_term *args[2] = {xs[k % SIDE], xs[k / SIDE % SIDE]}, *nf = NULL;
        tgW_memo_enter(m, ctx, 0, f, 0, 2, args, 0, rewrites, &nf);
        found += nf == nf0;
    }
    TAP_EQ_INT(found, (calls + CHAIN + 96) / 97, "the calls are all known after the growths");
    long table_kb = (long)(m->cap * sizeof(tgW_mentry) >> 10);
    TAP_CHECK(before > 0 && after - before < table_kb + table_kb / 5,
              "the peak rose by %ld KB for a table of %ld KB (both whole at once: %ld)", after - before,
              table_kb, table_kb + table_kb / 2);
    tgW_memo_clear(m);
}

/* ---- normalizing ----------------------------------------------------- */

static const char *rules =
    "(op s (arity 1)) (op d0 (arity 0)) (op nl (arity 0)) (op cons (arity 2))\n"
    "(op app (arity 2)) (op rev (arity 1)) (op upto (arity 1))\n"
    "(op both (arity 2)) (op tt (arity 0)) (op c (arity 1)) (op d (arity 1))\n"
    "(rule app-nl (app nl ?l) => ?l)\n"
    "(rule app-cons (app (cons ?x ?r) ?l) => (cons ?x (app ?r ?l)))\n"
    "(rule rev-nl (rev nl) => nl)\n"
    "(rule rev-cons (rev (cons ?x ?r)) => (app (rev ?r) (cons ?x nl)))\n"
    "(rule upto-0 (upto d0) => nl)\n"
    "(rule upto-s (upto (s ?n)) => (cons (s ?n) (upto ?n)))\n"
    "(rule both-tt (both tt tt) => tt)\n"
    "(rule c-0 (c d0) => tt)\n"
    "(rule c-s (c (s ?n)) => (both (c ?n) (d ?n)))\n"
    "(rule d-c (d ?n) => (c ?n))\n"
    "(op add (arity 2)) (op mul (arity 2)) (op fact (arity 1)) (op rot (arity 6))\n"
    "(rule add-0 (add d0 ?n) => ?n)\n"
    "(rule add-s (add (s ?m) ?n) => (s (add ?m ?n)))\n"
    "(rule mul-0 (mul d0 ?n) => d0)\n"
    "(rule mul-s (mul (s ?m) ?n) => (add ?n (mul ?m ?n)))\n"
    "(rule fact-0 (fact d0) => (s d0))\n"
    "(rule fact-s (fact (s ?n)) => (mul (s ?n) (fact ?n)))\n"
    "(rule rot-s (rot ?a ?b ?c ?d ?e ?f) => (s (rot ?b ?c ?d ?e ?f ?a)))\n";

/* The numeral n, written into buf (room for 4n + 3 characters). */
static char *peano(char *buf, int n)
{
    size_t k = 0;
    for (int i = 0; i < n; i++)
        memcpy(buf + k, "(s ", 3), k += 3;
    memcpy(buf + k, "d0", 2), k += 2;
    for (int i = 0; i < n; i++)
        buf[k++] = ')';
    buf[k] = 0;
    return buf;
}

/* The normal form of text, and the rewrites it took. */
static tg_term *norm(tg_rules *rs, const char *text, unsigned flags, unsigned long long *rw)
{
    tg_error err;
    unsigned long long cond;
    tg_term *t = tg_read_cstr(ctx, text, &err);
    tg_term *r = t ? tg_normalize(rs, t, flags, &err) : NULL;
    tg_rules_counts(rs, rw, &cond);
    return r;
}

/* The tables a normalization leaves for the next (memo.c, pool) change
 * nothing that normalization computes: after a normalization stopped
 * by the step limit with a grown table, after a cycle found in one,
 * after more rules are loaded, the same query has the same normal form
 * and rewrites, memo on and off; what is kept stays bounded. */
static void kept_tests(tg_rules *rs)
{
    tg_error err;
    char q[8192], big[8192], n1[2048], n2[2048];
    unsigned long long rw0, rw, plain0, plain;
    /* a call tree with hits beside a reversal memo drops: a table of
     * thousands of entries */
    snprintf(q, sizeof q, "(cons (c %s) (rev (upto %s)))", peano(n1, 16), peano(n2, 120));
    tg_term *nf0 = norm(rs, q, TG_NF_MEMO, &rw0), *p0 = norm(rs, q, 0, &plain0);
    TAP_CHECK(nf0 && nf0 == p0 && rw0 < plain0, "a run that grows the table (%llu rewrites, plain %llu)", rw0,
              plain0);

    /* stopped by the step limit (polled every 2^16 rewrites) */
    snprintf(big, sizeof big, "(rev (upto %s))", peano(n1, 500));
    tg_rules_set_limits(rs, 1000, 0, &err);
    tg_term *stop = norm(rs, big, TG_NF_MEMO, &rw);
    tg_rules_set_limits(rs, 0, 0, &err);
    tg_term *nf = norm(rs, q, TG_NF_MEMO, &rw), *pl = norm(rs, q, 0, &plain);
    TAP_CHECK(!stop && nf == nf0 && rw == rw0 && pl == nf0 && plain == plain0,
              "after a run stopped by the step limit: the same normal form and rewrites (%llu, %llu)", rw, plain);

    /* a cycle met after the table grew (the arguments first: the tree) */
    const char *cyc = "(op ping (arity 1)) (op pong (arity 1))\n"
                      "(rule ping-pong (ping ?x) => (pong ?x))\n"
                      "(rule pong-ping (pong ?x) => (ping ?x))\n";
    TAP_EQ_INT(tg_rules_load_string(rs, cyc, strlen(cyc), "memo-cycle", &err), 0, "more rules load");
    snprintf(big, sizeof big, "(ping (c %s))", peano(n1, 16));
    tg_term *t = tg_read_cstr(ctx, big, &err);
    tg_term *cy = t ? tg_normalize(rs, t, TG_NF_MEMO, &err) : NULL;
    TAP_CHECK(t && !cy && strstr(err.message, "cycles"), "a cycle after the table grew (%s)", err.message);
    nf = norm(rs, q, TG_NF_MEMO, &rw), pl = norm(rs, q, 0, &plain);
    TAP_CHECK(nf == nf0 && rw == rw0 && pl == nf0 && plain == plain0,
              "after it, with more rules: the same normal form and rewrites (%llu, %llu)", rw, plain);
    TAP_CHECK(tgW_memo_pool_bytes() <= ((size_t)1 << 18) * sizeof(tgW_mentry),
              "the tables kept between normalizations: %zu bytes, within 2^18 slots'", tgW_memo_pool_bytes());
}

static void normalize_tests(void)
{
    tg_error err;
    tg_rules *rs = tg_rules_new(ctx, &err);
    TAP_EQ_INT(tg_rules_load_string(rs, rules, strlen(rules), "memo-rules", &err), 0, "the rules load");
    char q[8192], n1[2048], n2[2048];
    unsigned long long rw_plain, rw_memo;

    /* a list reversal of 400: concatenation chains of 200 calls on
     * average, dropped on its calls (80 thousand in all); the reversal
     * itself at its 256th reduction */
    /* Deep chains of nested calls never found again (memo.h,
     * TGW_MEMO_NEST): the factorial of 7 over numerals, whose additions
     * are chains of up to 720 constructor levels.  Memo holds add below
     * 16 calls of each chain and drops it at its second: the machine's
     * own table of 256 slots is enough (a larger one would be kept for
     * the next normalization, and the tests before left none kept). */
    size_t pool0 = tgW_memo_pool_bytes();
    tg_term *a = norm(rs, "(fact (s (s (s (s (s (s (s d0))))))))", TG_NF_MEMO, &rw_memo);
    size_t pool1 = tgW_memo_pool_bytes();
    tg_term *b = norm(rs, "(fact (s (s (s (s (s (s (s d0))))))))", 0, &rw_plain);
    TAP_CHECK(a && a == b && rw_memo == rw_plain && tg_length(a) > 0,
              "the factorial of 7: memo gives plain's normal form and rewrites (%llu)", rw_memo);
    TAP_CHECK(pool0 == 0 && pool1 == 0, "in the machine's first table: none grown (kept: %zu bytes)", pool1);

    /* a cycle in such a chain: its calls take their arguments from the
     * call's own, so it comes back within a few calls (6 here), while
     * the chain's first 16 calls are still remembered: reported as ever */
    tg_rules_set_limits(rs, 1000000, 0, &err);
    tg_term *t = tg_read_cstr(ctx, "(rot a b c d e f)", &err);
    tg_term *cy = t ? tg_normalize(rs, t, TG_NF_MEMO, &err) : NULL;
    TAP_CHECK(t && !cy && strstr(err.message, "cycles"), "a cycle in a chain of levels: %s", err.message);
    tg_rules_set_limits(rs, 0, 0, &err);

    snprintf(q, sizeof q, "(rev (upto %s))", peano(n1, 400));
    a = norm(rs, q, 0, &rw_plain), b = norm(rs, q, TG_NF_MEMO, &rw_memo);
    TAP_CHECK(a && a == b, "reversing 400 numerals: memo gives plain's normal form");
    TAP_CHECK(rw_memo <= rw_plain, "with no more rewrites (%llu, plain %llu)", rw_memo, rw_plain);

    /* 2^18 calls of c plain (d calls c again: a right side's equal
     * calls are made once, so not (both (c ?n) (c ?n))), 19 with memo,
     * beside the reversal, whose ops memo drops in the same
     * normalization */
    snprintf(q, sizeof q, "(cons (c %s) (rev (upto %s)))", peano(n1, 18), peano(n2, 300));
    a = norm(rs, q, 0, &rw_plain);
    b = norm(rs, q, TG_NF_MEMO, &rw_memo);
    TAP_CHECK(a && a == b, "a call tree of 2^18 beside a reversal: the same normal form");
    /* the reversal's own rewrites apart, each way */
    unsigned long long rev_plain, rev_memo;
    snprintf(q, sizeof q, "(rev (upto %s))", peano(n2, 300));
    norm(rs, q, 0, &rev_plain);
    norm(rs, q, TG_NF_MEMO, &rev_memo);
    unsigned long long tree_plain = rw_plain - rev_plain;
    unsigned long long tree_memo = rw_memo > rev_memo ? rw_memo - rev_memo : 1;
    /* the lazy start (memo.h) computes some 2000 calls as plain does,
     * then memo's win holds: a few rewrites per level after it */
    TAP_CHECK(tree_memo <= 2 * (TGW_MEMO_PREFIX + TGW_MEMO_LAZY) && tree_plain >= 250 * tree_memo,
              "memo's win on the tree stays: %llu rewrites plain, %llu with memo", tree_plain, tree_memo);

    /* A normalization shorter than the lazy start does what plain does,
     * though its calls repeat (each (d n) calls (c n) again): the same
     * rewrites; a longer one of the same kind is memo's again. */
    snprintf(q, sizeof q, "(c %s)", peano(n1, 8));
    a = norm(rs, q, 0, &rw_plain);
    b = norm(rs, q, TG_NF_MEMO, &rw_memo);
    TAP_CHECK(a && a == b && rw_memo == rw_plain && rw_plain > TGW_MEMO_PREFIX,
              "a short run with memo: plain's normal form and rewrites (%llu, plain %llu)", rw_memo, rw_plain);
    snprintf(q, sizeof q, "(c %s)", peano(n1, 14));
    a = norm(rs, q, 0, &rw_plain);
    b = norm(rs, q, TG_NF_MEMO, &rw_memo);
    TAP_CHECK(a && a == b && 4 * rw_memo < rw_plain,
              "a longer one: memo's hits after the lazy start (%llu rewrites, plain %llu)", rw_memo, rw_plain);
    kept_tests(rs);
    tg_rules_free(rs);
}

int main(void)
{
    tg_error err;
    ctx = tg_ctx_new(&err);
    TAP_CHECK(ctx != NULL, "a context");
    growth_tests();     /* first: the peak memory still low */
    lazy_tests();
    skips_tests();
    hold_tests();
    table_tests();
    normalize_tests();
    tg_ctx_free(ctx);
    return TAP_DONE();
}
