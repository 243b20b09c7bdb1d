/* term_table.c - the weak hash-cons table: its bucket arrays, the
 * collector hooks that prune it after each mark phase (and push a busy
 * table as a root instead), growth, narrowing of the pointer tags, the
 * invariant check for the tests, and contexts.  Interning (term.c) probes
 * and fills it through term_table.h.
 *
 * The table is an array of buckets of node pointers in malloc'd or
 * mapped memory, which the collector does not scan: the table alone keeps
 * no term alive.  After each collection's mark phase (world still stopped) the
 * entries whose node went unmarked are removed, which makes the table weak
 * at no per-node cost.  A context whose owning thread was stopped in the
 * middle of a table operation ("busy") cannot be pruned safely, so its
 * table is pushed as a root for that one collection instead.
 *
 * Each bucket has a control word of hash bytes, matched a whole bucket at
 * a time, and slots that hold the node pointer with more hash bits and a
 * displacement in its unused low and high bits, which spares nearly every
 * dereference of a non-matching node and lets a rebuild find hashes
 * without reading nodes; a busy table pushed as a root is untagged for
 * the mark phase and retagged before the world restarts.
 */
#include "term_table.h"
#include "error.h"

#define GC_THREADS 1   /* thread registration API; no pthread redirects needed here */
#include <gc/gc.h>
#include <gc/gc_mark.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#ifdef __linux__
#include <sys/mman.h>
#endif

/* ---- bucket arrays ------------------------------------------------ */

/* See term_table.h for the header of each array.  A large
 * array is mapped directly, starting on a 2 MiB boundary, and asks for
 * transparent huge pages: a random probe into a table of many megabytes
 * then costs no TLB miss, and growing it takes a few page faults instead
 * of one per 4 KiB (zeroing is the kernel's). */
#define HUGE_BYTES ((size_t)2 << 20)
static size_t table_bytes(size_t nb)
{
    return ((nb + 1) * sizeof(bucket) + 4095) & ~(size_t)4095;
}
/* Each page of a new mapping made present and writable now: a rebuild
 * reads a bucket before it writes it, and the first read of a page maps
 * the shared zero page, which the write then has to replace (two
 * faults).  One madvise call does it where the kernel knows
 * MADV_POPULATE_WRITE (Linux 5.14): the arrays of a context growing to
 * 10^6 nodes took 5.3 ms instead of 6.0 to make (medians of 5 runs of 7),
 * a write to each 4 KiB otherwise. */
#if defined(__linux__) && defined(MADV_HUGEPAGE)
static void populate(char *p, size_t n)
{
#ifdef MADV_POPULATE_WRITE
    if (madvise(p, n, MADV_POPULATE_WRITE) == 0)
        return;
#endif
    for (size_t k = 0; k < n; k += 4096)
        ((volatile char *)p)[k] = 0;
}
#endif
static bucket *table_alloc(size_t nb, int wide)
{
    char *p = NULL;
    size_t n = table_bytes(nb);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (n >= HUGE_BYTES) {
        char *m = mmap(NULL, n + HUGE_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                       -1, 0);
        if (m == MAP_FAILED)
            return NULL;
        size_t lead = (HUGE_BYTES - ((uintptr_t)m & (HUGE_BYTES - 1))) & (HUGE_BYTES - 1);
        if (lead)
            munmap(m, lead);
        munmap(m + lead + n, HUGE_BYTES - lead);
        madvise(m + lead, n, MADV_HUGEPAGE);
        p = m + lead;
        populate(p, n);
    }
#endif
    if (!p) {   /* small, or not Linux (table_free tells them apart the same way) */
        if (posix_memalign((void **)&p, 64, n))
            return NULL;
        memset(p, 0, n);
    }
    bucket *a = (bucket *)p + 1;
    a[-1].s[0] = wide ? TAG_LO | TAG_HI : TAG_LO;
    a[-1].s[1] = nb;
    return a;
}
static void table_free(bucket *a)
{
    if (!a)
        return;
    size_t n = table_bytes(tbl_nb(a));
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (n >= HUGE_BYTES) {
        munmap(a - 1, n);
        return;
    }
#endif
    free(a - 1);
}

/* ---- the collector hooks (process-wide, as the collector is) ------- */

const struct tgT_vacant tgT_vacant __attribute__((aligned(16))) = {{TG_NIL, 0, 0, 0, 0}, {0}};

static tg_ctx *registry;
int tgT_term_kind;           /* objects scanned whole, last word included */
static GC_on_collection_event_proc prev_event;
static GC_push_other_roots_proc prev_push;
static pthread_once_t gc_once = PTHREAD_ONCE_INIT;
/* A heap block the library holds for tgT_alloc_failed. */
#define RESERVE_BYTES 3072      /* above the collector's small sizes: one block */
static _Atomic(void *) reserve;

static void prune(tg_ctx *ctx);

/* A busy table is pushed as a root; its tags would hide the pointers
 * from the collector, so they are stripped for the mark phase and put
 * back (from the nodes' hashes: every entry was marked) before the world
 * restarts.  The owning thread is stopped meanwhile and finds its table
 * as it left it.  The control words are pushed too; they seldom look
 * like addresses of the heap, and one that did would only keep a node
 * alive through that collection. */
