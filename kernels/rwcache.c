/* rwcache.c - the rewriting half of the pipeline cache (module prefix
 * tgZw_).  tg_fn_options.rules rewrites a graph before it is lowered; the
 * result is a function of the unrewritten output terms, the rule set and
 * the rewriter spec alone.  So the key is those, printed canonically (the
 * rule set as every definition it was made of: see key_text), and the
 * entry holds the rewritten terms in a text that reads back to the same
 * hash-consed pointers.  The entry is
 * a side entry of the compile cache (cache.c: atomic rename, trailer with
 * a hash checked on every read), so a corrupt one is a miss. */
#include "config.h"

#include <gc/gc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "cache.h"
#include "clock.h"
#include "error.h"
#include "prov.h"
#include "rewriters.h"
#include "rset.h"
#include "rwcache.h"
#include "userop.h"
#include "validate.h"

#define TGZW_MAGIC "tgrel-terms 1"

/* ---- terms as text --------------------------------------------------------- */

/* term -> index of the node written for it (open addressing; collector memory) */
typedef struct tmap {
    const tg_term **keys;
    size_t *vals, cap, n;
} tmap;

static int tmap_init(tmap *m, size_t cap)
{
    m->cap = cap, m->n = 0;
    m->keys = GC_MALLOC(cap * sizeof *m->keys);
    m->vals = GC_MALLOC_ATOMIC(cap * sizeof *m->vals);
    return m->keys && m->vals ? 0 : -1;
}

static long tmap_get(const tmap *m, const tg_term *t)
{
    for (size_t i = tg_hash(t) & (m->cap - 1); m->keys[i]; i = (i + 1) & (m->cap - 1))
        if (m->keys[i] == t)
            return (long)m->vals[i];
    return -1;
}

static int tmap_put(tmap *m, const tg_term *t, size_t v)
{
    if (2 * (m->n + 1) >= m->cap) {
        tmap old = *m;
        if (tmap_init(m, old.cap * 2) < 0)
            return -1;
        for (size_t i = 0; i < old.cap; i++)
            if (old.keys[i])
                tmap_put(m, old.keys[i], old.vals[i]);
    }
    size_t i = tg_hash(t) & (m->cap - 1);
    while (m->keys[i])
        i = (i + 1) & (m->cap - 1);
    m->keys[i] = t, m->vals[i] = v, m->n++;
    return 0;
}

/* Write node t whose children all have indices: "a LEN TEXT" for an atom,
 * "l K TAIL E1 ... EK" for a list. */
static int put_node(tgB_buf *b, const tmap *m, const tg_term *t)
{
    if (tg_kind_of(t) != TG_PAIR) {
        size_t len;
        char *p = tg_print(t, &len);
        if (!p)
            return -1;
        tgB_printf(b, "a %zu ", len);
        tgB_append(b, p, len);
        tgB_putc(b, '\n');
        free(p);
        return 0;
    }
    tgB_printf(b, "l %zu %ld", tg_length(t), tmap_get(m, tg_tail(t)));
    tg_iter it;
    tg_term *e;
    tg_iter_init(&it, t);
    while ((e = tg_iter_next(&it)))
        tgB_printf(b, " %ld", tmap_get(m, e));
    tgB_putc(b, '\n');
    return 0;
}

typedef struct frame { const tg_term *t; int expanded; } frame;

char *tgZw_encode(size_t n, tg_term *const *terms, size_t *len)
{
    tmap m;
    size_t cap = 64, sp = 0, count = 0;
    frame *st = GC_MALLOC(cap * sizeof *st);
    tgB_buf b;
    tgB_init(&b);
    if (!st || tmap_init(&m, 256) < 0)
        return NULL;
    /* post-order with an explicit stack: children get their index first */
    for (size_t r = 0; r < n; r++) {
        st[sp++] = (frame){terms[r], 0};
        while (sp) {
            frame f = st[--sp];
            if (tmap_get(&m, f.t) >= 0)
                continue;
            if (tg_kind_of(f.t) == TG_PAIR && !f.expanded) {
                size_t need = sp + tg_length(f.t) + 2;
                if (need > cap) {
                    while (cap < need)
                        cap *= 2;
                    frame *ns = GC_MALLOC(cap * sizeof *ns);
                    if (!ns)
                        goto fail;
                    memcpy(ns, st, sp * sizeof *ns);
                    st = ns;
                }
                st[sp++] = (frame){f.t, 1};
                st[sp++] = (frame){tg_tail(f.t), 0};
                tg_iter it;
                tg_term *e;
                tg_iter_init(&it, f.t);
                while ((e = tg_iter_next(&it)))
                    st[sp++] = (frame){e, 0};
                continue;
            }
            if (put_node(&b, &m, f.t) < 0 || tmap_put(&m, f.t, count++) < 0)
                goto fail;
        }
    }
    tgB_puts(&b, "r");
    for (size_t r = 0; r < n; r++)
        tgB_printf(&b, " %ld", tmap_get(&m, terms[r]));
    tgB_printf(&b, "\n%s %zu\n", TGZW_MAGIC, count);
    return tgB_take(&b, len);
fail:
    tgB_free(&b);
    return NULL;
}

