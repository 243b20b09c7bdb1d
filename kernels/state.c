/* state.c - shared variables and updates (module prefix tgSt_, and the
 * public tg_shared_ names).  A context keeps its variables in a registry
 * hung on the context (tgT_ctx_ext); a function reads them as extra
 * inputs bound from their storage at each call, and writes its updates
 * either straight into a variable (when the buffer plan proves that
 * nothing reads the old value afterwards and nothing after can fail) or
 * into a staging buffer of its own that is swapped with the variable's
 * once the call has succeeded: no copy, no allocation per call, and a
 * failed call leaves every variable as it was. */
#include "config.h"

#include <gc/gc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "error.h"
#include "state.h"
#include "term.h"

#define argerr(err, ...) tgE_set((err), TG_ERR_ARG, NULL, 0, 0, __VA_ARGS__)

/* ---- the registry ---------------------------------------------------- */

typedef struct registry {
    tg_shared *head;
    /* the context's other kernels state: the elementwise ops defined
     * with C expressions (userop.c), freed by userops_free */
    void *userops;
    void (*userops_free)(void *);
} registry;

struct tg_shared {
    char *name;
    tg_dtype dtype;
    int ndim;
    int64_t shape[TG_MAXDIM];
    char *data;             /* C-contiguous, malloc'd, never NULL */
    size_t cap;
    tg_array arr;           /* the value as an array: what a call binds, copied whole */
    int refs;               /* the registry's, and one per function using it */
    registry *reg;          /* NULL once removed from its context */
    tg_shared *next;
};

static void unref(tg_shared *v)
{
    if (--v->refs > 0)
        return;
    free(v->data);
    free(v->name);
    free(v);
}

static void unlink_var(tg_shared *v)
{
    for (tg_shared **p = &v->reg->head; *p; p = &(*p)->next)
        if (*p == v) {
            *p = v->next;
            break;
        }
    v->reg = NULL;
    v->next = NULL;
}

/* Runs when the context is freed: functions still holding a variable
 * keep its storage. */
static void registry_free(void *p)
{
    registry *r = p;
    if (r->userops_free)
        r->userops_free(r->userops);
    while (r->head) {
        tg_shared *v = r->head;
        unlink_var(v);
        unref(v);
    }
    free(r);
}

static registry *registry_of(tg_ctx *ctx, int make)
{
    registry *r = tgT_ctx_ext(ctx);
    if (!r && make && (r = calloc(1, sizeof *r)))
        tgT_ctx_set_ext(ctx, r, registry_free);
    return r;
}

void **tgSt_userops(tg_ctx *ctx, int make, void (*free_fn)(void *))
{
    registry *r = registry_of(ctx, make);
    if (r && free_fn)
        r->userops_free = free_fn;
    return r ? &r->userops : NULL;
}

static tg_shared *find(tg_ctx *ctx, const char *name, size_t len)
{
    registry *r = registry_of(ctx, 0);
    for (tg_shared *v = r ? r->head : NULL; v; v = v->next)
        if (strlen(v->name) == len && memcmp(v->name, name, len) == 0)
            return v;
    return NULL;
}

/* ---- arrays ---------------------------------------------------------- */

static size_t esize(tg_dtype d)
{
    static const size_t s[] = {1, 4, 8, 4, 8};
    return s[d];
}

static const char *dname(tg_dtype d) { return tgV_dtype_name(d); }

static int64_t count(int ndim, const int64_t *shape)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++)
        n *= shape[d];
    return n;
}

static size_t nbytes(const tg_shared *v) { return (size_t)count(v->ndim, v->shape) * esize(v->dtype); }

/* A usable array: dtype and rank in range, sizes >= 0 whose product fits,
 * data unless it is empty. */
static int check_array(const tg_array *a, const char *what, tg_error *err)
{
    if (!a)
        return argerr(err, "kernels: %s: no array", what), -1;
    if ((unsigned)a->dtype > TG_FLOAT64 || a->ndim < 0 || a->ndim > TG_MAXDIM)
        return argerr(err, "kernels: %s: a bad dtype or rank", what), -1;
    int64_t n = 1;
    for (int d = 0; d < a->ndim; d++) {
        if (a->shape[d] < 0 || (a->shape[d] && n > INT64_MAX / 8 / a->shape[d]))
            return argerr(err, "kernels: %s: a bad size on axis %d", what, d), -1;
        n *= a->shape[d];
    }
    if (n > 0 && !a->data)
        return argerr(err, "kernels: %s: no data", what), -1;
    return 0;
}

