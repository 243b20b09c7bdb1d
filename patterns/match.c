/* match.c - the general match of a rule's left side (tgW_match): the
 * match program over the call's arguments, with a choice stack for
 * segments and alternatives.  Plain rules, most of them, take the leaner
 * match_plain in machine.c instead.
 */
#include "machine_int.h"

/* The c arguments of t into out when t is (head a1 ... ac), a proper list. */
static inline int app_args(const tg_term *t, const tg_term *head, unsigned c, tg_term **out)
{
    if (c + 1 < TGT_CHUNK)
        return app_args_short(t, head, c, out);
    if (!tgT_ispair(t) || t->e[0] != head)
        return 0;
    tg_iter it = {(tg_term *)t, 1};
    unsigned i = 0;
    for (tg_term *x; (x = tgT_iter_next(&it));)
        if (i == c)
            return 0;
        else
            out[i++] = x;
    return i == c && it.node == TGT_NIL;
}

/* The elements of t from the (k+1)-th on (after the head: k arguments) as
 * a list, when t is (head a1 ...) with at least k arguments; the first k
 * go to out.  NULL and *oom when out of memory. */
static tg_term *app_seg(tg_ctx *ctx, const tg_term *t, const tg_term *head, unsigned k, tg_term **out,
                        int *oom)
{
    if (!tgT_ispair(t) || t->e[0] != head)
        return NULL;
    tg_iter it = {(tg_term *)t, 1};
    for (unsigned i = 0; i < k; i++)
        if (!(out[i] = tgT_iter_next(&it)))
            return NULL;
    tg_term *rest = tg_iter_rest(ctx, &it);
    if (!rest)
        *oom = 1;
    return rest;
}

#define MAXCHOICE 64

/* The dispatch of match instructions (machine_int.h's TGW_THREADED):
 * with GNU C a jump through a table ends each. */
#ifdef TGW_THREADED
#define MOP(x) case x: m_##x
#define MDEFAULT default: m_default
#define MNEXT()                                                               \
    do {                                                                      \
        pc++;                                                                 \
        goto *mtab[pc->op];                                                   \
    } while (0)
#else
#define MOP(x) case x
#define MDEFAULT default
#define MNEXT() break
#endif

typedef struct choice {
    const tgW_ins *pc;
    int alt;
} choice;

/* Match rule r against the n arguments A, filling R: 1, 0 (no match),
 * -1 when out of memory, -2 for a rule that tgW_ac_match runs. */
int tgW_match(tg_ctx *ctx, const tgW_rule *r, tg_term **A, uint32_t n,
                                            tg_term **R)
{
    choice cs[MAXCHOICE];
    int ncs = 0, oom = 0;
    tg_term *const *K = r->k;
    const tgW_ins *pc = r->match;
    int alt = 0;
#ifdef TGW_THREADED
    static const void *const mtab[] = {
        [M_ROOT] = &&m_M_ROOT, [M_ROOTSEG] = &&m_M_ROOTSEG, [M_APP] = &&m_M_APP,
        [M_APPSEG] = &&m_M_APPSEG, [M_LIST] = &&m_M_LIST, [M_CONST] = &&m_M_CONST,
        [M_SAME] = &&m_M_SAME, [M_COMM] = &&m_M_COMM, [M_ROOTCOMM] = &&m_M_ROOTCOMM,
        [M_DONE] = &&m_M_DONE, [M_ACRULE] = &&m_default, [M_ACOPEN] = &&m_default,
        [M_ACONE] = &&m_default, [M_ACTAKE] = &&m_default, [M_ACGROUP] = &&m_default,
        [M_ACALL] = &&m_default, [M_ACREST] = &&m_default, [M_ACEND] = &&m_default,
        [M_ASONE] = &&m_default, [M_ASRUN] = &&m_default, [M_ASTAKE] = &&m_default,
    };
    goto *mtab[pc->op];
#endif
    for (;;) {
        switch (pc->op) {
        MOP(M_ROOT):
            if (n != pc->a)
                return 0;
            MNEXT();
        MOP(M_ROOTSEG):
            if (n < pc->a)
                return 0;
            memmove(R, A, pc->a * sizeof *R);
            if (!(R[pc->a] = tg_list(ctx, n - pc->a, A + pc->a, NULL)))
                return -1;
            MNEXT();
        MOP(M_APP):
            if (!app_args(R[pc->a], K[pc->b], pc->c, R + pc->d))
                goto fail;
            MNEXT();
        MOP(M_APPSEG):
            if (!(R[pc->d + pc->c] = app_seg(ctx, R[pc->a], K[pc->b], pc->c, R + pc->d, &oom)))
                goto fail;
            MNEXT();
        MOP(M_LIST): {
            tg_iter it = {R[pc->a], 0};
            unsigned i = 0;
            for (tg_term *x; (x = tgT_iter_next(&it));)
                if (i == pc->c)
                    goto fail;
                else
                    R[pc->d + i++] = x;
            if (i != pc->c || it.node != TGT_NIL)
                goto fail;
            MNEXT();
        }
        MOP(M_CONST):
            if (R[pc->a] != K[pc->b])
                goto fail;
            MNEXT();
        MOP(M_SAME):
            if (R[pc->a] != R[pc->b])
                goto fail;
            MNEXT();
        MOP(M_COMM): MOP(M_ROOTCOMM): {
            tg_term *two[2];
            if (pc->op == M_ROOTCOMM) {
                if (n != 2)
                    return 0;
                two[0] = A[0], two[1] = A[1];
            } else if (!app_args(R[pc->a], K[pc->b], 2, two)) {
                goto fail;
            }
            R[pc->d] = two[alt], R[pc->d + 1] = two[!alt];
            if (!alt && two[0] != two[1]) {
                if (ncs == MAXCHOICE)
                    return -1;  /* compiling bounds it */
                cs[ncs].pc = pc, cs[ncs].alt = 1;
                ncs++;
            }
            alt = 0;
            MNEXT();
        }
        MOP(M_DONE):
            return 1;
        MDEFAULT:       /* M_ACRULE */
            return -2;
        }
        pc++;
        continue;
    fail:
        if (oom)
            return -1;
        if (!ncs)
            return 0;
        ncs--;
        pc = cs[ncs].pc;
        alt = cs[ncs].alt;
#ifdef TGW_THREADED
        goto *mtab[pc->op];
#endif
    }
}
