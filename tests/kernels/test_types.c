/* test_types.c - dtype and shape inference (symbolic sizes, broadcasting,
 * weak literals), the errors at compile time and call time, layout ops,
 * and the schedule: fusion, buffer reuse and in-place writes checked on
 * the schedule term, with results identical to unfused evaluation; terms
 * a million deep. */
#include "kt.h"
#include "tgtest.h"

static tg_ctx *ctx;

/* The error message of compiling outs over ins ("" when it compiles). */
static const char *compile_error(const char *ins, const char *outs)
{
    static char msg[600];
    tg_error err;
    tg_fn *fn = kt_compile(ctx, ins, outs, NULL, kt_path, &err);
    if (fn) {
        tg_fn_free(fn);
        return "";
    }
    snprintf(msg, sizeof msg, "%s", err.message);
    return msg;
}

/* Count occurrences of needle in the printed schedule. */
static int count_in(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p++)
        n++;
    return n;
}

static void test_errors(void)
{
    TAP_EQ_STR(compile_error("(input x float64 (3)) (input y float64 (4))",
                             "(add (input x float64 (3)) (input y float64 (4)))"),
               "kernels: in (add (input x float64 (3)) (input y float64 (4))): shapes (3) and (4) do not broadcast",
               "static shape mismatch named at compile time");
    TAP_EQ_STR(compile_error("(input x float64 (n)) (input y float64 (3)) (input z float64 (4))",
                             "(add (add (input x float64 (n)) (input y float64 (3))) (input z float64 (4)))"),
               "kernels: in (add (add (input x float64 (n)) (input y float64 (3))) (input z float64 (4))): "
               "shapes (3) and (4) do not broadcast",
               "a symbolic size bound to 3 by one add conflicts with 4 in the next");
    TAP_EQ_STR(compile_error("(input x float64 (n))", "(frob (input x float64 (n)))"),
               "kernels: in (frob (input x float64 (n))): unknown op", "unknown op");
    TAP_EQ_STR(compile_error("(input x float64 (n))", "(exp (input y float64 (n)))"),
               "kernels: in (input y float64 (n)): this input is not among the function's inputs",
               "undeclared input");
    TAP_EQ_STR(compile_error("(input x float65 (n))", "(exp (input x float65 (n)))"),
               "kernels: in (input x float65 (n)): unknown dtype (float64 float32 int64 int32 bool)",
               "unknown dtype");
    TAP_EQ_STR(compile_error("(input x float64 (n))", "(exp (input x float64 (n)) 2)"),
               "kernels: in (exp (input x float64 (n)) 2): wrong number of arguments", "arity");
    TAP_EQ_STR(compile_error("(input a float64 (m k)) (input b float64 (3 n))",
                             "(dot (input a float64 (2 4)) (input b float64 (3 n)))"),
               "kernels: in (input a float64 (2 4)): this input is not among the function's inputs",
               "inputs are matched as whole terms");
    TAP_EQ_STR(compile_error("(input a float64 (2 4)) (input b float64 (3 n))",
                             "(dot (input a float64 (2 4)) (input b float64 (3 n)))"),
               "kernels: in (dot (input a float64 (2 4)) (input b float64 (3 n))): dot: size 4 does not match size 3",
               "dot inner sizes");
    TAP_EQ_STR(compile_error("(input a float64 (2 2 2))", "(dot (input a float64 (2 2 2)) (input a float64 (2 2 2)))"),
               "kernels: in (dot (input a float64 (2 2 2)) (input a float64 (2 2 2))): dot takes vectors and matrices",
               "dot of 3-d arrays");
    TAP_EQ_STR(compile_error("(input x float64 (n))", "(sum (input x float64 (n)) (1))"),
               "kernels: in (sum (input x float64 (n)) (1)): an axis is out of range", "reduction axis");
    TAP_EQ_STR(compile_error("(input x float64 (n 3))", "(dimshuffle (input x float64 (n 3)) (1))"),
               "kernels: in (dimshuffle (input x float64 (n 3)) (1)): dimshuffle can only drop axes of static size 1",
               "dimshuffle dropping a real axis");
    TAP_EQ_STR(compile_error("(input x float64 (n))", "(add (input x float64 (n)) (sum (alloc 1.5 m)))"),
               "kernels: in (alloc 1.5 m): size m is not the size of any input",
               "a size no input binds");
    TAP_EQ_STR(compile_error("(input x float64 (n))", "(cast float16 (input x float64 (n)))"),
               "kernels: in (cast float16 (input x float64 (n))): cast needs a dtype: float64 float32 int64 int32 bool",
               "cast to an unknown dtype");
    TAP_EQ_STR(compile_error("(input x float64 (n))", "(add (input x float64 (n)) \"s\")"),
               "kernels: in \"s\": not a tensor term (an op, a declared input or a number)", "a string operand");
    TAP_EQ_STR(compile_error("(input x int32 (n))", "(add (input x int32 (n)) (const int32 5000000000))"),
               "kernels: in (const int32 5000000000): the integer does not fit in int32", "constant range");

    /* call time: the input and the shape expected */
    tg_error err;
    tg_fn *fn = kt_compile(ctx, "(input x float64 (n 3)) (input y float64 (n))",
                           "(add (input x float64 (n 3)) (dimshuffle (input y float64 (n)) (0 x)))", NULL, kt_path, &err);
    TAP_CHECK(fn != NULL, "compile with a symbolic size shared by two inputs");
    double d[64] = {0};
    int64_t sx[2] = {4, 3}, sy[1] = {5}, sbad[2] = {4, 2};
    tg_array in[2], out = {0};
    tg_array_init(&in[0], TG_FLOAT64, 2, sx, d);
    tg_array_init(&in[1], TG_FLOAT64, 1, sy, d);
    TAP_EQ_INT(tg_fn_call(fn, in, &out, &err), -1, "sizes disagree at call time");
    TAP_EQ_STR(err.message, "kernels: input y: expected shape (n) with n = 4, got (5)",
               "the error names the input and the expected shape");
    TAP_CHECK(out.data == NULL, "no output is left allocated after an error");
    tg_array_init(&in[0], TG_FLOAT64, 2, sbad, d);
    tg_fn_call(fn, in, &out, &err);
    TAP_EQ_STR(err.message, "kernels: input x: expected shape (n 3), got (4 2)", "a static size at call time");
    tg_array_init(&in[0], TG_FLOAT32, 2, sx, d);
    tg_fn_call(fn, in, &out, &err);
    TAP_EQ_STR(err.message, "kernels: input x: expected dtype float64, got float32", "a dtype at call time");
    tg_array_init(&in[0], TG_FLOAT64, 2, sx, d);
    sy[0] = 4;
    tg_array_init(&in[1], TG_FLOAT64, 1, sy, d);
    int64_t so[2] = {4, 4};
    tg_array_init(&out, TG_FLOAT64, 2, so, d);
    tg_fn_call(fn, in, &out, &err);
    TAP_EQ_STR(err.message, "kernels: output 0: expected float64 (4 3), got float64 (4 4)",
               "a caller-provided output of the wrong shape");
    tg_fn_free(fn);

    fn = kt_compile(ctx, "(input x float64 (n))", "(reshape (input x float64 (n)) (2 3))", NULL, kt_path, &err);
    TAP_CHECK(fn != NULL, "compile a reshape of a symbolic size");
    tg_array_init(&in[0], TG_FLOAT64, 1, sy, d);
    memset(&out, 0, sizeof out);
    TAP_EQ_INT(tg_fn_call(fn, in, &out, &err), -1, "a reshape whose sizes disagree at call time");
    TAP_EQ_STR(err.message, "kernels: in (reshape (input x float64 (n)) (2 3)): cannot reshape (4) to (2 3)",
               "the error names the subterm");
    tg_fn_free(fn);

    fn = kt_compile(ctx, "(input x float64 (n))", "(max (input x float64 (n)))", NULL, kt_path, &err);
    sy[0] = 0;
    tg_array_init(&in[0], TG_FLOAT64, 1, sy, d);
    TAP_EQ_INT(tg_fn_call(fn, in, &out, &err), -1, "max of an empty vector fails");
    TAP_EQ_STR(err.message, "kernels: in (max (input x float64 (n))): max of an empty axis", "and says why");
    tg_fn_free(fn);
}

