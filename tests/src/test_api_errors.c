/* test_api_errors.c - the real error paths of the public functions, one
 * group per area: bad text (with file:line:column and the offending text
 * in the tg_error), unknown names, wrong arities, out-of-range indices
 * and wrong kinds, shape and dtype errors of tensor functions, an
 * interrupted rewrite and query, a missing file, an include cycle.  After
 * each failure the context (and the rule set) must still work, and under
 * the sanitizers LeakSanitizer checks at exit that no error path leaked.
 * Each check's description starts with the function it is about:
 * tests/src/api_tests.sh reads them against tests/src/api_tests.txt. */
#include <gmp.h>
#include <unistd.h>

#include "harness.h"
#include "tgrel.h"
#include "tgtest.h"

static tg_ctx *ctx;
static char tmpdir[] = "/tmp/tgrel-api-XXXXXX";

static tg_term *rd(const char *s)
{
    tg_error err;
    tg_term *t = tg_read_cstr(ctx, s, &err);
    if (!t)
        TAP_DIAG("cannot read %s: %s", s, tap_msg(&err));
    return t;
}

/* The context still builds, reads and prints terms, and rs (when not
 * NULL) still loads rules and normalizes with them. */
static int usable(tg_rules *rs)
{
    tg_error err;
    tg_term *t = tg_read_cstr(ctx, "(ok (x 1) \"s\")", &err);
    tg_term *x = rd("x");
    tg_term *b = tg_app(ctx, tg_symbol_cstr(ctx, "x"), 1, (tg_term *[]){tg_int(ctx, 1)});
    if (!t || tg_nth(t, 1) != b || tg_car(b) != x || strcmp(tap_show(t), "(ok (x 1) \"s\")"))
        return 0;
    if (!rs)
        return 1;
    static int k;
    char text[200];
    k++;
    snprintf(text, sizeof text, "(op u%d (arity 1)) (rule u%d-id (u%d ?x) => ?x)", k, k, k);
    if (tg_rules_load_string(rs, text, strlen(text), "u.rules", &err) < 0)
        return 0;
    snprintf(text, sizeof text, "(u%d (u%d y))", k, k);
    return tg_normalize(rs, rd(text), 0, &err) == rd("y");
}

