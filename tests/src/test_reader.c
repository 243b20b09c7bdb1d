/* test_reader.c - tests of the S-expression reader (src/reader.c): every
 * syntax element, every error message with its position, recovery after
 * errors, hash-consing of what is read, deep and long input, random bytes,
 * agreement with the printer, and tg_slurp_file.
 */
#include "harness.h"
#include "reader.h"
#include "tgrel.h"

#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static tg_ctx *C;

static tg_term *S(const char *name)
{
    return tg_symbol_cstr(C, name);
}

static tg_term *I(int64_t v)
{
    return tg_int(C, v);
}

static tg_term *D(double v)
{
    return tg_double(C, v);
}

static tg_term *V(const char *name, uint64_t id)
{
    return tg_var(C, name, strlen(name), id);
}

/* (a0 ... an-1 . tail) from a NULL-free argument list. */
static tg_term *Lv(tg_term *tail, size_t n, va_list ap)
{
    tg_term *e[32];
    for (size_t i = 0; i < n; i++)
        e[i] = va_arg(ap, tg_term *);
    return tg_list(C, n, e, tail);
}

static tg_term *L(size_t n, ...)
{
    va_list ap;
    va_start(ap, n);
    tg_term *t = Lv(NULL, n, ap);
    va_end(ap);
    return t;
}

static tg_term *DL(tg_term *tail, size_t n, ...)
{
    va_list ap;
    va_start(ap, n);
    tg_term *t = Lv(tail, n, ap);
    va_end(ap);
    return t;
}

static tg_term *Rn(const char *text, size_t len)
{
    tg_error e;
    tg_error_clear(&e);
    tg_term *t = tg_read(C, text, len, &e);
    if (!t)
        TAP_DIAG("reading \"%s\" failed: %s", text, e.message);
    return t;
}

static tg_term *R(const char *text)
{
    return Rn(text, strlen(text));
}

/* The printed form of t for diagnostics and sequences (caller frees). */
static char *P(const tg_term *t)
{
    char *s = t ? tg_print(t, NULL) : NULL;
    return s ? s : strdup("(null)");
}

#define READS(text, want)                                              \
    do {                                                               \
        tg_term *got_ = R(text), *want_ = (want);                      \
        if (!TAP_CHECK(got_ && got_ == want_, "reads %s", (text))) {   \
            char *g_ = P(got_), *w_ = P(want_);                        \
            TAP_DIAG("got %s, want %s", g_, w_);                       \
            free(g_);                                                  \
            free(w_);                                                  \
        }                                                              \
    } while (0)

/* tg_read of len bytes must fail with this position and message. */
static void check_err(const char *text, size_t len, int line, int col, const char *msg)
{
    tg_error e;
    tg_error_clear(&e);
    tg_term *t = tg_read(C, text, len, &e);
    int ok = t == NULL && e.code == TG_ERR_SYNTAX && e.line == line && e.column == col &&
             strcmp(e.message, msg) == 0 && strcmp(e.file, "<string>") == 0;
    char shown[80];
    size_t k = 0;
    for (size_t i = 0; i < len && k + 5 < sizeof shown; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c == 0)
            k += (size_t)snprintf(shown + k, sizeof shown - k, "\\0");
        else
            shown[k++] = (char)c;
    }
    shown[k] = 0;
    if (!TAP_CHECK(ok, "error %d:%d %s <- %s", line, col, msg, shown))
        TAP_DIAG("got %s:%d:%d: %s (code %d)", e.file, e.line, e.column, e.message,
                 (int)e.code);
}

#define ERR(text, line, col, msg) check_err((text), strlen(text), (line), (col), (msg))

/* Every outcome of tg_reader_next over text, as "term" or "E l:c msg",
 * joined by " | ". */
static char *outcomes(const char *text, size_t len)
{
    static char buf[4096];
    size_t k = 0;
    tg_error e;
    tg_reader *r = tg_reader_new(C, text, len, NULL, &e);
    buf[0] = 0;
    if (!r)
        return buf;
    for (int guard = 0; guard < 100; guard++) {
        tg_term *t = NULL;
        int st = tg_reader_next(r, &t, &e);
        if (st == 0)
            break;
        if (k)
            k += (size_t)snprintf(buf + k, sizeof buf - k, " | ");
        if (st > 0) {
            char *s = P(t);
            k += (size_t)snprintf(buf + k, sizeof buf - k, "%s", s);
            free(s);
        } else {
            k += (size_t)snprintf(buf + k, sizeof buf - k, "E %d:%d %s", e.line, e.column,
                                  e.message);
        }
        if (k >= sizeof buf)
            break;
    }
    tg_reader_free(r);
    return buf;
}

#define SEQ(text, want) TAP_EQ_STR(outcomes((text), strlen(text)), (want), "sequence: " text)

/* ---- atoms ------------------------------------------------------------ */

static void test_symbols(void)
{
    static const char *const same[] = {
        "abc", "+", "-", "...", "..", "#t", "#f", "#s", "#u", "#", "a|b", "a|", "?", "1+",
        "-x", ".5x", "1e", "1e+", "+.", "-.", "1/-2", "1/2/3", "1/", "/2", "/", "0x10",
        "1.2.3", "a.b", "infinity", "-nan0", "nan1", "++1", "+-1", "{a}", "\xc3\xa9t\xc3\xa9",
        "\x01\x7f", "@x", "a#|b|#", "e5", "1_000", "-inf-", "Inf", "NaN", "1.5f",
        "a\\b", "\xff\xfe",
    };
    for (size_t i = 0; i < sizeof same / sizeof *same; i++)
        READS(same[i], S(same[i]));
    READS("  abc  ", S("abc"));
    READS("abc;comment", S("abc"));
    SEQ("a(b)c\"d\"e'f`g,h[i]", "a | (b) | c | \"d\" | e | 'f | `g | ,h | (i)");
}

