/* rec_convert.h - the REC benchmark files (the line-based neutral format of
 * the shared REC folder, see its README) converted to .rules text, with
 * their queries and expected normal forms.  Plain C: no engine needed. */
#ifndef TGREL_BENCH_REC_CONVERT_H
#define TGREL_BENCH_REC_CONVERT_H

#include <stddef.h>

/* One `eval` line and what its normal form must be. */
typedef struct tg_rec_eval {
    char *query;                /* the term, as S-expression text */
    char *expect;               /* full normal form, or NULL */
    int has_sha;                /* expect-sha256 given */
    unsigned char sha[32];
    unsigned long long bytes;   /* length of the printed normal form */
    unsigned long long symbols; /* symbol occurrences in it */
    char sort[64];
    int line;                   /* of the eval line */
} tg_rec_eval;

typedef struct tg_rec_spec {
    char name[128];             /* "; benchmark:" name, else the file name */
    char *rules;                /* the .rules text, NUL-terminated */
    size_t rules_len;
    tg_rec_eval *evals;
    size_t n_evals;
    size_t n_ops, n_rules, n_conditional;
    long long maude_rewrites;   /* total Maude gives in a comment, or -1 */
} tg_rec_spec;

/* Convert len bytes of a benchmark file; file names it in messages.
 * Checks every term: declared operators applied to their arity, declared
 * variables, right-hand sides and conditions using only variables of the
 * left-hand side, ground queries.  0, or -1 with "file:line: message" in
 * msg (*out then holds nothing to free). */
int tg_rec_convert(const char *text, size_t len, const char *file,
                   tg_rec_spec *out, char *msg, size_t msgsize);
void tg_rec_spec_free(tg_rec_spec *spec);

#endif
