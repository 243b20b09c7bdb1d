/* rec_sha256.h - a streaming SHA-256 (FIPS 180-4) for the REC benchmark
 * harness: normal forms of hundreds of megabytes are hashed as they are
 * printed, chunk by chunk, never held whole in memory. */
#ifndef TGREL_BENCH_REC_SHA256_H
#define TGREL_BENCH_REC_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct tg_rec_sha256 {
    uint32_t h[8];
    uint64_t total;         /* bytes hashed so far */
    size_t fill;            /* bytes waiting in block */
    unsigned char block[64];
} tg_rec_sha256;

void tg_rec_sha256_init(tg_rec_sha256 *s);
void tg_rec_sha256_update(tg_rec_sha256 *s, const void *data, size_t len);
/* Pad, finish and write the 32-byte digest; s must be initialized again
 * before it is reused. */
void tg_rec_sha256_final(tg_rec_sha256 *s, unsigned char digest[32]);
/* Lower-case hex of a digest: 64 characters and a NUL. */
void tg_rec_sha256_hex(const unsigned char digest[32], char hex[65]);

#endif
