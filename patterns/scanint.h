/* scanint.h - what the Scan rewrites' files share (module prefix tgSo_,
 * internal): the names of the vocabulary they read, the rewrite context,
 * vectors of terms, the scan term read into a record and DAG walks
 * (scanterm.c), what a step term depends on and stacks of per-step work
 * (scanopt.c), the rank inference (scanrank.c), the graph analysis and
 * the rewrites over a whole graph (scangraph.c), and the rewrites that
 * push work out after the loop (scanout.c). */
#ifndef TG_SCANINT_H
#define TG_SCANINT_H

#include "tgrel.h"
#include "rset.h"

#include <gc/gc.h>
#include <stdint.h>
#include <string.h>

/* ---- names and vectors ---------------------------------------------- */

enum { N_SCAN, N_LAMBDA, N_UNTIL, N_STEPS, N_SEQS, N_OUTS, N_NSEQS, N_NITSOT, N_SITSOT, N_MITSOT,
       N_TAPS, N_LAST, N_SCAN_OUTPUT, N_SCAN_STEPS, N_SUBTENSOR, N_SLICE, N_NONE, N_GRAPH,
       N_INPLACE, N_CONST, N_INPUT, N_AUTO, N_ADD, N_SUB, N_NEG, N_MUL, N_TRUE_DIV, N_DOT,
       N_DIMSHUFFLE, N_TRANSPOSE, N_SUM, N_MEAN, N_AXES, N_PERM, N_X, N_BACKWARDS, N_PROD, N_MAX,
       N_MIN, N_ALL, N_SHARED, N_GEMM, N_RESHAPE, N_SHAPE_OF, N_ALLOC, N_LOGSUMEXP, NN };

typedef struct names {
    tg_term *n[NN];
    tgW_map ops;            /* tensor op symbol -> 1 (elementwise) or 2 */
    tgW_map reserved;       /* symbol -> 1 */
    /* the analysis of the last graph (scan readers), shared by the graph
     * rewrites tried in turn on it; dropped when one of them fires (they
     * edit it) */
    tg_term *groot;
    struct graph *gcache;
} names;

typedef struct so {
    tg_ctx *ctx;
    names *nm;
    int oom;                /* an allocation failed: the rewrite is an error */
} so;

#define NM(s, i) ((s)->nm->n[i])

typedef struct vec {
    tg_term **v;
    size_t n, cap;
} vec;

/* Push t (NULL is a failed construction, except in a stack of marks). */
static inline int push_any(so *s, vec *v, tg_term *t)
{
    tg_term **p = tgW_grow(v->v, v->n, &v->cap, v->n + 1, sizeof *p);
    if (!p)
        return s->oom = 1, -1;
    v->v = p;
    v->v[v->n++] = t;
    return 0;
}

static inline int push(so *s, vec *v, tg_term *t)
{
    return t ? push_any(s, v, t) : (s->oom = 1, -1);
}

static inline int is_pair(const tg_term *t) { return t && tg_kind_of(t) == TG_PAIR; }

static inline int is_app(const tg_term *t, const tg_term *head)
{
    return is_pair(t) && tg_car(t) == head && tg_tail(t) == tg_nil();
}

/* The elements of proper list t in new collector memory (n set). */
static inline tg_term **elems(so *s, const tg_term *t, size_t *n)
{
    *n = tg_length(t);
    tg_term **v = GC_MALLOC((*n ? *n : 1) * sizeof *v);
    if (!v)
        return s->oom = 1, NULL;
    tg_elements(t, v, *n);
    return v;
}

static inline tg_term *app(so *s, int head, size_t n, tg_term *const *args)
{
    tg_term *none[1] = {NULL};
    tg_term *t = tg_app(s->ctx, NM(s, head), n, n ? args : none);
    if (!t)
        s->oom = 1;
    return t;
}

static inline tg_term *app2(so *s, int head, tg_term *a, tg_term *b)
{
    tg_term *v[2] = {a, b};
    return app(s, head, 2, v);
}

/* (head e ...) of a vector */
static inline tg_term *vlist(so *s, int head, const vec *v)
{
    return app(s, head, v->n, v->v);
}

static inline void vec_del(vec *v, size_t i)
{
    memmove(v->v + i, v->v + i + 1, (v->n - i - 1) * sizeof *v->v);
    v->n--;
}

static inline tg_term *list(so *s, size_t n, tg_term *const *v)
{
    tg_term *t = n ? tg_list(s->ctx, n, v, NULL) : tg_nil();
    if (!t)
        s->oom = 1;
    return t;
}

