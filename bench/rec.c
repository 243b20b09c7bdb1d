/* rec.c - the REC rewrite-engine benchmarks on tgrel's rewriting engine:
 * each benchmark file (neutral format, see the shared REC folder's README)
 * is converted to .rules text, loaded, and every query normalised and
 * checked against its expected normal form (the term itself, or the
 * SHA-256 of its printing).  One JSON object per benchmark on stdout.
 *
 *   rec [--memo] [--reps N] FILE...   run (memo: TG_NF_MEMO)
 *   rec --pair [--reps N] FILE...      plain and memo in turn (below)
 *   rec --emit-rules FILE...           print the converted .rules and exit
 *
 * Times are CPU milliseconds of the tg_normalize calls only (Maude's own
 * "ms cpu" likewise covers the reduction, not parsing or printing), min
 * and median over the repetitions; each repetition starts from a fresh
 * context and rule set so that no memo or hash-cons entry carries over.
 * The reference, Maude 3.2 on the same files, is measured in the same run
 * by bench/rec.sh, which asks the collector for one mark thread
 * (GC_MARKERS=1), as Maude runs on one; "gc_parallel_mark" says whether
 * marking ran on more.  Exit status 1 when a normal form is wrong or a step
 * fails, 2 on bad usage.
 *
 * --pair times memo against plain in one process: each repetition runs
 * the benchmark once without memo and once with it, back to back (plain
 * first in even repetitions, memo first in odd ones), so that both see
 * the same machine, caches and heap.  It prints the two objects of a
 * run without memo and one with it (max_rss_mb is then the process's,
 * both modes together), then a "rec-pair" object: the ratio of the two
 * minimums and the median of the repetitions' own ratios memo / plain.
 * For a run of some tens of microseconds, a time taken in a process of
 * its own is mostly the noise of that process's start and of the
 * machine's load; two such runs side by side in one process differ
 * only by what memo does. */
#define GC_THREADS 1
#include <gc/gc.h>

#include "tgrel.h"
#include "bench.h"
#include "rec_convert.h"
#include "rec_engine.h"
#include "rec_sha256.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

typedef struct options {
    int memo;
    int reps;
    int emit;
    int pair;
} options;

/* ---- output ------------------------------------------------------------ */

static double max_rss_mb(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_maxrss / 1024.0;    /* ru_maxrss is in KiB on Linux */
}

/* Only the fields that are known: a failed conversion has no times. */
static void report(const char *name, const tg_rec_spec *spec, const options *o,
                   tg_rec_run *runs, int n, int verdict, const char *reason)
{
    double cpu[n > 0 ? n : 1], wall[n > 0 ? n : 1];
    printf("{\"bench\":\"rec\",\"name\":");
    bench_json_string(name);
    printf(",\"memo\":%s,\"reps\":%d", o->memo ? "true" : "false", n);
    if (n > 0) {
        for (int i = 0; i < n; i++)
            cpu[i] = runs[i].cpu_ms, wall[i] = runs[i].wall_ms;
        qsort(cpu, (size_t)n, sizeof cpu[0], bench_cmp_double);
        qsort(wall, (size_t)n, sizeof wall[0], bench_cmp_double);
        printf(",\"evals\":%zu,\"ms_min\":%.3f,\"ms_median\":%.3f,\"wall_ms_min\":%.3f",
               spec->n_evals, cpu[0], cpu[n / 2], wall[0]);
        printf(",\"rewrites\":%llu,\"conditions\":%llu", runs[n - 1].rewrites,
               runs[n - 1].conditions);
        if (spec->maude_rewrites >= 0)
            printf(",\"maude_rewrites\":%lld", spec->maude_rewrites);
        /* Maude's count over our time; meaningless below a millisecond */
        if (spec->maude_rewrites > 0 && cpu[0] >= 1.0)
            printf(",\"maude_equiv_mrw_per_s\":%.1f",
                   (double)spec->maude_rewrites / cpu[0] / 1e3);
    }
    /* marking on several threads adds their CPU time (GC_MARKERS=1: one) */
    printf(",\"gc_parallel_mark\":%s", GC_get_parallel() ? "true" : "false");
    printf(",\"max_rss_mb\":%.1f,\"ok\":%s", max_rss_mb(),
           verdict > 0 ? "true" : verdict < 0 ? "null" : "false");
    if (reason && *reason) {
        printf(",\"reason\":");
        bench_json_string(reason);
    }
    printf("}\n");
    fflush(stdout);
}

/* ---- one file ------------------------------------------------------------- */

static void emit_rules(const tg_rec_spec *spec)
{
    fputs(spec->rules, stdout);
    for (size_t i = 0; i < spec->n_evals; i++) {
        const tg_rec_eval *e = &spec->evals[i];
        printf("; eval %s\n", e->query);
        if (e->expect)
            printf(";   expect %s\n", e->expect);
        if (e->has_sha) {
            char hex[65];
            tg_rec_sha256_hex(e->sha, hex);
            printf(";   expect-sha256 %s bytes=%llu symbols=%llu\n", hex, e->bytes, e->symbols);
        }
    }
}

