/* index.c - indexing and slicing, (subtensor X IDX ...) (module prefix
 * tgIx_).  A subtensor is always a view: an index adds index*stride to
 * the data pointer and drops its axis, a slice adds start*stride and
 * multiplies the stride by its step.  Slices follow numpy (negative
 * bounds count from the end, bounds are clipped, negative steps walk
 * backwards); a slice of a symbolic size makes a derived size class. */
#include "config.h"

#include <gc/gc.h>
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "index.h"

static int fail(tg_term *t, tg_error *err, const char *fmt, long long a, long long b)
{
    char buf[200], msg[200];
    snprintf(msg, sizeof msg, fmt, a, b);
    tgE_set(err, TG_ERR_TYPE, NULL, 0, 0, "kernels: in %s: %s", tgV_show(t, buf, sizeof buf), msg);
    return -1;
}

static bool is_sym(const tg_term *t, const char *name)
{
    size_t len;
    const char *s = tg_symbol_name(t, &len);
    return s && len == strlen(name) && memcmp(s, name, len) == 0;
}

static bool is_slice(const tg_term *t) { return tg_kind_of(t) == TG_PAIR && is_sym(tg_car(t), "slice"); }

bool tgIx_is_index_tensor(const tg_term *idx) { return tg_kind_of(idx) == TG_PAIR && !is_slice(idx); }

int64_t tgIx_slice_len(int64_t n, const tgIx_axis *a, int64_t *first)
{
    int64_t step = a->has_step ? a->step : 1, lo = step > 0 ? 0 : -1, hi = step > 0 ? n : n - 1;
    int64_t start = step > 0 ? 0 : n - 1, stop = step > 0 ? n : -1;
    /* as Python's PySlice_AdjustIndices: negative bounds count from the
     * end, then both are clipped to [lo, hi] */
    if (a->has_start) {
        start = a->start < 0 ? a->start + n : a->start;
        start = start < lo ? lo : start > hi ? hi : start;
    }
    if (a->has_stop) {
        stop = a->stop < 0 ? a->stop + n : a->stop;
        stop = stop < lo ? lo : stop > hi ? hi : stop;
    }
    if (first)
        *first = start;
    if (step > 0)
        return stop > start ? (stop - start - 1) / step + 1 : 0;
    return start > stop ? (start - stop - 1) / -step + 1 : 0;
}

/* One bound of a slice: an integer or none. */
static int slice_part(tg_term *t, tg_term *part, int64_t *v, bool *has, tg_error *err)
{
    if (is_sym(part, "none")) {
        *has = false;
        return 0;
    }
    if (tg_kind_of(part) != TG_INT || tg_int_get(part, v) < 0)
        return fail(t, err, "a slice bound is an integer literal or none", 0, 0);
    *has = true;
    return 0;
}

static int parse_slice(tg_term *t, tg_term *sl, tgIx_axis *a, tg_error *err)
{
    tg_term *p[4];
    if (tg_elements(sl, p, 4) != 4 || tg_tail(sl) != tg_nil())
        return fail(t, err, "a slice is (slice START STOP STEP)", 0, 0);
    a->kind = TGIX_SLICE;
    if (slice_part(t, p[1], &a->start, &a->has_start, err) < 0 ||
        slice_part(t, p[2], &a->stop, &a->has_stop, err) < 0 ||
        slice_part(t, p[3], &a->step, &a->has_step, err) < 0)
        return -1;
    if (a->has_step && a->step == 0)
        return fail(t, err, "a slice step cannot be zero", 0, 0);
    if (a->has_step && a->step == INT64_MIN)
        return fail(t, err, "the slice step is out of range", 0, 0);
    return 0;
}

bool tgIx_derived(const tgV_graph *g, tgV_size c)
{
    for (int i = 0; i < g->ndsizes; i++)
        if (tgV_canon(g, -(tgV_size)g->dsizes[i].cls - 1) == c)
            return true;
    return false;
}

static bool same_slice(const tgIx_axis *a, const tgIx_axis *b)
{
    return a->has_start == b->has_start && a->has_stop == b->has_stop && a->has_step == b->has_step &&
           (!a->has_start || a->start == b->start) && (!a->has_stop || a->stop == b->stop) &&
           (!a->has_step || a->step == b->step);
}

/* "n:1::-1": the symbol naming slice a of class src, as Python writes it. */
static tg_term *derived_name(tgV_graph *g, tgV_size src, const tgIx_axis *a)
{
    size_t len;
    const char *s = tg_symbol_name(g->syms[-src - 1], &len);
    char buf[200], part[3][24] = {"", "", ""};
    if (a->has_start)
        snprintf(part[0], sizeof part[0], "%lld", (long long)a->start);
    if (a->has_stop)
        snprintf(part[1], sizeof part[1], "%lld", (long long)a->stop);
    if (a->has_step)
        snprintf(part[2], sizeof part[2], "%lld", (long long)a->step);
    snprintf(buf, sizeof buf, "%.*s:%s:%s:%s", (int)(len < 100 ? len : 100), s, part[0], part[1], part[2]);
    return tg_symbol_cstr(g->ctx, buf);
}

