/* facts.c - fact tables: relations given by a list of ground or
 * non-ground tuples, queried in order, with indexes on the whole tuple
 * and on the first argument. */
#include "builtin.h"

#include <gc/gc.h>
#include <stdint.h>
#include <string.h>

/* The tuples of a fact relation, in order, with an index on the whole
 * tuple (ground queries) and on the first argument (joins). */
typedef struct facts {
    tgK_vec tuples;
    tgK_vec next1;          /* per tuple: 1 + next tuple with the same first argument */
    tg_term **keys;         /* open addressing: whole tuples and first arguments */
    size_t *first, *last;   /* per first-argument key: 1 + first / last tuple */
    unsigned char *tuple;   /* per key: it is a whole tuple */
    size_t nkeys, cap;
} facts;

static size_t fhome(const void *p, size_t cap)
{
    return (size_t)(((uintptr_t)p >> 4) * 0x9E3779B97F4A7C15ull >> 20) & (cap - 1);
}

static size_t fslot(const facts *f, const tg_term *k)
{
    size_t i = fhome(k, f->cap);
    while (f->keys[i] && f->keys[i] != k)
        i = (i + 1) & (f->cap - 1);
    return i;
}

/* Index key k: as a whole tuple, or as the first argument of tuple
 * number `tuple` (a term can be both). */
static int facts_put(facts *f, tg_term *k, size_t tuple, int is_first)
{
    if (2 * (f->nkeys + 1) > f->cap) {
        facts old = *f;
        size_t cap = f->cap ? 2 * f->cap : 64;
        f->keys = GC_MALLOC(cap * sizeof *f->keys);
        f->first = GC_MALLOC_ATOMIC(cap * sizeof *f->first);
        f->last = GC_MALLOC_ATOMIC(cap * sizeof *f->last);
        f->tuple = GC_MALLOC_ATOMIC(cap);
        if (!f->keys || !f->first || !f->last || !f->tuple)
            return -1;
        memset(f->first, 0, cap * sizeof *f->first);
        memset(f->last, 0, cap * sizeof *f->last);
        memset(f->tuple, 0, cap);
        f->cap = cap;
        f->nkeys = 0;
        for (size_t i = 0; i < old.cap; i++)
            if (old.keys[i]) {
                size_t j = fslot(f, old.keys[i]);
                f->keys[j] = old.keys[i];
                f->first[j] = old.first[i];
                f->last[j] = old.last[i];
                f->tuple[j] = old.tuple[i];
                f->nkeys++;
            }
    }
    size_t i = fslot(f, k);
    if (!f->keys[i]) {
        f->keys[i] = k;
        f->nkeys++;
    }
    if (!is_first) {
        f->tuple[i] = 1;
        return 0;
    }
    if (f->last[i])
        f->next1.v[f->last[i] - 1] = tuple + 1;
    else
        f->first[i] = tuple + 1;
    f->last[i] = tuple + 1;
    return 0;
}

int tgF_add(void *fp, tg_term *tuple)
{
    facts *f = fp;
    size_t k = f->tuples.n;
    if (f->cap && tgT_ground(tuple)) {     /* a table is a set: once each */
        size_t s = fslot(f, tuple);
        if (f->keys[s] == tuple && f->tuple[s])
            return 0;
    }
    if (tgK_vec_reserve(&f->tuples, 1) < 0 || tgK_vec_reserve(&f->next1, 1) < 0)
        return -1;
    f->tuples.v[f->tuples.n++] = (uintptr_t)tuple;
    f->next1.v[f->next1.n++] = 0;
    if (facts_put(f, tuple, k, 0) < 0)
        return -1;
    return tgT_ispair(tuple) ? facts_put(f, tg_car(tuple), k, 1) : 0;
}

/* The C relation of a fact table.  *state holds 1 + the next tuple to
 * try; tuples are tried in order, following the first-argument chain
 * when the first argument is ground, or just looked up when the whole
 * query is. */
int tgF_fn(tg_ctx *ctx, tg_term *const *args, unsigned n, unsigned long i,
                    void **state, tg_term **out, void *ud, tg_error *err)
{
    (void)err;
    facts *f = ud;
    size_t next = (size_t)(uintptr_t)*state;
    if (i == 0) {
        tg_term *q = tg_list(ctx, n, args, NULL);
        if (!q)
            return -1;
        if (tgT_ground(q)) {
            size_t s = f->cap ? fslot(f, q) : 0;
            *out = q;
            return f->cap && f->keys[s] == q && f->tuple[s];
        }
        if (n > 0 && tgT_ground(args[0])) {
            size_t s = f->cap ? fslot(f, args[0]) : 0;
            next = f->cap && f->keys[s] == args[0] ? f->first[s] : 0;
            *state = (void *)(uintptr_t)(next ? next : SIZE_MAX);
        } else {
            next = 1;
            *state = (void *)(uintptr_t)1;
        }
        if (!next)
            return 0;
    }
    if (next == SIZE_MAX || next == 0 || next > f->tuples.n)
        return 0;
    *out = (tg_term *)f->tuples.v[next - 1];
    /* chained (first argument ground) or sequential */
    int chained = n > 0 && tgT_ground(args[0]);
    size_t after = chained ? f->next1.v[next - 1] : next + 1;
    *state = (void *)(uintptr_t)(after ? after : SIZE_MAX);
    return 1;
}


void *tgF_new(void)
{
    return GC_MALLOC(sizeof(facts));
}

int tgF_holds(const void *fp, const tg_term *tuple)
{
    const facts *f = fp;
    if (!f->cap || !tgT_ground(tuple))
        return 0;
    size_t s = fslot(f, tuple);
    return f->keys[s] == tuple && f->tuple[s];
}
