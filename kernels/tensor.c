/* tensor.c - from tensor terms to the typed graph (module prefix tgV_):
 * op lookup, dtype promotion, broadcasting with symbolic sizes kept in a
 * union-find, and the compile-time errors that name the subterm. */
#include "config.h"

#include <gc/gc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "index.h"
#include "tensor.h"
#include "random.h"
#include "scan.h"
#include "arrange.h"
#include "userop.h"

/* What an op looks like as a term: arity bounds (max -1: any) and which
 * arguments are tensors (from tlo, up to thi or the end when thi is -1). */
typedef struct opinfo {
    const char *name;
    tgV_op op;
    int min, max, tlo, thi;
} opinfo;

static const opinfo ops[] = {
    {"add", TGV_ADD, 1, -1, 0, -1}, {"sub", TGV_SUB, 2, 2, 0, -1},
    {"mul", TGV_MUL, 1, -1, 0, -1}, {"true_div", TGV_DIV, 2, 2, 0, -1},
    {"neg", TGV_NEG, 1, 1, 0, -1}, {"pow", TGV_POW, 2, 2, 0, -1},
    {"exp", TGV_EXP, 1, 1, 0, -1}, {"log", TGV_LOG, 1, 1, 0, -1},
    {"log1p", TGV_LOG1P, 1, 1, 0, -1}, {"sqrt", TGV_SQRT, 1, 1, 0, -1},
    {"sin", TGV_SIN, 1, 1, 0, -1}, {"cos", TGV_COS, 1, 1, 0, -1},
    {"tanh", TGV_TANH, 1, 1, 0, -1}, {"sigmoid", TGV_SIGMOID, 1, 1, 0, -1},
    {"abs", TGV_ABS, 1, 1, 0, -1}, {"maximum", TGV_MAXIMUM, 2, 2, 0, -1},
    {"minimum", TGV_MINIMUM, 2, 2, 0, -1},
    {"sqr", TGV_SQR, 1, 1, 0, -1}, {"reciprocal", TGV_RECIPROCAL, 1, 1, 0, -1},
    {"expm1", TGV_EXPM1, 1, 1, 0, -1}, {"softplus", TGV_SOFTPLUS, 1, 1, 0, -1},
    {"int_div", TGV_INT_DIV, 2, 2, 0, -1},
    {"mod", TGV_MOD, 2, 2, 0, -1},
    {"lt", TGV_LT, 2, 2, 0, -1}, {"le", TGV_LE, 2, 2, 0, -1},
    {"gt", TGV_GT, 2, 2, 0, -1}, {"ge", TGV_GE, 2, 2, 0, -1},
    {"eq", TGV_EQ, 2, 2, 0, -1}, {"neq", TGV_NEQ, 2, 2, 0, -1},
    {"switch", TGV_SWITCH, 3, 3, 0, -1}, {"cast", TGV_CAST, 2, 2, 1, 1},
    {"fill", TGV_FILL, 2, 2, 0, -1}, {"alloc", TGV_ALLOC, 1, 1 + TGV_MAXDIM, 0, 0},
    {"sum", TGV_SUM, 1, 2, 0, 0}, {"prod", TGV_PROD, 1, 2, 0, 0},
    {"max", TGV_MAX, 1, 2, 0, 0}, {"min", TGV_MIN, 1, 2, 0, 0},
    {"mean", TGV_MEAN, 1, 2, 0, 0}, {"dot", TGV_DOT, 2, 2, 0, -1},
    {"transpose", TGV_TRANSPOSE, 1, 2, 0, 0}, {"dimshuffle", TGV_DIMSHUFFLE, 2, 2, 0, 0},
    {"reshape", TGV_RESHAPE, 2, 2, 0, 0},
    /* tensors: X and the index terms that are not literals (index.c) */
    {"subtensor", TGV_SUBTENSOR, 1, 1 + TGV_MAXDIM, 0, -1},
    /* tensors: X, V and the index tensors */
    {"inc_subtensor", TGV_INC_SUBTENSOR, 2, 2 + TGV_MAXDIM, 0, -1},
    {"set_subtensor", TGV_SET_SUBTENSOR, 2, 2 + TGV_MAXDIM, 0, -1},
    /* picking and arranging (arrange.c) */
    {"argmax", TGV_ARGMAX, 1, 2, 0, 0}, {"argmin", TGV_ARGMIN, 1, 2, 0, 0},
    {"concatenate", TGV_CONCAT, 2, -1, 1, -1}, {"stack", TGV_STACK, 2, -1, 1, -1},
    {"concatenate_part", TGV_CONCAT_PART, 3, -1, 1, -1}, {"stack_part", TGV_STACK_PART, 3, -1, 1, -1},
    {"concatenate_inc", TGV_CONCAT_INC, 4, -1, 1, -1}, {"stack_inc", TGV_STACK_INC, 4, -1, 1, -1},
    {"take", TGV_TAKE, 2, 2, 0, -1}, {"inc_take", TGV_INC_TAKE, 3, 3, 0, -1},
    {"one_hot", TGV_ONE_HOT, 2, 2, 0, 0},
};

static const char *const dtype_names[] = {"bool", "int32", "int64", "float32", "float64"};

const char *tgV_dtype_name(tg_dtype d) { return (unsigned)d < 5 ? dtype_names[d] : "?"; }

size_t tgV_dtype_size(tg_dtype d)
{
    static const size_t sz[] = {1, 4, 8, 4, 8};
    return sz[d];
}

bool tgV_is_float(tg_dtype d) { return d == TG_FLOAT32 || d == TG_FLOAT64; }

bool tgV_elementwise(tgV_op op) { return op >= TGV_ADD && op <= TGV_ALLOC; }

const char *tgV_op_name(tgV_op op)
{
    if (op == TGV_INPUT)
        return "input";
    if (op == TGV_CONST)
        return "const";
    if (op == TGV_GEMM)
        return "gemm";
    if (op == TGV_SCAN)
        return "scan";
    if (op == TGV_RANDOM)
        return "random";
    if (op == TGV_USER)
        return "user";  /* any op defined with a C expression (tgV_node_op_name names it) */
    if (op == TGV_DEFINED)
        return "defined";   /* a defop op kept for its vjp rule */
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
        if (ops[i].op == op)
            return ops[i].name;
    return "?";
}

const char *tgV_show(const tg_term *t, char *buf, size_t size)
{
    char *p = tg_print(t, NULL);
    if (!p) {
        snprintf(buf, size, "?");
        return buf;
    }
    if (strlen(p) >= size && size > 4)
        snprintf(buf, size, "%.*s...", (int)(size - 4), p);
    else
        snprintf(buf, size, "%s", p);
    free(p);
    return buf;
}

/* ---- building state --------------------------------------------------- */

typedef struct tgV_builder {
    tgV_graph *g;
    int depth;              /* scan lambdas around this graph (0: the function's) */
    bool any_input;         /* an (input ...) met is an input (tgV_open_any) */
    int incap;              /* then: the capacity of g->inputs */
    tg_term **keys;         /* term -> node map, open addressing */
    int *vals;
    size_t mcap;
    size_t nalias;          /* map entries naming an existing node (gemm) */
    tg_error *err;
    tg_term *(*define)(void *ud, tg_term *t);  /* tgV_set_defined */
    void *define_ud;
    char buf[200];
} builder;

static const char *show(builder *b, const tg_term *t) { return tgV_show(t, b->buf, sizeof b->buf); }

static int fail(builder *b, const tg_term *t, const char *what)
{
    tgE_set(b->err, TG_ERR_TYPE, NULL, 0, 0, "kernels: in %s: %s", show(b, t), what);
    return -1;
}

static int map_get(const builder *b, const tg_term *t)
{
    size_t i = tg_hash(t) & (b->mcap - 1);
    for (; b->keys[i]; i = (i + 1) & (b->mcap - 1))
        if (b->keys[i] == t)
            return b->vals[i];
    return -1;
}

