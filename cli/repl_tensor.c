/* repl_tensor.c - the REPL's tensor commands (prefix tgM_): :eval
 * compiles a term and runs it on values given inline or as .npy files,
 * :let names subterms for later entries, :var makes and sets shared
 * variables (from a literal, a file or a term's value), :fn compiles a
 * function with updates that :call and :repeat run (:repeat with a
 * progress bar at a terminal), :save writes a value as .npy. */
#include "config.h"

#include <gc/gc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arrays.h"
#include "repl_int.h"
#include "views.h"

enum { MAX_INPUTS = 32 };

/* Array a for input in from the bindings ((NAME VALUE) ...): a literal
 * value or a .npy file name (a string); 0 or 1 after reporting. */
static int bind_input(repl *R, tg_term *in, tg_term *const *b, int nb, tg_array *a)
{
    tg_term *name = tg_nth(in, 1);
    int dt = tg_length(in) == 4 ? tgM_dtype_of(tg_nth(in, 2)) : -1;
    size_t len;
    const char *s = tg_kind_of(name) == TG_SYMBOL ? tg_symbol_name(name, &len) : NULL;
    char what[160];
    snprintf(what, sizeof what, "%.*s", s ? (int)(len > 100 ? 100 : len) : 1, s ? s : "?");
    if (s && dt < 0 && tg_length(in) == 4 && tg_kind_of(tg_nth(in, 2)) == TG_SYMBOL) {
        char *d = tg_print(tg_nth(in, 2), NULL);
        char msg[500];
        snprintf(msg, sizeof msg, "input %s: unknown dtype %.100s (the dtypes are bool, int32, int64, "
                 "float32 and float64)", what, d ? d : "?");
        free(d);
        R->at = 0;      /* the term, which holds the input */
        tgM_complain(R, "%s", msg);
        return 1;
    }
    if (!s || dt < 0) {
        tgM_complain(R, "malformed input %s: (input NAME DTYPE (SIZE ...))", what);
        return 1;
    }
    for (int i = 0; i < nb; i++) {
        if (tg_kind_of(b[i]) != TG_PAIR || tg_length(b[i]) != 2 || tg_car(b[i]) != name)
            continue;
        tg_term *v = tg_nth(b[i], 1);
        size_t vl;
        const char *vs = tg_kind_of(v) == TG_SYMBOL ? tg_symbol_name(v, &vl) : NULL;
        if (vs && vl > 4 && !memcmp(vs + vl - 4, ".npy", 4)) {
            char msg[400];
            snprintf(msg, sizeof msg, "input %s: %.*s is a symbol: write the file name as a string, "
                     "\"%.*s\"", what, (int)(vl > 150 ? 150 : vl), vs, (int)(vl > 150 ? 150 : vl), vs);
            R->at = i + 1;  /* the binding (the term is the first argument) */
            tgM_complain(R, "%s", msg);
            return 1;
        }
        tg_error err;
        tg_error_clear(&err);
        size_t pl;
        const char *path = tg_kind_of(v) == TG_STRING ? tg_string_bytes(v, &pl) : NULL;
        char *p = path ? strndup(path, pl) : NULL;
        int rc = path ? (p ? tgM_array_read_npy(p, a, &err) : -1)
                      : tgM_array_from_term(v, (tg_dtype)dt, a, &err);
        free(p);
        if (rc < 0) {
            char msg[700];
            snprintf(msg, sizeof msg, "input %s: %s", what, err.message);
            R->at = i + 1;
            tgM_complain(R, "%s", msg);
            return 1;
        }
        return 0;
    }
    tgM_complain(R, "no value for input %s: give (NAME VALUE) after the term", what);
    return 1;
}

/* A term for a message, cut to fit. */
static char *shown_term(const tg_term *t)
{
    char *p = tg_print(t, NULL);
    if (p && strlen(p) > 120)
        strcpy(p + 110, " ...");
    return p;
}

/* The bindings b[0..nb) of :eval are (NAME VALUE), each name given once
 * (and, with unknown, an input of in[0..nin): checked once the term
 * compiled, whose errors say more, e.g. of an input inside a lambda), and
 * no two inputs share a name; 0, or 1 after reporting. */
