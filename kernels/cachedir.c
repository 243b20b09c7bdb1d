/* cachedir.c - keeping the compile cache's directory (module prefix tgZ_,
 * with cache.c): entry locks that leave no file behind, the counts of
 * hits and misses, the size limit ($TGREL_CACHE_MAX) kept by evicting the
 * least recently used entries, and the public tg_cache_info and
 * tg_cache_clear.
 *
 * Names in the directory: KEY.so (compiled code), KEY.src (maps: the code
 * a key text compiled to, bookkeeping that is neither counted nor sized
 * as an entry) and KEY.EXT (side entries: rewritten terms, .rw), KEY 32
 * hex digits; KEY.lock while an entry is built, loaded or evicted;
 * KEY.PID.c / .so / .log and KEY.EXT.PID.tmp while a process writes one;
 * "stats" the counts.  Only names of these forms are ever removed.
 *
 * Recency is the entry's modification time: a hit sets it to now. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache.h"
#include "error.h"

/* ---- entry locks ------------------------------------------------------------ */

int tgZ_lock(const char *path, int wait)
{
    for (;;) {
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0)
            return -1;
        while (flock(fd, LOCK_EX | (wait ? 0 : LOCK_NB)) < 0)
            if (errno != EINTR) {
                close(fd);
                return -1;
            }
        /* the holder before us may have removed the file (tgZ_unlock):
         * a lock on it locks nothing, so take the one on the path now */
        struct stat a, b;
        if (fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
            return fd;
        close(fd);
    }
}

void tgZ_unlock(const char *path, int fd)
{
    /* removed while held, so no one locks it after: waiters see it gone */
    unlink(path);
    close(fd);
}

/* ---- names -------------------------------------------------------------------- */

static int is_key(const char *s)
{
    for (int i = 0; i < 32; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    return s[32] == '.';
}

enum { N_OTHER, N_CODE, N_SIDE, N_LOCK, N_TEMP, N_MAP };

/* What a directory entry's name says it is; *pid the writer of a temporary. */
static int kind_of(const char *name, long *pid)
{
    *pid = 0;
    if (strlen(name) < 34 || !is_key(name))
        return N_OTHER;
    const char *ext = name + 33, *dot = strchr(ext, '.');
    if (!dot)
        return strcmp(ext, "so") == 0     ? N_CODE
               : strcmp(ext, "lock") == 0 ? N_LOCK
               : strcmp(ext, "src") == 0  ? N_MAP
                                          : N_SIDE;
    /* KEY.PID.(c|so|log) or KEY.EXT.PID.tmp */
    char *end;
    long p = strtol(ext, &end, 10);
    if (end != ext && end == dot) {
        *pid = p;
        return N_TEMP;
    }
    p = strtol(dot + 1, &end, 10);
    if (end != dot + 1 && strcmp(end, ".tmp") == 0) {
        *pid = p;
        return N_TEMP;
    }
    return N_OTHER;
}

/* ---- hits and misses ------------------------------------------------------- */

/* The counts in DIR/stats: code hits, code misses, rewrite hits, rewrite misses. */
typedef struct counts { unsigned long long v[4]; } counts;

static void read_counts(int fd, counts *c)
{
    char buf[256];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    memset(c, 0, sizeof *c);
    if (n <= 0)
        return;
    buf[n] = 0;
    sscanf(buf, "tgrel-cache-stats 1 %llu %llu %llu %llu", &c->v[0], &c->v[1], &c->v[2], &c->v[3]);
}

static int write_counts(int fd, const counts *c)
{
    char buf[256];
    int n = snprintf(buf, sizeof buf, "tgrel-cache-stats 1 %llu %llu %llu %llu\n", c->v[0], c->v[1], c->v[2],
                     c->v[3]);
    return pwrite(fd, buf, (size_t)n, 0) == n && ftruncate(fd, n) == 0 ? 0 : -1;
}

/* Add one to count k of DIR/stats (under its lock: processes count together). */
void tgZ_count(const char *dir, int k)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/stats", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    while (flock(fd, LOCK_EX) < 0)
        if (errno != EINTR) {
            close(fd);
            return;
        }
    counts c;
    read_counts(fd, &c);
    c.v[k]++;
    write_counts(fd, &c);
    flock(fd, LOCK_UN);
    close(fd);
}

void tgZ_touch(const char *path)
{
    utimensat(AT_FDCWD, path, NULL, 0);
}

/* ---- the size limit ---------------------------------------------------------- */

/* $TGREL_CACHE_MAX in bytes (a number with an optional K, M or G: powers
 * of 1024); 0 with *set clear when unset or empty, -1 when malformed. */
