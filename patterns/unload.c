/* unload.c - taking definitions out of a rule set: reloading a file
 * (tg_rules_reload_file) and removing a name (tg_rules_undef), each all
 * or nothing, and the records of the files loaded that both work from.
 *
 * Every op, rule, rewriter, registration and definition form carries
 * the file that made it (a fid).  A change is made on the live rule set
 * after a snapshot of it is taken; then every definition that stays is
 * linked again by name and checked: a rule compiled with an op that is
 * gone or declared otherwise (on either side or in a `when` condition),
 * a rewriter naming a rule that is gone, a registration into a rewriter
 * that is gone, a condition calling a relation that is gone.  Any of these puts the snapshot back and is the
 * error, naming the definitions that use what would be gone.
 */
#include "rewriters.h"
#include "relrw.h"
#include "search.h"
#include "builtin.h"
#include "error.h"

#include <gc/gc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the files loaded ------------------------------------------------------ */

uint32_t tgW_file_find(const tg_rules *rs, const char *real)
{
    for (uint32_t i = 0; i < rs->nfiles; i++)
        if (rs->files[i].live && !strcmp(rs->files[i].real, real))
            return i + 1;
    return 0;
}

static char *gc_strdup(const char *s)
{
    char *c = s ? GC_MALLOC_ATOMIC(strlen(s) + 1) : NULL;
    return c ? strcpy(c, s) : NULL;
}

uint32_t tgW_file_add(tg_rules *rs, const char *real, const char *path, int root)
{
    tgW_file *f = tgW_grow(rs->files, rs->nfiles, &rs->capfiles, rs->nfiles + 1, sizeof *f);
    const char *r = gc_strdup(real), *p = gc_strdup(path ? path : real);
    if (!f || !r || !p)
        return 0;
    rs->files = f;
    f[rs->nfiles] = (tgW_file){r, p, NULL, 0, 0, root, 1};
    return ++rs->nfiles;
}

int tgW_file_edge(tg_rules *rs, uint32_t from, uint32_t to)
{
    if (!to)
        return 0;
    if (!from) {    /* included by a string or an entry: kept as if loaded at the top */
        rs->files[to - 1].root = 1;
        return 0;
    }
    tgW_file *f = &rs->files[from - 1];
    for (size_t i = 0; i < f->ninc; i++)
        if (f->inc[i] == to)
            return 0;
    uint32_t *n = tgW_grow(f->inc, f->ninc, &f->capinc, f->ninc + 1, sizeof *n);
    if (!n)
        return -1;
    f->inc = n;
    f->inc[f->ninc++] = to;
    return 0;
}

int tgW_env_tag(tg_rules *rs, uint32_t fid)
{
    size_t n = rs->env ? rs->env->ndefs : 0;
    if (n <= rs->nenvfid)
        return 0;
    uint32_t *t = tgW_grow(rs->envfid, rs->nenvfid, &rs->capenvfid, n, sizeof *t);
    if (!t)
        return -1;
    rs->envfid = t;
    while (rs->nenvfid < n)
        t[rs->nenvfid++] = fid;
    return 0;
}

/* ---- snapshots ---------------------------------------------------------------- */

typedef struct snap {
    tgW_op **ops, *opv;
    uint32_t nops;
    tgW_map opnames;        /* name -> the op it was */
    tgW_rule **rules;
    uint32_t nrules;
    tgW_rw **rws, *rwv;
    uint32_t nrws;
    tgW_reg *regs;
    uint32_t nregs;
    tg_term **src;
    uint32_t *srcfid, nsrc;
    tgW_file *files;
    uint32_t nfiles;
    tgG_rel **rels, *relv;  /* the environment's table, and its entries' contents */
    size_t nrels, relcap;
    tg_term **defs;
    uint32_t *envfid;
    size_t ndefs, nenvfid;
} snap;

static void *dup(const void *p, size_t n, size_t size)
{
    void *c = GC_MALLOC((n ? n : 1) * size);
    if (c && n)
        memcpy(c, p, n * size);
    return c;
}

