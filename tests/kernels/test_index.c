/* test_index.c - indexing and slicing, (subtensor X IDX ...), against a
 * reference that enumerates Python's slice semantics element by element:
 * random shapes (empty ones included), static and symbolic sizes, literal
 * and tensor indices, slices with negative bounds and steps, views fed to
 * fused loops and reductions; errors at compile and at call time; the
 * view in the schedule.  Every case runs compiled and interpreted. */
#include "kt.h"

static tg_ctx *ctx;

/* One IDX as the test draws it: 0 index, 1 slice; none is has_* == 0. */
typedef struct idx {
    int kind;
    int dynamic;            /* an index given as a 0-d int64 input */
    int64_t i, start, stop, step;
    int has_start, has_stop, has_step;
} idx;

/* The positions a slice selects, by walking them as Python's range of
 * the adjusted bounds does; returns the count. */
static int64_t ref_slice(int64_t n, const idx *s, int64_t *pos)
{
    int64_t step = s->has_step ? s->step : 1, k = 0;
    if (step > 0) {
        int64_t b = !s->has_start ? 0 : s->start < 0 ? s->start + n : s->start;
        int64_t e = !s->has_stop ? n : s->stop < 0 ? s->stop + n : s->stop;
        if (b < 0) b = 0;
        if (e > n) e = n;
        for (int64_t p = b; p < e; p += step)
            pos[k++] = p;
    } else {
        int64_t b = !s->has_start ? n - 1 : s->start < 0 ? s->start + n : s->start;
        int64_t e = !s->has_stop ? -1 : s->stop < 0 ? s->stop + n : s->stop;
        if (b > n - 1) b = n - 1;
        if (e < -1) e = -1;
        for (int64_t p = b; p > e; p += step)
            pos[k++] = p;
    }
    return k;
}

static void put_part(char *buf, size_t n, int has, int64_t v)
{
    if (has)
        snprintf(buf, n, "%lld", (long long)v);
    else
        snprintf(buf, n, "none");
}

/* Random indices for shape sh (rank r): count returned, in ix. */
static int draw(int r, const int64_t *sh, idx *ix)
{
    int k = r ? (int)(kt_rand() % (unsigned)(r + 1)) : 0;
    for (int d = 0; d < k; d++) {
        idx *x = &ix[d];
        memset(x, 0, sizeof *x);
        if (sh[d] > 0 && kt_rand() % 3 == 0) {
            x->kind = 0;
            x->i = (int64_t)(kt_rand() % (uint64_t)(2 * sh[d])) - sh[d];
            x->dynamic = kt_rand() % 2;
            continue;
        }
        x->kind = 1;
        x->has_start = kt_rand() % 3 != 0, x->start = (int64_t)(kt_rand() % 15) - 7;
        x->has_stop = kt_rand() % 3 != 0, x->stop = (int64_t)(kt_rand() % 15) - 7;
        x->has_step = kt_rand() % 2, x->step = 1 + (int64_t)(kt_rand() % 3);
        if (kt_rand() % 2)
            x->step = -x->step, x->has_step = 1;
    }
    return k;
}

/* The subtensor term of x (declared as decl) with indices ix; dynamic
 * indices are inputs i0 i1 ... */
static void term_of(char *buf, size_t n, const char *x, int k, const idx *ix)
{
    size_t o = (size_t)snprintf(buf, n, "(subtensor %s", x);
    for (int d = 0; d < k; d++) {
        if (ix[d].kind == 0 && ix[d].dynamic) {
            o += (size_t)snprintf(buf + o, n - o, " (input i%d int64 ())", d);
        } else if (ix[d].kind == 0) {
            o += (size_t)snprintf(buf + o, n - o, " %lld", (long long)ix[d].i);
        } else {
            char a[24], b[24], c[24];
            put_part(a, sizeof a, ix[d].has_start, ix[d].start);
            put_part(b, sizeof b, ix[d].has_stop, ix[d].stop);
            put_part(c, sizeof c, ix[d].has_step, ix[d].step);
            o += (size_t)snprintf(buf + o, n - o, " (slice %s %s %s)", a, b, c);
        }
    }
    snprintf(buf + o, n - o, ")");
}

/* Random subtensors compared with the reference.  wrap: 0 the view is
 * the output, 1 it feeds a fused loop (mul 3 ...), 2 a sum over it. */
