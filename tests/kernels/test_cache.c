/* test_cache.c - the compile cache: deterministic keys (one entry per
 * program), hits, rebuilding truncated and corrupt entries, and two
 * processes compiling the same program at once; the key is the input
 * term (a new process hits without generating code), linear in its DAG;
 * with a rule set the whole pipeline is cached: a graph compiled again, in
 * this process or a new one, skips the rewriter (its trace stays empty),
 * a corrupt or truncated entry of rewritten terms is a miss and is
 * rewritten, and another rule set or rewriter is another key; a grad
 * compiled again skips its expansion, keyed by its options too. */
#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kt.h"
#include "cache.h"
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
    int ok = fn && tg_fn_native(fn) && tg_fn_call(fn, &in, &out, &err) == 0 &&
             kt_close(o[1], exp(1.0) * 2, KT_ULPS);
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
    tg_fn_options o = {.rules = rs, .rewrite = spec ? tg_symbol_cstr(c, spec) : NULL};
    tg_fn *fn = ok ? tg_fn_compile(c, 1, &x, 1, &e, &o, &err) : NULL;
    if (!fn)
        tap_diag("%s: %s", expr, err.message);
    double xv[3] = {0, 1, 2}, ov[3] = {0};
    int64_t n = 3;
    tg_array in, out;
    tg_array_init(&in, TG_FLOAT64, 1, &n, xv);
    tg_array_init(&out, TG_FLOAT64, 1, &n, ov);
    ok = fn && tg_fn_native(fn) && tg_fn_call(fn, &in, &out, &err) == 0;
    for (int i = 0; ok && i < 3; i++)
        ok = kt_close(ov[i], ref(xv[i]), KT_ULPS);
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

/* ---- every change of a rule set is a new key ------------------------- */

static double f_exp(double x) { return exp(x); }
static double f_log(double x) { return log(x); }
static double f_sqrt(double x) { return sqrt(x); }
static double f_twice(double x) { return 2 * x; }

static tg_term *c_to(tg_ctx *c, tg_term *node, const char *op)
{
    tg_term *h = tg_symbol_cstr(c, op), *x = tg_nth(node, 1);
    return h && x ? tg_app(c, h, 1, &x) : NULL;
}
static tg_term *c_to_log(tg_ctx *c, tg_term *node, void *ud, tg_error *err)
{
    (void)ud, (void)err;
    return c_to(c, node, "log");
}
static tg_term *c_to_sqrt(tg_ctx *c, tg_term *node, void *ud, tg_error *err)
{
    (void)ud, (void)err;
    return c_to(c, node, "sqrt");
}
static int c_rel_one(tg_ctx *c, tg_term *const *args, unsigned nargs, unsigned long i, void **state,
                     tg_term **answer, void *ud, tg_error *err)
{
    (void)nargs, (void)state, (void)ud, (void)err;
    *answer = tg_list(c, 1, args, NULL);
    return i == 0 && args[0] == tg_int(c, 1);
}

/* A rule set of its own: C rewriter cfn (when not NULL) registered for
 * exp as `c` after the forms pre, then the forms rules; C relation
 * c-one? defined when crel; the C code's version cver (NULL: none). */
typedef struct cset {
    const char *pre, *rules;
    tg_node_rewriter_fn cfn;
    int crel;
    const char *cver;
} cset;

static tg_rules *make_set(tg_ctx *c, const cset *k, tg_error *err)
{
    tg_rules *rs = tg_rules_new(c, err);
    int ok = rs && (!k->pre || tg_rules_load_string(rs, k->pre, strlen(k->pre), NULL, err) == 0);
    if (ok && k->cfn)
        ok = tg_rules_def_rewriter(rs, "c", "exp", NULL, k->cfn, NULL, err) == 0;
    if (ok && k->crel) {
        tg_env *env = tg_rules_env(rs, err);
        ok = env && tg_defrel_c(env, "c-one?", 1, c_rel_one, NULL, err) == 0;
    }
    ok = ok && tg_rules_load_string(rs, k->rules, strlen(k->rules), NULL, err) == 0;
    ok = ok && tg_rules_set_c_version(rs, k->cver, err) == 0;
    if (!ok && rs) {
        tg_rules_free(rs);
        rs = NULL;
    }
    return rs;
}

