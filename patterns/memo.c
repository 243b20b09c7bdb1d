/* memo.c - the machine's memo table (see memo.h): open addressing with
 * linear probing over entries that hold the call itself, so that the
 * usual lookup (an op of at most two arguments) costs one hash of the
 * argument pointers' hashes and one probe, and builds no term; the
 * drop heuristics, the lazy start, the bound, and the table's memory
 * (grown without two whole tables, freed blocks kept for the next).
 */
#include "memo.h"

#include <gc/gc.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <unistd.h>

tg_term tgW_memo_open_obj;

/* meta: the 32-bit hash, the argument count, and flags; USED makes an
 * occupied slot's meta non-zero.  HIT: the entry was found since the
 * table was last cut (see grow).  MOVING: an open call's entry while
 * the table grows, its nf then its place on the open stack (see grow).
 * Above them, the rewrites the call's reduction took (saturated): what
 * a hit saves. */
#define M_ATOM (1ull << 40)
#define M_WHOLE (1ull << 41)
#define M_USED (1ull << 42)
#define M_KEY ((1ull << 43) - 1)
#define M_HIT (1ull << 43)
#define M_MOVING (1ull << 44)
#define COST_SHIFT 45
#define COST_MAX ((1ull << (64 - COST_SHIFT)) - 1)

/* An op is judged when its reductions (see judge) reach FIRST_CHECK and
 * each doubling after: it is dropped when its hits saved fewer than one
 * rewrite per SAVE_RATIO lookups. */
#define FIRST_CHECK 256
#define SAVE_RATIO 8

/* An op is also judged when the calls of it that were remembered and
 * closed reach CALLS_CHECK and each doubling (see judge_calls): a tail chain counts once
 * as a reduction, but each of its calls took an entry, a lookup and a
 * close.  Judged at 256 reductions only, revnat's concatenation (chains
 * of 130 calls on average in revnat1000) was remembered for some 33
 * thousand calls before it was dropped: 64 thousand slots of table, and
 * on revnat100 (100 chains: never judged) 1.25 to 1.6 times plain's
 * time.  Calls closed, not calls looked up: a recursive op opens many
 * calls before the first closes and can be found again (fibonacci of a
 * deep numeral), and a closed chain of quicksort's comparisons is found
 * again at once (its one hit saves the chain's length). */
#define CALLS_CHECK 1024

/* The table's bound (see bound): past it the table evicts instead of
 * growing.  Where calls keep coming that are never met again, an
 * unbounded table kept every normal form alive and made each collection
 * mark them all (GBs, and runs many times slower than without memo).
 * MEMO_BYTES: 40 MB, within the 64 MB beyond twice plain's memory that
 * memo may take, with room for the normal forms the entries keep alive
 * (primecount600: some 20 MB).  Not less: quicksort1000 needs more than
 * 2^19 entries, and cut at 2^18 or 2^19 slots it recomputed what it had
 * dropped (60 times the time of the unbounded table).  It grows past
 * the bound only to hold its open calls. */
#define MEMO_BYTES ((size_t)40 << 20)

/* Tables of MAP_BYTES or more are pages mapped for them alone, so that
 * growing gives the old table's pages back as its entries move (see
 * grow); smaller ones come from malloc. */
#define MAP_BYTES ((size_t)1 << 20)

/* The slots moved between two givings back of the old table's pages. */
#define RELEASE_SLOTS 16384

/* The table's bound in slots: MEMO_BYTES, or half the collector's heap
 * when that is more.  The heap holds the terms (the normalization's,
 * and the normal forms memo keeps), so a normalization whose terms take
 * hundreds of MB, where plain's memory is as large, may keep a table in
 * proportion to it: memo's own memory stays within its terms' plus the
 * fixed 40 MB, inside twice plain's plus 64 MB.  The bound is read at
 * each growth (the heap grows as the normalization runs). */
static size_t bound(const tgW_memo *m)
{
    if (m->cap_max)
        return m->cap_max;
    size_t heap = GC_get_heap_size() / 2;
    return (heap > MEMO_BYTES ? heap : MEMO_BYTES) / sizeof(tgW_mentry);
}

