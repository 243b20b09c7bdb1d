/* test_scan.c - scan loops (doc/scan.md) on the compiled path and in the
 * interpreter, each against a reference computed here with plain C loops
 * (exact integers where the values allow, long double otherwise):
 * cumulative sum, Fibonacci (taps -2 -1), polynomial evaluation, a
 * 64-unit RNN, until, backwards, several outputs; and the errors. */
#include "kt.h"

static tg_ctx *ctx;

/* Compile outs over ins (text) and call it on args; outputs allocated. */
static int run(const char *ins, const char *outs, tg_array *args, tg_array *out, int nout, tg_error *err)
{
    tg_fn *fn = kt_compile(ctx, ins, outs, NULL, kt_path, err);
    if (!fn)
        return -1;
    memset(out, 0, (size_t)nout * sizeof *out);
    int rc = tg_fn_call(fn, args, out, err);
    if (rc == 0 && !kt_path && !tg_fn_native(fn))
        tap_diag("not compiled: %s", outs);
    tg_fn_free(fn);
    return rc;
}

/* Compiling or calling fails with a message containing want. */
static void fails(const char *ins, const char *outs, tg_array *args, const char *want)
{
    tg_error err;
    tg_array out[4];
    memset(&err, 0, sizeof err);
    int rc = run(ins, outs, args, out, 4, &err);
    TAP_CHECK(rc < 0 && strstr(err.message, want), "error %s: %s", want, rc < 0 ? err.message : "none");
    if (rc == 0)
        for (int i = 0; i < 4; i++)
            free(out[i].data);
}

/* Integers in [lo, hi) in a float array, so that sums are exact. */
static void fill_ints(const tg_array *a, double lo, double hi)
{
    int64_t idx[TG_MAXDIM] = {0};
    if (kt_count(a) == 0)
        return;
    do
        kt_set(a, idx, floor(kt_unif(lo, hi)));
    while (kt_next(a->ndim, a->shape, idx));
}

static double d_at(const tg_array *a, int64_t i) { return (double)kt_get(a, &i); }

static void test_cumsum(void)
{
    int64_t n = 1000;
    kt_arr x;
    kt_make(&x, TG_FLOAT64, 1, &n, 1);
    fill_ints(&x.a, -1000, 1000);   /* integers: every partial sum is exact */
    const char *ins = "(input x float64 (n))";
    const char *outs =
        "(scan (lambda (xt acc) ((add acc xt))) (steps auto) (sequences (input x float64 (n)))"
        " (outputs (sitsot 0)) (non_sequences))"
        " (scan (lambda (xt acc) ((add acc xt))) (steps auto) (sequences (input x float64 (n)))"
        " (outputs (sitsot (const float64 0) last)) (non_sequences))";
    tg_array out[2];
    tg_error err;
    int rc = run(ins, outs, &x.a, out, 2, &err);
    TAP_CHECK(rc == 0, "cumulative sum runs: %s", rc ? err.message : "");
    if (rc == 0) {
        long double acc = 0;
        int bad = 0;
        for (int64_t t = 0; t < n; t++) {
            acc += d_at(&x.a, t);
            bad += d_at(&out[0], t) != (double)acc;
        }
        TAP_CHECK(out[0].dtype == TG_FLOAT64 && out[0].ndim == 1 && out[0].shape[0] == n && !bad,
                  "cumulative sum: every row exact (%d wrong)", bad);
        TAP_CHECK(out[1].ndim == 0 && *(double *)out[1].data == (double)acc, "cumulative sum, last: %g want %g",
                  *(double *)out[1].data, (double)acc);
        free(out[0].data), free(out[1].data);
    }
    free(x.block);
}

static void test_fibonacci(void)
{
    const int64_t P = 1000000007, N = 500;
    int64_t two = 2, f0v[2] = {0, 1};
    kt_arr f0;
    kt_make(&f0, TG_INT64, 1, &two, 0);
    memcpy(f0.a.data, f0v, sizeof f0v);
    const char *ins = "(input f0 int64 (2))";
    /* taps listed -1 -2: the parameters follow the list's order */
    const char *outs =
        "(scan (lambda (a b) ((mod (add a b) 1000000007))) (steps 500) (sequences)"
        " (outputs (mitsot (input f0 int64 (2)) (taps -2 -1))) (non_sequences))"
        " (scan (lambda (b a) ((mod (add a b) 1000000007))) (steps 500) (sequences)"
        " (outputs (mitsot (input f0 int64 (2)) (taps -1 -2) last)) (non_sequences))";
    tg_array out[2];
    tg_error err;
    int rc = run(ins, outs, &f0.a, out, 2, &err);
    TAP_CHECK(rc == 0, "Fibonacci runs: %s", rc ? err.message : "");
    if (rc == 0) {
        int64_t a = 0, b = 1, bad = 0;
        for (int64_t t = 0; t < N; t++) {
            int64_t c = (a + b) % P;
            a = b, b = c;
            bad += ((int64_t *)out[0].data)[t] != c;
        }
        TAP_CHECK(out[0].dtype == TG_INT64 && out[0].shape[0] == N && !bad, "Fibonacci mod p, stacked (%lld wrong)",
                  (long long)bad);
        TAP_CHECK(*(int64_t *)out[1].data == b, "Fibonacci mod p, last: %lld want %lld",
                  (long long)*(int64_t *)out[1].data, (long long)b);
        free(out[0].data), free(out[1].data);
    }
    free(f0.block);
}

/* Horner: acc = acc * x + c[t] over a vector x, the last value only. */
static void test_polynomial(int strided)
{
    int64_t k = 20, m = 7;
    kt_arr c, x;
    kt_make(&c, TG_FLOAT64, 1, &k, 0);
    kt_make(&x, TG_FLOAT64, 1, &m, strided);
    fill_ints(&c.a, -9, 10);
    fill_ints(&x.a, -2, 3);     /* small integers: exact */
    const char *ins = "(input c float64 (k)) (input x float64 (m))";
    const char *outs =
        "(scan (lambda (ct acc xs) ((add (mul acc xs) ct))) (steps auto)"
        " (sequences (input c float64 (k))) (outputs (sitsot (alloc (const float64 0) m) last))"
        " (non_sequences (input x float64 (m))))";
    tg_array args[2] = {c.a, x.a}, out[1];
    tg_error err;
    int rc = run(ins, outs, args, out, 1, &err);
    TAP_CHECK(rc == 0, "polynomial runs: %s", rc ? err.message : "");
    if (rc == 0) {
        int bad = 0;
        for (int64_t j = 0; j < m; j++) {
            long double acc = 0, xv = d_at(&x.a, j);
            for (int64_t t = 0; t < k; t++)
                acc = acc * xv + d_at(&c.a, t);
            bad += d_at(&out[0], j) != (double)acc;
        }
        TAP_CHECK(out[0].ndim == 1 && out[0].shape[0] == m && !bad, "polynomial at 7 points%s (%d wrong)",
                  strided ? ", strided" : "", bad);
        free(out[0].data);
    }
    free(c.block), free(x.block);
}

