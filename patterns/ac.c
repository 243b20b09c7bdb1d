/* ac.c - terms and matching modulo associativity and commutativity
 * (module prefix tgW_ac_, with rset.h): the canonical form of an
 * application of an assoc op (nested applications of the op spliced in)
 * and of a comm op (arguments sorted by tg_compare), and the matcher of
 * the rules whose left sides have assoc / comm nodes.
 *
 * The matcher runs the same match program as match.c's, plus the
 * M_AC* / M_AS* instructions.  Each assoc / comm node of a pattern has a
 * state: its subject's arguments and which of them the node's pattern
 * arguments took so far (a bag: any of them, in any order) or how many
 * (a sequence, for an assoc op that is not comm: in order).  Taking an
 * argument is recorded on a trail; a choice point remembers the trail's
 * height, so going back to it undoes exactly what was taken since.  The
 * work is bounded: more than TGW_AC_MAX_RETRIES retries of choice points
 * in one match is an error naming the rule.
 */
#include "rset.h"
#include "error.h"

#include <gc/gc.h>
#include <stdlib.h>
#include <string.h>

/* ---- canonical forms ---------------------------------------------------- */

/* x is (head ...) with a proper list of arguments: their count + 1, else 0. */
static size_t app_len(const tg_term *x, const tg_term *head)
{
    if (!tgT_ispair(x) || x->e[0] != head || tg_tail(x) != TGT_NIL)
        return 0;
    return tg_length(x);
}

size_t tgW_ac_flatlen(const tg_term *head, uint32_t fl, tg_term *const *a, size_t n)
{
    if (!(fl & TGW_ASSOC))
        return n;
    size_t nn = 0;
    for (size_t i = 0; i < n; i++) {
        size_t l = app_len(a[i], head);
        nn += l ? l - 1 : 1;
    }
    return nn;
}

/* From the last argument down, so that no argument is overwritten
 * before it is read (argument i goes to positions >= i).  The arguments
 * are canonical: a nested application of the op is flat already. */
void tgW_ac_flatten(const tg_term *head, tg_term **a, size_t n, size_t nn)
{
    size_t d = nn;
    for (size_t i = n; i-- > 0;) {
        tg_term *x = a[i];
        size_t l = app_len(x, head);
        if (!l) {
            a[--d] = x;
            continue;
        }
        d -= l - 1;
        tg_iter it = {x, 1};
        size_t j = d;
        for (tg_term *y; (y = tgT_iter_next(&it));)
            a[j++] = y;
    }
}

/* The buffer is memory the collector scans (the stack, or its own): while
 * a pass writes a back, an element may be held only there, and another
 * thread may start a collection at any moment. */
#define SORT_STACK 32

int tgW_ac_sort(tg_term **a, size_t n)
{
    size_t i = 1;
    while (i < n && tg_compare(a[i - 1], a[i]) <= 0)
        i++;
    if (i >= n)
        return 0;   /* sorted already: the usual case */
    tg_term *small[SORT_STACK];
    tg_term **tmp = n <= SORT_STACK ? small : GC_MALLOC(n * sizeof *tmp);
    if (!tmp)
        return -1;
    /* bottom-up merge sort: runs of w, merged into tmp and back */
    tg_term **src = a, **dst = tmp;
    for (size_t w = 1; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            size_t p = lo, q = mid, k = lo;
            while (p < mid && q < hi)
                dst[k++] = tg_compare(src[q], src[p]) < 0 ? src[q++] : src[p++];
            while (p < mid)
                dst[k++] = src[p++];
            while (q < hi)
                dst[k++] = src[q++];
        }
        tg_term **t = src;
        src = dst, dst = t;
    }
    if (src != a)
        memcpy(a, src, n * sizeof *a);
    return 1;
}

/* The arguments of the usual short applications are gathered on the
 * stack (which the collector scans), and a node that is canonical
 * already is returned as it is: on a large graph most nodes are, and an
 * array from the collector and a lookup of the same node for each took
 * about 7% of a walk's time on the graph benchmark. */
