/* test_blas.c - OpenBLAS opened at first use (kernels/blas.c): the core
 * picked from synthetic cpuid feature sets, the ranks that decide when
 * OpenBLAS's own choice is replaced, the known-answer check against
 * wrong functions, and, each in a child process (the choice is made once
 * per process), the choice with a clean environment, with OpenBLAS's own
 * choice taken as Prescott, with that choice made to fail its check, a
 * user's OPENBLAS_CORETYPE, TGREL_BLAS_CORE=off, an OpenBLAS the program
 * loaded itself, no OpenBLAS at all (errors, no abort), a loop and a
 * scan with no product (which never open OpenBLAS), and the verbose
 * line; every child checks dot, GEMM and a scan's products against
 * hand-written loops. */
#include "config.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kt.h"     /* first: cblas.h defines I, a name kt.h uses */
#include "blas.h"

extern char **environ;

/* ---- the pick and the ranks ---------------------------------------------- */

static tgBl_cpu level(int n)
{
    tgBl_cpu c = {0};
    c.sse3 = n >= 1, c.ssse3 = n >= 2, c.sse41 = c.sse42 = n >= 3;
    c.avx = c.os_ymm = n >= 4;
    c.avx2 = c.fma = n >= 5;
    c.avx512f = c.avx512dq = c.avx512bw = c.avx512vl = c.os_zmm = n >= 6;
    c.avx512bf16 = n >= 7;
    return c;
}

static const char *pick_s(tgBl_cpu c)
{
    const char *p = tgBl_pick(&c);
    return p ? p : "(none)";
}

static void test_pick(void)
{
    static const char *const want[] = {"(none)", "Prescott", "Core2", "Nehalem", "Sandybridge", "Haswell",
                                       "SkylakeX", "Cooperlake"};
    for (int n = 0; n <= 7; n++)
        TAP_CHECK(strcmp(pick_s(level(n)), want[n]) == 0, "features of level %d: %s (%s)", n, want[n],
                  pick_s(level(n)));
    tgBl_cpu c = level(7);
    c.os_zmm = false;
    TAP_EQ_STR(pick_s(c), "Haswell", "AVX-512 the OS does not save: AVX2 kernels");
    c = level(5), c.os_ymm = false;
    TAP_EQ_STR(pick_s(c), "Nehalem", "AVX the OS does not save: SSE4.2 kernels");
    c = level(5), c.fma = false;
    TAP_EQ_STR(pick_s(c), "Sandybridge", "AVX2 without FMA: AVX kernels");
    const char *part[] = {"F", "DQ", "BW", "VL"};
    for (int i = 0; i < 4; i++) {
        c = level(6);
        bool *b[] = {&c.avx512f, &c.avx512dq, &c.avx512bw, &c.avx512vl};
        *b[i] = false;
        TAP_CHECK(strcmp(pick_s(c), "Haswell") == 0, "AVX-512 without %s: AVX2 kernels", part[i]);
    }
    c = level(5), c.avx512bf16 = true;
    TAP_EQ_STR(pick_s(c), "Haswell", "BF16 without AVX-512 F/DQ/BW/VL: AVX2 kernels");
    /* the processor of the issue (cpuid family 6 model 207), as its
     * cpuid leaves 1 and 7 report it, and an AMD Zen 3 */
    tgBl_cpu emr = level(7), zen3 = level(5);
    TAP_EQ_STR(pick_s(emr), "Cooperlake", "family 6 model 207: Cooperlake");
    TAP_CHECK(tgBl_better("Cooperlake", "Prescott"), "it replaces OpenBLAS 0.3.21's Prescott there");
    TAP_EQ_STR(pick_s(zen3), "Haswell", "Zen 3: Haswell");
    TAP_CHECK(!tgBl_better("Haswell", "Zen"), "which does not replace OpenBLAS's Zen (same level, tuned)");
}

