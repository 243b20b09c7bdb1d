/* typed.h - typed guards (module prefix tgTy_): the type: built-ins of
 * rules, `(type:dtype X)`, `(type:same X Y)` and the others of
 * doc/rules.md (Typed guards), which ask a subterm's tensor type.
 *
 * Types are the kernels' business, a layer above: the rule set holds a
 * typer that the kernels install (tg_rules_tensor_types) and that this
 * file calls through the table below, so that patterns/ never includes
 * a kernels header.  Without a typer, or on a term that does not type
 * (a bare symbol, a scan's body, an op the kernels do not know), a
 * built-in declines and the rule does not fire: a typed guard never
 * lets a rule fire on a guess.
 *
 * A built-in's arguments are built as written, not reduced by the rules
 * (compile.c): a term has the type of its normal form (rewrites keep
 * types, which validation checks), and a rule may then ask the type of
 * its own left side, (type:same ?a (switch ?c ?a ?b)), without being
 * applied to it again.
 */
#ifndef TG_TYPED_H
#define TG_TYPED_H

#include "rset.h"

/* The reserved prefix: no op may be declared with a name starting so. */
#define TGTY_PREFIX "type:"
#define TGTY_PREFIX_LEN 5

/* A term's tensor type: dtype, rank, each size an integer or the symbol
 * that names it (a size known by name only), and whether it is a bare
 * number (weak: it takes its neighbours' dtype). */
typedef struct tgTy_type {
    tg_dtype dtype;
    int ndim;
    tg_term *size[TG_MAXDIM];
    int weak;
} tgTy_type;

/* What the kernels give: open makes the state of one run (types are
 * remembered there, by term, so a graph is typed once however often
 * its rules ask), NULL when out of memory; type_of types t: 1 with *out,
 * 0 when t does not type (the state must not be used again), -1 when
 * out of memory. */
typedef struct tgTy_typer {
    void *(*open)(tg_ctx *ctx);
    int (*type_of)(void *state, tg_term *t, tgTy_type *out);
} tgTy_typer;

/* Install typer t in rs (NULL: none; the built-ins then decline). */
void tgTy_set(tg_rules *rs, const tgTy_typer *t);

/* True when the symbol name (len bytes) starts with type:. */
int tgTy_reserved(const char *name, size_t len);

/* The built-in called name (len bytes, prefix included): its id, >= 0,
 * with its argument count and *test set for those whose value is 1 or
 * 0 (usable as a condition); -1 when unknown. */
int tgTy_lookup(const char *name, size_t len, int *nargs, int *test);

/* Apply built-in id to the n arguments: 1 with *out, 0 when it declines,
 * -1 when out of memory. */
int tgTy_apply(tg_rules *rs, int id, unsigned n, tg_term *const *args, tg_term **out);

#endif
