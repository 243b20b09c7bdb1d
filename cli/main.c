/* main.c - the tgrel program: evaluates top-level forms from -e
 * arguments and files in one rule set (definitions print nothing, a run
 * prints its answer list as the answers come, a normal form or any other
 * term is printed back in canonical form), then runs the REPL (repl.c) on
 * standard input or a script; `--check` validates rule files,
 * `--run-tests` runs golden test files (selftest.c). */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/resource.h>
#include <unistd.h>

#include "repl.h"
#include "selftest.h"
#include "tgrel.h"

enum { EXIT_INPUT = 1, EXIT_USAGE = 2 };

/* One source of terms, in command-line order. */
typedef struct input {
    enum { IN_EXPR, IN_FILE, IN_STDIN, IN_SCRIPT } kind;
    const char *arg;
} input;

typedef struct options {
    int shared;             /* --shared: print with tg_print_shared */
    int run_tests;          /* --run-tests: arguments are .test files */
    int check;              /* --check: arguments are .rules files to validate */
    int machine;            /* --machine: for programs driving tgrel */
    int interactive;        /* -i: the REPL after the other inputs */
    enum { CACHE_NONE, CACHE_INFO, CACHE_CLEAR } cache;    /* --cache-info, --cache-clear */
    const char *max_heap;   /* --max-heap SIZE, else TGREL_MAX_HEAP */
    unsigned long long max_steps;   /* --max-steps N */
    int max_steps_set;
    double timeout;         /* --timeout SECONDS, 0: none */
    enum { COLOR_AUTO, COLOR_ALWAYS, COLOR_NEVER } color;   /* --color=WHEN */
    input *inputs;
    int ninputs;
    char **files;           /* positional arguments (for --run-tests) */
    int nfiles;
} options;

static const char usage_text[] =
    "usage: tgrel [OPTION]... [FILE]...\n"
    "       tgrel --check FILE.rules...\n"
    "       tgrel [--shared] --run-tests FILE.test...\n"
    "\n"
    "Evaluate top-level forms: (op ...) and (rule ...) define, (normalize\n"
    "TERM) and (rewrite NAME TERM) print a result, (defrel ...) defines a\n"
    "relation, (run ...) prints its answer list; any other term is printed\n"
    "back in canonical form.  Forms come from FILEs and -e arguments, in\n"
    "order; without any (or with -i after them) tgrel reads standard input:\n"
    "at a terminal it is the REPL (prompt, line editing, history, :help),\n"
    "from a pipe the same without a prompt.\n"
    "\n"
    "  -e, --expr EXPR   read terms from the text EXPR\n"
    "  -f, --file SCRIPT run SCRIPT as REPL input (forms and :commands)\n"
    "  -i, --interactive read standard input after the other inputs\n"
    "      --max-heap SIZE  stop a rewrite or search that needs more memory\n"
    "                    than SIZE (bytes, or with K, M, G) with an 'out of\n"
    "                    memory' error, before the machine swaps; the session\n"
    "                    goes on (also TGREL_MAX_HEAP; default: half the\n"
    "                    address space limit of ulimit -v, if any, else\n"
    "                    three quarters of the memory)\n"
    "      --max-steps N stop each normalize or rewrite after N rewrites with\n"
    "                    an error naming the rules that kept firing (0: no\n"
    "                    limit; default: none in the REPL at a terminal,\n"
    "                    10000000 otherwise)\n"
    "      --timeout SECONDS  the same after SECONDS of time (0: no limit,\n"
    "                    the default); a run's search too\n"
    "      --machine     for programs: no prompt, errors on standard output\n"
    "                    as '!error ...', the line ';;end' after each entry\n"
    "      --check       load each FILE as rules and report its errors\n"
    "      --shared      name repeated subterms: X where *1 = ...\n"
    "      --color[=WHEN]  colour errors, prompts, rule names and :step's\n"
    "                    before and after: auto (the default: at a terminal,\n"
    "                    unless NO_COLOR is set or TERM is dumb), always\n"
    "                    (also --color alone) or never; never with --machine\n"
    "      --cache-info  show the compile cache: directory, entries, size,\n"
    "                    limit ($TGREL_CACHE_MAX), hits and misses\n"
    "      --cache-clear remove the compile cache's entries\n"
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