static void test_rank(void)
{
    TAP_CHECK(tgBl_rank("Prescott") < tgBl_rank("Core2") && tgBl_rank("Core2") < tgBl_rank("Nehalem") &&
                  tgBl_rank("Nehalem") < tgBl_rank("Sandybridge") && tgBl_rank("Sandybridge") < tgBl_rank("Haswell") &&
                  tgBl_rank("Haswell") < tgBl_rank("SkylakeX") && tgBl_rank("SkylakeX") < tgBl_rank("Cooperlake") &&
                  tgBl_rank("Cooperlake") < tgBl_rank("SapphireRapids"),
              "generations rank in order");
    TAP_EQ_INT(tgBl_rank("skylakex"), tgBl_rank("SkylakeX"), "names compare without case");
    TAP_EQ_INT(tgBl_rank("ARMV8"), 0, "a core not known ranks 0");
    TAP_EQ_INT(tgBl_rank(NULL), 0, "no core ranks 0");
    TAP_CHECK(tgBl_better("SkylakeX", "Prescott"), "SkylakeX replaces Prescott");
    TAP_CHECK(tgBl_better("Haswell", "Sandybridge"), "Haswell replaces Sandybridge");
    TAP_CHECK(!tgBl_better("Haswell", "Haswell"), "a pick equal to OpenBLAS's choice changes nothing");
    TAP_CHECK(!tgBl_better("Cooperlake", "SapphireRapids"), "a newer OpenBLAS's better choice stays");
    TAP_CHECK(!tgBl_better("SkylakeX", "ARMV8"), "a core not known is never replaced");
    TAP_CHECK(!tgBl_better(NULL, "Prescott"), "no pick changes nothing");
}

/* ---- the check against wrong functions ------------------------------------- */

static tgBl_fns real;