/* Copy every element of shape from s (byte strides ss) to d (strides ds). */
static void copy_strided(int ndim, const int64_t *shape, char *d, const int64_t *ds, const char *s,
                         const int64_t *ss, size_t es)
{
    int64_t n = count(ndim, shape), idx[TG_MAXDIM] = {0};
    for (int64_t k = 0; k < n; k++) {
        memcpy(d, s, es);
        for (int ax = ndim - 1; ax >= 0; ax--) {
            d += ds[ax], s += ss[ax];
            if (++idx[ax] < shape[ax])
                break;
            d -= ds[ax] * shape[ax], s -= ss[ax] * shape[ax];
            idx[ax] = 0;
        }
    }
}

static void c_strides(int ndim, const int64_t *shape, size_t es, int64_t *strides)
{
    int64_t s = (int64_t)es;
    for (int d = ndim - 1; d >= 0; d--) {
        strides[d] = s;
        s *= shape[d] ? shape[d] : 1;
    }
}

/* The first and one past the last byte a reads. */
static void extent(const tg_array *a, const char **lo, const char **hi)
{
    const char *p = a->data, *q = a->data;
    for (int d = 0; d < a->ndim; d++) {
        if (a->shape[d] == 0) {
            *lo = *hi = a->data;
            return;
        }
        int64_t off = a->strides[d] * (a->shape[d] - 1);
        if (off < 0)
            p += off;
        else
            q += off;
    }
    *lo = p, *hi = q + esize(a->dtype);
}

/* ---- the public calls ------------------------------------------------- */

tg_shared *tg_shared_new(tg_ctx *ctx, const char *name, const tg_array *value, tg_error *err)
{
    if (!ctx || !name || !*name)
        return argerr(err, "kernels: tg_shared_new needs a context and a name"), NULL;
    if (check_array(value, name, err) < 0)
        return NULL;
    if (find(ctx, name, strlen(name)))
        return argerr(err, "kernels: a shared variable %s exists already", name), NULL;
    registry *r = registry_of(ctx, 1);
    tg_shared *v = calloc(1, sizeof *v);
    size_t bytes = (size_t)count(value->ndim, value->shape) * esize(value->dtype);
    if (v) {
        v->name = strdup(name);
        v->data = malloc(bytes ? bytes : 1);
    }
    if (!r || !v || !v->name || !v->data) {
        if (v)
            free(v->name), free(v->data), free(v);
        return tgE_nomem(err), NULL;
    }
    v->dtype = value->dtype, v->ndim = value->ndim, v->cap = bytes ? bytes : 1;
    memcpy(v->shape, value->shape, (size_t)value->ndim * sizeof *v->shape);
    int64_t cs[TG_MAXDIM];
    c_strides(v->ndim, v->shape, esize(v->dtype), cs);
    copy_strided(v->ndim, v->shape, v->data, cs, value->data, value->strides, esize(v->dtype));
    tg_array_init(&v->arr, v->dtype, v->ndim, v->shape, v->data);
    v->refs = 1, v->reg = r, v->next = r->head;
    r->head = v;
    return v;
}

tg_shared *tg_shared_find(tg_ctx *ctx, const char *name)
{
    return ctx && name ? find(ctx, name, strlen(name)) : NULL;
}

const char *tg_shared_name(const tg_shared *sv) { return sv ? sv->name : NULL; }

int tg_shared_set(tg_shared *sv, const tg_array *value, tg_error *err)
{
    if (!sv)
        return argerr(err, "kernels: tg_shared_set needs a shared variable"), -1;
    if (check_array(value, sv->name, err) < 0)
        return -1;
    if (value->dtype != sv->dtype || value->ndim != sv->ndim)
        return tgE_set(err, TG_ERR_TYPE, NULL, 0, 0,
                       "kernels: shared variable %s is %s with %d axes, the value %s with %d", sv->name,
                       dname(sv->dtype), sv->ndim, dname(value->dtype), value->ndim), -1;
    size_t bytes = (size_t)count(value->ndim, value->shape) * esize(value->dtype);
    size_t need = bytes ? bytes : 1;
    const char *lo, *hi;
    extent(value, &lo, &hi);
    /* a value read from the storage itself (a view) goes through a copy */
    bool alias = lo < sv->data + sv->cap && hi > sv->data;
    char *dst = sv->data;
    if ((need > sv->cap || alias) && !(dst = malloc(need)))
        return tgE_nomem(err), -1;
    int64_t cs[TG_MAXDIM];
    c_strides(value->ndim, value->shape, esize(value->dtype), cs);
    copy_strided(value->ndim, value->shape, dst, cs, value->data, value->strides, esize(value->dtype));
    if (dst != sv->data) {
        free(sv->data);
        sv->data = dst, sv->cap = need;
    }
    memcpy(sv->shape, value->shape, (size_t)value->ndim * sizeof *sv->shape);
    tg_array_init(&sv->arr, sv->dtype, sv->ndim, sv->shape, sv->data);
    return 0;
}

