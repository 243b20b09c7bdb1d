/* test_heap_back.c - the heap comes back after running out of memory
 * under a heap limit: no term sits at the start of a heap block, so a
 * stray word that points at a page boundary keeps nothing alive; after
 * an allocation failed, the next allocation that finds the heap full
 * collects before it gives up, so the calls that follow a runaway (or a
 * chain an embedder built until tg_app failed, then dropped) find the
 * runaway's memory free; the rewriting machine's frame stack, kept out
 * of the heap, needs no room in one piece there; and with the heap left
 * at the limit's size, long computations do not collect at every poll.  One limit for the
 * whole process, as tg_set_max_heap is process-wide (test_oom in
 * tests/patterns has the runaways themselves). */
#define GC_THREADS 1
#include <gc/gc.h>

#include "harness.h"
#include "tgrel.h"

#include <pthread.h>
#include <stdint.h>

#define LIMIT ((size_t)12 << 20)
#define BLOCK 4096      /* the collector's heap block */

static const char rules[] =
    "(op grow (arity 1)) (op s (arity 1))\n"
    "(rule g (grow ?x) => (grow (s ?x)))\n"
    "(op build (arity 1)) (op cell (arity 2)) (op len (arity 1))\n"
    "(rule b (build ?n) => (cell ?n (build (num:- ?n 1))) (when (num:> ?n 0)))\n"
    "(rule b0 (build 0) => end)\n"
    "(rule l (len (cell ?a ?r)) => (num:+ 1 (len ?r)))\n"
    "(rule l0 (len end) => 0)\n"
    "(op cnt (arity 1))\n"
    "(rule c (cnt ?n) => (cnt (num:- ?n 1)) (when (num:> ?n 0)))\n"
    "(rule c0 (cnt 0) => done)\n";

/* A word the collector scans as a root, as the collector's own static
 * that holds the end of its newest heap section is one. */
static volatile uintptr_t stray;

/* Clear the stack below the caller, where dead frames may still hold
 * pointers into the structures just dropped. */
static __attribute__((noinline)) void clear_stack(void)
{
    volatile char b[1 << 18];
    for (size_t i = 0; i < sizeof b; i++)
        b[i] = 0;
}

/* Nodes of 2 to 6 granules (1 to 10 arguments) and list chunks. */
static void test_block_starts(tg_ctx *c)
{
    tg_term *f = tg_symbol_cstr(c, "f");
    long made = 0, at_start = 0;
    for (unsigned n = 1; n <= 10; n++)
        for (long i = 0; i < 20000; i++) {
            tg_term *a[10];
            for (unsigned k = 0; k < n; k++)
                a[k] = tg_int(c, i * 16 + k);
            tg_term *t = tg_app(c, f, n, a);
            tg_term *l = tg_list(c, n, a, tg_nil());
            if (!t || !l)
                break;
            made += 2;
            at_start += ((uintptr_t)t % BLOCK == 0) + ((uintptr_t)l % BLOCK == 0);
        }
    TAP_CHECK(made == 10 * 20000 * 2, "%ld nodes made", made);
    TAP_EQ_INT(at_start, 0, "none of them at the start of a heap block");
}

/* A chain (s (s ... b)) of n nodes, or until tg_app fails (n = 0); the
 * number made.  The word at the start of the block of the node `mark`
 * below the top goes into `stray` (mark >= 0). */
static __attribute__((noinline)) long chain(tg_ctx *c, long n, long mark)
{
    tg_term *s = tg_symbol_cstr(c, "s"), *t = tg_symbol_cstr(c, "b");
    uintptr_t *near = mark >= 0 ? malloc(sizeof *near * (mark + 1)) : NULL;   /* not scanned */
    long made = 0;
    while (!n || made < n) {
        tg_term *u = tg_app(c, s, 1, &t);
        if (!u)
            break;
        t = u;
        if (near)
            near[made % (mark + 1)] = (uintptr_t)u;
        made++;
    }
    if (mark >= 0 && near && made > mark)
        stray = near[(made - 1 - mark) % (mark + 1)] & ~(uintptr_t)(BLOCK - 1);
    free(near);
    return made;
}

struct chain_arg {
    tg_ctx *c;
    long made;
};

