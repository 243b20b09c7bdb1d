/* test_arrange.c - argmax / argmin, concatenate, stack, take, inc_take
 * and one_hot (kernels/arrange.c) on both paths, against hand-written
 * loops over random shapes, dtypes and strided inputs; their gradients
 * against finite differences; and the errors, at compile time and at
 * call time. */
#include <stdio.h>

#include "kt.h"

static tg_ctx *ctx;

static bool tgV_float(tg_dtype d) { return d == TG_FLOAT32 || d == TG_FLOAT64; }

/* Compile out over ins (texts) on kt_path and run it on in: the output
 * allocated in *o (free o->data); 0, or -1 with err filled. */
static int run(const char *ins, const char *out, const tg_array *in, tg_array *o, tg_error *err)
{
    tg_fn *fn = kt_compile(ctx, ins, out, NULL, kt_path, err);
    memset(o, 0, sizeof *o);
    int rc = fn ? tg_fn_call(fn, in, o, err) : -1;
    tg_fn_free(fn);
    return rc;
}

static const char *const dnames[] = {"bool", "int32", "int64", "float32", "float64"};

/* "(n0 n1 ...)" of a shape, sizes written out. */
static const char *shape_text(int nd, const int64_t *sh, char *buf)
{
    int k = sprintf(buf, "(");
    for (int d = 0; d < nd; d++)
        k += sprintf(buf + k, d ? " %lld" : "%lld", (long long)sh[d]);
    sprintf(buf + k, ")");
    return buf;
}

static void rand_shape(int nd, int64_t *sh, int lo)
{
    for (int d = 0; d < nd; d++)
        sh[d] = lo + (int64_t)(kt_rand() % 4);
}

static void test_argmax(void)
{
    int bad = 0, cases = 0;
    for (int c = 0; c < 60; c++) {
        int nd = 1 + (int)(kt_rand() % 3), axis = (int)(kt_rand() % (nd + 1)) - 1;   /* -1: none */
        tg_dtype d = (tg_dtype)(1 + kt_rand() % 4);
        bool mx = kt_rand() & 1;
        int64_t sh[3];
        rand_shape(nd, sh, 1);
        kt_arr x;
        kt_make(&x, d, nd, sh, (int)(c & 1));
        kt_fill(&x.a, -3, 3);       /* small range: ties */
        int64_t idx[3] = {0};
        if (tgV_float(d) && c % 5 == 0)
            kt_set(&x.a, idx, NAN);
        char ins[200], out[300], sb[64];
        snprintf(ins, sizeof ins, "(input x %s %s)", dnames[d], shape_text(nd, sh, sb));
        if (axis < 0)
            snprintf(out, sizeof out, "(%s %s)", mx ? "argmax" : "argmin", ins);
        else
            snprintf(out, sizeof out, "(%s %s %d)", mx ? "argmax" : "argmin", ins, axis - nd * (c % 3 == 0));
        tg_array o;
        tg_error err;
        if (run(ins, out, &x.a, &o, &err) < 0) {
            tap_diag("%s: %s", out, err.message);
            bad++;
            free(x.block);
            continue;
        }
        /* the reference: for each kept index, walk the axis (or all) */
        int64_t oi[3] = {0};
        int64_t nout = kt_count(&o);
        for (int64_t k = 0; k < nout; k++) {
            int64_t best = 0, j = 0, xi[3] = {0};
            long double bv = 0;
            bool nan = false;
            for (int dd = 0, e = 0; dd < nd; dd++)
                if (dd != axis)
                    xi[dd] = axis < 0 ? 0 : oi[e++];
            int64_t len = axis < 0 ? kt_count(&x.a) : sh[axis];
            for (j = 0; j < len; j++) {
                if (axis < 0) {
                    int64_t r = j;
                    for (int dd = nd - 1; dd >= 0; dd--)
                        xi[dd] = r % sh[dd], r /= sh[dd];
                } else {
                    xi[axis] = j;
                }
                long double v = kt_get(&x.a, xi);
                if (nan)
                    continue;
                if (v != v)
                    nan = true, best = j;
                else if (j == 0 || (mx ? v > bv : v < bv))
                    bv = v, best = j;
            }
            if (kt_geti(&o, oi) != best)
                bad++;
            kt_next(o.ndim, o.shape, oi);
        }
        cases++;
        free(o.data);
        free(x.block);
    }
    TAP_CHECK(bad == 0 && cases == 60, "argmax / argmin over an axis or all: %d cases, %d wrong", cases, bad);
}

/* concatenate or stack of 2 or 3 random arrays along a random axis, the
 * first of a symbolic size on that axis (concatenate), dtypes promoted. */