static void test_random(tg_dtype dt, int wrap)
{
    static const char *const dn[] = {"bool", "int32", "int64", "float32", "float64"};
    int bad = 0, cases = 0, elems = 0;
    for (int rep = 0; rep < 60; rep++) {
        int64_t sh[3];
        int r = 1 + (int)(kt_rand() % 3);
        for (int d = 0; d < r; d++)
            sh[d] = kt_rand() % 7 == 0 ? 0 : 1 + (int64_t)(kt_rand() % 6);
        idx ix[3];
        int k = draw(r, sh, ix);
        char decl[80], x[120], ins[400], sub[400], outs[500];
        size_t o = (size_t)snprintf(decl, sizeof decl, "(");
        for (int d = 0; d < r; d++) {   /* sizes static or symbolic at random */
            if (kt_rand() % 2)
                o += (size_t)snprintf(decl + o, sizeof decl - o, "%s%lld", d ? " " : "", (long long)sh[d]);
            else
                o += (size_t)snprintf(decl + o, sizeof decl - o, "%sn%d", d ? " " : "", d);
        }
        snprintf(decl + o, sizeof decl - o, ")");
        snprintf(x, sizeof x, "(input x %s %s)", dn[dt], decl);
        o = (size_t)snprintf(ins, sizeof ins, "%s", x);
        for (int d = 0; d < k; d++)
            if (ix[d].kind == 0 && ix[d].dynamic)
                o += (size_t)snprintf(ins + o, sizeof ins - o, " (input i%d int64 ())", d);
        term_of(sub, sizeof sub, x, k, ix);
        snprintf(outs, sizeof outs, wrap == 0 ? "%s" : wrap == 1 ? "(mul 3 %s)" : "(sum %s all)", sub);
        tg_error err;
        tg_fn *fn = kt_compile(ctx, ins, outs, NULL, kt_path, &err);
        if (!fn) {
            if (bad++ < 3)
                tap_diag("compile %s: %s", outs, err.message);
            continue;
        }
        kt_arr xa;
        kt_make(&xa, dt, r, sh, rep & 1);
        kt_fill(&xa.a, -100, 100);
        tg_array in[4];
        int64_t ival[3];
        int nin = 0;
        in[nin++] = xa.a;
        for (int d = 0; d < k; d++)
            if (ix[d].kind == 0 && ix[d].dynamic) {
                ival[d] = ix[d].i;
                tg_array_init(&in[nin++], TG_INT64, 0, NULL, &ival[d]);
            }
        /* the reference: per input axis, the positions it takes */
        int64_t pos[3][16], len[3], rsh[3];
        int rr = 0;
        for (int d = 0; d < r; d++) {
            if (d < k && ix[d].kind == 0) {
                len[d] = 1, pos[d][0] = ix[d].i < 0 ? ix[d].i + sh[d] : ix[d].i;
                continue;
            }
            if (d < k) {
                len[d] = ref_slice(sh[d], &ix[d], pos[d]);
            } else {
                len[d] = sh[d];
                for (int64_t p = 0; p < sh[d]; p++)
                    pos[d][p] = p;
            }
            rsh[rr++] = len[d];
        }
        tg_array out = {0};
        cases++;
        if (tg_fn_call(fn, in, &out, &err) < 0) {
            if (bad++ < 3)
                tap_diag("call %s on %s: %s", outs, kt_shape(r, sh), err.message);
        } else {
            int want_nd = wrap == 2 ? 0 : rr;
            if (out.ndim != want_nd) {
                if (bad++ < 3)
                    tap_diag("%s: rank %d, want %d", outs, out.ndim, want_nd);
            } else {
                int64_t I[3] = {0}, J[3], n = 1;
                long double sum = 0;
                for (int d = 0; d < rr; d++)
                    n *= rsh[d];
                for (int d = 0; d < rr && wrap != 2; d++)
                    if (out.shape[d] != rsh[d] && bad++ < 3)
                        tap_diag("%s: shape %s, want %s", outs, kt_shape(out.ndim, out.shape), kt_shape(rr, rsh));
                if (n > 0)
                    do {
                        for (int d = 0, q = 0; d < r; d++)
                            J[d] = len[d] == 1 && d < k && ix[d].kind == 0 ? pos[d][0] : pos[d][I[q++]];
                        /* the products in double, as the kernel rounds them */
                        long double v = wrap == 1 ? (long double)(3 * (double)kt_get(&xa.a, J)) : kt_get(&xa.a, J);
                        sum += v;
                        elems++;
                        if (wrap != 2 && kt_get(&out, I) != v && bad++ < 3)
                            tap_diag("%s on %s: element %s is %Lg, want %Lg", outs, kt_shape(r, sh),
                                     kt_shape(rr, I), kt_get(&out, I), v);
                    } while (kt_next(rr, rsh, I));
                if (wrap == 2 && !kt_close(kt_get(&out, I), sum, 1e-13L) && bad++ < 3)
                    tap_diag("%s: sum %Lg, want %Lg", outs, kt_get(&out, I), sum);
            }
        }
        free(out.data);
        free(xa.block);
        tg_fn_free(fn);
    }
    TAP_CHECK(bad == 0, "subtensor on %s%s: %d random cases, %d elements", dn[dt],
              wrap == 0 ? "" : wrap == 1 ? " into a fused loop" : " into a sum", cases, elems);
}

/* Random (inc_subtensor X V IDX ...) and set_subtensor against the
 * reference: X with the part the indices select increased by V or set
 * to it, V broadcast (fewer axes, axes of size 1), computed by a loop
 * (mul 2 V).  mode 0: X an input kept intact, the update the output (X
 * copied); 1: X computed, (add 1 X), and the update read by (mul 3 ...)
 * (the update writes in X's slot); 2: X an input the function may
 * overwrite (written in place when contiguous). */
