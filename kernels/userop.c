/* userop.c - elementwise ops given as C expressions (module prefix
 * tgUo_; the public tg_fn_def_elementwise).  The ops of a context hang on
 * its kernels registry (state.c), freed with it; a definition is never
 * replaced (a compiled function points at it), so a name is defined
 * once per context. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "error.h"
#include "state.h"
#include "tensor.h"
#include "userop.h"

static void free_ops(void *p)
{
    for (tgUo_op *o = p, *n; o; o = n) {
        n = o->next;
        free(o->name);
        free(o->expr);
        free(o);
    }
}

const tgUo_op *tgUo_find(tg_ctx *ctx, const char *name, size_t len)
{
    void **slot = tgSt_userops(ctx, 0, NULL);
    for (const tgUo_op *o = slot ? *slot : NULL; o; o = o->next)
        if (strlen(o->name) == len && memcmp(o->name, name, len) == 0)
            return o;
    return NULL;
}

char *tgUo_key_text(tg_ctx *ctx)
{
    void **slot = tgSt_userops(ctx, 0, NULL);
    tgB_buf b;
    tgB_init(&b);
    tgB_puts(&b, "");
    for (const tgUo_op *o = slot ? *slot : NULL; o; o = o->next)
        tgB_printf(&b, "userop %s %u %zu:%s\n", o->name, o->nargs, strlen(o->expr), o->expr);
    size_t len;
    return tgB_take(&b, &len);
}

/* Whether s is a name a term can hold as a symbol of its own. */
static int good_name(const char *s)
{
    if (!*s || (*s >= '0' && *s <= '9') || *s == '?' || *s == '-' || *s == '+' || *s == '.')
        return 0;
    for (; *s; s++)
        if (*s <= ' ' || strchr("()[]{}\";'`,#|\\", *s) || (unsigned char)*s >= 127)
            return 0;
    return 1;
}

int tg_fn_def_elementwise(tg_ctx *ctx, const char *name, unsigned nargs, const char *c_expr, tg_elementwise_fn fn,
                          void *ud, tg_error *err)
{
    if (!ctx || !name || !c_expr || !fn)
        return tgE_arg(err, "kernels: tg_fn_def_elementwise needs a context, a name, a C expression and a function"),
               -1;
    if (!good_name(name))
        return tgE_set(err, TG_ERR_ARG, NULL, 0, 0, "kernels: %.100s is not a name for an op", name), -1;
    if (nargs < 1 || nargs > TGUO_MAXARGS)
        return tgE_set(err, TG_ERR_ARG, NULL, 0, 0, "kernels: op %.100s: an elementwise op takes 1 to %d arguments, not %u",
                       name, TGUO_MAXARGS, nargs), -1;
    /* the expression goes into a generated C file: one expression, no
     * statements, comments or directives */
    const char *bad = strpbrk(c_expr, ";{}#\n\r\\\"'");
    int empty = strspn(c_expr, " \t") == strlen(c_expr);
    if (empty || bad || strstr(c_expr, "/*") || strstr(c_expr, "//"))
        return tgE_set(err, TG_ERR_ARG, NULL, 0, 0,
                       "kernels: op %.100s: the C expression must be one expression over x0 ... x%u (no ; { } # quotes, "
                       "comments or newlines): %.100s", name, nargs - 1, c_expr), -1;
    size_t nl = strlen(name);
    if (tgUo_find(ctx, name, nl) || tgV_builtin_op(name, nl))
        return tgE_set(err, TG_ERR_ARG, NULL, 0, 0, "kernels: op %.100s is defined already%s", name,
                       tgUo_find(ctx, name, nl) ? "" : " (an op of the vocabulary)"), -1;
    void **slot = tgSt_userops(ctx, 1, free_ops);
    tgUo_op *o = calloc(1, sizeof *o);
    if (!slot || !o || !(o->name = strdup(name)) || !(o->expr = strdup(c_expr))) {
        if (o) {
            free(o->name);
            free(o);
        }
        return tgE_nomem(err), -1;
    }
    o->nargs = nargs, o->fn = fn, o->ud = ud;
    o->next = *slot;
    *slot = o;
    return 0;
}
