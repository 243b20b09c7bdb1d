/* userop.c - an elementwise op given as a C expression
 * (tg_fn_def_elementwise, doc/kernels.md, Ops defined by users): compiled
 * into the loops, run by the interpreter through the C function, and
 * differentiated with a vjp rule of the user's. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tgrel.h"

/* what the interpreter runs: the same as the expression */
static double hyp_fn(const double *a, void *ud)
{
    (void)ud;
    return sqrt(a[0] * a[0] + a[1] * a[1]);
}

static const char vjp_rules[] =
    "(include \"tensor.rules\") (op vjp (arity 2)) (op adjoints (arity 0+)) (op hyp (arity 2))\n"
    "(rule vjp-hyp (vjp (hyp ?x ?y) ?g) => (adjoints (?x (mul ?g (true_div ?x (hyp ?x ?y))))\n"
    "                                                (?y (mul ?g (true_div ?y (hyp ?x ?y))))))\n";

/* Compile term over x (2) and y () and print its value at x, y. */
static int show(tg_ctx *ctx, const char *what, const char *term, const tg_fn_options *opt)
{
    tg_error err;
    tg_term *in[2] = {tg_read_cstr(ctx, "(input x float64 (2))", &err), tg_read_cstr(ctx, "(input y float64 ())", &err)};
    tg_term *t = tg_read_cstr(ctx, term, &err);
    tg_fn *fn = t ? tg_fn_compile(ctx, 2, in, 1, &t, opt, &err) : NULL;
    double x[2] = {3, 5}, y = 4, r[2];
    int64_t n = 2;
    tg_array a[2], b;
    tg_array_init(&a[0], TG_FLOAT64, 1, &n, x);
    tg_array_init(&a[1], TG_FLOAT64, 0, NULL, &y);
    tg_array_init(&b, TG_FLOAT64, 1, &n, r);
    if (!fn || tg_fn_call(fn, a, &b, &err) < 0) {
        fprintf(stderr, "%s\n", err.message);
        tg_fn_free(fn);
        return 1;
    }
    printf("%s: %.6f %.6f\n", what, r[0], r[1]);
    tg_fn_free(fn);
    return 0;
}

int main(void)
{
    tg_error err;
    tg_ctx *ctx = tg_ctx_new(&err);
    if (tg_fn_def_elementwise(ctx, "hyp", 2, "sqrt(x0 * x0 + x1 * x1)", hyp_fn, NULL, &err) < 0) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    tg_rules *rs = tg_rules_new(ctx, &err);
    if (!rs || tg_rules_load_string(rs, vjp_rules, strlen(vjp_rules), "vjp.rules", &err) < 0) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    tg_grad_options go = {rs, 0};
    tg_fn_options compiled = {.grad = &go}, interpreted = {.grad = &go, .interpret = 1};
    const char *f = "(add 1 (hyp (input x float64 (2)) (input y float64 ())))";
    const char *g = "(grad (sum (hyp (input x float64 (2)) (input y float64 ())) all) (input x float64 (2)))";
    int bad = show(ctx, "1 + hyp(x, y), compiled", f, &compiled) || show(ctx, "the same, interpreted", f, &interpreted) ||
              show(ctx, "d sum(hyp(x, y)) / dx", g, &compiled);
    tg_rules_free(rs);
    tg_ctx_free(ctx);
    return bad;
}
