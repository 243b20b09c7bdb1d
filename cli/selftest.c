/* selftest.c - `tgrel --run-tests FILE.test...`, jq-style golden tests.
 *
 * A test file is a list of cases separated by blank lines.  The first line
 * of a case is the input text, read as the file "<test>" (so positions are
 * relative to that line); lines after it that start with a space or a tab
 * continue the input (a multi-line definition).  Each following line is
 * one expected output line: what evaluating the input prints (a term
 * echoed, or the answer list of a run), or "!error MESSAGE" for an error
 * whose formatted message (tg_error_format) is MESSAGE ("!error" alone
 * accepts any error).  Inputs are evaluated in one logic environment per
 * file, so relations defined by a case serve the cases after it.  A case
 * with no expected lines expects no output.  A line that is just "#" or starts with "# " (or "#" and a tab) is a comment;
 * other lines starting with "#" are data, so inputs like "#| c |# x" and
 * "#;a b" can be tested.  Results are TAP: "ok N - line L".
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "selftest.h"

typedef struct tcase {
    const char *file;       /* as given on the command line */
    int fileno;             /* index of the file */
    int line;               /* line of the input in that file */
    char *input;            /* malloc'd */
    const char **expect;
    size_t nexpect;
} tcase;

typedef struct cases {
    tcase *v;
    size_t n, cap;
} cases;

typedef struct lines {
    char **v;
    size_t n, cap;
} lines;

static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) {
        fputs("tgrel: out of memory\n", stderr);
        exit(2);
    }
    return q;
}

static char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(xrealloc(NULL, n), s, n);
}

char *tgM_print_term(const tg_term *t, int shared, size_t *len)
{
    return shared ? tg_print_shared(t, len) : tg_print(t, len);
}

static int is_comment(const char *s)
{
    return s[0] == '#' && (s[1] == '\0' || s[1] == ' ' || s[1] == '\t');
}

static int is_blank(const char *s)
{
    for (; *s; s++)
        if (*s != ' ' && *s != '\t')
            return 0;
    return 1;
}

/* Split text (NUL-terminated, modified in place) into cases. */
static void parse_cases(cases *cs, const char *file, int fileno, char *text)
{
    tcase *cur = NULL;
    int lineno = 0;
    char *p = text;
    while (*p) {
        char *line = p;
        char *nl = strchr(p, '\n');
        if (nl) {
            *nl = '\0';
            p = nl + 1;
        } else {
            p += strlen(p);
        }
        lineno++;
        size_t n = strlen(line);
        if (n && line[n - 1] == '\r')
            line[n - 1] = '\0';
        if (is_comment(line))
            continue;
        if (is_blank(line)) {
            cur = NULL;
            continue;
        }
        if (cur && cur->nexpect == 0 && (line[0] == ' ' || line[0] == '\t')) {
            size_t a = strlen(cur->input), b = strlen(line);
            cur->input = xrealloc(cur->input, a + b + 2);
            cur->input[a] = '\n';
            memcpy(cur->input + a + 1, line, b + 1);
            continue;
        }
        if (!cur) {
            if (cs->n == cs->cap) {
                cs->cap = cs->cap ? 2 * cs->cap : 64;
                cs->v = xrealloc(cs->v, cs->cap * sizeof *cs->v);
            }
            cur = &cs->v[cs->n++];
            cur->file = file;
            cur->fileno = fileno;
            cur->line = lineno;
            cur->input = xstrdup(line);
            cur->expect = NULL;
            cur->nexpect = 0;
        } else {
            cur->expect = xrealloc(cur->expect,
                                   (cur->nexpect + 1) * sizeof *cur->expect);
            cur->expect[cur->nexpect++] = line;
        }
    }
}

static void push_line(lines *ls, char *s)
{
    if (ls->n == ls->cap) {
        ls->cap = ls->cap ? 2 * ls->cap : 8;
        ls->v = xrealloc(ls->v, ls->cap * sizeof *ls->v);
    }
    ls->v[ls->n++] = s;
}

