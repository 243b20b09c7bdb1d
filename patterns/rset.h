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
    uint32_t fid;       /* the loaded file that declared it (rs->files), 0: none */
    int dead;           /* removed (unload.c); its id is kept for a new declaration */
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
    M_DONE,
    /* modulo assoc / comm (ac.c): node c's state; see tgW_ac_match */
    M_ACRULE,       /* first of such a rule: match() leaves it to tgW_ac_match */
    M_ACOPEN,       /* node c = R[a] (or the call, d & TGW_AC_ROOT) is (K[b] ...); d: mode | k << 8 */
    M_ACONE,        /* choice: R[d] = an unused argument of node a (head K[b] unless b == 0xffff) */
    M_ACTAKE,       /* node a: R[b] (K[b] if pad) taken (its arguments, if an application of the op) */
    M_ACGROUP,      /* choice: R[d] = a nonempty part of node a's unused arguments, c left over */
    M_ACALL,        /* R[d] = node a's unused arguments (at least one), as one term */
    M_ACREST,       /* R[d] = the list of node a's unused arguments */
    M_ACEND,        /* node a has no unused argument */
    M_ASONE,        /* sequence node a: R[d] = the next argument */
    M_ASRUN,        /* choice: R[d] = the next run of arguments, c left over (pad: all the rest) */
    M_ASTAKE        /* sequence node a: the next arguments are R[b] */
};

enum {  /* the mode of M_ACOPEN (low bits of d) */
    TGW_AC_ROOT = 1,    /* the node is the call itself */
    TGW_AC_EXACT = 2,   /* exactly k arguments (else at least k) */
    TGW_AC_SEQ = 4,     /* assoc only: arguments taken in order */
    TGW_AC_FLAT = 8     /* assoc: a taken application of the op stands for its arguments */
};

/* Body instructions: a value stack; R as left by the match. */
enum {
    E_VAR,          /* push R[a] */
    E_CONST,        /* push K[a] */
    E_CALL,         /* pop c args, push the normal form of (K[b] args) (op id a) */
    E_CALLT,        /* the same as the rule's result (a tail call) */
    E_CALLV,        /* like E_CALL; the top is a list spliced after c args (d: as E_CALLAC) */
    E_LIST,         /* pop c elements, push the list of them (no rule applies to it) */
    E_LISTT,        /* pop a tail then c elements: the list with that tail */
    E_EQ,           /* pop two; the rule fails unless they are the same term */
    E_NE,           /* pop two; the rule fails if they are the same term */
    E_PRED,         /* pop one; the rule fails unless predicate a holds */
    E_NOT,          /* pop one; the rule fails unless predicate a fails */
    E_STORE,        /* R[a] = the top (kept on the stack) */
    E_GOAL,         /* pop c args; the rule fails unless relation K[b] (relrw.c) has an answer */
    E_FIRE,         /* the conditions hold: the rule fires (counts, limits, hooks) */
    E_RET,          /* the top is the rule's result */
    E_NUM,          /* pop c numbers, push built-in a of them (arith.h), or with
                     * pad set put it in R[d]; the rule fails when it declines */
    E_NORM,         /* the top, a variable's absorbed arguments: if (K[b] ...), reduced (op id a) */
    E_CALLAC,       /* E_CALL of an assoc / comm op: the args put in canonical order first */
    E_CEXT,         /* C node rewriter a on the call (cext.h) */
    E_CRET,         /* the top is a C rewriter's result (cext.h) */
    E_CPRED,        /* pop c; the rule fails unless C predicate a holds (negated: pad) */
    E_VARS,         /* push R[a], R[b] and, when pad is 3, R[c] (pad: 2 or 3 E_VARs fused) */
    E_TYPE          /* as E_NUM, for type: built-in a (typed.h) */
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
    int ac;             /* the match has assoc / comm nodes (M_ACRULE first) */
    int plain;          /* the match is M_ROOT, then only M_APP of fewer than
                         * TGT_CHUNK elements, M_CONST and M_SAME: no choice;
                         * 2 when it is M_ROOT, one M_APP and M_DONE */
    int ctorrec;        /* the right side is (C x.. (op y..)), op the rule's own,
                         * after pushes only, and plain is 2: the machine runs
                         * the levels of such a recursion in one frame */
    /* a self loop (compile.c): a plain rule without conditions whose right
     * side calls its own op on variables and constants of the rule, as
     * (lt (s ?x) (s ?y)) => (lt ?x ?y).  loop[j] is where the call's
     * argument j comes from: a register, or TGW_LOOP_K | a constant's
     * index.  NULL for other rules. */
    uint32_t *loop;
    int loop_direct;    /* loop[] reads no argument register: written in place */
    /* what a match at an assoc / comm root needs of the call (ac.c): the
     * bits of the keys its constants and heads take, the least and most
     * arguments (0: no bound); all 0 unless tgW_ac_prepare filled them */
    uint64_t acneed;
    uint32_t acmin, acmax;
    tg_term **vars;     /* the left side's variables ... */
    uint32_t *vregs;    /* ... and their registers, for instantiating */
    uint32_t nvars;
    tg_term *tags;      /* a list of symbols */
    const char *file;
    int line, col;
    uint32_t fid;       /* the loaded file that defined it, 0: none */
    struct tgD_rel *rel;    /* a relation used as a rewrite (relrw.c): no programs; else NULL */
    /* statistics */
    unsigned long long fired, tried, built;
    unsigned long long fired0;  /* fired at the start of the current run */
    unsigned long long ticks;   /* time trying it (clock.h ticks), counted while
                                 * rs->timing is on (relations: always) */
} tgW_rule;

