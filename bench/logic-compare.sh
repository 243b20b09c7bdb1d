#!/bin/sh
# logic-compare.sh LOGIC_BENCH - run the logic-core benchmarks of
# bench/logic and, when faster-miniKanren is at hand, the same queries in
# faster-miniKanren on Chez Scheme in the same run; prints each JSON line
# and then one ratio line per benchmark (speedup = fmk min / tgrel min,
# on the minimum CPU-bound wall time over the repetitions).
#
# faster-miniKanren is used when FMK_DIR names its source directory and
# `scheme` (Debian package chezscheme) is installed; its driver is
# ../shared/bench/minikanren/bench.scm beside the project (MK_BENCH
# overrides).  REPS (default 5) sets the repetitions; TGREL_BENCH_SCALE
# below 1 scales the sizes down for a quick check.
set -u
bin=${1:?usage: logic-compare.sh path/to/bench/logic}
srcdir=${srcdir:-.}
export srcdir
reps=${REPS:-5}
mk=${MK_BENCH:-$srcdir/../shared/bench/minikanren/bench.scm}
use_fmk=0
if [ -n "${FMK_DIR:-}" ] && command -v scheme >/dev/null 2>&1 && [ -f "$mk" ]; then
    use_fmk=1
else
    echo '{"note": "faster-miniKanren not run: set FMK_DIR and install chezscheme for the same-run reference"}'
fi

field() {   # field NAME JSON -> the number after "NAME":
    printf '%s\n' "$2" | sed -n "s/.*\"$1\": \([0-9.]*\).*/\1/p"
}

# TGREL_BENCH_SCALE below 1 (the test suite's run of every benchmark):
# each size scaled down (2 at least), one repetition.
scale=${TGREL_BENCH_SCALE:-1}
small=$(awk -v s="$scale" 'BEGIN { print (s + 0 > 0 && s + 0 < 1) ? 1 : 0 }')
[ "$small" = 1 ] && reps=1

while read -r name size; do
    [ "$small" = 1 ] && size=$(awk -v n="$size" -v s="$scale" 'BEGIN { v = int(n * s); print v < 2 ? 2 : v }')
    t=$("$bin" "$name" "$size" "$reps" 20000) || exit 1
    echo "$t"
    [ "$use_fmk" = 1 ] || continue
    f=$(FMK_DIR="$FMK_DIR" scheme --script "$mk" "$name" "$size" "$reps" 20000) || exit 1
    echo "$f"
    tm=$(field min_ms "$t"); fm=$(field min_ms "$f")
    ta=$(field answers "$t"); fa=$(field answers "$f")
    awk -v n="$name" -v s="$size" -v t="$tm" -v f="$fm" -v ta="$ta" -v fa="$fa" 'BEGIN {
        printf "{\"ratio\": \"%s\", \"size\": %s, \"tgrel_min_ms\": %s, \"fmk_min_ms\": %s, \"speedup\": %.2f, \"same_answer_count\": %s}\n",
               n, s, t, f, (t > 0 ? f / t : 0), (ta == fa ? "true" : "false") }'
done <<EOF_TABLE
appendo-back 1000
appendo-fwd 10000
membero-all 10000
facts-grandparent-conde 1000
pluso-split 1024
mulo-factor 720
neq-alldiff 7
unify-ground 16
unify-vars 16
quines 10
EOF_TABLE
