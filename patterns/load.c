/* load.c - rule sets (the public tg_rules API) and the reader of .rules
 * files: each form handed to what loads it, includes, the relation forms
 * handed to the logic core, and the checks once a file is read.
 *
 * A load is all or nothing: what a file adds is undone when any of its
 * forms (or of the files it includes) is bad, so a rule set never holds
 * half a file.  Op declarations, rules and rewriters are parsed in
 * load_forms.c; the forms that extend what is loaded (register,
 * defquery) and defop are in defs.c.
 */
#include "compile.h"
#include "dispatch.h"
#include "rewriters.h"
#include "relrw.h"
#include "prov.h"
#include "scanopt.h"
#include "error.h"
#include "reader.h"
#include "load_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <gc/gc.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- ops and rules ----------------------------------------------------- */

tgW_op *tgW_op_find(const tg_rules *rs, const tg_term *name)
{
    return tgW_map_get(&rs->opmap, name);
}

int tgW_same_decl(const tgW_op *a, const tgW_op *b)
{
    return a->amin == b->amin && a->amax == b->amax && a->flags == b->flags;
}

int tgW_ops_push(tg_rules *rs, tgW_op *op)
{
    op->fid = rs->fid;
    /* an op a reload removed (unload.c) and declares again keeps its
     * id: rules of other files were compiled with it (outside a reload
     * no rule uses a removed op: tg_rules_undef refuses) */
    for (uint32_t i = 0; rs->reloading && i < rs->nops; i++)
        if (rs->ops[i]->dead && rs->ops[i]->name == op->name) {
            if (tgW_same_decl(rs->ops[i], op) && rs->ops[i]->props == op->props)
                op = rs->ops[i], op->dead = 0, op->fid = rs->fid;
            op->id = i;
            rs->ops[i] = op;
            tgW_plans_clear(rs);
            return tgW_map_put(&rs->opmap, op->name, op);
        }
    tgW_op **n = tgW_grow(rs->ops, rs->nops, &rs->capops, rs->nops + 1, sizeof *n);
    if (!n)
        return -1;
    rs->ops = n;
    op->id = rs->nops;
    rs->ops[rs->nops++] = op;
    tgW_plans_clear(rs);
    return tgW_map_put(&rs->opmap, op->name, op);
}

int tgW_rules_push(tg_rules *rs, tgW_rule *r)
{
    r->fid = rs->fid;
    tgW_rule **n = tgW_grow(rs->rules, rs->nrules, &rs->caprules, rs->nrules + 1, sizeof *n);
    if (!n)
        return -1;
    rs->rules = n;
    rs->rules[rs->nrules++] = r;
    rs->index_stale = 1;
    tgW_plans_clear(rs);
    if (!r->backward && !tgW_map_get(&rs->rulemap, r->name))
        return tgW_map_put(&rs->rulemap, r->name, r);
    return 0;
}

/* The self loops of one op's rules that the machine may run as loops
 * in this index (rset.h): none when memory runs out, and the rules then
 * run one call at a time. */
static void index_loops(const tg_rules *rs, struct tgW_byop *b)
{
    uint32_t k = 0;
    b->loops = NULL, b->nloops = 0;
    for (uint32_t i = 0; i < b->n; i++)
        k += b->r[i]->loop != NULL;
    if (!k || !(b->loops = GC_MALLOC(k * sizeof *b->loops)))
        return;
    for (uint32_t i = 0; i < b->n; i++)
        if (tgW_loop_safe(rs, b->r, i))
            b->loops[b->nloops++] = b->r[i];
}

int tgW_index_build(tg_rules *rs, tgW_index *ix, tgW_rule *const *rules, uint32_t n)
{
    struct tgW_byop *by = GC_MALLOC((rs->nops ? rs->nops : 1) * sizeof *by);
    tgW_rule **all = GC_MALLOC((n ? n : 1) * sizeof *all);
    if (!by || !all)
        return -1;
    /* a rule for any op (TGW_ANYOP: a C rewriter) goes in every op's list */
    size_t nany = 0;
    for (uint32_t i = 0; i < n; i++)
        if (rules[i]->op->id == TGW_ANYOP)
            nany++;
        else
            by[rules[i]->op->id].n++;
    if (nany && rs->nops &&
        !(all = GC_MALLOC((n + nany * rs->nops) * sizeof *all)))
        return -1;
    tgW_rule **p = all;
    for (uint32_t o = 0; o < rs->nops; o++) {
        by[o].r = p;
        p += by[o].n + nany;
        by[o].n = 0;
    }
    for (uint32_t i = 0; i < n; i++) {
        if (rules[i]->op->id == TGW_ANYOP) {
            for (uint32_t o = 0; o < rs->nops; o++)
                by[o].r[by[o].n++] = rules[i];
            continue;
        }
        struct tgW_byop *b = &by[rules[i]->op->id];
        b->r[b->n++] = rules[i];
    }
    tg_term *quote = tg_symbol_cstr(rs->ctx, "quote");
    for (uint32_t o = 0; o < rs->nops && quote; o++)
        by[o].disp = tgW_disp_build(by[o].r, by[o].n, quote);
    for (uint32_t o = 0; o < rs->nops; o++)
        index_loops(rs, &by[o]);
    ix->by = by;
    ix->nops = rs->nops;
    return 0;
}

int tgW_rule_add(tg_rules *rs, tgW_rule *r)
{
    return tgW_rules_push(rs, r);
}

/* The index of every forward rule, for tg_normalize. */
static int index_all(tg_rules *rs)
{
    if (!rs->index_stale)
        return 0;
    tgW_rule **fw = GC_MALLOC((rs->nrules ? rs->nrules : 1) * sizeof *fw);
    if (!fw)
        return -1;
    uint32_t n = 0;
    for (uint32_t i = 0; i < rs->nrules; i++)
        if (!rs->rules[i]->backward)
            fw[n++] = rs->rules[i];
    if (tgW_index_build(rs, &rs->all, fw, n) < 0)
        return -1;
    rs->index_stale = 0;
    return 0;
}