static int check_bindings(repl *R, tg_term *const *in, int nin, tg_term *const *b, int nb, int unknown)
{
    char msg[600];
    msg[0] = '\0';
    int at = 0;     /* the argument it is about: the term, or a binding */
    for (int i = 0; i < nin && !msg[0]; i++)
        for (int j = i + 1; j < nin && !msg[0]; j++)
            if (tg_length(in[i]) > 1 && tg_length(in[j]) > 1 && tg_nth(in[i], 1) == tg_nth(in[j], 1)) {
                char *x = shown_term(in[i]), *y = shown_term(in[j]);
                snprintf(msg, sizeof msg, "two inputs of one name differ: %s and %s (give each its own name)",
                         x ? x : "?", y ? y : "?");
                free(x), free(y);
            }
    for (int i = 0; i < nb && !msg[0]; i++) {
        tg_term *nm = tg_kind_of(b[i]) == TG_PAIR && tg_length(b[i]) == 2 ? tg_car(b[i]) : NULL;
        if (!nm || tg_kind_of(nm) != TG_SYMBOL) {
            char *x = shown_term(b[i]);
            snprintf(msg, sizeof msg, "expected (NAME VALUE) after the term, found %s", x ? x : "?");
            free(x);
            at = i + 1;
            break;
        }
        int known = 0;
        for (int k = 0; k < nin && !known; k++)
            known = tg_length(in[k]) > 1 && tg_nth(in[k], 1) == nm;
        char *x = shown_term(nm);
        if (!known && unknown)
            snprintf(msg, sizeof msg, "the term has no input %s", x ? x : "?");
        for (int j = 0; j < i && !msg[0]; j++)
            if (tg_car(b[j]) == nm)
                snprintf(msg, sizeof msg, "input %s given twice", x ? x : "?");
        free(x);
        if (msg[0])
            at = i + 1;
    }
    if (!msg[0])
        return 0;
    R->at = at;
    tgM_complain(R, "%s", msg);
    return 1;
}

/* t with the names :let bound replaced by their terms; NULL (reported)
 * when out of memory. */
static tg_term *expand(repl *R, tg_term *t)
{
    size_t n = R->let_names ? tg_length(R->let_names) : 0;
    if (!n)
        return t;
    tg_term **names = GC_MALLOC(2 * n * sizeof *names), *r = NULL;
    if (names) {
        tg_elements(R->let_names, names, n);
        tg_elements(R->let_terms, names + n, n);
        r = tgM_subst(R->ctx, t, names, names + n, (int)n);
    }
    if (!r)
        tgM_complain(R, "%s", "out of memory");
    return r;
}

/* :let NAME TERM: NAME stands for TERM in the terms of later :eval, :fn
 * and :let entries; :let NAME prints it. */
int tgM_cmd_let(repl *R, const char *name, const char *args)
{
    tg_term *t[2];
    int n = tgM_read_args(R, name, args, t, 1, 2, "NAME [TERM]");
    if (n < 0)
        return 1;
    if (tg_kind_of(t[0]) != TG_SYMBOL) {
        tgM_complain(R, "%s", "usage: :let NAME [TERM], NAME a symbol");
        return 1;
    }
    size_t k = R->let_names ? tg_length(R->let_names) : 0, at = k;
    for (size_t i = 0; i < k; i++)
        if (tg_nth(R->let_names, i) == t[0])
            at = i;
    if (n == 1) {
        if (at == k) {
            char *p = tg_print(t[0], NULL);
            tgM_complain(R, "%s is not bound by :let", p ? p : "?");
            free(p);
            return 1;
        }
        tgM_show(R, tg_nth(R->let_terms, at));
        return 0;
    }
    tg_term *v = expand(R, t[1]);
    tg_term **names = v ? GC_MALLOC(2 * (k + 1) * sizeof *names) : NULL;
    if (!names) {
        if (v)
            tgM_complain(R, "%s", "out of memory");
        return 1;
    }
    if (k) {
        tg_elements(R->let_names, names, k);
        tg_elements(R->let_terms, names + k + 1, k);
    }
    names[at] = t[0], names[k + 1 + at] = v;
    size_t nk = at == k ? k + 1 : k;
    tg_term *ln = tg_list(R->ctx, nk, names, NULL), *lt = tg_list(R->ctx, nk, names + k + 1, NULL);
    if (!ln || !lt) {
        tgM_complain(R, "%s", "out of memory");
        return 1;
    }
    R->let_names = ln, R->let_terms = lt;
    return 0;
}

/* :undef's part: the :let binding of name and the shared variable of
 * that name go (functions :fn compiled with the variable keep it).
 * Adds to what (", " separated) what went; whether anything did. */
