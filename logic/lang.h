/* lang.h - the logic language: compiling S-expression goals (the
 * faster-miniKanren dialect) into search goals, and the top-level forms
 * defrel, run and run*. */
#ifndef TG_LANG_H
#define TG_LANG_H

#include "search.h"

/* The text of logic/lib/ (generated: logic/prelude.c). */
extern const char tgL_prelude[];

#endif
