/* harness.h - a tiny header-only TAP library for the C tests.
 *
 *   #include "harness.h"
 *   int main(void) {
 *       TAP_CHECK(x > 0, "x is positive (x = %d)", x);
 *       TAP_EQ_INT(got, expected, "count");
 *       TAP_EQ_STR(got, expected, "printed form");
 *       return TAP_DONE();
 *   }
 *
 * Each check prints "ok N - desc" or "not ok N - desc" followed by "# ..."
 * diagnostics (file:line, expected and got).  TAP_DONE() prints the plan
 * "1..N" and evaluates to the exit status: 0 when every check passed.
 * TAP_EQ_* take the value got first, the expected value second; each
 * argument is evaluated once.  tap_path("tests/x/data") names a file of the
 * source tree, found through $srcdir, so tests work from any directory.
 */
#ifndef TGREL_TESTS_HARNESS_H
#define TGREL_TESTS_HARNESS_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__) || defined(__clang__)
#define TAP_UNUSED_ __attribute__((unused))
#define TAP_PRINTF_(f, a) __attribute__((format(printf, f, a)))
#else
#define TAP_UNUSED_
#define TAP_PRINTF_(f, a)
#endif

static int tap_count_ TAP_UNUSED_ = 0;
static int tap_failed_ TAP_UNUSED_ = 0;

/* Print a description on one line: TAP ends a test line at a newline and
 * would take a '#' for the start of a directive (SKIP / TODO). */
static TAP_UNUSED_ void tap_put_desc_(const char *s)
{
    for (; *s; s++) {
        if (*s == '\n' || *s == '\r')
            fputs("\\n", stdout);
        else if (*s == '#')
            fputs("\\#", stdout);
        else
            putchar(*s);
    }
}

static TAP_UNUSED_ TAP_PRINTF_(5, 6) int
tap_check_(int ok, const char *file, int line, const char *expr,
           const char *fmt, ...)
{
    char desc[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(desc, sizeof desc, fmt, ap);
    va_end(ap);
    tap_count_++;
    if (!ok)
        tap_failed_++;
    printf("%sok %d - ", ok ? "" : "not ", tap_count_);
    tap_put_desc_(desc);
    putchar('\n');
    if (!ok && expr)
        printf("#   %s:%d: check failed: %s\n", file, line, expr);
    fflush(stdout);
    return ok;
}

/* A diagnostic line ("# ..."); use it for notes next to a check. */
static TAP_UNUSED_ TAP_PRINTF_(1, 2) void tap_diag(const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fputs("# ", stdout);
    tap_put_desc_(msg);
    putchar('\n');
    fflush(stdout);
}

static TAP_UNUSED_ int tap_eq_int_(intmax_t got, intmax_t want,
                                   const char *file, int line,
                                   const char *desc)
{
    int ok = got == want;
    tap_check_(ok, file, line, NULL, "%s", desc);
    if (!ok)
        printf("#   %s:%d:\n#     expected: %jd\n#          got: %jd\n",
               file, line, want, got);
    fflush(stdout);
    return ok;
}

/* A string in a diagnostic: quoted, with control bytes escaped so that it
 * stays on the "#" line; long strings are cut. */
static TAP_UNUSED_ void tap_put_str_(const char *s)
{
    if (!s) {
        fputs("(null)", stdout);
        return;
    }
    putchar('"');
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++, n++) {
        if (n == 400) {
            fputs("\"... (cut)", stdout);
            return;
        }
        if (*p == '\n')
            fputs("\\n", stdout);
        else if (*p == '\t')
            fputs("\\t", stdout);
        else if (*p == '"' || *p == '\\')
            printf("\\%c", *p);
        else if (*p < 0x20 || *p == 0x7f)
            printf("\\x%02x", *p);
        else
            putchar(*p);
    }
    putchar('"');
}

static TAP_UNUSED_ int tap_eq_str_(const char *got, const char *want,
                                   const char *file, int line,
                                   const char *desc)
{
    int ok = (got && want) ? strcmp(got, want) == 0 : got == want;
    tap_check_(ok, file, line, NULL, "%s", desc);
    if (!ok) {
        printf("#   %s:%d:\n#     expected: ", file, line);
        tap_put_str_(want);
        fputs("\n#          got: ", stdout);
        tap_put_str_(got);
        putchar('\n');
    }
    fflush(stdout);
    return ok;
}

static TAP_UNUSED_ int tap_done_(void)
{
    printf("1..%d\n", tap_count_);
    if (tap_failed_)
        printf("# %d of %d checks failed\n", tap_failed_, tap_count_);
    fflush(stdout);
    return tap_failed_ ? 1 : 0;
}

/* "$srcdir/rel" (or "./rel" when srcdir is not set) in a static buffer. */
static TAP_UNUSED_ const char *tap_path(const char *rel)
{
    static _Thread_local char buf[4096];   /* tests call it from several threads */
    const char *dir = getenv("srcdir");
    snprintf(buf, sizeof buf, "%s/%s", dir && *dir ? dir : ".", rel);
    return buf;
}

/* TAP_CHECK(cond, fmt, ...): the description is printf-formatted. */
#define TAP_CHECK(cond, ...) \
    tap_check_(!!(cond), __FILE__, __LINE__, #cond, __VA_ARGS__)
#define TAP_EQ_INT(got, want, desc) \
    tap_eq_int_((intmax_t)(got), (intmax_t)(want), __FILE__, __LINE__, (desc))
#define TAP_EQ_STR(got, want, desc) \
    tap_eq_str_((got), (want), __FILE__, __LINE__, (desc))
#define TAP_DIAG(...) tap_diag(__VA_ARGS__)
#define TAP_DONE() tap_done_()

#endif
