/* arrange.c - ops that pick and arrange elements (module prefix tgAr_):
 *
 *   (argmax X [AXIS])  (argmin X [AXIS])    int64, AXIS dropped (none: of
 *                                           X flattened, 0-d); first of ties,
 *                                           the first NaN wins (numpy's rule)
 *   (concatenate AXIS X ...)                numpy's concatenate
 *   (stack AXIS X ...)                      numpy's stack
 *   (take X IDX)                            numpy's X[IDX], IDX an integer
 *                                           array (rows of X)
 *   (inc_take X V IDX)                      X with V added at rows IDX
 *                                           (numpy's np.add.at), take's vjp
 *   (one_hot Y K)                           float64 Y.shape + (K,)
 *   (concatenate_part AXIS G X BEFORE ...)  the part of G (a concatenate's
 *   (stack_part AXIS G X BEFORE ...)        adjoint) that X made, after the
 *                                           parts BEFORE made: their vjps
 *   (concatenate_inc AXIS Z V X BEFORE ...) Z with V added at that part: the
 *   (stack_inc AXIS Z V X BEFORE ...)       parts' vjps
 *
 * Each is a step of its own (of kind TGH_REDUCE), run by this code on the
 * compiled and the interpreted path alike: they move data, they do no
 * arithmetic a generated loop would do faster. */
#include "config.h"

#include <gc/gc.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "arrange.h"
#include "error.h"

bool tgAr_op(tgV_op op) { return op >= TGV_ARGMAX && op <= TGV_ONE_HOT; }

/* ---- typing ------------------------------------------------------------- */

/* An axis literal t for rank ndim (negative counts from the end). */
static int axis_of(tgV_builder *b, tgV_node *n, tg_term *t, int ndim, int64_t *out)
{
    int64_t a;
    if (tg_kind_of(t) != TG_INT || tg_int_get(t, &a) < 0)
        return tgV_fail(b, n->term, "the axis is an integer literal");
    if (a < -ndim || a >= ndim) {
        char msg[120];
        snprintf(msg, sizeof msg, "axis %lld is out of range for %d axes", (long long)a, ndim);
        return tgV_fail(b, n->term, msg);
    }
    *out = a < 0 ? a + ndim : a;
    return 0;
}

static int type_argmax(tgV_builder *b, tgV_node *n, tg_term **argt, int nt)
{
    tgV_graph *g = tgV_graph_of(b);
    const tgV_node *x = &g->nodes[n->args[0]];
    n->dtype = n->cdt = TG_INT64;
    size_t len = 0;
    const char *sym = nt > 1 && tg_kind_of(argt[1]) == TG_SYMBOL ? tg_symbol_name(argt[1], &len) : NULL;
    if (nt == 1 || (sym && len == 3 && memcmp(sym, "all", 3) == 0)) {
        n->axes = x->ndim ? (uint32_t)((1ull << x->ndim) - 1) : 0;
        return 0;
    }
    int64_t a;
    if (axis_of(b, n, argt[1], x->ndim, &a) < 0)
        return -1;
    n->axes = 1u << a;
    for (int d = 0; d < x->ndim; d++)
        if (d != a)
            n->shape[n->ndim++] = x->shape[d];
    return 0;
}

/* The size class of the sum of parts[0..k): static when all are, else a
 * derived class bound at call time. */