/* Undo a failed load: ops and rules beyond the counts go, and the maps
 * are rebuilt from what stays. */
static void rollback(tg_rules *rs, uint32_t nops, uint32_t nrules, uint32_t nrws, uint32_t nsrc)
{
    rs->nsrc = nsrc;
    rs->nops = nops;
    rs->nrules = nrules;
    rs->nrws = nrws;
    tgW_map_clear(&rs->opmap);
    tgW_map_clear(&rs->rulemap);
    tgW_map_clear(&rs->rwmap);
    for (uint32_t i = 0; i < nrws; i++)
        tgW_map_put(&rs->rwmap, rs->rws[i]->name, rs->rws[i]);
    for (uint32_t i = 0; i < nops; i++)
        if (!rs->ops[i]->dead)
            tgW_map_put(&rs->opmap, rs->ops[i]->name, rs->ops[i]);
    for (uint32_t i = 0; i < nrules; i++)
        if (!rs->rules[i]->backward && !tgW_map_get(&rs->rulemap, rs->rules[i]->name))
            tgW_map_put(&rs->rulemap, rs->rules[i]->name, rs->rules[i]);
    rs->index_stale = 1;
    tgW_plans_clear(rs);
}

/* Undo the registrations after the first nregs (newest first): each
 * rewriter gets back the items it had. */
static void unregister(tg_rules *rs, uint32_t nregs)
{
    while (rs->nregs > nregs) {
        tgW_reg *r = &rs->regs[--rs->nregs];
        r->rw->items = r->items;
        r->rw->nitems = r->nitems;
    }
    tgW_plans_clear(rs);
}

/* ---- loading ------------------------------------------------------------ */

const char *const tgW_form_names[NF] = {
    "op", "rule", "include", "defrel", "tabled", "fact", "facts", "arity", "assoc", "comm",
    "=>", "<=>", "when", "normalize", "memo", "run", "run*", "tags", "equilibrium", "walk",
    "sequence", "order", "in-to-out", "out-to-in", "max-use-ratio", "reverse", "query", "include",
    "require", "exclude", "subquery", "rewrite", "profile", "trace", "on", "off", "provenance", "why",
    "register", "defquery", "defop"
};


/* Where subterm sub of the current form was read: its own position
 * when the reader knows it, else the form's. */
void tgW_form_pos(void *ud, const tg_term *sub, int *line, int *col)
{
    loader *L = ud;
    *line = L->line, *col = L->col;
    if (L->rd && sub && tgR_pos(L->rd, sub, line, col) < 0)
        *line = L->line, *col = L->col;
}

void tgW_lerr(loader *L, const tg_term *at, const char *fmt, ...)
{
    int line, col;
    tgW_form_pos(L, at, &line, &col);
    va_list ap;
    va_start(ap, fmt);
    tgE_setv(L->err, TG_ERR_SYNTAX, L->file, L->file ? line : 0, L->file ? col : 0, fmt, ap);
    va_end(ap);
}

int tgW_lerr_term(loader *L, const tg_term *at, const char *fmt, const tg_term *t)
{
    return tgW_lerr_terms(L, at, fmt, t, NULL);
}

int tgW_lerr_terms(loader *L, const tg_term *at, const char *fmt, const tg_term *t, const tg_term *u)
{
    char *p = tgW_show(t), *q = u ? tgW_show(u) : NULL;
    tgW_lerr(L, at, fmt, p ? p : "?", q ? q : "?");     /* fmt may leave the second unused */
    free(p);
    free(q);
    return -1;
}

static int load_text(loader *L, const char *text, size_t len, const char *file);

/* The directory part of path (up to and including the last '/'), joined
 * with name when name is relative. */
static char *resolve_path(const char *from, const char *name)
{
    if (name[0] == '/' || !from || !strchr(from, '/'))
        return strdup(name);
    size_t d = (size_t)(strrchr(from, '/') - from) + 1;
    char *p = malloc(d + strlen(name) + 1);
    if (!p)
        return NULL;
    memcpy(p, from, d);
    strcpy(p + d, name);
    return p;
}

#ifndef TGREL_RULESDIR
#define TGREL_RULESDIR ""
#endif

/* A relative include not found beside the including file: the first
 * readable name/dir in $TGREL_RULES_PATH (directories separated by
 * colons), then in the installed rule library; NULL when none. */
static char *search_rules_path(const char *name)
{
    const char *env = getenv("TGREL_RULES_PATH");
    const char *lists[2] = {env ? env : "", TGREL_RULESDIR};
    for (int l = 0; l < 2; l++)
        for (const char *d = lists[l]; *d;) {
            size_t dl = strcspn(d, ":");
            char *p = dl ? malloc(dl + strlen(name) + 2) : NULL;
            if (p) {
                memcpy(p, d, dl);
                p[dl] = '/';
                strcpy(p + dl + 1, name);
                if (access(p, R_OK) == 0)
                    return p;
                free(p);
            }
            d += dl + (d[dl] == ':');
        }
    return NULL;
}

/* Remember an included file (its real path), so that including it again
 * in the same load reads nothing: library files include what they
 * build on (fold.rules includes tensor.rules), and all.rules includes them
 * all. */
static int note_done(loader *L, const char *key)
{
    if (L->ndone == L->capdone) {
        size_t cap = L->capdone ? 2 * L->capdone : 8;
        const char **d = GC_MALLOC(cap * sizeof *d);
        if (!d)
            return tgE_nomem(L->err), -1;
        if (L->ndone)
            memcpy(d, L->done, L->ndone * sizeof *d);
        L->done = d, L->capdone = cap;
    }
    char *k = GC_MALLOC_ATOMIC(strlen(key) + 1);
    if (!k)
        return tgE_nomem(L->err), -1;
    L->done[L->ndone++] = strcpy(k, key);
    return 0;
}

