/* repl.c - the read-eval-print loop of the tgrel program (prefix tgM_).
 *
 * Input comes a line at a time, from readline (or libedit) when a person
 * sits at a terminal, else from the stream as it is (a pipe, a script):
 * an entry is complete when its parentheses, strings and comments are
 * closed, so a form may span lines.  An entry that starts with `:` is a
 * command (commands[] below, each with its help text); anything else is
 * forms, evaluated in the rule set one after the other as the program
 * evaluates files.  Errors print and the loop goes on.  Ctrl-C at the
 * terminal interrupts the running rewrite or query (tg_rules_interrupt)
 * or drops the line being typed.  The tree and Graphviz views are here
 * too, with their own pointer set (the program links only the public
 * library).
 */
#define _GNU_SOURCE     /* fopencookie, for the colouring filter */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(HAVE_READLINE)
#include <readline/history.h>
#include <readline/readline.h>
#elif defined(HAVE_LIBEDIT)
#include <editline/readline.h>
#endif

#include "arrays.h"
#include "repl.h"
#include "selftest.h"

enum { HISTORY_MAX = 1000, TREE_DEPTH = 48, TREE_FLAT = 60, HISTORY_FIRINGS = 2000 };

/* Colours (SGR codes) of the terminal output. */
#define INK_RULE "\033[35m"
#define INK_BEFORE "\033[33m"
#define INK_AFTER "\033[32m"
#define INK_PROMPT "\033[1;34m"

static tg_rules *volatile sig_rules;   /* what Ctrl-C interrupts */
static volatile sig_atomic_t sig_reading, sig_hit;

typedef struct repl {
    tg_ctx *ctx;
    tg_rules *rs;
    const tgM_repl_opts *o;
    const char *name;       /* the input's name in errors */
    int line;               /* where the entry being run starts */
    const char *entry;      /* the text of the entry being run */
    tg_term *last_why;      /* the firings the last :step showed (for :history) */
    tg_term *hist_start;    /* the term the last :step rewrote */
    tg_term *hist;          /* its firings as traced: ("RULE" BEFORE AFTER) ... */
    size_t hist_dropped;    /* firings beyond HISTORY_FIRINGS, not kept */
    FILE *out;              /* standard output, or through the colouring filter */
    char *argtext;          /* a command's entry with the :name blanked out,
                             * so that its arguments read at their place */
    int shared;             /* :shared on */
    int quit;
} repl;

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

/* The colouring filter between the rule set's output (traces, the lines
 * of (why ...)) and standard output: a line that starts "NAME: " or
 * "NAME (reverse): " is a trace line, whose rule name it colours; any
 * other line passes as it comes (a run's answers print as they are
 * found), so only a possible rule name is held back. */
typedef struct tint {
    char name[256];
    size_t n;
    int pass;           /* the line is not a trace line: write through */
    int colon;          /* name then ':' seen; a space makes it a rule name */
} tint;

static const char reverse_tag[] = " (reverse)";

/* Could name (n bytes) start a trace line: a symbol, then maybe the
 * start of " (reverse)"? */
static int name_prefix(const char *name, size_t n)
{
    const char *sp = memchr(name, ' ', n);
    size_t k = sp ? (size_t)(sp - name) : n;
    if (k == 0)
        return 0;
    for (size_t i = 0; i < k; i++)
        if (strchr("()\"|;#'`,\t", name[i]))
            return 0;
    return n - k <= sizeof reverse_tag - 1 && !memcmp(name + k, reverse_tag, n - k);
}

static ssize_t tint_write(void *cookie, const char *s, size_t n)
{
    tint *c = cookie;
    for (size_t i = 0; i < n; i++) {
        char b = s[i];
        if (c->pass) {
            size_t j = i;
            while (j < n && s[j] != '\n')
                j++;
            fwrite(s + i, 1, j - i + (j < n), stdout);
            if (j < n)
                c->pass = 0, c->n = 0;
            i = j;
        } else if (c->colon) {
            const char *sp = memchr(c->name, ' ', c->n);
            int whole = !sp || (size_t)(c->name + c->n - sp) == sizeof reverse_tag - 1;
            if (b == ' ' && whole)
                fprintf(stdout, INK_RULE "%.*s" TGM_PLAIN ":", (int)c->n, c->name);
            else
                fprintf(stdout, "%.*s:", (int)c->n, c->name);
            c->colon = 0, c->pass = 1, i--;     /* the byte again, written through */
        } else if (b == ':' && c->n && name_prefix(c->name, c->n)) {
            c->colon = 1;
        } else {
            int room = b != '\n' && c->n < sizeof c->name;
            if (room)
                c->name[c->n] = b;
            if (room && name_prefix(c->name, c->n + 1)) {
                c->n++;
            } else {            /* not a trace line: what was held, then the rest */
                fwrite(c->name, 1, c->n, stdout);
                c->pass = 1, i--;
            }
        }
    }
    return (ssize_t)n;
}

static int tint_close(void *cookie)
{
    tint *c = cookie;
    fwrite(c->name, 1, c->n, stdout);
    if (c->colon)
        fputc(':', stdout);
    free(c);
    return 0;
}

/* Standard output through the colouring filter (unbuffered, so that it
 * keeps its order with what goes to stdout directly); stdout when the
 * filter cannot be made. */
static FILE *tint_open(void)
{
    tint *c = calloc(1, sizeof *c);
    cookie_io_functions_t io = {NULL, tint_write, NULL, tint_close};
    FILE *f = c ? fopencookie(c, "w", io) : NULL;
    if (!f) {
        free(c);
        return stdout;
    }
    setvbuf(f, NULL, _IONBF, 0);
    return f;
}

/* Report err at the entry's position when it has none of its own. */
static void report_here(const repl *R, tg_error *err)
{
    if (err->line == 0 && R->line > 0) {
        err->line = R->line, err->column = 1;
        snprintf(err->file, sizeof err->file, "%s", R->name);
    }
    report(R, err);
}

/* Report a message of the program itself (a command's usage, ...) at
 * the entry's position. */
static void complain(const repl *R, const char *fmt, const char *arg)
{
    tg_error err;
    tg_error_clear(&err);
    tg_error_set(&err, TG_ERR_ARG, fmt, arg);
    report_here(R, &err);
}

/* Print x to out; 0 or -1. */
static int put_term(FILE *out, const tg_term *x)
{
    char *s = tg_print(x, NULL);
    if (!s)
        return -1;
    fputs(s, out);
    free(s);
    return 0;
}

static void print_term(const repl *R, const tg_term *t)
{
    size_t n;
    char *s = tgM_print_term(t, R->shared, &n);
    if (!s) {
        complain(R, "%s", "out of memory printing");
        return;
    }
    fwrite(s, 1, n, R->out);
    fputc('\n', R->out);
    free(s);
}

/* ---- forms ------------------------------------------------------------- */

