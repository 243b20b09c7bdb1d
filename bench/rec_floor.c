/* rec_floor.c - a floor under the REC benchmarks that make one new node per
 * rewrite (revnat, factorial): their rules evaluated innermost by C code
 * written for them, with no matching, no rule selection and no frames,
 * so that what is left is the cost of the terms themselves.  Two modes:
 *
 *   table  each node interned in tgrel's hash-cons table as the rewriting
 *          engine interns it: the nodes of a constructor chain hashed
 *          at its start, each built with its hash known while the home
 *          bucket of the node four levels further is fetched;
 *   alloc  each node a fresh block from the collector, in the layout of
 *          tgrel's nodes, and no table: the same program without
 *          hash-consing (its result is interned after the clock stops,
 *          for the check).
 *
 *   rec_floor [--reps N] FILE...
 *   rec_floor --pair [--budget-ms MS] [--reps N] FILE...
 *
 * FILE is a benchmark of the shared REC folder whose queries use only the
 * operators written here (d0 s d10 plus times fact, nil l gen conc rev);
 * the C code follows the rules of revnat and factorial, and the check of
 * each normal form against the file's expected hash is what ties the two.
 * One JSON object per file and mode: CPU ms of the evaluations only (min
 * and median), the rewrites the rules would count, and the verdict.  A
 * reference for bench/rec.sh, not a rewriting engine: queries with other
 * operators are reported as such ("ok":null).  Give one file per run for
 * figures, as bench/rec.sh does: a file run after factorial10 in the same
 * process finds the collector's heap grown to factorial's size (revnat10000
 * then took twice its time).
 *
 * --pair times the table mode against the rewriting engine (bench/rec's
 * run, memo off) in one process, for the target that the engine come
 * within 1.1x of the floor: timed in separate processes at different
 * moments, single runs of the two moved by 20% on a shared machine.  One
 * untimed run of each side first, so that both find the collector's heap
 * grown to what either needs; then rounds of both, the floor first in
 * even rounds and the engine first in odd ones, each run after a full
 * collection outside the clock (no garbage of the run before it, and the
 * table's collection pacing, which is the process's, back at its usual
 * divisor).  At least N rounds, and more (up to 100) until each side's
 * timed runs add up to MS of CPU time (2000, scaled by TGREL_BENCH_SCALE).
 * The table object's times are then the rounds', and a "rec-floor-pair"
 * object follows: both medians, "ratio" the median of the rounds' own
 * ratios engine / floor with "target" 1.1 and "met" beside it, the ratio
 * of the medians and that of the minimums.  The alloc mode runs after, on
 * its own, as without --pair. */
#define GC_THREADS 1
#include <gc/gc.h>

#include "tgrel.h"
#include "term.h"
#include "bench.h"
#include "rec_convert.h"
#include "rec_engine.h"
#include "rec_hash.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AHEAD 4             /* as the engine's CHAIN_AHEAD */
#define MAX_QUERY_DEPTH 1000

typedef struct floor_ctx {
    tg_ctx *ctx;
    int table;                      /* 1: interned nodes, 0: collector blocks */
    tg_term *d0, *s, *d10, *plus, *times, *fact, *nil, *l, *gen, *conc, *rev;
    unsigned long long rewrites;
    uint64_t *hash;                 /* a chain's hashes */
    tg_term **elt;                  /* a chain's elements (collector memory: they
                                     * may be all that holds them) */
    size_t hcap, ecap;
    const char *why;                /* the reason evaluation stopped */
    int beyond;                     /* ... is a query beyond this program (not a failure) */
    struct { tg_term *q, *v; } seen[64];    /* the query's subterms evaluated */
    size_t nseen;
} floor_ctx;

/* *arr with room for n items of size bytes, doubling; collected: in
 * collector memory (scanned).  0, or -1 with *arr as it was. */
static int grow(void **arr, size_t *cap, size_t n, size_t size, int collected)
{
    if (n <= *cap)
        return 0;
    size_t c = *cap ? *cap : 1024;
    while (c < n)
        c *= 2;
    void *a = collected ? GC_REALLOC(*arr, c * size) : realloc(*arr, c * size);
    if (!a)
        return -1;
    *arr = a, *cap = c;
    return 0;
}
/* Room for a chain of n nodes: its hashes (only the table mode hashes
 * ahead) and, with elts, its elements.  The arrays grow apart, so that
 * the collector scans no more element slots than a list needed. */