/* The tables freed are kept for the next ones, zeroed, one of each size
 * from POOL_MIN_SHIFT to POOL_MAX_SHIFT slots (20 KB to 5 MB; at most
 * 10.5 MB in all), process-wide (each slot taken and given by an atomic
 * exchange), and out of the collector's sight (a root only while a
 * table).  Pages fresh from the system are zeroed on their first touch
 * by a fault that costs some microseconds here (2.8 on the machines this
 * was measured on): primecount100 grew its table through 5 MB of them
 * in each normalization, 2000 faults, as much system time as its whole
 * user time, and memo took 1.1 to 1.3 times plain's time where its
 * instructions were a quarter of plain's.  A kept table is zeroed
 * instead, some instructions per 64 bytes, and as its entries move out
 * (grow) where it was grown past.  Process-wide, as the collector keeps
 * its heap: each normalization of bench/rec runs in a fresh context and
 * rule set, and so does any program that makes one per query.  A table
 * that outgrows the largest size empties the pool (pool_drain): a
 * normalization that large pays for its pages as it did, and holds no
 * more than it did at its peak (the bound, grow). */
#define POOL_MIN_SHIFT 9
#define POOL_MAX_SHIFT 17
#define POOL_N (POOL_MAX_SHIFT - POOL_MIN_SHIFT + 1)
static _Atomic(void *) pool[POOL_N];

/* The pool's size class of a table of cap slots, -1 for none. */
static int pool_class(size_t cap)
{
    if (!cap || (cap & (cap - 1)))
        return -1;
    int s = __builtin_ctzll((unsigned long long)cap);
    return s >= POOL_MIN_SHIFT && s <= POOL_MAX_SHIFT ? s - POOL_MIN_SHIFT : -1;
}

/* A block of bytes given back to the system (malloc'd below MAP_BYTES,
 * else mapped). */
static void block_free(void *p, size_t bytes)
{
    if (!p)
        return;
    if (bytes < MAP_BYTES)
        free(p);
    else
        munmap(p, bytes);
}

/* The pool's blocks given back to the system (a table grew past them). */
static void pool_drain(void)
{
    for (int k = 0; k < POOL_N; k++)
        block_free(atomic_exchange(&pool[k], NULL),
                   ((size_t)1 << (k + POOL_MIN_SHIFT)) * sizeof(tgW_mentry));
}

/* Blocks held by the pool now, in bytes (tests). */
size_t tgW_memo_pool_bytes(void)
{
    size_t b = 0;
    for (int k = 0; k < POOL_N; k++)
        if (atomic_load(&pool[k]))
            b += ((size_t)1 << (k + POOL_MIN_SHIFT)) * sizeof(tgW_mentry);
    return b;
}

/* A table of cap slots, zeroed, registered as a collector root (its
 * keys and normal forms stay alive); NULL when out of memory. */
static tgW_mentry *table_alloc(size_t cap)
{
    size_t bytes = cap * sizeof(tgW_mentry);
    int k = pool_class(cap);
    void *p = k >= 0 ? atomic_exchange(&pool[k], NULL) : NULL;
    if (p)
        ;   /* kept zeroed */
    else if (bytes < MAP_BYTES)
        p = calloc(1, bytes);
    else if ((p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)) ==
             MAP_FAILED)
        p = NULL;
    if (p)
        GC_add_roots(p, (char *)p + bytes);
    return p;
}

/* Table e of cap slots is no longer a table: kept in the pool when
 * keep (zeroed here unless keep is FREE_ZEROED), or given back. */
enum { FREE_BACK, FREE_KEEP, FREE_ZEROED };
static void table_free(tgW_mentry *e, size_t cap, int keep)
{
    size_t bytes = cap * sizeof *e;
    GC_remove_roots(e, (char *)e + bytes);
    int k = pool_class(cap);
    if (k < 0 || keep == FREE_BACK) {
        block_free(e, bytes);
        return;
    }
    if (keep != FREE_ZEROED)
        memset(e, 0, bytes);
    block_free(atomic_exchange(&pool[k], e), bytes);   /* NULL unless another thread gave one */
}

/* The slots [from, to) of a table of cap slots are no longer read: the
 * whole pages among them go back to the system (a mapped table's that
 * the pool does not keep; they read as zeros after, and nothing reads
 * them before the table is freed). */