/* Evaluate and print one form read by r; 0, or 1 after reporting. */
static int eval_form(repl *R, tg_reader *r, tg_term *t)
{
    tg_error err;
    tg_error_clear(&err);
    if (tgM_eval_print(R->rs, r, t, R->shared, R->out, &err) == 0)
        return 0;
    if (err.line == 0) {
        tg_reader_last_pos(r, &err.line, &err.column);
        snprintf(err.file, sizeof err.file, "%s", R->name);
    }
    report(R, &err);
    return 1;
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
    R.out = o->color & TGM_COLOR_OUT ? tint_open() : stdout;
    int errors = eval_text(&R, text, len, line);
    tg_rules_set_trace(rs, stdout, tg_rules_tracing(rs));  /* the filter goes now */
    if (R.out != stdout)
        fclose(R.out);
    return errors;
}

/* The terms of a command's argument text: between min and max of them
 * into t[]; their number, or -1 after reporting. */
static int read_args(repl *R, const char *cmd, const char *text, tg_term **t, int min, int max,
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
        t[n++] = x;
    }
    tg_reader_free(r);
    if (n < min || n > max) {
        char msg[256];
        snprintf(msg, sizeof msg, "usage: :%s %s", cmd, usage);
        complain(R, "%s", msg);
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
        complain(R, "%s", "out of memory");
        return 1;
    }
    tg_error err;
    tg_error_clear(&err);
    if (tgM_eval_print(R->rs, NULL, form, R->shared, R->out, &err) == 0)
        return 0;
    report_here(R, &err);
    return 1;
}

/* ---- a pointer set (for the views) --------------------------------------- */

typedef struct pset {
    const void **k;
    size_t *v;
    size_t n, cap;
} pset;

static size_t ps_home(const void *p, size_t cap)
{
    uint64_t h = (uint64_t)(uintptr_t)p * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 32) & (cap - 1);
}

/* The slot of p (found or empty); grows first when needed; NULL on OOM. */
static size_t *ps_slot(pset *s, const void *p, int *found)
{
    if (2 * (s->n + 1) > s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 64;
        const void **k = calloc(cap, sizeof *k);
        size_t *v = calloc(cap, sizeof *v);
        if (!k || !v) {
            free(k), free(v);
            return NULL;
        }
        for (size_t i = 0; i < s->cap; i++)
            if (s->k[i]) {
                size_t j = ps_home(s->k[i], cap);
                while (k[j])
                    j = (j + 1) & (cap - 1);
                k[j] = s->k[i], v[j] = s->v[i];
            }
        free(s->k), free(s->v);
        s->k = k, s->v = v, s->cap = cap;
    }
    size_t i = ps_home(p, s->cap);
    while (s->k[i] && s->k[i] != p)
        i = (i + 1) & (s->cap - 1);
    *found = s->k[i] != NULL;
    if (!*found)
        s->k[i] = p, s->v[i] = 0, s->n++;
    return &s->v[i];
}

static void ps_free(pset *s)
{
    free(s->k), free(s->v);
}

/* A growable array of terms (malloc'd: the terms are held elsewhere). */
typedef struct tvec {
    tg_term **v;
    size_t n, cap;
} tvec;

static int tv_push(tvec *a, tg_term *t)
{
    if (a->n == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 64;
        tg_term **v = realloc(a->v, cap * sizeof *v);
        if (!v)
            return -1;
        a->v = v, a->cap = cap;
    }
    a->v[a->n++] = t;
    return 0;
}

/* Push the children of x (its elements, then a dotted tail) in reverse
 * order, so that they pop in order. */
static int push_children(tvec *a, tg_term *x, size_t from)
{
    size_t base = a->n;
    tg_iter it;
    tg_iter_init(&it, x);
    size_t i = 0;
    for (tg_term *e; (e = tg_iter_next(&it)); i++)
        if (i >= from && tv_push(a, e) < 0)
            return -1;
    if (tg_tail(x) != tg_nil() && tv_push(a, tg_tail(x)) < 0)
        return -1;
    for (size_t l = base, r = a->n; l + 1 < r; l++, r--) {
        tg_term *t = a->v[l];
        a->v[l] = a->v[r - 1], a->v[r - 1] = t;
    }
    return 0;
}

/* Count how often each compound subterm of t is met; subterms met again
 * are not entered again (an explicit stack: terms may be deep). */
static int count_uses(pset *s, tg_term *t)
{
    tvec st = {0};
    int rc = tv_push(&st, t);
    while (rc == 0 && st.n) {
        tg_term *x = st.v[--st.n];
        int found;
        size_t *c = tg_kind_of(x) == TG_PAIR ? ps_slot(s, x, &found) : NULL;
        if (tg_kind_of(x) != TG_PAIR)
            continue;
        if (!c)
            rc = -1;
        else if ((*c)++ == 0)
            rc = push_children(&st, x, 0);
    }
    free(st.v);
    return rc;
}

static int all_atoms(tg_term *x)
{
    if (tg_tail(x) != tg_nil())
        return 0;
    tg_iter it;
    tg_iter_init(&it, x);
    for (tg_term *e; (e = tg_iter_next(&it));)
        if (tg_kind_of(e) == TG_PAIR)
            return 0;
    return 1;
}

/* Print t (atoms and flat lists) after indent and prefix; 0 or -1. */
static int tree_line(FILE *out, size_t depth, const char *prefix, const tg_term *t)
{
    size_t n;
    char *s = t ? tg_print(t, &n) : NULL;
    if (t && !s)
        return -1;
    fprintf(out, "%*s%s%s\n", (int)(2 * depth), "", prefix, s ? s : "...");
    free(s);
    return 0;
}

/* The tree view of t: one node a line, children indented under their
 * head; a subterm met more than once is named *N where it is first shown
 * and written *N after that.  Lists of atoms that fit are shown flat.
 * Deeper than TREE_DEPTH levels shows "...". */
static int print_tree(FILE *out, tg_term *t)
{
    pset uses = {0}, names = {0};
    tvec st = {0};
    size_t *depth = NULL, capd = 0;
    size_t named = 0;
    int rc = count_uses(&uses, t);
    if (rc == 0)
        rc = tv_push(&st, t);
    while (rc == 0 && st.n) {
        if (capd < st.cap) {
            size_t *d = realloc(depth, st.cap * sizeof *d);
            if (!d) {
                rc = -1;
                break;
            }
            if (!depth)
                d[0] = 0;
            depth = d, capd = st.cap;
        }
        tg_term *x = st.v[--st.n];
        size_t d = depth[st.n];
        char prefix[32] = "";
        if (!x || tg_kind_of(x) != TG_PAIR) {
            rc = tree_line(out, d, "", x);
            continue;
        }
        int found;
        size_t *u = ps_slot(&uses, x, &found);
        size_t *nm = u && *u > 1 ? ps_slot(&names, x, &found) : NULL;
        if (u && *u > 1 && !nm) {
            rc = -1;
            break;
        }
        if (nm && found) {
            fprintf(out, "%*s*%zu\n", (int)(2 * d), "", *nm);
            continue;
        }
        if (nm)
            snprintf(prefix, sizeof prefix, "*%zu = ", *nm = ++named);
        tg_term *head = tg_car(x);
        if (all_atoms(x) && tg_length(x) <= TREE_FLAT / 4) {
            rc = tree_line(out, d, prefix, x);
            continue;
        }
        int atom_head = tg_kind_of(head) != TG_PAIR;
        if (atom_head) {
            rc = tree_line(out, d, prefix, head);
        } else {
            fprintf(out, "%*s%s(...)\n", (int)(2 * d), "", prefix);
        }
        size_t base = st.n;
        if (rc == 0)
            rc = d >= TREE_DEPTH ? tv_push(&st, NULL) : push_children(&st, x, atom_head);
        if (rc == 0 && st.cap > capd) {
            size_t *dd = realloc(depth, st.cap * sizeof *dd);
            if (!dd)
                rc = -1;
            else
                depth = dd, capd = st.cap;
        }
        for (size_t i = base; rc == 0 && i < st.n; i++)
            depth[i] = d + 1;
    }
    ps_free(&uses), ps_free(&names);
    free(st.v), free(depth);
    return rc;
}

