/* check.c - the checking mode (module prefix tgCk_; the ancestor's
 * DebugMode): a function compiled from rewritten terms also keeps the
 * unrewritten graph, run in the interpreter on the inputs of every call,
 * and the outputs of both are compared within a tolerance.  When they
 * differ, the firings of the rewrite (logged with provenance when the
 * function was compiled) are replayed in order: each firing's redex and
 * replacement are evaluated in the interpreter on the same inputs, and
 * the first whose replacement computes other values is named. */
#include "config.h"

#include <gc/gc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "error.h"
#include "compile.h"
#include "rwcache.h"

struct tgCk {
    tg_ctx *ctx;
    size_t nin, nout;
    tg_term **inputs, **outputs;    /* unrewritten */
    tg_fn *ref;                     /* their function, interpreted */
    tgZw_firing *fire;              /* the rewrite's firings, in order */
    size_t nfire;
    double tol;
};

/* An interpreted function of terms over c's inputs, or NULL. */
static tg_fn *interpreted(const tgCk *c, size_t n, tg_term *const *terms, tg_error *err)
{
    tg_fn_options o;
    memset(&o, 0, sizeof o);
    o.interpret = 1;
    return tg_fn_compile(c->ctx, c->nin, c->inputs, n, terms, &o, err);
}

tgCk *tgCk_new(tg_ctx *ctx, size_t nin, tg_term *const *inputs, size_t nout, tg_term *const *outputs,
               double tol, tg_rules *rs, tg_term *spec, tg_error *err)
{
    if (!(tol >= 0) || !isfinite(tol))
        return tgE_set(err, TG_ERR_RANGE, NULL, 0, 0, "kernels: a checking tolerance must be a finite number >= 0"),
               NULL;
    tgCk *c = GC_MALLOC_UNCOLLECTABLE(sizeof *c);
    tg_term **in = GC_MALLOC((nin ? nin : 1) * sizeof *in), **out = GC_MALLOC((nout ? nout : 1) * sizeof *out);
    if (!c || !in || !out) {
        GC_FREE(c);
        return tgE_nomem(err), NULL;
    }
    memcpy(in, inputs, nin * sizeof *in);
    memcpy(out, outputs, nout * sizeof *out);
    *c = (tgCk){ctx, nin, nout, in, out, NULL, NULL, 0, tol > 0 ? tol : TGCK_TOL};
    if (!(c->ref = interpreted(c, nout, out, err))) {
        tgCk_free(c);
        return NULL;
    }
    if (!(c->fire = tgZw_firings(ctx, rs, spec, nout, out, &c->nfire))) {
        tgCk_free(c);
        return tgE_set(err, TG_ERR_NOMEM, NULL, 0, 0, "kernels: check: the rewrite's firings could not be logged"),
               NULL;
    }
    return c;
}

void tgCk_free(tgCk *c)
{
    if (!c)
        return;
    tg_fn_free(c->ref);
    GC_FREE(c);
}

/* Element k (row-major) of a as a double. */
static double elem(const tg_array *a, int64_t k)
{
    const char *p = a->data;
    for (int d = a->ndim - 1; d >= 0; d--) {
        int64_t n = a->shape[d] ? a->shape[d] : 1;
        p += (k % n) * a->strides[d];
        k /= n;
    }
    switch (a->dtype) {
    case TG_BOOL: return *(const unsigned char *)p;
    case TG_INT32: return *(const int32_t *)p;
    case TG_INT64: return (double)*(const int64_t *)p;
    case TG_FLOAT32: return *(const float *)p;
    default: return *(const double *)p;
    }
}

static int64_t count(const tg_array *a)
{
    int64_t n = 1;
    for (int d = 0; d < a->ndim; d++)
        n *= a->shape[d];
    return n;
}

