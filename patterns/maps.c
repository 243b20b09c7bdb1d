/* maps.c - the small utilities of the rule sets and the machine: arrays
 * grown by doubling (tgW_grow), scratch blocks (tgW_scratch_*) and
 * pointer maps with open addressing (tgW_map_*).
 */
#include "rset.h"

#include <gc/gc.h>
#include <stdlib.h>
#include <string.h>

/* ---- growing arrays ------------------------------------------------- */

void *tgW_grow(void *arr, size_t n, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return arr;
    size_t nc = *cap ? 2 * *cap : 16;
    while (nc < need)
        nc *= 2;
    void *a = GC_MALLOC(nc * size);
    if (!a)
        return NULL;
    if (n)
        memcpy(a, arr, n * size);
    *cap = nc;
    return a;
}

void *tgW_scratch_alloc(size_t bytes)
{
    void *p = calloc(1, bytes);
    if (p)
        GC_add_roots(p, (char *)p + bytes);
    return p;
}

void tgW_scratch_free(void *p, size_t bytes)
{
    if (!p)
        return;
    GC_remove_roots(p, (char *)p + bytes);
    free(p);
}

/* ---- pointer maps ---------------------------------------------------- */

static void **map_array(const tgW_map *m, size_t cap)
{
    size_t bytes = 2 * cap * sizeof(void *);
    return m->scratch ? tgW_scratch_alloc(bytes) : GC_MALLOC(bytes);
}

static void map_release(tgW_map *m)
{
    if (m->scratch)
        tgW_scratch_free(m->kv, 2 * m->cap * sizeof(void *));
}

static size_t map_home(const void *k, size_t cap)
{
    uint64_t x = (uintptr_t)k * 0x9E3779B97F4A7C15ull;
    return (size_t)(x >> 32) & (cap - 1);
}

void *tgW_map_get(const tgW_map *m, const void *key)
{
    if (!m->cap)
        return NULL;
    for (size_t i = map_home(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
        void *k = m->kv[2 * i];
        if (k == key)
            return m->kv[2 * i + 1];
        if (!k)
            return NULL;
    }
}

static int map_grow(tgW_map *m)
{
    size_t cap = m->cap ? 2 * m->cap : 64;
    void **kv = map_array(m, cap);
    if (!kv)
        return -1;
    for (size_t i = 0; i < m->cap; i++) {
        void *k = m->kv[2 * i];
        if (!k)
            continue;
        size_t j = map_home(k, cap);
        while (kv[2 * j])
            j = (j + 1) & (cap - 1);
        kv[2 * j] = k;
        kv[2 * j + 1] = m->kv[2 * i + 1];
    }
    map_release(m);
    m->kv = kv;
    m->cap = cap;
    return 0;
}

int tgW_map_put(tgW_map *m, void *key, void *val)
{
    if (2 * (m->n + 1) > m->cap && map_grow(m) < 0)
        return -1;
    size_t i = map_home(key, m->cap);
    while (m->kv[2 * i] && m->kv[2 * i] != key)
        i = (i + 1) & (m->cap - 1);
    if (!m->kv[2 * i])
        m->n++;
    m->kv[2 * i] = key;
    m->kv[2 * i + 1] = val;
    return 0;
}

void tgW_map_reserve(tgW_map *m, size_t n)
{
    if (m->n || 2 * n <= m->cap || n > ((size_t)1 << 40))
        return;     /* only an empty map is sized at once */
    size_t cap = 64;
    while (cap < 2 * n)
        cap *= 2;
    void **kv = map_array(m, cap);
    if (kv) {
        map_release(m);
        m->kv = kv, m->cap = cap;
    }
}

void tgW_map_clear(tgW_map *m)
{
    map_release(m);
    m->kv = NULL;
    m->n = m->cap = 0;
}