/* The output dtype of an expression over x (int32 vector), y (float32). */
static const char *dtype_of(const char *expr)
{
    static const char *const names[] = {"bool", "int32", "int64", "float32", "float64"};
    tg_error err;
    tg_fn *fn = kt_compile(ctx, "(input x int32 (n)) (input y float32 (n)) (input b bool (n))", expr, NULL, kt_path, &err);
    static char cmsg[600];
    if (!fn)
        return snprintf(cmsg, sizeof cmsg, "%s", err.message), cmsg;
    int64_t n = 2;
    int32_t xi[2] = {1, 2};
    float yf[2] = {1, 2};
    unsigned char bb[2] = {1, 0};
    tg_array in[3], out = {0};
    tg_array_init(&in[0], TG_INT32, 1, &n, xi);
    tg_array_init(&in[1], TG_FLOAT32, 1, &n, yf);
    tg_array_init(&in[2], TG_BOOL, 1, &n, bb);
    static char msg[600];
    snprintf(msg, sizeof msg, "%s", tg_fn_call(fn, in, &out, &err) == 0 ? names[out.dtype] : err.message);
    const char *r = msg;
    free(out.data);
    tg_fn_free(fn);
    return r;
}

static void test_dtypes(void)
{
    TAP_EQ_STR(dtype_of("(add (input x int32 (n)) 2)"), "int32", "an integer literal takes int32");
    TAP_EQ_STR(dtype_of("(add (input x int32 (n)) 2.5)"), "float64", "a float literal with int32 gives float64");
    TAP_EQ_STR(dtype_of("(mul (input y float32 (n)) 0.1)"), "float32", "a float literal takes float32");
    TAP_EQ_STR(dtype_of("(add (input x int32 (n)) (input y float32 (n)))"), "float64", "int32 + float32");
    TAP_EQ_STR(dtype_of("(add (input b bool (n)) (input y float32 (n)))"), "float32", "bool + float32");
    TAP_EQ_STR(dtype_of("(add (input b bool (n)) (input b bool (n)))"), "int64", "bool + bool counts");
    TAP_EQ_STR(dtype_of("(true_div (input x int32 (n)) 2)"), "float64", "true_div of integers");
    TAP_EQ_STR(dtype_of("(exp (input x int32 (n)))"), "float64", "exp of an integer");
    TAP_EQ_STR(dtype_of("(lt (input x int32 (n)) (input y float32 (n)))"), "bool", "comparison");
    TAP_EQ_STR(dtype_of("(switch (input b bool (n)) (input x int32 (n)) 1.5)"), "float64", "switch promotes");
    TAP_EQ_STR(dtype_of("(sum (input x int32 (n)))"), "int64", "sum of int32");
    TAP_EQ_STR(dtype_of("(mean (input x int32 (n)))"), "float64", "mean of int32");
    TAP_EQ_STR(dtype_of("(max (input y float32 (n)))"), "float32", "max keeps the dtype");
    TAP_EQ_STR(dtype_of("(cast int64 (input y float32 (n)))"), "int64", "cast");
    TAP_EQ_STR(dtype_of("(add (input x int32 (n)) (const int64 1))"), "int64", "a typed constant is strong");
    TAP_EQ_STR(dtype_of("(add 1 2)"), "int64", "literals alone");

    /* values: the float32 literal is rounded before the product */
    tg_error err;
    tg_fn *fn = kt_compile(ctx, "(input y float32 (n))", "(mul (input y float32 (n)) 0.1)", NULL, kt_path, &err);
    int64_t n = 1;
    float y = 3.0f, got = 0;
    tg_array in, out;
    tg_array_init(&in, TG_FLOAT32, 1, &n, &y);
    tg_array_init(&out, TG_FLOAT32, 1, &n, &got);
    TAP_CHECK(fn && tg_fn_call(fn, &in, &out, &err) == 0 && got == 3.0f * 0.1f, "float32 * 0.1 as C computes it");
    tg_fn_free(fn);

    /* int32 wraps, casts saturate and send NaN to 0 */
    fn = kt_compile(ctx, "(input x int32 (n))", "(add (input x int32 (n)) 1)", NULL, kt_path, &err);
    int32_t xi = INT32_MAX, xo = 0;
    tg_array_init(&in, TG_INT32, 1, &n, &xi);
    tg_array_init(&out, TG_INT32, 1, &n, &xo);
    TAP_CHECK(fn && tg_fn_call(fn, &in, &out, &err) == 0 && xo == INT32_MIN, "int32 addition wraps");
    tg_fn_free(fn);
    double xs[4] = {1e30, -1e30, NAN, -2.7};
    int32_t cs[4];
    n = 4;
    fn = kt_compile(ctx, "(input x float64 (n))", "(cast int32 (input x float64 (n)))", NULL, kt_path, &err);
    tg_array_init(&in, TG_FLOAT64, 1, &n, xs);
    tg_array_init(&out, TG_INT32, 1, &n, cs);
    TAP_CHECK(fn && tg_fn_call(fn, &in, &out, &err) == 0 && cs[0] == INT32_MAX && cs[1] == INT32_MIN &&
                  cs[2] == 0 && cs[3] == -2,
              "cast to int32 saturates, truncates and sends NaN to 0 (%d %d %d %d)", cs[0], cs[1], cs[2], cs[3]);
    tg_fn_free(fn);
}