static void test_join(bool stack)
{
    int bad = 0, cases = 0;
    for (int c = 0; c < 40; c++) {
        int nd = 1 + (int)(kt_rand() % 3), k = 2 + (int)(kt_rand() % 2);
        int axis = (int)(kt_rand() % (unsigned)(stack ? nd + 1 : nd));
        int64_t sh[3][3];
        tg_dtype dt[3];
        kt_arr x[3];
        char ins[400] = "", out[400], sb[64];
        rand_shape(nd, sh[0], 0);
        int n = snprintf(out, sizeof out, "(%s %d", stack ? "stack" : "concatenate", axis);
        tg_dtype want = TG_BOOL;
        for (int i = 0; i < k; i++) {
            memcpy(sh[i], sh[0], sizeof sh[0]);
            if (!stack)
                sh[i][axis] = (int64_t)(kt_rand() % 4);
            dt[i] = (tg_dtype)(1 + kt_rand() % 4);
            want = i ? (tgV_float(want) == tgV_float(dt[i]) ? (want > dt[i] ? want : dt[i])
                        : TG_FLOAT64) : dt[i];
            kt_make(&x[i], dt[i], nd, sh[i], (int)((c + i) & 1));
            kt_fill(&x[i].a, -50, 50);
            char one[120];
            if (i == 0 && !stack) {     /* a symbolic size on the axis */
                int m = sprintf(one, "(input x0 %s (", dnames[dt[i]]);
                for (int d = 0; d < nd; d++)
                    m += sprintf(one + m, d == axis ? "%sn" : "%s%lld", d ? " " : "", (long long)sh[i][d]);
                sprintf(one + m, "))");
            } else {
                snprintf(one, sizeof one, "(input x%d %s %s)", i, dnames[dt[i]], shape_text(nd, sh[i], sb));
            }
            strcat(ins, one);
            n += snprintf(out + n, sizeof out - (size_t)n, " %s", one);
        }
        snprintf(out + n, sizeof out - (size_t)n, ")");
        tg_array in[3], o;
        for (int i = 0; i < k; i++)
            in[i] = x[i].a;
        tg_error err;
        if (run(ins, out, in, &o, &err) < 0) {
            tap_diag("%s: %s", out, err.message);
            bad++;
        } else {
            if (o.dtype != want || o.ndim != (stack ? nd + 1 : nd))
                bad++;
            int64_t oi[4] = {0};
            if (kt_count(&o) > 0)
                do {
                    /* which argument, and its index */
                    int64_t xi[3], at = oi[axis];
                    int which = 0;
                    if (stack) {
                        which = (int)at;
                        for (int d = 0, e = 0; d <= nd; d++)
                            if (d != axis)
                                xi[e++] = oi[d];
                    } else {
                        memcpy(xi, oi, sizeof xi);
                        while (at >= sh[which][axis])
                            at -= sh[which][axis], which++;
                        xi[axis] = at;
                    }
                    if (kt_get(&o, oi) != kt_get(&x[which].a, xi))
                        bad++;
                } while (kt_next(o.ndim, o.shape, oi));
            free(o.data);
        }
        for (int i = 0; i < k; i++)
            free(x[i].block);
        cases++;
    }
    TAP_CHECK(bad == 0 && cases == 40, "%s of 2 or 3 arrays, promoted dtypes, strided: %d cases, %d wrong",
              stack ? "stack" : "concatenate (a symbolic size joined)", cases, bad);
}

static void test_take(void)
{
    int bad = 0;
    for (int c = 0; c < 40; c++) {
        int nd = 1 + (int)(kt_rand() % 3), ni = (int)(kt_rand() % 3);     /* IDX of 0 to 2 axes */
        int64_t sh[3], ish[2];
        rand_shape(nd, sh, 1);
        rand_shape(ni, ish, 0);
        tg_dtype d = (tg_dtype)(1 + kt_rand() % 4), id = kt_rand() & 1 ? TG_INT64 : TG_INT32;
        kt_arr x, ix, v;
        kt_make(&x, d, nd, sh, c & 1);
        kt_fill(&x.a, -100, 100);
        kt_make(&ix, id, ni, ish, (c >> 1) & 1);
        kt_fill(&ix.a, (double)-sh[0], (double)sh[0]);
        int64_t vsh[4];
        memcpy(vsh, ish, sizeof ish[0] * (size_t)ni);
        memcpy(vsh + ni, sh + 1, sizeof sh[0] * (size_t)(nd - 1));
        kt_make(&v, d, ni + nd - 1, vsh, 0);
        kt_fill(&v.a, -10, 10);
        char xs[100], is[100], vs[100], out[400], sb[64];
        snprintf(xs, sizeof xs, "(input x %s %s)", dnames[d], shape_text(nd, sh, sb));
        snprintf(is, sizeof is, "(input i %s %s)", dnames[id], shape_text(ni, ish, sb));
        snprintf(vs, sizeof vs, "(input v %s %s)", dnames[d], shape_text(ni + nd - 1, vsh, sb));
        tg_array in[3] = {x.a, ix.a, v.a}, o, o2;
        tg_error err;
        char ins[400];
        snprintf(ins, sizeof ins, "%s %s", xs, is);
        snprintf(out, sizeof out, "(take %s %s)", xs, is);
        int rc = run(ins, out, in, &o, &err);
        snprintf(ins, sizeof ins, "%s %s %s", xs, is, vs);
        snprintf(out, sizeof out, "(inc_take %s %s %s)", xs, vs, is);
        tg_array in3[3] = {x.a, ix.a, v.a};
        int rc2 = rc == 0 ? run(ins, out, in3, &o2, &err) : -1;
        if (rc < 0 || rc2 < 0) {
            tap_diag("%s: %s", out, err.message);
            bad++;
            if (rc == 0)
                free(o.data);
        } else {
            /* take: o[I, J] = x[idx[I], J] */
            int64_t oi[4] = {0};
            if (kt_count(&o) > 0)
                do {
                    int64_t r = kt_geti(&ix.a, oi), xi[3];
                    xi[0] = r < 0 ? r + sh[0] : r;
                    memcpy(xi + 1, oi + ni, sizeof xi[0] * (size_t)(nd - 1));
                    if (kt_get(&o, oi) != kt_get(&x.a, xi))
                        bad++;
                } while (kt_next(o.ndim, o.shape, oi));
            /* inc_take: x plus each v[I] added at row idx[I] (long double
             * sums of small integers and floats: exact for these ranges
             * in float64, compared with a tolerance for float32) */
            kt_arr ref;
            kt_make(&ref, TG_FLOAT64, nd, sh, 0);
            int64_t xi[3] = {0};
            do
                kt_set(&ref.a, xi, kt_get(&x.a, xi));
            while (kt_next(nd, sh, xi));
            memset(oi, 0, sizeof oi);
            if (kt_count(&v.a) > 0)
                do {
                    int64_t r = kt_geti(&ix.a, oi), ri[3];
                    ri[0] = r < 0 ? r + sh[0] : r;
                    memcpy(ri + 1, oi + ni, sizeof ri[0] * (size_t)(nd - 1));
                    kt_set(&ref.a, ri, kt_get(&ref.a, ri) + kt_get(&v.a, oi));
                } while (kt_next(v.a.ndim, v.a.shape, oi));
            memset(xi, 0, sizeof xi);
            do {
                long double a = kt_get(&o2, xi), b = kt_get(&ref.a, xi);
                if (d == TG_FLOAT32 ? fabsl(a - b) > 1e-4L * (1 + fabsl(b)) : (d == TG_INT32 ? (int32_t)b : b) != a)
                    bad++;
            } while (kt_next(nd, sh, xi));
            free(ref.block);
            free(o.data);
            free(o2.data);
        }
        free(x.block), free(ix.block), free(v.block);
    }
    TAP_CHECK(bad == 0, "take and inc_take with index arrays of 0 to 2 axes, negative indices: %d wrong", bad);
}

