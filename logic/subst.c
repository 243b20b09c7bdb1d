/* subst.c - a persistent map from 64-bit keys (variable ids) to values:
 * a bitmap-compressed trie consuming 3 key bits per level, least
 * significant first, so the sequential ids of variables spread evenly and
 * a map of n bindings is about log8(n) levels deep.  An update copies
 * one node per level; everything else is shared with the old map.
 *
 * Nodes are narrow because an update copies a whole node per level: with
 * eight one-word entries a node is at most 72 bytes, which the term
 * allocator serves from its free lists, and the path copied by one update
 * in a map of a few hundred bindings is about a fifth of what 32-way nodes
 * with inline (key, value) pairs cost.  A node holds, for each set bit of
 * its bitmap, one word: a child node, or (bit also set in `leaves`) a
 * leaf record (key, value), which map versions share.  Entries are plain
 * pointers, so the collector needs no interior-pointer recognition.
 */
#include "subst.h"

#include <gc/gc.h>
#include <string.h>

char tgS_mapped_mark;

struct tgS_map {
    uint8_t bitmap;         /* which of the 8 entries exist */
    uint8_t leaves;         /* which existing entries are leaves */
    uint8_t pad[6];
    uintptr_t e[];
};

typedef struct leaf {
    uint64_t key;
    void *val;
} leaf;

#define BITS 3
#define FAN (1u << BITS)

/* Set bits of bytes, for the index of an entry (no popcnt on the
 * baseline x86-64). */
static const uint8_t pc8[256] = {
#define B2(n) n, n + 1, n + 1, n + 2
#define B4(n) B2(n), B2(n + 1), B2(n + 1), B2(n + 2)
#define B6(n) B4(n), B4(n + 1), B4(n + 1), B4(n + 2)
    B6(0), B6(1), B6(1), B6(2)
#undef B2
#undef B4
#undef B6
};

static inline unsigned index_of(const tgS_map *m, unsigned bit)
{
    return pc8[m->bitmap & (bit - 1)];
}

void *tgS_map_get(const tgS_map *m, uint64_t key)
{
    for (uint64_t k = key; m; k >>= BITS) {
        unsigned bit = 1u << (k & (FAN - 1));
        if (!(m->bitmap & bit))
            return NULL;
        uintptr_t e = m->e[index_of(m, bit)];
        if (m->leaves & bit) {
            const leaf *l = (const leaf *)e;
            return l->key == key ? l->val : NULL;
        }
        m = (const tgS_map *)e;
    }
    return NULL;
}

static tgS_map *node_new(tg_ctx *ctx, unsigned entries)
{
    return tgT_alloc(ctx, sizeof(tgS_map) + entries * sizeof(uintptr_t));
}

/* A copy of m (NULL: empty) with entry `bit` added at index i. */
static tgS_map *copy_insert(tg_ctx *ctx, const tgS_map *m, unsigned bit, unsigned i,
                            uintptr_t e, int is_leaf)
{
    unsigned n = m ? pc8[m->bitmap] : 0;
    tgS_map *c = node_new(ctx, n + 1);
    if (!c)
        return NULL;
    memset(c, 0, sizeof *c);
    c->bitmap = (uint8_t)((m ? m->bitmap : 0) | bit);
    c->leaves = (uint8_t)((m ? m->leaves : 0) | (is_leaf ? bit : 0));
    if (i)
        memcpy(c->e, m->e, i * sizeof(uintptr_t));
    c->e[i] = e;
    if (n > i)
        memcpy(c->e + i + 1, m->e + i, (n - i) * sizeof(uintptr_t));
    return c;
}

/* A copy of m with entry `bit` (at index i) replaced. */
static tgS_map *copy_replace(tg_ctx *ctx, const tgS_map *m, unsigned bit, unsigned i,
                             uintptr_t e, int is_leaf)
{
    unsigned n = pc8[m->bitmap];
    tgS_map *c = node_new(ctx, n);
    if (!c)
        return NULL;
    memcpy(c, m, sizeof *c + n * sizeof(uintptr_t));
    c->leaves = (uint8_t)(is_leaf ? m->leaves | bit : m->leaves & ~bit);
    c->e[i] = e;
    return c;
}

/* A node at shift sh holding two leaves whose keys differ; recursion
 * depth is bounded by the key width. */
static tgS_map *two_leaves(tg_ctx *ctx, const leaf *l1, const leaf *l2, unsigned sh)
{
    unsigned c1 = (l1->key >> sh) & (FAN - 1), c2 = (l2->key >> sh) & (FAN - 1);
    if (c1 == c2) {
        tgS_map *sub = two_leaves(ctx, l1, l2, sh + BITS);
        return sub ? copy_insert(ctx, NULL, 1u << c1, 0, (uintptr_t)sub, 0) : NULL;
    }
    tgS_map *c = node_new(ctx, 2);
    if (!c)
        return NULL;
    memset(c, 0, sizeof *c);
    c->bitmap = c->leaves = (uint8_t)((1u << c1) | (1u << c2));
    c->e[c1 > c2] = (uintptr_t)l1;
    c->e[c1 < c2] = (uintptr_t)l2;
    return c;
}

/* Recursion depth is bounded by the key width (22 levels). */
static tgS_map *set_at(tg_ctx *ctx, const tgS_map *m, const leaf *lf, unsigned sh)
{
    unsigned bit = 1u << ((lf->key >> sh) & (FAN - 1));
    if (!m || !(m->bitmap & bit))
        return copy_insert(ctx, m, bit, m ? index_of(m, bit) : 0, (uintptr_t)lf, 1);
    unsigned i = index_of(m, bit);
    tgS_map *sub;
    if (m->leaves & bit) {
        const leaf *old = (const leaf *)m->e[i];
        if (old->key == lf->key)
            return copy_replace(ctx, m, bit, i, (uintptr_t)lf, 1);
        sub = two_leaves(ctx, old, lf, sh + BITS);
    } else {
        sub = set_at(ctx, (const tgS_map *)m->e[i], lf, sh + BITS);
    }
    return sub ? copy_replace(ctx, m, bit, i, (uintptr_t)sub, 0) : NULL;
}

tgS_map *tgS_map_set(tg_ctx *ctx, const tgS_map *m, uint64_t key, void *val)
{
    leaf *lf = tgT_alloc(ctx, sizeof *lf);
    if (!lf)
        return NULL;
    lf->key = key;
    lf->val = val;
    return set_at(ctx, m, lf, 0);
}

tgS_state *tgS_state_new(tg_ctx *ctx, uint64_t scope, tgS_map *S, tgS_map *C)
{
    tgS_state *st = tgT_alloc(ctx, sizeof *st);
    if (st) {
        st->tag = TGS_STATE;
        st->pad = 0;
        st->scope = scope;
        st->S = S;
        st->C = C;
    }
    return st;
}