/* A non-negative decimal at *p, then one space or newline; -1 if none. */
static long long num(const char **p, const char *end)
{
    const char *s = *p;
    long long v = 0;
    if (s >= end || *s < '0' || *s > '9')
        return -1;
    while (s < end && *s >= '0' && *s <= '9') {
        if (v > (INT64_MAX - 9) / 10)
            return -1;
        v = v * 10 + (*s++ - '0');
    }
    if (s >= end || (*s != ' ' && *s != '\n'))
        return -1;
    *p = s + 1;
    return v;
}

int tgZw_decode(tg_ctx *ctx, const char *text, size_t len, size_t n, tg_term **out)
{
    const char *p = text, *end = text + len;
    /* the count is on the last line: the node table is sized from it */
    const char *last = len >= 2 ? end - 2 : text;
    while (last > text && last[-1] != '\n')
        last--;
    size_t ml = strlen(TGZW_MAGIC);
    if ((size_t)(end - last) <= ml + 1 || memcmp(last, TGZW_MAGIC " ", ml + 1) != 0)
        return -1;
    const char *q = last + ml + 1;
    long long count = num(&q, end);
    if (count < 0 || q != end || count > (long long)len)
        return -1;
    tg_term **node = GC_MALLOC((size_t)(count ? count : 1) * sizeof *node);
    tg_term **elems = NULL;
    size_t ecap = 0;
    if (!node)
        return -1;
    for (long long k = 0; k < count; k++) {
        if (p + 2 > last || p[1] != ' ')
            return -1;
        char kind = *p;
        p += 2;
        if (kind == 'a') {
            long long l = num(&p, last);
            if (l < 0 || l > last - p || p[l] != '\n')
                return -1;
            if (!(node[k] = tg_read(ctx, p, (size_t)l, NULL)))
                return -1;
            p += l + 1;
            continue;
        }
        long long ne = kind == 'l' ? num(&p, last) : -1, tail = ne >= 0 ? num(&p, last) : -1;
        if (tail < 0 || tail >= k || ne > last - p)
            return -1;
        if ((size_t)ne > ecap) {
            ecap = (size_t)ne;
            if (!(elems = GC_MALLOC(ecap * sizeof *elems)))
                return -1;
        }
        for (long long i = 0; i < ne; i++) {
            long long e = num(&p, last);
            if (e < 0 || e >= k)
                return -1;
            elems[i] = node[e];
        }
        if (!(node[k] = tg_list(ctx, (size_t)ne, elems, node[tail])))
            return -1;
    }
    if (p + 2 > last || p[0] != 'r' || p[1] != ' ')
        return -1;
    p += 2;
    for (size_t r = 0; r < n; r++) {
        long long v = num(&p, last);
        if (v < 0 || v >= count)
            return -1;
        out[r] = node[v];
    }
    return p == last ? 0 : -1;
}

/* ---- the key ------------------------------------------------------------- */

/* A rule set's definitions as the key holds them: (SRC DEFS); *uncached
 * set when it has C code whose version is not given: what it computes is
 * known to nobody here. */
static tg_term *rules_part(tg_ctx *ctx, tg_rules *rs, int *uncached)
{
    tg_env *env = rs->env;
    *uncached |= (rs->ext || (env && env->cdefs)) && !rs->cversion;
    tg_term *p[3] = {tg_list(ctx, rs->nsrc, rs->src, NULL),
                     env ? tg_list(ctx, env->ndefs, env->defs, NULL) : tg_nil(),
                     tg_string(ctx, rs->cversion ? rs->cversion : "", rs->cversion ? strlen(rs->cversion) : 0)};
    return p[0] && p[1] && p[2] ? tg_list(ctx, 3, p, NULL) : NULL;
}

/* What the expansion before the rewrite is a function of, beside the
 * rule set (its defined ops) and the library's build (its grad rules and
 * sweep): the grad options (the rules tried first, disconnected) and the
 * context's C-expression ops (their arity types the sweep's graph). */
