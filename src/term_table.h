/* term_table.h - the layout of the weak hash-cons table, shared by
 * term_table.c (the table's life: arrays, growth, the collector's hooks,
 * pruning, contexts) and term.c (interning, which probes and fills it).
 * Private to those two files; the rest of the library sees terms through
 * term.h.  The table is described in term_table.c and doc/internals.md.
 */
#ifndef TG_TERM_TABLE_H
#define TG_TERM_TABLE_H

#include "term.h"

#include <stdatomic.h>
#include <stdint.h>

/* Free lists refilled with GC_generic_malloc_many, by size in 16-byte
 * granules; the largest is a full chunk with its tail, which the miss path
 * of intern_chunk takes from a free list without calling the collector. */
#define TGT_CHUNK_GRANULES (((TGT_CHUNK + 2) * sizeof(void *) + 15) / 16)
#define TGT_NFREE (TGT_CHUNK_GRANULES > 6 ? TGT_CHUNK_GRANULES : 6)

struct tg_ctx {
    struct bucket *tab;     /* malloc'd or mapped, not scanned; described by its header */
    size_t nb;              /* copies of the current array's header, for the probes */
    size_t leanoff;         /* the inline look's home: see home_in; 0 in a large table */
    uint64_t hmul;          /* ctx_home's multiplier and mask */
    size_t hmask;
    uintptr_t tagmask;
    uintptr_t ptrmask;      /* ~tagmask: what a slot's pointer keeps */
    uintptr_t leanmask;     /* tagmask & TAG_HI: the tags the lean look compares (term.c) */
    struct bucket *old_tab; /* during a rebuild: the previous array */
    size_t count;
    size_t limit;           /* grow past this many entries */
    atomic_int busy;
    int untagged;           /* a collection stripped the tags of this busy table */
    unsigned long prunes;   /* bumped by each prune that removed entries */
    size_t reclaimed;       /* entries pruned; count + reclaimed were ever created */
    size_t survivors;       /* entries left by the last prune */
    int retaining;          /* the last prune found most entries alive */
    unsigned long forced;   /* prunes + 1 when this context last forced a collection */
    uint64_t next_lvar;     /* ids of runtime logic variables */
    void *freelist[TGT_NFREE + 1];
    tg_ctx *next;           /* registry of live contexts */
    void *ext;              /* a higher layer's state (tgT_ctx_set_ext) */
    void (*ext_free)(void *);
};

/* ---- buckets ------------------------------------------------------ */

/* The table is an array of 64-byte buckets: a control word and 7 slots.
 * The control word has one byte per slot, 0 when the slot is empty and
 * 0x80 | the low 7 bits of its node's hash otherwise, and in its top
 * byte the bucket's overflow record: a filter of the entries whose home
 * is this bucket or an earlier one and which were placed beyond it
 * because it was full, one bit set by each such entry, chosen by three
 * bits of its hash (made again at each prune, see there).  A probe reads
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
 * the high bits, see tgT_narrow_busy).  Bits 0 and 1 hold how many buckets
 * the entry lies beyond its home (3: three or more), bits 2 and 3 hash
 * bits 7 and 8, bits 47 to 63 hash bits 9 to 25.  A byte match is
 * confirmed on these before the node is read, so a probe dereferences
 * nearly only the node it is looking for.  The home bucket comes from the high end of the hash
 * (see home_in), the byte and tags from its low end, so entries of one
 * bucket almost never share them. */
#define BSLOTS 7
typedef struct bucket {
    uint64_t ctrl;
    uintptr_t s[BSLOTS];
} bucket;

#define CT_7F 0x7F7F7F7F7F7F7F7Full
#define CT_ONES 0x0101010101010101ull
#define CT_SLOTS 0x0080808080808080ull  /* the top bit of each slot's byte */
#define CT_OVF_SHIFT 56
#define CT_OVF_FILTER ((uint64_t)0xFF << CT_OVF_SHIFT)

/* The filter bit of hash h in an overflow byte: one of 8, by hash bits 0
 * to 2, which say nothing of the home. */
static inline uint64_t ct_filter(uint32_t h)
{
    return (uint64_t)1 << (CT_OVF_SHIFT + (h & 7));
}

