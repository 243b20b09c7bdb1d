/* scan.c - scan loops (module prefix tgSc_): the scan term read into a
 * record, the inner function typed as a graph of its own whose inputs are
 * the parameters, the outer nodes (one per output and one for the step
 * count), and the run: a counted loop over the inner schedule, in the
 * interpreter or as one generated C function.  See doc/scan.md. */
#include "config.h"

#include <gc/gc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dlfcn.h>

#include "blas.h"
#include "buf.h"
#include "error.h"
#include "scan.h"
#include "arrange.h"
#include "index.h"
#include "scan_dot.h"
#include "random.h"

/* ---- reading the term -------------------------------------------------- */

static bool sym_is(const tg_term *t, const char *name)
{
    size_t len;
    const char *s = t ? tg_symbol_name(t, &len) : NULL;
    return s && len == strlen(name) && memcmp(s, name, len) == 0;
}

bool tgSc_head(const char *name, size_t len)
{
    static const char *const heads[] = {"scan", "scan_output", "scan_steps"};
    for (int i = 0; i < 3; i++)
        if (len == strlen(heads[i]) && memcmp(name, heads[i], len) == 0)
            return true;
    return false;
}

/* The elements of list l after its head `head` (a proper list), in a GC
 * array; -1 when l is not such a list. */
static int items(tg_term *l, const char *head, tg_term ***out)
{
    if (!head && l == tg_nil()) {
        *out = NULL;
        return 0;
    }
    if (tg_kind_of(l) != TG_PAIR || tg_tail(l) != tg_nil() || (head && !sym_is(tg_car(l), head)))
        return -1;
    size_t n = tg_length(l);
    tg_term **a = GC_MALLOC((n + 1) * sizeof *a);
    if (!a)
        return -1;
    tg_elements(l, a, n);
    if (head) {
        memmove(a, a + 1, (n - 1) * sizeof *a);
        n--;
    }
    *out = a;
    return (int)n;
}

static bool reserved(const tg_term *p)
{
    static const char *const words[] = {"float64", "float32", "int64", "int32", "bool", "x",
                                        "all", "none", "auto", "last", "backwards"};
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (sym_is(p, words[i]))
            return true;
    return false;
}

/* A list (HEAD T ...) of distinct non-negative taps into *v; their count. */
static int mitmot_taps(tgV_builder *b, tgSc_scan *sc, tg_term *l, const char *head, int **v, int *max)
{
    tg_term **t;
    int nt = items(l, head, &t);
    if (nt < 1)
        return tgV_fail(b, sc->term, "a mitmot output is (mitmot INIT (taps T ...) (out_taps T ...)), "
                                     "each list with at least one tap");
    if (!(*v = GC_MALLOC_ATOMIC((size_t)nt * sizeof **v)))
        return tgE_nomem(tgV_err_of(b)), -1;
    for (int i = 0; i < nt; i++) {
        int64_t k;
        if (tg_kind_of(t[i]) != TG_INT || tg_int_get(t[i], &k) < 0 || k < 0 || k > (1 << 20))
            return tgV_fail(b, sc->term, "a mitmot tap is a non-negative integer");
        for (int j = 0; j < i; j++)
            if ((*v)[j] == k)
                return tgV_fail(b, sc->term, "a tap is repeated");
        (*v)[i] = (int)k;
        if (k > *max)
            *max = (int)k;
    }
    return nt;
}

/* (mitmot INIT (taps T ...) (out_taps T ...)): a buffer of steps + M
 * rows (M the largest tap), INIT's copy; step t reads rows t + T of the
 * taps and writes its results to rows t + T of the out taps. */
static int parse_mitmot(tgV_builder *b, tgSc_scan *sc, tg_term **a, tgSc_out *out)
{
    out->kind = TGSC_MITMOT, out->init = a[1];
    if ((out->ntaps = mitmot_taps(b, sc, a[2], "taps", &out->taps, &out->maxtap)) < 0 ||
        (out->nres = mitmot_taps(b, sc, a[3], "out_taps", &out->otaps, &out->maxtap)) < 0)
        return -1;
    return 0;
}

static int parse_out(tgV_builder *b, tgSc_scan *sc, tg_term *o, tgSc_out *out)
{
    tg_term **a;
    int n = items(o, NULL, &a);
    memset(out, 0, sizeof *out);
    out->nres = 1;
    tg_term **k;
    int64_t keep;
    if (n > 0 && sym_is(a[n - 1], "last"))
        out->last = true, n--;
    else if (n > 0 && tg_kind_of(a[n - 1]) == TG_PAIR && sym_is(tg_car(a[n - 1]), "last")) {
        if (items(a[n - 1], "last", &k) != 1 || tg_kind_of(k[0]) != TG_INT || tg_int_get(k[0], &keep) < 0 ||
            keep < 1 || keep > (1 << 30))
            return tgV_fail(b, sc->term, "(last N) keeps the final N rows: N is a positive integer");
        out->keep = (int)keep, n--;
    }
    if (n == 1 && sym_is(a[0], "nitsot")) {
        out->kind = TGSC_NITSOT;
        return 0;
    }
    if (n == 2 && sym_is(a[0], "sitsot")) {
        out->kind = TGSC_SITSOT, out->init = a[1], out->ntaps = out->maxtap = 1;
        out->taps = GC_MALLOC_ATOMIC(sizeof *out->taps);
        if (!out->taps)
            return tgE_nomem(tgV_err_of(b)), -1;
        out->taps[0] = 1;
        return 0;
    }
    tg_term **t;
    int nt;
    if (n == 4 && sym_is(a[0], "mitmot"))
        return out->last || out->keep ? tgV_fail(b, sc->term, "a mitmot output is its whole buffer: it takes no last")
                         : parse_mitmot(b, sc, a, out);
    if (n != 3 || !sym_is(a[0], "mitsot") || (nt = items(a[2], "taps", &t)) < 1)
        return tgV_fail(b, sc->term, "an output is (nitsot), (sitsot INIT), (mitsot INIT (taps T ...)) "
                                     "or (mitmot INIT (taps T ...) (out_taps T ...)), the first three "
                                     "optionally ending with last or (last N)");
    out->kind = TGSC_MITSOT, out->init = a[1], out->ntaps = nt;
    out->taps = GC_MALLOC_ATOMIC((size_t)nt * sizeof *out->taps);
    if (!out->taps)
        return tgE_nomem(tgV_err_of(b)), -1;
    for (int i = 0; i < nt; i++) {
        int64_t v;
        if (tg_kind_of(t[i]) != TG_INT || tg_int_get(t[i], &v) < 0 || v >= 0 || v < -(1 << 20))
            return tgV_fail(b, sc->term, "a tap is a negative integer");
        for (int j = 0; j < i; j++)
            if (out->taps[j] == -v)
                return tgV_fail(b, sc->term, "a tap is repeated");
        out->taps[i] = (int)-v;
        if (-v > out->maxtap)
            out->maxtap = (int)-v;
    }
    return 0;
}

/* (inplace K ...), the Scan rewrites' marker (doc/scan.md, "Rewrites"):
 * outputs K whose initial value nothing else reads, so that the final
 * value may be written in its buffer (the buffer plan decides, see
 * schedule.c).  Each K must be a recurrent `last` output. */
