/* reader.h - internal helpers of the S-expression reader (reader.c).
 *
 * The public entry points (tg_reader_*, tg_read*, tg_slurp_file) are in
 * tgrel.h.  What is here lets other modules, the printer first of all,
 * agree with the reader on what a bare token means, so that printed text
 * always reads back to the same term; and it lets the layers that read
 * source files (rule files first of all) point an error at the subterm
 * it is about, which a hash-consed term cannot record itself.
 */
#ifndef TG_READER_H
#define TG_READER_H

#include "tgrel.h"

/* 1 when the len bytes of name, written bare, read back as that very
 * symbol (not a number, a variable, the dot, a comment or a quoted
 * symbol, and made of token characters only); 0 when they need |...|. */
int tgR_symbol_is_plain(const char *name, size_t len);

/* 1 when a variable with this name and id prints bare as ?name (id 0) or
 * ?name.id (id > 0) and reads back to itself; 0 when the name needs
 * ?|...|. */
int tgR_var_is_plain(const char *name, size_t len, uint64_t id);

/* 1 when byte c can appear in a bare token (not whitespace, not a
 * delimiter, not NUL). */
int tgR_is_token_char(unsigned char c);

/* ---- positions of subterms ------------------------------------------
 *
 * Terms are hash-consed, so a term cannot say where it was read; the
 * reader can.  With tracking on, each tg_reader_next that returns a form
 * also records where every datum of that form began, keyed by its term:
 * lists at their opening bracket, quote forms ('x, `x, ,x, ,@x) at the
 * prefix character, atoms at their first byte, the tail after a dot at
 * its own start.  Equal subterms are one term, so a term met several
 * times in the form has the position of its first occurrence; this holds
 * for small integers too (they are immediate values, not pointers: the
 * occurrences of 7 in a form cannot be told apart, as those of a symbol
 * cannot).  A tail that was not written as such (the (b c) inside
 * (a b c)), terms made after reading, and what a #; comment skips have
 * no position.  Lines and columns count as in errors: lines at newline
 * bytes, columns in bytes from 1 (a tab is one column). */

/* Turn recording on (nonzero) or off (0; the table is freed).  Off by
 * default: the reader then pays one test per datum.  It applies from the
 * next tg_reader_next on. */
void tgR_track_positions(tg_reader *r, int on);

/* Where sub was first read in the form the last tg_reader_next returned:
 * 0 with *line and *col set (either may be NULL), or -1 when there is no
 * such position (tracking off, no form returned by the last call, sub not
 * a datum of it, or memory ran out while recording); the caller then
 * falls back to tg_reader_last_pos, the form's own position.  Ask while
 * holding the form: the table does not keep its terms alive, and once
 * they are collected a new term may come to sit at a recorded address. */
int tgR_pos(const tg_reader *r, const tg_term *sub, int *line, int *col);

/* The file name errors of this reader carry ("<string>" when none was
 * given); valid while the reader lives. */
const char *tgR_file(const tg_reader *r);

#endif
