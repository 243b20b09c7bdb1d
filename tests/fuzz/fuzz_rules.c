/* fuzz_rules.c - libFuzzer target for the .rules loader and the forms
 * the REPL evaluates.
 *
 * The input up to its first NUL byte is loaded as a .rules text; the
 * bytes after it are read as forms and evaluated one by one
 * (tg_rules_eval_read: rewrites, normal forms, queries, definitions).
 * What is checked, by abort() (how a fuzz target reports):
 *  - every error has a message, and a position where it names the text;
 *  - loading is all or nothing: after a failed load the ops, rules,
 *    rewriters and relations listed are the very same terms as before
 *    (hash-consing makes that a pointer comparison);
 *  - what tg_rules_list prints of ops and rules loads into a fresh rule
 *    set and lists back as the same terms.
 * Inputs naming `include` are skipped: an include may open any file of
 * the machine (a device, a fifo), which is not what is under test here.
 * Rewrites and searches may not terminate; a watchdog thread interrupts
 * one that runs longer than WATCHDOG_MS, through tg_rules_interrupt, the
 * call Ctrl-C makes in the REPL, so that path is fuzzed too.
 *
 *   ./configure CC=clang --enable-fuzz && make fuzz
 */
#define _GNU_SOURCE   /* memmem */

#include "fuzz.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WATCHDOG_MS 200
#define MAX_ANSWERS 8

static _Atomic(tg_rules *) running;     /* the rule set at work, or NULL */
static atomic_llong started_ms;          /* when its work began */

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void *watchdog(void *unused)
{
    (void)unused;
    for (;;) {
        struct timespec ts = {0, 10 * 1000000};
        nanosleep(&ts, NULL);
        tg_rules *rs = atomic_load(&running);
        if (rs && now_ms() - atomic_load(&started_ms) > WATCHDOG_MS)
            tg_rules_interrupt(rs);   /* only sets flags: safe from any thread */
    }
    return NULL;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_init("fuzz_rules");
    pthread_t th;
    if (pthread_create(&th, NULL, watchdog, NULL) != 0)
        fail("no watchdog thread", NULL);
    pthread_detach(th);
    return 0;
}

static void check_error(const tg_error *err, int positioned)
{
    if (err->code == TG_ERR_NOMEM)
        return;
    if (err->code == TG_OK || !err->message[0])
        fail("an error without a code or a message", err->message);
    if (positioned && err->code == TG_ERR_SYNTAX && (err->line < 1 || err->column < 1))
        fail("a syntax error without a position", err->message);
}

static void lists(tg_rules *rs, tg_term *out[4])
{
    tg_error err;
    for (int k = 0; k < 4; k++)
        if (!(out[k] = tg_rules_list(rs, (tg_list_kind)k, &err)) && err.code != TG_ERR_NOMEM)
            fail("tg_rules_list failed", err.message);
}

/* Load the printed ops and rules of rs into a fresh set: it must list
 * them back as the same terms. */
static void relist(tg_rules *rs, tg_term *const l[4])
{
    if (!l[0] || !l[1])
        return;
    size_t n0, n1;
    char *ops = tg_print(l[0], &n0), *rules = tg_print(l[1], &n1);
    tg_error err;
    tg_rules *fresh = tg_rules_new(ctx, &err);
    if (!ops || !rules || !fresh)
        goto out;
    /* the lists print as one parenthesized list each: drop the outer
     * parentheses to get the forms */
    int ok = tg_rules_load_string(fresh, ops + 1, n0 - 2, "ops", &err) == 0 &&
             tg_rules_load_string(fresh, rules + 1, n1 - 2, "rules", &err) == 0;
    if (!ok && err.code != TG_ERR_NOMEM) {
        fprintf(stderr, "ops: %s\nrules: %s\n", ops, rules);
        fail("the listed ops and rules do not load again", err.message);
    }
    tg_term *again[4];
    lists(fresh, again);
    if (ok && again[0] && again[1] && (again[0] != l[0] || again[1] != l[1])) {
        fprintf(stderr, "ops: %s\nrules: %s\n", ops, rules);
        fail("the listed ops and rules list back differently", NULL);
    }
out:
    (void)rs;
    free(ops);
    free(rules);
    tg_rules_free(fresh);
}

static int answer(void *ud, tg_term *a)
{
    (void)a;
    return ++*(int *)ud >= MAX_ANSWERS;
}

static void eval_forms(tg_rules *rs, const char *text, size_t len)
{
    tg_error err;
    tg_reader *r = tg_reader_new(ctx, text, len, "forms", &err);
    if (!r)
        return;
    tg_reader_track_positions(r, 1);
    for (;;) {
        tg_term *form = NULL, *value = NULL;
        int st = tg_reader_next(r, &form, &err);
        if (st == 0)
            break;
        if (st < 0) {
            check_error(&err, 1);
            continue;
        }
        int answers = 0;
        atomic_store(&started_ms, now_ms());
        atomic_store(&running, rs);
        st = tg_rules_eval_read(rs, r, form, answer, &answers, &value, &err);
        atomic_store(&running, NULL);
        if (st < 0)
            check_error(&err, 0);
        else if (st == TG_EVAL_VALUE && !value)
            fail("a value form without a value", NULL);
    }
    tg_reader_free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    if (memmem(text, size, "include", 7))
        return 0;
    const char *nul = memchr(text, 0, size);
    size_t rlen = nul ? (size_t)(nul - text) : size;
    tg_error err;
    tg_rules *rs = tg_rules_new(ctx, &err);
    if (!rs)
        return 0;
    /* a first load that succeeds gives the second something to keep */
    static const char base[] = "(op f (arity 1)) (op g (arity 2)) (rule base-f (f (f ?x)) => ?x)";
    if (tg_rules_load_string(rs, base, sizeof base - 1, "base", &err) < 0)
        fail("the base rules do not load", err.message);
    tg_term *before[4], *after[4];
    lists(rs, before);
    atomic_store(&started_ms, now_ms());
    atomic_store(&running, rs);
    int st = tg_rules_load_string(rs, text, rlen, "fuzz.rules", &err);
    atomic_store(&running, NULL);
    lists(rs, after);
    if (st < 0) {
        check_error(&err, 1);
        for (int k = 0; k < 4; k++)
            if (before[k] && after[k] && before[k] != after[k]) {
                static const char *what[4] = {"ops", "rules", "rewriters", "relations"};
                fprintf(stderr, "%s changed; error: %s\n", what[k], err.message);
                fail("a failed load left something loaded", tg_print(after[k], NULL));
            }
    } else {
        relist(rs, after);
    }
    if (nul)
        eval_forms(rs, nul + 1, size - rlen - 1);
    tg_rules_free(rs);
    return 0;
}
