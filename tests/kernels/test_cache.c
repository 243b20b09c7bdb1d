/* test_cache.c - the compile cache: deterministic keys (one entry per
 * program), hits, rebuilding truncated and corrupt entries, and two
 * processes compiling the same program at once. */
#include <dirent.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kt.h"

static tg_ctx *ctx;
static char dir[] = "/tmp/tgrel-cache-test-XXXXXX";

/* The entries (*.so) in the cache directory; the first one's path. */
static int entries(char *first, size_t size)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l > 3 && strcmp(e->d_name + l - 3, ".so") == 0) {
            if (!n && first)
                snprintf(first, size, "%s/%s", dir, e->d_name);
            n++;
        }
    }
    if (d)
        closedir(d);
    return n;
}

static off_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? st.st_size : -1;
}

/* Compile and run exp(x)*2 natively; 1 when native and right. */
static int run_once(const char *expr)
{
    tg_error err;
    tg_fn *fn = kt_compile(ctx, "(input x float64 (n))", expr, NULL, 0, &err);
    double x[3] = {0, 1, 2}, o[3];
    int64_t n = 3;
    tg_array in, out;
    tg_array_init(&in, TG_FLOAT64, 1, &n, x);
    tg_array_init(&out, TG_FLOAT64, 1, &n, o);
    int ok = fn && tg_fn_native(fn) && tg_fn_call(fn, &in, &out, &err) == 0 && o[1] == exp(1.0) * 2;
    tg_fn_free(fn);
    return ok;
}

int main(void)
{
    tg_error err;
    ctx = tg_ctx_new(&err);
    if (!mkdtemp(dir))
        return 1;
    setenv("TGREL_CACHE_DIR", dir, 1);
    const char *e1 = "(mul (exp (input x float64 (n))) 2)";

    TAP_CHECK(run_once(e1), "compiled and run");
    char path[600];
    TAP_EQ_INT(entries(path, sizeof path), 1, "one entry");
    off_t size = file_size(path);
    struct stat st0;
    stat(path, &st0);
    TAP_CHECK(run_once(e1), "compiled again: from the cache");
    struct stat st1;
    stat(path, &st1);
    TAP_EQ_INT(entries(NULL, 0), 1, "the same program gives the same key");
    TAP_CHECK(st1.st_ino == st0.st_ino, "a hit does not rewrite the entry");

    /* truncated: rebuilt */
    TAP_CHECK(truncate(path, size / 2) == 0, "truncate the entry");
    TAP_CHECK(run_once(e1), "a truncated entry is rebuilt and runs");
    TAP_EQ_INT((int)(file_size(path) == size), 1, "and is whole again");

    /* one byte changed: rebuilt */
    FILE *f = fopen(path, "r+b");
    int c = EOF;
    if (f) {
        fseek(f, (long)size / 3, SEEK_SET);
        c = fgetc(f);
        fseek(f, (long)size / 3, SEEK_SET);
        fputc(c ^ 0x55, f);
        fclose(f);
    }
    struct stat st2;
    stat(path, &st2);
    TAP_CHECK(run_once(e1), "a corrupt entry is rebuilt and runs");
    struct stat st3;
    stat(path, &st3);
    TAP_CHECK(st3.st_ino != st2.st_ino, "by a new file renamed into place");

    /* two processes compile a new program at once */
    const char *e2 = "(mul (exp (input x float64 (n))) (add 1 1))";
    pid_t kids[2];
    for (int k = 0; k < 2; k++) {
        kids[k] = fork();
        if (kids[k] == 0) {
            tg_ctx *c2 = tg_ctx_new(&err);
            ctx = c2;
            _exit(run_once(e2) ? 0 : 1);
        }
    }
    int good = 0;
    for (int k = 0; k < 2; k++) {
        int status = 1;
        waitpid(kids[k], &status, 0);
        good += WIFEXITED(status) && WEXITSTATUS(status) == 0;
    }
    TAP_EQ_INT(good, 2, "two processes compiling one program both succeed");
    TAP_EQ_INT(entries(NULL, 0), 2, "and leave one entry for it");
    /* no stray temporary files */
    DIR *d = opendir(dir);
    int stray = 0;
    struct dirent *de;
    while (d && (de = readdir(d)))
        stray += strstr(de->d_name, ".c") != NULL || strstr(de->d_name, ".log") != NULL;
    if (d)
        closedir(d);
    TAP_EQ_INT(stray, 0, "no temporary files are left");

    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    TAP_CHECK(system(cmd) == 0, "clean up");
    tg_ctx_free(ctx);
    return TAP_DONE();
}
