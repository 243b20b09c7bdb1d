/* shared.c - a function with state: fit y = w*x + b by gradient descent,
 * w and b being shared variables that each call of the compiled step
 * reads and updates (doc/api.md, Shared variables). */
#include <stdio.h>

#include "tgrel.h"

int main(void)
{
    tg_error err;
    tg_ctx *ctx = tg_ctx_new(&err);
    double zero = 0, x[4] = {0, 1, 2, 3}, y[4] = {1, 3, 5, 7}, loss;
    tg_array a;
    tg_array_init(&a, TG_FLOAT64, 0, NULL, &zero);
    tg_shared *w = tg_shared_new(ctx, "w", &a, &err), *b = w ? tg_shared_new(ctx, "b", &a, &err) : NULL;
    /* r = w*x + b - y; loss = mean(r^2); w -= 0.1*mean(r*x); b -= 0.1*mean(r) */
    const char *r = "(sub (add (mul (shared w float64 ()) (input x float64 (n))) (shared b float64 ()))"
                    " (input y float64 (n)))";
    char text[1024];
    snprintf(text, sizeof text, "(mean (sqr %s))", r);
    tg_term *in[2] = {tg_read_cstr(ctx, "(input x float64 (n))", &err),
                      tg_read_cstr(ctx, "(input y float64 (n))", &err)};
    tg_term *out = tg_read_cstr(ctx, text, &err);
    snprintf(text, sizeof text,
             "(((shared w float64 ()) (sub (shared w float64 ()) (mul 0.1 (mean (mul %s (input x float64 (n)))))))"
             " ((shared b float64 ()) (sub (shared b float64 ()) (mul 0.1 (mean %s)))))", r, r);
    tg_fn_options opt = {0};
    opt.updates = tg_read_cstr(ctx, text, &err);
    tg_fn *step = b && out && opt.updates ? tg_fn_compile(ctx, 2, in, 1, &out, &opt, &err) : NULL;
    if (!step) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    int64_t n = 4;
    tg_array args[2], res;
    tg_array_init(&args[0], TG_FLOAT64, 1, &n, x);
    tg_array_init(&args[1], TG_FLOAT64, 1, &n, y);
    tg_array_init(&res, TG_FLOAT64, 0, NULL, &loss);
    for (int i = 0; i < 200; i++) {
        if (tg_fn_call(step, args, &res, &err) < 0) {
            fprintf(stderr, "%s\n", err.message);
            return 1;
        }
        if (i < 3 || i == 10 || i == 50)
            printf("step %d: loss %.6f\n", i, loss);
    }
    double wv, bv;
    tg_array_init(&a, TG_FLOAT64, 0, NULL, &wv);
    tg_shared_get(w, &a, &err);
    tg_array_init(&a, TG_FLOAT64, 0, NULL, &bv);
    tg_shared_get(b, &a, &err);
    printf("w = %.6f, b = %.6f\n", wv, bv);
    tg_fn_free(step);
    tg_ctx_free(ctx);   /* frees w and b too */
    return 0;
}
