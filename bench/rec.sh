#!/bin/sh
# rec.sh - the REC benchmarks on tgrel (bench/rec, memo off and on) and on
# Maude 3.2 (bench/rec-maude.sh), one benchmark after the other so that both
# see the same machine; prints each run's JSON object and then, per
# benchmark, one "rec-compare" object with the time ratios tgrel / Maude
# (CPU ms, min over the repetitions; below 1 means tgrel is faster).  The
# times compare the same query to the same verified normal form, not
# rewrites/s: the engines do different amounts of work (see the README of
# the benchmark folder).  Where bench/rec_floor knows the operators
# (revnat, factorial) its figures follow: the same evaluation in
# hand-written C over the term table and with no table, and
# "floor_ratio", the former over Maude's time.  The table mode runs as
# `rec_floor --pair`: in alternated rounds with the engine (memo off) in
# one process, each run after a full collection in a heap both have grown,
# so that the two times compared see the same machine and the same heap;
# its "rec-floor-pair" line gives both medians and the median of the
# rounds' ratios engine / floor beside the target (1.1, "met").
#
#   bench/rec.sh [REC_PROGRAM] [NAME...]
#
# REC_PROGRAM defaults to bench/rec of the build directory; the default
# names are the README's table and two of bench/rec-extra (a NAME found
# only there is taken from there).  Works without Maude (reported "missing")
# and without MAUDE_REC_DIR (reported "no-translation").
# Environment: REC_REPS (repetitions, default 3), REC_TIMEOUT (seconds per
# run, default 1800), TGREL_REC_DIR, MAUDE_REC_DIR, MAUDE, REC_FLOOR (the
# floor program; default rec_floor beside REC_PROGRAM), REC_FLOOR_MS (the
# pairs' rounds: at least REC_REPS, and more until each side has run this
# many CPU ms; default 2000, scaled by TGREL_BENCH_SCALE).

here=$(cd "$(dirname "$0")" && pwd)
rec=./bench/rec
case $1 in */*) rec=$1; shift ;; esac
[ $# = 0 ] && set -- fib32 fibonacci32 factorial10 binarysearch benchexpr20 benchsym22 \
    benchtree20 evalexpr bubblesort1000 quicksort1000 mergesort10000 revnat10000 \
    sieve1000 primecount600 add3
rec_dir=${TGREL_REC_DIR:-${srcdir:-$here/..}/../shared/bench/rec}
reps=${REC_REPS:-3}
timeout_s=${REC_TIMEOUT:-1800}
export TGREL_REC_DIR="$rec_dir" REC_TIMEOUT="$timeout_s"

# The file of benchmark NAME: in the REC folder, else among the project's
# own (bench/rec-extra: cases built for the memo policy, such as sieves).
rec_file() {
    if [ ! -f "$rec_dir/$1.txt" ] && [ -f "$here/rec-extra/$1.txt" ]; then
        echo "$here/rec-extra/$1.txt"
    else
        echo "$rec_dir/$1.txt"
    fi
}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rec.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

# Deep normal forms: let nothing die for want of stack.
ulimit -s unlimited 2>/dev/null || ulimit -s hard 2>/dev/null

# One collector mark thread unless the caller chose: the times compared
# are CPU times and Maude runs on one thread, and with two markers the
# collector's parallel marking of these small heaps costs more CPU time
# (about 5% on revnat10000) for less wall time.  bench/rec reports which
# ("gc_parallel_mark").
export GC_MARKERS="${GC_MARKERS:-1}"

# The hand-written floor beside the engine (bench/rec_floor): for the
# benchmarks whose operators it knows (revnat, factorial), what the same
# evaluation costs with no engine, over the term table (paired with the
# engine in one process) and with no table.
floor=${REC_FLOOR:-$(dirname "$rec")/rec_floor}
floor_budget=${REC_FLOOR_MS:+--budget-ms $REC_FLOOR_MS}

# field JSON KEY: the value of a flat number/boolean/null field, or empty.
field() { printf '%s\n' "$1" | sed -n "s/.*\"$2\":\([^,}\"]*\).*/\1/p"; }

