/* test_scanopt.c - the Scan rewrites (patterns/lib/scan.rules) give the
 * values the graph gave before: each rewrite alone, then default, on the
 * compiled path and in the interpreter.  A case compiles its outputs
 * without rules and with a rule set running one scan_opt relation; the
 * rewrite must change the graph (checked with tg_rewrite on it), and the
 * results must agree. */
#include "kt.h"
#include "scan.h"
#include "schedule.h"
#include "tensor.h"

#include <malloc.h>
#include <math.h>

static tg_ctx *ctx;
static tg_rules *rs;

#define X "(input x float64 (n))"
#define Y "(input y float64 (n))"
#define W "(input w float64 ())"
#define F "(input f int64 (3))"
#define Z "(input z float64 (n 4))"
#define M "(input m float64 (4 4))"
#define V "(input v float64 (4))"
#define NIN 7

static const char ins[] = X " " Y " " W " " F " " Z " " M " " V;

typedef struct tcase {
    const char *rewriter;   /* what the rule set runs */
    const char *outs;       /* outputs, compiled with and without the rules */
} tcase;

/* an RNN over z's rows whose second output sums the outer products of
 * the rows and the states (a weight gradient's form) */
#define RNN_OUTER(ACC, OPT) \
    "(scan (lambda (zt hp acc M) ((tanh (add (dot M hp) zt)) (add acc " ACC "))) (steps auto) (sequences " Z ")" \
    " (outputs (sitsot " V ") (sitsot (alloc 0.0 4 4) last)) (non_sequences " M ")" OPT ")"
#define OUTER "(mul (dimshuffle zt (perm 0 x)) (dimshuffle hp (perm x 0)))"

#define RNN_KEEP \
    "(scan (lambda (zt hp M) ((tanh (add (dot M hp) zt)) (sigmoid (dot M hp)))) (steps 10) (sequences " Z ")" \
    " (outputs (sitsot " V ") (nitsot)) (non_sequences " M ") backwards)"

#define CUMSUM(INIT, OPT) \
    "(scan (lambda (a s) ((add s a))) (steps auto) (sequences " X ") (outputs (sitsot " INIT OPT ")) (non_sequences))"