static int load_include(loader *L, tg_term *form)
{
    tg_term *f = tg_length(form) == 2 ? tg_nth(form, 1) : NULL;
    if (!f || tg_kind_of(f) != TG_STRING) {
        tgW_lerr(L, form, "malformed include: (include \"file.rules\")");
        return -1;
    }
    size_t flen;
    const char *fs = tg_string_bytes(f, &flen);
    char *name = strndup(fs, flen);
    char *path = name ? resolve_path(L->file, name) : NULL;
    if (path && name[0] != '/' && access(path, R_OK) != 0) {
        char *found = search_rules_path(name);
        if (found)
            free(path), path = found;
    }
    free(name);
    if (!path)
        return tgE_nomem(L->err), -1;
    char *real = realpath(path, NULL);
    const char *key = real ? real : path;
    for (int i = 0; i < L->nfiles; i++)
        if (L->files[i] && !strcmp(L->files[i], key)) {
            char chain[300] = "";
            size_t cl = 0;
            for (int j = i; j < L->nfiles && cl < sizeof chain - 40; j++) {
                const char *b = strrchr(L->files[j], '/');
                int w = snprintf(chain + cl, sizeof chain - cl, "%s -> ", b ? b + 1 : L->files[j]);
                if (w > 0)
                    cl += (size_t)w;
            }
            const char *b = strrchr(key, '/');
            tgW_lerr(L, form, "include cycle: %s%s", chain, b ? b + 1 : key);
            free(real);
            free(path);
            return -1;
        }
    /* a file is read once: in this load, or by an earlier one whose
     * definitions are still in (reloading it is how to read it again) */
    uint32_t had = tgW_file_find(L->rs, key);
    for (size_t i = 0; !had && i < L->ndone; i++)
        had = !strcmp(L->done[i], key) ? UINT32_MAX : 0;
    if (had) {
        int rc = had == UINT32_MAX ? 0 : tgW_file_edge(L->rs, L->rs->fid, had);
        free(real);
        free(path);
        return rc < 0 ? (tgE_nomem(L->err), -1) : 0;
    }
    if (L->nfiles == MAX_INCLUDE) {
        tgW_lerr(L, form, "includes nested more than %d deep", MAX_INCLUDE);
        free(real);
        free(path);
        return -1;
    }
    size_t len;
    tg_error e2;
    char *text = tg_slurp_file(path, &len, &e2);
    if (!text && fs[0] != '/' && access(path, F_OK) != 0) {
        const char *env = getenv("TGREL_RULES_PATH");
        tgW_lerr(L, form, "cannot include %.*s: not found as %s, nor in TGREL_RULES_PATH (%s), "
             "nor in the installed rule library (%s)", (int)flen, fs, path,
             env && *env ? env : "not set", *TGREL_RULESDIR ? TGREL_RULESDIR : "none");
        free(real);
        free(path);
        return -1;
    }
    if (!text) {
        tgW_lerr(L, form, "cannot include %s: %s", path, e2.message);
        free(real);
        free(path);
        return -1;
    }
    const char *saved_file = L->file;
    int sl = L->line, sc = L->col;
    tg_reader *srd = L->rd;
    uint32_t fid = tgW_file_add(L->rs, key, path, 0), outer = L->rs->fid;
    if (!fid || tgW_file_edge(L->rs, outer, fid) < 0) {
        free(text);
        free(real);
        free(path);
        return tgE_nomem(L->err), -1;
    }
    L->files[L->nfiles++] = key;
    L->rs->fid = fid;
    int rc = load_text(L, text, len, path);
    L->rs->fid = outer;
    L->nfiles--;
    L->file = saved_file, L->line = sl, L->col = sc, L->rd = srd;
    free(text);
    if (rc == 0 && note_done(L, key) < 0)
        rc = -1;
    free(real);
    free(path);
    return rc;
}

/* Where a call in a relation's body was read: the logic core's errors
 * at run time (an undefined relation, a wrong number of arguments) point
 * at it (tg_env's where). */
struct srcpos {
    const char *file;
    int line, col;
};

static int where_read(void *ud, const tg_term *t, const char **file, int *line, int *col)
{
    const struct srcpos *p = tgW_map_get(&((tg_rules *)ud)->srcpos, t);
    if (!p)
        return -1;
    *file = p->file, *line = p->line, *col = p->col;
    return 0;
}

/* Note where each application inside a relation form was read (the
 * first place, for a term written twice); the reader knows when L->rd
 * is set.  An explicit stack: forms of any depth. */
static int note_positions(loader *L, tg_term *form)
{
    if (!L->rd)
        return 0;
    size_t n = 0, cap = 64;
    tg_term **st = malloc(cap * sizeof *st);
    if (!st)
        return tgE_nomem(L->err), -1;
    st[n++] = form;
    int rc = 0;
    while (n && rc == 0) {
        tg_term *t = st[--n];
        int line, col;
        if (!tgT_ispair(t) || tgW_map_get(&L->rs->srcpos, t))
            continue;
        if (tg_kind_of(tg_car(t)) == TG_SYMBOL && tgR_pos(L->rd, t, &line, &col) == 0) {
            struct srcpos *p = GC_MALLOC(sizeof *p);
            if (!p || tgW_map_put(&L->rs->srcpos, t, p) < 0) {
                rc = -1;
                break;
            }
            p->file = L->file, p->line = line, p->col = col;
        }
        tg_iter it;
        tg_iter_init(&it, t);
        for (tg_term *x; rc == 0 && (x = tg_iter_next(&it));) {
            if (n == cap) {
                tg_term **g = realloc(st, 2 * cap * sizeof *st);
                if (!g) {
                    rc = -1;
                    break;
                }
                st = g, cap *= 2;
            }
            st[n++] = x;
        }
    }
    free(st);
    if (rc < 0)
        tgE_nomem(L->err);
    return rc;
}

