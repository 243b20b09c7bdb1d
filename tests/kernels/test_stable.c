/* test_stable.c - the numerically stable forms: softplus and logsumexp
 * against hand-written long double loops, on arguments where the naive
 * forms overflow (exp of 800) or underflow (sigmoid of -800); the
 * library's stabilize rewrites (through its default rewriter) on the same
 * arguments; and the gradients of all of them against central finite
 * differences and against their closed forms.  Both paths. */
#include "config.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "kt.h"

static tg_ctx *ctx;
static tg_rules *lib;   /* all.rules */

/* Arguments around every threshold: exp overflows above 709.78, sigmoid
 * of x underflows to 0 below -745, log1p(e^x) == x above 37. */
static const double special[] = {-1000, -800, -745.5, -40, -30, -1, -1e-8, 0, 1e-8, 0.5, 1,
                                 18, 30, 37, 40, 709, 710, 800, 1000};
enum { NSPECIAL = sizeof special / sizeof *special, N = NSPECIAL + 12 };

static void fill_x(double *x)
{
    memcpy(x, special, sizeof special);
    for (int i = NSPECIAL; i < N; i++)
        x[i] = kt_unif(-50, 50);
}

/* The function of the one output term out over the input terms ins,
 * compiled or interpreted (kt_path), rewritten by rs when not NULL. */
static tg_fn *fn(const char *ins, const char *out, tg_rules *rs)
{
    tg_error err;
    tg_term *it[4], *ot[1];
    size_t ni = kt_read_terms(ctx, ins, it, &err);
    kt_read_terms(ctx, out, ot, &err);
    tg_fn_options o = {.interpret = kt_path, .rules = rs};
    tg_fn *f = tg_fn_compile(ctx, ni, it, 1, ot, &o, &err);
    if (!f)
        tap_diag("%s: %s", out, err.message);
    return f;
}

/* f on the arrays in; the output's data (malloc'd by the call) or NULL. */
static double *call(tg_fn *f, const tg_array *in, tg_array *out)
{
    tg_error err;
    memset(out, 0, sizeof *out);
    if (!f || tg_fn_call(f, in, out, &err) < 0) {
        if (f)
            tap_diag("%s", err.message);
        return NULL;
    }
    return out->data;
}

static const char *path(void) { return kt_path ? "interpreter" : "compiled"; }

/* ---- elementwise: softplus, and the rewrites of the naive forms ----------- */

static long double ref_softplus(long double x) { return x > 0 ? x + log1pl(expl(-x)) : log1pl(expl(x)); }

typedef struct ecase {
    const char *name, *term;    /* $x: the input */
    long double (*ref)(long double);
    int rules;                  /* through the library's default rewriter */
} ecase;

static long double r_neg_softplus_neg(long double x) { return -ref_softplus(-x); }
static long double r_neg_softplus(long double x) { return -ref_softplus(x); }

static const ecase ecases[] = {
    {"softplus", "(softplus $x)", ref_softplus, 0},
    {"log1p(exp x) rewritten", "(log1p (exp $x))", ref_softplus, 1},
    {"log(1 + exp x) rewritten", "(log (add 1 (exp $x)))", ref_softplus, 1},
    {"log(sigmoid x) rewritten", "(log (sigmoid $x))", r_neg_softplus_neg, 1},
    {"log(1 - sigmoid x) rewritten", "(log (sub 1 (sigmoid $x)))", r_neg_softplus, 1},
    {"log1p(-sigmoid x) rewritten", "(log1p (neg (sigmoid $x)))", r_neg_softplus, 1},
};

/* term with $x replaced by X's input term */
static char *with_x(const char *tmpl, const char *x)
{
    static char buf[4096];
    size_t o = 0, xl = strlen(x);
    for (const char *p = tmpl; *p && o + xl + 1 < sizeof buf; p++)
        if (p[0] == '$' && p[1] == 'x')
            memcpy(buf + o, x, xl), o += xl, p++;
        else
            buf[o++] = *p;
    buf[o] = 0;
    return buf;
}