static int sum_size(tgV_builder *b, tgV_node *n, tgV_size *parts, int k, tgV_size *out)
{
    tgV_graph *g = tgV_graph_of(b);
    int64_t total = 0;
    bool all_static = true;
    for (int i = 0; i < k; i++) {
        parts[i] = tgV_canon(g, parts[i]);
        if (parts[i] < 0)
            all_static = false;
        else
            total += parts[i];
    }
    if (all_static) {
        *out = total;
        return 0;
    }
    if (g->ndsums == g->dsumcap) {
        int nc = g->dsumcap ? 2 * g->dsumcap : 4;
        tgAr_dsum *nd = GC_MALLOC((size_t)nc * sizeof *nd);
        if (!nd)
            return tgE_nomem(tgV_err_of(b)), -1;
        if (g->ndsums)
            memcpy(nd, g->dsums, (size_t)g->ndsums * sizeof *nd);
        g->dsums = nd, g->dsumcap = nc;
    }
    char name[64];
    snprintf(name, sizeof name, "concatenate:%d", g->ndsums);
    tg_term *sym = tg_symbol_cstr(g->ctx, name);
    int cls = sym ? tgV_new_sym(g, sym, tgV_err_of(b)) : (tgE_nomem(tgV_err_of(b)), -1);
    tgV_size *p = GC_MALLOC_ATOMIC((size_t)k * sizeof *p);
    if (cls < 0 || !p)
        return cls < 0 ? -1 : (tgE_nomem(tgV_err_of(b)), -1);
    memcpy(p, parts, (size_t)k * sizeof *p);
    g->dsums[g->ndsums++] = (tgAr_dsum){cls, k, p, n->term};
    *out = -(tgV_size)cls - 1;
    return 0;
}

const tgAr_dsum *tgAr_dsum_of(const tgV_graph *g, tgV_size c)
{
    for (int i = 0; i < g->ndsums; i++)
        if (-(tgV_size)g->dsums[i].cls - 1 == c)
            return &g->dsums[i];
    return NULL;
}

int tgAr_derive(tgV_builder *b, tg_term *t, tgV_size *parts, int k, tgV_size *out)
{
    tgV_node n = {.term = t};
    return sum_size(b, &n, parts, k, out);
}

/* concatenate and stack: every X of one rank (stack: one shape), the
 * promoted dtype. */
static int type_join(tgV_builder *b, tgV_node *n, tg_term **argt)
{
    tgV_graph *g = tgV_graph_of(b);
    bool stack = n->op == TGV_STACK;
    const tgV_node *x0 = &g->nodes[n->args[0]];
    int r = x0->ndim;
    if (!stack && r == 0)
        return tgV_fail(b, n->term, "a 0-d array cannot be concatenated (stack it)");
    int64_t a;
    if (axis_of(b, n, argt[0], stack ? r + 1 : r, &a) < 0)
        return -1;
    n->value.i = a;
    tg_dtype d = x0->dtype;
    tgV_size *parts = GC_MALLOC_ATOMIC((size_t)n->nargs * sizeof *parts);
    if (!parts)
        return tgE_nomem(tgV_err_of(b)), -1;
    for (int i = 0; i < n->nargs; i++) {
        const tgV_node *x = &g->nodes[n->args[i]];
        if (x->ndim != r)
            return tgV_fail(b, n->term, "the arrays joined must have the same number of axes");
        d = tgV_promote2(d, x->dtype);
        for (int k = 0; k < r; k++)
            if ((stack || k != a) &&
                tgV_unify(b, n->term, x->shape[k], x0->shape[k], "the arrays joined") < 0)
                return -1;
        if (!stack)
            parts[i] = x->shape[a];
    }
    n->dtype = n->cdt = d;
    n->ndim = stack ? r + 1 : r;
    for (int k = 0, j = 0; k < n->ndim; k++) {
        if (k == a) {
            if (stack)
                n->shape[k] = n->nargs;
            else if (sum_size(b, n, parts, n->nargs, &n->shape[k]) < 0)
                return -1;
            if (!stack)
                j++;
            continue;
        }
        n->shape[k] = x0->shape[j++];
    }
    return 0;
}

/* (concatenate_part AXIS G X BEFORE ...), (stack_part ...): X's shape, G's
 * dtype. */
