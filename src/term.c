/* term.c - hash-consing: node allocation from per-context free lists and
 * the interning of every kind of node (chunks through tg_app and
 * tg_app_batch, symbols, strings, variables, doubles, big integers,
 * rationals) in the weak table of term_table.c.  The list views are in
 * term_list.c, numbers in term_num.c, accessors and the total order in
 * term_access.c.
 *
 * Interning probes the home bucket of a node's hash, compares the few
 * candidates whose tags match, and on a miss builds the node from a free
 * list and places it, all inside enter/leave so that a collection
 * started by another thread finds the table consistent.
 */
#include "term_table.h"
#include "error.h"

#define GC_THREADS 1   /* thread registration API; no pthread redirects needed here */
#include <gc/gc.h>
#include <gc/gc_inline.h>
#include <gc/gc_mark.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

tg_term tgT_nilobj __attribute__((aligned(16))) = {{TG_NIL, TGT_GROUND, 0, 0, TGT_NIL_HASH}};

/* ---- allocation --------------------------------------------------- */

/* No node is placed at the start of a heap block: such an object is
 * taken off the free list and left unused (the collector clears it when
 * it sweeps the block, so a stray reference to it holds nothing).  Words
 * that point at a page boundary are common where the collector looks
 * for roots: a mapping's end address is one, and the collector keeps the
 * end of its newest heap section in a static of its own, which is the
 * start of an older section when the kernel places the new one just
 * below it.  A term there would be kept alive, with everything it points
 * to, for as long as that word stays: after a runaway rewrite filled a
 * heap limit, the runaway's whole chain of nodes, and the session that
 * followed ran out of memory at once.  Costs one node in 128 (32-byte
 * nodes) of heap, and a test where a node is taken from the free list
 * (rather than a walk of each batch: a chain of dependent loads). */
#define BLOCK_BYTES 4096
static inline int block_start(const void *p)
{
    return ((uintptr_t)p & (BLOCK_BYTES - 1)) == 0;
}

/* The head of the free list of g-granule nodes after dropping the
 * objects at a block's start; NULL when the list is empty. */
static __attribute__((noinline)) void *skip_block_starts(tg_ctx *ctx, size_t g)
{
    void *p;
    while ((p = ctx->freelist[g]) != NULL && block_start(p)) {
        ctx->freelist[g] = GC_NEXT(p);
        GC_NEXT(p) = NULL;      /* else it would keep the next node alive */
    }
    return p;
}

/* Refill the context's free list of g-granule nodes: one batch (a heap
 * block's worth) per lock round-trip.  May collect, so never busy. */
