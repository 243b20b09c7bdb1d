/* lang.h - the logic language: compiling S-expression goals (the
 * faster-miniKanren dialect) into search goals, and the top-level forms
 * defrel, run and run*. */
#ifndef TG_LANG_H
#define TG_LANG_H

#include "search.h"

/* The text of logic/lib/ (generated: logic/prelude.c). */
extern const char tgL_prelude[];

/* A call of relation rel with n arguments given from C, compiled once
 * (rel is looked at when the call runs, so redefining it is seen); the
 * answer also gives the values of `extra` more terms. */
typedef struct tgL_call tgL_call;
tgL_call *tgL_call_new(tg_env *env, tgG_rel *rel, unsigned n, unsigned extra);
/* Its first answer on args[0..n) (args[i] NULL: a fresh variable), and
 * args[n..n+extra) the extra terms (variables in the arguments): 1 with
 * out[i] the value of args[i] in that answer (bound variables replaced,
 * recursively), 0 when there is none, -1 with err filled. */
int tgL_call_first(tgL_call *c, tg_term *const *args, tg_term **out, tg_error *err);
/* t with its variables named _.0, _.1, ... in order of appearance, as
 * answers print (for messages); NULL when out of memory. */
tg_term *tgL_name_vars(tg_env *env, tg_term *t);

#endif
