/* random.c - random draws (module prefix tgRn_).  Element i (C order) of
 * the draw of ordinal d among a function's draws, under the int64 state
 * value s, is computed from Philox4x32-10 of the counter (i, d) under the
 * key s: a function of those three numbers only, so the same state gives
 * the same numbers on either path, on any number of threads, in any
 * process, and the draws of one call are independent of each other.
 * The state is an ordinary 0-d int64 term, usually a shared variable that
 * an update advances, ((shared rng int64 ()) (add (shared rng int64 ())
 * 1)), so that each call draws afresh. */
#include "config.h"

#include <gc/gc.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "random.h"

static const char *const kinds[] = {"uniform", "normal", "bernoulli", "integers"};
static const int nparams[] = {2, 2, 1, 2};

/* A draw in a scan's body is keyed by its step as well (the counter's
 * fourth word), so that each step draws afresh from one state: step t of
 * a scan run in stream p draws in stream p * golden + t + 1 (mod 2^32),
 * a function's own draws in stream 0. */
uint32_t tgRn_stream(uint32_t parent, int64_t step)
{
    return parent * 0x9E3779B1u + (uint32_t)step + 1u;
}

const char *tgRn_kind_name(int k) { return k >= 0 && k < 4 ? kinds[k] : "?"; }

bool tgRn_head(const char *name, size_t len) { return len == 6 && memcmp(name, "random", 6) == 0; }

/* ---- the generator ------------------------------------------------------ */

void tgRn_philox(uint32_t ctr[4], const uint32_t key[2])
{
    uint32_t k0 = key[0], k1 = key[1];
    for (int r = 0; r < 10; r++) {
        if (r) {
            k0 += 0x9E3779B9u;
            k1 += 0xBB67AE85u;
        }
        uint64_t p0 = (uint64_t)0xD2511F53u * ctr[0], p1 = (uint64_t)0xCD9E8D57u * ctr[2];
        uint32_t c1 = ctr[1], c3 = ctr[3];
        ctr[0] = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
        ctr[1] = (uint32_t)p1;
        ctr[2] = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        ctr[3] = (uint32_t)p0;
    }
}

/* The two 64-bit words of counter (i, d, stream) under key s. */
static void block(uint64_t s, int64_t i, int d, uint32_t stream, uint64_t out[2])
{
    uint32_t key[2] = {(uint32_t)s, (uint32_t)(s >> 32)};
    uint32_t c[4] = {(uint32_t)(uint64_t)i, (uint32_t)((uint64_t)i >> 32), (uint32_t)d, stream};
    tgRn_philox(c, key);
    out[0] = (uint64_t)c[1] << 32 | c[0];
    out[1] = (uint64_t)c[3] << 32 | c[2];
}

/* A double in [0, 1) from the top 53 bits. */
static double unit(uint64_t w) { return (double)(w >> 11) * 0x1p-53; }

/* ---- typing -------------------------------------------------------------- */

int tgRn_build(tgV_builder *b, tg_term *t, tg_term **need)
{
    static const char usage[] = "a random draw is (random KIND STATE (SIZE ...) PARAM ...), KIND one of "
                                "uniform (LO HI), normal (MEAN STD), bernoulli (P), integers (LO HI)";
    tgV_graph *g = tgV_graph_of(b);
    tg_term *a[3 + 3];
    size_t n = tg_elements(t, a, 6), len;
    const char *kn = n > 1 ? tg_symbol_name(a[1], &len) : NULL;
    int kind = -1;
    for (int k = 0; kn && k < 4; k++)
        if (strlen(kinds[k]) == len && memcmp(kinds[k], kn, len) == 0)
            kind = k;
    if (kind < 0 || tg_tail(t) != tg_nil() || n != 4 + (size_t)nparams[kind] ||
        (tg_kind_of(a[3]) != TG_PAIR && tg_kind_of(a[3]) != TG_NIL))
        return tgV_fail(b, t, usage);
    /* the state and the parameters are tensors: built first */
    for (size_t i = 2; i < n; i++)
        if (i != 3 && tgV_node_of(b, a[i]) < 0) {
            *need = a[i];
            return 0;
        }
    const tgV_node *sn = &g->nodes[tgV_node_of(b, a[2])];
    if (sn->dtype != TG_INT64 || sn->ndim != 0)
        return tgV_fail(b, t, "a random draw's state is a 0-d int64 (a shared variable)");
    for (size_t i = 4; i < n; i++)
        if (g->nodes[tgV_node_of(b, a[i])].ndim != 0)
            return tgV_fail(b, t, "a random draw's parameters are 0-d");
    int *args = GC_MALLOC_ATOMIC((n - 3) * sizeof *args);
    if (!args)
        return tgE_nomem(tgV_err_of(b)), -1;
    args[0] = tgV_node_of(b, a[2]);
    for (size_t i = 4; i < n; i++)
        args[i - 3] = tgV_node_of(b, a[i]);
    int ord = 0;
    for (int v = 0; v < g->n; v++)
        ord += g->nodes[v].op == TGV_RANDOM;
    tgV_node *r = tgV_new_node(b, t, TGV_RANDOM);
    if (!r)
        return -1;
    r->args = args, r->nargs = (int)(n - 3);
    r->rkind = (int8_t)kind, r->rord = ord;
    r->dtype = r->cdt = kind == TGRN_BERNOULLI ? TG_BOOL : kind == TGRN_INTEGERS ? TG_INT64 : TG_FLOAT64;
    tg_iter it;
    tg_term *e;
    tg_iter_init(&it, a[3]);
    while ((e = tg_iter_next(&it))) {
        if (r->ndim == TGV_MAXDIM)
            return tgV_fail(b, t, "too many axes");
        tgV_size sz;
        if (tgV_size_of(b, t, e, &sz) < 0)
            return -1;
        r->shape[r->ndim++] = sz;
    }
    return 1;
}

