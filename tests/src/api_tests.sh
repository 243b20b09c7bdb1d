#!/bin/sh
# api_tests.sh - every function libtgrel exports has a test of its success
# and a test of its failure, as tests/src/api_tests.txt lists them (or a
# reason why it cannot fail): a new export without its line, a test file
# that does not call the function or does not run in `make check`, or a
# line for a function no longer exported fails this test.

lib=${top_builddir:-.}/.libs/libtgrel.so
src=${srcdir:-.}
table=$src/tests/src/api_tests.txt
n=0
failed=0

# check DESC PROBLEMS: one TAP line; PROBLEMS (one a line) empty means ok
check() {
    n=$((n + 1))
    if [ -z "$2" ]; then
        echo "ok $n - $1"
    else
        failed=$((failed + 1))
        echo "not ok $n - $1"
        printf '%s\n' "$2" | sed 's/^/#   /'
    fi
}

# runs FILE: FILE is a C test of C_TESTS or an example of EXAMPLE_BINS
runs() {
    prog=${1%.c}
    grep -q "^[[:space:]]*$prog[[:space:]\\\\]*\$" "$src/Makefile.am" ||
        grep -q "^EXAMPLE_BINS = .*$prog" "$src/Makefile.am"
}

# calls FILE FUNCTION: FILE exists, runs in make check and names FUNCTION
calls() {
    [ -f "$src/$1" ] || { echo "$2: $1 does not exist"; return; }
    runs "$1" || { echo "$2: $1 is not run by make check"; return; }
    grep -qw "$2" "$src/$1" || echo "$2: $1 does not call it"
}

# the exports: the shared library's, or without one (--disable-shared, no
# nm) the functions tgrel.h declares, which are the same (exports.sh)
if [ -f "$lib" ] && command -v nm >/dev/null 2>&1; then
    exports=$(nm -D --defined-only "$lib" | awk 'NF >= 3 { sub(/@.*/, "", $3); print $3 }' |
              grep '^tg_' | sort -u)
else
    exports=$(grep -o '\<tg_[a-z0-9_]*(' "$src/src/tgrel.h" | tr -d '(' | sort -u)
fi
listed=$(grep '^tg_' "$table" | awk '{ print $1 }' | sort)

missing=$(printf '%s\n' "$exports" | while read -r s; do
    printf '%s\n' "$listed" | grep -qx "$s" || echo "$s has no line in tests/src/api_tests.txt"
done)
check "every exported function has a line in api_tests.txt" "$missing"

stale=$(printf '%s\n' "$listed" | while read -r s; do
    printf '%s\n' "$exports" | grep -qx "$s" || echo "$s is not exported"
done)
dup=$(printf '%s\n' "$listed" | uniq -d | sed 's/$/ has more than one line/')
check "api_tests.txt lists only exported functions, each once" "$stale$dup"

bad_success=$(grep '^tg_' "$table" | while read -r f ok fail rest; do
    calls "$ok" "$f"
done)
check "each success test exists, runs in make check and calls its function" "$bad_success"

bad_failure=$(grep '^tg_' "$table" | while read -r f ok fail rest; do
    if [ "$fail" = - ]; then
        case $rest in
            "cannot fail: "?*) ;;
            *) echo "$f: '-' needs 'cannot fail: REASON'" ;;
        esac
    else
        calls "$fail" "$f"
    fi
done)
check "each failure test exists, runs in make check and calls its function" "$bad_failure"

nofail=$(grep -c '^tg_[a-z_0-9]* *[^ ]* *- cannot fail' "$table")
total=$(printf '%s\n' "$listed" | grep -c .)
echo "# $total functions: $((total - nofail)) with a failure test, $nofail that cannot fail"
echo "1..$n"
[ $failed = 0 ]
