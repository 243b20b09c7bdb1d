/* subst.h - persistent integer maps, search states and `walk`.
 *
 * A state is what the search threads through goals: the substitution (a
 * persistent map from variable id to value), the scope at this point of
 * the search, and the constraint store (a persistent map from variable id
 * to constraint record).  States are immutable; many search branches share
 * them.  A variable made since the last branching point (its scope equals
 * the state's) is bound in place instead, as faster-miniKanren does: no
 * other branch can have seen it.
 */
#ifndef TG_SUBST_H
#define TG_SUBST_H

#include "term.h"

typedef struct tgS_map tgS_map;     /* NULL is the empty map */

/* The value stored for key, or NULL. */
void *tgS_map_get(const tgS_map *m, uint64_t key);
/* A map like m with key set to val (val not NULL); NULL when out of
 * memory. */
tgS_map *tgS_map_set(tg_ctx *ctx, const tgS_map *m, uint64_t key, void *val);

/* Stream cells start with a tag, so a state can stand in a stream. */
enum { TGS_STATE = 1 };

typedef struct tgS_state {
    uint32_t tag;           /* TGS_STATE */
    uint32_t pad;
    uint64_t scope;         /* 0: bind nothing in place */
    tgS_map *S;             /* substitution */
    tgS_map *C;             /* constraint store */
} tgS_state;

/* A new state (NULL when out of memory). */
tgS_state *tgS_state_new(tg_ctx *ctx, uint64_t scope, tgS_map *S, tgS_map *C);

/* The `val` of a variable that some substitution map binds (see unify.c):
 * only such variables need a lookup, so walking one that is unbound
 * everywhere costs no memory traffic beyond the variable. */
extern char tgS_mapped_mark;
#define TGS_MAPPED ((tg_term *)&tgS_mapped_mark)

/* The value of u in st: follows variable bindings to a non-variable or an
 * unbound variable. */
static inline tg_term *tgS_walk(tg_term *u, const tgS_map *S)
{
    while (tgT_islvar(u)) {
        tgT_lvar *v = (tgT_lvar *)u;
        tg_term *val = v->val;
        if (val == TGS_MAPPED)
            val = tgS_map_get(S, v->id);
        if (!val)
            return u;
        u = val;
    }
    return u;
}

static inline uint64_t tgS_var_id(const tg_term *v) { return ((const tgT_lvar *)v)->id; }

#endif
