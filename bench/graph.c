/* graph.c - graph-rewriting benchmark, one JSON object per line.
 *
 * The graph is a random DAG of tensor-like ops over 100 inputs (and the
 * constants 0, 1, 2), with many x*y/y sites, under one root (outputs
 * SINK...).  Rows:
 *   graph_build    building it through the term API: nodes, distinct nodes,
 *                  sites;
 *   mul_div_cancel (true_div (mul ?x ?y) ?y) => ?x (mul commutative) as a
 *                  pattern rule and as a C node rewriter
 *                  (tg_rules_def_rewriter), each in a walk and in an
 *                  equilibrium, then inside a 60-rule canonicalize database
 *                  (equilibrium); each against a hand-written C pass over
 *                  the same DAG measured in the same run (memoized,
 *                  explicit stack, pointer hash map), with the ratio;
 *   merge          a graph full of duplicated subgraphs, each copy built
 *                  independently node by node: hash-consing merges it as
 *                  it is built (the distinct nodes reached equal those a
 *                  hand-written C merge pass finds), timed against that
 *                  pass.
 * Every timed figure is the median of --reps runs, each in a fresh context
 * (the graph built again, not timed), so that no run finds the nodes of
 * another in the table.  Results are checked: every variant must give the
 * reference's term ("same_as_ref").  PyTensor's figures quoted in the rows
 * (pytensor_*) come from the issue, not from this run.
 *
 * Usage: graph [--nodes N] [--reps R] [--seed S] [--merge-nodes N]
 *              [--rules FILE] [--with NAME]... [--query CLAUSES] [--only SPEC]
 *   --rules FILE   load a .rules database first (its ops may be the
 *                  benchmark's: add mul sub true_div pow maximum minimum dot
 *                  neg exp log tanh sin cos sqrt sqr abs sum transpose
 *                  switch fill; a different declaration of one is kept and
 *                  noted on stderr);
 *   --with NAME    add rule or rewriter NAME (from FILE) to the
 *                  canonicalize database (repeatable);
 *   --query C      run the database through (query canon-... C), e.g.
 *                  --query '(include fast_run) (exclude inplace)';
 *   --only SPEC    time one variant (walk-rule walk-c eq-rule eq-c
 *                  canon-rule canon-c) and the reference, for profiling;
 *   --lib FILE     instead of all that: the graph in the shipped library's
 *                  vocabulary, rewritten by its whole canonicalize database
 *                  (patterns/lib/all.rules), timed against the
 *                  hand-written x*y/y pass (row graph_lib_canonicalize;
 *                  no x*y/y site may be left; result_hash, tg_hash of the
 *                  result, tells whether two builds rewrite alike).
 */
#define GC_THREADS 1
#include <gc/gc.h>

#include "tgrel.h"
#include "bench.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_WITH 64
#define NLEAF 100
#define PYTENSOR_CANCEL_MS 6600.0   /* PatternNodeRewriter, 10^5 nodes (issue) */
#define PYTENSOR_MERGE_MS 510000.0  /* MergeOptimizer, 1.1*10^5 nodes (issue) */

typedef struct opts {
    long nodes, merge_nodes;
    int reps;
    unsigned seed;
    const char *rules;
    const char *with[MAX_WITH];
    int nwith;
    const char *query;
    const char *only;   /* time this variant alone (for profiling) */
    const char *lib;    /* --lib: the shipped library's all.rules */
} opts;

static uint64_t rng_state;
static uint32_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 11);
}
static double rnd01(void)
{
    return (double)rnd() / 4294967296.0;
}

static void die(const char *what, const tg_error *err)
{
    char buf[1200];
    fprintf(stderr, "graph: %s: %s\n", what, err ? tg_error_format(err, buf, sizeof buf) : "failed");
    exit(1);
}

/* ---- the graph as plain arrays ------------------------------------------ */

enum { O_ADD, O_SUB, O_MUL, O_DIV, O_POW, O_MAX, O_DOT, O_NEG, O_EXP, O_LOG, O_TANH, O_SIN,
       O_SQRT, O_ABS, O_SUM, O_TRANSPOSE, NOPS };
static const char *const op_name[NOPS] = {"add", "sub", "mul", "true_div", "pow", "maximum",
                                          "dot", "neg", "exp", "log", "tanh", "sin",
                                          "sqrt", "abs", "sum", "transpose"};
static const int op_arity[NOPS] = {2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1};

/* An argument >= 0 is a node index; < 0 is leaf -1-k: inputs x0..x99,
 * then the constants 0, 1, 2. */
typedef struct gnode {
    int op;
    int32_t a, b;
} gnode;

typedef struct graph {
    gnode *v;
    long n;
    long sites;
} graph;

static int32_t pick_arg(long i)
{
    double u = rnd01();
    if (i == 0 || u < 0.12)
        return -1 - (int32_t)(rnd() % NLEAF);
    if (u < 0.14)
        return -1 - (NLEAF + (int32_t)(rnd() % 3));
    if (u < 0.80) {     /* recent nodes: long chains, deep graphs */
        long w = i < 64 ? i : 64;
        return (int32_t)(i - 1 - (long)(rnd() % (uint32_t)w));
    }
    return (int32_t)(rnd() % (uint32_t)i);
}

