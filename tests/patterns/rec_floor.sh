#!/bin/sh
# rec_floor.sh - bench/rec_floor, the hand-written floor under the REC
# benchmarks that make a node per rewrite: on small revnat and factorial
# files both modes (table, alloc) verify the expected normal form and count
# the rewrites Maude reports for the file; a file with other operators is
# reported as not evaluated, as is one whose rules under the same names
# differ, and a query nested deeper than the floor goes; symbols as normal forms work; a wrong
# expected hash is caught; --pair times the engine beside the table mode
# with both verified and its figures consistent.  A TAP line per check;
# skipped when there is no REC folder.

top_builddir=${top_builddir:-.}
FLOOR=${FLOOR:-$top_builddir/bench/rec_floor}

# shellcheck source=tests/patterns/rec_common.sh
. "${srcdir:-.}/tests/patterns/rec_common.sh"
rec_setup "$FLOOR"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tgrel-floor.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
n=0
failed=0
check() {   # check DESCRIPTION COMMAND...: ok when the command succeeds
    desc=$1; shift
    n=$((n + 1))
    if "$@"; then
        echo "ok $n - $desc"
    else
        failed=$((failed + 1))
        echo "not ok $n - $desc"
        sed 's/^/#   /' "$tmp/out"
    fi
}
# verified MODE: the mode's line says ok and counts Maude's rewrites
verified() {
    line=$(grep "\"mode\":\"$1\"" "$tmp/out") || return 1
    case $line in *'"ok":true'*) ;; *) return 1 ;; esac
    [ -z "$maude" ] || case $line in *"\"rewrites\":$maude,"*) ;; *) return 1 ;; esac
}

for name in revnat100 factorial5 factorial6; do
    if [ ! -f "$dir/$name.txt" ]; then
        n=$((n + 1)); echo "ok $n - $name # SKIP no $name.txt"
        continue
    fi
    "$FLOOR" --reps 2 "$dir/$name.txt" >"$tmp/out" 2>&1
    status=$?
    maude=$(sed -n 's/.*Maude 3.2 reports \([0-9]*\) rewrites.*/\1/p' "$dir/$name.txt" | head -n 1)
    check "$name: exit status 0" test $status = 0
    check "$name: table mode verified${maude:+, $maude rewrites}" verified table
    check "$name: alloc mode verified${maude:+, $maude rewrites}" verified alloc
done

if [ -f "$dir/fibonacci05.txt" ]; then
    "$FLOOR" "$dir/fibonacci05.txt" >"$tmp/out" 2>&1
    status=$?
    check "fibonacci05: other operators are not evaluated, not failed" \
        sh -c "test $status = 0 && test \$(grep -c '\"ok\":null' '$tmp/out') = 2 &&
               grep -q 'does not evaluate' '$tmp/out'"
fi

if [ -f "$dir/factorial5.txt" ]; then
    sed 's/^expect-sha256 [0-9a-f]*/expect-sha256 0000000000000000000000000000000000000000000000000000000000000000/' \
        "$dir/factorial5.txt" >"$tmp/wrong.txt"
    "$FLOOR" "$tmp/wrong.txt" >"$tmp/out" 2>&1
    status=$?
    check "a wrong expected hash fails both modes" \
        sh -c "test $status = 1 && test \$(grep -c '\"ok\":false' '$tmp/out') = 2 &&
               grep -q 'not the expected one' '$tmp/out'"
fi
# plus_file QUERY EXPECT: a file of plus over numerals, one eval
plus_file() {
    cat <<EOT
sorts Nat
ctor d0 : -> Nat
ctor s : Nat -> Nat
op plus : Nat Nat -> Nat
vars ?N ?M : Nat
rule (plus d0 ?N) -> ?N
rule (plus (s ?N) ?M) -> (s (plus ?N ?M))
eval $1
expect $2
EOT
}
# A query with its full normal form given (expect): both modes compare the
# pointer, and a different expectation fails.
for want in "(s (s (s d0)))" "(s (s d0))"; do
    plus_file "(plus (s (s d0)) (s d0))" "$want" >"$tmp/plus.txt"
    "$FLOOR" "$tmp/plus.txt" >"$tmp/out" 2>&1
    status=$?
    if [ "$want" = "(s (s (s d0)))" ]; then
        check "plus: the expected term, 3 rewrites, in both modes" \
            sh -c "test $status = 0 && test \$(grep -c '\"rewrites\":3,\"ok\":true' '$tmp/out') = 2"
    else
        check "plus: another expected term fails both modes" \
            sh -c "test $status = 1 && test \$(grep -c 'differs from expect' '$tmp/out') = 2"
    fi
