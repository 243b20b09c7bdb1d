/* interp_rows.c - the interpreter's row blocks (module prefix tgI_): a
 * dot(A, w), the loops over A's rows that read it and the dot(A^T, g) of
 * what they computed, run over blocks of A's rows on a team of threads.
 * See doc/kernels.md, "Row blocks". */
#include "config.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "interp_int.h"
#include "rowpar.h"

/* dot(A, w), elementwise loops over A's rows that read it, and dot(A^T, g)
 * of what they computed (the forward and backward pass of a linear model:
 * X w, the loss's adjoint per row, X^T g) read A twice, a pass over
 * memory each when A is larger than the cache.  Run instead over blocks
 * of rows, A's block is read by the second product while in the cache:
 * the first product and the loops compute their rows of the block, and
 * the second accumulates A_block^T g_block (BLAS with beta 1 after the
 * first block).  The fused reductions fold their elements in the same
 * order as unblocked.  Steps between the two products that read neither
 * run before; those that read the loops' results (a reduction's) after.
 * Checked at each call: A row-major, and the memory the blocks write not
 * overlapping other than row for row. */
enum { TGI_ROW_BLOCK_BYTES = 256 * 1024 };

/* Compiled row steps run over a block a piece of about this many bytes
 * of A at a time (a multiple of 4 rows), so that A^T g reads the piece
 * from the nearest caches, just after dot(A, w) brought it there; the
 * interpreter's loops, whose setup is paid per call, over the whole
 * block. */
enum { TGI_ROW_PIECE_BYTES = 32 * 1024 };

/* The products go over a piece this many rows at a time, and fetch the
 * rows this far ahead of dot(A, w) (see row_block). */
enum { TGI_ROW_CHUNK = 4, TGI_FETCH_AHEAD = 24 };

typedef struct rowplan {
    int a, w, v1, v2, g;        /* A, w, dot(A, w), dot(A^T, g), g */
    int *kind;                  /* per step between: 0 before, 1 rows, 2 after */
    unsigned char *in_rows;     /* per node: written by the row steps (or v1) */
    unsigned char *late;        /* per node: computed after (a reduction of the rows, or later) */
} rowplan;

static bool row_vec(const tgV_graph *g, int v, tgV_size n)
{
    return g->nodes[v].ndim == 1 && g->nodes[v].shape[0] == n;
}

/* The nodes a step reads from outside it, into r (at most max); -1 for a
 * step kind that is never moved. */
static int step_reads(const tgH_sched *s, const tgH_step *step, int *r, int max)
{
    const tgV_node *n = &s->g->nodes[step->node];
    int c = 0;
    switch (step->kind) {
    case TGH_LOOP:
        for (int i = 0; i < step->nins && c < max; i++)
            r[c++] = step->ins[i];
        return c;
    case TGH_VIEW: case TGH_REDUCE: case TGH_DOT: case TGH_GEMM: case TGH_RESHAPE: case TGH_UPDATE:
        for (int i = 0; i < n->nargs && c < max; i++)
            r[c++] = n->args[i];
        return c;
    default:
        return -1;
    }
}

/* A loop over the rows: its nodes and outputs of A's row count, its inputs
 * of that or of one element (0-d, or static sizes 1), its reductions 0-d. */
static bool row_loop(const tgH_sched *s, const tgH_step *step, tgV_size n)
{
    const tgV_graph *g = s->g;
    if (step->kind != TGH_LOOP)
        return false;
    for (int i = 0; i < step->nnodes; i++)
        if (!row_vec(g, step->nodes[i], n))
            return false;
    for (int i = 0; i < step->nins; i++) {
        const tgV_node *x = &g->nodes[step->ins[i]];
        bool one = true;
        for (int d = 0; d < x->ndim; d++)
            one &= x->shape[d] == 1;
        if (!one && !row_vec(g, step->ins[i], n))
            return false;
    }
    for (int i = 0; i < step->nreds; i++)
        if (g->nodes[step->reds[i]].ndim != 0)
            return false;
    return true;
}

/* The plan for steps k1 (a dot(A, w)) to the dot(A^T, g) after it: the
 * index of that step, or 0 when the steps are not of that form. */
