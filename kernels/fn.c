/* fn.c - the public API of tensor functions (only public tg_fn_ names):
 * tg_fn_compile runs types -> schedule, tg_fn_call runs the schedule. */
#include "config.h"

#include <dlfcn.h>
#include <gc/gc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "cache.h"
#include "clock.h"
#include "check.h"
#include "defop.h"
#include "rtypes.h"
#include "grad.h"
#include "interp.h"
#include "loopdrv.h"
#include "rewriters.h"
#include "rwcache.h"
#include "scan.h"
#include "state.h"
#include "userop.h"

enum { CALLS_TIMED = 64, SAMPLE = 8, LONG_CALL = 10000 };

struct tg_fn {
    tgV_graph *g;
    tgH_sched *s;
    tg_term *schedule;      /* made on first request */
    tgI_state st;
    void *so;               /* the compiled loops (dlopen handle) or NULL */
    tgCk *check;            /* the checking mode, or NULL */
    tgSt_fn *state;         /* shared variables, updates, non-strict inputs; or NULL */
    /* the profile (tg_fn_profile): its calls are timed in ticks, the
     * first CALLS_TIMED each; after them, when they took less than
     * LONG_CALL ticks on average, one in SAMPLE (reading the counter twice
     * a call adds about 5% to a call of a few elements), else all (a
     * sample would multiply the noise of preemptions by SAMPLE) */
    tg_fn_stats prof;
    uint64_t call_ticks, sampled_ticks, nsampled;
    tgTm_mark mark;
};

/* The text the compiled code is keyed by: everything the generated
 * source is a function of.  Terms are hash-consed and print canonically
 * (shared subterms named once, so the text is linear in the DAG), and the
 * lowering's version stands for the code that turns them into C. */
static char *key_text(tg_ctx *ctx, size_t nin, tg_term *const *inputs, size_t nout,
                      tg_term *const *outputs, tg_term *targets, const unsigned char *kept, size_t *len)
{
    /* the targets of updates unify sizes: a part of the key when there are some */
    tg_term *parts[3] = {tg_list(ctx, nin, inputs, NULL), tg_list(ctx, nout, outputs, NULL), targets};
    tg_term *all = parts[0] && parts[1] ? tg_list(ctx, targets ? 3 : 2, parts, NULL) : NULL;
    size_t tl;
    char *terms = all ? tg_print_shared(all, &tl) : NULL;
    if (!terms)
        return NULL;
    char head[160];
    int hl = snprintf(head, sizeof head, "tgrel %s kernels lowering %s\nkept ", PACKAGE_VERSION,
                      TGJ_LOWERING_VERSION);
    /* the ops defined with C expressions: their code is part of the loops */
    char *uo = tgUo_key_text(ctx);
    size_t ul = uo ? strlen(uo) : 0;
    char *t = uo ? malloc((size_t)hl + nin + 1 + ul + tl + 1) : NULL;
    if (t) {
        memcpy(t, head, (size_t)hl);
        for (size_t i = 0; i < nin; i++)
            t[hl + i] = !kept || kept[i] ? 'k' : '-';
        t[hl + nin] = '\n';
        memcpy(t + hl + nin + 1, uo, ul);
        memcpy(t + hl + nin + 1 + ul, terms, tl + 1);
        *len = (size_t)hl + nin + 1 + ul + tl;
    }
    free(uo);
    free(terms);
    return t;
}

static char *gen_source(void *ud, size_t *len) { return tgJ_source(ud, len); }

/* Compile the loops of fn to native code; on failure the interpreter
 * runs them, with a warning on stderr.  keytext names the code in the
 * cache: a hit skips code generation. */
