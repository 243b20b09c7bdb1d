#!/bin/sh
# survive.sh - TAP tests of sessions that survive: out of memory under a
# heap limit (--max-heap, TGREL_MAX_HEAP), runaway rules in scripts
# (--max-steps, --timeout, the default limit), machine mode's atomic
# answers, and loading files all or nothing.
# Run by `make check` with $TGREL set; by hand, from the build directory:
# TGREL=./tgrel srcdir=.. sh ../tests/cli/survive.sh

TGREL=${TGREL:-./tgrel}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tgrel-survive.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=tests/src/tap.sh
. "${srcdir:-.}/tests/src/tap.sh"

nl='
'

cat >"$tmp/loop.rules" <<'R'
(op grow (arity 1))
(op s (arity 1))
(op ping (arity 1))
(op pong (arity 1))
(rule g (grow ?x) => (grow (s ?x)))
(equilibrium e2 g)
(rule p1 (ping ?x) => (pong ?x))
(rule p2 (pong ?x) => (ping ?x))
R

# ---- out of memory -------------------------------------------------------

printf '(rewrite e2 (grow a))\n(a b)\n(normalize (grow b))\n(a c)\n' >"$tmp/in"
t "out of memory: one message per runaway entry, the later entries work" 1 "(a b)${nl}(a c)" \
    "<stdin>:1:1: out of memory${nl}<stdin>:3:1: out of memory" \
    "$TGREL" --max-heap 24M "$tmp/loop.rules" -i
printf '(defrel (growo x y) (growo `(s ,x) y))\n(run* (q) (growo (quote a) q))\n(a b)\n' >"$tmp/in"
t "a search that grows forever: out of memory, the session goes on" 1 "(a b)" \
    "<stdin>:2:1: out of memory" \
    env TGREL_MAX_HEAP=24m "$TGREL" -i
: >"$tmp/in"
t "a bad heap size is a usage error" 2 "" "*bad heap size*" \
    "$TGREL" --max-heap 12X -e a
t "a heap limit below 1 MiB is a usage error" 2 "" "*bad heap size*" \
    "$TGREL" --max-heap=1000 -e a

echo "1..$n"
[ "$failed" = 0 ]