/* Compile expr over x (n) with rs and rewriter spec (text; NULL:
 * default); run it on 0.5 1 2.  1 when native and within a few ulps of
 * ref. */
static int run_with(tg_ctx *c, tg_rules *rs, const char *spec, const char *expr, double (*ref)(double))
{
    tg_error err;
    tg_term *x = tg_read_cstr(c, "(input x float64 (n))", &err), *e = tg_read_cstr(c, expr, &err);
    tg_fn_options o = {.rules = rs, .rewrite = spec ? tg_read_cstr(c, spec, &err) : NULL};
    tg_fn *fn = rs && x && e ? tg_fn_compile(c, 1, &x, 1, &e, &o, &err) : NULL;
    if (!fn)
        tap_diag("%s: %s", expr, err.message);
    double xv[3] = {0.5, 1, 2}, ov[3] = {0};
    int64_t n = 3;
    tg_array in, out;
    tg_array_init(&in, TG_FLOAT64, 1, &n, xv);
    tg_array_init(&out, TG_FLOAT64, 1, &n, ov);
    int ok = fn && tg_fn_native(fn) && tg_fn_call(fn, &in, &out, &err) == 0;
    for (int i = 0; ok && i < 3; i++)
        if (!(ok = kt_close(ov[i], ref(xv[i]), KT_ULPS)))
            tap_diag("%s at %g: got %.17g, want %.17g", expr, xv[i], ov[i], ref(xv[i]));
    tg_fn_free(fn);
    return ok;
}

/* run_with set k in a context of its own; *fired as run_rules. */
static int run_set(const cset *k, const char *spec, const char *expr, double (*ref)(double), int *fired)
{
    tg_error err;
    tg_ctx *c = tg_ctx_new(&err);
    tg_rules *rs = c ? make_set(c, k, &err) : NULL;
    FILE *trace = tmpfile();
    if (rs)
        tg_rules_set_trace(rs, trace, 1);
    int ok = run_with(c, rs, spec, expr, ref);
    *fired = trace ? (int)ftell(trace) : -1;
    if (trace)
        fclose(trace);
    tg_rules_free(rs);
    tg_ctx_free(c);
    return ok;
}