int tgM_undef_session(repl *R, tg_term *name, char *what, size_t cap)
{
    int any = 0;
    size_t k = R->let_names ? tg_length(R->let_names) : 0, n = 0;
    tg_term **v = k ? GC_MALLOC(2 * k * sizeof *v) : NULL;
    if (k && v) {
        tg_elements(R->let_names, v, k);
        tg_elements(R->let_terms, v + k, k);
        for (size_t i = 0; i < k; i++)
            if (v[i] != name)
                v[n] = v[i], v[k + n++] = v[k + i];
        if (n < k) {
            tg_term *ln = tg_list(R->ctx, n, v, NULL), *lt = tg_list(R->ctx, n, v + k, NULL);
            if (ln && lt) {
                R->let_names = n ? ln : NULL, R->let_terms = n ? lt : NULL;
                any = 1;
                snprintf(what + strlen(what), cap - strlen(what), "%s:let name", *what ? ", " : "");
            }
        }
    }
    size_t nl;
    const char *ns = tg_symbol_name(name, &nl);
    char *cname = ns ? strndup(ns, nl) : NULL;
    tg_shared *sv = cname ? tg_shared_find(R->ctx, cname) : NULL;
    free(cname);
    if (sv) {
        tg_shared_free(sv);
        any = 1;
        snprintf(what + strlen(what), cap - strlen(what), "%sshared variable", *what ? ", " : "");
    }
    return any;
}

/* ---- modes and the checking mode of :eval: :mode, :check --------------- */

/* Whether the session has a rewriter (or named query) called name. */
static int has_rewriter(repl *R, const char *name)
{
    tg_term *l = tg_rules_list(R->rs, TG_LIST_REWRITERS, NULL), *s = tg_symbol_cstr(R->ctx, name), *f;
    if (!l || !s)
        return 0;
    tg_iter it;
    tg_iter_init(&it, l);
    while ((f = tg_iter_next(&it)))
        if (tg_nth(f, 1) == s)
            return 1;
    return 0;
}

/* :eval's options as :mode and :check say: with a library loaded (a
 * rewriter default), the session's rule set rewrites the term, and a line
 * says which mode it used.  0, or 1 after reporting. */
static int eval_options(repl *R, tg_fn_options *fo)
{
    tg_error err;
    tg_error_clear(&err);
    const char *mode = tg_fn_mode(R->mode, &err);
    if (!mode) {
        tgM_report_here(R, &err);
        return 1;
    }
    if (!has_rewriter(R, "default")) {
        if (R->check) {
            tgM_complain(R, "%s", ":check on: the checking mode needs a library loaded (a rewriter default)");
            return 1;
        }
        return 0;
    }
    fo->rules = R->rs;
    fo->mode = mode;
    fo->check = R->check;
    fo->check_tol = R->check_tol;
    if (!strcmp(mode, "none"))
        fprintf(R->out, "; mode none: not rewritten\n");
    else
        fprintf(R->out, "; mode %s: rewritten with %s%s\n", mode, !strcmp(mode, "fast_run") ? "default" : "canonicalize",
                R->check ? ", checked" : "");
    return 0;
}

/* :mode [fast_run|fast_compile|none]: set :eval's mode, or print it. */
int tgM_cmd_mode(repl *R, const char *name, const char *args)
{
    tg_error err;
    tg_error_clear(&err);
    tg_term *t;
    char buf[64] = "";
    if (*args) {
        if (tgM_read_args(R, name, args, &t, 1, 1, "[fast_run|fast_compile|none]") < 0)
            return 1;
        size_t len;
        const char *s = tg_kind_of(t) == TG_SYMBOL ? tg_symbol_name(t, &len) : NULL;
        snprintf(buf, sizeof buf, "%.*s", s ? (int)(len > 60 ? 60 : len) : 1, s ? s : "?");
    }
    const char *m = tg_fn_mode(*args ? buf : R->mode, &err);
    if (!m) {
        tgM_report_here(R, &err);
        return 1;
    }
    if (*args)
        R->mode = m;
    else
        fprintf(R->out, "%s\n", m);
    return 0;
}

