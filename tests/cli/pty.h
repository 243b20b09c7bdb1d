/* pty.h - what the tests of the REPL at a pseudo-terminal share: the
 * screen (everything the program wrote), waiting for a text to appear on
 * it, and typing.  Included by one test program each (static helpers). */
#ifndef TGREL_TESTS_PTY_H
#define TGREL_TESTS_PTY_H

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/types.h>
#include <poll.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { WAIT_MS = 20000 };

static char screen[1 << 20];    /* everything the program wrote */
static size_t nscreen, seen;    /* ... and how far expect() has matched */

static inline long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* Read what the program writes until text appears after the last match
 * (its offset), or the time is up or the program ended (-1). */
static inline long expect_at(int fd, const char *text)
{
    long end = now_ms() + WAIT_MS;
    for (;;) {
        screen[nscreen] = '\0';
        char *at = strstr(screen + seen, text);
        if (at) {
            seen = (size_t)(at - screen) + strlen(text);
            return at - screen;
        }
        long left = end - now_ms();
        struct pollfd p = {fd, POLLIN, 0};
        if (left <= 0 || poll(&p, 1, (int)left) <= 0 || nscreen + 1 >= sizeof screen)
            return -1;
        ssize_t n = read(fd, screen + nscreen, sizeof screen - 1 - nscreen);
        if (n <= 0)
            return -1;
        nscreen += (size_t)n;
    }
}

static inline int expect(int fd, const char *text)
{
    return expect_at(fd, text) >= 0;
}

static inline void type(int fd, const char *s)
{
    size_t n = strlen(s);
    while (n) {
        ssize_t w = write(fd, s, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        s += w, n -= (size_t)w;
    }
}

/* How pty_spawn starts the program: in directory dir (NULL: this one),
 * with TERM=term, NO_COLOR=no_color (NULL: unset), a terminal cols wide
 * (0: the default). */
typedef struct {
    const char *dir, *term, *no_color;
    int cols;
} pty_opts;

/* Start prog on a new pseudo-terminal, its history in file history, as o
 * says; the master side, or -1. */
static inline int pty_spawn(const char *prog, const char *history, const pty_opts *o, pid_t *pid)
{
    int m = posix_openpt(O_RDWR | O_NOCTTY);
    if (m < 0 || grantpt(m) < 0 || unlockpt(m) < 0)
        return -1;
    const char *sname = ptsname(m);
    if (!sname)
        return -1;
    *pid = fork();
    if (*pid < 0)
        return -1;
    if (*pid == 0) {
        setsid();
        int s = open(sname, O_RDWR);
        if (s < 0)
            _exit(126);
        if (o->cols) {
            struct winsize ws = {.ws_row = 50, .ws_col = (unsigned short)o->cols};
            ioctl(s, TIOCSWINSZ, &ws);
        }
        dup2(s, 0), dup2(s, 1), dup2(s, 2);
        if (s > 2)
            close(s);
        close(m);
        if (o->dir && chdir(o->dir) != 0)
            _exit(126);
        setenv("TERM", o->term, 1);
        if (o->no_color)
            setenv("NO_COLOR", o->no_color, 1);
        else
            unsetenv("NO_COLOR");
        setenv("INPUTRC", "/dev/null", 1);
        setenv("TGREL_HISTORY", history, 1);
        execl(prog, prog, (char *)NULL);
        _exit(127);
    }
    return m;
}

#endif
