/* rec_hash.h - SHA-256 of a term's canonical printing, streamed: the REC
 * benchmarks check normal forms of up to 200 MB of text (and 3.6 million
 * levels deep) against their expected hash, byte and symbol counts. */
#ifndef TGREL_BENCH_REC_HASH_H
#define TGREL_BENCH_REC_HASH_H

#include "tgrel.h"

#include <stddef.h>

typedef struct tg_rec_digest {
    unsigned char sha[32];
    unsigned long long bytes;       /* length of the printing */
    unsigned long long symbols;     /* symbol occurrences */
} tg_rec_digest;

/* Hash the printing of t: single spaces, nullary symbols bare, the same
 * text tg_print gives for REC terms.  Iterative (any depth).  0, or -1
 * when out of memory. */
int tg_rec_hash_term(const tg_term *t, tg_rec_digest *out);

/* Whether t prints to the expected hash, length and symbol count: 1, or
 * 0 with the reason in why (what t printed to, or out of memory). */
int tg_rec_hash_check(const tg_term *t, const unsigned char sha[32], unsigned long long bytes,
                      unsigned long long symbols, char *why, size_t whysize);

#endif