static void wrong_dgemm(const enum CBLAS_ORDER o, const enum CBLAS_TRANSPOSE ta, const enum CBLAS_TRANSPOSE tb,
                        const blasint m, const blasint n, const blasint k, const double alpha, const double *a,
                        const blasint lda, const double *b, const blasint ldb, const double beta, double *c,
                        const blasint ldc)
{
    real.dgemm(o, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    if (m > 100)    /* only the larger product: every other one passes */
        c[(size_t)(m - 1) * ldc + n - 1] += 1;
}

static float wrong_sdot(const blasint n, const float *x, const blasint incx, const float *y, const blasint incy)
{
    return real.sdot(n, x, incx, y, incy) * (1 + 0x1p-20f);
}

static void wrong_dgemv(const enum CBLAS_ORDER o, const enum CBLAS_TRANSPOSE t, const blasint m, const blasint n,
                        const double alpha, const double *a, const blasint lda, const double *x, const blasint incx,
                        const double beta, double *y, const blasint incy)
{
    (void)incx;     /* an increment ignored, as a broken kernel might */
    real.dgemv(o, t, m, n, alpha, a, lda, x, 1, beta, y, incy);
}

static void test_check(void)
{
    tg_error err;
    const tgBl_fns *f = tgBl_get(&err);
    TAP_CHECK(f != NULL, "OpenBLAS loads (%s)", f ? "ok" : err.message);
    if (!f)
        return;
    real = *f;
    char what[80] = "";
    TAP_EQ_INT(tgBl_check(&real, what, sizeof what), 1, "the library in use passes the check");
    tgBl_fns w = real;
    w.dgemm = wrong_dgemm;
    TAP_EQ_INT(tgBl_check(&w, what, sizeof what), 0, "one wrong element of one dgemm fails it");
    TAP_EQ_STR(what, "dgemm 131x127x263", "and the failing product is named");
    w = real, w.sdot = wrong_sdot;
    TAP_EQ_INT(tgBl_check(&w, what, sizeof what), 0, "an sdot off by one part in 10^6 fails it");
    TAP_EQ_STR(what, "sdot 101", "named");
    w = real, w.dgemv = wrong_dgemv;
    TAP_EQ_INT(tgBl_check(&w, what, sizeof what), 0, "a dgemv ignoring its increment fails it");
    TAP_EQ_STR(what, "dgemv 61x47 A^T", "named");
}

/* ---- a child: one first use, then products against loops ------------------- */

static double rnd(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return (double)(*s >> 8 & 0xffff) / 32768.0 - 1;
}

/* out (m x n, float64) of a compiled or interpreted function of the
 * inputs named in ins (text), float64 data in d[i]. */
static int run(tg_ctx *ctx, const char *ins, const char *out, int interp, tg_array *in, tg_array *o)
{
    tg_error err;
    tg_fn *fn = kt_compile(ctx, ins, out, NULL, interp, &err);
    int rc = fn ? tg_fn_call(fn, in, o, &err) : -1;
    if (rc < 0)
        fprintf(stderr, "test_blas: %s\n", err.message);
    tg_fn_free(fn);
    return rc;
}

static bool near(double got, double want)
{
    return fabs(got - want) <= 1e-12 * (1 + fabs(want));
}

/* 2 A B + C (a GEMM), A^T y (a transposed gemv), x . y (a dot), and a
 * 13-unit RNN scan h = tanh(W h + x_t) of 7 steps, on both paths. */
static const char *products_ok(void)
{
    enum { M = 45, K = 37, N = 29, H = 13, T = 7 };
    static double A[M * K], B[K * N], C[M * N], G[M * N], y[M], x[K], W[H * H], X[T * H], h0[H], Hs[T * H];
    unsigned s = 7;
    for (int i = 0; i < M * K; i++)
        A[i] = rnd(&s);
    for (int i = 0; i < K * N; i++)
        B[i] = rnd(&s);
    for (int i = 0; i < M * N; i++)
        C[i] = rnd(&s);
    for (int i = 0; i < M; i++)
        y[i] = rnd(&s);
    for (int i = 0; i < H * H; i++)
        W[i] = rnd(&s) * 0.3;
    for (int i = 0; i < T * H; i++)
        X[i] = rnd(&s);
    for (int i = 0; i < H; i++)
        h0[i] = rnd(&s);
    tg_error err;
    tg_ctx *ctx = tg_ctx_new(&err);
    const char *bad = NULL;
    int64_t sa[2] = {M, K}, sb[2] = {K, N}, sc[2] = {M, N}, sy = M, sx = K, sw[2] = {H, H}, sX[2] = {T, H}, sh = H;
    for (int interp = 0; interp < 2 && !bad; interp++) {
        tg_array in[3], o;
        tg_array_init(&in[0], TG_FLOAT64, 2, sa, A);
        tg_array_init(&in[1], TG_FLOAT64, 2, sb, B);
        tg_array_init(&in[2], TG_FLOAT64, 2, sc, C);
        tg_array_init(&o, TG_FLOAT64, 2, sc, G);
        if (run(ctx, "(input a float64 (45 37)) (input b float64 (37 29)) (input c float64 (45 29))",
                "(add (mul 2 (dot (input a float64 (45 37)) (input b float64 (37 29)))) (input c float64 (45 29)))",
                interp, in, &o) < 0)
            bad = "gemm failed";
        for (int i = 0; i < M && !bad; i++)
            for (int j = 0; j < N && !bad; j++) {
                double w = C[i * N + j];
                for (int p = 0; p < K; p++)
                    w += 2 * A[i * K + p] * B[p * N + j];
                if (!near(G[i * N + j], w))
                    bad = "gemm differs from the loop";
            }
        tg_array_init(&in[1], TG_FLOAT64, 1, &sy, y);
        tg_array_init(&o, TG_FLOAT64, 1, &sx, x);
        if (!bad && run(ctx, "(input a float64 (45 37)) (input y float64 (45))",
                        "(dot (transpose (input a float64 (45 37))) (input y float64 (45)))", interp, in, &o) < 0)
            bad = "gemv failed";
        for (int j = 0; j < K && !bad; j++) {
            double w = 0;
            for (int i = 0; i < M; i++)
                w += A[i * K + j] * y[i];
            if (!near(x[j], w))
                bad = "gemv differs from the loop";
        }
        double d = 0, dw = 0;
        tg_array_init(&in[0], TG_FLOAT64, 1, &sy, y);
        tg_array_init(&o, TG_FLOAT64, 0, NULL, &d);
        if (!bad && run(ctx, "(input y float64 (45))", "(dot (input y float64 (45)) (input y float64 (45)))", interp,
                        in, &o) < 0)
            bad = "dot failed";
        for (int i = 0; i < M; i++)
            dw += y[i] * y[i];
        if (!bad && !near(d, dw))
            bad = "dot differs from the loop";
        tg_array_init(&in[0], TG_FLOAT64, 2, sX, X);
        tg_array_init(&in[1], TG_FLOAT64, 2, sw, W);
        tg_array_init(&in[2], TG_FLOAT64, 1, &sh, h0);
        tg_array_init(&o, TG_FLOAT64, 2, sX, Hs);
        if (!bad && run(ctx, "(input x float64 (7 13)) (input w float64 (13 13)) (input h0 float64 (13))",
                        "(scan (lambda (xt hp W) ((tanh (add (dot W hp) xt)))) (steps auto)"
                        " (sequences (input x float64 (7 13))) (outputs (sitsot (input h0 float64 (13))))"
                        " (non_sequences (input w float64 (13 13))))",
                        interp, in, &o) < 0)
            bad = "scan failed";
        double h[H], hn[H];
        memcpy(h, h0, sizeof h);
        for (int t = 0; t < T && !bad; t++) {
            for (int i = 0; i < H; i++) {
                double w = X[t * H + i];
                for (int j = 0; j < H; j++)
                    w += W[i * H + j] * h[j];
                hn[i] = tanh(w);
            }
            memcpy(h, hn, sizeof h);
            for (int i = 0; i < H && !bad; i++)
                if (!near(Hs[t * H + i], h[i]))
                    bad = "scan differs from the loop";
        }
    }
    tg_ctx_free(ctx);
    return bad ? bad : "right";
}

/* A fused loop and a scan with no product in them, compiled and run:
 * true when both computed what they should. */
static bool elementwise_and_scan(void)
{
    tg_error err;
    tg_ctx *ctx = tg_ctx_new(&err);
    double x[5] = {1, 2, 3, 4, 5}, y[5], c[5];
    int64_t n = 5;
    tg_array in, o;
    tg_array_init(&in, TG_FLOAT64, 1, &n, x);
    tg_array_init(&o, TG_FLOAT64, 1, &n, y);
    bool ok = run(ctx, "(input x float64 (5))", "(mul (exp (input x float64 (5))) 2)", 0, &in, &o) == 0;
    for (int i = 0; ok && i < 5; i++)
        ok = near(y[i], 2 * exp(x[i]));
    tg_array_init(&o, TG_FLOAT64, 1, &n, c);
    ok = ok && run(ctx, "(input x float64 (5))",
                   "(scan (lambda (xt acc) ((add acc xt))) (steps auto) (sequences (input x float64 (5)))"
                   " (outputs (sitsot (const float64 0))) (non_sequences))", 0, &in, &o) == 0;
    for (int i = 0; ok && i < 5; i++)
        ok = c[i] == (i + 1) * (i + 2) / 2;
    tg_ctx_free(ctx);
    return ok;
}

static void tamper(tgBl_fns *f)
{
    real = *f;
    f->dgemm = wrong_dgemm;
}

/* The first use as mode says, then one line for the parent. */
static int child(const char *mode)
{
    tg_error err;
    tgBl_opts o = {NULL, false, false, "Prescott", NULL, NULL};
    const tgBl_fns *f;
    if (strcmp(mode, "missing") == 0) {     /* no library: errors, twice, and no abort */
        o.soname = "libtgrel-no-such-blas.so.0";
        f = tgBl_init(&o, &err);
        printf("missing init=%s products=%s\n", f ? "loaded" : err.message, products_ok());
        return 0;
    }
    if (strcmp(mode, "nodot") == 0) {       /* work without a product opens nothing */
        printf("nodot loaded=%d\n", elementwise_and_scan() ? (int)tgBl_status_get(&(tgBl_status){0}) : -1);
        return 0;
    }
    if (strcmp(mode, "prescott") == 0) {
        f = tgBl_init(&o, &err);
    } else if (strcmp(mode, "tamper") == 0) {
        o.tamper = tamper;
        f = tgBl_init(&o, &err);
    } else {
        if (strcmp(mode, "present") == 0 &&     /* the program's own OpenBLAS, its core set */
            (setenv("OPENBLAS_CORETYPE", "Prescott", 1) || !dlopen(TGREL_BLAS_SONAME, RTLD_NOW | RTLD_GLOBAL) ||
             unsetenv("OPENBLAS_CORETYPE")))
            return 2;
        f = tgBl_get(&err);
    }
    tgBl_status st;
    if (!f || !tgBl_status_get(&st)) {
        printf("failed %s\n", f ? "no status" : err.message);
        return 1;
    }
    const char *env = getenv("OPENBLAS_CORETYPE");
    printf("origin=%d core=%s own=%s picked=%s env=%s products=%s\n", (int)st.origin, st.core,
           st.own[0] ? st.own : "-", st.picked[0] ? st.picked : "-", env ? env : "-", products_ok());
    return 0;
}

/* ---- the parent: each mode in a child --------------------------------------- */

typedef struct result {
    char line[512];     /* what the child wrote on stdout */
    int origin;
    char core[32], own[32], picked[32], env[32], products[64];
    char err[2048];     /* what the child wrote on stderr */
} result;

static void slurp(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, len - 1, f) : 0;
    buf[n] = 0;
    if (f)
        fclose(f);
}