static int check_inplace(tgV_builder *b, tgSc_scan *sc, tg_term *opt)
{
    tg_term **k;
    int n = items(opt, "inplace", &k);
    for (int i = 0; i < n; i++) {
        int64_t v;
        if (tg_kind_of(k[i]) != TG_INT || tg_int_get(k[i], &v) < 0 || v < 0 || v >= sc->nout ||
            sc->outs[v].kind == TGSC_NITSOT || !sc->outs[v].last)
            return tgV_fail(b, sc->term, "(inplace K ...) names recurrent last outputs");
        sc->outs[v].inplace = true;
    }
    return n < 0 ? tgV_fail(b, sc->term, "(inplace K ...) names recurrent last outputs") : 0;
}

static int parse(tgV_builder *b, tg_term *t, tgSc_scan *sc)
{
    tg_term **a, **lam;
    int n = items(t, "scan", &a), nl;
    sc->term = t;
    sc->cond = -1;
    const char *form = "a scan is (scan (lambda (P ...) (R ...) [(until C)]) (steps N) (sequences X ...) "
                       "(outputs O ...) (non_sequences W ...) [backwards])";
    if (n < 5 || (nl = items(a[0], "lambda", &lam)) < 2 || nl > 3)
        return tgV_fail(b, t, form);
    tg_term **st, **outs;
    if (items(a[1], "steps", &st) != 1 || (sc->nseq = items(a[2], "sequences", &sc->seqs)) < 0 ||
        (sc->nout = items(a[3], "outputs", &outs)) < 0 ||
        (sc->nnon = items(a[4], "non_sequences", &sc->nons)) < 0)
        return tgV_fail(b, t, form);
    tg_term *inplace = NULL;
    for (int i = 5; i < n; i++) {
        if (tg_car(a[i]) && sym_is(tg_car(a[i]), "inplace") && !inplace) {
            inplace = a[i];
            continue;
        }
        if (!sym_is(a[i], "backwards"))
            return tgV_fail(b, t, "the scan options are backwards and (inplace K ...)");
        sc->backwards = true;
    }
    if (sc->nout < 1)
        return tgV_fail(b, t, "a scan needs at least one output");
    sc->autosteps = sym_is(st[0], "auto");
    if (sc->autosteps && sc->nseq == 0)
        return tgV_fail(b, t, "(steps auto) needs a sequence");
    if (!sc->autosteps && tgV_size_of(b, t, st[0], &sc->steps) < 0)
        return -1;
    if (nl == 3) {
        tg_term **u;
        if (items(lam[2], "until", &u) != 1)
            return tgV_fail(b, t, "a stop condition is (until C)");
        sc->until = u[0];
    }
    sc->outs = GC_MALLOC((size_t)sc->nout * sizeof *sc->outs);
    if (!sc->outs)
        return tgE_nomem(tgV_err_of(b)), -1;
    int np = sc->nseq, nrec = 0;
    for (int i = 0; i < sc->nout; i++) {
        if (parse_out(b, sc, outs[i], &sc->outs[i]) < 0)
            return -1;
        sc->outs[i].param = np;
        np += sc->outs[i].ntaps;
        nrec += sc->outs[i].kind != TGSC_NITSOT;
        sc->outs[i].r0 = sc->nres;
        sc->nres += sc->outs[i].nres;
    }
    if ((sc->nparams = items(lam[0], NULL, &sc->params)) < 0 ||
        items(lam[1], NULL, &sc->results) != sc->nres)
        return tgV_fail(b, t, "the lambda has one result per output (per out tap of a mitmot): "
                              "(lambda (P ...) (R ...))");
    if (!(sc->rout = GC_MALLOC_ATOMIC((size_t)sc->nres * sizeof *sc->rout)))
        return tgE_nomem(tgV_err_of(b)), -1;
    for (int i = 0; i < sc->nout; i++)
        for (int r = 0; r < sc->outs[i].nres; r++)
            sc->rout[sc->outs[i].r0 + r] = i;
    np += sc->nnon;
    if (inplace && check_inplace(b, sc, inplace) < 0)
        return -1;
    if (np != sc->nparams) {
        char msg[200];
        snprintf(msg, sizeof msg, "the lambda has %d parameters, the scan passes %d "
                 "(one per sequence, per tap, per non-sequence)", sc->nparams, np);
        return tgV_fail(b, t, msg);
    }
    for (int i = 0; i < np; i++) {
        if (tg_kind_of(sc->params[i]) != TG_SYMBOL || reserved(sc->params[i]))
            return tgV_fail(b, t, "a parameter is a symbol that is no dtype or vocabulary name");
        for (int j = 0; j < i; j++)
            if (sc->params[j] == sc->params[i])
                return tgV_fail(b, t, "a parameter is named twice");
    }
    sc->nargs = sc->nseq + nrec + sc->nnon;
    sc->args = GC_MALLOC((size_t)(sc->nargs + 1) * sizeof *sc->args);
    if (!sc->args)
        return tgE_nomem(tgV_err_of(b)), -1;
    int k = 0;
    for (int i = 0; i < sc->nseq; i++)
        sc->args[k++] = sc->seqs[i];
    for (int i = 0; i < sc->nout; i++)
        if (sc->outs[i].kind != TGSC_NITSOT) {
            sc->outs[i].arg = k;
            sc->args[k++] = sc->outs[i].init;
        }
    for (int i = 0; i < sc->nnon; i++)
        sc->args[k++] = sc->nons[i];
    return 0;
}

/* ---- typing -------------------------------------------------------------- */

/* The term naming outer size s (an integer or the class's symbol). */
static tg_term *size_term(const tgV_graph *g, tgV_size s)
{
    s = tgV_canon(g, s);
    return s >= 0 ? tg_int(g->ctx, s) : g->syms[-s - 1];
}

/* Inner size s in the outer graph's sizes (inner symbols are outer
 * names); a size the lambda derives (a slice of a symbolic size, a
 * concatenation) is derived again outside from its sources' outer sizes,
 * so that the outer call binds it.  Derivations nest at most 16 deep. */
static int outer_size_at(tgV_builder *b, const tgV_graph *ig, tgV_size s, tgV_size *out, int depth)
{
    tgV_size c = tgV_canon(ig, s);
    if (s >= 0 || c >= 0) {
        *out = s >= 0 ? s : c;
        return 0;
    }
    const tgIx_dsize *ds = depth < 16 ? tgIx_dsize_of(ig, s) : NULL;
    const tgAr_dsum *dm = depth < 16 && !ds ? tgAr_dsum_of(ig, s) : NULL;
    if (ds) {
        tgV_size src;
        return outer_size_at(b, ig, ds->src, &src, depth + 1) < 0 ? -1
               : tgIx_derive(tgV_graph_of(b), ds->term, src, &ds->sl, out, tgV_err_of(b));
    }
    if (dm) {
        tgV_size *parts = GC_MALLOC_ATOMIC((size_t)dm->nparts * sizeof *parts);
        if (!parts)
            return tgE_nomem(tgV_err_of(b)), -1;
        for (int i = 0; i < dm->nparts; i++)
            if (outer_size_at(b, ig, dm->parts[i], &parts[i], depth + 1) < 0)
                return -1;
        return tgAr_derive(b, dm->term, parts, dm->nparts, out);
    }
    return tgV_size_of(b, ig->syms[-s - 1], ig->syms[-s - 1], out);
}