static void table_release(tgW_mentry *e, size_t cap, size_t from, size_t to)
{
#ifdef MADV_DONTNEED
    if (cap * sizeof *e < MAP_BYTES || pool_class(cap) >= 0)
        return;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t lo = ((uintptr_t)&e[from] + page - 1) & ~(page - 1);
    uintptr_t hi = (uintptr_t)&e[to] & ~(page - 1);
    if (hi > lo)
        (void)madvise((void *)lo, hi - lo, MADV_DONTNEED);
#else
    (void)e, (void)cap, (void)from, (void)to;
#endif
}

static inline size_t home(uint32_t h, size_t cap)
{
    return (size_t)(((uint64_t)h * cap) >> 32);
}

/* The meta word of a call: its hash, count and flags.  The hash is of
 * the pointers (terms are interned, and an entry keeps its key's terms
 * alive, so a pointer stands for one term while the table lives): no
 * load of each term's header, as the terms' own hashes took. */
static inline uint64_t key_meta(tg_term *head, int atom, uint32_t n, tg_term *const *args, int whole)
{
    uint64_t acc = (uintptr_t)head * 0x9E3779B97F4A7C15ull + n * 0x589965CC75374CC3ull +
                   (uint64_t)atom;
    if (!whole)
        for (uint32_t i = 0; i < n; i++)
            acc += (uintptr_t)args[i] * (i ? 0x165667B19E3779F9ull : 0xC2B2AE3D27D4EB4Full);
    acc = (acc ^ (acc >> 30)) * 0xBF58476D1CE4E5B9ull;
    acc = (acc ^ (acc >> 27)) * 0x94D049BB133111EBull;
    uint64_t flags = M_USED | (atom ? M_ATOM : 0) | (whole ? M_WHOLE : 0);
    return (acc >> 32) | (uint64_t)(whole ? 0 : n) << 32 | flags;
}

static inline int same(const tgW_mentry *e, uint64_t meta, tg_term *head, uint32_t n,
                       tg_term *const *args)
{
    if ((e->meta & M_KEY) != meta || e->head != head)
        return 0;
    if (meta & M_WHOLE)
        return 1;
    for (uint32_t i = 0; i < n; i++)
        if (e->a[i] != args[i])
            return 0;
    return 1;
}

/* Whether the rebuilt table keeps entry o: a known or open one, and, at
 * the size bound, an open one or one found since the last cut while
 * *budget lasts. */
static inline int keeps(const tgW_mentry *o, int evict, size_t *budget)
{
    if (o->meta & M_MOVING)     /* open (its nf is its place, 0 for the first) */
        return 1;
    if (!o->meta || !o->nf)
        return 0;
    if (!evict)
        return 1;
    if (!(o->meta & M_HIT) || !*budget)
        return 0;
    --*budget;
    return 1;
}

/* The first table emptied: only its slots taken (firstmap). */
static void clear_first(tgW_memo *m)
{
    for (size_t w = 0; w < TGW_MEMO_FIRST / 64; w++) {
        for (uint64_t b = m->firstmap[w]; b; b &= b - 1)
            memset(&m->first[64 * w + (size_t)__builtin_ctzll(b)], 0, sizeof *m->first);
        m->firstmap[w] = 0;
    }
}

/* Twice the room, the closed unknown entries dropped; at the bound the
 * same room instead, holding only the open calls and those found since
 * the last cut (as many as fill a quarter of it): the table is bounded,
 * and what is met again and again stays.  The open stack's slots follow
 * their entries.
 *
 * The entries move in slot order, and a slot's entry goes to about the
 * same place in the new table (home is monotone in the hash: twice its
 * old slot, or the same slot in a cut), so the new table's pages are
 * touched in order as the old one's are given back (table_release): at
 * no time are both tables whole in memory.  Growing from 20 to 40 MB
 * took 60 MB at once (primecount600: 83 MB in all, the limit 70). */