static void check_elementwise(const ecase *c)
{
    const char *X = "(input x float64 (n))";
    double x[N];
    fill_x(x);
    int64_t n = N;
    tg_array in, out;
    tg_array_init(&in, TG_FLOAT64, 1, &n, x);
    tg_fn *f = fn(X, with_x(c->term, X), c->rules ? lib : NULL);
    double *y = call(f, &in, &out);
    int ok = y != NULL, bad = -1;
    for (int i = 0; ok && i < N; i++)
        if (!kt_close(y[i], c->ref(x[i]), 8 * DBL_EPSILON))
            ok = 0, bad = i;
    TAP_CHECK(ok, "%s, %s: %d values from -1000 to 1000 within 8 ulps of long double", path(), c->name, N);
    if (bad >= 0)
        tap_diag("at x = %.17g: %.17g, want %.17Lg", x[bad], y[bad], c->ref(x[bad]));
    free(y);
    tg_fn_free(f);
    if (!c->rules)
        return;
    /* unrewritten, the written form fails somewhere on the same arguments */
    f = fn(X, with_x(c->term, X), NULL);
    y = call(f, &in, &out);
    int fails = 0;
    for (int i = 0; y && i < N; i++)
        fails += !kt_close(y[i], c->ref(x[i]), 1e-6);
    TAP_CHECK(y && fails, "%s, %s: without the rewrite, %d values are wrong (inf, nan or cancelled)", path(),
              c->name, fails);
    free(y);
    tg_fn_free(f);
}

/* ---- logsumexp -------------------------------------------------------------- */

/* log(sum(exp X)) over axis `axis` of X (r c) (-1: all), in long double. */
static void ref_lse(const double *x, int r, int c, int axis, long double *out)
{
    int no = axis < 0 ? 1 : axis == 0 ? c : r;
    for (int o = 0; o < no; o++) {
        long double s = 0;
        for (int i = 0; i < r; i++)
            for (int j = 0; j < c; j++)
                if (axis < 0 || (axis == 0 ? j : i) == o)
                    s += expl((long double)x[i * c + j]);
        out[o] = logl(s);
    }
}

static void lse_data(double *x, int r, int c)
{
    for (int i = 0; i < r * c; i++)
        x[i] = kt_unif(-5, 5);
    for (int j = 0; j < c; j++) {
        x[0 * c + j] = 1000 + j;            /* exp overflows */
        x[1 * c + j] = -1000 - 3 * j;       /* exp underflows */
        x[2 * c + j] = -INFINITY;           /* a row of -inf: -inf */
    }
    x[3 * c] = 800, x[3 * c + 1] = -800;
}

static void check_logsumexp(const char *axes, int axis, int rewrite)
{
    enum { R = 6, C = 4 };
    double x[R * C];
    lse_data(x, R, C);
    if (axis == 0)  /* a column of -inf, not a row: the -inf row would make every column finite */
        for (int i = 0; i < R; i++)
            x[i * C + 2] = -INFINITY;
    long double want[R > C ? R : C];
    ref_lse(x, R, C, axis, want);
    char term[200];
    snprintf(term, sizeof term, rewrite ? "(log (sum (exp (input x float64 (r c))) %s))"
                                        : "(logsumexp (input x float64 (r c)) %s)", axes);
    int64_t sh[2] = {R, C};
    tg_array in, out;
    tg_array_init(&in, TG_FLOAT64, 2, sh, x);
    tg_fn *f = fn("(input x float64 (r c))", term, rewrite ? lib : NULL);
    double *y = call(f, &in, &out);
    int no = axis < 0 ? 1 : axis == 0 ? C : R, ok = y != NULL;
    for (int o = 0; ok && o < no; o++)
        ok = kt_close(y[o], want[o], 8 * DBL_EPSILON);
    TAP_CHECK(ok, "%s, %s over %s: %d values (exp overflowing, underflowing, -inf) within 8 ulps of long double",
              path(), rewrite ? "log(sum(exp x)) rewritten" : "logsumexp", axes, no);
    free(y);
    tg_fn_free(f);
}

