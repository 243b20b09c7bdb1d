/* instantiate.c - a rule's right side with its variables replaced by
 * their values (tgW_instantiate), built as a term without the machine,
 * num: built-ins computed on the way.
 */
#include "rset.h"
#include "arith.h"
#include "typed.h"

#include <gc/gc.h>

/* t made canonical, or, when t calls a num: built-in that computes,
 * the value it computes (as the machine's right sides do; one that
 * declines stays as written). */
static tg_term *builtin_value(tg_rules *rs, tg_term *t)
{
    tg_term *h = tg_car(t);
    size_t len, n = tg_length(t) - 1;
    const char *nm = tg_kind_of(h) == TG_SYMBOL ? tg_symbol_name(h, &len) : NULL;
    int amin, amax, test, id;
    int typed = nm && tgTy_reserved(nm, len) && (id = tgTy_lookup(nm, len, &amin, &test)) >= 0;
    if (typed)
        amax = amin;
    if (!typed && (!nm || !tgQ_reserved(nm, len) || (id = tgQ_lookup(nm, len, &amin, &amax, &test)) < 0))
        return tgW_ac_canon(rs, t);
    if ((int)n < amin || (amax >= 0 && (int)n > amax) || tg_tail(t) != tg_nil())
        return tgW_ac_canon(rs, t);
    tg_term **args = GC_MALLOC((n ? n : 1) * sizeof *args), *out;
    tg_iter it;
    tg_iter_init(&it, t);
    tg_iter_next(&it);   /* the head */
    for (size_t i = 0; args && i < n; i++)
        args[i] = tg_iter_next(&it);
    if (!args)
        return NULL;
    int st = typed ? tgTy_apply(rs, id, (unsigned)n, args, &out) : tgQ_apply(rs->ctx, id, (unsigned)n, args, &out);
    return st < 0 ? NULL : st == 1 ? out : t;
}

/* Right sides are nested at most as deep as compiling allows, so this
 * recursion is bounded. */
static tg_term *subst(tg_rules *rs, const tgW_rule *r, tg_term *const *R, tg_term *e)
{
    if (tg_kind_of(e) == TG_VAR) {
        for (uint32_t i = 0; i < r->nvars; i++)
            if (r->vars[i] == e)
                return R[r->vregs[i]];
        return e;
    }
    if (!tgT_ispair(e))
        return e;
    if (e->e[0] == tg_symbol_cstr(rs->ctx, "quote") && tg_length(e) == 2 && tg_tail(e) == TGT_NIL)
        return tg_nth(e, 1);   /* quoted data stands for itself */
    size_t n = tg_length(e);
    tg_term **v = GC_MALLOC((n ? n : 1) * sizeof *v);
    if (!v)
        return NULL;
    tg_iter it = {e, 0};
    size_t i = 0;
    for (tg_term *x; (x = tgT_iter_next(&it));)
        if (!(v[i++] = subst(rs, r, R, x)))
            return NULL;
    tg_term *tl = (tg_term *)it.node;
    if (tl != TGT_NIL && !(tl = subst(rs, r, R, tl)))
        return NULL;
    tg_term *t = tg_list(rs->ctx, n, v, tl);
    return t ? builtin_value(rs, t) : NULL;
}

tg_term *tgW_instantiate(tg_rules *rs, const tgW_rule *r, tg_term *const *R)
{
    return subst(rs, r, R, r->rhs);
}
