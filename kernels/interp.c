/* interp.c - runs a schedule without a compiler (module prefix tgI_).
 * A fused loop evaluates its cluster one block of up to TGI_BLOCK
 * elements of the innermost axis at a time: every node is a block
 * register (doubles for float dtypes, int64 for integers and bool), so the
 * op dispatch is paid once per block, not per element. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "index.h"
#include "interp_int.h"
#include "products.h"
#include "codegen.h"
#include "random.h"
#include "arrange.h"
#include "scan.h"
#include "userop.h"

TGJ_DIVMOD_DEFS

#define TGI_BLOCK 256

/* ---- elements ----------------------------------------------------------- */

void tgI_st_elem(char *p, tg_dtype d, reg v)
{
    switch (d) {
    case TG_FLOAT64: memcpy(p, &v.f, 8); break;
    case TG_FLOAT32: { float f = (float)v.f; memcpy(p, &f, 4); break; }
    case TG_INT64: memcpy(p, &v.i, 8); break;
    case TG_INT32: { int32_t x = (int32_t)(uint32_t)(uint64_t)v.i; memcpy(p, &x, 4); break; }
    default: *(unsigned char *)p = v.i != 0;
    }
}

static reg ld_reg(const char *p, tg_dtype d)
{
    reg r;
    if (tgV_is_float(d))
        r.f = tgI_ld_f(p, d);
    else
        r.i = tgI_ld_i(p, d);
    return r;
}

/* Float to integer: toward zero, saturating, NaN gives 0 (C leaves this
 * undefined; the generated code uses the same helper). */
static int64_t f2i(double x)
{
    if (x != x)
        return 0;
    if (x >= 9223372036854775807.0)
        return INT64_MAX;
    if (x <= -9223372036854775808.0)
        return INT64_MIN;
    return (int64_t)x;
}

static int64_t wrap32(int64_t v) { return (int32_t)(uint32_t)(uint64_t)v; }

/* Convert register value v from dtype `from` to dtype `to`. */
static reg convert(reg v, tg_dtype from, tg_dtype to)
{
    reg r;
    bool ff = tgV_is_float(from), ft = tgV_is_float(to);
    if (ft) {
        r.f = ff ? v.f : (double)v.i;
        if (to == TG_FLOAT32)
            r.f = (double)(float)r.f;
    } else if (to == TG_BOOL) {
        r.i = ff ? v.f != 0 : v.i != 0;
    } else {
        r.i = ff ? f2i(v.f) : v.i;
        if (to == TG_INT32)
            r.i = ff ? wrap32(r.i < INT32_MIN ? INT32_MIN : r.i > INT32_MAX ? INT32_MAX : r.i)
                     : wrap32(r.i);
    }
    return r;
}

/* ---- sizes and shapes ---------------------------------------------------- */

static int64_t conc(const tgI_state *st, tgV_size s) { return s >= 0 ? s : st->symv[-s - 1]; }

int64_t tgI_count(const tgI_arr *a)
{
    int64_t n = 1;
    for (int d = 0; d < a->ndim; d++)
        n *= a->shape[d];
    return n;
}

void tgI_c_strides(tgI_arr *a)
{
    int64_t s = (int64_t)tgV_dtype_size(a->dtype);
    for (int d = a->ndim - 1; d >= 0; d--) {
        a->strides[d] = s;
        s *= a->shape[d] ? a->shape[d] : 1;
    }
}

bool tgI_is_c_contig(const tgI_arr *a)
{
    int64_t s = (int64_t)tgV_dtype_size(a->dtype);
    for (int d = a->ndim - 1; d >= 0; d--) {
        if (a->shape[d] != 1 && a->strides[d] != s)
            return false;
        s *= a->shape[d];
    }
    return true;
}

static const char *shape_str(const tgI_arr *a, char *buf, size_t n)
{
    size_t o = (size_t)snprintf(buf, n, "(");
    for (int d = 0; d < a->ndim && o + 24 < n; d++)
        o += (size_t)snprintf(buf + o, n - o, d ? " %lld" : "%lld", (long long)a->shape[d]);
    snprintf(buf + o, n - o, ")");
    return buf;
}

/* "(n 3) with n = 4" for an input's declared shape. */
static void expected_str(const tgH_sched *s, const tgI_state *st, const tgV_node *n, char *buf, size_t len)
{
    size_t o = (size_t)snprintf(buf, len, "(");
    for (int d = 0; d < n->ndim && o + 40 < len; d++) {
        tgV_size c = n->shape[d];
        if (c >= 0) {
            o += (size_t)snprintf(buf + o, len - o, d ? " %lld" : "%lld", (long long)c);
        } else {
            size_t l;
            const char *name = tg_symbol_name(s->g->syms[-c - 1], &l);
            o += (size_t)snprintf(buf + o, len - o, "%s%.*s", d ? " " : "", (int)l, name);
        }
    }
    o += (size_t)snprintf(buf + o, len - o, ")");
    for (int d = 0; d < n->ndim && o + 40 < len; d++) {
        tgV_size c = n->shape[d];
        if (c < 0 && st->symv[-c - 1] >= 0) {
            size_t l;
            const char *name = tg_symbol_name(s->g->syms[-c - 1], &l);
            o += (size_t)snprintf(buf + o, len - o, " with %.*s = %lld", (int)l, name,
                                  (long long)st->symv[-c - 1]);
            break;
        }
    }
}

/* How errors name a leaf: an input, or a shared variable (state.c). */
static const char *leaf_kind(const tgV_node *n)
{
    size_t len;
    const char *h = tg_symbol_name(tg_car(n->term), &len);
    return h && len == 6 && memcmp(h, "shared", 6) == 0 ? "shared variable" : "input";
}

static int bind_inputs(const tgH_sched *s, tgI_state *st, const tg_array *in, tg_error *err)
{
    const tgV_graph *g = s->g;
    for (int k = 0; k < g->nsyms; k++)
        st->symv[k] = -1;
    for (int i = 0; i < g->ninputs; i++) {
        const tgV_node *n = &g->nodes[g->inputs[i]];
        const tg_array *a = &in[i];
        if (a->dtype != n->dtype) {
            char name[120];
            tgV_show(tg_nth(n->term, 1), name, sizeof name);
            tgE_set(err, TG_ERR_TYPE, NULL, 0, 0, "kernels: %s %s: expected dtype %s, got %s", leaf_kind(n), name,
                    tgV_dtype_name(n->dtype), tgV_dtype_name(a->dtype));
            return -1;
        }
        bool ok = a->ndim == n->ndim;
        /* bindings made by this input are undone on an error, so the
         * message shows only what earlier inputs fixed */
        int bound[TGV_MAXDIM], nb = 0;
        for (int d = 0; ok && d < n->ndim; d++) {
            tgV_size c = n->shape[d];
            if (a->shape[d] < 0)
                ok = false;
            else if (c >= 0)
                ok = a->shape[d] == c;
            else if (st->symv[-c - 1] < 0)
                st->symv[-c - 1] = a->shape[d], bound[nb++] = (int)(-c - 1);
            else
                ok = st->symv[-c - 1] == a->shape[d];
        }
        if (!ok) {
            char name[120], want[200], got[200];
            tgI_arr tmp = {.ndim = a->ndim < 0 || a->ndim > TGV_MAXDIM ? 0 : a->ndim};
            memcpy(tmp.shape, a->shape, sizeof tmp.shape);
            while (nb > 0)
                st->symv[bound[--nb]] = -1;
            expected_str(s, st, n, want, sizeof want);
            tgV_show(tg_nth(n->term, 1), name, sizeof name);
            tgE_set(err, TG_ERR_RANGE, NULL, 0, 0, "kernels: %s %s: expected shape %s, got %s", leaf_kind(n), name,
                    want, shape_str(&tmp, got, sizeof got));
            return -1;
        }
        tgI_arr *v = &st->vals[g->inputs[i]];
        v->dtype = a->dtype, v->ndim = a->ndim, v->data = a->data;
        memcpy(v->shape, a->shape, sizeof v->shape);
        memcpy(v->strides, a->strides, sizeof v->strides);
        if (!a->data && tgI_count(v) > 0) {
            char name[120];
            tgV_show(tg_nth(n->term, 1), name, sizeof name);
            tgE_set(err, TG_ERR_ARG, NULL, 0, 0, "kernels: %s %s: no data", leaf_kind(n), name);
            return -1;
        }
    }
    /* the sizes slices derive from those (index.c) and those concatenate
     * derives (arrange.c): each may be the other's source, so rounds
     * until all are bound, the last one reporting what is not */
    for (int round = 0;; round++) {
        bool partial = round < g->ndsizes + g->ndsums;
        int a = tgIx_bind(g, st->symv, partial, err), b = a < 0 ? -1 : tgAr_bind(g, st->symv, partial, err);
        if (a < 0 || b < 0)
            return -1;
        if (a == 0 && b == 0)
            return 0;
    }
}

