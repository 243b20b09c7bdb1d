/* rowpar.h - what the interpreter's row blocks (interp_rows.c) run besides
 * the loops (module prefix tgRp_): the two products of a block of a
 * row-major matrix's rows, in a summation order of their own (so that
 * a result never depends on the thread that computed it, nor on BLAS's
 * threads), and a team of threads that runs phases of a call together.
 * See doc/kernels.md, "Row blocks". */
#ifndef TG_KERNELS_ROWPAR_H
#define TG_KERNELS_ROWPAR_H

#include <stdint.h>

/* y[i] = A[i, :] . w for i < b (A of b rows of f elements, row i at
 * A + i * lda): each row's products summed in a fixed order of f. */
void tgRp_rows_dot_d(int64_t b, int64_t f, const double *A, int64_t lda, const double *w, double *y);
void tgRp_rows_dot_s(int64_t b, int64_t f, const float *A, int64_t lda, const float *w, float *y);

/* t[j] += sum over i < b, in row order, of g[i] * A[i, j] (rows in
 * pieces give the same bits as whole). */
void tgRp_cols_dot_d(int64_t b, int64_t f, const double *A, int64_t lda, const double *g, double *t);
void tgRp_cols_dot_s(int64_t b, int64_t f, const float *A, int64_t lda, const float *g, float *t);

/* Fetch rows rows of bytes bytes, stride bytes apart from p, into the
 * caches (hints only). */
void tgRp_fetch(const void *p, int64_t rows, int64_t stride, int64_t bytes);

/* Windows of steps run as row blocks so far in the process (counted by
 * interp_rows.c; the tests read it to know that a plan ran blocked). */
void tgRp_count_window(void);
long tgRp_windows(void);

/* The threads a call may run on: omp_get_max_threads() of the OpenMP
 * runtime the compiled loops use when it is loaded (so
 * omp_set_num_threads and OMP_NUM_THREADS set both), else
 * $OMP_NUM_THREADS, else the processors online; 1 to 64. */
int tgRp_threads(void);

/* A team: nt - 1 threads besides the caller.  tgRp_phase runs
 * fn(ud, tid) on every member (the caller is tid 0) and returns when all
 * are done.  When the OpenMP runtime of the compiled loops is loaded the
 * members are its threads (a parallel region a phase; inside another
 * region, the caller alone); else threads of the team's own, which wait
 * for the next phase spinning, then yielding.  NULL when no thread could
 * start (run fn(ud, 0) alone). */
typedef struct tgRp_team tgRp_team;
typedef void (*tgRp_fn)(void *ud, int tid);
tgRp_team *tgRp_start(int nt, tgRp_fn fn, void *ud);
int tgRp_size(const tgRp_team *t);     /* its members; 1 for NULL */
void tgRp_phase(tgRp_team *t);
void tgRp_stop(tgRp_team *t);

#endif
