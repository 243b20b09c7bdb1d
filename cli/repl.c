/* repl.c - the read-eval-print loop of the tgrel program (prefix tgM_).
 *
 * Input comes a line at a time, from readline (or libedit) when a person
 * sits at a terminal, else from the stream as it is (a pipe, a script):
 * an entry is complete when its parentheses, strings and comments are
 * closed, so a form may span lines.  An entry that starts with `:` is a
 * command (commands[] below, each with its help text); anything else is
 * forms, evaluated in the rule set one after the other as the program
 * evaluates files.  Errors print and the loop goes on.  The tree and
 * Graphviz views are here too, with their own pointer set (the program
 * links only the public library).  The tensor commands (:eval, :let,
 * :var, :fn, :call, :repeat) are in repl_tensor.c; the terminal (Ctrl-C,
 * the prompts, history, completion, colours) in term.c.
 */
#define _GNU_SOURCE     /* fopencookie (:step's capture), strndup, mkstemp */
#include "config.h"

#include <errno.h>
#include <gc/gc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "arrays.h"
#include "repl.h"
#include "repl_int.h"
#include "selftest.h"
#include "term.h"
#include "views.h"

enum { HISTORY_FIRINGS = 2000 };



/* ---- entries: when is the input whole -------------------------------- */

/* Skip a "..." or |...| run from just after its opening byte; returns the
 * offset after the closing byte, or len when it is still open. */
static size_t skip_quoted(const char *s, size_t i, size_t len, char close)
{
    for (; i < len; i++) {
        if (s[i] == '\\')
            i++;
        else if (s[i] == close)
            return i + 1;
    }
    return len + 1;
}

static int is_delim(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' ||
           c == '(' || c == ')' || c == '[' || c == ']' || c == '"' || c == ';';
}

int tgM_incomplete(const char *s, size_t len)
{
    long depth = 0, nest = 0;
    int pending = 0;        /* a quote prefix or #; waits for its datum */
    for (size_t i = 0; i < len;) {
        char c = s[i];
        if (nest) {             /* inside #| |#, which nest */
            if (c == '|' && i + 1 < len && s[i + 1] == '#')
                nest--, i += 2;
            else if (c == '#' && i + 1 < len && s[i + 1] == '|')
                nest++, i += 2;
            else
                i++;
            continue;
        }
        if (c == ';') {
            while (i < len && s[i] != '\n')
                i++;
        } else if (c == '#' && i + 1 < len && s[i + 1] == '|') {
            nest = 1, i += 2;
        } else if (c == '#' && i + 1 < len && s[i + 1] == ';') {
            pending = 1, i += 2;
        } else if (c == '"' || c == '|') {
            if ((i = skip_quoted(s, i + 1, len, c)) > len)
                return 1;
            pending = 0;
        } else if (c == '\'' || c == '`' || c == ',') {
            pending = 1, i += 1 + (c == ',' && i + 1 < len && s[i + 1] == '@');
        } else if (c == '(' || c == '[') {
            depth++, i++, pending = 0;
        } else if (c == ')' || c == ']') {
            depth--, i++;
        } else if (is_delim(c)) {
            i++;
        } else {
            while (i < len && !is_delim(s[i])) {
                if (s[i] == '|') {      /* ?|a b| and a|b c|d: quoted parts */
                    if ((i = skip_quoted(s, i + 1, len, '|')) > len)
                        return 1;
                } else {
                    i++;
                }
            }
            pending = 0;
        }
    }
    return nest > 0 || depth > 0 || pending;
}

/* ---- output ------------------------------------------------------------ */

/* code when standard output gets colour, else "" */
static const char *ink(const repl *R, const char *code)
{
    return R->o->color & TGM_COLOR_OUT ? code : "";
}

static void report(const repl *R, const tg_error *err)
{
    char msg[1024];
    tg_error_format(err, msg, sizeof msg);
    fflush(R->out ? R->out : stdout);
    fflush(stdout);
    if (R->o->machine)
        printf("!error %s\n", msg);
    else if (R->o->color & TGM_COLOR_ERR)
        fprintf(stderr, "%s%s%s\n", TGM_RED, msg, TGM_PLAIN);
    else
        fprintf(stderr, "%s\n", msg);
}

/* Report err at the entry's position when it has none of its own: the
 * argument's it is about, else where the command (or form) starts. */
void tgM_report_here(const repl *R, tg_error *err)
{
    if (err->line == 0 && R->line > 0) {
        if (R->at >= 0 && R->at < R->nargpos)
            err->line = R->argline[R->at], err->column = R->argcol[R->at];
        else
            err->line = R->line, err->column = R->col > 0 ? R->col : 1;
        snprintf(err->file, sizeof err->file, "%s", R->name);
    }
    report(R, err);
}

/* Report a message of the program itself (a command's usage, ...) at
 * the entry's position. */
void tgM_complain(const repl *R, const char *fmt, const char *arg)
{
    tg_error err;
    tg_error_clear(&err);
    tg_error_set(&err, TG_ERR_ARG, fmt, arg);
    tgM_report_here(R, &err);
}

void tgM_show(const repl *R, const tg_term *t)
{
    size_t n;
    char *s = tgM_print_term(t, R->shared, &n);
    if (!s) {
        tgM_complain(R, "%s", "out of memory printing");
        return;
    }
    fwrite(s, 1, n, R->out);
    fputc('\n', R->out);
    free(s);
}

/* ---- forms ------------------------------------------------------------- */

/* Evaluate and print one form read by r; 0, or 1 after reporting. */
/* Evaluate t and print what it gives.  In machine mode the whole output
 * of the form (a run's answer list, its traces) is held until the form is
 * done, then written at once, or dropped when the form fails: a driving
 * program sees a complete answer list or an !error line, never the
 * answers found before an error and half a list. */
static int eval_print(repl *R, tg_reader *r, tg_term *t, tg_error *err)
{
    if (!R->o->machine)
        return tgM_eval_print(R->rs, r, t, R->shared, R->out, err);
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    if (!mem) {
        tg_error_set(err, TG_ERR_NOMEM, "out of memory");
        return -1;
    }
    /* traces go with the answers; (trace on|off) may change tracing */
    tg_rules_set_trace(R->rs, mem, tg_rules_tracing(R->rs));
    int rc = tgM_eval_print(R->rs, r, t, R->shared, mem, err);
    tg_rules_set_trace(R->rs, R->out, tg_rules_tracing(R->rs));     /* mem goes now */
    if (fclose(mem) != 0 && rc == 0) {
        tg_error_set(err, TG_ERR_NOMEM, "out of memory");
        rc = -1;
    }
    if (rc == 0)
        fwrite(buf, 1, len, R->out);
    free(buf);
    return rc;
}