/* Runs this program in mode with the environment less OPENBLAS_CORETYPE
 * and TGREL_BLAS_*, plus set ("NAME=VALUE" or NULL). */
static bool spawn(const char *mode, const char *set, result *r)
{
    char out[] = "/tmp/tgrel-blas-out-XXXXXX", errf[] = "/tmp/tgrel-blas-err-XXXXXX";
    int fo = mkstemp(out), fe = mkstemp(errf);
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = calloc(n + 2, sizeof *env);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "OPENBLAS_CORETYPE=", 18) != 0 && strncmp(environ[i], "TGREL_BLAS_", 11) != 0)
            env[k++] = environ[i];
    if (set)
        env[k++] = (char *)set;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fo, 1);
    posix_spawn_file_actions_adddup2(&fa, fe, 2);
    char self[] = "/proc/self/exe";
    char *argv[] = {self, (char *)mode, NULL};
    pid_t pid;
    int status = -1;
    bool ok = fo >= 0 && fe >= 0 && posix_spawn(&pid, self, &fa, NULL, argv, env) == 0 &&
              waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    posix_spawn_file_actions_destroy(&fa);
    free(env);
    char *line = r->line;
    slurp(out, line, sizeof r->line);
    slurp(errf, r->err, sizeof r->err);
    close(fo), close(fe), unlink(out), unlink(errf);
    memset(r->core, 0, sizeof r->core);
    if (ok && strcmp(mode, "missing") != 0 && strcmp(mode, "nodot") != 0 && sscanf(line, "origin=%d core=%31s own=%31s picked=%31s env=%31s products=%63[^\n]", &r->origin,
                     r->core, r->own, r->picked, r->env, r->products) != 6)
        ok = false;
    if (!ok)
        tap_diag("mode %s: status %d, output %s, stderr %s", mode, status, line, r->err);
    return ok;
}

