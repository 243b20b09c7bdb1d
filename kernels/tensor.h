/* tensor.h - the typed graph of a tensor program (module prefix tgV_):
 * one node per distinct subterm, with its op, dtype and symbolic shape.
 * See doc/kernels.md. */
#ifndef TG_KERNELS_TENSOR_H
#define TG_KERNELS_TENSOR_H

#include <stdbool.h>
#include <stdint.h>

#include "tgrel.h"

#define TGV_MAXDIM TG_MAXDIM

typedef enum tgV_op {
    TGV_INPUT, TGV_CONST,
    /* elementwise */
    TGV_ADD, TGV_SUB, TGV_MUL, TGV_DIV, TGV_NEG, TGV_POW,
    TGV_EXP, TGV_LOG, TGV_LOG1P, TGV_SQRT, TGV_SIN, TGV_COS, TGV_TANH, TGV_SIGMOID,
    TGV_ABS, TGV_SQR, TGV_RECIPROCAL, TGV_EXPM1, TGV_SOFTPLUS, TGV_MAXIMUM, TGV_MINIMUM, TGV_INT_DIV, TGV_MOD,
    TGV_USER,   /* an op defined with a C expression (userop.h): node->user */
    TGV_LT, TGV_LE, TGV_GT, TGV_GE, TGV_EQ, TGV_NEQ,
    TGV_SWITCH, TGV_CAST, TGV_FILL, TGV_ALLOC,
    /* the rest */
    TGV_SUM, TGV_PROD, TGV_MAX, TGV_MIN, TGV_MEAN,
    TGV_DOT, TGV_TRANSPOSE, TGV_DIMSHUFFLE, TGV_RESHAPE,
    TGV_GEMM,   /* made by the schedule: alpha*dot(A,B) + beta*C */
    TGV_SUBTENSOR,  /* indexing and slicing, a view: index.c */
    TGV_SCAN,   /* one output of a scan, or its step count (kernels/scan.h) */
    TGV_RANDOM, /* a random draw (kernels/random.h) */
    TGV_INC_SUBTENSOR, TGV_SET_SUBTENSOR,   /* X with X[IDX...] += V or = V: index.c */
    /* picking and arranging (arrange.c): argmax / argmin over an axis,
     * concatenate, stack, their gradients' parts, take, inc_take, one_hot */
    TGV_ARGMAX, TGV_ARGMIN, TGV_CONCAT, TGV_STACK, TGV_CONCAT_PART, TGV_STACK_PART,
    TGV_CONCAT_INC, TGV_STACK_INC, TGV_TAKE, TGV_INC_TAKE, TGV_ONE_HOT,
    /* an op a rule set defines (defop) kept whole for its gradient rule:
     * the type of its definition, its arguments all tensors; only the
     * gradient's builders make one (tgV_set_defined), never a function */
    TGV_DEFINED,
    TGV_NOPS
} tgV_op;

/* A size: >= 0 is a static size, < 0 is the symbol class -(s + 1). */
typedef int64_t tgV_size;

typedef struct tgV_node {
    tg_term *term;          /* the subterm this node computes */
    tgV_op op;
    tg_dtype dtype;
    tg_dtype cdt;           /* the dtype the op computes in (comparisons: promoted args) */
    bool weak;              /* a bare number literal */
    int nargs;
    int *args;              /* node indices */
    int ndim;
    tgV_size shape[TGV_MAXDIM];
    /* op parameters */
    union { double f; int64_t i; } value;   /* CONST: in the class of dtype */
    int input;              /* INPUT: its position */
    int8_t perm[TGV_MAXDIM];  /* TRANSPOSE / DIMSHUFFLE: source axis, -1 new */
    uint32_t axes;          /* reductions: bit mask of reduced axes */
    int nalpha;             /* GEMM: args are A B C alpha... beta... */
    bool dead;              /* absorbed into a GEMM: not computed */
    const struct tgIx_spec *index;  /* SUBTENSOR, INC / SET_SUBTENSOR: its indices (index.h) */
    struct tgSc_scan *scan; /* SCAN: the scan, shared by its nodes */
    int sout;               /* SCAN: the output, or -1 for the step count */
    int8_t rkind;           /* RANDOM: the kind of draw (TGRN_UNIFORM ...) */
    int rord;               /* RANDOM: its ordinal among the graph's draws */
    const struct tgUo_op *user;     /* USER: its definition (userop.h) */
} tgV_node;

typedef struct tgV_graph {
    tg_ctx *ctx;
    tgV_node *nodes;        /* arguments before users */
    int n, cap;
    tg_term **syms;         /* size symbols; class of symbol k is uf[k] */
    int *uf;
    int64_t *symval;        /* static value of a class root, -1 if none */
    int nsyms, symcap;
    int *inputs, ninputs;   /* node per input position */
    int *outputs, noutputs;
    struct tgIx_dsize *dsizes;  /* sizes derived by slicing (index.h) */
    int ndsizes, dscap;
    bool keep_reductions;   /* schedule: no reduction fused into a loop */
    bool ger_steps;         /* schedule: C + u v^T as a ger step (fuse_ger) */
    /* shared variables (kernels/state.c): the leaves (shared NAME DTYPE
     * (SIZE ...)) are the last nshared inputs, in the order met; update
     * j writes updated[j] (one of them) with the value of output
     * noutputs - nupdates + j */
    int nshared;
    int nupdates;
    int *updated;
    /* sizes concatenate derives from symbolic sizes (arrange.h) */
    struct tgAr_dsum *dsums;
    int ndsums, dsumcap;
} tgV_graph;