/* h_t = tanh(W h_{t-1} + x_t), 64 units. */
static void test_rnn(void)
{
    int64_t T = 40, H = 64, th[2] = {T, H}, hh[2] = {H, H};
    kt_arr x, w, h0;
    kt_make(&x, TG_FLOAT64, 2, th, 0);
    kt_make(&w, TG_FLOAT64, 2, hh, 0);
    kt_make(&h0, TG_FLOAT64, 1, &H, 0);
    kt_fill(&x.a, -1, 1);
    kt_fill(&w.a, -0.2, 0.2);
    kt_fill(&h0.a, -1, 1);
    const char *ins = "(input x float64 (t h)) (input w float64 (h h)) (input h0 float64 (h))";
    const char *outs =
        "(scan (lambda (xt hp W) ((tanh (add (dot W hp) xt)))) (steps auto)"
        " (sequences (input x float64 (t h))) (outputs (sitsot (input h0 float64 (h))))"
        " (non_sequences (input w float64 (h h))))";
    tg_array args[3] = {x.a, w.a, h0.a}, out[1];
    tg_error err;
    int rc = run(ins, outs, args, out, 1, &err);
    TAP_CHECK(rc == 0, "RNN runs: %s", rc ? err.message : "");
    if (rc == 0) {
        long double h[64], hn[64];
        double worst = 0;
        for (int64_t i = 0; i < H; i++)
            h[i] = d_at(&h0.a, i);
        for (int64_t t = 0; t < T; t++) {
            for (int64_t i = 0; i < H; i++) {
                long double s = 0;
                for (int64_t j = 0; j < H; j++) {
                    int64_t ij[2] = {i, j}, ti[2] = {t, i};
                    s += kt_get(&w.a, ij) * h[j];
                    if (j == H - 1)
                        s += kt_get(&x.a, ti);
                }
                hn[i] = tanhl(s);
            }
            for (int64_t i = 0; i < H; i++) {
                int64_t ti[2] = {t, i};
                double e = fabs((double)(kt_get(&out[0], ti) - hn[i]));
                worst = e > worst ? e : worst;
                h[i] = hn[i];
            }
        }
        TAP_CHECK(out[0].shape[0] == T && out[0].shape[1] == H && worst < 1e-13,
                  "RNN, 64 units, 40 steps: within %g of long double", worst);
        free(out[0].data);
    }
    free(x.block), free(w.block), free(h0.block);
}

/* Cumulative sum until it passes a limit: rows after the stop are zero. */
static void test_until(void)
{
    int64_t n = 100;
    kt_arr x;
    kt_make(&x, TG_FLOAT64, 1, &n, 0);
    fill_ints(&x.a, 1, 10);
    const char *ins = "(input x float64 (n))";
    const char *scan =
        "(scan (lambda (xt acc acc2 lim) ((add acc xt) (add acc2 xt)) (until (gt (add acc xt) lim)))"
        " (steps auto)"
        " (sequences (input x float64 (n))) (outputs (sitsot 0) (sitsot 0 last))"
        " (non_sequences 200))";
    char outs[2000];
    snprintf(outs, sizeof outs, "%s (scan_output %s 1) (scan_steps %s)", scan, scan, scan);
    tg_array out[3];
    tg_error err;
    int rc = run(ins, outs, &x.a, out, 3, &err);
    TAP_CHECK(rc == 0, "until runs: %s", rc ? err.message : "");
    if (rc == 0) {
        long double acc = 0;
        int64_t stop = n, bad = 0;
        for (int64_t t = 0; t < n; t++) {
            if (t < stop) {
                acc += d_at(&x.a, t);
                if (acc > 200)
                    stop = t + 1;
            }
            bad += d_at(&out[0], t) != (t < stop ? (double)acc : 0);
        }
        TAP_CHECK(stop < n && *(int64_t *)out[2].data == stop, "until: %lld steps done, want %lld",
                  (long long)*(int64_t *)out[2].data, (long long)stop);
        TAP_CHECK(!bad, "until: rows of the steps done hold the sums, the rest zero (%lld wrong)", (long long)bad);
        TAP_CHECK(*(double *)out[1].data == (double)acc, "until, last: the value of the last step done");
        free(out[0].data), free(out[1].data), free(out[2].data);
    }
    free(x.block);
}

/* Until over rows of 2 x 3, into an output given strided and full of
 * 7s: the rows after the stop are zeroed through its strides. */
static void test_until_rows(tg_dtype d)
{
    static const char *const dn[] = {"bool", "int32", "int64", "float32", "float64"};
    int64_t n = 40, sh[3] = {n, 2, 3}, idx[3] = {0};
    kt_arr x, h0, o;
    kt_make(&x, d, 3, sh, 0);
    kt_make(&h0, d, 2, sh + 1, 0);
    kt_make(&o, d, 3, sh, 1);
    fill_ints(&x.a, 1, 10);
    do
        kt_set(&o.a, idx, 7);
    while (kt_next(3, sh, idx));
    char ins[200], outs[600];
    snprintf(ins, sizeof ins, "(input x %s (n 2 3)) (input h0 %s (2 3))", dn[d], dn[d]);
    snprintf(outs, sizeof outs,
             "(scan (lambda (xt acc lim) ((add acc xt)) (until (gt (sum (add acc xt) (0 1)) lim)))"
             " (steps auto) (sequences (input x %s (n 2 3))) (outputs (sitsot (input h0 %s (2 3))))"
             " (non_sequences 200))", dn[d], dn[d]);
    tg_error err;
    tg_fn *fn = kt_compile(ctx, ins, outs, NULL, kt_path, &err);
    tg_array args[2] = {x.a, h0.a};
    int rc = fn ? tg_fn_call(fn, args, &o.a, &err) : -1;
    TAP_CHECK(rc == 0, "until over %s rows of 2 x 3 runs: %s", dn[d], rc ? err.message : "");
    if (rc == 0) {
        long double acc[6] = {0};
        int64_t stop = n, bad = 0;
        for (int64_t t = 0; t < n; t++) {
            long double sum = 0;
            for (int e = 0; e < 6 && t < stop; e++) {
                int64_t i[3] = {t, e / 3, e % 3};
                sum += acc[e] += kt_get(&x.a, i);
            }
            if (t < stop && sum > 200)
                stop = t + 1;
            for (int e = 0; e < 6; e++) {
                int64_t i[3] = {t, e / 3, e % 3};
                bad += kt_get(&o.a, i) != (t < stop ? acc[e] : 0);
            }
        }
        TAP_CHECK(stop < n && !bad, "until over %s rows: %lld steps of %lld, the rest zero through the strides "
                  "(%lld wrong)", dn[d], (long long)stop, (long long)n, (long long)bad);
    }
    tg_fn_free(fn);
    free(x.block), free(h0.block), free(o.block);
}

static void test_backwards(int strided)
{
    int64_t n = 50, m = 3, nm[2] = {n, m};
    kt_arr x;
    kt_make(&x, TG_FLOAT64, 2, nm, strided);   /* strided: first axis reversed too */
    fill_ints(&x.a, -100, 100);
    const char *ins = "(input x float64 (n m))";
    const char *scan =
        "(scan (lambda (xt acc) ((add acc xt) (mul xt 2))) (steps 40)"
        " (sequences (input x float64 (n m))) (outputs (sitsot (alloc 0.0 m)) (nitsot)) (non_sequences)"
        " backwards)";
    char outs[1000];
    snprintf(outs, sizeof outs, "%s (scan_output %s 1)", scan, scan);
    tg_array out[2];
    tg_error err;
    int rc = run(ins, outs, &x.a, out, 2, &err);
    TAP_CHECK(rc == 0, "backwards runs: %s", rc ? err.message : "");
    if (rc == 0) {
        int bad = 0;
        long double acc[3] = {0, 0, 0};
        for (int64_t t = 0; t < 40; t++)
            for (int64_t j = 0; j < m; j++) {
                int64_t src[2] = {39 - t, j}, dst[2] = {t, j};
                acc[j] += kt_get(&x.a, src);
                bad += kt_get(&out[0], dst) != acc[j];
                bad += kt_get(&out[1], dst) != 2 * kt_get(&x.a, src);
            }
        TAP_CHECK(out[0].shape[0] == 40 && out[1].shape[0] == 40 && !bad,
                  "backwards over the first 40 rows%s: X[39-t], stacked in iteration order (%d wrong)",
                  strided ? ", strided" : "", bad);
        free(out[0].data), free(out[1].data);
    }
    free(x.block);
}

/* float32, int32 and bool state: rounding, wraparound and 0/1 values
 * carried from step to step as the outputs store them. */
