/* term.h - internal layout of terms and fast inline accessors.
 *
 * Every term but a small integer is a collector-allocated node that starts
 * with an 8-byte header (kind, flags, element count, 32-bit hash).  Small
 * integers are immediate: (v << 1) | 1.
 *
 * Lists are "chunked cons cells": a pair node holds 1..TGT_CHUNK elements
 * followed by the rest of the list.  Chunk boundaries are counted from the
 * end of the list (every chunk but the first holds exactly TGT_CHUNK
 * elements), which makes the representation of a list value unique, so
 * hash-consing stays canonical whichever way the list was built, while an
 * application of a few arguments is one node with its arguments in an
 * array (O(1) access).  The rest of the list is stored after the elements
 * only when it is not () (flag TGT_HASTAIL); so (f a b) takes 32 bytes.
 */
#ifndef TG_TERM_H
#define TG_TERM_H

#include "tgrel.h"
#include <stdbool.h>
#include <string.h>

#ifndef TGT_CHUNK
#define TGT_CHUNK 8         /* at most 15: the header has 4 bits for it */
#endif

enum {
    TGT_GROUND = 1,     /* no variable inside */
    TGT_HASTAIL = 2,    /* pair: e[n] holds the rest of the list */
    TGT_LVAR = 4        /* var: a runtime logic variable (tgT_lvar) */
};

/* A node's hash has 52 bits: `hash`, which tg_hash returns and the
 * table uses, and 20 more in `hash_hi`.  A chunk's hash is a function of
 * its elements' 52-bit hashes; along a chain (s (s (s ...))) iterating
 * one function on 32 bits would fall into a cycle after about 2^16 steps
 * (and lookups would turn quadratic), on 52 bits only after about 2^26.
 * Nodes other than chunks leave hash_hi 0. */
typedef struct tgT_hdr {
    uint32_t kind : 4;      /* tg_kind; TG_INT here means a GMP integer */
    uint32_t flags : 4;
    uint32_t n : 4;         /* pairs: elements in this chunk */
    uint32_t hash_hi : 20;
    uint32_t hash;
} tgT_hdr;

struct tg_term {        /* pairs */
    tgT_hdr h;
    tg_term *e[];
};

typedef struct tgT_bytes {  /* symbols and strings */
    tgT_hdr h;
    size_t len;
    char s[];               /* len bytes and a NUL */
} tgT_bytes;

typedef struct tgT_var {
    tgT_hdr h;
    tg_term *name;          /* a symbol */
    uint64_t id;
} tgT_var;

/* A logic variable made by the search (fresh, run): unique by
 * construction, so it is never looked up in the table.  `val` and `scope`
 * are the one mutable part of the term world: the logic core binds a
 * variable in place when no search branch can have seen it (see
 * logic/subst.c).  Its id comes from a per-context counter, so it never
 * equals another runtime variable's. */
typedef struct tgT_lvar {
    tgT_hdr h;
    tg_term *name;          /* the identifier it was made for (a symbol) */
    uint64_t id;
    tg_term *val;           /* NULL: unbound (or bound in a substitution) */
    uint64_t scope;
} tgT_lvar;

typedef struct tgT_dbl {
    tgT_hdr h;
    double v;
} tgT_dbl;

typedef struct tgT_big {    /* integers beyond the immediate range */
    tgT_hdr h;
    int64_t size;           /* GMP convention: sign is the sign of the value */
    mp_limb_t d[];
} tgT_big;

typedef struct tgT_rat {    /* numerator limbs, then denominator limbs */
    tgT_hdr h;
    int32_t nsize;          /* signed */
    int32_t dsize;          /* > 0 */
    mp_limb_t d[];
} tgT_rat;

#define TGT_FIXMAX (((int64_t)1 << 61) - 1)
#define TGT_FIXMIN (-((int64_t)1 << 61))

static inline bool tgT_isfix(const tg_term *t) { return ((uintptr_t)t & 1) != 0; }
static inline int64_t tgT_fixval(const tg_term *t) { return (int64_t)(intptr_t)t >> 1; }
static inline tg_term *tgT_mkfix(int64_t v) {
    return (tg_term *)(intptr_t)(int64_t)((uint64_t)v << 1 | 1);
}