static int snap_take(tg_rules *rs, snap *s)
{
    memset(s, 0, sizeof *s);
    s->nops = rs->nops, s->nrules = rs->nrules, s->nrws = rs->nrws, s->nregs = rs->nregs;
    s->nsrc = rs->nsrc, s->nfiles = rs->nfiles;
    s->ops = dup(rs->ops, rs->nops, sizeof *s->ops);
    s->opv = GC_MALLOC((rs->nops + 1) * sizeof *s->opv);
    s->rules = dup(rs->rules, rs->nrules, sizeof *s->rules);
    s->rws = dup(rs->rws, rs->nrws, sizeof *s->rws);
    s->rwv = GC_MALLOC((rs->nrws + 1) * sizeof *s->rwv);
    s->regs = dup(rs->regs, rs->nregs, sizeof *s->regs);
    s->src = dup(rs->src, rs->nsrc, sizeof *s->src);
    s->srcfid = dup(rs->srcfid, rs->nsrc, sizeof *s->srcfid);
    s->files = dup(rs->files, rs->nfiles, sizeof *s->files);
    if (!s->ops || !s->opv || !s->rules || !s->rws || !s->rwv || !s->regs || !s->src || !s->srcfid ||
        !s->files)
        return -1;
    for (uint32_t i = 0; i < rs->nops; i++) {
        s->opv[i] = *rs->ops[i];
        if (!rs->ops[i]->dead && tgW_map_put(&s->opnames, rs->ops[i]->name, rs->ops[i]) < 0)
            return -1;
    }
    for (uint32_t i = 0; i < rs->nrws; i++)
        s->rwv[i] = *rs->rws[i];
    tg_env *env = rs->env;
    if (env) {
        s->nrels = env->nrels, s->relcap = env->relcap;
        s->rels = dup(env->rels, env->relcap, sizeof *s->rels);
        s->relv = GC_MALLOC((env->relcap + 1) * sizeof *s->relv);
        s->ndefs = env->ndefs, s->nenvfid = rs->nenvfid;
        s->defs = dup(env->defs, env->ndefs, sizeof *s->defs);
        s->envfid = dup(rs->envfid, rs->nenvfid, sizeof *s->envfid);
        if (!s->rels || !s->relv || !s->defs || !s->envfid)
            return -1;
        for (size_t i = 0; i < env->relcap; i++)
            if (env->rels[i])
                s->relv[i] = *env->rels[i];
    }
    return 0;
}

/* The maps of names, from the arrays. */
static void maps_rebuild(tg_rules *rs)
{
    tgW_map_clear(&rs->opmap);
    tgW_map_clear(&rs->rulemap);
    tgW_map_clear(&rs->rwmap);
    for (uint32_t i = 0; i < rs->nops; i++)
        if (!rs->ops[i]->dead)
            tgW_map_put(&rs->opmap, rs->ops[i]->name, rs->ops[i]);
    for (uint32_t i = 0; i < rs->nrules; i++)
        if (!rs->rules[i]->backward && !tgW_map_get(&rs->rulemap, rs->rules[i]->name))
            tgW_map_put(&rs->rulemap, rs->rules[i]->name, rs->rules[i]);
    for (uint32_t i = 0; i < rs->nrws; i++)
        tgW_map_put(&rs->rwmap, rs->rws[i]->name, rs->rws[i]);
    rs->index_stale = 1;
    tgW_plans_clear(rs);
}