#define CANON_STACK 16

tg_term *tgW_ac_canon(tg_rules *rs, tg_term *t)
{
    if (!tgT_ispair(t) || tgT_kind(t->e[0]) != TG_SYMBOL)
        return t;
    tgW_op *op = tgW_op_find(rs, t->e[0]);
    if (!op || !(op->flags & (TGW_ASSOC | TGW_COMM)) || tg_tail(t) != TGT_NIL)
        return t;
    size_t n = tg_length(t) - 1;
    tg_term *sa[CANON_STACK], *sb[CANON_STACK];
    tg_term **a = n <= CANON_STACK ? sa : GC_MALLOC(n * sizeof *a);
    if (!a)
        return NULL;
    tg_iter it = {t, 1};
    for (size_t i = 0; i < n; i++)
        a[i] = tgT_iter_next(&it);
    size_t nn = tgW_ac_flatlen(t->e[0], op->flags, a, n);
    if (nn != n) {
        tg_term **b = nn <= CANON_STACK ? sb : GC_MALLOC(nn * sizeof *b);
        if (!b)
            return NULL;
        memcpy(b, a, n * sizeof *a);
        tgW_ac_flatten(t->e[0], b, n, nn);
        a = b;
    }
    int moved = op->flags & TGW_COMM ? tgW_ac_sort(a, nn) : 0;
    if (moved < 0)
        return NULL;
    return nn == n && !moved ? t : tg_app(rs->ctx, t->e[0], nn, a);
}

/* Whether any declared op is assoc or comm (else nothing is to do). */
int tgW_ac_any(const tg_rules *rs)
{
    for (uint32_t i = 0; i < rs->nops; i++)
        if (rs->ops[i]->flags & (TGW_ASSOC | TGW_COMM))
            return 1;
    return 0;
}

const tgW_op *tgW_ac_op_of(const tg_rules *rs, const tg_term *t)
{
    if (!tgT_ispair(t) || tgT_kind(t->e[0]) != TG_SYMBOL)
        return NULL;
    const tgW_op *op = tgW_op_find(rs, t->e[0]);
    if (!op || !(op->flags & (TGW_ASSOC | TGW_COMM)) || tg_tail(t) != TGT_NIL)
        return NULL;
    return op;
}

/* Canonicalizing a whole term: a node being rebuilt, or (splice) a
 * nested application of its assoc op whose arguments join its own, so
 * that a chain (add a (add b (add c ...))) is never built level by level
 * (which would take quadratic time). */
typedef struct cframe {
    tg_term *t;
    tg_iter it;
    size_t vb;
    const tgW_op *op;
    int splice;
} cframe;

/* arr with room for cnt + extra elements (collector memory: the stacks
 * hold the nodes built so far); -1 when out of memory. */
#define CGROW(arr, cnt, cp, extra)                                              \
    do {                                                                        \
        if ((cnt) + (extra) > (cp)) {                                           \
            size_t nc_ = (cp) ? 2 * (cp) : 256;                                 \
            while (nc_ < (cnt) + (extra))                                       \
                nc_ *= 2;                                                       \
            void *na_ = GC_MALLOC(nc_ * sizeof *(arr));                         \
            if (!na_)                                                           \
                goto oom;                                                       \
            if (cnt)                                                            \
                memcpy(na_, (arr), (cnt) * sizeof *(arr));                      \
            (arr) = na_, (cp) = nc_;                                            \
        }                                                                       \
    } while (0)

/* Whether the elements of t are the n of v (then t, interned, is the node
 * tg_list would build again: most nodes of a large graph are already
 * canonical, and hashing them anew was most of this walk's time). */
static int same_elements(tg_term *t, tg_term *const *v, size_t n)
{
    tg_iter it = {t, 0};
    for (size_t i = 0; i < n; i++)
        if (tgT_iter_next(&it) != v[i])
            return 0;
    return !tgT_iter_next(&it);
}