static inline tg_kind tgT_kind(const tg_term *t) {
    return tgT_isfix(t) ? TG_INT : (tg_kind)t->h.kind;
}
static inline bool tgT_ispair(const tg_term *t) {
    return !tgT_isfix(t) && t->h.kind == TG_PAIR;
}

extern tg_term tgT_nilobj;
#define TGT_NIL (&tgT_nilobj)

/* The rest of the list after the elements of this chunk. */
static inline tg_term *tgT_rest(const tg_term *p) {
    return (p->h.flags & TGT_HASTAIL) ? p->e[p->h.n] : TGT_NIL;
}

/* The high half of a product with an odd constant: one multiply, and no
 * structured collisions (folding the two halves with xor gave -j and
 * j - 1 the same hash). */
static inline uint32_t tgT_fixhash(int64_t v) {
    return (uint32_t)(((uint64_t)v * 0x9E3779B97F4A7C15ull) >> 32);
}
static inline uint32_t tgT_hash(const tg_term *t) {
    return tgT_isfix(t) ? tgT_fixhash(tgT_fixval(t)) : t->h.hash;
}
/* The 52-bit hash, hash << 20 | hash_hi (a small integer's is its
 * 32-bit hash). */
static inline uint64_t tgT_hash52(const tg_term *t) {
    if (tgT_isfix(t))
        return tgT_fixhash(tgT_fixval(t));
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    /* the bit-fields from the low end, as GCC and Clang lay them out
     * here: one load and a shift */
    uint64_t w;
    memcpy(&w, &t->h, sizeof w);
    return w >> 12;
#else
    return (uint64_t)t->h.hash << 20 | t->h.hash_hi;
#endif
}
/* What element t contributes to the hash of a chunk (see tgT_kpos): its
 * 52-bit hash, but for a small integer its tagged word itself, which the
 * chunk's product and finish spread (tgT_chunk_finish) without the
 * multiply of the word's own mix (tgT_fixhash) on the path of every
 * application of a number. */
static inline uint64_t tgT_ehash(const tg_term *t) {
    if (tgT_isfix(t))
        return (uint64_t)(uintptr_t)t;
    return tgT_hash52(t);
}
static inline bool tgT_ground(const tg_term *t) {
    return tgT_isfix(t) || (t->h.flags & TGT_GROUND);
}

static inline bool tgT_islvar(const tg_term *t) {
    return !tgT_isfix(t) && t->h.kind == TG_VAR && (t->h.flags & TGT_LVAR);
}

/* Collector memory of the given size, scanned for pointers, from the
 * context's free lists: exact-size (GC_malloc would pad it past the next
 * 16-byte step) and without a thread-local lookup.  The collector clears
 * memory when it sweeps, but callers still set every word they read.  The
 * logic core allocates its states and streams here. */
void *tgT_alloc(tg_ctx *ctx, size_t bytes);

/* A new runtime logic variable named after the symbol `name`. */
tg_term *tgT_lvar_new(tg_ctx *ctx, tg_term *name, uint64_t scope);

/* Two 32-bit hashes mixed into one (variables, rationals).  Chunks hash
 * their elements in one sum of products instead (chunk_hdr in term.c):
 * a list value has one chunking, so its hash need not be a fold. */
static inline uint32_t tgT_mix(uint32_t a, uint32_t b) {
    uint64_t x = ((uint64_t)a << 32 | b) * 0x9E3779B97F4A7C15ull;
    x ^= x >> 29;
    x *= 0xBF58476D1CE4E5B9ull;
    return (uint32_t)(x >> 32);
}

/* The next element, or NULL at the end (it->node is then the final
 * tail).  Inline because printers and walkers touch every element. */
static inline tg_term *tgT_iter_next(tg_iter *it) {
    while (tgT_ispair(it->node)) {
        if (it->i < it->node->h.n)
            return it->node->e[it->i++];
        it->node = tgT_rest(it->node);
        it->i = 0;
    }
    return NULL;
}

