/* test_repl_pty.c - the REPL as a person at a terminal meets it: tgrel
 * runs on a pseudo-terminal and the test types at it, then waits for
 * what should appear: the prompt, the continuation prompt of a form left
 * open, tab completion of commands and names, Ctrl-C stopping a rewrite
 * that never ends and a search that never ends (the session goes on),
 * Ctrl-C dropping a half-typed entry, Ctrl-D leaving, and the history
 * file written; colour at a terminal unless TERM is dumb or NO_COLOR is
 * set.  The program is $TGREL. */
#define _XOPEN_SOURCE 700
#define _DEFAULT_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

#include "cli/pty.h"

/* Start prog on a new pseudo-terminal with TERM=term and NO_COLOR set
 * when no_color is not NULL; its master side, or -1. */
static int spawn(const char *prog, const char *history, const char *term, const char *no_color,
                 pid_t *pid)
{
    pty_opts o = {NULL, term, no_color, 0};
    return pty_spawn(prog, history, &o, pid);
}

static void dump_screen(void)
{
    printf("# the terminal showed:\n# ");
    for (size_t i = 0; i < nscreen; i++) {
        putchar(screen[i] == '\r' ? ' ' : screen[i]);
        if (screen[i] == '\n')
            fputs("# ", stdout);
    }
    putchar('\n');
}

/* Leave with Ctrl-D at the prompt (ending in prompt_end) and wait for
 * the program: its wait status, -1 when it had to be killed. */
