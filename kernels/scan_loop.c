/* scan_loop.c - the compiled loop of a scan (module prefix tgSc_,
 * scan_int.h): whether a scan's step compiles to one generated C
 * function, its source (the step's blocks: loops, reductions, dots, rank-one
 * updates; the carried 0-d values in locals; the interrupt flag polled
 * between blocks of steps), finding it in the shared object, and running
 * it over the tables of pointers and strides it reads.  See doc/scan.md. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dlfcn.h>

#include "blas.h"
#include "buf.h"
#include "scan_dot.h"
#include "scan_int.h"

/* The generated function's tables (doc/scan.md): P holds pointers: the
 * sequences' row 0, per output its INIT and its storage, the
 * non-sequences, the inner slots, the until condition; R holds the
 * sequences' row strides, per output INIT's row stride, the storage's row
 * stride and its row mask (-1: a full buffer; a ring: rows - 1). */
static int p_init(const tgSc_scan *sc, int o) { return sc->nseq + 2 * o; }
static int p_store(const tgSc_scan *sc, int o) { return sc->nseq + 2 * o + 1; }
static int p_non(const tgSc_scan *sc, int i) { return sc->nseq + 2 * sc->nout + i; }
static int p_slot(const tgSc_scan *sc, int k) { return sc->nseq + 2 * sc->nout + sc->nnon + k; }
static int p_cond(const tgSc_scan *sc) { return p_slot(sc, sc->is->nslots); }
/* the interrupt flag (tg_fn_interrupt), polled every POLL_STEPS steps */
static int p_intr(const tgSc_scan *sc) { return p_cond(sc) + 1; }
#define POLL_STEPS 1024
static int p_scr(const tgSc_scan *sc, int r) { return p_intr(sc) + 1 + r; }
static int r_rowb(const tgSc_scan *sc, int r) { return sc->nseq + 3 * sc->nout + r; }
static int r_init(const tgSc_scan *sc, int o) { return sc->nseq + 3 * o; }
static int r_store(const tgSc_scan *sc, int o) { return sc->nseq + 3 * o + 1; }
static int r_mask(const tgSc_scan *sc, int o) { return sc->nseq + 3 * o + 2; }

static bool is_one(const tgV_node *n)
{
    for (int d = 0; d < n->ndim; d++)
        if (n->shape[d] != 1)
            return false;
    return true;
}

static bool same_shape(const tgV_node *a, const tgV_node *b)
{
    return a->ndim == b->ndim && memcmp(a->shape, b->shape, (size_t)a->ndim * sizeof *a->shape) == 0;
}

/* Which result (or nres for the until condition) inner node v is, or -1. */
static int out_of(const tgSc_scan *sc, int v)
{
    int o = sc->is->output[v];
    return o >= 0 && sc->ig->outputs[o] == v ? o : -1;
}

/* May node v be read or written by the generated code? */
static bool operand_ok(const tgSc_scan *sc, int v)
{
    const tgV_node *n = &sc->ig->nodes[v];
    return n->op == TGV_INPUT || sc->is->slot[v] >= 0 || out_of(sc, v) >= 0;
}

/* Reductions of float64 or int64 to their own dtype compile; max and min
 * only over axes of a static non-zero size (an empty one is a call-time
 * error, which the generated loop cannot give). */
static bool reduce_ok(const tgSc_scan *sc, const tgV_node *n)
{
    if (n->op < TGV_SUM || n->op > TGV_MEAN)   /* a step of index.c or arrange.c */
        return false;
    const tgV_node *x = &sc->ig->nodes[n->args[0]];
    if ((x->dtype != TG_FLOAT64 && x->dtype != TG_INT64) || n->dtype != x->dtype || x->op == TGV_CONST ||
        x->ndim == 0 ||
        !operand_ok(sc, n->args[0]) || !operand_ok(sc, (int)(n - sc->ig->nodes)))
        return false;
    if (n->op == TGV_MAX || n->op == TGV_MIN)
        for (int d = 0; d < x->ndim; d++)
            if ((n->axes & (1u << d)) && x->shape[d] <= 0)
                return false;
    return true;
}

/* The parameter result r is, when it is one that the generated loop
 * copies (a row to a stacked output: the trace a gradient reads), else -1. */
static int param_result(const tgSc_scan *sc, int r)
{
    const tgV_node *n = &sc->ig->nodes[sc->ig->outputs[r]];
    if (r >= sc->nres || n->op != TGV_INPUT || sc->outs[sc->rout[r]].kind != TGSC_NITSOT)
        return -1;
    return n->input;
}

