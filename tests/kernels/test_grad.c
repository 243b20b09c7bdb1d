/* test_grad.c - gradients (kernels/grad.c, patterns/lib/grad.rules).
 * Every op's gradient is checked against central finite differences of
 * the forward function, which the test evaluates itself at x+h and x-h,
 * on random inputs and random sizes, broadcast operands included, on the
 * compiled path and in the interpreter.  Also: second derivatives
 * (Hessian-vector products against differences of the gradient), the
 * linear-time cases (a chain of 10^5 ops, a DAG of 2^10000 paths)
 * against derivatives computed here, the errors, a user's vjp rule, the
 * sharing of one backward pass by two gradients (on the schedule), and a
 * check that every op of the vocabulary has a vjp rule or is listed here
 * as lowered to others or built by the sweep; gradients through scans
 * (check_scans). */
#include <ctype.h>

#include "kt.h"
#include "scan.h"
#include "schedule.h"
#include "tensor.h"

extern const char tgGr_rules_text[];

static tg_ctx *ctx;
static tg_rules *fd_rules;     /* rules the finite-difference checks compile with (NULL: none) */

/* ---- inputs: "(input x float64 (n 3)) ...", sizes bound per round ------- */

typedef struct gin {
    tg_term *t;
    const char *name;
    tg_dtype dt;
    int ndim;
    tg_term *sz[TG_MAXDIM];
} gin;

static int read_inputs(const char *text, gin *in, int max)
{
    tg_reader *r = tg_reader_new(ctx, text, strlen(text), NULL, NULL);
    int n = 0;
    tg_term *t;
    while (r && n < max && tg_reader_next(r, &t, NULL) == 1) {
        tg_term *a[4];
        tg_elements(t, a, 4);
        in[n].t = t;
        in[n].name = tg_symbol_name(a[1], NULL);
        size_t len;
        const char *d = tg_symbol_name(a[2], &len);
        in[n].dt = !strncmp(d, "float32", len) ? TG_FLOAT32 : !strncmp(d, "float64", len) ? TG_FLOAT64
                   : !strncmp(d, "int64", len) ? TG_INT64 : TG_BOOL;
        in[n].ndim = (int)tg_elements(a[3], in[n].sz, TG_MAXDIM);
        n++;
    }
    tg_reader_free(r);
    return n;
}

/* The text of a term with each $NAME replaced by input NAME's term. */
static char *subst(const char *tmpl, const gin *in, int nin)
{
    size_t cap = strlen(tmpl) * 8 + 4096, o = 0;
    char *s = malloc(cap);
    for (const char *p = tmpl; *p;) {
        if (*p != '$') {
            s[o++] = *p++;
            continue;
        }
        const char *q = ++p;
        while (*q && (isalnum((unsigned char)*q) || *q == '_'))
            q++;
        for (int i = 0; i < nin; i++)
            if (strlen(in[i].name) == (size_t)(q - p) && !strncmp(in[i].name, p, (size_t)(q - p))) {
                char *t = tg_print(in[i].t, NULL);
                size_t l = strlen(t);
                if (o + l + 1 >= cap)
                    s = realloc(s, cap = 2 * (cap + l));
                memcpy(s + o, t, l);
                o += l;
                free(t);
            }
        p = q;
        if (o + 256 >= cap)
            s = realloc(s, cap *= 2);
    }
    s[o] = 0;
    return s;
}

typedef struct syms {
    tg_term *sym[8];
    int64_t val[8];
    int n;
} syms;

static int64_t size_val(syms *S, tg_term *t, int lo, int hi)
{
    int64_t v;
    if (tg_int_get(t, &v) == 0)
        return v;
    for (int i = 0; i < S->n; i++)
        if (S->sym[i] == t)
            return S->val[i];
    S->sym[S->n] = t;
    return S->val[S->n++] = lo + (int64_t)(kt_rand() % (uint64_t)(hi - lo + 1));
}

/* Arrays for the inputs, values uniform in [lo, hi), a fraction zeros of
 * them set to 0. */
static void make_arrays(const gin *in, int nin, kt_arr *arr, syms *S, int lo, int hi, double vlo, double vhi,
                        double zeros)
{
    for (int i = 0; i < nin; i++) {
        int64_t sh[TG_MAXDIM];
        for (int d = 0; d < in[i].ndim; d++)
            sh[d] = size_val(S, in[i].sz[d], lo, hi);
        kt_make(&arr[i], in[i].dt, in[i].ndim, sh, (int)(kt_rand() % 2));
        kt_fill(&arr[i].a, vlo, vhi);
        int64_t idx[TG_MAXDIM] = {0};
        if (zeros > 0 && kt_count(&arr[i].a))
            do
                if (kt_unif(0, 1) < zeros)
                    kt_set(&arr[i].a, idx, 0);
            while (kt_next(arr[i].a.ndim, arr[i].a.shape, idx));
    }
}

static tg_term *read1(const char *text)
{
    tg_error err;
    tg_term *t = tg_read_cstr(ctx, text, &err);
    if (!t)
        tap_diag("reading %s: %s", text, err.message);
    return t;
}

static tg_fn *compile(const gin *in, int nin, int nout, tg_term **outs, tg_error *err)
{
    tg_term *it[16];
    for (int i = 0; i < nin; i++)
        it[i] = in[i].t;
    tg_fn_options o = {.interpret = kt_path, .rules = fd_rules};
    return tg_fn_compile(ctx, (size_t)nin, it, (size_t)nout, outs, &o, err);
}

static double call0(tg_fn *f, const kt_arr *arr, int nin)
{
    tg_array in[16], out;
    for (int i = 0; i < nin; i++)
        in[i] = arr[i].a;
    memset(&out, 0, sizeof out);
    tg_error err;
    if (tg_fn_call(f, in, &out, &err) < 0) {
        tap_diag("call: %s", err.message);
        return NAN;
    }
    int64_t idx[1] = {0};
    double v = (double)kt_get(&out, idx);
    free(out.data);
    return v;
}

/* ---- finite differences --------------------------------------------------- */

typedef struct gcase {
    const char *name;
    const char *inputs;
    const char *cost;       /* $NAME for input NAME */
    double lo, hi;          /* input values */
    double zeros;           /* fraction of input elements set to 0 */
    double h, tol;          /* 0: 1e-5 and 1e-6 */
} gcase;

/* d(cost)/d(every float input) on two rounds of random sizes and
 * values, against (f(x+h) - f(x-h)) / 2h element by element. */
static void check_fd(const gcase *c)
{
    gin in[16];
    int nin = read_inputs(c->inputs, in, 16);
    char *cost = subst(c->cost, in, nin);
    tg_term *C = read1(cost);
    free(cost);
    tg_term *outs[17];
    int wrt[16], nw = 0;
    outs[0] = C;
    for (int i = 0; i < nin; i++)
        if (in[i].dt == TG_FLOAT64 || in[i].dt == TG_FLOAT32) {
            tg_term *g[3] = {tg_symbol_cstr(ctx, "grad"), C, in[i].t};
            wrt[nw] = i;
            outs[1 + nw++] = tg_list(ctx, 3, g, NULL);
        }
    tg_error err;
    tg_fn *f = C ? compile(in, nin, 1, outs, &err) : NULL;
    tg_fn *gf = f ? compile(in, nin, 1 + nw, outs, &err) : NULL;
    if (!f || !gf) {
        TAP_CHECK(0, "%s: compiles (%s)", c->name, C ? err.message : "unreadable");
        tg_fn_free(f);
        return;
    }
    double h = c->h ? c->h : 1e-5, tol = c->tol ? c->tol : 1e-6;
    for (int round = 0; round < 2; round++) {
        syms S = {.n = 0};
        kt_arr arr[16];
        make_arrays(in, nin, arr, &S, round ? 1 : 2, round ? 3 : 4, c->lo, c->hi, c->zeros);
        tg_array ia[16], oa[17];
        for (int i = 0; i < nin; i++)
            ia[i] = arr[i].a;
        memset(oa, 0, sizeof oa);
        if (tg_fn_call(gf, ia, oa, &err) < 0) {
            TAP_CHECK(0, "%s: runs (%s)", c->name, err.message);
            for (int i = 0; i < nin; i++)
                free(arr[i].block);
            continue;
        }
        for (int k = 0; k < nw; k++) {
            const tg_array *x = &arr[wrt[k]].a, *g = &oa[1 + k];
            bool same = g->dtype == x->dtype && g->ndim == x->ndim;
            for (int d = 0; same && d < x->ndim; d++)
                same = g->shape[d] == x->shape[d];
            double worst = 0, gw = 0, fw = 0;
            int64_t idx[TG_MAXDIM] = {0};
            if (same && kt_count(x))
                do {
                    long double v = kt_get(x, idx);
                    kt_set(x, idx, v + h);
                    double fp = call0(f, arr, nin);
                    kt_set(x, idx, v - h);
                    double fm = call0(f, arr, nin);
                    kt_set(x, idx, v);
                    double fd = (fp - fm) / (2 * h), gv = (double)kt_get(g, idx);
                    double e = fabs(gv - fd) / (1 + fabs(fd));
                    if (!(e <= worst))
                        worst = e, gw = gv, fw = fd;
                } while (kt_next(x->ndim, x->shape, idx));
            TAP_CHECK(same && worst <= tol, "%s, %s: d/d%s %s matches finite differences (error %.2g%s)",
                      kt_path ? "interpreter" : "compiled", c->name, in[wrt[k]].name,
                      kt_shape(x->ndim, x->shape), worst, same ? "" : "; wrong dtype or shape");
            if (worst > tol)
                tap_diag("worst element: gradient %.17g, differences %.17g", gw, fw);
        }
        for (int i = 0; i <= nw; i++)
            free(oa[i].data);
        for (int i = 0; i < nin; i++)
            free(arr[i].block);
    }
    tg_fn_free(f);
    tg_fn_free(gf);
}

