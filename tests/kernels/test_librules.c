/* test_librules.c - every rule of the shipped library (patterns/lib,
 * all.rules) checked against itself on random instances.  A rule's left
 * side is instantiated at random: a variable standing for an operand
 * becomes an input of a random shape (float64 or int64), a number or a
 * small expression over them; one standing for an axis, a dtype, a slice
 * bound, a reshape's shape or a segment of arguments becomes one of
 * those, by the op it is an argument of.  The instance is rewritten by
 * that rule alone (with the guards its conditions ask for); when
 * the rule fired, the instance and its rewrite are compiled natively and
 * run on random inputs: the same type, and the same values within a
 * tolerance, or the rule is wrong.  A guard rule (known_pos,
 * known_nonneg) is checked by the sign of what it calls positive or
 * non-negative.  Inputs are finite, as the fast_math rules assume
 * (tests/kernels/test_check.c shows mul-zero on an infinite input).  A
 * rule that no random instance fires fails too: every rule is run. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <gc/gc.h>

#include "kt.h"

static tg_ctx *ctx;
static tg_rules *rs;
static char dir[] = "/tmp/tgrel-librules-test-XXXXXX";

#define TRIALS 400      /* random instances tried per rule, at most */
#define WANT 12         /* instances that fire checked per rule */
#define DRAWS 3         /* random input sets per instance */

/* ---- instances ---------------------------------------------------------- */

typedef struct inst {
    int kind;                   /* which shape */
    int ndim;
    int64_t shape[2];
    tg_term *in[3];             /* x, y float64; i int64 */
    tg_term *vars[32], *vals[32];
    int nvars;
} inst;

static tg_term *sym(const char *s) { return tg_symbol_cstr(ctx, s); }
static tg_term *rd(const char *s)
{
    tg_error err;
    return tg_read_cstr(ctx, s, &err);
}
static int pick(int n) { return (int)(kt_rand() % (uint64_t)n); }

static tg_term *app(const char *op, int n, tg_term *const *a) { return tg_app(ctx, sym(op), (size_t)n, a); }

static tg_term *number(void)
{
    static const char *const pool[] = {"0", "1", "2", "-1", "3", "0.5", "-2.5", "1/2", "4"};
    return rd(pool[pick(sizeof pool / sizeof *pool)]);
}

/* An operand: an input, a number, or a small expression over them. */
static tg_term *operand(inst *I, int depth)
{
    int r = pick(10);
    if (r < 4)
        return I->in[pick(10) < 8 ? pick(2) : 2];
    if (r < 6 || depth >= 2)
        return number();
    /* finite on finite inputs: the fast_math rules hold there only */
    static const char *const un[] = {"exp", "neg", "sqr", "abs", "sigmoid", "tanh", "sin", "expm1"};
    static const char *const bin[] = {"add", "mul", "sub", "maximum"};
    if (r < 8) {
        tg_term *a = operand(I, depth + 1);
        return app(un[pick(sizeof un / sizeof *un)], 1, &a);
    }
    tg_term *a[2] = {operand(I, depth + 1), operand(I, depth + 1)};
    return app(bin[pick(sizeof bin / sizeof *bin)], 2, a);
}

static int64_t count(const inst *I)
{
    int64_t n = 1;
    for (int d = 0; d < I->ndim; d++)
        n *= I->shape[d];
    return n;
}

/* What a variable at argument k (1-based) of an application of head
 * stands for, made at random. */