static int row_plan(const tgH_sched *s, int k1, rowplan *P)
{
    const tgV_graph *g = s->g;
    const tgV_node *d1 = &g->nodes[s->steps[k1].node];
    if (d1->op != TGV_DOT || d1->nargs != 2 || !tgV_is_float(d1->dtype))
        return 0;
    int a = d1->args[0], w = d1->args[1];
    const tgV_node *A = &g->nodes[a];
    if (A->ndim != 2 || g->nodes[w].ndim != 1 || A->dtype != d1->dtype || g->nodes[w].dtype != d1->dtype)
        return 0;
    tgV_size n = A->shape[0];
    int k2 = k1 + 1;
    for (; k2 < s->nsteps && s->steps[k2].kind != TGH_DOT && s->steps[k2].kind != TGH_GEMM; k2++)
        ;
    if (k2 >= s->nsteps || s->steps[k2].kind != TGH_DOT)
        return 0;
    const tgV_node *d2 = &g->nodes[s->steps[k2].node];
    if (d2->op != TGV_DOT || d2->nargs != 2 || d2->dtype != d1->dtype)
        return 0;
    const tgV_node *at = &g->nodes[d2->args[0]];
    if (at->op != TGV_TRANSPOSE || at->args[0] != a || !row_vec(g, d2->args[1], n) ||
        g->nodes[d2->args[1]].dtype != d1->dtype)
        return 0;
    P->a = a, P->w = w, P->v1 = s->steps[k1].node, P->v2 = s->steps[k2].node, P->g = d2->args[1];
    P->kind = calloc((size_t)(k2 - k1 + 1), sizeof *P->kind);
    P->in_rows = calloc((size_t)g->n, 1);
    P->late = calloc((size_t)g->n, 1);
    if (!P->kind || !P->in_rows || !P->late)
        return 0;
    P->in_rows[P->v1] = 1;
    int nrows = 0;
    for (int k = k1 + 1; k < k2; k++) {
        const tgH_step *step = &s->steps[k];
        int r[64], nr = step_reads(s, step, r, 64);
        if (nr < 0 || nr >= 64)
            return 0;
        bool rows = false, late = false;
        for (int i = 0; i < nr; i++)
            rows |= P->in_rows[r[i]], late |= P->late[r[i]];
        int kind = late ? 2 : rows && row_loop(s, step, n) ? 1 : rows ? 2 : 0;
        P->kind[k - k1] = kind;
        if (kind == 1) {
            nrows++;
            for (int i = 0; i < step->nnodes; i++)
                P->in_rows[step->nodes[i]] = 1;
            for (int i = 0; i < step->nreds; i++)
                P->late[step->reds[i]] = 1;
        } else if (kind == 2) {
            P->late[step->node] = 1;
            for (int i = 0; step->kind == TGH_LOOP && i < step->nnodes; i++)
                P->late[step->nodes[i]] = 1;
            for (int i = 0; step->kind == TGH_LOOP && i < step->nreds; i++)
                P->late[step->reds[i]] = 1;
        }
    }
    /* the rows must not wait for a step after them, nor g */
    for (int k = k1 + 1; k < k2; k++)
        if (P->kind[k - k1] == 1) {
            const tgH_step *step = &s->steps[k];
            for (int i = 0; i < step->nins; i++)
                if (P->late[step->ins[i]])
                    return 0;
        }
    return nrows && P->in_rows[P->g] && !P->late[P->g] ? k2 : 0;
}

static void plan_free(rowplan *P)
{
    free(P->kind), free(P->in_rows), free(P->late);
}

/* Whether the byte ranges of a and b (1-d, or A) overlap. */
static bool overlaps(const tgI_arr *a, const tgI_arr *b)
{
    const char *a0 = a->data, *b0 = b->data;
    const char *a1 = a0 + (a->ndim ? a->strides[0] * (a->shape[0] ? a->shape[0] - 1 : 0) : 0) + 8;
    const char *b1 = b0 + (b->ndim ? b->strides[0] * (b->shape[0] ? b->shape[0] - 1 : 0) : 0) + 8;
    if (a->ndim == 2)
        a1 += a->strides[1] * (a->shape[1] ? a->shape[1] - 1 : 0);
    if (b->ndim == 2)
        b1 += b->strides[1] * (b->shape[1] ? b->shape[1] - 1 : 0);
    return a0 < b1 && b0 < a1;
}