#define XY "(input x float64 (n m)) (input y float64 (n m)) "
#define W "(input w float64 (n m)) "

static const gcase cases[] = {
    /* arithmetic, broadcasting, weak constants, repeated arguments */
    {"add, broadcast row / column / 0-d", "(input x float64 (n m)) (input b float64 (m)) (input c float64 (n 1)) (input s float64 ()) " W,
     "(sum (mul (add $x $b $c $s) $w) all)", -2, 2, 0, 0, 0},
    {"add of x and x", "(input x float64 (n m)) " W, "(sum (mul (add $x $x) $w) all)", -2, 2, 0, 0, 0},
    {"mul of x x x", "(input x float64 (n m)) " W, "(sum (mul $x $x $x $w) all)", -2, 2, 0, 0, 0},
    {"mul of five, one twice, broadcast", XY "(input b float64 (m)) " W,
     "(sum (mul $x $b $y $w $x) all)", -2, 2, 0, 0, 0},
    {"sub, broadcast", XY "(input b float64 (1 m)) " W, "(sum (mul (sub $x $b) (sub $b $y) $w) all)", -2, 2, 0, 0, 0},
    {"true_div", XY W, "(sum (mul (true_div $x (add $y 3)) $w) all)", -2, 2, 0, 0, 0},
    {"neg and weak constants", "(input x float64 (n m)) " W,
     "(sum (mul (neg (mul 2.5 $x)) (add $x 1) $w) all)", -2, 2, 0, 0, 0},
    {"pow, both arguments", XY W, "(sum (mul (pow (add $x 3) $y) $w) all)", -2, 2, 0, 0, 0},
    {"pow, a constant exponent", "(input x float64 (n m)) " W, "(sum (mul (pow $x 3) $w) all)", -2, 2, 0, 0, 0},
    {"sqr", "(input x float64 (n m)) " W, "(sum (mul (sqr $x) $w) all)", -2, 2, 0, 0, 0},
    {"reciprocal", "(input x float64 (n m)) " W, "(sum (mul (reciprocal (add $x 3)) $w) all)", -2, 2, 0, 0, 0},
    {"mod", XY, "(sum (add (mod (mul $x 3) (add $y 3)) (mod $x 0.7)) all)", -2, 2, 0, 0, 0},
    {"int_div (zero gradient)", XY, "(sum (add (int_div $x (add $y 3)) $x) all)", -2, 2, 0, 0, 0},
    /* math */
    {"exp", "(input x float64 (n m)) " W, "(sum (mul (exp $x) $w) all)", -2, 2, 0, 0, 0},
    {"expm1", "(input x float64 (n m)) " W, "(sum (mul (expm1 $x) $w) all)", -2, 2, 0, 0, 0},
    {"log", "(input x float64 (n m)) " W, "(sum (mul (log (add $x 3)) $w) all)", -2, 2, 0, 0, 0},
    {"log1p", "(input x float64 (n m)) " W, "(sum (mul (log1p (add $x 2)) $w) all)", -2, 2, 0, 0, 0},
    {"sqrt", "(input x float64 (n m)) " W, "(sum (mul (sqrt (add $x 3)) $w) all)", -2, 2, 0, 0, 0},
    {"sin cos", "(input x float64 (n m)) " W, "(sum (mul (sin $x) (cos $x) $w) all)", -2, 2, 0, 0, 0},
    {"tanh", "(input x float64 (n m)) " W, "(sum (mul (tanh $x) $w) all)", -2, 2, 0, 0, 0},
    {"sigmoid", "(input x float64 (n m)) " W, "(sum (mul (sigmoid $x) $w) all)", -2, 2, 0, 0, 0},
    {"abs", "(input x float64 (n m)) " W, "(sum (mul (abs $x) $w) all)", -2, 2, 0, 0, 0},
    {"maximum minimum", XY "(input b float64 (m)) " W,
     "(sum (mul (add (maximum $x $y) (minimum $x $b) (maximum $x 0.3)) $w) all)", -2, 2, 0, 0, 0},
    {"comparisons and switch", XY W,
     "(sum (mul (switch (gt $x $y) (mul $x $x) (sin $y)) (cast (lt $x 0.5) float64) $w) all)", -2, 2, 0, 0, 0},
    {"switch with broadcasting", XY "(input b float64 (m)) " W,
     "(sum (mul (switch (ge $x 0) $b (exp $y)) $w) all)", -2, 2, 0, 0, 0},
    {"cast float32 to float64 and back", "(input x float64 (n m)) (input f float32 (n m)) " W,
     "(sum (mul (cast (mul (cast $x float32) $f) float64) $w) all)", -2, 2, 0, 1e-2, 2e-3},
    {"cast, older spelling", "(input x float64 (n m)) " W,
     "(sum (mul (cast float64 (sin $x)) $w) all)", -2, 2, 0, 0, 0},
    /* reductions */
    {"sum over axes", "(input x float64 (n m k)) (input v float64 (m))",
     "(add (sum (mul (sum $x (axes 0 2)) $v) all) (sum (sqr (sum $x (axes -1))) all) (sum (sum (sin $x) (0 1))))",
     -2, 2, 0, 0, 0},
    {"mean", "(input x float64 (n m k)) (input v float64 (m))",
     "(add (sum (mul (mean $x (axes 0 2)) $v) all) (mean (sqr $x) all) (sum (mean (sin $x) (axes 1))))",
     -2, 2, 0, 0, 0},
    {"mean over static sizes", "(input x float64 (3 m 2)) (input v float64 (m))",
     "(add (sum (mul (mean $x (axes 0 2)) $v) all) (mean (sqr $x) all))", -2, 2, 0, 0, 0},
    {"prod, with zeros", "(input x float64 (n m)) (input v float64 (m))",
     "(add (sum (mul (prod $x (axes 0)) $v) all) (prod (add $x 0.5) all))", -2, 2, 0.3, 0, 0},
    {"max min", "(input x float64 (n m k)) (input v float64 (m))",
     "(add (sum (mul (max $x (axes 0 2)) $v) all) (min (sin $x) all) (sum (max $x (axes -1))))", -2, 2, 0, 0, 0},
    /* dot and gemm */
    {"dot matrix-matrix", "(input a float64 (n k)) (input b float64 (k m)) " W,
     "(sum (mul (dot $a $b) $w) all)", -2, 2, 0, 0, 0},
    {"dot matrix-vector", "(input a float64 (n k)) (input v float64 (k)) (input u float64 (n))",
     "(sum (mul (dot $a $v) $u) all)", -2, 2, 0, 0, 0},
    {"dot vector-matrix", "(input a float64 (n k)) (input u float64 (n)) (input v float64 (k))",
     "(sum (mul (dot $u $a) $v) all)", -2, 2, 0, 0, 0},
    {"dot vector-vector", "(input u float64 (k)) (input v float64 (k))",
     "(mul (dot $u $v) (dot $u $u))", -2, 2, 0, 0, 0},
    {"gemm", "(input c float64 (n m)) (input a float64 (n k)) (input b float64 (k m)) (input al float64 ()) "
     "(input be float64 ()) " W,
     "(add (sum (mul (gemm $c $al $a $b $be) $w) all) (sum (mul (gemm $c 0.7 $a $b 1.5) $w) all))", -2, 2, 0, 0, 0},
    /* layout */
    {"transpose", "(input x float64 (n m)) (input v float64 (n))",
     "(sum (mul (transpose $x) (sin (transpose $x)) $v) all)", -2, 2, 0, 0, 0},
    {"transpose with a permutation", "(input x float64 (n m k)) (input w float64 (k n m))",
     "(add (sum (mul (transpose $x (2 0 1)) $w) all) (sum (mul (transpose $x (perm 2 0 1)) $w $w) all))",
     -2, 2, 0, 0, 0},
    {"dimshuffle", "(input x float64 (n 1 m)) (input w float64 (m 1 n))",
     "(add (sum (mul (dimshuffle $x (perm 2 x 0)) $w) all) (sum (sin (dimshuffle $x (0 2))) all))", -2, 2, 0, 0, 0},
    {"reshape", "(input x float64 (n 6)) (input w float64 (n 2 3))",
     "(add (sum (mul (reshape $x (shape-of n 2 3)) $w) all) (sum (sqr (reshape $x (3 n 2))) all))", -2, 2, 0, 0, 0},
    {"alloc", "(input s float64 ()) (input b float64 (m)) (input c float64 (n 1)) " W,
     "(sum (mul (add (alloc $s n m) (alloc (sin $b) n m) (alloc $c n m)) $w) all)", -2, 2, 0, 0, 0},
    /* indexing */
    {"subtensor: slices, an index, a negative step", "(input x float64 (n m)) (input w float64 (m))",
     "(add (sum (mul (subtensor $x (slice 1 none none)) $w) all) (sum (sqr (subtensor $x -1)) all) "
     "(sum (sin (subtensor $x (slice none none -2) (slice 1 none 2))) all))", -2, 2, 0, 0, 0},
    {"subtensor with a tensor index", "(input x float64 (n 3)) (input w float64 (n))",
     "(sum (mul (subtensor $x (slice none none none) (const int64 1)) $w (subtensor $x (slice none none none) 0)) all)",
     -2, 2, 0, 0, 0},
    {"inc_subtensor, set_subtensor", "(input x float64 (n m)) (input v float64 (m)) (input s float64 ()) "
     "(input w float64 (n m))",
     "(sum (mul (sin (set_subtensor (inc_subtensor $x $v (slice 1 none none)) (mul $s $s) (slice none none -2) 0)) $w) all)",
     -2, 2, 0, 0, 0},
    /* whole models */
    {"logistic regression", "(input X float64 (n k)) (input w float64 (k)) (input b float64 ()) (input t float64 (n))",
     "(add (mean (log1p (exp (neg (mul $t (add (dot $X $w) $b))))) all) (mul 0.01 (sum (sqr $w) all)))",
     -2, 2, 0, 0, 0},
    {"two-layer perceptron", "(input X float64 (n k)) (input W float64 (k m)) (input b float64 (m)) "
     "(input V float64 (m)) (input t float64 (n))",
     "(mean (sqr (sub (dot (tanh (add (dot $X $W) $b)) $V) $t)) all)", -2, 2, 0, 0, 0},
};