/* Control word c with an entry of hash h recorded as passing its bucket. */
static inline uint64_t ct_passed(uint64_t c, uint32_t h)
{
    return c | ct_filter(h);
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

/* The lean look of short applications (term.c) finds its first
 * candidate with word operations: x = ctrl ^ the byte repeated, then
 * (x - CT_ONES) & ctrl & CT_SLOTS, whose lowest set bit, 8j + 7, marks
 * the first slot j of the byte (a borrow marks bytes only above a zero
 * byte, and only bytes of x equal to 1, never an empty slot's).  The
 * top bits of ctrl are the full slots, which is what ~x & CT_SLOTS
 * stood for (an empty slot's byte of x is the wanted byte, top bit
 * set; a full slot's has it clear): ctrl & CT_SLOTS waits for the load
 * only, not for the xor, one operation fewer after it.  The slot
 * marked by the lowest set bit of such a mask (m != 0): */
static inline const uintptr_t *ct_word_slot(const struct bucket *b, uint64_t m)
{
#if UINTPTR_MAX > 0xffffffffu
    /* slot j lies 8j + 8 bytes into the bucket: the bit's index + 1 */
#if defined(__GNUC__) && defined(__x86_64__)
    uint64_t r;
    __asm__("rep bsfq %1, %0" : "=r"(r) : "r"(m) : "cc");
#else
    uint64_t r = (uint64_t)__builtin_ctzll(m);
#endif
    return (const uintptr_t *)(const void *)((const char *)b + r + 1);
#else
    return &b->s[ct_slot(m)];
#endif
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

/* Hash bits 9 to 25 in bits 47 to 63, the high tags (junk below). */
static inline uintptr_t ptag_hi(uint32_t h)
{
#if TAG_WIDE
    return (uintptr_t)h << (TAG_HI_SHIFT - 9);
#else
    (void)h;
    return 0;
#endif
}

/* The pointer tag of hash h at home (displacement 0).  Bits outside the
 * tag mask are junk: a probe compares under the mask, and place() masks. */
static inline uintptr_t ptag(uint32_t h)
{
#if TAG_WIDE
    return ptag_hi(h) | (h >> 5 & 12);
#else
    return h >> 5 & 12;
#endif
}
/* The tag expected one bucket further on. */
static inline uintptr_t ptag_next(uintptr_t pt)
{
    return pt + ((pt & DISP) != DISP);
}

/* The largest table that keeps to a sparse load (term_table.c), small
 * enough to stay in the nearest caches (256 KiB). */
#define SPARSE_BUCKETS ((size_t)1 << 12)

/* The home bucket of hash h among nb.  A table of more than
 * SPARSE_BUCKETS buckets reduces by multiply-shift, (h * nb) >> 32: any
 * number of buckets, not only powers of 2, so that it can grow by less
 * than 2x and stay dense, and homes monotonic in the hash, which the
 * rebuild's reconstruction of hashes uses.  A smaller table has a power
 * of 2 of buckets and takes hash bits 20 and up, (h >> 20) & (nb - 1),
 * the top bits when nb is SPARSE_BUCKETS: the inline look of term.c
 * then finds the bucket's byte offset as (h >> 14) & leanoff, two
 * operations and two cycles from the hash where the multiply, its shift
 * and the scaling took four and five (doc/internals.md, "The home of a
 * small table"). */
#define SMALL_HOME_SHIFT 20
static inline size_t home_in(uint32_t h, size_t nb)
{
    if (nb <= SPARSE_BUCKETS)
        return (h >> SMALL_HOME_SHIFT) & (nb - 1);
    return (size_t)(((uint64_t)h * nb) >> 32);
}
#define LEAN_SHIFT (SMALL_HOME_SHIFT - 6)   /* the offset of bucket home_in(h, nb), 64 bytes each */
_Static_assert(SPARSE_BUCKETS <= (size_t)1 << (32 - SMALL_HOME_SHIFT), "a small table's home bits");

/* home_in(h, ctx->nb) without its branch, for the probes of term.c:
 * ((h * hmul) >> 32) & hmask, where hmul is 2^(32 - SMALL_HOME_SHIFT)
 * and hmask nb - 1 in a table of at most SPARSE_BUCKETS buckets, and
 * hmul is nb and hmask all ones in a larger one (set with the table's
 * size).  The branch on the size cost the REC benchmark revnat1000 0.9%
 * more instructions. */
static inline size_t ctx_home(const tg_ctx *ctx, uint32_t h)
{
    return (size_t)(((uint64_t)h * ctx->hmul) >> 32) & ctx->hmask;
}

/* Bucket arrays.  A 64-byte header before each array describes it (its
 * tag mask and its number of buckets), so that the collector's hooks can
 * untag and retag an array whatever state a rebuild has reached.  A large
 * array is mapped directly, starting on a 2 MiB boundary, and asks for
 * transparent huge pages: a random probe into a table of many megabytes
 * then costs no TLB miss, and growing it takes a few page faults instead
 * of one per 4 KiB (zeroing is the kernel's). */
static inline uintptr_t tbl_tagmask(const bucket *a)
{
    return a[-1].s[0];
}
static inline size_t tbl_nb(const bucket *a)
{
    return a[-1].s[1];
}

/* What a prune leaves in the slot of an entry it removed or moved:
 * an object that is no node of the table, not 0, so that a lookup
 * which read the bucket's control word before a collection stopped it
 * and reads the slot after finds a readable header that matches no key
 * (the lean look of term.c reads the table without entering, see
 * there).  A slot is empty when its control byte is; its word is then
 * 0 or VACANT. */
struct tgT_vacant {
    tgT_hdr h;
    tg_term *e[4];
};
extern const struct tgT_vacant tgT_vacant;
#define VACANT ((uintptr_t)&tgT_vacant)

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

static inline size_t next_bucket(size_t i, size_t nb)
{
    return i + 1 == nb ? 0 : i + 1;
}

/* Put v, the pointer to a node of hash h with its hash tags (and no
 * displacement), in the first bucket from its home that has a free slot,
 * setting its filter bit in the overflow record of each full bucket it
 * passes.  The slot is stored before its control byte (see retag).
 * `ahead` (a constant) has each full bucket fetch the second and third
 * after it (see place).  place_walk_from starts at bucket i, v's
 * displacement counted up to there. */
static inline __attribute__((always_inline)) void
place_walk_from(bucket *a, size_t nb, size_t i, uintptr_t v, uint32_t h, int ahead)
{
    for (;;) {
        uint64_t c = a[i].ctrl, e = ~c & CT_SLOTS;
        if (__builtin_expect(e != 0, 1)) {
            unsigned j = ct_slot(e);
            a[i].s[j] = v;
            a[i].ctrl = c | ct_byte(h) << (8 * j);
            return;
        }
        if (ahead) {    /* past the array's end these fetch nothing, and harm nothing */
            __builtin_prefetch((const char *)&a[i] + 2 * sizeof(bucket));
            __builtin_prefetch((const char *)&a[i] + 3 * sizeof(bucket));
        }
        a[i].ctrl = ct_passed(c, h);
        v = ptag_next(v);
        i = next_bucket(i, nb);
    }
}
static inline __attribute__((always_inline)) void
place_walk(bucket *a, size_t nb, uintptr_t v, uint32_t h, int ahead)
{
    place_walk_from(a, nb, home_in(h, nb), v, h, ahead);
}

/* The rebuild's placement, which fetches the new array's lines ahead of
 * its own. */
static inline void place_tagged(bucket *a, size_t nb, uintptr_t v, uint32_t h)
{
    place_walk(a, nb, v, h, 0);
}

/* The same for v, the untagged pointer: the placement of a miss.  Over a
 * growth cycle (load 0.58 to 0.875) about a third of new entries find
 * their home bucket full and a fifth go two or more buckets on, through
 * lines that are in no cache.  The probe fetched the bucket after home
 * (the short applications' miss, app_on in term.c, the two after it),
 * and each full bucket met here fetches the second and third after it,
 * so that a walk does not wait for its buckets one at a time. */
static inline void place(bucket *a, size_t nb, uintptr_t mask, uintptr_t v, uint32_t h)
{
    place_walk(a, nb, v | (ptag(h) & mask), h, 1);
}

/* The collector kind of term nodes (term_table.c sets it up). */
extern int tgT_term_kind;

/* Grow the table by 3/2, or give up its high tag bits (both inside
 * enter/leave); 0, or -1 when out of memory (the table is then as it
 * was). */
int tgT_grow(tg_ctx *ctx);
int tgT_narrow_busy(tg_ctx *ctx);

/* The table is at its load limit (called not busy): collect or grow.
 * Returns -1 only when out of memory with the table full. */
int tgT_make_room(tg_ctx *ctx);

/* Collection pacing (term_table.c): while the prunes of a collection
 * find fewer than one entry in PACE_DEAD_DEN dead over at least PACE_MIN
 * entries, the collector's free-space divisor is PACE_GROWING instead of
 * its usual PACE_USUAL. */
#define PACE_MIN ((size_t)1 << 17)
#define PACE_DEAD_DEN 8
#define PACE_GROWING 1
#define PACE_USUAL 3

/* The collector floor that TGREL_GC_FLOOR text s asks for, or 0. */
size_t tgT_gc_floor(const char *s);

#endif
