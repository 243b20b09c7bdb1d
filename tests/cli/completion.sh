#!/bin/sh
# completion.sh - TAP tests of the bash completion of the tgrel program
# (cli/tgrel.bash): every option tgrel --help lists completes after -,
# --color= takes its values, a script file completes after -f and
# --file=, a .rules file elsewhere, a .test file after --run-tests, and
# nothing after -e.  The completion function runs in bash with the words
# of a command line, as bash runs it at Tab.
# Run by `make check` with $TGREL set; by hand, from the build directory:
# TGREL=./tgrel srcdir=.. sh ../tests/cli/completion.sh

TGREL=${TGREL:-./tgrel}
src=${srcdir:-.}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tgrel-compl.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
n=0 failed=0

# ok DESC WANT GOT: a TAP line, WANT and GOT shown when they differ
ok() {
    n=$((n + 1))
    if [ "$2" = "$3" ]; then
        echo "ok $n - $1"
    else
        failed=$((failed + 1))
        echo "not ok $n - $1"
        printf '#   expected: %s\n#        got: %s\n' "$2" "$3"
    fi
}

# complete WORD...: the completions of the last word of the command line
# WORD..., sorted, on one line; run in $tmp.
complete() {
    (cd "$tmp" && bash -c '. "$0"; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _tgrel 2>/dev/null
        [ ${#COMPREPLY[@]} -eq 0 ] || printf "%s\n" "${COMPREPLY[@]}" | sort | tr "\n" " "' "$abs" "$@")
}
abs=$(cd "$src/cli" && pwd)/tgrel.bash

if ! command -v bash >/dev/null; then
    echo "1..1"
    echo "not ok 1 - bash, to run the completion, is on PATH"
    exit 1
fi

# the options --help lists, long and short, and those - offers
want=$("$TGREL" --help | grep -o -e '--[a-z][a-z-]*' -e ' -[a-z],' | tr -d ' ,' | sort -u | tr '\n' ' ')
got=$(complete tgrel - | tr ' ' '\n' | sed 's/=$//' | sort -u | tr '\n' ' ')
ok "after -, every option tgrel --help lists, and only those" "$want" "$got"
ok "a prefix completes the option" "--check " "$(complete tgrel --ch)"
ok "--color= takes auto, always, never" "always auto never " "$(complete tgrel --color=)"

mkdir "$tmp/scripts"
: >"$tmp/script.tgs"
: >"$tmp/alg.rules"
: >"$tmp/alg.txt"
: >"$tmp/cases.test"
ok "after -f, any file (and directories)" "script.tgs scripts/ " "$(complete tgrel -f scr)"
ok "after --file, the same" "script.tgs scripts/ " "$(complete tgrel --file scr)"
ok "in --file=, the same" "script.tgs scripts/ " "$(complete tgrel --file=scr)"
ok "a file argument: .rules files" "alg.rules " "$(complete tgrel al)"
ok "after --check too" "alg.rules " "$(complete tgrel --check al)"
ok "after --run-tests: .test files" "cases.test " "$(complete tgrel --run-tests ca)"
ok "after -e: nothing (an expression)" "" "$(complete tgrel -e al)"

echo "1..$n"
[ "$failed" = 0 ]