/* ---- the gradient's dtype for float32 ---------------------------------- */

static void check_float32(void)
{
    tg_term *x = read1("(input x float32 (3))");
    char *c = subst("(grad (sum (mul (exp $x) 2) all) $x)", &(gin){x, "x", TG_FLOAT32, 1, {0}}, 1);
    tg_term *g = read1(c);
    free(c);
    tg_error err;
    tg_term *in[1] = {x};
    tg_fn_options o = {.interpret = kt_path};
    tg_fn *f = g ? tg_fn_compile(ctx, 1, in, 1, &g, &o, &err) : NULL;
    float xv[3] = {0.5f, -1, 2};
    tg_array a, out;
    int64_t sh[1] = {3};
    tg_array_init(&a, TG_FLOAT32, 1, sh, xv);
    memset(&out, 0, sizeof out);
    int ok = f && tg_fn_call(f, &a, &out, &err) == 0 && out.dtype == TG_FLOAT32;
    for (int i = 0; ok && i < 3; i++)
        ok = fabsf(((float *)out.data)[i] - 2 * expf(xv[i])) <= 1e-6f * 2 * expf(xv[i]);
    TAP_CHECK(ok, "%s: the gradient with respect to a float32 input is float32 and right",
              kt_path ? "interpreter" : "compiled");
    free(out.data);
    tg_fn_free(f);
}

/* ---- second derivatives --------------------------------------------------- */

/* (grad (sum (mul (grad F x) v) all) x), the Hessian of F times v, against
 * (g(x + h v) - g(x - h v)) / 2h, g the gradient. */
static void check_hvp(const char *name, const char *inputs, const char *F)
{
    gin in[8];
    int nin = read_inputs(inputs, in, 8);
    char tmpl[2][2048];
    snprintf(tmpl[0], sizeof tmpl[0], "(grad %s $x)", F);
    snprintf(tmpl[1], sizeof tmpl[1], "(grad (sum (mul (grad %s $x) $v) all) $x)", F);
    char *gtext = subst(tmpl[0], in, nin), *htext = subst(tmpl[1], in, nin);
    tg_term *g = read1(gtext), *H = read1(htext);
    free(gtext), free(htext);
    tg_error err;
    tg_fn *gf = compile(in, nin, 1, &g, &err);
    tg_fn *hf = gf ? compile(in, nin, 1, &H, &err) : NULL;
    if (!gf || !hf) {
        TAP_CHECK(0, "%s: compiles (%s)", name, err.message);
        tg_fn_free(gf);
        return;
    }
    syms S = {.n = 0};
    kt_arr arr[8];
    make_arrays(in, nin, arr, &S, 2, 4, -1.5, 1.5, 0);
    tg_array ia[8], ho, gp, gm;
    for (int i = 0; i < nin; i++)
        ia[i] = arr[i].a;
    memset(&ho, 0, sizeof ho), memset(&gp, 0, sizeof gp), memset(&gm, 0, sizeof gm);
    int ok = tg_fn_call(hf, ia, &ho, &err) == 0;
    /* x +- h v (x is input 0, v input 1) */
    const tg_array *x = &arr[0].a, *v = &arr[1].a;
    double h = 1e-5, worst = 0;
    int64_t n = kt_count(x);
    long double *x0 = malloc((size_t)(n ? n : 1) * sizeof *x0);
    int64_t idx[TG_MAXDIM] = {0};
    int64_t k = 0;
    if (n)
        do
            x0[k++] = kt_get(x, idx);
        while (kt_next(x->ndim, x->shape, idx));
    for (int sgn = 1; ok && sgn >= -1; sgn -= 2) {
        memset(idx, 0, sizeof idx), k = 0;
        if (n)
            do
                kt_set(x, idx, x0[k++] + sgn * h * kt_get(v, idx));
            while (kt_next(x->ndim, x->shape, idx));
        tg_array *o = sgn > 0 ? &gp : &gm;
        memset(o, 0, sizeof *o);
        ok = tg_fn_call(gf, ia, o, &err) == 0;
    }
    memset(idx, 0, sizeof idx);
    if (ok && n)
        do {
            double fd = (double)(kt_get(&gp, idx) - kt_get(&gm, idx)) / (2 * h);
            double e = fabs((double)kt_get(&ho, idx) - fd) / (1 + fabs(fd));
            if (!(e <= worst))
                worst = e;
        } while (kt_next(x->ndim, x->shape, idx));
    TAP_CHECK(ok && worst <= 1e-6, "%s, %s: Hessian-vector product matches differences of the gradient "
              "(error %.2g)", kt_path ? "interpreter" : "compiled", name, worst);
    if (!ok)
        tap_diag("%s", err.message);
    free(x0);
    free(ho.data), free(gp.data), free(gm.data);
    for (int i = 0; i < nin; i++)
        free(arr[i].block);
    tg_fn_free(gf), tg_fn_free(hf);
}

/* ---- linear time ---------------------------------------------------------- */

/* The number of distinct pairs of t (explicit stack). */
static size_t distinct(tg_term *t)
{
    size_t cap = 1 << 20, n = 0, sp = 0, scap = 1024;
    tg_term **seen = calloc(cap, sizeof *seen), **st = malloc(scap * sizeof *st);
    st[sp++] = t;
    while (sp) {
        tg_term *u = st[--sp];
        if (tg_kind_of(u) != TG_PAIR)
            continue;
        size_t i = tg_hash(u) & (cap - 1);
        while (seen[i] && seen[i] != u)
            i = (i + 1) & (cap - 1);
        if (seen[i])
            continue;
        seen[i] = u, n++;
        tg_iter it;
        tg_term *e;
        tg_iter_init(&it, u);
        while ((e = tg_iter_next(&it))) {
            if (sp == scap)
                st = realloc(st, (scap *= 2) * sizeof *st);
            st[sp++] = e;
        }
    }
    free(seen), free(st);
    return n;
}

/* A chain of 10^5 ops, exp log (mul t 1.0001) (add t -0.0001) in turn, and
 * a DAG whose every node uses the one before twice, t -> t + 1e-4 sin(t):
 * their gradients against the chain rule run here in C. */