static void test_one_hot(void)
{
    int64_t sh[2] = {3, 4}, k = 5;
    kt_arr y;
    kt_make(&y, TG_INT64, 2, sh, 1);
    kt_fill(&y.a, 0, (double)k);
    tg_array o;
    tg_error err;
    int bad = run("(input y int64 (3 4))", "(one_hot (input y int64 (3 4)) 5)", &y.a, &o, &err) < 0;
    int64_t oi[3] = {0};
    if (!bad) {
        bad += o.ndim != 3 || o.shape[2] != k || o.dtype != TG_FLOAT64;
        do
            bad += kt_get(&o, oi) != (kt_geti(&y.a, oi) == oi[2]);
        while (kt_next(3, o.shape, oi));
        free(o.data);
    }
    TAP_CHECK(bad == 0, "one_hot of a strided 3x4 label array");
    int64_t zero[2] = {0, 0};
    kt_set(&y.a, zero, 5);
    int rc = run("(input y int64 (3 4))", "(one_hot (input y int64 (3 4)) 5)", &y.a, &o, &err);
    TAP_CHECK(rc < 0 && strstr(err.message, "label 5 is not among the 5 classes"),
              "a label out of range is an error naming it: %s", rc < 0 ? err.message : "none");
    free(y.block);
}

/* d sum(C * F(A)) / dA by the expansion and by central differences. */
static void grad_case(const char *name, const char *ins, const char *f, int64_t na, const char *a_in,
                      int nin, tg_array *in, int ai)
{
    char out[600];
    snprintf(out, sizeof out, "(grad (sum (sqr %s) all) %s)", f, a_in);
    tg_array g;
    tg_error err;
    if (run(ins, out, in, &g, &err) < 0) {
        TAP_CHECK(0, "gradient through %s: %s", name, err.message);
        return;
    }
    snprintf(out, sizeof out, "(sum (sqr %s) all)", f);
    tg_fn *fn = kt_compile(ctx, ins, out, NULL, kt_path, &err);
    double worst = 0, *a = in[ai].data, c0, c1;
    tg_array oc;
    tg_array_init(&oc, TG_FLOAT64, 0, NULL, &c0);
    for (int64_t i = 0; fn && i < na; i++) {
        double keep = a[i], h = 1e-6;
        a[i] = keep + h;
        tg_array_init(&oc, TG_FLOAT64, 0, NULL, &c0);
        tg_fn_call(fn, in, &oc, &err);
        a[i] = keep - h;
        tg_array_init(&oc, TG_FLOAT64, 0, NULL, &c1);
        tg_fn_call(fn, in, &oc, &err);
        a[i] = keep;
        double fd = (c0 - c1) / (2 * h), e = fabs(fd - ((double *)g.data)[i]) / (1 + fabs(fd));
        worst = e > worst ? e : worst;
    }
    (void)nin;
    TAP_CHECK(fn && worst < 1e-6, "gradient through %s against central differences (worst %.2g)", name, worst);
    tg_fn_free(fn);
    free(g.data);
}