static int reserve(floor_ctx *f, size_t n, int elts)
{
    if ((f->table && grow((void **)&f->hash, &f->hcap, n, sizeof *f->hash, 0) < 0) ||
        (elts && grow((void **)&f->elt, &f->ecap, n, sizeof *f->elt, 1) < 0)) {
        f->why = "out of memory";
        return -1;
    }
    return 0;
}

/* A node outside the table, laid out as tgrel's (header, head, elements),
 * so that the evaluation reads both kinds alike. */
static tg_term *raw_node(floor_ctx *f, tg_term *head, unsigned na, tg_term *const *args)
{
    tg_term *t = GC_MALLOC(sizeof(tgT_hdr) + (na + 1) * sizeof(tg_term *));
    if (!t) {
        f->why = "out of memory";
        return NULL;
    }
    t->h = (tgT_hdr){TG_PAIR, 0, na + 1, 0, 0};
    t->e[0] = head;
    for (unsigned k = 0; k < na; k++)
        t->e[k + 1] = args[k];
    return t;
}

static tg_term *node(floor_ctx *f, tg_term *head, unsigned na, tg_term *const *args)
{
    if (!f->table)
        return raw_node(f, head, na, args);
    tg_term *t = tg_app(f->ctx, head, na, args);
    if (!t)
        f->why = "out of memory";
    return t;
}

/* head(elt[k-1], ... head(elt[1], head(elt[0], base))) with nx = 1, or
 * head^k(base) with nx = 0: a constructor chain, built from the inside. */
static tg_term *chain(floor_ctx *f, tg_term *head, unsigned nx, size_t k, tg_term *base)
{
    tg_term *r = base, *args[2];
    if (!f->table) {
        for (size_t j = 0; j < k && r; j++) {
            args[0] = nx ? f->elt[j] : r, args[1] = r;
            r = raw_node(f, head, nx + 1, args);
        }
        return r;
    }
    uint64_t h = tgT_ehash(base);
    for (size_t j = 0; j < k; j++) {
        args[0] = nx ? f->elt[j] : NULL;
        f->hash[j] = h = tgT_app_hash(head, nx + 1, args, h);
    }
    for (size_t j = 0; j < AHEAD && j < k; j++)
        tgT_fetch(f->ctx, f->hash[j]);
    for (size_t j = 0; j < k && r; j++) {
        args[0] = nx ? f->elt[j] : r, args[1] = r;
        r = tgT_app_hashed(f->ctx, f->hash[j], f->hash[j + AHEAD < k ? j + AHEAD : j], head,
                           nx + 1, args);
    }
    if (!r)
        f->why = "out of memory";
    return r;
}

/* Whether t is (head a1 .. ana). */
static int is_app(const tg_term *t, const tg_term *head, unsigned na)
{
    return !tgT_isfix(t) && tgT_ispair(t) && t->e[0] == head && t->h.n == na + 1 &&
           !(t->h.flags & TGT_HASTAIL);
}

/* The number of s above d0 in numeral n, or -1 when n is none. */
static long numeral(floor_ctx *f, tg_term *n)
{
    long k = 0;
    for (; n != f->d0; n = n->e[1], k++)
        if (!is_app(n, f->s, 1)) {
            f->why = "an argument is not a numeral";
            return -1;
        }
    return k;
}

/* The elements of list x, outermost first, into f->elt; -1 when x is not
 * a list of l cells ending in nil. */
static long elements(floor_ctx *f, tg_term *x)
{
    long k = 0;
    for (; x != f->nil; x = x->e[2], k++) {
        if (!is_app(x, f->l, 2)) {
            f->why = "an argument is not a list";
            return -1;
        }
        if (reserve(f, (size_t)k + 1, 1) < 0)
            return -1;
        f->elt[k] = x->e[1];
    }
    return k;
}

/* (plus (s ?N) ?M) -> (s (plus ?N ?M)), (plus d0 ?N) -> ?N */
static tg_term *plus(floor_ctx *f, tg_term *n, tg_term *m)
{
    long k = numeral(f, n);
    if (k < 0 || reserve(f, (size_t)k, 0) < 0)
        return NULL;
    f->rewrites += (unsigned long long)k + 1;
    return chain(f, f->s, 0, (size_t)k, m);
}