static void test_dtypes(void)
{
    int64_t n = 300;
    kt_arr x, b;
    kt_make(&x, TG_FLOAT32, 1, &n, 0);
    kt_make(&b, TG_BOOL, 1, &n, 0);
    kt_fill(&x.a, -1000, 1000);
    for (int64_t i = 0; i < n; i++)
        ((unsigned char *)b.a.data)[i] = kt_rand() % 3 == 0;
    const char *ins = "(input x float32 (n)) (input b bool (n))";
    const char *outs =
        "(scan (lambda (xt acc) ((add acc xt))) (steps auto) (sequences (input x float32 (n)))"
        " (outputs (sitsot 0)) (non_sequences))"
        " (scan (lambda (u v) ((add u v))) (steps 100) (sequences)"
        " (outputs (mitsot (const int32 1) (taps -2 -1))) (non_sequences))"
        " (scan (lambda (bt p) ((neq p bt))) (steps auto) (sequences (input b bool (n)))"
        " (outputs (sitsot (const bool 0))) (non_sequences))";
    tg_array args[2] = {x.a, b.a}, out[3];
    tg_error err;
    /* a mitsot INIT needs a leading axis: (const int32 1) has none */
    int rc = run(ins, outs, args, out, 3, &err);
    TAP_CHECK(rc < 0 && strstr(err.message, "taps reach back 2 steps but the initial value has 0 rows"),
              "a 0-d mitsot INIT: %s", rc < 0 ? err.message : "accepted");
    outs =
        "(scan (lambda (xt acc) ((add acc xt))) (steps auto) (sequences (input x float32 (n)))"
        " (outputs (sitsot 0)) (non_sequences))"
        " (scan (lambda (u v) ((add u v))) (steps 100) (sequences)"
        " (outputs (mitsot (alloc (const int32 1) 2) (taps -2 -1))) (non_sequences))"
        " (scan (lambda (bt p) ((neq p bt))) (steps auto) (sequences (input b bool (n)))"
        " (outputs (sitsot (const bool 0))) (non_sequences))";
    rc = run(ins, outs, args, out, 3, &err);
    TAP_CHECK(rc == 0, "float32, int32 and bool scans run: %s", rc ? err.message : "");
    if (rc == 0) {
        float acc = 0;
        uint32_t f1 = 1, f2 = 1;
        int p = 0, bad[3] = {0, 0, 0};
        for (int64_t t = 0; t < n; t++) {
            acc = acc + ((float *)x.a.data)[t];
            bad[0] += memcmp(&((float *)out[0].data)[t], &acc, 4) != 0;
            p = p != ((unsigned char *)b.a.data)[t];
            bad[2] += ((unsigned char *)out[2].data)[t] != p;
            if (t < 100) {
                uint32_t f3 = f1 + f2;
                f1 = f2, f2 = f3;
                bad[1] += ((int32_t *)out[1].data)[t] != (int32_t)f3;
            }
        }
        TAP_CHECK(out[0].dtype == TG_FLOAT32 && !bad[0], "float32 sum rounds as float after every step (%d wrong)",
                  bad[0]);
        TAP_CHECK(out[1].dtype == TG_INT32 && !bad[1], "int32 Fibonacci wraps around (%d wrong)", bad[1]);
        TAP_CHECK(out[2].dtype == TG_BOOL && !bad[2], "bool parity (%d wrong)", bad[2]);
        free(out[0].data), free(out[1].data), free(out[2].data);
    }
    free(x.block), free(b.block);
}

/* Inner dots of every shape: vector-matrix, matrix-matrix, and a
 * vector-vector dot feeding 0-d state. */
static void test_dots(void)
{
    int64_t T = 6, k = 5, tk[2] = {T, k}, kk[2] = {k, k};
    kt_arr x, w, s0;
    kt_make(&x, TG_FLOAT64, 2, tk, 0);
    kt_make(&w, TG_FLOAT64, 2, kk, 0);
    kt_make(&s0, TG_FLOAT64, 2, kk, 0);
    kt_fill(&x.a, -1, 1);
    kt_fill(&w.a, -1, 1);
    kt_fill(&s0.a, -1, 1);
    const char *ins = "(input x float64 (t k)) (input w float64 (k k)) (input s0 float64 (k k))";
    const char *outs =
        "(scan (lambda (xt hp W) ((add (dot hp W) xt))) (steps auto) (sequences (input x float64 (t k)))"
        " (outputs (sitsot (alloc 0.5 k))) (non_sequences (input w float64 (k k))))"
        " (scan (lambda (S W) ((mul (dot W S) 0.5))) (steps 4) (sequences)"
        " (outputs (sitsot (input s0 float64 (k k)) last)) (non_sequences (input w float64 (k k))))"
        " (scan (lambda (xt acc) ((add (dot xt xt) acc))) (steps auto) (sequences (input x float64 (t k)))"
        " (outputs (sitsot 0.0)) (non_sequences))";
    tg_array args[3] = {x.a, w.a, s0.a}, out[3];
    tg_error err;
    int rc = run(ins, outs, args, out, 3, &err);
    TAP_CHECK(rc == 0, "scans over dots run: %s", rc ? err.message : "");
    if (rc == 0) {
        long double h[5], S[5][5], acc = 0, e0 = 0, e1 = 0, e2 = 0;
        for (int i = 0; i < k; i++)
            h[i] = 0.5;
        for (int i = 0; i < k; i++)
            for (int j = 0; j < k; j++) {
                int64_t ij[2] = {i, j};
                S[i][j] = kt_get(&s0.a, ij);
            }
        for (int64_t t = 0; t < T; t++) {
            long double hn[5];
            for (int j = 0; j < k; j++) {
                int64_t tj[2] = {t, j};
                hn[j] = kt_get(&x.a, tj);
                for (int i = 0; i < k; i++) {
                    int64_t ij[2] = {i, j};
                    hn[j] += h[i] * kt_get(&w.a, ij);
                }
                acc += kt_get(&x.a, tj) * kt_get(&x.a, tj);
            }
            for (int j = 0; j < k; j++) {
                int64_t tj[2] = {t, j};
                h[j] = hn[j];
                e0 = fmaxl(e0, fabsl(kt_get(&out[0], tj) - h[j]));
            }
            e2 = fmaxl(e2, fabsl(kt_get(&out[2], &t) - acc));
            if (t < 4) {
                long double Sn[5][5];
                for (int i = 0; i < k; i++)
                    for (int j = 0; j < k; j++) {
                        Sn[i][j] = 0;
                        for (int q = 0; q < k; q++) {
                            int64_t iq[2] = {i, q};
                            Sn[i][j] += kt_get(&w.a, iq) * S[q][j];
                        }
                    }
                for (int i = 0; i < k; i++)
                    for (int j = 0; j < k; j++)
                        S[i][j] = Sn[i][j] * 0.5L;
            }
        }
        for (int i = 0; i < k; i++)
            for (int j = 0; j < k; j++) {
                int64_t ij[2] = {i, j};
                e1 = fmaxl(e1, fabsl(kt_get(&out[1], ij) - S[i][j]));
            }
        TAP_CHECK(e0 < 1e-13, "vector-matrix dot state: within %Lg", e0);
        TAP_CHECK(out[1].ndim == 2 && e1 < 1e-13, "matrix-matrix dot state, last: within %Lg", e1);
        TAP_CHECK(e2 < 1e-13, "vector-vector dot into 0-d state: within %Lg", e2);
        free(out[0].data), free(out[1].data), free(out[2].data);
    }
    free(x.block), free(w.block), free(s0.block);
}

/* Zero steps, a symbolic step count below the sequences' length, and an
 * unused stacked output with taps (kept in a ring). */