static void snap_restore(tg_rules *rs, snap *s)
{
    for (uint32_t i = 0; i < s->nops; i++)
        *s->ops[i] = s->opv[i];
    for (uint32_t i = 0; i < s->nrws; i++)
        *s->rws[i] = s->rwv[i];
    rs->ops = s->ops, rs->nops = s->nops, rs->capops = s->nops;
    rs->rules = s->rules, rs->nrules = s->nrules, rs->caprules = s->nrules;
    rs->rws = s->rws, rs->nrws = s->nrws, rs->caprws = s->nrws;
    rs->regs = s->regs, rs->nregs = s->nregs, rs->capregs = s->nregs;
    rs->src = s->src, rs->nsrc = s->nsrc, rs->capsrc = s->nsrc;
    rs->srcfid = s->srcfid, rs->capsrcfid = s->nsrc;
    rs->files = s->files, rs->nfiles = s->nfiles, rs->capfiles = s->nfiles;
    tg_env *env = rs->env;
    if (env && s->rels) {
        for (size_t i = 0; i < s->relcap; i++)
            if (s->rels[i])
                *s->rels[i] = s->relv[i];
        env->rels = s->rels, env->relcap = s->relcap, env->nrels = s->nrels;
        env->defs = s->defs, env->ndefs = s->ndefs, env->capdefs = s->ndefs;
        rs->envfid = s->envfid, rs->nenvfid = s->nenvfid, rs->capenvfid = s->nenvfid;
    }
    maps_rebuild(rs);
}

/* ---- what goes ------------------------------------------------------------------- */

/* What a change removes: a file's definitions (fid), or a name's. */
typedef struct drop {
    uint32_t fid;
    tg_term *name;
    tg_term *sym_defop, *sym_register, *sym_op, *sym_rule, *sym_defrel, *sym_tabled, *sym_fact,
        *sym_facts;
    int rw_gone;                /* name: a rewriter of that name goes */
    unsigned kinds;             /* TG_UNDEF_*: what went */
    /* the insertion points of a reload: where the file's first rule,
     * registration, form and relation form were */
    uint32_t at_rule, at_reg, at_src;
    size_t at_env;
    tg_term **refill;           /* fact tables emptied: other files' facts go in again */
    size_t nrefill, caprefill;
} drop;

/* The name a definition form defines (NULL: none). */
static tg_term *form_name(const drop *d, tg_term *f)
{
    if (!tgT_ispair(f) || tg_length(f) < 2)
        return NULL;
    tg_term *x = tg_nth(f, 1), *h = tg_car(f);
    if (h == d->sym_defop || h == d->sym_defrel || (h == d->sym_tabled && tgT_ispair(x)))
        return tgT_ispair(x) ? tg_car(x) : NULL;
    return tg_kind_of(x) == TG_SYMBOL ? x : NULL;
}

static int is_defop(const drop *d, const tgW_rule *r)
{
    return tgT_ispair(r->tags) && tg_car(r->tags) == d->sym_defop;
}

static int rule_goes(const drop *d, const tgW_rule *r)
{
    if (d->fid)
        return r->fid == d->fid;
    return r->name == d->name || (is_defop(d, r) && r->op->name == d->name);
}

static int src_goes(const drop *d, tg_term *form, uint32_t fid)
{
    if (d->fid)
        return fid == d->fid;
    if (tgT_ispair(form) && tg_car(form) == d->sym_register)   /* into a rewriter that goes */
        return d->rw_gone && tg_nth(form, 1) == d->name;
    return form_name(d, form) == d->name;
}

static int reg_goes(const drop *d, const tgW_reg *g)
{
    return d->fid ? g->fid == d->fid : d->rw_gone && g->target == d->name;
}

/* Whether another file than fid still has a form declaring op name. */
static uint32_t other_decl(const tg_rules *rs, const drop *d, tg_term *name)
{
    for (uint32_t i = 0; i < rs->nsrc; i++)
        if (rs->srcfid[i] != d->fid && tg_car(rs->src[i]) == d->sym_op && tg_nth(rs->src[i], 1) == name)
            return rs->srcfid[i] ? rs->srcfid[i] : UINT32_MAX;
    return 0;
}

static int refill_note(drop *d, tg_term *name)
{
    tg_term **n = tgW_grow(d->refill, d->nrefill, &d->caprefill, d->nrefill + 1, sizeof *n);
    if (!n)
        return -1;
    d->refill = n;
    d->refill[d->nrefill++] = name;
    return 0;
}