static int outer_size(tgV_builder *b, const tgV_graph *ig, tgV_size s, tgV_size *out)
{
    return outer_size_at(b, ig, s, out, 0);
}

/* (input P DTYPE (SIZE ...)) for a parameter of the given type. */
static tg_term *param_input(const tgV_graph *g, tg_term *p, tg_dtype d, int ndim, const tgV_size *sh)
{
    tg_ctx *c = g->ctx;
    tg_term *sz[TGV_MAXDIM + 1];
    for (int i = 0; i < ndim; i++)
        sz[i] = size_term(g, sh[i]);
    tg_term *parts[4] = {tg_symbol_cstr(c, "input"), p, tg_symbol_cstr(c, tgV_dtype_name(d)),
                         tg_list(c, (size_t)ndim, sz, NULL)};
    return tg_list(c, 4, parts, NULL);
}

/* The parameters' input terms; dt[o] overrides output o's dtype when >= 0. */
static int param_inputs(tgV_builder *b, tgSc_scan *sc, const int *argn, const int *dt, tg_term **pin)
{
    tgV_graph *g = tgV_graph_of(b);
    for (int i = 0; i < sc->nseq; i++) {
        const tgV_node *x = &g->nodes[argn[i]];
        pin[i] = param_input(g, sc->params[i], x->dtype, x->ndim - 1, x->shape + 1);
    }
    for (int o = 0; o < sc->nout; o++) {
        const tgSc_out *out = &sc->outs[o];
        if (out->kind == TGSC_NITSOT)
            continue;
        const tgV_node *x = &g->nodes[argn[out->arg]];
        int drop = out->kind == TGSC_MITSOT || out->kind == TGSC_MITMOT;
        tg_dtype d = dt[o] >= 0 ? (tg_dtype)dt[o] : x->dtype;
        for (int j = 0; j < out->ntaps; j++)
            pin[out->param + j] = param_input(g, sc->params[out->param + j], d, x->ndim - drop, x->shape + drop);
    }
    int base = sc->nparams - sc->nnon;
    for (int i = 0; i < sc->nnon; i++) {
        const tgV_node *x = &g->nodes[argn[sc->nargs - sc->nnon + i]];
        pin[base + i] = param_input(g, sc->params[base + i], x->dtype, x->ndim, x->shape);
    }
    for (int i = 0; i < sc->nparams; i++)
        if (!pin[i])
            return tgE_nomem(tgV_err_of(b)), -1;
    return 0;
}

static int check_outer(tgV_builder *b, tgSc_scan *sc, const int *argn)
{
    tgV_graph *g = tgV_graph_of(b);
    char msg[300];
    for (int i = 0; i < sc->nseq; i++) {
        const tgV_node *x = &g->nodes[argn[i]];
        if (x->ndim < 1) {
            snprintf(msg, sizeof msg, "sequence %d is 0-d: it has no rows to iterate over", i);
            return tgV_fail(b, sc->term, msg);
        }
        tgV_size l0 = tgV_canon(g, g->nodes[argn[0]].shape[0]), l = tgV_canon(g, x->shape[0]);
        if (l0 >= 0 && l >= 0 && l != l0) {
            snprintf(msg, sizeof msg, "sequence %d has %lld rows, sequence 0 has %lld", i, (long long)l,
                     (long long)l0);
            return tgV_fail(b, sc->term, msg);
        }
        if (tgV_unify(b, sc->term, l0, l, "sequence lengths") < 0)
            return -1;
    }
    if (sc->autosteps)
        sc->steps = g->nodes[argn[0]].shape[0];
    tgV_size n = tgV_canon(g, sc->steps), l = sc->nseq ? tgV_canon(g, g->nodes[argn[0]].shape[0]) : -1;
    if (n >= 0 && l >= 0 && n > l) {
        snprintf(msg, sizeof msg, "%lld steps, but the sequences have %lld rows", (long long)n, (long long)l);
        return tgV_fail(b, sc->term, msg);
    }
    for (int o = 0; o < sc->nout; o++) {
        const tgSc_out *out = &sc->outs[o];
        if (out->keep && sc->until)
            return tgV_fail(b, sc->term, "(last N) is not allowed with until (the last N steps done are not "
                                         "known before the loop stops)");
        if (out->keep && n >= 0 && n < out->keep) {
            snprintf(msg, sizeof msg, "output %d keeps the last %d rows but the scan runs %lld steps", o,
                     out->keep, (long long)n);
            return tgV_fail(b, sc->term, msg);
        }
        if (out->kind == TGSC_MITMOT) {
            const tgV_node *x = &g->nodes[argn[out->arg]];
            tgV_size r = x->ndim ? tgV_canon(g, x->shape[0]) : 0;
            if (x->ndim < 1 || (r >= 0 && n >= 0 && r != n + out->maxtap)) {
                snprintf(msg, sizeof msg, "output %d: a mitmot buffer has steps + %d rows (%lld), its "
                         "initial value has %lld", o, out->maxtap, (long long)(n + out->maxtap), (long long)r);
                return tgV_fail(b, sc->term, msg);
            }
            continue;
        }
        if (out->kind != TGSC_MITSOT)
            continue;
        const tgV_node *x = &g->nodes[argn[out->arg]];
        tgV_size r = x->ndim ? tgV_canon(g, x->shape[0]) : 0;
        if (x->ndim < 1 || (r >= 0 && r != out->maxtap)) {
            snprintf(msg, sizeof msg, "output %d: taps reach back %d steps but the initial value has %lld rows",
                     o, out->maxtap, (long long)r);
            return tgV_fail(b, sc->term, msg);
        }
    }
    return 0;
}

/* Type the inner function.  A bare-number INIT takes its result's dtype:
 * its parameter starts as the smallest dtype of its kind (bool, float32),
 * which promotes to whatever it meets, and takes the result's dtype until
 * that stops changing. */
static int type_inner(tgV_builder *b, tgSc_scan *sc, int *argn)
{
    tgV_graph *g = tgV_graph_of(b);
    int nres = sc->nres + (sc->until != NULL);
    tg_term **pin = GC_MALLOC((size_t)(sc->nparams + 1) * sizeof *pin);
    tg_term **res = GC_MALLOC((size_t)(nres + 1) * sizeof *res);
    int *dt = GC_MALLOC_ATOMIC((size_t)sc->nout * sizeof *dt);
    if (!pin || !res || !dt)
        return tgE_nomem(tgV_err_of(b)), -1;
    memcpy(res, sc->results, (size_t)sc->nres * sizeof *res);
    if (sc->until)
        res[sc->nres] = sc->until;
    for (int o = 0; o < sc->nout; o++) {
        dt[o] = -1;
        if (sc->outs[o].kind == TGSC_NITSOT)
            continue;
        const tgV_node *x = &g->nodes[argn[sc->outs[o].arg]];
        if (x->weak)
            dt[o] = tgV_is_float(x->dtype) ? TG_FLOAT32 : TG_BOOL;
    }
    for (int pass = 0;; pass++) {
        if (param_inputs(b, sc, argn, dt, pin) < 0)
            return -1;
        sc->ig = tgV_build_inner(b, (size_t)sc->nparams, pin, sc->params, (size_t)nres, res);
        if (!sc->ig)
            return -1;
        bool again = false;
        for (int o = 0; o < sc->nout; o++) {
            const tgSc_out *out = &sc->outs[o];
            if (out->kind == TGSC_NITSOT)
                continue;
            const tgV_node *x = &g->nodes[argn[out->arg]];
            tg_dtype want = dt[o] >= 0 ? (tg_dtype)dt[o] : x->dtype, rd = want;
            for (int r = 0; r < out->nres && rd == want; r++)
                rd = sc->ig->nodes[sc->ig->outputs[out->r0 + r]].dtype;
            if (rd == want)
                continue;
            if (dt[o] < 0 || pass == 4) {
                char msg[200];
                snprintf(msg, sizeof msg, "output %d: the step gives %s, the initial value is %s", o,
                         tgV_dtype_name(rd), tgV_dtype_name(want));
                return tgV_fail(b, sc->term, msg);
            }
            dt[o] = (int)rd, again = true;
        }
        if (!again)
            break;
    }
    /* a bare-number INIT becomes a constant of its output's dtype */
    for (int o = 0; o < sc->nout; o++)
        if (dt[o] >= 0) {
            int v = tgV_const_node(b, (tg_dtype)dt[o], sc->outs[o].init);
            if (v < 0)
                return -1;
            argn[sc->outs[o].arg] = v;
        }
    return 0;
}