static void untag(bucket *a)
{
    uintptr_t m = tbl_tagmask(a);
    size_t nb = tbl_nb(a);
    for (size_t i = 0; i < nb; i++)
        for (int j = 0; j < BSLOTS; j++)
            a[i].s[j] &= ~m;
    GC_push_all(a, a + nb);
}
/* Every non-empty slot, whatever its control byte says: place() stores
 * the slot before its byte, and a thread stopped in between must find
 * its entry tagged. */
static void retag(bucket *a)
{
    uintptr_t m = tbl_tagmask(a);
    size_t nb = tbl_nb(a);
    for (size_t i = 0; i < nb; i++)
        for (int j = 0; j < BSLOTS; j++)
            if (a[i].s[j] && a[i].s[j] != VACANT) {     /* during a rebuild's start, tab and old_tab are one array */
                tg_term *t = (tg_term *)(a[i].s[j] & ~m);
                uint32_t h = t->h.hash;
                size_t d = (i + nb - home_in(h, nb)) % nb;
                a[i].s[j] = (uintptr_t)t | (ptag(h) & m) | (d < DISP ? d : DISP);
            }
}
static void retag_all(void)
{
    for (tg_ctx *c = registry; c; c = c->next)
        if (c->untagged) {
            retag(c->tab);
            if (c->old_tab)
                retag(c->old_tab);
            c->untagged = 0;
        }
}

/* Collection pacing for a heap that grows with live terms.  Each
 * collection marks all live data and prunes every table, so a program
 * that builds a large set of terms it keeps pays for marking them again
 * at each of the collections its growth sets off: with the collector's
 * usual free-space divisor of 3 a collection comes after about 2/3 of
 * the live data's size has been allocated, the heap grows by 1.67x
 * between collections, and the marking of all of them adds up to about
 * 2.5 times the live data at the last one.  While the prunes find nearly
 * every entry alive (fewer than one in PACE_DEAD_DEN dead, over at least
 * PACE_MIN entries), the divisor is PACE_GROWING (1) instead: a
 * collection after about twice the live data's size (measured from 10^6
 * to 4*10^6 kept nodes: 2 collections instead of 3, marking 27 to 85 MB
 * instead of 60 to 180 MB, the same final heap; doc/internals.md).  As
 * soon as a prune finds more garbage, the collector's usual pacing comes
 * back (a phase that built 10^6 or 3*10^6 kept nodes and then dropped
 * them for a churn of 10^7 peaked at the same RSS either way).  Off when the embedder or TGREL_GC_FLOOR chose a divisor,
 * or a heap limit is set (tg_set_max_heap).  The constants are in
 * term_table.h. */
static GC_word pace_base;           /* the divisor to come back to; 0: pacing off */
static GC_word pace_set;            /* the divisor pacing set last */
static size_t max_heap;             /* the heap limit of tg_set_max_heap (0: none) */

/* The divisor is the process's, not a context's: the decision counts the
 * entries of every context the collection pruned (on_event), so that a
 * context that builds kept terms does not space out the collections of
 * another that makes garbage.  An embedder who sets a divisor of its own
 * after the library started keeps it: pacing sees that the divisor is no
 * longer the one it set and stops for good.  Called with the allocation
 * lock held. */
static void pace_to(GC_word d)
{
    if (!pace_base)
        return;
    if (GC_get_free_space_divisor() != pace_set) {
        pace_base = 0;
        return;
    }
    pace_set = d;
    GC_set_free_space_divisor(d);
}

static void pace(size_t seen, size_t dead)
{
    int growing = !max_heap && seen >= PACE_MIN && dead * PACE_DEAD_DEN < seen;
    pace_to(growing ? PACE_GROWING : pace_base);
}

/* Retagging at the end of marking, or before the world restarts if the
 * collector abandoned the mark phase. */
static void GC_CALLBACK on_event(GC_EventType ev)
{
    if (ev == GC_EVENT_MARK_END) {
        retag_all();
        size_t seen = 0, dead = 0;
        for (tg_ctx *c = registry; c; c = c->next)
            if (!atomic_load_explicit(&c->busy, memory_order_relaxed)) {
                size_t before = c->count;
                prune(c);
                seen += before;
                dead += before - c->count;
            }
        pace(seen, dead);
    } else if (ev == GC_EVENT_PRE_START_WORLD)
        retag_all();
    if (prev_event)
        prev_event(ev);
}

static void GC_CALLBACK push_roots(void)
{
    for (tg_ctx *c = registry; c; c = c->next)
        if (atomic_load_explicit(&c->busy, memory_order_relaxed)) {
            c->untagged = 1;
            untag(c->tab);
            if (c->old_tab)
                untag(c->old_tab);
        }
    if (prev_push)
        prev_push();
}

/* The value of TGREL_GC_FLOOR: a whole number of bytes from 4096 on,
 * else 0 (unset, empty, malformed or too small: ignored).  A test knob:
 * collections every few kilobytes reclaim within moments a term that
 * some code holds only where the collector does not look (malloc'd
 * memory, say), which the usual 8 MiB floor can hide for a long time. */
