/* tgrel.h - the one public header of libtgrel.
 *
 * Terms are immutable and hash-consed inside a context: two equal terms
 * built in the same context are the same pointer, so equality is `==`.
 * Memory is managed by the Boehm collector; a term stays alive while a
 * pointer to it is held on the stack, in registers, in memory allocated by
 * the collector, or in a registered root.  Memory from malloc() is not
 * scanned: do not keep the only pointer to a term there.
 *
 * Every call that can fail takes a tg_error * (may be NULL), fills it, and
 * returns NULL or -1.  The library never exits or aborts on bad input.
 *
 * Threads: a context and everything made in it (terms, readers, rule
 * sets, logic environments, queries) belong to one thread at a time.  Two
 * contexts may be used from two threads at once: the library keeps no
 * state outside a context; such threads must be known to the collector
 * (GC_register_my_thread or GC_pthread_create).  The interrupt calls
 * (tg_rules_interrupt, tg_env_interrupt) are the exception: they may be
 * called from any thread or a signal handler.
 */
#ifndef TGREL_H
#define TGREL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <gmp.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TG_VERSION "0.1.0"

/* ---- errors ------------------------------------------------------- */

typedef enum tg_errcode {
    TG_OK = 0,
    TG_ERR_SYNTAX,      /* malformed input text */
    TG_ERR_TYPE,        /* a term of the wrong kind was passed */
    TG_ERR_RANGE,       /* a value out of range (index, size, number) */
    TG_ERR_NOMEM,       /* out of memory */
    TG_ERR_IO,          /* a file could not be read or written */
    TG_ERR_ARG,         /* a bad argument (NULL where not allowed, ...) */
    TG_ERR_CHECK        /* the checking mode found values a rewrite changed */
} tg_errcode;

/* A filled error: message is one line, without position; file is
 * "<stdin>", "<string>" or a path; line and column count from 1 and are 0
 * when there is no position. */
typedef struct tg_error {
    tg_errcode code;
    int line;
    int column;
    char file[256];
    char message[512];
} tg_error;

/* Clear an error to TG_OK. */
void tg_error_clear(tg_error *err);
/* Set an error without a position, printf-style (for C relations and
 * other callbacks that report through a tg_error); err may be NULL. */
