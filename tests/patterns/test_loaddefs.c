/* test_loaddefs.c - tg_rules_load_file_defs and tg_rules_check_file
 * (every error of a file, up to a limit): a file's definitions load
 * and its other forms (normalize, rewrite, run*, a term) are skipped,
 * where tg_rules_load_file refuses them; a file with a bad rule loads
 * nothing (all or nothing); a NULL argument or a missing file is an error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "tgrel.h"

static char *write_file(const char *text)
{
    char *path = strdup("tgrel-loaddefs-XXXXXX");    /* in the build directory, removed at the end */
    int fd = mkstemp(path);
    if (fd < 0)
        return NULL;
    ssize_t n = write(fd, text, strlen(text));
    close(fd);
    return n == (ssize_t)strlen(text) ? path : NULL;
}

int main(void)
{
    tg_error err;
    tg_error_clear(&err);
    tg_ctx *ctx = tg_ctx_new(&err);
    tg_rules *rs = tg_rules_new(ctx, &err);
    char *good = write_file("(op add (arity 2))\n(rule add-zero (add ?x 0) => ?x)\n"
                            "(equilibrium simplify add-zero)\n(rewrite simplify (add a 0))\n"
                            "(run* (q) (== q 1))\n(normalize (add b 0))\nplain-term\n");
    char *bad = write_file("(op mul (arity 2))\n(rule mul-one (mul ?x 1) => ?x)\n(rule broken (mul ?x) =>)\n");
    TAP_CHECK(good && bad, "test files written");
    if (!good || !bad)
        return TAP_DONE();

    TAP_EQ_INT(tg_rules_load_file(rs, good, &err), -1, "tg_rules_load_file refuses a (rewrite ...) form");
    tg_error_clear(&err);
    TAP_EQ_INT(tg_rules_load_file_defs(rs, good, &err), 0, "tg_rules_load_file_defs loads the file");
    tg_term *r = tg_normalize(rs, tg_read_cstr(ctx, "(add c 0)", &err), 0, &err);
    TAP_CHECK(r == tg_symbol_cstr(ctx, "c"), "its rule is in");
    r = tg_rewrite(rs, tg_symbol_cstr(ctx, "simplify"), tg_read_cstr(ctx, "(add d 0)", &err), &err);
    TAP_CHECK(r == tg_symbol_cstr(ctx, "d"), "its rewriter is in");

    tg_error_clear(&err);
    TAP_EQ_INT(tg_rules_load_file_defs(rs, bad, &err), -1, "a file with a bad rule fails");
    TAP_EQ_INT(err.line, 3, "... at the bad rule's line");
    tg_error_clear(&err);
    r = tg_normalize(rs, tg_read_cstr(ctx, "(mul e 1)", &err), 0, &err);
    TAP_CHECK(r == tg_read_cstr(ctx, "(mul e 1)", &err), "and loads nothing: its good rule is not in");

    /* every error of a file, reading on after each */
    char *multi = write_file("(op add (arity 2))\n(rule a1 (add ?x 0) => ?x)\n(rule bad1 (add ?x) =>)\n"
                             "(rule a2 (add 0 ?x) => ?x)\n(rule bad2 (add ?x 1) => ?y)\n"
                             "(rule a1 (add ?x 0) => ?x)\n");
    tg_error errs[8];
    long n = multi ? tg_rules_check_file(rs, multi, errs, 8) : -1;
    TAP_EQ_INT(n, 3, "tg_rules_check_file reports the three bad forms");
    TAP_CHECK(n == 3 && errs[0].line == 3 && errs[1].line == 5 && errs[2].line == 6,
              "at their lines: 3, 5 and 6");
    tg_error_clear(&err);
    r = tg_normalize(rs, tg_read_cstr(ctx, "(add 0 e)", &err), 0, &err);
    TAP_CHECK(r == tg_read_cstr(ctx, "(add 0 e)", &err), "and the file's good rules are not in");
    TAP_EQ_INT(multi ? tg_rules_check_file(rs, multi, errs, 2) : -1, 2, "at most max errors");
    TAP_EQ_INT(tg_rules_check_file(rs, multi, NULL, 2), -1, "no error array: -1");
    tg_rules *fresh = tg_rules_new(ctx, &err);
    TAP_EQ_INT(tg_rules_check_file(fresh, good, errs, 8), 0, "a good file: 0 errors");
    r = tg_normalize(fresh, tg_read_cstr(ctx, "(add f 0)", &err), 0, &err);
    TAP_CHECK(r == tg_symbol_cstr(ctx, "f"), "and it is loaded");
    tg_rules_free(fresh);
    if (multi)
        unlink(multi);
    free(multi);

    TAP_EQ_INT(tg_rules_load_file_defs(NULL, good, &err), -1, "a NULL rule set is an error");
    TAP_EQ_INT(tg_rules_load_file_defs(rs, "nonexistent-dir/x.rules", &err), -1, "a missing file is an error");
    unlink(good);
    unlink(bad);
    free(good);
    free(bad);
    tg_rules_free(rs);
    tg_ctx_free(ctx);
    return TAP_DONE();
}