static const tcase cases[] = {
    {"t-merge-inputs",
     "(scan (lambda (a b acc u v) ((add acc (mul a u) (mul b v)))) (steps auto) (sequences " X " " X ")"
     " (outputs (sitsot 0)) (non_sequences " W " " W "))"},
    {"t-drop-inputs",
     "(scan (lambda (a b acc u v) ((add acc (mul b u)))) (steps auto) (sequences " X " " Y ")"
     " (outputs (sitsot 0)) (non_sequences " W " (exp " W ")))"},
    {"t-fold-constants",
     "(scan (lambda (a acc c d) ((add acc (mul a c) d))) (steps auto) (sequences " X ")"
     " (outputs (sitsot 0)) (non_sequences 2 (const float64 1.5)))"},
    {"t-prune-taps",
     "(scan (lambda (a acc) ((exp a))) (steps auto) (sequences " X ") (outputs (sitsot 0)) (non_sequences))"
     " (scan (lambda (a b c) ((mod (add a c) 1000))) (steps 9) (sequences)"
     " (outputs (mitsot " F " (taps -3 -2 -1))) (non_sequences))"},
    /* the oldest tap goes: the initial value is sliced */
    {"t-prune-taps",
     "(scan (lambda (a b c) ((mod (add b (mul 2 c)) 1000))) (steps 9) (sequences)"
     " (outputs (mitsot " F " (taps -3 -2 -1))) (non_sequences))"},
    {"t-push-invariant",
     "(scan (lambda (a acc u) ((add acc (mul a (exp u)) (sqr u)))) (steps auto) (sequences " X ")"
     " (outputs (sitsot 0)) (non_sequences " W "))"},
    {"t-push-sequences",
     "(scan (lambda (a b acc) ((add acc (mul 2 (exp a)) (sqr b)))) (steps auto) (sequences " X " " Y ")"
     " (outputs (sitsot 0)) (non_sequences))"},
    {"t-drop-outputs",
     "(scan_output (scan (lambda (a s p) ((add s a) (mul p a))) (steps auto) (sequences " X ")"
     " (outputs (sitsot 0) (sitsot 1)) (non_sequences)) 1)"},
    {"t-merge-outputs",
     "(scan_output (scan (lambda (a s t) ((add s a) (add t a) (mul t 2))) (steps auto) (sequences " X ")"
     " (outputs (sitsot 0) (sitsot 0) (nitsot)) (non_sequences)) 1)"
     " (scan_output (scan (lambda (a s t) ((add s a) (add t a) (mul t 2))) (steps auto) (sequences " X ")"
     " (outputs (sitsot 0) (sitsot 0) (nitsot)) (non_sequences)) 2)"},
    {"t-last", "(subtensor " CUMSUM("0", "") " -1)"},
    {"t-merge",
     CUMSUM("0", "") " (scan (lambda (a s u) ((mul s (add a u)))) (steps auto) (sequences " X ")"
     " (outputs (sitsot 1)) (non_sequences " W "))"},
    {"t-inplace", CUMSUM("(exp " W ")", " last")},
    /* a mitsot last output: its final value in its INIT's first row */
    {"t-inplace",
     "(scan (lambda (a p q) ((add a p (mul 0.5 q)))) (steps auto) (sequences " X ")"
     " (outputs (mitsot (alloc (exp " W ") 2) (taps -2 -1) last)) (non_sequences))"},
    {"scan_opt", "(scan_output " CUMSUM("0", "") " 0) (scan_steps " CUMSUM("1", "") ")"},
    /* backwards, with until: the sequence work and the invariant work move out all the same */
    {"default",
     "(scan (lambda (a s u) ((add s (exp a) (sqr u))) (until (gt s 5))) (steps auto) (sequences " X ")"
     " (outputs (sitsot 0)) (non_sequences " W ") backwards)"
     " (scan_steps (scan (lambda (a s u) ((add s (exp a) (sqr u))) (until (gt s 5))) (steps auto)"
     " (sequences " X ") (outputs (sitsot 0)) (non_sequences " W ") backwards))"},
    /* a scan in a lambda: its invariant work leaves the inner loop */
    {"t-push-invariant",
     "(scan (lambda (row acc u) ((add acc (sum (scan (lambda (v c w) ((add c (mul v (exp w))))) (steps auto)"
     " (sequences row) (outputs (sitsot 0.0)) (non_sequences u)) all)))) (steps auto) (sequences " Z ")"
     " (outputs (sitsot 0.0)) (non_sequences " W "))"},
    /* sums over the steps after the loop: the outer products one GEMM,
     * forwards and backwards (the stacks paired in the same order) */
    {"t-push-sums", "(scan_output " RNN_OUTER(OUTER, "") " 1) (scan_output " RNN_OUTER(OUTER, "") " 0)"},
    {"t-push-sums", "(scan_output " RNN_OUTER("(mul 0.5 " OUTER ")", " backwards") " 1)"},
    /* a dot of a row by a non-sequence: the loop goes (PushOutDot1) */
    {"t-push-sums", "(scan (lambda (zt acc M) ((add acc (dot zt M)))) (steps auto) (sequences " Z ")"
     " (outputs (sitsot " V " last)) (non_sequences " M "))"},
    /* a dot of a state: stacked by a new output; the elementwise part stays */
    {"t-push-sums", "(scan_output " RNN_OUTER("(sum (dot M hp) (axes 0)) (exp (subtensor zt 0))", "") " 1)"},
    /* fewer steps than rows: z's first 5 rows; with a size symbol for
     * the steps, the rows stacked by the loop */
    {"t-push-sums",
     "(scan (lambda (zt acc M) ((add acc (dot M zt)))) (steps 5) (sequences " Z ")"
     " (outputs (sitsot " V " last)) (non_sequences " M "))"},
    {"t-push-sums",
     "(scan (lambda (zt acc M) ((add acc (dot M zt)))) (steps n) (sequences " Z ")"
     " (outputs (sitsot " V " last)) (non_sequences " M ") backwards)"},
    {"default", "(scan_output " RNN_OUTER(OUTER, " backwards") " 1)"},
    /* an output y_t = sigmoid(M h_t) after the loop: one matrix product
     * of the stacked states (read from the state's own output) */
    {"t-push-output",
     "(scan_output (scan (lambda (zt hp M) ((tanh (add (dot M hp) zt)) (sigmoid (dot M (tanh (add (dot M hp) zt))))))"
     " (steps auto) (sequences " Z ") (outputs (sitsot " V ") (nitsot)) (non_sequences " M ")) 1)"},
    /* backwards, a reduction and a row of a sequence: the stacks in step order */
    {"t-push-output",
     "(scan_output (scan (lambda (zt hp M) ((tanh (add (dot M hp) zt)) (sum (mul 2 (dot hp M) zt) (axes 0))))"
     " (steps auto) (sequences " Z ") (outputs (sitsot " V ") (nitsot)) (non_sequences " M ") backwards) 1)"
     " (scan_output (scan (lambda (zt hp M) ((tanh (add (dot M hp) zt)) (sum (mul 2 (dot hp M) zt) (axes 0))))"
     " (steps auto) (sequences " Z ") (outputs (sitsot " V ") (nitsot)) (non_sequences " M ") backwards) 0)"},
    /* the only output: the loop goes */
    {"t-push-output",
     "(scan (lambda (zt M) ((exp (dot M zt)))) (steps 6) (sequences " Z ") (outputs (nitsot)) (non_sequences " M "))"},
    /* sequence rows through a dot and a reduction with a non-sequence */
    {"t-push-sequences",
     "(scan (lambda (zt hp M) ((tanh (add (dot M hp) (dot zt M) (max (mul zt (subtensor M 0)) all)))))"
     " (steps auto) (sequences " Z ") (outputs (sitsot " V ")) (non_sequences " M "))"},
    /* save-mem: a stacked output read only in its last rows keeps those
     * rows, (last 3): a slice and an index of a sitsot */
    {"t-last-rows",
     "(subtensor (scan (lambda (a s) ((add s a))) (steps 9) (sequences " X ") (outputs (sitsot 0)) (non_sequences))"
     " (slice -3 none none)) (subtensor (scan (lambda (a s) ((add s a))) (steps 9) (sequences " X ")"
     " (outputs (sitsot 0)) (non_sequences)) -2)"},
    /* a mitsot (its ring holds the taps and the rows kept) */
    {"t-last-rows",
     "(subtensor (scan (lambda (b c) ((mod (add b c) 1000))) (steps 9) (sequences)"
     " (outputs (mitsot " F " (taps -3 -1))) (non_sequences)) (slice -4 -1 none))"},
    /* an RNN's vector state and a nitsot, backwards: the compiled loop's
     * rows in a ring */
    {"t-last-rows",
     "(subtensor (scan_output " RNN_KEEP " 0) (slice -3 none none)) (subtensor (scan_output " RNN_KEEP " 1) -2 1)"},
    {"default",
     "(subtensor (scan_output " RNN_KEEP " 0) (slice -3 none none)) (subtensor (scan_output " RNN_KEEP " 1) -2 1)"},
    /* everything at once: merged, folded, pushed out, last */
    {"default",
     "(subtensor (scan (lambda (a b s u c) ((add (mul 1 s) (mul b u) (mul a c) (exp u)))) (steps auto)"
     " (sequences " X " " X ") (outputs (sitsot 0)) (non_sequences " W " 2)) -1)"
     " (scan (lambda (a s) ((mul s (sqr a)))) (steps auto) (sequences " X ") (outputs (sitsot 1)) (non_sequences))"},
};

