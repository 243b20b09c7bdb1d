/* reader.c - the S-expression reader: text to hash-consed terms.
 *
 * The parser keeps its own stacks instead of recursing, so nesting depth
 * and list length are limited by memory only.  Finished subterms wait on
 * a value stack allocated by the collector (it is the only reference to
 * them while their list is open); nesting is tracked by a frame stack of
 * plain data.  A list is built by one tg_list call when it closes, which
 * keeps long lists linear.
 *
 * Positions are not tracked byte by byte: a line/column is computed only
 * when needed (a term's start, an error), by counting newlines forward
 * from the last position computed, so the cost stays linear overall.
 *
 * On request (tgR_track_positions) the reader also remembers where each
 * datum of the current top-level form began, keyed by its term pointer, so
 * that later layers can point an error at a subterm.  Terms are
 * hash-consed and cannot carry a position themselves; a table from pointer
 * to byte offset, emptied at each form, does instead.  Offsets become
 * line/column only when asked, through an index of the newlines read so
 * far, because the starts of lists are known only when they close (out of
 * order), which the forward-only position cache above cannot serve.
 */
#include "reader.h"
#include "error.h"

#include <gc/gc.h>
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/stat.h>

/* ---- character classes -------------------------------------------- */

enum {
    C_TOK = 0,  /* part of a bare token (the default: most bytes are) */
    C_WS,
    C_OPEN,
    C_CLOSE,
    C_PREFIX,   /* ' ` , */
    C_DQUOTE,
    C_SEMI,
    C_NUL
};

static const unsigned char tgR_cls[256] = {
    [0] = C_NUL,
    [' '] = C_WS, ['\t'] = C_WS, ['\n'] = C_WS, ['\r'] = C_WS, ['\f'] = C_WS, ['\v'] = C_WS,
    ['('] = C_OPEN, ['['] = C_OPEN, [')'] = C_CLOSE, [']'] = C_CLOSE,
    ['\''] = C_PREFIX, ['`'] = C_PREFIX, [','] = C_PREFIX,
    ['"'] = C_DQUOTE, [';'] = C_SEMI,
};

int tgR_is_token_char(unsigned char c)
{
    return tgR_cls[c] == C_TOK;
}

static inline int tgR_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

/* ---- token classification ----------------------------------------- */

enum { K_SYM, K_INT, K_RAT, K_DBL, K_INF, K_NINF, K_NAN, K_VAR, K_DOT };

/* An optional exponent [eE][+-]?[0-9]+ running exactly to n. */
static int tgR_exp_tail(const unsigned char *s, size_t k, size_t n)
{
    if (k == n)
        return 1;
    if (s[k] != 'e' && s[k] != 'E')
        return 0;
    k++;
    if (k < n && (s[k] == '+' || s[k] == '-'))
        k++;
    size_t d = k;
    while (k < n && tgR_digit(s[k]))
        k++;
    return k > d && k == n;
}

/* What a bare token of n > 0 bytes means (see doc/syntax.md). */
static int tgR_classify(const unsigned char *s, size_t n)
{
    size_t i = (s[0] == '+' || s[0] == '-') ? 1 : 0, d = i;
    while (d < n && tgR_digit(s[d]))
        d++;
    if (d > i) {
        if (d == n)
            return K_INT;
        if (s[d] == '/') {
            size_t k = d + 1;
            while (k < n && tgR_digit(s[k]))
                k++;
            return k > d + 1 && k == n ? K_RAT : K_SYM;
        }
        if (s[d] == '.') {
            size_t k = d + 1;
            while (k < n && tgR_digit(s[k]))
                k++;
            return tgR_exp_tail(s, k, n) ? K_DBL : K_SYM;
        }
        return tgR_exp_tail(s, d, n) ? K_DBL : K_SYM;
    }
    if (d < n && s[d] == '.') {
        size_t k = d + 1;
        while (k < n && tgR_digit(s[k]))
            k++;
        if (k > d + 1)
            return tgR_exp_tail(s, k, n) ? K_DBL : K_SYM;
        if (n == 1)
            return K_DOT;
    }
    const unsigned char *w = s + i;
    if (n - i == 3) {
        if (memcmp(w, "inf", 3) == 0)
            return s[0] == '-' ? K_NINF : K_INF;
        if (memcmp(w, "nan", 3) == 0)
            return K_NAN;
    }
    if (s[0] == '?' && n > 1)
        return K_VAR;
    return K_SYM;
}

/* A canonical decimal (0 or [1-9][0-9]*) of n bytes that fits uint64. */
static int tgR_var_number(const unsigned char *s, size_t n, uint64_t *id)
{
    if (n == 0 || n > 20 || (s[0] == '0' && n > 1))
        return 0;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (!tgR_digit(s[i]))
            return 0;
        unsigned dg = (unsigned)(s[i] - '0');
        if (v > (UINT64_MAX - dg) / 10)
            return 0;
        v = v * 10 + dg;
    }
    *id = v;
    return 1;
}

/* Split a bare variable name ("x.3" after the '?') into name and number:
 * the number is what follows the last '.', when it is canonical and the
 * name before it is not empty; otherwise the whole is the name, id 0. */
static size_t tgR_var_split(const unsigned char *name, size_t n, uint64_t *id)
{
    const unsigned char *dot = NULL;
    for (size_t i = n; i-- > 1;)
        if (name[i] == '.') {
            dot = name + i;
            break;
        }
    if (dot && tgR_var_number(dot + 1, (size_t)(name + n - dot - 1), id))
        return (size_t)(dot - name);
    *id = 0;
    return n;
}

static int tgR_all_token_chars(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (tgR_cls[s[i]] != C_TOK)
            return 0;
    return 1;
}

