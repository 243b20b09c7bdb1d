/* test_npy.c - .npy files (tg_npy_read, tg_npy_parse, tg_npy_write):
 * every dtype written from strided arrays and read back; Fortran-ordered
 * and big-endian files made by hand read as the values they hold; and
 * the errors (truncated header or data, an unknown dtype, not a .npy
 * file, a file that cannot be written, NULL arguments), which leave no
 * data behind. */
#include <stdio.h>
#include <unistd.h>

#include "kt.h"

/* A version 1.0 .npy image of header dict text and data bytes, in buf;
 * its length. */
static size_t image(char *buf, const char *dict, const void *data, size_t n)
{
    size_t hl = strlen(dict), total = (10 + hl + 1 + 63) / 64 * 64;
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (char)((total - 10) & 0xff), buf[9] = (char)((total - 10) >> 8);
    memcpy(buf + 10, dict, hl);
    memset(buf + 10 + hl, ' ', total - 10 - hl - 1);
    buf[total - 1] = '\n';
    memcpy(buf + total, data, n);
    return total + n;
}

static void test_round_trip(void)
{
    char path[64];
    snprintf(path, sizeof path, "test_npy.%ld.npy", (long)getpid());
    int bad = 0;
    for (int d = 0; d < 5; d++)
        for (int nd = 0; nd <= 3; nd++) {
            int64_t sh[3] = {3, 2, 4};
            kt_arr x;
            kt_make(&x, (tg_dtype)d, nd, sh, nd > 0);
            kt_fill(&x.a, d == TG_BOOL ? 0 : -100, d == TG_BOOL ? 2 : 100);
            tg_error err;
            tg_array y;
            if (tg_npy_write(path, &x.a, &err) < 0 || tg_npy_read(path, &y, &err) < 0) {
                tap_diag("%s", err.message);
                bad++;
                free(x.block);
                continue;
            }
            bad += y.dtype != (tg_dtype)d || y.ndim != nd;
            int64_t idx[3] = {0};
            do
                bad += kt_get(&y, idx) != kt_get(&x.a, idx);
            while (nd && kt_next(nd, sh, idx));
            free(y.data);
            free(x.block);
        }
    remove(path);
    TAP_CHECK(bad == 0, "every dtype and rank 0 to 3, strided, written and read back");
}

static void test_orders(void)
{
    char buf[512];
    tg_array a;
    tg_error err;
    /* a 2x3 int64 matrix stored by columns: 1 4 2 5 3 6 */
    int64_t cols[6] = {1, 4, 2, 5, 3, 6};
    size_t n = image(buf, "{'descr': '<i8', 'fortran_order': True, 'shape': (2, 3), }", cols, sizeof cols);
    int ok = tg_npy_parse(buf, n, "f.npy", &a, &err) == 0 && a.ndim == 2 && a.shape[0] == 2 && a.shape[1] == 3;
    for (int i = 0; ok && i < 6; i++)
        ok = ((int64_t *)a.data)[i] == i + 1;
    TAP_CHECK(ok, "a Fortran-ordered matrix reads in C order");
    free(a.data);
    /* big-endian float64 1.5 and -2, int32 7 */
    unsigned char be[12] = {0x3f, 0xf8, 0, 0, 0, 0, 0, 0, 0xc0, 0, 0, 0};
    n = image(buf, "{'descr': '>f8', 'fortran_order': False, 'shape': (1,), }", be, 8);
    ok = tg_npy_parse(buf, n, "b.npy", &a, &err) == 0 && ((double *)a.data)[0] == 1.5;
    free(a.data);
    unsigned char be2[8] = {0xc0, 0, 0, 0, 0, 0, 0, 0};
    n = image(buf, "{'descr': '>f8', 'fortran_order': True, 'shape': (1, 1), }", be2, 8);
    ok = ok && tg_npy_parse(buf, n, "b.npy", &a, &err) == 0 && ((double *)a.data)[0] == -2;
    free(a.data);
    unsigned char be3[4] = {0, 0, 0, 7};
    n = image(buf, "{'descr': '>i4', 'fortran_order': False, 'shape': (), }", be3, 4);
    ok = ok && tg_npy_parse(buf, n, "b.npy", &a, &err) == 0 && a.ndim == 0 && ((int32_t *)a.data)[0] == 7;
    free(a.data);
    TAP_CHECK(ok, "big-endian float64 and int32 read as their values, C and Fortran order");
}

static void test_errors(void)
{
    char buf[512];
    tg_array a;
    tg_error err;
    double x[3] = {1, 2, 3};
    size_t n = image(buf, "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }", x, sizeof x);
    int rc = tg_npy_parse(buf, n - 1, "t.npy", &a, &err);
    TAP_CHECK(rc < 0 && !a.data && !strcmp(err.message, "t.npy: truncated data: the header announces 24 bytes, the file has 23"),
              "truncated data: %s", err.message);
    rc = tg_npy_parse(buf, 40, "h.npy", &a, &err);
    TAP_CHECK(rc < 0 && !a.data && strstr(err.message, "h.npy: truncated header"), "truncated header: %s", err.message);
    n = image(buf, "{'descr': '<u2', 'fortran_order': False, 'shape': (3,), }", x, 6);
    rc = tg_npy_parse(buf, n, "u.npy", &a, &err);
    TAP_CHECK(rc < 0 && strstr(err.message, "u.npy: unsupported dtype"), "an unknown dtype: %s", err.message);
    rc = tg_npy_parse("not an array", 12, NULL, &a, &err);
    TAP_CHECK(rc < 0 && strstr(err.message, "<buffer>: not a .npy file"), "not a .npy file: %s", err.message);
    rc = tg_npy_read("no/such/dir/x.npy", &a, &err);
    TAP_CHECK(rc < 0 && strstr(err.message, "no/such/dir/x.npy") && err.code == TG_ERR_IO, "a missing file: %s",
              err.message);
    tg_array v;
    int64_t three = 3;
    tg_array_init(&v, TG_FLOAT64, 1, &three, x);
    rc = tg_npy_write("no/such/dir/x.npy", &v, &err);
    TAP_CHECK(rc < 0 && strstr(err.message, "no/such/dir/x.npy") && err.code == TG_ERR_IO,
              "a file that cannot be written: %s", err.message);
    TAP_CHECK(tg_npy_write(NULL, &v, &err) < 0 && err.code == TG_ERR_ARG && tg_npy_read(NULL, &a, &err) < 0 &&
                  tg_npy_parse(buf, n, "x", NULL, &err) < 0 && err.code == TG_ERR_ARG,
              "NULL arguments are errors");
}

int main(void)
{
    test_round_trip();
    test_orders();
    test_errors();
    return TAP_DONE();
}
