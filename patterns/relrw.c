/* relrw.c - relations of two arguments used as rewrites (see relrw.h and
 * doc/rules.md, "Relations as rewrites").
 *
 * A direction of a relation is a rule object with no match or body
 * program: rule->rel says which relation and holds its compiled call, so
 * a rewrite costs one search of the first answer, without compiling a
 * run form each time.  Calls only read the term and the logic
 * environment, never the rewriting machine, so a relation may be tried
 * in the middle of a walk.
 */
#include "relrw.h"
#include "prov.h"
#include "compile.h"
#include "lang.h"
#include "clock.h"

#include <gc/gc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

struct tgD_rel {
    tg_env *env;
    tgL_call *call;         /* (r ?0 ?1) with both arguments given at each call */
    int backward;
    tgG_rel *rel;           /* the relation (the same object when redefined) */
    tg_term *var;           /* the unknown argument, for a direct call of a C relation */
};

/* Both directions of one relation, under its name in rs->relrw. */
typedef struct both {
    tgW_rule *dir[2];
} both;

long tgD_arity(tg_rules *rs, const tg_term *name)
{
    tgG_rel *rel = rs->env && tg_kind_of(name) == TG_SYMBOL ? tgG_rel_find(rs->env, name) : NULL;
    return !rel || (!rel->body && !rel->cfn) ? -1 : (long)rel->arity;
}

long tgD_check(tg_rules *rs, const tg_term *name)
{
    long a = tgD_arity(rs, name);
    return a == 2 ? 0 : a;
}

tgW_rule *tgD_rule(tg_rules *rs, tg_term *name, int backward, tg_error *err)
{
    long a = tgD_check(rs, name);
    size_t nl;
    const char *ns = tg_kind_of(name) == TG_SYMBOL ? tg_symbol_name(name, &nl) : (nl = 1, "?");
    if (a < 0) {
        tgE_set(err, TG_ERR_ARG, NULL, 0, 0, "unknown rule, rewriter or relation %.*s", (int)nl, ns);
        return NULL;
    }
    if (a > 0) {
        tgE_set(err, TG_ERR_ARG, NULL, 0, 0,
                "relation %.*s takes %ld argument%s: a rewrite needs a relation of 2", (int)nl, ns,
                a, a == 1 ? "" : "s");
        return NULL;
    }
    both *b = tgW_map_get(&rs->relrw, name);
    if (!b) {
        if (!(b = GC_MALLOC(sizeof *b)) || tgW_map_put(&rs->relrw, name, b) < 0)
            return tgE_nomem(err), NULL;
    }
    if (b->dir[backward])
        return b->dir[backward];
    tgW_rule *r = GC_MALLOC(sizeof *r);
    struct tgD_rel *v = GC_MALLOC(sizeof *v);
    if (!r || !v || !(v->call = tgL_call_new(rs->env, tgG_rel_find(rs->env, name), 2, 0)))
        return tgE_nomem(err), NULL;
    v->backward = backward;
    v->env = rs->env;
    v->rel = tgG_rel_find(rs->env, name);
    if (!(v->var = tg_env_var(rs->env, "out")))
        return tgE_nomem(err), NULL;
    r->name = name;
    r->backward = backward;
    r->rel = v;
    r->tags = tg_nil();
    b->dir[backward] = r;
    return r;
}

static void trace(tg_rules *rs, const tgW_rule *r, const tg_term *before, const tg_term *after)
{
    char *b = tg_print(before, NULL), *a = tg_print(after, NULL);
    size_t nl;
    const char *nm = tg_symbol_name(r->name, &nl);
    if (a && b)
        fprintf(rs->trace, "%.*s%s: %s => %s\n", (int)nl, nm, r->backward ? " (reverse)" : "", b, a);
    free(b);
    free(a);
}

static const char *name_of(const tgW_rule *r, int *len)
{
    size_t nl;
    const char *s = tg_symbol_name(r->name, &nl);
    *len = nl > 200 ? 200 : (int)nl;
    return s;
}

/* A relation written in C, called directly: the search would call it
 * with the same arguments (t and an unbound variable) and take its first
 * answer.  1 with *out when that answer is t and a ground term, 0 when
 * it has none; 2 for anything else (an error, an answer with variables or
 * that t would have to unify with), which the search then handles as
 * always.  A rewrite of a term with no C relation's answer costs a
 * function call instead of setting up a search (the Scan rewrites are
 * tried on every node of a graph). */
