/* memo.c - the machine's memo table (see memo.h): open addressing with
 * linear probing over entries that hold the call itself, so that the
 * usual lookup (an op of at most two arguments) costs one hash of the
 * argument pointers' hashes and one probe, and builds no term.
 */
#include "memo.h"

#include <gc/gc.h>
#include <string.h>

tg_term tgW_memo_open_obj;

/* meta: the 32-bit hash, the argument count, and flags; USED makes an
 * occupied slot's meta non-zero. */
#define M_ATOM (1ull << 40)
#define M_WHOLE (1ull << 41)
#define M_USED (1ull << 42)

static inline size_t home(uint32_t h, size_t cap)
{
    return (size_t)(((uint64_t)h * cap) >> 32);
}

/* The meta word of a call: its hash, count and flags. */
static uint64_t key_meta(tg_term *head, int atom, uint32_t n, tg_term *const *args, int whole)
{
    uint64_t acc = tgT_hash52(head) * 0x9E3779B97F4A7C15ull + n * 0x589965CC75374CC3ull +
                   (uint64_t)atom;
    if (!whole)
        for (uint32_t i = 0; i < n; i++)
            acc += tgT_hash52(args[i]) * (i ? 0x165667B19E3779F9ull : 0xC2B2AE3D27D4EB4Full);
    acc = (acc ^ (acc >> 30)) * 0xBF58476D1CE4E5B9ull;
    acc = (acc ^ (acc >> 27)) * 0x94D049BB133111EBull;
    uint64_t flags = M_USED | (atom ? M_ATOM : 0) | (whole ? M_WHOLE : 0);
    return (acc >> 32) | (uint64_t)(whole ? 0 : n) << 32 | flags;
}

static inline int same(const tgW_mentry *e, uint64_t meta, tg_term *head, uint32_t n,
                       tg_term *const *args)
{
    if (e->meta != meta || e->head != head)
        return 0;
    if (meta & M_WHOLE)
        return 1;
    for (uint32_t i = 0; i < n; i++)
        if (e->a[i] != args[i])
            return 0;
    return 1;
}

/* Twice the room, the closed unknown entries dropped; the open stack's
 * slots follow their entries. */
static int grow(tgW_memo *m)
{
    size_t cap = m->cap ? 2 * m->cap : 1024;
    tgW_mentry *e = GC_MALLOC(cap * sizeof *e);
    if (!e)
        return -1;
    size_t n = 0;
    for (size_t i = 0; i < m->cap; i++) {
        tgW_mentry *o = &m->e[i];
        if (!o->meta || !o->nf)
            continue;
        size_t j = home((uint32_t)o->meta, cap);
        while (e[j].meta)
            j = j + 1 == cap ? 0 : j + 1;
        e[j] = *o;
        n++;
        o->head = (tg_term *)(uintptr_t)j;     /* the old table is garbage now */
    }
    for (size_t k = 0; k < m->nopen; k++)
        m->open[k].slot = (size_t)(uintptr_t)m->e[m->open[k].slot].head;
    m->e = e;
    m->cap = cap;
    m->n = n;
    return 0;
}

static int open_push(tgW_memo *m, size_t slot)
{
    if (m->nopen == m->capopen) {
        tgW_mopen *o = tgW_grow(m->open, m->nopen, &m->capopen, m->nopen + 1, sizeof *o);
        if (!o)
            return -1;
        m->open = o;
    }
    m->open[m->nopen].slot = slot;
    m->open[m->nopen++].rule = NULL;
    return 0;
}

size_t tgW_memo_enter(tgW_memo *m, tg_ctx *ctx, tg_term *head, int atom, uint32_t n,
                      tg_term *const *args, tg_term **nf)
{
    int whole = n > TGW_MEMO_INLINE;
    if (whole && !(head = tg_app(ctx, head, n, args)))
        return (size_t)-1;
    if (2 * (m->n + 1) > m->cap && grow(m) < 0)
        return (size_t)-1;
    uint64_t meta = key_meta(head, atom, n, args, whole);
    size_t i = home((uint32_t)meta, m->cap);
    for (;; i = i + 1 == m->cap ? 0 : i + 1) {
        tgW_mentry *e = &m->e[i];
        if (!e->meta) {
            e->meta = meta;
            e->head = head;
            for (uint32_t k = 0; k < n && !whole; k++)
                e->a[k] = args[k];
            m->n++;
            break;
        }
        if (same(e, meta, head, n, args)) {
            if ((*nf = e->nf))
                return i;
            break;
        }
    }
    if (open_push(m, i) < 0)
        return (size_t)-1;
    m->e[i].nf = TGW_MEMO_OPEN;
    *nf = NULL;
    return i;
}

void tgW_memo_close(tgW_memo *m, size_t from, tg_term *nf)
{
    for (size_t k = from; k < m->nopen; k++)
        m->e[m->open[k].slot].nf = nf;
    if (from < m->nopen)
        m->nopen = from;
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
    memset(m, 0, sizeof *m);
}
