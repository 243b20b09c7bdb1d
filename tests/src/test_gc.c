/* test_gc.c - the hash-cons table holds terms weakly: garbage is
 * reclaimed and the heap stays bounded, live terms keep their identity
 * across collections, two contexts work from two threads at once, and
 * deep or long terms are handled without recursion; a context caught in
 * the middle of a table operation by a collection keeps its table whole,
 * and so does a context whose tags keep to the low pointer bits; a short
 * application is one pointer by every way of making it while new nodes,
 * lookups, drops, growth and collections mix.
 *
 * TG_TEST_CHURN sets the number of nodes built and dropped (default
 * 10^7; the benchmark runs 10^8). */
#define GC_THREADS 1
#include <gc/gc.h>

#include "harness.h"
#include "term.h"

#include <pthread.h>
#include <stdatomic.h>

static long churn_count(void)
{
    const char *s = getenv("TG_TEST_CHURN");
    return s ? atol(s) : 10000000L;
}

/* Build and drop n distinct (f i i+1) nodes; returns 0 if the heap ever
 * exceeded max_heap bytes. */
static int churn(tg_ctx *c, long n, size_t max_heap, size_t *peak)
{
    tg_term *f = tg_symbol_cstr(c, "f");
    *peak = 0;
    for (long i = 0; i < n; i++) {
        tg_term *a[2] = {tg_int(c, i), tg_int(c, i + 1)};
        if (!tg_app(c, f, 2, a))
            return 0;
        if ((i & 0xfffff) == 0) {
            size_t h = GC_get_heap_size();
            if (h > *peak)
                *peak = h;
            if (h > max_heap)
                return 0;
        }
    }
    return 1;
}

static void test_churn(void)
{
    tg_ctx *c = tg_ctx_new(NULL);
    long n = churn_count();
    size_t peak;
    int bounded = churn(c, n, (size_t)256 << 20, &peak);
    tg_stats st;
    tg_ctx_stats(c, &st);
    TAP_CHECK(bounded, "building and dropping %ld nodes keeps the heap under 256 MiB (peak %zu MiB)",
              n, peak >> 20);
    TAP_CHECK(st.reclaimed > (size_t)n / 2, "dead nodes are removed from the table (%zu of %zu)",
              st.reclaimed, st.created);
    TAP_CHECK(st.capacity < (size_t)n / 4, "the table stays small (%zu slots)", st.capacity);
    const char *bad = tgT_table_check(c);
    TAP_CHECK(!bad, "the table is consistent after the churn (%s)", bad ? bad : "yes");
    tg_ctx_free(c);
}

/* tg_ctx_stats' `created` counts every node ever made in the context,
 * lookups of existing terms and prunes aside (the table derives it from
 * its live and reclaimed counts). */
static tg_term *volatile sink_term;
static void test_created(void)
{
    tg_ctx *c = tg_ctx_new(NULL);
    enum { K = 3000 };
    tg_term **keep = GC_MALLOC(K * sizeof *keep);
    tg_term *f = tg_symbol_cstr(c, "f");
    for (long i = 0; i < K; i++) {
        tg_term *a[2] = {tg_int(c, i), tg_int(c, -i)};
        keep[i] = tg_app(c, f, 2, a);
    }
    tg_stats st;
    tg_ctx_stats(c, &st);
    TAP_CHECK(st.created == K + 1, "created counts the symbol and %d applications (%zu)", K,
              st.created);
    long same = 0;
    for (long i = 0; i < K; i++) {
        tg_term *a[2] = {tg_int(c, i), tg_int(c, -i)};
        same += tg_app(c, f, 2, a) == keep[i];
    }
    tg_ctx_stats(c, &st);
    TAP_CHECK(same == K && st.created == K + 1, "lookups create nothing (%zu)", st.created);
    for (long i = 0; i < K; i += 2)
        keep[i] = NULL;
    GC_gcollect();
    GC_gcollect();
    tg_ctx_stats(c, &st);
    TAP_CHECK(st.created == K + 1 && st.live + st.reclaimed == st.created,
              "a prune leaves created as it was (%zu, %zu reclaimed)", st.created, st.reclaimed);
    for (long i = 0; i < 100; i++) {
        tg_term *a[2] = {tg_int(c, K + i), tg_int(c, -i)};
        sink_term = tg_app(c, f, 2, a);
    }
    tg_ctx_stats(c, &st);
    TAP_CHECK(st.created == K + 101, "new nodes after a prune count on (%zu)", st.created);
    GC_FREE(keep);
    tg_ctx_free(c);
}

/* Terms that are still referenced keep their identity through many
 * collections, while garbage around them is reclaimed. */
static void test_identity(void)
{
    tg_ctx *c = tg_ctx_new(NULL);
    enum { K = 20000 };
    tg_term **keep = GC_MALLOC(K * sizeof *keep);
    tg_term *g = tg_symbol_cstr(c, "g");
    for (long i = 0; i < K; i++) {
        tg_term *a[3] = {tg_int(c, i), tg_symbol_cstr(c, "k"), tg_int(c, -i)};
        keep[i] = tg_app(c, g, 3, a);
    }
    tg_term *e[100];
    for (int i = 0; i < 100; i++)
        e[i] = tg_int(c, i * 7);
    tg_term *volatile long_list = tg_list(c, 100, e, NULL);
    size_t peak;
    churn(c, 2000000, (size_t)1 << 40, &peak);
    GC_gcollect();
    int same = 1;
    for (long i = 0; i < K; i++) {
        tg_term *a[3] = {tg_int(c, i), tg_symbol_cstr(c, "k"), tg_int(c, -i)};
        same &= tg_app(c, g, 3, a) == keep[i];
    }
    TAP_CHECK(same, "%d live terms keep their pointers across collections", K);
    TAP_CHECK(tg_list(c, 100, e, NULL) == long_list, "a live 100-element list keeps its pointer");
    const char *bad = tgT_table_check(c);
    TAP_CHECK(!bad, "survivors moved by the prunes leave the table consistent (%s)",
              bad ? bad : "yes");

    /* dropping them lets the table shrink to what is live */
    tg_stats before, after;
    tg_ctx_stats(c, &before);
    for (long i = 0; i < K; i++)    /* volatile: keep is not read again, the stores were dropped */
        ((tg_term *volatile *)keep)[i] = NULL;
    for (int i = 0; i < 3; i++)
        GC_gcollect();
    tg_ctx_stats(c, &after);
    TAP_CHECK(after.live + K / 2 < before.live, "dropped terms leave the table (%zu -> %zu entries)",
              before.live, after.live);
    tg_ctx_free(c);
}