int tgR_symbol_is_plain(const char *name, size_t len)
{
    const unsigned char *s = (const unsigned char *)name;
    if (len == 0 || !tgR_all_token_chars(s, len) || s[0] == '|')
        return 0;
    if (s[0] == '#' && len > 1 && s[1] == '|')
        return 0;
    return tgR_classify(s, len) == K_SYM;
}

int tgR_var_is_plain(const char *name, size_t len, uint64_t id)
{
    const unsigned char *s = (const unsigned char *)name;
    if (len == 0 || !tgR_all_token_chars(s, len) || s[0] == '|')
        return 0;
    if (id != 0)
        return 1;   /* ?name.id splits at the last '.', the one added */
    uint64_t dummy;
    return tgR_var_split(s, len, &dummy) == len;
}

/* ---- the reader ---------------------------------------------------- */

enum { F_LIST, F_PREFIX, F_DCOMMENT };

typedef struct tgR_frame {
    size_t off;             /* where the list, prefix or #; began */
    size_t base;            /* lists: index in vals of the first element */
    unsigned char kind;
    unsigned char what;     /* lists: the opening bracket; prefixes: P_* */
    unsigned char dot;      /* lists: 0, 1 after '.', 2 after the tail */
} tgR_frame;

enum { P_QUOTE, P_QUASI, P_UNQUOTE, P_SPLICE, P_COUNT };

static const char *const tgR_prefix_name[P_COUNT] = {
    "quote", "quasiquote", "unquote", "unquote-splicing"
};
static const char *const tgR_prefix_text[P_COUNT] = { "'", "`", ",", ",@" };

struct tg_reader {
    tg_ctx *ctx;
    tg_term **vals;         /* collector memory, so that it is scanned */
    size_t nvals, capvals;
    tg_term *psym[P_COUNT]; /* quote, quasiquote, ...; made on first use */
    tgR_frame *frames;      /* malloc: no term pointers inside */
    size_t nframes, capframes, nlists;
    const unsigned char *text;
    char *owned;            /* the copy of the text, when we made one */
    size_t len;
    size_t off;             /* next byte to read */
    size_t start;           /* where the term being read began */
    int last_line, last_col;
    size_t pos_off, pos_lstart, pos_line;   /* position cache */
    size_t line0;           /* lines before the text (tg_reader_first_line) */
    char *scratch;          /* malloc: decoded strings, number text */
    size_t capscratch;
    const char *file;       /* "<string>" or filecopy */
    char *filecopy;         /* malloc */
    size_t ndcom;           /* #; frames open: what they skip is no subterm */
    /* Subterm positions, only while track is set.  The table is malloc'd,
     * so it keeps no term alive: every key is a subterm of the form just
     * returned, which the caller holds while it asks. */
    int track;
    int pfull;              /* the table could not grow: no more this form */
    uintptr_t *pkeys;       /* open addressing on the term pointer; 0 = empty */
    size_t *poffs;          /* per slot: byte offset of the first occurrence */
    size_t pcap, pused;
    size_t *nls;            /* offsets of the newlines before nl_upto, in order */
    size_t nnls, capnls, nl_upto;
};

static void tgR_linecol(tg_reader *r, size_t off, int *line, int *col)
{
    if (off < r->pos_off) {
        r->pos_off = 0;
        r->pos_lstart = 0;
        r->pos_line = 1;
    }
    const unsigned char *s = r->text + r->pos_off, *e = r->text + off;
    size_t ln = r->pos_line, lstart = r->pos_lstart;
    while (s < e && (s = memchr(s, '\n', (size_t)(e - s))) != NULL) {
        ln++;
        s++;
        lstart = (size_t)(s - r->text);
    }
    r->pos_off = off;
    r->pos_line = ln;
    r->pos_lstart = lstart;
    size_t c = off - lstart + 1;
    ln += r->line0;
    *line = ln > INT_MAX ? INT_MAX : (int)ln;
    *col = c > INT_MAX ? INT_MAX : (int)c;
}

/* ---- subterm positions ---------------------------------------------- */

static size_t tgR_phome(uintptr_t k, size_t cap)
{
    /* nodes are 16-byte aligned and immediates odd: mix before taking
     * the high bits of a Fibonacci product */
    uint64_t h = ((uint64_t)k ^ ((uint64_t)k >> 29)) * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 32) & (cap - 1);
}

/* Forget the positions of the previous form.  Clearing costs the size of
 * the table, so a table far larger than what the last form used (after a
 * huge form) is dropped instead: a run of small forms after a huge one
 * stays linear, and the memory goes back. */
static void tgR_track_reset(tg_reader *r)
{
    r->pfull = 0;
    if (!r->pused)
        return;
    if (r->pcap > 8 * r->pused) {
        free(r->pkeys);
        free(r->poffs);
        r->pkeys = NULL;
        r->poffs = NULL;
        r->pcap = 0;
    } else {
        memset(r->pkeys, 0, r->pcap * sizeof *r->pkeys);
    }
    r->pused = 0;
}

static int tgR_track_grow(tg_reader *r)
{
    size_t cap = r->pcap ? 2 * r->pcap : 64;
    if (cap > SIZE_MAX / sizeof(size_t))
        return -1;
    uintptr_t *keys = calloc(cap, sizeof *keys);
    size_t *offs = malloc(cap * sizeof *offs);
    if (!keys || !offs) {
        free(keys);
        free(offs);
        return -1;
    }
    for (size_t i = 0; i < r->pcap; i++) {
        uintptr_t k = r->pkeys[i];
        if (!k)
            continue;
        size_t j = tgR_phome(k, cap);
        while (keys[j])
            j = (j + 1) & (cap - 1);
        keys[j] = k;
        offs[j] = r->poffs[i];
    }
    free(r->pkeys);
    free(r->poffs);
    r->pkeys = keys;
    r->poffs = offs;
    r->pcap = cap;
    return 0;
}

