# rec_common.sh - sourced by the shell tests of the REC benchmarks
# (rec.sh, rec_floor.sh).  rec_setup PROGRAM sets $dir, the folder of
# benchmark files ($TGREL_REC_DIR, else ../shared/bench/rec beside the
# source tree); skips the whole test when there is none; bails out when
# PROGRAM is not built; and lifts the stack limit (the engine's deep
# terms and Maude's runs beside it need it).

rec_setup() {
    dir=${TGREL_REC_DIR:-${srcdir:-.}/../shared/bench/rec}
    if [ ! -d "$dir" ]; then
        echo "1..0 # SKIP no REC benchmark folder ($dir; set TGREL_REC_DIR)"
        exit 0
    fi
    if [ ! -x "$1" ]; then
        echo "Bail out! $1 is not built"
        exit 1
    fi
    ulimit -s unlimited 2>/dev/null || ulimit -s hard 2>/dev/null
}
