/* tgtest.h - what the C tests of libtgrel share beyond the TAP library
 * (include after harness.h and tgrel.h): a term's printed form and an
 * error's formatted text, in rotating static buffers so that several can
 * stand in one TAP_EQ_STR. */
#ifndef TGREL_TESTS_TGTEST_H
#define TGREL_TESTS_TGTEST_H

/* t printed ("(null)" for NULL), cut at 8 KiB. */
static TAP_UNUSED_ char *tap_show(const tg_term *t)
{
    static char buf[4][8192];
    static int k;
    char *p = t ? tg_print(t, NULL) : NULL;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s", p ? p : "(null)");
    free(p);
    return buf[k];
}

/* err as "file:line:column: message". */
static TAP_UNUSED_ const char *tap_msg(const tg_error *err)
{
    static char buf[4][1200];
    static int k;
    k = (k + 1) % 4;
    return tg_error_format(err, buf[k], sizeof buf[k]);
}

#endif