static int eval_form(repl *R, tg_reader *r, tg_term *t)
{
    tg_error err;
    tg_error_clear(&err);
    if (eval_print(R, r, t, &err) == 0)
        return 0;
    if (err.line == 0) {
        tg_reader_last_pos(r, &err.line, &err.column);
        snprintf(err.file, sizeof err.file, "%s", R->name);
    }
    report(R, &err);
    return 1;
}

/* Whether form t is one that tg_rules_load_file_defs loads. */
static int defines(const tg_term *t)
{
    static const char *const heads[] = {"op", "rule", "include", "equilibrium", "walk", "sequence",
                                        "defrel", "tabled", "fact", "facts"};
    const tg_term *h = tg_kind_of(t) == TG_PAIR ? tg_car(t) : NULL;
    size_t n;
    const char *s = h && tg_kind_of(h) == TG_SYMBOL ? tg_symbol_name(h, &n) : NULL;
    for (size_t i = 0; s && i < sizeof heads / sizeof *heads; i++)
        if (strlen(heads[i]) == n && !memcmp(heads[i], s, n))
            return 1;
    return 0;
}

/* Read and evaluate every form of text, whose first line is line `line`
 * of the input; returns the number of errors. */
static int eval_text(repl *R, const char *text, size_t len, int line)
{
    tg_error err;
    int errors = 0;
    tg_error_clear(&err);
    tg_reader *r = tg_reader_new(R->ctx, text, len, R->name, &err);
    if (!r) {
        report(R, &err);
        return 1;
    }
    tg_reader_first_line(r, line);
    tg_reader_track_positions(r, 1);    /* errors point at subterms */
    for (;;) {
        tg_term *t = NULL;
        int rc = tg_reader_next(r, &t, &err);
        if (rc == 0)
            break;
        if (rc < 0) {
            report(R, &err);
            tg_error_clear(&err);
            errors++;
            continue;
        }
        if (!(R->skip_defs && defines(t)))
            errors += eval_form(R, r, t);
    }
    tg_reader_free(r);
    return errors;
}

int tgM_eval_text(tg_ctx *ctx, tg_rules *rs, const char *text, size_t len, const char *name,
                  int line, const tgM_repl_opts *o)
{
    repl R = {.ctx = ctx, .rs = rs, .o = o, .name = name ? name : "<string>", .line = line,
              .shared = o->shared};
    tg_rules_set_timing(rs, 1);     /* :profile rewrite gives each rule's time */
    R.out = o->color & TGM_COLOR_OUT ? tgM_tint_open() : stdout;
    int errors = eval_text(&R, text, len, line);
    tgM_free_fns(&R);
    tg_rules_set_trace(rs, stdout, tg_rules_tracing(rs));  /* the filter goes now */
    if (R.out != stdout)
        fclose(R.out);
    return errors;
}

/* Load the definitions of the file at path, all or nothing; report each
 * error (up to TGM_MAX_LOAD_ERRORS) and return how many. */
/* An error of loading path: in the file, at its place; of the file itself
 * (it cannot be opened or read), at the entry that asked for it. */
static void report_load(repl *R, const char *path, tg_error *err)
{
    if (err->line != 0) {
        report(R, err);
        return;
    }
    char why[sizeof err->message];
    snprintf(why, sizeof why, "%s", err->message);
    tg_error_set(err, err->code, "cannot load %s: %s", path, why);
    tgM_report_here(R, err);
}

static int load_defs(repl *R, const char *path)
{
    tg_error errs[TGM_MAX_LOAD_ERRORS];
    long n = tg_rules_check_file(R->rs, path, errs, TGM_MAX_LOAD_ERRORS);
    for (long i = 0; i < n; i++)
        report_load(R, path, &errs[i]);
    return (int)n;
}

/* Load the file's definitions (or, reload set, read them again in place
 * of the old ones), then evaluate its other forms in order. */
static int load_file_as(repl *R, const char *path, int reload)
{
    if (reload) {
        tg_error errs[TGM_MAX_LOAD_ERRORS];
        long n = tg_rules_reload_file(R->rs, path, errs, TGM_MAX_LOAD_ERRORS);
        for (long i = 0; i < n; i++)
            report_load(R, path, &errs[i]);
        if (n)
            return 1;
    } else if (load_defs(R, path))
        return 1;
    tg_error err;
    tg_error_clear(&err);
    size_t len;
    char *text = tg_slurp_file(path, &len, &err);
    if (!text) {
        report_load(R, path, &err);
        return 1;
    }
    const char *name = R->name;
    int nargpos = R->nargpos;
    R->name = path;
    R->skip_defs = 1;
    R->nargpos = 0;     /* the file's errors are at places of the file */
    int errors = eval_text(R, text, len, 1);
    R->nargpos = nargpos;
    R->skip_defs = 0;
    R->name = name;
    free(text);
    return errors;
}

static int load_file(repl *R, const char *path)
{
    return load_file_as(R, path, 0);
}

int tgM_load_file(tg_ctx *ctx, tg_rules *rs, const char *path, const tgM_repl_opts *o)
{
    repl R = {.ctx = ctx, .rs = rs, .o = o, .name = path, .line = 1, .shared = o->shared};
    R.out = o->color & TGM_COLOR_OUT ? tgM_tint_open() : stdout;
    int errors = load_file(&R, path);
    tgM_free_fns(&R);
    tg_rules_set_trace(rs, stdout, tg_rules_tracing(rs));  /* the filter goes now */
    if (R.out != stdout)
        fclose(R.out);
    return errors;
}

/* The terms of a command's argument text: between min and max of them
 * into t[]; their number, or -1 after reporting. */
int tgM_read_args(repl *R, const char *cmd, const char *text, tg_term **t, int min, int max,
                  const char *usage)
{
    tg_error err;
    tg_error_clear(&err);
    if (R->argtext)
        text = R->argtext;
    tg_reader *r = tg_reader_new(R->ctx, text, strlen(text), R->name, &err);
    int n = 0;
    if (r && R->argtext)
        tg_reader_first_line(r, R->line);
    if (!r) {
        report(R, &err);
        return -1;
    }
    R->nargpos = 0;
    for (;;) {
        tg_term *x;
        int rc = tg_reader_next(r, &x, &err);
        if (rc < 0) {
            report(R, &err);
            tg_reader_free(r);
            return -1;
        }
        if (rc == 0)
            break;
        if (n == max) {
            n = max + 1;
            break;
        }
        if (R->argtext && n < 8) {
            tg_reader_last_pos(r, &R->argline[n], &R->argcol[n]);
            R->nargpos = n + 1;
        }
        t[n++] = x;
    }
    tg_reader_free(r);
    if (n < min || n > max) {
        char msg[256];
        snprintf(msg, sizeof msg, "usage: :%s %s", cmd, usage);
        tgM_complain(R, "%s", msg);
        return -1;
    }
    return n;
}