static int grow(tgW_memo *m)
{
    if (!m->cap) {     /* the first table: in the struct, clean */
        m->e = m->first;
        m->cap = TGW_MEMO_FIRST;
        m->used = 1;
        return 0;
    }
    size_t cap_max = bound(m);
    size_t cap = 2 * m->cap, nopen = 0, budget = 0;
    int evict = m->cap >= cap_max;
    if (cap > cap_max && !evict)
        cap = cap_max;
    if (evict) {
        for (size_t i = 0; i < m->cap; i++)
            nopen += m->e[i].meta && m->e[i].nf == TGW_MEMO_OPEN;
        budget = 4 * nopen < cap_max ? cap_max / 4 - nopen : 0;
        for (cap = cap_max; cap < 4 * nopen; cap *= 2)
            ;
        m->cuts++;
    }
    tgW_mentry *e = table_alloc(cap);
    if (!e)
        return -1;
    /* each open call's entry names its place on the open stack, so
     * that the stack follows the entry to its new slot */
    for (size_t k = 0; k < m->nopen; k++) {
        tgW_mentry *o = &m->e[m->open[k].slot];
        o->meta |= M_MOVING;
        o->nf = (tg_term *)(uintptr_t)k;
    }
    /* past the pool's sizes, the pool is emptied and the old table
     * not kept (see pool); else an old table the pool keeps is zeroed
     * as its entries move (in the cache then), the first one by its map */
    int pooled = pool_class(cap) >= 0;
    if (!pooled)
        pool_drain();
    int zero = pooled && m->e != m->first && pool_class(m->cap) >= 0;
    size_t n = 0, done = 0;
    for (size_t i = 0; i < m->cap; i++) {
        tgW_mentry *o = &m->e[i];
        if (keeps(o, evict, &budget)) {
            size_t j = home((uint32_t)o->meta, cap);
            while (e[j].meta)
                j = j + 1 == cap ? 0 : j + 1;
            e[j] = *o;
            if (evict)
                e[j].meta &= ~M_HIT;
            if (o->meta & M_MOVING) {
                m->open[(uintptr_t)o->nf].slot = j;
                e[j].nf = TGW_MEMO_OPEN;
                e[j].meta &= ~M_MOVING;
            }
            n++;
        }
        if (zero && o->meta)
            memset(o, 0, sizeof *o);
        if (i + 1 - done == RELEASE_SLOTS) {
            table_release(m->e, m->cap, done, i + 1);
            done = i + 1;
        }
    }
    if (m->e == m->first)  /* clean again, for the next normalization */
        clear_first(m);
    else
        table_free(m->e, m->cap, zero ? FREE_ZEROED : pooled ? FREE_KEEP : FREE_BACK);
    m->e = e;
    m->cap = cap;
    m->n = n;
    m->grows++;
    return 0;
}

/* The call in slot opens (op, `rewrites` so far, its arguments at `at`
 * on the value stack).  Its depth in a chain of nested calls of its op
 * (nest: 1 unless the open call below is of the same op and lies lower
 * on the stack, so that this one is made inside its reduction, not in
 * its place as a tail call is), and whether the chain is deep enough to
 * be held (deep, see tgW_memo_hold). */
static int open_push(tgW_memo *m, size_t slot, uint32_t op, unsigned long long rewrites, size_t at)
{
    if (m->nopen == m->capopen) {
        size_t cap = m->capopen ? 2 * m->capopen : 64;
        tgW_mopen *o = realloc(m->open, cap * sizeof *o);
        if (!o)
            return -1;
        m->open = o;
        m->capopen = cap;
    }
    tgW_mopen *o = &m->open[m->nopen++];
    o->slot = slot;
    o->rule = NULL;
    o->start = rewrites;
    o->skipped = m->skipped;
    o->op = op;
    o->at = (uint32_t)at;
    o->nest = o > m->open && o[-1].op == op && o[-1].at < o->at ? o[-1].nest + 1 : 1;
    m->deep = o->nest >= TGW_MEMO_NEST ? op + 1 : 0;
    return 0;
}

static tgW_mstat *stat_grow(tgW_memo *m, uint32_t op);

/* The counts of op; NULL when out of memory. */
static inline tgW_mstat *stat_of(tgW_memo *m, uint32_t op)
{
    return op < m->nstat ? &m->stat[op] : stat_grow(m, op);
}

/* stat_of for an op beyond the array: the array grown.  In malloc
 * memory (no pointers), freed at the end of the normalization: from the
 * collector, its first 3 KB cost some thousands of instructions, a tenth
 * of a short normalization's. */