/* n nodes, about a third of them in x*y/y sites (two nodes each). */
static graph gen_dag(long n, unsigned seed)
{
    graph g = {malloc((size_t)(n + 2) * sizeof(gnode)), 0, 0};
    rng_state = 0x9E3779B97F4A7C15ull ^ seed;
    while (g.n < n) {
        long i = g.n;
        if (n - i >= 2 && rnd01() < 0.18) {
            int32_t a = pick_arg(i), b = pick_arg(i);
            g.v[i] = rnd() & 1 ? (gnode){O_MUL, a, b} : (gnode){O_MUL, b, a};
            g.v[i + 1] = (gnode){O_DIV, (int32_t)i, b};
            g.n += 2;
            g.sites++;
            continue;
        }
        int op = (int)(rnd() % NOPS);
        g.v[i] = (gnode){op, pick_arg(i), op_arity[op] == 2 ? pick_arg(i) : 0};
        g.n++;
    }
    return g;
}

typedef struct syms {
    tg_term *op[NOPS];
    tg_term *leaf[NLEAF + 3];
    tg_term *outputs;
} syms;

static void syms_init(tg_ctx *ctx, syms *s)
{
    char nm[16];
    for (int i = 0; i < NOPS; i++)
        s->op[i] = tg_symbol_cstr(ctx, op_name[i]);
    for (int i = 0; i < NLEAF; i++) {
        snprintf(nm, sizeof nm, "x%d", i);
        s->leaf[i] = tg_symbol_cstr(ctx, nm);
    }
    for (int i = 0; i < 3; i++)
        s->leaf[NLEAF + i] = tg_int(ctx, i);
    s->outputs = tg_symbol_cstr(ctx, "outputs");
}

/* With --lib the graph speaks the shipped library's vocabulary, where a
 * reduction names its axes: (sum x all). */
static int lib_vocab;

/* The terms of g's nodes (collector memory) and the root (outputs SINK...). */
static tg_term *build_terms(tg_ctx *ctx, const syms *s, const graph *g, tg_term ***termsp)
{
    tg_term **t = GC_MALLOC((size_t)g->n * sizeof *t);
    char *used = calloc((size_t)g->n, 1);
    for (long i = 0; i < g->n; i++) {
        const gnode *x = &g->v[i];
        tg_term *a[2];
        int32_t ar[2] = {x->a, x->b};
        for (int k = 0; k < op_arity[x->op]; k++) {
            if (ar[k] >= 0) {
                a[k] = t[ar[k]];
                used[ar[k]] = 1;
            } else {
                a[k] = s->leaf[-1 - ar[k]];
            }
        }
        size_t na = (size_t)op_arity[x->op];
        if (lib_vocab && x->op == O_SUM)
            a[na++] = tg_symbol_cstr(ctx, "all");
        t[i] = tg_app(ctx, s->op[x->op], na, a);
    }
    long ns = 0;
    tg_term **sinks = GC_MALLOC((size_t)g->n * sizeof *sinks);
    for (long i = 0; i < g->n; i++)
        if (!used[i])
            sinks[ns++] = t[i];
    free(used);
    if (termsp)
        *termsp = t;
    return tg_app(ctx, s->outputs, (size_t)ns, sinks);
}

/* ---- pointer maps and sets (collector memory: keys and values stay
 * alive) --------------------------------------------------------------- */

typedef struct pmap {
    void **kv;
    size_t n, cap;
} pmap;

static size_t phash(const void *p, size_t cap)
{
    uint64_t x = (uintptr_t)p * 0x9E3779B97F4A7C15ull;
    return (size_t)(x >> 29) & (cap - 1);
}

static void pmap_init(pmap *m, size_t expect)
{
    m->cap = 64;
    while (m->cap < 2 * expect)
        m->cap *= 2;
    m->kv = GC_MALLOC(2 * m->cap * sizeof *m->kv);
    m->n = 0;
}

