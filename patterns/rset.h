/* rset.h - internals of rule sets (module prefix tgW_): declared ops,
 * compiled rules, the code the rewriting machine runs, and the index
 * that gives each op the rules of one rewriter.
 *
 * A rule compiles into two programs.  Its match program checks the
 * arguments of a call against the left side and fills registers with the
 * parts the variables stand for; it may leave choice points (commutative
 * ops), which a failing check goes back to.  Its body program (conditions,
 * then the right side) runs on a value stack: a call of an op that has
 * rules is reduced at once (innermost), so the redexes of a right side are
 * never built as terms, only the normal forms.
 */
#ifndef TG_RSET_H
#define TG_RSET_H

#include "tgrel.h"
#include "term.h"
#include "logic.h"

#include <stdio.h>

enum {
    TGW_ASSOC = 1,
    TGW_COMM = 2,
    TGW_VARIADIC = 4    /* amax is unbounded */
};

/* The id of the op of a rule that applies to every op (a C node
 * rewriter registered for any op). */
#define TGW_ANYOP UINT32_MAX

typedef struct tgW_op {
    tg_term *name;      /* a symbol */
    uint32_t id;
    uint32_t flags;
    uint32_t amin, amax;
    tg_term *props;     /* the free-form properties: a list of terms */
    const char *file;   /* where it was declared */
    int line, col;
} tgW_op;

/* Match instructions.  Registers are term pointers; R[0..k) are the k
 * arguments of the call (copied to fresh registers for segment roots). */
enum {
    M_ROOT,         /* a: arity k; call must have exactly k arguments */
    M_ROOTSEG,      /* a: k fixed; >= k arguments, R[k] = list of the rest */
    M_APP,          /* R[a] is (K[b] ...) of exactly c args: into R[d..] */
    M_APPSEG,       /* R[a] is (K[b] ...) of >= c args: R[d..d+c) and R[d+c] = rest */
    M_LIST,         /* R[a] is a proper list of exactly c elements: into R[d..] */
    M_CONST,        /* R[a] == K[b] */
    M_SAME,         /* R[a] == R[b] (a variable met again) */
    M_COMM,         /* choice: R[d], R[d+1] = R[a]'s two arguments, in order, then swapped */
    M_ROOTCOMM,     /* choice: R[d], R[d+1] = the call's two arguments, then swapped */
    M_DONE
};

/* Body instructions: a value stack; R as left by the match. */
enum {
    E_VAR,          /* push R[a] */
    E_CONST,        /* push K[a] */
    E_CALL,         /* pop c args, push the normal form of (K[b] args) (op id a) */
    E_CALLT,        /* the same as the rule's result (a tail call) */
    E_CALLV,        /* like E_CALL; the top is a list spliced after c args */
    E_LIST,         /* pop c elements, push the list of them (no rule applies to it) */
    E_LISTT,        /* pop a tail then c elements: the list with that tail */
    E_EQ,           /* pop two; the rule fails unless they are the same term */
    E_NE,           /* pop two; the rule fails if they are the same term */
    E_PRED,         /* pop one; the rule fails unless predicate a holds */
    E_NOT,          /* pop one; the rule fails unless predicate a fails */
    E_STORE,        /* R[a] = the top (kept on the stack) */
    E_FIRE,         /* the conditions hold: the rule fires (counts, limits, hooks) */
    E_RET,          /* the top is the rule's result */
    E_CEXT,         /* C node rewriter a on the call (cext.h) */
    E_CRET,         /* the top is a C rewriter's result (cext.h) */
    E_CPRED         /* pop c; the rule fails unless C predicate a holds (negated: pad) */
};

enum {  /* built-in predicates of E_PRED */
    P_CONST, P_NUMBER, P_INT, P_RAT, P_DOUBLE, P_SYMBOL, P_STRING, P_ATOM,
    P_APP, P_NIL, P_COUNT
};

typedef struct tgW_ins {
    uint8_t op;
    uint8_t pad;
    uint16_t a;
    uint16_t b;
    uint16_t c;
    uint32_t d;
} tgW_ins;