/* A size in bytes: digits with an optional K, M or G (powers of 1024). */
static int parse_size(const char *s, size_t *out)
{
    char *end;
    if (*s < '0' || *s > '9')
        return -1;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    int shift = 0;
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    default: break;
    }
    if (errno || *end || v > (SIZE_MAX >> shift))
        return -1;
    *out = (size_t)v << shift;
    return 0;
}

/* Without a heap limit of its own, under a limit of the address space
 * (ulimit -v), the collector's heap is limited to half of it: past that
 * the collector still has room to work (the hash-cons table, the code,
 * the stacks take the rest), so a runaway rewrite fails with "out of
 * memory" and the session goes on, where at the edge of the address
 * space the abandoned terms could stay marked and every later entry fail. */
static void limit_heap_to_address_space(void)
{
    struct rlimit rl;
    tg_error err;
    tg_error_clear(&err);
    if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
        tg_set_max_heap((size_t)(rl.rlim_cur / 2), &err);   /* below 1 MiB: refused, no limit */
        return;
    }
    /* else three quarters of the memory: a runaway fails before the
     * machine swaps */
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    if (pages > 0 && psize > 0)
        tg_set_max_heap((size_t)pages / 4 * 3 * (size_t)psize, &err);
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
        } else if (strcmp(a, "-f") == 0 || strcmp(a, "--file") == 0) {
            if (i + 1 >= argc)
                return usage_error("option '%s' needs an argument", a);
            o->inputs[o->ninputs].kind = IN_SCRIPT;
            o->inputs[o->ninputs++].arg = argv[++i];
        } else if (strcmp(a, "-i") == 0 || strcmp(a, "--interactive") == 0) {
            o->interactive = 1;
        } else if (strcmp(a, "--max-heap") == 0) {
            if (i + 1 >= argc)
                return usage_error("option '%s' needs an argument", a);
            o->max_heap = argv[++i];
        } else if (strncmp(a, "--max-heap=", 11) == 0) {
            o->max_heap = a + 11;
        } else if (strcmp(a, "--max-steps") == 0 || strcmp(a, "--timeout") == 0) {
            if (i + 1 >= argc)
                return usage_error("option '%s' needs an argument", a);
            const char *v = argv[++i];
            char *end;
            errno = 0;
            if (a[2] == 'm') {
                o->max_steps = strtoull(v, &end, 10);
                o->max_steps_set = 1;
                if (errno || end == v || *end || *v == '-')
                    return usage_error("--max-steps takes a number of rewrites, not '%s'", v);
            } else {
                o->timeout = strtod(v, &end);
                if (errno || end == v || *end || !(o->timeout >= 0) || o->timeout > 1e9)
                    return usage_error("--timeout takes a number of seconds, not '%s'", v);
            }
        } else if (strcmp(a, "--machine") == 0) {
            o->machine = 1;
        } else if (strcmp(a, "--check") == 0) {
            o->check = 1;
        } else if (strcmp(a, "--color") == 0 || strcmp(a, "--color=always") == 0) {
            o->color = COLOR_ALWAYS;
        } else if (strcmp(a, "--color=never") == 0) {
            o->color = COLOR_NEVER;
        } else if (strcmp(a, "--color=auto") == 0) {
            o->color = COLOR_AUTO;
        } else if (strncmp(a, "--color=", 8) == 0) {
            return usage_error("--color takes auto, always or never, not '%s'", a + 8);
        } else if (strcmp(a, "--shared") == 0) {
            o->shared = 1;
        } else if (strcmp(a, "--cache-info") == 0 || strcmp(a, "--cache-clear") == 0) {
            o->cache = a[8] == 'i' ? CACHE_INFO : CACHE_CLEAR;
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
    if (!o->max_heap)
        o->max_heap = getenv("TGREL_MAX_HEAP");
    if (!o->max_heap || !*o->max_heap)
        limit_heap_to_address_space();
    else {
        size_t bytes;
        tg_error err;
        tg_error_clear(&err);
        if (parse_size(o->max_heap, &bytes) < 0 || tg_set_max_heap(bytes, &err) < 0)
            return usage_error("bad heap size '%s' (a number of bytes, or with K, M or G; "
                               "at least 1M; 0 for no limit)", o->max_heap);
    }
    if (o->run_tests && o->check)
        return usage_error("%s", "--run-tests and --check do not go together");
    if (o->cache && (o->ninputs || o->run_tests || o->check || o->interactive))
        return usage_error("%s", "--cache-info and --cache-clear take nothing else");
    if (o->run_tests || o->check) {
        const char *opt = o->run_tests ? "--run-tests" : "--check";
        if (o->ninputs != o->nfiles)
            return usage_error("%s takes files, not -e or -f", opt);
        if (o->nfiles == 0)
            return usage_error("%s needs at least one file", opt);
    } else if (o->ninputs == 0 || o->interactive) {
        o->inputs[o->ninputs].kind = IN_STDIN;
        o->inputs[o->ninputs++].arg = "-";
    }
    return -1;
}

