/* grad_int.h - what the two halves of the gradient sweep share (module
 * prefix tgGr_): grad.c, the sweep over a cost's nodes, and grad_scan.c,
 * the gradients of scans (a backwards scan).  Internal to kernels/. */
#ifndef TG_KERNELS_GRAD_INT_H
#define TG_KERNELS_GRAD_INT_H

#include <gc/gc.h>
#include <stdbool.h>
#include <string.h>

#include "error.h"
#include "grad.h"
#include "scan.h"
#include "tensor.h"

/* ---- a map from terms to terms (pointer keys; collector memory) ---------- */

typedef struct tmap {
    tg_term **k, **v;
    size_t cap, n;
} tmap;

/* Most maps here hold a few entries: they start in arrays on the C
 * stack (scanned by the collector), declared with TMAP_LOCAL. */
enum { TMAP_SMALL = 16 };
#define TMAP_LOCAL(m)                                                   \
    tg_term *m##_k[TMAP_SMALL] = {0}, *m##_v[TMAP_SMALL];              \
    tmap m = {m##_k, m##_v, TMAP_SMALL, 0}

static inline tg_term *tm_get(const tmap *m, const tg_term *k)
{
    if (!m->cap)
        return NULL;
    for (size_t i = tg_hash(k) & (m->cap - 1); m->k[i]; i = (i + 1) & (m->cap - 1))
        if (m->k[i] == k)
            return m->v[i];
    return NULL;
}

static inline int tm_put(tmap *m, tg_term *k, tg_term *v)
{
    if (2 * (m->n + 1) >= m->cap) {
        size_t ocap = m->cap, ncap = ocap ? 2 * ocap : 16;
        tg_term **ok = m->k, **ov = m->v;
        m->k = GC_MALLOC(ncap * sizeof *m->k);
        m->v = GC_MALLOC(ncap * sizeof *m->v);
        if (!m->k || !m->v)
            return -1;
        m->cap = ncap, m->n = 0;
        for (size_t i = 0; i < ocap; i++)
            if (ok[i])
                tm_put(m, ok[i], ov[i]);
    }
    size_t i = tg_hash(k) & (m->cap - 1);
    for (; m->k[i]; i = (i + 1) & (m->cap - 1))
        if (m->k[i] == k) {
            m->v[i] = v;
            return 0;
        }
    m->k[i] = k, m->v[i] = v, m->n++;
    return 0;
}

/* A stack of terms in collector memory. */
typedef struct tstack {
    tg_term **v;
    size_t n, cap;
} tstack;

static inline int ts_push(tstack *s, tg_term *t)
{
    if (s->n == s->cap) {
        size_t nc = s->cap ? 2 * s->cap : 64;
        tg_term **nv = GC_MALLOC(nc * sizeof *nv);
        if (!nv)
            return -1;
        if (s->n)
            memcpy(nv, s->v, s->n * sizeof *nv);
        s->v = nv, s->cap = nc;
    }
    s->v[s->n++] = t;
    return 0;
}

/* ---- one expansion ------------------------------------------------------- */

enum { S_TENSOR, S_VJP, S_ADJOINTS, S_G, S_GRAD, S_INPUT, S_AXES, S_ALL, S_PERM, S_X,
       S_SHAPE_OF, S_DIMSHUFFLE, S_SUM, S_ALLOC, S_CAST, S_RESHAPE, S_CONST, S_ADD, S_MUL,
       S_KEEPDIMS, S_COUNT, S_RESHAPE_LIKE, S_UNDIMSHUFFLE, S_ZEROS_LIKE, S_TRANSPOSE, S_NSYMS };

typedef struct gx {
    tg_ctx *ctx;
    tg_error e;                 /* filled on failure, copied to the caller's */
    const tg_grad_options *opt;
    tg_rules *lib;              /* the library's vjp rules, loaded on the first grad */
    tmap memo;                  /* (vjp NODE G) with placeholders -> its adjoints */
    bool inner;                 /* a scan's step: an unread parameter gets a zero gradient */
    /* ops kept whole for a vjp rule of their own (defop): their
     * definitions, for the typer (tgV_set_defined); NULL: none */
    tg_term *(*define)(void *ud, tg_term *t);
    void *define_ud;
    tg_term *s[S_NSYMS];
    char buf[2][160];
} gx;

/* Contributions to a node's adjoint, summed when the node is reached. */
typedef struct contrib {
    tg_term *t;
    struct contrib *next;
} contrib;

typedef struct sweep {
    gx *x;
    tgV_builder *b;
    int n0;                     /* nodes of COST (typed first) */
    unsigned char *dep;         /* per node of COST: depends on WRT */
    contrib **adj;              /* per node of COST */
} sweep;

static inline tg_term *list2(gx *x, tg_term *a, tg_term *b)
{
    tg_term *v[2] = {a, b};
    return tg_list(x->ctx, 2, v, NULL);
}

static inline tg_term *list3(gx *x, tg_term *a, tg_term *b, tg_term *c)
{
    tg_term *v[3] = {a, b, c};
    return tg_list(x->ctx, 3, v, NULL);
}

static inline const tgV_node *node(const sweep *s, int i) { return &tgV_graph_of(s->b)->nodes[i]; }

/* grad.c */
int tgGr_fail(gx *x, const tg_term *form, const char *fmt, ...) TGE_PRINTF(3, 4);
int tgGr_nomem(gx *x);
tg_term *tgGr_size_term(tg_ctx *ctx, const tgV_graph *g, tgV_size sz);
tg_term *tgGr_shape_list(tg_ctx *ctx, const tgV_graph *g, int i, tg_term *head, tg_term *first);
tg_term *tgGr_rebuild(gx *x, tg_term *t, tmap *map, tg_term *vjp);
int tgGr_deliver(sweep *s, int j, tg_term *E);
tg_term *tgGr_zeros(sweep *s, int w);
tg_term *tgGr_grad_of(gx *x, tg_term *form, tg_term *cost, tg_term *wrt);
/* grad_scan.c: node i, a scan, passes its adjoints back (A: per output) */
int tgGr_scan_vjp(sweep *s, const tgSc_scan *sc, tg_term **A);

#endif