static void test_counts(void)
{
    int64_t n = 9, k = 4, m = 3, nm[2] = {n, m};
    kt_arr x, w, i0;
    int64_t three[2] = {3, m};
    kt_make(&x, TG_FLOAT64, 2, nm, 0);
    kt_make(&w, TG_FLOAT64, 1, &k, 0);
    kt_make(&i0, TG_FLOAT64, 2, three, 0);
    fill_ints(&x.a, -50, 50);
    fill_ints(&i0.a, -50, 50);
    const char *ins = "(input x float64 (n m)) (input w float64 (k)) (input i0 float64 (3 m))";
    const char *scan =
        "(scan (lambda (xt a c) ((add a c xt) (sub a c))) (steps k) (sequences (input x float64 (n m)))"
        " (outputs (mitsot (input i0 float64 (3 m)) (taps -3 -1)) (nitsot)) (non_sequences))";
    const char *zero =
        "(scan (lambda (xt acc) ((add acc xt) (mul xt 2))) (steps 0) (sequences (input x float64 (n m)))"
        " (outputs (sitsot (input i0 float64 (3 m)) last) (nitsot)) (non_sequences))";
    char outs[2000];
    snprintf(outs, sizeof outs, "(scan_output %s 1) %s (scan_output %s 1)", scan, zero, zero);
    tg_array args[3] = {x.a, w.a, i0.a}, out[3];
    tg_error err;
    int rc = run(ins, outs, args, out, 3, &err);
    TAP_CHECK(rc == 0, "step counts run: %s", rc ? err.message : "");
    if (rc == 0) {
        /* y_t = a_{t-3} + a_{t-1} + x_t, z_t = a_{t-3} - a_{t-1} */
        long double a[16][3];
        int bad = 0;
        for (int r = 0; r < 3; r++)
            for (int j = 0; j < m; j++) {
                int64_t rj[2] = {r, j};
                a[r][j] = kt_get(&i0.a, rj);
            }
        for (int64_t t = 0; t < k; t++)
            for (int j = 0; j < m; j++) {
                int64_t tj[2] = {t, j};
                a[t + 3][j] = a[t][j] + a[t + 2][j] + kt_get(&x.a, tj);
                bad += kt_get(&out[0], tj) != a[t][j] - a[t + 2][j];
            }
        TAP_CHECK(out[0].shape[0] == k && !bad, "(steps k) reads the first k rows; taps -3 -1 in a ring (%d wrong)",
                  bad);
        TAP_CHECK(out[1].ndim == 2 && out[1].shape[0] == 3, "zero steps: a recurrent last output has INIT's shape");
        bad = 0;
        for (int j = 0; j < m; j++) {
            int64_t r2[2] = {2, j}, rj[2] = {0, j};
            (void)rj;
            bad += kt_get(&out[1], r2) != kt_get(&i0.a, r2);
        }
        TAP_CHECK(!bad && out[2].shape[0] == 0 && out[2].shape[1] == 3,
                  "zero steps: last is the value before step 0, stacked outputs have no rows");
        free(out[0].data), free(out[1].data), free(out[2].data);
    }
    free(x.block), free(w.block), free(i0.block);
}

/* A scan inside a scan's lambda: row-wise cumulative sums of a matrix
 * (the inner scan over each row), added up by the outer recurrence; and
 * the limit on nesting. */
static void test_nested(void)
{
    int64_t n = 7, m = 5, nm[2] = {n, m};
    kt_arr x;
    kt_make(&x, TG_FLOAT64, 2, nm, 0);
    fill_ints(&x.a, -20, 20);
    const char *ins = "(input x float64 (n m))";
    const char *outs =
        "(scan (lambda (row acc) ((add acc (scan (lambda (v c) ((add c v))) (steps auto) (sequences row)"
        " (outputs (sitsot 0.0)) (non_sequences)))))"
        " (steps auto) (sequences (input x float64 (n m))) (outputs (sitsot (alloc 0.0 m))) (non_sequences))";
    tg_array out[1];
    tg_error err;
    int rc = run(ins, outs, &x.a, out, 1, &err);
    TAP_CHECK(rc == 0, "a scan inside a scan's lambda runs: %s", rc ? err.message : "");
    if (rc == 0) {
        long double acc[5] = {0};
        int bad = 0;
        for (int64_t t = 0; t < n; t++) {
            long double c = 0;
            for (int64_t j = 0; j < m; j++) {
                int64_t tj[2] = {t, j};
                c += kt_get(&x.a, tj);
                acc[j] += c;
                bad += kt_get(&out[0], tj) != acc[j];
            }
        }
        TAP_CHECK(out[0].ndim == 2 && out[0].shape[0] == n && out[0].shape[1] == m && !bad,
                  "nested scans: sums of row-wise cumulative sums (%d wrong)", bad);
        free(out[0].data);
    }
    free(x.block);
    /* nine lambdas deep: each level a scan of one step over the one below */
    char deep[4000] = "(add h 1)";
    for (int k = 0; k < 9; k++) {
        char next[4000];
        snprintf(next, sizeof next, "(scan (lambda (h) (%s)) (steps 1) (sequences) (outputs (sitsot 0 last))"
                 " (non_sequences))", deep);
        memcpy(deep, next, sizeof deep);
    }
    fails("", deep, NULL, "scans nested more than 8 lambdas deep");
    char *cut = strstr(deep + 1, "(scan");     /* eight deep: fine */
    rc = run("", cut, NULL, out, 1, &err);
    TAP_CHECK(rc == 0 && *(int64_t *)out[0].data == 1, "scans eight lambdas deep run: %s",
              rc ? err.message : "");
    if (rc == 0)
        free(out[0].data);
}

/* Reductions in the lambda: over all axes, over some, of int64 and
 * float64, and one whose result is the recurrent state itself. */
static void test_reductions(void)
{
    int64_t n = 10, m = 3, nm[2] = {n, m}, n23[3] = {n, 2, 3};
    kt_arr x, y, z;
    kt_make(&x, TG_FLOAT64, 2, nm, 0);
    kt_make(&y, TG_INT64, 2, nm, 0);
    kt_make(&z, TG_FLOAT64, 3, n23, 0);
    fill_ints(&x.a, -9, 10);
    kt_fill(&y.a, -3, 4);
    fill_ints(&z.a, -9, 10);
    const char *ins = "(input x float64 (n m)) (input y int64 (n m)) (input z float64 (n 2 3))";
    const char *scan =
        "(scan (lambda (xt yt zt a b c) ((add a (max xt all)) (add b (prod yt all)) (sum (add xt c) all)"
        " (sum zt (axes 1)) (mean xt all) (min zt (axes 0))))"
        " (steps auto) (sequences (input x float64 (n m)) (input y int64 (n m)) (input z float64 (n 2 3)))"
        " (outputs (sitsot 0.0) (sitsot 0 last) (sitsot 1.0) (nitsot) (nitsot) (nitsot)) (non_sequences))";
    char outs[4000];
    int o = snprintf(outs, sizeof outs, "%s", scan);
    for (int k = 1; k < 6; k++)
        o += snprintf(outs + o, sizeof outs - (size_t)o, " (scan_output %s %d)", scan, k);
    tg_array args[3] = {x.a, y.a, z.a}, out[6];
    tg_error err;
    int rc = run(ins, outs, args, out, 6, &err);
    TAP_CHECK(rc == 0, "reductions in the lambda run: %s", rc ? err.message : "");
    if (rc == 0) {
        long double a = 0, c = 1;
        int64_t b = 0;
        int bad[6] = {0};
        for (int64_t t = 0; t < n; t++) {
            long double mx = -INFINITY, sc = 0, mean = 0;
            uint64_t pr = 1;
            for (int64_t j = 0; j < m; j++) {
                int64_t tj[2] = {t, j};
                long double v = kt_get(&x.a, tj);
                mx = v > mx ? v : mx;
                sc += v + c;
                mean += v;
                pr *= (uint64_t)kt_geti(&y.a, tj);
            }
            a += mx, b += (int64_t)pr, c = sc;
            bad[0] += kt_get(&out[0], &t) != a;
            bad[2] += kt_get(&out[2], &t) != c;
            bad[4] += kt_get(&out[4], &t) != (double)(mean / m);
            for (int64_t i = 0; i < 2; i++) {
                long double s2 = 0;
                for (int64_t j = 0; j < 3; j++) {
                    int64_t tij[3] = {t, i, j};
                    s2 += kt_get(&z.a, tij);
                }
                int64_t ti[2] = {t, i};
                bad[3] += kt_get(&out[3], ti) != s2;
            }
            for (int64_t j = 0; j < 3; j++) {
                int64_t t0j[3] = {t, 0, j}, t1j[3] = {t, 1, j}, tj[2] = {t, j};
                long double u = kt_get(&z.a, t0j), w = kt_get(&z.a, t1j);
                bad[5] += kt_get(&out[5], tj) != (u < w ? u : w);
            }
        }
        bad[1] = *(int64_t *)out[1].data != b;
        TAP_CHECK(!bad[0], "max over all axes into a sum (%d wrong)", bad[0]);
        TAP_CHECK(out[1].dtype == TG_INT64 && !bad[1], "int64 prod over all axes, last");
        TAP_CHECK(!bad[2], "a sum that is the recurrent state (%d wrong)", bad[2]);
        TAP_CHECK(out[3].ndim == 2 && out[3].shape[1] == 2 && !bad[3], "sum over axis 1 of 2-d rows (%d wrong)",
                  bad[3]);
        TAP_CHECK(!bad[4], "mean (%d wrong)", bad[4]);
        TAP_CHECK(out[5].ndim == 2 && out[5].shape[1] == 3 && !bad[5], "min over axis 0 of 2-d rows (%d wrong)",
                  bad[5]);
        for (int k = 0; k < 6; k++)
            free(out[k].data);
    }
    free(x.block), free(y.block), free(z.block);
}

