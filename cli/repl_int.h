/* repl_int.h - what the REPL's files share (program-only, prefix tgM_):
 * the session, the helpers that report and print, and the commands of
 * repl_tensor.c. */
#ifndef TG_REPL_INT_H
#define TG_REPL_INT_H

#include <stdio.h>

#include "repl.h"

typedef struct repl {
    tg_ctx *ctx;
    tg_rules *rs;
    const tgM_repl_opts *o;
    const char *name;       /* the input's name in errors */
    int line;               /* where the entry being run starts */
    const char *entry;      /* the text of the entry being run */
    tg_term *last_why;      /* the firings the last :step showed (for :history) */
    tg_term *hist_start;    /* the term the last :step rewrote */
    tg_term *hist;          /* its firings as traced: ("RULE" BEFORE AFTER) ... */
    size_t hist_dropped;    /* firings beyond HISTORY_FIRINGS, not kept */
    FILE *out;              /* standard output, or through the colouring filter */
    char *argtext;          /* a command's entry with the :name blanked out,
                             * so that its arguments read at their place */
    int col;                /* the column the entry's command or form starts at */
    int nargpos;            /* where the first arguments begin (tgM_read_args) */
    int argline[8], argcol[8];
    int at;                 /* the argument an error without a place is about
                             * (tgM_report_here), -1: the command */
    int shared;             /* :shared on */
    int types;              /* :types on: :eval shows the dtype and shape */
    int quit;
    struct replfn *fns;     /* the functions :fn defined (collector memory) */
    tg_term *let_names;     /* :let: names and the terms they stand for, two lists */
    tg_term *let_terms;
    /* :profile eval: the profile of the last :eval's function */
    tg_fn_stats last_eval;
    int has_last_eval;
    /* :mode and :check (repl_tensor.c): how :eval rewrites with a loaded
     * library's default rewriter */
    const char *mode;       /* NULL: $TGREL_MODE, else fast_run */
    int check;              /* the checking mode on */
    double check_tol;       /* its tolerance (0: the default) */
    int skip_defs;          /* a file's definitions are in: evaluate the other forms */
} repl;

/* An error of the current entry, with its place: when it has none of its
 * own, that of the argument R->at, else that of the command. */
void tgM_report_here(const repl *R, tg_error *err);
/* tg_fn_call, which Ctrl-C interrupts (tg_fn_interrupt) while it runs. */
int tgM_fn_call(tg_fn *fn, const tg_array *inputs, tg_array *outputs, tg_error *err);
/* A message of the current entry: fmt with one %s, arg. */
void tgM_complain(const repl *R, const char *fmt, const char *arg);
/* t on the session's output, shared subterms as :shared says. */
void tgM_show(const repl *R, const tg_term *t);
/* Read a command's arguments (min to max terms) into t: their number,
 * or -1 after reporting usage. */
int tgM_read_args(repl *R, const char *cmd, const char *text, tg_term **t, int min, int max,
                  const char *usage);

/* repl_tensor.c: tensor functions, :let names, shared variables. */
int tgM_cmd_let(repl *R, const char *name, const char *args);
int tgM_cmd_eval(repl *R, const char *name, const char *args);
int tgM_cmd_var(repl *R, const char *name, const char *args);
int tgM_cmd_fn(repl *R, const char *name, const char *args);
int tgM_cmd_call(repl *R, const char *name, const char *args);
int tgM_cmd_repeat(repl *R, const char *name, const char *args);
/* :profile fn NAME, :profile eval and :profile rewrite: print a
 * function's profile, or the last rewrite's timed profile. */
int tgM_profile_fn(repl *R, tg_term *name);
int tgM_profile_eval(repl *R);
int tgM_profile_rewrite(repl *R);
int tgM_cmd_save(repl *R, const char *name, const char *args);
int tgM_cmd_mode(repl *R, const char *name, const char *args);
int tgM_cmd_check(repl *R, const char *name, const char *args);
/* :undef's part of the session: name's :let binding and shared
 * variable; whether any went (what they were added to what). */
int tgM_undef_session(repl *R, tg_term *name, char *what, size_t cap);
/* Free the functions :fn compiled. */
void tgM_free_fns(repl *R);

#endif