/* Run a function on given float64 inputs; returns malloc'd outputs. */
static int run_f64(tg_fn *fn, int nin, tg_array *in, tg_array *out)
{
    tg_error err;
    memset(out, 0, sizeof *out);
    int rc = tg_fn_call(fn, in, out, &err);
    if (rc < 0)
        tap_diag("%s", err.message);
    (void)nin;
    return rc;
}

static void test_layout(void)
{
    tg_error err;
    double a[6] = {1, 2, 3, 4, 5, 6};
    int64_t s23[2] = {2, 3};
    tg_array in, out;
    tg_array_init(&in, TG_FLOAT64, 2, s23, a);

    tg_fn *fn = kt_compile(ctx, "(input a float64 (m n))", "(transpose (input a float64 (m n)))", NULL, kt_path, &err);
    int ok = fn && run_f64(fn, 1, &in, &out) == 0 && out.ndim == 2 && out.shape[0] == 3 && out.shape[1] == 2;
    double *o = out.data;
    TAP_CHECK(ok && o[0] == 1 && o[1] == 4 && o[2] == 2 && o[3] == 5 && o[4] == 3 && o[5] == 6, "transpose");
    free(out.data);
    tg_fn_free(fn);

    /* reshape of a transposed (non-contiguous) view copies in C order */
    fn = kt_compile(ctx, "(input a float64 (m n))", "(reshape (transpose (input a float64 (m n))) (6))", NULL, kt_path, &err);
    ok = fn && run_f64(fn, 1, &in, &out) == 0 && out.ndim == 1 && out.shape[0] == 6;
    o = out.data;
    TAP_CHECK(ok && o[0] == 1 && o[1] == 4 && o[2] == 2 && o[5] == 6, "reshape of a transpose");
    free(out.data);
    tg_fn_free(fn);

    fn = kt_compile(ctx, "(input a float64 (m n))", "(reshape (input a float64 (m n)) (3 2))", NULL, kt_path, &err);
    ok = fn && run_f64(fn, 1, &in, &out) == 0 && out.shape[0] == 3 && out.shape[1] == 2;
    o = out.data;
    TAP_CHECK(ok && o[0] == 1 && o[3] == 4 && o[5] == 6 && o != a, "reshape of a contiguous input (copied out)");
    free(out.data);
    tg_fn_free(fn);

    /* dimshuffle adds a broadcast axis: outer sum via broadcasting */
    double v[3] = {10, 20, 30};
    int64_t s3 = 3;
    tg_array ins2[2];
    tg_array_init(&ins2[0], TG_FLOAT64, 1, &s3, v);
    tg_array_init(&ins2[1], TG_FLOAT64, 1, &s3, v);
    fn = kt_compile(ctx, "(input x float64 (n)) (input y float64 (k))",
                    "(add (dimshuffle (input x float64 (n)) (0 x)) (input y float64 (k)))", NULL, kt_path, &err);
    ok = fn && run_f64(fn, 2, ins2, &out) == 0 && out.ndim == 2 && out.shape[0] == 3 && out.shape[1] == 3;
    o = out.data;
    TAP_CHECK(ok && o[0] == 20 && o[1] == 30 && o[3] == 30 && o[8] == 60, "dimshuffle (0 x) broadcasts an outer sum");
    free(out.data);
    tg_fn_free(fn);

    /* alloc, switch, n-ary add, weak literals */
    fn = kt_compile(ctx, "(input x float64 (n))",
                    "(add (alloc 1.5 n 2) (dimshuffle (switch (gt (input x float64 (n)) 15) (input x float64 (n)) 0) (0 x)) 1 2)",
                    NULL, kt_path, &err);
    ok = fn && run_f64(fn, 1, &ins2[0], &out) == 0 && out.ndim == 2 && out.shape[0] == 3 && out.shape[1] == 2;
    o = out.data;
    TAP_CHECK(ok && o[0] == 4.5 && o[1] == 4.5 && o[2] == 24.5 && o[5] == 34.5, "alloc, switch and a 4-ary add");
    free(out.data);
    tg_fn_free(fn);

    /* the same node twice as output, and an input as output */
    tg_term *x = tg_read_cstr(ctx, "(input x float64 (n))", &err);
    tg_term *e = tg_read_cstr(ctx, "(exp (input x float64 (n)))", &err);
    tg_term *outs[3] = {e, e, x};
    tg_fn_options opt = {NULL, kt_path, NULL, NULL, NULL, NULL};
    fn = tg_fn_compile(ctx, 1, &x, 3, outs, &opt, &err);
    tg_array o3[3];
    memset(o3, 0, sizeof o3);
    ok = fn && tg_fn_call(fn, &ins2[0], o3, &err) == 0;
    TAP_CHECK(ok && ((double *)o3[0].data)[1] == exp(20.0) && ((double *)o3[1].data)[1] == exp(20.0) &&
                  ((double *)o3[2].data)[2] == 30 && o3[0].data != o3[1].data,
              "repeated outputs and an input as an output get their own arrays");
    for (int i = 0; i < 3; i++)
        free(o3[i].data);
    tg_fn_free(fn);

    /* strided caller output */
    double big[12] = {0};
    fn = kt_compile(ctx, "(input x float64 (n))", "(mul 2 (input x float64 (n)))", NULL, kt_path, &err);
    tg_array so;
    tg_array_init(&so, TG_FLOAT64, 1, &s3, big + 8);
    so.strides[0] = -32;
    ok = fn && tg_fn_call(fn, &ins2[0], &so, &err) == 0;
    TAP_CHECK(ok && big[8] == 20 && big[4] == 40 && big[0] == 60 && big[1] == 0, "writes through negative strides");
    tg_fn_free(fn);
}

