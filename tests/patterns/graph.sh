#!/bin/sh
# graph.sh - the graph-rewriting benchmark at a small size, for its checks
# (not its times): every rewriter gives the hand-written pass's term, the
# C rewriter's database the rule's, hash-consing merges the duplicated
# graph to the distinct nodes a merge pass finds; and the options that
# add a database (--rules, --with, --query) work; --lib runs the shipped
# library's canonicalize on the graph and leaves no site.

top_builddir=${top_builddir:-.}
srcdir=${srcdir:-.}
GRAPH=${GRAPH:-$top_builddir/bench/graph}
if [ ! -x "$GRAPH" ]; then
    echo "Bail out! $GRAPH is not built"
    exit 1
fi
echo "1..10"
failed=0
check() {   # check N DESC CONDITION-COMMAND...
    n=$1 desc=$2
    shift 2
    if "$@"; then
        echo "ok $n - $desc"
    else
        echo "not ok $n - $desc"
        failed=1
    fi
}

out=$("$GRAPH" --nodes 4000 --merge-nodes 4400 --reps 1 2>&1)
rc=$?
check 1 "runs (exit $rc)" test $rc -eq 0
check 2 "six rewriter rows and the reference" \
    test "$(echo "$out" | grep -c '"bench":"mul_div_cancel"')" -eq 7
check 3 "every variant gives the reference's term" \
    test "$(echo "$out" | grep -c '"same_as_ref":true\|"same_as_rule_db":true')" -eq 6
check 4 "the merge row: distinct nodes as a merge pass finds" \
    test "$(echo "$out" | grep -c '"distinct_equal":true')" -eq 1
check 5 "the database has 61 rules" \
    test "$(echo "$out" | grep -c '"rules":61')" -eq 2

extra=$srcdir/tests/patterns/data/graph-extra.rules
out=$("$GRAPH" --nodes 3000 --merge-nodes 1000 --reps 1 --rules "$extra" \
      --with extra-db --query '(exclude nothing-has-this)' 2>&1)
rc=$?
check 6 "with an extra database (exit $rc)" test $rc -eq 0
check 7 "its rules are in the database" \
    test "$(echo "$out" | grep -c '"rules":62.*"same_as_rule_db":true')" -eq 2
out=$("$GRAPH" --nodes 3000 --merge-nodes 1000 --reps 1 --rules "$extra" --with no-such-rule 2>&1)
check 8 "an unknown name is an error naming it" \
    sh -c 'echo "$1" | grep -q "unknown rule, rewriter or relation no-such-rule"' x "$out"
out=$(TGREL_RULES_PATH=$srcdir/patterns/lib "$GRAPH" --nodes 3000 --reps 1 \
      --lib "$srcdir/patterns/lib/all.rules" 2>&1)
rc=$?
check 9 "--lib: the shipped canonicalize database on the graph (exit $rc)" test $rc -eq 0
check 10 "--lib: no x*y/y site is left, every rule of the database ran" \
    sh -c 'echo "$1" | grep -q "\"sites_left\":0" && ! echo "$1" | grep -q "\"rules\":0,"' x "$out"
[ $failed -eq 0 ] || echo "$out" | sed 's/^/# /'
exit $failed