/* ---- gradients ------------------------------------------------------------ */

/* The gradient (grad COST x) of cost (text, $x for X's input term, other
 * inputs v as given) at x against central differences of cost, and
 * against closed (the closed form at element i) when not NULL. */
static void check_grad(const char *name, const char *X, const char *cost, tg_array *in, int nin,
                       long double (*closed)(const double *x, const double *v, int i), tg_rules *rs)
{
    static const char *const V = "(input v float64 (n))";
    char ins[300], c[4096], g[8192];
    snprintf(ins, sizeof ins, "%s%s%s", X, nin > 1 ? " " : "", nin > 1 ? V : "");
    snprintf(c, sizeof c, "%s", with_x(cost, X));
    snprintf(g, sizeof g, "(grad %s %s)", c, X);
    tg_fn *fc = fn(ins, c, rs), *fg = fn(ins, g, rs);
    tg_array out;
    double *gv = call(fg, in, &out);
    double *x = in[0].data;
    int64_t n = kt_count(&in[0]);
    double worst = 0, worst_closed = 0;
    for (int64_t i = 0; gv && i < n; i++) {
        double x0 = x[i], h = 1e-6 * fmax(1, fabs(x0));
        x[i] = x0 + h;
        double *p = call(fc, in, &out);
        x[i] = x0 - h;
        double *m = call(fc, in, &out);
        x[i] = x0;
        if (!p || !m) {
            free(p), free(m);
            worst = INFINITY;
            break;
        }
        double fd = (*p - *m) / (2 * h), e = fabs(gv[i] - fd) / (1 + fabs(fd));
        free(p), free(m);
        if (!(e <= worst))
            worst = e;
        if (closed) {
            long double w = closed(x, nin > 1 ? in[1].data : NULL, (int)i);
            double ec = (double)(fabsl(gv[i] - w) / (1 + fabsl(w)));
            if (!(ec <= worst_closed))
                worst_closed = ec;
        }
    }
    char cl[80] = "";
    if (closed)
        snprintf(cl, sizeof cl, " and the closed form (error %.2g)", worst_closed);
    TAP_CHECK(gv && worst <= 1e-6 && worst_closed <= 1e-12, "%s, gradient of %s: central differences (error %.2g)%s",
              path(), name, worst, cl);
    free(gv);
    tg_fn_free(fc), tg_fn_free(fg);
}

static long double sigm(long double z) { return 1 / (1 + expl(-z)); }
static long double d_softplus(const double *x, const double *v, int i) { return v[i] * sigm(x[i]); }

/* mean cross-entropy of sigmoid(x) against labels v: (sigmoid(x) - v)/n */
static long double d_xent(const double *x, const double *v, int i) { return (sigm(x[i]) - v[i]) / N; }