done
# Operator names alone do not make a file this program's: sorting files
# name an operator rev with other rules; the file is reported as not
# evaluated (and the run succeeds), in both of its forms.
for name in bubblesort10 quicksort10 mergesort10; do
    [ -f "$dir/$name.txt" ] || continue
    "$FLOOR" "$dir/$name.txt" >"$tmp/out" 2>&1
    status=$?
    check "$name: other rules under known names are not evaluated, not failed" \
        sh -c "test $status = 0 && test \$(grep -c '\"ok\":null' '$tmp/out') = 1 &&
               ! grep -q '\"ok\":false' '$tmp/out' && grep -q 'not those this program follows' '$tmp/out'"
done
cat >"$tmp/other.txt" <<EOT
sorts Nat
ctor d0 : -> Nat
ctor s : Nat -> Nat
op plus : Nat Nat -> Nat
vars ?N ?M : Nat
rule (plus d0 ?N) -> (s ?N)
rule (plus (s ?N) ?M) -> (s (plus ?N ?M))
eval (plus d0 d0)
expect (s d0)
EOT
"$FLOOR" "$tmp/other.txt" >"$tmp/out" 2>&1
status=$?
check "a file whose plus has one rule of its own is not evaluated" \
    sh -c "test $status = 0 && grep -q '\"ok\":null' '$tmp/out' && grep -q 'rules for plus' '$tmp/out'"
sed '/^rule (plus d0/d' "$tmp/other.txt" >"$tmp/part.txt"
"$FLOOR" "$tmp/part.txt" >"$tmp/out" 2>&1
status=$?
check "a file with only some of plus's rules is not evaluated" \
    sh -c "test $status = 0 && grep -q '\"ok\":null' '$tmp/out' && grep -q 'only some' '$tmp/out'"

# --pair: the table mode and the engine in alternated rounds in one
# process.  Both sides verified; --budget-ms 0 runs exactly --reps rounds,
# a budget the tiny files cannot fill stops at the cap of 100; the pair
# line's figures agree with each other (the ratio of the medians is the
# medians' ratio, "met" is the ratio against the target 1.1).
# pairfield NAME: a number field of the pair line
pairfield() { sed -n "s/.*\"$1\":\([-0-9.]*\)[,}].*/\1/p" "$tmp/pair"; }
paired() {     # paired ROUNDS
    grep '"bench":"rec-floor-pair"' "$tmp/out" >"$tmp/pair" && test "$(wc -l <"$tmp/pair")" = 1 &&
        grep -q '"ok":true' "$tmp/pair" && test "$(pairfield rounds)" = "$1" &&
        { [ -z "$maude" ] || test "$(pairfield floor_rewrites)" = "$maude"; } &&
        test -n "$(pairfield tgrel_rewrites)"
}
both_verified() { test "$1" = 0 && verified table && verified alloc; }
consistent() {
    fm=$(pairfield floor_ms_median) tm=$(pairfield tgrel_ms_median) r=$(pairfield ratio)
    rm=$(pairfield ratio_of_medians) rmin=$(pairfield ratio_of_mins)
    met=$(sed -n 's/.*"met":\([a-z]*\).*/\1/p' "$tmp/pair")
    [ -n "$fm" ] && [ -n "$tm" ] && [ -n "$r" ] && [ -n "$rm" ] && [ -n "$rmin" ] &&
        test "$(pairfield target)" = 1.1 &&
        awk -v fm="$fm" -v tm="$tm" -v r="$r" -v rm="$rm" -v rmin="$rmin" -v met="$met" 'BEGIN {
            e = 0.0005      # the medians are printed to 3 decimals
            lo = (tm - e) / (fm + e) - 0.0005; hi = fm > e ? (tm + e) / (fm - e) + 0.0005 : 1e9
            # so is the ratio: a printed 1.100 was 1.0995 to 1.1005, either verdict
            ok = fm > 0 && tm > 0 && r > 0 && rmin > 0 && rm >= lo && rm <= hi &&
                 (r == 1.1 || met == (r < 1.1 ? "true" : "false"))
            exit !ok }'
}
for name in revnat100 factorial5; do
    [ -f "$dir/$name.txt" ] || continue
    maude=$(sed -n 's/.*Maude 3.2 reports \([0-9]*\) rewrites.*/\1/p' "$dir/$name.txt" | head -n 1)
    "$FLOOR" --pair --budget-ms 0 --reps 3 "$dir/$name.txt" >"$tmp/out" 2>&1
    status=$?
    check "$name --pair: exit status 0, table and alloc modes verified" \
        both_verified "$status"
    check "$name --pair: the engine and the floor verified in 3 rounds" paired 3
    check "$name --pair: the medians, their ratio and the verdict agree" consistent
