#!/bin/sh
# layers.sh - no file of a lower layer includes a header of a higher one.
# The layers, lowest first: src (the term core), logic, patterns, kernels,
# and cli (the tgrel program), which may use the public header only.

src=${srcdir:-.}
n=0
failed=0
# check DIR ALLOWED...: every quoted #include in DIR names a header that
# exists in DIR itself or in one of the ALLOWED directories (or config.h).
check() {
    dir=$1
    shift
    n=$((n + 1))
    bad=""
    for f in "$src/$dir"/*.c "$src/$dir"/*.h; do
        [ -f "$f" ] || continue
        for h in $(sed -n 's/^[ \t]*#[ \t]*include[ \t]*"\([^"]*\)".*/\1/p' "$f"); do
            [ "$h" = config.h ] && continue
            ok=0
            for d in "$dir" "$@"; do
                if [ -f "$src/$d/$h" ]; then ok=1; break; fi
            done
            [ $ok -eq 1 ] || bad="$bad ${f#"$src"/}:$h"
        done
    done
    if [ -z "$bad" ]; then
        echo "ok $n - $dir/ includes only its own layer and the ones below"
    else
        failed=1
        echo "not ok $n - $dir/ includes only its own layer and the ones below"
        for b in $bad; do echo "#   $b"; done
    fi
}

check src
check logic src
check patterns logic src
check kernels patterns logic src
# The program sees the library through its public header alone.
n=$((n + 1))
bad=$(grep -l '^[ \t]*#[ \t]*include[ \t]*"[^"]*"' "$src"/cli/*.c "$src"/cli/*.h |
      while read -r f; do
          sed -n 's/^[ \t]*#[ \t]*include[ \t]*"\([^"]*\)".*/\1/p' "$f" |
          while read -r h; do
              case $h in config.h|tgrel.h) ;; *)
                  [ -f "$src/cli/$h" ] || echo "${f#"$src"/}:$h" ;;
              esac
          done
      done)
if [ -z "$bad" ]; then
    echo "ok $n - cli/ uses the library through tgrel.h only"
else
    failed=1
    echo "not ok $n - cli/ uses the library through tgrel.h only"
    printf '%s\n' "$bad" | sed 's/^/#   /'
fi
echo "1..$n"
exit $failed
