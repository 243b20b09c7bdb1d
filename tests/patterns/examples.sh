#!/bin/sh
# examples.sh - the example programs of examples/ run and print what their
# golden files hold (tests/patterns/data/NAME.out).

top_builddir=${top_builddir:-.}
srcdir=${srcdir:-.}
n=0
failed=0
echo "1..1"
for name in mul_div_cancel; do
    n=$((n + 1))
    prog=$top_builddir/examples/$name
    if [ ! -x "$prog" ]; then
        echo "not ok $n - $name: $prog is not built"
        failed=1
        continue
    fi
    out=$("$prog" 2>&1)
    rc=$?
    if [ $rc -eq 0 ] && [ "$out" = "$(cat "$srcdir/tests/patterns/data/$name.out")" ]; then
        echo "ok $n - $name"
    else
        echo "not ok $n - $name (exit $rc)"
        echo "$out" | sed 's/^/# /'
        failed=1
    fi
done
exit $failed
