/* cext.c - node rewriters and condition predicates written in C (the
 * public tg_rules_def_rewriter and tg_rules_def_predicate), and what the
 * machine calls to run them (cext.h).
 *
 * A C rewriter becomes a rule of its own name whose body calls it, so
 * that everything that handles rules by name (rewriter items, queries,
 * tags, profiles, traces, max-use ratios, cycle detection) handles it as
 * well.  A C predicate is looked up by name when a rule using it
 * compiles: a name that is not registered then is an unknown condition,
 * reported with the rule's file:line:column.
 */
#include "cext.h"
#include "rewriters.h"
#include "compile.h"
#include "error.h"

#include <ctype.h>
#include <gc/gc.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CEXT 65535      /* the instructions' 16-bit operand */

typedef struct crw {
    tg_term *name;
    tg_node_rewriter_fn fn;
    void *ud;
    tgW_rule *rule;
} crw;

typedef struct cpred {
    tg_term *name;
    unsigned arity;
    tg_predicate_fn fn;
    void *ud;
} cpred;

struct tgX_ext {
    crw *rw;
    size_t nrw, caprw;
    cpred *pred;
    size_t npred, cappred;
    tgW_op *any;            /* the op of rewriters for any op */
    tg_term *s_args, *s_result;
    int busy;               /* C functions running */
};

static struct tgX_ext *ext_get(tg_rules *rs)
{
    if (!rs->ext) {
        struct tgX_ext *x = GC_MALLOC(sizeof *x);
        tgW_op *any = GC_MALLOC(sizeof *any);
        if (!x || !any)
            return NULL;
        any->name = tg_symbol_cstr(rs->ctx, "_");
        any->id = TGW_ANYOP;
        any->flags = TGW_VARIADIC;
        any->amax = UINT32_MAX;
        any->props = tg_nil();
        any->file = "<C>";
        x->any = any;
        x->s_args = tg_var(rs->ctx, "args", 4, 0);
        x->s_result = tg_var(rs->ctx, "result", 6, 0);
        if (!any->name || !x->s_args || !x->s_result)
            return NULL;
        rs->ext = x;
    }
    return rs->ext;
}

int tgX_busy(const tg_rules *rs)
{
    return rs->ext && rs->ext->busy;
}

/* Checks common to both registrations: 0, or -1 with err filled. */
static int check_reg(tg_rules *rs, const char *what, const char *name, const void *fn,
                     tg_error *err)
{
    if (!rs || !name || !fn) {
        tgE_set(err, TG_ERR_ARG, NULL, 0, 0, "%s: NULL argument", what);
        return -1;
    }
    if (!*name) {
        tgE_set(err, TG_ERR_ARG, NULL, 0, 0, "%s: empty name", what);
        return -1;
    }
    if (tgX_busy(rs)) {
        tgE_set(err, TG_ERR_ARG, NULL, 0, 0, "%s: called while a C function of the rule set runs",
                what);
        return -1;
    }
    return 0;
}

/* A registration noted in the rule set's definitions (rset.h: src), as
 * (KIND NAME A B): the function itself is known by the embedder's
 * version string alone (tg_rules_set_c_version). */
static int log_reg(tg_rules *rs, const char *kind, tg_term *name, tg_term *a, tg_term *b,
                   tg_error *err)
{
    tg_term *v[4] = {tg_symbol_cstr(rs->ctx, kind), name, a, b};
    tg_term *f = v[0] && a && b ? tg_list(rs->ctx, 4, v, NULL) : NULL;
    return f && tgW_log_src(rs, f) == 0 ? 0 : (tgE_nomem(err), -1);
}

/* "a b  c" -> (a b c): tags separated by white space. */
static tg_term *parse_tags(tg_ctx *ctx, const char *s)
{
    tg_term *v[64];
    size_t n = 0;
    tg_term *acc = tg_nil();
    while (s && *s) {
        while (isspace((unsigned char)*s))
            s++;
        const char *b = s;
        while (*s && !isspace((unsigned char)*s))
            s++;
        if (s == b)
            break;
        if (!(v[n++] = tg_symbol(ctx, b, (size_t)(s - b))))
            return NULL;
        if (n == 64) {
            if (!(acc = tg_list(ctx, n, v, acc == tg_nil() ? NULL : acc)))
                return NULL;
            n = 0;
        }
    }
    /* chunks were prepended: order within a chunk kept, chunks reversed
     * (tags are a set, so that is harmless) */
    return n ? tg_list(ctx, n, v, acc == tg_nil() ? NULL : acc) : acc;
}

static crw *crw_named(struct tgX_ext *x, const tg_term *name)
{
    for (size_t i = 0; i < x->nrw; i++)
        if (x->rw[i].name == name)
            return &x->rw[i];
    return NULL;
}