static int map_put(builder *b, tg_term *t, int v)
{
    if (2 * ((size_t)b->g->n + b->nalias + 1) >= b->mcap) {
        size_t ncap = b->mcap * 2;
        tg_term **nk = GC_MALLOC(ncap * sizeof *nk);
        int *nv = GC_MALLOC_ATOMIC(ncap * sizeof *nv);
        if (!nk || !nv)
            return tgE_nomem(b->err), -1;
        tg_term **ok = b->keys;
        int *ov = b->vals;
        size_t ocap = b->mcap;
        b->keys = nk, b->vals = nv, b->mcap = ncap;
        for (size_t i = 0; i < ocap; i++)
            if (ok[i])
                map_put(b, ok[i], ov[i]);
    }
    size_t i = tg_hash(t) & (b->mcap - 1);
    while (b->keys[i])
        i = (i + 1) & (b->mcap - 1);
    b->keys[i] = t, b->vals[i] = v;
    return 0;
}

/* A new node for t (zeroed), or NULL when out of memory. */
static tgV_node *new_node(builder *b, tg_term *t, tgV_op op)
{
    tgV_graph *g = b->g;
    if (g->n == g->cap) {
        int ncap = g->cap ? 2 * g->cap : 64;
        tgV_node *nn = GC_MALLOC((size_t)ncap * sizeof *nn);
        if (!nn)
            return tgE_nomem(b->err), NULL;
        if (g->n)
            memcpy(nn, g->nodes, (size_t)g->n * sizeof *nn);
        g->nodes = nn, g->cap = ncap;
    }
    if (map_put(b, t, g->n) < 0)
        return NULL;
    tgV_node *n = &g->nodes[g->n++];
    memset(n, 0, sizeof *n);
    n->term = t, n->op = op;
    return n;
}

/* ---- sizes --------------------------------------------------------------- */

static int uf_find(const tgV_graph *g, int k)
{
    while (g->uf[k] != k)
        k = g->uf[k];
    return k;
}

tgV_size tgV_canon(const tgV_graph *g, tgV_size s)
{
    if (s >= 0)
        return s;
    int r = uf_find(g, (int)(-s - 1));
    return g->symval[r] >= 0 ? g->symval[r] : -(tgV_size)r - 1;
}

/* The size named by term t: an integer >= 0 or a symbol. */
static int size_of(builder *b, tg_term *ctx_term, tg_term *t, tgV_size *out)
{
    tgV_graph *g = b->g;
    int64_t v;
    if (tg_kind_of(t) == TG_INT) {
        if (tg_int_get(t, &v) < 0 || v < 0)
            return fail(b, ctx_term, "a size must be a non-negative integer or a symbol");
        *out = v;
        return 0;
    }
    if (tg_kind_of(t) != TG_SYMBOL)
        return fail(b, ctx_term, "a size must be a non-negative integer or a symbol");
    for (int k = 0; k < g->nsyms; k++)
        if (g->syms[k] == t) {
            *out = tgV_canon(g, -(tgV_size)k - 1);
            return 0;
        }
    int k = tgV_new_sym(g, t, b->err);
    if (k < 0)
        return -1;
    *out = -(tgV_size)k - 1;
    return 0;
}

int tgV_new_sym(tgV_graph *g, tg_term *name, tg_error *err)
{
    if (g->nsyms == g->symcap) {
        int nc = g->symcap ? 2 * g->symcap : 16;
        tg_term **ns = GC_MALLOC((size_t)nc * sizeof *ns);
        int *nu = GC_MALLOC_ATOMIC((size_t)nc * sizeof *nu);
        int64_t *nv = GC_MALLOC_ATOMIC((size_t)nc * sizeof *nv);
        if (!ns || !nu || !nv)
            return tgE_nomem(err), -1;
        if (g->nsyms) {
            memcpy(ns, g->syms, (size_t)g->nsyms * sizeof *ns);
            memcpy(nu, g->uf, (size_t)g->nsyms * sizeof *nu);
            memcpy(nv, g->symval, (size_t)g->nsyms * sizeof *nv);
        }
        g->syms = ns, g->uf = nu, g->symval = nv, g->symcap = nc;
    }
    int k = g->nsyms++;
    g->syms[k] = name, g->uf[k] = k, g->symval[k] = -1;
    return k;
}

static void size_text(const tgV_graph *g, tgV_size s, char *buf, size_t n)
{
    s = tgV_canon(g, s);
    if (s >= 0) {
        snprintf(buf, n, "%lld", (long long)s);
    } else {
        size_t len;
        const char *name = tg_symbol_name(g->syms[-s - 1], &len);
        snprintf(buf, n, "%.*s", (int)len, name);
    }
}

/* "(3 n)" */
static const char *shape_text(const tgV_graph *g, int ndim, const tgV_size *sh, char *buf, size_t n)
{
    size_t o = 0;
    buf[o++] = '(';
    for (int i = 0; i < ndim && o + 24 < n; i++) {
        char one[64];
        size_text(g, sh[i], one, sizeof one);
        o += (size_t)snprintf(buf + o, n - o, "%s%s", i ? " " : "", one);
    }
    snprintf(buf + o, n - o, ")");
    return buf;
}

/* Record that sizes a and b are equal; an error at t when they are two
 * different static sizes. */
static int unify(builder *b, tg_term *t, tgV_size a, tgV_size c, const char *what)
{
    tgV_graph *g = b->g;
    a = tgV_canon(g, a), c = tgV_canon(g, c);
    if (a == c)
        return 0;
    if (a >= 0 && c >= 0) {
        char msg[300];
        snprintf(msg, sizeof msg, "%s: size %lld does not match size %lld", what, (long long)a,
                 (long long)c);
        return fail(b, t, msg);
    }
    if (a >= 0)
        g->symval[-c - 1] = a;
    else if (c >= 0)
        g->symval[-a - 1] = c;
    else
        g->uf[-c - 1] = (int)(-a - 1);
    return 0;
}

/* Broadcast shape s (ndim k) into the running result r (ndim *rn). */
static int broadcast(builder *b, tg_term *t, tgV_size *r, int *rn, const tgV_size *s, int k)
{
    tgV_graph *g = b->g;
    if (k > *rn) {
        memmove(r + (k - *rn), r, (size_t)*rn * sizeof *r);
        for (int i = 0; i < k - *rn; i++)
            r[i] = 1;
        *rn = k;
    }
    for (int i = 0; i < k; i++) {
        tgV_size *d = &r[*rn - k + i];
        tgV_size x = tgV_canon(g, *d), y = tgV_canon(g, s[i]);
        if (x == y || y == 1)
            continue;
        if (x == 1) {
            *d = y;
            continue;
        }
        if (x >= 0 && y >= 0) {
            char msg[300], sa[120], sb[120];
            snprintf(msg, sizeof msg, "shapes %s and %s do not broadcast",
                     shape_text(g, *rn, r, sa, sizeof sa), shape_text(g, k, s, sb, sizeof sb));
            return fail(b, t, msg);
        }
        if (unify(b, t, x, y, "broadcasting") < 0)
            return -1;
        *d = tgV_canon(g, x);
    }
    return 0;
}

/* ---- dtypes ------------------------------------------------------------ */

static int parse_dtype(tg_term *t, tg_dtype *out)
{
    size_t len;
    const char *s = tg_symbol_name(t, &len);
    if (!s)
        return -1;
    for (int i = 0; i < 5; i++)
        if (strlen(dtype_names[i]) == len && memcmp(s, dtype_names[i], len) == 0)
            return *out = (tg_dtype)i, 0;
    return -1;
}

static tg_dtype promote2(tg_dtype a, tg_dtype c)
{
    bool fa = tgV_is_float(a), fc = tgV_is_float(c);
    if (fa == fc)
        return a > c ? a : c;
    tg_dtype f = fa ? a : c, i = fa ? c : a;
    return f == TG_FLOAT32 && i == TG_BOOL ? TG_FLOAT32 : TG_FLOAT64;
}

