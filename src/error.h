/* error.h - internal helpers that fill a tg_error (module prefix tgE_).
 *
 * Every library function that fails reports through tgE_set, which accepts
 * err == NULL (the caller did not ask for details) and never overflows the
 * fixed-size fields of tg_error.
 */
#ifndef TG_ERROR_H
#define TG_ERROR_H

#include <stdarg.h>

#include "tgrel.h"

#if defined(__GNUC__) || defined(__clang__)
#define TGE_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define TGE_PRINTF(f, a)
#endif

/* Fill err (if not NULL): code, position (file NULL means ""; line and col
 * below 1 mean no position) and a printf-style message.  The message is
 * kept on one line (control characters become spaces) and ends in "..."
 * when it had to be cut; a file name that is too long keeps its end. */
void tgE_set(tg_error *err, tg_errcode code, const char *file, int line,
             int col, const char *fmt, ...) TGE_PRINTF(6, 7);
void tgE_setv(tg_error *err, tg_errcode code, const char *file, int line,
              int col, const char *fmt, va_list ap) TGE_PRINTF(6, 0);

/* Shorthands for errors without a position. */
#define tgE_nomem(err) \
    tgE_set((err), TG_ERR_NOMEM, NULL, 0, 0, "out of memory")
#define tgE_arg(err, what) \
    tgE_set((err), TG_ERR_ARG, NULL, 0, 0, "%s", (what))

/* A fixed description of an error code ("syntax error", ...). */
const char *tgE_code_name(tg_errcode code);

#endif
