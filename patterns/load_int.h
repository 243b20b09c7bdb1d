/* load_int.h - what the loader of .rules files shares between load.c,
 * load_forms.c and defs.c (library-internal, prefix tgW_): the form
 * names, the state of a load, and the helpers that report errors and
 * parse and add what a form defines. */
#ifndef TG_LOAD_INT_H
#define TG_LOAD_INT_H

#include "compile.h"
#include "reader.h"
#include "rewriters.h"

#define MAX_INCLUDE 64

enum { F_OP, F_RULE, F_INCLUDE, F_DEFREL, F_TABLED, F_FACT, F_FACTS, F_ARITY, F_ASSOC, F_COMM,
       F_TO, F_BOTH, F_WHEN, F_NORMALIZE, F_MEMO, F_RUN, F_RUNSTAR, F_TAGS, F_EQUIL, F_WALK,
       F_SEQ, F_ORDER, F_IN2OUT, F_OUT2IN, F_MAXUSE, F_REVERSE, F_QUERY, F_INCL, F_REQ, F_EXCL,
       F_SUBQ, F_REWRITE, F_PROFILE, F_TRACE, F_ON, F_OFF, F_PROV, F_WHY, F_REGISTER, F_DEFQUERY, F_DEFOP, NF };
/* Their names, in that order (load.c). */
extern const char *const tgW_form_names[NF];
typedef struct loader {
    tg_rules *rs;
    tg_error *err;
    tg_term *const *sym;                /* the form names, rs->forms */
    const char *files[MAX_INCLUDE];     /* the include chain */
    int nfiles;
    const char **done;                  /* files included in this load: */
    size_t ndone, capdone;              /* a second include is skipped */
    tg_term **defs;                     /* relation forms, evaluated at the end */
    size_t ndefs, capdefs;
    const char **deffile;
    int *defline, *defcol;
    uint32_t *deffid;
    tg_reader *rd;                      /* the reader of the current form */
    const char *file;
    int line, col;
    struct relref {                     /* relations named as rewriter items, */
        tg_term *name;                  /* checked once the relations are defined */
        int backward;
        const char *file;
        int line, col;
    } *relrefs;
    size_t nrelrefs, caprelrefs;
    int skip_evals;                     /* tg_rules_load_file_defs: other forms skipped */
    int depth;                          /* load_text's: 1 for the file, more in includes */
    tg_error *errs;                     /* tg_rules_check_file: the errors of the */
    size_t maxerrs, nerrs;              /* file's forms, reading on after each */
} loader;

/* Set L's error at subterm at of the current form (its position when
 * the reader knows it, else the form's). */
void tgW_lerr(loader *L, const tg_term *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* tgW_lerr with term t written for the one %s of fmt: -1. */
int tgW_lerr_term(loader *L, const tg_term *at, const char *fmt, const tg_term *t)
    __attribute__((format(printf, 3, 0)));
/* tgW_lerr with terms t and u written for the two %s of fmt, in order: -1. */
int tgW_lerr_terms(loader *L, const tg_term *at, const char *fmt, const tg_term *t, const tg_term *u)
    __attribute__((format(printf, 3, 0)));
/* Where subterm sub of the current form was read (ud is the loader). */
void tgW_form_pos(void *ud, const tg_term *sub, int *line, int *col);
/* (op ...), a rewriter's item, a rewriter spec (a name or a query). */
int tgW_load_op(loader *L, tg_term *form);
int tgW_parse_item(loader *L, tg_term *x, tgW_item *it);
tgW_rw *tgW_parse_spec(loader *L, tg_term *spec, tgW_query **q);
/* Add an op, a rule, a rewriter to the rule set: 0, or -1 out of memory. */
int tgW_ops_push(tg_rules *rs, tgW_op *op);
int tgW_rules_push(tg_rules *rs, tgW_rule *r);
int tgW_rws_push(tg_rules *rs, tgW_rw *rw);
/* Do ops a and b declare the same arities and properties? */
int tgW_same_decl(const tgW_op *a, const tgW_op *b);

/* load_forms.c: (rule NAME LHS... => RHS ...) and (rule NAME LHS <=> RHS
 * ...); (equilibrium ...), (walk ...), (sequence ...) of the given kind;
 * 0, or -1 with L's error set. */
int tgW_load_rule(loader *L, tg_term *form);
int tgW_load_rewriter(loader *L, tg_term *form, int kind);
/* Compile the rule name LHS => RHS (conditions conds[0..nc), backward:
 * the right-to-left way of a <=> rule) of the current form, tagged tags,
 * into L's rule set: 0, or -1 with L's error set. */
int tgW_add_rule(loader *L, tg_term *name, tg_term *lhs, tg_term *rhs, tg_term *const *conds, size_t nc,
                 int backward, tg_term *tags);

/* defs.c: (register DATABASE ITEM ...), (defquery NAME (query ...)),
 * (defop (NAME ?PARAM ...) BODY); 0, or -1 with L's error set. */
int tgW_load_register(loader *L, tg_term *form);
int tgW_load_defquery(loader *L, tg_term *form);
int tgW_load_defop(loader *L, tg_term *form);

#endif
