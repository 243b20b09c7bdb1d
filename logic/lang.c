/* lang.c - compiling the faster-miniKanren dialect into goal trees, and
 * evaluating top-level forms (the public tg_env API).
 *
 * Identifiers are lexical, as in Scheme: each relation call gets a frame
 * holding its arguments and every variable its body introduces with
 * fresh, each at a slot fixed when compiling.  A fresh that can run more
 * than once for the same frame (after a goal with several answers in a
 * conjunction) copies the frame first, so earlier answers keep their
 * variables; the usual fresh at the head of a body or of a conde clause
 * writes in place.
 */
#include "lang.h"
#include "builtin.h"
#include "unify.h"

#include <gc/gc.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#define MAX_NEST 10000      /* template / goal nesting compiled recursively */

enum {
    S_UNIFY, S_DISEQ, S_SYMBOLO, S_NUMBERO, S_STRINGO, S_ABSENTO, S_FRESH,
    S_CONDE, S_CONJ, S_DISJ, S_SUCCEED, S_FAIL, S_SUCC2, S_FAIL2, S_QUOTE,
    S_QUASI, S_UNQUOTE, S_SPLICE, S_LIST, S_CONS, S_DEFREL, S_RUN, S_RUNSTAR,
    S_T, S_F, S_LAMBDA, S_TABLED, S_FACT, S_FACTS, S_LALL, S_LANY, S_PROJECT, NSYMS
};
static const char *const sym_names[NSYMS] = {
    "==", "=/=", "symbolo", "numbero", "stringo", "absento", "fresh",
    "conde", "conj", "disj", "succeed", "fail", "#s", "#u", "quote",
    "quasiquote", "unquote", "unquote-splicing", "list", "cons", "defrel",
    "run", "run*", "#t", "#f", "lambda", "tabled", "fact", "facts", "lall", "lany",
    "project"
};

typedef struct tg_env_syms {
    tg_term *s[NSYMS];
} tg_env_syms;

/* The environment proper: the shared part (logic.h) first. */
typedef struct envx {
    struct tg_env e;
    tg_env_syms syms;
} envx;

#define SYM(c, k) (((envx *)(c)->env)->syms.s[k])

void tgK_error(tg_env *env, int code, const char *fmt, ...)
{
    if (env->failed)
        return;
    env->failed = 1;
    va_list ap;
    va_start(ap, fmt);
    tgE_setv(env->err, (tg_errcode)code, NULL, 0, 0, fmt, ap);
    va_end(ap);
}

void tgK_error_at(tg_env *env, const tg_term *src)
{
    const char *file;
    int line, col;
    if (env->err && !env->err->line && src && env->where &&
        env->where(env->where_ud, src, &file, &line, &col) == 0) {
        snprintf(env->err->file, sizeof env->err->file, "%s", file);
        env->err->line = line, env->err->column = col;
    }
}

/* ---- compiling ---------------------------------------------------- */

typedef struct comp {
    tg_env *env;
    struct comp *parent;    /* a lambda's body: the enclosing scope */
    tgK_vec caps;           /* a lambda's captures: (outer slot, inner slot) pairs */
    tgK_vec lex;            /* (symbol, slot) pairs, innermost last */
    size_t *idx;            /* hash of symbol -> 1 + index of its innermost pair, or 0 */
    size_t *prev;           /* per pair: the index entry it shadows */
    size_t idxcap, prevcap;
    unsigned nslots;
    tgK_vec copies;         /* fresh goals that copy the frame: their size is known at the end */
    int failed;
} comp;

