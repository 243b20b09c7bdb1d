/* test_gc_pace.c - collection pacing for a heap that grows with live
 * terms (term_table.c): while the collections' prunes find nearly every
 * table entry alive, collections come further apart (the collector's
 * free-space divisor is PACE_GROWING); a prune that finds garbage, or a
 * heap limit, brings the usual pacing back.  The divisor is the
 * process's: the decision counts the entries of every context, and a
 * divisor the embedder sets later is left alone.  Terms stay canonical
 * through the collections either way. */
#define GC_THREADS 1
#include <gc/gc.h>

#include "harness.h"
#include "term_table.h"

#define N ((long)(2 * PACE_MIN))

static tg_term **build(tg_ctx *c, tg_term *f, long n, long salt)
{
    tg_term **keep = GC_MALLOC((size_t)n * sizeof *keep);
    for (long i = 0; keep && i < n; i++) {
        tg_term *a[2] = {tg_int(c, i), tg_int(c, salt)};
        keep[i] = tg_app(c, f, 2, a);
    }
    return keep;
}

static long found_again(tg_ctx *c, tg_term *f, tg_term **keep, long n, long salt)
{
    long same = 0;
    for (long i = 0; i < n; i++) {
        tg_term *a[2] = {tg_int(c, i), tg_int(c, salt)};
        same += tg_app(c, f, 2, a) == keep[i];
    }
    return same;
}

int main(void)
{
    tg_ctx *c = tg_ctx_new(NULL);
    TAP_CHECK(c != NULL, "a context");
    if (!c)
        return TAP_DONE();
    tg_term *f = tg_symbol_cstr(c, "f");
    tg_term **few = build(c, f, 1000, -1);
    GC_gcollect();
    TAP_EQ_INT((intmax_t)GC_get_free_space_divisor(), PACE_USUAL,
               "a small table: the collector's usual pacing");

    tg_term **keep = build(c, f, N, 0);
    TAP_CHECK(keep != NULL, "%ld kept terms", N);
    if (!keep)
        return TAP_DONE();
    GC_gcollect();
    TAP_EQ_INT((intmax_t)GC_get_free_space_divisor(), PACE_GROWING,
               "a prune that finds every entry alive: collections further apart");
    GC_word gc0 = GC_get_gc_no();
    tg_term **more = build(c, f, 6 * N, 1);     /* grows the heap, collecting on the way */
    TAP_CHECK(more && GC_get_gc_no() > gc0, "more kept terms, with collections (%lu)",
              (unsigned long)(GC_get_gc_no() - gc0));
    TAP_EQ_INT(found_again(c, f, keep, N, 0) + found_again(c, f, more, 6 * N, 1), 7 * N,
               "kept terms keep their pointers through the paced collections");
    TAP_CHECK(tgT_table_check(c) == NULL, "the table is consistent");

    for (long i = 0; i < 6 * N; i++)
        more[i] = NULL;
    for (long i = 0; i < N; i++)
        keep[i] = NULL;
    GC_gcollect();
    TAP_EQ_INT((intmax_t)GC_get_free_space_divisor(), PACE_USUAL,
               "a prune that finds most entries dead: the usual pacing again");
    TAP_EQ_INT(found_again(c, f, few, 1000, -1), 1000, "the terms still held are found again");

    keep = build(c, f, N, 2);
    GC_gcollect();
    TAP_EQ_INT((intmax_t)GC_get_free_space_divisor(), PACE_GROWING, "growing again: paced again");
    TAP_CHECK(tg_set_max_heap((size_t)1 << 34, NULL) == 0, "a heap limit");
    TAP_EQ_INT((intmax_t)GC_get_free_space_divisor(), PACE_USUAL,
               "a heap limit: the usual pacing at once");
    GC_gcollect();
    TAP_EQ_INT((intmax_t)GC_get_free_space_divisor(), PACE_USUAL,
               "and after a collection that finds every entry alive");
    TAP_EQ_INT(found_again(c, f, keep, N, 2), N, "kept terms are found again");
    tg_set_max_heap(0, NULL);

    /* The divisor is the process's: a second context that makes garbage
     * brings the usual pacing back though the first one's entries all
     * live, and once its entries are gone the first one paces again. */
    GC_gcollect();
    TAP_EQ_INT((intmax_t)GC_get_free_space_divisor(), PACE_GROWING,
               "no heap limit: paced again");
    tg_ctx *d = tg_ctx_new(NULL);
    TAP_CHECK(d != NULL, "a second context");
    if (!d)
        return TAP_DONE();
    tg_term *g = tg_symbol_cstr(d, "g");
    tg_term **junk = build(d, g, 2 * N, 3);
    TAP_CHECK(junk != NULL, "the second context's %ld terms", 2 * N);
    for (long i = 0; junk && i < 2 * N; i++)
        junk[i] = NULL;
    GC_gcollect();
    TAP_EQ_INT((intmax_t)GC_get_free_space_divisor(), PACE_USUAL,
               "the second context's garbage: the usual pacing, though the first one's terms live");
    GC_gcollect();
    TAP_EQ_INT((intmax_t)GC_get_free_space_divisor(), PACE_GROWING,
               "its garbage gone, the first context's kept terms pace again");
    TAP_EQ_INT(found_again(c, f, keep, N, 2), N, "kept terms are found again");

    /* A divisor the embedder sets later wins, for good. */
    GC_set_free_space_divisor(5);
    GC_gcollect();
    TAP_EQ_INT((intmax_t)GC_get_free_space_divisor(), 5,
               "a divisor the embedder set is kept through a collection that finds every entry alive");
    junk = build(d, g, 2 * N, 4);
    for (long i = 0; junk && i < 2 * N; i++)
        junk[i] = NULL;
    GC_gcollect();
    GC_gcollect();
    tg_set_max_heap((size_t)1 << 34, NULL);
    tg_set_max_heap(0, NULL);
    TAP_EQ_INT((intmax_t)GC_get_free_space_divisor(), 5,
               "and through garbage, growth and a heap limit");
    tg_ctx_free(d);
    tg_ctx_free(c);
    return TAP_DONE();
}