/* Which of standard output and standard error get colour (TGM_COLOR_OUT,
 * TGM_COLOR_ERR): none for programs (--machine) or with --color=never;
 * both with --color=always; at a terminal otherwise, unless the user said
 * no (NO_COLOR, https://no-color.org) or the terminal cannot (TERM=dumb). */
static int color_of(const options *o)
{
    if (o->machine || o->color == COLOR_NEVER)
        return 0;
    if (o->color == COLOR_ALWAYS)
        return TGM_COLOR_OUT | TGM_COLOR_ERR;
    const char *no = getenv("NO_COLOR"), *term = getenv("TERM");
    if ((no && *no) || !term || !strcmp(term, "dumb"))
        return 0;
    return (isatty(STDOUT_FILENO) ? TGM_COLOR_OUT : 0) | (isatty(STDERR_FILENO) ? TGM_COLOR_ERR : 0);
}

/* Outside the REPL at a terminal (where Ctrl-C stops a rewrite) each
 * normalize or rewrite stops after this many rewrites unless --max-steps
 * says otherwise: a script with rules that never end fails instead of
 * spinning (doc/tgrel.1). */
#define DEFAULT_MAX_STEPS 10000000ull

static void set_limits(tg_rules *rs, const options *o, int interactive)
{
    unsigned long long steps = o->max_steps_set ? o->max_steps : interactive ? 0 : DEFAULT_MAX_STEPS;
    tg_rules_set_limits(rs, steps, o->timeout, NULL);
}

static void report(const tg_error *err, int color)
{
    char msg[1024];
    tg_error_format(err, msg, sizeof msg);
    if (color & TGM_COLOR_ERR)
        fprintf(stderr, "%s%s%s\n", TGM_RED, msg, TGM_PLAIN);
    else
        fprintf(stderr, "%s\n", msg);
}

/* Evaluate one input; returns the number of entries with errors. */
static int eval_input(tg_rules *rs, tg_ctx *ctx, const input *in, const options *o, int *quit)
{
    tg_error err;
    int errors;
    tgM_repl_opts ro = {0, o->machine, o->shared, color_of(o)};
    tg_error_clear(&err);
    set_limits(rs, o, in->kind == IN_STDIN && !o->machine && isatty(STDIN_FILENO));
    switch (in->kind) {
    case IN_EXPR:
        return tgM_eval_text(ctx, rs, in->arg, strlen(in->arg), NULL, 1, &ro);
    case IN_STDIN:
        ro.interactive = !o->machine && isatty(STDIN_FILENO);
        return tgM_repl(ctx, rs, stdin, "<stdin>", &ro, quit);
    case IN_SCRIPT: {
        FILE *f = fopen(in->arg, "r");
        if (!f) {
            tg_error_set(&err, TG_ERR_IO, "cannot open %s: %s", in->arg, strerror(errno));
            report(&err, color_of(o));
            return 1;
        }
        errors = tgM_repl(ctx, rs, f, in->arg, &ro, quit);
        fclose(f);
        return errors;
    }
    case IN_FILE:
        if (strcmp(in->arg, "-") == 0)
            return tgM_repl(ctx, rs, stdin, "<stdin>", &ro, quit);
        return tgM_load_file(ctx, rs, in->arg, &ro);
    }
    return 0;
}