/* Every repetition, then the report; 0 when nothing went wrong. */
static int bench_spec(const tg_rec_spec *spec, const char *file, const options *o)
{
    tg_rec_run *runs = calloc((size_t)o->reps, sizeof *runs);
    int n = 0, verdict = 1;
    const char *reason = "";
    if (!runs) {
        report(spec->name, spec, o, NULL, 0, 0, "out of memory");
        return -1;
    }
    while (n < o->reps) {
        tg_rec_run_once(spec, file, o->memo, &runs[n]);
        if (runs[n].verdict < verdict)
            verdict = runs[n].verdict, reason = runs[n].reason;
        n++;
        if (verdict == 0)
            break;          /* no point timing a wrong answer again */
    }
    report(spec->name, spec, o, runs, n, verdict, reason);
    free(runs);
    return verdict == 0 ? -1 : 0;
}

/* --pair: plain and memo in turn, each repetition both (see the top);
 * 0 when nothing went wrong. */
static int bench_pair(const tg_rec_spec *spec, const char *file, const options *o)
{
    options po = *o, mo = *o;
    po.memo = 0, mo.memo = 1;
    tg_rec_run *runs = calloc(2 * (size_t)o->reps, sizeof *runs);
    double *ratio = calloc((size_t)o->reps, sizeof *ratio);
    int n = 0, verdict = 1;
    const char *reason = "";
    if (!runs || !ratio) {
        free(runs), free(ratio);
        report(spec->name, spec, o, NULL, 0, 0, "out of memory");
        return -1;
    }
    tg_rec_run *plain = runs, *memo = runs + o->reps;
    while (n < o->reps && verdict) {
        if (n % 2 == 0)
            tg_rec_run_once(spec, file, 0, &plain[n]), tg_rec_run_once(spec, file, 1, &memo[n]);
        else
            tg_rec_run_once(spec, file, 1, &memo[n]), tg_rec_run_once(spec, file, 0, &plain[n]);
        for (int k = 0; k < 2; k++) {
            const tg_rec_run *r = k ? &memo[n] : &plain[n];
            if (r->verdict < verdict)
                verdict = r->verdict, reason = r->reason;
        }
        ratio[n] = plain[n].cpu_ms > 0 ? memo[n].cpu_ms / plain[n].cpu_ms : 0;
        n++;
    }
    double pmin = plain[0].cpu_ms, mmin = memo[0].cpu_ms;
    for (int i = 1; i < n; i++) {
        pmin = plain[i].cpu_ms < pmin ? plain[i].cpu_ms : pmin;
        mmin = memo[i].cpu_ms < mmin ? memo[i].cpu_ms : mmin;
    }
    report(spec->name, spec, &po, plain, n, verdict, reason);
    report(spec->name, spec, &mo, memo, n, verdict, reason);
    qsort(ratio, (size_t)n, sizeof ratio[0], bench_cmp_double);
    printf("{\"bench\":\"rec-pair\",\"name\":");
    bench_json_string(spec->name);
    printf(",\"reps\":%d,\"ratio_min\":%.4f,\"ratio_median\":%.4f}\n", n,
           pmin > 0 ? mmin / pmin : 0, ratio[n / 2]);
    fflush(stdout);
    free(runs);
    free(ratio);
    return verdict == 0 ? -1 : 0;
}

static int bench_file(const char *file, const options *o)
{
    tg_error err;
    tg_rec_spec spec;
    char msg[600];
    size_t len;
    char *text = tg_slurp_file(file, &len, &err);
    int rc;
    if (!text) {
        report(file, NULL, o, NULL, 0, 0, tg_error_format(&err, msg, sizeof msg));
        return -1;
    }
    rc = tg_rec_convert(text, len, file, &spec, msg, sizeof msg);
    free(text);
    if (rc < 0) {
        report(file, NULL, o, NULL, 0, 0, msg);
        return -1;
    }
    if (o->emit)
        emit_rules(&spec);
    else if (o->pair)
        rc = bench_pair(&spec, file, o);
    else
        rc = bench_spec(&spec, file, o);
    tg_rec_spec_free(&spec);
    return rc;
}

static int usage(FILE *f)
{
    fprintf(f, "usage: rec [--memo] [--reps N] FILE...\n"
               "       rec --pair [--reps N] FILE...\n"
               "       rec --emit-rules FILE...\n");
    return f == stderr ? 2 : 0;
}

int main(int argc, char **argv)
{
    options o = {0, 1, 0, 0};
    int i = 1, failed = 0;
    for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
        if (strcmp(argv[i], "--memo") == 0)
            o.memo = 1;
        else if (strcmp(argv[i], "--pair") == 0)
            o.pair = 1;
        else if (strcmp(argv[i], "--emit-rules") == 0)
            o.emit = 1;
        else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc && atoi(argv[i + 1]) > 0)
            o.reps = atoi(argv[++i]);
        else if (strcmp(argv[i], "--help") == 0)
            return usage(stdout);
        else
            return usage(stderr);
    }
    if (i == argc)
        return usage(stderr);
    for (; i < argc; i++)
        failed |= bench_file(argv[i], &o) < 0;
    return failed;
}
