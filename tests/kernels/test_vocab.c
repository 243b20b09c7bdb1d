/* test_vocab.c - the kernels accept the rule library's spelling of every
 * op (patterns/lib/tensor.rules): each library form is compiled next to
 * its kernel-vocabulary equivalent and both are run on the same random
 * inputs, on the compiled path and in the interpreter; the ops only the
 * library had (sqr, reciprocal, expm1) are checked against references. */
#include "kt.h"

static tg_ctx *ctx;

static const char *const INS =
    "(input x float64 (n m)) (input y float64 (n m)) (input a float64 (n k))"
    " (input b float64 (k m)) (input i int64 (n m)) (input f float32 (n m))";
enum { NIN = 6 };

static kt_arr in[NIN];

static void make_inputs(int64_t n, int64_t m, int64_t k)
{
    int64_t nm[2] = {n, m}, nk[2] = {n, k}, km[2] = {k, m};
    kt_make(&in[0], TG_FLOAT64, 2, nm, 0);
    kt_make(&in[1], TG_FLOAT64, 2, nm, 1);
    kt_make(&in[2], TG_FLOAT64, 2, nk, 0);
    kt_make(&in[3], TG_FLOAT64, 2, km, 0);
    kt_make(&in[4], TG_INT64, 2, nm, 1);
    kt_make(&in[5], TG_FLOAT32, 2, nm, 0);
    kt_fill(&in[0].a, -3, 3);
    kt_fill(&in[1].a, 0.5, 4);
    kt_fill(&in[2].a, -2, 2);
    kt_fill(&in[3].a, -2, 2);
    kt_fill(&in[4].a, -5e9, 5e9);   /* squares overflow and wrap */
    kt_fill(&in[5].a, -3, 3);
}

/* Compile outs over INS and run it; the output in *out (malloc'ed). */
static int run(const char *outs, tg_array *out, char **sched)
{
    tg_error err;
    tg_fn *fn = kt_compile(ctx, INS, outs, NULL, kt_path, &err);
    if (!fn) {
        tap_diag("%s: %s", outs, err.message);
        return -1;
    }
    tg_array args[NIN];
    for (int j = 0; j < NIN; j++)
        args[j] = in[j].a;
    memset(out, 0, sizeof *out);
    int rc = tg_fn_call(fn, args, out, &err);
    if (rc < 0)
        tap_diag("%s: %s", outs, err.message);
    if (sched)
        *sched = tg_print(tg_fn_schedule(fn), NULL);
    tg_fn_free(fn);
    return rc;
}

/* Same dtype, shape and bits (NaN equal to NaN). */
static int same(const tg_array *p, const tg_array *q)
{
    if (p->dtype != q->dtype || p->ndim != q->ndim)
        return 0;
    for (int d = 0; d < p->ndim; d++)
        if (p->shape[d] != q->shape[d])
            return 0;
    int64_t idx[TG_MAXDIM] = {0};
    if (kt_count(p) == 0)
        return 1;
    do {
        size_t es = kt_esize(p->dtype);
        const char *a = kt_ptr(p, idx), *b = kt_ptr(q, idx);
        if (memcmp(a, b, es) != 0 && !(isnan(kt_get(p, idx)) && isnan(kt_get(q, idx))))
            return 0;
    } while (kt_next(p->ndim, p->shape, idx));
    return 1;
}