/* K kept (h i -i) terms; returns how many of them a second build finds
 * again (pointer-equal). */
enum { KEEP = 30000 };
static tg_term **build_kept(tg_ctx *c, tg_term *h)
{
    tg_term **keep = GC_MALLOC(KEEP * sizeof *keep);
    for (long i = 0; i < KEEP; i++) {
        tg_term *a[2] = {tg_int(c, i), tg_int(c, -i)};
        keep[i] = tg_app(c, h, 2, a);
    }
    return keep;
}
static long found_again(tg_ctx *c, tg_term *h, tg_term **keep)
{
    long same = 0;
    for (long i = 0; i < KEEP; i++) {
        tg_term *a[2] = {tg_int(c, i), tg_int(c, -i)};
        same += tg_app(c, h, 2, a) == keep[i];
    }
    return same;
}

/* A collection that finds a context busy (as when its thread is stopped
 * in the middle of an operation) keeps every entry and leaves the table
 * as it found it; the next collection prunes it again. */
static void test_busy_collection(void)
{
    tg_ctx *c = tg_ctx_new(NULL);
    tg_term *h = tg_symbol_cstr(c, "h");
    tg_term **keep = build_kept(c, h);
    for (long i = 0; i < 50000; i++) {     /* garbage, still in the table */
        tg_term *a[2] = {tg_int(c, i), tg_int(c, i + 1)};
        tg_app(c, h, 2, a);
    }
    tg_stats before, during, after;
    tg_ctx_stats(c, &before);
    tgT_busy(c, 1);
    GC_gcollect();
    tgT_busy(c, 0);
    tg_ctx_stats(c, &during);
    TAP_CHECK(during.live == before.live, "a busy context is not pruned (%zu -> %zu entries)",
              before.live, during.live);
    TAP_CHECK(found_again(c, h, keep) == KEEP, "its table is intact after the collection");
    const char *bad = tgT_table_check(c);
    TAP_CHECK(!bad, "and consistent, tags put back (%s)", bad ? bad : "yes");
    GC_gcollect();
    tg_ctx_stats(c, &after);
    TAP_CHECK(after.live < during.live && after.live < KEEP + 1000,
              "the next collection prunes it (%zu -> %zu entries)",
              during.live, after.live);
    TAP_CHECK(found_again(c, h, keep) == KEEP, "kept terms keep their pointers");
    tg_ctx_free(c);
}

/* A context whose tags keep to the low pointer bits (as on a system that
 * hands out addresses above 2^47) stays canonical through growth and
 * collections. */
static void test_narrow_tags(void)
{
    tg_ctx *c = tg_ctx_new(NULL);
    tg_term *h = tg_symbol_cstr(c, "h");
    tg_term **keep = build_kept(c, h);
    tgT_narrow(c);
    TAP_CHECK(found_again(c, h, keep) == KEEP, "narrowing the tags keeps every entry");
    tg_term *g = tg_symbol_cstr(c, "g");
    tg_term **more = build_kept(c, g);
    size_t peak;
    churn(c, 300000, (size_t)1 << 40, &peak);
    GC_gcollect();
    TAP_CHECK(found_again(c, h, keep) == KEEP && found_again(c, g, more) == KEEP,
              "terms made before and after narrowing stay canonical through collections");
    tg_stats st;
    tg_ctx_stats(c, &st);
    TAP_CHECK(st.reclaimed > 200000, "dead entries are pruned (%zu)", st.reclaimed);
    const char *bad = tgT_table_check(c);
    TAP_CHECK(!bad, "the narrowed table is consistent (%s)", bad ? bad : "yes");
    tg_ctx_free(c);
}

/* Terms whose hashes all lie in the top 2^20 values (LAST_HOME and up:
 * hash bits 20 to 31 set) share the last bucket as their home in any
 * table of up to 4096 buckets, where the home is (h >> 20) & (nb - 1)
 * (home_in in term_table.h), and lie in the last nb / 4096 buckets of a
 * larger one (multiply-shift): they overflow
 * past the end of the array into its first buckets, pass the last bucket
 * more than 255 times (its overflow count saturates) and lie three and
 * more buckets from home.  Lookups, growth, pruning and narrowing must
 * all keep such a table canonical and consistent. */
/* The least total displacement of n entries of one home bucket: the
 * r-th lies r / 7 buckets beyond it. */
#define LAST_HOME 0xFFF00000u
static size_t packed_displacement(size_t n)
{
    size_t sum = 0;
    for (size_t r = 0; r < n; r++)
        sum += r / 7;
    return sum;
}

/* The first n integers i whose (head i) hashes to at least `least`,
 * found in a context of their own. */
static void high_keys(const char *head, uint32_t least, int64_t *ids, size_t n)
{
    tg_ctx *a = tg_ctx_new(NULL);
    tg_term *fa = tg_symbol_cstr(a, head);
    size_t k = 0;
    for (int64_t i = 0; k < n; i++) {
        tg_term *x = tg_int(a, i);
        if (tg_hash(tg_app(a, fa, 1, &x)) >= least)
            ids[k++] = i;
    }
    tg_ctx_free(a);
}