size_t tgT_gc_floor(const char *s)
{
    if (!s || *s < '0' || *s > '9')
        return 0;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v < 4096 || v > SIZE_MAX)
        return 0;
    return (size_t)v;
}

/* The collector's warnings when it cannot grow the heap: the allocation
 * that failed returns NULL and becomes an "out of memory" error of the
 * call that made it, so a line per failed attempt (dozens of them while a
 * runaway rewrite fills the heap) would only bury that one message.
 * Other warnings go to the previous handler. */
static GC_warn_proc prev_warn;
static void GC_CALLBACK filter_warn(char *msg, GC_word arg)
{
    if (strstr(msg, "Failed to expand heap") || strstr(msg, "Out of Memory"))
        return;
    prev_warn(msg, arg);
}

static void gc_setup(void)
{
    GC_init();
    prev_warn = GC_get_warn_proc();
    GC_set_warn_proc(filter_warn);
    GC_allow_register_threads();
    /* With interior pointers on, NORMAL objects get one extra byte and
     * their last word is not scanned; our own kind scans the whole
     * object, so a node can use every byte of its granules.  Objects are
     * cleared by the collector when it sweeps them: a batch waiting on a
     * context's free list is reachable from the context and scanned, and
     * the stale words of dead objects in it would otherwise keep whole
     * chains of garbage alive (the logic core's streams and states). */
    tgT_term_kind = (int)GC_new_kind(GC_new_free_list(), 0 | GC_DS_LENGTH, 1, 1);
    /* Each collection costs a sweep of every table and a mark of all live
     * data; with a small heap the collector would run every hundred
     * kilobytes or so.  A logic search allocates short-lived states fast
     * while its pending branches stay live, and collecting every MiB
     * marked them over and over (a third of the time of some searches).
     * Allow at least 8 MiB between collections, unless the embedder
     * chose a floor, or TGREL_GC_FLOOR asks for frequent collections. */
    size_t test_floor = tgT_gc_floor(getenv("TGREL_GC_FLOOR"));
    if (test_floor) {
        GC_set_min_bytes_allocd(test_floor);
        GC_set_free_space_divisor(1000);    /* large heaps collect often too */
    } else if (GC_get_min_bytes_allocd() <= 1)
        GC_set_min_bytes_allocd((size_t)8 << 20);
    if (!test_floor && GC_get_free_space_divisor() == PACE_USUAL)   /* the collector's default */
        pace_base = pace_set = PACE_USUAL;
    /* When the heap cannot grow (tg_set_max_heap), collect before an
     * allocation fails.  The collector's default gives up at once when
     * fewer bytes than the floor above were allocated since the last
     * collection: after a runaway rewrite or search ran the heap out, that
     * last collection ran while the runaway's terms were live, so the
     * heap stayed full of them, every allocation of the next entry failed
     * without a collection (measured: 33 thousand pairs fitted in a 24 MiB
     * heap where 1.6 million fit before), and only a collection that some
     * other cause set off freed them. */
    if (GC_get_max_retries() < 2)
        GC_set_max_retries(2);
    prev_event = GC_get_on_collection_event();
    GC_set_on_collection_event(on_event);
    prev_push = GC_get_push_other_roots();
    GC_set_push_other_roots(push_roots);
    atomic_store(&reserve, GC_MALLOC_ATOMIC(RESERVE_BYTES));
}

static void *GC_CALLBACK link_ctx(void *p)
{
    tg_ctx *ctx = p;
    ctx->next = registry;
    registry = ctx;
    return NULL;
}

static void *GC_CALLBACK unlink_ctx(void *p)
{
    for (tg_ctx **pp = &registry; *pp; pp = &(*pp)->next)
        if (*pp == p) {
            *pp = ((tg_ctx *)p)->next;
            break;
        }
    return NULL;
}

/* ---- the table ---------------------------------------------------- */

/* At most 49 entries per 8 buckets (0.875 of the slots); growing by 3/2
 * leaves 0.583 of them used, so a live 2-argument node takes 32 bytes
 * and 10.4 to 15.7 bytes of table. */
#define LOAD_NUM 49         /* entries per LOAD_DEN buckets */
#define LOAD_DEN 8
#define GROW_NUM 3
#define GROW_DEN 2
#define MIN_BUCKETS 128     /* 8 KiB */

/* A table of at most SPARSE_BUCKETS buckets (256 KiB, half the L2 cache
 * of the usual cores) holds at most SPARSE_NUM entries per SPARSE_DEN
 * buckets (half of its slots) instead.  In a small table it is not the
 * cache that a lookup misses but the instructions and the mispredicted
 * branch of the entries that lie past their home bucket or behind
 * another of the same control byte: at a load of 0.75, 9.5% of the
 * lookups among 10^3 terms went on past the first candidate, at 0.5
 * 3.6%.  The cost is at most 128 KiB of table per context, and none
 * to large tables, which are where the 48 bytes a node count. */
#define SPARSE_NUM 7
#define SPARSE_DEN 2