/* Datum t of the current form began at off.  Equal terms are one pointer,
 * and an earlier occurrence of a term always closes before a later one
 * opens (a term cannot contain itself), so keeping the first insertion
 * keeps the first occurrence in the text.  Out of memory, recording stops
 * for this form: a missing position only makes the caller fall back to
 * the form's, which beats failing the read. */
static void tgR_note(tg_reader *r, const tg_term *t, size_t off)
{
    if (r->pfull)
        return;
    if (2 * (r->pused + 1) > r->pcap && tgR_track_grow(r) < 0) {
        r->pfull = 1;
        return;
    }
    uintptr_t k = (uintptr_t)t;
    size_t i = tgR_phome(k, r->pcap);
    while (r->pkeys[i]) {
        if (r->pkeys[i] == k)
            return;
        i = (i + 1) & (r->pcap - 1);
    }
    r->pkeys[i] = k;
    r->poffs[i] = off;
    r->pused++;
}

/* Index the newlines up to off (forms end in increasing order, so each
 * byte is scanned once).  Out of memory, nl_upto stops at the newline
 * that could not be added, and positions after it are not reported. */
static void tgR_index_lines(tg_reader *r, size_t off)
{
    const unsigned char *s = r->text + r->nl_upto, *e = r->text + off;
    while (s < e && (s = memchr(s, '\n', (size_t)(e - s))) != NULL) {
        if (r->nnls == r->capnls) {
            size_t nc = r->capnls ? 2 * r->capnls : 256;
            size_t *nn = nc <= SIZE_MAX / sizeof *nn ? realloc(r->nls, nc * sizeof *nn) : NULL;
            if (!nn) {
                r->nl_upto = (size_t)(s - r->text);
                return;
            }
            r->nls = nn;
            r->capnls = nc;
        }
        r->nls[r->nnls++] = (size_t)(s - r->text);
        s++;
    }
    if (off > r->nl_upto)
        r->nl_upto = off;
}

static void tgR_track_free(tg_reader *r)
{
    free(r->pkeys);
    free(r->poffs);
    free(r->nls);
    r->pkeys = NULL;
    r->poffs = NULL;
    r->nls = NULL;
    r->pcap = r->pused = 0;
    r->nnls = r->capnls = r->nl_upto = 0;
    r->pfull = 0;
}

void tgR_track_positions(tg_reader *r, int on)
{
    if (!r)
        return;
    if (!on)
        tgR_track_free(r);
    r->track = on != 0;
}

void tg_reader_track_positions(tg_reader *r, int on)
{
    if (r)
        tgR_track_positions(r, on);
}

void tg_reader_first_line(tg_reader *r, int line)
{
    if (r)
        r->line0 = line > 1 ? (size_t)line - 1 : 0;
}

int tgR_pos(const tg_reader *r, const tg_term *sub, int *line, int *col)
{
    if (!r || !r->track || !r->pused || !sub)
        return -1;
    uintptr_t k = (uintptr_t)sub;
    size_t i = tgR_phome(k, r->pcap);
    while (r->pkeys[i] != k) {
        if (!r->pkeys[i])
            return -1;
        i = (i + 1) & (r->pcap - 1);
    }
    size_t off = r->poffs[i];
    if (off > r->nl_upto)
        return -1;
    /* the newlines before off: their count is the line, the last one
     * starts it */
    size_t lo = 0, hi = r->nnls;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->nls[mid] < off)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t ln = r->line0 + lo + 1, c = off - (lo ? r->nls[lo - 1] + 1 : 0) + 1;
    if (line)
        *line = ln > INT_MAX ? INT_MAX : (int)ln;
    if (col)
        *col = c > INT_MAX ? INT_MAX : (int)c;
    return 0;
}

const char *tgR_file(const tg_reader *r)
{
    return r ? r->file : NULL;
}

static void tgR_clear(tg_reader *r)
{
    /* Drop stale term pointers so the collector can reclaim them. */
    if (r->nvals)
        memset(r->vals, 0, r->nvals * sizeof *r->vals);
    r->nvals = 0;
    r->nframes = 0;
    r->nlists = 0;
    r->ndcom = 0;
    /* a form that failed has no subterms to point at */
    tgR_track_reset(r);
}

/* Skip a "..." or |...| body from p (after the opening delimiter); returns
 * the byte after the closing one, or e. */
static const unsigned char *tgR_skip_quoted(const unsigned char *p, const unsigned char *e,
                                            unsigned char close)
{
    while (p < e) {
        if (*p == close)
            return p + 1;
        p += (*p == '\\') ? 2 : 1;
    }
    return e;
}

/* Skip a block comment whose "#|" is at p; sets *closed. */
static const unsigned char *tgR_skip_block(const unsigned char *p, const unsigned char *e,
                                           const unsigned char **nul, int *closed)
{
    size_t depth = 1;
    p += 2;
    *nul = NULL;
    while (p < e) {
        unsigned char c = *p;
        if (c == '|' && p + 1 < e && p[1] == '#') {
            p += 2;
            if (--depth == 0) {
                *closed = 1;
                return p;
            }
        } else if (c == '#' && p + 1 < e && p[1] == '|') {
            p += 2;
            depth++;
        } else {
            if (c == 0 && !*nul)
                *nul = p;
            p++;
        }
    }
    *closed = 0;
    return e;
}

/* After an error: skip from resume to where `depth` open lists have been
 * closed (or to the end), and forget the partial form. */