static void cerr(comp *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void cerr(comp *c, const char *fmt, ...)
{
    if (c->failed)
        return;
    c->failed = 1;
    va_list ap;
    va_start(ap, fmt);
    tgE_setv(c->env->err, TG_ERR_SYNTAX, NULL, 0, 0, fmt, ap);
    va_end(ap);
}

/* The form as text for messages (cut short). */
static const char *show(const tg_term *t, char *buf, size_t size)
{
    char *s = tg_print(t, NULL);
    snprintf(buf, size, "%s", s ? s : "?");
    if (s && strlen(s) >= size && size > 4)
        memcpy(buf + size - 4, "...", 4);
    free(s);
    return buf;
}

static void *cnew(comp *c, size_t n)
{
    void *p = GC_MALLOC(n);
    if (!p)
        cerr(c, "out of memory compiling");
    return p;
}

/* The lexical scope is a stack of (symbol, slot) pairs with an index
 * from symbol to its innermost pair, so that a fresh of thousands of
 * variables compiles in linear time.  The index is open addressing keyed
 * by symbol; an entry holds 1 + the pair's position. */
static size_t *idx_slot(comp *c, tg_term *sym)
{
    size_t i = (tg_hash(sym) * 0x9E3779B1u) & (c->idxcap - 1);
    for (;; i = (i + 1) & (c->idxcap - 1)) {
        size_t e = c->idx[i];
        if (!e || (tg_term *)c->lex.v[2 * (e - 1)] == sym)
            return &c->idx[i];
    }
}

static int lex_push(comp *c, tg_term *sym, unsigned slot);

/* The slot of variable sym.  In a lambda, a variable of the enclosing
 * scope is captured: it gets a slot of the lambda's frame, filled from
 * the closure when it is called. */
static int lookup(comp *c, tg_term *sym, unsigned *slot)
{
    size_t e = c->idxcap ? *idx_slot(c, sym) : 0;
    if (e) {
        *slot = (unsigned)c->lex.v[2 * (e - 1) + 1];
        return 1;
    }
    unsigned os;
    if (!c->parent || !lookup(c->parent, sym, &os))
        return 0;
    size_t i = 0;
    while (i < c->caps.n && c->caps.v[i] != os)
        i += 2;
    if (i < c->caps.n) {
        *slot = (unsigned)c->caps.v[i + 1];
    } else {
        *slot = c->nslots++;
        if (tgK_push2(&c->caps, os, *slot) < 0)
            return 0;
    }
    return lex_push(c, sym, *slot) == 0;
}

static int idx_rebuild(comp *c, size_t cap)
{
    size_t *idx = calloc(cap, sizeof *idx);
    if (!idx)
        return -1;
    free(c->idx);
    c->idx = idx;
    c->idxcap = cap;
    for (size_t k = 0; k < c->lex.n / 2; k++)
        *idx_slot(c, (tg_term *)c->lex.v[2 * k]) = k + 1;
    return 0;
}

/* Push a binding of sym to the next slot. */
static int lex_push(comp *c, tg_term *sym, unsigned slot)
{
    size_t k = c->lex.n / 2;
    if (tgK_push2(&c->lex, (uintptr_t)sym, slot) < 0)
        return -1;
    if (k + 1 > c->prevcap) {
        size_t cap = c->prevcap ? 2 * c->prevcap : 64;
        size_t *p = realloc(c->prev, cap * sizeof *p);
        if (!p)
            return -1;
        c->prev = p;
        c->prevcap = cap;
    }
    if (2 * (k + 1) > c->idxcap && idx_rebuild(c, c->idxcap ? 4 * c->idxcap : 64) < 0)
        return -1;
    size_t *e = idx_slot(c, sym);
    c->prev[k] = *e;
    *e = k + 1;
    return 0;
}

/* Drop the bindings above mark (a position in c->lex). */
static void lex_pop(comp *c, size_t mark)
{
    int holes = 0;
    while (c->lex.n > mark) {
        size_t k = c->lex.n / 2 - 1;
        size_t *e = idx_slot(c, (tg_term *)c->lex.v[2 * k]);
        *e = c->prev[k];
        holes |= !*e;
        c->lex.n -= 2;
    }
    /* an emptied entry may cut a probe run: index the rest again, once */
    if (holes && idx_rebuild(c, c->idxcap) < 0)
        cerr(c, "out of memory compiling");
}

static void comp_free(comp *c)
{
    free(c->idx);
    free(c->prev);
    c->idx = NULL;
    c->prev = NULL;
}

static int bind_name(comp *c, tg_term *sym)
{
    if (tg_kind_of(sym) != TG_SYMBOL) {
        char b[80];
        cerr(c, "not a variable name: %s", show(sym, b, sizeof b));
        return -1;
    }
    if (lex_push(c, sym, c->nslots++) < 0) {
        cerr(c, "out of memory compiling");
        return -1;
    }
    return 0;
}

static tgG_expr *const_expr(comp *c, tg_term *t)
{
    tgG_expr *e = cnew(c, sizeof *e);
    if (e) {
        e->op = TGG_CONST;
        e->t = t;
    }
    return e;
}

/* The elements of list t in a fresh array (*n set), *tail its tail. */
static tg_term **elements(comp *c, tg_term *t, size_t *n, tg_term **tail)
{
    *n = tg_length(t);
    tg_term **v = cnew(c, (*n + 1) * sizeof *v);
    if (v) {
        tg_elements(t, v, *n);
        *tail = tg_tail(t);
    }
    return v;
}

static tgG_expr *compile_expr(comp *c, tg_term *t, int depth);

static int is_form(comp *c, tg_term *t, int sym, size_t nargs)
{
    return tgT_ispair(t) && tg_car(t) == SYM(c, sym) && tg_length(t) == nargs + 1 &&
           tg_tail(t) == tg_nil();
}

static tgG_expr *list_expr(comp *c, size_t n, tgG_expr **e, tgG_expr *tail)
{
    tgG_expr *x = cnew(c, sizeof *x);
    if (x) {
        x->op = TGG_LIST;
        x->n = (unsigned)n;
        x->e = e;
        x->tail = tail;
    }
    return x;
}

/* A quasiquoted template at quasiquote nesting `level`. */
static tgG_expr *template(comp *c, tg_term *t, int level, int depth)
{
    if (depth > MAX_NEST) {
        cerr(c, "quasiquote template nested more than %d levels", MAX_NEST);
        return NULL;
    }
    if (!tgT_ispair(t))
        return const_expr(c, t);
    if (is_form(c, t, S_UNQUOTE, 1) && level == 1)
        return compile_expr(c, tg_nth(t, 1), depth + 1);
    if (tg_car(t) == SYM(c, S_SPLICE) && level == 1) {
        cerr(c, "unquote-splicing (,@) is not supported in templates");
        return NULL;
    }
    int sub = is_form(c, t, S_QUASI, 1) ? 1 : is_form(c, t, S_UNQUOTE, 1) ? -1 : 0;
    size_t n;
    tg_term *tail, **v = elements(c, t, &n, &tail);
    if (!v)
        return NULL;
    tgG_expr *te = NULL;
    /* (a . ,d) reads as (a unquote d) */
    if (level == 1 && n >= 3 && v[n - 2] == SYM(c, S_UNQUOTE) && tail == tg_nil()) {
        if (!(te = compile_expr(c, v[n - 1], depth + 1)))
            return NULL;
        n -= 2;
    }
    tgG_expr **e = cnew(c, (n + 1) * sizeof *e);
    if (!e)
        return NULL;
    int all_const = te == NULL;
    for (size_t i = 0; i < n; i++) {
        int lv = (i == 1) ? level + sub : level;
        if (!(e[i] = template(c, v[i], lv, depth + 1)))
            return NULL;
        all_const &= e[i]->op == TGG_CONST;
    }
    if (!te && tail != tg_nil()) {
        if (!(te = template(c, tail, level, depth + 1)))
            return NULL;
        all_const &= te->op == TGG_CONST;
    }
    return all_const ? const_expr(c, t) : list_expr(c, n, e, te);
}

static tgG_expr *lambda_expr(comp *c, tg_term *t, int depth);

static tgG_expr *compile_expr(comp *c, tg_term *t, int depth)
{
    char b[120];
    if (depth > MAX_NEST) {
        cerr(c, "term expression nested more than %d levels", MAX_NEST);
        return NULL;
    }
    switch (tg_kind_of(t)) {
    case TG_SYMBOL: {
        unsigned slot;
        if (lookup(c, t, &slot)) {
            tgG_expr *e = cnew(c, sizeof *e);
            if (e) {
                e->op = TGG_SLOT;
                e->slot = slot;
            }
            return e;
        }
        /* #t, #f and relation names (relations are values) stand for themselves */
        if (t == SYM(c, S_T) || t == SYM(c, S_F) || tgG_rel_find(c->env, t))
            return const_expr(c, t);
        cerr(c, "unbound variable %s", show(t, b, sizeof b));
        return NULL;
    }
    case TG_PAIR:
        break;
    default:
        return const_expr(c, t);
    }
    tg_term *h = tg_car(t);
    if (is_form(c, t, S_QUOTE, 1))
        return const_expr(c, tg_nth(t, 1));
    if (is_form(c, t, S_QUASI, 1))
        return template(c, tg_nth(t, 1), 1, depth + 1);
    if (h == SYM(c, S_LAMBDA))
        return lambda_expr(c, t, depth);
    if (h == SYM(c, S_LIST) || is_form(c, t, S_CONS, 2)) {
        size_t n;
        tg_term *tail, **v = elements(c, t, &n, &tail);
        if (!v)
            return NULL;
        if (tail != tg_nil()) {
            cerr(c, "improper argument list in %s", show(t, b, sizeof b));
            return NULL;
        }
        tgG_expr **e = cnew(c, n * sizeof *e);
        if (!e)
            return NULL;
        for (size_t i = 1; i < n; i++)
            if (!(e[i - 1] = compile_expr(c, v[i], depth + 1)))
                return NULL;
        if (h == SYM(c, S_LIST))
            return list_expr(c, n - 1, e, NULL);
        return list_expr(c, 1, e, e[1]);
    }
    cerr(c, "not a term expression: %s (quote data with ' or build it with list, cons or `)",
         show(t, b, sizeof b));
    return NULL;
}

static tgG_goal *new_goal(comp *c, int op)
{
    tgG_goal *g = cnew(c, sizeof *g);
    if (g)
        g->op = op;
    return g;
}

/* Does g give at most one answer, and without any fresh that could
 * run more than once?  Then what follows it runs once per frame. */
static int det(const tgG_goal *g)
{
    switch (g->op) {
    case TGG_CONJ: case TGG_FRESH:
        for (unsigned i = 0; i < (g->op == TGG_FRESH ? 1u : g->n); i++)
            if (!det(g->g[i]))
                return 0;
        return 1;
    case TGG_CONDE:
        return g->n == 1 && det(g->g[0]);
    case TGG_CALL:
        return 0;
    default:
        return 1;
    }
}

static tgG_goal *compile_goal(comp *c, tg_term *t, int once, int depth);

/* A conjunction of the goals of list gs (at least one). */
static tgG_goal *compile_body(comp *c, tg_term *gs, int once, int depth, const char *what)
{
    size_t n;
    tg_term *tail, **v = elements(c, gs, &n, &tail);
    if (!v)
        return NULL;
    if (n == 0 || tail != tg_nil()) {
        cerr(c, "%s needs a proper list of at least one goal", what);
        return NULL;
    }
    if (n == 1)
        return compile_goal(c, v[0], once, depth + 1);
    tgG_goal *g = new_goal(c, TGG_CONJ);
    tgG_goal **gv = cnew(c, n * sizeof *gv);
    if (!g || !gv)
        return NULL;
    g->n = (unsigned)n;
    g->g = gv;
    for (size_t i = 0; i < n; i++) {
        if (!(gv[i] = compile_goal(c, v[i], once, depth + 1)))
            return NULL;
        once = once && det(gv[i]);
    }
    return g;
}

static tgG_goal *fresh_goal(comp *c, tg_term *vars, tg_term *body, int once, int depth)
{
    size_t n, mark = c->lex.n;
    tg_term *tail, **v = elements(c, vars, &n, &tail);
    tgG_goal *g = new_goal(c, TGG_FRESH);
    if (!v || !g)
        return NULL;
    if (tail != tg_nil()) {
        cerr(c, "fresh needs a list of variable names");
        return NULL;
    }
    g->n = (unsigned)n;
    g->slots = cnew(c, (n + 1) * sizeof *g->slots);
    g->names = cnew(c, (n + 1) * sizeof *g->names);
    g->g = cnew(c, sizeof *g->g);
    if (!g->slots || !g->names || !g->g)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        g->slots[i] = c->nslots;
        g->names[i] = v[i];
        if (bind_name(c, v[i]) < 0)
            return NULL;
    }
    g->copy = !once;
    if (g->copy && tgK_vec_reserve(&c->copies, 1) == 0)
        c->copies.v[c->copies.n++] = (uintptr_t)g;
    if (!(g->g[0] = compile_body(c, body, 1, depth, "fresh")))
        return NULL;
    lex_pop(c, mark);
    return g;
}


