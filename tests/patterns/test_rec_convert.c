/* test_rec_convert.c - the engine-free parts of the REC benchmark harness
 * (bench/rec_*.c): SHA-256 against the FIPS vectors, the streaming term
 * hash against tg_print on small terms and on a 3.6-million-deep one, the
 * converter on small specs (exact output, every error it must catch), and
 * on every benchmark file of the REC folder when it is there ($TGREL_REC_DIR,
 * else $srcdir/../shared/bench/rec): each converts, its .rules text reads
 * back, and each full `expect` term hashes to its `expect-sha256`. */
#include "harness.h"
#include "tgrel.h"
#include "../../bench/rec_convert.h"
#include "../../bench/rec_hash.h"
#include "../../bench/rec_sha256.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

static tg_ctx *C;

/* ---- SHA-256 ----------------------------------------------------------- */

static const char *sha_hex_of(const void *data, size_t len, size_t chunk)
{
    static char hex[65];
    unsigned char d[32];
    tg_rec_sha256 s;
    tg_rec_sha256_init(&s);
    for (size_t off = 0; off < len; off += chunk)
        tg_rec_sha256_update(&s, (const char *)data + off, len - off < chunk ? len - off : chunk);
    tg_rec_sha256_final(&s, d);
    tg_rec_sha256_hex(d, hex);
    return hex;
}

static void test_sha256(void)
{
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    TAP_EQ_STR(sha_hex_of("", 0, 1),
               "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "sha256 \"\"");
    TAP_EQ_STR(sha_hex_of("abc", 3, 3),
               "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", "sha256 abc");
    TAP_EQ_STR(sha_hex_of(two, strlen(two), 56),
               "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
               "sha256 of 448 bits (padding takes a second block)");
    char *a = malloc(1000000);
    memset(a, 'a', 1000000);
    /* chunk sizes that straddle block boundaries in different ways */
    size_t chunks[] = {1000000, 64, 1, 7, 65, 4093};
    for (size_t i = 0; i < sizeof chunks / sizeof chunks[0]; i++)
        TAP_EQ_STR(sha_hex_of(a, 1000000, chunks[i]),
                   "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0",
                   "sha256 of a million 'a', fed in chunks");
    free(a);
    char bytes[130], whole[65];
    for (size_t i = 0; i < sizeof bytes; i++)
        bytes[i] = (char)(i * 37 + 11);
    for (size_t n = 50; n <= 130; n += n < 72 || n > 118 ? 1 : 23) {  /* around 56 and 120 */
        strcpy(whole, sha_hex_of(bytes, n, n));
        TAP_EQ_STR(sha_hex_of(bytes, n, 1), whole, "sha256 is the same fed byte by byte");
    }
}

/* ---- the streaming term hash --------------------------------------------- */

/* The hash of t against SHA-256 of tg_print's text; symbols as expected. */
static void hash_like_print(const char *text, unsigned long long symbols)
{
    tg_error err;
    tg_term *t = tg_read_cstr(C, text, &err);
    tg_rec_digest d;
    size_t len;
    char hex[65], *printed = t ? tg_print(t, &len) : NULL;
    if (!TAP_CHECK(printed && tg_rec_hash_term(t, &d) == 0, "hash %s", text))
        return;
    tg_rec_sha256_hex(d.sha, hex);
    TAP_EQ_STR(hex, sha_hex_of(printed, len, len ? len : 1), "  sha256 as of tg_print");
    TAP_EQ_INT(d.bytes, len, "  bytes");
    TAP_EQ_INT(d.symbols, symbols, "  symbols");
    free(printed);
}

/* s^n(d0), built bottom-up: as deep as the biggest REC normal forms. */
static void hash_deep(long n, const char *want_hex, unsigned long long want_bytes)
{
    tg_term *s = tg_symbol_cstr(C, "s"), *t = tg_symbol_cstr(C, "d0");
    tg_rec_digest d;
    char hex[65];
    for (long i = 0; i < n; i++)
        t = tg_app(C, s, 1, &t);
    if (!TAP_CHECK(tg_rec_hash_term(t, &d) == 0, "hash s^%ld(d0)", n))
        return;
    tg_rec_sha256_hex(d.sha, hex);
    TAP_EQ_STR(hex, want_hex, "  sha256");
    TAP_EQ_INT(d.bytes, want_bytes, "  bytes");
    TAP_EQ_INT(d.symbols, n + 1, "  symbols");
}