static size_t limit_for(size_t nb)
{
    if (nb <= SPARSE_BUCKETS)
        return nb / SPARSE_DEN * SPARSE_NUM + nb % SPARSE_DEN * SPARSE_NUM / SPARSE_DEN;
    return nb / LOAD_DEN * LOAD_NUM + nb % LOAD_DEN * LOAD_NUM / LOAD_DEN;
}

/* The size after nb.  A table of fewer than SPARSE_BUCKETS buckets
 * doubles, from MIN_BUCKETS, so that it has a power of 2 of them (see
 * home_in).  A larger one takes the next size of the sequence that
 * grows by 3/2 from MIN_BUCKETS: which sizes a large table passes
 * through decides its bytes per node at each count. */
static size_t grown(size_t nb)
{
    if (nb < SPARSE_BUCKETS)
        return nb * 2;
    size_t g = MIN_BUCKETS;
    while (g <= nb)
        g = g / GROW_DEN * GROW_NUM + g % GROW_DEN * GROW_NUM / GROW_DEN;
    return g;
}

/* The context's copies of what the header of its current array ctx->tab
 * says (its size and tag mask), for the probes, and what follows from
 * them: the load limit, the masks of a slot's pointer and of the tags
 * the lean look compares, and the parameters of the homes of term.c
 * (ctx_home, and leanoff, the inline look's mask of bucket offsets, 0
 * where it does not look; see home_in). */
static void copy_header(tg_ctx *ctx)
{
    size_t nb = tbl_nb(ctx->tab);
    int small = nb <= SPARSE_BUCKETS;
    ctx->nb = nb;
    ctx->leanoff = small ? (nb - 1) * sizeof(bucket) : 0;
    ctx->hmul = small ? (uint64_t)1 << (32 - SMALL_HOME_SHIFT) : nb;
    ctx->hmask = small ? nb - 1 : SIZE_MAX;
    ctx->limit = limit_for(nb);
    ctx->tagmask = tbl_tagmask(ctx->tab);
    ctx->ptrmask = ~ctx->tagmask;
    ctx->leanmask = ctx->tagmask & TAG_HI;
}

/* Count an entry that lies in bucket `at`, away from its home `from`, in
 * the overflow records of the buckets between. */
static void count_passes(bucket *a, size_t nb, size_t from, size_t at, uint32_t h)
{
    for (size_t k = from; k != at; k = next_bucket(k, nb))
        a[k].ctrl = ct_passed(a[k].ctrl, h);
}

/* Prune: move survivor v of bucket `at` (control byte `byte`, home
 * `home`) to the first bucket from its home with a free slot, if that
 * comes before `at`, counting it in the records of the buckets it
 * passes.  Returns 1 when it moved.  The buckets from its home to `at`
 * have been pruned already, so their free slots are final. */
static int settle(bucket *a, size_t nb, size_t home, size_t at, uintptr_t v, uint64_t byte)
{
    uintptr_t base = v & ~DISP;
    uintptr_t d = 0;
    for (size_t k = home; k != at; k = next_bucket(k, nb), d += d < DISP) {
        uint64_t c = a[k].ctrl, e = ~c & CT_SLOTS;
        if (e) {
            unsigned j = ct_slot(e);
            a[k].s[j] = base | d;
            a[k].ctrl = c | byte << (8 * j);
            return 1;
        }
        a[k].ctrl = ct_passed(c, (uint32_t)byte);
    }
    return 0;
}

/* The hash of the entry in slot j of a bucket, of control word ctrl, of
 * an array of nb > SPARSE_BUCKETS buckets (homes by multiply-shift, see
 * home_in) with wide tags, without reading its node:
 * the byte and the tags give the low 26 bits, and its home bucket k says
 * the hash lies in [lo, lo + 2^32 / nb), where lo = ceil(k * 2^32 / nb):
 * a window of at most 2^26 values, which holds one with those low bits.
 * The home is known when the entry lies fewer than 3 buckets from it. */
#define RECON_BITS 26
#define RECON_MIN_BUCKETS (SPARSE_BUCKETS + 1)
_Static_assert(RECON_MIN_BUCKETS >= (size_t)1 << (32 - RECON_BITS), "windows of 2^26 hashes");
static inline uint32_t recon_hash(uint64_t ctrl, unsigned j, uintptr_t v, uint32_t lo)
{
#if TAG_WIDE
    uint32_t low = ((uint32_t)(ctrl >> (8 * j)) & 0x7F) | (uint32_t)(v & 12) << 5 |
                   (uint32_t)(v >> TAG_HI_SHIFT) << 9;
    return lo + ((low - lo) & ((1u << RECON_BITS) - 1));
#else
    (void)ctrl, (void)j, (void)v;
    return lo;      /* never called: narrow tags hold too few bits */
#endif
}
static uint32_t lo_of(size_t k, size_t nb)
{
    return (uint32_t)((((uint64_t)k << 32) + nb - 1) / nb);
}
/* The same for an entry 3 or more buckets from its home, in bucket i of
 * an array of nb buckets.  Every bucket from its home to the one before
 * i has the entry's bit in its overflow filter (the table's invariant),
 * so if the `run` buckets before i have nonzero filters and the one
 * before them a zero filter, its home is one of i - run to i - 3 (modulo
 * nb), and its hash lies in the window from lo_of(i - run) up to
 * lo_of(i - 2), modulo 2^32, less than far_span = (run - 2) * (2^32 / nb
 * + 1) + 1 wide (the two ends rounded up).  While that is at most 2^26
 * (for 10^5 buckets, runs up to 1500 buckets), the window from lo_of(i -
 * 2) - far_span on holds one value with the slot's low bits; otherwise
 * the entry's node is read for its hash (a random line in the
 * collector's heap and a TLB miss). */