static void check_linear(void)
{
    tg_term *x = read1("(input x float64 ())");
    tg_term *sin_ = tg_symbol_cstr(ctx, "sin"), *mul = tg_symbol_cstr(ctx, "mul"),
            *add = tg_symbol_cstr(ctx, "add"), *grad = tg_symbol_cstr(ctx, "grad"),
            *exp_ = tg_symbol_cstr(ctx, "exp"), *log_ = tg_symbol_cstr(ctx, "log");
    tg_term *c1 = tg_double(ctx, 1.0001), *c2 = tg_double(ctx, -0.0001), *eps = tg_double(ctx, 1e-4);
    const int N = 100000, D = 10000;
    double x0 = 0.7;
    /* the chain */
    tg_term *t = x;
    double v = x0, d = 1;
    for (int k = 0; k < N; k++) {
        tg_term *a[2] = {t, k % 4 == 2 ? c1 : c2};
        switch (k % 4) {
        case 0: t = tg_app(ctx, exp_, 1, a), d *= exp(v), v = exp(v); break;
        case 1: t = tg_app(ctx, log_, 1, a), d /= v, v = log(v); break;
        case 2: t = tg_app(ctx, mul, 2, a), d *= 1.0001, v *= 1.0001; break;
        default: t = tg_app(ctx, add, 2, a), v += -0.0001;
        }
    }
    tg_term *ga[2] = {t, x};
    tg_term *g = tg_app(ctx, grad, 2, ga);
    tg_error err;
    tg_term *ex = tg_grad_expand(ctx, g, NULL, &err);
    size_t n = ex ? distinct(ex) : 0;
    TAP_CHECK(ex && n < 5 * (size_t)N, "the gradient of a chain of 10^5 ops has %zu distinct nodes", n);
    tg_fn_options o = {.interpret = 1};
    tg_fn *f = ex ? tg_fn_compile(ctx, 1, &x, 1, &ex, &o, &err) : NULL;
    tg_array a, out;
    tg_array_init(&a, TG_FLOAT64, 0, NULL, &x0);
    memset(&out, 0, sizeof out);
    int ok = f && tg_fn_call(f, &a, &out, &err) == 0;
    double got = ok ? *(double *)out.data : NAN;
    TAP_CHECK(ok && fabs(got - d) <= 1e-9 * fabs(d), "chain of 10^5 ops: gradient %.17g, the chain rule %.17g",
              got, d);
    if (!ok)
        tap_diag("%s", err.message);
    free(out.data);
    tg_fn_free(f);
    /* the DAG */
    t = x, v = x0, d = 1;
    for (int k = 0; k < D; k++) {
        tg_term *s = tg_app(ctx, sin_, 1, &t);
        tg_term *m[2] = {eps, s};
        tg_term *a2[2] = {t, tg_app(ctx, mul, 2, m)};
        t = tg_app(ctx, add, 2, a2);
        d *= 1 + 1e-4 * cos(v), v += 1e-4 * sin(v);
    }
    ga[0] = t;
    g = tg_app(ctx, grad, 2, ga);
    ex = tg_grad_expand(ctx, g, NULL, &err);
    n = ex ? distinct(ex) : 0;
    TAP_CHECK(ex && n < 10 * (size_t)D, "the gradient of a DAG of 2^10000 paths has %zu distinct nodes", n);
    f = ex ? tg_fn_compile(ctx, 1, &x, 1, &ex, &o, &err) : NULL;
    memset(&out, 0, sizeof out);
    ok = f && tg_fn_call(f, &a, &out, &err) == 0;
    got = ok ? *(double *)out.data : NAN;
    TAP_CHECK(ok && fabs(got - d) <= 1e-9 * fabs(d), "DAG of 2^10000 paths: gradient %.17g, the chain rule %.17g",
              got, d);
    if (!ok)
        tap_diag("%s", err.message);
    free(out.data);
    tg_fn_free(f);
}


/* ---- errors ------------------------------------------------------------------ */

/* Expanding text fails with a message holding each of the parts. */
static void check_error(const char *what, const char *text, const tg_grad_options *opt, const char *part1,
                        const char *part2)
{
    tg_term *t = read1(text);
    tg_error err;
    tg_error_clear(&err);
    tg_term *r = t ? tg_grad_expand(ctx, t, opt, &err) : NULL;
    TAP_CHECK(!r && err.code != TG_OK && strstr(err.message, part1) && (!part2 || strstr(err.message, part2)),
              "%s: an error naming %s", what, part1);
    if (r || !strstr(err.message, part1) || (part2 && !strstr(err.message, part2)))
        tap_diag("got: %s", r ? "a result" : err.message);
}

static void check_errors(void)
{
    check_error("a cost that is not 0-d", "(grad (exp (input x float64 (3))) (input x float64 (3)))", NULL,
                "the cost (exp (input x float64 (3))) must be a 0-d float tensor", "(3)");
    check_error("an integer cost", "(grad (sum (input i int64 (3)) all) (input i int64 (3)))", NULL,
                "the cost (sum (input i int64 (3)) all) must be a 0-d float tensor", "int64");
    check_error("an integer WRT",
                "(grad (sum (mul (input x float64 (3)) (input i int64 (3))) all) (input i int64 (3)))", NULL,
                "(input i int64 (3)) is int64", "float");
    check_error("a WRT the cost does not depend on",
                "(grad (sum (input x float64 (3)) all) (input b float64 (2)))", NULL,
                "the cost does not depend on (input b float64 (2))", "(grad (sum (input x float64 (3)) all)");
    check_error("a subterm the cost does not hold",
                "(grad (sum (input x float64 (3)) all) (exp (input x float64 (3))))", NULL,
                "the cost does not depend on (exp (input x float64 (3)))", NULL);
    {   /* a user's rule answering what is not an item */
        tg_error e;
        tg_rules *bad = tg_rules_new(ctx, &e);
        const char *text = "(include \"tensor.rules\") (op vjp (arity 2)) (op adjoints (arity 0+))\n"
                           "(rule bad-vjp-sin (vjp (sin ?x) ?g) => (adjoints (?g ?x)))";
        int ok = bad && tg_rules_load_string(bad, text, strlen(text), "bad.rules", &e) == 0;
        TAP_CHECK(ok, "a bad vjp rule loads (%s)", ok ? "" : e.message);
        check_error("a vjp rule answering an item for something else than an argument",
                    "(grad (sum (sin (input x float64 (4))) all) (input x float64 (4)))",
                    &(tg_grad_options){bad, 0}, "the vjp rule answers ((tensor g float64 (4)) (tensor 0 float64 (4)))",
                    "(sin (input x float64 (4)))");
        tg_rules_free(bad);
    }
    check_error("a malformed grad", "(grad (input x float64 ()))", NULL, "a gradient is (grad COST WRT)",
                "(grad (input x float64 ()))");
    check_error("a grad inside a grad, the inner one bad",
                "(grad (sum (grad (input x float64 (2)) (input x float64 (2))) all) (input x float64 (2)))", NULL,
                "the cost (input x float64 (2)) must be a 0-d float tensor", NULL);
    check_error("a type error in the cost", "(grad (sum (add (input x float64 (3)) (input y float64 (2))) all) "
                "(input x float64 (3)))", NULL, "do not broadcast", NULL);
    tg_error err;
    TAP_CHECK(!tg_grad_expand(NULL, tg_nil(), NULL, &err) && err.code == TG_ERR_ARG &&
              !tg_grad_expand(ctx, NULL, NULL, &err) && err.code == TG_ERR_ARG,
              "tg_grad_expand: NULL arguments are errors");
    /* disconnected_inputs: a zero gradient of WRT's shape and dtype */
    tg_grad_options go = {NULL, 1};
    tg_term *x = read1("(input x float64 (3))"), *b = read1("(input b float32 (n 2))");
    tg_term *g = read1("(grad (sum (input x float64 (3)) all) (input b float32 (n 2)))");
    tg_term *in[2] = {x, b};
    tg_fn_options o = {.interpret = 1, .grad = &go};
    tg_fn *f = tg_fn_compile(ctx, 2, in, 1, &g, &o, &err);
    float bv[6] = {1, 2, 3, 4, 5, 6};
    double xv[3] = {1, 2, 3};
    tg_array ia[2], out;
    int64_t sx[1] = {3}, sb[2] = {3, 2};
    tg_array_init(&ia[0], TG_FLOAT64, 1, sx, xv);
    tg_array_init(&ia[1], TG_FLOAT32, 2, sb, bv);
    memset(&out, 0, sizeof out);
    int ok = f && tg_fn_call(f, ia, &out, &err) == 0 && out.dtype == TG_FLOAT32 && out.ndim == 2 &&
             out.shape[0] == 3 && out.shape[1] == 2;
    for (int i = 0; ok && i < 6; i++)
        ok = ((float *)out.data)[i] == 0;
    TAP_CHECK(ok, "disconnected set: the gradient with respect to an input the cost does not read is zeros");
    free(out.data);
    tg_fn_free(f);
}

/* ---- coverage: every op has a vjp rule, is lowered to others, or is the sweep's */