void tg_error_set(tg_error *err, tg_errcode code, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Format "file:line:column: message" (or just the message when there is no
 * position) into buf; returns buf. */
const char *tg_error_format(const tg_error *err, char *buf, size_t size);

/* ---- contexts ----------------------------------------------------- */

typedef struct tg_ctx tg_ctx;
typedef struct tg_term tg_term;

/* A new context, or NULL with err set. */
tg_ctx *tg_ctx_new(tg_error *err);
/* Release a context.  Its terms must not be used afterwards. */
void tg_ctx_free(tg_ctx *ctx);

/* Statistics of the hash-cons table. */
typedef struct tg_stats {
    size_t live;        /* entries in the table (may include garbage not yet collected) */
    size_t capacity;    /* slots */
    size_t created;     /* nodes ever created */
    size_t reclaimed;   /* nodes removed after the collector found them dead */
    size_t table_bytes; /* memory of the table itself */
} tg_stats;
void tg_ctx_stats(const tg_ctx *ctx, tg_stats *out);
/* Limit the collected heap shared by every context to bytes (0: no
 * limit; at least 1 MiB otherwise).  An allocation beyond it fails as
 * running out of memory does: the call that needed it returns an error
 * (TG_ERR_NOMEM), what it built is reclaimed by the next collection, and
 * the context stays usable.  0, or -1 with err filled. */
int tg_set_max_heap(size_t bytes, tg_error *err);

/* ---- terms -------------------------------------------------------- */

typedef enum tg_kind {
    TG_NIL = 0,     /* the empty list () */
    TG_INT,         /* integer of any size */
    TG_RAT,         /* rational p/q, q > 1, in lowest terms */
    TG_DOUBLE,      /* IEEE double; all NaNs are one term */
    TG_SYMBOL,
    TG_STRING,
    TG_VAR,         /* logic variable ?name or ?name.N */
    TG_PAIR         /* non-empty list: car . cdr */
} tg_kind;

/* The kind of t, which must not be NULL. */
tg_kind tg_kind_of(const tg_term *t);
const char *tg_kind_name(tg_kind k);

/* The empty list (shared by all contexts). */
tg_term *tg_nil(void);

/* Every constructor returns NULL for a NULL context (or a NULL name,
 * head or element array where one is needed); elements must be terms.
 * Integers: immediate when small (no context needed), GMP beyond; never
 * overflow. */
tg_term *tg_int(tg_ctx *ctx, int64_t v);
tg_term *tg_int_mpz(tg_ctx *ctx, const mpz_t v);
/* Parse a decimal integer (optional sign). */
tg_term *tg_int_parse(tg_ctx *ctx, const char *s, tg_error *err);
/* Rationals: normalized; an integral value gives a TG_INT term.  Fails
 * (NULL) on a zero denominator. */
tg_term *tg_rat_mpq(tg_ctx *ctx, const mpq_t v, tg_error *err);
tg_term *tg_rat(tg_ctx *ctx, int64_t num, int64_t den, tg_error *err);
tg_term *tg_double(tg_ctx *ctx, double v);

/* Symbols and strings hold any bytes, NUL included. */
tg_term *tg_symbol(tg_ctx *ctx, const char *name, size_t len);
tg_term *tg_symbol_cstr(tg_ctx *ctx, const char *name);
tg_term *tg_string(tg_ctx *ctx, const char *bytes, size_t len);

/* Logic variables: identified by a name and a number (0 for ?name). */
tg_term *tg_var(tg_ctx *ctx, const char *name, size_t len, uint64_t id);

/* Lists.  tg_cons(ctx, a, d) is (a . d); tg_list builds
 * (e[0] ... e[n-1] . tail) in one step (tail NULL means ()).  Whichever
 * way a list is built, equal lists are one pointer. */
tg_term *tg_cons(tg_ctx *ctx, tg_term *car, tg_term *cdr);
tg_term *tg_list(tg_ctx *ctx, size_t n, tg_term *const *elems, tg_term *tail);
/* An application (head a[0] ... a[n-1]) is the list of head and args. */
tg_term *tg_app(tg_ctx *ctx, tg_term *head, size_t n, tg_term *const *args);
/* count applications of head to n arguments each, args[i*n .. i*n+n-1]
 * for out[i]: out[i] == tg_app(ctx, head, n, args + i*n), faster for
 * terms spread over a large table.  Returns 0, or -1 with err set:
 * TG_ERR_ARG (a NULL pointer; nothing built), TG_ERR_NOMEM (out[i] NULL
 * from the first that failed on).  out must be memory the collector scans. */
int tg_app_batch(tg_ctx *ctx, tg_term *head, size_t n, size_t count, tg_term *const *args,
                 tg_term **out, tg_error *err);

/* car of a pair (NULL for anything else). */
tg_term *tg_car(const tg_term *t);
/* cdr of a pair (NULL for anything else); may create a node. */
tg_term *tg_cdr(tg_ctx *ctx, const tg_term *t);
/* Number of elements before the final tail ((a b . c) has 2). */
size_t tg_length(const tg_term *t);
/* Element i (0-based) of a list, NULL when out of range. */
tg_term *tg_nth(const tg_term *t, size_t i);
/* The final tail: () for a proper list, c for (a b . c), t itself for a
 * non-list. */
tg_term *tg_tail(const tg_term *t);
/* Copy up to max elements into out; returns the element count
 * (tg_length). */
size_t tg_elements(const tg_term *t, tg_term **out, size_t max);

/* Iterate over the elements of a list without creating nodes. */
typedef struct tg_iter { const tg_term *node; size_t i; } tg_iter;
void tg_iter_init(tg_iter *it, const tg_term *list);
/* Next element, or NULL at the end (the tail is then tg_iter_rest). */
tg_term *tg_iter_next(tg_iter *it);
tg_term *tg_iter_rest(tg_ctx *ctx, tg_iter *it);

/* Accessors; they return -1 / NULL when t is of another kind or NULL
 * (so do tg_car, tg_cdr, tg_nth, tg_tail, tg_length: 0, tg_elements: 0,
 * tg_iter_next). */
int tg_int_get(const tg_term *t, int64_t *out);          /* -1 when it does not fit */
int tg_int_get_mpz(const tg_term *t, mpz_t out);          /* out must be initialized */
int tg_rat_get_mpq(const tg_term *t, mpq_t out);          /* ints too; out initialized */
int tg_double_get(const tg_term *t, double *out);
const char *tg_symbol_name(const tg_term *t, size_t *len);
const char *tg_string_bytes(const tg_term *t, size_t *len);
const char *tg_var_name(const tg_term *t, size_t *len);
uint64_t tg_var_id(const tg_term *t);

/* True when t contains no logic variable (computed at construction). */
int tg_is_ground(const tg_term *t);
/* 32-bit structural hash, equal for equal terms (free: stored). */
uint32_t tg_hash(const tg_term *t);
/* Total order: numbers (by value) < symbols < strings < variables <
 * () < pairs; returns <0, 0, >0.  Deterministic across contexts. */
int tg_compare(const tg_term *a, const tg_term *b);

/* ---- reading ------------------------------------------------------ */

typedef struct tg_reader tg_reader;

/* A reader over len bytes of text (copied); file names the source in
 * errors (NULL means "<string>"). */
tg_reader *tg_reader_new(tg_ctx *ctx, const char *text, size_t len,
                         const char *file, tg_error *err);
/* Read the next term: 1 and *out set, 0 at the end, -1 on an error (err
 * filled).  After an error the reader skips the rest of the bad top-level
 * form, so the next call goes on with the following one. */
int tg_reader_next(tg_reader *r, tg_term **out, tg_error *err);
/* Number the text's first line `line` (>= 1) instead of 1, in errors and
 * positions: for a program that reads a stream piece by piece (a REPL
 * entry starting on line 12 of its input).  Call before reading. */
void tg_reader_first_line(tg_reader *r, int line);
/* Record where each subterm of the forms read from now on began (off by
 * default: it costs a table per form), so that tg_rules_eval_read can
 * point an error at the subterm it is about. */
void tg_reader_track_positions(tg_reader *r, int on);
/* Position (1-based) where the last term returned began. */
void tg_reader_last_pos(const tg_reader *r, int *line, int *column);
void tg_reader_free(tg_reader *r);

/* Read exactly one term from a string (error if there is none or more). */
tg_term *tg_read(tg_ctx *ctx, const char *text, size_t len, tg_error *err);
tg_term *tg_read_cstr(tg_ctx *ctx, const char *text, tg_error *err);
/* Read a whole file into memory (malloc'd, *len set); NULL on error. */
char *tg_slurp_file(const char *path, size_t *len, tg_error *err);

/* ---- printing ----------------------------------------------------- */

/* Print t in canonical form; the result reads back to the same pointer.
 * Returns a malloc'd NUL-terminated string (free it with free()), *len
 * set when len is not NULL; NULL on out-of-memory. */
char *tg_print(const tg_term *t, size_t *len);
/* Print with repeated compound subterms named:
 * "(true_div (mul *1 x) *1) where *1 = (add y z)". */
char *tg_print_shared(const tg_term *t, size_t *len);
/* Write the canonical form to a stream; 0 or -1. */
int tg_fprint(FILE *f, const tg_term *t);

/* ---- logic programs ---------------------------------------------- */

/* An environment of relations and the search engine that runs queries
 * in the faster-miniKanren dialect: (defrel (name arg ...) goal ...),
 * (run n (q ...) goal ...), (run* (q ...) goal ...).  See doc/logic.md. */
typedef struct tg_env tg_env;

tg_env *tg_env_new(tg_ctx *ctx, tg_error *err);
void tg_env_free(tg_env *env);
/* Unification checks that a variable is not bound to a term containing
 * it (on by default; off is faster and unsound on cyclic goals). */
void tg_env_set_occurs_check(tg_env *env, int on);
/* Ask the running query of env to stop: it fails with "interrupted".
 * Safe to call from a signal handler (it only sets a flag); a request
 * made while no query runs is dropped when the next one starts. */
void tg_env_interrupt(tg_env *env);

/* Called with each answer of a run as it is found; return nonzero to
 * stop the run there. */
typedef int (*tg_answer_fn)(void *ud, tg_term *answer);

enum { TG_EVAL_DEFINE = 0, TG_EVAL_RUN = 1, TG_EVAL_VALUE = 2 };
/* Evaluate one top-level form.  (defrel ...) defines or redefines a
 * relation: TG_EVAL_DEFINE.  (run ...) and (run* ...) pass each answer
 * to fn (which may be NULL): TG_EVAL_RUN.  Any other term is its own
 * value, stored in *value (when value is not NULL): TG_EVAL_VALUE.
 * Returns -1 with err filled on an error. */
int tg_eval(tg_env *env, tg_term *form, tg_answer_fn fn, void *ud,
            tg_term **value, tg_error *err);
/* Run a (run ...) or (run* ...) form; its answers as a list. */
tg_term *tg_run(tg_env *env, tg_term *form, tg_error *err);

/* A compiled (run ...) form, to run many times without compiling again.
 * tg_query_run passes each answer to fn and returns how many it found,
 * or -1 with err filled.  The relations it calls are looked up when it
 * runs, so redefining one changes the query. */
typedef struct tg_query tg_query;
tg_query *tg_query_new(tg_env *env, tg_term *form, tg_error *err);
long tg_query_run(tg_query *q, tg_answer_fn fn, void *ud, tg_error *err);
void tg_query_free(tg_query *q);

/* A relation written in C: the escape from goals to C (what project is
 * for in Scheme).  When a goal calls it, the search asks it for answers
 * one at a time, i = 0, 1, 2, ..., passing the arguments walked (every
 * bound variable replaced by its value; unbound ones stay variables).
 * *state is NULL for i = 0 and kept between the calls of one goal, for
 * the function's own use (collector memory, or nothing to free).  For
 * answer i, set *answer to a list of nargs terms, unified with the
 * arguments (it may hold new variables from tg_env_var), and return 1;
 * return 0 when there are no more answers, or -1 to stop the query with
 * the error reported in err (which may be NULL).  Answers are interleaved
 * with the rest of the search as the clauses of a conde are. */
typedef int (*tg_relation_fn)(tg_ctx *ctx, tg_term *const *args, unsigned nargs,
                              unsigned long i, void **state, tg_term **answer,
                              void *ud, tg_error *err);
/* Define (or redefine) relation `name` of `arity` arguments as fn. */
int tg_defrel_c(tg_env *env, const char *name, unsigned arity, tg_relation_fn fn,
                void *ud, tg_error *err);
/* A new logic variable (named name, or "_" when NULL) for the answers
 * of a C relation. */
tg_term *tg_env_var(tg_env *env, const char *name);

/* ---- rules and rewriting ------------------------------------------ */

/* A rule set: declared ops, rules, relations (see doc/rules.md).  It
 * belongs to one context and one thread at a time. */
typedef struct tg_rules tg_rules;

tg_rules *tg_rules_new(tg_ctx *ctx, tg_error *err);
void tg_rules_free(tg_rules *rs);
/* Load .rules text (file names it in errors, NULL: "<string>") or a
 * file.  All or nothing: on an error (filled with file:line:column and
 * the offending text) nothing of the text stays loaded.  0 or -1. */
int tg_rules_load_string(tg_rules *rs, const char *text, size_t len, const char *file,
                         tg_error *err);
int tg_rules_load_file(tg_rules *rs, const char *path, tg_error *err);
/* As tg_rules_load_file, all or nothing, but a form that defines nothing
 * ((normalize ...), (rewrite ...), (run ...), a term) is skipped instead
 * of refused: the caller evaluates those with tg_rules_eval once the
 * definitions are in (the tgrel program loads a file so). */
int tg_rules_load_file_defs(tg_rules *rs, const char *path, tg_error *err);
/* As tg_rules_load_file_defs, all or nothing, but a form with an error
 * does not stop the reading: the errors of the file's forms go to
 * errs[0..max) (at most max of them; the reading stops at the max-th).
 * Returns how many (0: the file is loaded); -1 when errs is NULL or max
 * is 0. */
long tg_rules_check_file(tg_rules *rs, const char *path, tg_error *errs, size_t max);
/* Read the file at path again: what it defined before (ops, rules,
 * rewriters, registrations, relations; not what the files it includes
 * define: reload those by their own names) is replaced by what it
 * defines now, in the same place of the load order, all or nothing.
 * Definitions it no longer has are removed; files only it included and
 * no longer includes are unloaded.  When what other files define would
 * break (a rule of theirs uses an op it no longer declares, a rewriter
 * names a rule it no longer defines), nothing changes and the error
 * names them.  A file not loaded yet is loaded.  As with
 * tg_rules_load_file_defs, only definitions are read: the caller
 * evaluates the file's other forms.  Errors as tg_rules_check_file: how
 * many (0: reloaded). */
long tg_rules_reload_file(tg_rules *rs, const char *path, tg_error *errs, size_t max);

enum {  /* what tg_rules_undef removed: bits */
    TG_UNDEF_OP = 1, TG_UNDEF_RULE = 2, TG_UNDEF_REWRITER = 4, TG_UNDEF_QUERY = 8, TG_UNDEF_RELATION = 16
};
/* Remove every definition named name: an op (with its defop), a rule
 * (both directions, every left side), a rewriter or named query (with
 * the items registered into it), a relation defined by a form.  All or
 * nothing: when another definition uses one of them (a rule uses the
 * op, a rewriter names the rule), nothing changes and the error names
 * the users.  The TG_UNDEF_ bits of what went, or -1 (nothing of that
 * name, still used). */
int tg_rules_undef(tg_rules *rs, tg_term *name, tg_error *err);

enum {
    TG_NF_MEMO = 1      /* remember the normal form of every call (and stop on cycles) */
};
/* The innermost normal form of t under every rule loaded (forward
 * directions); NULL with err filled (out of memory, a cycle found with
 * TG_NF_MEMO, interrupted). */
tg_term *tg_normalize(tg_rules *rs, tg_term *t, unsigned flags, tg_error *err);
/* Evaluate one top-level form of the .rules language: op, rule and
 * include forms define (TG_EVAL_DEFINE); (normalize TERM) stores the
 * normal form in *value (TG_EVAL_VALUE); relation forms (defrel, run,
 * ...) go to the rule set's logic environment, as tg_eval; any other
 * term is its own value.  -1 with err filled (without a position when
 * the error is in the form itself: the caller knows where it read it). */
int tg_rules_eval(tg_rules *rs, tg_term *form, tg_answer_fn fn, void *ud, tg_term **value,
                  tg_error *err);
/* The same for a form read at file:line:column, which errors and the
 * ops and rules it defines then name. */
int tg_rules_eval_at(tg_rules *rs, tg_term *form, const char *file, int line, int column,
                     tg_answer_fn fn, void *ud, tg_term **value, tg_error *err);
/* The same for a form r has just read (tg_reader_next): errors and
 * definitions name r's file and the form's position, and with position
 * tracking on (tg_reader_track_positions) errors point at the subterm
 * they are about. */
int tg_rules_eval_read(tg_rules *rs, tg_reader *r, tg_term *form, tg_answer_fn fn, void *ud,
                       tg_term **value, tg_error *err);
/* The logic environment of the rule set's relations (made on first use). */
tg_env *tg_rules_env(tg_rules *rs, tg_error *err);
/* Rewrite t with a named rewriter (declared by equilibrium, walk or
 * sequence), spec being its name or (query NAME (include TAG...)
 * (require TAG...) (exclude TAG...) (subquery NAME ...)).  NULL with err
 * filled. */
tg_term *tg_rewrite(tg_rules *rs, tg_term *spec, tg_term *t, tg_error *err);
/* The profile of the last tg_rewrite as a term: (profile NAME (passes P)
 * (nodes START END MAX) (rewrites N) (conditions C) (rules (RULE FIRED
 * BUILT) ...) (never-fired RULE ...)); NULL before any. */
tg_term *tg_rules_profile(tg_rules *rs);
/* Timed profiles (doc/rules.md, Timed profiles): the last tg_rewrite
 * part by part, as its rewriters nest: (profile-tree (time MS) (nodes
 * START END MAX) PART), each PART (rewriter NAME KIND (time MS) (runs N)
 * (passes P ((PASS MS FIRINGS NODES) ...)) (rules (RULE MS FIRED BUILT
 * TRIED) ...) (parts PART ...)), rules slowest first; times in
 * milliseconds (doubles).  NULL before any rewrite. */
tg_term *tg_rules_profile_tree(tg_rules *rs);
/* The same as text, to out.  0, or -1 before any rewrite. */
int tg_rules_profile_print(tg_rules *rs, FILE *out);
/* Time every rule tried (while on): a rule's time is from its match to
 * its firing or failure, its conditions included.  Off by default: it
 * reads a clock at each try. */
void tg_rules_set_timing(tg_rules *rs, int on);
/* Print each rule firing ("rule: before => after") to out while on is
 * set; (trace on) and (trace off) forms switch it too. */
void tg_rules_set_trace(tg_rules *rs, FILE *out, int on);
int tg_rules_tracing(const tg_rules *rs);

typedef enum tg_list_kind {
    TG_LIST_OPS,        /* (op NAME PROP ...) in declaration order */
    TG_LIST_RULES,      /* (rule NAME LHS => RHS [(tags ...)]) in load order, one per
                         * left side; a both-ways rule is written with <=> */
    TG_LIST_REWRITERS,  /* (equilibrium|walk|sequence NAME CLAUSE ... ITEM ...) */
    TG_LIST_RELATIONS   /* (NAME ARITY) of each defined relation, the prelude's included,
                           sorted by name */
} tg_list_kind;
/* What the rule set holds, as a list of terms (the forms that would
 * declare it again); NULL with err filled on a bad kind or out of memory. */
tg_term *tg_rules_list(tg_rules *rs, tg_list_kind kind, tg_error *err);
/* Ask the running tg_normalize, tg_rewrite or relation query of rs to
 * stop: it fails with "interrupted" at its next step.  Safe to call from
 * a signal handler (it only sets a flag); a request made while nothing
 * runs is dropped when the next run starts. */
void tg_rules_interrupt(tg_rules *rs);
/* Limits of each tg_normalize, tg_rewrite and evaluated form of rs:
 * max_steps rewrites (0: none) and seconds of time (0: none; the search
 * of a run form too).  A run over a limit fails with TG_ERR_RANGE and a
 * message that names the rules that fired most in it (those that kept
 * it going).  None by default.  0, or -1 with err filled (a NULL rule
 * set, a time that is negative, not a number or over 1e9). */
int tg_rules_set_limits(tg_rules *rs, unsigned long long max_steps, double seconds, tg_error *err);
/* Provenance (see doc/rules.md): while on, tg_normalize and tg_rewrite
 * log each rule firing (at most cap of them, 0: a million) so that
 * tg_rules_why can say which firings a term of the result came from.
 * Switching it on or off drops the log.  0, or -1 with err filled. */
int tg_rules_set_provenance(tg_rules *rs, int on, size_t cap, tg_error *err);
int tg_rules_provenance(const tg_rules *rs);
/* The firings t (the last result or a subterm of it) depends on, in the
 * order they fired: (why T (firings LOGGED TOTAL) (K RULE (pass P)
 * POSITION BEFORE AFTER) ...), RULE being NAME or (reverse NAME) and
 * POSITION (at I ...) (argument indices from the root of the term pass P
 * rewrote) or (in K) (a call of firing K's right side).  NULL with err
 * filled: provenance off, no result, t not in it. */
tg_term *tg_rules_why(tg_rules *rs, tg_term *t, tg_error *err);
/* The same printed to out, one firing per line.  0 or -1. */
int tg_rules_print_why(tg_rules *rs, tg_term *t, FILE *out, tg_error *err);
/* Rule applications and condition tests of the last tg_normalize. */
void tg_rules_counts(const tg_rules *rs, unsigned long long *rewrites,
                     unsigned long long *conditions);

/* A node rewriter written in C (PyTensor's node_rewriter): given a node,
 * an application of the op it tracks, return its replacement, or NULL
 * (or node itself) for no change.  Filling err (tg_error_set) stops the
 * rewrite with an error naming the rewriter and the node.  It may build
 * terms in ctx, but must not rewrite, load or register with the rule set
 * that calls it (such calls fail). */
typedef tg_term *(*tg_node_rewriter_fn)(tg_ctx *ctx, tg_term *node, void *ud, tg_error *err);
/* Register fn as the node rewriter `name` of the rule set: a rule of that
 * name for rewriters, queries, profiles and traces.  op names the
 * declared op whose nodes it gets (NULL: every declared op); tags (NULL
 * or white-space separated symbols) are its tags for queries.
 * Registering a name again replaces the function (same op only).  0, or
 * -1 with err filled (NULL argument, unknown op, name of a rule or
 * rewriter). */
int tg_rules_def_rewriter(tg_rules *rs, const char *name, const char *op, const char *tags,
                          tg_node_rewriter_fn fn, void *ud, tg_error *err);
/* A condition written in C, for (when (NAME ARG ...)) and (when (not
 * (NAME ARG ...))) in rules: 1 when it holds for the arguments (normal
 * forms), 0 when not, -1 (or err filled) to stop the rewrite with an
 * error naming it. */
typedef int (*tg_predicate_fn)(tg_ctx *ctx, tg_term *const *args, unsigned nargs, void *ud,
                               tg_error *err);
/* Register fn as predicate `name` of arity arguments.  Rules using it
 * must be loaded after (before, the name is an unknown condition).
 * Registering a name again replaces the function (same arity only).  0,
 * or -1 with err filled. */
int tg_rules_def_predicate(tg_rules *rs, const char *name, unsigned arity, tg_predicate_fn fn,
                           void *ud, tg_error *err);
/* The version of the C code of rs (its C rewriters and predicates, and
 * the relations of its logic environment defined with tg_defrel_c), for
 * the pipeline cache (tg_fn_options.rules): rewritten terms are cached
 * under the rule set's definitions, which say nothing of what C code
 * does, so a rule set with C code is rewritten on every compile unless
 * its embedder names that code's version here, and must then give a new
 * string whenever the code's results change.  NULL drops it.  0, or -1
 * with err filled. */
int tg_rules_set_c_version(tg_rules *rs, const char *version, tg_error *err);
/* on: the typed guards of rs's rules ((type:dtype X), (type:same X Y)
 * ...; doc/rules.md, Typed guards) see the tensor types of the kernels;
 * off: they decline (the rule does not fire), as in a rule set never
 * given them.  tg_fn_compile turns them on for its own rewrite.  0, or
 * -1 with err filled (rs NULL). */
int tg_rules_tensor_types(tg_rules *rs, int on, tg_error *err);

/* ---- tensor functions (kernels) ----------------------------------- */

/* Element types of arrays. */
typedef enum tg_dtype {
    TG_BOOL = 0,        /* one byte, 0 or 1 */
    TG_INT32,
    TG_INT64,
    TG_FLOAT32,
    TG_FLOAT64
} tg_dtype;

#define TG_MAXDIM 8

/* An array the caller owns: element (i0, ..., ik) is at
 * (char *)data + i0*strides[0] + ... + ik*strides[k] (strides in bytes,
 * any sign, 0 for a broadcast axis). */
typedef struct tg_array {
    tg_dtype dtype;
    int ndim;                       /* 0 .. TG_MAXDIM */
    int64_t shape[TG_MAXDIM];
    int64_t strides[TG_MAXDIM];
    void *data;
} tg_array;

/* Fill a as a C-contiguous array over data. */
void tg_array_init(tg_array *a, tg_dtype dtype, int ndim, const int64_t *shape, void *data);

/* A compiled tensor function (see doc/kernels.md for the op vocabulary). */
typedef struct tg_fn tg_fn;

typedef struct tg_fn_options {
    /* kept[i] nonzero: input i must not be written; zero: the function may
     * use its memory for intermediates once it is no longer needed.  NULL
     * means every input is kept. */
    const unsigned char *kept;
    /* nonzero: run the schedule in the interpreter */
    int interpret;
    /* the C compiler and its flags for the generated code; NULL: $TGREL_CC
     * or "cc", $TGREL_CFLAGS or the defaults (doc/kernels.md): "-O2
     * -march=native -fno-math-errno -ffp-contract=off", then -fopenmp
     * (-fopenmp-simd when configure found no OpenMP), then -DTGK_MVEC
     * when it found libmvec */
    const char *cc;
    const char *cflags;
    /* non-NULL: rewrite the outputs with this rule set first (e.g. one
     * that loaded the library's all.rules), all together as one term
     * (graph OUT ...), with the rewriter or query rewrite names (NULL: the
     * symbol default, the library's canonicalize, scan_opt then
     * specialize sequence); the function is that of the rewritten terms,
     * which are cached under the unrewritten ones, the rule set's
     * contents and rewrite (a graph compiled again skips the rewriter) */
    tg_rules *rules;
    tg_term *rewrite;
    /* with rules: nonzero for the checking mode.  The unrewritten graph is
     * kept and run in the interpreter on the inputs of every call (all
     * inputs are then kept), and its outputs are compared with the
     * function's; when one differs beyond check_tol (relative; 0: 1e-7,
     * at least 1e-4 for float32), tg_fn_call fails with TG_ERR_CHECK naming
     * the first rule whose firing changed the values (its outputs are
     * written still).  Slow: for finding a wrong rule. */
    int check;
    double check_tol;
    /* how (grad COST WRT) terms among the outputs are expanded (NULL:
     * the library's rules, a disconnected input an error); they are
     * expanded before anything else, rewriting included */
    const struct tg_grad_options *grad;
    /* NULL, or the update pairs ((SHARED NEW-VALUE) ...): after each call
     * shared variable SHARED holds NEW-VALUE, computed from the values
     * before the call (doc/kernels.md, Shared variables and updates) */
    tg_term *updates;
    /* nonzero: an input given in another dtype than declared is converted
     * when no value changes (int64 data into a float64 input); a value
     * that would change is an error, as is any other dtype when zero */
    int allow_input_downcast;
    /* ---- modes (doc/kernels.md, Modes) ---- */
    /* how much rules rewrites: "fast_run" (the rewriter rewrite names,
     * everything by default), "fast_compile" (the rule set's canonicalize
     * only) or "none" (no rewriting, the checking mode off); NULL:
     * $TGREL_MODE, else fast_run.  Another name is an error */
    const char *mode;
} tg_fn_options;

/* The mode a compile with options mode uses (NULL: $TGREL_MODE, else
 * "fast_run"): "fast_run", "fast_compile" or "none" (static strings);
 * NULL with err filled for any other name. */
const char *tg_fn_mode(const char *mode, tg_error *err);

/* Compile outputs over inputs, each input an (input NAME DTYPE (SIZE ...))
 * term; the outputs may read shared variables of ctx, written (shared
 * NAME DTYPE (SIZE ...)), bound from their storage at each call; opt may
 * be NULL.  NULL with err filled (naming the subterm) on an
 * unknown op or a dtype or shape mismatch known at compile time. */
tg_fn *tg_fn_compile(tg_ctx *ctx, size_t nin, tg_term *const *inputs, size_t nout,
                     tg_term *const *outputs, const tg_fn_options *opt, tg_error *err);
/* Run fn on nin arrays; for each output, a NULL data asks the function to
 * allocate it (malloc: release with free) and fill dtype, shape and
 * strides; otherwise the array must have the output's dtype and shape and
 * is written through its strides.  0, or -1 with err naming the input and
 * the shape expected, or the subterm whose sizes disagree. */
int tg_fn_call(tg_fn *fn, const tg_array *inputs, tg_array *outputs, tg_error *err);
/* Ask the running tg_fn_call of fn to stop: it fails with "interrupted"
 * within a bounded time (between its steps, and every 1024 iterations of
 * a scan, compiled or interpreted).  Safe to call from a signal handler
 * (it only sets a flag); a request made while no call runs is dropped
 * when the next one starts. */
void tg_fn_interrupt(tg_fn *fn);
/* 1 when fn runs compiled code, 0 when it runs in the interpreter
 * (asked for, or no compiler: a warning then went to stderr). */
int tg_fn_native(const tg_fn *fn);
/* The schedule as a term: loops, reductions, buffer slots. */
tg_term *tg_fn_schedule(const tg_fn *fn);
void tg_fn_free(tg_fn *fn);

/* ---- profiles of tensor functions (doc/kernels.md, Profiles) -------- */

/* Where a function's compile went and what its calls cost.  Stage times
 * are wall-clock milliseconds of tg_fn_compile; a stage that did not run
 * (no rules, no gradient, a cache hit, the interpreter) is 0. */
typedef struct tg_fn_stats {
    double compile_ms;      /* all of tg_fn_compile */
    double grad_ms;         /* expanding (grad COST WRT) terms */
    double rewrite_ms;      /* tg_fn_options.rules: rewriting and validating, or the cache read */
    double type_ms;         /* building the graph: dtypes and shapes */
    double schedule_ms;     /* ordering, fusion, memory plan */
    double codegen_ms;      /* generating the C source */
    double cc_ms;           /* the C compiler */
    double load_ms;         /* the compile cache's lock and checks, loading the code */
    int rewrite_cached;     /* the rewritten terms came from the compile cache */
    int code_cached;        /* the compiled code came from the compile cache */
    int native;             /* as tg_fn_native */
    size_t nodes_before;    /* distinct compound nodes of the outputs, before rewriting */
    size_t nodes_after;     /* and after (the same without rules) */
    unsigned long long calls;   /* tg_fn_call calls, failed ones included */
    double call_ms;         /* their total time (the first 64 calls timed, then all when
                             * those were long, else one in 8 and the others estimated
                             * from those); call_ms / calls: per call */
} tg_fn_stats;
/* Fill *out with fn's profile.  0, or -1 when fn or out is NULL. */
int tg_fn_profile(const tg_fn *fn, tg_fn_stats *out);
/* Print a profile as lines of text ("compile 12.3 ms", ...) to out. */
void tg_fn_profile_print(const tg_fn_stats *p, FILE *out);

/* ---- the compile cache (doc/kernels.md, Compile cache) -------------- */

/* What the cache directory holds.  Hits and misses are counted by every
 * process using the directory, since it was made or last cleared. */
typedef struct tg_cache_stats {
    size_t entries;             /* compiled objects and rewritten graphs */
    size_t code_entries, rewrite_entries;
    uint64_t bytes;             /* the entries' size */
    uint64_t max_bytes;         /* $TGREL_CACHE_MAX, 0 when unset (no limit) */
    unsigned long long code_hits, code_misses, rewrite_hits, rewrite_misses;
    size_t locks;               /* lock files: compiles running now */
    size_t temporary;           /* files of compiles under way (or killed) */
} tg_cache_stats;
/* The cache directory in use ($TGREL_CACHE_DIR, else $XDG_CACHE_HOME/tgrel,
 * else $HOME/.cache/tgrel) into buf.  0, or -1 when none can be named or
 * it does not fit. */
int tg_cache_dir(char *buf, size_t size);
/* Fill *out.  0 (a directory not made yet holds nothing), or -1 with err
 * filled: no directory, unreadable, $TGREL_CACHE_MAX not a size. */
int tg_cache_info(tg_cache_stats *out, tg_error *err);
/* Remove every entry, the lock files no process holds, the temporary
 * files of processes that are gone, and reset the counts; what went into
 * *removed (may be NULL).  0, or -1 with err filled (entries another
 * process is loading or building are kept and counted in the message). */
int tg_cache_clear(tg_cache_stats *removed, tg_error *err);

/* ---- ops defined with C expressions (doc/kernels.md) ---- */

/* An elementwise op's value at one element, for the interpreter: its
 * nargs arguments as doubles, ud as given. */
typedef double (*tg_elementwise_fn)(const double *args, void *ud);
/* Define op name for the functions of ctx: nargs (1 to 8) tensor
 * arguments, elementwise with broadcasting, a float64 result (float32
 * when every argument is float32).  c_expr is its value as one C
 * expression over the double arguments x0, x1, ... (math.h's functions
 * may be called) for compiled code; fn computes the same for the
 * interpreter.  A name is defined once per context.  Its gradient is a
 * vjp rule of the rule set given as tg_grad_options.rules (doc/grad.md).
 * 0, or -1 with err filled: a NULL argument, a bad name, an op of the
 * vocabulary or one defined already, nargs out of range, c_expr empty or
 * not one expression (holding ; { } # quotes, comments or newlines). */
int tg_fn_def_elementwise(tg_ctx *ctx, const char *name, unsigned nargs, const char *c_expr,
                          tg_elementwise_fn fn, void *ud, tg_error *err);

/* ---- gradients ------------------------------------------------------ */

/* (grad COST WRT), COST a 0-d float term and WRT an (input ...) term or
 * any subterm of COST, is dCOST/dWRT, of WRT's shape and dtype (see
 * doc/grad.md).  Each op's gradient is a vjp rule (the library's
 * patterns/lib/grad.rules, compiled in); the expansion is reverse-mode,
 * linear in the distinct nodes of COST. */
typedef struct tg_grad_options {
    /* NULL, or a rule set whose vjp rules are tried before the library's
     * (to add or override an op's gradient; load tensor.rules and
     * grad.rules into it first, for the ops they declare) */
    tg_rules *rules;
    /* nonzero: the gradient with respect to a WRT that COST does not
     * depend on is zero (PyTensor's disconnected_inputs="ignore"), not
     * an error */
    int disconnected;
} tg_grad_options;

/* t with every (grad COST WRT) in it replaced by tensor terms computing
 * it, the grads inside a grad first (so a gradient of a gradient is a
 * second derivative); t itself when it has none.  opt may be NULL.  NULL
 * with err naming the grad term: COST not 0-d float, WRT not float, COST
 * not depending on WRT, an op with no vjp rule, a term the tensor types
 * reject. */
tg_term *tg_grad_expand(tg_ctx *ctx, tg_term *t, const tg_grad_options *opt, tg_error *err);
/* ---- shared variables --------------------------------------------- */

/* A named array of a context that outlives calls: the terms of any
 * function compiled in that context read it as (shared NAME DTYPE (SIZE
 * ...)), and updates (tg_fn_options.updates) write it, so functions
 * sharing a variable see each other's writes.  The context owns it; a
 * function compiled with it keeps it alive until freed itself. */
typedef struct tg_shared tg_shared;

/* A new shared variable holding a copy of value (any strides).  NULL with
 * err filled: a name already taken, a bad array. */
tg_shared *tg_shared_new(tg_ctx *ctx, const char *name, const tg_array *value, tg_error *err);
/* The shared variable of ctx named name, or NULL. */
tg_shared *tg_shared_find(tg_ctx *ctx, const char *name);
/* Replace the value with a copy of value, of the variable's dtype and
 * rank; only this changes its shape.  0, or -1 with err filled and the
 * value unchanged. */
int tg_shared_set(tg_shared *sv, const tg_array *value, tg_error *err);
/* Copy the value into out: with out->data NULL it is allocated (malloc:
 * release it with free) and dtype, shape and strides are filled;
 * otherwise out must have the variable's dtype and shape.  0 or -1. */
int tg_shared_get(const tg_shared *sv, tg_array *out, tg_error *err);
/* A read-only view of the value, without copying: valid until the next
 * tg_shared_set, tg_shared_free or call of a function updating it.  0 or
 * -1. */
int tg_shared_view(const tg_shared *sv, tg_array *view, tg_error *err);
/* Its name (NULL for a NULL sv). */
const char *tg_shared_name(const tg_shared *sv);
/* Remove the variable from its context (the name is free again) and
 * give up the handle; its storage goes when no function uses it any
 * more. */
void tg_shared_free(tg_shared *sv);

/* ---- .npy files ----------------------------------------------------- */

/* Read numpy's .npy format (versions 1 to 3; bool, int32, int64,
 * float32, float64 in either byte order, C or Fortran order) into out: a
 * C-contiguous array whose data is malloc'd (release it with free).  0,
 * or -1 with err naming the file (name for tg_npy_parse, NULL:
 * "<buffer>") and what is wrong: not a .npy file, a truncated header or
 * truncated data, an unsupported dtype; out then holds no data. */
int tg_npy_read(const char *path, tg_array *out, tg_error *err);
int tg_npy_parse(const void *buf, size_t len, const char *name, tg_array *out, tg_error *err);
/* Write a (any strides) as a .npy file, version 1.0, C order,
 * little-endian.  0, or -1 with err naming the file. */
int tg_npy_write(const char *path, const tg_array *a, tg_error *err);

#ifdef __cplusplus
}
#endif
#endif