static void test_update_random(tg_dtype dt, int mode)
{
    static const char *const dn[] = {"bool", "int32", "int64", "float32", "float64"};
    int bad = 0, cases = 0, elems = 0, unchanged = 1;
    for (int rep = 0; rep < 60; rep++) {
        int64_t sh[3];
        int r = 1 + (int)(kt_rand() % 3);
        for (int d = 0; d < r; d++)
            sh[d] = kt_rand() % 7 == 0 ? 0 : 1 + (int64_t)(kt_rand() % 6);
        idx ix[3];
        int k = draw(r, sh, ix), inc = kt_rand() % 2;
        /* the part: per axis of X, the positions it takes */
        int64_t pos[3][16], len[3], rsh[3];
        int rr = 0;
        for (int d = 0; d < r; d++) {
            if (d < k && ix[d].kind == 0) {
                len[d] = 1, pos[d][0] = ix[d].i < 0 ? ix[d].i + sh[d] : ix[d].i;
                continue;
            }
            if (d < k) {
                len[d] = ref_slice(sh[d], &ix[d], pos[d]);
            } else {
                len[d] = sh[d];
                for (int64_t p = 0; p < sh[d]; p++)
                    pos[d][p] = p;
            }
            rsh[rr++] = len[d];
        }
        int vr = rr ? rr - (int)(kt_rand() % (unsigned)(rr + 1)) : 0;
        int64_t vsh[3];
        for (int d = 0; d < vr; d++)
            vsh[d] = kt_rand() % 3 == 0 ? 1 : rsh[rr - vr + d];
        char decl[80], x[120], v[120], ins[500], sub[500], outs[700], xt[200], vt[200];
        size_t o = (size_t)snprintf(decl, sizeof decl, "(");
        for (int d = 0; d < r; d++) {
            if (kt_rand() % 2)
                o += (size_t)snprintf(decl + o, sizeof decl - o, "%s%lld", d ? " " : "", (long long)sh[d]);
            else
                o += (size_t)snprintf(decl + o, sizeof decl - o, "%sn%d", d ? " " : "", d);
        }
        snprintf(decl + o, sizeof decl - o, ")");
        snprintf(x, sizeof x, "(input x %s %s)", dn[dt], decl);
        snprintf(v, sizeof v, "(input v %s %s)", dn[dt], kt_shape(vr, vsh));
        o = (size_t)snprintf(ins, sizeof ins, "%s %s", x, v);
        for (int d = 0; d < k; d++)
            if (ix[d].kind == 0 && ix[d].dynamic)
                o += (size_t)snprintf(ins + o, sizeof ins - o, " (input i%d int64 ())", d);
        snprintf(xt, sizeof xt, mode == 1 ? "(add 1 %s)" : "%s", x);
        snprintf(vt, sizeof vt, "(mul 2 %s)", v);
        term_of(sub, sizeof sub, xt, k, ix);    /* (subtensor X IDX ...) made (inc_subtensor X V IDX ...) */
        char *idxs = sub + strlen("(subtensor ") + strlen(xt);
        snprintf(outs, sizeof outs, mode == 1 ? "(mul 3 (%s %s %s%s)" : "(%s %s %s%s",
                 inc ? "inc_subtensor" : "set_subtensor", xt, vt, idxs);
        if (mode == 1)
            strcat(outs, ")");
        unsigned char kept[5] = {0, 1, 1, 1, 1};
        tg_error err;
        tg_fn *fn = kt_compile(ctx, ins, outs, mode == 2 ? kept : NULL, kt_path, &err);
        if (!fn) {
            if (bad++ < 3)
                tap_diag("compile %s: %s", outs, err.message);
            continue;
        }
        kt_arr xa, va, x0;
        kt_make(&xa, dt, r, sh, mode != 2 && (rep & 1));
        kt_fill(&xa.a, -100, 100);
        kt_make(&x0, dt, r, sh, 0);
        kt_make(&va, dt, vr, vsh, rep & 2);
        kt_fill(&va.a, -100, 100);
        int64_t I[3] = {0}, J[3];
        if (kt_count(&xa.a))
            do
                kt_set(&x0.a, I, kt_get(&xa.a, I));
            while (kt_next(r, sh, I));
        tg_array in[5];
        int64_t ival[3];
        int nin = 0;
        in[nin++] = xa.a;
        in[nin++] = va.a;
        for (int d = 0; d < k; d++)
            if (ix[d].kind == 0 && ix[d].dynamic) {
                ival[d] = ix[d].i;
                tg_array_init(&in[nin++], TG_INT64, 0, NULL, &ival[d]);
            }
        /* the reference, in x0's copy: X (plus 1), then the part */
        kt_arr ref;
        kt_make(&ref, TG_FLOAT64, r, sh, 0);
        memset(I, 0, sizeof I);
        if (kt_count(&xa.a))
            do
                kt_set(&ref.a, I, kt_get(&x0.a, I) + (mode == 1));
            while (kt_next(r, sh, I));
        int64_t n = 1;
        for (int d = 0; d < rr; d++)
            n *= rsh[d];
        memset(I, 0, sizeof I);
        if (n > 0)
            do {
                int64_t vi[3];
                for (int d = 0, q = 0; d < r; d++)
                    J[d] = d < k && ix[d].kind == 0 ? pos[d][0] : pos[d][I[q++]];
                for (int d = 0; d < vr; d++)
                    vi[d] = vsh[d] == 1 ? 0 : I[rr - vr + d];
                double val = 2 * (double)kt_get(&va.a, vi), old = (double)kt_get(&ref.a, J);
                kt_set(&ref.a, J, inc ? old + val : val);
            } while (kt_next(rr, rsh, I));
        tg_array out = {0};
        cases++;
        if (tg_fn_call(fn, in, &out, &err) < 0) {
            if (bad++ < 3)
                tap_diag("call %s on %s: %s", outs, kt_shape(r, sh), err.message);
        } else if (out.ndim != r) {
            if (bad++ < 3)
                tap_diag("%s: rank %d, want %d", outs, out.ndim, r);
        } else {
            memset(I, 0, sizeof I);
            if (kt_count(&out))
                do {
                    long double want = (double)kt_get(&ref.a, I) * (mode == 1 ? 3 : 1);
                    elems++;
                    if (kt_get(&out, I) != want && bad++ < 3)
                        tap_diag("%s on %s: element %s is %Lg, want %Lg", outs, kt_shape(r, sh), kt_shape(r, I),
                                 kt_get(&out, I), want);
                } while (kt_next(r, sh, I));
            /* a kept X is left as it was */
            memset(I, 0, sizeof I);
            if (mode == 0 && kt_count(&xa.a))
                do
                    unchanged &= kt_get(&xa.a, I) == kt_get(&x0.a, I);
                while (kt_next(r, sh, I));
        }
        free(out.data);
        free(xa.block), free(va.block), free(x0.block), free(ref.block);
        tg_fn_free(fn);
    }
    static const char *const how[] = {"X kept, copied", "X computed, updated in its slot", "X given to overwrite"};
    TAP_CHECK(bad == 0 && unchanged, "inc_subtensor and set_subtensor on %s (%s): %d random cases, %d elements",
              dn[dt], how[mode], cases, elems);
}

/* The schedule of updates: a step of its own (update), in X's slot when
 * X dies there, (inplace x) for an input not kept; the gradient of a
 * subtensor an update step as well, compiled with the function. */