int tg_shared_view(const tg_shared *sv, tg_array *view, tg_error *err)
{
    if (!sv || !view)
        return argerr(err, "kernels: tg_shared_view needs a shared variable and an array"), -1;
    *view = sv->arr;
    return 0;
}

int tg_shared_get(const tg_shared *sv, tg_array *out, tg_error *err)
{
    if (!sv || !out)
        return argerr(err, "kernels: tg_shared_get needs a shared variable and an array"), -1;
    size_t bytes = nbytes(sv);
    if (!out->data) {
        void *p = malloc(bytes ? bytes : 1);
        if (!p)
            return tgE_nomem(err), -1;
        tg_array_init(out, sv->dtype, sv->ndim, sv->shape, p);
        memcpy(p, sv->data, bytes);
        return 0;
    }
    bool ok = out->dtype == sv->dtype && out->ndim == sv->ndim;
    for (int d = 0; ok && d < sv->ndim; d++)
        ok = out->shape[d] == sv->shape[d];
    if (!ok)
        return tgE_set(err, TG_ERR_RANGE, NULL, 0, 0,
                       "kernels: shared variable %s: the array given is not of its dtype %s and shape",
                       sv->name, dname(sv->dtype)), -1;
    int64_t cs[TG_MAXDIM];
    c_strides(sv->ndim, sv->shape, esize(sv->dtype), cs);
    copy_strided(sv->ndim, sv->shape, out->data, out->strides, sv->data, cs, esize(sv->dtype));
    return 0;
}

void tg_shared_free(tg_shared *sv)
{
    if (!sv || !sv->reg)
        return;
    unlink_var(sv);
    unref(sv);
}

/* ---- non-strict inputs --------------------------------------------- */

/* Element p of dtype from, written at q as dtype to: 1, or 0 when its
 * value would change (nothing written). */
static int cast_exact(const char *p, tg_dtype from, char *q, tg_dtype to)
{
    bool fl = from == TG_FLOAT32 || from == TG_FLOAT64;
    double x = 0;
    int64_t i = 0;
    switch (from) {
    case TG_FLOAT64: memcpy(&x, p, 8); break;
    case TG_FLOAT32: { float f; memcpy(&f, p, 4); x = f; break; }
    case TG_INT64: memcpy(&i, p, 8); break;
    case TG_INT32: { int32_t v; memcpy(&v, p, 4); i = v; break; }
    default: i = *(const unsigned char *)p != 0;
    }
    /* an integer as a float: exact when it comes back (inside int64's range) */
    if (!fl && (to == TG_FLOAT64 || to == TG_FLOAT32)) {
        x = to == TG_FLOAT32 ? (double)(float)i : (double)i;
        if (!(x >= -0x1p63 && x < 0x1p63) || (int64_t)x != i)
            return 0;
        fl = true;
    }
    switch (to) {
    case TG_FLOAT64: memcpy(q, &x, 8); return 1;
    case TG_FLOAT32: {
        float f = (float)x;
        if ((double)f != x && x == x)
            return 0;
        memcpy(q, &f, 4);
        return 1;
    }
    case TG_INT64:
    case TG_INT32: {
        if (fl) {
            if (!(x >= -0x1p63 && x < 0x1p63) || x != trunc(x))
                return 0;
            i = (int64_t)x;
        }
        if (to == TG_INT64) {
            memcpy(q, &i, 8);
            return 1;
        }
        if (i < INT32_MIN || i > INT32_MAX)
            return 0;
        int32_t v = (int32_t)i;
        memcpy(q, &v, 4);
        return 1;
    }
    default:
        if (fl ? !(x == 0 || x == 1) : !(i == 0 || i == 1))
            return 0;
        *(unsigned char *)q = (unsigned char)(fl ? x != 0 : i != 0);
        return 1;
    }
}

