/* blas.h - OpenBLAS opened at first use (module prefix tgBl_): the cblas
 * functions the kernels call, through pointers, and the choice of the
 * OpenBLAS core from the processor's cpuid feature bits, checked by a
 * known-answer product before it is kept.  See doc/kernels.md. */
#ifndef TG_BLAS_H
#define TG_BLAS_H

#include <stdbool.h>
#include <stddef.h>

#include <cblas.h>

#include "tgrel.h"

/* The functions the interpreter and the generated scan loops call. */
typedef struct tgBl_fns {
    __typeof__(cblas_ddot) *ddot;
    __typeof__(cblas_sdot) *sdot;
    __typeof__(cblas_dgemv) *dgemv;
    __typeof__(cblas_sgemv) *sgemv;
    __typeof__(cblas_dgemm) *dgemm;
    __typeof__(cblas_sgemm) *sgemm;
    __typeof__(cblas_dger) *dger;
    __typeof__(cblas_sger) *sger;
} tgBl_fns;

/* The instruction sets that decide which core can run: each as cpuid
 * reports it, and whether the operating system saves the ymm / zmm
 * registers (XCR0), without which AVX / AVX-512 code faults. */
typedef struct tgBl_cpu {
    bool sse3, ssse3, sse41, sse42, avx, fma, avx2;
    bool avx512f, avx512dq, avx512bw, avx512vl, avx512bf16;
    bool os_ymm, os_zmm;
} tgBl_cpu;

/* Where the OpenBLAS in use came from. */
typedef enum tgBl_origin {
    TGBL_OWN,        /* OpenBLAS's own choice of core */
    TGBL_CHOSEN,     /* the core tgrel chose (OPENBLAS_CORETYPE at load) */
    TGBL_FALLBACK,   /* tgrel's choice failed the check: OpenBLAS's own */
    TGBL_USER,       /* the user's OPENBLAS_CORETYPE */
    TGBL_OFF,        /* TGREL_BLAS_CORE=off: OpenBLAS's own, no choice made */
    TGBL_PRESENT     /* already in the process when tgrel first needed it */
} tgBl_origin;

typedef struct tgBl_status {
    tgBl_origin origin;
    char core[32];      /* openblas_get_corename() of the library in use */
    char own[32];       /* OpenBLAS's own choice, when tgrel loaded it plain */
    char picked[32];    /* tgrel's pick from cpuid ("" for none) */
} tgBl_status;

/* What the first use reads from the environment, or a test sets. */
typedef struct tgBl_opts {
    const char *user_core;   /* OPENBLAS_CORETYPE, NULL when unset or empty */
    bool off;                /* TGREL_BLAS_CORE=off */
    bool verbose;            /* TGREL_BLAS_VERBOSE: one line on stderr at load */
    /* tests only: take OpenBLAS's own choice to be this core, change
     * the chosen core's functions before they are checked, open this
     * library instead of the one configure found */
    const char *own_as;
    void (*tamper)(tgBl_fns *f);
    const char *soname;
} tgBl_opts;

/* The functions, loading OpenBLAS on the first call (from the options
 * the environment gives); NULL with err when it cannot be loaded. */
const tgBl_fns *tgBl_get(tg_error *err);

/* The first use with explicit options (tests); later calls return the
 * functions already loaded, whatever their options. */
const tgBl_fns *tgBl_init(const tgBl_opts *o, tg_error *err);

/* The threads OpenBLAS runs a large product on (openblas_get_num_threads
 * of the library in use); 1 before the first use or when unknown. */
int tgBl_threads(void);

/* How the library in use was chosen; false before the first use. */
bool tgBl_status_get(tgBl_status *st);

/* The processor's features; false where there is no cpuid (not x86). */
bool tgBl_cpu_read(tgBl_cpu *c);

/* The best OpenBLAS core for those features, NULL for none. */
const char *tgBl_pick(const tgBl_cpu *c);

/* A core's place in the order of x86 instruction-set generations (higher
 * runs wider vectors); 0 for a name not known, never to be replaced. */
int tgBl_rank(const char *core);

/* Whether tgrel replaces OpenBLAS's own choice own by its pick: only a
 * known core of a lower rank, never one it cannot place. */
bool tgBl_better(const char *pick, const char *own);

/* The known-answer products (dgemm, sgemm, dgemv, sgemv, ddot, sdot on
 * odd sizes, integer data so that every result is exact) against plain C
 * loops: 1 when all agree, 0 with the first that differs named in what,
 * -1 out of memory. */
int tgBl_check(const tgBl_fns *f, char *what, size_t len);

#endif