static tgG_goal *two_args(comp *c, int op, tg_term *t, size_t want, int depth)
{
    char b[120];
    size_t n = tg_length(t) - 1;
    if (n != want || tg_tail(t) != tg_nil()) {
        cerr(c, "%s takes %zu argument%s: %s", tg_symbol_name(tg_car(t), NULL), want,
             want == 1 ? "" : "s", show(t, b, sizeof b));
        return NULL;
    }
    tgG_goal *g = new_goal(c, op);
    if (!g || !(g->a = compile_expr(c, tg_nth(t, 1), depth + 1)))
        return NULL;
    if (want == 2 && !(g->b = compile_expr(c, tg_nth(t, 2), depth + 1)))
        return NULL;
    return g;
}

/* (op . args): lall and lany are conj and disj under other names. */
static tgG_goal *compile_goal_as(comp *c, int op, tg_term *args, int once, int depth)
{
    tg_term *t = tg_cons(c->env->ctx, SYM(c, op), args);
    if (!t) {
        cerr(c, "out of memory compiling");
        return NULL;
    }
    return compile_goal(c, t, once, depth + 1);
}

/* (project (x ...) goal ...): in Scheme the goals see the values of the
 * variables; here every goal and C relation walks its arguments anyway,
 * so project is the conjunction of its goals, once the names are
 * checked. */
