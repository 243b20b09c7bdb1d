/* rec_convert.c - read a REC benchmark in the neutral line format and
 * write it as .rules text: (op name (arity n)) for every constructor and
 * operator, (rule rK lhs => rhs (when cond...)) for every rule, in file
 * order.  Every term is checked on the way (operators and arities,
 * variables), so that a mistake in a benchmark file is reported here, by
 * line, rather than as a wrong normal form in the engine. */
#include "rec_convert.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- growable text -------------------------------------------------- */

typedef struct buf {
    char *s;
    size_t len, cap;
    int oom;
} buf;

static void buf_put(buf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *p = realloc(b->s, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->s = p;
        b->cap = cap;
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

static void buf_puts(buf *b, const char *s) { buf_put(b, s, strlen(s)); }

static void buf_printf(buf *b, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    buf_put(b, tmp, n < 0 ? 0 : (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* A REC name as a .rules symbol: the reader takes ' for quote, so the
 * neutral format's convention (' written _prime) is applied here too. */
static void buf_name(buf *b, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\'')
            buf_puts(b, "_prime");
        else
            buf_put(b, s + i, 1);
    }
}

/* ---- names: operators, declared variables, variables of a lhs ---------- */

typedef struct sym {
    char *name;
    size_t len;
    int arity;          /* operators: number of arguments */
    int ctor;           /* operators: a constructor (REC "CONS") */
    unsigned stamp;     /* variables: rule that last bound it (lhs set) */
} sym;

typedef struct symtab {
    sym *v;
    size_t n, cap;      /* cap: power of two, or 0 */
} symtab;

static uint64_t name_hash(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

static sym *tab_slot(const symtab *t, const char *s, size_t n)
{
    size_t mask = t->cap - 1, i = (size_t)name_hash(s, n) & mask;
    while (t->v[i].name && !(t->v[i].len == n && memcmp(t->v[i].name, s, n) == 0))
        i = (i + 1) & mask;
    return &t->v[i];
}

static sym *tab_find(const symtab *t, const char *s, size_t n)
{
    if (!t->cap)
        return NULL;
    sym *e = tab_slot(t, s, n);
    return e->name ? e : NULL;
}

static int tab_grow(symtab *t)
{
    symtab g = {calloc(t->cap ? t->cap * 2 : 64, sizeof(sym)), t->n,
                t->cap ? t->cap * 2 : 64};
    if (!g.v)
        return -1;
    for (size_t i = 0; i < t->cap; i++)
        if (t->v[i].name)
            *tab_slot(&g, t->v[i].name, t->v[i].len) = t->v[i];
    free(t->v);
    *t = g;
    return 0;
}

/* The entry for a new name (NULL when out of memory or already there). */
static sym *tab_add(symtab *t, const char *s, size_t n)
{
    if ((t->n + 1) * 2 > t->cap && tab_grow(t) < 0)
        return NULL;
    sym *e = tab_slot(t, s, n);
    if (e->name || !(e->name = malloc(n + 1)))
        return NULL;
    memcpy(e->name, s, n);
    e->name[n] = '\0';
    e->len = n;
    t->n++;
    return e;
}

static void tab_free(symtab *t)
{
    for (size_t i = 0; i < t->cap; i++)
        free(t->v[i].name);
    free(t->v);
}

/* ---- the conversion state ----------------------------------------------- */

typedef struct conv {
    const char *file;
    int line;
    char *msg;
    size_t msgsize;
    symtab ops, vars;
    unsigned rule_stamp;    /* current rule, for the lhs variable set */
    buf rules;
    buf sorts;              /* for the header comment */
    tg_rec_spec *spec;
    size_t evals_cap;
} conv;

static int fail(conv *c, const char *fmt, ...)
{
    int n = snprintf(c->msg, c->msgsize, "%s:%d: ", c->file, c->line);
    va_list ap;
    va_start(ap, fmt);
    if (n >= 0 && (size_t)n < c->msgsize)
        vsnprintf(c->msg + n, c->msgsize - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

/* ---- terms ------------------------------------------------------------------- */

enum tok_kind { T_END, T_OPEN, T_CLOSE, T_ATOM };
typedef struct tok {
    enum tok_kind kind;
    const char *s;
    size_t len;
} tok;

static int is_delim(char ch)
{
    return ch == '\0' || ch == '(' || ch == ')' || isspace((unsigned char)ch);
}

static tok next_tok(const char **pp)
{
    const char *p = *pp;
    while (isspace((unsigned char)*p))
        p++;
    tok t = {T_END, p, 0};
    if (*p == '(' || *p == ')') {
        t.kind = *p == '(' ? T_OPEN : T_CLOSE;
        t.len = 1;
    } else if (*p) {
        t.kind = T_ATOM;
        while (!is_delim(p[t.len]))
            t.len++;
    }
    *pp = p + t.len;
    return t;
}

static int tok_is(tok t, const char *word)
{
    return t.kind == T_ATOM && t.len == strlen(word) && memcmp(t.s, word, t.len) == 0;
}

/* Where a term is: a left-hand side binds its variables, a right-hand
 * side or condition may use only those, a query or expectation none. */
enum mode { M_LHS, M_RHS, M_GROUND };

static int leaf(conv *c, tok t, enum mode mode, buf *out)
{
    if (t.s[0] == '?') {
        sym *v = tab_find(&c->vars, t.s, t.len);
        if (mode == M_GROUND)
            return fail(c, "variable %.*s in a ground term", (int)t.len, t.s);
        if (!v)
            return fail(c, "undeclared variable %.*s", (int)t.len, t.s);
        if (mode == M_LHS)
            v->stamp = c->rule_stamp;
        else if (v->stamp != c->rule_stamp)
            return fail(c, "variable %.*s is not bound by the left-hand side",
                        (int)t.len, t.s);
    } else {
        sym *op = tab_find(&c->ops, t.s, t.len);
        if (!op)
            return fail(c, "undeclared operator %.*s", (int)t.len, t.s);
        if (op->arity != 0)
            return fail(c, "operator %s of arity %d used without arguments",
                        op->name, op->arity);
    }
    buf_name(out, t.s, t.len);
    return 0;
}

typedef struct frame {
    const sym *op;
    int argc;
} frame;

/* One term from *pp, checked and copied to out in canonical spacing.
 * *top is set to its operator (NULL for a variable).  An explicit stack:
 * nothing here recurses on the depth of a term. */
static int term(conv *c, const char **pp, enum mode mode, buf *out, const sym **top)
{
    frame *st = NULL;
    size_t depth = 0, cap = 0;
    int rc = -1;
    *top = NULL;
    for (;;) {
        tok t = next_tok(pp);
        if (depth && t.kind == T_CLOSE) {
            frame *f = &st[--depth];
            if (f->argc != f->op->arity) {
                fail(c, "operator %s of arity %d applied to %d argument%s",
                     f->op->name, f->op->arity, f->argc, f->argc == 1 ? "" : "s");
                break;
            }
            buf_put(out, ")", 1);
            if (!depth) {
                rc = 0;
                break;
            }
            continue;
        }
        if (depth) {
            st[depth - 1].argc++;
            buf_put(out, " ", 1);
        }
        if (t.kind == T_ATOM) {
            if (leaf(c, t, mode, out) < 0)
                break;
            if (!depth) {
                *top = tab_find(&c->ops, t.s, t.len);
                rc = 0;
                break;
            }
            continue;
        }
        if (t.kind != T_OPEN) {
            fail(c, t.kind == T_END ? "a term is missing (or a ')')" : "unexpected ')'");
            break;
        }
        tok h = next_tok(pp);
        const sym *op = h.kind == T_ATOM ? tab_find(&c->ops, h.s, h.len) : NULL;
        if (!op) {
            fail(c, "an application must start with a declared operator, not '%.*s'",
                 (int)(h.len ? h.len : 1), h.len ? h.s : "?");
            break;
        }
        if (op->arity == 0) {
            fail(c, "nullary operator %s applied (write it bare)", op->name);
            break;
        }
        if (depth == cap) {
            frame *g = realloc(st, (cap = cap ? cap * 2 : 16) * sizeof *st);
            if (!g) {
                fail(c, "out of memory");
                break;
            }
            st = g;
        }
        if (!depth)
            *top = op;
        st[depth++] = (frame){op, 0};
        buf_put(out, "(", 1);
        buf_name(out, h.s, h.len);
    }
    free(st);
    return rc;
}

static int at_end(const char *p)
{
    while (isspace((unsigned char)*p))
        p++;
    return *p == '\0';
}

/* A term alone on the rest of a line, as a new string. */
static char *whole_term(conv *c, const char *p, enum mode mode)
{
    buf b = {0};
    const sym *top;
    if (term(c, &p, mode, &b, &top) < 0 || b.oom) {
        if (b.oom)
            fail(c, "out of memory");
        free(b.s);
        return NULL;
    }
    if (!at_end(p)) {
        fail(c, "text after the term: %.40s", p);
        free(b.s);
        return NULL;
    }
    return b.s;
}

/* ---- line kinds ---------------------------------------------------------- */

/* "ctor NAME : S1 ... Sn -> S" or "op NAME : ... -> S" */
static int decl(conv *c, const char *p, int ctor)
{
    tok name = next_tok(&p), colon = next_tok(&p), t;
    int arity = 0;
    if (name.kind != T_ATOM || name.s[0] == '?' || !tok_is(colon, ":"))
        return fail(c, "expected NAME : SORTS -> SORT");
    const char *sig = p;
    while ((t = next_tok(&p)).kind == T_ATOM && !tok_is(t, "->"))
        arity++;
    tok result = next_tok(&p);
    if (!tok_is(t, "->") || result.kind != T_ATOM || !at_end(p))
        return fail(c, "expected NAME : SORTS -> SORT");
    if (tab_find(&c->ops, name.s, name.len))
        return fail(c, "operator %.*s declared twice", (int)name.len, name.s);
    sym *op = tab_add(&c->ops, name.s, name.len);
    if (!op)
        return fail(c, "out of memory");
    op->arity = arity;
    op->ctor = ctor;
    buf_puts(&c->rules, "(op ");
    buf_name(&c->rules, name.s, name.len);
    buf_printf(&c->rules, " (arity %d))", arity);
    while (isspace((unsigned char)*sig))
        sig++;
    buf_printf(&c->rules, "  ; %s%.*s\n", ctor ? "ctor " : "", (int)(p - sig), sig);
    c->spec->n_ops++;
    return 0;
}

/* "vars ?a ?b : Sort" */
static int vars(conv *c, const char *p)
{
    tok t;
    int n = 0;
    while ((t = next_tok(&p)).kind == T_ATOM && t.s[0] == '?') {
        if (!tab_find(&c->vars, t.s, t.len) && !tab_add(&c->vars, t.s, t.len))
            return fail(c, "out of memory");
        n++;
    }
    if (!n || !tok_is(t, ":") || next_tok(&p).kind != T_ATOM || !at_end(p))
        return fail(c, "expected vars ?X ... : SORT");
    return 0;
}

/* "(== a b)" or "(!= a b)" */
static int condition(conv *c, const char **pp, buf *out)
{
    tok open = next_tok(pp), rel = next_tok(pp);
    const sym *top;
    if (open.kind != T_OPEN || !(tok_is(rel, "==") || tok_is(rel, "!=")))
        return fail(c, "a condition must be (== a b) or (!= a b)");
    buf_put(out, "(", 1);
    buf_put(out, rel.s, rel.len);
    for (int i = 0; i < 2; i++) {
        buf_put(out, " ", 1);
        if (term(c, pp, M_RHS, out, &top) < 0)
            return -1;
    }
    if (next_tok(pp).kind != T_CLOSE)
        return fail(c, "a condition has exactly two terms");
    buf_put(out, ")", 1);
    return 0;
}

/* "rule LHS -> RHS [if COND ...]" */
static int rule(conv *c, const char *p)
{
    buf *out = &c->rules;
    const sym *top;
    c->rule_stamp++;
    buf_printf(out, "(rule r%zu ", c->spec->n_rules + 1);
    if (term(c, &p, M_LHS, out, &top) < 0)
        return -1;
    if (!top)
        return fail(c, "a left-hand side cannot be a variable");
    if (top->ctor)
        return fail(c, "left-hand side headed by constructor %s", top->name);
    if (!tok_is(next_tok(&p), "->"))
        return fail(c, "expected -> after the left-hand side");
    buf_puts(out, " => ");
    if (term(c, &p, M_RHS, out, &top) < 0)
        return -1;
    if (!at_end(p)) {
        if (!tok_is(next_tok(&p), "if") || at_end(p))
            return fail(c, "expected 'if' and conditions after the right-hand side");
        buf_puts(out, " (when");
        while (!at_end(p)) {
            buf_put(out, " ", 1);
            if (condition(c, &p, out) < 0)
                return -1;
        }
        buf_puts(out, ")");
        c->spec->n_conditional++;
    }
    buf_puts(out, ")\n");
    c->spec->n_rules++;
    return 0;
}

static int eval(conv *c, const char *p)
{
    tg_rec_spec *s = c->spec;
    if (s->n_evals == c->evals_cap) {
        size_t cap = c->evals_cap ? c->evals_cap * 2 : 4;
        tg_rec_eval *v = realloc(s->evals, cap * sizeof *v);
        if (!v)
            return fail(c, "out of memory");
        s->evals = v;
        c->evals_cap = cap;
    }
    tg_rec_eval *e = &s->evals[s->n_evals];
    memset(e, 0, sizeof *e);
    e->line = c->line;
    if (!(e->query = whole_term(c, p, M_GROUND)))
        return -1;
    s->n_evals++;
    return 0;
}

static tg_rec_eval *last_eval(conv *c, const char *what)
{
    if (!c->spec->n_evals) {
        fail(c, "%s before any eval", what);
        return NULL;
    }
    return &c->spec->evals[c->spec->n_evals - 1];
}

static int expect(conv *c, const char *p)
{
    tg_rec_eval *e = last_eval(c, "expect");
    if (!e)
        return -1;
    if (e->expect)
        return fail(c, "two expect lines for one eval");
    return (e->expect = whole_term(c, p, M_GROUND)) ? 0 : -1;
}

static int hexval(char ch)
{
    return ch >= '0' && ch <= '9' ? ch - '0'
         : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
         : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
}

/* "key=value" of an expect-sha256 line into e; 0 or -1. */
static int sha_field(conv *c, tg_rec_eval *e, tok t, int *seen)
{
    char val[64];
    const char *eq = memchr(t.s, '=', t.len);
    size_t klen = eq ? (size_t)(eq - t.s) : 0, vlen = eq ? t.len - klen - 1 : 0;
    if (!eq || vlen == 0 || vlen >= sizeof val)
        return fail(c, "bad field %.*s", (int)t.len, t.s);
    memcpy(val, eq + 1, vlen);
    val[vlen] = '\0';
    char *end;
    if (klen == 4 && memcmp(t.s, "sort", 4) == 0) {
        memcpy(e->sort, val, vlen + 1);
        return 0;
    }
    unsigned long long v = strtoull(val, &end, 10);
    if (*end || !isdigit((unsigned char)val[0]))
        return fail(c, "bad number in %.*s", (int)t.len, t.s);
    if (klen == 5 && memcmp(t.s, "bytes", 5) == 0)
        e->bytes = v, *seen |= 1;
    else if (klen == 7 && memcmp(t.s, "symbols", 7) == 0)
        e->symbols = v, *seen |= 2;
    else
        return fail(c, "unknown field %.*s", (int)t.len, t.s);
    return 0;
}

/* "expect-sha256 HEX bytes=N symbols=N sort=S" */
static int expect_sha(conv *c, const char *p)
{
    tg_rec_eval *e = last_eval(c, "expect-sha256");
    tok hex = next_tok(&p), t;
    int seen = 0;
    if (!e)
        return -1;
    if (e->has_sha)
        return fail(c, "two expect-sha256 lines for one eval");
    if (hex.kind != T_ATOM || hex.len != 64)
        return fail(c, "expected 64 hex digits");
    for (int i = 0; i < 32; i++) {
        int hi = hexval(hex.s[2 * i]), lo = hexval(hex.s[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return fail(c, "expected 64 hex digits");
        e->sha[i] = (unsigned char)(hi << 4 | lo);
    }
    while ((t = next_tok(&p)).kind == T_ATOM)
        if (sha_field(c, e, t, &seen) < 0)
            return -1;
    if (t.kind != T_END || seen != 3)
        return fail(c, "expect-sha256 needs bytes=N and symbols=N");
    e->has_sha = 1;
    return 0;
}

/* Comments carry the benchmark's name ("; benchmark: NAME ...") and
 * Maude's rewrite count ("; reference: Maude 3.2 reports N rewrites ..."). */
static void comment(conv *c, const char *p)
{
    const char *q = p + 1, *r;
    long long n;
    tok t;
    while (*q == ' ')
        q++;
    if (strncmp(q, "benchmark:", 10) == 0) {
        q += 10;
        if ((t = next_tok(&q)).kind == T_ATOM && t.len < sizeof c->spec->name) {
            memcpy(c->spec->name, t.s, t.len);
            c->spec->name[t.len] = '\0';
        }
    } else if (strncmp(q, "reference:", 10) == 0 && (r = strstr(q, " reports ")) != NULL
               && sscanf(r, " reports %lld rewrites", &n) == 1) {
        c->spec->maude_rewrites = n;
    }
}

/* One line, NUL-terminated in place; a ';' starts a comment anywhere. */
static int line(conv *c, char *text)
{
    const char *p = text;
    char *semi = strchr(text, ';');
    if (semi) {
        comment(c, semi);
        *semi = '\0';
    }
    tok kw = next_tok(&p);
    if (kw.kind == T_END)
        return 0;
    if (tok_is(kw, "sorts")) {
        buf_puts(&c->sorts, p);
        return 0;
    }
    if (tok_is(kw, "ctor") || tok_is(kw, "op"))
        return decl(c, p, tok_is(kw, "ctor"));
    if (tok_is(kw, "vars"))
        return vars(c, p);
    if (tok_is(kw, "rule"))
        return rule(c, p);
    if (tok_is(kw, "eval"))
        return eval(c, p);
    if (tok_is(kw, "expect"))
        return expect(c, p);
    if (tok_is(kw, "expect-sha256"))
        return expect_sha(c, p);
    return fail(c, "unknown line kind '%.*s'", (int)kw.len, kw.s);
}

/* ---- driver ------------------------------------------------------------- */

static void base_name(char *dst, size_t size, const char *file)
{
    const char *b = strrchr(file, '/');
    b = b ? b + 1 : file;
    size_t n = strcspn(b, ".");
    if (n >= size)
        n = size - 1;
    memcpy(dst, b, n);
    dst[n] = '\0';
}

/* The .rules header: name, where it came from, the sorts (not emitted as
 * declarations: the engine is untyped). */
static int assemble(conv *c)
{
    buf out = {0};
    buf_printf(&out, "; rec: %s\n", c->spec->name);
    buf_printf(&out, "; converted from the REC benchmark file %s\n", c->file);
    buf_printf(&out, "; sorts:%s%s\n", c->sorts.len ? "" : " (none)", c->sorts.s ? c->sorts.s : "");
    buf_put(&out, c->rules.s ? c->rules.s : "", c->rules.len);
    if (out.oom) {
        free(out.s);
        return fail(c, "out of memory");
    }
    c->spec->rules = out.s;
    c->spec->rules_len = out.len;
    return 0;
}

static int convert_lines(conv *c, const char *text, size_t len)
{
    char *copy = malloc(len + 1);
    int rc = 0;
    if (!copy)
        return fail(c, "out of memory");
    memcpy(copy, text, len);
    copy[len] = '\0';
    if (strlen(copy) != len)
        rc = fail(c, "a NUL byte in the file");
    for (char *p = copy, *nl; rc == 0 && p < copy + len; p = nl + 1) {
        nl = strchr(p, '\n');
        if (!nl)
            nl = copy + len;
        *nl = '\0';
        c->line++;
        for (char *q = p; *q; q++)
            if (*q == '\r' || *q == '\t')
                *q = ' ';
        rc = line(c, p);
        if (rc == 0 && (c->rules.oom || c->sorts.oom))
            rc = fail(c, "out of memory");
    }
    free(copy);
    return rc;
}

int tg_rec_convert(const char *text, size_t len, const char *file,
                   tg_rec_spec *out, char *msg, size_t msgsize)
{
    conv c = {0};
    c.file = file ? file : "<string>";
    c.msg = msg;
    c.msgsize = msgsize;
    c.spec = out;
    memset(out, 0, sizeof *out);
    out->maude_rewrites = -1;
    base_name(out->name, sizeof out->name, c.file);
    int rc = convert_lines(&c, text, len);
    if (rc == 0 && out->n_evals == 0)
        rc = fail(&c, "no eval line");
    if (rc == 0)
        rc = assemble(&c);
    free(c.rules.s);
    free(c.sorts.s);
    tab_free(&c.ops);
    tab_free(&c.vars);
    if (rc < 0)
        tg_rec_spec_free(out);
    return rc;
}

void tg_rec_spec_free(tg_rec_spec *spec)
{
    for (size_t i = 0; i < spec->n_evals; i++) {
        free(spec->evals[i].query);
        free(spec->evals[i].expect);
    }
    free(spec->evals);
    free(spec->rules);
    memset(spec, 0, sizeof *spec);
    spec->maude_rewrites = -1;
}
