/* test_repl_term.c - the REPL at a terminal, in its normal mode, where
 * tests/doc/docs.sh sees it in --machine mode: the tutorial's transcripts
 * typed at a pseudo-terminal (what a person sees, "loaded FILE" after
 * :load included), an entry of several lines recalled whole from the
 * history of an earlier session, and completion by context (file names
 * after :load and :reload and inside strings).  The
 * program is $TGREL, the tutorial $srcdir/doc/tutorial.md. */
#define _XOPEN_SOURCE 700
#define _DEFAULT_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

#include "cli/pty.h"

/* Start prog in directory dir on a new pseudo-terminal 400 columns wide
 * (no line of the tutorial wraps), TERM=dumb, no colour, history in
 * file history; its master side, or -1. */
static int spawn(const char *prog, const char *dir, const char *history, pid_t *pid)
{
    pty_opts o = {dir, "dumb", "1", 400};
    return pty_spawn(prog, history, &o, pid);
}

/* Leave with Ctrl-D (the prompt shown) and wait for the program: its
 * wait status, -1 when it had to be killed. */
static int leave(int fd, pid_t pid)
{
    type(fd, "\x04");
    int status = -1;
    long end = now_ms() + WAIT_MS;
    while (now_ms() < end && waitpid(pid, &status, WNOHANG) == 0) {
        char buf[256];
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 100) > 0 && read(fd, buf, sizeof buf) <= 0)
            usleep(10 * 1000);
    }
    if (status == -1) {
        int killed;
        kill(pid, SIGKILL), waitpid(pid, &killed, 0);
    }
    close(fd);
    return status;
}

#define PAGER "  [Enter: next firing, q: stop] "

/* The length of :repeat's progress bar at s ("\r[###   ] K/N", redrawn
 * in place, or the spaces that clear it), 0 when there is none. */
static size_t bar_at(const char *s, size_t left)
{
    size_t n = 1;
    if (left < 2 || s[0] != '\r')
        return 0;
    if (s[1] == '[') {
        while (n < left && s[n] != '\r' && s[n] != '\n')
            n++;
        return n;
    }
    while (n < left && s[n] == ' ')
        n++;
    return n >= 41 && n < left && s[n] == '\r' ? n + 1 : 0;
}

/* What the terminal shows between from and to, "\r\n" as "\n", without
 * the lines of :step's pager and :repeat's progress bar (on standard
 * error, drawn over itself). */
static char *shown(size_t from, size_t to)
{
    char *s = malloc(to - from + 1), *d = s;
    for (size_t i = from; s && i < to; i++) {
        size_t bar = bar_at(screen + i, to - i);
        if (!strncmp(screen + i, PAGER "\r\n", strlen(PAGER) + 2) && (i == from || screen[i - 1] == '\n'))
            i += strlen(PAGER) + 1;
        else if (bar)
            i += bar - 1;
        else if (screen[i] != '\r')
            *d++ = screen[i];
    }
    if (s)
        *d = '\0';
    return s;
}

static void diag_lines(const char *label, const char *s)
{
    for (const char *p = s; *p;) {
        size_t n = strcspn(p, "\n");
        printf("#   %s: %.*s\n", label, (int)n, p);
        p += n + (p[n] == '\n');
    }
}

/* ---- the tutorial -------------------------------------------------------- */

typedef struct {
    char typed[4096];   /* the lines typed, each ending in "\r" */
    char last[4096];    /* the last line typed */
    char want[8192];    /* the answer, lines ending in "\n" */
    int line;           /* in the document */
} entry;

static void append(char *dst, size_t cap, const char *s, size_t n)
{
    size_t l = strlen(dst);
    if (l + n + 1 < cap)
        memcpy(dst + l, s, n), dst[l + n] = '\0';
}

