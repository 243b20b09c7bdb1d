/* test_cachedir.c - keeping the compile cache: tg_cache_info counts the
 * entries, their bytes (against stat) and the hits and misses of every
 * process; no lock file is left after compiles, nor after four processes
 * compiling the same programs at once (whose results are all right, the
 * counts adding up); TGREL_CACHE_MAX is respected, evicting the least
 * recently used entry first (a hit makes an entry recent), never the one
 * just made; a malformed limit is an error naming it; tg_cache_clear
 * empties the directory, keeps files that are not the cache's, removes
 * stale lock and temporary files, and resets the counts. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kt.h"

static tg_ctx *ctx;
static char dir[] = "/tmp/tgrel-cachedir-test-XXXXXX";

/* Files of dir ending in suffix; their total size in *bytes. */
static int count_files(const char *suffix, long long *bytes)
{
    DIR *d = opendir(dir);
    int n = 0;
    size_t ls = strlen(suffix);
    if (bytes)
        *bytes = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        size_t l = strlen(e->d_name);
        if (l > ls && strcmp(e->d_name + l - ls, suffix) == 0) {
            char p[4400];
            struct stat st;
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            if (bytes && stat(p, &st) == 0)
                *bytes += st.st_size;
            n++;
        }
    }
    if (d)
        closedir(d);
    return n;
}

/* The .so entry of program k (k + 1 times x): compile it and check a value. */
static int run_prog(int k)
{
    char expr[200];
    snprintf(expr, sizeof expr, "(mul (input x float64 (n)) %d.0)", k + 1);
    tg_error err;
    tg_fn *fn = kt_compile(ctx, "(input x float64 (n))", expr, NULL, 0, &err);
    double x[2] = {1, 2}, o[2] = {0, 0};
    int64_t n = 2;
    tg_array in, out;
    tg_array_init(&in, TG_FLOAT64, 1, &n, x);
    tg_array_init(&out, TG_FLOAT64, 1, &n, o);
    int ok = fn && tg_fn_native(fn) && tg_fn_call(fn, &in, &out, &err) == 0 && o[1] == 2.0 * (k + 1);
    tg_fn_free(fn);
    return ok;
}

/* The name of program k's entry: the only .so that appeared when it was compiled. */
static void newest_so(char *name, size_t size, char seen[][64], int nseen)
{
    DIR *d = opendir(dir);
    name[0] = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        size_t l = strlen(e->d_name);
        if (l < 4 || strcmp(e->d_name + l - 3, ".so"))
            continue;
        int old = 0;
        for (int i = 0; i < nseen; i++)
            old |= strcmp(seen[i], e->d_name) == 0;
        if (!old)
            snprintf(name, size, "%s", e->d_name);
    }
    if (d)
        closedir(d);
}

static int exists(const char *name)
{
    char p[4400];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return access(p, F_OK) == 0;
}

static void clear(void)
{
    tg_error err;
    TAP_CHECK(tg_cache_clear(NULL, &err) == 0, "cleared");
}

