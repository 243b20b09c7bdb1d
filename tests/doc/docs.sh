#!/bin/sh
# docs.sh - every example in doc/*.md and in the man page is a test.
#
# A code block of a document is fenced, and its fence names its kind:
#   ```tgrel  a transcript of the REPL: lines starting with "tgrel> " (and
#             "  ...> " for a continued entry) are typed, the other lines
#             are what tgrel answers (an error as the terminal shows it).
#             The tgrel blocks of a document are one session, started in
#             the top source directory and typed in order, each entry one
#             TAP test; a block fenced "```tgrel new" starts a new session.  The session runs in --machine mode, where each
#             entry's answer is known exactly; a "loaded FILE" line, which
#             only a terminal shows after :load, is not expected there.
#   ```sh     a shell transcript: "$ COMMAND" lines run (with sh, from the
#             top source directory, this build's tgrel first on PATH, an
#             empty compile cache for the document's commands), the other
#             lines are their output (standard output and error).
#   ```text   not an example: a form's syntax, a diagram, output discussed
#             in the text.
#   ```c      a fragment of C, declarations or a sketch, not a program.
# A fence of no kind, or of another, and an indented code block (whose
# kind cannot be given) fail the test: an example that nothing runs would
# go stale unseen.  The man page's EXAMPLES lines run from the top source
# directory and must succeed.
# Run by `make check` with $TGREL set; by hand, from the build directory:
#   TGREL=./tgrel srcdir=.. sh ../tests/doc/docs.sh [doc/FILE.md ...]