tg_dtype tgV_promote2(tg_dtype a, tg_dtype c) { return promote2(a, c); }

/* The promoted dtype of a node's tensor arguments from..to-1: weak
 * literals only decide the kind (integer / float) unless all are weak. */
static tg_dtype promote(const tgV_graph *g, const tgV_node *n, int from, int to, bool *weak)
{
    bool any_strong = false, weak_float = false;
    tg_dtype s = TG_BOOL, w = TG_BOOL;
    for (int i = from; i < to; i++) {
        const tgV_node *a = &g->nodes[n->args[i]];
        if (a->weak) {
            w = promote2(w, a->dtype);
            weak_float |= tgV_is_float(a->dtype);
        } else {
            s = any_strong ? promote2(s, a->dtype) : a->dtype;
            any_strong = true;
        }
    }
    *weak = !any_strong;
    if (!any_strong)
        return w;
    if (weak_float && !tgV_is_float(s))
        return TG_FLOAT64;
    if (w != TG_BOOL && s == TG_BOOL)
        return TG_INT64;
    return s;
}

/* ---- node typing ------------------------------------------------------- */

static int type_elementwise(builder *b, tgV_node *n, tg_term **argt)
{
    tgV_graph *g = b->g;
    bool weak;
    int first = n->op == TGV_SWITCH ? 1 : 0;
    tg_dtype p = promote(g, n, first, n->nargs, &weak);
    n->weak = weak;
    n->cdt = p;
    switch (n->op) {
    case TGV_ADD: case TGV_SUB: case TGV_MUL: case TGV_NEG: case TGV_POW: case TGV_SQR:
    case TGV_INT_DIV: case TGV_MOD:
        n->dtype = p == TG_BOOL ? TG_INT64 : p;
        break;
    case TGV_DIV: case TGV_EXP: case TGV_LOG: case TGV_LOG1P: case TGV_SQRT:
    case TGV_SIN: case TGV_COS: case TGV_TANH: case TGV_SIGMOID:
    case TGV_RECIPROCAL: case TGV_EXPM1: case TGV_SOFTPLUS: case TGV_USER:
        n->dtype = tgV_is_float(p) ? p : TG_FLOAT64;
        break;
    case TGV_LT: case TGV_LE: case TGV_GT: case TGV_GE: case TGV_EQ: case TGV_NEQ:
        n->dtype = TG_BOOL;
        break;
    case TGV_FILL:  /* (fill MODEL VALUE): VALUE in MODEL's dtype, the shapes broadcast */
        n->dtype = g->nodes[n->args[0]].dtype;
        n->weak = g->nodes[n->args[0]].weak;
        break;
    case TGV_CAST:  /* (cast DTYPE x) or the rule library's (cast x DTYPE) */
        if (parse_dtype(argt[0], &n->dtype) < 0 && parse_dtype(argt[1], &n->dtype) < 0)
            return fail(b, n->term, "cast needs a dtype: float64 float32 int64 int32 bool");
        n->weak = false;
        break;
    default:
        n->dtype = p;
    }
    if (n->op < TGV_LT || n->op > TGV_NEQ)
        n->cdt = n->dtype;
    for (int i = 0; i < n->nargs; i++) {
        tgV_node *a = &g->nodes[n->args[i]];
        if (broadcast(b, n->term, n->shape, &n->ndim, a->shape, a->ndim) < 0)
            return -1;
    }
    return 0;
}

static int type_alloc(builder *b, tgV_node *n, tg_term **argt, int nt)
{
    tgV_node *v = &b->g->nodes[n->args[0]];
    n->dtype = n->cdt = v->dtype, n->weak = false;
    n->ndim = nt - 1;
    for (int i = 1; i < nt; i++)
        if (size_of(b, n->term, argt[i], &n->shape[i - 1]) < 0)
            return -1;
    tgV_size tmp[TGV_MAXDIM];
    int tn = n->ndim;
    memcpy(tmp, n->shape, sizeof tmp);
    if (v->ndim > n->ndim)
        return fail(b, n->term, "the value has more axes than the shape");
    return broadcast(b, n->term, tmp, &tn, v->shape, v->ndim);
}

/* The rule library writes parameter lists with a head: (axes 0 1),
 * (perm 1 0 x), (shape-of n 3); the bare list (0 1) is accepted too. */
static tg_term *unhead(builder *b, tg_term *list, const char *head)
{
    size_t len;
    const char *s = tg_kind_of(list) == TG_PAIR ? tg_symbol_name(tg_car(list), &len) : NULL;
    if (s && len == strlen(head) && memcmp(s, head, len) == 0)
        return tg_cdr(b->g->ctx, list);
    return list;
}

static bool is_symbol(const tg_term *t, const char *name)
{
    size_t len;
    const char *s = tg_symbol_name(t, &len);
    return s && len == strlen(name) && memcmp(s, name, len) == 0;
}

/* Axis list (AXIS ...) of a reduction or transpose into a mask. */
static int axes_of(builder *b, tgV_node *n, tg_term *list, int ndim, int8_t *order, int *count)
{
    tg_iter it;
    tg_term *e;
    uint32_t mask = 0;
    int k = 0;
    list = unhead(b, list, order ? "perm" : "axes");
    if (tg_kind_of(list) != TG_PAIR && tg_kind_of(list) != TG_NIL)
        return fail(b, n->term, "expected a list of axes");
    tg_iter_init(&it, list);
    while ((e = tg_iter_next(&it))) {
        int64_t a;
        if (tg_kind_of(e) != TG_INT || tg_int_get(e, &a) < 0 || a < -ndim || a >= ndim)
            return fail(b, n->term, "an axis is out of range");
        if (a < 0)
            a += ndim;
        if (mask & (1u << a))
            return fail(b, n->term, "an axis is repeated");
        mask |= 1u << a;
        if (order)
            order[k] = (int8_t)a;
        k++;
    }
    n->axes = mask;
    if (count)
        *count = k;
    return 0;
}

static int type_reduce(builder *b, tgV_node *n, tg_term **argt, int nt)
{
    tgV_node *x = &b->g->nodes[n->args[0]];
    if (nt == 2 && !is_symbol(argt[1], "all")) {
        if (axes_of(b, n, argt[1], x->ndim, NULL, NULL) < 0)
            return -1;
    } else {
        n->axes = x->ndim ? (uint32_t)((1ull << x->ndim) - 1) : 0;
    }
    tg_dtype d = x->dtype;
    if (n->op == TGV_SUM || n->op == TGV_PROD)
        n->dtype = d == TG_BOOL || d == TG_INT32 ? TG_INT64 : d;
    else if (n->op == TGV_MEAN)
        n->dtype = tgV_is_float(d) ? d : TG_FLOAT64;
    else
        n->dtype = d;
    n->weak = x->weak;
    for (int i = 0; i < x->ndim; i++)
        if (!(n->axes & (1u << i)))
            n->shape[n->ndim++] = x->shape[i];
    return 0;
}

static int type_dot(builder *b, tgV_node *n)
{
    tgV_graph *g = b->g;
    tgV_node *x = &g->nodes[n->args[0]], *y = &g->nodes[n->args[1]];
    bool weak;
    if (x->ndim < 1 || x->ndim > 2 || y->ndim < 1 || y->ndim > 2)
        return fail(b, n->term, "dot takes vectors and matrices");
    tg_dtype p = promote(g, n, 0, 2, &weak);
    n->dtype = p == TG_BOOL ? TG_INT64 : p;
    if (unify(b, n->term, x->shape[x->ndim - 1], y->shape[0], "dot") < 0)
        return -1;
    if (x->ndim == 2)
        n->shape[n->ndim++] = x->shape[0];
    if (y->ndim == 2)
        n->shape[n->ndim++] = y->shape[1];
    return 0;
}

