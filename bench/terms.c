/* terms.c - benchmark of the hash-cons core, one JSON object per line.
 *
 * Every figure is the median of several runs and comes with a reference
 * measured in the same run, because the machines are noisy:
 *   intern_new     distinct (f i -i) nodes kept alive, vs malloc+memcpy
 *                  of the same 32 bytes per node, and vs a hand-written
 *                  C hash-cons table of the same keys (hashcons_new);
 *   intern_churn   nodes built and dropped at once (the collector reclaims
 *                  them), vs the same reference;
 *   intern_lookup  re-interning nodes that exist, at several working-set
 *                  sizes, vs a hand-written open-addressing set of the
 *                  same 3-word keys (one tg_app call per lookup);
 *   intern_lookup_shuffled  the same keys and both sides, looked up in a
 *                  random order (ORDER indices, cycled) instead of in
 *                  sequence: see lookup_order;
 *   intern_lookup_batch  the same lookups through the batched call
 *                  tg_app_batch, BATCH applications per call: a separate
 *                  interface, reported apart from the single-call rows;
 *   intern_new_batch  intern_new's nodes made through tg_app_batch, vs
 *                  the same malloc+memcpy reference;
 *   bytes_per_node heap and table bytes per live 2-argument node.
 * Both sides of each comparison do the same work per iteration: the
 * arguments are made before the clock starts (tgrel's small-integer
 * terms, the reference's raw words) and read from an array in the timed
 * loop, so that tgrel is not charged for two tg_int calls per node that
 * the reference, whose keys are plain integers, does not make.
 * Usage: terms [scale]  (scale 1 = full size; smaller for a quick look)
 */
#define GC_THREADS 1
#include <gc/gc.h>

#include "tgrel.h"
#include "bench.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>

#define RUNS 5

/* Each timed loop in a function of its own on a 64-byte boundary, so
 * that where its code lands does not move with edits elsewhere in this
 * file: the C set's loop of ref_lookup, the same source, ran among 10^4
 * keys at 393 M/s, 461 and 412 as compiled as is, with -falign-loops=32
 * and with 64-byte functions and loops (one run each, the same minutes;
 * tgrel's lookups 211, 215 and 210), the branch predictor's tables
 * being indexed by the branches' addresses. */
#define TIMED __attribute__((noinline, aligned(64)))

static volatile uintptr_t sink;

/* The order of the shuffled lookup rows: ORDER indices into a set of k
 * keys, uniform, from a fixed seed, read in turn and cycled.  In
 * sequence, as the other rows look keys up, the pattern of every branch
 * repeats with the set's period, and a period of 10^3 keys is short
 * enough for the processor's branch predictor to learn: the C set's
 * probe loop, whose exit depends on where each key lies, then never
 * mispredicts.  A period of 2^20 is far beyond what it learns, as any
 * real sequence of lookups is.  Both sides read the same indices. */
#define ORDER (1u << 20)
static uint32_t *lookup_order(long k)
{
    uint32_t *o = malloc(ORDER * sizeof *o);
    if (!o)
        abort();
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (uint32_t q = 0; q < ORDER; q++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;    /* xorshift64 */
        o[q] = (uint32_t)(((x >> 32) * (uint64_t)k) >> 32);
    }
    return o;
}

/* ---- references --------------------------------------------------- */

/* malloc + memcpy of a 32-byte node image, all kept, then freed. */
static TIMED double ref_alloc(long n)
{
    void **keep = malloc((size_t)n * sizeof *keep);
    uint64_t img[4] = {0x0300000700000000ull, 0, 0, 0};
    double t0 = bench_now();
    for (long i = 0; i < n; i++) {
        img[2] = (uint64_t)i;
        img[3] = (uint64_t)-i;
        keep[i] = malloc(32);
        memcpy(keep[i], img, 32);
    }
    double dt = bench_now() - t0;
    for (long i = 0; i < n; i++)
        free(keep[i]);
    free(keep);
    return (double)n / dt / 1e6;
}