/* ---- loops ---------------------------------------------------------------- */

/* Where a loop reads input a: byte strides aligned to the loop's shape
 * (zero on broadcast axes). */
void tgI_loop_strides(const tgI_arr *a, const tgI_arr *shape, int64_t *out)
{
    int off = shape->ndim - a->ndim;
    for (int d = 0; d < shape->ndim; d++) {
        int k = d - off;
        out[d] = k < 0 || a->shape[k] == 1 ? 0 : a->strides[k];
    }
}

typedef struct loopctx {
    const tgV_graph *g;
    const tgH_step *step;
    reg **r;                /* per cluster position, then per input */
    reg *tmp;
    int *pos;               /* node -> register index (valid for this loop) */
} loopctx;

/* The block of arg a of node n, converted to n's compute dtype. */
static const reg *arg_block(loopctx *L, const tgV_node *n, int a, tg_dtype to, int m, reg *tmp)
{
    const tgV_node *an = &L->g->nodes[a];
    const reg *src = L->r[L->pos[a]];
    if (an->dtype == to || (an->dtype == TG_FLOAT32 && to == TG_FLOAT64))
        return src;
    (void)n;
    for (int j = 0; j < m; j++)
        tmp[j] = convert(src[j], an->dtype, to);
    return tmp;
}

static double sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

/* the generated code's tgk_softplus (codegen.h), one text for both paths */
TGJ_SOFTPLUS_DEF

static double fmaxn(double a, double b) { return a != a ? a : b != b ? b : a > b ? a : b; }
static double fminn(double a, double b) { return a != a ? a : b != b ? b : a < b ? a : b; }

static int64_t ipow(int64_t b, int64_t e)
{
    if (e < 0)
        return b == 1 ? 1 : b == -1 ? (e & 1 ? -1 : 1) : 0;
    uint64_t r = 1, x = (uint64_t)b;
    while (e) {
        if (e & 1)
            r *= x;
        x *= x;
        e >>= 1;
    }
    return (int64_t)r;
}

/* Evaluate node n of a loop on m elements. */
static void eval_node(loopctx *L, const tgV_node *n, reg *out, int m)
{
    tg_dtype cd = n->cdt;
    bool fl = tgV_is_float(cd);
    reg *t0 = L->tmp, *t1 = L->tmp + TGI_BLOCK;
    if (n->op == TGV_SWITCH) {
        const reg *c = arg_block(L, n, n->args[0], TG_BOOL, m, t0);
        const reg *x = arg_block(L, n, n->args[1], cd, m, t1);
        for (int j = 0; j < m; j++)
            out[j] = c[j].i ? x[j] : out[j];
        const reg *y = arg_block(L, n, n->args[2], cd, m, t1);
        for (int j = 0; j < m; j++)
            out[j] = c[j].i ? out[j] : y[j];
        return;
    }
    if (n->op == TGV_CAST || n->op == TGV_ALLOC || n->op == TGV_FILL) {
        const reg *x = arg_block(L, n, n->args[n->op == TGV_FILL], n->dtype, m, t0);
        if (x != out)
            memcpy(out, x, (size_t)m * sizeof *out);
        return;
    }
    if (n->op == TGV_USER) {    /* a C function of its arguments, one element at a time */
        static _Thread_local reg ub[TGUO_MAXARGS][TGI_BLOCK];
        const reg *u[TGUO_MAXARGS];
        double x[TGUO_MAXARGS];
        for (int k = 0; k < n->nargs; k++)
            u[k] = arg_block(L, n, n->args[k], cd, m, ub[k]);
        for (int j = 0; j < m; j++) {
            for (int k = 0; k < n->nargs; k++)
                x[k] = u[k][j].f;
            out[j].f = n->user->fn(x, n->user->ud);
        }
        if (n->dtype == TG_FLOAT32)
            for (int j = 0; j < m; j++)
                out[j].f = (double)(float)out[j].f;
        return;
    }
    const reg *a = arg_block(L, n, n->args[0], cd, m, t0);
    if (n->nargs == 1) {
        for (int j = 0; j < m; j++) {
            double x = a[j].f;
            int64_t xi = a[j].i;
            switch (n->op) {
            case TGV_ADD: case TGV_MUL: out[j] = a[j]; break;
            case TGV_NEG: if (fl) out[j].f = -x; else out[j].i = (int64_t)(0 - (uint64_t)xi); break;
            case TGV_EXP: out[j].f = exp(x); break;
            case TGV_LOG: out[j].f = log(x); break;
            case TGV_LOG1P: out[j].f = log1p(x); break;
            case TGV_SQRT: out[j].f = sqrt(x); break;
            case TGV_SIN: out[j].f = sin(x); break;
            case TGV_COS: out[j].f = cos(x); break;
            case TGV_TANH: out[j].f = tanh(x); break;
            case TGV_SIGMOID: out[j].f = sigmoid(x); break;
            case TGV_SQR: if (fl) out[j].f = x * x; else out[j].i = (int64_t)((uint64_t)xi * (uint64_t)xi); break;
            case TGV_RECIPROCAL: out[j].f = 1.0 / x; break;
            case TGV_EXPM1: out[j].f = expm1(x); break;
            case TGV_SOFTPLUS: out[j].f = tgk_softplus(x); break;
            case TGV_ABS: if (fl) out[j].f = fabs(x); else out[j].i = xi < 0 ? (int64_t)(0 - (uint64_t)xi) : xi; break;
            default: break;
            }
        }
    } else {
        if (a != out)
            memcpy(out, a, (size_t)m * sizeof *out);
        for (int k = 1; k < n->nargs; k++) {
            const reg *b = arg_block(L, n, n->args[k], cd, m, t1);
            for (int j = 0; j < m; j++) {
                double x = out[j].f, y = b[j].f;
                int64_t xi = out[j].i, yi = b[j].i;
                switch (n->op) {
                case TGV_ADD: if (fl) out[j].f = x + y; else out[j].i = (int64_t)((uint64_t)xi + (uint64_t)yi); break;
                case TGV_SUB: if (fl) out[j].f = x - y; else out[j].i = (int64_t)((uint64_t)xi - (uint64_t)yi); break;
                case TGV_MUL: if (fl) out[j].f = x * y; else out[j].i = (int64_t)((uint64_t)xi * (uint64_t)yi); break;
                case TGV_DIV: out[j].f = x / y; break;
                case TGV_INT_DIV: if (fl) out[j].f = tgk_fdiv(x, y); else out[j].i = tgk_idiv(xi, yi); break;
                case TGV_MOD: if (fl) out[j].f = tgk_fmod(x, y); else out[j].i = tgk_imod(xi, yi); break;
                case TGV_POW: if (fl) out[j].f = pow(x, y); else out[j].i = ipow(xi, yi); break;
                case TGV_MAXIMUM: if (fl) out[j].f = fmaxn(x, y); else out[j].i = xi > yi ? xi : yi; break;
                case TGV_MINIMUM: if (fl) out[j].f = fminn(x, y); else out[j].i = xi < yi ? xi : yi; break;
                case TGV_LT: out[j].i = fl ? x < y : xi < yi; break;
                case TGV_LE: out[j].i = fl ? x <= y : xi <= yi; break;
                case TGV_GT: out[j].i = fl ? x > y : xi > yi; break;
                case TGV_GE: out[j].i = fl ? x >= y : xi >= yi; break;
                case TGV_EQ: out[j].i = fl ? x == y : xi == yi; break;
                case TGV_NEQ: out[j].i = fl ? x != y : xi != yi; break;
                default: break;
                }
            }
            /* n-ary add / mul round after each step, as a chain of binary ops would */
            if (cd == TG_FLOAT32 && n->op < TGV_LT)
                for (int j = 0; j < m; j++)
                    out[j].f = (double)(float)out[j].f;
            else if (cd == TG_INT32 && n->op < TGV_LT)
                for (int j = 0; j < m; j++)
                    out[j].i = wrap32(out[j].i);
        }
        return;
    }
    if (cd == TG_FLOAT32 && n->dtype == TG_FLOAT32)
        for (int j = 0; j < m; j++)
            out[j].f = (double)(float)out[j].f;
    else if (n->dtype == TG_INT32)
        for (int j = 0; j < m; j++)
            out[j].i = wrap32(out[j].i);
}