static int type_layout(builder *b, tgV_node *n, tg_term **argt, int nt)
{
    tgV_graph *g = b->g;
    tgV_node *x = &g->nodes[n->args[0]];
    n->dtype = x->dtype, n->weak = x->weak;
    if (n->op == TGV_TRANSPOSE) {
        int k = x->ndim;
        n->ndim = x->ndim;
        if (nt == 2) {
            if (axes_of(b, n, argt[1], x->ndim, n->perm, &k) < 0)
                return -1;
            if (k != x->ndim)
                return fail(b, n->term, "the permutation must name every axis once");
        } else {
            for (int i = 0; i < k; i++)
                n->perm[i] = k - 1 - i;
        }
        for (int i = 0; i < k; i++)
            n->shape[i] = x->shape[n->perm[i]];
        return 0;
    }
    if (n->op == TGV_DIMSHUFFLE) {
        tg_iter it;
        tg_term *e;
        uint32_t used = 0;
        tg_iter_init(&it, unhead(b, argt[1], "perm"));
        while ((e = tg_iter_next(&it))) {
            int64_t a;
            size_t len;
            const char *s = tg_symbol_name(e, &len);
            if (n->ndim == TGV_MAXDIM)
                return fail(b, n->term, "too many axes");
            if (s && len == 1 && s[0] == 'x') {
                n->perm[n->ndim] = -1;
                n->shape[n->ndim++] = 1;
                continue;
            }
            if (tg_kind_of(e) != TG_INT || tg_int_get(e, &a) < 0 || a < 0 || a >= x->ndim ||
                (used & (1u << a)))
                return fail(b, n->term, "a dimshuffle pattern holds axes (each once) and x");
            used |= 1u << a;
            n->perm[n->ndim] = (int8_t)a;
            n->shape[n->ndim++] = x->shape[a];
        }
        for (int i = 0; i < x->ndim; i++)
            if (!(used & (1u << i)) && tgV_canon(g, x->shape[i]) != 1)
                return fail(b, n->term, "dimshuffle can only drop axes of static size 1");
        return 0;
    }
    /* reshape */
    tg_iter it;
    tg_term *e;
    tg_term *sizes = unhead(b, argt[1], "shape-of");
    if (tg_kind_of(sizes) != TG_PAIR && tg_kind_of(sizes) != TG_NIL)
        return fail(b, n->term, "reshape needs a list of sizes");
    tg_iter_init(&it, sizes);
    while ((e = tg_iter_next(&it))) {
        if (n->ndim == TGV_MAXDIM)
            return fail(b, n->term, "too many axes");
        if (size_of(b, n->term, e, &n->shape[n->ndim++]) < 0)
            return -1;
    }
    return 0;
}

/* ---- leaves ------------------------------------------------------------- */

/* A rational (what folding an integer true_div gives) as the double the
 * division of its parts gives: correctly rounded when both fit in 53
 * bits, else GMP's truncation. */
static double rat_double(const tg_term *v)
{
    mpq_t q;
    mpq_init(q);
    tg_rat_get_mpq(v, q);
    double r;
    if (mpz_sizeinbase(mpq_numref(q), 2) <= 53 && mpz_sizeinbase(mpq_denref(q), 2) <= 53)
        r = mpz_get_d(mpq_numref(q)) / mpz_get_d(mpq_denref(q));
    else
        r = mpq_get_d(q);
    mpq_clear(q);
    return r;
}

static int make_const(builder *b, tg_term *t, tg_dtype d, tg_term *v, bool weak)
{
    tgV_node *n = new_node(b, t, TGV_CONST);
    if (!n)
        return -1;
    n->dtype = d, n->weak = weak;
    double f;
    int64_t i;
    if (tg_kind_of(v) == TG_RAT)
        f = rat_double(v);
    if (tg_kind_of(v) == TG_RAT || tg_double_get(v, &f) == 0) {
        if (!tgV_is_float(d))
            return fail(b, t, "a float value for an integer dtype");
        n->value.f = d == TG_FLOAT32 ? (double)(float)f : f;
    } else if (tg_kind_of(v) == TG_INT) {
        if (tg_int_get(v, &i) < 0)
            return fail(b, t, "the integer does not fit in 64 bits");
        if (tgV_is_float(d))
            n->value.f = d == TG_FLOAT32 ? (double)(float)i : (double)i;
        else if (d == TG_BOOL)
            n->value.i = i != 0;
        else if (d == TG_INT32 && (i < INT32_MIN || i > INT32_MAX))
            return fail(b, t, "the integer does not fit in int32");
        else
            n->value.i = i;
    } else {
        return fail(b, t, "a constant must be a number");
    }
    return 0;
}

/* An (input NAME DTYPE (SIZE ...)) leaf, or with shared a (shared NAME
 * DTYPE (SIZE ...)) one (bound from the variable's storage at each call). */
static int make_input(builder *b, tg_term *t, int pos, bool shared)
{
    tg_term *a[4];
    size_t k = tg_elements(t, a, 4);
    size_t len;
    const char *h = k ? tg_symbol_name(a[0], &len) : NULL;
    const char *kw = shared ? "shared" : "input";
    if (!shared && h && len == 6 && memcmp(h, "shared", 6) == 0)
        return fail(b, t, "a shared variable is not an input: write it in the outputs, it is bound from its storage");
    if (!h || len != strlen(kw) || memcmp(h, kw, len) != 0 || k != 4 || tg_tail(t) != tg_nil())
        return fail(b, t, shared ? "a shared variable is (shared NAME DTYPE (SIZE ...))"
                                 : "an input is (input NAME DTYPE (SIZE ...))");
    if (shared && tg_kind_of(a[1]) != TG_SYMBOL)
        return fail(b, t, "a shared variable's name is a symbol");
    if (map_get(b, t) >= 0)
        return fail(b, t, "the input is given twice");
    tg_dtype d;
    if (parse_dtype(a[2], &d) < 0)
        return fail(b, t, "unknown dtype (float64 float32 int64 int32 bool)");
    tgV_node *n = new_node(b, t, TGV_INPUT);
    if (!n)
        return -1;
    n->dtype = d, n->input = pos;
    tg_iter it;
    tg_term *e;
    if (tg_kind_of(a[3]) != TG_PAIR && tg_kind_of(a[3]) != TG_NIL)
        return fail(b, t, "an input's shape is a list of sizes");
    tg_iter_init(&it, a[3]);
    while ((e = tg_iter_next(&it))) {
        if (n->ndim == TGV_MAXDIM)
            return fail(b, t, "too many axes");
        tgV_size s;
        if (size_of(b, t, e, &s) < 0)
            return -1;
        n->shape[n->ndim++] = s;
    }
    return 0;
}

static int build_term(builder *b, tg_term *root);

/* A shared variable met in the outputs: one more input, after the
 * caller's.  One declaration per name, so that no two leaves alias one
 * storage behind the buffer plan's back. */
static int add_shared(builder *b, tg_term *t)
{
    tgV_graph *g = b->g;
    if (b->depth)
        return fail(b, t, "a shared variable inside a scan's lambda: give it to the scan as a non-sequence");
    int *ni = GC_MALLOC_ATOMIC((size_t)(g->ninputs + 1) * sizeof *ni);
    if (!ni)
        return tgE_nomem(b->err), -1;
    memcpy(ni, g->inputs, (size_t)g->ninputs * sizeof *ni);
    g->inputs = ni, b->incap = g->ninputs + 1;  /* add_input's capacity too */
    if (make_input(b, t, g->ninputs, true) < 0)
        return -1;
    for (int i = g->ninputs - g->nshared; i < g->ninputs; i++) {
        const tg_term *o = g->nodes[g->inputs[i]].term;
        if (tg_nth(o, 1) == tg_nth(t, 1)) {
            char msg[300];
            snprintf(msg, sizeof msg, "the shared variable is also declared as %s", show(b, o));
            return fail(b, t, msg);
        }
    }
    g->inputs[g->ninputs++] = g->n - 1;
    g->nshared++;
    return 0;
}

static bool head_is(const tg_term *t, const char *name)
{
    size_t len;
    const char *h = tg_symbol_name(tg_car(t), &len);
    return h && len == strlen(name) && memcmp(h, name, len) == 0;
}