/* Undo what relation form f did to the environment. */
static int undo_relform(tg_env *env, drop *d, tg_term *f)
{
    tg_term *h = tg_car(f), *x = tg_nth(f, 1);
    if (h == d->sym_tabled && !tgT_ispair(x)) {     /* (tabled NAME ...): tabling only */
        for (tg_term *l = tg_cdr(env->ctx, f); tgT_ispair(l); l = tg_cdr(env->ctx, l)) {
            tgG_rel *r = tgG_rel_find(env, tg_car(l));
            if (r)
                r->tabled = 0;
        }
        return 0;
    }
    tg_term *name = form_name(d, f);
    tgG_rel *r = name ? tgG_rel_find(env, name) : NULL;
    if (!r)
        return 0;
    if (h == d->sym_fact || h == d->sym_facts) {
        if (r->cfn == tgF_fn) {
            r->cfn = NULL, r->cud = NULL;
            if (d->fid && refill_note(d, name) < 0)
                return -1;
        }
        return 0;
    }
    r->body = NULL, r->tabled = 0;
    return 0;
}

static int env_goes(const tg_rules *rs, const drop *d, size_t i)
{
    tg_term *f = rs->env->defs[i];
    if (d->fid)
        return i < rs->nenvfid && rs->envfid[i] == d->fid;
    return form_name(d, f) == d->name;
}

/* Take out what d says; 0, or -1 when out of memory. */
static int drop_defs(tg_rules *rs, drop *d)
{
    for (uint32_t i = 0; i < rs->nops; i++) {
        tgW_op *op = rs->ops[i];
        if (op->dead || (d->fid ? op->fid != d->fid : op->name != d->name))
            continue;
        uint32_t other = d->fid ? other_decl(rs, d, op->name) : 0;
        if (other) {    /* declared by another file too: it stays, theirs */
            op->fid = other == UINT32_MAX ? 0 : other;
            continue;
        }
        op->dead = 1;
        d->kinds |= TG_UNDEF_OP;
    }
    uint32_t n = 0;
    d->at_rule = UINT32_MAX;
    for (uint32_t i = 0; i < rs->nrules; i++)
        if (rule_goes(d, rs->rules[i])) {
            d->kinds |= TG_UNDEF_RULE;
            if (d->at_rule == UINT32_MAX)
                d->at_rule = n;
        } else
            rs->rules[n++] = rs->rules[i];
    rs->nrules = n;
    n = 0;
    for (uint32_t i = 0; i < rs->nrws; i++)
        if (d->fid ? rs->rws[i]->fid == d->fid : rs->rws[i]->name == d->name) {
            d->kinds |= rs->rws[i]->kind == TGW_QUERY ? TG_UNDEF_QUERY : TG_UNDEF_REWRITER;
            d->rw_gone = 1;
        } else
            rs->rws[n++] = rs->rws[i];
    rs->nrws = n;
    n = 0;
    d->at_reg = UINT32_MAX;
    for (uint32_t i = 0; i < rs->nregs; i++)
        if (reg_goes(d, &rs->regs[i])) {
            if (d->at_reg == UINT32_MAX)
                d->at_reg = n;
        } else
            rs->regs[n++] = rs->regs[i];
    rs->nregs = n;
    n = 0;
    d->at_src = UINT32_MAX;
    for (uint32_t i = 0; i < rs->nsrc; i++)
        if (src_goes(d, rs->src[i], rs->srcfid[i])) {
            if (d->at_src == UINT32_MAX)
                d->at_src = n;
        } else {
            rs->srcfid[n] = rs->srcfid[i];
            rs->src[n++] = rs->src[i];
        }
    rs->nsrc = n;
    d->at_env = SIZE_MAX;
    tg_env *env = rs->env;
    if (env) {
        if (tgW_env_tag(rs, 0) < 0)
            return -1;
        size_t k = 0;
        for (size_t i = 0; i < env->ndefs; i++)
            if (env_goes(rs, d, i)) {
                if (undo_relform(env, d, env->defs[i]) < 0)
                    return -1;
                d->kinds |= TG_UNDEF_RELATION;
                if (d->at_env == SIZE_MAX)
                    d->at_env = k;
            } else {
                rs->envfid[k] = rs->envfid[i];
                env->defs[k++] = env->defs[i];
            }
        env->ndefs = rs->nenvfid = k;
    }
    maps_rebuild(rs);
    return 0;
}