/* The result of a recurrent output must have its taps' shape. */
static int check_results(tgV_builder *b, tgSc_scan *sc)
{
    const tgV_graph *ig = sc->ig;
    sc->res = GC_MALLOC_ATOMIC((size_t)sc->nres * sizeof *sc->res);
    if (!sc->res)
        return tgE_nomem(tgV_err_of(b)), -1;
    for (int r = 0; r < sc->nres; r++) {
        int o = sc->rout[r];
        const tgSc_out *out = &sc->outs[o];
        sc->res[r] = ig->outputs[r];
        if (out->kind == TGSC_NITSOT)
            continue;
        const tgV_node *n = &ig->nodes[sc->res[r]], *p = &ig->nodes[ig->inputs[out->param]];
        bool bad = n->ndim != p->ndim;
        for (int d = 0; !bad && d < n->ndim; d++)
            bad = n->shape[d] >= 0 && p->shape[d] >= 0 && n->shape[d] != p->shape[d];
        if (bad) {
            char msg[400], a[150], c[150];
            snprintf(msg, sizeof msg, "output %d changes shape between steps: %s before a step, %s after", o,
                     tgV_shape_text(ig, p->ndim, p->shape, a, sizeof a),
                     tgV_shape_text(ig, n->ndim, n->shape, c, sizeof c));
            return tgV_fail(b, sc->term, msg);
        }
    }
    if (sc->until) {
        sc->cond = ig->outputs[sc->nres];
        if (ig->nodes[sc->cond].ndim != 0)
            return tgV_fail(b, sc->term, "the until condition must be 0-d");
    }
    return 0;
}

/* What the inner graph learnt about sizes (two symbols equal, a symbol's
 * static value) holds outside too. */
static int share_sizes(tgV_builder *b, tgSc_scan *sc)
{
    const tgV_graph *ig = sc->ig;
    for (int k = 0; k < ig->nsyms; k++) {
        tgV_size c = tgV_canon(ig, -(tgV_size)k - 1), mine, theirs;
        if (c == -(tgV_size)k - 1)
            continue;
        if (outer_size(b, ig, -(tgV_size)k - 1, &mine) < 0 || outer_size(b, ig, c, &theirs) < 0 ||
            tgV_unify(b, sc->term, mine, theirs, "the scan's lambda") < 0)
            return -1;
    }
    return 0;
}

/* The outer nodes: one per output, then the step count. */
static int make_nodes(tgV_builder *b, tgSc_scan *sc, int *argn)
{
    tgV_graph *g = tgV_graph_of(b);
    tg_ctx *c = g->ctx;
    for (int o = 0; o <= sc->nout; o++) {
        tg_term *t = sc->term;
        if (o > 0) {
            tg_term *parts[3] = {tg_symbol_cstr(c, o < sc->nout ? "scan_output" : "scan_steps"), sc->term,
                                 tg_int(c, o)};
            t = tg_list(c, o < sc->nout ? 3 : 2, parts, NULL);
            if (!t)
                return tgE_nomem(tgV_err_of(b)), -1;
        }
        tgV_node *n = tgV_new_node(b, t, TGV_SCAN);
        if (!n)
            return -1;
        if (o == 0)
            sc->first = g->n - 1;
        n->scan = sc, n->sout = o < sc->nout ? o : -1;
        n->args = argn, n->nargs = sc->nargs;
        if (o == sc->nout) {
            n->dtype = n->cdt = TG_INT64;
            continue;
        }
        const tgSc_out *out = &sc->outs[o];
        const tgV_node *r = &sc->ig->nodes[sc->res[out->r0]];
        n->dtype = n->cdt = r->dtype;
        if (out->kind == TGSC_MITMOT) {     /* the buffer: INIT's shape */
            const tgV_node *x = &g->nodes[argn[out->arg]];
            n->ndim = x->ndim;
            memcpy(n->shape, x->shape, (size_t)x->ndim * sizeof *n->shape);
            continue;
        }
        if (!out->last)
            n->shape[n->ndim++] = out->keep ? out->keep : sc->steps;
        if (r->ndim + n->ndim > TGV_MAXDIM)
            return tgV_fail(b, sc->term, "too many axes");
        for (int d = 0; d < r->ndim; d++)
            if (outer_size(b, sc->ig, r->shape[d], &n->shape[n->ndim++]) < 0)
                return -1;
    }
    tg_term *parts[3] = {tg_symbol_cstr(c, "scan_output"), sc->term, tg_int(c, 0)};
    tg_term *t0 = tg_list(c, 3, parts, NULL);
    return t0 ? tgV_alias(b, t0, sc->first) : (tgE_nomem(tgV_err_of(b)), -1);
}

static int build_scan(tgV_builder *b, tg_term *t, tg_term **need)
{
    tgSc_scan *sc = GC_MALLOC(sizeof *sc);
    if (!sc)
        return tgE_nomem(tgV_err_of(b)), -1;
    if (parse(b, t, sc) < 0)
        return -1;
    int *argn = GC_MALLOC_ATOMIC((size_t)(sc->nargs + 1) * sizeof *argn);
    if (!argn)
        return tgE_nomem(tgV_err_of(b)), -1;
    for (int i = 0; i < sc->nargs; i++)
        if ((argn[i] = tgV_node_of(b, sc->args[i])) < 0) {
            *need = sc->args[i];
            return 0;
        }
    if (check_outer(b, sc, argn) < 0 || type_inner(b, sc, argn) < 0 || check_results(b, sc) < 0 ||
        share_sizes(b, sc) < 0)
        return -1;
    /* the inner schedule keeps every parameter intact: they alias outer
     * arrays and earlier rows; its reductions stay steps, which the
     * generated scan body knows (it has no fused reductions) */
    sc->ig->keep_reductions = true;
    sc->ig->ger_steps = true;   /* the state updated in place, step after step */
    sc->is = tgH_schedule(sc->ig, NULL, tgV_err_of(b));
    if (!sc->is)
        return -1;
    return make_nodes(b, sc, argn) < 0 ? -1 : 1;
}

