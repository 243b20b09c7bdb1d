/* test_profile.c - profiles: a function's (stage times that add up to no
 * more than the compile, the compiler and code generation skipped on a
 * cache hit, the rewrite read from the cache, node counts before and
 * after rewriting against a count made here, calls counted and their time
 * within the time measured around them, on both paths), and the timed
 * rewrite profile (its tree nests as the rewriters do, its firings per
 * part add up to the flat profile's, each equilibrium pass listed, rule
 * times only while timing is on). */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "kt.h"

static tg_ctx *ctx;
static char dir[] = "/tmp/tgrel-profile-test-XXXXXX";

static double wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Distinct compound subterms of t, by a walk that keeps every pair met
 * (small terms: a linear search). */
static size_t count_pairs(tg_term *t, tg_term **seen, size_t *n)
{
    if (tg_kind_of(t) != TG_PAIR)
        return 0;
    for (size_t i = 0; i < *n; i++)
        if (seen[i] == t)
            return 0;
    seen[(*n)++] = t;
    size_t c = 1;
    tg_iter it;
    tg_iter_init(&it, t);
    for (tg_term *e; (e = tg_iter_next(&it));)
        c += count_pairs(e, seen, n);
    return c;
}

static size_t nodes_of(tg_term *t)
{
    static tg_term *seen[4096];
    size_t n = 0;
    return count_pairs(t, seen, &n);
}

static const char rules_text[] =
    "(op mul (arity 2)) (op add (arity 2)) (op exp (arity 1))\n"
    "(rule mul-one (mul ?x 1) => ?x)\n"
    "(rule add-zero (add ?x 0) => ?x)\n"
    "(rule add-self (add ?x ?x) => (mul ?x 2))\n"
    "(equilibrium simplify mul-one add-zero)\n"
    "(walk doubling add-self)\n"
    "(sequence default (0 simplify) (1 doubling))\n";