/* ---- Graphviz ------------------------------------------------------------ */

/* Text as a dot label: quotes and backslashes escaped, cut after max
 * bytes. */
static void dot_text_max(FILE *out, const char *s, size_t n, size_t max)
{
    fputc('"', out);
    for (size_t i = 0; i < n && i < max; i++) {
        if (s[i] == '"' || s[i] == '\\')
            fputc('\\', out);
        fputc(s[i] == '\n' ? ' ' : s[i], out);
    }
    fputs(n > max ? "...\"" : "\"", out);
}

/* A term's text as a dot label: long texts cut after 40 bytes. */
static void dot_text(FILE *out, const char *s, size_t n)
{
    dot_text_max(out, s, n, 40);
}

/* t's printed text as a dot label (quotes and backslashes escaped, long
 * texts cut). */
static int dot_label(FILE *out, const tg_term *t)
{
    size_t n;
    char *s = tg_print(t, &n);
    if (!s)
        return -1;
    dot_text(out, s, n);
    free(s);
    return 0;
}

/* The id of x (dot node n<id>), made on first sight; a new node is
 * pushed on todo to be written. */
static long dot_id(pset *ids, tvec *todo, tg_term *x)
{
    int found;
    size_t *v = ps_slot(ids, x, &found);
    if (!v)
        return -1;
    if (!found) {
        *v = ids->n;
        if (tv_push(todo, x) < 0)
            return -1;
    }
    return (long)*v;
}

static int dot_nodes(FILE *out, pset *ids, tvec *todo);

/* t as a Graphviz digraph: one node per distinct subterm (hash-consing
 * makes shared subterms one node), edges to the arguments in order. */
static int write_dot(FILE *out, tg_term *t, void *ud)
{
    (void)ud;
    pset ids = {0};
    tvec todo = {0};
    int rc = dot_id(&ids, &todo, t) < 0 ? -1 : 0;
    fputs("digraph term {\n  ordering=out;\n  node [shape=box, fontname=\"monospace\"];\n", out);
    if (rc == 0)
        rc = dot_nodes(out, &ids, &todo);
    fputs("}\n", out);
    ps_free(&ids);
    free(todo.v);
    return rc;
}

/* Run Graphviz: dot -T<format> -o out in; 0, or -1 when it failed (127:
 * not installed). */
static int run_graphviz(const char *format, const char *in, const char *out)
{
    char T[32];
    snprintf(T, sizeof T, "-T%s", format);
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        execlp("dot", "dot", T, "-o", out, in, (char *)NULL);
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Write t as a Graphviz graph with write (write_dot, write_steps): to
 * standard output, a .dot file, or an image through Graphviz (.svg, .png,
 * .pdf). */
static int dot_to(repl *R, tg_term *t, const char *file, int (*write)(FILE *, tg_term *, void *))
{
    const char *ext = file ? strrchr(file, '.') : NULL;
    int image = ext && (!strcmp(ext, ".svg") || !strcmp(ext, ".png") || !strcmp(ext, ".pdf"));
    if (!file)
        return write(stdout, t, R) < 0 ? (complain(R, "%s", "out of memory"), 1) : 0;
    char tmp[] = "/tmp/tgrel-dot-XXXXXX";
    int fd = image ? mkstemp(tmp) : -1;
    FILE *f = image ? (fd >= 0 ? fdopen(fd, "w") : NULL) : fopen(file, "w");
    if (!f) {
        if (fd >= 0)
            close(fd), unlink(tmp);
        complain(R, "cannot write %s", image ? "a temporary file" : file);
        return 1;
    }
    int rc = write(f, t, R);
    if (fclose(f) != 0 || rc < 0) {
        if (image)
            unlink(tmp);
        complain(R, "cannot write %s", file);
        return 1;
    }
    if (!image)
        return 0;
    int st = run_graphviz(ext + 1, tmp, file);
    unlink(tmp);
    if (st == 127) {
        complain(R, "%s", "Graphviz is not installed (apt-get install graphviz); write a .dot file instead");
        return 1;
    }
    if (st != 0) {
        complain(R, "Graphviz failed to write %s", file);
        return 1;
    }
    return 0;
}

/* The firings of a why term (tg_rules_why: (why T (firings L N) (K RULE
 * (pass P) POS BEFORE AFTER) ...)) as a graph: one node per distinct term
 * met (hash-consing makes a firing's after and the next one's before one
 * node), an edge from before to after per firing, named by the firing. */
static int write_steps(FILE *out, tg_term *why)
{
    pset ids = {0};
    tvec todo = {0};
    int rc = 0;
    fputs("digraph history {\n  rankdir=LR;\n  node [shape=box, fontname=\"monospace\"];\n", out);
    tg_iter it;
    tg_iter_init(&it, why);
    for (tg_term *f; rc == 0 && (f = tg_iter_next(&it));) {
        if (tg_kind_of(f) != TG_PAIR || tg_length(f) != 6 || tg_kind_of(tg_car(f)) != TG_INT)
            continue;   /* the head, the term, the (firings ...) count */
        long ends[2];
        for (int k = 0; k < 2 && rc == 0; k++) {
            tg_term *x = tg_nth(f, 4 + (size_t)k);
            size_t before = ids.n;
            long id = dot_id(&ids, &todo, x);
            if (id < 0) {
                rc = -1;
                break;
            }
            ends[k] = id;
            if (ids.n != before) {      /* a new term: its node */
                fprintf(out, "  n%ld [label=", id);
                rc = dot_label(out, x);
                fputs("];\n", out);
            }
        }
        if (rc)
            break;
        int64_t k;
        tg_int_get(tg_car(f), &k);
        char *rule = tg_print(tg_nth(f, 1), NULL), *pos = tg_print(tg_nth(f, 3), NULL);
        if (!rule || !pos)
            rc = -1;
        else {
            char text[200];
            int n = snprintf(text, sizeof text, "#%lld %s %s", (long long)k, rule, pos);
            fprintf(out, "  n%ld -> n%ld [label=", ends[0], ends[1]);
            dot_text(out, text, n < 0 ? 0 : (size_t)n < sizeof text ? (size_t)n : sizeof text - 1);
            fputs("];\n", out);
        }
        free(rule), free(pos);
    }
    fputs("}\n", out);
    ps_free(&ids);
    free(todo.v);
    return rc;
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
static int hidden_rewriter(const repl *R, tg_term *x)
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
        complain(R, "%s", "out of memory");
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
    if (!hidden)
        report_here(R, &err);
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
        if (kind != TG_LIST_REWRITERS || !hidden_rewriter(R, x))
            print_term(R, x);
    return 0;
}

static int cmd_list(repl *R, const char *name, const char *args)
{
    if (*args) {
        complain(R, ":%s takes no argument", name);
        return 1;
    }
    tg_list_kind k = !strcmp(name, "ops") ? TG_LIST_OPS
                   : !strcmp(name, "rules") ? TG_LIST_RULES
                   : !strcmp(name, "relations") ? TG_LIST_RELATIONS : TG_LIST_REWRITERS;
    return print_list(R, k);
}

/* A file name: the text as it is, or a string term ("a b.rules"). */
static char *file_arg(repl *R, const char *args)
{
    if (*args != '"')
        return strdup(args);
    tg_term *t;
    if (read_args(R, "load", args, &t, 1, 1, "FILE") < 0)
        return NULL;
    size_t n;
    const char *s = tg_string_bytes(t, &n);
    return s ? strndup(s, n) : NULL;
}

static int cmd_load(repl *R, const char *name, const char *args)
{
    (void)name;
    if (!*args) {
        complain(R, "%s", "usage: :load FILE");
        return 1;
    }
    char *path = file_arg(R, args);
    if (!path)
        return 1;
    tg_error err;
    tg_error_clear(&err);
    int rc = tg_rules_load_file(R->rs, path, &err);
    if (rc < 0)
        report(R, &err);
    else if (!R->o->machine && R->o->interactive)
        printf("loaded %s\n", path);
    free(path);
    return rc < 0;
}

static int cmd_rewrite(repl *R, const char *name, const char *args)
{
    tg_term *t[2];
    if (read_args(R, name, args, t, 2, 2, "REWRITER-OR-QUERY-OR-RULE TERM") < 0)
        return 1;
    if (!(t[0] = rule_spec(R, t[0])))
        return 1;
    return eval_built(R, "rewrite", t, 2);
}

static int cmd_normalize(repl *R, const char *name, const char *args)
{
    tg_term *t[2];
    int n = read_args(R, name, args, t, 1, 2, "TERM [memo]");
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
    complain(R, "usage: :%s [on|off]", name);
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
            rc = put_term(stdout, tg_car(x));
            fputs(ink(R, TGM_PLAIN), stdout);
            tg_iter in;
            tg_iter_init(&in, x);
            tg_iter_next(&in);
            for (tg_term *y; rc == 0 && (y = tg_iter_next(&in));) {
                fputc(' ', stdout);
                rc = put_term(stdout, y);
            }
            fputc(')', stdout);
        } else {
            fputs(ink(R, INK_RULE), stdout);
            rc = put_term(stdout, x);
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
            rc = put_term(stdout, x);
            fputs(ink(R, TGM_PLAIN), stdout);
        } else if (tg_kind_of(x) == TG_PAIR && (tg_car(x) == rules || tg_car(x) == never)) {
            fputc('(', stdout);
            rc = put_term(stdout, tg_car(x));
            if (rc == 0)
                rc = put_rules(R, x, 1, tg_car(x) == rules);
            fputc(')', stdout);
        } else {
            rc = put_term(stdout, x);
        }
    }
    puts(")");
    return rc;
}