static void test_grads(void)
{
    double a[6], b[4], w[12];
    for (int i = 0; i < 6; i++)
        a[i] = kt_unif(-2, 2);
    for (int i = 0; i < 4; i++)
        b[i] = kt_unif(-2, 2);
    for (int i = 0; i < 12; i++)
        w[i] = kt_unif(-2, 2);
    int64_t s23[2] = {2, 3}, s22[2] = {2, 2}, s4[1] = {4}, s34[2] = {3, 4};
    tg_array in[3];
    tg_array_init(&in[0], TG_FLOAT64, 2, s23, a);
    tg_array_init(&in[1], TG_FLOAT64, 2, s22, b);
    /* a twice along axis 1, b between: each copy of a gets its slice */
    grad_case("concatenate (an argument twice)", "(input a float64 (2 3)) (input b float64 (2 2))",
              "(mul (concatenate 1 (input a float64 (2 3)) (input b float64 (2 2)) (input a float64 (2 3))) "
              "(concatenate 1 (input b float64 (2 2)) (input a float64 (2 3)) (input a float64 (2 3))))",
              6, "(input a float64 (2 3))", 2, in, 0);
    grad_case("concatenate along axis 0 of a symbolic size", "(input a float64 (m 3)) (input b float64 (2 2))",
              "(concatenate 0 (input a float64 (m 3)) (mul 2 (input a float64 (m 3))))", 6,
              "(input a float64 (m 3))", 2, in, 0);
    tg_array_init(&in[0], TG_FLOAT64, 1, s4, a);
    tg_array_init(&in[1], TG_FLOAT64, 1, s4, b);
    grad_case("stack", "(input a float64 (4)) (input b float64 (4))",
              "(mul (stack 1 (input a float64 (4)) (input b float64 (4)) (input a float64 (4))) "
              "(transpose (stack 0 (input b float64 (4)) (sin (input a float64 (4))) (input b float64 (4)))))", 4,
              "(input a float64 (4))", 2, in, 0);
    /* second derivatives: the parts' gradients (concatenate_inc, stack_inc) */
    grad_case("the gradient of a concatenate (second derivative)", "(input a float64 (4)) (input b float64 (4))",
              "(grad (sum (mul (sqr (concatenate 0 (input a float64 (4)) (input b float64 (4))))"
              " (concatenate 0 (input b float64 (4)) (input a float64 (4)))) all) (input b float64 (4)))", 4,
              "(input a float64 (4))", 2, in, 0);
    grad_case("the gradient of a stack (second derivative)", "(input a float64 (4)) (input b float64 (4))",
              "(grad (sum (mul (sqr (stack 1 (input a float64 (4)) (input b float64 (4))))"
              " (stack 1 (input b float64 (4)) (input a float64 (4)))) all) (input b float64 (4)))", 4,
              "(input a float64 (4))", 2, in, 0);
    int64_t idx[5] = {2, 0, 2, -1, 1}, s5[1] = {5};
    tg_array_init(&in[0], TG_FLOAT64, 2, s34, w);
    tg_array_init(&in[1], TG_INT64, 1, s5, idx);
    grad_case("take (repeated rows)", "(input w float64 (3 4)) (input i int64 (5))",
              "(take (input w float64 (3 4)) (input i int64 (5)))", 12, "(input w float64 (3 4))", 2, in, 0);
    int64_t idx2[6] = {1, -1, 1, 0, 2, 1}, s23i[2] = {2, 3};
    tg_array_init(&in[1], TG_INT64, 2, s23i, idx2);
    grad_case("take with a 2-d index (repeated, negative)", "(input w float64 (3 4)) (input i int64 (2 3))",
              "(sin (take (input w float64 (3 4)) (input i int64 (2 3))))", 12, "(input w float64 (3 4))", 2, in, 0);
    tg_array_init(&in[0], TG_FLOAT64, 2, s34, w);
    grad_case("argmax (none: the other factor's only)", "(input w float64 (3 4))",
              "(mul (input w float64 (3 4)) (argmax (input w float64 (3 4)) 0))", 12,
              "(input w float64 (3 4))", 1, in, 0);
}