/* Fold v into acc, or, blocked, into the block's value (which goes into
 * acc when the block is full). */
static inline void fold_into(tgV_op op, bool fl, rblock *B, reg *acc, reg v)
{
    if (!B->on) {
        fold1(op, fl, acc, v);
        return;
    }
    fold1(op, fl, &B->part, v);
    if (--B->left == 0) {
        fold1(op, fl, acc, B->part);
        B->part = red_identity(op, fl);
        B->left = TGJ_RED_BLOCK;
    }
}

/* Fold m values of src (dtype sd, registers) into accumulators at acc,
 * stride as apart, in order: what red_visit does one element at a time. */
static void fold_block(tgV_op op, facc *F, tg_dtype sd, char *acc, int64_t as, const reg *src, int m)
{
    bool sf = tgV_is_float(sd);
    for (int j = 0; j < m; j++) {
        reg v = src[j];
        if (F->fl && !sf)
            v.f = (double)src[j].i;
        fold_into(op, F->fl, &F->blk, (reg *)(acc + j * as), v);
    }
}

/* Merge the loop's adjacent axes that every operand (nall of them,
 * strides st[k * nd + d]) steps through as one (the outer stride the
 * inner one times the inner size), in place: the merged axes move to the
 * end, the axes freed at the front get size 1.  A loop over rows of 10
 * elements then runs as one loop of them all instead of a short inner
 * loop per row; the elements are visited in the same order. */
static void merge_axes(int nd, int nall, int64_t *shape, int64_t *st)
{
    int w = nd - 1;     /* the axis being grown, written from the end */
    for (int d = nd - 2; d >= 0; d--) {
        if (shape[d] == 1)      /* any strides: never stepped */
            continue;
        bool ok = shape[w] != 1;    /* else d replaces the group, never stepped */
        for (int k = 0; ok && k < nall; k++)
            ok = st[k * nd + d] == st[k * nd + w] * shape[w];
        if (ok) {
            shape[w] *= shape[d];
            continue;
        }
        if (shape[w] != 1)
            w--;
        shape[w] = shape[d];
        for (int k = 0; k < nall; k++)
            st[k * nd + w] = st[k * nd + d];
    }
    for (int d = 0; d < w; d++) {
        shape[d] = 1;
        for (int k = 0; k < nall; k++)
            st[k * nd + d] = 0;
    }
}

/* A compiled loop: operand pointers and strides over the loop shape,
 * inputs, outputs, then the accumulators of its fused reductions. */
static void run_native(tgI_state *st, const tgH_step *step, tgJ_loop_fn fn, const facc *F)
{
    const tgI_arr *sh = &st->vals[step->node];
    int nio = step->nins + step->nouts, nd = sh->ndim, nall = nio + step->nreds;
    int64_t strides[(nall > 0 ? nall : 1) * (nd > 0 ? nd : 1)], shape[TGV_MAXDIM];
    char *base[nall > 0 ? nall : 1];
    for (int k = 0; k < nio; k++) {
        const tgI_arr *a = &st->vals[k < step->nins ? step->ins[k] : step->outs[k - step->nins]];
        tgI_loop_strides(a, sh, strides + k * nd);
        base[k] = a->data;
    }
    for (int r = 0; r < step->nreds; r++) {
        base[nio + r] = (char *)F[r].acc;
        for (int d = 0; d < nd; d++)
            strides[(nio + r) * nd + d] = F[r].strides[d];
    }
    memcpy(shape, sh->shape, (size_t)nd * sizeof *shape);
    if (nd > 1)
        merge_axes(nd, nall, shape, strides);
    fn(shape, base, strides);
}