/* run_set in a new process: 1 when right. */
static int run_set_in_new_process(const cset *k, const char *spec, const char *expr, double (*ref)(double))
{
    pid_t pid = fork();
    if (pid == 0) {
        int fired;
        _exit(run_set(k, spec, expr, ref, &fired) ? 0 : 1);
    }
    int status = 1;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

#define OPS "(op exp (arity 1)) (op log (arity 1)) (op sqrt (arity 1)) (op sin (arity 1)) "

/* Rule sets a and b differ in one way; compiled one after the other in
 * one cache, each computes its own function, and a compiled again is a
 * hit that still computes its own. */
static const struct stale {
    const char *what;
    cset a, b;
    const char *spec, *expr;
    double (*fa)(double), (*fb)(double);
} stale[] = {
    {"a condition",
     {NULL, OPS "(rule r (exp ?x) => (log ?x) (when (== 1 1))) (equilibrium default r)", NULL, 0, NULL},
     {NULL, OPS "(rule r (exp ?x) => (log ?x) (when (== 1 2))) (equilibrium default r)", NULL, 0, NULL},
     NULL, "(exp (input x float64 (n)))", f_log, f_exp},
    {"a right side",
     {NULL, OPS "(rule r (exp ?x) => (log ?x)) (equilibrium default r)", NULL, 0, NULL},
     {NULL, OPS "(rule r (exp ?x) => (sqrt ?x)) (equilibrium default r)", NULL, 0, NULL},
     NULL, "(exp (input x float64 (n)))", f_log, f_sqrt},
    {"an alternative left side",
     {NULL, OPS "(rule r (exp ?x) (sqrt ?x) => (log ?x)) (equilibrium default r)", NULL, 0, NULL},
     {NULL, OPS "(rule r (exp ?x) (sin ?x) => (log ?x)) (equilibrium default r)", NULL, 0, NULL},
     NULL, "(sqrt (input x float64 (n)))", f_log, f_sqrt},
    {"a tag a query selects",
     {NULL, OPS "(rule r (exp ?x) => (log ?x) (tags keep)) (equilibrium w r)", NULL, 0, NULL},
     {NULL, OPS "(rule r (exp ?x) => (log ?x) (tags drop)) (equilibrium w r)", NULL, 0, NULL},
     "(query w (exclude drop))", "(exp (input x float64 (n)))", f_log, f_exp},
    {"a relation body",
     {NULL, OPS "(defrel (ok? x) (== x 1)) (rule r (exp ?x) => (log ?x) (when (ok? 1))) (equilibrium default r)",
      NULL, 0, NULL},
     {NULL, OPS "(defrel (ok? x) (== x 2)) (rule r (exp ?x) => (log ?x) (when (ok? 1))) (equilibrium default r)",
      NULL, 0, NULL},
     NULL, "(exp (input x float64 (n)))", f_log, f_exp},
    {"an op property",
     {NULL, "(op mul (arity 2) comm) (op exp (arity 1)) (rule r (mul ?x 2) => (exp ?x)) (equilibrium default r)",
      NULL, 0, NULL},
     {NULL, "(op mul (arity 2)) (op exp (arity 1)) (rule r (mul ?x 2) => (exp ?x)) (equilibrium default r)",
      NULL, 0, NULL},
     NULL, "(mul 2 (input x float64 (n)))", f_exp, f_twice},
    {"the C code's version",
     {OPS, "(equilibrium default c)", c_to_log, 0, "to-log 1"},
     {OPS, "(equilibrium default c)", c_to_sqrt, 0, "to-sqrt 1"},
     NULL, "(exp (input x float64 (n)))", f_log, f_sqrt},
    {"a C relation's version",
     {NULL, OPS "(rule r (exp ?x) => (log ?x) (when (c-one? 1))) (equilibrium default r)", NULL, 1, "1"},
     {NULL, OPS "(rule r (exp ?x) => (log ?x) (when (c-one? 1))) (equilibrium default r)", NULL, 1, "2"},
     NULL, "(exp (input x float64 (n)))", f_log, f_log},
};

static void test_stale(void)
{
    for (size_t i = 0; i < sizeof stale / sizeof *stale; i++) {
        const struct stale *k = &stale[i];
        int fired = 0, n0 = rw_entries(NULL, 0);
        TAP_CHECK(run_set(&k->a, k->spec, k->expr, k->fa, &fired) && fired > 0,
                  "%s: the first rule set rewrites (%d) and computes its function", k->what, fired);
        TAP_CHECK(run_set(&k->b, k->spec, k->expr, k->fb, &fired),
                  "%s changed: the second computes its own function", k->what);
        TAP_CHECK(rw_entries(NULL, 0) == n0 + 2, "%s: two entries", k->what);
        TAP_CHECK(run_set(&k->a, k->spec, k->expr, k->fa, &fired) && fired == 0,
                  "%s: the first again hits (%d) and computes its function", k->what, fired);
        TAP_CHECK(run_set_in_new_process(&k->b, k->spec, k->expr, k->fb),
                  "%s: so does the second in a new process", k->what);
    }
}

/* C code without a version is never cached: each compile rewrites. */
static void test_c_unversioned(void)
{
    cset lg = {OPS, "(equilibrium default c)", c_to_log, 0, NULL};
    cset sq = {OPS, "(equilibrium default c)", c_to_sqrt, 0, NULL};
    cset rel = {NULL, OPS "(rule r (exp ?x) => (log ?x) (when (c-one? 1))) (equilibrium default r)", NULL, 1, NULL};
    int fired = 0, n0 = rw_entries(NULL, 0);
    const char *e = "(exp (input x float64 (n)))";
    TAP_CHECK(run_set(&lg, NULL, e, f_log, &fired) && fired > 0, "a C rewriter, no version: rewritten");
    TAP_CHECK(run_set(&lg, NULL, e, f_log, &fired) && fired > 0, "and rewritten again (%d)", fired);
    TAP_CHECK(run_set(&sq, NULL, e, f_sqrt, &fired) && fired > 0, "another function of that name: its result");
    TAP_CHECK(run_set(&rel, NULL, e, f_log, &fired) && fired > 0, "a C relation, no version: rewritten");
    TAP_CHECK(run_set(&rel, NULL, e, f_log, &fired) && fired > 0, "and rewritten again (%d)", fired);
    TAP_EQ_INT(rw_entries(NULL, 0), n0, "no entry stored for them");
}

/* One rule set changed between two compiles: through its logic
 * environment (a relation redefined), and by a form
 * evaluated (a rule added), each seen by the next compile. */
static void test_changed_in_place(void)
{
    tg_error err;
    tg_ctx *c = tg_ctx_new(&err);
    const char *text = OPS "(defrel (ok? x) (== x 1)) (rule r (exp ?x) => (log ?x) (when (ok? 1))) (equilibrium default r)";
    tg_rules *rs = tg_rules_new(c, &err);
    const char *e = "(exp (input x float64 (n)))";
    int ok = rs && tg_rules_load_string(rs, text, strlen(text), NULL, &err) == 0;
    TAP_CHECK(ok && run_with(c, rs, NULL, e, f_log), "a rule whose condition holds: log");
    tg_env *env = ok ? tg_rules_env(rs, &err) : NULL;
    tg_term *def = tg_read_cstr(c, "(defrel (ok? x) (== x 2))", &err);
    ok = env && def && tg_eval(env, def, NULL, NULL, NULL, &err) == TG_EVAL_DEFINE;
    TAP_CHECK(ok && run_with(c, rs, NULL, e, f_exp), "its relation redefined through the environment: exp");
    tg_term *rule = tg_read_cstr(c, "(rule r2 (exp ?x) => (sqrt ?x))", &err), *walk = tg_read_cstr(c, "(equilibrium w2 r2)", &err);
    ok = rule && walk && tg_rules_eval(rs, rule, NULL, NULL, NULL, &err) == TG_EVAL_DEFINE &&
         tg_rules_eval(rs, walk, NULL, NULL, NULL, &err) == TG_EVAL_DEFINE;
    TAP_CHECK(ok && run_with(c, rs, NULL, e, f_exp), "a rule added by a form, not used by default: exp");
    /* a load that fails adds nothing, so the key is that of before */
    int n0 = rw_entries(NULL, 0);
    const char *bad = "(rule r3 (exp ?x) => (sin ?x)) (rule r3 (exp ?x) => (sin ?x))";
    TAP_CHECK(tg_rules_load_string(rs, bad, strlen(bad), NULL, &err) < 0, "a bad load fails");
    TAP_CHECK(run_with(c, rs, NULL, e, f_exp) && rw_entries(NULL, 0) == n0, "and leaves the key as it was (a hit)");
    tg_rules_free(rs);
    tg_ctx_free(c);
}

/* ---- grads: the rewrite cache keys the unexpanded outputs ------------- */

static double f_sin(double x) { return sin(x); }
static double f_cos(double x) { return cos(x); }
static double f_zero(double x) { (void)x; return 0; }

/* Compile expr (a grad over x (n)) with the rule library, in a context
 * of its own, with the grad options: user vjp rules (text, NULL: none)
 * and disconnected; run it on 0.5 1 2 against ref.  1 when right
 * (native), 0 when wrong, -1 when the compile failed; *st its profile. */
static int run_grad(const char *expr, const char *vjp, int disconnected, double (*ref)(double), tg_fn_stats *st)
{
    tg_error err;
    tg_ctx *c = tg_ctx_new(&err);
    tg_rules *rs = tg_rules_new(c, &err), *gr = vjp ? tg_rules_new(c, &err) : NULL;
    int ok = rs && tg_rules_load_file(rs, tap_path("patterns/lib/all.rules"), &err) == 0;
    if (ok && gr)
        ok = tg_rules_load_file(gr, tap_path("patterns/lib/tensor.rules"), &err) == 0 &&
             tg_rules_load_string(gr, vjp, strlen(vjp), "user.rules", &err) == 0;
    tg_grad_options go = {gr, disconnected};
    tg_term *x = tg_read_cstr(c, "(input x float64 (n))", &err), *e = tg_read_cstr(c, expr, &err);
    tg_fn_options o = {.rules = rs, .grad = &go};
    tg_fn *fn = ok ? tg_fn_compile(c, 1, &x, 1, &e, &o, &err) : NULL;
    memset(st, 0, sizeof *st);
    double xv[3] = {0.5, 1, 2}, ov[3] = {0};
    int64_t n = 3;
    tg_array in, out;
    tg_array_init(&in, TG_FLOAT64, 1, &n, xv);
    tg_array_init(&out, TG_FLOAT64, 1, &n, ov);
    int rc = fn ? 1 : -1;
    if (fn && (tg_fn_profile(fn, st) < 0 || !tg_fn_native(fn) || tg_fn_call(fn, &in, &out, &err) < 0))
        rc = 0;
    for (int i = 0; rc == 1 && i < 3; i++)
        if (!kt_close(ov[i], ref(xv[i]), KT_ULPS))
            rc = 0;
    tg_fn_free(fn);
    tg_rules_free(gr);
    tg_rules_free(rs);
    tg_ctx_free(c);
    return rc;
}

/* A hit skips the grad expansion (its rules are not even parsed), and
 * the key covers what the expansion is a function of: the user's vjp
 * rules and the disconnected option. */
static void test_grad_key(void)
{
    const char *g = "(grad (sum (sin (input x float64 (n))) all) (input x float64 (n)))";
    /* a vjp rule of the user's that is wrong on purpose: sin' = sin */
    const char *odd = "(op vjp (arity 2)) (op adjoints (arity 0+))\n"
                      "(rule my-vjp-sin (vjp (sin ?x) ?g) => (adjoints (?x (mul ?g (sin ?x)))))";
    tg_fn_stats a, b;
    int n0 = rw_entries(NULL, 0);
    TAP_EQ_INT(run_grad(g, NULL, 0, f_cos, &a), 1, "a grad compiled with rules: cos");
    TAP_CHECK(!a.rewrite_cached && a.grad_ms > 0 && a.nodes_before > 0, "a miss expands (%.3f ms, %zu nodes)",
              a.grad_ms, a.nodes_before);
    TAP_EQ_INT(run_grad(g, NULL, 0, f_cos, &b), 1, "compiled again in a new context: cos");
    TAP_CHECK(b.rewrite_cached && b.grad_ms == 0, "a hit does not expand the grad (%.3f ms)", b.grad_ms);
    TAP_EQ_INT(b.nodes_before, a.nodes_before, "and gives the expanded node count of the miss");
    TAP_EQ_INT(b.nodes_after, a.nodes_after, "and the same rewritten graph");
    TAP_EQ_INT(run_grad(g, odd, 0, f_sin, &a), 1, "the user's vjp rule changes the result: another key");
    TAP_CHECK(!a.rewrite_cached, "(a miss)");
    TAP_EQ_INT(run_grad(g, odd, 0, f_sin, &b), 1, "which hits next time, still the user's");
    TAP_CHECK(b.rewrite_cached, "(a hit)");
    TAP_EQ_INT(rw_entries(NULL, 0), n0 + 2, "two entries for the two");
    const char *dis = "(grad (sum (sin (input y float64 (n))) all) (input x float64 (n)))";
    TAP_EQ_INT(run_grad(dis, NULL, 1, f_zero, &a), 1, "disconnected: zeros");
    TAP_EQ_INT(run_grad(dis, NULL, 0, f_zero, &b), -1, "not disconnected: the error, not the stored zeros");
    TAP_EQ_INT(run_grad(dis, NULL, 1, f_zero, &b), 1, "disconnected again: zeros");
    TAP_CHECK(b.rewrite_cached, "from the cache");
}

static char *tiny_source(void *ud, size_t *len)
{
    (void)ud;
    const char *src = "int tiny(void) { return 7; }\n";
    char *s = malloc(strlen(src) + 1);
    if (s)
        *len = strlen(strcpy(s, src));
    return s;
}

/* Compiled code is keyed by the CPU too. */
static void test_cpu_key(void)
{
    const char *text = "some program";
    char here[33], other[33], again[33];
    TAP_CHECK(tgZ_key(text, strlen(text), tgZ_cpu_id(), "cc", "-O2", here) == 0 &&
              tgZ_key(text, strlen(text), tgZ_cpu_id(), "cc", "-O2", again) == 0 && !strcmp(here, again),
              "the key of a program on this CPU is stable");
    TAP_CHECK(tgZ_key(text, strlen(text), "another cpu", "cc", "-O2", other) == 0 && strcmp(here, other),
              "another CPU gives another key");
    TAP_EQ_INT((int)strlen(tgZ_cpu_id()), 32, "the CPU is named by 32 hex digits");
    /* an entry compiled here is stored under this CPU's key */
    const char *kt = "tiny program";
    char key[33], path[700];
    int hit, why;
    tg_error err;
    void *so = tgZ_load(kt, strlen(kt), tiny_source, NULL, "cc", "-O0", &hit, &why, &err);
    char *src = tiny_source(NULL, &(size_t){0}), skey[33], named[33] = "";
    tgZ_source_key(src, strlen(src), tgZ_cpu_id(), "cc", "-O0", skey);
    free(src);
    tgZ_key(kt, strlen(kt), tgZ_cpu_id(), "cc", "-O0", key);
    snprintf(path, sizeof path, "%s/%s.src", dir, key);
    TAP_CHECK(so && tgZ_map_read(path, named) == 0 && !strcmp(named, skey),
              "the key with this CPU maps to the code built from the source with this CPU");
    snprintf(path, sizeof path, "%s/%s.so", dir, skey);
    TAP_CHECK(so && file_size(path) > 0, "which is stored under that name");
    if (so)
        dlclose(so);
}

/* ---- code shared by key texts whose source is the same ----------------- */

/* The compiler invocations a wrapper logged: those with -c, and all. */
static int logged(const char *log, int *compiles)
{
    FILE *f = fopen(log, "r");
    char line[8192];
    int all = 0;
    *compiles = 0;
    while (f && fgets(line, sizeof line, f))
        all++, *compiles += strstr(line, " -c ") != NULL;
    if (f)
        fclose(f);
    return all;
}

/* A compiler wrapper DIR/NAME.sh that logs its calls to DIR/NAME.log and
 * runs cc: 1 when made. */
static int make_wrap(const char *name, char wrap[700], char log[700])
{
    snprintf(wrap, 700, "%s/%s.sh", dir, name);
    snprintf(log, 700, "%s/%s.log", dir, name);
    FILE *f = fopen(wrap, "w");
    if (f) {
        fprintf(f, "#!/bin/sh\necho \" $*\" >> '%s'\nexec cc \"$@\"\n", log);
        fclose(f);
    }
    return f && chmod(wrap, 0755) == 0;
}

/* The source "int NAME(void) { return VALUE; }" of a {name, value}. */
typedef struct { const char *name; int value; } ret_fn;
static char *ret_source(void *ud, size_t *len)
{
    const ret_fn *r = ud;
    char *s = malloc(128);
    if (s)
        *len = (size_t)snprintf(s, 128, "int %s(void) { return %d; }\n", r->name, r->value);
    return s;
}

/* Load key text kt with r's source through the logging compiler wrap:
 * 1 when r's function is there and right; *hit and the compiler's calls
 * (from log) set. */
static int load_ret(const char *kt, ret_fn *r, const char *wrap, const char *log, int *hit, int *calls)
{
    int why, compiles;
    tg_error err;
    unlink(log);
    void *so = tgZ_load(kt, strlen(kt), ret_source, r, wrap, "-O0", hit, &why, &err);
    void *p = so ? dlsym(so, r->name) : NULL;
    int (*fn)(void);
    memcpy(&fn, &p, sizeof fn);
    int ok = p && fn() == r->value;
    if (so)
        dlclose(so);
    *calls = logged(log, &compiles);
    return ok;
}

/* Overwrite the map of key text kt (compiled with wrap, -O0) with text,
 * its trailer left as it was. */
static int spoil_map(const char *kt, const char *wrap, const char *text)
{
    char key[33], path[700];
    tgZ_key(kt, strlen(kt), tgZ_cpu_id(), wrap, "-O0", key);
    snprintf(path, sizeof path, "%s/%s.src", dir, key);
    FILE *f = fopen(path, "r+b");
    int ok = f && fwrite(text, 1, strlen(text), f) == strlen(text);
    if (f)
        fclose(f);
    return ok;
}

/* A key text whose source was compiled before, under another key text
 * (another build of the library, another lowering version), loads that
 * code without compiling; a map that is gone, corrupt or names code
 * that is gone is a miss that compiles, never another entry's code. */
static void test_shared_source(void)
{
    char wrap[700], log[700];
    TAP_CHECK(make_wrap("cc-share", wrap, log), "shared sources: a compiler wrapper that logs its calls");
    ret_fn a = {"shared_a", 11}, b = {"shared_b", 22};
    int hit, calls, ok, so0 = entries(NULL, 0), maps0 = entries_of(".src", NULL, 0);
    ok = load_ret("share: a, version 1", &a, wrap, log, &hit, &calls);
    TAP_CHECK(ok && !hit && calls == 1, "a new source is compiled (%d call)", calls);
    ok = load_ret("share: a, version 2", &a, wrap, log, &hit, &calls);
    TAP_CHECK(ok && hit && calls == 0,
              "another key text with the same source loads it without the compiler (%d calls)", calls);
    TAP_EQ_INT(entries(NULL, 0), so0 + 1, "one compiled entry for both");
    TAP_EQ_INT(entries_of(".src", NULL, 0), maps0 + 2, "and a map for each key text");
    ok = load_ret("share: b", &b, wrap, log, &hit, &calls);
    TAP_CHECK(ok && !hit && calls == 1, "another source is compiled (%d call)", calls);
    /* version 1's map pointed at b's code, its trailer now wrong */
    char bkey[33];
    char *src = ret_source(&b, &(size_t){0});
    tgZ_source_key(src, strlen(src), tgZ_cpu_id(), wrap, "-O0", bkey);
    free(src);
    TAP_CHECK(spoil_map("share: a, version 1", wrap, bkey), "a map overwritten with another entry's name");
    ok = load_ret("share: a, version 1", &a, wrap, log, &hit, &calls);
    TAP_CHECK(ok && hit && calls == 0, "is not believed: its own code is found from its source (%d calls)", calls);
    /* the code removed: both maps name nothing, and the next load compiles */
    char akey[33], path[700];
    src = ret_source(&a, &(size_t){0});
    tgZ_source_key(src, strlen(src), tgZ_cpu_id(), wrap, "-O0", akey);
    free(src);
    snprintf(path, sizeof path, "%s/%s.so", dir, akey);
    TAP_CHECK(unlink(path) == 0, "the shared code removed");
    ok = load_ret("share: a, version 2", &a, wrap, log, &hit, &calls);
    TAP_CHECK(ok && !hit && calls == 1, "a map naming code that is gone is a miss: compiled again (%d call)", calls);
    ok = load_ret("share: a, version 1", &a, wrap, log, &hit, &calls);
    TAP_CHECK(ok && hit && calls == 0, "which the other key text then shares (%d calls)", calls);
    /* a source that does not compile is counted a miss, not a hit */
    tg_cache_stats st0, st1;
    tg_error err;
    ret_fn bad = {"not a name", 1};
    int got0 = tg_cache_info(&st0, &err) == 0;
    ok = load_ret("share: bad", &bad, wrap, log, &hit, &calls);
    int got1 = tg_cache_info(&st1, &err) == 0;
    TAP_CHECK(!ok && !hit && calls == 1 && got0 && got1 && st1.code_misses == st0.code_misses + 1 &&
                  st1.code_hits == st0.code_hits,
              "a source that does not compile fails, counted a miss (%llu to %llu), not a hit",
              st0.code_misses, st1.code_misses);
    unlink(wrap), unlink(log);
}

/* ---- a source in units, compiled in parallel --------------------------- */

/* A prelude and units: u0 .. u4 return twice their number, and unit
 * *(int *)ud (when 0..4) has a syntax error. */
static char *unit_source(void *ud, size_t *len)
{
    int bad = *(int *)ud;
    char *s = malloc(4096);
    if (!s)
        return NULL;
    int n = snprintf(s, 4096, "static int twice(int x) { return 2 * x; }\n");
    for (int u = 0; u < 5; u++)
        n += snprintf(s + n, 4096 - (size_t)n, "\n" TGZ_UNIT "int u%d(void) { return twice(%d)%s }\n", u, u,
                      u == bad ? "" : ";");
    *len = (size_t)n;
    return s;
}


/* The units of a source are compiled apart ($TGREL_CC_JOBS of them at
 * once) and linked: the functions all there and right; one compile when
 * TGREL_CC_JOBS=1; a unit that does not compile fails the whole, with the
 * compiler's message; no temporary file is left. */
static void test_units(void)
{
    char wrap[700], log[700];
    TAP_CHECK(make_wrap("cc-wrap", wrap, log), "a compiler wrapper that logs its calls");
    /* flags of their own: code built from one source is shared */
    static const struct { const char *jobs, *flags; int compiles, calls; } ways[] = {{"3", "-O1", 3, 4},
                                                                                      {"1", "-O1 -g0", 0, 1}};
    for (int w = 0; w < 2; w++) {
        setenv("TGREL_CC_JOBS", ways[w].jobs, 1);
        unlink(log);
        int bad = -1, hit, why, ok = 1, compiles;
        tg_error err;
        const char *kt = w ? "units, one job" : "units, three jobs";
        void *so = tgZ_load(kt, strlen(kt), unit_source, &bad, wrap, ways[w].flags, &hit, &why, &err);
        for (int u = 0; so && ok && u < 5; u++) {
            char name[8];
            snprintf(name, sizeof name, "u%d", u);
            void *p = dlsym(so, name);
            int (*fn)(void);
            memcpy(&fn, &p, sizeof fn);
            ok = p && fn() == 2 * u;
        }
        TAP_CHECK(so && !hit && ok, "TGREL_CC_JOBS=%s: five units compiled, each function right", ways[w].jobs);
        int calls = logged(log, &compiles);
        TAP_CHECK(calls == ways[w].calls && compiles == ways[w].compiles,
                  "TGREL_CC_JOBS=%s: %d compiles and %d calls in all (want %d, %d)", ways[w].jobs, compiles, calls,
                  ways[w].compiles, ways[w].calls);
        if (so)
            dlclose(so);
        bad = 3;
        kt = w ? "a bad unit, one job" : "a bad unit, three jobs";
        so = tgZ_load(kt, strlen(kt), unit_source, &bad, wrap, ways[w].flags, &hit, &why, &err);
        TAP_CHECK(!so && why == TGQ_FAILED && strstr(err.message, "failed (status 1)") && strstr(err.message, "u3"),
                  "TGREL_CC_JOBS=%s: a unit with an error fails the whole: %s", ways[w].jobs, so ? "" : err.message);
        if (so)
            dlclose(so);
    }
    unsetenv("TGREL_CC_JOBS");
    unlink(wrap), unlink(log);
    DIR *d = opendir(dir);
    int stray = 0;
    struct dirent *de;
    while (d && (de = readdir(d))) {
        const char *dot = strrchr(de->d_name, '.');
        stray += dot && (!strcmp(dot, ".c") || !strcmp(dot, ".o") || !strcmp(dot, ".log") || !strcmp(dot, ".lock"));
    }
    if (d)
        closedir(d);
    TAP_EQ_INT(stray, 0, "no source, object, log or lock file left");
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
    /* (a hit marks the entry used, its time: a rebuild would be a new file) */
    TAP_CHECK(st4.st_ino == st5.st_ino && st4.st_size == st5.st_size, "without rebuilding it");
    /* another term (a float literal for the integer) is another key */
    TAP_CHECK(run_once("(mul (exp (input x float64 (n))) 2.0)"), "a different term compiles");
    TAP_EQ_INT(entries(NULL, 0), 3, "under its own key");
    /* shared subterms are printed once in the key: 2^60 paths, 120 nodes */
    TAP_CHECK(run_doubling(60), "a term of 60 levels each used twice compiles natively and is right");
    TAP_CHECK(run_doubling(60), "and again from the cache");
    TAP_EQ_INT(entries(NULL, 0), 4, "one entry for it");

    test_pipeline_cache();
    test_stale();
    test_c_unversioned();
    test_changed_in_place();
    test_grad_key();
    test_units();
    test_cpu_key();
    test_shared_source();
    test_term_text();

    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    TAP_CHECK(system(cmd) == 0, "clean up");
    tg_ctx_free(ctx);
    return TAP_DONE();
}
