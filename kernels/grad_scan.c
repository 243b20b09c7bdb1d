/* grad_scan.c - the gradients of scans (module prefix tgGr_, shared with
 * grad.c through grad_int.h; doc/grad.md, "Scans").  The adjoint of a
 * scan is a backwards scan over its stored forward states.  The step's own vector-Jacobian product is the gradient of
 * sum_r <R_r, G_r> with respect to each parameter, taken by this sweep on
 * the lambda's body (parameters and result adjoints as inputs), then
 * written back over parameter names: the backward step. */

#include "config.h"

#include <stdio.h>

#include "grad_int.h"
#include "index.h"

static tg_term *sym(gx *x, const char *name) { return tg_symbol_cstr(x->ctx, name); }

static tg_term *list4(gx *x, tg_term *a, tg_term *b, tg_term *c, tg_term *d)
{
    tg_term *v[4] = {a, b, c, d};
    return tg_list(x->ctx, 4, v, NULL);
}

/* Every symbol under t into syms (explicit stack). */
static int scan_symbols(gx *x, tg_term *t, tmap *syms)
{
    TMAP_LOCAL(seen);
    tstack st = {0};
    if (ts_push(&st, t) < 0)
        return tgGr_nomem(x);
    while (st.n) {
        tg_term *u = st.v[--st.n];
        if (tg_kind_of(u) == TG_SYMBOL) {
            if (tm_put(syms, u, u) < 0)
                return tgGr_nomem(x);
            continue;
        }
        if (tg_kind_of(u) != TG_PAIR || tm_get(&seen, u))
            continue;
        if (tm_put(&seen, u, u) < 0)
            return tgGr_nomem(x);
        tg_iter it;
        tg_term *e;
        tg_iter_init(&it, u);
        while ((e = tg_iter_next(&it)))
            if (ts_push(&st, e) < 0)
                return tgGr_nomem(x);
    }
    return 0;
}

/* A symbol BASE<k> that no symbol of syms is (then it is one). */
static tg_term *fresh(gx *x, tmap *syms, const char *base)
{
    char buf[64];
    for (int k = 0;; k++) {
        snprintf(buf, sizeof buf, "%s%d", base, k);
        tg_term *s = sym(x, buf);
        if (!s)
            return tgGr_nomem(x), NULL;
        if (!tm_get(syms, s))
            return tm_put(syms, s, s) < 0 ? (tgGr_nomem(x), NULL) : s;
    }
}

/* (input NAME DTYPE (SIZE ...)) of inner node v. */
static tg_term *inner_input(gx *x, const tgV_graph *ig, int v, tg_term *name)
{
    tg_term *sh = tgGr_shape_list(x->ctx, ig, v, NULL, NULL);
    return sh ? list4(x, x->s[S_INPUT], name, sym(x, tgV_dtype_name(ig->nodes[v].dtype)), sh) : NULL;
}

/* Zeros of inner node v's type; with rows, with a leading axis of rows. */
static tg_term *inner_zeros(gx *x, const tgV_graph *ig, int v, tg_term *rows)
{
    const tgV_node *n = &ig->nodes[v];
    tg_term *z = list3(x, x->s[S_CONST], sym(x, tgV_dtype_name(n->dtype)), tg_int(x->ctx, 0));
    if (!z || (!n->ndim && !rows))
        return z;
    tg_term *v2[TGV_MAXDIM + 3];
    size_t k = 0;
    v2[k++] = x->s[S_ALLOC], v2[k++] = z;
    if (rows)
        v2[k++] = rows;
    for (int d = 0; d < n->ndim; d++)
        v2[k++] = tgGr_size_term(x->ctx, ig, n->shape[d]);
    return tg_list(x->ctx, k, v2, NULL);
}

static tg_term *slice3(gx *x, tg_term *a, tg_term *b, tg_term *c)
{
    return list4(x, sym(x, "slice"), a, b, c);
}

/* (subtensor T (slice none none -1)): T's rows in reverse order. */
static tg_term *reversed(gx *x, tg_term *t)
{
    tg_term *none = sym(x, "none");
    return list3(x, sym(x, "subtensor"), t, slice3(x, none, none, tg_int(x->ctx, -1)));
}

static int add1(gx *x, tstack *l, tg_term *t) { return !t || ts_push(l, t) < 0 ? tgGr_nomem(x) : 0; }

