/* cache.h - compiling generated C into a shared object through an
 * on-disk cache (module prefix tgZ_).  See doc/kernels.md. */
#ifndef TG_KERNELS_CACHE_H
#define TG_KERNELS_CACHE_H

#include <stddef.h>

#include "tgrel.h"

/* What tgZ_load found when it failed. */
enum { TGQ_OK = 0, TGQ_NO_COMPILER, TGQ_FAILED };

/* Makes the C source of an entry (malloc'd; NULL when out of memory).
 * A source may be cut into units, each started by a line TGZ_UNIT: what
 * comes before the first is the prelude every unit needs, and the units
 * need nothing of each other, so the compiler may build them apart, in
 * parallel, and link them together. */
typedef char *(*tgZ_gen_fn)(void *ud, size_t *len);
#define TGZ_UNIT "/* tgk unit */\n"

/* dlopen the shared object keyed by keytext (which must determine the
 * source gen makes) and built with compiler cc and flags cflags (NULL:
 * the defaults, or $TGREL_CC / $TGREL_CFLAGS): from the cache when an
 * intact entry is there (through keytext's map, or else an object built
 * from the source gen(ud) makes), else that source is compiled, verified
 * and stored.  NULL with err filled and *why set on failure.  *hit tells
 * whether the code came from the cache (no compiler ran). */
void *tgZ_load(const char *keytext, size_t keylen, tgZ_gen_fn gen, void *ud, const char *cc,
               const char *cflags, int *hit, int *why, tg_error *err);

/* Where tgZ_load_timed spent its time: generating the source and
 * running the compiler (0 on a hit), and the rest (the cache's lock and
 * checks, loading). */
typedef struct tgZ_times {
    double gen_ms, cc_ms, load_ms;
} tgZ_times;
/* tgZ_load, and its times in *times (when not NULL). */
void *tgZ_load_timed(const char *keytext, size_t keylen, tgZ_gen_fn gen, void *ud, const char *cc,
                     const char *cflags, int *hit, int *why, tgZ_times *times, tg_error *err);

/* The key of a key text: the hash of this library's build, the CPU
 * (tgZ_cpu_id), compiler, flags and keytext, as 32 hex digits; its map
 * DIR/KEY.src names the code entry.  -1 when out of memory. */
int tgZ_key(const char *keytext, size_t keylen, const char *cpu, const char *cc, const char *cflags,
            char key[33]);
/* The name of a code entry DIR/SKEY.so: the hash of the CPU, compiler,
 * flags and the source, as 32 hex digits.  -1 when out of memory. */
int tgZ_source_key(const char *src, size_t len, const char *cpu, const char *cc, const char *cflags,
                   char key[33]);
/* This CPU, for the keys of compiled code, as 32 hex digits: its model
 * and every feature bit (x86 cpuid), or /proc/cpuinfo elsewhere. */
const char *tgZ_cpu_id(void);

/* The cache directory in use: $TGREL_CACHE_DIR, else $XDG_CACHE_HOME/tgrel,
 * else $HOME/.cache/tgrel; written into buf.  -1 when none can be named. */
int tgZ_dir(char *buf, size_t size);

/* Side entries DIR/KEY.ext: data keyed by keytext and the library's
 * build, with the same trailer as the shared objects.  tgZ_side_get
 * returns the data (malloc'd, NUL-terminated, *len set), or NULL when the
 * entry is missing, truncated or corrupt; tgZ_side_put writes it to a
 * name of its own, fsyncs and renames it into place: 0 or -1. */
char *tgZ_side_get(const char *keytext, size_t keylen, const char *ext, size_t *len);
int tgZ_side_put(const char *keytext, size_t keylen, const char *ext, const char *data, size_t len);

/* The code entry's name a map file names, into skey: 0, or -1 when the
 * map is missing, truncated, corrupt or names no key. */
int tgZ_map_read(const char *path, char skey[33]);

/* ---- the directory (cachedir.c) ---- */

/* Lock file path exclusively (waiting when wait is set): its fd, or -1
 * (busy without wait, or an error).  tgZ_unlock removes the file and
 * closes fd, so no lock file outlives its use; a waiter that was given
 * the lock of a removed file takes the path's new one. */
int tgZ_lock(const char *path, int wait);
void tgZ_unlock(const char *path, int fd);
/* Count a hit or a miss in DIR/stats (every process's together). */
enum { TGZ_CODE_HIT, TGZ_CODE_MISS, TGZ_RW_HIT, TGZ_RW_MISS };
void tgZ_count(const char *dir, int k);
/* Mark an entry used now (recency for eviction). */
void tgZ_touch(const char *path);
/* Keep dir within $TGREL_CACHE_MAX: remove least recently used entries
 * (never the one named keep, nor one another process has locked). */
void tgZ_evict(const char *dir, const char *keep);

/* 128-bit hash of bytes, as 32 hex digits and a NUL in out. */
void tgZ_hash_hex(const void *p, size_t n, char out[33]);

#endif