static inline uint64_t far_span(uint64_t qstep, size_t run)
{
    return (uint64_t)(run - 2) * (qstep + 1) + 1;
}
/* The run of buckets with nonzero filters at the end of array a, which
 * the entries wrapped round to its first buckets passed. */
static size_t end_run(const bucket *a, size_t nb)
{
    size_t run = 0;
    while (run < nb && (a[nb - 1 - run].ctrl & CT_OVF_FILTER))
        run++;
    return run;
}

/* Place every entry of array old (tag mask omask) in the empty array na.
 * With wide tags the hash of nearly every entry follows from its slot
 * (see recon_hash), so the pass reads only the two arrays, nearly
 * sequentially (homes are monotonic in the hash).  The others, entries
 * three or more buckets from their homes (or every entry, without wide
 * tags), need their nodes read: such a node is fetched when the entry is
 * met and the entry placed DEFER such entries later, so that these
 * misses overlap the other moves (entries may be placed in any order).
 * The new array's buckets are fetched for writing some buckets ahead
 * too: a fresh array's lines are in no cache, and the hardware's
 * prefetchers did not hide their misses (8% less time per move). */
#define DEFER 8                 /* entries whose nodes are read, in flight */
#define REBUILD_AHEAD 8         /* old buckets, for the new array's lines */
static inline void place_node(bucket *na, size_t nnb, uintptr_t nmask, const tg_term *t)
{
    uint32_t h = t->h.hash;
    place_tagged(na, nnb, (uintptr_t)t | (ptag(h) & nmask), h);
}
static inline __attribute__((always_inline)) void
move_run(const bucket *old, size_t onb, uintptr_t omask, bucket *na, size_t nnb, uintptr_t nmask,
         int recon)
{
    /* lo[d] = ceil((i - d) * 2^32 / onb) for displacements d of 0 to 2,
     * lo[0] stepped as a quotient and a remainder.  Indexed by the
     * displacement, not chosen by branches on it: about one entry in ten
     * lies past its home, in no order a branch predictor can learn, and
     * the mispredictions took a tenth of the move (5.0 ns an entry with
     * the branches, 4.4 with the index; see doc/internals.md). */
    uint64_t qstep = ((uint64_t)1 << 32) / onb, rstep = ((uint64_t)1 << 32) % onb, q = 0, r = 0;
    uint32_t lo[DISP + 1] = {0, lo_of(onb - 1, onb), lo_of(onb - 2, onb), 0};
    uint64_t ratio = ((uint64_t)nnb << 16) / onb;   /* new buckets per old one, 16.16 */
    const tg_term *ring[DEFER];
    size_t deferred = 0, run = end_run(old, onb);     /* see far_span */
    for (size_t i = 0; i < onb; i++) {
        size_t t = (size_t)(((uint64_t)(i + REBUILD_AHEAD) * ratio) >> 16);
        if (t + 1 < nnb) {  /* where the entries of old bucket i + REBUILD_AHEAD go */
            __builtin_prefetch(&na[t], 1);
            __builtin_prefetch(&na[t + 1], 1);
        }
        const bucket *b = &old[i];
        uint64_t c = b->ctrl;
        for (uint64_t m = c & CT_SLOTS; m; m &= m - 1) {
            unsigned j = ct_slot(m);
            uintptr_t v = b->s[j], d = v & DISP;
            if (__builtin_expect(!recon || d == DISP, 0)) {
                uint64_t span = far_span(qstep, run);
                if (recon && run >= DISP && span <= ((uint64_t)1 << RECON_BITS)) {
                    uint32_t h = recon_hash(c, j, v, lo[2] - (uint32_t)span);
#ifdef TGT_CHECK_RECON
                    if (h != ((tg_term *)(v & ~omask))->h.hash)
                        abort();
#endif
                    place_tagged(na, nnb, v & ~DISP, h);
                    continue;
                }
                const tg_term *n = (const tg_term *)(v & ~omask);
                __builtin_prefetch(n);
                if (deferred >= DEFER)
                    place_node(na, nnb, nmask, ring[deferred % DEFER]);
                ring[deferred++ % DEFER] = n;
                continue;
            }
            uint32_t h = recon_hash(c, j, v, lo[d]);
#ifdef TGT_CHECK_RECON
            if (h != ((tg_term *)(v & ~omask))->h.hash)
                abort();
#endif
            /* the hash tags do not depend on the number of buckets, and
             * recon keeps the mask: only the displacement changes */
            place_tagged(na, nnb, v & ~DISP, h);
        }
        run = c & CT_OVF_FILTER ? run + 1 : 0;
        q += qstep;
        r += rstep;
        if (r >= onb) {
            q++;
            r -= onb;
        }
        lo[2] = lo[1];
        lo[1] = lo[0];
        lo[0] = (uint32_t)(q + (r != 0));
    }
    for (size_t k = deferred > DEFER ? deferred - DEFER : 0; k < deferred; k++)
        place_node(na, nnb, nmask, ring[k % DEFER]);
}
/* The usual growth (wide tags kept, hashes from the slots) apart, its
 * test made a constant; otherwise (narrow tags, a small table, or the
 * tags given up) every node is read. */
