/* test_session.c - the API a REPL or an editor drives a rule set with:
 * listing what a rule set holds (tg_rules_list), interrupting a rewrite
 * and a query from a signal handler (tg_rules_interrupt,
 * tg_env_interrupt), and evaluating forms read from a stream entry by
 * entry with errors at their subterms (tg_reader_first_line,
 * tg_reader_track_positions, tg_rules_eval_read); success and failure. */
#define _DEFAULT_SOURCE
#include <signal.h>
#include <sys/time.h>

#include <gc/gc.h>

#include "harness.h"
#include "tgrel.h"
#include "tgtest.h"

static tg_rules *volatile to_interrupt;

static void on_alarm(int sig)
{
    (void)sig;
    tg_rules_interrupt(to_interrupt);
}

/* Interrupt rs 50 ms from now, from a signal handler. */
static void interrupt_soon(tg_rules *rs)
{
    to_interrupt = rs;
    signal(SIGALRM, on_alarm);
    struct itimerval it = {{0, 0}, {0, 50000}};
    setitimer(ITIMER_REAL, &it, NULL);
}

static void listing(tg_ctx *ctx)
{
    tg_error err;
    tg_rules *rs = tg_rules_new(ctx, &err);
    const char *text =
        "(op add (arity 2+) assoc comm) (op neg (arity 1)) (op f (arity 1 3) pure (cost 2))\n"
        "(op any)\n"
        "(rule add-zero (add 0 ?x) (add ?x 0) => ?x (tags fast))\n"
        "(rule neg-neg (neg (neg ?x)) <=> (f ?x))\n"
        "(walk w (order out-to-in) add-zero (reverse neg-neg))\n"
        "(sequence s (2 w) (1.5 add-zero))\n"
        "(equilibrium e (tags t1 t2) (max-use-ratio 3) w)\n"
        "(defrel (pairo p) (fresh (a b) (== p (cons a b))))\n";
    TAP_EQ_INT(tg_rules_load_string(rs, text, strlen(text), NULL, &err), 0, "a rule set to list");
    TAP_EQ_STR(tap_show(tg_rules_list(rs, TG_LIST_OPS, &err)),
               "((op add (arity 2+) assoc comm) (op neg (arity 1)) (op f (arity 1 3) pure (cost 2)) (op any))",
               "ops with their arity, flags and properties");
    TAP_EQ_STR(tap_show(tg_rules_list(rs, TG_LIST_RULES, &err)),
               "((rule add-zero (add 0 ?x) => ?x (tags fast)) (rule add-zero (add ?x 0) => ?x (tags fast)) "
               "(rule neg-neg (neg (neg ?x)) <=> (f ?x)))",
               "rules, one per left side, <=> for both ways");
    TAP_EQ_STR(tap_show(tg_rules_list(rs, TG_LIST_REWRITERS, &err)),
               "((walk w (order out-to-in) add-zero (reverse neg-neg)) (sequence s (2 w) (1.5 add-zero)) "
               "(equilibrium e (tags t1 t2) (max-use-ratio 3.0) w))",
               "rewriters with their clauses and items");
    tg_term *rels = tg_rules_list(rs, TG_LIST_RELATIONS, &err);
    int pairo = 0, appendo = 0, sorted = 1;
    tg_term *prev = NULL;
    for (size_t i = 0; rels && i < tg_length(rels); i++) {
        tg_term *r = tg_nth(rels, i);
        pairo |= !strcmp(tap_show(r), "(pairo 1)");
        appendo |= !strcmp(tap_show(r), "(appendo 3)");
        if (prev && tg_compare(tg_car(prev), tg_car(r)) >= 0)
            sorted = 0;
        prev = r;
    }
    TAP_CHECK(pairo && appendo && sorted, "relations: defined and library ones, sorted, with arity");

    tg_rules *empty = tg_rules_new(ctx, &err);
    tg_term *fresh = tg_rules_list(empty, TG_LIST_RELATIONS, &err);
    TAP_CHECK(fresh && tg_length(fresh) > 0 && strstr(tap_show(fresh), "(appendo 3)"),
              "a fresh rule set lists the prelude's relations");
    /* a failed load that looked a relation up (which makes the logic
     * environment) lists the same relations as before it */
    static const char bad[] = "(op g (arity 1)) (rule r (g ?x) => ?x) (walk w r no-such-item)";
    TAP_CHECK(tg_rules_load_string(empty, bad, sizeof bad - 1, "bad", &err) < 0,
              "a rewriter naming an unknown item is an error (%s)", tap_msg(&err));
    TAP_CHECK(tg_rules_list(empty, TG_LIST_RELATIONS, &err) == fresh,
              "after the failed load the relations listed are the same term");
    TAP_EQ_STR(tap_show(tg_rules_list(empty, TG_LIST_OPS, &err)), "()", "an empty rule set lists nothing");
    tg_error_clear(&err);
    TAP_CHECK(tg_rules_list(rs, (tg_list_kind)42, &err) == NULL && err.code == TG_ERR_ARG,
              "a bad kind is an argument error (%s)", tap_msg(&err));
    TAP_CHECK(tg_rules_list(NULL, TG_LIST_OPS, &err) == NULL, "no rule set");
    tg_rules_free(empty);

    /* tracing, as the REPL's :trace switches it */
    FILE *f = tmpfile();
    tg_rules_set_trace(rs, f, 1);
    TAP_EQ_INT(tg_rules_tracing(rs), 1, "tracing on");
    tg_normalize(rs, tg_read_cstr(ctx, "(neg (neg (add 0 b)))", &err), 0, &err);
    tg_rules_set_trace(rs, f, 0);
    TAP_EQ_INT(tg_rules_tracing(rs), 0, "tracing off");
    tg_normalize(rs, tg_read_cstr(ctx, "(neg (neg c))", &err), 0, &err);
    char buf[256] = "";
    rewind(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    TAP_EQ_STR(buf, "add-zero: (add 0 b) => b\nneg-neg: (neg (neg b)) => (f b)\n",
               "each firing is traced while on, none after");
    TAP_EQ_INT(tg_rules_tracing(NULL), 0, "no rule set: not tracing");
    tg_rules_set_trace(NULL, stdout, 1);    /* allowed, does nothing */
    tg_rules_free(rs);
}

static void interrupts(tg_ctx *ctx)
{
    tg_error err;
    tg_rules *rs = tg_rules_new(ctx, &err);
    const char *text = "(op f (arity 1)) (rule loop (f ?x) => (f ?x)) (equilibrium e loop)\n"
                       "(defrel (loopo x) (loopo x))";
    TAP_EQ_INT(tg_rules_load_string(rs, text, strlen(text), NULL, &err), 0, "endless rules");
    tg_term *t = tg_read_cstr(ctx, "(f a)", &err);

    interrupt_soon(rs);
    tg_error_clear(&err);
    TAP_CHECK(tg_normalize(rs, t, 0, &err) == NULL, "an endless normalize is interrupted");
    TAP_EQ_STR(err.message, "interrupted", "and says so");

    /* a request made while nothing runs is dropped */
    tg_rules_interrupt(rs);
    const char *ok = "(op g (arity 1)) (rule g-a (g ?x) => a)";
    TAP_EQ_INT(tg_rules_load_string(rs, ok, strlen(ok), NULL, &err), 0, "more rules");
    TAP_EQ_STR(tap_show(tg_normalize(rs, tg_read_cstr(ctx, "(g b)", &err), 0, &err)), "a",
               "the next normalize runs to the end");

    interrupt_soon(rs);
    tg_error_clear(&err);
    tg_term *spec = tg_symbol_cstr(ctx, "e");
    TAP_CHECK(tg_rewrite(rs, spec, t, &err) == NULL, "an endless rewrite is interrupted (%s)",
              tap_msg(&err));

    interrupt_soon(rs);
    tg_error_clear(&err);
    tg_term *q = tg_read_cstr(ctx, "(run 1 (q) (loopo q))", &err);
    TAP_CHECK(tg_rules_eval(rs, q, NULL, NULL, NULL, &err) < 0, "an endless query is interrupted");
    TAP_EQ_STR(err.message, "interrupted", "and says so");

    tg_env *env = tg_env_new(ctx, &err);
    TAP_CHECK(tg_eval(env, tg_read_cstr(ctx, "(defrel (nevero x) (nevero x))", &err), NULL, NULL, NULL,
                      &err) >= 0, "a relation in an environment");
    tg_env_interrupt(env);      /* dropped: nothing runs */
    TAP_EQ_STR(tap_show(tg_run(env, tg_read_cstr(ctx, "(run 1 (q) (== q 1))", &err), &err)), "(1)",
               "a request made between queries is dropped");
    tg_env_interrupt(NULL);     /* allowed, does nothing */
    tg_env_free(env);
    tg_rules_interrupt(NULL);
    signal(SIGALRM, SIG_DFL);
    tg_rules_free(rs);
}

/* Ops, rules and rewriters keep the name of the file they came from after
 * the load (an include's path is freed once it is loaded). */
static void file_names(tg_ctx *ctx)
{
    tg_error err;
    tg_rules *rs = tg_rules_new(ctx, &err);
    TAP_EQ_INT(tg_rules_load_file(rs, tap_path("tests/patterns/data/fib.rules"), &err), 0,
               "a file with an include");
    GC_gcollect();
    char *junk[64];     /* reuse freed malloc memory */
    for (int i = 0; i < 64; i++)
        junk[i] = malloc(strlen(tap_path("tests/patterns/data/peano.rules")) + 1),
        memset(junk[i], 'x', strlen(tap_path("tests/patterns/data/peano.rules")) + 1),
        junk[i][strlen(tap_path("tests/patterns/data/peano.rules"))] = 0;
    const char *again = "(op s (arity 5))";
    TAP_EQ_INT(tg_rules_load_string(rs, again, strlen(again), "again.rules", &err), -1,
               "an op declared again differently");
    TAP_CHECK(strstr(err.message, "peano.rules:") != NULL,
              "the error names the included file of the first declaration (%s)", err.message);
    for (int i = 0; i < 64; i++)
        free(junk[i]);
    tg_rules_free(rs);
}

static void reading(tg_ctx *ctx)
{
    tg_error err;
    tg_rules *rs = tg_rules_new(ctx, &err);
    const char *text = "(op p (arity 1))\n(rule r (p ?x) =>\n   (q ?x))";
    tg_reader *r = tg_reader_new(ctx, text, strlen(text), "entry", &err);
    tg_reader_first_line(r, 40);
    tg_reader_track_positions(r, 1);
    tg_term *form;
    TAP_EQ_INT(tg_reader_next(r, &form, &err), 1, "read the op");
    TAP_EQ_INT(tg_rules_eval_read(rs, r, form, NULL, NULL, NULL, &err), TG_EVAL_DEFINE, "define it");
    TAP_EQ_INT(tg_reader_next(r, &form, &err), 1, "read the rule");
    TAP_EQ_INT(tg_rules_eval_read(rs, r, form, NULL, NULL, NULL, &err), -1, "a bad rule");
    TAP_EQ_STR(tap_msg(&err), "entry:42:4: unknown op q (declare it with (op q ...)) in (q ?x)",
               "the error is at the subterm, lines counted from the first line given");
    tg_reader_free(r);

    r = tg_reader_new(ctx, "(rule r (p ?x) => (q ?x))", 25, "flat", &err);
    TAP_EQ_INT(tg_reader_next(r, &form, &err), 1, "read without tracking");
    TAP_EQ_INT(tg_rules_eval_read(rs, r, form, NULL, NULL, NULL, &err), -1, "a bad rule again");
    TAP_EQ_STR(tap_msg(&err), "flat:1:1: unknown op q (declare it with (op q ...)) in (q ?x)",
               "without tracking the error is at the form");
    tg_reader_free(r);

    r = tg_reader_new(ctx, "\n  )", 4, "bad", &err);
    tg_reader_first_line(r, 7);
    TAP_EQ_INT(tg_reader_next(r, &form, &err), -1, "a syntax error");
    TAP_EQ_STR(tap_msg(&err), "bad:8:3: unexpected ')'", "reported at the offset line");
    tg_reader_free(r);

    TAP_EQ_INT(tg_rules_eval_read(rs, NULL, form, NULL, NULL, NULL, &err), -1, "no reader");
    tg_reader_first_line(NULL, 3);          /* allowed, does nothing */
    tg_reader_track_positions(NULL, 1);     /* likewise */
    tg_rules_free(rs);
}

int main(void)
{
    tg_error err;
    tg_ctx *ctx = tg_ctx_new(&err);
    listing(ctx);
    interrupts(ctx);
    file_names(ctx);
    reading(ctx);
    tg_ctx_free(ctx);
    return TAP_DONE();
}