static int cmd_profile(repl *R, const char *name, const char *args)
{
    if (*args) {
        complain(R, ":%s takes no argument", name);
        return 1;
    }
    tg_term *p = tg_rules_profile(R->rs);
    if (!p) {
        complain(R, "%s", "no rewrite has run yet");
        return 1;
    }
    if (!(R->o->color & TGM_COLOR_OUT))
        print_term(R, p);
    else if (print_profile(R, p) < 0)
        complain(R, "%s", "out of memory printing");
    return 0;
}

static int cmd_tree(repl *R, const char *name, const char *args)
{
    tg_term *t;
    if (read_args(R, name, args, &t, 1, 1, "TERM") < 0)
        return 1;
    if (print_tree(stdout, t) < 0) {
        complain(R, "%s", "out of memory");
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
        complain(R, "%s", usage);
    return file;
}

static int cmd_dot(repl *R, const char *name, const char *args)
{
    tg_term *t[2];
    int n = read_args(R, name, args, t, 1, 2, "TERM [FILE]");
    if (n < 0)
        return 1;
    char *file = NULL;
    if (n == 2 && !(file = file_name(R, t[1], "usage: :dot TERM [FILE] (FILE a name or a string)")))
        return 1;
    int rc = dot_to(R, t[0], file, write_dot);
    free(file);
    return rc;
}

/* The distinct (input NAME DTYPE (SIZE ...)) subterms of t, in the
 * order met; their number, or -1 (too many, or out of memory). */
static int find_inputs(tg_ctx *ctx, tg_term *t, tg_term **in, int max)
{
    tg_term *input = tg_symbol_cstr(ctx, "input");
    tvec st = {0};
    pset seen = {0};
    int n = 0, rc = tv_push(&st, t);
    while (rc == 0 && st.n) {
        tg_term *x = st.v[--st.n];
        int found;
        if (tg_kind_of(x) != TG_PAIR)
            continue;
        size_t *c = ps_slot(&seen, x, &found);
        if (!c) {
            rc = -1;
        } else if (found) {
            continue;
        } else if (tg_car(x) == input) {
            if (n == max)
                rc = -1;
            else
                in[n++] = x;
        } else {
            rc = push_children(&st, x, 1);
        }
    }
    free(st.v);
    ps_free(&seen);
    return rc < 0 ? -1 : n;
}

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
    if (!s || dt < 0) {
        complain(R, "malformed input %s: (input NAME DTYPE (SIZE ...))", what);
        return 1;
    }
    for (int i = 0; i < nb; i++) {
        if (tg_kind_of(b[i]) != TG_PAIR || tg_length(b[i]) != 2 || tg_car(b[i]) != name)
            continue;
        tg_term *v = tg_nth(b[i], 1);
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
            complain(R, "%s", msg);
            return 1;
        }
        return 0;
    }
    complain(R, "no value for input %s: give (NAME VALUE) after the term", what);
    return 1;
}

/* :eval TERM (NAME VALUE) ...: compile TERM (the tensor vocabulary of
 * doc/kernels.md) and run it on the arrays given. */