static int stage_def(loader *L, tg_term *form)
{
    if (note_positions(L, form) < 0)
        return -1;
    if (L->ndefs == L->capdefs) {
        size_t cap = L->capdefs ? 2 * L->capdefs : 16;
        tg_term **d = GC_MALLOC(cap * sizeof *d);
        const char **df = GC_MALLOC(cap * sizeof *df);
        int *dl = GC_MALLOC_ATOMIC(cap * sizeof *dl), *dc = GC_MALLOC_ATOMIC(cap * sizeof *dc);
        uint32_t *dd = GC_MALLOC_ATOMIC(cap * sizeof *dd);
        if (!d || !df || !dl || !dc || !dd)
            return tgE_nomem(L->err), -1;
        if (L->ndefs) {
            memcpy(dd, L->deffid, L->ndefs * sizeof *dd);
            memcpy(d, L->defs, L->ndefs * sizeof *d);
            memcpy(df, L->deffile, L->ndefs * sizeof *df);
            memcpy(dl, L->defline, L->ndefs * sizeof *dl);
            memcpy(dc, L->defcol, L->ndefs * sizeof *dc);
        }
        L->defs = d, L->deffile = df, L->defline = dl, L->defcol = dc, L->deffid = dd;
        L->capdefs = cap;
    }
    char *f = GC_MALLOC_ATOMIC(strlen(L->file) + 1);
    if (!f)
        return tgE_nomem(L->err), -1;
    strcpy(f, L->file);
    L->defs[L->ndefs] = form;
    L->deffile[L->ndefs] = f;
    L->defline[L->ndefs] = L->line;
    L->defcol[L->ndefs] = L->col;
    L->deffid[L->ndefs] = L->rs->fid;
    L->ndefs++;
    return 0;
}

int tgW_log_src(tg_rules *rs, tg_term *form)
{
    tg_term **n = form ? tgW_grow(rs->src, rs->nsrc, &rs->capsrc, rs->nsrc + 1, sizeof *n) : NULL;
    if (!n)
        return -1;
    rs->src = n;
    uint32_t *f = tgW_grow(rs->srcfid, rs->nsrc, &rs->capsrcfid, rs->nsrc + 1, sizeof *f);
    if (!f)
        return -1;
    rs->srcfid = f;
    f[rs->nsrc] = rs->fid;
    rs->src[rs->nsrc++] = form;
    return 0;
}

/* Note a definition loaded (rset.h: src) when rc says it was; the
 * include form itself is not one: its file's forms are. */
static int log_src(loader *L, tg_term *form, int rc)
{
    if (rc >= 0 && tgW_log_src(L->rs, form) < 0)
        return tgE_nomem(L->err), -1;
    return rc;
}

static int load_form(loader *L, tg_term *form)
{
    tg_term *h = tgT_ispair(form) ? tg_car(form) : NULL;
    if (h == L->sym[F_OP])
        return log_src(L, form, tgW_load_op(L, form));
    if (h == L->sym[F_RULE])
        return log_src(L, form, tgW_load_rule(L, form));
    if (h == L->sym[F_INCLUDE])
        return load_include(L, form);
    if (h == L->sym[F_EQUIL])
        return log_src(L, form, tgW_load_rewriter(L, form, TGW_EQUIL));
    if (h == L->sym[F_WALK])
        return log_src(L, form, tgW_load_rewriter(L, form, TGW_WALK_IN));
    if (h == L->sym[F_SEQ])
        return log_src(L, form, tgW_load_rewriter(L, form, TGW_SEQ));
    if (h == L->sym[F_REGISTER])
        return log_src(L, form, tgW_load_register(L, form));
    if (h == L->sym[F_DEFQUERY])
        return log_src(L, form, tgW_load_defquery(L, form));
    if (h == L->sym[F_DEFOP])
        return log_src(L, form, tgW_load_defop(L, form));
    if (h && (h == L->sym[F_DEFREL] || h == L->sym[F_TABLED] || h == L->sym[F_FACT] ||
              h == L->sym[F_FACTS]))
        return stage_def(L, form);
    if (L->skip_evals)
        return 0;   /* a form to evaluate: the caller's (tg_rules_load_file_defs) */
    return tgW_lerr_term(L, form, "unknown form %s (expected op, rule, include, defrel, ...)", form);
}

/* An error of a form of the file itself (not of an include): with
 * tg_rules_check_file, kept and cleared so that reading goes on, while
 * there is room for it (1); otherwise 0: the load stops. */
static int note_error(loader *L)
{
    if (!L->errs || L->depth != 1 || L->err->code == TG_ERR_NOMEM || L->nerrs >= L->maxerrs)
        return 0;
    L->errs[L->nerrs++] = *L->err;
    tg_error_clear(L->err);
    return L->nerrs < L->maxerrs;
}

static int load_text(loader *L, const char *text, size_t len, const char *file)
{
    tg_reader *rd = tg_reader_new(L->rs->ctx, text, len, file, L->err);
    if (!rd)
        return -1;
    tg_reader *outer_rd = L->rd;
    const char *outer_file = L->file;
    L->rd = rd;
    tgR_track_positions(rd, 1);
    /* ops, rules and rewriters keep the name: a copy in collector memory
     * (the caller's string, an include's path, may be freed once loaded) */
    const char *name = file ? file : "<string>";
    char *copy = GC_MALLOC_ATOMIC(strlen(name) + 1);
    if (!copy) {
        tg_reader_free(rd);
        return tgE_nomem(L->err), -1;
    }
    L->file = strcpy(copy, name);
    int rc;
    tg_term *form;
    L->depth++;
    for (;;) {
        rc = tg_reader_next(rd, &form, L->err);
        if (rc == 0)
            break;
        if (rc > 0) {
            tg_reader_last_pos(rd, &L->line, &L->col);
            rc = load_form(L, form);
        }
        if (rc < 0) {
            if (!note_error(L))
                break;
            rc = 0;
        }
    }
    tg_reader_free(rd);
    L->rd = outer_rd;       /* an include's forms are done: the includer's go on */
    L->file = outer_file;
    L->depth--;
    return rc < 0 || (L->depth == 0 && L->nerrs) ? -1 : 0;
}

