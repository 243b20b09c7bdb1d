/* test_scandot.c - products inside scan steps (doc/scan.md, Small
 * products): dot of every shape (matrix-vector, vector-matrix,
 * matrix-matrix, vector-vector), float64 and float32, static and
 * symbolic sizes, below and above the inline threshold, on the compiled
 * path with the products inline, compiled with them forced to BLAS
 * (-DTGK_DOT_INLINE_MAX=0), and in the interpreter, each against a long
 * double loop written here; and the generated source, which holds the
 * inline kernel and the BLAS call behind one size test. */
#include "config.h"

#include "kt.h"
#include "buf.h"
#include "codegen.h"
#include "schedule.h"
#include "tensor.h"

static tg_ctx *ctx;

/* The library's default flags (doc/kernels.md), to add a -D to. */
#ifdef TGREL_OPENMP_FLAG
#define T_OMP " " TGREL_OPENMP_FLAG
#else
#define T_OMP " -fopenmp-simd"
#endif
#ifdef HAVE_LIBMVEC
#define T_MVEC " -DTGK_MVEC"
#else
#define T_MVEC ""
#endif
#define T_FLAGS "-O2 -march=native -fno-math-errno -ffp-contract=off" T_OMP T_MVEC

enum { GEMV, GEVM, GEMM, VDOT };
static const char *const kind_name[] = {"matrix-vector", "vector-matrix", "matrix-matrix", "vector-vector"};
/* variants: compiled (products inline when small), compiled with BLAS
 * forced, the interpreter */
enum { INLINE, BLAS, INTERP };
static const char *const variant_name[] = {"compiled", "compiled, BLAS forced", "interpreter"};

static tg_fn *compile(const char *ins, const char *outs, int variant, tg_error *err)
{
    tg_term *it[4], *ot[1];
    size_t ni = kt_read_terms(ctx, ins, it, err);
    kt_read_terms(ctx, outs, ot, err);
    tg_fn_options o = {.interpret = variant == INTERP,
                       .cflags = variant == BLAS ? T_FLAGS " -DTGK_DOT_INLINE_MAX=0" : NULL};
    return tg_fn_compile(ctx, ni, it, 1, ot, &o, err);
}

/* The scan of kind k over T steps, n units, as input and output texts;
 * sizes static (numbers) or symbolic. */
static void texts(int k, const char *dt, int n, int T, int stat, char *ins, char *outs, size_t len)
{
    char N[24], TT[24];
    snprintf(N, sizeof N, stat ? "%d" : "n", n);
    snprintf(TT, sizeof TT, stat ? "%d" : "t", T);
    const char *step = k == GEMV ? "(tanh (add (dot W hp) xt))"
                     : k == GEVM ? "(tanh (add (dot hp W) xt))"
                     : k == GEMM ? "(tanh (add (dot W hp) W))"
                                 : "(add hp (dot xt W))";
    /* GEMM: the state is a matrix; VDOT: W is a vector, the state 0-d */
    char w[80], h0[80], x[80];
    snprintf(w, sizeof w, k == VDOT ? "(input w %s (%s))" : "(input w %s (%s %s))", dt, N, N);
    snprintf(h0, sizeof h0, k == GEMM ? "(input h0 %s (%s %s))" : k == VDOT ? "(input h0 %s ())" : "(input h0 %s (%s))",
             dt, N, N);
    snprintf(x, sizeof x, "(input x %s (%s %s))", dt, TT, N);
    snprintf(ins, len, "%s %s %s", x, w, h0);
    snprintf(outs, len, "(scan (lambda (xt hp W) (%s)) (steps %s) (sequences %s) (outputs (sitsot %s))"
                        " (non_sequences %s))", step, TT, x, h0, w);
}

/* The same recurrence in long double; h: n (n*n for GEMM, 1 for VDOT)
 * values, updated in place. */
