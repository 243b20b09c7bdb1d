/* rec_hash.c - print a term into a SHA-256 stream, 64 KiB at a time, with
 * an explicit stack: the normal forms the REC benchmarks produce are too
 * big to print into memory and too deep for recursion. */
#include "rec_hash.h"
#include "rec_sha256.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { OUT_SIZE = 1 << 16, SYMCACHE = 256 };

/* Printed forms of the symbols seen so far: a REC normal form has only a
 * few distinct symbols, so each is printed by tg_print once. */
typedef struct symcache {
    const tg_term *key[SYMCACHE];
    char *text[SYMCACHE];
    size_t len[SYMCACHE];
} symcache;

typedef struct hasher {
    tg_rec_sha256 sha;
    unsigned long long symbols;
    size_t fill;
    symcache *cache;
    unsigned char out[OUT_SIZE];
} hasher;

static void put(hasher *h, const char *s, size_t len)
{
    while (len) {
        size_t take = OUT_SIZE - h->fill < len ? OUT_SIZE - h->fill : len;
        memcpy(h->out + h->fill, s, take);
        h->fill += take;
        s += take;
        len -= take;
        if (h->fill == OUT_SIZE) {
            tg_rec_sha256_update(&h->sha, h->out, h->fill);
            h->fill = 0;
        }
    }
}

static void put_char(hasher *h, char c)
{
    if (h->fill == OUT_SIZE) {
        tg_rec_sha256_update(&h->sha, h->out, h->fill);
        h->fill = 0;
    }
    h->out[h->fill++] = (unsigned char)c;
}

/* An atom as tg_print writes it; symbols through the cache (linear
 * probing on the pointer; when full, printed afresh each time). */
static int put_atom(hasher *h, const tg_term *t)
{
    int is_sym = tg_kind_of(t) == TG_SYMBOL;
    size_t i = ((uintptr_t)t >> 4) % SYMCACHE, n = 0;
    h->symbols += (unsigned long long)is_sym;
    for (; is_sym && n < SYMCACHE; n++, i = (i + 1) % SYMCACHE) {
        if (h->cache->key[i] == t) {
            put(h, h->cache->text[i], h->cache->len[i]);
            return 0;
        }
        if (!h->cache->key[i])
            break;
    }
    size_t len;
    char *s = tg_print(t, &len);
    if (!s)
        return -1;
    put(h, s, len);
    if (is_sym && n < SYMCACHE) {
        h->cache->key[i] = t;
        h->cache->text[i] = s;
        h->cache->len[i] = len;
    } else {
        free(s);
    }
    return 0;
}

/* One open list on the stack: where its iteration stands. */
typedef struct frame {
    tg_iter it;
    const tg_term *list;
    int first;
} frame;

typedef struct stack {
    frame *v;
    size_t n, cap;
} stack;

static int push(stack *st, const tg_term *list)
{
    if (st->n == st->cap) {
        size_t cap = st->cap ? st->cap * 2 : 1024;
        frame *v = realloc(st->v, cap * sizeof *v);
        if (!v)
            return -1;
        st->v = v;
        st->cap = cap;
    }
    frame *f = &st->v[st->n++];
    tg_iter_init(&f->it, list);
    f->list = list;
    f->first = 1;
    return 0;
}

/* Close the top list: its tail (when improper) and the parenthesis. */
static int close_list(hasher *h, stack *st)
{
    const tg_term *tail = tg_tail(st->v[--st->n].list);
    if (tg_kind_of(tail) != TG_NIL) {
        put(h, " . ", 3);
        if (put_atom(h, tail) < 0)
            return -1;
    }
    put_char(h, ')');
    return 0;
}

/* Print t: each list is pushed when its '(' is written and popped at its
 * ')'; elements are taken one at a time from the top list's iterator. */
static int print_term(hasher *h, stack *st, const tg_term *t)
{
    if (tg_kind_of(t) != TG_PAIR)
        return put_atom(h, t);
    put_char(h, '(');
    if (push(st, t) < 0)
        return -1;
    while (st->n) {
        frame *f = &st->v[st->n - 1];
        const tg_term *e = tg_iter_next(&f->it);
        if (!e) {
            if (close_list(h, st) < 0)
                return -1;
            continue;
        }
        if (!f->first)
            put_char(h, ' ');
        f->first = 0;
        if (tg_kind_of(e) == TG_PAIR) {
            put_char(h, '(');
            if (push(st, e) < 0)
                return -1;
        } else if (put_atom(h, e) < 0) {
            return -1;
        }
    }
    return 0;
}

int tg_rec_hash_term(const tg_term *t, tg_rec_digest *out)
{
    hasher *h = malloc(sizeof *h);
    symcache *cache = calloc(1, sizeof *cache);
    stack st = {0};
    int rc = -1;
    if (h && cache) {
        tg_rec_sha256_init(&h->sha);
        h->symbols = 0;
        h->fill = 0;
        h->cache = cache;
        rc = print_term(h, &st, t);
        tg_rec_sha256_update(&h->sha, h->out, h->fill);
        out->bytes = h->sha.total;
        out->symbols = h->symbols;
        tg_rec_sha256_final(&h->sha, out->sha);
    }
    for (size_t i = 0; cache && i < SYMCACHE; i++)
        free(cache->text[i]);
    free(st.v);
    free(cache);
    free(h);
    return rc;
}

int tg_rec_hash_check(const tg_term *t, const unsigned char sha[32], unsigned long long bytes,
                      unsigned long long symbols, char *why, size_t whysize)
{
    tg_rec_digest d;
    char hex[65];
    if (tg_rec_hash_term(t, &d) < 0) {
        snprintf(why, whysize, "out of memory hashing the normal form");
        return 0;
    }
    if (memcmp(d.sha, sha, 32) == 0 && d.bytes == bytes && d.symbols == symbols)
        return 1;
    tg_rec_sha256_hex(d.sha, hex);
    snprintf(why, whysize, "normal form is %s bytes=%llu symbols=%llu, not the expected one "
             "(bytes=%llu symbols=%llu)", hex, d.bytes, d.symbols, bytes, symbols);
    return 0;
}