static __attribute__((noinline)) int refill(tg_ctx *ctx, size_t g)
{
    void *p;
    GC_generic_malloc_many(g * 16, tgT_term_kind, &p);
    if (!p) {
        tgT_alloc_failed();
        return -1;
    }
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
    if (g > TGT_NFREE) {
        void *p = GC_generic_malloc(bytes, tgT_term_kind);
        if (!p)
            tgT_alloc_failed();
        return p;
    }
    void *p;
    while (!(p = skip_block_starts(ctx, g)))
        if (refill(ctx, g))
            return NULL;
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
        size_t nb_ = (ctx)->nb, i_ = ctx_home((ctx), (HASH));                  \
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
    if (__builtin_expect(((uintptr_t)t & ctx->tagmask) != 0, 0) && tgT_narrow_busy(ctx))
        return -1;
    place(ctx->tab, ctx->nb, ctx->tagmask, (uintptr_t)t, t->h.hash);
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
        tgT_grow(ctx);
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

/* Node t from the free list filled as (head args... . rest), its GROUND
 * flag added: both misses' fill (hastail a constant where inlined). */
static inline __attribute__((always_inline)) void
fill_node(tg_term *t, tgT_hdr hd, tg_term *head, unsigned na, tg_term *const *args, tg_term *rest,
          unsigned hastail)
{
    hd.flags |= chunk_ground(head, na, args, rest);
    t->h = hd;
    t->e[0] = head;
    for (unsigned k = 0; k < na; k++)
        t->e[k + 1] = args[k];
    if (hastail)
        t->e[na + 1] = rest;
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
    if (t && block_start(t))
        t = skip_block_starts(ctx, g);
    if (__builtin_expect(t != NULL && ctx->count < ctx->limit, 1)) {
        ctx->freelist[g] = GC_NEXT(t);
        fill_node(t, hd, head, na, args, rest, hastail);
        int r = store(ctx, t);
        leave(ctx);
        return r ? NULL : t;
    }
    leave(ctx);
    if (t ? tgT_make_room(ctx) : refill(ctx, g))
        return NULL;
    return intern_chunk(ctx, head, na, args, rest);     /* rare: probe again */
}

/* The header of the chunk (head args[0] .. args[na-1] . rest): kind,
 * count, the HASTAIL flag and the 52-bit hash (the top 32 bits of the
 * mix for `hash`, 20 bits below them for `hash_hi`).  GROUND is left
 * out: it follows from the elements, so a lookup need not compute it; a
 * miss adds it (chunk_ground). */
static inline __attribute__((always_inline)) tgT_hdr
chunk_hdr(tg_term *head, unsigned na, tg_term *const *args, tg_term *rest)
{
    unsigned hastail = rest != TGT_NIL;
    uint64_t acc = tgT_chunk_finish(tgT_chunk_sum(head, na, na, args, rest));
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

/* The probe from bucket i on, where the chunk's entry would have pointer
 * tag pt (the home bucket's tag moved on by ptag_next for each bucket
 * past home). */
static inline __attribute__((always_inline)) tg_term *
chunk_probe_from(const tg_ctx *ctx, size_t i, uintptr_t pt, uint64_t want, tg_term *head,
                 unsigned na, tg_term *const *args, tg_term *rest)
{
    uint32_t h = (uint32_t)(want >> 32);
    const bucket *a = ctx->tab;
    uintptr_t mask = ctx->tagmask;
    for (;;) {
        uint64_t c = a[i].ctrl;
        tg_term *t = chunk_in(&a[i], c, h, pt, mask, want, head, na, args, rest);
        if (t || !(c & ct_filter(h)))
            return t;
        pt = ptag_next(pt);
        i = next_bucket(i, ctx->nb);
    }
}

/* The probe beyond a home bucket that overflowed, from bucket i; out of
 * line (and for any count), so that the usual probe of one bucket keeps
 * its values in registers. */
static __attribute__((noinline)) tg_term *
chunk_probe_on(const tg_ctx *ctx, size_t i, tgT_hdr hd, tg_term *head, unsigned na,
               tg_term *const *args, tg_term *rest)
{
    return chunk_probe_from(ctx, i, ptag_next(ptag(hd.hash)), hdr_word(hd), head, na, args, rest);
}

/* Probe for the chunk (inside enter/leave): the node, or NULL. */
static inline __attribute__((always_inline)) tg_term *
chunk_probe(const tg_ctx *ctx, tgT_hdr hd, tg_term *head, unsigned na, tg_term *const *args,
            tg_term *rest)
{
    uint32_t h = hd.hash;
    size_t i = ctx_home(ctx, h);
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
intern_hd(tg_ctx *ctx, tgT_hdr hd, tg_term *head, unsigned na, tg_term *const *args,
          tg_term *rest)
{
    enter(ctx);
    tg_term *c = chunk_probe(ctx, hd, head, na, args, rest);
    if (c) {
        leave(ctx);
        return c;
    }
    return intern_miss(ctx, hd, head, args, rest);
}
static inline __attribute__((always_inline)) tg_term *
intern_body(tg_ctx *ctx, tg_term *head, unsigned na, tg_term *const *args, tg_term *rest)
{
    return intern_hd(ctx, chunk_hdr(head, na, args, rest), head, na, args, rest);
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

/* ---- the lean path of short applications ------------------------- */

/* tg_app of 1 to 3 arguments hashes and probes the home bucket inline,
 * in tg_app itself: no call, and no frame, since the values of the hit
 * path fit in the registers a call may clobber.  It reads only the first
 * slot whose control byte matches, without comparing pointer tags: a
 * wrong candidate (another entry of the same byte in the same bucket,
 * about 5% of lookups in a full table) is told apart by its elements
 * and its header's kind, count and flags (app_is).  Anything else (that
 * wrong candidate, a probe that goes on past the home bucket, a miss)
 * is a tail call to app_large, which looks again from the start inside
 * enter and leave, and goes on to app_on, busy all along.
 *
 * The inline look is for tables of at most SPARSE_BUCKETS buckets
 * (256 KiB), whose nodes are in the nearest caches; a larger table goes
 * to app_large at once, which compares the first candidate's high hash
 * tags before reading its node (see there).
 *
 * The inline look does not enter the table (no store to mark the
 * context busy, and none to clear it).  It only reads, and what a
 * collection that stops the thread between two of its reads can change
 * is harmless: the array and its size change only by this thread; a
 * node read from a slot is held in a register, which the collector
 * scans, so it survives; and a slot whose entry the prune removed or
 * moved after the look read the control word holds VACANT, a readable
 * header that matches no key, never 0 (term_table.h).  A hit is a node
 * compared whole, and anything else starts again busy. */

/* The header word of the chunk (head args[0] .. args[na - 1]) whose
 * finished hash mix is acc, GROUND aside: the 52-bit hash is the word's
 * top 52 bits, the mix's too. */
static inline uint64_t app_want(uint64_t acc, unsigned na)
{
    return (acc & ~(uint64_t)0xFFF) | hdr_word((tgT_hdr){TG_PAIR, 0, na + 1, 0, 0});
}
static inline tgT_hdr app_hdr(uint64_t h52, unsigned na)
{
    return (tgT_hdr){TG_PAIR, 0, na + 1, (uint32_t)h52 & 0xFFFFF, (uint32_t)(h52 >> 20)};
}

/* The miss of a short application (called busy), out of line and one
 * function per count, so that it needs no switch: app_on,
 * which probes past the first candidate, then needs no frame, and a
 * lookup that goes there (a second candidate of the same control byte
 * or an entry past its home bucket, about one lookup in ten in a full
 * table) pays for no saved registers. */
static __attribute__((noinline)) tg_term *
app_miss_slow(tg_ctx *ctx, uint64_t want, tg_term *head, unsigned na, tg_term *const *args)
{
    return intern_miss(ctx, app_hdr(want >> 12, na), head, args, TGT_NIL);
}

/* The GROUND flag of the short application (head args...), without a
 * branch per element: a small integer is read as the nil node, which is
 * ground, so that every element's flags are one load, of a header the
 * hash has just read (a branch per element cost a new node about 10
 * instructions). */
static inline __attribute__((always_inline)) uint64_t
app_ground(tg_term *head, unsigned na, tg_term *const *el)
{
    const uint64_t ground = hdr_word((tgT_hdr){0, TGT_GROUND, 0, 0, 0});
    uint64_t g = hdr_word((tgT_isfix(head) ? TGT_NIL : head)->h);
    for (unsigned k = 0; k < na; k++)
        g &= hdr_word((tgT_isfix(el[k]) ? TGT_NIL : el[k])->h);
    return g & ground;
}

/* The placement of new node t (v, its slot value at home), of hash h,
 * past its home bucket, which is full (called busy; leaves): out of
 * line, so that the usual miss saves fewer registers.  The walk goes on
 * from the bucket after home, whose line app_on fetched. */
static __attribute__((noinline)) tg_term *app_place_on(tg_ctx *ctx, tg_term *t, uintptr_t v,
                                                       uint32_t h, bucket *home)
{
    bucket *a = ctx->tab;
    size_t nb = ctx->nb, i = (size_t)(home - a);
    home->ctrl = ct_passed(home->ctrl, h);
    place_walk_from(a, nb, next_bucket(i, nb), ptag_next(v), h, 1);
    ctx->count++;
    leave(ctx);
    return t;
}

/* The usual miss: a node from the free list, below the high tag bits,
 * and room in the table; it goes into the home bucket `home` when that
 * has a free slot (about two new nodes in three), else app_place_on
 * walks on from the bucket after it.  Anything else is a tail call to
 * the general miss (intern_miss), so that this path calls nothing.
 * Each instruction here counts: a new node's home bucket misses the
 * cache, and the processor overlaps that miss with the next call's only
 * while the instructions between the two fit in its reorder window (see
 * doc/internals.md, "The new node's path and the reorder window"). */
static inline __attribute__((always_inline)) tg_term *
app_miss_body(tg_ctx *ctx, uint64_t want, tg_term *head, unsigned na, tg_term *const *args,
              bucket *home)
{
    const size_t g = (sizeof(tgT_hdr) + (na + 1) * sizeof(tg_term *) + 15) / 16;
    tg_term *t = ctx->freelist[g];
    uintptr_t mask = ctx->tagmask;
    if (__builtin_expect(t != NULL && ctx->count < ctx->limit && ((uintptr_t)t & mask) == 0 &&
                             !block_start(t), 1)) {
        uint32_t h = (uint32_t)(want >> 32);
        tg_term *el[3];     /* read once: the stores to t might alias args */
        for (unsigned k = 0; k < na; k++)
            el[k] = args[k];
        ctx->freelist[g] = GC_NEXT(t);
        uint64_t w = want | app_ground(head, na, el);
        memcpy(&t->h, &w, sizeof w);
        t->e[0] = head;
        for (unsigned k = 0; k < na; k++)
            t->e[k + 1] = el[k];
        uintptr_t v = (uintptr_t)t | (ptag(h) & mask);
        uint64_t c = home->ctrl, e = ~c & CT_SLOTS;
        if (__builtin_expect(e == 0, 0))
            return app_place_on(ctx, t, v, h, home);
        /* the slot before its byte (see retag); e's lowest bit is 8 j + 7
         * for slot j, so j times 8 is its index with the low 3 bits off */
        unsigned j8 = (unsigned)__builtin_ctzll(e) & 56;
        memcpy((char *)home->s + j8, &v, sizeof v);
        home->ctrl = c | ct_byte(h) << j8;
        ctx->count++;
        leave(ctx);
        return t;
    }
    return app_miss_slow(ctx, want, head, na, args);
}
#define APP_MISS(na)                                                                  \
    static __attribute__((noinline)) tg_term *app_miss##na(tg_ctx *ctx, uint64_t want,   \
                                                            tg_term *head,                \
                                                            tg_term *const *args,         \
                                                            bucket *home)                 \
    {                                                                                     \
        return app_miss_body(ctx, want, head, na, args, home);                            \
    }
APP_MISS(1)
APP_MISS(2)
APP_MISS(3)

/* The miss of a short application, na a constant. */
static inline __attribute__((always_inline)) tg_term *
app_miss(tg_ctx *ctx, uint64_t want, tg_term *head, unsigned na, tg_term *const *args,
         bucket *home)
{
    switch (na) {   /* constant */
    case 1: return app_miss1(ctx, want, head, args, home);
    case 2: return app_miss2(ctx, want, head, args, home);
    default: return app_miss3(ctx, want, head, args, home);
    }
}
/* The candidates of m in bucket b (called busy): the node, or NULL.
 * With `tagged` (a constant), a candidate whose slot's hash tags differ
 * from the key's is passed over without reading its node: past the
 * home bucket, a matching control byte of another hash would otherwise
 * read a random node, a miss in the cache and the TLB, to learn that
 * the key is new.  The home bucket's other candidates (app_rest) do
 * without: the two values it takes cost app_on a frame, so 4 more
 * instructions on every new node's path. */
static inline __attribute__((always_inline)) tg_term *
app_cands(tg_ctx *ctx, uint64_t want, tg_term *head, unsigned na, tg_term *const *args,
          const bucket *b, uint64_t m, int tagged)
{
    uintptr_t pt = ptag((uint32_t)(want >> 32)), tmask = ctx->tagmask & ~DISP;
    for (; m; m &= m - 1) {
        uintptr_t v = *ct_word_slot(b, m);
        if (tagged && ((v ^ pt) & tmask))
            continue;
        tg_term *c = (tg_term *)(v & ctx->ptrmask);
        if (chunk_is(c, want, head, na, args, TGT_NIL))
            return c;
    }
    return NULL;
}
/* The probe past a home bucket b whose filter says an entry of this
 * hash passed it (called busy), out of line so that the usual path
 * keeps no frame; then the miss, from the home bucket found again. */
static inline __attribute__((always_inline)) tg_term *
app_past(tg_ctx *ctx, uint64_t want, tg_term *head, unsigned na, tg_term *const *args,
         const bucket *b)
{
    uint32_t h = (uint32_t)(want >> 32);
    tg_term *c = NULL;
    while (!c && (b->ctrl & ct_filter(h))) {
        b = b + 1 == ctx->tab + ctx->nb ? ctx->tab : b + 1;
        c = app_cands(ctx, want, head, na, args, b, ct_match(b->ctrl, ct_byte(h) * CT_ONES), 1);
    }
    if (c) {
        leave(ctx);
        return c;
    }
    return app_miss(ctx, want, head, na, args, &ctx->tab[ctx_home(ctx, h)]);
}
#define APP_PAST(na)                                                                      \
    static __attribute__((noinline)) tg_term *app_past##na(tg_ctx *ctx, uint64_t want,    \
                                                           tg_term *head,                 \
                                                           tg_term *const *args,          \
                                                           const bucket *b)               \
    {                                                                                     \
        return app_past(ctx, want, head, na, args, b);                                    \
    }
APP_PAST(1)
APP_PAST(2)
APP_PAST(3)

/* The rest of the probe, after the look inside enter and leave
 * (app_large) at home bucket b found the slots m of a matching control
 * byte and compared the first of them, by its tags or its node (called
 * busy, na constant): the other candidates of b, then the buckets past
 * b only while the filter of the bucket just probed says an entry of
 * this hash passed it, so that a miss (a new node) probes nothing
 * again.  The other candidates of b are told apart by their headers,
 * without the pointer tags: this keeps the few values of
 * the probe in the registers a call may clobber, so that app_on has no
 * frame.  `want` is the chunk's header word, its hash in the top 32
 * bits. */
static inline __attribute__((always_inline)) tg_term *
app_rest(tg_ctx *ctx, uint64_t want, tg_term *head, unsigned na, tg_term *const *args,
         const bucket *b, uint64_t m)
{
    /* masks of one bit per candidate slot, 8j + 7 for slot j (see
     * ct_word_slot): the home bucket's from the lean look, where a bit
     * above the lowest may stand for a full slot of another byte, which
     * the header compare rejects; the next buckets' exact (ct_match) */
    m &= m - 1;     /* the first candidate was compared */
    if (__builtin_expect(m != 0, 0)) {
        tg_term *c = app_cands(ctx, want, head, na, args, b, m, 0);
        if (c) {
            leave(ctx);
            return c;
        }
    }
    if (__builtin_expect(!(b->ctrl & ct_filter((uint32_t)(want >> 32))), 1))
        return app_miss(ctx, want, head, na, args, (bucket *)b);     /* b is the home bucket */
    switch (na) {   /* constant */
    case 1: return app_past1(ctx, want, head, args, b);
    case 2: return app_past2(ctx, want, head, args, b);
    default: return app_past3(ctx, want, head, args, b);
    }
}

/* The probe past the first candidate, one function per count (1 to 3),
 * so that a new node's path has no switch.  On entry it fetches where a
 * miss places its node when the home bucket is full (a third of new
 * nodes, a fifth two or more buckets on), while (on a predicted path)
 * the home bucket's miss is still outstanding, rather than after it;
 * place() fetches further ahead from there.  Past the array's end the
 * second fetch harms nothing. */
#define APP_ON(na)                                                                        \
    static __attribute__((noinline)) tg_term *app_on##na(tg_ctx *ctx, uint64_t want,      \
                                                         tg_term *head,                   \
                                                         tg_term *const *args,            \
                                                         const bucket *b, uint64_t m)     \
    {                                                                                     \
        __builtin_prefetch((const char *)b + sizeof(bucket));                             \
        __builtin_prefetch((const char *)b + 2 * sizeof(bucket));                         \
        return app_rest(ctx, want, head, na, args, b, m);                                 \
    }
APP_ON(1)
APP_ON(2)
APP_ON(3)
static inline __attribute__((always_inline)) tg_term *
app_on(tg_ctx *ctx, uint64_t want, tg_term *head, unsigned na, tg_term *const *args,
       const bucket *b, uint64_t m)
{
    switch (na) {   /* constant */
    case 1: return app_on1(ctx, want, head, args, b, m);
    case 2: return app_on2(ctx, want, head, args, b, m);
    default: return app_on3(ctx, want, head, args, b, m);
    }
}

/* The constants of the lean look, read from memory through one base
 * register (lean_base) rather than each made by a 10-byte move: the
 * chunk sum's multipliers (tgT_chunk_sum) and its constant term for 1
 * to 3 arguments, the zero-byte test's two words, and the control byte
 * of each low hash byte repeated over a word (where a multiply and a
 * move into a vector register made it). */
#define CT_REP(i) ((0x80ull | (i)) * CT_ONES)
#define REP4(i) CT_REP(i), CT_REP(i + 1), CT_REP(i + 2), CT_REP(i + 3)
#define REP16(i) REP4(i), REP4(i + 4), REP4(i + 8), REP4(i + 12)
#define LEAN_C(na) ((uint64_t)TGT_NIL_HASH << 20) * TGT_KREST + (na) * TGT_KCOUNT
typedef struct {
    uint64_t k[4];          /* tgT_kpos[0..3] (test_gc checks the hashes agree) */
    uint64_t c[4];          /* c[na]: the sum's terms of () and the count */
    uint64_t ones, slots;
    uint64_t rep[128];
} lean_consts;
static const lean_consts lean_k = {
    {0x9E3779B97F4A7C15ull, 0xC2B2AE3D27D4EB4Full, 0x165667B19E3779F9ull, 0xD6E8FEB86659FD93ull},
    {0, LEAN_C(1), LEAN_C(2), LEAN_C(3)},
    CT_ONES,
    CT_SLOTS,
    {REP16(0), REP16(16), REP16(32), REP16(48), REP16(64), REP16(80), REP16(96), REP16(112)}};

/* The address of lean_k, hidden from the compiler so that it reads the
 * constants instead of building them in registers. */
static inline __attribute__((always_inline)) const lean_consts *lean_base(void)
{
    const lean_consts *k = &lean_k;
#ifdef __GNUC__
    __asm__("" : "+r"(k));
#endif
    return k;
}

/* Node c is the short application (head args...): its elements and
 * the low 12 bits of its header (kind, flags but GROUND, count), not its
 * hash, which follows from the elements.  The lean look's first
 * candidate needs no earlier reject: in a driver of bench/terms' lookups
 * among 10^3 terms the hash's compare cost 5 instructions of about 67 on
 * every hit (the header word made from the hash), 4 to 6% of the rate,
 * and a wrong candidate (one lookup in 100 there) is told apart by its
 * elements as surely, in the same line. */
static inline __attribute__((always_inline)) int
app_is(const tg_term *c, tg_term *head, unsigned na, tg_term *const *args)
{
    const uint64_t low = 0xFFF & ~hdr_word((tgT_hdr){0, TGT_GROUND, 0, 0, 0});
    if ((hdr_word(c->h) & low) != hdr_word((tgT_hdr){TG_PAIR, 0, na + 1, 0, 0}) || c->e[0] != head)
        return 0;
    unsigned k = 0;
    while (k < na && c->e[k + 1] == args[k])
        k++;
    return k == na;
}

/* The hash mix of (head args...), and the mask of the first candidate
 * of hash h in bucket b (see ct_word_slot). */
static inline __attribute__((always_inline)) uint64_t
app_mix(const lean_consts *K, tg_term *head, unsigned na, tg_term *const *args)
{
    uint64_t acc = tgT_ehash(head) * K->k[0] + K->c[na];
    for (unsigned i = 0; i < na; i++)
        acc += tgT_ehash(args[i]) * K->k[i + 1];
    return acc;
}
static inline __attribute__((always_inline)) uint64_t
app_first(const lean_consts *K, const bucket *b, uint32_t h)
{
    uint64_t ctrl = b->ctrl, x = ctrl ^ K->rep[h & 0x7F];
    return (x - K->ones) & (ctrl & K->slots);
}

/* The look of a short application in a table larger than
 * SPARSE_BUCKETS, or after the inline look failed: inside enter and
 * leave, and out of line, one function per count.  A large table is
 * larger than the nearest caches, and a new node (a miss) whose home
 * bucket holds another entry of the same control byte (one in 25 when
 * the bucket holds 5) read that entry's node, a miss in the cache and
 * the TLB, before it could go on: a third of tg_app's time when making
 * 10^6 new nodes.  So the first candidate's high hash tags (hash bits 9
 * to 25) are compared first, under leanmask (0 when the tags were
 * narrowed).  The inline look does without: it costs a hit 3
 * instructions, and a small table's nodes are cached. */
static inline __attribute__((always_inline)) tg_term *
app_large(tg_ctx *ctx, tg_term *head, unsigned na, tg_term *const *args)
{
    const lean_consts *K = lean_base();
    uint64_t acc = app_mix(K, head, na, args);
    uint32_t h = (uint32_t)(acc >> 32) ^ (uint32_t)acc;    /* the finish's top half */
    enter(ctx);
    const bucket *b = &ctx->tab[ctx_home(ctx, h)];
    uint64_t m = app_first(K, b, h);
    if (__builtin_expect(m != 0, 1)) {
        uintptr_t v = *ct_word_slot(b, m);
        const tg_term *c = (const tg_term *)(v & ctx->ptrmask);
        if (__builtin_expect(!((v ^ ptag_hi(h)) & ctx->leanmask), 1) &&
            __builtin_expect(app_is(c, head, na, args), 1)) {
            leave(ctx);
            return (tg_term *)c;
        }
    }
    return app_on(ctx, app_want(tgT_chunk_finish(acc), na), head, na, args, b, m);
}
#define APP_LARGE(na)                                                                     \
    static __attribute__((noinline)) tg_term *app_large##na(tg_ctx *ctx, tg_term *head,   \
                                                            tg_term *const *args)         \
    {                                                                                     \
        return app_large(ctx, head, na, args);                                            \
    }