static int apply_c(const struct tgD_rel *v, tg_term *t, tg_term **out)
{
    const tgG_rel *rel = v->rel;
    if (!rel || !rel->cfn || rel->body || rel->arity != 2)
        return 2;
    int in = v->backward;
    tg_term *args[2], *answer = NULL;
    args[in] = t, args[!in] = v->var;
    void *state = NULL;
    tg_error e;
    tg_error_clear(&e);
    int rc = rel->cfn(v->env->ctx, args, 2, 0, &state, &answer, rel->cud, &e);
    if (rc == 0 && e.code == TG_OK)
        return 0;
    if (rc != 1 || !answer || tg_length(answer) != 2 || tg_tail(answer) != tg_nil() ||
        tg_nth(answer, (size_t)in) != t || !tg_is_ground(tg_nth(answer, (size_t)!in)))
        return 2;
    *out = tg_nth(answer, (size_t)!in);
    return 1;
}

/* Relation r applied to t: 1 with *out, 0, -1. */
static int apply_untimed(tgW_rule *r, tg_term *t, tg_term **out, tg_error *err);

/* Relation r applied to t, its time counted for profiles (a search costs
 * far more than reading the clock). */
static int apply(tgW_rule *r, tg_term *t, tg_term **out, tg_error *err)
{
    uint64_t t0 = tgTm_ticks();
    int k = apply_untimed(r, t, out, err);
    r->ticks += tgTm_ticks() - t0;
    return k;
}

static int apply_untimed(tgW_rule *r, tg_term *t, tg_term **out, tg_error *err)
{
    int in = r->rel->backward, len;
    tg_term *args[2], *vals[2];
    args[in] = t, args[!in] = NULL;
    r->tried++;
    int direct = apply_c(r->rel, t, out);
    if (direct < 2)
        return direct;
    int k = tgL_call_first(r->rel->call, args, vals, err);
    if (k <= 0) {
        if (k < 0 && err && err->line == 0) {   /* say which rewrite it was */
            char msg[sizeof err->message];
            snprintf(msg, sizeof msg, "%s", err->message);
            const char *nm = name_of(r, &len);
            tgE_set(err, err->code, NULL, 0, 0, "%.*s%s: %s", len, nm, in ? " (reverse)" : "", msg);
        }
        return k;
    }
    if (!tg_is_ground(vals[!in])) {
        const char *nm = name_of(r, &len);
        tg_term *named = tgL_name_vars(r->rel->env, vals[!in]);
        char *a = named ? tg_print(named, NULL) : NULL, *b = tg_print(t, NULL);
        tgE_set(err, TG_ERR_ARG, NULL, 0, 0,
                "relation %.*s%s rewrites %.200s to %.200s, which is not ground (a rewrite needs one term)",
                len, nm, in ? " (reverse)" : "", b ? b : "a term", a ? a : "a term with variables");
        free(a);
        free(b);
        return -1;
    }
    *out = vals[!in];
    return 1;
}

/* tgD_step, and which rule fired in *by. */
static int step_by(tg_rules *rs, tgW_rule *const *rels, uint32_t n, tg_term *t,
                   tgW_limit *limit, tg_term **out, tgW_rule **by, tg_error *err)
{
    if (rs->interrupt) {
        tgE_set(err, TG_ERR_RANGE, NULL, 0, 0, "interrupted");
        return -1;
    }
    for (uint32_t i = 0; i < n; i++) {
        tgW_rule *r = rels[i];
        int k = apply(r, t, out, err);
        if (k < 0)
            return -1;
        if (!k || *out == t)    /* the term itself: no rewrite */
            continue;
        *by = r;
        r->fired++;
        rs->rewrites++;
        if (limit && r->fired - r->fired0 > limit->n &&
            tgW_limit_over(rs, limit, r->fired - r->fired0, 0)) {
            int len;
            const char *nm = name_of(r, &len);
            tgE_set(err, TG_ERR_RANGE, NULL, 0, 0,
                    "relation %.*s%s fired more than %llu times (the max-use ratio): stopped", len, nm,
                    r->backward ? " (reverse)" : "", limit->n);
            return -1;
        }
        if (rs->trace_on && rs->trace)
            trace(rs, r, t, *out);
        if (rs->prov && tgO_fired(rs->prov, r, t, *out) < 0)
            return tgE_nomem(err), -1;
        return 1;
    }
    return 0;
}

