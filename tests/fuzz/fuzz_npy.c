/* fuzz_npy.c - libFuzzer target for the .npy reader of the REPL's :eval.
 *
 * Parses the input as a .npy file.  A rejected input must come back with
 * a message naming the file and no array; an accepted one must hold as
 * many bytes as its shape says, and its values must survive the trip to
 * terms and back (tgM_array_to_term, then tgM_array_from_term with the
 * same dtype) element for element.  A failure is reported by abort(),
 * which is how a fuzz target speaks.
 *
 *   ./configure CC=clang --enable-fuzz && make fuzz
 */
#include "fuzz.h"
#include "arrays.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_init("fuzz_npy");
    return 0;
}

static size_t elem_size(tg_dtype d)
{
    return d == TG_BOOL ? 1 : d == TG_INT32 || d == TG_FLOAT32 ? 4 : 8;
}

/* Element i of two contiguous arrays of dtype d holds the same value:
 * bools by truth, NaN equal to NaN. */
static int same(tg_dtype d, const char *x, const char *y, size_t i)
{
    size_t s = elem_size(d);
    x += i * s;
    y += i * s;
    if (d == TG_BOOL)
        return (*x != 0) == (*y != 0);
    if (d == TG_FLOAT32) {
        float a, b;
        memcpy(&a, x, 4);
        memcpy(&b, y, 4);
        return (isnan(a) && isnan(b)) || !memcmp(&a, &b, 4);
    }
    if (d == TG_FLOAT64) {
        double a, b;
        memcpy(&a, x, 8);
        memcpy(&b, y, 8);
        return (isnan(a) && isnan(b)) || !memcmp(&a, &b, 8);
    }
    return !memcmp(x, y, s);
}

static void round_trip(const tg_array *a)
{
    size_t count = 1;
    for (int k = 0; k < a->ndim; k++) {
        if (a->shape[k] == 0)
            return;   /* an empty axis loses the axes after it as lists */
        count *= (size_t)a->shape[k];
    }
    tg_term *t = tgM_array_to_term(ctx, a);
    if (!t)
        return;   /* out of memory */
    tg_array b;
    tg_error err;
    if (tgM_array_from_term(t, a->dtype, &b, &err) < 0) {
        fprintf(stderr, "%s\n", err.message);
        fail("the terms of an array do not read back as an array", NULL);
    }
    if (b.ndim != a->ndim || memcmp(b.shape, a->shape, (size_t)a->ndim * sizeof a->shape[0]))
        fail("the shape changed on the way through terms", NULL);
    for (size_t i = 0; i < count; i++)
        if (!same(a->dtype, a->data, b.data, i))
            fail("a value changed on the way through terms", NULL);
    free(b.data);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tg_array a;
    tg_error err;
    tg_error_clear(&err);
    if (tgM_array_parse_npy((const char *)data, size, "f.npy", &a, &err) < 0) {
        if (a.data || strncmp(err.message, "f.npy: ", 7) || !err.message[7])
            fail("a rejected input without a proper error", NULL);
        return 0;
    }
    size_t count = 1;
    for (int k = 0; k < a.ndim; k++) {
        if (a.shape[k] < 0)
            fail("a negative size", NULL);
        count *= (size_t)a.shape[k];
    }
    if (count * elem_size(a.dtype) > size)
        fail("more elements than bytes", NULL);
    round_trip(&a);
    free(a.data);
    return 0;
}
