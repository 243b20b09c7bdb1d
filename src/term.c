/* term.c - hash-consed terms: the interning table, its weak hold on terms
 * through the Boehm collector, node allocation, the interning of every
 * kind of node (chunks through tg_app and tg_app_batch, symbols,
 * strings, variables, doubles, big integers, rationals), and contexts.
 * The list views are in term_list.c, numbers in term_num.c, accessors
 * and the total order in term_access.c.
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
#include "term.h"
#include "error.h"

#define GC_THREADS 1   /* thread registration API; no pthread redirects needed here */
#include <gc/gc.h>
#include <gc/gc_inline.h>
#include <gc/gc_mark.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#ifdef __linux__
#include <sys/mman.h>
#endif

/* Free lists refilled with GC_generic_malloc_many, by size in 16-byte
 * granules; the largest is a full chunk with its tail, which the miss path
 * of intern_chunk takes from a free list without calling the collector. */
#define TGT_CHUNK_GRANULES (((TGT_CHUNK + 2) * sizeof(void *) + 15) / 16)
#define TGT_NFREE (TGT_CHUNK_GRANULES > 6 ? TGT_CHUNK_GRANULES : 6)

struct tg_ctx {
    struct bucket *tab;     /* malloc'd or mapped, not scanned; described by its header */
    size_t nb;              /* copies of the current array's header, for the probes */
    uintptr_t tagmask;
    struct bucket *old_tab; /* during a rebuild: the previous array */
    size_t count;
    size_t limit;           /* grow past this many entries */
    atomic_int busy;
    int untagged;           /* a collection stripped the tags of this busy table */
    unsigned long prunes;   /* bumped by each prune that removed entries */
    size_t created, reclaimed;
    size_t survivors;       /* entries left by the last prune */
    int retaining;          /* the last prune found most entries alive */
    unsigned long forced;   /* prunes + 1 when this context last forced a collection */
    uint64_t next_lvar;     /* ids of runtime logic variables */
    void *freelist[TGT_NFREE + 1];
    tg_ctx *next;           /* registry of live contexts */
};

#define NIL_HASH 0x6e696c21u
tg_term tgT_nilobj __attribute__((aligned(16))) = {{TG_NIL, TGT_GROUND, 0, 0, NIL_HASH}};

/* ---- buckets ------------------------------------------------------ */

/* The table is an array of 64-byte buckets: a control word and 7 slots.
 * The control word has one byte per slot, 0 when the slot is empty and
 * 0x80 | the low 7 bits of its node's hash otherwise, and in its top
 * byte the bucket's overflow record: in its low 4 bits, how many entries
 * whose home is this bucket or an earlier one were placed beyond it
 * because it was full (saturating: at 15 it stays 15), and in its high 4
 * bits a filter of them, one bit set by each such entry, chosen by two
 * bits of its hash (both counted again at each prune, see there).  A probe reads
 * the home bucket's control word, finds the slots whose byte matches with
 * a few word operations, and goes on to the next bucket only when its
 * own filter bit is set.  Where in its bucket an entry lies changes no
 * branch, so consecutive lookups overlap their cache misses; with
 * linear probing over single slots, the end of each probe was a branch
 * on the missed slot that the processor could not predict.
 *
 * A slot holds a node pointer with more hash bits in the bits a pointer
 * leaves unused: 4 low bits (nodes are 16-byte aligned) and, on 64-bit
 * systems, bits 47 to 63 (the user-space addresses of the usual 64-bit
 * systems stay below 2^47; a context that meets a node above gives up
 * the high bits, see narrow()).  Bits 0 and 1 hold how many buckets
 * the entry lies beyond its home (3: three or more), bits 2 and 3 hash
 * bits 7 and 8, bits 47 to 63 hash bits 9 to 25.  A byte match is
 * confirmed on these before the node is read, so a probe dereferences
 * nearly only the node it is looking for.  The home bucket comes from the high end of the hash
 * (multiply-shift, any number of buckets), the byte and tags from its
 * low end, so entries of one bucket almost never share them. */
#define BSLOTS 7
typedef struct bucket {
    uint64_t ctrl;
    uintptr_t s[BSLOTS];
} bucket;

#define CT_7F 0x7F7F7F7F7F7F7F7Full
#define CT_ONES 0x0101010101010101ull
#define CT_SLOTS 0x0080808080808080ull  /* the top bit of each slot's byte */
#define CT_OVF_SHIFT 56
#define CT_OVF_ONE ((uint64_t)1 << CT_OVF_SHIFT)
#define CT_OVF_MAX 15u      /* the count's 4 bits */
#define CT_OVF_COUNT ((uint64_t)CT_OVF_MAX << CT_OVF_SHIFT)
#define CT_OVF_FILTER ((uint64_t)0xF << (CT_OVF_SHIFT + 4))

/* The filter bit of hash h in an overflow byte: one of 4, by hash bits 0
 * and 1, which say nothing of the home. */
static inline uint64_t ct_filter(uint32_t h)
{
    return (uint64_t)1 << (CT_OVF_SHIFT + 4 + (h & 3));
}

static inline uint64_t ct_byte(uint32_t h)
{
    return 0x80 | (h & 0x7F);
}
/* The top bit of each slot byte of ctrl equal to the byte of `rep`
 * (rep = ct_byte(h) * CT_ONES); exact, no carries between bytes. */
static inline uint64_t ct_match(uint64_t ctrl, uint64_t rep)
{
    uint64_t x = ctrl ^ rep;
    return ~(((x & CT_7F) + CT_7F) | x | CT_7F) & CT_SLOTS;
}
static inline unsigned ct_slot(uint64_t m)
{
    return (unsigned)__builtin_ctzll(m) >> 3;
}