/* ---- the draw ------------------------------------------------------------- */

static double param(const tgI_arr *a)
{
    switch (a->dtype) {
    case TG_FLOAT64: { double v; memcpy(&v, a->data, 8); return v; }
    case TG_FLOAT32: { float v; memcpy(&v, a->data, 4); return v; }
    case TG_INT64: { int64_t v; memcpy(&v, a->data, 8); return (double)v; }
    case TG_INT32: { int32_t v; memcpy(&v, a->data, 4); return v; }
    default: return *(const unsigned char *)a->data != 0;
    }
}

static int64_t iparam(const tgI_arr *a)
{
    if (a->dtype == TG_INT64) {
        int64_t v;
        memcpy(&v, a->data, 8);
        return v;
    }
    double x = param(a);
    return x != x ? 0 : x >= 0x1p63 ? INT64_MAX : x <= -0x1p63 ? INT64_MIN : (int64_t)x;
}

int tgRn_run(const tgH_sched *s, tgI_state *st, int v, tg_error *err)
{
    const tgV_node *n = &s->g->nodes[v];
    const tgI_arr *y = &st->vals[v];
    int64_t sv;
    memcpy(&sv, st->vals[n->args[0]].data, 8);
    double p0 = n->nargs > 1 ? param(&st->vals[n->args[1]]) : 0;
    double p1 = n->nargs > 2 ? param(&st->vals[n->args[2]]) : 0;
    int64_t lo = 0;
    uint64_t range = 0;
    const char *bad = NULL;
    if (n->rkind == TGRN_UNIFORM && !(p0 <= p1 && isfinite(p0) && isfinite(p1)))
        bad = "uniform needs finite LO <= HI";
    else if (n->rkind == TGRN_NORMAL && !(p1 >= 0 && isfinite(p0) && isfinite(p1)))
        bad = "normal needs a finite MEAN and a finite STD >= 0";
    else if (n->rkind == TGRN_BERNOULLI && !(p0 >= 0 && p0 <= 1))
        bad = "bernoulli needs 0 <= P <= 1";
    else if (n->rkind == TGRN_INTEGERS) {
        lo = iparam(&st->vals[n->args[1]]);
        int64_t hi = iparam(&st->vals[n->args[2]]);
        if (hi <= lo)
            bad = "integers needs LO < HI";
        range = (uint64_t)hi - (uint64_t)lo;
    }
    if (bad) {
        char buf[200];
        tgE_set(err, TG_ERR_RANGE, NULL, 0, 0, "kernels: in %s: %s", tgV_show(n->term, buf, sizeof buf), bad);
        return -1;
    }
    int64_t total = 1, idx[TGV_MAXDIM] = {0};
    for (int d = 0; d < y->ndim; d++)
        total *= y->shape[d];
    char *p = y->data;
    for (int64_t i = 0; i < total; i++) {
        uint64_t w[2];
        block((uint64_t)sv, i, n->rord, st->rstream, w);
        switch (n->rkind) {
        case TGRN_UNIFORM: {
            double x = p0 + (p1 - p0) * unit(w[0]);
            memcpy(p, &x, 8);
            break;
        }
        case TGRN_NORMAL: {     /* Box-Muller, one value per block */
            double x = p0 + p1 * sqrt(-2 * log1p(-unit(w[0]))) * cos(6.283185307179586 * unit(w[1]));
            memcpy(p, &x, 8);
            break;
        }
        case TGRN_BERNOULLI:
            *(unsigned char *)p = unit(w[0]) < p0;
            break;
        default: {              /* the high word of w * range: no modulo bias to speak of */
            uint64_t k = (uint64_t)(((unsigned __int128)w[0] * range) >> 64);
            int64_t x = (int64_t)((uint64_t)lo + k);
            memcpy(p, &x, 8);
        }
        }
        p += tgI_next(y->ndim, y->shape, y->strides, idx);
    }
    return 0;
}
