/* test_printer.c - the canonical printer (printer.c) and the byte buffer
 * (buf.c): exact output for every rule, reading the output back to the
 * same pointer, random terms, the shared-subterm display, very deep and
 * very long terms, and printing to a stream. */
#include "harness.h"
#include "buf.h"
#include "printer.h"
#include "tgrel.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static tg_ctx *C;

/* ---- helpers -------------------------------------------------------- */

static tg_term *S(const char *name)
{
    return tg_symbol_cstr(C, name);
}

static tg_term *SN(const char *name, size_t len)
{
    return tg_symbol(C, name, len);
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

static tg_term *L(size_t n, tg_term **e)
{
    return tg_list(C, n, e, NULL);
}

static tg_term *L1(tg_term *a)
{
    return L(1, &a);
}

static tg_term *L2(tg_term *a, tg_term *b)
{
    tg_term *e[2] = { a, b };
    return L(2, e);
}

static tg_term *L3(tg_term *a, tg_term *b, tg_term *c)
{
    tg_term *e[3] = { a, b, c };
    return L(3, e);
}

static tg_term *R(const char *text)
{
    tg_error err;
    tg_term *t = tg_read_cstr(C, text, &err);
    if (!t)
        TAP_DIAG("cannot read %s: %s", text, err.message);
    return t;
}

/* tg_read of the printed text gives t itself. */
static int reads_back(const tg_term *t, const char *text, size_t len)
{
    tg_error err;
    tg_term *u = tg_read(C, text, len, &err);
    return u == t;
}

/* The exact text, and that it reads back to the same pointer. */
static void check_print(const tg_term *t, const char *want, const char *what)
{
    size_t len = 0;
    char *s = tg_print(t, &len);
    char desc[300];

    snprintf(desc, sizeof desc, "%s prints as %s", what, want);
    TAP_EQ_STR(s, want, desc);
    TAP_CHECK(s && len == strlen(s) && reads_back(t, s, len), "%s reads back", want);
    free(s);
}

static void check_shared(const tg_term *t, const char *want, const char *what)
{
    size_t len = 0;
    char *s = tg_print_shared(t, &len);

    TAP_EQ_STR(s, want, what);
    TAP_CHECK(s && len == strlen(s), "%s: length", what);
    free(s);
}

/* ---- the buffer ----------------------------------------------------- */

static void test_buf(void)
{
    tgB_buf b = TGB_INIT;
    char big[300];
    size_t len = 99;
    char *s;

    s = tgB_take(&b, &len);
    TAP_CHECK(s && *s == 0 && len == 0, "take of an empty buffer gives \"\"");
    free(s);

    tgB_init(&b);
    tgB_append(&b, "ab", 2);
    tgB_putc(&b, 'c');
    tgB_puts(&b, "de");
    tgB_append(&b, "", 0);
    tgB_printf(&b, "%d-%s", 42, "x");
    TAP_EQ_STR(tgB_cstr(&b), "abcde42-x", "append, putc, puts, printf");
    memset(big, 'y', sizeof big - 1);
    big[sizeof big - 1] = 0;
    tgB_printf(&b, "[%s]", big);
    TAP_EQ_INT(b.len, 9 + 301, "printf longer than the room left");
    TAP_CHECK(b.data[9] == '[' && b.data[310 - 1] == ']', "printf text in place");
    {
        char *d = tgB_reserve(&b, 5);
        memcpy(d, "12345", 5);
        tgB_commit(&b, 3);
    }
    TAP_CHECK(b.len == 313 && memcmp(b.data + 310, "123", 3) == 0, "reserve and commit");
    s = tgB_take(&b, &len);
    TAP_CHECK(s && len == 313 && strlen(s) == 313, "take hands over a NUL-terminated string");
    TAP_CHECK(b.data == NULL && b.len == 0, "take leaves the buffer empty");
    free(s);

    for (int i = 0; i < 100000; i++)
        tgB_putc(&b, (char)('a' + i % 26));
    TAP_CHECK(b.len == 100000 && b.data[99999] == 'a' + 99999 % 26 && !b.oom,
              "100000 putc");
    tgB_reset(&b);
    TAP_CHECK(b.len == 0 && b.cap >= 100000, "reset keeps the memory");
    tgB_free(&b);

    /* a failed allocation is sticky and voids the result */
    tgB_puts(&b, "abc");
    TAP_CHECK(tgB_grow(&b, SIZE_MAX - 2) == -1 && b.oom, "an impossible size sets oom");
    tgB_puts(&b, "def");
    tgB_printf(&b, "%d", 1);
    TAP_CHECK(b.len == 3 && tgB_cstr(&b) == NULL, "appends after oom are dropped");
    s = tgB_take(&b, &len);
    TAP_CHECK(s == NULL && len == 0 && !b.oom && !b.data, "take after oom gives NULL and clears");
    tgB_puts(&b, "ok");
    TAP_EQ_STR(tgB_cstr(&b), "ok", "usable again after the failed take");
    tgB_free(&b);
}

/* ---- atoms ---------------------------------------------------------- */

static void test_numbers(void)
{
    tg_error err;
    mpz_t z;
    mpq_t q;

    check_print(tg_nil(), "()", "nil");
    check_print(I(0), "0", "zero");
    check_print(I(7), "7", "int");
    check_print(I(-42), "-42", "negative int");
    check_print(I(INT64_MAX), "9223372036854775807", "INT64_MAX");
    check_print(I(INT64_MIN), "-9223372036854775808", "INT64_MIN");
    check_print(I(((int64_t)1 << 61) - 1), "2305843009213693951", "largest immediate");
    check_print(I((int64_t)1 << 61), "2305843009213693952", "smallest boxed");
    check_print(I(-((int64_t)1 << 61) - 1), "-2305843009213693953", "negative boxed");

    mpz_init(z);
    mpz_ui_pow_ui(z, 2, 200);
    check_print(tg_int_mpz(C, z),
                "1606938044258990275541962092341162602522202993782792835301376", "2^200");
    mpz_ui_pow_ui(z, 10, 30);
    mpz_neg(z, z);
    check_print(tg_int_mpz(C, z), "-1000000000000000000000000000000", "-10^30");
    mpz_set_str(z, "99999999999999999999", 10);
    check_print(tg_int_mpz(C, z), "99999999999999999999", "20 nines");
    mpz_clear(z);

    check_print(tg_rat(C, 1, 2, &err), "1/2", "1/2");
    check_print(tg_rat(C, -3, 4, &err), "-3/4", "-3/4");
    check_print(tg_rat(C, 6, -4, &err), "-3/2", "6/-4");
    check_print(tg_rat(C, 4, 2, &err), "2", "4/2 (an integer)");
    mpq_init(q);
    mpq_set_str(q, "123456789012345678901234567890/11", 10);
    mpq_canonicalize(q);
    check_print(tg_rat_mpq(C, q, &err), "123456789012345678901234567890/11", "big rational");
    mpq_set_str(q, "-1/340282366920938463463374607431768211456", 10);
    check_print(tg_rat_mpq(C, q, &err), "-1/340282366920938463463374607431768211456",
                "rational with a big denominator");
    mpq_clear(q);

    check_print(D(1.0), "1.0", "1.0");
    check_print(D(0.0), "0.0", "0.0");
    check_print(D(-0.0), "-0.0", "-0.0");
    check_print(D(1.5), "1.5", "1.5");
    check_print(D(-2.25), "-2.25", "-2.25");
    check_print(D(0.1), "0.1", "0.1");
    check_print(D(0.001), "0.001", "0.001");
    check_print(D(0.0001), "0.0001", "0.0001");
    check_print(D(0.00001), "1e-05", "1e-05");
    check_print(D(1.0 / 3), "0.3333333333333333", "1/3");
    check_print(D(2.0 / 3), "0.6666666666666666", "2/3");
    check_print(D(0.1 + 0.2), "0.30000000000000004", "0.1+0.2");
    check_print(D(1e100), "1e+100", "1e100");
    check_print(D(1e21), "1e+21", "1e21");
    check_print(D(1e-300), "1e-300", "1e-300");
    check_print(D(100.0), "100.0", "100.0 (positional below 1e15)");
    check_print(D(10.0), "10.0", "10.0");
    check_print(D(1e14), "100000000000000.0", "1e14 positional");
    check_print(D(1e15), "1e+15", "1e15 with an exponent");
    check_print(D(-2500.0), "-2500.0", "-2500.0");
    check_print(D(123.0), "123.0", "123.0");
    check_print(D(12345678.0), "12345678.0", "12345678.0");
    check_print(D(9007199254740992.0), "9007199254740992.0", "2^53");
    check_print(D(9007199254740993.0), "9007199254740992.0", "2^53+1 rounds to 2^53");
    check_print(D(123456789012345680.0), "1.2345678901234568e+17", "17 digits");
    check_print(D(DBL_MAX), "1.7976931348623157e+308", "DBL_MAX");
    check_print(D(DBL_MIN), "2.2250738585072014e-308", "DBL_MIN");
    check_print(D(-DBL_EPSILON), "-2.220446049250313e-16", "-DBL_EPSILON");
    check_print(D(4.9406564584124654e-324), "5e-324", "smallest subnormal");
    check_print(D(-1.5e-323), "-1.5e-323", "subnormal 3 ulps");
    check_print(D(2.2250738585072009e-308), "2.225073858507201e-308", "largest subnormal");
    check_print(D(INFINITY), "inf", "inf");
    check_print(D(-INFINITY), "-inf", "-inf");
    check_print(D(NAN), "nan", "nan");
    check_print(D(-NAN), "nan", "negative nan");
}

/* The rule "first p in 1..17 whose %.{p}g reads back", done the slow way. */
/* The printer's rule written plainly: the fewest %g digits that read
 * back, positional from 1e-4 to 1e15. */
static void naive_double(char *out, double v)
{
    char tmp[64];
    uint64_t a, b;
    double w;
    int p;

    if (isnan(v)) {
        strcpy(out, "nan");
        return;
    }
    if (isinf(v)) {
        strcpy(out, v < 0 ? "-inf" : "inf");
        return;
    }
    for (p = 1; p <= 17; p++) {
        snprintf(tmp, sizeof tmp, "%.*g", p, v);
        w = strtod(tmp, NULL);
        memcpy(&a, &w, 8);
        memcpy(&b, &v, 8);
        if (a == b)
            break;
    }
    /* positional from 1e-4 to 1e15 whatever %g chose */
    int x = v == 0 ? 0 : (int)floor(log10(fabs(strtod(tmp, NULL))));
    if (x >= -4 && x < 15 && v != 0)
        snprintf(tmp, sizeof tmp, "%.*f", p - 1 - x > 0 ? p - 1 - x : 0, v);
    if (!strpbrk(tmp, ".en"))
        strcat(tmp, ".0");
    strcpy(out, tmp);
}

static uint64_t rng = 0x9e3779b97f4a7c15u;

static uint64_t rnd(void)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 0x2545f4914f6cdd1dull;
}