/* The logic environment, made on first use with the relations the rule
 * library names (scanopt.h: the Scan rewrites). */
static tg_env *rules_env(tg_rules *rs, tg_error *err)
{
    if (!rs->env && (rs->env = tg_env_new(rs->ctx, err)) &&
        tgSo_define(rs->env, rs->ctx, err) < 0) {
        tg_env_free(rs->env);
        rs->env = NULL;
    }
    if (rs->env)
        rs->env->where = where_read, rs->env->where_ud = rs;
    return rs->env;
}

/* Relation forms go to the logic core once every rule form is good. */
static int eval_defs(loader *L)
{
    if (!L->ndefs)
        return 0;
    tg_env *env = rules_env(L->rs, L->err);
    if (!env)
        return -1;
    for (size_t i = 0; i < L->ndefs; i++)
        if (tgW_env_tag(L->rs, 0) < 0 || tg_eval(env, L->defs[i], NULL, NULL, NULL, L->err) < 0 ||
            tgW_env_tag(L->rs, L->deffid[i]) < 0) {
            if (L->err && !L->err->line) {
                char msg[sizeof L->err->message];
                memcpy(msg, L->err->message, sizeof msg);
                tgE_set(L->err, L->err->code, L->deffile[i], L->defline[i], L->defcol[i], "%s", msg);
            }
            return -1;
        }
    return 0;
}

/* The relations called by the conditions of rule r must now be defined,
 * with that many arguments. */
static int check_goals(loader *L, const tgW_rule *r)
{
    for (const tgW_ins *i = r->body; i->op != E_FIRE; i++) {
        if (i->op != E_GOAL)
            continue;
        tg_term *d = r->k[i->b], *name = tg_car(d);
        long a = tgD_arity(L->rs, name);
        if (a == i->c)
            continue;
        int64_t line = 0, col = 0;
        tg_int_get(tg_nth(d, 2), &line);
        tg_int_get(tg_nth(d, 3), &col);
        size_t n;
        const char *s = tg_symbol_name(name, &n);
        char *g = tgW_show(tg_nth(d, 4));
        if (a < 0)
            tgE_set(L->err, TG_ERR_SYNTAX, r->file, (int)line, (int)col,
                    "unknown condition or relation %.*s (define it with defrel) in %s", (int)n, s,
                    g ? g : "?");
        else
            tgE_set(L->err, TG_ERR_SYNTAX, r->file, (int)line, (int)col,
                    "relation %.*s takes %ld argument%s, called with %u in %s", (int)n, s, a,
                    a == 1 ? "" : "s", (unsigned)i->c, g ? g : "?");
        free(g);
        return -1;
    }
    return 0;
}

/* The relations named as rewriter items must now be relations of two
 * arguments, and those the new rules' conditions call must exist. */
static int check_relrefs(loader *L, uint32_t nrules)
{
    int goals = 0;
    for (uint32_t i = nrules; i < L->rs->nrules && !goals; i++)
        for (const tgW_ins *p = L->rs->rules[i]->body; p->op != E_FIRE; p++)
            goals |= p->op == E_GOAL;
    if (!L->nrelrefs && !goals)
        return 0;
    if (!rules_env(L->rs, L->err))
        return -1;
    for (uint32_t i = nrules; i < L->rs->nrules; i++)
        if (check_goals(L, L->rs->rules[i]) < 0)
            return -1;
    for (size_t i = 0; i < L->nrelrefs; i++) {
        const struct relref *r = &L->relrefs[i];
        long a = tgD_check(L->rs, r->name);
        if (!a)
            continue;
        size_t n;
        const char *s = tg_symbol_name(r->name, &n);
        if (a < 0)
            tgE_set(L->err, TG_ERR_SYNTAX, r->file, r->line, r->col,
                    "unknown rule, rewriter or relation %.*s%s", (int)n, s,
                    r->backward ? " in (reverse ...)" : "");
        else
            tgE_set(L->err, TG_ERR_SYNTAX, r->file, r->line, r->col,
                    "relation %.*s takes %ld argument%s: a rewrite needs a relation of 2", (int)n, s,
                    a, a == 1 ? "" : "s");
        return -1;
    }
    return 0;
}

static int loader_init(loader *L, tg_rules *rs, tg_error *err)
{
    memset(L, 0, sizeof *L);
    L->rs = rs;
    L->err = err;
    if (!rs->forms) {   /* interned once per rule set, not per form */
        tg_term **f = GC_MALLOC(NF * sizeof *f);
        if (!f)
            return tgE_nomem(err), -1;
        for (int i = 0; i < NF; i++)
            if (!(f[i] = tg_symbol_cstr(rs->ctx, tgW_form_names[i])))
                return tgE_nomem(err), -1;
        rs->forms = f;
    }
    L->sym = rs->forms;
    return 0;
}

static long load(tg_rules *rs, const char *text, size_t len, const char *file, const char *real,
                 int skip_evals, tg_error *errs, size_t maxerrs, tg_error *err)
{
    if (!rs || !text)
        return tgE_arg(err, "tg_rules_load: NULL argument"), -1;
    loader L;
    if (loader_init(&L, rs, err) < 0)
        return -1;
    L.skip_evals = skip_evals;
    L.errs = errs, L.maxerrs = maxerrs;
    uint32_t nops = rs->nops, nrules = rs->nrules, nrws = rs->nrws, nsrc = rs->nsrc, nregs = rs->nregs;
    uint32_t nfiles = rs->nfiles;
    rs->fid = 0;
    if (real) {
        L.files[L.nfiles++] = real;
        if (rs->reloading)
            rs->fid = rs->reloading;
        else if (tgW_file_find(rs, real)) {
            tgE_set(err, TG_ERR_ARG, NULL, 0, 0, "it is loaded already (reload it to read it again)");
            if (errs && maxerrs)
                errs[0] = *err;
            return errs ? 1 : -1;
        } else if (!(rs->fid = tgW_file_add(rs, real, file, 1)))
            return tgE_nomem(err), -1;
    }
    int bad = load_text(&L, text, len, file) < 0 || eval_defs(&L) < 0 || check_relrefs(&L, nrules) < 0;
    rs->fid = 0;
    if (bad) {
        rs->nfiles = nfiles;
        unregister(rs, nregs);
        rollback(rs, nops, nrules, nrws, nsrc);
        if (errs && !L.nerrs && maxerrs)     /* a definition's error, after the forms */
            errs[L.nerrs++] = *err;
        return errs ? (long)L.nerrs : -1;
    }
    return 0;
}

