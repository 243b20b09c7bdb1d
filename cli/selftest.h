/* selftest.h - `tgrel --run-tests`: runs .test files (input line, expected
 * output lines) and reports in TAP.  Part of the tgrel program, not of the
 * library; program-only functions use the tgM_ prefix. */
#ifndef TG_SELFTEST_H
#define TG_SELFTEST_H

#include <stdio.h>

#include "tgrel.h"

/* Print t in the form the program prints (tg_print or tg_print_shared);
 * malloc'd, NULL when out of memory. */
char *tgM_print_term(const tg_term *t, int shared, size_t *len);

/* Evaluate t (just read by r, or NULL) in the rule set env and write what
 * the program prints for it to out: the answer list of a run (each
 * answer written as soon as it is found), a normal form, or t itself,
 * then a newline; nothing for a definition.  Returns 0, or -1 with err
 * filled on an error. */
int tgM_eval_print(tg_rules *env, tg_reader *r, tg_term *t, int shared,
                   FILE *out, tg_error *err);

/* Run the cases of the nfiles test files; prints TAP on stdout.  Returns
 * the exit status: 0 when every case passed, 1 otherwise. */
int tgM_run_tests(tg_ctx *ctx, char *const *files, int nfiles, int shared);

#endif
