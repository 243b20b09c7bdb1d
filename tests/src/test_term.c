/* test_term.c - unit and property tests of the term core: constructors,
 * hash-consing by every route, list views, numbers, the total order, and
 * batched applications (results and errors). */
#define GC_THREADS 1
#include <gc/gc.h>

#include "harness.h"
#include "tgrel.h"

#include <math.h>

static tg_ctx *C;

static tg_term *sym(const char *s) { return tg_symbol_cstr(C, s); }
static tg_term *num(int64_t v) { return tg_int(C, v); }

/* xorshift: deterministic random numbers for the property tests */
static uint64_t rng = 0x243F6A8885A308D3ull;
static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void test_atoms(void)
{
    TAP_CHECK(sym("add") == sym("add"), "symbols are interned");
    TAP_CHECK(sym("add") != sym("Add"), "symbols are case-sensitive");
    TAP_CHECK(tg_symbol(C, "a\0b", 3) != sym("a"), "symbols hold NUL bytes");
    TAP_CHECK(tg_string(C, "add", 3) != sym("add"), "a string is not a symbol");
    TAP_CHECK(tg_string(C, "x", 1) == tg_string(C, "x", 1), "strings are interned");
    size_t n = 0;
    const char *p = tg_symbol_name(tg_symbol(C, "a\0b", 3), &n);
    TAP_CHECK(n == 3 && memcmp(p, "a\0b", 3) == 0, "symbol bytes come back");
    TAP_CHECK(tg_symbol_name(tg_string(C, "s", 1), NULL) == NULL, "symbol_name of a string is NULL");
    TAP_CHECK(tg_kind_of(tg_nil()) == TG_NIL && tg_length(tg_nil()) == 0, "nil");
    TAP_EQ_STR(tg_kind_name(TG_PAIR), "pair", "kind names");

    tg_term *v0 = tg_var(C, "x", 1, 0), *v1 = tg_var(C, "x", 1, 1);
    TAP_CHECK(v0 == tg_var(C, "x", 1, 0) && v0 != v1, "variables are interned by name and id");
    TAP_CHECK(tg_var_id(v1) == 1 && strcmp(tg_var_name(v1, NULL), "x") == 0, "variable name and id");
    TAP_CHECK(!tg_is_ground(v0) && tg_is_ground(sym("x")), "variables are not ground");
    tg_term *a[2] = {sym("a"), v0};
    TAP_CHECK(!tg_is_ground(tg_app(C, sym("f"), 2, a)), "a term with a variable inside is not ground");
    a[1] = sym("b");
    TAP_CHECK(tg_is_ground(tg_app(C, sym("f"), 2, a)), "a term without variables is ground");
}

/* Groundness of new short applications (the miss of tg_app computes
 * it without a branch per element): every head and argument drawn from
 * small integers, a big integer, a symbol, a variable and ground and
 * non-ground applications, each term new when built, checked against
 * the elements' own groundness. */
static void test_ground_new(void)
{
    tg_term *v = tg_var(C, "g", 1, 7);
    tg_term *pa[1] = {v};
    tg_term *pool[] = {num(0), num(-5), num((int64_t)1 << 62), sym("gs"), v,
                       tg_app(C, sym("gp"), 1, pa), tg_app(C, sym("gq"), 1, pool)};
    size_t np = sizeof pool / sizeof *pool, bad = 0, made = 0;
    for (unsigned na = 1; na <= 3; na++)
        for (size_t code = 0; code < np * np * np * np; code++) {
            size_t c = code;
            tg_term *head = pool[c % np], *args[3];
            c /= np;
            int want = tg_is_ground(head);
            for (unsigned k = 0; k < na; k++, c /= np) {
                args[k] = pool[c % np];
                want &= tg_is_ground(args[k]);
            }
            if (c && na < 3)
                continue;   /* each shape once */
            tg_stats before, after;
            tg_ctx_stats(C, &before);
            tg_term *t = tg_app(C, head, na, args);
            tg_ctx_stats(C, &after);
            made += after.created > before.created;
            bad += !t || tg_is_ground(t) != want || t != tg_app(C, head, na, args);
        }
    TAP_CHECK(bad == 0 && made > 0, "groundness of %zu new short applications (%zu wrong)", made,
              bad);
}