static void test_schedule(void)
{
    tg_error err;
    const char *ins = "(input x float64 (n)) (input y float64 (n)) (input z float64 (n))";
    const char *expr = "(add (mul (exp (input x float64 (n))) (input y float64 (n)))"
                       " (true_div (sin (input z float64 (n))) (add 1 (mul (input x float64 (n)) (input x float64 (n))))))";
    tg_fn *fn = kt_compile(ctx, ins, expr, NULL, kt_path, &err);
    const char *s = tap_show(tg_fn_schedule(fn));
    TAP_EQ_INT(count_in(s, "(loop"), 1, "exp(x)*y + sin(z)/(1+x*x) is one loop");
    TAP_EQ_INT(count_in(s, "(slot "), 0, "and needs no intermediate buffer");
    TAP_EQ_STR(s,
               "(schedule (inputs (x float64 (n)) (y float64 (n)) (z float64 (n))) (loop (n) (in x 1 z y) "
               "(out (%10 float64 (output 0))) (ops (%3 (mul x x)) (%5 (add 1 %3)) (%6 (sin z)) "
               "(%7 (true_div %6 %5)) (%8 (exp x)) (%9 (mul %8 y)) (%10 (add %9 %7)))) (outputs %10) (slots 0))",
               "the schedule term");
    tg_fn_free(fn);

    /* a reduction splits the loops; the sum's input is a slot; after the
     * reduction a second loop reuses ... */
    fn = kt_compile(ctx, "(input x float64 (n))",
                    "(mul (exp (input x float64 (n))) (sum (mul (input x float64 (n)) 2)))", NULL, kt_path, &err);
    s = tap_show(tg_fn_schedule(fn));
    TAP_EQ_INT(count_in(s, "(loop"), 2, "a reduction between elementwise work: two loops");
    TAP_EQ_INT(count_in(s, "(reduce"), 1, "and one reduction");
    tg_fn_free(fn);
}

/* The slot numbers in a schedule text, in order of appearance. */
static int slots_of(const char *s, int *out, int max)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, "(slot ")) && n < max; p++)
        out[n++] = atoi(p + 6);
    return n;
}

