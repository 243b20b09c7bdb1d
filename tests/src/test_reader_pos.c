/* test_reader_pos.c - tests of the positions of subterms that the reader
 * records on request (tgR_track_positions, tgR_pos in src/reader.h): nested
 * lists, shared subterms (first occurrence wins), quote forms, dotted
 * tails, forms over several lines and tabs, datum comments, the reset at
 * each form and after errors, the flag off, and sizes that would show
 * quadratic work (10^6 deep, 10^7 long, many small forms after a huge one).
 */
#include "harness.h"
#include "reader.h"
#include "tgrel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static tg_ctx *C;

static tg_term *S(const char *name)
{
    return tg_symbol_cstr(C, name);
}

static tg_term *I(int64_t v)
{
    return tg_int(C, v);
}

/* The term text reads as (through tg_read, which records nothing). */
static tg_term *T(const char *text)
{
    tg_error e;
    tg_term *t = tg_read_cstr(C, text, &e);
    if (!t)
        TAP_DIAG("reading %s failed: %s", text, e.message);
    return t;
}

/* A reader with tracking on, and its first form in *form. */
static tg_reader *open_form(const char *text, tg_term **form)
{
    tg_error e;
    tg_reader *r = tg_reader_new(C, text, strlen(text), "pos.rules", &e);
    if (!r)
        return NULL;
    tgR_track_positions(r, 1);
    *form = NULL;
    if (tg_reader_next(r, form, &e) != 1)
        TAP_DIAG("no form in %s: %s", text, e.message);
    return r;
}

/* "L:C" of sub in r's current form, or "none". */
static const char *at(const tg_reader *r, const tg_term *sub)
{
    static char buf[8][32];
    static int k;
    char *b = buf[k++ % 8];
    int line = -7, col = -7;
    if (tgR_pos(r, sub, &line, &col) != 0)
        snprintf(b, 32, "none");
    else
        snprintf(b, 32, "%d:%d", line, col);
    return b;
}

static void test_nested(void)
{
    tg_term *f;
    tg_reader *r = open_form("(foo (bar ?x) [baz 12345678901234567890 \"s\" |a b| 1.5 3/4])", &f);
    TAP_EQ_STR(at(r, f), "1:1", "the form itself");
    TAP_EQ_STR(at(r, S("foo")), "1:2", "the head symbol");
    TAP_EQ_STR(at(r, T("(bar ?x)")), "1:6", "a nested list at its bracket");
    TAP_EQ_STR(at(r, S("bar")), "1:7", "a symbol inside it");
    TAP_EQ_STR(at(r, T("?x")), "1:11", "a variable");
    TAP_EQ_STR(at(r, T("[baz 12345678901234567890 \"s\" |a b| 1.5 3/4]")), "1:15",
               "a [ ] list");
    TAP_EQ_STR(at(r, T("12345678901234567890")), "1:20", "a bignum");
    TAP_EQ_STR(at(r, T("\"s\"")), "1:41", "a string at its quote");
    TAP_EQ_STR(at(r, S("a b")), "1:45", "a quoted symbol at its bar");
    TAP_EQ_STR(at(r, T("1.5")), "1:51", "a double");
    TAP_EQ_STR(at(r, T("3/4")), "1:55", "a rational");
    TAP_EQ_STR(at(r, S("qux")), "none", "a symbol not in the form");
    TAP_EQ_STR(at(r, T("(foo (bar ?x))")), "none", "a list not in the form");
    TAP_EQ_STR(at(r, T("((bar ?x) [baz 12345678901234567890 \"s\" |a b| 1.5 3/4])")), "none",
               "a tail of a list that was not written as one");
    TAP_CHECK(tgR_pos(r, NULL, NULL, NULL) == -1, "NULL has no position");
    int line = 0;
    TAP_CHECK(tgR_pos(r, S("bar"), &line, NULL) == 0 && line == 1, "column pointer may be NULL");
    tg_reader_free(r);
}

static void test_shared(void)
{
    tg_term *f;
    tg_reader *r = open_form("(f (g a) (h (g a)) a 7 (k 7) () ())", &f);
    TAP_EQ_STR(at(r, T("(g a)")), "1:4", "a shared list: its first occurrence");
    TAP_EQ_STR(at(r, T("(h (g a))")), "1:10", "the list around the second occurrence");
    TAP_EQ_STR(at(r, S("a")), "1:7", "a shared symbol: its first occurrence");
    TAP_EQ_STR(at(r, I(7)), "1:22", "a small integer: its first occurrence");
    TAP_EQ_STR(at(r, T("(k 7)")), "1:24", "the list holding the second 7");
    TAP_EQ_STR(at(r, tg_nil()), "1:30", "() at its first occurrence");
    tg_reader_free(r);

    /* written out in full and abbreviated: one term, the first wins */
    r = open_form("(p (quote x) 'x)", &f);
    TAP_EQ_STR(at(r, T("'x")), "1:4", "(quote x) before 'x");
    TAP_EQ_STR(at(r, S("quote")), "1:5", "the written quote symbol");
    tg_reader_free(r);
}

