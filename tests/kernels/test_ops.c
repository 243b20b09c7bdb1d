/* test_ops.c - every tensor op against a reference evaluated in long
 * double (or exactly, with GMP, for integers), on random shapes including
 * empty and broadcasting ones, contiguous and strided arrays; NaN, inf and
 * signed zeros. */
#include <float.h>
#include <gmp.h>

#include "kt.h"

static tg_ctx *ctx;

static const char *const dnames[] = {"bool", "int32", "int64", "float32", "float64"};

/* A random shape of rank 0..3, sizes 0..5 (rarely 0). */
static int rand_shape(int64_t *sh, int maxrank)
{
    int r = (int)(kt_rand() % (unsigned)(maxrank + 1));
    for (int i = 0; i < r; i++)
        sh[i] = kt_rand() % 8 == 0 ? 0 : 1 + (int64_t)(kt_rand() % 5);
    /* now and then a last axis longer than the interpreter's block */
    if (r && kt_rand() % 6 == 0)
        sh[r - 1] = 250 + (int64_t)(kt_rand() % 300);
    return r;
}

/* A shape that broadcasts against sh (rank r): some axes 1, maybe fewer. */
static int bcast_shape(int r, const int64_t *sh, int64_t *out)
{
    int drop = r ? (int)(kt_rand() % (unsigned)(r + 1)) : 0;
    for (int i = drop; i < r; i++)
        out[i - drop] = kt_rand() % 3 == 0 ? 1 : sh[i];
    return r - drop;
}

static const char *sym_shape(int r, const char *prefix)
{
    static char buf[4][64];
    static int k;
    k = (k + 1) % 4;
    size_t o = (size_t)snprintf(buf[k], sizeof buf[k], "(");
    for (int i = 0; i < r; i++)
        o += (size_t)snprintf(buf[k] + o, sizeof buf[k] - o, i ? " %s%d" : "%s%d", prefix, i);
    snprintf(buf[k] + o, sizeof buf[k] - o, ")");
    return buf[k];
}

/* Declared shape for a broadcast operand: 1 stays static, others symbolic
 * and named after the result axis they line up with. */
static const char *decl_shape(int R, int r, const int64_t *sh)
{
    static char buf[4][64];
    static int k;
    k = (k + 1) % 4;
    size_t o = (size_t)snprintf(buf[k], sizeof buf[k], "(");
    for (int i = 0; i < r; i++) {
        if (sh[i] == 1)
            o += (size_t)snprintf(buf[k] + o, sizeof buf[k] - o, i ? " 1" : "1");
        else
            o += (size_t)snprintf(buf[k] + o, sizeof buf[k] - o, i ? " n%d" : "n%d", R - r + i);
    }
    snprintf(buf[k] + o, sizeof buf[k] - o, ")");
    return buf[k];
}

typedef long double (*ufn)(long double);
static long double sigmoidl(long double x) { return 1.0L / (1.0L + expl(-x)); }
static long double negl(long double x) { return -x; }