/* A lambda whose result is 10^6 levels deep: typing, scheduling and
 * running it use no C recursion on the depth. */
static void test_deep(void)
{
    tg_error err;
    tg_term *acc = tg_symbol_cstr(ctx, "acc"), *one = tg_int(ctx, 1), *add = tg_symbol_cstr(ctx, "add");
    tg_term *r = acc;
    for (int i = 0; i < 1000000; i++) {
        tg_term *p[3] = {add, r, one};
        r = tg_list(ctx, 3, p, NULL);
    }
    char text[300];
    snprintf(text, sizeof text, "(scan (lambda (acc) (R)) (steps 3) (sequences) (outputs (sitsot 0 last))"
             " (non_sequences))");
    tg_term *t = tg_read_cstr(ctx, text, &err);
    /* put the deep term in place of R */
    tg_term *lam = tg_nth(t, 1), *parts[3] = {tg_nth(lam, 0), tg_nth(lam, 1), NULL};
    tg_term *res[1] = {r};
    parts[2] = tg_list(ctx, 1, res, NULL);
    tg_term *nl = tg_list(ctx, 3, parts, NULL);
    tg_term *all[6];
    for (int i = 0; i < 6; i++)
        all[i] = i == 1 ? nl : tg_nth(t, (size_t)i);
    tg_term *scan = tg_list(ctx, 6, all, NULL);
    tg_fn_options o = {.interpret = kt_path};
    tg_fn *fn = tg_fn_compile(ctx, 0, NULL, 1, &scan, &o, &err);
    tg_array out;
    memset(&out, 0, sizeof out);
    int rc = fn ? tg_fn_call(fn, NULL, &out, &err) : -1;
    TAP_CHECK(rc == 0 && out.dtype == TG_INT64 && *(int64_t *)out.data == 3000000,
              "a lambda 10^6 levels deep: %s", rc ? err.message : "3 steps of 10^6 additions");
    if (rc == 0)
        free(out.data);
    tg_fn_free(fn);
}

/* One function called on arrays of other sizes: the inner sizes, shapes,
 * workspace and rings follow each call. */
static void test_recall(void)
{
    tg_error err;
    const char *ins = "(input c float64 (k)) (input x float64 (m))";
    const char *scan =
        "(scan (lambda (ct acc xs) ((add (mul acc xs) ct) (mul acc 2))) (steps auto)"
        " (sequences (input c float64 (k))) (outputs (sitsot (alloc (const float64 0) m) last) (nitsot))"
        " (non_sequences (input x float64 (m))))";
    char outs[1000];
    snprintf(outs, sizeof outs, "%s (scan_output %s 1)", scan, scan);
    tg_fn *fn = kt_compile(ctx, ins, outs, NULL, kt_path, &err);
    TAP_CHECK(fn != NULL, "compiles: %s", fn ? "" : err.message);
    if (!fn)
        return;
    static const int64_t ks[3] = {20, 3, 50}, ms[3] = {7, 30, 1};
    int bad = 0, fails = 0;
    for (int call = 0; call < 3; call++) {
        int64_t k = ks[call], m = ms[call];
        kt_arr c, x;
        kt_make(&c, TG_FLOAT64, 1, &k, 0);
        kt_make(&x, TG_FLOAT64, 1, &m, 0);
        fill_ints(&c.a, -9, 10);
        fill_ints(&x.a, -1, 2);
        tg_array args[2] = {c.a, x.a}, out[2];
        memset(out, 0, sizeof out);
        if (tg_fn_call(fn, args, out, &err) < 0) {
            tap_diag("%s", err.message);
            fails++;
        } else {
            for (int64_t j = 0; j < m; j++) {
                long double acc = 0, xv = d_at(&x.a, j);
                for (int64_t t = 0; t < k; t++) {
                    int64_t tj[2] = {t, j};
                    bad += kt_get(&out[1], tj) != 2 * acc;
                    acc = acc * xv + d_at(&c.a, t);
                }
                bad += d_at(&out[0], j) != (double)acc;
            }
            free(out[0].data), free(out[1].data);
        }
        free(c.block), free(x.block);
    }
    TAP_CHECK(!fails && !bad, "three calls of other sizes (%d failed, %d wrong)", fails, bad);
    tg_fn_free(fn);
}

static void test_schedule(void)
{
    tg_error err;
    tg_fn *fn = kt_compile(ctx, "(input x float64 (n))",
                           "(scan (lambda (xt acc) ((add acc (exp xt)))) (steps n) (sequences (input x float64 (n)))"
                           " (outputs (sitsot 0.0)) (non_sequences))",
                           NULL, kt_path, &err);
    char *s = fn ? tg_print(tg_fn_schedule(fn), NULL) : NULL;
    TAP_CHECK(s && strstr(s, "(scan (out") && strstr(s, "(steps n) (body (schedule (inputs (xt float64 ())"),
              "the schedule shows the scan step and its body: %s", s ? s : err.message);
    free(s);
    tg_fn_free(fn);
}

/* (last N) outputs hold the last N rows of the stacked ones, in their
 * order: a vector sitsot, a 0-d mitsot (carried in locals by the compiled
 * loop) and a nitsot, forwards and backwards, over a symbolic number of
 * steps; compared with the stacked outputs' last rows of the same step. */
static void test_lastn(int back)
{
    tg_error err;
    char outs[3000];
    const char *ins = "(input x float64 (n 3))";
#define LASTN_SCAN(A, B, C) \
    "(scan (lambda (xt h u v) ((add (mul h 0.5) xt) (add u (mul 0.25 v) (sum xt all)) (mul (sum h all) xt))) " \
    "(steps auto) (sequences (input x float64 (n 3))) (outputs (sitsot (alloc 0.0 3)" A ") " \
    "(mitsot (alloc 0.5 2) (taps -2 -1)" B ") (nitsot" C ")) (non_sequences)%s)"
    const char *opt = back ? " backwards" : "";
    char kept[1000], whole[1000];
    int nk = snprintf(kept, sizeof kept, LASTN_SCAN(" (last 3)", " (last 2)", " (last 4)"), opt);
    int nw = snprintf(whole, sizeof whole, LASTN_SCAN("", "", ""), opt);
#undef LASTN_SCAN
    int no = snprintf(outs, sizeof outs,
             "(scan_output %s 0) (scan_output %s 1) (scan_output %s 2)"
             " (subtensor (scan_output %s 0) (slice -3 none none)) (subtensor (scan_output %s 1) (slice -2 none none))"
             " (subtensor (scan_output %s 2) (slice -4 none none))",
             kept, kept, kept, whole, whole, whole);
    if (!TAP_CHECK(nk > 0 && (size_t)nk < sizeof kept && nw > 0 && (size_t)nw < sizeof whole && no > 0 &&
                       (size_t)no < sizeof outs,
                   "(last N) outputs: the expressions fit their buffers"))
        return;
    tg_fn *fn = kt_compile(ctx, ins, outs, NULL, kt_path, &err);
    TAP_CHECK(fn != NULL, "(last N) outputs compile: %s", fn ? "" : err.message);
    if (!fn)
        return;
    int64_t sh[2] = {9, 3};
    kt_arr x;
    kt_make(&x, TG_FLOAT64, 2, sh, 1);
    kt_fill(&x.a, -2, 2);
    tg_array out[6];
    memset(out, 0, sizeof out);
    int rc = tg_fn_call(fn, &x.a, out, &err);
    int bad = 0, shape = 1;
    static const int64_t rows[3] = {3, 2, 4};
    for (int k = 0; rc == 0 && k < 3; k++) {
        shape &= out[k].ndim >= 1 && out[k].shape[0] == rows[k] && kt_count(&out[k]) == kt_count(&out[k + 3]);
        int64_t idx[TG_MAXDIM] = {0};
        if (shape)
            do
                bad += kt_get(&out[k], idx) != kt_get(&out[k + 3], idx);
            while (kt_next(out[k].ndim, out[k].shape, idx));
    }
    TAP_CHECK(rc == 0 && shape && !bad, "(last 3), (last 2), (last 4)%s: the stacked outputs' last rows (%d wrong)%s%s",
              back ? " backwards" : "", bad, rc ? ": " : "", rc ? err.message : "");
    for (int k = 0; rc == 0 && k < 6; k++)
        free(out[k].data);
    free(x.block);
    tg_fn_free(fn);
}