static tgG_goal *project_goal(comp *c, tg_term *t, int once, int depth)
{
    char b[120];
    tg_term *args = tg_cdr(c->env->ctx, t);
    if (!tgT_ispair(args) || !tgT_ispair(tg_cdr(c->env->ctx, args))) {
        cerr(c, "project needs variables and goals: %s", show(t, b, sizeof b));
        return NULL;
    }
    size_t n;
    tg_term *tail, **v = elements(c, tg_car(args), &n, &tail);
    if (!v)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        unsigned slot;
        if (!lookup(c, v[i], &slot)) {
            cerr(c, "project: unbound variable %s", show(v[i], b, sizeof b));
            return NULL;
        }
    }
    return compile_goal_as(c, S_CONJ, tg_cdr(c->env->ctx, args), once, depth);
}

static tgG_goal *compile_goal(comp *c, tg_term *t, int once, int depth)
{
    char b[120];
    if (c->failed)
        return NULL;
    if (depth > MAX_NEST) {
        cerr(c, "goal nested more than %d levels", MAX_NEST);
        return NULL;
    }
    if (t == SYM(c, S_SUCCEED) || t == SYM(c, S_SUCC2))
        return new_goal(c, TGG_SUCCEED);
    if (t == SYM(c, S_FAIL) || t == SYM(c, S_FAIL2))
        return new_goal(c, TGG_FAIL);
    tg_term *h = tgT_ispair(t) ? tg_car(t) : NULL;
    if (!h || tg_kind_of(h) != TG_SYMBOL) {
        cerr(c, "not a goal: %s", show(t, b, sizeof b));
        return NULL;
    }
    tg_term *args = tg_cdr(c->env->ctx, t);
    if (h == SYM(c, S_UNIFY))
        return two_args(c, TGG_UNIFY, t, 2, depth);
    if (h == SYM(c, S_DISEQ))
        return two_args(c, TGG_DISEQ, t, 2, depth);
    if (h == SYM(c, S_ABSENTO))
        return two_args(c, TGG_ABSENTO, t, 2, depth);
    if (h == SYM(c, S_SYMBOLO) || h == SYM(c, S_NUMBERO) || h == SYM(c, S_STRINGO)) {
        tgG_goal *g = two_args(c, TGG_TYPE, t, 1, depth);
        if (g)
            g->type = h == SYM(c, S_SYMBOLO) ? TGC_SYM : h == SYM(c, S_NUMBERO) ? TGC_NUM : TGC_STR;
        return g;
    }
    if (h == SYM(c, S_FRESH)) {
        if (!tgT_ispair(args)) {
            cerr(c, "fresh needs variables and goals: %s", show(t, b, sizeof b));
            return NULL;
        }
        return fresh_goal(c, tg_car(args), tg_cdr(c->env->ctx, args), once, depth);
    }
    if (h == SYM(c, S_CONJ)) {
        if (args == tg_nil())
            return new_goal(c, TGG_SUCCEED);
        return fresh_goal(c, tg_nil(), args, once, depth);     /* (fresh () g ...) */
    }
    if (h == SYM(c, S_CONDE) || h == SYM(c, S_DISJ)) {
        int disj = h == SYM(c, S_DISJ);
        size_t n;
        tg_term *tail, **v = elements(c, args, &n, &tail);
        if (!v)
            return NULL;
        if (tail != tg_nil()) {
            cerr(c, "improper %s: %s", disj ? "disj" : "conde", show(t, b, sizeof b));
            return NULL;
        }
        if (n == 0) {
            if (disj)
                return new_goal(c, TGG_FAIL);
            cerr(c, "conde needs at least one clause");
            return NULL;
        }
        tgG_goal *g = new_goal(c, TGG_CONDE);
        if (!g || !(g->g = cnew(c, n * sizeof *g->g)))
            return NULL;
        g->n = (unsigned)n;
        for (size_t i = 0; i < n; i++) {
            g->g[i] = disj ? compile_goal(c, v[i], once, depth + 1)
                           : compile_body(c, v[i], once, depth + 1, "a conde clause");
            if (!g->g[i])
                return NULL;
        }
        return g;
    }
    if (h == SYM(c, S_LALL))
        return compile_goal_as(c, S_CONJ, args, once, depth);
    if (h == SYM(c, S_LANY))
        return compile_goal_as(c, S_DISJ, args, once, depth);
    if (h == SYM(c, S_PROJECT))
        return project_goal(c, t, once, depth);
    /* a relation call; a variable in the head calls the relation it holds */
    size_t n;
    tg_term *tail, **v = elements(c, args, &n, &tail);
    tgG_goal *g = new_goal(c, TGG_CALL);
    if (!v || !g)
        return NULL;
    g->src = t;
    if (tail != tg_nil()) {
        cerr(c, "improper call: %s", show(t, b, sizeof b));
        return NULL;
    }
    unsigned slot;
    if (lookup(c, h, &slot)) {
        if (!(g->a = compile_expr(c, h, depth + 1)))
            return NULL;
    } else if (!(g->rel = tgG_rel_get(c->env, h))) {
        cerr(c, "out of memory compiling");
        return NULL;
    }
    if (!(g->args = cnew(c, (n + 1) * sizeof *g->args)))
        return NULL;
    g->n = (unsigned)n;
    for (size_t i = 0; i < n; i++)
        if (!(g->args[i] = compile_expr(c, v[i], depth + 1)))
            return NULL;
    return g;
}

static void comp_finish(comp *c)
{
    for (size_t i = 0; i < c->copies.n; i++)
        ((tgG_goal *)c->copies.v[i])->nslots = c->nslots;
}

/* ---- relations ---------------------------------------------------- */

/* Compile the body of a relation with parameters params (a list of
 * names) and goals (a non-empty list) into r; c is a fresh compiler. */