static tg_term *value_for(inst *I, const char *head, size_t k)
{
    char buf[80];
    if (!strcmp(head, "axes"))
        return tg_int(ctx, pick(3) - (pick(4) == 0));
    if (!strcmp(head, "cast") && k == 2) {
        static const char *const dt[] = {"float64", "float32", "int64"};
        return sym(dt[pick(3)]);
    }
    if (k == 2 && (!strcmp(head, "sum") || !strcmp(head, "prod") || !strcmp(head, "max") ||
                   !strcmp(head, "min") || !strcmp(head, "mean"))) {
        static const char *const ax[] = {"all", "(axes 0)", "(axes 1)", "(axes 0 1)", "(axes -1)"};
        return rd(ax[pick(5)]);
    }
    if (!strcmp(head, "reshape") && k == 2) {
        int64_t n = count(I), a = pick(2) && n % 2 == 0 ? 2 : 1;
        snprintf(buf, sizeof buf, a == 1 ? "(shape-of %lld)" : "(shape-of %lld %lld)", (long long)(n / a),
                 (long long)a);
        return rd(buf);
    }
    if (!strcmp(head, "slice")) {
        static const char *const bound[] = {"none", "0", "1", "-1", "2", "none"};
        static const char *const step[] = {"none", "1", "2", "-1"};
        return rd(k == 3 ? step[pick(4)] : bound[pick(6)]);
    }
    if (!strcmp(head, "subtensor") && k >= 2) {
        static const char *const idx[] = {"0", "1", "-1", "(slice 1 none none)", "(slice none none -1)"};
        return rd(idx[pick(5)]);
    }
    if (!strcmp(head, "alloc") && k >= 2)
        return tg_int(ctx, 1 + pick(3));
    if (!strcmp(head, "dimshuffle") && k == 2)
        return rd(pick(2) ? "(perm 1 0)" : "(perm 0 1)");
    return operand(I, 0);
}

static tg_term *var_value(inst *I, tg_term *v, const char *head, size_t k)
{
    for (int i = 0; i < I->nvars; i++)
        if (I->vars[i] == v)
            return I->vals[i];
    tg_term *x = value_for(I, head, k);
    if (I->nvars < 32)
        I->vars[I->nvars] = v, I->vals[I->nvars++] = x;
    return x;
}

/* Pattern p with its variables instantiated (a variable tail: a segment
 * of 0 to 2 operands).  Patterns are a few levels deep: recursion is
 * fine here. */
static tg_term *instantiate(inst *I, tg_term *p, const char *head, size_t k)
{
    if (tg_kind_of(p) == TG_VAR)
        return var_value(I, p, head, k);
    if (tg_kind_of(p) != TG_PAIR)
        return p;
    tg_term *e[16];
    size_t n = tg_elements(p, e, 16);
    size_t hl = 0;
    const char *h = tg_kind_of(e[0]) == TG_SYMBOL ? tg_symbol_name(e[0], &hl) : "";
    char hn[40];
    snprintf(hn, sizeof hn, "%.*s", (int)(hl < 39 ? hl : 39), h);
    for (size_t i = 0; i < n; i++)
        e[i] = instantiate(I, e[i], hn, i);
    tg_term *tail = tg_tail(p);
    if (tg_kind_of(tail) == TG_VAR) {
        tg_term *seg[2];
        int ns = pick(3);
        for (int i = 0; i < ns; i++)
            seg[i] = operand(I, 1);
        tail = tg_list(ctx, (size_t)ns, seg, NULL);
    }
    return tg_list(ctx, n, e, tail);
}

#define NSHAPES 5
static const int64_t shapes[NSHAPES][3] = {{1, 4, 0}, {2, 3, 3}, {2, 2, 3}, {0, 0, 0}, {2, 1, 3}};

static void new_inst(inst *I)
{
    const int64_t *s = shapes[pick(NSHAPES)];
    memset(I, 0, sizeof *I);
    I->ndim = (int)s[0];
    char sh[40] = "";
    for (int d = 0; d < I->ndim; d++) {
        I->shape[d] = s[1 + d];
        snprintf(sh + strlen(sh), sizeof sh - strlen(sh), "%s%lld", d ? " " : "", (long long)s[1 + d]);
    }
    /* inputs named by their shape, so that instances of every shape are
     * outputs of one function */
    static const char *const nm[] = {"x%d float64", "y%d float64", "i%d int64"};
    I->kind = (int)(s - shapes[0]) / 3;
    for (int k = 0; k < 3; k++) {
        char b[80], n[20];
        snprintf(n, sizeof n, nm[k], I->kind);
        snprintf(b, sizeof b, "(input %s (%s))", n, sh);
        I->in[k] = rd(b);
    }
}