static void test_overflow(void)
{
    enum { N = 1000 };
    int64_t ids[N];
    high_keys("f", LAST_HOME, ids, N);

    tg_ctx *c = tg_ctx_new(NULL);
    tg_term *f = tg_symbol_cstr(c, "f");
    tg_term **keep = GC_MALLOC(N * sizeof *keep);
    for (size_t k = 0; k < N; k++) {
        tg_term *x = tg_int(c, ids[k]);
        keep[k] = tg_app(c, f, 1, &x);
    }
    tg_stats st;
    tg_ctx_stats(c, &st);
    const char *bad = tgT_table_check(c);
    TAP_CHECK(!bad && st.capacity <= 1024 * 7,
              "%d terms of one home bucket in %zu slots: the table is consistent (%s)", N,
              st.capacity, bad ? bad : "yes");
    size_t same = 0;
    for (size_t k = 0; k < N; k++) {
        tg_term *x = tg_int(c, ids[k]);
        same += tg_app(c, f, 1, &x) == keep[k];
    }
    TAP_CHECK(same == N, "each is found again (%zu of %d)", same, N);

    size_t spread = tgT_table_displacement(c);
    TAP_CHECK(spread >= packed_displacement(N), "they lie %zu buckets from home in all (packed: %zu)",
              spread, packed_displacement(N));
    for (size_t k = 1; k < N; k += 2)
        ((tg_term *volatile *)keep)[k] = NULL;
    GC_gcollect();
    tg_stats after;
    tg_ctx_stats(c, &after);
    bad = tgT_table_check(c);
    TAP_CHECK(!bad && after.live < st.live, "pruning half of them (%zu -> %zu entries) keeps it "
              "consistent (%s)", st.live, after.live, bad ? bad : "yes");
    /* Every other slot of the run fell free; left in place, the
     * survivors would lie about as far from home as before. */
    spread = tgT_table_displacement(c);
    TAP_CHECK(spread <= packed_displacement(after.live),
              "the survivors move back into the freed slots nearest their home (%zu buckets "
              "from home in all, packed: %zu)", spread, packed_displacement(after.live));
    same = 0;
    for (size_t k = 0; k < N; k += 2) {
        tg_term *x = tg_int(c, ids[k]);
        same += tg_app(c, f, 1, &x) == keep[k];
    }
    TAP_CHECK(same == N / 2, "the kept ones are found again (%zu of %d)", same, N / 2);
    for (size_t k = 1; k < N; k += 2) {
        tg_term *x = tg_int(c, ids[k]);
        keep[k] = tg_app(c, f, 1, &x);
    }
    same = 0;
    for (size_t k = 0; k < N; k++) {
        tg_term *x = tg_int(c, ids[k]);
        same += tg_app(c, f, 1, &x) == keep[k];
    }
    bad = tgT_table_check(c);
    TAP_CHECK(!bad && same == N, "made again, all are canonical (%zu of %d; %s)", same, N,
              bad ? bad : "consistent");
    tgT_narrow(c);
    same = 0;
    for (size_t k = 0; k < N; k++) {
        tg_term *x = tg_int(c, ids[k]);
        same += tg_app(c, f, 1, &x) == keep[k];
    }
    bad = tgT_table_check(c);
    TAP_CHECK(!bad && same == N, "and after narrowing the tags (%zu of %d; %s)", same, N,
              bad ? bad : "consistent");
    tg_ctx_free(c);
}

struct worker { int id; int ok; };

static void *work(void *p)
{
    struct worker *w = p;
    tg_ctx *c = tg_ctx_new(NULL);
    w->ok = c != NULL;
    if (!c)
        return NULL;
    char name[16];
    snprintf(name, sizeof name, "w%d", w->id);
    tg_term *h = tg_symbol_cstr(c, name);
    enum { K = 5000 };
    tg_term **keep = GC_MALLOC(K * sizeof *keep);
    for (int round = 0; round < 40; round++) {
        for (long i = 0; i < K; i++) {
            tg_term *a[2] = {tg_int(c, i), tg_int(c, round)};
            tg_term *t = tg_app(c, h, 2, a);
            if (round == 0)
                keep[i] = tg_app(c, h, 1, &t);
            else {
                tg_term *again = tg_app(c, h, 1, &t);
                tg_term *a0[2] = {tg_int(c, i), tg_int(c, 0)};
                tg_term *t0 = tg_app(c, h, 2, a0);
                w->ok &= tg_app(c, h, 1, &t0) == keep[i];
                (void)again;
            }
        }
    }
    tg_ctx_free(c);
    return NULL;
}

static void test_threads(void)
{
    pthread_t th[2];
    struct worker w[2] = {{1, 0}, {2, 0}};
    int started = 1;
    for (int i = 0; i < 2; i++)
        started &= GC_pthread_create(&th[i], NULL, work, &w[i]) == 0;
    for (int i = 0; i < 2; i++)
        GC_pthread_join(th[i], NULL);
    TAP_CHECK(started && w[0].ok && w[1].ok,
              "two contexts used from two threads at once keep their terms canonical");
}