/* The arguments of node i, (i, -i), for n nodes: raw words for the C
 * references, made before their clocks start as tgrel's are (term_args). */
static uint64_t *raw_args(long n)
{
    uint64_t *a = malloc((size_t)n * 2 * sizeof *a);
    if (!a)
        abort();
    for (long i = 0; i < n; i++) {
        a[2 * i] = (uint64_t)i;
        a[2 * i + 1] = (uint64_t)-i;
    }
    return a;
}

/* A minimal open-addressing set of (head, a, b) keys: what a lookup of
 * an existing key costs on this machine with a plain C loop. */
typedef struct { uint64_t h, a, b; } key3;
static uint64_t mix3(uint64_t h, uint64_t a, uint64_t b)
{
    uint64_t x = (h ^ a * 0x9E3779B97F4A7C15ull) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ b ^ (x >> 31)) * 0x94D049BB133111EBull;
    return x ^ (x >> 29);
}
/* The C set of the k keys: cap slots (a power of 2), the keys in *keysp,
 * as ref_lookup makes it (which keeps its own copy: see ref_lookup_at). */
static key3 **ref_set(long k, size_t *capp, key3 **keysp)
{
    size_t cap = 1;
    while (cap < (size_t)k * 2)
        cap <<= 1;
    key3 **slots = calloc(cap, sizeof *slots);
    key3 *keys = malloc((size_t)k * sizeof *keys);
    for (long i = 0; i < k; i++) {
        keys[i] = (key3){7, (uint64_t)i, (uint64_t)-i};
        size_t j = mix3(7, (uint64_t)i, (uint64_t)-i) & (cap - 1);
        while (slots[j])
            j = (j + 1) & (cap - 1);
        slots[j] = &keys[i];
    }
    *capp = cap, *keysp = keys;
    return slots;
}
static TIMED double ref_lookup(long k, long total)
{
    size_t cap = 1;
    while (cap < (size_t)k * 2)
        cap <<= 1;
    key3 **slots = calloc(cap, sizeof *slots);
    key3 *keys = malloc((size_t)k * sizeof *keys);
    uint64_t *args = raw_args(k);
    for (long i = 0; i < k; i++) {
        keys[i] = (key3){7, (uint64_t)i, (uint64_t)-i};
        size_t j = mix3(7, (uint64_t)i, (uint64_t)-i) & (cap - 1);
        while (slots[j])
            j = (j + 1) & (cap - 1);
        slots[j] = &keys[i];
    }
    double t0 = bench_now();
    uintptr_t acc = 0;
    for (long r = 0; r < total / k; r++)
        for (long i = 0; i < k; i++) {
            uint64_t a = args[2 * i], b = args[2 * i + 1];
            size_t j = mix3(7, a, b) & (cap - 1);
            key3 *c;
            while ((c = slots[j]) && !(c->h == 7 && c->a == a && c->b == b))
                j = (j + 1) & (cap - 1);
            acc += (uintptr_t)c;
        }
    double dt = bench_now() - t0;
    sink = acc;
    free(slots);
    free(keys);
    free(args);
    return (double)(total / k * k) / dt / 1e6;
}
/* ref_lookup's lookups at the indices of ord (ORDER of them, cycled).
 * A function of its own: with one function for both orders (a choice
 * between the two loops, or a probe function both called) GCC compiled
 * the loop in sequence differently, and that C set ran at 460 M/s among
 * 10^4 keys where this code gives about 345 (the branch predictor meets
 * other branches), which would have moved the reference. */
static TIMED double ref_lookup_at(long k, long total, const uint32_t *ord)
{
    size_t cap;
    key3 *keys, **slots = ref_set(k, &cap, &keys);
    uint64_t *args = raw_args(k);
    double t0 = bench_now();
    uintptr_t acc = 0;
    for (long q = 0; q < total / k * k; q++) {
        uint32_t i = ord[q & (ORDER - 1)];
        uint64_t a = args[2 * i], b = args[2 * i + 1];
        size_t j = mix3(7, a, b) & (cap - 1);
        key3 *c;
        while ((c = slots[j]) && !(c->h == 7 && c->a == a && c->b == b))
            j = (j + 1) & (cap - 1);
        acc += (uintptr_t)c;
    }
    double dt = bench_now() - t0;
    sink = acc;
    free(slots);
    free(keys);
    free(args);
    return (double)(total / k * k) / dt / 1e6;
}

