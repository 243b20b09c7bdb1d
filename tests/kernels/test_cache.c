/* test_cache.c - the compile cache: deterministic keys (one entry per
 * program), hits, rebuilding truncated and corrupt entries, and two
 * processes compiling the same program at once; the key is the input
 * term (a new process hits without generating code), linear in its DAG. */
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

/* The function of x (n): t = x, then t = t + t * 0.5, k times: 2k nodes
 * in one loop, each level using the one below twice. */
static int run_doubling(int k)
{
    tg_error err;
    tg_term *x = tg_read_cstr(ctx, "(input x float64 (n))", &err);
    tg_term *add = tg_symbol_cstr(ctx, "add"), *mul = tg_symbol_cstr(ctx, "mul");
    tg_term *half = tg_double(ctx, 0.5), *t = x;
    for (int i = 0; i < k; i++) {
        tg_term *m[2] = {t, half};
        tg_term *p = tg_app(ctx, mul, 2, m);
        tg_term *a[2] = {t, p};
        t = tg_app(ctx, add, 2, a);
    }
    tg_fn *fn = tg_fn_compile(ctx, 1, &x, 1, &t, NULL, &err);
    double xv[2] = {1e-9, -2e-9}, o[2];
    int64_t n = 2;
    tg_array in, out;
    tg_array_init(&in, TG_FLOAT64, 1, &n, xv);
    tg_array_init(&out, TG_FLOAT64, 1, &n, o);
    int ok = fn && tg_fn_native(fn) && tg_fn_call(fn, &in, &out, &err) == 0;
    for (int j = 0; ok && j < 2; j++) {
        double r = xv[j];
        for (int i = 0; i < k; i++)
            r = r + r * 0.5;
        ok = o[j] == r;
    }
    tg_fn_free(fn);
    return ok;
}

/* Compile e1 in a new process whose context made other terms first (so
 * every address differs); 1 when it ran natively. */
static int run_in_new_process(const char *expr)
{
    pid_t pid = fork();
    if (pid == 0) {
        tg_error err;
        ctx = tg_ctx_new(&err);
        for (int i = 0; i < 1000; i++)
            tg_int(ctx, (int64_t)i << 40);
        tg_read_cstr(ctx, "(exp (input z float64 (m)))", &err);
        _exit(run_once(expr) ? 0 : 1);
    }
    int status = 1;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
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

    /* the key is the term: a new process hits without rebuilding */
    struct stat st4, st5;
    stat(path, &st4);
    TAP_CHECK(run_in_new_process(e1), "a new process compiles the same term");
    stat(path, &st5);
    TAP_EQ_INT(entries(NULL, 0), 2, "and finds it in the cache");
    TAP_CHECK(st4.st_ino == st5.st_ino && st4.st_mtime == st5.st_mtime, "without rebuilding it");
    /* another term (a float literal for the integer) is another key */
    TAP_CHECK(run_once("(mul (exp (input x float64 (n))) 2.0)"), "a different term compiles");
    TAP_EQ_INT(entries(NULL, 0), 3, "under its own key");
    /* shared subterms are printed once in the key: 2^60 paths, 120 nodes */
    TAP_CHECK(run_doubling(60), "a term of 60 levels each used twice compiles natively and is right");
    TAP_CHECK(run_doubling(60), "and again from the cache");
    TAP_EQ_INT(entries(NULL, 0), 4, "one entry for it");

    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    TAP_CHECK(system(cmd) == 0, "clean up");
    tg_ctx_free(ctx);
    return TAP_DONE();
}