/* (f (f (f ... leaf))) n deep, built bottom-up. */
static tg_term *deep(tg_ctx *c, long n, tg_term *leaf)
{
    tg_term *f = tg_symbol_cstr(c, "f"), *t = leaf;
    for (long i = 0; i < n; i++)
        t = tg_app(c, f, 1, &t);
    return t;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Distinct values among n hashes. */
static size_t distinct(uint32_t *h, size_t n)
{
    qsort(h, n, sizeof *h, cmp_u32);
    size_t d = n > 0;
    for (size_t i = 1; i < n; i++)
        d += h[i] != h[i - 1];
    return d;
}

/* Hashes along a chain must not fall into a cycle (a node's hash is a
 * function of its children's, so a plain fold would repeat after about
 * 2^16 levels and make interning quadratic). */
static void test_chain_hashes(void)
{
    tg_ctx *c = tg_ctx_new(NULL);
    size_t n = 1000000;
    uint32_t *h = malloc(n * sizeof *h);
    tg_term *s = tg_symbol_cstr(c, "s"), *t = tg_int(c, 0);
    for (size_t i = 0; i < n; i++) {
        t = tg_app(c, s, 1, &t);
        h[i] = tg_hash(t);
    }
    size_t d = distinct(h, n);
    TAP_CHECK(d > n - n / 100, "a 10^6-deep (s (s ... 0)) chain has distinct hashes (%zu of %zu)", d, n);
    /* the chunk chain of a long list of identical elements */
    size_t m = 4000000;
    tg_term **e = GC_MALLOC_ATOMIC(m * sizeof *e);
    for (size_t i = 0; i < m; i++)
        e[i] = tg_int(c, 0);
    tg_term *l = tg_list(c, m, e, NULL);
    size_t k = 0;
    tg_iter it;
    tg_iter_init(&it, l);
    for (size_t i = 0; i < m && k < n; i += 8) {
        h[k++] = tg_hash(tg_iter_rest(c, &it));
        for (int j = 0; j < 8 && tg_iter_next(&it); j++)
            ;
    }
    d = distinct(h, k);
    TAP_CHECK(d > k - k / 100, "suffixes of a list of 4*10^6 zeros have distinct hashes (%zu of %zu)",
              d, k);
    /* the fast read of the 52-bit hash against the fields */
    tg_term *x = tg_app(c, s, 1, &t);
    TAP_CHECK(tgT_hash52(x) == ((uint64_t)x->h.hash << 20 | x->h.hash_hi),
              "the 52-bit hash reads the header fields");
    free(h);
    tg_ctx_free(c);
}

/* tgT_app_hash finds the hash a node will have from its last element's
 * hash alone (the rewriting machine builds its constructor chains with
 * it): for every arity it serves, and last elements of every kind, it
 * must be the hash tg_app then gives the node; and tgT_app_hashed, given
 * that hash, must make the node tg_app finds (when it is new) and find
 * the node tg_app made (when it exists). */
static void test_ahead_hashes(void)
{
    tg_ctx *c = tg_ctx_new(NULL);
    tg_term *f = tg_symbol_cstr(c, "f"), *s = tg_symbol_cstr(c, "s");
    tg_term *lasts[] = {tg_int(c, 7), tg_int(c, -1), s, tg_app(c, s, 1, &f), tg_string(c, "x", 1),
                        tg_double(c, 0.5), tg_nil()};
    size_t bad = 0, badnew = 0, badold = 0, tried = 0;
    for (unsigned na = 1; na < 8; na++)
        for (size_t k = 0; k < sizeof lasts / sizeof *lasts; k++) {
            tg_term *a[7];
            for (unsigned i = 0; i + 1 < na; i++)
                a[i] = i & 1 ? tg_int(c, (int64_t)(i * 1000 + k)) : tg_app(c, s, 1, &lasts[k]);
            a[na - 1] = lasts[k];
            uint64_t h = tgT_app_hash(f, na, a, tgT_ehash(lasts[k]));
            tg_term *made = tgT_app_hashed(c, h, h, f, na, a);     /* new: made here */
            tg_term *t = tg_app(c, f, na, a);
            bad += h != tgT_hash52(t);
            badnew += made != t;
            a[na - 1] = f;                                      /* made by tg_app first */
            tg_term *u = tg_app(c, f, na, a);
            uint64_t hu = tgT_app_hash(f, na, a, tgT_ehash(f));
            badold += tgT_app_hashed(c, hu, hu, f, na, a) != u;
            tried++;
        }
    TAP_CHECK(bad == 0, "the hash found ahead is the built node's (%zu of %zu differ)", bad, tried);
    TAP_CHECK(badnew == 0, "a node made with its hash is the one tg_app finds (%zu of %zu differ)",
              badnew, tried);
    TAP_CHECK(badold == 0, "a node found with its hash is the one tg_app made (%zu of %zu differ)",
              badold, tried);
    tg_ctx_free(c);
}

/* The hash of an application is a sum of products, one per element,
 * and a final mix: applications over grids of small integers, with the
 * arguments in either order, must still get distinct hashes, and both
 * ends of the hash (the table takes the home bucket from the high bits
 * and its tags from the low ones) must spread. */
static void test_grid_hashes(void)
{
    tg_ctx *c = tg_ctx_new(NULL);
    size_t side = 1000, n = side * side, k = 0;
    uint32_t *h = malloc(2 * n * sizeof *h);
    tg_term *f = tg_symbol_cstr(c, "f");
    for (size_t i = 0; i < side; i++)
        for (size_t j = 0; j < side; j++) {
            tg_term *a[2] = {tg_int(c, (int64_t)i), tg_int(c, (int64_t)j)};
            h[k++] = tg_hash(tg_app(c, f, 2, a));
            tg_term *b[2] = {tg_int(c, (int64_t)i), tg_int(c, -(int64_t)j)};
            h[k++] = tg_hash(tg_app(c, f, 2, b));
        }
    /* 2*10^6 random 32-bit values have about 465 collisions */
    size_t d = distinct(h, k);
    TAP_CHECK(d > k - 2000, "(f i j) and (f i -j) over a 1000x1000 grid: %zu distinct hashes of %zu",
              d, k);
    size_t lo[256] = {0}, hi[256] = {0}, lomax = 0, himax = 0;
    for (size_t i = 0; i < k; i++) {
        lo[h[i] & 255]++;
        hi[h[i] >> 24]++;
    }
    for (int i = 0; i < 256; i++) {
        lomax = lo[i] > lomax ? lo[i] : lomax;
        himax = hi[i] > himax ? hi[i] : himax;
    }
    /* the mean is 7812, a standard deviation 88 */
    TAP_CHECK(lomax < 8400 && himax < 8400, "low and high bytes spread (largest counts %zu, %zu)",
              lomax, himax);
    free(h);
    tg_ctx_free(c);
}

/* tg_app of 1 to 3 arguments looks at the first slot of the home bucket
 * whose control byte matches (see "the lean path" in term.c) and leaves
 * everything else to the full probe.  Terms whose hashes all lie in the
 * top 2^20 values (LAST_HOME) and share their low 7 bits have one home
 * bucket and one control byte in any table of up to 4096 buckets, so that for all
 * but one of them that first slot holds another term, with the same
 * count and head, of the same byte: each must still be found, and never
 * mistaken for its neighbour, whichever order they are made and looked
 * up in, by 1, 2 and 3 arguments. */
static tg_term *same_byte_term(tg_ctx *c, tg_term *f, unsigned na, int64_t i)
{
    tg_term *a[3] = {tg_int(c, i), tg_int(c, -i), tg_int(c, 3 * i)};
    return tg_app(c, f, na, a);
}

/* Drop the even-numbered of the n terms keep[k] (made from ids[k]),
 * collect, and count the odd-numbered ones found again. */
static size_t refind_odd(tg_ctx *c, tg_term *f, unsigned na, const int64_t *ids, tg_term **keep,
                         size_t n)
{
    for (size_t k = 0; k < n; k += 2)
        ((tg_term *volatile *)keep)[k] = NULL;
    GC_gcollect();
    size_t same = 0;
    for (size_t k = 1; k < n; k += 2)
        same += same_byte_term(c, f, na, ids[k]) == keep[k];
    return same;
}
static uint32_t same_byte_hash(tg_ctx *c, tg_term *f, unsigned na, int64_t i)
{
    tg_term *a[3] = {tg_int(c, i), tg_int(c, -i), tg_int(c, 3 * i)};
    return (uint32_t)(tgT_app_hash(f, na, a, tgT_ehash(a[na - 1])) >> 20);
}
static void test_same_byte(void)
{
    enum { N = 24 };
    tg_ctx *c = tg_ctx_new(NULL);
    tg_term *f = tg_symbol_cstr(c, "f");
    for (unsigned na = 1; na <= 3; na++) {
        int64_t ids[N];
        size_t n = 0;
        for (int64_t i = 0; n < N; i++) {
            uint32_t h = same_byte_hash(c, f, na, i);
            if (h >= LAST_HOME && (h & 0x7F) == 0x2A)
                ids[n++] = i;
        }
        tg_term **keep = GC_MALLOC(N * sizeof *keep);
        size_t hashed = 0;
        for (size_t k = 0; k < N; k++) {
            keep[k] = same_byte_term(c, f, na, ids[k]);
            hashed += keep[k] && tg_hash(keep[k]) == same_byte_hash(c, f, na, ids[k]);
        }
        TAP_CHECK(hashed == N, "%u arguments: the terms have the hashes computed ahead (%zu of %d)",
                  na, hashed, N);
        size_t same = 0, distinct = 0;
        for (size_t k = N; k-- > 0;)
            same += same_byte_term(c, f, na, ids[k]) == keep[k];
        for (size_t k = 0; k < N; k++)
            same += same_byte_term(c, f, na, ids[k]) == keep[k];
        for (size_t k = 1; k < N; k++)
            distinct += keep[k] != keep[k - 1];
        TAP_CHECK(same == 2 * N && distinct == N - 1,
                  "%u arguments: %d terms of one home bucket and one control byte are found "
                  "again in either order (%zu of %d) and stay distinct", na, N, same, 2 * N);
        tg_term *g = tg_symbol_cstr(c, "g");
        tg_term *other = same_byte_term(c, g, na, ids[0]);
        TAP_CHECK(other != keep[0] && tg_nth(other, 0) == g,
                  "%u arguments: another head with the same arguments is another term", na);
        same = refind_odd(c, f, na, ids, keep, N);
        const char *bad = tgT_table_check(c);
        TAP_CHECK(same == N / 2 && !bad, "%u arguments: after half of them are collected the "
                  "others are found again (%zu of %d; %s)", na, same, N / 2, bad ? bad : "consistent");
    }
    tg_ctx_free(c);
}

/* The lean look finds the first slot of its control byte with word
 * operations whose mask may also mark, above that slot, a slot whose
 * byte differs from it in the lowest bit only (see ct_word_slot in
 * term_table.h); the probe that goes on walks those marks too.  Terms of
 * one home bucket (hashes in the top 2^22 values) whose low 7 bits are
 * 0x2A and 0x2B, made alternately, fill buckets with exactly such
 * neighbours: each must be found again, never mistaken for a neighbour,
 * before and after half of them are collected (which leaves empty slots
 * between them), and new terms of either byte must still be made. */
static void test_byte_apart(void)
{
    enum { N = 24 };
    tg_ctx *c = tg_ctx_new(NULL);
    tg_term *f = tg_symbol_cstr(c, "f");
    for (unsigned na = 1; na <= 3; na++) {
        int64_t ids[N + 2];
        size_t n = 0;
        for (int64_t i = 0; n < N + 2; i++) {
            uint32_t h = same_byte_hash(c, f, na, i);
            if (h >= LAST_HOME && (h & 0x7F) == (0x2Au | (n & 1)))
                ids[n++] = i;
        }
        tg_term **keep = GC_MALLOC(N * sizeof *keep);
        for (size_t k = 0; k < N; k++)
            keep[k] = same_byte_term(c, f, na, ids[k]);
        size_t same = 0, distinct = 0;
        for (size_t k = N; k-- > 0;)
            same += same_byte_term(c, f, na, ids[k]) == keep[k];
        for (size_t k = 0; k < N; k++) {
            same += same_byte_term(c, f, na, ids[k]) == keep[k];
            distinct += tg_nth(keep[k], 1) == tg_int(c, ids[k]);
        }
        TAP_CHECK(same == 2 * N && distinct == N,
                  "%u arguments: %d terms of one home bucket and bytes one bit apart are found "
                  "again (%zu of %d) with their own arguments (%zu)", na, N, same, 2 * N, distinct);
        same = refind_odd(c, f, na, ids, keep, N);
        tg_term *fresh[2] = {same_byte_term(c, f, na, ids[N]), same_byte_term(c, f, na, ids[N + 1])};
        size_t fresh_ok = 0;
        for (int j = 0; j < 2; j++)
            fresh_ok += fresh[j] && tg_nth(fresh[j], 1) == tg_int(c, ids[N + j]) &&
                        same_byte_term(c, f, na, ids[N + j]) == fresh[j];
        const char *bad = tgT_table_check(c);
        TAP_CHECK(same == N / 2 && fresh_ok == 2 && !bad,
                  "%u arguments: after half of them are collected the others are found again "
                  "(%zu of %d), two new ones made and found (%zu); %s",
                  na, same, N / 2, fresh_ok, bad ? bad : "consistent");
    }
    tg_ctx_free(c);
}

/* The lean look tells its first candidate apart by the elements and
 * the header's kind, count and flags, without the hash (app_is in
 * term.c): a longer chunk that starts with the same elements, (f a.. x)
 * or (f a.. . x), made first in the same home bucket with the same
 * control byte, is that first candidate, and the short application must
 * be made apart from it and found again, never mistaken for it.  The
 * hash of (f a..) is same_byte_hash's; x is searched so that the longer
 * chunk's hash lies in the last bucket's range with the same low byte. */
static uint32_t longer_hash(tg_term *f, unsigned na, tg_term **a, tg_term *x, int tail)
{
    if (tail)
        return (uint32_t)(tgT_chunk_finish(tgT_chunk_sum(f, na, na, a, x)) >> 32);
    tg_term *b[4] = {a[0], a[1], a[2], x};
    b[na] = x;
    return (uint32_t)(tgT_app_hash(f, na + 1, b, tgT_ehash(x)) >> 20);
}
static void test_longer_first(void)
{
    for (unsigned na = 1; na <= 3; na++)
        for (int tail = 0; tail <= 1; tail++) {
            tg_ctx *c = tg_ctx_new(NULL);
            tg_term *f = tg_symbol_cstr(c, "f");
            int64_t i = 0;
            uint32_t h;
            while ((h = same_byte_hash(c, f, na, i)) < LAST_HOME)
                i++;
            tg_term *a[4] = {tg_int(c, i), tg_int(c, -i), tg_int(c, 3 * i)}, *x = NULL;
            for (int64_t j = 1; !x; j++) {
                uint32_t g = longer_hash(f, na, a, tg_int(c, j), tail);
                if (g >= LAST_HOME && (g & 0x7F) == (h & 0x7F))
                    x = tg_int(c, j);
            }
            tg_term *e[5] = {f, a[0], a[1], a[2]}, *longer;
            a[na] = x;
            e[na + 1] = x;
            longer = tail ? tgT_chunk(c, na + 1, e, x) : tg_app(c, f, na + 1, a);
            tg_term *t = same_byte_term(c, f, na, i);
            size_t same = 0;
            for (int k = 0; k < 3; k++)
                same += same_byte_term(c, f, na, i) == t &&
                        (tail ? tgT_chunk(c, na + 1, e, x) : tg_app(c, f, na + 1, a)) == longer;
            TAP_CHECK(t && longer && t != longer && tg_hash(longer) == longer_hash(f, na, a, x, tail) &&
                          tg_length(t) == na + 1 && tg_nth(t, na) == a[na - 1] && same == 3 &&
                          !tgT_table_check(c),
                      "%u arguments: (f a..) made after (f a.. %sx) of its home bucket and "
                      "control byte is another term, found again (%zu of 3)",
                      na, tail ? ". " : "", same);
            tg_ctx_free(c);
        }
}

static void test_deep(void)
{
    tg_ctx *c = tg_ctx_new(NULL);
    long n = 1000000;
    tg_term *a = deep(c, n, tg_symbol_cstr(c, "x"));
    tg_term *b = deep(c, n, tg_symbol_cstr(c, "y"));
    TAP_CHECK(a == deep(c, n, tg_symbol_cstr(c, "x")), "a 10^6-deep term is interned");
    TAP_CHECK(tg_compare(a, b) < 0 && tg_compare(b, a) > 0, "comparing 10^6-deep terms");
    TAP_CHECK(tg_hash(a) != tg_hash(b), "hashes of deep terms differ");
    tg_term *v = deep(c, n, tg_var(c, "q", 1, 0));
    TAP_CHECK(!tg_is_ground(v) && tg_is_ground(a), "groundness of deep terms");

    long m = 10000000;
    tg_term **e = GC_MALLOC_ATOMIC(m * sizeof *e);   /* immediate integers only */
    for (long i = 0; i < m; i++)
        e[i] = tg_int(c, i);
    tg_term *l1 = tg_list(c, (size_t)m, e, NULL);
    e[m - 1] = tg_int(c, -1);
    tg_term *l2 = tg_list(c, (size_t)m, e, NULL);
    TAP_CHECK(tg_length(l1) == (size_t)m, "a 10^7-element list");
    TAP_CHECK(tg_compare(l2, l1) < 0, "10^7-element lists differing at the end compare");
    TAP_CHECK(tg_nth(l1, (size_t)m - 1) == tg_int(c, m - 1), "last element of a 10^7 list");
    tg_ctx_free(c);
}

/* A table of up to 4096 buckets (256 KiB) grows at half its slots, so
 * that few lookups go past their home bucket's first candidate; a larger
 * one fills to 7/8 of them (the 48 bytes a node).  Checked on every
 * term added, all kept alive, from an empty table to 10^5 entries. */
static void test_sparse_small(void)
{
    tg_ctx *c = tg_ctx_new(NULL);
    tg_term *f = tg_symbol_cstr(c, "sparse");
    long n = 100000, same = 0;
    tg_term **keep = GC_MALLOC((size_t)n * sizeof *keep);
    double small_max = 0, large_max = 0;
    size_t small_cap = 0;
    for (long i = 0; keep && i < n; i++) {
        tg_term *a[2] = {tg_int(c, i), tg_int(c, -7)};
        keep[i] = tg_app(c, f, 2, a);
        tg_stats st;
        tg_ctx_stats(c, &st);
        double load = (double)st.live / (double)st.capacity;
        if (st.capacity <= 4096 * 7) {
            small_max = load > small_max ? load : small_max;
            small_cap = st.capacity;
        } else
            large_max = load > large_max ? load : large_max;
    }
    for (long i = 0; keep && i < n; i++) {
        tg_term *a[2] = {tg_int(c, i), tg_int(c, -7)};
        same += tg_app(c, f, 2, a) == keep[i];
    }
    TAP_CHECK(small_max > 0.45 && small_max <= 0.5,
              "tables of up to 4096 buckets are at most half full (%.3f at most, up to %zu slots)",
              small_max, small_cap);
    TAP_CHECK(large_max > 0.8 && large_max <= 0.875,
              "a larger one fills to 7/8 of its slots (%.3f at most)", large_max);
    TAP_CHECK(same == n, "the %ld terms are found again (%ld)", n, same);
    TAP_CHECK(tgT_table_check(c) == NULL, "and the table is consistent");
    tg_ctx_free(c);
}

/* A run of entries past the end of a large array: 300 terms whose
 * hashes lie in the top 2^20 values share the last few home buckets of
 * every array up to 4096 x 1024 buckets, so that most of them lie 3 and
 * more buckets from home, many of them wrapped round to the array's
 * first buckets, among 200 000 others that grow the table seven times.
 * A rebuild finds the hash of such an entry from its slot, its home
 * bounded by the run of passed buckets before it (far_span in
 * term_table.c): a wrong window would put it under another home, which
 * the table check and the lookups see. */
static void test_far_run(void)
{
    enum { NF = 300, NB = 200000 };
    static int64_t ids[NF];
    high_keys("far", LAST_HOME, ids, NF);

    tg_ctx *c = tg_ctx_new(NULL);
    tg_term *f = tg_symbol_cstr(c, "far"), *g = tg_symbol_cstr(c, "g");
    tg_term **keep = GC_MALLOC((NF + NB) * sizeof *keep);
    tg_stats st0, st1;
    tg_ctx_stats(c, &st0);
    for (long k = 0; k < NB; k++) {
        tg_term *a[2] = {tg_int(c, k), tg_int(c, -k)};
        keep[NF + k] = tg_app(c, g, 2, a);
        if (k % (NB / NF) == 0 && k / (NB / NF) < NF) {     /* the run, spread over the growth */
            tg_term *x = tg_int(c, ids[k / (NB / NF)]);
            keep[k / (NB / NF)] = tg_app(c, f, 1, &x);
        }
    }
    tg_ctx_stats(c, &st1);
    size_t same = 0;
    for (size_t k = 0; k < NF; k++) {
        tg_term *x = tg_int(c, ids[k]);
        same += tg_app(c, f, 1, &x) == keep[k];
    }
    for (long k = 0; k < NB; k++) {
        tg_term *a[2] = {tg_int(c, k), tg_int(c, -k)};
        same += tg_app(c, g, 2, a) == keep[NF + k];
    }
    tg_stats st2;
    tg_ctx_stats(c, &st2);
    const char *bad = tgT_table_check(c);
    TAP_CHECK(same == NF + NB && st2.created == st1.created && !bad,
              "%d terms of the last home buckets among %d others, through growth from %zu to %zu "
              "slots: all found again (%zu), nothing made, the table consistent (%s)",
              NF, NB, st0.capacity, st1.capacity, same, bad ? bad : "yes");
    tg_ctx_free(c);
}

/* ---- one pointer by every way, while nodes are new ---------------- */

/* The short application (f k1 .. kna) of key k: na is 1 to 3 and the
 * elements small integers and a symbol, so that 1-, 2- and 3-argument
 * nodes share one table. */
static unsigned key_args(tg_ctx *c, long k, tg_term **a)
{
    unsigned na = (unsigned)(k % 3) + 1;
    a[0] = tg_int(c, k);
    a[1] = tg_int(c, -k);
    a[2] = tg_symbol_cstr(c, "z");
    return na;
}

/* Interned by way w: tg_app, tgT_chunk, tgT_app_hashed or tg_app_batch
 * (a batch of the key between two other keys). */
static tg_term *key_way(tg_ctx *c, tg_term *f, long k, int w)
{
    tg_term *a[3];
    unsigned na = key_args(c, k, a);
    switch (w) {
    case 0: return tg_app(c, f, na, a);
    case 1: {
        tg_term *e[4] = {f, a[0], a[1], a[2]};
        return tgT_chunk(c, na + 1, e, TGT_NIL);
    }
    case 2: return tgT_app_hashed(c, tgT_app_hash(f, na, a, tgT_ehash(a[na - 1])), 0, f, na, a);
    default: {  /* between two neighbours, which start with a symbol: never keys */
        tg_term *n = tg_symbol_cstr(c, "n"), *mid[9], *out[3];
        for (unsigned i = 0; i < 3; i++)
            for (unsigned j = 0; j < na; j++)
                mid[i * na + j] = i == 1 ? a[j] : j == 0 ? n : tg_int(c, 2 * k + i);
        if (tg_app_batch(c, f, na, 3, mid, out, NULL))
            return NULL;
        return out[1];
    }
    }
}

/* New nodes mixed with lookups by every way, drops and collections: a
 * node made by one way is the same pointer by every other, found at once
 * (while whatever a new node's making left pending is pending), a few
 * nodes later, after the table grows and after collections that prune
 * it; no key is ever made twice (the created count moves by one per new
 * key only), and the table stays consistent. */
static void test_every_way(void)
{
    tg_ctx *c = tg_ctx_new(NULL);
    tg_term *f = tg_symbol_cstr(c, "f");
    enum { N = 60000 };
    tg_term **kept = GC_MALLOC(N * sizeof *kept);
    long wrong = 0, made = 0, dups = 0;
    const char *bad_mid = NULL;
    uint64_t r = 0x9E3779B97F4A7C15ull;
    tg_stats st;
    tg_ctx_stats(c, &st);
    size_t created0 = st.created, cap0 = st.capacity;
    for (long k = 0; k < N; k++) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        int w = (int)(r % 4);
        tg_term *t = key_way(c, f, k, w);
        tg_ctx_stats(c, &st);
        size_t before = st.created;
        for (int v = 0; v < 3; v++)     /* the batch's neighbours may be new */
            wrong += key_way(c, f, k, v) != t;
        tg_ctx_stats(c, &st);
        dups += st.created != before;
        wrong += key_way(c, f, k, 3) != t;
        if (k >= 8)     /* an older key, by another way */
            wrong += kept[k - 8] && key_way(c, f, k - 8, (w + 1) % 4) != kept[k - 8];
        kept[k] = (r >> 8) % 4 ? t : NULL;  /* a quarter dropped */
        made++;
        if (k % 15000 == 14999) {
            GC_gcollect();
            for (long j = 0; j <= k; j++)
                wrong += kept[j] && key_way(c, f, j, (int)(j % 4)) != kept[j];
            if (!bad_mid)
                bad_mid = tgT_table_check(c);
        }
    }
    tg_ctx_stats(c, &st);
    TAP_CHECK(wrong == 0, "%ld keys by four ways, found again at once, 8 keys later and after "
              "collections: one pointer each (%ld differ)", made, wrong);
    TAP_CHECK(st.capacity > cap0, "the table grew meanwhile (%zu to %zu slots)", cap0, st.capacity);
    TAP_CHECK(st.reclaimed > 0, "and collections pruned it (%zu entries)", st.reclaimed);
    TAP_CHECK(!bad_mid, "the table is consistent after each collection (%s)",
              bad_mid ? bad_mid : "yes");
    /* every kept key made again, by tg_app alone: nothing new */
    tg_ctx_stats(c, &st);
    size_t c1 = st.created;
    long again = 0;
    for (long k = 0; k < N; k++)
        if (kept[k])
            again += key_way(c, f, k, 0) == kept[k];
    tg_ctx_stats(c, &st);
    long nkept = 0;
    for (long k = 0; k < N; k++)
        nkept += kept[k] != NULL;
    TAP_CHECK(again == nkept && st.created == c1,
              "the %ld kept keys are found by tg_app, nothing made (%zu made)", nkept,
              st.created - c1);
    TAP_CHECK(st.created > created0 && dups == 0,
              "looking a new key up by three ways made nothing (%ld times something)", dups);
    const char *bad = tgT_table_check(c);
    TAP_CHECK(!bad, "the table is consistent at the end (%s)", bad ? bad : "yes");
    tg_ctx_free(c);
}

