/* npy.c - numpy's .npy files (public tg_npy_*): a magic string, a
 * version, a header that is a Python dict literal ('descr', 'fortran_order',
 * 'shape'), then the raw elements.  Reading takes versions 1 to 3, either
 * byte order and either memory order, and gives a C-contiguous array in
 * the machine's order (little-endian here); writing makes version 1.0, C
 * order, little-endian.  Nothing recurses: at most TG_MAXDIM axes,
 * walked with index vectors. */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tgrel.h"

static const size_t dsize[] = {1, 4, 8, 4, 8};

static int npy_fail(tg_error *err, const char *name, const char *why)
{
    tg_error_set(err, TG_ERR_IO, "%s: %s", name, why);
    return -1;
}

/* The text after key in the header dict ('descr': ...), or NULL. */
static const char *field(const char *h, const char *key)
{
    const char *p = strstr(h, key);
    if (!p)
        return NULL;
    p += strlen(key);
    while (*p == ' ' || *p == '\'' || *p == '"' || *p == ':')
        p++;
    return p;
}

/* The dtype of descr d ('<f8', '>i4', '|b1', ...), *swap set for the
 * other byte order; -1 for one tgrel has not. */
static int descr_dtype(const char *d, int *swap)
{
    static const char kind[] = {'b', 'i', 'i', 'f', 'f'};
    static const char size[] = {'1', '4', '8', '4', '8'};
    char order = d[0];
    if (order != '<' && order != '>' && order != '|' && order != '=')
        return -1;
    for (int i = 0; i < 5; i++)
        if (d[1] == kind[i] && d[2] == size[i] && (d[3] == '\'' || d[3] == '"')) {
            if (order == '|' && i != 0)
                return -1;      /* '|' only for one-byte elements */
            *swap = order == '>' && i != 0;
            return i;
        }
    return -1;
}

/* The header's shape tuple into a; NULL, or what is wrong. */
static const char *shape_of(const char *sh, tg_array *a)
{
    for (const char *p = sh + 1; *p && *p != ')';) {
        while (*p == ' ' || *p == ',')
            p++;
        if (*p == ')')
            break;
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (end == p || v < 0 || errno || a->ndim == TG_MAXDIM)
            return "bad shape in the header";
        a->shape[a->ndim++] = v;
        p = end;
    }
    return NULL;
}

/* The elements at src, in Fortran order when fortran, swapped when swap,
 * into a's C-contiguous data. */
static void place(tg_array *a, const char *src, int64_t count, int fortran, int swap)
{
    size_t es = dsize[a->dtype];
    if (!fortran)
        memcpy(a->data, src, (size_t)count * es);
    else {
        /* element k of the file is at index (i0, i1, ...) with i0 fastest */
        int64_t idx[TG_MAXDIM] = {0};
        for (int64_t k = 0; k < count; k++) {
            int64_t off = 0;
            for (int d = 0; d < a->ndim; d++)
                off += idx[d] * (a->strides[d] / (int64_t)es);
            memcpy((char *)a->data + off * (int64_t)es, src + k * (int64_t)es, es);
            for (int d = 0; d < a->ndim && ++idx[d] == a->shape[d]; d++)
                idx[d] = 0;
        }
    }
    if (swap)
        for (int64_t k = 0; k < count; k++) {
            unsigned char *p = (unsigned char *)a->data + k * (int64_t)es;
            for (size_t i = 0; i < es / 2; i++) {
                unsigned char t = p[i];
                p[i] = p[es - 1 - i], p[es - 1 - i] = t;
            }
        }
}