static void *pmap_get(const pmap *m, const void *k)
{
    for (size_t i = phash(k, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (m->kv[2 * i] == k)
            return m->kv[2 * i + 1];
        if (!m->kv[2 * i])
            return NULL;
    }
}

static void pmap_put(pmap *m, void *k, void *v)
{
    if (2 * (m->n + 1) > m->cap) {
        pmap old = *m;
        pmap_init(m, old.cap);
        for (size_t i = 0; i < old.cap; i++)
            if (old.kv[2 * i])
                pmap_put(m, old.kv[2 * i], old.kv[2 * i + 1]);
    }
    size_t i = phash(k, m->cap);
    while (m->kv[2 * i] && m->kv[2 * i] != k)
        i = (i + 1) & (m->cap - 1);
    if (!m->kv[2 * i])
        m->n++;
    m->kv[2 * i] = k;
    m->kv[2 * i + 1] = v;
}

/* Distinct compound nodes reached from the roots (the seen set given,
 * to count several roots together). */
static size_t count_nodes(tg_term *const *roots, size_t nroots)
{
    pmap seen;
    pmap_init(&seen, 1024);
    size_t cap = 1024, n = 0, count = 0;
    tg_term **st = GC_MALLOC(cap * sizeof *st);
    for (size_t r = 0; r < nroots; r++) {
        if (tg_kind_of(roots[r]) != TG_PAIR || pmap_get(&seen, roots[r]))
            continue;
        pmap_put(&seen, roots[r], roots[r]);
        st[n++] = roots[r];
        while (n) {
            tg_term *x = st[--n];
            count++;
            tg_iter it;
            tg_iter_init(&it, x);
            for (tg_term *e; (e = tg_iter_next(&it));) {
                if (tg_kind_of(e) != TG_PAIR || pmap_get(&seen, e))
                    continue;
                pmap_put(&seen, e, e);
                if (n == cap) {
                    tg_term **ns = GC_MALLOC(2 * cap * sizeof *ns);
                    memcpy(ns, st, n * sizeof *ns);
                    st = ns, cap *= 2;
                }
                st[n++] = e;
            }
        }
    }
    return count;
}

/* ---- the hand-written reference pass ------------------------------------ */

/* The same rewrite as a walk inputs first (results are compared once
 * the arguments of commutative ops are put in the engine's canonical
 * order): every node rebuilt from its rewritten elements (itself when
 * none changed), then (true_div (mul a b) c) with c == b gives a,
 * with c == a gives b.  Memoized by node, an explicit stack. */
static tg_term *ref_pass(tg_ctx *ctx, tg_term *root, tg_term *mul, tg_term *div, size_t hint,
                         long *rewrites)
{
    pmap done;
    pmap_init(&done, hint);
    typedef struct fr {
        tg_term *t;
        tg_iter it;
        size_t vb;
        int changed;
    } fr;
    size_t cap = 1024, n = 0, vcap = 4096, nv = 0;
    fr *st = malloc(cap * sizeof *st);
    tg_term **vals = GC_MALLOC(vcap * sizeof *vals);
    tg_term *res = NULL;
    *rewrites = 0;
    st[n].t = root, st[n].vb = 0, st[n].changed = 0;
    tg_iter_init(&st[n++].it, root);
    while (n) {
        fr *f = &st[n - 1];
        tg_term *x = tg_iter_next(&f->it);
        if (x) {
            tg_term *v = tg_kind_of(x) == TG_PAIR ? pmap_get(&done, x) : x;
            if (!v) {
                if (n == cap)
                    st = realloc(st, (cap *= 2) * sizeof *st);
                st[n].t = x, st[n].vb = nv, st[n].changed = 0;
                tg_iter_init(&st[n++].it, x);
                continue;
            }
            if (nv == vcap) {
                tg_term **nvs = GC_MALLOC(2 * vcap * sizeof *nvs);
                memcpy(nvs, vals, nv * sizeof *nvs);
                vals = nvs, vcap *= 2;
            }
            vals[nv++] = v;
            f->changed |= v != x;
            continue;
        }
        tg_term **e = vals + f->vb;
        size_t k = nv - f->vb;
        tg_term *node = f->changed ? tg_list(ctx, k, e, NULL) : f->t;
        if (k == 3 && e[0] == div && tg_kind_of(e[1]) == TG_PAIR && tg_length(e[1]) == 3 &&
            tg_car(e[1]) == mul) {
            tg_term *a = tg_nth(e[1], 1), *b = tg_nth(e[1], 2);
            if (b == e[2])
                node = a, ++*rewrites;
            else if (a == e[2])
                node = b, ++*rewrites;
        }
        pmap_put(&done, f->t, node);
        nv = f->vb;
        n--;
        if (!n) {
            res = node;
        } else {
            vals[nv++] = node;
            st[n - 1].changed |= node != f->t;
        }
    }
    free(st);
    return res;
}

/* x*y/y as a C node rewriter: the same test; ud is the symbol mul. */
static tg_term *c_mul_div_cancel(tg_ctx *ctx, tg_term *node, void *ud, tg_error *err)
{
    (void)ctx, (void)err;
    tg_term *num = tg_nth(node, 1), *den = tg_nth(node, 2);
    if (!num || tg_car(num) != ud || tg_length(num) != 3 || tg_length(node) != 3)
        return NULL;
    if (tg_nth(num, 2) == den)
        return tg_nth(num, 1);
    if (tg_nth(num, 1) == den)
        return tg_nth(num, 2);
    return NULL;
}

/* ---- the rules ---------------------------------------------------------- */

static const char *const decls[] = {
    "(op add (arity 2) comm)", "(op mul (arity 2) comm)", "(op sub (arity 2))",
    "(op true_div (arity 2))", "(op pow (arity 2))", "(op maximum (arity 2) comm)",
    "(op minimum (arity 2) comm)", "(op dot (arity 2))", "(op neg (arity 1))",
    "(op exp (arity 1))", "(op log (arity 1))", "(op tanh (arity 1))", "(op sin (arity 1))",
    "(op cos (arity 1))", "(op sqrt (arity 1))", "(op sqr (arity 1))", "(op abs (arity 1))",
    "(op sum (arity 1))", "(op transpose (arity 1))", "(op switch (arity 3))",
    "(op fill (arity 2))",
};

/* A canonicalize database of the kind PyTensor runs: algebraic
 * identities (some fire on the random graph: its leaves include 0, 1, 2),
 * lifts through switch and sinks through fill (they never fire here, but
 * are tried on every node of their ops).  "@" marks where x*y/y goes. */
static const char *const canon[] = {
    "(add ?x 0) => ?x", "(mul ?x 1) => ?x", "(mul ?x 0) => 0", "(sub ?x 0) => ?x",
    "(sub ?x ?x) => 0", "(true_div ?x 1) => ?x", "(true_div ?x ?x) => 1", "(neg (neg ?x)) => ?x",
    "(neg 0) => 0", "(sub ?x (neg ?y)) => (add ?x ?y)", "(add ?x (neg ?y)) => (sub ?x ?y)",
    "(neg (sub ?x ?y)) => (sub ?y ?x)", "(exp (log ?x)) => ?x", "(log (exp ?x)) => ?x",
    "(exp 0) => 1", "(log 1) => 0", "(mul (neg ?x) (neg ?y)) => (mul ?x ?y)",
    "(true_div (true_div ?x ?y) ?z) => (true_div ?x (mul ?y ?z))",
    "(true_div (neg ?x) (neg ?y)) => (true_div ?x ?y)", "(add (sub ?x ?y) ?y) => ?x",
    "(sub (add ?x ?y) ?y) => ?x", "(pow ?x 1) => ?x", "(pow ?x 0) => 1",
    "(sqrt (sqr ?x)) => (abs ?x)", "(abs (abs ?x)) => (abs ?x)", "(abs (neg ?x)) => (abs ?x)",
    "(tanh (neg ?x)) => (neg (tanh ?x))", "(sin (neg ?x)) => (neg (sin ?x))",
    "(cos (neg ?x)) => (cos ?x)", "(transpose (transpose ?x)) => ?x",
    "(sum (neg ?x)) => (neg (sum ?x))", "(dot (neg ?a) ?b) => (neg (dot ?a ?b))", "@",
    "(true_div ?y (mul ?x ?y)) => (true_div 1 ?x)",
    "(mul (exp ?x) (exp ?y)) => (exp (add ?x ?y))", "(add (log ?x) (log ?y)) => (log (mul ?x ?y))",
    "(mul ?x ?x) => (sqr ?x)", "(maximum ?x ?x) => ?x", "(minimum ?x ?x) => ?x",
    "(sub (neg ?x) ?y) => (neg (add ?x ?y))",
    /* lifts through switch */
    "(exp (switch ?c ?a ?b)) => (switch ?c (exp ?a) (exp ?b))",
    "(log (switch ?c ?a ?b)) => (switch ?c (log ?a) (log ?b))",
    "(tanh (switch ?c ?a ?b)) => (switch ?c (tanh ?a) (tanh ?b))",
    "(sin (switch ?c ?a ?b)) => (switch ?c (sin ?a) (sin ?b))",
    "(sqrt (switch ?c ?a ?b)) => (switch ?c (sqrt ?a) (sqrt ?b))",
    "(abs (switch ?c ?a ?b)) => (switch ?c (abs ?a) (abs ?b))",
    "(neg (switch ?c ?a ?b)) => (switch ?c (neg ?a) (neg ?b))",
    "(sum (switch ?c ?a ?b)) => (switch ?c (sum ?a) (sum ?b))",
    "(transpose (switch ?c ?a ?b)) => (switch ?c (transpose ?a) (transpose ?b))",
    /* sinks through fill */
    "(add (fill ?s ?x) ?y) => (fill ?s (add ?x ?y))",
    "(mul (fill ?s ?x) ?y) => (fill ?s (mul ?x ?y))",
    "(sub (fill ?s ?x) ?y) => (fill ?s (sub ?x ?y))",
    "(sub ?y (fill ?s ?x)) => (fill ?s (sub ?y ?x))",
    "(true_div (fill ?s ?x) ?y) => (fill ?s (true_div ?x ?y))",
    "(true_div ?y (fill ?s ?x)) => (fill ?s (true_div ?y ?x))",
    "(pow (fill ?s ?x) ?y) => (fill ?s (pow ?x ?y))",
    "(maximum (fill ?s ?x) ?y) => (fill ?s (maximum ?x ?y))",
    "(dot (fill ?s ?x) ?y) => (fill ?s (dot ?x ?y))",
    "(exp (fill ?s ?x)) => (fill ?s (exp ?x))",
    "(log (fill ?s ?x)) => (fill ?s (log ?x))",
    "(neg (fill ?s ?x)) => (fill ?s (neg ?x))",
};
#define NCANON (sizeof canon / sizeof *canon)

typedef struct sbuf {
    char *s;
    size_t n, cap;
} sbuf;

static void sb_add(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#include <stdarg.h>
static void sb_add(sbuf *b, const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int w = vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap);
        va_end(ap);
        if (w >= 0 && b->n + (size_t)w < b->cap) {
            b->n += (size_t)w;
            return;
        }
        b->cap = b->cap * 2 + (size_t)(w > 0 ? w : 0) + 256;
        b->s = realloc(b->s, b->cap);
    }
}