static void test_fn_profile(void)
{
    tg_error err;
    tg_rules *rs = kt_rules(ctx, rules_text, "prof.rules");
    tg_term *x = tg_read_cstr(ctx, "(input x float64 (n))", &err);
    tg_term *out = tg_read_cstr(ctx, "(add (exp (mul (input x float64 (n)) 1)) (add (exp (input x float64 (n))) 0))", &err);
    TAP_CHECK(rs && x && out, "the rules and terms read");
    if (!rs || !x || !out)
        return;
    KT_EACH_PATH {
        for (int round = 0; round < 2; round++) {
            tg_fn_options o = {.rules = rs, .interpret = kt_path};
            double t0 = wall_ms();
            tg_fn *fn = tg_fn_compile(ctx, 1, &x, 1, &out, &o, &err);
            double compile_wall = wall_ms() - t0;
            tg_fn_stats st;
            TAP_CHECK(fn && tg_fn_profile(fn, &st) == 0, "compiled, round %d", round);
            if (!fn)
                continue;
            double stages = st.grad_ms + st.rewrite_ms + st.type_ms + st.schedule_ms + st.codegen_ms + st.cc_ms +
                            st.load_ms;
            TAP_CHECK(st.compile_ms > 0 && stages <= st.compile_ms * 1.0001 && st.compile_ms <= compile_wall * 1.0001,
                      "stages %.3f ms <= compile %.3f ms <= measured %.3f ms", stages, st.compile_ms, compile_wall);
            TAP_CHECK(st.rewrite_ms > 0 && st.type_ms > 0 && st.schedule_ms > 0, "rewriting, typing, scheduling timed");
            /* (exp x) + (exp x), after rewriting: (mul (exp x) 2) */
            tg_term *want = tg_read_cstr(ctx, "(mul (exp (input x float64 (n))) 2)", &err);
            TAP_EQ_INT(st.nodes_before, nodes_of(out), "st.nodes_before");
            TAP_EQ_INT(st.nodes_after, nodes_of(want), "st.nodes_after");
            TAP_EQ_INT(st.rewrite_cached, round == 1, "st.rewrite_cached");
            TAP_EQ_INT(st.native, tg_fn_native(fn), "st.native");
            if (kt_path == 0 && st.native) {
                TAP_EQ_INT(st.code_cached, round == 1, "st.code_cached");
                if (round == 0)
                    TAP_CHECK(st.cc_ms > 0 && st.codegen_ms > 0, "a miss generates code and compiles it");
                else
                    TAP_CHECK(st.cc_ms == 0 && st.codegen_ms == 0, "a hit neither generates nor compiles");
            } else {
                TAP_CHECK(st.cc_ms == 0 && st.codegen_ms == 0 && !st.code_cached, "no code for the interpreter");
            }
            TAP_CHECK(st.calls == 0 && st.call_ms == 0, "no call yet");
            /* calls: counted, and their time within the time around them */
            /* long calls (every one timed): their time is far above the
             * clock's grain and each is counted as it ran */
            static double xs[1 << 14], os[1 << 14];
            for (int i = 0; i < 1 << 14; i++)
                xs[i] = i % 4;
            int64_t n = 1 << 14;
            tg_array in, res;
            tg_array_init(&in, TG_FLOAT64, 1, &n, xs);
            tg_array_init(&res, TG_FLOAT64, 1, &n, os);
            /* the first 64 calls are each timed (fn.c's CALLS_TIMED): their
             * sum lies within the time around them; the later ones are
             * sampled, an estimate that a preempted sample can inflate */
            int ok = 1, calls = 500, first = 50;
            double c0 = wall_ms();
            for (int i = 0; i < first; i++)
                ok &= tg_fn_call(fn, &in, &res, &err) == 0;
            double around = wall_ms() - c0;
            tg_fn_profile(fn, &st);
            double first_ms = st.call_ms;
            for (int i = first; i < calls; i++)
                ok &= tg_fn_call(fn, &in, &res, &err) == 0;
            TAP_CHECK(ok && kt_close(os[3], 2 * exp(3.0), KT_ULPS), "the calls compute 2 exp(x)");
            int64_t bad_n = 5;
            tg_array bad;
            tg_array_init(&bad, TG_FLOAT64, 1, &bad_n, xs);
            TAP_CHECK(tg_fn_call(fn, &in, &bad, &err) < 0, "a call with a wrong output shape fails");
            tg_fn_profile(fn, &st);
            TAP_EQ_INT(st.calls, (unsigned long long)calls + 1, "st.calls");
            TAP_CHECK(first_ms > 0 && first_ms <= around + 0.001,
                      "%d calls took %.4f ms of the %.4f ms around them", first, first_ms, around);
            TAP_CHECK(st.call_ms > first_ms, "the later calls add their time (%.4f ms in all)", st.call_ms);
            char *text = NULL;
            size_t len = 0;
            FILE *f = open_memstream(&text, &len);
            tg_fn_profile_print(&st, f);
            fclose(f);
            char want_calls[64];
            snprintf(want_calls, sizeof want_calls, "calls %d, ", calls + 1);
            TAP_CHECK(text && strstr(text, "compile ") && strstr(text, want_calls) &&
                      strstr(text, st.native ? "native code" : "interpreted code"),
                      "the printed profile names the compile and the calls");
            free(text);
            tg_fn_free(fn);
        }
        /* the next path starts from an empty cache */
        char cmd[200];
        snprintf(cmd, sizeof cmd, "rm -f %s/*", dir);
        TAP_CHECK(system(cmd) == 0, "cache emptied");
    }
    tg_fn_stats st;
    TAP_CHECK(tg_fn_profile(NULL, &st) < 0, "no profile of no function");
    tg_fn *fn = kt_compile(ctx, "(input x float64 (n))", "(exp (input x float64 (n)))", NULL, 1, &err);
    TAP_CHECK(fn && tg_fn_profile(fn, NULL) < 0, "no profile into nowhere");
    if (fn && tg_fn_profile(fn, &st) == 0)
        TAP_CHECK(st.rewrite_ms == 0 && st.nodes_before == st.nodes_after && st.nodes_before == 3,
                  "without rules: nothing rewritten, the nodes counted once");
    /* short calls: the first 64 timed, then one in 8, the rest estimated */
    tg_fn_free(fn);
    fn = kt_compile(ctx, "(input x float64 (n))", "(exp (input x float64 (n)))", NULL, 0, &err);
    if (fn) {
        double x1 = 2, o1;
        int64_t one = 1;
        tg_array in, res;
        tg_array_init(&in, TG_FLOAT64, 1, &one, &x1);
        tg_array_init(&res, TG_FLOAT64, 1, &one, &o1);
        int ok = 1;
        for (int i = 0; i < 1000; i++)
            ok &= tg_fn_call(fn, &in, &res, &err) == 0;
        ok &= tg_fn_profile(fn, &st) == 0;
        TAP_CHECK(ok && st.calls == 1000 && st.call_ms > 0,
                  "short calls counted, their time estimated: %.2f us per call", st.call_ms * 1e3 / 1000);
    }
    tg_fn_free(fn);
    tg_rules_free(rs);
}

/* The firings of one rule in a (rules (RULE MS FIRED BUILT TRIED) ...) list. */
static long fired_in(tg_term *rules, const char *name)
{
    tg_iter it;
    tg_iter_init(&it, rules);
    tg_iter_next(&it);
    for (tg_term *r; (r = tg_iter_next(&it));)
        if (tg_car(r) == tg_symbol_cstr(ctx, name)) {
            int64_t v;
            return tg_int_get(tg_nth(r, 2), &v) == 0 ? (long)v : -1;
        }
    return 0;
}

/* The clause (HEAD ...) of a rewriter's profile term. */
static tg_term *clause(tg_term *t, const char *head)
{
    tg_iter it;
    tg_iter_init(&it, t);
    for (tg_term *e; (e = tg_iter_next(&it));)
        if (tg_kind_of(e) == TG_PAIR && tg_car(e) == tg_symbol_cstr(ctx, head))
            return e;
    return NULL;
}