int tg_npy_parse(const void *buf, size_t len, const char *name, tg_array *a, tg_error *err)
{
    if (!a)
        return tg_error_set(err, TG_ERR_ARG, "tg_npy_parse: a NULL array"), -1;
    memset(a, 0, sizeof *a);
    name = name ? name : "<buffer>";
    const char *f = buf;
    const unsigned char *u = buf;
    if (!buf || len < 10 || memcmp(f, "\x93NUMPY", 6) != 0 || u[6] < 1 || u[6] > 3)
        return npy_fail(err, name, "not a .npy file (version 1 to 3)");
    size_t hl, off;
    if (u[6] == 1) {
        hl = (size_t)u[8] | (size_t)u[9] << 8;
        off = 10;
    } else {
        hl = len < 12 ? SIZE_MAX : (size_t)u[8] | (size_t)u[9] << 8 | (size_t)u[10] << 16 |
                                   (size_t)u[11] << 24;
        off = 12;
    }
    if (len < off || hl > len - off)
        return npy_fail(err, name, "truncated header");
    char *h = strndup(f + off, hl);
    const char *d = h ? field(h, "descr") : NULL;
    const char *fo = h ? field(h, "fortran_order") : NULL;
    const char *sh = h ? field(h, "shape") : NULL;
    int swap = 0, dt = d ? descr_dtype(d, &swap) : -1;
    int fortran = fo && !strncmp(fo, "True", 4);
    const char *why = !h ? "out of memory"
                      : dt < 0 ? "unsupported dtype (bool, int32, int64, float32 or float64)"
                      : !fo || (strncmp(fo, "False", 5) && !fortran) ? "no fortran_order in the header"
                      : !sh || *sh != '(' ? "no shape in the header" : NULL;
    if (!why) {
        a->dtype = (tg_dtype)dt;
        why = shape_of(sh, a);
    }
    int64_t count = 1;
    for (int k = 0; !why && k < a->ndim; k++) {
        if (a->shape[k] && count > ((int64_t)1 << 40) / a->shape[k])
            why = "array too large";
        count *= a->shape[k];
    }
    size_t bytes = why ? 0 : (size_t)count * dsize[dt];
    char msg[160];
    if (!why && bytes > len - off - hl) {
        snprintf(msg, sizeof msg, "truncated data: the header announces %zu bytes, the file has %zu",
                 bytes, len - off - hl);
        why = msg;
    }
    if (!why && !(a->data = malloc(bytes ? bytes : 1)))
        why = "out of memory";
    if (!why) {
        int64_t shape[TG_MAXDIM];
        memcpy(shape, a->shape, sizeof shape);
        tg_array_init(a, a->dtype, a->ndim, shape, a->data);
        place(a, f + off + hl, count, fortran, swap);
    }
    free(h);
    if (why) {
        int rc = npy_fail(err, name, why);
        memset(a, 0, sizeof *a);
        return rc;
    }
    return 0;
}

int tg_npy_read(const char *path, tg_array *a, tg_error *err)
{
    if (!path || !a)
        return tg_error_set(err, TG_ERR_ARG, "tg_npy_read: a NULL argument"), -1;
    memset(a, 0, sizeof *a);
    size_t len;
    tg_error e;
    tg_error_clear(&e);
    char *f = tg_slurp_file(path, &len, &e);
    if (!f)
        return npy_fail(err, path, e.message);
    int rc = tg_npy_parse(f, len, path, a, err);
    free(f);
    return rc;
}

int tg_npy_write(const char *path, const tg_array *a, tg_error *err)
{
    static const char *const descr[] = {"|b1", "<i4", "<i8", "<f4", "<f8"};
    if (!path || !a || (unsigned)a->dtype > TG_FLOAT64 || a->ndim < 0 || a->ndim > TG_MAXDIM)
        return tg_error_set(err, TG_ERR_ARG, "tg_npy_write: a NULL or malformed argument"), -1;
    int64_t count = 1;
    for (int d = 0; d < a->ndim; d++) {
        if (a->shape[d] < 0)
            return tg_error_set(err, TG_ERR_ARG, "tg_npy_write: a negative size"), -1;
        count *= a->shape[d];
    }
    if (count && !a->data)
        return tg_error_set(err, TG_ERR_ARG, "tg_npy_write: no data"), -1;
    char h[256];
    int n = snprintf(h, sizeof h, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr[a->dtype]);
    for (int d = 0; d < a->ndim; d++)
        n += snprintf(h + n, sizeof h - (size_t)n, a->ndim == 1 ? "%lld," : d ? ", %lld" : "%lld",
                      (long long)a->shape[d]);
    n += snprintf(h + n, sizeof h - (size_t)n, "), }");
    /* magic, version, length, header padded with spaces to a multiple of
     * 64 bytes, ending in a newline (numpy's layout) */
    size_t total = ((size_t)10 + (size_t)n + 1 + 63) / 64 * 64, hl = total - 10;
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)hl, (unsigned char)(hl >> 8)};
    FILE *fp = fopen(path, "wb");
    if (!fp) {
        tg_error_set(err, TG_ERR_IO, "%s: %s", path, strerror(errno));
        return -1;
    }
    int ok = fwrite(pre, 1, 10, fp) == 10 && fwrite(h, 1, (size_t)n, fp) == (size_t)n;
    for (size_t i = (size_t)n; ok && i + 1 < hl; i++)
        ok = fputc(' ', fp) != EOF;
    ok = ok && fputc('\n', fp) != EOF;
    /* the elements in C order through the strides */
    int64_t idx[TG_MAXDIM] = {0};
    size_t es = dsize[a->dtype];
    for (int64_t k = 0; ok && k < count; k++) {
        const char *p = a->data;
        for (int d = 0; d < a->ndim; d++)
            p += idx[d] * a->strides[d];
        if (a->dtype == TG_BOOL) {
            ok = fputc(*(const unsigned char *)p != 0, fp) != EOF;
        } else {
            ok = fwrite(p, 1, es, fp) == es;
        }
        for (int d = a->ndim - 1; d >= 0 && ++idx[d] == a->shape[d]; d--)
            idx[d] = 0;
    }
    int e = errno;
    if (fclose(fp) != 0 && ok)
        ok = 0, e = errno;
    if (!ok) {
        tg_error_set(err, TG_ERR_IO, "%s: %s", path, strerror(e ? e : EIO));
        return -1;
    }
    return 0;
}