/* The size of slice a of symbolic size src: the class of the same slice
 * made before, or a new derived class. */
static int derived_size(tgV_graph *g, tg_term *t, tgV_size src, const tgIx_axis *a, tgV_size *out,
                        tg_error *err)
{
    for (int i = 0; i < g->ndsizes; i++)
        if (tgV_canon(g, g->dsizes[i].src) == src && same_slice(&g->dsizes[i].sl, a)) {
            *out = tgV_canon(g, -(tgV_size)g->dsizes[i].cls - 1);
            return 0;
        }
    if (g->ndsizes == g->dscap) {
        int nc = g->dscap ? 2 * g->dscap : 8;
        tgIx_dsize *nd = GC_MALLOC((size_t)nc * sizeof *nd);
        if (!nd)
            return tgE_nomem(err), -1;
        if (g->ndsizes)
            memcpy(nd, g->dsizes, (size_t)g->ndsizes * sizeof *nd);
        g->dsizes = nd, g->dscap = nc;
    }
    tg_term *name = derived_name(g, src, a);
    int k = name ? tgV_new_sym(g, name, err) : (tgE_nomem(err), -1);
    if (k < 0)
        return -1;
    g->dsizes[g->ndsizes++] = (tgIx_dsize){k, src, *a, t};
    *out = -(tgV_size)k - 1;
    return 0;
}

/* The size of axis a (of size n) in the result. */
static int slice_size(tgV_graph *g, tgV_node *r, tgV_size n, const tgIx_axis *a, tgV_size *out, tg_error *err)
{
    n = tgV_canon(g, n);
    if (n >= 0) {
        *out = tgIx_slice_len(n, a, NULL);
        return 0;
    }
    /* all of the axis, either way round: [::1], [0::1], [::-1], [-1::-1]
     * (so that a rewrite dropping such a slice keeps the size's class) */
    bool fwd = !a->has_step || a->step == 1, back = a->has_step && a->step == -1;
    bool at_edge = !a->has_start || (fwd && a->start == 0) || (back && a->start == -1);
    if (at_edge && !a->has_stop && (fwd || back)) {
        *out = n;
        return 0;
    }
    return derived_size(g, r->term, n, a, out, err);
}

const tgIx_dsize *tgIx_dsize_of(const tgV_graph *g, tgV_size c)
{
    for (int i = 0; i < g->ndsizes; i++)
        if (-(tgV_size)g->dsizes[i].cls - 1 == c)
            return &g->dsizes[i];
    return NULL;
}

int tgIx_derive(tgV_graph *g, tg_term *t, tgV_size n, const tgIx_axis *a, tgV_size *out, tg_error *err)
{
    tgV_node r = {.term = t};
    return slice_size(g, &r, n, a, out, err);
}

int tgIx_type(tgV_graph *g, tgV_node *n, tg_term **argt, int nt, tg_error *err)
{
    const tgV_node *x = &g->nodes[n->args[0]];
    tgIx_spec *sp = GC_MALLOC_ATOMIC(sizeof *sp);
    if (!sp)
        return tgE_nomem(err), -1;
    memset(sp, 0, sizeof *sp);
    n->dtype = n->cdt = x->dtype, n->weak = x->weak;
    if (nt - 1 > x->ndim)
        return fail(n->term, err, "%lld indices for %lld axes", nt - 1, x->ndim);
    sp->n = nt - 1;
    for (int i = 1, dyn = 1; i < nt; i++) {
        tgIx_axis *a = &sp->ax[i - 1];
        tgV_size len = tgV_canon(g, x->shape[i - 1]);
        if (tgIx_is_index_tensor(argt[i])) {
            const tgV_node *ix = &g->nodes[n->args[dyn]];
            if (ix->ndim != 0 || (ix->dtype != TG_INT64 && ix->dtype != TG_INT32))
                return fail(n->term, err, "an index tensor must be a 0-d int64 or int32", 0, 0);
            a->kind = TGIX_DYNAMIC, a->arg = dyn++;
        } else if (tg_kind_of(argt[i]) == TG_INT) {
            a->kind = TGIX_INDEX;
            if (tg_int_get(argt[i], &a->start) < 0)
                return fail(n->term, err, "an index must fit in 64 bits", 0, 0);
            if (len >= 0 && (a->start < -len || a->start >= len))
                return fail(n->term, err, "index %lld is out of range for an axis of size %lld",
                            a->start, len);
        } else if (is_slice(argt[i])) {
            if (parse_slice(n->term, argt[i], a, err) < 0 ||
                slice_size(g, n, len, a, &n->shape[n->ndim++], err) < 0)
                return -1;
        } else {
            return fail(n->term, err, "an index is an integer, a 0-d integer tensor or (slice START STOP STEP)",
                        0, 0);
        }
    }
    for (int d = nt - 1; d < x->ndim; d++)
        n->shape[n->ndim++] = x->shape[d];
    n->index = sp;
    return 0;
}