/* The hash of a chunk (the head, its arguments and its rest, which
 * tg_app and tgT_chunk intern): element i (the head is element 0)
 * contributes tgT_ehash(e_i) * tgT_kpos[i], the rest and the count their
 * own terms, and a finish (tgT_chunk_finish) folds the sum, whose top 52
 * bits are then the hash.  The products are independent, so the hash of a short
 * application costs about one multiply of latency per element fewer
 * than a fold of mixes would.  Here (not in term.c) so that the
 * rewriting machine can find the hashes of nodes it will build. */
static const uint64_t tgT_kpos[15] = {
    0x9E3779B97F4A7C15ull, 0xC2B2AE3D27D4EB4Full, 0x165667B19E3779F9ull, 0xD6E8FEB86659FD93ull,
    0xFF51AFD7ED558CCDull, 0xC4CEB9FE1A85EC53ull, 0xA0761D6478BD642Full, 0xE7037ED1A0B428DBull,
    0xF4524517B84B2607ull, 0x46FCD802F9C7E095ull, 0x453214468BEDDF91ull, 0x8ACC20AC82F722DFull,
    0xCBD0989A0B09659Bull, 0xF91BE2EDDA15B6F3ull, 0x1CF681E501B54559ull};
_Static_assert(TGT_CHUNK <= 15, "one multiplier per element of a chunk");
#define TGT_KREST 0x8EBC6AF09C88C6E3ull
#define TGT_KCOUNT 0x589965CC75374CC3ull
#define TGT_NIL_HASH 0x6e696c21u

/* The finish: the low half of the sum folded into its high half by xor
 * (the 32-bit hash is hi ^ lo), the 20 bits below it (hash_hi) the sum's
 * bits 12 to 31.  The products carry every bit of an element into the
 * high half, and the xor of the two halves, which carry differently,
 * breaks up the lattices that sums of products over grids of small
 * integers make (a plain sum's top bits put such terms of one bucket
 * on equal control bytes 8 times as often as random hashes).  Two
 * operations on the path of every lookup, where the previous two rounds
 * of xor-shift-multiply took eight and made a lookup among 10^3 terms
 * about 1.2 times slower; bucket loads, control bytes and chain cycles
 * measured as random hashes' (doc/internals.md, "A two-operation
 * finish"). */
static inline uint64_t tgT_chunk_finish(uint64_t acc)
{
    return acc ^ (acc << 32);
}

/* The sum of products of the chunk (head args[0] .. args[na-1] . rest)
 * before its finishing mix, with the terms of its first k arguments
 * only (k <= na; the caller adds the others). */
static inline __attribute__((always_inline)) uint64_t
tgT_chunk_sum(tg_term *head, unsigned na, unsigned k, tg_term *const *args, tg_term *rest)
{
    /* () is the usual rest: its fields as constants */
    uint64_t acc = tgT_ehash(head) * tgT_kpos[0] +
                   (rest != TGT_NIL ? tgT_ehash(rest) : (uint64_t)TGT_NIL_HASH << 20) * TGT_KREST +
                   na * TGT_KCOUNT;
    for (unsigned i = 0; i < k; i++)
        acc += tgT_ehash(args[i]) * tgT_kpos[i + 1];
    return acc;
}

/* The 52-bit hash of the application (head args[0] .. args[na-2] x),
 * x any element whose tgT_ehash is `last` (1 <= na < TGT_CHUNK): the
 * hash tg_app will compute, found without the table.  The rewriting
 * machine computes the hashes of nodes it is about to build one after
 * the other, each an element of the next (see "constructor chains" in
 * machine.c). */
static inline __attribute__((always_inline)) uint64_t
tgT_app_hash(tg_term *head, unsigned na, tg_term *const *args, uint64_t last)
{
    return tgT_chunk_finish(tgT_chunk_sum(head, na, na - 1, args, TGT_NIL) + last * tgT_kpos[na]) >>
           12;
}

/* tg_app of (head args[0] .. args[na-1]), 1 <= na < TGT_CHUNK, whose
 * 52-bit hash h52 tgT_app_hash has computed: the build of a constructor
 * chain's node, without hashing it again.  It also fetches the home
 * bucket of the node of hash `ahead`, to be built soon, so that its
 * cache miss overlaps this build (the node's own hash when there is none
 * to name). */