/* A plain C hash-cons table of the same (head, a, b) nodes, grown from
 * empty as tgrel's is: what interning new nodes costs on this machine
 * without a collector, weak entries or any memory bound.  Each slot holds
 * the 64-bit hash and the node (so growth never reads a node), linear
 * probing at a load of at most 3/4, doubling, large tables on 2 MiB pages
 * like tgrel's, 32-byte nodes (a header word and the key, as tgrel's)
 * taken from a pool allocated and touched beforehand. */
typedef struct { uint64_t hdr; key3 k; } hc_node;
typedef struct { uint64_t hash; hc_node *node; } hc_slot;
/* Its memory is mapped directly, zeroed, so that freeing it leaves
 * malloc's thresholds, and so the malloc reference, as they were. */
static void *hc_map(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        abort();
#ifdef MADV_HUGEPAGE
    if (bytes >= ((size_t)2 << 20))
        madvise(p, bytes, MADV_HUGEPAGE);
#endif
    return p;
}
static hc_slot *hc_grow(hc_slot *t, size_t cap)
{
    size_t nc = cap * 2;
    hc_slot *nt = hc_map(nc * sizeof *nt);
    for (size_t i = 0; i < cap; i++)
        if (t[i].node) {
            size_t j = t[i].hash & (nc - 1);
            while (nt[j].node)
                j = (j + 1) & (nc - 1);
            nt[j] = t[i];
        }
    munmap(t, cap * sizeof *t);
    return nt;
}
static TIMED double ref_hashcons(long n, double *bytes_per_node)
{
    hc_node *pool = hc_map((size_t)n * sizeof *pool);
    memset(pool, 0, (size_t)n * sizeof *pool);     /* touched before the clock starts */
    size_t cap = 256, count = 0;
    hc_slot *t = hc_map(cap * sizeof *t);
    uint64_t *args = raw_args(n);
    uintptr_t acc = 0;
    double t0 = bench_now();
    for (long i = 0; i < n; i++) {
        uint64_t a = args[2 * i], b = args[2 * i + 1], h = mix3(7, a, b);
        size_t j = h & (cap - 1);
        hc_node *c = NULL;
        for (; t[j].node; j = (j + 1) & (cap - 1))
            if (t[j].hash == h && t[j].node->k.h == 7 && t[j].node->k.a == a && t[j].node->k.b == b) {
                c = t[j].node;
                break;
            }
        if (!c) {
            c = &pool[count];
            *c = (hc_node){h, {7, a, b}};
            t[j] = (hc_slot){h, c};
            if (++count * 4 > cap * 3) {
                t = hc_grow(t, cap);
                cap *= 2;
            }
        }
        acc += (uintptr_t)c;
    }
    double dt = bench_now() - t0;
    sink = acc;
    *bytes_per_node = (double)(cap * sizeof *t) / (double)n + (double)sizeof *pool;
    munmap(t, cap * sizeof *t);
    munmap(pool, (size_t)n * sizeof *pool);
    free(args);
    return (double)n / dt / 1e6;
}

/* ---- tgrel -------------------------------------------------------- */

/* The argument terms of node i, (i, -i), for n nodes.  Small integers
 * are immediate words, not collector objects, so the array is malloc'd:
 * the collector need not scan it (as it need not scan raw_args'). */
static tg_term **term_args(tg_ctx *c, long n)
{
    tg_term **a = malloc((size_t)n * 2 * sizeof *a);
    if (!a)
        abort();
    for (long i = 0; i < n; i++) {
        a[2 * i] = tg_int(c, i);
        a[2 * i + 1] = tg_int(c, -i);
    }
    return a;
}