static int type_part(tgV_builder *b, tgV_node *n, tg_term **argt)
{
    tgV_graph *g = tgV_graph_of(b);
    bool stack = n->op == TGV_STACK_PART;
    const tgV_node *gn = &g->nodes[n->args[0]], *x = &g->nodes[n->args[1]];
    if (gn->ndim != x->ndim + (stack ? 1 : 0))
        return tgV_fail(b, n->term, "the adjoint's rank does not fit the part");
    int64_t a;
    if (axis_of(b, n, argt[0], gn->ndim, &a) < 0)
        return -1;
    n->value.i = a;
    n->dtype = n->cdt = gn->dtype;
    n->ndim = x->ndim;
    memcpy(n->shape, x->shape, sizeof n->shape);
    /* the other axes of G are X's (a stack's G has one more, at a) */
    for (int k = 0, j = 0; k < gn->ndim; k++, j++) {
        if (k == a) {
            j -= stack;
            continue;
        }
        if (tgV_unify(b, n->term, gn->shape[k], x->shape[j], "the part") < 0)
            return -1;
    }
    return 0;
}

static bool is_int(tg_dtype d) { return d == TG_INT64 || d == TG_INT32; }

static int type_take(tgV_builder *b, tgV_node *n)
{
    tgV_graph *g = tgV_graph_of(b);
    bool inc = n->op == TGV_INC_TAKE;
    const tgV_node *x = &g->nodes[n->args[0]], *ix = &g->nodes[n->args[inc ? 2 : 1]];
    if (x->ndim < 1)
        return tgV_fail(b, n->term, "take needs an array of at least one axis");
    if (!is_int(ix->dtype))
        return tgV_fail(b, n->term, "the indices are an int64 or int32 array");
    if (ix->ndim + x->ndim - 1 > TGV_MAXDIM)
        return tgV_fail(b, n->term, "too many axes");
    n->dtype = n->cdt = x->dtype;
    if (inc) {      /* X's shape; V of the shape take gives */
        const tgV_node *v = &g->nodes[n->args[1]];
        n->ndim = x->ndim;
        memcpy(n->shape, x->shape, sizeof n->shape);
        if (v->ndim != ix->ndim + x->ndim - 1)
            return tgV_fail(b, n->term, "the value must have the shape of (take X IDX)");
        for (int d = 0; d < v->ndim; d++) {
            tgV_size want = d < ix->ndim ? ix->shape[d] : x->shape[d - ix->ndim + 1];
            if (tgV_unify(b, n->term, v->shape[d], want, "the value and (take X IDX)") < 0)
                return -1;
        }
        return 0;
    }
    for (int d = 0; d < ix->ndim; d++)
        n->shape[n->ndim++] = ix->shape[d];
    for (int d = 1; d < x->ndim; d++)
        n->shape[n->ndim++] = x->shape[d];
    return 0;
}

static int type_one_hot(tgV_builder *b, tgV_node *n, tg_term **argt)
{
    tgV_graph *g = tgV_graph_of(b);
    const tgV_node *y = &g->nodes[n->args[0]];
    int64_t k;
    if (!is_int(y->dtype))
        return tgV_fail(b, n->term, "one_hot's labels are an int64 or int32 array");
    if (tg_kind_of(argt[1]) != TG_INT || tg_int_get(argt[1], &k) < 0 || k < 1)
        return tgV_fail(b, n->term, "one_hot's count of classes is an integer literal >= 1");
    if (y->ndim == TGV_MAXDIM)
        return tgV_fail(b, n->term, "too many axes");
    n->dtype = n->cdt = TG_FLOAT64;
    n->value.i = k;
    n->ndim = y->ndim + 1;
    memcpy(n->shape, y->shape, sizeof n->shape);
    n->shape[y->ndim] = k;
    return 0;
}

/* (concatenate_inc AXIS Z V X BEFORE ...), (stack_inc ...): Z's type; V
 * of X's shape, the part of Z X made. */