/* Evaluate the form (head args...) built from a command's arguments. */
static int eval_built(repl *R, const char *head, tg_term *const *args, int n)
{
    tg_term *x[4] = {tg_symbol_cstr(R->ctx, head)};
    for (int i = 0; i < n; i++)
        x[i + 1] = args[i];
    tg_term *form = x[0] ? tg_list(R->ctx, (size_t)n + 1, x, tg_nil()) : NULL;
    if (!form) {
        tgM_complain(R, "%s", "out of memory");
        return 1;
    }
    tg_error err;
    tg_error_clear(&err);
    if (eval_print(R, NULL, form, &err) == 0)
        return 0;
    R->at = 0;  /* the first argument: the rewriter or the term */
    tgM_report_here(R, &err);
    return 1;
}

/* ---- Graphviz ------------------------------------------------------------ */

/* Write t as a Graphviz graph with write (write_dot, write_firings): to
 * standard output, a .dot file, or an image through Graphviz (.svg, .png,
 * .pdf). */
static int write_dot(FILE *out, tg_term *t, void *ud);

/* "cannot write FILE: WHY", WHY the system's reason. */
static void complain_io(const repl *R, const char *file, const char *why)
{
    size_t n = strlen(file) + strlen(why) + 3;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "%s: %s", file, why);
    tgM_complain(R, "cannot write %s", s ? s : file);
    free(s);
}

static int dot_to(repl *R, tg_term *t, const char *file, int (*write)(FILE *, tg_term *, void *))
{
    const char *ext = file ? strrchr(file, '.') : NULL;
    int image = ext && (!strcmp(ext, ".svg") || !strcmp(ext, ".png") || !strcmp(ext, ".pdf"));
    if (!file)
        return write(stdout, t, R) < 0 ? (tgM_complain(R, "%s", "out of memory"), 1) : 0;
    char tmp[] = "/tmp/tgrel-dot-XXXXXX";
    int fd = image ? mkstemp(tmp) : -1;
    FILE *f = image ? (fd >= 0 ? fdopen(fd, "w") : NULL) : fopen(file, "w");
    if (!f) {
        int e = errno;
        if (fd >= 0)
            close(fd), unlink(tmp);
        complain_io(R, image ? "a temporary file" : file, strerror(e));
        return 1;
    }
    int rc = write(f, t, R);
    errno = 0;
    if (fclose(f) != 0 || rc < 0) {
        int e = errno;
        if (image)
            unlink(tmp);
        complain_io(R, file, rc < 0 && !e ? "out of memory" : strerror(e ? e : EIO));
        return 1;
    }
    if (!image)
        return 0;
    int st = tgM_run_graphviz(ext + 1, tmp, file);
    unlink(tmp);
    if (st == 127) {
        tgM_complain(R, "%s", "Graphviz is not installed (apt-get install graphviz); write a .dot file instead");
        return 1;
    }
    if (st != 0) {
        tgM_complain(R, "Graphviz failed to write %s", file);
        return 1;
    }
    return 0;
}

/* ---- commands ------------------------------------------------------------ */

typedef struct command {
    const char *name;
    const char *args;       /* the synopsis of its arguments */
    const char *help;       /* one line */
    const char *example;
    int (*fn)(repl *R, const char *name, const char *args);
} command;

static const command commands[];

/* ---- rewriting with one rule --------------------------------------------- */

/* The rewriters the REPL declares to rewrite with a single rule (:rewrite
 * RULE TERM) are (equilibrium rule:NAME ITEM): x is one of them. */
int tgM_hidden_rewriter(const repl *R, tg_term *x)
{
    size_t len;
    const char *nm = tg_symbol_name(tg_nth(x, 1), &len);
    return tg_length(x) == 3 && nm && len > 5 && !memcmp(nm, "rule:", 5) &&
           tg_car(x) == tg_symbol_cstr(R->ctx, "equilibrium");
}

/* Is name in the list l of forms (each (KIND NAME ...))? */
static int listed(tg_term *l, tg_term *name)
{
    tg_iter it;
    tg_iter_init(&it, l);
    for (tg_term *x; (x = tg_iter_next(&it));)
        if (tg_nth(x, 1) == name)
            return 1;
    return 0;
}

/* A rewriter spec for spec: spec itself, unless it names a rule (NAME or
 * (reverse NAME)) and no rewriter, which a rewrite cannot run directly:
 * then the equilibrium of that one rule, declared on first use as
 * rule:NAME (rule:NAME/reverse).  NULL after reporting. */
static tg_term *rule_spec(repl *R, tg_term *spec)
{
    tg_term *rule = spec;
    int back = tg_length(spec) == 2 && tg_car(spec) == tg_symbol_cstr(R->ctx, "reverse");
    if (back)
        rule = tg_nth(spec, 1);
    if (tg_kind_of(rule) != TG_SYMBOL)
        return spec;
    tg_term *rw = tg_rules_list(R->rs, TG_LIST_REWRITERS, NULL);
    if (!rw || (!back && listed(rw, rule)) || !listed(tg_rules_list(R->rs, TG_LIST_RULES, NULL), rule))
        return spec;
    size_t len;
    const char *nm = tg_symbol_name(rule, &len);
    char *text = malloc(2 * len + 64);
    if (!text) {
        tgM_complain(R, "%s", "out of memory");
        return NULL;
    }
    int n = sprintf(text, "rule:%.*s%s", (int)len, nm, back ? "/reverse" : "");
    tg_term *hidden = tg_symbol(R->ctx, text, (size_t)n);
    tg_error err;
    tg_error_clear(&err);
    if (hidden && !listed(rw, hidden)) {
        n = sprintf(text, "(equilibrium |rule:%.*s%s| %s%.*s%s)", (int)len, nm, back ? "/reverse" : "",
                    back ? "(reverse " : "", (int)len, nm, back ? ")" : "");
        if (tg_rules_load_string(R->rs, text, (size_t)n, NULL, &err) < 0)
            hidden = NULL;
    }
    free(text);
    if (!hidden) {
        /* the error is the spec's, where the entry has it (the first
         * argument), not the made-up form's */
        const char *e = R->argtext ? R->argtext : NULL;
        int line = R->line, col = 1;
        for (const char *p = e; p && *p && (*p == ' ' || *p == '\t' || *p == '\n'); p++)
            *p == '\n' ? (line++, col = 1) : col++;
        if (e && err.code != TG_ERR_NOMEM) {
            err.line = line, err.column = col;
            snprintf(err.file, sizeof err.file, "%s", R->name);
            report(R, &err);
        } else {
            tgM_report_here(R, &err);
        }
    }
    return hidden;
}

