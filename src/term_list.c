/* term_list.c - the list views of chunked cons cells: building a list
 * from an array and a tail in its one canonical chunking, cons, car,
 * cdr, length, indexing and iteration.  The chunks themselves are
 * interned in term.c (tgT_chunk); see term.h for the representation.
 */
#include "term.h"

#include <string.h>

/* Build (e[0] .. e[n-1] . rest) where rest is not a pair or is a full
 * chunk: chunks of TGT_CHUNK from the end, the remainder first. */
tg_term *tgT_build_chunks(tg_ctx *ctx, size_t n, tg_term *const *e, tg_term *rest)
{
    size_t first = (n - 1) % TGT_CHUNK + 1;
    tg_term *t = rest;
    for (size_t end = n; t && end > first; end -= TGT_CHUNK)
        t = tgT_chunk(ctx, TGT_CHUNK, e + end - TGT_CHUNK, t);
    return t ? tgT_chunk(ctx, (unsigned)first, e, t) : NULL;
}

tg_term *tg_list(tg_ctx *ctx, size_t n, tg_term *const *e, tg_term *tail)
{
    if (!ctx || (n && !e))
        return NULL;
    if (!tail)
        tail = TGT_NIL;
    if (n == 0)
        return tail;
    if (!tgT_ispair(tail) || tail->h.n == TGT_CHUNK)
        return tgT_build_chunks(ctx, n, e, tail);
    /* The tail's first chunk is short: its elements join ours. */
    unsigned m = tail->h.n, take = TGT_CHUNK - m;
    tg_term *buf[TGT_CHUNK];
    if (n <= take) {
        memcpy(buf, e, n * sizeof *e);
        memcpy(buf + n, tail->e, m * sizeof *e);
        return tgT_chunk(ctx, (unsigned)(n + m), buf, tgT_rest(tail));
    }
    memcpy(buf, e + n - take, take * sizeof *e);
    memcpy(buf + take, tail->e, m * sizeof *e);
    tg_term *last = tgT_chunk(ctx, TGT_CHUNK, buf, tgT_rest(tail));
    return last ? tgT_build_chunks(ctx, n - take, e, last) : NULL;
}

tg_term *tg_cons(tg_ctx *ctx, tg_term *car, tg_term *cdr)
{
    if (!car)
        return NULL;
    return tg_list(ctx, 1, &car, cdr);
}

tg_term *tg_nil(void)
{
    return TGT_NIL;
}

tg_term *tg_car(const tg_term *t)
{
    if (!t)
        return NULL;
    return tgT_ispair(t) ? t->e[0] : NULL;
}

tg_term *tg_cdr(tg_ctx *ctx, const tg_term *t)
{
    if (!t)
        return NULL;
    if (!tgT_ispair(t))
        return NULL;
    if (t->h.n == 1)
        return tgT_rest(t);
    if (!ctx)           /* the rest needs a new node, which needs a context */
        return NULL;
    return tgT_chunk(ctx, t->h.n - 1u, t->e + 1, tgT_rest(t));
}

size_t tg_length(const tg_term *t)
{
    if (!t)
        return 0;
    size_t n = 0;
    for (; tgT_ispair(t); t = tgT_rest(t))
        n += t->h.n;
    return n;
}

tg_term *tg_nth(const tg_term *t, size_t i)
{
    if (!t)
        return NULL;
    for (; tgT_ispair(t); t = tgT_rest(t)) {
        if (i < t->h.n)
            return t->e[i];
        i -= t->h.n;
    }
    return NULL;
}

tg_term *tg_tail(const tg_term *t)
{
    if (!t)
        return NULL;
    while (tgT_ispair(t))
        t = tgT_rest(t);
    return (tg_term *)t;
}

size_t tg_elements(const tg_term *t, tg_term **out, size_t max)
{
    if (!t)
        return 0;
    size_t n = 0;
    for (; tgT_ispair(t); t = tgT_rest(t))
        for (unsigned i = 0; i < t->h.n; i++, n++)
            if (n < max)
                out[n] = t->e[i];
    return n;
}

void tg_iter_init(tg_iter *it, const tg_term *list)
{
    it->node = list;
    it->i = 0;
}

tg_term *tg_iter_next(tg_iter *it)
{
    if (!it || !it->node)
        return NULL;
    return tgT_iter_next(it);
}

tg_term *tg_iter_rest(tg_ctx *ctx, tg_iter *it)
{
    if (!ctx || !it)
        return NULL;
    const tg_term *p = it->node;
    if (!tgT_ispair(p) || it->i == 0)
        return (tg_term *)p;
    if (it->i >= p->h.n)
        return tgT_rest(p);
    return tgT_chunk(ctx, (unsigned)(p->h.n - it->i), p->e + it->i, tgT_rest(p));
}