static TIMED double tg_new(long n, tg_term ***keep_out, tg_ctx **ctx_out)
{
    tg_ctx *c = tg_ctx_new(NULL);
    tg_term *f = tg_symbol_cstr(c, "f");
    tg_term **keep = GC_MALLOC((size_t)n * sizeof *keep);
    tg_term **args = term_args(c, n);
    double t0 = bench_now();
    for (long i = 0; i < n; i++)
        keep[i] = tg_app(c, f, 2, args + 2 * i);
    double dt = bench_now() - t0;
    free(args);
    if (keep_out) {
        *keep_out = keep;
        *ctx_out = c;
    } else
        tg_ctx_free(c);
    return (double)n / dt / 1e6;
}

static TIMED double tg_churn(long n)
{
    tg_ctx *c = tg_ctx_new(NULL);
    tg_term *f = tg_symbol_cstr(c, "f");
    double t0 = bench_now();
    for (long i = 0; i < n; i++) {
        tg_term *a[2] = {tg_int(c, i), tg_int(c, i + 1)};
        sink += (uintptr_t)tg_app(c, f, 2, a);
    }
    double dt = bench_now() - t0;
    tg_ctx_free(c);
    return (double)n / dt / 1e6;
}

static TIMED double tg_lookup(long k, long total)
{
    tg_term **keep;
    tg_ctx *c;
    tg_new(k, &keep, &c);
    tg_term *f = tg_symbol_cstr(c, "f");
    tg_term **args = term_args(c, k);
    long bad = 0;
    double t0 = bench_now();
    for (long r = 0; r < total / k; r++)
        for (long i = 0; i < k; i++)
            bad += tg_app(c, f, 2, args + 2 * i) != keep[i];
    double dt = bench_now() - t0;
    free(args);
    if (bad)
        fprintf(stderr, "terms: %ld lookups returned a new pointer\n", bad);
    tg_ctx_free(c);
    return (double)(total / k * k) / dt / 1e6;
}

/* tg_lookup's lookups at the indices of ord, as ref_lookup_at. */
static TIMED double tg_lookup_at(long k, long total, const uint32_t *ord)
{
    tg_term **keep;
    tg_ctx *c;
    tg_new(k, &keep, &c);
    tg_term *f = tg_symbol_cstr(c, "f");
    tg_term **args = term_args(c, k);
    long bad = 0;
    double t0 = bench_now();
    for (long q = 0; q < total / k * k; q++) {
        uint32_t i = ord[q & (ORDER - 1)];
        bad += tg_app(c, f, 2, args + 2 * i) != keep[i];
    }
    double dt = bench_now() - t0;
    free(args);
    if (bad)
        fprintf(stderr, "terms: %ld shuffled lookups returned a new pointer\n", bad);
    tg_ctx_free(c);
    return (double)(total / k * k) / dt / 1e6;
}

/* The lookups of tg_lookup through tg_app_batch, BATCH per call; the
 * result array is on the stack, which the collector scans. */
#define BATCH 256
static TIMED double tg_lookup_batch(long k, long total)
{
    tg_term **keep;
    tg_ctx *c;
    tg_new(k, &keep, &c);
    tg_term *f = tg_symbol_cstr(c, "f");
    tg_term **args = term_args(c, k), *out[BATCH];
    long bad = 0;
    double t0 = bench_now();
    for (long r = 0; r < total / k; r++)
        for (long i = 0; i < k; i += BATCH) {
            long m = k - i < BATCH ? k - i : BATCH;
            if (tg_app_batch(c, f, 2, (size_t)m, args + 2 * i, out, NULL))
                bad += m;
            else
                for (long j = 0; j < m; j++)
                    bad += out[j] != keep[i + j];
        }
    double dt = bench_now() - t0;
    free(args);
    if (bad)
        fprintf(stderr, "terms: %ld batched lookups returned a new pointer\n", bad);
    tg_ctx_free(c);
    return (double)(total / k * k) / dt / 1e6;
}

