/* test_reload.c - tg_rules_reload_file and tg_rules_undef: a reload
 * replaces a file's definitions in their place in the load order, keeps
 * what other files registered into its rewriters, drops what the new
 * version no longer has, unloads the files only it included; a reload
 * or an undef that would break what stays (an op or relation a rule
 * uses, in a condition too) changes nothing (every list
 * of the rule set is the same term before and after) and names the
 * users; includes are read once per rule set, but a failed include
 * leaves its file unread, and a file a string included reloads by name; a reload never lets a
 * stale rewrite be used by the compile cache. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "tgrel.h"

static char dir[] = "/tmp/tgrel-reload-test-XXXXXX";
static tg_ctx *ctx;
static tg_rules *rs;

static const char *put(const char *name, const char *text)
{
    static char path[4][512];
    static int k;
    char *p = path[k++ % 4];
    snprintf(p, 512, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    if (!f)
        return p;
    fputs(text, f);
    fclose(f);
    return p;
}

static const char *at(const char *name)
{
    static char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return p;
}

static tg_term *rd(const char *s)
{
    tg_error err;
    return tg_read_cstr(ctx, s, &err);
}

static tg_term *norm(const char *s)
{
    tg_error err;
    tg_term *r = tg_normalize(rs, rd(s), 0, &err);
    return r ? r : rd("normalize-failed");
}

static tg_term *rw(const char *spec, const char *s)
{
    tg_error err;
    tg_term *r = tg_rewrite(rs, rd(spec), rd(s), &err);
    return r ? r : rd("rewrite-failed");
}

/* Everything the rule set lists, as one term. */
static tg_term *state(void)
{
    tg_term *l[4];
    tg_list_kind k[4] = {TG_LIST_OPS, TG_LIST_RULES, TG_LIST_REWRITERS, TG_LIST_RELATIONS};
    for (int i = 0; i < 4; i++)
        if (!(l[i] = tg_rules_list(rs, k[i], NULL)))
            return NULL;
    return tg_list(ctx, 4, l, NULL);
}

static long reload(const char *path, tg_error *e)
{
    tg_error errs[4];
    long n = tg_rules_reload_file(rs, path, errs, 4);
    if (e)
        *e = errs[0];
    if (n && !e)
        tap_diag("reload %s: %s", path, errs[0].message);
    return n;
}

/* ---- the rewrite cache: compile (sin x) with rewriter mine ---------------- */

static int compile_sin(double *out3)
{
    tg_error err;
    tg_term *x = rd("(input x float64 (n))"), *e = rd("(sin (input x float64 (n)))");
    tg_fn_options o = {.rules = rs, .rewrite = tg_symbol_cstr(ctx, "mine")};
    tg_fn *fn = tg_fn_compile(ctx, 1, &x, 1, &e, &o, &err);
    if (!fn) {
        tap_diag("compile: %s", err.message);
        return 0;
    }
    double xv[3] = {0.5, 1, 2};
    int64_t n = 3;
    tg_array in, out;
    tg_array_init(&in, TG_FLOAT64, 1, &n, xv);
    tg_array_init(&out, TG_FLOAT64, 1, &n, out3);
    int ok = tg_fn_call(fn, &in, &out, &err) == 0;
    tg_fn_free(fn);
    return ok;
}

static int all_close(const double *v, double (*f)(double))
{
    double xv[3] = {0.5, 1, 2};
    for (int i = 0; i < 3; i++)
        if (fabs(v[i] - f(xv[i])) > 1e-12)
            return 0;
    return 1;
}