/* The rule that runs C rewriter number idx on every call of op. */
static tgW_rule *crw_rule(tg_rules *rs, struct tgX_ext *x, tg_term *name, tgW_op *op, size_t idx,
                          tg_term *tags)
{
    tgW_rule *r = GC_MALLOC(sizeof *r);
    tgW_ins *m = GC_MALLOC_ATOMIC(sizeof *m);
    tgW_ins *b = GC_MALLOC_ATOMIC(3 * sizeof *b);
    tg_term **vars = GC_MALLOC(sizeof *vars);
    uint32_t *vregs = GC_MALLOC_ATOMIC(sizeof *vregs);
    if (!r || !m || !b || !vars || !vregs)
        return NULL;
    memset(m, 0, sizeof *m);
    memset(b, 0, 3 * sizeof *b);
    m[0].op = M_DONE;
    b[0].op = E_CEXT, b[0].a = (uint16_t)idx;
    b[1].op = E_FIRE;
    b[2].op = E_CRET;
    r->name = name;
    r->op = op;
    r->lhs = op->id == TGW_ANYOP ? x->s_args : tg_cons(rs->ctx, op->name, x->s_args);
    r->rhs = x->s_result;
    if (!r->lhs)
        return NULL;
    r->match = m, r->body = b;
    r->nregs = 1;           /* R[0]: the result */
    r->seg = 1;             /* registers above the arguments, which stay */
    r->maxstack = 4;
    vars[0] = x->s_result, vregs[0] = 0;
    r->vars = vars, r->vregs = vregs, r->nvars = 1;
    r->tags = tags;
    r->file = "<C>";
    return r;
}

int tg_rules_def_rewriter(tg_rules *rs, const char *name, const char *op, const char *tags,
                          tg_node_rewriter_fn fn, void *ud, tg_error *err)
{
    static const char what[] = "tg_rules_def_rewriter";
    if (check_reg(rs, what, name, (const void *)fn, err) < 0)
        return -1;
    struct tgX_ext *x = ext_get(rs);
    tg_term *nm = tg_symbol_cstr(rs->ctx, name);
    tg_term *tl = parse_tags(rs->ctx, tags);
    if (!x || !nm || !tl)
        return tgE_nomem(err), -1;
    tgW_op *o = x->any;
    if (op && !(o = tgW_op_find(rs, tg_symbol_cstr(rs->ctx, op)))) {
        tgE_set(err, TG_ERR_ARG, NULL, 0, 0, "%s: unknown op %s (declare it with (op %s ...) first)",
                what, op, op);
        return -1;
    }
    if (tgW_rw_find(rs, nm)) {
        tgE_set(err, TG_ERR_ARG, NULL, 0, 0, "%s: %s is already the name of a rewriter", what, name);
        return -1;
    }
    const tgW_rule *old = tgW_map_get(&rs->rulemap, nm);
    crw *c = crw_named(x, nm);
    if (old && !c) {
        tgE_set(err, TG_ERR_ARG, NULL, 0, 0, "%s: %s is already the name of a rule (%s:%d:%d)", what,
                name, old->file ? old->file : "?", old->line, old->col);
        return -1;
    }
    if (c) {    /* redefined: the same rule, a new function */
        if (c->rule->op != o) {
            tgE_set(err, TG_ERR_ARG, NULL, 0, 0, "%s: %s was registered for op %s", what, name,
                    c->rule->op->id == TGW_ANYOP ? "(any)" : tg_symbol_name(c->rule->op->name, NULL));
            return -1;
        }
        c->fn = fn, c->ud = ud;
        c->rule->tags = tl;
        return log_reg(rs, "c-rewriter", nm, o->name, tl, err);
    }
    if (x->nrw == MAX_CEXT) {
        tgE_set(err, TG_ERR_RANGE, NULL, 0, 0, "%s: too many C rewriters", what);
        return -1;
    }
    crw *v = tgW_grow(x->rw, x->nrw, &x->caprw, x->nrw + 1, sizeof *v);
    tgW_rule *r = v ? crw_rule(rs, x, nm, o, x->nrw, tl) : NULL;
    if (!r)
        return tgE_nomem(err), -1;
    x->rw = v;
    x->rw[x->nrw] = (crw){nm, fn, ud, r};
    if (tgW_rule_add(rs, r) < 0)
        return tgE_nomem(err), -1;
    x->nrw++;
    return log_reg(rs, "c-rewriter", nm, o->name, tl, err);
}

/* Names a predicate may not take: the conditions the compiler knows. */
static int reserved(const char *s)
{
    static const char *const names[] = {"==", "!=", "not", "const?", "number?", "int?", "rational?",
                                        "double?", "symbol?", "string?", "atom?", "app?", "nil?"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!strcmp(s, names[i]))
            return 1;
    return 0;
}

