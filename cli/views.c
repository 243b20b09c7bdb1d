/* views.c - views of terms for the REPL (program-only, prefix tgM_):
 * the tree view with shared subterms named, Graphviz graphs of a term, of
 * the firings a result depends on and of a whole rewrite history
 * (snapshots of the term), running Graphviz, and the walks they share (a
 * pointer set, a term stack).  Nothing recurses: terms may be deep. */
#include "config.h"

#include <errno.h>
#include <gc/gc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "views.h"

enum { TREE_DEPTH = 48, TREE_FLAT = 60 };

typedef struct pset {
    const void **k;
    size_t *v;
    size_t n, cap;
} pset;

static size_t ps_home(const void *p, size_t cap)
{
    uint64_t h = (uint64_t)(uintptr_t)p * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 32) & (cap - 1);
}

/* The slot of p (found or empty); grows first when needed; NULL on OOM. */
static size_t *ps_slot(pset *s, const void *p, int *found)
{
    if (2 * (s->n + 1) > s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 64;
        const void **k = calloc(cap, sizeof *k);
        size_t *v = calloc(cap, sizeof *v);
        if (!k || !v) {
            free(k), free(v);
            return NULL;
        }
        for (size_t i = 0; i < s->cap; i++)
            if (s->k[i]) {
                size_t j = ps_home(s->k[i], cap);
                while (k[j])
                    j = (j + 1) & (cap - 1);
                k[j] = s->k[i], v[j] = s->v[i];
            }
        free(s->k), free(s->v);
        s->k = k, s->v = v, s->cap = cap;
    }
    size_t i = ps_home(p, s->cap);
    while (s->k[i] && s->k[i] != p)
        i = (i + 1) & (s->cap - 1);
    *found = s->k[i] != NULL;
    if (!*found)
        s->k[i] = p, s->v[i] = 0, s->n++;
    return &s->v[i];
}

static void ps_free(pset *s)
{
    free(s->k), free(s->v);
}

/* A growable array of terms (malloc'd: the terms are held elsewhere). */
typedef struct tvec {
    tg_term **v;
    size_t n, cap;
} tvec;

static int tv_push(tvec *a, tg_term *t)
{
    if (a->n == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 64;
        tg_term **v = realloc(a->v, cap * sizeof *v);
        if (!v)
            return -1;
        a->v = v, a->cap = cap;
    }
    a->v[a->n++] = t;
    return 0;
}

/* Push the children of x (its elements, then a dotted tail) in reverse
 * order, so that they pop in order. */
static int push_children(tvec *a, tg_term *x, size_t from)
{
    size_t base = a->n;
    tg_iter it;
    tg_iter_init(&it, x);
    size_t i = 0;
    for (tg_term *e; (e = tg_iter_next(&it)); i++)
        if (i >= from && tv_push(a, e) < 0)
            return -1;
    if (tg_tail(x) != tg_nil() && tv_push(a, tg_tail(x)) < 0)
        return -1;
    for (size_t l = base, r = a->n; l + 1 < r; l++, r--) {
        tg_term *t = a->v[l];
        a->v[l] = a->v[r - 1], a->v[r - 1] = t;
    }
    return 0;
}

/* Count how often each compound subterm of t is met; subterms met again
 * are not entered again (an explicit stack: terms may be deep). */
static int count_uses(pset *s, tg_term *t)
{
    tvec st = {0};
    int rc = tv_push(&st, t);
    while (rc == 0 && st.n) {
        tg_term *x = st.v[--st.n];
        int found;
        size_t *c = tg_kind_of(x) == TG_PAIR ? ps_slot(s, x, &found) : NULL;
        if (tg_kind_of(x) != TG_PAIR)
            continue;
        if (!c)
            rc = -1;
        else if ((*c)++ == 0)
            rc = push_children(&st, x, 0);
    }
    free(st.v);
    return rc;
}

static int all_atoms(tg_term *x)
{
    if (tg_tail(x) != tg_nil())
        return 0;
    tg_iter it;
    tg_iter_init(&it, x);
    for (tg_term *e; (e = tg_iter_next(&it));)
        if (tg_kind_of(e) == TG_PAIR)
            return 0;
    return 1;
}