/* Steps move (those that read none of the rows before the first
 * product, those that read the loops' reductions after the row steps)
 * and the row steps run a block at a time, so values that shared memory
 * in the schedule's order may be live at once in the new one.  Each
 * value the window touches gets its span in the new order: from the
 * step that writes it (or from before the window) to the last step that
 * reads it (or past the window when a later step or an output reads
 * it); the row steps all share one span, the second product's reads
 * are in it, its result written at the end.  Safe when no two values in
 * the same memory, one of them written, have spans that cross, except
 * two row values in the same memory row for row that only the row steps
 * touch (a loop's output in place of its input), or a value in place of
 * one the same step reads, read by nothing else.  The second product
 * accumulates in a buffer of its own, copied in place at the end. */
static bool window_memory_ok(const tgH_sched *s, const tgI_state *st, const rowplan *P, int k1, int k2)
{
    enum { ROWS = 1 << 28, PAST = 1 << 30 };
    const tgV_graph *g = s->g;
    tgV_size rows = g->nodes[P->a].shape[0];
    int cap = 0;
    for (int k = k1; k <= k2; k++)
        cap += s->steps[k].nins + s->steps[k].nouts + s->steps[k].nreds + g->nodes[s->steps[k].node].nargs + 2;
    int *t = malloc((size_t)cap * sizeof *t), *lo = malloc((size_t)g->n * sizeof *lo);
    int *hi = malloc((size_t)g->n * sizeof *hi), *reads = calloc((size_t)g->n, sizeof *reads);
    /* per node: 1 seen, 2 written, 4 touched by the row steps, 8 by others */
    unsigned char *f = calloc((size_t)g->n, 1);
    bool ok = t && lo && hi && reads && f;
    int nt = 0;
#define TOUCH(v, w, key) do { int v_ = (v), k_ = (key); \
        if (!f[v_]) f[v_] = 1, t[nt++] = v_, lo[v_] = PAST, hi[v_] = -1; \
        if (w) f[v_] |= 2, lo[v_] = k_ < lo[v_] ? k_ : lo[v_]; else reads[v_]++; \
        hi[v_] = k_ > hi[v_] ? k_ : hi[v_]; f[v_] |= k_ == ROWS ? 4 : 8; } while (0)
    for (int k = k1; ok && k <= k2; k++) {
        const tgH_step *step = &s->steps[k];
        const tgV_node *n = &g->nodes[step->node];
        int kind = k == k1 || k == k2 ? 1 : P->kind[k - k1];
        int key = kind == 1 ? ROWS : kind == 0 ? k - k1 : ROWS + (k - k1);
        if (step->kind == TGH_LOOP) {
            for (int i = 0; i < step->nins; i++)
                TOUCH(step->ins[i], 0, key);
            for (int i = 0; i < step->nouts; i++)
                TOUCH(step->outs[i], 1, key);
            for (int i = 0; i < step->nreds; i++)
                TOUCH(step->reds[i], 1, key);
        } else {
            for (int i = 0; i < n->nargs; i++)
                TOUCH(n->args[i], 0, key);
            if (k == k2)
                TOUCH(step->node, 1, ROWS + (k2 - k1) + 1);
            else
                TOUCH(step->node, step->kind != TGH_VIEW, key);
        }
    }