static void test_update_schedule(void)
{
    tg_error err;
    tg_fn *fn = kt_compile(ctx, "(input x float64 (n 4)) (input v float64 (4))",
                           "(sum (inc_subtensor (exp (input x float64 (n 4))) (input v float64 (4)) -1) all)", NULL,
                           kt_path, &err);
    char *s = fn ? tg_print(tg_fn_schedule(fn), NULL) : NULL;
    TAP_CHECK(s && strstr(s, "(update (%3 (inc_subtensor %2 v -1)) float64 (slot 0))") &&
                  strstr(s, "(%2 float64 (slot 0))") && strstr(s, "(slots 1)"),
              "schedule: the update writes in place of exp(x), its one slot (%s)", s ? s : err.message);
    free(s);
    tg_fn_free(fn);
    unsigned char kept[2] = {0, 1};
    fn = kt_compile(ctx, "(input x float64 (n 4)) (input v float64 (4))",
                    "(mul 2 (set_subtensor (input x float64 (n 4)) (input v float64 (4)) (slice 1 none 2)))", kept,
                    kt_path, &err);
    s = fn ? tg_print(tg_fn_schedule(fn), NULL) : NULL;
    TAP_CHECK(s && strstr(s, "(update (%2 (set_subtensor x v (slice 1 none 2))) float64 (slot 0) (inplace x))"),
              "schedule: an input not kept is overwritten by the update (%s)", s ? s : err.message);
    free(s);
    tg_fn_free(fn);
    fn = kt_compile(ctx, "(input x float64 (n m))",
                    "(grad (sum (sqr (subtensor (input x float64 (n m)) (slice none none -1) 2)) all)"
                    " (input x float64 (n m)))", NULL, kt_path, &err);
    s = fn ? tg_print(tg_fn_schedule(fn), NULL) : NULL;
    TAP_CHECK(s && strstr(s, "(update ") && strstr(s, "inc_subtensor") && !strstr(s, "(reduce") &&
                  tg_fn_native(fn) == !kt_path,
              "schedule: the gradient of a subtensor is an update step, compiled on the compiled path (%s)",
              s ? s : err.message);
    free(s);
    tg_fn_free(fn);
}

/* Count the steps of printed schedule s of kind ("(loop ", ...): each
 * step is " (KIND (" (an operation is "(%k (op"). */
static int count_steps(const char *s, const char *kind)
{
    char pat[40];
    int n = 0;
    snprintf(pat, sizeof pat, " %s(", kind);
    for (const char *p = s; p && (p = strstr(p, pat)); p++)
        n++;
    return n;
}

/* An update whose value is elementwise: V's loop fused into the update
 * (one step, V never stored), against the same update with V also an
 * output (two steps, V in a buffer); values against a hand-written loop,
 * with a row broadcast, strided inputs, a reversed slice, float32 and a
 * comparison's bool value; V reading X itself is not fused (the update
 * may write in X's memory while V reads it). */
