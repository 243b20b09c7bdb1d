/* train.c - the training examples through the C API: logistic regression
 * on the breast cancer data and a 64-32-10 perceptron on the digits
 * (examples/data/README.md), as examples/train_logreg.tgs and
 * train_mlp.tgs do in the REPL.  The data are read with tg_npy_read into
 * shared variables; each model is one compiled function whose outputs
 * are the loss and whose updates move the weights by the gradient (and
 * advance the random state that draws the minibatches).  It prints the
 * loss once an epoch and the accuracy on the held-out 20% of the rows.
 *
 *   train [logreg|mlp|both] [EPOCHS] [DATA-DIR]     (both, 30, examples/data) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tgrel.h"

static tg_ctx *ctx;
static tg_error err;

static int fail(const char *what)
{
    fprintf(stderr, "train: %s%s%s\n", what, err.message[0] ? ": " : "", err.message);
    return 1;
}

/* Read DIR/NAME into a new shared variable NAME of dtype and rank (the
 * file checked); its shape in shape.  NULL after reporting. */
static tg_shared *load(const char *dir, const char *name, tg_dtype dtype, int ndim, int64_t *shape)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.npy", dir, name);
    tg_array a;
    if (tg_npy_read(path, &a, &err) < 0)
        return fail("reading the data"), NULL;
    if (a.dtype != dtype || a.ndim != ndim) {
        fprintf(stderr, "train: %s: expected a %d-axis %s array\n", path, ndim,
                dtype == TG_FLOAT64 ? "float64" : "int64");
        free(a.data);
        return NULL;
    }
    memcpy(shape, a.shape, (size_t)ndim * sizeof *shape);
    tg_shared *v = tg_shared_new(ctx, name, &a, &err);
    free(a.data);
    if (!v)
        fail(name);
    return v;
}

/* A shared variable name set to the value of term text (no inputs). */
static tg_shared *compute(const char *name, const char *text)
{
    tg_term *t = tg_read_cstr(ctx, text, &err);
    tg_fn *fn = t ? tg_fn_compile(ctx, 0, NULL, 1, &t, NULL, &err) : NULL;
    tg_array a;
    memset(&a, 0, sizeof a);
    if (!fn || tg_fn_call(fn, NULL, &a, &err) < 0) {
        tg_fn_free(fn);
        return fail(name), NULL;
    }
    tg_fn_free(fn);
    tg_shared *v = tg_shared_find(ctx, name);
    int ok = v ? tg_shared_set(v, &a, &err) == 0 : (v = tg_shared_new(ctx, name, &a, &err)) != NULL;
    free(a.data);
    return ok ? v : (fail(name), NULL);
}

/* Compile outputs (text of terms) with updates (text of pairs, or NULL). */
static tg_fn *function(const char *outputs, const char *updates)
{
    tg_term *out[4];
    size_t n = 0;
    tg_reader *r = tg_reader_new(ctx, outputs, strlen(outputs), NULL, &err);
    while (r && n < 4 && tg_reader_next(r, &out[n], &err) == 1)
        n++;
    tg_reader_free(r);
    tg_fn_options opt;
    memset(&opt, 0, sizeof opt);
    if (updates && !(opt.updates = tg_read_cstr(ctx, updates, &err)))
        return NULL;
    return tg_fn_compile(ctx, 0, NULL, n, out, &opt, &err);
}

/* Call fn (no inputs) for its one 0-d float64 output. */
static int call(tg_fn *fn, double *value)
{
    tg_array o;
    tg_array_init(&o, TG_FLOAT64, 0, NULL, value);
    return tg_fn_call(fn, NULL, &o, &err);
}

