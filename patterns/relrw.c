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
#include "lang.h"

#include <gc/gc.h>
#include <stdio.h>
#include <stdlib.h>

struct tgV_rel {
    tgL_call *call;         /* (r ?0 ?1) with both arguments given at each call */
    int backward;
};

/* Both directions of one relation, under its name in rs->relrw. */
typedef struct both {
    tgW_rule *dir[2];
} both;

long tgV_check(tg_rules *rs, const tg_term *name)
{
    tgG_rel *rel = rs->env && tg_kind_of(name) == TG_SYMBOL ? tgG_rel_find(rs->env, name) : NULL;
    if (!rel || (!rel->body && !rel->cfn))
        return -1;
    return rel->arity == 2 ? 0 : (long)rel->arity;
}

tgW_rule *tgV_rule(tg_rules *rs, tg_term *name, int backward, tg_error *err)
{
    long a = tgV_check(rs, name);
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
    struct tgV_rel *v = GC_MALLOC(sizeof *v);
    if (!r || !v || !(v->call = tgL_call_new(rs->env, tgG_rel_find(rs->env, name), 2)))
        return tgE_nomem(err), NULL;
    v->backward = backward;
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

/* Relation r applied to t: 1 with *out, 0, -1. */
static int apply(tgW_rule *r, tg_term *t, tg_term **out, tg_error *err)
{
    int in = r->rel->backward, len;
    tg_term *args[2], *vals[2];
    args[in] = t, args[!in] = NULL;
    r->tried++;
    int k = tgL_call_first(r->rel->call, args, vals, err);
    if (k <= 0) {
        if (k < 0 && err && err->line == 0) {   /* say which rewrite it was */
            char msg[sizeof err->message];
            snprintf(msg, sizeof msg, "%s", err->message);
            const char *nm = name_of(r, &len);
            tgE_set(err, err->code, NULL, 0, 0, "%s%.*s: %s", in ? "(reverse) " : "", len, nm, msg);
        }
        return k;
    }
    if (!tg_is_ground(vals[!in])) {
        const char *nm = name_of(r, &len);
        char *a = tg_print(vals[!in], NULL), *b = tg_print(t, NULL);
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

int tgV_step(tg_rules *rs, tgW_rule *const *rels, uint32_t n, tg_term *t, unsigned long long limit,
             tg_term **out, tg_error *err)
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
        if (!k)
            continue;
        r->fired++;
        rs->rewrites++;
        if (limit && r->fired - r->fired0 > limit) {
            int len;
            const char *nm = name_of(r, &len);
            tgE_set(err, TG_ERR_RANGE, NULL, 0, 0,
                    "relation %.*s%s fired more than %llu times (the max-use ratio): stopped", len, nm,
                    r->backward ? " (reverse)" : "", limit);
            return -1;
        }
        if (rs->trace_on && rs->trace)
            trace(rs, r, t, *out);
        return 1;
    }
    return 0;
}
