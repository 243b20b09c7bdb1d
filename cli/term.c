/* term.c - the REPL at a terminal (prefix tgM_): the colouring filter of
 * standard output, the prompts, Ctrl-C (which interrupts the running
 * rewrite, query or compiled function, or drops the line being typed),
 * the history file, completion by context, and reading a line (from
 * readline or libedit at a terminal, else from the stream as it is).
 * repl.c runs the loop and the commands.
 */
#define _GNU_SOURCE     /* fopencookie, for the colouring filter */
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#if defined(HAVE_READLINE)
#include <readline/history.h>
#include <readline/readline.h>
#elif defined(HAVE_LIBEDIT)
#include <editline/readline.h>
#endif

#include "repl_int.h"
#include "term.h"

enum { HISTORY_MAX = 1000 };

static tg_rules *volatile sig_rules;   /* what Ctrl-C interrupts */
static tg_fn *volatile sig_fn;         /* ... and the compiled function running */
static volatile sig_atomic_t sig_reading, sig_hit;

/* ---- output ------------------------------------------------------------ */

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
FILE *tgM_tint_open(void)
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


static char prompt[64];     /* the first line's prompt (on_sigint shows it again) */
static char more[64];       /* the prompt of the lines that continue an entry */

/* The prompt text in buf (64 bytes), in colour when stdout has it;
 * readline is told that the escape codes take no room (\001 ... \002). */
static void make_prompt(const repl *R, char *buf, const char *text)
{
    if (R->o->color & TGM_COLOR_OUT)
        snprintf(buf, 64, "\001%s\002%s\001%s\002 ", INK_PROMPT, text, TGM_PLAIN);
    else
        snprintf(buf, 64, "%s ", text);
}

void tgM_make_prompts(const repl *R)
{
    make_prompt(R, prompt, "tgrel>");
    make_prompt(R, more, "  ...>");
}

const char *tgM_prompt(int continued)
{
    return continued ? more : prompt;
}

int tgM_interrupted(void)
{
    return sig_hit;
}

void tgM_clear_interrupt(void)
{
    sig_hit = 0;
}

int tgM_fn_call(tg_fn *fn, const tg_array *inputs, tg_array *outputs, tg_error *err)
{
    if (sig_hit) {  /* Ctrl-C between two calls of this entry (:repeat) */
        tg_error_set(err, TG_ERR_RANGE, "interrupted");
        return -1;
    }
    sig_fn = fn;
    int rc = tg_fn_call(fn, inputs, outputs, err);
    sig_fn = NULL;
    return rc;
}