static void test_errors(void)
{
    static const struct { const char *ins, *out, *want; } cases[] = {
        {"(input a float64 (2 3)) (input b float64 (2))", "(concatenate 0 (input a float64 (2 3)) (input b float64 (2)))",
         "the same number of axes"},
        {"(input a float64 (2 3)) (input b float64 (2 4))", "(concatenate 0 (input a float64 (2 3)) (input b float64 (2 4)))",
         "the arrays joined"},
        {"(input a float64 (2 3))", "(concatenate 2 (input a float64 (2 3)))", "axis 2 is out of range for 2 axes"},
        {"(input a float64 (2 3))", "(stack 3 (input a float64 (2 3)))", "axis 3 is out of range for 3 axes"},
        {"(input a float64 ())", "(concatenate 0 (input a float64 ()))", "a 0-d array cannot be concatenated"},
        {"(input a float64 (2 3))", "(argmax (input a float64 (2 3)) 2)", "axis 2 is out of range"},
        {"(input a float64 (2 3)) (input i float64 (2))", "(take (input a float64 (2 3)) (input i float64 (2)))",
         "int64 or int32"},
        {"(input y float64 (2))", "(one_hot (input y float64 (2)) 3)", "int64 or int32"},
        {"(input y int64 (2))", "(one_hot (input y int64 (2)) 0)", "integer literal >= 1"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tg_error err;
        tg_fn *fn = kt_compile(ctx, cases[i].ins, cases[i].out, NULL, kt_path, &err);
        TAP_CHECK(!fn && strstr(err.message, cases[i].want) && strstr(err.message, "kernels: in ("),
                  "compile error naming the term: %s", fn ? "none" : err.message);
        tg_fn_free(fn);
    }
    /* at call time: an index out of range, argmax of an empty axis, a
     * symbolic concatenation of the wrong total */
    double x[6] = {0};
    int64_t i3[3] = {0, 3, 1}, s23[2] = {2, 3}, s3[1] = {3}, s03[2] = {0, 3}, s2[1] = {2}, s5[1] = {5};
    tg_array in[2], o;
    tg_error err;
    tg_array_init(&in[0], TG_FLOAT64, 2, s23, x);
    tg_array_init(&in[1], TG_INT64, 1, s3, i3);
    int rc = run("(input a float64 (2 3)) (input i int64 (k))", "(take (input a float64 (2 3)) (input i int64 (k)))",
                 in, &o, &err);
    TAP_CHECK(rc < 0 && strstr(err.message, "index 3 is out of range for an axis of size 2"),
              "take with an index out of range: %s", rc < 0 ? err.message : "none");
    tg_array_init(&in[0], TG_FLOAT64, 2, s03, x);
    rc = run("(input a float64 (n 3))", "(argmax (input a float64 (n 3)) 0)", in, &o, &err);
    TAP_CHECK(rc < 0 && strstr(err.message, "argmax of an empty axis"), "argmax of an empty axis: %s",
              rc < 0 ? err.message : "none");
    tg_array_init(&in[0], TG_FLOAT64, 1, s2, x);
    tg_array_init(&in[1], TG_FLOAT64, 1, s5, x);
    rc = run("(input a float64 (n)) (input c float64 (m))",
             "(add (concatenate 0 (input a float64 (n)) (input a float64 (n))) (input c float64 (m)))", in, &o, &err);
    TAP_CHECK(rc < 0 && strstr(err.message, "have 4 elements along the axis where 5 are expected"),
              "a symbolic concatenation of the wrong size: %s", rc < 0 ? err.message : "none");
}

/* The ops inside a scan's lambda: take (rows of a table by each step's
 * indices), concatenate and stack of a sequence's row with a recurrent
 * state and with slices of symbolic sizes (the sizes derived inside the
 * lambda derived again outside), argmax; against hand loops. */
static void test_in_scan(void)
{
    enum { T = 4, K = 3, V = 5, D = 2, N = 3 };
    int64_t ids[T * K], sid[2] = {T, K}, sw[2] = {V, D}, sx[2] = {T, N};
    double w[V * D], x[T * N];
    for (int i = 0; i < T * K; i++)
        ids[i] = (int64_t)(kt_rand() % (2 * V)) - V;    /* negative rows too */
    for (int i = 0; i < V * D; i++)
        w[i] = kt_unif(-1, 1);
    for (int i = 0; i < T * N; i++)
        x[i] = kt_unif(-1, 1);
    tg_array in[2], o;
    tg_error err;
    tg_array_init(&in[0], TG_INT64, 2, sid, ids);
    tg_array_init(&in[1], TG_FLOAT64, 2, sw, w);
    int rc = run("(input ids int64 (t k)) (input w float64 (v d))",
                 "(scan (lambda (i tab) ((take tab i))) (steps auto) (sequences (input ids int64 (t k)))"
                 " (outputs (nitsot)) (non_sequences (input w float64 (v d))))", in, &o, &err);
    int bad = rc < 0 || o.ndim != 3 || o.shape[0] != T || o.shape[1] != K || o.shape[2] != D;
    for (int t = 0; !bad && t < T; t++)
        for (int k = 0; k < K; k++)
            for (int d = 0; d < D; d++) {
                int64_t r = ids[t * K + k] < 0 ? ids[t * K + k] + V : ids[t * K + k];
                bad += ((double *)o.data)[(t * K + k) * D + d] != w[r * D + d];
            }
    TAP_CHECK(!bad, "take in a scan step: rows of a table by each step's indices, negative ones too%s%s",
              rc < 0 ? ": " : "", rc < 0 ? err.message : "");
    if (rc == 0)
        free(o.data);
    /* a row and its slice from 1 joined: n + (n - 1) elements, a size
     * derived from the symbolic n inside the lambda */
    tg_array_init(&in[0], TG_FLOAT64, 2, sx, x);
    rc = run("(input x float64 (t n))",
             "(scan (lambda (r) ((concatenate 0 r (subtensor r (slice 1 none none))))) (steps auto)"
             " (sequences (input x float64 (t n))) (outputs (nitsot)) (non_sequences))", in, &o, &err);
    bad = rc < 0 || o.ndim != 2 || o.shape[0] != T || o.shape[1] != 2 * N - 1;
    for (int t = 0; !bad && t < T; t++)
        for (int j = 0; j < 2 * N - 1; j++)
            bad += ((double *)o.data)[t * (2 * N - 1) + j] != x[t * N + (j < N ? j : j - N + 1)];
    TAP_CHECK(!bad, "concatenate in a scan step of a row and its slice (symbolic sizes)%s%s",
              rc < 0 ? ": " : "", rc < 0 ? err.message : "");
    if (rc == 0)
        free(o.data);
    /* a recurrent state joined with each row: h' = [r, h[:n]] summed pairwise */
    rc = run("(input x float64 (t n))",
             "(scan (lambda (r h) ((add r (subtensor (concatenate 0 h r) (slice none 3 none))))) (steps auto)"
             " (sequences (input x float64 (t n))) (outputs (sitsot (alloc 0.5 3))) (non_sequences))", in, &o, &err);
    bad = rc < 0 || o.ndim != 2 || o.shape[0] != T || o.shape[1] != N;
    double h[N] = {0.5, 0.5, 0.5};
    for (int t = 0; !bad && t < T; t++)
        for (int j = 0; j < N; j++) {
            h[j] = x[t * N + j] + h[j];
            bad += fabs(((double *)o.data)[t * N + j] - h[j]) > 1e-15;
        }
    TAP_CHECK(!bad, "concatenate of a recurrent state and a row in a scan step%s%s", rc < 0 ? ": " : "",
              rc < 0 ? err.message : "");
    if (rc == 0)
        free(o.data);
    tg_array outs[2] = {{0}, {0}};
    tg_fn *fn = kt_compile(ctx, "(input x float64 (t n))",
                           "(scan_output (scan (lambda (r) ((stack 0 r (neg r)) (argmax r 0))) (steps auto)"
                           " (sequences (input x float64 (t n))) (outputs (nitsot) (nitsot)) (non_sequences)) 0)"
                           "(scan_output (scan (lambda (r) ((stack 0 r (neg r)) (argmax r 0))) (steps auto)"
                           " (sequences (input x float64 (t n))) (outputs (nitsot) (nitsot)) (non_sequences)) 1)",
                           NULL, kt_path, &err);
    rc = fn ? tg_fn_call(fn, in, outs, &err) : -1;
    bad = rc < 0 || outs[0].ndim != 3 || outs[0].shape[1] != 2 || outs[1].ndim != 1;
    for (int t = 0; !bad && t < T; t++) {
        int best = 0;
        for (int j = 0; j < N; j++) {
            bad += ((double *)outs[0].data)[t * 2 * N + j] != x[t * N + j];
            bad += ((double *)outs[0].data)[t * 2 * N + N + j] != -x[t * N + j];
            best = x[t * N + j] > x[t * N + best] ? j : best;
        }
        bad += ((int64_t *)outs[1].data)[t] != best;
    }
    TAP_CHECK(!bad, "stack and argmax in a scan step%s%s", rc < 0 ? ": " : "", rc < 0 ? err.message : "");
    if (rc == 0)
        free(outs[0].data), free(outs[1].data);
    tg_fn_free(fn);
    /* an index out of range at step 2 stops the call with the term named */
    ids[2 * K + 1] = V;
    tg_array_init(&in[0], TG_INT64, 2, sid, ids);
    tg_array_init(&in[1], TG_FLOAT64, 2, sw, w);
    rc = run("(input ids int64 (t k)) (input w float64 (v d))",
             "(scan (lambda (i tab) ((take tab i))) (steps auto) (sequences (input ids int64 (t k)))"
             " (outputs (nitsot)) (non_sequences (input w float64 (v d))))", in, &o, &err);
    TAP_CHECK(rc < 0 && strstr(err.message, "(take tab i)") && strstr(err.message, "index 5 is out of range"),
              "take in a scan step with an index out of range: %s", rc < 0 ? err.message : "none");
    if (rc == 0)
        free(o.data);
}

/* inc_take in X's buffer: X computed and dying there (its slot), and an
 * input not kept (overwritten), the values against a hand loop. */
static void test_inc_take_in_place(void)
{
    double w[6] = {1, 2, 3, 4, 5, 6}, v[6] = {10, 20, 30, 40, 50, 60}, want[6];
    int64_t i3[3] = {2, -3, 2}, s32[2] = {3, 2}, s3[1] = {3};
    tg_error err;
    tg_fn *fn = kt_compile(ctx, "(input w float64 (3 2)) (input v float64 (3 2)) (input i int64 (3))",
                           "(sum (inc_take (exp (input w float64 (3 2))) (input v float64 (3 2)) (input i int64 (3))) all)",
                           NULL, kt_path, &err);
    char *sch = fn ? tg_print(tg_fn_schedule(fn), NULL) : NULL;
    TAP_CHECK(sch && strstr(sch, "(%3 float64 (slot 0))") && strstr(sch, "(inc_take %3 v i)) float64 (slot 0))"),
              "inc_take writes in place of the exp it adds to (%s)", sch ? sch : err.message);
    free(sch);
    tg_fn_free(fn);
    unsigned char kept[3] = {0, 1, 1};
    fn = kt_compile(ctx, "(input w float64 (3 2)) (input v float64 (3 2)) (input i int64 (3))",
                    "(mul 2 (inc_take (input w float64 (3 2)) (input v float64 (3 2)) (input i int64 (3))))", kept,
                    kt_path, &err);
    sch = fn ? tg_print(tg_fn_schedule(fn), NULL) : NULL;
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 2; c++)
            want[r * 2 + c] = w[r * 2 + c];
    for (int k = 0; k < 3; k++)
        for (int c = 0; c < 2; c++)
            want[(i3[k] + 3) % 3 * 2 + c] += v[k * 2 + c];
    tg_array in[3], o = {0};
    tg_array_init(&in[0], TG_FLOAT64, 2, s32, w);
    tg_array_init(&in[1], TG_FLOAT64, 2, s32, v);
    tg_array_init(&in[2], TG_INT64, 1, s3, i3);
    int rc = fn ? tg_fn_call(fn, in, &o, &err) : -1, bad = rc < 0;
    for (int k = 0; !bad && k < 6; k++)
        bad += ((double *)o.data)[k] != 2 * want[k];
    TAP_CHECK(!bad && sch && strstr(sch, "(inplace w)"),
              "inc_take into an input not kept: in place, values right (%s)", sch ? sch : err.message);
    free(sch);
    free(o.data);
    tg_fn_free(fn);
}