static int cmd_eval(repl *R, const char *name, const char *args)
{
    tg_term *t[1 + MAX_INPUTS], *in[MAX_INPUTS];
    tg_array arr[MAX_INPUTS], out;
    int n = read_args(R, name, args, t, 1, 1 + MAX_INPUTS, "TERM (NAME VALUE-OR-\"FILE.npy\") ...");
    if (n < 0)
        return 1;
    int nin = find_inputs(R->ctx, t[0], in, MAX_INPUTS);
    if (nin < 0) {
        complain(R, "%s", "more than 32 inputs");
        return 1;
    }
    int rc = 0, made = 0;
    for (; made < nin && rc == 0; made++)
        rc = bind_input(R, in[made], t + 1, n - 1, &arr[made]);
    if (rc)
        made--;
    tg_fn *fn = NULL;
    tg_error err;
    tg_error_clear(&err);
    if (rc == 0 && !(fn = tg_fn_compile(R->ctx, (size_t)nin, in, 1, t, NULL, &err))) {
        report_here(R, &err);
        rc = 1;
    }
    memset(&out, 0, sizeof out);
    if (rc == 0 && tg_fn_call(fn, arr, &out, &err) < 0) {
        report_here(R, &err);
        rc = 1;
    }
    if (rc == 0) {
        tg_term *v = tgM_array_to_term(R->ctx, &out);
        if (v)
            print_term(R, v);
        else
            complain(R, "%s", "out of memory");
        rc = !v;
    }
    free(out.data);
    for (int i = 0; i < made; i++)
        free(arr[i].data);
    tg_fn_free(fn);
    return rc;
}

static char *get_line(repl *R, FILE *in, const char *prompt);

/* Wait for Enter at the terminal; 0 to go on, 1 when q was typed (or
 * the input ended). */
static int step_pause(repl *R)
{
    if (!R->o->interactive)
        return 0;
    char *l = get_line(R, stdin, "  [Enter: next firing, q: stop] ");
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
    rc |= put_term(stdout, tg_nth(e, 1));
    printf("%s, pass %lld, ", ink(R, TGM_PLAIN), (long long)pass);
    if (tg_length(pos) == 2 && tg_car(pos) == tg_symbol_cstr(R->ctx, "in") &&
        tg_int_get(tg_nth(pos, 1), &in) == 0) {
        printf("in #%lld", (long long)in);
    } else {
        fputs("at ", stdout);
        rc |= put_term(stdout, tg_cdr(R->ctx, pos));
    }
    printf(": %s", ink(R, INK_BEFORE));
    rc |= put_term(stdout, tg_nth(e, 4));
    printf("%s => %s", ink(R, TGM_PLAIN), ink(R, INK_AFTER));
    rc |= put_term(stdout, tg_nth(e, 5));
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
    int rc = put_term(stdout, r);
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
    int n = read_args(R, name, args, t, 1, 2, "[REWRITER-OR-QUERY-OR-RULE] TERM");
    if (n < 0 || (n == 2 && !(t[0] = rule_spec(R, t[0]))))
        return 1;
    tg_error err;
    tg_error_clear(&err);
    int was = tg_rules_provenance(R->rs), tracing = tg_rules_tracing(R->rs);
    if (tg_rules_set_provenance(R->rs, 1, 0, &err) < 0) {
        report_here(R, &err);
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
        print_term(R, r);
        rc = 0;
    } else {
        if (r && w)
            tg_error_set(&err, TG_ERR_NOMEM, "out of memory");
        R->hist = NULL;
        report_here(R, &err);
    }
    tg_rules_set_provenance(R->rs, was, 0, NULL);
    return rc;
}

/* A growable array of paths (element indices from the root). */
typedef struct path {
    size_t *v;
    size_t n, cap;
} path;

static int path_set(path *p, size_t depth, size_t index)
{
    if (depth >= p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 32;
        while (cap <= depth)
            cap *= 2;
        size_t *v = realloc(p->v, cap * sizeof *v);
        if (!v)
            return -1;
        p->v = v, p->cap = cap;
    }
    p->v[depth] = index;
    p->n = depth + 1;
    return 0;
}

/* The path of the first occurrence of b in s (depth first, arguments in
 * order) into p: 1 found, 0 not, -1 out of memory.  Explicit stacks: terms
 * may be deep; a shared subterm is searched once. */
static int find_path(tg_term *s, tg_term *b, path *p)
{
    tvec st = {0};
    uint64_t *meta = NULL;      /* depth << 32 | index, of each stacked term */
    size_t mcap = 0;
    pset seen = {0};
    int rc = tv_push(&st, s);
    if (rc == 0 && !(meta = malloc((mcap = 64) * sizeof *meta)))
        rc = -1;
    if (rc == 0)
        meta[0] = 0;
    while (rc == 0 && st.n) {
        tg_term *x = st.v[--st.n];
        uint64_t m = meta[st.n];
        size_t depth = (size_t)(m >> 32);
        if (depth && path_set(p, depth - 1, (size_t)(m & 0xffffffffu)) < 0) {
            rc = -1;
            break;
        }
        p->n = depth;
        if (x == b) {
            rc = 1;
            break;
        }
        int found;
        if (tg_kind_of(x) != TG_PAIR || !ps_slot(&seen, x, &found) || found) {
            if (tg_kind_of(x) == TG_PAIR && !ps_slot(&seen, x, &found))
                rc = -1;
            continue;
        }
        size_t base = st.n;
        if (push_children(&st, x, 0) < 0) {
            rc = -1;
            break;
        }
        if (st.cap > mcap) {
            uint64_t *mm = realloc(meta, st.cap * sizeof *mm);
            if (!mm) {
                rc = -1;
                break;
            }
            meta = mm, mcap = st.cap;
        }
        for (size_t i = base; i < st.n; i++)     /* pushed in reverse order */
            meta[i] = (uint64_t)(depth + 1) << 32 | (uint64_t)(st.n - 1 - i);
    }
    free(st.v), free(meta);
    ps_free(&seen);
    return rc;
}

/* s with every occurrence of b replaced by a (a DAG: hash-consed equal
 * subterms are one node, which one rewrite replaces everywhere).  The
 * new nodes are kept alive on *keep, a list on the caller's stack (the
 * collector does not scan the malloc'd memo).  NULL when out of memory. */
