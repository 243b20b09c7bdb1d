/* levels.c - a ctorrec rule's levels (rset.h, compile.c's ctor_rec):
 * the rule's self call made one more level of the frame while it keeps
 * matching, in a loop over the value stack with no frame per level
 * (tgW_run_levels; plain_levels for the usual plus and conc shapes, in
 * registers, with memo off or on), and the constructors around the
 * levels built, hashed ahead, when the innermost call returns
 * (tgW_unwind_levels).  Called by the machine's loop (machine.c's
 * ctor_levels and levels_returned).
 */
#include "machine_int.h"
#include "memo.h"

#include <gc/gc.h>
#include <stdint.h>
#include <string.h>

/* tgW_run_levels's loop without memo's checks, for the levels memo passes
 * unlooked-up without end (no budget, no watched call: memo off), whose
 * match copies one or two elements and whose pushes are two or three
 * variables: plus's and conc's levels.  What tgW_run_levels's loop checks at
 * every level and cannot change here is checked once (the call's argument
 * count against the match's, before) or when it can change (the rule
 * first among the call's rules: when they are found again, at a new key).
 * The loop over the levels (plain_run) makes no call: the rarer work (the
 * value stack's growth, the poll every 2^16 rewrites, the rules of a new
 * key) is done outside it (plain_levels), so that the loop's variables
 * stay in registers instead of being kept across calls on the stack.
 * In and out: the state tgW_run_levels's loop keeps. */
struct plain_levels {
    tg_rules *rs;
    tgW_machine *M;
    frame *f;
    tgW_rule *r;
    const struct tgW_byop *cby;
    tg_term *mhead, *lastkey;
    tgW_rule *const *rr;
    uint32_t nr, ma, md, c, src[3], lev, tried;
    uint32_t next;                  /* the next level's matched argument:
                                     * 1 this level's e1, 2 its e2, 0 read */
    size_t room, lead, cbase, lim;  /* lim: the last cbase with room */
    unsigned long long rw;          /* in: the rewrites; out: those before lev */
    tg_error *err;
    /* memo on: the calls memo passes unlooked-up (budget, none whose first
     * argument is watch); out: whether the call that ended them was
     * entered (0: memo's to look up) */
    uint64_t budget;
    const tg_term *watch;
    int entered;
};

enum { PLAIN_STOP, PLAIN_ROOM, PLAIN_EVENT, PLAIN_MEMO };

/* A node header's bits as one word, for testing several fields at once:
 * (bits(t) & bits(mask)) == bits(want), the fields a mask sets to all
 * ones being those compared. */
_Static_assert(sizeof(tgT_hdr) == sizeof(uint64_t), "a node header is one word");
static inline uint64_t hdr_bits(const tgT_hdr *h)
{
    uint64_t w;
    memcpy(&w, h, sizeof w);
    return w;
}

/* Levels until one does not match (PLAIN_STOP), the value stack lacks
 * room for the next (PLAIN_ROOM), a level ends at a poll or a new key
 * (PLAIN_EVENT), or (memo) memo is to look the next call up (PLAIN_MEMO:
 * its budget spent or the call watched, tested first as tgW_run_levels'
 * loop does).  s->rw counts the levels, s->budget the calls. */
static inline __attribute__((always_inline)) int plain_run(struct plain_levels *s, const uint32_t mc,
                                                           const uint32_t np, const int keyed,
                                                           const int memo)
{
    tg_term **vs = s->M->vs, *const mhead = s->mhead, *const lastkey = s->lastkey;
    const uint32_t ma = s->ma, md = s->md, s0 = s->src[0], s1 = s->src[1], s2 = s->src[2];
    const size_t lead = s->lead, lim = s->lim;
    const uint32_t next = s->next;
    size_t cb = s->cbase;
    unsigned long long rw = s->rw;
    uint64_t budget = s->budget;
    const tg_term *const watch = s->watch;
    /* the match: a pair of mc + 1 elements without a tail (and its head) */
    const uint64_t mask = hdr_bits(&(tgT_hdr){0xf, TGT_HASTAIL, 0xf, 0, 0});
    const uint64_t want = hdr_bits(&(tgT_hdr){TG_PAIR, 0, mc + 1, 0, 0});
    int why;
    /* the matched argument, carried to the next level in a register when
     * it is one the match copied (conc's ?L1, plus's ?N): read back from
     * the stack, each level would wait for two stores to be forwarded to
     * loads (the copy's, the push's) on top of the element's own load */
    tg_term *t = vs[cb + ma];
    for (;;) {
        if (memo && __builtin_expect(budget == 0 || vs[cb] == watch, 0)) {
            why = PLAIN_MEMO;
            break;
        }
        if (__builtin_expect(cb > lim, 0)) {
            why = PLAIN_ROOM;
            break;
        }
        tg_term **R = vs + cb;
        if (tgT_isfix(t) || (hdr_bits(&t->h) & mask) != want || t->e[0] != mhead) {
            why = PLAIN_STOP;
            break;
        }
        budget -= memo;     /* the call entered a level */
        tg_term *e1 = t->e[1], *e2 = mc == 2 ? t->e[2] : NULL;
        R[md] = e1;
        if (mc == 2)
            R[md + 1] = e2;
        /* the pushes over the registers (see tgW_run_levels) */
        tg_term *p0 = R[s0], *p1 = R[s1], *p2 = np == 3 ? R[s2] : NULL;
        R[0] = p0, R[1] = p1;
        if (np == 3)
            R[2] = p2;
        cb += lead;
        t = mc == 2 && next == 2 ? e2 : next ? e1 : vs[cb + ma];
        if (__builtin_expect((++rw & 0xffff) == 0, 0) || (keyed && tgW_disp_key(vs[cb]) != lastkey)) {
            why = PLAIN_EVENT;
            break;
        }
    }
    s->cbase = cb, s->rw = rw, s->budget = budget;
    return why;
}

