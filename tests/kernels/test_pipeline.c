/* test_pipeline.c - a pipeline users can extend (doc/kernels.md, Modes;
 * doc/rules.md, Registering into a database): the modes fast_run,
 * fast_compile and none chosen in tg_fn_options and by $TGREL_MODE, an
 * unknown one an error; rules a user's file registers into a database of
 * another file, run by tg_fn_compile; each checked by the values the
 * function computes (a rule that changes a value on purpose shows which
 * rewriter ran), on the compiled and the interpreted path. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "kt.h"

static char dir[] = "/tmp/tgrel-pipeline-test-XXXXXX";

/* A library in miniature: canonicalize turns exp into expm1 and
 * specialize turns sin into cos, both on purpose, so that the values say
 * which of them ran. */
static const char lib_rules[] =
    "(op exp (arity 1)) (op expm1 (arity 1)) (op sin (arity 1)) (op cos (arity 1))\n"
    "(op add (arity 2+) assoc comm)\n"
    "(rule exp-expm1 (exp ?x) => (expm1 ?x))\n"
    "(rule sin-cos (sin ?x) => (cos ?x))\n"
    "(equilibrium canonicalize exp-expm1)\n"
    "(equilibrium specialize sin-cos)\n"
    "(sequence default (0 canonicalize) (1 specialize))\n";

/* Compile out over x (n) with rs and the given mode (and rewrite spec,
 * NULL: default), call it on x[0..n), out written to y. */
static int run(tg_ctx *ctx, tg_rules *rs, const char *mode, const char *spec, const char *out, const double *x,
               double *y, int64_t n, tg_error *err)
{
    tg_error_clear(err);
    tg_term *in = tg_read_cstr(ctx, "(input x float64 (n))", err), *o = tg_read_cstr(ctx, out, err);
    tg_fn_options opt = {.interpret = kt_path, .rules = rs, .mode = mode,
                         .rewrite = spec ? tg_read_cstr(ctx, spec, err) : NULL};
    tg_fn *fn = in && o ? tg_fn_compile(ctx, 1, &in, 1, &o, &opt, err) : NULL;
    tg_array a, b;
    tg_array_init(&a, TG_FLOAT64, 1, &n, (void *)x);
    tg_array_init(&b, TG_FLOAT64, 1, &n, y);
    int rc = fn ? tg_fn_call(fn, &a, &b, err) : -1;
    tg_fn_free(fn);
    return rc;
}

/* y[i] == f(x[i]) + g(x[i]) for all i, within a few ulps. */
static int all_close(const double *x, const double *y, int64_t n, double (*f)(double), double (*g)(double))
{
    for (int64_t i = 0; i < n; i++)
        if (!kt_close(y[i], f(x[i]) + g(x[i]), KT_ULPS))
            return 0;
    return 1;
}