/* ---- growth through every size ------------------------------------ */

/* The rebuild finds each entry's hash from its slot, with a window
 * chosen by how far the entry lies from its home (0, 1, 2, or 3 and
 * more buckets): a wrong window would put the entry under another home.
 * A table grown from its first size past 2*10^5 entries, a third of them
 * dropped and collected along the way, is checked after every growth:
 * consistent, every kept term found again, nothing made twice; and the
 * tables that grew held entries at every displacement, so that each
 * window was used. */
static void test_grow_every_size(void)
{
    enum { N = 240000, SCAN = 2000 };
    tg_ctx *c = tg_ctx_new(NULL);
    tg_term *f = tg_symbol_cstr(c, "f");
    tg_term **keep = GC_MALLOC(N * sizeof *keep);
    size_t seen[4] = {0}, last[4] = {0};
    long growths = 0, lost = 0, collections = 0;
    const char *bad = NULL;
    tg_stats st;
    tg_ctx_stats(c, &st);
    size_t cap = st.capacity;
    for (long k = 0; k < N; k++) {
        tg_term *a[2] = {tg_int(c, k), tg_int(c, -k)};
        keep[k] = tg_app(c, f, 2, a);
        if (k % 3 == 2)
            keep[k - 1] = NULL;
        if (k % SCAN == 0)
            tgT_table_disp_counts(c, last);
        tg_ctx_stats(c, &st);
        if (st.capacity == cap)
            continue;
        cap = st.capacity;
        growths++;
        for (int d = 0; d < 4; d++)     /* the table that just grew, as last scanned */
            seen[d] += last[d];
        if (growths % 3 == 0) {
            GC_gcollect();
            collections++;
        }
        if (!bad)
            bad = tgT_table_check(c);
        size_t made = st.created;
        for (long j = 0; j <= k; j++)
            if (keep[j]) {
                tg_term *b[2] = {tg_int(c, j), tg_int(c, -j)};
                lost += tg_app(c, f, 2, b) != keep[j];
            }
        tg_ctx_stats(c, &st);
        lost += st.created != made;
        tgT_table_disp_counts(c, last);
    }
    TAP_CHECK(growths >= 10 && collections >= 3,
              "the table grew %ld times, to %zu slots, with %ld collections between", growths,
              cap, collections);
    TAP_CHECK(!bad, "consistent after every growth (%s)", bad ? bad : "yes");
    TAP_CHECK(lost == 0, "every kept term found again after every growth, nothing made (%ld not)",
              lost);
    TAP_CHECK(seen[1] > 0 && seen[2] > 0 && seen[3] > 0,
              "the tables that grew held entries 1, 2, and 3 or more buckets from home "
              "(%zu, %zu, %zu; %zu at home)", seen[1], seen[2], seen[3], seen[0]);
    tg_ctx_free(c);
}