/* Whether memo is to look up the call at s->cbase before it is entered
 * (memo on: its budget spent or the call watched); s->entered 0 then. */
static inline int plain_memo_ends(struct plain_levels *s)
{
    return s->entered = !(s->budget == 0 || s->M->vs[s->cbase] == s->watch);
}

static inline __attribute__((always_inline)) int plain_loop(struct plain_levels *s, const uint32_t mc,
                                                            const uint32_t np, const int keyed,
                                                            const int memo)
{
    tgW_machine *M = s->M;
    tgW_rule *const r = s->r;
    unsigned long long rw0 = s->rw;     /* the rewrites counted */
    int rc = 0;
    s->tried = 0;
    s->entered = 1;
    if ((memo && !plain_memo_ends(s)) || !s->nr || s->rr[0] != r)
        goto out;
    for (;;) {
        if (M->vlim < s->room + s->cbase && vs_reserve(M, s->cbase + s->room) < 0) {
            rc = -1;
            break;
        }
        s->lim = M->vlim - s->room;
        int why = plain_run(s, mc, np, keyed, memo);
        if (why == PLAIN_STOP) {
            s->tried = 1;
            break;
        }
        if (why == PLAIN_MEMO) {
            s->entered = 0;
            break;
        }
        if (why == PLAIN_ROOM)
            continue;
        if ((s->rw & 0xffff) == 0) {
            /* the counts as they are, for the limits' report */
            uint32_t lev = (uint32_t)(s->rw - rw0);
            r->tried += lev, r->fired += lev, r->built += lev, s->f->lev += lev;
            s->rs->rewrites = rw0 = s->rw;
            if (tgW_run_poll(s->rs, s->err) < 0) {
                rc = -2;
                break;
            }
        }
        tg_term *key = keyed ? tgW_disp_key(M->vs[s->cbase]) : NULL;
        if (keyed && key != s->lastkey) {
            s->rr = call_rules(s->cby, M->vs + s->cbase, s->c, &s->nr);
            s->lastkey = key;
            /* as tgW_run_levels' loop: memo's test before the rules' */
            if ((memo && !plain_memo_ends(s)) || !s->nr || s->rr[0] != r)
                break;
        }
    }
out:
    s->lev = (uint32_t)(s->rw - rw0), s->rw = rw0;
    return rc;
}

/* Where the next level's matched argument comes from, q words above this
 * level's registers (the next level's ma): after this level's np pushes
 * (from registers src) over its registers and its match's mc copies to
 * registers md.., 1 when it is the first copy, 2 the second, 0 neither
 * (a call argument the level left as it was). */
static uint32_t next_matched(size_t q, uint32_t np, const uint32_t *src, uint32_t md, uint32_t mc)
{
    size_t reg = q < np ? src[q] : q;   /* the register the word holds */
    return reg == md ? 1 : mc == 2 && reg == md + 1u ? 2 : 0;
}

/* plain_loop for the call's case; memo: with memo on, levels while memo
 * passes their calls. */