static int type_inc_part(tgV_builder *b, tgV_node *n, tg_term **argt)
{
    tgV_graph *g = tgV_graph_of(b);
    const tgV_node *v = &g->nodes[n->args[1]], *x = &g->nodes[n->args[2]];
    if (v->ndim != x->ndim)
        return tgV_fail(b, n->term, "the value must have the shape of the part");
    for (int d = 0; d < v->ndim; d++)
        if (tgV_unify(b, n->term, v->shape[d], x->shape[d], "the value and the part") < 0)
            return -1;
    /* Z is typed as the G of the part op */
    tgV_node part = *n;
    part.op = n->op == TGV_CONCAT_INC ? TGV_CONCAT_PART : TGV_STACK_PART;
    int pargs[2] = {n->args[0], n->args[2]};
    part.args = pargs, part.nargs = 2;
    if (type_part(b, &part, argt) < 0)
        return -1;
    const tgV_node *z = &g->nodes[n->args[0]];
    n->value.i = part.value.i;
    n->dtype = n->cdt = z->dtype;
    n->ndim = z->ndim;
    memcpy(n->shape, z->shape, sizeof n->shape);
    return 0;
}

int tgAr_type(tgV_builder *b, tgV_node *n, tg_term **argt, int nt)
{
    n->weak = false;
    switch (n->op) {
    case TGV_ARGMAX: case TGV_ARGMIN: return type_argmax(b, n, argt, nt);
    case TGV_CONCAT: case TGV_STACK: return type_join(b, n, argt);
    case TGV_CONCAT_PART: case TGV_STACK_PART: return type_part(b, n, argt);
    case TGV_CONCAT_INC: case TGV_STACK_INC: return type_inc_part(b, n, argt);
    case TGV_TAKE: case TGV_INC_TAKE: return type_take(b, n);
    default: return type_one_hot(b, n, argt);
    }
}

bool tgAr_derived(const tgV_graph *g, tgV_size c)
{
    for (int i = 0; i < g->ndsums; i++)
        if (tgV_canon(g, -(tgV_size)g->dsums[i].cls - 1) == c)
            return true;
    return false;
}

int tgAr_bind(const tgV_graph *g, int64_t *symv, bool partial, tg_error *err)
{
    int left = 0;
    for (int i = 0; i < g->ndsums; i++) {
        const tgAr_dsum *d = &g->dsums[i];
        int64_t total = 0;
        char buf[200];
        bool later = false;
        for (int k = 0; k < d->nparts; k++) {
            tgV_size p = tgV_canon(g, d->parts[k]);
            int64_t v = p >= 0 ? p : symv[-p - 1];
            if (v < 0 && partial) {     /* a slice's, perhaps: bound later */
                later = true;
                break;
            }
            if (v < 0) {
                tgE_set(err, TG_ERR_RANGE, NULL, 0, 0, "kernels: in %s: a size joined is not bound",
                        tgV_show(d->term, buf, sizeof buf));
                return -1;
            }
            total += v;
        }
        if (later) {
            left = 1;
            continue;
        }
        tgV_size r = tgV_canon(g, -(tgV_size)d->cls - 1);
        int64_t want = r >= 0 ? r : symv[-r - 1];
        if (want < 0) {
            symv[-r - 1] = total;
        } else if (want != total) {
            tgE_set(err, TG_ERR_RANGE, NULL, 0, 0,
                    "kernels: in %s: the arrays joined have %lld elements along the axis where %lld are expected",
                    tgV_show(d->term, buf, sizeof buf), (long long)total, (long long)want);
            return -1;
        }
    }
    return left;
}

/* ---- running --------------------------------------------------------------- */