/* ---- the public API ------------------------------------------------------ */

tg_rules *tg_rules_new(tg_ctx *ctx, tg_error *err)
{
    if (!ctx)
        return tgE_arg(err, "tg_rules_new: NULL context"), NULL;
    tg_rules *rs = GC_MALLOC_UNCOLLECTABLE(sizeof *rs);
    if (!rs)
        return tgE_nomem(err), NULL;
    rs->ctx = ctx;
    rs->index_stale = 1;
    return rs;
}

void tg_rules_free(tg_rules *rs)
{
    if (!rs)
        return;
    if (rs->env)
        tg_env_free(rs->env);
    tgW_machine_free(rs);
    GC_FREE(rs);
}

int tg_rules_load_string(tg_rules *rs, const char *text, size_t len, const char *file, tg_error *err)
{
    return (int)load(rs, text, len, file, NULL, 0, NULL, 0, err);
}

static long load_file(tg_rules *rs, const char *path, int skip_evals, tg_error *errs, size_t maxerrs,
                      tg_error *err)
{
    if (!rs || !path)
        return tgE_arg(err, skip_evals ? "tg_rules_load_file_defs: NULL argument"
                                       : "tg_rules_load_file: NULL argument"), -1;
    size_t len;
    char *text = tg_slurp_file(path, &len, err);
    if (!text)
        return -1;
    char *real = realpath(path, NULL);
    long rc = load(rs, text, len, path, real ? real : path, skip_evals, errs, maxerrs, err);
    free(real);
    free(text);
    return rc;
}

int tg_rules_load_file(tg_rules *rs, const char *path, tg_error *err)
{
    return (int)load_file(rs, path, 0, NULL, 0, err);
}

int tg_rules_load_file_defs(tg_rules *rs, const char *path, tg_error *err)
{
    return (int)load_file(rs, path, 1, NULL, 0, err);
}

long tg_rules_check_file(tg_rules *rs, const char *path, tg_error *errs, size_t max)
{
    if (!errs || !max)
        return -1;
    tg_error err;
    tg_error_clear(&err);
    for (size_t i = 0; i < max; i++)
        tg_error_clear(&errs[i]);
    long n = load_file(rs, path, 1, errs, max, &err);
    if (n < 0) {    /* the file unread, a NULL argument */
        errs[0] = err;
        return 1;
    }
    return n;
}

/* ---- limits of a run (tg_rules_set_limits) ---------------------------------- */