static void test_update_fused(void)
{
    tg_error err;
    const char *ins = "(input x float64 (5 4)) (input a float64 (2 4)) (input b float64 (4))";
    const char *val = "(exp (mul (input a float64 (2 4)) (input b float64 (4))))";
    char outs[600];
    snprintf(outs, sizeof outs, "(inc_subtensor (input x float64 (5 4)) %s (slice -1 0 -2))", val);
    tg_fn *fn = kt_compile(ctx, ins, outs, NULL, kt_path, &err);
    char *s = fn ? tg_print(tg_fn_schedule(fn), NULL) : NULL;
    TAP_CHECK(s && count_steps(s, "(update ") == 1 && count_steps(s, "(loop ") == 0 && strstr(s, "(slots 0)") &&
                  strstr(s, "(inc_subtensor x %") && strstr(s, "(in a b) (ops"),
              "schedule: the value's loop fused into the update, one step, no buffer (%s)", s ? s : err.message);
    /* the values: x[4], x[2] += exp(a * b), a strided, b broadcast */
    kt_arr x, a, b;
    int64_t xs[2] = {5, 4}, as[2] = {2, 4}, bs = 4;
    kt_make(&x, TG_FLOAT64, 2, xs, 0), kt_make(&a, TG_FLOAT64, 2, as, 1), kt_make(&b, TG_FLOAT64, 1, &bs, 1);
    kt_fill(&x.a, -2, 2), kt_fill(&a.a, -1, 1), kt_fill(&b.a, -1, 1);
    tg_array in[3] = {x.a, a.a, b.a}, out = {0};
    int bad = !fn || tg_fn_call(fn, in, &out, &err) < 0;
    for (int64_t i = 0; !bad && i < 5; i++)
        for (int64_t j = 0; j < 4; j++) {
            int64_t I[2] = {i, j}, A[2] = {i == 4 ? 0 : 1, j};
            double want = (double)kt_get(&x.a, I);
            if (i == 4 || i == 2)
                want += exp((double)kt_get(&a.a, A) * (double)kt_get(&b.a, &j));
            bad += !(fabsl(kt_get(&out, I) - want) <= 1e-13L);    /* exp: libmvec's on the compiled path */
        }
    TAP_CHECK(!bad, "fused update: values as a hand-written loop (%s)", bad && !fn ? err.message : "");
    free(out.data);
    free(s);
    tg_fn_free(fn);
    /* V also an output: not fused, stored */
    char both[1200];
    snprintf(both, sizeof both, "%s %s", outs, val);
    fn = kt_compile(ctx, ins, both, NULL, kt_path, &err);
    s = fn ? tg_print(tg_fn_schedule(fn), NULL) : NULL;
    TAP_CHECK(s && count_steps(s, "(update ") == 1 && count_steps(s, "(loop ") == 1 &&
                  strstr(s, "(slice -1 0 -2))) float64 (output 0)) "),
              "schedule: a value read elsewhere stays a loop of its own (%s)", s ? s : err.message);
    free(s);
    tg_fn_free(fn);
    /* float32, set_subtensor of a comparison (bool into float32), over a
     * column: x[:, 1] = (a > b) with a and b of the part's shape */
    fn = kt_compile(ctx, "(input x float32 (n 3)) (input a float32 (n)) (input b float32 (n))",
                    "(set_subtensor (input x float32 (n 3)) (gt (input a float32 (n)) (input b float32 (n)))"
                    " (slice none none none) 1)", NULL, kt_path, &err);
    s = fn ? tg_print(tg_fn_schedule(fn), NULL) : NULL;
    int64_t n7[2] = {7, 3}, n1 = 7;
    kt_arr x3, a3, b3;
    kt_make(&x3, TG_FLOAT32, 2, n7, 1), kt_make(&a3, TG_FLOAT32, 1, &n1, 0), kt_make(&b3, TG_FLOAT32, 1, &n1, 1);
    kt_fill(&x3.a, -2, 2), kt_fill(&a3.a, -1, 1), kt_fill(&b3.a, -1, 1);
    tg_array in3[3] = {x3.a, a3.a, b3.a};
    memset(&out, 0, sizeof out);
    bad = !fn || tg_fn_call(fn, in3, &out, &err) < 0;
    for (int64_t i = 0; !bad && i < 7; i++)
        for (int64_t j = 0; j < 3; j++) {
            int64_t I[2] = {i, j};
            long double want = j == 1 ? (kt_get(&a3.a, &i) > kt_get(&b3.a, &i)) : kt_get(&x3.a, I);
            bad += kt_get(&out, I) != want;
        }
    TAP_CHECK(!bad && s && count_steps(s, "(loop ") == 0,
              "fused set_subtensor of a comparison, float32, over a column (%s)", s ? s : err.message);
    free(out.data), free(s);
    tg_fn_free(fn);
    /* V reads X, which the update overwrites in place: not fused, and
     * x[::-1] = exp(x) reads every x before writing */
    unsigned char kept[1] = {0};
    fn = kt_compile(ctx, "(input x float64 (6))",
                    "(set_subtensor (input x float64 (6)) (exp (input x float64 (6))) (slice none none -1))", kept,
                    kt_path, &err);
    s = fn ? tg_print(tg_fn_schedule(fn), NULL) : NULL;
    double xv[6] = {0.5, -1, 2, 0.25, -0.75, 1.5}, x0[6];
    memcpy(x0, xv, sizeof xv);
    int64_t six = 6;
    tg_array xin, xo = {0};
    tg_array_init(&xin, TG_FLOAT64, 1, &six, xv);
    bad = !fn || tg_fn_call(fn, &xin, &xo, &err) < 0;
    for (int64_t i = 0; !bad && i < 6; i++) {
        int64_t I[1] = {i};
        bad += !kt_close(kt_get(&xo, I), exp(x0[5 - i]), KT_ULPS);
    }
    TAP_CHECK(!bad && s && count_steps(s, "(loop ") == 1, "a value reading X is not fused: x[::-1] = exp(x) (%s)",
              s ? s : err.message);
    free(xo.data), free(s);
    tg_fn_free(fn);
    free(x.block), free(a.block), free(b.block), free(x3.block), free(a3.block), free(b3.block);
}

/* Evaluate outs over one float64 input given as values; the result's
 * elements as text "a b c" in C order. */
static const char *eval_text(const char *ins, const char *outs, int ndim, const int64_t *sh, double *vals)
{
    static char buf[700];
    tg_error err;
    tg_fn *fn = kt_compile(ctx, ins, outs, NULL, kt_path, &err);
    if (!fn) {
        snprintf(buf, sizeof buf, "compile error: %s", err.message);
        return buf;
    }
    tg_array x, out = {0};
    tg_array_init(&x, TG_FLOAT64, ndim, sh, vals);
    if (tg_fn_call(fn, &x, &out, &err) < 0) {
        snprintf(buf, sizeof buf, "call error: %s", err.message);
    } else {
        size_t o = 0;
        int64_t I[4] = {0};
        buf[0] = 0;
        if (kt_count(&out) > 0)
            do
                o += (size_t)snprintf(buf + o, sizeof buf - o, o ? " %g" : "%g", (double)kt_get(&out, I));
            while (kt_next(out.ndim, out.shape, I));
    }
    free(out.data);
    tg_fn_free(fn);
    return buf;
}

/* numpy's answers on small arrays, as numpy gives them. */
static void test_known(void)
{
    double v[6] = {0, 1, 2, 3, 4, 5};
    int64_t n5 = 5, m23[2] = {2, 3};
    const char *x = "(input x float64 (n))";
    static const struct { const char *expr, *want; } one[] = {
        {"(subtensor (input x float64 (n)) -1)", "4"},                          /* x[-1] */
        {"(subtensor (input x float64 (n)) (slice 1 none none))", "1 2 3 4"},  /* x[1:] */
        {"(subtensor (input x float64 (n)) (slice none none -1))", "4 3 2 1 0"}, /* x[::-1] */
        {"(subtensor (input x float64 (n)) (slice -2 none -2))", "3 1"},        /* x[-2::-2] */
        {"(subtensor (input x float64 (n)) (slice 10 none none))", ""},         /* x[10:] */
        {"(subtensor (input x float64 (n)) (slice none -10 -1))", "4 3 2 1 0"}, /* x[:-10:-1] */
        {"(subtensor (input x float64 (n)) (slice 1 -1 2))", "1 3"},            /* x[1:-1:2] */
        {"(subtensor (input x float64 (n)) (slice 3 1 none))", ""},             /* x[3:1] */
        {"(subtensor (input x float64 (n)))", "0 1 2 3 4"},                     /* x[()] */
    };
    for (size_t c = 0; c < sizeof one / sizeof *one; c++)
        TAP_EQ_STR(eval_text(x, one[c].expr, 1, &n5, v), one[c].want, one[c].expr);
    static const struct { const char *expr, *want; } two[] = {
        {"(subtensor (input x float64 (2 3)) -1)", "3 4 5"},                              /* X[-1] */
        {"(subtensor (input x float64 (2 3)) (slice none none none) 1)", "1 4"},           /* X[:, 1] */
        {"(subtensor (input x float64 (2 3)) (slice none none -1) (slice none none -2))", "5 3 2 0"},
        {"(subtensor (subtensor (input x float64 (2 3)) 1) (slice 1 none none))", "4 5"}, /* X[1][1:] */
        {"(sum (subtensor (input x float64 (2 3)) (slice none none none) 2) all)", "7"},
        {"(add (subtensor (input x float64 (2 3)) 0) (subtensor (input x float64 (2 3)) 1))", "3 5 7"},
    };
    for (size_t c = 0; c < sizeof two / sizeof *two; c++)
        TAP_EQ_STR(eval_text("(input x float64 (2 3))", two[c].expr, 2, m23, v), two[c].want, two[c].expr);
}

