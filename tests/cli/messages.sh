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
    "<stdin>:1:1: cannot load $tmp/no/such.rules: cannot open: No such file or directory" \
    "$TGREL"
printf '(op neg (arity 1))\n(rule nn (neg (neg ?x)) => ?x)\n:step (neg (neg a))\n\n:history %s/no/h.dot\n' "$tmp" >"$tmp/in"
t ":history to a file it cannot write: the system's reason" 1 "why a: 1 firing${nl}  #1 nn, pass 1, at (): (neg (neg a)) => a${nl}a" \
    "<stdin>:5:1: cannot write $tmp/no/h.dot: No such file or directory" \
    "$TGREL"
printf '(op neg (arity 1))\n(rule nn (neg (neg ?x)) => ?x)\n:step (neg (neg a))\n\n:history passes %s/h.dot\n' "$tmp" >"$tmp/in"
t ":history FILE says what it wrote" 0 "why a: 1 firing${nl}  #1 nn, pass 1, at (): (neg (neg a)) => a${nl}a${nl}wrote $tmp/h.dot: the term after each pass of the last :step" "" \
    "$TGREL"
: >"$tmp/in"
t "-f with a missing script: the system's reason" 1 "" "cannot open $tmp/none.tg: No such file or directory" \
    "$TGREL" -f "$tmp/none.tg"

echo "1..$n"
[ $failed = 0 ]