static void test_buffers(void)
{
    tg_error err;
    /* exp -> dot -> sin -> dot -> neg: four intermediates, two slots */
    const char *ins = "(input x float64 (n n))";
    const char *expr = "(neg (dot (sin (dot (exp (input x float64 (n n))) (exp (input x float64 (n n)))))"
                       " (sin (dot (exp (input x float64 (n n))) (exp (input x float64 (n n)))))))";
    tg_fn *fn = kt_compile(ctx, ins, expr, NULL, kt_path, &err);
    const char *s = tap_show(tg_fn_schedule(fn));
    int sl[8];
    int ns = slots_of(s, sl, 8);
    if (ns != 4)
        tap_diag("%s", s);
    TAP_EQ_INT(ns, 4, "four values live in slots");
    TAP_CHECK(strstr(s, "(slots 2)") != NULL, "in two buffers");
    TAP_CHECK(ns == 4 && sl[1] == sl[2], "sin(dot) is written in place over the dot it reads");
    TAP_CHECK(ns == 4 && sl[3] == sl[0], "the second dot reuses the first loop's dead buffer");
    int64_t sh[2] = {3, 3};
    double xv[9], ref[9];
    for (int i = 0; i < 9; i++)
        xv[i] = 0.1 * i - 0.4;
    tg_array in, out;
    tg_array_init(&in, TG_FLOAT64, 2, sh, xv);
    tg_array_init(&out, TG_FLOAT64, 2, sh, ref);
    int ok = fn && tg_fn_call(fn, &in, &out, &err) == 0;
    /* the reference, computed naively */
    double e[9], d1[9], s1[9], d2[9];
    for (int i = 0; i < 9; i++)
        e[i] = exp(xv[i]);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            long double acc = 0;
            for (int k = 0; k < 3; k++)
                acc += (long double)e[i * 3 + k] * e[k * 3 + j];
            d1[i * 3 + j] = (double)acc;
        }
    for (int i = 0; i < 9; i++)
        s1[i] = sin(d1[i]);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            long double acc = 0;
            for (int k = 0; k < 3; k++)
                acc += (long double)s1[i * 3 + k] * s1[k * 3 + j];
            d2[i * 3 + j] = (double)acc;
        }
    for (int i = 0; ok && i < 9; i++)
        ok = fabs(ref[i] + d2[i]) <= 1e-13 * (fabs(d2[i]) + 1);
    TAP_CHECK(ok, "and computes the right values with its buffers shared");
    tg_fn_free(fn);

    /* a donated input is overwritten on its last use; a kept one is not */
    const char *e2 = "(dot (exp (input x float64 (n n))) (input y float64 (n n)))";
    const char *i2 = "(input x float64 (n n)) (input y float64 (n n))";
    unsigned char donate[2] = {0, 1}, keep[2] = {1, 1};
    tg_fn *f1 = kt_compile(ctx, i2, e2, donate, kt_path, &err);
    tg_fn *f2 = kt_compile(ctx, i2, e2, keep, kt_path, &err);
    TAP_CHECK(strstr(tap_show(tg_fn_schedule(f1)), "(inplace x)") != NULL, "a donated input is planned for in-place");
    TAP_CHECK(strstr(tap_show(tg_fn_schedule(f2)), "inplace") == NULL, "a kept input is not");
    double x1[9], x2[9], y[9], r1[9], r2[9];
    for (int i = 0; i < 9; i++)
        x1[i] = x2[i] = 0.3 * i - 1, y[i] = 1 - 0.2 * i;
    tg_array a2[2], o1, o2;
    tg_array_init(&a2[0], TG_FLOAT64, 2, sh, x1);
    tg_array_init(&a2[1], TG_FLOAT64, 2, sh, y);
    tg_array_init(&o1, TG_FLOAT64, 2, sh, r1);
    tg_array_init(&o2, TG_FLOAT64, 2, sh, r2);
    ok = tg_fn_call(f1, a2, &o1, &err) == 0;
    TAP_CHECK(ok && x1[4] == exp(x2[4]), "the donated input now holds exp(x)");
    tg_array_init(&a2[0], TG_FLOAT64, 2, sh, x2);
    ok = tg_fn_call(f2, a2, &o2, &err) == 0 && memcmp(r1, r2, sizeof r1) == 0;
    TAP_CHECK(ok && x2[4] == 0.3 * 4 - 1, "results identical with and without in-place, kept input intact");
    /* a strided donated input cannot be reused: still right */
    double xs[18];
    for (int i = 0; i < 9; i++)
        xs[2 * i] = 0.3 * i - 1;
    tg_array_init(&a2[0], TG_FLOAT64, 2, sh, xs);
    a2[0].strides[0] *= 2, a2[0].strides[1] *= 2;
    memset(r1, 0, sizeof r1);
    ok = tg_fn_call(f1, a2, &o1, &err) == 0;
    /* the strided loop calls scalar exp, the contiguous one vector exp
     * (within 4 ulp): the same results to that accuracy */
    for (int i = 0; ok && i < 9; i++)
        ok = fabs(r1[i] - r2[i]) <= 1e-14 * (fabs(r2[i]) + 1);
    TAP_CHECK(ok && xs[8] == 0.3 * 4 - 1, "a strided donated input is left alone, same results");
    tg_fn_free(f1);
    tg_fn_free(f2);
}