/* ---- running ------------------------------------------------------------ */

/* The times rule name fired in rs's last rewrite. */
static long fired(tg_term *name)
{
    tg_term *p = tg_rules_profile(rs);
    for (tg_term *l = p; l && tg_kind_of(l) == TG_PAIR; l = tg_cdr(ctx, l)) {
        tg_term *c = tg_car(l);
        if (tg_kind_of(c) != TG_PAIR || tg_car(c) != sym("rules"))
            continue;
        for (tg_term *r = tg_cdr(ctx, c); tg_kind_of(r) == TG_PAIR; r = tg_cdr(ctx, r)) {
            int64_t f;
            if (tg_car(tg_car(r)) == name && tg_int_get(tg_nth(tg_car(r), 1), &f) == 0)
                return (long)f;
        }
    }
    return 0;
}

/* Random inputs for I: floats in [-2, 2], integers in [-4, 4]. */
typedef struct draws {
    kt_arr a[3];
} draws;

static void make_inputs(const inst *I, draws *D)
{
    for (int k = 0; k < 3; k++) {
        kt_make(&D->a[k], k < 2 ? TG_FLOAT64 : TG_INT64, I->ndim, I->shape, 0);
        int64_t n = kt_count(&D->a[k].a);
        for (int64_t j = 0; j < n; j++) {
            if (k < 2)
                ((double *)D->a[k].a.data)[j] = kt_unif(-2, 2);
            else
                ((int64_t *)D->a[k].a.data)[j] = (int64_t)pick(9) - 4;
        }
    }
}

static void free_inputs(draws *D)
{
    for (int k = 0; k < 3; k++)
        free(D->a[k].block);
}

/* t over I's inputs, in the interpreter (no C compiler per instance:
 * the pairs that pass are compiled together at the end). */
static tg_fn *compile1(const inst *I, tg_term *t, tg_error *err)
{
    tg_fn_options o = {.interpret = 1};
    return tg_fn_compile(ctx, 3, I->in, 1, &t, &o, err);
}

/* The instances that passed, with their rewrites, for the compiled path. */
#define MAXPAIRS 2048
static tg_term *pair_lhs[MAXPAIRS], *pair_rhs[MAXPAIRS];
static char pair_rule[MAXPAIRS][64];
static int npairs;

static void keep_pair(const char *rule, tg_term *t, tg_term *r)
{
    if (npairs == MAXPAIRS)
        return;
    pair_lhs[npairs] = t, pair_rhs[npairs] = r;
    snprintf(pair_rule[npairs++], sizeof pair_rule[0], "%.63s", rule);
}

static const char *dtype_name(tg_dtype d)
{
    static const char *const n[] = {"bool", "int32", "int64", "float32", "float64"};
    return (unsigned)d < 5 ? n[d] : "?";
}

static int same_shape(const tg_array *a, const tg_array *b)
{
    if (a->dtype != b->dtype || a->ndim != b->ndim)
        return 0;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d])
            return 0;
    return 1;
}

static int values_close(const tg_array *got, const tg_array *want)
{
    int64_t n = kt_count(want), idx[TG_MAXDIM] = {0};
    for (int64_t j = 0; j < n; j++, kt_next(want->ndim, want->shape, idx)) {
        long double g = kt_get(got, idx), w = kt_get(want, idx);
        if (isnan((double)w) && isnan((double)g))
            continue;
        if (fabsl(g - w) > 1e-6L * (1 + fabsl(w)))
            return 0;
    }
    return 1;
}

/* Check instance t of a rule and its rewrite r: 1 right, 0 skipped (t
 * does not type), -1 wrong (why in msg). */
