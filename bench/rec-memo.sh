#!/bin/sh
# rec-memo.sh - memo against plain on the REC benchmarks: each one run by
# bench/rec without memo and with it (TG_NF_MEMO), in rounds that
# alternate the two (plain, memo, plain, memo, ...), each run a process
# of its own, so that both see the same machine.  Prints every run's
# JSON object, then one "rec-memo" object per benchmark: the median
# over the rounds of each run's median CPU time, their ratio memo /
# plain (and the lowest and highest of the rounds' own ratios), each
# side's peak memory (max RSS over its processes), the rewrites, and
# whether memo keeps to its targets (doc/rules.md, "Memo"): time at most
# 1.2 times plain, peak memory at most twice plain's plus 64 MB.  A
# summary object closes the output.
#
#   bench/rec-memo.sh [REC_PROGRAM] [NAME...]
#
# REC_PROGRAM defaults to bench/rec of the build directory; without
# names, every benchmark of the REC folder and of bench/rec-extra (the
# project's own cases of many distinct calls: sieves, prime counts).
#
# How much is run: a first plain run of one repetition sizes the rest.
# A row under REC_SHORT_MS (default 50) is timed in one process by
# `rec --pair`: each repetition runs it without memo and with it, back
# to back, 200 times under REC_TINY_MS (default 1), else 20 times, and
# the ratio is the median of the repetitions' own ratios ("paired":
# true; "ratio_of_mins" is the ratio of the two minimums).  A run of some
# tens of microseconds timed in a process of its own is mostly the
# noise of that process and of the machine's load; side by side in one
# process, two runs differ by what memo does.  Its peak memories come
# from one run of each side in a process of its own.  A longer row
# runs in separate processes: under REC_LONG_MS (default 4000),
# REC_ROUNDS rounds (default 3) of one run each side; at or above it,
# one round (the first plain run and one memo run).  Every run has REC_TIMEOUT seconds
# (default 120).  A plain run that does not end in time still lets memo
# be judged: memo's time is then compared with the time allowed, a lower
# bound of plain's ("plain_ms" is that bound, "plain_timeout" true).
# TGREL_REC_DIR: the REC folder.

here=$(cd "$(dirname "$0")" && pwd)
rec=./bench/rec
case $1 in */*) rec=$1; shift ;; esac
rec_dir=${TGREL_REC_DIR:-${srcdir:-$here/..}/../shared/bench/rec}
rounds_max=${REC_ROUNDS:-3}
tiny_ms=${REC_TINY_MS:-1}
short_ms=${REC_SHORT_MS:-50}
long_ms=${REC_LONG_MS:-4000}
timeout_s=${REC_TIMEOUT:-120}
if [ $# = 0 ]; then
    for f in "$rec_dir"/*.txt "$here"/rec-extra/*.txt; do
        [ -f "$f" ] || continue
        n=$(basename "$f" .txt)
        case $n in README) continue ;; esac
        set -- "$@" "$n"
    done
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rec-memo.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
ulimit -s unlimited 2>/dev/null || ulimit -s hard 2>/dev/null
export GC_MARKERS="${GC_MARKERS:-1}"

rec_file() {
    if [ ! -f "$rec_dir/$1.txt" ] && [ -f "$here/rec-extra/$1.txt" ]; then
        echo "$here/rec-extra/$1.txt"
    else
        echo "$rec_dir/$1.txt"
    fi
}
field() { printf '%s\n' "$1" | sed -n "s/.*\"$2\":\([^,}\"]*\).*/\1/p"; }

# One run of NAME with REPS repetitions (extra options given); one JSON
# line whatever happens.
run() {
    name=$1 reps=$2; shift 2
    memo=false; [ "$1" = --memo ] && memo=true
    if command -v timeout >/dev/null 2>&1; then
        timeout "$timeout_s" "$rec" "$@" --reps "$reps" "$(rec_file "$name")" >"$tmp/out" 2>"$tmp/err"
    else
        "$rec" "$@" --reps "$reps" "$(rec_file "$name")" >"$tmp/out" 2>"$tmp/err"
    fi
    status=$?
    if grep -q '^{' "$tmp/out"; then
        grep '^{' "$tmp/out" | head -1
    elif [ $status = 124 ]; then
        echo '{"bench":"rec","name":"'"$name"'","memo":'$memo',"ok":null,"timeout":true,"reason":"timeout after '"$timeout_s"'s"}'
    else
        why=$(head -c 200 "$tmp/err" | tr '\n\t"\\' '    ')
        echo '{"bench":"rec","name":"'"$name"'","memo":'$memo',"ok":false,"reason":"exit status '"$status"': '"$why"'"}'
    fi
}