static void test_modes(void)
{
    tg_error err;
    tg_ctx *ctx = tg_ctx_new(&err);
    tg_rules *rs = kt_rules(ctx, lib_rules, "lib.rules");
    const double x[5] = {0.25, -1.5, 2, 0, 3.5};
    double y[5];
    const char *t = "(add (exp (input x float64 (n))) (sin (input x float64 (n))))";
    KT_EACH_PATH {
        TAP_CHECK(run(ctx, rs, NULL, NULL, t, x, y, 5, &err) == 0 && all_close(x, y, 5, expm1, cos),
                  "no mode: fast_run, canonicalize and specialize ran (%s)", err.message);
        TAP_CHECK(run(ctx, rs, "fast_run", NULL, t, x, y, 5, &err) == 0 && all_close(x, y, 5, expm1, cos),
                  "fast_run: everything");
        TAP_CHECK(run(ctx, rs, "fast_compile", NULL, t, x, y, 5, &err) == 0 && all_close(x, y, 5, expm1, sin),
                  "fast_compile: canonicalize only (%s)", err.message);
        TAP_CHECK(run(ctx, rs, "fast_compile", "specialize", t, x, y, 5, &err) == 0 && all_close(x, y, 5, expm1, sin),
                  "fast_compile runs canonicalize whatever rewrite names");
        TAP_CHECK(run(ctx, rs, "none", NULL, t, x, y, 5, &err) == 0 && all_close(x, y, 5, exp, sin),
                  "none: not rewritten (%s)", err.message);
        setenv("TGREL_MODE", "fast_compile", 1);
        TAP_CHECK(run(ctx, rs, NULL, NULL, t, x, y, 5, &err) == 0 && all_close(x, y, 5, expm1, sin),
                  "TGREL_MODE=fast_compile when the options name none");
        TAP_CHECK(run(ctx, rs, "none", NULL, t, x, y, 5, &err) == 0 && all_close(x, y, 5, exp, sin),
                  "the options' mode wins over TGREL_MODE");
        setenv("TGREL_MODE", "none", 1);
        TAP_CHECK(run(ctx, rs, NULL, NULL, t, x, y, 5, &err) == 0 && all_close(x, y, 5, exp, sin), "TGREL_MODE=none");
        setenv("TGREL_MODE", "fastest", 1);
        tg_error_clear(&err);
        TAP_CHECK(run(ctx, rs, NULL, NULL, t, x, y, 5, &err) < 0 && err.code == TG_ERR_ARG &&
                      strstr(err.message, "unknown mode fastest in TGREL_MODE (fast_run, fast_compile or none)"),
                  "an unknown TGREL_MODE is an error (%s)", err.message);
        unsetenv("TGREL_MODE");
        tg_error_clear(&err);
        TAP_CHECK(run(ctx, rs, "fast", NULL, t, x, y, 5, &err) < 0 &&
                      strstr(err.message, "unknown mode fast (fast_run, fast_compile or none)"),
                  "an unknown mode in the options is an error (%s)", err.message);
        tg_error_clear(&err);
        TAP_CHECK(run(ctx, NULL, "slow", NULL, "(exp (input x float64 (n)))", x, y, 5, &err) < 0 &&
                      strstr(err.message, "unknown mode slow"),
                  "also without a rule set");
    }
    TAP_CHECK(tg_fn_mode(NULL, NULL) && !strcmp(tg_fn_mode(NULL, NULL), "fast_run") &&
                  !strcmp(tg_fn_mode("none", NULL), "none") && !tg_fn_mode("", &err),
              "tg_fn_mode: the default, a name, and \"\" unknown");
    tg_rules_free(rs);
    tg_ctx_free(ctx);
}

/* A user's file registers a rule into the library's canonicalize: a
 * compile after it runs the rule (the rewrite cache tells the two rule
 * sets apart), fast_compile too; a named query of the user's file is a
 * rewrite spec; the errors of a bad file carry file:line:column, and
 * leave the rule set as it was. */