static int check_pair(const inst *I, tg_term *t, tg_term *r, char *msg, size_t size)
{
    tg_error err;
    tg_fn *ft = compile1(I, t, &err);
    if (!ft)
        return 0;
    tg_fn *fr = compile1(I, r, &err);
    if (!fr) {
        snprintf(msg, size, "its rewrite does not compile: %s", err.message);
        tg_fn_free(ft);
        return -1;
    }
    int rc = 1;
    for (int k = 0; k < DRAWS && rc == 1; k++) {
        draws D;
        make_inputs(I, &D);
        tg_array in[3] = {D.a[0].a, D.a[1].a, D.a[2].a}, ot, orr;
        memset(&ot, 0, sizeof ot);
        memset(&orr, 0, sizeof orr);
        int a = tg_fn_call(ft, in, &ot, &err), b = a == 0 ? tg_fn_call(fr, in, &orr, &err) : -1;
        if (a != 0)
            rc = 0;     /* the instance fails on these inputs (a call-time size): not a case */
        else if (b != 0)
            snprintf(msg, size, "its rewrite fails where the instance runs: %s", err.message), rc = -1;
        else if (!same_shape(&ot, &orr))
            snprintf(msg, size, "the rewrite changes the type: %s %s became %s %s", dtype_name(ot.dtype),
                     kt_shape(ot.ndim, ot.shape), dtype_name(orr.dtype), kt_shape(orr.ndim, orr.shape)),
                rc = -1;
        else if (!values_close(&orr, &ot))
            snprintf(msg, size, "the rewrite changes the values"), rc = -1;
        free(ot.data);
        free(orr.data);
        free_inputs(&D);
    }
    tg_fn_free(ft);
    tg_fn_free(fr);
    return rc;
}

/* A guard's instance fired: what it calls positive (non-negative) is so
 * on random inputs.  1 right, 0 skipped, -1 wrong. */
static int check_guard(const inst *I, tg_term *e, int strict, char *msg, size_t size)
{
    tg_error err;
    tg_fn *f = compile1(I, e, &err);
    if (!f)
        return 0;
    int rc = 1;
    for (int k = 0; k < DRAWS && rc == 1; k++) {
        draws D;
        make_inputs(I, &D);
        tg_array in[3] = {D.a[0].a, D.a[1].a, D.a[2].a}, o;
        memset(&o, 0, sizeof o);
        if (tg_fn_call(f, in, &o, &err) != 0) {
            rc = 0;
        } else {
            int64_t n = kt_count(&o), idx[TG_MAXDIM] = {0};
            for (int64_t j = 0; j < n && rc == 1; j++, kt_next(o.ndim, o.shape, idx)) {
                long double v = kt_get(&o, idx);
                /* NaN passes: what the guards allow (|x| -> x, sqrt(x)^2 -> x,
                 * exp(log x) -> x) keeps a NaN a NaN */
                if (!isnan((double)v) && (strict ? !(v > 0) : !(v >= 0)))
                    snprintf(msg, size, "it calls a term %s that is %Lg", strict ? "positive" : "non-negative", v),
                        rc = -1;
            }
        }
        free(o.data);
        free_inputs(&D);
    }
    tg_fn_free(f);
    return rc;
}

/* Rules of the library this test finds wrong, not fixed yet: each must
 * still be found wrong (so that the list stays true), every other one
 * right; doc/rules.md would list them.  None today: the last ones
 * (fold-switch, fold-switch-else, pow-minus-one, pow-minus-two) now ask
 * the types of their operands with typed guards, and dot-zero and
 * dot-zero-right, which applied only to (dot 0 x), a term that does not
 * type, are gone.  A rule added here is {"name", "why"}, before the end. */
static const struct known { const char *rule, *why; } known_wrong[] = {
    {NULL, NULL},
};

static const char *known_wrong_why(const char *rule)
{
    for (size_t i = 0; known_wrong[i].rule; i++)
        if (!strcmp(known_wrong[i].rule, rule))
            return known_wrong[i].why;
    return NULL;
}

/* What the instances of one rule came to (over all its left sides). */
typedef struct outcome {
    int ok, tried, good, bad;
} outcome;