static void test_pairs(void)
{
    static const char *const pairs[][2] = {
        {"(sum (input x float64 (n m)) (axes 1))", "(sum (input x float64 (n m)) (1))"},
        {"(sum (input x float64 (n m)) (axes 0 1))", "(sum (input x float64 (n m)))"},
        {"(sum (input x float64 (n m)) all)", "(sum (input x float64 (n m)))"},
        {"(prod (input y float64 (n m)) (axes 0))", "(prod (input y float64 (n m)) (0))"},
        {"(max (input x float64 (n m)) (axes -1))", "(max (input x float64 (n m)) (1))"},
        {"(min (input i int64 (n m)) all)", "(min (input i int64 (n m)))"},
        {"(mean (input i int64 (n m)) (axes 0))", "(mean (input i int64 (n m)) (0))"},
        {"(cast (input x float64 (n m)) int32)", "(cast int32 (input x float64 (n m)))"},
        {"(cast (input i int64 (n m)) float32)", "(cast float32 (input i int64 (n m)))"},
        {"(dimshuffle (input x float64 (n m)) (perm 1 0))", "(transpose (input x float64 (n m)))"},
        {"(dimshuffle (input x float64 (n m)) (perm 0 x 1))", "(dimshuffle (input x float64 (n m)) (0 x 1))"},
        {"(reshape (input x float64 (n m)) (shape-of m n))", "(reshape (input x float64 (n m)) (m n))"},
        {"(sqr (input x float64 (n m)))", "(mul (input x float64 (n m)) (input x float64 (n m)))"},
        {"(sqr (input i int64 (n m)))", "(mul (input i int64 (n m)) (input i int64 (n m)))"},
        {"(sqr (input f float32 (n m)))", "(mul (input f float32 (n m)) (input f float32 (n m)))"},
        {"(reciprocal (input x float64 (n m)))", "(true_div 1 (input x float64 (n m)))"},
        {"(reciprocal (input f float32 (n m)))", "(true_div 1 (input f float32 (n m)))"},
        {"(reciprocal (input i int64 (n m)))", "(true_div 1 (input i int64 (n m)))"},
        {"(gemm (input y float64 (n m)) 2 (input a float64 (n k)) (input b float64 (k m)) 0.5)",
         "(add (mul 2 (dot (input a float64 (n k)) (input b float64 (k m)))) (mul 0.5 (input y float64 (n m))))"},
        {"(gemm (input y float64 (n m)) 1 (input a float64 (n k)) (input b float64 (k m)) 1)",
         "(add (dot (input a float64 (n k)) (input b float64 (k m))) (input y float64 (n m)))"},
        /* folding (true_div 1 3) gives the rational 1/3 */
        {"(mul (input x float64 (n m)) 1/3)", "(mul (input x float64 (n m)) (true_div 1 3))"},
        {"(add (input f float32 (n m)) -2/7)", "(add (input f float32 (n m)) (true_div -2 7))"},
        /* a gemm sharing its sum with another output's subterm */
        {"(mul (gemm (input x float64 (n m)) 3 (input a float64 (n k)) (input b float64 (k m)) -1)"
         " (add (mul 3 (dot (input a float64 (n k)) (input b float64 (k m)))) (mul -1 (input x float64 (n m)))))",
         "(sqr (add (mul 3 (dot (input a float64 (n k)) (input b float64 (k m)))) (mul -1 (input x float64 (n m)))))"},
    };
    for (size_t c = 0; c < sizeof pairs / sizeof *pairs; c++) {
        tg_array p, q;
        int ok = run(pairs[c][0], &p, NULL) == 0;
        ok = run(pairs[c][1], &q, NULL) == 0 && ok;
        ok = ok && same(&p, &q);
        TAP_CHECK(ok, "%s is %s", pairs[c][0], pairs[c][1]);
        free(p.data), free(q.data);
    }
}

/* The library's gemm becomes the schedule's one GEMM step. */
static void test_gemm_schedule(void)
{
    tg_array o;
    char *s = NULL;
    int ok = run("(gemm (input y float64 (n m)) 2 (input a float64 (n k)) (input b float64 (k m)) 0.5)",
                 &o, &s) == 0;
    ok = ok && s && strstr(s, "(gemm ") && !strstr(s, "(loop ");
    TAP_CHECK(ok, "a library gemm is one GEMM step: %s", s ? s : "?");
    free(o.data), free(s);
}