/* The output terms of text s. */
static size_t terms(const char *s, tg_term **v, size_t max)
{
    tg_error err;
    size_t n = 0;
    tg_reader *r = tg_reader_new(ctx, s, strlen(s), NULL, &err);
    while (r && n < max && tg_reader_next(r, &v[n], &err) == 1)
        n++;
    tg_reader_free(r);
    return n;
}

static tg_fn *compile(const char *outs, int rules, tg_error *err, const char *rewriter)
{
    tg_term *it[NIN], *ot[8];
    size_t ni = terms(ins, it, NIN), no = terms(outs, ot, 8);
    tg_fn_options o = {.interpret = kt_path, .rules = rules ? rs : NULL, .rewrite = rules ? tg_symbol_cstr(ctx, rewriter) : NULL};
    return tg_fn_compile(ctx, ni, it, no, ot, &o, err);
}

/* The rewrite changes the graph: it is not vacuous. */
static int changes(const tcase *c)
{
    tg_term *ot[8], *g;
    size_t no = terms(c->outs, ot, 8);
    tg_error err;
    g = tg_app(ctx, tg_symbol_cstr(ctx, "graph"), no, ot);
    tg_term *r = tg_rewrite(rs, tg_symbol_cstr(ctx, c->rewriter), g, &err);
    return r && r != g;
}