static __attribute__((noinline)) int plain_levels(struct plain_levels *s, uint32_t mc, uint32_t np,
                                                  int keyed, int memo)
{
#define PLAIN_LOOP(KEYED, MEMO)                                                                    \
    (mc == 1 ? (np == 2 ? plain_loop(s, 1, 2, KEYED, MEMO) : plain_loop(s, 1, 3, KEYED, MEMO))      \
             : (np == 2 ? plain_loop(s, 2, 2, KEYED, MEMO) : plain_loop(s, 2, 3, KEYED, MEMO)))
    if (keyed)
        return memo ? PLAIN_LOOP(1, 1) : PLAIN_LOOP(1, 0);
    return memo ? PLAIN_LOOP(0, 1) : PLAIN_LOOP(0, 0);
#undef PLAIN_LOOP
}

int tgW_run_levels(tg_rules *rs, tgW_machine *M, frame *f, const struct tgW_byop *cby,
                   const tgW_ins *call, size_t cbase, uint32_t c, uint64_t *left,
                   const tg_term *watch, struct tgW_levels *out, tg_error *err)
{
    tgW_rule *r = f->rule;
    const tgW_ins *mp = r->match, *body = r->body + 1;
    tg_term *const *K = r->k, *mhead = K[mp[1].b];
    uint32_t ma = mp[1].a, mc = mp[1].c, md = mp[1].d;
    uint32_t nr, tried = 0, lev = 0;
    size_t room = r->nregs + r->maxstack + 4, nregs = r->nregs, lead = call[1].c - 1u;
    unsigned long long rw = rs->rewrites;
    tgW_rule *const *rr;
    /* the call's rules: found again only when the first argument's key
     * changes, where the index looks at that key alone (dispatch.h) */
    const tgW_disp *dd = cby->disp;
    int keyed = dd && dd->few && c;
    tg_term *lastkey = NULL;
    tg_term **vs = M->vs;
    size_t vcap = M->vlim;
    /* the pushes as registers, when they are two or three variables */
    uint32_t src[3], np = 0;
    for (const tgW_ins *q = body; q != call && np <= 3; q++)
        if (q->op == E_VARS && np + q->pad <= 3) {
            src[np] = q->a, src[np + 1] = q->b;
            if (q->pad == 3)
                src[np + 2] = q->c;
            np += q->pad;
        } else if (q->op == E_VAR && np < 3) {
            src[np++] = q->a;
        } else {
            np = 4;
        }
    if (np < 2 || np > 3)
        np = 0;
    rr = call_rules(cby, vs + cbase, c, &nr);
    if (keyed)
        lastkey = tgW_disp_key(vs[cbase]);
    int rc = 0, entered;
    uint64_t lf = *left;    /* in a register through the loop */
    if (np && mc - 1u < 2 && c == mp->a && (!dd || keyed)) {
        /* the loop below in registers (plain_levels); with memo on
         * while memo passes the calls, as below */
        int memo = lf != UINT64_MAX || watch;
        struct plain_levels s = {rs, M, f, r, cby, mhead, lastkey, rr, nr, ma, md, c,
                                 {src[0], src[1], np == 3 ? src[2] : 0}, 0, 0,
                                 next_matched(ma + lead, np, src, md, mc),
                                 room, lead, cbase, 0, rw, err, lf, watch, 1};
        rc = plain_levels(&s, mc, np, keyed, memo);
        /* as the loop below leaves them (the levels before a poll counted;
         * the call that ended them counted when entered) */
        rr = s.rr, nr = s.nr, tried = s.tried, lev = s.lev, cbase = s.cbase;
        entered = s.entered;
        lf = memo ? s.budget - (uint64_t)entered : lf - (s.rw + lev - rw + 1);
        rw = s.rw + lev;
    } else
    for (;;) {
        tried = 0;
        /* with memo on: a call memo would not pass ends them untried */
        if (__builtin_expect(lf == 0 || vs[cbase] == watch, 0)) {
            entered = 0;
            break;
        }
        --lf, entered = 1;
        if (!nr || rr[0] != r)
            break;
        if (__builtin_expect(cbase + room > vcap, 0)) {
            if (vs_reserve(M, cbase + room) < 0) {
                rc = -1;
                break;
            }
            vs = M->vs, vcap = M->vlim;
        }
        tg_term **R = vs + cbase, *t = R[ma];
        tried = 1;
        if (c != mp->a || !tgT_ispair(t) || t->e[0] != mhead || t->h.n != mc + 1 ||
            (t->h.flags & TGT_HASTAIL))
            break;
        if (mc == 1) {
            R[md] = t->e[1];
        } else if (mc == 2) {
            R[md] = t->e[1], R[md + 1] = t->e[2];
        } else {
            for (uint32_t e = 0; e < mc; e++)
                R[md + e] = t->e[e + 1];
        }
        lev++;
        size_t sp = cbase + nregs;
        if (__builtin_expect((++rw & 0xffff) == 0, 0)) {
            /* the counts as they are, for the limits' report */
            r->tried += lev, r->fired += lev, r->built += lev, f->lev += lev;
            lev = 0;
            rs->rewrites = rw;
            if (tgW_run_poll(rs, err) < 0) {
                rc = -2, tried = 0;
                break;
            }
        }
        /* the pushes (the constructor's leading arguments, then the
         * call's) over this level's registers, which nothing reads
         * after them: the next level's registers start cc - 1 words
         * further (none for a constructor of one argument) */
        if (np) {
            tg_term *p0 = R[src[0]], *p1 = R[src[1]], *p2 = np == 3 ? R[src[2]] : NULL;
            R[0] = p0, R[1] = p1;
            if (np == 3)
                R[2] = p2;
        } else {
            for (const tgW_ins *q = body; q != call; q++)
                if (q->op == E_CONST) {
                    vs[sp++] = K[q->a];
                } else {
                    vs[sp] = R[q->a];
                    if (q->op == E_VARS) {
                        vs[sp + 1] = R[q->b];
                        if (q->pad == 3)
                            vs[sp + 2] = R[q->c];
                        sp += q->pad - 1u;
                    }
                    sp++;
                }
            for (size_t e = cbase + nregs; e < sp; e++)
                vs[e - nregs] = vs[e];
        }
        cbase += lead;
        if (!keyed) {
            if (dd)
                rr = call_rules(cby, vs + cbase, c, &nr);
        } else if (tgW_disp_key(vs[cbase]) != lastkey) {
            rr = call_rules(cby, vs + cbase, c, &nr);
            lastkey = tgW_disp_key(vs[cbase]);
        }
    }
    r->tried += lev + tried, r->fired += lev, r->built += lev, f->lev += lev;
    rs->rewrites = rw;
    *left = lf;
    out->rr = rr, out->nr = nr, out->tried = tried, out->cbase = cbase, out->entered = entered;
    return rc;
}