/* ---- linking again, and checking ------------------------------------------------ */

typedef struct problems {
    char msg[sizeof ((tg_error *)0)->message];
    int n;
    int undef;          /* say what uses it, not what it became */
} problems;

static void problem(problems *p, const char *what, tg_term *name, const char *file, int line, int col,
                    const char *fmt, tg_term *x)
{
    size_t len = strlen(p->msg), nl, xl;
    p->n++;
    if (p->n > 4) {
        if (p->n == 5)
            snprintf(p->msg + len, sizeof p->msg - len, "; and more");
        return;
    }
    const char *ns = tg_symbol_name(name, &nl), *xs = tg_symbol_name(x, &xl);
    char at[300] = "";
    if (file && line)
        snprintf(at, sizeof at, " (%s:%d:%d)", file, line, col);
    int w = snprintf(p->msg + len, sizeof p->msg - len, "%s%s %.*s%s ", p->n > 1 ? "; " : "", what, (int)nl,
                     ns ? ns : "?", at);
    if (w > 0 && (size_t)w < sizeof p->msg - len)
        len += (size_t)w;
    char f[200];
    snprintf(f, sizeof f, "%s", fmt);
    if (p->undef && strchr(f, ','))
        *strchr(f, ',') = '\0';
    snprintf(p->msg + len, sizeof p->msg - len, f, (int)xl, xs ? xs : "?");
}

/* Is h, a head r was compiled with, still the op it was?  Else its
 * problem; 0 when it is. */
static int check_op(const tg_rules *rs, const snap *s, const tgW_rule *r, tg_term *h, problems *p)
{
    tgW_op *was = h && tg_kind_of(h) == TG_SYMBOL ? tgW_map_get(&s->opnames, h) : NULL;
    if (!was || tgW_op_find(rs, h) == was)
        return 0;
    problem(p, "rule", r->name, r->file, r->line, r->col,
            tgW_op_find(rs, h) ? "was compiled with op %.*s, now declared otherwise"
                               : "uses op %.*s, no longer declared", h);
    return -1;
}

/* The heads of the applications in t (explicit stack), checked as ops. */
static void check_heads(const tg_rules *rs, const snap *s, const tgW_rule *r, tg_term *t, problems *p)
{
    size_t n = 0, cap = 64;
    tg_term **st = malloc(cap * sizeof *st);
    if (!st || !t)
        goto done;
    st[n++] = t;
    while (n) {
        tg_term *x = st[--n];
        if (!tgT_ispair(x))
            continue;
        if (check_op(rs, s, r, tg_car(x), p) < 0)
            goto done;
        tg_iter it;
        tg_iter_init(&it, x);
        for (tg_term *e; (e = tg_iter_next(&it));) {
            if (n == cap) {
                tg_term **g = realloc(st, 2 * cap * sizeof *st);
                if (!g)
                    goto done;
                st = g, cap *= 2;
            }
            st[n++] = e;
        }
    }
done:
    free(st);
}

static void check_rule(tg_rules *rs, const snap *s, const tgW_rule *r, problems *p)
{
    if (r->rel || r->body[0].op == E_CEXT)    /* a relation's rewrite, a C rewriter */
        return;
    int before = p->n;
    check_heads(rs, s, r, r->lhs, p);
    if (p->n == before)
        check_heads(rs, s, r, r->rhs, p);
    /* the conditions (the source keeps only the two sides): the ops
     * they call and the terms they hold */
    for (const tgW_ins *i = r->body; p->n == before && i->op != E_FIRE; i++)
        if (i->op == E_CALL || i->op == E_CALLT || i->op == E_CALLV || i->op == E_CALLAC || i->op == E_NORM)
            check_op(rs, s, r, r->k[i->b], p);
        else if (i->op == E_CONST)
            check_heads(rs, s, r, r->k[i->a], p);
    for (const tgW_ins *i = r->body; p->n == before && i->op != E_FIRE; i++)
        if (i->op == E_GOAL) {
            tg_term *name = tg_car(r->k[i->b]);
            if (tgD_arity(rs, name) != i->c)
                problem(p, "rule", r->name, r->file, r->line, r->col,
                        "calls relation %.*s, no longer defined so", name);
        }
}