/* Element at p (dtype sd) stored at q (dtype dd), or added to it. */
static void put(char *q, tg_dtype dd, const char *p, tg_dtype sd, bool add)
{
    if (dd == sd && !add) {
        memcpy(q, p, tgV_dtype_size(dd));
        return;
    }
    switch (dd) {
    case TG_FLOAT64: { double v = tgI_ld_f(p, sd) + (add ? tgI_ld_f(q, dd) : 0); memcpy(q, &v, 8); break; }
    case TG_FLOAT32: { float v = (float)(tgI_ld_f(p, sd) + (add ? tgI_ld_f(q, dd) : 0)); memcpy(q, &v, 4); break; }
    case TG_INT64: {
        int64_t v = (int64_t)((uint64_t)tgI_ld_i(p, sd) + (uint64_t)(add ? tgI_ld_i(q, dd) : 0));
        memcpy(q, &v, 8);
        break;
    }
    case TG_INT32: {
        int32_t v = (int32_t)(uint32_t)((uint64_t)tgI_ld_i(p, sd) + (uint64_t)(add ? tgI_ld_i(q, dd) : 0));
        memcpy(q, &v, 4);
        break;
    }
    default: *(unsigned char *)q = (tgI_ld_i(p, sd) | (add ? tgI_ld_i(q, dd) : 0)) != 0;
    }
}

/* dst = src (or += src) element by element, both of src's shape, any
 * strides and dtypes. */
static void copy(const tgI_arr *dst, const tgI_arr *src, bool add)
{
    int nd = src->ndim;
    int64_t es = (int64_t)tgV_dtype_size(src->dtype);
    if (!add && nd > 0 && src->dtype == dst->dtype && src->strides[nd - 1] == es && dst->strides[nd - 1] == es) {
        /* rows contiguous on both sides: a memcpy a row */
        tgI_arr s1 = *src, d1 = *dst;
        s1.ndim = d1.ndim = nd - 1;
        int64_t rows = tgI_count(&s1), idx[TGV_MAXDIM] = {0};
        const char *p = src->data;
        char *q = dst->data;
        for (int64_t i = 0; i < rows && src->shape[nd - 1] > 0; i++) {
            memcpy(q, p, (size_t)(src->shape[nd - 1] * es));
            for (int d = nd - 2; d >= 0; d--) {
                p += src->strides[d], q += dst->strides[d];
                if (++idx[d] < src->shape[d])
                    break;
                p -= src->strides[d] * src->shape[d], q -= dst->strides[d] * src->shape[d];
                idx[d] = 0;
            }
        }
        return;
    }
    int64_t n = tgI_count(src), idx[TGV_MAXDIM] = {0};
    const char *p = src->data;
    char *q = dst->data;
    for (int64_t i = 0; i < n; i++) {
        put(q, dst->dtype, p, src->dtype, add);
        for (int d = src->ndim - 1; d >= 0; d--) {
            p += src->strides[d], q += dst->strides[d];
            if (++idx[d] < src->shape[d])
                break;
            p -= src->strides[d] * src->shape[d], q -= dst->strides[d] * src->shape[d];
            idx[d] = 0;
        }
    }
}

/* a with axis ax cut to [off, off + len) (a view). */
static tgI_arr cut(const tgI_arr *a, int ax, int64_t off, int64_t len)
{
    tgI_arr r = *a;
    r.data = a->data + off * a->strides[ax];
    r.shape[ax] = len;
    return r;
}

/* a without axis ax, at index i along it (a view). */
static tgI_arr drop(const tgI_arr *a, int ax, int64_t i)
{
    tgI_arr r = *a;
    r.data = a->data + i * a->strides[ax];
    for (int d = ax; d + 1 < a->ndim; d++)
        r.shape[d] = a->shape[d + 1], r.strides[d] = a->strides[d + 1];
    r.ndim--;
    return r;
}

static int fail(const tgV_node *n, tg_error *err, const char *fmt, long long a, long long c)
{
    char buf[200], what[200];
    snprintf(what, sizeof what, fmt, a, c);
    tgE_set(err, TG_ERR_RANGE, NULL, 0, 0, "kernels: in %s: %s", tgV_show(n->term, buf, sizeof buf), what);
    return -1;
}