static void test_integers(void)
{
    READS("0", I(0));
    READS("-0", I(0));
    READS("+0", I(0));
    READS("42", I(42));
    READS("+42", I(42));
    READS("-42", I(-42));
    READS("007", I(7));
    READS("2305843009213693951", I(((int64_t)1 << 61) - 1));
    READS("2305843009213693952", I((int64_t)1 << 61));
    READS("-2305843009213693953", I(-((int64_t)1 << 61) - 1));
    READS("9223372036854775807", I(INT64_MAX));
    READS("-9223372036854775808", I(INT64_MIN));
    READS("0000000000000000000000000000000000012", I(12));
    READS("-0000000000000000000000000000000000012", I(-12));

    static const char *const big[] = {
        "9223372036854775808", "-9223372036854775809", "18446744073709551616",
        "123456789012345678901234567890123456789012345678901234567890",
        "-99999999999999999999999999999999999999999999999999999999999999999999",
    };
    for (size_t i = 0; i < sizeof big / sizeof *big; i++) {
        tg_term *t = R(big[i]);
        mpz_t want, got;
        mpz_init_set_str(want, big[i], 10);
        mpz_init(got);
        TAP_CHECK(t && tg_kind_of(t) == TG_INT && tg_int_get_mpz(t, got) == 0 &&
                      mpz_cmp(got, want) == 0 && tg_int_mpz(C, want) == t,
                  "big integer %s", big[i]);
        mpz_clear(want);
        mpz_clear(got);
    }
    READS("+123456789012345678901234567890", R("123456789012345678901234567890"));

    /* 10000 digits, and back through the printer. */
    size_t n = 10000;
    char *s = malloc(n + 2);
    s[0] = '-';
    for (size_t i = 1; i <= n; i++)
        s[i] = (char)('1' + i % 9);
    s[n + 1] = 0;
    tg_term *t = R(s);
    char *p = P(t);
    TAP_CHECK(t && tg_kind_of(t) == TG_INT && strcmp(p, s) == 0,
              "a 10000-digit integer reads and prints back");
    free(p);
    free(s);
}

static void test_rationals(void)
{
    tg_error e;
    READS("1/2", tg_rat(C, 1, 2, &e));
    READS("-3/6", tg_rat(C, -1, 2, &e));
    READS("+1/3", tg_rat(C, 1, 3, &e));
    READS("4/2", I(2));
    READS("-9/3", I(-3));
    READS("0/7", I(0));
    READS("00/5", I(0));
    READS("6/0004", tg_rat(C, 3, 2, &e));
    tg_term *t = R("1/100000000000000000000000000000");
    mpq_t want, got;
    mpq_init(want);
    mpq_init(got);
    mpq_set_str(want, "1/100000000000000000000000000000", 10);
    TAP_CHECK(t && tg_kind_of(t) == TG_RAT && tg_rat_get_mpq(t, got) == 0 &&
                  mpq_equal(got, want),
              "rational with a big denominator");
    mpq_set_str(want, "-200000000000000000000000000000/3", 10);
    t = R("-200000000000000000000000000000/3");
    TAP_CHECK(t && tg_kind_of(t) == TG_RAT && tg_rat_get_mpq(t, got) == 0 &&
                  mpq_equal(got, want),
              "rational with a big numerator");
    mpq_clear(want);
    mpq_clear(got);
}

static void test_doubles(void)
{
    READS("1.5", D(1.5));
    READS("-1.5", D(-1.5));
    READS("+2.5", D(2.5));
    READS("0.1", D(0.1));
    READS("1.", D(1.0));
    READS(".5", D(0.5));
    READS("-.5e-3", D(-0.5e-3));
    READS("+.25", D(0.25));
    READS("1e5", D(1e5));
    READS("1E5", D(1e5));
    READS("1e+100", D(1e100));
    READS("1.5e-7", D(1.5e-7));
    READS("2.E3", D(2000.0));
    READS("-0.0", D(-0.0));
    READS("0.0", D(0.0));
    TAP_CHECK(R("-0.0") != R("0.0"), "-0.0 and 0.0 are two terms");
    TAP_CHECK(R("1.0") != R("1"), "1.0 is not the integer 1");
    READS("1e400", D(INFINITY));
    READS("-1e400", D(-INFINITY));
    READS("1e-400", D(0.0));
    READS("4.9406564584124654e-324", D(4.9406564584124654e-324));
    READS("inf", D(INFINITY));
    READS("+inf", D(INFINITY));
    READS("-inf", D(-INFINITY));
    READS("nan", D(NAN));
    READS("+nan", D(NAN));
    READS("-nan", D(NAN));
    READS("0.30000000000000004", D(0.30000000000000004));
    READS("1.7976931348623157e308", D(1.7976931348623157e308));
    READS("1797693134862315700000000000000000000000000000000000000000000000000000000000"
          "0000000000000000000000000000000000000000000000000000000000000000000000000000"
          "0000000000000000000000000000000000000000000000000000000000000000000000000000"
          "0000000000000000000000000000000000000000000000000000000000000000000000000000"
          "00000.0",
          D(1.7976931348623157e308));
}

/* n is the byte count, or SIZE_MAX for strlen(bytes) */
/* A program may have set a locale whose decimal point is not '.'. */
static void test_locale(void)
{
    static const char *const names[] = { "de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8",
                                          "fr_FR.utf8", "de_DE", "fr_FR" };
    const char *got = NULL;
    for (size_t i = 0; i < sizeof names / sizeof *names && !got; i++)
        got = setlocale(LC_NUMERIC, names[i]);
    if (!got || strcmp(localeconv()->decimal_point, ".") == 0) {
        setlocale(LC_NUMERIC, "C");
        TAP_DIAG("no locale with a decimal comma installed: locale test skipped");
        return;
    }
    READS("1.5", D(1.5));
    READS("-2.25e1", D(-22.5));
    READS(".5", D(0.5));
    TAP_CHECK(tg_read_cstr(C, "1,5", NULL) == NULL, "1,5 is not a number (a comma is unquote)");
    setlocale(LC_NUMERIC, "C");
}