static char *write_tmp(const char *name, const char *text)
{
    static char path[4][300];
    static int k;
    k = (k + 1) % 4;
    snprintf(path[k], sizeof path[k], "%s/%s", tmpdir, name);
    FILE *f = fopen(path[k], "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
    return path[k];
}

/* ---- errors and terms -------------------------------------------------- */

static void errors_and_terms(void)
{
    tg_error err;
    char small[16], big[1200];

    tg_error_clear(&err);
    char longmsg[2000];
    memset(longmsg, 'm', sizeof longmsg - 1);
    longmsg[sizeof longmsg - 1] = '\0';
    tg_error_set(&err, TG_ERR_ARG, "%s", longmsg);
    TAP_CHECK(err.code == TG_ERR_ARG && strlen(err.message) == sizeof err.message - 1 && err.line == 0,
              "tg_error_set: a message longer than the buffer is cut, not overrun");
    tg_error_clear(&err);
    TAP_CHECK(err.code == TG_OK && err.message[0] == '\0' && err.line == 0 && err.file[0] == '\0',
              "tg_error_clear: an error set before is cleared");
    TAP_CHECK(tg_read_cstr(ctx, "(a\n  b", &err) == NULL, "tg_read_cstr: an open list fails");
    tg_error_format(&err, small, sizeof small);
    TAP_CHECK(strlen(small) == sizeof small - 1 && !strncmp(small, "<string>:2:", 11),
              "tg_error_format: a small buffer gets the start, NUL-terminated (%s)", small);
    TAP_CHECK(!strncmp(tg_error_format(&err, big, sizeof big), "<string>:", 9) &&
                  strstr(big, "unterminated list") != NULL,
              "tg_error_format: file:line:column: message (%s)", big);

    tg_error_clear(&err);
    TAP_CHECK(tg_int_parse(ctx, "12x", &err) == NULL && err.code == TG_ERR_SYNTAX,
              "tg_int_parse: trailing garbage is a syntax error (%s)", err.message);
    tg_error_clear(&err);
    TAP_CHECK(tg_int_parse(ctx, "-", &err) == NULL && err.code == TG_ERR_SYNTAX,
              "tg_int_parse: a sign alone is a syntax error");
    mpq_t q;
    mpq_init(q);
    mpz_set_si(mpq_numref(q), 3);   /* 3/0 written directly, not canonicalized */
    mpz_set_si(mpq_denref(q), 0);
    tg_error_clear(&err);
    TAP_CHECK(tg_rat_mpq(ctx, q, &err) == NULL && err.code == TG_ERR_RANGE,
              "tg_rat_mpq: a zero denominator is a range error (%s)", err.message);
    tg_error_clear(&err);
    TAP_CHECK(tg_rat(ctx, 1, 0, &err) == NULL && err.code == TG_ERR_RANGE,
              "tg_rat: a zero denominator is a range error (%s)", err.message);
    tg_term *r = tg_rat(ctx, INT64_MIN, -1, &err);
    TAP_EQ_STR(tap_show(r), "9223372036854775808", "tg_rat: INT64_MIN / -1 does not overflow");

    TAP_CHECK(tg_var(ctx, NULL, 3, 0) == NULL && tg_var(NULL, "v", 1, 0) == NULL,
              "tg_var: a NULL name with a length or a NULL context gives NULL");
    tg_term *a = rd("a"), *l = rd("(f x y . z)");
    TAP_CHECK(tg_cons(NULL, a, l) == NULL && tg_cons(ctx, a, l) == rd("(a f x y . z)"),
              "tg_cons: no context gives NULL");
    tg_term *row[4] = {a, a, a, NULL};
    tg_term *out[2] = {a, a};
    tg_error_clear(&err);
    TAP_CHECK(tg_app_batch(ctx, a, 2, 2, row, out, &err) == -1 && err.code == TG_ERR_ARG &&
                  strstr(err.message, "1") && out[0] == a && out[1] == a,
              "tg_app_batch: a NULL argument names its row, nothing is built (%s)", err.message);
    tg_error_clear(&err);
    TAP_CHECK(tg_app_batch(ctx, a, SIZE_MAX / 2, 4, row, out, &err) == -1 && err.code == TG_ERR_RANGE,
              "tg_app_batch: count * n overflowing is a range error (%s)", err.message);

    TAP_CHECK(tg_car(a) == NULL && tg_cdr(ctx, a) == NULL && tg_car(NULL) == NULL,
              "tg_car, tg_cdr: an atom has none");
    TAP_CHECK(tg_cdr(ctx, NULL) == NULL && tg_cdr(NULL, l) == NULL,
              "tg_cdr: no term or no context gives NULL");
    TAP_CHECK(tg_length(a) == 0 && tg_length(NULL) == 0 && tg_length(l) == 3,
              "tg_length: an atom has no elements, a dotted list counts those before the tail");
    TAP_CHECK(tg_nth(l, 3) == NULL && tg_nth(l, SIZE_MAX) == NULL && tg_nth(a, 0) == NULL,
              "tg_nth: an index out of range gives NULL");
    TAP_CHECK(tg_tail(a) == a && tg_tail(l) == rd("z") && tg_tail(NULL) == NULL,
              "tg_tail: an atom is its own tail");
    tg_term *els[2] = {NULL, NULL};
    TAP_CHECK(tg_elements(l, els, 2) == 3 && els[0] == rd("f") && els[1] == rd("x") &&
                  tg_elements(a, els, 2) == 0 && tg_elements(NULL, NULL, 0) == 0,
              "tg_elements: a buffer too small gets the first elements, the count is whole");
    tg_iter it;
    tg_iter_init(&it, a);
    TAP_CHECK(tg_iter_next(&it) == NULL && tg_iter_rest(ctx, &it) == a,
              "tg_iter_next, tg_iter_rest, tg_iter_init: an atom has no elements and is the rest");
    tg_iter_init(&it, NULL);
    TAP_CHECK(tg_iter_next(&it) == NULL && tg_iter_next(NULL) == NULL,
              "tg_iter_next: no list and no iterator give NULL");

    int64_t v = 7;
    double d = 7;
    mpz_t z;
    mpz_init(z);
    tg_term *huge = rd("123456789012345678901234567890"), *s = rd("\"str\""), *var = rd("?v.4");
    TAP_CHECK(tg_int_get(huge, &v) == -1 && tg_int_get(a, &v) == -1 && v == 7,
              "tg_int_get: an integer beyond int64 and a symbol fail, *out untouched");
    TAP_CHECK(tg_int_get_mpz(rd("1/2"), z) == -1 && tg_int_get_mpz(a, z) == -1,
              "tg_int_get_mpz: a rational or a symbol is not an integer");
    TAP_CHECK(tg_rat_get_mpq(rd("1.5"), q) == -1 && tg_rat_get_mpq(a, q) == -1,
              "tg_rat_get_mpq: a double or a symbol is not a rational");
    TAP_CHECK(tg_double_get(rd("1"), &d) == -1 && tg_double_get(NULL, &d) == -1 && d == 7,
              "tg_double_get: an integer is not a double");
    size_t n = 99;
    TAP_CHECK(tg_symbol_name(s, &n) == NULL && tg_string_bytes(a, &n) == NULL &&
                  tg_var_name(a, &n) == NULL && tg_symbol_name(NULL, NULL) == NULL,
              "tg_symbol_name, tg_string_bytes, tg_var_name: another kind gives NULL");
    TAP_CHECK(tg_var_id(a) == 0 && tg_var_id(NULL) == 0 && tg_var_id(var) == 4,
              "tg_var_id: a non-variable has number 0");
    mpz_clear(z);
    mpq_clear(q);
    TAP_CHECK(usable(NULL), "the context works after the term errors");
}

/* ---- reading and printing ---------------------------------------------- */

static void reading(void)
{
    tg_error err;
    tg_term *t = NULL;
    const char text[] = "ok\n(a b]\n  \"open";
    tg_error_clear(&err);
    TAP_CHECK(tg_reader_new(NULL, "a", 1, NULL, &err) == NULL && err.code == TG_ERR_ARG,
              "tg_reader_new: no context is an argument error");
    tg_error_clear(&err);
    TAP_CHECK(tg_reader_new(ctx, NULL, 5, NULL, &err) == NULL && err.code == TG_ERR_ARG,
              "tg_reader_new: NULL text with a length is an argument error");
    tg_reader *r = tg_reader_new(ctx, text, strlen(text), "in.tg", &err);
    tg_reader_first_line(r, 10);
    tg_reader_track_positions(r, 1);
    int rc1 = tg_reader_next(r, &t, &err);
    tg_error_clear(&err);
    int rc2 = tg_reader_next(r, &t, &err);
    TAP_CHECK(rc1 == 1 && rc2 == -1 && err.code == TG_ERR_SYNTAX && !strcmp(err.file, "in.tg") &&
                  err.line == 11 && err.column == 5 && strstr(err.message, "]"),
              "tg_reader_next: a mismatched bracket at file:line:column (%s)", tap_msg(&err));
    TAP_CHECK(!strcmp(err.file, "in.tg") && err.line == 11,
              "tg_reader_first_line: error lines count from the first line given");
    tg_error_clear(&err);
    int rc3 = tg_reader_next(r, &t, &err);
    TAP_CHECK(rc3 == -1 && err.line == 12 && err.column == 3 && strstr(err.message, "string"),
              "tg_reader_next: goes on after an error to the next one (%s)", tap_msg(&err));
    TAP_CHECK(tg_reader_next(r, &t, &err) == 0, "tg_reader_next: then the end");
    int line = 0, col = 0;
    tg_reader_last_pos(r, &line, &col);
    TAP_CHECK(line == 10 && col == 1, "tg_reader_last_pos: the last term read, not the failed ones");
    tg_reader_free(r);
    tg_reader_first_line(NULL, 3);          /* allowed, does nothing */
    tg_reader_track_positions(NULL, 1);
    tg_reader_free(NULL);
    TAP_CHECK(1, "tg_reader_free, tg_reader_track_positions, tg_reader_first_line: NULL is allowed");

    tg_error_clear(&err);
    TAP_CHECK(tg_read(ctx, "a b", 3, &err) == NULL && err.code == TG_ERR_SYNTAX && err.column == 3,
              "tg_read: two terms where one is wanted, pointing at the second (%s)", tap_msg(&err));
    tg_error_clear(&err);
    TAP_CHECK(tg_read(ctx, "  ; nothing\n", 12, &err) == NULL && err.code == TG_ERR_SYNTAX,
              "tg_read: no term at all (%s)", tap_msg(&err));
    tg_error_clear(&err);
    TAP_CHECK(tg_read_cstr(ctx, "(f 1/0)", &err) == NULL && err.line == 1 && err.column == 4 &&
                  !strcmp(err.file, "<string>") && err.code == TG_ERR_SYNTAX,
              "tg_read_cstr: a bad number at <string>:1:4 (%s)", tap_msg(&err));
    tg_error_clear(&err);
    TAP_CHECK(tg_read_cstr(ctx, NULL, &err) == NULL && err.code == TG_ERR_ARG,
              "tg_read_cstr: NULL text is an argument error");

    char path[300];
    snprintf(path, sizeof path, "%s/no-such-file", tmpdir);
    size_t len = 5;
    tg_error_clear(&err);
    TAP_CHECK(tg_slurp_file(path, &len, &err) == NULL && err.code == TG_ERR_IO &&
                  (strstr(err.message, path) || !strcmp(err.file, path)),
              "tg_slurp_file: a missing file is an I/O error naming it (%s)", err.message);
    tg_error_clear(&err);
    TAP_CHECK(tg_slurp_file(tmpdir, &len, &err) == NULL && err.code == TG_ERR_IO,
              "tg_slurp_file: a directory is an I/O error (%s)", err.message);

    TAP_CHECK(tg_print(NULL, NULL) == NULL && tg_print_shared(NULL, NULL) == NULL,
              "tg_print, tg_print_shared: no term gives NULL");
    FILE *full = fopen("/dev/full", "w");
    if (full) {
        setvbuf(full, NULL, _IONBF, 0);
        TAP_CHECK(tg_fprint(full, rd("(a b c)")) == -1, "tg_fprint: a write error gives -1");
        fclose(full);
    } else {
        TAP_CHECK(tg_fprint(NULL, rd("a")) == -1, "tg_fprint: no stream gives -1");
    }
    TAP_CHECK(tg_fprint(stdout, NULL) == -1, "tg_fprint: no term gives -1");
    TAP_CHECK(usable(NULL), "the context works after the reading errors");
}

/* ---- logic ----------------------------------------------------------------- */

static tg_env *stop_env;

/* A C relation that asks its own query to stop, then answers forever. */
static int stopper(tg_ctx *c, tg_term *const *args, unsigned nargs, unsigned long i, void **state,
                   tg_term **answer, void *ud, tg_error *err)
{
    (void)ud, (void)err, (void)state, (void)nargs;
    if (i == 0)
        tg_env_interrupt(stop_env);
    *answer = tg_list(c, 1, args, NULL);
    return 1;
}

/* A C relation that fails with an error of its own. */
static int failing(tg_ctx *c, tg_term *const *args, unsigned nargs, unsigned long i, void **state,
                   tg_term **answer, void *ud, tg_error *err)
{
    (void)c, (void)args, (void)nargs, (void)i, (void)state, (void)answer, (void)ud;
    tg_error_set(err, TG_ERR_RANGE, "no answer beyond %d", 41);
    return -1;
}

static void logic(void)
{
    tg_error err;
    tg_env *env = tg_env_new(ctx, &err);
    tg_term *v = NULL;

    tg_error_clear(&err);
    TAP_CHECK(tg_eval(env, rd("(run* (q) (nowhere q))"), NULL, NULL, NULL, &err) == -1 &&
                  strstr(err.message, "nowhere"),
              "tg_eval: an unknown relation is named (%s)", err.message);
    tg_eval(env, rd("(defrel (two a b) (== a b))"), NULL, NULL, NULL, &err);
    tg_error_clear(&err);
    TAP_CHECK(tg_eval(env, rd("(run* (q) (two q q q))"), NULL, NULL, NULL, &err) == -1 &&
                  strstr(err.message, "two"),
              "tg_eval: a relation called with the wrong arity is named (%s)", err.message);
    tg_error_clear(&err);
    TAP_CHECK(tg_eval(env, NULL, NULL, NULL, NULL, &err) == -1 && err.code == TG_ERR_ARG,
              "tg_eval: a NULL form (a term that could not be made) is an error, not a crash");
    TAP_CHECK(tg_run(env, NULL, &err) == NULL && err.code == TG_ERR_ARG, "tg_run: a NULL form too");
    TAP_CHECK(tg_eval(env, rd("(defrel two)"), NULL, NULL, NULL, &err) == -1 && err.code != TG_OK,
              "tg_eval: a malformed defrel (%s)", err.message);
    TAP_CHECK(tg_eval(env, rd("(run 1 (q) (two q 5))"), NULL, NULL, &v, &err) == TG_EVAL_RUN,
              "tg_eval: the relation defined before the errors still runs");
    tg_error_clear(&err);
    TAP_CHECK(tg_run(env, rd("(run x (q) (== q 1))"), &err) == NULL && err.code != TG_OK,
              "tg_run: a run count that is not a number (%s)", err.message);
    tg_error_clear(&err);
    TAP_CHECK(tg_run(env, rd("(f x)"), &err) == NULL && err.code != TG_OK,
              "tg_run: a form that is not a run (%s)", err.message);
    tg_error_clear(&err);
    TAP_CHECK(tg_query_new(env, rd("(defrel (x a) (== a a))"), &err) == NULL && err.code != TG_OK,
              "tg_query_new: a form that is not a run (%s)", err.message);

    tg_error_clear(&err);
    TAP_CHECK(tg_defrel_c(env, "cf", 1, NULL, NULL, &err) == -1 && err.code == TG_ERR_ARG,
              "tg_defrel_c: no function is an argument error");
    tg_error_clear(&err);
    TAP_CHECK(tg_defrel_c(NULL, "cf", 1, failing, NULL, &err) == -1 && err.code == TG_ERR_ARG,
              "tg_defrel_c: no environment is an argument error");
    tg_defrel_c(env, "failing", 1, failing, NULL, &err);
    tg_query *q = tg_query_new(env, rd("(run* (q) (failing q))"), &err);
    tg_error_clear(&err);
    TAP_CHECK(tg_query_run(q, NULL, NULL, &err) == -1 && err.code == TG_ERR_RANGE &&
                  strstr(err.message, "no answer beyond 41"),
              "tg_query_run: a C relation's error comes back with its code (%s)", err.message);
    tg_query_free(q);

    stop_env = env;
    tg_defrel_c(env, "stopper", 1, stopper, NULL, &err);
    tg_eval(env, rd("(defrel (forever x) (conde ((stopper x) (forever x))))"), NULL, NULL, NULL, &err);
    tg_error_clear(&err);
    TAP_CHECK(tg_run(env, rd("(run* (q) (forever q))"), &err) == NULL &&
                  strstr(err.message, "interrupted"),
              "tg_env_interrupt: the running query stops with interrupted (%s)", err.message);
    tg_term *ans = tg_run(env, rd("(run* (q) (two q 7))"), &err);
    TAP_EQ_STR(tap_show(ans), "(7)", "tg_run: the environment answers again after the interrupt");
    TAP_CHECK(tg_env_var(NULL, "x") == NULL && tg_kind_of(tg_env_var(env, NULL)) == TG_VAR,
              "tg_env_var: no environment gives NULL");
    tg_env_free(env);
    TAP_CHECK(usable(NULL), "the context works after the logic errors");
}

/* ---- rule sets --------------------------------------------------------------- */

static const char base_rules[] =
    "(op add (arity 2))\n(op neg (arity 1))\n"
    "(rule add-zero (add 0 ?x) => ?x)\n(rule neg-neg (neg (neg ?x)) => ?x)\n"
    "(equilibrium simplify add-zero neg-neg)\n";

static int load(tg_rules *rs, const char *text, const char *file, tg_error *err)
{
    tg_error_clear(err);
    return tg_rules_load_string(rs, text, strlen(text), file, err);
}

static void loading(tg_rules *rs)
{
    tg_error err;
    TAP_CHECK(load(rs, base_rules, "base.rules", &err) == 0, "the base rules load");

    const char bad[] = "(op mul (arity 2))\n(rule m1 (mul ?x 1) => ?x)\n(rule m2 (mul ?x 0)\n   => (frob ?x))\n";
    TAP_CHECK(load(rs, bad, "bad.rules", &err) == -1 && !strcmp(err.file, "bad.rules") &&
                  err.line == 4 && err.column > 1 && strstr(err.message, "frob"),
              "tg_rules_load_string: an unknown op at file:line:column with its text (%s)",
              tap_msg(&err));
    tg_term *ops = tg_rules_list(rs, TG_LIST_OPS, &err);
    TAP_CHECK(!strstr(tap_show(ops), "mul"), "tg_rules_load_string: all or nothing: mul is not declared");
    TAP_CHECK(load(rs, "(rule a3 (add 1 2 3) => 0)", "arity.rules", &err) == -1 &&
                  err.line == 1 && strstr(err.message, "add") && strstr(err.message, "arit"),
              "tg_rules_load_string: an op used with the wrong arity (%s)", tap_msg(&err));
    TAP_CHECK(load(rs, "(rule (add ?x ?x) =>)", NULL, &err) == -1 && !strcmp(err.file, "<string>") &&
                  err.line == 1,
              "tg_rules_load_string: a malformed rule, in <string> (%s)", tap_msg(&err));
    TAP_CHECK(load(rs, "(op broken (arity 2)\n", "open.rules", &err) == -1 &&
                  err.code == TG_ERR_SYNTAX && !strcmp(err.file, "open.rules"),
              "tg_rules_load_string: unbalanced text (%s)", tap_msg(&err));
    TAP_CHECK(load(rs, "(include \"nowhere.rules\")", "inc.rules", &err) == -1 &&
                  strstr(err.message, "nowhere.rules"),
              "tg_rules_load_string: an include that is not found is named (%s)", tap_msg(&err));

    char path[300];
    snprintf(path, sizeof path, "%s/missing.rules", tmpdir);
    tg_error_clear(&err);
    TAP_CHECK(tg_rules_load_file(rs, path, &err) == -1 && err.code == TG_ERR_IO &&
                  (strstr(err.message, path) || !strcmp(err.file, path)),
              "tg_rules_load_file: a missing file is an I/O error naming it (%s)", err.message);
    write_tmp("cyc-a.rules", "(op ca (arity 1))\n(include \"cyc-b.rules\")\n");
    char *b = write_tmp("cyc-b.rules", "(op cb (arity 1))\n(include \"cyc-a.rules\")\n");
    tg_error_clear(&err);
    TAP_CHECK(tg_rules_load_file(rs, b, &err) == -1 && strstr(err.message, "cycl") &&
                  strstr(err.file, "cyc-a.rules") && err.line == 2,
              "tg_rules_load_file: an include cycle is reported where it closes (%s)", tap_msg(&err));
    TAP_CHECK(!strstr(tap_show(tg_rules_list(rs, TG_LIST_OPS, &err)), "ca"),
              "tg_rules_load_file: nothing of the cycle stays loaded");
    TAP_CHECK(usable(rs), "the rule set works after the load errors");
}

static tg_rules *stop_rules;

/* A C predicate that asks its own rewrite to stop and always holds. */
static int stop_pred(tg_ctx *c, tg_term *const *args, unsigned nargs, void *ud, tg_error *err)
{
    (void)c, (void)args, (void)nargs, (void)ud, (void)err;
    tg_rules_interrupt(stop_rules);
    return 1;
}

static tg_term *never(tg_ctx *c, tg_term *node, void *ud, tg_error *err)
{
    (void)c, (void)node, (void)ud, (void)err;
    return NULL;
}

static void rewriting(tg_rules *rs)
{
    tg_error err;
    tg_term *v = NULL;
    tg_error_clear(&err);
    TAP_CHECK(tg_rewrite(rs, rd("nosuch"), rd("(add 0 x)"), &err) == NULL && strstr(err.message, "nosuch"),
              "tg_rewrite: an unknown rewriter is named (%s)", err.message);
    tg_error_clear(&err);
    TAP_CHECK(tg_rewrite(rs, rd("(query nosuch (include fast))"), rd("x"), &err) == NULL &&
                  strstr(err.message, "nosuch"),
              "tg_rewrite: a query of an unknown rewriter is named (%s)", err.message);
    int more = load(rs, "(op grow (arity 1))\n(rule grow (grow ?x) => (grow (grow ?x)))\n"
             "(equilibrium blowup (max-use-ratio 3) grow)\n"
             "(op flip (arity 2))\n(rule flip (flip ?a ?b) => (flip ?b ?a))\n"
             "(equilibrium spin flip)\n", "more.rules", &err);
    TAP_CHECK(more == 0, "rules that grow and oscillate load (%s)", tap_msg(&err));
    tg_error_clear(&err);
    TAP_CHECK(tg_rewrite(rs, rd("blowup"), rd("(grow a)"), &err) == NULL && strstr(err.message, "grow"),
              "tg_rewrite: a max-use ratio exceeded names the rule (%s)", err.message);
    tg_error_clear(&err);
    TAP_CHECK(tg_rewrite(rs, rd("spin"), rd("(flip a b)"), &err) == NULL && strstr(err.message, "flip"),
              "tg_rewrite: an oscillation names the rule (%s)", err.message);
    tg_error_clear(&err);
    TAP_CHECK(tg_normalize(rs, rd("(flip a b)"), TG_NF_MEMO, &err) == NULL &&
                  strstr(err.message, "flip"),
              "tg_normalize: a cycle found with TG_NF_MEMO names the rule (%s)", err.message);

    stop_rules = rs;
    TAP_CHECK(tg_rules_def_predicate(rs, "stop?", 1, stop_pred, NULL, &err) == 0,
              "a predicate that interrupts is registered");
    TAP_CHECK(load(rs, "(op spinner (arity 1)) (op s (arity 1))\n"
                       "(rule spin-on (spinner ?x) => (spinner (s ?x)) (when (stop? ?x)))\n",
                   "stop.rules", &err) == 0,
              "rules with that predicate load (%s)", tap_msg(&err));
    tg_error_clear(&err);
    TAP_CHECK(tg_normalize(rs, rd("(spinner z)"), 0, &err) == NULL && strstr(err.message, "interrupted"),
              "tg_rules_interrupt: a rewrite stops with interrupted (%s)", err.message);
    TAP_CHECK(tg_normalize(rs, rd("(add 0 (neg (neg k)))"), 0, &err) == rd("k"),
              "tg_normalize: the rule set rewrites again after the interrupt");
    TAP_CHECK(tg_rewrite(rs, rd("simplify"), rd("(add 0 j)"), &err) == rd("j") &&
                  strstr(tap_show(tg_rules_profile(rs)), "add-zero"),
              "tg_rules_profile: a rewrite after the errors has its profile");

    tg_error_clear(&err);
    TAP_CHECK(tg_rules_eval(rs, rd("(rule)"), NULL, NULL, &v, &err) == -1 && err.line == 0,
              "tg_rules_eval: a malformed rule, without a position (%s)", err.message);
    tg_error_clear(&err);
    TAP_CHECK(tg_rules_eval_at(rs, rd("(rule r9 (zap ?x) => ?x)"), "at.rules", 7, 3, NULL, NULL, &v, &err) ==
                      -1 &&
                  !strcmp(err.file, "at.rules") && err.line == 7 && strstr(err.message, "zap"),
              "tg_rules_eval_at: an unknown op at the position given (%s)", tap_msg(&err));
    const char form[] = "(rule r10\n  (neg (zip ?x)) => ?x)";
    tg_reader *r = tg_reader_new(ctx, form, strlen(form), "read.rules", &err);
    tg_reader_track_positions(r, 1);
    tg_term *f = NULL;
    tg_reader_next(r, &f, &err);
    tg_error_clear(&err);
    TAP_CHECK(tg_rules_eval_read(rs, r, f, NULL, NULL, &v, &err) == -1 && err.line == 2 &&
                  err.column == 8 && strstr(err.message, "zip"),
              "tg_rules_eval_read: the error points at the subterm (%s)", tap_msg(&err));
    tg_reader_free(r);

    tg_error_clear(&err);
    TAP_CHECK(tg_rules_list(rs, (tg_list_kind)42, &err) == NULL && err.code == TG_ERR_ARG,
              "tg_rules_list: an unknown kind is an argument error");
    TAP_CHECK(tg_rules_set_provenance(NULL, 1, 0, &err) == -1,
              "tg_rules_set_provenance: no rule set is an error");
    TAP_CHECK(tg_rules_provenance(NULL) == 0 && tg_rules_provenance(rs) == 0,
              "tg_rules_provenance: off for no rule set and by default");
    tg_error_clear(&err);
    TAP_CHECK(tg_rules_why(rs, rd("k"), &err) == NULL && err.code == TG_ERR_ARG,
              "tg_rules_why: provenance off is an error (%s)", err.message);
    tg_rules_set_provenance(rs, 1, 0, &err);
    tg_normalize(rs, rd("(add 0 (neg (neg k)))"), 0, &err);
    tg_error_clear(&err);
    TAP_CHECK(tg_rules_why(rs, rd("(not in it)"), &err) == NULL && err.code == TG_ERR_ARG,
              "tg_rules_why: a term not in the result is an error (%s)", err.message);
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    tg_error_clear(&err);
    int prc = tg_rules_print_why(rs, rd("(not in it)"), mem, &err);
    fclose(mem);
    TAP_CHECK(prc == -1 && len == 0 && err.code == TG_ERR_ARG,
              "tg_rules_print_why: an error prints nothing (%s)", err.message);
    free(text);
    tg_rules_set_provenance(rs, 0, 0, &err);

    tg_error_clear(&err);
    TAP_CHECK(tg_rules_def_rewriter(rs, "cr", "nosuchop", NULL, never, NULL, &err) == -1 &&
                  strstr(err.message, "nosuchop"),
              "tg_rules_def_rewriter: an unknown op is named (%s)", err.message);
    tg_error_clear(&err);
    TAP_CHECK(tg_rules_def_rewriter(rs, "add-zero", "add", NULL, never, NULL, &err) == -1 &&
                  strstr(err.message, "add-zero"),
              "tg_rules_def_rewriter: a rule's name is taken (%s)", err.message);
    tg_error_clear(&err);
    TAP_CHECK(tg_rules_def_predicate(rs, "stop?", 2, stop_pred, NULL, &err) == -1 &&
                  strstr(err.message, "stop?"),
              "tg_rules_def_predicate: another arity for a registered name (%s)", err.message);
    tg_error_clear(&err);
    TAP_CHECK(tg_rules_def_predicate(rs, "not", 1, stop_pred, NULL, &err) == -1,
              "tg_rules_def_predicate: a built-in condition's name (%s)", err.message);
    tg_error_clear(&err);
    TAP_CHECK(tg_rules_new(NULL, &err) == NULL && err.code == TG_ERR_ARG,
              "tg_rules_new: no context is an argument error");
    tg_error_clear(&err);
    TAP_CHECK(tg_rules_set_c_version(NULL, "1", &err) == -1 && err.code == TG_ERR_ARG,
              "tg_rules_set_c_version: no rule set is an argument error (%s)", err.message);
    tg_rules_set_trace(NULL, stdout, 1);    /* allowed, does nothing */
    TAP_CHECK(tg_rules_tracing(NULL) == 0, "tg_rules_tracing, tg_rules_set_trace: no rule set is not tracing");
    TAP_CHECK(usable(rs), "the rule set works after the rewriting errors");
}

/* ---- tensor functions ----------------------------------------------------- */

static void kernels(void)
{
    tg_error err;
    tg_fn_options opt = {0};
    opt.interpret = 1;
    tg_term *x = rd("(input x float64 (n))"), *y = rd("(input y float64 (n))");
    tg_term *in[2] = {x, y};
    tg_term *o;

    o = rd("(frobnicate (input x float64 (n)))");
    tg_error_clear(&err);
    TAP_CHECK(tg_fn_compile(ctx, 1, in, 1, &o, &opt, &err) == NULL && err.code == TG_ERR_TYPE &&
                  strstr(err.message, "frobnicate"),
              "tg_fn_compile: an unknown op is named (%s)", err.message);
    o = rd("(add (input x float64 (n)) (const int32 1.5))");
    tg_error_clear(&err);
    TAP_CHECK(tg_fn_compile(ctx, 1, in, 1, &o, &opt, &err) == NULL && err.code == TG_ERR_TYPE &&
                  strstr(err.message, "(const int32 1.5)"),
              "tg_fn_compile: a value of the wrong dtype names the subterm (%s)", err.message);
    o = rd("(neg (input x float64 (n)) (input x float64 (n)))");
    tg_error_clear(&err);
    TAP_CHECK(tg_fn_compile(ctx, 1, in, 1, &o, &opt, &err) == NULL && err.code == TG_ERR_TYPE &&
                  strstr(err.message, "number of arguments"),
              "tg_fn_compile: an op with the wrong arity (%s)", err.message);
    tg_term *m = rd("(input m float64 (2 3))"), *k = rd("(input k float64 (4 5))");
    tg_term *mk[2] = {m, k};
    o = rd("(dot (input m float64 (2 3)) (input k float64 (4 5)))");
    tg_error_clear(&err);
    TAP_CHECK(tg_fn_compile(ctx, 2, mk, 1, &o, &opt, &err) == NULL && err.code == TG_ERR_TYPE,
              "tg_fn_compile: a shape mismatch known at compile time (%s)", err.message);
    o = rd("(neg (input z float64 (q)))");
    tg_error_clear(&err);
    TAP_CHECK(tg_fn_compile(ctx, 1, in, 1, &o, &opt, &err) == NULL && err.code == TG_ERR_TYPE,
              "tg_fn_compile: an input that is not among the inputs (%s)", err.message);
    tg_term *badin = rd("(input w float99 (3))");
    o = badin;
    tg_error_clear(&err);
    TAP_CHECK(tg_fn_compile(ctx, 1, &badin, 1, &o, &opt, &err) == NULL && err.code != TG_OK,
              "tg_fn_compile: an unknown dtype (%s)", err.message);

    o = rd("(add (input x float64 (n)) (input y float64 (n)))");
    tg_fn *fn = tg_fn_compile(ctx, 2, in, 1, &o, &opt, &err);
    TAP_CHECK(fn != NULL && tg_fn_native(fn) == 0, "a function is compiled for the interpreter");
    double a4[4] = {1, 2, 3, 4}, b5[5] = {1, 2, 3, 4, 5}, r4[4];
    int32_t i4[4] = {1, 2, 3, 4};
    int64_t s4 = 4, s5 = 5, s3 = 3;
    tg_array args[2], out;
    tg_array_init(&args[0], TG_FLOAT64, 1, &s4, a4);
    tg_array_init(&args[1], TG_FLOAT64, 1, &s5, b5);
    memset(&out, 0, sizeof out);
    tg_error_clear(&err);
    TAP_CHECK(fn && tg_fn_call(fn, args, &out, &err) == -1 && strstr(err.message, "input y") &&
                  out.data == NULL,
              "tg_fn_call: a shape that disagrees names the input (%s)", err.message);
    tg_array_init(&args[1], TG_INT32, 1, &s4, i4);
    tg_error_clear(&err);
    TAP_CHECK(fn && tg_fn_call(fn, args, &out, &err) == -1 && strstr(err.message, "y") && out.data == NULL,
              "tg_fn_call: a dtype that disagrees names the input (%s)", err.message);
    tg_array_init(&args[1], TG_FLOAT64, 1, &s4, b5);
    tg_array_init(&out, TG_FLOAT64, 1, &s3, r4);
    tg_error_clear(&err);
    TAP_CHECK(fn && tg_fn_call(fn, args, &out, &err) == -1 && strstr(err.message, "output"),
              "tg_fn_call: an output of the wrong shape (%s)", err.message);
    tg_array_init(&out, TG_FLOAT64, 1, &s4, r4);
    TAP_CHECK(fn && tg_fn_call(fn, args, &out, &err) == 0 && r4[0] == 2 && r4[3] == 8,
              "tg_fn_call: the function still runs after the errors");
    TAP_CHECK(tg_fn_schedule(NULL) == NULL && tg_fn_schedule(fn) != NULL,
              "tg_fn_schedule: no function has no schedule");
    tg_fn_free(fn);
    TAP_CHECK(usable(NULL), "the context works after the kernel errors");
}

int main(void)
{
    tg_error err;
    if (!mkdtemp(tmpdir)) {
        TAP_CHECK(0, "a temporary directory");
        return TAP_DONE();
    }
    ctx = tg_ctx_new(&err);
    TAP_CHECK(ctx != NULL, "tg_ctx_new: a context");
    errors_and_terms();
    reading();
    logic();
    tg_rules *rs = tg_rules_new(ctx, &err);
    loading(rs);
    rewriting(rs);
    tg_rules_free(rs);
    kernels();
    tg_ctx_free(ctx);

    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        TAP_DIAG("could not remove %s", tmpdir);
    return TAP_DONE();
}