/* Fused and one-op-at-a-time evaluation give the same bits. */
static void test_fusion_identical(void)
{
    tg_error err;
    const char *ins = "(input x float64 (n)) (input y float64 (n)) (input z float64 (n))";
    const char *X = "(input x float64 (n))", *Y = "(input y float64 (n))", *Z = "(input z float64 (n))";
    char expr[600];
    snprintf(expr, sizeof expr, "(add (mul (exp %s) %s) (true_div (sin %s) (add 1 (mul %s %s))))", X, Y, Z, X, X);
    int64_t n = 1000;
    kt_arr xa, ya, za;
    kt_make(&xa, TG_FLOAT64, 1, &n, 0), kt_make(&ya, TG_FLOAT64, 1, &n, 0), kt_make(&za, TG_FLOAT64, 1, &n, 0);
    kt_fill(&xa.a, -3, 3), kt_fill(&ya.a, -3, 3), kt_fill(&za.a, -3, 3);
    tg_fn *fused = kt_compile(ctx, ins, expr, NULL, kt_path, &err);
    tg_array in[3] = {xa.a, ya.a, za.a}, out = {0};
    int ok = fused && tg_fn_call(fused, in, &out, &err) == 0;
    /* one op per function: a = exp x; b = a*y; c = sin z; d = x*x; e = 1+d; f = c/e; g = b+f */
    const char *steps[][3] = {
        {"(input a float64 (n))", "(exp (input a float64 (n)))", "x"},
        {"(input a float64 (n)) (input b float64 (n))", "(mul (input a float64 (n)) (input b float64 (n)))", "ay"},
        {"(input a float64 (n))", "(sin (input a float64 (n)))", "z"},
        {"(input a float64 (n)) (input b float64 (n))", "(mul (input a float64 (n)) (input b float64 (n)))", "xx"},
        {"(input a float64 (n))", "(add 1 (input a float64 (n)))", "d"},
        {"(input a float64 (n)) (input b float64 (n))", "(true_div (input a float64 (n)) (input b float64 (n)))", "ce"},
        {"(input a float64 (n)) (input b float64 (n))", "(add (input a float64 (n)) (input b float64 (n)))", "bf"},
    };
    tg_array v[8];
    memset(v, 0, sizeof v);
    tg_array args[7][2] = {{xa.a}, {{0}, ya.a}, {za.a}, {xa.a, xa.a}, {{0}}, {{0}}, {{0}}};
    for (int k = 0; ok && k < 7; k++) {
        if (k == 1) args[1][0] = v[0];
        if (k == 4) args[4][0] = v[3];
        if (k == 5) args[5][0] = v[2], args[5][1] = v[4];
        if (k == 6) args[6][0] = v[1], args[6][1] = v[5];
        tg_fn *f = kt_compile(ctx, steps[k][0], steps[k][1], NULL, kt_path, &err);
        ok = f && tg_fn_call(f, args[k], &v[k], &err) == 0;
        tg_fn_free(f);
    }
    if (kt_path == 1) {
        TAP_CHECK(ok && memcmp(out.data, v[6].data, (size_t)n * 8) == 0,
                  "the fused loop gives the same bits as one op at a time");
    } else {
        /* compiled, exp and sin may take libmvec's vector or scalar path
         * depending on the loop: equal up to its 4 ulp */
        for (int64_t j = 0; ok && j < n; j++) {
            double a = ((double *)out.data)[j], b = ((double *)v[6].data)[j];
            double mag = fabs(exp(((double *)xa.a.data)[j]) * ((double *)ya.a.data)[j]) + 1;
            ok = fabs(a - b) <= 8 * 2.3e-16 * mag;
        }
        TAP_CHECK(ok, "the fused loop agrees with one op at a time");
    }
    for (int k = 0; k < 7; k++)
        free(v[k].data);
    free(out.data), free(xa.block), free(ya.block), free(za.block);
    tg_fn_free(fused);
}