# tgrel on NAME with the extra options given; prints one JSON line even
# when the program is missing, crashes or runs out of time.
run_tgrel() {
    name=$1; shift
    memo=false; [ "$1" = --memo ] && memo=true
    head='{"bench":"rec","name":"'$name'","memo":'$memo
    if [ ! -x "$rec" ]; then
        echo "$head"',"ok":null,"reason":"'"$rec"' not built (the rewriting engine is needed)"}'
        return
    fi
    if command -v timeout >/dev/null 2>&1; then
        timeout "$timeout_s" "$rec" "$@" --reps "$reps" "$(rec_file "$name")" >"$tmp/out" 2>"$tmp/err"
    else
        "$rec" "$@" --reps "$reps" "$(rec_file "$name")" >"$tmp/out" 2>"$tmp/err"
    fi
    status=$?
    if grep -q '^{' "$tmp/out"; then
        grep '^{' "$tmp/out"
    elif [ $status = 124 ]; then
        echo "$head"',"ok":false,"reason":"timeout after '"$timeout_s"'s"}'
    else
        why=$(head -c 200 "$tmp/err" | tr '\n\t"\\' '    ')
        echo "$head"',"ok":false,"reason":"exit status '"$status"': '"$why"'"}'
    fi
}

# a / b with 3 decimals, or null when either is missing or b is 0
ratio() {
    awk -v a="$1" -v b="$2" 'BEGIN {
        if (a == "" || b == "" || b + 0 == 0) print "null"; else printf "%.3f", a / b }'
}

failed=0
for name in "$@"; do
    off=$(run_tgrel "$name")
    on=$(run_tgrel "$name" --memo)
    maude=$(sh "$here/rec-maude.sh" --runs "$reps" "$name")
    printf '%s\n%s\n%s\n' "$off" "$on" "$maude"
    f_ms=; fa_ms=
    if [ -x "$floor" ]; then
        # shellcheck disable=SC2086 # floor_budget: an option and its value
        "$floor" --pair $floor_budget --reps "$reps" "$(rec_file "$name")" >"$tmp/floor" 2>"$tmp/floor-err"
        fstatus=$?
        grep -v '"ok":null' "$tmp/floor"
        grep -q '"ok":false' "$tmp/floor" && failed=1
        if [ $fstatus != 0 ] && ! grep -q '"ok":false' "$tmp/floor"; then
            # a crash or a failure the program did not report: say so
            why=$(head -c 200 "$tmp/floor-err" | tr '\n\t"\\' '    ')
            echo '{"bench":"rec-floor","name":"'"$name"'","ok":false,"reason":"exit status '"$fstatus"': '"$why"'"}'
            failed=1
        fi
        f_ms=$(field "$(grep '"mode":"table".*"ok":true' "$tmp/floor")" ms_min)
        fa_ms=$(field "$(grep '"mode":"alloc".*"ok":true' "$tmp/floor")" ms_min)
    fi
    t_ms=$(field "$off" ms_min); tm_ms=$(field "$on" ms_min); m_ms=$(field "$maude" cpu_ms_min)
    t_ok=$(field "$off" ok); tm_ok=$(field "$on" ok); m_ok=$(field "$maude" ok)
    case "$t_ok $tm_ok $m_ok" in *false*) failed=1 ;; esac
    printf '{"bench":"rec-compare","name":"%s","tgrel_ms":%s,"tgrel_memo_ms":%s,"maude_ms":%s' \
        "$name" "${t_ms:-null}" "${tm_ms:-null}" "${m_ms:-null}"
    printf ',"ratio":%s,"ratio_memo":%s,"tgrel_ok":%s,"tgrel_memo_ok":%s,"maude_ok":%s' \
        "$(ratio "$t_ms" "$m_ms")" "$(ratio "$tm_ms" "$m_ms")" \
        "${t_ok:-null}" "${tm_ok:-null}" "${m_ok:-null}"
    [ -n "$f_ms" ] && printf ',"floor_table_ms":%s,"floor_alloc_ms":%s,"floor_ratio":%s' \
        "$f_ms" "${fa_ms:-null}" "$(ratio "$f_ms" "$m_ms")"
    printf '}\n'
done
exit $failed