typedef struct tgW_rule {
    tg_term *name;      /* the rule's canonical name (a symbol) */
    tgW_op *op;         /* head op of its left side */
    int backward;       /* the reverse direction of a <=> rule */
    tg_term *lhs, *rhs; /* source, for traces and listings */
    tg_term **k;        /* constants */
    tgW_ins *match;
    tgW_ins *body;
    uint32_t nregs;     /* registers the match fills (beyond the arguments) */
    uint32_t maxstack;  /* body stack depth */
    uint32_t nk;
    int seg;            /* the root has a segment: registers are copies */
    tg_term **vars;     /* the left side's variables ... */
    uint32_t *vregs;    /* ... and their registers, for instantiating */
    uint32_t nvars;
    tg_term *tags;      /* a list of symbols */
    const char *file;
    int line, col;
    /* statistics */
    unsigned long long fired, tried, built;
    unsigned long long fired0;  /* fired at the start of the current run */
} tgW_rule;

/* The rules of one rewriter, by op id. */
typedef struct tgW_index {
    uint32_t nops;
    struct tgW_byop {
        tgW_rule **r;
        uint32_t n;
    } *by;
} tgW_index;

/* A pointer-keyed map (collector memory: keys and values stay alive). */
typedef struct tgW_map {
    void **kv;          /* 2 * cap words: key, value */
    size_t n, cap;
} tgW_map;

/* Array arr of n elements of size bytes (*cap of them) with room for at
 * least need: arr itself, or a copy in new collector memory (scanned)
 * with *cap at least doubled; NULL when out of memory. */
void *tgW_grow(void *arr, size_t n, size_t *cap, size_t need, size_t size);

void *tgW_map_get(const tgW_map *m, const void *key);
int tgW_map_put(tgW_map *m, void *key, void *val);
void tgW_map_clear(tgW_map *m);
/* Room for n entries without growing (a hint: nothing when out of memory). */
void tgW_map_reserve(tgW_map *m, size_t n);

struct tg_rules {
    tg_ctx *ctx;
    tg_env *env;                /* relations, made on first use */
    tgW_op **ops;               /* by id */
    uint32_t nops;
    size_t capops;
    tgW_map opmap;              /* symbol -> op */
    tgW_rule **rules;           /* in load order */
    uint32_t nrules;
    size_t caprules;
    tgW_map rulemap;            /* name -> rule (the forward direction) */
    tgW_index all;              /* every forward rule */
    int index_stale;
    struct tgW_machine *m;      /* the machine's stacks, kept between runs */
    tgW_map memo;               /* redex -> normal form */
    tgW_map rwmap;              /* name -> rewriter */
    tg_term **forms;            /* the .rules form names, interned (load.c) */
    struct tgW_rw **rws;        /* in declaration order */
    uint32_t nrws;
    size_t caprws;
    struct tgW_prof *last;      /* the profile of the last rewrite */
    FILE *trace;                /* print each firing here ... */
    int trace_on;               /* ... when on */
    int (*hook)(void *ud, struct tgW_rule *r, tg_term *before, tg_term *const *R);
    void *hook_ud;
    unsigned long long rewrites, conditions;
    unsigned long long max_steps;   /* 0: no limit */
    volatile int interrupt;
    struct tgX_ext *ext;        /* C rewriters and predicates (cext.c) */
};

tgW_op *tgW_op_find(const tg_rules *rs, const tg_term *name);
int tgW_index_build(tg_rules *rs, tgW_index *ix, tgW_rule *const *rules, uint32_t n);
/* Add a compiled rule to rs (its name goes to the rule map). */
int tgW_rule_add(tg_rules *rs, tgW_rule *r);

/* How a run of the machine goes. */
typedef struct tgW_run {
    const tgW_index *ix;    /* the rules */
    int memo;               /* memoize every redex (and find cycles) */
    int step;               /* one rewrite at the root: right sides are built, not reduced */
    unsigned long long limit;   /* a rule firing more often in this run is an error (0: no limit) */
    /* called at each firing with the redex and the rule's registers */
    int (*hook)(void *ud, tgW_rule *r, tg_term *before, tg_term *const *R);
    void *hook_ud;
    size_t nodes;           /* the term's node count when known (0: not), to size the maps */
} tgW_run;

/* Normal form of t under run->ix (innermost); NULL with err filled. */
tg_term *tgW_normalize(tg_rules *rs, const tgW_run *run, tg_term *t, tg_error *err);
/* One rewrite of t at its root with the first rule of run->ix that
 * applies (its right side built as it is), or t itself; NULL with err. */
tg_term *tgW_step(tg_rules *rs, const tgW_run *run, tg_term *t, tg_error *err);
/* Rule r's right side with the variables its match bound in R. */
tg_term *tgW_instantiate(tg_rules *rs, const tgW_rule *r, tg_term *const *R);

#endif