static void go_native(tg_fn *fn, tg_ctx *ctx, size_t nin, tg_term *const *inputs, size_t nout,
                      tg_term *const *outputs, tg_term *targets, const tg_fn_options *opt)
{
    double t0 = tgTm_ms();
    tgZ_times tm = {0, 0, 0};
    const tgH_sched *s = fn->s;
    int loops = 0;
    for (int k = 0; k < s->nsteps; k++)
        loops += tgJ_compiles_outer(s, k) || (s->steps[k].kind == TGH_SCAN && tgSc_has_code(s, k));
    if (!loops)
        return;
    size_t keylen = 0;
    char *keytext = key_text(ctx, nin, inputs, nout, outputs, targets, opt ? opt->kept : NULL, &keylen);
    tg_error err;
    int hit, why;
    void *so = NULL;
    if (keytext)
        so = tgZ_load_timed(keytext, keylen, gen_source, (void *)s, opt ? opt->cc : NULL,
                            opt ? opt->cflags : NULL, &hit, &why, &tm, &err);
    else
        tgE_nomem(&err);
    free(keytext);
    fn->st.kern = so ? calloc((size_t)s->nsteps, sizeof *fn->st.kern) : NULL;
    if (fn->st.kern && tgLd_bind(so) < 0) {     /* the loops call the driver through it */
        free(fn->st.kern);
        fn->st.kern = NULL;
        snprintf(err.message, sizeof err.message, "kernels: tgk_drive missing from the compiled code");
    }
    for (int k = 0; fn->st.kern && k < s->nsteps; k++)
        if (s->steps[k].kind == TGH_SCAN) {
            if (tgSc_attach(s, k, fn->st.scans[k], so, &fn->st.kern[k], err.message, sizeof err.message) < 0) {
                free(fn->st.kern);
                fn->st.kern = NULL;
            }
        } else if (tgJ_compiles_outer(s, k)) {
            char name[40];
            snprintf(name, sizeof name, "tgk_loop%d", k);
            void *f = dlsym(so, name);
            memcpy(&fn->st.kern[k], &f, sizeof f);  /* object to function pointer */
            if (!f) {
                free(fn->st.kern);
                fn->st.kern = NULL;
                snprintf(err.message, sizeof err.message, "kernels: %s missing from the compiled code", name);
            }
        }
    /* what the cache did not time (the key, the symbols) counts as loading */
    fn->prof.codegen_ms = tm.gen_ms, fn->prof.cc_ms = tm.cc_ms;
    fn->prof.load_ms = tgTm_ms() - t0 - tm.gen_ms - tm.cc_ms;
    fn->prof.code_cached = so && hit;
    if (fn->st.kern) {
        fn->so = so;
        return;
    }
    if (so)
        dlclose(so);
    fprintf(stderr, "tgrel: warning: %s; running the interpreter\n", err.message);
}

/* The expansion before rewriting: the ops the rule sets define (defop:
 * their gradients are those of their definitions), then the grads. */
typedef struct expander {
    tg_ctx *ctx;
    tg_rules *defrs;                /* the rule set given, in every mode */
    const tg_grad_options *grad;
} expander;

static int expand_outputs(void *ud, size_t n, tg_term *const *in, tg_term **out, tg_error *err)
{
    expander *x = ud;
    tg_ctx *ctx = x->ctx;
    tg_rules *defrs = x->defrs, *gr = x->grad ? x->grad->rules : NULL;
    tg_term **d = GC_MALLOC((n ? n : 1) * sizeof *d);
    tgDo_defs *defs = GC_MALLOC(sizeof *defs);
    if (!d || !defs)
        return tgE_nomem(err), -1;
    /* before the grads, the ops the rule sets define (defop): their
     * gradients are those of their definitions, but an op with a vjp rule
     * of its own in the gradient's rules is kept whole through the
     * gradient, which uses that rule, and expanded after */
    if (tgDo_expand_keep(ctx, defrs, gr, n, in, d, err) < 0 ||
        (gr && gr != defrs && tgDo_expand_keep(ctx, gr, gr, n, d, d, err) < 0))
        return -1;
    *defs = (tgDo_defs){ctx, {defrs, gr}};
    if (tgGr_expand_defined(ctx, n, d, out, x->grad, gr ? tgDo_define : NULL, defs, err) < 0)
        return -1;
    if (gr && (tgDo_expand(ctx, defrs, n, out, out, err) < 0 ||
               (gr != defrs && tgDo_expand(ctx, gr, n, out, out, err) < 0)))
        return -1;
    return 0;
}

/* Distinct compound nodes of n terms together (the profile's node counts). */
static size_t count_nodes(tg_ctx *ctx, size_t n, tg_term *const *terms)
{
    if (!n || !terms)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!terms[i])
            return 0;
    if (n == 1)
        return tgW_count_nodes(ctx, terms[0]);
    tg_term *all = tg_list(ctx, n, terms, NULL);
    return all ? tgW_count_nodes(ctx, all) - 1 : 0;    /* not the list itself */
}