static int64_t n = 13;
static kt_arr args[NIN];

static void make_args(void)
{
    int64_t three = 3;
    kt_make(&args[0], TG_FLOAT64, 1, &n, 1);
    kt_make(&args[1], TG_FLOAT64, 1, &n, 0);
    kt_make(&args[2], TG_FLOAT64, 0, NULL, 0);
    kt_make(&args[3], TG_INT64, 1, &three, 0);
    int64_t nz[2] = {n, 4};
    kt_make(&args[4], TG_FLOAT64, 2, nz, 1);
    kt_fill(&args[4].a, -3, 3);
    kt_fill(&args[0].a, -3, 3);
    kt_fill(&args[1].a, -3, 3);
    *(double *)args[2].a.data = 0.25;
    kt_fill(&args[3].a, 0, 1000);
    int64_t mm[2] = {4, 4}, four = 4;
    kt_make(&args[5], TG_FLOAT64, 2, mm, 1);
    kt_make(&args[6], TG_FLOAT64, 1, &four, 0);
    kt_fill(&args[5].a, -1, 1);
    kt_fill(&args[6].a, -1, 1);
}

/* Output k of before against output k of after. */
static int agree(const tg_array *b, const tg_array *a, char *why, size_t len)
{
    if (b->dtype != a->dtype) {
        snprintf(why, len, "dtype %d, was %d", a->dtype, b->dtype);
        return 0;
    }
    int64_t idx[TG_MAXDIM] = {0};
    if (b->ndim != a->ndim) {
        snprintf(why, len, "rank %d, was %d", a->ndim, b->ndim);
        return 0;
    }
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d]) {
            snprintf(why, len, "shape %s", kt_shape(a->ndim, a->shape));
            return 0;
        }
    if (kt_count(a) == 0)
        return 1;
    do {
        long double x = kt_get(b, idx), y = kt_get(a, idx);
        if (!kt_close(y, x, 1e-13L)) {
            snprintf(why, len, "%Lg, was %Lg", y, x);
            return 0;
        }
    } while (kt_next(a->ndim, a->shape, idx));
    return 1;
}

static void run_case(const tcase *c)
{
    tg_error err;
    tg_array in[NIN], bo[8], ao[8];
    for (int i = 0; i < NIN; i++)
        in[i] = args[i].a;
    memset(bo, 0, sizeof bo), memset(ao, 0, sizeof ao);
    const char *path = kt_path ? "interpreted" : "compiled";
    TAP_CHECK(changes(c), "%s changes the graph", c->rewriter);
    tg_fn *fb = compile(c->outs, 0, &err, NULL);
    int rb = fb ? tg_fn_call(fb, in, bo, &err) : -1;
    if (rb < 0)
        tap_diag("%s without rules: %s", c->rewriter, err.message);
    tg_fn *fa = compile(c->outs, 1, &err, c->rewriter);
    int ra = fa ? tg_fn_call(fa, in, ao, &err) : -1;
    if (ra < 0)
        tap_diag("%s: %s", c->rewriter, err.message);
    size_t no = terms(c->outs, (tg_term *[8]){0}, 8);
    char why[200] = "";
    int ok = rb == 0 && ra == 0;
    for (size_t k = 0; ok && k < no; k++)
        ok = agree(&bo[k], &ao[k], why, sizeof why);
    TAP_CHECK(ok, "%s, %s: the same values with and without it %s", c->rewriter, path, why);
    for (size_t k = 0; k < no; k++)
        free(bo[k].data), free(ao[k].data);
    tg_fn_free(fb), tg_fn_free(fa);
}

/* Backpropagation through time by hand: h_t = tanh(W h_{t-1} + x_t),
 * loss sum of all h; gW (H x H), gx (T x H), gh0 (H). */
