/* test_lib.c - the shipped rule library through the C API: loaded by its
 * source path and through TGREL_RULES_PATH, rewriting terms 10^6 deep
 * (folding, guards, cancellations), and exact folding checked against
 * GMP. */
#include "harness.h"
#include "tgrel.h"
#include "tgtest.h"

#define DEEP 1000000

static tg_term *sym(tg_ctx *ctx, const char *s) { return tg_symbol_cstr(ctx, s); }

static tg_term *app1(tg_ctx *ctx, const char *h, tg_term *a) { return tg_app(ctx, sym(ctx, h), 1, &a); }

static tg_term *app2(tg_ctx *ctx, const char *h, tg_term *a, tg_term *b)
{
    tg_term *v[2] = {a, b};
    return tg_app(ctx, sym(ctx, h), 2, v);
}

static tg_term *rw(tg_ctx *ctx, tg_rules *rs, const char *db, tg_term *t)
{
    tg_error err;
    tg_term *r = t ? tg_rewrite(rs, sym(ctx, db), t, &err) : NULL;
    if (!r)
        printf("# %s: %s\n", db, err.message);
    return r;
}

int main(void)
{
    tg_error err;
    tg_ctx *ctx = tg_ctx_new(&err);
    unsetenv("TGREL_RULES_PATH");

    /* by its source path: all.rules includes its parts beside itself */
    tg_rules *rs = tg_rules_new(ctx, &err);
    TAP_EQ_INT(tg_rules_load_file(rs, tap_path("patterns/lib/all.rules"), &err), 0, "load all.rules");
    tg_term *t = tg_read_cstr(ctx, "(add (mul 2 (dot (transpose (transpose A)) B)) (mul 3 (mul 1 C)))", &err);
    TAP_EQ_STR(tap_show(rw(ctx, rs, "default", t)), "(gemm C 2 A B 3)", "default: gemm");

    /* through the rules path, the first directory that has the file */
    char path[4200];
    snprintf(path, sizeof path, "/nonexistent-dir:%s", tap_path("patterns/lib"));
    setenv("TGREL_RULES_PATH", path, 1);
    tg_rules *rs2 = tg_rules_new(ctx, &err);
    const char *inc = "(include \"all.rules\")";
    TAP_EQ_INT(tg_rules_load_string(rs2, inc, strlen(inc), NULL, &err), 0, "include through TGREL_RULES_PATH");
    t = tg_read_cstr(ctx, "(exp (log (sigmoid (neg (neg x)))))", &err);
    TAP_EQ_STR(tap_show(rw(ctx, rs2, "canonicalize", t)), "(fill (log (sigmoid x)) (sigmoid x))", "canonicalize from the rules path");

    /* 10^6 deep: neg-neg down a chain onto add-zero */
    tg_term *x = sym(ctx, "x");
    t = app2(ctx, "add", tg_int(ctx, 0), x);
    for (long i = 0; i < DEEP; i++)
        t = app1(ctx, "neg", t);
    TAP_EQ_STR(tap_show(rw(ctx, rs, "canonicalize", t)), "x", "neg chain 10^6 deep");

    /* 10^6 deep: abs-abs, then the guard (known_nonneg (exp x)) */
    t = app1(ctx, "exp", x);
    for (long i = 0; i < DEEP; i++)
        t = app1(ctx, "abs", t);
    TAP_EQ_STR(tap_show(rw(ctx, rs, "canonicalize", t)), "(exp x)", "abs chain 10^6 deep, guarded");

    /* 10^6 deep: folding (sub i (sub i-1 ... 0)), computed alongside.  (A
     * chain of add would flatten into one sum of 10^6 arguments, which the
     * two-at-a-time fold rules reduce in quadratic time.) */
    t = tg_int(ctx, 0);
    int64_t want = 0;
    for (long i = 1; i <= DEEP; i++) {
        t = app2(ctx, "sub", tg_int(ctx, i), t);
        want = i - want;
    }
    int64_t v = 0;
    tg_term *r = rw(ctx, rs, "fold", t);
    int ok = r && tg_int_get(r, &v) == 0 && v == want;
    TAP_CHECK(ok, "fold 10^6 deep: %lld (want %lld)", (long long)v, (long long)want);

    /* exact folding beyond 64 bits, checked against GMP: 3^200 - 3^199 * 2 = 3^199 */
    mpz_t a, b;
    mpz_inits(a, b, NULL);
    mpz_ui_pow_ui(a, 3, 199);
    t = app2(ctx, "sub", app2(ctx, "pow", tg_int(ctx, 3), tg_int(ctx, 200)),
             app2(ctx, "mul", app2(ctx, "pow", tg_int(ctx, 3), tg_int(ctx, 199)), tg_int(ctx, 2)));
    r = rw(ctx, rs, "fold", t);
    TAP_CHECK(r && tg_kind_of(r) == TG_INT && tg_int_get_mpz(r, b) == 0 && mpz_cmp(a, b) == 0,
              "3^200 - 2*3^199 = 3^199 exactly");
    /* a rational is a float to the kernels: (1/3)^5 * 243 folds as a float
     * computation does, to a double (the exact power, rounded once, times
     * 243 in IEEE), not to the integer 1 */
    t = app2(ctx, "mul", app2(ctx, "pow", tg_rat(ctx, 1, 3, &err), tg_int(ctx, 5)), tg_int(ctx, 243));
    r = rw(ctx, rs, "fold", t);
    double d;
    TAP_CHECK(r && tg_kind_of(r) == TG_DOUBLE && tg_double_get(r, &d) == 0 && d == (1.0 / 243.0) * 243.0,
              "(1/3)^5 * 243 = %.17g, a double", r && tg_double_get(r, &d) == 0 ? d : -1.0);
    mpz_clears(a, b, NULL);

    tg_rules_free(rs);
    tg_rules_free(rs2);
    tg_ctx_free(ctx);
    return TAP_DONE();
}