static void test_info_and_locks(void)
{
    tg_error err;
    tg_cache_stats st;
    clear();
    TAP_CHECK(tg_cache_info(&st, &err) == 0 && st.entries == 0 && st.code_hits == 0 && st.code_misses == 0,
              "an empty cache");
    for (int round = 0; round < 2; round++)
        for (int k = 0; k < 3; k++)
            TAP_CHECK(run_prog(k), "program %d, round %d", k, round);
    long long bytes;
    int nso = count_files(".so", &bytes);
    TAP_CHECK(tg_cache_info(&st, &err) == 0, "info");
    TAP_EQ_INT(st.code_entries, 3, "three compiled entries");
    TAP_EQ_INT(st.entries, nso, "entries as in the directory");
    TAP_EQ_INT(st.bytes, bytes, "their bytes as stat gives them");
    TAP_EQ_INT(st.code_misses, 3, "three misses (the first round)");
    TAP_EQ_INT(st.code_hits, 3, "three hits (the second round)");
    TAP_EQ_INT(count_files(".lock", NULL), 0, "no lock file left");
    TAP_EQ_INT(st.locks, 0, "none counted");
    char buf[4096];
    TAP_CHECK(tg_cache_dir(buf, sizeof buf) == 0 && strcmp(buf, dir) == 0, "the directory is TGREL_CACHE_DIR");
    TAP_CHECK(tg_cache_dir(buf, 4) < 0 && tg_cache_dir(NULL, 10) < 0, "a buffer too small, or none, is refused");
    TAP_CHECK(tg_cache_info(NULL, &err) < 0 && err.code == TG_ERR_ARG, "info into nowhere is refused");

    /* the rewritten graphs of a pipeline are entries too, with their own counts */
    tg_rules *rs = kt_rules(ctx, "(op mul (arity 2)) (rule mul-one (mul ?x 1) => ?x) (walk default mul-one)",
                            "c.rules");
    tg_term *x = tg_read_cstr(ctx, "(input x float64 (n))", &err);
    tg_term *o = tg_read_cstr(ctx, "(mul (mul (input x float64 (n)) 3.0) 1)", &err);
    for (int i = 0; i < 2; i++) {
        tg_fn_options opt = {.rules = rs};
        tg_fn *fn = tg_fn_compile(ctx, 1, &x, 1, &o, &opt, &err);
        TAP_CHECK(fn != NULL, "compiled with rules");
        tg_fn_free(fn);
    }
    TAP_CHECK(tg_cache_info(&st, &err) == 0 && st.rewrite_entries == 1 && st.rewrite_misses == 1 &&
                  st.rewrite_hits == 1,
              "one rewritten graph: a miss, then a hit");
    tg_rules_free(rs);
}

/* Four processes compile the same five programs at once. */
static void test_concurrent(void)
{
    tg_error err;
    tg_cache_stats st;
    clear();
    pid_t kids[4];
    for (int i = 0; i < 4; i++) {
        kids[i] = fork();
        if (kids[i] == 0) {
            int ok = 1;
            for (int k = 0; k < 5; k++)
                ok &= run_prog((k + i) % 5);
            _exit(ok ? 0 : 1);
        }
    }
    int all = 1;
    for (int i = 0; i < 4; i++) {
        int status;
        all &= kids[i] > 0 && waitpid(kids[i], &status, 0) == kids[i] && WIFEXITED(status) &&
               WEXITSTATUS(status) == 0;
    }
    TAP_CHECK(all, "four processes compiled and ran the same programs at once");
    TAP_CHECK(tg_cache_info(&st, &err) == 0, "info");
    TAP_EQ_INT(st.code_entries, 5, "one entry per program");
    TAP_EQ_INT(st.code_misses, 5, "each compiled once");
    TAP_EQ_INT(st.code_hits, 15, "the other loads hits");
    TAP_EQ_INT(count_files(".lock", NULL) + count_files(".c", NULL) + count_files(".log", NULL), 0,
               "no lock or temporary file left");
}

static void set_mtime(const char *name, time_t t)
{
    char p[4400];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    struct timespec ts[2] = {{t, 0}, {t, 0}};
    utimensat(AT_FDCWD, p, ts, 0);
}

static void test_eviction(void)
{
    tg_error err;
    tg_cache_stats st;
    clear();
    char names[4][64];
    long long size = 0, b;
    for (int k = 0; k < 3; k++) {
        TAP_CHECK(run_prog(10 + k), "program %d", 10 + k);
        newest_so(names[k], sizeof names[k], names, k);
        /* distinct recency, oldest first, without sleeping */
        set_mtime(names[k], time(NULL) - 1000 + 10 * k);
    }
    count_files(".so", &size);
    /* program 10, the oldest, used again: now the most recent */
    TAP_CHECK(run_prog(10), "the oldest used again");
    /* room for three entries of this size, not four */
    char lim[64];
    snprintf(lim, sizeof lim, "%lld", size + size / 6);
    setenv("TGREL_CACHE_MAX", lim, 1);
    TAP_CHECK(run_prog(13), "a fourth program over the limit");
    newest_so(names[3], sizeof names[3], names, 3);
    TAP_CHECK(exists(names[0]) && !exists(names[1]) && exists(names[2]) && exists(names[3]),
              "the least recently used (program 11) evicted, the one just made kept");
    TAP_EQ_INT(count_files(".src", NULL), count_files(".so", NULL), "the evicted entry's map went with it");
    count_files(".so", &b);
    TAP_CHECK(b <= size + size / 6, "within the limit: %lld <= %lld bytes", b, size + size / 6);
    TAP_CHECK(tg_cache_info(&st, &err) == 0 && st.max_bytes == (uint64_t)(size + size / 6),
              "the limit reported");
    /* sizes with units */
    setenv("TGREL_CACHE_MAX", "2M", 1);
    TAP_CHECK(tg_cache_info(&st, &err) == 0 && st.max_bytes == 2u * 1024 * 1024, "2M is 2 MiB");
    setenv("TGREL_CACHE_MAX", "1.5k", 1);
    TAP_CHECK(tg_cache_info(&st, &err) == 0 && st.max_bytes == 1536, "1.5k is 1536 bytes");
    setenv("TGREL_CACHE_MAX", "lots", 1);
    TAP_CHECK(tg_cache_info(&st, &err) < 0 && err.code == TG_ERR_ARG && strstr(err.message, "TGREL_CACHE_MAX=lots"),
              "a malformed limit is an error naming it: %s", err.message);
    /* a limit of 0 keeps only the entry just made */
    setenv("TGREL_CACHE_MAX", "0", 1);
    TAP_CHECK(run_prog(14), "a fifth program with no room");
    TAP_CHECK(tg_cache_info(&st, &err) == 0 && st.code_entries == 1, "only it is left");
    unsetenv("TGREL_CACHE_MAX");
}