static int logreg(const char *dir, int epochs)
{
    int64_t xs[2], ys[1];
    if (!load(dir, "breast_cancer_X", TG_FLOAT64, 2, xs) || !load(dir, "breast_cancer_y", TG_INT64, 1, ys))
        return 1;
    long long n = xs[0], f = xs[1], ntr = n * 4 / 5;
    if (ys[0] != n)
        return fprintf(stderr, "train: %lld rows of features, %lld labels\n", n, (long long)ys[0]), 1;
    static char X[100], Y[100], tr[60], te[60], W[60], t[16384], z[1024], loss[8192], upd[40000];
    snprintf(X, sizeof X, "(shared breast_cancer_X float64 (%lld %lld))", n, f);
    snprintf(Y, sizeof Y, "(shared breast_cancer_y int64 (%lld))", n);
    snprintf(tr, sizeof tr, "(slice 0 %lld none)", ntr);
    snprintf(te, sizeof te, "(slice %lld none none)", ntr);
    /* standardize with the training rows' mean and deviation */
    char mu[400];
    snprintf(mu, sizeof mu, "(mean (subtensor %s %s) (axes 0))", X, tr);
    snprintf(t, sizeof t, "(true_div (sub %s %s) (sqrt (mean (sqr (sub (subtensor %s %s) %s)) (axes 0))))", X, mu, X,
             tr, mu);
    if (!compute("breast_cancer_X", t))
        return 1;
    snprintf(t, sizeof t, "(alloc 0.0 %lld)", f);
    if (!compute("w", t) || !compute("b", "0.0"))
        return 1;
    snprintf(W, sizeof W, "(shared w float64 (%lld))", f);
    const char *B = "(shared b float64 ())";
    snprintf(z, sizeof z, "(add (dot (subtensor %s %s) %s) %s)", X, tr, W, B);
    snprintf(loss, sizeof loss,
             "(mean (sub (add (maximum %s 0) (log1p (exp (neg (abs %s))))) (mul (cast (subtensor %s %s) float64) %s)))",
             z, z, Y, tr, z);
    snprintf(upd, sizeof upd, "((%s (sub %s (mul 0.5 (grad %s %s)))) (%s (sub %s (mul 0.5 (grad %s %s)))))", W, W,
             loss, W, B, B, loss, B);
    tg_fn *step = function(loss, upd);
    snprintf(t, sizeof t, "(mean (eq (gt (add (dot (subtensor %s %s) %s) %s) 0) (cast (subtensor %s %s) bool)))", X,
             te, W, B, Y, te);
    tg_fn *acc = step ? function(t, NULL) : NULL;
    if (!acc)
        return fail("compiling the logistic regression");
    for (int e = 1; e <= epochs; e++) {
        double l;
        if (call(step, &l) < 0)
            return fail("a step");
        printf("logreg epoch %d: loss %.6f\n", e, l);
    }
    double a;
    if (call(acc, &a) < 0)
        return fail("the accuracy");
    printf("logreg held-out accuracy: %.4f (%lld rows)\n", a, n - ntr);
    tg_fn_free(step);
    tg_fn_free(acc);
    return 0;
}