static void ref_bptt(int64_t T, int H, const double *Wm, const double *x, const double *h0, double *gW,
                     double *gx, double *gh0)
{
    double *h = calloc((size_t)(T + 1) * H, sizeof *h), *gh = calloc((size_t)H, sizeof *gh);
    memcpy(h, h0, sizeof *h * H);
    for (int64_t t = 0; t < T; t++)
        for (int i = 0; i < H; i++) {
            double a = x[t * H + i];
            for (int j = 0; j < H; j++)
                a += Wm[i * H + j] * h[t * H + j];
            h[(t + 1) * H + i] = tanh(a);
        }
    memset(gW, 0, sizeof *gW * H * H);
    for (int64_t t = T; t-- > 0;) {
        double *dz = gx + t * H;
        for (int i = 0; i < H; i++) {
            double y = h[(t + 1) * H + i];
            dz[i] = (gh[i] + 1) * (1 - y * y);
        }
        for (int i = 0; i < H; i++)
            for (int j = 0; j < H; j++)
                gW[i * H + j] += dz[i] * h[t * H + j];
        for (int j = 0; j < H; j++) {
            gh[j] = 0;
            for (int i = 0; i < H; i++)
                gh[j] += Wm[i * H + j] * dz[i];
        }
    }
    memcpy(gh0, gh, sizeof *gh * H);
    free(h), free(gh);
}

/* The gradient of an RNN's loss (BPTT) goes through scan-push-sums: the
 * weight gradient, accumulated by the backward scan as outer products,
 * is one matrix product after it; the backward scan is one generated
 * loop; the values are a hand-written BPTT's, with and without the
 * rewrite, on both paths. */
static void bptt(void)
{
    enum { H = 4 };
    const int64_t T = 9;
    static const char *const in_s[3] = {"(input w float64 (4 4))", "(input x float64 (n 4))",
                                        "(input h0 float64 (4))"};
    static const char L[] = "(sum (scan (lambda (xt hp W) ((tanh (add (dot W hp) xt)))) (steps auto)"
                            " (sequences (input x float64 (n 4))) (outputs (sitsot (input h0 float64 (4))))"
                            " (non_sequences (input w float64 (4 4)))) all)";
    tg_error err;
    tg_term *it[3], *outs[3], *ex[3];
    int ok = 1;
    for (int i = 0; i < 3; i++) {
        it[i] = tg_read_cstr(ctx, in_s[i], &err);
        tg_term *g[3] = {tg_symbol_cstr(ctx, "grad"), tg_read_cstr(ctx, L, &err), it[i]};
        outs[i] = tg_list(ctx, 3, g, NULL);
        ok = ok && (ex[i] = tg_grad_expand(ctx, outs[i], NULL, &err)) != NULL;
    }
    TAP_CHECK(ok, "BPTT: the gradients expand");
    if (!ok)
        return;
    /* the rewritten graph: no h x h accumulator left in a loop */
    tg_term *gr = tg_app(ctx, tg_symbol_cstr(ctx, "graph"), 3, ex);
    tg_term *specs[2] = {tg_symbol_cstr(ctx, "default"), tg_read_cstr(ctx, "(query default (exclude scan-push-sums))", &err)};
    tg_term *rw[2];
    int acc[2];
    for (int m = 0; m < 2; m++) {
        rw[m] = tg_rewrite(rs, specs[m], gr, &err);
        char *p = rw[m] ? tg_print(rw[m], NULL) : NULL;
        acc[m] = p && strstr(p, "(sitsot (alloc (const float64 0) 4 4) last)") != NULL;
        free(p);
    }
    TAP_CHECK(rw[0] && rw[1] && !acc[0] && acc[1],
              "BPTT: the weight gradient's accumulator leaves the backward scan (it stays without scan-push-sums)");
    /* the backward scan compiles into one loop */
    if (rw[0]) {
        tg_term *ro[3];
        tg_elements(tg_cdr(ctx, rw[0]), ro, 3);
        tgV_graph *g = tgV_build(ctx, 3, it, 3, ro, &err);
        tgH_sched *sch = g ? tgH_schedule(g, NULL, &err) : NULL;
        int nscan = 0, ncomp = 0;
        for (int k = 0; sch && k < sch->nsteps; k++)
            if (sch->steps[k].kind == TGH_SCAN)
                nscan++, ncomp += tgSc_compiles(sch, k);
        TAP_CHECK(nscan == 2 && ncomp == 2, "BPTT rewritten: %d scans (forward, backward), %d of them one generated loop",
                  nscan, ncomp);
    }
    double Wm[H * H], x[T * H], h0[H], rW[H * H], rx[T * H], rh0[H];
    for (int i = 0; i < H * H; i++)
        Wm[i] = sin(i * 0.7) * 0.5;
    for (int i = 0; i < T * H; i++)
        x[i] = cos(i * 0.3);
    for (int i = 0; i < H; i++)
        h0[i] = 0.1 * i;
    ref_bptt(T, H, Wm, x, h0, rW, rx, rh0);
    int64_t hh[2] = {H, H}, th[2] = {T, H}, hs = H;
    for (int path = 0; path < 2; path++)
        for (int m = 0; m < 2; m++) {
            double gW[H * H], gx[T * H], gh0[H];
            tg_array ia[3], oa[3];
            tg_array_init(&ia[0], TG_FLOAT64, 2, hh, Wm);
            tg_array_init(&ia[1], TG_FLOAT64, 2, th, x);
            tg_array_init(&ia[2], TG_FLOAT64, 1, &hs, h0);
            tg_array_init(&oa[0], TG_FLOAT64, 2, hh, gW);
            tg_array_init(&oa[1], TG_FLOAT64, 2, th, gx);
            tg_array_init(&oa[2], TG_FLOAT64, 1, &hs, gh0);
            tg_fn_options o = {.interpret = path, .rules = rs, .rewrite = specs[m]};
            tg_fn *fn = tg_fn_compile(ctx, 3, it, 3, outs, &o, &err);
            int rc = fn ? tg_fn_call(fn, ia, oa, &err) : -1;
            double d = 0;
            for (int i = 0; rc == 0 && i < H * H; i++)
                d = fmax(d, fabs(gW[i] - rW[i]));
            for (int i = 0; rc == 0 && i < T * H; i++)
                d = fmax(d, fabs(gx[i] - rx[i]));
            for (int i = 0; rc == 0 && i < H; i++)
                d = fmax(d, fabs(gh0[i] - rh0[i]));
            TAP_CHECK(rc == 0 && d < 1e-12, "BPTT %s, %s: a hand-written BPTT's gradients (max diff %g)",
                      path ? "interpreted" : "compiled", m ? "without scan-push-sums" : "default", d);
            if (rc < 0)
                tap_diag("%s", err.message);
            tg_fn_free(fn);
        }
}