tg_term *tgT_app_hashed(tg_ctx *ctx, uint64_t h52, uint64_t ahead, tg_term *head, unsigned na,
                        tg_term *const *args);

/* A fetch of the home bucket of the node of 52-bit hash h52 alone. */
void tgT_fetch(const tg_ctx *ctx, uint64_t h52);

/* One canonical chunk: m elements (1..TGT_CHUNK) and the rest, which must
 * not be a pair unless it is a full chunk. */
tg_term *tgT_chunk(tg_ctx *ctx, unsigned m, tg_term *const *e, tg_term *rest);

/* Build (e[0] .. e[n-1] . rest), n >= 1, in its canonical chunks, where
 * rest is not a pair or is a full chunk (term_list.c). */
tg_term *tgT_build_chunks(tg_ctx *ctx, size_t n, tg_term *const *e, tg_term *rest);

/* The interned integer of GMP limbs d with GMP's signed size (beyond
 * the immediate range), and the rational of normalized numerator and
 * denominator limbs (denominator > 1); NULL when out of memory. */
tg_term *tgT_big_intern(tg_ctx *ctx, int64_t size, const mp_limb_t *d);
tg_term *tgT_rat_intern(tg_ctx *ctx, int32_t ns, const mp_limb_t *nd, int32_t ds,
                        const mp_limb_t *dd);

/* -1, 0 or 1: the order of two number terms (term_num.c; see tg_compare). */
int tgT_num_cmp(const tg_term *a, const tg_term *b);

/* Make the context's table keep hash tags in the low pointer bits only,
 * as it does by itself when a node lies above the addresses the high tag
 * bits assume; for tests of that path. */
void tgT_narrow(tg_ctx *ctx);

/* Whether a long computation should stop as out of memory: under a heap
 * limit (tg_set_max_heap), the heap has grown near it and, after a
 * collection, more than three quarters of it is still in use.  Polled
 * by the rewriting machine and the logic search at their interrupt
 * checks, so that a runaway computation fails while the collector
 * still has room to work: with the heap exhausted, parts of the
 * abandoned data could stay marked and the session would not recover. */
int tgT_heap_tight(void);

/* The heap limit of tg_set_max_heap, 0 for none. */
size_t tgT_max_heap(void);

/* Called when an allocation has failed (an "out of memory" error, or a
 * term the table could not make): makes the collector's next failing
 * allocation collect before it gives up (term_table.c). */
void tgT_alloc_failed(void);

/* Mark the context as in the middle of a table operation (on) or not,
 * as a thread stopped there would leave it for a collection started by
 * another thread; for tests of that path. */
void tgT_busy(tg_ctx *ctx, int on);

/* Check the invariants of the context's table: every entry's control
 * byte and pointer tag agree with its node's hash and its place, the
 * entry count is right, and each bucket's overflow filter holds exactly
 * the bits of the entries whose probe passes it.  Returns NULL, or a
 * description of the first violation; for tests. */
const char *tgT_table_check(const tg_ctx *ctx);

/* The sum over the context's table entries of how many buckets each
 * lies beyond its home; for tests of the prune, which moves survivors
 * back towards their homes. */
size_t tgT_table_displacement(const tg_ctx *ctx);

/* How many of the context's table entries lie 0, 1, 2, and 3 or more
 * buckets beyond their homes, as their slots say; for tests of the
 * rebuild, which finds each entry's hash from its displacement. */
void tgT_table_disp_counts(const tg_ctx *ctx, size_t counts[4]);

/* For the tests: what tg_app's inline look at the home bucket finds of
 * (head args[0] .. args[n-1]), 1 <= n <= 3, without the probe that
 * follows it when it finds nothing (NULL). */
tg_term *tgT_app_lean(tg_ctx *ctx, tg_term *head, size_t n, tg_term *const *args);

/* A slot of the context for the state a higher layer keeps per context
 * (the kernels' shared variables), so that this layer knows nothing of
 * it: free_fn(ext) runs when the context is freed.  NULL until set. */
void *tgT_ctx_ext(const tg_ctx *ctx);
void tgT_ctx_set_ext(tg_ctx *ctx, void *ext, void (*free_fn)(void *));

#endif