/* ---- the scan term ------------------------------------------------------ */

enum { NITSOT, SITSOT, MITSOT };

typedef struct out {
    int kind;
    tg_term *init;
    int64_t *taps;
    size_t ntaps;
    tg_term **tp;           /* the tap parameters */
    int last;
    int64_t keep;           /* (last N): the final N rows are kept (N), else 0 */
    tg_term *res;           /* the step's result */
} out;

typedef struct scan {
    tg_term *steps;         /* (steps N) */
    vec seq, seqp;          /* sequences and their parameters */
    out *o;
    size_t no;
    vec ns, nsp;            /* non-sequences and their parameters */
    tg_term *until;         /* C, or NULL */
    vec opts;
} scan;

/* 1 when t is a scan this module understands (sc filled), 0 when not. */
int tgSo_parse(so *s, tg_term *t, scan *sc);

/* 1 when t is an application of a tensor op (2: an elementwise one). */
static inline int tensor_op(so *s, const tg_term *t)
{
    if (!is_pair(t) || tg_tail(t) != tg_nil())
        return 0;
    return (int)(uintptr_t)tgW_map_get(&s->nm->ops, tg_car(t));
}

/* The scan term of record sc. */
tg_term *tgSo_build(so *s, const scan *sc);
/* Does sc have option `name` (an N_ index)? */
int tgSo_has_opt(so *s, const scan *sc, int name);
/* The rows sequence parameter p reads over the steps, or NULL. */
tg_term *tgSo_seq_rows(so *s, const scan *sc, tg_term *p);
/* Drop the (inplace K ...) option (outputs renumbered or merged). */
void tgSo_drop_inplace(so *s, scan *sc);
/* A step's parameters into maps: sequences' into seq, taps into var,
 * non-sequences' into outm (when not NULL) to their outer values. */
int tgSo_param_maps(so *s, scan *sc, tgW_map *seq, tgW_map *var, tgW_map *outm);

/* ---- walking DAGs (scanterm.c), what a step term depends on (scanopt.c) - */

/* Call fn on every distinct compound node under root (root included),
 * each once, parents before children; seen collects them.  fn returns 0
 * to go on, 1 to stop the walk (returned), -1 on an error. */
typedef int (*visit_fn)(so *s, tg_term *node, void *ud);
int tgSo_walk(so *s, tg_term *root, tgW_map *seen, visit_fn fn, void *ud);
/* tgSo_walk, not looking into the lambdas of scans. */
int tgSo_walk_outer(so *s, tg_term *root, tgW_map *seen, visit_fn fn, void *ud);
/* t with the terms in repl (keys) replaced by their values. */
tg_term *tgSo_subst(so *s, tg_term *t, const tgW_map *repl);
/* Symbols under t go in syms (as keys). */
int tgSo_symbols(so *s, tg_term *t, tgW_map *syms);
/* Apply repl to the step's results and condition. */
int tgSo_subst_body(so *s, scan *sc, const tgW_map *repl);
/* The symbols the step's results and condition mention go in syms. */
int tgSo_body_symbols(so *s, const scan *sc, tgW_map *syms);
/* A parameter name made from base that is in none of used (every symbol
 * of the scans concerned) nor reserved; it is added to used. */
tg_term *tgSo_fresh(so *s, tgW_map *used, const char *base);

/* What a subterm of the step depends on, as flags: a parameter in var,
 * something that cannot leave the loop (a scan, an input). */
enum { D_VAR = 1, D_STUCK = 2, D_SEQ = 4, D_OTHER = 8, D_NONELEM = 16 };

typedef struct deps {
    const tgW_map *var;     /* symbol -> 1: depends on the step */
    const tgW_map *seq;     /* symbol -> 1: a sequence parameter */
    tgW_map memo;           /* node -> flags + 32 */
} deps;

/* The flags of t (tgSo_dep_compute computed those of compound terms). */
unsigned tgSo_dep_get(so *s, deps *d, const tg_term *t);
/* The flags of every node under t, post-order with an explicit stack. */
int tgSo_dep_compute(so *s, deps *d, tg_term *t);

/* ---- ranks (scanrank.c) ----------------------------------------------- */