static void check_coverage(void)
{
    tg_error err;
    tg_rules *rs = tg_rules_new(ctx, &err);
    int ok = rs && tg_rules_load_string(rs, tgGr_rules_text, strlen(tgGr_rules_text), "grad", &err) == 0;
    TAP_CHECK(ok, "the library's gradient rules load (%s)", ok ? "" : err.message);
    tg_term *rules = ok ? tg_rules_list(rs, TG_LIST_RULES, &err) : NULL;
    /* ops the typer reads as others: no node of theirs reaches the sweep */
    static const char *const lowered[] = {"gemm"};
    /* ops whose gradient the sweep builds itself (a scan's: a backwards scan) */
    static const char *const swept[] = {"scan"};
    tg_term *vjp = tg_symbol_cstr(ctx, "vjp");
    for (int op = TGV_ADD; op < TGV_NOPS; op++) {
        const char *name = tgV_op_name((tgV_op)op);
        tg_term *sym = tg_symbol_cstr(ctx, name);
        const char *how = NULL;
        for (size_t i = 0; i < sizeof lowered / sizeof *lowered; i++)
            if (!strcmp(lowered[i], name))
                how = "read as add, mul and dot by the typer";
        for (size_t i = 0; i < sizeof swept / sizeof *swept; i++)
            if (!strcmp(swept[i], name))
                how = "a backwards scan, built by the sweep (check_scans)";
        if (op == TGV_USER)     /* tg_fn_def_elementwise: test_pipeline.c */
            how = "the user's vjp rule (ops defined with a C expression)";
        if (op == TGV_DEFINED)  /* a defop op kept whole: test_defop_vjp.c */
            how = "the user's vjp rule (ops defined with defop)";
        tg_iter it;
        tg_term *r;
        tg_iter_init(&it, rules);
        while (!how && (r = tg_iter_next(&it))) {
            tg_term *lhs = tg_nth(r, 2);
            if (tg_car(lhs) == vjp && tg_car(tg_nth(lhs, 1)) == sym)
                how = "a vjp rule";
        }
        TAP_CHECK(how, "op %s: %s", name, how ? how : "no vjp rule");
    }
    tg_rules_free(rs);
}

/* ---- a user's vjp rule ------------------------------------------------------- */

static void check_user_rules(void)
{
    tg_error err;
    tg_rules *rs = tg_rules_new(ctx, &err);
    const char *text = "(include \"tensor.rules\") (op vjp (arity 2)) (op adjoints (arity 0+))\n"
                       "(rule my-vjp-sin (vjp (sin ?x) ?g) => (adjoints (?x (mul ?g (sin (add ?x 1.5707963267948966))))))";
    int ok = rs && tg_rules_load_string(rs, text, strlen(text), "user.rules", &err) == 0;
    TAP_CHECK(ok, "a user's vjp rule loads after tensor.rules and the vjp, adjoints ops (%s)", ok ? "" : err.message);
    tg_grad_options go = {rs, 0};
    tg_term *g = read1("(grad (sum (mul (sin (input x float64 (3))) (exp (input x float64 (3)))) all) "
                       "(input x float64 (3)))");
    tg_term *ex = ok ? tg_grad_expand(ctx, g, &go, &err) : NULL;
    char *p = ex ? tg_print(ex, NULL) : NULL;
    TAP_CHECK(p && strstr(p, "(sin (add 1.5707963267948966 (input x float64 (3))))") && strstr(p, "(exp "),
              "the user's rule is used before the library's, the library's for the other ops");
    free(p);
    tg_term *x = read1("(input x float64 (3))");
    tg_fn_options o = {.interpret = 1, .grad = &go};
    tg_fn *f = ok ? tg_fn_compile(ctx, 1, &x, 1, &g, &o, &err) : NULL;
    double xv[3] = {0.3, -1.2, 2}, want[3];
    for (int i = 0; i < 3; i++)
        want[i] = (cos(xv[i]) + sin(xv[i])) * exp(xv[i]);
    tg_array a, out;
    int64_t sh[1] = {3};
    tg_array_init(&a, TG_FLOAT64, 1, sh, xv);
    memset(&out, 0, sizeof out);
    ok = f && tg_fn_call(f, &a, &out, &err) == 0;
    for (int i = 0; ok && i < 3; i++)
        ok = fabs(((double *)out.data)[i] - want[i]) <= 1e-12 * (1 + fabs(want[i]));
    TAP_CHECK(ok, "tg_fn_options.grad passes the user's rules to the expansion");
    free(out.data);
    tg_fn_free(f);
    tg_rules_free(rs);
}

/* ---- sharing ----------------------------------------------------------------- */

/* How many times the schedule's text holds s. */
static int count(const char *text, const char *s)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, s)); p++)
        n++;
    return n;
}

/* (grad C W) and (grad C b) of one cost as two outputs: the adjoint of
 * the hidden layer is one term in both, and the schedule computes it
 * once (one tanh derivative, one dot of the output weights). */
static void check_sharing(void)
{
    const char *ins = "(input X float64 (n k)) (input W float64 (k m)) (input b float64 (m)) (input V float64 (m))";
    gin in[4];
    int nin = read_inputs(ins, in, 4);
    const char *C = "(sum (sqr (dot (tanh (add (dot $X $W) $b)) $V)) all)";
    char tw[512], tb[512];
    snprintf(tw, sizeof tw, "(grad %s $W)", C);
    snprintf(tb, sizeof tb, "(grad %s $b)", C);
    char *gw = subst(tw, in, nin), *gb = subst(tb, in, nin);
    tg_term *outs[2] = {read1(gw), read1(gb)};
    free(gw), free(gb);
    tg_error err;
    tg_term *ew = tg_grad_expand(ctx, outs[0], NULL, &err), *eb = tg_grad_expand(ctx, outs[1], NULL, &err);
    /* the adjoint of the hidden layer's sum is a subterm of both */
    size_t nw = ew ? distinct(ew) : 0, nb = eb ? distinct(eb) : 0;
    tg_term *pair[2] = {ew, eb};
    size_t nboth = ew && eb ? distinct(tg_list(ctx, 2, pair, NULL)) - 1 : 0;
    TAP_CHECK(ew && eb && nboth < nw + nb - 10,
              "the two gradients share their backward pass: %zu and %zu distinct nodes, %zu together", nw, nb,
              nboth);
    TAP_CHECK(ew && eb && ew == tg_grad_expand(ctx, outs[0], NULL, &err),
              "expanding a gradient again gives the same pointer");
    tg_fn *f = compile(in, nin, 2, outs, &err);
    tg_term *sch = f ? tg_fn_schedule(f) : NULL;
    char *text = sch ? tg_print(sch, NULL) : NULL;
    /* forward: one tanh; backward: 1 - tanh^2 once; dots: X.W forward,
     * h.V forward, the outer product V g pushed back once, X^T . (...) */
    TAP_CHECK(text && count(text, "(tanh ") == 1 && count(text, "(sqr ") == 1,
              "the schedule of both outputs computes tanh once and its derivative once");
    if (text)
        tap_diag("%s", text);
    tg_fn *f1 = compile(in, nin, 1, outs, &err), *f2 = compile(in, nin, 1, outs + 1, &err);
    char *t1s = f1 ? tg_print(tg_fn_schedule(f1), NULL) : NULL, *t2s = f2 ? tg_print(tg_fn_schedule(f2), NULL) : NULL;
    int n12 = text ? count(text, "(%") : 0, n1 = t1s ? count(t1s, "(%") : 0, n2 = t2s ? count(t2s, "(%") : 0;
    TAP_CHECK(text && t1s && t2s && n12 < n1 + n2 && n12 <= n1 + 2,
              "the schedule of both has %d nodes: the gradient with respect to W alone %d, to b alone %d", n12,
              n1, n2);
    free(text), free(t1s), free(t2s);
    tg_fn_free(f), tg_fn_free(f1), tg_fn_free(f2);
}

/* ---- rewriting the expanded terms --------------------------------------------- */

/* The logistic regression's loss and gradients compiled with the rule
 * library's default rewriter (tg_fn_options.rules: the grads are
 * expanded first, then rewritten) compute what the unrewritten ones
 * compute. */