/* A GEMM step of two vectors (a rank-one update, C + u v^T) of floats,
 * C of the result's shape, compiles. */
static bool ger_ok(const tgSc_scan *sc, int v)
{
    const tgV_node *n = &sc->ig->nodes[v];
    if (n->nargs != 3 || !tgV_is_float(n->dtype))
        return false;
    for (int i = 0; i < 3; i++) {
        const tgV_node *a = &sc->ig->nodes[n->args[i]];
        if (a->dtype != n->dtype || a->op == TGV_CONST || a->ndim != (i < 2 ? 1 : 2) || !operand_ok(sc, n->args[i]))
            return false;
    }
    return same_shape(&sc->ig->nodes[n->args[2]], n) && operand_ok(sc, v);
}

bool tgSc_compiles(const tgH_sched *s, int k)
{
    const tgSc_scan *sc = s->g->nodes[s->steps[k].node].scan;
    const tgH_sched *is = sc->is;
    const tgV_graph *ig = is->g;
    for (int j = 0; j < is->nsteps; j++) {
        const tgH_step *st = &is->steps[j];
        const tgV_node *n = &ig->nodes[st->node];
        if (st->kind == TGH_LOOP) {
            if (!tgJ_compiles(st))
                return false;
            for (int q = 0; q < st->nins + st->nouts; q++) {
                int v = q < st->nins ? st->ins[q] : st->outs[q - st->nins];
                const tgV_node *a = &ig->nodes[v];
                if (a->op == TGV_CONST && q < st->nins)
                    continue;
                if (!operand_ok(sc, v) || (!same_shape(a, n) && !is_one(a)))
                    return false;
            }
        } else if (st->kind == TGH_REDUCE) {
            if (!reduce_ok(sc, n))
                return false;
        } else if (st->kind == TGH_DOT) {
            const tgV_node *a = &ig->nodes[n->args[0]], *b = &ig->nodes[n->args[1]];
            if (!tgV_is_float(n->dtype) || a->dtype != n->dtype || b->dtype != n->dtype ||
                !operand_ok(sc, n->args[0]) || !operand_ok(sc, n->args[1]) || !operand_ok(sc, st->node) ||
                a->op == TGV_CONST || b->op == TGV_CONST)
                return false;
        } else if (st->kind != TGH_GEMM || !ger_ok(sc, st->node)) {
            return false;
        }
    }
    /* every result is computed by a step and lands where it belongs */
    for (int i = 0; i < ig->noutputs; i++) {
        int v = ig->outputs[i];
        if (param_result(sc, i) >= 0)
            continue;
        if (is->output[v] != i || ig->nodes[v].op == TGV_INPUT || ig->nodes[v].op == TGV_CONST)
            return false;
    }
    return true;
}

/* A size as a C expression. */
static void put_size(tgB_buf *b, tgV_size s)
{
    if (s >= 0)
        tgB_printf(b, "(int64_t)%lld", (long long)s);
    else
        tgB_printf(b, "z[%lld]", (long long)(-s - 1));
}

static void put_count(tgB_buf *b, const tgV_node *n)
{
    tgB_puts(b, "(int64_t)1");
    for (int d = 0; d < n->ndim; d++) {
        tgB_puts(b, " * ");
        put_size(b, n->shape[d]);
    }
}

static const char *ctype_of(tg_dtype d)
{
    static const char *const t[] = {"unsigned char", "int32_t", "int64_t", "float", "double"};
    return t[d];
}

/* 0-d recurrent outputs keep their last values in locals h<o>_<d>
 * (not a MITMOT: its buffer is read ahead of the step). */
static bool carried(const tgSc_scan *sc, int o)
{
    int k = sc->outs[o].kind;
    return k != TGSC_NITSOT && k != TGSC_MITMOT && sc->ig->nodes[sc->res[sc->outs[o].r0]].ndim == 0;
}

/* The output of result r when it is carried in a local, else -1. */
static int carried_res(const tgSc_scan *sc, int r)
{
    return r >= 0 && r < sc->nres && carried(sc, sc->rout[r]) ? sc->rout[r] : -1;
}

/* The pointer to node v's data in this step, as a C expression. */
static void put_ptr(tgB_buf *b, const tgSc_scan *sc, int v)
{
    const tgV_node *n = &sc->ig->nodes[v];
    int o = out_of(sc, v);
    if (n->op == TGV_INPUT)     /* a parameter that is also a result is copied after the step */
        tgB_printf(b, "p%d", n->input);
    else if (o >= 0 && o < sc->nres)
        tgB_printf(b, "d%d", o);
    else if (o == sc->nres)
        tgB_printf(b, "P[%d]", p_cond(sc));
    else
        tgB_printf(b, "P[%d]", p_slot(sc, sc->is->slot[v]));
}