static int print_list(repl *R, tg_list_kind kind)
{
    tg_error err;
    tg_error_clear(&err);
    tg_term *l = tg_rules_list(R->rs, kind, &err);
    if (!l) {
        report(R, &err);
        return 1;
    }
    tg_iter it;
    tg_iter_init(&it, l);
    for (tg_term *x; (x = tg_iter_next(&it));)
        if (kind != TG_LIST_REWRITERS || !tgM_hidden_rewriter(R, x))
            tgM_show(R, x);
    return 0;
}

static int cmd_list(repl *R, const char *name, const char *args)
{
    if (*args) {
        tgM_complain(R, ":%s takes no argument", name);
        return 1;
    }
    tg_list_kind k = !strcmp(name, "ops") ? TG_LIST_OPS
                   : !strcmp(name, "rules") ? TG_LIST_RULES
                   : !strcmp(name, "relations") ? TG_LIST_RELATIONS : TG_LIST_REWRITERS;
    return print_list(R, k);
}

/* A file name: the text as it is, or a string term ("a b.rules"). */
/* The place of a command's first argument, from its blanked entry, when
 * the argument is taken as text (an unquoted file name). */
static void first_arg_place(repl *R)
{
    const char *p = R->argtext;
    int line = R->line, col = 1;
    for (; p && *p && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'); p++)
        if (*p == '\n')
            line++, col = 1;
        else
            col++;
    if (p && *p)
        R->argline[0] = line, R->argcol[0] = col, R->nargpos = 1;
}

static char *file_arg(repl *R, const char *args)
{
    if (*args != '"') {
        first_arg_place(R);
        return strdup(args);
    }
    tg_term *t;
    if (tgM_read_args(R, "load", args, &t, 1, 1, "FILE") < 0)
        return NULL;
    size_t n;
    const char *s = tg_string_bytes(t, &n);
    return s ? strndup(s, n) : NULL;
}

static int cmd_load(repl *R, const char *name, const char *args)
{
    int reload = !strcmp(name, "reload");
    if (!*args) {
        tgM_complain(R, "%s", reload ? "usage: :reload FILE" : "usage: :load FILE");
        return 1;
    }
    char *path = file_arg(R, args);
    if (!path)
        return 1;
    R->at = 0;      /* cannot open FILE points at FILE */
    int rc = load_file_as(R, path, reload);
    if (rc == 0 && !R->o->machine && R->o->interactive)
        printf("%s %s\n", reload ? "reloaded" : "loaded", path);
    free(path);
    return rc != 0;
}

/* :undef NAME: the op, rule, rewriter, query or relation NAME, and the
 * session's :let name or shared variable NAME. */
static int cmd_undef(repl *R, const char *name, const char *args)
{
    tg_term *t;
    if (tgM_read_args(R, name, args, &t, 1, 1, "NAME") < 0)
        return 1;
    if (tg_kind_of(t) != TG_SYMBOL) {
        tgM_complain(R, "%s", "usage: :undef NAME, NAME a symbol");
        return 1;
    }
    char what[200] = "";
    tg_error err;
    tg_error_clear(&err);
    int k = tg_rules_undef(R->rs, t, &err);
    static const char *const kinds[] = {"op", "rule", "rewriter", "query", "relation"};
    for (int i = 0; k > 0 && i < 5; i++)
        if (k & (1 << i))
            snprintf(what + strlen(what), sizeof what - strlen(what), "%s%s", *what ? ", " : "", kinds[i]);
    /* a name still used stays whole: the session's names go only with it */
    int session = k >= 0 || strstr(err.message, "is not defined") ? tgM_undef_session(R, t, what, sizeof what) : 0;
    if (k < 0 && !session) {
        R->at = 0;
        tgM_report_here(R, &err);
        return 1;
    }
    if (!R->o->machine && R->o->interactive) {
        char *p = tg_print(t, NULL);
        printf("removed %s: %s\n", p ? p : "?", what);
        free(p);
    }
    return 0;
}

static int cmd_rewrite(repl *R, const char *name, const char *args)
{
    tg_term *t[2];
    if (tgM_read_args(R, name, args, t, 2, 2, "REWRITER-OR-QUERY-OR-RULE TERM") < 0)
        return 1;
    if (!(t[0] = rule_spec(R, t[0])))
        return 1;
    return eval_built(R, "rewrite", t, 2);
}

static int cmd_normalize(repl *R, const char *name, const char *args)
{
    tg_term *t[2];
    int n = tgM_read_args(R, name, args, t, 1, 2, "TERM [memo]");
    return n < 0 ? 1 : eval_built(R, "normalize", t, n);
}

/* on / off / nothing (then *state is left alone); -1 on anything else */
static int on_off(repl *R, const char *name, const char *args, int *state)
{
    if (!*args)
        return 0;
    if (!strcmp(args, "on") || !strcmp(args, "off")) {
        *state = !strcmp(args, "on");
        return 0;
    }
    tgM_complain(R, "usage: :%s [on|off]", name);
    return -1;
}

static int cmd_trace(repl *R, const char *name, const char *args)
{
    int on = tg_rules_tracing(R->rs);
    if (on_off(R, name, args, &on) < 0)
        return 1;
    tg_rules_set_trace(R->rs, R->out, on);
    printf("trace %s\n", on ? "on" : "off");
    return 0;
}

static int cmd_types(repl *R, const char *name, const char *args)
{
    if (on_off(R, name, args, &R->types) < 0)
        return 1;
    printf("types %s\n", R->types ? "on" : "off");
    return 0;
}

static int cmd_shared(repl *R, const char *name, const char *args)
{
    if (on_off(R, name, args, &R->shared) < 0)
        return 1;
    printf("shared %s\n", R->shared ? "on" : "off");
    return 0;
}

/* Put the elements of l from the first-th on, each after a space, the
 * rule names (all of them, or with heads the heads of the elements)
 * in colour. */
static int put_rules(repl *R, tg_term *l, size_t first, int heads)
{
    tg_iter it;
    tg_iter_init(&it, l);
    size_t i = 0;
    int rc = 0;
    for (tg_term *x; rc == 0 && (x = tg_iter_next(&it)); i++) {
        if (i < first)
            continue;
        fputc(' ', stdout);
        if (heads && tg_kind_of(x) == TG_PAIR) {
            printf("(%s", ink(R, INK_RULE));
            rc = tg_fprint(stdout, tg_car(x));
            fputs(ink(R, TGM_PLAIN), stdout);
            tg_iter in;
            tg_iter_init(&in, x);
            tg_iter_next(&in);
            for (tg_term *y; rc == 0 && (y = tg_iter_next(&in));) {
                fputc(' ', stdout);
                rc = tg_fprint(stdout, y);
            }
            fputc(')', stdout);
        } else {
            fputs(ink(R, INK_RULE), stdout);
            rc = tg_fprint(stdout, x);
            fputs(ink(R, TGM_PLAIN), stdout);
        }
    }
    return rc;
}

/* The profile term p as print_term prints it, its rewriter and rule
 * names in colour. */
static int print_profile(repl *R, tg_term *p)
{
    tg_term *rules = tg_symbol_cstr(R->ctx, "rules"), *never = tg_symbol_cstr(R->ctx, "never-fired");
    fputs("(profile", stdout);
    tg_iter it;
    tg_iter_init(&it, p);
    tg_iter_next(&it);
    int rc = 0, first = 1;
    for (tg_term *x; rc == 0 && (x = tg_iter_next(&it)); first = 0) {
        fputc(' ', stdout);
        if (first) {
            printf("%s", ink(R, INK_RULE));
            rc = tg_fprint(stdout, x);
            fputs(ink(R, TGM_PLAIN), stdout);
        } else if (tg_kind_of(x) == TG_PAIR && (tg_car(x) == rules || tg_car(x) == never)) {
            fputc('(', stdout);
            rc = tg_fprint(stdout, tg_car(x));
            if (rc == 0)
                rc = put_rules(R, x, 1, tg_car(x) == rules);
            fputc(')', stdout);
        } else {
            rc = tg_fprint(stdout, x);
        }
    }
    puts(")");
    return rc;
}

/* :profile rewrite: the last rewrite's timed profile, part by part. */
int tgM_profile_rewrite(repl *R)
{
    fflush(stdout);
    if (tg_rules_profile_print(R->rs, R->out) < 0) {
        tgM_complain(R, "%s", "no rewrite has run yet");
        return 1;
    }
    return 0;
}

static int cmd_profile(repl *R, const char *name, const char *args)
{
    static const char usage[] = "[eval | fn NAME | rewrite]";
    tg_term *t[2];
    int n = *args ? tgM_read_args(R, name, args, t, 1, 2, usage) : 0;
    if (n < 0)
        return 1;
    tg_term *what = n ? t[0] : NULL;
    if (what == tg_symbol_cstr(R->ctx, "eval") && n == 1)
        return tgM_profile_eval(R);
    if (what == tg_symbol_cstr(R->ctx, "fn") && n == 2)
        return tgM_profile_fn(R, t[1]);
    if (what == tg_symbol_cstr(R->ctx, "rewrite") && n == 1)
        return tgM_profile_rewrite(R);
    if (n) {
        tgM_complain(R, "usage: :profile %s", usage);
        return 1;
    }
    tg_term *p = tg_rules_profile(R->rs);
    if (!p) {
        tgM_complain(R, "%s", "no rewrite has run yet");
        return 1;
    }
    if (!(R->o->color & TGM_COLOR_OUT))
        tgM_show(R, p);
    else if (print_profile(R, p) < 0)
        tgM_complain(R, "%s", "out of memory printing");
    return 0;
}

static int cmd_tree(repl *R, const char *name, const char *args)
{
    tg_term *t;
    if (tgM_read_args(R, name, args, &t, 1, 1, "TERM") < 0)
        return 1;
    if (tgM_print_tree(stdout, t) < 0) {
        tgM_complain(R, "%s", "out of memory");
        return 1;
    }
    return 0;
}

/* The file named by t (a symbol or a string), malloc'd; NULL after
 * reporting usage. */
static char *file_name(repl *R, const tg_term *t, const char *usage)
{
    size_t len;
    const char *s = tg_kind_of(t) == TG_STRING ? tg_string_bytes(t, &len)
                    : tg_kind_of(t) == TG_SYMBOL ? tg_symbol_name(t, &len) : NULL;
    char *file = s ? strndup(s, len) : NULL;
    if (!file)
        tgM_complain(R, "%s", usage);
    return file;
}

static int cmd_dot(repl *R, const char *name, const char *args)
{
    tg_term *t[2];
    int n = tgM_read_args(R, name, args, t, 1, 2, "TERM [FILE]");
    if (n < 0)
        return 1;
    char *file = NULL;
    if (n == 2 && !(file = file_name(R, t[1], "usage: :dot TERM [FILE] (FILE a name or a string)")))
        return 1;
    R->at = n - 1;      /* cannot write FILE points at FILE */
    int rc = dot_to(R, t[0], file, write_dot);
    free(file);
    return rc;
}



/* Wait for Enter at the terminal; 0 to go on, 1 when q was typed (or
 * the input ended). */
static int step_pause(repl *R)
{
    if (!R->o->interactive)
        return 0;
    char *l = tgM_get_line(R, stdin, "  [Enter: next firing, q: stop] ");
    int stop = !l || l[0] == 'q';
    free(l);
    return stop;
}

/* ---- :step and the rewrite history --------------------------------------- */

/* One firing of a why term, (K RULE (pass P) POSITION BEFORE AFTER), on
 * a line as tg_rules_print_why writes it, its rule, before and after in
 * colour at a terminal; 0 or -1. */
static int print_firing(repl *R, tg_term *e)
{
    int64_t k = 0, pass = 0, in = 0;
    tg_int_get(tg_nth(e, 0), &k);
    tg_int_get(tg_nth(tg_nth(e, 2), 1), &pass);
    tg_term *pos = tg_nth(e, 3);
    int rc = 0;
    printf("  #%lld %s", (long long)k, ink(R, INK_RULE));
    rc |= tg_fprint(stdout, tg_nth(e, 1));
    printf("%s, pass %lld, ", ink(R, TGM_PLAIN), (long long)pass);
    if (tg_length(pos) == 2 && tg_car(pos) == tg_symbol_cstr(R->ctx, "in") &&
        tg_int_get(tg_nth(pos, 1), &in) == 0) {
        printf("in #%lld", (long long)in);
    } else {
        fputs("at ", stdout);
        rc |= tg_fprint(stdout, tg_cdr(R->ctx, pos));
    }
    printf(": %s", ink(R, INK_BEFORE));
    rc |= tg_fprint(stdout, tg_nth(e, 4));
    printf("%s => %s", ink(R, TGM_PLAIN), ink(R, INK_AFTER));
    rc |= tg_fprint(stdout, tg_nth(e, 5));
    printf("%s\n", ink(R, TGM_PLAIN));
    return rc;
}

/* Print the why term w of result r: a header line, then one firing a
 * line, each after the first waiting for Enter at a terminal. */
static int print_why(repl *R, tg_term *r, tg_term *w)
{
    int64_t logged = 0, total = 0;
    tg_int_get(tg_nth(tg_nth(w, 2), 1), &logged);
    tg_int_get(tg_nth(tg_nth(w, 2), 2), &total);
    size_t n = tg_length(w) - 3;
    fputs("why ", stdout);
    int rc = tg_fprint(stdout, r);
    printf(": %zu firing%s\n", n, n == 1 ? "" : "s");
    if (logged < total)
        printf("  (the log holds the first %lld of %lld firings: the chain may be cut short)\n",
               (long long)logged, (long long)total);
    tg_iter it;
    tg_iter_init(&it, w);
    for (int i = 0; i < 3; i++)
        tg_iter_next(&it);
    size_t i = 0;
    for (tg_term *e; rc == 0 && (e = tg_iter_next(&it)); i++) {
        rc = print_firing(R, e);
        fflush(stdout);
        if (i + 1 < n && step_pause(R))
            break;
    }
    return rc;
}

/* Where a :step's trace goes: each line "RULE: BEFORE => AFTER" becomes
 * a firing of the history (read back: printed terms read as the same
 * pointers), and goes on to the trace output when tracing was on. */
typedef struct capture {
    repl *R;
    FILE *echo;         /* the trace output the user asked for, or NULL */
    char *line;
    size_t n, cap;
    tg_term *firings;   /* newest first; reachable through R->hist too */
} capture;

static void capture_line(capture *c)
{
    repl *R = c->R;
    if (c->echo)
        fprintf(c->echo, "%.*s\n", (int)c->n, c->line);
    char *sep = NULL;
    for (size_t i = 0; i + 1 < c->n && !sep; i++)
        if (c->line[i] == ':' && c->line[i + 1] == ' ')
            sep = c->line + i;
    if (!sep)
        return;
    if (tg_length(c->firings) >= HISTORY_FIRINGS) {
        R->hist_dropped++;
        return;
    }
    tg_term *t[3] = {NULL, NULL, NULL}, *x;
    int k = 0;
    tg_reader *r = tg_reader_new(R->ctx, sep + 2, c->n - (size_t)(sep + 2 - c->line), NULL, NULL);
    while (r && k < 4 && tg_reader_next(r, &x, NULL) == 1)
        t[k < 3 ? k : 2] = x, k++;
    tg_reader_free(r);
    if (k != 3 || t[1] != tg_symbol_cstr(R->ctx, "=>"))
        return;
    tg_term *f[3] = {tg_string(R->ctx, c->line, (size_t)(sep - c->line)), t[0], t[2]};
    tg_term *firing = f[0] ? tg_list(R->ctx, 3, f, NULL) : NULL;
    tg_term *more = firing ? tg_cons(R->ctx, firing, c->firings) : NULL;
    if (more)
        c->firings = R->hist = more;
}

static ssize_t capture_write(void *cookie, const char *s, size_t n)
{
    capture *c = cookie;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\n') {
            capture_line(c);
            c->n = 0;
            continue;
        }
        if (c->n + 1 >= c->cap) {
            size_t cap = c->cap ? 2 * c->cap : 256;
            char *l = realloc(c->line, cap);
            if (!l)
                return -1;
            c->line = l, c->cap = cap;
        }
        c->line[c->n++] = s[i];
    }
    return (ssize_t)n;
}