int tgSc_build(tgV_builder *b, tg_term *t, tg_term **need)
{
    /* typing a lambda's graph calls the builder again: bounded, so that
     * no C recursion follows the depth of the term */
    if (tgV_depth(b) >= TGSC_MAX_NEST)
        return tgV_fail(b, t, "scans nested more than " TGSC_MAX_NEST_TEXT " lambdas deep");
    if (sym_is(tg_car(t), "scan"))
        return build_scan(b, t, need);
    bool steps = sym_is(tg_car(t), "scan_steps");
    tg_term *a[3];
    size_t n = tg_elements(t, a, 3);
    int64_t k = 0;
    if (tg_tail(t) != tg_nil() || n != (steps ? 2u : 3u) ||
        (!steps && (tg_kind_of(a[2]) != TG_INT || tg_int_get(a[2], &k) < 0)))
        return tgV_fail(b, t, steps ? "a step count is (scan_steps S)" : "an output of a scan is (scan_output S K)");
    if (!sym_is(tg_car(a[1]), "scan"))
        return tgV_fail(b, t, "not a scan");
    int v = tgV_node_of(b, a[1]);
    if (v < 0) {
        *need = a[1];
        return 0;
    }
    const tgV_node *n0 = &tgV_graph_of(b)->nodes[v];
    if (n0->op != TGV_SCAN || n0->sout != 0)
        return tgV_fail(b, t, "not a scan");
    if (k < 0 || k >= n0->scan->nout)
        return tgV_fail(b, t, "the scan has no such output");
    return tgV_alias(b, t, steps ? v + n0->scan->nout : v + (int)k) < 0 ? -1 : 1;
}

/* ---- the schedule's text -------------------------------------------------- */

void tgSc_put_step(tgB_buf *b, const tgH_sched *s, int k)
{
    const tgH_step *st = &s->steps[k];
    const tgV_graph *g = s->g;
    const tgSc_scan *sc = g->nodes[st->node].scan;
    tgB_puts(b, " (out");
    for (int i = 0; i < st->nouts; i++) {
        int v = st->outs[i];
        tgB_puts(b, " (");
        tgH_put_name(s, b, v);
        tgB_printf(b, " %s", tgV_dtype_name(g->nodes[v].dtype));
        tgH_put_dest(s, b, v);
        tgB_putc(b, ')');
    }
    tgB_puts(b, ") (in");
    for (int i = 0; i < st->nins; i++) {
        tgB_putc(b, ' ');
        tgH_put_name(s, b, st->ins[i]);
    }
    tgB_puts(b, ") (steps ");
    tgV_size n = tgV_canon(g, sc->steps);
    if (n >= 0) {
        tgB_printf(b, "%lld", (long long)n);
    } else {
        size_t len;
        const char *name = tg_symbol_name(g->syms[-n - 1], &len);
        tgB_append(b, name, len);
    }
    tgB_puts(b, sc->backwards ? ") backwards (body " : ") (body ");
    tg_term *body = tgH_term(sc->is, NULL);
    char *text = body ? tg_print(body, NULL) : NULL;
    tgB_puts(b, text ? text : "?");
    free(text);
    tgB_putc(b, ')');
}

/* ---- running it ------------------------------------------------------------ */

/* The storage of output o: the stacked output (full) or a ring. */
typedef struct store {
    char *base;
    int64_t rowstride;      /* bytes between the rows of two steps */
    int64_t mask;           /* ring: rows - 1; full: -1 */
    int64_t strides[TGV_MAXDIM];   /* within a row */
} store;

struct tgSc_state {
    const tgSc_scan *sc;
    tgI_state in;           /* the inner schedule's interpreter state */
    tg_array *pin, *pout;   /* per parameter, per inner output */
    store *stor;            /* per output */
    char **ring;            /* per output: ring memory (malloc'd) or NULL */
    size_t *ringcap;
    char **scr;             /* per result of a MITMOT: this step's value (malloc'd) */
    size_t *scrcap;
    int64_t cond[2];        /* where the until condition lands */
};

tgSc_state *tgSc_state_new(const tgSc_scan *sc)
{
    tgSc_state *ss = calloc(1, sizeof *ss);
    if (!ss)
        return NULL;
    ss->sc = sc;
    int nres = sc->nres + 1;
    ss->pin = calloc((size_t)sc->nparams + 1, sizeof *ss->pin);
    ss->pout = calloc((size_t)nres, sizeof *ss->pout);
    ss->stor = calloc((size_t)sc->nout, sizeof *ss->stor);
    ss->ring = calloc((size_t)sc->nout, sizeof *ss->ring);
    ss->ringcap = calloc((size_t)sc->nout, sizeof *ss->ringcap);
    ss->scr = calloc((size_t)nres, sizeof *ss->scr);
    ss->scrcap = calloc((size_t)nres, sizeof *ss->scrcap);
    if (!ss->pin || !ss->pout || !ss->stor || !ss->ring || !ss->ringcap || !ss->scr || !ss->scrcap ||
        tgI_init(&ss->in, sc->is) < 0) {
        free(ss->pin), free(ss->pout), free(ss->stor), free(ss->ring), free(ss->ringcap);
        free(ss->scr), free(ss->scrcap);
        free(ss);
        return NULL;
    }
    return ss;
}

void tgSc_state_free(tgSc_state *ss)
{
    if (!ss)
        return;
    tgI_free(&ss->in);
    for (int o = 0; o < ss->sc->nout; o++)
        free(ss->ring[o]);
    for (int r = 0; r < ss->sc->nres; r++)
        free(ss->scr[r]);
    free(ss->pin), free(ss->pout), free(ss->stor), free(ss->ring), free(ss->ringcap);
    free(ss->scr), free(ss->scrcap);
    free(ss);
}

static int64_t conc(const tgI_state *st, const tgV_graph *g, tgV_size s)
{
    s = tgV_canon(g, s);
    return s >= 0 ? s : st->symv[-s - 1];
}

static int64_t elems(int ndim, const int64_t *shape)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++)
        n *= shape[d];
    return n;
}

static void c_strides(int ndim, const int64_t *shape, size_t es, int64_t *strides)
{
    int64_t s = (int64_t)es;
    for (int d = ndim - 1; d >= 0; d--) {
        strides[d] = s;
        s *= shape[d] ? shape[d] : 1;
    }
}

static int runerr(const tgSc_scan *sc, tg_error *err, const char *what)
{
    char buf[200];
    tgE_set(err, TG_ERR_RANGE, NULL, 0, 0, "kernels: in %s: %s", tgV_show(sc->term, buf, sizeof buf), what);
    return -1;
}

/* Copy the elements of shape (ndim, shape) from src to dst (same dtype). */
static void copy_elems(char *dst, const int64_t *ds, const char *src, const int64_t *ss, int ndim,
                       const int64_t *shape, size_t es)
{
    int64_t idx[TGV_MAXDIM] = {0};
    if (elems(ndim, shape) == 0)
        return;
    for (;;) {
        int64_t od = 0, os = 0;
        for (int d = 0; d < ndim; d++)
            od += idx[d] * ds[d], os += idx[d] * ss[d];
        memcpy(dst + od, src + os, es);
        int d = ndim - 1;
        for (; d >= 0; d--) {
            if (++idx[d] < shape[d])
                break;
            idx[d] = 0;
        }
        if (d < 0)
            return;
    }
}