static int run_argmax(const tgV_node *n, const tgI_arr *x, const tgI_arr *y, tg_error *err)
{
    bool mx = n->op == TGV_ARGMAX, fl = tgV_is_float(x->dtype);
    /* the reduced axes last, as one flat range in C order */
    int kept[TGV_MAXDIM], red[TGV_MAXDIM], nk = 0, nr = 0;
    int64_t len = 1;
    for (int d = 0; d < x->ndim; d++) {
        if (n->axes & (1u << d))
            red[nr++] = d, len *= x->shape[d];
        else
            kept[nk++] = d;
    }
    int64_t nout = tgI_count(y);
    if (len == 0 && nout > 0)
        return fail(n, err, mx ? "argmax of an empty axis" : "argmin of an empty axis", 0, 0);
    int64_t oi[TGV_MAXDIM] = {0};
    char *q = y->data;
    for (int64_t o = 0; o < nout; o++) {
        const char *base = x->data;
        for (int k = 0; k < nk; k++)
            base += oi[k] * x->strides[kept[k]];
        int64_t ri[TGV_MAXDIM] = {0}, best = 0;
        double bf = 0;
        int64_t bi = 0;
        const char *p = base;
        for (int64_t j = 0; j < len; j++) {
            if (fl) {
                double v = tgI_ld_f(p, x->dtype);
                if (j == 0 || (bf == bf && (v != v || (mx ? v > bf : v < bf))))
                    bf = v, best = j;
            } else {
                int64_t v = tgI_ld_i(p, x->dtype);
                if (j == 0 || (mx ? v > bi : v < bi))
                    bi = v, best = j;
            }
            for (int k = nr - 1; k >= 0; k--) {
                p += x->strides[red[k]];
                if (++ri[k] < x->shape[red[k]])
                    break;
                p -= x->strides[red[k]] * x->shape[red[k]];
                ri[k] = 0;
            }
        }
        memcpy(q, &best, 8);
        q += tgI_next(y->ndim, y->shape, y->strides, oi);
    }
    return 0;
}

/* Index i of take's IDX as a row of an axis of size n (negative from the
 * end); -1 with err when out of range. */
static int row_of(const tgV_node *n, const tgI_arr *ix, int64_t i, int64_t rows, int64_t *out, tg_error *err)
{
    int64_t idx[TGV_MAXDIM] = {0}, k = i;
    const char *p = ix->data;
    for (int d = ix->ndim - 1; d >= 0; d--) {
        idx[d] = k % ix->shape[d], k /= ix->shape[d];
        p += idx[d] * ix->strides[d];
    }
    int64_t r = tgI_ld_i(p, ix->dtype);
    if (r < -rows || r >= rows)
        return fail(n, err, "index %lld is out of range for an axis of size %lld", (long long)r, (long long)rows);
    *out = r < 0 ? r + rows : r;
    return 0;
}

/* Element i of the index vector ix (int64 or int32). */
static int64_t index_at(const tgI_arr *ix, int64_t i)
{
    const char *p = ix->data + i * ix->strides[0];
    return ix->dtype == TG_INT64 ? *(const int64_t *)p : *(const int32_t *)p;
}

enum { TAKE_AHEAD = 8 };

/* take: row IDX[i] of X to row i of Y (Y flattened over IDX's axes);
 * inc_take: X copied, then row i of V added to its row IDX[i]. */