static void ref_step(int k, int n, const tg_array *W, const tg_array *X, int64_t t, long double *h)
{
    long double nh[64 * 64];
    int rows = k == GEMM ? n : 1, cols = k == VDOT ? 1 : n;
    for (int r = 0; r < rows; r++)
        for (int j = 0; j < cols; j++) {
            long double s = 0;
            for (int q = 0; q < n; q++) {
                int64_t wi[2] = {k == GEVM ? q : k == GEMM ? r : j, k == GEVM ? j : q}, xi[2] = {t, q};
                long double a = k == VDOT ? kt_get(W, &wi[1]) : kt_get(W, wi);
                long double b = k == GEMM ? h[q * n + j] : k == VDOT ? kt_get(X, xi) : h[q];
                s += a * b;
            }
            int64_t xj[2] = {t, j}, wj[2] = {r, j};
            nh[r * cols + j] = k == GEMM   ? tanhl(s + kt_get(W, wj))
                             : k == VDOT ? h[0] + s
                                         : tanhl(s + kt_get(X, xj));
        }
    memcpy(h, nh, sizeof(long double) * (size_t)(rows * cols));
}

/* The largest difference from the reference, relative to 1 + |value|;
 * -1 when the call fails. */
static double run_case(int k, tg_dtype d, int n, int T, int stat, int variant, int *native)
{
    const char *dt = d == TG_FLOAT64 ? "float64" : "float32";
    char ins[600], outs[1400];
    texts(k, dt, n, T, stat, ins, outs, sizeof ins);
    int64_t tn[2] = {T, n}, nn[2] = {n, n};
    kt_arr x, w, h0;
    kt_make(&x, d, 2, tn, 0);
    kt_make(&w, d, k == VDOT ? 1 : 2, k == VDOT ? &nn[1] : nn, 0);
    kt_make(&h0, d, k == GEMM ? 2 : k == VDOT ? 0 : 1, k == GEMM ? nn : &nn[1], 0);
    kt_fill(&x.a, -1, 1);
    kt_fill(&w.a, -1.5 / n, 1.5 / n);
    kt_fill(&h0.a, -1, 1);
    tg_error err;
    tg_fn *fn = compile(ins, outs, variant, &err);
    tg_array args[3] = {x.a, w.a, h0.a}, out;
    memset(&out, 0, sizeof out);
    double worst = -1;
    if (fn && tg_fn_call(fn, args, &out, &err) == 0) {
        static long double h[64 * 64];
        int per = k == GEMM ? n * n : k == VDOT ? 1 : n;
        for (int i = 0; i < per; i++) {
            int64_t idx[2] = {i / n, i % n};
            h[i] = kt_get(&h0.a, k == GEMM ? idx : &idx[1]);
        }
        worst = 0;
        for (int64_t t = 0; t < T; t++) {
            ref_step(k, n, &w.a, &x.a, t, h);
            for (int i = 0; i < per; i++) {
                int64_t idx[3] = {t, k == GEMM ? i / n : i, i % n};
                long double v = kt_get(&out, idx);
                double e = (double)(fabsl(v - h[i]) / (1 + fabsl(h[i])));
                worst = e > worst ? e : worst;
            }
        }
        free(out.data);
    } else {
        tap_diag("%s", err.message);
    }
    *native = fn && tg_fn_native(fn);
    tg_fn_free(fn);
    free(x.block), free(w.block), free(h0.block);
    return worst;
}