/* Where the value of output o at step u lives (u < 0: INIT's rows). */
static char *value_at(const tgSc_state *ss, const tgI_arr *init, int o, int64_t u, const int64_t **strides)
{
    const tgSc_out *out = &ss->sc->outs[o];
    const store *sr = &ss->stor[o];
    if (u < 0) {
        int drop = out->kind == TGSC_MITSOT || out->kind == TGSC_MITMOT;
        *strides = init->strides + drop;
        return init->data + (drop ? (u + out->maxtap) * init->strides[0] : 0);
    }
    *strides = sr->strides;
    return sr->base + (sr->mask >= 0 ? (u & sr->mask) : u) * sr->rowstride;
}

/* Room for n bytes in *p (capacity *cap); -1 when out of memory. */
static int reserve(char **p, size_t *cap, size_t n)
{
    if (n <= *cap)
        return 0;
    char *q = realloc(*p, n);
    if (!q)
        return -1;
    *p = q, *cap = n;
    return 0;
}

/* A MITMOT's buffer: the output array (or, when nothing reads it, memory
 * of its own) holding a copy of INIT, which must have n + M rows; and the
 * rows its results are computed in before they are stored. */
static int mitmot_setup(const tgSc_scan *sc, const tgI_state *st, const tgI_arr *init, const tgI_arr *res,
                        tgSc_state *ss, int o, int64_t n, tg_error *err)
{
    const tgSc_out *out = &sc->outs[o];
    store *sr = &ss->stor[o];
    (void)st;
    if (init->ndim < 1 || init->shape[0] != n + out->maxtap) {
        char msg[200];
        snprintf(msg, sizeof msg, "output %d: a mitmot buffer has steps + %d rows (%lld), its initial value has %lld",
                 o, out->maxtap, (long long)(n + out->maxtap), (long long)(init->ndim ? init->shape[0] : 0));
        return runerr(sc, err, msg);
    }
    size_t es = tgV_dtype_size(init->dtype);
    int rnd = init->ndim - 1;
    size_t rowb = (size_t)elems(rnd, init->shape + 1) * es;
    int64_t full[TGV_MAXDIM];
    if (res->data) {
        sr->base = res->data, sr->rowstride = res->strides[0];
        memcpy(sr->strides, res->strides + 1, (size_t)rnd * sizeof *sr->strides);
    } else {
        if (reserve(&ss->ring[o], &ss->ringcap[o], (size_t)init->shape[0] * rowb + 1) < 0)
            return tgE_nomem(err), -1;
        sr->base = ss->ring[o], sr->rowstride = (int64_t)rowb;
        c_strides(rnd, init->shape + 1, es, sr->strides);
    }
    sr->mask = -1;
    full[0] = sr->rowstride;
    memcpy(full + 1, sr->strides, (size_t)rnd * sizeof *full);
    if (sr->base != init->data)     /* else the buffer is INIT's own (schedule.c, scan_donor) */
        copy_elems(sr->base, full, init->data, init->strides, init->ndim, init->shape, es);
    for (int r = out->r0; r < out->r0 + out->nres; r++)
        if (reserve(&ss->scr[r], &ss->scrcap[r], rowb + 1) < 0)
            return tgE_nomem(err), -1;
    return 0;
}

/* The MITMOT results of step t, computed aside, stored in their rows t + T. */
static void mitmot_store(tgSc_state *ss, int64_t t)
{
    const tgSc_scan *sc = ss->sc;
    for (int o = 0; o < sc->nout; o++) {
        const tgSc_out *out = &sc->outs[o];
        if (out->kind != TGSC_MITMOT)
            continue;
        const store *sr = &ss->stor[o];
        for (int j = 0; j < out->nres; j++) {
            const tg_array *p = &ss->pout[out->r0 + j];
            copy_elems(sr->base + (t + out->otaps[j]) * sr->rowstride, sr->strides, p->data, p->strides, p->ndim,
                       p->shape, tgV_dtype_size(p->dtype));
        }
    }
}

/* Checks of one call, and the storage of each output. */
static int setup(const tgH_sched *s, tgI_state *st, const tgH_step *step, tgSc_state *ss, int64_t n,
                 tg_error *err)
{
    const tgSc_scan *sc = ss->sc;
    const tgV_graph *g = s->g;
    char msg[200];
    if (sc->nseq) {
        int64_t len = st->vals[g->nodes[step->node].args[0]].shape[0];
        if (n > len) {
            snprintf(msg, sizeof msg, "%lld steps, but the sequences have %lld rows", (long long)n,
                     (long long)len);
            return runerr(sc, err, msg);
        }
    }
    for (int o = 0; o < sc->nout; o++) {
        const tgSc_out *out = &sc->outs[o];
        const tgI_arr *res = &st->vals[sc->first + o];
        store *sr = &ss->stor[o];
        if (out->kind == TGSC_MITMOT) {
            if (mitmot_setup(sc, st, &st->vals[g->nodes[step->node].args[out->arg]], res, ss, o, n, err) < 0)
                return -1;
            continue;
        }
        if (out->kind == TGSC_MITSOT) {
            const tgI_arr *init = &st->vals[g->nodes[step->node].args[out->arg]];
            if (init->shape[0] != out->maxtap) {
                snprintf(msg, sizeof msg, "output %d: taps reach back %d steps but the initial value has %lld rows",
                         o, out->maxtap, (long long)init->shape[0]);
                return runerr(sc, err, msg);
            }
        }
        if (out->keep && n < out->keep) {
            snprintf(msg, sizeof msg, "output %d keeps the last %d rows but the scan runs %lld steps", o,
                     out->keep, (long long)n);
            return runerr(sc, err, msg);
        }
        int rd = out->last ? 0 : 1;     /* the row's first axis in res */
        int rnd = res->ndim - rd;
        const int64_t *rshape = res->shape + rd;
        size_t es = tgV_dtype_size(res->dtype);
        if (!out->last && !out->keep && res->data) {    /* the stacked output itself */
            sr->base = res->data, sr->rowstride = res->strides[0], sr->mask = -1;
            memcpy(sr->strides, res->strides + 1, (size_t)rnd * sizeof *sr->strides);
            continue;
        }
        int64_t rows = 1;     /* (last N): the ring holds the final N rows too */
        while (rows < out->maxtap + 1 || rows < out->keep)
            rows *= 2;
        if (out->kind == TGSC_NITSOT && out->last && res->data) {     /* nitsot last: the output */
            sr->base = res->data, sr->rowstride = 0, sr->mask = 0;
            memcpy(sr->strides, res->strides, (size_t)rnd * sizeof *sr->strides);
            continue;
        }
        size_t rowb = (size_t)elems(rnd, rshape) * es;
        size_t need = (size_t)rows * (rowb ? rowb : 1);
        if (need > ss->ringcap[o]) {
            char *p = realloc(ss->ring[o], need);
            if (!p)
                return tgE_nomem(err), -1;
            ss->ring[o] = p, ss->ringcap[o] = need;
        }
        sr->base = ss->ring[o], sr->rowstride = (int64_t)rowb, sr->mask = rows - 1;
        c_strides(rnd, rshape, es, sr->strides);
    }
    return 0;
}

