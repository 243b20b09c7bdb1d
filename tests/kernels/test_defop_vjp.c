/* test_defop_vjp.c - the gradient of an op defined with defop: a vjp rule
 * the user gives for it is used (here a stable form, sigmoid, where the
 * definition's own gradient overflows to NaN), and without one the
 * gradient is the definition's; checked against finite differences on
 * the compiled and the interpreted path. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "kt.h"

static char dir[] = "/tmp/tgrel-defop-vjp-test-XXXXXX";

#define N 5
static const double xs[N] = {-1.5, 0.25, 2.0, 30.0, 800.0};

static double softplus(double v) { return v > 30 ? v + log1p(exp(-v)) : log1p(exp(v)); }

/* The gradient of sum(softplus2(x)) over xs, compiled with rs (its
 * definitions, and its vjp rules as the gradient's rules) in mode none
 * (no rewriting: what the gradient gives is what runs). */
static int grad_of(tg_ctx *ctx, tg_rules *rs, double *out, tg_error *err)
{
    tg_term *t[2];
    const char *text = "(input x float64 (5))\n"
                       "(grad (sum (softplus2 (input x float64 (5))) all) (input x float64 (5)))";
    if (kt_read_terms(ctx, text, t, err) != 2)
        return -1;
    tg_grad_options go = {rs, 0};
    tg_fn_options o = {.interpret = kt_path, .rules = rs, .grad = &go, .mode = "none"};
    tg_fn *fn = tg_fn_compile(ctx, 1, &t[0], 1, &t[1], &o, err);
    if (!fn)
        return -1;
    int64_t n = N;
    double x[N];
    memcpy(x, xs, sizeof x);
    tg_array a, b;
    tg_array_init(&a, TG_FLOAT64, 1, &n, x);
    tg_array_init(&b, TG_FLOAT64, 1, &n, out);
    int rc = tg_fn_call(fn, &a, &b, err);
    tg_fn_free(fn);
    return rc;
}

static tg_rules *rules(tg_ctx *ctx, const char *extra, tg_error *err)
{
    char text[1000];
    snprintf(text, sizeof text,
             "(include \"tensor.rules\") (include \"grad.rules\")\n"
             "(defop (softplus2 ?x) (log (add 1 (exp ?x))))\n%s", extra);
    tg_rules *rs = tg_rules_new(ctx, err);
    if (rs && tg_rules_load_string(rs, text, strlen(text), "defop.rules", err) < 0) {
        tg_rules_free(rs);
        return NULL;
    }
    return rs;
}

int main(void)
{
    tg_error err;
    if (!mkdtemp(dir))
        return 1;
    setenv("TGREL_CACHE_DIR", dir, 1);
    tg_ctx *ctx = tg_ctx_new(&err);
    tg_rules *own = rules(ctx, "(rule vjp-softplus2 (vjp (softplus2 ?x) ?g) => (adjoints (?x (mul ?g (sigmoid ?x)))))\n",
                          &err);
    TAP_CHECK(own != NULL, "a defop with a vjp rule of its own loads (%s)", own ? "" : err.message);
    tg_rules *plain = rules(ctx, "", &err);
    TAP_CHECK(plain != NULL, "and one without");
    KT_EACH_PATH {
        double g[N], d[N];
        int a = own ? grad_of(ctx, own, g, &err) : -1;
        TAP_CHECK(a == 0, "the gradient through the user's rule compiles and runs (%s)", a ? err.message : "");
        int good = a == 0;
        for (int i = 0; good && i < N; i++) {
            /* central differences of softplus, computed stably here */
            double h = 1e-5, fd = (softplus(xs[i] + h) - softplus(xs[i] - h)) / (2 * h);
            good = fabs(g[i] - fd) < 1e-7;
            if (!good)
                tap_diag("x = %g: gradient %.17g, finite differences %.17g", xs[i], g[i], fd);
        }
        TAP_CHECK(good, "the user's rule: the gradient agrees with finite differences, at x = 800 too (%g)", g[N - 1]);
        int b = plain ? grad_of(ctx, plain, d, &err) : -1;
        TAP_CHECK(b == 0, "the gradient through the definition compiles and runs (%s)", b ? err.message : "");
        good = b == 0;
        for (int i = 0; good && i < N - 1; i++) {
            double h = 1e-5, fd = (softplus(xs[i] + h) - softplus(xs[i] - h)) / (2 * h);
            good = fabs(d[i] - fd) < 1e-7;
        }
        TAP_CHECK(good, "no rule of its own: the definition's gradient agrees with finite differences");
        /* the op outside a gradient, with the gradient's rules given: expanded
         * after the gradient as before */
        tg_term *t[2];
        tg_fn *fc = NULL;
        if (kt_read_terms(ctx, "(input x float64 (3)) (sum (softplus2 (input x float64 (3))) all)", t, &err) == 2) {
            tg_grad_options go = {own, 0};
            tg_fn_options o = {.interpret = kt_path, .rules = own, .grad = &go, .mode = "none"};
            fc = tg_fn_compile(ctx, 1, &t[0], 1, &t[1], &o, &err);
        }
        double c = NAN, x3[3] = {xs[0], xs[1], xs[2]};
        int64_t three = 3;
        tg_array ca, cb;
        tg_array_init(&ca, TG_FLOAT64, 1, &three, x3);
        tg_array_init(&cb, TG_FLOAT64, 0, NULL, &c);
        TAP_CHECK(fc && tg_fn_call(fc, &ca, &cb, &err) == 0 &&
                      fabs(c - (softplus(xs[0]) + softplus(xs[1]) + softplus(xs[2]))) < 1e-12,
                  "the op's value, its definition, with its vjp rule among the gradient's rules: %g", c);
        tg_fn_free(fc);
        /* exp(800) / (1 + exp(800)) is inf / inf: the definition's form */
        TAP_CHECK(b == 0 && isnan(d[N - 1]) && a == 0 && g[N - 1] == 1.0,
                  "at x = 800 the definition's gradient is NaN (%g), the user's rule's 1 (%g): the rule is used",
                  d[N - 1], g[N - 1]);
    }
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    TAP_CHECK(system(cmd) == 0, "clean up");
    tg_rules_free(own);
    tg_rules_free(plain);
    tg_ctx_free(ctx);
    return TAP_DONE();
}