static tg_term *headed_list(gx *x, const char *head, tstack *l)
{
    tg_term **v = GC_MALLOC((l->n + 2) * sizeof *v);
    if (!v)
        return NULL;
    v[0] = sym(x, head);
    if (l->n)
        memcpy(v + 1, l->v, l->n * sizeof *v);
    return tg_list(x->ctx, l->n + 1, v, NULL);
}

static tg_term *plain_list(gx *x, tstack *l)
{
    return l->n ? tg_list(x->ctx, l->n, l->v, NULL) : tg_nil();
}

/* What one scan's gradient is built from. */
typedef struct sgx {
    gx *x;
    sweep *s;
    const tgSc_scan *sc;
    const tgV_graph *ig;
    tg_term **orig;         /* the scan term's parts: lambda steps sequences outputs non_sequences opts */
    size_t nparts;
    tmap syms;
    tg_term **pin;          /* per parameter: its (input ...) */
    tg_term **gin;          /* per result: its adjoint's (input ...), or NULL */
    tg_term **adj;          /* per parameter: d(step cost)/d(param), or NULL */
    int *trace;             /* per parameter of a tap: its trace output of the forward copy */
} sgx;

static int sfail(sgx *g, const char *why)
{
    return tgGr_fail(g->x, g->sc->term, "no gradient through this scan: %s", why);
}

/* The checks: no until, no MITMOT, sequences as long as the steps. */
static int scan_grad_check(sgx *g)
{
    const tgSc_scan *sc = g->sc;
    const tgV_graph *og = tgV_graph_of(g->s->b);
    if (sc->until)
        return sfail(g, "it has an until condition (the number of steps it runs depends on the values, "
                        "and the stacked outputs past the stop are zeros, not a function of the inputs); "
                        "write it with a fixed number of steps");
    for (int o = 0; o < sc->nout; o++)
        if (sc->outs[o].kind == TGSC_MITMOT)
            return sfail(g, "it has a mitmot output (no gradient rule for mitmot yet)");
        else if (sc->outs[o].keep)
            return sfail(g, "it has a (last N) output (its earlier rows, which the backward scan reads, are "
                            "not kept); take the gradient of the stacked output");
    const int *args = og->nodes[sc->first].args;
    for (int i = 0; i < sc->nseq; i++)
        if (tgV_canon(og, og->nodes[args[i]].shape[0]) != tgV_canon(og, sc->steps))
            return sfail(g, "a sequence has more rows than the scan has steps (pass its first rows)");
    return 0;
}

static bool float_param(const sgx *g, int p) { return tgV_is_float(g->ig->nodes[g->ig->inputs[p]].dtype); }

/* The step's vector-Jacobian product: adj[p] for every float parameter
 * p that needs one (want), the gradient of sum_r sum(R_r * G_r) with
 * respect to p's input, the body's parameters replaced by inputs. */
static int step_vjp(sgx *g, const bool *want, const bool *radj)
{
    gx *x = g->x;
    const tgSc_scan *sc = g->sc;
    TMAP_LOCAL(p2in);
    for (int p = 0; p < sc->nparams; p++)
        if (!(g->pin[p] = inner_input(x, g->ig, g->ig->inputs[p], sc->params[p])) ||
            tm_put(&p2in, sc->params[p], g->pin[p]) < 0)
            return tgGr_nomem(x);
    tstack terms = {0};
    for (int r = 0; r < sc->nres; r++) {
        if (!radj[r])
            continue;
        tg_term *R = tgGr_rebuild(x, sc->results[r], &p2in, NULL);
        tg_term *name = fresh(x, &g->syms, "grad_g");
        if (!R || !name || !(g->gin[r] = inner_input(x, g->ig, sc->res[r], name)))
            return R && name ? tgGr_nomem(x) : -1;
        if (add1(x, &terms, list3(x, x->s[S_SUM], list3(x, x->s[S_MUL], R, g->gin[r]), x->s[S_ALL])) < 0)
            return -1;
    }
    if (!terms.n)
        return 0;
    tg_term *cost = terms.n == 1 ? terms.v[0] : headed_list(x, "add", &terms);
    if (!cost)
        return tgGr_nomem(x);
    bool disc = x->inner;
    x->inner = true;       /* a parameter the step does not read gets zero */
    for (int p = 0; p < sc->nparams; p++)
        if (want[p] && !(g->adj[p] = tgGr_grad_of(x, sc->term, cost, g->pin[p])))
            return x->inner = disc, -1;
    x->inner = disc;
    return 0;
}

