#!/bin/sh
# rec.sh - the rewriting engine on the small REC benchmarks: every
# correctness test of the suite and the small sizes of the others (each
# well under a second in Maude), memo off and on; a TAP line per run, ok
# when bench/rec verified every normal form.  The benchmark files come from
# $TGREL_REC_DIR, else ../shared/bench/rec beside the source tree; the
# whole test is skipped when there are none.  The project's own cases of
# many distinct calls (bench/rec-extra: a sieve, a prime count, a sum of
# three Peano numbers), which memo drops ops on, are run alike.

top_builddir=${top_builddir:-.}
REC=${REC:-$top_builddir/bench/rec}
limit=${REC_TEST_TIMEOUT:-120}

# shellcheck source=tests/patterns/rec_common.sh
. "${srcdir:-.}/tests/patterns/rec_common.sh"
rec_setup "$REC"

names="calls check1 check2 confluence empty garbagecollection order revelt
    searchinconditions soundnessofparallelengines tautologyhard tricky
    fibonacci05 fibonacci18 factorial5 factorial6 factorial7 bubblesort10
    bubblesort20 bubblesort100 quicksort10 quicksort100 mergesort10 mergesort100
    revnat100 benchexpr10 benchsym10 benchtree10 natlist oddeven merge closure
    dart fibfree logic3 missionaries2 missionaries3
    sieve100 primecount100 add3"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tgrel-rec.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
n=0
failed=0
for name in $names; do
    for memo in "" --memo; do
        n=$((n + 1))
        desc="$name${memo:+ (memo)}"
        file=$dir/$name.txt
        [ -f "$file" ] || file=${srcdir:-.}/bench/rec-extra/$name.txt
        if [ ! -f "$file" ]; then
            echo "ok $n - $desc # SKIP no $name.txt"
            continue
        fi
        if command -v timeout >/dev/null 2>&1; then
            timeout "$limit" "$REC" $memo "$file" >"$tmp/out" 2>"$tmp/err"
        else
            "$REC" $memo "$file" >"$tmp/out" 2>"$tmp/err"
        fi
        status=$?
        if [ $status = 0 ] && grep -q '"ok":true' "$tmp/out"; then
            echo "ok $n - $desc"
        else
            failed=$((failed + 1))
            echo "not ok $n - $desc"
            [ $status = 124 ] && echo "#   no answer within ${limit}s"
            echo "#   exit status $status"
            head -c 600 "$tmp/out" | sed 's/^/#   /'
            head -c 300 "$tmp/err" | sed 's/^/#   stderr: /'
        fi
    done
done
echo "1..$n"
[ $failed = 0 ]