/* --check: load each file into a rule set of its own. */
static int check_files(tg_ctx *ctx, const options *o)
{
    int errors = 0;
    for (int i = 0; i < o->nfiles; i++) {
        tg_error err;
        tg_error_clear(&err);
        tg_rules *rs = tg_rules_new(ctx, &err);
        if (!rs) {
            report(&err, color_of(o));
            errors++;
            continue;
        }
        tg_error errs[TGM_MAX_LOAD_ERRORS];
        long n = tg_rules_check_file(rs, o->files[i], errs, TGM_MAX_LOAD_ERRORS);
        for (long k = 0; k < n; k++)
            report(&errs[k], color_of(o));
        errors += n > 0;
        tg_rules_free(rs);
    }
    return errors ? EXIT_INPUT : 0;
}

/* ---- --cache-info, --cache-clear ---------------------------------------- */

static void put_size(uint64_t b)
{
    if (b < 10 * 1024)
        printf("%llu bytes", (unsigned long long)b);
    else if (b < 10 * 1024 * 1024)
        printf("%.1f KiB", (double)b / 1024);
    else
        printf("%.1f MiB", (double)b / (1024 * 1024));
}

static int cache_command(const options *o)
{
    char dir[4096];
    tg_cache_stats st;
    tg_error err;
    tg_error_clear(&err);
    if (tg_cache_dir(dir, sizeof dir) < 0) {
        tg_error_set(&err, TG_ERR_IO, "no cache directory (set TGREL_CACHE_DIR or HOME)");
        report(&err, color_of(o));
        return EXIT_INPUT;
    }
    if (o->cache == CACHE_CLEAR) {
        int rc = tg_cache_clear(&st, &err);
        printf("removed %zu entr%s (", st.entries, st.entries == 1 ? "y" : "ies");
        put_size(st.bytes);
        printf(") from %s\n", dir);
        if (rc < 0) {
            report(&err, color_of(o));
            return EXIT_INPUT;
        }
        return 0;
    }
    if (tg_cache_info(&st, &err) < 0) {
        report(&err, color_of(o));
        return EXIT_INPUT;
    }
    printf("directory: %s\n", dir);
    printf("entries: %zu (%zu compiled, %zu rewritten)\n", st.entries, st.code_entries, st.rewrite_entries);
    printf("size: ");
    put_size(st.bytes);
    if (st.max_bytes) {
        printf(" of at most ");
        put_size(st.max_bytes);
        printf(" (TGREL_CACHE_MAX)\n");
    } else {
        printf(", no limit (TGREL_CACHE_MAX unset)\n");
    }
    printf("compiled code: %llu hits, %llu misses\n", st.code_hits, st.code_misses);
    printf("rewritten graphs: %llu hits, %llu misses\n", st.rewrite_hits, st.rewrite_misses);
    printf("lock files: %zu, temporary files: %zu\n", st.locks, st.temporary);
    return 0;
}

static int run(const options *o)
{
    tg_error err;
    tg_error_clear(&err);
    tg_ctx *ctx = tg_ctx_new(&err);
    if (!ctx) {
        report(&err, color_of(o));
        return EXIT_INPUT;
    }
    int status;
    if (o->run_tests) {
        status = tgM_run_tests(ctx, o->files, o->nfiles, o->shared);
    } else if (o->check) {
        status = check_files(ctx, o);
    } else {
        int errors = 0;
        tg_rules *env = tg_rules_new(ctx, &err);
        if (env)
            tg_rules_tensor_types(env, 1, NULL);    /* typed guards see tensor types */
        if (!env) {
            report(&err, color_of(o));
            tg_ctx_free(ctx);
            return EXIT_INPUT;
        }
        int quit = 0;
        for (int i = 0; i < o->ninputs && !quit; i++)
            errors += eval_input(env, ctx, &o->inputs[i], o, &quit);
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
        status = o.cache ? cache_command(&o) : run(&o);
    free(o.inputs);
    free(o.files);
    return status;
}
