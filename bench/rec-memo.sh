#!/bin/sh
# rec-memo.sh - memo against plain on the REC benchmarks: each one run by
# bench/rec without memo and with it (TG_NF_MEMO), one after the other so
# that both see the same machine.  Prints the two runs' JSON objects and
# then one "rec-memo" object per benchmark: CPU times (min over the
# repetitions), their ratio memo / plain, each run's peak memory (max
# RSS of its process), and whether memo keeps to its targets (doc/rules.md,
# "Memo"): time at most 1.2 times plain, peak memory at most twice plain's
# plus 64 MB.  A summary object closes the output.
#
#   bench/rec-memo.sh [REC_PROGRAM] [NAME...]
#
# REC_PROGRAM defaults to bench/rec of the build directory; without
# names, every benchmark of the REC folder and of bench/rec-extra (the
# project's own cases of many distinct calls: sieves, prime counts).
# Environment: REC_REPS (repetitions, default 3), REC_TIMEOUT (seconds
# per run, default 300; a benchmark whose plain run does not end in time
# is reported and left out of the verdict), TGREL_REC_DIR.

here=$(cd "$(dirname "$0")" && pwd)
rec=./bench/rec
case $1 in */*) rec=$1; shift ;; esac
rec_dir=${TGREL_REC_DIR:-${srcdir:-$here/..}/../shared/bench/rec}
reps=${REC_REPS:-3}
timeout_s=${REC_TIMEOUT:-300}
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

# One run of NAME (extra options given); one JSON line whatever happens.
run() {
    name=$1; shift
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
        echo '{"bench":"rec","name":"'"$name"'","memo":'$memo',"ok":null,"reason":"timeout after '"$timeout_s"'s"}'
    else
        why=$(head -c 200 "$tmp/err" | tr '\n\t"\\' '    ')
        echo '{"bench":"rec","name":"'"$name"'","memo":'$memo',"ok":false,"reason":"exit status '"$status"': '"$why"'"}'
    fi
}

n=0 met=0 missed=0 skipped=0 wrong=0
for name in "$@"; do
    off=$(run "$name")
    on=$(run "$name" --memo)
    printf '%s\n%s\n' "$off" "$on"
    p_ms=$(field "$off" ms_min); m_ms=$(field "$on" ms_min)
    p_mb=$(field "$off" max_rss_mb); m_mb=$(field "$on" max_rss_mb)
    p_ok=$(field "$off" ok); m_ok=$(field "$on" ok)
    if [ "$p_ok" = false ] || [ "$m_ok" = false ]; then
        wrong=$((wrong + 1))
    fi
    if [ "$p_ok" != true ]; then
        skipped=$((skipped + 1))
        echo '{"bench":"rec-memo","name":"'"$name"'","verdict":null,"reason":"plain run did not end"}'
        continue
    fi
    n=$((n + 1))
    # a memo run that did not end within the time allowed misses the target
    [ -n "$m_ms" ] || m_ms=$((timeout_s * 1000))
    [ -n "$m_mb" ] || m_mb=null
    line=$(awk -v p="$p_ms" -v m="$m_ms" -v pm="$p_mb" -v mm="$m_mb" -v name="$name" 'BEGIN {
        r = (p > 0) ? m / p : 0; lim = 2 * pm + 64
        tok = (r <= 1.2); mok = (mm != "null" && mm <= lim)
        printf "{\"bench\":\"rec-memo\",\"name\":\"%s\",\"plain_ms\":%.3f,\"memo_ms\":%.3f,\"ratio\":%.3f,", name, p, m, r
        printf "\"plain_rss_mb\":%s,\"memo_rss_mb\":%s,\"rss_limit_mb\":%.1f,", pm, mm, lim
        printf "\"time_ok\":%s,\"memory_ok\":%s,\"verdict\":%s}\n", tok ? "true" : "false",
            mok ? "true" : "false", (tok && mok) ? "true" : "false" }')
    echo "$line"
    case $line in *'"verdict":true'*) met=$((met + 1)) ;; *) missed=$((missed + 1)) ;; esac
done
printf '{"bench":"rec-memo-summary","compared":%d,"met":%d,"missed":%d,"plain_not_ended":%d,"wrong":%d}\n' \
    "$n" "$met" "$missed" "$skipped" "$wrong"
[ $wrong = 0 ]