int tgD_step(tg_rules *rs, tgW_rule *const *rels, uint32_t n, tg_term *t, tgW_limit *limit,
             tg_term **out, tg_error *err)
{
    tgW_rule *by;
    return tgT_ispair(t) ? step_by(rs, rels, n, t, limit, out, &by, err) : 0;
}

/* ---- normalizing under relations ------------------------------------ */

/* The marker of a term being normalized. */
static tg_term inprogress_obj;
#define INPROGRESS (&inprogress_obj)

/* A node being normalized: its elements are pushed on vals from vb on;
 * the terms it went through (itself, then what relations rewrote it to)
 * are on the chain from cb on, each with the rule that gave it. */
typedef struct nframe {
    tg_term *t;
    tg_iter it;
    size_t vb, cb;
    uint32_t pos;           /* provenance: its position id */
} nframe;

typedef struct norm {
    tg_rules *rs;
    tg_error *err;
    tgW_map *memo;          /* term -> normal form, or INPROGRESS */
    nframe *fs;
    size_t nf, capf;
    tg_term **vals;
    size_t nv, capv;
    void **chain;           /* (term, rule) pairs */
    size_t nc, capc;
} norm;

static int push_frame(norm *N, tg_term *t, const tgW_rule *by, uint32_t pos)
{
    nframe *f = tgW_grow(N->fs, N->nf, &N->capf, N->nf + 1, sizeof *f);
    void **c = f ? tgW_grow(N->chain, N->nc, &N->capc, N->nc + 2, sizeof *c) : NULL;
    if (!c || tgW_map_put(N->memo, t, INPROGRESS) < 0)
        return tgE_nomem(N->err), -1;
    N->fs = f, N->chain = c;
    f += N->nf++;
    f->t = t, f->it.node = t, f->it.i = 0, f->vb = N->nv, f->cb = N->nc, f->pos = pos;
    N->chain[N->nc++] = t;
    N->chain[N->nc++] = (void *)by;
    return 0;
}

static int push_val(norm *N, tg_term *v)
{
    tg_term **a = tgW_grow(N->vals, N->nv, &N->capv, N->nv + 1, sizeof *a);
    if (!a)
        return tgE_nomem(N->err), -1;
    N->vals = a;
    N->vals[N->nv++] = v;
    return 0;
}

/* t came back while being normalized (given by rule last, if not NULL):
 * the relations that fired since. */
static void cycle(norm *N, tg_term *t, const tgW_rule *last)
{
    size_t i = N->nc;
    while (i >= 2 && N->chain[i - 2] != t)
        i -= 2;
    char names[400];
    size_t len = 0;
    names[0] = 0;
    for (size_t j = i ? i : 0; j <= N->nc && len < sizeof names - 80; j += 2) {
        const tgW_rule *r = j < N->nc ? N->chain[j + 1] : last;
        if (!r)
            continue;
        int nl;
        const char *s = name_of(r, &nl);
        int w = snprintf(names + len, sizeof names - len, "%s%.*s%s", len ? " -> " : "",
                         nl > 60 ? 60 : nl, s, r->backward ? " (reverse)" : "");
        if (w > 0)
            len += (size_t)w;
    }
    char *p = tg_print(t, NULL);
    tgE_set(N->err, TG_ERR_RANGE, NULL, 0, 0, "rewriting cycles: %.200s comes back after %s",
            p ? p : "a term", len ? names : "a relation");
    free(p);
}

