/* test_fuse.c - reductions fused into the loop computing what they
 * reduce: the schedule shows the reduction inside the loop and no
 * temporary; results are bit for bit those of the same reduction run on
 * the stored elementwise result (two functions, nothing fused), for every
 * reduction op, dtype, axis set and layout, NaN included; max / min of an
 * empty axis still fail at call time.  Both paths. */
#include "kt.h"

static tg_ctx *ctx;
static const char *const dn[] = {"bool", "int32", "int64", "float32", "float64"};

static int same_bits(const tg_array *a, const tg_array *b)
{
    if (a->dtype != b->dtype || a->ndim != b->ndim)
        return 0;
    int64_t I[4] = {0};
    if (kt_count(a) == 0)
        return 1;
    size_t es = kt_esize(a->dtype);
    do
        if (memcmp(kt_ptr(a, I), kt_ptr(b, I), es) != 0)
            return 0;
    while (kt_next(a->ndim, a->shape, I));
    return 1;
}

/* op over axes of EXPR(x, y), fused, against the unfused: EXPR computed
 * by one function, the reduction by another. */
static void test_against_unfused(void)
{
    static const char *const ops[] = {"sum", "prod", "max", "min", "mean"};
    /* elementwise work of several kinds, EXPR with %1$s = x, %2$s = y */
    static const char *const exprs[] = {
        "(mul %1$s %2$s)", "(add (exp %1$s) (true_div %2$s 3))", "(lt %1$s %2$s)", "(cast (mul %1$s 2) int32)",
        "(switch (gt %1$s 0) %1$s (neg %2$s))",
    };
    int bad = 0, cases = 0;
    for (int rep = 0; rep < 150; rep++) {
        const char *op = ops[rep % 5], *ex = exprs[(rep / 5) % 5];
        int dt = TG_INT32 + (int)(kt_rand() % 4);
        int64_t sh[3];
        int r = 1 + (int)(kt_rand() % 3);
        for (int d = 0; d < r; d++)
            sh[d] = kt_rand() % 9 == 0 ? 0 : 1 + (int64_t)(kt_rand() % 5);
        if (kt_rand() % 4 == 0)
            sh[r - 1] = 300 + (int64_t)(kt_rand() % 300);  /* more than a chunk */
        char decl[64], x[100], y[100], e[400], axes[40], ins[300], fused[500];
        size_t o = (size_t)snprintf(decl, sizeof decl, "(");
        for (int d = 0; d < r; d++)
            o += (size_t)snprintf(decl + o, sizeof decl - o, "%sn%d", d ? " " : "", d);
        snprintf(decl + o, sizeof decl - o, ")");
        snprintf(x, sizeof x, "(input x %s %s)", dn[dt], decl);
        snprintf(y, sizeof y, "(input y %s %s)", dn[dt], decl);
        snprintf(e, sizeof e, ex, x, y);
        unsigned mask = (unsigned)(kt_rand() % (1u << r));
        o = (size_t)snprintf(axes, sizeof axes, mask == (1u << r) - 1 && kt_rand() % 2 ? "all" : "(axes");
        if (axes[0] == '(') {
            for (int d = 0; d < r; d++)
                if (mask & (1u << d))
                    o += (size_t)snprintf(axes + o, sizeof axes - o, " %d", d);
            snprintf(axes + o, sizeof axes - o, ")");
        }
        snprintf(ins, sizeof ins, "%s %s", x, y);
        snprintf(fused, sizeof fused, "(%s %s %s)", op, e, axes);
        tg_error err;
        tg_fn *ff = kt_compile(ctx, ins, fused, NULL, kt_path, &err);
        tg_fn *fe = kt_compile(ctx, ins, e, NULL, kt_path, &err);
        if (!ff || !fe) {
            if (bad++ < 3)
                tap_diag("compile %s: %s", fused, err.message);
            tg_fn_free(ff), tg_fn_free(fe);
            continue;
        }
        kt_arr xa, ya;
        kt_make(&xa, (tg_dtype)dt, r, sh, rep & 1);
        kt_make(&ya, (tg_dtype)dt, r, sh, rep & 2);
        kt_fill(&xa.a, -3, 3);
        kt_fill(&ya.a, -3, 3);
        if (dt >= TG_FLOAT32 && kt_count(&xa.a) > 2 && rep % 3 == 0) {   /* a NaN somewhere */
            int64_t I[3] = {0};
            I[r - 1] = sh[r - 1] / 2;
            kt_set(&xa.a, I, NAN);
        }
        tg_array in[2] = {xa.a, ya.a}, got = {0}, mid = {0}, want = {0};
        cases++;
        int rc1 = tg_fn_call(ff, in, &got, &err);
        int rc2 = tg_fn_call(fe, in, &mid, &err);
        /* the reduction alone over the stored result */
        char rin[100], rout[300];
        const char *mdt = dn[mid.dtype];
        snprintf(rin, sizeof rin, "(input z %s %s)", mdt, decl);
        snprintf(rout, sizeof rout, "(%s (input z %s %s) %s)", op, mdt, decl, axes);
        tg_fn *fr = rc2 == 0 ? kt_compile(ctx, rin, rout, NULL, kt_path, &err) : NULL;
        int rc3 = fr ? tg_fn_call(fr, &mid, &want, &err) : -1;
        if (rc1 != rc3 || (rc1 == 0 && !same_bits(&got, &want))) {
            if (bad++ < 3)
                tap_diag("%s on %s: fused %d, unfused %d (%s)", fused, kt_shape(r, sh), rc1, rc3, err.message);
        }
        free(got.data), free(mid.data), free(want.data);
        free(xa.block), free(ya.block);
        tg_fn_free(ff), tg_fn_free(fe), tg_fn_free(fr);
    }
    TAP_CHECK(bad == 0, "fused reductions are bit for bit the unfused ones: %d cases", cases);
}