static tg_term *expansion_part(tg_ctx *ctx, const tg_fn_options *opt, int *uncached)
{
    const tg_grad_options *g = opt->grad;
    char *uo = tgUo_key_text(ctx);
    tg_term *p[3] = {tg_int(ctx, g ? g->disconnected != 0 : 0),
                     g && g->rules ? rules_part(ctx, g->rules, uncached) : tg_nil(),
                     uo ? tg_string(ctx, uo, strlen(uo)) : NULL};
    free(uo);
    return p[0] && p[1] && p[2] ? tg_list(ctx, 3, p, NULL) : NULL;
}

/* What the rewrite is a function of, as text: this library (its build,
 * which cache.c adds: the logic prelude and all of the library's C code
 * are in it, the tensor types of the typed guards, rtypes.c, among it), the rule set's definitions in full (ops with their
 * properties, rules with conditions, alternatives and tags, rewriters;
 * the forms of included files, the shipped rules' among them: rset.h
 * src), its logic environment's definitions
 * (relation bodies, facts, tabling: logic.h defs) and occurs check, the
 * version of the embedder's C code, the rewriter spec and the outputs;
 * with exp (the outputs unexpanded), what the expansion is a function of
 * too; the terms printed with shared subterms named once.  NULL with
 * *uncached set when a rule set has C code whose version is not given. */
static char *key_text(tg_ctx *ctx, const tg_fn_options *opt, tg_term *spec, size_t nout, tg_term *const *outputs,
                      int exp, size_t *len, int *uncached, tg_error *err)
{
    tg_rules *rs = opt->rules;
    tg_env *env = rs->env;
    *uncached = 0;
    tg_term *parts[4] = {rules_part(ctx, rs, uncached), spec, tg_list(ctx, nout, outputs, NULL),
                         exp ? expansion_part(ctx, opt, uncached) : tg_nil()};
    if (*uncached)
        return NULL;
    tg_term *all = parts[0] && parts[2] && parts[3] ? tg_list(ctx, 4, parts, NULL) : NULL;
    size_t tl;
    char *terms = all ? tg_print_shared(all, &tl) : NULL;
    if (!terms)
        return tgE_nomem(err), NULL;
    tgB_buf b;
    tgB_init(&b);
    tgB_printf(&b, "tgrel %s kernels rewrite 3\noccurs-check %d\nexpanded %s\n", PACKAGE_VERSION,
               env ? env->occurs_check : 1, exp ? "here" : "before");
    tgB_append(&b, terms, tl);
    free(terms);
    char *t = tgB_take(&b, len);
    if (!t)
        tgE_nomem(err);
    return t;
}

/* ---- the rewrite ------------------------------------------------------------ */

/* The outputs rewritten with rs: as one term (graph OUT ...), so that a
 * rewrite needing every user of a node (the Scan rewrites: an output
 * nobody reads) sees them all, and shared subterms are rewritten once. */
static tg_term **run_rewriter(tg_ctx *ctx, tg_rules *rs, tg_term *spec, size_t nout, tg_term *const *outputs,
                              tg_error *err)
{
    tg_term *head = tg_symbol_cstr(ctx, "graph");
    tg_term **out = GC_MALLOC((nout ? nout : 1) * sizeof *out);
    tg_term *g = head && nout ? tg_app(ctx, head, nout, outputs) : head ? tg_list(ctx, 1, &head, NULL) : NULL;
    if (!out || !g)
        return tgE_nomem(err), NULL;
    tg_term *r = tg_rewrite(rs, spec, g, err);
    if (!r)
        return NULL;
    if (tg_car(r) != head || tg_length(r) != nout + 1) {
        char *shown = tg_print(r, NULL);
        tgE_set(err, TG_ERR_ARG, NULL, 0, 0, "kernels: the rewriter made %.200s of the outputs, not (graph OUT ...)",
                shown ? shown : "a term");
        free(shown);
        return NULL;
    }
    tg_elements(tg_cdr(ctx, r), out, nout);
    return out;
}

tgZw_firing *tgZw_firings(tg_ctx *ctx, tg_rules *rs, tg_term *spec, size_t nout, tg_term *const *outputs,
                          size_t *n)
{
    tg_error e;
    int was_on = tg_rules_provenance(rs);
    tgZw_firing *f = NULL;
    *n = 0;
    if (!spec)
        spec = tg_symbol_cstr(ctx, "default");
    if (spec && (was_on || tg_rules_set_provenance(rs, 1, 0, &e) == 0) &&
        run_rewriter(ctx, rs, spec, nout, outputs, &e) && rs->prov &&
        (f = GC_MALLOC((rs->prov->n ? rs->prov->n : 1) * sizeof *f)))
        for (size_t k = 0; k < rs->prov->n; k++) {
            const tgO_fire *x = &rs->prov->log[k];
            if (x->after && x->after != x->before)
                f[(*n)++] = (tgZw_firing){x->rule, x->before, x->after};
        }
    if (!was_on)    /* the log goes with it: f holds what is needed */
        tg_rules_set_provenance(rs, 0, 0, NULL);
    return f;
}

