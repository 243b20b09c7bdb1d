/* views.h - views of terms for the REPL (program-only, prefix tgM_): the
 * tree view, Graphviz graphs of a term, of the firings behind a result
 * and of a whole rewrite history.  Each writer returns 0, or -1 when out
 * of memory. */
#ifndef TG_VIEWS_H
#define TG_VIEWS_H

#include <stdio.h>

#include "tgrel.h"

/* t as a tree, one node a line, children indented; a subterm met more
 * than once is named *N where first shown. */
int tgM_print_tree(FILE *out, tg_term *t);

/* t as a Graphviz digraph: one node per distinct subterm. */
int tgM_write_dot(FILE *out, tg_term *t);

/* The firings of a why term (tg_rules_why) as a graph: an edge from each
 * firing's before to its after, named by the firing. */
int tgM_write_firings(FILE *out, tg_term *why);

/* The last stepped rewrite: the term it started from, the firings traced
 * (("RULE" BEFORE AFTER) ...), the why term of its result, and how many
 * firings were not kept. */
typedef struct tgM_history {
    tg_ctx *ctx;
    tg_term *start, *firings, *why;
    size_t dropped;
} tgM_history;

/* The whole history as a graph: the whole term after each firing (or
 * each pass, per_pass), every distinct subterm one node, an edge from
 * each snapshot to the next naming the firing or the pass. */
int tgM_write_history(FILE *out, const tgM_history *h, int per_pass);

/* Run Graphviz: dot -T<format> -o out in; 0, or its exit status (127:
 * not installed), or -1. */
int tgM_run_graphviz(const char *format, const char *in, const char *out);

/* The distinct (input NAME DTYPE (SIZE ...)) subterms of t, in the order
 * met, into in; their number, or -1 (more than max, or out of memory). */
int tgM_find_inputs(tg_ctx *ctx, tg_term *t, tg_term **in, int max);

/* t with every occurrence of the symbol names[k] replaced by values[k]
 * (shared subterms rebuilt once, an explicit stack: terms may be deep);
 * NULL when out of memory. */
tg_term *tgM_subst(tg_ctx *ctx, tg_term *t, tg_term *const *names, tg_term *const *values, int n);

#endif