/* A value as put_body would load it: double for floats, int64_t else. */
static void put_load(tgB_buf *b, tg_dtype d, const char *ptr)
{
    if (d == TG_BOOL)
        tgB_printf(b, "(int64_t)(*(unsigned char *)(%s) != 0)", ptr);
    else
        tgB_printf(b, "(%s)*(%s *)(%s)", tgV_is_float(d) ? "double" : "int64_t", ctype_of(d), ptr);
}

static void put_loop_block(tgB_buf *b, const tgSc_scan *sc, const tgH_step *st)
{
    const tgV_graph *ig = sc->ig;
    const tgV_node *n = &ig->nodes[st->node];
    tgB_puts(b, "    {\n");
    for (int q = 0; q < st->nins + st->nouts; q++) {
        int v = q < st->nins ? st->ins[q] : st->outs[q - st->nins];
        const tgV_node *a = &ig->nodes[v];
        int dist, o;
        if (a->op == TGV_CONST && q < st->nins)
            continue;
        if (a->op == TGV_INPUT && (o = tgSc_tap_of(sc, a->input, &dist)) >= 0 && carried(sc, o)) {
            tgB_printf(b, "#define A_%d(T) h%d_%d\n", q, o, dist);
            continue;
        }
        tgB_printf(b, "     char *b%d = ", q);
        put_ptr(b, sc, v);
        tgB_puts(b, ";\n");
        if (is_one(a))
            tgB_printf(b, "#define A_%d(T) (*(T *)b%d)\n", q, q);
        else
            tgB_printf(b, "#define A_%d(T) (((T *)b%d)[i])\n", q, q);
    }
    tgB_puts(b, "#define A(k, T) A_##k(T)\n");
    if (is_one(n)) {
        tgB_puts(b, "     {\n      const int64_t i = 0;\n      (void)i;\n");
    } else {
        tgB_puts(b, "     const int64_t total = ");
        put_count(b, n);
        tgB_puts(b, ";\n     #pragma omp simd\n     for (int64_t i = 0; i < total; i++) {\n");
    }
    tgJ_put_body(b, sc->is, st);
    for (int q = 0; q < st->nouts; q++) {
        int v = st->outs[q], o = carried_res(sc, out_of(sc, v));
        if (o >= 0) {
            bool cmp = ig->nodes[v].op >= TGV_LT && ig->nodes[v].op <= TGV_NEQ;
            if (ig->nodes[v].dtype == TG_BOOL)
                tgB_printf(b, "      x%d = (int64_t)(%c%d != 0);\n", o, cmp ? 'c' : 'v', v);
            else
                tgB_printf(b, "      x%d = %c%d;\n", o, cmp ? 'c' : 'v', v);
        }
    }
    tgB_puts(b, "     }\n#undef A\n");
    for (int q = 0; q < st->nins + st->nouts; q++) {
        int v = q < st->nins ? st->ins[q] : st->outs[q - st->nins];
        if (!(ig->nodes[v].op == TGV_CONST && q < st->nins))
            tgB_printf(b, "#undef A_%d\n", q);
    }
    tgB_puts(b, "    }\n");
}

/* A block's opening, "    {", and its pointers "char *NAME = ...;" to
 * nodes v[0..n). */
static void put_ptrs(tgB_buf *b, const tgSc_scan *sc, int n, const char *const *name, const int *v)
{
    tgB_puts(b, "    {\n     char *");
    for (int i = 0; i < n; i++) {
        tgB_printf(b, i ? ", *%s = " : "%s = ", name[i]);
        put_ptr(b, sc, v[i]);
    }
    tgB_puts(b, ";\n");
}