static void test_numbers(void)
{
    int64_t v;
    int64_t edges[] = {0, 1, -1, ((int64_t)1 << 61) - 1, -((int64_t)1 << 61), (int64_t)1 << 61,
                       -((int64_t)1 << 61) - 1, INT64_MAX, INT64_MIN, (int64_t)1 << 62};
    for (size_t i = 0; i < sizeof edges / sizeof *edges; i++) {
        tg_term *t = num(edges[i]);
        TAP_CHECK(t == num(edges[i]) && tg_int_get(t, &v) == 0 && v == edges[i],
                  "integer %lld round-trips and is interned", (long long)edges[i]);
    }
    mpz_t z, w;
    mpz_init_set_str(z, "123456789012345678901234567890123456789", 10);
    mpz_init(w);
    tg_term *big = tg_int_mpz(C, z);
    TAP_CHECK(big == tg_int_mpz(C, z) && tg_kind_of(big) == TG_INT, "big integers are interned");
    TAP_CHECK(tg_int_get(big, &v) == -1, "a big integer does not fit int64");
    tg_int_get_mpz(big, w);
    TAP_CHECK(mpz_cmp(z, w) == 0, "big integer value comes back");
    mpz_set_si(z, 42);
    TAP_CHECK(tg_int_mpz(C, z) == num(42), "a small mpz gives the immediate integer");
    mpz_set_str(z, "9223372036854775807", 10);
    TAP_CHECK(tg_int_mpz(C, z) == num(INT64_MAX), "INT64_MAX by both routes");
    tg_error err;
    TAP_CHECK(tg_int_parse(C, "-123456789012345678901234567890", &err) ==
                  tg_int_parse(C, "-123456789012345678901234567890", &err), "parsed big ints");
    TAP_CHECK(tg_int_parse(C, "+17", &err) == num(17), "parse with a plus sign");
    TAP_CHECK(tg_int_parse(C, "12x", &err) == NULL && err.code == TG_ERR_SYNTAX, "parse rejects junk");

    TAP_CHECK(tg_rat(C, 4, 2, &err) == num(2), "4/2 is the integer 2");
    TAP_CHECK(tg_rat(C, 6, 4, &err) == tg_rat(C, -3, -2, &err), "6/4 = -3/-2");
    TAP_CHECK(tg_kind_of(tg_rat(C, 1, 3, &err)) == TG_RAT, "1/3 is a rational");
    TAP_CHECK(tg_rat(C, 1, -3, &err) == tg_rat(C, -1, 3, &err), "the sign moves to the numerator");
    TAP_CHECK(tg_rat(C, 1, 0, &err) == NULL && err.code == TG_ERR_RANGE, "zero denominator fails");
    mpq_t q;
    mpq_init(q);
    tg_rat_get_mpq(tg_rat(C, 6, -4, &err), q);
    TAP_CHECK(mpz_cmp_si(mpq_numref(q), -3) == 0 && mpz_cmp_si(mpq_denref(q), 2) == 0,
              "rational value comes back normalized");
    mpz_set_str(mpq_numref(q), "100000000000000000000000000000", 10);
    mpz_set_str(mpq_denref(q), "-300000000000000000000000000000", 10);
    tg_term *r = tg_rat_mpq(C, q, &err);
    TAP_CHECK(r == tg_rat(C, -1, 3, &err), "big rational normalizes to -1/3");
    mpq_clear(q);
    mpz_clear(z);
    mpz_clear(w);

    double d;
    TAP_CHECK(tg_double(C, 1.5) == tg_double(C, 1.5), "doubles are interned");
    TAP_CHECK(tg_double(C, 0.0) != tg_double(C, -0.0), "0.0 and -0.0 differ");
    TAP_CHECK(tg_double(C, NAN) == tg_double(C, -NAN), "one NaN");
    TAP_CHECK(tg_double_get(tg_double(C, 2.25), &d) == 0 && d == 2.25, "double value");
    TAP_CHECK(tg_double_get(num(1), &d) == -1, "double_get of an integer fails");
    TAP_CHECK(tg_double(C, 1.0) != num(1), "1.0 is not 1");
}