static void test_register(void)
{
    static const char user[] =
        "(op log1p (arity 1))\n"
        "(rule expm1-log1p (expm1 ?x) => (log1p ?x))\n"
        "(register canonicalize expm1-log1p)\n"
        "(defquery no-sin (query default (exclude sin-cos)))\n";
    tg_error err;
    tg_ctx *ctx = tg_ctx_new(&err);
    tg_rules *rs = kt_rules(ctx, lib_rules, "lib.rules");
    const double x[4] = {0.5, 1.25, 2, 3};
    double y[4];
    const char *t = "(add (exp (input x float64 (n))) (sin (input x float64 (n))))";
    KT_EACH_PATH {
        TAP_CHECK(run(ctx, rs, NULL, NULL, t, x, y, 4, &err) == 0 && all_close(x, y, 4, expm1, cos),
                  "before the user's file: the library alone");
    }
    int ok = tg_rules_load_string(rs, user, strlen(user), "user.rules", &err) == 0;
    TAP_CHECK(ok, "the user's file loads (%s)", ok ? "" : err.message);
    KT_EACH_PATH {
        TAP_CHECK(run(ctx, rs, NULL, NULL, t, x, y, 4, &err) == 0 && all_close(x, y, 4, log1p, cos),
                  "after: default runs the registered rule (%s)", err.message);
        TAP_CHECK(run(ctx, rs, "fast_compile", NULL, t, x, y, 4, &err) == 0 && all_close(x, y, 4, log1p, sin),
                  "fast_compile runs it, in canonicalize");
        TAP_CHECK(run(ctx, rs, NULL, "no-sin", t, x, y, 4, &err) == 0 && all_close(x, y, 4, log1p, sin),
                  "a named query as the rewrite spec (%s)", err.message);
    }
    static const struct { const char *text, *msg; int line, col; } bad[] = {
        {"(rule r2 (sin ?x) => ?x)\n(register\n    canonicalise r2)", "unknown rewriter canonicalise", 3, 5},
        {"(rule r2 (sin ?x) => ?x)\n(register default (0.5 r2)\n  (1 sin-cos))",
         "position 1 of sequence default is taken by specialize", 3, 3},
        {"(rule r2 (sin ?x) => ?x)\n  (register canonicalize r2 exp-expm1)", "exp-expm1 is in canonicalize already", 2,
         29},
        {"(defquery q (query specialize))\n(register q exp-expm1)", "q is a named query, not a rewriter of its own", 2, 11},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        tg_error_clear(&err);
        int rc = tg_rules_load_string(rs, bad[i].text, strlen(bad[i].text), "bad.rules", &err);
        TAP_CHECK(rc < 0 && strstr(err.message, bad[i].msg) && err.file && !strcmp(err.file, "bad.rules") &&
                      err.line == bad[i].line && err.column == bad[i].col,
                  "bad file %zu: %s at bad.rules:%d:%d (%s:%d:%d: %s)", i + 1, bad[i].msg, bad[i].line, bad[i].col,
                  err.file ? err.file : "-", err.line, err.column, err.message);
    }
    KT_EACH_PATH {
        TAP_CHECK(run(ctx, rs, NULL, NULL, t, x, y, 4, &err) == 0 && all_close(x, y, 4, log1p, cos),
                  "the bad files changed nothing: default as before (%s)", err.message);
    }
    tg_term *l = tg_rules_list(rs, TG_LIST_REWRITERS, &err);
    char *p = l ? tg_print(l, NULL) : NULL;
    TAP_CHECK(p && strstr(p, "(equilibrium canonicalize exp-expm1 expm1-log1p)") &&
                  strstr(p, "(defquery no-sin (query default (exclude sin-cos)))") && !strstr(p, "r2"),
              "the listing shows the registration and the named query (%s)", p ? p : "-");
    free(p);
    tg_rules_free(rs);
    tg_ctx_free(ctx);
}

/* softplus(x) = log(1 + e^x) and its derivative, the logistic: by hand. */
static double softplus(double x) { return log1p(exp(x)); }
static double logistic(double x) { return 1 / (1 + exp(-x)); }

/* Ops a .rules file defines (defop) compile: values on both paths
 * against a hand computation, with and without rewriting; the gradient
 * through the definition against finite differences; a definition
 * using an unknown op, or reaching itself, refused at its place. */