/* :check on [TOL] | off: the checking mode for :eval; alone, print it. */
int tgM_cmd_check(repl *R, const char *name, const char *args)
{
    static const char usage[] = "[on [TOL]|off]";
    tg_term *t[2];
    int n = *args ? tgM_read_args(R, name, args, t, 1, 2, usage) : 0;
    if (n < 0)
        return 1;
    if (!n) {
        if (R->check)
            fprintf(R->out, "check on %g\n", R->check_tol > 0 ? R->check_tol : 1e-7);
        else
            fprintf(R->out, "check off\n");
        return 0;
    }
    tg_term *on = tg_symbol_cstr(R->ctx, "on"), *off = tg_symbol_cstr(R->ctx, "off");
    if ((t[0] != on && t[0] != off) || (t[0] == off && n == 2)) {
        tgM_complain(R, "usage: :check %s", usage);
        return 1;
    }
    double tol = 0;
    int64_t iv;
    if (n == 2 && tg_int_get(t[1], &iv) == 0)
        tol = (double)iv;
    else if (n == 2 && tg_double_get(t[1], &tol) < 0)
        tol = -1;
    if (n == 2 && (!(tol >= 0) || tol > 1e300)) {
        char *p = tg_print(t[1], NULL);
        tgM_complain(R, ":check on TOL: the tolerance must be a finite number >= 0, not %s", p ? p : "?");
        free(p);
        return 1;
    }
    R->check = t[0] == on;
    R->check_tol = R->check ? tol : 0;
    return 0;
}

static const char *const dtype_names[] = {"bool", "int32", "int64", "float32", "float64"};

/* "DTYPE (SIZE ...)" of an array, on a line. */
static void print_type(repl *R, const tg_array *a)
{
    fprintf(R->out, "%s (", dtype_names[a->dtype]);
    for (int d = 0; d < a->ndim; d++)
        fprintf(R->out, d ? " %lld" : "%lld", (long long)a->shape[d]);
    fprintf(R->out, ")\n");
}

/* :eval TERM (NAME VALUE) ...: compile TERM (the tensor vocabulary of
 * doc/kernels.md) and run it on the arrays given. */
int tgM_cmd_eval(repl *R, const char *name, const char *args)
{
    tg_term *t[1 + MAX_INPUTS], *in[MAX_INPUTS];
    tg_array arr[MAX_INPUTS], out;
    int n = tgM_read_args(R, name, args, t, 1, 1 + MAX_INPUTS, "TERM (NAME VALUE-OR-\"FILE.npy\") ...");
    if (n < 0 || !(t[0] = expand(R, t[0])))
        return 1;
    int nin = tgM_find_inputs(R->ctx, t[0], in, MAX_INPUTS);
    if (nin < 0) {
        tgM_complain(R, "%s", "more than 32 inputs");
        return 1;
    }
    int rc = check_bindings(R, in, nin, t + 1, n - 1, 0), made = 0;
    for (; made < nin && rc == 0; made++)
        rc = bind_input(R, in[made], t + 1, n - 1, &arr[made]);
    if (rc && made)
        made--;
    tg_fn *fn = NULL;
    tg_error err;
    tg_error_clear(&err);
    /* the session's vjp rules, if it has any, come before the library's */
    tg_grad_options go = {R->rs, 0};
    tg_fn_options fo = {.grad = &go};
    if (rc == 0)
        rc = eval_options(R, &fo);
    if (rc == 0 && !(fn = tg_fn_compile(R->ctx, (size_t)nin, in, 1, t, &fo, &err))) {
        tgM_report_here(R, &err);
        rc = 1;
    }
    if (rc == 0)
        rc = check_bindings(R, in, nin, t + 1, n - 1, 1);
    memset(&out, 0, sizeof out);
    if (rc == 0 && tgM_fn_call(fn, arr, &out, &err) < 0) {
        tgM_report_here(R, &err);
        rc = 1;
    }
    if (rc == 0) {
        tg_term *v = tgM_array_to_term(R->ctx, &out);
        if (v && R->types)
            print_type(R, &out);
        if (v)
            tgM_show(R, v);
        else
            tgM_complain(R, "%s", "out of memory");
        rc = !v;
    }
    free(out.data);
    for (int i = 0; i < made; i++)
        free(arr[i].data);
    if (fn)     /* for :profile eval */
        R->has_last_eval = tg_fn_profile(fn, &R->last_eval) == 0;
    tg_fn_free(fn);
    return rc;
}

/* ---- functions with state: :var, :fn, :call, :repeat, :save ------------ */

/* A function :fn compiled, by name; in collector memory, so that its
 * terms stay alive (the list hangs on the repl, on the stack). */