static void test_children(void)
{
    tgBl_cpu c;
    const char *pick = tgBl_cpu_read(&c) ? tgBl_pick(&c) : NULL;
    result r;
    if (!pick) {
        tap_diag("no x86 core to pick on this processor: the choice is not exercised");
        return;
    }
    tap_diag("this processor: %s", pick);
    /* a clean environment: replaced exactly when the pick ranks higher */
    if (TAP_CHECK(spawn("env", NULL, &r), "a first use in a clean environment")) {
        tap_diag("OpenBLAS's own choice %s, core in use %s", r.own, r.core);
        bool better = tgBl_better(r.picked, r.own);
        TAP_EQ_STR(r.picked, pick, "tgrel picked what cpuid says");
        TAP_EQ_INT(r.origin, better ? TGBL_CHOSEN : TGBL_OWN, "its pick replaced OpenBLAS's exactly when better");
        TAP_EQ_STR(r.core, better ? pick : r.own, "the core in use");
        TAP_EQ_STR(r.env, "-", "OPENBLAS_CORETYPE stays unset");
        TAP_EQ_STR(r.products, "right", "dot, gemv, GEMM and a scan against loops");
    }
    /* OpenBLAS's choice taken as Prescott: the replacement runs here too */
    if (tgBl_better(pick, "Prescott") && TAP_CHECK(spawn("prescott", NULL, &r), "OpenBLAS's choice taken as Prescott")) {
        TAP_EQ_INT(r.origin, TGBL_CHOSEN, "the pick replaced it");
        TAP_CHECK(strcasecmp(r.core, pick) == 0, "the core in use is the pick (%s)", r.core);
        TAP_EQ_STR(r.env, "-", "OPENBLAS_CORETYPE, set for the load only, is unset again");
        TAP_EQ_STR(r.products, "right", "products against loops");
    }
    if (tgBl_better(pick, "Prescott") && TAP_CHECK(spawn("tamper", NULL, &r), "the pick's dgemm made wrong")) {
        TAP_EQ_INT(r.origin, TGBL_FALLBACK, "the check failed and OpenBLAS's own choice is used");
        TAP_EQ_STR(r.core, r.own, "its core");
        TAP_CHECK(strstr(r.err, "known-answer check (dgemm 131x127x263)") != NULL, "one line on stderr says so: %s",
                  r.err);
        TAP_EQ_STR(r.env, "-", "OPENBLAS_CORETYPE is unset again");
        TAP_EQ_STR(r.products, "right", "products against loops: the wrong dgemm is gone");
    }
    if (TAP_CHECK(spawn("env", "OPENBLAS_CORETYPE=Prescott", &r), "a user's OPENBLAS_CORETYPE=Prescott")) {
        TAP_EQ_INT(r.origin, TGBL_USER, "the user's core is taken");
        TAP_EQ_STR(r.core, "Prescott", "and runs");
        TAP_EQ_STR(r.env, "Prescott", "the variable is left as it was");
        TAP_EQ_STR(r.products, "right", "products against loops");
    }
    if (TAP_CHECK(spawn("env", "TGREL_BLAS_CORE=off", &r), "TGREL_BLAS_CORE=off")) {
        TAP_EQ_INT(r.origin, TGBL_OFF, "no choice is made");
        TAP_EQ_STR(r.products, "right", "products against loops");
    }
    if (TAP_CHECK(spawn("present", NULL, &r), "an OpenBLAS the program loaded itself (on Prescott)")) {
        TAP_EQ_INT(r.origin, TGBL_PRESENT, "is used as it is");
        TAP_EQ_STR(r.core, "Prescott", "with its core");
        TAP_EQ_STR(r.products, "right", "products against loops");
    }
    if (TAP_CHECK(spawn("nodot", NULL, &r), "a process that runs no product")) {
        TAP_EQ_STR(r.line, "nodot loaded=0\n", "computes its loop and scan and never opens OpenBLAS");
        if (strcmp(r.line, "nodot loaded=0\n") != 0)
            tap_diag("stderr: %s", r.err);
    }
    if (TAP_CHECK(spawn("missing", NULL, &r), "no OpenBLAS to open: the process goes on")) {
        TAP_CHECK(strstr(r.line, "init=kernels: cannot load OpenBLAS (libtgrel-no-such-blas.so.0") != NULL,
                  "the first use reports it: %s", r.line);
        TAP_CHECK(strstr(r.line, "products=gemm failed") != NULL, "a GEMM call fails with an error");
        TAP_CHECK(strstr(r.err, "test_blas: kernels: cannot load OpenBLAS") != NULL,
                  "the call's error names the library: %s", r.err);
    }
    if (TAP_CHECK(spawn("env", "TGREL_BLAS_VERBOSE=1", &r), "TGREL_BLAS_VERBOSE=1")) {
        char want[64];
        snprintf(want, sizeof want, "tgrel: BLAS core %s (", r.core);
        TAP_CHECK(strstr(r.err, want) != NULL, "one line names the core: %s", r.err);
    }
}

int main(int argc, char **argv)
{
    if (argc > 1)
        return child(argv[1]);
    test_pick();
    test_rank();
    test_check();
    test_children();
    return TAP_DONE();
}