/* (times (s ?N) ?M) -> (plus ?M (times ?N ?M)), (times d0 ?N) -> d0 */
static tg_term *times(floor_ctx *f, tg_term *n, tg_term *m)
{
    long k = numeral(f, n);
    tg_term *r = f->d0;
    if (k < 0)
        return NULL;
    f->rewrites += (unsigned long long)k + 1;
    while (k-- > 0 && r)
        r = plus(f, m, r);
    return r;
}

/* An array of k + 1 terms (collector memory, as f->elt), or NULL with
 * the reason set. */
static tg_term **terms_array(floor_ctx *f, long k)
{
    tg_term **a = GC_MALLOC(((size_t)k + 1) * sizeof *a);
    if (!a)
        f->why = "out of memory";
    return a;
}

/* (fact (s ?N)) -> (times (s ?N) (fact ?N)), (fact d0) -> (s d0) */
static tg_term *fact(floor_ctx *f, tg_term *n)
{
    long k = numeral(f, n);
    tg_term **down = k < 0 ? NULL : terms_array(f, k);
    if (!down)
        return NULL;
    for (long i = k;; i--, n = n->e[1]) {
        down[i] = n;                /* down[i] = s^i(d0) */
        if (i == 0)
            break;
    }
    f->rewrites += (unsigned long long)k + 1;
    tg_term *r = node(f, f->s, 1, &f->d0);
    for (long i = 1; i <= k && r; i++)
        r = times(f, down[i], r);
    GC_FREE(down);
    return r;
}

/* (gen (s ?N)) -> (l (s ?N) (gen ?N)), (gen d0) -> (l d0 nil) */
static tg_term *gen(floor_ctx *f, tg_term *n)
{
    long k = numeral(f, n);
    if (k < 0 || reserve(f, (size_t)k, 1) < 0)
        return NULL;
    for (long i = k - 1; i >= 0; i--, n = n->e[1])
        f->elt[i] = n;              /* elt[i] = s^(i+1)(d0), innermost first */
    f->rewrites += (unsigned long long)k + 1;
    tg_term *args[2] = {f->d0, f->nil}, *base = node(f, f->l, 2, args);
    return base ? chain(f, f->l, 1, (size_t)k, base) : NULL;
}

/* (conc (l ?E ?L1) ?L2) -> (l ?E (conc ?L1 ?L2)), (conc nil ?L2) -> ?L2 */
static tg_term *conc(floor_ctx *f, tg_term *x, tg_term *y)
{
    long k = elements(f, x);
    if (k < 0 || reserve(f, (size_t)k, 0) < 0)
        return NULL;
    for (long i = 0, j = k - 1; i < j; i++, j--) {     /* innermost first */
        tg_term *e = f->elt[i];
        f->elt[i] = f->elt[j], f->elt[j] = e;
    }
    f->rewrites += (unsigned long long)k + 1;
    return chain(f, f->l, 1, (size_t)k, y);
}

/* (rev (l ?E ?L1)) -> (conc (rev ?L1) (l ?E nil)), (rev nil) -> nil */
static tg_term *rev(floor_ctx *f, tg_term *x)
{
    long k = elements(f, x);
    tg_term **e = k < 0 ? NULL : terms_array(f, k);
    if (!e)
        return NULL;
    memcpy(e, f->elt, (size_t)k * sizeof *e);
    f->rewrites += (unsigned long long)k + 1;
    tg_term *r = f->nil;
    for (long j = k - 1; j >= 0 && r; j--) {
        tg_term *args[2] = {e[j], f->nil}, *one = node(f, f->l, 2, args);
        r = one ? conc(f, r, one) : NULL;
    }
    GC_FREE(e);
    return r;
}

static tg_term *eval_new(floor_ctx *f, tg_term *q, int depth);

/* Innermost evaluation of query q (arguments first).  A subterm that
 * occurs twice in the query is one node and is evaluated once, as Maude
 * shares it, so the rewrite counts are Maude's. */
