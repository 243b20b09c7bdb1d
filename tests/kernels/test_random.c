/* test_random.c - random draws: Philox4x32-10 against the published
 * known-answer vectors, a draw's first values against the stream those
 * vectors give, moments of every kind, the same numbers on both paths,
 * a state advanced by an update, and errors (a failed call leaving the
 * state as it was). */
#include "kt.h"
#include "random.h"

static tg_ctx *ctx;

/* One output over the inputs (texts), with updates (NULL: none). */
static tg_fn *compile(const char *ins, const char *out, const char *upd, tg_error *err)
{
    tg_term *it[4], *ot;
    size_t ni = 0;
    tg_reader *r = tg_reader_new(ctx, ins, strlen(ins), NULL, err);
    while (r && ni < 4 && tg_reader_next(r, &it[ni], err) == 1)
        ni++;
    tg_reader_free(r);
    if (!(ot = tg_read_cstr(ctx, out, err)))
        return NULL;
    tg_fn_options o;
    memset(&o, 0, sizeof o);
    o.interpret = kt_path;
    o.updates = upd ? tg_read_cstr(ctx, upd, err) : NULL;
    return tg_fn_compile(ctx, ni, it, 1, &ot, &o, err);
}

static void test_philox(void)
{
    static const uint32_t kat[3][10] = {
        {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
        {~0u, ~0u, ~0u, ~0u, ~0u, ~0u, 0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd},
        {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09, 0x94fdcceb,
         0x5001e420, 0x24126ea1},
    };
    for (int k = 0; k < 3; k++) {
        uint32_t c[4] = {kat[k][0], kat[k][1], kat[k][2], kat[k][3]}, key[2] = {kat[k][4], kat[k][5]};
        tgRn_philox(c, key);
        TAP_CHECK(c[0] == kat[k][6] && c[1] == kat[k][7] && c[2] == kat[k][8] && c[3] == kat[k][9],
                  "Philox4x32-10 known answer %d: %08x %08x %08x %08x", k, c[0], c[1], c[2], c[3]);
    }
}

/* Draw n values of term text (over the state s) into out. */
static int draw(const char *text, int64_t s, int64_t n, tg_dtype d, void *out, tg_error *err)
{
    tg_fn *fn = compile("(input s int64 ()) (input x float64 (n))", text, NULL, err);
    if (!fn)
        return -1;
    int64_t n1 = n;
    double *xs = calloc((size_t)(n ? n : 1), 8);    /* x only binds n */
    tg_array in[2], o;
    tg_array_init(&in[0], TG_INT64, 0, NULL, &s);
    tg_array_init(&in[1], TG_FLOAT64, 1, &n1, xs);
    tg_array_init(&o, d, 1, &n1, out);
    int rc = tg_fn_call(fn, in, &o, err);
    free(xs);
    tg_fn_free(fn);
    return rc;
}

static void moments(const double *v, int64_t n, double *mean, double *var)
{
    double m = 0, q = 0;
    for (int64_t i = 0; i < n; i++)
        m += v[i];
    m /= (double)n;
    for (int64_t i = 0; i < n; i++)
        q += (v[i] - m) * (v[i] - m);
    *mean = m, *var = q / (double)n;
}

static void test_stream_and_moments(void)
{
    enum { N = 200000 };
    tg_error err;
    static double v[N], w[N];
    static int64_t iv[N];
    static unsigned char bv[N];
    /* state 0, the function's first draw: element i is Philox of (i, 0) under key 0 */
    int ok = draw("(random uniform (input s int64 ()) (n) 0 1)", 0, N, TG_FLOAT64, v, &err) == 0;
    TAP_CHECK(ok && v[0] == (double)(0xe169c58d6627e8d5ull >> 11) * 0x1p-53,
              "uniform element 0 of state 0 from the known answer: %.17g", v[0]);
    double m, q;
    moments(v, N, &m, &q);
    double lo = 1, hi = 0;
    for (int i = 0; i < N; i++)
        lo = fmin(lo, v[i]), hi = fmax(hi, v[i]);
    TAP_CHECK(fabs(m - 0.5) < 0.003 && fabs(q - 1.0 / 12) < 0.002 && lo >= 0 && hi < 1,
              "uniform [0, 1): mean %g, variance %g, in [%g, %g]", m, q, lo, hi);
    ok = draw("(random uniform (input s int64 ()) (n) -2 6)", 7, N, TG_FLOAT64, w, &err) == 0;
    moments(w, N, &m, &q);
    TAP_CHECK(ok && fabs(m - 2) < 0.025 && fabs(q - 64.0 / 12) < 0.13, "uniform [-2, 6): mean %g, variance %g", m, q);
    ok = draw("(random normal (input s int64 ()) (n) 2 3)", 1, N, TG_FLOAT64, v, &err) == 0;
    moments(v, N, &m, &q);
    TAP_CHECK(ok && fabs(m - 2) < 0.035 && fabs(q - 9) < 0.2, "normal (2, 3): mean %g, variance %g", m, q);
    double m3 = 0;
    for (int i = 0; i < N; i++)
        m3 += pow((v[i] - 2) / 3, 3);
    TAP_CHECK(fabs(m3 / N) < 0.03, "normal: third moment %g", m3 / N);
    ok = draw("(random bernoulli (input s int64 ()) (n) 0.3)", 2, N, TG_BOOL, bv, &err) == 0;
    long ones = 0, other = 0;
    for (int i = 0; i < N; i++)
        ones += bv[i] == 1, other += bv[i] > 1;
    TAP_CHECK(ok && fabs((double)ones / N - 0.3) < 0.006 && !other, "bernoulli 0.3: %g", (double)ones / N);
    ok = draw("(random integers (input s int64 ()) (n) -3 4)", 3, N, TG_INT64, iv, &err) == 0;
    long count[7] = {0}, out = 0;
    for (int i = 0; i < N; i++)
        if (iv[i] < -3 || iv[i] > 3)
            out++;
        else
            count[iv[i] + 3]++;
    int even = 1;
    for (int k = 0; k < 7; k++)
        even &= fabs((double)count[k] / N - 1.0 / 7) < 0.005;
    TAP_CHECK(ok && !out && even, "integers [-3, 4): each value a seventh of the draws");
    /* two draws of one function from one state are independent */
    ok = draw("(mul (random uniform (input s int64 ()) (n) -1 1) (random uniform (input s int64 ()) (n) -1 1.0))", 5,
              N, TG_FLOAT64, v, &err) == 0;
    moments(v, N, &m, &q);
    TAP_CHECK(ok && fabs(m) < 0.005, "two draws from one state: E[xy] %g", m);
}

/* The same numbers on both paths, whatever the loops around them. */
static void test_paths(void)
{
    tg_error err;
    static double a[2][1000];
    const char *t = "(add (mul 2 (random normal (input s int64 ()) (n) 0 1)) (random uniform (input s int64 ()) (n) 0 1))";
    int ok = 1;
    for (int p = 0; p < 2; p++) {
        int save = kt_path;
        kt_path = p;
        ok &= draw(t, 42, 1000, TG_FLOAT64, a[p], &err) == 0;
        kt_path = save;
    }
    TAP_CHECK(ok && memcmp(a[0], a[1], sizeof a[0]) == 0, "compiled code and the interpreter draw the same bits");
}

/* Draws inside a scan's lambda advance per step: step t's element i is
 * Philox of the counter (i, d, t + 1) under the state (a nested scan's
 * inner step j within outer step k: stream (k + 1) * 0x9E3779B1 + j + 1),
 * the same on both paths and in every call from the same state. */
static void test_scan_draws(void)
{
    tg_error err;
    const char *t = "(scan (lambda (xt s) ((add xt (random uniform s (3) 0 1)))) (steps auto)"
                    " (sequences (input x float64 (n))) (outputs (nitsot)) (non_sequences (input s int64 ())))";
    tg_fn *fn = compile("(input s int64 ()) (input x float64 (n))", t, NULL, &err);
    TAP_CHECK(fn != NULL, "a draw inside a scan's lambda compiles: %s", fn ? "" : err.message);
    if (!fn)
        return;
    int64_t s = 77, n = 4, sh[2] = {4, 3};
    double x[4] = {0, 10, 20, 30}, y[12], y2[12];
    tg_array in[2], o;
    tg_array_init(&in[0], TG_INT64, 0, NULL, &s);
    tg_array_init(&in[1], TG_FLOAT64, 1, &n, x);
    tg_array_init(&o, TG_FLOAT64, 2, sh, y);
    int ok = tg_fn_call(fn, in, &o, &err) == 0;
    tg_array_init(&o, TG_FLOAT64, 2, sh, y2);
    ok = ok && tg_fn_call(fn, in, &o, &err) == 0 && memcmp(y, y2, sizeof y) == 0;
    int bad = !ok;
    for (int st = 0; ok && st < 4; st++)
        for (int i = 0; i < 3; i++) {
            uint32_t c[4] = {(uint32_t)i, 0, 0, tgRn_stream(0, st)}, key[2] = {77, 0};
            tgRn_philox(c, key);
            uint64_t w = (uint64_t)c[1] << 32 | c[0];
            bad += y[st * 3 + i] != x[st] + (double)(w >> 11) * 0x1p-53;
        }
    TAP_CHECK(bad == 0, "each step of a scan draws its own numbers, Philox of (i, 0, step + 1), again alike from one state");
    tg_fn_free(fn);
    /* nested: the inner scan's draws differ between outer steps */
    t = "(scan (lambda (xt s) ((sum (scan (lambda (s2) ((random uniform s2 () 0 1))) (steps 2) (sequences)"
        " (outputs (nitsot)) (non_sequences s)) all))) (steps auto) (sequences (input x float64 (n)))"
        " (outputs (nitsot)) (non_sequences (input s int64 ())))";
    fn = compile("(input s int64 ()) (input x float64 (n))", t, NULL, &err);
    double z[4];
    tg_array_init(&o, TG_FLOAT64, 1, &n, z);
    ok = fn && tg_fn_call(fn, in, &o, &err) == 0;
    double want[4];
    for (int k = 0; k < 4; k++) {
        want[k] = 0;
        for (int j = 0; j < 2; j++) {
            uint32_t c[4] = {0, 0, 0, tgRn_stream(tgRn_stream(0, k), j)}, key[2] = {77, 0};
            tgRn_philox(c, key);
            want[k] += (double)(((uint64_t)c[1] << 32 | c[0]) >> 11) * 0x1p-53;
        }
    }
    TAP_CHECK(ok && memcmp(z, want, sizeof z) == 0 && z[0] != z[1],
              "a nested scan draws afresh at every inner step of every outer step: %s", ok ? "" : err.message);
    tg_fn_free(fn);
}

/* A state advanced by an update: each call draws afresh, a state set back
 * draws again what it drew; a failed call leaves it as it was. */
static void test_state_update(void)
{
    tg_error err;
    int64_t s0 = 11, three = 3;
    tg_array a;
    tg_array_init(&a, TG_INT64, 0, NULL, &s0);
    tg_shared *rng = tg_shared_new(ctx, "rng", &a, &err);
    double p = 0.5, v[3][3];
    tg_fn *fn = compile("(input p float64 ())", "(random uniform (shared rng int64 ()) (3) 0 (input p float64 ()))",
                 "(((shared rng int64 ()) (add (shared rng int64 ()) 1)))", &err);
    TAP_CHECK(fn != NULL, "compile a draw advancing its state: %s", fn ? "" : err.message);
    if (!fn) {
        tg_shared_free(rng);
        return;
    }
    tg_term *sch = tg_fn_schedule(fn);
    char *txt = sch ? tg_print(sch, NULL) : NULL;
    TAP_CHECK(txt && strstr(txt, "(random uniform rng 0 p)"),
              "the schedule shows the draw: %s", txt ? txt : "?");
    free(txt);
    tg_array in, o;
    tg_array_init(&in, TG_FLOAT64, 0, NULL, &p);
    int ok = 1;
    for (int c = 0; c < 3; c++) {
        tg_array_init(&o, TG_FLOAT64, 1, &three, v[c]);
        ok &= tg_fn_call(fn, &in, &o, &err) == 0;
    }
    int64_t now;
    tg_array_init(&a, TG_INT64, 0, NULL, &now);
    tg_shared_get(rng, &a, &err);
    TAP_CHECK(ok && now == 14 && memcmp(v[0], v[1], sizeof v[0]) && memcmp(v[1], v[2], sizeof v[0]),
              "3 calls: 3 different draws, the state at 14");
    p = -1;
    tg_array_init(&o, TG_FLOAT64, 1, &three, v[2]);
    TAP_CHECK(tg_fn_call(fn, &in, &o, &err) < 0 && strstr(err.message, "uniform needs finite LO <= HI"),
              "uniform of [0, -1): %s", err.message);
    tg_shared_get(rng, &a, &err);
    TAP_CHECK(now == 14, "the failed call left the state at 14");
    p = 0.5;
    tg_array_init(&a, TG_INT64, 0, NULL, &s0);
    tg_shared_set(rng, &a, &err);
    tg_array_init(&o, TG_FLOAT64, 1, &three, v[2]);
    TAP_CHECK(tg_fn_call(fn, &in, &o, &err) == 0 && memcmp(v[0], v[2], sizeof v[0]) == 0,
              "the state set back to 11 draws the first draw again");
    tg_fn_free(fn);
    tg_shared_free(rng);
}

static void test_errors(void)
{
    tg_error err;
    static const struct {
        const char *term, *msg;
    } compile_errors[] = {
        {"(random uniform (input s int64 ()) (-1) 0 1)", "a size must be a non-negative integer"},
        {"(random uniform (input x float64 (n)) (2) 0 1)", "state is a 0-d int64"},
        {"(random uniform (input s int64 ()) (2) 0)", "a random draw is (random KIND"},
        {"(random poisson (input s int64 ()) (2) 1)", "a random draw is (random KIND"},
        {"(random uniform (input s int64 ()) (2) (input x float64 (n)) 1)", "parameters are 0-d"},
    };
    for (size_t k = 0; k < sizeof compile_errors / sizeof *compile_errors; k++) {
        tg_fn *fn = compile("(input s int64 ()) (input x float64 (n))", compile_errors[k].term, NULL, &err);
        TAP_CHECK(!fn && strstr(err.message, compile_errors[k].msg), "compile error %zu: %s", k, fn ? "" : err.message);
        tg_fn_free(fn);
    }
    static const struct {
        const char *term, *msg;
        tg_dtype d;
    } call_errors[] = {
        {"(random normal (input s int64 ()) (n) 0 -1)", "normal needs a finite MEAN and a finite STD >= 0", TG_FLOAT64},
        {"(random bernoulli (input s int64 ()) (n) 1.5)", "bernoulli needs 0 <= P <= 1", TG_BOOL},
        {"(random integers (input s int64 ()) (n) 3 3)", "integers needs LO < HI", TG_INT64},
        {"(random uniform (input s int64 ()) (n) 0 (true_div 1 0.0))", "uniform needs finite LO <= HI", TG_FLOAT64},
    };
    for (size_t k = 0; k < sizeof call_errors / sizeof *call_errors; k++) {
        double out[4];
        TAP_CHECK(draw(call_errors[k].term, 0, 2, call_errors[k].d, out, &err) < 0 &&
                  strstr(err.message, call_errors[k].msg), "call error %zu: %s", k, err.message);
    }
}

int main(void)
{
    tg_error err;
    ctx = tg_ctx_new(&err);
    test_philox();
    KT_EACH_PATH {
        test_stream_and_moments();
        test_state_update();
        test_scan_draws();
        test_errors();
    }
    test_paths();
    tg_ctx_free(ctx);
    return TAP_DONE();
}