int main(void)
{
    tg_error err;
    tg_error_clear(&err);
    if (!mkdtemp(dir))
        return TAP_CHECK(0, "temporary directory"), TAP_DONE();
    char cache[600];
    snprintf(cache, sizeof cache, "%s/cache", dir);
    setenv("TGREL_CACHE_DIR", cache, 1);
    ctx = tg_ctx_new(&err);
    rs = tg_rules_new(ctx, &err);

    /* ---- a reload replaces a file's definitions ---- */
    put("inc.rules", "(op h (arity 1))\n(rule h-a (h a) => a)\n");
    put("base.rules", "(include \"inc.rules\")\n(op f (arity 1))\n(op g (arity 1))\n"
                      "(rule f-a (f a) => one)\n(rule g-a (g a) => one)\n(rule old-only (g b) => two)\n"
                      "(equilibrium simp f-a g-a)\n(defrel (colour x) (== x 'red))\n");
    put("user.rules", "(include \"inc.rules\")\n(rule f-any (f ?x) => user)\n(rule g-c (g c) => three)\n"
                      "(register simp g-c)\n(sequence main (0 simp))\n");
    TAP_EQ_INT(tg_rules_load_file(rs, at("base.rules"), &err), 0, "base.rules loads");
    TAP_EQ_INT(tg_rules_load_file(rs, at("user.rules"), &err), 0,
               "user.rules, which includes inc.rules too, loads: an include is read once per rule set");
    if (err.message[0])
        tap_diag("%s", err.message);
    TAP_CHECK(norm("(f a)") == rd("one"), "(f a): base's rule comes first");
    TAP_CHECK(rw("main", "(g c)") == rd("three"), "user's registered rule is in simp");
    TAP_EQ_INT(tg_rules_load_file(rs, at("base.rules"), &err), -1, "loading base.rules again is an error");
    TAP_CHECK(strstr(err.message, "loaded already") != NULL, "... that says it is loaded already (%s)", err.message);

    put("base.rules", "(include \"inc.rules\")\n(op f (arity 1))\n(op g (arity 1))\n"
                      "(rule f-a (f a) => uno)\n(rule g-a (g a) => uno)\n(rule new-only (g d) => four)\n"
                      "(equilibrium simp f-a g-a)\n(defrel (colour x) (== x 'blue))\n");
    TAP_EQ_INT(reload(at("base.rules"), NULL), 0, "base.rules reloads");
    TAP_CHECK(norm("(f a)") == rd("uno"), "its new rule is in, still before user's rule on the same op");
    TAP_CHECK(norm("(g b)") == rd("(g b)"), "a rule the new version no longer has is gone");
    TAP_CHECK(norm("(g d)") == rd("four"), "a rule the new version adds is in");
    TAP_CHECK(rw("main", "(g c)") == rd("three"), "user's registration into simp is kept");
    TAP_CHECK(rw("main", "(g a)") == rd("uno"), "and main uses the new simp");
    tg_term *v = NULL;
    tg_error_clear(&err);
    TAP_EQ_INT(tg_rules_eval(rs, rd("(run* (q) (colour q))"), NULL, NULL, &v, &err), TG_EVAL_RUN,
               "the relation can be run");
    TAP_CHECK(norm("(h a)") == rd("a"), "inc.rules stays loaded");

    /* ---- a reload that would break what stays changes nothing ---- */
    tg_term *before = state();
    put("base.rules", "(include \"inc.rules\")\n(op f (arity 1))\n(rule f-a (f a) => uno)\n"
                      "(equilibrium simp f-a)\n");
    tg_error e;
    TAP_EQ_INT(reload(at("base.rules"), &e), 1, "a version without op g fails (user's rule g-c uses it)");
    TAP_CHECK(strstr(e.message, "g-c") && strstr(e.message, "user.rules"),
              "the error names the rule that uses it and its file: %s", e.message);
    TAP_CHECK(state() == before, "every op, rule, rewriter and relation is as it was");
    TAP_CHECK(norm("(g d)") == rd("four") && rw("main", "(g c)") == rd("three"), "and rewrites as before");
    put("base.rules", "(op f (arity 1))\n(op g (arity 1))\n(rule f-a (f a) => uno)\n(rule broken (f ?x) =>)\n");
    TAP_EQ_INT(reload(at("base.rules"), &e), 1, "a version with a malformed rule fails");
    TAP_EQ_INT(e.line, 4, "... at its line");
    TAP_CHECK(state() == before, "and changes nothing");
    put("base.rules", "(include \"inc.rules\")\n(op f (arity 2))\n(op g (arity 1))\n(rule f-a (f a b) => uno)\n"
                      "(rule g-a (g a) => uno)\n(equilibrium simp f-a g-a)\n");
    TAP_EQ_INT(reload(at("base.rules"), &e), 1, "a version declaring f otherwise fails (user's f-any was compiled with it)");
    TAP_CHECK(strstr(e.message, "f-any") != NULL, "... naming f-any: %s", e.message);
    TAP_CHECK(state() == before, "and changes nothing");

    /* ---- includes: not read again by the includer's reload ---- */
    put("inc.rules", "(op h (arity 1))\n(rule h-a (h a) => b)\n");
    put("base.rules", "(include \"inc.rules\")\n(op f (arity 1))\n(op g (arity 1))\n"
                      "(rule f-a (f a) => uno)\n(rule g-a (g a) => uno)\n(equilibrium simp f-a g-a)\n");
    TAP_EQ_INT(reload(at("base.rules"), NULL), 0, "base.rules reloads again");
    TAP_CHECK(norm("(h a)") == rd("a"), "the file it includes is not read again");
    TAP_EQ_INT(reload(at("inc.rules"), NULL), 0, "inc.rules reloads by its own name");
    TAP_CHECK(norm("(h a)") == rd("b"), "and then its new rule is in");
    tg_error_clear(&err);
    TAP_EQ_INT(tg_rules_eval(rs, rd("(run* (q) (colour q))"), NULL, NULL, &v, &err), -1,
               "the relation the last version dropped is gone");

    /* ---- undef ---- */
    before = state();
    TAP_EQ_INT(tg_rules_undef(rs, rd("g-a"), &e), -1, "undef of a rule a rewriter names is refused");
    TAP_CHECK(strstr(e.message, "simp") != NULL, "... naming the rewriter: %s", e.message);
    TAP_CHECK(state() == before, "and changes nothing");
    TAP_EQ_INT(tg_rules_undef(rs, rd("g"), &e), -1, "undef of an op rules use is refused");
    TAP_CHECK(strstr(e.message, "g-a") && strstr(e.message, "g-c"), "... naming them: %s", e.message);
    TAP_CHECK(state() == before, "and changes nothing");
    TAP_EQ_INT(tg_rules_undef(rs, rd("no-such-name"), &e), -1, "undef of an unknown name is an error");
    TAP_EQ_INT(tg_rules_undef(rs, rd("f-any"), &e), TG_UNDEF_RULE, "undef of a rule nothing names removes it");
    TAP_CHECK(norm("(f z)") == rd("(f z)"), "it no longer fires");
    TAP_EQ_INT(tg_rules_undef(rs, rd("main"), &e), TG_UNDEF_REWRITER, "undef of a rewriter");
    TAP_EQ_INT(tg_rules_undef(rs, rd("simp"), &e), TG_UNDEF_REWRITER,
               "undef of a rewriter with a registration into it (which goes with it)");
    TAP_EQ_INT(tg_rules_undef(rs, rd("g-c"), &e), TG_UNDEF_RULE, "the registered rule then goes freely");
    tg_error_clear(&err);
    TAP_EQ_INT(tg_rules_eval(rs, rd("(rule g-c (g c) => again)"), NULL, NULL, NULL, &err), TG_EVAL_DEFINE,
               "its name can be defined again");
    TAP_CHECK(norm("(g c)") == rd("again"), "and the new rule fires");
    TAP_EQ_INT(tg_rules_eval(rs, rd("(defop (sq ?x) (g ?x))"), NULL, NULL, NULL, &err), TG_EVAL_DEFINE, "a defop");
    TAP_EQ_INT(tg_rules_undef(rs, rd("sq"), &e), TG_UNDEF_OP | TG_UNDEF_RULE, "undef of a defop'd op removes its definition too");
    TAP_EQ_INT(tg_rules_eval(rs, rd("(defrel (pal x) (== x 1))"), NULL, NULL, NULL, &err), TG_EVAL_DEFINE, "a relation");
    TAP_EQ_INT(tg_rules_eval(rs, rd("(rule by-pal (h ?x) => yes (when (pal ?x)))"), NULL, NULL, NULL, &err),
               TG_EVAL_DEFINE, "a rule whose condition calls it");
    TAP_EQ_INT(tg_rules_undef(rs, rd("pal"), &e), -1, "undef of the relation is refused");
    TAP_CHECK(strstr(e.message, "by-pal") != NULL, "... naming the rule: %s", e.message);
    TAP_EQ_INT(tg_rules_undef(rs, rd("by-pal"), &e), TG_UNDEF_RULE, "the rule goes");
    TAP_EQ_INT(tg_rules_undef(rs, rd("pal"), &e), TG_UNDEF_RELATION, "then the relation");
    TAP_EQ_INT(tg_rules_eval(rs, rd("(run* (q) (pal q))"), NULL, NULL, &v, &err), -1, "which is no longer defined");
    /* an op that only a when condition calls: refused as a use */
    put("cond.rules", "(op chk (arity 1))\n(op chk2 (arity 1))\n");
    put("guard.rules", "(op k (arity 1))\n"
                       "(rule k-guard (k ?x) => yes (when (== (chk ?x) true) (!= (chk2 ?x) (chk2 b))))\n");
    TAP_EQ_INT(tg_rules_load_file(rs, at("cond.rules"), &err), 0, "a file declaring ops chk and chk2 loads");
    TAP_EQ_INT(tg_rules_load_file(rs, at("guard.rules"), &err), 0, "a file whose rule's conditions call them loads");
    TAP_EQ_INT(tg_rules_eval(rs, rd("(rule chk-a (chk a) => true)"), NULL, NULL, NULL, &err), TG_EVAL_DEFINE,
               "a rule for chk");
    TAP_CHECK(norm("(k a)") == rd("yes") && norm("(k b)") == rd("(k b)"), "the conditions decide");
    before = state();
    TAP_EQ_INT(tg_rules_undef(rs, rd("chk2"), &e), -1, "undef of an op a condition calls (chk2: nothing else uses it)");
    TAP_CHECK(strstr(e.message, "k-guard") && strstr(e.message, "chk2"), "... naming the rule: %s", e.message);
    TAP_CHECK(state() == before, "and changes nothing");
    put("cond.rules", "(op chk (arity 1))\n");
    TAP_EQ_INT(reload(at("cond.rules"), &e), 1, "a reload that drops an op a condition calls is refused");
    TAP_CHECK(strstr(e.message, "k-guard") && strstr(e.message, "no longer declared"), "... naming the rule: %s",
              e.message);
    TAP_CHECK(state() == before, "and changes nothing");
    put("cond.rules", "(op chk (arity 2))\n(op chk2 (arity 1))\n");
    TAP_EQ_INT(reload(at("cond.rules"), &e), 1, "so is one that declares it otherwise");
    TAP_CHECK(strstr(e.message, "k-guard") && strstr(e.message, "declared otherwise"), "... naming the rule: %s",
              e.message);
    TAP_CHECK(state() == before && norm("(k a)") == rd("yes"), "and changes nothing");
    TAP_EQ_INT(tg_rules_undef(rs, rd("k-guard"), &e), TG_UNDEF_RULE, "the rule goes");
    TAP_EQ_INT(tg_rules_undef(rs, rd("chk2"), &e), TG_UNDEF_OP, "then the op");

    /* ---- files a string or an entry includes ---- */
    char incl[700];
    put("strinc.rules", "(op m (arity 1))\n(rule m-a (m a) => one)\n");
    snprintf(incl, sizeof incl, "(include \"%s\")\n(rule m-b (m b) => (m a))\n", at("strinc.rules"));
    TAP_EQ_INT(tg_rules_load_string(rs, incl, strlen(incl), "<string>", &err), 0, "a string that includes a file loads");
    TAP_CHECK(norm("(m b)") == rd("one"), "its rule and the file's rewrite");
    put("strinc.rules", "(op m (arity 1))\n(rule m-a (m a) => two)\n");
    TAP_EQ_INT(reload(at("strinc.rules"), NULL), 0, "the included file reloads by its own name");
    TAP_CHECK(norm("(m b)") == rd("two"), "its new version is read; the string's rule stays and uses it");
    put("strinc.rules", "(op m (arity 2))\n");
    TAP_EQ_INT(reload(at("strinc.rules"), &e), 1, "a version that would break the string's rule is refused");
    TAP_CHECK(strstr(e.message, "m-b") && strstr(e.message, "<string>"), "... naming it where it was read: %s",
              e.message);
    TAP_CHECK(norm("(m b)") == rd("two"), "and changes nothing");
    put("badinc.rules", "(op n (arity 1))\n(rule n-a (n a) =>)\n");
    snprintf(incl, sizeof incl, "(include \"%s\")", at("badinc.rules"));
    TAP_EQ_INT(tg_rules_eval(rs, rd(incl), NULL, NULL, NULL, &err), -1, "an entry including a bad file fails");
    put("badinc.rules", "(op n (arity 1))\n(rule n-a (n a) => fixed)\n");
    TAP_EQ_INT(tg_rules_eval(rs, rd(incl), NULL, NULL, NULL, &err), TG_EVAL_DEFINE,
               "the same include, the file fixed, succeeds");
    TAP_CHECK(norm("(n a)") == rd("fixed"), "and reads the file (a failed include leaves it unread)");
    TAP_EQ_INT(tg_rules_eval(rs, rd(incl), NULL, NULL, NULL, &err), TG_EVAL_DEFINE, "a third include is nothing");
    put("badinc.rules", "(op n (arity 1))\n(rule n-a (n a) => again)\n");
    TAP_EQ_INT(reload(at("badinc.rules"), NULL), 0, "the file an entry included reloads");
    TAP_CHECK(norm("(n a)") == rd("again"), "its new version is read");
    tg_rules_free(rs);

    tg_error one;
    TAP_EQ_INT(tg_rules_reload_file(NULL, "x.rules", &one, 1), 1, "reload with a NULL rule set: one error");
    TAP_EQ_INT(tg_rules_reload_file(rs, "x.rules", NULL, 0), -1, "reload without room for errors: -1");
    TAP_EQ_INT(tg_rules_reload_file(rs, at("no-such.rules"), &one, 1), 1, "reload of a missing file: one error");
    TAP_EQ_INT(tg_rules_undef(NULL, rd("x"), &e), -1, "undef with a NULL rule set");
    TAP_EQ_INT(tg_rules_undef(rs, rd("(x)"), &e), -1, "undef of a name that is not a symbol");
    /* ---- the rewrite cache: a reload is another key ---- */
    rs = tg_rules_new(ctx, &err);
    TAP_EQ_INT(tg_rules_load_file(rs, tap_path("patterns/lib/all.rules"), &err), 0, "the library loads");
    put("mine.rules", "(rule swap (sin ?x) => (cos ?x))\n(equilibrium mine swap)\n");
    TAP_EQ_INT(tg_rules_load_file(rs, at("mine.rules"), &err), 0, "a file rewriting sin to cos loads");
    double o[3];
    TAP_CHECK(compile_sin(o) && all_close(o, cos), "compiled: cos (%g %g %g)", o[0], o[1], o[2]);
    put("mine.rules", "(rule swap (sin ?x) => (tanh ?x))\n(equilibrium mine swap)\n");
    TAP_EQ_INT(reload(at("mine.rules"), NULL), 0, "it reloads rewriting sin to tanh");
    TAP_CHECK(compile_sin(o) && all_close(o, tanh), "compiled again: tanh, not the cached cos (%g %g %g)", o[0], o[1],
              o[2]);
    put("mine.rules", "(rule swap (sin ?x) => (cos ?x))\n(equilibrium mine swap)\n");
    TAP_EQ_INT(reload(at("mine.rules"), NULL), 0, "the first version again");
    TAP_CHECK(compile_sin(o) && all_close(o, cos), "cos again (%g %g %g)", o[0], o[1], o[2]);
    tg_rules_free(rs);
    tg_ctx_free(ctx);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        tap_diag("could not remove %s", dir);
    return TAP_DONE();
}