static tg_term *eval(floor_ctx *f, tg_term *q, int depth)
{
    for (size_t i = 0; i < f->nseen; i++)
        if (f->seen[i].q == q)
            return f->seen[i].v;
    tg_term *v = eval_new(f, q, depth);
    if (v && f->nseen < sizeof f->seen / sizeof *f->seen)
        f->seen[f->nseen].q = q, f->seen[f->nseen++].v = v;
    return v;
}

static tg_term *eval_new(floor_ctx *f, tg_term *q, int depth)
{
    if (depth > MAX_QUERY_DEPTH) {    /* eval recurses: a limit of this program */
        f->why = "a query nested deeper than this program evaluates";
        f->beyond = 1;
        return NULL;
    }
    if (q == f->d0 || q == f->nil)
        return q;
    if (q == f->d10) {          /* d10 -> (s (s ... d0)), one rewrite */
        f->rewrites++;
        return reserve(f, 10, 0) < 0 ? NULL : chain(f, f->s, 0, 10, f->d0);
    }
    if (tgT_isfix(q) || !tgT_ispair(q) || (q->h.flags & TGT_HASTAIL) || q->h.n > 3) {
        f->why = "a query term this program does not evaluate";
        f->beyond = 1;
        return NULL;
    }
    tg_term *op = q->e[0], *a[2] = {NULL, NULL};
    unsigned na = q->h.n - 1u;
    for (unsigned i = 0; i < na; i++)
        if (!(a[i] = eval(f, q->e[i + 1], depth + 1)))
            return NULL;
    if (op == f->s && na == 1)
        return node(f, f->s, 1, a);
    if (op == f->l && na == 2)
        return node(f, f->l, 2, a);
    if (op == f->plus && na == 2)
        return plus(f, a[0], a[1]);
    if (op == f->times && na == 2)
        return times(f, a[0], a[1]);
    if (op == f->fact && na == 1)
        return fact(f, a[0]);
    if (op == f->gen && na == 1)
        return gen(f, a[0]);
    if (op == f->conc && na == 2)
        return conc(f, a[0], a[1]);
    if (op == f->rev && na == 1)
        return rev(f, a[0]);
    f->why = "an operator this program does not evaluate";
    f->beyond = 1;
    return NULL;
}

/* ---- which files this program evaluates ---------------------------------- */

/* The rules the C code above follows, one string per rule.  A file
 * applies when every rule it gives for one of these operators (or for
 * one of the constructors, which must have none) is one of these, and
 * an operator of theirs it defines has all of them: operator names alone
 * say nothing (bubblesort's rev builds a sorted list of numerals). */
static const char *const known_rules[] = {
    "d10 -> (s (s (s (s (s (s (s (s (s (s d0))))))))))",
    "(plus d0 ?N) -> ?N",
    "(plus (s ?N) ?M) -> (s (plus ?N ?M))",
    "(times d0 ?N) -> d0",
    "(times (s ?N) ?M) -> (plus ?M (times ?N ?M))",
    "(fact d0) -> (s d0)",
    "(fact (s ?N)) -> (times (s ?N) (fact ?N))",
    "(gen (s ?N)) -> (l (s ?N) (gen ?N))",
    "(gen d0) -> (l d0 nil)",
    "(conc (l ?E ?L1) ?L2) -> (l ?E (conc ?L1 ?L2))",
    "(conc nil ?L2) -> ?L2",
    "(rev (l ?E ?L1)) -> (conc (rev ?L1) (l ?E nil))",
    "(rev nil) -> nil",
};
#define N_KNOWN (sizeof known_rules / sizeof *known_rules)
static const char *const known_ops[] = {"d0", "s", "d10", "plus", "times", "fact",
                                        "nil", "l", "gen", "conc", "rev"};
#define N_OPS (sizeof known_ops / sizeof *known_ops)

/* Rule text in a canonical spelling, into out (size n): tokens separated
 * by one space, variables renamed ?0, ?1, ... in order of first
 * occurrence; the head operator's name into head (size hn).  -1 when the
 * text does not fit. */
