/* compile.h - compiling rules into machine code (module prefix tgW_, with
 * rset.h): the state of one compilation and its entry point. */
#ifndef TG_COMPILE_H
#define TG_COMPILE_H

#include "rset.h"

#define TGW_MAXVARS 512
#define TGW_MAXGOALDEPTH 200  /* templates in relation conditions (built recursively) */

typedef struct tgW_vec {
    tgW_ins *v;
    size_t n, cap;
} tgW_vec;

typedef struct tgW_comp {
    tg_rules *rs;
    tg_error *err;
    const char *file;           /* where the rule is, for errors */
    int line, col;
    /* the position of a subterm of the form being compiled, if known */
    void (*pos)(void *ud, const tg_term *sub, int *line, int *col);
    void *pos_ud;
    tg_term *s_quote, *s_when;
    int failed;
    tgW_vec match, body;
    tg_term **k;
    uint32_t nk, capk;
    tg_term *vars[TGW_MAXVARS];
    uint32_t vregs[TGW_MAXVARS];
    uint32_t nvars, nregs, ncomm;
    uint32_t nac;               /* assoc / comm nodes of the left side */
    /* the registers of variables that absorb several arguments (an
     * application of the op, built by the match: not a normal form) */
    uint32_t gregs[TGW_MAXVARS];
    const tgW_op *gops[TGW_MAXVARS];
    uint32_t ngroups;
    /* sharing: compound subterms met before, with the register that will
     * hold their normal form (left-side subterms: the matched term) */
    tg_term *shared[TGW_MAXVARS];
    uint32_t sregs[TGW_MAXVARS];
    uint32_t nshared;
    uint32_t nquoted;           /* quoted parts pat compiled so far */
    tgW_map counts;             /* right-side subterm -> occurrences */
    int depth, maxdepth;
} tgW_comp;

/* t printed for an error message, cut after about 110 characters
 * (malloc'd; NULL when out of memory). */
char *tgW_show(const tg_term *t);

void tgW_comp_init(tgW_comp *c, tg_rules *rs, tg_error *err);
/* Compile one direction of a rule: l => rhs when every condition holds.
 * NULL with the error (file:line:column and the offending text) in
 * c->err. */
tgW_rule *tgW_compile_rule(tgW_comp *c, tg_term *name, tg_term *l, tg_term *rhs,
                           tg_term *const *conds, size_t nconds, int backward);

#endif