/* Build the same list by several routes; all must give one pointer. */
static int same_by_all_routes(size_t n, tg_term **e, tg_term *tail)
{
    tg_term *ref = tg_list(C, n, e, tail);
    tg_term *t = tail ? tail : tg_nil();
    for (size_t i = n; i-- > 0;)
        t = tg_cons(C, e[i], t);
    if (t != ref)
        return 0;
    for (size_t k = 0; k <= n; k++)
        if (tg_list(C, k, e, tg_list(C, n - k, e + k, tail)) != ref)
            return 0;
    /* cdr views are the suffixes */
    t = ref;
    for (size_t i = 0; i < n; i++) {
        if (tg_car(t) != e[i] || tg_list(C, n - i, e + i, tail) != t)
            return 0;
        t = tg_cdr(C, t);
    }
    if (t != (tail ? tail : tg_nil()))
        return 0;
    /* the iterator's rest at every position */
    for (size_t k = 0; k <= n; k++) {
        tg_iter it;
        tg_iter_init(&it, ref);
        for (size_t i = 0; i < k; i++)
            if (tg_iter_next(&it) != e[i])
                return 0;
        if (tg_iter_rest(C, &it) != tg_list(C, n - k, e + k, tail))
            return 0;
    }
    if (n > 0 && tg_app(C, e[0], n - 1, e + 1) != tg_list(C, n, e, NULL))
        return 0;
    return 1;
}

static void test_lists(void)
{
    tg_term *x = sym("x"), *y = sym("y"), *z = sym("z"), *add = sym("add");
    tg_term *xyz[3] = {x, y, z};
    tg_term *app = tg_app(C, add, 3, xyz);
    TAP_CHECK(app == tg_cons(C, add, tg_list(C, 3, xyz, NULL)), "(add x y z) = cons add (x y z)");
    TAP_CHECK(tg_cdr(C, app) == tg_list(C, 3, xyz, NULL), "cdr of (add x y z) is (x y z)");
    TAP_EQ_INT((long long)tg_length(app), 4, "length of (add x y z)");
    TAP_CHECK(tg_nth(app, 3) == z && tg_nth(app, 4) == NULL, "nth");
    tg_term *dotted = tg_list(C, 2, xyz, z);
    TAP_CHECK(tg_tail(dotted) == z && tg_length(dotted) == 2, "(x y . z) tail and length");
    TAP_CHECK(tg_cons(C, x, y) == tg_list(C, 1, &x, y), "(x . y)");
    TAP_CHECK(tg_car(x) == NULL && tg_cdr(C, x) == NULL, "car/cdr of an atom are NULL");
    TAP_CHECK(tg_tail(x) == x, "tail of an atom is itself");
    tg_term *out[8];
    TAP_EQ_INT((long long)tg_elements(app, out, 2), 4, "tg_elements counts all");
    TAP_CHECK(out[0] == add && out[1] == x, "tg_elements copies at most max");

    /* every length around the chunk boundaries, proper and dotted */
    tg_term *e[64];
    for (int i = 0; i < 64; i++)
        e[i] = (i % 3) ? num(i) : sym(i % 2 ? "a" : "b");
    int ok = 1;
    for (size_t n = 0; n <= 40; n++)
        ok &= same_by_all_routes(n, e, NULL) & same_by_all_routes(n, e, z) &
              same_by_all_routes(n, e + 7, tg_double(C, 0.5));
    TAP_CHECK(ok, "lists of length 0..40 are one pointer by every route");

    /* a tail that is itself a list merges into the list */
    tg_term *whole = tg_list(C, 20, e, NULL);
    for (size_t k = 0; k <= 20; k++)
        ok &= tg_list(C, k, e, tg_list(C, 20 - k, e + k, NULL)) == whole;
    TAP_CHECK(ok, "(e0..ek . (ek+1 ..)) = (e0 .. en)");
}

/* A random term of bounded size, and the same term built by another
 * route: lists rebuilt by consing, atoms rebuilt from their contents. */
