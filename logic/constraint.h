/* constraint.h - the constraint store: disequality (=/=), type
 * constraints (symbolo, numbero, stringo) and absento, kept per variable
 * and re-checked when the variable gets bound, as faster-miniKanren does.
 */
#ifndef TG_CONSTRAINT_H
#define TG_CONSTRAINT_H

#include "unify.h"

enum { TGC_NONE, TGC_NUM, TGC_STR, TGC_SYM, TGC_NTYPES };

/* A disequality: the n bindings x := v that unifying its two sides would
 * add, in order; it is violated when all of them hold at once. */
typedef struct tgC_dis {
    size_t n;
    tg_term *p[];           /* x0, v0, x1, v1, ... */
} tgC_dis;

/* A list of the store: plain cells, not terms, as the lists only grow at
 * the front and are read in order (a term list would be hash-consed for
 * nothing on every constraint posted). */
typedef struct tgC_link {
    union {
        tg_term *t;             /* A: a term */
        const tgC_dis *d;       /* D: a disequality */
    } u;
    const struct tgC_link *next;
} tgC_link;

/* The constraints on one variable (its representative). */
typedef struct tgC_rec {
    int T;                  /* TGC_NONE or a type */
    const tgC_link *D;      /* disequalities, newest first */
    const tgC_link *A;      /* terms that must not occur, newest first */
} tgC_rec;

const tgC_rec *tgC_lookup(const tgS_state *st, const tg_term *x);

/* Does term t (walked, not a variable) have type T? */
int tgC_has_type(const tg_env *env, const tg_term *t, int T);

/* The goals; each returns the new state or NULL (failure, or env->oom). */
tgS_state *tgC_unify(tg_env *env, tgS_state *st, tg_term *u, tg_term *v);     /* == */
/* == of the pairs pushed on env->work above base (see tgU_unify_pushed). */
tgS_state *tgC_unify_pushed(tg_env *env, tgS_state *st, size_t base);
tgS_state *tgC_diseq(tg_env *env, tgS_state *st, tg_term *u, tg_term *v);     /* =/= */
tgS_state *tgC_type(tg_env *env, tgS_state *st, tg_term *u, int T);
/* Unify the bindings of disequality d in st, in order (see tgU_unify). */
tgS_state *tgC_dis_unify(tg_env *env, tgS_state *st, const tgC_dis *d, int record);
tgS_state *tgC_absento(tg_env *env, tgS_state *st, tg_term *t1, tg_term *t2);

#endif