int tgIx_bind(const tgV_graph *g, int64_t *symv, bool partial, tg_error *err)
{
    int left = 0;
    /* in order of creation: a slice of a derived size comes after it */
    for (int i = 0; i < g->ndsizes; i++) {
        const tgIx_dsize *d = &g->dsizes[i];
        tgV_size src = tgV_canon(g, d->src), r = tgV_canon(g, -(tgV_size)d->cls - 1);
        int64_t n = src >= 0 ? src : symv[-src - 1];
        char buf[200];
        if (n < 0 && partial) {     /* a concatenation's, perhaps: bound later */
            left = 1;
            continue;
        }
        if (n < 0) {
            tgE_set(err, TG_ERR_RANGE, NULL, 0, 0, "kernels: in %s: the size sliced is not bound",
                    tgV_show(d->term, buf, sizeof buf));
            return -1;
        }
        int64_t len = tgIx_slice_len(n, &d->sl, NULL);
        int64_t want = r >= 0 ? r : symv[-r - 1];
        if (want < 0) {
            symv[-r - 1] = len;
        } else if (want != len) {
            tgE_set(err, TG_ERR_RANGE, NULL, 0, 0,
                    "kernels: in %s: the slice has %lld elements where %lld are expected",
                    tgV_show(d->term, buf, sizeof buf), (long long)len, (long long)want);
            return -1;
        }
    }
    return left;
}

static int64_t load_index(const tgI_arr *a)
{
    if (a->dtype == TG_INT32) {
        int32_t v;
        memcpy(&v, a->data, 4);
        return v;
    }
    int64_t v;
    memcpy(&v, a->data, 8);
    return v;
}

/* The view that spec sp of node term (dynamic indices in st->vals[args[k]])
 * makes of x: y's data, strides and, with shape set, ndim and shape.  -1
 * with err on an index out of range. */
static int view_of(const tgIx_spec *sp, const tg_term *term, const int *args, const tgI_state *st,
                   const tgI_arr *x, tgI_arr *y, bool shape, tg_error *err)
{
    int64_t off = 0, count = 1;
    int od = 0;
    for (int d = 0; d < x->ndim; d++) {
        const tgIx_axis *a = d < sp->n ? &sp->ax[d] : NULL;
        int64_t size = x->shape[d];
        if (!a) {
            if (shape)
                y->shape[od] = size;
            y->strides[od++] = x->strides[d];
        } else if (a->kind == TGIX_SLICE) {
            int64_t first, len = tgIx_slice_len(size, a, &first);
            if (len > 0)
                off += first * x->strides[d];
            if (shape)
                y->shape[od] = len;
            /* a huge step only ever meets one element: no overflow */
            y->strides[od++] = len > 1 ? (a->has_step ? a->step : 1) * x->strides[d] : 0;
        } else {
            int64_t i = a->kind == TGIX_INDEX ? a->start : load_index(&st->vals[args[a->arg]]);
            if (i < -size || i >= size) {
                char buf[200];
                tgE_set(err, TG_ERR_RANGE, NULL, 0, 0,
                        "kernels: in %s: index %lld is out of range for axis %d of size %lld",
                        tgV_show(term, buf, sizeof buf), (long long)i, d, (long long)size);
                return -1;
            }
            off += (i < 0 ? i + size : i) * x->strides[d];
        }
    }
    if (shape)
        y->ndim = od, y->dtype = x->dtype;
    for (int d = 0; d < y->ndim; d++)
        count *= y->shape[d];
    /* an empty result points at its base: no address past an empty array */
    y->data = count ? x->data + off : x->data;
    return 0;
}

int tgIx_view(const tgV_graph *g, tgI_state *st, int v, tg_error *err)
{
    const tgV_node *n = &g->nodes[v];
    return view_of(n->index, n->term, n->args, st, &st->vals[n->args[0]], &st->vals[v], false, err);
}

int tgIx_part(const tgV_graph *g, const tgI_state *st, int v, const tgI_arr *x, tgI_arr *part, tg_error *err)
{
    const tgV_node *n = &g->nodes[v];
    return view_of(n->index, n->term, n->args, st, x, part, true, err);
}