# NAME timed by rec --pair with REPS repetitions: its JSON lines (the
# plain object, the memo object, the pair's ratios), or one failed
# object.
run_pair() {
    name=$1 reps=$2
    if command -v timeout >/dev/null 2>&1; then
        timeout "$timeout_s" "$rec" --pair --reps "$reps" "$(rec_file "$name")" >"$tmp/out" 2>"$tmp/err"
    else
        "$rec" --pair --reps "$reps" "$(rec_file "$name")" >"$tmp/out" 2>"$tmp/err"
    fi
    status=$?
    if [ "$(grep -c '^{' "$tmp/out")" = 3 ]; then
        grep '^{' "$tmp/out"
    else
        why=$(head -c 200 "$tmp/err" | tr '\n\t"\\' '    ')
        echo '{"bench":"rec","name":"'"$name"'","memo":null,"ok":false,"reason":"--pair, exit status '"$status"': '"$why"'"}'
    fi
}

# The median of the numbers on standard input ("" when none).
median() {
    sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

n=0 met=0 missed=0 skipped=0 wrong=0
for name in "$@"; do
    : >"$tmp/p_ms"; : >"$tmp/m_ms"; : >"$tmp/ratios"
    p_mb=0 m_mb=0 p_to=false m_to=false bad=false p_rw= m_rw=
    first=$(run "$name" 1)
    printf '%s\n' "$first"
    t1=$(field "$first" ms_median)
    if [ "$(field "$first" ok)" = false ]; then
        bad=true
    fi
    reps=1 rounds=$rounds_max
    if [ -z "$t1" ]; then
        rounds=1
    elif awk -v t="$t1" -v s="$tiny_ms" 'BEGIN { exit !(t < s) }'; then
        reps=200
    elif awk -v t="$t1" -v s="$short_ms" 'BEGIN { exit !(t < s) }'; then
        reps=20
    elif awk -v t="$t1" -v l="$long_ms" 'BEGIN { exit !(t >= l) }'; then
        rounds=1
    fi
    r=0 paired=false pair_lo=
    if [ $reps -gt 1 ] && [ $bad = false ]; then
        # peaks and rewrites from a run of each side in its own process
        # (the sizing run is plain's), the times from one paired run
        paired=true rounds=0 r=1
        on=$(run "$name" 1 --memo)
        printf '%s\n' "$on"
        pair=$(run_pair "$name" $reps)
        printf '%s\n' "$pair"
        off=$(printf '%s\n' "$pair" | grep '"memo":false' | head -1)
        pon=$(printf '%s\n' "$pair" | grep '"memo":true' | head -1)
        pr=$(printf '%s\n' "$pair" | grep '"bench":"rec-pair"' | head -1)
        for x in "$on" "$pair"; do
            [ "$(field "$x" ok)" = false ] && bad=true
        done
        [ -n "$pr" ] && [ -n "$off" ] && [ -n "$pon" ] || bad=true
        field "$off" ms_median >>"$tmp/p_ms"; field "$pon" ms_median >>"$tmp/m_ms"
        field "$pr" ratio_median >>"$tmp/ratios"
        pair_lo=$(field "$pr" ratio_min)
        x=$(field "$first" max_rss_mb); [ -n "$x" ] && p_mb=$x
        x=$(field "$on" max_rss_mb); [ -n "$x" ] && m_mb=$x
        p_rw=$(field "$first" rewrites); m_rw=$(field "$on" rewrites)
    fi
    while [ $r -lt $rounds ] && [ $bad = false ]; do
        r=$((r + 1))
        if [ $r = 1 ] && [ $reps = 1 ]; then
            off=$first     # the sizing run is this round's plain run
        else
            off=$(run "$name" $reps)
            printf '%s\n' "$off"
        fi
        on=$(run "$name" $reps --memo)
        printf '%s\n' "$on"
        [ "$(field "$off" ok)" = false ] && bad=true
        [ "$(field "$on" ok)" = false ] && bad=true
        po=$(field "$off" ms_median); mo=$(field "$on" ms_median)
        [ -n "$po" ] || { p_to=true; po=$((timeout_s * 1000)); }
        [ -n "$mo" ] || { m_to=true; mo=$((timeout_s * 1000)); }
        echo "$po" >>"$tmp/p_ms"; echo "$mo" >>"$tmp/m_ms"
        awk -v p="$po" -v m="$mo" 'BEGIN { if (p > 0) print m / p }' >>"$tmp/ratios"
        x=$(field "$off" max_rss_mb); [ -n "$x" ] && p_mb=$(awk -v a="$p_mb" -v b="$x" 'BEGIN { print (b > a) ? b : a }')
        x=$(field "$on" max_rss_mb); [ -n "$x" ] && m_mb=$(awk -v a="$m_mb" -v b="$x" 'BEGIN { print (b > a) ? b : a }')
        x=$(field "$off" rewrites); [ -n "$x" ] && p_rw=$x
        x=$(field "$on" rewrites); [ -n "$x" ] && m_rw=$x
    done
    if [ $bad = true ]; then
        wrong=$((wrong + 1))
        echo '{"bench":"rec-memo","name":"'"$name"'","verdict":false,"reason":"a wrong normal form or a failed run"}'
        missed=$((missed + 1))
        continue
    fi
    if [ $p_to = true ] && [ $m_to = true ]; then
        skipped=$((skipped + 1))
        echo '{"bench":"rec-memo","name":"'"$name"'","verdict":null,"reason":"neither run ended in '"$timeout_s"'s"}'
        continue
    fi
    n=$((n + 1))
    p_ms=$(median <"$tmp/p_ms"); m_ms=$(median <"$tmp/m_ms")
    lo=$(sort -g "$tmp/ratios" | head -1); hi=$(sort -g "$tmp/ratios" | tail -1)
    pratio=
    if [ $paired = true ]; then
        pratio=$lo
    fi
    line=$(awk -v p="$p_ms" -v m="$m_ms" -v lo="$lo" -v hi="$hi" -v pm="$p_mb" -v mm="$m_mb" \
               -v name="$name" -v rounds="$r" -v reps="$reps" -v pto="$p_to" -v mto="$m_to" \
               -v prw="${p_rw:-null}" -v mrw="${m_rw:-null}" -v pratio="$pratio" \
               -v pmins="${pair_lo:-null}" 'BEGIN {
        ratio = (pratio != "") ? pratio : (p > 0) ? m / p : 0; lim = 2 * pm + 64
        tok = (mto == "false" && ratio <= 1.2); mok = (mto == "false" && mm <= lim)
        printf "{\"bench\":\"rec-memo\",\"name\":\"%s\",\"rounds\":%d,\"reps\":%d,", name, rounds, reps
        printf "\"plain_ms\":%.3f,\"memo_ms\":%.3f,\"ratio\":%.4g,\"ratio_lo\":%.4g,\"ratio_hi\":%.4g,", p, m, ratio, lo, hi
        printf "\"paired\":%s,\"ratio_of_mins\":%s,", (pratio != "") ? "true" : "false", pmins
        printf "\"plain_timeout\":%s,\"memo_timeout\":%s,\"plain_rewrites\":%s,\"memo_rewrites\":%s,", pto, mto, prw, mrw
        printf "\"plain_rss_mb\":%.1f,\"memo_rss_mb\":%.1f,\"rss_limit_mb\":%.1f,", pm, mm, lim
        printf "\"time_ok\":%s,\"memory_ok\":%s,\"verdict\":%s}\n", tok ? "true" : "false",
            mok ? "true" : "false", (tok && mok) ? "true" : "false" }')
    echo "$line"
    case $line in *'"verdict":true'*) met=$((met + 1)) ;; *) missed=$((missed + 1)) ;; esac
done
printf '{"bench":"rec-memo-summary","compared":%d,"met":%d,"missed":%d,"not_ended":%d,"wrong":%d}\n' \
    "$n" "$met" "$missed" "$skipped" "$wrong"
[ $wrong = 0 ]
