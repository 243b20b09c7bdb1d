#!/bin/sh
# ignored.sh - a build leaves nothing untracked: every file a build made
# (this build's directory, out of the source tree as make distcheck and
# `mkdir build && cd build && ../configure` build) is one the project's
# .gitignore files ignore at the same place in the source tree, so that
# an in-tree build (`./configure && make`, README) leaves `git status`
# clean.  Run late in `make check`, when the programs, examples and
# benchmarks are built.  git matches the patterns (in a scratch
# repository holding only the ignore files, so the source tree need not
# be a checkout).
# Run by `make check`; by hand, from the build directory:
# srcdir=.. sh ../tests/src/ignored.sh

src=$(cd "${srcdir:-.}" && pwd)
build=$(pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tgrel-ignored.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

if ! command -v git >/dev/null; then
    echo "1..1"
    echo "not ok 1 - git, which matches .gitignore's patterns, is on PATH"
    exit 1
fi
if [ ! -f "$src/.gitignore" ]; then
    echo "1..1"
    echo "not ok 1 - the source tree has its .gitignore"
    exit 1
fi

# the ignore files, in a scratch repository
git init -q "$tmp/repo" || exit 1
(cd "$src" && find . -name .gitignore ! -path './build*' ! -path './.git/*') | while IFS= read -r f; do
    mkdir -p "$tmp/repo/$(dirname "$f")" && cp "$src/$f" "$tmp/repo/$f"
done

if [ "$src" = "$build" ]; then
    # in-tree: what git does not know of, when the tree is a checkout
    if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
        git -C "$src" status --porcelain --untracked-files=all | sed -n 's/^?? //p' >"$tmp/left"
    else
        : >"$tmp/left"     # a release's tree: no git, nothing is untracked
    fi
else
    # the files this build made (the build directories of other builds
    # inside it, if any, are theirs)
    (cd "$build" && find . -type f ! -name .gitignore | sed 's#^\./##') >"$tmp/made"
    (cd "$tmp/repo" && git check-ignore --no-index -n -v --stdin <"$tmp/made") |
        sed -n 's/^::	//p' >"$tmp/left"
fi

echo "1..1"
if [ -s "$tmp/left" ]; then
    echo "not ok 1 - every file the build made is ignored by .gitignore"
    sed 's/^/#   not ignored: /' "$tmp/left" | head -40
    exit 1
fi
echo "ok 1 - every file the build made is ignored by .gitignore ($(wc -l <"$tmp/made" 2>/dev/null || echo 0) files)"