/* Update j: output out is the new value of target, a shared variable,
 * of its dtype and shape. */
static int set_update(builder *b, tg_term *target, int out, int j)
{
    tgV_graph *g = b->g;
    if (!target || !head_is(target, "shared"))
        return fail(b, target ? target : tg_nil(),
                    "an update's target is a shared variable (shared NAME DTYPE (SIZE ...))");
    if (build_term(b, target) < 0)
        return -1;
    int w = map_get(b, target), v = g->outputs[out];
    for (int i = 0; i < j; i++)
        if (g->updated[i] == w)
            return fail(b, target, "the shared variable is updated twice");
    g->updated[j] = w;
    char name[100], what[600], sa[120], sb[120];
    tgV_show(tg_nth(target, 1), name, sizeof name);
    if (g->nodes[v].dtype != g->nodes[w].dtype) {
        if (!g->nodes[v].weak) {
            snprintf(what, sizeof what, "the new value of shared variable %s is %s, %s is %s", name,
                     tgV_dtype_name(g->nodes[v].dtype), name, tgV_dtype_name(g->nodes[w].dtype));
            return fail(b, g->nodes[v].term, what);
        }
        /* a literal takes the variable's dtype, as it would in an op */
        tg_term *parts[3] = {tg_symbol_cstr(g->ctx, "cast"), g->nodes[v].term,
                             tg_symbol_cstr(g->ctx, tgV_dtype_name(g->nodes[w].dtype))};
        tg_term *c = parts[0] && parts[2] ? tg_list(g->ctx, 3, parts, NULL) : NULL;
        if (!c)
            return tgE_nomem(b->err), -1;
        if (build_term(b, c) < 0)
            return -1;
        g->outputs[out] = v = map_get(b, c);
    }
    const tgV_node *vn = &g->nodes[v], *wn = &g->nodes[w];
    if (vn->ndim != wn->ndim) {
        snprintf(what, sizeof what, "the new value of shared variable %s has shape %s, %s has %s", name,
                 shape_text(g, vn->ndim, vn->shape, sa, sizeof sa), name,
                 shape_text(g, wn->ndim, wn->shape, sb, sizeof sb));
        return fail(b, vn->term, what);
    }
    snprintf(what, sizeof what, "the new value of shared variable %s", name);
    for (int d = 0; d < vn->ndim; d++)
        if (unify(b, vn->term, vn->shape[d], wn->shape[d], what) < 0)
            return -1;
    return 0;
}

static const opinfo *lookup(tg_term *t)
{
    size_t len;
    tg_term *h = tg_car(t);
    const char *s = h ? tg_symbol_name(h, &len) : NULL;
    if (!s)
        return NULL;
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
        if (strlen(ops[i].name) == len && memcmp(ops[i].name, s, len) == 0)
            return &ops[i];
    return NULL;
}

/* ---- the walk ------------------------------------------------------------ */

/* The rule library's (cast X DTYPE): the tensor is the first argument. */
static const opinfo cast_x_first = {"cast", TGV_CAST, 2, 2, 0, 0};

/* Is t the number 1 written bare (a weak constant)? */
static bool weak_one(const tg_term *t)
{
    int64_t v;
    double d;
    return (tg_kind_of(t) == TG_INT && tg_int_get(t, &v) == 0 && v == 1) ||
           (tg_kind_of(t) == TG_DOUBLE && tg_double_get(t, &d) == 0 && d == 1.0);
}

/* The rule library's (gemm C ALPHA A B BETA) as the sum the schedule
 * fuses back into one GEMM: (add (mul ALPHA (dot A B)) (mul BETA C)).
 * NULL when the form is wrong. */
static tg_term *gemm_sum(builder *b, tg_term *t)
{
    tg_ctx *c = b->g->ctx;
    tg_term *a[6];
    if (tg_elements(t, a, 6) != 6 || tg_tail(t) != tg_nil())
        return NULL;
    tg_term *dot[3] = {tg_symbol_cstr(c, "dot"), a[3], a[4]};
    tg_term *l[3] = {tg_symbol_cstr(c, "mul"), a[2], tg_list(c, 3, dot, NULL)};
    tg_term *r[3] = {tg_symbol_cstr(c, "mul"), a[5], a[1]};
    /* a weak 1 scales nothing and changes no dtype: no product to compute
     * (in a scan's step it would be a loop of its own) */
    tg_term *sum[3] = {tg_symbol_cstr(c, "add"), weak_one(a[2]) ? l[2] : tg_list(c, 3, l, NULL),
                       weak_one(a[5]) ? a[1] : tg_list(c, 3, r, NULL)};
    return tg_list(c, 3, sum, NULL);
}

/* The rule library's (logsumexp X AXES), log(sum(exp X) over AXES), as
 * the stable form the kernels compute: with M the maximum over AXES (0
 * where it is not finite, so that all -inf gives -inf and +inf gives
 * +inf), M + log(sum(exp(X - M'))), M' being M with the reduced axes put
 * back as axes of size 1.  X must have a node (its rank is needed).  NULL
 * with the error set when the form is wrong. */
static tg_term *logsumexp_sum(builder *b, tg_term *t)
{
    tg_ctx *c = b->g->ctx;
    tg_term *a[4];
    if (tg_elements(t, a, 4) != 3 || tg_tail(t) != tg_nil())
        return fail(b, t, "a logsumexp is (logsumexp X AXES)"), NULL;
    const tgV_node *x = &b->g->nodes[map_get(b, a[1])];
    tgV_node scratch = {.term = t};
    bool all = is_symbol(a[2], "all");
    if (!all && axes_of(b, &scratch, a[2], x->ndim, NULL, NULL) < 0)
        return NULL;
    uint32_t mask = all ? (uint32_t)((1ull << x->ndim) - 1) : scratch.axes;
#define APP(...) tg_list(c, sizeof((tg_term *[]){__VA_ARGS__}) / sizeof(tg_term *), (tg_term *[]){__VA_ARGS__}, NULL)
#define SYM(s) tg_symbol_cstr(c, s)
    tg_term *m = APP(SYM("max"), a[1], a[2]);
    tg_term *fin = APP(SYM("le"), APP(SYM("abs"), m), tg_double(c, 1.7976931348623157e308));
    tg_term *ms = APP(SYM("switch"), fin, m, tg_int(c, 0)), *mk = ms;
    if (!all && x->ndim) {   /* the reduced axes back, of size 1 */
        tg_term *perm[TGV_MAXDIM + 1];
        int k = 0, kept = 0;
        perm[k++] = SYM("perm");
        for (int d = 0; d < x->ndim; d++)
            perm[k++] = mask & (1u << d) ? SYM("x") : tg_int(c, kept++);
        mk = APP(SYM("dimshuffle"), ms, tg_list(c, (size_t)k, perm, NULL));
    }
    tg_term *s = APP(SYM("sum"), APP(SYM("exp"), APP(SYM("sub"), a[1], mk)), a[2]);
    return APP(SYM("add"), APP(SYM("log"), s), ms);
#undef APP
#undef SYM
}

static bool updates(tgV_op op) { return op == TGV_INC_SUBTENSOR || op == TGV_SET_SUBTENSOR; }

/* (inc_subtensor X V IDX ...), (set_subtensor X V IDX ...): X's dtype
 * and shape; IDX as subtensor's (typed as the view X[IDX ...], whose
 * shape V must broadcast to). */