void tgI_run_loop(const tgH_sched *s, tgI_state *st, const tgH_step *step, int *pos, facc *F)
{
    const tgV_graph *g = s->g;
    const tgI_arr *sh = &st->vals[step->node];
    int nd = sh->ndim;
    int64_t total = tgI_count(sh);
    if (total == 0)
        return;
    reg *R = (reg *)st->regs;
    reg *r[step->nnodes + step->nins > 0 ? step->nnodes + step->nins : 1];
    for (int k = 0; k < step->nins; k++) {
        pos[step->ins[k]] = k;
        r[k] = R + (size_t)k * TGI_BLOCK;
    }
    for (int k = 0; k < step->nnodes; k++) {
        pos[step->nodes[k]] = step->nins + k;
        r[step->nins + k] = R + (size_t)st->regof[step->nodes[k]] * TGI_BLOCK;
    }
    loopctx L = {g, step, r, R + st->nregs * TGI_BLOCK, pos};
    /* strides of inputs and outputs over the loop shape */
    int nio = step->nins + step->nouts, nall = nio + step->nreds;
    int64_t strides[nall > 0 ? nall : 1][TGV_MAXDIM];
    char *base[nall > 0 ? nall : 1];
    const tgI_arr *arr[nio > 0 ? nio : 1];
    for (int k = 0; k < nio; k++) {
        int v = k < step->nins ? step->ins[k] : step->outs[k - step->nins];
        arr[k] = &st->vals[v];
        tgI_loop_strides(arr[k], sh, strides[k]);
        base[k] = arr[k]->data;
    }
    for (int r = 0; r < step->nreds; r++) {   /* accumulators move with the outer index too */
        base[nio + r] = (char *)F[r].acc;
        memcpy(strides[nio + r], F[r].strides, sizeof strides[nio + r]);
    }
    int64_t inner = nd ? sh->shape[nd - 1] : 1;
    int64_t outer = inner ? total / inner : 0;
    int64_t idx[TGV_MAXDIM] = {0};
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t j0 = 0; j0 < inner; j0 += TGI_BLOCK) {
            int m = (int)(inner - j0 < TGI_BLOCK ? inner - j0 : TGI_BLOCK);
            for (int k = 0; k < step->nins; k++) {
                int64_t is = nd ? strides[k][nd - 1] : 0;
                const char *p = base[k] + j0 * is;
                reg *dst = r[k];
                tg_dtype d = arr[k]->dtype;
                if (d == TG_FLOAT64 && is == 8)
                    memcpy(dst, p, (size_t)m * 8);
                else
                    for (int j = 0; j < m; j++)
                        dst[j] = ld_reg(p + j * is, d);
            }
            /* every load is done before the first store, so an output
             * may overwrite an input read at the same index (in place) */
            for (int k = 0, o = 0; k < step->nnodes; k++) {
                int v = step->nodes[k];
                reg *dst = r[step->nins + k];
                eval_node(&L, &g->nodes[v], dst, m);
                for (int q = 0; q < step->nreds; q++) {
                    const tgV_node *rn = &g->nodes[step->reds[q]];
                    int64_t as = nd ? strides[nio + q][nd - 1] : 0;
                    if (rn->args[0] == v)
                        fold_block(rn->op, &F[q], g->nodes[v].dtype, base[nio + q] + j0 * as, as, dst, m);
                }
                if (o < step->nouts && step->outs[o] == v) {
                    int q = step->nins + o++;
                    int64_t os = nd ? strides[q][nd - 1] : 0;
                    char *p = base[q] + j0 * os;
                    tg_dtype d = arr[q]->dtype;
                    if (d == TG_FLOAT64 && os == 8)
                        memcpy(p, dst, (size_t)m * 8);
                    else
                        for (int j = 0; j < m; j++)
                            tgI_st_elem(p + j * os, d, dst[j]);
                }
            }
        }
        /* next outer index */
        for (int d = nd - 2; d >= 0; d--) {
            for (int k = 0; k < nall; k++)
                base[k] += strides[k][d];
            if (++idx[d] < sh->shape[d])
                break;
            for (int k = 0; k < nall; k++)
                base[k] -= strides[k][d] * sh->shape[d];
            idx[d] = 0;
        }
    }
}

/* ---- reductions, layout --------------------------------------------------- */

/* Call fn(ud, offset_a, offset_b) over every index of shape (ndim, shape),
 * with byte offsets through strides sa and sb. */
void tgI_for_each(int ndim, const int64_t *shape, const int64_t *sa, const int64_t *sb,
                  tgI_visit_fn fn, void *ud)
{
    int64_t idx[TGV_MAXDIM] = {0}, oa = 0, ob = 0;
    for (int d = 0; d < ndim; d++)
        if (shape[d] == 0)
            return;
    for (;;) {
        fn(ud, oa, ob);
        int d = ndim - 1;
        for (; d >= 0; d--) {
            oa += sa[d], ob += sb[d];
            if (++idx[d] < shape[d])
                break;
            oa -= sa[d] * shape[d], ob -= sb[d] * shape[d];
            idx[d] = 0;
        }
        if (d < 0)
            return;
    }
}

typedef struct redctx {
    tgV_op op;
    const tgI_arr *x;
    reg *acc;
    bool fl;
    rblock *blk;
} redctx;

static void red_visit(void *ud, int64_t ox, int64_t oacc)
{
    redctx *R = ud;
    const char *p = R->x->data + ox;
    reg v;
    if (R->fl)
        v.f = tgI_ld_f(p, R->x->dtype);
    else
        v.i = tgI_ld_i(p, R->x->dtype);
    fold_into(R->op, R->fl, R->blk, (reg *)((char *)R->acc + oacc), v);
}

typedef struct copyctx {
    const tgI_arr *src, *dst;
    const reg *acc;         /* when set: source registers in dtype `from` */
    tg_dtype from;
} copyctx;

static void copy_visit(void *ud, int64_t od, int64_t os)
{
    copyctx *C = ud;
    reg v = C->acc ? *(const reg *)((const char *)C->acc + os)
                   : ld_reg(C->src->data + os, C->src->dtype);
    tg_dtype from = C->acc ? C->from : C->src->dtype;
    tgI_st_elem(C->dst->data + od, C->dst->dtype, convert(v, from, C->dst->dtype));
}

/* Write registers (C order over dst's shape, in dtype from) into dst. */
void tgI_store_regs(const tgI_arr *dst, const reg *acc, tg_dtype from)
{
    if (dst->dtype == from && (from == TG_FLOAT64 || from == TG_INT64) && tgI_is_c_contig(dst)) {
        memcpy(dst->data, acc, (size_t)tgI_count(dst) * sizeof *acc);     /* a reg is the value */
        return;
    }
    int64_t rs[TGV_MAXDIM], s = (int64_t)sizeof(reg);
    for (int d = dst->ndim - 1; d >= 0; d--)
        rs[d] = s, s *= dst->shape[d];
    copyctx C = {NULL, dst, acc, from};
    tgI_for_each(dst->ndim, dst->shape, dst->strides, rs, copy_visit, &C);
}

typedef struct rowctx {
    const tgI_arr *src, *dst;
    size_t bytes;
} rowctx;

static void row_visit(void *ud, int64_t od, int64_t os)
{
    rowctx *R = ud;
    memcpy(R->dst->data + od, R->src->data + os, R->bytes);
}

/* A 2-d copy of one dtype of 4 or 8 bytes whose source rows are not
 * contiguous (a transposed view, as a GEMM operand that BLAS cannot take
 * reversed): element by element without conversions, 8 destination
 * rows at a time so that each source line read serves 8 of them. */
static void copy_2d(const tgI_arr *dst, const tgI_arr *src, int64_t es)
{
    int64_t m = dst->shape[0], n = dst->shape[1];
    for (int64_t i0 = 0; i0 < m; i0 += 8) {
        int64_t i1 = i0 + 8 < m ? i0 + 8 : m;
        for (int64_t j = 0; j < n; j++)
            for (int64_t i = i0; i < i1; i++) {
                char *d = dst->data + i * dst->strides[0] + j * dst->strides[1];
                const char *p = src->data + i * src->strides[0] + j * src->strides[1];
                if (es == 8)
                    memcpy(d, p, 8);
                else
                    memcpy(d, p, 4);
            }
    }
}