static int capture_close(void *cookie)
{
    capture *c = cookie;
    if (c->n)
        capture_line(c);
    return 0;
}

/* The list l reversed (the firings in the order they fired). */
static tg_term *reversed(tg_ctx *ctx, tg_term *l)
{
    tg_term *r = tg_nil();
    tg_iter it;
    tg_iter_init(&it, l);
    for (tg_term *x; r && (x = tg_iter_next(&it));)
        r = tg_cons(ctx, x, r);
    return r;
}

/* :step [SPEC] TERM: rewrite (or normalize) TERM with provenance on and
 * its firings traced into the history, then show the firings the result
 * depends on one at a time (at a terminal, each after Enter): rule,
 * position, before and after. */
static int cmd_step(repl *R, const char *name, const char *args)
{
    tg_term *t[2];
    int n = tgM_read_args(R, name, args, t, 1, 2, "[REWRITER-OR-QUERY-OR-RULE] TERM");
    if (n < 0 || (n == 2 && !(t[0] = rule_spec(R, t[0]))))
        return 1;
    tg_error err;
    tg_error_clear(&err);
    int was = tg_rules_provenance(R->rs), tracing = tg_rules_tracing(R->rs);
    if (tg_rules_set_provenance(R->rs, 1, 0, &err) < 0) {
        tgM_report_here(R, &err);
        return 1;
    }
    capture c = {R, tracing ? R->out : NULL, NULL, 0, 0, tg_nil()};
    cookie_io_functions_t io = {NULL, capture_write, NULL, capture_close};
    FILE *f = fopencookie(&c, "w", io);
    R->hist = NULL, R->hist_dropped = 0, R->last_why = NULL;
    R->hist_start = t[n - 1];
    if (f)
        tg_rules_set_trace(R->rs, f, 1);
    tg_term *r = n == 2 ? tg_rewrite(R->rs, t[0], t[1], &err) : tg_normalize(R->rs, t[0], 0, &err);
    tg_rules_set_trace(R->rs, R->out, tracing);
    if (f)
        fclose(f);
    free(c.line);
    R->hist = reversed(R->ctx, c.firings);
    tg_term *w = r ? tg_rules_why(R->rs, r, &err) : NULL;
    int rc = 1;
    if (w && print_why(R, r, w) == 0) {
        R->last_why = w;
        tgM_show(R, r);
        rc = 0;
    } else {
        if (r && w)
            tg_error_set(&err, TG_ERR_NOMEM, "out of memory");
        R->hist = NULL;
        R->at = 0;      /* the first argument: the rewriter or the term */
        tgM_report_here(R, &err);
    }
    tg_rules_set_provenance(R->rs, was, 0, NULL);
    return rc;
}