static __attribute__((noinline)) tgW_mstat *stat_grow(tgW_memo *m, uint32_t op)
{
    size_t cap = m->nstat ? 2 * m->nstat : 16;
    while (cap <= op)
        cap *= 2;
    tgW_mstat *st = realloc(m->stat, cap * sizeof *st);
    if (!st)
        return NULL;
    memset(st + m->nstat, 0, (cap - m->nstat) * sizeof *st);
    m->stat = st;
    m->nstat = cap;
    return &st[op];
}

/* Whether the call is the watched one.  A call of more arguments than
 * an entry holds is compared by a hash of its arguments first, and by
 * its interned term only when that matches (-1: out of memory). */
static int watched(const tgW_memo *m, tg_ctx *ctx, tg_term *head, int atom, uint32_t n, tg_term *const *args)
{
    if (m->watch[0] != head || m->watch_n != n || m->watch_atom != atom)
        return 0;
    if (n > TGW_MEMO_INLINE) {
        if (key_meta(head, atom, n, args, 0) != m->watch_meta)
            return 0;
        tg_term *t = tg_app(ctx, head, n, args);
        return t ? t == m->watch_term : -1;
    }
    for (uint32_t i = 0; i < n; i++)
        if (m->watch[1 + i] != args[i])
            return 0;
    return 1;
}

/* A call of a dropped op (at most TGW_MEMO_INLINE arguments): 1 when it
 * is to be remembered anyway (the 2^k-th, then watched, or the watched
 * one), else 0. */
static int watch_point(tgW_memo *m, tg_ctx *ctx, tg_term *head, int atom, uint32_t n, tg_term *const *args)
{
    int w = watched(m, ctx, head, atom, n, args);
    if (w)
        return w;
    uint64_t k = ++m->skipped;
    if (k & (k - 1))
        return 0;
    m->watch[0] = head;
    for (uint32_t i = 0; i < n && i < TGW_MEMO_INLINE; i++)
        m->watch[1 + i] = args[i];
    m->watch_term = NULL;
    if (n > TGW_MEMO_INLINE) {
        if (!(m->watch_term = tg_app(ctx, head, n, args)))
            return -1;
        m->watch_meta = key_meta(head, atom, n, args, 0);
    }
    m->watch_n = n;
    m->watch_atom = atom;
    return 1;
}

/* A closed entry of a dropped op (inline key) lets its normal form and
 * its arguments go: it stays in the table, unknown, until the next
 * growth drops it, and no call matches it again (no argument is NULL),
 * so the next such call makes a new entry, as the unknown one would
 * have been reused.  Its arguments would otherwise stay alive: in
 * revnat, each call remembered at a watch point kept a reversed list of
 * thousands of cells, and the collector marked them all each time. */
static void let_go(tgW_mentry *e)
{
    e->nf = NULL;
    for (uint32_t i = 0; i < TGW_MEMO_INLINE; i++)
        e->a[i] = NULL;
}

/* The normal forms and keys of the calls of the op whose symbol is
 * head are let go: they are no longer looked up, and would keep large
 * terms alive (reversed lists, say).  Its open calls let theirs go when
 * they close. */
static void forget(tgW_memo *m, tg_term *head)
{
    for (size_t i = 0; i < m->cap; i++) {
        tgW_mentry *e = &m->e[i];
        if (e->meta && !(e->meta & M_WHOLE) && e->head == head && e->nf != TGW_MEMO_OPEN)
            let_go(e);
    }
}

/* Drop the op whose counts are st (head: its symbol, NULL for an op of
 * more arguments) when its hits saved fewer than one rewrite per
 * SAVE_RATIO lookups. */
static void verdict(tgW_memo *m, tgW_mstat *st, tg_term *head)
{
    if (st->saved * SAVE_RATIO < st->lookups) {
        st->dropped = TGW_MEMO_DROPPED;
        if (head)
            forget(m, head);
    }
}

/* Before a reduction of an op still remembered closes (its calls not
 * yet counted): the op judged when the calls of its earlier reductions
 * reached CALLS_CHECK, and again at each doubling.  Not while a chain's
 * own calls are counted: a first chain of thousands of calls would be
 * judged before any of them could be found again (quicksort's
 * comparisons: each chain is found again just after it closes). */
static inline void judge_calls(tgW_memo *m, tgW_mstat *st, tg_term *head)
{
    if (st->calls < (st->calls_next ? st->calls_next : CALLS_CHECK))
        return;
    st->calls_next = 2 * st->calls;
    verdict(m, st, head);
}