int tg_rules_def_predicate(tg_rules *rs, const char *name, unsigned arity, tg_predicate_fn fn,
                           void *ud, tg_error *err)
{
    static const char what[] = "tg_rules_def_predicate";
    if (check_reg(rs, what, name, (const void *)fn, err) < 0)
        return -1;
    if (reserved(name)) {
        tgE_set(err, TG_ERR_ARG, NULL, 0, 0, "%s: %s is a built-in condition", what, name);
        return -1;
    }
    if (arity > 255) {
        tgE_set(err, TG_ERR_RANGE, NULL, 0, 0, "%s: arity %u (at most 255)", what, arity);
        return -1;
    }
    struct tgX_ext *x = ext_get(rs);
    tg_term *nm = tg_symbol_cstr(rs->ctx, name);
    if (!x || !nm)
        return tgE_nomem(err), -1;
    long p = tgX_pred_find(rs, nm);
    if (p >= 0) {   /* compiled rules call it by index: the arity stays */
        if (x->pred[p].arity != arity) {
            tgE_set(err, TG_ERR_ARG, NULL, 0, 0,
                    "%s: %s was registered with arity %u (rules may use it), not %u", what, name,
                    x->pred[p].arity, arity);
            return -1;
        }
        x->pred[p].fn = fn, x->pred[p].ud = ud;
        return log_reg(rs, "c-predicate", nm, tg_int(rs->ctx, arity), tg_nil(), err);
    }
    if (x->npred == MAX_CEXT) {
        tgE_set(err, TG_ERR_RANGE, NULL, 0, 0, "%s: too many C predicates", what);
        return -1;
    }
    cpred *v = tgW_grow(x->pred, x->npred, &x->cappred, x->npred + 1, sizeof *v);
    if (!v)
        return tgE_nomem(err), -1;
    x->pred = v;
    x->pred[x->npred++] = (cpred){nm, arity, fn, ud};
    return log_reg(rs, "c-predicate", nm, tg_int(rs->ctx, arity), tg_nil(), err);
}

int tg_rules_set_c_version(tg_rules *rs, const char *version, tg_error *err)
{
    if (!rs)
        return tgE_arg(err, "tg_rules_set_c_version: NULL rule set"), -1;
    char *v = NULL;
    if (version && !(v = GC_MALLOC_ATOMIC(strlen(version) + 1)))
        return tgE_nomem(err), -1;
    rs->cversion = version ? strcpy(v, version) : NULL;
    return 0;
}

long tgX_pred_find(const tg_rules *rs, const tg_term *name)
{
    if (!rs->ext)
        return -1;
    for (size_t i = 0; i < rs->ext->npred; i++)
        if (rs->ext->pred[i].name == name)
            return (long)i;
    return -1;
}

unsigned tgX_pred_arity(const tg_rules *rs, long p)
{
    return rs->ext->pred[p].arity;
}

/* err from what a C function left in e, naming it and where it ran. */
static void report(tg_error *err, const tg_error *e, const char *kind, const tg_term *name,
                   const tg_term *at)
{
    char *s = tgW_show(at);
    const char *nm = tg_symbol_name(name, NULL);
    tgE_set(err, e->code, NULL, 0, 0, "%s %s failed on %s: %s", kind, nm, s ? s : "a term",
            e->message[0] ? e->message : "no message");
    free(s);
}

int tgX_pred_call(tg_rules *rs, long p, tg_term *const *args, unsigned nargs, tg_error *err)
{
    struct tgX_ext *x = rs->ext;
    tg_error e;
    tg_error_clear(&e);
    x->busy++;
    int rc = x->pred[p].fn(rs->ctx, args, nargs, x->pred[p].ud, &e);
    x->busy--;
    if (rc < 0 || e.code != TG_OK) {
        if (e.code == TG_OK)
            e.code = TG_ERR_ARG;
        tg_term *call = tg_cons(rs->ctx, x->pred[p].name, tg_list(rs->ctx, nargs, args, NULL));
        report(err, &e, "C predicate", x->pred[p].name, call ? call : x->pred[p].name);
        return -1;
    }
    return rc != 0;
}

int tgX_rewrite(tg_rules *rs, unsigned idx, tgW_rule *r, tg_term *call, tg_term **out,
                tg_error *err)
{
    struct tgX_ext *x = rs->ext;
    const crw *c = &x->rw[idx];
    tg_error e;
    tg_error_clear(&e);
    tg_stats s0, s1;
    tg_ctx_stats(rs->ctx, &s0);
    x->busy++;
    tg_term *t = c->fn(rs->ctx, call, c->ud, &e);
    x->busy--;
    tg_ctx_stats(rs->ctx, &s1);
    r->built += s1.created - s0.created;
    if (e.code != TG_OK) {
        report(err, &e, "C rewriter", c->name, call);
        return -1;
    }
    if (!t || t == call)
        return 0;
    *out = t;
    return 1;
}
