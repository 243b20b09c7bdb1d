/* test_cache.c - the compile cache: deterministic keys (one entry per
 * program), hits, rebuilding truncated and corrupt entries, and two
 * processes compiling the same program at once; the key is the input
 * term (a new process hits without generating code), linear in its DAG;
 * with a rule set the whole pipeline is cached: a graph compiled again, in
 * this process or a new one, skips the rewriter (its trace stays empty),
 * a corrupt or truncated entry of rewritten terms is a miss and is
 * rewritten, and another rule set or rewriter is another key. */
#include <dirent.h>
#include <float.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kt.h"
#include "rwcache.h"

static tg_ctx *ctx;
static char dir[] = "/tmp/tgrel-cache-test-XXXXXX";

/* The entries of the cache directory whose names end in suffix (".so":
 * shared objects, ".rw": rewritten terms); the first one's path. */
static int entries_of(const char *suffix, char *first, size_t size)
{
    DIR *d = opendir(dir);
    int n = 0;
    size_t ls = strlen(suffix);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l > ls && strcmp(e->d_name + l - ls, suffix) == 0) {
            if (!n && first)
                snprintf(first, size, "%s/%s", dir, e->d_name);
            n++;
        }
    }
    if (d)
        closedir(d);
    return n;
}

static int entries(char *first, size_t size)
{
    return entries_of(".so", first, size);
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
    int ok = fn && tg_fn_native(fn) && tg_fn_call(fn, &in, &out, &err) == 0 && fabs(o[1] - exp(1.0) * 2) <= 4 * DBL_EPSILON * exp(1.0) * 2;   /* vector exp: 4 ulp */
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

static int rw_entries(char *first, size_t size)
{
    return entries_of(".rw", first, size);
}

/* Compile expr over x (n) with the rule library's rewriter spec (NULL:
 * default) and extra rules, in a context of its own; run it on 0 1 2
 * against ref.  Returns 1 when right, and native unless interpret;
 * *fired: the rule firings the rewriter traced (0 on a cache hit). */
static int run_rules(const char *expr, const char *spec, const char *extra, double (*ref)(double), int *fired)
{
    tg_error err;
    tg_ctx *c = tg_ctx_new(&err);
    tg_rules *rs = tg_rules_new(c, &err);
    int ok = rs && tg_rules_load_file(rs, tap_path("patterns/lib/all.rules"), &err) == 0;
    if (ok && extra)
        ok = tg_rules_load_string(rs, extra, strlen(extra), NULL, &err) == 0;
    FILE *trace = tmpfile();
    tg_rules_set_trace(rs, trace, 1);
    tg_term *x = tg_read_cstr(c, "(input x float64 (n))", &err), *e = tg_read_cstr(c, expr, &err);
    tg_fn_options o = {NULL, 0, NULL, NULL, rs, spec ? tg_symbol_cstr(c, spec) : NULL};
    tg_fn *fn = ok ? tg_fn_compile(c, 1, &x, 1, &e, &o, &err) : NULL;
    if (!fn)
        tap_diag("%s: %s", expr, err.message);
    double xv[3] = {0, 1, 2}, ov[3] = {0};
    int64_t n = 3;
    tg_array in, out;
    tg_array_init(&in, TG_FLOAT64, 1, &n, xv);
    tg_array_init(&out, TG_FLOAT64, 1, &n, ov);
    ok = fn && tg_fn_native(fn) && tg_fn_call(fn, &in, &out, &err) == 0;
    for (int i = 0; ok && i < 3; i++)     /* vector exp: within 4 ulp */
        ok = fabs(ov[i] - ref(xv[i])) <= 4 * DBL_EPSILON * fabs(ref(xv[i]));
    *fired = trace ? (int)ftell(trace) : -1;
    if (trace)
        fclose(trace);
    tg_fn_free(fn);
    tg_rules_free(rs);
    tg_ctx_free(c);
    return ok;
}

static double exp2x(double x) { return exp(x) * 2; }

/* The same in a new process: 1 when right and the rewriter never ran. */
static int rules_hit_in_new_process(const char *expr)
{
    pid_t pid = fork();
    if (pid == 0) {
        int fired = -1;
        int ok = run_rules(expr, NULL, NULL, exp2x, &fired);
        _exit(ok && fired == 0 ? 0 : 1);
    }
    int status = 1;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static void test_pipeline_cache(void)
{
    /* mul-one and add-zero fire: the graph rewrites to (mul 2 (exp x)) */
    const char *e = "(add (mul (mul (exp (input x float64 (n))) 1) 2) 0)";
    int fired = -1, so0 = entries(NULL, 0), ok;
    ok = run_rules(e, NULL, NULL, exp2x, &fired);
    TAP_CHECK(ok && fired > 0, "with rules: rewritten (%d bytes of trace), compiled, right", fired);
    char rw[600];
    TAP_EQ_INT(rw_entries(rw, sizeof rw), 1, "one entry of rewritten terms");
    ok = run_rules(e, NULL, NULL, exp2x, &fired);
    TAP_CHECK(ok && fired == 0, "compiled again: the rewriter does not run (%d)", fired);
    TAP_CHECK(rules_hit_in_new_process(e), "nor in a new process, which gets the same function");
    TAP_EQ_INT(rw_entries(NULL, 0), 1, "the key is the same there");
    TAP_EQ_INT(entries(NULL, 0), so0 + 1, "and one shared object for it");
    /* the same graph from other text (spacing, a comment) is the same key */
    const char *same = "(add  (mul (mul (exp (input x float64 (n))) 1)\n 2) ; zero\n 0)";
    ok = run_rules(same, NULL, NULL, exp2x, &fired);
    TAP_CHECK(ok && fired == 0, "the same graph read from other text hits (%d)", fired);

    /* corrupt: one byte changed, then truncated: a miss, rewritten and stored again */
    off_t size = file_size(rw);
    FILE *f = fopen(rw, "r+b");
    if (f) {
        fseek(f, (long)size / 2, SEEK_SET);
        int c = fgetc(f);
        fseek(f, (long)size / 2, SEEK_SET);
        fputc(c ^ 0x21, f);
        fclose(f);
    }
    ok = run_rules(e, NULL, NULL, exp2x, &fired);
    TAP_CHECK(ok && fired > 0, "a corrupt entry is a miss: rewritten (%d), right", fired);
    TAP_EQ_INT((int)file_size(rw), (int)size, "and stored whole again");
    ok = run_rules(e, NULL, NULL, exp2x, &fired);
    TAP_CHECK(ok && fired == 0, "then hits (%d)", fired);
    TAP_CHECK(truncate(rw, size - 30) == 0, "truncate the entry");
    ok = run_rules(e, NULL, NULL, exp2x, &fired);
    TAP_CHECK(ok && fired > 0, "a truncated entry is a miss: rewritten (%d), right", fired);
    TAP_EQ_INT((int)file_size(rw), (int)size, "and stored whole again");

    /* another rule set, another rewriter: other keys */
    ok = run_rules(e, NULL, "(rule noop-exp (exp (exp ?x)) => (exp (exp ?x)))", exp2x, &fired);
    TAP_CHECK(ok && fired > 0, "one rule more: the rewriter runs (%d)", fired);
    TAP_EQ_INT(rw_entries(NULL, 0), 2, "under a key of its own");
    ok = run_rules(e, "canonicalize", NULL, exp2x, &fired);
    TAP_CHECK(ok && fired > 0, "another rewriter spec: the rewriter runs (%d)", fired);
    TAP_EQ_INT(rw_entries(NULL, 0), 3, "under a key of its own");
    ok = run_rules(e, NULL, "(defrel (kt-rel x) (== x 1))", exp2x, &fired);
    TAP_CHECK(ok && fired > 0, "a relation defined: the rewriter runs (%d)", fired);
    TAP_EQ_INT(rw_entries(NULL, 0), 4, "under a key of its own");
    TAP_EQ_INT(entries(NULL, 0), so0 + 1, "all four rewrite to one graph: one shared object");
}

/* The text of rewritten terms reads back to the same pointers: every
 * kind of atom, improper lists, a DAG of 2^60 paths in linear text, a
 * term 200000 deep (no recursion); damaged text is refused. */
static void test_term_text(void)
{
    tg_error err;
    tg_term *t[4];
    t[0] = tg_read_cstr(ctx, "(f |a b| \"s\\nt\" 123456789012345678901234567890 -1/3 -0.0 nan inf ?v"
                             " (a b . c) () (()) #t)", &err);
    tg_term *x = tg_read_cstr(ctx, "x", &err), *add = tg_symbol_cstr(ctx, "add"), *neg = tg_symbol_cstr(ctx, "neg");
    t[1] = x;
    for (int i = 0; i < 60; i++) {
        tg_term *a[2] = {t[1], t[1]};
        t[1] = tg_app(ctx, add, 2, a);
    }
    t[2] = x;
    for (int i = 0; i < 200000; i++)
        t[2] = tg_app(ctx, neg, 1, &t[2]);
    t[3] = t[1];    /* a root twice */
    size_t len;
    char *text = t[0] ? tgZw_encode(4, t, &len) : NULL;
    tg_term *back[4] = {NULL};
    TAP_CHECK(text && tgZw_decode(ctx, text, len, 4, back) == 0, "encode and decode four terms");
    TAP_CHECK(back[0] == t[0] && back[1] == t[1] && back[2] == t[2] && back[3] == t[3],
              "the same pointers come back (atoms of every kind, a DAG, a deep term)");
    TAP_CHECK(text && len < 200000 * 20 + 2000, "linear in the DAG: %zu bytes", len);
    int refused = 0, cuts = 0;
    for (size_t cut = 1; text && cut < len; cut += len / 97 + 1, cuts++)
        refused += tgZw_decode(ctx, text, cut, 4, back) < 0;
    TAP_EQ_INT(refused, cuts, "every truncated text is refused");
    static const char *const bad[] = {
        "a 1 x\nq 0\ntgrel-terms 1 1\n",         /* no root line */
        "l 1 1 0\na 1 x\nr 0\ntgrel-terms 1 2\n",  /* a child after its parent */
        "a 1 x\nr 0\ntgrel-terms 1 2\n",           /* fewer nodes than counted */
        "a 1 (\nr 0\ntgrel-terms 1 1\n",           /* an atom that does not read */
        "a 9 x\nr 0\ntgrel-terms 1 1\n",           /* an atom longer than the text */
        "a 1 x\nr 1\ntgrel-terms 1 1\n",           /* a root out of range */
        "a 1 x\nr 0\ntgrel-terms 2 1\n",           /* another format */
    };
    refused = 0;
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++)
        refused += tgZw_decode(ctx, bad[k], strlen(bad[k]), 1, back) < 0;
    TAP_EQ_INT(refused, (int)(sizeof bad / sizeof *bad), "malformed texts are refused");
    /* bytes flipped at random: refused, or read into terms; never a fault */
    int whole = 0;
    for (int k = 0; text && k < 200; k++) {
        size_t at = (size_t)(kt_rand() % len);
        char was = text[at];
        text[at] = (char)(kt_rand() & 0xff);
        memset(back, 0, sizeof back);
        whole += tgZw_decode(ctx, text, len, 4, back) < 0 || (back[0] && back[1] && back[2] && back[3]);
        text[at] = was;
    }
    TAP_EQ_INT(whole, 200, "a byte flipped: refused or read whole, 200 times");
    free(text);
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

    test_pipeline_cache();
    test_term_text();

    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    TAP_CHECK(system(cmd) == 0, "clean up");
    tg_ctx_free(ctx);
    return TAP_DONE();
}