/* One left side lhs of rule name, tried on random instances. */
static void check_lhs(tg_term *name, tg_term *lhs, outcome *res)
{
    char nm[100], spec[300], msg[600] = "";
    size_t nl;
    const char *s = tg_symbol_name(name, &nl);
    snprintf(nm, sizeof nm, "%.*s", (int)(nl < 90 ? nl : 90), s);
    /* with the guards the rule's conditions ask, not with fold: a fold
     * rule's own fault must not be laid on the rule it ran beside */
    snprintf(spec, sizeof spec, "(equilibrium t-%s guards %s)", nm, nm);
    tg_error err;
    char rw[120];
    snprintf(rw, sizeof rw, "t-%s", nm);
    tg_term *rwname = sym(rw), *head = tg_car(lhs);
    /* a rule of several left sides comes once for each: one rewriter */
    tg_term *listed = tg_rules_list(rs, TG_LIST_REWRITERS, &err);
    int have = 0;
    for (tg_term *l = listed; l && tg_kind_of(l) == TG_PAIR && !have; l = tg_cdr(ctx, l))
        have = tg_nth(tg_car(l), 1) == rwname;
    int ok = have || tg_rules_load_string(rs, spec, strlen(spec), NULL, &err) == 0;
    /* a slice is no tensor: its instances are slices of one */
    if (head == sym("slice")) {
        tg_term *w[3] = {sym("subtensor"), rd("?slice-of"), lhs};
        lhs = tg_list(ctx, 3, w, NULL);
    }
    int guard = head == sym("known_pos") || head == sym("known_nonneg"), strict = head == sym("known_pos");
    int good = 0, tried = 0, bad = 0;
    for (int t = 0; ok && t < TRIALS && good < WANT && !bad; t++) {
        inst I;
        new_inst(&I);
        tg_term *inst_t = instantiate(&I, lhs, "", 0);
        tg_term *g = app("graph", 1, &inst_t);
        tg_term *r = g ? tg_rewrite(rs, rwname, g, &err) : NULL;
        if (!r || fired(name) == 0)
            continue;
        tried++;
        tg_term *out = tg_nth(r, 1);
        int rc = guard ? (out == sym("true") ? check_guard(&I, tg_nth(inst_t, 1), strict, msg, sizeof msg) : 0)
                       : check_pair(&I, inst_t, out, msg, sizeof msg);
        if (rc > 0 && !guard)
            keep_pair(nm, inst_t, out);
        if (rc > 0)
            good++;
        if (rc < 0) {
            char *a = tg_print(inst_t, NULL), *b = tg_print(out, NULL);
            tap_diag("rule %s: %s -> %s: %s", nm, a ? a : "?", b ? b : "?", msg);
            free(a);
            free(b);
            bad = 1;
        }
    }
    res->ok &= ok, res->tried += tried, res->good += good, res->bad |= bad;
}

/* The outcome of rule name (its left sides tried). */
/* The random stream restarts for each rule from its name, so that what
 * one rule's instances are does not hang on the rules before it. */
static void seed_for(tg_term *name)
{
    size_t n;
    const char *s = tg_symbol_name(name, &n);
    unsigned long long h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    kt_seed = h | 1;
}

static void report(tg_term *name, const outcome *r)
{
    char nm[100];
    size_t nl;
    const char *s = tg_symbol_name(name, &nl);
    snprintf(nm, sizeof nm, "%.*s", (int)(nl < 90 ? nl : 90), s);
    const char *known = known_wrong_why(nm);
    if (known)
        TAP_CHECK(r->ok && (r->bad || !r->good), "rule %s: known wrong (%s), and found so", nm, known);
    else
        TAP_CHECK(r->ok && !r->bad && r->good > 0, "rule %s: %d random instances fired it (%d checked), %s", nm,
                  r->tried, r->good, r->bad ? "WRONG" : r->good ? "values and types kept" : "never exercised");
}

/* The pairs kept, compiled together into one native function over the
 * inputs of every shape, run on random inputs: each instance and its
 * rewrite agree there too. */