/* (inplace 0): the final value goes into INIT's buffer, a slot of the
 * workspace or a caller's input not kept, and the values are those of
 * the scan without the marker. */
static void test_inplace(void)
{
    int64_t T = 7, H = 4, th[2] = {T, H};
    kt_arr x, h0, h1;
    kt_make(&x, TG_FLOAT64, 2, th, 0);
    kt_make(&h0, TG_FLOAT64, 1, &H, 0);
    kt_make(&h1, TG_FLOAT64, 1, &H, 0);
    kt_fill(&x.a, -1, 1);
    kt_fill(&h0.a, -1, 1);
    memcpy(h1.a.data, h0.a.data, (size_t)H * sizeof(double));
    const char *ins = "(input x float64 (t h)) (input h0 float64 (h))";
    static const char *const inits[2] = {"(exp (input h0 float64 (h)))", "(input h0 float64 (h))"};
    static const unsigned char kept[2] = {1, 0};
    for (int donated = 0; donated < 2; donated++) {
        char outs[2][600];
        tg_fn *fn[2];
        char *sched[2];
        tg_array out[2];
        tg_error err;
        for (int m = 0; m < 2; m++) {
            snprintf(outs[m], sizeof outs[m],
                     "(add 1 (scan (lambda (xt hp) ((tanh (add hp xt)))) (steps auto)"
                     " (sequences (input x float64 (t h))) (outputs (sitsot %s last)) (non_sequences)%s))",
                     inits[donated], m ? " (inplace 0)" : "");
            fn[m] = kt_compile(ctx, ins, outs[m], kept, kt_path, &err);
            sched[m] = fn[m] ? tg_print(tg_fn_schedule(fn[m]), NULL) : NULL;
            /* the caller's h0 is overwritten when donated: a fresh copy per call */
            memcpy(h0.a.data, h1.a.data, (size_t)H * sizeof(double));
            tg_array args[2] = {x.a, h0.a};
            memset(&out[m], 0, sizeof out[m]);
            if (!fn[m] || tg_fn_call(fn[m], args, &out[m], &err) < 0)
                tap_diag("%s: %s", outs[m], err.message);
        }
        int same = out[0].data && out[1].data;
        for (int64_t i = 0; same && i < H; i++)
            same = ((double *)out[0].data)[i] == ((double *)out[1].data)[i];
        if (!donated)
            TAP_CHECK(sched[0] && sched[1] && strstr(sched[0], "(slots 2)") && strstr(sched[1], "(slots 1)"),
                      "in place: the final value takes the slot of its initial value: %s", sched[1]);
        else
            TAP_CHECK(sched[1] && strstr(sched[1], "(inplace h0)") && !strstr(sched[0], "(inplace h0)"),
                      "in place: the final value is written in the caller's h0, not kept: %s", sched[1]);
        TAP_CHECK(same, "in place%s: the same values as without the marker", donated ? " (donated)" : "");
        for (int m = 0; m < 2; m++)
            free(sched[m]), free(out[m].data), tg_fn_free(fn[m]);
    }
    free(x.block), free(h0.block), free(h1.block);
}

/* The number of slots of the outer schedule printed in s (its last
 * "(slots N)"), or -1. */
static int outer_slots(const char *s)
{
    const char *p = NULL;
    for (const char *q = s; q && (q = strstr(q, "(slots ")); q++)
        p = q;
    return p ? atoi(p + 7) : -1;
}

/* In place beyond last sitsot outputs: a marked mitsot `last` output
 * takes its INIT's buffer (its final value in INIT's first row), and a
 * mitmot output its INIT's (the buffer starts as INIT: no copy), a slot
 * or a caller's input not kept; the values are those of the same scan
 * computed out of place (a marker left off, INIT kept). */
static void test_inplace_kinds(void)
{
    int64_t T = 6, H = 3, th[2] = {T, H}, fh[2] = {2, H}, B5 = T + 2;
    kt_arr x, f, f1, b, b1;
    kt_make(&x, TG_FLOAT64, 2, th, 0);
    kt_make(&f, TG_FLOAT64, 2, fh, 0);
    kt_make(&f1, TG_FLOAT64, 2, fh, 0);
    kt_make(&b, TG_FLOAT64, 1, &B5, 0);
    kt_make(&b1, TG_FLOAT64, 1, &B5, 0);
    kt_fill(&x.a, -1, 1);
    kt_fill(&f1.a, -1, 1);
    kt_fill(&b1.a, -1, 1);
    const char *ins = "(input x float64 (t h)) (input f float64 (2 h)) (input b float64 (u))";
    /* mitsot last: marked or not; mitmot: INIT kept (out of place) or not */
    static const char *const fmt[2] = {
        "(add 1 (scan (lambda (xt p q) ((tanh (add p (mul 0.5 q) xt)))) (steps auto)"
        " (sequences (input x float64 (t h))) (outputs (mitsot %s (taps -2 -1) last)) (non_sequences)%s))",
        "(mul 2 (scan (lambda (xt a c d) ((add c (mul a (sum xt all))) (add d a))) (steps auto)"
        " (sequences (input x float64 (t h))) (outputs (mitmot %s (taps 0 1 2) (out_taps 1 2))) (non_sequences)%s))"};
    static const char *const inits[2][2] = {{"(exp (input f float64 (2 h)))", "(input f float64 (2 h))"},
                                            {"(exp (input b float64 (u)))", "(input b float64 (u))"}};
    for (int kind = 0; kind < 2; kind++)
        for (int donated = 0; donated < 2; donated++) {
            tg_fn *fn[2];
            char *sched[2];
            tg_array out[2];
            tg_error err;
            for (int m = 0; m < 2; m++) {
                char outs[1600], sc[700];
                /* m = 0: out of place (no marker; INIT kept, and for the
                 * mitmot, read after the scan too) */
                snprintf(sc, sizeof sc, fmt[kind], inits[kind][donated], kind == 0 && m ? " (inplace 0)" : "");
                if (kind == 1 && !m)
                    snprintf(outs, sizeof outs, "(add %s (mul 0 %s %s))", sc, inits[kind][donated], sc);
                else
                    snprintf(outs, sizeof outs, "%s", sc);
                unsigned char kept[3] = {1, 1, 1};
                if (m)
                    kept[1 + kind] = 0;
                fn[m] = kt_compile(ctx, ins, outs, kept, kt_path, &err);
                sched[m] = fn[m] ? tg_print(tg_fn_schedule(fn[m]), NULL) : NULL;
                memcpy(f.a.data, f1.a.data, (size_t)(2 * H) * sizeof(double));
                memcpy(b.a.data, b1.a.data, (size_t)B5 * sizeof(double));
                tg_array args[3] = {x.a, f.a, b.a};
                memset(&out[m], 0, sizeof out[m]);
                if (!fn[m] || tg_fn_call(fn[m], args, &out[m], &err) < 0)
                    tap_diag("%s: %s", outs, err.message);
            }
            int64_t cnt = kind ? B5 : H;
            int same = out[0].data && out[1].data;
            for (int64_t i = 0; same && i < cnt; i++)
                same = ((double *)out[0].data)[i] == ((double *)out[1].data)[i];
            const char *what = kind ? "mitmot" : "mitsot last";
            if (!donated)
                TAP_CHECK(sched[0] && sched[1] && outer_slots(sched[0]) == 2 && outer_slots(sched[1]) == 1,
                          "in place, %s: the output takes the slot of its initial value: %s (out of place: %s)", what, sched[1], sched[0]);
            else
                TAP_CHECK(sched[1] && strstr(sched[1], kind ? "(inplace b)" : "(inplace f)") &&
                          !strstr(sched[0], "(inplace "),
                          "in place, %s: the output is written in the caller's input, not kept: %s", what, sched[1]);
            TAP_CHECK(same, "in place, %s%s: the same values as out of place", what, donated ? " (donated)" : "");
            for (int m = 0; m < 2; m++)
                free(sched[m]), free(out[m].data), tg_fn_free(fn[m]);
        }
    free(x.block), free(f.block), free(f1.block), free(b.block), free(b1.block);
}