static char *error_line(const tg_error *err)
{
    char msg[1024];
    char *s = xrealloc(NULL, sizeof msg + 8);
    tg_error_format(err, msg, sizeof msg);
    snprintf(s, sizeof msg + 8, "!error %s", msg);
    return s;
}

typedef struct answers {
    FILE *out;
    size_t count;
    int oom;
} answers;

/* Each answer goes out as soon as it is found. */
static int put_answer(void *ud, tg_term *t)
{
    answers *a = ud;
    size_t n;
    char *s = tg_print(t, &n);
    if (!s)
        return a->oom = 1;
    fputc(a->count++ ? ' ' : '(', a->out);
    fwrite(s, 1, n, a->out);
    free(s);
    return 0;
}

int tgM_eval_print(tg_rules *env, tg_reader *r, tg_term *t, int shared, FILE *out, tg_error *err)
{
    answers a = { out, 0, 0 };
    tg_term *value = NULL;
    tg_rules_set_trace(env, out, tg_rules_tracing(env));
    int rc = r ? tg_rules_eval_read(env, r, t, put_answer, &a, &value, err)
               : tg_rules_eval(env, t, put_answer, &a, &value, err);
    if (rc == TG_EVAL_RUN && !a.oom) {
        fputs(a.count ? ")\n" : "()\n", out);
        return 0;
    }
    if (a.count)
        fputc('\n', out);      /* the answers found before the error */
    if (rc == TG_EVAL_VALUE) {
        size_t n;
        char *s = tgM_print_term(value, shared, &n);
        if (s) {
            fwrite(s, 1, n, out);
            fputc('\n', out);
            free(s);
            return 0;
        }
        a.oom = 1;
    }
    if (a.oom) {
        err->code = TG_ERR_NOMEM;
        err->line = err->column = 0;
        snprintf(err->message, sizeof err->message, "out of memory printing");
    }
    return rc < 0 || a.oom ? -1 : 0;
}

/* Push each line of text (the last one even without its newline). */
static void push_text(lines *out, const char *text, size_t len)
{
    while (len) {
        const char *nl = memchr(text, '\n', len);
        size_t n = nl ? (size_t)(nl - text) : len;
        char *line = xrealloc(NULL, n + 1);
        memcpy(line, text, n);
        line[n] = '\0';
        push_line(out, line);
        n += nl != NULL;
        text += n;
        len -= n;
    }
}

/* What the program prints for the case's input, line by line. */
static void run_input(tg_ctx *ctx, tg_rules *env, const tcase *c, int shared, lines *out)
{
    tg_error err;
    tg_error_clear(&err);
    tg_reader *r = tg_reader_new(ctx, c->input, strlen(c->input), "<test>", &err);
    if (!r) {
        push_line(out, error_line(&err));
        return;
    }
    /* A reader that stops advancing must not hang the test run. */
    size_t limit = c->nexpect + 16;
    for (;;) {
        tg_term *t = NULL;
        int rc = tg_reader_next(r, &t, &err);
        if (rc == 0)
            break;
        if (rc > 0) {
            char *text = NULL;
            size_t len = 0;
            FILE *f = open_memstream(&text, &len);
            if (!f) {
                push_line(out, xstrdup("!cannot capture output"));
                break;
            }
            int failed = tgM_eval_print(env, r, t, shared, f, &err) < 0;
            fclose(f);
            push_text(out, text, len);
            free(text);
            if (failed) {
                if (err.line == 0) {
                    tg_reader_last_pos(r, &err.line, &err.column);
                    snprintf(err.file, sizeof err.file, "<test>");
                }
                push_line(out, error_line(&err));
                tg_error_clear(&err);
            }
        } else {
            push_line(out, error_line(&err));
            tg_error_clear(&err);
        }
        if (out->n > limit) {
            push_line(out, xstrdup("!stopped: too many results"));
            break;
        }
    }
    tg_reader_free(r);
}

static int line_matches(const char *expect, const char *got)
{
    if (strcmp(expect, "!error") == 0)
        return strncmp(got, "!error ", 7) == 0;
    return strcmp(expect, got) == 0;
}