static void test_unary(void)
{
    static const struct { const char *name; ufn f; double lo, hi; } ops[] = {
        {"exp", expl, -20, 20}, {"log", logl, -0.5, 50}, {"log1p", log1pl, -1.5, 10},
        {"sqrt", sqrtl, -1, 100}, {"sin", sinl, -10, 10}, {"cos", cosl, -10, 10},
        {"tanh", tanhl, -5, 5}, {"sigmoid", sigmoidl, -30, 30}, {"abs", fabsl, -5, 5},
        {"neg", negl, -5, 5},
    };
    for (size_t o = 0; o < sizeof ops / sizeof *ops; o++)
        for (int dt = TG_FLOAT32; dt <= TG_FLOAT64; dt++) {
            int bad = 0, cases = 0;
            for (int rep = 0; rep < 6; rep++) {
                int64_t sh[4];
                int r = rand_shape(sh, 3);
                char ins[200], outs[100];
                snprintf(ins, sizeof ins, "(input x %s %s)", dnames[dt], sym_shape(r, "n"));
                snprintf(outs, sizeof outs, "(%s (input x %s %s))", ops[o].name, dnames[dt], sym_shape(r, "n"));
                tg_error err;
                tg_fn *fn = kt_compile(ctx, ins, outs, NULL, kt_path, &err);
                if (!fn) {
                    bad++;
                    tap_diag("compile %s: %s", outs, err.message);
                    continue;
                }
                kt_arr x;
                kt_make(&x, (tg_dtype)dt, r, sh, rep & 1);
                kt_fill(&x.a, ops[o].lo, ops[o].hi);
                tg_array out = {0};
                if (tg_fn_call(fn, &x.a, &out, &err) < 0) {
                    bad++;
                    tap_diag("call %s: %s", outs, err.message);
                } else {
                    int64_t idx[4] = {0};
                    bad += out.dtype != (tg_dtype)dt || out.ndim != r;
                    /* glibc's scalar functions are within 1 ulp, libmvec's
                     * (compiled float64 loops) within 4; sigmoid adds a
                     * division */
                    long double ulps = kt_path == 0 && dt == TG_FLOAT64 ? 4 : 1.5;
                    if (!strcmp(ops[o].name, "sigmoid"))
                        ulps += 2;
                    long double tol = ulps * (dt == TG_FLOAT64 ? 2.3e-16L : 1.2e-7L);
                    if (kt_count(&out) > 0)
                        do {
                            long double xv = kt_get(&x.a, idx), want = ops[o].f(xv);
                            if (dt == TG_FLOAT32)
                                want = (float)want;
                            long double got = kt_get(&out, idx);
                            cases++;
                            if (!kt_close(got, want, tol)) {
                                if (bad++ < 3)
                                    tap_diag("%s(%.17Lg) = %.17Lg, want %.17Lg", ops[o].name, xv, got, want);
                            }
                        } while (kt_next(r, sh, idx));
                }
                free(out.data);
                free(x.block);
                tg_fn_free(fn);
            }
            TAP_CHECK(bad == 0, "%s on %s: %d elements against long double", ops[o].name, dnames[dt], cases);
        }
}

/* Reference of a binary op in long double (floats) */
static long double bin_ref(const char *op, long double x, long double y)
{
    if (!strcmp(op, "add")) return x + y;
    if (!strcmp(op, "sub")) return x - y;
    if (!strcmp(op, "mul")) return x * y;
    if (!strcmp(op, "true_div")) return x / y;
    if (!strcmp(op, "pow")) return powl(x, y);
    if (!strcmp(op, "maximum")) return isnan(x) ? x : isnan(y) ? y : x > y ? x : y;
    if (!strcmp(op, "minimum")) return isnan(x) ? x : isnan(y) ? y : x < y ? x : y;
    if (!strcmp(op, "lt")) return x < y;
    if (!strcmp(op, "le")) return x <= y;
    if (!strcmp(op, "gt")) return x > y;
    if (!strcmp(op, "ge")) return x >= y;
    if (!strcmp(op, "eq")) return x == y;
    if (!strcmp(op, "neq")) return x != y;
    return NAN;
}

/* Exact integer reference with GMP, wrapped to the dtype's width. */
static int64_t int_ref(const char *op, int64_t x, int64_t y, tg_dtype d)
{
    mpz_t a, b, r, m;
    mpz_inits(a, b, r, m, NULL);
    mpz_set_si(a, x), mpz_set_si(b, y);
    if (!strcmp(op, "add")) mpz_add(r, a, b);
    else if (!strcmp(op, "sub")) mpz_sub(r, a, b);
    else if (!strcmp(op, "mul")) mpz_mul(r, a, b);
    else if (!strcmp(op, "maximum")) mpz_set(r, mpz_cmp(a, b) > 0 ? a : b);
    else if (!strcmp(op, "minimum")) mpz_set(r, mpz_cmp(a, b) < 0 ? a : b);
    else if (!strcmp(op, "pow")) {
        if (y >= 0)
            mpz_pow_ui(r, a, (unsigned long)y);
        else
            mpz_set_si(r, x == 1 ? 1 : x == -1 ? (y & 1 ? -1 : 1) : 0);
    } else {
        int c = mpz_cmp(a, b);
        int v = !strcmp(op, "lt") ? c < 0 : !strcmp(op, "le") ? c <= 0 : !strcmp(op, "gt") ? c > 0
              : !strcmp(op, "ge") ? c >= 0 : !strcmp(op, "eq") ? c == 0 : c != 0;
        mpz_set_si(r, v);
    }
    /* wrap: r mod 2^bits, read back as a signed value of that width */
    int bits = d == TG_INT32 ? 32 : 64;
    mpz_fdiv_r_2exp(r, r, (mp_bitcnt_t)bits);
    uint64_t u = mpz_sgn(r) ? (uint64_t)mpz_getlimbn(r, 0) : 0;
    int64_t out = bits == 32 ? (int64_t)(int32_t)(uint32_t)u : (int64_t)u;
    mpz_clears(a, b, r, m, NULL);
    return out;
}