static void check_string(const char *text, const char *bytes, size_t n)
{
    if (n == SIZE_MAX)
        n = strlen(bytes);
    tg_term *t = R(text);
    size_t len = 0;
    const char *b = t ? tg_string_bytes(t, &len) : NULL;
    TAP_CHECK(t && tg_kind_of(t) == TG_STRING && len == n && memcmp(b, bytes, n) == 0 &&
                  t == tg_string(C, bytes, n),
              "string %s", text);
}

static void test_strings(void)
{
    check_string("\"\"", "", 0);
    check_string("\"abc\"", "abc", 3);
    check_string("\"\\n\\t\\r\\0\\a\\b\\f\\v\\\\\\\"\"", "\n\t\r\0\a\b\f\v\\\"", 10);
    check_string("\"\\x41\\xff\\x00\\x7F\\xaB\"", "A\xff\0\x7f\xab", 5);
    check_string("\"line1\nline2\"", "line1\nline2", 11);
    check_string("\"a;b (c) [d] 'e |f| #|g|#\"", "a;b (c) [d] 'e |f| #|g|#", SIZE_MAX);
    check_string("\"\xc3\xa9\xff\"", "\xc3\xa9\xff", 3);
    check_string("\"pre\\nmid\\tpost\"", "pre\nmid\tpost", 12);
    /* a long string with an escape at the end (the scratch buffer grows) */
    size_t n = 100000;
    char *text = malloc(n + 8), *want = malloc(n + 2);
    text[0] = '"';
    for (size_t i = 0; i < n; i++)
        text[i + 1] = want[i] = (char)('a' + i % 26);
    memcpy(text + n + 1, "\\n\"", 4);
    want[n] = '\n';
    tg_term *t = R(text);
    size_t len = 0;
    const char *b = t ? tg_string_bytes(t, &len) : NULL;
    TAP_CHECK(b && len == n + 1 && memcmp(b, want, n + 1) == 0, "long string with escapes");
    free(text);
    free(want);
}

static void test_quoted_symbols(void)
{
    READS("|a b|", S("a b"));
    READS("||", tg_symbol(C, "", 0));
    READS("|\\||", S("|"));
    READS("|\\x41\\n\\0|", tg_symbol(C, "A\n\0", 3));
    READS("|1|", S("1"));
    READS("|.|", S("."));
    READS("|\"|", S("\""));
    READS("|\\\"|", S("\""));
    READS("|?x|", S("?x"));
    READS("|(a)|", S("(a)"));
    READS("|abc|", S("abc"));
    READS("|a\nb|", S("a\nb"));
    SEQ("|a|b", "a | b");
    SEQ("|a||b|", "a | b");
    SEQ("|x|(y)", "x | (y)");
}

static void test_variables(void)
{
    READS("?x", V("x", 0));
    READS("?x.3", V("x", 3));
    READS("?x.0", V("x", 0));
    READS("?x.01", V("x.01", 0));
    READS("?x.", V("x.", 0));
    READS("?a.b.7", V("a.b", 7));
    READS("?a.b", V("a.b", 0));
    READS("?.5", V(".5", 0));
    READS("?..3", V(".", 3));
    READS("?1", V("1", 0));
    READS("?1.2", V("1", 2));
    READS("??", V("?", 0));
    READS("?x.18446744073709551615", V("x", UINT64_MAX));
    READS("?x.18446744073709551616", V("x.18446744073709551616", 0));
    READS("?x.+3", V("x.+3", 0));
    READS("?x#t", V("x#t", 0));
    READS("?x|y|", V("x|y|", 0));
    READS("?|a b|", V("a b", 0));
    READS("?|a b|.7", V("a b", 7));
    READS("?|x|.0", V("x", 0));
    READS("?|x.3|", V("x.3", 0));
    READS("?||", tg_var(C, "", 0, 0));
    READS("?|\\|\\x41|.18446744073709551615", V("|A", UINT64_MAX));
    READS("?", S("?"));
    SEQ("?|x|y", "?x | y");
    SEQ("?|x|.2(a)", "?x.2 | (a)");
    TAP_CHECK(tg_kind_of(R("?x")) == TG_VAR && tg_var_id(R("?x.9")) == 9, "variable kinds");
}

/* ---- structure --------------------------------------------------------- */

static void test_lists(void)
{
    tg_term *a = S("a"), *b = S("b"), *c = S("c");
    READS("()", tg_nil());
    READS("[]", tg_nil());
    READS("( )", tg_nil());
    READS("(a)", L(1, a));
    READS("(a b c)", L(3, a, b, c));
    READS("[a b c]", L(3, a, b, c));
    READS("(a [b] (c))", L(3, a, L(1, b), L(1, c)));
    READS("((()))", L(1, L(1, tg_nil())));
    READS("(a . b)", DL(b, 1, a));
    READS("(a b . c)", DL(c, 2, a, b));
    READS("[a . b]", DL(b, 1, a));
    READS("(a . (b c))", L(3, a, b, c));
    READS("(a . [b . (c)])", L(3, a, b, c));
    READS("(a . ())", L(1, a));
    READS("(a .b)", L(2, a, S(".b")));
    READS("(a. b)", L(2, S("a."), b));
    READS("(a . 1)", DL(I(1), 1, a));
    READS("(1 . 2)", DL(I(2), 1, I(1)));
    READS("(a .5)", L(2, a, D(0.5)));
    READS("(a\n.\nb)", DL(b, 1, a));
    READS("(a . ?x)", DL(V("x", 0), 1, a));
    READS("(a . 'b)", DL(L(2, S("quote"), b), 1, a));
    READS("(a . b ; c\n)", DL(b, 1, a));
    READS("(\"x\"\"y\")", L(2, tg_string(C, "x", 1), tg_string(C, "y", 1)));
    READS("(a(b)c)", L(3, a, L(1, b), c));

    /* lists longer than one chunk, and dotted ones, against cons */
    char text[512];
    size_t k = (size_t)snprintf(text, sizeof text, "(");
    tg_term *el[40];
    for (int i = 0; i < 40; i++) {
        k += (size_t)snprintf(text + k, sizeof text - k, "e%d ", i);
        char nm[16];
        snprintf(nm, sizeof nm, "e%d", i);
        el[i] = S(nm);
    }
    snprintf(text + k, sizeof text - k, ". tail)");
    tg_term *t = S("tail");
    for (int i = 39; i >= 0; i--)
        t = tg_cons(C, el[i], t);
    READS(text, t);
}