/* The benchmark's rules and rewriters, after the extra database. */
static char *db_text(const opts *o)
{
    sbuf b = {malloc(256), 0, 256};
    b.s[0] = 0;
    sb_add(&b, "(rule bench-mul-div-cancel (true_div (mul ?x ?y) ?y) => ?x)\n"
               "(walk walk-rule bench-mul-div-cancel)\n(walk walk-c bench-mul-div-cancel-c)\n"
               "(equilibrium eq-rule bench-mul-div-cancel)\n"
               "(equilibrium eq-c bench-mul-div-cancel-c)\n"
               /* fill never occurs in the graph: this only puts the
                * arguments of commutative ops in canonical order, to
                * compare a term with the reference's */
               "(rule bench-never (fill ?x ?y) => ?x)\n"
               "(equilibrium canonical-order bench-never)\n");
    for (size_t i = 0; i < NCANON; i++)
        if (strcmp(canon[i], "@"))
            sb_add(&b, "(rule bench-c%02zu %s)\n", i, canon[i]);
    for (int v = 0; v < 2; v++) {
        sb_add(&b, "(equilibrium canon-%s (tags fast_run)", v ? "c" : "rule");
        for (size_t i = 0; i < NCANON; i++)
            if (strcmp(canon[i], "@"))
                sb_add(&b, " bench-c%02zu", i);
            else
                sb_add(&b, " bench-mul-div-cancel%s", v ? "-c" : "");
        for (int i = 0; i < o->nwith; i++)
            sb_add(&b, " %s", o->with[i]);
        sb_add(&b, ")\n");
    }
    return b.s;
}