static int canon_rule(const char *r, char *out, size_t n, char *head, size_t hn)
{
    char vars[16][64];
    int nv = 0;
    size_t len = 0;
    *head = '\0';
    while (*r) {
        if (*r == ' ' || *r == '\t' || *r == '\r' || *r == '\n') {
            r++;
            continue;
        }
        const char *t = r;
        if (*r == '(' || *r == ')')
            r++;
        else
            while (*r && !strchr(" \t\r\n()", *r))
                r++;
        size_t tl = (size_t)(r - t);
        char tok[64];
        if (tl >= sizeof tok)
            return -1;
        memcpy(tok, t, tl);
        tok[tl] = '\0';
        if (!*head && *tok != '(') {
            if (strlen(tok) >= hn)
                return -1;
            strcpy(head, tok);
        }
        if (*tok == '?') {
            int v = 0;
            while (v < nv && strcmp(vars[v], tok) != 0)
                v++;
            if (v == nv) {
                if (nv == 16)
                    return -1;
                strcpy(vars[nv++], tok);
            }
            snprintf(tok, sizeof tok, "?%d", v);
        }
        int w = snprintf(out + len, n - len, len ? " %s" : "%s", tok);
        if (w < 0 || (size_t)w >= n - len)
            return -1;
        len += (size_t)w;
    }
    return 0;
}

static int known_op(const char *name)
{
    for (size_t i = 0; i < N_OPS; i++)
        if (strcmp(known_ops[i], name) == 0)
            return (int)i;
    return -1;
}

/* NULL when the file's rules for the operators of this program are the
 * rules it follows, else why not (into why). */
static const char *applies(const char *text, size_t len, char *why, size_t whysize)
{
    int seen[N_KNOWN] = {0}, ruled[N_OPS] = {0};
    char line[4096], c[4096], k[4096], head[64], kh[64];
    for (size_t at = 0; at < len;) {
        size_t e = at;
        while (e < len && text[e] != '\n')
            e++;
        size_t ll = e - at;
        if (ll >= 5 && memcmp(text + at, "rule ", 5) == 0) {
            if (ll - 5 >= sizeof line) {
                snprintf(why, whysize, "a rule too long for this program");
                return why;
            }
            memcpy(line, text + at + 5, ll - 5);
            line[ll - 5] = '\0';
            char *semi = strchr(line, ';');
            if (semi)
                *semi = '\0';
            int op;
            if (canon_rule(line, c, sizeof c, head, sizeof head) < 0) {
                snprintf(why, whysize, "a rule too long for this program");
                return why;
            }
            if ((op = known_op(head)) >= 0) {
                size_t i = 0;
                for (; i < N_KNOWN; i++) {
                    canon_rule(known_rules[i], k, sizeof k, kh, sizeof kh);
                    if (strcmp(c, k) == 0)
                        break;
                }
                if (i == N_KNOWN) {
                    snprintf(why, whysize, "the file's rules for %s are not those this program follows",
                             head);
                    return why;
                }
                seen[i] = 1;
                ruled[op] = 1;
            }
        }
        at = e + 1;
    }
    for (size_t i = 0; i < N_KNOWN; i++) {
        canon_rule(known_rules[i], k, sizeof k, kh, sizeof kh);
        if (ruled[known_op(kh)] && !seen[i]) {
            snprintf(why, whysize, "the file gives %s only some of the rules this program follows", kh);
            return why;
        }
    }
    return NULL;
}

/* The interned copy of a result of the alloc mode, without recursion.
 * The copy of a node is recorded in the node's hash fields, unused
 * outside the table (shifted, so the collector does not see it there:
 * each copy is also kept in `keep`, which it scans, until the end), so
 * shared nodes are copied once. */
static void set_copy(tg_term *x, tg_term *c)
{
    uint64_t v = (uint64_t)(uintptr_t)c >> 4;
    x->h.hash = (uint32_t)v;
    x->h.hash_hi = (uint32_t)(v >> 32);
}
static tg_term *copy_of(tg_term *x)
{
    if (tgT_isfix(x) || !tgT_ispair(x))
        return x;
    uint64_t v = (uint64_t)x->h.hash_hi << 32 | x->h.hash;
    return (tg_term *)(uintptr_t)(v << 4);
}