static void test_prefixes(void)
{
    tg_term *a = S("a"), *q = S("quote");
    READS("'a", L(2, q, a));
    READS("`a", L(2, S("quasiquote"), a));
    READS(",a", L(2, S("unquote"), a));
    READS(",@a", L(2, S("unquote-splicing"), a));
    READS("''a", L(2, q, L(2, q, a)));
    READS("'(a b)", L(2, q, L(2, a, S("b"))));
    READS("' a", L(2, q, a));
    READS("'\n;c\n#|c|# a", L(2, q, a));
    READS(", @a", L(2, S("unquote"), S("@a")));
    READS("`(a ,b ,@c)", L(2, S("quasiquote"), L(3, a, L(2, S("unquote"), S("b")),
                                                L(2, S("unquote-splicing"), S("c")))));
    READS("'#;b a", L(2, q, a));
    READS("'()", L(2, q, tg_nil()));
    READS("'\"s\"", L(2, q, tg_string(C, "s", 1)));
    READS("'1/2", L(2, q, R("1/2")));
    READS("'|x y|", L(2, q, S("x y")));
    READS("(a 'b . 'c)", DL(L(2, q, S("c")), 2, a, L(2, q, S("b"))));
}

static void test_comments(void)
{
    tg_term *a = S("a"), *b = S("b"), *c = S("c");
    READS("; x\na", a);
    READS("a ; x", a);
    READS("a;x", a);
    READS("#|x|#a", a);
    READS("#| #| nested |# still |# a", a);
    READS("#|||#a", a);
    READS("#|#||#|#a", a);
    READS("#| a #| b |# c #| d |# e |# x", S("x"));
    READS("#| ( \" |# a", a);
    READS("#|\n\n|#a", a);
    READS("#;a b", b);
    READS("#;(a (b)) c", c);
    READS("#;'a b", b);
    READS("#; #; a b c", c);
    READS("#;#;a b c", c);
    READS("(a #;b c)", L(2, a, c));
    READS("(a . b #;c)", DL(b, 1, a));
    READS("(a . #;c b)", DL(b, 1, a));
    READS("(a #;(x . y) . b)", DL(b, 1, a));
    READS("(#;a)", tg_nil());
    READS("#;#|c|#a b", b);
    READS("#;\"s\" a", a);
    READS("#;|s| a", a);
    READS("#;?x a", a);
    READS("#;1/2 a", a);
    READS("a #;b", a);
    READS("(a ;)\n)", L(1, a));
    READS("(a #|)|#)", L(1, a));
    READS("a#|b|#", S("a#|b|#"));
    READS("a#;b", S("a#"));
    SEQ("a #| b |# c ; d\n e", "a | c | e");
}

static void test_equality(void)
{
    tg_term *t1 = R("(add x y z)"), *t2 = R("(add   x\ny  z)");
    tg_term *add = S("add"), *args[3] = { S("x"), S("y"), S("z") };
    TAP_CHECK(t1 && t1 == t2, "(add x y z) read twice is one pointer");
    TAP_CHECK(t1 == tg_app(C, add, 3, args), "equals tg_app(add, [x y z])");
    TAP_CHECK(t1 == tg_cons(C, add, R("(x y z)")), "equals cons of add onto (x y z)");
    TAP_CHECK(R("(a . (b . (c . ())))") == R("(a b c)"), "dotted spelling is the same list");
    TAP_CHECK(R("[f [g x] 1/2 \"s\" ?v.2]") == R("(f (g x) 2/4 \"\\x73\" ?v.2)"),
              "different spellings, one term");
}

/* ---- positions ---------------------------------------------------------- */

static void test_last_pos(void)
{
    const char *text = "  a\n (b c)\n\n   'd ;x\n#|\n|# e\n\t\"s\"";
    tg_error e;
    tg_reader *r = tg_reader_new(C, text, strlen(text), "pos.tg", &e);
    int want[][2] = { { 1, 3 }, { 2, 2 }, { 4, 4 }, { 6, 4 }, { 7, 2 } };
    int line = -1, col = -1;
    tg_reader_last_pos(r, &line, &col);
    TAP_CHECK(line == 0 && col == 0, "no position before the first term");
    for (int i = 0; i < 5; i++) {
        tg_term *t;
        int st = tg_reader_next(r, &t, &e);
        tg_reader_last_pos(r, &line, &col);
        TAP_CHECK(st == 1 && line == want[i][0] && col == want[i][1],
                  "term %d begins at %d:%d (got %d:%d)", i, want[i][0], want[i][1], line, col);
    }
    tg_term *t = NULL;
    TAP_EQ_INT(tg_reader_next(r, &t, &e), 0, "end of input");
    TAP_EQ_INT(tg_reader_next(r, &t, &e), 0, "end of input again");
    tg_reader_free(r);

    /* the file name given appears in errors */
    r = tg_reader_new(C, "(a\n", 3, "rules/x.rules", &e);
    tg_error_clear(&e);
    TAP_EQ_INT(tg_reader_next(r, &t, &e), -1, "error in a named file");
    TAP_EQ_STR(e.file, "rules/x.rules", "file name in the error");
    char buf[600];
    TAP_EQ_STR(tg_error_format(&e, buf, sizeof buf),
               "rules/x.rules:2:1: unterminated list (opened at 1:1)", "formatted error");
    tg_reader_free(r);

    /* the name is copied */
    char name[16] = "temp.tg";
    r = tg_reader_new(C, ")", 1, name, &e);
    strcpy(name, "changed");
    tg_reader_next(r, &t, &e);
    TAP_EQ_STR(e.file, "temp.tg", "the reader keeps its own copy of the file name");
    tg_reader_free(r);

    /* and so is the text */
    char text2[8] = "(a b)";
    r = tg_reader_new(C, text2, 5, NULL, &e);
    memcpy(text2, "(x y)", 5);
    TAP_CHECK(tg_reader_next(r, &t, &e) == 1 && t == R("(a b)"),
              "the reader keeps its own copy of the text");
    tg_reader_free(r);
}

