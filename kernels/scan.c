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

#include "buf.h"
#include "error.h"
#include "scan_int.h"
#include "arrange.h"
#include "index.h"
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

/* The nt taps t into *v as distances, each distinct: the taps negative
 * (a mitsot's, -1 is distance 1) when neg, else non-negative (a mitmot's,
 * rows ahead); *max raised to the largest.  0, or -1 with error `bad`
 * for a tap that is not such an integer. */
static int read_taps(tgV_builder *b, tgSc_scan *sc, tg_term **t, int nt, bool neg, const char *bad, int **v,
                     int *max)
{
    if (!(*v = GC_MALLOC_ATOMIC((size_t)nt * sizeof **v)))
        return tgE_nomem(tgV_err_of(b)), -1;
    for (int i = 0; i < nt; i++) {
        int64_t k;
        if (tg_kind_of(t[i]) != TG_INT || tg_int_get(t[i], &k) < 0 ||
            (neg ? k >= 0 || k < -(1 << 20) : k < 0 || k > (1 << 20)))
            return tgV_fail(b, sc->term, bad);
        k = neg ? -k : k;
        for (int j = 0; j < i; j++)
            if ((*v)[j] == k)
                return tgV_fail(b, sc->term, "a tap is repeated");
        (*v)[i] = (int)k;
        if (k > *max)
            *max = (int)k;
    }
    return 0;
}

/* A list (HEAD T ...) of distinct non-negative taps into *v; their count. */
static int mitmot_taps(tgV_builder *b, tgSc_scan *sc, tg_term *l, const char *head, int **v, int *max)
{
    tg_term **t;
    int nt = items(l, head, &t);
    if (nt < 1)
        return tgV_fail(b, sc->term, "a mitmot output is (mitmot INIT (taps T ...) (out_taps T ...)), "
                                     "each list with at least one tap");
    return read_taps(b, sc, t, nt, false, "a mitmot tap is a non-negative integer", v, max) < 0 ? -1 : nt;
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
    return read_taps(b, sc, t, nt, true, "a tap is a negative integer", &out->taps, &out->maxtap);
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

int64_t tgSc_elems(int ndim, const int64_t *shape)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++)
        n *= shape[d];
    return n;
}

int tgSc_tap_of(const tgSc_scan *sc, int p, int *dist)
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
    if (tgSc_elems(ndim, shape) == 0)
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
    size_t rowb = (size_t)tgSc_elems(rnd, init->shape + 1) * es;
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
        size_t rowb = (size_t)tgSc_elems(rnd, rshape) * es;
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
        } else {    /* a tap: shaped as INIT, less its axis of steps for MITSOT and MITMOT */
            int dist, o = tgSc_tap_of(sc, i, &dist);
            x = &st->vals[args[sc->outs[o].arg]];
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
        } else if (!out->last && done < n) {  /* rows not done: copies of a zero */
            static const char zero[16];
            static const int64_t zs[TGV_MAXDIM];
            for (int64_t t = done; t < n; t++)
                copy_elems(res->data + t * res->strides[0], res->strides + 1, zero, zs, res->ndim - 1,
                           res->shape + 1, es);
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
        done = tgSc_run_native(s, st, step, ss, fn, n);
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