static void tgR_resync(tg_reader *r, size_t resume, size_t depth)
{
    const unsigned char *p = r->text + resume, *e = r->text + r->len;
    while (depth > 0 && p < e) {
        switch (tgR_cls[*p]) {
        case C_OPEN:
            depth++;
            p++;
            break;
        case C_CLOSE:
            depth--;
            p++;
            break;
        case C_SEMI: {
            const unsigned char *q = memchr(p, '\n', (size_t)(e - p));
            p = q ? q : e;
            break;
        }
        case C_DQUOTE:
            p = tgR_skip_quoted(p + 1, e, '"');
            break;
        case C_TOK:
            if (*p == '#' && p + 1 < e && p[1] == '|') {
                const unsigned char *nul;
                int closed;
                p = tgR_skip_block(p, e, &nul, &closed);
            } else if (*p == '#' && p + 1 < e && p[1] == ';') {
                p += 2;
            } else if (*p == '|') {
                p = tgR_skip_quoted(p + 1, e, '|');
            } else if (*p == '?' && p + 1 < e && p[1] == '|') {
                p = tgR_skip_quoted(p + 2, e, '|');
            } else {
                while (p < e && tgR_cls[*p] == C_TOK)
                    p++;
            }
            break;
        default:
            p++;
            break;
        }
    }
    r->off = (size_t)(p - r->text);
    tgR_clear(r);
}

/* Report an error at offset `at` and resynchronise: the rest of the
 * top-level form is skipped from `resume`; `closes` is 1 when the byte at
 * the error closed a list (it counts as closing one).  Returns -1. */
#if defined(__GNUC__)
__attribute__((format(printf, 7, 8)))
#endif
static int tgR_fail(tg_reader *r, tg_error *err, tg_errcode code, size_t at, size_t resume,
                    int closes, const char *fmt, ...)
{
    if (err) {
        char msg[400];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        int line, col;
        tgR_linecol(r, at, &line, &col);
        tgE_set(err, code, r->file, line, col, "%s", msg);
    }
    size_t depth = r->nlists;
    if (closes && depth)
        depth--;
    /* Out of memory, retrying at the same place could fail forever: give
     * up on the rest of the input instead. */
    if (code == TG_ERR_NOMEM)
        resume = r->len;
    tgR_resync(r, resume, depth);
    return -1;
}

static int tgR_push(tg_reader *r, tg_term *v)
{
    if (r->nvals == r->capvals) {
        size_t nc = r->capvals ? r->capvals * 2 : 256;
        if (nc > SIZE_MAX / sizeof *r->vals)
            return -1;
        tg_term **nv = GC_REALLOC(r->vals, nc * sizeof *nv);
        if (!nv)
            return -1;
        r->vals = nv;
        r->capvals = nc;
    }
    r->vals[r->nvals++] = v;
    return 0;
}

static tgR_frame *tgR_push_frame(tg_reader *r, unsigned char kind, unsigned char what,
                                 size_t off)
{
    if (r->nframes == r->capframes) {
        size_t nc = r->capframes ? r->capframes * 2 : 64;
        if (nc > SIZE_MAX / sizeof *r->frames)
            return NULL;
        tgR_frame *nf = realloc(r->frames, nc * sizeof *nf);
        if (!nf)
            return NULL;
        r->frames = nf;
        r->capframes = nc;
    }
    tgR_frame *f = &r->frames[r->nframes++];
    f->off = off;
    f->base = r->nvals;
    f->kind = kind;
    f->what = what;
    f->dot = 0;
    if (kind == F_LIST)
        r->nlists++;
    return f;
}

static char *tgR_scratch(tg_reader *r, size_t n)
{
    if (n > r->capscratch) {
        size_t nc = r->capscratch ? r->capscratch : 256;
        while (nc < n) {
            if (nc > SIZE_MAX / 2)
                return NULL;
            nc *= 2;
        }
        char *ns = realloc(r->scratch, nc);
        if (!ns)
            return NULL;
        r->scratch = ns;
        r->capscratch = nc;
    }
    return r->scratch;
}

/* ---- atoms ---------------------------------------------------------- */

enum { Q_OK, Q_UNTERMINATED, Q_NUL, Q_BADESC, Q_BADHEX, Q_NOMEM };

