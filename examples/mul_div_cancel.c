/* mul_div_cancel.c - embedding libtgrel: x*y/y -> x written twice, as a
 * node rewriter in C registered through the API and as a pattern rule, run
 * by the same equilibrium rewriter; prints each result and profile.
 *
 * Build against an installed tgrel:
 *   cc mul_div_cancel.c $(pkg-config --cflags --libs tgrel)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tgrel.h>

/* Called on every (true_div NUM DEN) node; ud is the symbol mul.
 * Returns the replacement, or NULL when the node stays as it is. */
static tg_term *mul_div_cancel(tg_ctx *ctx, tg_term *node, void *ud, tg_error *err)
{
    (void)ctx, (void)err;
    tg_term *num = tg_nth(node, 1), *den = tg_nth(node, 2);
    if (tg_car(num) != ud || tg_length(num) != 3)
        return NULL;
    /* terms are hash-consed: structural equality is == */
    if (tg_nth(num, 2) == den)
        return tg_nth(num, 1);
    if (tg_nth(num, 1) == den)
        return tg_nth(num, 2);
    return NULL;
}

static const char *const rules =
    "(op mul (arity 2) comm)\n"
    "(op add (arity 2) comm)\n"
    "(op true_div (arity 2))\n"
    "(rule mul-div-cancel (true_div (mul ?x ?y) ?y) => ?x)\n"
    "(equilibrium canonicalize-rule mul-div-cancel)\n"
    "(equilibrium canonicalize-c mul-div-cancel-c)\n";

static int fail(const tg_error *err)
{
    char buf[1200];
    fprintf(stderr, "mul_div_cancel: %s\n", tg_error_format(err, buf, sizeof buf));
    return 1;
}

static void print(const char *label, const tg_term *t)
{
    char *s = tg_print(t, NULL);
    printf("%s%s\n", label, s ? s : "?");
    free(s);
}

int main(void)
{
    tg_error err;
    tg_ctx *ctx = tg_ctx_new(&err);
    tg_rules *rs = ctx ? tg_rules_new(ctx, &err) : NULL;
    if (!rs)
        return fail(&err);
    /* the op first, then the rewriter (rules may name it once it exists) */
    if (tg_rules_load_string(rs, "(op true_div (arity 2))", 23, NULL, &err) < 0 ||
        tg_rules_def_rewriter(rs, "mul-div-cancel-c", "true_div", "algebra", mul_div_cancel,
                              tg_symbol_cstr(ctx, "mul"), &err) < 0 ||
        tg_rules_load_string(rs, rules, strlen(rules), "example.rules", &err) < 0)
        return fail(&err);
    const char *inputs[] = {"(true_div (mul (add y z) x) (add y z))", "(true_div (mul y x) y)",
                            "(true_div (mul x y) z)"};
    const char *rewriters[] = {"canonicalize-c", "canonicalize-rule"};
    for (size_t i = 0; i < sizeof inputs / sizeof *inputs; i++) {
        tg_term *t = tg_read_cstr(ctx, inputs[i], &err);
        if (!t)
            return fail(&err);
        print("input:   ", t);
        for (size_t k = 0; k < 2; k++) {
            tg_term *r = tg_rewrite(rs, tg_symbol_cstr(ctx, rewriters[k]), t, &err);
            if (!r)
                return fail(&err);
            print("result:  ", r);
            print("profile: ", tg_rules_profile(rs));
        }
    }
    tg_rules_free(rs);
    tg_ctx_free(ctx);
    return 0;
}