tg_term *tgW_ac_canon_deep(tg_rules *rs, tg_term *t)
{
    if (!tgT_ispair(t))
        return t;
    cframe *st = NULL;
    size_t n = 0, cap = 0;
    tg_term **v = NULL;
    size_t nv = 0, capv = 0;
    tg_term *res = NULL;
    /* malloc memory, not counted towards the next collection (on a graph
     * of 10^5 nodes the walk's map was a fifth of what a rewrite
     * allocated from the collector) */
    tgW_map done = {.scratch = 1};
    tgW_map_reserve(&done, 512);
    CGROW(st, n, cap, 1);
    st[0] = (cframe){t, {t, 0}, 0, tgW_ac_op_of(rs, t), 0};
    n = 1;
    while (n) {
        cframe *f = &st[n - 1];
        tg_term *x = tgT_iter_next(&f->it);
        if (x) {
            /* a nested application of an assoc op is spliced even
             * when met before: it is not an argument of its own */
            int sp = tgT_ispair(x) && f->op && (f->op->flags & TGW_ASSOC) &&
                     x->e[0] == f->op->name && tg_tail(x) == TGT_NIL;
            tg_term *y = sp ? NULL : tgT_ispair(x) ? tgW_map_get(&done, x) : x;
            if (!y) {
                const tgW_op *op = sp ? f->op : tgW_ac_op_of(rs, x);
                CGROW(st, n, cap, 1);
                st[n++] = (cframe){x, {x, sp ? 1 : 0}, nv, op, sp};
                continue;
            }
            CGROW(v, nv, capv, 1);
            v[nv++] = y;
            continue;
        }
        n--;
        if (f->splice)
            continue;   /* its arguments stay, in the node around it */
        tg_term *tail = (tg_term *)f->it.node;
        size_t cnt = nv - f->vb;
        if (f->op && (f->op->flags & TGW_COMM) && tgW_ac_sort(v + f->vb + 1, cnt - 1) < 0)
            goto oom;
        tg_term *node = same_elements(f->t, v + f->vb, cnt)
                            ? f->t : tg_list(rs->ctx, cnt, v + f->vb, tail == TGT_NIL ? NULL : tail);
        if (!node || tgW_map_put(&done, f->t, node) < 0)
            goto oom;
        nv = f->vb;
        if (!n) {
            res = node;
            break;
        }
        CGROW(v, nv, capv, 1);
        v[nv++] = node;
    }
oom:
    tgW_map_clear(&done);
    return res;
}

/* ---- matching: state ---------------------------------------------------- */

#define MAXNODES 256        /* assoc / comm nodes of one rule (compile.c) */

typedef struct node {
    tg_term *head;
    tg_term **root;         /* the call's arguments (a root node) ... */
    size_t aoff, uoff;      /* ... or a copy in the arena; the taken flags */
    uint32_t n, used;       /* arguments; taken (a sequence: the next one) */
    uint32_t mode;
} node;

typedef struct trail {
    uint32_t node, j;       /* bag: argument j taken; sequence: j more taken */
} trail;

typedef struct choice {
    const tgW_ins *pc;
    size_t alt;             /* how the instruction goes on (0: the first time) */
    size_t trail, arena;    /* heights to go back to */
} choice;

typedef struct tgW_acs {
    node nodes[MAXNODES];
    unsigned char *arena;   /* argument copies, taken flags, groups */
    size_t atop, acap;
    trail *tr;
    size_t ttop, tcap;
    choice *cs;
    size_t ncs, ccap;
} acs;

/* n bytes (8-aligned) of the arena: its offset, or SIZE_MAX. */
static size_t arena_get(acs *S, size_t n)
{
    size_t off = (S->atop + 7) & ~(size_t)7;
    if (off + n > S->acap) {
        size_t cap = S->acap ? 2 * S->acap : 4096;
        while (cap < off + n)
            cap *= 2;
        unsigned char *a = GC_MALLOC_ATOMIC(cap);
        if (!a)
            return SIZE_MAX;
        if (S->atop)
            memcpy(a, S->arena, S->atop);
        S->arena = a, S->acap = cap;
    }
    S->atop = off + n;
    return off;
}