/* tg_new's nodes through tg_app_batch, BATCH per call. */
static TIMED double tg_new_batch(long n)
{
    tg_ctx *c = tg_ctx_new(NULL);
    tg_term *f = tg_symbol_cstr(c, "f");
    tg_term **keep = GC_MALLOC((size_t)n * sizeof *keep);
    tg_term **args = term_args(c, n);
    long bad = 0;
    double t0 = bench_now();
    for (long i = 0; i < n; i += BATCH) {
        long m = n - i < BATCH ? n - i : BATCH;
        bad += tg_app_batch(c, f, 2, (size_t)m, args + 2 * i, keep + i, NULL) != 0;
    }
    double dt = bench_now() - t0;
    free(args);
    if (bad)
        fprintf(stderr, "terms: %ld batches of new nodes failed\n", bad);
    tg_ctx_free(c);
    return (double)n / dt / 1e6;
}

/* The collector's heap in use: mapped heap less its free blocks. */
static double heap_used(void)
{
    GC_word heap, freeb, unm, since, total;
    GC_get_heap_usage_safe(&heap, &freeb, &unm, &since, &total);
    return (double)(heap - freeb);
}

/* Heap bytes per node are measured as what dropping the nodes gives
 * back: the heap in use with them kept, less the heap in use once the
 * keep array is cleared (the array itself stays referenced, so it counts
 * on both sides) and a collection has run.  A difference taken against a
 * baseline before the nodes were made depended on whether a stale word on
 * the stack still held an earlier phase's nodes at that moment. */
static void bytes_per_node(long n)
{
    tg_term **keep;
    tg_ctx *c;
    tg_new(n, &keep, &c);
    GC_gcollect();
    double with = heap_used();
    tg_stats st;
    tg_ctx_stats(c, &st);
    memset(keep, 0, (size_t)n * sizeof *keep);
    GC_gcollect();
    double heap = with - heap_used();
    double table = (double)st.table_bytes;
    printf("{\"bench\":\"bytes_per_node\",\"nodes\":%ld,\"heap_bytes_per_node\":%.1f,"
           "\"table_bytes_per_node\":%.1f,\"bytes_per_node\":%.1f,\"table_load\":%.2f,"
           "\"target_max\":48}\n",
           n, heap / (double)n, table / (double)n, (heap + table) / (double)n,
           (double)st.live / (double)st.capacity);
    sink += (uintptr_t)keep;
    tg_ctx_free(c);
}

/* Medians of RUNS runs of f(arg), each beside the malloc reference for n
 * nodes. */
static void with_alloc_ref(double (*f)(long), long arg, long n, double *mine, double *ref)
{
    double a[RUNS], b[RUNS];
    for (int r = 0; r < RUNS; r++) {
        a[r] = f(arg);
        b[r] = ref_alloc(n);
    }
    *mine = bench_median(a, RUNS);
    *ref = bench_median(b, RUNS);
}

/* The intern_lookup_shuffled row of k keys: medians of RUNS runs of
 * both sides over the same random order. */
static void shuffled_row(long k, long total)
{
    uint32_t *ord = lookup_order(k);
    double a[RUNS], b[RUNS];
    for (int r = 0; r < RUNS; r++) {
        a[r] = tg_lookup_at(k, total, ord);
        b[r] = ref_lookup_at(k, total, ord);
    }
    free(ord);
    double ta = bench_median(a, RUNS), tb = bench_median(b, RUNS);
    printf("{\"bench\":\"intern_lookup_shuffled\",\"api\":\"tg_app\",\"working_set\":%ld,"
           "\"order\":\"%u random indices, cycled\",\"mlookups_per_s\":%.2f,"
           "\"ref\":\"C open-addressing set\",\"ref_mlookups_per_s\":%.2f,\"ratio_to_ref\":%.2f}\n",
           k, ORDER, ta, tb, ta / tb);
}

