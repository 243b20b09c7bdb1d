/* memo.h - the machine's memo table (module prefix tgW_memo_): calls
 * (an op's head and its normalized arguments) to their normal forms,
 * for one normalization with memo on.
 *
 * A call is its key as it stands on the value stack: the head and up to
 * two arguments inline, so a lookup is one probe and needs no term to be
 * built; a call with more arguments is keyed by its interned term.  The
 * table also keeps the stack of open calls (those being reduced): an
 * entry's slot moves when the table grows, and the table renumbers the
 * open ones then.
 */
#ifndef TG_MEMO_H
#define TG_MEMO_H

#include "rset.h"

#define TGW_MEMO_INLINE 2   /* arguments kept in an entry */

typedef struct tgW_mentry {
    tg_term *head;      /* the op's symbol, or the whole call (more arguments) */
    tg_term *nf;        /* the normal form, TGW_MEMO_OPEN, or NULL (unknown) */
    tg_term *a[TGW_MEMO_INLINE];
    uint64_t meta;      /* 0: empty slot; else hash, count and flags (memo.c) */
} tgW_mentry;

/* An open call: its slot and the rule that fired on it (NULL until one
 * does), for the cycle report. */
typedef struct tgW_mopen {
    size_t slot;
    tgW_rule *rule;
} tgW_mopen;

typedef struct tgW_memo {
    tgW_mentry *e;      /* collector memory: keys and normal forms stay alive */
    size_t cap, n;
    tgW_mopen *open;    /* collector memory */
    size_t nopen, capopen;
} tgW_memo;

/* The marker of a call being reduced. */
extern tg_term tgW_memo_open_obj;
#define TGW_MEMO_OPEN (&tgW_memo_open_obj)

/* Look up the call (head, atom: a bare nullary symbol) with the n
 * arguments at args.  Returns its slot; *nf is its normal form, or
 * TGW_MEMO_OPEN when it is being reduced (a cycle), or NULL when it is
 * not known: it then becomes open (pushed on the open stack, marked).
 * Returns (size_t)-1 when out of memory. */
size_t tgW_memo_enter(tgW_memo *m, tg_ctx *ctx, tg_term *head, int atom, uint32_t n,
                      tg_term *const *args, tg_term **nf);

/* The open calls from the open stack's position `from` on get normal
 * form nf (NULL: unknown again, after an error) and are closed. */
void tgW_memo_close(tgW_memo *m, size_t from, tg_term *nf);

/* The call in slot as a term (for messages); NULL when out of memory. */
tg_term *tgW_memo_key(const tgW_memo *m, tg_ctx *ctx, size_t slot);

/* Forget everything (the memory goes to the collector). */
void tgW_memo_clear(tgW_memo *m);

#endif
