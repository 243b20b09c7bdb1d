/* test_rowblocks.c - the row blocks (interp_rows.c, rowpar.c): the two
 * products of a block against plain loops (float64 and float32, ragged
 * sizes, a row stride wider than the row, the rows given in pieces
 * or whole); the team runs every member once a phase (threads of its
 * own, and OpenMP's once the compiled loops loaded it); and the logistic
 * regression's loss and gradients, at a size that runs on threads,
 * against a long double loop on both paths, the same bits on 1, 2 and
 * 16 threads; and the training step of bench/train (w and b shared,
 * updated in the same call; X an input, or a shared variable read
 * through subtensor) runs as row blocks, within rounding of a long
 * double loop over two steps, the same bits on 1, 2 and 16 threads. */
#include "config.h"

#include <dlfcn.h>

#include "kt.h"
#include "../../kernels/rowpar.h"

static tg_ctx *ctx;
static tg_rules *lib;

/* ---- the products ------------------------------------------------------- */

/* rows_dot and cols_dot of b rows of f (row stride lda) against plain
 * loops in long double, within n products' rounding of the sum of
 * absolute values. */
static void check_products(int64_t b, int64_t f, int64_t lda, int single)
{
    double *A = malloc(sizeof(double) * (size_t)(b * lda + 1)), *w = malloc(sizeof(double) * (size_t)f);
    double *g = malloc(sizeof(double) * (size_t)b), *y = malloc(sizeof(double) * (size_t)b);
    double *t = malloc(sizeof(double) * (size_t)f), *t2 = malloc(sizeof(double) * (size_t)f);
    float *As = malloc(sizeof(float) * (size_t)(b * lda + 1)), *ws = malloc(sizeof(float) * (size_t)f);
    float *gs = malloc(sizeof(float) * (size_t)b), *ys = malloc(sizeof(float) * (size_t)b);
    float *ts = malloc(sizeof(float) * (size_t)f);
    for (int64_t i = 0; i < b * lda; i++)
        As[i] = (float)(A[i] = kt_unif(-1, 1));
    for (int64_t j = 0; j < f; j++)
        ws[j] = (float)(w[j] = kt_unif(-2, 2));
    for (int64_t i = 0; i < b; i++)
        gs[i] = (float)(g[i] = kt_unif(-2, 2));
    if (single) {
        tgRp_rows_dot_s(b, f, As, lda, ws, ys);
        memset(ts, 0, sizeof(float) * (size_t)f);
        tgRp_cols_dot_s(b, f, As, lda, gs, ts);
    } else {
        tgRp_rows_dot_d(b, f, A, lda, w, y);
        memset(t, 0, sizeof(double) * (size_t)f);
        tgRp_cols_dot_d(b, f, A, lda, g, t);
        /* the rows in pieces of 1, 2, 3, ... rows (the pieces of a row
         * block), into t2 */
        memset(t2, 0, sizeof(double) * (size_t)f);
        for (int64_t i = 0, p = 1; i < b; i += p, p++)
            tgRp_cols_dot_d(b - i < p ? b - i : p, f, A + i * lda, lda, g + i, t2);
    }
    double eps = single ? 6e-8 : 1.2e-16, worst = 0;
    for (int64_t i = 0; i < b; i++) {
        long double s = 0, sa = 0;
        for (int64_t j = 0; j < f; j++) {
            long double p = single ? (long double)As[i * lda + j] * ws[j] : (long double)A[i * lda + j] * w[j];
            s += p, sa += fabsl(p);
        }
        double got = single ? ys[i] : y[i];
        worst = fmax(worst, (double)(fabsl(got - s) / ((long double)(f + 1) * eps * sa + 1e-300L)));
    }
    for (int64_t j = 0; j < f; j++) {
        long double s = 0, sa = 0;
        for (int64_t i = 0; i < b; i++) {
            long double p = single ? (long double)As[i * lda + j] * gs[i] : (long double)A[i * lda + j] * g[i];
            s += p, sa += fabsl(p);
        }
        double got = single ? ts[j] : t[j];
        worst = fmax(worst, (double)(fabsl(got - s) / ((long double)(b + 1) * eps * sa + 1e-300L)));
    }
    TAP_CHECK(worst <= 1, "%s, %lld rows of %lld (stride %lld): both products within rounding of a long double "
              "loop (%.2g of the bound)", single ? "float32" : "float64", (long long)b, (long long)f,
              (long long)lda, worst);
    if (!single)
        TAP_CHECK(!memcmp(t, t2, sizeof(double) * (size_t)f), "%lld rows of %lld: A^T g in pieces of 1, 2, "
                  "3, ... rows gives the bits of one call", (long long)b, (long long)f);
    free(A), free(w), free(g), free(y), free(t), free(t2), free(As), free(ws), free(gs), free(ys), free(ts);
}