/* alpha*dot(A,B) + beta*C is one GEMM call, with C broadcast. */
static void test_gemm(void)
{
    tg_error err;
    const char *ins = "(input a float64 (m k)) (input b float64 (k n)) (input c float64 (m n))"
                      " (input bias float64 (n)) (input s float64 ())";
    const char *A = "(input a float64 (m k))", *B = "(input b float64 (k n))", *C = "(input c float64 (m n))";
    const char *bias = "(input bias float64 (n))", *S = "(input s float64 ())";
    char e1[600], e2[600], e3[600];
    snprintf(e1, sizeof e1, "(add (mul 2 (dot %s %s)) (mul %s %s))", A, B, S, C);
    snprintf(e2, sizeof e2, "(add %s (dot %s %s))", bias, A, B);
    snprintf(e3, sizeof e3, "(add (dot %s %s) (dot %s %s))", A, B, A, B);
    int64_t m = 3, k = 4, n = 5, sa[2] = {3, 4}, sb[2] = {4, 5}, sc[2] = {3, 5};
    kt_arr a, b, c, bi, sv;
    kt_make(&a, TG_FLOAT64, 2, sa, 0), kt_make(&b, TG_FLOAT64, 2, sb, 1), kt_make(&c, TG_FLOAT64, 2, sc, 0);
    kt_make(&bi, TG_FLOAT64, 1, &n, 0), kt_make(&sv, TG_FLOAT64, 0, NULL, 0);
    kt_fill(&a.a, -2, 2), kt_fill(&b.a, -2, 2), kt_fill(&c.a, -2, 2), kt_fill(&bi.a, -2, 2);
    *(double *)sv.a.data = 0.75;
    tg_array in[5] = {a.a, b.a, c.a, bi.a, sv.a};
    const char *exprs[3] = {e1, e2, e3};
    for (int q = 0; q < 3; q++) {
        tg_fn *fn = kt_compile(ctx, ins, exprs[q], NULL, kt_path, &err);
        const char *sched = fn ? tap_show(tg_fn_schedule(fn)) : err.message;
        if (q < 2)
            TAP_CHECK(strstr(sched, "(gemm") && !strstr(sched, "(loop") && !strstr(sched, "(dot"),
                      "%s is one GEMM step", q ? "bias + dot(A,B)" : "2*dot(A,B) + s*C");
        else
            TAP_CHECK(strstr(sched, "(dot") && !strstr(sched, "(gemm"), "a dot used twice is not fused");
        tg_array out = {0};
        int ok = fn && tg_fn_call(fn, in, &out, &err) == 0;
        for (int64_t i = 0; ok && i < m; i++)
            for (int64_t j = 0; ok && j < n; j++) {
                long double acc = 0;
                for (int64_t p = 0; p < k; p++) {
                    int64_t ia[2] = {i, p}, ib[2] = {p, j};
                    acc += kt_get(&a.a, ia) * kt_get(&b.a, ib);
                }
                int64_t ic[2] = {i, j};
                long double want = q == 0 ? 2 * acc + 0.75L * kt_get(&c.a, ic)
                                 : q == 1 ? acc + kt_get(&bi.a, &j) : 2 * acc;
                ok = fabsl(kt_get(&out, ic) - want) <= 1e-14L * (fabsl(want) + 1);
            }
        TAP_CHECK(ok, "and computes the right values (%d)", q);
        free(out.data);
        tg_fn_free(fn);
    }
    /* beta 0 must still carry a NaN of C, alpha 0 an inf of A */
    tg_fn *fn = kt_compile(ctx, ins, e1, NULL, kt_path, &err);
    *(double *)sv.a.data = 0;
    int64_t i00[2] = {0, 0};
    kt_set(&c.a, i00, NAN);
    tg_array out = {0};
    int ok = fn && tg_fn_call(fn, in, &out, &err) == 0;
    TAP_CHECK(ok && isnan(((double *)out.data)[0]) && !isnan(((double *)out.data)[1]),
              "a zero beta keeps NaN * 0 = NaN");
    free(out.data);
    tg_fn_free(fn);
    free(a.block), free(b.block), free(c.block), free(bi.block), free(sv.block);
}

/* Compiled code and the interpreter give the same bits, NaN and signed
 * zeros included; without a compiler the interpreter runs. */