int main(int argc, char **argv)
{
    GC_INIT();
    double scale = argc > 1 ? atof(argv[1]) : bench_scale(1);
    long n = (long)(1e6 * scale), churn = (long)(2e7 * scale), total = (long)(2e7 * scale);
    if (n < 1000)
        n = 1000;
    double a[RUNS], b[RUNS], c[RUNS], hc_bytes = 0;

    for (int r = 0; r < RUNS; r++) {
        a[r] = tg_new(n, NULL, NULL);
        b[r] = ref_alloc(n);
        c[r] = ref_hashcons(n, &hc_bytes);
    }
    double ta = bench_median(a, RUNS), tb = bench_median(b, RUNS), tc = bench_median(c, RUNS);
    printf("{\"bench\":\"intern_new\",\"nodes\":%ld,\"mnodes_per_s\":%.2f,"
           "\"ref\":\"malloc+memcpy 32B\",\"ref_mnodes_per_s\":%.2f,\"ratio_to_ref\":%.2f,"
           "\"target_min\":20}\n", n, ta, tb, ta / tb);
    printf("{\"bench\":\"hashcons_new\",\"nodes\":%ld,\"mnodes_per_s\":%.2f,"
           "\"ref\":\"C hash-cons table, no collector\",\"ref_mnodes_per_s\":%.2f,"
           "\"ratio_to_ref\":%.2f,\"ref_bytes_per_node\":%.1f}\n", n, ta, tc, ta / tc, hc_bytes);

    with_alloc_ref(tg_new_batch, n, n, &ta, &tb);
    printf("{\"bench\":\"intern_new_batch\",\"api\":\"tg_app_batch, %d per call\",\"nodes\":%ld,"
           "\"mnodes_per_s\":%.2f,\"ref\":\"malloc+memcpy 32B\",\"ref_mnodes_per_s\":%.2f,"
           "\"ratio_to_ref\":%.2f}\n", BATCH, n, ta, tb, ta / tb);

    with_alloc_ref(tg_churn, churn, n, &ta, &tb);
    printf("{\"bench\":\"intern_churn\",\"nodes\":%ld,\"mnodes_per_s\":%.2f,"
           "\"ref\":\"malloc+memcpy 32B\",\"ref_mnodes_per_s\":%.2f,\"ratio_to_ref\":%.2f,"
           "\"target_min\":20}\n", churn, ta, tb, ta / tb);

    long sets[] = {1000, 10000, 100000, 1000000};
    for (size_t s = 0; s < sizeof sets / sizeof *sets; s++) {
        long k = sets[s];
        if (k > n)
            break;
        for (int r = 0; r < RUNS; r++) {
            a[r] = tg_lookup(k, total);
            b[r] = ref_lookup(k, total);
        }
        ta = bench_median(a, RUNS);
        tb = bench_median(b, RUNS);
        printf("{\"bench\":\"intern_lookup\",\"api\":\"tg_app\",\"working_set\":%ld,"
               "\"mlookups_per_s\":%.2f,\"ref\":\"C open-addressing set\","
               "\"ref_mlookups_per_s\":%.2f,\"ratio_to_ref\":%.2f,\"target_min\":40}\n",
               k, ta, tb, ta / tb);
    }
    for (size_t s = 0; s < sizeof sets / sizeof *sets && sets[s] <= n; s++)
        shuffled_row(sets[s], total);
    for (size_t s = 0; s < sizeof sets / sizeof *sets; s++) {
        long k = sets[s];
        if (k > n)
            break;
        for (int r = 0; r < RUNS; r++) {
            a[r] = tg_lookup_batch(k, total);
            b[r] = ref_lookup(k, total);
        }
        ta = bench_median(a, RUNS);
        tb = bench_median(b, RUNS);
        printf("{\"bench\":\"intern_lookup_batch\",\"api\":\"tg_app_batch, %d per call\","
               "\"working_set\":%ld,\"mlookups_per_s\":%.2f,\"ref\":\"C open-addressing set\","
               "\"ref_mlookups_per_s\":%.2f,\"ratio_to_ref\":%.2f}\n",
               BATCH, k, ta, tb, ta / tb);
    }
    bytes_per_node(n);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("{\"bench\":\"peak_rss\",\"kib\":%ld}\n", ru.ru_maxrss);
    return 0;
}
