# .ci/deps.sh - installs the Debian packages tgrel needs to build, test and
# fuzz; sourced by .ci/run and quickstart.sh (bash).  Call tgrel_install_deps.

TGREL_DEB_PACKAGES="autoconf automake libtool pkg-config make gcc clang
libgc-dev libgmp-dev libopenblas-dev libreadline-dev"

tgrel_install_deps() {
    local missing="" pkg
    if ! command -v dpkg >/dev/null 2>&1; then
        # shellcheck disable=SC2086
        echo "deps: not a Debian system; install the equivalents of:" \
             $TGREL_DEB_PACKAGES >&2
        return 0
    fi
    for pkg in $TGREL_DEB_PACKAGES; do
        if ! dpkg -s "$pkg" 2>/dev/null | grep -q '^Status: install ok installed'; then
            missing="$missing $pkg"
        fi
    done
    if [ -z "$missing" ]; then
        return 0
    fi
    if [ "$(id -u)" != 0 ]; then
        # configure names the package for whatever is really needed.
        echo "deps: missing Debian packages:$missing" >&2
        echo "deps: install them with: sudo apt-get install -y$missing" >&2
        return 0
    fi
    echo "deps: installing$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update </dev/null
    # shellcheck disable=SC2086
    apt-get install -y --no-install-recommends $missing </dev/null
}
