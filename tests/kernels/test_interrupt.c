/* test_interrupt.c - tg_fn_interrupt: a scan of 10^11 steps, compiled and
 * interpreted, stopped from another thread (as a signal handler would:
 * the call only sets a flag) fails with "interrupted" within a bounded
 * time; a request made between calls is dropped; the function then runs
 * a short scan again, its value checked against a hand-written loop. */
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "tgrel.h"

static tg_fn *target;

static void *stopper(void *ud)
{
    (void)ud;
    usleep(200 * 1000);
    tg_fn_interrupt(target);
    return NULL;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static tg_fn *compile(tg_ctx *ctx, const char *steps, int interpret)
{
    char text[256];
    snprintf(text, sizeof text,
             "(scan (lambda (a) ((add a 3))) (steps %s) (sequences) (outputs (sitsot 0 last)) "
             "(non_sequences))", steps);
    tg_error err;
    tg_error_clear(&err);
    tg_term *t = tg_read_cstr(ctx, text, &err);
    tg_fn_options o;
    memset(&o, 0, sizeof o);
    o.interpret = interpret;
    return t ? tg_fn_compile(ctx, 0, NULL, 1, &t, &o, &err) : NULL;
}

static void run(tg_ctx *ctx, int interpret)
{
    const char *path = interpret ? "interpreted" : "compiled";
    tg_fn *fn = compile(ctx, "100000000000", interpret);
    TAP_CHECK(fn != NULL, "%s: a scan of 10^11 steps", path);
    if (!fn)
        return;
    if (!interpret)
        TAP_CHECK(tg_fn_native(fn), "compiled: it is native code");
    int64_t v = -1;
    tg_array out;
    tg_array_init(&out, TG_INT64, 0, NULL, &v);
    tg_error err;
    tg_error_clear(&err);
    target = fn;
    pthread_t th;
    pthread_create(&th, NULL, stopper, NULL);
    double t0 = now();
    int rc = tg_fn_call(fn, NULL, &out, &err);
    double dt = now() - t0;
    pthread_join(th, NULL);
    TAP_CHECK(rc == -1 && strstr(err.message, "interrupted"), "%s: the call fails with interrupted (%s)",
              path, err.message);
    TAP_CHECK(dt < 10.0, "%s: within a bounded time (%.3f s after a request at 0.2 s)", path, dt);
    tg_fn_free(fn);

    /* a request made while nothing runs is dropped by the next call */
    fn = compile(ctx, "1000", interpret);
    tg_fn_interrupt(fn);
    tg_error_clear(&err);
    rc = fn ? tg_fn_call(fn, NULL, &out, &err) : -1;
    int64_t want = 0;
    for (int k = 0; k < 1000; k++)
        want += 3;
    TAP_CHECK(rc == 0 && v == want, "%s: a request between calls is dropped; the next call runs (%lld)",
              path, (long long)v);
    tg_fn_free(fn);
}

int main(void)
{
    tg_ctx *ctx = tg_ctx_new(NULL);
    run(ctx, 0);
    run(ctx, 1);
    tg_fn_interrupt(NULL);     /* no function: nothing to do, and no crash */
    tg_ctx_free(ctx);
    return TAP_DONE();
}