/* The rewrite of outputs, refused when it changes an output's type. */
static tg_term **rewrite_valid(tg_ctx *ctx, size_t nin, tg_term *const *inputs, tg_rules *rs, tg_term *spec,
                               size_t nout, tg_term *const *outputs, tg_error *err)
{
    tg_term **out = run_rewriter(ctx, rs, spec, nout, outputs, err);
    if (!out)
        return NULL;
    return tgVa_check(ctx, nin, inputs, nout, outputs, out, rs, spec, err) < 0 ? NULL : out;
}

/* The outputs expanded by ex (its time and node count set), or as they are. */
static tg_term *const *expand(tg_ctx *ctx, tgZw_expansion *ex, size_t nout, tg_term *const *outputs, tg_error *err)
{
    if (!ex)
        return outputs;
    double t0 = tgTm_ms();
    tg_term **out = GC_MALLOC((nout ? nout : 1) * sizeof *out);
    if (!out)
        return tgE_nomem(err), NULL;
    if (ex->run(ex->ud, nout, outputs, out, err) < 0)
        return NULL;
    ex->ms = tgTm_ms() - t0;
    tg_term *all = nout ? tg_list(ctx, nout, out, NULL) : NULL;
    ex->nodes = all ? tgW_count_nodes(ctx, all) - 1 : 0;   /* not the list itself */
    return out;
}

tg_term **tgZw_rewrite(tg_ctx *ctx, size_t nin, tg_term *const *inputs, size_t nout, tg_term *const *outputs,
                       const tg_fn_options *opt, tgZw_expansion *ex, int *hit, tg_error *err)
{
    tg_term *spec = opt->rewrite ? opt->rewrite : tg_symbol_cstr(ctx, "default");
    *hit = 0;
    if (ex)
        ex->nodes = 0, ex->ms = 0;
    if (!spec)
        return tgE_nomem(err), NULL;
    for (size_t i = 0; i < nout; i++)
        if (!outputs[i])
            return tgE_arg(err, "kernels: a NULL output term"), NULL;
    size_t klen, len;
    int uncached;
    char *key = key_text(ctx, opt, spec, nout, outputs, ex != NULL, &klen, &uncached, err);
    if (uncached) {
        tg_term *const *o = expand(ctx, ex, nout, outputs, err);
        return o ? rewrite_valid(ctx, nin, inputs, opt->rules, spec, nout, o, err) : NULL;
    }
    if (!key)
        return NULL;
    /* the entry: "nodes N" (the expanded outputs' distinct nodes), then
     * the rewritten terms as tgZw_encode writes them */
    char *text = tgZ_side_get(key, klen, "rw", &len);
    tg_term **out = text ? GC_MALLOC((nout ? nout : 1) * sizeof *out) : NULL;
    const char *p = text, *nl = text ? memchr(text, '\n', len) : NULL;
    unsigned long long nodes = 0;
    if (out && nl && sscanf(p, "nodes %llu", &nodes) == 1 &&
        tgZw_decode(ctx, nl + 1, len - (size_t)(nl + 1 - text), nout, out) == 0) {
        *hit = 1;   /* validated when it was stored */
        if (ex)
            ex->nodes = (size_t)nodes;
    } else {
        /* missing, corrupt or unreadable: expand, rewrite and store again */
        tg_term *const *o = expand(ctx, ex, nout, outputs, err);
        out = o ? rewrite_valid(ctx, nin, inputs, opt->rules, spec, nout, o, err) : NULL;
        char *enc = out ? tgZw_encode(nout, out, &len) : NULL;
        tgB_buf b;
        tgB_init(&b);
        if (enc) {
            tgB_printf(&b, "nodes %zu\n", ex ? ex->nodes : 0);
            tgB_append(&b, enc, len);
        }
        char *entry = enc ? tgB_take(&b, &len) : (tgB_free(&b), NULL);
        if (entry)
            tgZ_side_put(key, klen, "rw", entry, len);
        free(entry);
        free(enc);
    }
    free(text);
    free(key);
    return out;
}
