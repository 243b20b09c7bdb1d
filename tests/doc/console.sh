#!/bin/sh
# console.sh - the shell examples of a document are tests: in each
# ```console block, a line starting with "$ " is a command, run by sh with
# the tgrel being tested first on PATH, and the lines after it are what it
# prints (standard output and error).  The commands of a document run in
# order, with TGREL_CACHE_DIR an empty directory of their own (written
# $TGREL_CACHE_DIR in the document); sizes (a number before KiB, MiB or
# bytes) compare as S, since they depend on the compiler.  Each command is
# one TAP test.  $TGREL_DOC names the document (doc/kernels.md by
# default).
# Run by `make check` with $TGREL set; by hand:
#   TGREL=./tgrel srcdir=.. sh ../tests/doc/console.sh

TGREL=${TGREL:-./tgrel}
case $TGREL in /*) ;; *) TGREL=$(pwd)/$TGREL ;; esac
src=${srcdir:-.}
doc=${TGREL_DOC:-$src/doc/kernels.md}
name=doc/$(basename "$doc")
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tgrel-console.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/cache" "$tmp/bin"
ln -s "$TGREL" "$tmp/bin/tgrel"

awk -v dir="$tmp" '
    /^```console[ \t]*$/ { inblock = 1; next }
    /^```/ && inblock { inblock = 0; next }
    !inblock { next }
    /^\$ / {
        n++
        print substr($0, 3) > (dir "/cmd." n)
        printf "%d\n", NR > (dir "/where")
        printf "" > (dir "/want." n)
        next
    }
    { print > (dir "/want." n) }
    END { print n + 0 > (dir "/count") }
' "$doc"

count=$(cat "$tmp/count")
if [ "$count" -eq 0 ]; then
    echo "not ok 1 - $name has console examples"
    echo "1..1"
    exit 1
fi
normalize() {
    sed -e "s|$tmp/cache|\$TGREL_CACHE_DIR|g" -E -e 's/[0-9]+(\.[0-9]+)? (KiB|MiB|bytes)/S \2/g' "$1"
}
failed=0
i=1
while [ "$i" -le "$count" ]; do
    where=$(sed -n "${i}p" "$tmp/where")
    (cd "$tmp" && PATH="$tmp/bin:$PATH" TGREL_CACHE_DIR="$tmp/cache" sh "$tmp/cmd.$i") >"$tmp/got.$i" 2>&1
    normalize "$tmp/got.$i" >"$tmp/g"
    normalize "$tmp/want.$i" >"$tmp/w"
    if cmp -s "$tmp/w" "$tmp/g"; then
        echo "ok $i - $name:$where $(cat "$tmp/cmd.$i")"
    else
        failed=$((failed + 1))
        echo "not ok $i - $name:$where $(cat "$tmp/cmd.$i")"
        sed 's/^/#   expected: /' "$tmp/want.$i"
        sed 's/^/#        got: /' "$tmp/got.$i"
    fi
    i=$((i + 1))
done
echo "1..$count"
[ $failed = 0 ]
