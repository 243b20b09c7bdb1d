#!/bin/sh
# varnames.sh - a runtime logic variable's own name (?q.3: its name and
# the number the search gave it) never reaches the user: every path that
# prints a term holding variables made by a search (answers, tabled
# answers, errors of the search, relations used as rewrites and as
# conditions, traces, provenance, :step) prints them as answers do, _.0,
# _.1, ..., or by the user's own names.
# Run by `make check` with $TGREL set; by hand, from the build directory:
# TGREL=./tgrel srcdir=.. sh ../tests/cli/varnames.sh

TGREL=${TGREL:-./tgrel}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tgrel-varnames.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=tests/src/tap.sh
. "${srcdir:-.}/tests/src/tap.sh"

cat >"$tmp/in" <<'E'
(op f (arity 1))
(op g (arity 1))
(op h (arity 1))
(defrel (shift in out) (fresh (z) (== in `(g ,z)) (== out `(f ,z))))
(defrel (loose in out) (fresh (z) (== out `(f ,z))))
(equilibrium by-shift shift)
(equilibrium by-loose loose)
(trace on)
(rewrite by-shift (g a))
(rewrite by-loose (g a))
(trace off)
(rule by-cond (h ?x) => (g ?y) (when (loose ?x ?y)))
(normalize (h b))
(run* (q) (fresh (r) (r q)))
(run* (q) (fresh (x) (== q x) (x q)))
(run 2 (q) (fresh (x y) (== q `(,x ,y))))
(run 1 (q) (fresh (x) (=/= q x) (symbolo x)))
(tabled (tl x) (fresh (y) (== x `(k ,y))))
(run* (q) (tl q))
(run* (q) (fresh (x) (tl x) (x q)))
(run* (q) (fresh (x) (tl x) (== q `(,x ,x))))
(provenance on)
(rewrite by-shift (g c))
(why (f c))
(provenance off)
E
"$TGREL" -i <"$tmp/in" >"$tmp/out" 2>&1
# something ran: the answers, the errors and the chains are there
grep -q '_\.0' "$tmp/out"
report $? "the output shows variables, as _.N" "$tmp/out"
grep -q 'not a relation' "$tmp/out"
report $? "the search's errors about variables are there" "$tmp/out"
grep -q 'not ground' "$tmp/out"
report $? "the rewrites leaving variables are errors" "$tmp/out"
# a variable printed with its number: ?name.N (the name may be _.0 itself)
if grep -n '?[^ ()]*\.[0-9]' "$tmp/out" >"$tmp/bad"; then
    report 1 "no runtime variable's own name is printed" "$tmp/bad"
else
    report 0 "no runtime variable's own name is printed"
fi

# the same through :step, whose firings show the terms before and after
printf '(op f (arity 1))\n(op g (arity 1))\n(defrel (shift in out) (fresh (z) (== in `(g ,z)) (== out `(f ,z))))\n(equilibrium by-shift shift)\n:step by-shift (g (g a))\n' >"$tmp/in"
"$TGREL" -i <"$tmp/in" >"$tmp/out" 2>&1
if grep -n '?[^ ()]*\.[0-9]' "$tmp/out" >"$tmp/bad"; then
    report 1 ":step prints no runtime variable's own name" "$tmp/bad"
else
    report 0 ":step prints no runtime variable's own name"
fi

echo "1..$n"
[ "$failed" = 0 ]