/* A diagnostic line; newlines in data would end the TAP comment. */
static void diag(const char *prefix, const char *s)
{
    fputs(prefix, stdout);
    for (; *s; s++) {
        if (*s == '\n')
            fputs("\\n", stdout);
        else if (*s == '\r')
            fputs("\\r", stdout);
        else
            putchar(*s);
    }
    putchar('\n');
}

static int case_passed(const tcase *c, const lines *got)
{
    if (got->n != c->nexpect)
        return 0;
    for (size_t i = 0; i < got->n; i++)
        if (!line_matches(c->expect[i], got->v[i]))
            return 0;
    return 1;
}

static void print_diff(const tcase *c, const lines *got)
{
    diag("#   input: ", c->input);
    diag("#   ", "(-expected +got)");
    size_t n = got->n > c->nexpect ? got->n : c->nexpect;
    for (size_t i = 0; i < n; i++) {
        const char *e = i < c->nexpect ? c->expect[i] : NULL;
        const char *g = i < got->n ? got->v[i] : NULL;
        if (e && g && line_matches(e, g)) {
            diag("#     ", g);
            continue;
        }
        if (e)
            diag("#   - ", e);
        if (g)
            diag("#   + ", g);
    }
}

int tgM_run_tests(tg_ctx *ctx, char *const *files, int nfiles, int shared)
{
    cases cs = { 0 };
    char **texts = xrealloc(NULL, (size_t)(nfiles > 0 ? nfiles : 1) * sizeof *texts);
    for (int i = 0; i < nfiles; i++) {
        tg_error err;
        char msg[1024];
        size_t len;
        tg_error_clear(&err);
        texts[i] = tg_slurp_file(files[i], &len, &err);
        if (!texts[i]) {
            /* The message names the file. */
            printf("Bail out! %s\n", tg_error_format(&err, msg, sizeof msg));
            return 1;
        }
        /* The text ends at the first NUL; a test file holds no NULs. */
        char *copy = xrealloc(NULL, len + 1);
        memcpy(copy, texts[i], len);
        copy[len] = '\0';
        free(texts[i]);
        texts[i] = copy;
        parse_cases(&cs, files[i], i, texts[i]);
    }
    tg_rules **envs = xrealloc(NULL, (size_t)(nfiles > 0 ? nfiles : 1) * sizeof *envs);
    for (int i = 0; i < nfiles; i++) {
        tg_error err;
        char msg[1024];
        if (!(envs[i] = tg_rules_new(ctx, &err))) {
            printf("Bail out! %s\n", tg_error_format(&err, msg, sizeof msg));
            return 1;
        }
        tg_rules_tensor_types(envs[i], 1, NULL);    /* as the REPL's */
    }

    printf("1..%zu\n", cs.n);
    fflush(stdout);
    int failed = 0;
    for (size_t i = 0; i < cs.n; i++) {
        const tcase *c = &cs.v[i];
        lines got = { 0 };
        run_input(ctx, envs[c->fileno], c, shared, &got);
        int ok = case_passed(c, &got);
        if (nfiles > 1)
            printf("%sok %zu - %s line %d\n", ok ? "" : "not ", i + 1,
                   c->file, c->line);
        else
            printf("%sok %zu - line %d\n", ok ? "" : "not ", i + 1, c->line);
        if (!ok) {
            print_diff(c, &got);
            failed++;
        }
        fflush(stdout);
        for (size_t k = 0; k < got.n; k++)
            free(got.v[k]);
        free(got.v);
    }
    if (failed)
        printf("# %d of %zu cases failed\n", failed, cs.n);

    for (size_t i = 0; i < cs.n; i++) {
        free(cs.v[i].expect);
        free(cs.v[i].input);
    }
    for (int i = 0; i < nfiles; i++)
        tg_rules_free(envs[i]);
    free(envs);
    free(cs.v);
    for (int i = 0; i < nfiles; i++)
        free(texts[i]);
    free(texts);
    return failed ? 1 : 0;
}
