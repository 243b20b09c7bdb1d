#!/bin/sh
# reload.sh - TAP tests of :reload and :undef in one session whose rule
# file changes between entries: a reload brings the file's new version
# in, a failed reload leaves the old one working, a second :load of a
# file is refused, an op a condition of another file calls stays (reload
# and :undef refused), :undef removes a rule, a :let name and a shared
# variable, and refuses a name that is still used.
# Run by `make check` with $TGREL set; by hand, from the build directory:
# TGREL=./tgrel srcdir=.. sh ../tests/cli/reload.sh

TGREL=${TGREL:-./tgrel}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tgrel-reload.XXXXXX") || exit 1
# shellcheck source=tests/src/tap.sh
. "${srcdir:-.}/tests/src/tap.sh"

mkfifo "$tmp/fifo" || exit 1
"$TGREL" --machine <"$tmp/fifo" >"$tmp/out" 2>&1 &
pid=$!
exec 3>"$tmp/fifo"
trap 'exec 3>&-; kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT

entries=0
# say ENTRY: type it, and wait until the session has answered it.
say() {
    printf '%s\n' "$1" >&3
    entries=$((entries + 1))
    i=0
    while [ "$(grep -c '^;;end' "$tmp/out")" -lt "$entries" ] && [ $i -lt 200 ]; do
        sleep 0.1
        i=$((i + 1))
    done
}
# answer: the last entry's answer (the lines before its ;;end).
answer() {
    awk -v k="$entries" '/^;;end/ { e++; next } e == k - 1 { print }' "$tmp/out"
}
# check DESC WANT: the last answer is WANT (a shell pattern).
check() {
    got=$(answer)
    # shellcheck disable=SC2254
    case $got in
        $2) report 0 "$1" ;;
        *) printf 'expected: %s\ngot: %s\n' "$2" "$got" >"$tmp/diag"; report 1 "$1" "$tmp/diag" ;;
    esac
}

cat >"$tmp/a.rules" <<'R'
(op add (arity 2))
(op s (arity 1))
(rule add-zero (add 0 ?x) => ?x)
(equilibrium simplify add-zero)
R
say ":load $tmp/a.rules"
check ":load" ""
say "(rewrite simplify (add 0 z))"
check "its rule rewrites" "z"
say ":load $tmp/a.rules"
check "a second :load of the file is refused" "!error*loaded already*reload*"

cat >"$tmp/a.rules" <<'R'
(op add (arity 2))
(op s (arity 1))
(rule add-zero (add 0 ?x) => (s ?x))
(rule add-one (add ?x 1) => (s ?x))
(equilibrium simplify add-zero add-one)
R
say ":reload $tmp/a.rules"
check ":reload of the changed file" ""
say "(rewrite simplify (add 0 z))"
check "the changed rule is in" "(s z)"
say "(rewrite simplify (add y 1))"
check "and the new one" "(s y)"

cat >"$tmp/a.rules" <<'R'
(op add (arity 2))
(rule add-zero (add 0 ?x) => ?x)
(rule broken (add ?x) =>)
R
say ":reload $tmp/a.rules"
check "a version with an error is refused, at its place" "!error $tmp/a.rules:3:1: *"
say "(rewrite simplify (add y 1))"
check "and the previous version still works" "(s y)"

say ":undef add-one"
check ":undef of a rule a rewriter names is refused" "!error <stdin>:*cannot undef add-one, still used: rewriter simplify*"
say ":undef simplify"
check ":undef of the rewriter" ""
say ":undef add-one"
check "then of the rule" ""
say "(normalize (add y 1))"
check "which no longer fires" "(add y 1)"
say ":let k (s 0)"
say ":undef k"
check ":undef of a :let name" ""
say ":let k"
check "which is then unbound" "!error*not bound*"
say ":var w float64 (1 2)"
say ":undef w"
check ":undef of a shared variable" ""
say ":var w"
check "which is then gone" "!error*"
say ":undef nothing-of-that-name"
check ":undef of an unknown name" "!error*nothing-of-that-name is not defined*"
# an op used only inside another file's when condition
cat >"$tmp/chk.rules" <<'R'
(op chk (arity 1))
(rule chk-a (chk a) => true)
R
cat >"$tmp/guard.rules" <<'R'
(op f (arity 1))
(rule f-guard (f ?x) => yes (when (== (chk ?x) true)))
R
say ":load $tmp/chk.rules"
say ":load $tmp/guard.rules"
say "(normalize (f a))"
check "a rule whose condition calls another file's op" "yes"
printf '(op g (arity 1))\n' >"$tmp/chk.rules"
say ":reload $tmp/chk.rules"
check "a reload that drops the op its condition calls is refused, naming the rule" \
    "!error*cannot reload*f-guard ($tmp/guard.rules:2:1) uses op chk, no longer declared*nothing changed*"
say "(normalize (f a))"
check "and the condition still holds" "yes"
say ":undef chk-a"
say ":undef chk"
check ":undef of the op is refused, naming the rule" "!error <stdin>:*cannot undef chk, still used: rule f-guard*"
say ":undef f-guard"
say ":undef chk"
check "once the rule is gone, the op goes" ""

# a file an entry included: a failed include leaves it unread, :reload reads it
cat >"$tmp/inc.rules" <<'R'
(op p (arity 1))
(rule p-a (p a) =>)
R
say "(include \"$tmp/inc.rules\")"
check "an entry's include of a bad file fails" "!error $tmp/inc.rules:2:1: *"
printf '(op p (arity 1))\n(rule p-a (p a) => one)\n' >"$tmp/inc.rules"
say "(include \"$tmp/inc.rules\")"
check "the same include once the file is fixed" ""
say "(normalize (p a))"
check "reads it" "one"
printf '(op p (arity 1))\n(rule p-a (p a) => two)\n' >"$tmp/inc.rules"
say ":reload $tmp/inc.rules"
check ":reload of the file the entry included" ""
say "(normalize (p a))"
check "reads its new version" "two"

say ":help reload"
check ":help reload" ":reload FILE*example: :reload*"
say ":help undef"
check ":help undef" ":undef NAME*example: :undef*"

echo "1..$n"
[ "$failed" = 0 ]