void tg_array_init(tg_array *a, tg_dtype dtype, int ndim, const int64_t *shape, void *data)
{
    if (!a)
        return;
    /* shape may be a->shape itself: read it before clearing a */
    int64_t sh[TG_MAXDIM] = {0};
    int nd = !shape || ndim < 0 ? 0 : ndim > TG_MAXDIM ? TG_MAXDIM : ndim;
    for (int d = 0; d < nd; d++)
        sh[d] = shape[d];
    memset(a, 0, sizeof *a);
    a->dtype = dtype;
    a->ndim = nd;
    a->data = data;
    int64_t s = (int64_t)tgV_dtype_size(dtype);
    for (int d = nd - 1; d >= 0; d--) {
        a->shape[d] = sh[d];
        a->strides[d] = s;
        s *= sh[d] ? sh[d] : 1;
    }
}

/* ---- modes: how much of the rule set rewrites (doc/kernels.md) ---------- */

const char *tg_fn_mode(const char *mode, tg_error *err)
{
    static const char *const modes[] = {"fast_run", "fast_compile", "none"};
    const char *m = mode;
    if (!m && (!(m = getenv("TGREL_MODE")) || !*m))
        return modes[0];
    for (size_t i = 0; i < sizeof modes / sizeof *modes; i++)
        if (!strcmp(m, modes[i]))
            return modes[i];
    tgE_set(err, TG_ERR_ARG, NULL, 0, 0, "kernels: unknown mode %.100s%s (fast_run, fast_compile or none)", m,
            mode ? "" : " in TGREL_MODE");
    return NULL;
}

/* *opt as its mode says: itself for fast_run, else a copy in *buf that
 * rewrites with canonicalize (fast_compile) or not at all (none: the
 * checking mode has nothing to check then).  0, or -1 with err filled. */
static int apply_mode(tg_ctx *ctx, const tg_fn_options **opt, tg_fn_options *buf, tg_error *err)
{
    const tg_fn_options *o = *opt;
    const char *m = tg_fn_mode(o ? o->mode : NULL, err);
    if (!m)
        return -1;
    if (!o || !o->rules || !strcmp(m, "fast_run"))
        return 0;
    *buf = *o;
    if (!strcmp(m, "none")) {
        buf->rules = NULL;
        buf->check = 0;
    } else if (!(buf->rewrite = tg_symbol_cstr(ctx, "canonicalize"))) {
        return tgE_nomem(err), -1;
    }
    *opt = buf;
    return 0;
}

