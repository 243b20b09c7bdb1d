/* test_api_null.c - the failure side of the public functions that the
 * other tests exercise only when they succeed: a NULL context, rule set,
 * environment, query, array or name where one is expected gives NULL, -1
 * or nothing (with the error filled where the function takes one), never
 * a crash; and the functions that release or inspect accept NULL. */
#include "harness.h"
#include "tgrel.h"

int main(void)
{
    tg_error err;
    tg_ctx *ctx = tg_ctx_new(&err);
    mpz_t big;
    mpz_init_set_str(big, "123456789012345678901234567890", 10);

    /* constructors without a context (small integers need none) */
    TAP_CHECK(tg_symbol(NULL, "a", 1) == NULL && tg_symbol_cstr(NULL, "a") == NULL &&
                  tg_string(NULL, "a", 1) == NULL && tg_double(NULL, 1.5) == NULL &&
                  tg_int_mpz(NULL, big) == NULL && tg_int(NULL, INT64_MAX) == NULL,
              "constructors without a context give NULL");
    TAP_CHECK(tg_int(NULL, 7) != NULL, "a small integer needs no context");
    tg_term *a = tg_symbol_cstr(ctx, "a");
    TAP_CHECK(tg_app(NULL, a, 1, &a) == NULL && tg_app(ctx, NULL, 1, &a) == NULL &&
                  tg_app(ctx, a, 1, NULL) == NULL && tg_list(NULL, 1, &a, NULL) == NULL &&
                  tg_list(ctx, 2, NULL, NULL) == NULL && tg_cons(NULL, a, a) == NULL &&
                  tg_cons(ctx, NULL, a) == NULL,
              "applications and lists without a context, head or elements give NULL");
    TAP_CHECK(tg_symbol(ctx, NULL, 3) == NULL && tg_symbol_cstr(ctx, NULL) == NULL &&
                  tg_string(ctx, NULL, 2) == NULL && tg_symbol(ctx, NULL, 0) == tg_symbol(ctx, "", 0) &&
                  tg_string(ctx, NULL, 0) == tg_string(ctx, "", 0),
              "a NULL name with a length gives NULL; the empty name is a symbol");
    tg_error_clear(&err);
    TAP_CHECK(tg_int_parse(ctx, NULL, &err) == NULL && err.code == TG_ERR_ARG,
              "tg_int_parse of NULL is an argument error");
    tg_iter it;
    tg_iter_init(&it, a);
    TAP_CHECK(tg_iter_rest(NULL, &it) == NULL && tg_iter_rest(ctx, NULL) == NULL,
              "tg_iter_rest without a context or an iterator gives NULL");
    TAP_EQ_STR(tg_kind_name((tg_kind)99), "unknown", "the name of a kind out of range");
    tg_stats st;
    st.live = 42;
    tg_ctx_stats(NULL, &st);
    TAP_CHECK(st.live == 0 && st.capacity == 0, "the stats of no context are zero");
    tg_ctx_stats(ctx, NULL);        /* allowed, does nothing */
    int line = 5, col = 5;
    tg_reader_last_pos(NULL, &line, &col);
    TAP_CHECK(line == 0 && col == 0, "no reader has no last position");

    /* logic */
    tg_error_clear(&err);
    TAP_CHECK(tg_env_new(NULL, &err) == NULL && err.code == TG_ERR_ARG,
              "an environment needs a context");
    tg_env_set_occurs_check(NULL, 0);   /* allowed, does nothing */
    tg_env_free(NULL);
    tg_query_free(NULL);
    tg_error_clear(&err);
    TAP_CHECK(tg_query_run(NULL, NULL, NULL, &err) == -1 && err.code == TG_ERR_ARG,
              "running no query is an argument error");
    tg_env *env = tg_env_new(ctx, &err);
    tg_term *q = tg_read_cstr(ctx, "(run* (x) (no-such-relation x))", &err);
    tg_query *cq = tg_query_new(env, q, &err);
    tg_error_clear(&err);
    long n = cq ? tg_query_run(cq, NULL, NULL, &err) : 0;
    TAP_CHECK(n == -1 && strstr(err.message, "no-such-relation") != NULL,
              "a query calling an undefined relation fails naming it (%s)", err.message);
    tg_query_free(cq);
    tg_env_free(env);
    tg_error_set(NULL, TG_ERR_ARG, "nowhere %d", 1);   /* allowed */

    /* rule sets */
    unsigned long long rw = 9, cond = 9;
    tg_rules_counts(NULL, &rw, &cond);
    TAP_CHECK(rw == 0 && cond == 0, "no rule set counts nothing");
    tg_error_clear(&err);
    TAP_CHECK(tg_rules_env(NULL, &err) == NULL && err.code == TG_ERR_ARG, "no rule set has no environment");
    TAP_CHECK(tg_rules_profile(NULL) == NULL, "no rule set has no profile");
    tg_rules *rs = tg_rules_new(ctx, &err);
    TAP_CHECK(tg_rules_profile(rs) == NULL, "no profile before a rewrite");
    tg_rules_free(rs);
    tg_rules_free(NULL);

    /* tensor functions */
    tg_array arr;
    int64_t shape[2] = {2, 3};
    double data[6];
    tg_array_init(NULL, TG_FLOAT64, 2, shape, data);    /* allowed, does nothing */
    tg_array_init(&arr, TG_FLOAT64, 2, NULL, data);
    TAP_CHECK(arr.ndim == 0 && arr.data == data, "an array without a shape is a scalar");
    tg_array_init(&arr, TG_FLOAT64, 2, shape, data);
    tg_array_init(&arr, TG_FLOAT64, 2, arr.shape, data);
    TAP_CHECK(arr.ndim == 2 && arr.shape[0] == 2 && arr.shape[1] == 3 && arr.strides[0] == 24 &&
                  arr.strides[1] == 8,
              "an array initialized from its own shape keeps it");
    TAP_CHECK(tg_fn_native(NULL) == 0, "no function is not native");
    tg_fn_free(NULL);
    tg_ctx_free(NULL);

    mpz_clear(big);
    tg_ctx_free(ctx);
    return TAP_DONE();
}
