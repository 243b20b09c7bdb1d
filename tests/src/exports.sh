#!/bin/sh
# exports.sh - the shared libtgrel must export only tg_ symbols (internal
# functions use prefixes such as tgE_ and stay hidden).

lib=${top_builddir:-.}/.libs/libtgrel.so
if [ ! -f "$lib" ] || ! command -v nm >/dev/null 2>&1; then
    echo "1..0 # SKIP no shared libtgrel.so or no nm"
    exit 0
fi
syms=$(nm -D --defined-only "$lib" | awk 'NF >= 3 { sub(/@.*/, "", $3); print $3 }' | sort -u)
# Besides tg_ names, only names the linker itself defines may appear.
bad=$(printf '%s\n' "$syms" | grep -v -e '^tg_' -e '^_init$' -e '^_fini$' \
      -e '^_edata$' -e '^_end$' -e '^__bss_start$' -e '^$')
count=$(printf '%s\n' "$syms" | grep -c '^tg_')
failed=0
if [ -z "$bad" ]; then
    echo "ok 1 - only tg_ symbols are exported"
else
    failed=1
    echo "not ok 1 - only tg_ symbols are exported"
    printf '%s\n' "$bad" | sed 's/^/#   also exported: /'
fi
if [ "$count" -gt 0 ]; then
    echo "ok 2 - $count tg_ symbols are exported"
else
    failed=1
    echo "not ok 2 - tg_ symbols are exported"
fi
echo "1..2"
[ $failed = 0 ]
