/* test_gc_floor.c - TGREL_GC_FLOOR: the text it takes (a whole number of
 * bytes from 4096 on, anything else ignored), and, set before the first
 * context, collections that come every few kilobytes instead of every
 * 8 MiB.  tests/src/gc_stress.sh runs the golden tests that way. */
#define GC_THREADS 1
#include <gc/gc.h>

#include "harness.h"
#include "term_table.h"

static void test_parse(void)
{
    TAP_EQ_INT((intmax_t)tgT_gc_floor("65536"), 65536, "a number of bytes");
    TAP_EQ_INT((intmax_t)tgT_gc_floor("4096"), 4096, "4096, the smallest");
    TAP_EQ_INT((intmax_t)tgT_gc_floor("4095"), 0, "less is ignored");
    TAP_EQ_INT((intmax_t)tgT_gc_floor(NULL), 0, "unset is ignored");
    TAP_EQ_INT((intmax_t)tgT_gc_floor(""), 0, "empty is ignored");
    TAP_EQ_INT((intmax_t)tgT_gc_floor("64k"), 0, "a suffix is ignored");
    TAP_EQ_INT((intmax_t)tgT_gc_floor(" 65536"), 0, "a leading space is ignored");
    TAP_EQ_INT((intmax_t)tgT_gc_floor("-65536"), 0, "a sign is ignored");
    TAP_EQ_INT((intmax_t)tgT_gc_floor("99999999999999999999999"), 0, "an overflow is ignored");
}

int main(void)
{
    test_parse();
    setenv("TGREL_GC_FLOOR", "65536", 1);   /* before the library sets the collector up */
    tg_ctx *c = tg_ctx_new(NULL);
    TAP_CHECK(c != NULL, "a context");
    if (!c)
        return TAP_DONE();
    TAP_EQ_INT((intmax_t)GC_get_min_bytes_allocd(), 65536, "the collector's floor is the variable's");
    tg_term *f = tg_symbol_cstr(c, "f");
    GC_word before = GC_get_gc_no();
    for (long i = 0; i < 200000; i++) {     /* 6.4 MB of nodes, dropped */
        tg_term *a[2] = {tg_int(c, i), tg_int(c, i + 1)};
        if (!tg_app(c, f, 2, a))
            break;
    }
    GC_word n = GC_get_gc_no() - before;
    TAP_CHECK(n >= 20, "collections come every few kilobytes (%lu for 6.4 MB; none with 8 MiB)",
              (unsigned long)n);
    tg_ctx_free(c);
    return TAP_DONE();
}