/* Point parameter and output arrays at step t's rows. */
static void point(const tgH_sched *s, tgI_state *st, const tgH_step *step, tgSc_state *ss, int64_t n, int64_t t)
{
    const tgSc_scan *sc = ss->sc;
    const int *args = s->g->nodes[step->node].args;
    int64_t row = sc->backwards ? n - 1 - t : t;
    for (int i = 0; i < sc->nseq; i++) {
        const tgI_arr *x = &st->vals[args[i]];
        ss->pin[i].data = x->data + row * x->strides[0];
    }
    for (int o = 0; o < sc->nout; o++) {
        const tgSc_out *out = &sc->outs[o];
        const int64_t *strides;
        bool mm = out->kind == TGSC_MITMOT;
        for (int j = 0; j < out->ntaps; j++) {
            tg_array *p = &ss->pin[out->param + j];
            p->data = value_at(ss, out->kind ? &st->vals[args[out->arg]] : NULL, o,
                               mm ? t + out->taps[j] : t - out->taps[j], &strides);
            memcpy(p->strides, strides, (size_t)p->ndim * sizeof *strides);
        }
        if (mm)
            for (int j = 0; j < out->nres; j++)
                ss->pout[out->r0 + j].data = ss->scr[out->r0 + j];
        else
            ss->pout[out->r0].data = value_at(ss, NULL, o, t, &strides);
    }
    int base = sc->nparams - sc->nnon;
    for (int i = 0; i < sc->nnon; i++)
        ss->pin[base + i].data = st->vals[args[sc->nargs - sc->nnon + i]].data;
}

/* The inner arrays' dtypes, shapes and (fixed) strides. */
static void describe(const tgH_sched *s, tgI_state *st, const tgH_step *step, tgSc_state *ss)
{
    const tgSc_scan *sc = ss->sc;
    const tgV_graph *ig = sc->ig;
    const int *args = s->g->nodes[step->node].args;
    for (int i = 0; i < sc->nparams; i++) {
        const tgV_node *pn = &ig->nodes[ig->inputs[i]];
        tg_array *p = &ss->pin[i];
        memset(p, 0, sizeof *p);
        p->dtype = pn->dtype, p->ndim = pn->ndim;
        const tgI_arr *x = NULL;
        int drop = 0;
        if (i < sc->nseq) {
            x = &st->vals[args[i]], drop = 1;
        } else if (i >= sc->nparams - sc->nnon) {
            x = &st->vals[args[sc->nargs - (sc->nparams - i)]];
        } else {
            for (int o = 0; o < sc->nout; o++)
                if (sc->outs[o].kind && i >= sc->outs[o].param && i < sc->outs[o].param + sc->outs[o].ntaps)
                    x = &st->vals[args[sc->outs[o].arg]],
                    drop = sc->outs[o].kind == TGSC_MITSOT || sc->outs[o].kind == TGSC_MITMOT;
        }
        memcpy(p->shape, x->shape + drop, (size_t)p->ndim * sizeof *p->shape);
        memcpy(p->strides, x->strides + drop, (size_t)p->ndim * sizeof *p->strides);
    }
    for (int r = 0; r < sc->nres; r++) {
        int o = sc->rout[r];
        const tgI_arr *res = &st->vals[sc->first + o];
        int rd = sc->outs[o].last ? 0 : 1;
        tg_array *p = &ss->pout[r];
        memset(p, 0, sizeof *p);
        p->dtype = res->dtype, p->ndim = res->ndim - rd;
        memcpy(p->shape, res->shape + rd, (size_t)p->ndim * sizeof *p->shape);
        if (sc->outs[o].kind == TGSC_MITMOT)
            c_strides(p->ndim, p->shape, tgV_dtype_size(p->dtype), p->strides);
        else
            memcpy(p->strides, ss->stor[o].strides, (size_t)p->ndim * sizeof *p->strides);
    }
    if (sc->until) {
        tg_array *p = &ss->pout[sc->nres];
        memset(p, 0, sizeof *p);
        p->dtype = ig->nodes[sc->cond].dtype;
        p->data = (char *)ss->cond;
    }
}

/* Inner outputs written in place take this step's destinations. */
static void point_inner(tgSc_state *ss)
{
    const tgH_sched *is = ss->sc->is;
    const tgV_graph *ig = is->g;
    for (int i = 0; i < ig->ninputs; i++)
        ss->in.vals[ig->inputs[i]].data = ss->pin[i].data;
    for (int i = 0; i < ig->ninputs; i++)
        memcpy(ss->in.vals[ig->inputs[i]].strides, ss->pin[i].strides, sizeof ss->pin[i].strides);
    for (int i = 0; i < ig->noutputs; i++) {
        int v = ig->outputs[i];
        tgV_op op = ig->nodes[v].op;
        if (is->output[v] != i || op == TGV_INPUT || op == TGV_CONST || op == TGV_TRANSPOSE ||
            op == TGV_DIMSHUFFLE || op == TGV_RESHAPE)
            continue;
        ss->in.vals[v].data = ss->pout[i].data;
    }
}

static bool cond_true(const tgSc_state *ss)
{
    const tgSc_scan *sc = ss->sc;
    tg_dtype d = sc->ig->nodes[sc->cond].dtype;
    const char *p = (const char *)ss->cond;
    switch (d) {
    case TG_FLOAT64: { double v; memcpy(&v, p, 8); return v != 0; }
    case TG_FLOAT32: { float v; memcpy(&v, p, 4); return v != 0; }
    case TG_INT64: { int64_t v; memcpy(&v, p, 8); return v != 0; }
    case TG_INT32: { int32_t v; memcpy(&v, p, 4); return v != 0; }
    default: return *p != 0;
    }
}

/* The recurrent results must keep their taps' shape (symbolic sizes are
 * known only now). */
static int check_shapes(const tgSc_state *ss, tg_error *err)
{
    const tgSc_scan *sc = ss->sc;
    for (int k = 0; k < sc->nres; k++) {
        int o = sc->rout[k];
        const tgSc_out *out = &sc->outs[o];
        if (out->kind == TGSC_NITSOT)
            continue;
        const tgI_arr *r = &ss->in.vals[sc->res[k]];
        const tg_array *p = &ss->pin[out->param];
        bool same = r->ndim == p->ndim;
        for (int d = 0; same && d < r->ndim; d++)
            same = r->shape[d] == p->shape[d];
        if (same)
            continue;
        char msg[300], a[120] = "(", c[120] = "(";
        for (int d = 0; d < p->ndim; d++)
            snprintf(a + strlen(a), sizeof a - strlen(a), d ? " %lld" : "%lld", (long long)p->shape[d]);
        for (int d = 0; d < r->ndim; d++)
            snprintf(c + strlen(c), sizeof c - strlen(c), d ? " %lld" : "%lld", (long long)r->shape[d]);
        snprintf(msg, sizeof msg, "output %d changes shape between steps: %s) before a step, %s) after", o, a, c);
        return runerr(sc, err, msg);
    }
    return 0;
}

/* The generated function (doc/scan.md): steps done. */
typedef void (*blas_fn)(void);
typedef int64_t (*native_fn)(int64_t n, char *const *P, const int64_t *R, const int64_t *z, blas_fn const *fp);
static int64_t run_native(const tgH_sched *s, tgI_state *st, const tgH_step *step, tgSc_state *ss,
                          native_fn fn, int64_t n);

/* After the loop: last values out of rings, zero rows after an early stop,
 * the step count. */