/* expm1 against long double; 2 ulp on both paths (libm's expm1 scalar). */
static void test_expm1(void)
{
    tg_array o;
    int ok = run("(expm1 (input x float64 (n m)))", &o, NULL) == 0 && o.dtype == TG_FLOAT64;
    int64_t idx[TG_MAXDIM] = {0};
    int bad = 0;
    do {
        long double want = expm1l(kt_get(&in[0].a, idx));
        bad += ok && !kt_close(kt_get(&o, idx), want, 4.5e-16L);
    } while (ok && kt_next(2, o.shape, idx));
    TAP_CHECK(ok && !bad, "expm1 within 2 ulp (%d elements off)", bad);
    free(o.data);
    /* where exp(x)-1 loses everything, expm1 does not */
    double xs[] = {1e-20, -3e-17, 0.0, -0.0, INFINITY, -INFINITY, NAN};
    int64_t n = 7;
    tg_array x;
    tg_array_init(&x, TG_FLOAT64, 1, &n, xs);
    tg_error err;
    tg_fn *fn = kt_compile(ctx, "(input x float64 (n))", "(expm1 (input x float64 (n)))", NULL, kt_path, &err);
    memset(&o, 0, sizeof o);
    ok = fn && tg_fn_call(fn, &x, &o, &err) == 0;
    for (int64_t j = 0; ok && j < n; j++) {
        double got = ((double *)o.data)[j], want = expm1(xs[j]);
        ok = isnan(want) ? isnan(got) : got == want && signbit(got) == signbit(want);
    }
    TAP_CHECK(ok, "expm1 of tiny values, signed zeros, infinities and NaN");
    if (fn)
        free(o.data);
    tg_fn_free(fn);
}

/* int_div and mod, Python's // and %: for integers q*b + r == a with r
 * of b's sign and |r| < |b| (and 0 for b == 0); for floats q is the
 * floor of the exact quotient.  Plus the edge cases by hand. */