#define TAG_LO ((uintptr_t)15)
#define DISP ((uintptr_t)3)      /* the displacement bits */
#if UINTPTR_MAX > 0xffffffffu
#define TAG_HI_SHIFT 47
#define TAG_HI (~(uintptr_t)0 << TAG_HI_SHIFT)
#define TAG_WIDE 1
#else
#define TAG_HI ((uintptr_t)0)
#define TAG_WIDE 0
#endif

/* The pointer tag of hash h at home (displacement 0).  Bits outside the
 * tag mask are junk: a probe compares under the mask, and place() masks. */
static inline uintptr_t ptag(uint32_t h)
{
#if TAG_WIDE
    return (uintptr_t)h << (TAG_HI_SHIFT - 9) | (h >> 5 & 12);     /* bits 9..25 to 47..63 */
#else
    return h >> 5 & 12;
#endif
}
/* The tag expected one bucket further on. */
static inline uintptr_t ptag_next(uintptr_t pt)
{
    return pt + ((pt & DISP) != DISP);
}

/* Multiply-shift range reduction: any number of buckets, not only powers
 * of 2, so the table can grow by less than 2x and stay dense. */
static inline size_t home_in(uint32_t h, size_t nb)
{
    return (size_t)(((uint64_t)h * nb) >> 32);
}

/* Bucket arrays.  A 64-byte header before each array describes it (its
 * tag mask and its number of buckets), so that the collector's hooks can
 * untag and retag an array whatever state a rebuild has reached.  A large
 * array is mapped directly, starting on a 2 MiB boundary, and asks for
 * transparent huge pages: a random probe into a table of many megabytes
 * then costs no TLB miss, and growing it takes a few page faults instead
 * of one per 4 KiB (zeroing is the kernel's). */
#define HUGE_BYTES ((size_t)2 << 20)
static inline uintptr_t tbl_tagmask(const bucket *a)
{
    return a[-1].s[0];
}
static inline size_t tbl_nb(const bucket *a)
{
    return a[-1].s[1];
}
static size_t table_bytes(size_t nb)
{
    return ((nb + 1) * sizeof(bucket) + 4095) & ~(size_t)4095;
}
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
        /* A write to each page now: a rebuild reads a bucket before it
         * writes it, and the first read of a page maps the shared zero
         * page, which the write then has to replace (two faults). */
        for (size_t k = 0; k < n; k += 4096)
            ((volatile char *)p)[k] = 0;
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

