/* reader.h - internal helpers of the S-expression reader (reader.c).
 *
 * The public entry points (tg_reader_*, tg_read*, tg_slurp_file) are in
 * tgrel.h.  What is here lets other modules, the printer first of all,
 * agree with the reader on what a bare token means, so that printed text
 * always reads back to the same term.
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

#endif