/* Item it resolved again by name: 0, or -1 when nothing has the name. */
static int relink_item(tg_rules *rs, tgW_item *it)
{
    uint32_t first;
    it->rw = it->backward ? NULL : tgW_rw_find(rs, it->name);
    it->rel = 0;
    if (it->rw || tgW_rules_named(rs, it->name, it->backward, &first))
        return 0;
    if (it->backward && tgW_rw_find(rs, it->name))
        return -1;
    if (tgD_check(rs, it->name) == 0) {
        it->rel = 1;
        return 0;
    }
    return -1;
}

/* Every rewriter's items again: its own, then those registered into it,
 * by name; the problems of what does not resolve. */
static int relink(tg_rules *rs, problems *p)
{
    for (uint32_t i = 0; i < rs->nrws; i++) {
        tgW_rw *rw = rs->rws[i];
        if (rw->kind == TGW_QUERY) {
            tgW_rw *b = tgW_rw_find(rs, rw->base->name);
            if (!b || b == rw)
                problem(p, "query", rw->name, rw->file, rw->line, rw->col, "selects from %.*s, no longer a rewriter",
                        rw->base->name);
            else
                rw->base = b;
            for (size_t k = 0; rw->q && k < rw->q->nsub; k++)
                if (!tgW_rw_find(rs, rw->q->subname[k]))
                    problem(p, "query", rw->name, rw->file, rw->line, rw->col,
                            "has a subquery of %.*s, no longer a rewriter", rw->q->subname[k]);
            continue;
        }
        size_t n = rw->nown;
        for (uint32_t g = 0; g < rs->nregs; g++)
            if (rs->regs[g].target == rw->name)
                n += rs->regs[g].nadd;
        tgW_item *items = GC_MALLOC((n ? n : 1) * sizeof *items);
        if (!items)
            return -1;
        memcpy(items, rw->items, rw->nown * sizeof *items);
        size_t k = rw->nown;
        for (uint32_t g = 0; g < rs->nregs; g++)
            if (rs->regs[g].target == rw->name) {
                memcpy(items + k, rs->regs[g].add, rs->regs[g].nadd * sizeof *items);
                k += rs->regs[g].nadd;
                rs->regs[g].rw = rw;
            }
        for (size_t j = 0; j < n; j++)
            if (relink_item(rs, &items[j]) < 0 || items[j].rw == rw) {
                if (j < rw->nown)
                    problem(p, "rewriter", rw->name, rw->file, rw->line, rw->col,
                            "names %.*s, no longer a rule, rewriter or relation of two arguments", items[j].name);
                else
                    problem(p, "the registration into", rw->name, NULL, 0, 0,
                            "of %.*s, no rule, rewriter or relation now", items[j].name);
            }
        rw->items = items, rw->nitems = n;
    }
    for (uint32_t g = 0; g < rs->nregs; g++)
        if (!tgW_rw_find(rs, rs->regs[g].target))
            problem(p, "a register form into", rs->regs[g].target, rs->regs[g].file, rs->regs[g].line,
                    rs->regs[g].col, "has nothing to register into, %.*s being no rewriter now", rs->regs[g].target);
    return 0;
}

/* Everything that stays, linked and checked; the rules of file fresh and
 * of files new since s are new (compiled against the ops as they are). */
static int check_all(tg_rules *rs, const snap *s, uint32_t fresh, problems *p)
{
    for (uint32_t i = 0; i < rs->nrules; i++)
        if (!fresh || (rs->rules[i]->fid != fresh && rs->rules[i]->fid <= s->nfiles))
            check_rule(rs, s, rs->rules[i], p);
    return relink(rs, p);
}

/* ---- tg_rules_undef ------------------------------------------------------------- */