static tg_ctx *registry;
static int term_kind;       /* objects scanned whole, last word included */
static GC_on_collection_event_proc prev_event;
static GC_push_other_roots_proc prev_push;
static pthread_once_t gc_once = PTHREAD_ONCE_INIT;

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
            if (a[i].s[j]) {    /* during a rebuild's start, tab and old_tab are one array */
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

/* Retagging at the end of marking, or before the world restarts if the
 * collector abandoned the mark phase. */
static void GC_CALLBACK on_event(GC_EventType ev)
{
    if (ev == GC_EVENT_MARK_END) {
        retag_all();
        for (tg_ctx *c = registry; c; c = c->next)
            if (!atomic_load_explicit(&c->busy, memory_order_relaxed))
                prune(c);
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

static void gc_setup(void)
{
    GC_init();
    GC_allow_register_threads();
    /* With interior pointers on, NORMAL objects get one extra byte and
     * their last word is not scanned; our own kind scans the whole
     * object, so a node can use every byte of its granules.  Objects are
     * cleared by the collector when it sweeps them: a batch waiting on a
     * context's free list is reachable from the context and scanned, and
     * the stale words of dead objects in it would otherwise keep whole
     * chains of garbage alive (the logic core's streams and states). */
    term_kind = (int)GC_new_kind(GC_new_free_list(), 0 | GC_DS_LENGTH, 1, 1);
    /* Each collection costs a sweep of every table and a mark of all live
     * data; with a small heap the collector would run every hundred
     * kilobytes or so.  A logic search allocates short-lived states fast
     * while its pending branches stay live, and collecting every MiB
     * marked them over and over (a third of the time of some searches).
     * Allow at least 8 MiB between collections, unless the embedder
     * chose a floor. */
    if (GC_get_min_bytes_allocd() <= 1)
        GC_set_min_bytes_allocd((size_t)8 << 20);
    prev_event = GC_get_on_collection_event();
    GC_set_on_collection_event(on_event);
    prev_push = GC_get_push_other_roots();
    GC_set_push_other_roots(push_roots);
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

/* Entering and leaving a table operation.  The signal fence keeps the
 * compiler from moving table accesses across the flag; the collector
 * reads the flag only after the thread has been stopped. */
static inline void enter(tg_ctx *ctx)
{
    atomic_store_explicit(&ctx->busy, 1, memory_order_relaxed);
    atomic_signal_fence(memory_order_seq_cst);
}
static inline void leave(tg_ctx *ctx)
{
    atomic_signal_fence(memory_order_seq_cst);
    atomic_store_explicit(&ctx->busy, 0, memory_order_relaxed);
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

static size_t limit_for(size_t nb)
{
    return nb / LOAD_DEN * LOAD_NUM + nb % LOAD_DEN * LOAD_NUM / LOAD_DEN;
}

static inline size_t next_bucket(size_t i, size_t nb)
{
    return i + 1 == nb ? 0 : i + 1;
}

/* Put v, the untagged pointer to a node of hash h, in the first bucket
 * from its home that has a free slot, counting it in the overflow count
 * of each full bucket it passes.  The slot is stored before its control
 * byte (see retag). */
static inline void place(bucket *a, size_t nb, uintptr_t mask, uintptr_t v, uint32_t h)
{
    size_t i = home_in(h, nb);
    v |= ptag(h) & mask;
    for (;;) {
        uint64_t c = a[i].ctrl, e = ~c & CT_SLOTS;
        if (__builtin_expect(e != 0, 1)) {
            unsigned j = ct_slot(e);
            a[i].s[j] = v;
            a[i].ctrl = c | ct_byte(h) << (8 * j);
            return;
        }
        if ((c & CT_OVF_COUNT) != CT_OVF_COUNT)
            c += CT_OVF_ONE;
        a[i].ctrl = c | ct_filter(h);
        v = ptag_next(v);
        i = next_bucket(i, nb);
    }
}

/* Count an entry that lies in bucket `at`, away from its home `from`, in
 * the overflow records of the buckets between. */
static void count_passes(bucket *a, size_t nb, size_t from, size_t at, uint32_t h)
{
    for (size_t k = from; k != at; k = next_bucket(k, nb)) {
        uint64_t c = a[k].ctrl;
        if ((c & CT_OVF_COUNT) != CT_OVF_COUNT)
            c += CT_OVF_ONE;
        a[k].ctrl = c | ct_filter(h);
    }
}

/* The hash of the entry in slot j of a bucket, of control word ctrl, of
 * an array of nb >= 64 buckets with wide tags, without reading its node:
 * the byte and the tags give the low 26 bits, and its home bucket k says
 * the hash lies in [lo, lo + 2^32 / nb), where lo = ceil(k * 2^32 / nb):
 * a window of at most 2^26 values, which holds one with those low bits.
 * The home is known when the entry lies fewer than 3 buckets from it. */
#define RECON_BITS 26
#define RECON_MIN_BUCKETS ((size_t)1 << (32 - RECON_BITS))
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

/* Place every entry of array old (tag mask omask) in the empty array na.
 * With wide tags the hash of nearly every entry follows from its slot
 * (see recon_hash), so the pass reads only the two arrays, nearly
 * sequentially (homes are monotonic in the hash).  Otherwise it reads
 * the nodes, fetched some buckets ahead so that the misses overlap. */
#define REBUILD_PREFETCH 3      /* buckets */
static void move_all(const bucket *old, size_t onb, uintptr_t omask, bucket *na, size_t nnb)
{
    uintptr_t nmask = tbl_tagmask(na);
    int recon = TAG_WIDE && omask != TAG_LO && onb >= RECON_MIN_BUCKETS;
    /* lo[d] = ceil((i - d) * 2^32 / onb) for displacements d of 0 to 2;
     * lo[0] stepped as a quotient and a remainder */
    uint64_t qstep = ((uint64_t)1 << 32) / onb, rstep = ((uint64_t)1 << 32) % onb, q = 0, r = 0;
    uint32_t lo[3] = {lo_of(onb - 1, onb), lo_of(onb - 2, onb), 0};
    for (size_t i = 0; i < onb; i++) {
        if (i + REBUILD_PREFETCH < onb) {
            const bucket *p = &old[i + REBUILD_PREFETCH];
            for (uint64_t m = p->ctrl & CT_SLOTS; m; m &= m - 1) {
                uintptr_t v = p->s[ct_slot(m)];
                if (!recon || (v & DISP) == DISP)
                    __builtin_prefetch((void *)(v & ~omask));
            }
        }
        const bucket *b = &old[i];
        uint64_t c = b->ctrl;
        lo[2] = lo[1];
        lo[1] = lo[0];
        lo[0] = (uint32_t)(q + (r != 0));
        for (uint64_t m = c & CT_SLOTS; m; m &= m - 1) {
            unsigned j = ct_slot(m);
            uintptr_t v = b->s[j], d = v & DISP;
            uintptr_t t = v & ~omask;
            uint32_t h = recon && d != DISP ? recon_hash(c, j, v, lo[d]) : ((tg_term *)t)->h.hash;
#ifdef TGT_CHECK_RECON
            if (h != ((tg_term *)t)->h.hash)
                abort();
#endif
            place(na, nnb, nmask, t, h);
        }
        q += qstep;
        r += rstep;
        if (r >= onb) {
            q++;
            r -= onb;
        }
    }
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
    ctx->nb = nnb;
    ctx->tagmask = tbl_tagmask(na);
    ctx->limit = limit_for(nnb);
    table_free(old);
    return 0;
}

/* Grow by 3/2 (inside enter/leave). */
static int grow(tg_ctx *ctx)
{
    return rebuild(ctx, ctx->nb / GROW_DEN * GROW_NUM + ctx->nb % GROW_DEN * GROW_NUM / GROW_DEN,
                   ctx->tagmask != TAG_LO);
}

/* Give up the high tag bits (inside enter/leave): a node about to be
 * stored lies above 2^47.  Returns -1 when memory is exhausted. */
static __attribute__((noinline)) int narrow(tg_ctx *ctx)
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
    size_t *pass = calloc(nb, sizeof *pass);
    uint64_t *filter = calloc(nb, sizeof *filter);
    if (!pass || !filter) {
        free(pass);
        free(filter);
        return NULL;
    }
    const char *bad = NULL;
    for (size_t i = 0; i < nb && !bad; i++)
        for (unsigned j = 0; j < BSLOTS && !bad; j++) {
            uint64_t byte = a[i].ctrl >> (8 * j) & 0xFF;
            uintptr_t v = a[i].s[j];
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
            for (size_t k = home; k != i; k = next_bucket(k, nb)) {
                pass[k]++;
                filter[k] |= ct_filter(h);
            }
        }
    if (!bad && n != ctx->count)
        bad = "the entry count is wrong";
    for (size_t k = 0; k < nb && !bad; k++) {
        size_t ovf = (a[k].ctrl & CT_OVF_COUNT) >> CT_OVF_SHIFT;
        if (ovf != CT_OVF_MAX && ovf != pass[k])
            bad = "an overflow count is wrong";
        else if ((a[k].ctrl & filter[k]) != filter[k])
            bad = "an overflow filter lacks a bit";
        else if (!ovf && (a[k].ctrl & CT_OVF_FILTER))
            bad = "an overflow filter outlives its count";
    }
    free(pass);
    free(filter);
    return bad;
}

/* Remove the entries of nodes the last mark phase did not reach.  Runs
 * with the world stopped and the allocation lock held: no allocation.
 * An entry is removed by clearing its slot and byte; no survivor moves.
 * The overflow records are counted again from the survivors (their
 * homes from their displacements, or from their nodes' hashes when that
 * is 3 or more), so that a count saturated since the last collection
 * does not stay so.  The pass starts after a bucket no entry passed, so
 * that each survivor comes after the buckets it passed, which are then
 * final; without such a bucket the records are all cleared first. */
#define CT_OVF_BYTE (CT_OVF_COUNT | CT_OVF_FILTER)
static void prune(tg_ctx *ctx)
{
    bucket *a = ctx->tab;
    size_t nb = ctx->nb, dead = 0, start = 0;
    uintptr_t mask = ctx->tagmask;
    if (!a)
        return;
    while (start < nb && (a[start].ctrl & CT_OVF_COUNT))
        start++;
    uint64_t keep = ~CT_OVF_BYTE;
    if (start == nb) {
        for (size_t i = 0; i < nb; i++)
            a[i].ctrl &= ~CT_OVF_BYTE;
        keep = ~(uint64_t)0;
        start = 0;
    } else
        start = next_bucket(start, nb);
    for (size_t n = 0, i = start; n < nb; n++, i = next_bucket(i, nb)) {
        uint64_t c = a[i].ctrl & keep;
        for (uint64_t m = c & CT_SLOTS; m; m &= m - 1) {
            unsigned j = ct_slot(m);
            uintptr_t v = a[i].s[j], d = v & DISP;
            tg_term *t = (tg_term *)(v & ~mask);
            if (GC_is_marked(t)) {
                if (d)  /* never passes bucket i itself */
                    count_passes(a, nb, d < DISP ? (i + nb - d) % nb : home_in(t->h.hash, nb), i,
                                 (uint32_t)(c >> (8 * j)));
                continue;
            }
            a[i].s[j] = 0;
            c &= ~((uint64_t)0xFF << (8 * j));
            dead++;
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
 * made since outnumber those it left, the table is past a small size,
 * and the heap holds little besides what was allocated since the last
 * collection (so that the collection is cheap; otherwise the collector's
 * own pacing decides).  Without this, a context that makes short-lived
 * terms in a large, mostly free heap lets its table grow to one entry per
 * node the heap can hold, and every probe misses the cache.  Otherwise,
 * or if the collection left the table full, grow.  Returns -1 only when
 * out of memory with the table full. */
#define FORCE_MIN_BUCKETS ((size_t)1 << 13)   /* 512 KiB */
static __attribute__((noinline)) int make_room(tg_ctx *ctx)
{
    if (!ctx->retaining && ctx->nb >= FORCE_MIN_BUCKETS && ctx->forced != ctx->prunes + 1 &&
        ctx->count - ctx->survivors > ctx->survivors) {
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
    if (ctx->count >= ctx->limit && grow(ctx)) {
        if (ctx->count + 1 < ctx->nb * BSLOTS)
            ctx->limit = ctx->count + 1;    /* out of memory: fill up further */
        else
            r = -1;
    }
    leave(ctx);
    return r;
}

/* ---- allocation --------------------------------------------------- */

/* Refill the context's free list of g-granule nodes: one batch (a heap
 * block's worth) per lock round-trip.  May collect, so never busy. */
static __attribute__((noinline)) int refill(tg_ctx *ctx, size_t g)
{
    void *p;
    GC_generic_malloc_many(g * 16, term_kind, &p);
    if (!p)
        return -1;
    ctx->freelist[g] = p;
    return 0;
}

/* A node of `bytes` bytes that may hold pointers.  Small ones come from
 * per-context free lists (one lock round-trip per batch).  GC_malloc
 * would add a byte to each request when interior pointers are on (a
 * 32-byte node would take 48); GC_generic_malloc_many takes the exact
 * granule size, and term_kind scans all of it. */
static void *alloc_node(tg_ctx *ctx, size_t bytes)
{
    size_t g = (bytes + 15) / 16;
    if (g > TGT_NFREE)
        return GC_generic_malloc(bytes, term_kind);
    if (!ctx->freelist[g] && refill(ctx, g))
        return NULL;
    void *p = ctx->freelist[g];
    ctx->freelist[g] = GC_NEXT(p);
    GC_NEXT(p) = NULL;
    return p;
}

static void *alloc_atomic(size_t bytes)
{
    return GC_MALLOC_ATOMIC(bytes);
}

/* ---- interning ---------------------------------------------------- */

/* The probe shared by every kind but chunks: `same` decides equality
 * with a candidate `c` of equal hash.  Sets `found` to the existing node
 * or to NULL.  Run between enter() and leave(). */
#define PROBE(ctx, HASH, KIND, same, found)                                   \
    do {                                                                      \
        bucket *a_ = (ctx)->tab;                                              \
        size_t nb_ = (ctx)->nb, i_ = home_in((HASH), nb_);                    \
        uintptr_t mask_ = (ctx)->tagmask, pt_ = ptag(HASH);          \
        uint64_t rep_ = ct_byte(HASH) * CT_ONES;                              \
        (found) = NULL;                                                       \
        for (;;) {                                                            \
            uint64_t c_ = a_[i_].ctrl;                                        \
            for (uint64_t m_ = ct_match(c_, rep_); m_; m_ &= m_ - 1) {        \
                uintptr_t v_ = a_[i_].s[ct_slot(m_)];                         \
                if ((v_ ^ pt_) & mask_)                                       \
                    continue;                                                 \
                tg_term *c = (tg_term *)(v_ & ~mask_);                        \
                if (c->h.hash == (HASH) && c->h.kind == (KIND) && (same)) {   \
                    (found) = c;                                              \
                    break;                                                    \
                }                                                             \
            }                                                                 \
            if ((found) || !(c_ & ct_filter(HASH)))                           \
                break;                                                        \
            pt_ = ptag_next(pt_);                                             \
            i_ = next_bucket(i_, nb_);                                        \
        }                                                                     \
    } while (0)

/* Store new node t, known not to be in the table (inside enter/leave).
 * Returns 0, or -1 when t lies above the high tag bits and there is no
 * memory to give them up. */
static inline int store(tg_ctx *ctx, tg_term *t)
{
    if (__builtin_expect(((uintptr_t)t & ctx->tagmask) != 0, 0) && narrow(ctx))
        return -1;
    place(ctx->tab, ctx->nb, ctx->tagmask, (uintptr_t)t, t->h.hash);
    ctx->created++;
    ctx->count++;
    return 0;
}

/* Insert a freshly built node that a probe did not find.  Allocating it
 * may have collected, which only removes entries, so it is still not in
 * the table. */
static tg_term *insert(tg_ctx *ctx, tg_term *t)
{
    enter(ctx);
    if (store(ctx, t))
        t = NULL;
    else if (ctx->count > ctx->limit)
        grow(ctx);
    leave(ctx);
    return t;
}

static inline uint64_t hdr_word(tgT_hdr h)
{
    uint64_t w;
    memcpy(&w, &h, sizeof w);
    return w;
}

static tg_term *intern_chunk(tg_ctx *ctx, tg_term *head, unsigned na, tg_term *const *args,
                             tg_term *rest);

/* The GROUND flag of a chunk, for a miss (see chunk_hdr). */
static inline unsigned chunk_ground(tg_term *head, unsigned na, tg_term *const *args, tg_term *rest)
{
    unsigned ground = tgT_ground(head) && (rest == TGT_NIL || tgT_ground(rest));
    for (unsigned i = 0; i < na; i++)
        ground &= tgT_ground(args[i]);
    return ground ? TGT_GROUND : 0;
}

/* A miss (called busy).  Taking a node from the free list never calls the
 * collector, so the node is built and stored while still busy, and the
 * probe's finding stays true.  When the free list is empty or the table
 * is at its load limit, the remedy may collect, which may prune the
 * table: the chunk is then interned again from the start.  Inline: out of
 * line, the call cost the churn of short-lived terms 6 to 11%, more than
 * it saved the lookups. */
static inline __attribute__((always_inline)) tg_term *
intern_miss(tg_ctx *ctx, tgT_hdr hd, tg_term *head, tg_term *const *args, tg_term *rest)
{
    unsigned na = hd.n - 1u, hastail = (hd.flags & TGT_HASTAIL) != 0;
    size_t g = (sizeof(tgT_hdr) + (na + 1 + hastail) * sizeof(tg_term *) + 15) / 16;
    tg_term *t = ctx->freelist[g];
    if (__builtin_expect(t != NULL && ctx->count < ctx->limit, 1)) {
        ctx->freelist[g] = GC_NEXT(t);
        hd.flags |= chunk_ground(head, na, args, rest);
        t->h = hd;
        t->e[0] = head;
        for (unsigned k = 0; k < na; k++)
            t->e[k + 1] = args[k];
        if (hastail)
            t->e[na + 1] = rest;
        int r = store(ctx, t);
        leave(ctx);
        return r ? NULL : t;
    }
    leave(ctx);
    if (t ? make_room(ctx) : refill(ctx, g))
        return NULL;
    return intern_chunk(ctx, head, na, args, rest);     /* rare: probe again */
}

/* Positional multipliers of a chunk's hash: element i (the head is
 * element 0) contributes hash52(e_i) * KPOS[i], the rest and the count
 * their own terms, and one finishing mix diffuses the sum.  The products
 * are independent, so the hash of a short application costs about one
 * multiply of latency per element fewer than a fold of mixes would. */
static const uint64_t KPOS[15] = {
    0x9E3779B97F4A7C15ull, 0xC2B2AE3D27D4EB4Full, 0x165667B19E3779F9ull, 0xD6E8FEB86659FD93ull,
    0xFF51AFD7ED558CCDull, 0xC4CEB9FE1A85EC53ull, 0xA0761D6478BD642Full, 0xE7037ED1A0B428DBull,
    0xF4524517B84B2607ull, 0x46FCD802F9C7E095ull, 0x453214468BEDDF91ull, 0x8ACC20AC82F722DFull,
    0xCBD0989A0B09659Bull, 0xF91BE2EDDA15B6F3ull, 0x1CF681E501B54559ull};
_Static_assert(TGT_CHUNK <= 15, "one multiplier per element of a chunk");
#define KREST 0x8EBC6AF09C88C6E3ull
#define KCOUNT 0x589965CC75374CC3ull

/* The header of the chunk (head args[0] .. args[na-1] . rest): kind,
 * count, the HASTAIL flag and the 52-bit hash (the top 32 bits of the
 * mix for `hash`, 20 bits below them for `hash_hi`).  GROUND is left
 * out: it follows from the elements, so a lookup need not compute it; a
 * miss adds it (chunk_ground). */
static inline __attribute__((always_inline)) tgT_hdr
chunk_hdr(tg_term *head, unsigned na, tg_term *const *args, tg_term *rest)
{
    /* () is the usual rest: its fields as constants */
    unsigned hastail = rest != TGT_NIL;
    uint64_t acc = tgT_hash52(head) * KPOS[0] +
                   (hastail ? tgT_hash52(rest) : (uint64_t)NIL_HASH << 20) * KREST + na * KCOUNT;
    for (unsigned i = 0; i < na; i++)
        acc += tgT_hash52(args[i]) * KPOS[i + 1];
    acc = (acc ^ (acc >> 30)) * 0xBF58476D1CE4E5B9ull;
    acc = (acc ^ (acc >> 27)) * 0x94D049BB133111EBull;
    return (tgT_hdr){TG_PAIR, hastail ? TGT_HASTAIL : 0, na + 1, (uint32_t)acc >> 12,
                     (uint32_t)(acc >> 32)};
}

/* Node c holds the chunk whose header word, GROUND aside, is `want`.
 * The 8-byte header (hash, kind, count, HASTAIL) is compared in
 * one go. */
static inline __attribute__((always_inline)) int
chunk_is(const tg_term *c, uint64_t want, tg_term *head, unsigned na, tg_term *const *args,
         tg_term *rest)
{
    const uint64_t ground = hdr_word((tgT_hdr){0, TGT_GROUND, 0, 0, 0});
    if (((hdr_word(c->h) ^ want) & ~ground) != 0 || c->e[0] != head)
        return 0;
    unsigned k = 0;
    while (k < na && c->e[k + 1] == args[k])
        k++;
    return k == na && (rest == TGT_NIL || c->e[na + 1] == rest);
}

/* The probe of the chunk whose header word is `want` in bucket i, for
 * hash h and pointer tag pt. */
static inline __attribute__((always_inline)) tg_term *
chunk_in(const bucket *b, uint64_t c, uint32_t h, uintptr_t pt, uintptr_t mask, uint64_t want,
         tg_term *head, unsigned na, tg_term *const *args, tg_term *rest)
{
    for (uint64_t m = ct_match(c, ct_byte(h) * CT_ONES); m; m &= m - 1) {
        uintptr_t v = b->s[ct_slot(m)];
        if (((v ^ pt) & mask) == 0 && chunk_is((tg_term *)(v & ~mask), want, head, na, args, rest))
            return (tg_term *)(v & ~mask);
    }
    return NULL;
}

/* The probe beyond a home bucket that overflowed, from bucket i; out of
 * line (and for any count), so that the usual probe of one bucket keeps
 * its values in registers. */
static __attribute__((noinline)) tg_term *
chunk_probe_on(const tg_ctx *ctx, size_t i, tgT_hdr hd, tg_term *head, unsigned na,
               tg_term *const *args, tg_term *rest)
{
    uint32_t h = hd.hash;
    const bucket *a = ctx->tab;
    uintptr_t mask = ctx->tagmask, pt = ptag_next(ptag(h));
    for (;;) {
        uint64_t c = a[i].ctrl;
        tg_term *t = chunk_in(&a[i], c, h, pt, mask, hdr_word(hd), head, na, args, rest);
        if (t || !(c & ct_filter(h)))
            return t;
        pt = ptag_next(pt);
        i = next_bucket(i, ctx->nb);
    }
}

/* Probe for the chunk (inside enter/leave): the node, or NULL. */
static inline __attribute__((always_inline)) tg_term *
chunk_probe(const tg_ctx *ctx, tgT_hdr hd, tg_term *head, unsigned na, tg_term *const *args,
            tg_term *rest)
{
    uint32_t h = hd.hash;
    size_t i = home_in(h, ctx->nb);
    const bucket *b = &ctx->tab[i];
    __builtin_prefetch(b + 1);  /* where an overflowed probe goes on */
    uint64_t c = b->ctrl;
    tg_term *t = chunk_in(b, c, h, ptag(h), ctx->tagmask, hdr_word(hd), head, na, args, rest);
    if (__builtin_expect(t != NULL || !(c & ct_filter(h)), 1))
        return t;
    return chunk_probe_on(ctx, next_bucket(i, ctx->nb), hd, head, na, args, rest);
}

/* Intern the chunk (head args[0] .. args[na-1] . rest).  The head is
 * apart from the arguments so that an application is interned straight
 * from its argument array.  Inlined with constant counts for short
 * applications (tg_app), which unrolls the loops. */
static inline __attribute__((always_inline)) tg_term *
intern_body(tg_ctx *ctx, tg_term *head, unsigned na, tg_term *const *args, tg_term *rest)
{
    tgT_hdr hd = chunk_hdr(head, na, args, rest);
    enter(ctx);
    tg_term *c = chunk_probe(ctx, hd, head, na, args, rest);
    if (c) {
        leave(ctx);
        return c;
    }
    return intern_miss(ctx, hd, head, args, rest);
}

/* The generic entry. */
static __attribute__((noinline)) tg_term *intern_chunk(tg_ctx *ctx, tg_term *head, unsigned na,
                                                       tg_term *const *args, tg_term *rest)
{
    return intern_body(ctx, head, na, args, rest);
}

tg_term *tgT_chunk(tg_ctx *ctx, unsigned m, tg_term *const *e, tg_term *rest)
{
    return intern_chunk(ctx, e[0], m - 1, e + 1, rest);
}

static uint32_t bytes_hash(const char *p, size_t n, uint32_t seed)
{
    uint64_t h = seed ^ (n * 0x9E3779B97F4A7C15ull);
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * 0xBF58476D1CE4E5B9ull;
        h ^= h >> 31;
        p += 8;
        n -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, p, n);
    h = (h ^ w) * 0x94D049BB133111EBull;
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ull;
    return (uint32_t)(h >> 32);
}

static tg_term *intern_bytes(tg_ctx *ctx, tg_kind kind, const char *p, size_t n)
{
    uint32_t h = bytes_hash(p, n, kind == TG_SYMBOL ? 0x53594d42u : 0x53545247u);
    tg_term *found;
    enter(ctx);
    PROBE(ctx, h, kind,
          ((tgT_bytes *)c)->len == n && memcmp(((tgT_bytes *)c)->s, p, n) == 0, found);
    leave(ctx);
    if (found)
        return found;
    tgT_bytes *b = alloc_atomic(sizeof *b + n + 1);
    if (!b)
        return NULL;
    b->h = (tgT_hdr){kind, TGT_GROUND, 0, 0, h};
    b->len = n;
    memcpy(b->s, p, n);
    b->s[n] = 0;
    return insert(ctx, (tg_term *)b);
}

tg_term *tg_symbol(tg_ctx *ctx, const char *name, size_t len)
{
    return intern_bytes(ctx, TG_SYMBOL, name, len);
}
tg_term *tg_symbol_cstr(tg_ctx *ctx, const char *name)
{
    return intern_bytes(ctx, TG_SYMBOL, name, strlen(name));
}
tg_term *tg_string(tg_ctx *ctx, const char *bytes, size_t len)
{
    return intern_bytes(ctx, TG_STRING, bytes, len);
}

tg_term *tg_var(tg_ctx *ctx, const char *name, size_t len, uint64_t id)
{
    tg_term *sym = tg_symbol(ctx, name, len);
    if (!sym)
        return NULL;
    uint32_t h = tgT_mix(sym->h.hash ^ 0x56415221u, tgT_fixhash((int64_t)id));
    tg_term *found;
    enter(ctx);
    PROBE(ctx, h, TG_VAR, ((tgT_var *)c)->name == sym && ((tgT_var *)c)->id == id, found);
    leave(ctx);
    if (found)
        return found;
    tgT_var *v = alloc_node(ctx, sizeof *v);
    if (!v)
        return NULL;
    v->h = (tgT_hdr){TG_VAR, 0, 0, 0, h};
    v->name = sym;
    v->id = id;
    return insert(ctx, (tg_term *)v);
}

void *tgT_alloc(tg_ctx *ctx, size_t bytes)
{
    return alloc_node(ctx, bytes);
}

tg_term *tgT_lvar_new(tg_ctx *ctx, tg_term *name, uint64_t scope)
{
    tgT_lvar *v = alloc_node(ctx, sizeof *v);
    if (!v)
        return NULL;
    uint64_t id = ++ctx->next_lvar;
    v->h = (tgT_hdr){TG_VAR, TGT_LVAR, 0, 0, tgT_mix(0x4c564152u, tgT_fixhash((int64_t)id))};
    v->name = name;
    v->id = id;
    v->val = NULL;
    v->scope = scope;
    return (tg_term *)v;
}

tg_term *tg_double(tg_ctx *ctx, double x)
{
    if (isnan(x))
        x = NAN;    /* one NaN: payloads are not observable in the language */
    uint64_t bits;
    memcpy(&bits, &x, 8);
    uint32_t h = tgT_fixhash((int64_t)(bits ^ 0x444f55424c45ull));
    tg_term *found;
    enter(ctx);
    PROBE(ctx, h, TG_DOUBLE, memcmp(&((tgT_dbl *)c)->v, &x, 8) == 0, found);
    leave(ctx);
    if (found)
        return found;
    tgT_dbl *d = alloc_atomic(sizeof *d);
    if (!d)
        return NULL;
    d->h = (tgT_hdr){TG_DOUBLE, TGT_GROUND, 0, 0, h};
    d->v = x;
    return insert(ctx, (tg_term *)d);
}

static uint32_t limbs_hash(const mp_limb_t *d, size_t n, uint32_t seed)
{
    return bytes_hash((const char *)d, n * sizeof *d, seed);
}

tg_term *tgT_big_intern(tg_ctx *ctx, int64_t size, const mp_limb_t *d)
{
    size_t n = (size_t)(size < 0 ? -size : size);
    uint32_t h = limbs_hash(d, n, size < 0 ? 0x4e454749u : 0x504f5349u);
    tg_term *found;
    enter(ctx);
    PROBE(ctx, h, TG_INT,
          ((tgT_big *)c)->size == size && memcmp(((tgT_big *)c)->d, d, n * sizeof *d) == 0,
          found);
    leave(ctx);
    if (found)
        return found;
    tgT_big *b = alloc_atomic(sizeof *b + n * sizeof *d);
    if (!b)
        return NULL;
    b->h = (tgT_hdr){TG_INT, TGT_GROUND, 0, 0, h};
    b->size = size;
    memcpy(b->d, d, n * sizeof *d);
    return insert(ctx, (tg_term *)b);
}

tg_term *tgT_rat_intern(tg_ctx *ctx, int32_t ns, const mp_limb_t *nd, int32_t ds,
                        const mp_limb_t *dd)
{
    size_t nn = (size_t)(ns < 0 ? -ns : ns), dn = (size_t)ds;
    uint32_t h = tgT_mix(limbs_hash(nd, nn, ns < 0 ? 0x4e514e51u : 0x50515051u),
                         limbs_hash(dd, dn, 0x44454e4fu));
    tg_term *found;
    enter(ctx);
    PROBE(ctx, h, TG_RAT,
          ((tgT_rat *)c)->nsize == ns && ((tgT_rat *)c)->dsize == ds &&
              memcmp(((tgT_rat *)c)->d, nd, nn * sizeof *nd) == 0 &&
              memcmp(((tgT_rat *)c)->d + nn, dd, dn * sizeof *dd) == 0,
          found);
    leave(ctx);
    if (found)
        return found;
    tgT_rat *r = alloc_atomic(sizeof *r + (nn + dn) * sizeof *nd);
    if (!r)
        return NULL;
    r->h = (tgT_hdr){TG_RAT, TGT_GROUND, 0, 0, h};
    r->nsize = ns;
    r->dsize = ds;
    memcpy(r->d, nd, nn * sizeof *nd);
    memcpy(r->d + nn, dd, dn * sizeof *dd);
    return insert(ctx, (tg_term *)r);
}

tg_term *tg_app(tg_ctx *ctx, tg_term *head, size_t n, tg_term *const *args)
{
    switch (n) {    /* specialised copies for the usual short applications */
    case 0: return intern_body(ctx, head, 0, args, TGT_NIL);
    case 1: return intern_body(ctx, head, 1, args, TGT_NIL);
    case 2: return intern_body(ctx, head, 2, args, TGT_NIL);
    case 3: return intern_body(ctx, head, 3, args, TGT_NIL);
    default: break;
    }
    if (n < TGT_CHUNK)
        return intern_chunk(ctx, head, (unsigned)n, args, TGT_NIL);
    /* The array holds copies of the caller's pointers, which keep the
     * terms alive, so malloc'd memory is fine here. */
    tg_term **buf = malloc((n + 1) * sizeof *buf);
    if (!buf)
        return NULL;
    buf[0] = head;
    memcpy(buf + 1, args, n * sizeof *args);
    tg_term *t = tgT_build_chunks(ctx, n + 1, buf, TGT_NIL);
    free(buf);
    return t;
}

/* ---- batched applications ---------------------------------------- */

/* Terms spread over a large table cost a cache miss for the home bucket,
 * and a single call overlaps it with few of the next calls'.  A batch
 * works in groups: hash every application of the group and fetch all
 * their home buckets (and the bucket after each), then probe them as
 * single calls would, with the lines cached.  A term not found is then
 * made by the ordinary path, which may allocate and collect, so nothing
 * found earlier is relied on across it.  A pass that also fetched each
 * candidate node before the probes (when probes were slot by slot) no
 * longer paid: 44 against 53 M/s among 10^5 terms, equal when the terms
 * are probed in random order.  Small tables, which stay in the nearest
 * caches, no longer need single probes either (10^3 terms: 86 M/s in
 * groups, 82 one by one). */
#define BATCH_GROUP 32      /* 16, 64: within 5% of 32 at 10^5 and 10^6 terms */

static inline __attribute__((always_inline)) void
batch_group(tg_ctx *ctx, tg_term *head, unsigned na, size_t m, tg_term *const *args,
            tg_term **out)
{
    tgT_hdr hd[BATCH_GROUP];
    for (size_t j = 0; j < m; j++)
        hd[j] = chunk_hdr(head, na, args + j * na, TGT_NIL);
    enter(ctx);
    for (size_t j = 0; j < m; j++) {
        const bucket *b = &ctx->tab[home_in(hd[j].hash, ctx->nb)];
        __builtin_prefetch(b);
        __builtin_prefetch(b + 1);
    }
    for (size_t j = 0; j < m; j++)
        out[j] = chunk_probe(ctx, hd[j], head, na, args + j * na, TGT_NIL);
    leave(ctx);
    for (size_t j = 0; j < m; j++)
        if (!out[j] && !(out[j] = intern_chunk(ctx, head, na, args + j * na, TGT_NIL)))
            return;
}

/* All of a batch with a constant argument count, so that the loops of
 * the short cases unroll as in tg_app. */
static inline __attribute__((always_inline)) size_t
batch_run(tg_ctx *ctx, tg_term *head, unsigned na, size_t count, tg_term *const *args,
          tg_term **out)
{
    for (size_t k = 0; k < count; k += BATCH_GROUP) {
        size_t m = count - k < BATCH_GROUP ? count - k : BATCH_GROUP;
        batch_group(ctx, head, na, m, args + k * na, out + k);
        for (size_t j = 0; j < m; j++)
            if (!out[k + j])
                return k + j;
    }
    return count;
}

/* The arguments are checked before anything is built. */
static int batch_check(tg_term *head, size_t n, size_t count, tg_term *const *args,
                       tg_term **out, tg_error *err)
{
    if (!head || !out || (n && !args)) {
        tgE_arg(err, "tg_app_batch: NULL head, arguments or output");
        return -1;
    }
    if (n && count > SIZE_MAX / n) {
        tgE_set(err, TG_ERR_RANGE, NULL, 0, 0, "tg_app_batch: %zu x %zu arguments", count, n);
        return -1;
    }
    for (size_t i = 0; i < count * n; i++)
        if (!args[i]) {
            tgE_set(err, TG_ERR_ARG, NULL, 0, 0,
                    "tg_app_batch: argument %zu of application %zu is NULL", i % n, i / n);
            return -1;
        }
    return 0;
}

int tg_app_batch(tg_ctx *ctx, tg_term *head, size_t n, size_t count, tg_term *const *args,
                 tg_term **out, tg_error *err)
{
    if (!ctx) {
        tgE_arg(err, "tg_app_batch: NULL context");
        return -1;
    }
    if (!count)
        return 0;
    if (batch_check(head, n, count, args, out, err))
        return -1;
    static tg_term *const none[1];
    if (!n)
        args = none;    /* no arithmetic on a NULL array */
    size_t done;
    switch (n) {
    case 0: done = batch_run(ctx, head, 0, count, args, out); break;
    case 1: done = batch_run(ctx, head, 1, count, args, out); break;
    case 2: done = batch_run(ctx, head, 2, count, args, out); break;
    case 3: done = batch_run(ctx, head, 3, count, args, out); break;
    default:
        if (n < TGT_CHUNK)
            done = batch_run(ctx, head, (unsigned)n, count, args, out);
        else    /* several chunks each: no gain from grouping */
            for (done = 0; done < count && (out[done] = tg_app(ctx, head, n, args + done * n));)
                done++;
        break;
    }
    if (done == count)
        return 0;
    for (size_t j = done; j < count; j++)
        out[j] = NULL;
    tgE_nomem(err);
    return -1;
}

/* ---- contexts ----------------------------------------------------- */

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
    ctx->nb = MIN_BUCKETS;
    ctx->tagmask = tbl_tagmask(ctx->tab);
    ctx->limit = limit_for(MIN_BUCKETS);
    atomic_init(&ctx->busy, 0);
    GC_call_with_alloc_lock(link_ctx, ctx);
    return ctx;
}

void tg_ctx_free(tg_ctx *ctx)
{
    if (!ctx)
        return;
    GC_call_with_alloc_lock(unlink_ctx, ctx);
    table_free(ctx->tab);
    GC_FREE(ctx);
}

void tg_ctx_stats(const tg_ctx *ctx, tg_stats *out)
{
    out->live = ctx->count;
    out->capacity = ctx->nb * BSLOTS;
    out->table_bytes = table_bytes(ctx->nb);
    out->created = ctx->created;
    out->reclaimed = ctx->reclaimed;
}
