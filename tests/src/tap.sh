# tap.sh - sourced by the shell tests of the tgrel program: n and failed
# (the TAP counters), t, which runs a command and checks its exit
# status, standard output and standard error, and report, the TAP line of
# a check made by hand.  The sourcing script sets $tmp (a scratch
# directory) first.

n=0
failed=0
: >"$tmp/in"

# t DESC STATUS OUT ERR CMD...: run CMD with $tmp/in as standard input;
# OUT is the exact standard output, ERR a shell pattern for standard error.
t() {
    desc=$1 want_status=$2 want_out=$3 want_err=$4
    shift 4
    "$@" <"$tmp/in" >"$tmp/out" 2>"$tmp/err"
    status=$?
    got_out=$(cat "$tmp/out")
    got_err=$(cat "$tmp/err")
    n=$((n + 1))
    ok=yes
    [ "$status" = "$want_status" ] || ok=no
    [ "$got_out" = "$want_out" ] || ok=no
    # shellcheck disable=SC2254  # want_err is a pattern
    case $got_err in
        $want_err) ;;
        *) ok=no ;;
    esac
    if [ $ok = yes ]; then
        echo "ok $n - $desc"
    else
        failed=$((failed + 1))
        echo "not ok $n - $desc"
        echo "#   command: $*"
        echo "#   status: expected $want_status, got $status"
        printf '%s\n' "$want_out" | sed 's/^/#   expected stdout: /'
        printf '%s\n' "$got_out" | sed 's/^/#        got stdout: /'
        printf '%s\n' "$want_err" | sed 's/^/#   expected stderr: /'
        printf '%s\n' "$got_err" | sed 's/^/#        got stderr: /'
    fi
}

# report STATUS DESC [FILE...]: the TAP line of a check that ended with
# STATUS (0: it passed); on failure the FILEs follow as diagnostics.
report() {
    rstatus=$1 rdesc=$2
    shift 2
    n=$((n + 1))
    if [ "$rstatus" = 0 ]; then
        echo "ok $n - $rdesc"
    else
        failed=$((failed + 1))
        echo "not ok $n - $rdesc"
        [ $# = 0 ] || sed 's/^/#   /' "$@"
    fi
}