/* ---- functions ------------------------------------------------------ */

struct tgSt_fn {
    int nin, nsh, nout, nupd;
    tg_shared **vars;       /* per shared leaf, referenced */
    int *var_of;            /* per update: its variable's index in vars */
    unsigned char *inplace; /* per update: the plan lets it write the variable */
    unsigned char *now;     /* per update: written in place this call */
    char **stage;           /* per update: the staging buffer and its size */
    size_t *stagecap;
    tg_array *in, *out;     /* the arrays of the run: the caller's, then ours */
    int downcast;
    char **conv;            /* per caller input: its converted copy */
    size_t *convcap;
};

int tgSt_split(tg_ctx *ctx, tg_term *updates, size_t *n, tg_term ***targets, tg_term ***values,
               tg_error *err)
{
    *n = 0;
    if (!updates || updates == tg_nil())
        return 0;
    size_t k = tg_length(updates);
    if (tg_kind_of(updates) != TG_PAIR || tg_tail(updates) != tg_nil())
        return argerr(err, "kernels: the updates are a list ((SHARED NEW-VALUE) ...)"), -1;
    *targets = GC_MALLOC(k * sizeof **targets);
    *values = GC_MALLOC(k * sizeof **values);
    if (!*targets || !*values)
        return tgE_nomem(err), -1;
    tg_iter it;
    tg_term *p;
    tg_iter_init(&it, updates);
    for (size_t j = 0; (p = tg_iter_next(&it)); j++) {
        if (tg_length(p) != 2 || tg_tail(p) != tg_nil()) {
            char buf[200];
            return argerr(err, "kernels: in %s: an update is (SHARED NEW-VALUE)",
                           tgV_show(p, buf, sizeof buf)), -1;
        }
        (*targets)[j] = tg_nth(p, 0), (*values)[j] = tg_nth(p, 1);
    }
    (void)ctx;
    *n = k;
    return 0;
}

/* The steps that cannot fail once their inputs are bound. */
static bool infallible(const tgH_sched *s, const tgH_step *st)
{
    return (st->kind == TGH_LOOP && st->nreds == 0) ||
           (st->kind == TGH_VIEW && s->g->nodes[st->node].op != TGV_SUBTENSOR);
}

/* Whether output out (the new value of leaf w) may be computed straight
 * into w's storage: it is stored by a loop (which reads every input
 * element before it writes that element), nothing reads w after that
 * loop nor through a view in it, no output is w, and no later step can
 * fail (a failed call must leave w as it was). */
static bool plan_inplace(const tgH_sched *s, int out, int w)
{
    const tgV_graph *g = s->g;
    int v = g->outputs[out], k = -1;
    if (s->output[v] != out)
        return false;   /* computed into an earlier output, copied from there */
    for (int q = 0; q < s->nsteps && k < 0; q++)
        for (int i = 0; s->steps[q].kind == TGH_LOOP && i < s->steps[q].nouts; i++)
            if (s->steps[q].outs[i] == v)
                k = q;
    if (k < 0)
        return false;
    for (int q = k; q < s->nsteps; q++) {
        const tgH_step *st = &s->steps[q];
        if (q > k && !infallible(s, st))
            return false;
        for (int i = 0; i < st->nins; i++)
            if (s->base[st->ins[i]] == w && (q > k || st->ins[i] != w))
                return false;
    }
    for (int i = 0; i < g->noutputs; i++)
        if (s->base[g->outputs[i]] == w)
            return false;
    return true;
}

void tgSt_free(tgSt_fn *f)
{
    if (!f)
        return;
    for (int k = 0; f->vars && k < f->nsh; k++)
        if (f->vars[k])
            unref(f->vars[k]);
    for (int j = 0; f->stage && j < f->nupd; j++)
        free(f->stage[j]);
    for (int i = 0; f->conv && i < f->nin; i++)
        free(f->conv[i]);
    free(f->vars), free(f->var_of), free(f->inplace), free(f->now), free(f->stage);
    free(f->stagecap), free(f->in), free(f->out), free(f->conv), free(f->convcap);
    free(f);
}