static tg_term *replace_all(tg_ctx *ctx, tg_term *s, tg_term *b, tg_term *a, tg_term **keep)
{
    pset memo = {0};
    tvec st = {0}, kids = {0};
    int rc = tv_push(&st, s), found;
    tg_term *result = NULL;
    while (rc == 0 && st.n) {
        tg_term *x = st.v[st.n - 1];
        size_t *m = ps_slot(&memo, x, &found);
        if (!m) {
            rc = -1;
            break;
        }
        if (found && *m) {          /* done already */
            st.n--;
            continue;
        }
        if (x == b || tg_kind_of(x) != TG_PAIR) {
            *m = (size_t)(uintptr_t)(x == b ? a : x);
            st.n--;
            continue;
        }
        /* children first: push the undone ones, come back when they are */
        kids.n = 0;
        if (push_children(&kids, x, 0) < 0) {
            rc = -1;
            break;
        }
        size_t before = st.n;
        for (size_t i = 0; i < kids.n && rc == 0; i++) {
            size_t *km = ps_slot(&memo, kids.v[i], &found);
            if (!km)
                rc = -1;
            else if (!*km)
                rc = tv_push(&st, kids.v[i]);
        }
        if (rc || st.n != before)
            continue;
        /* every child is done: x's copy (kids are in reverse order) */
        size_t nk = kids.n, ne = tg_length(x);
        for (size_t i = 0; i < nk / 2; i++) {
            tg_term *t = kids.v[i];
            kids.v[i] = kids.v[nk - 1 - i], kids.v[nk - 1 - i] = t;
        }
        for (size_t i = 0; i < nk && rc == 0; i++) {
            size_t *km = ps_slot(&memo, kids.v[i], &found);
            if (km)
                kids.v[i] = (tg_term *)(uintptr_t)*km;
            else
                rc = -1;
        }
        tg_term *y = rc ? NULL : tg_list(ctx, ne, kids.v, nk > ne ? kids.v[ne] : NULL);
        tg_term *k2 = y ? tg_cons(ctx, y, *keep) : NULL;
        if (!k2) {
            rc = -1;
            break;
        }
        *keep = k2;
        if (!(m = ps_slot(&memo, x, &found))) {
            rc = -1;
            break;
        }
        *m = (size_t)(uintptr_t)y;
        st.n--;
    }
    if (rc == 0) {
        size_t *m = ps_slot(&memo, s, &found);
        result = m ? (tg_term *)(uintptr_t)*m : NULL;
    }
    ps_free(&memo);
    free(st.v), free(kids.v);
    return result;
}

/* The nodes of the terms pushed on todo and not written yet, each with
 * edges to its arguments (written_dot's node format). */
static int dot_nodes(FILE *out, pset *ids, tvec *todo)
{
    int rc = 0;
    while (rc == 0 && todo->n) {
        tg_term *x = todo->v[--todo->n];
        long me = dot_id(ids, todo, x);
        int atom_head = tg_kind_of(x) == TG_PAIR && tg_kind_of(tg_car(x)) != TG_PAIR;
        fprintf(out, "  n%ld [label=", me);
        if (dot_label(out, tg_kind_of(x) != TG_PAIR ? x : atom_head ? tg_car(x) : tg_nil()) < 0)
            return -1;
        fputs(tg_kind_of(x) == TG_PAIR ? "];\n" : ", shape=plaintext];\n", out);
        if (tg_kind_of(x) != TG_PAIR)
            continue;
        tvec kids = {0};
        rc = push_children(&kids, x, atom_head);
        size_t nk = kids.n;
        for (size_t i = 0; rc == 0 && i < nk; i++) {
            long c = dot_id(ids, todo, kids.v[nk - 1 - i]);
            if (c < 0)
                rc = -1;
            else if (nk > 1)
                fprintf(out, "  n%ld -> n%ld [label=\"%zu\"];\n", me, c, i + 1);
            else
                fprintf(out, "  n%ld -> n%ld;\n", me, c);
        }
        free(kids.v);
    }
    return rc;
}

/* The history graph being written: the node ids of the terms met so far
 * (by address: every snapshot stays alive until the end, on keep) and
 * the number of the last snapshot. */
typedef struct hgraph {
    FILE *out;
    pset ids;
    tvec todo;
    size_t state;
} hgraph;

/* Snapshot node s<state> (label st) pointing at its whole term t, whose
 * nodes are written if new. */
static int hg_state(hgraph *h, const char *st, tg_term *t)
{
    long id = dot_id(&h->ids, &h->todo, t);
    if (id < 0)
        return -1;
    fprintf(h->out, "  s%zu [label=\"%s\", shape=ellipse, style=filled, fillcolor=lightyellow];\n",
            h->state, st);
    fprintf(h->out, "  s%zu -> n%ld [style=dashed, arrowhead=none];\n", h->state, id);
    return dot_nodes(h->out, &h->ids, &h->todo);
}

/* The next snapshot, t, labelled st, and the edge to it from the one
 * before, labelled label. */
static int hg_step(hgraph *h, const char *st, tg_term *t, const char *label)
{
    h->state++;
    if (hg_state(h, st, t) < 0)
        return -1;
    fprintf(h->out, "  s%zu -> s%zu [label=", h->state - 1, h->state);
    dot_text_max(h->out, label, strlen(label), 400);
    fputs(", color=blue, fontcolor=blue];\n", h->out);
    return 0;
}

/* The snapshot t after pass P, its edge naming the pass's n firings and
 * their rules. */
static int hg_pass(hgraph *h, int64_t pass, size_t n, const char *rules, tg_term *t)
{
    char label[400], st[32];
    snprintf(label, sizeof label, "pass %lld: %zu firing%s:%s", (long long)pass, n, n == 1 ? "" : "s",
             rules);
    snprintf(st, sizeof st, "pass %lld", (long long)pass);
    return hg_step(h, st, t, label);
}

/* Apply firing f ("RULE" BEFORE AFTER) to the snapshot *s: every
 * occurrence of BEFORE replaced, the path of the first in p, the new
 * snapshot kept alive on *keep.  1, 0 when BEFORE is not in *s (a firing
 * inside a right side being built), -1 out of memory. */
static int apply_firing(tg_ctx *ctx, tg_term **s, tg_term *f, path *p, tg_term **keep)
{
    int at = find_path(*s, tg_nth(f, 1), p);
    if (at <= 0)
        return at;
    tg_term *next = replace_all(ctx, *s, tg_nth(f, 1), tg_nth(f, 2), keep);
    tg_term *k = next ? tg_cons(ctx, next, *keep) : NULL;
    if (!k)
        return -1;
    *s = next, *keep = k;
    return 1;
}

/* "(at I ...)" for the path p. */
static void path_text(char *buf, size_t size, const path *p)
{
    size_t used = (size_t)snprintf(buf, size, "(at");
    for (size_t i = 0; i < p->n && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, " %zu", p->v[i]);
    if (used < size)
        snprintf(buf + used, size - used, ")");
}

/* The pass of each firing of the history, from the why term's firings
 * (a subsequence of the traced ones, with their passes); a firing the
 * result does not depend on is counted in the pass before it. */
static int64_t next_pass(tg_iter *why, tg_term **pending, tg_term *f, int64_t pass)
{
    if (!*pending)
        *pending = tg_iter_next(why);
    tg_term *e = *pending;
    if (e && tg_nth(e, 4) == tg_nth(f, 1) && tg_nth(e, 5) == tg_nth(f, 2)) {
        tg_int_get(tg_nth(tg_nth(e, 2), 1), &pass);
        *pending = NULL;
    }
    return pass;
}

/* The whole history of the last :step as a graph: the term it started
 * from and the whole term after each firing (per_pass: after each pass),
 * every distinct subterm one node however many snapshots hold it, and
 * an edge from each snapshot to the next labelled with the firing (rule
 * and position) or the pass (its firings and their rules).  Firings
 * inside a right side being built (their before is in no snapshot) are
 * counted in the next edge. */