/* x[1:] - x[:-1] on a symbolic n: two derived sizes found equal at call
 * time; an input of a size that disagrees is a call-time error. */
static void test_derived_sizes(void)
{
    double v[6] = {1, 4, 9, 16, 25, 36};
    int64_t n = 6;
    TAP_EQ_STR(eval_text("(input x float64 (n))",
                         "(sub (subtensor (input x float64 (n)) (slice 1 none none))"
                         " (subtensor (input x float64 (n)) (slice none -1 none)))", 1, &n, v),
               "3 5 7 9 11", "x[1:] - x[:-1] on a symbolic size");
    tg_error err;
    tg_fn *fn = kt_compile(ctx, "(input x float64 (n)) (input y float64 (m))",
                           "(add (subtensor (input x float64 (n)) (slice 1 none 2)) (input y float64 (m)))",
                           NULL, kt_path, &err);
    TAP_CHECK(fn != NULL, "x[1::2] + y compiles (%s)", fn ? "" : err.message);
    if (!fn)
        return;
    double y[3] = {10, 20, 30};
    tg_array in[2], out = {0};
    tg_array_init(&in[0], TG_FLOAT64, 1, &n, v);
    int64_t m = 3;
    tg_array_init(&in[1], TG_FLOAT64, 1, &m, y);
    int ok = tg_fn_call(fn, in, &out, &err) == 0 && out.shape[0] == 3 && ((double *)out.data)[0] == 14 &&
             ((double *)out.data)[2] == 66;
    TAP_CHECK(ok, "x[1::2] + y with len(y) = 3 = len(x[1::2])");
    free(out.data);
    out.data = NULL;
    m = 2;
    tg_array_init(&in[1], TG_FLOAT64, 1, &m, y);
    TAP_CHECK(tg_fn_call(fn, in, &out, &err) < 0 && strstr(err.message, "(subtensor") &&
                  strstr(err.message, "3 elements where 2 are expected"),
              "x[1::2] + y with len(y) = 2: call-time error (%s)", err.message);
    tg_fn_free(fn);
}

static void compile_error(const char *ins, const char *outs, const char *want)
{
    tg_error err;
    tg_fn *fn = kt_compile(ctx, ins, outs, NULL, kt_path, &err);
    TAP_CHECK(!fn && strstr(err.message, want) && strstr(err.message, "(subtensor"),
              "compile error for %s: %s", outs, fn ? "none" : err.message);
    tg_fn_free(fn);
}

static void test_errors(void)
{
    const char *x = "(input x float64 (3 n))";
    compile_error(x, "(subtensor (input x float64 (3 n)) 3)", "index 3 is out of range for an axis of size 3");
    compile_error(x, "(subtensor (input x float64 (3 n)) -4)", "index -4 is out of range");
    compile_error(x, "(subtensor (input x float64 (3 n)) 0 0 0)", "3 indices for 2 axes");
    compile_error(x, "(subtensor (input x float64 (3 n)) (slice none none 0))", "step cannot be zero");
    compile_error(x, "(subtensor (input x float64 (3 n)) (slice 1 2))", "a slice is (slice START STOP STEP)");
    compile_error(x, "(subtensor (input x float64 (3 n)) (slice 1.5 none none))", "integer literal or none");
    compile_error(x, "(subtensor (input x float64 (3 n)) 1.0)", "an index is an integer");
    compile_error("(input x float64 (3 n)) (input i float64 ())",
                  "(subtensor (input x float64 (3 n)) (input i float64 ()))", "0-d int64 or int32");
    compile_error("(input x float64 (3 n)) (input i int64 (2))",
                  "(subtensor (input x float64 (3 n)) (input i int64 (2)))", "0-d int64 or int32");
    /* at call time: a literal index on a symbolic axis, a tensor index */
    tg_error err;
    tg_fn *fn = kt_compile(ctx, "(input x float64 (n)) (input i int32 ())",
                           "(subtensor (input x float64 (n)) (sub (input i int32 ()) 1))"
                           " (subtensor (input x float64 (n)) -3)", NULL, kt_path, &err);
    TAP_CHECK(fn != NULL, "tensor index compiles (%s)", fn ? "" : err.message);
    if (!fn)
        return;
    double v[4] = {5, 6, 7, 8};
    int64_t n = 4;
    int32_t i = 0;
    tg_array in[2], out[2] = {{0}, {0}};
    tg_array_init(&in[0], TG_FLOAT64, 1, &n, v);
    tg_array_init(&in[1], TG_INT32, 0, NULL, &i);
    int ok = 1;
    for (i = -3; i <= 4; i++) {     /* i - 1 from -4 to 3: all in range */
        double got = 0, got2 = 0;
        tg_array_init(&out[0], TG_FLOAT64, 0, NULL, &got);
        tg_array_init(&out[1], TG_FLOAT64, 0, NULL, &got2);
        ok &= tg_fn_call(fn, in, out, &err) == 0 && got == v[(i - 1 + 4) % 4] && got2 == 6;
    }
    TAP_CHECK(ok, "x[i - 1] for every i - 1 in -n .. n-1, and x[-3]");
    i = 5;
    TAP_CHECK(tg_fn_call(fn, in, out, &err) < 0 && strstr(err.message, "index 4 is out of range for axis 0 of size 4") &&
                  strstr(err.message, "(subtensor"),
              "x[i - 1] out of range: call-time error (%s)", err.message);
    i = 1, n = 2;
    tg_array_init(&in[0], TG_FLOAT64, 1, &n, v);
    TAP_CHECK(tg_fn_call(fn, in, out, &err) < 0 && strstr(err.message, "index -3 is out of range"),
              "x[-3] on 2 elements: call-time error (%s)", err.message);
    tg_fn_free(fn);
}