static void test_quotes(void)
{
    tg_term *f;
    tg_reader *r = open_form("(a 'x `(y ,z ,@w) ' \n  v '''u)", &f);
    TAP_EQ_STR(at(r, T("'x")), "1:4", "'x at the quote");
    TAP_EQ_STR(at(r, S("x")), "1:5", "x after it");
    TAP_EQ_STR(at(r, T("`(y ,z ,@w)")), "1:7", "a quasiquote at the backquote");
    TAP_EQ_STR(at(r, T("(y ,z ,@w)")), "1:8", "its datum");
    TAP_EQ_STR(at(r, T(",z")), "1:11", "an unquote at the comma");
    TAP_EQ_STR(at(r, T(",@w")), "1:14", "an unquote-splicing at the comma");
    TAP_EQ_STR(at(r, S("w")), "1:16", "after ,@");
    TAP_EQ_STR(at(r, T("'v")), "1:19", "a quote separated from its datum");
    TAP_EQ_STR(at(r, S("v")), "2:3", "... whose datum is on the next line");
    TAP_EQ_STR(at(r, T("'''u")), "2:5", "stacked quotes: the outermost");
    TAP_EQ_STR(at(r, T("''u")), "2:6", "the next");
    TAP_EQ_STR(at(r, T("'u")), "2:7", "the innermost");
    TAP_EQ_STR(at(r, S("quote")), "none", "the quote symbol the reader made up");
    tg_reader_free(r);
}

static void test_dotted(void)
{
    tg_term *f;
    tg_reader *r = open_form("(a . b)", &f);
    TAP_EQ_STR(at(r, f), "1:1", "(a . b)");
    TAP_EQ_STR(at(r, S("b")), "1:6", "the tail after the dot");
    tg_reader_free(r);

    r = open_form("(a b . (c . (d e)))", &f);
    TAP_CHECK(f == T("(a b c d e)"), "a list tail extends the list");
    TAP_EQ_STR(at(r, f), "1:1", "the whole list");
    TAP_EQ_STR(at(r, T("(c d e)")), "1:8", "a tail written as a list: its bracket");
    TAP_EQ_STR(at(r, T("(d e)")), "1:13", "a tail inside the tail");
    TAP_EQ_STR(at(r, T("(b c d e)")), "none", "a tail not written as one");
    tg_reader_free(r);

    r = open_form("(x y . 'z)", &f);
    TAP_EQ_STR(at(r, T("'z")), "1:8", "a quote form as the tail");
    tg_reader_free(r);
}

static void test_lines_and_tabs(void)
{
    tg_term *f;
    const char *text = "; a rule\n"
                       "(rule r1\n"
                       "\t(foo ?x\t?y)\n"
                       "  =>\t(bar\n"
                       "\n"
                       "\t\t?y))";
    tg_reader *r = open_form(text, &f);
    int line, col;
    tg_reader_last_pos(r, &line, &col);
    TAP_CHECK(line == 2 && col == 1, "the form begins at 2:1 (got %d:%d)", line, col);
    TAP_EQ_STR(at(r, f), "2:1", "the form: as tg_reader_last_pos");
    TAP_EQ_STR(at(r, S("r1")), "2:7", "on the first line");
    TAP_EQ_STR(at(r, T("(foo ?x ?y)")), "3:2", "after a tab: a tab is one column");
    TAP_EQ_STR(at(r, T("?y")), "3:10", "after a tab inside the list");
    TAP_EQ_STR(at(r, S("=>")), "4:3", "after spaces");
    TAP_EQ_STR(at(r, T("(bar ?y)")), "4:6", "a list over three lines: its bracket");
    TAP_EQ_STR(at(r, T("?x")), "3:7", "the variable");
    tg_reader_free(r);

    /* CR LF: the CR is a byte of the line before; a lone CR is no newline */
    r = open_form("(a\r\n b\r c)", &f);
    TAP_EQ_STR(at(r, S("b")), "2:2", "after CR LF");
    TAP_EQ_STR(at(r, S("c")), "2:5", "after a lone CR");
    tg_reader_free(r);

    /* the same columns as errors give */
    tg_error e;
    r = tg_reader_new(C, "(a\n\t(b 1/0))", 12, NULL, &e);
    tg_error_clear(&e);
    int st = tg_reader_next(r, &f, &e);
    TAP_CHECK(st == -1 && e.line == 2 && e.column == 5,
              "an error after a tab is at 2:5 too (%d:%d)", e.line, e.column);
    tg_reader_free(r);
}

