#!/bin/sh
# smoke.sh - every benchmark program once, at a tiny scale
# (TGREL_BENCH_SCALE), for what it checks and not for its times: each must
# exit 0, print at least one line, only JSON objects, and no failed
# verdict ("ok":false).  The drivers run too: bench/logic-compare.sh and
# bench/rec.sh (on small REC files, when the folder is there).  A TAP
# line per program.  This is what keeps `make bench` and `make bench-rec`
# running to the end.

top_builddir=${top_builddir:-.}
srcdir=${srcdir:-.}
TGREL_BENCH_SCALE=${TGREL_BENCH_SCALE:-0.001}
export TGREL_BENCH_SCALE srcdir
b=$top_builddir/bench
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tgrel-smoke.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
n=0
failed=0

# run NAME COMMAND...: the command's output must pass the checks above
run() {
    name=$1; shift
    n=$((n + 1))
    "$@" >"$tmp/out" 2>"$tmp/err"
    status=$?
    why=
    if [ $status != 0 ]; then
        why="exit status $status"
    elif [ ! -s "$tmp/out" ]; then
        why="no output"
    elif grep -v '^{.*}$' "$tmp/out" | grep -q .; then
        why="a line that is not a JSON object"
    elif grep -q '"ok": *false' "$tmp/out"; then
        why="a failed verdict"
    fi
    if [ -z "$why" ]; then
        echo "ok $n - $name"
    else
        failed=$((failed + 1))
        echo "not ok $n - $name: $why"
        sed 's/^/#   /' "$tmp/out" "$tmp/err" | head -n 40
    fi
}

for p in terms fold relrw kernels rewrite scan poll grad scanopt state train graph; do
    if [ ! -x "$b/$p" ]; then
        echo "Bail out! $b/$p is not built"
        exit 1
    fi
done

run "bench/terms" "$b/terms"
run "bench/fold" "$b/fold"
run "bench/relrw" "$b/relrw"
run "bench/kernels" "$b/kernels"
run "bench/rewrite" "$b/rewrite"
run "bench/scan" "$b/scan"
run "bench/poll" "$b/poll"
run "bench/grad" "$b/grad"
run "bench/scanopt" "$b/scanopt"
run "bench/state" "$b/state"
run "bench/train" env TGREL_TRAIN_DATA="$srcdir/examples/data" "$b/train"
run "bench/graph" "$b/graph"
run "bench/logic-compare.sh" sh "$srcdir/bench/logic-compare.sh" "$b/logic"

# The REC driver on small files of each kind: the engine memo off and on,
# Maude when installed, the floor where it applies and where it does not.
rec_dir=${TGREL_REC_DIR:-$srcdir/../shared/bench/rec}
if [ -d "$rec_dir" ]; then
    ulimit -s unlimited 2>/dev/null || ulimit -s hard 2>/dev/null
    run "bench/rec.sh" env REC_REPS=1 REC_TIMEOUT=120 TGREL_REC_DIR="$rec_dir" \
        sh "$srcdir/bench/rec.sh" "$b/rec" factorial5 revnat100 fibonacci05 bubblesort10 check1 empty sieve100
    run "bench/rec-memo.sh" env REC_ROUNDS=1 REC_TINY_MS=0 REC_SHORT_MS=0 REC_TIMEOUT=120 TGREL_REC_DIR="$rec_dir" \
        sh "$srcdir/bench/rec-memo.sh" "$b/rec" revnat100 fibonacci05 quicksort10 sieve100
    # short rows: timed by rec --pair (20 repetitions of both)
    run "bench/rec-memo.sh (paired)" env REC_TINY_MS=0 REC_SHORT_MS=50 REC_TIMEOUT=120 TGREL_REC_DIR="$rec_dir" \
        sh "$srcdir/bench/rec-memo.sh" "$b/rec" fibonacci05 check2
else
    n=$((n + 1))
    echo "ok $n - bench/rec.sh # SKIP no REC benchmark folder ($rec_dir; set TGREL_REC_DIR)"
fi
echo "1..$n"
exit $((failed > 0))