#undef TOUCH
    for (int i = 0; ok && i < nt; i++)
        if (lo[t[i]] == PAST)
            lo[t[i]] = -1;      /* not written in the window: live from before it */
    /* read past the window */
    for (int k = k2 + 1; ok && k < s->nsteps; k++) {
        const tgH_step *step = &s->steps[k];
        const tgV_node *n = &g->nodes[step->node];
        int nr = step->kind == TGH_LOOP ? step->nins : n->nargs;
        for (int i = 0; i < nr; i++) {
            int v = step->kind == TGH_LOOP ? step->ins[i] : n->args[i];
            if (f[v])
                hi[v] = PAST;
        }
    }
    for (int i = 0; ok && i < g->noutputs; i++)
        if (f[g->outputs[i]])
            hi[g->outputs[i]] = PAST;
    for (int i = 0; ok && i < nt; i++) {
        int u = t[i];
        const tgI_arr *x = &st->vals[u];
        if (!x->data)
            continue;
        for (int j = i + 1; ok && j < nt; j++) {
            int v = t[j];
            const tgI_arr *y = &st->vals[v];
            if (!y->data || !((f[u] | f[v]) & 2) || !overlaps(x, y))
                continue;
            bool same = x->data == y->data && x->ndim == y->ndim &&
                        !memcmp(x->strides, y->strides, (size_t)x->ndim * sizeof *x->strides);
            if (f[u] & f[v] & 4)        /* both in the rows: only in place */
                ok = (same && row_vec(g, u, rows) && row_vec(g, v, rows) && !((f[u] | f[v]) & 8)) ||
                     (same && (f[u] & 2) != (f[v] & 2) && reads[f[u] & 2 ? v : u] <= 1);
            else
                ok = !(lo[u] < hi[v] && lo[v] < hi[u]);
        }
    }
    free(t), free(lo), free(hi), free(reads), free(f);
    return ok;
}

/* The nodes of A's row count the row steps write and read, each once,
 * into list (their values are moved to each block in turn); the
 * checks on memory: 1 when the blocks may run. */
static int row_nodes(const tgH_sched *s, const tgI_state *st, const rowplan *P, int k1, int k2, int *list,
                     unsigned char *mark, int *nl)
{
    const tgV_graph *g = s->g;
    tgV_size rows = g->nodes[P->a].shape[0];
    int n = 0;
#define ADD(v) do { int v_ = (v); if (!mark[v_] && row_vec(g, v_, rows)) mark[v_] = 1, list[n++] = v_; } while (0)
    ADD(P->v1);
    for (int k = k1 + 1; k < k2; k++) {
        const tgH_step *step = &s->steps[k];
        if (P->kind[k - k1] != 1)
            continue;
        ADD(step->node);
        for (int i = 0; i < step->nins; i++)
            ADD(step->ins[i]);
        for (int i = 0; i < step->nouts; i++)
            ADD(step->outs[i]);
    }
#undef ADD
    *nl = n;
    /* what the blocks write: v1 and the row steps' outputs (mark 2) */
    mark[P->v1] = 2;
    for (int k = k1 + 1; k < k2; k++)
        for (int i = 0; P->kind[k - k1] == 1 && i < s->steps[k].nouts; i++)
            mark[s->steps[k].outs[i]] = 2;
    const tgI_arr *A = &st->vals[P->a];
    size_t es = tgV_dtype_size(A->dtype);
    if (A->strides[1] != (int64_t)es || A->strides[0] < A->shape[1] * (int64_t)es ||
        A->strides[0] % (int64_t)es || A->shape[0] == 0 || A->shape[1] == 0 ||
        A->strides[0] / (int64_t)es > INT32_MAX || A->shape[1] > INT32_MAX ||   /* BLAS takes int */
        st->vals[P->w].strides[0] != (int64_t)es || st->vals[P->v1].strides[0] != (int64_t)es ||
        st->vals[P->g].strides[0] != (int64_t)es)
        return 0;
    return window_memory_ok(s, st, P, k1, k2);
}

/* A matrix of at least this many bytes runs its row blocks on threads;
 * a block has at most TGI_ROW_BLOCK_MAX rows (a compiled loop over fewer
 * than TGK_PAR_MIN elements starts no OpenMP threads of its own). */
enum { TGI_ROW_PAR_BYTES = 4 << 20, TGI_ROW_BLOCK_MAX = 16384 };

/* One window's row blocks.  Each block is computed whole by one thread
 * (whichever takes it first):
 * its rows of dot(A, w), the row steps over its rows (its own partial
 * value of each fused reduction, from the identity), its A^T g (its own
 * partial product); the partials are then folded in block order, so the
 * bits are the same on any number of threads.  The interpreter's loops
 * share the state's registers: they run on the calling thread alone. */