/* Frame f's ctorrec levels (see ctor_rec in reduce), the innermost
 * call's normal form result on the stack just above the last: the
 * constructor nodes of the levels, innermost first, each hashed before
 * any is built and the home bucket of the node CHAIN_AHEAD levels
 * further fetched (as chain_start).  Level 1's registers start one
 * stride (the frame's registers and its constructor's leading
 * arguments) above the frame's; each level's pushes went over its
 * registers (tgW_run_levels), so level j + 1's start cc - 1 words above level
 * j's, after level j's leading arguments.  Returns level
 * 1's node, in the place of the level's call (f->regs then level 1's
 * registers: the frame's own call), f->lev 0; NULL when out of memory. */
tg_term *tgW_unwind_levels(tg_ctx *ctx, tgW_machine *M, frame *f, tg_term *const *K, tg_term *result)
{
    const tgW_ins *ct = f->pc;     /* E_CALLT of the constructor */
    uint32_t cc = ct->c, lev = f->lev;
    size_t stride = f->rule->nregs + cc - 1, w1 = f->base + stride;
    tg_term *ch = K[ct->b];
    if (lev + 1 > M->lhcap) {
        size_t cap = M->lhcap ? 2 * M->lhcap : 1024;
        while (cap < lev + 1u)
            cap *= 2;
        uint64_t *a = GC_MALLOC_ATOMIC(cap * sizeof *a);
        if (!a)
            return NULL;
        M->lh = a, M->lhcap = cap;
    }
    uint64_t *lh = M->lh, h = tgT_ehash(result);
    /* level j's node: (ch args..) at vs[level j+1's base - (cc - 1)], the
     * last of them its child, at level j+1's base (w1 + j * (cc - 1)) */
    for (uint32_t j = lev; j >= 1; j--) {
        tg_term *const *a = M->vs + w1 + (size_t)(j - 1) * (cc - 1);
        lh[j] = h = tgT_app_hash(ch, cc, a, h);
    }
    for (uint32_t j = lev; j >= 1 && j + CHAIN_AHEAD > lev; j--)
        tgT_fetch(ctx, lh[j]);
    for (uint32_t j = lev; j >= 1; j--) {
        size_t b = w1 + (size_t)j * (cc - 1);
        M->vs[b] = result;
        if (!(result = tgT_app_hashed(ctx, lh[j], lh[j > CHAIN_AHEAD ? j - CHAIN_AHEAD : j], ch, cc,
                                      M->vs + b - (cc - 1))))
            return NULL;
    }
    f->rule->built += lev;
    f->lev = 0;
    f->regs = f->base + (uint32_t)stride;
    return result;
}