/* After a reduction of an op still remembered (a run of its calls
 * closed with one normal form, or a call passed): drop the op when its
 * hits have saved fewer than one rewrite per SAVE_RATIO lookups, judged
 * at FIRST_CHECK reductions and each doubling.
 *
 * Judged on reductions, not on lookups: a recursive op opens hundreds of
 * calls before the first one closes and can be found again (fibonacci,
 * quicksort's split), and judged on those lookups it looked useless.  A
 * run of calls closed at once with one normal form (a tail chain: a
 * Peano comparison (st (s x) (s y)) -> (st x y) closes its whole chain
 * when it ends) counts once: quicksort's comparisons are each made twice
 * (a condition, then `get`), so a chain is found again just after it
 * closes and saves its length, and counted per call the first chain of
 * 999 calls had the op dropped before its first hit. */
static void judge(tgW_memo *m, tgW_mstat *st, tg_term *head)
{
    uint64_t k = ++st->closed;
    if (k >= FIRST_CHECK && !(k & (k - 1)))
        verdict(m, st, head);
}

/* The prefix has been remembered: the lazy phase begins (memo.h).  Its
 * calls count as calls not remembered, so that a cycle report over them
 * shows "..." where their rules were. */
static void lazy_begin(tgW_memo *m)
{
    m->lazy = TGW_MEMO_LAZY;
    m->skipped += m->lazy;
}

size_t tgW_memo_enter(tgW_memo *m, tg_ctx *ctx, uint32_t op, tg_term *head, int atom, uint32_t n,
                      tg_term *const *args, size_t at, unsigned long long rewrites, tg_term **nf)
{
    int whole = n > TGW_MEMO_INLINE;
    if (m->lazy) {      /* a deferred lookup (machine.c) in the lazy phase */
        *nf = NULL;
        return TGW_MEMO_SKIP;
    }
    if (m->prefix_left && !--m->prefix_left)
        lazy_begin(m);
    tgW_mstat *st = stat_of(m, op);
    if (!st)
        return (size_t)-1;
    int counted = !st->dropped, w;     /* held ops pass as dropped ones (memo.h) */
    if (!counted && (w = watch_point(m, ctx, head, atom, n, args)) <= 0) {
        *nf = NULL;
        return w < 0 ? (size_t)-1 : TGW_MEMO_SKIP;
    }
    tg_term *sym = head;
    if (whole && !(head = tg_app(ctx, head, n, args)))
        return (size_t)-1;
    if (2 * (m->n + 1) > m->cap && grow(m) < 0)
        return (size_t)-1;
    uint64_t meta = key_meta(head, atom, n, args, whole);
    size_t i = home((uint32_t)meta, m->cap);
    for (;; i = i + 1 == m->cap ? 0 : i + 1) {
        tgW_mentry *e = &m->e[i];
        if (!e->meta) {
            if (m->e == m->first)
                m->firstmap[i / 64] |= 1ull << (i % 64);
            e->meta = meta;
            e->head = head;
            for (uint32_t k = 0; k < n && !whole; k++)
                e->a[k] = args[k];
            m->n++;
            break;
        }
        if (same(e, meta, head, n, args)) {
            if ((*nf = e->nf)) {
                e->meta |= M_HIT;
                if (counted) {
                    st->lookups++;
                    st->saved += e->meta >> COST_SHIFT;
                }
                return i;
            }
            break;
        }
    }
    (void)sym;
    st->lookups += counted;
    if (open_push(m, i, op, rewrites, at) < 0)
        return (size_t)-1;
    m->e[i].nf = TGW_MEMO_OPEN;
    *nf = NULL;
    return i;
}

void tgW_memo_pass(tgW_memo *m, uint32_t op, tg_term *head, int atom, uint32_t n, tg_term *const *args)
{
    if (m->lazy)
        return;     /* the lazy phase counts nothing */
    tgW_mstat *st = stat_of(m, op);
    if (!st)
        return;     /* the counts only steer the drop heuristics */
    if (!st->dropped) {
        st->lookups++;
        judge(m, st, head);
    }
    else if (n > TGW_MEMO_INLINE)
        m->skipped++;   /* no watch on it: a call that is its own normal form is on no cycle */
    else
        (void)watch_point(m, NULL, head, atom, n, args);
}

