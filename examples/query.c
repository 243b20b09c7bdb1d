/* query.c - a miniKanren query from C: define a relation, compile a run
 * once, and take its answers one by one as the search finds them.
 * Build: cc query.c $(pkg-config --cflags --libs tgrel) */
#include <stdio.h>

#include <tgrel.h>

static int fail(const tg_error *err)
{
    char msg[1024];
    fprintf(stderr, "query: %s\n", tg_error_format(err, msg, sizeof msg));
    return 1;
}

/* Called with each answer as it is found; nonzero would stop the run. */
static int print_answer(void *ud, tg_term *answer)
{
    int *count = ud;
    printf("answer %d: ", ++*count);
    tg_fprint(stdout, answer);
    putchar('\n');
    return 0;
}

int main(void)
{
    tg_error err;
    tg_ctx *ctx = tg_ctx_new(&err);
    tg_env *env = ctx ? tg_env_new(ctx, &err) : NULL;
    if (!env)
        return fail(&err);
    /* (splito l a b): l is a followed by b, a not empty */
    tg_term *def = tg_read_cstr(ctx,
        "(defrel (splito l a b) (fresh (h t) (== a (cons h t)) (appendo a b l)))", &err);
    if (!def || tg_eval(env, def, NULL, NULL, NULL, &err) < 0)
        return fail(&err);
    tg_term *run = tg_read_cstr(ctx, "(run* (a b) (splito '(1 2 3) a b))", &err);
    tg_query *q = run ? tg_query_new(env, run, &err) : NULL;
    if (!q)
        return fail(&err);
    int count = 0;
    long n = tg_query_run(q, print_answer, &count, &err);
    if (n < 0)
        return fail(&err);
    printf("%ld answers\n", n);
    tg_query_free(q);
    tg_env_free(env);
    tg_ctx_free(ctx);
    return 0;
}