static size_t canon_rules(const opts *o)
{
    return NCANON + (size_t)o->nwith;
}

/* A rule set with the extra database, the ops, the C rewriter, the rules. */
static tg_rules *make_rules(tg_ctx *ctx, const opts *o, int quiet)
{
    tg_error err;
    tg_rules *rs = tg_rules_new(ctx, &err);
    if (!rs)
        die("rule set", &err);
    if (o->rules && tg_rules_load_file(rs, o->rules, &err) < 0)
        die(o->rules, &err);
    for (size_t i = 0; i < sizeof decls / sizeof *decls; i++) {
        tg_term *f = tg_read_cstr(ctx, decls[i], &err);
        if (!f)
            die("op", &err);
        if (tg_rules_eval(rs, f, NULL, NULL, NULL, &err) < 0) {
            if (!o->rules)
                die(decls[i], &err);
            if (!quiet)
                fprintf(stderr, "graph: keeping the database's declaration: %s\n", err.message);
        }
    }
    if (tg_rules_def_rewriter(rs, "bench-mul-div-cancel-c", "true_div", "fast_run", c_mul_div_cancel,
                              tg_symbol_cstr(ctx, "mul"), &err) < 0)
        die("C rewriter", &err);
    char *db = db_text(o);
    if (tg_rules_load_string(rs, db, strlen(db), "graph-bench.rules", &err) < 0)
        die("benchmark rules", &err);
    free(db);
    return rs;
}

static tg_term *spec_of(tg_ctx *ctx, const opts *o, const char *name, int canon_db)
{
    tg_error err;
    char buf[4096];
    if (canon_db && o->query)
        snprintf(buf, sizeof buf, "(query %s %s)", name, o->query);
    else
        snprintf(buf, sizeof buf, "%s", name);
    tg_term *t = tg_read_cstr(ctx, buf, &err);
    if (!t)
        die("query", &err);
    return t;
}

/* (rewrites N) and (passes P) of the last profile. */
static long profile_field(tg_rules *rs, const char *field)
{
    tg_term *p = tg_rules_profile(rs);
    tg_iter it;
    tg_iter_init(&it, p);
    for (tg_term *e; p && (e = tg_iter_next(&it));) {
        size_t len;
        const char *s = tg_kind_of(e) == TG_PAIR && tg_kind_of(tg_car(e)) == TG_SYMBOL
                            ? tg_symbol_name(tg_car(e), &len)
                            : NULL;
        int64_t v;
        if (s && !strcmp(s, field) && tg_int_get(tg_nth(e, 1), &v) == 0)
            return (long)v;
    }
    return -1;
}

/* ---- part a: x*y/y ------------------------------------------------------ */

typedef struct variant {
    const char *rewriter, *impl, *spec;
    int canon_db;
} variant;

static const variant variants[] = {
    {"walk", "rule", "walk-rule", 0},           {"walk", "c_rewriter", "walk-c", 0},
    {"equilibrium", "rule", "eq-rule", 0},      {"equilibrium", "c_rewriter", "eq-c", 0},
    {"equilibrium+canonicalize", "rule", "canon-rule", 1},
    {"equilibrium+canonicalize", "c_rewriter", "canon-c", 1},
};
#define NVAR (sizeof variants / sizeof *variants)

/* One timed run of variant v (-1: the reference pass) in a fresh context
 * (not inlined: valgrind --tool=callgrind --toggle-collect=run_once
 * counts the timed runs alone). */
/* The process CPU time of the last run_once's timed part. */
static double run_cpu_ms;

static __attribute__((noinline)) double run_once(const opts *o, const graph *g, int v, long *rewrites, long *passes)
{
    tg_error err;
    tg_ctx *ctx = tg_ctx_new(&err);
    syms s;
    syms_init(ctx, &s);
    tg_term *root = build_terms(ctx, &s, g, NULL);
    double ms;
    if (v < 0) {
        double t0 = bench_now_ms(), c0 = bench_process_cpu_ms();
        tg_term *r = ref_pass(ctx, root, s.op[O_MUL], s.op[O_DIV], (size_t)g->n, rewrites);
        ms = bench_now_ms() - t0;
        run_cpu_ms = bench_process_cpu_ms() - c0;
        *passes = 1;
        if (!r)
            die("reference", NULL);
    } else {
        tg_rules *rs = make_rules(ctx, o, 1);
        tg_term *spec = spec_of(ctx, o, variants[v].spec, variants[v].canon_db);
        double t0 = bench_now_ms(), c0 = bench_process_cpu_ms();
        tg_term *r = tg_rewrite(rs, spec, root, &err);
        ms = bench_now_ms() - t0;
        run_cpu_ms = bench_process_cpu_ms() - c0;
        if (!r)
            die(variants[v].spec, &err);
        *rewrites = profile_field(rs, "rewrites");
        *passes = profile_field(rs, "passes");
        tg_rules_free(rs);
    }
    tg_ctx_free(ctx);
    return ms;
}