static int run_take(const tgV_node *n, tgI_state *st, const tgI_arr *y, tg_error *err)
{
    bool inc = n->op == TGV_INC_TAKE;
    const tgI_arr *x = &st->vals[n->args[0]], *ix = &st->vals[n->args[inc ? 2 : 1]];
    int64_t ni = tgI_count(ix), rows = x->shape[0];
    tgI_arr src = inc ? st->vals[n->args[1]] : *x, dst = inc ? *x : *y;
    if (inc) {
        if (y->data != x->data)     /* else the buffer plan gave Y X's memory */
            copy(y, x, false);
        dst = *y;
    }
    /* src (take: X; inc_take: V) and dst as rows: one axis for IDX's */
    tgI_arr *flat = inc ? &src : &dst;
    int lead = ix->ndim;
    if (lead != 1) {
        /* IDX's axes are C-contiguous in Y / V only when their strides say
         * so; walk them one index at a time instead */
        for (int64_t i = 0; i < ni; i++) {
            int64_t r, k = i;
            if (row_of(n, ix, i, rows, &r, err) < 0)
                return -1;
            tgI_arr a = *flat;
            for (int d = lead - 1; d >= 0; d--) {
                a.data += (k % flat->shape[d]) * flat->strides[d];
                k /= flat->shape[d];
            }
            a.ndim = flat->ndim - lead;
            memmove(a.shape, flat->shape + lead, (size_t)a.ndim * sizeof *a.shape);
            memmove(a.strides, flat->strides + lead, (size_t)a.ndim * sizeof *a.strides);
            tgI_arr other = drop(inc ? &dst : &src, 0, r);
            if (inc)
                copy(&other, &a, true);
            else
                copy(&a, &other, false);
        }
        return 0;
    }
    /* the common case, rows of X and of Y each one block of memory: a
     * memcpy a row, the index read in place */
    tgI_arr rx = drop(x, 0, 0), ry = drop(y, 0, 0);
    size_t rb = (size_t)tgI_count(&rx) * tgV_dtype_size(x->dtype);
    if (!inc && tgI_is_c_contig(&rx) && tgI_is_c_contig(&ry) && (ix->dtype == TG_INT64 || ix->dtype == TG_INT32)) {
        for (int64_t i = 0; i < ni; i++) {
            int64_t r = index_at(ix, i);
            if (r < -rows || r >= rows)
                return fail(n, err, "index %lld is out of range for an axis of size %lld", (long long)r,
                            (long long)rows);
            /* rows drawn at random (a minibatch) miss the cache: ask for
             * a row a few ahead while this one is copied */
            int64_t q = i + TAKE_AHEAD < ni ? index_at(ix, i + TAKE_AHEAD) : rows;
            if (q >= -rows && q < rows)
                for (size_t o = 0; o < rb; o += 64)
                    __builtin_prefetch(x->data + (q < 0 ? q + rows : q) * x->strides[0] + o);
            memcpy(y->data + i * y->strides[0], x->data + (r < 0 ? r + rows : r) * x->strides[0], rb);
        }
        return 0;
    }
    for (int64_t i = 0; i < ni; i++) {
        int64_t r;
        if (row_of(n, ix, i, rows, &r, err) < 0)
            return -1;
        tgI_arr row_x = drop(inc ? &dst : &src, 0, r), row_i = drop(flat, 0, i);
        if (inc)
            copy(&row_x, &row_i, true);
        else
            copy(&row_i, &row_x, false);
    }
    return 0;
}

/* inc_take: every index checked before anything is written, then by
 * generated loop fn (codegen.c, put_inc_take): X into Y (unless Y has
 * X's memory) and the loop, given V's shape and the operands it expects;
 * without fn, run_take. */
int tgAr_inc_take(const tgH_sched *s, tgI_state *st, int v, tgJ_loop_fn fn, tg_error *err)
{
    const tgV_node *n = &s->g->nodes[v];
    const tgI_arr *x = &st->vals[n->args[0]], *val = &st->vals[n->args[1]], *ix = &st->vals[n->args[2]];
    const tgI_arr *y = &st->vals[v];
    int64_t ni = tgI_count(ix), rows = x->shape[0], r;
    for (int64_t i = 0; i < ni; i++)    /* on both paths: X, perhaps written in place, stays whole */
        if (row_of(n, ix, i, rows, &r, err) < 0)
            return -1;
    if (!fn)
        return tgAr_run(s, st, v, err);
    if (y->data != x->data)
        copy(y, x, false);
    int nd = val->ndim, nl = ix->ndim, sd = nd + 1;
    int64_t strides[3 * (TGV_MAXDIM + 1)] = {0};
    for (int d = 0; d < nd; d++) {
        strides[d] = val->strides[d];
        if (d < nl)
            strides[sd + d] = ix->strides[d];
        else
            strides[2 * sd + d] = y->strides[d - nl + 1];
    }
    strides[sd + nd] = rows, strides[2 * sd + nd] = y->strides[0];
    char *base[3] = {val->data, ix->data, y->data};
    fn(val->shape, base, strides);
    return 0;
}