/* The forward copy: the scan with one nitsot more per tap parameter,
 * stacking its value (the trace the backward scan reads: what tap T read
 * at step t).  Its outputs are the scan's own, `last` ones included, so
 * that the rewrites merge it with the scan itself (scan-merge, then
 * scan-merge-outputs): the forward pass runs once. */
static tg_term *forward_copy(sgx *g)
{
    gx *x = g->x;
    const tgSc_scan *sc = g->sc;
    tg_term **o = g->orig;
    tstack res = {0}, outs = {0}, parts = {0};
    size_t nouts;
    tg_term **ov = GC_MALLOC((tg_length(o[4]) + 1) * sizeof *ov);
    if (!ov)
        return tgGr_nomem(x), NULL;
    nouts = tg_length(o[4]);
    tg_elements(o[4], ov, nouts);
    for (int r = 0; r < sc->nres; r++)
        if (add1(x, &res, sc->results[r]) < 0)
            return NULL;
    for (size_t k = 1; k < nouts; k++)
        if (add1(x, &outs, ov[k]) < 0)
            return NULL;
    int nt = sc->nout;
    tg_term *nitsot = tg_list(x->ctx, 1, (tg_term *[]){sym(x, "nitsot")}, NULL);
    for (int q = 0; q < sc->nout; q++) {
        const tgSc_out *out = &sc->outs[q];
        for (int j = 0; out->kind != TGSC_NITSOT && j < out->ntaps; j++) {
            g->trace[out->param + j] = nt++;
            if (add1(x, &res, sc->params[out->param + j]) < 0 || add1(x, &outs, nitsot) < 0)
                return NULL;
        }
    }
    tg_term *lam = tg_list(x->ctx, 3, (tg_term *[]){sym(x, "lambda"), tg_nth(o[1], 1), plain_list(x, &res)}, NULL);
    if (add1(x, &parts, lam) < 0 || add1(x, &parts, o[2]) < 0 || add1(x, &parts, o[3]) < 0 ||
        add1(x, &parts, headed_list(x, "outputs", &outs)) < 0 || add1(x, &parts, o[5]) < 0)
        return NULL;
    for (size_t k = 6; k < g->nparts; k++)
        if (tg_kind_of(o[k]) == TG_SYMBOL && add1(x, &parts, o[k]) < 0)   /* backwards; not (inplace ...) */
            return NULL;
    return headed_list(x, "scan", &parts);
}

static tg_term *scan_out(gx *x, tg_term *s, int k)
{
    return list3(x, sym(x, "scan_output"), s, tg_int(x->ctx, k));
}

/* Pass the adjoints A[o] of scan sc's outputs (NULL: none) back to its
 * arguments, through a backwards scan. */
