/* prov.h - provenance of a rewrite (module prefix tgO_): the log of the
 * rule firings of the last normalize or rewrite, and the chain of firings
 * a term of its result depends on.
 *
 * The machine and the rewriters call in only when a rule set has
 * provenance on (rs->prov != NULL), so it costs one predictable branch
 * where a rule fires and nothing elsewhere.
 *
 * A firing is numbered from 1 in the order the rules fired.  Its before
 * is the redex (arguments in normal form); its after is what its right
 * side gave: the normal form of the right side's inner calls with the
 * outer term built, or for a right side ending in a call (a tail call)
 * that call, which is the before of the next firing at the same place.
 * Positions: a firing on a node of the term a pass started from is at
 * the path of argument indices from that term's root (1 = the first
 * argument); a firing on a call of a right side is "in K", inside the
 * result of firing K (the innermost machine reduces those calls before it
 * builds the right side, so they have no place in any earlier term).
 */
#ifndef TG_PROV_H
#define TG_PROV_H

#include "rset.h"

#define TGO_DEFAULT_CAP 1000000u    /* firings logged by default */

typedef struct tgO_fire {
    tgW_rule *rule;
    tg_term *before, *after;    /* after: NULL while the right side runs */
    uint32_t pos;               /* a position id, or a firing number (in) */
    uint32_t pass;
    uint32_t end;               /* firings logged when it completed */
    int in;                     /* pos is the firing whose right side held it */
    int cond;                   /* it fired while a condition was tested */
} tgO_fire;

/* The nodes a pass rebuilt into one term around rewritten arguments, in
 * time order (time: firings logged when). */
typedef struct tgO_hist {
    uint32_t n, cap;
    uint32_t *time;
    tg_term **orig;
} tgO_hist;

typedef struct tgO_prov {
    tgO_fire *log;
    size_t n, cap;              /* logged, room */
    size_t limit;               /* at most this many are logged */
    unsigned long long total;   /* fired, logged or not */
    uint32_t *open;             /* by frame depth: its firing whose right side runs (0: none) */
    size_t capopen;
    uint32_t *parent, *idx, *depth; /* positions: id -> parent id, argument index, depth */
    size_t npos, cappos;
    uint32_t at, atparent, atidx;   /* the position of the node being reduced */
    uint32_t pass;
    tgW_map producer;           /* after -> the firings that gave it (prov.c) */
    tgW_map from;               /* rebuilt node -> its tgO_hist of old nodes */
    size_t nlinks;
    tg_term *input;             /* of the last run */
    tg_term *result;            /* of the last run, NULL when it failed */
} tgO_prov;

/* Switch provenance on (a new empty log, at most cap firings; 0: the
 * default) or off (the log goes).  0, or -1 when out of memory. */
int tgO_set(tg_rules *rs, int on, size_t cap);
/* A new run on input: the log emptied. */
void tgO_begin(tgO_prov *p, tg_term *input);
/* A new pass over a whole term; its root's position id. */
uint32_t tgO_pass(tgO_prov *p);
/* The id of argument i of position parent (0 when the table is full). */
uint32_t tgO_pos(tgO_prov *p, uint32_t parent, uint32_t i);
/* The node reduced next is at position id pos, or argument i of it. */
static inline void tgO_at(tgO_prov *p, uint32_t pos)
{
    p->at = pos, p->atparent = 0;
}
static inline void tgO_at_arg(tgO_prov *p, uint32_t pos, uint32_t i)
{
    p->at = 0, p->atparent = pos, p->atidx = i;
}
/* Rule r fires in the frame at depth d (0: a node of the term) on the
 * call of head (a bare symbol when atom) to the n arguments args.  0, or
 * -1 when out of memory. */
int tgO_fire_at(tgO_prov *p, tg_ctx *ctx, tgW_rule *r, tg_term *head, int atom, uint32_t n,
                tg_term *const *args, size_t d);
/* Relation rewrite r turned before into after at the node being
 * reduced (a firing complete at once: relations have no right side that
 * runs).  0, or -1 when out of memory. */
int tgO_fired(tgO_prov *p, tgW_rule *r, tg_term *before, tg_term *after);
/* The right side of the firing open at depth d gave after, or ends in
 * the call of head to args (a tail call).  0, or -1. */
int tgO_done(tgO_prov *p, size_t d, tg_term *after);
int tgO_done_call(tgO_prov *p, tg_ctx *ctx, size_t d, tg_term *head, int atom, uint32_t n,
                  tg_term *const *args);

/* A pass turned node orig into nf without a rule firing at it (its
 * arguments were rewritten).  0, or -1 when out of memory. */
int tgO_link(tgO_prov *p, tg_term *nf, tg_term *orig);

/* The firings TERM (a subterm of the last result) depends on:
 * (why TERM (firings LOGGED TOTAL) (K RULE (pass P) POSITION BEFORE AFTER) ...),
 * POSITION (at I ...) or (in K).  NULL with err filled. */
tg_term *tgO_why(tg_rules *rs, tg_term *t, tg_error *err);
/* The same printed, one firing per line.  0 or -1 with err filled. */
int tgO_print_why(tg_rules *rs, tg_term *t, FILE *out, tg_error *err);

#endif