/* ---- errors ----------------------------------------------------------------- */

static void test_errors(void)
{
    ERR("(a", 1, 3, "unterminated list (opened at 1:1)");
    ERR("(a\n (b c)\n  (d", 3, 5, "unterminated list (opened at 3:3)");
    ERR("[", 1, 2, "unterminated list (opened at 1:1)");
    ERR(")", 1, 1, "unexpected ')'");
    ERR("  ]", 1, 3, "unexpected ']'");
    ERR("(a]", 1, 3, "mismatched ']' (list opened with '(' at 1:1)");
    ERR("[a)", 1, 3, "mismatched ')' (list opened with '[' at 1:1)");
    ERR("(a\n  b\n   c]", 3, 5, "mismatched ']' (list opened with '(' at 1:1)");
    ERR("(a . )", 1, 6, "datum expected after '.'");
    ERR("(a . . b)", 1, 6, "datum expected after '.'");
    ERR("(a .", 1, 5, "unterminated list (opened at 1:1)");
    ERR("( . a)", 1, 3, "datum expected before '.'");
    ERR("(a . b c)", 1, 8, "more than one datum after '.'");
    ERR("(a . b . c)", 1, 8, "more than one datum after '.'");
    ERR("(a . b (c))", 1, 8, "more than one datum after '.'");
    ERR("(a . b 'c)", 1, 8, "more than one datum after '.'");
    ERR(".", 1, 1, "'.' outside a list");
    ERR("  .  ", 1, 3, "'.' outside a list");
    ERR("(a) .", 1, 5, "'.' outside a list");
    ERR("'", 1, 2, "datum expected after '''");
    ERR("(')", 1, 3, "datum expected after '''");
    ERR("(a `)", 1, 5, "datum expected after '`'");
    ERR("(,)", 1, 3, "datum expected after ','");
    ERR(",@", 1, 3, "datum expected after ',@'");
    ERR("'.", 1, 2, "datum expected after '''");
    ERR("(a '. b)", 1, 5, "datum expected after '''");
    ERR("#;", 1, 3, "datum expected after '#;'");
    ERR("(a #;)", 1, 6, "datum expected after '#;'");
    ERR("(#; . a)", 1, 5, "datum expected after '#;'");
    ERR("\"abc", 1, 1, "unterminated string");
    ERR("x \"abc\\\"", 1, 3, "unterminated string");
    ERR("\"abc\\\"", 1, 1, "unterminated string");
    ERR("\"abc\\", 1, 1, "unterminated string");
    ERR("\"a\\qb\"", 1, 3, "unknown escape \\q in string");
    ERR("\"\\|\"", 1, 2, "unknown escape \\| in string");
    ERR("\"\\x4\"", 1, 2, "bad escape \\x in string (two hex digits expected)");
    ERR("\"\\xg0\"", 1, 2, "bad escape \\x in string (two hex digits expected)");
    ERR("\"\\x", 1, 1, "unterminated string");
    ERR("\"\\\n\"", 1, 2, "unknown escape: '\\' followed by byte 0x0A in string");
    ERR("\"\\\xff\"", 1, 2, "unknown escape: '\\' followed by byte 0xFF in string");
    ERR("\"ok\\q\\w\"", 1, 4, "unknown escape \\q in string");
    ERR("\"\\q unterminated", 1, 1, "unterminated string");
    ERR("|abc", 1, 1, "unterminated quoted symbol");
    ERR("|\\q|", 1, 2, "unknown escape \\q in quoted symbol");
    ERR("|\\x1|", 1, 2, "bad escape \\x in quoted symbol (two hex digits expected)");
    ERR("?|abc", 1, 1, "unterminated quoted variable name");
    ERR("?|a\\q|", 1, 4, "unknown escape \\q in quoted variable name");
    ERR("?|x|.05", 1, 5, "bad variable number after ?|...| (0 or [1-9][0-9]* expected)");
    ERR("?|x|.", 1, 5, "bad variable number after ?|...| (0 or [1-9][0-9]* expected)");
    ERR("?|x|.1a", 1, 5, "bad variable number after ?|...| (0 or [1-9][0-9]* expected)");
    ERR("?|x|.18446744073709551616", 1, 5,
        "bad variable number after ?|...| (0 or [1-9][0-9]* expected)");
    ERR("1/0", 1, 1, "zero denominator in rational");
    ERR("(a\n -7/000)", 2, 2, "zero denominator in rational");
    ERR("123456789012345678901234567890/0", 1, 1, "zero denominator in rational");
    ERR("#| abc", 1, 1, "unterminated block comment");
    ERR("a #| #| |#", 1, 3, "unterminated block comment");
    ERR("", 1, 1, "no term in input");
    ERR("  \n ; c\n", 3, 1, "no term in input");
    ERR("#| c |#", 1, 8, "no term in input");
    ERR("#;a", 1, 4, "no term in input");
    ERR("a b", 1, 3, "more than one term in input");
    ERR("(a)\n  (b)", 2, 3, "more than one term in input");
    ERR("(a) )", 1, 5, "unexpected ')'");
    ERR("a'", 1, 3, "datum expected after '''");

    /* NUL bytes are refused wherever they are */
    check_err("\0", 1, 1, 1, "NUL byte in input");
    check_err("a\0", 2, 1, 2, "NUL byte in input");
    check_err("\"a\0b\"", 5, 1, 3, "NUL byte in input");
    check_err("|a\0b|", 5, 1, 3, "NUL byte in input");
    check_err("; c\0\n a", 7, 1, 4, "NUL byte in input");
    check_err("#| \0 |# a", 9, 1, 4, "NUL byte in input");
    check_err("(a \0 b)", 7, 1, 4, "NUL byte in input");
    check_err("\"\0\\q\"", 5, 1, 2, "NUL byte in input");
    check_err("\"\0", 2, 1, 1, "unterminated string");

    /* tg_read_cstr and bad arguments */
    tg_error e;
    tg_error_clear(&e);
    TAP_CHECK(tg_read_cstr(C, "(a b)", &e) == R("(a b)"), "tg_read_cstr");
    TAP_CHECK(tg_read_cstr(C, NULL, &e) == NULL && e.code == TG_ERR_ARG, "tg_read_cstr(NULL)");
    TAP_CHECK(tg_read(NULL, "a", 1, &e) == NULL && e.code == TG_ERR_ARG, "tg_read without ctx");
    TAP_CHECK(tg_read(C, NULL, 3, &e) == NULL && e.code == TG_ERR_ARG, "tg_read(NULL, 3)");
    tg_error_clear(&e);
    TAP_CHECK(tg_read(C, NULL, 0, &e) == NULL && e.code == TG_ERR_SYNTAX,
              "tg_read(NULL, 0) is empty input");
    TAP_CHECK(tg_reader_new(NULL, "a", 1, NULL, &e) == NULL && e.code == TG_ERR_ARG,
              "tg_reader_new without ctx");
    TAP_CHECK(tg_reader_next(NULL, NULL, &e) == -1 && e.code == TG_ERR_ARG,
              "tg_reader_next(NULL)");
    TAP_CHECK(tg_read(C, "(a", 2, NULL) == NULL, "errors without a tg_error");
    tg_reader_free(NULL);
    tg_reader *r = tg_reader_new(C, "a (b", 4, NULL, NULL);
    tg_term *t;
    TAP_CHECK(tg_reader_next(r, NULL, NULL) == 1 && tg_reader_next(r, &t, NULL) == -1 &&
                  tg_reader_next(r, &t, NULL) == 0,
              "tg_reader_next with NULL out and err");
    tg_reader_free(r);
}