static void on_sigint(int sig)
{
    (void)sig;
    sig_hit = 1;
    if (!sig_reading) {
        if (sig_rules)
            tg_rules_interrupt(sig_rules);
        if (sig_fn)
            tg_fn_interrupt(sig_fn);
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

/* What a word being completed may be: bits of these. */
enum {
    C_OPS = 1 << TG_LIST_OPS, C_RULES = 1 << TG_LIST_RULES,
    C_REWRITERS = 1 << TG_LIST_REWRITERS, C_RELATIONS = 1 << TG_LIST_RELATIONS,
    C_TERMS = C_OPS | C_RULES | C_REWRITERS,
    C_COMMANDS = 1 << 8,        /* a command name, after :help */
    C_FILES = 1 << 9,           /* a file name */
    C_STRING = 1 << 10          /* ... inside a string, which it closes */
};

/* The op, rule, rewriter and relation names of the rule set, of the
 * kinds in the mask. */
static tg_term *all_names(repl *R, unsigned kinds)
{
    tg_term *names = tg_nil();
    for (int k = TG_LIST_OPS; k <= TG_LIST_RELATIONS && names; k++) {
        if (!(kinds & (1u << k)))
            continue;
        tg_term *l = tg_rules_list(R->rs, (tg_list_kind)k, NULL);
        tg_iter it;
        tg_iter_init(&it, l ? l : tg_nil());
        for (tg_term *x; names && (x = tg_iter_next(&it));) {
            tg_term *nm = k == TG_LIST_RELATIONS ? tg_car(x) : tg_nth(x, 1);
            if (nm && tg_kind_of(nm) == TG_SYMBOL && !(k == TG_LIST_REWRITERS && tgM_hidden_rewriter(R, x)))
                names = tg_cons(R->ctx, nm, names);
        }
    }
    return names;
}

#if defined(HAVE_READLINE) || defined(HAVE_LIBEDIT)
/* A command name: ":NAME" for text ":...", NAME alone (after :help). */
static char *complete_command(const char *text, int state)
{
    static size_t c;
    if (!state)
        c = 0;
    int colon = text[0] == ':';
    size_t n = strlen(text + colon);
    for (const char *name; (name = tgM_command_name(c)); c++)
        if (!strncmp(name, text + colon, n)) {
            char *s = malloc(strlen(name) + 2);
            if (s)
                sprintf(s, "%s%s", colon ? ":" : "", name);
            c++;
            return s;
        }
    return NULL;
}

static unsigned complete_kinds;     /* what complete_name offers */

/* Is line[start] inside a "..." string: (include "...), a .npy file's
 * name, :save's and :dot's file? */
static int in_string(const char *line, int start)
{
    int in = 0;
    for (int i = 0; i < start; i++)
        if (in && line[i] == '\\' && i + 1 < start)
            i++;
        else if (line[i] == '"')
            in = !in;
        else if (!in && line[i] == ';')
            return 0;       /* a comment to the end of the line */
    return in;
}

static int word_is(const char *w, size_t n, const char *s)
{
    return strlen(s) == n && !strncmp(w, s, n);
}

/* What the word starting at line[start] may be, from what precedes it
 * on the line: a file name inside a string or after :load and :reload,
 * a command name after :help, a rewriter or rule as :rewrite's and :step's first argument
 * and (rewrite ...)'s, a relation inside a goal (the form is run, run*,
 * defrel or tabled), else the names a term holds: ops, rules, rewriters. */
static unsigned completion_context(const char *line, int start)
{
    const char *p = line, *end = line + start;
    if (in_string(line, start))
        return C_FILES | C_STRING;
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    if (p < end && *p == ':') {
        const char *cmd = p + 1;
        size_t cl = strcspn(cmd, " \t");
        const char *arg = cmd + cl;
        while (arg < end && (*arg == ' ' || *arg == '\t'))
            arg++;
        if (word_is(cmd, cl, "help"))
            return C_COMMANDS;
        if (word_is(cmd, cl, "load") || word_is(cmd, cl, "reload"))
            return C_FILES;
        if ((word_is(cmd, cl, "rewrite") || word_is(cmd, cl, "step")) && arg == end)
            return C_REWRITERS | C_RULES;
        if (word_is(cmd, cl, "undef"))
            return C_TERMS | C_RELATIONS;
        p = arg;
    }
    /* the head of the outermost list around the word, and whether the
     * word is that list's first argument */
    int depth = 0, args = 0;
    const char *head = NULL;
    size_t hl = 0;
    for (const char *q = p; q < end; q++) {
        if (*q == '(' || *q == '[') {
            if (++depth == 1)
                head = q + 1, hl = strcspn(head, " \t()[]"), args = 0;
        } else if (*q == ')' || *q == ']') {
            depth -= depth > 0;
        } else if (depth == 1 && (*q == ' ' || *q == '\t') && q + 1 < end && q[1] != ' ' && q[1] != '\t') {
            args++;
        }
    }
    if (depth >= 1 && head && (word_is(head, hl, "run") || word_is(head, hl, "run*") ||
                               word_is(head, hl, "defrel") || word_is(head, hl, "tabled")))
        return C_RELATIONS;
    if (depth == 1 && head && word_is(head, hl, "rewrite") && args == 1 && end[-1] == ' ')
        return C_REWRITERS | C_RULES;
    return C_TERMS;
}

static char *complete_name(const char *text, int state)
{
    static tg_iter it;
    if (!state) {
        complete_names = all_names(complete_repl, complete_kinds);
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
    rl_attempted_completion_over = 1;   /* no file names but where asked */
    int at = 0;
    while (at < start && (rl_line_buffer[at] == ' ' || rl_line_buffer[at] == '\t'))
        at++;
    if (at == start && text[0] == ':')
        return rl_completion_matches(text, complete_command);
    complete_kinds = completion_context(rl_line_buffer, start);
    if (complete_kinds & C_FILES) {
        rl_attempted_completion_over = 0;   /* readline's file names */
        if (complete_kinds & C_STRING)
            rl_completion_append_character = '"';
        return NULL;
    }
    if (complete_kinds == C_COMMANDS)
        return rl_completion_matches(text, complete_command);
    return rl_completion_matches(text, complete_name);
}
#endif

/* ---- input ------------------------------------------------------------------ */

/* The next line (malloc'd, without its newline), or NULL at the end. */
char *tgM_get_line(repl *R, FILE *in, const char *prompt)
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

/* ---- the session at a terminal -------------------------------------------- */

void tgM_term_open(repl *R, tgM_term *t)
{
    t->hist = NULL;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &t->old);
    sig_rules = R->rs;
    complete_repl = R;
#if defined(HAVE_READLINE) || defined(HAVE_LIBEDIT)
    rl_readline_name = "tgrel";
#if defined(HAVE_READLINE)
    rl_catch_signals = 0;   /* on_sigint handles Ctrl-C at the prompt */
#endif
    rl_attempted_completion_function = complete;
    rl_basic_word_break_characters = " \t\n()[]'`,\"";
    t->hist = history_path();
#if defined(HAVE_READLINE)
    /* an entry of several lines is one entry of the history file:
     * with time stamps, readline reads the lines between two stamps
     * back as one entry */
    history_write_timestamps = 1;
    history_multiline_entries = 1;
#endif
    if (t->hist) {
        read_history(t->hist);
        stifle_history(HISTORY_MAX);
    }
#endif
}

void tgM_history_add(const repl *R, char *text, size_t len)
{
#if defined(HAVE_READLINE) || defined(HAVE_LIBEDIT)
    if (R->o->interactive) {
        text[len - 1] = '\0';       /* the entry, without its last newline */
        add_history(text);
        text[len - 1] = '\n';
    }
#else
    (void)R, (void)text, (void)len;
#endif
}

void tgM_term_close(tgM_term *t)
{
#if defined(HAVE_READLINE) || defined(HAVE_LIBEDIT)
    if (t->hist)
        write_history(t->hist);
#endif
    sigaction(SIGINT, &t->old, NULL);
    sig_rules = NULL;
    complete_repl = NULL;
    free(t->hist);
    t->hist = NULL;
}