APP_LARGE(1)
APP_LARGE(2)
APP_LARGE(3)
static inline __attribute__((always_inline)) tg_term *
app_again(tg_ctx *ctx, tg_term *head, unsigned na, tg_term *const *args)
{
    switch (na) {   /* constant */
    case 1: return app_large1(ctx, head, args);
    case 2: return app_large2(ctx, head, args);
    default: return app_large3(ctx, head, args);
    }
}

/* The inline look at the home bucket (1 <= na <= 3), outside enter and
 * leave, in a table of at most SPARSE_BUCKETS buckets (see above); when
 * it does not settle the lookup, app_again, or NULL if `probe` is 0 (a
 * constant: tgT_app_lean).  Written with the fallback inside, not as a
 * look that returns NULL to a caller that tests it: GCC then moved the
 * arguments between registers at the top of tg_app, one more
 * instruction on the hit path. */
static inline __attribute__((always_inline)) tg_term *
app_lean(tg_ctx *ctx, tg_term *head, unsigned na, tg_term *const *args, int probe)
{
    size_t off = ctx->leanoff;
    if (__builtin_expect(off == 0, 0))
        return probe ? app_again(ctx, head, na, args) : NULL;
    const lean_consts *K = lean_base();
    uint64_t acc = app_mix(K, head, na, args);
    uint32_t h = (uint32_t)(acc >> 32) ^ (uint32_t)acc;
    /* the arguments are read again for the compare, not kept in
     * registers, for which GCC saves and restores one on the hit path */
#ifdef __GNUC__
    __asm__("" ::: "memory");
#endif
    /* home_in(h, nb) * sizeof(bucket) (see there) */
    const bucket *b = (const bucket *)(const void *)((const char *)ctx->tab +
                                                     ((h >> LEAN_SHIFT) & off));
    uint64_t m = app_first(K, b, h);
    if (__builtin_expect(m != 0, 1)) {
        const tg_term *c = (const tg_term *)(*ct_word_slot(b, m) & ctx->ptrmask);
        if (__builtin_expect(app_is(c, head, na, args), 1))
            return (tg_term *)c;
    }
    return probe ? app_again(ctx, head, na, args) : NULL;
}