TGREL=${TGREL:-./tgrel}
case $TGREL in /*) ;; *) TGREL=$(pwd)/$TGREL ;; esac
src=$(cd "${srcdir:-.}" && pwd)
# (include "all.rules") finds the rule library of this source tree
TGREL_RULES_PATH=$src/patterns/lib
export TGREL_RULES_PATH
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tgrel-docs.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/bin"
ln -s "$TGREL" "$tmp/bin/tgrel"

n=0
failed=0
ok() { n=$((n + 1)); printf 'ok %d - %s\n' "$n" "$1"; }
notok() { n=$((n + 1)); failed=$((failed + 1)); printf 'not ok %d - %s\n' "$n" "$1"; }
# compare WANT GOT DESC: one TAP line, the difference as diagnostics.
compare() {
    if cmp -s "$1" "$2"; then
        ok "$3"
    else
        notok "$3"
        sed 's/^/#   expected: /' "$1"
        sed 's/^/#        got: /' "$2"
    fi
}

# ---- the blocks of one document ----------------------------------------

# kinds DOC: every code block has a kind; prints the lines that fail.
kinds() {
    awk '
        /^```/ {
            if (!fenced) {
                fenced = 1
                kind = substr($0, 4)
                sub(/[ \t]+$/, "", kind)
                if (kind !~ /^(tgrel( new)?|sh|text|c)$/)
                    printf "%d: a code block of kind \"%s\" (tgrel, sh, text or c)\n", NR, kind
            } else
                fenced = 0
            blank = 0
            next
        }
        fenced { next }
        /^    / && blank && !inlist {
            printf "%d: an indented code block (fence it, with its kind)\n", NR
            blank = 0
            next
        }
        /^[ \t]*$/ { blank = 1; next }
        { blank = 0; inlist = ($0 ~ /^ *([-*+]|[0-9]+\.) / || (inlist && $0 ~ /^  /)) }
    ' "$1"
}

# transcripts DOC: the document's tgrel sessions, one test per entry.
transcripts() {
    doc=$1 name=doc/$(basename "$1")
    rm -f "$tmp"/input.* "$tmp"/where "$tmp"/want.* "$tmp"/got* "$tmp"/count
    awk -v dir="$tmp" '
        /^```tgrel( new)?[ \t]*$/ {
            inblock = 1
            if (!sess || $0 ~ /new/) { sess++; printf "" > (dir "/input." sess) }
            next
        }
        /^```/ && inblock { inblock = 0; next }
        !inblock { next }
        /^tgrel> / || /^  \.\.\.> / {
            cont = ($0 ~ /^  \.\.\.> /)
            line = substr($0, 8)
            print line > (dir "/input." sess)
            if (!cont) {
                n++
                printf "%d %d\n", sess, NR > (dir "/where")
                printf "" > (dir "/want." n)
                load = (line ~ /^:load /)
            }
            next
        }
        load && /^loaded / { next }     # a terminal only
        { print > (dir "/want." n) }
        END { print n + 0 > (dir "/count") }
    ' "$doc"
    count=$(cat "$tmp/count")
    [ "$count" -gt 0 ] || return 0
    # Answers of a session's entry k: the lines before its k-th ";;end",
    # errors as the terminal shows them (without the "!error " mark).
    for input in "$tmp"/input.*; do
        s=${input##*.}
        rm -rf "$tmp/cache" && mkdir "$tmp/cache"
        (cd "$src" && TGREL_CACHE_DIR="$tmp/cache" "$TGREL" --machine <"$input" >"$tmp/got" 2>&1)
        awk -v dir="$tmp" -v s="$s" '
            BEGIN { i = 1; printf "" > (dir "/got." s "." i) }
            $0 == ";;end" { i++; printf "" > (dir "/got." s "." i); next }
            /^!error / { sub(/^!error /, "") }
            { print > (dir "/got." s "." i) }
        ' "$tmp/got"
    done
    # A profile's times vary: numbers with a decimal point on a line with a
    # time (" ms", " us") compare as T, whatever their width.
    for f in "$tmp"/want.* "$tmp"/got.*; do
        sed -E '/ (ms|us)([ ,)]|$)/ s/ *[0-9]+\.[0-9]+/ T/g' "$f" >"$f.t" && mv "$f.t" "$f"
    done
    i=1
    prev=0
    while read -r s where; do
        [ "$s" = "$prev" ] || k=0
        prev=$s k=$((k + 1))
        compare "$tmp/want.$i" "$tmp/got.$s.$k" "$name:$where"
        i=$((i + 1))
    done <"$tmp/where"
}

# shells DOC: each "$ COMMAND" of the sh blocks, with its output.
shells() {
    doc=$1 name=doc/$(basename "$1")
    rm -rf "$tmp/sh"
    mkdir "$tmp/sh"
    awk -v dir="$tmp/sh" '
        /^```sh[ \t]*$/ { inblock = 1; next }
        /^```/ && inblock { inblock = 0; next }
        !inblock { next }
        /^\$ / {
            n++
            print substr($0, 3) > (dir "/cmd." n)
            printf "%d\n", NR > (dir "/where." n)
            printf "" > (dir "/want." n)
            next
        }
        { print > (dir "/want." n) }
    ' "$doc"
    # The commands of a document share an empty compile cache of their own,
    # written $TGREL_CACHE_DIR in the document; sizes (a number before KiB,
    # MiB or bytes) compare as S, since they depend on the compiler.
    rm -rf "$tmp/shcache" && mkdir "$tmp/shcache"
    i=1
    while [ -f "$tmp/sh/cmd.$i" ]; do
        (cd "$src" && PATH="$tmp/bin:$PATH" TGREL_CACHE_DIR="$tmp/shcache" sh "$tmp/sh/cmd.$i" </dev/null >"$tmp/sh/got.$i" 2>&1)
        for f in want got; do
            sed -e "s|$tmp/shcache|\$TGREL_CACHE_DIR|g" -E -e 's/[0-9]+(\.[0-9]+)? (KiB|MiB|bytes)/S \2/g' \
                "$tmp/sh/$f.$i" >"$tmp/sh/$f.n"
        done
        compare "$tmp/sh/want.n" "$tmp/sh/got.n" "$name:$(cat "$tmp/sh/where.$i"): $(cat "$tmp/sh/cmd.$i")"
        i=$((i + 1))
    done
}

# ---- the documents ---------------------------------------------------------

if [ $# -gt 0 ]; then
    docs=
    for d in "$@"; do docs="$docs $src/$d"; done
else
    docs=$(ls "$src"/doc/*.md)
fi
for doc in $docs; do
    case $doc in *.md) ;; *) continue ;; esac
    name=doc/$(basename "$doc")
    kinds "$doc" >"$tmp/kinds"
    if [ -s "$tmp/kinds" ]; then
        notok "$name: every code block has a kind"
        sed "s|^|#   $name:|" "$tmp/kinds"
    else
        ok "$name: every code block has a kind"
    fi
    transcripts "$doc"
    shells "$doc"
done

# Claims that went stale once: the default compiler flags, as
# kernels/cache.c has them, in src/tgrel.h and doc/kernels.md alike; and
# no "Not there yet" list naming the REPL's tensor front end.
if [ $# -eq 0 ]; then
    flags=$(sed -n 's/^#define TGQ_DEFAULT_FLAGS "\([^"]*\)".*/\1/p' "$src/kernels/cache.c")
    for f in src/tgrel.h doc/kernels.md; do
        text=$(sed -e 's/^ *\* *//' -e 's/`//g' "$src/$f" | tr '\n' ' ' | tr -s ' ')
        case $text in
            *"$flags"*-fopenmp*-fopenmp-simd*-DTGK_MVEC*)
                ok "$f gives the default compiler flags of kernels/cache.c ($flags ...)" ;;
            *) notok "$f gives the default compiler flags of kernels/cache.c ($flags ...)" ;;
        esac
    done
    # one word for a named set of rewrites: "rewriter" (the commands,
    # the forms' names and the messages say it), never "database"
    words=$(grep -n -i 'database' "$src"/doc/*.md "$src"/doc/tgrel.1 "$src"/README.md | grep -v '/doc/internals.md:')
    if [ -z "$words" ]; then
        ok "the user's documents say rewriter, not database"
    else
        notok "the user's documents say rewriter, not database"
        printf '%s\n' "$words" | sed 's/^/#   /'
    fi
    stale=$(awk '/^## / { nt = /Not there yet/ } nt && /REPL front end/ { print FILENAME ":" FNR }' "$src"/doc/*.md)
    if [ -z "$stale" ]; then
        ok "no Not-there-yet list names the REPL front end"
    else
        notok "no Not-there-yet list names the REPL front end: $stale"
    fi
fi

# The man page's examples: each line of the EXAMPLES section, unescaped.
if [ $# -eq 0 ]; then
    sed -n '/^\.SH EXAMPLES/,/^\.SH /p' "$src/doc/tgrel.1" |
        sed -e '/^\./d' -e 's/\\-/-/g' -e 's/\\e/\\/g' >"$tmp/man"
    [ -s "$tmp/man" ] || notok "doc/tgrel.1 has examples"
    while IFS= read -r cmd; do
        if (cd "$src" && PATH="$tmp/bin:$PATH" sh -c "$cmd" </dev/null >"$tmp/out" 2>&1); then
            ok "doc/tgrel.1: $cmd"
        else
            notok "doc/tgrel.1: $cmd"
            sed 's/^/#   /' "$tmp/out"
        fi
    done <"$tmp/man"
fi

echo "1..$n"
[ $failed = 0 ]