static int drop_init(tg_rules *rs, drop *d, uint32_t fid, tg_term *name)
{
    memset(d, 0, sizeof *d);
    d->fid = fid, d->name = name;
    tg_ctx *c = rs->ctx;
    d->sym_defop = tg_symbol_cstr(c, "defop"), d->sym_register = tg_symbol_cstr(c, "register");
    d->sym_op = tg_symbol_cstr(c, "op"), d->sym_rule = tg_symbol_cstr(c, "rule");
    d->sym_defrel = tg_symbol_cstr(c, "defrel"), d->sym_tabled = tg_symbol_cstr(c, "tabled");
    d->sym_fact = tg_symbol_cstr(c, "fact"), d->sym_facts = tg_symbol_cstr(c, "facts");
    return d->sym_defop && d->sym_register && d->sym_op && d->sym_rule && d->sym_defrel && d->sym_tabled &&
                   d->sym_fact && d->sym_facts
               ? 0
               : -1;
}

int tg_rules_undef(tg_rules *rs, tg_term *name, tg_error *err)
{
    if (!rs || !name)
        return tgE_arg(err, "tg_rules_undef: NULL argument"), -1;
    size_t nl;
    const char *ns = tg_symbol_name(name, &nl);
    if (!ns)
        return tgE_arg(err, "tg_rules_undef: the name must be a symbol"), -1;
    snap s;
    drop d;
    problems p = {"", 0, 1};
    if (snap_take(rs, &s) < 0 || drop_init(rs, &d, 0, name) < 0)
        return tgE_nomem(err), -1;
    if (drop_defs(rs, &d) < 0 || check_all(rs, &s, 0, &p) < 0) {
        snap_restore(rs, &s);
        return tgE_nomem(err), -1;
    }
    if (!d.kinds) {
        snap_restore(rs, &s);
        tgE_set(err, TG_ERR_ARG, NULL, 0, 0,
                "%.*s is not defined (no op, rule, rewriter, query or relation of that name defined by a form)",
                (int)nl, ns);
        return -1;
    }
    if (p.n) {
        snap_restore(rs, &s);
        tgE_set(err, TG_ERR_ARG, NULL, 0, 0, "cannot undef %.*s, still used: %s (nothing changed)", (int)nl, ns, p.msg);
        return -1;
    }
    return (int)d.kinds;
}

/* ---- tg_rules_reload_file ---------------------------------------------------------- */

/* Move the elements [from, n) of arr (size bytes each) to position at. */
static void splice(void *arr, size_t at, size_t from, size_t n, size_t size)
{
    if (at >= from || from >= n)
        return;
    char *a = arr;
    size_t k = (n - from) * size, m = (from - at) * size;
    char *tmp = malloc(k);
    if (!tmp)
        return;     /* the order stays as loaded: still a correct rule set */
    memcpy(tmp, a + from * size, k);
    memmove(a + at * size + k, a + at * size, m);
    memcpy(a + at * size, tmp, k);
    free(tmp);
}

/* Files no longer loaded at the top nor included by one that is: their
 * definitions go too. */
static int drop_unreached(tg_rules *rs)
{
    size_t nf = rs->nfiles;
    char *seen = calloc(nf + 1, 1);
    uint32_t *st = malloc((nf + 1) * sizeof *st);
    int rc = 0;
    if (!seen || !st) {
        rc = -1;
        goto done;
    }
    size_t n = 0;
    for (uint32_t i = 0; i < nf; i++)
        if (rs->files[i].live && rs->files[i].root)
            st[n++] = i + 1, seen[i + 1] = 1;
    while (n) {
        const tgW_file *f = &rs->files[st[--n] - 1];
        for (size_t j = 0; j < f->ninc; j++)
            if (!seen[f->inc[j]] && rs->files[f->inc[j] - 1].live)
                seen[f->inc[j]] = 1, st[n++] = f->inc[j];
    }
    for (uint32_t i = 0; i < nf && rc == 0; i++)
        if (rs->files[i].live && !seen[i + 1]) {
            drop d;
            if (drop_init(rs, &d, i + 1, NULL) < 0 || drop_defs(rs, &d) < 0)
                rc = -1;
            rs->files[i].live = 0;
        }
done:
    free(seen);
    free(st);
    return rc;
}