static void test_divmod(void)
{
    enum { N = 600 };
    int64_t n = N;
    static int64_t ia[N], ib[N];
    static double fa[N], fb[N];
    for (int j = 0; j < N; j++) {
        int64_t big = j % 3 == 0 ? INT64_MAX / 3 : 100;
        ia[j] = (int64_t)(kt_rand() % (2 * (uint64_t)big + 1)) - big;
        ib[j] = j % 17 == 0 ? 0 : (int64_t)(kt_rand() % 41) - 20;
        fa[j] = kt_unif(-100, 100);
        fb[j] = kt_unif(-10, 10);
    }
    ia[0] = INT64_MIN, ib[0] = -1;
    tg_array args[2], q, r;
    tg_array_init(&args[0], TG_INT64, 1, &n, ia);
    tg_array_init(&args[1], TG_INT64, 1, &n, ib);
    tg_error err;
    const char *ins = "(input a int64 (n)) (input b int64 (n))";
    tg_fn *fq = kt_compile(ctx, ins, "(int_div (input a int64 (n)) (input b int64 (n)))", NULL, kt_path, &err);
    tg_fn *fr = kt_compile(ctx, ins, "(mod (input a int64 (n)) (input b int64 (n)))", NULL, kt_path, &err);
    memset(&q, 0, sizeof q), memset(&r, 0, sizeof r);
    int ok = fq && fr && tg_fn_call(fq, args, &q, &err) == 0 && tg_fn_call(fr, args, &r, &err) == 0;
    int bad = 0;
    for (int j = 1; ok && j < N; j++) {
        int64_t qj = ((int64_t *)q.data)[j], rj = ((int64_t *)r.data)[j], b = ib[j];
        if (b == 0)
            bad += qj != 0 || rj != 0;
        else
            bad += (__int128)qj * b + rj != ia[j] || (b > 0 ? rj < 0 || rj >= b : rj > 0 || rj <= b);
    }
    ok = ok && ((int64_t *)q.data)[0] == INT64_MIN && ((int64_t *)r.data)[0] == 0;
    TAP_CHECK(ok && !bad, "int64 int_div and mod floored (%d off)", bad);
    if (fq && fr)
        free(q.data), free(r.data);
    tg_fn_free(fq), tg_fn_free(fr);
    tg_array_init(&args[0], TG_FLOAT64, 1, &n, fa);
    tg_array_init(&args[1], TG_FLOAT64, 1, &n, fb);
    ins = "(input a float64 (n)) (input b float64 (n))";
    fq = kt_compile(ctx, ins, "(int_div (input a float64 (n)) (input b float64 (n)))", NULL, kt_path, &err);
    fr = kt_compile(ctx, ins, "(mod (input a float64 (n)) (input b float64 (n)))", NULL, kt_path, &err);
    memset(&q, 0, sizeof q), memset(&r, 0, sizeof r);
    ok = fq && fr && tg_fn_call(fq, args, &q, &err) == 0 && tg_fn_call(fr, args, &r, &err) == 0;
    bad = 0;
    for (int j = 0; ok && j < N; j++) {
        double qj = ((double *)q.data)[j], rj = ((double *)r.data)[j];
        bad += (long double)qj != floorl((long double)fa[j] / fb[j]);
        bad += !kt_close(rj, (long double)fa[j] - (long double)qj * fb[j], 1e-12L) || (rj != 0 && (rj < 0) != (fb[j] < 0));
    }
    TAP_CHECK(ok && !bad, "float64 int_div and mod floored (%d off)", bad);
    if (fq && fr)
        free(q.data), free(r.data);
    tg_fn_free(fq), tg_fn_free(fr);
    /* by hand: Python's 7.5 // -2 == -4.0, 7.5 % -2 == -0.5, -0.0 % 3 == 0.0,
     * 3 % -inf == -inf... numpy: x // 0.0 is x / 0.0, x % 0.0 is NaN */
    struct { const char *e; double want; } hand[] = {
        {"(int_div 7.5 (input b float64 ()))", -4.0}, {"(mod 7.5 (input b float64 ()))", -0.5},
        {"(mod 6.0 (input b float64 ()))", -0.0}, {"(int_div 1.0 (input b float64 ()))", -1.0},
        {"(int_div 0.0 (input b float64 ()))", -0.0}, {"(mod -7 (input b float64 ()))", -1.0},
    };
    double bv = -2.0;
    tg_array_init(&args[1], TG_FLOAT64, 0, &n, &bv);
    for (size_t c = 0; c < sizeof hand / sizeof *hand; c++) {
        tg_fn *f = kt_compile(ctx, "(input b float64 ())", hand[c].e, NULL, kt_path, &err);
        memset(&q, 0, sizeof q);
        ok = f && tg_fn_call(f, &args[1], &q, &err) == 0;
        double got = ok ? *(double *)q.data : NAN;
        ok = ok && got == hand[c].want && signbit(got) == signbit(hand[c].want);
        TAP_CHECK(ok, "%s with b = -2 is %g: got %g", hand[c].e, hand[c].want, got);
        if (f)
            free(q.data);
        tg_fn_free(f);
    }
    struct { const char *e; double want; } zero[] = {
        {"(int_div 1.5 (input b float64 ()))", INFINITY}, {"(mod 1.5 (input b float64 ()))", NAN},
    };
    bv = 0.0;
    for (size_t c = 0; c < sizeof zero / sizeof *zero; c++) {
        tg_fn *f = kt_compile(ctx, "(input b float64 ())", zero[c].e, NULL, kt_path, &err);
        memset(&q, 0, sizeof q);
        ok = f && tg_fn_call(f, &args[1], &q, &err) == 0;
        double got = ok ? *(double *)q.data : 0;
        ok = ok && (isnan(zero[c].want) ? isnan(got) : got == zero[c].want);
        TAP_CHECK(ok, "%s with b = 0 is %g: got %g", zero[c].e, zero[c].want, got);
        if (f)
            free(q.data);
        tg_fn_free(f);
    }
    /* int32 wraps: INT32_MIN // -1 */
    tg_fn *f = kt_compile(ctx, "(input b int32 ())", "(int_div (const int32 -2147483648) (input b int32 ()))", NULL,
                          kt_path, &err);
    int32_t m1 = -1;
    tg_array_init(&args[1], TG_INT32, 0, &n, &m1);
    memset(&q, 0, sizeof q);
    ok = f && tg_fn_call(f, &args[1], &q, &err) == 0 && q.dtype == TG_INT32 && *(int32_t *)q.data == INT32_MIN;
    TAP_CHECK(ok, "int32 int_div wraps");
    if (f)
        free(q.data);
    tg_fn_free(f);
}

