/* rewriters.h - named rewriters, queries over them, plans and profiles
 * (module prefix tgW_, with rset.h). */
#ifndef TG_REWRITERS_H
#define TG_REWRITERS_H

#include "rset.h"

enum { TGW_EQUIL = 1, TGW_WALK_IN, TGW_WALK_OUT, TGW_SEQ,
       TGW_QUERY    /* a named query (defquery): base's items that q selects */ };

/* One item of a rewriter: a rule (one direction) or another rewriter. */
typedef struct tgW_item {
    tg_term *name;
    int backward;           /* (reverse RULE) */
    struct tgW_rw *rw;      /* a rewriter, or NULL for a rule */
    int rel;                /* a relation of two arguments (relrw.c), not a rule */
    double pos;             /* in a sequence */
    uint32_t order;
} tgW_item;

typedef struct tgW_rw {
    tg_term *name;
    int kind;
    tg_term *tags;          /* a list of symbols */
    double max_use_ratio;   /* equilibrium: 0 for no limit */
    tgW_item *items;
    size_t nitems;
    const char *file;
    int line, col;
    /* a named query (TGW_QUERY): the rewriter (or named query) it
     * selects from, its clauses (NULL: all of it) and its spec as
     * written */
    struct tgW_rw *base;
    const struct tgW_query *q;
    tg_term *spec;
    uint32_t fid;           /* the loaded file that declared it, 0: none */
    size_t nown;            /* items of its own form; registered ones follow */
} tgW_rw;

typedef struct tgW_query {
    tg_term *include, *require, *exclude;   /* lists of tags */
    tg_term **subname;
    struct tgW_query **sub;
    size_t nsub;
    /* named queries nest: an item must pass this query too (NULL: none) */
    const struct tgW_query *also;
} tgW_query;

/* A registration into a rewriter (register form): the items it had
 * before, to undo a failed load (load.c). */
typedef struct tgW_reg {
    tgW_rw *rw;
    tgW_item *items;
    size_t nitems;
    /* what it added, to add again when its rewriter is made anew (a
     * reload, unload.c): items into the rewriter named target */
    tg_term *target;
    tgW_item *add;
    size_t nadd;
    uint32_t fid;
    const char *file;
    int line, col;
} tgW_reg;

/* A rewriter resolved for one run. */
typedef struct tgW_plan {
    int kind;
    tgW_rw *rw;
    tgW_rule **rules;       /* its own rules ... */
    uint32_t nrules;
    tgW_index ix;           /* ... indexed */
    tgW_rule **rels;        /* its relation rewrites (tried after the rules) */
    uint32_t nrels;
    struct tgW_plan **parts;    /* nested rewriters, run after its rules */
    size_t nparts, capparts;
} tgW_plan;

/* The timed profile of one part of a plan (one plan node), its parts'
 * beside: the counts of the runs of its own rules and relations (rules
 * first), its time and its passes.  A plan's tree is made once and
 * cleared at the start of each rewrite. */
typedef struct tgW_pnode {
    const tgW_plan *p;
    double ms;                  /* in it, its parts included */
    unsigned long runs, passes;
    unsigned long long *fired, *built, *tried, *ticks;     /* p->nrules + p->nrels */
    /* equilibrium: each pass's time, firings and result (the first
     * TGW_PASSES_KEPT passes) */
    double *pass_ms;
    unsigned long long *pass_fired;
    tg_term **pass_out;
    size_t npass, cappass;
    struct tgW_pnode **kids;    /* p->nparts */
} tgW_pnode;
#define TGW_PASSES_KEPT 1000

/* The profile of the last rewrite. */
typedef struct tgW_prof {
    tg_term *name;
    double ms;
    unsigned long passes;
    size_t nodes_start, nodes_end, nodes_max;
    unsigned long long rewrites, conditions;
    tgW_rule **rules;
    uint32_t nrules;
    unsigned long long *fired, *built, *tried;
    int ok;
    /* node counts are taken when the profile is asked for: the terms to
     * count (the input, each part's input, each equilibrium pass's
     * result, the result) are kept until then */
    tg_term **counted;
    size_t ncounted, capcounted;
    tg_term *start, *end;
    int nodes_known;
    tgW_pnode *tree;            /* timed, part by part */
} tgW_prof;

/* A rewriter resolved under one spec (its name or a query), with every
 * rule its parts use: kept in rs->plans until the next load. */
typedef struct tgW_cplan {
    tgW_plan *p;
    tgW_rule **rules;
    uint32_t nrules;
    tgW_pnode *tree;            /* the profile's, made on its first run */
} tgW_cplan;

tgW_rw *tgW_rw_find(const tg_rules *rs, const tg_term *name);
size_t tgW_count_nodes(tg_ctx *ctx, tg_term *t);
/* Rewrite t with rw (its items chosen by q, NULL for all); the profile
 * goes to rs->last.  NULL with err filled. */
tg_term *tgW_rewrite(tg_rules *rs, tgW_rw *rw, const tgW_query *q, tg_term *t, tg_error *err);
/* The plan cached for spec since the last load, or NULL. */
tgW_cplan *tgW_plan_cached(tg_rules *rs, tg_term *spec);
/* Resolve rw under q into a plan, cached for spec (when not NULL).
 * NULL with err filled. */
tgW_cplan *tgW_plan_make(tg_rules *rs, tg_term *spec, tgW_rw *rw, const tgW_query *q, tg_error *err);
/* Forget the cached plans: rules, ops or rewriters changed. */
void tgW_plans_clear(tg_rules *rs);
/* Rewrite t with a resolved rewriter (as tgW_rewrite). */
tg_term *tgW_rewrite_plan(tg_rules *rs, const tgW_cplan *cp, tg_term *t, tg_error *err);
/* The compiled rules of one direction of the rule named name, in load
 * order (alternative left sides are several; they are contiguous in
 * rs->rules): how many, from *first. */
uint32_t tgW_rules_named(const tg_rules *rs, const tg_term *name, int backward, uint32_t *first);

/* The last rewrite's profile as a term (no times, so that it can be
 * compared): (profile NAME (passes P) (nodes START END MAX) (rewrites N)
 * (conditions C) (rules (RULE FIRED BUILT) ...) (never-fired RULE ...)). */
tg_term *tgW_profile_term(tg_rules *rs);
/* The last rewrite's timed profile as a term (see tg_rules_profile_tree)
 * and as text (tg_rules_profile_print). */
tg_term *tgW_profile_tree(tg_rules *rs);
int tgW_profile_print(tg_rules *rs, FILE *out);
/* The hook that prints each firing to rs->trace. */
int tgW_trace_hook(void *ud, tgW_rule *r, tg_term *before, tg_term *const *R);

#endif