/* The entries of the document's ```tgrel blocks; their number. */
static int read_entries(const char *path, entry *e, int max)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char l[4096];
    int n = 0, inblock = 0, lineno = 0;
    while (fgets(l, sizeof l, f)) {
        lineno++;
        size_t len = strcspn(l, "\n");
        l[len] = '\0';
        if (!strncmp(l, "```", 3)) {
            inblock = !inblock && !strncmp(l + 3, "tgrel", 5);
            continue;
        }
        if (!inblock)
            continue;
        int first = !strncmp(l, "tgrel> ", 7), cont = !strncmp(l, "  ...> ", 7);
        if (first && n == max)
            break;
        if (first) {
            memset(&e[n], 0, sizeof e[n]);
            e[n++].line = lineno;
        }
        if (n == 0)
            continue;
        if (first || cont) {
            append(e[n - 1].typed, sizeof e[n - 1].typed, l + 7, len - 7);
            append(e[n - 1].typed, sizeof e[n - 1].typed, "\r", 1);
            snprintf(e[n - 1].last, sizeof e[n - 1].last, "%s", l + 7);
        } else {
            append(e[n - 1].want, sizeof e[n - 1].want, l, len);
            append(e[n - 1].want, sizeof e[n - 1].want, "\n", 1);
        }
    }
    fclose(f);
    return n;
}

static void tutorial(const char *prog, const char *src, const char *history)
{
    static entry e[200];
    char path[4096];
    snprintf(path, sizeof path, "%s/doc/tutorial.md", src);
    int n = read_entries(path, e, 200);
    TAP_CHECK(n > 0, "doc/tutorial.md has transcripts (%d entries)", n);
    pid_t pid;
    int fd = spawn(prog, src, history, &pid);
    TAP_CHECK(fd >= 0 && expect(fd, "tgrel> "), "tgrel starts at a terminal in the source directory");
    if (fd < 0)
        return;
    int bad = 0;
    for (int i = 0; i < n; i++) {
        type(fd, e[i].typed);
        /* the answer follows the echo of the last line typed */
        char echo[4100];
        snprintf(echo, sizeof echo, "%s\r\n", e[i].last);
        long at = expect_at(fd, echo);
        /* at a terminal :step waits for Enter between its firings */
        int pauses = 0;     /* one fewer than the firings shown */
        if (!strncmp(e[i].typed, ":step", 5))
            for (const char *w = e[i].want; (w = strstr(w, "\n  #")) != NULL; w++)
                pauses++;
        pauses -= pauses > 0;
        for (int k = 0; k < pauses && at >= 0; k++)
            if (expect(fd, PAGER) || (at = -1, 0))
                type(fd, "\r");
        long end = at >= 0 ? expect_at(fd, "tgrel> ") : -1;
        char *got = end >= 0 ? shown((size_t)at + strlen(echo), (size_t)end) : NULL;
        int same = got && !strcmp(got, e[i].want);
        if (!same) {
            bad++;
            printf("# doc/tutorial.md:%d at a terminal:\n", e[i].line);
            diag_lines("expected", e[i].want);
            diag_lines("     got", got ? got : "(nothing before the next prompt)");
        }
        free(got);
        if (end < 0)
            break;
    }
    TAP_CHECK(bad == 0, "at a terminal, every answer of the tutorial is what it shows (%d of %d differ)",
              bad, n);
    int status = leave(fd, pid);
    TAP_CHECK(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0, "and Ctrl-D leaves");
}

/* ---- the history and completion ------------------------------------------------ */

static void history_entries(const char *prog, const char *history)
{
    pid_t pid;
    int fd = spawn(prog, NULL, history, &pid);
    expect(fd, "tgrel> ");
    type(fd, "(several\r  lines)\r");
    TAP_CHECK(expect(fd, "(several lines)\r\n"), "an entry of two lines runs");
    expect(fd, "tgrel> ");
    leave(fd, pid);

    fd = spawn(prog, NULL, history, &pid);
    expect(fd, "tgrel> ");
    type(fd, "\x1b[A\r");   /* Up, Enter */
    long at = expect_at(fd, "(several lines)\r\n");
    TAP_CHECK(at >= 0, "the next session's Up recalls the whole entry, which runs again");
    expect(fd, "tgrel> ");
    leave(fd, pid);
}