/* Print t (atoms and flat lists) after indent and prefix; 0 or -1. */
static int tree_line(FILE *out, size_t depth, const char *prefix, const tg_term *t)
{
    size_t n;
    char *s = t ? tg_print(t, &n) : NULL;
    if (t && !s)
        return -1;
    fprintf(out, "%*s%s%s\n", (int)(2 * depth), "", prefix, s ? s : "...");
    free(s);
    return 0;
}

/* The tree view of t: one node a line, children indented under their
 * head; a subterm met more than once is named *N where it is first shown
 * and written *N after that.  Lists of atoms that fit are shown flat.
 * Deeper than TREE_DEPTH levels shows "...". */
int tgM_print_tree(FILE *out, tg_term *t)
{
    pset uses = {0}, names = {0};
    tvec st = {0};
    size_t *depth = NULL, capd = 0;
    size_t named = 0;
    int rc = count_uses(&uses, t);
    if (rc == 0)
        rc = tv_push(&st, t);
    while (rc == 0 && st.n) {
        if (capd < st.cap) {
            size_t *d = realloc(depth, st.cap * sizeof *d);
            if (!d) {
                rc = -1;
                break;
            }
            if (!depth)
                d[0] = 0;
            depth = d, capd = st.cap;
        }
        tg_term *x = st.v[--st.n];
        size_t d = depth[st.n];
        char prefix[32] = "";
        if (!x || tg_kind_of(x) != TG_PAIR) {
            rc = tree_line(out, d, "", x);
            continue;
        }
        int found;
        size_t *u = ps_slot(&uses, x, &found);
        size_t *nm = u && *u > 1 ? ps_slot(&names, x, &found) : NULL;
        if (u && *u > 1 && !nm) {
            rc = -1;
            break;
        }
        if (nm && found) {
            fprintf(out, "%*s*%zu\n", (int)(2 * d), "", *nm);
            continue;
        }
        if (nm)
            snprintf(prefix, sizeof prefix, "*%zu = ", *nm = ++named);
        tg_term *head = tg_car(x);
        if (all_atoms(x) && tg_length(x) <= TREE_FLAT / 4) {
            rc = tree_line(out, d, prefix, x);
            continue;
        }
        int atom_head = tg_kind_of(head) != TG_PAIR;
        if (atom_head) {
            rc = tree_line(out, d, prefix, head);
        } else {
            fprintf(out, "%*s%s(...)\n", (int)(2 * d), "", prefix);
        }
        size_t base = st.n;
        if (rc == 0)
            rc = d >= TREE_DEPTH ? tv_push(&st, NULL) : push_children(&st, x, atom_head);
        if (rc == 0 && st.cap > capd) {
            size_t *dd = realloc(depth, st.cap * sizeof *dd);
            if (!dd)
                rc = -1;
            else
                depth = dd, capd = st.cap;
        }
        for (size_t i = base; rc == 0 && i < st.n; i++)
            depth[i] = d + 1;
    }
    ps_free(&uses), ps_free(&names);
    free(st.v), free(depth);
    return rc;
}

static int dot_nodes(FILE *out, pset *ids, tvec *todo);

/* Text as a dot label: quotes and backslashes escaped, cut after max
 * bytes. */
static void dot_text_max(FILE *out, const char *s, size_t n, size_t max)
{
    fputc('"', out);
    for (size_t i = 0; i < n && i < max; i++) {
        if (s[i] == '"' || s[i] == '\\')
            fputc('\\', out);
        fputc(s[i] == '\n' ? ' ' : s[i], out);
    }
    fputs(n > max ? "...\"" : "\"", out);
}

/* A term's text as a dot label: long texts cut after 40 bytes. */
static void dot_text(FILE *out, const char *s, size_t n)
{
    dot_text_max(out, s, n, 40);
}

/* t's printed text as a dot label (quotes and backslashes escaped, long
 * texts cut). */
static int dot_label(FILE *out, const tg_term *t)
{
    size_t n;
    char *s = tg_print(t, &n);
    if (!s)
        return -1;
    dot_text(out, s, n);
    free(s);
    return 0;
}

/* The id of x (dot node n<id>), made on first sight; a new node is
 * pushed on todo to be written. */
static long dot_id(pset *ids, tvec *todo, tg_term *x)
{
    int found;
    size_t *v = ps_slot(ids, x, &found);
    if (!v)
        return -1;
    if (!found) {
        *v = ids->n;
        if (tv_push(todo, x) < 0)
            return -1;
    }
    return (long)*v;
}

