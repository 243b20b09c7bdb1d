#!/bin/sh
# prefetch.sh - the library's fetches ahead are in its code.  A compiler
# may drop a __builtin_prefetch whose address it finds unused: GCC 12 at
# -O2 once compiled tgT_fetch to a bare return, and the constructor chains
# of the REC benchmarks ran 1.3x slower with every test still passing
# (doc/internals.md, "The home of a small table").  So the functions that
# exist to fetch ahead, or whose speed rests on it, must each hold a
# prefetch instruction of the machine the library was built for.

lib=${top_builddir:-.}/.libs/libtgrel.a
[ -f "$lib" ] || lib=${top_builddir:-.}/.libs/libtgrel.so
case $(uname -m) in
x86_64 | i?86) insn='prefetch' ;;
aarch64 | arm64) insn='prfm' ;;
*) insn='' ;;
esac
if [ ! -f "$lib" ] || [ -z "$insn" ] || ! command -v objdump >/dev/null 2>&1; then
    echo "1..0 # SKIP no libtgrel, no objdump, or no known prefetch instruction here"
    exit 0
fi
# fn: the count of prefetch instructions of each function, "count name"
counts=$(objdump -d --no-show-raw-insn "$lib" | awk -v insn="$insn" '
    /^[0-9a-f]+ <[^>]*>:$/ { fn = substr($2, 2, length($2) - 3); n[fn] += 0 }
    $0 ~ "\t" insn { n[fn]++ }
    END { for (f in n) print n[f], f }')
n=0
failed=0
# what each function fetches ahead
for f in tgT_fetch:"the home bucket of a chain's next node" \
         tgT_app_hashed:"the home bucket of the node after the one it makes" \
         tg_app_batch:"the home buckets of a group of applications"; do
    name=${f%%:*}
    what=${f#*:}
    n=$((n + 1))
    c=$(printf '%s\n' "$counts" | awk -v f="$name" '$2 == f { s += $1 } END { print s + 0 }')
    if [ "$c" -gt 0 ]; then
        echo "ok $n - $name fetches $what (prefetches: $c)"
    else
        failed=1
        echo "not ok $n - $name fetches $what (no prefetch instruction in its code)"
    fi
done
echo "1..$n"
[ $failed = 0 ]
