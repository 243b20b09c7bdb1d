#!/bin/sh
# tutorial.sh - doc/tutorial.md's transcripts are tests.  Every ```tgrel
# block of the tutorial is part of one REPL session, typed in order: lines
# starting with "tgrel> " (and "  ...> " for a continued entry) are what the
# reader types, the other lines what tgrel answers (an error's message as
# the terminal shows it).  The session runs in --machine mode from the
# source directory, so each entry's answer is known exactly; each entry is
# one TAP test.
# Run by `make check` with $TGREL set; by hand:
#   TGREL=./tgrel srcdir=.. sh ../tests/doc/tutorial.sh
# Other documents' transcripts are tested the same way: $TGREL_DOC names
# the file (doc/tutorial.md by default; tests/doc/grad.sh sets it).

TGREL=${TGREL:-./tgrel}
case $TGREL in /*) ;; *) TGREL=$(pwd)/$TGREL ;; esac
src=${srcdir:-.}
doc=${TGREL_DOC:-$src/doc/tutorial.md}
name=doc/$(basename "$doc")
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tgrel-tutorial.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

# Split the transcripts: $tmp/input (what is typed), and per entry its
# doc line ($tmp/where) and expected answer ($tmp/want.N).
awk -v dir="$tmp" '
    /^```tgrel[ \t]*$/ { inblock = 1; next }
    /^```/ && inblock { inblock = 0; next }
    !inblock { next }
    /^tgrel> / || /^  \.\.\.> / {
        cont = ($0 ~ /^  \.\.\.> /)
        line = substr($0, 8)
        print line > (dir "/input")
        if (!cont) {
            n++
            printf "%d\n", NR > (dir "/where")
            printf "" > (dir "/want." n)
        }
        next
    }
    { print > (dir "/want." n) }
    END { print n > (dir "/count") }
' "$doc"

count=$(cat "$tmp/count" 2>/dev/null)
if [ -z "$count" ] || [ "$count" -eq 0 ]; then
    echo "not ok 1 - $name has tgrel transcripts"
    echo "1..1"
    exit 1
fi

# A document may show profiles, whose times vary: with TGREL_DOC_TIMES
# set, numbers with a decimal point on lines with a time (" ms", " us")
# compare as T.  With TGREL_DOC_FRESH_CACHE set, the session compiles into
# an empty cache (so that a profile's cache hits are those it shows).
if [ -n "$TGREL_DOC_FRESH_CACHE" ]; then
    TGREL_CACHE_DIR=$tmp/cache
    export TGREL_CACHE_DIR
fi
(cd "$src" && "$TGREL" --machine <"$tmp/input" >"$tmp/got" 2>&1)
if [ -n "$TGREL_DOC_TIMES" ]; then
    for f in "$tmp"/want.* "$tmp/got"; do
        sed -E '/ (ms|us)([ ,)]|$)/ s/[0-9]+\.[0-9]+/T/g' "$f" >"$f.t" && mv "$f.t" "$f"
    done
fi
# Answers of entry i: the lines before the i-th ";;end", errors written
# as the terminal shows them (without the "!error " mark).
awk -v dir="$tmp" '
    BEGIN { i = 1; printf "" > (dir "/got.1") }
    $0 == ";;end" { i++; printf "" > (dir "/got." i); next }
    /^!error / { sub(/^!error /, "") }
    { print > (dir "/got." i) }
' "$tmp/got"

failed=0
i=1
while [ "$i" -le "$count" ]; do
    where=$(sed -n "${i}p" "$tmp/where")
    if cmp -s "$tmp/want.$i" "$tmp/got.$i"; then
        echo "ok $i - $name:$where"
    else
        failed=$((failed + 1))
        echo "not ok $i - $name:$where"
        sed 's/^/#   expected: /' "$tmp/want.$i"
        sed 's/^/#        got: /' "$tmp/got.$i"
    fi
    i=$((i + 1))
done
echo "1..$count"
[ $failed = 0 ]