static void test_defop(void)
{
    static const char defs[] =
        "(op exp (arity 1)) (op log1p (arity 1)) (op sub (arity 2)) (op mul (arity 2+) assoc comm)\n"
        "(op sum (arity 1 2))\n"
        "(defop (softplus ?x) (log1p (exp ?x)))\n"
        "(defop (scaled ?x ?y) (mul (softplus (sub ?x ?y)) ?y))\n"
        "(equilibrium default)\n";
    tg_error err;
    tg_ctx *ctx = tg_ctx_new(&err);
    tg_rules *rs = kt_rules(ctx, defs, "defs.rules");
    const double x[6] = {0.5, -3, 2, 0, 7.5, -0.25};
    double y[6];
    KT_EACH_PATH {
        for (int m = 0; m < 2; m++) {
            const char *mode = m ? "none" : "fast_run";
            int rc = run(ctx, rs, mode, NULL, "(scaled (input x float64 (n)) 2)", x, y, 6, &err);
            int good = rc == 0;
            for (int i = 0; good && i < 6; i++)
                good = kt_close(y[i], softplus(x[i] - 2) * 2, KT_ULPS);
            TAP_CHECK(good, "%s: a definition in a definition computes softplus(x - 2) * 2 (%s)", mode, err.message);
        }
        /* d/dx sum(scaled(x, 2)) = 2 * logistic(x - 2): by hand and by
         * central differences of the compiled function */
        tg_grad_options go = {rs, 0};
        tg_term *in = tg_read_cstr(ctx, "(input x float64 (n))", &err);
        tg_term *cost = tg_read_cstr(ctx, "(sum (scaled (input x float64 (n)) 2) all)", &err);
        tg_term *gt[2] = {tg_read_cstr(ctx, "grad", &err), cost};
        tg_term *g3[3] = {gt[0], cost, in};
        tg_term *grad = tg_list(ctx, 3, g3, NULL);
        tg_fn_options o = {.interpret = kt_path, .rules = rs, .grad = &go};
        tg_fn *fg = tg_fn_compile(ctx, 1, &in, 1, &grad, &o, &err), *fc = tg_fn_compile(ctx, 1, &in, 1, &cost, &o, &err);
        int64_t n = 6, zero = 0;
        (void)zero;
        tg_array a, b;
        double xs[6], c1, c2;
        memcpy(xs, x, sizeof xs);
        tg_array_init(&a, TG_FLOAT64, 1, &n, xs);
        tg_array_init(&b, TG_FLOAT64, 1, &n, y);
        int good = fg && fc && tg_fn_call(fg, &a, &b, &err) == 0;
        for (int i = 0; good && i < 6; i++)
            good = kt_close(y[i], 2 * logistic(x[i] - 2), 1e-12);
        TAP_CHECK(good, "the gradient through the definition is 2 * logistic(x - 2) (%s)", err.message);
        for (int i = 0; good && i < 6; i++) {
            double h = 1e-5;
            tg_array cc;
            tg_array_init(&cc, TG_FLOAT64, 0, NULL, &c1);
            xs[i] = x[i] + h;
            good = tg_fn_call(fc, &a, &cc, &err) == 0;
            tg_array_init(&cc, TG_FLOAT64, 0, NULL, &c2);
            xs[i] = x[i] - h;
            good = good && tg_fn_call(fc, &a, &cc, &err) == 0;
            xs[i] = x[i];
            good = good && fabs((c1 - c2) / (2 * h) - y[i]) < 1e-7;
        }
        TAP_CHECK(good, "and agrees with central differences of the cost");
        tg_fn_free(fg);
        tg_fn_free(fc);
    }
    static const struct { const char *text, *msg; int line, col; } bad[] = {
        {"\n(defop (twice ?x)\n   (mul 2 (frob ?x)))", "unknown op frob", 3, 11},
        {"(defop (loop ?x) (mul (loop ?x) 2))", "defop loop is recursive: loop -> loop", 1, 18},
        {"(op g (arity 1))\n(defop (f ?x) (g ?x))\n(defop (g ?x) (mul 2 (f ?x)))", "defop g is recursive: g -> f -> g",
         3, 15},
        {"(defop (softplus ?x) ?x)", "softplus is defined already", 1, 8},
        {"(defop (h ?x ?x) ?x)", "malformed defop", 1, 1},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        tg_error_clear(&err);
        int rc = tg_rules_load_string(rs, bad[i].text, strlen(bad[i].text), "bad.rules", &err);
        TAP_CHECK(rc < 0 && strstr(err.message, bad[i].msg) && err.file && !strcmp(err.file, "bad.rules") &&
                      err.line == bad[i].line && err.column == bad[i].col,
                  "bad definition %zu: %s at bad.rules:%d:%d (%s:%d:%d: %s)", i + 1, bad[i].msg, bad[i].line,
                  bad[i].col, err.file ? err.file : "-", err.line, err.column, err.message);
    }
    tg_term *l = tg_rules_list(rs, TG_LIST_OPS, &err);
    char *p = l ? tg_print(l, NULL) : NULL;
    TAP_CHECK(p && !strstr(p, "twice") && !strstr(p, "loop") && strstr(p, "(op softplus (arity 1))"),
              "the refused definitions declared nothing (%s)", p ? p : "-");
    free(p);
    tg_rules_free(rs);
    tg_ctx_free(ctx);
}

/* The interpreter's side of hyp: the same as its C expression. */
static double hyp_fn(const double *a, void *ud)
{
    (void)ud;
    return sqrt(a[0] * a[0] + a[1] * a[1]);
}

static int calls;
static double cube_fn(const double *a, void *ud)
{
    (void)ud;
    calls++;
    return a[0] * a[0] * a[0];
}

/* An op given as a C expression (tg_fn_def_elementwise) compiles into
 * the loops (the function is native) and runs in the interpreter through
 * its C function: values against a hand computation, broadcast and
 * fused with other ops, float32 kept; its gradient from a user's vjp
 * rule, against the derivative by hand and central differences; the
 * errors of a bad definition. */