int tgGr_scan_vjp(sweep *s, const tgSc_scan *sc, tg_term **A)
{
    gx *x = s->x;
    const tgV_graph *og = tgV_graph_of(s->b);
    sgx G = {x, s, sc, sc->ig, NULL, 0, {0}, NULL, NULL, NULL, NULL}, *g = &G;
    if (scan_grad_check(g) < 0)
        return -1;
    int np = sc->nparams, nseq = sc->nseq, nnon = sc->nnon, nbase = np - nnon;
    const int *args = og->nodes[sc->first].args;
    g->nparts = tg_length(sc->term);
    g->orig = GC_MALLOC((g->nparts + 1) * sizeof *g->orig);
    g->pin = GC_MALLOC(((size_t)np + 1) * sizeof *g->pin);
    g->adj = GC_MALLOC(((size_t)np + 1) * sizeof *g->adj);
    g->gin = GC_MALLOC(((size_t)sc->nres + 1) * sizeof *g->gin);
    g->trace = GC_MALLOC_ATOMIC(((size_t)np + 1) * sizeof *g->trace);
    bool *want = GC_MALLOC_ATOMIC((size_t)np + 1), *radj = GC_MALLOC_ATOMIC((size_t)sc->nres + 1);
    if (!g->orig || !g->pin || !g->adj || !g->gin || !g->trace || !want || !radj)
        return tgGr_nomem(x);
    tg_elements(sc->term, g->orig, g->nparts);
    if (scan_symbols(x, sc->term, &g->syms) < 0)
        return -1;
    for (int p = 0; p < np; p++) {
        want[p] = false;
        if (!float_param(g, p))
            continue;
        /* every float parameter, whatever WRT is: the gradients of one
         * cost with respect to several inputs then share one backward
         * scan (the same term), the rewrites dropping what none reads */
        want[p] = true;
    }
    for (int o = 0; o < sc->nout; o++)
        radj[o] = tgV_is_float(g->ig->nodes[sc->res[o]].dtype) && (sc->outs[o].kind != TGSC_NITSOT || A[o]);
    if (step_vjp(g, want, radj) < 0)
        return -1;
    tg_term *F = forward_copy(g);
    if (!F)
        return x->e.code != TG_OK ? -1 : tgGr_nomem(x);

    /* the backward scan: its parameters, sequences, outputs and results */
    tstack bp = {0}, bseq = {0}, bout = {0}, bres = {0}, bnon = {0}, bnonp = {0}, tapp = {0};
    TMAP_LOCAL(sub);
    for (int p = 0; p < nseq; p++) {
        tg_term *X = sc->seqs[p];
        if (add1(x, &bp, sc->params[p]) < 0 ||
            add1(x, &bseq, sc->backwards ? reversed(x, X) : X) < 0 || tm_put(&sub, g->pin[p], sc->params[p]) < 0)
            return -1;
    }
    for (int p = nseq; p < nbase; p++)
        if (add1(x, &bp, sc->params[p]) < 0 || add1(x, &bseq, scan_out(x, F, g->trace[p])) < 0 ||
            tm_put(&sub, g->pin[p], sc->params[p]) < 0)
            return -1;
    for (int j = 0; j < nnon; j++)
        if (add1(x, &bnonp, sc->params[nbase + j]) < 0 || add1(x, &bnon, sc->nons[j]) < 0 ||
            tm_put(&sub, g->pin[nbase + j], sc->params[nbase + j]) < 0)
            return -1;
    tg_term *steps_sz = tgGr_size_term(x->ctx, og, sc->steps);
    /* the adjoint of each result: the outer one (a sequence) and what
     * later steps passed back (a carried output) */
    tg_term **ybar = GC_MALLOC(((size_t)sc->nout + 1) * sizeof *ybar);
    tg_term ***carry = GC_MALLOC(((size_t)sc->nout + 1) * sizeof *carry);
    if (!ybar || !carry || !steps_sz)
        return tgGr_nomem(x);
    for (int o = 0; o < sc->nout; o++) {
        const tgSc_out *out = &sc->outs[o];
        ybar[o] = NULL;
        if (!radj[o])
            continue;
        int rv = sc->res[o];
        if (out->kind != TGSC_NITSOT && !out->last) {   /* the forward value, read where the step recomputes it */
            tg_term *fy = fresh(x, &g->syms, "grad_y");
            if (!fy || add1(x, &bp, fy) < 0 || add1(x, &bseq, scan_out(x, F, o)) < 0)
                return -1;
            TMAP_LOCAL(p2in);
            for (int p = 0; p < np; p++)
                if (tm_put(&p2in, sc->params[p], g->pin[p]) < 0)
                    return tgGr_nomem(x);
            tg_term *Rin = tgGr_rebuild(x, sc->results[o], &p2in, NULL);
            if (!Rin || tm_put(&sub, Rin, fy) < 0)
                return Rin ? tgGr_nomem(x) : -1;
        }
        bool last_in_seq = A[o] && out->last && out->kind != TGSC_SITSOT;
        if (A[o] && (!out->last || last_in_seq)) {
            tg_term *gs = fresh(x, &g->syms, "grad_s");
            tg_term *seq = A[o];
            if (last_in_seq)
                seq = list4(x, sym(x, "inc_subtensor"), inner_zeros(x, g->ig, rv, steps_sz), A[o], tg_int(x->ctx, -1));
            if (!gs || add1(x, &bp, gs) < 0 || add1(x, &bseq, seq) < 0)
                return -1;
            ybar[o] = gs;
        }
    }
    /* outputs: a carrier per float recurrent output, then the sequences'
     * adjoints, then the non-sequences' sums */
    int nb = 0, *bidx = GC_MALLOC_ATOMIC(((size_t)sc->nout + (size_t)np + 1) * sizeof *bidx);
    if (!bidx)
        return tgGr_nomem(x);
    for (int o = 0; o < sc->nout; o++) {
        const tgSc_out *out = &sc->outs[o];
        bidx[o] = -1;
        if (out->kind == TGSC_NITSOT || !radj[o]) {
            if (radj[o] && tm_put(&sub, g->gin[o], ybar[o]) < 0)
                return tgGr_nomem(x);
            continue;
        }
        int rv = sc->res[o];
        tg_term *pending, *otm;
        bidx[o] = nb++;
        if (out->kind == TGSC_SITSOT) {
            tg_term *c = fresh(x, &g->syms, "grad_c");
            tg_term *init = A[o] && out->last ? A[o] : inner_zeros(x, g->ig, rv, NULL);
            otm = list3(x, sym(x, "sitsot"), init, sym(x, "last"));
            if (!c || add1(x, &tapp, c) < 0)
                return -1;
            pending = c;
        } else {
            int64_t n = tgV_canon(og, sc->steps);
            if (n < 0) {    /* no buffer of steps + M rows to write: M carried adjoints */
                if (!(carry[o] = GC_MALLOC(((size_t)out->maxtap + 1) * sizeof **carry)))
                    return tgGr_nomem(x);
                for (int d = 0; d < out->maxtap; d++) {
                    carry[o][d] = fresh(x, &g->syms, "grad_p");
                    if (!carry[o][d] || add1(x, &tapp, carry[o][d]) < 0 ||
                        add1(x, &bout, list3(x, sym(x, "sitsot"), inner_zeros(x, g->ig, rv, NULL), sym(x, "last"))) < 0)
                        return -1;
                }
                nb += out->maxtap - 1;
                pending = carry[o][0];
                tg_term *yb = ybar[o] ? list3(x, x->s[S_ADD], ybar[o], pending) : pending;
                if (!yb || tm_put(&sub, g->gin[o], yb) < 0)
                    return yb ? tgGr_nomem(x) : -1;
                continue;
            }
            tg_term **tv = GC_MALLOC(((size_t)out->ntaps + 2) * sizeof *tv);
            tg_term **ov = GC_MALLOC(((size_t)out->ntaps + 2) * sizeof *ov);
            if (!tv || !ov || !(carry[o] = GC_MALLOC(((size_t)out->ntaps + 1) * sizeof **carry)))
                return tgGr_nomem(x);
            tv[0] = sym(x, "taps"), ov[0] = sym(x, "out_taps");
            tv[1] = tg_int(x->ctx, 0);
            tg_term *b0 = fresh(x, &g->syms, "grad_b");
            if (!b0 || add1(x, &tapp, b0) < 0)
                return -1;
            pending = b0;
            for (int j = 0; j < out->ntaps; j++) {
                tv[2 + j] = tg_int(x->ctx, out->taps[j]);
                ov[1 + j] = tv[2 + j];
                tg_term *bd = fresh(x, &g->syms, "grad_b");
                if (!bd || add1(x, &tapp, bd) < 0)
                    return -1;
                carry[o][j] = bd;
            }
            tg_term *init = inner_zeros(x, g->ig, rv, tg_int(x->ctx, n + out->maxtap));
            otm = list4(x, sym(x, "mitmot"), init, tg_list(x->ctx, (size_t)out->ntaps + 2, tv, NULL),
                        tg_list(x->ctx, (size_t)out->ntaps + 1, ov, NULL));
        }
        tg_term *yb = ybar[o] ? list3(x, x->s[S_ADD], ybar[o], pending) : pending;
        if (add1(x, &bout, otm) < 0 || !yb || tm_put(&sub, g->gin[o], yb) < 0)
            return -1;
    }
    /* the results, over the backward scan's names */
    for (int o = 0; o < sc->nout; o++) {
        const tgSc_out *out = &sc->outs[o];
        if (bidx[o] < 0)
            continue;
        if (out->kind == TGSC_MITSOT && tgV_canon(og, sc->steps) < 0) {
            /* carried adjoint d (of y[t-1-d]): the next one's, plus what tap d+1 passes back */
            for (int d = 0; d < out->maxtap; d++) {
                tg_term *a = d + 1 < out->maxtap ? carry[o][d + 1] : NULL;
                for (int j = 0; j < out->ntaps; j++)
                    if (out->taps[j] == d + 1) {
                        tg_term *e = tgGr_rebuild(x, g->adj[out->param + j], &sub, NULL);
                        if (!e)
                            return -1;
                        a = a ? list3(x, x->s[S_ADD], a, e) : e;
                    }
                if (!a)
                    a = inner_zeros(x, g->ig, sc->res[o], NULL);
                if (add1(x, &bres, a) < 0)
                    return -1;
            }
            continue;
        }
        for (int j = 0; j < out->ntaps; j++) {
            tg_term *a = tgGr_rebuild(x, g->adj[out->param + j], &sub, NULL);
            if (!a)
                return -1;
            if (out->kind == TGSC_MITSOT)
                a = list3(x, x->s[S_ADD], carry[o][j], a);
            if (add1(x, &bres, a) < 0)
                return -1;
        }
    }
    int *pidx = bidx + sc->nout;
    for (int p = 0; p < np; p++) {
        pidx[p] = -1;
        if (!want[p] || (p >= nseq && p < nbase))
            continue;
        tg_term *a = tgGr_rebuild(x, g->adj[p], &sub, NULL);
        if (!a)
            return -1;
        if (p < nseq) {
            pidx[p] = nb++;
            if (add1(x, &bout, tg_list(x->ctx, 1, (tg_term *[]){sym(x, "nitsot")}, NULL)) < 0 ||
                add1(x, &bres, a) < 0)
                return -1;
            continue;
        }
        /* a non-sequence's adjoint: summed over the steps in an
         * accumulator; where each step's part is an outer product or a
         * dot, the Scan rewrite scan-push-sums (patterns/scanout.c) sums
         * it after the loop (a BPTT weight gradient: one GEMM) */
        pidx[p] = nb++;
        tg_term *acc = fresh(x, &g->syms, "grad_a");
        tg_term *z = inner_zeros(x, g->ig, g->ig->inputs[p], NULL);
        if (!acc || add1(x, &tapp, acc) < 0 || add1(x, &bout, list3(x, sym(x, "sitsot"), z, sym(x, "last"))) < 0 ||
            add1(x, &bres, list3(x, x->s[S_ADD], acc, a)) < 0)
            return -1;
    }
    if (!nb)
        return 0;
    /* the parameters: sequences, the outputs' taps (in output order), non-sequences */
    for (size_t k = 0; k < tapp.n; k++)
        if (add1(x, &bp, tapp.v[k]) < 0)
            return -1;
    for (size_t k = 0; k < bnonp.n; k++)
        if (add1(x, &bp, bnonp.v[k]) < 0)
            return -1;
    tg_term *lam = tg_list(x->ctx, 3, (tg_term *[]){sym(x, "lambda"), plain_list(x, &bp), plain_list(x, &bres)}, NULL);
    tg_term *parts[7] = {sym(x, "scan"), lam, g->orig[2], headed_list(x, "sequences", &bseq),
                         headed_list(x, "outputs", &bout), headed_list(x, "non_sequences", &bnon),
                         sym(x, "backwards")};
    for (int k = 0; k < 7; k++)
        if (!parts[k])
            return tgGr_nomem(x);
    tg_term *B = tg_list(x->ctx, 7, parts, NULL);
    if (!B)
        return tgGr_nomem(x);
    /* back to the scan's arguments */
    for (int o = 0; o < sc->nout; o++) {
        const tgSc_out *out = &sc->outs[o];
        if (bidx[o] < 0 || !s->dep[args[out->arg]])
            continue;
        if (out->kind == TGSC_MITSOT && tgV_canon(og, sc->steps) < 0) {
            /* carried adjoint d is row M-1-d of INIT's */
            for (int d = 0; d < out->maxtap; d++) {
                tg_term *z = inner_zeros(x, g->ig, sc->res[o], tg_int(x->ctx, out->maxtap));
                tg_term *e = list4(x, sym(x, "inc_subtensor"), z, scan_out(x, B, bidx[o] + d),
                                   tg_int(x->ctx, out->maxtap - 1 - d));
                if (!e || tgGr_deliver(s, args[out->arg], e) < 0)
                    return e ? -1 : tgGr_nomem(x);
            }
            continue;
        }
        tg_term *e = scan_out(x, B, bidx[o]);
        if (out->kind == TGSC_MITSOT)
            e = list3(x, sym(x, "subtensor"), e,
                      slice3(x, tg_int(x->ctx, -1), tg_int(x->ctx, -1 - out->maxtap), tg_int(x->ctx, -1)));
        if (!e || tgGr_deliver(s, args[out->arg], e) < 0)
            return e ? -1 : tgGr_nomem(x);
    }
    for (int p = 0; p < np; p++) {
        if (pidx[p] < 0)
            continue;
        int arg = p < nseq ? args[p] : args[sc->nargs - nnon + (p - nbase)];
        if (!s->dep[arg])
            continue;
        tg_term *e = scan_out(x, B, pidx[p]);
        if (p < nseq && !sc->backwards)
            e = reversed(x, e);
        if (!e || tgGr_deliver(s, arg, e) < 0)
            return e ? -1 : tgGr_nomem(x);
    }
    return 0;
}
