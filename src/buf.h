/* buf.h - a growable byte buffer in malloc'd memory (internal).
 *
 * Used wherever text is built piece by piece: the printer, error messages,
 * the REPL.  Running out of memory sets a sticky flag instead of failing
 * each call, so a caller can append freely and check once at the end.
 * The memory comes from malloc, which the collector does not scan: never
 * keep the only pointer to a term in a buffer.
 */
#ifndef TGREL_BUF_H
#define TGREL_BUF_H

#include <stdarg.h>
#include <stddef.h>
#include <string.h>

typedef struct tgB_buf {
    char *data;     /* NULL until the first append */
    size_t len;     /* bytes in use */
    size_t cap;     /* bytes allocated; one is always kept for a NUL */
    int oom;        /* set when an allocation failed; appends are then dropped
                       (cap is lowered to len so the inline paths see no room) */
} tgB_buf;

#define TGB_INIT { NULL, 0, 0, 0 }

void tgB_init(tgB_buf *b);
/* Release the memory; the buffer is empty and usable again. */
void tgB_free(tgB_buf *b);
/* Forget the contents but keep the memory (the oom flag stays). */
void tgB_reset(tgB_buf *b);

/* Make room for n more bytes (plus the NUL); 0, or -1 with b->oom set. */
int tgB_grow(tgB_buf *b, size_t n);
/* Mark the contents as spoiled, as a failed allocation does: later appends
 * are dropped and tgB_take gives NULL.  For callers that fail for reasons
 * of their own half way through building a text. */
void tgB_fail(tgB_buf *b);

/* Room for n bytes at the end, to be filled and then claimed with
 * tgB_commit; NULL when out of memory.  This lets hot paths write straight
 * into the buffer instead of going through a temporary. */
static inline char *tgB_reserve(tgB_buf *b, size_t n)
{
    if (b->cap - b->len <= n && tgB_grow(b, n) != 0)
        return NULL;
    return b->data + b->len;
}

static inline void tgB_commit(tgB_buf *b, size_t n)
{
    b->len += n;
}

static inline void tgB_append(tgB_buf *b, const void *p, size_t n)
{
    if (b->cap - b->len <= n && tgB_grow(b, n) != 0)
        return;
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
}

static inline void tgB_putc(tgB_buf *b, char c)
{
    if (b->cap - b->len <= 1 && tgB_grow(b, 1) != 0)
        return;
    b->data[b->len++] = c;
}

static inline void tgB_puts(tgB_buf *b, const char *s)
{
    tgB_append(b, s, strlen(s));
}

void tgB_printf(tgB_buf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void tgB_vprintf(tgB_buf *b, const char *fmt, va_list ap)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 0)))
#endif
    ;

/* The contents NUL-terminated, still owned by the buffer ("" when empty,
 * NULL after an allocation failure). */
const char *tgB_cstr(tgB_buf *b);

/* Hand the NUL-terminated contents to the caller (free with free()) and
 * leave the buffer empty; *len set when len is not NULL.  NULL when an
 * allocation failed at any point; the buffer is then freed and its flag
 * cleared. */
char *tgB_take(tgB_buf *b, size_t *len);

#endif