static void test_c_op(void)
{
    tg_error err;
    tg_ctx *ctx = tg_ctx_new(&err);
    int ok = tg_fn_def_elementwise(ctx, "hyp", 2, "sqrt(x0 * x0 + x1 * x1)", hyp_fn, NULL, &err) == 0 &&
             tg_fn_def_elementwise(ctx, "cube", 1, "x0 * x0 * x0", cube_fn, NULL, &err) == 0;
    TAP_CHECK(ok, "two ops defined (%s)", ok ? "" : err.message);
    tg_term *in[2] = {tg_read_cstr(ctx, "(input x float64 (n))", &err), tg_read_cstr(ctx, "(input y float64 ())", &err)};
    tg_term *out = tg_read_cstr(ctx, "(add 1 (hyp (cube (input x float64 (n))) (input y float64 ())))", &err);
    double x[5] = {0.5, -1.25, 2, 0, 3}, y = -1.5, r[5];
    int64_t n = 5;
    KT_EACH_PATH {
        tg_fn_options o = {.interpret = kt_path};
        tg_fn *fn = tg_fn_compile(ctx, 2, in, 1, &out, &o, &err);
        tg_array a[2], b;
        tg_array_init(&a[0], TG_FLOAT64, 1, &n, x);
        tg_array_init(&a[1], TG_FLOAT64, 0, NULL, &y);
        tg_array_init(&b, TG_FLOAT64, 1, &n, r);
        calls = 0;
        int good = fn && tg_fn_call(fn, a, &b, &err) == 0;
        for (int i = 0; good && i < 5; i++)
            good = kt_close(r[i], 1 + hypot(x[i] * x[i] * x[i], y), KT_ULPS);
        TAP_CHECK(good, "1 + hyp(cube(x), y), y broadcast: by hand (%s)", fn ? err.message : "not compiled");
        TAP_CHECK(fn && tg_fn_native(fn) == !kt_path && (kt_path ? calls == 5 : calls == 0),
                  "%s (the C function called %d times)", kt_path ? "the interpreter calls the C function"
                                                               : "compiled: the expression is in the loop", calls);
        tg_fn_free(fn);
    }
    /* float32 arguments give float32 */
    tg_term *in32 = tg_read_cstr(ctx, "(input z float32 (2))", &err);
    tg_term *o32 = tg_read_cstr(ctx, "(cube (input z float32 (2)))", &err);
    KT_EACH_PATH {
        tg_fn_options o = {.interpret = kt_path};
        tg_fn *fn = tg_fn_compile(ctx, 1, &in32, 1, &o32, &o, &err);
        float z[2] = {1.1f, -3}, w[2];
        int64_t two = 2;
        tg_array a, b;
        tg_array_init(&a, TG_FLOAT32, 1, &two, z);
        tg_array_init(&b, TG_FLOAT32, 1, &two, w);
        TAP_CHECK(fn && tg_fn_call(fn, &a, &b, &err) == 0 && w[0] == (float)((double)z[0] * z[0] * z[0]) &&
                      w[1] == -27,
                  "float32 in, float32 out (%s)", fn ? err.message : "not compiled");
        tg_fn_free(fn);
    }
    /* the gradient, from the user's vjp rule */
    static const char vjp[] =
        "(include \"tensor.rules\") (op vjp (arity 2)) (op adjoints (arity 0+)) (op hyp (arity 2)) (op cube (arity 1))\n"
        "(rule vjp-hyp (vjp (hyp ?x ?y) ?g) => (adjoints (?x (mul ?g (true_div ?x (hyp ?x ?y))))\n"
        "                                                (?y (mul ?g (true_div ?y (hyp ?x ?y))))))\n"
        "(rule vjp-cube (vjp (cube ?x) ?g) => (adjoints (?x (mul ?g 3 (sqr ?x)))))\n";
    tg_rules *rs = kt_rules(ctx, vjp, "vjp.rules");
    tg_grad_options go = {rs, 0};
    tg_term *cost = tg_read_cstr(ctx, "(sum (hyp (cube (input x float64 (n))) (input y float64 ())) all)", &err);
    tg_term *g3[3] = {tg_read_cstr(ctx, "grad", &err), cost, in[0]};
    tg_term *grad = tg_list(ctx, 3, g3, NULL);
    KT_EACH_PATH {
        tg_fn_options o = {.interpret = kt_path, .grad = &go};
        tg_fn *fg = tg_fn_compile(ctx, 2, in, 1, &grad, &o, &err), *fc = tg_fn_compile(ctx, 2, in, 1, &cost, &o, &err);
        double xs[5], c1, c2;
        memcpy(xs, x, sizeof xs);
        tg_array a[2], b, cc;
        tg_array_init(&a[0], TG_FLOAT64, 1, &n, xs);
        tg_array_init(&a[1], TG_FLOAT64, 0, NULL, &y);
        tg_array_init(&b, TG_FLOAT64, 1, &n, r);
        int good = fg && fc && tg_fn_call(fg, a, &b, &err) == 0;
        for (int i = 0; good && i < 5; i++) {
            double c = x[i] * x[i] * x[i];
            good = kt_close(r[i], c / hypot(c, y) * 3 * x[i] * x[i], 1e-12);
        }
        TAP_CHECK(good, "the gradient by the user's vjp rules: by hand (%s)", err.message);
        for (int i = 0; good && i < 5; i++) {
            double h = 1e-6;
            tg_array_init(&cc, TG_FLOAT64, 0, NULL, &c1);
            xs[i] = x[i] + h;
            good = tg_fn_call(fc, a, &cc, &err) == 0;
            tg_array_init(&cc, TG_FLOAT64, 0, NULL, &c2);
            xs[i] = x[i] - h;
            good = good && tg_fn_call(fc, a, &cc, &err) == 0;
            xs[i] = x[i];
            good = good && fabs((c1 - c2) / (2 * h) - r[i]) < 1e-5 * (1 + fabs(r[i]));
        }
        TAP_CHECK(good, "and by central differences of the cost");
        tg_fn_free(fg);
        tg_fn_free(fc);
    }
    tg_error_clear(&err);
    tg_term *nog = tg_read_cstr(ctx, "(grad (sum (hyp (input x float64 (n)) 1) all) (input x float64 (n)))", &err);
    TAP_CHECK(!tg_fn_compile(ctx, 1, in, 1, &nog, NULL, &err) && strstr(err.message, "hyp"),
              "without a vjp rule, no gradient: an error naming the op (%s)", err.message);
    tg_error_clear(&err);
    tg_term *two = tg_read_cstr(ctx, "(hyp (input x float64 (n)))", &err);
    TAP_CHECK(!tg_fn_compile(ctx, 1, in, 1, &two, NULL, &err) && strstr(err.message, "wrong number of arguments"),
              "hyp with one argument: an error (%s)", err.message);
    static const struct { const char *name; unsigned nargs; const char *expr; const char *msg; } bad[] = {
        {"hyp", 2, "x0", "op hyp is defined already"},
        {"exp", 1, "x0", "op exp is defined already (an op of the vocabulary)"},
        {"f", 0, "1", "takes 1 to 8 arguments, not 0"},
        {"f", 9, "x0", "takes 1 to 8 arguments, not 9"},
        {"f", 1, "x0; abort()", "must be one expression"},
        {"f", 1, "x0 /* c */", "must be one expression"},
        {"f", 1, "  ", "must be one expression"},
        {"f g", 1, "x0", "is not a name for an op"},
        {"?f", 1, "x0", "is not a name for an op"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        tg_error_clear(&err);
        int rc = tg_fn_def_elementwise(ctx, bad[i].name, bad[i].nargs, bad[i].expr, hyp_fn, NULL, &err);
        TAP_CHECK(rc < 0 && err.code == TG_ERR_ARG && strstr(err.message, bad[i].msg), "bad definition %zu: %s (%s)",
                  i + 1, bad[i].msg, err.message);
    }
    tg_error_clear(&err);
    TAP_CHECK(tg_fn_def_elementwise(ctx, "f", 1, "x0", NULL, NULL, &err) < 0 && err.code == TG_ERR_ARG,
              "no C function: an error");
    tg_rules_free(rs);
    tg_ctx_free(ctx);
}

int main(void)
{
    if (!mkdtemp(dir))
        return 1;
    setenv("TGREL_CACHE_DIR", dir, 1);
    unsetenv("TGREL_MODE");
    test_modes();
    test_register();
    test_defop();
    test_c_op();
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    TAP_CHECK(system(cmd) == 0, "clean up");
    return TAP_DONE();
}