tg_term *tgD_normalize(tg_rules *rs, tgW_rule *const *rels, uint32_t n, tg_term *t,
                       tgW_limit *limit, tgW_map *memo, tg_error *err)
{
    norm N = {rs, err, memo, NULL, 0, 0, NULL, 0, 0, NULL, 0, 0};
    if (!tgT_ispair(t))
        return t;
    tg_term *known = tgW_map_get(memo, t);
    if (known && known != INPROGRESS)
        return known;
    tgO_prov *pv = rs->prov;
    if (push_frame(&N, t, NULL, pv ? tgO_pass(pv) : 0) < 0)
        return NULL;
    while (N.nf) {
        nframe *f = &N.fs[N.nf - 1];
        tg_term *x = tgT_iter_next(&f->it);
        if (x) {
            tg_term *v = tgT_ispair(x) ? tgW_map_get(N.memo, x) : x;
            if (v == INPROGRESS) {
                cycle(&N, x, NULL);
                return NULL;
            }
            if (!v) {
                uint32_t pos = pv ? tgO_pos(pv, f->pos, (uint32_t)(N.nv - f->vb)) : 0;
                if (push_frame(&N, x, NULL, pos) < 0)
                    return NULL;
                continue;
            }
            if (push_val(&N, v) < 0)
                return NULL;
            continue;
        }
        /* every element normalized: the node, then the relations at it */
        tg_term *tail = (tg_term *)f->it.node;
        tg_term *node = tg_list(rs->ctx, N.nv - f->vb, N.vals + f->vb, tail == TGT_NIL ? NULL : tail);
        if (!node)
            return tgE_nomem(err), NULL;
        N.nv = f->vb;
        tg_term *y = NULL;
        tgW_rule *by = NULL;
        int k = node == f->t ? 0 : 1;
        tg_term *known = k ? tgW_map_get(N.memo, node) : NULL;
        if (known == INPROGRESS) {
            cycle(&N, node, NULL);
            return NULL;
        }
        if (pv && node != f->t && tgO_link(pv, node, f->t) < 0)
            return tgE_nomem(err), NULL;
        if (!known) {
            if (pv)
                tgO_at(pv, f->pos);
            if ((k = step_by(rs, rels, n, node, limit, &y, &by, err)) < 0)
                return NULL;
            if (k) {
                /* rewritten: y is normalized in this frame */
                tg_term *m = tgT_ispair(y) ? tgW_map_get(N.memo, y) : y;
                if (m == INPROGRESS) {
                    cycle(&N, y, by);
                    return NULL;
                }
                if (!m) {
                    void **c = tgW_grow(N.chain, N.nc, &N.capc, N.nc + 4, sizeof *c);
                    if (!c || tgW_map_put(N.memo, y, INPROGRESS) < 0 ||
                        (node != f->t && tgW_map_put(N.memo, node, INPROGRESS) < 0))
                        return tgE_nomem(err), NULL;
                    N.chain = c;
                    if (node != f->t)
                        N.chain[N.nc++] = node, N.chain[N.nc++] = NULL;
                    N.chain[N.nc++] = y;
                    N.chain[N.nc++] = by;
                    f->t = y, f->it.node = y, f->it.i = 0;
                    continue;
                }
                known = m;
            }
        }
        tg_term *res = known ? known : node;
        for (size_t j = f->cb; j < N.nc; j += 2)
            if (tgW_map_put(N.memo, N.chain[j], res) < 0)
                return tgE_nomem(err), NULL;
        if (tgW_map_put(N.memo, node, res) < 0)
            return tgE_nomem(err), NULL;
        N.nc = f->cb;
        N.nf--;
        if (!N.nf)
            return res;
        if (push_val(&N, res) < 0)
            return NULL;
    }
    return NULL;
}

/* ---- relations as conditions -------------------------------------------- */

typedef struct gsub {
    tg_rules *rs;
    const tgW_rule *r;
    tg_term *const *R;
    tg_term **outs, **lvars;    /* the goal's unbound variables and their logic variables */
    size_t nout;
} gsub;

/* Template t with its variables replaced: bound ones by their values,
 * the goal's by logic variables, wildcards by new ones.  Compiling bounds
 * the nesting (TGW_MAXGOALDEPTH), so the recursion is bounded. */
static tg_term *gsubst(gsub *g, tg_term *t)
{
    if (tg_kind_of(t) == TG_VAR) {
        for (size_t i = 0; i < g->nout; i++)
            if (g->outs[i] == t)
                return g->lvars[i];
        for (uint32_t i = 0; i < g->r->nvars; i++)
            if (g->r->vars[i] == t)
                return g->R[g->r->vregs[i]];
        return tg_env_var(g->rs->env, "_");     /* ?_ */
    }
    if (!tgT_ispair(t) || tg_is_ground(t))
        return t;
    size_t n = tg_length(t);
    tg_term *buf[16], **v = n <= 16 ? buf : GC_MALLOC(n * sizeof *v);
    if (!v)
        return NULL;
    tg_iter it = {t, 0};
    size_t i = 0;
    for (tg_term *x; (x = tgT_iter_next(&it));)
        if (!(v[i++] = gsubst(g, x)))
            return NULL;
    tg_term *tl = (tg_term *)it.node;
    if (tl != TGT_NIL && !(tl = gsubst(g, tl)))
        return NULL;
    return tg_list(g->rs->ctx, n, v, tl == TGT_NIL ? NULL : tl);
}