tg_fn *tg_fn_compile(tg_ctx *ctx, size_t nin, tg_term *const *inputs, size_t nout,
                     tg_term *const *outputs, const tg_fn_options *opt, tg_error *err)
{
    tg_fn_options moded;
    tg_rules *defrs = opt ? opt->rules : NULL;     /* its definitions are expanded in every mode */
    if (apply_mode(ctx, &opt, &moded, err) < 0)
        return NULL;
    tgCk *check = NULL;
    tg_fn_options kept_all;
    tgV_graph *g;
    tgH_sched *s;
    tgSt_fn *state = NULL;
    tg_fn *fn;
    unsigned char *kept;
    /* the profile's stage times (tg_fn_profile) */
    tgTm_mark mark = tgTm_now();
    tg_fn_stats ps;
    memset(&ps, 0, sizeof ps);
    double t0 = mark.ms;
    /* updates: their values are computed as outputs after the caller's */
    size_t nupd = 0, nuser = nout;
    tg_term **targets = NULL, **values = NULL;
    if (opt && tgSt_split(ctx, opt->updates, &nupd, &targets, &values, err) < 0)
        return NULL;
    if (nupd) {
        tg_term **all = GC_MALLOC((nout + nupd) * sizeof *all);
        if (!all) {
            tgE_nomem(err);
            return NULL;
        }
        if (nout && !outputs) {
            tgE_arg(err, "kernels: no output terms");
            return NULL;
        }
        if (nout)
            memcpy(all, outputs, nout * sizeof *all);
        memcpy(all + nout, values, nupd * sizeof *all);
        outputs = all, nout += nupd;
    }
    /* the grads first, in the outputs and the updates' values alike:
     * rewriters and types see tensor terms.  With rules (and no check,
     * which runs the expanded graph), only on a miss of the rewrite
     * cache, keyed by the unexpanded outputs */
    expander xp = {ctx, defrs, opt ? opt->grad : NULL};
    tgZw_expansion ex = {expand_outputs, &xp, 0, 0};
    int lazy = opt && opt->rules && !opt->check;
    if (nout && outputs && !lazy) {
        tg_term **e = GC_MALLOC(nout * sizeof *e);
        if (!e)
            return tgE_nomem(err), NULL;
        if (expand_outputs(&xp, nout, outputs, e, err) < 0)
            return NULL;
        outputs = e;
        ps.grad_ms = tgTm_ms() - t0;
    }
    /* the rules' typed guards see the tensor types while they rewrite
     * for this compile (the checking mode's and validation's reruns too) */
    tg_rules *typed = opt && opt->rules ? opt->rules : NULL;
    const struct tgTy_typer *untyped = typed ? tgRt_install(typed) : NULL;
    if (opt && opt->rules && opt->check) {
        if (opt->updates)
            return tgRt_restore(typed, untyped),
                   tgE_arg(err, "kernels: the checking mode does not check updates (compile without them)"), NULL;
        if (!(check = tgCk_new(ctx, nin, inputs, nout, outputs, opt->check_tol, opt->rules, opt->rewrite, err)))
            return tgRt_restore(typed, untyped), NULL;
        kept_all = *opt;    /* the check reads the inputs after the call */
        kept_all.kept = NULL;
        opt = &kept_all;
    }
    if (!lazy)
        ps.nodes_before = ps.nodes_after = count_nodes(ctx, nout, outputs);
    if (opt && opt->rules) {
        int hit;    /* the rewritten terms come from the cache when it has them */
        double t1 = tgTm_ms();
        tg_term **rw = tgZw_rewrite(ctx, nin, inputs, nout, outputs, opt, lazy ? &ex : NULL, &hit, err);
        tgRt_restore(typed, untyped);
        if (!rw)
            goto fail;
        outputs = rw;
        ps.rewrite_ms = tgTm_ms() - t1 - ex.ms, ps.rewrite_cached = hit;
        if (lazy)
            ps.grad_ms = ex.ms, ps.nodes_before = ex.nodes;
        ps.nodes_after = count_nodes(ctx, nout, outputs);
    }
    double t2 = tgTm_ms();
    if (!(g = tgV_build_updates(ctx, nin, inputs, nout, outputs, nupd, targets, err)))
        goto fail;
    ps.type_ms = tgTm_ms() - t2;
    /* shared variables are kept: only updates write them */
    kept = opt ? (unsigned char *)opt->kept : NULL;
    if (kept && g->nshared) {
        if (!(kept = GC_MALLOC_ATOMIC((size_t)g->ninputs))) {
            tgE_nomem(err);
            goto fail;
        }
        memcpy(kept, opt->kept, nin);
        memset(kept + nin, 1, (size_t)g->nshared);
    }
    double t3 = tgTm_ms();
    /* outside scans a rank-one update is a ger step only for the
     * interpreter: compiled, C + u v^T as one fused loop is faster
     * (bench/kernels ger) */
    g->ger_steps = opt && opt->interpret;
    if (!(s = tgH_schedule(g, kept, err)))
        goto fail;
    ps.schedule_ms = tgTm_ms() - t3;
    if ((g->nshared || (opt && opt->allow_input_downcast)) &&
        !(state = tgSt_new(ctx, s, nin, nuser, opt && opt->allow_input_downcast, err)))
        goto fail;
    /* uncollectable: the caller may keep it where the collector does not look */
    if (!(fn = GC_MALLOC_UNCOLLECTABLE(sizeof *fn)) || tgI_init(&fn->st, s) < 0) {
        GC_FREE(fn);
        tgSt_free(state);
        tgE_nomem(err);
        goto fail;
    }
    fn->g = g, fn->s = s, fn->state = state, fn->check = check;
    fn->prof = ps, fn->mark = mark;
    tg_term *tl = nupd ? tg_list(ctx, nupd, targets, NULL) : NULL;
    if (!opt || !opt->interpret)
        go_native(fn, ctx, nin, inputs, nout, outputs, tl, opt);
    fn->prof.native = fn->st.kern != NULL;
    fn->prof.compile_ms = tgTm_ms() - t0;
    return fn;
fail:
    tgCk_free(check);
    return NULL;
}

