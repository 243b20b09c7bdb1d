/* main.c - the tgrel program: reads top-level forms (from -e arguments,
 * files or standard input) and evaluates them in one logic environment:
 * definitions print nothing, a run prints its answer list (each answer as
 * soon as it is found), any other term is printed back in canonical form;
 * `--run-tests` runs golden test files (selftest.c).  The REPL comes
 * here later. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "selftest.h"
#include "tgrel.h"

enum { EXIT_INPUT = 1, EXIT_USAGE = 2 };

/* One source of terms, in command-line order. */
typedef struct input {
    enum { IN_EXPR, IN_FILE, IN_STDIN } kind;
    const char *arg;
} input;

typedef struct options {
    int shared;             /* --shared: print with tg_print_shared */
    int run_tests;          /* --run-tests: arguments are .test files */
    input *inputs;
    int ninputs;
    char **files;           /* positional arguments (for --run-tests) */
    int nfiles;
} options;

static const char usage_text[] =
    "usage: tgrel [--shared] [-e EXPR]... [FILE]...\n"
    "       tgrel [--shared] --run-tests FILE.test...\n"
    "\n"
    "Evaluate top-level forms: (defrel ...) defines a relation, (run ...)\n"
    "and (run* ...) print their answer list, any other term is printed\n"
    "back in canonical form, one per line.  Forms come from -e arguments\n"
    "and files, in order, or from standard input when there are none (or\n"
    "from the FILE '-').\n"
    "\n"
    "  -e, --expr EXPR   read terms from the text EXPR\n"
    "      --shared      name repeated subterms: X where *1 = ...\n"
    "      --run-tests   run test files: cases separated by blank lines,\n"
    "                    an input line then the expected output lines\n"
    "                    ('!error MESSAGE' for a read error); prints TAP\n"
    "  -h, --help        show this help and exit\n"
    "      --version     show the version and exit\n"
    "\n"
    "Exit status: 0 on success, 1 when some input had errors (or a test\n"
    "failed), 2 on a usage error.\n";

static int usage_error(const char *fmt, const char *arg)
{
    fputs("tgrel: ", stderr);
    fprintf(stderr, fmt, arg);
    fputs("\nTry 'tgrel --help' for more information.\n", stderr);
    return EXIT_USAGE;
}

/* Fill o from argv; returns -1 when the program should go on, else the
 * exit status (after --help, --version or a usage error). */
static int parse_args(int argc, char **argv, options *o)
{
    int only_files = 0;
    o->inputs = calloc((size_t)argc + 1, sizeof *o->inputs);
    o->files = calloc((size_t)argc + 1, sizeof *o->files);
    if (!o->inputs || !o->files) {
        fputs("tgrel: out of memory\n", stderr);
        return EXIT_INPUT;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (only_files || a[0] != '-' || strcmp(a, "-") == 0) {
            o->files[o->nfiles++] = argv[i];
            o->inputs[o->ninputs].kind = strcmp(a, "-") ? IN_FILE : IN_STDIN;
            o->inputs[o->ninputs++].arg = a;
        } else if (strcmp(a, "--") == 0) {
            only_files = 1;
        } else if (strcmp(a, "-e") == 0 || strcmp(a, "--expr") == 0) {
            if (i + 1 >= argc)
                return usage_error("option '%s' needs an argument", a);
            o->inputs[o->ninputs].kind = IN_EXPR;
            o->inputs[o->ninputs++].arg = argv[++i];
        } else if (strncmp(a, "-e", 2) == 0) {
            o->inputs[o->ninputs].kind = IN_EXPR;
            o->inputs[o->ninputs++].arg = a + 2;
        } else if (strncmp(a, "--expr=", 7) == 0) {
            o->inputs[o->ninputs].kind = IN_EXPR;
            o->inputs[o->ninputs++].arg = a + 7;
        } else if (strcmp(a, "--shared") == 0) {
            o->shared = 1;
        } else if (strcmp(a, "--run-tests") == 0) {
            o->run_tests = 1;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            fputs(usage_text, stdout);
            return 0;
        } else if (strcmp(a, "--version") == 0) {
            printf("tgrel %s\n", TG_VERSION);
            return 0;
        } else {
            return usage_error("unknown option '%s'", a);
        }
    }
    if (o->run_tests) {
        if (o->ninputs != o->nfiles)
            return usage_error("%s", "--run-tests takes test files, not -e");
        if (o->nfiles == 0)
            return usage_error("%s", "--run-tests needs at least one test file");
    } else if (o->ninputs == 0) {
        o->inputs[0].kind = IN_STDIN;
        o->inputs[0].arg = "-";
        o->ninputs = 1;
    }
    return -1;
}

