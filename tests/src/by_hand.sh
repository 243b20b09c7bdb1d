#!/bin/sh
# by_hand.sh - README's "Building by hand" starts with `autoreconf -fi` in
# a fresh checkout: it must give no warning (aclocal warned once that the
# macro directory m4/ was missing: git keeps no empty directory, so m4/
# holds a tracked file).  The tracked files are copied to a scratch
# directory and autoreconf runs there.  A release's tree, which is no git
# checkout and ships configure, is checked for the macro directory alone.
# Run by `make check`; by hand, from the build directory:
# srcdir=.. sh ../tests/src/by_hand.sh

src=$(cd "${srcdir:-.}" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tgrel-byhand.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
echo "1..2"

macro_dir=$(sed -n 's/^AC_CONFIG_MACRO_DIRS(\[\(.*\)\])/\1/p' "$src/configure.ac")
if [ -n "$macro_dir" ] && [ -d "$src/$macro_dir" ]; then
    echo "ok 1 - the macro directory configure.ac names ($macro_dir) is in the tree"
else
    echo "not ok 1 - the macro directory configure.ac names (${macro_dir:-none}) is in the tree"
fi

if ! git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
    # a release: configure is there, nothing to regenerate
    if [ -x "$src/configure" ]; then
        echo "ok 2 - a release's tree ships configure"
    else
        echo "not ok 2 - a release's tree ships configure"
    fi
    exit 0
fi
mkdir "$tmp/tree"
(cd "$src" && git ls-files -z | tar --null -T - -cf -) | (cd "$tmp/tree" && tar -xf -) || exit 1
if ! command -v autoreconf >/dev/null; then
    echo "not ok 2 - autoreconf, which a checkout's build by hand runs first, is on PATH"
    exit 1
fi
(cd "$tmp/tree" && autoreconf -fi) >"$tmp/out" 2>&1
rc=$?
if [ $rc = 0 ] && ! grep -qi 'warning' "$tmp/out"; then
    echo "ok 2 - autoreconf -fi in a fresh checkout: no warning"
else
    echo "not ok 2 - autoreconf -fi in a fresh checkout: no warning (status $rc)"
    sed 's/^/#   /' "$tmp/out"
    exit 1
fi
