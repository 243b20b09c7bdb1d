/* scan.h - scan loops (module prefix tgSc_): the scan term's typing into
 * outer nodes and an inner typed graph, the inner schedule, and running
 * it, interpreted or as one generated C function.  See doc/scan.md. */
#ifndef TG_KERNELS_SCAN_H
#define TG_KERNELS_SCAN_H

#include "interp.h"

/* Output kinds: no feedback; one tap -1; negative taps; and MITMOT
 * (inputs at several taps >= 0 of one buffer, results written at
 * several taps >= 0 of it: PyTensor's kind for gradients of scans). */
enum { TGSC_NITSOT, TGSC_SITSOT, TGSC_MITSOT, TGSC_MITMOT };

/* Scans inside scans' lambdas: at most this many levels. */
#define TGSC_MAX_NEST 8
#define TGSC_MAX_NEST_TEXT "8"

typedef struct tgSc_out {
    int kind;
    bool last;              /* only the final value is kept */
    int keep;               /* (last N): only the final N rows are kept (N), else 0 */
    tg_term *init;          /* recurrent: the initial value's term */
    int ntaps, maxtap;      /* recurrent: taps, and max |tap| */
    int *taps;              /* |tap| per parameter, in the order listed (MITMOT: the tap) */
    int nres, r0;           /* its results: nres (MITMOT: one per out tap) from r0 */
    int *otaps;             /* MITMOT: the out taps, one per result */
    int param;              /* first parameter of its taps */
    int arg;                /* position of INIT among the outer args */
    bool inplace;           /* (inplace K): the last value may take INIT's buffer */
} tgSc_out;

typedef struct tgSc_scan {
    tg_term *term;
    int nseq, nout, nnon, nparams;
    int nres;               /* results: one per output, one per out tap of a MITMOT */
    int *rout;              /* the output of each result */
    tg_term **params, **results, *until;
    tg_term **seqs, **nons;
    tgSc_out *outs;
    bool autosteps, backwards;
    tgV_size steps;         /* in the outer graph's sizes */
    tg_term **args;         /* outer argument terms: seqs, inits, non-seqs */
    int nargs;
    int first;              /* outer node of output 0; outputs follow, then the step count */
    /* the inner function */
    tgV_graph *ig;
    tgH_sched *is;
    int *res;               /* inner node per result (nres) */
    int cond;               /* inner node of the until condition, or -1 */
} tgSc_scan;

/* Is name (len bytes) one of scan scan_output scan_steps? */
bool tgSc_head(const char *name, size_t len);
/* Type scan term t (or scan_output / scan_steps): 1 done, 0 when the
 * term *need must be built first, -1 on error. */
int tgSc_build(tgV_builder *b, tg_term *t, tg_term **need);

/* Runtime state of one scan step (malloc'd). */
typedef struct tgSc_state tgSc_state;
tgSc_state *tgSc_state_new(const tgSc_scan *sc);
void tgSc_state_free(tgSc_state *ss);
/* Run outer step `step` (a scan) of s; kern: its compiled function or NULL. */
int tgSc_run(const tgH_sched *s, tgI_state *st, const tgH_step *step, tgSc_state *ss,
             tgJ_loop_fn kern, tg_error *err);

/* Can the scan of step k be one generated function? */
bool tgSc_compiles(const tgH_sched *s, int k);
/* Does it have compiled code at all: that function, or inner loops? */
bool tgSc_has_code(const tgH_sched *s, int k);
/* Append the scan's code to b: its inner loops tgk_sK_loopJ (for the
 * interpreted loop) and, when it compiles, the function tgk_scanK. */
struct tgB_buf;
void tgSc_source(struct tgB_buf *b, const tgH_sched *s, int k);
/* Find step k's code in the shared object so: *kern the function (NULL
 * when it has none), and the inner loops into ss.  -1 with msg filled
 * when a symbol is missing. */
int tgSc_attach(const tgH_sched *s, int k, tgSc_state *ss, void *so, tgJ_loop_fn *kern, char *msg,
                size_t msglen);
/* The scan step as a term's text, appended to b. */
void tgSc_put_step(struct tgB_buf *b, const tgH_sched *s, int k);

#endif
