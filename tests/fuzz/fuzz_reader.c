/* fuzz_reader.c - libFuzzer target for the reader and the printer.
 *
 * Reads every term of the input with tg_reader_next, prints each one and
 * reads the text back: hash-consing makes "the same term" a pointer
 * comparison, so any disagreement between printer and reader shows up as
 * an abort() here (the only place in the project allowed to abort: it is
 * how a fuzz target reports a failure).  Errors must carry a position and
 * every call must consume input.  Inputs with an odd first byte are read
 * with subterm positions recorded (tgR_track_positions): the form's own
 * must be tg_reader_last_pos, and its elements' must come after it.
 *
 *   clang -fsanitize=fuzzer,address,undefined -Isrc tests/fuzz/fuzz_reader.c \
 *         src/(library sources).c -lgc -lgmp -lm
 *   ./a.out -max_total_time=60 tests/fuzz/corpus
 */
#include "fuzz.h"
#include "reader.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void check_error(const tg_error *err, const char *file)
{
    /* out of memory is not a bug; anything else must be a located
     * syntax error with a message */
    if (err->code == TG_ERR_NOMEM)
        return;
    if (err->code != TG_ERR_SYNTAX || err->line < 1 || err->column < 1 || !err->message[0] ||
        strcmp(err->file, file) != 0)
        fail("malformed error", err->message);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_init("fuzz_reader");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tg_error err;
    tg_reader *r = tg_reader_new(ctx, (const char *)data, size, "fuzz", &err);
    if (!r)
        return 0;
    int track = size > 0 && (data[0] & 1);
    tgR_track_positions(r, track);
    size_t calls = 0;
    for (;;) {
        tg_term *t = NULL;
        int st = tg_reader_next(r, &t, &err);
        if (st == 0)
            break;
        /* every term and every error consumes at least one byte */
        if (++calls > size + 1)
            fail("the reader does not advance", NULL);
        if (st < 0) {
            if (st != -1)
                fail("bad status", NULL);
            check_error(&err, "fuzz");
            continue;
        }
        if (st != 1 || !t)
            fail("bad status or NULL term", NULL);
        int line, col;
        tg_reader_last_pos(r, &line, &col);
        if (line < 1 || col < 1)
            fail("no position for a term", NULL);
        int pl, pc;
        if (track && tgR_pos(r, t, &pl, &pc) == 0 && (pl != line || pc != col))
            fail("the form's recorded position is not its start", NULL);
        tg_iter it;
        tg_iter_init(&it, t);
        for (tg_term *x; track && (x = tg_iter_next(&it));)
            if (tgR_pos(r, x, &pl, &pc) == 0 && (pl < line || (pl == line && pc <= col)))
                fail("an element recorded before its form", NULL);

        size_t len;
        char *text = tg_print(t, &len);
        if (!text)
            continue;   /* out of memory */
        tg_error err2;
        tg_term *back = tg_read(ctx, text, len, &err2);
        if (back != t) {
            fprintf(stderr, "printed: %.*s\n", (int)(len > 2000 ? 2000 : len), text);
            fail("printed term reads back differently", back ? "other term" : err2.message);
        }
        free(text);
    }
    tg_reader_free(r);

    /* the one-term entry point on the same bytes */
    tg_term *one = tg_read(ctx, (const char *)data, size, &err);
    if (!one)
        check_error(&err, "<string>");
    return 0;
}