static void test_products(void)
{
    /* sizes: small; on either side of the threshold for matrix-matrix
     * (40^3 = 64000 multiply-adds inline, 41^3 not) */
    static const struct { int k, n, T; } cases[] = {
        {GEMV, 5, 9}, {GEMV, 64, 12}, {GEVM, 7, 9}, {GEVM, 33, 6}, {GEMM, 3, 5}, {GEMM, 40, 3},
        {GEMM, 41, 3}, {VDOT, 1, 5}, {VDOT, 37, 9},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
        for (int f32 = 0; f32 < 2; f32++)
            for (int stat = 0; stat < 2; stat++)
                for (int v = 0; v < 3; v++) {
                    int native;
                    double e = run_case(cases[c].k, f32 ? TG_FLOAT32 : TG_FLOAT64, cases[c].n, cases[c].T, stat, v,
                                        &native);
                    double tol = f32 ? 2e-5 : 1e-13;
                    TAP_CHECK(e >= 0 && e < tol && native == (v != INTERP),
                              "%s dot, %s, n = %d, %s sizes, %s: within %g (native %d)", kind_name[cases[c].k],
                              f32 ? "float32" : "float64", cases[c].n, stat ? "static" : "symbolic", variant_name[v],
                              e, native);
                }
}

/* The generated source of a scan of kind k: the inline kernel's call
 * and the BLAS call, behind the size test. */
static void test_source(void)
{
    for (int stat = 0; stat < 2; stat++) {
        char ins[600], outs[1400];
        texts(GEMV, "float64", 64, 10, stat, ins, outs, sizeof ins);
        tg_error err;
        tg_term *it[4], *ot[1];
        size_t ni = kt_read_terms(ctx, ins, it, &err);
        kt_read_terms(ctx, outs, ot, &err);
        tgV_graph *g = tgV_build(ctx, ni, it, 1, ot, &err);
        tgH_sched *s = g ? tgH_schedule(g, NULL, &err) : NULL;
        size_t len;
        char *src = s ? tgJ_source(s, &len) : NULL;
        TAP_CHECK(src && strstr(src, "if (m * k * nn <= TGK_DOT_INLINE_MAX)") &&
                      strstr(src, "tgk_igemv_double(m, k,") && strstr(src, "((tgk_gemv_double)fp[0])"),
                  "%s sizes: the source calls the inline gemv below the threshold, BLAS above",
                  stat ? "static" : "symbolic");
        /* static sizes reach the loop as constants */
        TAP_CHECK(src && (!stat || strstr(src, "int64_t m = (int64_t)64, k = (int64_t)64")),
                  "%s sizes: m and k %s", stat ? "static" : "symbolic", stat ? "are the constants 64" : "from z[]");
        free(src);
    }
}

/* ==== rank-one updates (outer products accumulated per step) ============= */

static const char ger_step[] = "(add acc (mul (dimshuffle gt (perm 0 x)) (dimshuffle ht (perm x 0))))";

/* acc_t = acc_{t-1} + g_t h_t^T over T steps (m x n), sizes static or
 * symbolic; bad: an inf in g or h where the other has a zero (the
 * product is then NaN there, which BLAS ger may skip).  The largest difference
 * from a long double loop relative to 1 + |value| (NaN where the loop
 * has NaN counts as equal; -1 when the call fails). */
static double run_ger(tg_dtype d, int m, int n, int T, int stat, int variant, int bad, int *native, char **sched)
{
    const char *dt = d == TG_FLOAT64 ? "float64" : "float32";
    char G[80], H[80], A[80], ins[300], outs[900];
    if (stat)
        snprintf(G, sizeof G, "(input g %s (%d %d))", dt, T, m), snprintf(H, sizeof H, "(input h %s (%d %d))", dt, T, n),
            snprintf(A, sizeof A, "(input a0 %s (%d %d))", dt, m, n);
    else
        snprintf(G, sizeof G, "(input g %s (t m))", dt), snprintf(H, sizeof H, "(input h %s (t n))", dt),
            snprintf(A, sizeof A, "(input a0 %s (m n))", dt);
    snprintf(ins, sizeof ins, "%s %s %s", G, H, A);
    snprintf(outs, sizeof outs, "(scan (lambda (gt ht acc) (%s)) (steps auto) (sequences %s %s)"
                                " (outputs (sitsot %s)) (non_sequences))", ger_step, G, H, A);
    int64_t tm[2] = {T, m}, tn[2] = {T, n}, mn[2] = {m, n};
    kt_arr g, h, a0;
    kt_make(&g, d, 2, tm, 0), kt_make(&h, d, 2, tn, 0), kt_make(&a0, d, 2, mn, 0);
    kt_fill(&g.a, -1, 1), kt_fill(&h.a, -1, 1), kt_fill(&a0.a, -1, 1);
    if (bad) {      /* inf times 0 both ways round, at steps 1 and 2 */
        int64_t g1[2] = {1, m / 2}, h1[2] = {1, 0}, g2[2] = {2, 0}, h2[2] = {2, n / 2};
        kt_set(&g.a, g1, INFINITY), kt_set(&h.a, h1, 0);
        kt_set(&g.a, g2, 0), kt_set(&h.a, h2, -INFINITY);
    }
    tg_error err;
    tg_fn *fn = compile(ins, outs, variant, &err);
    tg_array args[3] = {g.a, h.a, a0.a}, out;
    memset(&out, 0, sizeof out);
    double worst = -1;
    if (fn && tg_fn_call(fn, args, &out, &err) == 0) {
        long double *acc = malloc(sizeof *acc * (size_t)(m * n));
        for (int i = 0; i < m * n; i++) {
            int64_t ij[2] = {i / n, i % n};
            acc[i] = kt_get(&a0.a, ij);
        }
        worst = 0;
        for (int64_t t = 0; t < T; t++)
            for (int i = 0; i < m * n; i++) {
                int64_t ti[2] = {t, i / n}, tj[2] = {t, i % n}, at[3] = {t, i / n, i % n};
                long double p = kt_get(&g.a, ti) * kt_get(&h.a, tj);
                acc[i] += d == TG_FLOAT32 ? (float)p : p;
                if (d == TG_FLOAT32)
                    acc[i] = (float)acc[i];
                long double v = kt_get(&out, at);
                double e = isnan(acc[i]) ? (isnan(v) ? 0 : INFINITY)
                         : isinf(acc[i]) ? (v == acc[i] ? 0 : INFINITY) : (double)(fabsl(v - acc[i]) / (1 + fabsl(acc[i])));
                worst = e > worst ? e : worst;
            }
        free(acc);
        free(out.data);
    } else {
        tap_diag("%s", err.message);
    }
    *native = fn && tg_fn_native(fn);
    if (sched)
        *sched = fn ? tg_print(tg_fn_schedule(fn), NULL) : NULL;
    tg_fn_free(fn);
    free(g.block), free(h.block), free(a0.block);
    return worst;
}

static void test_ger(void)
{
    /* 300 x 256 = 76800 multiply-adds: above the threshold, BLAS ger */
    static const struct { int m, n, T, bad; } cases[] = {{5, 7, 6, 0}, {64, 64, 4, 0}, {300, 256, 3, 0}, {6, 5, 4, 1},
                                                         {300, 256, 3, 1}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
        for (int f32 = 0; f32 < 2; f32++)
            for (int stat = 0; stat < 2; stat++)
                for (int v = 0; v < 3; v++) {
                    int native;
                    char *sched = NULL;
                    double e = run_ger(f32 ? TG_FLOAT32 : TG_FLOAT64, cases[c].m, cases[c].n, cases[c].T, stat, v,
                                       cases[c].bad, &native, &sched);
                    TAP_CHECK(e >= 0 && e < (f32 ? 1e-6 : 1e-15) && native == (v != INTERP) && sched &&
                                  strstr(sched, "(ger gt ht acc)"),
                              "outer products accumulated, %s, %d x %d%s, %s sizes, %s: within %g, a ger step (native %d)",
                              f32 ? "float32" : "float64", cases[c].m, cases[c].n, cases[c].bad ? ", an inf times 0" : "",
                              stat ? "static" : "symbolic", variant_name[v], e, native);
                    free(sched);
                }
}

/* The update outside a scan, and a product also used elsewhere (the
 * views stay, the update still reads the vectors). */
static void test_ger_outer(void)
{
    const char *ins = "(input u float64 (m)) (input v float64 (n)) (input c float64 (m n))";
#define U "(input u float64 (m))"
#define V "(input v float64 (n))"
    const char *outs = "(add (input c float64 (m n)) (mul (dimshuffle " U " (perm 0 x)) (dimshuffle " V " (perm x 0))))"
                       " (mul (dimshuffle " V " (perm x 0)) 2.0)";
#undef U
#undef V
    int64_t m = 9, n = 4, mn[2] = {m, n};
    kt_arr u, v, c;
    kt_make(&u, TG_FLOAT64, 1, &m, 1), kt_make(&v, TG_FLOAT64, 1, &n, 1), kt_make(&c, TG_FLOAT64, 2, mn, 1);
    kt_fill(&u.a, -1, 1), kt_fill(&v.a, -1, 1), kt_fill(&c.a, -1, 1);
    for (int path = 0; path < 2; path++) {
        tg_error err;
        tg_term *it[4], *ot[2];
        size_t ni = kt_read_terms(ctx, ins, it, &err), no = kt_read_terms(ctx, outs, ot, &err);
        tg_fn_options o = {.interpret = path};
        tg_fn *fn = tg_fn_compile(ctx, ni, it, no, ot, &o, &err);
        tg_array args[3] = {u.a, v.a, c.a}, out[2];
        memset(out, 0, sizeof out);
        int rc = fn ? tg_fn_call(fn, args, out, &err) : -1;
        char *sched = fn ? tg_print(tg_fn_schedule(fn), NULL) : NULL;
        double worst = rc == 0 ? 0 : 1;
        for (int64_t i = 0; rc == 0 && i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                int64_t ij[2] = {i, j};
                long double want = kt_get(&c.a, ij) + (long double)(double)(kt_get(&u.a, &i) * kt_get(&v.a, &j));
                worst = fmax(worst, (double)fabsl(kt_get(&out[0], ij) - want));
            }
        if (rc < 0)
            tap_diag("%s", err.message);
        /* compiled, one fused loop (faster than the ger step's copy and
         * update); interpreted, the ger step (faster than its loop) */
        bool ger = sched && strstr(sched, "(ger u v c)"), loop = sched && strstr(sched, "(add c %");
        TAP_CHECK(rc == 0 && worst < 1e-15 && (path ? ger && !loop : loop && !ger),
                  "C + u v^T outside a scan, %s: %s, within %g of long double", path ? "interpreter" : "compiled",
                  path ? "a ger step" : "one fused loop", worst);
        free(sched);
        if (rc == 0)
            free(out[0].data), free(out[1].data);
        tg_fn_free(fn);
    }
    free(u.block), free(v.block), free(c.block);
}

/* The generated loop holds the inline update and the BLAS ger call. */
static void test_ger_source(void)
{
    const char *ins = "(input g float64 (t m)) (input h float64 (t n)) (input a0 float64 (m n))";
    char outs[600];
    snprintf(outs, sizeof outs, "(scan (lambda (gt ht acc) (%s)) (steps auto) (sequences (input g float64 (t m))"
                                " (input h float64 (t n))) (outputs (sitsot (input a0 float64 (m n)) last))"
                                " (non_sequences))", ger_step);
    tg_error err;
    tg_term *it[4], *ot[1];
    size_t ni = kt_read_terms(ctx, ins, it, &err);
    kt_read_terms(ctx, outs, ot, &err);
    tgV_graph *g = tgV_build(ctx, ni, it, 1, ot, &err);
    tgH_sched *s = g ? tgH_schedule(g, NULL, &err) : NULL;
    size_t len;
    char *src = s ? tgJ_source(s, &len) : NULL;
    TAP_CHECK(src && strstr(src, "tgk_iger_double(m, nn,") && strstr(src, "((tgk_ger_double)fp[6])") &&
                  !strstr(src, "dimshuffle"),
              "the scan's generated loop updates in place: inline below the threshold, BLAS ger above");
    free(src);
}

int main(void)
{
    tg_error err;
    ctx = tg_ctx_new(&err);
    test_products();
    test_source();
    test_ger();
    test_ger_outer();
    test_ger_source();
    tg_ctx_free(ctx);
    return TAP_DONE();
}