/* ---- the team ---------------------------------------------------------------- */

typedef struct { int runs[8]; int phase; } teamrec;

static void team_fn(void *ud, int tid)
{
    teamrec *r = ud;
    r->runs[tid] += 1 + r->phase * 10;   /* each member writes its own slot */
}

static void check_team(const char *which)
{
    teamrec r = {{0}, 0};
    tgRp_team *t = tgRp_start(4, team_fn, &r);
    int n = tgRp_size(t);
    if (!TAP_CHECK(t != NULL && n == 4, "a team of 4 starts (%d)", n))
        return;
    tgRp_phase(t);
    r.phase = 1;
    tgRp_phase(t);
    tgRp_stop(t);
    int ok = 1;
    for (int i = 0; i < 4; i++)
        ok &= r.runs[i] == 12;
    TAP_CHECK(ok, "%s: every member ran each of two phases once, after the phase's data was set (%d %d %d %d)",
              which, r.runs[0], r.runs[1], r.runs[2], r.runs[3]);
    TAP_CHECK(tgRp_start(1, team_fn, &r) == NULL && tgRp_size(NULL) == 1, "a team of one is the caller alone");
}

/* ---- the logistic regression on threads ------------------------------------- */

static void (*set_threads)(int);

static void find_openmp(void)
{
    void *h = dlopen("libgomp.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (h)
        *(void **)&set_threads = dlsym(h, "omp_set_num_threads");
}

static void check_logreg_threads(void)
{
    /* 5.9 MB of X: past the size that runs on threads; 23 blocks, the last
     * one short */
    enum { NR = 20011, NF = 37 };
    static const char ins[] = KT_LOGREG_INS, outs[] = KT_LOGREG_OUTS;
    tg_error err;
    tg_term *it[4], *ot[3];
    kt_read_terms(ctx, ins, it, &err);
    kt_read_terms(ctx, outs, ot, &err);
    tg_fn_options o = {.interpret = kt_path, .rules = lib};
    tg_fn *fn = tg_fn_compile(ctx, 4, it, 3, ot, &o, &err);
    if (!TAP_CHECK(fn != NULL, "the logistic regression compiles (%s)", fn ? "" : err.message))
        return;
    double *X = malloc(sizeof(double) * NR * NF), *y = malloc(sizeof(double) * NR), w[NF], b = -0.3;
    for (long i = 0; i < (long)NR * NF; i++)
        X[i] = kt_unif(-1, 1);
    for (int i = 0; i < NR; i++)
        y[i] = kt_rand() % 2;
    for (int j = 0; j < NF; j++)
        w[j] = kt_unif(-1, 1);
    int64_t sx[2] = {NR, NF};
    tg_array in[4], out[3];
    tg_array_init(&in[0], TG_FLOAT64, 2, sx, X);
    tg_array_init(&in[1], TG_FLOAT64, 1, &sx[0], y);
    tg_array_init(&in[2], TG_FLOAT64, 1, &sx[1], w);
    tg_array_init(&in[3], TG_FLOAT64, 0, NULL, &b);
    long double rdw[NF], rdb, rloss = kt_ref_logreg(NR, NF, X, NF, y, w, b, rdw, &rdb);
    double got[3][NF + 2];
    static const int threads[3] = {1, 2, 16};
    tg_array_init(&out[0], TG_FLOAT64, 0, NULL, &got[0][0]);
    tg_array_init(&out[1], TG_FLOAT64, 1, &sx[1], &got[0][1]);
    tg_array_init(&out[2], TG_FLOAT64, 0, NULL, &got[0][NF + 1]);
    int ok = tg_fn_call(fn, in, out, &err) == 0;
    if (!set_threads)
        find_openmp();  /* loaded by the first compiled call */
    for (int t = 0; t < 3; t++) {
        if (set_threads)
            set_threads(threads[t]);
        tg_array_init(&out[0], TG_FLOAT64, 0, NULL, &got[t][0]);
        tg_array_init(&out[1], TG_FLOAT64, 1, &sx[1], &got[t][1]);
        tg_array_init(&out[2], TG_FLOAT64, 0, NULL, &got[t][NF + 1]);
        ok &= tg_fn_call(fn, in, out, &err) == 0;
    }
    if (set_threads)
        set_threads(2);
    double worst = fabs((double)((got[0][0] - rloss) / rloss));
    worst = fmax(worst, fabs((double)((got[0][NF + 1] - rdb) / (fabsl(rdb) + 1e-3))));
    for (int j = 0; j < NF; j++)
        worst = fmax(worst, fabs((double)((got[0][1 + j] - rdw[j]) / (fabsl(rdw[j]) + 1e-3))));
    TAP_CHECK(ok && worst <= 1e-12, "%s, logistic regression %d x %d: within %.2g of a long double loop",
              kt_path ? "interpreter" : "compiled", NR, NF, worst);
    TAP_CHECK(ok && !memcmp(got[0], got[1], sizeof got[0]) && !memcmp(got[0], got[2], sizeof got[0]),
              "%s, logistic regression %d x %d: the same bits on 1, 2 and 16 threads%s",
              kt_path ? "interpreter" : "compiled", NR, NF, set_threads ? "" : " (no OpenMP: one thread)");
    free(X), free(y);
    tg_fn_free(fn);
}

/* ---- a training step with its updates ---------------------------------- */

/* One step of the bench's logistic regression in long double: the loss
 * at w, b, then w and b moved by -0.5 times the gradient. */
static long double ref_step(long n, long f, const double *X, long lda, const double *y, long double *w,
                            long double *b)
{
    long double loss = 0, gb = 0, gw[64] = {0};
    for (long i = 0; i < n; i++) {
        long double z = *b;
        for (long j = 0; j < f; j++)
            z += (long double)X[i * lda + j] * w[j];
        loss += (z > 0 ? z : 0) + log1pl(expl(-fabsl(z))) - y[i] * z;
        long double r = 1 / (1 + expl(-z)) - y[i];
        gb += r;
        for (long j = 0; j < f; j++)
            gw[j] += r * X[i * lda + j];
    }
    for (long j = 0; j < f; j++)
        w[j] -= 0.5L * gw[j] / n;
    *b -= 0.5L * gb / n;
    return loss / n;
}

/* The training step as bench/train and examples/train_logreg.tgs write
 * it: the loss an output, w and b shared variables updated by
 * w - 0.5 grad(loss, w) in the same call.  The updates run after the
 * second product, so the whole window runs as row blocks: X read once
 * (counted), the loss and the new w and b within rounding of a long
 * double loop over two steps, the same bits on 1, 2 and 16 threads.
 * sub: X a shared variable of more rows, its first NR read through
 * subtensor (as the example reads its training rows). */
static void check_train_step(int sub)
{
    enum { NR = 20011, NF = 37, NX = NR + 57 };
    char ins[200], z[400], loss[1600], upd[4200];
    if (sub) {
        snprintf(ins, sizeof ins, "(input y float64 (n))");
        snprintf(z, sizeof z, "(add (dot (subtensor (shared X float64 (%d %d)) (slice 0 %d none)) "
                 "(shared w float64 (%d))) (shared b float64 ()))", NX, NF, NR, NF);
    } else {
        snprintf(ins, sizeof ins, "(input X float64 (n f)) (input y float64 (n))");
        snprintf(z, sizeof z, "(add (dot (input X float64 (n f)) (shared w float64 (f))) (shared b float64 ()))");
    }
    snprintf(loss, sizeof loss, "(mean (sub (add (maximum %s 0) (log1p (exp (neg (abs %s))))) "
             "(mul (input y float64 (n)) %s)))", z, z, z);
    const char *W = sub ? "(shared w float64 (37))" : "(shared w float64 (f))";
    snprintf(upd, sizeof upd, "((%s (sub %s (mul 0.5 (grad %s %s)))) ((shared b float64 ()) (sub (shared b "
             "float64 ()) (mul 0.5 (grad %s (shared b float64 ()))))))", W, W, loss, W, loss);
    double *X = malloc(sizeof(double) * NX * NF), *y = malloc(sizeof(double) * NR), w0[NF], b0 = 0.1;
    for (long i = 0; i < (long)NX * NF; i++)
        X[i] = kt_unif(-1, 1);
    for (int i = 0; i < NR; i++)
        y[i] = X[i * NF] + 0.5 * X[i * NF + 1] > 0;
    for (int j = 0; j < NF; j++)
        w0[j] = kt_unif(-0.3, 0.3);
    tg_error err;
    int64_t sx[2] = {sub ? NX : NR, NF}, ny = NR;
    tg_array aw, ab, ax;
    tg_array_init(&aw, TG_FLOAT64, 1, &sx[1], w0);
    tg_array_init(&ab, TG_FLOAT64, 0, NULL, &b0);
    tg_array_init(&ax, TG_FLOAT64, 2, sx, X);
    tg_shared *sw = tg_shared_new(ctx, "w", &aw, &err), *sb = tg_shared_new(ctx, "b", &ab, &err);
    tg_shared *sX = sub ? tg_shared_new(ctx, "X", &ax, &err) : NULL;
    tg_term *it[2], *ot[1];
    size_t ni = kt_read_terms(ctx, ins, it, &err);
    kt_read_terms(ctx, loss, ot, &err);
    tg_fn_options o = {.interpret = kt_path, .rules = lib, .updates = tg_read_cstr(ctx, upd, &err)};
    tg_fn *fn = sw && sb && (sX || !sub) && o.updates ? tg_fn_compile(ctx, ni, it, 1, ot, &o, &err) : NULL;
    const char *what = sub ? "the training step on a subtensor of shared X" : "the training step";
    if (!TAP_CHECK(fn != NULL, "%s with its updates compiles (%s)", what, fn ? "" : err.message))
        goto done;
    tg_array in[2];
    if (sub) {
        tg_array_init(&in[0], TG_FLOAT64, 1, &ny, y);
    } else {
        tg_array_init(&in[0], TG_FLOAT64, 2, sx, X);
        tg_array_init(&in[1], TG_FLOAT64, 1, &ny, y);
    }
    /* the reference: two steps from w0, b0 */
    long double rw[NF], rb = b0, rl[2];
    for (int j = 0; j < NF; j++)
        rw[j] = w0[j];
    for (int k = 0; k < 2; k++)
        rl[k] = ref_step(NR, NF, X, NF, y, rw, &rb);
    double got[3][2 + NF + 1];  /* per thread count: two losses, w, b */
    static const int threads[3] = {1, 2, 16};
    int ok = 1;
    long windows = 0;
    if (!set_threads)
        find_openmp();
    for (int t = 0; t < 3; t++) {
        if (set_threads)
            set_threads(threads[t]);
        ok &= tg_shared_set(sw, &aw, &err) == 0 && tg_shared_set(sb, &ab, &err) == 0;
        long w0n = tgRp_windows();
        for (int k = 0; k < 2; k++) {
            tg_array out;
            tg_array_init(&out, TG_FLOAT64, 0, NULL, &got[t][k]);
            ok &= tg_fn_call(fn, in, &out, &err) == 0;
        }
        windows += tgRp_windows() - w0n;
        tg_array gw, gb;
        tg_array_init(&gw, TG_FLOAT64, 1, &sx[1], &got[t][2]);
        tg_array_init(&gb, TG_FLOAT64, 0, NULL, &got[t][2 + NF]);
        ok &= tg_shared_get(sw, &gw, &err) == 0 && tg_shared_get(sb, &gb, &err) == 0;
    }
    if (set_threads)
        set_threads(2);
    TAP_CHECK(ok && windows == 6, "%s, %s: each call runs its products and loops as row blocks "
              "(%ld windows in 6 calls)", kt_path ? "interpreter" : "compiled", what, windows);
    double worst = 0;
    for (int k = 0; k < 2; k++)
        worst = fmax(worst, fabs((double)((got[0][k] - rl[k]) / rl[k])));
    for (int j = 0; j < NF; j++)
        worst = fmax(worst, fabs((double)((got[0][2 + j] - rw[j]) / (fabsl(rw[j]) + 1e-3))));
    worst = fmax(worst, fabs((double)((got[0][2 + NF] - rb) / (fabsl(rb) + 1e-3))));
    TAP_CHECK(ok && worst <= 1e-12, "%s, %s: two steps' losses, w and b within %.2g of a long double loop",
              kt_path ? "interpreter" : "compiled", what, worst);
    TAP_CHECK(ok && !memcmp(got[0], got[1], sizeof got[0]) && !memcmp(got[0], got[2], sizeof got[0]),
              "%s, %s: the same bits on 1, 2 and 16 threads%s", kt_path ? "interpreter" : "compiled", what,
              set_threads ? "" : " (no OpenMP: one thread)");
    tg_fn_free(fn);
done:
    tg_shared_free(sw), tg_shared_free(sb), tg_shared_free(sX);
    free(X), free(y);
}

int main(void)
{
    static const int64_t bs[] = {1, 3, 4, 5, 64, 67};
    static const int64_t fs[] = {1, 7, 8, 9, 16, 37, 100};
    for (size_t i = 0; i < sizeof bs / sizeof *bs; i++)
        for (size_t j = 0; j < sizeof fs / sizeof *fs; j++)
            for (int single = 0; single < 2; single++) {
                check_products(bs[i], fs[j], fs[j], single);
                if (i == 5)
                    check_products(bs[i], fs[j], fs[j] + 3, single);
            }
    check_team("threads of the team's own");
    ctx = tg_ctx_new(NULL);
    lib = kt_rules(ctx, "(include \"all.rules\")", "<test>");
    TAP_CHECK(lib != NULL, "the rule library loads");
    if (lib)
        KT_EACH_PATH {
            check_logreg_threads();
            check_train_step(0);
            check_train_step(1);
        }
    /* the compiled loops have loaded OpenMP: its threads run the phases */
    void *gomp = dlopen("libgomp.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (gomp) {
        check_team("OpenMP's threads");
        dlclose(gomp);
    }
    tg_rules_free(lib);
    tg_ctx_free(ctx);
    return TAP_DONE();
}
