/* subst.c - a persistent map from 64-bit keys (variable ids) to values:
 * a bitmap-compressed trie consuming 5 key bits per level, least
 * significant first, so the sequential ids of variables spread evenly and
 * a map of n bindings is about log32(n) levels deep.  An update copies
 * one node per level; everything else is shared with the old map.
 *
 * A node holds, for each set bit of its bitmap, two words: a leaf
 * (key << 1 | 1, value) or a child (node pointer, 0).
 */
#include "subst.h"

#include <gc/gc.h>
#include <string.h>

struct tgS_map {
    uint32_t bitmap;
    uint32_t pad;
    uintptr_t e[];
};

#define BITS 5

/* Portable and branch-free: the baseline x86-64 has no popcnt. */
static inline unsigned popcount32(uint32_t x)
{
    x = x - ((x >> 1) & 0x55555555u);
    x = (x & 0x33333333u) + ((x >> 2) & 0x33333333u);
    return (((x + (x >> 4)) & 0x0F0F0F0Fu) * 0x01010101u) >> 24;
}

static inline unsigned slot_of(uint32_t bitmap, uint32_t bit)
{
    return 2u * popcount32(bitmap & (bit - 1));
}


void *tgS_map_get(const tgS_map *m, uint64_t key)
{
    for (unsigned sh = 0; m; sh += BITS) {
        uint32_t bit = 1u << ((key >> sh) & 31);
        if (!(m->bitmap & bit))
            return NULL;
        unsigned i = slot_of(m->bitmap, bit);
        uintptr_t k = m->e[i];
        if (k & 1)
            return (k >> 1) == key ? (void *)m->e[i + 1] : NULL;
        m = (const tgS_map *)k;
    }
    return NULL;
}

static tgS_map *node_new(tg_ctx *ctx, unsigned entries)
{
    return tgT_alloc(ctx, sizeof(tgS_map) + 2 * entries * sizeof(uintptr_t));
}



/* A copy of m with room for one more entry, inserted at word index i. */
static tgS_map *copy_insert(tg_ctx *ctx, const tgS_map *m, uint32_t bit, unsigned i,
                            uintptr_t a, uintptr_t b)
{
    unsigned n = m ? 2u * (unsigned)popcount32(m->bitmap) : 0;
    tgS_map *c = node_new(ctx, n / 2 + 1);
    if (!c)
        return NULL;
    c->bitmap = (m ? m->bitmap : 0) | bit;
    c->pad = 0;
    if (n)
        memcpy(c->e, m->e, i * sizeof(uintptr_t));
    c->e[i] = a;
    c->e[i + 1] = b;
    if (n > i)
        memcpy(c->e + i + 2, m->e + i, (n - i) * sizeof(uintptr_t));
    return c;
}

static tgS_map *copy_replace(tg_ctx *ctx, const tgS_map *m, unsigned i, uintptr_t a, uintptr_t b)
{
    unsigned n = 2u * (unsigned)popcount32(m->bitmap);
    tgS_map *c = node_new(ctx, n / 2);
    if (!c)
        return NULL;
    c->bitmap = m->bitmap;
    c->pad = 0;
    memcpy(c->e, m->e, n * sizeof(uintptr_t));
    c->e[i] = a;
    c->e[i + 1] = b;
    return c;
}

/* A node at shift sh holding two leaves whose keys differ. */
static tgS_map *two_leaves(tg_ctx *ctx, uint64_t k1, uintptr_t v1, uint64_t k2, uintptr_t v2, unsigned sh)
{
    unsigned c1 = (k1 >> sh) & 31, c2 = (k2 >> sh) & 31;
    if (c1 == c2) {
        tgS_map *sub = two_leaves(ctx, k1, v1, k2, v2, sh + BITS);
        if (!sub)
            return NULL;
        return copy_insert(ctx, NULL, 1u << c1, 0, (uintptr_t)sub, 0);
    }
    tgS_map *c = node_new(ctx, 2);
    if (!c)
        return NULL;
    c->bitmap = (1u << c1) | (1u << c2);
    c->pad = 0;
    unsigned i1 = c1 < c2 ? 0 : 2;
    c->e[i1] = (uintptr_t)(k1 << 1 | 1);
    c->e[i1 + 1] = v1;
    c->e[2 - i1] = (uintptr_t)(k2 << 1 | 1);
    c->e[3 - i1] = v2;
    return c;
}

/* Recursion depth is bounded by the key width (13 levels). */
static tgS_map *set_at(tg_ctx *ctx, const tgS_map *m, uint64_t key, uintptr_t val, unsigned sh)
{
    uint32_t bit = 1u << ((key >> sh) & 31);
    uintptr_t leaf = (uintptr_t)(key << 1 | 1);
    if (!m || !(m->bitmap & bit))
        return copy_insert(ctx, m, bit, m ? slot_of(m->bitmap, bit) : 0, leaf, val);
    unsigned i = slot_of(m->bitmap, bit);
    uintptr_t k = m->e[i];
    tgS_map *sub;
    if (k & 1) {
        if (k == leaf)
            return copy_replace(ctx, m, i, leaf, val);
        sub = two_leaves(ctx, k >> 1, m->e[i + 1], key, val, sh + BITS);
    } else {
        sub = set_at(ctx, (const tgS_map *)k, key, val, sh + BITS);
    }
    return sub ? copy_replace(ctx, m, i, (uintptr_t)sub, 0) : NULL;
}

tgS_map *tgS_map_set(tg_ctx *ctx, const tgS_map *m, uint64_t key, void *val)
{
    return set_at(ctx, m, key, (uintptr_t)val, 0);
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