static int tgR_hexval(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Decode a "..." string or |...| name whose body starts at p.  On Q_OK the
 * bytes are in *out and *n (into the text or the scratch buffer); in every
 * case *end is where reading goes on, and on an error *at is its place
 * and *bad the offending byte of a bad escape. */
static int tgR_quoted(tg_reader *r, const unsigned char *p, unsigned char close,
                      const char **out, size_t *n, const unsigned char **end,
                      const unsigned char **at, unsigned char *bad)
{
    const unsigned char *e = r->text + r->len, *q = p;
    while (q < e && *q != close && *q != '\\' && *q != 0)
        q++;
    if (q < e && *q == close) {
        *out = (const char *)p;
        *n = (size_t)(q - p);
        *end = q + 1;
        return Q_OK;
    }
    size_t k = (size_t)(q - p);
    char *buf = NULL;
    int status = Q_OK;
    if (q < e) {
        buf = tgR_scratch(r, k + 64);
        if (!buf) {
            *end = tgR_skip_quoted(q, e, close);
            *at = p;
            return Q_NOMEM;
        }
        memcpy(buf, p, k);
    }
    while (q < e && *q != close) {
        unsigned char c = *q;
        if (k >= r->capscratch) {
            if (!tgR_scratch(r, k + 1)) {
                *end = tgR_skip_quoted(q, e, close);
                *at = p;
                return Q_NOMEM;
            }
            buf = r->scratch;
        }
        if (c == 0) {
            if (status == Q_OK) {
                status = Q_NUL;
                *at = q;
            }
            q++;
            continue;
        }
        if (c != '\\') {
            buf[k++] = (char)c;
            q++;
            continue;
        }
        if (q + 1 >= e) {
            q = e;
            break;
        }
        unsigned char x = q[1], v;
        switch (x) {
        case 'n': v = '\n'; break;
        case 't': v = '\t'; break;
        case 'r': v = '\r'; break;
        case '0': v = 0; break;
        case 'a': v = '\a'; break;
        case 'b': v = '\b'; break;
        case 'f': v = '\f'; break;
        case 'v': v = '\v'; break;
        case '\\': v = '\\'; break;
        case '"': v = '"'; break;
        case '|':
            if (close == '|') {
                v = '|';
                break;
            }
            /* fall through */
        default:
            if (x == 'x') {
                int h1 = q + 2 < e ? tgR_hexval(q[2]) : -1;
                int h2 = q + 3 < e ? tgR_hexval(q[3]) : -1;
                if (h1 >= 0 && h2 >= 0) {
                    buf[k++] = (char)(h1 * 16 + h2);
                    q += 4;
                    continue;
                }
                if (status == Q_OK) {
                    status = Q_BADHEX;
                    *at = q;
                }
                q += 2;
                continue;
            }
            if (status == Q_OK) {
                status = Q_BADESC;
                *at = q;
                *bad = x;
            }
            q += 2;
            continue;
        }
        buf[k++] = (char)v;
        q += 2;
    }
    if (q >= e) {
        *end = e;
        *at = p - 1;
        return Q_UNTERMINATED;
    }
    *end = q + 1;
    *out = buf;
    *n = k;
    return status;
}

static int tgR_quoted_fail(tg_reader *r, tg_error *err, int status, const unsigned char *open,
                           const unsigned char *end, const unsigned char *at,
                           unsigned char bad, const char *what)
{
    size_t o = (size_t)(at - r->text), resume = (size_t)(end - r->text);
    switch (status) {
    case Q_UNTERMINATED:
        return tgR_fail(r, err, TG_ERR_SYNTAX, (size_t)(open - r->text), resume, 0,
                        "unterminated %s", what);
    case Q_NUL:
        return tgR_fail(r, err, TG_ERR_SYNTAX, o, resume, 0, "NUL byte in input");
    case Q_BADHEX:
        return tgR_fail(r, err, TG_ERR_SYNTAX, o, resume, 0,
                        "bad escape \\x in %s (two hex digits expected)", what);
    case Q_BADESC:
        if (bad > 0x20 && bad < 0x7f)
            return tgR_fail(r, err, TG_ERR_SYNTAX, o, resume, 0,
                            "unknown escape \\%c in %s", bad, what);
        return tgR_fail(r, err, TG_ERR_SYNTAX, o, resume, 0,
                        "unknown escape: '\\' followed by byte 0x%02X in %s", bad, what);
    default:
        return tgR_fail(r, err, TG_ERR_NOMEM, o, resume, 0, "out of memory");
    }
}

/* strtod follows the locale's decimal point (a program may have called
 * setlocale), so the '.' of the syntax is swapped for it; buf has room for
 * 16 more bytes. */
static double tgR_strtod(char *buf)
{
    const char *dp = localeconv()->decimal_point;
    size_t dl = dp ? strlen(dp) : 0;
    if (dl && (dl > 1 || dp[0] != '.') && dl <= 16) {
        char *dot = strchr(buf, '.');
        if (dot) {
            memmove(dot + dl, dot + 1, strlen(dot + 1) + 1);
            memcpy(dot, dp, dl);
        }
    }
    return strtod(buf, NULL);
}

/* Turn a number token (kind from tgR_classify) into a term; NULL with
 * *zero set for a zero denominator, NULL alone when out of memory. */
static tg_term *tgR_number(tg_reader *r, int kind, const unsigned char *s, size_t n, int *zero)
{
    tg_ctx *ctx = r->ctx;
    *zero = 0;
    switch (kind) {
    case K_INF:
        return tg_double(ctx, INFINITY);
    case K_NINF:
        return tg_double(ctx, -INFINITY);
    case K_NAN:
        return tg_double(ctx, NAN);
    default:
        break;
    }
    int neg = s[0] == '-';
    const unsigned char *d = (s[0] == '+' || s[0] == '-') ? s + 1 : s;
    size_t nd = n - (size_t)(d - s);
    if (kind == K_INT && nd <= 19) {
        uint64_t v = 0;
        for (size_t i = 0; i < nd; i++)
            v = v * 10 + (uint64_t)(d[i] - '0');  /* 19 digits cannot wrap */
        if (v <= (uint64_t)INT64_MAX)
            return tg_int(ctx, neg ? -(int64_t)v : (int64_t)v);
        if (neg && v == (uint64_t)INT64_MAX + 1)
            return tg_int(ctx, INT64_MIN);
    }
    char *buf = tgR_scratch(r, n + 18);
    if (!buf)
        return NULL;
    size_t k = 0;
    if (neg)
        buf[k++] = '-';
    memcpy(buf + k, d, nd);
    buf[k + nd] = 0;
    tg_term *t;
    if (kind == K_INT) {
        mpz_t z;
        mpz_init(z);
        mpz_set_str(z, buf, 10);
        t = tg_int_mpz(ctx, z);
        mpz_clear(z);
    } else if (kind == K_RAT) {
        const char *slash = strchr(buf, '/');
        if (strspn(slash + 1, "0") == strlen(slash + 1)) {
            *zero = 1;
            return NULL;
        }
        mpq_t q;
        mpq_init(q);
        mpq_set_str(q, buf, 10);
        mpq_canonicalize(q);
        t = tg_rat_mpq(ctx, q, NULL);
        mpq_clear(q);
    } else {
        t = tg_double(ctx, tgR_strtod(buf));
    }
    return t;
}

/* ---- the parser ------------------------------------------------------ */

static tg_term *tgR_prefix_sym(tg_reader *r, unsigned what)
{
    if (!r->psym[what])
        r->psym[what] = tg_symbol_cstr(r->ctx, tgR_prefix_name[what]);
    return r->psym[what];
}

static const char *tgR_frame_text(const tgR_frame *f)
{
    return f->kind == F_DCOMMENT ? "#;" : tgR_prefix_text[f->what];
}

int tg_reader_next(tg_reader *r, tg_term **out, tg_error *err)
{
    if (!r) {
        tgE_set(err, TG_ERR_ARG, NULL, 0, 0, "no reader");
        return -1;
    }
    tg_ctx *ctx = r->ctx;
    const unsigned char *s = r->text, *e = s + r->len, *p = s + r->off;
    tg_term *v;
    size_t vstart = 0;      /* where v began, for the position table */
    if (r->track)
        tgR_track_reset(r);
    for (;;) {
        /* Whitespace and comments between data. */
        for (;;) {
            while (p < e && tgR_cls[*p] == C_WS)
                p++;
            if (p == e)
                break;
            if (*p == ';') {
                const unsigned char *q = memchr(p, '\n', (size_t)(e - p));
                if (!q)
                    q = e;
                const unsigned char *nul = memchr(p, 0, (size_t)(q - p));
                if (nul)
                    return tgR_fail(r, err, TG_ERR_SYNTAX, (size_t)(nul - s), (size_t)(q - s),
                                    0, "NUL byte in input");
                p = q;
                continue;
            }
            if (*p == '#' && p + 1 < e && p[1] == '|') {
                const unsigned char *nul;
                int closed;
                const unsigned char *q = tgR_skip_block(p, e, &nul, &closed);
                if (!closed)
                    return tgR_fail(r, err, TG_ERR_SYNTAX, (size_t)(p - s), r->len, 0,
                                    "unterminated block comment");
                if (nul)
                    return tgR_fail(r, err, TG_ERR_SYNTAX, (size_t)(nul - s), (size_t)(q - s),
                                    0, "NUL byte in input");
                p = q;
                continue;
            }
            break;
        }
        size_t at = (size_t)(p - s);
        if (p == e) {
            if (!r->nframes) {
                r->off = r->len;
                return 0;
            }
            tgR_frame *f = &r->frames[r->nframes - 1];
            if (f->kind != F_LIST)
                return tgR_fail(r, err, TG_ERR_SYNTAX, at, at, 0,
                                "datum expected after '%s'", tgR_frame_text(f));
            int ol, oc;
            tgR_linecol(r, f->off, &ol, &oc);
            return tgR_fail(r, err, TG_ERR_SYNTAX, at, at, 0,
                            "unterminated list (opened at %d:%d)", ol, oc);
        }
        if (!r->nframes)
            r->start = at;
        unsigned char c = *p, cls = tgR_cls[c];
        if (cls == C_CLOSE) {
            if (!r->nframes)
                return tgR_fail(r, err, TG_ERR_SYNTAX, at, at + 1, 0, "unexpected '%c'", c);
            tgR_frame *f = &r->frames[r->nframes - 1];
            if (f->kind != F_LIST)
                return tgR_fail(r, err, TG_ERR_SYNTAX, at, at + 1, 1,
                                "datum expected after '%s'", tgR_frame_text(f));
            if (f->what != (c == ')' ? '(' : '[')) {
                int ol, oc;
                tgR_linecol(r, f->off, &ol, &oc);
                return tgR_fail(r, err, TG_ERR_SYNTAX, at, at + 1, 1,
                                "mismatched '%c' (list opened with '%c' at %d:%d)", c, f->what,
                                ol, oc);
            }
            if (f->dot == 1)
                return tgR_fail(r, err, TG_ERR_SYNTAX, at, at + 1, 1,
                                "datum expected after '.'");
            size_t base = f->base, n = r->nvals - base;
            tg_term *tail = NULL;
            vstart = f->off;
            if (f->dot == 2)
                tail = r->vals[base + --n];
            if (r->nvals == base) {
                v = tg_nil();
            } else {
                v = tg_list(ctx, n, r->vals + base, tail);
                if (!v)
                    return tgR_fail(r, err, TG_ERR_NOMEM, at, at + 1, 1, "out of memory");
                memset(r->vals + base, 0, (r->nvals - base) * sizeof *r->vals);
                r->nvals = base;
            }
            r->nframes--;
            r->nlists--;
            p++;
            goto complete;
        }
        if (cls == C_NUL)
            return tgR_fail(r, err, TG_ERR_SYNTAX, at, at + 1, 0, "NUL byte in input");

        /* Everything below starts a datum, except '.' and '#;'. */
        const unsigned char *q = p;
        int quoted = 0;
        if (cls == C_TOK) {
            if (c == '#' && p + 1 < e && p[1] == ';') {
                if (!tgR_push_frame(r, F_DCOMMENT, 0, at))
                    return tgR_fail(r, err, TG_ERR_NOMEM, at, at, 0, "out of memory");
                r->ndcom++;
                p += 2;
                continue;
            }
            quoted = c == '|' || (c == '?' && p + 1 < e && p[1] == '|');
            if (!quoted) {
                while (q < e && tgR_cls[*q] == C_TOK)
                    q++;
                if (q - p == 1 && c == '.') {
                    size_t after = at + 1;
                    if (!r->nframes)
                        return tgR_fail(r, err, TG_ERR_SYNTAX, at, after, 0,
                                        "'.' outside a list");
                    tgR_frame *f = &r->frames[r->nframes - 1];
                    if (f->kind != F_LIST)
                        return tgR_fail(r, err, TG_ERR_SYNTAX, at, after, 0,
                                        "datum expected after '%s'", tgR_frame_text(f));
                    if (f->dot == 1)
                        return tgR_fail(r, err, TG_ERR_SYNTAX, at, after, 0,
                                        "datum expected after '.'");
                    if (f->dot == 2)
                        return tgR_fail(r, err, TG_ERR_SYNTAX, at, after, 0,
                                        "more than one datum after '.'");
                    if (r->nvals == f->base)
                        return tgR_fail(r, err, TG_ERR_SYNTAX, at, after, 0,
                                        "datum expected before '.'");
                    f->dot = 1;
                    p = q;
                    continue;
                }
            }
        }
        if (r->nframes) {
            tgR_frame *f = &r->frames[r->nframes - 1];
            if (f->kind == F_LIST && f->dot == 2)
                return tgR_fail(r, err, TG_ERR_SYNTAX, at, at, 0,
                                "more than one datum after '.'");
        }
        switch (cls) {
        case C_OPEN:
            if (!tgR_push_frame(r, F_LIST, c, at))
                return tgR_fail(r, err, TG_ERR_NOMEM, at, at, 0, "out of memory");
            p++;
            continue;
        case C_PREFIX: {
            unsigned what = c == '\'' ? P_QUOTE : c == '`' ? P_QUASI : P_UNQUOTE;
            p++;
            if (c == ',' && p < e && *p == '@') {
                what = P_SPLICE;
                p++;
            }
            if (!tgR_prefix_sym(r, what) || !tgR_push_frame(r, F_PREFIX, (unsigned char)what, at))
                return tgR_fail(r, err, TG_ERR_NOMEM, at, at, 0, "out of memory");
            continue;
        }
        case C_DQUOTE: {
            const char *bytes = NULL;
            size_t n = 0;
            const unsigned char *end, *bad_at = NULL;
            unsigned char bad = 0;
            int st = tgR_quoted(r, p + 1, '"', &bytes, &n, &end, &bad_at, &bad);
            if (st != Q_OK)
                return tgR_quoted_fail(r, err, st, p, end, bad_at, bad, "string");
            v = tg_string(ctx, bytes, n);
            vstart = at;
            if (!v)
                return tgR_fail(r, err, TG_ERR_NOMEM, at, (size_t)(end - s), 0,
                                "out of memory");
            p = end;
            goto complete;
        }
        default:
            break;
        }

        /* A token. */
        if (quoted) {
            int isvar = c == '?';
            const unsigned char *open = p + isvar;
            const char *bytes = NULL;
            size_t n = 0;
            const unsigned char *end, *bad_at = NULL;
            unsigned char bad = 0;
            int st = tgR_quoted(r, open + 1, '|', &bytes, &n, &end, &bad_at, &bad);
            if (st != Q_OK)
                return tgR_quoted_fail(r, err, st, p, end, bad_at, bad,
                                       isvar ? "quoted variable name" : "quoted symbol");
            uint64_t id = 0;
            if (isvar && end < e && *end == '.') {
                const unsigned char *t = end + 1;
                while (t < e && tgR_cls[*t] == C_TOK)
                    t++;
                if (!tgR_var_number(end + 1, (size_t)(t - end - 1), &id))
                    return tgR_fail(r, err, TG_ERR_SYNTAX, (size_t)(end - s), (size_t)(t - s), 0,
                                    "bad variable number after ?|...| (0 or [1-9][0-9]* "
                                    "expected)");
                end = t;
            }
            v = isvar ? tg_var(ctx, bytes, n, id) : tg_symbol(ctx, bytes, n);
            vstart = at;
            if (!v)
                return tgR_fail(r, err, TG_ERR_NOMEM, at, (size_t)(end - s), 0,
                                "out of memory");
            p = end;
            goto complete;
        }
        {
            size_t n = (size_t)(q - p);
            int kind = tgR_classify(p, n);
            vstart = at;
            if (kind == K_SYM) {
                v = tg_symbol(ctx, (const char *)p, n);
            } else if (kind == K_VAR) {
                uint64_t id;
                size_t nl = tgR_var_split(p + 1, n - 1, &id);
                v = tg_var(ctx, (const char *)p + 1, nl, id);
            } else {
                int zero;
                v = tgR_number(r, kind, p, n, &zero);
                if (zero)
                    return tgR_fail(r, err, TG_ERR_SYNTAX, at, (size_t)(q - s), 0,
                                    "zero denominator in rational");
            }
            if (!v)
                return tgR_fail(r, err, TG_ERR_NOMEM, at, (size_t)(q - s), 0,
                                "out of memory");
            p = q;
        }

    complete:
        /* v is finished: hand it to the enclosing frames. */
        for (;;) {
            if (r->track && !r->ndcom)
                tgR_note(r, v, vstart);
            if (!r->nframes) {
                r->off = (size_t)(p - s);
                if (r->track)
                    tgR_index_lines(r, r->off);
                tgR_linecol(r, r->start, &r->last_line, &r->last_col);
                if (out)
                    *out = v;
                return 1;
            }
            tgR_frame *f = &r->frames[r->nframes - 1];
            if (f->kind == F_PREFIX) {
                tg_term *two[2] = { r->psym[f->what], v };
                v = tg_list(ctx, 2, two, NULL);
                if (!v)
                    return tgR_fail(r, err, TG_ERR_NOMEM, (size_t)(p - s), (size_t)(p - s), 0,
                                    "out of memory");
                vstart = f->off;
                r->nframes--;
                continue;
            }
            if (f->kind == F_DCOMMENT) {
                r->nframes--;
                r->ndcom--;
                break;
            }
            if (f->dot == 1)
                f->dot = 2;
            if (tgR_push(r, v) != 0)
                return tgR_fail(r, err, TG_ERR_NOMEM, (size_t)(p - s), (size_t)(p - s), 0,
                                "out of memory");
            break;
        }
    }
}

/* ---- construction ---------------------------------------------------- */

static int tgR_init(tg_reader *r, tg_ctx *ctx, const char *text, size_t len, const char *file,
                    int copy, tg_error *err)
{
    memset(r, 0, sizeof *r);
    if (!ctx || (!text && len)) {
        tgE_set(err, TG_ERR_ARG, NULL, 0, 0, ctx ? "NULL text" : "NULL context");
        return -1;
    }
    r->ctx = ctx;
    r->file = "<string>";
    /* A UTF-8 byte-order mark (editors on some systems write one) is no
     * part of the text: skipped, so that columns count from after it. */
    if (text && len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3))
        text += 3, len -= 3;
    if (file) {
        size_t fl = strlen(file);
        r->filecopy = malloc(fl + 1);
        if (!r->filecopy) {
            tgE_set(err, TG_ERR_NOMEM, file, 0, 0, "out of memory");
            return -1;
        }
        memcpy(r->filecopy, file, fl + 1);
        r->file = r->filecopy;
    }
    if (copy) {
        r->owned = malloc(len ? len : 1);
        if (!r->owned) {
            tgE_set(err, TG_ERR_NOMEM, r->file, 0, 0, "out of memory");
            return -1;
        }
        if (len)
            memcpy(r->owned, text, len);
        text = r->owned;
    }
    r->text = (const unsigned char *)(text ? text : "");
    r->len = len;
    r->pos_line = 1;
    return 0;
}