typedef struct replfn {
    tg_term *name;
    tg_term *inputs;        /* its (input ...) terms, a list */
    int nout;
    tg_fn *fn;
    struct replfn *next;
} replfn;

static replfn *find_fn(repl *R, tg_term *name)
{
    for (replfn *f = R->fns; f; f = f->next)
        if (f->name == name)
            return f;
    return NULL;
}

void tgM_free_fns(repl *R)
{
    for (replfn *f = R->fns; f; f = f->next)
        tg_fn_free(f->fn);
    R->fns = NULL;
}

/* Whether t is an op application (a term to evaluate), not a literal
 * array: a list whose head is a symbol. */
static int is_op_term(const tg_term *t)
{
    return tg_kind_of(t) == TG_PAIR && tg_kind_of(tg_car((tg_term *)t)) == TG_SYMBOL;
}

/* The value of x, a term with no inputs (it may read shared variables),
 * as dtype (cast) in *a (data malloc'd); 0, or -1 with err filled. */
static int eval_closed(repl *R, tg_term *x, tg_dtype dt, tg_array *a, tg_error *err)
{
    tg_term *c[3] = {tg_symbol_cstr(R->ctx, "cast"), x, tg_symbol_cstr(R->ctx, dtype_names[dt])};
    tg_term *term = c[0] && c[2] ? tg_list(R->ctx, 3, c, NULL) : NULL;
    if (!term) {
        tg_error_set(err, TG_ERR_NOMEM, "out of memory");
        return -1;
    }
    tg_grad_options go = {R->rs, 0};
    tg_fn_options fo = {.grad = &go};
    tg_fn *fn = tg_fn_compile(R->ctx, 0, NULL, 1, &term, &fo, err);
    memset(a, 0, sizeof *a);
    int rc = fn ? tg_fn_call(fn, NULL, a, err) : -1;
    tg_fn_free(fn);
    return rc;
}

/* "NAME: DTYPE (SIZE ...)" of a shared variable. */
static void print_var(repl *R, const tg_shared *v)
{
    tg_array a;
    tg_shared_view(v, &a, NULL);
    fprintf(R->out, "%s: %s (", tg_shared_name(v), dtype_names[a.dtype]);
    for (int d = 0; d < a.ndim; d++)
        fprintf(R->out, d ? " %lld" : "%lld", (long long)a.shape[d]);
    fprintf(R->out, ")\n");
}

/* :var NAME [DTYPE VALUE]: make or set a shared variable, or print it. */
int tgM_cmd_var(repl *R, const char *name, const char *args)
{
    tg_term *t[3];
    int n = tgM_read_args(R, name, args, t, 1, 3, "NAME [DTYPE VALUE-OR-\"FILE.npy\"]");
    if (n < 0)
        return 1;
    size_t len;
    const char *vn = tg_kind_of(t[0]) == TG_SYMBOL ? tg_symbol_name(t[0], &len) : NULL;
    char *cname = vn ? strndup(vn, len) : NULL;
    if (!cname || n == 2) {
        free(cname);
        tgM_complain(R, "%s", "usage: :var NAME [DTYPE VALUE-OR-\"FILE.npy\"]");
        return 1;
    }
    tg_shared *v = tg_shared_find(R->ctx, cname);
    tg_error err;
    tg_error_clear(&err);
    int rc = 0;
    if (n == 1) {
        tg_array a;
        tg_term *val = NULL;
        if (!v)
            tgM_complain(R, "no shared variable %s (:var NAME DTYPE VALUE makes one)", cname), rc = 1;
        else if (tg_shared_view(v, &a, &err) < 0 || !(val = tgM_array_to_term(R->ctx, &a)))
            tgM_complain(R, "%s", "out of memory"), rc = 1;
        if (val)
            tgM_show(R, val);
        free(cname);
        return rc;
    }
    int dt = tgM_dtype_of(t[1]);
    if (dt < 0) {
        tgM_complain(R, "%s", ":var NAME DTYPE VALUE: DTYPE is float64, float32, int64, int32 or bool");
        free(cname);
        return 1;
    }
    tg_array a;
    size_t pl;
    const char *path = tg_kind_of(t[2]) == TG_STRING ? tg_string_bytes(t[2], &pl) : NULL;
    char *p = path ? strndup(path, pl) : NULL;
    if (is_op_term(t[2])) {     /* a tensor term: its value */
        tg_term *x = expand(R, t[2]);
        rc = x ? eval_closed(R, x, (tg_dtype)dt, &a, &err) : -1;
        if (!x) {
            free(cname), free(p);
            return 1;
        }
    } else {
        rc = path ? (p ? tgM_array_read_npy(p, &a, &err) : -1) : tgM_array_from_term(t[2], (tg_dtype)dt, &a, &err);
    }
    free(p);
    if (rc == 0 && a.dtype != (tg_dtype)dt) {
        snprintf(err.message, sizeof err.message, "the file holds %s data, not %s", dtype_names[a.dtype],
                 dtype_names[dt]);
        free(a.data);
        rc = -1;
    }
    if (rc == 0) {
        rc = v ? tg_shared_set(v, &a, &err) : (v = tg_shared_new(R->ctx, cname, &a, &err)) ? 0 : -1;
        free(a.data);
    }
    if (rc < 0) {
        char msg[700];
        snprintf(msg, sizeof msg, "%s: %s", cname, err.message);
        tgM_complain(R, "%s", msg);
    } else {
        print_var(R, v);
    }
    free(cname);
    return rc < 0;
}