static void test_forms(void)
{
    const char *text = "(f a)\n#;(g b) (h (g b))\n  (k #;(m c) (m c) #;d)\n(f a)";
    tg_error e;
    tg_reader *r = tg_reader_new(C, text, strlen(text), NULL, &e);
    tg_term *f;
    TAP_EQ_STR(at(r, S("a")), "none", "nothing before the first form (tracking off)");
    tgR_track_positions(r, 1);
    TAP_EQ_STR(at(r, S("a")), "none", "nothing before the first form (tracking on)");
    TAP_CHECK(tg_reader_next(r, &f, &e) == 1, "first form");
    TAP_EQ_STR(at(r, S("a")), "1:4", "a in the first form");
    TAP_CHECK(tg_reader_next(r, &f, &e) == 1 && f == T("(h (g b))"), "second form");
    TAP_EQ_STR(at(r, S("a")), "none", "the table is emptied at each form");
    TAP_EQ_STR(at(r, T("(g b)")), "2:12", "not where a #; comment skipped it");
    TAP_EQ_STR(at(r, S("b")), "2:15", "nor its atoms");
    TAP_CHECK(tg_reader_next(r, &f, &e) == 1 && f == T("(k (m c))"), "third form");
    TAP_EQ_STR(at(r, T("(m c)")), "3:14", "a #; comment inside the form");
    TAP_EQ_STR(at(r, S("d")), "none", "a skipped atom");
    TAP_CHECK(tg_reader_next(r, &f, &e) == 1, "fourth form");
    TAP_EQ_STR(at(r, S("a")), "4:4", "a again, in a form read again");
    TAP_EQ_STR(at(r, f), "4:1", "the form read again");
    TAP_EQ_INT(tg_reader_next(r, &f, &e), 0, "end of input");
    TAP_EQ_STR(at(r, S("a")), "none", "no form after the end");
    TAP_EQ_STR(tgR_file(r), "<string>", "no file name given: <string>");
    tg_reader_free(r);

    r = tg_reader_new(C, "x", 1, "dir/a.rules", &e);
    TAP_EQ_STR(tgR_file(r), "dir/a.rules", "the file name given");
    tg_reader_free(r);
    TAP_CHECK(tgR_file(NULL) == NULL, "no reader, no name");
}

