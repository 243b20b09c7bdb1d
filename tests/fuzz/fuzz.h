/* fuzz.h - what the fuzz targets share: the libFuzzer entry points'
 * declarations, the report of a failure (abort() is how a fuzz target
 * reports one: the only place in the project allowed to abort), and one
 * context for the whole run, made before libFuzzer starts counting
 * allocations per input and freed at exit (its table lives in malloc'd
 * memory that only the collector's heap points to, which the leak
 * checker would not see).  Collections come every 256 KiB allocated
 * instead of the library's 8 MiB, so that a term held only where the
 * collector does not look is reclaimed within a few inputs. */
#ifndef TGREL_TESTS_FUZZ_H
#define TGREL_TESTS_FUZZ_H

#include "tgrel.h"

#include <gc/gc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static tg_ctx *ctx;
static const char *fuzz_name = "fuzz";

static void fail(const char *what, const char *detail)
{
    fprintf(stderr, "%s: %s%s%s\n", fuzz_name, what, detail ? ": " : "", detail ? detail : "");
    abort();
}

static void free_ctx(void)
{
    tg_ctx_free(ctx);
}

/* The shared part of LLVMFuzzerInitialize: the target's name, the context. */
static void fuzz_init(const char *name)
{
    fuzz_name = name;
    GC_set_min_bytes_allocd((size_t)256 << 10);    /* kept by the library: see above */
    tg_error err;
    if (!(ctx = tg_ctx_new(&err)))
        fail("no context", err.message);
    atexit(free_ctx);
}

#endif