/* The open calls from position from on have closed: the ops held on
 * one of them (tgW_memo_hold) are remembered again, unless dropped
 * since. */
static void release(tgW_memo *m, size_t from)
{
    while (m->nheld && m->held[m->nheld - 1].anchor >= from) {
        uint32_t op = m->held[--m->nheld].op;
        if (m->stat[op].dropped == TGW_MEMO_HELD)
            m->stat[op].dropped = 0;
    }
}

void tgW_memo_close(tgW_memo *m, size_t from, tg_term *nf, unsigned long long rewrites)
{
    for (size_t k = from; k < m->nopen; k++) {
        tgW_mentry *e = &m->e[m->open[k].slot];
        unsigned long long cost = rewrites - m->open[k].start;
        uint32_t op = m->open[k].op;
        /* one reduction per run of calls of an op closed here (judge),
         * and each call counted (judge_calls); a held op's too */
        if (nf && op < m->nstat && m->stat[op].dropped != TGW_MEMO_DROPPED) {
            tgW_mstat *st = &m->stat[op];
            if (k == from || m->open[k - 1].op != op) {
                tg_term *sym = e->meta & M_WHOLE ? NULL : e->head;
                judge_calls(m, st, sym);
                if (st->dropped != TGW_MEMO_DROPPED)
                    judge(m, st, sym);
            }
            st->calls++;
        }
        /* a dropped op's normal forms and keys are not kept (see forget;
         * a call of more arguments is keyed by its term, kept until the
         * next growth or cut); a held op's are */
        if (!(op < m->nstat && m->stat[op].dropped == TGW_MEMO_DROPPED))
            e->nf = nf;
        else if (e->meta & M_WHOLE)
            e->nf = NULL;
        else
            let_go(e);
        e->meta = (e->meta & (M_KEY | M_HIT)) | (cost < COST_MAX ? cost : COST_MAX) << COST_SHIFT;
    }
    if (from < m->nopen)
        m->nopen = from;
    m->deep = 0;    /* a call closed: no hold until a deep call opens again */
    if (m->nheld)
        release(m, from);
}

/* Op's open call on top of the open stack is the TGW_MEMO_NEST-th of a
 * chain of nested calls of op, and the machine is about to make the
 * next one as a constructor level (memo.h, tgW_memo_level).  Its first such
 * chain holds the op until that call closes; at each later one the op
 * is judged first (verdict), and held if it stays.  1 when the op's
 * calls now pass (held or dropped), 0 when nothing changed (the holds'
 * stack full). */
int tgW_memo_hold(tgW_memo *m, uint32_t op)
{
    if (m->nheld == TGW_MEMO_HOLDS)
        return 0;
    tgW_mstat *st = &m->stat[op];
    if (st->holds++) {
        const tgW_mentry *e = &m->e[m->open[m->nopen - 1].slot];
        verdict(m, st, e->meta & M_WHOLE ? NULL : e->head);
        if (st->dropped)
            return 1;
    }
    m->held[m->nheld].op = op;
    m->held[m->nheld].anchor = (uint32_t)(m->nopen - 1);
    m->nheld++;
    st->dropped = TGW_MEMO_HELD;
    return 1;
}

tg_term *tgW_memo_key(const tgW_memo *m, tg_ctx *ctx, size_t slot)
{
    const tgW_mentry *e = &m->e[slot];
    if (e->meta & M_WHOLE)
        return e->head;
    if (e->meta & M_ATOM)
        return e->head;
    return tg_app(ctx, e->head, (size_t)(e->meta >> 32 & 0xff), e->a);
}

void tgW_memo_clear(tgW_memo *m)
{
    size_t cap_max = m->cap_max;
    int eager = m->eager;
    if (m->used && m->e == m->first)
        clear_first(m);
    if (m->e && m->e != m->first)
        table_free(m->e, m->cap, FREE_KEEP);
    free(m->open);
    free(m->stat);
    memset(m, 0, offsetof(tgW_memo, first));
    m->cap_max = cap_max;
    m->eager = eager;
    m->prefix_left = eager ? 0 : TGW_MEMO_PREFIX;
    m->watch_n = UINT32_MAX;
}