static void tgR_release(tg_reader *r)
{
    tgR_track_free(r);
    free(r->owned);
    free(r->frames);
    free(r->scratch);
    free(r->filecopy);
    if (r->vals)
        GC_FREE(r->vals);
    r->owned = NULL;
    r->frames = NULL;
    r->scratch = NULL;
    r->filecopy = NULL;
    r->vals = NULL;
}

tg_reader *tg_reader_new(tg_ctx *ctx, const char *text, size_t len, const char *file,
                         tg_error *err)
{
    /* Uncollectable: scanned (it points at the value stack), freed by us. */
    tg_reader *r = GC_MALLOC_UNCOLLECTABLE(sizeof *r);
    if (!r) {
        tgE_set(err, TG_ERR_NOMEM, file ? file : "<string>", 0, 0, "out of memory");
        return NULL;
    }
    if (tgR_init(r, ctx, text, len, file, 1, err) != 0) {
        tgR_release(r);
        GC_FREE(r);
        return NULL;
    }
    return r;
}

void tg_reader_last_pos(const tg_reader *r, int *line, int *column)
{
    if (line)
        *line = r ? r->last_line : 0;
    if (column)
        *column = r ? r->last_col : 0;
}

void tg_reader_free(tg_reader *r)
{
    if (!r)
        return;
    tgR_release(r);
    GC_FREE(r);
}