void tgI_copy_arr(const tgI_arr *dst, const tgI_arr *src)
{
    /* one dtype and rows contiguous on both sides (a GEMM's bias broadcast
     * over the rows, a copied matrix): a memcpy a row */
    int nd = dst->ndim;
    int64_t es = (int64_t)tgV_dtype_size(dst->dtype);
    if (src->dtype == dst->dtype && nd > 0 && dst->strides[nd - 1] == es && src->strides[nd - 1] == es) {
        rowctx R = {src, dst, (size_t)(dst->shape[nd - 1] * es)};
        tgI_for_each(nd - 1, dst->shape, dst->strides, src->strides, row_visit, &R);
        return;
    }
    if (src->dtype == dst->dtype && nd == 2 && (es == 8 || es == 4)) {
        copy_2d(dst, src, es);
        return;
    }
    copyctx C = {src, dst, NULL, TG_BOOL};
    tgI_for_each(dst->ndim, dst->shape, dst->strides, src->strides, copy_visit, &C);
}

typedef struct updctx {
    const tgI_arr *part, *val;
    bool inc;
} updctx;

static void update_visit(void *ud, int64_t op, int64_t ov)
{
    updctx *U = ud;
    tg_dtype d = U->part->dtype;
    char *p = U->part->data + op;
    reg v = convert(ld_reg(U->val->data + ov, U->val->dtype), U->val->dtype, d);
    if (U->inc) {
        reg a = ld_reg(p, d);
        if (tgV_is_float(d))
            v.f += a.f;     /* exact in double for float32: one rounding when stored */
        else if (d == TG_BOOL)
            v.i = v.i || a.i;
        else
            v.i = (int64_t)((uint64_t)v.i + (uint64_t)a.i);
    }
    tgI_st_elem(p, d, v);
}

/* (inc_subtensor X V IDX ...) and set_subtensor: X copied into the
 * result (unless the buffer plan gave the result X's memory), then V
 * (broadcast) added to or written over its part IDX, by the generated
 * loop fn when there is one (codegen.c, put_update). */
static void update_part(const tgV_node *n, const tgI_arr *part0, const tgI_arr *val, tgJ_loop_fn fn);

static int run_update(const tgH_sched *s, tgI_state *st, int v, tgJ_loop_fn fn, tg_error *err)
{
    const tgV_node *n = &s->g->nodes[v];
    const tgI_arr *x = &st->vals[n->args[0]], *val = &st->vals[n->args[1]];
    tgI_arr *y = &st->vals[v], part;
    if (y->data != x->data)
        tgI_copy_arr(y, x);
    if (tgIx_part(s->g, st, v, y, &part, err) < 0)
        return -1;
    update_part(n, &part, val, fn);
    return 0;
}

/* The update of the part, V read at val (broadcast). */
static void update_part(const tgV_node *n, const tgI_arr *part0, const tgI_arr *val, tgJ_loop_fn fn)
{
    tgI_arr part = *part0;
    int64_t vs[TGV_MAXDIM] = {0};
    for (int d = 0; d < val->ndim; d++) {
        int pd = part.ndim - val->ndim + d;
        vs[pd] = val->shape[d] == 1 ? 0 : val->strides[d];
    }
    if (fn) {
        int sd = part.ndim ? part.ndim : 1;
        int64_t strides[2 * TGV_MAXDIM + 2] = {0};
        char *base[2] = {val->data, part.data};
        memcpy(strides, vs, (size_t)part.ndim * sizeof *strides);
        memcpy(strides + sd, part.strides, (size_t)part.ndim * sizeof *strides);
        fn(part.shape, base, strides);
        return;
    }
    updctx U = {&part, val, n->op == TGV_INC_SUBTENSOR};
    tgI_for_each(part.ndim, part.shape, part.strides, vs, update_visit, &U);
}

/* A fused update step (TGH_UPDATE_LOOP): X into the result as
 * run_update, then the generated loop computing V's elements as it
 * writes them; without one, V's loop run by the interpreter into a
 * temporary, then the update as run_update's. */
static int run_update_loop(const tgH_sched *s, tgI_state *st, int k, tgJ_loop_fn fn, tg_error *err)
{
    const tgH_step *step = &s->steps[k];
    int v = step->node;
    const tgV_node *n = &s->g->nodes[v];
    const tgI_arr *x = &st->vals[n->args[0]];
    tgI_arr *y = &st->vals[v], *val = &st->vals[n->args[1]], part;
    if (y->data != x->data)
        tgI_copy_arr(y, x);
    if (tgIx_part(s->g, st, v, y, &part, err) < 0)
        return -1;
    if (fn) {
        int sd = part.ndim ? part.ndim : 1, nop = step->nins + 1;
        int64_t strides[nop * sd], ls[TGV_MAXDIM > 0 ? TGV_MAXDIM : 1];
        char *base[nop];
        memset(strides, 0, sizeof strides);
        for (int q = 0; q < step->nins; q++) {
            const tgI_arr *a = &st->vals[step->ins[q]];
            base[q] = NULL;
            if (!tgH_value_reads(s, step, step->ins[q]))
                continue;
            base[q] = a->data;
            tgI_loop_strides(a, val, ls);   /* over V's shape, then V's over the part's */
            for (int d = 0; d < val->ndim; d++)
                strides[q * sd + part.ndim - val->ndim + d] = val->shape[d] == 1 ? 0 : ls[d];
        }
        base[step->nins] = part.data;
        memcpy(strides + step->nins * sd, part.strides, (size_t)part.ndim * sizeof *strides);
        fn(part.shape, base, strides);
        return 0;
    }
    int ins[step->nins > 0 ? step->nins : 1], ni = 0, vv = n->args[1];
    for (int q = 0; q < step->nins; q++)
        if (tgH_value_reads(s, step, step->ins[q]))
            ins[ni++] = step->ins[q];
    size_t bytes = (size_t)tgI_count(val) * tgV_dtype_size(val->dtype);
    val->data = malloc(bytes ? bytes : 1);
    if (!val->data)
        return tgE_nomem(err), -1;
    tgI_c_strides(val);
    tgH_step L = {.kind = TGH_LOOP, .node = vv, .nodes = step->nodes, .nnodes = step->nnodes,
                  .ins = ins, .nins = ni, .outs = &vv, .nouts = 1};
    tgI_run_loop(s, st, &L, st->pos, NULL);
    update_part(n, &part, val, NULL);
    free(val->data);
    val->data = NULL;
    return 0;
}

/* The accumulators of reduction node v, initialized, with their strides
 * over its source's shape; an error for max / min of an empty axis. */
int tgI_reduce_begin(const tgH_sched *s, tgI_state *st, int v, facc *F, tg_error *err)
{
    const tgV_node *n = &s->g->nodes[v];
    const tgI_arr *x = &st->vals[n->args[0]], *y = &st->vals[v];
    int64_t nout = tgI_count(y), nred = 1;
    bool fl = tgV_is_float(x->dtype) || n->op == TGV_MEAN;
    for (int d = 0; d < x->ndim; d++)
        if (n->axes & (1u << d))
            nred *= x->shape[d];
    if (nred == 0 && nout > 0 && (n->op == TGV_MAX || n->op == TGV_MIN)) {
        char buf[200];
        tgE_set(err, TG_ERR_RANGE, NULL, 0, 0, "kernels: in %s: %s of an empty axis",
                tgV_show(n->term, buf, sizeof buf), tgV_node_op_name(n));
        return -1;
    }
    reg *acc = malloc((size_t)(nout ? nout : 1) * sizeof *acc);
    if (!acc)
        return tgE_nomem(err), -1;
    for (int64_t i = 0; i < nout; i++)
        acc[i] = red_identity(n->op, fl);
    F->blk = (rblock){n->ndim == 0, red_identity(n->op, fl), TGJ_RED_BLOCK};
    /* accumulator offsets: C order over kept axes, 0 on reduced ones */
    int64_t stride = (int64_t)sizeof(reg);
    for (int d = x->ndim - 1; d >= 0; d--) {
        if (n->axes & (1u << d)) {
            F->strides[d] = 0;
        } else {
            F->strides[d] = stride;
            stride *= x->shape[d];
        }
    }
    F->acc = acc, F->fl = fl, F->nred = nred;
    return 0;
}