/* tg_app's inline look at the home bucket, in a table of at most 4096
 * buckets, finds the bucket's place with a shift and a mask of its own,
 * which must agree with home_in: else each lookup goes on to the full
 * probe, which still finds the term, only slower.  So the look alone
 * (tgT_app_lean) must find nearly every kept term of such a table (at
 * half load, all but those behind another entry of their control byte
 * or past their home), whose size is a power of 2, and none in a larger
 * table, where it does not look. */
static void test_lean_home(void)
{
    enum { N = 40000 };
    tg_ctx *c = tg_ctx_new(NULL);
    tg_term *f = tg_symbol_cstr(c, "f");
    tg_term **keep = GC_MALLOC(N * sizeof *keep);
    tg_stats st;
    size_t cap = 0;
    int small = 0, large = 0, bad = 0;
    for (long k = 0; k < N; k++) {
        tg_term *a[2] = {tg_int(c, k), tg_int(c, 7 * k)};
        keep[k] = tg_app(c, f, 2, a);
        tg_ctx_stats(c, &st);
        if (st.capacity == cap && k + 1 < N)
            continue;
        cap = st.capacity;  /* a new size: look up what the table held before */
        size_t nb = cap / 7, lean = 0;
        for (long j = 0; j < k; j++) {
            tg_term *b[2] = {tg_int(c, j), tg_int(c, 7 * j)};
            lean += tgT_app_lean(c, f, 2, b) == keep[j];
        }
        if (nb <= 4096) {
            small++;
            bad += (nb & (nb - 1)) != 0 || lean * 10 < (size_t)k * 9;
        } else {
            large++;
            bad += lean != 0;
        }
    }
    TAP_CHECK(small >= 5 && large >= 1 && !bad,
              "the inline look alone finds 90%% of a small table's terms, none of a large "
              "one's (%d small sizes, %d large, %d wrong)",
              small, large, bad);
    tg_ctx_free(c);
}