/* The rules of one rewriter, by op id. */
typedef struct tgW_index {
    uint32_t nops;
    struct tgW_byop {
        tgW_rule **r;
        uint32_t n;
        struct tgW_disp *disp;  /* r by argument heads (dispatch.h), or NULL */
        /* its self loops (tgW_rule's loop) that no rule before them in r
         * matches when they match: the machine may fire such a rule
         * again and again on its own call (tgW_loop_safe) */
        tgW_rule **loops;
        uint32_t nloops;
    } *by;
} tgW_index;

/* A pointer-keyed map: keys and values stay alive.  Its array is
 * collector memory, or with scratch set malloc memory registered as a
 * collector root, which tgW_map_clear frees (see tgW_scratch_alloc). */
typedef struct tgW_map {
    void **kv;          /* 2 * cap words: key, value */
    size_t n, cap;
    int scratch;
} tgW_map;

/* Array arr of n elements of size bytes (*cap of them) with room for at
 * least need: arr itself, or a copy in new collector memory (scanned)
 * with *cap at least doubled; NULL when out of memory. */
void *tgW_grow(void *arr, size_t n, size_t *cap, size_t need, size_t size);

/* Zeroed malloc memory that the collector scans as a root until
 * tgW_scratch_free: for a table a normalization makes and drops (its
 * done map), whose contents must stay alive but which, in collector
 * memory, would count as allocation and set off collections that mark
 * the whole graph (doc/internals.md). */