static void move_all(const bucket *old, size_t onb, uintptr_t omask, bucket *na, size_t nnb)
{
    uintptr_t nmask = tbl_tagmask(na);
    if (TAG_WIDE && nmask == omask && omask != TAG_LO && onb >= RECON_MIN_BUCKETS)
        move_run(old, onb, omask, na, nnb, nmask, 1);
    else
        move_run(old, onb, omask, na, nnb, nmask, 0);
}

/* Move every entry to a new array of nnb buckets (the caller is inside
 * enter/leave): to grow, or to give up wide tags.  Fails only when memory
 * is exhausted; the table then stays as it is. */
static int rebuild(tg_ctx *ctx, size_t nnb, int wide)
{
    bucket *na = table_alloc(nnb, wide);
    if (!na)
        return -1;
    bucket *old = ctx->tab;
    /* The collector may look at a busy context at any instruction: the
     * old array stays pushed until the new one is published. */
    ctx->old_tab = old;
    atomic_signal_fence(memory_order_seq_cst);
    move_all(old, ctx->nb, ctx->tagmask, na, nnb);
    ctx->tab = na;
    atomic_signal_fence(memory_order_seq_cst);
    ctx->old_tab = NULL;
    atomic_signal_fence(memory_order_seq_cst);
    copy_header(ctx);
    table_free(old);
    return 0;
}

/* Grow (inside enter/leave). */
int tgT_grow(tg_ctx *ctx)
{
    return rebuild(ctx, grown(ctx->nb), ctx->tagmask != TAG_LO);
}

/* Give up the high tag bits (inside enter/leave): a node about to be
 * stored lies above 2^47.  Returns -1 when memory is exhausted. */
int tgT_narrow_busy(tg_ctx *ctx)
{
    return rebuild(ctx, ctx->nb, 0);
}

void tgT_busy(tg_ctx *ctx, int on)
{
    if (on)
        enter(ctx);
    else
        leave(ctx);
}

void tgT_narrow(tg_ctx *ctx)
{
    enter(ctx);
    if (ctx->tagmask != TAG_LO)
        rebuild(ctx, ctx->nb, 0);
    leave(ctx);
}

const char *tgT_table_check(const tg_ctx *ctx)
{
    const bucket *a = ctx->tab;
    size_t nb = ctx->nb, n = 0;
    uintptr_t mask = ctx->tagmask;
    if (tbl_nb(a) != nb || tbl_tagmask(a) != mask)
        return "the array's header disagrees with the context";
    uint64_t *filter = calloc(nb, sizeof *filter);
    if (!filter)
        return NULL;
    const char *bad = NULL;
    for (size_t i = 0; i < nb && !bad; i++)
        for (unsigned j = 0; j < BSLOTS && !bad; j++) {
            uint64_t byte = a[i].ctrl >> (8 * j) & 0xFF;
            uintptr_t v = a[i].s[j] == VACANT ? 0 : a[i].s[j];
            if (!byte != !v) {
                bad = "a slot and its control byte disagree";
                break;
            }
            if (!v)
                continue;
            n++;
            const tg_term *t = (const tg_term *)(v & ~mask);
            uint32_t h = t->h.hash;
            size_t home = home_in(h, nb), d = (i + nb - home) % nb;
            if (byte != ct_byte(h))
                bad = "a control byte is not its node's";
            else if ((v & mask) != ((ptag(h) & mask) | (d < DISP ? d : DISP)))
                bad = "a pointer tag is not its node's";
            for (size_t k = home; k != i; k = next_bucket(k, nb))
                filter[k] |= ct_filter(h);
        }
    if (!bad && n != ctx->count)
        bad = "the entry count is wrong";
    for (size_t k = 0; k < nb && !bad; k++) {
        uint64_t f = a[k].ctrl & CT_OVF_FILTER;
        if ((f & filter[k]) != filter[k])
            bad = "an overflow filter lacks a bit";
        else if (f != filter[k])
            bad = "an overflow filter has a bit no entry set";
    }
    free(filter);
    return bad;
}

void tgT_table_disp_counts(const tg_ctx *ctx, size_t counts[4])
{
    const bucket *a = ctx->tab;
    counts[0] = counts[1] = counts[2] = counts[3] = 0;
    for (size_t i = 0; i < ctx->nb; i++)
        for (uint64_t m = a[i].ctrl & CT_SLOTS; m; m &= m - 1)
            counts[a[i].s[ct_slot(m)] & DISP]++;
}