static void check_grads(void)
{
    double x[N], v[N];
    fill_x(x);
    for (int i = 0; i < N; i++)
        v[i] = i % 2;
    int64_t n = N;
    tg_array in[2];
    tg_array_init(&in[0], TG_FLOAT64, 1, &n, x);
    tg_array_init(&in[1], TG_FLOAT64, 1, &n, v);
    check_grad("sum(softplus(x) v)", "(input x float64 (n))", "(sum (mul (softplus $x) (input v float64 (n))) all)",
               in, 2, d_softplus, NULL);
    /* the cross-entropy as written: the gradient of the rewritten graph is
     * finite and right at +-800, where s/s was 0/0 */
    const char *xent = "(mean (sub (neg (mul (input v float64 (n)) (log (sigmoid $x)))) "
                       "(mul (sub 1 (input v float64 (n))) (log (sub 1 (sigmoid $x))))) all)";
    check_grad("the mean cross-entropy of sigmoid(x), rewritten", "(input x float64 (n))", xent, in, 2, d_xent, lib);
    /* logsumexp over rows with large entries: softmax */
    enum { R = 4, C = 5 };
    double X[R * C];
    for (int i = 0; i < R * C; i++)
        X[i] = kt_unif(-3, 3) + (i / C == 1 ? 800 : i / C == 2 ? -800 : 0);
    int64_t sh[2] = {R, C};
    tg_array_init(&in[0], TG_FLOAT64, 2, sh, X);
    check_grad("sum(logsumexp(X, axis 1) v)", "(input x float64 (r c))",
               "(sum (mul (logsumexp $x (axes 1)) (sin (sum $x (axes 1)))) all)", in, 1, NULL, NULL);
    check_grad("logsumexp(X, all)", "(input x float64 (r c))", "(logsumexp $x all)", in, 1, NULL, NULL);
    check_grad("log(sum(exp X), axis 1), rewritten", "(input x float64 (r c))",
               "(sum (mul (log (sum (exp $x) (axes 1))) (cos (sum $x (axes 1)))) all)", in, 1, NULL, lib);
}

/* d/dX of sum(logsumexp(X, axis 1) * v) for X of R2 x C2: v[row] times
 * the row's softmax, in long double. */
enum { R2 = 4, C2 = 5 };
static long double d_lse(const double *x, const double *v, int i)
{
    const double *row = x + i / C2 * C2;
    long double m = row[0], s = 0;
    for (int j = 1; j < C2; j++)
        m = row[j] > m ? row[j] : m;
    for (int j = 0; j < C2; j++)
        s += expl(row[j] - m);
    return v[i / C2] * expl(x[i] - m) / s;
}

/* logsumexp's own vjp rule: the softmax, right on rows around 1000 (and
 * -1000) where the unrewritten log(sum(exp X)) gives NaN, against the
 * closed form and central differences. */
static void check_lse_grad(void)
{
    double X[R2 * C2], v[R2] = {1.5, -2, 0.25, 3};
    for (int i = 0; i < R2 * C2; i++)
        X[i] = kt_unif(-3, 3) + (i / C2 == 0 ? 1000 : i / C2 == 1 ? -1000 : i / C2 == 2 ? 700 : 0);
    X[2] = X[3];    /* a tie at the maximum */
    int64_t sh[2] = {R2, C2}, nv = R2;
    tg_array in[2];
    tg_array_init(&in[0], TG_FLOAT64, 2, sh, X);
    tg_array_init(&in[1], TG_FLOAT64, 1, &nv, v);
    check_grad("sum(logsumexp(X, axis 1) v), rows around 1000 and -1000", "(input x float64 (r c))",
               "(sum (mul (logsumexp $x (axes 1)) (input v float64 (n))) all)", in, 2, d_lse, NULL);
    /* the naive form's gradient overflows there: exp(1000) / sum = inf / inf */
    tg_fn *f = fn("(input x float64 (r c)) (input v float64 (n))",
                  "(grad (sum (mul (log (sum (exp (input x float64 (r c))) (axes 1))) (input v float64 (n))) all)"
                  " (input x float64 (r c)))", NULL);
    tg_array out;
    double *g = call(f, in, &out);
    TAP_CHECK(g && isnan(g[0]), "%s: the unrewritten log(sum(exp X)) gives NaN there (%g)", path(), g ? g[0] : 0.0);
    free(g);
    tg_fn_free(f);
}

/* Distinct subterms of t (at most max, seen[] holding them). */
static int distinct_terms(tg_term *t, tg_term **seen, int n, int max)
{
    if (tg_kind_of(t) != TG_PAIR)
        return n;
    for (int i = 0; i < n; i++)
        if (seen[i] == t)
            return n;
    if (n == max)
        return n;
    seen[n++] = t;
    tg_iter it;
    tg_iter_init(&it, t);
    for (tg_term *e; (e = tg_iter_next(&it));)
        n = distinct_terms(e, seen, n, max);
    return n;
}

