/* test_scanrules.c - the Scan rewrites on terms 10^6 deep (no recursion
 * on the C stack): a step whose work is a chain of 10^6 elementwise ops
 * on a sequence row is pushed out whole, and an unread output of a scan
 * under a chain of 10^6 nodes is dropped. */
#include "harness.h"
#include "tgrel.h"
#include "tgtest.h"

#define DEEP 1000000

static tg_ctx *ctx;

static tg_term *sym(const char *s) { return tg_symbol_cstr(ctx, s); }

static tg_term *app1(const char *h, tg_term *a) { return tg_app(ctx, sym(h), 1, &a); }

static tg_term *read1(const char *s)
{
    tg_error err;
    return tg_read_cstr(ctx, s, &err);
}

/* (sin (sin ... (sin x))) with n sins */
static tg_term *chain(const char *op, tg_term *x, long n)
{
    for (long i = 0; i < n && x; i++)
        x = app1(op, x);
    return x;
}

/* The depth of the chain of op at t, and what is under it. */
static long depth(tg_term *t, const char *op, tg_term **under)
{
    long d = 0;
    while (tg_kind_of(t) == TG_PAIR && tg_car(t) == sym(op))
        t = tg_nth(t, 1), d++;
    *under = t;
    return d;
}

int main(void)
{
    tg_error err;
    ctx = tg_ctx_new(&err);
    tg_rules *rs = tg_rules_new(ctx, &err);
    char path[4200];
    snprintf(path, sizeof path, "%s", tap_path("patterns/lib"));
    setenv("TGREL_RULES_PATH", path, 1);
    const char *defs = "(include \"all.rules\") (equilibrium deep scan-push-sequences scan-drop-outputs)";
    TAP_EQ_INT(tg_rules_load_string(rs, defs, strlen(defs), NULL, &err), 0, "load the rule library");

    /* the step: (add acc (sin^DEEP a)) -> a new sequence (sin^DEEP X) */
    tg_term *body = tg_list(ctx, 1, (tg_term *[]){tg_app(ctx, sym("add"), 2,
                                                        (tg_term *[]){sym("acc"), chain("sin", sym("a"), DEEP)})},
                            NULL);
    tg_term *lam = tg_app(ctx, sym("lambda"), 2, (tg_term *[]){read1("(a acc)"), body});
    tg_term *parts[5] = {lam, read1("(steps auto)"), read1("(sequences X)"), read1("(outputs (sitsot 0))"),
                         read1("(non_sequences)")};
    tg_term *scan = tg_app(ctx, sym("scan"), 5, parts);
    tg_term *r = tg_rewrite(rs, sym("deep"), scan, &err);
    tg_term *seqs = r ? tg_nth(r, 3) : NULL, *under = NULL;
    long d = seqs && tg_length(seqs) == 3 ? depth(tg_nth(seqs, 2), "sin", &under) : -1;
    TAP_CHECK(d == DEEP && under == sym("X"), "a chain of 10^6 sins pushed out onto X (%ld)", d);
    if (!r)
        tap_diag("%s", err.message);

    /* an output nobody reads, under a chain of 10^6 negs */
    tg_term *two = read1("(scan (lambda (a s p) ((add s a) (mul p a))) (steps auto) (sequences X)"
                         " (outputs (sitsot 0) (sitsot 1)) (non_sequences))");
    tg_term *out1 = tg_app(ctx, sym("scan_output"), 2, (tg_term *[]){two, tg_int(ctx, 1)});
    tg_term *g = app1("graph", chain("neg", out1, DEEP));
    r = tg_rewrite(rs, sym("deep"), g, &err);
    d = r ? depth(tg_nth(r, 1), "neg", &under) : -1;
    tg_term *want = read1("(scan_output (scan (lambda (a p) ((mul p a))) (steps auto) (sequences X)"
                          " (outputs (sitsot 1)) (non_sequences)) 0)");
    TAP_CHECK(d == DEEP && under == want, "the unread output dropped under 10^6 negs (%ld)", d);
    if (!r)
        tap_diag("%s", err.message);
    tg_rules_free(rs);
    tg_ctx_free(ctx);
    return TAP_DONE();
}
