#!/bin/sh
# rec-maude.sh - the reference for bench/rec: Maude 3.2 on the Maude
# translations that the REC suite ships, one JSON object per benchmark:
# Maude's own CPU time of the reductions ("rewrites: N in Xms cpu"), min and
# median over several runs, its rewrite count, the peak RSS of the process
# (printing the result included), and whether its normal forms have the
# expected SHA-256 of the benchmark file.
#
#   MAUDE_REC_DIR=DIR bench/rec-maude.sh [--runs N] NAME...
#
# DIR holds the REC suite's Maude files (NAME.maude).  A benchmark that the
# suite does not have (the "scaled" variants, e.g. fibonacci32) is made at
# run time from the module its benchmark file names ("SCALED variant ...:
# rules of REC/BASE.rec"): BASE.maude with its reduce commands replaced by
# the benchmark file's eval terms.
#
# Environment: MAUDE (the maude program, default maude), TGREL_REC_DIR (the
# benchmark files; default ../shared/bench/rec beside the source tree),
# REC_TIMEOUT (seconds per run, default 1800).

runs=3
if [ "$1" = --runs ] && [ -n "$2" ]; then runs=$2; shift 2; fi
if [ $# = 0 ]; then
    echo "usage: MAUDE_REC_DIR=DIR $0 [--runs N] NAME..." >&2
    exit 2
fi

here=$(cd "$(dirname "$0")" && pwd)
rec_dir=${TGREL_REC_DIR:-${srcdir:-$here/..}/../shared/bench/rec}
maude=${MAUDE:-maude}
timeout_s=${REC_TIMEOUT:-1800}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rec-maude.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

# Byte-wise text tools: several times faster on Maude's huge result lines.
LC_ALL=C
export LC_ALL

# Maude prints the deepest normal forms (3.6 million levels) recursively.
ulimit -s unlimited 2>/dev/null || ulimit -s hard 2>/dev/null

# json NAME FIELDS: one object; FIELDS is the rest of it (",..." or "").
json() { printf '{"bench":"rec-maude","name":"%s"%s}\n' "$1" "$2"; }

# The eval terms of a benchmark file in Maude syntax: (f a b) -> f(a, b),
# with the Maude translation's names (true/false/not -> Xtrue/..., _ -> -).
maude_terms() {
    sed -n 's/^eval //p' "$1" | awk '
    function name(s) {
        if (s == "true" || s == "false" || s == "not") return "X" s
        gsub(/_/, "-", s); return s
    }
    {
        out = ""; need_comma = 0; open = 0
        gsub(/\(/, " ( "); gsub(/\)/, " ) ")
        m = split($0, t, " ")
        for (i = 1; i <= m; i++) {
            if (t[i] == "(") { open = 1; continue }
            if (t[i] == ")") { out = out ")"; need_comma = 1; continue }
            if (need_comma && substr(out, length(out)) != "(") out = out ", "
            out = out name(t[i]); need_comma = 1
            if (open) { out = out "("; need_comma = 0; open = 0 }
        }
        print out
    }'
}

# The Maude module to run for NAME into $tmp/NAME.maude; prints where it
# came from ("REC" or "scaled from BASE"), or fails.
module_for() {
    src=$MAUDE_REC_DIR/$1.maude
    if [ -f "$src" ]; then
        { echo 'set show timing on .'; cat "$src"; } >"$tmp/$1.maude"
        echo REC
        return 0
    fi
    base=$(sed -n 's/.*SCALED variant.*rules of [A-Z-]*\/\([A-Za-z0-9_]*\)\.rec.*/\1/p' \
           "$rec_dir/$1.txt" 2>/dev/null | head -n 1)
    [ -n "$base" ] && [ -f "$MAUDE_REC_DIR/$base.maude" ] || return 1
    {
        echo 'set show timing on .'
        grep -v '^reduce \|^quit' "$MAUDE_REC_DIR/$base.maude"
        maude_terms "$rec_dir/$1.txt" | sed 's/^/reduce /; s/$/ ./'
        echo quit
    } >"$tmp/$1.maude"
    echo "scaled from $base"
}

# Run Maude once on $tmp/NAME.maude: output in $tmp/out, peak RSS (KiB)
# in $tmp/rss; the exit status of the run.
run_maude() {
    rm -f "$tmp/rss"
    if [ -x /usr/bin/time ]; then
        set -- /usr/bin/time -f %M -o "$tmp/rss" "$maude" -no-banner -no-advise -no-wrap "$tmp/$1.maude"
    else
        set -- "$maude" -no-banner -no-advise -no-wrap "$tmp/$1.maude"
    fi
    if command -v timeout >/dev/null 2>&1; then
        timeout "$timeout_s" "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
    else
        "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
    fi
}

# Compare Maude's normal forms with the benchmark file's expect-sha256
# lines, in order: prints "true", "false REASON" or "null REASON".
# MAUDE_CHECK=0 skips it (it takes about 20 s per 200 MB of output).
check_results() {
    if [ "${MAUDE_CHECK:-1}" = 0 ]; then echo "null not checked (MAUDE_CHECK=0)"; return; fi
    grep '^result ' "$tmp/out" >"$tmp/results"
    sed -n 's/^expect-sha256 \([0-9a-f]*\) bytes=\([0-9]*\).*/\1 \2/p' "$rec_dir/$1.txt" \
        >"$tmp/want" 2>/dev/null
    nres=$(wc -l <"$tmp/results"); nwant=$(wc -l <"$tmp/want" 2>/dev/null || echo 0)
    if [ "$nwant" = 0 ]; then echo "null no expect-sha256 in the benchmark file"; return; fi
    if [ "$nres" != "$nwant" ]; then echo "false $nres results for $nwant expectations"; return; fi
    command -v sha256sum >/dev/null 2>&1 || { echo "null no sha256sum"; return; }
    k=0
    while read -r sha bytes; do
        k=$((k + 1))
        # Maude's f(a, b) back to (f a b), with the benchmark file's names.
        # awk moves each '(' before the name it follows, one record per '(':
        # a regular expression doing that over a 200 MB line is far slower.
        sed -n "${k}p" "$tmp/results" | sed 's/^result [^:]*: //' |
            awk 'BEGIN { RS = "("; ORS = "" }
                 NR > 1 { match(prev, /[^ ,)]*$/)
                          printf "%s(%s ", substr(prev, 1, RSTART - 1), substr(prev, RSTART) }
                 { prev = $0 }
                 END { printf "%s", prev }' |
            sed -e 's/, / /g; s/-/_/g' -e 's/\bXtrue\b/true/g; s/\bXfalse\b/false/g; s/\bXnot\b/not/g' |
            tr -d '\n' >"$tmp/nf"
        got=$(sha256sum <"$tmp/nf" | cut -c1-64); gotbytes=$(wc -c <"$tmp/nf" | tr -d ' ')
        if [ "$got" != "$sha" ] || [ "$gotbytes" != "$bytes" ]; then
            echo "false eval $k: normal form $got bytes=$gotbytes differs from the expected one"
            return
        fi
    done <"$tmp/want"
    echo true
}