static int compile_rel(comp *c, tgG_rel *r, tg_term *params, tg_term *goals)
{
    char b[120];
    size_t n;
    tg_term *tail, **v = elements(c, params, &n, &tail);
    if (!v)
        return -1;
    if (tail != tg_nil()) {
        cerr(c, "the parameters must be a proper list: %s", show(params, b, sizeof b));
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        if (bind_name(c, v[i]) < 0)
            return -1;
    tgG_goal *body;
    if (tg_length(goals) == 1 && tg_tail(goals) == tg_nil())
        body = compile_goal(c, tg_car(goals), 1, 0);
    else    /* several goals: (fresh () goal ...) */
        body = fresh_goal(c, tg_nil(), goals, 1, 0);
    if (!body)
        return -1;
    comp_finish(c);
    unsigned *cap = cnew(c, (c->caps.n / 2 + 1) * sizeof *cap);
    if (!cap)
        return -1;
    for (size_t i = 0; i < c->caps.n / 2; i++)
        cap[i] = (unsigned)c->caps.v[2 * i + 1];
    r->arity = (unsigned)n;
    r->nslots = c->nslots;
    r->ncap = (unsigned)(c->caps.n / 2);
    r->cap = cap;
    r->cfn = NULL;
    r->cud = NULL;
    r->body = body;
    return 0;
}

/* (defrel (name arg ...) goal ...), and (tabled (name arg ...) goal ...)
 * which also tables it. */
static int eval_defrel(comp *c, tg_term *form, int tabled)
{
    char b[120];
    const char *what = tabled ? "tabled" : "defrel";
    tg_term *args = tg_cdr(c->env->ctx, form);
    if (!tgT_ispair(args) || !tgT_ispair(tg_car(args)) || tg_tail(tg_car(args)) != tg_nil() ||
        !tgT_ispair(tg_cdr(c->env->ctx, args))) {
        cerr(c, "%s needs (%s (name arg ...) goal ...): %s", what, what, show(form, b, sizeof b));
        return -1;
    }
    tg_term *head = tg_car(args), *name = tg_car(head);
    if (tg_kind_of(name) != TG_SYMBOL) {
        cerr(c, "a relation name must be a symbol: %s", show(name, b, sizeof b));
        return -1;
    }
    tgG_rel *r = tgG_rel_get(c->env, name), tmp;
    if (!r) {
        cerr(c, "out of memory");
        return -1;
    }
    /* Redefining a relation is how programs are developed, but a fact
     * table holds data that no definition gives back: replacing it would
     * drop its tuples without a word (fact refuses the other way round). */
    if (r->cfn == tgF_fn) {
        cerr(c, "%s: %s is a fact table, not a relation to redefine", what,
             show(name, b, sizeof b));
        return -1;
    }
    /* compile into a copy, so that a bad definition leaves the old one */
    tmp = *r;
    if (compile_rel(c, &tmp, tg_cdr(c->env->ctx, head), tg_cdr(c->env->ctx, args)) < 0)
        return -1;
    tmp.tabled = tabled;
    *r = tmp;
    return 0;
}

/* (tabled name ...): table relations already defined. */
static int eval_table_names(comp *c, tg_term *form)
{
    char b[120];
    for (tg_term *l = tg_cdr(c->env->ctx, form); tgT_ispair(l); l = tg_cdr(c->env->ctx, l)) {
        tgG_rel *r = tgG_rel_find(c->env, tg_car(l));
        if (!r || !r->body) {
            cerr(c, "tabled: no relation defined with defrel named %s", show(tg_car(l), b, sizeof b));
            return -1;
        }
        r->tabled = 1;
    }
    return 0;
}

/* (lambda (arg ...) goal ...): an anonymous relation.  Its value is its
 * (unreadable) name, or (name captured-value ...) when its body uses
 * variables of the enclosing scope. */
static tgG_expr *lambda_expr(comp *c, tg_term *t, int depth)
{
    char b[120];
    tg_env *env = c->env;
    tg_term *args = tg_cdr(env->ctx, t);
    if (!tgT_ispair(args) || !tgT_ispair(tg_cdr(env->ctx, args)) || depth > MAX_NEST) {
        cerr(c, "lambda needs (lambda (arg ...) goal ...): %s", show(t, b, sizeof b));
        return NULL;
    }
    char nm[48];
    int len = snprintf(nm, sizeof nm, "#<lambda %lu>", ++env->nlambda);
    tg_term *name = tg_symbol(env->ctx, nm, (size_t)len);
    tgG_rel *r = name ? tgG_rel_get(env, name) : NULL;
    if (!r) {
        cerr(c, "out of memory compiling");
        return NULL;
    }
    comp in;
    memset(&in, 0, sizeof in);
    in.env = env;
    in.parent = c;
    int rc = compile_rel(&in, r, tg_car(args), tg_cdr(env->ctx, args));
    comp_free(&in);
    if (rc < 0) {
        c->failed = 1;
        return NULL;
    }
    if (!r->ncap)
        return const_expr(c, name);
    tgG_expr **e = cnew(c, (r->ncap + 1) * sizeof *e);
    if (!e || !(e[0] = const_expr(c, name)))
        return NULL;
    for (unsigned i = 0; i < r->ncap; i++) {
        tgG_expr *x = cnew(c, sizeof *x);
        if (!x)
            return NULL;
        x->op = TGG_SLOT;
        x->slot = (unsigned)in.caps.v[2 * i];
        e[i + 1] = x;
    }
    return list_expr(c, r->ncap + 1, e, NULL);
}

/* (fact rel datum ...) adds one tuple; (facts rel (datum ...) ...) several.
 * The data are taken as written (not evaluated). */
static int eval_fact(comp *c, tg_term *form, int many)
{
    char b[120];
    tg_env *env = c->env;
    tg_term *args = tg_cdr(env->ctx, form);
    const char *what = many ? "facts" : "fact";
    if (!tgT_ispair(args) || tg_kind_of(tg_car(args)) != TG_SYMBOL || tg_tail(args) != tg_nil() ||
        (many && tg_cdr(env->ctx, args) == tg_nil())) {
        cerr(c, "%s needs a relation name and data: %s", what, show(form, b, sizeof b));
        return -1;
    }
    tg_term *name = tg_car(args), *rest = tg_cdr(env->ctx, args);
    size_t nt = many ? tg_length(rest) : 1;
    tg_term **tuples = cnew(c, (nt + 1) * sizeof *tuples);
    if (!tuples)
        return -1;
    if (many)
        tg_elements(rest, tuples, nt);
    else
        tuples[0] = rest;
    tgG_rel *r = tgG_rel_get(env, name);
    if (!r)
        return cerr(c, "out of memory"), -1;
    if (r->body || (r->cfn && r->cfn != tgF_fn)) {
        cerr(c, "%s: %s is a relation defined otherwise, not a fact table", what, show(name, b, sizeof b));
        return -1;
    }
    unsigned arity = r->cfn ? r->arity : (unsigned)tg_length(tuples[0]);
    for (size_t i = 0; i < nt; i++)
        if (!tgT_ispair(tuples[i]) && tuples[i] != tg_nil()) {
            cerr(c, "%s: a tuple must be a list: %s", what, show(tuples[i], b, sizeof b));
            return -1;
        } else if (tg_length(tuples[i]) != arity || tg_tail(tuples[i]) != tg_nil()) {
            char b2[120];
            cerr(c, "%s: %s takes %u argument%s: %s", what, show(name, b, sizeof b), arity,
                 arity == 1 ? "" : "s", show(tuples[i], b2, sizeof b2));
            return -1;
        }
    if (!r->cfn) {
        void *f = tgF_new();
        if (!f)
            return cerr(c, "out of memory"), -1;
        r->cfn = tgF_fn;
        r->cud = f;
        r->arity = arity;
    }
    for (size_t i = 0; i < nt; i++)
        if (tgF_add(r->cud, tuples[i]) < 0)
            return cerr(c, "out of memory"), -1;
    return 0;
}

typedef struct run_form {
    long n;
    tgG_goal *g;
    unsigned nslots;
} run_form;

static int compile_run(comp *c, tg_term *form, run_form *rf)
{
    char b[120];
    tg_ctx *ctx = c->env->ctx;
    int star = tg_car(form) == SYM(c, S_RUNSTAR);
    tg_term *rest = tg_cdr(ctx, form);
    rf->n = -1;
    if (!star) {
        if (!tgT_ispair(rest)) {
            cerr(c, "run needs a count, query variables and goals");
            return -1;
        }
        tg_term *k = tg_car(rest);
        int64_t v;
        if (k == SYM(c, S_F)) {
            rf->n = -1;
        } else if (tg_kind_of(k) == TG_INT && tg_int_get(k, &v) == 0 && v >= 0) {
            rf->n = v > (int64_t)(LONG_MAX / 2) ? LONG_MAX / 2 : (long)v;
        } else {
            cerr(c, "run needs a non-negative integer count, not %s", show(k, b, sizeof b));
            return -1;
        }
        rest = tg_cdr(ctx, rest);
    }
    if (!tgT_ispair(rest) || !tgT_ispair(tg_cdr(ctx, rest))) {
        cerr(c, "%s needs query variables and at least one goal: %s", star ? "run*" : "run",
             show(form, b, sizeof b));
        return -1;
    }
    tg_term *qs = tg_car(rest), *goals = tg_cdr(ctx, rest);
    size_t nq = tg_length(qs);
    if (nq == 0 || tg_tail(qs) != tg_nil()) {
        cerr(c, "the query variables of run must be a non-empty list: %s", show(qs, b, sizeof b));
        return -1;
    }
    tgG_goal *top = new_goal(c, TGG_FRESH), *conj = new_goal(c, TGG_CONJ),
             *reify = new_goal(c, TGG_REIFY);
    tgG_goal **two = cnew(c, 2 * sizeof *two);
    if (!top || !conj || !reify || !two)
        return -1;
    /* (fresh (x) ... reify): x is slot 0 */
    top->n = 1;
    top->slots = cnew(c, sizeof *top->slots);
    top->names = cnew(c, sizeof *top->names);
    top->g = cnew(c, sizeof *top->g);
    if (!top->slots || !top->names || !top->g)
        return -1;
    top->slots[0] = c->nslots++;
    top->g[0] = conj;
    conj->n = 2;
    conj->g = two;
    two[1] = reify;
    if (nq == 1) {
        top->names[0] = tg_car(qs);
        if (tg_kind_of(tg_car(qs)) != TG_SYMBOL || lex_push(c, tg_car(qs), 0) < 0) {
            cerr(c, "not a variable name: %s", show(tg_car(qs), b, sizeof b));
            return -1;
        }
        /* (fresh (q) g0 g ... reify) */
        tgG_goal *body = compile_body(c, goals, 1, 1, "run");
        if (!body)
            return -1;
        if (body->op == TGG_CONJ) {
            tgG_goal **gv = cnew(c, (body->n + 1) * sizeof *gv);
            if (!gv)
                return -1;
            memcpy(gv, body->g, body->n * sizeof *gv);
            gv[body->n] = reify;
            conj->g = gv;
            conj->n = body->n + 1;
        } else {
            two[0] = body;
        }
    } else {
        /* (run n (x) (fresh (q ...) g ... (== (list q ...) x))) */
        top->names[0] = tg_symbol_cstr(ctx, "q");
        tg_term *eq[3], *lst;
        eq[0] = SYM(c, S_UNIFY);
        if (!(lst = tg_cons(ctx, SYM(c, S_LIST), qs)))
            return -1;
        eq[1] = lst;
        eq[2] = tg_symbol_cstr(ctx, " q");     /* not a name a program can write */
        if (lex_push(c, eq[2], 0) < 0)
            return -1;
        tg_term *eqt = tg_list(ctx, 3, eq, NULL);
        tg_term *body = eqt ? tg_list(ctx, 1, &eqt, NULL) : NULL;
        size_t ng;
        tg_term *gtail, **gv = elements(c, goals, &ng, &gtail);
        if (!body || !gv)
            return -1;
        body = tg_list(ctx, ng, gv, body);
        if (!body || !(two[0] = fresh_goal(c, qs, body, 1, 1)))
            return -1;
    }
    comp_finish(c);
    rf->g = top;
    rf->nslots = c->nslots;
    return 0;
}

/* ---- the public API ----------------------------------------------- */

int tg_eval(tg_env *env, tg_term *form, tg_answer_fn fn, void *ud, tg_term **value, tg_error *err);

static int load_prelude(tg_env *env, tg_error *err)
{
    tg_reader *r = tg_reader_new(env->ctx, tgL_prelude, strlen(tgL_prelude), "<prelude>", err);
    if (!r)
        return -1;
    int rc;
    tg_term *t;
    while ((rc = tg_reader_next(r, &t, err)) > 0)
        if ((rc = tg_eval(env, t, NULL, NULL, NULL, err)) < 0)
            break;
    tg_reader_free(r);
    return rc < 0 ? -1 : 0;
}

tg_env *tg_env_new(tg_ctx *ctx, tg_error *err)
{
    if (!ctx)
        return (tgE_arg(err, "tg_env_new: NULL context"), NULL);
    envx *x = GC_MALLOC_UNCOLLECTABLE(sizeof *x);
    if (!x) {
        tgE_nomem(err);
        return NULL;
    }
    memset(x, 0, sizeof *x);
    x->e.ctx = ctx;
    x->e.occurs_check = 1;
    for (int i = 0; i < NSYMS; i++)
        if (!(x->syms.s[i] = tg_symbol_cstr(ctx, sym_names[i]))) {
            GC_FREE(x);
            tgE_nomem(err);
            return NULL;
        }
    x->e.sym_t = x->syms.s[S_T];
    x->e.sym_f = x->syms.s[S_F];
    if (tgN_register(&x->e, err) < 0 || load_prelude(&x->e, err) < 0) {
        GC_FREE(x);
        return NULL;
    }
    x->e.logging = 1;
    return &x->e;
}

void tg_env_free(tg_env *env)
{
    if (env)
        GC_FREE(env);
}

int tgK_defrel_lib(tg_env *env, const char *name, unsigned arity, tg_relation_fn fn, void *ud,
                   tg_error *err)
{
    if (!env || !name || !fn) {
        tgE_arg(err, "tg_defrel_c needs an environment, a name and a function");
        return -1;
    }
    tg_term *sym = tg_symbol_cstr(env->ctx, name);
    tgG_rel *r = sym ? tgG_rel_get(env, sym) : NULL;
    if (!r) {
        tgE_nomem(err);
        return -1;
    }
    memset(r, 0, sizeof *r);
    r->name = sym;
    r->arity = arity;
    r->cfn = fn;
    r->cud = ud;
    return 0;
}

int tg_defrel_c(tg_env *env, const char *name, unsigned arity, tg_relation_fn fn,
                void *ud, tg_error *err)
{
    int rc = tgK_defrel_lib(env, name, arity, fn, ud, err);
    if (rc == 0)
        env->cdefs++;
    return rc;
}

tg_term *tg_env_var(tg_env *env, const char *name)
{
    if (!env)
        return NULL;
    tg_term *sym = tg_symbol_cstr(env->ctx, name ? name : "_");
    return sym ? tgT_lvar_new(env->ctx, sym, 0) : NULL;
}

void tg_env_set_occurs_check(tg_env *env, int on)
{
    if (!env)
        return;
    env->occurs_check = on != 0;
}

void tg_env_interrupt(tg_env *env)
{
    if (env)
        env->interrupt = 1;
}

typedef struct emit_ctx {
    tg_answer_fn fn;
    void *ud;
} emit_ctx;

static int emit_answer(void *ud, tg_term *ans)
{
    emit_ctx *e = ud;
    return e->fn ? e->fn(e->ud, ans) : 0;
}

/* Note a definition evaluated (logic.h: defs). */
static int log_def(tg_env *env, tg_term *form)
{
    if (env->ndefs == env->capdefs) {
        size_t cap = env->capdefs ? 2 * env->capdefs : 32;
        tg_term **d = GC_MALLOC(cap * sizeof *d);
        if (!d)
            return -1;
        if (env->ndefs)
            memcpy(d, env->defs, env->ndefs * sizeof *d);
        env->defs = d, env->capdefs = cap;
    }
    env->defs[env->ndefs++] = form;
    return 0;
}

int tg_eval(tg_env *env, tg_term *form, tg_answer_fn fn, void *ud, tg_term **value, tg_error *err)
{
    /* a NULL form is a term that could not be made (out of memory, say) */
    if (!env || !form) {
        if (value)
            *value = NULL;
        return tgE_arg(err, "tg_eval: NULL argument"), -1;
    }
    comp c;
    memset(&c, 0, sizeof c);
    c.env = env;
    env->err = err;
    env->failed = 0;
    env->oom = 0;
    if (value)
        *value = NULL;
    tg_term *h = tgT_ispair(form) ? tg_car(form) : NULL;
    envx *x = (envx *)env;
    if (h && (h == x->syms.s[S_DEFREL] || h == x->syms.s[S_TABLED] ||
              h == x->syms.s[S_FACT] || h == x->syms.s[S_FACTS])) {
        int rc;
        if (h == x->syms.s[S_FACT] || h == x->syms.s[S_FACTS])
            rc = eval_fact(&c, form, h == x->syms.s[S_FACTS]);
        else if (h == x->syms.s[S_TABLED] && tgT_ispair(tg_cdr(env->ctx, form)) &&
                 tg_kind_of(tg_nth(form, 1)) == TG_SYMBOL)
            rc = eval_table_names(&c, form);
        else
            rc = eval_defrel(&c, form, h == x->syms.s[S_TABLED]);
        comp_free(&c);
        if (rc >= 0 && env->logging && log_def(env, form) < 0)
            return tgE_nomem(err), -1;
        return rc < 0 ? -1 : TG_EVAL_DEFINE;
    }
    if (h && (h == x->syms.s[S_RUN] || h == x->syms.s[S_RUNSTAR])) {
        run_form rf;
        int rc = compile_run(&c, form, &rf);
        comp_free(&c);
        if (rc < 0) {
            if (!c.failed)
                tgE_nomem(err);
            return -1;
        }
        emit_ctx e = {fn, ud};
        env->err = err;
        long r = tgG_run(env, rf.g, rf.nslots, rf.n, emit_answer, &e);
        return r < 0 ? -1 : TG_EVAL_RUN;
    }
    if (value)
        *value = form;
    return TG_EVAL_VALUE;
}

struct tg_query {
    tg_env *env;
    run_form rf;
};

tg_query *tg_query_new(tg_env *env, tg_term *form, tg_error *err)
{
    envx *x = (envx *)env;
    tg_term *h = tgT_ispair(form) ? tg_car(form) : NULL;
    if (!h || (h != x->syms.s[S_RUN] && h != x->syms.s[S_RUNSTAR])) {
        tgE_arg(err, "a query must be a (run ...) or (run* ...) form");
        return NULL;
    }
    comp c;
    memset(&c, 0, sizeof c);
    c.env = env;
    env->err = err;
    tg_query *q = GC_MALLOC_UNCOLLECTABLE(sizeof *q);
    if (!q) {
        tgE_nomem(err);
        return NULL;
    }
    int rc = compile_run(&c, form, &q->rf);
    comp_free(&c);
    if (rc < 0) {
        if (!c.failed)
            tgE_nomem(err);
        GC_FREE(q);
        return NULL;
    }
    q->env = env;
    return q;
}

long tg_query_run(tg_query *q, tg_answer_fn fn, void *ud, tg_error *err)
{
    if (!q)
        return (tgE_arg(err, "tg_query_run: NULL query"), -1);
    emit_ctx e = {fn, ud};
    q->env->err = err;
    return tgG_run(q->env, q->rf.g, q->rf.nslots, q->rf.n, emit_answer, &e);
}

void tg_query_free(tg_query *q)
{
    if (q)
        GC_FREE(q);
}

typedef struct collect {
    tgK_vec v;
    int oom;
} collect;

static int collect_answer(void *ud, tg_term *ans)
{
    collect *c = ud;
    if (tgK_vec_reserve(&c->v, 1) < 0)
        return c->oom = 1;
    c->v.v[c->v.n++] = (uintptr_t)ans;
    return 0;
}

tg_term *tg_run(tg_env *env, tg_term *form, tg_error *err)
{
    collect c = {{0}, 0};
    int r = tg_eval(env, form, collect_answer, &c, NULL, err);
    if (r < 0)
        return NULL;
    if (r != TG_EVAL_RUN) {
        tgE_arg(err, "tg_run needs a (run ...) or (run* ...) form");
        return NULL;
    }
    if (c.oom) {
        tgE_nomem(err);
        return NULL;
    }
    tg_term *l = tg_list(env->ctx, c.v.n, (tg_term *const *)c.v.v, NULL);
    if (!l)
        tgE_nomem(err);
    return l;
}

/* ---- calls from C (relations used as rewrites) -------------------- */

struct tgL_call {
    tg_env *env;
    tgG_rel *rel;
    unsigned n, extra;
    tgG_goal *g;            /* (conj (rel slot0 ... slotn-1) raw-reify of n + extra slots) */
    tg_term *var_name;
};

tgL_call *tgL_call_new(tg_env *env, tgG_rel *rel, unsigned n, unsigned extra)
{
    tgL_call *c = GC_MALLOC(sizeof *c);
    tgG_goal *conj = GC_MALLOC(sizeof *conj), *call = GC_MALLOC(sizeof *call),
             *reify = GC_MALLOC(sizeof *reify);
    tgG_goal **two = GC_MALLOC(2 * sizeof *two);
    tgG_expr **args = GC_MALLOC((n ? n : 1) * sizeof *args);
    if (!c || !conj || !call || !reify || !two || !args)
        return NULL;
    for (unsigned i = 0; i < n; i++) {
        if (!(args[i] = GC_MALLOC(sizeof *args[i])))
            return NULL;
        args[i]->op = TGG_SLOT;
        args[i]->slot = i;
    }
    call->op = TGG_CALL, call->rel = rel, call->n = n, call->args = args;
    reify->op = TGG_REIFY, reify->type = 1, reify->n = n + extra;
    two[0] = call, two[1] = reify;
    conj->op = TGG_CONJ, conj->n = 2, conj->g = two;
    c->env = env, c->rel = rel, c->n = n, c->extra = extra, c->g = conj;
    if (!(c->var_name = tg_symbol_cstr(env->ctx, "_")))
        return NULL;
    return c;
}

static int first_answer(void *ud, tg_term *ans)
{
    *(tg_term **)ud = ans;
    return 1;
}

int tgL_call_first(tgL_call *c, tg_term *const *args, tg_term **out, tg_error *err)
{
    tg_env *env = c->env;
    unsigned n = c->n + c->extra;
    tg_term **fr = GC_MALLOC((n ? n : 1) * sizeof *fr);
    if (!fr) {
        tgE_nomem(err);
        return -1;
    }
    for (unsigned i = 0; i < n; i++)
        if (!(fr[i] = args[i] ? args[i] : tgT_lvar_new(env->ctx, c->var_name, 0))) {
            tgE_nomem(err);
            return -1;
        }
    tg_term *ans = NULL;
    env->err = err;
    long k = tgG_run_frame(env, c->g, fr, 1, first_answer, &ans);
    if (k < 0)
        return -1;
    if (!k)
        return 0;
    tg_elements(ans, out, n);
    return 1;
}

tg_term *tgL_name_vars(tg_env *env, tg_term *t)
{
    tgU_names *nm = tgU_names_new();
    if (!nm || tgU_names_add(env, nm, t) < 0)
        return NULL;
    return tgU_walk_star(env, t, TGU_NOWALK, nm);
}