static tg_term *intern_copy(floor_ctx *f, tg_term *t)
{
    if (tgT_isfix(t) || !tgT_ispair(t))
        return t;           /* a symbol or a number: nothing was built */
    size_t sp = 0, cap = 1024, nk = 0, kcap = 1024;
    tg_term **st = malloc(cap * sizeof *st), **keep = GC_MALLOC(kcap * sizeof *keep), *done = NULL;
    if (!st || !keep)
        goto out;
    st[sp++] = t;
    while (sp) {
        tg_term *x = st[sp - 1], *args[2];
        unsigned na = x->h.n - 1u, ready = 1;
        for (unsigned i = 0; i < na; i++)
            if (!(args[i] = copy_of(x->e[i + 1]))) {
                ready = 0;
                if (sp == cap) {
                    tg_term **g = realloc(st, (cap *= 2) * sizeof *st);
                    if (!g)
                        goto out;
                    st = g;
                }
                st[sp++] = x->e[i + 1];
            }
        if (!ready)
            continue;
        tg_term *c = tg_app(f->ctx, x->e[0], na, args);
        if (!c)
            goto out;
        if (nk == kcap) {
            tg_term **g = GC_REALLOC(keep, (kcap *= 2) * sizeof *keep);
            if (!g)
                goto out;
            keep = g;
        }
        keep[nk++] = c;
        set_copy(x, c);
        sp--;
    }
    done = copy_of(t);
out:
    free(st);
    return done;
}

/* The symbols of the benchmarks' operators in a fresh context. */
static int floor_init(floor_ctx *f, int table)
{
    memset(f, 0, sizeof *f);
    f->table = table;
    if (!(f->ctx = tg_ctx_new(NULL)))
        return -1;
    struct { tg_term **at; const char *name; } sym[] = {
        {&f->d0, "d0"}, {&f->s, "s"}, {&f->d10, "d10"}, {&f->plus, "plus"},
        {&f->times, "times"}, {&f->fact, "fact"}, {&f->nil, "nil"}, {&f->l, "l"},
        {&f->gen, "gen"}, {&f->conc, "conc"}, {&f->rev, "rev"},
    };
    for (size_t i = 0; i < sizeof sym / sizeof *sym; i++)
        if (!(*sym[i].at = tg_symbol_cstr(f->ctx, sym[i].name)))
            return -1;
    return 0;
}

/* One repetition of every eval of spec: 1 verified, -1 nothing to check,
 * 0 wrong or failed (why set). */
static int run_once(const tg_rec_spec *spec, int table, double *ms, unsigned long long *rw,
                    char *why, size_t whysize)
{
    floor_ctx f;
    int verdict = 1;
    *ms = 0;
    tg_rec_clear_stack();   /* no normal form of an earlier run left there */
    if (floor_init(&f, table) < 0) {
        snprintf(why, whysize, "out of memory");
        return 0;
    }
    for (size_t i = 0; i < spec->n_evals && verdict; i++) {
        const tg_rec_eval *e = &spec->evals[i];
        tg_term *q = tg_read_cstr(f.ctx, e->query, NULL), *nf;
        if (!q) {
            snprintf(why, whysize, "eval %zu: the query does not read", i + 1);
            verdict = 0;
            break;
        }
        double t0 = bench_process_cpu_ms();
        f.nseen = 0;
        nf = eval(&f, q, 0);
        *ms += bench_process_cpu_ms() - t0;
        if (nf && !table)
            nf = intern_copy(&f, nf);
        if (!nf) {
            snprintf(why, whysize, "eval %zu: %s", i + 1, f.why ? f.why : "out of memory");
            verdict = f.beyond ? -1 : 0;
            break;
        }
        tg_term *want = e->expect ? tg_read_cstr(f.ctx, e->expect, NULL) : NULL;
        if (e->expect && nf != want) {
            snprintf(why, whysize, "eval %zu: normal form differs from expect", i + 1);
            verdict = 0;
        } else if (e->has_sha) {
            int ok = tg_rec_hash_check(nf, e->sha, e->bytes, e->symbols, why, whysize);
            if (ok <= 0)
                verdict = 0;
        } else if (!e->expect) {
            snprintf(why, whysize, "eval %zu has no expected normal form", i + 1);
            verdict = -1;
        }
    }
    *rw = f.rewrites;
    free(f.hash);
    GC_FREE(f.elt);
    tg_ctx_free(f.ctx);
    return verdict;
}