/* The gradient of a logsumexp by its rule against the sweep through the
 * stable form written out (what it was before the rule): fewer distinct
 * nodes, the forward pass's exp and sum shared. */
static void check_lse_graph(void)
{
#define LX "(input x float64 (r c))"
#define LM "(switch (le (abs (max " LX " (axes 1))) 1.7976931348623157e308) (max " LX " (axes 1)) 0)"
    static const char *const costs[2] = {
        "(sum (mul (logsumexp " LX " (axes 1)) (input v float64 (r))) all)",
        "(sum (mul (add (log (sum (exp (sub " LX " (dimshuffle " LM " (perm 0 x)))) (axes 1))) " LM ")"
        " (input v float64 (r))) all)"};
    int count[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
        char text[2000];
        tg_error err;
        snprintf(text, sizeof text, "(graph %s (grad %s " LX "))", costs[k], costs[k]);
        tg_term *t = tg_read_cstr(ctx, text, &err);
        tg_term *ex = t ? tg_grad_expand(ctx, t, NULL, &err) : NULL;
        static tg_term *seen[4000];
        count[k] = ex ? distinct_terms(ex, seen, 0, 4000) : -1;
    }
    TAP_CHECK(count[0] > 0 && count[0] < count[1],
              "logsumexp's gradient by its rule: %d distinct nodes with the cost, the stable form's swept %d", count[0],
              count[1]);
#undef LX
#undef LM
}

/* Whether t has a (log ...) node or a (true_div A (sigmoid ...)) node. */
static int has_unstable(tg_term *t, int depth)
{
    if (tg_kind_of(t) != TG_PAIR || depth > 200)
        return 0;
    const char *h = tg_kind_of(tg_car(t)) == TG_SYMBOL ? tg_symbol_name(tg_car(t), NULL) : "";
    if (!strcmp(h, "log"))
        return 1;
    if (!strcmp(h, "true_div") && tg_length(t) == 3 && tg_kind_of(tg_nth(t, 2)) == TG_PAIR &&
        tg_car(tg_nth(t, 2)) == tg_symbol_cstr(ctx, "sigmoid"))
        return 1;
    size_t n = tg_length(t);
    for (size_t i = 1; i < n; i++)
        if (has_unstable(tg_nth(t, i), depth + 1))
            return 1;
    return 0;
}

/* the gradient graph of the cross-entropy, rewritten, divides by no sigmoid */
static void check_grad_graph(void)
{
    tg_error err;
    tg_term *t = tg_read_cstr(ctx, "(grad (mean (sub (neg (mul (input v float64 (n)) (log (sigmoid (input x float64 (n)))))) "
                                   "(mul (sub 1 (input v float64 (n))) (log (sub 1 (sigmoid (input x float64 (n))))))) all) "
                                   "(input x float64 (n)))", &err);
    tg_term *ex = t ? tg_grad_expand(ctx, t, NULL, &err) : NULL;
    tg_term *rw = ex ? tg_rewrite(lib, tg_symbol_cstr(ctx, "default"), ex, &err) : NULL;
    char *before = ex ? tg_print(ex, NULL) : NULL, *after = rw ? tg_print(rw, NULL) : NULL;
    TAP_CHECK(ex && rw && has_unstable(ex, 0) && !has_unstable(rw, 0),
              "the rewritten cross-entropy gradient has no quotient by a sigmoid and no log: %s", after ? after : "?");
    free(before), free(after);
}

/* ---- the logistic regression, run in row blocks ------------------------------ */

/* The function of bench/grad logreg (its gradients in one pass over
 * blocks of X's rows where X is row-major: interp_rows.c), against the long
 * double loop, with rows enough for several blocks, z up to +-60, and X
 * also as every other column of a wider array (blocks) and reversed
 * (no blocks: one pass per product). */