static void test_binary(void)
{
    static const char *const ops[] = {"add", "sub", "mul", "true_div", "pow", "maximum", "minimum",
                                      "lt", "le", "gt", "ge", "eq", "neq"};
    for (size_t o = 0; o < sizeof ops / sizeof *ops; o++)
        for (int dt = TG_INT32; dt <= TG_FLOAT64; dt++) {
            int bad = 0, cases = 0;
            bool cmp = o >= 7, fl = dt >= TG_FLOAT32;
            if (!fl && !strcmp(ops[o], "true_div"))
                continue;
            for (int rep = 0; rep < 8; rep++) {
                int64_t sx[4], sy[4];
                int rx = rand_shape(sx, 3);
                int ry = bcast_shape(rx, sx, sy);
                if (rep & 2) {  /* operands the other way round */
                    int64_t t[4];
                    memcpy(t, sx, sizeof t), memcpy(sx, sy, sizeof t), memcpy(sy, t, sizeof t);
                    int tr = rx;
                    rx = ry, ry = tr;
                }
                int R = rx > ry ? rx : ry;
                int64_t sr[4];
                for (int i = 0; i < R; i++) {
                    int64_t a = i - (R - rx) >= 0 ? sx[i - (R - rx)] : 1;
                    int64_t b = i - (R - ry) >= 0 ? sy[i - (R - ry)] : 1;
                    sr[i] = a == 1 ? b : a;
                }
                char dx[64], dy[64], ins[300], outs[300];
                snprintf(dx, sizeof dx, "%s", decl_shape(R, rx, sx));
                snprintf(dy, sizeof dy, "%s", decl_shape(R, ry, sy));
                snprintf(ins, sizeof ins, "(input x %s %s) (input y %s %s)", dnames[dt], dx, dnames[dt], dy);
                snprintf(outs, sizeof outs, "(%s (input x %s %s) (input y %s %s))", ops[o], dnames[dt], dx,
                         dnames[dt], dy);
                tg_error err;
                tg_fn *fn = kt_compile(ctx, ins, outs, NULL, kt_path, &err);
                if (!fn) {
                    bad++;
                    tap_diag("compile %s: %s", outs, err.message);
                    continue;
                }
                kt_arr x, y;
                kt_make(&x, (tg_dtype)dt, rx, sx, rep & 1);
                kt_make(&y, (tg_dtype)dt, ry, sy, rep & 4);
                bool p = !strcmp(ops[o], "pow");
                kt_fill(&x.a, p ? (fl ? 0.1 : -3) : -100, p ? (fl ? 5 : 4) : 100);
                kt_fill(&y.a, p ? -3 : -100, p ? 4 : 100);
                if (dt == TG_INT64 && !p && !cmp && kt_count(&x.a) > 0) {  /* exercise wraparound */
                    int64_t i0[4] = {0}, big = INT64_MAX - 5;
                    memcpy(kt_ptr(&x.a, i0), &big, 8);
                }
                tg_array in[2] = {x.a, y.a}, out = {0};
                if (tg_fn_call(fn, in, &out, &err) < 0) {
                    bad++;
                    tap_diag("call %s: %s", outs, err.message);
                } else {
                    tg_dtype want_dt = cmp ? TG_BOOL : (tg_dtype)dt;
                    if (out.dtype != want_dt || out.ndim != R) {
                        bad++;
                        tap_diag("%s: dtype %d ndim %d", outs, out.dtype, out.ndim);
                    }
                    int64_t I[4] = {0}, ix[4], iy[4];
                    if (kt_count(&out) > 0)
                        do {
                            kt_bidx(R, I, rx, sx, ix);
                            kt_bidx(R, I, ry, sy, iy);
                            cases++;
                            if (fl) {
                                long double want = bin_ref(ops[o], kt_get(&x.a, ix), kt_get(&y.a, iy));
                                if (dt == TG_FLOAT32 && !cmp)
                                    want = (float)want;
                                long double tol = cmp ? 0 : dt == TG_FLOAT64 ? 3e-16L : 1.2e-7L;
                                if (!strcmp(ops[o], "pow"))
                                    tol *= kt_path ? 4 : 8;
                                long double got = kt_get(&out, I);
                                if (!kt_close(got, want, tol) && bad++ < 3)
                                    tap_diag("%s(%.17Lg, %.17Lg) = %.17Lg, want %.17Lg", ops[o],
                                             kt_get(&x.a, ix), kt_get(&y.a, iy), got, want);
                            } else {
                                int64_t want = int_ref(ops[o], kt_geti(&x.a, ix), kt_geti(&y.a, iy), (tg_dtype)dt);
                                int64_t got = kt_geti(&out, I);
                                if (got != want && bad++ < 3)
                                    tap_diag("%s(%lld, %lld) = %lld, want %lld", ops[o],
                                             (long long)kt_geti(&x.a, ix), (long long)kt_geti(&y.a, iy),
                                             (long long)got, (long long)want);
                            }
                        } while (kt_next(R, sr, I));
                }
                free(out.data);
                free(x.block);
                free(y.block);
                tg_fn_free(fn);
            }
            TAP_CHECK(bad == 0, "%s on %s with broadcasting: %d elements", ops[o], dnames[dt], cases);
        }
}