static void check_rewritten(void)
{
    const char *ins = "(input X float64 (n k)) (input w float64 (k)) (input b float64 ()) (input t float64 (n))";
    const char *L = "(add (mean (log1p (exp (neg (mul $t (add (dot $X $w) $b))))) all) (mul 0.01 (sum (sqr $w) all)))";
    gin in[4];
    int nin = read_inputs(ins, in, 4);
    char tw[1024], tb[1024];
    snprintf(tw, sizeof tw, "(grad %s $w)", L);
    snprintf(tb, sizeof tb, "(grad %s $b)", L);
    char *ls = subst(L, in, nin), *ws = subst(tw, in, nin), *bs = subst(tb, in, nin);
    tg_term *outs[3] = {read1(ls), read1(ws), read1(bs)}, *it[4];
    free(ls), free(ws), free(bs);
    for (int i = 0; i < nin; i++)
        it[i] = in[i].t;
    tg_error err;
    tg_rules *rs = tg_rules_new(ctx, &err);
    int ok = rs && tg_rules_load_file(rs, tap_path("patterns/lib/all.rules"), &err) == 0;
    tg_fn_options plain = {.interpret = kt_path};
    tg_fn_options rw = {.interpret = kt_path, .rules = rs};
    tg_fn *f0 = ok ? tg_fn_compile(ctx, 4, it, 3, outs, &plain, &err) : NULL;
    tg_fn *f1 = f0 ? tg_fn_compile(ctx, 4, it, 3, outs, &rw, &err) : NULL;
    syms S = {.n = 0};
    kt_arr arr[4];
    make_arrays(in, nin, arr, &S, 3, 5, -2, 2, 0);
    tg_array ia[4], o0[3], o1[3];
    for (int i = 0; i < nin; i++)
        ia[i] = arr[i].a;
    memset(o0, 0, sizeof o0), memset(o1, 0, sizeof o1);
    ok = f1 && tg_fn_call(f0, ia, o0, &err) == 0 && tg_fn_call(f1, ia, o1, &err) == 0;
    double worst = 0;
    for (int j = 0; ok && j < 3; j++) {
        int64_t idx[TG_MAXDIM] = {0};
        if (kt_count(&o0[j]))
            do {
                double a = (double)kt_get(&o0[j], idx), c = (double)kt_get(&o1[j], idx);
                double e = fabs(a - c) / (1 + fabs(a));
                if (!(e <= worst))
                    worst = e;
            } while (kt_next(o0[j].ndim, o0[j].shape, idx));
    }
    char *sch = f1 ? tg_print(tg_fn_schedule(f1), NULL) : NULL;
    TAP_CHECK(ok && worst <= 1e-12, "%s: loss and gradients rewritten by default compute the same (error %.2g; "
              "%d nodes in the rewritten schedule)", kt_path ? "interpreter" : "compiled", worst,
              sch ? count(sch, "(%") : 0);
    if (!ok)
        tap_diag("%s", err.message);
    free(sch);
    for (int j = 0; j < 3; j++)
        free(o0[j].data), free(o1[j].data);
    for (int i = 0; i < nin; i++)
        free(arr[i].block);
    tg_fn_free(f0), tg_fn_free(f1);
    tg_rules_free(rs);
}

/* ---- WRT a subterm, integers on the way, a grad inside a term ------------------- */

/* Run the one-output function of text over x (3) on xv and w (3) on wv. */
static int run3(const char *text, const double *xv, const double *wv, double *out)
{
    tg_term *in[2] = {read1("(input x float64 (3))"), read1("(input w float64 (3))")}, *t = read1(text);
    tg_error err;
    tg_fn_options o = {.interpret = kt_path};
    tg_fn *f = t ? tg_fn_compile(ctx, 2, in, 1, &t, &o, &err) : NULL;
    tg_array a[2], r;
    int64_t sh[1] = {3};
    tg_array_init(&a[0], TG_FLOAT64, 1, sh, (void *)xv);
    tg_array_init(&a[1], TG_FLOAT64, 1, sh, (void *)wv);
    tg_array_init(&r, TG_FLOAT64, 1, sh, out);
    int ok = f && tg_fn_call(f, a, &r, &err) == 0;
    if (!ok)
        tap_diag("%s: %s", text, err.message);
    tg_fn_free(f);
    return ok;
}

static void check_special(void)
{
    double xv[3] = {0.3, -1.1, 0.8}, wv[3] = {1.5, -0.5, 2}, r[3];
    int ok = run3("(grad (sum (mul (sin (exp (input x float64 (3)))) (input w float64 (3))) all) "
                  "(exp (input x float64 (3))))", xv, wv, r);
    for (int i = 0; ok && i < 3; i++)
        ok = fabs(r[i] - cos(exp(xv[i])) * wv[i]) <= 1e-12;
    TAP_CHECK(ok, "%s: the gradient with respect to a subterm, (exp x), is cos(exp x) w",
              kt_path ? "interpreter" : "compiled");
    ok = run3("(grad (sum (mul (cast (cast (mul (input x float64 (3)) 3) int64) float64) (input w float64 (3))) all) "
              "(input x float64 (3)))", xv, wv, r);
    for (int i = 0; ok && i < 3; i++)
        ok = r[i] == 0;
    TAP_CHECK(ok, "%s: a cost depending on x only through integers has a zero gradient, not an error",
              kt_path ? "interpreter" : "compiled");
    ok = run3("(add (mul 2 (grad (sum (mul (sqr (input x float64 (3))) (input w float64 (3))) all) "
              "(input x float64 (3)))) (input w float64 (3)))", xv, wv, r);
    for (int i = 0; ok && i < 3; i++)
        ok = fabs(r[i] - (4 * xv[i] * wv[i] + wv[i])) <= 1e-12;
    TAP_CHECK(ok, "%s: a grad inside other terms", kt_path ? "interpreter" : "compiled");
    ok = run3("(grad (sum (switch (gt (input x float64 (3)) (input w float64 (3))) (sin (input x float64 (3))) "
              "(input w float64 (3))) all) (input w float64 (3)))", xv, wv, r);
    for (int i = 0; ok && i < 3; i++)
        ok = r[i] == (xv[i] > wv[i] ? 0 : 1);
    TAP_CHECK(ok, "%s: the condition of a switch passes no gradient", kt_path ? "interpreter" : "compiled");
}

/* ---- inc_subtensor and set_subtensor against a reference ---------------------- */

/* Python's slice of an axis of size n (PySlice_AdjustIndices), written
 * here as the reference: its length, *first its first index. */
static int64_t ref_slice(int64_t n, int hs, int64_t start, int he, int64_t stop, int64_t step, int64_t *first)
{
    int64_t lo = step > 0 ? 0 : -1, hi = step > 0 ? n : n - 1;
    int64_t b = step > 0 ? 0 : n - 1, e = step > 0 ? n : -1;
    if (hs)
        b = start < 0 ? start + n : start, b = b < lo ? lo : b > hi ? hi : b;
    if (he)
        e = stop < 0 ? stop + n : stop, e = e < lo ? lo : e > hi ? hi : e;
    *first = b;
    if (step > 0)
        return e > b ? (e - b - 1) / step + 1 : 0;
    return b > e ? (b - e - 1) / -step + 1 : 0;
}

/* One index of the reference: all of the axis, an index, or a slice. */
typedef struct ridx {
    int kind;   /* 0 all, 1 index, 2 slice */
    int64_t i;
    int hs, he;
    int64_t start, stop, step;
} ridx;

typedef struct ucase {
    const char *inputs, *term;
    int inc;
    ridx ix[2];
    int dyn;    /* axis 0's index is input 2 (0-d int64) */
} ucase;