static void test_recovery(void)
{
    SEQ("(a . ) b", "E 1:6 datum expected after '.' | b");
    SEQ(") a ] b", "E 1:1 unexpected ')' | a | E 1:5 unexpected ']' | b");
    SEQ("(a (b c] d) e", "E 1:8 mismatched ']' (list opened with '(' at 1:4) | e");
    SEQ("(a \"x\\q ) \" b) c", "E 1:6 unknown escape \\q in string | c");
    SEQ("(a #| ) |# b c . d e) f", "E 1:20 more than one datum after '.' | f");
    SEQ("(1/0 (x)) y", "E 1:2 zero denominator in rational | y");
    SEQ("'\n)\nq", "E 2:1 datum expected after ''' | q");
    SEQ("(a \"unterminated", "E 1:4 unterminated string");
    SEQ("(a ; ) comment\n b) c", "(a b) | c");
    SEQ("(a |x) y| ) z", "(a |x) y|) | z");
    SEQ("(. #| ) |# ) z", "E 1:2 datum expected before '.' | z");
    SEQ("(a ?|x) y| . 1 2) z", "E 1:16 more than one datum after '.' | z");
    SEQ("(a \"x)\" . 1 2 \"y)\") z", "E 1:13 more than one datum after '.' | z");
    SEQ("(a . 1 2 |x)|) z", "E 1:8 more than one datum after '.' | z");
    SEQ("(a . 1 2 #;(x)) z", "E 1:8 more than one datum after '.' | z");
    SEQ("((a . ) (b)) (c)", "E 1:7 datum expected after '.' | (c)");
    SEQ("((((x]))) y", "E 1:6 mismatched ']' (list opened with '(' at 1:4) | y");
    SEQ("[(a] b] c", "E 1:4 mismatched ']' (list opened with '(' at 1:2) | c");
    SEQ("(a . ) ; x)\n z", "E 1:6 datum expected after '.' | z");
    SEQ("#| x\n y |#(a . b c) #| z |# d", "E 2:13 more than one datum after '.' | d");
    SEQ("(a ,) b", "E 1:5 datum expected after ',' | b");
    SEQ("' . a", "E 1:3 datum expected after ''' | a");
    SEQ(". a . b", "E 1:1 '.' outside a list | a | E 1:5 '.' outside a list | b");
    SEQ("(x 1/0 \"y\\q\") z", "E 1:4 zero denominator in rational | z");
    SEQ("a #| never closed", "a | E 1:3 unterminated block comment");
    TAP_EQ_STR(outcomes("\0 a", 3), "E 1:1 NUL byte in input | a", "sequence: NUL then a");
    TAP_EQ_STR(outcomes("(x \0 y) z", 9), "E 1:4 NUL byte in input | z",
               "sequence: NUL inside a list");
    TAP_EQ_STR(outcomes("; \0 (\n z", 8), "E 1:3 NUL byte in input | z",
               "sequence: NUL in a comment");
    TAP_EQ_STR(outcomes("\"\0 (\" z", 7), "E 1:2 NUL byte in input | z",
               "sequence: NUL in a string");
    TAP_EQ_STR(outcomes("#|\0 (|# z", 9), "E 1:3 NUL byte in input | z",
               "sequence: NUL in a block comment");
    TAP_EQ_STR(outcomes("abc\0def", 7), "abc | E 1:4 NUL byte in input | def",
               "sequence: NUL splits a token");
}