static void test_hash(void)
{
    hash_like_print("d0", 1);
    hash_like_print("(cons d0 (cons (s d0) nil))", 6);
    hash_like_print("(f (g (h a)) b (k) ((x y) z))", 9);
    hash_like_print("(a b . c)", 3);
    hash_like_print("(f 12 \"str\" ?v 1/2 ())", 1);
    hash_like_print("(f |odd sym| x)", 3);
    /* the expectations of factorial10 and fibonacci32 (10! and fib(32)) */
    hash_deep(3628800, "ebefe9da9f67ac19c49d57f04c5e17df45600ea768d99fe64910a93c7657ebef", 14515202);
    hash_deep(2178309, "c1c4e2036790a0179aa54adec7c81934f9f916ca9c374b61a163536532f0609e", 8713238);
}

/* ---- the converter on small specs ----------------------------------------- */

static const char *SMALL =
    "; benchmark: small   (a test)\n"
    "; reference: Maude 3.2 reports 12 rewrites in total for the eval(s) below\n"
    "sorts Bool Nat\n"
    "ctor T : -> Bool\n"
    "ctor F : -> Bool\n"
    "ctor d0 : -> Nat\n"
    "ctor s : Nat -> Nat   ; a trailing comment\n"
    "op plus : Nat Nat -> Nat\n"
    "op two : -> Nat\n"
    "op lt' : Nat Nat -> Bool\n"
    "vars ?n ?m : Nat\n"
    "vars ?b : Bool\n"
    "rule two -> (s (s d0))\n"
    "rule (plus d0 ?n) -> ?n\n"
    "rule (plus (s ?n) ?m) -> (s (plus ?n ?m))\n"
    "rule (lt' ?n ?m) -> T if (!= ?n ?m) (== (plus ?n ?m) two)\n"
    "eval (plus two   two)\n"
    "expect (s (s (s (s d0))))\n"
    "expect-sha256 " "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
    " bytes=25 symbols=5 sort=Nat\n"
    "eval (lt' d0 two)\n";

static const char *SMALL_RULES =
    "; rec: small\n"
    "; converted from the REC benchmark file small.txt\n"
    "; sorts: Bool Nat\n"
    "(op T (arity 0))  ; ctor -> Bool\n"
    "(op F (arity 0))  ; ctor -> Bool\n"
    "(op d0 (arity 0))  ; ctor -> Nat\n"
    "(op s (arity 1))  ; ctor Nat -> Nat\n"
    "(op plus (arity 2))  ; Nat Nat -> Nat\n"
    "(op two (arity 0))  ; -> Nat\n"
    "(op lt_prime (arity 2))  ; Nat Nat -> Bool\n"
    "(rule r1 two => (s (s d0)))\n"
    "(rule r2 (plus d0 ?n) => ?n)\n"
    "(rule r3 (plus (s ?n) ?m) => (s (plus ?n ?m)))\n"
    "(rule r4 (lt_prime ?n ?m) => T (when (!= ?n ?m) (== (plus ?n ?m) two)))\n";

