/* error.c - filling and formatting tg_error: the public tg_error_clear and
 * tg_error_format, and the internal tgE_set used by every module. */
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "term.h"

void tg_error_set(tg_error *err, tg_errcode code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tgE_setv(err, code, NULL, 0, 0, fmt, ap);
    va_end(ap);
}

void tg_error_clear(tg_error *err)
{
    if (!err)
        return;
    err->code = TG_OK;
    err->line = 0;
    err->column = 0;
    err->file[0] = '\0';
    err->message[0] = '\0';
}

const char *tgE_code_name(tg_errcode code)
{
    switch (code) {
    case TG_OK:         return "no error";
    case TG_ERR_SYNTAX: return "syntax error";
    case TG_ERR_TYPE:   return "wrong kind of term";
    case TG_ERR_RANGE:  return "value out of range";
    case TG_ERR_NOMEM:  return "out of memory";
    case TG_ERR_IO:     return "input/output error";
    case TG_ERR_ARG:    return "bad argument";
    case TG_ERR_CHECK:  return "values changed by a rewrite";
    }
    return "unknown error";
}

/* Copy a file name, keeping its end when it does not fit: the end (the
 * file's own name) is what a reader of the message needs. */
static void copy_file(char *dst, size_t size, const char *src)
{
    size_t n = strlen(src);
    if (n < size) {
        memcpy(dst, src, n + 1);
        return;
    }
    /* "..." + the last size-4 bytes + NUL */
    memcpy(dst, "...", 3);
    memcpy(dst + 3, src + n - (size - 4), size - 4);
    dst[size - 1] = '\0';
}

void tgE_setv(tg_error *err, tg_errcode code, const char *file, int line,
              int col, const char *fmt, va_list ap)
{
    if (code == TG_ERR_NOMEM)
        tgT_alloc_failed();
    if (!err)
        return;
    err->code = code;
    err->line = line > 0 ? line : 0;
    err->column = (line > 0 && col > 0) ? col : 0;
    copy_file(err->file, sizeof err->file, file ? file : "");

    size_t cap = sizeof err->message;
    int n = fmt ? vsnprintf(err->message, cap, fmt, ap) : -1;
    if (n < 0) {
        snprintf(err->message, cap, "%s", tgE_code_name(code));
    } else if ((size_t)n >= cap) {
        memcpy(err->message + cap - 4, "...", 4);
    }
    /* One line: a message is printed after "file:line:col: ". */
    for (unsigned char *p = (unsigned char *)err->message; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            *p = ' ';
}

void tgE_set(tg_error *err, tg_errcode code, const char *file, int line,
             int col, const char *fmt, ...)
{
    va_list ap;
    if (!err)
        return;
    va_start(ap, fmt);
    tgE_setv(err, code, file, line, col, fmt, ap);
    va_end(ap);
}

const char *tg_error_format(const tg_error *err, char *buf, size_t size)
{
    if (!buf || size == 0)
        return buf;
    if (!err) {
        buf[0] = '\0';
        return buf;
    }
    const char *msg = err->message[0] ? err->message : tgE_code_name(err->code);
    /* The fields are fixed arrays; do not trust them to be terminated. */
    int flen = (int)strnlen(err->file, sizeof err->file);
    int mlen = (int)strnlen(msg, sizeof err->message);
    if (err->line > 0 && err->column > 0 && flen > 0)
        snprintf(buf, size, "%.*s:%d:%d: %.*s", flen, err->file,
                 err->line, err->column, mlen, msg);
    else if (err->line > 0 && flen > 0)
        snprintf(buf, size, "%.*s:%d: %.*s", flen, err->file, err->line,
                 mlen, msg);
    else if (err->line > 0 && err->column > 0)
        snprintf(buf, size, "%d:%d: %.*s", err->line, err->column, mlen, msg);
    else if (err->line > 0)
        snprintf(buf, size, "%d: %.*s", err->line, mlen, msg);
    else if (flen > 0)
        snprintf(buf, size, "%.*s: %.*s", flen, err->file, mlen, msg);
    else
        snprintf(buf, size, "%.*s", mlen, msg);
    return buf;
}