/* Leaf k's variable, of the dtype and rank it is declared with. */
static int resolve(tg_ctx *ctx, const tgV_node *n, tg_shared **out, tg_error *err)
{
    size_t len;
    const char *name = tg_symbol_name(tg_nth(n->term, 1), &len);
    char buf[200];
    tg_shared *v = find(ctx, name, len);
    if (!v)
        return tgE_set(err, TG_ERR_ARG, NULL, 0, 0, "kernels: in %s: no shared variable %.*s in this context",
                       tgV_show(n->term, buf, sizeof buf), (int)len, name), -1;
    if (v->dtype != n->dtype || v->ndim != n->ndim)
        return tgE_set(err, TG_ERR_TYPE, NULL, 0, 0,
                       "kernels: in %s: shared variable %s is %s with %d axes",
                       tgV_show(n->term, buf, sizeof buf), v->name, dname(v->dtype), v->ndim), -1;
    v->refs++;
    *out = v;
    return 0;
}

tgSt_fn *tgSt_new(tg_ctx *ctx, const tgH_sched *s, size_t nin, size_t nout, int downcast, tg_error *err)
{
    const tgV_graph *g = s->g;
    tgSt_fn *f = calloc(1, sizeof *f);
    if (!f)
        return tgE_nomem(err), NULL;
    f->nin = (int)nin, f->nsh = g->nshared, f->nout = (int)nout, f->nupd = g->nupdates;
    f->downcast = downcast;
    size_t nsh = (size_t)f->nsh + 1, nupd = (size_t)f->nupd + 1;
    f->vars = calloc(nsh, sizeof *f->vars);
    f->var_of = calloc(nupd, sizeof *f->var_of);
    f->inplace = calloc(nupd, 1);
    f->now = calloc(nupd, 1);
    f->stage = calloc(nupd, sizeof *f->stage);
    f->stagecap = calloc(nupd, sizeof *f->stagecap);
    f->in = calloc((size_t)g->ninputs + 1, sizeof *f->in);
    f->out = calloc((size_t)g->noutputs + 1, sizeof *f->out);
    f->conv = calloc(nin + 1, sizeof *f->conv);
    f->convcap = calloc(nin + 1, sizeof *f->convcap);
    if (!f->vars || !f->var_of || !f->inplace || !f->now || !f->stage || !f->stagecap || !f->in || !f->out ||
        !f->conv || !f->convcap) {
        tgSt_free(f);
        return tgE_nomem(err), NULL;
    }
    for (int k = 0; k < f->nsh; k++)
        if (resolve(ctx, &g->nodes[g->inputs[nin + (size_t)k]], &f->vars[k], err) < 0) {
            tgSt_free(f);
            return NULL;
        }
    for (int j = 0; j < f->nupd; j++) {
        int w = g->updated[j];
        f->var_of[j] = g->nodes[w].input - (int)nin;
        f->inplace[j] = plan_inplace(s, (int)nout + j, w);
    }
    return f;
}

/* Caller input i of another dtype than declared, converted into f's
 * buffer when every value survives. */
static int downcast(tgSt_fn *f, const tgV_graph *g, int i, const tg_array *a, tg_dtype to, tg_error *err)
{
    const tgV_node *n = &g->nodes[g->inputs[i]];
    char name[120];
    tgV_show(tg_nth(n->term, 1), name, sizeof name);
    if (check_array(a, name, err) < 0)
        return -1;
    int64_t cnt = count(a->ndim, a->shape);
    size_t bytes = (size_t)cnt * esize(to);
    if (bytes > f->convcap[i] || !f->conv[i]) {
        char *p = realloc(f->conv[i], bytes ? bytes : 1);
        if (!p)
            return tgE_nomem(err), -1;
        f->conv[i] = p, f->convcap[i] = bytes ? bytes : 1;
    }
    int64_t idx[TG_MAXDIM] = {0};
    const char *src = a->data;
    char *dst = f->conv[i];
    for (int64_t k = 0; k < cnt; k++, dst += esize(to)) {
        if (!cast_exact(src, a->dtype, dst, to)) {
            char val[64];
            if (a->dtype == TG_FLOAT64 || a->dtype == TG_FLOAT32) {
                double x = 0;
                float fv;
                if (a->dtype == TG_FLOAT64)
                    memcpy(&x, src, 8);
                else
                    memcpy(&fv, src, 4), x = fv;
                snprintf(val, sizeof val, "%.17g", x);
            } else {
                int64_t v = 0;
                int32_t v32;
                if (a->dtype == TG_INT64)
                    memcpy(&v, src, 8);
                else if (a->dtype == TG_INT32)
                    memcpy(&v32, src, 4), v = v32;
                else
                    v = *(const unsigned char *)src;
                snprintf(val, sizeof val, "%lld", (long long)v);
            }
            return tgE_set(err, TG_ERR_TYPE, NULL, 0, 0,
                           "kernels: input %s: expected dtype %s, got %s, and element %lld (%s) is not a %s",
                           name, dname(to), dname(a->dtype), (long long)k, val, dname(to)), -1;
        }
        src += tgI_next(a->ndim, a->shape, a->strides, idx);
    }
    tg_array_init(&f->in[i], to, a->ndim, a->shape, f->conv[i]);
    return 0;
}