void *tgW_scratch_alloc(size_t bytes);
void tgW_scratch_free(void *p, size_t bytes);

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
    tgW_map srcpos;             /* a call in a relation's body -> where it was
                                 * read (load.c: struct srcpos) */
    tgW_index all;              /* every forward rule */
    int index_stale;
    struct tgW_machine *m;      /* the machine's stacks, kept between runs */
    tgW_map rwmap;              /* name -> rewriter */
    tgW_map relrw;              /* relrw.c: relation name -> its rewrites, condition -> its call */
    tgW_map plans;              /* rewrite spec -> tgW_cplan, until the next load */
    tg_term **forms;            /* the .rules form names, interned (load.c) */
    struct tgW_rw **rws;        /* in declaration order */
    uint32_t nrws;
    size_t caprws;
    struct tgW_prof *last;      /* the profile of the last rewrite */
    FILE *trace;                /* print each firing here ... */
    int trace_on;               /* ... when on */
    int timing;                 /* rule timing on (tg_rules_set_timing) */
    int (*hook)(void *ud, struct tgW_rule *r, tg_term *before, tg_term *const *R);
    void *hook_ud;
    struct tgO_prov *prov;      /* the firing log (prov.h), NULL when off */
    unsigned long long rewrites, conditions;
    unsigned long long max_steps;   /* 0: no limit (tg_rules_set_limits) */
    double timeout;             /* seconds per run, 0: none */
    double deadline;            /* of the current run (tgW_clock), 0: none */
    unsigned long long *fired_base;     /* rules' fired counts at the run's start, */
    uint32_t nfired_base;               /* taken when a limit is set */
    volatile int interrupt;
    struct tgW_acs *acs;        /* matching modulo assoc / comm: scratch (ac.c) */
    struct tgX_ext *ext;        /* C rewriters and predicates (cext.c) */
    /* The op, rule and rewriter forms loaded, in order, the included
     * files' among them: with the logic environment's definitions (logic.h)
     * they determine every rewrite, so caches of rewrites are keyed by
     * them (kernels/rwcache.c).  A failed load drops what it added. */
    tg_term **src;
    uint32_t nsrc;
    size_t capsrc;
    char *cversion;             /* tg_rules_set_c_version, or NULL */
    /* registrations into rewriters (register forms), to undo a failed
     * load: rewriters.h tgW_reg */
    struct tgW_reg *regs;
    uint32_t nregs;
    size_t capregs;
    /* the typer of the type: built-ins (typed.h), NULL: none; its state
     * for the run counted typer_run (runs: tgW_limits_start's count) */
    const struct tgTy_typer *typer;
    void *typer_state;
    unsigned long long typer_run, runs;
    /* The files loaded (unload.c): a definition's fid is its index + 1;
     * src's and the environment's definitions have theirs beside them. */
    struct tgW_file *files;
    uint32_t nfiles;
    size_t capfiles;
    uint32_t fid;               /* the file being loaded (0: none), for new definitions */
    int reloading;              /* in tg_rules_reload_file (unload.c) */
    uint32_t *srcfid;           /* of src[i] */
    size_t capsrcfid;
    uint32_t *envfid;           /* of env->defs[i], for the first nenvfid */
    size_t nenvfid, capenvfid;
};

/* A file loaded, at the top or by an include. */
typedef struct tgW_file {
    const char *real;           /* its real path: the file's identity */
    const char *path;           /* as named */
    uint32_t *inc;              /* the files its includes named (fids), read or not */
    size_t ninc, capinc;
    int root;                   /* loaded at the top (not only included) */
    int live;
} tgW_file;

tgW_op *tgW_op_find(const tg_rules *rs, const tg_term *name);
/* The files loaded (unload.c): the live one of real path real (0: none);
 * a new one (its fid, 0 when out of memory); an include of to by from
 * (from 0: to counts as loaded at the top); -1 when out of memory. */
uint32_t tgW_file_find(const tg_rules *rs, const char *real);
uint32_t tgW_file_add(tg_rules *rs, const char *real, const char *path, int root);
int tgW_file_edge(tg_rules *rs, uint32_t from, uint32_t to);
/* The environment's definitions not yet tagged with a file: fid's. */
int tgW_env_tag(tg_rules *rs, uint32_t fid);
/* A monotonic clock in seconds. */
double tgW_clock(void);
/* At the start of a run (tg_normalize, tg_rewrite, a form): the deadline
 * and the fired counts the limits' error compares with. */
void tgW_limits_start(tg_rules *rs);
/* Whether the run is over its step limit or deadline (checked every 2^16
 * rewrites); if so, err says which, and names the rules that fired most
 * in the run: those that kept it going. */
int tgW_limits_over(tg_rules *rs, tg_error *err);
/* Append form to rs->src; -1 when out of memory (or form is NULL). */
int tgW_log_src(tg_rules *rs, tg_term *form);
int tgW_index_build(tg_rules *rs, tgW_index *ix, tgW_rule *const *rules, uint32_t n);
/* Self loops (tgW_rule's loop; compile.c). */
#define TGW_LOOP_K 0x80000000u  /* loop[j]: a constant, not a register */
#define TGW_LOOP_MAX 8          /* the most arguments of a self loop */
/* Whether self loop rules[i] of an op's rules, in the order they are
 * tried, is the rule that fires on every call it matches: no rule before
 * it matches such a call (their left sides clash with its own somewhere:
 * different heads or constants, or lengths). */
int tgW_loop_safe(const tg_rules *rs, tgW_rule *const *rules, uint32_t i);
/* Add a compiled rule to rs (its name goes to the rule map). */
int tgW_rule_add(tg_rules *rs, tgW_rule *r);

/* The max-use limit of an equilibrium run: a rule firing more than
 * ratio * N + 1 times in it is an error, N the node count of the run's
 * input (1 when it has none).  Counting N is a walk of the whole graph
 * (a random read per node), so it is put off until a rule comes near the
 * limit: until then n is the limit for a lower bound of N, the distinct
 * nodes the first pass has walked so far, which is all a run far below
 * the limit needs. */