/* The JSON object of one mode's repetitions (ms sorted here). */
static void report_mode(const char *name, int table, double *ms, int n, unsigned long long rw,
                        int verdict, const char *why)
{
    qsort(ms, (size_t)n, sizeof *ms, bench_cmp_double);
    printf("{\"bench\":\"rec-floor\",\"name\":");
    bench_json_string(name);
    printf(",\"mode\":\"%s\",\"reps\":%d", table ? "table" : "alloc", n);
    if (verdict > 0)
        printf(",\"ms_min\":%.3f,\"ms_median\":%.3f,\"rewrites\":%llu", ms[0], ms[n / 2], rw);
    printf(",\"ok\":%s", verdict > 0 ? "true" : verdict < 0 ? "null" : "false");
    if (why && *why) {
        printf(",\"reason\":");
        bench_json_string(why);
    }
    printf("}\n");
    fflush(stdout);
}

/* One mode on its own, reps times: the verdict. */
static int bench_mode(const tg_rec_spec *spec, int table, int reps)
{
    double ms[reps];
    unsigned long long rw = 0;
    char why[600] = "";
    int n = 0, verdict = 1;
    while (n < reps && verdict > 0)
        verdict = run_once(spec, table, &ms[n++], &rw, why, sizeof why);
    report_mode(spec->name, table, ms, n, rw, verdict, why);
    return verdict;
}

/* ---- --pair: the engine against the floor in one process ------------------ */

#define PAIR_TARGET 1.1     /* issue: the engine within 1.1x of the floor */
#define PAIR_BUDGET_MS 2000 /* default CPU time of each side's timed runs */
#define PAIR_MAX_ROUNDS 100

/* One timed run of side `engine` (1: the engine without memo, 0: the
 * floor's table mode), after a full collection outside the clock: each
 * run starts with no garbage of the run before it, in a heap grown by the
 * warm-up to what either side needs, and with the collector's pacing back
 * at its usual divisor (the table's pacing is the process's, and a run
 * that kept its nodes leaves it lowered); both sides' runs clear the
 * stack first (tg_rec_clear_stack), so that the collection frees the
 * normal form of the run before.  Its verdict; *ms its time. */
static int pair_side(const tg_rec_spec *spec, const char *file, int engine, double *ms,
                     unsigned long long *rw, char *why, size_t whysize)
{
    /* below this frame, where either side's runs have their frames: a
     * word of the floor's context (its evaluated subterms) left where the
     * engine's run keeps a buffer it never fills, for one, would
     * otherwise keep the floor's normal form alive through the engine's
     * collections */
    tg_rec_clear_stack();
    GC_gcollect();
    if (!engine)
        return run_once(spec, 1, ms, rw, why, whysize);
    tg_rec_run r;
    tg_rec_run_once(spec, file, 0, &r);
    *ms = r.cpu_ms, *rw = r.rewrites;
    if (r.verdict <= 0)
        snprintf(why, whysize, "the engine: %.560s", r.reason);
    return r.verdict;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return v[n / 2];
}

/* The floor's table mode and the engine (memo off) in alternated rounds:
 * one untimed run of each first, then rounds of both, floor first in even
 * rounds and engine first in odd ones: at least reps rounds, and more (up
 * to PAIR_MAX_ROUNDS) until each side's timed runs add up to budget_ms.
 * Prints the floor's table object (its times from the rounds) and a
 * "rec-floor-pair" object: both medians, the median of the rounds' own
 * ratios engine / floor beside the target, the ratio of the medians and
 * that of the minimums.  The verdict: the worse side's. */