static int leave(int fd, pid_t pid, const char *prompt_end)
{
    expect(fd, prompt_end);
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

/* A colour terminal: the prompt and errors in colour; with NO_COLOR set
 * (or --color=never), none. */
static void colours(const char *prog, const char *history)
{
    static const char *const no[] = {NULL, "1"};
    for (int k = 0; k < 2; k++) {
        pid_t pid;
        nscreen = seen = 0;
        int fd = spawn(prog, history, "xterm", no[k], &pid);
        if (fd < 0) {
            TAP_CHECK(0, "tgrel starts on a pseudo-terminal");
            continue;
        }
        if (k == 0) {
            int prompt = expect(fd, "\033[1;34mtgrel>\033[0m ");
            type(fd, ":frob\r");
            int err = expect(fd, "\033[31m<stdin>:1:1: unknown command :frob");
            TAP_CHECK(prompt && err, "TERM=xterm: the prompt and errors in colour");
        } else {
            int prompt = expect(fd, "tgrel> ");
            type(fd, ":frob\r");
            int plain = expect(fd, "unknown command :frob (:help lists them)");
            screen[nscreen] = '\0';
            TAP_CHECK(prompt && plain && !strstr(screen, "\033[1;34m") && !strstr(screen, "\033[31m"),
                      "NO_COLOR=1: no colour at the terminal either");
        }
        leave(fd, pid, k == 0 ? "\033[0m " : "tgrel> ");
        if (tap_failed_)
            dump_screen();
    }
}

int main(void)
{
    const char *prog = getenv("TGREL");
    char history[] = "/tmp/tgrel-pty-history-XXXXXX";
    int hfd = mkstemp(history);
    if (!prog || hfd < 0) {
        TAP_CHECK(0, "TGREL is set and a temporary file can be made");
        return TAP_DONE();
    }
    close(hfd);
    pid_t pid;
    int fd = spawn(prog, history, "dumb", NULL, &pid);
    TAP_CHECK(fd >= 0, "tgrel starts on a pseudo-terminal");
    if (fd < 0)
        return TAP_DONE();

    TAP_CHECK(expect(fd, "tgrel> "), "a banner and the prompt");
    type(fd, "(op join (arity 2))\r");
    TAP_CHECK(expect(fd, "tgrel> "), "a definition prints nothing and prompts again");
    type(fd, "(normalize\r");
    TAP_CHECK(expect(fd, "  ...> "), "a form left open gets the continuation prompt");
    type(fd, "  (join a b))\r");
    TAP_CHECK(expect(fd, "(join a b)\r\n"), "the form is evaluated once closed");

    type(fd, ":he\t");
    TAP_CHECK(expect(fd, ":help "), "tab completes a command");
    type(fd, "\r");
    TAP_CHECK(expect(fd, "list the commands"), "and the command runs");
    /* the prelude's relations complete too: no name of theirs
     * starts with "jo" */
    type(fd, "(jo\t");
    TAP_CHECK(expect(fd, "(join "), "tab completes an op name");
    type(fd, "x y)\r");
    TAP_CHECK(expect(fd, "(join x y)\r\n"), "the completed form is evaluated");

    expect(fd, "tgrel> ");
    type(fd, "(op neg (arity 1))\r(rule nn (neg (neg ?x)) => ?x)\r(walk w (order out-to-in) nn)\r");
    type(fd, "(rule zzrule (neg (neg (neg ?x))) => ?x)\r(walk zzdb zzrule)\r");
    expect(fd, "tgrel> ");
    type(fd, ":rewrite zzd\t");
    TAP_CHECK(expect(fd, ":rewrite zzdb "), "tab completes a rewriter (database) name");
    type(fd, "(neg (neg (neg b)))\r");
    TAP_CHECK(expect(fd, "\r\nb\r\n"), "and the rewrite runs");
    expect(fd, "tgrel> ");
    type(fd, ":rewrite zzr\t");
    TAP_CHECK(expect(fd, ":rewrite zzrule "), "tab completes a rule name");
    type(fd, "(neg (neg (neg c)))\r");
    TAP_CHECK(expect(fd, "\r\nc\r\n"), "and a rewrite with that one rule runs");
    expect(fd, "tgrel> ");
    type(fd, ":step (neg (neg (neg (neg (neg (neg a))))))\r");
    TAP_CHECK(expect(fd, "#1 nn") && expect(fd, "[Enter: next firing, q: stop]"),
              ":step shows the first firing and waits");
    type(fd, "\r");
    TAP_CHECK(expect(fd, "#2 nn") && expect(fd, "[Enter: next firing, q: stop]"),
              "Enter shows the next");
    type(fd, "q\r");
    TAP_CHECK(expect(fd, "\r\na\r\n") && expect(fd, "tgrel> "), "q stops and the result is shown");

    type(fd, "(op f (arity 1))\r(rule loop (f ?x) => (f ?x))\r(normalize (f a))\r");
    usleep(300 * 1000);
    type(fd, "\x03");
    TAP_CHECK(expect(fd, "interrupted"), "Ctrl-C stops a rewrite that never ends");
    expect(fd, "tgrel> ");
    type(fd, "after\r");
    TAP_CHECK(expect(fd, "after\r\n"), "the session goes on after it");

    expect(fd, "tgrel> ");
    type(fd, "(defrel (loopo x) (loopo x))\r(run 1 (q) (loopo q))\r");
    usleep(300 * 1000);
    type(fd, "\x03");
    TAP_CHECK(expect(fd, "interrupted"), "Ctrl-C stops a search that never ends");

    /* a compiled scan of 10^11 steps: compiled within the second (a
     * rewrite interrupted during the compilation would say so too, but
     * not after it), then stopped by its poll of the interrupt flag */
    expect(fd, "tgrel> ");
    type(fd, ":eval (scan (lambda (a) ((add a 1))) (steps 100000000000) (sequences) "
             "(outputs (sitsot 0 last)) (non_sequences))\r");
    usleep(1500 * 1000);
    type(fd, "\x03");
    TAP_CHECK(expect(fd, "interrupted"), "Ctrl-C stops a compiled scan that never ends");
    expect(fd, "tgrel> ");
    type(fd, "after-scan\r");
    TAP_CHECK(expect(fd, "after-scan\r\n"), "the session goes on after it");

    expect(fd, "tgrel> ");
    type(fd, "(dropped\r");
    TAP_CHECK(expect(fd, "  ...> "), "an entry is half typed");
    type(fd, "\x03");
    type(fd, "kept\r");
    TAP_CHECK(expect(fd, "kept\r\n"), "Ctrl-C drops the half-typed entry, the next one runs");

    /* :repeat draws a progress bar at a terminal (issue 22), then clears it */
    expect(fd, "tgrel> ");
    type(fd, ":var c float64 0\r");
    expect(fd, "tgrel> ");
    type(fd, ":fn cnt (outputs (shared c float64 ())) (updates ((shared c float64 ()) (add (shared c float64 ()) 1)))\r");
    expect(fd, "tgrel> ");
    type(fd, ":repeat 3000 cnt (every 1500)\r");
    int bar = expect(fd, "] ") && expect(fd, "/3000") && expect(fd, "cnt 1500/3000: 1499.0") &&
              expect(fd, "cnt 3000/3000: 2999.0") && expect(fd, "] 3000/3000");
    if (!bar)
        dump_screen();
    TAP_CHECK(bar, ":repeat shows a progress bar at a terminal and clears it");

    /* Ctrl-C stops a :repeat of short calls, whether it comes during a
     * call or between two; the count says the loop stopped early */
    expect(fd, "tgrel> ");
    type(fd, ":repeat 1000000000 cnt\r");
    usleep(800 * 1000);
    type(fd, "\x03");
    TAP_CHECK(expect(fd, "interrupted"), "Ctrl-C stops a :repeat of a billion calls");
    expect(fd, "tgrel> ");
    type(fd, "after-repeat\r");
    TAP_CHECK(expect(fd, "after-repeat\r\n"), "and the session goes on");

    /* ^D typed before readline has the terminal in raw mode would be the
     * line discipline's end of file, which readline does not see: wait
     * for the prompt first */
    int status = leave(fd, pid, "tgrel> ");
    TAP_CHECK(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0, "Ctrl-D leaves with status 0");

    FILE *h = fopen(history, "r");
    char line[256];
    int found = 0;
    while (h && fgets(line, sizeof line, h))
        found |= strstr(line, "(op join (arity 2))") != NULL;
    if (h)
        fclose(h);
    TAP_CHECK(found, "the history file holds the entries typed");
    TAP_CHECK(!memchr(screen, '\033', nscreen), "no colour with TERM=dumb");
    colours(prog, history);
    unlink(history);
    if (tap_failed_)
        dump_screen();
    return TAP_DONE();
}
