#!/bin/sh
# cli.sh - TAP tests of the tgrel command line: where terms come from,
# error reports, exit statuses, --shared and --run-tests.
# Run by `make check` with $TGREL set; by hand, from the build directory:
# TGREL=./tgrel srcdir=.. sh ../tests/cli/cli.sh

TGREL=${TGREL:-./tgrel}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tgrel-cli.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=tests/src/tap.sh
. "${srcdir:-.}/tests/src/tap.sh"

nl='
'

t "-e prints the canonical form" 0 "(a b c)" "" \
    "$TGREL" -e '(a . (b c))'
t "-e may hold several terms, several -e are read in order" 0 "a${nl}b${nl}c" "" \
    "$TGREL" -e 'a b' -e c
printf 'x\n(y   z) ; comment\n' >"$tmp/f.tg"
t "a file argument" 0 "x${nl}(y z)" "" \
    "$TGREL" "$tmp/f.tg"
t "-e and files mix in command-line order" 0 "a${nl}x${nl}(y z)${nl}c" "" \
    "$TGREL" -e a "$tmp/f.tg" -e c
printf '1 2/4\n"s"\n' >"$tmp/in"
t "standard input when there is no argument" 0 "1${nl}1/2${nl}\"s\"" "" \
    "$TGREL"
t "'-' reads standard input" 0 "a${nl}1${nl}1/2${nl}\"s\"" "" \
    "$TGREL" -e a -
: >"$tmp/in"
t "empty standard input prints nothing" 0 "" "" \
    "$TGREL"
t "-eEXPR and --expr=EXPR" 0 "a${nl}b" "" \
    "$TGREL" -ea --expr=b

t "an error is reported as <string>:line:column: and exits 1" 1 "" "<string>:1:[0-9]*: *" \
    "$TGREL" -e '(a b'
t "reading goes on after an error" 1 "a${nl}c" "<string>:1:[0-9]*: *" \
    "$TGREL" -e 'a ) c'
printf 'ok\n\n  (a b]\nlast\n' >"$tmp/bad.tg"
t "a file with an error loads nothing; the error names the file, line and column" 1 "" "$tmp/bad.tg:3:[0-9]*: *" \
    "$TGREL" "$tmp/bad.tg"
printf ')\n' >"$tmp/in"
t "errors on standard input name <stdin>" 1 "" "<stdin>:1:1: *" \
    "$TGREL"
: >"$tmp/in"
t "a missing file is an input error" 1 "a" "*$tmp/missing.tg*" \
    "$TGREL" "$tmp/missing.tg" -e a

t "an unknown option is a usage error" 2 "" "*unknown option*" \
    "$TGREL" --bogus
t "-e without its argument is a usage error" 2 "" "*needs an argument*" \
    "$TGREL" -e
t "--run-tests without files is a usage error" 2 "" "*" \
    "$TGREL" --run-tests
t "--run-tests with -e is a usage error" 2 "" "*" \
    "$TGREL" --run-tests -e a
t "-- ends the options" 1 "" "*-e*" \
    "$TGREL" -- -e
"$TGREL" --help >"$tmp/help" 2>&1
[ $? = 0 ] && head -n 1 "$tmp/help" | grep -q '^usage: tgrel'
report $? "--help" "$tmp/help"
t "--version" 0 "tgrel 0.1.0" "" \
    "$TGREL" --version

t "--shared names repeated subterms" 0 "(f *1 *1) where *1 = (g x)" "" \
    "$TGREL" --shared -e '(f (g x) (g x))'
t "--shared without repeats prints the plain form" 0 "(f x y)" "" \
    "$TGREL" --shared -e '(f x y)'

cat >"$tmp/pass.test" <<'END'
# a comment
(a . b)
(a . b)

#;x y
y

(a
!error

x y
x
y
END
t "--run-tests: a passing file" 0 "1..4${nl}ok 1 - line 2${nl}ok 2 - line 5${nl}ok 3 - line 8${nl}ok 4 - line 11" "" \
    "$TGREL" --run-tests "$tmp/pass.test"
printf 'a\nb\n\nc\nc\n' >"$tmp/fail.test"
t "--run-tests: a failing case fails the run" 1 "1..2${nl}not ok 1 - line 1${nl}#   input: a${nl}#   (-expected +got)${nl}#   - b${nl}#   + a${nl}ok 2 - line 4${nl}# 1 of 2 cases failed" "" \
    "$TGREL" --run-tests "$tmp/fail.test"
"$TGREL" --run-tests "$tmp/none.test" >"$tmp/out" 2>&1
status=$?
case $(cat "$tmp/out") in
    "Bail out! "*"$tmp/none.test"*) got=bail ;;
    *) got=other ;;
esac
[ $status = 1 ] && [ $got = bail ]
report $? "--run-tests: an unreadable file bails out" "$tmp/out"

echo "1..$n"
[ $failed = 0 ]