static void put_dot_block(tgB_buf *b, const tgSc_scan *sc, const tgH_step *st)
{
    const tgV_graph *ig = sc->ig;
    const tgV_node *n = &ig->nodes[st->node];
    const tgV_node *A = &ig->nodes[n->args[0]], *B = &ig->nodes[n->args[1]];
    bool f64 = n->dtype == TG_FLOAT64;
    const char *T = f64 ? "double" : "float";
    put_ptrs(b, sc, 3, (const char *const[]){"a", "bb", "c"}, (const int[]){n->args[0], n->args[1], st->node});
    tgB_puts(b, "     int64_t m = ");
    put_size(b, A->ndim == 2 ? A->shape[0] : 1);
    tgB_puts(b, ", k = ");
    put_size(b, A->shape[A->ndim - 1]);
    tgB_puts(b, ", nn = ");
    put_size(b, B->ndim == 2 ? B->shape[1] : 1);
    tgB_puts(b, ";\n     (void)m, (void)nn;\n");
    tgSd_put_inline(b, A->ndim, B->ndim, T);     /* small: inline, else BLAS */
    if (A->ndim == 2 && B->ndim == 1)
        tgB_printf(b, "     ((tgk_gemv_%s)fp[%d])(101, 111, (int)m, (int)k, 1, (const %s *)a, (int)(k > 1 ? k : 1),"
                      " (const %s *)bb, 1, 0, (%s *)c, 1);\n", T, f64 ? 0 : 1, T, T, T);
    else if (A->ndim == 1 && B->ndim == 2)
        tgB_printf(b, "     ((tgk_gemv_%s)fp[%d])(101, 112, (int)k, (int)nn, 1, (const %s *)bb, (int)(nn > 1 ? nn : 1),"
                      " (const %s *)a, 1, 0, (%s *)c, 1);\n", T, f64 ? 0 : 1, T, T, T);
    else if (A->ndim == 2)
        tgB_printf(b, "     ((tgk_gemm_%s)fp[%d])(101, 111, 111, (int)m, (int)nn, (int)k, 1, (const %s *)a,"
                      " (int)(k > 1 ? k : 1), (const %s *)bb, (int)(nn > 1 ? nn : 1), 0, (%s *)c,"
                      " (int)(nn > 1 ? nn : 1));\n", T, f64 ? 2 : 3, T, T, T);
    else
        tgB_printf(b, "     *(%s *)c = ((tgk_dot_%s)fp[%d])((int)k, (const %s *)a, 1, (const %s *)bb, 1);\n", T, T,
                   f64 ? 4 : 5, T, T);
    int o = carried_res(sc, out_of(sc, st->node));
    if (o >= 0)
        tgB_printf(b, "     x%d = *(%s *)c;\n", o, T);
    tgB_puts(b, "    }\n");
}

/* C + u v^T (ger_ok): C copied into the result unless it is there, then
 * the update, inline or BLAS ger (tgSd_put_ger). */
static void put_ger_block(tgB_buf *b, const tgSc_scan *sc, const tgH_step *st)
{
    const tgV_node *n = &sc->ig->nodes[st->node];
    bool f64 = n->dtype == TG_FLOAT64;
    put_ptrs(b, sc, 4, (const char *const[]){"u", "vv", "cin", "c"},
             (const int[]){n->args[0], n->args[1], n->args[2], st->node});
    tgB_puts(b, "     int64_t m = ");
    put_size(b, n->shape[0]);
    tgB_puts(b, ", nn = ");
    put_size(b, n->shape[1]);
    tgB_printf(b, ";\n     if (c != cin)\n      __builtin_memcpy(c, cin, (unsigned long)(m * nn) * sizeof(%s));\n",
               f64 ? "double" : "float");
    tgSd_put_ger(b, f64 ? "double" : "float", f64 ? 6 : 7);
    tgB_puts(b, "    }\n");
}

static int inner_loops(const tgSc_scan *sc)
{
    int n = 0;
    for (int j = 0; j < sc->is->nsteps; j++)
        n += tgJ_compiles(&sc->is->steps[j]);
    return n;
}

bool tgSc_has_code(const tgH_sched *s, int k)
{
    return tgSc_compiles(s, k) || inner_loops(s->g->nodes[s->steps[k].node].scan) > 0;
}

/* The inner loops under names of their own: tgk_sK_loopJ. */
static void put_inner_loops(tgB_buf *b, const tgSc_scan *sc, int k)
{
    const tgH_sched *is = sc->is;
    for (int j = 0; j < is->nsteps; j++)
        if (tgJ_compiles(&is->steps[j]))
            tgB_printf(b, "#define tgk_range%d tgk_s%d_range%d\n#define tgk_loop%d tgk_s%d_loop%d\n", j, k, j, j, k, j);
    tgJ_put_loops(b, is);
    for (int j = 0; j < is->nsteps; j++)
        if (tgJ_compiles(&is->steps[j]))
            tgB_printf(b, "#undef tgk_range%d\n#undef tgk_loop%d\n", j, j);
}