/* The elements of clause (HEAD X ...) among t[0..n), as a list; NULL when
 * there is none. */
static tg_term *clause(repl *R, tg_term *const *t, int n, const char *head)
{
    tg_term *h = tg_symbol_cstr(R->ctx, head);
    for (int i = 0; i < n; i++)
        if (tg_kind_of(t[i]) == TG_PAIR && tg_car(t[i]) == h)
            return tg_cdr(R->ctx, t[i]);
    return NULL;
}

enum { MAX_FN_OUTPUTS = 32 };

/* :fn NAME (inputs IN ...) (outputs OUT ...) (updates (SHARED NEW) ...):
 * compile a function with state and keep it under NAME. */
int tgM_cmd_fn(repl *R, const char *name, const char *args)
{
    static const char usage[] = "NAME (inputs IN ...) (outputs OUT ...) [(updates (SHARED NEW) ...)]";
    tg_term *t[4];
    int n = tgM_read_args(R, name, args, t, 2, 4, usage);
    if (n < 0)
        return 1;
    for (int i = 1; i < n; i++)
        if (!(t[i] = expand(R, t[i])))
            return 1;
    tg_term *ins = clause(R, t + 1, n - 1, "inputs"), *outs = clause(R, t + 1, n - 1, "outputs");
    tg_term *upd = clause(R, t + 1, n - 1, "updates");
    if (tg_kind_of(t[0]) != TG_SYMBOL || (!outs && !upd) || (n - 1 != !!ins + !!outs + !!upd)) {
        tgM_complain(R, "usage: :fn %s", usage);
        return 1;
    }
    tg_term *in[MAX_INPUTS], *out[MAX_FN_OUTPUTS];
    size_t nin = ins ? tg_elements(ins, in, MAX_INPUTS) : 0, nout = outs ? tg_elements(outs, out, MAX_FN_OUTPUTS) : 0;
    if (nin > MAX_INPUTS || nout > MAX_FN_OUTPUTS) {
        tgM_complain(R, "%s", "more than 32 inputs or outputs");
        return 1;
    }
    tg_fn_options opt;
    memset(&opt, 0, sizeof opt);
    opt.updates = upd;
    tg_error err;
    tg_error_clear(&err);
    tg_fn *fn = tg_fn_compile(R->ctx, nin, in, nout, out, &opt, &err);
    replfn *f = fn ? find_fn(R, t[0]) : NULL;
    if (fn && !f && (f = GC_MALLOC(sizeof *f))) {
        f->name = t[0], f->next = R->fns;
        R->fns = f;
    } else if (f) {
        tg_fn_free(f->fn);      /* defined again */
    }
    if (!f) {
        if (fn)
            tgM_complain(R, "%s", "out of memory");
        else
            tgM_report_here(R, &err);
        tg_fn_free(fn);
        return 1;
    }
    f->fn = fn, f->inputs = ins ? ins : tg_nil(), f->nout = (int)nout;
    size_t nl;
    const char *fname = tg_symbol_name(t[0], &nl);
    fprintf(R->out, "%.*s: %zu input%s, %zu output%s, %zu update%s\n", (int)nl, fname, nin, nin == 1 ? "" : "s",
            nout, nout == 1 ? "" : "s", upd ? tg_length(upd) : 0, upd && tg_length(upd) == 1 ? "" : "s");
    return 0;
}