/* The lean look of tg_app reads the table without entering it, so a
 * collection may stop the thread between its read of a bucket's control
 * word and its read of the slot, and prune that very entry.  Here one
 * thread looks up, over and over, 2-argument terms it never keeps (in a
 * small table, where the look reads the node without comparing tags)
 * while another collects as fast as it can: most collections stop the
 * first in a lookup of a dead term, whose entry they remove.  A slot so
 * read must hold a header that matches nothing (VACANT in
 * term_table.h): with the slot cleared to 0 instead, this test crashes
 * on a read at address 0 within seconds. */
struct race {
    tg_ctx *c;
    _Atomic int stop;
    _Atomic long collections;   /* counted by the collecting thread, read by the other */
    long lookups;
    int ok;
};

static void *race_collect(void *p)
{
    struct race *r = p;
    while (!atomic_load(&r->stop)) {
        GC_gcollect();
        r->collections++;
    }
    return NULL;
}

static void test_lean_race(void)
{
    struct race r = {tg_ctx_new(NULL), 0, 0, 0, 1};
    tg_term *f = tg_symbol_cstr(r.c, "f");
    enum { K = 1000, KEEP = 100 };
    tg_term **keep = GC_MALLOC(KEEP * sizeof *keep);
    for (long i = 0; i < KEEP; i++) {
        tg_term *a[2] = {tg_int(r.c, -1 - i), tg_int(r.c, 7)};
        keep[i] = tg_app(r.c, f, 2, a);
    }
    pthread_t th;
    int started = GC_pthread_create(&th, NULL, race_collect, &r) == 0;
    while (started && (r.collections < 1000 || r.lookups < 2000000) && r.lookups < 100000000) {
        for (long i = 0; i < K; i++) {
            tg_term *a[2] = {tg_int(r.c, i), tg_int(r.c, 7)};
            tg_term *t = tg_app(r.c, f, 2, a);
            r.ok &= t != NULL && tg_nth(t, 1) == a[0];
        }
        for (long i = 0; i < KEEP; i++) {
            tg_term *a[2] = {tg_int(r.c, -1 - i), tg_int(r.c, 7)};
            r.ok &= tg_app(r.c, f, 2, a) == keep[i];
        }
        r.lookups += K + KEEP;
    }
    atomic_store(&r.stop, 1);
    if (started)
        GC_pthread_join(th, NULL);
    const char *bad = tgT_table_check(r.c);
    TAP_CHECK(started && r.ok && !bad,
              "lookups of dropped terms while another thread collects: every answer right, "
              "kept terms the same pointers, the table consistent (%ld lookups, %ld collections; %s)",
              r.lookups, r.collections, bad ? bad : "consistent");
    tg_ctx_free(r.c);
}

int main(void)
{
    GC_INIT();
    test_churn();
    test_identity();
    test_created();
    test_busy_collection();
    test_narrow_tags();
    test_overflow();
    test_threads();
    test_lean_race();
    test_chain_hashes();
    test_ahead_hashes();
    test_grid_hashes();
    test_same_byte();
    test_byte_apart();
    test_longer_first();
    test_sparse_small();
    test_far_run();
    test_deep();
    test_every_way();
    test_grow_every_size();
    test_lean_home();
    return TAP_DONE();
}