static inline tg_term **node_args(acs *S, const node *nd)
{
    return nd->root ? nd->root : (tg_term **)(void *)(S->arena + nd->aoff);
}

static inline unsigned char *node_used(acs *S, const node *nd)
{
    return S->arena + nd->uoff;
}

static int trail_push(acs *S, uint32_t nd, uint32_t j)
{
    if (S->ttop == S->tcap) {
        size_t cap = S->tcap ? 2 * S->tcap : 256;
        trail *t = GC_MALLOC_ATOMIC(cap * sizeof *t);
        if (!t)
            return -1;
        if (S->ttop)
            memcpy(t, S->tr, S->ttop * sizeof *t);
        S->tr = t, S->tcap = cap;
    }
    S->tr[S->ttop].node = nd, S->tr[S->ttop++].j = j;
    return 0;
}

static void trail_undo(acs *S, size_t to)
{
    while (S->ttop > to) {
        trail *t = &S->tr[--S->ttop];
        node *nd = &S->nodes[t->node];
        if (nd->mode & TGW_AC_SEQ) {
            nd->used -= t->j;
        } else {
            node_used(S, nd)[t->j] = 0;
            nd->used--;
        }
    }
}

/* Take argument j of bag node nd. */
static int take(acs *S, uint32_t nd, uint32_t j)
{
    node *x = &S->nodes[nd];
    node_used(S, x)[j] = 1;
    x->used++;
    return trail_push(S, nd, j);
}

/* A choice point at pc, going on with alt, undoing down to trail
 * height tr. */
static int choice_push(acs *S, const tgW_ins *pc, size_t alt, size_t tr)
{
    if (S->ncs == S->ccap) {
        size_t cap = S->ccap ? 2 * S->ccap : 64;
        choice *c = GC_MALLOC_ATOMIC(cap * sizeof *c);
        if (!c)
            return -1;
        if (S->ncs)
            memcpy(c, S->cs, S->ncs * sizeof *c);
        S->cs = c, S->ccap = cap;
    }
    choice *c = &S->cs[S->ncs++];
    c->pc = pc, c->alt = alt, c->trail = tr, c->arena = S->atop;
    return 0;
}

/* One term for the m arguments v of node nd: the argument itself when
 * m is 1, else the application of the op (canonical: v is in the
 * subject's order). */
static tg_term *group_term(tg_ctx *ctx, const node *nd, size_t m, tg_term *const *v)
{
    return m == 1 ? v[0] : tg_app(ctx, nd->head, m, v);
}

/* ---- matching: instructions --------------------------------------------- */

/* Each returns 1 (go on), 0 (fail: back to the last choice point) or -1
 * (out of memory). */

static int i_open(acs *S, const tgW_ins *pc, tg_term *const *K, tg_term **A, uint32_t n, tg_term **R)
{
    uint32_t mode = pc->d & 0xff, k = pc->d >> 8;
    node *nd = &S->nodes[pc->c];
    nd->head = K[pc->b];
    nd->mode = mode;
    nd->used = 0;
    if (mode & TGW_AC_ROOT) {
        nd->root = A;
        nd->n = n;
    } else {
        size_t l = app_len(R[pc->a], nd->head);
        if (!l)
            return 0;
        nd->root = NULL;
        nd->n = (uint32_t)(l - 1);
        if ((mode & TGW_AC_EXACT) ? nd->n != k : nd->n < k)
            return 0;
        size_t off = arena_get(S, l * sizeof(tg_term *));
        if (off == SIZE_MAX)
            return -1;
        nd->aoff = off;
        tg_iter it = {R[pc->a], 1};
        tg_term **a = node_args(S, nd);
        for (uint32_t i = 0; i < nd->n; i++)
            a[i] = tgT_iter_next(&it);
    }
    if ((mode & TGW_AC_EXACT) ? nd->n != k : nd->n < k)
        return 0;
    if (!(mode & TGW_AC_SEQ)) {
        size_t off = arena_get(S, nd->n ? nd->n : 1);
        if (off == SIZE_MAX)
            return -1;
        nd->uoff = off;
        memset(S->arena + off, 0, nd->n);
    }
    return 1;
}

