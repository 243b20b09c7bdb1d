/* repl.h - the read-eval-print loop of the tgrel program (program-only,
 * prefix tgM_): entries read line by line from a terminal (prompt, line
 * editing, history, completion, Ctrl-C), a pipe or a script; the :
 * commands; the machine mode for programs that drive tgrel. */
#ifndef TG_REPL_H
#define TG_REPL_H

#include <stdio.h>

#include "tgrel.h"

typedef struct tgM_repl_opts {
    int interactive;    /* a person at a terminal: prompt, editing, history */
    int machine;        /* no prompt; errors on stdout as "!error ..."; a
                         * TGM_END line after each entry's output */
    int shared;         /* print repeated subterms once (*1 = ...) */
    int color;          /* TGM_COLOR_OUT: colour rule names, :step's before
                         * and after, the prompt; TGM_COLOR_ERR: errors */
} tgM_repl_opts;

enum { TGM_COLOR_OUT = 1, TGM_COLOR_ERR = 2 };
/* The colour of errors, and the code that ends a colour. */
#define TGM_RED "\033[31m"
#define TGM_PLAIN "\033[0m"

/* The line that ends each entry's output in machine mode. */
#define TGM_END ";;end"

/* Read entries from in (named name in errors) until its end or :quit,
 * evaluating each in rs.  Returns the number of entries that had errors
 * (0 for an interactive session, whose errors a person saw); *quit is
 * set when :quit ended the loop. */
int tgM_repl(tg_ctx *ctx, tg_rules *rs, FILE *in, const char *name, const tgM_repl_opts *o,
             int *quit);

/* Read and evaluate every form of text (len bytes, named name in
 * errors, its first line numbered line) as the REPL does, without
 * commands; returns the number of errors. */
int tgM_eval_text(tg_ctx *ctx, tg_rules *rs, const char *text, size_t len, const char *name,
                  int line, const tgM_repl_opts *o);

/* Load the file at path all or nothing: its definitions first
 * (tg_rules_load_file_defs), then, once they are all in, its other forms
 * evaluated in order as tgM_eval_text evaluates them.  A file with an
 * error in a definition defines and prints nothing.  Returns the number
 * of errors. */
int tgM_load_file(tg_ctx *ctx, tg_rules *rs, const char *path, const tgM_repl_opts *o);
/* How many errors of a file :load, tgrel FILE and --check report. */
#define TGM_MAX_LOAD_ERRORS 20

/* 1 when text (len bytes) is not yet a whole entry: a list, string,
 * quoted symbol or block comment left open, or a quote prefix with no
 * datum after it; the REPL then reads another line. */
int tgM_incomplete(const char *text, size_t len);

#endif
