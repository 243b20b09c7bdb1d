/* arrays.h - arrays for the REPL's :eval (program-only, prefix tgM_):
 * made from literal terms (nested lists of numbers) or read from .npy
 * files, and written back as terms. */
#ifndef TG_ARRAYS_H
#define TG_ARRAYS_H

#include "tgrel.h"

/* Fill a (its data malloc'd: free(a->data)) with the values of t, a
 * number or nested lists of numbers of a rectangular shape, converted to
 * dtype; 0, or -1 with err filled. */
int tgM_array_from_term(const tg_term *t, tg_dtype dtype, tg_array *a, tg_error *err);

/* Read a .npy file (tg_npy_read: version 1 to 3, either byte order,
 * C or Fortran order; dtypes bool, int32, int64, float32, float64) into a
 * (data malloc'd); 0, or -1 with err naming the file and what is wrong. */
int tgM_array_read_npy(const char *path, tg_array *a, tg_error *err);

/* The same for the len bytes at buf (the whole file's contents); errors
 * name name. */
int tgM_array_parse_npy(const char *buf, size_t len, const char *name, tg_array *a,
                        tg_error *err);

/* The values of a as nested lists of numbers (a number for 0 dimensions);
 * NULL when out of memory. */
tg_term *tgM_array_to_term(tg_ctx *ctx, const tg_array *a);

/* The dtype of a dtype name (float64, float32, int64, int32, bool); -1
 * for another term. */
int tgM_dtype_of(const tg_term *name);

#endif