static int64_t max_bytes(int *set)
{
    const char *s = getenv("TGREL_CACHE_MAX");
    *set = s && *s;
    if (!*set)
        return 0;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    double unit = 1;
    switch (*end) {
    case 'k': case 'K': unit = 1024.0, end++; break;
    case 'm': case 'M': unit = 1024.0 * 1024, end++; break;
    case 'g': case 'G': unit = 1024.0 * 1024 * 1024, end++; break;
    }
    if (*end == 'B' || *end == 'b')
        end++;
    if (errno || end == s || *end || !(v >= 0) || v * unit > 9e18)
        return -1;
    return (int64_t)(v * unit);
}

typedef struct ent {
    char name[64];
    off_t size;
    struct timespec mtime;
} ent;

static int older(const void *a, const void *b)
{
    const ent *x = a, *y = b;
    if (x->mtime.tv_sec != y->mtime.tv_sec)
        return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
    if (x->mtime.tv_nsec != y->mtime.tv_nsec)
        return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* Entry name of dir: what its name says it is (kind_of), N_OTHER when
 * it cannot be stat'ed; its path (n bytes), writer and stat. */
static int entry_of(const char *dir, const char *name, char *path, size_t n, long *pid, struct stat *st)
{
    int k = kind_of(name, pid);
    snprintf(path, n, "%s/%.255s", dir, name);
    return k == N_OTHER || stat(path, st) < 0 ? N_OTHER : k;
}

/* The entries of dir (code and side entries), malloc'd; their count in *n. */
static ent *list_entries(const char *dir, size_t *n)
{
    DIR *d = opendir(dir);
    ent *v = NULL;
    size_t cap = 0;
    *n = 0;
    if (!d)
        return NULL;
    for (struct dirent *e; (e = readdir(d));) {
        long pid;
        char path[4400];
        struct stat st;
        int k = entry_of(dir, e->d_name, path, sizeof path, &pid, &st);
        if ((k != N_CODE && k != N_SIDE) || strlen(e->d_name) >= sizeof v->name)
            continue;
        if (*n == cap) {
            ent *nv = realloc(v, (cap ? 2 * cap : 64) * sizeof *nv);
            if (!nv)
                break;
            v = nv, cap = cap ? 2 * cap : 64;
        }
        snprintf(v[*n].name, sizeof v[*n].name, "%s", e->d_name);
        v[*n].size = st.st_size, v[*n].mtime = st.st_mtim;
        (*n)++;
    }
    closedir(d);
    return v;
}

/* Remove entry name of dir under its lock, unless someone holds it. */
static int remove_entry(const char *dir, const char *name)
{
    char path[4200], lock[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(lock, sizeof lock, "%s/%.32s.lock", dir, name);
    int fd = tgZ_lock(lock, 0);
    if (fd < 0)
        return -1;  /* being built or loaded: it stays */
    int rc = unlink(path) == 0 || errno == ENOENT ? 0 : -1;
    tgZ_unlock(lock, fd);
    return rc;
}

/* Remove the maps of dir whose code entry is gone (or that are not
 * whole): after an eviction, so that maps do not pile up.  A map removed
 * while another process reads it is a miss there, never a wrong hit. */
static void drop_maps(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d));) {
        long pid;
        char path[4400], code[4400], skey[33];
        struct stat st;
        if (entry_of(dir, e->d_name, path, sizeof path, &pid, &st) != N_MAP)
            continue;
        int whole = tgZ_map_read(path, skey) == 0;
        if (whole)
            snprintf(code, sizeof code, "%s/%s.so", dir, skey);
        if (!whole || (access(code, F_OK) < 0 && errno == ENOENT))
            unlink(path);
    }
    closedir(d);
}

void tgZ_evict(const char *dir, const char *keep)
{
    int set;
    int64_t max = max_bytes(&set);
    if (!set)
        return;
    if (max < 0) {
        static int warned;
        if (!warned++)
            fprintf(stderr, "tgrel: warning: TGREL_CACHE_MAX=%s is not a size (bytes, or a number with K, M or G); "
                            "the cache is not limited\n", getenv("TGREL_CACHE_MAX"));
        return;
    }
    size_t n;
    ent *v = list_entries(dir, &n);
    int64_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += v[i].size;
    size_t gone = 0;
    if (total > max) {
        qsort(v, n, sizeof *v, older);
        for (size_t i = 0; i < n && total > max; i++)
            if ((!keep || strcmp(v[i].name, keep) != 0) && remove_entry(dir, v[i].name) == 0)
                total -= v[i].size, gone++;
    }
    free(v);
    if (gone)
        drop_maps(dir);
}