int tgSc_attach(const tgH_sched *s, int k, tgSc_state *ss, void *so, tgJ_loop_fn *kern, char *msg, size_t msglen)
{
    const tgSc_scan *sc = s->g->nodes[s->steps[k].node].scan;
    char name[60];
    *kern = NULL;
    if (tgSc_compiles(s, k)) {
        snprintf(name, sizeof name, "tgk_scan%d", k);
        void *f = dlsym(so, name);
        if (!f)
            return snprintf(msg, msglen, "kernels: %s missing from the compiled code", name), -1;
        memcpy(kern, &f, sizeof f);     /* object to function pointer */
    }
    const tgH_sched *is = sc->is;
    if (!inner_loops(sc))
        return 0;
    free(ss->in.kern);
    if (!(ss->in.kern = calloc((size_t)is->nsteps, sizeof *ss->in.kern)))
        return snprintf(msg, msglen, "kernels: out of memory"), -1;
    for (int j = 0; j < is->nsteps; j++)
        if (tgJ_compiles(&is->steps[j])) {
            snprintf(name, sizeof name, "tgk_s%d_loop%d", k, j);
            void *f = dlsym(so, name);
            if (!f)
                return snprintf(msg, msglen, "kernels: %s missing from the compiled code", name), -1;
            memcpy(&ss->in.kern[j], &f, sizeof f);
        }
    return 0;
}

/* "a OP v" for reduction n. */
static void put_red_expr(tgB_buf *b, const tgV_node *n, bool fl)
{
    switch (n->op) {
    case TGV_PROD: tgB_puts(b, fl ? "a * v" : "TGK_MUL(a, v)"); break;
    case TGV_MAX: tgB_puts(b, fl ? "a != a ? a : (v != v || v > a) ? v : a" : "v > a ? v : a"); break;
    case TGV_MIN: tgB_puts(b, fl ? "a != a ? a : (v != v || v < a) ? v : a" : "v < a ? v : a"); break;
    default: tgB_puts(b, fl ? "a + v" : "TGK_ADD(a, v)"); break;
    }
}

/* A reduction as nested loops over x in C order (the interpreter's
 * order, so float sums give the same bits), accumulating in the result;
 * one to a single value in blocks of TGJ_RED_BLOCK, as the interpreter
 * (codegen.h). */
static void put_reduce_block(tgB_buf *b, const tgSc_scan *sc, const tgH_step *st)
{
    const tgV_graph *ig = sc->ig;
    const tgV_node *n = &ig->nodes[st->node], *x = &ig->nodes[n->args[0]];
    bool fl = x->dtype == TG_FLOAT64;
    const char *T = fl ? "double" : "int64_t";
    put_ptrs(b, sc, 2, (const char *const[]){"xp", "yp"}, (const int[]){n->args[0], st->node});
    tgB_printf(b, "     %s *y = (%s *)yp;\n     const %s *xv = (const %s *)xp;\n", T, T, T, T);
    tgB_puts(b, "     int64_t ot = ");
    put_count(b, n);
    const char *init = n->op == TGV_PROD ? "1"
                     : n->op == TGV_MAX ? (fl ? "-INFINITY" : "INT64_MIN")
                     : n->op == TGV_MIN ? (fl ? "INFINITY" : "INT64_MAX") : "0";
    tgB_printf(b, ";\n     for (int64_t o = 0; o < ot; o++) y[o] = %s;\n     int64_t f = 0, run = 1, cnt = 1;\n"
                  "     (void)cnt;\n", init);
    for (int d = x->ndim - 1; d >= 0; d--) {
        tgB_printf(b, "     const int64_t s%d = ", d);
        put_size(b, x->shape[d]);
        if (n->axes & (1u << d))
            tgB_printf(b, ", o%d = 0;\n     cnt *= s%d;\n", d, d);
        else
            tgB_printf(b, ", o%d = run;\n     run *= s%d;\n", d, d);
    }
    tgB_printf(b, "     (void)run;\n     {\n      %s acc = y[0], part = %s;\n      int64_t left = %lld;\n"
                  "      (void)acc, (void)part, (void)left;\n", T, init, (long long)TGJ_RED_BLOCK);
    for (int d = 0; d < x->ndim; d++)
        tgB_printf(b, "      for (int64_t i%d = 0; i%d < s%d; i%d++)\n", d, d, d, d);
    tgB_puts(b, "      {\n       int64_t at = 0");
    for (int d = 0; d < x->ndim; d++)
        tgB_printf(b, " + i%d * o%d", d, d);
    /* a 0-d result accumulates in locals: no store per element */
    if (n->ndim == 0)
        tgB_printf(b, ";\n       (void)at;\n       %s v = xv[f++], a = part;\n       part = ", T);
    else
        tgB_printf(b, ";\n       %s v = xv[f++], a = y[at];\n       y[at] = ", T);
    put_red_expr(b, n, fl);
    tgB_puts(b, ";\n");
    if (n->ndim == 0) {
        tgB_puts(b, "       if (--left == 0) {\n        a = acc, v = part;\n        acc = ");
        put_red_expr(b, n, fl);
        tgB_printf(b, ";\n        part = %s, left = %lld;\n       }\n", init, (long long)TGJ_RED_BLOCK);
    }
    tgB_puts(b, "      }\n");
    if (n->ndim == 0) {
        tgB_printf(b, "      if (left < %lld) {\n       %s a = acc, v = part;\n       acc = ", (long long)TGJ_RED_BLOCK, T);
        put_red_expr(b, n, fl);
        tgB_puts(b, ";\n      }\n      y[0] = acc;\n");
    }
    tgB_puts(b, "     }\n");
    if (n->op == TGV_MEAN)
        tgB_puts(b, "     for (int64_t o = 0; o < ot; o++) y[o] /= (double)cnt;\n");
    int o = carried_res(sc, out_of(sc, st->node));
    if (o >= 0)
        tgB_printf(b, "     x%d = y[0];\n", o);
    tgB_puts(b, "    }\n");
}