static void check_logreg(void)
{
    enum { NR = 3001, NF = 37 };
    static const char ins[] = KT_LOGREG_INS, outs[] = KT_LOGREG_OUTS;
    tg_error err;
    tg_term *it[4], *ot[3];
    kt_read_terms(ctx, ins, it, &err);
    kt_read_terms(ctx, outs, ot, &err);
    tg_fn_options o = {.interpret = kt_path, .rules = lib};
    tg_fn *f = tg_fn_compile(ctx, 4, it, 3, ot, &o, &err);
    if (!f) {
        TAP_CHECK(0, "%s, the logistic regression compiles (%s)", path(), err.message);
        return;
    }
    double *Xw = malloc(sizeof(double) * NR * NF * 2), y[NR], w[NF], b = 0.25;
    for (long i = 0; i < (long)NR * NF * 2; i++)
        Xw[i] = kt_unif(-1, 1);
    for (int i = 0; i < NR; i++)
        y[i] = kt_rand() % 2;
    for (int j = 0; j < NF; j++)
        w[j] = kt_unif(-6, 6);      /* z up to about 60 */
    for (int layout = 0; layout < 3; layout++) {
        /* 0: row-major; 1: every other column of a wider array; 2: rows reversed */
        tg_array in[4], out[3];
        int64_t sx[2] = {NR, NF};
        tg_array_init(&in[0], TG_FLOAT64, 2, sx, Xw);
        long rs = NF;
        if (layout == 1)
            in[0].strides[0] = 2 * NF * 8, in[0].strides[1] = 8, rs = 2 * NF;
        if (layout == 2)
            in[0].data = Xw + (long)(NR - 1) * NF, in[0].strides[0] = -NF * 8, rs = -NF;
        tg_array_init(&in[1], TG_FLOAT64, 1, &sx[0], y);
        tg_array_init(&in[2], TG_FLOAT64, 1, &sx[1], w);
        tg_array_init(&in[3], TG_FLOAT64, 0, NULL, &b);
        memset(out, 0, sizeof out);
        long double dw[NF], db;
        long double loss = kt_ref_logreg(NR, NF, in[0].data, rs, y, w, b, dw, &db);
        int ok = tg_fn_call(f, in, out, &err) == 0;
        double worst = 0;
        if (ok) {
            worst = fabs((double)((*(double *)out[0].data - loss) / loss));
            worst = fmax(worst, fabs((double)((*(double *)out[2].data - db) / (fabsl(db) + 1e-3))));
            for (int j = 0; j < NF; j++)
                worst = fmax(worst, fabs((double)((((double *)out[1].data)[j] - dw[j]) / (fabsl(dw[j]) + 1e-3))));
        }
        TAP_CHECK(ok && worst <= 1e-12, "%s, logistic regression loss and gradients, %d x %d, X %s: within %.2g "
                  "of a long double loop", path(), NR, NF,
                  layout == 0 ? "row-major" : layout == 1 ? "every other column" : "rows reversed", worst);
        for (int i = 0; i < 3; i++)
            free(out[i].data);
    }
    free(Xw);
    tg_fn_free(f);
}

int main(void)
{
    ctx = tg_ctx_new(NULL);
    lib = kt_rules(ctx, "(include \"all.rules\")", "<test>");
    TAP_CHECK(lib != NULL, "the rule library loads");
    if (!lib)
        return TAP_DONE();
    KT_EACH_PATH {
        for (size_t i = 0; i < sizeof ecases / sizeof *ecases; i++)
            check_elementwise(&ecases[i]);
        static const char *const axes[] = {"(axes 1)", "(axes 0)", "all", "(axes -1)"};
        static const int axis[] = {1, 0, -1, 1};
        for (int k = 0; k < 4; k++) {
            check_logsumexp(axes[k], axis[k], 0);
            check_logsumexp(axes[k], axis[k], 1);
        }
        check_grads();
        check_lse_grad();
        check_logreg();
    }
    check_grad_graph();
    check_lse_graph();
    tg_rules_free(lib);
    tg_ctx_free(ctx);
    return TAP_DONE();
}
