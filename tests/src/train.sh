#!/bin/sh
# train.sh - the training examples train: examples/train (the C API) and
# examples/train_logreg.tgs / train_mlp.tgs (the REPL), in short versions
# (fewer epochs), must print a falling loss and a held-out accuracy above
# a threshold (logistic regression 0.95, the perceptron 0.85); the C
# program and the script compute the same logistic regression, loss for
# loss; and bad data files are clear errors.
# Run by `make check` with $TGREL, $srcdir and $top_builddir set.

TGREL=${TGREL:-./tgrel}
case $TGREL in /*) ;; *) TGREL=$(pwd)/$TGREL ;; esac
src=${srcdir:-.}
top=${top_builddir:-.}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tgrel-train.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
n=0
failed=0

report() {  # STATUS MESSAGE [FILE shown on failure]
    n=$((n + 1))
    if [ "$1" = 0 ]; then
        echo "ok $n - $2"
    else
        failed=$((failed + 1))
        echo "not ok $n - $2"
        [ -n "$3" ] && sed 's/^/#   /' "$3" | head -40
    fi
}

# falls FILE: the numbers (one a line) end lower than they start, the
# last below 60% of the first
falls() {
    awk 'NR == 1 { first = $1 } { last = $1 } END { exit !(NR >= 2 && last < 0.6 * first) }' "$1"
}
# decreasing FILE: every number below the one before
decreasing() {
    awk 'NR > 1 && $1 >= prev { bad = 1 } { prev = $1 } END { exit !(NR >= 2 && !bad) }' "$1"
}
# above X FILE: the last line's number is above X
above() {
    tail -n 1 "$2" | awk -v x="$1" '{ exit !($1 > x) }'
}

# ---- the C program
"$top/examples/train" logreg 20 "$src/examples/data" >"$tmp/c.out" 2>&1
st=$?
sed -n 's/^logreg epoch [0-9]*: loss //p' "$tmp/c.out" >"$tmp/c.loss"
sed -n 's/^logreg held-out accuracy: \([0-9.]*\).*/\1/p' "$tmp/c.out" >"$tmp/c.acc"
[ $st = 0 ] && [ "$(wc -l <"$tmp/c.loss")" -eq 20 ] && decreasing "$tmp/c.loss" && falls "$tmp/c.loss"
report $? "examples/train logreg: 20 epochs, each loss below the one before" "$tmp/c.out"
above 0.95 "$tmp/c.acc"
report $? "examples/train logreg: held-out accuracy above 0.95 ($(cat "$tmp/c.acc"))" "$tmp/c.out"

"$top/examples/train" mlp 8 "$src/examples/data" >"$tmp/m.out" 2>&1
st=$?
sed -n 's/^mlp epoch [0-9]*: loss //p' "$tmp/m.out" >"$tmp/m.loss"
sed -n 's/^mlp held-out accuracy: \([0-9.]*\).*/\1/p' "$tmp/m.out" >"$tmp/m.acc"
[ $st = 0 ] && [ "$(wc -l <"$tmp/m.loss")" -eq 8 ] && falls "$tmp/m.loss" && above 0.85 "$tmp/m.acc"
report $? "examples/train mlp: 8 epochs of minibatches, the loss falls, held-out accuracy above 0.85 ($(cat "$tmp/m.acc"))" "$tmp/m.out"