static int type_update(builder *b, tgV_node *n, tg_term **argt, int nt)
{
    tgV_graph *g = b->g;
    /* the view: a node of args X and the index tensors, indices argt[2..] */
    tgV_node view = {0};
    int vargs[1 + TGV_MAXDIM];
    tg_term *vt[1 + TGV_MAXDIM];
    view.term = n->term, view.op = TGV_SUBTENSOR, view.args = vargs;
    vargs[0] = n->args[0], vt[0] = argt[0];
    for (int i = 2; i < nt; i++)
        vt[i - 1] = argt[i];
    for (int i = 2; i < n->nargs; i++)
        vargs[i - 1] = n->args[i];
    view.nargs = n->nargs - 1;
    if (tgIx_type(g, &view, vt, nt - 1, b->err) < 0)
        return -1;
    tgIx_spec *sp = GC_MALLOC_ATOMIC(sizeof *sp);
    if (!sp)
        return tgE_nomem(b->err), -1;
    *sp = *view.index;
    for (int i = 0; i < sp->n; i++)      /* index tensors come after X and V here */
        if (sp->ax[i].kind == TGIX_DYNAMIC)
            sp->ax[i].arg++;
    n->index = sp;
    const tgV_node *x = &g->nodes[n->args[0]], *v = &g->nodes[n->args[1]];
    n->dtype = n->cdt = x->dtype, n->weak = false;
    n->ndim = x->ndim;
    memcpy(n->shape, x->shape, sizeof n->shape);
    if (v->ndim > view.ndim)
        return fail(b, n->term, "the value has more axes than the part of X it goes to");
    for (int d = 0; d < v->ndim; d++) {
        tgV_size vs = tgV_canon(g, v->shape[d]), ws = tgV_canon(g, view.shape[view.ndim - v->ndim + d]);
        if (vs != 1 && unify(b, n->term, vs, ws, "the value and the part of X it goes to") < 0)
            return -1;
    }
    return 0;
}

/* Type an op node whose tensor arguments all have nodes. */
/* (fill MODEL VALUE) where VALUE has MODEL's dtype and shape already is
 * VALUE: no node, so that MODEL, read for its type only, is computed
 * by nobody (x*y/y -> (fill (true_div x y) x) compiles to x's loop). */
static int fill_is_value(builder *b, tg_term **argt)
{
    const tgV_graph *g = b->g;
    const tgV_node *m = &g->nodes[map_get(b, argt[0])], *v = &g->nodes[map_get(b, argt[1])];
    if (m->dtype != v->dtype || m->weak != v->weak || m->ndim != v->ndim)
        return 0;
    for (int d = 0; d < m->ndim; d++)
        if (tgV_canon(g, m->shape[d]) != tgV_canon(g, v->shape[d]))
            return 0;
    return 1;
}

static int make_op(builder *b, tg_term *t, const opinfo *oi, tg_term **argt, int nt)
{
    int th = oi->thi < 0 ? nt - 1 : oi->thi;
    if (oi->op == TGV_FILL && fill_is_value(b, argt))
        return tgV_alias(b, t, map_get(b, argt[1]));
    tgV_node *n = new_node(b, t, oi->op);
    if (!n)
        return -1;
    int *args = GC_MALLOC_ATOMIC((size_t)(th - oi->tlo + 1) * sizeof *args);
    if (!args)
        return tgE_nomem(b->err), -1;
    for (int i = oi->tlo; i <= th; i++)
        args[i - oi->tlo] = map_get(b, argt[i]);
    n->args = args, n->nargs = th - oi->tlo + 1;
    if (oi->op == TGV_SUBTENSOR) {  /* only X and the index tensors are nodes */
        n->nargs = 0;
        for (int i = 0; i < nt; i++)
            if (i == 0 || tgIx_is_index_tensor(argt[i]))
                args[n->nargs++] = map_get(b, argt[i]);
        return tgIx_type(b->g, n, argt, nt, b->err);
    }
    if (oi->op == TGV_INC_SUBTENSOR || oi->op == TGV_SET_SUBTENSOR) {   /* X, V, index tensors */
        n->nargs = 0;
        for (int i = 0; i < nt; i++)
            if (i < 2 || tgIx_is_index_tensor(argt[i]))
                args[n->nargs++] = map_get(b, argt[i]);
        return type_update(b, n, argt, nt);
    }
    if (tgAr_op(oi->op))
        return tgAr_type(b, n, argt, nt);
    if (tgV_elementwise(oi->op) && oi->op != TGV_ALLOC)
        return type_elementwise(b, n, argt);
    switch (oi->op) {
    case TGV_ALLOC: return type_alloc(b, n, argt, nt);
    case TGV_SUM: case TGV_PROD: case TGV_MAX: case TGV_MIN: case TGV_MEAN:
        return type_reduce(b, n, argt, nt);
    case TGV_DOT: return type_dot(b, n);
    default: return type_layout(b, n, argt, nt);
    }
}

/* Make t an input of b's graph, at the next position. */
static int add_input(builder *b, tg_term *t)
{
    tgV_graph *g = b->g;
    if (g->ninputs + 1 >= b->incap) {
        int nc = b->incap ? 2 * b->incap : 16;
        int *ni = GC_MALLOC_ATOMIC((size_t)nc * sizeof *ni);
        if (!ni)
            return tgE_nomem(b->err), -1;
        if (g->ninputs)
            memcpy(ni, g->inputs, (size_t)g->ninputs * sizeof *ni);
        g->inputs = ni, b->incap = nc;
    }
    if (make_input(b, t, g->ninputs, false) < 0)
        return -1;
    g->inputs[g->ninputs++] = g->n - 1;
    return 0;
}

/* Push t on build_term's stack, grown when full; 0, or -1 out of memory. */
static int push(builder *b, tg_term ***stack, size_t *sp, size_t *cap, tg_term *t)
{
    if (*sp == *cap) {
        tg_term **ns = GC_MALLOC(2 * *cap * sizeof *ns);
        if (!ns)
            return tgE_nomem(b->err), -1;
        memcpy(ns, *stack, *cap * sizeof *ns);
        *stack = ns, *cap *= 2;
    }
    (*stack)[(*sp)++] = t;
    return 0;
}

/* t stands for e, its expansion (a gemm's sum, logsumexp's stable form):
 * e pushed to be built first, t met again after (1), or t, on top of
 * the stack, popped and given e's node (0); -1 on an error. */
static int alias_expansion(builder *b, tg_term *t, tg_term *e, tg_term ***stack, size_t *sp, size_t *cap)
{
    int v = map_get(b, e);
    if (v < 0)
        return push(b, stack, sp, cap, e) < 0 ? -1 : 1;
    (*sp)--;
    b->nalias++;
    return map_put(b, t, v) < 0 ? -1 : 0;
}

/* t, an application of an op defined as def (tgV_set_defined): 1 when
 * its arguments or def were pushed to be typed first, 0 when its node
 * is made (of def's type, over t's arguments), -1 on an error. */
static int build_defined(builder *b, tg_term *t, tg_term *def, tg_term ***stack, size_t *sp, size_t *cap)
{
    size_t before = *sp, nt = tg_length(t) - 1;
    tg_iter it;
    tg_iter_init(&it, t);
    tg_iter_next(&it);
    for (tg_term *a; (a = tg_iter_next(&it));)
        if (map_get(b, a) < 0 && push(b, stack, sp, cap, a) < 0)
            return -1;
    if (map_get(b, def) < 0 && push(b, stack, sp, cap, def) < 0)
        return -1;
    if (*sp != before)
        return 1;
    int *args = GC_MALLOC_ATOMIC((nt + 1) * sizeof *args);
    if (!args)
        return tgE_nomem(b->err), -1;
    tg_iter_init(&it, t);
    tg_iter_next(&it);
    for (size_t i = 0; i < nt; i++)
        args[i] = map_get(b, tg_iter_next(&it));
    int d = map_get(b, def);
    tgV_node *n = new_node(b, t, TGV_DEFINED);
    if (!n)
        return -1;
    const tgV_node *e = &b->g->nodes[d];
    n->dtype = n->cdt = e->dtype, n->weak = e->weak, n->ndim = e->ndim;
    memcpy(n->shape, e->shape, sizeof n->shape);
    n->nargs = (int)nt, n->args = args;
    return 0;
}

void tgV_set_defined(tgV_builder *b, tg_term *(*define)(void *ud, tg_term *t), void *ud)
{
    b->define = define, b->define_ud = ud;
}

