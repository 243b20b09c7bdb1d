#!/bin/sh
# gc_stress.sh - the golden tests (every tests/*/*.test) again with
# TGREL_GC_FLOOR=65536: the collector runs every 64 KiB allocated instead
# of every 8 MiB, so a term that some code holds only where the collector
# does not look is reclaimed and the test's output goes wrong.  One TAP
# line per file, with the failing checks of a file that fails.
# Run by `make check` with $TGREL set; by hand, from the build directory:
# TGREL=./tgrel srcdir=.. TGREL_RULES_PATH=../patterns/lib sh ../tests/src/gc_stress.sh

TGREL=${TGREL:-./tgrel}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tgrel-gcstress.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=tests/src/tap.sh
. "${srcdir:-.}/tests/src/tap.sh"

for f in "${srcdir:-.}"/tests/*/*.test; do
    TGREL_GC_FLOOR=65536 "$TGREL" --run-tests "$f" >"$tmp/out" 2>&1
    st=$?
    { [ $st = 0 ] || echo "exit status $st"; grep -A4 '^not ok' "$tmp/out"; } >"$tmp/why"
    report $st "${f#"${srcdir:-.}"/} with a collection every 64 KiB" "$tmp/why"
done

echo "1..$n"
[ $failed = 0 ]