static void test_paths_agree(void)
{
    tg_error err;
    const char *ins = "(input x float64 (n)) (input y float32 (n)) (input i int32 (n))";
    const char *outs =
        "(add (mul (exp (input x float64 (n))) (input y float32 (n))) (true_div (sin (input x float64 (n)))"
        " (add 1 (mul (input x float64 (n)) (input x float64 (n))))))"
        " (switch (lt (input i int32 (n)) 0) (sigmoid (input y float32 (n))) (tanh (input x float64 (n))))"
        " (maximum (mul (input i int32 (n)) 7 (input i int32 (n))) (cast int32 (input x float64 (n))))"
        " (pow (abs (input y float32 (n))) (neg (input x float64 (n))))"
        " (minimum (log1p (input x float64 (n))) (sqrt (input y float32 (n))))";
    int64_t n = 517;
    kt_arr x, y, i;
    kt_make(&x, TG_FLOAT64, 1, &n, 0), kt_make(&y, TG_FLOAT32, 1, &n, 1), kt_make(&i, TG_INT32, 1, &n, 0);
    kt_fill(&x.a, -4, 4), kt_fill(&y.a, -4, 4), kt_fill(&i.a, -1e5, 1e5);
    double *xv = x.a.data;
    xv[0] = NAN, xv[1] = -0.0, xv[2] = INFINITY, xv[3] = -INFINITY, xv[4] = 1e300;
    tg_array in[3] = {x.a, y.a, i.a}, o[2][5];
    memset(o, 0, sizeof o);
    int ok = 1;
    for (int p = 0; p < 2; p++) {
        tg_fn *fn = kt_compile(ctx, ins, outs, NULL, p, &err);
        ok &= fn && tg_fn_native(fn) == !p && tg_fn_call(fn, in, o[p], &err) == 0;
        tg_fn_free(fn);
    }
    /* integers and arithmetic agree bit for bit; the math functions of
     * libmvec are within 4 ulp of glibc's scalar ones (doc/kernels.md) */
    for (int k = 0; ok && k < 5; k++) {
        ok = o[0][k].dtype == o[1][k].dtype;
        for (int64_t j = 0; ok && j < n; j++) {
            long double a = kt_get(&o[0][k], &j), b = kt_get(&o[1][k], &j);
            long double ulp = o[0][k].dtype == TG_FLOAT32 ? 1.2e-7L : 2.3e-16L;
            ok = (isnan(a) && isnan(b)) || a == b || fabsl(a - b) <= 4 * ulp * fabsl(b);
            if (!ok)
                tap_diag("output %d element %lld: %.17Lg vs %.17Lg", k, (long long)j, a, b);
        }
    }
    TAP_CHECK(ok, "compiled code and the interpreter agree on five mixed-dtype outputs");
    ok = 1;
    for (int p = 0; p < 2; p++) {
        tg_fn *fn = kt_compile(ctx, ins, "(maximum (mul (input i int32 (n)) 7 (input i int32 (n)))"
                               " (cast int32 (add (input x float64 (n)) (true_div (input y float32 (n)) 3))))",
                               NULL, p, &err);
        free(o[p][0].data);
        memset(&o[p][0], 0, sizeof o[p][0]);
        ok &= fn && tg_fn_call(fn, in, &o[p][0], &err) == 0;
        tg_fn_free(fn);
    }
    TAP_CHECK(ok && memcmp(o[0][0].data, o[1][0].data, (size_t)n * 4) == 0,
              "and bit for bit on arithmetic, casts and integers");
    for (int p = 0; p < 2; p++)
        for (int k = 0; k < 5; k++)
            free(o[p][k].data);
    /* large enough for the compiled loop to split over threads, rows cut
     * in the middle, a strided operand: same bits as the interpreter */
    {
        int64_t sh2[2] = {7, 5003}, cnt = 7 * 5003;
        kt_arr p2, q2;
        kt_make(&p2, TG_FLOAT64, 2, sh2, 0), kt_make(&q2, TG_FLOAT32, 2, sh2, 1);
        kt_fill(&p2.a, -3, 3), kt_fill(&q2.a, -3, 3);
        const char *i2 = "(input p float64 (r c)) (input q float32 (r c))";
        const char *o2 = "(add (mul (input p float64 (r c)) (input q float32 (r c)) 3)"
                         " (true_div (input p float64 (r c)) (add 1 (abs (input q float32 (r c))))))";
        tg_array in2[2] = {p2.a, q2.a}, r2[2];
        memset(r2, 0, sizeof r2);
        int ok2 = 1;
        for (int p = 0; p < 2; p++) {
            tg_fn *fn = kt_compile(ctx, i2, o2, NULL, p, &err);
            ok2 &= fn && tg_fn_native(fn) == !p && tg_fn_call(fn, in2, &r2[p], &err) == 0;
            tg_fn_free(fn);
        }
        TAP_CHECK(ok2 && memcmp(r2[0].data, r2[1].data, (size_t)cnt * 8) == 0,
                  "a loop of 35021 elements split over threads agrees bit for bit");
        free(r2[0].data), free(r2[1].data), free(p2.block), free(q2.block);
    }
    /* no compiler: a warning and the interpreter */
    tg_fn_options opt = {NULL, 0, "tgrel-no-such-compiler", NULL, NULL, NULL};
    tg_term *xt = tg_read_cstr(ctx, "(input x float64 (n))", &err);
    tg_term *e = tg_read_cstr(ctx, "(exp (input x float64 (n)))", &err);
    tg_fn *fn = tg_fn_compile(ctx, 1, &xt, 1, &e, &opt, &err);
    tg_array out = {0};
    ok = fn && !tg_fn_native(fn) && tg_fn_call(fn, &x.a, &out, &err) == 0 && ((double *)out.data)[5] == exp(xv[5]);
    TAP_CHECK(ok, "without a compiler the interpreter runs");
    free(out.data);
    tg_fn_free(fn);
    free(x.block), free(y.block), free(i.block);
}

/* (neg (neg ... x)) a million deep: one loop, two registers, exact. */
static void test_deep(void)
{
    tg_error err;
    tg_term *x = tg_read_cstr(ctx, "(input x float64 (n))", &err);
    tg_term *neg = tg_symbol_cstr(ctx, "neg"), *t = x;
    for (int i = 0; i < 1000000; i++)
        t = tg_app(ctx, neg, 1, &t);
    tg_fn *fn = tg_fn_compile(ctx, 1, &x, 1, &t, NULL, &err);
    TAP_CHECK(fn != NULL, "compile a chain a million deep");
    TAP_CHECK(fn && !tg_fn_native(fn), "too long a loop for the C compiler stays in the interpreter");
    double xv[3] = {1.5, -2, 0.0}, ov[3];
    int64_t n = 3;
    tg_array in, out;
    tg_array_init(&in, TG_FLOAT64, 1, &n, xv);
    tg_array_init(&out, TG_FLOAT64, 1, &n, ov);
    int ok = fn && tg_fn_call(fn, &in, &out, &err) == 0;
    TAP_CHECK(ok && ov[0] == 1.5 && ov[1] == -2 && ov[2] == 0 && !signbit(ov[2]), "and run it");
    tg_term *s = fn ? tg_fn_schedule(fn) : NULL;
    TAP_CHECK(s && tg_length(s) == 5 && strncmp(tap_show(tg_nth(s, 2)), "(loop", 5) == 0, "its schedule is one loop");
    tg_fn_free(fn);
}

int main(void)
{
    tg_error err;
    ctx = tg_ctx_new(&err);
    KT_EACH_PATH {
        test_errors();
        test_dtypes();
        test_layout();
        test_schedule();
        test_buffers();
        test_fusion_identical();
        test_gemm();
    }
    test_deep();
    test_paths_agree();
    tg_ctx_free(ctx);
    return TAP_DONE();
}
