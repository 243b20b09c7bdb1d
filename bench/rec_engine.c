/* rec_engine.c - one run of a REC benchmark on the rewriting engine
 * (rec_engine.h): the rules loaded into a fresh context, each query
 * normalised under the clock (CPU and wall milliseconds of the
 * tg_normalize calls only) and checked against its expected normal form. */
#include "tgrel.h"
#include "bench.h"
#include "rec_engine.h"
#include "rec_hash.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

__attribute__((noinline)) void tg_rec_clear_stack(void)
{
    volatile uint64_t words[(256 << 10) / sizeof(uint64_t)];
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        words[i] = 0;
}

static int set_reason(tg_rec_run *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->reason, sizeof r->reason, fmt, ap);
    va_end(ap);
    r->verdict = 0;
    return -1;
}

/* ---- checking a normal form ----------------------------------------------- */

/* nf against the eval's expectations: the expected term (same pointer,
 * terms being hash-consed) and the hash, byte and symbol counts. */
static int check(tg_rec_run *r, size_t i, const tg_rec_eval *e, tg_term *nf, tg_term *want)
{
    char why[500];
    if (want && nf != want)
        return set_reason(r, "eval %zu: normal form differs from expect", i + 1);
    if (!e->has_sha)
        return want ? 0 : 1;
    if (!tg_rec_hash_check(nf, e->sha, e->bytes, e->symbols, why, sizeof why))
        return set_reason(r, "eval %zu: %s", i + 1, why);
    return 0;
}

/* ---- one repetition ------------------------------------------------------- */

static int fail_err(tg_rec_run *r, const char *what, const tg_error *err)
{
    char msg[560];
    return set_reason(r, "%s: %s", what, tg_error_format(err, msg, sizeof msg));
}

/* Normalise eval i in rs, timed, then check it (0 ok, 1 nothing to check,
 * -1 wrong or failed). */
static int run_eval(tg_rec_run *r, tg_ctx *ctx, tg_rules *rs, const tg_rec_eval *e, size_t i,
                    unsigned flags)
{
    tg_error err;
    unsigned long long rw = 0, cond = 0;
    tg_term *want, *q = tg_read_cstr(ctx, e->query, &err);
    if (!q)
        return fail_err(r, "reading a query", &err);
    double c0 = bench_process_cpu_ms(), w0 = bench_now_ms();
    tg_term *nf = tg_normalize(rs, q, flags, &err);
    r->cpu_ms += bench_process_cpu_ms() - c0;
    r->wall_ms += bench_now_ms() - w0;
    if (!nf)
        return fail_err(r, "tg_normalize", &err);
    tg_rules_counts(rs, &rw, &cond);
    r->rewrites += rw;
    r->conditions += cond;
    /* read only now, so that its nodes do not wait in the table for the
     * engine to find */
    want = e->expect ? tg_read_cstr(ctx, e->expect, &err) : NULL;
    if (e->expect && !want)
        return fail_err(r, "reading an expected normal form", &err);
    return check(r, i, e, nf, want);
}

/* A whole benchmark once, from a fresh context. */
void tg_rec_run_once(const tg_rec_spec *spec, const char *file, int memo, tg_rec_run *r)
{
    tg_error err;
    char label[512];
    tg_rules *rs = NULL;
    tg_ctx *ctx;
    tg_rec_clear_stack();   /* no normal form of an earlier run left there */
    ctx = tg_ctx_new(&err);
    memset(r, 0, sizeof *r);
    r->verdict = 1;
    snprintf(label, sizeof label, "%s (as .rules)", file);
    if (!ctx) {
        fail_err(r, "tg_ctx_new", &err);
        return;
    }
    if (!(rs = tg_rules_new(ctx, &err)))
        fail_err(r, "tg_rules_new", &err);
    else if (tg_rules_load_string(rs, spec->rules, spec->rules_len, label, &err) < 0)
        fail_err(r, "loading the rules", &err);
    for (size_t i = 0; rs && r->verdict && i < spec->n_evals; i++) {
        int rc = run_eval(r, ctx, rs, &spec->evals[i], i, memo ? TG_NF_MEMO : 0);
        if (rc == 1 && r->verdict == 1) {
            r->verdict = -1;
            snprintf(r->reason, sizeof r->reason, "eval %zu has no expected normal form", i + 1);
        }
    }
    if (rs)
        tg_rules_free(rs);
    tg_ctx_free(ctx);
}