static int run_one_hot(const tgV_node *n, const tgI_arr *yv, const tgI_arr *out, tg_error *err)
{
    int64_t k = n->value.i, m = tgI_count(yv), idx[TGV_MAXDIM] = {0};
    const char *p = yv->data;
    for (int64_t i = 0; i < m; i++) {
        int64_t c = tgI_ld_i(p, yv->dtype);
        if (c < 0 || c >= k)
            return fail(n, err, "label %lld is not among the %lld classes", (long long)c, (long long)k);
        char *q = out->data;
        for (int d = 0; d < yv->ndim; d++)
            q += idx[d] * out->strides[d];
        for (int64_t j = 0; j < k; j++) {
            double v = j == c;
            memcpy(q + j * out->strides[yv->ndim], &v, 8);
        }
        p += tgI_next(yv->ndim, yv->shape, yv->strides, idx);
    }
    return 0;
}

int tgAr_run(const tgH_sched *s, tgI_state *st, int v, tg_error *err)
{
    const tgV_node *n = &s->g->nodes[v];
    const tgI_arr *y = &st->vals[v];
    int ax = (int)n->value.i;
    switch (n->op) {
    case TGV_ARGMAX: case TGV_ARGMIN:
        return run_argmax(n, &st->vals[n->args[0]], y, err);
    case TGV_CONCAT: {
        int64_t off = 0;
        for (int i = 0; i < n->nargs; i++) {
            const tgI_arr *x = &st->vals[n->args[i]];
            tgI_arr part = cut(y, ax, off, x->shape[ax]);
            copy(&part, x, false);
            off += x->shape[ax];
        }
        return 0;
    }
    case TGV_STACK:
        for (int i = 0; i < n->nargs; i++) {
            tgI_arr part = drop(y, ax, i);
            copy(&part, &st->vals[n->args[i]], false);
        }
        return 0;
    case TGV_CONCAT_PART: case TGV_STACK_PART: {
        const tgI_arr *g = &st->vals[n->args[0]];
        int64_t off = 0;
        for (int i = 2; i < n->nargs; i++)
            off += n->op == TGV_STACK_PART ? 1 : st->vals[n->args[i]].shape[ax];
        tgI_arr part = n->op == TGV_STACK_PART ? drop(g, ax, off) : cut(g, ax, off, y->shape[ax]);
        copy(y, &part, false);
        return 0;
    }
    case TGV_CONCAT_INC: case TGV_STACK_INC: {
        bool stack = n->op == TGV_STACK_INC;
        int64_t off = 0;
        for (int i = 3; i < n->nargs; i++)
            off += stack ? 1 : st->vals[n->args[i]].shape[ax];
        if (y->data != st->vals[n->args[0]].data)   /* else Y has Z's memory */
            copy(y, &st->vals[n->args[0]], false);
        const tgI_arr *v = &st->vals[n->args[1]];
        tgI_arr part = stack ? drop(y, ax, off) : cut(y, ax, off, v->shape[ax]);
        copy(&part, v, true);
        return 0;
    }
    case TGV_TAKE: case TGV_INC_TAKE:
        return run_take(n, st, y, err);
    default:
        return run_one_hot(n, &st->vals[n->args[0]], y, err);
    }
}