/* The writers dot_to calls: t and the REPL (the last :step's history). */
static int history_of(FILE *out, const repl *R, int per_pass)
{
    tgM_history h = {R->ctx, R->hist_start, R->hist, R->last_why, R->hist_dropped};
    return tgM_write_history(out, &h, per_pass);
}

static int write_history_firing(FILE *out, tg_term *unused, void *R)
{
    (void)unused;
    return history_of(out, R, 0);
}

static int write_history_pass(FILE *out, tg_term *unused, void *R)
{
    (void)unused;
    return history_of(out, R, 1);
}

static int write_firings(FILE *out, tg_term *why, void *ud)
{
    (void)ud;
    return tgM_write_firings(out, why);
}

static int write_dot(FILE *out, tg_term *t, void *ud)
{
    (void)ud;
    return tgM_write_dot(out, t);
}

/* :history [firings|passes] [FILE]: the last :step as a Graphviz graph:
 * by default its whole-term snapshots, one per firing; passes: one per
 * pass; firings: the graph of the firings its result depends on. */
static int cmd_history(repl *R, const char *name, const char *args)
{
    tg_term *t[2];
    int n = *args ? tgM_read_args(R, name, args, t, 1, 2, "[firings|passes] [FILE]") : 0;
    if (n < 0)
        return 1;
    if (!R->last_why) {
        tgM_complain(R, "%s", "no rewrite history yet: :step a rewrite first");
        return 1;
    }
    int (*write)(FILE *, tg_term *, void *) = write_history_firing;
    if (n > 0 && (t[0] == tg_symbol_cstr(R->ctx, "firings") || t[0] == tg_symbol_cstr(R->ctx, "passes"))) {
        write = t[0] == tg_symbol_cstr(R->ctx, "passes") ? write_history_pass : write_firings;
        t[0] = t[1], n--;
    } else if (n == 2) {
        tgM_complain(R, "%s", "usage: :history [firings|passes] [FILE]");
        return 1;
    }
    char *file = NULL;
    if (n == 1 && !(file = file_name(R, t[0], "usage: :history [firings|passes] [FILE] (FILE a name or a string)")))
        return 1;
    R->at = R->nargpos - 1;     /* cannot write FILE points at FILE */
    int rc = dot_to(R, R->last_why, file, write);
    if (rc == 0 && file)
        fprintf(R->out, "wrote %s: %s\n", file,
                write == write_history_pass ? "the term after each pass of the last :step"
                : write == write_firings ? "the firings the last :step's result depends on"
                : "the term after each firing of the last :step");
    free(file);
    return rc;
}

