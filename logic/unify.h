/* unify.h - unification, the occurs check and walk* over states.
 *
 * Everything here runs on explicit stacks, so terms nested a million
 * levels deep are fine.  Lists are unified element by element, the car
 * before the cdr, exactly in the order faster-miniKanren visits pairs, so
 * the bindings (and the disequalities built from them) come out in the
 * same order.
 */
#ifndef TG_UNIFY_H
#define TG_UNIFY_H

#include "logic.h"

/* Unify u and v in st: the extended state (st itself when every binding
 * was made in place), or NULL when they do not unify (or out of memory:
 * env->oom).  When record is set, each binding made is pushed on
 * env->added as a (variable, value) pair, in order. */
tgS_state *tgU_unify(tg_env *env, tgS_state *st, tg_term *u, tg_term *v, int record);

/* Unify the pairs pushed on env->work above base, each four words (l, il,
 * r, ir): a term and index 0, or a list chunk and the index of an element
 * in it (the suffix from there); the topmost pair first.  env->work is
 * back at base on return. */
tgS_state *tgU_unify_pushed(tg_env *env, tgS_state *st, size_t base, int record);

/* Unify the pairs (l . r) of the list `assoc`, in order: faster-miniKanren's
 * (unify (map lhs S+) (map rhs S+) S). */
tgS_state *tgU_unify_assoc(tg_env *env, tgS_state *st, tg_term *assoc, int record);

/* Does variable x occur in v (under S)? */
int tgU_occurs(tg_env *env, tg_term *x, tg_term *v, const tgS_map *S);

/* v with every bound variable replaced by its value, recursively (NULL
 * when out of memory).  When names is not NULL, unbound variables are
 * then renamed through it (see tgU_names).  TGU_NOWALK as S only renames. */
typedef struct tgU_names tgU_names;
#define TGU_NOWALK ((const tgS_map *)1)
tg_term *tgU_walk_star(tg_env *env, tg_term *v, const tgS_map *S, tgU_names *names);

/* A renaming of variables to the reified names _.0, _.1, ... given in
 * order of first appearance. */
tgU_names *tgU_names_new(void);
/* Name every variable of v not yet named, in preorder. */
int tgU_names_add(tg_env *env, tgU_names *nm, tg_term *v);
/* Name variable x (not yet named) `name`, any term; -1 out of memory. */
int tgU_names_put(tgU_names *nm, tg_term *x, tg_term *name);
/* The name given to variable x, or NULL. */
tg_term *tgU_names_get(const tgU_names *nm, const tg_term *x);
/* The variables of v, each once, in preorder. */
size_t tgU_vars(tg_env *env, tg_term *v, tgK_vec *out);

/* The list suffix of chunk p starting at element i, as a term. */
tg_term *tgU_suffix(tg_env *env, tg_term *p, unsigned i);

#endif
