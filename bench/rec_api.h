/* rec_api.h - the rewriting engine's calls that the REC harness uses
 * (patterns/, being written), repeated from its planned public API so
 * that bench/rec.c compiles before they land in tgrel.h; it links only
 * once they exist.  Repeating a prototype or a typedef is valid C11, and
 * the compiler then checks that these match the real ones; the flag is a
 * macro so that it cannot clash with the real header's enumerator (that
 * one, seen first, is shadowed by the same value).  Delete this file when
 * tgrel.h has them. */
#ifndef TGREL_BENCH_REC_API_H
#define TGREL_BENCH_REC_API_H

#include "tgrel.h"

#ifndef TG_NF_MEMO
#define TG_NF_MEMO 1u  /* cache the normal form of every call */
#endif

typedef struct tg_rules tg_rules;
tg_rules *tg_rules_new(tg_ctx *ctx, tg_error *err);
void tg_rules_free(tg_rules *rs);
int tg_rules_load_string(tg_rules *rs, const char *text, size_t len, const char *file,
                         tg_error *err);
tg_term *tg_normalize(tg_rules *rs, tg_term *t, unsigned flags, tg_error *err);
void tg_rules_counts(const tg_rules *rs, unsigned long long *rewrites,
                     unsigned long long *conditions);

#endif