# min and median of the numbers on stdin
stats() { sort -n | awk '{ v[NR] = $1 } END { if (NR) printf "%s %s", v[1], v[int(NR / 2) + 1] }'; }

bench_one() {
    name=$1
    if ! source=$(module_for "$name"); then
        json "$name" ',"maude":"no-translation","ok":null,"reason":"no Maude module for it in MAUDE_REC_DIR"'
        return 0
    fi
    : >"$tmp/cpu"; : >"$tmp/real"; : >"$tmp/rsses"; ok=true
    r=0
    while [ $r -lt "$runs" ]; do
        r=$((r + 1))
        run_maude "$name"; status=$?
        if [ $status != 0 ] || ! grep -q '^rewrites: ' "$tmp/out"; then
            [ $status = 124 ] && why="timeout after ${timeout_s}s" || why="exit status $status"
            err=$(head -c 200 "$tmp/err" "$tmp/out" | tr '\n\t"\\' '    ')
            json "$name" ",\"maude\":\"failed\",\"source\":\"$source\",\"ok\":false,\"reason\":\"$why: $err\""
            return 1
        fi
        # "rewrites: N in Xms cpu (Yms real) ..." once per reduce: sum them
        # (grep first: awk is slow on the 200 MB result lines)
        grep '^rewrites: ' "$tmp/out" |
            awk '{ rw += $2; cpu += $4 + 0; sub(/^\(/, "", $6); real += $6 + 0 }
                 END { print rw, cpu, real }' >"$tmp/sum"
        read -r rewrites cpu real <"$tmp/sum"
        echo "$cpu" >>"$tmp/cpu"; echo "$real" >>"$tmp/real"
        [ -f "$tmp/rss" ] && tail -n 1 "$tmp/rss" >>"$tmp/rsses"
        if [ $r = 1 ]; then
            verdict=$(check_results "$name")
            ok=${verdict%% *}; reason=${verdict#"$ok"}; reason=${reason# }
        fi
    done
    read -r cpu_min cpu_med <<EOF
$(stats <"$tmp/cpu")
EOF
    real_min=$(stats <"$tmp/real" | cut -d' ' -f1)
    rss=$(sort -n "$tmp/rsses" | tail -n 1)
    [ -n "$rss" ] && rss=$(awk -v k="$rss" 'BEGIN { printf "%.1f", k / 1024 }') || rss=null
    evals=$(grep -c '^rewrites: ' "$tmp/out")
    fields=",\"maude\":\"$("$maude" --version 2>/dev/null | head -n 1)\",\"source\":\"$source\""
    fields="$fields,\"runs\":$runs,\"evals\":$evals,\"cpu_ms_min\":$cpu_min,\"cpu_ms_median\":$cpu_med"
    fields="$fields,\"real_ms_min\":$real_min,\"rewrites\":$rewrites,\"max_rss_mb\":$rss,\"ok\":$ok"
    [ -n "$reason" ] && fields="$fields,\"reason\":\"$reason\""
    json "$name" "$fields"
    [ "$ok" != false ]
}

failed=0
for name in "$@"; do
    if ! command -v "$maude" >/dev/null 2>&1; then
        json "$name" ',"maude":"missing","ok":null'
        continue
    fi
    if [ -z "$MAUDE_REC_DIR" ] || [ ! -d "$MAUDE_REC_DIR" ]; then
        json "$name" ',"maude":"no-translation","ok":null,"reason":"MAUDE_REC_DIR is not a directory"'
        continue
    fi
    bench_one "$name" || failed=1
done
exit $failed