void tgSc_source(tgB_buf *b, const tgH_sched *s, int k)
{
    const tgSc_scan *sc = s->g->nodes[s->steps[k].node].scan;
    const tgV_graph *ig = sc->ig;
    put_inner_loops(b, sc, k);
    if (!tgSc_compiles(s, k))
        return;
    tgB_puts(b, "\ntypedef void (*tgk_blas_fn)(void);\n"
                "typedef void (*tgk_gemv_double)(int, int, int, int, double, const double *, int, const double *,"
                " int, double, double *, int);\n"
                "typedef void (*tgk_gemv_float)(int, int, int, int, float, const float *, int, const float *,"
                " int, float, float *, int);\n"
                "typedef void (*tgk_gemm_double)(int, int, int, int, int, int, double, const double *, int,"
                " const double *, int, double, double *, int);\n"
                "typedef void (*tgk_gemm_float)(int, int, int, int, int, int, float, const float *, int,"
                " const float *, int, float, float *, int);\n"
                "typedef double (*tgk_dot_double)(int, const double *, int, const double *, int);\n"
                "typedef float (*tgk_dot_float)(int, const float *, int, const float *, int);\n");
    tgSd_put_defs(b);
    tgB_printf(b, "\nint64_t tgk_scan%d(int64_t n, char *const *P, const int64_t *R, const int64_t *z,"
                  " tgk_blas_fn const *fp)\n{\n  (void)z, (void)fp, (void)R;\n", k);
    /* the values before step 0 of the carried outputs */
    for (int o = 0; o < sc->nout; o++) {
        if (!carried(sc, o))
            continue;
        const tgSc_out *out = &sc->outs[o];
        tg_dtype d = ig->nodes[sc->res[out->r0]].dtype;
        for (int dist = 1; dist <= out->maxtap; dist++) {
            char ptr[80];
            snprintf(ptr, sizeof ptr, "P[%d] + %d * R[%d]", p_init(sc, o), out->maxtap - dist, r_init(sc, o));
            tgB_printf(b, "  %s h%d_%d = ", tgV_is_float(d) ? "double" : "int64_t", o, dist);
            put_load(b, d, ptr);
            tgB_puts(b, ";\n");
        }
        tgB_printf(b, "  %s x%d = 0;\n", tgV_is_float(d) ? "double" : "int64_t", o);
    }
    /* blocks of POLL_STEPS steps, the interrupt flag read between them:
     * the inner loop has no test of its own for it */
    tgB_printf(b, "  int64_t t = 0;\n  while (t < n) {\n   const int64_t tend = n - t > %d ? t + %d : n;\n"
                  "   for (; t < tend; t++) {\n", POLL_STEPS, POLL_STEPS);
    for (int i = 0; i < sc->nseq; i++)
        tgB_printf(b, "    char *p%d = P[%d] + (%s) * R[%d];\n", i, i, sc->backwards ? "n - 1 - t" : "t", i);
    for (int o = 0; o < sc->nout; o++) {
        const tgSc_out *out = &sc->outs[o];
        if (out->kind == TGSC_MITMOT) {     /* results aside, taps ahead in the buffer */
            for (int j = 0; j < out->nres; j++)
                tgB_printf(b, "    char *d%d = P[%d];\n", out->r0 + j, p_scr(sc, out->r0 + j));
            for (int j = 0; j < out->ntaps; j++)
                tgB_printf(b, "    char *p%d = P[%d] + (t + %d) * R[%d];\n", out->param + j, p_store(sc, o),
                           out->taps[j], r_store(sc, o));
            continue;
        }
        tgB_printf(b, "    char *d%d = P[%d] + (t & R[%d]) * R[%d];\n", out->r0, p_store(sc, o), r_mask(sc, o),
                   r_store(sc, o));
        if (carried(sc, o))
            continue;
        for (int j = 0; j < out->ntaps; j++)
            tgB_printf(b, "    char *p%d = t - %d >= 0 ? P[%d] + ((t - %d) & R[%d]) * R[%d] : P[%d] + (t - %d + %d) * R[%d];\n",
                       out->param + j, out->taps[j], p_store(sc, o), out->taps[j], r_mask(sc, o), r_store(sc, o),
                       p_init(sc, o), out->taps[j], out->maxtap, r_init(sc, o));
    }
    for (int i = 0; i < sc->nnon; i++)
        tgB_printf(b, "    char *p%d = P[%d];\n", sc->nparams - sc->nnon + i, p_non(sc, i));
    for (int i = 0; i < sc->nparams; i++) {
        int dist, o = tgSc_tap_of(sc, i, &dist);
        if (o < 0 || !carried(sc, o))
            tgB_printf(b, "    (void)p%d;\n", i);
    }
    for (int j = 0; j < sc->is->nsteps; j++) {
        const tgH_step *st = &sc->is->steps[j];
        if (st->kind == TGH_LOOP)
            put_loop_block(b, sc, st);
        else if (st->kind == TGH_REDUCE)
            put_reduce_block(b, sc, st);
        else if (st->kind == TGH_GEMM)
            put_ger_block(b, sc, st);
        else
            put_dot_block(b, sc, st);
    }
    for (int r = 0; r < sc->nres; r++) {     /* results that are parameters: copied */
        int p = param_result(sc, r), dist, o = p >= 0 ? tgSc_tap_of(sc, p, &dist) : -1;
        tg_dtype d = p >= 0 ? ig->nodes[ig->inputs[p]].dtype : TG_FLOAT64;
        if (p >= 0 && o >= 0 && carried(sc, o))
            tgB_printf(b, "    *(%s *)d%d = (%s)h%d_%d;\n", ctype_of(d), r, ctype_of(d), o, dist);
        else if (p >= 0)
            tgB_printf(b, "    __builtin_memcpy(d%d, p%d, (unsigned long)R[%d]);\n", r, p, r_rowb(sc, r));
    }
    for (int o = 0; o < sc->nout; o++) {
        const tgSc_out *out = &sc->outs[o];
        for (int j = 0; out->kind == TGSC_MITMOT && j < out->nres; j++)
            tgB_printf(b, "    __builtin_memcpy(P[%d] + (t + %d) * R[%d], d%d, (unsigned long)R[%d]);\n", p_store(sc, o),
                       out->otaps[j], r_store(sc, o), out->r0 + j, r_rowb(sc, out->r0 + j));
    }
    /* shift the carried values: h<o>_1 is the value just computed */
    for (int o = 0; o < sc->nout; o++) {
        if (!carried(sc, o))
            continue;
        for (int dist = sc->outs[o].maxtap; dist > 1; dist--)
            tgB_printf(b, "    h%d_%d = h%d_%d;\n", o, dist, o, dist - 1);
        tgB_printf(b, "    h%d_1 = x%d;\n", o, o);
    }
    if (sc->until) {
        char ptr[40];
        snprintf(ptr, sizeof ptr, "P[%d]", p_cond(sc));
        tgB_puts(b, "    if (");
        put_load(b, ig->nodes[sc->cond].dtype, ptr);
        tgB_puts(b, " != 0) {\n      t++;\n      goto tgk_done;\n    }\n");
    }
    /* Ctrl-C: a load and a test every POLL_STEPS steps, outside the
     * step loop (-DTGK_NO_POLL in the flags leaves it out: for measuring
     * its cost, doc/scan.md) */
    tgB_printf(b, "   }\n#ifndef TGK_NO_POLL\n   if (*(volatile int *)(void *)P[%d])\n    break;\n#endif\n  }\n",
               p_intr(sc));
    if (sc->until)
        tgB_puts(b, "tgk_done:\n");
    tgB_puts(b, "  return t;\n}\n");
}