/* The facts of other files for the fact tables a reload emptied. */
static int refill(tg_rules *rs, const drop *d, tg_error *err)
{
    tg_env *env = rs->env;
    if (!env || !d->nrefill)
        return 0;
    size_t n = env->ndefs;
    int logging = env->logging;
    env->logging = 0;   /* they are in the log already */
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        tg_term *f = env->defs[i];
        if (tg_car(f) != d->sym_fact && tg_car(f) != d->sym_facts)
            continue;
        for (size_t k = 0; k < d->nrefill; k++)
            if (tg_nth(f, 1) == d->refill[k]) {
                rc = tg_eval(env, f, NULL, NULL, NULL, err) < 0 ? -1 : 0;
                break;
            }
    }
    env->logging = logging;
    return rc;
}

long tg_rules_reload_file(tg_rules *rs, const char *path, tg_error *errs, size_t max)
{
    if (!errs || !max)
        return -1;
    for (size_t i = 0; i < max; i++)
        tg_error_clear(&errs[i]);
    if (!rs || !path)
        return tgE_arg(&errs[0], "tg_rules_reload_file: NULL argument"), 1;
    char *real = realpath(path, NULL);
    uint32_t fid = real ? tgW_file_find(rs, real) : 0;
    free(real);
    if (!fid)   /* not loaded (or not there: the load says so) */
        return tg_rules_check_file(rs, path, errs, max);
    snap s;
    drop d;
    if (snap_take(rs, &s) < 0 || drop_init(rs, &d, fid, NULL) < 0)
        return tgE_nomem(&errs[0]), 1;
    tgW_file *f = &rs->files[fid - 1];
    f->inc = NULL, f->ninc = f->capinc = 0;     /* its includes as the new version says */
    f->live = 0;
    long rc = -1;
    if (drop_defs(rs, &d) < 0) {
        tgE_nomem(&errs[0]);
        goto fail;
    }
    f->live = 1;
    uint32_t nrules = rs->nrules, nregs = rs->nregs, nsrc = rs->nsrc;
    size_t nenv = rs->env ? rs->env->ndefs : 0;
    rs->reloading = fid;
    rc = tg_rules_check_file(rs, path, errs, max);
    rs->reloading = 0;
    if (rc != 0)
        goto fail;
    rc = 1;
    /* the new version's definitions where the old ones were */
    uint32_t at = d.at_rule == UINT32_MAX ? nrules : d.at_rule;
    splice(rs->rules, at, nrules, rs->nrules, sizeof *rs->rules);
    if (d.at_reg != UINT32_MAX)
        splice(rs->regs, d.at_reg, nregs, rs->nregs, sizeof *rs->regs);
    if (d.at_src != UINT32_MAX) {
        splice(rs->src, d.at_src, nsrc, rs->nsrc, sizeof *rs->src);
        splice(rs->srcfid, d.at_src, nsrc, rs->nsrc, sizeof *rs->srcfid);
    }
    if (rs->env && d.at_env != SIZE_MAX && tgW_env_tag(rs, 0) == 0) {
        splice(rs->env->defs, d.at_env, nenv, rs->env->ndefs, sizeof *rs->env->defs);
        splice(rs->envfid, d.at_env, nenv, rs->nenvfid, sizeof *rs->envfid);
    }
    problems p = {"", 0, 0};
    if (drop_unreached(rs) < 0 || refill(rs, &d, &errs[0]) < 0 ||
        check_all(rs, &s, fid, &p) < 0) {
        if (!errs[0].message[0])
            tgE_nomem(&errs[0]);
        goto fail;
    }
    if (p.n) {
        tgE_set(&errs[0], TG_ERR_ARG, NULL, 0, 0, "cannot reload %s, what other files define would break: %s (nothing changed)", path, p.msg);
        goto fail;
    }
    maps_rebuild(rs);
    return 0;
fail:
    snap_restore(rs, &s);
    return rc;
}
