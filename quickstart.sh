#!/usr/bin/env bash
# quickstart.sh - build tgrel from a fresh checkout in build/ and either run
# the example (`./quickstart.sh run`) or the test suite (`./quickstart.sh
# test`).  Missing Debian packages are installed first when run as root.
# Environment: JOBS (parallel make jobs, default: the number of CPUs),
# CONFIGURE_FLAGS (extra ./configure arguments).
set -euo pipefail

cd "$(dirname "$0")"
# shellcheck source=.ci/deps.sh
. .ci/deps.sh

usage() {
    echo "usage: $0 run|test" >&2
    echo "  run   build, then evaluate examples/terms.tg and examples/logic.tg" >&2
    echo "  test  build, then run the test suite (make check)" >&2
    exit 2
}

[ $# -eq 1 ] || usage
case $1 in run|test) ;; *) usage ;; esac

jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
top=$(pwd)
# An in-tree configure (./configure run by hand) rules out a build/ dir.
if [ -f config.status ]; then
    build=.
else
    build=build
fi

tgrel_install_deps
mkdir -p m4   # libtoolize fills it; aclocal warns when it is missing
autoreconf -fi
mkdir -p "$build"
# CONFIGURE_FLAGS (optional) is split into words on purpose.
# shellcheck disable=SC2086
(cd "$build" && "$top/configure" ${CONFIGURE_FLAGS:-})
make -C "$build" -j"$jobs"

case $1 in
run)
    # The REPL on the bundled example: the tour script first, then, at a
    # terminal, the prompt with the example's rules loaded.
    interactive=
    [ -t 0 ] && interactive=-i
    echo "+ $build/tgrel examples/algebra.rules -f examples/tour.tgs $interactive"
    "$build/tgrel" examples/algebra.rules -f examples/tour.tgs $interactive
    ;;
test)
    make -C "$build" -j"$jobs" check
    ;;
esac