/* inc_take (np.add.at) large enough for the compiled loop to split a
 * row's columns over the threads, against a hand-written loop adding in
 * index order (so the same bits): strided X and V, many repeated and
 * negative indices, float64, float32 and int64.  Then the indices out of
 * range, too large and too negative, a call-time error naming the term
 * with X (an input given to overwrite) left as it was; and the gradient
 * of take an update step, compiled on the compiled path (a cost linear
 * in take, whose gradient needs no forward take, a step of arrange.c). */
static void test_inc_take_large(void)
{
    static const tg_dtype dts[3] = {TG_FLOAT64, TG_FLOAT32, TG_INT64};
    int64_t xs[2] = {40, 600}, vs[2] = {300, 600}, ns = 300;
    for (int t = 0; t < 3; t++) {
        tg_dtype d = dts[t];
        kt_arr x, v, ix;
        kt_make(&x, d, 2, xs, 1), kt_make(&v, d, 2, vs, 1), kt_make(&ix, TG_INT32, 1, &ns, 0);
        kt_fill(&x.a, -100, 100), kt_fill(&v.a, -100, 100);
        for (int64_t i = 0; i < ns; i++)
            ((int32_t *)ix.a.data)[i] = (int32_t)(kt_rand() % 80) - 40;     /* [-40, 40) */
        char ins[300], out[300];
        snprintf(ins, sizeof ins, "(input x %s (r c)) (input v %s (k c)) (input i int32 (k))", dnames[d], dnames[d]);
        snprintf(out, sizeof out, "(inc_take (input x %s (r c)) (input v %s (k c)) (input i int32 (k)))", dnames[d],
                 dnames[d]);
        tg_array in[3] = {x.a, v.a, ix.a}, o;
        tg_error err;
        int rc = run(ins, out, in, &o, &err), bad = rc < 0;
        for (int64_t r = 0; !bad && r < xs[0]; r++)
            for (int64_t c = 0; c < xs[1]; c++) {
                int64_t I[2] = {r, c};
                double f = (double)kt_get(&x.a, I);
                float g = (float)f;
                int64_t n = kt_geti(&x.a, I);
                for (int64_t i = 0; i < ns; i++) {
                    int64_t k = ((int32_t *)ix.a.data)[i], J[2] = {i, c};
                    if ((k < 0 ? k + xs[0] : k) != r)
                        continue;
                    f = (double)kt_get(&v.a, J) + f;
                    g = (float)((double)kt_get(&v.a, J) + (double)g);
                    n = (int64_t)((uint64_t)kt_geti(&v.a, J) + (uint64_t)n);
                }
                long double got = kt_get(&o, I);
                bad += d == TG_FLOAT64 ? got != f : d == TG_FLOAT32 ? got != g : kt_geti(&o, I) != n;
            }
        TAP_CHECK(!bad, "inc_take %s of 300 rows of 600 into 40, indices repeated and negative: as a hand loop (%s)",
                  dnames[d], rc < 0 ? err.message : "");
        if (rc == 0)
            free(o.data);
        free(x.block), free(v.block), free(ix.block);
    }
    /* out of range: nothing written, the call fails with the term named */
    double w[6] = {1, 2, 3, 4, 5, 6}, w0[6], v[6] = {1, 1, 1, 1, 1, 1};
    int64_t s32[2] = {3, 2}, s3 = 3, bad_idx[2][3] = {{0, 3, 1}, {2, -4, 0}};
    memcpy(w0, w, sizeof w);
    unsigned char kept[3] = {0, 1, 1};
    tg_error err;
    tg_fn *fn = kt_compile(ctx, "(input w float64 (3 2)) (input v float64 (3 2)) (input i int64 (3))",
                           "(inc_take (input w float64 (3 2)) (input v float64 (3 2)) (input i int64 (3)))", kept,
                           kt_path, &err);
    for (int c = 0; c < 2; c++) {
        tg_array in[3], o = {0};
        tg_array_init(&in[0], TG_FLOAT64, 2, s32, w);
        tg_array_init(&in[1], TG_FLOAT64, 2, s32, v);
        tg_array_init(&in[2], TG_INT64, 1, &s3, bad_idx[c]);
        int rc = fn ? tg_fn_call(fn, in, &o, &err) : 0;
        char want[80];
        snprintf(want, sizeof want, "index %d is out of range for an axis of size 3", c ? -4 : 3);
        TAP_CHECK(rc < 0 && strstr(err.message, want) && strstr(err.message, "(inc_take ") &&
                      memcmp(w, w0, sizeof w) == 0,
                  "inc_take with index %d: an error, X untouched: %s", c ? -4 : 3, rc < 0 ? err.message : "none");
        if (rc == 0)
            free(o.data);
    }
    tg_fn_free(fn);
    fn = kt_compile(ctx, "(input w float64 (r c)) (input i int64 (k)) (input u float64 (k c))",
                    "(grad (sum (mul (take (input w float64 (r c)) (input i int64 (k))) (input u float64 (k c))) all)"
                    " (input w float64 (r c)))", NULL, kt_path, &err);
    char *sch = fn ? tg_print(tg_fn_schedule(fn), NULL) : NULL;
    TAP_CHECK(sch && strstr(sch, " (update (%") && strstr(sch, "(inc_take ") && !strstr(sch, " (reduce (") &&
                  tg_fn_native(fn) == !kt_path,
              "the gradient of take: an update step, no step left to the interpreter on the compiled path (%s)",
              sch ? sch : err.message);
    free(sch);
    tg_fn_free(fn);
}