/* Store the accumulators into v's value (mean: divided) and free them. */
void tgI_reduce_end(const tgH_sched *s, tgI_state *st, int v, facc *F)
{
    const tgV_node *n = &s->g->nodes[v];
    const tgI_arr *y = &st->vals[v];
    int64_t nout = tgI_count(y);
    if (F->blk.on && F->blk.left < TGJ_RED_BLOCK)    /* the last block, not full */
        fold1(n->op, F->fl, &F->acc[0], F->blk.part);
    if (n->op == TGV_MEAN)
        for (int64_t i = 0; i < nout; i++)
            F->acc[i].f /= (double)F->nred;
    tgI_store_regs(y, F->acc, F->fl ? TG_FLOAT64 : TG_INT64);
    free(F->acc);
    F->acc = NULL;
}

/* Fold float64 x into accumulators F (not blocked) in C order, as
 * red_visit does, a row along the last axis at a time. */
#define TGI_FOLD_ROWS(FOLD) \
    for (int64_t o = 0; o < outer; o++) { \
        const char *p = x->data + ox; \
        double *a = (double *)((char *)F->acc + oa); \
        if (as == 0) { \
            double acc = *a; \
            for (int64_t j = 0; j < inner; j++) { double v = *(const double *)(p + j * xs); FOLD(acc); } \
            *a = acc; \
        } else { \
            for (int64_t j = 0; j < inner; j++) { \
                double v = *(const double *)(p + j * xs), acc = *(double *)((char *)a + j * as); \
                FOLD(acc); \
                *(double *)((char *)a + j * as) = acc; } \
        } \
        for (int d = nd - 2; d >= 0; d--) { \
            ox += x->strides[d], oa += F->strides[d]; \
            if (++idx[d] < x->shape[d]) break; \
            ox -= x->strides[d] * x->shape[d], oa -= F->strides[d] * x->shape[d]; \
            idx[d] = 0; } \
    }
#define TGI_FOLD_SUM(acc) acc += v
#define TGI_FOLD_MAX(acc) acc = acc != acc ? acc : v != v || v > acc ? v : acc
#define TGI_FOLD_MIN(acc) acc = acc != acc ? acc : v != v || v < acc ? v : acc
#define TGI_FOLD_PROD(acc) acc *= v

static void reduce_f64(tgV_op op, const tgI_arr *x, facc *F)
{
    int nd = x->ndim;
    int64_t inner = x->shape[nd - 1], xs = x->strides[nd - 1], as = F->strides[nd - 1];
    int64_t outer = inner ? tgI_count(x) / inner : 0, ox = 0, oa = 0, idx[TGV_MAXDIM] = {0};
    switch (op) {
    case TGV_MAX: TGI_FOLD_ROWS(TGI_FOLD_MAX) break;
    case TGV_MIN: TGI_FOLD_ROWS(TGI_FOLD_MIN) break;
    case TGV_PROD: TGI_FOLD_ROWS(TGI_FOLD_PROD) break;
    default: TGI_FOLD_ROWS(TGI_FOLD_SUM)
    }
}

static int run_reduce(const tgH_sched *s, tgI_state *st, int v, tg_error *err)
{
    const tgV_node *n = &s->g->nodes[v];
    const tgI_arr *x = &st->vals[n->args[0]];
    facc F;
    if (tgI_reduce_begin(s, st, v, &F, err) < 0)
        return -1;
    redctx R = {n->op, x, F.acc, F.fl, &F.blk};
    if (x->dtype == TG_FLOAT64 && F.fl && !F.blk.on && x->ndim > 0)
        reduce_f64(n->op, x, &F);
    else
        tgI_for_each(x->ndim, x->shape, x->strides, F.strides, red_visit, &R);
    tgI_reduce_end(s, st, v, &F);
    return 0;
}

/* A loop with its fused reductions: accumulators set up, the loop run
 * (compiled or not) folding into them in the order run_reduce would,
 * then stored. */
static int run_fused(const tgH_sched *s, tgI_state *st, int k, tg_error *err)
{
    const tgH_step *step = &s->steps[k];
    facc F[step->nreds > 0 ? step->nreds : 1];
    int r = 0, rc = 0;
    for (; r < step->nreds; r++)
        if (tgI_reduce_begin(s, st, step->reds[r], &F[r], err) < 0) {
            rc = -1;
            break;
        }
    if (rc == 0 && st->kern && st->kern[k])
        run_native(st, step, st->kern[k], F);
    else if (rc == 0)
        tgI_run_loop(s, st, step, st->pos, F);
    while (r-- > 0) {
        if (rc == 0)
            tgI_reduce_end(s, st, step->reds[r], &F[r]);
        else
            free(F[r].acc);
    }
    return rc;
}

static void run_view(const tgH_sched *s, tgI_state *st, int v)
{
    const tgV_node *n = &s->g->nodes[v];
    const tgI_arr *x = &st->vals[n->args[0]];
    tgI_arr *y = &st->vals[v];
    y->data = x->data;
    for (int d = 0; d < n->ndim; d++) {
        int p = n->perm[d];
        y->strides[d] = p < 0 ? 0 : x->strides[p];
    }
}

static int run_reshape(const tgH_sched *s, tgI_state *st, int v, tg_error *err)
{
    const tgV_node *n = &s->g->nodes[v];
    const tgI_arr *x = &st->vals[n->args[0]];
    tgI_arr *y = &st->vals[v];
    if (tgI_count(x) != tgI_count(y)) {
        char buf[200], a[100], b[100];
        tgE_set(err, TG_ERR_RANGE, NULL, 0, 0, "kernels: in %s: cannot reshape %s to %s",
                tgV_show(n->term, buf, sizeof buf), shape_str(x, a, sizeof a), shape_str(y, b, sizeof b));
        return -1;
    }
    if (tgI_is_c_contig(x)) {
        y->data = x->data;
        tgI_c_strides(y);
        return 0;
    }
    /* copy in C order: view the slot with x's shape, copy, then reshape */
    tgI_arr tmp = *x;
    tmp.data = y->data;
    tgI_c_strides(&tmp);
    tgI_copy_arr(&tmp, x);
    tgI_c_strides(y);
    return 0;
}

/* ---- the run ---------------------------------------------------------------- */

/* Block registers of each loop's members: a register is reused once the
 * member it holds has had its last use inside the loop, so a long chain
 * needs two, not one per node.  Inputs hold registers 0 .. nins-1. */
