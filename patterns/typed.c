/* typed.c - the type: built-ins of rules (typed.h): a subterm's dtype,
 * rank, sizes, broadcast pattern, and whether two subterms have one
 * type, asked of the typer the kernels install in the rule set. */
#include "typed.h"

#include <string.h>

enum { T_DTYPE, T_NDIM, T_SHAPE, T_BROADCAST, T_OF, T_SAME, T_FLOAT, T_COUNT };

static const struct {
    const char *name;
    int nargs, test;
} builtins[T_COUNT] = {
    [T_DTYPE] = {"type:dtype", 1, 0},   [T_NDIM] = {"type:ndim", 1, 0},
    [T_SHAPE] = {"type:shape", 1, 0},   [T_BROADCAST] = {"type:broadcast", 1, 0},
    [T_OF] = {"type:of", 1, 0},         [T_SAME] = {"type:same", 2, 1},
    [T_FLOAT] = {"type:float", 1, 1},
};

void tgTy_set(tg_rules *rs, const tgTy_typer *t)
{
    rs->typer = t;
    rs->typer_state = NULL;
}

int tgTy_reserved(const char *name, size_t len)
{
    return len >= TGTY_PREFIX_LEN && !memcmp(name, TGTY_PREFIX, TGTY_PREFIX_LEN);
}

int tgTy_lookup(const char *name, size_t len, int *nargs, int *test)
{
    for (int i = 0; i < T_COUNT; i++)
        if (strlen(builtins[i].name) == len && !memcmp(builtins[i].name, name, len)) {
            *nargs = builtins[i].nargs, *test = builtins[i].test;
            return i;
        }
    return -1;
}

/* The type of t: 1, 0 (no typer, or t does not type), -1 out of memory.
 * The typer's state lives for one run (tgW_limits_start counts runs):
 * sizes known by name are unified within one graph only. */
static int type_of(tg_rules *rs, tg_term *t, tgTy_type *out)
{
    if (!rs->typer)
        return 0;
    if (!rs->typer_state || rs->typer_run != rs->runs) {
        if (!(rs->typer_state = rs->typer->open(rs->ctx)))
            return -1;
        rs->typer_run = rs->runs;
    }
    int rc = rs->typer->type_of(rs->typer_state, t, out);
    if (rc <= 0)
        rs->typer_state = NULL;     /* a failed typing may have left it half-way */
    return rc;
}

static const char *dtype_name(tg_dtype d)
{
    static const char *const n[] = {"bool", "int32", "int64", "float32", "float64"};
    return (unsigned)d < sizeof n / sizeof *n ? n[d] : "?";
}

static int same(const tgTy_type *a, const tgTy_type *b)
{
    if (a->dtype != b->dtype || a->ndim != b->ndim || a->weak != b->weak)
        return 0;
    for (int d = 0; d < a->ndim; d++)
        if (a->size[d] != b->size[d])
            return 0;
    return 1;
}

/* (SIZE ...), or with bcast the broadcast pattern (true where the size
 * is 1, false elsewhere). */
static tg_term *sizes(tg_ctx *ctx, const tgTy_type *ty, int bcast)
{
    tg_term *e[TG_MAXDIM], *one = tg_int(ctx, 1), *yes = tg_symbol_cstr(ctx, "true"),
                           *no = tg_symbol_cstr(ctx, "false");
    if (!one || !yes || !no)
        return NULL;
    for (int d = 0; d < ty->ndim; d++)
        e[d] = bcast ? (ty->size[d] == one ? yes : no) : ty->size[d];
    return tg_list(ctx, (size_t)ty->ndim, e, NULL);
}

int tgTy_apply(tg_rules *rs, int id, unsigned n, tg_term *const *args, tg_term **out)
{
    tg_ctx *ctx = rs->ctx;
    tgTy_type a, b;
    if (id < 0 || id >= T_COUNT || n != (unsigned)builtins[id].nargs)
        return 0;
    int rc = type_of(rs, args[0], &a);
    if (rc <= 0)
        return rc;
    if (id == T_SAME && (rc = type_of(rs, args[1], &b)) <= 0)
        return rc;
    switch (id) {
    case T_DTYPE:
        *out = tg_symbol_cstr(ctx, dtype_name(a.dtype));
        break;
    case T_NDIM:
        *out = tg_int(ctx, a.ndim);
        break;
    case T_SHAPE: case T_BROADCAST:
        *out = sizes(ctx, &a, id == T_BROADCAST);
        break;
    case T_OF: {
        tg_term *e[3] = {tg_symbol_cstr(ctx, dtype_name(a.dtype)), sizes(ctx, &a, 0), tg_symbol_cstr(ctx, "weak")};
        *out = e[0] && e[1] && e[2] ? tg_list(ctx, a.weak ? 3 : 2, e, NULL) : NULL;
        break;
    }
    case T_SAME:
        *out = tg_int(ctx, same(&a, &b));
        break;
    default:    /* T_FLOAT */
        *out = tg_int(ctx, a.dtype == TG_FLOAT32 || a.dtype == TG_FLOAT64);
        break;
    }
    return *out ? 1 : -1;
}