/* The outputs out[0..n) on one line (for :repeat's progress lines). */
static void show_line(repl *R, const tg_array *out, int n)
{
    for (int i = 0; i < n; i++) {
        tg_term *v = tgM_array_to_term(R->ctx, &out[i]);
        char *p = v ? tg_print(v, NULL) : NULL;
        fprintf(R->out, "%s%s", i ? " " : "", p ? p : "?");
        free(p);
    }
    fputc('\n', R->out);
}

/* Clear the line of :repeat's bar (spaces: no escape sequence, so a
 * dumb terminal shows it right too). */
static void clear_bar(void)
{
    fprintf(stderr, "\r%60s\r", "");
}

/* :repeat's bar on standard error at a terminal: calls done of all. */
static void draw_bar(long done, long all)
{
    enum { W = 30 };
    int fill = (int)((double)done / (double)all * W);
    fprintf(stderr, "\r[%.*s%*s] %ld/%ld", fill, "##############################", W - fill, "", done, all);
    fflush(stderr);
}

/* Call function NAME (t[0]) `times` times on the bindings t[1..n), then
 * print its outputs; with every > 0, also a line with them after every
 * `every` calls; with bar set, a progress bar on standard error. */
static int call_fn(repl *R, tg_term *const *t, int n, long times, long every, int bar)
{
    replfn *f = tg_kind_of(t[0]) == TG_SYMBOL ? find_fn(R, t[0]) : NULL;
    if (!f) {
        char *p = tg_print(t[0], NULL);
        tgM_complain(R, "no function %s (:fn defines one)", p ? p : "?");
        free(p);
        return 1;
    }
    tg_term *in[MAX_INPUTS];
    tg_array arr[MAX_INPUTS], out[MAX_FN_OUTPUTS];
    int nin = (int)tg_elements(f->inputs, in, MAX_INPUTS), made = 0, rc = 0;
    for (; made < nin && rc == 0; made++)
        rc = bind_input(R, in[made], t + 1, n - 1, &arr[made]);
    if (rc)
        made--;
    tg_error err;
    tg_error_clear(&err);
    memset(out, 0, sizeof out);
    size_t nl;
    const char *fname = tg_symbol_name(t[0], &nl);
    long step = times / 200 ? times / 200 : 1;     /* redraw the bar 200 times at most */
    /* the first call allocates the outputs, the others write into them */
    for (long k = 0; rc == 0 && k < times; k++) {
        if (tgM_fn_call(f->fn, arr, out, &err) < 0) {
            if (bar)
                clear_bar();
            tgM_report_here(R, &err);
            rc = 1;
            break;
        }
        if (every > 0 && (k + 1) % every == 0) {
            if (bar)
                clear_bar();
            fprintf(R->out, "%.*s %ld/%ld: ", (int)nl, fname, k + 1, times);
            show_line(R, out, f->nout);
            fflush(R->out);
        }
        if (bar && ((k + 1) % step == 0 || k + 1 == times))
            draw_bar(k + 1, times);
    }
    if (bar && rc == 0)
        clear_bar();
    /* the last outputs, unless (every K) has just shown them */
    for (int i = 0; rc == 0 && !(every > 0 && times % every == 0) && i < f->nout; i++) {
        tg_term *v = tgM_array_to_term(R->ctx, &out[i]);
        if (v)
            tgM_show(R, v);
        else
            tgM_complain(R, "%s", "out of memory"), rc = 1;
    }
    for (int i = 0; i < f->nout; i++)
        free(out[i].data);
    for (int i = 0; i < made; i++)
        free(arr[i].data);
    return rc;
}

/* :call NAME (X VALUE) ...: run a function :fn defined once. */
int tgM_cmd_call(repl *R, const char *name, const char *args)
{
    tg_term *t[1 + MAX_INPUTS];
    int n = tgM_read_args(R, name, args, t, 1, 1 + MAX_INPUTS, "NAME (X VALUE-OR-\"FILE.npy\") ...");
    return n < 0 ? 1 : call_fn(R, t, n, 1, 0, 0);
}

/* :repeat N NAME [(every K)] (X VALUE) ...: run it N times on the same
 * arrays; (every K) prints the outputs after every K calls, and at a
 * terminal a progress bar goes to standard error meanwhile. */