/* Moving work between a step and whole stacks of steps adds a leading
 * axis, and broadcasting aligns axes from the right: the rewrites need the
 * ranks of the terms they move (not their sizes).  rank_of infers them
 * over the vocabulary, conservatively: -1 when not known here.  Outer
 * terms get theirs from (input NAME DTYPE (SIZE ...)), constants and the
 * ops; a step's terms from the ranks of the scan's outer arguments. */typedef struct rk {
    so *s;
    tgW_map memo;           /* node -> rank + 2 */
    const tgW_map *env;     /* parameter -> rank + 2 (inside a lambda) */
} rk;

/* The rank of every node under t (post-order, explicit stack); t's. */
int tgSo_rank_of(rk *r, tg_term *t);
/* The ranks of the parameters of scan sc, its outer arguments' ranks
 * taken from outer (whose memo holds them). */
int tgSo_param_ranks(so *s, const scan *sc, rk *outer, tgW_map *env);

/* ---- per-step work as work on whole stacks (scanopt.c) ------------------ */

/* What tgSo_st_of works in: the step, what its terms depend on, their
 * ranks, and the placeholders of the stacks it reads. */
typedef struct stx {
    so *s;
    scan *sc;
    deps d;                 /* D_VAR or D_SEQ: changes from step to step */
    rk in;                  /* the step's ranks */
    rk *outer;              /* the outer terms' ranks */
    tgW_map *out;           /* non-sequence parameter -> its outer value */
    int seqmode;
    const tgW_map *avoid;   /* not moved: another result reads it */
    tgW_map *used;
    tgW_map leaf;           /* stacked step term -> placeholder */
    vec lv, lph;
} stx;

/* The placeholder of the stack of per-step values t over the steps: the
 * one given before, or a fresh name recorded in leaf, with t in lv and
 * the name in lph; NULL when out of memory. */
tg_term *tgSo_stack_leaf(so *s, tgW_map *used, tgW_map *leaf, vec *lv, vec *lph, tg_term *t);
/* The stack of step term t, varying, over outer names and placeholders;
 * NULL when not known here.  *moved set when an op moved. */
tg_term *tgSo_st_of(stx *x, tg_term *t, int depth, int *moved);

/* ---- rewrites over a whole graph (scangraph.c, scanout.c) --------------- */

struct graph;

/* How the graph uses one scan. */
typedef struct use {
    tg_term *t;
    scan sc;
    unsigned char *used;    /* output k is read */
    unsigned char *lastonly;/* every read of output k takes its last row */
    int64_t *reach;         /* every read of output k takes rows among its last reach[k]
                             * (0: none seen yet, -1: a read takes others) */
} use;

typedef struct graph {
    tg_term *root;
    tgW_map users;          /* scan -> use */
    tgW_map bad;            /* scan terms this module does not understand */
    vec scans;              /* in the order met */
    tgW_map parents;        /* node -> number of times it is an element of a node */
} graph;

/* The graph with scan u->t replaced by t2, its output k by output map[k]
 * of t2 (map[k] < 0: not read), or by the term exprs[k] when set. */
tg_term *tgSo_replace_x(so *s, graph *g, use *u, size_t nold, tg_term *t2, const long *map,
                        const unsigned char *lastmap, tg_term *const *exprs);
/* The scan runs at least k steps. */
int tgSo_runs_at_least(so *s, const scan *sc, int64_t k);
/* A rewrite of the graph's use u of one scan: 1 with *res, 0, -1. */
typedef int (*graph_fn_t)(so *s, graph *g, use *u, tg_term **res);
/* A rewrite of a whole graph (graph OUT ...): the first scan fn applies
 * to.  1 with *out, 0, -1. */
int tgSo_global(so *s, graph_fn_t fn, tg_term *t, tg_term **out);
/* scangraph.c: scan-drop-outputs, scan-last, scan-last-rows,
 * scan-merge-outputs, scan-merge, scan-inplace. */
int tgSo_unused_outputs(so *s, graph *g, use *u, tg_term **res);
int tgSo_last_outputs(so *s, graph *g, use *u, tg_term **res);
int tgSo_last_rows(so *s, graph *g, use *u, tg_term **res);
int tgSo_same_outputs(so *s, graph *g, use *u, tg_term **res);
int tgSo_merge_scans(so *s, graph *g, use *u, tg_term **res);
int tgSo_inplace(so *s, graph *g, use *u, tg_term **res);
/* scanout.c: scan-push-output and scan-push-sums; 1 with *res, 0, -1. */
int tgSo_push_output(so *s, graph *g, use *u, tg_term **res);
int tgSo_push_sums(so *s, graph *g, use *u, tg_term **res);

#endif