/* A function of the inputs text ins and outputs text outs, rewritten by
 * spec (NULL: no rules) on the given path. */
static tg_fn *compile_spec(const char *ins_text, const char *outs, tg_term *spec, int interpret, tg_error *err)
{
    tg_term *it[4], *ot[4];
    size_t ni = terms(ins_text, it, 4), no = terms(outs, ot, 4);
    tg_fn_options o = {.interpret = interpret, .rules = spec ? rs : NULL, .rewrite = spec};
    return tg_fn_compile(ctx, ni, it, no, ot, &o, err);
}

/* save-mem never drops the forward trace a gradient reads: the cost reads
 * the last 3 states of an RNN, its gradient the whole trace; with default
 * (scan-last-rows in it) and without rules, on both paths, the gradient
 * is central finite differences' of the cost. */
static void savemem_grad(void)
{
    enum { T = 10, H = 4 };
    const char *zin = "(input z float64 (10 4)) (input m float64 (4 4)) (input v float64 (4))";
#define RNN_G "(scan (lambda (zt hp M) ((tanh (add (dot M hp) zt)))) (steps auto) (sequences (input z float64 (10 4)))" \
              " (outputs (sitsot (input v float64 (4)))) (non_sequences (input m float64 (4 4))))"
#define COST_G "(sum (mul (subtensor " RNN_G " (slice -3 none none)) (subtensor " RNN_G " (slice -3 none none))) all)"
    const char *outs = COST_G " (grad " COST_G " (input z float64 (10 4)))";
    tg_error err;
    /* the rewritten graph keeps a whole forward trace for the backward scan */
    tg_term *ot[2];
    terms(outs, ot, 2);
    tg_term *gx = tg_grad_expand(ctx, ot[1], NULL, &err);
    tg_term *gr = gx ? tg_app(ctx, tg_symbol_cstr(ctx, "graph"), 1, &gx) : NULL;
    tg_term *rw = gr ? tg_rewrite(rs, tg_symbol_cstr(ctx, "default"), gr, &err) : NULL;
    char *txt = rw ? tg_print(rw, NULL) : NULL;
    TAP_CHECK(txt && strstr(txt, "(outputs (sitsot (input v float64 (4))))"),
              "save-mem: the forward states a gradient reads stay stacked");
    free(txt);
    /* the cost alone keeps 3 rows */
    tg_term *gc = tg_app(ctx, tg_symbol_cstr(ctx, "graph"), 1, &ot[0]);
    rw = tg_rewrite(rs, tg_symbol_cstr(ctx, "default"), gc, &err);
    txt = rw ? tg_print(rw, NULL) : NULL;
    TAP_CHECK(txt && strstr(txt, "(sitsot (input v float64 (4)) (last 3))"), "save-mem: the cost alone keeps 3 rows");
    free(txt);
    double z[T * H], Mv[H * H], v[H];
    for (int i = 0; i < T * H; i++)
        z[i] = sin(0.37 * i);
    for (int i = 0; i < H * H; i++)
        Mv[i] = 0.4 * cos(0.9 * i);
    for (int i = 0; i < H; i++)
        v[i] = 0.1 * i - 0.2;
    int64_t th[2] = {T, H}, hh[2] = {H, H}, hs = H;
    tg_term *spec[2] = {tg_symbol_cstr(ctx, "default"), NULL};
    for (int path = 0; path < 2; path++)
        for (int m = 0; m < 2; m++) {
            tg_fn *fn = compile_spec(zin, outs, spec[m], path, &err);
            double c, g[T * H], gs[T * H], d = 0;
            tg_array ia[3], oa[2];
            tg_array_init(&ia[0], TG_FLOAT64, 2, th, z);
            tg_array_init(&ia[1], TG_FLOAT64, 2, hh, Mv);
            tg_array_init(&ia[2], TG_FLOAT64, 1, &hs, v);
            tg_array_init(&oa[0], TG_FLOAT64, 0, NULL, &c);
            tg_array_init(&oa[1], TG_FLOAT64, 2, th, g);
            int rc = fn ? tg_fn_call(fn, ia, oa, &err) : -1;
            for (int i = 0; rc == 0 && i < T * H; i++) {
                double z0 = z[i], cp, cm, e = 1e-6;
                tg_array po[2];
                tg_array_init(&po[0], TG_FLOAT64, 0, NULL, &cp);
                tg_array_init(&po[1], TG_FLOAT64, 2, th, gs);
                z[i] = z0 + e;
                rc |= tg_fn_call(fn, ia, po, &err);
                tg_array_init(&po[0], TG_FLOAT64, 0, NULL, &cm);
                z[i] = z0 - e;
                rc |= tg_fn_call(fn, ia, po, &err);
                z[i] = z0;
                d = fmax(d, fabs((cp - cm) / (2 * e) - g[i]));
            }
            TAP_CHECK(rc == 0 && d < 1e-6, "save-mem, a gradient through the last 3 states, %s, %s: finite "
                      "differences (max diff %g)", path ? "interpreted" : "compiled", m ? "no rules" : "default", d);
            if (rc < 0)
                tap_diag("%s", err.message);
            tg_fn_free(fn);
        }
#undef RNN_G
#undef COST_G
}