typedef struct rowrun {
    const tgH_sched *s;
    tgI_state *st;
    const rowplan *P;
    int k1, k2, nred, nt;
    const int *lidx;            /* per node: its index in saved, or -1 */
    const tgI_arr *saved;       /* the row values, whole */
    const facc *Fa;             /* the fused reductions (their kinds) */
    tg_dtype d;
    size_t es;
    const char *a, *w;
    char *y1, *g;               /* dot(A, w) and g, whole */
    int64_t lda, n, f, b, nb;   /* A's row stride, rows, columns; a block's rows; blocks */
    int64_t sub;                /* a piece's rows (row_block) */
    char *t;                    /* per block: its partial A^T g, f elements */
    reg *part;                  /* per block: its partial of each fused reduction */
    atomic_llong next;          /* the next block no member has claimed */
} rowrun;

/* Value v as the row steps of block rows [i0, i0 + b) see it. */
static tgI_arr row_win(const rowrun *R, int v, int64_t i0, int64_t b)
{
    if (R->lidx[v] < 0)
        return R->st->vals[v];
    tgI_arr x = R->saved[R->lidx[v]];
    x.shape[0] = b;
    x.data += i0 * x.strides[0];
    return x;
}

/* A compiled row step over one block (run_native on the block's views). */
static void row_native(const rowrun *R, const tgH_step *step, tgJ_loop_fn fn, const facc *F, int64_t i0, int64_t b)
{
    tgI_arr sh = row_win(R, step->node, i0, b);
    int nio = step->nins + step->nouts, nall = nio + step->nreds;
    int64_t strides[nall > 0 ? nall : 1][TGV_MAXDIM];
    char *base[nall > 0 ? nall : 1];
    for (int k = 0; k < nio; k++) {
        tgI_arr a = row_win(R, k < step->nins ? step->ins[k] : step->outs[k - step->nins], i0, b);
        tgI_loop_strides(&a, &sh, strides[k]);
        base[k] = a.data;
    }
    for (int r = 0; r < step->nreds; r++) {
        base[nio + r] = (char *)F[r].acc;
        strides[nio + r][0] = 0;    /* to one value */
    }
    /* the loop's strides are read as [operand][dim] with sh.ndim (1) dims */
    int64_t flat[(nall > 0 ? nall : 1)];
    for (int k = 0; k < nall; k++)
        flat[k] = strides[k][0];
    fn(sh.shape, base, flat);
}

/* Rows [r0, r0 + b) of the products: dot(A, w) into y1, or A^T g added
 * into t. */
static void rows_dot(const rowrun *R, int64_t r0, int64_t b)
{
    const char *ab = R->a + r0 * R->lda * (int64_t)R->es;
    if (R->d == TG_FLOAT64)
        tgRp_rows_dot_d(b, R->f, (const double *)ab, R->lda, (const double *)R->w, (double *)R->y1 + r0);
    else
        tgRp_rows_dot_s(b, R->f, (const float *)ab, R->lda, (const float *)R->w, (float *)R->y1 + r0);
}

static void cols_dot(const rowrun *R, int64_t r0, int64_t b, char *t)
{
    const char *ab = R->a + r0 * R->lda * (int64_t)R->es;
    if (R->d == TG_FLOAT64)
        tgRp_cols_dot_d(b, R->f, (const double *)ab, R->lda, (const double *)R->g + r0, (double *)t);
    else
        tgRp_cols_dot_s(b, R->f, (const float *)ab, R->lda, (const float *)R->g + r0, (float *)t);
}

/* The rows a member will read next, in order: those of block bk, then
 * those of block nx (-1: none), fetched a few at a time ahead of the
 * products (fetch_to) so that memory is kept busy while the row steps and
 * the products compute, rather than fetched in bursts that stall the
 * member while they come and leave memory idle after. */
