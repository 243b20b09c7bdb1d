/* reify.h - turning a query variable and a final state into an answer
 * term, exactly as faster-miniKanren reifies and prints it. */
#ifndef TG_REIFY_H
#define TG_REIFY_H

#include "constraint.h"

/* The reified answer for x in st; NULL when out of memory. */
tg_term *tgY_reify(tg_env *env, tgS_state *st, tg_term *x);

/* faster-miniKanren's lex order on reified terms: numbers < strings <
 * symbols < #f < #t < () < pairs; <0, 0, >0. */
int tgY_lex_compare(tg_env *env, tg_term *x, tg_term *y);

#endif