/* A subtensor is a view: a view step, no slot, and the fused loop reads
 * through its strides. */
static void test_schedule(void)
{
    tg_error err;
    tg_fn *fn = kt_compile(ctx, "(input x float64 (n m))",
                           "(exp (subtensor (input x float64 (n m)) (slice none none -1) 1))", NULL, kt_path, &err);
    TAP_CHECK(fn != NULL, "schedule: compiled (%s)", fn ? "" : err.message);
    if (!fn)
        return;
    char *s = tg_print(tg_fn_schedule(fn), NULL);
    TAP_CHECK(s && strstr(s, "(view (%1 (subtensor x (slice none none -1) 1)) float64)") &&
                  strstr(s, "(loop (n) (in %1)") && strstr(s, "(slots 0)"),
              "schedule: the subtensor is a view read by the loop, no slot (%s)", s ? s : "?");
    free(s);
    tg_fn_free(fn);
}

/* Vector cases of dot (BLAS dot / gemv) fed by views: positive strides
 * that BLAS takes as increments, transposed matrices on either side, a
 * strided result; against long double. */
static void test_dot_views(tg_dtype dt)
{
    static const char *const dn[] = {"bool", "int32", "int64", "float32", "float64"};
    const char *d = dn[dt];
    char ins[300], outs[4][300];
    snprintf(ins, sizeof ins, "(input v %s (n)) (input w %s (n)) (input a %s (m c))", d, d, d);
    /* v[::2] . w[::2];  a . v[::2];  v[::2] . a^T (a^T is column-major);  a^T . w[1::2] on a (m c) = ... */
    snprintf(outs[0], sizeof outs[0], "(dot (subtensor (input v %s (n)) (slice none none 2)) (subtensor (input w %s (n)) (slice none none 2)))", d, d);
    snprintf(outs[1], sizeof outs[1], "(dot (input a %s (m c)) (subtensor (input v %s (n)) (slice none none 2)))", d, d);
    snprintf(outs[2], sizeof outs[2], "(dot (subtensor (input w %s (n)) (slice none none 2)) (transpose (input a %s (m c))))", d, d);
    snprintf(outs[3], sizeof outs[3], "(dot (transpose (input a %s (m c))) (subtensor (input w %s (n)) (slice none none -3)))", d, d);
    int bad = 0, cases = 0;
    for (int rep = 0; rep < 24; rep++) {
        int64_t n = (int64_t)(kt_rand() % 12), m = (int64_t)(kt_rand() % 5), c = (n + 1) / 2;
        int which = rep % 4;
        if (which == 3) {   /* a^T . w[::-3]: a has (n + 2) / 3 rows, m columns */
            c = m, m = (n + 2) / 3;
        }
        int64_t sa[2] = {m, c};
        tg_error err;
        tg_fn *fn = kt_compile(ctx, ins, outs[which], NULL, kt_path, &err);
        if (!fn) {
            if (bad++ < 3)
                tap_diag("compile %s: %s", outs[which], err.message);
            continue;
        }
        kt_arr v, w, a;
        kt_make(&v, dt, 1, &n, 0), kt_make(&w, dt, 1, &n, 0), kt_make(&a, dt, 2, sa, rep & 4);
        kt_fill(&v.a, -2, 2), kt_fill(&w.a, -2, 2), kt_fill(&a.a, -2, 2);
        int64_t len = which == 0 ? 0 : which == 1 ? m : which == 2 ? m : c;
        /* the result: 0-d, or a vector written every other element */
        double store[32] = {0};
        tg_array out;
        tg_array_init(&out, dt, which ? 1 : 0, &len, store);
        if (which)
            out.strides[0] *= 2;
        tg_array in[3] = {v.a, w.a, a.a};
        cases++;
        if (tg_fn_call(fn, in, &out, &err) < 0) {
            if (bad++ < 3)
                tap_diag("call %s (n %lld m %lld c %lld): %s", outs[which], (long long)n, (long long)m, (long long)c,
                         err.message);
        } else {
            int64_t nr = which ? len : 1;
            for (int64_t i = 0; i < nr; i++) {
                long double sum = 0, mag = 0;
                int64_t kk = which == 0 ? (n + 1) / 2 : which == 3 ? m : c;
                for (int64_t p = 0; p < kk; p++) {
                    int64_t iv[1], ia[2];
                    long double l, r;
                    if (which == 0) {
                        iv[0] = 2 * p, l = kt_get(&v.a, iv), r = kt_get(&w.a, iv);
                    } else if (which == 1) {
                        ia[0] = i, ia[1] = p, iv[0] = 2 * p, l = kt_get(&a.a, ia), r = kt_get(&v.a, iv);
                    } else if (which == 2) {
                        ia[0] = i, ia[1] = p, iv[0] = 2 * p, l = kt_get(&w.a, iv), r = kt_get(&a.a, ia);
                    } else {
                        ia[0] = p, ia[1] = i, iv[0] = n - 1 - 3 * p, l = kt_get(&a.a, ia), r = kt_get(&w.a, iv);
                    }
                    sum += l * r, mag += fabsl(l * r);
                }
                int64_t io[1] = {i};
                long double got = kt_get(&out, io);
                long double tol = (dt == TG_FLOAT64 ? 1e-14L : 1e-5L) * (mag + 1e-30L);
                if (fabsl(got - sum) > tol && bad++ < 3)
                    tap_diag("%s (n %lld): element %lld is %Lg, want %Lg", outs[which], (long long)n, (long long)i, got, sum);
            }
            for (int64_t i = 0; which && i < len; i++)   /* the elements between are left alone */
                bad += memcmp((char *)store + (2 * i + 1) * kt_esize(dt), "\0\0\0\0\0\0\0\0", kt_esize(dt)) != 0;
        }
        free(v.block), free(w.block), free(a.block);
        tg_fn_free(fn);
    }
    TAP_CHECK(bad == 0, "dot of views on %s (vector . vector, matrix . vector, vector . matrix^T, matrix^T . "
              "vector, strided result): %d cases", d, cases);
}