/* Build the typed graph of outputs over inputs; NULL with err filled
 * (naming the subterm) on an unknown op, a dtype or shape mismatch. */
tgV_graph *tgV_build(tg_ctx *ctx, size_t nin, tg_term *const *inputs, size_t nout,
                     tg_term *const *outputs, tg_error *err);

const char *tgV_dtype_name(tg_dtype d);
/* numpy's promotion of two dtypes (bool < int32 < int64, float32 <
 * float64, an integer of 32 bits or more with float32 float64). */
tg_dtype tgV_promote2(tg_dtype a, tg_dtype c);
size_t tgV_dtype_size(tg_dtype d);
bool tgV_is_float(tg_dtype d);
bool tgV_elementwise(tgV_op op);
const char *tgV_op_name(tgV_op op);
/* The class root of symbol class c (a tgV_size < 0 in, < 0 or static out). */
tgV_size tgV_canon(const tgV_graph *g, tgV_size s);
/* A new size class named by symbol name (no lookup: index.c names the
 * sizes it derives); its number, or -1 with err filled. */
int tgV_new_sym(tgV_graph *g, tg_term *name, tg_error *err);
/* Printed form of a term cut to fit in buf (for error messages). */
const char *tgV_show(const tg_term *t, char *buf, size_t size);

/* ---- for kernels/scan.c: building nodes while a graph is built ---- */

typedef struct tgV_builder tgV_builder;

/* ---- for kernels/grad.c: typing terms one at a time ---- */

/* A builder over inputs and no outputs yet (NULL, err filled, on a bad
 * input); its graph grows as terms are added, so node pointers do not
 * survive a tgV_add, indices do.  Shapes are not canonical: read them
 * through tgV_canon. */
tgV_builder *tgV_open(tg_ctx *ctx, size_t nin, tg_term *const *inputs, tg_error *err);
/* The same with no inputs given: each (input ...) term met is one, in
 * the order met (g->inputs[i] its node). */
tgV_builder *tgV_open_any(tg_ctx *ctx, tg_error *err);
/* Type an application of an op that is not in the vocabulary as a
 * TGV_DEFINED node when define(ud, t) gives its definition (NULL: t is
 * no such application, an unknown op as before). */
void tgV_set_defined(tgV_builder *b, tg_term *(*define)(void *ud, tg_term *t), void *ud);
/* Type t and its subterms in b: t's node, or -1 with the error filled. */
int tgV_add(tgV_builder *b, tg_term *t);
/* Whether argument i (from 0, after the head) of op term t is a tensor
 * (a node's argument) rather than a parameter (axes, dtype, sizes). */
bool tgV_tensor_arg(const tg_term *t, size_t i);
/* The same, knowing the ops ctx defines with C expressions (userop.h):
 * their arguments are all tensors. */
bool tgV_tensor_arg_in(tg_ctx *ctx, const tg_term *t, size_t i);
/* Whether name (len bytes) is an op of the vocabulary. */
bool tgV_builtin_op(const char *name, size_t len);
/* The name of node n's op ("?" when unknown). */
const char *tgV_node_op_name(const tgV_node *n);
tgV_graph *tgV_graph_of(tgV_builder *b);
tg_error *tgV_err_of(tgV_builder *b);
/* The node of term t, or -1 when it has none yet. */
int tgV_node_of(const tgV_builder *b, const tg_term *t);
/* A new zeroed node computing t (NULL when out of memory, err filled). */
tgV_node *tgV_new_node(tgV_builder *b, tg_term *t, tgV_op op);
/* Make term t name node v too. */
int tgV_alias(tgV_builder *b, tg_term *t, int v);
/* The node of (const DTYPE v) for number v (built when new). */
int tgV_const_node(tgV_builder *b, tg_dtype d, tg_term *v);
/* An error "kernels: in T: what"; returns -1. */
int tgV_fail(tgV_builder *b, const tg_term *t, const char *what);
int tgV_size_of(tgV_builder *b, tg_term *ctx_term, tg_term *t, tgV_size *out);
int tgV_unify(tgV_builder *b, tg_term *t, tgV_size a, tgV_size c, const char *what);
/* "(3 n)" */
const char *tgV_shape_text(const tgV_graph *g, int ndim, const tgV_size *sh, char *buf, size_t n);

/* tgV_build for a function with updates: the last nupd outputs are the
 * new values of targets[j], each a (shared ...) leaf; a value must have
 * its target's dtype (a weak literal is cast to it) and shape (symbolic
 * sizes are unified, so that a mismatch is found when sizes are bound). */
tgV_graph *tgV_build_updates(tg_ctx *ctx, size_t nin, tg_term *const *inputs, size_t nout,
                             tg_term *const *outputs, size_t nupd, tg_term *const *targets,
                             tg_error *err);

/* The typed graph of a scan's inner function, met while building outer:
 * inputs as tgV_build's, and psyms[i] (a symbol) naming inputs[i] inside
 * the outputs; errors go to outer's. */
tgV_graph *tgV_build_inner(tgV_builder *outer, size_t nin, tg_term *const *inputs, tg_term *const *psyms,
                           size_t nout, tg_term *const *outputs);
/* How many scan lambdas enclose the graph b builds. */
int tgV_depth(const tgV_builder *b);

#endif