static void test_errors(void)
{
    static const char *const bad[][2] = {
        {"(gemm (input y float64 (n m)) 2 (input a float64 (n k)))", "a gemm is (gemm C ALPHA A B BETA)"},
        {"(cast (input x float64 (n m)) float16)", "cast needs a dtype"},
        {"(sum (input x float64 (n m)) (axes 2))", "an axis is out of range"},
        {"(sum (input x float64 (n m)) (perm 0))", "an axis is out of range"},
        {"(add (input i int64 (n m)) (const int64 1/3))", "a float value for an integer dtype"},
    };
    for (size_t c = 0; c < sizeof bad / sizeof *bad; c++) {
        tg_error err;
        tg_fn *fn = kt_compile(ctx, INS, bad[c][0], NULL, kt_path, &err);
        int ok = !fn && strstr(err.message, bad[c][1]) != NULL;
        TAP_CHECK(ok, "%s: %s", bad[c][0], fn ? "compiled" : err.message);
        tg_fn_free(fn);
    }
}

/* Compile outs over INS with the rule set rs (rewriter spec, NULL:
 * default); its schedule printed in *sched. */
static tg_fn *compile_rw(tg_rules *rs, const char *spec, const char *outs, tg_error *err)
{
    tg_term *it[NIN], *ot;
    size_t ni = 0;
    tg_reader *r = tg_reader_new(ctx, INS, strlen(INS), NULL, err);
    while (r && ni < NIN && tg_reader_next(r, &it[ni], err) == 1)
        ni++;
    tg_reader_free(r);
    r = tg_reader_new(ctx, outs, strlen(outs), NULL, err);
    int got = r && tg_reader_next(r, &ot, err) == 1;
    tg_reader_free(r);
    tg_term *sp = NULL;
    if (spec) {
        r = tg_reader_new(ctx, spec, strlen(spec), NULL, err);
        if (!r || tg_reader_next(r, &sp, err) != 1)
            sp = NULL;
        tg_reader_free(r);
    }
    if (!got || ni != NIN)
        return NULL;
    tg_fn_options o = {.interpret = kt_path, .rules = rs, .rewrite = sp};
    return tg_fn_compile(ctx, ni, it, 1, &ot, &o, err);
}

static char *sched_of(tg_fn *fn) { return fn ? tg_print(tg_fn_schedule(fn), NULL) : NULL; }

/* s with its node names %N renumbered in order of first appearance, so
 * that schedules computing the same nodes compare equal whatever nodes
 * their graphs typed and left uncomputed (a fill's model). */
static char *renumbered(char *s)
{
    long map[256][2];
    int nm = 0;
    size_t len = s ? strlen(s) : 0, o = 0;
    char *out = s ? malloc(len * 2 + 1) : NULL;
    for (size_t i = 0; out && i < len;) {
        if (s[i] != '%') {
            out[o++] = s[i++];
            continue;
        }
        char *end;
        long v = strtol(s + i + 1, &end, 10), k = -1;
        for (int j = 0; j < nm && k < 0; j++)
            if (map[j][0] == v)
                k = map[j][1];
        if (k < 0 && nm < 256)
            map[nm][0] = v, map[nm][1] = nm, k = nm++;
        o += (size_t)sprintf(out + o, "%%%ld", k);
        i = (size_t)(end - s);
    }
    if (out)
        out[o] = 0;
    free(s);
    return out;
}