/* Are the trailing ndim axes (shape, strides) C-contiguous? */
static bool contig(int ndim, const int64_t *shape, const int64_t *strides, size_t es)
{
    int64_t s = (int64_t)es;
    for (int d = ndim - 1; d >= 0; d--) {
        if (shape[d] != 1 && strides[d] != s)
            return false;
        s *= shape[d];
    }
    return true;
}

static bool uses_blas(const tgH_sched *is)
{
    for (int j = 0; j < is->nsteps; j++)
        if (is->steps[j].kind == TGH_DOT || is->steps[j].kind == TGH_GEMM)
            return true;
    return false;
}

int64_t tgSc_run_native(const tgH_sched *s, tgI_state *st, const tgH_step *step, tgSc_state *ss,
                        native_fn fn, int64_t n)
{
    const tgSc_scan *sc = ss->sc;
    const int *args = s->g->nodes[step->node].args;
    int np = p_scr(sc, sc->nres), nr = r_rowb(sc, sc->nres);
    char *P[np];
    int64_t R[nr > 0 ? nr : 1];
    for (int i = 0; i < sc->nparams; i++) {     /* rows within themselves contiguous */
        const tg_array *p = &ss->pin[i];
        int dist, o = tgSc_tap_of(sc, i, &dist);
        if (o >= 0 && carried(sc, o))
            continue;
        if (o >= 0) {
            const tgI_arr *init = &st->vals[args[sc->outs[o].arg]];
            int drop = sc->outs[o].kind == TGSC_MITSOT || sc->outs[o].kind == TGSC_MITMOT;
            if (!contig(init->ndim - drop, init->shape + drop, init->strides + drop, tgV_dtype_size(init->dtype)) ||
                !contig(p->ndim, p->shape, ss->stor[o].strides, tgV_dtype_size(p->dtype)))
                return -1;
        } else if (!contig(p->ndim, p->shape, p->strides, tgV_dtype_size(p->dtype))) {
            return -1;
        }
    }
    for (int r = 0; r < sc->nres; r++) {
        const tg_array *p = &ss->pout[r];
        R[r_rowb(sc, r)] = tgSc_elems(p->ndim, p->shape) * (int64_t)tgV_dtype_size(p->dtype);
        P[p_scr(sc, r)] = ss->scr[r];
        if (!contig(p->ndim, p->shape, ss->stor[sc->rout[r]].strides, tgV_dtype_size(p->dtype)))
            return -1;
    }
    for (int i = 0; i < sc->nseq; i++) {
        const tgI_arr *x = &st->vals[args[i]];
        P[i] = x->data, R[i] = x->strides[0];
    }
    for (int o = 0; o < sc->nout; o++) {
        const tgSc_out *out = &sc->outs[o];
        const tgI_arr *init = out->kind != TGSC_NITSOT ? &st->vals[args[out->arg]] : NULL;
        P[p_init(sc, o)] = init ? init->data : NULL;
        R[r_init(sc, o)] = init && out->kind == TGSC_MITSOT ? init->strides[0] : 0;
        P[p_store(sc, o)] = ss->stor[o].base;
        R[r_store(sc, o)] = ss->stor[o].rowstride;
        R[r_mask(sc, o)] = ss->stor[o].mask;
    }
    for (int i = 0; i < sc->nnon; i++)
        P[p_non(sc, i)] = st->vals[args[sc->nargs - sc->nnon + i]].data;
    for (int k = 0; k < sc->is->nslots; k++)
        P[p_slot(sc, k)] = ss->in.slots[k];
    P[p_cond(sc)] = (char *)ss->cond;
    static volatile sig_atomic_t never;     /* a state made without tgI_init */
    P[p_intr(sc)] = (char *)(void *)(st->intrp ? st->intrp : &never);
    blas_fn blas[8] = {NULL};
    if (uses_blas(sc->is)) {    /* else OpenBLAS need not be loaded at all */
        const tgBl_fns *f = tgBl_get(NULL);
        if (!f)
            return -1;      /* the interpreter's dot then reports why */
        blas_fn t[8] = {(blas_fn)f->dgemv, (blas_fn)f->sgemv, (blas_fn)f->dgemm, (blas_fn)f->sgemm,
                        (blas_fn)f->ddot, (blas_fn)f->sdot, (blas_fn)f->dger, (blas_fn)f->sger};
        memcpy(blas, t, sizeof blas);
    }
    return fn(n, P, R, ss->in.symv, blas);
}