int tgM_cmd_repeat(repl *R, const char *name, const char *args)
{
    tg_term *t[3 + MAX_INPUTS];
    int64_t times, every = 0;
    int n = tgM_read_args(R, name, args, t, 2, 3 + MAX_INPUTS,
                          "N NAME [(every K)] (X VALUE-OR-\"FILE.npy\") ...");
    if (n < 0)
        return 1;
    if (tg_int_get(t[0], &times) < 0 || times < 1) {
        tgM_complain(R, "%s", ":repeat needs a count of at least 1");
        return 1;
    }
    tg_term *ev = tg_symbol_cstr(R->ctx, "every");
    for (int i = 2; i < n; i++)
        if (tg_kind_of(t[i]) == TG_PAIR && tg_car(t[i]) == ev) {
            if (tg_length(t[i]) != 2 || tg_int_get(tg_nth(t[i], 1), &every) < 0 || every < 1) {
                tgM_complain(R, "%s", ":repeat: (every K) needs a count K of at least 1");
                return 1;
            }
            memmove(t + i, t + i + 1, (size_t)(n - i - 1) * sizeof *t);
            n--;
            break;
        }
    int bar = !R->o->machine && isatty(STDERR_FILENO) && times > 1;
    return call_fn(R, t + 1, n - 1, (long)times, (long)every, bar);
}

/* :save NAME-OR-TERM "FILE.npy": write a shared variable's value, or a
 * term's (no inputs; it may read shared variables), as a .npy file. */
int tgM_cmd_save(repl *R, const char *name, const char *args)
{
    tg_term *t[2];
    int n = tgM_read_args(R, name, args, t, 2, 2, "NAME-OR-TERM \"FILE.npy\"");
    if (n < 0)
        return 1;
    size_t pl;
    const char *path = tg_kind_of(t[1]) == TG_STRING ? tg_string_bytes(t[1], &pl) : NULL;
    if (!path) {
        tgM_complain(R, "%s", "usage: :save NAME-OR-TERM \"FILE.npy\" (the file name a string)");
        return 1;
    }
    char *p = strndup(path, pl);
    tg_error err;
    tg_error_clear(&err);
    tg_array a;
    memset(&a, 0, sizeof a);
    int rc = p ? 0 : -1, owned = 0;
    if (tg_kind_of(t[0]) == TG_SYMBOL) {
        size_t len;
        const char *vn = tg_symbol_name(t[0], &len);
        char *cname = strndup(vn, len);
        tg_shared *v = cname ? tg_shared_find(R->ctx, cname) : NULL;
        free(cname);
        if (!v) {
            char *s = tg_print(t[0], NULL);
            tgM_complain(R, "no shared variable %s (:var makes one; or give a term)", s ? s : "?");
            free(s), free(p);
            return 1;
        }
        rc = tg_shared_view(v, &a, &err);
    } else {
        tg_term *x = expand(R, t[0]);
        if (!x) {
            free(p);
            return 1;
        }
        tg_grad_options go = {R->rs, 0};
        tg_fn_options fo = {.grad = &go};
        tg_fn *fn = tg_fn_compile(R->ctx, 0, NULL, 1, &x, &fo, &err);
        rc = fn ? tg_fn_call(fn, NULL, &a, &err) : -1;
        owned = rc == 0;
        tg_fn_free(fn);
    }
    if (rc == 0)
        rc = tg_npy_write(p, &a, &err);
    if (owned)
        free(a.data);
    free(p);
    if (rc < 0)
        tgM_report_here(R, &err);
    return rc < 0;
}

/* ---- :profile fn NAME, :profile eval ------------------------------------ */

int tgM_profile_fn(repl *R, tg_term *name)
{
    replfn *f = tg_kind_of(name) == TG_SYMBOL ? find_fn(R, name) : NULL;
    tg_fn_stats st;
    if (!f || tg_fn_profile(f->fn, &st) < 0) {
        char *p = tg_print(name, NULL);
        tgM_complain(R, "no function %s (:fn defines one)", p ? p : "?");
        free(p);
        return 1;
    }
    tg_fn_profile_print(&st, R->out);
    return 0;
}

int tgM_profile_eval(repl *R)
{
    if (!R->has_last_eval) {
        tgM_complain(R, "%s", "no :eval has compiled a function yet");
        return 1;
    }
    tg_fn_profile_print(&R->last_eval, R->out);
    return 0;
}