/* The rule library's canonicalize drops full slices before lowering: no
 * view is left of (subtensor x (slice 0 none 1)), and x[1:][::1] keeps
 * one view; both compute what the unrewritten terms do. */
static void test_with_rules(void)
{
    tg_error err;
    tg_rules *rs = tg_rules_new(ctx, &err);
    int ok = rs && tg_rules_load_file(rs, tap_path("patterns/lib/all.rules"), &err) == 0;
    TAP_CHECK(ok, "load all.rules (%s)", ok ? "" : err.message);
    if (!ok) {
        tg_rules_free(rs);
        return;
    }
    static const struct { const char *expr, *want; int views; } cases[] = {
        {"(exp (subtensor (input x float64 (n)) (slice 0 none 1)))", "1 2.71828 7.38906 20.0855", 0},
        {"(subtensor (subtensor (input x float64 (n)) (slice 1 none none)) (slice none none 1))", "1 2 3", 1},
        {"(subtensor (input x float64 (n)) (slice none none none))", "0 1 2 3", 0},
    };
    double v[4] = {0, 1, 2, 3};
    int64_t n = 4;
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        tg_term *x = tg_read_cstr(ctx, "(input x float64 (n))", &err), *e = tg_read_cstr(ctx, cases[c].expr, &err);
        tg_fn_options o = {.interpret = kt_path, .rules = rs, .rewrite = tg_symbol_cstr(ctx, "canonicalize")};
        tg_fn *fn = tg_fn_compile(ctx, 1, &x, 1, &e, &o, &err);
        char *sched = fn ? tg_print(tg_fn_schedule(fn), NULL) : NULL;
        int views = 0;
        for (const char *p = sched; p && (p = strstr(p, "(view ")); p++)
            views++;
        tg_array in, out = {0};
        tg_array_init(&in, TG_FLOAT64, 1, &n, v);
        char got[200] = "";
        if (fn && tg_fn_call(fn, &in, &out, &err) == 0) {
            size_t off = 0;
            int64_t I[1] = {0};
            for (I[0] = 0; I[0] < out.shape[0]; I[0]++)
                off += (size_t)snprintf(got + off, sizeof got - off, off ? " %g" : "%g", (double)kt_get(&out, I));
        }
        TAP_CHECK(fn && views == cases[c].views && strcmp(got, cases[c].want) == 0,
                  "with canonicalize: %s has %d views (want %d), gives %s", cases[c].expr, views, cases[c].views, got);
        free(sched);
        free(out.data);
        tg_fn_free(fn);
    }
    tg_rules_free(rs);
}

/* An output that is a reversed view of an intermediate, allocated by
 * the call: a fresh C-ordered array every time (the view's negative
 * strides of the call before once wrote outside the new block). */
static void test_view_output_allocated(void)
{
    tg_error err;
    tg_fn *fn = kt_compile(ctx, "(input y float64 (3 3))",
                           "(subtensor (sub (input y float64 (3 3)) 0.5) (slice none none -1))", NULL, kt_path, &err);
    double y[9];
    for (int i = 0; i < 9; i++)
        y[i] = i;
    int64_t sh[2] = {3, 3};
    int ok = fn != NULL;
    for (int call = 0; ok && call < 3; call++) {
        tg_array in, out;
        memset(&out, 0, sizeof out);
        tg_array_init(&in, TG_FLOAT64, 2, sh, y);
        ok = tg_fn_call(fn, &in, &out, &err) == 0 && out.strides[0] == 3 * 8 && out.strides[1] == 8;
        for (int r = 0; ok && r < 3; r++)
            for (int c = 0; ok && c < 3; c++)
                ok = ((double *)out.data)[3 * r + c] == y[3 * (2 - r) + c] - 0.5;
        free(out.data);
    }
    TAP_CHECK(ok, "a reversed view of an intermediate as an allocated output: C order, right, 3 calls");
    tg_fn_free(fn);
}

int main(void)
{
    tg_error err;
    ctx = tg_ctx_new(&err);
    KT_EACH_PATH {
        test_known();
        for (int w = 0; w < 3; w++)
            test_random(TG_FLOAT64, w);
        test_random(TG_INT32, 1);
        test_derived_sizes();
        test_view_output_allocated();
        test_errors();
        test_schedule();
        for (int mode = 0; mode < 3; mode++) {
            test_update_random(TG_FLOAT64, mode);
            test_update_random(TG_INT32, mode);
        }
        test_update_schedule();
        test_update_fused();
        test_dot_views(TG_FLOAT64);
        test_dot_views(TG_FLOAT32);
        test_with_rules();
    }
    tg_ctx_free(ctx);
    return TAP_DONE();
}