/* All of a stream, however long, in a malloc'd buffer. */
static char *read_stream(FILE *f, size_t *len)
{
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap)
            break;
        char *bigger = cap <= SIZE_MAX / 2 ? realloc(buf, cap * 2) : NULL;
        if (!bigger) {
            free(buf);
            return NULL;
        }
        buf = bigger;
        cap *= 2;
    }
    if (buf && ferror(f)) {
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

static void report(const tg_error *err)
{
    char msg[1024];
    fprintf(stderr, "%s\n", tg_error_format(err, msg, sizeof msg));
}

/* Evaluate t, printing to stdout; returns 0, or 1 after reporting an
 * error at the form's position. */
static int eval_print(tg_rules *env, tg_reader *r, const char *name, tg_term *t, const options *o)
{
    tg_error err;
    tg_error_clear(&err);
    if (tgM_eval_print(env, r, name ? name : "<string>", t, o->shared, stdout, &err) == 0)
        return 0;
    if (err.line == 0) {
        tg_reader_last_pos(r, &err.line, &err.column);
        snprintf(err.file, sizeof err.file, "%s", name ? name : "<string>");
    }
    fflush(stdout);
    report(&err);
    return 1;
}

/* Read and evaluate every form of text; returns the number of errors. */
static int echo_terms(tg_rules *env, tg_ctx *ctx, const char *text, size_t len,
                      const char *name, const options *o)
{
    tg_error err;
    int errors = 0;
    tg_error_clear(&err);
    tg_reader *r = tg_reader_new(ctx, text, len, name, &err);
    if (!r) {
        report(&err);
        return 1;
    }
    for (;;) {
        tg_term *t = NULL;
        int rc = tg_reader_next(r, &t, &err);
        if (rc == 0)
            break;
        if (rc < 0) {
            report(&err);
            tg_error_clear(&err);
            errors++;
            continue;
        }
        errors += eval_print(env, r, name, t, o);
    }
    tg_reader_free(r);
    return errors;
}

static int echo_input(tg_rules *env, tg_ctx *ctx, const input *in, const options *o)
{
    tg_error err;
    size_t len = 0;
    char *text;
    int errors;
    tg_error_clear(&err);
    switch (in->kind) {
    case IN_EXPR:
        return echo_terms(env, ctx, in->arg, strlen(in->arg), NULL, o);
    case IN_STDIN:
        text = read_stream(stdin, &len);
        if (!text) {
            fputs("tgrel: cannot read standard input\n", stderr);
            return 1;
        }
        errors = echo_terms(env, ctx, text, len, "<stdin>", o);
        free(text);
        return errors;
    case IN_FILE:
        text = tg_slurp_file(in->arg, &len, &err);
        if (!text) {
            report(&err);
            return 1;
        }
        errors = echo_terms(env, ctx, text, len, in->arg, o);
        free(text);
        return errors;
    }
    return 0;
}

static int run(const options *o)
{
    tg_error err;
    tg_error_clear(&err);
    tg_ctx *ctx = tg_ctx_new(&err);
    if (!ctx) {
        report(&err);
        return EXIT_INPUT;
    }
    int status;
    if (o->run_tests) {
        status = tgM_run_tests(ctx, o->files, o->nfiles, o->shared);
    } else {
        int errors = 0;
        tg_rules *env = tg_rules_new(ctx, &err);
        if (!env) {
            report(&err);
            tg_ctx_free(ctx);
            return EXIT_INPUT;
        }
        for (int i = 0; i < o->ninputs; i++)
            errors += echo_input(env, ctx, &o->inputs[i], o);
        tg_rules_free(env);
        status = errors ? EXIT_INPUT : 0;
    }
    tg_ctx_free(ctx);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fputs("tgrel: error writing standard output\n", stderr);
        status = EXIT_INPUT;
    }
    return status;
}

int main(int argc, char **argv)
{
    options o = { 0 };
    int status = parse_args(argc, argv, &o);
    if (status < 0)
        status = run(&o);
    free(o.inputs);
    free(o.files);
    return status;
}