/* Evaluate one output over x (float64 vector) and compare with values. */
static int eval1(const char *ins, const char *outs, tg_array *in, tg_array *out, tg_error *err)
{
    tg_fn *fn = kt_compile(ctx, ins, outs, NULL, kt_path, err);
    if (!fn)
        return -1;
    memset(out, 0, sizeof *out);
    int rc = tg_fn_call(fn, in, out, err);
    tg_fn_free(fn);
    return rc;
}

static double d_at(const tg_array *a, int64_t i)
{
    double v;
    memcpy(&v, (char *)a->data + i * a->strides[0], 8);
    return v;
}

static void test_special_values(void)
{
    double xs[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 1.0, -1.0};
    int64_t n = 7;
    tg_array x;
    tg_array_init(&x, TG_FLOAT64, 1, &n, xs);
    const char *ins = "(input x float64 (n))";
    tg_error err;
    tg_array out;
    struct { const char *expr; double want[7]; } cases[] = {
        {"(neg (input x float64 (n)))", {-0.0, 0.0, -INFINITY, INFINITY, NAN, -1, 1}},
        {"(exp (input x float64 (n)))", {1, 1, INFINITY, 0, NAN, M_E, 1 / M_E}},
        {"(log (input x float64 (n)))", {-INFINITY, -INFINITY, INFINITY, NAN, NAN, 0, NAN}},
        {"(sqrt (input x float64 (n)))", {0.0, -0.0, INFINITY, NAN, NAN, 1, NAN}},
        {"(maximum (input x float64 (n)) 0.5)", {0.5, 0.5, INFINITY, 0.5, NAN, 1, 0.5}},
        {"(minimum 0.5 (input x float64 (n)))", {0, -0.0, 0.5, -INFINITY, NAN, 0.5, -1}},
        {"(true_div 1 (input x float64 (n)))", {INFINITY, -INFINITY, 0, -0.0, NAN, 1, -1}},
        {"(mul (input x float64 (n)) 0)", {0, -0.0, NAN, NAN, NAN, 0, -0.0}},
        {"(tanh (input x float64 (n)))", {0, -0.0, 1, -1, NAN, tanh(1.0), -tanh(1.0)}},
        {"(sigmoid (input x float64 (n)))", {0.5, 0.5, 1, 0, NAN, 1 / (1 + exp(-1.0)), 1 / (1 + exp(1.0))}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        int ok = eval1(ins, cases[c].expr, &x, &out, &err) == 0;
        for (int64_t i = 0; ok && i < n; i++) {
            double got = d_at(&out, i), want = cases[c].want[i];
            /* NaN, infinities and zeros exactly; other values within the
             * 4 ulp of the compiled loops' vector math (doc/kernels.md) */
            ok = isnan(want)                   ? isnan(got)
                 : isinf(want) || want == 0 ? got == want && signbit(got) == signbit(want)
                                              : fabs(got - want) <= 4 * DBL_EPSILON * fabs(want);
            if (!ok)
                tap_diag("element %lld: got %g want %g", (long long)i, got, want);
        }
        TAP_CHECK(ok, "NaN, inf and signed zeros: %s", cases[c].expr);
        free(ok || out.data ? out.data : NULL);
    }
    /* NaN through reductions */
    int ok = eval1(ins, "(sum (input x float64 (n)))", &x, &out, &err) == 0 && isnan(*(double *)out.data);
    TAP_CHECK(ok, "sum propagates NaN");
    free(out.data);
    ok = eval1(ins, "(max (input x float64 (n)))", &x, &out, &err) == 0 && isnan(*(double *)out.data);
    TAP_CHECK(ok, "max propagates NaN");
    free(out.data);
    ok = eval1(ins, "(min (input x float64 (n)))", &x, &out, &err) == 0 && isnan(*(double *)out.data);
    TAP_CHECK(ok, "min propagates NaN");
    free(out.data);
}

static void test_reductions(void)
{
    static const char *const ops[] = {"sum", "prod", "max", "min", "mean"};
    for (size_t o = 0; o < 5; o++)
        for (int dt = TG_INT32; dt <= TG_FLOAT64; dt++) {
            int bad = 0, cases = 0;
            for (int rep = 0; rep < 8; rep++) {
                int64_t sh[4];
                int r = rand_shape(sh, 3);
                if ((o == 2 || o == 3))
                    for (int i = 0; i < r; i++)
                        sh[i] += sh[i] == 0;   /* max / min of empty is an error: tested elsewhere */
                uint32_t mask = r ? (uint32_t)(kt_rand() % (1u << r)) : 0;
                bool all = rep % 3 == 0;
                if (all)
                    mask = r ? (1u << r) - 1 : 0;
                char axes[64] = "", ins[200], outs[300];
                if (!all) {
                    size_t k = (size_t)snprintf(axes, sizeof axes, " (");
                    for (int i = 0, f = 0; i < r; i++)
                        if (mask & (1u << i))
                            k += (size_t)snprintf(axes + k, sizeof axes - k, f++ ? " %d" : "%d", i - (rep & 1 ? r : 0));
                    snprintf(axes + k, sizeof axes - k, ")");
                }
                snprintf(ins, sizeof ins, "(input x %s %s)", dnames[dt], sym_shape(r, "n"));
                snprintf(outs, sizeof outs, "(%s (input x %s %s)%s)", ops[o], dnames[dt], sym_shape(r, "n"), axes);
                tg_error err;
                tg_fn *fn = kt_compile(ctx, ins, outs, NULL, kt_path, &err);
                if (!fn) {
                    bad++;
                    tap_diag("compile %s: %s", outs, err.message);
                    continue;
                }
                kt_arr x;
                kt_make(&x, (tg_dtype)dt, r, sh, rep & 2);
                kt_fill(&x.a, o == 1 ? 0.5 : -50, o == 1 ? 1.5 : 50);
                if (o == 1 && dt < TG_FLOAT32)
                    kt_fill(&x.a, -1, 3);
                tg_array out = {0};
                if (tg_fn_call(fn, &x.a, &out, &err) < 0) {
                    bad++;
                    tap_diag("call %s: %s", outs, err.message);
                    goto next;
                }
                /* reference: walk x, accumulate per output index */
                int64_t osh[4], on = 1;
                int orank = 0;
                for (int i = 0; i < r; i++)
                    if (!(mask & (1u << i)))
                        osh[orank++] = sh[i], on *= sh[i];
                if (out.ndim != orank) {
                    bad++;
                    goto next;
                }
                long double *acc = calloc((size_t)(on ? on : 1), sizeof *acc);
                mpz_t *zacc = calloc((size_t)(on ? on : 1), sizeof *zacc);
                int64_t *cnt = calloc((size_t)(on ? on : 1), sizeof *cnt);
                for (int64_t i = 0; i < on; i++) {
                    acc[i] = o == 1 ? 1 : o == 2 ? -INFINITY : o == 3 ? INFINITY : 0;
                    mpz_init_set_si(zacc[i], o == 1 ? 1 : 0);
                }
                int64_t idx[4] = {0};
                if (kt_count(&x.a) > 0)
                    do {
                        int64_t oi = 0;
                        for (int i = 0; i < r; i++)
                            if (!(mask & (1u << i)))
                                oi = oi * sh[i] + idx[i];
                        long double v = kt_get(&x.a, idx);
                        mpz_t z;
                        mpz_init_set_si(z, kt_geti(&x.a, idx));
                        switch (o) {
                        case 1: acc[oi] *= v; mpz_mul(zacc[oi], zacc[oi], z); break;
                        case 2: acc[oi] = v > acc[oi] ? v : acc[oi]; break;
                        case 3: acc[oi] = v < acc[oi] ? v : acc[oi]; break;
                        default: acc[oi] += v; mpz_add(zacc[oi], zacc[oi], z);
                        }
                        mpz_clear(z);
                        cnt[oi]++;
                    } while (kt_next(r, sh, idx));
                int64_t oidx[4] = {0};
                if (on > 0)
                    do {
                        int64_t oi = 0;
                        for (int i = 0; i < orank; i++)
                            oi = oi * osh[i] + oidx[i];
                        cases++;
                        if (dt < TG_FLOAT32 && o != 4) {
                            int64_t want = (o == 0 || o == 1) ? mpz_get_si(zacc[oi]) : (int64_t)acc[oi];
                            if (kt_geti(&out, oidx) != want && bad++ < 3)
                                tap_diag("%s: got %lld want %lld", outs, (long long)kt_geti(&out, oidx), (long long)want);
                        } else {
                            long double want = o == 4 ? acc[oi] / cnt[oi] : acc[oi];
                            long double n = cnt[oi] ? cnt[oi] : 1;
                            long double tol = (dt == TG_FLOAT32 ? 1.2e-7L : 2.3e-16L) * (n + 2) * (o == 1 ? 1 : 60);
                            if (!kt_close(kt_get(&out, oidx), want, tol) && bad++ < 3)
                                tap_diag("%s: got %.17Lg want %.17Lg", outs, kt_get(&out, oidx), want);
                        }
                    } while (kt_next(orank, osh, oidx));
                for (int64_t i = 0; i < on; i++)
                    mpz_clear(zacc[i]);
                free(acc), free(zacc), free(cnt);
            next:
                free(out.data);
                free(x.block);
                tg_fn_free(fn);
            }
            TAP_CHECK(bad == 0, "%s on %s over random axes: %d outputs", ops[o], dnames[dt], cases);
        }
}

static void test_dot(void)
{
    for (int dt = TG_INT32; dt <= TG_FLOAT64; dt++) {
        int bad = 0, cases = 0;
        for (int rep = 0; rep < 24; rep++) {
            int ra = 1 + rep % 2, rb = 1 + (rep / 2) % 2;
            int64_t m = (int64_t)(kt_rand() % 6), k = (int64_t)(kt_rand() % 7), n = (int64_t)(kt_rand() % 6);
            int64_t sa[2], sb[2];
            if (ra == 2)
                sa[0] = m, sa[1] = k;
            else
                sa[0] = k;
            if (rb == 2)
                sb[0] = k, sb[1] = n;
            else
                sb[0] = k;
            /* A given transposed (a view) on odd reps */
            bool tr = ra == 2 && (rep / 4) % 2;
            char ins[300], outs[300], a[120];
            snprintf(ins, sizeof ins, "(input a %s %s) (input b %s %s)", dnames[dt],
                     tr ? "(k m)" : ra == 2 ? "(m k)" : "(k)", dnames[dt], rb == 2 ? "(k n)" : "(k)");
            snprintf(a, sizeof a, "(input a %s %s)", dnames[dt], tr ? "(k m)" : ra == 2 ? "(m k)" : "(k)");
            snprintf(outs, sizeof outs, tr ? "(dot (transpose %s) (input b %s %s))" : "(dot %s (input b %s %s))", a,
                     dnames[dt], rb == 2 ? "(k n)" : "(k)");
            tg_error err;
            tg_fn *fn = kt_compile(ctx, ins, outs, NULL, kt_path, &err);
            if (!fn) {
                bad++;
                tap_diag("compile %s: %s", outs, err.message);
                continue;
            }
            kt_arr A, B;
            int64_t sat[2] = {sa[1], sa[0]};
            kt_make(&A, (tg_dtype)dt, ra, tr ? sat : sa, rep & 8);
            kt_make(&B, (tg_dtype)dt, rb, sb, rep & 16);
            kt_fill(&A.a, -10, 10);
            kt_fill(&B.a, -10, 10);
            tg_array in[2] = {A.a, B.a}, out = {0};
            if (tg_fn_call(fn, in, &out, &err) < 0) {
                bad++;
                tap_diag("call %s: %s", outs, err.message);
            } else {
                int64_t rows = ra == 2 ? m : 1, cols = rb == 2 ? n : 1;
                for (int64_t i = 0; i < rows; i++)
                    for (int64_t j = 0; j < cols; j++) {
                        long double s = 0, sabs = 0;
                        for (int64_t p = 0; p < k; p++) {
                            int64_t ia[2], ib[2];
                            if (ra == 2) {
                                if (tr)
                                    ia[0] = p, ia[1] = i;
                                else
                                    ia[0] = i, ia[1] = p;
                            } else {
                                ia[0] = p;
                            }
                            if (rb == 2)
                                ib[0] = p, ib[1] = j;
                            else
                                ib[0] = p;
                            long double t = kt_get(&A.a, ia) * kt_get(&B.a, ib);
                            s += t, sabs += fabsl(t);
                        }
                        int64_t oi[2];
                        int q = 0;
                        if (ra == 2)
                            oi[q++] = i;
                        if (rb == 2)
                            oi[q++] = j;
                        long double got = kt_get(&out, oi);
                        long double tol = (dt == TG_FLOAT32 ? 1.2e-7L : 2.3e-16L) * (k + 2);
                        cases++;
                        if (fabsl(got - s) > tol * (sabs + 1) && bad++ < 3)
                            tap_diag("%s [%lld %lld]: got %.17Lg want %.17Lg", outs, (long long)i, (long long)j, got, s);
                    }
            }
            free(out.data);
            free(A.block), free(B.block);
            tg_fn_free(fn);
        }
        TAP_CHECK(bad == 0, "dot on %s (matrix and vector, empty, transposed, strided): %d elements",
                  dnames[dt], cases);
    }
}

/* The paper's expression, compared elementwise with long double. */
static void test_fused_expression(void)
{
    const char *ins = "(input x float64 (n)) (input y float64 (n)) (input z float64 (n))";
    const char *outs = "(add (mul (exp (input x float64 (n))) (input y float64 (n)))"
                       " (true_div (sin (input z float64 (n)))"
                       " (add 1 (mul (input x float64 (n)) (input x float64 (n))))))";
    tg_error err;
    tg_fn *fn = kt_compile(ctx, ins, outs, NULL, kt_path, &err);
    TAP_CHECK(fn != NULL, "compile exp(x)*y + sin(z)/(1+x*x)");
    int64_t n = 1000;
    kt_arr x, y, z;
    kt_make(&x, TG_FLOAT64, 1, &n, 0), kt_make(&y, TG_FLOAT64, 1, &n, 1), kt_make(&z, TG_FLOAT64, 1, &n, 0);
    kt_fill(&x.a, -5, 5), kt_fill(&y.a, -5, 5), kt_fill(&z.a, -5, 5);
    tg_array in[3] = {x.a, y.a, z.a}, out = {0};
    int bad = fn ? tg_fn_call(fn, in, &out, &err) : -1;
    for (int64_t i = 0; bad == 0 && i < n; i++) {
        long double xv = kt_get(&x.a, &i), yv = kt_get(&y.a, &i), zv = kt_get(&z.a, &i);
        long double want = expl(xv) * yv + sinl(zv) / (1 + xv * xv);
        long double mag = fabsl(expl(xv) * yv) + fabsl(sinl(zv) / (1 + xv * xv));
        if (fabsl(kt_get(&out, &i) - want) > (kt_path ? 6e-16L : 1.6e-15L) * mag)
            bad++;
    }
    TAP_CHECK(bad == 0, "exp(x)*y + sin(z)/(1+x*x) within %g relative of long double", kt_path ? 6e-16 : 1.6e-15);
    free(out.data), free(x.block), free(y.block), free(z.block);
    tg_fn_free(fn);
}

/* Repeated calls of one function: sizes change and come back, outputs
 * are contiguous, strided or allocated, a call fails in between.  A call
 * reuses the shapes and workspace of the previous one when it binds the
 * same sizes, so each of these must still see its own arrays. */
static void test_repeated_calls(void)
{
    tg_error err;
    tg_fn *fn = kt_compile(ctx, "(input x float64 (n m)) (input y float64 (m))",
                           "(mul (exp (input x float64 (n m))) (input y float64 (m)))"
                           " (sum (exp (input x float64 (n m))) (1))",
                           NULL, kt_path, &err);
    TAP_CHECK(fn != NULL, "repeated calls: compiled (%s)", fn ? "" : err.message);
    if (!fn)
        return;
    static const int64_t sizes[][2] = {{2, 3}, {2, 3}, {4, 1}, {2, 3}, {0, 3}, {2, 3}, {3, 5}, {3, 5}};
    int bad = 0, calls = 0;
    for (int c = 0; c < (int)(sizeof sizes / sizeof *sizes); c++) {
        const int64_t *nm = sizes[c];
        kt_arr x, y, o, r;
        kt_make(&x, TG_FLOAT64, 2, nm, c % 2);
        kt_make(&y, TG_FLOAT64, 1, nm + 1, c % 3 == 0);
        kt_make(&o, TG_FLOAT64, 2, nm, c % 3 == 1);
        kt_make(&r, TG_FLOAT64, 1, nm, c % 2 == 0);
        kt_fill(&x.a, -2, 2);
        kt_fill(&y.a, -2, 2);
        tg_array in[2] = {x.a, y.a}, out[2] = {o.a, r.a};
        if (c == 4)
            out[1].data = NULL;     /* allocated by the call */
        /* a failing call first: y of the wrong length */
        tg_array wrong = y.a;
        wrong.shape[0] = nm[1] + 1;
        tg_array in2[2] = {x.a, wrong};
        bad += tg_fn_call(fn, in2, out, &err) == 0;
        bad += tg_fn_call(fn, in, out, &err) != 0;
        calls++;
        int64_t idx[2];
        for (idx[0] = 0; idx[0] < nm[0]; idx[0]++) {
            long double sum = 0;
            for (idx[1] = 0; idx[1] < nm[1]; idx[1]++) {
                long double e = expl(kt_get(&x.a, idx));
                sum += e;
                bad += !kt_close(kt_get(&out[0], idx), e * kt_get(&y.a, idx + 1), 1e-13L);
            }
            bad += !kt_close(kt_get(&out[1], idx), sum, 1e-13L);
        }
        if (c == 4)
            free(out[1].data);
        free(x.block), free(y.block), free(o.block), free(r.block);
    }
    TAP_CHECK(bad == 0, "repeated calls: %d calls over changing sizes and layouts right", calls);
    tg_fn_free(fn);
}

int main(void)
{
    tg_error err;
    ctx = tg_ctx_new(&err);
    KT_EACH_PATH {
        test_unary();
        test_binary();
        test_special_values();
        test_reductions();
        test_dot();
        test_fused_expression();
        test_repeated_calls();
    }
    tg_ctx_free(ctx);
    return TAP_DONE();
}