static int write_snapshots(FILE *out, repl *R, int per_pass)
{
    hgraph h = {out, {0}, {0}, 0};
    path p = {0};
    tg_term *keep = tg_nil(), *s = R->hist_start, *pending = NULL;
    tg_iter fi, wi;
    tg_iter_init(&fi, R->hist);
    tg_iter_init(&wi, R->last_why);
    for (int i = 0; i < 3; i++)
        tg_iter_next(&wi);
    fputs("digraph history {\n  ordering=out;\n  node [shape=box, fontname=\"monospace\"];\n", out);
    int rc = hg_state(&h, "start", s);
    size_t k = 0, inner = 0, in_pass = 0;
    int64_t pass = 1, cur = 1;
    char rules[200] = "";
    for (tg_term *f; rc == 0 && (f = tg_iter_next(&fi));) {
        k++;
        pass = next_pass(&wi, &pending, f, pass);
        if (per_pass && pass != cur && in_pass) {
            rc = hg_pass(&h, cur, in_pass, rules, s);
            in_pass = 0, rules[0] = '\0';
        }
        cur = pass;
        int applied = rc ? -1 : apply_firing(R->ctx, &s, f, &p, &keep);
        if (applied <= 0) {
            inner += applied == 0;
            rc = applied < 0 ? -1 : 0;
            continue;
        }
        in_pass++;
        size_t rl;
        const char *rule = tg_string_bytes(tg_car(f), &rl);
        if (per_pass) {
            size_t used = strlen(rules);
            if (used + rl + 2 < sizeof rules && !strstr(rules, rule))
                snprintf(rules + used, sizeof rules - used, " %.*s", (int)rl, rule);
            continue;
        }
        char label[400], pos[120], st[32];
        path_text(pos, sizeof pos, &p);
        int n = snprintf(label, sizeof label, "#%zu %.*s %s", k, (int)(rl > 200 ? 200 : rl), rule, pos);
        if (inner)
            snprintf(label + n, sizeof label - (size_t)n, " (+%zu inside)", inner);
        inner = 0;
        snprintf(st, sizeof st, "#%zu", k);
        rc = hg_step(&h, st, s, label);
    }
    if (rc == 0 && per_pass && in_pass)
        rc = hg_pass(&h, cur, in_pass, rules, s);
    fputs("  { rank=same;", out);
    for (size_t i = 0; i <= h.state; i++)
        fprintf(out, " s%zu;", i);
    fputs(" }\n", out);
    if (R->hist_dropped)
        fprintf(out, "  // %zu later firings were not kept\n", R->hist_dropped);
    fputs("}\n", out);
    ps_free(&h.ids);
    free(h.todo.v), free(p.v);
    return rc;
}

static int write_history_firing(FILE *out, tg_term *unused, void *R)
{
    (void)unused;
    return write_snapshots(out, R, 0);
}

static int write_history_pass(FILE *out, tg_term *unused, void *R)
{
    (void)unused;
    return write_snapshots(out, R, 1);
}

static int write_steps_ud(FILE *out, tg_term *why, void *ud)
{
    (void)ud;
    return write_steps(out, why);
}

/* :history [firings|passes] [FILE]: the last :step as a Graphviz graph:
 * by default its whole-term snapshots, one per firing; passes: one per
 * pass; firings: the graph of the firings its result depends on. */
