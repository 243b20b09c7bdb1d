/* compile.c - rules into machine code: a left side into a match program,
 * conditions and a right side into a body program (see rset.h), with the
 * checks that make a bad rule an error when it is loaded rather than a
 * surprise when it fires.
 */
#include "compile.h"
#include "cext.h"
#include "arith.h"
#include "typed.h"
#include "error.h"
#include "dispatch.h"

#include <gc/gc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_NEST 2000       /* pattern nesting compiled recursively */
#define MAX_REGS 60000
#define MAX_COMM 60         /* choice points of one match (machine.c: 64) */

static void cerr(tgW_comp *c, const tg_term *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void cerr(tgW_comp *c, const tg_term *at, const char *fmt, ...)
{
    if (c->failed)
        return;
    c->failed = 1;
    int line = c->line, col = c->col;
    if (c->pos)
        c->pos(c->pos_ud, at, &line, &col);
    va_list ap;
    va_start(ap, fmt);
    tgE_setv(c->err, TG_ERR_SYNTAX, c->file, c->file ? line : 0, c->file ? col : 0, fmt, ap);
    va_end(ap);
}

char *tgW_show(const tg_term *t)
{
    char *p = tg_print(t, NULL);
    if (p && strlen(p) > 120)
        strcpy(p + 110, " ...)");
    return p;
}

/* An error quoting the offending text. */
#define CERR_AT(c, t, fmt, ...)                                                \
    do {                                                                       \
        char *shown_ = tgW_show(t);                                                \
        cerr((c), (t), fmt " in %s", __VA_ARGS__, shown_ ? shown_ : "?");      \
        free(shown_);                                                          \
    } while (0)

/* ---- emitting ---------------------------------------------------------- */

static tgW_ins *emit(tgW_comp *c, tgW_vec *v, uint8_t op)
{
    if (v->n == v->cap) {
        size_t cap = v->cap ? 2 * v->cap : 16;
        tgW_ins *ni = GC_MALLOC_ATOMIC(cap * sizeof *ni);
        if (!ni) {
            cerr(c, NULL, "out of memory");
            return NULL;
        }
        if (v->n)
            memcpy(ni, v->v, v->n * sizeof *ni);
        v->v = ni;
        v->cap = v->cap ? 2 * v->cap : 16;
    }
    tgW_ins *i = &v->v[v->n++];
    memset(i, 0, sizeof *i);
    i->op = op;
    return i;
}

static uint16_t konst(tgW_comp *c, tg_term *t)
{
    for (uint32_t i = 0; i < c->nk; i++)
        if (c->k[i] == t)
            return (uint16_t)i;
    if (c->nk == c->capk) {
        uint32_t cap = c->capk ? 2 * c->capk : 16;
        tg_term **nk = GC_MALLOC(cap * sizeof *nk);
        if (!nk) {
            cerr(c, NULL, "out of memory");
            return 0;
        }
        if (c->nk)
            memcpy(nk, c->k, c->nk * sizeof *nk);
        c->k = nk;
        c->capk = cap;
    }
    if (c->nk >= 65535) {
        cerr(c, NULL, "rule has too many constants");
        return 0;
    }
    c->k[c->nk] = t;
    return (uint16_t)c->nk++;
}

static int newregs(tgW_comp *c, unsigned k, const tg_term *at)
{
    if (c->nregs + k > MAX_REGS) {
        CERR_AT(c, at, "%s", "pattern too large");
        return -1;
    }
    int r = (int)c->nregs;
    c->nregs += k;
    return r;
}

/* ---- variables -------------------------------------------------------- */

static int is_wild(const tg_term *v)
{
    size_t n;
    const char *s = tg_var_name(v, &n);
    return n == 1 && s[0] == '_';
}

static int var_reg(tgW_comp *c, const tg_term *v)
{
    for (uint32_t i = 0; i < c->nvars; i++)
        if (c->vars[i] == v)
            return (int)c->vregs[i];
    return -1;
}

static int var_bind(tgW_comp *c, tg_term *v, int reg)
{
    if (c->nvars == TGW_MAXVARS) {
        CERR_AT(c, v, "%s", "too many variables in one rule");
        return -1;
    }
    c->vars[c->nvars] = v;
    c->vregs[c->nvars++] = (uint32_t)reg;
    return 0;
}

/* ---- ops ------------------------------------------------------------- */

/* The op a head symbol names, checked against its declared arity; NULL
 * (error set) when unknown or used with the wrong number of arguments. */
static tgW_op *op_check(tgW_comp *c, tg_term *form, tg_term *head, size_t nargs, int seg)
{
    tgW_op *op = tgW_op_find(c->rs, head);
    if (!op) {
        size_t n;
        const char *s = tg_symbol_name(head, &n);
        CERR_AT(c, form, "unknown op %.*s (declare it with (op %.*s ...))", (int)n, s, (int)n, s);
        return NULL;
    }
    int ok = seg ? (op->flags & TGW_VARIADIC) || nargs <= op->amax
                 : nargs >= op->amin && ((op->flags & TGW_VARIADIC) || nargs <= op->amax);
    if (!ok) {
        size_t n;
        const char *s = tg_symbol_name(head, &n);
        char ar[40];
        if (op->flags & TGW_VARIADIC)
            snprintf(ar, sizeof ar, "%u or more", op->amin);
        else if (op->amin == op->amax)
            snprintf(ar, sizeof ar, "%u", op->amin);
        else
            snprintf(ar, sizeof ar, "%u to %u", op->amin, op->amax);
        CERR_AT(c, form, "wrong arity: %.*s takes %s argument%s, given %zu%s", (int)n, s, ar,
                op->amin == 1 && op->amax == 1 ? "" : "s", nargs, seg ? " and a segment" : "");
        return NULL;
    }
    return op;
}

/* Elements of a list into buf (at most max); the final tail in *tail. */
static size_t elems(const tg_term *t, tg_term **buf, size_t max, tg_term **tail)
{
    tg_iter it = {(tg_term *)t, 0};
    size_t n = 0;
    for (tg_term *x; (x = tgT_iter_next(&it));)
        if (n < max)
            buf[n++] = x;
        else
            n++;
    *tail = (tg_term *)it.node;
    return n;
}

/* The elements of t into buf[256] (n returned, *tail the end), checked as
 * the arguments of a pattern (pat) or of a right side's application:
 * at most 255 arguments, a dotted tail only a variable.  -1 with the
 * error set. */
static long args_of(tgW_comp *c, tg_term *t, tg_term **buf, tg_term **tail, int pat)
{
    size_t n = elems(t, buf, 256, tail);
    if (n > 256) {
        CERR_AT(c, t, "%s", pat ? "pattern with more than 255 arguments" : "application with more than 255 arguments");
        return -1;
    }
    if (*tail != TGT_NIL && tg_kind_of(*tail) != TG_VAR) {
        CERR_AT(c, t, "%s", pat ? "malformed pattern: a dotted tail must be a variable"
                                : "malformed right side: a dotted tail must be a variable");
        return -1;
    }
    return (long)n;
}

/* ---- left sides ------------------------------------------------------- */

/* A num: built-in (arith.h) or a type: built-in (typed.h), not an op. */
static int is_builtin(const tg_term *h)
{
    size_t n;
    const char *s = tg_kind_of(h) == TG_SYMBOL ? tg_symbol_name(h, &n) : NULL;
    return s && (tgQ_reserved(s, n) || tgTy_reserved(s, n));
}

static tg_term *head_of(tg_term *p) { return tg_car(p); }

static int is_typed(const tg_term *h)
{
    size_t n;
    const char *s = tg_kind_of(h) == TG_SYMBOL ? tg_symbol_name(h, &n) : NULL;
    return s && tgTy_reserved(s, n);
}


static int quoted(tgW_comp *c, const tg_term *p, tg_term **out)
{
    if (tgT_ispair(p) && p->e[0] == c->s_quote && tg_length(p) == 2 && tg_tail(p) == TGT_NIL) {
        *out = tg_nth(p, 1);
        return 1;
    }
    return 0;
}

static int pat(tgW_comp *c, tgW_vec *m, tg_term *p, int reg, unsigned depth);
static int ac_node(tgW_comp *c, tgW_vec *m, tg_term *p, const tgW_op *op, tg_term *const *a0, size_t k0,
                   tg_term *tail, int reg, tgW_rule *root, unsigned depth);

/* Subterm t will be in register reg: a later occurrence reads it there. */
static void share_note(tgW_comp *c, tg_term *t, int reg)
{
    if (c->nshared < TGW_MAXVARS) {
        c->shared[c->nshared] = t;
        c->sregs[c->nshared++] = (uint32_t)reg;
    }
}

static int share_find(const tgW_comp *c, const tg_term *t)
{
    for (uint32_t i = 0; i < c->nshared; i++)
        if (c->shared[i] == t)
            return (int)c->sregs[i];
    return -1;
}

/* The arguments of an application pattern, already matched into
 * registers r0..: each a sub-pattern. */
static int pat_args(tgW_comp *c, tgW_vec *m, tg_term **a, size_t n, int r0, unsigned depth)
{
    for (size_t i = 0; i < n; i++)
        if (pat(c, m, a[i], r0 + (int)i, depth + 1) < 0)
            return -1;
    return 0;
}

/* Whether the subpattern p, ground, compiled into m from instruction at
 * on, is only applications of fixed length and constants: then a term
 * matches it exactly when it is p itself (terms are hash-consed), and
 * one M_CONST does the walk's work.  Not for an assoc / comm op (its
 * instructions are others), nor a segment or a long application, nor
 * when a part was quoted (its constant is not itself): nq is the count
 * of quoted parts before p was compiled, so that the test costs nothing
 * per level (walking p for quotes at each level was quadratic). */
static int ground_app(tgW_comp *c, const tgW_vec *m, tg_term *p, size_t at, uint32_t nq)
{
    if (!tg_is_ground(p) || c->nquoted != nq)
        return 0;
    for (size_t j = at; j < m->n; j++) {
        const tgW_ins *i = &m->v[j];
        if (i->op != M_CONST && (i->op != M_APP || i->c + 1u >= TGT_CHUNK))
            return 0;
    }
    return 1;
}

static int pat(tgW_comp *c, tgW_vec *m, tg_term *p, int reg, unsigned depth)
{
    if (depth > MAX_NEST) {
        CERR_AT(c, p, "%s", "pattern nested too deeply");
        return -1;
    }
    tg_term *q;
    if (tg_kind_of(p) == TG_VAR) {
        if (is_wild(p))
            return 0;
        int r = var_reg(c, p);
        if (r < 0)
            return var_bind(c, p, reg);
        if (r == reg)
            return 0;   /* bound to this very register (see lhs) */
        tgW_ins *i = emit(c, m, M_SAME);
        if (!i)
            return -1;
        i->a = (uint16_t)reg, i->b = (uint16_t)r;
        return 0;
    }
    if (!tgT_ispair(p) || quoted(c, p, &q)) {
        if (tgT_ispair(p))
            p = q, c->nquoted++;
        tgW_ins *i = emit(c, m, M_CONST);
        if (!i)
            return -1;
        i->a = (uint16_t)reg, i->b = konst(c, p);
        return c->failed ? -1 : 0;
    }
    tg_term *buf[256], *tail;
    long nl = args_of(c, p, buf, &tail, 1);
    if (nl < 0)
        return -1;
    size_t n = (size_t)nl;
    tg_term *head = buf[0];
    if (tg_kind_of(head) != TG_SYMBOL) {
        /* (?f ?x): any list of that many elements */
        if (tail != TGT_NIL) {
            CERR_AT(c, p, "%s", "malformed pattern: a segment needs an op at the head");
            return -1;
        }
        int r0 = newregs(c, (unsigned)n, p);
        tgW_ins *i = r0 < 0 ? NULL : emit(c, m, M_LIST);
        if (!i)
            return -1;
        i->a = (uint16_t)reg, i->c = (uint16_t)n, i->d = (uint32_t)r0;
        return pat_args(c, m, buf, n, r0, depth);
    }
    int seg = tail != TGT_NIL;
    if (is_builtin(head)) {
        CERR_AT(c, p, "a %s: built-in computes; it cannot be matched in a left side", is_typed(head_of(p)) ? "type" : "num");
        return -1;
    }
    tgW_op *op = op_check(c, p, head, n - 1, seg);
    if (!op)
        return -1;
    share_note(c, p, reg);
    int ac = ac_node(c, m, p, op, buf + 1, n - 1, tail, reg, NULL, depth);
    if (ac)
        return ac < 0 ? -1 : 0;
    if (!seg && (op->flags & TGW_COMM) && n == 3) {
        if (++c->ncomm > MAX_COMM) {
            CERR_AT(c, p, "%s", "too many commutative subpatterns in one rule");
            return -1;
        }
        int r0 = newregs(c, 2, p);
        tgW_ins *i = r0 < 0 ? NULL : emit(c, m, M_COMM);
        if (!i)
            return -1;
        i->a = (uint16_t)reg, i->b = konst(c, head), i->c = 2, i->d = (uint32_t)r0;
        return pat_args(c, m, buf + 1, 2, r0, depth);
    }
    size_t at = m->n;
    uint32_t nshared = c->nshared, nq = c->nquoted;
    int r0 = newregs(c, (unsigned)(n - 1 + seg), p);
    tgW_ins *i = r0 < 0 ? NULL : emit(c, m, seg ? M_APPSEG : M_APP);
    if (!i)
        return -1;
    i->a = (uint16_t)reg, i->b = konst(c, head), i->c = (uint16_t)(n - 1), i->d = (uint32_t)r0;
    if (pat_args(c, m, buf + 1, n - 1, r0, depth) < 0)
        return -1;
    if (seg)
        return pat(c, m, tail, r0 + (int)(n - 1), depth + 1);
    if (ground_app(c, m, p, at, nq)) {
        /* one identity test instead of the walk: the subpattern and its
         * checks were compiled only to know that (its errors as usual) */
        m->n = at, c->nregs = (uint32_t)r0, c->nshared = nshared;
        i = emit(c, m, M_CONST);
        if (!i)
            return -1;
        i->a = (uint16_t)reg, i->b = konst(c, p);
        return c->failed ? -1 : 0;
    }
    return 0;
}

/* ---- assoc / comm nodes (run by ac.c) ----------------------------------- */

#define MAX_ACNODES 256     /* ac.c: MAXNODES */

static tgW_ins *ac_emit(tgW_comp *c, tgW_vec *m, uint8_t op, unsigned a, unsigned b, unsigned cc,
                        uint32_t d)
{
    tgW_ins *i = emit(c, m, op);
    if (i)
        i->a = (uint16_t)a, i->b = (uint16_t)b, i->c = (uint16_t)cc, i->d = d;
    return i;
}

/* The arguments a[0..k) of a pattern of assoc op op with nested
 * applications of op spliced in, into out (at most 255); their count,
 * -1 on an error. */
static int ac_flat(tgW_comp *c, tg_term *p, const tgW_op *op, tg_term *const *a, size_t k,
                   tg_term **out)
{
    tg_term *stack[256];
    size_t ns = 0, n = 0;
    for (size_t i = k; i-- > 0;)
        stack[ns++] = a[i];
    while (ns) {
        tg_term *x = stack[--ns], *q;
        if ((op->flags & TGW_ASSOC) && tgT_ispair(x) && x->e[0] == op->name && !quoted(c, x, &q)) {
            if (tg_tail(x) != TGT_NIL) {
                CERR_AT(c, x, "%s", "a segment inside a pattern of the same associative op");
                return -1;
            }
            size_t l = tg_length(x);
            if (ns + l > 256) {
                CERR_AT(c, p, "%s", "pattern with more than 255 arguments");
                return -1;
            }
            for (size_t j = l; j-- > 1;)
                stack[ns++] = tg_nth(x, j);
            continue;
        }
        if (n == 255) {
            CERR_AT(c, p, "%s", "pattern with more than 255 arguments");
            return -1;
        }
        out[n++] = x;
    }
    return (int)n;
}

/* Register r holds a variable's absorbed arguments (op). */
static void ac_group_note(tgW_comp *c, const tgW_op *op, int r)
{
    if (c->ngroups < TGW_MAXVARS) {
        c->gregs[c->ngroups] = (uint32_t)r;
        c->gops[c->ngroups++] = op;
    }
}

/* The direct variable arguments of a bag node: those bound before
 * (elsewhere, or by the node's other arguments) taken first, then each
 * met for the first time given one argument, a group, or all that is
 * left (the last one), and taken again at its later occurrences. */
static int ac_vars(tgW_comp *c, tgW_vec *m, const tgW_op *op, uint32_t id, tg_term **v, size_t nv,
                   int absorb)
{
    size_t nfree = 0;
    for (size_t i = 0; i < nv; i++) {
        int r = is_wild(v[i]) ? -1 : var_reg(c, v[i]);
        if (r >= 0 && !ac_emit(c, m, M_ACTAKE, id, (unsigned)r, 0, 0))
            return -1;
        int first = 1;
        for (size_t j = 0; j < i; j++)
            first &= v[j] != v[i] || is_wild(v[i]);
        nfree += first && r < 0;
    }
    for (size_t i = 0, seen = 0; i < nv; i++) {
        tg_term *x = v[i];
        int first = 1, cnt = 1;
        for (size_t j = 0; j < i; j++)
            first &= x != v[j] || is_wild(x);
        if (!first || (!is_wild(x) && var_reg(c, x) >= 0))
            continue;   /* taken above, or below with its first occurrence */
        for (size_t j = i + 1; j < nv; j++)
            cnt += x == v[j] && !is_wild(x);
        int r = newregs(c, 1, x);
        if (r < 0)
            return -1;
        seen++;
        tgW_ins *ins = !absorb ? ac_emit(c, m, M_ACONE, id, 0xffff, 0, (uint32_t)r)
            : seen == nfree && cnt == 1 ? ac_emit(c, m, M_ACALL, id, 0, 0, (uint32_t)r)
            : ac_emit(c, m, M_ACGROUP, id, 0, (unsigned)(nfree - seen), (uint32_t)r);
        if (!ins || (!is_wild(x) && var_bind(c, x, r) < 0))
            return -1;
        if (absorb)
            ac_group_note(c, op, r);
        while (--cnt > 0)
            if (!ac_emit(c, m, M_ACTAKE, id, (unsigned)r, 0, 0))
                return -1;
    }
    return 0;
}

/* A bag node (a comm op): constants taken first, then the other
 * non-variable arguments (a choice each), then the variables. */
static int ac_bag(tgW_comp *c, tgW_vec *m, const tgW_op *op, uint32_t id, tg_term **a, size_t k,
                  int absorb, unsigned depth)
{
    tg_term *v[256], *q;
    size_t nv = 0;
    for (size_t i = 0; i < k; i++)
        if (!tgT_ispair(a[i]) && tg_kind_of(a[i]) != TG_VAR) {
            if (!ac_emit(c, m, M_ACTAKE, id, konst(c, a[i]), 0, 0))
                return -1;
            m->v[m->n - 1].pad = 1;
        } else if (tgT_ispair(a[i]) && quoted(c, a[i], &q)) {
            if (!ac_emit(c, m, M_ACTAKE, id, konst(c, q), 0, 0))
                return -1;
            m->v[m->n - 1].pad = 1;
        }
    for (size_t i = 0; i < k; i++) {
        if (tg_kind_of(a[i]) == TG_VAR) {
            v[nv++] = a[i];
            continue;
        }
        if (!tgT_ispair(a[i]) || quoted(c, a[i], &q))
            continue;
        tg_term *h = a[i]->e[0];
        int r = newregs(c, 1, a[i]);
        unsigned hk = tg_kind_of(h) == TG_SYMBOL ? konst(c, h) : 0xffff;
        if (r < 0 || !ac_emit(c, m, M_ACONE, id, hk, 0, (uint32_t)r) || pat(c, m, a[i], r, depth + 1) < 0)
            return -1;
    }
    return ac_vars(c, m, op, id, v, nv, absorb);
}

/* A sequence node (an assoc op that is not comm): the arguments in
 * order, a variable first met taking a run of them. */
static int ac_seq(tgW_comp *c, tgW_vec *m, const tgW_op *op, uint32_t id, tg_term **a, size_t k,
                  unsigned depth)
{
    for (size_t i = 0; i < k; i++) {
        tg_term *x = a[i];
        int r = tg_kind_of(x) == TG_VAR && !is_wild(x) ? var_reg(c, x) : -1;
        if (r >= 0) {
            if (!ac_emit(c, m, M_ASTAKE, id, (unsigned)r, 0, 0))
                return -1;
            continue;
        }
        if ((r = newregs(c, 1, x)) < 0)
            return -1;
        if (tg_kind_of(x) != TG_VAR) {
            if (!ac_emit(c, m, M_ASONE, id, 0, 0, (uint32_t)r) || pat(c, m, x, r, depth + 1) < 0)
                return -1;
            continue;
        }
        tgW_ins *ins = ac_emit(c, m, M_ASRUN, id, 0, (unsigned)(k - 1 - i), (uint32_t)r);
        if (!ins || (!is_wild(x) && var_bind(c, x, r) < 0))
            return -1;
        ins->pad = i == k - 1;
        ac_group_note(c, op, r);
    }
    return ac_emit(c, m, M_ACEND, id, 0, 0, 0) ? 0 : -1;
}

/* Pattern p = (op a[0..k) . tail) of an assoc or comm op, its subject in
 * register reg (root: the call itself, for rule root).  1 when compiled
 * here, 0 when the plain instructions do (not assoc / comm, a comm op of
 * two arguments, an assoc op with a segment or fewer than two
 * arguments), -1 on an error. */
static int ac_node(tgW_comp *c, tgW_vec *m, tg_term *p, const tgW_op *op, tg_term *const *a0, size_t k0,
                   tg_term *tail, int reg, tgW_rule *root, unsigned depth)
{
    int comm = (op->flags & TGW_COMM) != 0, assoc = (op->flags & TGW_ASSOC) != 0;
    int seg = tail != TGT_NIL;
    if (!comm && !assoc)
        return 0;
    tg_term *a[256];
    int k = ac_flat(c, p, op, a0, k0, a);
    if (k < 0)
        return -1;
    if (comm && !assoc && !seg && k == 2)
        return 0;
    if (!comm && (seg || k < 2))
        return 0;
    int absorb = assoc && !seg && k >= 2;
    if (c->nac == MAX_ACNODES) {
        CERR_AT(c, p, "%s", "too many assoc / comm subpatterns in one rule");
        return -1;
    }
    uint32_t id = c->nac++;
    if (root) {
        root->seg = 1;  /* registers apart from the call's arguments */
        c->nregs = 0;
    }
    uint32_t mode = (root ? TGW_AC_ROOT : 0) | (!seg && !absorb ? TGW_AC_EXACT : 0) |
                    (!comm ? TGW_AC_SEQ : 0) | (assoc ? TGW_AC_FLAT : 0);
    if (!ac_emit(c, m, M_ACOPEN, root ? 0 : (unsigned)reg, konst(c, op->name), id,
                 mode | (uint32_t)k << 8))
        return -1;
    if (!comm)
        return ac_seq(c, m, op, id, a, (size_t)k, depth) < 0 ? -1 : 1;
    if (ac_bag(c, m, op, id, a, (size_t)k, absorb, depth) < 0)
        return -1;
    if (seg) {
        int r = newregs(c, 1, tail);
        if (r < 0 || !ac_emit(c, m, M_ACREST, id, 0, 0, (uint32_t)r) || pat(c, m, tail, r, depth + 1) < 0)
            return -1;
        return 1;
    }
    return ac_emit(c, m, M_ACEND, id, 0, 0, 0) ? 1 : -1;
}

/* The left side: an op application (or a nullary op's bare symbol).
 * The call's arguments are registers 0..k-1. */
static int lhs(tgW_comp *c, tgW_rule *r, tg_term *l)
{
    tgW_vec *m = &c->match;
    if (tg_kind_of(l) == TG_SYMBOL) {
        tgW_op *op = op_check(c, l, l, 0, 0);
        if (!op)
            return -1;
        if (op->amin != 0 || op->amax != 0) {
            CERR_AT(c, l, "%s", "a bare symbol is a left side only for a nullary op");
            return -1;
        }
        r->op = op;
        tgW_ins *i = emit(c, m, M_ROOT);
        return i ? 0 : -1;
    }
    if (!tgT_ispair(l) || tg_kind_of(tg_car(l)) != TG_SYMBOL) {
        CERR_AT(c, l, "%s", "malformed pattern: a left side must be an op application");
        return -1;
    }
    tg_term *buf[256], *tail;
    long nl = args_of(c, l, buf, &tail, 1);
    if (nl < 0)
        return -1;
    size_t n = (size_t)nl;
    int seg = tail != TGT_NIL;
    if (is_builtin(buf[0])) {
        CERR_AT(c, l, "a %s: built-in computes; it cannot be matched in a left side", is_typed(head_of(l)) ? "type" : "num");
        return -1;
    }
    tgW_op *op = op_check(c, l, buf[0], n - 1, seg);
    if (!op)
        return -1;
    r->op = op;
    unsigned k = (unsigned)(n - 1);
    r->seg = seg;
    c->nregs = k + seg;
    int ac = ac_node(c, m, l, op, buf + 1, k, tail, 0, r, 0);
    if (ac)
        return ac < 0 ? -1 : 0;
    if (!seg && (op->flags & TGW_COMM) && k == 2) {
        c->ncomm++;
        int r0 = newregs(c, 2, l);
        tgW_ins *i = r0 < 0 ? NULL : emit(c, m, M_ROOTCOMM);
        if (!i)
            return -1;
        i->d = (uint32_t)r0;
        return pat_args(c, m, buf + 1, 2, r0, 0);
    }
    tgW_ins *i = emit(c, m, seg ? M_ROOTSEG : M_ROOT);
    if (!i)
        return -1;
    i->a = (uint16_t)k;
    /* A variable that is an argument of the root is that argument's
     * register from the start, so the subpatterns before it check it
     * rather than bind it: in (true_div (mul ?x ?y) ?y), mul's node takes
     * the argument equal to ?y and gives ?x the rest, where binding ?y
     * there would try every split of mul's arguments (2^k of them, each
     * built as a term) and compare ?y at the end. */
    for (unsigned j = 0; j < k; j++)
        if (tg_kind_of(buf[1 + j]) == TG_VAR && !is_wild(buf[1 + j]) && var_reg(c, buf[1 + j]) < 0 &&
            var_bind(c, buf[1 + j], (int)j) < 0)
            return -1;
    if (pat_args(c, m, buf + 1, k, 0, 0) < 0)
        return -1;
    return seg ? pat(c, m, tail, (int)k, 1) : 0;
}

/* ---- bodies ----------------------------------------------------------- */

static void depth_add(tgW_comp *c, int d)
{
    c->depth += d;
    if (c->depth > c->maxdepth)
        c->maxdepth = c->depth;
}

static int expr(tgW_comp *c, tg_term *e, int tail, unsigned depth);

static int expr_var(tgW_comp *c, tg_term *e)
{
    int r = is_wild(e) ? -1 : var_reg(c, e);
    if (r < 0) {
        size_t n;
        const char *s = tg_var_name(e, &n);
        CERR_AT(c, e, "?%.*s is not bound by the left side", (int)n, s);
        return -1;
    }
    tgW_ins *i = emit(c, &c->body, E_VAR);
    if (!i)
        return -1;
    i->a = (uint16_t)r;
    depth_add(c, 1);
    for (uint32_t g = 0; g < c->ngroups; g++)
        if (c->gregs[g] == (uint32_t)r) {
            /* absorbed arguments: a new application, to be reduced */
            const tgW_op *op = c->gops[g];
            if (!(i = emit(c, &c->body, E_NORM)))
                return -1;
            i->a = (uint16_t)op->id, i->b = konst(c, op->name);
            return c->failed ? -1 : 0;
        }
    return 0;
}

static int expr_const(tgW_comp *c, tg_term *t)
{
    tgW_ins *i = emit(c, &c->body, E_CONST);
    if (!i)
        return -1;
    i->a = konst(c, t);
    depth_add(c, 1);
    return c->failed ? -1 : 0;
}

/* A call of op `op` (head symbol h) whose n arguments (and a segment
 * tail, if seg) are on the stack. */
static int emit_call(tgW_comp *c, tgW_op *op, tg_term *h, size_t n, int seg, int atom, int tail)
{
    /* an assoc / comm op's arguments are put in canonical order first
     * (no tail call then: E_CALL and E_CALLT stay as they were) */
    int ac = (op->flags & (TGW_ASSOC | TGW_COMM)) != 0;
    tgW_ins *i = emit(c, &c->body, seg ? E_CALLV : ac ? E_CALLAC : tail ? E_CALLT : E_CALL);
    if (!i)
        return -1;
    i->a = (uint16_t)op->id, i->b = konst(c, h), i->c = (uint16_t)n, i->pad = (uint8_t)atom;
    i->d = (uint32_t)ac;
    if (ac)
        tail = 0;
    if (op->id > 65535) {
        cerr(c, h, "too many ops");
        return -1;
    }
    depth_add(c, 1 - (int)n - seg);
    if (tail && !seg)
        return c->failed ? -1 : 1;      /* no E_RET after it */
    return c->failed ? -1 : 0;
}

/* Term e built as written: its variables' values, its applications
 * made with no rule applied (a type: built-in's argument, typed.h);
 * a built-in inside it computes as anywhere. */
static int expr_built(tgW_comp *c, tg_term *e, unsigned depth)
{
    tg_term *q;
    if (depth > MAX_NEST) {
        CERR_AT(c, e, "%s", "right side nested too deeply");
        return -1;
    }
    if (tg_kind_of(e) == TG_VAR)
        return expr_var(c, e);
    if (!tgT_ispair(e) || tg_is_ground(e))
        return expr_const(c, e);
    if (quoted(c, e, &q))
        return expr_const(c, q);
    if (is_builtin(tg_car(e)))
        return expr(c, e, 0, depth);
    tg_term *buf[256], *tl;
    long nl = args_of(c, e, buf, &tl, 0);
    if (nl < 0)
        return -1;
    size_t n = (size_t)nl;
    for (size_t i = 0; i < n; i++)
        if (expr_built(c, buf[i], depth + 1) < 0)
            return -1;
    if (tl != TGT_NIL && expr_built(c, tl, depth + 1) < 0)
        return -1;
    tgW_ins *i = emit(c, &c->body, tl != TGT_NIL ? E_LISTT : E_LIST);
    if (!i)
        return -1;
    i->c = (uint16_t)n;
    depth_add(c, 1 - (int)n - (tl != TGT_NIL));
    return 0;
}

/* The call of built-in id (kind E_TYPE or E_NUM) on the nargs values on
 * top of the stack: its value pushed, or put in register `store` when
 * >= 0.  0, or -1 out of memory. */
static int emit_builtin(tgW_comp *c, uint8_t kind, int id, size_t nargs, int store)
{
    tgW_ins *i = emit(c, &c->body, kind);
    if (!i)
        return -1;
    i->a = (uint16_t)id, i->c = (uint16_t)nargs, i->pad = store >= 0;
    i->d = store >= 0 ? (uint32_t)store : 0;
    depth_add(c, (store >= 0 ? 0 : 1) - (int)nargs);
    return 0;
}

/* A type: built-in (typed.h) applied to the n - 1 terms after buf[0],
 * built as written: its value pushed, or put in register `store`. */
static int expr_typed(tgW_comp *c, tg_term *e, tg_term **buf, size_t n, int seg, int store, unsigned depth)
{
    size_t len;
    const char *s = tg_symbol_name(buf[0], &len);
    int nargs, test;
    int id = tgTy_lookup(s, len, &nargs, &test);
    if (id < 0) {
        CERR_AT(c, e, "unknown built-in %.*s", (int)len, s);
        return -1;
    }
    if (seg || (int)n - 1 != nargs) {
        CERR_AT(c, e, "wrong arity: %.*s takes %d argument%s", (int)len, s, nargs, nargs == 1 ? "" : "s");
        return -1;
    }
    for (size_t i = 1; i < n; i++)
        if (expr_built(c, buf[i], depth + 1) < 0)
            return -1;
    return emit_builtin(c, E_TYPE, id, n - 1, store);
}

/* A numeric built-in (arith.h) applied to the n - 1 expressions after
 * buf[0]: its value pushed, or put in register `store` when >= 0. */
static int expr_builtin(tgW_comp *c, tg_term *e, tg_term **buf, size_t n, int seg, int store,
                        unsigned depth)
{
    if (is_typed(buf[0]))
        return expr_typed(c, e, buf, n, seg, store, depth);
    size_t len;
    const char *s = tg_symbol_name(buf[0], &len);
    int amin, amax, test;
    int id = tgQ_lookup(s, len, &amin, &amax, &test);
    if (id < 0) {
        CERR_AT(c, e, "unknown built-in %.*s", (int)len, s);
        return -1;
    }
    if (seg || (int)n - 1 < amin || (amax >= 0 && (int)n - 1 > amax)) {
        CERR_AT(c, e, "wrong arity: %.*s takes %d%s argument%s", (int)len, s, amin,
                amax < 0 ? " or more" : "", amax == 1 ? "" : "s");
        return -1;
    }
    for (size_t i = 1; i < n; i++)
        if (expr(c, buf[i], 0, depth + 1) < 0)
            return -1;
    return emit_builtin(c, E_NUM, id, n - 1, store);
}

static int expr(tgW_comp *c, tg_term *e, int tail, unsigned depth)
{
    if (depth > MAX_NEST) {
        CERR_AT(c, e, "%s", "right side nested too deeply");
        return -1;
    }
    tg_term *q;
    if (tg_kind_of(e) == TG_VAR)
        return expr_var(c, e);
    if (tg_kind_of(e) == TG_SYMBOL) {
        tgW_op *op = tgW_op_find(c->rs, e);
        if (op && op->amin == 0 && op->amax == 0)   /* a nullary op: may have rules */
            return emit_call(c, op, e, 0, 0, 1, tail);
        return expr_const(c, e);
    }
    if (!tgT_ispair(e))
        return expr_const(c, e);
    if (quoted(c, e, &q))
        return expr_const(c, q);
    if (tg_is_ground(e) && tg_kind_of(tg_car(e)) != TG_SYMBOL)
        return expr_const(c, e);
    tg_term *buf[256], *tl;
    long nl = args_of(c, e, buf, &tl, 0);
    if (nl < 0)
        return -1;
    size_t n = (size_t)nl;
    tg_term *h = buf[0];
    int seg = tl != TGT_NIL;
    int sr = share_find(c, e);
    if (sr >= 0) {      /* met before: its normal form is in a register */
        tgW_ins *i = emit(c, &c->body, E_VAR);
        if (!i)
            return -1;
        i->a = (uint16_t)sr;
        depth_add(c, 1);
        return 0;
    }
    if (is_builtin(h))
        return expr_builtin(c, e, buf, n, seg, -1, depth);
    if (tg_kind_of(h) == TG_SYMBOL) {
        tgW_op *op = op_check(c, e, h, n - 1, seg);
        if (!op)
            return -1;
        for (size_t i = 1; i < n; i++)
            if (expr(c, buf[i], 0, depth + 1) < 0)
                return -1;
        if (seg && expr(c, tl, 0, depth + 1) < 0)
            return -1;
        uintptr_t cnt = (uintptr_t)tgW_map_get(&c->counts, e);
        if (cnt > 1 && c->nregs < 60000 && c->nshared < TGW_MAXVARS) {
            /* repeated in this rule: evaluated once, kept in a register */
            int rc = emit_call(c, op, h, n - 1, seg, 0, 0);
            tgW_ins *i = rc < 0 ? NULL : emit(c, &c->body, E_STORE);
            if (!i)
                return -1;
            i->a = (uint16_t)c->nregs;
            share_note(c, e, (int)c->nregs++);
            if (tail && !emit(c, &c->body, E_RET))
                return -1;
            return tail ? 1 : 0;
        }
        return emit_call(c, op, h, n - 1, seg, 0, tail);
    }
    /* a list with a computed head: built, no rule applies at its root */
    for (size_t i = 0; i < n; i++)
        if (expr(c, buf[i], 0, depth + 1) < 0)
            return -1;
    if (seg && expr(c, tl, 0, depth + 1) < 0)
        return -1;
    tgW_ins *i = emit(c, &c->body, seg ? E_LISTT : E_LIST);
    if (!i)
        return -1;
    i->c = (uint16_t)n;
    depth_add(c, 1 - (int)n - seg);
    return 0;
}

/* ---- conditions ------------------------------------------------------- */

static const struct {
    const char *name;
    int p;
} preds[] = {
    {"const?", P_CONST}, {"number?", P_NUMBER}, {"int?", P_INT}, {"rational?", P_RAT},
    {"double?", P_DOUBLE}, {"symbol?", P_SYMBOL}, {"string?", P_STRING}, {"atom?", P_ATOM},
    {"app?", P_APP}, {"nil?", P_NIL},
};

/* (NAME ARG ...) of a C predicate (cext.c), n elements, negated when
 * under not: its arguments evaluated, then the test. */
static int cond_cpred(tgW_comp *c, tg_term *g, tg_term *h, size_t n, int neg)
{
    long p = tgX_pred_find(c->rs, h);
    unsigned ar = tgX_pred_arity(c->rs, p);
    if (n - 1 != ar) {
        CERR_AT(c, g, "wrong arity: predicate %s takes %u argument%s, given %zu",
                tg_symbol_name(h, NULL), ar, ar == 1 ? "" : "s", n - 1);
        return -1;
    }
    for (size_t i = 1; i < n; i++)
        if (expr(c, tg_nth(g, i), 0, 1) < 0)
            return -1;
    tgW_ins *ins = emit(c, &c->body, E_CPRED);
    if (!ins)
        return -1;
    ins->a = (uint16_t)p, ins->c = (uint16_t)ar, ins->pad = (uint8_t)neg;
    depth_add(c, -(int)ar);
    return 0;
}

/* (num:< A B) and the other comparisons as a condition: holds when the
 * value is 1 (fails when 0, or, negated, when 1). */
static int cond_builtin(tgW_comp *c, tg_term *g, int neg)
{
    size_t len;
    const char *s = tg_symbol_name(tg_car(g), &len);
    int amin, amax, test;
    if ((is_typed(tg_car(g)) ? tgTy_lookup(s, len, &amin, &test)
                             : tgQ_lookup(s, len, &amin, &amax, &test)) >= 0 && !test) {
        CERR_AT(c, g, "%.*s is not a condition (compare its value with == or a num: comparison)",
                (int)len, s);
        return -1;
    }
    if (expr(c, g, 0, 1) < 0 || expr_const(c, tg_int(c->rs->ctx, 1)) < 0)
        return -1;
    if (!emit(c, &c->body, neg ? E_NE : E_EQ))
        return -1;
    depth_add(c, -2);
    return 0;
}

/* Are the parts of t that hold variables nested more than
 * TGW_MAXGOALDEPTH deep?  The functions below and the building of a
 * template when the goal runs (relrw.c) recurse on those parts only, so
 * checking this first bounds their recursion. */
static int too_deep(const tg_term *t, unsigned depth)
{
    if (depth > TGW_MAXGOALDEPTH)
        return 1;
    if (!tgT_ispair(t) || tg_is_ground(t))
        return 0;
    tg_iter it = {t, 0};
    for (tg_term *x; (x = tgT_iter_next(&it));)
        if (too_deep(x, depth + 1))
            return 1;
    return (tg_term *)it.node != TGT_NIL && too_deep((tg_term *)it.node, depth + 1);
}

/* Does t hold a variable that is not bound yet (or a wildcard)? */
static int has_unbound(tgW_comp *c, tg_term *t)
{
    if (tg_kind_of(t) == TG_VAR)
        return is_wild(t) || var_reg(c, t) < 0;
    if (!tgT_ispair(t) || tg_is_ground(t))
        return 0;
    tg_iter it = {t, 0};
    for (tg_term *x; (x = tgT_iter_next(&it));)
        if (has_unbound(c, x))
            return 1;
    return (tg_term *)it.node != TGT_NIL && has_unbound(c, (tg_term *)it.node);
}

/* The variables of t not bound yet (wildcards aside) into out, each once. */
static void unbound_vars(tgW_comp *c, tg_term *t, tg_term **out, size_t *n, size_t max)
{
    if (tg_kind_of(t) == TG_VAR) {
        if (is_wild(t) || var_reg(c, t) >= 0)
            return;
        for (size_t i = 0; i < *n; i++)
            if (out[i] == t)
                return;
        if (*n < max)
            out[(*n)++] = t;
        return;
    }
    if (!tgT_ispair(t) || tg_is_ground(t))
        return;
    tg_iter it = {t, 0};
    for (tg_term *x; (x = tgT_iter_next(&it));)
        unbound_vars(c, x, out, n, max);
    if ((tg_term *)it.node != TGT_NIL)
        unbound_vars(c, (tg_term *)it.node, out, n, max);
}

/* A relation as a condition: (rel ARG ...).  An argument whose variables
 * are all bound is evaluated like a right side; one with unbound
 * variables is a template, built as written when the goal runs, its
 * unbound variables fresh logic variables; the first answer binds them
 * (registers from here on), for later conditions and the right side.
 * The instruction's constant describes the goal for relrw.c:
 * (REL MASK LINE COL GOAL VAR REG ...), MASK's bit i set when argument i
 * is a template, GOAL the condition as written (for errors). */
static int goal(tgW_comp *c, tg_term *g, size_t n)
{
    tg_term *outs[64];
    size_t na = n - 1, nout = 0;
    if (na > 62) {
        CERR_AT(c, g, "%s", "a relation condition takes at most 62 arguments");
        return -1;
    }
    uint64_t mask = 0;
    for (size_t i = 0; i < na; i++) {
        tg_term *a = tg_nth(g, i + 1);
        if (too_deep(a, 0)) {
            CERR_AT(c, a, "%s", "argument of a relation condition nested too deeply");
            return -1;
        }
        if (has_unbound(c, a)) {
            mask |= 1ull << i;
            unbound_vars(c, a, outs, &nout, 64);
        }
    }
    for (size_t i = 0; i < na; i++)
        if (((mask >> i) & 1) ? expr_const(c, tg_nth(g, i + 1)) < 0
                              : expr(c, tg_nth(g, i + 1), 0, 1) < 0)
            return -1;
    int line = c->line, col = c->col;
    if (c->pos)
        c->pos(c->pos_ud, g, &line, &col);
    tg_ctx *ctx = c->rs->ctx;
    tg_term *d[5 + 2 * 64];
    size_t k = 0;
    d[k++] = tg_car(g);
    d[k++] = tg_int(ctx, (int64_t)mask);
    d[k++] = tg_int(ctx, line);
    d[k++] = tg_int(ctx, col);
    d[k++] = g;
    for (size_t i = 0; i < nout; i++) {
        int r = newregs(c, 1, g);
        if (r < 0 || var_bind(c, outs[i], r) < 0)
            return -1;
        d[k++] = outs[i];
        d[k++] = tg_int(ctx, r);
    }
    tg_term *desc = tg_list(ctx, k, d, NULL);
    if (!desc) {
        cerr(c, g, "out of memory");
        return -1;
    }
    tgW_ins *ins = emit(c, &c->body, E_GOAL);
    if (!ins)
        return -1;
    ins->b = konst(c, desc);
    ins->c = (uint16_t)na;
    depth_add(c, -(int)na);
    return c->failed ? -1 : 0;
}

static int cond(tgW_comp *c, tg_term *g)
{
    size_t n = tgT_ispair(g) && tg_tail(g) == TGT_NIL ? tg_length(g) : 0;
    tg_term *h = n ? tg_car(g) : NULL;
    if (h && tg_kind_of(h) == TG_SYMBOL) {
        size_t hl;
        const char *hs = tg_symbol_name(h, &hl);
        int eq = hl == 2 && !memcmp(hs, "==", 2), ne = hl == 2 && !memcmp(hs, "!=", 2);
        if ((eq || ne) && n == 3) {
            if (expr(c, tg_nth(g, 1), 0, 1) < 0 || expr(c, tg_nth(g, 2), 0, 1) < 0)
                return -1;
            if (!emit(c, &c->body, eq ? E_EQ : E_NE))
                return -1;
            depth_add(c, -2);
            return 0;
        }
        int neg = hl == 3 && !memcmp(hs, "not", 3) && n == 2;
        tg_term *pg = neg ? tg_nth(g, 1) : g;
        if (neg) {
            n = tgT_ispair(pg) && tg_tail(pg) == TGT_NIL ? tg_length(pg) : 0;
            h = n ? tg_car(pg) : NULL;
            hs = h && tg_kind_of(h) == TG_SYMBOL ? tg_symbol_name(h, &hl) : "";
            if (!h || tg_kind_of(h) != TG_SYMBOL)
                hl = 0;
        }
        if (h && is_builtin(h))
            return cond_builtin(c, pg, neg);
        for (size_t i = 0; i < sizeof preds / sizeof *preds; i++)
            if (strlen(preds[i].name) == hl && !memcmp(preds[i].name, hs, hl)) {
                if (n != 2) {
                    CERR_AT(c, pg, "%s takes one argument", preds[i].name);
                    return -1;
                }
                if (expr(c, tg_nth(pg, 1), 0, 1) < 0)
                    return -1;
                tgW_ins *ins = emit(c, &c->body, neg ? E_NOT : E_PRED);
                if (!ins)
                    return -1;
                ins->a = (uint16_t)preds[i].p;
                depth_add(c, -1);
                return 0;
            }
        if (h && tg_kind_of(h) == TG_SYMBOL && tgX_pred_find(c->rs, h) >= 0)
            return cond_cpred(c, pg, h, n, neg);
    }
    if (h && tg_kind_of(h) == TG_SYMBOL && !tgW_op_find(c->rs, h))
        return goal(c, g, n);   /* a relation: checked when the load ends */
    CERR_AT(c, g, "%s", "unknown condition (==, !=, a predicate such as const?, (not ...), or a relation call)");
    return -1;
}

/* ---- rules ------------------------------------------------------------ */

/* Occurrences of each compound subterm of e (explicit stack: e may be
 * large, though compiling bounds its depth later). */
static int count_subterms(tgW_comp *c, tg_term *e)
{
    tg_term *stack[512];
    size_t n = 0;
    if (!tgT_ispair(e))
        return 0;
    stack[n++] = e;
    while (n) {
        tg_term *x = stack[--n];
        if (x->e[0] == c->s_quote)
            continue;
        uintptr_t k = (uintptr_t)tgW_map_get(&c->counts, x);
        if (tgW_map_put(&c->counts, x, (void *)(k + 1)) < 0) {
            cerr(c, NULL, "out of memory");
            return -1;
        }
        if (k)
            continue;   /* its parts were counted the first time */
        tg_iter it = {x, 0};
        for (tg_term *y; (y = tgT_iter_next(&it));)
            if (tgT_ispair(y) && n < 512)
                stack[n++] = y;
    }
    return 0;
}

/* The built-in calls of a right side are computed before the rule fires
 * (each kept in a register where the right side reads it), so that one
 * that declines makes the rule not fire rather than fail half-way. */
static int hoist_builtins(tgW_comp *c, tg_term *rhs)
{
    tg_term **stack = NULL;
    size_t n = 0, cap = 0;
    if (!tgT_ispair(rhs))
        return 0;
    for (tg_term *x = rhs;; x = stack[--n]) {
        if (x->e[0] == c->s_quote || (tg_is_ground(x) && tg_kind_of(x->e[0]) != TG_SYMBOL)) {
            /* a constant */
        } else if (is_builtin(x->e[0]) && share_find(c, x) < 0) {
            tg_term *buf[256], *tl;
            size_t k = elems(x, buf, 256, &tl);
            if (k > 256) {
                CERR_AT(c, x, "%s", "application with more than 255 arguments");
                return -1;
            }
            int reg = newregs(c, 1, x);
            if (reg < 0 || expr_builtin(c, x, buf, k, tl != TGT_NIL, reg, 1) < 0)
                return -1;
            share_note(c, x, reg);
        } else {
            tg_iter it = {x, 0};
            for (tg_term *y; (y = tgT_iter_next(&it));)
                if (tgT_ispair(y)) {
                    if (!(stack = tgW_grow(stack, n, &cap, n + 1, sizeof *stack)))
                        return cerr(c, NULL, "out of memory"), -1;
                    stack[n++] = y;
                }
        }
        if (!n)
            return 0;
    }
}

/* Runs of two or three E_VAR become one E_VARS: a right side's calls
 * usually take variables, and each instruction costs the machine a
 * dispatch.  Nothing jumps into a body (a call resumes after itself),
 * so fusing neighbours changes nothing else. */
static void fuse_vars(tgW_vec *b)
{
    size_t o = 0;
    for (size_t k = 0; k < b->n;) {
        size_t run = 0;
        while (run < 3 && k + run < b->n && b->v[k + run].op == E_VAR)
            run++;
        if (run < 2) {
            b->v[o++] = b->v[k++];
            continue;
        }
        tgW_ins f = {E_VARS, (uint8_t)run, b->v[k].a, b->v[k + 1].a, run == 3 ? b->v[k + 2].a : 0, 0};
        b->v[o++] = f;
        k += run;
    }
    b->n = o;
}

/* Whether a match program is plain (rset.h): the machine runs such a
 * program with a matcher of its own, which needs no choice stack. */
static int plain_match(const tgW_ins *m)
{
    if (m->op != M_ROOT)
        return 0;
    for (m++;; m++)
        switch (m->op) {
        case M_APP:
            if (m->c + 1u >= TGT_CHUNK)
                return 0;
            continue;
        case M_CONST: case M_SAME:
            continue;
        case M_DONE:
            return 1;
        default:
            return 0;
        }
}

/* Whether rule r's right side is a constructor around a call of its
 * own op, (C x.. (op y..)), with nothing but pushes of variables and
 * constants before, and its match one application (plain 2): the
 * machine then runs the recursion's levels in one frame (ctorrec). */
static int ctor_rec(const tgW_rule *r)
{
    const tgW_ins *i = r->body;
    uint32_t pushed = 0;
    if (r->plain != 2 || (r->op->flags & (TGW_ASSOC | TGW_COMM)) || i->op != E_FIRE)
        return 0;
    for (i++; i->op == E_VAR || i->op == E_VARS || i->op == E_CONST; i++)
        pushed += i->op == E_VARS ? i->pad : 1;
    const tgW_ins *call = i, *ctor = i + 1;
    return call->op == E_CALL && call->a == r->op->id && !call->pad && call->c == r->match->a &&
           ctor->op == E_CALLT && ctor->c >= 1 && ctor->c < TGT_CHUNK && !ctor->pad &&
           pushed == call->c + ctor->c - 1u;
}

/* A self loop (rset.h): rule r plain, its body E_FIRE (no condition, no
 * built-in before it), pushes of registers and constants, and E_CALLT of
 * its own op on as many arguments as its left side has.  The machine may
 * then rewrite such a call again and again without a frame, a dispatch or
 * the body (loops.c: tgW_loop_run); loop[] says where each argument of the
 * next call comes from.  NULL for any other rule (or out of memory: the
 * rule then runs as any other). */
static uint32_t *self_loop(const tgW_rule *r)
{
    const tgW_ins *b = r->body;
    uint32_t n = r->match->a, k = 0, src[TGW_LOOP_MAX + 3];
    if (!r->plain || n == 0 || n > TGW_LOOP_MAX || b->op != E_FIRE)
        return NULL;
    for (b++; k <= n; b++) {
        if (b->op == E_VAR)
            src[k++] = b->a;
        else if (b->op == E_VARS) {
            src[k++] = b->a, src[k++] = b->b;
            if (b->pad == 3)
                src[k++] = b->c;
        } else if (b->op == E_CONST)
            src[k++] = TGW_LOOP_K | b->a;
        else
            break;
    }
    if (k != n || b->op != E_CALLT || b->a != r->op->id || b->c != n || b->pad || b->d)
        return NULL;
    uint32_t *loop = GC_MALLOC_ATOMIC(n * sizeof *loop);
    if (loop)
        memcpy(loop, src, n * sizeof *loop);
    return loop;
}

/* Whether no term matches both patterns a and b (rule left sides, or
 * parts of them at the same place): somewhere they name different
 * constants or heads, or proper lists of different lengths.  0 when in
 * doubt: a variable, quoted data, an assoc / comm op (whose matches
 * regroup and reorder), a segment beyond the elements compared. */
static int clash(const tg_rules *rs, tg_term *quote, tg_term *a, tg_term *b, unsigned depth)
{
    if (depth > 64 || tg_kind_of(a) == TG_VAR || tg_kind_of(b) == TG_VAR)
        return 0;
    if (tgT_ispair(a) != tgT_ispair(b))
        return 1;       /* an application or list never matches an atom */
    if (!tgT_ispair(a))
        return a != b;  /* constants match by identity (M_CONST) */
    if (a->e[0] == quote || b->e[0] == quote)
        return 0;
    for (int s = 0; s < 2; s++) {
        tg_term *h = (s ? b : a)->e[0];
        const tgW_op *op = tg_kind_of(h) == TG_SYMBOL ? tgW_op_find(rs, h) : NULL;
        if (op && (op->flags & (TGW_ASSOC | TGW_COMM)))
            return 0;
    }
    tg_iter ia = {a, 0}, ib = {b, 0};
    tg_term *x, *y;
    for (;;) {
        x = tgT_iter_next(&ia), y = tgT_iter_next(&ib);
        if (!x || !y)
            break;
        if (clash(rs, quote, x, y, depth + 1))
            return 1;
    }
    /* one ended (its tail in its iterator): the longer clashes with the
     * shorter unless the shorter ends in a segment */
    if (!x && !y)
        return 0;
    return (tg_term *)(x ? ib.node : ia.node) == TGT_NIL;
}

int tgW_loop_safe(const tg_rules *rs, tgW_rule *const *rules, uint32_t i)
{
    const tgW_rule *r = rules[i];
    tg_term *quote = tg_symbol_cstr(rs->ctx, "quote");
    if (!r->loop || !quote)
        return 0;
    for (uint32_t j = 0; j < i; j++)
        if (rules[j]->op != r->op || rules[j]->rel || !rules[j]->match ||
            rules[j]->match->op == M_DONE ||   /* a C rewriter: every call */
            !clash(rs, quote, rules[j]->lhs, r->lhs, 0))
            return 0;
    return 1;
}

void tgW_comp_init(tgW_comp *c, tg_rules *rs, tg_error *err)
{
    memset(c, 0, sizeof *c);
    c->rs = rs;
    c->err = err;
    c->s_quote = tg_symbol_cstr(rs->ctx, "quote");
    c->s_when = tg_symbol_cstr(rs->ctx, "when");
}

tgW_rule *tgW_compile_rule(tgW_comp *c, tg_term *name, tg_term *l, tg_term *rhs, tg_term *const *conds,
                           size_t nconds, int backward)
{
    c->match.n = c->body.n = 0;
    c->nk = c->nvars = c->nregs = c->ncomm = c->nshared = c->nac = c->ngroups = 0;
    c->k = NULL, c->capk = 0;
    c->match.v = c->body.v = NULL, c->match.cap = c->body.cap = 0;
    c->depth = c->maxdepth = 0;
    tgW_rule *r = GC_MALLOC(sizeof *r);
    if (!r) {
        cerr(c, NULL, "out of memory");
        return NULL;
    }
    r->name = name, r->lhs = l, r->rhs = rhs, r->backward = backward;
    r->file = c->file, r->line = c->line, r->col = c->col;
    if (lhs(c, r, l) < 0 || !emit(c, &c->match, M_DONE))
        return NULL;
    tgW_map_clear(&c->counts);
    for (size_t i = 0; i < nconds; i++)
        if (count_subterms(c, conds[i]) < 0)
            return NULL;
    if (count_subterms(c, rhs) < 0)
        return NULL;
    for (size_t i = 0; i < nconds; i++)
        if (cond(c, conds[i]) < 0)
            return NULL;
    if (hoist_builtins(c, rhs) < 0 || !emit(c, &c->body, E_FIRE))
        return NULL;
    int rc = expr(c, rhs, 1, 0);
    if (rc < 0)
        return NULL;
    if (rc == 0 && !emit(c, &c->body, E_RET))
        return NULL;
    fuse_vars(&c->body);
    if (c->nac) {   /* the plain matcher hands the rule over at once */
        tgW_ins *i = emit(c, &c->match, M_DONE);
        if (!i)
            return NULL;
        memmove(c->match.v + 1, c->match.v, (c->match.n - 1) * sizeof *c->match.v);
        memset(c->match.v, 0, sizeof *c->match.v);
        c->match.v[0].op = M_ACRULE;
    }
    r->match = c->match.v;
    r->body = c->body.v;
    r->k = c->k;
    r->nk = c->nk;
    r->nregs = c->nregs;
    r->ac = c->nac > 0;
    if (r->ac)
        tgW_ac_prepare(r);
    r->plain = !r->seg && !r->ac && plain_match(r->match);
    if (r->plain && r->match[1].op == M_APP && r->match[2].op == M_DONE)
        r->plain = 2;   /* one application: matched inline (machine.c) */
    r->ctorrec = ctor_rec(r);
    r->loop = self_loop(r);
    r->loop_direct = 1;
    for (uint32_t j = 0; r->loop && j < r->match->a; j++)
        if (!(r->loop[j] & TGW_LOOP_K) && r->loop[j] < r->match->a)
            r->loop_direct = 0;
    r->nvars = c->nvars;
    r->vars = GC_MALLOC((c->nvars ? c->nvars : 1) * sizeof *r->vars);
    r->vregs = GC_MALLOC_ATOMIC((c->nvars ? c->nvars : 1) * sizeof *r->vregs);
    if (!r->vars || !r->vregs) {
        cerr(c, NULL, "out of memory");
        return NULL;
    }
    memcpy(r->vars, c->vars, c->nvars * sizeof *r->vars);
    memcpy(r->vregs, c->vregs, c->nvars * sizeof *r->vregs);
    r->tags = tg_nil();
    r->maxstack = (uint32_t)c->maxdepth + 2;
    return c->failed ? NULL : r;
}