tg_term *tgT_app_lean(tg_ctx *ctx, tg_term *head, size_t n, tg_term *const *args)
{
    switch (n) {
    case 1: return app_lean(ctx, head, 1, args, 0);
    case 2: return app_lean(ctx, head, 2, args, 0);
    case 3: return app_lean(ctx, head, 3, args, 0);
    default: return NULL;
    }
}

/* A fetch of the home bucket of the node of 52-bit hash h52.  The
 * empty asm that takes the address keeps the fetch: without it GCC 12
 * at -O2 dropped it once the home came from ctx_home (tgT_fetch compiled
 * to a bare return), and the REC benchmark revnat10000 ran 1.99 s
 * against 1.55, its chains' home buckets no longer fetched ahead. */
static inline void fetch_home(const tg_ctx *ctx, uint64_t h52)
{
    const bucket *b = &ctx->tab[ctx_home(ctx, (uint32_t)(h52 >> 20))];
    __builtin_prefetch(b);
#ifdef __GNUC__
    __asm__ volatile("" ::"r"(b));
#endif
}

void tgT_fetch(const tg_ctx *ctx, uint64_t h52)
{
    fetch_home(ctx, h52);
}

tg_term *tgT_app_hashed(tg_ctx *ctx, uint64_t h52, uint64_t ahead, tg_term *head, unsigned na,
                        tg_term *const *args)
{
    fetch_home(ctx, ahead);
    /* the header made in each case, so that its count is a constant;
     * the fields as chunk_hdr sets them from the mix (acc >> 12 is h52).
     * Longer nodes are rare in chains and hashed again.  Not the lean
     * path of tg_app: a chain's nodes are mostly new, and its miss, a
     * call that starts again from the hash, took the REC rows 3 to 5%
     * more instructions (revnat1000, factorial9). */
    switch (na) {   /* the usual short chains unrolled, as in tg_app */
    case 1: return intern_hd(ctx, app_hdr(h52, 1), head, 1, args, TGT_NIL);
    case 2: return intern_hd(ctx, app_hdr(h52, 2), head, 2, args, TGT_NIL);
    default: return intern_chunk(ctx, head, na, args, TGT_NIL);
    }
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
    if (!ctx || (!name && len))
        return NULL;
    if (!name)
        name = "";      /* memcpy from NULL is undefined, even of 0 bytes */
    return intern_bytes(ctx, TG_SYMBOL, name, len);
}
tg_term *tg_symbol_cstr(tg_ctx *ctx, const char *name)
{
    if (!ctx || !name)
        return NULL;
    return intern_bytes(ctx, TG_SYMBOL, name, strlen(name));
}
tg_term *tg_string(tg_ctx *ctx, const char *bytes, size_t len)
{
    if (!ctx || (!bytes && len))
        return NULL;
    if (!bytes)
        bytes = "";
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
    if (!ctx)
        return NULL;
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

/* tg_app of no argument or more than 3 (out of line, so that tg_app
 * itself keeps no frame). */
static __attribute__((noinline)) tg_term *app_long(tg_ctx *ctx, tg_term *head, size_t n,
                                                   tg_term *const *args)
{
    if (n == 0)
        return intern_body(ctx, head, 0, args, TGT_NIL);
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

tg_term *tg_app(tg_ctx *ctx, tg_term *head, size_t n, tg_term *const *args)
{
    /* the lean path for the usual short applications, 2 arguments
     * tested first and alone (3 instructions fewer on their path) */
    if (__builtin_expect(n == 2, 1)) {
        /* one branch per test, each a test fused with its jump: GCC
         * combined the tests of head and args with two setcc and an or
         * (a partial register write that waits on the caller's last
         * result), which the empty asm between them keeps apart */
        if (__builtin_expect(!ctx, 0))
            return NULL;
        if (__builtin_expect(!head, 0))
            return NULL;
        __asm__("");
        if (__builtin_expect(!args, 0))
            return NULL;
        return app_lean(ctx, head, 2, args, 1);
    }
    if (__builtin_expect(n - 1 < 3 && ctx && head && args, 1)) {
        if (n == 1)
            return app_lean(ctx, head, 1, args, 1);
        return app_lean(ctx, head, 3, args, 1);
    }
    if (!ctx || !head || (n && !args))
        return NULL;
    return app_long(ctx, head, n, args);
}

/* ---- batched applications ---------------------------------------- */

/* Terms spread over a large table cost a cache miss for the home bucket,
 * and a single call overlaps it with few of the next calls'.  A batch
 * works in groups: hash every application of the group and fetch all
 * their home buckets (and the bucket after each), then probe them as
 * single calls would, with the lines cached.  A term not found is then
 * made as a single call makes it, from the header already computed (8%
 * faster for 10^6 new terms than hashing it again on the generic path):
 * the probe is made again, since making a term may allocate and collect,
 * so nothing found earlier is relied on across it.  A pass that also
 * fetched each candidate node before the probes (when probes were slot
 * by slot) no longer paid: 44 against 53 M/s among 10^5 terms, equal
 * when the terms are probed in random order.  Small tables, which stay
 * in the nearest caches, no longer need single probes either (10^3
 * terms: 86 M/s in groups, 82 one by one). */
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
        const bucket *b = &ctx->tab[ctx_home(ctx, hd[j].hash)];
        __builtin_prefetch(b);
        __builtin_prefetch(b + 1);
    }
    for (size_t j = 0; j < m; j++)
        out[j] = chunk_probe(ctx, hd[j], head, na, args + j * na, TGT_NIL);
    leave(ctx);
    for (size_t j = 0; j < m; j++)
        if (!out[j] && !(out[j] = intern_hd(ctx, hd[j], head, na, args + j * na, TGT_NIL)))
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