size_t tgT_table_displacement(const tg_ctx *ctx)
{
    const bucket *a = ctx->tab;
    size_t nb = ctx->nb, sum = 0;
    for (size_t i = 0; i < nb; i++)
        for (unsigned j = 0; j < BSLOTS; j++)
            if (a[i].s[j] && a[i].s[j] != VACANT) {
                const tg_term *t = (const tg_term *)(a[i].s[j] & ~ctx->tagmask);
                sum += (i + nb - home_in(t->h.hash, nb)) % nb;
            }
    return sum;
}

/* Remove the entries of nodes the last mark phase did not reach.  Runs
 * with the world stopped and the allocation lock held: no allocation.
 * An entry is removed by clearing its slot and byte.  The overflow
 * filters are made again from the survivors (their homes from their
 * displacements, or from their nodes' hashes when that is 3 or more), so
 * that bits set by entries now dead do not send probes on.  The pass
 * starts after a bucket no entry passed, so that each survivor comes
 * after its home and the buckets it passed, which are then final: a
 * displaced survivor moves back to the first of them with a free slot
 * (settle).  Without such a bucket (every bucket passed) the filters are
 * all cleared first and no survivor moves.
 *
 * Why survivors move: entries placed late in a cycle, in a nearly full
 * table, would otherwise keep their displacement, and the filter bits
 * they set, through every later prune of a churning table. */
#define CT_OVF_BYTE CT_OVF_FILTER
static void prune(tg_ctx *ctx)
{
    bucket *a = ctx->tab;
    size_t nb = ctx->nb, dead = 0, start = 0;
    uintptr_t mask = ctx->tagmask;
    if (!a)
        return;
    while (start < nb && (a[start].ctrl & CT_OVF_FILTER))
        start++;
    uint64_t keep = ~CT_OVF_BYTE;
    int settling = 1;
    if (start == nb) {
        for (size_t i = 0; i < nb; i++)
            a[i].ctrl &= ~CT_OVF_BYTE;
        keep = ~(uint64_t)0;
        start = 0;
        settling = 0;   /* homes may lie ahead in the pass */
    } else
        start = next_bucket(start, nb);
    for (size_t n = 0, i = start; n < nb; n++, i = next_bucket(i, nb)) {
        uint64_t c = a[i].ctrl & keep;
        for (uint64_t m = c & CT_SLOTS; m; m &= m - 1) {
            unsigned j = ct_slot(m);
            uintptr_t v = a[i].s[j], d = v & DISP;
            tg_term *t = (tg_term *)(v & ~mask);
            if (GC_is_marked(t)) {
                if (!d)
                    continue;
                size_t home = d < DISP ? (i + nb - d) % nb : home_in(t->h.hash, nb);
                uint64_t byte = c >> (8 * j) & 0xFF;
                if (!settling) {
                    count_passes(a, nb, home, i, (uint32_t)byte);
                    continue;
                }
                if (!settle(a, nb, home, i, v, byte))
                    continue;
            } else
                dead++;
            a[i].s[j] = VACANT;
            c &= ~((uint64_t)0xFF << (8 * j));
        }
        a[i].ctrl = c;
    }
    ctx->retaining = dead * 2 <= ctx->count;
    ctx->count -= dead;
    ctx->survivors = ctx->count;
    if (!dead)
        return;
    ctx->reclaimed += dead;
    ctx->prunes++;
}

/* The table is at its load limit (called not busy).  Rather than grow it
 * to hold entries that are likely dead, collect first when the last
 * prune of this context (if any) found most entries dead, the entries
 * made since outnumber those it left FORCE_RATIO times, the table is
 * past a small size,
 * and the heap holds little besides what was allocated since the last
 * collection (so that the collection is cheap; otherwise the collector's
 * own pacing decides).  Without this, a context that makes short-lived
 * terms in a large, mostly free heap lets its table grow to one entry per
 * node the heap can hold, and every probe misses the cache.  Otherwise,
 * or if the collection left the table full, grow.  Returns -1 only when
 * out of memory with the table full. */
#define FORCE_MIN_BUCKETS ((size_t)1 << 13)   /* 512 KiB */
/* Each forced collection marks the live data and prunes the whole table,
 * so its cost per entry made falls as the table holds more entries per
 * survivor: with 10, at most an eleventh of the entries a prune examines
 * survive.  A larger table misses the nearer caches more often; since the
 * rewriting machine fetches the buckets of its constructor chains ahead
 * (machine.c), that costs less than the collections saved (revnat10000:
 * 5 was 1.13x faster than 3, 10 another 1.05x; 16 no faster than 10). */
#define FORCE_RATIO 10
int tgT_make_room(tg_ctx *ctx)
{
    if (!ctx->retaining && ctx->nb >= FORCE_MIN_BUCKETS && ctx->forced != ctx->prunes + 1 &&
        ctx->count - ctx->survivors > FORCE_RATIO * ctx->survivors) {
        GC_word heap, freeb, unmapped, since, total;
        GC_get_heap_usage_safe(&heap, &freeb, &unmapped, &since, &total);
        GC_word used = heap - freeb;   /* both exclude unmapped memory */
        if (used < since + 2 * since) {
            ctx->forced = ctx->prunes + 1;
            GC_gcollect();
            if (ctx->count < ctx->limit)
                return 0;
        }
    }
    int r = 0;
    enter(ctx);
    if (ctx->count >= ctx->limit && tgT_grow(ctx)) {
        if (ctx->count + 1 < ctx->nb * BSLOTS)
            ctx->limit = ctx->count + 1;    /* out of memory: fill up further */
        else
            r = -1;
    }
    leave(ctx);
    return r;
}