static int cmd_quit(repl *R, const char *name, const char *args)
{
    (void)name, (void)args;
    R->quit = 1;
    return 0;
}

static const command *find_command(const char *name);

/* :help grad - gradients are a term, not a command */
static const char help_grad[] =
    "(grad COST WRT) is the derivative of COST, a 0-d float term, with respect to\n"
    "WRT, an (input ...) of it or any subterm, with WRT's shape and dtype.  It is\n"
    "accepted wherever a tensor term is (:eval, :fn, :let, inside another grad for\n"
    "second derivatives) and expanded before anything else by the vjp rules of\n"
    "grad.rules; rules (vjp NODE G) => (adjoints (ARG ADJ) ...) of the session are\n"
    "tried first.  The library's default rewriter (include \"all.rules\") has a\n"
    "stabilize rewriter: log(sigmoid x) becomes -softplus(-x), log(sum(exp x)) a\n"
    "logsumexp, and the gradients of those stay finite.  See doc/grad.md.\n"
    "    example: :eval (grad (sum (sqr (input x float64 (3))) all) (input x float64 (3))) (x (1 2 3))\n";

static int cmd_help(repl *R, const char *name, const char *args)
{
    (void)name;
    if (!strcmp(args, "grad") || !strcmp(args, "(grad")) {
        fputs(help_grad, stdout);
        return 0;
    }
    if (*args) {
        const command *c = find_command(args[0] == ':' ? args + 1 : args);
        if (!c) {
            tgM_complain(R, "no command :%s (:help lists them)", args[0] == ':' ? args + 1 : args);
            return 1;
        }
        printf(":%s %s\n    %s\n    example: %s\n", c->name, c->args, c->help, c->example);
        return 0;
    }
    puts("Type a form to evaluate it: (op ...), (rule ...), (normalize TERM),\n"
         "(rewrite NAME TERM), (defrel ...), (run N (q) GOAL...), or any term\n"
         "to see it back.  A form may span lines.  Commands:");
    for (const command *c = commands; c->name; c++)
        printf("  :%-10s %-24s %s\n", c->name, c->args, c->help);
    puts(":help COMMAND shows an example; :help grad explains gradients.");
    return 0;
}

static const command commands[] = {
    {"help", "[COMMAND]", "list the commands, or show one with an example", ":help rewrite", cmd_help},
    {"load", "FILE", "load a .rules file: its definitions all or nothing (every error reported), then its other forms in order", ":load examples/algebra.rules", cmd_load},
    {"reload", "FILE", "read a loaded file again: its new definitions replace its old ones, all or nothing (not those of the files it includes), then its other forms run",
     ":reload examples/algebra.rules", cmd_load},
    {"undef", "NAME", "remove the op, rule, rewriter, query, relation, :let name or shared variable NAME; refused while other definitions use it",
     ":undef add-zero", cmd_undef},
    {"ops", "", "list the declared ops", ":ops", cmd_list},
    {"rules", "", "list the rules", ":rules", cmd_list},
    {"rewriters", "", "list the rewriters (equilibrium, walk, sequence)", ":rewriters", cmd_list},
    {"relations", "", "list the relations with their arity", ":relations", cmd_list},
    {"rewrite", "SPEC TERM", "rewrite TERM with a rewriter, a query or a single rule", ":rewrite (query simplify (exclude div-self)) (true_div x x)", cmd_rewrite},
    {"step", "[SPEC] TERM", "rewrite TERM (or normalize it), then show its firings one at a time",
     ":step simplify (add 0 (neg (neg x)))", cmd_step},
    {"normalize", "TERM [memo]", "normal form of TERM under every rule", ":normalize (add (s z) (s z))", cmd_normalize},
    {"trace", "[on|off]", "print each rule firing, before and after", ":trace on", cmd_trace},
    {"profile", "[eval | fn NAME | rewrite]",
     "the profile of the last rewrite (as a term; rewrite: timed, rewriter by rewriter), of the last :eval's function or of a :fn function",
     ":profile fn step", cmd_profile},
    {"tree", "TERM", "show TERM as a tree, shared subterms named", ":tree (f (g a) (g a))", cmd_tree},
    {"dot", "TERM [FILE]", "TERM as Graphviz (.dot, or .svg/.png/.pdf)", ":dot (f (g a) (g a)) t.svg", cmd_dot},
    {"eval", "TERM (NAME VALUE)...", "compile a tensor term, (grad COST WRT) included, and run it on arrays (lists or .npy files); with a library loaded, rewritten as :mode says",
     ":eval (add (input x float64 (3)) 1) (x (1 2 3))", tgM_cmd_eval},
    {"history", "[firings|passes] [FILE]",
     "the last :step as Graphviz: the term after each firing (or pass), or the firings",
     ":history passes steps.svg", cmd_history},
    {"let", "NAME [TERM]", "let NAME stand for TERM in later :eval, :fn and :let terms; or print it",
     ":let r (sub (input x float64 (n)) 1)", tgM_cmd_let},
    {"var", "NAME [DTYPE VALUE]", "make or set a shared variable (a list, a .npy file or a term's value), or print it",
     ":var w float64 (mul 0.1 (random normal 7 (3 2) 0 1))", tgM_cmd_var},
    {"fn", "NAME (inputs ...) (outputs ...) [(updates ...)]",
     "compile a function that may read and update shared variables",
     ":fn step (inputs (input x float64 (2))) (outputs) (updates ((shared w float64 (2)) (add (shared w float64 (2)) (input x float64 (2)))))",
     tgM_cmd_fn},
    {"call", "NAME (X VALUE)...", "run a function :fn defined; print its outputs", ":call step (x (1 2))", tgM_cmd_call},
    {"repeat", "N NAME [(every K)] (X VALUE)...",
     "run it N times on the same arrays; print the last outputs (and those after every K calls); a progress bar at a terminal",
     ":repeat 1000 step (every 100) (x (1 2))", tgM_cmd_repeat},
    {"save", "NAME-OR-TERM FILE", "write a shared variable's value, or a term's, as a .npy file",
     ":save w \"w.npy\"", tgM_cmd_save},
    {"types", "[on|off]", ":eval shows its result's dtype and shape first", ":types on", cmd_types},
    {"shared", "[on|off]", "print repeated subterms once: X where *1 = ...", ":shared on", cmd_shared},
    /* modes and the checking mode of :eval (repl_tensor.c) */
    {"mode", "[fast_run|fast_compile|none]", "how :eval rewrites with a loaded library (default, canonicalize, nothing); or print it",
     ":mode fast_compile", tgM_cmd_mode},
    {"check", "[on [TOL]|off]", "run :eval's unrewritten graph beside it and name a rule that changed a value",
     ":check on 1e-9", tgM_cmd_check},
    {"quit", "", "leave (Ctrl-D too)", ":quit", cmd_quit},
    {NULL, NULL, NULL, NULL, NULL}
};