static void finish(const tgH_sched *s, tgI_state *st, const tgH_step *step, tgSc_state *ss, int64_t n,
                   int64_t done)
{
    const tgSc_scan *sc = ss->sc;
    const int *args = s->g->nodes[step->node].args;
    for (int o = 0; o < sc->nout; o++) {
        const tgSc_out *out = &sc->outs[o];
        const tgI_arr *res = &st->vals[sc->first + o];
        if (!res->data || out->kind == TGSC_MITMOT)
            continue;
        size_t es = tgV_dtype_size(res->dtype);
        if (out->last && (out->kind != TGSC_NITSOT || ss->stor[o].base != res->data)) {
            const int64_t *strides;
            const char *src = value_at(ss, out->kind ? &st->vals[args[out->arg]] : NULL, o, done - 1, &strides);
            if (src != res->data)   /* zero steps, in place: INIT's row is the value */
                copy_elems(res->data, res->strides, src, strides, res->ndim, res->shape, es);
        } else if (out->keep) {     /* the final rows, in order, out of the ring */
            int64_t rs = res->strides[0];
            for (int64_t r = 0; r < out->keep; r++) {
                const int64_t *strides;
                const char *src = value_at(ss, NULL, o, done - out->keep + r, &strides);
                copy_elems(res->data + r * rs, res->strides + 1, src, strides, res->ndim - 1, res->shape + 1, es);
            }
        } else if (!out->last && done < n) {
            int64_t rowb = elems(res->ndim - 1, res->shape + 1);
            for (int64_t t = done; t < n; t++) {
                char *row = res->data + t * res->strides[0];
                int64_t idx[TGV_MAXDIM] = {0};
                for (int64_t e = 0; e < rowb; e++) {
                    int64_t off = 0;
                    for (int d = 1; d < res->ndim; d++)
                        off += idx[d] * res->strides[d];
                    memset(row + off, 0, es);
                    for (int d = res->ndim - 1; d >= 1; d--) {
                        if (++idx[d] < res->shape[d])
                            break;
                        idx[d] = 0;
                    }
                }
            }
        }
    }
    const tgI_arr *cnt = &st->vals[sc->first + sc->nout];
    if (cnt->data)
        memcpy(cnt->data, &done, sizeof done);
}

int tgSc_run(const tgH_sched *s, tgI_state *st, const tgH_step *step, tgSc_state *ss, tgJ_loop_fn kern,
             tg_error *err)
{
    const tgSc_scan *sc = ss->sc;
    int64_t n = conc(st, s->g, sc->steps);
    if (setup(s, st, step, ss, n, err) < 0)
        return -1;
    describe(s, st, step, ss);
    if (n == 0) {
        for (int o = 0; o < sc->nout; o++)
            if (sc->outs[o].last && sc->outs[o].kind == TGSC_NITSOT && st->vals[sc->first + o].data)
                return runerr(sc, err, "a (nitsot last) output of a scan of 0 steps has no value");
        finish(s, st, step, ss, n, 0);
        return 0;
    }
    point(s, st, step, ss, n, 0);
    /* the shapes are computed before the outputs are checked, so a
     * recurrent result of the wrong shape is named as such */
    if (tgI_bind(sc->is, &ss->in, ss->pin, ss->pout, err) < 0) {
        tg_error e2;
        if (check_shapes(ss, &e2) < 0 && err)
            *err = e2;
        return -1;
    }
    if (check_shapes(ss, err) < 0)
        return -1;
    int64_t done = -1;
    ss->in.intrp = st->intrp;   /* a nested scan's steps stop too */
    if (kern) {     /* kept with the loops' type: a function pointer, cast back */
        native_fn fn = (native_fn)(void (*)(void))kern;
        done = run_native(s, st, step, ss, fn, n);
        if (done >= 0 && st->intrp && *st->intrp)
            return tgE_set(err, TG_ERR_RANGE, NULL, 0, 0, "interrupted"), -1;
    }
    if (done < 0) {
        for (done = 0; done < n;) {
            point(s, st, step, ss, n, done);
            point_inner(ss);
            ss->in.rstream = tgRn_stream(st->rstream, done);    /* fresh draws each step */
            if (tgI_exec(sc->is, &ss->in, ss->pout, err) < 0)     /* it polls the flag */
                return -1;
            mitmot_store(ss, done);
            done++;
            if (sc->until && cond_true(ss))
                break;
        }
    }
    finish(s, st, step, ss, n, done);
    return 0;
}

/* ---- the compiled loop ------------------------------------------------------ */

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

/* The output whose tap parameter p is, and the tap's distance; -1 if none. */
static int tap_of(const tgSc_scan *sc, int p, int *dist)
{
    for (int o = 0; o < sc->nout; o++) {
        const tgSc_out *out = &sc->outs[o];
        if (out->kind != TGSC_NITSOT && p >= out->param && p < out->param + out->ntaps) {
            *dist = out->taps[p - out->param];
            return o;
        }
    }
    return -1;
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
        if (a->op == TGV_INPUT && (o = tap_of(sc, a->input, &dist)) >= 0 && carried(sc, o)) {
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

static void put_dot_block(tgB_buf *b, const tgSc_scan *sc, const tgH_step *st)
{
    const tgV_graph *ig = sc->ig;
    const tgV_node *n = &ig->nodes[st->node];
    const tgV_node *A = &ig->nodes[n->args[0]], *B = &ig->nodes[n->args[1]];
    bool f64 = n->dtype == TG_FLOAT64;
    const char *T = f64 ? "double" : "float";
    tgB_puts(b, "    {\n     char *a = ");
    put_ptr(b, sc, n->args[0]);
    tgB_puts(b, ", *bb = ");
    put_ptr(b, sc, n->args[1]);
    tgB_puts(b, ", *c = ");
    put_ptr(b, sc, st->node);
    tgB_puts(b, ";\n     int64_t m = ");
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
    tgB_puts(b, "    {\n     char *u = ");
    put_ptr(b, sc, n->args[0]);
    tgB_puts(b, ", *vv = ");
    put_ptr(b, sc, n->args[1]);
    tgB_puts(b, ", *cin = ");
    put_ptr(b, sc, n->args[2]);
    tgB_puts(b, ", *c = ");
    put_ptr(b, sc, st->node);
    tgB_puts(b, ";\n     int64_t m = ");
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
    tgB_puts(b, "    {\n     char *xp = ");
    put_ptr(b, sc, n->args[0]);
    tgB_puts(b, ", *yp = ");
    put_ptr(b, sc, st->node);
    tgB_printf(b, ";\n     %s *y = (%s *)yp;\n     const %s *xv = (const %s *)xp;\n", T, T, T, T);
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
        int dist, o = tap_of(sc, i, &dist);
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
        int p = param_result(sc, r), dist, o = p >= 0 ? tap_of(sc, p, &dist) : -1;
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

static int64_t run_native(const tgH_sched *s, tgI_state *st, const tgH_step *step, tgSc_state *ss,
                          native_fn fn, int64_t n)
{
    const tgSc_scan *sc = ss->sc;
    const int *args = s->g->nodes[step->node].args;
    int np = p_scr(sc, sc->nres), nr = r_rowb(sc, sc->nres);
    char *P[np];
    int64_t R[nr > 0 ? nr : 1];
    for (int i = 0; i < sc->nparams; i++) {     /* rows within themselves contiguous */
        const tg_array *p = &ss->pin[i];
        int dist, o = tap_of(sc, i, &dist);
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
        R[r_rowb(sc, r)] = elems(p->ndim, p->shape) * (int64_t)tgV_dtype_size(p->dtype);
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