static void goal_err(tg_error *err, const tgW_rule *r, tg_term *const *d, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void goal_err(tg_error *err, const tgW_rule *r, tg_term *const *d, const char *fmt, ...)
{
    int64_t line = 0, col = 0;
    tg_int_get(d[2], &line);
    tg_int_get(d[3], &col);
    char msg[sizeof err->message];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int nl;
    const char *nm = name_of(r, &nl);
    char *g = tgW_show(d[4]);
    tgE_set(err, TG_ERR_ARG, r->file, r->file ? (int)line : 0, r->file ? (int)col : 0,
            "rule %.*s: %s in %s", nl, nm, msg, g ? g : "?");
    free(g);
}

int tgD_goal(tg_rules *rs, tg_term *desc, tg_term *const *args, unsigned nargs, tg_term **R,
             const tgW_rule *r, tg_error *err)
{
    tg_term *d[5 + 2 * 64];
    size_t nd = tg_elements(desc, d, sizeof d / sizeof *d);
    int64_t mask = 0;
    tg_int_get(d[1], &mask);
    size_t nout = (nd - 5) / 2;
    size_t nl;
    const char *ns = tg_symbol_name(d[0], &nl);
    tgG_rel *rel = rs->env ? tgG_rel_find(rs->env, d[0]) : NULL;
    if (!rel || (!rel->body && !rel->cfn)) {
        goal_err(err, r, d, "unknown relation %.*s", (int)nl, ns);
        return -1;
    }
    if (rel->arity != nargs) {
        goal_err(err, r, d, "relation %.*s takes %u argument%s, called with %u", (int)nl, ns,
                 rel->arity, rel->arity == 1 ? "" : "s", nargs);
        return -1;
    }
    tgL_call *call = tgW_map_get(&rs->relrw, desc);
    if (!call && (!(call = tgL_call_new(rs->env, rel, nargs, (unsigned)nout)) ||
                  tgW_map_put(&rs->relrw, desc, call) < 0))
        return tgE_nomem(err), -1;
    tg_term **a = GC_MALLOC((nargs + nout + 1) * sizeof *a), *outs[64];
    if (!a)
        return tgE_nomem(err), -1;
    gsub g = {rs, r, R, outs, a + nargs, nout};
    for (size_t i = 0; i < nout; i++) {
        outs[i] = d[5 + 2 * i];
        if (!(a[nargs + i] = tg_env_var(rs->env, "_")))
            return tgE_nomem(err), -1;
    }
    for (unsigned i = 0; i < nargs; i++)
        if (!(a[i] = (mask >> i) & 1 ? gsubst(&g, args[i]) : args[i]))
            return tgE_nomem(err), -1;
    tg_term **got = GC_MALLOC((nargs + nout + 1) * sizeof *got);
    if (!got)
        return tgE_nomem(err), -1;
    int k = tgL_call_first(call, a, got, err);
    if (k < 0) {
        char msg[sizeof err->message];
        snprintf(msg, sizeof msg, "%s", err ? err->message : "");
        goal_err(err, r, d, "%s", msg);
        return -1;
    }
    if (!k)
        return 0;
    for (size_t i = 0; i < nout; i++) {
        tg_term *v = got[nargs + i];
        if (!tg_is_ground(v)) {
            size_t vl;
            const char *vs = tg_var_name(outs[i], &vl);
            tg_term *named = tgL_name_vars(rs->env, v);
            char *p = named ? tg_print(named, NULL) : NULL;
            goal_err(err, r, d, "relation %.*s leaves ?%.*s not ground (%.200s): a rule needs one term",
                     (int)nl, ns, (int)vl, vs, p ? p : "a term with variables");
            free(p);
            return -1;
        }
        int64_t reg;
        tg_int_get(d[6 + 2 * i], &reg);
        R[reg] = v;
    }
    return 1;
}