/* ---- contexts ----------------------------------------------------- */

/* The collector counts the allocations that failed in a row: past
 * GC_set_max_retries of them it fails the next ones at once, without a
 * collection, until an allocation takes a heap block (which resets the
 * count).  After a runaway rewrite or search ran out of memory, that
 * last collection ran while the runaway's data was live, and nothing
 * has been allocated since; so every allocation of the calls that
 * followed failed at once, and the runaway's dropped data was never
 * collected (a program that read and normalized a term after a runaway
 * got "out of memory" every time).  The library keeps one heap block of
 * its own for this: when an allocation has failed, it gives the block
 * back and takes it again, which resets the count, so the next
 * allocation that finds the heap full collects first. */
void tgT_alloc_failed(void)
{
    pthread_once(&gc_once, gc_setup);
    void *r = atomic_exchange(&reserve, NULL);
    if (r)
        GC_free(r);
    r = atomic_exchange(&reserve, GC_MALLOC_ATOMIC(RESERVE_BYTES));
    if (r)
        GC_free(r);
}

size_t tgT_max_heap(void)
{
    return max_heap;
}

int tgT_heap_tight(void)
{
    size_t lim = max_heap;
    if (!lim || GC_get_heap_size() < lim - lim / 8)
        return 0;
    /* The heap stays at its size once grown: after a runaway filled the
     * limit, a collection at every poll of every long computation that
     * followed (every 2^16 rewrites) cost more than the work between
     * polls on a large heap.  The blocks in use, garbage included, bound
     * what a collection would find in use. */
    GC_word heap, freeb, unmapped, since, total;
    GC_get_heap_usage_safe(&heap, &freeb, &unmapped, &since, &total);
    if (heap - freeb <= lim - lim / 4)
        return 0;
    GC_gcollect();
    GC_get_heap_usage_safe(&heap, &freeb, &unmapped, &since, &total);
    return heap - freeb > lim - lim / 4;
}

static void *GC_CALLBACK pace_off(void *unused)
{
    (void)unused;
    pace_to(pace_base);
    return NULL;
}

int tg_set_max_heap(size_t bytes, tg_error *err)
{
    if (bytes && bytes < ((size_t)1 << 20)) {
        tgE_set(err, TG_ERR_ARG, NULL, 0, 0, "tg_set_max_heap: %zu bytes is below the 1 MiB minimum",
                bytes);
        return -1;
    }
    pthread_once(&gc_once, gc_setup);
    GC_set_max_heap_size((GC_word)bytes);
    max_heap = bytes;
    if (bytes && pace_base)     /* the collector's usual pacing under a limit */
        GC_call_with_alloc_lock(pace_off, NULL);
    return 0;
}

tg_ctx *tg_ctx_new(tg_error *err)
{
    pthread_once(&gc_once, gc_setup);
    tg_ctx *ctx = GC_MALLOC_UNCOLLECTABLE(sizeof *ctx);
    if (!ctx) {
        tgE_set(err, TG_ERR_NOMEM, NULL, 0, 0, "out of memory creating a context");
        return NULL;
    }
    memset(ctx, 0, sizeof *ctx);
    ctx->tab = table_alloc(MIN_BUCKETS, TAG_WIDE);
    if (!ctx->tab) {
        GC_FREE(ctx);
        tgE_set(err, TG_ERR_NOMEM, NULL, 0, 0, "out of memory creating a context");
        return NULL;
    }
    copy_header(ctx);
    atomic_init(&ctx->busy, 0);
    GC_call_with_alloc_lock(link_ctx, ctx);
    return ctx;
}

void tg_ctx_free(tg_ctx *ctx)
{
    if (!ctx)
        return;
    if (ctx->ext_free)
        ctx->ext_free(ctx->ext);
    GC_call_with_alloc_lock(unlink_ctx, ctx);
    table_free(ctx->tab);
    GC_FREE(ctx);
}

void *tgT_ctx_ext(const tg_ctx *ctx) { return ctx->ext; }

void tgT_ctx_set_ext(tg_ctx *ctx, void *ext, void (*free_fn)(void *))
{
    ctx->ext = ext;
    ctx->ext_free = free_fn;
}

void tg_ctx_stats(const tg_ctx *ctx, tg_stats *out)
{
    if (!out)
        return;
    if (!ctx) {
        memset(out, 0, sizeof *out);
        return;
    }
    out->live = ctx->count;
    out->capacity = ctx->nb * BSLOTS;
    out->table_bytes = table_bytes(ctx->nb);
    out->created = ctx->count + ctx->reclaimed;   /* one counter less on the miss path */
    out->reclaimed = ctx->reclaimed;
}