int tg_fn_call(tg_fn *fn, const tg_array *inputs, tg_array *outputs, tg_error *err)
{
    if (!fn || (fn->g->ninputs && !inputs && (!fn->state || fn->g->ninputs > fn->g->nshared)) ||
        (!outputs && fn->g->noutputs > fn->g->nupdates))
        return tgE_arg(err, "kernels: tg_fn_call needs a function, inputs and outputs"), -1;
    fn->st.intr = 0;    /* a request made between calls is dropped */
    unsigned long long k = fn->prof.calls++;
    int timed = k < CALLS_TIMED || k % SAMPLE == 0 || fn->call_ticks >= (uint64_t)LONG_CALL * CALLS_TIMED;
    uint64_t t0 = timed ? tgTm_ticks() : 0;
    int rc = fn->state ? tgSt_call(fn->s, &fn->st, fn->state, inputs, outputs, err)
                       : tgI_run(fn->s, &fn->st, inputs, outputs, err);
    if (rc == 0 && fn->check)
        rc = tgCk_run(fn->check, inputs, outputs, err);
    if (timed) {
        uint64_t d = tgTm_ticks() - t0;
        if (k < CALLS_TIMED || fn->call_ticks >= (uint64_t)LONG_CALL * CALLS_TIMED)
            fn->call_ticks += d;
        else
            fn->sampled_ticks += d, fn->nsampled++;
    }
    return rc < 0 ? -1 : 0;
}

tg_term *tg_fn_schedule(const tg_fn *fn)
{
    if (!fn)
        return NULL;
    if (!fn->schedule)
        ((tg_fn *)fn)->schedule = fn->state ? tgSt_schedule(fn->s, fn->state, tgH_term(fn->s, NULL))
                                            : tgH_term(fn->s, NULL);
    return fn->schedule;
}

void tg_fn_interrupt(tg_fn *fn)
{
    if (fn)
        fn->st.intr = 1;
}

int tg_fn_native(const tg_fn *fn) { return fn && fn->st.kern != NULL; }

/* ---- profiles -------------------------------------------------------- */

int tg_fn_profile(const tg_fn *fn, tg_fn_stats *out)
{
    if (!fn || !out)
        return -1;
    *out = fn->prof;
    /* the calls after the first CALLS_TIMED, from those sampled (none when
     * every call is timed) */
    double ticks = (double)fn->call_ticks;
    if (fn->nsampled)
        ticks += (double)fn->sampled_ticks / (double)fn->nsampled * (double)(fn->prof.calls - CALLS_TIMED);
    out->call_ms = ticks * tgTm_ms_per_tick(fn->mark);
    return 0;
}

void tg_fn_profile_print(const tg_fn_stats *p, FILE *out)
{
    if (!p || !out)
        return;
    fprintf(out, "compile %.3f ms\n", p->compile_ms);
    const char *name[] = {"grad", "rewrite", "type", "schedule", "codegen", "cc", "load"};
    const double ms[] = {p->grad_ms, p->rewrite_ms, p->type_ms, p->schedule_ms,
                         p->codegen_ms, p->cc_ms, p->load_ms};
    for (int i = 0; i < 7; i++) {
        fprintf(out, "  %-9s %10.3f ms", name[i], ms[i]);
        if ((i == 1 && p->rewrite_cached) || (i == 6 && p->code_cached))
            fputs("  (cached)", out);
        fputc('\n', out);
    }
    fprintf(out, "nodes %zu before rewriting, %zu after\n", p->nodes_before, p->nodes_after);
    fprintf(out, "%s code\n", p->native ? "native" : "interpreted");
    fprintf(out, "calls %llu, %.3f ms", p->calls, p->call_ms);
    if (p->calls)
        fprintf(out, ", %.3f us per call", p->call_ms * 1e3 / (double)p->calls);
    fputc('\n', out);
}

void tg_fn_free(tg_fn *fn)
{
    if (!fn)
        return;
    tgI_free(&fn->st);
    tgCk_free(fn->check);
    tgSt_free(fn->state);
    if (fn->so)
        dlclose(fn->so);
    GC_FREE(fn);
}
