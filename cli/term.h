/* term.h - the REPL's terminal, term.c (program-only, prefix tgM_): the
 * colours, the colouring filter, the prompts, Ctrl-C, the history file,
 * completion and reading a line; and the two things of repl.c that
 * completion draws on. */
#ifndef TG_TERM_H
#define TG_TERM_H

#include <signal.h>
#include <stdio.h>

#include "repl_int.h"

/* Colours (SGR codes) of the terminal output. */
#define INK_RULE "\033[35m"
#define INK_BEFORE "\033[33m"
#define INK_AFTER "\033[32m"
#define INK_PROMPT "\033[1;34m"

/* What Ctrl-C restores, and the history file, of a session at a terminal. */
typedef struct tgM_term {
    struct sigaction old;
    char *hist;
} tgM_term;

/* Standard output through the colouring filter (unbuffered, so that it
 * keeps its order with what goes to stdout directly); stdout when the
 * filter cannot be made. */
FILE *tgM_tint_open(void);
/* Make the prompts for R; the first line's, or that of a line that
 * continues an entry. */
void tgM_make_prompts(const repl *R);
const char *tgM_prompt(int continued);
/* Ctrl-C was hit since the last tgM_clear_interrupt. */
int tgM_interrupted(void);
void tgM_clear_interrupt(void);
/* A session at a terminal: Ctrl-C's handler, completion and the history
 * file, set up and put back. */
void tgM_term_open(repl *R, tgM_term *t);
void tgM_term_close(tgM_term *t);
/* Add the entry text (len bytes, its last a newline) to the history. */
void tgM_history_add(const repl *R, char *text, size_t len);
/* The next line (malloc'd, without its newline), or NULL at the end. */
char *tgM_get_line(repl *R, FILE *in, const char *prompt);

/* repl.c: the i-th command's name (NULL past the last), and whether the
 * rewriter x is one the REPL declared for :rewrite RULE TERM. */
const char *tgM_command_name(size_t i);
int tgM_hidden_rewriter(const repl *R, tg_term *x);

#endif