static int bench_pair(const tg_rec_spec *spec, const char *file, int reps, double budget_ms)
{
    int cap = reps > PAIR_MAX_ROUNDS ? reps : PAIR_MAX_ROUNDS, n = 0;
    double *fms = malloc(3 * (size_t)cap * sizeof *fms), *tms = fms + cap, *ratio = tms + cap;
    double ms, fsum = 0, tsum = 0;
    unsigned long long frw = 0, trw = 0;
    char why[600] = "";
    int verdict = fms ? pair_side(spec, file, 0, &ms, &frw, why, sizeof why) : 0;
    if (!fms)
        snprintf(why, sizeof why, "out of memory");
    if (verdict > 0)
        verdict = pair_side(spec, file, 1, &ms, &trw, why, sizeof why);
    while (verdict > 0 && n < cap && (n < reps || fsum < budget_ms || tsum < budget_ms)) {
        for (int k = 0; k < 2 && verdict > 0; k++) {
            int engine = (n + k) % 2;
            verdict = pair_side(spec, file, engine, engine ? &tms[n] : &fms[n],
                                engine ? &trw : &frw, why, sizeof why);
        }
        if (verdict > 0)
            fsum += fms[n], tsum += tms[n], ratio[n] = fms[n] > 0 ? tms[n] / fms[n] : 0, n++;
    }
    report_mode(spec->name, 1, fms ? fms : &ms, n, frw, verdict, why);
    printf("{\"bench\":\"rec-floor-pair\",\"name\":");
    bench_json_string(spec->name);
    printf(",\"rounds\":%d", n);
    if (verdict > 0) {
        /* fms is sorted already (report_mode) */
        double fm = fms[n / 2], tm = median(tms, n), r = median(ratio, n);
        printf(",\"floor_ms_median\":%.3f,\"tgrel_ms_median\":%.3f", fm, tm);
        if (fms[0] > 0)
            printf(",\"ratio\":%.3f,\"target\":%.1f,\"met\":%s"
                   ",\"ratio_of_medians\":%.3f,\"ratio_of_mins\":%.3f",
                   r, PAIR_TARGET, r <= PAIR_TARGET ? "true" : "false", tm / fm, tms[0] / fms[0]);
        printf(",\"floor_rewrites\":%llu,\"tgrel_rewrites\":%llu", frw, trw);
    }
    printf(",\"ok\":%s", verdict > 0 ? "true" : verdict < 0 ? "null" : "false");
    if (*why) {
        printf(",\"reason\":");
        bench_json_string(why);
    }
    printf("}\n");
    fflush(stdout);
    free(fms);
    return verdict;
}

static int bench_file(const char *file, int reps, int pair, double budget_ms)
{
    tg_error err;
    tg_rec_spec spec;
    char msg[600];
    size_t len;
    char *text = tg_slurp_file(file, &len, &err);
    if (!text || tg_rec_convert(text, len, file, &spec, msg, sizeof msg) < 0) {
        if (!text)
            tg_error_format(&err, msg, sizeof msg);
        free(text);
        printf("{\"bench\":\"rec-floor\",\"file\":");
        bench_json_string(file);
        printf(",\"ok\":false,\"reason\":");
        bench_json_string(msg);
        printf("}\n");
        return -1;
    }
    char why_not[600];
    if (applies(text, len, why_not, sizeof why_not)) {
        printf("{\"bench\":\"rec-floor\",\"name\":");
        bench_json_string(spec.name);
        printf(",\"ok\":null,\"reason\":");
        bench_json_string(why_not);
        printf("}\n");
        free(text);
        tg_rec_spec_free(&spec);
        return 0;
    }
    free(text);
    int table = pair ? bench_pair(&spec, file, reps, budget_ms) : bench_mode(&spec, 1, reps);
    int alloc = bench_mode(&spec, 0, reps);
    tg_rec_spec_free(&spec);
    return table == 0 || alloc == 0 ? -1 : 0;
}

int main(int argc, char **argv)
{
    int reps = 1, pair = 0, i = 1, failed = 0;
    double budget_ms = PAIR_BUDGET_MS * bench_scale(1);
    GC_INIT();
    for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
        if (strcmp(argv[i], "--pair") == 0)
            pair = 1;
        else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc && atoi(argv[i + 1]) > 0)
            reps = atoi(argv[++i]);
        else if (strcmp(argv[i], "--budget-ms") == 0 && i + 1 < argc && atof(argv[i + 1]) >= 0)
            budget_ms = atof(argv[++i]);
        else
            break;
    }
    if (i == argc || strncmp(argv[i], "--", 2) == 0) {
        fprintf(stderr, "usage: rec_floor [--pair [--budget-ms MS]] [--reps N] FILE...\n");
        return 2;
    }
    for (; i < argc; i++)
        failed |= bench_file(argv[i], reps, pair, budget_ms) < 0;
    return failed;
}