static size_t alloc_regs(const tgH_sched *s, int *regof, int *lastuse, int *freel, int *stamp)
{
    const tgV_graph *g = s->g;
    size_t maxreg = 0;
    for (int k = 0; k < s->nsteps; k++) {
        const tgH_step *step = &s->steps[k];
        if (step->kind != TGH_LOOP && step->kind != TGH_UPDATE_LOOP)     /* the latter: V's loop */
            continue;
        for (int j = 0; j < step->nnodes; j++)
            stamp[step->nodes[j]] = k;
        for (int j = 0; j < step->nnodes; j++) {
            const tgV_node *n = &g->nodes[step->nodes[j]];
            for (int i = 0; i < n->nargs; i++)
                lastuse[n->args[i]] = j;
        }
        int nfree = 0, top = step->nins;
        for (int j = 0; j < step->nnodes; j++) {
            int v = step->nodes[j];
            regof[v] = nfree ? freel[--nfree] : top++;
            /* an argument whose last use is here gives its register back
             * after this node, which may read it while writing its own */
            const tgV_node *n = &g->nodes[v];
            for (int i = 0; i < n->nargs; i++) {
                int a = n->args[i];
                if (stamp[a] == k && lastuse[a] == j) {
                    freel[nfree++] = regof[a];
                    lastuse[a] = -1;    /* a repeated argument frees once */
                }
            }
        }
        if ((size_t)top > maxreg)
            maxreg = (size_t)top;
    }
    return maxreg;
}

int tgI_init(tgI_state *st, const tgH_sched *s)
{
    const tgV_graph *g = s->g;
    memset(st, 0, sizeof *st);
    st->intrp = &st->intr;
    st->regof = malloc(((size_t)g->n + 1) * sizeof *st->regof);
    int *lastuse = malloc(((size_t)g->n + 1) * sizeof *lastuse);
    int *freel = malloc(((size_t)g->n + 1) * sizeof *freel);
    int *stamp = malloc(((size_t)g->n + 1) * sizeof *stamp);
    size_t maxreg = 0;
    if (st->regof && lastuse && freel && stamp) {
        for (int v = 0; v < g->n; v++)
            st->regof[v] = stamp[v] = -1;
        maxreg = alloc_regs(s, st->regof, lastuse, freel, stamp);
    }
    free(lastuse);
    free(freel);
    free(stamp);
    st->nregs = maxreg;
    st->nslots = s->nslots;
    st->vals = calloc((size_t)g->n + 1, sizeof *st->vals);
    st->symv = calloc((size_t)g->nsyms + 1, sizeof *st->symv);
    st->last = calloc((size_t)g->nsyms + 1, sizeof *st->last);
    st->slots = calloc((size_t)s->nslots + 1, sizeof *st->slots);
    st->slotcap = calloc((size_t)s->nslots + 1, sizeof *st->slotcap);
    st->slotneed = calloc((size_t)s->nslots + 1, sizeof *st->slotneed);
    st->regs = malloc((maxreg + 2) * TGI_BLOCK * sizeof(reg));
    st->consts = calloc((size_t)g->n + 1, sizeof *st->consts);
    st->pos = malloc(((size_t)g->n + 1) * sizeof *st->pos);
    st->scans = calloc((size_t)s->nsteps + 1, sizeof *st->scans);
    st->nscansteps = st->scans ? (size_t)s->nsteps : 0;
    for (int k = 0; st->scans && k < s->nsteps; k++)
        if (s->steps[k].kind == TGH_SCAN && !(st->scans[k] = tgSc_state_new(g->nodes[s->steps[k].node].scan))) {
            tgI_free(st);
            return -1;
        }
    if (!st->pos || !st->last || !st->scans || !st->regof || !st->vals || !st->symv || !st->slots || !st->slotcap || !st->slotneed ||
        !st->regs || !st->consts) {
        tgI_free(st);
        return -1;
    }
    return 0;
}

void tgI_free(tgI_state *st)
{
    for (int i = 0; st->slots && i < st->nslots; i++)
        free(st->slots[i]);
    free(st->vals), free(st->symv), free(st->slots), free(st->slotcap);
    free(st->slotneed), free(st->regs), free(st->consts), free(st->regof), free(st->kern);
    free(st->pos), free(st->last);
    /* a scan state is made per scan step; the others are NULL */
    for (size_t k = 0; st->scans && k < st->nscansteps; k++)
        tgSc_state_free(st->scans[k]);
    free(st->scans);
    memset(st, 0, sizeof *st);
}

/* Shapes and strides of the computed nodes, constants, and the workspace
 * for the sizes bound in st->symv.  They depend on nothing else, so a
 * call binding the sizes of the previous one skips this (st->last). */
static int shape_nodes(const tgH_sched *s, tgI_state *st, tg_error *err)
{
    const tgV_graph *g = s->g;
    for (int v = 0; v < g->n; v++) {
        const tgV_node *n = &g->nodes[v];
        tgI_arr *a = &st->vals[v];
        if (n->op == TGV_INPUT)
            continue;
        a->dtype = n->dtype, a->ndim = n->ndim;
        for (int d = 0; d < n->ndim; d++)
            a->shape[d] = conc(st, n->shape[d]);
        tgI_c_strides(a);
        if (n->op == TGV_CONST) {
            reg r;
            if (tgV_is_float(n->dtype))
                r.f = n->value.f;
            else
                r.i = n->value.i;
            tgI_st_elem((char *)&st->consts[v], n->dtype, r);
        }
    }
    memset(st->slotneed, 0, (size_t)s->nslots * sizeof *st->slotneed);
    for (int v = 0; v < g->n; v++)
        if (s->slot[v] >= 0) {
            size_t b = (size_t)tgI_count(&st->vals[v]) * tgV_dtype_size(g->nodes[v].dtype);
            if (b > st->slotneed[s->slot[v]])
                st->slotneed[s->slot[v]] = b;
        }
    for (int k = 0; k < s->nslots; k++)
        if (st->slotneed[k] > st->slotcap[k] || !st->slots[k]) {
            size_t want = st->slotneed[k] ? st->slotneed[k] : 8;
            char *p = realloc(st->slots[k], want);
            if (!p)
                return tgE_nomem(err), -1;
            st->slots[k] = p, st->slotcap[k] = want;
        }
    memcpy(st->last, st->symv, (size_t)g->nsyms * sizeof *st->last);
    st->shaped = 1;
    return 0;
}