static void test_clear(void)
{
    tg_error err;
    tg_cache_stats st, gone;
    clear();
    TAP_CHECK(run_prog(20) && run_prog(21), "two programs");
    /* what a killed compile leaves, a lock of an older version, a file of the user's */
    char p[4400];
    const char *stale[] = {"0123456789abcdef0123456789abcdef.lock", "0123456789abcdef0123456789abcdef.999999999.c",
                           "notes.txt"};
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, stale[i]);
        FILE *f = fopen(p, "w");
        if (f)
            fclose(f);
    }
    TAP_CHECK(tg_cache_info(&st, &err) == 0 && st.locks == 1 && st.temporary == 1, "a stale lock and temporary counted");
    TAP_CHECK(tg_cache_clear(&gone, &err) == 0, "cleared");
    TAP_CHECK(gone.code_entries == 2 && gone.locks == 1 && gone.temporary == 1, "what went is reported");
    TAP_CHECK(tg_cache_info(&st, &err) == 0 && st.entries == 0 && st.locks == 0 && st.temporary == 0 &&
                  st.code_hits == 0 && st.code_misses == 0,
              "empty, the counts reset");
    TAP_CHECK(exists("notes.txt"), "a file that is not the cache's is kept");
    TAP_CHECK(run_prog(20), "compiles again after a clear");
    /* an entry another process has locked (building or loading it) stays */
    char name[64], seen[1][64] = {""};
    newest_so(name, sizeof name, seen, 0);
    snprintf(p, sizeof p, "%s/%.32s.lock", dir, name);
    int fd = open(p, O_RDWR | O_CREAT, 0644);
    TAP_CHECK(fd >= 0 && flock(fd, LOCK_EX) == 0, "an entry locked");
    TAP_CHECK(tg_cache_clear(&gone, &err) < 0 && err.code == TG_ERR_IO && strstr(err.message, "1 entry in use"),
              "clearing it fails: %s", err.message);
    TAP_CHECK(exists(name) && gone.entries == 0, "the entry is kept");
    if (fd >= 0)
        close(fd);
    /* the lock file goes with the entry, or on its own when the directory
     * lists it first: counted as a lock only then */
    char lock[64];
    snprintf(lock, sizeof lock, "%.32s.lock", name);
    int rc = tg_cache_clear(&gone, &err);
    TAP_CHECK(rc == 0 && gone.entries == 1 && gone.locks <= 1 && !exists(name) && !exists(lock),
              "released, it goes, with its lock file (%s)", rc ? err.message : "");
}

int main(void)
{
    if (!mkdtemp(dir))
        return 1;
    setenv("TGREL_CACHE_DIR", dir, 1);
    unsetenv("TGREL_CACHE_MAX");
    ctx = tg_ctx_new(NULL);
    test_info_and_locks();
    test_concurrent();
    test_eviction();
    test_clear();
    tg_ctx_free(ctx);
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        return 1;
    return TAP_DONE();
}