typedef struct rowfetch {
    const rowrun *R;
    int64_t i0, b, j0, jb;      /* block bk's first row and rows; nx's */
    int64_t done;               /* rows of the two fetched so far */
} rowfetch;

/* Fetch the member's rows up to `upto` (counted from block bk's first). */
static void fetch_to(rowfetch *F, int64_t upto)
{
    const rowrun *R = F->R;
    int64_t es = (int64_t)R->es, end = F->b + F->jb;
    upto = upto < end ? upto : end;
    while (F->done < upto) {
        int64_t r = F->done < F->b ? F->i0 + F->done : F->j0 + (F->done - F->b);
        int64_t left = F->done < F->b ? F->b - F->done : end - F->done, k = upto - F->done;
        k = k < left ? k : left;
        tgRp_fetch(R->a + r * R->lda * es, k, R->lda * es, R->f * es);
        F->done += k;
    }
}

/* Rows [p0, p0 + pb) of F's block through a product (A^T g into t, or
 * dot(A, w) when t is NULL), TGI_ROW_CHUNK rows at a time, each chunk
 * fetching half as many rows ahead: the two products of a piece fetch
 * as many rows as it has, so the rows fetched stay TGI_FETCH_AHEAD ahead
 * of each piece's start. */
static void product_chunks(rowfetch *F, int64_t p0, int64_t pb, char *t)
{
    const rowrun *R = F->R;
    int64_t c = TGI_ROW_CHUNK, r0 = F->i0 + p0;
    for (int64_t q = 0; q < pb; q += c) {
        int64_t n = pb - q < c ? pb - q : c;
        fetch_to(F, F->done + (n + 1) / 2);
        if (t)
            cols_dot(R, r0 + q, n, t);
        else
            rows_dot(R, r0 + q, n);
    }
}

/* Block bk whole, a piece of R->sub rows at a time: the piece's dot(A, w),
 * its row steps, its A^T g, while it is in the nearest cache; the rows
 * ahead fetched meanwhile, TGI_FETCH_AHEAD rows ahead of dot(A, w) and
 * into block nx (the member's next; -1: none).  A block's partials (its
 * A^T g, its fused reductions) are folded piece after piece in row order,
 * whoever computes it. */
static void row_block(const rowrun *R, int64_t bk, int64_t nx)
{
    const tgH_sched *s = R->s;
    int64_t i0 = bk * R->b, b = R->n - i0 < R->b ? R->n - i0 : R->b, es = (int64_t)R->es;
    reg *part = R->part + bk * R->nred;
    char *t = R->t + bk * R->f * es;
    rowfetch F = {R, i0, b, nx >= 0 ? nx * R->b : 0, 0, 0};
    if (nx >= 0)
        F.jb = R->n - F.j0 < R->b ? R->n - F.j0 : R->b;
    fetch_to(&F, TGI_FETCH_AHEAD);     /* mostly fetched already, as the previous block's next */
    memset(t, 0, (size_t)(R->f * es));
    for (int r = 0, k = R->k1 + 1; k < R->k2; k++)
        for (int q = 0; R->P->kind[k - R->k1] == 1 && q < s->steps[k].nreds; q++, r++)
            part[r] = red_identity(s->g->nodes[s->steps[k].reds[q]].op, R->Fa[r].fl);
    for (int64_t p0 = 0; p0 < b; p0 += R->sub) {
        int64_t pb = b - p0 < R->sub ? b - p0 : R->sub, r0 = i0 + p0;
        product_chunks(&F, p0, pb, NULL);
        int r = 0;
        for (int k = R->k1 + 1; k < R->k2; k++) {
            if (R->P->kind[k - R->k1] != 1)
                continue;
            const tgH_step *step = &s->steps[k];
            facc Fr[step->nreds > 0 ? step->nreds : 1];
            for (int q = 0; q < step->nreds; q++, r++) {
                Fr[q] = R->Fa[r];
                Fr[q].acc = &part[r];
                Fr[q].blk.on = false;
            }
            if (R->st->kern && R->st->kern[k]) {
                row_native(R, step, R->st->kern[k], Fr, r0, pb);
            } else {    /* the interpreter: the calling thread alone */
                for (int i = 0; i < R->s->g->n; i++)
                    if (R->lidx[i] >= 0)
                        R->st->vals[i] = row_win(R, i, r0, pb);
                tgI_run_loop(s, R->st, step, R->st->pos, Fr);
            }
        }
        product_chunks(&F, p0, pb, t);
    }
}