/* Bag: an unused argument not tried at this point before (equal
 * arguments are tried once), with head K[b] when b names one. */
static int i_one(acs *S, const tgW_ins *pc, tg_term *const *K, tg_term **R, size_t alt)
{
    node *nd = &S->nodes[pc->a];
    tg_term **a = node_args(S, nd);
    unsigned char *u = node_used(S, nd);
    const tg_term *h = pc->b != 0xffff ? K[pc->b] : NULL;
    const tg_term *prev = alt ? a[alt - 1] : NULL;
    size_t j = alt;
    for (; j < nd->n; j++) {
        if (u[j] || a[j] == prev)
            continue;
        if (h && (!tgT_ispair(a[j]) || a[j]->e[0] != h))
            continue;
        break;
    }
    if (j >= nd->n)
        return 0;
    if (choice_push(S, pc, j + 1, S->ttop) < 0 || take(S, pc->a, (uint32_t)j) < 0)
        return -1;
    R[pc->d] = a[j];
    return 1;
}

/* An unused argument equal to x, from position *from on (wrapping):
 * taken, with *from after it. */
static int take_equal(acs *S, uint32_t ndi, const tg_term *x, size_t *from)
{
    node *nd = &S->nodes[ndi];
    tg_term **a = node_args(S, nd);
    unsigned char *u = node_used(S, nd);
    for (size_t c = 0, j = *from; c < nd->n; c++, j = j + 1 == nd->n ? 0 : j + 1)
        if (!u[j] && a[j] == x) {
            *from = j + 1 == nd->n ? 0 : j + 1;
            return take(S, ndi, (uint32_t)j) < 0 ? -1 : 1;
        }
    return 0;
}

/* Bag: the value x of a bound variable (or a constant) taken; an
 * application of an assoc op stands for its arguments. */
static int i_take(acs *S, const tgW_ins *pc, tg_term *const *K, tg_term **R)
{
    node *nd = &S->nodes[pc->a];
    tg_term *x = pc->pad ? K[pc->b] : R[pc->b];
    size_t from = 0;
    if (!pc->pad && (nd->mode & TGW_AC_FLAT) && app_len(x, nd->head)) {
        tg_iter it = {x, 1};
        for (tg_term *y; (y = tgT_iter_next(&it));) {
            int t = take_equal(S, pc->a, y, &from);
            if (t <= 0)
                return t;
        }
        return 1;
    }
    return take_equal(S, pc->a, x, &from);
}

/* A group's state in the arena: the m arguments unused when it began,
 * and which of them it has (a binary counter, element 0 lowest). */
typedef struct group {
    uint32_t m, ones;
    uint32_t idx[];         /* then m flags */
} group;