done
if [ -f "$dir/factorial5.txt" ]; then
    "$FLOOR" --pair --budget-ms 1000 --reps 2 "$dir/factorial5.txt" >"$tmp/out" 2>&1
    maude=
    check "--pair: rounds until the budget is spent, at most 100" paired 100
    "$FLOOR" --pair "$tmp/wrong.txt" >"$tmp/out" 2>&1
    status=$?
    check "--pair: a wrong expected hash fails the pair and both modes" \
        sh -c "test $status = 1 && test \$(grep -c '\"ok\":false' '$tmp/out') = 3 &&
               grep '\"rec-floor-pair\"' '$tmp/out' | grep -q 'not the expected one'"
fi
# not_paired FILE DESCRIPTION: --pair on a file beyond the floor runs to
# status 0, fails nothing, and its pair line says not evaluated
not_paired() {
    "$FLOOR" --pair "$1" >"$tmp/out" 2>&1
    status=$?
    check "$2" sh -c "test $status = 0 && ! grep -q '\"ok\":false' '$tmp/out' &&
                      grep '\"rec-floor-pair\"' '$tmp/out' | grep -q '\"ok\":null'"
}
if [ -f "$dir/fibonacci05.txt" ]; then
    not_paired "$dir/fibonacci05.txt" "--pair: other operators are not evaluated, not failed, and not paired"
fi
if [ -f "$dir/bubblesort10.txt" ]; then
    "$FLOOR" --pair "$dir/bubblesort10.txt" >"$tmp/out" 2>&1
    status=$?
    check "--pair: a file whose rules are not the floor's has no pair" \
        sh -c "test $status = 0 && grep -q '\"ok\":null' '$tmp/out' && ! grep -q 'rec-floor-pair' '$tmp/out'"
fi

# A query nested deeper than the floor's evaluation goes (it recurses) is
# beyond this program, not a failure: reported as not evaluated, in both
# modes and as a pair, and the run succeeds.  So is a file with none of
# its operators whose query is that deep (sieve1000 of bench/rec-extra).
deep="d0"
i=0
while [ $i -lt 1100 ]; do deep="(s $deep)"; i=$((i + 1)); done
plus_file "(plus $deep d0)" "$deep" >"$tmp/deep.txt"
"$FLOOR" "$tmp/deep.txt" >"$tmp/out" 2>&1
status=$?
check "a query deeper than the floor evaluates: not evaluated in both modes, not failed" \
    sh -c "test $status = 0 && test \$(grep -c '\"ok\":null' '$tmp/out') = 2 &&
           ! grep -q '\"ok\":false' '$tmp/out' && grep -q 'deeper than this program' '$tmp/out'"
sieve="${srcdir:-.}/bench/rec-extra/sieve1000.txt"
if [ -f "$sieve" ]; then
    not_paired "$sieve" "sieve1000 --pair: beyond the floor, not failed and not paired"
fi

# Normal forms that are symbols, not built nodes (check1 and empty give d0):
# both modes verify them.
for name in check1 empty; do
    [ -f "$dir/$name.txt" ] || continue
    "$FLOOR" "$dir/$name.txt" >"$tmp/out" 2>&1
    status=$?
    check "$name: a symbol as the normal form, both modes verified" \
        sh -c "test $status = 0 && test \$(grep -c '\"ok\":true' '$tmp/out') = 2"
done
echo "1..$n"
exit $((failed > 0))