/* y += t, f elements of dtype d (float64 or float32). */
static void add_into(tg_dtype d, char *y, const char *t, int64_t f)
{
    for (int64_t j = 0; j < f; j++)
        if (d == TG_FLOAT64)
            ((double *)y)[j] += ((const double *)t)[j];
        else
            ((float *)y)[j] += ((const float *)t)[j];
}

/* The q-th fused reduction of the window's row steps. */
static int red_node(const tgH_sched *s, const rowplan *P, int k1, int k2, int q)
{
    for (int k = k1 + 1; k < k2; k++)
        if (P->kind[k - k1] == 1) {
            if (q < s->steps[k].nreds)
                return s->steps[k].reds[q];
            q -= s->steps[k].nreds;
        }
    return -1;
}

/* The members take the blocks in turn, each claiming its next one
 * before it computes the one it holds (so that it can fetch it): a
 * member the machine leaves waiting takes fewer, and the others do the
 * rest. */
static void row_phase(void *ud, int tid)
{
    rowrun *R = ud;
    (void)tid;
    int64_t bk = atomic_fetch_add(&R->next, 1);
    while (bk < R->nb) {
        int64_t nx = atomic_fetch_add(&R->next, 1);
        row_block(R, bk, nx < R->nb ? nx : -1);
        bk = nx;
    }
}

/* Run steps k1 to k2 as row blocks when they are of that form: k2, or 0
 * when they are not (the caller runs them one by one), or -1 with err. */
