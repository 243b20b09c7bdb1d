/* test_threads.c - no global state outside a context: two threads, each
 * with its own context, rule set and logic environment, load rules,
 * normalize (plain and memo), rewrite, list and run queries at the same
 * time, and get exactly what one thread alone gets; and a collection that
 * another thread starts in the middle of a sort of assoc / comm arguments
 * still sees every argument. */
#define GC_THREADS 1
#include <gc/gc.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "harness.h"
#include "tgrel.h"

enum { ROUNDS = 300 };

static void why(const tg_error *err)
{
    char buf[1024];
    printf("# %s\n", tg_error_format(err, buf, sizeof buf));
}

/* Everything one thread computes, printed into out (empty on failure,
 * with the reason printed). */
static void session(char *out, size_t cap)
{
    tg_error err;
    tg_error_clear(&err);
    out[0] = '\0';
    tg_ctx *ctx = tg_ctx_new(&err);
    tg_rules *rs = ctx ? tg_rules_new(ctx, &err) : NULL;
    if (!rs || tg_rules_load_file(rs, tap_path("tests/patterns/data/fib.rules"), &err) < 0) {
        why(&err);
        return;
    }
    const char *more = "(op neg (arity 1)) (rule neg-neg (neg (neg ?x)) => ?x)\n"
                       "(walk w neg-neg) (defrel (twino x y) (== x y))";
    if (tg_rules_load_string(rs, more, strlen(more), NULL, &err) < 0) {
        why(&err);
        return;
    }
    const char *forms[] = {
        "(normalize (fib (s (s (s (s (s (s (s (s d0))))))))))",
        "(normalize (fib (s (s (s (s (s (s (s (s (s (s d0))))))))))) memo)",
        "(rewrite w (neg (neg (neg (neg (neg a))))))",
        "(run* (a b) (appendo a b '(1 2 3 4)))",
        "(run 3 (q) (twino q 7))",
    };
    size_t n = 0;
    for (int round = 0; round < ROUNDS; round++)
        for (size_t i = 0; i < sizeof forms / sizeof *forms; i++) {
            tg_term *f = tg_read_cstr(ctx, forms[i], &err), *v = NULL;
            int rc = f ? tg_rules_eval(rs, f, NULL, NULL, &v, &err) : -1;
            if (rc == TG_EVAL_RUN)
                v = tg_run(tg_rules_env(rs, &err), f, &err);
            char *s = v ? tg_print(v, NULL) : NULL;
            if (!s) {
                why(&err);
                out[0] = '\0';
                return;
            }
            if (round == 0)     /* the first round's text; later ones must agree */
                n += (size_t)snprintf(out + n, n < cap ? cap - n : 0, "%s\n", s);
            else if (!strstr(out, s))
                out[0] = '\0';
            free(s);
        }
    tg_term *l = tg_rules_list(rs, TG_LIST_RULES, &err);
    char *s = l ? tg_print(l, NULL) : NULL;
    if (s && n < cap)
        snprintf(out + n, cap - n, "%s\n", s);
    free(s);
    tg_rules_free(rs);
    tg_ctx_free(ctx);
}

typedef struct worker {
    char out[8192];
} worker;

static void *work(void *p)
{
    worker *w = p;
    session(w->out, sizeof w->out);
    return NULL;
}

/* The merge sort of comm arguments (patterns/ac.c, internal): its pass
 * that writes the caller's array back holds some elements only in the
 * sort's buffer, which must be memory the collector scans. */
int tgW_ac_sort(tg_term **a, size_t n);

static atomic_int stop_collecting, collections;

static void *collect(void *u)
{
    (void)u;
    while (!atomic_load(&stop_collecting)) {
        GC_gcollect();
        atomic_fetch_add(&collections, 1);
    }
    return NULL;
}

/* Fresh terms held only by the array being sorted, while another thread
 * collects over and over.  A disappearing link on each (which does not
 * keep it alive) is cleared if a collection ever found it unreachable. */
static void test_sort_while_collecting(void)
{
    enum { N = 200000 };
    tg_error err;
    tg_ctx *ctx = tg_ctx_new(&err);
    tg_term **a = GC_MALLOC(N * sizeof *a);
    void **link = malloc(N * sizeof *link);
    if (!ctx || !a || !link) {
        TAP_CHECK(0, "set up the sort");
        free(link);
        return;
    }
    for (size_t i = 0; i < N; i++) {    /* descending: every pass moves them */
        a[i] = tg_double(ctx, (double)(N - i) + 0.5);
        link[i] = (void *)GC_HIDE_POINTER(a[i]);
        GC_general_register_disappearing_link(&link[i], a[i]);
    }
    pthread_t th;
    int started = GC_pthread_create(&th, NULL, collect, NULL) == 0;
    while (started && atomic_load(&collections) < 1)
        ;   /* the collecting thread is under way */
    int rc = tgW_ac_sort(a, N);     /* 1: the descending order was changed */
    atomic_store(&stop_collecting, 1);
    if (started)
        GC_pthread_join(th, NULL);
    size_t lost = 0, wrong = 0;
    for (size_t i = 0; i < N; i++) {
        lost += link[i] == NULL;
        double d;
        wrong += tg_double_get(a[i], &d) != 0 || d != (double)(i + 1) + 0.5;
    }
    TAP_DIAG("%d collections during the sort", atomic_load(&collections));
    TAP_CHECK(started && rc == 1, "a sort runs while another thread collects");
    TAP_EQ_INT((intmax_t)lost, 0, "no argument was found unreachable in the middle of the sort");
    TAP_EQ_INT((intmax_t)wrong, 0, "and every argument is in its place afterwards");
    for (size_t i = 0; i < N; i++)
        if (link[i])
            GC_unregister_disappearing_link(&link[i]);
    free(link);
    tg_ctx_free(ctx);
}

int main(void)
{
    GC_INIT();
    static worker alone, w[2];
    session(alone.out, sizeof alone.out);
    TAP_CHECK(alone.out[0] != '\0', "one thread alone computes its session");
    pthread_t th[2];
    int started = 1;
    for (int i = 0; i < 2; i++)
        started &= GC_pthread_create(&th[i], NULL, work, &w[i]) == 0;
    for (int i = 0; i < 2; i++)
        GC_pthread_join(th[i], NULL);
    TAP_CHECK(started, "two threads start");
    TAP_EQ_STR(w[0].out, alone.out, "the first thread gets what one thread alone gets");
    TAP_EQ_STR(w[1].out, alone.out, "and so does the second, at the same time");
    test_sort_while_collecting();
    return TAP_DONE();
}