const char *tgM_command_name(size_t i)
{
    return i < sizeof commands / sizeof *commands ? commands[i].name : NULL;
}

static const command *find_command(const char *name)
{
    for (const command *c = commands; c->name; c++)
        if (!strcmp(c->name, name))
            return c;
    if (!strcmp(name, "q") || !strcmp(name, "exit"))
        return find_command("quit");
    if (!strcmp(name, "databases"))
        return find_command("rewriters");
    return NULL;
}

/* Run the command line (after its ':'), trimmed; 0 or 1 (an error). */
static int run_command(repl *R, char *line)
{
    char *p = line;
    while (*p && *p != ' ' && *p != '\t' && *p != '\n' && *p != '\r')
        p++;
    /* the entry again, blanks up to the arguments (columns stay right) */
    size_t off = (size_t)(p - line), all = strlen(line);
    char *blanked = malloc(all + (size_t)(line - R->entry) + 1);
    if (blanked) {
        memset(blanked, ' ', (size_t)(line - R->entry) + off);
        memcpy(blanked + (line - R->entry) + off, p, all - off + 1);
    }
    char *args = p;
    if (*p)
        *args++ = '\0';
    while (*args == ' ' || *args == '\t' || *args == '\n' || *args == '\r')
        args++;
    for (char *e = args + strlen(args); e > args && (e[-1] == ' ' || e[-1] == '\t' ||
                                                     e[-1] == '\n' || e[-1] == '\r');)
        *--e = '\0';
    const command *c = find_command(line);
    int rc = 1;
    R->argtext = blanked;
    R->at = -1, R->nargpos = 0;
    if (!c)
        tgM_complain(R, "unknown command :%s (:help lists them)", line);
    else
        rc = c->fn(R, c->name, args);
    R->argtext = NULL;
    R->at = -1, R->nargpos = 0;
    free(blanked);
    return rc;
}


typedef struct entry {
    char *text;
    size_t len, cap;
    int line;           /* the input line it starts on */
} entry;

static int entry_add(entry *e, const char *l)
{
    size_t n = strlen(l);
    if (e->len + n + 2 > e->cap) {
        size_t cap = (e->len + n + 2) * 2;
        char *t = realloc(e->text, cap);
        if (!t)
            return -1;
        e->text = t, e->cap = cap;
    }
    memcpy(e->text + e->len, l, n);
    e->len += n;
    e->text[e->len++] = '\n';
    e->text[e->len] = '\0';
    return 0;
}

static int blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r')
            return 0;
    return 1;
}

/* Evaluate one whole entry: a command or forms. */
static int run_entry(repl *R, entry *e)
{
    size_t i = 0;
    while (i < e->len && (e->text[i] == ' ' || e->text[i] == '\t'))
        i++;
    tgM_clear_interrupt();
    R->line = e->line;
    R->col = (int)i + 1;
    R->entry = e->text;
    int errors = e->text[i] == ':' ? run_command(R, e->text + i + 1)
                                   : eval_text(R, e->text, e->len, e->line);
    fflush(R->out);
    if (R->o->machine)
        puts(TGM_END);
    fflush(stdout);
    return errors != 0;
}

int tgM_repl(tg_ctx *ctx, tg_rules *rs, FILE *in, const char *name, const tgM_repl_opts *o,
             int *quit)
{
    repl R = {.ctx = ctx, .rs = rs, .o = o, .name = name, .shared = o->shared};
    entry e = {NULL, 0, 0, 1};
    tg_rules_set_timing(rs, 1);     /* :profile rewrite gives each rule's time */
    R.out = o->color & TGM_COLOR_OUT ? tgM_tint_open() : stdout;
    tgM_make_prompts(&R);
    int errors = 0, lineno = 0;
    tgM_term term;
    if (o->interactive) {
        tgM_term_open(&R, &term);
        printf("tgrel %s - :help lists the commands, Ctrl-D leaves\n", TG_VERSION);
    }
    for (;;) {
        char *l = tgM_get_line(&R, in, tgM_prompt(e.len != 0));
        if (tgM_interrupted() && o->interactive) {   /* Ctrl-C while typing: drop the entry */
            tgM_clear_interrupt();
            e.len = 0;
        }
        if (!l)
            break;
        lineno++;
        if (!e.len) {
            if (blank(l, strlen(l))) {
                free(l);
                continue;
            }
            e.line = lineno;
        }
        int oom = entry_add(&e, l) < 0;
        free(l);
        if (oom) {
            tgM_complain(&R, "%s", "out of memory");
            e.len = 0;
            errors++;
            continue;
        }
        if (tgM_incomplete(e.text, e.len))
            continue;
        tgM_history_add(&R, e.text, e.len);
        errors += run_entry(&R, &e);
        e.len = 0;
        if (R.quit)
            break;
    }
    if (e.len && !R.quit)      /* the input ended inside an entry: its error */
        errors += run_entry(&R, &e);
    if (o->interactive) {
        if (!R.quit)
            putchar('\n');
        tgM_term_close(&term);
    }
    free(e.text);
    tgM_free_fns(&R);
    tg_rules_set_trace(rs, stdout, tg_rules_tracing(rs));  /* the filter goes now */
    if (R.out != stdout)
        fclose(R.out);
    if (quit)
        *quit = R.quit;
    /* a person saw each error as it came: the session itself succeeded */
    return o->interactive ? 0 : errors;
}
