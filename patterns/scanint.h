/* scanint.h - what the Scan rewrites' files share (module prefix tgSo_,
 * internal): the names of the vocabulary they read, the rewrite context,
 * vectors of terms, the scan term read into a record (scanopt.c) and the
 * rank inference (scanrank.c). */
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

#endif
