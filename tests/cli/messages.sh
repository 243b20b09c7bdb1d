#!/bin/sh
# messages.sh - TAP tests of what the tgrel program says when something is
# wrong: errors that point at the right place, name the file and the
# system's reason, and say what to do; and input it should take as it is
# (a UTF-8 byte-order mark, a library file loaded alone).
# Run by `make check` with $TGREL set; by hand, from the build directory:
# TGREL=./tgrel srcdir=.. sh ../tests/cli/messages.sh

TGREL=${TGREL:-./tgrel}
src=$(cd "${srcdir:-.}" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tgrel-msg.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=tests/src/tap.sh
. "$src/tests/src/tap.sh"

nl='
'

# ---- files -------------------------------------------------------------

printf '\357\273\277(op foo (arity 1))\n(rule r (foo ?x) => ?x)\n(normalize (foo a))\n' >"$tmp/bom.rules"
t "a UTF-8 byte-order mark at the start of a file is skipped" 0 "a" "" \
    "$TGREL" "$tmp/bom.rules"
printf '\357\273\277(op foo (arity 1))\n(rule r (foo ?x) => ?y)\n' >"$tmp/bom2.rules"
t "after a byte-order mark, columns count from after it" 1 "" "$tmp/bom2.rules:2:21: ?y is not bound*" \
    "$TGREL" --check "$tmp/bom2.rules"

t "an include not found says where it looked and names TGREL_RULES_PATH" 1 "" \
    "<string>:1:1: cannot include nope.rules: not found as nope.rules, nor in TGREL_RULES_PATH ($tmp/a:$tmp/b), nor in the installed rule library (*)" \
    env TGREL_RULES_PATH="$tmp/a:$tmp/b" "$TGREL" -e '(include "nope.rules")'
t "... and says when TGREL_RULES_PATH is not set" 1 "" \
    "*nor in TGREL_RULES_PATH (not set)*" \
    env -u TGREL_RULES_PATH "$TGREL" -e '(include "nope.rules")'

for f in "$src"/patterns/lib/*.rules; do
    t "library file $(basename "$f") checks alone" 0 "" "" \
        env -u TGREL_RULES_PATH "$TGREL" --check "$f"
done
printf '(include "%s/patterns/lib/fold.rules")\n(include "%s/patterns/lib/canonicalize.rules")\n' "$src" "$src" >"$tmp/twice.rules"
t "a file included twice in one load is read once" 0 "x" "" \
    "$TGREL" -e "(include \"$tmp/twice.rules\")" -e '(rewrite canonicalize (add 0 x))'

# ---- the REPL's files ------------------------------------------------------

printf ':load %s/no/such.rules\n' "$tmp" >"$tmp/in"
t ":load of a missing file: where the :load was typed, and why" 1 "" \
    "<stdin>:1:7: cannot load $tmp/no/such.rules: cannot open: No such file or directory" \
    "$TGREL"
printf '(op neg (arity 1))\n(rule nn (neg (neg ?x)) => ?x)\n:step (neg (neg a))\n\n:history %s/no/h.dot\n' "$tmp" >"$tmp/in"
t ":history to a file it cannot write: the system's reason" 1 "why a: 1 firing${nl}  #1 nn, pass 1, at (): (neg (neg a)) => a${nl}a" \
    "<stdin>:5:10: cannot write $tmp/no/h.dot: No such file or directory" \
    "$TGREL"
printf '(op neg (arity 1))\n(rule nn (neg (neg ?x)) => ?x)\n:step (neg (neg a))\n\n:history passes %s/h.dot\n' "$tmp" >"$tmp/in"
t ":history FILE says what it wrote" 0 "why a: 1 firing${nl}  #1 nn, pass 1, at (): (neg (neg a)) => a${nl}a${nl}wrote $tmp/h.dot: the term after each pass of the last :step" "" \
    "$TGREL"
: >"$tmp/in"
t "-f with a missing script: the system's reason" 1 "" "cannot open $tmp/none.tg: No such file or directory" \
    "$TGREL" -f "$tmp/none.tg"

# ---- errors at the right place ------------------------------------------------

printf '(defrel (bad x)\n  (== x 1)\n  (nosuch x))\n' >"$tmp/rel.rules"
printf ':load %s\n(run 1 (q) (bad q))\n' "$tmp/rel.rules" >"$tmp/in"
t "an undefined relation called in a defrel body of a file: the call in the body" 1 "" \
    "$tmp/rel.rules:3:3: undefined relation nosuch" "$TGREL"
printf '(defrel (r2 x)\n  (r2 x x))\n(run 1 (q) (r2 q))\n' >"$tmp/in"
t "a wrong number of arguments in a defrel body typed: the call in the body" 1 "" \
    "<stdin>:2:3: r2 takes 1 argument, called with 2" "$TGREL"
printf '(op f (arity 1))\n(op g (arity 1))\n(rule r (f ?x) => (g ?x))\n:rewrite (reverse r) (g a)\n' >"$tmp/in"
t ":rewrite (reverse RULE) of a one-way rule: the entry's line and column" 1 "" \
    "<stdin>:4:10: (reverse r): r is not a <=> rule" "$TGREL"

# ---- :eval's bindings and inputs ----------------------------------------------

x2='(add (input x float64 (2)) 1)'
printf ':eval %s (x (1 2)) (y (3 4))\n' "$x2" >"$tmp/in"
t ":eval: a binding of a name the term has no input of, at the binding" 1 "" "<stdin>:1:47: the term has no input y" "$TGREL"
printf ':eval %s (x (1 2)) (x (3 4))\n' "$x2" >"$tmp/in"
t ":eval: a name given twice" 1 "" "<stdin>:1:47: input x given twice" "$TGREL"
printf ':eval %s (x (1 2)) junk\n' "$x2" >"$tmp/in"
t ":eval: trailing junk" 1 "" "<stdin>:1:47: expected (NAME VALUE) after the term, found junk" "$TGREL"
printf ':eval (add (input x float64 (2)) (input x float32 (2))) (x (1 2))\n' >"$tmp/in"
t ":eval: two inputs of one name but different types" 1 "" \
    "<stdin>:1:7: two inputs of one name differ: (input x float64 (2)) and (input x float32 (2))*" "$TGREL"
printf ':eval %s (x data/a.npy)\n' "$x2" >"$tmp/in"
t ":eval: an unquoted .npy path says to quote it" 1 "" \
    '<stdin>:1:37: input x: data/a.npy is a symbol: write the file name as a string, "data/a.npy"' "$TGREL"
printf ':eval (add (input x float16 (2)) 1) (x (1 2))\n' >"$tmp/in"
t ":eval: an unknown dtype lists the dtypes" 1 "" \
    "<stdin>:1:7: input x: unknown dtype float16 (the dtypes are bool, int32, int64, float32 and float64)" "$TGREL"
printf ':eval (scan (lambda (a) ((add a (input z float64 ())))) (steps 3) (sequences) (outputs (sitsot 0.0)) (non_sequences)) (z 1)\n' >"$tmp/in"
t ":eval: an input inside a scan's lambda says to pass it as a non-sequence" 1 "" \
    "<stdin>:1:1: kernels: in (input z float64 ()): an input inside a scan's lambda: pass it to the scan as a non-sequence*" "$TGREL"

# float32 results print in float32's shortest spelling that reads back
# as the same float32; read back, they print the same
printf ':eval (mul (input x float32 (3)) 0.2) (x (3 1 16777217))\n:eval (true_div (input x float32 (2)) 3) (x (1 10))\n' >"$tmp/in"
t "float32 results print in float32's shortest round-trip form" 0 "(0.6 0.2 3355443.2)${nl}(0.33333334 3.3333333)" "" "$TGREL"
printf ':eval (mul (input x float32 (3)) 1) (x (0.6 0.2 3355443.2))\n:eval (mul (input x float32 (2)) 1) (x (0.33333334 3.3333333))\n' >"$tmp/in"
t "... and read back as float32 they print the same" 0 "(0.6 0.2 3355443.2)${nl}(0.33333334 3.3333333)" "" "$TGREL"

echo "1..$n"
[ $failed = 0 ]