double tgW_clock(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int tg_rules_set_limits(tg_rules *rs, unsigned long long max_steps, double seconds, tg_error *err)
{
    if (!rs)
        return tgE_arg(err, "tg_rules_set_limits: NULL rule set"), -1;
    if (!(seconds >= 0) || seconds > 1e9)
        return tgE_arg(err, "tg_rules_set_limits: the time limit is a number of seconds from 0 to 1e9"), -1;
    rs->max_steps = max_steps;
    rs->timeout = seconds;
    return 0;
}

void tgW_limits_start(tg_rules *rs)
{
    rs->runs++;     /* a new run: the typer's state (typed.h) starts again */
    rs->deadline = rs->timeout > 0 ? tgW_clock() + rs->timeout : 0;
    if (rs->env)
        tgK_set_deadline(rs->env, rs->deadline);
    rs->nfired_base = 0;
    if (!rs->max_steps && !rs->deadline)
        return;
    /* atomic memory: counts, no pointers; none when out of memory (the
     * error then names no rules) */
    unsigned long long *b = GC_MALLOC_ATOMIC((rs->nrules ? rs->nrules : 1) * sizeof *b);
    if (!b)
        return;
    for (uint32_t i = 0; i < rs->nrules; i++)
        b[i] = rs->rules[i]->fired;
    rs->fired_base = b;
    rs->nfired_base = rs->nrules;
}

/* ", kept firing: R1 (N1 times), R2 (N2 times), ..." for the (at most 3)
 * rules that fired most since the run began, appended to msg. */
static void name_busy_rules(const tg_rules *rs, char *msg, size_t cap)
{
    enum { TOP = 3 };
    const tgW_rule *top[TOP] = {NULL};
    unsigned long long cnt[TOP] = {0};
    for (uint32_t i = 0; i < rs->nfired_base && i < rs->nrules; i++) {
        unsigned long long d = rs->rules[i]->fired - rs->fired_base[i];
        for (int k = 0; k < TOP; k++)
            if (d > cnt[k]) {
                memmove(top + k + 1, top + k, (TOP - 1 - k) * sizeof *top);
                memmove(cnt + k + 1, cnt + k, (TOP - 1 - k) * sizeof *cnt);
                top[k] = rs->rules[i], cnt[k] = d;
                break;
            }
    }
    for (int k = 0; k < TOP && top[k]; k++) {
        size_t len = strlen(msg), nl;
        const char *nm = tg_symbol_name(top[k]->name, &nl);
        snprintf(msg + len, cap - len, "%s%.*s (%llu times)", k ? ", " : "; the rules that kept firing: ",
                 (int)nl, nm, cnt[k]);
    }
}

int tgW_limits_over(tg_rules *rs, tg_error *err)
{
    char msg[400];
    if (rs->max_steps && rs->rewrites > rs->max_steps)
        snprintf(msg, sizeof msg, "stopped after %llu rewrites, over the step limit of %llu", rs->rewrites,
                 rs->max_steps);
    else if (rs->deadline && tgW_clock() > rs->deadline)
        snprintf(msg, sizeof msg, "stopped after %g s (the time limit), %llu rewrites", rs->timeout,
                 rs->rewrites);
    else
        return 0;
    name_busy_rules(rs, msg, sizeof msg);
    tgE_set(err, TG_ERR_RANGE, NULL, 0, 0, "%s", msg);
    return 1;
}

tg_term *tg_normalize(tg_rules *rs, tg_term *t, unsigned flags, tg_error *err)
{
    if (!rs || !t)
        return tgE_arg(err, "tg_normalize: NULL argument"), NULL;
    if (index_all(rs) < 0)
        return tgE_nomem(err), NULL;
    rs->rewrites = rs->conditions = 0;
    rs->interrupt = 0;
    tgW_limits_start(rs);
    tgW_run run = {&rs->all, (flags & TG_NF_MEMO) != 0, 0, 0, NULL, rs, 0};
    if (rs->trace_on && rs->trace)
        run.hook = tgW_trace_hook;
    if (rs->prov)
        tgO_begin(rs->prov, t);
    tg_term *r = tgW_normalize(rs, &run, t, err);
    if (rs->prov)
        rs->prov->result = r;
    return r;
}

tg_env *tg_rules_env(tg_rules *rs, tg_error *err)
{
    if (!rs)
        return tgE_arg(err, "tg_rules_env: NULL rule set"), NULL;
    return rules_env(rs, err);
}

/* (normalize TERM) or (normalize TERM memo) */
static int eval_normalize(loader *L, tg_term *form, tg_term **value)
{
    size_t n = tg_length(form);
    if (tg_tail(form) != tg_nil() || n < 2 || n > 3 || (n == 3 && tg_nth(form, 2) != L->sym[F_MEMO]))
        return tgW_lerr_term(L, form, "malformed normalize: (normalize TERM) or (normalize TERM memo) in %s", form);
    tg_term *r = tg_normalize(L->rs, tg_nth(form, 1), n == 3 ? TG_NF_MEMO : 0, L->err);
    if (!r)
        return -1;
    *value = r;
    return TG_EVAL_VALUE;
}

/* t rewritten by spec, whose plan is made once until the next load. */
static tg_term *rewrite_spec(loader *L, tg_term *spec, tg_term *t)
{
    tgW_cplan *cp = tgW_plan_cached(L->rs, spec);
    if (!cp) {
        tgW_query *q;
        tgW_rw *rw = tgW_parse_spec(L, spec, &q);
        if (!rw || !(cp = tgW_plan_make(L->rs, spec, rw, q, L->err)))
            return NULL;
    }
    return tgW_rewrite_plan(L->rs, cp, t, L->err);
}

/* (rewrite SPEC TERM) */
static int eval_rewrite(loader *L, tg_term *form, tg_term **value)
{
    if (tg_length(form) != 3 || tg_tail(form) != tg_nil()) {
        return tgW_lerr_term(L, form, "malformed rewrite: (rewrite NAME TERM) or (rewrite (query NAME ...) TERM) in %s",
                             form);
    }
    tg_term *r = rewrite_spec(L, tg_nth(form, 1), tg_nth(form, 2));
    if (!r)
        return -1;
    *value = r;
    return TG_EVAL_VALUE;
}

/* (provenance on), (provenance off), (why TERM): the chain is printed
 * to the trace stream when there is one, else it is the form's value. */
static int eval_provenance(loader *L, tg_term *form, tg_term **value)
{
    tg_rules *rs = L->rs;
    tg_term *x = tg_length(form) == 2 && tg_tail(form) == tg_nil() ? tg_nth(form, 1) : NULL;
    if (tg_car(form) == L->sym[F_PROV]) {
        if (x != L->sym[F_ON] && x != L->sym[F_OFF])
            return tgW_lerr_term(L, form, "malformed provenance: (provenance on) or (provenance off) in %s", form);
        if (tgO_set(rs, x == L->sym[F_ON], 0) < 0)
            return tgE_nomem(L->err), -1;
        return TG_EVAL_DEFINE;
    }
    if (!x)
        return tgW_lerr_term(L, form, "malformed why: (why TERM) in %s", form);
    if (rs->trace)
        return tgO_print_why(rs, x, rs->trace, L->err) < 0 ? -1 : TG_EVAL_DEFINE;
    tg_term *v = tgO_why(rs, x, L->err);
    if (!v)
        return -1;
    if (value)
        *value = v;
    return TG_EVAL_VALUE;
}

/* Evaluate form, read at file:line:col (file NULL: no position), by rd
 * when not NULL (then errors point at the subterm they are about). */
static int eval_form(tg_rules *rs, tg_term *form, const char *file, int line, int col,
                     tg_reader *rd, tg_answer_fn fn, void *ud, tg_term **value, tg_error *err)
{
    if (value)
        *value = NULL;
    if (!rs || !form)
        return tgE_arg(err, "tg_rules_eval: NULL argument"), -1;
    tgW_limits_start(rs);   /* a run form's search is timed too */
    loader L;
    if (loader_init(&L, rs, err) < 0)
        return -1;
    if (file) {     /* kept: ops and rules point back to it */
        char *f = GC_MALLOC_ATOMIC(strlen(file) + 1);
        if (!f)
            return tgE_nomem(err), -1;
        L.file = strcpy(f, file);
        L.line = line, L.col = col;
        L.rd = rd;
    }
    tg_term *h = tgT_ispair(form) ? tg_car(form) : NULL;
    if (h && (h == L.sym[F_RUN] || h == L.sym[F_RUNSTAR] || h == L.sym[F_DEFREL] ||
              h == L.sym[F_TABLED] || h == L.sym[F_FACT] || h == L.sym[F_FACTS])) {
        if ((h == L.sym[F_DEFREL] || h == L.sym[F_TABLED] || h == L.sym[F_RUN] || h == L.sym[F_RUNSTAR]) &&
            note_positions(&L, form) < 0)
            return -1;
        tg_env *env = rules_env(rs, err);
        return env ? tg_eval(env, form, fn, ud, value, err) : -1;
    }
    if (h == L.sym[F_NORMALIZE]) {
        tg_term *v = NULL;
        int rc = eval_normalize(&L, form, &v);
        if (value)
            *value = v;
        return rc;
    }
    if (h == L.sym[F_REWRITE]) {
        tg_term *v = NULL;
        int rc = eval_rewrite(&L, form, &v);
        if (value)
            *value = v;
        return rc;
    }
    if (h == L.sym[F_PROFILE] && tg_length(form) == 1) {
        tg_term *v = tgW_profile_term(rs);
        if (value)
            *value = v;
        return v ? TG_EVAL_VALUE : (tgE_set(err, TG_ERR_ARG, NULL, 0, 0, "no rewrite to profile yet"), -1);
    }
    if (h == L.sym[F_TRACE] && tg_length(form) == 2 &&
        (tg_nth(form, 1) == L.sym[F_ON] || tg_nth(form, 1) == L.sym[F_OFF])) {
        rs->trace_on = tg_nth(form, 1) == L.sym[F_ON];
        return TG_EVAL_DEFINE;
    }
    if (h == L.sym[F_PROV] || h == L.sym[F_WHY])
        return eval_provenance(&L, form, value);
    if (h == L.sym[F_OP] || h == L.sym[F_RULE] || h == L.sym[F_INCLUDE] || h == L.sym[F_EQUIL] ||
        h == L.sym[F_WALK] || h == L.sym[F_SEQ] || h == L.sym[F_REGISTER] || h == L.sym[F_DEFQUERY] ||
        h == L.sym[F_DEFOP]) {
        uint32_t nops = rs->nops, nrules = rs->nrules, nrws = rs->nrws, nsrc = rs->nsrc, nregs = rs->nregs;
        uint32_t nfiles = rs->nfiles;
        if (load_form(&L, form) < 0 || eval_defs(&L) < 0 || check_relrefs(&L, nrules) < 0) {
            /* the files a failed include read are not loaded: including
             * them again (once fixed) reads them */
            rs->nfiles = nfiles;
            unregister(rs, nregs);
            rollback(rs, nops, nrules, nrws, nsrc);
            return -1;
        }
        return TG_EVAL_DEFINE;
    }
    if (value)
        *value = form;
    return TG_EVAL_VALUE;
}

int tg_rules_eval(tg_rules *rs, tg_term *form, tg_answer_fn fn, void *ud, tg_term **value,
                  tg_error *err)
{
    return eval_form(rs, form, NULL, 0, 0, NULL, fn, ud, value, err);
}

int tg_rules_eval_at(tg_rules *rs, tg_term *form, const char *file, int line, int col,
                     tg_answer_fn fn, void *ud, tg_term **value, tg_error *err)
{
    return eval_form(rs, form, file, line, col, NULL, fn, ud, value, err);
}

int tg_rules_eval_read(tg_rules *rs, tg_reader *r, tg_term *form, tg_answer_fn fn, void *ud,
                       tg_term **value, tg_error *err)
{
    if (!r)
        return tgE_arg(err, "tg_rules_eval_read: NULL reader"), -1;
    int line, col;
    tg_reader_last_pos(r, &line, &col);
    return eval_form(rs, form, tgR_file(r), line, col, r, fn, ud, value, err);
}

void tg_rules_counts(const tg_rules *rs, unsigned long long *rewrites, unsigned long long *conditions)
{
    if (rewrites)
        *rewrites = rs ? rs->rewrites : 0;
    if (conditions)
        *conditions = rs ? rs->conditions : 0;
}

tg_term *tg_rewrite(tg_rules *rs, tg_term *spec, tg_term *t, tg_error *err)
{
    if (!rs || !spec || !t)
        return tgE_arg(err, "tg_rewrite: NULL argument"), NULL;
    loader L;
    if (loader_init(&L, rs, err) < 0)
        return NULL;
    return rewrite_spec(&L, spec, t);
}

tg_term *tg_rules_profile(tg_rules *rs)
{
    return rs ? tgW_profile_term(rs) : NULL;
}

void tg_rules_set_trace(tg_rules *rs, FILE *out, int on)
{
    if (!rs)
        return;
    rs->trace = out;
    rs->trace_on = on;
}

int tg_rules_tracing(const tg_rules *rs)
{
    return rs ? rs->trace_on : 0;
}

void tg_rules_interrupt(tg_rules *rs)
{
    if (!rs)
        return;
    rs->interrupt = 1;
    tg_env_interrupt(rs->env);
}

int tg_rules_set_provenance(tg_rules *rs, int on, size_t cap, tg_error *err)
{
    if (!rs)
        return tgE_arg(err, "tg_rules_set_provenance: NULL rule set"), -1;
    return tgO_set(rs, on, cap) < 0 ? (tgE_nomem(err), -1) : 0;
}

int tg_rules_provenance(const tg_rules *rs)
{
    return rs && rs->prov;
}

tg_term *tg_rules_why(tg_rules *rs, tg_term *t, tg_error *err)
{
    if (!rs || !t)
        return tgE_arg(err, "tg_rules_why: NULL argument"), NULL;
    return tgO_why(rs, t, err);
}

int tg_rules_print_why(tg_rules *rs, tg_term *t, FILE *out, tg_error *err)
{
    if (!rs || !t || !out)
        return tgE_arg(err, "tg_rules_print_why: NULL argument"), -1;
    return tgO_print_why(rs, t, out, err);
}
