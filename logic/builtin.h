/* builtin.h - relations written in C: fact tables (facts.c, tgF_) and
 * the builtins the prelude's term relations rest on (builtin.c, tgN_). */
#ifndef TG_BUILTIN_H
#define TG_BUILTIN_H

#include "search.h"

/* A new, empty fact table (the data of a fact relation). */
void *tgF_new(void);
/* Add a tuple (a list) at the end; -1 when out of memory. */
int tgF_add(void *facts, tg_term *tuple);
/* The tg_relation_fn of fact relations (ud is the table). */
int tgF_fn(tg_ctx *ctx, tg_term *const *args, unsigned n, unsigned long i,
           void **state, tg_term **out, void *ud, tg_error *err);
/* Is ground tuple a fact of the table? */
int tgF_holds(const void *facts, const tg_term *tuple);

/* Define the builtin relations in env; -1 with err filled. */
int tgN_register(tg_env *env, tg_error *err);

#endif