static int close(double got, double want, tg_dtype dt, double tol)
{
    if (isnan(want) || isnan(got))
        return isnan(want) && isnan(got);
    if (dt != TG_FLOAT32 && dt != TG_FLOAT64)
        return got == want;
    if (isinf(want) || isinf(got))
        return got == want;
    if (dt == TG_FLOAT32 && tol < TGCK_TOL32)
        tol = TGCK_TOL32;
    return fabs(got - want) <= tol * (1 + fmax(fabs(got), fabs(want)));
}

/* The first element where a and b differ: its index, or -1 (also when
 * their shapes differ: -2). */
static int64_t differ(const tg_array *a, const tg_array *b, double tol)
{
    if (a->ndim != b->ndim)
        return -2;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d])
            return -2;
    int64_t n = count(a);
    for (int64_t k = 0; k < n; k++)
        if (!close(elem(a, k), elem(b, k), a->dtype, tol))
            return k;
    return -1;
}

static void free_outs(tg_array *o, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(o[i].data);
}

/* Whether firing f's replacement computes other values than its redex
 * on inputs in; *k the element, *got and *want its values. */
static int changed(const tgCk *c, const tgZw_firing *f, const tg_array *in, int64_t *k, double *got, double *want)
{
    tg_error e;
    tg_term *t[2] = {f->before, f->after};
    tg_fn *fb = interpreted(c, 1, &t[0], &e), *fa = fb ? interpreted(c, 1, &t[1], &e) : NULL;
    tg_array ob, oa;
    memset(&ob, 0, sizeof ob);
    memset(&oa, 0, sizeof oa);
    int ch = fa && tg_fn_call(fb, in, &ob, &e) == 0 && tg_fn_call(fa, in, &oa, &e) == 0 &&
             (*k = differ(&oa, &ob, c->tol)) != -1;
    if (ch && *k >= 0)
        *got = elem(&oa, *k), *want = elem(&ob, *k);
    else if (ch)
        *got = *want = NAN;
    free(ob.data);
    free(oa.data);
    tg_fn_free(fb);
    tg_fn_free(fa);
    return ch;
}

/* err: the first firing that changed values, or the output alone. */
static void report(const tgCk *c, const tg_array *in, size_t i, int64_t k, double got, double want, tg_error *err)
{
    for (size_t j = 0; j < c->nfire; j++) {
        const tgZw_firing *f = &c->fire[j];
        int64_t fk;
        double fg, fw;
        if (!changed(c, f, in, &fk, &fg, &fw))
            continue;
        char *sb = tgW_show(f->before), *sa = tgW_show(f->after);
        tgE_set(err, TG_ERR_CHECK, f->rule->file, f->rule->line, f->rule->col,
                "kernels: check: rule %s%s changed the values: %s gives %.17g where %s gives %.17g (element %lld); "
                "output %zu differs",
                tg_symbol_name(f->rule->name, NULL), f->rule->backward ? " (reverse)" : "", sa ? sa : "?", fg, sb ? sb : "?", fw,
                (long long)fk, i);
        free(sb);
        free(sa);
        return;
    }
    tgE_set(err, TG_ERR_CHECK, NULL, 0, 0,
            "kernels: check: output %zu differs from the unrewritten graph's: %.17g where it gives %.17g "
            "(element %lld), and no single rewrite changed the values",
            i, got, want, (long long)k);
}

int tgCk_run(tgCk *c, const tg_array *in, const tg_array *out, tg_error *err)
{
    tg_array *ref = calloc(c->nout ? c->nout : 1, sizeof *ref);
    if (!ref)
        return tgE_nomem(err), -1;
    if (tg_fn_call(c->ref, in, ref, err) < 0) {
        free(ref);
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; i < c->nout && rc == 0; i++) {
        int64_t k = differ(&out[i], &ref[i], c->tol);
        if (k == -1)
            continue;
        double got = k >= 0 ? elem(&out[i], k) : NAN, want = k >= 0 ? elem(&ref[i], k) : NAN;
        report(c, in, i, k, got, want, err);
        rc = -1;
    }
    free_outs(ref, c->nout);
    free(ref);
    return rc;
}