static int mlp(const char *dir, int epochs)
{
    int64_t xs[2], ys[1];
    if (!load(dir, "digits_X", TG_FLOAT64, 2, xs) || !load(dir, "digits_y", TG_INT64, 1, ys))
        return 1;
    long long n = xs[0], f = xs[1], ntr = n * 4 / 5, h = 32, k = 10, bs = 256;
    if (ys[0] != n)
        return fprintf(stderr, "train: %lld rows of features, %lld labels\n", n, (long long)ys[0]), 1;
    static char X[100], Y[100], W1[60], b1[60], W2[60], b2[60], t[4096], loss[16384], upd[80000];
    const char *rng = "(shared rng int64 ())";
    snprintf(X, sizeof X, "(shared digits_X float64 (%lld %lld))", n, f);
    snprintf(Y, sizeof Y, "(shared digits_y int64 (%lld))", n);
    snprintf(W1, sizeof W1, "(shared W1 float64 (%lld %lld))", f, h);
    snprintf(b1, sizeof b1, "(shared b1 float64 (%lld))", h);
    snprintf(W2, sizeof W2, "(shared W2 float64 (%lld %lld))", h, k);
    snprintf(b2, sizeof b2, "(shared b2 float64 (%lld))", k);
    snprintf(t, sizeof t, "(true_div %s 16)", X);
    if (!compute("digits_X", t))
        return 1;
    snprintf(t, sizeof t, "(mul 0.125 (random normal 1 (%lld %lld) 0 1))", f, h);
    if (!compute("W1", t))
        return 1;
    snprintf(t, sizeof t, "(mul 0.18 (random normal 2 (%lld %lld) 0 1))", h, k);
    if (!compute("W2", t))
        return 1;
    snprintf(t, sizeof t, "(alloc 0.0 %lld)", h);
    if (!compute("b1", t))
        return 1;
    snprintf(t, sizeof t, "(alloc 0.0 %lld)", k);
    if (!compute("b2", t) || !compute("rng", "(const int64 0)"))
        return 1;
    /* a minibatch of training rows drawn from rng; softmax cross-entropy */
    static char batch[200], logits[1024];
    snprintf(batch, sizeof batch, "(random integers %s (%lld) 0 %lld)", rng, bs, ntr);
    snprintf(logits, sizeof logits,
             "(add (dot (tanh (add (dot (take (subtensor %s (slice 0 %lld none)) %s) %s) %s)) %s) %s)", X, ntr, batch,
             W1, b1, W2, b2);
    snprintf(loss, sizeof loss,
             "(mean (sub (add (max %s (axes 1)) (log (sum (exp (sub %s (dimshuffle (max %s (axes 1)) (perm 0 x)))) (axes 1))))"
             " (sum (mul (one_hot (take (subtensor %s (slice 0 %lld none)) %s) %lld) %s) (axes 1))))",
             logits, logits, logits, Y, ntr, batch, k, logits);
    int u = snprintf(upd, sizeof upd, "(");
    const char *params[4] = {W1, b1, W2, b2};
    for (int i = 0; i < 4; i++)
        u += snprintf(upd + u, sizeof upd - (size_t)u, "(%s (sub %s (mul 0.5 (grad %s %s)))) ", params[i], params[i],
                      loss, params[i]);
    snprintf(upd + u, sizeof upd - (size_t)u, "(%s (add %s 1)))", rng, rng);
    tg_fn *step = function(loss, upd);
    snprintf(t, sizeof t,
             "(mean (eq (argmax (add (dot (tanh (add (dot (subtensor %s (slice %lld none none)) %s) %s)) %s) %s) 1)"
             " (subtensor %s (slice %lld none none))))",
             X, ntr, W1, b1, W2, b2, Y, ntr);
    tg_fn *acc = step ? function(t, NULL) : NULL;
    if (!acc)
        return fail("compiling the perceptron");
    long long per = (ntr + bs - 1) / bs;    /* steps an epoch */
    for (int e = 1; e <= epochs; e++) {
        double l = 0, sum = 0;
        for (long long s = 0; s < per; s++) {
            if (call(step, &l) < 0)
                return fail("a step");
            sum += l;
        }
        printf("mlp epoch %d: loss %.6f\n", e, sum / (double)per);
    }
    double a;
    if (call(acc, &a) < 0)
        return fail("the accuracy");
    printf("mlp held-out accuracy: %.4f (%lld rows)\n", a, n - ntr);
    tg_fn_free(step);
    tg_fn_free(acc);
    return 0;
}

int main(int argc, char **argv)
{
    const char *which = argc > 1 ? argv[1] : "both", *dir = argc > 3 ? argv[3] : "examples/data";
    int epochs = argc > 2 ? atoi(argv[2]) : 30;
    if (strcmp(which, "logreg") && strcmp(which, "mlp") && strcmp(which, "both")) {
        fprintf(stderr, "usage: train [logreg|mlp|both] [EPOCHS] [DATA-DIR]\n");
        return 2;
    }
    if (!(ctx = tg_ctx_new(&err)))
        return fail("a context");
    int rc = 0;
    if (strcmp(which, "mlp"))
        rc |= logreg(dir, epochs);
    if (!rc && strcmp(which, "logreg"))
        rc |= mlp(dir, epochs);
    tg_ctx_free(ctx);
    return rc;
}