/* tg_fn_options.rules: outputs go through the library's databases. */
static void test_rewrite_option(void)
{
    tg_error err;
    tg_rules *rs = tg_rules_new(ctx, &err);
    const char *inc = "(include \"all.rules\")";
    int loaded = rs && tg_rules_load_string(rs, inc, strlen(inc), NULL, &err) == 0;
    TAP_CHECK(loaded, "the rule library loads: %s", loaded ? "" : err.message);
    if (!loaded) {
        tg_rules_free(rs);
        return;
    }
    /* x*y/y is x after canonicalize (as (fill (true_div x y) x), whose
     * model only gives the type): the same loop */
    const char *x = "(exp (input x float64 (n m)))";
    const char *xyy = "(exp (true_div (mul (input x float64 (n m)) (input y float64 (n m))) (input y float64 (n m))))";
    tg_fn *f1 = compile_rw(rs, NULL, xyy, &err), *f2 = compile_rw(NULL, NULL, x, &err);
    tg_fn *f3 = compile_rw(NULL, NULL, xyy, &err);
    char *s1 = renumbered(sched_of(f1)), *s2 = renumbered(sched_of(f2)), *s3 = renumbered(sched_of(f3));
    TAP_CHECK(s1 && s2 && strcmp(s1, s2) == 0, "x*y/y rewritten compiles to the schedule of x: %s", s1 ? s1 : err.message);
    TAP_CHECK(s1 && s3 && strcmp(s1, s3) != 0, "without the rules it does not: %s", s3 ? s3 : "?");
    free(s1), free(s2), free(s3);
    tg_fn_free(f1), tg_fn_free(f2), tg_fn_free(f3);
    /* a query drops the fast_math rules: then x*y/y stays */
    f1 = compile_rw(rs, "(query default (exclude fast_math))", xyy, &err);
    s1 = sched_of(f1);
    TAP_CHECK(s1 && strstr(s1, "true_div"), "a query as the rewrite spec: %s", s1 ? s1 : err.message);
    free(s1), tg_fn_free(f1);
    /* specialize makes sqr, reciprocal, expm1 and gemm: they compile and
     * compute what the graph written without them computes */
    static const char *const cases[] = {
        "(add (pow (input x float64 (n m)) 2) (pow (input y float64 (n m)) -1))",
        "(sub (exp (input x float64 (n m))) 1)",
        "(add (mul 2 (dot (input a float64 (n k)) (input b float64 (k m)))) (input y float64 (n m)))",
        "(sum (sum (input x float64 (n m)) (axes 1)) (axes 0))",
    };
    static const char *const made[] = {"(sqr x)", "expm1", "(gemm ", "(sum x (0 1))"};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        f1 = compile_rw(rs, NULL, cases[c], &err);
        s1 = sched_of(f1);
        f2 = compile_rw(NULL, NULL, cases[c], &err);
        tg_array args[NIN], p, q;
        for (int j = 0; j < NIN; j++)
            args[j] = in[j].a;
        memset(&p, 0, sizeof p), memset(&q, 0, sizeof q);
        int ok = f1 && f2 && tg_fn_call(f1, args, &p, &err) == 0 && tg_fn_call(f2, args, &q, &err) == 0;
        if (!ok)
            tap_diag("%s", err.message);
        /* sqr, reciprocal, expm1, one reduction over two axes: close, not
         * always the same bits */
        int agree = ok && p.dtype == q.dtype && p.ndim == q.ndim;
        if (agree) {
            int64_t idx[TG_MAXDIM] = {0};
            do
                agree &= kt_close(kt_get(&p, idx), kt_get(&q, idx), 1e-12L) ||
                         fabsl(kt_get(&p, idx) - kt_get(&q, idx)) < 1e-15L;
            while (agree && kt_next(p.ndim, p.shape, idx));
            if (!agree)
                tap_diag("%s vs %s", kt_shape(p.ndim, p.shape), kt_shape(q.ndim, q.shape));
        }
        TAP_CHECK(agree && s1 && strstr(s1, made[c]) && (c || strstr(s1, "(reciprocal y)")), "rewritten then compiled: %s: %s", cases[c],
                  s1 ? s1 : err.message);
        if (ok)
            free(p.data), free(q.data);
        free(s1), tg_fn_free(f1), tg_fn_free(f2);
    }
    /* an unknown rewriter is the rewriter's error */
    f1 = compile_rw(rs, "no-such-db", x, &err);
    TAP_CHECK(!f1 && strstr(err.message, "no-such-db"), "an unknown rewriter: %s", f1 ? "compiled" : err.message);
    tg_fn_free(f1);
    tg_rules_free(rs);
}

int main(void)
{
    tg_error err;
    ctx = tg_ctx_new(&err);
    KT_EACH_PATH {
        make_inputs(5, 300, 3);
        test_pairs();
        test_gemm_schedule();
        test_expm1();
        test_errors();
        test_divmod();
        test_rewrite_option();
        for (int j = 0; j < NIN; j++)
            free(in[j].block);
    }
    tg_ctx_free(ctx);
    return TAP_DONE();
}