/* Gradients through scan steps that take, concatenate, stack and slice:
 * an embedding RNN h' = tanh(W [x; h] + sum(E[i])) and its kin, against
 * central differences. */
static void test_scan_grads(void)
{
    enum { T = 4, N = 2, M = 3, V = 5, K = 2 };
    double x[T * N], w[M * (N + M)], e[V * M];
    int64_t ids[T * K], sx[2] = {T, N}, sw[2] = {M, N + M}, se[2] = {V, M}, si[2] = {T, K};
    for (int i = 0; i < T * N; i++)
        x[i] = kt_unif(-1, 1);
    for (int i = 0; i < M * (N + M); i++)
        w[i] = kt_unif(-0.6, 0.6);
    for (int i = 0; i < V * M; i++)
        e[i] = kt_unif(-1, 1);
    for (int i = 0; i < T * K; i++)
        ids[i] = (int64_t)(kt_rand() % V);
    ids[1] = ids[0];    /* a row taken twice in one step */
    tg_array in[4];
    tg_array_init(&in[0], TG_FLOAT64, 2, sx, x);
    tg_array_init(&in[1], TG_FLOAT64, 2, sw, w);
    tg_array_init(&in[2], TG_FLOAT64, 2, se, e);
    tg_array_init(&in[3], TG_INT64, 2, si, ids);
    const char *ins = "(input x float64 (t 2)) (input w float64 (3 5)) (input e float64 (5 3)) (input i int64 (t 2))";
    const char *rnn =
        "(scan (lambda (r j h w e) ((tanh (add (dot w (concatenate 0 r h)) (sum (take e j) (axes 0))))))"
        " (steps auto) (sequences (input x float64 (t 2)) (input i int64 (t 2))) (outputs (sitsot (alloc 0.1 3)))"
        " (non_sequences (input w float64 (3 5)) (input e float64 (5 3))))";
    grad_case("an RNN step that concatenates and takes, d/dW", ins, rnn, M * (N + M), "(input w float64 (3 5))", 4, in, 1);
    grad_case("an RNN step that concatenates and takes, d/dx", ins, rnn, T * N, "(input x float64 (t 2))", 4, in, 0);
    grad_case("an RNN step that concatenates and takes, d/dE (rows taken twice)", ins, rnn, V * M,
              "(input e float64 (5 3))", 4, in, 2);
    grad_case("a scan step that stacks and slices, d/dx", ins,
              "(scan (lambda (r h) ((mul (stack 1 r (subtensor r (slice none none -1))) (sin h))))"
              " (steps auto) (sequences (input x float64 (t 2))) (outputs (sitsot (alloc 0.3 2 2))) (non_sequences))",
              T * N, "(input x float64 (t 2))", 4, in, 0);
    grad_case("a scan step that sets and increases parts, d/dx", ins,
              "(scan (lambda (r h) ((inc_subtensor (set_subtensor (mul h r) (sqr (subtensor r 0)) -1) (cos r) (slice none none -1))))"
              " (steps auto) (sequences (input x float64 (t 2))) (outputs (sitsot (alloc 0.7 2))) (non_sequences))",
              T * N, "(input x float64 (t 2))", 4, in, 0);
}