typedef struct tgW_limit {
    double ratio;
    tg_term *start;             /* the run's input */
    unsigned long long n;       /* a rule fired more often: tgW_limit_over */
    int exact;                  /* n is ratio * N + 1 */
} tgW_limit;

/* Whether `fired` firings are over L's limit.  lower is a lower bound of
 * N the caller knows (0: none); N is counted only when that bound does
 * not settle it. */
int tgW_limit_over(tg_rules *rs, tgW_limit *L, unsigned long long fired, size_t lower);

/* How a run of the machine goes. */
typedef struct tgW_run {
    const tgW_index *ix;    /* the rules */
    int memo;               /* memoize every redex (and find cycles) */
    int step;               /* one rewrite at the root: right sides are built, not reduced */
    tgW_limit *limit;           /* the max-use limit (NULL: none) */
    /* called at each firing with the redex and the rule's registers */
    int (*hook)(void *ud, tgW_rule *r, tg_term *before, tg_term *const *R);
    void *hook_ud;
    size_t nodes;           /* the term's node count when known (0: not), to size the maps */
} tgW_run;

/* Normal form of t under run->ix (innermost); NULL with err filled. */
tg_term *tgW_normalize(tg_rules *rs, const tgW_run *run, tg_term *t, tg_error *err);
/* Free the rule set's machine (its frame stack is malloc'd). */
void tgW_machine_free(tg_rules *rs);
/* The machine's value stack while it has one, else NULL (tests: a word
 * left pointing at it must keep none of a failed run's terms). */
tg_term **tgW_machine_values(const tg_rules *rs);
/* The last tgW_normalize's distinct input nodes: a size for the next
 * pass's done map. */
size_t tgW_normalize_seen(const tg_rules *rs);
/* One rewrite of t at its root with the first rule of run->ix that
 * applies (its right side built as it is), or t itself; NULL with err. */
tg_term *tgW_step(tg_rules *rs, const tgW_run *run, tg_term *t, tg_error *err);
/* Rule r's right side with the variables its match bound in R. */
tg_term *tgW_instantiate(tg_rules *rs, const tgW_rule *r, tg_term *const *R);

/* ---- assoc / comm (ac.c) ---------------------------------------------- */

/* Most alternatives (choice-point retries) one match modulo assoc / comm
 * may try before it is an error. */
#define TGW_AC_MAX_RETRIES 1000000

/* Fill r->acneed, acmin and acmax from r's match program (r->ac). */
void tgW_ac_prepare(tgW_rule *r);
/* Match rule r (r->ac) against the call's n arguments A, filling R: 1, 0
 * (no match), -1 with err filled (out of memory, or more than
 * TGW_AC_MAX_RETRIES alternatives). */
int tgW_ac_match(tg_rules *rs, const tgW_rule *r, tg_term **A, uint32_t n, tg_term **R, tg_error *err);
/* The argument count of an application of head (op flags fl) to the n
 * arguments a once nested applications of an assoc op are spliced in. */
size_t tgW_ac_flatlen(const tg_term *head, uint32_t fl, tg_term *const *a, size_t n);
/* Splice them in, in place: a has room for nn = tgW_ac_flatlen(...). */
void tgW_ac_flatten(const tg_term *head, tg_term **a, size_t n, size_t nn);
/* Sort a[0..n) by tg_compare (stable merge sort, O(n log n)): 0 when it
 * was sorted already, 1 when it was not, -1 when out of memory. */
int tgW_ac_sort(tg_term **a, size_t n);
/* t with its root in canonical form (its arguments are already): an
 * application of an assoc op flattened, of a comm op sorted; NULL when
 * out of memory. */
tg_term *tgW_ac_canon(tg_rules *rs, tg_term *t);
/* The whole of t in canonical form (explicit stacks, linear in its size
 * but for the sorting); NULL when out of memory. */
tg_term *tgW_ac_canon_deep(tg_rules *rs, tg_term *t);
/* The assoc / comm op t applies (a proper list), or NULL. */
const tgW_op *tgW_ac_op_of(const tg_rules *rs, const tg_term *t);
/* Whether the rule set declares an assoc or comm op. */
int tgW_ac_any(const tg_rules *rs);

#endif
