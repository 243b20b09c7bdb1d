/* cache.c - the compile cache of generated kernels (module prefix tgZ_).
 *
 * Compiled code is DIR/SKEY.so, SKEY the hash of the CPU, compiler, flags
 * and the C source itself.  The caller's key text (fn.c: the input terms
 * and the lowering's version), with this build of the library, the CPU,
 * compiler and flags, hashes to KEY, and the map DIR/KEY.src names the
 * SKEY it compiled to, so a hit never generates the source at all.  A miss
 * of KEY generates the source, and an object already built from the same
 * source serves as it is: after the library is rebuilt, or its lowering
 * version moves, only the code that changed is compiled again.  A 24-byte
 * trailer (magic, then the hash of every byte before it) is appended to
 * every file (the loader ignores bytes past the segments), so a truncated
 * or corrupt entry or map is noticed and rebuilt.  Builders take an
 * exclusive flock on DIR/SKEY.lock, so two processes compiling one source
 * do not collide, and write to a temporary name that is renamed into
 * place, so readers never see half an entry. */
#define _GNU_SOURCE 1   /* dl_iterate_phdr */
#include "config.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <fcntl.h>
#include <sched.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cache.h"
#include "clock.h"
#include "error.h"

extern char **environ;

static const char magic[8] = {'T', 'G', 'K', 'C', 'A', 'C', 'H', '1'};
#ifdef HAVE_LIBMVEC
#define TGQ_MVEC " -DTGK_MVEC"
#else
#define TGQ_MVEC ""
#endif
#ifdef TGREL_OPENMP_FLAG
#define TGQ_OMP " " TGREL_OPENMP_FLAG
#else
#define TGQ_OMP " -fopenmp-simd"
#endif
#define TGQ_DEFAULT_FLAGS "-O2 -march=native -fno-math-errno -ffp-contract=off" TGQ_OMP TGQ_MVEC

/* ---- hashing --------------------------------------------------------- */

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

static void hash128(const void *p, size_t n, uint64_t out[2])
{
    const unsigned char *s = p;
    uint64_t a = 0x243F6A8885A308D3ull ^ n, b = 0x13198A2E03707344ull;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        a = (a ^ w) * 0x9E3779B97F4A7C15ull;
        a = a << 31 | a >> 33;
        b = (b + w) * 0xC2B2AE3D27D4EB4Full;
        b ^= b >> 29;
    }
    uint64_t w = 0;
    memcpy(&w, s + i, n - i);
    a = mix64(a ^ w ^ (uint64_t)(n - i) << 56);
    b = mix64(b + w + a);
    out[0] = a, out[1] = mix64(b ^ 0x452821E638D01377ull);
}

void tgZ_hash_hex(const void *p, size_t n, char out[33])
{
    uint64_t h[2];
    hash128(p, n, h);
    snprintf(out, 33, "%016llx%016llx", (unsigned long long)h[0], (unsigned long long)h[1]);
}

/* ---- the directory ------------------------------------------------------- */

static int mkdirs(const char *path)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp)
        return -1;
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    return mkdir(tmp, 0755) < 0 && errno != EEXIST ? -1 : 0;
}

int tgZ_dir(char *buf, size_t size)
{
    const char *d = getenv("TGREL_CACHE_DIR"), *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
    int n;
    if (d && *d)
        n = snprintf(buf, size, "%s", d);
    else if (x && *x)
        n = snprintf(buf, size, "%s/tgrel", x);
    else if (h && *h)
        n = snprintf(buf, size, "%s/.cache/tgrel", h);
    else
        return -1;
    return n > 0 && (size_t)n < size ? 0 : -1;
}

/* ---- entries --------------------------------------------------------------- */

static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n == cap) {
            char *nb = realloc(buf, cap ? 2 * cap : 65536);
            if (!nb) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = nb, cap = cap ? 2 * cap : 65536;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    fclose(f);
    *len = n;
    return buf;
}

