/* search.h - compiled goals and the search machine.
 *
 * Goals are compiled (logic/lang.c) into trees of tgG_goal whose term
 * arguments are templates over a frame: the array of variables of one
 * relation call.  The machine reproduces faster-miniKanren's streams
 * (failure, a state, a state and a suspension, a suspension) and its
 * suspension points (fresh, conde, mplus, bind) one for one, so answers
 * come in the same order; it runs on an explicit continuation stack, so
 * neither deep recursion in the searched program nor long streams touch
 * the C stack.
 */
#ifndef TG_SEARCH_H
#define TG_SEARCH_H

#include "reify.h"

/* A term template: built from a frame at run time. */
typedef struct tgG_expr tgG_expr;
enum { TGG_CONST, TGG_SLOT, TGG_LIST };
struct tgG_expr {
    int op;
    unsigned slot;          /* SLOT */
    unsigned n;             /* LIST: elements */
    tg_term *t;             /* CONST */
    tgG_expr **e;           /* LIST: n elements */
    tgG_expr *tail;         /* LIST: the tail (NULL: ()) */
};

enum {
    TGG_SUCCEED, TGG_FAIL, TGG_UNIFY, TGG_DISEQ, TGG_TYPE, TGG_ABSENTO,
    TGG_CONJ,       /* bind* g[0] g[1] ... */
    TGG_FRESH,      /* suspend; make vars; then g[0] */
    TGG_CONDE,      /* suspend; new scope; mplus* of clauses g[i] */
    TGG_CALL,       /* rel set: that relation; else the relation value a */
    TGG_REIFY,      /* the answer of run: reify slot 0 (type 1: slots 0..n-1 walked, raw) */
    TGG_MASTER      /* a tabled call's producer records an answer */
};

typedef struct tgG_rel tgG_rel;
typedef struct tgG_goal tgG_goal;
struct tgG_goal {
    int op;
    int type;               /* TYPE: TGC_* */
    int copy;               /* FRESH: may run more than once per frame */
    unsigned n;             /* CONJ/CONDE: goals; FRESH: vars; CALL: args */
    tgG_goal **g;
    tgG_expr *a, *b;
    tgG_expr **args;        /* CALL */
    unsigned *slots;        /* FRESH */
    tg_term **names;        /* FRESH: the variables' names */
    unsigned nslots;        /* FRESH with copy: frame size */
    tgG_rel *rel;           /* CALL */
    tg_term *src;           /* CALL: the goal as written (errors say where) */
};

/* A relation written in C (tg_defrel_c). */
typedef int tgG_cfn(tg_ctx *ctx, tg_term *const *args, unsigned nargs, unsigned long i,
                    void **state, tg_term **out, void *ud, tg_error *err);     /* tg_relation_fn */

struct tgG_rel {
    tg_term *name;
    unsigned arity;
    unsigned nslots;        /* frame size: arguments, then fresh variables */
    tgG_goal *body;         /* NULL while only referred to */
    unsigned ncap;          /* a lambda: captured variables, in slots cap[i] */
    unsigned *cap;
    int tabled;             /* answers are memoized per call variant */
    tgG_cfn *cfn;           /* a C relation (fact tables are too): fn and its data */
    void *cud;
};

/* The relation named name (NULL if none); tgG_rel_get makes it if need be. */
tgG_rel *tgG_rel_find(tg_env *env, const tg_term *name);
tgG_rel *tgG_rel_get(tg_env *env, tg_term *name);

/* Called with each answer; return nonzero to stop the run. */
typedef int tgG_emit(void *ud, tg_term *answer);

/* Run goal g (compiled with a frame of nslots, the query variable in
 * slot 0) for at most n answers (n < 0: all).  Returns the number of
 * answers, or -1 with the error reported on env. */
long tgG_run(tg_env *env, tgG_goal *g, unsigned nslots, long n, tgG_emit *emit, void *ud);
/* The same on a frame the caller made (collector memory, its slots
 * filled as g expects; fr NULL counts as out of memory). */
long tgG_run_frame(tg_env *env, tgG_goal *g, tg_term **fr, long n, tgG_emit *emit, void *ud);

#endif