static int part_a(const opts *o)
{
    graph g = gen_dag(o->nodes, o->seed);
    tg_error err;
    int bad = 0;

    /* checks, in one context: every variant against the reference */
    tg_ctx *ctx = tg_ctx_new(&err);
    syms s;
    syms_init(ctx, &s);
    double t0 = bench_now_ms();
    tg_term *root = build_terms(ctx, &s, &g, NULL);
    double build_ms = bench_now_ms() - t0;
    size_t distinct = count_nodes(&root, 1);
    printf("{\"bench\":\"graph_build\",\"nodes\":%ld,\"distinct\":%zu,\"sites\":%ld,\"ms\":%.3f}\n",
           g.n, distinct, g.sites, build_ms);
    long ref_rw;
    tg_term *ref = ref_pass(ctx, root, s.op[O_MUL], s.op[O_DIV], (size_t)g.n, &ref_rw);
    tg_rules *rs = make_rules(ctx, o, 0);
    tg_term *result[NVAR];
    tg_term *canonical = tg_symbol_cstr(ctx, "canonical-order");
    for (size_t v = 0; v < NVAR; v++) {
        result[v] = tg_rewrite(rs, spec_of(ctx, o, variants[v].spec, variants[v].canon_db), root, &err);
        if (!result[v] || !(result[v] = tg_rewrite(rs, canonical, result[v], &err)))
            die(variants[v].spec, &err);
    }
    if (!(ref = tg_rewrite(rs, canonical, ref, &err)))
        die("canonical order", &err);

    /* the runs of the variants interleaved, so that a noisy moment of a
     * shared machine spreads over all of them */
    static double t[NVAR + 1][64];
    long rw[NVAR + 1] = {0}, passes[NVAR + 1] = {0};
    int reps = o->reps > 64 ? 64 : o->reps;
    for (int r = 0; r < reps; r++)
        for (int v = -1; v < (int)NVAR; v++)
            if (v < 0 || !o->only || !strcmp(o->only, variants[v].spec))
                t[v + 1][r] = run_once(o, &g, v, &rw[v + 1], &passes[v + 1]);
    double ref_ms = bench_median(t[0], reps);
    printf("{\"bench\":\"mul_div_cancel\",\"rewriter\":\"hand-written C pass\",\"impl\":\"reference\","
           "\"nodes\":%ld,\"rewrites\":%ld,\"ms_median\":%.3f,\"us_per_node\":%.4f}\n",
           g.n, ref_rw, ref_ms, ref_ms * 1e3 / (double)g.n);
    for (size_t v = 0; v < NVAR; v++) {
        if (o->only && strcmp(o->only, variants[v].spec))
            continue;
        double ms = bench_median(t[v + 1], reps);
        /* the databases do more than x*y/y: compared with each other */
        int same = variants[v].canon_db ? result[v] == result[NVAR - 2] : result[v] == ref;
        bad |= !same;
        printf("{\"bench\":\"mul_div_cancel\",\"rewriter\":\"%s\",\"impl\":\"%s\",\"rules\":%zu,"
               "\"nodes\":%ld,\"rewrites\":%ld,\"passes\":%ld,\"ms_median\":%.3f,\"us_per_node\":%.4f,"
               "\"ref_ms_median\":%.3f,\"ratio_to_ref\":%.2f,\"pytensor_ms\":%.0f,\"%s\":%s}\n",
               variants[v].rewriter, variants[v].impl, variants[v].canon_db ? canon_rules(o) : 1,
               g.n, rw[v + 1], passes[v + 1], ms, ms * 1e3 / (double)g.n, ref_ms, ms / ref_ms, PYTENSOR_CANCEL_MS,
               variants[v].canon_db ? "same_as_rule_db" : "same_as_ref", same ? "true" : "false");
    }
    tg_rules_free(rs);
    tg_ctx_free(ctx);
    free(g.v);
    return bad;
}

/* ---- part b: merging ------------------------------------------------------ */

/* The reference merge: a node's canonical index is the first node with
 * the same op and canonical arguments (an open-addressing table on
 * (op, a, b)), as a merge pass over an unshared graph finds it. */
static long ref_merge(const graph *g)
{
    size_t cap = 64;
    while (cap < 2 * (size_t)g->n)
        cap *= 2;
    int32_t *tab = malloc(cap * sizeof *tab);
    int32_t *canon_of = malloc((size_t)g->n * sizeof *canon_of);
    gnode *cg = malloc((size_t)g->n * sizeof *cg);     /* nodes with canonical arguments */
    memset(tab, 0xff, cap * sizeof *tab);
    long distinct = 0;
    for (long i = 0; i < g->n; i++) {
        gnode x = g->v[i];
        if (x.a >= 0)
            x.a = canon_of[x.a];
        if (op_arity[x.op] == 2 && x.b >= 0)
            x.b = canon_of[x.b];
        if (op_arity[x.op] == 1)
            x.b = 0;
        cg[i] = x;
        uint64_t h = ((uint64_t)(uint32_t)x.op * 0x9E3779B97F4A7C15ull) ^ (uint32_t)x.a;
        h = (h * 0xBF58476D1CE4E5B9ull) ^ (uint32_t)x.b;
        h *= 0x94D049BB133111EBull;
        size_t j = (size_t)(h >> 20) & (cap - 1);
        for (;; j = (j + 1) & (cap - 1)) {
            int32_t k = tab[j];
            if (k < 0) {
                tab[j] = (int32_t)i;
                canon_of[i] = (int32_t)i;
                distinct++;
                break;
            }
            gnode y = cg[k];
            if (y.op == x.op && y.a == x.a && y.b == x.b) {
                canon_of[i] = k;
                break;
            }
        }
    }
    free(tab);
    free(canon_of);
    free(cg);
    return distinct;
}

