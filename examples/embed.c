/* embed.c - libtgrel in a C program: build a term, load rules from a
 * string, rewrite the term with a rewriter, print the result and the
 * profile.  Build: cc embed.c $(pkg-config --cflags --libs tgrel) */
#include <stdio.h>
#include <string.h>

#include <tgrel.h>

static const char rules[] =
    "(op mul (arity 2) comm)\n"
    "(op true_div (arity 2))\n"
    "(op add (arity 2) comm)\n"
    "(rule mul-div-cancel (true_div (mul ?x ?y) ?y) => ?x)\n"
    "(equilibrium simplify mul-div-cancel)\n";

/* Report err and return 1 (the exit status). */
static int fail(const tg_error *err)
{
    char msg[1024];
    fprintf(stderr, "embed: %s\n", tg_error_format(err, msg, sizeof msg));
    return 1;
}

int main(void)
{
    tg_error err;
    tg_ctx *ctx = tg_ctx_new(&err);
    if (!ctx)
        return fail(&err);
    tg_rules *rs = tg_rules_new(ctx, &err);
    if (!rs || tg_rules_load_string(rs, rules, strlen(rules), "embedded", &err) < 0)
        return fail(&err);

    /* (true_div (mul (add y z) x) (add y z)), built from parts: the two
     * (add y z) are one term, so the rule sees them equal. */
    tg_term *add = tg_symbol_cstr(ctx, "add"), *mul = tg_symbol_cstr(ctx, "mul");
    tg_term *div = tg_symbol_cstr(ctx, "true_div");
    tg_term *yz[2] = {tg_symbol_cstr(ctx, "y"), tg_symbol_cstr(ctx, "z")};
    tg_term *s1 = tg_app(ctx, add, 2, yz), *s2 = tg_app(ctx, add, 2, yz);
    tg_term *m[2] = {s1, tg_symbol_cstr(ctx, "x")};
    tg_term *d[2] = {tg_app(ctx, mul, 2, m), s2};
    tg_term *t = tg_app(ctx, div, 2, d);
    printf("the same term twice: %s\n", s1 == s2 ? "yes" : "no");
    fputs("input:   ", stdout);
    tg_fprint(stdout, t);

    tg_term *out = tg_rewrite(rs, tg_symbol_cstr(ctx, "simplify"), t, &err);
    if (!out)
        return fail(&err);
    fputs("\noutput:  ", stdout);
    tg_fprint(stdout, out);
    fputs("\nprofile: ", stdout);
    tg_fprint(stdout, tg_rules_profile(rs));
    putchar('\n');

    tg_rules_free(rs);
    tg_ctx_free(ctx);
    return 0;
}