static int cmd_history(repl *R, const char *name, const char *args)
{
    tg_term *t[2];
    int n = *args ? read_args(R, name, args, t, 1, 2, "[firings|passes] [FILE]") : 0;
    if (n < 0)
        return 1;
    if (!R->last_why) {
        complain(R, "%s", "no rewrite history yet: :step a rewrite first");
        return 1;
    }
    int (*write)(FILE *, tg_term *, void *) = write_history_firing;
    if (n > 0 && (t[0] == tg_symbol_cstr(R->ctx, "firings") || t[0] == tg_symbol_cstr(R->ctx, "passes"))) {
        write = t[0] == tg_symbol_cstr(R->ctx, "passes") ? write_history_pass : write_steps_ud;
        t[0] = t[1], n--;
    } else if (n == 2) {
        complain(R, "%s", "usage: :history [firings|passes] [FILE]");
        return 1;
    }
    char *file = NULL;
    if (n == 1 && !(file = file_name(R, t[0], "usage: :history [firings|passes] [FILE] (FILE a name or a string)")))
        return 1;
    int rc = dot_to(R, R->last_why, file, write);
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

static int cmd_help(repl *R, const char *name, const char *args)
{
    (void)name;
    if (*args) {
        const command *c = find_command(args[0] == ':' ? args + 1 : args);
        if (!c) {
            complain(R, "no command :%s (:help lists them)", args[0] == ':' ? args + 1 : args);
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
    puts(":help COMMAND shows an example.");
    return 0;
}

static const command commands[] = {
    {"help", "[COMMAND]", "list the commands, or show one with an example", ":help rewrite", cmd_help},
    {"load", "FILE", "load a .rules file (all or nothing)", ":load examples/algebra.rules", cmd_load},
    {"ops", "", "list the declared ops", ":ops", cmd_list},
    {"rules", "", "list the rules", ":rules", cmd_list},
    {"rewriters", "", "list the rewriters (databases)", ":rewriters", cmd_list},
    {"relations", "", "list the relations with their arity", ":relations", cmd_list},
    {"rewrite", "SPEC TERM", "rewrite TERM with a rewriter, a query or a single rule", ":rewrite (query simplify (exclude div-self)) (true_div x x)", cmd_rewrite},
    {"step", "[SPEC] TERM", "rewrite TERM (or normalize it), then show its firings one at a time",
     ":step simplify (add 0 (neg (neg x)))", cmd_step},
    {"normalize", "TERM [memo]", "normal form of TERM under every rule", ":normalize (add (s z) (s z))", cmd_normalize},
    {"trace", "[on|off]", "print each rule firing, before and after", ":trace on", cmd_trace},
    {"profile", "", "the profile of the last rewrite", ":profile", cmd_profile},
    {"tree", "TERM", "show TERM as a tree, shared subterms named", ":tree (f (g a) (g a))", cmd_tree},
    {"dot", "TERM [FILE]", "TERM as Graphviz (.dot, or .svg/.png/.pdf)", ":dot (f (g a) (g a)) t.svg", cmd_dot},
    {"eval", "TERM (NAME VALUE)...", "compile a tensor term and run it on arrays (lists or .npy files)",
     ":eval (add (input x float64 (3)) 1) (x (1 2 3))", cmd_eval},
    {"history", "[firings|passes] [FILE]",
     "the last :step as Graphviz: the term after each firing (or pass), or the firings",
     ":history passes steps.svg", cmd_history},
    {"shared", "[on|off]", "print repeated subterms once: X where *1 = ...", ":shared on", cmd_shared},
    {"quit", "", "leave (Ctrl-D too)", ":quit", cmd_quit},
    {NULL, NULL, NULL, NULL, NULL}
};

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
    if (!c)
        complain(R, "unknown command :%s (:help lists them)", line);
    else
        rc = c->fn(R, c->name, args);
    R->argtext = NULL;
    free(blanked);
    return rc;
}

/* ---- the terminal: signals, history, completion -------------------------- */


static char prompt[64];     /* the first line's prompt (on_sigint shows it again) */

/* The prompt text in buf (64 bytes), in colour when stdout has it;
 * readline is told that the escape codes take no room (\001 ... \002). */
static void make_prompt(const repl *R, char *buf, const char *text)
{
    if (R->o->color & TGM_COLOR_OUT)
        snprintf(buf, 64, "\001%s\002%s\001%s\002 ", INK_PROMPT, text, TGM_PLAIN);
    else
        snprintf(buf, 64, "%s ", text);
}

static void on_sigint(int sig)
{
    (void)sig;
    sig_hit = 1;
    if (!sig_reading) {
        if (sig_rules)
            tg_rules_interrupt(sig_rules);
        return;
    }
#if defined(HAVE_READLINE)
    /* drop the line being typed and prompt again (what shells do) */
    if (write(STDOUT_FILENO, "\n", 1) < 0)
        return;
    rl_on_new_line();
    rl_replace_line("", 0);
    rl_set_prompt(prompt);      /* a continued entry is dropped too */
    rl_redisplay();
#endif
}

static char *history_path(void)
{
    const char *home = getenv("HOME");
    const char *file = getenv("TGREL_HISTORY");
    if (file)
        return *file ? strdup(file) : NULL;
    if (!home || !*home)
        return NULL;
    size_t n = strlen(home) + 32;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s/.tgrel_history", home);
    return p;
}

static repl *complete_repl;     /* the REPL completion draws names from */
static tg_term *complete_names; /* the names, gathered at a completion's start */

/* Every op, rule, rewriter and relation name of the rule set. */
static tg_term *all_names(repl *R)
{
    tg_term *names = tg_nil();
    for (int k = TG_LIST_OPS; k <= TG_LIST_RELATIONS && names; k++) {
        tg_term *l = tg_rules_list(R->rs, (tg_list_kind)k, NULL);
        tg_iter it;
        tg_iter_init(&it, l ? l : tg_nil());
        for (tg_term *x; names && (x = tg_iter_next(&it));) {
            tg_term *nm = k == TG_LIST_RELATIONS ? tg_car(x) : tg_nth(x, 1);
            if (nm && tg_kind_of(nm) == TG_SYMBOL && !(k == TG_LIST_REWRITERS && hidden_rewriter(R, x)))
                names = tg_cons(R->ctx, nm, names);
        }
    }
    return names;
}

#if defined(HAVE_READLINE) || defined(HAVE_LIBEDIT)
static char *complete_command(const char *text, int state)
{
    static const command *c;
    if (!state)
        c = commands;
    size_t n = strlen(text);
    for (; c->name; c++)
        if (text[0] == ':' && !strncmp(c->name, text + 1, n - 1)) {
            char *s = malloc(strlen(c->name) + 2);
            if (s)
                sprintf(s, ":%s", (c++)->name);
            return s;
        }
    return NULL;
}

static char *complete_name(const char *text, int state)
{
    static tg_iter it;
    if (!state) {
        complete_names = all_names(complete_repl);
        tg_iter_init(&it, complete_names ? complete_names : tg_nil());
    }
    size_t n = strlen(text);
    for (tg_term *x; (x = tg_iter_next(&it));) {
        size_t len;
        const char *s = tg_symbol_name(x, &len);
        if (len >= n && !strncmp(s, text, n))
            return strndup(s, len);
    }
    return NULL;
}

static char **complete(const char *text, int start, int end)
{
    (void)end;
    rl_attempted_completion_over = 1;   /* no file names */
    if (start == 0 && text[0] == ':')
        return rl_completion_matches(text, complete_command);
    return rl_completion_matches(text, complete_name);
}
#endif

/* ---- input ------------------------------------------------------------------ */

/* The next line (malloc'd, without its newline), or NULL at the end. */
static char *get_line(repl *R, FILE *in, const char *prompt)
{
#if defined(HAVE_READLINE) || defined(HAVE_LIBEDIT)
    if (R->o->interactive) {
        sig_reading = 1;
        char *l = readline(prompt);
        sig_reading = 0;
        return l;
    }
#endif
    (void)R, (void)prompt;
    char *l = NULL;
    size_t cap = 0;
    ssize_t n = getline(&l, &cap, in);
    if (n < 0) {
        free(l);
        return NULL;
    }
    if (n > 0 && l[n - 1] == '\n')
        l[--n] = '\0';
    return l;
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
    sig_hit = 0;
    R->line = e->line;
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
    R.out = o->color & TGM_COLOR_OUT ? tint_open() : stdout;
    char more[64];
    make_prompt(&R, prompt, "tgrel>");
    make_prompt(&R, more, "  ...>");
    int errors = 0, lineno = 0;
    char *hist = NULL;
    struct sigaction sa, old;
    if (o->interactive) {
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_sigint;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, &old);
        sig_rules = rs;
        complete_repl = &R;
#if defined(HAVE_READLINE) || defined(HAVE_LIBEDIT)
        rl_readline_name = "tgrel";
#if defined(HAVE_READLINE)
        rl_catch_signals = 0;   /* on_sigint handles Ctrl-C at the prompt */
#endif
        rl_attempted_completion_function = complete;
        rl_basic_word_break_characters = " \t\n()[]'`,\"";
        hist = history_path();
        if (hist) {
            read_history(hist);
            stifle_history(HISTORY_MAX);
        }
#endif
        printf("tgrel %s - :help lists the commands, Ctrl-D leaves\n", TG_VERSION);
    }
    for (;;) {
        char *l = get_line(&R, in, e.len ? more : prompt);
        if (sig_hit && o->interactive) {   /* Ctrl-C while typing: drop the entry */
            sig_hit = 0;
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
            complain(&R, "%s", "out of memory");
            e.len = 0;
            errors++;
            continue;
        }
        if (tgM_incomplete(e.text, e.len))
            continue;
#if defined(HAVE_READLINE) || defined(HAVE_LIBEDIT)
        if (o->interactive) {
            e.text[e.len - 1] = '\0';       /* the entry, without its last newline */
            add_history(e.text);
            e.text[e.len - 1] = '\n';
        }
#endif
        errors += run_entry(&R, &e);
        e.len = 0;
        if (R.quit)
            break;
    }
    if (e.len && !R.quit)      /* the input ended inside an entry: its error */
        errors += run_entry(&R, &e);
    if (o->interactive) {
#if defined(HAVE_READLINE) || defined(HAVE_LIBEDIT)
        if (hist)
            write_history(hist);
#endif
        if (!R.quit)
            putchar('\n');
        sigaction(SIGINT, &old, NULL);
        sig_rules = NULL;
        complete_repl = NULL;
    }
    free(hist);
    free(e.text);
    tg_rules_set_trace(rs, stdout, tg_rules_tracing(rs));  /* the filter goes now */
    if (R.out != stdout)
        fclose(R.out);
    if (quit)
        *quit = R.quit;
    /* a person saw each error as it came: the session itself succeeded */
    return o->interactive ? 0 : errors;
}