/* The heap in use (malloc'd, mapped chunks included).  Under the address
 * sanitizer malloc is the sanitizer's, which glibc's mallinfo2 does not
 * see (it says 0): ask the sanitizer's allocator then. */
#if defined(__SANITIZE_ADDRESS__)
size_t __sanitizer_get_current_allocated_bytes(void);  /* the sanitizer runtime's */
static size_t heap_used(void)
{
    return __sanitizer_get_current_allocated_bytes();
}
#else
static size_t heap_used(void)
{
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}
#endif

/* save-mem keeps N rows: a scan of 10^5 steps of rows of 8 float64 read
 * in its last 3 rows holds about 3 rows (a ring of 4, and the 3 rows of
 * its output) after a call, where without scan-last-rows the function
 * holds the stacked 6.4 MB; the values are the same, on both paths. */
static void savemem_memory(void)
{
    enum { T = 100000, H = 8 };
    const char *in = "(input x float64 (100000 8))";
    const char *outs = "(subtensor (scan (lambda (xt s) ((add (mul s 0.5) (exp (sub xt s))))) (steps auto)"
                       " (sequences (input x float64 (100000 8))) (outputs (sitsot (alloc 0.0 8))) (non_sequences))"
                       " (slice -3 none none))";
    int64_t th[2] = {T, H}, oh[2] = {3, H};
    double *x = malloc(sizeof *x * T * H);
    for (int i = 0; i < T * H; i++)
        x[i] = sin(0.001 * i);
    tg_error err;
    tg_term *spec[2] = {tg_symbol_cstr(ctx, "default"),
                        tg_read_cstr(ctx, "(query default (exclude scan-last-rows))", &err)};
    for (int path = 0; path < 2; path++) {
        double out[2][3 * H];
        size_t held[2] = {0, 0};
        int rc = 0;
        for (int m = 0; m < 2; m++) {
            tg_fn *fn = compile_spec(in, outs, spec[m], path, &err);
            tg_array ia, oa;
            tg_array_init(&ia, TG_FLOAT64, 2, th, x);
            tg_array_init(&oa, TG_FLOAT64, 2, oh, out[m]);
            size_t compiled = heap_used();
            rc |= fn ? tg_fn_call(fn, &ia, &oa, &err) : -1;
            held[m] = heap_used() - compiled;
            if (rc < 0)
                tap_diag("%s", err.message);
            tg_fn_free(fn);
        }
        /* the hand-written loop's last 3 rows */
        double s[H] = {0}, ref[3 * H];
        for (int t = 0; t < T; t++)
            for (int j = 0; j < H; j++) {
                s[j] = s[j] * 0.5 + exp(x[t * H + j] - s[j]);
                if (t >= T - 3)
                    ref[(t - (T - 3)) * H + j] = s[j];
            }
        int bad = 0;
        for (int i = 0; i < 3 * H; i++)
            bad += !kt_close(out[0][i], ref[i], 1e-13L) || !kt_close(out[1][i], ref[i], 1e-13L);
        TAP_CHECK(rc == 0 && !bad, "save-mem %s: the last 3 rows, with and without it, are the hand-written loop's (within 1e-13) "
                  "(%d wrong)", path ? "interpreted" : "compiled", bad);
        TAP_CHECK(rc == 0 && held[0] < 64 * 1024 && held[1] >= (size_t)T * H * 8,
                  "save-mem %s: a call holds %zu bytes with it, %zu without (the %d stacked rows)",
                  path ? "interpreted" : "compiled", held[0], held[1], T);
    }
    free(x);
}