static int reduce_steps;    /* top-level (reduce ...) steps of the last schedule_text */

static char *schedule_text(const char *ins, const char *outs)
{
    tg_error err;
    tg_fn *fn = kt_compile(ctx, ins, outs, NULL, kt_path, &err);
    tg_term *t = fn ? tg_fn_schedule(fn) : NULL, *e;
    char *s = t ? tg_print(t, NULL) : NULL;
    if (!fn)
        tap_diag("%s: %s", outs, err.message);
    reduce_steps = 0;
    tg_iter it;
    tg_iter_init(&it, t ? t : tg_nil());
    while ((e = tg_iter_next(&it)))
        reduce_steps += tg_kind_of(e) == TG_PAIR && tg_car(e) == tg_symbol_cstr(ctx, "reduce");
    tg_fn_free(fn);
    return s;
}

static void test_schedule(void)
{
    const char *xy = "(input x float64 (n)) (input y float64 (n))";
    char *s = schedule_text(xy, "(sum (mul (input x float64 (n)) (input y float64 (n))) all)");
    TAP_CHECK(s && strstr(s, "(loop (n) (in x y) (out) (ops (%2 (mul x y))) (reduce (%3 (sum %2 (0))) float64 (output 0)))") &&
                  strstr(s, "(slots 0)") && reduce_steps == 0,
              "(sum (mul x y) all): one loop, the sum inside it, no temporary (%s)", s ? s : "?");
    free(s);
    /* the elementwise result used elsewhere too: stored and summed in one pass */
    s = schedule_text(xy, "(sum (exp (input x float64 (n))) all) (exp (input x float64 (n)))");
    TAP_CHECK(s && strstr(s, "(out (%2 float64 (output 1)))") && strstr(s, "(reduce (%3 (sum %2 (0))) float64 (output 0))") &&
                  reduce_steps == 0,
              "a result that is also an output: stored and reduced in one loop (%s)", s ? s : "?");
    free(s);
    /* two reductions of one loop, over different axes */
    s = schedule_text("(input a float64 (n m))", "(max (sqr (input a float64 (n m))) (axes 0)) (mean (sqr (input a float64 (n m))) (axes 1))");
    TAP_CHECK(s && strstr(s, "(reduce (%2 (max %1 (0)))") && strstr(s, "(reduce (%3 (mean %1 (1)))") &&
                  reduce_steps == 0,
              "two reductions fused into one loop (%s)", s ? s : "?");
    free(s);
    /* a reduction of an input is not fused: no loop computes it */
    s = schedule_text(xy, "(sum (input x float64 (n)) all)");
    TAP_CHECK(s && strstr(s, "(reduce (%2 (sum x (0)))") && reduce_steps == 1, "a reduction of an input stays a step (%s)", s ? s : "?");
    free(s);
}

static void test_empty_max(void)
{
    tg_error err;
    tg_fn *fn = kt_compile(ctx, "(input x float64 (n m))", "(max (exp (input x float64 (n m))) (axes 1))", NULL, kt_path, &err);
    int64_t sh[2] = {3, 0};
    double v;
    tg_array x, out = {0};
    tg_array_init(&x, TG_FLOAT64, 2, sh, &v);
    TAP_CHECK(fn && tg_fn_call(fn, &x, &out, &err) < 0 && strstr(err.message, "max of an empty axis") &&
                  !out.data,
              "fused max of an empty axis: call-time error (%s)", err.message);
    tg_fn_free(fn);
}

int main(void)
{
    tg_error err;
    ctx = tg_ctx_new(&err);
    KT_EACH_PATH {
        test_schedule();
        test_against_unfused();
        test_empty_max();
    }
    tg_ctx_free(ctx);
    return TAP_DONE();
}