static unsigned rn(unsigned n)
{
    return (unsigned)(rnd() % n);
}

static double rand_double(void)
{
    static const double special[] = {
        0.0, -0.0, 1.0, -1.0, 0.5, 0.1, 1e23, 5e-324, DBL_MIN, DBL_MAX, DBL_EPSILON,
        INFINITY, -INFINITY, NAN, 9007199254740993.0, 1e15, 1e16, 1e17, 123456.0
    };
    uint64_t bits;
    double v;

    switch (rn(8)) {
    case 0:
    case 1:
        bits = rnd();
        break;
    case 2:     /* subnormal */
        bits = (rnd() & ((UINT64_C(1) << 52) - 1)) | (rnd() & (UINT64_C(1) << 63));
        break;
    case 3:
        return special[rn(sizeof special / sizeof *special)];
    case 4:
        return (double)((int)rn(20001) - 10000);
    case 5:
        return (double)((int)rn(2000001) - 1000000) / pow(10, rn(12));
    case 6:
        return ldexp((double)(rnd() >> 11), (int)rn(200) - 100);
    default:
        return (double)(rnd() >> rn(64)) * (rn(2) ? 1 : -1);
    }
    memcpy(&v, &bits, sizeof v);
    return v;
}

static void test_double_rule(void)
{
    int bad = 0, n = 50000;
    char want[64], got[64];

    for (int i = 0; i < n; i++) {
        double v = rand_double();
        naive_double(want, v);
        size_t len = tgP_format_double(got, v);
        if (strcmp(want, got) != 0 || len != strlen(got)) {
            if (bad++ < 5)
                TAP_DIAG("%a: want %s got %s", v, want, got);
        }
    }
    TAP_CHECK(bad == 0, "%d random doubles give the shortest round-trip text (%d bad)", n, bad);
}