/* A graph of n nodes made of copies of ntpl random templates (~size
 * nodes each), every copy with its own nodes: all duplicates. */
static graph gen_dups(long n, long size, long ntpl, unsigned seed, long **roots, long *nroots)
{
    graph *tpl = malloc((size_t)ntpl * sizeof *tpl);
    for (long k = 0; k < ntpl; k++)
        tpl[k] = gen_dag(size, seed * 7919u + (unsigned)k + 1);
    graph g = {malloc((size_t)(n + size + 2) * sizeof(gnode)), 0, 0};
    *roots = malloc((size_t)(n / size + 2) * sizeof **roots);
    *nroots = 0;
    rng_state = 0x51ED270B27ull ^ seed;
    while (g.n < n) {
        const graph *t = &tpl[rnd() % (uint32_t)ntpl];
        long base = g.n;
        for (long i = 0; i < t->n; i++) {
            gnode x = t->v[i];
            if (x.a >= 0)
                x.a += (int32_t)base;
            if (op_arity[x.op] == 2 && x.b >= 0)
                x.b += (int32_t)base;
            g.v[g.n++] = x;
        }
        (*roots)[(*nroots)++] = g.n - 1;
    }
    for (long k = 0; k < ntpl; k++)
        free(tpl[k].v);
    free(tpl);
    return g;
}

static int part_b(const opts *o)
{
    long size = 110, ntpl = 50, *roots, nroots;
    graph g = gen_dups(o->merge_nodes, size, ntpl, o->seed, &roots, &nroots);
    double tb[64], tr[64];
    int reps = o->reps > 64 ? 64 : o->reps;
    size_t distinct = 0;
    long ref_distinct = 0;
    for (int r = 0; r < reps; r++) {
        tg_error err;
        tg_ctx *ctx = tg_ctx_new(&err);
        syms s;
        syms_init(ctx, &s);
        tg_term **terms;
        double t0 = bench_now_ms();
        build_terms(ctx, &s, &g, &terms);
        tb[r] = bench_now_ms() - t0;
        /* every node of the graph is reached from the copies' last nodes
         * and the other sinks: count from all nodes' terms */
        distinct = count_nodes(terms, (size_t)g.n);
        tg_ctx_free(ctx);
        t0 = bench_now_ms();
        ref_distinct = ref_merge(&g);
        tr[r] = bench_now_ms() - t0;
    }
    double b = bench_median(tb, reps), rm = bench_median(tr, reps);
    int same = (long)distinct == ref_distinct;
    printf("{\"bench\":\"merge\",\"nodes_built\":%ld,\"copies\":%ld,\"templates\":%ld,"
           "\"distinct\":%zu,\"distinct_ref\":%ld,\"distinct_equal\":%s,\"build_ms_median\":%.3f,"
           "\"ref_merge_ms_median\":%.3f,\"ratio_to_ref\":%.2f,\"pytensor_merge_ms\":%.0f}\n",
           g.n, nroots, ntpl, distinct, ref_distinct, same ? "true" : "false", b, rm, b / rm,
           PYTENSOR_MERGE_MS);
    free(roots);
    free(g.v);
    return !same;
}

/* ---- part c: the shipped library's canonicalize database ---------------- */

/* The x*y/y sites left in the DAG of root: (true_div (mul ... y ...) y). */
static long sites_left(tg_ctx *ctx, tg_term *root, size_t hint)
{
    tg_term *mul = tg_symbol_cstr(ctx, "mul"), *div = tg_symbol_cstr(ctx, "true_div");
    pmap seen;
    pmap_init(&seen, hint);
    size_t n = 0, cap = 1024;
    tg_term **st = malloc(cap * sizeof *st);
    long left = 0;
    st[n++] = root;
    while (n) {
        tg_term *x = st[--n];
        if (tg_kind_of(x) != TG_PAIR || pmap_get(&seen, x))
            continue;
        pmap_put(&seen, x, x);
        tg_term *num = tg_nth(x, 1), *den = tg_nth(x, 2);
        if (tg_car(x) == div && tg_length(x) == 3 && tg_kind_of(num) == TG_PAIR && tg_car(num) == mul)
            for (size_t k = 1; k < tg_length(num); k++)
                left += tg_nth(num, k) == den;
        tg_iter it;
        tg_iter_init(&it, x);
        for (tg_term *e; (e = tg_iter_next(&it));) {
            if (n == cap)
                st = realloc(st, (cap *= 2) * sizeof *st);
            st[n++] = e;
        }
    }
    free(st);
    return left;
}

/* The number of rules the last rewrite ran: (rules ...) and (never-fired ...). */
static long profile_rules(tg_rules *rs)
{
    tg_term *p = tg_rules_profile(rs);
    long n = 0;
    tg_iter it;
    tg_iter_init(&it, p);
    for (tg_term *e; p && (e = tg_iter_next(&it));) {
        size_t len;
        const char *s = tg_kind_of(e) == TG_PAIR && tg_kind_of(tg_car(e)) == TG_SYMBOL
                            ? tg_symbol_name(tg_car(e), &len) : NULL;
        if (s && (!strcmp(s, "rules") || !strcmp(s, "never-fired")))
            n += (long)tg_length(e) - 1;
    }
    return n;
}