static int i_group(acs *S, const tgW_ins *pc, tg_ctx *ctx, tg_term **R, size_t alt, unsigned long *work)
{
    node *nd = &S->nodes[pc->a];
    size_t goff;
    if (!alt) {
        uint32_t m = nd->n - nd->used;
        if (m < 1u + pc->c)
            return 0;
        goff = arena_get(S, sizeof(group) + m * (sizeof(uint32_t) + 1));
        if (goff == SIZE_MAX)
            return -1;
        group *g = (group *)(void *)(S->arena + goff);
        unsigned char *u = node_used(S, nd);
        g->m = 0, g->ones = 0;
        for (uint32_t j = 0; j < nd->n; j++)
            if (!u[j])
                g->idx[g->m++] = j;
        memset(g->idx + m, 0, m);
    } else {
        goff = alt - 1;
    }
    group *g = (group *)(void *)(S->arena + goff);
    unsigned char *in = (unsigned char *)(g->idx + g->m);
    /* the next subset leaving at least c arguments for the groups after */
    do {
        uint32_t i = 0;
        while (i < g->m && in[i])
            in[i++] = 0;
        if (i == g->m)
            return 0;
        in[i] = 1;
        g->ones = g->ones - i + 1;
        if (++*work > TGW_AC_MAX_RETRIES)
            return -2;
    } while (g->ones > g->m - pc->c);
    if (choice_push(S, pc, goff + 1, S->ttop) < 0)
        return -1;
    size_t voff = arena_get(S, g->ones * sizeof(tg_term *));
    if (voff == SIZE_MAX)
        return -1;
    g = (group *)(void *)(S->arena + goff);
    in = (unsigned char *)(g->idx + g->m);
    tg_term **v = (tg_term **)(void *)(S->arena + voff), **a = node_args(S, nd);
    size_t k = 0;
    for (uint32_t i = 0; i < g->m; i++)
        if (in[i]) {
            v[k++] = a[g->idx[i]];
            if (take(S, pc->a, g->idx[i]) < 0)
                return -1;
        }
    return (R[pc->d] = group_term(ctx, nd, k, v)) ? 1 : -1;
}

/* Bag: every unused argument, as one term (M_ACALL) or a list. */
static int i_all(acs *S, const tgW_ins *pc, tg_ctx *ctx, tg_term **R, int list)
{
    node *nd = &S->nodes[pc->a];
    uint32_t m = nd->n - nd->used;
    if (!list && !m)
        return 0;
    size_t voff = arena_get(S, (m ? m : 1) * sizeof(tg_term *));
    if (voff == SIZE_MAX)
        return -1;
    tg_term **v = (tg_term **)(void *)(S->arena + voff), **a = node_args(S, nd);
    unsigned char *u = node_used(S, nd);
    size_t k = 0;
    for (uint32_t j = 0; j < nd->n; j++)
        if (!u[j]) {
            v[k++] = a[j];
            if (take(S, pc->a, j) < 0)
                return -1;
        }
    R[pc->d] = list ? tg_list(ctx, k, v, NULL) : group_term(ctx, nd, k, v);
    return R[pc->d] ? 1 : -1;
}

/* Sequence: the next L arguments taken. */
static int advance(acs *S, uint32_t ndi, uint32_t l)
{
    S->nodes[ndi].used += l;
    return trail_push(S, ndi, l);
}

static int i_sone(acs *S, const tgW_ins *pc, tg_term **R)
{
    node *nd = &S->nodes[pc->a];
    if (nd->used >= nd->n)
        return 0;
    R[pc->d] = node_args(S, nd)[nd->used];
    return advance(S, pc->a, 1) < 0 ? -1 : 1;
}

/* Sequence: runs of 1, 2, ... arguments (pad: exactly the rest). */
static int i_srun(acs *S, const tgW_ins *pc, tg_ctx *ctx, tg_term **R, size_t alt)
{
    node *nd = &S->nodes[pc->a];
    uint32_t left = nd->n - nd->used, l;
    if (pc->pad) {
        l = left;
        if (!l)
            return 0;
    } else {
        l = (uint32_t)alt + 1;
        if (left < pc->c || l > left - pc->c)
            return 0;
        if (choice_push(S, pc, l, S->ttop) < 0)
            return -1;
    }
    tg_term **a = node_args(S, nd) + nd->used;
    if (!(R[pc->d] = group_term(ctx, nd, l, a)))
        return -1;
    return advance(S, pc->a, l) < 0 ? -1 : 1;
}

static int i_stake(acs *S, const tgW_ins *pc, tg_term **R)
{
    node *nd = &S->nodes[pc->a];
    tg_term *x = R[pc->b];
    tg_term **a = node_args(S, nd);
    uint32_t p = nd->used;
    if (app_len(x, nd->head)) {
        tg_iter it = {x, 1};
        for (tg_term *y; (y = tgT_iter_next(&it));)
            if (p >= nd->n || a[p++] != y)
                return 0;
    } else if (p >= nd->n || a[p++] != x) {
        return 0;
    }
    return advance(S, pc->a, p - nd->used) < 0 ? -1 : 1;
}