static void test_strings(void)
{
    check_print(tg_string(C, "", 0), "\"\"", "empty string");
    check_print(tg_string(C, "abc", 3), "\"abc\"", "string");
    check_print(tg_string(C, "a\"b\\c", 5), "\"a\\\"b\\\\c\"", "quote and backslash");
    check_print(tg_string(C, "\n\t\r", 3), "\"\\n\\t\\r\"", "newline, tab, return");
    check_print(tg_string(C, "\x01\x1f\x7f", 3), "\"\\x01\\x1f\\x7f\"", "control bytes");
    check_print(tg_string(C, "a\0b", 3), "\"a\\x00b\"", "NUL");
    check_print(tg_string(C, "\xc3\xa9\xff\x80", 4), "\"\xc3\xa9\xff\x80\"", "high bytes as they are");
    check_print(tg_string(C, "|;()' `,#|", 10), "\"|;()' `,#|\"", "delimiters need no escape");
}

static void test_symbols(void)
{
    static const struct { const char *name; size_t len; const char *want; } cases[] = {
        { "foo", 3, "foo" },
        { "a.b", 3, "a.b" },
        { "+", 1, "+" },
        { "-", 1, "-" },
        { "...", 3, "..." },
        { "?", 1, "?" },
        { "#", 1, "#" },
        { "#foo", 4, "#foo" },
        { "a#|", 3, "|a#\\||" },
        { "@foo", 4, "@foo" },
        { "a\\b", 3, "a\\b" },
        { "1+", 2, "1+" },
        { "1a", 2, "1a" },
        { "1e", 2, "1e" },
        { "1e+", 3, "1e+" },
        { "+.", 2, "+." },
        { "-.e1", 4, "-.e1" },
        { "1/", 2, "1/" },
        { "/1", 2, "/1" },
        { "1/2/3", 5, "1/2/3" },
        { "1.2.3", 5, "1.2.3" },
        { "Inf", 3, "Inf" },
        { "NaN", 3, "NaN" },
        { "infinity", 8, "infinity" },
        { "+infx", 5, "+infx" },
        { "\xce\xbb", 2, "\xce\xbb" },
        { "a{b}", 4, "a{b}" },
        { "", 0, "||" },
        { ".", 1, "|.|" },
        { "1", 1, "|1|" },
        { "-1", 2, "|-1|" },
        { "+1", 2, "|+1|" },
        { "007", 3, "|007|" },
        { "1/2", 3, "|1/2|" },
        { "-1/0", 4, "|-1/0|" },
        { "1.", 2, "|1.|" },
        { ".5", 2, "|.5|" },
        { "-.5e-3", 6, "|-.5e-3|" },
        { "1e5", 3, "|1e5|" },
        { "1E+5", 4, "|1E+5|" },
        { "inf", 3, "|inf|" },
        { "+inf", 4, "|+inf|" },
        { "-inf", 4, "|-inf|" },
        { "nan", 3, "|nan|" },
        { "+nan", 4, "|+nan|" },
        { "-nan", 4, "|-nan|" },
        { "?x", 2, "|?x|" },
        { "??", 2, "|??|" },
        { "#|a", 3, "|#\\|a|" },
        { "#;a", 3, "|#;a|" },
        { "#;", 2, "|#;|" },
        { "a b", 3, "|a b|" },
        { "a(b", 3, "|a(b|" },
        { "a)", 2, "|a)|" },
        { "[a]", 3, "|[a]|" },
        { "a\"b", 3, "|a\"b|" },
        { "a;b", 3, "|a;b|" },
        { "'a", 2, "|'a|" },
        { "a`", 2, "|a`|" },
        { ",a", 2, "|,a|" },
        { "a|b", 3, "|a\\|b|" },
        { "|", 1, "|\\||" },
        { "a\\ b", 4, "|a\\\\ b|" },
        { "a\nb", 3, "|a\\nb|" },
        { "\t\r", 2, "|\\t\\r|" },
        { "\x01", 1, "|\\x01|" },
        { "a\x7f", 2, "|a\\x7f|" },
        { "a\0b", 3, "|a\\x00b|" },
        { "\xc3\xa9 x", 4, "|\xc3\xa9 x|" },
        { "\xef\xbb\xbf", 3, "|\xef\xbb\xbf|" },         /* a byte-order mark, which a text may start with */
        { "\xef\xbb\xbf" "a", 4, "|\xef\xbb\xbf" "a|" },
        { "a\xef\xbb\xbf", 4, "a\xef\xbb\xbf" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char what[64];
        snprintf(what, sizeof what, "symbol %zu", i);
        check_print(SN(cases[i].name, cases[i].len), cases[i].want, what);
    }
}

static void test_vars(void)
{
    check_print(V("x", 0), "?x", "var");
    check_print(V("x", 3), "?x.3", "var with id");
    check_print(V("x", UINT64_MAX), "?x.18446744073709551615", "largest id");
    check_print(V("x.5", 0), "?x.5.0", "name ending in .5");
    check_print(V("x.5", 2), "?x.5.2", "name ending in .5, id 2");
    check_print(V("x.0", 0), "?x.0.0", "name ending in .0");
    check_print(V("x.05", 0), "?x.05", "name ending in .05 (no id)");
    check_print(V("x.", 0), "?x.", "name ending in a dot");
    check_print(V("x.y", 0), "?x.y", "dotted name");
    check_print(V("x.12345678901234567890123", 0), "?x.12345678901234567890123.0",
                "name ending in a huge number");
    check_print(V("", 0), "?||", "empty name");
    check_print(V("", 4), "?||.4", "empty name with id");
    check_print(V("?", 0), "?|?|", "name ?");
    check_print(V("?a", 1), "?|?a|.1", "name starting with ?");
    check_print(V("a?", 0), "?a?", "name with ? inside");
    check_print(V("a b", 0), "?|a b|", "name with a space");
    check_print(V("a b.5", 0), "?|a b.5|.0", "quoted name ending in .5");
    check_print(V("5", 0), "?|5|", "numeric name");
    check_print(V("1.5", 0), "?|1.5|.0", "numeric name ending in .5");
    check_print(V(".", 0), "?|.|", "name .");
    check_print(V("|", 7), "?|\\||.7", "name |");
    check_print(tg_var(C, "a\0", 2, 0), "?|a\\x00|", "name with NUL");
    check_print(V("+", 0), "?+", "name +");
    check_print(V("@", 0), "?@", "name @");
    check_print(V("#;", 0), "?|#;|", "name #;");
}

/* ---- lists ---------------------------------------------------------- */

static void test_lists(void)
{
    tg_term *a = S("a"), *b = S("b"), *c = S("c"), *e[20];

    check_print(L3(a, b, c), "(a b c)", "list");
    check_print(L1(a), "(a)", "one element");
    check_print(L1(tg_nil()), "(())", "list of nil");
    check_print(L1(L1(L1(a))), "(((a)))", "nested");
    check_print(tg_cons(C, a, b), "(a . b)", "pair");
    check_print(tg_list(C, 2, (tg_term *[]){ a, b }, c), "(a b . c)", "dotted");
    check_print(tg_list(C, 2, (tg_term *[]){ a, b }, I(1)), "(a b . 1)", "dotted number");
    check_print(tg_list(C, 1, (tg_term *[]){ a }, tg_string(C, "s", 1)), "(a . \"s\")",
                "dotted string");
    check_print(tg_list(C, 1, (tg_term *[]){ a }, V("t", 0)), "(a . ?t)", "dotted var");
    check_print(tg_cons(C, a, L2(b, c)), "(a b c)", "cons onto a list");
    check_print(L3(L2(a, b), tg_nil(), tg_cons(C, c, D(1.5))), "((a b) () (c . 1.5))", "mixed");
    for (int i = 0; i < 20; i++)
        e[i] = I(i);
    check_print(L(20, e), "(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19)",
                "20 elements (several chunks)");
    check_print(tg_list(C, 17, e, S("z")),
                "(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 . z)", "17 elements dotted");
    check_print(tg_app(C, S("f"), 9, e), "(f 0 1 2 3 4 5 6 7 8)", "application of 9");
    check_print(tg_cons(C, S("f"), L(16, e)),
                "(f 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15)", "cons onto 16");

    /* quote forms */
    check_print(L2(S("quote"), a), "'a", "quote");
    check_print(L2(S("quasiquote"), a), "`a", "quasiquote");
    check_print(L2(S("unquote"), a), ",a", "unquote");
    check_print(L2(S("unquote-splicing"), a), ",@a", "unquote-splicing");
    check_print(L2(S("quote"), L2(a, b)), "'(a b)", "quoted list");
    check_print(L2(S("quote"), L2(S("quote"), a)), "''a", "quote quote");
    check_print(L2(S("quasiquote"), L2(a, L2(S("unquote"), b))), "`(a ,b)", "quasi/unquote");
    check_print(L3(S("f"), L2(S("quote"), a), L2(S("quote"), tg_nil())), "(f 'a '())",
                "quotes inside a list");
    check_print(L2(S("unquote"), S("@foo")), "(unquote @foo)", "unquote of @foo");
    check_print(L2(S("unquote"), S("@")), "(unquote @)", "unquote of @");
    check_print(L2(S("unquote"), S("a@")), ",a@", "unquote of a@");
    check_print(L2(S("unquote"), S("@ x")), ",|@ x|", "unquote of |@ x|");
    check_print(L2(S("unquote"), L1(S("@foo"))), ",(@foo)", "unquote of (@foo)");
    check_print(L2(S("unquote-splicing"), S("@foo")), ",@@foo", "unquote-splicing of @foo");
    check_print(L2(S("quote"), S("@foo")), "'@foo", "quote of @foo");
    check_print(L1(S("quote")), "(quote)", "quote alone");
    check_print(L3(S("quote"), a, b), "(quote a b)", "quote with two");
    check_print(tg_cons(C, S("quote"), a), "(quote . a)", "dotted quote");
    check_print(tg_list(C, 2, (tg_term *[]){ S("quote"), a }, b), "(quote a . b)",
                "quote a . b");
    check_print(L2(S("Quote"), a), "(Quote a)", "another symbol");
    check_print(L2(S("quote|"), a), "(|quote\\|| a)", "a symbol with a bar");
    check_print(L2(tg_string(C, "quote", 5), a), "(\"quote\" a)", "string head");
    check_print(L2(S("quot"), a), "(quot a)", "near miss");
}

/* ---- random terms --------------------------------------------------- */

static const struct { const char *s; size_t n; } pieces[] = {
    { "a", 1 }, { "x", 1 }, { "0", 1 }, { "1", 1 }, { "9", 1 }, { ".", 1 }, { "+", 1 },
    { "-", 1 }, { "e", 1 }, { "E", 1 }, { "/", 1 }, { "?", 1 }, { "#", 1 }, { "|", 1 },
    { ";", 1 }, { "\\", 1 }, { "\"", 1 }, { "'", 1 }, { "`", 1 }, { ",", 1 }, { "@", 1 },
    { "(", 1 }, { ")", 1 }, { "[", 1 }, { "]", 1 }, { " ", 1 }, { "\n", 1 }, { "\t", 1 },
    { "\r", 1 }, { "\x01", 1 }, { "\x7f", 1 }, { "\0", 1 }, { "\xc3\xa9", 2 }, { "\xff", 1 },
    { "inf", 3 }, { "nan", 3 }, { "#|", 2 }, { "#;", 2 }, { "|#", 2 }, { ".0", 2 },
    { ".5", 2 }, { ".05", 3 }, { ".10", 3 }, { "e5", 2 }, { "quote", 5 }, { "{", 1 },
    { "\\x41", 4 }, { "\\|", 2 },
};

static size_t rand_name(char *buf)
{
    size_t n = 0;
    unsigned k = rn(6);

    if (rn(4) == 0) {
        /* something number-like */
        static const char *const num[] = { "12", "-3", "+4", "1.5", ".25", "1e9", "7/8", "-0",
                                           "1.", "-.5", "2E-3", "+inf", "-nan" };
        const char *s = num[rn(sizeof num / sizeof *num)];
        n = strlen(s);
        memcpy(buf, s, n);
        k = rn(2);
    }
    while (k--) {
        unsigned i = rn(sizeof pieces / sizeof *pieces);
        memcpy(buf + n, pieces[i].s, pieces[i].n);
        n += pieces[i].n;
    }
    return n;
}

static tg_term *rand_atom(void)
{
    char name[64];
    size_t n;
    tg_error err;

    switch (rn(9)) {
    case 0: {
        switch (rn(4)) {
        case 0: return I((int64_t)rn(2001) - 1000);
        case 1: return I((int64_t)rnd());
        case 2: return I(((int64_t)1 << 61) - 2 + (int64_t)rn(4) * (rn(2) ? 1 : -1));
        default: {
            mpz_t z;
            uint64_t w[4] = { rnd(), rnd(), rnd(), rnd() };
            mpz_init(z);
            mpz_import(z, 1 + rn(4), -1, 8, 0, 0, w);
            if (rn(2))
                mpz_neg(z, z);
            tg_term *t = tg_int_mpz(C, z);
            mpz_clear(z);
            return t;
        }
        }
    }
    case 1: {
        if (rn(2)) {
            int64_t den = (int64_t)rnd() >> rn(63);
            return tg_rat(C, (int64_t)rnd() >> rn(63), den ? den : 3, &err);
        }
        mpq_t q;
        uint64_t w[3] = { rnd(), rnd(), rnd() | 1 };
        mpq_init(q);
        mpz_import(mpq_numref(q), 1 + rn(3), -1, 8, 0, 0, w);
        mpz_import(mpq_denref(q), 1 + rn(2), -1, 8, 0, 0, w + 1);
        if (rn(2))
            mpq_neg(q, q);
        mpq_canonicalize(q);
        tg_term *t = tg_rat_mpq(C, q, &err);
        mpq_clear(q);
        return t;
    }
    case 2:
        return D(rand_double());
    case 3:
    case 4:
        n = rand_name(name);
        return SN(name, n);
    case 5:
        n = rand_name(name);
        return tg_string(C, name, n);
    case 6:
    case 7: {
        static const uint64_t ids[] = { 0, 0, 0, 1, 2, 10, 99, UINT64_MAX };
        n = rand_name(name);
        if (rn(3) == 0) {
            n += (size_t)snprintf(name + n, 24, ".%u", rn(3) ? rn(20) : (unsigned)rnd());
        }
        return tg_var(C, name, n, rn(3) ? ids[rn(8)] : rnd());
    }
    default:
        return tg_nil();
    }
}

static tg_term *rand_term(int depth)
{
    static const char *const qs[] = { "quote", "quasiquote", "unquote", "unquote-splicing" };
    tg_term *e[12], *tail = NULL;
    unsigned n;

    if (depth <= 0 || rn(3) == 0)
        return rand_atom();
    if (rn(8) == 0) {
        e[0] = S(qs[rn(4)]);
        e[1] = rn(4) ? rand_term(depth - 1) : S("@x");
        return L(2, e);
    }
    n = 1 + rn(rn(4) ? 4 : 12);
    for (unsigned i = 0; i < n; i++)
        e[i] = rand_term(depth - 1);
    if (rn(4) == 0) {
        do
            tail = rand_atom();
        while (tg_kind_of(tail) == TG_PAIR);
    }
    return tg_list(C, n, e, tail);
}

/* Undo the shared display: read the root and the definitions (", *2" reads
 * as (unquote *2)), then put the definitions back for the names. */
static tg_term *expand(tg_term *t, tg_term **defs, size_t ndefs)
{
    tg_iter it;
    tg_term *x, *e[64], **el = e;
    size_t n = 0, cap = 64;

    if (tg_kind_of(t) == TG_SYMBOL) {
        size_t len;
        const char *s = tg_symbol_name(t, &len);
        if (len > 1 && s[0] == '*') {
            size_t k = strtoul(s + 1, NULL, 10);
            if (k >= 1 && k <= ndefs)
                return expand(defs[k - 1], defs, ndefs);
        }
        return t;
    }
    if (tg_kind_of(t) != TG_PAIR)
        return t;
    tg_iter_init(&it, t);
    while ((x = tg_iter_next(&it)) != NULL) {
        if (n == cap)
            return NULL;    /* the random terms are narrower than this */
        el[n++] = expand(x, defs, ndefs);
    }
    return tg_list(C, n, el, tg_tail(t));
}

/* Pairs reachable from t with two or more references (test-side count,
 * quadratic but the random terms are small). */
static size_t count_shared(tg_term *root)
{
    tg_term *seen[4096], *todo[4096];
    int refs[4096];
    size_t nseen = 0, ntodo = 0, shared = 0;

    todo[ntodo++] = root;
    while (ntodo) {
        tg_term *t = todo[--ntodo], *x;
        tg_iter it;
        tg_iter_init(&it, t);
        while ((x = tg_iter_next(&it)) != NULL) {
            size_t i;
            if (tg_kind_of(x) != TG_PAIR)
                continue;
            for (i = 0; i < nseen && seen[i] != x; i++)
                ;
            if (i < nseen) {
                if (refs[i]++ == 1)
                    shared++;
                continue;
            }
            if (nseen == 4096)
                return (size_t)-1;
            seen[nseen] = x;
            refs[nseen++] = 1;
            todo[ntodo++] = x;
        }
    }
    return shared;
}

/* Check one shared display; returns NULL when fine, else what is wrong. */
static const char *check_shared_text(tg_term *t, const char *s, size_t len)
{
    tg_error err;
    tg_reader *r = tg_reader_new(C, s, len, NULL, &err);
    tg_term *root, *x, *defs[512];
    size_t ndefs = 0, expected = count_shared(t);
    const char *bad = NULL;
    const char *p;
    size_t next = 1;

    if (tg_kind_of(t) != TG_PAIR)
        expected = 0;
    if (expected == (size_t)-1)
        return NULL;    /* too big to count here */
    if (!r)
        return "reader";
    if (tg_reader_next(r, &root, &err) != 1) {
        bad = "no root";
        goto out;
    }
    if (tg_reader_next(r, &x, &err) == 1) {
        if (x != S("where")) {
            bad = "no where";
            goto out;
        }
        for (;;) {
            char want[32];
            int st = tg_reader_next(r, &x, &err);
            if (st == 0)
                break;
            snprintf(want, sizeof want, "*%zu", ndefs + 1);
            if (st < 0 || (ndefs == 0 ? x != S(want) : x != L2(S("unquote"), S(want)))) {
                bad = "bad name in the definitions";
                goto out;
            }
            if (tg_reader_next(r, &x, &err) != 1 || x != S("=") ||
                tg_reader_next(r, &x, &err) != 1 || ndefs == 512) {
                bad = "bad definition";
                goto out;
            }
            defs[ndefs++] = x;
        }
    }
    if (ndefs != expected) {
        bad = "wrong number of names";
        goto out;
    }
    if (expand(root, defs, ndefs) != t) {
        bad = "does not expand to the term";
        goto out;
    }
    /* names numbered by first appearance (the random atoms have no '*') */
    for (p = s; (p = strchr(p, '*')) != NULL; p++) {
        size_t k = strtoul(p + 1, NULL, 10);
        if (k > next) {
            bad = "names out of order";
            goto out;
        }
        if (k == next)
            next++;
    }
    for (size_t i = 0; i < ndefs; i++)
        if (tg_kind_of(defs[i]) != TG_PAIR) {
            bad = "a named atom";
            goto out;
        }
out:
    tg_reader_free(r);
    return bad;
}

static void test_random(void)
{
    int n = 5000, bad = 0, badshared = 0, withnames = 0;

    for (int i = 0; i < n; i++) {
        tg_term *t = rand_term(1 + (int)rn(5));
        size_t len, slen;
        char *s = tg_print(t, &len), *ss = tg_print_shared(t, &slen);
        const char *why;

        if (!s || !reads_back(t, s, len)) {
            if (bad++ < 5) {
                tg_error err;
                tg_term *u = s ? tg_read(C, s, len, &err) : NULL;
                char *us = u ? tg_print(u, NULL) : NULL;
                TAP_DIAG("does not read back: %s (reads as %s)", s ? s : "(null)",
                         us ? us : err.message);
                free(us);
            }
        }
        why = ss ? check_shared_text(t, ss, slen) : "NULL";
        if (why && badshared++ < 5)
            TAP_DIAG("shared display: %s: %s", why, ss ? ss : "(null)");
        if (ss && strstr(ss, " where *1 = "))
            withnames++;
        if (ss && s && !strstr(ss, " where *1 = ") && strcmp(s, ss) != 0 && badshared++ < 5)
            TAP_DIAG("shared display without names differs: %s", ss);
        free(s);
        free(ss);
    }
    TAP_CHECK(bad == 0, "%d random terms read back to themselves (%d bad)", n, bad);
    TAP_CHECK(badshared == 0, "%d random shared displays expand back (%d bad, %d with names)",
              n, badshared, withnames);
    TAP_CHECK(withnames > n / 100, "the random terms do share subterms (%d)", withnames);
}

/* ---- shared display -------------------------------------------------- */

static void test_shared(void)
{
    tg_term *a = S("a"), *x = S("x"), *e[10];

    check_shared(I(5), "5", "atom");
    check_shared(S("a b"), "|a b|", "quoted symbol");
    check_shared(L2(a, a), "(a a)", "no pair shared");
    check_shared(L3(S("f"), x, x), "(f x x)", "a shared symbol is not named");
    check_shared(L3(S("f"), tg_string(C, "s", 1), tg_string(C, "s", 1)), "(f \"s\" \"s\")",
                 "a shared string is not named");
    check_shared(L3(S("f"), L1(a), L1(x)), "(f (a) (x))", "distinct pairs");
    check_shared(R("(true_div (mul (add y z) x) (add y z))"),
                 "(true_div (mul *1 x) *1) where *1 = (add y z)", "the example");
    check_shared(R("(f (g a) (h b) (g a) (h b))"),
                 "(f *1 *2 *1 *2) where *1 = (g a), *2 = (h b)", "two names");
    check_shared(R("(f (h b) (g a) (g a) (h b) (h b))"),
                 "(f *1 *2 *2 *1 *1) where *1 = (h b), *2 = (g a)", "numbered in order");
    check_shared(R("(f (h (g a) (g a)) (h (g a) (g a)))"),
                 "(f *1 *1) where *1 = (h *2 *2), *2 = (g a)", "a name used first in a definition");
    check_shared(R("(f (k (g a)) (h (g a) (m (n 1))) (h (g a) (m (n 1))) (m (n 1)))"),
                 "(f (k *1) *2 *2 *3) where *1 = (g a), *2 = (h *1 *3), *3 = (m (n 1))",
                 "names in definitions and root");
    check_shared(R("(f '(a) '(a))"), "(f *1 *1) where *1 = '(a)", "a shared quote form");
    check_shared(R("(f '(a) (a))"), "(f '*1 *1) where *1 = (a)", "shared inside a quote");
    check_shared(R("(f (a . b) (a . b) . c)"), "(f *1 *1 . c) where *1 = (a . b)",
                 "shared dotted pair");
    check_shared(R("(f (g (x)) (h (x)))"), "(f (g *1) (h *1)) where *1 = (x)",
                 "shared at two depths");
    check_shared(R("((a) ((a)) (((a))))"), "(*1 *2 (*2)) where *1 = (a), *2 = (*1)",
                 "nested shared");
    /* only element slots count: the 8-element chunk that is both the
     * rest of the root's list and its first element is not shared */
    for (int i = 0; i < 8; i++)
        e[i] = I(i + 1);
    {
        tg_term *l8 = L(8, e), *root = tg_cons(C, l8, l8);
        check_shared(root, "((1 2 3 4 5 6 7 8) 1 2 3 4 5 6 7 8)", "a list suffix is no reference");
        root = tg_cons(C, l8, root);
        check_shared(root, "(*1 *1 1 2 3 4 5 6 7 8) where *1 = (1 2 3 4 5 6 7 8)",
                     "two element slots are");
    }
    {
        /* the same pair twice in one list counts twice */
        tg_term *p = L1(a), *big[12];
        for (int i = 0; i < 12; i++)
            big[i] = i == 3 || i == 11 ? p : I(i);
        check_shared(L(12, big), "(0 1 2 *1 4 5 6 7 8 9 10 *1) where *1 = (a)",
                     "shared across chunks");
    }
}

/* ---- big terms ------------------------------------------------------- */

static void test_deep(void)
{
    const size_t n = 1000000;
    tg_term *t = S("x"), *q = S("x"), *w = S("x"), *f = S("f");
    size_t len;
    char *s;
    int ok;

    for (size_t i = 0; i < n; i++) {
        t = L2(f, t);
        q = L2(S("quote"), q);
        w = L1(w);
    }
    s = tg_print(t, &len);
    ok = s && len == 4 * n + 1 && memcmp(s, "(f (f (f ", 9) == 0 &&
         memcmp(s + len - 5, ")))))", 5) == 0 && s[3 * n] == 'x' && s[3 * n - 3] == '(';
    TAP_CHECK(ok, "(f (f ... x)) 10^6 deep prints (length %zu)", len);
    TAP_CHECK(s && reads_back(t, s, len), "and reads back");
    free(s);

    s = tg_print(w, &len);
    ok = s && len == 2 * n + 1 && s[0] == '(' && s[n - 1] == '(' && s[n] == 'x' &&
         s[n + 1] == ')' && s[len - 1] == ')';
    TAP_CHECK(ok, "((( ... x))) 10^6 deep prints (length %zu)", len);
    free(s);

    s = tg_print(q, &len);
    ok = s && len == n + 1 && s[0] == '\'' && s[n - 1] == '\'' && s[n] == 'x';
    TAP_CHECK(ok, "'''...x 10^6 deep prints (length %zu)", len);
    TAP_CHECK(s && reads_back(q, s, len), "and reads back");
    free(s);

    s = tg_print_shared(t, &len);
    ok = s && len == 4 * n + 1 && memcmp(s, "(f (f (f ", 9) == 0;
    TAP_CHECK(ok, "shared display of a deep term without sharing");
    free(s);

    /* T_k = (f T_k-1 T_k-1): every level is shared; the tree has 2^n
     * leaves, the DAG n nodes */
    {
        tg_term *d = S("x");
        tgB_buf b = TGB_INIT;
        size_t k;

        for (k = 0; k < n; k++)
            d = L3(f, d, d);
        tgB_puts(&b, "(f *1 *1) where ");
        for (k = 1; k < n; k++) {
            if (k < n - 1)
                tgB_printf(&b, "*%zu = (f *%zu *%zu), ", k, k + 1, k + 1);
            else
                tgB_printf(&b, "*%zu = (f x x)", k);
        }
        s = tg_print_shared(d, &len);
        TAP_CHECK(s && !b.oom && len == b.len && strcmp(s, tgB_cstr(&b)) == 0,
                  "(f *k *k) chain 10^6 deep: shared display (length %zu)", len);
        if (s && len > 60)
            TAP_DIAG("ends with %s", s + len - 60);
        free(s);
        tgB_free(&b);
    }
}

static void test_long(void)
{
    const size_t n = 10000000;
    tg_term **e = malloc(n * sizeof *e);
    tg_term *t, *u;
    size_t len, want = 2, i;
    char *s;
    int ok;

    /* small integers are immediate, so malloc'd memory may hold them */
    for (i = 0; i < n; i++) {
        e[i] = I((int64_t)i);
        want += (size_t)snprintf(NULL, 0, "%zu", i) + (i ? 1 : 0);
    }
    t = tg_list(C, n, e, S("end"));
    free(e);
    want += 6;
    s = tg_print(t, &len);
    ok = s && len == want && memcmp(s, "(0 1 2 3 ", 9) == 0 &&
         memcmp(s + len - 23, " 9999998 9999999 . end)", 23) == 0;
    TAP_CHECK(ok, "a list of 10^7 elements prints (length %zu, want %zu)", len, want);
    u = s ? tg_read(C, s, len, NULL) : NULL;
    TAP_CHECK(u == t, "and reads back");
    free(s);
}

/* ---- streams and helpers --------------------------------------------- */

static int fprint_matches(const tg_term *t)
{
    FILE *f = tmpfile();
    size_t len, got;
    char *s = tg_print(t, &len), *back;
    int ok;

    if (!f || !s) {
        free(s);
        if (f)
            fclose(f);
        return 0;
    }
    ok = tg_fprint(f, t) == 0;
    fflush(f);
    ok = ok && ftell(f) == (long)len;
    rewind(f);
    back = malloc(len + 1);
    got = fread(back, 1, len + 1, f);
    ok = ok && got == len && memcmp(back, s, len) == 0;
    free(back);
    free(s);
    fclose(f);
    return ok;
}

static void test_fprint(void)
{
    tg_term *t = S("x"), *e[4];
    size_t n = 300000, i;
    char *big;

    TAP_CHECK(fprint_matches(R("(a \"b\" 1.5 ?c.2 (d . e) 'f)")), "tg_fprint of a small term");
    for (i = 0; i < n; i++)
        t = L3(S("g"), t, I((int64_t)i));
    TAP_CHECK(fprint_matches(t), "tg_fprint of a deep term (several flushes)");
    big = malloc(3000000);
    for (i = 0; i < 3000000; i++)
        big[i] = (char)(i % 7 == 0 ? '\n' : i % 5 == 0 ? '\x01' : 'a' + i % 26);
    e[0] = tg_string(C, big, 3000000);
    e[1] = SN(big, 3000000);
    e[2] = tg_var(C, big, 1000000, 5);
    e[3] = S("end");
    free(big);
    TAP_CHECK(fprint_matches(L(4, e)), "tg_fprint of big escaped atoms");
    for (i = 0; i < 100; i++) {
        tg_term *r = rand_term(5);
        if (!fprint_matches(r)) {
            TAP_CHECK(0, "tg_fprint of random term %zu", i);
            break;
        }
    }
    TAP_CHECK(i == 100, "tg_fprint of 100 random terms");
    {
        FILE *ro = fopen(tap_path("tests/src/test_printer.c"), "r");
        if (ro) {
            TAP_CHECK(tg_fprint(ro, t) == -1, "tg_fprint to a read-only stream fails");
            fclose(ro);
        }
    }
    TAP_CHECK(tg_fprint(stdout, NULL) == -1, "tg_fprint of NULL fails");
    TAP_CHECK(tg_fprint(NULL, t) == -1, "tg_fprint to NULL fails");
    TAP_CHECK(tg_print(NULL, NULL) == NULL, "tg_print of NULL gives NULL");
    TAP_CHECK(tg_print_shared(NULL, NULL) == NULL, "tg_print_shared of NULL gives NULL");
}

static void test_internal(void)
{
    tgB_buf b = TGB_INIT;

    tgB_puts(&b, "t=");
    TAP_CHECK(tgP_print_buf(&b, R("(a 'b)")) == 0, "tgP_print_buf");
    tgB_putc(&b, ' ');
    TAP_CHECK(tgP_print_shared_buf(&b, R("(f (g) (g))")) == 0, "tgP_print_shared_buf");
    tgB_putc(&b, ' ');
    tgP_symbol(&b, "a b", 3);
    tgB_putc(&b, ' ');
    tgP_symbol(&b, "ab", 2);
    tgB_putc(&b, ' ');
    tgP_string(&b, "q\"", 2);
    tgB_putc(&b, ' ');
    tgP_var(&b, "v.1", 3, 0);
    tgB_putc(&b, ' ');
    tgP_double(&b, 0.5);
    TAP_EQ_STR(tgB_cstr(&b), "t=(a 'b) (f *1 *1) where *1 = (g) |a b| ab \"q\\\"\" ?v.1.0 0.5",
               "internal printers append");
    TAP_CHECK(tgP_symbol_is_bare("abc", 3) && !tgP_symbol_is_bare("1", 1), "tgP_symbol_is_bare");
    tgB_fail(&b);
    TAP_CHECK(tgP_print_buf(&b, S("a")) == -1, "tgP_print_buf reports a failed buffer");
    tgB_free(&b);
}

int main(void)
{
    tg_error err;

    C = tg_ctx_new(&err);
    if (!C) {
        TAP_CHECK(0, "tg_ctx_new: %s", err.message);
        return TAP_DONE();
    }
    test_buf();
    test_numbers();
    test_double_rule();
    test_strings();
    test_symbols();
    test_vars();
    test_lists();
    test_shared();
    test_random();
    test_internal();
    test_fprint();
    test_deep();
    test_long();
    tg_ctx_free(C);
    return TAP_DONE();
}
