/* printer.h - the canonical printer, for code inside the library (internal).
 *
 * tg_print and friends in tgrel.h are thin wrappers over these; the REPL
 * and error messages append into buffers of their own instead of getting
 * a fresh string each time.
 */
#ifndef TGREL_PRINTER_H
#define TGREL_PRINTER_H

#include "buf.h"
#include "tgrel.h"

/* Append the canonical form of t to b; 0, or -1 when out of memory (b->oom
 * set) or t is NULL. */
int tgP_print_buf(tgB_buf *b, const tg_term *t);
/* Same with repeated pairs named: "... where *1 = ...". */
int tgP_print_shared_buf(tgB_buf *b, const tg_term *t);
/* Write t to f through a bounded buffer; shared selects the display of
 * tgP_print_shared_buf.  0, or -1 on a write error or out of memory. */
int tgP_print_file(FILE *f, const tg_term *t, int shared);

/* The atoms on their own, for callers that print terms of their own
 * making (reified answers, messages). */
void tgP_symbol(tgB_buf *b, const char *name, size_t len);
void tgP_string(tgB_buf *b, const char *bytes, size_t len);
void tgP_double(tgB_buf *b, double v);
/* Variable with the given name and id, as ?name or ?name.N. */
void tgP_var(tgB_buf *b, const char *name, size_t len, uint64_t id);
/* True when the symbol with this name prints without |...|. */
int tgP_symbol_is_bare(const char *name, size_t len);

/* Shortest text for v that strtod reads back to the same bits, written to
 * out (at least 32 bytes), NUL-terminated; returns its length.  Always
 * reads as a double: "1.0", "1e+100", "inf", "nan". */
size_t tgP_format_double(char *out, double v);

#endif