int tgI_row_blocks(const tgH_sched *s, tgI_state *st, int k1, tg_error *err)
{
    const tgV_graph *g = s->g;
    rowplan P = {0};
    int k2 = row_plan(s, k1, &P), rc = 0;
    int *list = k2 ? malloc((size_t)g->n * sizeof *list) : NULL;
    unsigned char *mark = k2 ? calloc((size_t)g->n, 1) : NULL;
    tgI_arr *saved = k2 ? malloc((size_t)g->n * sizeof *saved) : NULL;
    int nl = 0;
    if (!k2 || !list || !mark || !saved || !row_nodes(s, st, &P, k1, k2, list, mark, &nl)) {
        if (k2 && list && mark && saved) {    /* one by one */
            for (int k = k1; k <= k2 && rc == 0; k++)
                rc = tgI_run_step(s, st, k, err) < 0 ? -1 : 0;
            rc = rc < 0 ? -1 : k2;
        }
        goto done;
    }
    /* the views and loops that read nothing of the rows run first (A's
     * transpose among them) */
    for (int k = k1 + 1; k < k2; k++)
        if (P.kind[k - k1] == 0 && tgI_run_step(s, st, k, err) < 0) {
            rc = -1;
            goto done;
        }
    {
        const tgI_arr *A = &st->vals[P.a];
        tg_dtype d = A->dtype;
        size_t es = tgV_dtype_size(d);
        int64_t N = A->shape[0], F = A->shape[1], lda = A->strides[0] / (int64_t)es;
        int64_t B = TGI_ROW_BLOCK_BYTES / (F * (int64_t)es);
        B = B < 64 ? 64 : B > TGI_ROW_BLOCK_MAX ? TGI_ROW_BLOCK_MAX : B;
        /* the fused reductions accumulate over all blocks */
        int nred = 0;
        for (int k = k1 + 1; k < k2; k++)
            if (P.kind[k - k1] == 1)
                nred += s->steps[k].nreds;
        facc *Fa = calloc((size_t)(nred ? nred : 1), sizeof *Fa);
        if (!Fa) {
            rc = -1, tgE_nomem(err);
            goto done;
        }
        int r = 0;
        char *y2v = NULL;
        for (int k = k1 + 1; k < k2 && rc == 0; k++)
            if (P.kind[k - k1] == 1) {
                tgI_donated(s, st, &s->steps[k]);
                for (int q = 0; q < s->steps[k].nreds && rc == 0; q++, r++)
                    if (tgI_reduce_begin(s, st, s->steps[k].reds[q], &Fa[r], err) < 0)
                        rc = -1;
            }
        if (rc == 0) {
            for (int i = 0; i < nl; i++)
                saved[i] = st->vals[list[i]];
            int *lidx = malloc((size_t)g->n * sizeof *lidx);
            rowrun R = {s, st, &P, k1, k2, nred, 1, lidx, saved, Fa, d, es, A->data, st->vals[P.w].data,
                        st->vals[P.v1].data, st->vals[P.g].data, lda, N, F, B, (N + B - 1) / B, B, NULL, NULL, 0};
            char *y2 = calloc((size_t)F, es);
            R.t = malloc((size_t)R.nb * (size_t)F * es);
            R.part = malloc((size_t)R.nb * (size_t)(nred ? nred : 1) * sizeof *R.part);
            if (!lidx || !y2 || !R.t || !R.part) {
                free(lidx), free(y2), free(R.t), free(R.part);
                rc = -1, tgE_nomem(err);
                goto blocks_done;
            }
            for (int i = 0; i < g->n; i++)
                lidx[i] = -1;
            for (int i = 0; i < nl; i++)
                lidx[list[i]] = i;
            /* threads: for a matrix past the caches, compiled row steps, two
             * blocks a thread at least */
            bool native = st->kern != NULL;
            for (int k = k1 + 1; k < k2; k++)
                native = native && (P.kind[k - k1] != 1 || st->kern[k] != NULL);
            if (native) {
                int64_t p = TGI_ROW_PIECE_BYTES / (F * (int64_t)es) / 4 * 4;
                R.sub = p < 4 ? 4 : p;
            }
            int want = native && (int64_t)es * N * F >= TGI_ROW_PAR_BYTES ? tgRp_threads() : 1;
            want = (int64_t)want > R.nb / 2 ? (int)(R.nb / 2) : want;
            tgRp_count_window();
            tgRp_team *team = want > 1 ? tgRp_start(want, row_phase, &R) : NULL;
            R.nt = tgRp_size(team);
            if (team)
                tgRp_phase(team);
            else
                row_phase(&R, 0);
            tgRp_stop(team);
            /* the partials, in block order */
            for (int64_t bk = 0; bk < R.nb; bk++) {
                add_into(d, y2, R.t + bk * F * (int64_t)es, F);
                for (int q = 0; q < nred; q++)
                    fold1(g->nodes[red_node(s, &P, k1, k2, q)].op, Fa[q].fl, Fa[q].acc, R.part[bk * nred + q]);
            }
            for (int q = 0; q < nred; q++)
                Fa[q].blk.on = false;
            free(lidx), free(R.t), free(R.part);
            for (int i = 0; i < nl; i++)
                st->vals[list[i]] = saved[i];
            y2v = y2;
        }
    blocks_done:
        /* accumulators stored (or freed after an error) */
        r = 0;
        for (int k = k1 + 1; k < k2; k++)
            if (P.kind[k - k1] == 1)
                for (int q = 0; q < s->steps[k].nreds; q++, r++) {
                    if (!Fa[r].acc)
                        continue;
                    if (rc == 0)
                        tgI_reduce_end(s, st, s->steps[k].reds[q], &Fa[r]);
                    else
                        free(Fa[r].acc);
                }
        free(Fa);
        /* the steps that read the rows' reductions, then the second product
         * in its place */
        for (int k = k1 + 1; k < k2 && rc == 0; k++)
            if (P.kind[k - k1] == 2 && tgI_run_step(s, st, k, err) < 0)
                rc = -1;
        if (rc == 0) {
            const tgI_arr *V2 = &st->vals[P.v2];
            for (int64_t j = 0; j < F; j++)
                memcpy(V2->data + j * V2->strides[0], y2v + j * (int64_t)es, es);
            rc = k2;
        }
        free(y2v);
    }
done:
    plan_free(&P);
    free(list), free(mark), free(saved);
    return rc;
}