/* An entry is intact when its trailer's hash matches its contents. */
static int intact(const char *path)
{
    size_t n;
    char *buf = read_all(path, &n);
    int ok = 0;
    if (buf && n > 24 && memcmp(buf + n - 24, magic, 8) == 0) {
        uint64_t h[2];
        hash128(buf, n - 24, h);
        ok = memcmp(buf + n - 16, h, 16) == 0;
    }
    free(buf);
    return ok;
}

static int append_trailer(const char *path)
{
    size_t n;
    char *buf = read_all(path, &n);
    if (!buf)
        return -1;
    uint64_t h[2];
    hash128(buf, n, h);
    free(buf);
    FILE *f = fopen(path, "ab");
    if (!f)
        return -1;
    int ok = fwrite(magic, 1, 8, f) == 8 && fwrite(h, 1, 16, f) == 16;
    ok &= fflush(f) == 0 && fsync(fileno(f)) == 0;
    return fclose(f) == 0 && ok ? 0 : -1;
}

/* The data of the entry at path (malloc'd, NUL-terminated, *len set), or
 * NULL when it is missing, truncated or corrupt. */
static char *entry_get(const char *path, size_t *len)
{
    size_t n;
    char *buf = read_all(path, &n);
    uint64_t h[2];
    if (!buf || n < 24 || memcmp(buf + n - 24, magic, 8) != 0 ||
        (hash128(buf, n - 24, h), memcmp(buf + n - 16, h, 16)) != 0) {
        free(buf);
        return NULL;
    }
    buf[n - 24] = 0;   /* the trailer's room holds the NUL */
    *len = n - 24;
    return buf;
}

/* Write data and its trailer to a name of its own, fsync and rename it
 * to path: 0 or -1. */