/* ---- size ------------------------------------------------------------------- */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void test_deep(void)
{
    size_t n = 1000000;
    char *s = malloc(4 * n + 8);

    /* ((((...)))) */
    memset(s, '(', n);
    memset(s + n, ')', n);
    tg_term *t = Rn(s, 2 * n);
    size_t depth = 0;
    while (t && tg_kind_of(t) == TG_PAIR) {
        t = tg_car(t);
        depth++;
    }
    TAP_CHECK(t == tg_nil() && depth == n - 1, "10^6 nested lists (depth %zu)", depth);

    /* (a (a (a ... ))) */
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        s[k++] = '(';
        s[k++] = 'a';
        s[k++] = ' ';
    }
    memset(s + k, ')', n);
    k += n;
    t = Rn(s, k);
    depth = 0;
    while (t && tg_kind_of(t) == TG_PAIR && tg_length(t) == 2 && tg_car(t) == S("a")) {
        t = tg_nth(t, 1);
        depth++;
    }
    TAP_CHECK(depth == n - 1 && t == L(1, S("a")), "(a (a (a ...))) 10^6 deep (depth %zu)",
              depth + 1);

    /* '''...a */
    memset(s, '\'', n);
    s[n] = 'a';
    t = Rn(s, n + 1);
    depth = 0;
    while (t && tg_kind_of(t) == TG_PAIR && tg_car(t) == S("quote")) {
        t = tg_nth(t, 1);
        depth++;
    }
    TAP_CHECK(depth == n && t == S("a"), "10^6 stacked quotes");

    /* deep and unterminated: an error, and recovery reaches the end */
    memset(s, '(', n);
    tg_error e;
    tg_error_clear(&e);
    t = tg_read(C, s, n, &e);
    TAP_CHECK(!t && e.line == 1 && e.column == (int)n + 1 &&
                  strcmp(e.message, "unterminated list (opened at 1:1000000)") == 0,
              "10^6 unclosed lists: %s", e.message);

    /* deep inside a datum comment, then a term */
    memset(s, '(', n);
    memset(s + n, ')', n);
    memmove(s + 2, s, 2 * n);
    s[0] = '#';
    s[1] = ';';
    s[2 * n + 2] = 'x';
    t = Rn(s, 2 * n + 3);
    TAP_CHECK(t == S("x"), "10^6 nested lists in a datum comment");

    /* an error deep inside: the whole form is skipped */
    memset(s, '(', n);
    s[n] = ']';
    memset(s + n + 1, ')', n - 1);
    memcpy(s + 2 * n, " ok", 3);
    TAP_EQ_STR(outcomes(s, 2 * n + 3), "E 1:1000001 mismatched ']' (list opened with '(' at "
                                       "1:1000000) | ok",
               "error at depth 10^6, recovery");
    free(s);
}

static void test_long(void)
{
    /* (a a a ... a): one element repeated, which also catches list hashes
     * that cycle (hash-consing would turn quadratic) */
    size_t n = 10000000;
    char *s = malloc(9 * n + 8);
    s[0] = '(';
    for (size_t i = 0; i < n; i++) {
        s[1 + 2 * i] = 'a';
        s[2 + 2 * i] = ' ';
    }
    s[2 * n + 1] = ')';
    double t0 = now();
    tg_term *t = Rn(s, 2 * n + 2);
    double t1 = now();
    TAP_CHECK(t && tg_length(t) == n && tg_nth(t, n - 1) == S("a") && tg_tail(t) == tg_nil(),
              "a list of 10^7 elements");
    TAP_DIAG("10^7 elements read in %.2f s", t1 - t0);

    /* distinct elements, dotted: (0 1 ... 999997 . 999999) */
    n = 1000000;
    size_t k = 0;
    s[k++] = '(';
    for (size_t i = 0; i < n - 2; i++)
        k += (size_t)sprintf(s + k, "%zu ", i);
    k += (size_t)sprintf(s + k, ". %zu)", n - 1);
    t = Rn(s, k);
    TAP_CHECK(t && tg_length(t) == n - 2 && tg_nth(t, 12345) == I(12345) &&
                  tg_tail(t) == I((int64_t)n - 1),
              "a dotted list of 10^6 - 2 distinct elements");
    free(s);
}

/* ---- random input -------------------------------------------------------------- */

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint64_t rnd(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}

static void test_garbage(void)
{
    static const char alphabet[] = "()[]()[]\"\"'`,@#|;.?\\ \n\t0123456789abcxe+-/.|#;";
    int bad = 0, mismatch = 0, terms = 0, errors = 0;
    char buf[300];
    for (int iter = 0; iter < 4000; iter++) {
        size_t len = rnd() % 257;
        for (size_t i = 0; i < len; i++) {
            uint64_t x = rnd();
            buf[i] = (x & 1) ? alphabet[(x >> 8) % (sizeof alphabet - 1)] : (char)(x >> 16);
        }
        tg_error e;
        tg_reader *r = tg_reader_new(C, buf, len, "garbage", &e);
        size_t calls = 0;
        for (;;) {
            tg_term *t = NULL;
            tg_error_clear(&e);
            int st = tg_reader_next(r, &t, &e);
            if (++calls > len + 2) {
                bad++;
                break;
            }
            if (st == 0)
                break;
            if (st > 0) {
                terms++;
                if (!t) {
                    bad++;
                    continue;
                }
                size_t plen;
                char *p = tg_print(t, &plen);
                tg_term *back = p ? tg_read(C, p, plen, NULL) : NULL;
                if (back != t) {
                    if (mismatch++ < 5)
                        TAP_DIAG("print/read mismatch for %s", p ? p : "(null)");
                }
                free(p);
            } else if (st < 0) {
                errors++;
                if (e.code != TG_ERR_SYNTAX || e.line < 1 || e.column < 1 ||
                    strcmp(e.file, "garbage") != 0 || !e.message[0])
                    bad++;
            } else {
                bad++;
            }
        }
        tg_reader_free(r);
        tg_read(C, buf, len, NULL);
    }
    TAP_CHECK(bad == 0, "4000 random buffers: sane results (%d terms, %d errors)", terms,
              errors);
    TAP_CHECK(mismatch == 0, "terms read from random buffers print and read back (%d bad)",
              mismatch);
}

/* Atoms of every kind, printed and read back: the printer and the reader
 * must agree on every spelling. */