/* Give term t and everything under it a node, with an explicit stack. */
static int build_term(builder *b, tg_term *root)
{
    /* on the C stack (which the collector scans) until it outgrows it:
     * grad.c types many small terms one at a time */
    tg_term *local[64];
    size_t cap = 64, sp = 0;
    tg_term **stack = local;
    stack[sp++] = root;
    while (sp) {
        tg_term *t = stack[sp - 1];
        if (map_get(b, t) >= 0) {
            sp--;
            continue;
        }
        tg_kind k = tg_kind_of(t);
        if (k == TG_INT || k == TG_DOUBLE || k == TG_RAT) {
            sp--;
            if (make_const(b, t, k == TG_INT ? TG_INT64 : TG_FLOAT64, t, true) < 0)
                return -1;
            continue;
        }
        if (k == TG_SYMBOL && b->depth)
            return fail(b, t, "not a parameter of the scan's lambda");
        if (k != TG_PAIR)
            return fail(b, t, "not a tensor term (an op, a declared input or a number)");
        size_t hl;
        const char *hs = tg_symbol_name(tg_car(t), &hl);
        if (hs && hl == 5 && memcmp(hs, "input", 5) == 0) {
            if (!b->any_input && b->depth)
                return fail(b, t, "an input inside a scan's lambda: pass it to the scan as a "
                            "non-sequence (or a sequence), and name its parameter");
            if (!b->any_input)
                return fail(b, t, "this input is not among the function's inputs");
            sp--;
            if (add_input(b, t) < 0)
                return -1;
            continue;
        }
        if (hs && hl == 6 && memcmp(hs, "shared", 6) == 0) {
            sp--;
            if (add_shared(b, t) < 0)
                return -1;
            continue;
        }
        tg_term *argt[2 + TGV_MAXDIM + 1];
        size_t nt = tg_length(t) - 1;
        if (hs && hl == 5 && memcmp(hs, "const", 5) == 0) {
            tg_term *a[3];
            tg_dtype d;
            if (tg_elements(t, a, 3) != 3 || parse_dtype(a[1], &d) < 0)
                return fail(b, t, "a constant is (const DTYPE NUMBER)");
            sp--;
            if (make_const(b, t, d, a[2], false) < 0)
                return -1;
            continue;
        }
        if (hs && hl == 4 && memcmp(hs, "gemm", 4) == 0) {
            tg_term *e = gemm_sum(b, t);
            if (!e)
                return fail(b, t, "a gemm is (gemm C ALPHA A B BETA)");
            if (alias_expansion(b, t, e, &stack, &sp, &cap) < 0)
                return -1;
            continue;
        }
        if (hs && hl == 9 && memcmp(hs, "logsumexp", 9) == 0) {
            tg_term *xt = tg_length(t) == 3 ? tg_nth(t, 1) : NULL;
            if (xt && map_get(b, xt) < 0) {     /* X first: its rank shapes the form */
                if (push(b, &stack, &sp, &cap, xt) < 0)
                    return -1;
                continue;
            }
            tg_term *e = logsumexp_sum(b, t);
            if (!e || alias_expansion(b, t, e, &stack, &sp, &cap) < 0)
                return -1;
            continue;
        }
        if (hs && (tgSc_head(hs, hl) || tgRn_head(hs, hl))) {
            tg_term *need = NULL;
            int r = tgSc_head(hs, hl) ? tgSc_build(b, t, &need) : tgRn_build(b, t, &need);
            if (r < 0)
                return -1;
            if (r == 0) {   /* an argument first, then t again */
                if (push(b, &stack, &sp, &cap, need) < 0)
                    return -1;
                continue;
            }
            sp--;
            continue;
        }
        const opinfo *oi = lookup(t);
        /* an op defined with a C expression: elementwise over all its arguments */
        const tgUo_op *uo = !oi && hs ? tgUo_find(b->g->ctx, hs, hl) : NULL;
        opinfo uinfo;
        if (uo) {
            uinfo = (opinfo){uo->name, TGV_USER, (int)uo->nargs, (int)uo->nargs, 0, -1};
            oi = &uinfo;
        }
        tg_term *def = !oi && b->define ? b->define(b->define_ud, t) : NULL;
        if (def) {
            int r = build_defined(b, t, def, &stack, &sp, &cap);
            if (r < 0)
                return -1;
            if (r == 0)
                sp--;
            continue;
        }
        if (!oi)
            return fail(b, t, "unknown op");
        if (tg_tail(t) != tg_nil() || (int)nt < oi->min || (oi->max >= 0 && (int)nt > oi->max))
            return fail(b, t, "wrong number of arguments");
        tg_term **all = argt;
        if (nt > sizeof argt / sizeof *argt) {  /* a long add / mul */
            all = GC_MALLOC((nt + 1) * sizeof *all);
            if (!all)
                return tgE_nomem(b->err), -1;
        }
        tg_iter it;
        tg_iter_init(&it, t);
        tg_iter_next(&it);
        for (size_t i = 0; i < nt; i++)
            all[i] = tg_iter_next(&it);
        if (oi->op == TGV_CAST && tg_kind_of(all[0]) != TG_SYMBOL)
            oi = &cast_x_first;     /* a symbol is never a tensor */
        int th = oi->thi < 0 ? (int)nt - 1 : oi->thi;
        size_t before = sp;
        for (int i = oi->tlo; i <= th; i++)
            if (map_get(b, all[i]) < 0 &&
                (oi->op != TGV_SUBTENSOR || i == 0 || tgIx_is_index_tensor(all[i])) &&
                (!updates(oi->op) || i < 2 || tgIx_is_index_tensor(all[i]))) {
                if (push(b, &stack, &sp, &cap, all[i]) < 0)
                    return -1;
            }
        if (sp != before)
            continue;
        sp--;
        if (make_op(b, t, oi, all, (int)nt) < 0)
            return -1;
        if (uo)
            b->g->nodes[map_get(b, t)].user = uo;
    }
    return 0;
}

/* Every symbol class must be bound by some input (or be static). */
static int check_bound(builder *b)
{
    tgV_graph *g = b->g;
    for (int k = 0; k < g->nsyms; k++) {
        tgV_size c = tgV_canon(g, -(tgV_size)k - 1);
        if (c >= 0 || tgIx_derived(g, c) || tgAr_derived(g, c))
            continue;
        bool found = false;
        for (int i = 0; i < g->ninputs && !found; i++) {
            const tgV_node *n = &g->nodes[g->inputs[i]];
            for (int d = 0; d < n->ndim; d++)
                found |= tgV_canon(g, n->shape[d]) == c;
        }
        if (!found) {
            char msg[200];
            size_t len;
            const char *s = tg_symbol_name(g->syms[k], &len);
            snprintf(msg, sizeof msg, "size %.*s is not the size of any input", (int)len, s);
            for (int i = 0; i < g->n; i++)
                for (int d = 0; d < g->nodes[i].ndim; d++)
                    if (tgV_canon(g, g->nodes[i].shape[d]) == c)
                        return fail(b, g->nodes[i].term, msg);
            return fail(b, g->syms[k], msg);
        }
    }
    return 0;
}

bool tgV_tensor_arg(const tg_term *t, size_t i)
{
    const opinfo *oi = lookup((tg_term *)t);
    if (!oi)    /* (logsumexp X AXES), read as its stable form */
        return i == 0 && tg_kind_of(t) == TG_PAIR && is_symbol(tg_car(t), "logsumexp");
    tg_term *a = tg_nth(t, i + 1);
    if (!a)
        return false;
    if (oi->op == TGV_CAST && tg_kind_of(tg_nth(t, 1)) != TG_SYMBOL)
        oi = &cast_x_first;
    if (oi->op == TGV_SUBTENSOR)
        return i == 0 || tgIx_is_index_tensor(a);
    if (updates(oi->op))
        return i < 2 || tgIx_is_index_tensor(a);
    return (int)i >= oi->tlo && (oi->thi < 0 || (int)i <= oi->thi);
}