/* Errors, each at compile time or at the call: the inputs, the outputs
 * (a scan), the arguments, what the message says. */
static void test_errors(void)
{
    int64_t five = 5, four = 4, three = 3, nm[2] = {5, 3};
    kt_arr a, b, c, d;
    kt_make(&a, TG_FLOAT64, 1, &five, 0);
    kt_make(&b, TG_FLOAT64, 1, &four, 0);
    kt_make(&c, TG_FLOAT64, 1, &three, 0);
    kt_make(&d, TG_FLOAT64, 2, nm, 0);
    enum { NONE, A, C, D, AB, AC, CA };
    tg_array args[][2] = {{{0}}, {a.a}, {c.a}, {d.a}, {a.a, b.a}, {a.a, c.a}, {c.a, a.a}};
    static const struct {
        const char *ins, *outs;
        int args;
        const char *want;
    } cases[] = {
        {"(input a float64 (5)) (input b float64 (4))",
         "(scan (lambda (p r q) ((add q p r))) (steps auto) "
         "(sequences (input a float64 (5)) (input b float64 (4))) (outputs (sitsot 0.0)) "
         "(non_sequences))",
         AB, "sequence 1 has 4 rows, sequence 0 has 5"},
        {"(input a float64 (n)) (input b float64 (m))",
         "(scan (lambda (p r q) ((add q p r))) (steps auto) "
         "(sequences (input a float64 (n)) (input b float64 (m))) (outputs (sitsot 0.0)) "
         "(non_sequences))",
         AB, "expected shape (n) with n = 5, got (4)"},
        {"(input a float64 (5))",
         "(scan (lambda (p q) ((add q p))) (steps 10) (sequences (input a float64 (5))) "
         "(outputs (sitsot 0.0)) (non_sequences))",
         AB, "10 steps, but the sequences have 5 rows"},
        {"(input a float64 (n)) (input c float64 (k))",
         "(scan (lambda (p q w) ((add q p))) (steps k) (sequences (input a float64 (n))) "
         "(outputs (sitsot 0.0)) (non_sequences (input c float64 (k))))",
         CA, "5 steps, but the sequences have 3 rows"},
        {"(input a float64 (1))",
         "(scan (lambda (u v) ((add u v))) (steps 3) (sequences) "
         "(outputs (mitsot (input a float64 (1)) (taps -2 -1))) (non_sequences))",
         AB, "output 0: taps reach back 2 steps but the initial value has 1 rows"},
        {"(input a float64 (n))",
         "(scan (lambda (u v) ((add u v))) (steps 3) (sequences) "
         "(outputs (mitsot (input a float64 (n)) (taps -2 -1))) (non_sequences))",
         AB, "output 0: taps reach back 2 steps but the initial value has 5 rows"},
        {"(input c float64 (3))",
         "(scan (lambda (h) ((sum h))) (steps 3) (sequences) "
         "(outputs (sitsot (input c float64 (3)))) (non_sequences))",
         C, "output 0 changes shape between steps: (3) before a step, () after"},
        {"(input a float64 (k)) (input c float64 (m))",
         "(scan (lambda (h w) ((alloc 1.0 m))) (steps 3) (sequences) "
         "(outputs (sitsot (input a float64 (k)))) (non_sequences (input c float64 (m))))",
         AC, "output 0 changes shape between steps: (5) before a step, (3) after"},
        {"",
         "(scan (lambda (h) ((mul h 0.5))) (steps 3) (sequences) "
         "(outputs (sitsot (const int64 1))) (non_sequences))",
         NONE, "output 0: the step gives float64, the initial value is int64"},
        /* a lambda sees only its parameters: an outer one is passed as a non-sequence */
        {"",
         "(scan (lambda (h) ((scan (lambda (g) ((add g h))) (steps 2) (sequences) "
         "(outputs (sitsot 0.0 last)) (non_sequences)))) (steps 3) (sequences) "
         "(outputs (sitsot 0.0)) (non_sequences))",
         NONE, "in h: not a parameter of the scan's lambda"},
        {"(input a float64 (5))",
         "(scan (lambda (h) ((add h 1))) (steps auto) (sequences (input a float64 (5))) "
         "(outputs (sitsot 0.0)) (non_sequences))",
         A, "the lambda has 1 parameters, the scan passes 2"},
        {"",
         "(scan (lambda (h) ((add g 1))) (steps 2) (sequences) (outputs (sitsot 0.0)) "
         "(non_sequences))",
         NONE, "in g: not a parameter of the scan's lambda"},
        {"",
         "(scan (lambda (float64) ((add float64 1))) (steps 2) (sequences) "
         "(outputs (sitsot 0.0)) (non_sequences))",
         NONE, "a parameter is a symbol that is no dtype or vocabulary name"},
        {"",
         "(scan (lambda (h) ((add h 1))) (steps 2) (sequences) "
         "(outputs (mitsot 0.0 (taps 1))) (non_sequences))",
         NONE, "a tap is a negative integer"},
        {"",
         "(scan (lambda (a b) ((add a b))) (steps 2) (sequences) "
         "(outputs (mitsot 0.0 (taps -1 -1))) (non_sequences))",
         NONE, "a tap is repeated"},
        {"(input c float64 (3))",
         "(scan (lambda (h) ((add h 1)) (until h)) (steps 2) (sequences) "
         "(outputs (sitsot (input c float64 (3)))) (non_sequences))",
         C, "the until condition must be 0-d"},
        {"",
         "(scan (lambda () ((const float64 1))) (steps 0) (sequences) "
         "(outputs (nitsot last)) (non_sequences))",
         NONE, "a (nitsot last) output of a scan of 0 steps has no value"},
        /* (last N): N rows of at most as many steps, no until */
        {"(input a float64 (5))",
         "(scan (lambda (p q) ((add q p))) (steps 3) (sequences (input a float64 (5))) "
         "(outputs (sitsot 0.0 (last 4))) (non_sequences))",
         A, "output 0 keeps the last 4 rows but the scan runs 3 steps"},
        {"(input c float64 (n))",
         "(scan (lambda (p q) ((add q p))) (steps auto) (sequences (input c float64 (n))) "
         "(outputs (sitsot 0.0 (last 4))) (non_sequences))",
         C, "output 0 keeps the last 4 rows but the scan runs 3 steps"},
        {"",
         "(scan (lambda (h) ((add h 1)) (until (gt h 1))) (steps 3) (sequences) "
         "(outputs (sitsot 0.0 (last 2))) (non_sequences))",
         NONE, "(last N) is not allowed with until"},
        {"",
         "(scan (lambda (h) ((add h 1))) (steps 3) (sequences) "
         "(outputs (sitsot 0.0 (last 0))) (non_sequences))",
         NONE, "(last N) keeps the final N rows: N is a positive integer"},
        {"(input a float64 (5))",
         "(grad (sum (scan (lambda (p q) ((mul q p))) (steps auto) (sequences (input a float64 (5))) "
         "(outputs (sitsot 1.0 (last 2))) (non_sequences)) all) (input a float64 (5)))",
         A, "it has a (last N) output"},
        {"",
         "(scan_output (scan (lambda () ((const float64 1))) (steps 2) (sequences) "
         "(outputs (nitsot)) (non_sequences)) 1)",
         NONE, "the scan has no such output"},
        {"(input d float64 (5 3))",
         "(scan (lambda (r) (r)) (steps auto) (sequences (input d float64 (5 3))))",
         D, "a scan is (scan (lambda"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        fails(cases[i].ins, cases[i].outs, cases[i].args == NONE ? NULL : args[cases[i].args],
              cases[i].want);
    free(a.block), free(b.block), free(c.block), free(d.block);
}

/* ==== MITMOT (gradscan) ======================================================
 * A buffer of steps + 2 rows of 3, a copy of B: step t reads rows t, t+1,
 * t+2 and writes row t+1 as b + a*x[t] and row t+2 as c + sin(a), both
 * computed before either is stored; against the same loop in C.  Static
 * and symbolic sizes (the row count checked at call time), zero steps. */
static void mitmot_ref(int64_t T, const tg_array *x, const tg_array *B, double *buf)
{
    for (int64_t r = 0; r < T + 2; r++)
        for (int64_t j = 0; j < 3; j++) {
            int64_t rj[2] = {r, j};
            buf[r * 3 + j] = (double)kt_get(B, rj);
        }
    for (int64_t t = 0; t < T; t++)
        for (int64_t j = 0; j < 3; j++) {
            int64_t tj[2] = {t, j};
            double a = buf[t * 3 + j], b = buf[(t + 1) * 3 + j], c = buf[(t + 2) * 3 + j];
            buf[(t + 1) * 3 + j] = b + a * (double)kt_get(x, tj);
            buf[(t + 2) * 3 + j] = c + sin(a);
        }
}

static void test_mitmot(int64_t T, int symbolic)
{
    int64_t xs[2] = {T, 3}, bs[2] = {T + 2, 3};
    kt_arr x, B;
    kt_make(&x, TG_FLOAT64, 2, xs, symbolic);
    kt_make(&B, TG_FLOAT64, 2, bs, symbolic);
    kt_fill(&x.a, -1, 1);
    kt_fill(&B.a, -1, 1);
    char ins[200], outs[600];
    if (symbolic)
        snprintf(ins, sizeof ins, "(input x float64 (t 3)) (input B float64 (r 3))");
    else
        snprintf(ins, sizeof ins, "(input x float64 (%lld 3)) (input B float64 (%lld 3))", (long long)T,
                 (long long)T + 2);
    const char *X = strstr(ins, "(input x"), *Bt = strstr(ins, "(input B");
    snprintf(outs, sizeof outs,
             "(scan (lambda (s a b c) ((add b (mul a s)) (add c (sin a)))) (steps auto) (sequences %.*s) "
             "(outputs (mitmot %s (taps 0 1 2) (out_taps 1 2))) (non_sequences))",
             (int)(Bt - X - 1), X, Bt);
    tg_array args[2] = {x.a, B.a}, out[1];
    tg_error err;
    int rc = run(ins, outs, args, out, 1, &err);
    TAP_CHECK(rc == 0, "mitmot, %lld steps%s, runs: %s", (long long)T, symbolic ? " (symbolic, strided)" : "",
              rc ? err.message : "");
    if (rc == 0) {
        double *buf = malloc(sizeof(double) * (size_t)(T + 2) * 3), worst = 0;
        mitmot_ref(T, &x.a, &B.a, buf);
        for (int64_t r = 0; r < T + 2; r++)
            for (int64_t j = 0; j < 3; j++) {
                int64_t rj[2] = {r, j};
                worst = fmax(worst, fabs((double)kt_get(&out[0], rj) - buf[r * 3 + j]));
            }
        TAP_CHECK(out[0].ndim == 2 && out[0].shape[0] == T + 2 && worst <= 1e-14,
                  "mitmot: the buffer after %lld steps, as the C loop (within %g)", (long long)T, worst);
        free(buf);
        free(out[0].data);
    }
    free(x.block), free(B.block);
}

static void test_mitmot_errors(void)
{
    int64_t xs[1] = {3}, bs[1] = {4};
    kt_arr x, B;
    kt_make(&x, TG_FLOAT64, 1, xs, 0);
    kt_make(&B, TG_FLOAT64, 1, bs, 0);
    tg_array args[2] = {x.a, B.a};
    const char *ins = "(input x float64 (3)) (input B float64 (r))";
    fails(ins, "(scan (lambda (s a b) ((add b (mul a s)))) (steps 3) (sequences (input x float64 (3))) "
               "(outputs (mitmot (input B float64 (r)) (taps 0 2) (out_taps 2))) (non_sequences))",
          args, "a mitmot buffer has steps + 2 rows (5), its initial value has 4");
    fails("(input x float64 (3)) (input B float64 (4))",
          "(scan (lambda (s a b) ((add b (mul a s)))) (steps 3) (sequences (input x float64 (3))) "
          "(outputs (mitmot (input B float64 (4)) (taps 0 2) (out_taps 2))) (non_sequences))",
          args, "a mitmot buffer has steps + 2 rows (5), its initial value has 4");
    fails(ins, "(scan (lambda (s a b) ((add b (mul a s)))) (steps 3) (sequences (input x float64 (3))) "
               "(outputs (mitmot (input B float64 (r)) (taps 0 1) (out_taps 1) last)) (non_sequences))",
          args, "a mitmot output is its whole buffer: it takes no last");
    fails(ins, "(scan (lambda (s a b) ((add b (mul a s)))) (steps 3) (sequences (input x float64 (3))) "
               "(outputs (mitmot (input B float64 (r)) (taps 0 -1) (out_taps 1))) (non_sequences))",
          args, "a mitmot tap is a non-negative integer");
    fails(ins, "(scan (lambda (s a b) ((add b (mul a s)))) (steps 3) (sequences (input x float64 (3))) "
               "(outputs (mitmot (input B float64 (r)) (taps 1 1) (out_taps 1))) (non_sequences))",
          args, "a tap is repeated");
    fails(ins, "(scan (lambda (s a) ((add a s))) (steps 3) (sequences (input x float64 (3))) "
               "(outputs (mitmot (input B float64 (r)) (taps 0) (out_taps))) (non_sequences))",
          args, "each list with at least one tap");
    fails(ins, "(scan (lambda (s a b) ((add b (mul a s)))) (steps 3) (sequences (input x float64 (3))) "
               "(outputs (mitmot (input B float64 (r)) (taps 0 1) (out_taps 1 2))) (non_sequences))",
          args, "one result per output (per out tap of a mitmot)");
    free(x.block), free(B.block);
}

/* ==== end of MITMOT ========================================================== */

int main(void)
{
    tg_error err;
    ctx = tg_ctx_new(&err);
    KT_EACH_PATH {
        test_cumsum();
        test_fibonacci();
        test_polynomial(0);
        test_polynomial(1);
        test_rnn();
        test_until();
        test_until_rows(TG_FLOAT64);
        test_until_rows(TG_INT32);
        test_backwards(0);
        test_backwards(1);
        test_dtypes();
        test_dots();
        test_counts();
        test_nested();
        test_reductions();
        test_deep();
        test_recall();
        test_schedule();
        test_inplace();
        test_inplace_kinds();
        test_lastn(0);
        test_lastn(1);
        test_errors();
        test_mitmot(7, 0);      /* MITMOT (gradscan) */
        test_mitmot(11, 1);
        test_mitmot(0, 1);
        test_mitmot_errors();
    }
    tg_ctx_free(ctx);
    return TAP_DONE();
}