static void completion(const char *prog, const char *src, const char *history)
{
    pid_t pid;
    int fd = spawn(prog, src, history, &pid);
    expect(fd, "tgrel> ");
    type(fd, ":help ev\t");
    TAP_CHECK(expect(fd, ":help eval "), "after :help, a command name completes");
    type(fd, "\r");
    TAP_CHECK(expect(fd, "example: :eval"), "and its help shows");

    expect(fd, "tgrel> ");
    type(fd, ":load examples/alge\t");
    TAP_CHECK(expect(fd, ":load examples/algebra.rules"), "after :load, a file name completes");
    type(fd, "\r");
    TAP_CHECK(expect(fd, "loaded examples/algebra.rules"), "and the file loads");

    /* an op and a relation (the prelude's appendo) that begin alike: a
     * goal offers the relation, a term the op */
    expect(fd, "tgrel> ");
    type(fd, "(op appear (arity 1))\r");
    expect(fd, "tgrel> ");
    type(fd, "(run 1 (q) (appe\t");
    TAP_CHECK(expect(fd, "(run 1 (q) (appendo "), "inside a goal, a relation name completes");
    type(fd, "'(a) '(b) q))\r");
    TAP_CHECK(expect(fd, "((a b))"), "and the goal runs");
    expect(fd, "tgrel> ");
    type(fd, "(normalize (appe\t");
    TAP_CHECK(expect(fd, "(normalize (appear "), "inside a term, an op name completes");
    type(fd, "x))\r");
    TAP_CHECK(expect(fd, "(appear x)\r\n"), "and the term is normalized");
    expect(fd, "tgrel> ");
    type(fd, ":rewrite canc\t");
    TAP_CHECK(expect(fd, ":rewrite cancel-rules "), "as :rewrite's first argument, a rewriter name completes");
    type(fd, "(neg (neg b))\r");
    TAP_CHECK(expect(fd, "\r\nb\r\n"), "and the rewrite runs");
    expect(fd, "tgrel> ");
    type(fd, ":reload examples/alge\t");
    TAP_CHECK(expect(fd, ":reload examples/algebra.rules"), "after :reload, a file name completes");
    type(fd, "\r");
    TAP_CHECK(expect(fd, "reloaded examples/algebra.rules"), "and the file is read again");
    expect(fd, "tgrel> ");
    type(fd, "(include \"examples/alge\t");
    TAP_CHECK(expect(fd, "(include \"examples/algebra.rules\""), "inside a string, a file name completes and closes it");
    type(fd, ")\r");
    expect(fd, "tgrel> ");
    type(fd, ":rewrite simplify (add 0 c)\r");
    TAP_CHECK(expect(fd, "\r\nc\r\n"), "and the include runs (the file loaded already: nothing read again)");
    expect(fd, "tgrel> ");
    type(fd, ":undef appea\t");
    TAP_CHECK(expect(fd, ":undef appear "), "after :undef, a name completes");
    type(fd, "\r");
    TAP_CHECK(expect(fd, "removed appear: op"), "and the op is removed");
    expect(fd, "tgrel> ");
    leave(fd, pid);
}

int main(void)
{
    const char *prog = getenv("TGREL"), *src = getenv("srcdir");
    char history[] = "/tmp/tgrel-term-history-XXXXXX";
    int hfd = mkstemp(history);
    if (!prog || !src || hfd < 0) {
        TAP_CHECK(0, "TGREL and srcdir are set and a temporary file can be made");
        return TAP_DONE();
    }
    close(hfd);
    tutorial(prog, src, history);
    unlink(history);
    history_entries(prog, history);
    unlink(history);
    completion(prog, src, history);
    unlink(history);
    if (tap_failed_) {
        printf("# the terminal showed (last session):\n# ");
        for (size_t i = 0; i < nscreen; i++) {
            putchar(screen[i] == '\r' ? ' ' : screen[i]);
            if (screen[i] == '\n')
                fputs("# ", stdout);
        }
        putchar('\n');
    }
    return TAP_DONE();
}