/* ---- the public commands ---------------------------------------------------- */

int tg_cache_dir(char *buf, size_t size)
{
    if (!buf || !size)
        return -1;
    return tgZ_dir(buf, size);
}

int tg_cache_info(tg_cache_stats *out, tg_error *err)
{
    char dir[4096];
    if (!out)
        return tgE_arg(err, "tg_cache_info: no place for the counts"), -1;
    memset(out, 0, sizeof *out);
    if (tgZ_dir(dir, sizeof dir) < 0)
        return tgE_set(err, TG_ERR_IO, NULL, 0, 0, "cache: no cache directory (set TGREL_CACHE_DIR or HOME)"), -1;
    int set;
    int64_t max = max_bytes(&set);
    if (max < 0)
        return tgE_set(err, TG_ERR_ARG, NULL, 0, 0,
                       "cache: TGREL_CACHE_MAX=%s is not a size (bytes, or a number with K, M or G)",
                       getenv("TGREL_CACHE_MAX")), -1;
    out->max_bytes = (uint64_t)max;
    DIR *d = opendir(dir);
    if (!d)
        return errno == ENOENT ? 0 : (tgE_set(err, TG_ERR_IO, NULL, 0, 0, "cache: cannot read %s", dir), -1);
    for (struct dirent *e; (e = readdir(d));) {
        long pid;
        char path[4400];
        struct stat st;
        int k = entry_of(dir, e->d_name, path, sizeof path, &pid, &st);
        if (k == N_OTHER || k == N_MAP)
            continue;
        if (k == N_CODE || k == N_SIDE) {
            out->entries++;
            out->bytes += (uint64_t)st.st_size;
            if (k == N_CODE)
                out->code_entries++;
            else
                out->rewrite_entries++;
        } else if (k == N_LOCK) {
            out->locks++;
        } else {
            out->temporary++;
        }
    }
    closedir(d);
    char path[4200];
    snprintf(path, sizeof path, "%s/stats", dir);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        counts c;
        flock(fd, LOCK_SH);
        read_counts(fd, &c);
        close(fd);
        out->code_hits = c.v[0], out->code_misses = c.v[1];
        out->rewrite_hits = c.v[2], out->rewrite_misses = c.v[3];
    }
    return 0;
}

int tg_cache_clear(tg_cache_stats *removed, tg_error *err)
{
    char dir[4096];
    if (removed)
        memset(removed, 0, sizeof *removed);
    if (tgZ_dir(dir, sizeof dir) < 0)
        return tgE_set(err, TG_ERR_IO, NULL, 0, 0, "cache: no cache directory (set TGREL_CACHE_DIR or HOME)"), -1;
    DIR *d = opendir(dir);
    if (!d)
        return errno == ENOENT ? 0 : (tgE_set(err, TG_ERR_IO, NULL, 0, 0, "cache: cannot read %s", dir), -1);
    size_t busy = 0;
    for (struct dirent *e; (e = readdir(d));) {
        long pid;
        char path[4400];
        struct stat st;
        int k = entry_of(dir, e->d_name, path, sizeof path, &pid, &st);
        if (k == N_OTHER)
            continue;
        if (k == N_MAP) {
            unlink(path);   /* a map read after this names no entry: a miss */
        } else if (k == N_CODE || k == N_SIDE) {
            if (remove_entry(dir, e->d_name) < 0) {
                busy++;
                continue;
            }
            if (removed) {
                removed->entries++, removed->bytes += (uint64_t)st.st_size;
                if (k == N_CODE)
                    removed->code_entries++;
                else
                    removed->rewrite_entries++;
            }
        } else if (k == N_LOCK) {
            /* left by an older version, or held: taken and removed only when free */
            int fd = tgZ_lock(path, 0);
            if (fd >= 0) {
                tgZ_unlock(path, fd);
                if (removed)
                    removed->locks++;
            }
        } else if (pid > 0 && kill((pid_t)pid, 0) < 0 && errno == ESRCH && unlink(path) == 0 && removed) {
            removed->temporary++;   /* its writer is gone */
        }
    }
    closedir(d);
    char path[4200];
    snprintf(path, sizeof path, "%s/stats", dir);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd >= 0) {
        counts c;
        memset(&c, 0, sizeof c);
        flock(fd, LOCK_EX);
        write_counts(fd, &c);
        close(fd);
    }
    if (busy)
        return tgE_set(err, TG_ERR_IO, NULL, 0, 0, "cache: %zu entr%s in use by another process kept in %s", busy,
                       busy == 1 ? "y" : "ies", dir), -1;
    return 0;
}
