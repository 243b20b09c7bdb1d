#!/bin/sh
# exports.sh - the shared libtgrel must export only tg_ symbols (internal
# functions use prefixes such as tgE_ and stay hidden), and doc/api.md
# must document each of them.

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
api=${srcdir:-.}/doc/api.md
undocumented=$(printf '%s\n' "$syms" | grep '^tg_' | while read -r s; do
    grep -q "\\b$s\\b" "$api" || echo "$s"
done)
if [ -z "$undocumented" ]; then
    echo "ok 3 - doc/api.md documents every exported function"
else
    failed=1
    echo "not ok 3 - doc/api.md documents every exported function"
    printf '%s\n' "$undocumented" | sed 's/^/#   not in doc\/api.md: /'
fi
echo "1..3"
[ $failed = 0 ]