tg_term *tg_read(tg_ctx *ctx, const char *text, size_t len, tg_error *err)
{
    /* On the C stack, which the collector scans; the text is only
     * borrowed since the reader does not outlive this call. */
    tg_reader r;
    if (tgR_init(&r, ctx, text, len, NULL, 0, err) != 0)
        return NULL;
    tg_term *t = NULL, *more;
    int st = tg_reader_next(&r, &t, err);
    if (st == 0) {
        int line, col;
        tgR_linecol(&r, r.len, &line, &col);
        tgE_set(err, TG_ERR_SYNTAX, r.file, line, col, "no term in input");
        t = NULL;
    } else if (st > 0) {
        st = tg_reader_next(&r, &more, err);
        if (st != 0) {
            if (st > 0)
                tgE_set(err, TG_ERR_SYNTAX, r.file, r.last_line, r.last_col,
                        "more than one term in input");
            t = NULL;
        }
    }
    tgR_release(&r);
    return t;
}

tg_term *tg_read_cstr(tg_ctx *ctx, const char *text, tg_error *err)
{
    if (!text) {
        tgE_set(err, TG_ERR_ARG, NULL, 0, 0, "NULL text");
        return NULL;
    }
    return tg_read(ctx, text, strlen(text), err);
}

char *tg_slurp_file(const char *path, size_t *len, tg_error *err)
{
    if (!path) {
        tgE_set(err, TG_ERR_ARG, NULL, 0, 0, "NULL path");
        return NULL;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        tgE_set(err, TG_ERR_IO, path, 0, 0, "cannot open: %s", strerror(errno));
        return NULL;
    }
    size_t cap = 0, n = 0;
    char *buf = NULL;
    /* A size hint for regular files; reading to EOF is what counts. */
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
        (uintmax_t)st.st_size < SIZE_MAX)
        cap = (size_t)st.st_size + 1;
    if (cap < 4096)
        cap = 4096;
    for (;;) {
        if (n + 1 >= cap || !buf) {
            size_t nc = buf ? cap * 2 : cap;
            char *nb = (nc > cap || !buf) ? realloc(buf, nc) : NULL;
            if (!nb) {
                free(buf);
                fclose(f);
                tgE_set(err, TG_ERR_NOMEM, path, 0, 0, "out of memory");
                return NULL;
            }
            buf = nb;
            cap = nc;
        }
        size_t got = fread(buf + n, 1, cap - 1 - n, f);
        n += got;
        if (got == 0) {
            if (ferror(f)) {
                int e = errno;
                free(buf);
                fclose(f);
                tgE_set(err, TG_ERR_IO, path, 0, 0, "cannot read: %s",
                        strerror(e ? e : EIO));
                return NULL;
            }
            break;
        }
    }
    fclose(f);
    buf[n] = 0;
    if (len)
        *len = n;
    return buf;
}