static int entry_put(const char *path, const char *data, size_t len)
{
    char tmp[4300];
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    uint64_t h[2];
    hash128(data, len, h);
    FILE *f = fopen(tmp, "wb");
    if (!f)
        return -1;
    int ok = fwrite(data, 1, len, f) == len && fwrite(magic, 1, 8, f) == 8 && fwrite(h, 1, 16, f) == 16;
    ok &= fflush(f) == 0 && fsync(fileno(f)) == 0;
    ok &= fclose(f) == 0;
    /* writers of one key write the same bytes: the last rename wins */
    if (!ok || rename(tmp, path) < 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

/* Start cc flags TAIL..., its messages into log: the pid, or -1 (*missing
 * set when the compiler is not there). */
static pid_t spawn_cc(const char *cc, const char *flags, const char *const *tail, size_t ntail, const char *log,
                      int *missing)
{
    char fl[2048];
    snprintf(fl, sizeof fl, "%s", flags);
    size_t cap = ntail + 80, k = 0;
    char **argv = malloc(cap * sizeof *argv);
    if (!argv)
        return -1;
    argv[k++] = (char *)cc;
    char *save = NULL;
    for (char *tok = strtok_r(fl, " \t", &save); tok && k < 70; tok = strtok_r(NULL, " \t", &save))
        argv[k++] = tok;
    for (size_t i = 0; i < ntail; i++)
        argv[k++] = (char *)tail[i];
    argv[k] = NULL;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid;
    int rc = posix_spawnp(&pid, cc, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    free(argv);
    *missing = rc == ENOENT;
    return rc == 0 ? pid : -1;
}

/* The exit status of a compiler started by spawn_cc, -1 when killed. */
static int wait_cc(pid_t pid)
{
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The libraries generated code links (after its objects). */
static size_t put_libs(const char **tail, size_t k)
{
#ifdef HAVE_LIBMVEC
    tail[k++] = "-lmvec";
#endif
    tail[k++] = "-lm";
    return k;
}

/* Run cc flags -shared -fPIC -o out src, its messages into log; the exit
 * status, or -1 when it could not be started at all, 127 when the
 * compiler is missing. */
static int run_cc(const char *cc, const char *flags, const char *out, const char *src, const char *log)
{
    const char *tail[8] = {"-shared", "-fPIC", "-o", out, src};
    int missing;
    pid_t pid = spawn_cc(cc, flags, tail, put_libs(tail, 5), log, &missing);
    return pid < 0 ? (missing ? 127 : -1) : wait_cc(pid);
}

/* First line of the compiler's messages, for the error. */
static void first_line(const char *log, char *buf, size_t size)
{
    size_t n;
    char *text = read_all(log, &n);
    buf[0] = 0;
    if (text) {
        size_t i = 0;
        while (i < n && i + 1 < size && text[i] != '\n')
            buf[i] = text[i], i++;
        buf[i] = 0;
        free(text);
    }
}

/* ---- compiling a source's units in parallel ------------------------------- */

enum { MAX_JOBS = 8 };

/* How many compilers may run at once for one entry: $TGREL_CC_JOBS, else
 * the processors this process may run on that are idle (less the 1-minute
 * load average) and one more; at most MAX_JOBS.  Compiling apart costs
 * about a fifth more CPU (a prelude and a link per file), which is only
 * won back in time where processors are idle: on a 2-core machine at a
 * load average of 20 the parallel compile took 1.2 times as long. */
static int cc_jobs(void)
{
    const char *e = getenv("TGREL_CC_JOBS");
    long n = 0;
    if (e && *e)
        n = strtol(e, NULL, 10);
    else {
        cpu_set_t set;
        double load[1];
        n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : sysconf(_SC_NPROCESSORS_ONLN);
        if (getloadavg(load, 1) == 1)
            n = (long)((double)n - load[0]) + 1;
    }
    return n < 1 ? 1 : n > MAX_JOBS ? MAX_JOBS : (int)n;
}

/* The units of src (TGZ_UNIT lines): their starts into at[], at most cap;
 * how many; *pre the prelude's length. */
static int units_of(const char *src, size_t len, size_t *at, int cap, size_t *pre)
{
    const char *mark = "\n" TGZ_UNIT;
    size_t ml = strlen(mark);
    int n = 0;
    for (const char *p = src; n < cap && (p = memmem(p, len - (size_t)(p - src), mark, ml)); p += ml)
        at[n++] = (size_t)(p - src) + 1;
    *pre = n ? at[0] : len;
    return n;
}

/* The units of src spread over jobs files (the largest first, each to the
 * file with the fewest bytes), each file the prelude and its units, all
 * compiled at once with -c and linked into out.  The exit status of the
 * first compiler that failed (its first line in msg), 127 when there is
 * no compiler, -1 when a file could not be written. */
static int build_parallel(const char *dir, const char *key, const char *out, const char *src, size_t len,
                          const size_t *at, int nu, size_t pre, int jobs, const char *cc, const char *flags,
                          char *msg, size_t msize)
{
    long pid = (long)getpid();
    char cs[MAX_JOBS][4200], os[MAX_JOBS][4200], logs[MAX_JOBS + 1][4200];
    size_t bytes[MAX_JOBS] = {0};
    int *job = malloc((size_t)nu * sizeof *job), *order = malloc((size_t)nu * sizeof *order);
    pid_t pids[MAX_JOBS] = {-1, -1, -1, -1, -1, -1, -1, -1};
    int rc = 0, missing = 0, started = 0;
    if (!job || !order) {
        free(job), free(order);
        return -1;
    }
    for (int u = 0; u < nu; u++)
        order[u] = u;
    for (int i = 1; i < nu; i++)    /* by size, largest first (insertion: few units) */
        for (int j = i; j > 0; j--) {
            size_t a = (order[j] + 1 < nu ? at[order[j] + 1] : len) - at[order[j]];
            size_t b = (order[j - 1] + 1 < nu ? at[order[j - 1] + 1] : len) - at[order[j - 1]];
            if (a <= b)
                break;
            int t = order[j];
            order[j] = order[j - 1], order[j - 1] = t;
        }
    for (int i = 0; i < nu; i++) {
        int u = order[i], best = 0;
        for (int j = 1; j < jobs; j++)
            if (bytes[j] < bytes[best])
                best = j;
        job[u] = best;
        bytes[best] += (u + 1 < nu ? at[u + 1] : len) - at[u];
    }
    for (int j = 0; j < jobs && rc == 0; j++) {
        snprintf(cs[j], sizeof cs[j], "%s/%s.%ld.%d.c", dir, key, pid, j);
        snprintf(os[j], sizeof os[j], "%s/%s.%ld.%d.o", dir, key, pid, j);
        snprintf(logs[j], sizeof logs[j], "%s/%s.%ld.%d.log", dir, key, pid, j);
        FILE *f = fopen(cs[j], "wb");
        int ok = f && fwrite(src, 1, pre, f) == pre;
        for (int u = 0; ok && u < nu; u++) {
            size_t b = u + 1 < nu ? at[u + 1] : len;
            ok = job[u] != j || fwrite(src + at[u], 1, b - at[u], f) == b - at[u];
        }
        if (f && fclose(f) != 0)
            ok = 0;
        started = j + 1;
        if (!ok) {
            rc = -1;
            break;
        }
        const char *tail[6] = {"-c", "-fPIC", "-o", os[j], cs[j]};
        pids[j] = spawn_cc(cc, flags, tail, 5, logs[j], &missing);
        if (pids[j] < 0)
            rc = missing ? 127 : -1;
    }
    for (int j = 0; j < started; j++) {   /* every compiler started is waited for */
        int st = pids[j] >= 0 ? wait_cc(pids[j]) : -1;
        if (st != 0 && rc == 0) {
            rc = st;
            first_line(logs[j], msg, msize);
        }
    }
    if (rc == 0) {
        const char *tail[MAX_JOBS + 8] = {"-shared", "-fPIC", "-o", out};
        size_t k = 4;
        for (int j = 0; j < jobs; j++)
            tail[k++] = os[j];
        snprintf(logs[MAX_JOBS], sizeof logs[MAX_JOBS], "%s/%s.%ld.log", dir, key, pid);
        pid_t lp = spawn_cc(cc, flags, tail, put_libs(tail, k), logs[MAX_JOBS], &missing);
        rc = lp < 0 ? (missing ? 127 : -1) : wait_cc(lp);
        if (rc != 0)
            first_line(logs[MAX_JOBS], msg, msize);
        unlink(logs[MAX_JOBS]);
    }
    for (int j = 0; j < started; j++)
        unlink(cs[j]), unlink(os[j]), unlink(logs[j]);
    free(job), free(order);
    return rc;
}

/* Compile into tmp names and rename into place (the lock is held). */
static int build(const char *dir, const char *key, const char *path, const char *src, size_t len,
                 const char *cc, const char *flags, int *why, tg_error *err)
{
    char csrc[4200], tmp[4200], log[4200], msg[300] = "";
    long pid = (long)getpid();
    snprintf(csrc, sizeof csrc, "%s/%s.%ld.c", dir, key, pid);
    snprintf(tmp, sizeof tmp, "%s/%s.%ld.so", dir, key, pid);
    snprintf(log, sizeof log, "%s/%s.%ld.log", dir, key, pid);
    size_t at[64], pre;
    int nu = units_of(src, len, at, 64, &pre), jobs = cc_jobs(), rc;
    if (jobs > nu)
        jobs = nu;
    if (jobs >= 2 && nu <= 64) {
        rc = build_parallel(dir, key, tmp, src, len, at, nu, pre, jobs, cc, flags, msg, sizeof msg);
        if (rc == -1) {
            *why = TGQ_FAILED;
            return tgE_set(err, TG_ERR_IO, NULL, 0, 0, "kernels: cannot write the sources in %s", dir), -1;
        }
    } else {
        FILE *f = fopen(csrc, "wb");
        if (!f || fwrite(src, 1, len, f) != len || fclose(f) != 0) {
            if (f)
                fclose(f);
            *why = TGQ_FAILED;
            return tgE_set(err, TG_ERR_IO, NULL, 0, 0, "kernels: cannot write %s", csrc), -1;
        }
        rc = run_cc(cc, flags, tmp, csrc, log);
        first_line(log, msg, sizeof msg);
        unlink(log);
        unlink(csrc);
    }
    if (rc != 0) {
        unlink(tmp);
        *why = rc == 127 ? TGQ_NO_COMPILER : TGQ_FAILED;
        if (rc == 127)
            tgE_set(err, TG_ERR_IO, NULL, 0, 0, "kernels: no C compiler '%s' found", cc);
        else
            tgE_set(err, TG_ERR_IO, NULL, 0, 0, "kernels: %s failed (status %d): %s", cc, rc, msg);
        return -1;
    }
    if (append_trailer(tmp) < 0 || rename(tmp, path) < 0) {
        unlink(tmp);
        *why = TGQ_FAILED;
        return tgE_set(err, TG_ERR_IO, NULL, 0, 0, "kernels: cannot store %s", path), -1;
    }
    return 0;
}

/* The OpenMP runtime that compiled kernels link must never be unloaded:
 * its worker threads outlive the parallel regions, and would be left
 * running in unmapped code when the last kernel using it is closed.  So
 * it is loaded once here with RTLD_NODELETE, before any kernel. */
static void pin_openmp(void)
{
#ifdef TGREL_OPENMP_FLAG
    static int pinned;
    if (!pinned) {
        pinned = 1;
        if (!dlopen("libgomp.so.1", RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE))
            dlopen("libomp.so", RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE);
    }
#endif
}

/* ---- the library's identity ------------------------------------------------ */

/* The GNU build ID of the object holding this code (a hash of its
 * contents the linker writes), so entries made by another build of the
 * lowering are never taken for this one's; "" when there is none. */
typedef struct build_id { uintptr_t addr; char hex[2 * 64 + 1]; char file[4096]; } build_id;

static void note_id(const char *p, size_t n, build_id *b)
{
    size_t o = 0;
    while (o + sizeof(ElfW(Nhdr)) <= n) {
        const ElfW(Nhdr) *h = (const ElfW(Nhdr) *)(const void *)(p + o);
        size_t name = (h->n_namesz + 3) & ~(size_t)3, desc = (h->n_descsz + 3) & ~(size_t)3;
        const char *nm = p + o + sizeof *h, *d = nm + name;
        if (h->n_type == NT_GNU_BUILD_ID && h->n_namesz == 4 && memcmp(nm, "GNU", 4) == 0 &&
            h->n_descsz <= 64 && o + sizeof *h + name + h->n_descsz <= n) {
            for (size_t i = 0; i < h->n_descsz; i++)
                snprintf(b->hex + 2 * i, 3, "%02x", (unsigned char)d[i]);
            return;
        }
        o += sizeof *h + name + desc;
    }
}

static int find_id(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    build_id *b = data;
    int mine = 0;
    for (int i = 0; i < info->dlpi_phnum && !mine; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        mine = ph->p_type == PT_LOAD && b->addr >= lo && b->addr < lo + ph->p_memsz;
    }
    if (!mine)
        return 0;
    snprintf(b->file, sizeof b->file, "%s", info->dlpi_name && *info->dlpi_name ? info->dlpi_name : "/proc/self/exe");
    for (int i = 0; i < info->dlpi_phnum && !b->hex[0]; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_NOTE)
            note_id((const char *)(info->dlpi_addr + ph->p_vaddr), ph->p_memsz, b);
    }
    return 1;
}

static const char *library_id(void)
{
    static build_id b;
    static int done;
    if (!done) {
        void (*self)(void) = pin_openmp;
        memcpy(&b.addr, &self, sizeof b.addr);
        dl_iterate_phdr(find_id, &b);
        /* linked without a build ID: the hash of the object's file says
         * the same, read once; an unreadable one names no build, and
         * every process then keys apart from the others (a miss, never
         * a wrong hit) */
        size_t n;
        char *all = b.hex[0] || !b.file[0] ? NULL : read_all(b.file, &n);
        if (all)
            tgZ_hash_hex(all, n, b.hex);
        else if (!b.hex[0])
            snprintf(b.hex, sizeof b.hex, "pid %ld %p", (long)getpid(), (void *)&b);
        free(all);
        done = 1;
    }
    return b.hex;
}

/* ---- the CPU ------------------------------------------------------------------ */

/* The CPU compiled code is made for: the default flags have -march=native,
 * whose code may not run (or not the same way) on another CPU, and one
 * cache directory may serve several machines (a network home).  On x86
 * the vendor, the signature (family, model, stepping), every feature word
 * and the state the system enables (XCR0); elsewhere the first
 * processor's lines of /proc/cpuinfo that stay the same while it runs.
 * As 32 hex digits. */
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

static size_t cpu_text(char *buf, size_t size)
{
    unsigned a, b, c, d, max = __get_cpuid_max(0, NULL), xmax = __get_cpuid_max(0x80000000, NULL);
    size_t n = 0;
    static const unsigned leaves[][2] = {{0, 0}, {1, 0}, {7, 0}, {7, 1}, {0xd, 1}, {0x14, 0},
                                         {0x19, 0}, {0x80000001, 0}, {0x80000008, 0}};
    for (size_t i = 0; i < sizeof leaves / sizeof *leaves && n < size; i++) {
        unsigned leaf = leaves[i][0];
        if (leaf < 0x80000000 ? leaf > max : leaf > xmax)
            continue;
        __cpuid_count(leaf, leaves[i][1], a, b, c, d);
        if (leaf == 1)
            b &= 0xffff;    /* the upper half is the core's APIC ID and the logical count */
        n += (size_t)snprintf(buf + n, size - n, "%x.%x:%x,%x,%x,%x ", leaf, leaves[i][1], a, b, c, d);
    }
    __cpuid(1, a, b, c, d);
    if (n < size && (c >> 27 & 1)) {   /* OSXSAVE: XCR0 readable */
        unsigned lo, hi;
        __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
        n += (size_t)snprintf(buf + n, size - n, "xcr0:%x,%x", lo, hi);
    }
    return n < size ? n : size - 1;
}
#else
static size_t cpu_text(char *buf, size_t size)
{
    static const char *const changing[] = {"processor", "bogomips", "cpu mhz", "core id", "apicid",
                                           "initial apicid", "physical id", "siblings", "cpu cores"};
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[1024];
    size_t n = 0;
    while (f && fgets(line, sizeof line, f) && line[0] != '\n') {
        int skip = 0;
        for (size_t i = 0; i < sizeof changing / sizeof *changing && !skip; i++)
            skip = strncasecmp(line, changing[i], strlen(changing[i])) == 0;
        size_t l = strlen(line);
        if (!skip && n + l < size)
            memcpy(buf + n, line, l), n += l;
    }
    if (f)
        fclose(f);
    return n;
}
#endif

const char *tgZ_cpu_id(void)
{
    static char hex[33];
    if (!hex[0]) {
        char text[8192];
        size_t n = cpu_text(text, sizeof text);
        tgZ_hash_hex(text, n, hex);
    }
    return hex;
}

/* The hash of parts (each ended by a NUL) and then text, as 32 hex
 * digits in out; -1 when out of memory. */
static int key_of(const char *const *part, int nparts, const char *text, size_t len, char out[33])
{
    size_t plen[8], hl = len;
    for (int i = 0; i < nparts; i++)
        hl += (plen[i] = strlen(part[i])) + 1;
    char *all = malloc(hl ? hl : 1), *p = all;
    if (!all)
        return -1;
    for (int i = 0; i < nparts; i++)
        memcpy(p, part[i], plen[i] + 1), p += plen[i] + 1;
    memcpy(p, text, len);
    tgZ_hash_hex(all, hl, out);
    free(all);
    return 0;
}

int tgZ_key(const char *keytext, size_t keylen, const char *cpu, const char *cc, const char *cflags,
            char key[33])
{
    /* this build of the library, the CPU, compiler, flags and the
     * caller's key text */
    const char *part[4] = {library_id(), cpu, cc, cflags};
    return key_of(part, 4, keytext, keylen, key);
}

int tgZ_source_key(const char *src, size_t len, const char *cpu, const char *cc, const char *cflags,
                   char key[33])
{
    /* no build of the library: the source says all the object holds */
    const char *part[4] = {"source", cpu, cc, cflags};
    return key_of(part, 4, src, len, key);
}

void *tgZ_load(const char *keytext, size_t keylen, tgZ_gen_fn gen, void *ud, const char *cc,
               const char *cflags, int *hit, int *why, tg_error *err)
{
    return tgZ_load_timed(keytext, keylen, gen, ud, cc, cflags, hit, why, NULL, err);
}

/* DIR/KEY.lock held and DIR/KEY.so named in code: the lock's fd, or -1. */
static int lock_code(const char *dir, const char *key, char *lock, char *code)
{
    snprintf(code, 4200, "%s/%s.so", dir, key);
    snprintf(lock, 4200, "%s/%s.lock", dir, key);
    return tgZ_lock(lock, 1);
}

int tgZ_map_read(const char *path, char skey[33])
{
    size_t n;
    char *text = entry_get(path, &n);
    int ok = text && n == 32 && strspn(text, "0123456789abcdef") == 32;
    if (ok)
        memcpy(skey, text, 33);
    free(text);
    return ok ? 0 : -1;
}

/* The code entry the map DIR/KEY.src names, into skey: 0, or -1 when
 * there is no map or it is not whole.  (Maps are not evicted by their
 * recency, so a hit does not touch its map.) */
static int map_get(const char *dir, const char *key, char skey[33])
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s.src", dir, key);
    return tgZ_map_read(path, skey);
}

void *tgZ_load_timed(const char *keytext, size_t keylen, tgZ_gen_fn gen, void *ud, const char *cc,
                     const char *cflags, int *hit, int *why, tgZ_times *times, tg_error *err)
{
    char dir[4096], code[4200], lock[4200], key[33], skey[33], map[4200];
    tgZ_times tm = {0, 0, 0};
    double t0 = tgTm_ms(), t1;
    *hit = 0, *why = TGQ_FAILED;
    if (times)
        *times = tm;
    if (!cc)
        cc = getenv("TGREL_CC");
    if (!cc || !*cc)
        cc = "cc";
    if (!cflags)
        cflags = getenv("TGREL_CFLAGS");
    if (!cflags)
        cflags = TGQ_DEFAULT_FLAGS;
    if (tgZ_dir(dir, sizeof dir) < 0 || mkdirs(dir) < 0)
        return tgE_set(err, TG_ERR_IO, NULL, 0, 0, "kernels: no usable cache directory"), NULL;
    if (tgZ_key(keytext, keylen, tgZ_cpu_id(), cc, cflags, key) < 0)
        return tgE_nomem(err), NULL;
    int fd = -1, rc = 0, built = 0;
    /* the key's map names the code: a hit generates no source */
    if (map_get(dir, key, skey) == 0) {
        if ((fd = lock_code(dir, skey, lock, code)) < 0)
            return tgE_set(err, TG_ERR_IO, NULL, 0, 0, "kernels: cannot lock %s", lock), NULL;
        if (intact(code))
            *hit = 1;
        else
            tgZ_unlock(lock, fd), fd = -1;
    }
    if (!*hit) {
        /* the source is only generated on a miss of the key; code built
         * from the same source before (by another build of the library,
         * or for another key text) serves as it is */
        size_t len;
        t1 = tgTm_ms();
        char *src = gen(ud, &len);
        tm.gen_ms = tgTm_ms() - t1;
        if (!src || tgZ_source_key(src, len, tgZ_cpu_id(), cc, cflags, skey) < 0) {
            free(src);
            return tgE_nomem(err), NULL;
        }
        if ((fd = lock_code(dir, skey, lock, code)) < 0) {
            free(src);
            return tgE_set(err, TG_ERR_IO, NULL, 0, 0, "kernels: cannot lock %s", lock), NULL;
        }
        *hit = intact(code);
        t1 = tgTm_ms();
        if (!*hit)
            rc = build(dir, skey, code, src, len, cc, cflags, why, err), built = rc == 0;
        tm.cc_ms = tgTm_ms() - t1;
        free(src);
        /* a map not written costs the next process a generation, no more */
        snprintf(map, sizeof map, "%s/%s.src", dir, key);
        if (rc == 0)
            entry_put(map, skey, 32);
    }
    if (*hit)
        tgZ_touch(code);    /* recently used: evicted last */
    /* loaded under the lock, so that no eviction removes it in between */
    void *h = NULL;
    if (rc == 0) {
        pin_openmp();
        h = dlopen(code, RTLD_NOW | RTLD_LOCAL);
    }
    tgZ_unlock(lock, fd);
    tgZ_count(dir, *hit ? TGZ_CODE_HIT : TGZ_CODE_MISS);   /* a failed compile is a miss too */
    if (built) {
        char name[64];
        snprintf(name, sizeof name, "%s.so", skey);
        tgZ_evict(dir, name);
    }
    if (rc < 0)
        return NULL;
    if (!h) {
        const char *e = dlerror();
        tgE_set(err, TG_ERR_IO, NULL, 0, 0, "kernels: cannot load %s: %s", code, e ? e : "?");
        return NULL;
    }
    *why = TGQ_OK;
    tm.load_ms = tgTm_ms() - t0 - tm.gen_ms - tm.cc_ms;
    if (times)
        *times = tm;
    return h;
}

/* ---- side entries ------------------------------------------------------- */

/* DIR/KEY.ext for a side entry keyed by keytext and this library build. */
static int side_path(const char *keytext, size_t keylen, const char *ext, char *dir, char *path, size_t size)
{
    if (tgZ_dir(dir, size) < 0 || mkdirs(dir) < 0)
        return -1;
    const char *id = library_id();
    size_t li = strlen(id), hl = li + 1 + keylen;
    char *all = malloc(hl ? hl : 1), key[33];
    if (!all)
        return -1;
    memcpy(all, id, li + 1);
    memcpy(all + li + 1, keytext, keylen);
    tgZ_hash_hex(all, hl, key);
    free(all);
    int n = snprintf(path, size, "%s/%s.%s", dir, key, ext);
    return n > 0 && (size_t)n < size ? 0 : -1;
}

char *tgZ_side_get(const char *keytext, size_t keylen, const char *ext, size_t *len)
{
    char dir[4096], path[4200];
    if (side_path(keytext, keylen, ext, dir, path, sizeof path) < 0)
        return NULL;
    char *buf = entry_get(path, len);
    if (!buf) {
        tgZ_count(dir, TGZ_RW_MISS);    /* the caller writes it again */
        return NULL;
    }
    tgZ_touch(path);
    tgZ_count(dir, TGZ_RW_HIT);
    return buf;
}

int tgZ_side_put(const char *keytext, size_t keylen, const char *ext, const char *data, size_t len)
{
    char dir[4096], path[4200];
    if (side_path(keytext, keylen, ext, dir, path, sizeof path) < 0 || entry_put(path, data, len) < 0)
        return -1;
    tgZ_evict(dir, strrchr(path, '/') + 1);
    return 0;
}