# ---- the scripts, shortened (fewer steps), run from the source tree
sed 's/^:repeat 30 step/:repeat 20 step/' "$src/examples/train_logreg.tgs" >"$tmp/lr.tgs"
(cd "$src" && "$TGREL" -f "$tmp/lr.tgs") >"$tmp/lr.out" 2>&1
st=$?
sed -n 's/^step [0-9]*\/20: //p' "$tmp/lr.out" >"$tmp/lr.loss"
[ $st = 0 ] && [ "$(wc -l <"$tmp/lr.loss")" -eq 20 ] && decreasing "$tmp/lr.loss" && above 0.95 "$tmp/lr.out"
report $? "train_logreg.tgs: the loss falls step by step, held-out accuracy above 0.95 ($(tail -n 1 "$tmp/lr.out"))" "$tmp/lr.out"
# the same model in C and in the script: the same losses
paste "$tmp/c.loss" "$tmp/lr.loss" | awk '{ d = $1 - $2; if (d < 0) d = -d; if (d > 1e-6) bad = 1 } END { exit !(NR == 20 && !bad) }'
report $? "the C program and the script compute the same logistic regression, epoch by epoch"

sed 's/^:repeat 120 step (every 6)/:repeat 48 step (every 6)/' "$src/examples/train_mlp.tgs" >"$tmp/mlp.tgs"
(cd "$src" && "$TGREL" -f "$tmp/mlp.tgs") >"$tmp/mlp.out" 2>&1
st=$?
sed -n 's/^step [0-9]*\/48: //p' "$tmp/mlp.out" >"$tmp/mlp.loss"
[ $st = 0 ] && [ "$(wc -l <"$tmp/mlp.loss")" -eq 8 ] && falls "$tmp/mlp.loss" && above 0.85 "$tmp/mlp.out"
report $? "train_mlp.tgs: the loss falls over 8 epochs, held-out accuracy above 0.85 ($(tail -n 1 "$tmp/mlp.out"))" "$tmp/mlp.out"

# ---- bad data: a truncated file, a file of the wrong shape
mkdir -p "$tmp/bad"
head -c 50000 "$src/examples/data/breast_cancer_X.npy" >"$tmp/bad/breast_cancer_X.npy"
cp "$src/examples/data/breast_cancer_y.npy" "$tmp/bad/"
"$top/examples/train" logreg 2 "$tmp/bad" >"$tmp/b1.out" 2>&1
st=$?
[ $st != 0 ] && grep -q "breast_cancer_X.npy: truncated data: the header announces 136560 bytes, the file has 49872" "$tmp/b1.out"
report $? "a truncated data file is an error naming it and what it lacks" "$tmp/b1.out"
cp "$src/examples/data/breast_cancer_y.npy" "$tmp/bad/breast_cancer_X.npy"
"$top/examples/train" logreg 2 "$tmp/bad" >"$tmp/b2.out" 2>&1
st=$?
[ $st != 0 ] && grep -q "breast_cancer_X.npy: expected a 2-axis float64 array" "$tmp/b2.out"
report $? "a data file of the wrong shape is an error naming it" "$tmp/b2.out"
head -c 3000 "$src/examples/data/digits_X.npy" >"$tmp/bad/d.npy"
printf ':var D float64 "%s"\n:var D float64 "%s"\n:var D float64 "%s"\n:save D "%s"\n' \
    "$src/examples/data/digits_y.npy" "$tmp/bad/d.npy" "$src/examples/data/digits_X.npy" "$tmp/d2.npy" >"$tmp/b3.tgs"
printf ':var D float64 "%s"\n:var D\n' "$tmp/bad/d.npy" >>"$tmp/b3.tgs"
"$TGREL" -f "$tmp/b3.tgs" >"$tmp/b3.out" 2>&1
grep -q "D: the file holds int64 data, not float64" "$tmp/b3.out" &&
    grep -q "d.npy: truncated data" "$tmp/b3.out" && grep -q "^D: float64 (1797 64)$" "$tmp/b3.out" &&
    cmp -s "$tmp/d2.npy" "$src/examples/data/digits_X.npy" && [ "$(tail -n 1 "$tmp/b3.out" | cut -c1-6)" = "((0.0 " ]
report $? "the REPL: a data file of another dtype or truncated is an error and the variable keeps its value; :save writes numpy's bytes back" "$tmp/b3.out"

echo "1..$n"
[ $failed = 0 ]