/* ---- matching: the other instructions (as in match.c) -------------- */

/* The c arguments of t into out when t is (head a1 ... ac). */
static int app_args(const tg_term *t, const tg_term *head, unsigned c, tg_term **out)
{
    if (app_len(t, head) != c + 1u)
        return 0;
    tg_iter it = {t, 1};
    for (unsigned i = 0; i < c; i++)
        out[i] = tgT_iter_next(&it);
    return 1;
}

static int i_list(const tgW_ins *pc, tg_term **R)
{
    tg_iter it = {R[pc->a], 0};
    unsigned i = 0;
    for (tg_term *x; (x = tgT_iter_next(&it));)
        if (i == pc->c)
            return 0;
        else
            R[pc->d + i++] = x;
    return i == pc->c && it.node == TGT_NIL;
}

static int i_appseg(tg_ctx *ctx, const tgW_ins *pc, tg_term *const *K, tg_term **R)
{
    const tg_term *t = R[pc->a];
    if (!tgT_ispair(t) || t->e[0] != K[pc->b])
        return 0;
    tg_iter it = {t, 1};
    for (unsigned i = 0; i < pc->c; i++)
        if (!(R[pc->d + i] = tgT_iter_next(&it)))
            return 0;
    return (R[pc->d + pc->c] = tg_iter_rest(ctx, &it)) ? 1 : -1;
}

static int i_comm(acs *S, const tgW_ins *pc, tg_term *const *K, tg_term **A, uint32_t n, tg_term **R,
                  size_t alt)
{
    tg_term *two[2];
    if (pc->op == M_ROOTCOMM) {
        if (n != 2)
            return 0;
        two[0] = A[0], two[1] = A[1];
    } else if (!app_args(R[pc->a], K[pc->b], 2, two)) {
        return 0;
    }
    R[pc->d] = two[alt], R[pc->d + 1] = two[!alt];
    if (!alt && two[0] != two[1] && choice_push(S, pc, 1, S->ttop) < 0)
        return -1;
    return 1;
}

/* ---- matching: the loop ------------------------------------------------- */

static acs *acs_get(tg_rules *rs)
{
    if (!rs->acs)
        rs->acs = GC_MALLOC(sizeof *rs->acs);
    return rs->acs;
}

static int step(acs *S, tg_ctx *ctx, const tgW_ins *pc, tg_term *const *K, tg_term **A, uint32_t n,
                tg_term **R, size_t alt, unsigned long *work)
{
    switch (pc->op) {
    case M_ACRULE:
        return 1;
    case M_ROOT:
        return n == pc->a;
    case M_ROOTSEG:
        if (n < pc->a)
            return 0;
        memmove(R, A, pc->a * sizeof *R);
        return (R[pc->a] = tg_list(ctx, n - pc->a, A + pc->a, NULL)) ? 1 : -1;
    case M_APP:
        return app_args(R[pc->a], K[pc->b], pc->c, R + pc->d);
    case M_APPSEG:
        return i_appseg(ctx, pc, K, R);
    case M_LIST:
        return i_list(pc, R);
    case M_CONST:
        return R[pc->a] == K[pc->b];
    case M_SAME:
        return R[pc->a] == R[pc->b];
    case M_COMM: case M_ROOTCOMM:
        return i_comm(S, pc, K, A, n, R, alt);
    case M_ACOPEN:
        return i_open(S, pc, K, A, n, R);
    case M_ACONE:
        return i_one(S, pc, K, R, alt);
    case M_ACTAKE:
        return i_take(S, pc, K, R);
    case M_ACGROUP:
        return i_group(S, pc, ctx, R, alt, work);
    case M_ACALL: case M_ACREST:
        return i_all(S, pc, ctx, R, pc->op == M_ACREST);
    case M_ACEND:
        return S->nodes[pc->a].used == S->nodes[pc->a].n;
    case M_ASONE:
        return i_sone(S, pc, R);
    case M_ASRUN:
        return i_srun(S, pc, ctx, R, alt);
    case M_ASTAKE:
        return i_stake(S, pc, R);
    }
    return 0;
}