static void test_small(void)
{
    tg_rec_spec s;
    char msg[512] = "";
    int rc = tg_rec_convert(SMALL, strlen(SMALL), "small.txt", &s, msg, sizeof msg);
    if (!TAP_CHECK(rc == 0, "convert a small spec: %s", msg))
        return;
    TAP_EQ_STR(s.rules, SMALL_RULES, "  .rules text");
    TAP_EQ_STR(s.name, "small", "  name from the comment");
    TAP_EQ_INT(s.maude_rewrites, 12, "  Maude's rewrite count from the comment");
    TAP_EQ_INT(s.n_ops, 7, "  ops");
    TAP_EQ_INT(s.n_rules, 4, "  rules");
    TAP_EQ_INT(s.n_conditional, 1, "  conditional rules");
    if (TAP_EQ_INT(s.n_evals, 2, "  evals")) {
        TAP_EQ_STR(s.evals[0].query, "(plus two two)", "  query in canonical spacing");
        TAP_EQ_STR(s.evals[0].expect, "(s (s (s (s d0))))", "  expect");
        TAP_CHECK(s.evals[0].has_sha && s.evals[0].sha[1] == 0x11 && s.evals[0].sha[31] == 0xff
                  && s.evals[0].bytes == 25 && s.evals[0].symbols == 5
                  && strcmp(s.evals[0].sort, "Nat") == 0, "  expect-sha256 fields");
        TAP_CHECK(!s.evals[1].expect && !s.evals[1].has_sha, "  second eval has no expectation");
        TAP_EQ_STR(s.evals[1].query, "(lt_prime d0 two)", "  ' written _prime in queries");
        TAP_EQ_INT(s.evals[1].line, 20, "  line of the second eval");
    }
    tg_rec_spec_free(&s);
}

/* SMALL with its line `line` replaced by `text`: conversion must fail
 * with a message naming that line and containing `want`. */
static void bad(int line, const char *text, const char *want)
{
    char src[4096] = "", msg[512] = "", where[32];
    const char *p = SMALL;
    for (int n = 1; *p; n++) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) + 1 : strlen(p);
        if (n == line) {
            strcat(src, text);
            strcat(src, "\n");
        } else {
            strncat(src, p, len);
        }
        p += len;
    }
    tg_rec_spec s;
    int rc = tg_rec_convert(src, strlen(src), "bad.txt", &s, msg, sizeof msg);
    snprintf(where, sizeof where, "bad.txt:%d: ", line);
    TAP_CHECK(rc < 0 && strncmp(msg, where, strlen(where)) == 0 && strstr(msg, want),
              "rejects '%s' (%s)", text, msg);
    if (rc == 0)
        tg_rec_spec_free(&s);
}

static void test_errors(void)
{
    bad(13, "rule two -> (s (s d1))", "undeclared operator d1");
    bad(13, "rule two -> (s d0 d0)", "arity 1 applied to 2");
    bad(13, "rule two -> (s (d0))", "nullary operator d0 applied");
    bad(13, "rule two -> s", "arity 1 used without arguments");
    bad(13, "rule two -> (?n d0)", "declared operator");
    bad(13, "rule two -> (s (s d0)", "missing");
    bad(13, "rule two -> (s d0))", "after the right-hand side");
    bad(14, "rule (plus d0 ?n) -> ?m", "?m is not bound");
    bad(14, "rule (plus d0 ?k) -> ?k", "undeclared variable ?k");
    bad(14, "rule (s ?n) -> ?n", "constructor s");
    bad(14, "rule ?n -> ?n", "cannot be a variable");
    bad(14, "rule (plus d0 ?n) ?n", "expected ->");
    bad(16, "rule (lt' ?n ?m) -> T if (=== ?n ?m)", "(== a b) or (!= a b)");
    bad(16, "rule (lt' ?n ?m) -> T if (== ?n ?m ?n)", "exactly two");
    bad(16, "rule (lt' ?n ?m) -> T if (== ?n ?b)", "?b is not bound");
    bad(16, "rule (lt' ?n ?m) -> T iff (== ?n ?m)", "'if'");
    bad(17, "eval (plus ?n two)", "variable ?n in a ground term");
    bad(17, "expect d0", "before any eval");
    bad(18, "expect (s d0) d0", "text after the term");
    bad(19, "expect-sha256 0011 bytes=1 symbols=1", "64 hex digits");
    bad(19, "expect-sha256 " "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
        " bytes=25", "needs bytes=N and symbols=N");
    bad(9, "op plus : Nat Nat -> Nat", "declared twice");
    bad(8, "op plus : Nat Nat Nat", "NAME : SORTS -> SORT");
    bad(11, "vars ?n ?m Nat", "vars ?X");
    bad(3, "sort Bool Nat", "unknown line kind 'sort'");
}