static void check_updates(void)
{
    static const ucase cases[] = {
        {"(input x float64 (n m)) (input v float64 (m))", "(inc_subtensor $x $v (slice 1 none none))", 1,
         {{2, 0, 1, 0, 1, 0, 1}, {0, 0, 0, 0, 0, 0, 0}}, 0},
        {"(input x float64 (n m)) (input v float64 ())", "(set_subtensor $x $v (slice none none -2) -1)", 0,
         {{2, 0, 0, 0, 0, 0, -2}, {1, -1, 0, 0, 0, 0, 0}}, 0},
        {"(input x float64 (n m)) (input v float64 (1))",
         "(inc_subtensor $x $v (slice -2 none none) (slice none none 2))", 1,
         {{2, 0, 1, 0, -2, 0, 1}, {2, 0, 0, 0, 0, 0, 2}}, 0},
        {"(input x float64 (n m)) (input v float64 (m)) (input i int64 ())", "(set_subtensor $x $v $i)", 0,
         {{1, 0, 0, 0, 0, 0, 0}, {0, 0, 0, 0, 0, 0, 0}}, 1},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        const ucase *u = &cases[c];
        gin in[3];
        int nin = read_inputs(u->inputs, in, 3);
        char *t = subst(u->term, in, nin);
        tg_term *T = read1(t);
        tg_error err;
        tg_fn *f = T ? compile(in, nin, 1, &T, &err) : NULL;
        int ok = f != NULL;
        if (!f)
            tap_diag("%s: %s", t, err.message);
        for (int round = 0; ok && round < 3; round++) {
            syms S = {.n = 0};
            kt_arr arr[3];
            make_arrays(in, nin, arr, &S, 3, 5, -2, 2, 0);
            int64_t n = arr[0].a.shape[0], m = arr[0].a.shape[1], dynv = (int64_t)(kt_rand() % (uint64_t)n) - (round ? n : 0);
            if (u->dyn)
                memcpy(arr[2].a.data, &dynv, 8);
            tg_array ia[3], out;
            for (int i = 0; i < nin; i++)
                ia[i] = arr[i].a;
            memset(&out, 0, sizeof out);
            ok = tg_fn_call(f, ia, &out, &err) == 0;
            int64_t sz[2] = {n, m}, idx[2];
            for (idx[0] = 0; ok && idx[0] < n; idx[0]++)
                for (idx[1] = 0; ok && idx[1] < m; idx[1]++) {
                    /* where (i, j) is in the part, and its index there */
                    int64_t pc[2];
                    int pn = 0, inside = 1;
                    for (int d = 0; d < 2; d++) {
                        ridx r = u->ix[d];
                        if (d == 0 && u->dyn)
                            r.kind = 1, r.i = dynv;
                        if (r.kind == 0) {
                            pc[pn++] = idx[d];
                        } else if (r.kind == 1) {
                            inside &= idx[d] == (r.i < 0 ? r.i + sz[d] : r.i);
                        } else {
                            int64_t first, len = ref_slice(sz[d], r.hs, r.start, r.he, r.stop, r.step, &first);
                            int64_t k = (idx[d] - first) / r.step;
                            inside &= (idx[d] - first) % r.step == 0 && k >= 0 && k < len;
                            pc[pn++] = k;
                        }
                    }
                    long double want = kt_get(&arr[0].a, idx);
                    if (inside) {
                        const tg_array *v = &arr[1].a;
                        int64_t vi[2];
                        for (int d = 0; d < v->ndim; d++)
                            vi[d] = v->shape[d] == 1 ? 0 : pc[pn - v->ndim + d];
                        want = u->inc ? want + kt_get(v, vi) : kt_get(v, vi);
                    }
                    ok = kt_get(&out, idx) == (double)want;
                    if (!ok)
                        tap_diag("at (%lld %lld): %.17Lg, want %.17Lg", (long long)idx[0], (long long)idx[1],
                                 kt_get(&out, idx), want);
                }
            free(out.data);
            for (int i = 0; i < nin; i++)
                free(arr[i].block);
        }
        TAP_CHECK(ok, "%s, %s: matches the reference", kt_path ? "interpreter" : "compiled", u->term);
        free(t);
        tg_fn_free(f);
    }
}

/* ==== scans (doc/grad.md, "Scans") ==========================================
 * Gradients through scans against finite differences, on both paths,
 * compiled without rules and with the library's default rewriter (the
 * Scan rewrites then act on the forward and the backward scans). */

#define RNN_LAMBDA "(lambda (s h W) ((tanh (add (dot W h) s))))"

static const gcase scan_cases[] = {
    {"scan: RNN, stacked sitsot, all its states in the cost",
     "(input x float64 (n m)) (input h0 float64 (m)) (input W float64 (m m)) (input V float64 (n m))",
     "(sum (mul (scan " RNN_LAMBDA " (steps auto) (sequences $x) (outputs (sitsot $h0)) (non_sequences $W)) $V) all)",
     -1, 1, 0, 0, 0},
    {"scan: sitsot last, and non-scan terms of the same inputs",
     "(input x float64 (n m)) (input h0 float64 (m)) (input W float64 (m m))",
     "(add (sum (sqr (scan " RNN_LAMBDA " (steps auto) (sequences $x) (outputs (sitsot $h0 last)) "
     "(non_sequences $W))) all) (sum (mul $W $W) all) (sum (sin $x) all) (sum (mul (dot $W $h0) $h0) all))",
     -1, 1, 0, 0, 0},
    {"scan: a parameter used twice in the step",
     "(input x float64 (n m)) (input h0 float64 (m)) (input W float64 (m m))",
     "(sum (scan (lambda (s h W) ((tanh (add (dot W h) (dot W s) (mul s s))))) (steps auto) (sequences $x) "
     "(outputs (sitsot $h0)) (non_sequences $W)) all)", -1, 1, 0, 0, 0},
    {"scan: mitsot (taps -2 -1), stacked",
     "(input x float64 (5 m)) (input y0 float64 (2 m)) (input w float64 (m))",
     "(sum (sin (scan (lambda (s a b w) ((add (mul b w) (mul 0.5 (sin a)) s))) (steps auto) (sequences $x) "
     "(outputs (mitsot $y0 (taps -2 -1))) (non_sequences $w))) all)", -1, 1, 0, 0, 0},
    {"scan: mitsot (taps -3 -1), last",
     "(input y0 float64 (3 m)) (input w float64 (m))",
     "(sum (sqr (scan (lambda (a b w) ((tanh (add (mul b w) a)))) (steps 6) (sequences) "
     "(outputs (mitsot $y0 (taps -3 -1) last)) (non_sequences $w))) all)", -1, 1, 0, 0, 0},
    {"scan: mitsot (taps -3 -1) over a symbolic number of steps, stacked",
     "(input x float64 (n m)) (input y0 float64 (3 m)) (input w float64 (m))",
     "(sum (mul (scan (lambda (s a b w) ((add (mul b w) (sin a) s))) (steps auto) (sequences $x) "
     "(outputs (mitsot $y0 (taps -3 -1))) (non_sequences $w)) $x) all)", -1, 1, 0, 0, 0},
    {"scan: nitsot and sitsot outputs, one read stacked, one last",
     "(input x float64 (n m)) (input c float64 (m)) (input w float64 (m))",
     "(add (sum (mul (scan_output (scan (lambda (s acc w) ((mul (exp s) w) (add acc (mul s w)))) (steps auto) "
     "(sequences $x) (outputs (nitsot) (sitsot $c last)) (non_sequences $w)) 0) $x) all) "
     "(sum (sqr (scan_output (scan (lambda (s acc w) ((mul (exp s) w) (add acc (mul s w)))) (steps auto) "
     "(sequences $x) (outputs (nitsot) (sitsot $c last)) (non_sequences $w)) 1)) all))", -1, 1, 0, 0, 0},
    {"scan: nitsot last, backwards",
     "(input x float64 (n m)) (input h0 float64 (m)) (input W float64 (m m))",
     "(add (sum (scan (lambda (s h W) ((sin (add (dot W h) s)) (mul s h))) (steps auto) (sequences $x) "
     "(outputs (sitsot $h0) (nitsot last)) (non_sequences $W) backwards) all) "
     "(sum (scan_output (scan (lambda (s h W) ((sin (add (dot W h) s)) (mul s h))) (steps auto) (sequences $x) "
     "(outputs (sitsot $h0) (nitsot last)) (non_sequences $W) backwards) 1) all))", -1, 1, 0, 0, 0},
    {"scan: a 0-d sitsot (carried in a register) and a sum in the step",
     "(input x float64 (n m)) (input c float64 ())",
     "(scan (lambda (s acc) ((add (mul acc 0.9) (sum (sin s) all)))) (steps auto) (sequences $x) "
     "(outputs (sitsot $c last)) (non_sequences))", -1, 1, 0, 0, 0},
    /* nested: a scan whose step contains a scan (its gradient a backward
     * scan whose step holds the inner scan's forward and backward ones) */
    {"nested scans: an inner scan over each row's elements, its last state summed by the outer",
     "(input x float64 (n m)) (input c float64 ()) (input w float64 ())",
     "(scan (lambda (s acc w) ((add (mul acc 0.5) (scan (lambda (e g w2) ((tanh (add (mul g w2) e)))) (steps auto) "
     "(sequences s) (outputs (sitsot acc last)) (non_sequences w))))) (steps auto) (sequences $x) "
     "(outputs (sitsot $c last)) (non_sequences $w))", -1, 1, 0, 0, 0},
    {"nested scans: an inner RNN of 3 steps from the outer state, W shared, stacked outer states",
     "(input x float64 (n m)) (input h0 float64 (m)) (input W float64 (m m))",
     "(sum (sin (scan (lambda (s h W) ((scan (lambda (g W2 b) ((tanh (add (dot W2 g) b)))) (steps 3) (sequences) "
     "(outputs (sitsot h last)) (non_sequences W s)))) (steps auto) (sequences $x) (outputs (sitsot $h0)) "
     "(non_sequences $W))) all)", -1, 1, 0, 0, 0},
    {"nested scans: the inner stacked (nitsot and mitsot), backwards, read in the outer's result",
     "(input x float64 (n m)) (input y0 float64 (2 m)) (input w float64 (m))",
     "(sum (mul (scan (lambda (s a b w) ((add (mul 0.3 a) (sum (scan (lambda (e p q v) ((add (mul q v) (mul 0.2 (sin p)) e))) "
     "(steps auto) (sequences (reshape s (1 m))) (outputs (mitsot (stack 0 a b) (taps -2 -1))) (non_sequences w) backwards) "
     "(axes 0))))) (steps auto) (sequences $x) (outputs (mitsot $y0 (taps -2 -1))) (non_sequences $w)) $x) all)",
     -1, 1, 0, 0, 0},
    {"nested scans, three deep",
     "(input x float64 (n m)) (input c float64 ())",
     "(scan (lambda (s acc) ((add acc (scan (lambda (e g r) ((add g (scan (lambda (k e2) ((sin (mul k e2)))) (steps auto) "
     "(sequences r) (outputs (nitsot last)) (non_sequences e))))) (steps auto) (sequences s) (outputs (sitsot acc last)) "
     "(non_sequences s))))) (steps auto) (sequences $x) (outputs (sitsot $c last)) (non_sequences))", -1, 1, 0, 0, 0},
};