int main(void)
{
    tg_error err;
    ctx = tg_ctx_new(&err);
    rs = tg_rules_new(ctx, &err);
    static const char defs[] =
        "(include \"all.rules\")\n"
        "(equilibrium t-merge-inputs scan-merge-inputs)\n"
        "(equilibrium t-drop-inputs scan-drop-inputs)\n"
        "(equilibrium t-fold-constants scan-fold-constants)\n"
        "(equilibrium t-prune-taps scan-prune-taps)\n"
        "(equilibrium t-push-invariant scan-push-invariant)\n"
        "(equilibrium t-push-sequences scan-push-sequences)\n"
        "(equilibrium t-drop-outputs scan-drop-outputs)\n"
        "(equilibrium t-merge-outputs scan-merge-outputs)\n"
        "(equilibrium t-last scan-last)\n"
        "(equilibrium t-last-rows scan-last-rows)\n"
        "(equilibrium t-merge scan-merge)\n"
        "(equilibrium t-inplace scan-inplace)\n"
        "(equilibrium t-push-sums scan-push-sums)\n"
        "(equilibrium t-push-output scan-push-output)\n";
    char lib[4200];
    snprintf(lib, sizeof lib, "%s", tap_path("patterns/lib"));
    setenv("TGREL_RULES_PATH", lib, 1);
    TAP_EQ_INT(tg_rules_load_string(rs, defs, strlen(defs), NULL, &err), 0, "load the rule library");
    make_args();
    for (kt_path = 0; kt_path < 2; kt_path++)
        for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
            run_case(&cases[i]);
    bptt();
    savemem_grad();
    savemem_memory();
    for (int i = 0; i < NIN; i++)
        free(args[i].block);
    tg_rules_free(rs);
    tg_ctx_free(ctx);
    return TAP_DONE();
}