/* t as a Graphviz digraph: one node per distinct subterm (hash-consing
 * makes shared subterms one node), edges to the arguments in order. */
int tgM_write_dot(FILE *out, tg_term *t)
{
    pset ids = {0};
    tvec todo = {0};
    int rc = dot_id(&ids, &todo, t) < 0 ? -1 : 0;
    fputs("digraph term {\n  ordering=out;\n  node [shape=box, fontname=\"monospace\"];\n", out);
    if (rc == 0)
        rc = dot_nodes(out, &ids, &todo);
    fputs("}\n", out);
    ps_free(&ids);
    free(todo.v);
    return rc;
}

/* Run Graphviz: dot -T<format> -o out in; 0, or -1 when it failed (127:
 * not installed). */
int tgM_run_graphviz(const char *format, const char *in, const char *out)
{
    char T[32];
    snprintf(T, sizeof T, "-T%s", format);
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        execlp("dot", "dot", T, "-o", out, in, (char *)NULL);
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The firings of a why term (tg_rules_why: (why T (firings L N) (K RULE
 * (pass P) POS BEFORE AFTER) ...)) as a graph: one node per distinct term
 * met (hash-consing makes a firing's after and the next one's before one
 * node), an edge from before to after per firing, named by the firing. */
int tgM_write_firings(FILE *out, tg_term *why)
{
    pset ids = {0};
    tvec todo = {0};
    int rc = 0;
    fputs("digraph history {\n  rankdir=LR;\n  node [shape=box, fontname=\"monospace\"];\n", out);
    tg_iter it;
    tg_iter_init(&it, why);
    for (tg_term *f; rc == 0 && (f = tg_iter_next(&it));) {
        if (tg_kind_of(f) != TG_PAIR || tg_length(f) != 6 || tg_kind_of(tg_car(f)) != TG_INT)
            continue;   /* the head, the term, the (firings ...) count */
        long ends[2];
        for (int k = 0; k < 2 && rc == 0; k++) {
            tg_term *x = tg_nth(f, 4 + (size_t)k);
            size_t before = ids.n;
            long id = dot_id(&ids, &todo, x);
            if (id < 0) {
                rc = -1;
                break;
            }
            ends[k] = id;
            if (ids.n != before) {      /* a new term: its node */
                fprintf(out, "  n%ld [label=", id);
                rc = dot_label(out, x);
                fputs("];\n", out);
            }
        }
        if (rc)
            break;
        int64_t k;
        tg_int_get(tg_car(f), &k);
        char *rule = tg_print(tg_nth(f, 1), NULL), *pos = tg_print(tg_nth(f, 3), NULL);
        if (!rule || !pos)
            rc = -1;
        else {
            char text[200];
            int n = snprintf(text, sizeof text, "#%lld %s %s", (long long)k, rule, pos);
            fprintf(out, "  n%ld -> n%ld [label=", ends[0], ends[1]);
            dot_text(out, text, n < 0 ? 0 : (size_t)n < sizeof text ? (size_t)n : sizeof text - 1);
            fputs("];\n", out);
        }
        free(rule), free(pos);
    }
    fputs("}\n", out);
    ps_free(&ids);
    free(todo.v);
    return rc;
}

/* The distinct (input NAME DTYPE (SIZE ...)) subterms of t, in the
 * order met; their number, or -1 (too many, or out of memory). */
int tgM_find_inputs(tg_ctx *ctx, tg_term *t, tg_term **in, int max)
{
    tg_term *input = tg_symbol_cstr(ctx, "input");
    tvec st = {0};
    pset seen = {0};
    int n = 0, rc = tv_push(&st, t);
    while (rc == 0 && st.n) {
        tg_term *x = st.v[--st.n];
        int found;
        if (tg_kind_of(x) != TG_PAIR)
            continue;
        size_t *c = ps_slot(&seen, x, &found);
        if (!c) {
            rc = -1;
        } else if (found) {
            continue;
        } else if (tg_car(x) == input) {
            if (n == max)
                rc = -1;
            else
                in[n++] = x;
        } else {
            rc = push_children(&st, x, 1);
        }
    }
    free(st.v);
    ps_free(&seen);
    return rc < 0 ? -1 : n;
}

/* A growable array of paths (element indices from the root). */
typedef struct path {
    size_t *v;
    size_t n, cap;
} path;

static int path_set(path *p, size_t depth, size_t index)
{
    if (depth >= p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 32;
        while (cap <= depth)
            cap *= 2;
        size_t *v = realloc(p->v, cap * sizeof *v);
        if (!v)
            return -1;
        p->v = v, p->cap = cap;
    }
    p->v[depth] = index;
    p->n = depth + 1;
    return 0;
}

/* The path of the first occurrence of b in s (depth first, arguments in
 * order) into p: 1 found, 0 not, -1 out of memory.  Explicit stacks: terms
 * may be deep; a shared subterm is searched once. */
static int find_path(tg_term *s, tg_term *b, path *p)
{
    tvec st = {0};
    uint64_t *meta = NULL;      /* depth << 32 | index, of each stacked term */
    size_t mcap = 0;
    pset seen = {0};
    int rc = tv_push(&st, s);
    if (rc == 0 && !(meta = malloc((mcap = 64) * sizeof *meta)))
        rc = -1;
    if (rc == 0)
        meta[0] = 0;
    while (rc == 0 && st.n) {
        tg_term *x = st.v[--st.n];
        uint64_t m = meta[st.n];
        size_t depth = (size_t)(m >> 32);
        if (depth && path_set(p, depth - 1, (size_t)(m & 0xffffffffu)) < 0) {
            rc = -1;
            break;
        }
        p->n = depth;
        if (x == b) {
            rc = 1;
            break;
        }
        int found;
        if (tg_kind_of(x) != TG_PAIR || !ps_slot(&seen, x, &found) || found) {
            if (tg_kind_of(x) == TG_PAIR && !ps_slot(&seen, x, &found))
                rc = -1;
            continue;
        }
        size_t base = st.n;
        if (push_children(&st, x, 0) < 0) {
            rc = -1;
            break;
        }
        if (st.cap > mcap) {
            uint64_t *mm = realloc(meta, st.cap * sizeof *mm);
            if (!mm) {
                rc = -1;
                break;
            }
            meta = mm, mcap = st.cap;
        }
        for (size_t i = base; i < st.n; i++)     /* pushed in reverse order */
            meta[i] = (uint64_t)(depth + 1) << 32 | (uint64_t)(st.n - 1 - i);
    }
    free(st.v), free(meta);
    ps_free(&seen);
    return rc;
}

/* s with every occurrence of b replaced by a (a DAG: hash-consed equal
 * subterms are one node, which one rewrite replaces everywhere).  The
 * new nodes are kept alive on *keep, a list on the caller's stack (the
 * collector does not scan the malloc'd memo).  NULL when out of memory. */
static tg_term *replace_all(tg_ctx *ctx, tg_term *s, tg_term *b, tg_term *a, tg_term **keep)
{
    pset memo = {0};
    tvec st = {0}, kids = {0};
    int rc = tv_push(&st, s), found;
    tg_term *result = NULL;
    while (rc == 0 && st.n) {
        tg_term *x = st.v[st.n - 1];
        size_t *m = ps_slot(&memo, x, &found);
        if (!m) {
            rc = -1;
            break;
        }
        if (found && *m) {          /* done already */
            st.n--;
            continue;
        }
        if (x == b || tg_kind_of(x) != TG_PAIR) {
            *m = (size_t)(uintptr_t)(x == b ? a : x);
            st.n--;
            continue;
        }
        /* children first: push the undone ones, come back when they are */
        kids.n = 0;
        if (push_children(&kids, x, 0) < 0) {
            rc = -1;
            break;
        }
        size_t before = st.n;
        for (size_t i = 0; i < kids.n && rc == 0; i++) {
            size_t *km = ps_slot(&memo, kids.v[i], &found);
            if (!km)
                rc = -1;
            else if (!*km)
                rc = tv_push(&st, kids.v[i]);
        }
        if (rc || st.n != before)
            continue;
        /* every child is done: x's copy (kids are in reverse order) */
        size_t nk = kids.n, ne = tg_length(x);
        for (size_t i = 0; i < nk / 2; i++) {
            tg_term *t = kids.v[i];
            kids.v[i] = kids.v[nk - 1 - i], kids.v[nk - 1 - i] = t;
        }
        for (size_t i = 0; i < nk && rc == 0; i++) {
            size_t *km = ps_slot(&memo, kids.v[i], &found);
            if (km)
                kids.v[i] = (tg_term *)(uintptr_t)*km;
            else
                rc = -1;
        }
        tg_term *y = rc ? NULL : tg_list(ctx, ne, kids.v, nk > ne ? kids.v[ne] : NULL);
        tg_term *k2 = y ? tg_cons(ctx, y, *keep) : NULL;
        if (!k2) {
            rc = -1;
            break;
        }
        *keep = k2;
        if (!(m = ps_slot(&memo, x, &found))) {
            rc = -1;
            break;
        }
        *m = (size_t)(uintptr_t)y;
        st.n--;
    }
    if (rc == 0) {
        size_t *m = ps_slot(&memo, s, &found);
        result = m ? (tg_term *)(uintptr_t)*m : NULL;
    }
    ps_free(&memo);
    free(st.v), free(kids.v);
    return result;
}

/* The nodes of the terms pushed on todo and not written yet, each with
 * edges to its arguments (written_dot's node format). */
static int dot_nodes(FILE *out, pset *ids, tvec *todo)
{
    int rc = 0;
    while (rc == 0 && todo->n) {
        tg_term *x = todo->v[--todo->n];
        long me = dot_id(ids, todo, x);
        int atom_head = tg_kind_of(x) == TG_PAIR && tg_kind_of(tg_car(x)) != TG_PAIR;
        fprintf(out, "  n%ld [label=", me);
        if (dot_label(out, tg_kind_of(x) != TG_PAIR ? x : atom_head ? tg_car(x) : tg_nil()) < 0)
            return -1;
        fputs(tg_kind_of(x) == TG_PAIR ? "];\n" : ", shape=plaintext];\n", out);
        if (tg_kind_of(x) != TG_PAIR)
            continue;
        tvec kids = {0};
        rc = push_children(&kids, x, atom_head);
        size_t nk = kids.n;
        for (size_t i = 0; rc == 0 && i < nk; i++) {
            long c = dot_id(ids, todo, kids.v[nk - 1 - i]);
            if (c < 0)
                rc = -1;
            else if (nk > 1)
                fprintf(out, "  n%ld -> n%ld [label=\"%zu\"];\n", me, c, i + 1);
            else
                fprintf(out, "  n%ld -> n%ld;\n", me, c);
        }
        free(kids.v);
    }
    return rc;
}

/* The history graph being written: the node ids of the terms met so far
 * (by address: every snapshot stays alive until the end, on keep) and
 * the number of the last snapshot. */
typedef struct hgraph {
    FILE *out;
    pset ids;
    tvec todo;
    size_t state;
} hgraph;

/* Snapshot node s<state> (label st) pointing at its whole term t, whose
 * nodes are written if new. */
static int hg_state(hgraph *h, const char *st, tg_term *t)
{
    long id = dot_id(&h->ids, &h->todo, t);
    if (id < 0)
        return -1;
    fprintf(h->out, "  s%zu [label=\"%s\", shape=ellipse, style=filled, fillcolor=lightyellow];\n",
            h->state, st);
    fprintf(h->out, "  s%zu -> n%ld [style=dashed, arrowhead=none];\n", h->state, id);
    return dot_nodes(h->out, &h->ids, &h->todo);
}

/* The next snapshot, t, labelled st, and the edge to it from the one
 * before, labelled label. */
static int hg_step(hgraph *h, const char *st, tg_term *t, const char *label)
{
    h->state++;
    if (hg_state(h, st, t) < 0)
        return -1;
    fprintf(h->out, "  s%zu -> s%zu [label=", h->state - 1, h->state);
    dot_text_max(h->out, label, strlen(label), 400);
    fputs(", color=blue, fontcolor=blue];\n", h->out);
    return 0;
}

/* The snapshot t after pass P, its edge naming the pass's n firings and
 * their rules. */
static int hg_pass(hgraph *h, int64_t pass, size_t n, const char *rules, tg_term *t)
{
    char label[400], st[32];
    snprintf(label, sizeof label, "pass %lld: %zu firing%s:%s", (long long)pass, n, n == 1 ? "" : "s",
             rules);
    snprintf(st, sizeof st, "pass %lld", (long long)pass);
    return hg_step(h, st, t, label);
}

/* Apply firing f ("RULE" BEFORE AFTER) to the snapshot *s: every
 * occurrence of BEFORE replaced, the path of the first in p, the new
 * snapshot kept alive on *keep.  1, 0 when BEFORE is not in *s (a firing
 * inside a right side being built), -1 out of memory. */
static int apply_firing(tg_ctx *ctx, tg_term **s, tg_term *f, path *p, tg_term **keep)
{
    int at = find_path(*s, tg_nth(f, 1), p);
    if (at <= 0)
        return at;
    tg_term *next = replace_all(ctx, *s, tg_nth(f, 1), tg_nth(f, 2), keep);
    tg_term *k = next ? tg_cons(ctx, next, *keep) : NULL;
    if (!k)
        return -1;
    *s = next, *keep = k;
    return 1;
}

/* "(at I ...)" for the path p. */
static void path_text(char *buf, size_t size, const path *p)
{
    size_t used = (size_t)snprintf(buf, size, "(at");
    for (size_t i = 0; i < p->n && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, " %zu", p->v[i]);
    if (used < size)
        snprintf(buf + used, size - used, ")");
}

/* The pass of each firing of the history, from the why term's firings
 * (a subsequence of the traced ones, with their passes); a firing the
 * result does not depend on is counted in the pass before it. */
static int64_t next_pass(tg_iter *why, tg_term **pending, tg_term *f, int64_t pass)
{
    if (!*pending)
        *pending = tg_iter_next(why);
    tg_term *e = *pending;
    if (e && tg_nth(e, 4) == tg_nth(f, 1) && tg_nth(e, 5) == tg_nth(f, 2)) {
        tg_int_get(tg_nth(tg_nth(e, 2), 1), &pass);
        *pending = NULL;
    }
    return pass;
}

/* The whole history of the last :step as a graph: the term it started
 * from and the whole term after each firing (per_pass: after each pass),
 * every distinct subterm one node however many snapshots hold it, and
 * an edge from each snapshot to the next labelled with the firing (rule
 * and position) or the pass (its firings and their rules).  Firings
 * inside a right side being built (their before is in no snapshot) are
 * counted in the next edge. */
int tgM_write_history(FILE *out, const tgM_history *H, int per_pass)
{
    hgraph h = {out, {0}, {0}, 0};
    path p = {0};
    tg_term *keep = tg_nil(), *s = H->start, *pending = NULL;
    tg_iter fi, wi;
    tg_iter_init(&fi, H->firings);
    tg_iter_init(&wi, H->why);
    for (int i = 0; i < 3; i++)
        tg_iter_next(&wi);
    fputs("digraph history {\n  ordering=out;\n  node [shape=box, fontname=\"monospace\"];\n", out);
    int rc = hg_state(&h, "start", s);
    size_t k = 0, inner = 0, in_pass = 0;
    int64_t pass = 1, cur = 1;
    char rules[200] = "";
    for (tg_term *f; rc == 0 && (f = tg_iter_next(&fi));) {
        k++;
        pass = next_pass(&wi, &pending, f, pass);
        if (per_pass && pass != cur && in_pass) {
            rc = hg_pass(&h, cur, in_pass, rules, s);
            in_pass = 0, rules[0] = '\0';
        }
        cur = pass;
        int applied = rc ? -1 : apply_firing(H->ctx, &s, f, &p, &keep);
        if (applied <= 0) {
            inner += applied == 0;
            rc = applied < 0 ? -1 : 0;
            continue;
        }
        in_pass++;
        size_t rl;
        const char *rule = tg_string_bytes(tg_car(f), &rl);
        if (per_pass) {
            size_t used = strlen(rules);
            if (used + rl + 2 < sizeof rules && !strstr(rules, rule))
                snprintf(rules + used, sizeof rules - used, " %.*s", (int)rl, rule);
            continue;
        }
        char label[400], pos[120], st[32];
        path_text(pos, sizeof pos, &p);
        int n = snprintf(label, sizeof label, "#%zu %.*s %s", k, (int)(rl > 200 ? 200 : rl), rule, pos);
        if (inner)
            snprintf(label + n, sizeof label - (size_t)n, " (+%zu inside)", inner);
        inner = 0;
        snprintf(st, sizeof st, "#%zu", k);
        rc = hg_step(&h, st, s, label);
    }
    if (rc == 0 && per_pass && in_pass)
        rc = hg_pass(&h, cur, in_pass, rules, s);
    fputs("  { rank=same;", out);
    for (size_t i = 0; i <= h.state; i++)
        fprintf(out, " s%zu;", i);
    fputs(" }\n", out);
    if (H->dropped)
        fprintf(out, "  // %zu later firings were not kept\n", H->dropped);
    fputs("}\n", out);
    ps_free(&h.ids);
    free(h.todo.v), free(p.v);
    return rc;
}

/* ---- names for subterms (:let) ------------------------------------------- */

/* A map from terms to terms in collector memory: what it builds is held
 * only here until the walk ends. */
typedef struct tmap {
    tg_term **k, **v;
    size_t cap, n;
} tmap;

static tg_term **tm_slot(tmap *m, tg_term *key, int *found)
{
    if (2 * (m->n + 1) > m->cap) {
        size_t ncap = m->cap ? 2 * m->cap : 256;
        tg_term **nk = GC_MALLOC(ncap * sizeof *nk), **nv = GC_MALLOC(ncap * sizeof *nv);
        if (!nk || !nv)
            return NULL;
        for (size_t i = 0; i < m->cap; i++)
            if (m->k[i]) {
                size_t j = ps_home(m->k[i], ncap);
                while (nk[j])
                    j = (j + 1) & (ncap - 1);
                nk[j] = m->k[i], nv[j] = m->v[i];
            }
        m->k = nk, m->v = nv, m->cap = ncap;
    }
    size_t j = ps_home(key, m->cap);
    while (m->k[j] && m->k[j] != key)
        j = (j + 1) & (m->cap - 1);
    *found = m->k[j] != NULL;
    if (!*found)
        m->k[j] = key, m->n++;
    return &m->v[j];
}

tg_term *tgM_subst(tg_ctx *ctx, tg_term *t, tg_term *const *names, tg_term *const *values, int n)
{
    tmap m = {0};
    tvec st = {0};
    tg_term *result = NULL, **tmp = NULL;
    size_t tmpcap = 0;
    int rc = tv_push(&st, t);
    while (rc == 0 && st.n) {
        tg_term *x = st.v[st.n - 1];
        int found;
        tg_term **r = tm_slot(&m, x, &found);
        if (!r) {
            rc = -1;
            break;
        }
        if (found && *r) {
            st.n--;
            continue;
        }
        if (tg_kind_of(x) != TG_PAIR) {
            *r = x;
            for (int k = 0; k < n; k++)
                if (names[k] == x)
                    *r = values[k];
            st.n--;
            continue;
        }
        /* a list: its elements (and tail) first, then it */
        size_t len = tg_length(x), pending = st.n;
        if (len + 1 > tmpcap) {
            free(tmp);
            tmpcap = 2 * (len + 1);
            if (!(tmp = malloc(tmpcap * sizeof *tmp))) {
                rc = -1;
                break;
            }
        }
        tg_elements(x, tmp, len);
        tmp[len] = tg_tail(x);
        for (size_t i = 0; i <= len && rc == 0; i++) {
            int f2;
            tg_term **r2 = tm_slot(&m, tmp[i], &f2);
            if (!r2)
                rc = -1;
            else if (!f2 || !*r2)
                rc = tv_push(&st, tmp[i]);
        }
        if (rc < 0 || st.n > pending)
            continue;
        /* every part done: the slots may have moved as the map grew */
        tg_term **parts = GC_MALLOC((len + 1) * sizeof *parts);
        if (!parts) {
            rc = -1;
            break;
        }
        for (size_t i = 0; i <= len; i++)
            parts[i] = *tm_slot(&m, tmp[i], &found);
        tg_term *y = tg_list(ctx, len, parts, parts[len]);
        if (!y) {
            rc = -1;
            break;
        }
        *tm_slot(&m, x, &found) = y;
        st.n--;
    }
    if (rc == 0) {
        int found;
        tg_term **r = tm_slot(&m, t, &found);
        result = r ? *r : NULL;
    }
    free(st.v);
    free(tmp);
    return result;
}