/* Whether a caller's input reads the storage of v (a view of it passed
 * as an argument): v is then not written before the end of the call. */
static bool read_by_inputs(const tgSt_fn *f, const tg_array *in, const tg_shared *v)
{
    const char *a = v->data, *b = v->data + v->cap;
    for (int i = 0; i < f->nin; i++) {
        const char *lo, *hi;
        if (!in[i].data || in[i].ndim < 0 || in[i].ndim > TG_MAXDIM || (unsigned)in[i].dtype > TG_FLOAT64)
            continue;
        extent(&in[i], &lo, &hi);
        if (lo < b && hi > a)
            return true;
    }
    return false;
}

int tgSt_call(const tgH_sched *s, tgI_state *st, tgSt_fn *f, const tg_array *in, tg_array *out,
              tg_error *err)
{
    const tgV_graph *g = s->g;
    for (int i = 0; i < f->nin; i++) {
        tg_dtype want = g->nodes[g->inputs[i]].dtype;
        f->in[i] = in[i];
        if (f->downcast && in[i].dtype != want && downcast(f, g, i, &in[i], want, err) < 0)
            return -1;
    }
    for (int k = 0; k < f->nsh; k++)
        f->in[f->nin + k] = f->vars[k]->arr;
    if (f->nout)
        memcpy(f->out, out, (size_t)f->nout * sizeof *out);
    for (int j = 0; j < f->nupd; j++) {
        tg_shared *v = f->vars[f->var_of[j]];
        f->out[f->nout + j] = v->arr;
        f->now[j] = f->inplace[j] && (!f->nin || !read_by_inputs(f, in, v));
        if (f->now[j])
            continue;
        size_t bytes = nbytes(v);
        if (bytes > f->stagecap[j] || !f->stage[j]) {
            char *p = realloc(f->stage[j], bytes ? bytes : 1);
            if (!p)
                return tgE_nomem(err), -1;
            f->stage[j] = p, f->stagecap[j] = bytes ? bytes : 1;
        }
        f->out[f->nout + j].data = f->stage[j];
    }
    int rc = tgI_run(s, st, f->in, f->out, err);
    if (f->nout)
        memcpy(out, f->out, (size_t)f->nout * sizeof *out);    /* what the run allocated */
    if (rc < 0)
        return -1;
    /* every new value is computed: the staged ones become the values */
    for (int j = 0; j < f->nupd; j++)
        if (!f->now[j]) {
            tg_shared *v = f->vars[f->var_of[j]];
            char *p = v->data;
            size_t c = v->cap;
            v->data = v->arr.data = f->stage[j], v->cap = f->stagecap[j];
            f->stage[j] = p, f->stagecap[j] = c;
        }
    return 0;
}

tg_term *tgSt_schedule(const tgH_sched *s, const tgSt_fn *f, tg_term *sched)
{
    const tgV_graph *g = s->g;
    if (!sched || !f->nupd)
        return sched;
    tgB_buf b;
    tgB_init(&b);
    tgB_puts(&b, "(updates");
    for (int j = 0; j < f->nupd; j++) {
        tgB_puts(&b, " (");
        tgH_put_name(s, &b, g->updated[j]);
        tgB_putc(&b, ' ');
        tgH_put_name(s, &b, g->outputs[f->nout + j]);
        tgB_puts(&b, f->inplace[j] ? " inplace)" : " staged)");
    }
    tgB_putc(&b, ')');
    size_t len, n = tg_length(sched);
    char *text = tgB_take(&b, &len);
    tg_term *u = text ? tg_read(g->ctx, text, len, NULL) : NULL;
    free(text);
    tg_term **e = u ? GC_MALLOC((n + 1) * sizeof *e) : NULL;
    if (!e)
        return NULL;
    tg_elements(sched, e, n);
    e[n] = u;
    return tg_list(g->ctx, n + 1, e, NULL);
}
