/* logic.h - the logic environment shared by the logic-core modules: the
 * relation table, the variable-scope counter, scratch stacks reused by
 * unify and the search, and the error of the running query.
 *
 * Scratch arrays hold term pointers that may be the only references to
 * new terms, so they come from the collector (GC_MALLOC) and hang off
 * the environment, which is an uncollectable root.
 */
#ifndef TG_LOGIC_H
#define TG_LOGIC_H

#include <signal.h>

#include "subst.h"
#include "error.h"

/* A growable array of words in collector memory. */
typedef struct tgK_vec {
    uintptr_t *v;
    size_t n, cap;
} tgK_vec;

/* Make room for k more words; -1 when out of memory. */
int tgK_vec_reserve(tgK_vec *s, size_t k);
static inline int tgK_push2(tgK_vec *s, uintptr_t a, uintptr_t b)
{
    if (s->n + 2 > s->cap && tgK_vec_reserve(s, 2) < 0)
        return -1;
    s->v[s->n++] = a;
    s->v[s->n++] = b;
    return 0;
}

typedef struct tgG_rel tgG_rel;

struct tg_env {
    tg_ctx *ctx;
    uint64_t next_scope;    /* scopes are numbers; 0 is the "nonlocal" scope */
    tgK_vec work;           /* unify / occurs / walk* stacks */
    tgK_vec added;          /* (var, value) pairs bound by unify, stacked */
    tgK_vec kont;           /* the search machine's continuation stack */
    tgG_rel **rels;         /* relation table, open addressing on symbol */
    size_t nrels, relcap;
    int oom;                /* an allocation failed during the query */
    int occurs_check;       /* 1 (default): unify checks for cycles */
    tg_error *err;          /* where the current query reports */
    int failed;             /* an error was reported */
    tg_term *sym_t, *sym_f; /* #t and #f */
    tg_term *sym_assoc, *sym_comm;  /* associative, commutative: the names */
    tgG_rel *assoc, *comm;  /* ... and their fact tables (builtin.c) */
    void *tables;           /* answer tables of the running query (table.c) */
    tgK_vec canon;          /* the variables of canonical terms: the i-th met */
    unsigned long nlambda;  /* lambdas made, to name them */
    volatile sig_atomic_t interrupt;    /* tg_env_interrupt: stop the query */
    unsigned calls;             /* relation calls, for the heap check every 2^14 */
    double deadline;            /* tgK_set_deadline: CLOCK_MONOTONIC seconds, 0: none */
    /* Where the goal term t was read (the rule set that owns the
     * environment knows its relations' sources): 0, or -1 when unknown;
     * an error of a call at run time then points at the call. */
    int (*where)(void *ud, const tg_term *t, const char **file, int *line, int *col);
    void *where_ud;
    /* What defines the relations, for keys of caches of rewrites that
     * use them (kernels/rwcache.c): the definition forms evaluated since
     * the prelude (defrel, tabled, fact, facts, in order), and how many
     * relations the embedder defined in C (tg_defrel_c), whose code no
     * form describes.  The prelude and the library's own C relations
     * belong to the library's build, which the keys name apart. */
    tg_term **defs;
    size_t ndefs, capdefs;
    int logging;            /* set once the prelude is in */
    unsigned long cdefs;
};

static inline uint64_t tgK_new_scope(tg_env *env) { return ++env->next_scope; }

/* tg_defrel_c for the library's own relations (builtin.c, the Scan
 * rewrites): not counted in cdefs, as they come with the library. */
int tgK_defrel_lib(tg_env *env, const char *name, unsigned arity, tg_relation_fn fn, void *ud,
                   tg_error *err);

/* Report an error of the running query (the first one wins). */
void tgK_error(tg_env *env, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The error just reported is about goal term src: its position, when
 * env->where knows it. */
void tgK_error_at(tg_env *env, const tg_term *src);

/* The end of the running query's time (CLOCK_MONOTONIC seconds; 0: none),
 * checked every 2^14 relation calls (patterns/ sets it from the rule
 * set's time limit). */
void tgK_set_deadline(tg_env *env, double deadline);

#endif
