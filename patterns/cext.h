/* cext.h - C extension points of rule sets (module prefix tgX_): node
 * rewriters and condition predicates written in C and registered by name
 * through the public API.
 *
 * A C node rewriter is a tgW_rule like any other, so rewriters, queries,
 * tags, profiles and traces treat it by its name with no special case.
 * Its match program accepts every call of its op, and its body is
 *     E_CEXT a   (call C rewriter a on the call; no change fails the rule;
 *                 the result goes to R[0] and on the stack)
 *     E_FIRE     (counts, limits, hooks as for any rule)
 *     E_CRET     (the result; when it is a call of an op with rules, it is
 *                 reduced in the same frame)
 * Its right side is the variable ?result bound to R[0], so that
 * tgW_instantiate (traces) gives the C function's result.
 *
 * A C predicate is used in (when ...) as (NAME ARG ...) or under not; it
 * compiles to E_CPRED (a: the predicate, c: the argument count, pad: 1
 * when negated), which pops the arguments and calls it.
 */
#ifndef TG_CEXT_H
#define TG_CEXT_H

#include "rset.h"

/* The C predicate named by symbol name: its index, or -1. */
long tgX_pred_find(const tg_rules *rs, const tg_term *name);
unsigned tgX_pred_arity(const tg_rules *rs, long p);
/* Test predicate p on nargs arguments: 1, 0, or -1 with err filled (a
 * message naming the predicate). */
int tgX_pred_call(tg_rules *rs, long p, tg_term *const *args, unsigned nargs, tg_error *err);

/* Run C rewriter x (rule r) on call, a term: 1 with *out its
 * replacement, 0 for no change, -1 with err filled.  Nodes the function
 * creates are counted in r->built. */
int tgX_rewrite(tg_rules *rs, unsigned x, tgW_rule *r, tg_term *call, tg_term **out,
                tg_error *err);

/* Whether a C function of rs is running (it may not rewrite with rs). */
int tgX_busy(const tg_rules *rs);

#endif