static void test_roundtrip(void)
{
    static const char alphabet[] = "ax.?|#;\"\\'`,@()[] \n\x01\xff" "0123456789+-/eE";
    int mismatch = 0, count = 0;
    char name[16];
    for (int iter = 0; iter < 20000; iter++) {
        size_t n = rnd() % 8;
        for (size_t i = 0; i < n; i++)
            name[i] = alphabet[rnd() % (sizeof alphabet - 1)];
        uint64_t id = (rnd() & 1) ? 0 : rnd() % 1000;
        tg_term *t;
        switch (iter % 4) {
        case 0: t = tg_symbol(C, name, n); break;
        case 1: t = tg_string(C, name, n); break;
        case 2: t = tg_var(C, name, n, id); break;
        default: {
            uint64_t bits = rnd();
            double d;
            memcpy(&d, &bits, sizeof d);
            t = (rnd() & 1) ? tg_double(C, d) : tg_list(C, 1, &(tg_term *){ tg_symbol(C, name, n) }, tg_var(C, name, n, id));
            break;
        }
        }
        size_t plen;
        char *p = tg_print(t, &plen);
        tg_term *back = p ? tg_read(C, p, plen, NULL) : NULL;
        count++;
        if (back != t && mismatch++ < 5)
            TAP_DIAG("printed as %s, read back differently", p ? p : "(null)");
        free(p);
    }
    TAP_CHECK(mismatch == 0, "%d random atoms print and read back (%d bad)", count, mismatch);

    /* the reader's own notion of plain symbols and variables */
    static const struct { const char *s; int plain; } syms[] = {
        { "abc", 1 }, { "?", 1 }, { "a|", 1 }, { "#t", 1 }, { "1e", 1 }, { "...", 1 },
        { "1", 0 }, { ".", 0 }, { "?x", 0 }, { "a b", 0 }, { "", 0 }, { "|a", 0 },
        { "#|a", 0 }, { "inf", 0 }, { "-nan", 0 }, { "1e5", 0 }, { "1/2", 0 }, { "a;", 0 },
    };
    for (size_t i = 0; i < sizeof syms / sizeof *syms; i++)
        TAP_EQ_INT(tgR_symbol_is_plain(syms[i].s, strlen(syms[i].s)), syms[i].plain,
                   syms[i].s);
    TAP_EQ_INT(tgR_var_is_plain("x", 1, 0), 1, "var x plain");
    TAP_EQ_INT(tgR_var_is_plain("x.3", 3, 0), 0, "var x.3 (id 0) needs bars");
    TAP_EQ_INT(tgR_var_is_plain("x.3", 3, 5), 1, "var x.3 id 5 plain");
    TAP_EQ_INT(tgR_var_is_plain("x.03", 4, 0), 1, "var x.03 plain");
    TAP_EQ_INT(tgR_var_is_plain("", 0, 0), 0, "empty var name needs bars");
    TAP_EQ_INT(tgR_var_is_plain("|x", 2, 0), 0, "var |x needs bars");
    TAP_EQ_INT(tgR_var_is_plain("a b", 3, 1), 0, "var a b needs bars");
    TAP_CHECK(tgR_is_token_char('a') && !tgR_is_token_char('(') && !tgR_is_token_char(0) &&
                  !tgR_is_token_char(' ') && tgR_is_token_char('|'),
              "token characters");
}

/* ---- files ---------------------------------------------------------------------- */

static void test_slurp(void)
{
    char path[] = "test_reader_XXXXXX";
    int fd = mkstemp(path);
    if (!TAP_CHECK(fd >= 0, "temporary file"))
        return;
    static const char data[] = "(a\0b)\n\xff";
    size_t dlen = sizeof data - 1;
    TAP_CHECK(write(fd, data, dlen) == (ssize_t)dlen, "write temporary file");
    close(fd);
    tg_error e;
    size_t len = 0;
    char *s = tg_slurp_file(path, &len, &e);
    TAP_CHECK(s && len == dlen && memcmp(s, data, dlen) == 0 && s[len] == 0,
              "tg_slurp_file is binary-safe");
    free(s);
    s = tg_slurp_file(path, NULL, &e);
    TAP_CHECK(s != NULL, "tg_slurp_file without len");
    free(s);

    /* a larger file, past the first buffer size */
    FILE *f = fopen(path, "wb");
    for (int i = 0; i < 100000; i++)
        fprintf(f, "(t %d)\n", i);
    fclose(f);
    s = tg_slurp_file(path, &len, &e);
    tg_reader *r = tg_reader_new(C, s, len, path, &e);
    int count = 0;
    tg_term *t, *last = NULL;
    while (tg_reader_next(r, &t, &e) == 1) {
        count++;
        last = t;
    }
    TAP_CHECK(count == 100000 && last == R("(t 99999)"), "slurp and read 100000 terms");
    tg_reader_free(r);
    free(s);
    unlink(path);

    tg_error_clear(&e);
    s = tg_slurp_file("no/such/dir/file.tg", &len, &e);
    char want[300];
    snprintf(want, sizeof want, "cannot open: %s", strerror(ENOENT));
    TAP_CHECK(!s && e.code == TG_ERR_IO && strcmp(e.file, "no/such/dir/file.tg") == 0 &&
                  strcmp(e.message, want) == 0,
              "missing file: %s: %s", e.file, e.message);
    tg_error_clear(&e);
    s = tg_slurp_file(".", &len, &e);
    TAP_CHECK(!s && e.code == TG_ERR_IO && strcmp(e.file, ".") == 0,
              "a directory: %s", e.message);
    free(s);
    tg_error_clear(&e);
    TAP_CHECK(!tg_slurp_file(NULL, &len, &e) && e.code == TG_ERR_ARG, "NULL path");
}

int main(void)
{
    tg_error e;
    C = tg_ctx_new(&e);
    if (!C) {
        printf("Bail out! no context: %s\n", e.message);
        return 1;
    }
    test_symbols();
    test_integers();
    test_rationals();
    test_doubles();
    test_locale();
    test_strings();
    test_quoted_symbols();
    test_variables();
    test_lists();
    test_prefixes();
    test_comments();
    test_equality();
    test_last_pos();
    test_errors();
    test_recovery();
    test_deep();
    test_long();
    test_garbage();
    test_roundtrip();
    test_slurp();
    tg_ctx_free(C);
    return TAP_DONE();
}