/* ---- matching: what a root needs ------------------------------------ */

/* A bit for the key of t: its head when an application, else t. */
static inline uint64_t key_bit(const tg_term *t)
{
    const tg_term *k = tgT_ispair(t) ? t->e[0] : t;
    return 1ull << ((uintptr_t)k * 0x9E3779B97F4A7C15ull >> 58);
}

/* An assoc / comm root takes, for each constant of the pattern, an
 * argument equal to it, and for each application pattern with a symbol
 * head, an argument with that head (M_ACTAKE with pad, M_ACONE with a
 * head); and it needs as many arguments as its M_ACOPEN says.  So a call
 * whose arguments lack one of those keys, or have another count, cannot
 * match: the test below turns it down before any state is set up.  On
 * a graph most calls of add and mul meet a dozen such rules (x*1, x*0,
 * x*x^a, exp x * exp y, ...) and fail them all. */
void tgW_ac_prepare(tgW_rule *r)
{
    r->acneed = 0, r->acmin = 0, r->acmax = 0;
    const tgW_ins *open = r->match;
    while (open->op != M_DONE && !(open->op == M_ACOPEN && (open->d & TGW_AC_ROOT)))
        open++;
    if (open->op == M_DONE)
        return;     /* the root is not an assoc / comm node */
    uint32_t k = open->d >> 8, id = open->c;
    r->acmin = k;
    r->acmax = (open->d & TGW_AC_EXACT) ? k : 0;
    for (const tgW_ins *i = r->match; i->op != M_DONE; i++)
        if ((i->op == M_ACTAKE && i->pad && i->a == id) || (i->op == M_ACONE && i->a == id && i->b != 0xffff))
            r->acneed |= key_bit(r->k[i->b]);
}

/* Whether the call's n arguments A may match r's root (tgW_ac_prepare). */
static inline int root_may_match(const tgW_rule *r, tg_term *const *A, uint32_t n)
{
    if (n < r->acmin || (r->acmax && n > r->acmax))
        return 0;
    if (!r->acneed)
        return 1;
    uint64_t have = 0;
    for (uint32_t i = 0; i < n; i++)
        have |= key_bit(A[i]);
    return !(r->acneed & ~have);
}

int tgW_ac_match(tg_rules *rs, const tgW_rule *r, tg_term **A, uint32_t n, tg_term **R, tg_error *err)
{
    if (!root_may_match(r, A, n))
        return 0;
    acs *S = acs_get(rs);
    if (!S)
        return tgE_nomem(err), -1;
    S->atop = S->ttop = S->ncs = 0;
    const tgW_ins *pc = r->match;
    size_t alt = 0;
    unsigned long work = 0;
    for (;;) {
        if (pc->op == M_DONE)
            return 1;
        int ok = step(S, rs->ctx, pc, r->k, A, n, R, alt, &work);
        alt = 0;
        if (ok > 0) {
            pc++;
            continue;
        }
        if (ok == -1)
            return tgE_nomem(err), -1;
        if (ok == 0 && !S->ncs)
            return 0;
        if (ok == -2 || ++work > TGW_AC_MAX_RETRIES) {
            size_t nl;
            const char *nm = tg_symbol_name(r->name, &nl);
            tgE_set(err, TG_ERR_RANGE, r->file, r->file ? r->line : 0, r->file ? r->col : 0,
                    "matching rule %.*s modulo assoc / comm tried more than %d alternatives: stopped",
                    (int)nl, nm, TGW_AC_MAX_RETRIES);
            return -1;
        }
        choice *c = &S->cs[--S->ncs];
        trail_undo(S, c->trail);
        S->atop = c->arena;
        pc = c->pc;
        alt = c->alt;
    }
}