static void *chain_thread(void *p)
{
    struct chain_arg *a = p;
    a->made = chain(a->c, 0, -1);
    return NULL;
}

static size_t live(tg_ctx *c)
{
    tg_stats st;
    tg_ctx_stats(c, &st);
    return st.live;
}

static void test_stray_word(tg_ctx *c)
{
    GC_gcollect();
    size_t before = live(c);
    long n = chain(c, 100000, 1000);
    clear_stack();
    GC_gcollect();
    size_t after = live(c);
    TAP_CHECK(n == 100000 && stray != 0, "a chain of %ld nodes, a root word at a block start in it", n);
    TAP_CHECK(after < before + 1000,
              "the dropped chain is collected although the word points into it (%zu entries, %zu before)",
              after, before);
    stray = 0;
}

/* (len (build 20000)) from its text: 1 if it normalizes to 20000. */
static int fits(tg_rules *rs, tg_ctx *c, tg_error *err)
{
    tg_error_clear(err);
    tg_term *t = tg_read_cstr(c, "(len (build 20000))", err);
    tg_term *r = t ? tg_normalize(rs, t, 0, err) : NULL;
    int64_t v = 0;
    return r && tg_int_get(r, &v) == 0 && v == 20000;
}

static void test_after_failure(tg_ctx *c, tg_rules *rs)
{
    tg_error err;
    TAP_CHECK(fits(rs, c, &err), "a list of 20000 cells fits in the limit (%s)", err.message);
    /* In a thread of its own, so that no register or stack word of the
     * caller's is left pointing into the chain (a conservative collector
     * would keep it alive from there, and what is tested is whether the
     * next call collects it at all). */
    struct chain_arg a = {c, 0};
    pthread_t th;
    int ok = GC_pthread_create(&th, NULL, chain_thread, &a) == 0 && GC_pthread_join(th, NULL) == 0;
    TAP_CHECK(ok && a.made > 100000, "a chain built until tg_app fails: %ld nodes", a.made);
    TAP_CHECK(fits(rs, c, &err), "then dropped: the next call has the heap back (%s)", err.message);
    for (int i = 1; i <= 2; i++) {
        tg_term *t = tg_read_cstr(c, "(grow b)", &err);
        tg_term *r = t ? tg_normalize(rs, t, 0, &err) : NULL;
        TAP_CHECK(!r && err.code == TG_ERR_NOMEM, "runaway %d: out of memory (%s)", i, err.message);
        clear_stack();
        TAP_CHECK(fits(rs, c, &err), "the call after runaway %d has the heap back (%s)", i,
                  err.message);
    }
}

/* A long computation that allocates next to nothing, after the runaways
 * left the heap at the limit's size: the poll that stops a runaway near
 * the limit (every 2^16 rewrites) must not collect each time, as a full
 * collection of a large heap costs more than the rewrites between. */
static void test_polls(tg_ctx *c, tg_rules *rs)
{
    tg_error err;
    GC_gcollect();
    tg_term *t = tg_read_cstr(c, "(cnt 3000000)", &err);
    GC_word before = GC_get_gc_no();
    tg_term *r = t ? tg_normalize(rs, t, 0, &err) : NULL;
    GC_word n = GC_get_gc_no() - before;
    TAP_CHECK(r && r == tg_symbol_cstr(c, "done"), "3000000 rewrites with the heap at the limit (%s)",
              r ? "done" : err.message);
    TAP_CHECK(n <= 2, "%lu collections during them (about 45 polls)", (unsigned long)n);
}

int main(void)
{
    tg_error err;
    TAP_CHECK(tg_set_max_heap(LIMIT, &err) == 0, "a 12 MiB heap limit");
    tg_ctx *c = tg_ctx_new(&err);
    tg_rules *rs = c ? tg_rules_new(c, &err) : NULL;
    if (!rs || tg_rules_load_string(rs, rules, sizeof rules - 1, "oom.rules", &err)) {
        TAP_CHECK(0, "rules loaded (%s)", err.message);
        return TAP_DONE();
    }
    test_block_starts(c);
    test_stray_word(c);
    test_after_failure(c, rs);
    test_polls(c, rs);
    tg_rules_free(rs);
    tg_ctx_free(c);
    return TAP_DONE();
}