/* ---- every benchmark file ------------------------------------------------- */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Names of the *.txt files of dir, sorted; NULL when dir cannot be read. */
static char **list_txt(const char *dir, size_t *n)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char **v = NULL;
    *n = 0;
    if (!d)
        return NULL;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len > 4 && strcmp(e->d_name + len - 4, ".txt") == 0) {
            v = realloc(v, (*n + 1) * sizeof *v);
            v[(*n)++] = strdup(e->d_name);
        }
    }
    closedir(d);
    qsort(v, *n, sizeof *v, cmp_str);
    return v ? v : calloc(1, sizeof *v);
}

/* The .rules text must read as (op ...) and (rule ...) forms only. */
static int rules_read_back(const tg_rec_spec *s, char *why, size_t size)
{
    tg_error err;
    tg_reader *r = tg_reader_new(C, s->rules, s->rules_len, s->name, &err);
    tg_term *form, *op = tg_symbol_cstr(C, "op"), *rule = tg_symbol_cstr(C, "rule");
    size_t ops = 0, rules = 0;
    int rc = -1;
    while (r && (rc = tg_reader_next(r, &form, &err)) == 1) {
        tg_term *head = tg_nth(form, 0);
        ops += head == op && tg_length(form) == 3;
        rules += head == rule && tg_nth(form, 3) == tg_symbol_cstr(C, "=>");
    }
    tg_reader_free(r);
    char where[600];
    if (!r || rc < 0)
        snprintf(why, size, "reader: %s", tg_error_format(&err, where, sizeof where));
    else if (ops != s->n_ops || rules != s->n_rules)
        snprintf(why, size, "%zu op and %zu rule forms", ops, rules);
    else
        return 0;
    return -1;
}

/* Every full expectation must hash to the file's expect-sha256. */
static int expects_match(const tg_rec_spec *s, char *why, size_t size)
{
    for (size_t i = 0; i < s->n_evals; i++) {
        const tg_rec_eval *e = &s->evals[i];
        tg_error err;
        tg_rec_digest d;
        if (!tg_read_cstr(C, e->query, &err)) {
            snprintf(why, size, "eval %zu does not read: %s", i + 1, err.message);
            return -1;
        }
        if (!e->expect || !e->has_sha)
            continue;
        tg_term *t = tg_read_cstr(C, e->expect, &err);
        if (!t || tg_rec_hash_term(t, &d) < 0 || memcmp(d.sha, e->sha, 32) != 0
            || d.bytes != e->bytes || d.symbols != e->symbols) {
            snprintf(why, size, "eval %zu: expect and expect-sha256 disagree", i + 1);
            return -1;
        }
    }
    return 0;
}

static void test_file(const char *dir, const char *name)
{
    char path[8192], msg[512] = "", why[600] = "";
    size_t len;
    tg_error err;
    tg_rec_spec s;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    char *text = tg_slurp_file(path, &len, &err);
    int rc = text ? tg_rec_convert(text, len, name, &s, msg, sizeof msg) : -1;
    free(text);
    if (!TAP_CHECK(rc == 0, "convert %s %s", name, text ? msg : err.message))
        return;
    rc = rules_read_back(&s, why, sizeof why);
    if (rc == 0)
        rc = expects_match(&s, why, sizeof why);
    TAP_CHECK(rc == 0, "  %s: %zu ops, %zu rules (%zu conditional), %zu evals read back %s",
              s.name, s.n_ops, s.n_rules, s.n_conditional, s.n_evals, why);
    tg_rec_spec_free(&s);
}

static void test_files(void)
{
    char dir[4096];
    const char *env = getenv("TGREL_REC_DIR");
    size_t n;
    snprintf(dir, sizeof dir, "%s", env && *env ? env : tap_path("../shared/bench/rec"));
    char **names = list_txt(dir, &n);
    if (!names || n == 0) {
        printf("ok %d # SKIP no REC benchmark files in %s\n", ++tap_count_, dir);
        free(names);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        test_file(dir, names[i]);
        free(names[i]);
    }
    free(names);
}

int main(void)
{
    tg_error err;
    C = tg_ctx_new(&err);
    if (!C) {
        printf("Bail out! %s\n", err.message);
        return 1;
    }
    test_sha256();
    test_hash();
    test_small();
    test_errors();
    test_files();
    tg_ctx_free(C);
    return TAP_DONE();
}