/* A row's scalar broadcast along the innermost axis (the max of a
 * softmax): the compiled loop reads it as one element per row in its
 * contiguous variant (codegen.c); values against a hand loop, the sums
 * fused too, rows of 1 to 37 elements (vector remainders included). */
static void test_row_broadcast(void)
{
    int bad = 0;
    for (int64_t c = 1; c <= 37; c += 6) {
        int64_t sh[2] = {5, c};
        kt_arr x;
        kt_make(&x, TG_FLOAT64, 2, sh, 0);
        kt_fill(&x.a, -3, 3);
        char ins[80], out[400];
        snprintf(ins, sizeof ins, "(input x float64 (5 %lld))", (long long)c);
        snprintf(out, sizeof out,
                 "(sum (exp (sub %s (dimshuffle (max %s (axes 1)) (perm 0 x)))) (axes 1))", ins, ins);
        tg_array o;
        tg_error err;
        if (run(ins, out, &x.a, &o, &err) < 0) {
            tap_diag("%s", err.message);
            bad++;
        } else {
            for (int64_t r = 0; r < 5; r++) {
                const double *row = (const double *)x.a.data + r * c;
                double m = row[0], sum = 0;
                for (int64_t k = 1; k < c; k++)
                    m = row[k] > m ? row[k] : m;
                for (int64_t k = 0; k < c; k++)
                    sum += exp(row[k] - m);
                double got = ((double *)o.data)[r];
                bad += fabs(got - sum) > 1e-13 * sum;
            }
            free(o.data);
        }
        free(x.block);
    }
    TAP_CHECK(bad == 0, "a row's maximum broadcast along the row (softmax sums), rows of 1 to 37: %d wrong", bad);
}

int main(void)
{
    tg_error err;
    ctx = tg_ctx_new(&err);
    KT_EACH_PATH {
        test_argmax();
        test_join(false);
        test_join(true);
        test_take();
        test_one_hot();
        test_grads();
        test_errors();
        test_row_broadcast();
        test_in_scan();
        test_scan_grads();
        test_inc_take_in_place();
        test_inc_take_large();
    }
    tg_ctx_free(ctx);
    return TAP_DONE();
}