/* The gradient of an RNN's loss with respect to W, x and h0, rewritten by
 * default: the forward trace kept (the values agree with no rewriting),
 * and each scan of the schedule (forward, backward) one generated loop. */
static void check_scan_schedule(tg_rules *rs)
{
    const char *ins = "(input x float64 (n 4)) (input h0 float64 (4)) (input W float64 (4 4))";
    const char *L = "(sum (scan " RNN_LAMBDA " (steps auto) (sequences $x) (outputs (sitsot $h0)) (non_sequences $W)) all)";
    gin in[3];
    int nin = read_inputs(ins, in, 3);
    char *ls = subst(L, in, nin);
    tg_term *cost = read1(ls), *outs[4] = {cost}, *it[3];
    free(ls);
    for (int i = 0; i < nin; i++) {
        tg_term *g[3] = {tg_symbol_cstr(ctx, "grad"), cost, in[i].t};
        outs[1 + i] = tg_list(ctx, 3, g, NULL);
        it[i] = in[i].t;
    }
    tg_error err;
    tg_term *ex[4];
    int ok = 1;
    for (int i = 0; i < 4 && ok; i++)
        ok = (ex[i] = tg_grad_expand(ctx, outs[i], NULL, &err)) != NULL;
    tg_term *gv[5] = {tg_symbol_cstr(ctx, "graph"), ex[0], ex[1], ex[2], ex[3]};
    tg_term *rw = ok ? tg_rewrite(rs, tg_symbol_cstr(ctx, "default"), tg_list(ctx, 5, gv, NULL), &err) : NULL;
    tg_term *ro[4];
    if (rw)
        tg_elements(tg_cdr(ctx, rw), ro, 4);
    tgV_graph *g = rw ? tgV_build(ctx, 3, it, 4, ro, &err) : NULL;
    tgH_sched *s = g ? tgH_schedule(g, NULL, &err) : NULL;
    int nscan = 0, ncomp = 0;
    for (int k = 0; s && k < s->nsteps; k++)
        if (s->steps[k].kind == TGH_SCAN)
            nscan++, ncomp += tgSc_compiles(s, k);
    TAP_CHECK(s && nscan == 2 && ncomp == 2, "an RNN's loss and gradients, rewritten by default: %d scans "
              "(forward, backward), %d of them one generated loop", nscan, ncomp);
    if (!s)
        tap_diag("%s", err.message);
    if (s && (nscan != 2 || ncomp != 2)) {
        char *p = tg_print(rw, NULL);
        tap_diag("rewritten: %s", p);
        free(p);
    }
    /* the same values with and without the rewrites */
    tg_fn_options plain = {.interpret = kt_path}, withr = {.interpret = kt_path, .rules = rs};
    tg_fn *f0 = tg_fn_compile(ctx, 3, it, 4, outs, &plain, &err);
    tg_fn *f1 = f0 ? tg_fn_compile(ctx, 3, it, 4, outs, &withr, &err) : NULL;
    syms S = {.n = 0};
    kt_arr arr[3];
    make_arrays(in, nin, arr, &S, 5, 9, -1, 1, 0);
    tg_array ia[3], o0[4], o1[4];
    for (int i = 0; i < nin; i++)
        ia[i] = arr[i].a;
    memset(o0, 0, sizeof o0), memset(o1, 0, sizeof o1);
    ok = f1 && tg_fn_call(f0, ia, o0, &err) == 0 && tg_fn_call(f1, ia, o1, &err) == 0;
    double worst = 0;
    for (int j = 0; ok && j < 4; j++) {
        int64_t idx[TG_MAXDIM] = {0};
        if (kt_count(&o0[j]))
            do {
                double a = (double)kt_get(&o0[j], idx), c = (double)kt_get(&o1[j], idx);
                double e = fabs(a - c) / (1 + fabs(a));
                if (!(e <= worst))
                    worst = e;
            } while (kt_next(o0[j].ndim, o0[j].shape, idx));
    }
    TAP_CHECK(ok && worst <= 1e-12, "%s: an RNN's loss and gradients rewritten by default compute the same "
              "(error %.2g)", kt_path ? "interpreter" : "compiled", worst);
    if (!ok)
        tap_diag("%s", err.message);
    for (int j = 0; j < 4; j++)
        free(o0[j].data), free(o1[j].data);
    for (int i = 0; i < nin; i++)
        free(arr[i].block);
    tg_fn_free(f0), tg_fn_free(f1);
}

static void check_scans(void)
{
    tg_error err;
    tg_rules *rs = tg_rules_new(ctx, &err);
    int ok = rs && tg_rules_load_file(rs, tap_path("patterns/lib/all.rules"), &err) == 0;
    TAP_CHECK(ok, "the rule library loads");
    for (int r = 0; r < 2; r++) {
        fd_rules = r && ok ? rs : NULL;
        for (size_t i = 0; i < sizeof scan_cases / sizeof *scan_cases; i++) {
            gcase c = scan_cases[i];
            char name[200];
            snprintf(name, sizeof name, "%s%s", c.name, r ? " (rewritten by default)" : "");
            c.name = name;
            check_fd(&c);
        }
    }
    fd_rules = NULL;
    if (ok)
        check_scan_schedule(rs);
    tg_rules_free(rs);
}

static void check_scan_errors(void)
{
    check_error("a scan with until",
                "(grad (sum (scan (lambda (s acc) ((add acc s)) (until (gt acc 3.0))) (steps auto) "
                "(sequences (input x float64 (n))) (outputs (sitsot 0.0)) (non_sequences)) all) (input x float64 (n)))",
                NULL, "no gradient through this scan", "until condition");
    check_error("a scan with until inside another scan's step (named)",
                "(grad (scan (lambda (s acc) ((add acc (scan (lambda (e g) ((add g e)) (until (gt g 1.0))) (steps auto) "
                "(sequences s) (outputs (sitsot acc last)) (non_sequences))))) (steps auto) "
                "(sequences (input x float64 (3 2))) (outputs (sitsot (input c float64 ()) last)) (non_sequences)) "
                "(input x float64 (3 2)))",
                NULL, "in (scan (lambda (e g) ((add g e)) (until", "until condition");
    check_error("a scan with a mitmot output",
                "(grad (sum (scan (lambda (s a b) ((add b (mul a s)))) (steps 3) (sequences (input x float64 (3))) "
                "(outputs (mitmot (input B float64 (4)) (taps 0 1) (out_taps 1))) (non_sequences)) all) "
                "(input x float64 (3)))", NULL, "no gradient through this scan", "mitmot");
    check_error("a scan over fewer steps than rows",
                "(grad (sum (scan (lambda (s acc) ((add acc s))) (steps 2) (sequences (input x float64 (3))) "
                "(outputs (sitsot 0.0)) (non_sequences)) all) (input x float64 (3)))",
                NULL, "no gradient through this scan", "more rows than the scan has steps");
    check_error("an integer sequence",
                "(grad (sum (scan (lambda (s acc) ((add acc s))) (steps auto) (sequences (input i int64 (3))) "
                "(outputs (sitsot 0.0)) (non_sequences)) all) (input i int64 (3)))",
                NULL, "(input i int64 (3)) is int64", NULL);
}

/* ==== end of scans ========================================================= */

int main(void)
{
    ctx = tg_ctx_new(NULL);
    KT_EACH_PATH {
        for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
            check_fd(&cases[i]);
        check_float32();
        check_rewritten();
        check_special();
        check_updates();
        check_scans();      /* scans (gradscan) */
        check_hvp("elementwise", "(input x float64 (n)) (input v float64 (n)) (input y float64 (n))",
                  "(sum (mul (sin $x) (exp (mul $x $y)) (sqr $x)) all)");
        check_hvp("reductions and dot", "(input x float64 (n)) (input v float64 (n)) (input A float64 (m n))",
                  "(add (sum (tanh (dot $A $x)) all) (mean (sqr (sub $x (max $x all))) all) "
                  "(prod (add (abs $x) 1) all))");
    }
    check_linear();
    check_errors();
    check_scan_errors();    /* scans (gradscan) */
    check_coverage();
    check_user_rules();
    check_sharing();
    tg_ctx_free(ctx);
    return TAP_DONE();
}