bool tgV_tensor_arg_in(tg_ctx *ctx, const tg_term *t, size_t i)
{
    size_t hl;
    const char *hs = tg_kind_of(t) == TG_PAIR ? tg_symbol_name(tg_car(t), &hl) : NULL;
    const tgUo_op *uo = hs && !lookup((tg_term *)t) ? tgUo_find(ctx, hs, hl) : NULL;
    if (uo)
        return i < uo->nargs;
    return tgV_tensor_arg(t, i);
}

bool tgV_builtin_op(const char *name, size_t len)
{
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
        if (strlen(ops[i].name) == len && memcmp(ops[i].name, name, len) == 0)
            return true;
    return false;
}

const char *tgV_node_op_name(const tgV_node *n)
{
    return n->op == TGV_USER && n->user ? n->user->name : tgV_op_name(n->op);
}

/* ---- for kernels/scan.c -------------------------------------------------- */

tgV_graph *tgV_graph_of(tgV_builder *b) { return b->g; }
tg_error *tgV_err_of(tgV_builder *b) { return b->err; }
int tgV_node_of(const tgV_builder *b, const tg_term *t) { return map_get(b, t); }
tgV_node *tgV_new_node(tgV_builder *b, tg_term *t, tgV_op op) { return new_node(b, t, op); }
int tgV_fail(tgV_builder *b, const tg_term *t, const char *what) { return fail(b, t, what); }

int tgV_alias(tgV_builder *b, tg_term *t, int v)
{
    b->nalias++;
    return map_put(b, t, v);
}

int tgV_const_node(tgV_builder *b, tg_dtype d, tg_term *v)
{
    tg_ctx *c = b->g->ctx;
    tg_term *parts[3] = {tg_symbol_cstr(c, "const"), tg_symbol_cstr(c, tgV_dtype_name(d)), v};
    tg_term *t = tg_list(c, 3, parts, NULL);
    if (!t)
        return tgE_nomem(b->err), -1;
    int n = map_get(b, t);
    if (n >= 0)
        return n;
    if (make_const(b, t, d, v, false) < 0)
        return -1;
    return map_get(b, t);
}

const char *tgV_shape_text(const tgV_graph *g, int ndim, const tgV_size *sh, char *buf, size_t n)
{
    return shape_text(g, ndim, sh, buf, n);
}

int tgV_size_of(tgV_builder *b, tg_term *ctx_term, tg_term *t, tgV_size *out)
{
    return size_of(b, ctx_term, t, out);
}

int tgV_unify(tgV_builder *b, tg_term *t, tgV_size a, tgV_size c, const char *what)
{
    return unify(b, t, a, c, what);
}

static tgV_graph *build(tg_ctx *ctx, size_t nin, tg_term *const *inputs, tg_term *const *psyms,
                        size_t nout, tg_term *const *outputs, size_t nupd, tg_term *const *targets,
                        int depth, tg_error *err);

tgV_graph *tgV_build(tg_ctx *ctx, size_t nin, tg_term *const *inputs, size_t nout,
                     tg_term *const *outputs, tg_error *err)
{
    return build(ctx, nin, inputs, NULL, nout, outputs, 0, NULL, 0, err);
}

tgV_graph *tgV_build_updates(tg_ctx *ctx, size_t nin, tg_term *const *inputs, size_t nout,
                             tg_term *const *outputs, size_t nupd, tg_term *const *targets,
                             tg_error *err)
{
    if (nupd > nout || (nupd && !targets))
        return tgE_arg(err, "kernels: an update needs its target and its value"), NULL;
    return build(ctx, nin, inputs, NULL, nout, outputs, nupd, targets, 0, err);
}

tgV_graph *tgV_build_inner(tgV_builder *outer, size_t nin, tg_term *const *inputs, tg_term *const *psyms,
                           size_t nout, tg_term *const *outputs)
{
    return build(outer->g->ctx, nin, inputs, psyms, nout, outputs, 0, NULL, outer->depth + 1, outer->err);
}

int tgV_depth(const tgV_builder *b) { return b->depth; }

/* A builder over inputs (psyms: their names inside a scan's lambda),
 * with no outputs yet. */
static builder *open_builder(tg_ctx *ctx, size_t nin, tg_term *const *inputs, tg_term *const *psyms,
                             int depth, tg_error *err)
{
    if (!ctx || (nin && !inputs))
        return tgE_arg(err, "kernels: a context and inputs are needed"), NULL;
    builder *b = GC_MALLOC(sizeof *b);
    if (!b)
        return tgE_nomem(err), NULL;
    b->err = err;
    b->depth = depth;
    b->g = GC_MALLOC(sizeof *b->g);
    b->mcap = 128;
    b->keys = GC_MALLOC(b->mcap * sizeof *b->keys);
    b->vals = GC_MALLOC_ATOMIC(b->mcap * sizeof *b->vals);
    tgV_graph *g = b->g;
    if (!g || !b->keys || !b->vals)
        return tgE_nomem(err), NULL;
    g->ctx = ctx;
    g->inputs = GC_MALLOC_ATOMIC((nin + 1) * sizeof *g->inputs);
    if (!g->inputs)
        return tgE_nomem(err), NULL;
    for (size_t i = 0; i < nin; i++) {
        if (!inputs[i])
            return tgE_arg(err, "kernels: a NULL input term"), NULL;
        if (make_input(b, inputs[i], (int)i, false) < 0)
            return NULL;
        g->inputs[g->ninputs++] = g->n - 1;
        /* a parameter's symbol names its input inside the lambda */
        if (psyms && tgV_alias(b, psyms[i], g->n - 1) < 0)
            return NULL;
    }
    return b;
}

tgV_builder *tgV_open(tg_ctx *ctx, size_t nin, tg_term *const *inputs, tg_error *err)
{
    return open_builder(ctx, nin, inputs, NULL, 0, err);
}

tgV_builder *tgV_open_any(tg_ctx *ctx, tg_error *err)
{
    builder *b = open_builder(ctx, 0, NULL, NULL, 0, err);
    if (b)
        b->any_input = true;
    return b;
}

int tgV_add(tgV_builder *b, tg_term *t)
{
    if (!t)
        return tgE_arg(b->err, "kernels: a NULL term"), -1;
    if (build_term(b, t) < 0)
        return -1;
    return map_get(b, t);
}

static tgV_graph *build(tg_ctx *ctx, size_t nin, tg_term *const *inputs, tg_term *const *psyms,
                        size_t nout, tg_term *const *outputs, size_t nupd, tg_term *const *targets,
                        int depth, tg_error *err)
{
    if (!ctx || (nin && !inputs) || !nout || !outputs)
        return tgE_arg(err, "kernels: a context, inputs and at least one output are needed"), NULL;
    builder *b = open_builder(ctx, nin, inputs, psyms, depth, err);
    if (!b)
        return NULL;
    tgV_graph *g = b->g;
    g->outputs = GC_MALLOC_ATOMIC(nout * sizeof *g->outputs);
    if (!g->outputs)
        return tgE_nomem(err), NULL;
    for (size_t i = 0; i < nout; i++) {
        if (!outputs[i])
            return tgE_arg(err, "kernels: a NULL output term"), NULL;
        int v = tgV_add(b, outputs[i]);
        if (v < 0)
            return NULL;
        g->outputs[g->noutputs++] = v;
    }
    g->updated = GC_MALLOC_ATOMIC((nupd + 1) * sizeof *g->updated);
    if (!g->updated)
        return tgE_nomem(err), NULL;
    g->nupdates = (int)nupd;
    for (size_t j = 0; j < nupd; j++)
        if (set_update(b, targets[j], (int)(nout - nupd + j), (int)j) < 0)
            return NULL;
    if (check_bound(b) < 0)
        return NULL;
    for (int i = 0; i < g->n; i++)
        for (int d = 0; d < g->nodes[i].ndim; d++)
            g->nodes[i].shape[d] = tgV_canon(g, g->nodes[i].shape[d]);
    return g;
}