/* x*y/y inside the library's whole canonicalize database (an
 * equilibrium), each run in a fresh context, against the hand-written
 * pass; the result must hold no site. */
static int part_c(const opts *o)
{
    graph g = gen_dag(o->nodes, o->seed);
    double *lib_ms = malloc((size_t)o->reps * sizeof *lib_ms);
    double *ref_ms = malloc((size_t)o->reps * sizeof *ref_ms);
    double *lib_cpu = malloc((size_t)o->reps * sizeof *lib_cpu);
    double *ref_cpu = malloc((size_t)o->reps * sizeof *ref_cpu);
    long nrules = 0, left = -1, rewrites = 0, passes = 0;
    unsigned long gcs = 0;  /* collections during the rewrites */
    uint32_t hash = 0;  /* of the result: equal results, equal hashes */
    lib_vocab = 1;
    for (int r = 0; r < o->reps; r++) {
        tg_error err;
        long rw, ps;
        ref_ms[r] = run_once(o, &g, -1, &rw, &ps);
        ref_cpu[r] = run_cpu_ms;
        tg_ctx *ctx = tg_ctx_new(&err);
        syms s;
        syms_init(ctx, &s);
        tg_term *root = build_terms(ctx, &s, &g, NULL);
        tg_rules *rs = tg_rules_new(ctx, &err);
        if (!rs || tg_rules_load_file(rs, o->lib, &err) < 0)
            die("--lib", &err);
        tg_term *spec = tg_symbol_cstr(ctx, "canonicalize");
        double t0 = bench_now_ms(), c0 = bench_process_cpu_ms();
        GC_word g0 = GC_get_gc_no();
        tg_term *out = tg_rewrite(rs, spec, root, &err);
        lib_ms[r] = bench_now_ms() - t0;
        lib_cpu[r] = bench_process_cpu_ms() - c0;
        gcs += (unsigned long)(GC_get_gc_no() - g0);
        if (!out)
            die("canonicalize", &err);
        nrules = profile_rules(rs);
        rewrites = profile_field(rs, "rewrites");
        passes = profile_field(rs, "passes");
        left = sites_left(ctx, out, (size_t)g.n);
        hash = tg_hash(out);
        tg_rules_free(rs);
        tg_ctx_free(ctx);
    }
    lib_vocab = 0;
    double m = bench_median(lib_ms, o->reps), ref = bench_median(ref_ms, o->reps);
    double mc = bench_median(lib_cpu, o->reps), refc = bench_median(ref_cpu, o->reps);
    printf("{\"bench\":\"graph_lib_canonicalize\",\"nodes\":%ld,\"sites\":%ld,\"rules\":%ld,"
           "\"rewrites\":%ld,\"passes\":%ld,\"ms\":%.3f,\"us_per_node\":%.3f,\"ref_ms\":%.3f,"
           "\"ratio_to_ref\":%.2f,\"cpu_ms\":%.3f,\"ref_cpu_ms\":%.3f,\"cpu_ratio_to_ref\":%.2f,"
           "\"collections_per_run\":%.1f,\"sites_left\":%ld,\"result_hash\":%lu,\"pytensor_ms\":6600,"
           "\"target_ms\":66}\n",
           g.n, g.sites, nrules, rewrites, passes, m, 1000 * m / (double)g.n, ref, m / ref, mc, refc,
           mc / refc, (double)gcs / o->reps, left, (unsigned long)hash);
    free(lib_ms);
    free(ref_ms);
    free(lib_cpu);
    free(ref_cpu);
    free(g.v);
    return left != 0;
}

static void usage(void)
{
    fprintf(stderr, "usage: graph [--nodes N] [--reps R] [--seed S] [--merge-nodes N] [--rules FILE]"
                    " [--with NAME]... [--query CLAUSES] [--only SPEC] [--lib ALL.RULES]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    GC_INIT();
    opts o = {bench_size(100000, 100), bench_size(110000, 110), bench_reps(5), 1, NULL, {0}, 0, NULL, NULL, NULL};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v)
            usage();
        if (!strcmp(a, "--nodes") && atol(v) > 0)
            o.nodes = atol(v);
        else if (!strcmp(a, "--merge-nodes") && atol(v) > 0)
            o.merge_nodes = atol(v);
        else if (!strcmp(a, "--reps") && atoi(v) > 0)
            o.reps = atoi(v);
        else if (!strcmp(a, "--seed"))
            o.seed = (unsigned)strtoul(v, NULL, 10);
        else if (!strcmp(a, "--rules"))
            o.rules = v;
        else if (!strcmp(a, "--with") && o.nwith < MAX_WITH)
            o.with[o.nwith++] = v;
        else if (!strcmp(a, "--query"))
            o.query = v;
        else if (!strcmp(a, "--only"))
            o.only = v;
        else if (!strcmp(a, "--lib"))
            o.lib = v;
        else
            usage();
        i++;
    }
    if (o.lib)      /* the library alone: its vocabulary is not part a's */
        return part_c(&o);
    int bad = part_a(&o);
    bad |= part_b(&o);
    if (bad)
        fprintf(stderr, "graph: a result differs from its reference\n");
    return bad;
}
