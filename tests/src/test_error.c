/* test_error.c - tests of src/error.c: tg_error_clear, tg_error_format and
 * the internal tgE_set (bounds, NULL handling, one-line messages). */
#include <string.h>

#include "harness.h"
#include "error.h"
#include "tgrel.h"

static tg_error filled(void)
{
    tg_error e;
    memset(&e, 'x', sizeof e);
    e.code = TG_ERR_IO;
    e.line = 7;
    e.column = 9;
    e.file[sizeof e.file - 1] = '\0';
    e.message[sizeof e.message - 1] = '\0';
    return e;
}

static void test_clear(void)
{
    tg_error e = filled();
    tg_error_clear(&e);
    TAP_EQ_INT(e.code, TG_OK, "clear: code is TG_OK");
    TAP_EQ_INT(e.line, 0, "clear: line is 0");
    TAP_EQ_INT(e.column, 0, "clear: column is 0");
    TAP_EQ_STR(e.file, "", "clear: file is empty");
    TAP_EQ_STR(e.message, "", "clear: message is empty");
    tg_error_clear(NULL);
    TAP_CHECK(1, "clear: NULL is accepted");
}

static void test_set(void)
{
    char buf[600];
    tg_error e;
    tg_error_clear(&e);
    tgE_set(&e, TG_ERR_SYNTAX, "in.tg", 3, 14, "unexpected %s at %d", "')'", 42);
    TAP_EQ_INT(e.code, TG_ERR_SYNTAX, "set: code");
    TAP_EQ_INT(e.line, 3, "set: line");
    TAP_EQ_INT(e.column, 14, "set: column");
    TAP_EQ_STR(e.file, "in.tg", "set: file");
    TAP_EQ_STR(e.message, "unexpected ')' at 42", "set: printf-style message");
    TAP_EQ_STR(tg_error_format(&e, buf, sizeof buf),
               "in.tg:3:14: unexpected ')' at 42", "format: file:line:column: message");

    tgE_set(&e, TG_ERR_RANGE, NULL, 0, 0, "index %zu out of range", (size_t)5);
    TAP_EQ_STR(e.file, "", "set: NULL file gives \"\"");
    TAP_EQ_STR(tg_error_format(&e, buf, sizeof buf), "index 5 out of range",
               "format: no position gives the bare message");

    tgE_set(&e, TG_ERR_IO, "/no/such/file", 0, 0, "cannot open");
    TAP_EQ_STR(tg_error_format(&e, buf, sizeof buf), "/no/such/file: cannot open",
               "format: a file without a line gives file: message");

    tgE_set(&e, TG_ERR_SYNTAX, "a.tg", 4, 0, "bad");
    TAP_EQ_STR(tg_error_format(&e, buf, sizeof buf), "a.tg:4: bad",
               "format: a line without a column gives file:line: message");

    tgE_set(&e, TG_ERR_SYNTAX, "a.tg", -1, 5, "bad");
    TAP_CHECK(e.line == 0 && e.column == 0, "set: a negative line means no position");

    tgE_set(&e, TG_ERR_SYNTAX, "", 2, 5, "bad");
    TAP_EQ_STR(tg_error_format(&e, buf, sizeof buf), "2:5: bad",
               "format: position without a file");

    tgE_set(NULL, TG_ERR_SYNTAX, "x", 1, 1, "%s", "ignored");
    TAP_CHECK(1, "set: NULL err is accepted");

    tgE_nomem(&e);
    TAP_EQ_INT(e.code, TG_ERR_NOMEM, "tgE_nomem: code");
    TAP_EQ_STR(e.message, "out of memory", "tgE_nomem: message");
}

static void test_bounds(void)
{
    char big[2000], buf[2000];
    tg_error e;
    memset(big, 'm', sizeof big - 1);
    big[sizeof big - 1] = '\0';

    tgE_set(&e, TG_ERR_SYNTAX, "f", 1, 1, "%s", big);
    size_t n = strlen(e.message);
    TAP_EQ_INT(n, sizeof e.message - 1, "long message is cut to the field");
    TAP_EQ_STR(e.message + n - 3, "...", "a cut message ends in ...");

    big[1000] = '\0';
    memcpy(big + 990, "/end.tg", 8);
    tgE_set(&e, TG_ERR_IO, big, 0, 0, "x");
    n = strlen(e.file);
    TAP_EQ_INT(n, sizeof e.file - 1, "long file name is cut to the field");
    TAP_CHECK(strncmp(e.file, "...", 3) == 0, "a cut file name starts with ...");
    TAP_EQ_STR(e.file + n - 7, "/end.tg", "a cut file name keeps its end");

    tgE_set(&e, TG_ERR_SYNTAX, "f", 1, 2, "two\nlines\tand\rmore");
    TAP_EQ_STR(e.message, "two lines and more", "control characters become spaces");

    tgE_set(&e, TG_ERR_SYNTAX, "file.tg", 10, 20, "message");
    char small[8];
    memset(small, '#', sizeof small);
    tg_error_format(&e, small, sizeof small);
    TAP_EQ_STR(small, "file.tg", "format truncates to the buffer");
    small[0] = '#';
    tg_error_format(&e, small, 1);
    TAP_EQ_STR(small, "", "format with size 1 gives \"\"");
    TAP_CHECK(tg_error_format(&e, NULL, 0) == NULL, "format with no buffer returns it");
    TAP_EQ_STR(tg_error_format(NULL, buf, sizeof buf), "", "format of NULL gives \"\"");

    tg_error_clear(&e);
    e.code = TG_ERR_TYPE;
    TAP_EQ_STR(tg_error_format(&e, buf, sizeof buf), "wrong kind of term",
               "format of an empty message names the code");
}

int main(void)
{
    test_clear();
    test_set();
    test_bounds();
    return TAP_DONE();
}
