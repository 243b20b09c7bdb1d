/* buf.c - the growable byte buffer of buf.h. */
#include "buf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

void tgB_init(tgB_buf *b)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    b->oom = 0;
}

void tgB_free(tgB_buf *b)
{
    free(b->data);
    tgB_init(b);
}

void tgB_reset(tgB_buf *b)
{
    b->len = 0;
    if (b->oom)
        b->cap = 0;
}

int tgB_grow(tgB_buf *b, size_t n)
{
    size_t need, cap;
    char *p;

    if (b->oom)
        return -1;
    /* the +1 keeps room for the NUL that tgB_cstr and tgB_take add */
    if (n > SIZE_MAX - 1 - b->len)
        goto fail;
    need = b->len + n + 1;
    if (need <= b->cap)
        return 0;
    cap = b->cap ? b->cap : 64;
    while (cap < need) {
        /* doubling keeps appends amortized O(1) */
        if (cap > SIZE_MAX / 2) {
            cap = need;
            break;
        }
        cap *= 2;
    }
    p = realloc(b->data, cap);
    if (!p)
        goto fail;
    b->data = p;
    b->cap = cap;
    return 0;
fail:
    tgB_fail(b);
    return -1;
}

void tgB_fail(tgB_buf *b)
{
    b->oom = 1;
    /* the allocation is at least this big still, so this is only ever an
     * understatement; it sends every inline append to tgB_grow, which
     * refuses */
    b->cap = b->len;
}

void tgB_vprintf(tgB_buf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    size_t room;
    int n;

    if (b->oom)
        return;
    /* first try in the space already there: one vsnprintf in the usual case */
    if (b->cap - b->len < 2 && tgB_grow(b, 64) != 0)
        return;
    room = b->cap - b->len;
    va_copy(ap2, ap);
    n = vsnprintf(b->data + b->len, room, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        return;     /* an encoding error: nothing sensible to append */
    if ((size_t)n >= room) {
        if (tgB_grow(b, (size_t)n) != 0)
            return;
        va_copy(ap2, ap);
        n = vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap2);
        va_end(ap2);
        if (n < 0)
            return;
    }
    b->len += (size_t)n;
}

void tgB_printf(tgB_buf *b, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    tgB_vprintf(b, fmt, ap);
    va_end(ap);
}

const char *tgB_cstr(tgB_buf *b)
{
    if (b->oom)
        return NULL;
    if (!b->data && tgB_grow(b, 0) != 0)
        return NULL;
    b->data[b->len] = '\0';
    return b->data;
}

char *tgB_take(tgB_buf *b, size_t *len)
{
    char *s;

    if (b->oom || (!b->data && tgB_grow(b, 0) != 0)) {
        tgB_free(b);
        if (len)
            *len = 0;
        return NULL;
    }
    s = b->data;
    s[b->len] = '\0';
    /* give back the slack of the doubling; failure to shrink is harmless */
    if (b->cap - b->len > 4096 && b->cap / 4 > b->len) {
        char *t = realloc(s, b->len + 1);
        if (t)
            s = t;
    }
    if (len)
        *len = b->len;
    tgB_init(b);
    return s;
}