static void test_errors_and_flag(void)
{
    const char *text = "(a (b c]]\n(d (e 1/0) f)\n(b c)";
    tg_error e;
    tg_reader *r = tg_reader_new(C, text, strlen(text), NULL, &e);
    tg_term *f;
    tgR_track_positions(r, 1);
    TAP_EQ_INT(tg_reader_next(r, &f, &e), -1, "a mismatched bracket");
    TAP_EQ_STR(at(r, T("(b c)")), "none", "no positions from a form that failed");
    TAP_EQ_INT(tg_reader_next(r, &f, &e), -1, "a zero denominator deep in a form");
    TAP_EQ_STR(at(r, S("d")), "none", "none from that one either");
    TAP_CHECK(tg_reader_next(r, &f, &e) == 1 && f == T("(b c)"), "the form after the errors");
    TAP_EQ_STR(at(r, f), "3:1", "its position");
    TAP_EQ_STR(at(r, S("c")), "3:4", "a subterm of it");
    tg_reader_free(r);

    /* the flag off: the default, and turned off again */
    r = tg_reader_new(C, "(a b) (c d) (e f)", 17, NULL, &e);
    TAP_CHECK(tg_reader_next(r, &f, &e) == 1, "a form read untracked");
    TAP_CHECK(tgR_pos(r, f, NULL, NULL) == -1 && tgR_pos(r, S("a"), NULL, NULL) == -1,
              "tracking is off by default");
    tgR_track_positions(r, 1);
    TAP_EQ_STR(at(r, S("a")), "none", "turning it on does not go back to the last form");
    TAP_CHECK(tg_reader_next(r, &f, &e) == 1, "a form read tracked");
    TAP_EQ_STR(at(r, S("d")), "1:10", "turned on after the first form");
    tgR_track_positions(r, 0);
    TAP_EQ_STR(at(r, S("d")), "none", "turned off: nothing is reported");
    TAP_CHECK(tg_reader_next(r, &f, &e) == 1, "a form read untracked again");
    TAP_EQ_STR(at(r, S("e")), "none", "and nothing recorded");
    tg_reader_free(r);
    TAP_CHECK(tgR_pos(NULL, S("a"), NULL, NULL) == -1, "no reader");
    tgR_track_positions(NULL, 1);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void test_sizes(void)
{
    size_t n = 1000000;
    char *s = malloc(10 * n + 64);
    tg_error e;
    tg_term *f;

    /* (a (a (a ... x ...))): each level at its own bracket */
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        s[k++] = '(';
        s[k++] = 'a';
        s[k++] = ' ';
    }
    s[k++] = 'x';
    memset(s + k, ')', n);
    k += n;
    double t0 = now();
    tg_reader *r = tg_reader_new(C, s, k, NULL, &e);
    tgR_track_positions(r, 1);
    int ok = tg_reader_next(r, &f, &e) == 1;
    double t1 = now();
    TAP_CHECK(ok, "10^6 nested lists, tracked");
    TAP_DIAG("10^6 deep read with positions in %.2f s", t1 - t0);
    TAP_EQ_STR(at(r, S("x")), "1:3000001", "the innermost atom");
    tg_term *t = f;
    int bad = 0;
    for (size_t d = 0; t && d < n; d++) {
        if (d % 99991 == 0 || d == n - 1) {
            int line, col;
            if (tgR_pos(r, t, &line, &col) != 0 || line != 1 || col != (int)(3 * d + 1))
                bad++;
        }
        t = tg_nth(t, 1);
    }
    TAP_CHECK(!bad && t == S("x"), "levels of the nest at their brackets (%d wrong)", bad);
    tg_reader_free(r);

    /* (a a ... a) 10^7 long: one key for a, one for the list */
    size_t m = 10000000;
    char *l = malloc(2 * m + 8);
    l[0] = '(';
    for (size_t i = 0; i < m; i++) {
        l[1 + 2 * i] = 'a';
        l[2 + 2 * i] = ' ';
    }
    l[2 * m + 1] = ')';
    t0 = now();
    r = tg_reader_new(C, l, 2 * m + 2, NULL, &e);
    tgR_track_positions(r, 1);
    ok = tg_reader_next(r, &f, &e) == 1 && tg_length(f) == m;
    t1 = now();
    TAP_CHECK(ok, "a list of 10^7 elements, tracked");
    TAP_DIAG("10^7 elements read with positions in %.2f s", t1 - t0);
    TAP_EQ_STR(at(r, S("a")), "1:2", "its element, first occurrence");
    tg_reader_free(r);
    free(l);

    /* 10^6 distinct elements, one per line, then 10^5 small forms: the
     * big table must not be cleared for each of them */
    k = 0;
    s[k++] = '(';
    for (size_t i = 0; i < n; i++)
        k += (size_t)sprintf(s + k, "\n%zu", i);
    s[k++] = ')';
    size_t small = 100000;
    char *text = malloc(k + 4 * small + 8);
    memcpy(text, s, k);
    for (size_t i = 0; i < small; i++)
        memcpy(text + k + 4 * i, "\n(y)", 4);
    size_t len = k + 4 * small;
    t0 = now();
    r = tg_reader_new(C, text, len, NULL, &e);
    tgR_track_positions(r, 1);
    ok = tg_reader_next(r, &f, &e) == 1 && tg_length(f) == n;
    TAP_CHECK(ok, "10^6 distinct elements on 10^6 lines");
    TAP_EQ_STR(at(r, I(0)), "2:1", "the first element");
    TAP_EQ_STR(at(r, I(123456)), "123458:1", "an element in the middle");
    TAP_EQ_STR(at(r, I((int64_t)n - 1)), "1000001:1", "the last element");
    size_t forms = 0;
    while (forms < small && tg_reader_next(r, &f, &e) == 1)
        forms++;
    t1 = now();
    TAP_CHECK(forms == small, "then 10^5 small forms (%zu)", forms);
    TAP_EQ_STR(at(r, S("y")), "1100001:2", "the last small form's atom");
    TAP_EQ_INT(tg_reader_next(r, &f, &e), 0, "and the end");
    TAP_DIAG("10^6 elements and 10^5 forms read with positions in %.2f s", t1 - t0);
    tg_reader_free(r);
    free(text);
    free(s);
}

int main(void)
{
    tg_error e;
    C = tg_ctx_new(&e);
    if (!C) {
        printf("Bail out! no context: %s\n", e.message);
        return 1;
    }
    test_nested();
    test_shared();
    test_quotes();
    test_dotted();
    test_lines_and_tabs();
    test_forms();
    test_errors_and_flag();
    test_sizes();
    tg_ctx_free(C);
    return TAP_DONE();
}
