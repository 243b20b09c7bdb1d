#!/bin/sh
# deep.sh - huge inputs piped to tgrel must print back whole: a term nested
# a million levels deep, a million quotes deep, and a list of a million
# elements (the reader and printer must not recurse or cap the input size).

TGREL=${TGREL:-./tgrel}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tgrel-deep.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
N=1000000
n=0
failed=0

# roundtrip DESC AWK-PROGRAM: the generated text must print back unchanged.
roundtrip() {
    n=$((n + 1))
    awk -v n=$N "BEGIN { $2 }" >"$tmp/in"
    "$TGREL" <"$tmp/in" >"$tmp/out" 2>"$tmp/err"
    status=$?
    if [ $status = 0 ] && cmp -s "$tmp/in" "$tmp/out"; then
        echo "ok $n - $1"
    else
        failed=$((failed + 1))
        echo "not ok $n - $1"
        echo "#   exit status $status; input $(wc -c <"$tmp/in") bytes, output $(wc -c <"$tmp/out") bytes"
        head -c 300 "$tmp/err" | sed 's/^/#   stderr: /'
    fi
}

roundtrip "a term nested $N deep" \
    'for (i = 0; i < n; i++) printf "("; printf "x"; for (i = 0; i < n; i++) printf ")"; printf "\n"'
roundtrip "a quote nested $N deep" \
    'for (i = 0; i < n; i++) printf "'"'"'"; printf "x\n"'
roundtrip "a list of $N elements" \
    'printf "(0"; for (i = 1; i < n; i++) printf " %d", i % 1000; printf ")\n"'

echo "1..$n"
[ $failed = 0 ]
