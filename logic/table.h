/* table.h - answer tables for tabled relations.
 *
 * A tabled call is keyed by its variant: its arguments walked and with
 * their variables renamed to canonical ones in order of appearance, so
 * that (patho a _.0) called twice finds one table entry.  An entry holds
 * the answers found so far in the same canonical form, each once (hash-
 * consing makes the variant check a pointer comparison).  Tables live
 * for one run of a query.
 */
#ifndef TG_TABLE_H
#define TG_TABLE_H

#include "unify.h"

typedef struct tgA_entry {
    tg_term *key;           /* the canonical call: (relation-name arg ...) */
    tg_term *args;          /* the producer's argument list, in its variables */
    tg_term **ans;          /* canonical answers (argument lists), in order */
    size_t nans, anscap;
    tg_term **set;          /* the answers again, open addressing */
    size_t setcap;
} tgA_entry;

/* t walked in st, its variables renamed canonically (NULL: out of memory). */
tg_term *tgA_canon(tg_env *env, const tgS_state *st, tg_term *t);

/* The entry of canonical call key, made when new (*made set).  NULL when
 * out of memory. */
tgA_entry *tgA_entry_get(tg_env *env, tg_term *key, int *made);

/* Record canonical answer a: 1 when new, 0 when already there, -1 out of
 * memory. */
int tgA_add(tg_env *env, tgA_entry *e, tg_term *a);

/* Canonical term a with fresh variables for its canonical ones. */
tg_term *tgA_instance(tg_env *env, tg_term *a);

/* Forget every table (a new run starts). */
void tgA_reset(tg_env *env);

#endif