static tg_term *random_term(int depth)
{
    switch (rnd() % (depth > 0 ? 9 : 6)) {
    case 0: return num((int64_t)(rnd() % 2000) - 1000);
    case 1: return num((int64_t)rnd());
    case 2: { char b[4] = {(char)('a' + rnd() % 4), (char)('a' + rnd() % 3)}; return sym(b); }
    case 3: return tg_double(C, (double)(int64_t)(rnd() % 100) / 8.0);
    case 4: return tg_var(C, "v", 1, rnd() % 3);
    case 5: return tg_rat(C, (int64_t)(rnd() % 50) - 25, (int64_t)(rnd() % 7) + 1, NULL);
    default: {
        size_t n = rnd() % 12;
        tg_term *e[12];
        for (size_t i = 0; i < n; i++)
            e[i] = random_term(depth - 1);
        return tg_list(C, n, e, (rnd() % 5) ? NULL : sym("t"));
    }
    }
}

static tg_term *rebuild(tg_term *t)
{
    switch (tg_kind_of(t)) {
    case TG_PAIR: {
        tg_term *elems[64];
        size_t n = tg_elements(t, elems, 64);
        tg_term *r = rebuild(tg_tail(t));
        for (size_t i = n; i-- > 0;)
            r = tg_cons(C, rebuild(elems[i]), r);
        return r;
    }
    case TG_INT: {
        mpz_t z;
        mpz_init(z);
        tg_int_get_mpz(t, z);
        tg_term *r = tg_int_mpz(C, z);
        mpz_clear(z);
        return r;
    }
    case TG_RAT: {
        mpq_t q;
        mpq_init(q);
        tg_rat_get_mpq(t, q);
        tg_term *r = tg_rat_mpq(C, q, NULL);
        mpq_clear(q);
        return r;
    }
    case TG_DOUBLE: { double d; tg_double_get(t, &d); return tg_double(C, d); }
    case TG_SYMBOL: { size_t n; const char *s = tg_symbol_name(t, &n); return tg_symbol(C, s, n); }
    case TG_VAR: { size_t n; const char *s = tg_var_name(t, &n); return tg_var(C, s, n, tg_var_id(t)); }
    default: return t;
    }
}

static void test_properties(void)
{
    int same = 1, order = 1;
    for (int i = 0; i < 3000; i++) {
        tg_term *a = random_term(4), *b = rebuild(a);
        same &= a == b && tg_hash(a) == tg_hash(b);
        tg_term *c = random_term(3), *d = random_term(3);
        int ab = tg_compare(a, c), ba = tg_compare(c, a);
        order &= (ab == 0) == (a == c) && ab == -ba;
        int cd = tg_compare(c, d);
        if (ab < 0 && cd < 0)
            order &= tg_compare(a, d) < 0;
        if (ab > 0 && cd > 0)
            order &= tg_compare(a, d) > 0;
    }
    TAP_CHECK(same, "3000 random terms rebuilt another way are the same pointer");
    TAP_CHECK(order, "compare is antisymmetric, transitive, and 0 only for the same term");
}

