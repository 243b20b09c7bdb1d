#!/bin/sh
# pipeline_errors.sh - TAP tests of the errors of the compile pipeline's
# forms and options as the tgrel program reports them, each at its
# file:line:column: registering into a rewriter that does not exist or at
# a position that is taken, an op definition that uses an unknown op or
# recurses, a typed guard that does not exist or an op in its namespace,
# an unknown mode (:mode and TGREL_MODE), a checking tolerance that is
# not a number.
# Run by `make check` with $TGREL set; by hand, from the build directory:
# TGREL=./tgrel srcdir=.. sh ../tests/cli/pipeline_errors.sh

TGREL=${TGREL:-./tgrel}
src=$(cd "${srcdir:-.}" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tgrel-perr.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
TGREL_RULES_PATH=$src/patterns/lib
export TGREL_RULES_PATH
unset TGREL_MODE
# shellcheck source=tests/src/tap.sh
. "$src/tests/src/tap.sh"
: >"$tmp/in"

# ---- forms in a file: --check reports them where they are -------------

printf '(include "all.rules")\n(rule my-r (exp (log ?x)) => ?x)\n\n(register   nothere\n   my-r)\n' >"$tmp/reg.rules"
t "a registration into a rewriter that does not exist" 1 "" \
    "$tmp/reg.rules:4:13: register: unknown rewriter nothere (declare it with equilibrium, walk or sequence)" \
    "$TGREL" --check "$tmp/reg.rules"

printf '(include "all.rules")\n(rule my-r (exp (log ?x)) => ?x)\n(equilibrium my-stage my-r)\n(register default\n     (1 my-stage))\n' >"$tmp/pos.rules"
t "a registration at a position that is taken" 1 "" \
    "$tmp/pos.rules:5:6: register: position 1 of sequence default is taken by scan_opt (a position is free or given once)" \
    "$TGREL" --check "$tmp/pos.rules"

printf '(include "tensor.rules")\n\n(defop (f ?x)\n   (add 1 (frob ?x)))\n' >"$tmp/unknown.rules"
t "an op definition that uses an unknown op" 1 "" \
    "$tmp/unknown.rules:4:11: unknown op frob (declare it with (op frob ...)) in (frob ?x)" \
    "$TGREL" --check "$tmp/unknown.rules"

printf '(include "tensor.rules")\n(op g (arity 1))\n(defop (f ?x) (g ?x))\n (defop (g ?x)\n   (mul 2 (f ?x)))\n' >"$tmp/rec.rules"
t "an op definition that recurses through another" 1 "" \
    "$tmp/rec.rules:5:4: defop g is recursive: g -> f -> g" \
    "$TGREL" --check "$tmp/rec.rules"

printf '(include "tensor.rules")\n(rule r (exp ?x) => ?x\n  (when (type:frob ?x)))\n' >"$tmp/typed.rules"
t "a typed guard that does not exist" 1 "" \
    "$tmp/typed.rules:3:9: unknown built-in type:frob in (type:frob ?x)" \
    "$TGREL" --check "$tmp/typed.rules"

printf '\n  (op type:mine (arity 1))\n' >"$tmp/typeop.rules"
t "an op in the typed guards' namespace" 1 "" \
    "$tmp/typeop.rules:2:3: type:mine: names starting with type: are the typed guards" \
    "$TGREL" --check "$tmp/typeop.rules"

# ---- the REPL's commands in a script -----------------------------------

printf '(include "all.rules")\n:mode turbo\n' >"$tmp/mode.tg"
t ":mode with an unknown mode" 1 "" \
    "$tmp/mode.tg:2:1: kernels: unknown mode turbo (fast_run, fast_compile or none)" \
    "$TGREL" -f "$tmp/mode.tg"

printf '(include "all.rules")\n:eval (exp (input x float64 (1))) (x (1))\n' >"$tmp/env.tg"
t "an unknown mode in TGREL_MODE, when :eval needs it" 1 "" \
    "$tmp/env.tg:2:1: kernels: unknown mode turbo in TGREL_MODE (fast_run, fast_compile or none)" \
    env TGREL_MODE=turbo "$TGREL" -f "$tmp/env.tg"

printf '(include "all.rules")\n\n:check on abc\n:check on -1\n:check on nan\n' >"$tmp/tol.tg"
t "a checking tolerance that is not a finite number >= 0" 1 "" \
    "$tmp/tol.tg:3:1: :check on TOL: the tolerance must be a finite number >= 0, not abc*$tmp/tol.tg:4:1: *not -1*$tmp/tol.tg:5:1: *not nan" \
    "$TGREL" -f "$tmp/tol.tg"

echo "1..$n"
[ $failed = 0 ]