static void check_compiled(void)
{
    tg_term *in[3 * NSHAPES];
    inst I;
    for (int k = 0; k < NSHAPES; k++) {
        do
            new_inst(&I);
        while (I.kind != k);
        for (int j = 0; j < 3; j++)
            in[3 * k + j] = I.in[j];
    }
    tg_term **outs = GC_MALLOC(2 * (size_t)npairs * sizeof *outs);
    for (int p = 0; outs && p < npairs; p++)
        outs[2 * p] = pair_lhs[p], outs[2 * p + 1] = pair_rhs[p];
    tg_error err;
    tg_fn *fn = outs ? tg_fn_compile(ctx, 3 * NSHAPES, in, 2 * (size_t)npairs, outs, NULL, &err) : NULL;
    TAP_CHECK(fn && tg_fn_native(fn), "the %d instances and their rewrites compile natively together (%s)", npairs,
              fn ? "" : err.message);
    int wrong = 0;
    for (int k = 0; fn && k < DRAWS; k++) {
        draws D[NSHAPES];
        tg_array args[3 * NSHAPES];
        for (int j = 0; j < NSHAPES; j++) {
            do
                new_inst(&I);
            while (I.kind != j);
            make_inputs(&I, &D[j]);
            for (int q = 0; q < 3; q++)
                args[3 * j + q] = D[j].a[q].a;
        }
        tg_array *o = calloc(2 * (size_t)npairs, sizeof *o);
        if (o && tg_fn_call(fn, args, o, &err) == 0) {
            for (int p = 0; p < npairs; p++)
                if (!same_shape(&o[2 * p], &o[2 * p + 1]) || !values_close(&o[2 * p + 1], &o[2 * p])) {
                    char *a = tg_print(pair_lhs[p], NULL);
                    if (wrong++ < 5)
                        tap_diag("compiled: rule %s: %s: the rewrite computes other values", pair_rule[p], a ? a : "?");
                    free(a);
                }
        } else {
            tap_diag("the call failed: %s", err.message);
            wrong++;
        }
        for (int p = 0; o && p < 2 * npairs; p++)
            free(o[p].data);
        free(o);
        for (int j = 0; j < NSHAPES; j++)
            free_inputs(&D[j]);
    }
    TAP_CHECK(fn && !wrong, "compiled: every instance and its rewrite agree on %d random inputs", DRAWS);
    tg_fn_free(fn);
}

int main(void)
{
    tg_error err;
    if (!mkdtemp(dir))
        return 1;
    setenv("TGREL_CACHE_DIR", dir, 1);
    ctx = tg_ctx_new(&err);
    rs = tg_rules_new(ctx, &err);
    /* the typed guards see tensor types, as in the compile pipeline */
    int ok = rs && tg_rules_tensor_types(rs, 1, &err) == 0 &&
             tg_rules_load_file(rs, tap_path("patterns/lib/all.rules"), &err) == 0;
    TAP_CHECK(ok, "the library loads");
    tg_term *list = ok ? tg_rules_list(rs, TG_LIST_RULES, &err) : NULL;
    tg_term *scan_head = sym("scan_output"), *steps_head = sym("scan_steps");
    int n = 0;
    tg_term *cur = NULL;
    outcome res = {1, 0, 0, 0};
    for (tg_term *l = list; l && tg_kind_of(l) == TG_PAIR; l = tg_cdr(ctx, l)) {
        tg_term *r = tg_car(l), *lhs = tg_nth(r, 2), *name = tg_nth(r, 1);
        /* the Scan rules' instances are whole scans: test_scanrules.c */
        if (tg_car(lhs) == scan_head || tg_car(lhs) == steps_head)
            continue;
        if (name != cur) {  /* the left sides of one rule are listed together */
            if (cur)
                report(cur, &res);
            cur = name, res = (outcome){1, 0, 0, 0};
            seed_for(name);
            n++;
        }
        check_lhs(name, lhs, &res);
    }
    if (cur)
        report(cur, &res);
    TAP_CHECK(n > 100, "%d rules checked", n);
    check_compiled();
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    TAP_CHECK(system(cmd) == 0, "clean up");
    tg_rules_free(rs);
    tg_ctx_free(ctx);
    return TAP_DONE();
}