static double rule_ms(tg_term *rules, const char *name)
{
    tg_iter it;
    tg_iter_init(&it, rules);
    tg_iter_next(&it);
    for (tg_term *r; (r = tg_iter_next(&it));)
        if (tg_car(r) == tg_symbol_cstr(ctx, name)) {
            double v;
            return tg_double_get(tg_nth(r, 1), &v) == 0 ? v : -1;
        }
    return -1;
}

static void test_rewrite_tree(void)
{
    tg_error err;
    tg_rules *rs = kt_rules(ctx, rules_text, "prof.rules");
    TAP_CHECK(tg_rules_profile_tree(rs) == NULL && tg_rules_profile_print(rs, stdout) < 0,
              "no timed profile before a rewrite");
    TAP_CHECK(tg_rules_profile_tree(NULL) == NULL && tg_rules_profile_print(NULL, stdout) < 0,
              "no timed profile of no rule set");
    tg_term *t = tg_read_cstr(ctx, "(add (mul (add a 0) 1) (add (mul b 1) (mul b 1)))", &err);
    for (int timing = 0; timing < 2; timing++) {
        tg_rules_set_timing(rs, timing);
        tg_term *r = tg_rewrite(rs, tg_symbol_cstr(ctx, "default"), t, &err);
        TAP_CHECK(r != NULL, "rewritten");
        tg_term *tree = tg_rules_profile_tree(rs), *flat = tg_rules_profile(rs);
        TAP_CHECK(tree && flat && tg_car(tree) == tg_symbol_cstr(ctx, "profile-tree"), "a profile tree");
        if (!tree || !flat)
            continue;
        /* (profile-tree (time MS) (nodes S E M) (rewriter default sequence ... (parts SIMPLIFY DOUBLING))) */
        tg_term *top = tg_nth(tree, 3), *parts = clause(top, "parts");
        TAP_CHECK(tg_nth(top, 1) == tg_symbol_cstr(ctx, "default") && parts && tg_length(parts) == 3,
                  "the sequence holds its two rewriters");
        if (!parts || tg_length(parts) != 3)
            continue;
        tg_term *simp = tg_nth(parts, 1), *dbl = tg_nth(parts, 2);
        TAP_CHECK(tg_nth(simp, 1) == tg_symbol_cstr(ctx, "simplify") &&
                  tg_nth(simp, 2) == tg_symbol_cstr(ctx, "equilibrium") &&
                  tg_nth(dbl, 1) == tg_symbol_cstr(ctx, "doubling") && tg_nth(dbl, 2) == tg_symbol_cstr(ctx, "walk"),
                  "named and of their kinds, in order");
        /* the firings per part are the flat profile's, rule by rule */
        tg_term *flat_rules = clause(flat, "rules");
        const char *names[] = {"mul-one", "add-zero", "add-self"};
        tg_term *in_part[] = {clause(simp, "rules"), clause(simp, "rules"), clause(dbl, "rules")};
        for (int i = 0; i < 3; i++) {
            long want = 0;
            tg_iter it;
            tg_iter_init(&it, flat_rules);
            tg_iter_next(&it);
            for (tg_term *x; (x = tg_iter_next(&it));)
                if (tg_car(x) == tg_symbol_cstr(ctx, names[i])) {
                    int64_t v;
                    tg_int_get(tg_nth(x, 1), &v);
                    want = (long)v;
                }
            TAP_CHECK(want > 0 && fired_in(in_part[i], names[i]) == want, "%s fired %ld times in its part",
                      names[i], want);
        }
        /* an equilibrium's passes: as many as listed, the last one firing nothing */
        tg_term *passes = clause(simp, "passes");
        int64_t np = 0, last_fired = -1;
        tg_int_get(tg_nth(passes, 1), &np);
        tg_term *pl = tg_nth(passes, 2);
        tg_int_get(tg_nth(tg_nth(pl, tg_length(pl) - 1), 2), &last_fired);
        TAP_CHECK(np >= 2 && (size_t)np == tg_length(pl) && last_fired == 0,
                  "simplify: %lld passes listed, the last one without a firing", (long long)np);
        double ms = rule_ms(in_part[0], "mul-one");
        TAP_CHECK(timing ? ms > 0 : ms == 0, "mul-one's time %s timing", timing ? "with" : "without");
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        int rc = tg_rules_profile_print(rs, f);
        fclose(f);
        TAP_CHECK(rc == 0 && text && strstr(text, "simplify (equilibrium)") && strstr(text, "doubling (walk)") &&
                      strstr(text, "pass 0:") && strstr(text, "add-self"),
                  "the printed profile nests the rewriters");
        free(text);
    }
    tg_rules_free(rs);
}

int main(void)
{
    if (!mkdtemp(dir))
        return 1;
    setenv("TGREL_CACHE_DIR", dir, 1);
    ctx = tg_ctx_new(NULL);
    test_fn_profile();
    test_rewrite_tree();
    tg_ctx_free(ctx);
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        return 1;
    return TAP_DONE();
}