/* Shapes of all nodes, and output arrays (allocated when asked). */
static int prepare(const tgH_sched *s, tgI_state *st, tg_array *out, unsigned char *owned, tg_error *err)
{
    const tgV_graph *g = s->g;
    bool same = st->shaped;
    for (int k = 0; same && k < g->nsyms; k++)
        same = st->last[k] == st->symv[k];
    if (!same) {
        st->shaped = 0;
        if (shape_nodes(s, st, err) < 0)
            return -1;
    }
    /* output strides of the last call are overwritten below; views and
     * reshapes set theirs when they run */
    for (int v = 0; v < g->n; v++) {
        tgV_op op = g->nodes[v].op;
        if (op != TGV_INPUT)
            st->vals[v].data = op == TGV_CONST ? (char *)&st->consts[v]
                               : s->slot[v] >= 0 ? st->slots[s->slot[v]] : NULL;
    }
    for (int i = 0; i < g->noutputs; i++) {
        const tgI_arr *a = &st->vals[g->outputs[i]];
        tg_array *o = &out[i];
        if (!o->data) {
            size_t bytes = (size_t)tgI_count(a) * tgV_dtype_size(a->dtype);
            if (!(o->data = malloc(bytes ? bytes : 1)))
                return tgE_nomem(err), -1;
            owned[i] = 1;
            /* C order: a's strides may be a view's of the last call (a
             * reversed slice's are negative), not this block's */
            void *data = o->data;
            tg_array_init(o, a->dtype, a->ndim, a->shape, data);
            continue;
        }
        bool ok = o->dtype == a->dtype && o->ndim == a->ndim;
        for (int d = 0; ok && d < a->ndim; d++)
            ok = o->shape[d] == a->shape[d];
        if (!ok) {
            char want[120], got[120];
            tgI_arr tmp = {.ndim = o->ndim < 0 || o->ndim > TGV_MAXDIM ? 0 : o->ndim};
            memcpy(tmp.shape, o->shape, sizeof tmp.shape);
            tgE_set(err, TG_ERR_RANGE, NULL, 0, 0,
                    "kernels: output %d: expected %s %s, got %s %s", i, tgV_dtype_name(a->dtype),
                    shape_str(a, want, sizeof want), tgV_dtype_name(o->dtype),
                    shape_str(&tmp, got, sizeof got));
            return -1;
        }
    }
    /* computed outputs write straight into the output arrays (over any
     * slot: a node is written where its first output position is) */
    for (int i = 0; i < g->noutputs; i++) {
        int v = g->outputs[i];
        tgV_op op = g->nodes[v].op;
        if (s->output[v] != i || op == TGV_INPUT || op == TGV_CONST || op == TGV_TRANSPOSE ||
            op == TGV_DIMSHUFFLE || op == TGV_RESHAPE || op == TGV_SUBTENSOR)
            continue;
        tgI_arr *a = &st->vals[v];
        a->data = out[i].data;
        memcpy(a->strides, out[i].strides, (size_t)a->ndim * sizeof *a->strides);
    }
    return 0;
}

int tgI_bind(const tgH_sched *s, tgI_state *st, const tg_array *in, tg_array *out, tg_error *err)
{
    unsigned char owned[s->g->noutputs > 0 ? s->g->noutputs : 1];
    memset(owned, 0, sizeof owned);     /* outputs come with their data: nothing is allocated */
    return bind_inputs(s, st, in, err) < 0 || prepare(s, st, out, owned, err) < 0 ? -1 : 0;
}

static int exec_steps(const tgH_sched *s, tgI_state *st, tg_array *out, int blocked, tg_error *err);

int tgI_run(const tgH_sched *s, tgI_state *st, const tg_array *in, tg_array *out, tg_error *err)
{
    const tgV_graph *g = s->g;
    unsigned char owned[g->noutputs > 0 ? g->noutputs : 1];
    memset(owned, 0, sizeof owned);
    int rc = -1;
    if (bind_inputs(s, st, in, err) < 0 || prepare(s, st, out, owned, err) < 0 ||
        exec_steps(s, st, out, 1, err) < 0)
        goto done;
    rc = 0;
done:
    if (rc < 0)
        for (int i = 0; i < g->noutputs; i++)
            if (owned[i]) {
                free(out[i].data);
                out[i].data = NULL;
            }
    return rc;
}

/* Outputs of step given a caller's input (not kept) to write in: they
 * reuse its memory when it is laid out as theirs. */
void tgI_donated(const tgH_sched *s, tgI_state *st, const tgH_step *step)
{
    for (int j = 0; j < step->nouts; j++) {
        int w = step->outs[j], a = s->inplace[w];
        if (a >= 0 && s->output[w] < 0 && tgI_is_c_contig(&st->vals[a]))
            st->vals[w].data = st->vals[a].data;
    }
}

/* Run step k of s. */
int tgI_run_step(const tgH_sched *s, tgI_state *st, int k, tg_error *err)
{
    const tgV_graph *g = s->g;
    int *pos = st->pos;
    {
        const tgH_step *step = &s->steps[k];
        int v = step->node;
        if (__builtin_expect(st->intrp && *st->intrp, 0))
            return tgE_set(err, TG_ERR_RANGE, NULL, 0, 0, "interrupted"), -1;
        switch (step->kind) {
        case TGH_LOOP:
            tgI_donated(s, st, step);
            if (step->nreds) {
                if (run_fused(s, st, k, err) < 0)
                    return -1;
            } else if (st->kern && st->kern[k]) {
                run_native(st, step, st->kern[k], NULL);
            } else {
                tgI_run_loop(s, st, step, pos, NULL);
            }
            break;
        case TGH_UPDATE:
            tgI_donated(s, st, step);
            if (g->nodes[v].op == TGV_INC_TAKE ? tgAr_inc_take(s, st, v, st->kern ? st->kern[k] : NULL, err) < 0
                                               : run_update(s, st, v, st->kern ? st->kern[k] : NULL, err) < 0)
                return -1;
            break;
        case TGH_UPDATE_LOOP:
            tgI_donated(s, st, step);
            if (run_update_loop(s, st, k, st->kern ? st->kern[k] : NULL, err) < 0)
                return -1;
            break;
        case TGH_REDUCE:
            if (tgAr_op(g->nodes[v].op)) {
                tgI_donated(s, st, step);
                if (tgAr_run(s, st, v, err) < 0)
                    return -1;
            } else if (run_reduce(s, st, v, err) < 0) {
                return -1;
            }
            break;
        case TGH_DOT:
        case TGH_GEMM:
            if (tgPr_run_dot(s, st, v, err) < 0)
                return -1;
            break;
        case TGH_VIEW:
            if (g->nodes[v].op == TGV_SUBTENSOR) {
                if (tgIx_view(g, st, v, err) < 0)
                    return -1;
            } else {
                run_view(s, st, v);
            }
            break;
        case TGH_RESHAPE:
            if (run_reshape(s, st, v, err) < 0)
                return -1;
            break;
        case TGH_RANDOM:
            if (tgRn_run(s, st, v, err) < 0)
                return -1;
            break;
        case TGH_SCAN:
            tgI_donated(s, st, step);
            if (tgSc_run(s, st, step, st->scans[k], st->kern ? st->kern[k] : NULL, err) < 0)
                return -1;
            break;
        }
    }
    return 0;
}

/* Run the steps, row blocks where they apply (blocked), then copy the
 * outputs not written in place. */
static int exec_steps(const tgH_sched *s, tgI_state *st, tg_array *out, int blocked, tg_error *err)
{
    const tgV_graph *g = s->g;
    for (int k = 0; k < s->nsteps; k++) {
        if (blocked && s->steps[k].kind == TGH_DOT) {
            int last = tgI_row_blocks(s, st, k, err);
            if (last < 0)
                return -1;
            if (last > 0) {
                k = last;
                continue;
            }
        }
        if (tgI_run_step(s, st, k, err) < 0)
            return -1;
    }
    for (int i = 0; i < g->noutputs; i++) {
        const tgI_arr *a = &st->vals[g->outputs[i]];
        if (a->data == out[i].data)
            continue;
        tgI_arr o = {out[i].dtype, out[i].ndim, {0}, {0}, out[i].data};
        memcpy(o.shape, out[i].shape, sizeof o.shape);
        memcpy(o.strides, out[i].strides, sizeof o.strides);
        tgI_copy_arr(&o, a);
    }
    return 0;
}

int tgI_exec(const tgH_sched *s, tgI_state *st, tg_array *out, tg_error *err)
{
    return exec_steps(s, st, out, 0, err);
}