static void test_order(void)
{
    tg_error err;
    TAP_CHECK(tg_compare(num(3), num((int64_t)1 << 62)) < 0, "3 < 2^62");
    TAP_CHECK(tg_compare(tg_int_parse(C, "-99999999999999999999999", &err), num(-5)) < 0, "big negative < -5");
    TAP_CHECK(tg_compare(tg_rat(C, 1, 2, &err), tg_double(C, 0.6)) < 0, "1/2 < 0.6");
    TAP_CHECK(tg_compare(tg_double(C, 0.4), tg_rat(C, 1, 2, &err)) < 0, "0.4 < 1/2");
    TAP_CHECK(tg_compare(num(1), tg_double(C, 1.0)) < 0, "1 before 1.0 (equal value, int first)");
    TAP_CHECK(tg_compare(tg_double(C, -0.0), tg_double(C, 0.0)) < 0, "-0.0 before 0.0");
    TAP_CHECK(tg_compare(tg_double(C, INFINITY), tg_double(C, NAN)) < 0, "inf before nan");
    TAP_CHECK(tg_compare(tg_double(C, -INFINITY), num(INT64_MIN)) < 0, "-inf first");
    TAP_CHECK(tg_compare(num(1000), sym("a")) < 0, "numbers before symbols");
    TAP_CHECK(tg_compare(sym("zz"), tg_string(C, "a", 1)) < 0, "symbols before strings");
    TAP_CHECK(tg_compare(tg_string(C, "a", 1), tg_var(C, "a", 1, 0)) < 0, "strings before variables");
    TAP_CHECK(tg_compare(tg_var(C, "a", 1, 9), tg_nil()) < 0, "variables before ()");
    TAP_CHECK(tg_compare(tg_nil(), tg_cons(C, num(0), tg_nil())) < 0, "() before pairs");
    TAP_CHECK(tg_compare(sym("ab"), sym("abc")) < 0 && tg_compare(sym("b"), sym("abc")) > 0,
              "symbols by bytes");
    tg_term *e[3] = {sym("a"), sym("b"), sym("c")};
    TAP_CHECK(tg_compare(tg_list(C, 2, e, NULL), tg_list(C, 3, e, NULL)) < 0, "(a b) < (a b c)");
    TAP_CHECK(tg_compare(tg_list(C, 2, e, sym("z")), tg_list(C, 3, e, NULL)) < 0, "(a b . z) < (a b c)");
    TAP_CHECK(tg_compare(tg_list(C, 2, e + 1, NULL), tg_list(C, 3, e, NULL)) > 0, "(b c) > (a b c)");
    TAP_CHECK(tg_compare(tg_list(C, 2, e, sym("a")), tg_list(C, 2, e, sym("b"))) < 0,
              "dotted tails compared");
}

/* tg_app_batch gives what tg_app gives, for every argument count, for
 * terms old and new, duplicates inside a batch, and a batch long enough
 * to collect while it runs. */
static int batch_matches(size_t n, size_t count, int64_t base)
{
    tg_term **args = GC_MALLOC((count * n + 1) * sizeof *args);
    tg_term **out = GC_MALLOC((count + 1) * sizeof *out);
    for (size_t i = 0; i < count * n; i++)
        args[i] = i % 3 == 0 ? num(base + (int64_t)(i / 2)) : i % 3 == 1 ? sym("x") : num(-7);
    if (tg_app_batch(C, sym("b"), n, count, args, out, NULL) != 0)
        return 0;
    int ok = 1;
    for (size_t i = 0; i < count; i++)
        ok &= out[i] == tg_app(C, sym("b"), n, args + i * n);
    return ok;
}

/* Small tables are probed one application at a time, larger ones in
 * groups: both are run, before and after the table grows. */
static void batch_counts(const char *table, int64_t base)
{
    static const size_t ns[] = {0, 1, 2, 3, 4, 7, 8, 12};
    for (size_t k = 0; k < sizeof ns / sizeof *ns; k++) {
        TAP_CHECK(batch_matches(ns[k], 100, base), "%s table: batch of 100 new %zu-argument terms",
                  table, ns[k]);
        TAP_CHECK(batch_matches(ns[k], 37, base), "%s table: batch of 37 existing %zu-argument terms",
                  table, ns[k]);
    }
}

static void test_batch(void)
{
    tg_ctx *shared = C;
    C = tg_ctx_new(NULL);   /* a fresh context: a small table */
    tg_stats st;
    tg_ctx_stats(C, &st);
    TAP_CHECK(st.capacity < 8192, "the table is small (%zu slots)", st.capacity);
    batch_counts("small", 0);
    tg_ctx_stats(C, &st);
    TAP_CHECK(st.capacity < 8192, "and stays small (%zu slots)", st.capacity);
    tg_ctx_free(C);
    C = shared;
    TAP_CHECK(batch_matches(2, 200000, 1000000), "batch of 2*10^5 new terms (collections inside)");
    tg_term **hold = GC_MALLOC(20000 * sizeof *hold);  /* keeps the table large */
    for (int i = 0; i < 20000; i++)
        hold[i] = tg_app(C, sym("hold"), 1, (tg_term *[]){num(i)});
    tg_ctx_stats(C, &st);
    TAP_CHECK(st.capacity >= 16384, "the table has grown (%zu slots)", st.capacity);
    batch_counts("large", 5000000);
    tg_term *a[6] = {num(1), num(2), num(1), num(2), num(3), num(4)}, *out[3];
    TAP_CHECK(tg_app_batch(C, sym("d"), 2, 3, a, out, NULL) == 0 && out[0] == out[1] &&
                  out[0] != out[2] && out[2] == tg_read_cstr(C, "(d 3 4)", NULL),
              "duplicates inside a batch are one term");
    TAP_CHECK(tg_app_batch(C, sym("d"), 2, 0, NULL, NULL, NULL) == 0, "an empty batch is fine");

    tg_error err;
    tg_term *bad[4] = {num(1), num(2), num(3), NULL}, *keep[2] = {NULL, NULL};
    tg_term *mark = sym("untouched");
    out[0] = out[1] = mark;
    TAP_CHECK(tg_app_batch(C, sym("d"), 2, 2, bad, out, &err) == -1 && err.code == TG_ERR_ARG &&
                  strstr(err.message, "argument 1 of application 1") && out[0] == mark &&
                  out[1] == mark,
              "a NULL argument fails before anything is built (%s)", err.message);
    TAP_CHECK(tg_app_batch(C, NULL, 2, 1, a, out, &err) == -1 && err.code == TG_ERR_ARG,
              "a NULL head fails");
    TAP_CHECK(tg_app_batch(C, sym("d"), 2, 1, a, NULL, &err) == -1 && err.code == TG_ERR_ARG,
              "a NULL output array fails");
    TAP_CHECK(tg_app_batch(C, sym("d"), 2, 1, NULL, keep, &err) == -1 && err.code == TG_ERR_ARG,
              "NULL arguments with n > 0 fail");
    TAP_CHECK(tg_app_batch(NULL, sym("d"), 2, 1, a, keep, &err) == -1 && err.code == TG_ERR_ARG,
              "a NULL context fails");
    TAP_CHECK(tg_app_batch(C, sym("d"), SIZE_MAX / 2, 3, a, keep, &err) == -1 &&
                  err.code == TG_ERR_RANGE,
              "a count times n past SIZE_MAX fails");
    TAP_CHECK(tg_app_batch(C, sym("d"), 0, 2, NULL, keep, NULL) == 0 && keep[0] == keep[1] &&
                  keep[0] == tg_app(C, sym("d"), 0, NULL),
              "n = 0 takes no argument array");
}

/* NULL where a term is expected: the accessors answer "not that kind". */
static void test_null(void)
{
    size_t len = 7;
    int64_t v;
    double d;
    mpz_t z;
    mpq_t q;
    mpz_init(z);
    mpq_init(q);
    tg_iter it;
    tg_iter_init(&it, NULL);
    tg_term *out[2];
    TAP_CHECK(tg_symbol_name(NULL, &len) == NULL && tg_string_bytes(NULL, &len) == NULL &&
                  tg_var_name(NULL, &len) == NULL && tg_var_id(NULL) == 0,
              "names of NULL are NULL");
    TAP_CHECK(tg_int_get(NULL, &v) < 0 && tg_int_get_mpz(NULL, z) < 0 && tg_rat_get_mpq(NULL, q) < 0 &&
                  tg_double_get(NULL, &d) < 0,
              "numbers of NULL are -1");
    TAP_CHECK(tg_car(NULL) == NULL && tg_cdr(C, NULL) == NULL && tg_nth(NULL, 0) == NULL &&
                  tg_tail(NULL) == NULL && tg_length(NULL) == 0 && tg_elements(NULL, out, 2) == 0 &&
                  tg_iter_next(&it) == NULL && tg_iter_next(NULL) == NULL,
              "list accessors of NULL answer empty");
    TAP_CHECK(tg_hash(NULL) == 0 && tg_is_ground(NULL), "hash and groundness of NULL");
    mpz_clear(z);
    mpq_clear(q);
}

int main(void)
{
    C = tg_ctx_new(NULL);
    test_null();
    TAP_CHECK(C != NULL, "context created");
    test_atoms();
    test_ground_new();
    test_numbers();
    test_lists();
    test_properties();
    test_order();
    test_batch();
    tg_stats st;
    tg_ctx_stats(C, &st);
    TAP_CHECK(st.live > 0 && st.capacity > st.live && st.created >= st.live, "stats are consistent");
    tg_ctx_free(C);
    return TAP_DONE();
}
