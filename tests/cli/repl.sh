#!/bin/sh
# repl.sh - TAP tests of the REPL as programs use it: entries read from a
# pipe (multi-line forms, :commands, errors that do not stop the session),
# scripts (-f), -i, the machine mode and --check.  The terminal side
# (prompt, completion, Ctrl-C, history) is tested by test_repl_pty.c.
# Run by `make check` with $TGREL set; by hand, from the build directory:
# TGREL=./tgrel srcdir=.. sh ../tests/cli/repl.sh

TGREL=${TGREL:-./tgrel}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tgrel-repl.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=tests/src/tap.sh
. "${srcdir:-.}/tests/src/tap.sh"

# input LINE...: standard input of the next tests, one argument a line
input() {
    printf '%s\n' "$@" >"$tmp/in"
}

nl='
'

cat >"$tmp/alg.rules" <<'RULES'
(op add (arity 2) comm)
(op mul (arity 2) comm)
(op neg (arity 1))
(rule add-zero (add 0 ?x) => ?x (tags fast))
(rule neg-neg (neg (neg ?x)) => ?x)
(op twice (arity 1))
(rule twice-add (twice ?x) <=> (add ?x ?x))
(equilibrium simplify (tags canon) add-zero neg-neg)
RULES

input '(op f (arity 1))' '(rule r (f ?x)' '   => ?x)' '(normalize' '  (f (f a)))'
t "a form may span lines" 0 "a" "" "$TGREL"

input '"((" ; (' '#| ( |# (f' ' ' "  '" '  x)'
t "strings, comments and a quote do not end or open an entry" 0 '"(("'"${nl}(f 'x)" "" "$TGREL"

input '|a (b|' '?|c d|'
t "quoted symbols and variables with parentheses are one line each" 0 "|a (b|${nl}?|c d|" "" "$TGREL"

input "(f" "  (g"
t "input that ends inside an entry reports it where it started" 1 "" "<stdin>:3:1: unterminated list (opened at 2:3)" "$TGREL"

input ':ops' ':rules' ':rewriters'
t ":ops, :rules, :rewriters list what a file declared" 0 \
"(op add (arity 2) comm)
(op mul (arity 2) comm)
(op neg (arity 1))
(op twice (arity 1))
(rule add-zero (add 0 ?x) => ?x (tags fast))
(rule neg-neg (neg (neg ?x)) => ?x)
(rule twice-add (twice ?x) <=> (add ?x ?x))
(equilibrium simplify (tags canon) add-zero neg-neg)" "" "$TGREL" "$tmp/alg.rules" -

input '(defrel (twice x y) (conso x x y))' ':relations'
"$TGREL" >"$tmp/rels" <"$tmp/in" 2>&1
grep -qx '(twice 2)' "$tmp/rels" && grep -qx '(appendo 3)' "$tmp/rels"
report $? ":relations lists defined and library relations with their arity" "$tmp/rels"
! grep -q lambda "$tmp/rels"
report $? ":relations lists no anonymous relations" "$tmp/rels"

input ":load $tmp/alg.rules" ':rewrite simplify (add 0 (neg (neg y)))' ':profile'
t ":load, :rewrite and :profile" 0 "y
(profile simplify (passes 2) (nodes 3 0 3) (rewrites 2) (conditions 0) (rules (add-zero 1 0) (neg-neg 1 0)) (never-fired))" "" "$TGREL"

input ':profile eval' ':profile fn nothing' ':profile rewrite' ':profile sideways' ':profile fn'
t ":profile's errors: nothing yet, no such function, a bad argument" 1 "" \
"<stdin>:1:1: no :eval has compiled a function yet
<stdin>:2:1: no function nothing (:fn defines one)
<stdin>:3:1: no rewrite has run yet
<stdin>:4:1: usage: :profile ?eval | fn NAME | rewrite?
<stdin>:5:1: usage: :profile ?eval | fn NAME | rewrite?" "$TGREL"

input ':rewrite simplify (add 0 (neg (neg y)))' ':profile rewrite'
"$TGREL" "$tmp/alg.rules" - <"$tmp/in" >"$tmp/prof" 2>&1
grep -q '^  simplify (equilibrium): .* ms, 1 run, 2 passes$' "$tmp/prof" &&
    grep -q '^ *[0-9.]* us  *1  *0  *1  add-zero$' "$tmp/prof"
report $? ":profile rewrite times the rewriter and its rules" "$tmp/prof"

input ":rewrite (query simplify (exclude neg-neg)) (add 0 (neg (neg y)))"
t ":rewrite takes a query" 0 "(neg (neg y))" "" "$TGREL" "$tmp/alg.rules" -

input ':normalize (add 0 (twice z))' ':normalize (add 0 z) memo'
t ":normalize, with and without memo" 0 "(add z z)${nl}z" "" "$TGREL" "$tmp/alg.rules" -

input ':trace on' ':normalize (add 0 (neg (neg b)))' ':trace off' ':normalize (neg (neg c))' ':trace'
t ":trace prints each firing until it is switched off" 0 "trace on
neg-neg: (neg (neg b)) => b
add-zero: (add 0 b) => b
b
trace off
c
trace off" "" "$TGREL" "$tmp/alg.rules" -

printf '(op g (arity 1))\n(rule bad (g ?x) => ?y)\n' >"$tmp/bad.rules"
input ":load $tmp/bad.rules" ':rules'
t ":load of a bad file reports file:line:column and loads nothing" 1 "" \
    "$tmp/bad.rules:2:*?y is not bound by the left side*" "$TGREL"

input ":load $tmp/nope.rules" 'ok'
t ":load of a missing file names it and the session goes on" 1 "ok" "*$tmp/nope.rules*" "$TGREL"

input ':frob' 'a' ':rewrite x' 'b'
t "an unknown command or bad usage reports the line and the session goes on" 1 "a${nl}b" \
"<stdin>:1:1: unknown command :frob (:help lists them)
<stdin>:3:1: usage: :rewrite REWRITER-OR-QUERY-OR-RULE TERM" "$TGREL"

input ':rewrite simplify (add 0' '   (neg x)))'
t "errors in a command's arguments point at their line and column" 1 "" "<stdin>:2:12: unexpected ')'" "$TGREL"

# indented commands: an error points at the argument it is about, else at
# the command, at its real column (not column 1)
input '   :rewrite (nosuch) a' '  :step nosuch a' '    :normalize (f a) bad' '  :undef nosuch' \
    "   :load $tmp/no/such.rules" '     :reload  "nowhere.rules"' "  :dot (f a) \"$tmp/no/x.dot\"" \
    '   :frob' '  :let' '  :rewrite (reverse nosuch) (g a)'
t "indented commands report the column of the argument, or of the command" 1 "" \
"<stdin>:1:13: unknown rewriter (nosuch)*
<stdin>:2:9: unknown rewriter nosuch*
<stdin>:3:16: malformed normalize*
<stdin>:4:10: nosuch is not defined*
<stdin>:5:10: cannot load $tmp/no/such.rules: cannot open*
<stdin>:6:15: cannot load nowhere.rules*
<stdin>:7:14: cannot write $tmp/no/x.dot*
<stdin>:8:4: unknown command :frob*
<stdin>:9:3: usage: :let NAME*
<stdin>:10:12: *nosuch*" "$TGREL"

input ':help rewrite' ':help nothing'
t ":help COMMAND shows an example, an unknown one is an error" 1 \
":rewrite SPEC TERM
    rewrite TERM with a rewriter, a query or a single rule
    example: :rewrite (query simplify (exclude div-self)) (true_div x x)" \
"<stdin>:2:1: no command :nothing (:help lists them)" "$TGREL"

input ':help grad' ':eval (grad (sum (sqr (input x float64 (3))) all) (input x float64 (3))) (x (1 2 3))'
"$TGREL" <"$tmp/in" >"$tmp/help" 2>&1
ex=$(sed -n 's/^    example: //p' "$tmp/help")
grep -q '^(grad COST WRT) is the derivative' "$tmp/help" && [ -n "$ex" ] &&
    printf '%s\n' "$ex" | "$TGREL" 2>&1 | grep -qx '(2.0 4.0 6.0)'
report $? ":help grad explains gradients, and its example runs"

input ':help'
"$TGREL" <"$tmp/in" >"$tmp/help" 2>&1
missing=
for c in help load ops rules rewriters relations rewrite step normalize trace profile tree dot history eval types shared mode check quit; do
    grep -q "^  :$c " "$tmp/help" || missing="$missing $c"
done
[ -z "$missing" ]
report $? ":help lists every command${missing:+ (missing:$missing)}"

input ':step simplify (add 0 (neg (neg w)))' ':step (add 0 x)' ':step nope (a)' ':rules'
t ":step shows the firings a result depends on, and leaves provenance as it was" 1 "why w: 2 firings
  #1 neg-neg, pass 1, at (2): (neg (neg w)) => w
  #2 add-zero, pass 1, at (): (add 0 w) => w
w
why x: 1 firing
  #1 add-zero, pass 1, at (): (add 0 x) => x
x
(rule add-zero (add 0 ?x) => ?x (tags fast))
(rule neg-neg (neg (neg ?x)) => ?x)
(rule twice-add (twice ?x) <=> (add ?x ?x))" "<stdin>:3:7: unknown rewriter nope*" "$TGREL" "$tmp/alg.rules" -

input ':history' ':step simplify (add 0 (neg (neg w)))' ':history firings' ":history firings \"$tmp/h.dot\""
t ":history firings writes the graph of the last :step's firings" 1 'why w: 2 firings
  #1 neg-neg, pass 1, at (2): (neg (neg w)) => w
  #2 add-zero, pass 1, at (): (add 0 w) => w
w
digraph history {
  rankdir=LR;
  node [shape=box, fontname="monospace"];
  n1 [label="(neg (neg w))"];
  n2 [label="w"];
  n1 -> n2 [label="#1 neg-neg (at 2)"];
  n3 [label="(add 0 w)"];
  n3 -> n2 [label="#2 add-zero (at)"];
}
wrote '"$tmp/h.dot: the firings the last :step's result depends on" "<stdin>:1:1: no rewrite history yet: :step a rewrite first" "$TGREL" "$tmp/alg.rules" -
grep -q 'n3 -> n2 \[label="#2 add-zero (at)"\];' "$tmp/h.dot"
report $? ":history firings FILE writes the graph to the file" "$tmp/h.dot"

input ':step simplify (add 0 (neg (neg w)))' ':history'
t ":history draws the whole term after each firing, each edge the rule and position" 0 'why w: 2 firings
  #1 neg-neg, pass 1, at (2): (neg (neg w)) => w
  #2 add-zero, pass 1, at (): (add 0 w) => w
w
digraph history {
  ordering=out;
  node [shape=box, fontname="monospace"];
  s0 [label="start", shape=ellipse, style=filled, fillcolor=lightyellow];
  s0 -> n1 [style=dashed, arrowhead=none];
  n1 [label="add"];
  n1 -> n2 [label="1"];
  n1 -> n3 [label="2"];
  n3 [label="neg"];
  n3 -> n4;
  n4 [label="neg"];
  n4 -> n5;
  n5 [label="w", shape=plaintext];
  n2 [label="0", shape=plaintext];
  s1 [label="#1", shape=ellipse, style=filled, fillcolor=lightyellow];
  s1 -> n6 [style=dashed, arrowhead=none];
  n6 [label="add"];
  n6 -> n2 [label="1"];
  n6 -> n5 [label="2"];
  s0 -> s1 [label="#1 neg-neg (at 2)", color=blue, fontcolor=blue];
  s2 [label="#2", shape=ellipse, style=filled, fillcolor=lightyellow];
  s2 -> n5 [style=dashed, arrowhead=none];
  s1 -> s2 [label="#2 add-zero (at)", color=blue, fontcolor=blue];
  { rank=same; s0; s1; s2; }
}' "" "$TGREL" "$tmp/alg.rules" -

# a shared subterm rewritten once: every snapshot's subterms drawn once
input ':step (add (neg (neg (twice 0))) (neg (neg (twice 0))))' ":history \"$tmp/s.dot\"" \
      ":history passes \"$tmp/p.dot\""
"$TGREL" "$tmp/alg.rules" - <"$tmp/in" >"$tmp/out" 2>&1
nodes=$(grep -c '^  n[0-9]* \[label' "$tmp/s.dot")
distinct=$(sed -n 's/^  \(n[0-9]*\) \[label.*/\1/p' "$tmp/s.dot" | sort -u | wc -l)
states=$(grep -c '^  s[0-9]* \[label' "$tmp/s.dot")
[ "$nodes" = 12 ] && [ "$distinct" = 12 ] && [ "$states" = 5 ] &&
   grep -q '^  s0 -> s1 \[label="#1 twice-add (at 1 1 1)"' "$tmp/s.dot" &&
   grep -q '^  s1 -> s2 \[label="#2 add-zero (at 1 1 1)"' "$tmp/s.dot" &&
   grep -q '^  s3 -> n9 \[style=dashed' "$tmp/s.dot" &&
   grep -q '^  n9 -> n5 \[label="2"\];' "$tmp/s.dot"
report $? ":history FILE: 5 snapshots over 12 distinct subterms, a term met again is its old node" \
    "$tmp/out" "$tmp/s.dot"
grep -q '^  s0 -> s1 \[label="pass 1: 4 firings: twice-add add-zero neg-neg"' "$tmp/p.dot" &&
    [ "$(grep -c '^  s[0-9]* \[label' "$tmp/p.dot")" = 2 ]
report $? ":history passes FILE: one snapshot per pass, the edge names its rules" "$tmp/p.dot"
if command -v dot >/dev/null 2>&1; then
    for g in "$tmp/s.dot" "$tmp/p.dot" "$tmp/h.dot"; do
        dot -Tsvg "$g" >/dev/null 2>"$tmp/err"
        report $? "Graphviz accepts $(basename "$g")" "$tmp/err"
    done
fi

input ':step simplify (add 0 z)' ':history passes 12' ':history a b'
t ":history takes firings or passes, then a file" 1 "why z: 1 firing
  #1 add-zero, pass 1, at (): (add 0 z) => z
z" "<stdin>:2:1: usage: :history \\[firings|passes\\] \\[FILE\\] (FILE a name or a string)
<stdin>:3:1: usage: :history \\[firings|passes\\] \\[FILE\\]" "$TGREL" "$tmp/alg.rules" -

input ':tree (f (g a b) (g a b) (h (g a b) (k (l m) n)))'
t ":tree shows one node a line and names shared subterms" 0 "f
  *1 = (g a b)
  *1
  h
    *1
    k
      (l m)
      n" "" "$TGREL"

input ':tree ((f x) y . z)'
t ":tree shows a compound head and a dotted tail" 0 "(...)
  (f x)
  y
  z" "" "$TGREL"

input ':dot (f (g a) (g a))'
t ":dot writes one node per distinct subterm" 0 'digraph term {
  ordering=out;
  node [shape=box, fontname="monospace"];
  n1 [label="f"];
  n1 -> n2 [label="1"];
  n1 -> n2 [label="2"];
  n2 [label="g"];
  n2 -> n3;
  n3 [label="a", shape=plaintext];
}' "" "$TGREL"

input ":dot (h \"q\\\"\") \"$tmp/t.dot\""
t ":dot FILE writes the file" 0 "" "" "$TGREL"
grep -qF 'n2 [label="\"q\\\"\"", shape=plaintext];' "$tmp/t.dot"
report $? "dot labels escape quotes and backslashes" "$tmp/t.dot"

input ":dot (f a) $tmp/t.svg"
if command -v dot >/dev/null 2>&1; then
    t ":dot FILE.svg runs Graphviz" 0 "" "" "$TGREL"
else
    t ":dot FILE.svg without Graphviz says what to install" 1 "" "*apt-get install graphviz*" "$TGREL"
fi

input ':shared on' '(f (g a) (g a))' ':shared off' '(f (g a) (g a))'
t ":shared names repeated subterms" 0 "shared on
(f *1 *1) where *1 = (g a)
shared off
(f (g a) (g a))" "" "$TGREL"

input 'a' ':quit' 'b'
t ":quit stops reading" 0 "a" "" "$TGREL"

input '(op p (arity 1))' ':frob' '(p' '  x)' 'c'
t "--machine: errors on standard output and ;;end after each entry" 1 ";;end
!error <stdin>:2:1: unknown command :frob (:help lists them)
;;end
(p x)
;;end
c
;;end" "" "$TGREL" --machine

printf '(op q (arity 1))\n:rules\n(rule r (q ?x) => ?x)\n:rules\n\n(normalize (q 1))\n:nope\n' >"$tmp/script"
: >"$tmp/in"
t "-f runs a script of forms and commands, errors name it" 1 "(rule r (q ?x) => ?x)${nl}1" \
    "$tmp/script:7:1: unknown command :nope*" "$TGREL" -f "$tmp/script"

t "-f of a missing script" 1 "" "*cannot open $tmp/none*" "$TGREL" -f "$tmp/none"

input '(normalize (add 0 k))'
t "-i reads standard input after files and -e" 0 "e${nl}k" "" "$TGREL" "$tmp/alg.rules" -e e -i

: >"$tmp/in"
t "--check of good files prints nothing" 0 "" "" "$TGREL" --check "$tmp/alg.rules" "$tmp/alg.rules"
t "--check reports each bad file" 1 "" "$tmp/bad.rules:2:*$tmp/nope.rules*" \
    "$TGREL" --check "$tmp/bad.rules" "$tmp/alg.rules" "$tmp/nope.rules"
t "--check needs files" 2 "" "*--check needs at least one file*" "$TGREL" --check
t "--check takes no -e" 2 "" "*--check takes files*" "$TGREL" --check -e a

# :eval compiles a tensor term and runs it on literal arrays or .npy files
input ':eval (add (input x float64 (3)) 1) (x (1 2 3))' \
      ':eval (mul (input a int64 (2 2)) (input b int64 (2))) (a ((1 2) (3 4))) (b (10 100))' \
      ':eval (sum (input x float64 (n 2)) (1)) (x ((1 2) (3 4) (5 6)))' \
      ':eval (lt (input x int32 (2)) 2) (x (1 5))' \
      ':eval (neg (input x float64 ())) (x 5/2)' \
      ':eval (input x float64 (2 0)) (x (() ()))'
t ":eval runs tensor terms on literal arrays" 0 "(2.0 3.0 4.0)
((10 200) (30 400))
(3.0 7.0 11.0)
(1 0)
-2.5
(() ())" "" "$TGREL"

# functions with state: :var makes, sets and prints shared variables, :fn
# compiles a function with updates, :call and :repeat run it
input ':var w float64 (0 0)' ':var b float64 0' \
      ':fn step (inputs (input x float64 (n))) (outputs (sum (shared w float64 (n))) (shared b float64 ())) (updates ((shared w float64 (n)) (add (shared w float64 (n)) (input x float64 (n)))) ((shared b float64 ()) (add (shared b float64 ()) 1)))' \
      ':call step (x (1 2))' ':var w' ':repeat 10 step (x (0.5 1))' ':var w' ':var b' \
      ':fn swap (outputs) (updates ((shared w float64 (n)) (shared v float64 (n))) ((shared v float64 (n)) (shared w float64 (n))))' \
      ':var v float64 (7 8)' \
      ':fn swap (outputs) (updates ((shared w float64 (n)) (shared v float64 (n))) ((shared v float64 (n)) (shared w float64 (n))))' \
      ':call swap' ':var w' ':var v'
t ":var, :fn, :call and :repeat: a function updating shared variables" 1 "w: float64 (2)
b: float64 ()
step: 1 input, 2 outputs, 2 updates
0.0
0.0
(1.0 2.0)
16.5
10.0
(6.0 12.0)
11.0
v: float64 (2)
swap: 0 inputs, 0 outputs, 2 updates
(7.0 8.0)
(6.0 12.0)" "<stdin>:9:1: kernels: in (shared v float64 (n)): no shared variable v in this context" "$TGREL"

# the man page's example of :repeat
input ':var w float64 (0 0)' \
      ':fn step (inputs (input x float64 (2))) (outputs) (updates ((shared w float64 (2)) (add (shared w float64 (2)) (input x float64 (2)))))' \
      ':repeat 10 step (x (1 2))' ':var w'
t ":repeat 10 step (x (1 2)) leaves w at (10.0 20.0)" 0 "w: float64 (2)
step: 1 input, 0 outputs, 1 update
(10.0 20.0)" "" "$TGREL"

# doc/kernels.md's random draws from a state an update advances
input ':var rng int64 11' \
      ':fn noise (outputs (random uniform (shared rng int64 ()) (3) 0 1)) (updates ((shared rng int64 ()) (add (shared rng int64 ()) 1)))' \
      ':call noise' ':call noise' ':var rng int64 11' ':call noise' ':var rng'
t "random draws: a state set back draws again what it drew" 0 "rng: int64 ()
noise: 0 inputs, 1 output, 1 update
(0.9587867103740684 0.6934046604194692 0.034212382650878115)
(0.5251201891809784 0.6804808585015907 0.5808752436854749)
rng: int64 ()
(0.9587867103740684 0.6934046604194692 0.034212382650878115)
12" "" "$TGREL"

# :let names a subterm for later :eval, :fn and :let entries, expanded
# when read; a deep term goes through without recursion
input ':let r (sub (mul (shared w float64 ()) (input x float64 (n))) (input y float64 (n)))' \
      ':let loss (mean (sqr r))' ':let loss' ':var w float64 0' \
      ':fn step (inputs (input x float64 (n)) (input y float64 (n))) (outputs loss) (updates ((shared w float64 ()) (sub (shared w float64 ()) (mul 0.1 (mean (mul r (input x float64 (n))))))))' \
      ':repeat 50 step (x (1 2 3)) (y (2 4 6))' ':var w' ':eval (add r 1) (x (1 2)) (y (0 0))' \
      ':let r (input x float64 (n))' ':let loss' ':let q' ':let (a) b'
t ":let names subterms for :eval, :fn and :let" 1 "(mean (sqr (sub (mul (shared w float64 ()) (input x float64 (n))) (input y float64 (n)))))
w: float64 ()
step: 2 inputs, 1 output, 1 update
3.294999688858521e-26
1.9999999999999554
(2.9999999999999556 4.999999999999911)
(mean (sqr (sub (mul (shared w float64 ()) (input x float64 (n))) (input y float64 (n)))))" "<stdin>:11:1: q is not bound by :let
<stdin>:12:1: usage: :let NAME ?TERM?, NAME a symbol" "$TGREL"
deep=$(awk 'BEGIN { for (i = 0; i < 100000; i++) printf "(neg "; printf "x"; for (i = 0; i < 100000; i++) printf ")" }')
input ":let d $deep" ':let e (g d d)' ':let e' 
"$TGREL" <"$tmp/in" >"$tmp/out" 2>"$tmp/err"
[ $? = 0 ] && [ ! -s "$tmp/err" ] && [ "$(wc -c <"$tmp/out")" -gt 1200000 ]
report $? ":let of a term 10^5 levels deep, used twice in another" "$tmp/out" "$tmp/err"

# a failed call leaves the variables as they were; errors name the culprit
input ':var w float64 (1 2)' \
      ':fn f (inputs (input x float64 (2))) (outputs) (updates ((shared w float64 (2)) (mul (shared w float64 (2)) (input x float64 (2)))))' \
      ':var w float64 (1 2 3)' ':call f (x (2 2))' ':var w' ':var w int64 (1 2)' ':var w float64 (3 4)' \
      ':call f (x (2 2))' ':var w' ':call g' ':repeat 0 f (x (1 1))' ':var q' \
      ':fn h (inputs (input x int64 (2))) (outputs) (updates ((shared w float64 (2)) (input x int64 (2))))' ':var w float64 "nope.npy"'
t "errors of :var, :fn, :call and :repeat leave the variables as they were" 1 "w: float64 (2)
f: 1 input, 0 outputs, 1 update
w: float64 (3)
(1.0 2.0 3.0)
w: float64 (2)
(6.0 8.0)" "<stdin>:4:1: kernels: shared variable w: expected shape (2), got (3)
<stdin>:6:1: w: kernels: shared variable w is float64 with 1 axes, the value int64 with 1
<stdin>:10:1: no function g (:fn defines one)
<stdin>:11:1: :repeat needs a count of at least 1
<stdin>:12:1: no shared variable q (:var NAME DTYPE VALUE makes one)
<stdin>:13:1: kernels: in (input x int64 (2)): the new value of shared variable w is int64, w is float64
<stdin>:14:1: w: *nope.npy*" "$TGREL"

# :var takes a term's value (cast to its dtype, :let names expanded);
# :repeat (every K) prints the outputs after every K calls (in a pipe: no
# bar); :save writes a variable or a term's value as .npy, read back
input ':let two (add 1 1)' ':var v float64 (mul two (alloc 1.5 3))' ':var k int64 (sum (shared v float64 (3)) all)' \
      ':var v' ':var k' \
      ':fn inc (outputs (sum (shared v float64 (3)) all)) (updates ((shared v float64 (3)) (add (shared v float64 (3)) 1)))' \
      ':repeat 4 inc (every 2)' ':repeat 3 inc (every 2)' \
      ":save v \"$tmp/v.npy\"" ":save (mul (shared v float64 (3)) 2) \"$tmp/v2.npy\"" \
      ":var u float64 \"$tmp/v.npy\"" ":eval (input z float64 (3)) (z \"$tmp/v2.npy\")" \
      ':save nope "x.npy"' ":save v \"$tmp/no/such/dir.npy\"" ':save v x.npy' ':repeat 2 inc (every 0)' \
      ':var k float64 (frob 1)'
t ":var of a term, :repeat (every K), :save" 1 "v: float64 (3)
k: int64 ()
(3.0 3.0 3.0)
9
inc: 0 inputs, 1 output, 1 update
inc 2/4: 12.0
inc 4/4: 18.0
inc 2/3: 24.0
27.0
u: float64 (3)
(20.0 20.0 20.0)" "<stdin>:13:1: no shared variable nope (:var makes one; or give a term)
<stdin>:14:1: $tmp/no/such/dir.npy: No such file or directory
<stdin>:15:1: usage: :save NAME-OR-TERM \"FILE.npy\" (the file name a string)
<stdin>:16:1: :repeat: (every K) needs a count K of at least 1
<stdin>:17:1: k: kernels: in (frob 1): unknown op" "$TGREL"

# a scan is a tensor term like any other (doc/scan.md)
input ':eval (scan (lambda (xt acc) ((add acc xt))) (steps auto) (sequences (input x float64 (n))) (outputs (sitsot 0)) (non_sequences)) (x (1 2 3 4))' \
      ':eval (scan (lambda (a b) ((add a b))) (steps 6) (sequences) (outputs (mitsot (input f int64 (2)) (taps -2 -1))) (non_sequences)) (f (0 1))' \
      ':eval (scan (lambda (xt) ((mul xt 10))) (steps 2) (sequences (input x int64 (n 2))) (outputs (nitsot)) (non_sequences) backwards) (x ((1 2) (3 4) (5 6)))' \
      ':eval (scan_steps (scan (lambda (xt acc) ((add acc xt)) (until (gt (add acc xt) 5))) (steps auto) (sequences (input x int64 (n))) (outputs (sitsot 0 last)) (non_sequences))) (x (1 2 3 4 5))' \
      ':eval (scan (lambda (h) ((sum h))) (steps 2) (sequences) (outputs (sitsot (input h float64 (2)))) (non_sequences)) (h (1 2))'
t ":eval runs scans" 1 "(1.0 3.0 6.0 10.0)
(1 2 3 5 8 13)
((30 40) (10 20))
3" "<stdin>:5:1: kernels: in (scan (lambda (h) ((sum h))) (steps 2) (sequences) (outputs (sitsot (input h float64 (2)))) (non_sequences)): output 0 changes shape between steps: (2) before a step, () after" "$TGREL"

# a gradient is a tensor term too, expanded with the library's rules:
# nothing is loaded (doc/grad.md)
input ':eval (grad (sum (sqr (input x float64 (3))) all) (input x float64 (3))) (x (1 2 3))' \
      ':eval (grad (mean (mul (input w float64 (2)) (input x float64 (3 2))) all) (input w float64 (2))) (w (1 -1)) (x ((1 2) (3 4) (5 6)))' \
      ':eval (grad (sum (mul (grad (sum (mul (input x float64 (2)) (input x float64 (2)) (input x float64 (2))) all) (input x float64 (2))) (input v float64 (2))) all) (input x float64 (2))) (x (1 2)) (v (1 0))' \
      ':eval (grad (sum (input x float64 (3)) all) (input y float64 (3))) (x (1 2 3)) (y (1 2 3))'
t ":eval computes gradients with nothing loaded" 1 "(2.0 4.0 6.0)
(1.5 2.0)
(6.0 0.0)" "<stdin>:4:1: grad: in (grad (sum (input x float64 (3)) all) (input y float64 (3))): the cost does not depend on (input y float64 (3)) (tg_grad_options.disconnected makes its gradient zero)" "$TGREL"

input ':eval (add (input x float64 (3)) 1)' \
      ':eval (add (input x float64 (3)) 1) (x (1 2))' \
      ':eval (add (input x float64 (3)) 1) (x (1 (2) 3))' \
      ':eval (add (input x int64 (2)) 1) (x (1 1.5))' \
      ':eval (frob (input x float64 (2))) (x (1 2))' \
      'after'
t ":eval errors name the input and the session goes on" 1 "after" \
"<stdin>:1:1: no value for input x: give (NAME VALUE) after the term
<stdin>:2:1: kernels: input x: expected shape (3), got (2)
<stdin>:3:37: input x: not a rectangular array of numbers
<stdin>:4:35: input x: an element is not a int64 value
<stdin>:5:1: *frob*" "$TGREL"

# mknpy FILE DESCR SHAPE FORTRAN DATA: a .npy file (version 1, the header
# padded to 128 bytes); DATA is printf text of the elements' bytes
mknpy() {
    hdr="{'descr': '$2', 'fortran_order': $4, 'shape': $3, }"
    pad=$((128 - 10 - ${#hdr} - 1))
    {
        printf '\223NUMPY\001\000'
        printf "\\$(printf %03o $((${#hdr} + pad + 1)))\\000"
        printf '%s' "$hdr"
        printf "%${pad}s\n" ""
        printf "$5"
    } >"$1"
}
mknpy "$tmp/x.npy" '<f8' '(2,)' False '\000\000\000\000\000\000\360\077\000\000\000\000\000\000\000\100'
mknpy "$tmp/m.npy" '<i4' '(2, 1)' False '\007\000\000\000\011\000\000\000'
mknpy "$tmp/f.npy" '<f8' '(2,)' True '\000\000\000\000\000\000\360\077\000\000\000\000\000\000\000\100'
mknpy "$tmp/t.npy" '<f8' '(3,)' False '\000\000\000\000\000\000\360\077'
printf 'not an array' >"$tmp/n.npy"
input ":eval (mul (input x float64 (2)) 3) (x \"$tmp/x.npy\")" \
      ":eval (add (input m int32 (2 1)) (input k int32 (3))) (m \"$tmp/m.npy\") (k (0 10 20))"
t ":eval reads .npy files" 0 "(3.0 6.0)
((7 17 27) (9 19 29))" "" "$TGREL"

# a large result: the terms of its elements are held by nothing else while
# the next ones are made, and collections run meanwhile
input ":eval (add (input x float64 (n)) 0.5) (x ($(seq 0 299999 | tr '\n' ' ')))"
"$TGREL" <"$tmp/in" >"$tmp/big.out" 2>&1
seq 0 299999 | awk '{ printf "%s%s.5", (NR > 1 ? " " : "("), $1 } END { print ")" }' >"$tmp/big.want"
cmp -s "$tmp/big.want" "$tmp/big.out"
big=$?
head -c 300 "$tmp/big.out" >"$tmp/big.head"
report $big ":eval returns a large array whole" "$tmp/big.head"

# Fortran order (a 2x3 matrix stored by columns) and big-endian data
# are read as what they hold
mknpy "$tmp/f23.npy" '<i8' '(2, 3)' True \
    '\001\0\0\0\0\0\0\0\004\0\0\0\0\0\0\0\002\0\0\0\0\0\0\0\005\0\0\0\0\0\0\0\003\0\0\0\0\0\0\0\006\0\0\0\0\0\0\0'
mknpy "$tmp/be.npy" '>f8' '(2,)' False '\077\360\000\000\000\000\000\000\300\000\000\000\000\000\000\000'
mknpy "$tmp/bi.npy" '>i4' '(2, 1)' True '\000\000\000\007\377\377\377\367'
mknpy "$tmp/u2.npy" '<u2' '(1,)' False '\000\000'
input ":eval (neg (input x int64 (2 3))) (x \"$tmp/f23.npy\")" \
      ":eval (neg (input x float64 (2))) (x \"$tmp/be.npy\")" \
      ":eval (neg (input x int32 (2 1))) (x \"$tmp/bi.npy\")" \
      ":eval (neg (input x float64 (2))) (x \"$tmp/f.npy\")"
t ":eval reads Fortran-ordered and big-endian .npy files" 0 "((-1 -2 -3) (-4 -5 -6))
(-1.0 2.0)
((-7) (9))
(-1.0 -2.0)" "" "$TGREL"

input ":eval (neg (input x float64 (2))) (x \"$tmp/u2.npy\")" \
      ":eval (neg (input x float64 (3))) (x \"$tmp/x.npy\")" \
      ":eval (neg (input x float64 (3))) (x \"$tmp/t.npy\")" \
      ":eval (neg (input x float64 (3))) (x \"$tmp/n.npy\")" \
      ":eval (neg (input x float64 (3))) (x \"$tmp/none.npy\")"
t "bad .npy files are reported with their name" 1 "" \
"<stdin>:1:35: input x: $tmp/u2.npy: unsupported dtype (bool, int32, int64, float32 or float64)
<stdin>:2:1: kernels: input x: expected shape (3), got (2)
<stdin>:3:35: input x: $tmp/t.npy: truncated data: the header announces 24 bytes, the file has 8
<stdin>:4:35: input x: $tmp/n.npy: not a .npy file (version 1 to 3)
<stdin>:5:35: input x: *none.npy*" "$TGREL"

# what the issue asks of the REPL, one by one (the rest is above)
input ':rewrite add-zero (add 0 (neg y))' ':profile' ':rewrite (reverse twice-add) (add k k)' \
      ':rewriters' ':databases' ':step neg-neg (add 0 (neg (neg y)))'
t "a single rule rewrites (either way) and steps; its rewriter is not listed" 0 "(neg y)
(profile rule:add-zero (passes 2) (nodes 2 1 2) (rewrites 1) (conditions 0) (rules (add-zero 1 0)) (never-fired))
(twice k)
(equilibrium simplify (tags canon) add-zero neg-neg)
(equilibrium simplify (tags canon) add-zero neg-neg)
why (add 0 y): 1 firing
  #1 neg-neg, pass 1, at (2): (neg (neg y)) => y
(add 0 y)" "" "$TGREL" "$tmp/alg.rules" -

input '(run 3 (q) (fresh (a b) (appendo a b (quote (1 2))) (== q (list a b))))' \
      '(defrel (doubleo x y) (conso x (list x) y))' \
      '(run* (q) (doubleo q (quote (7 7))))' \
      '(op half (arity 1))' \
      '(rule half-two (half 2) => 1)' \
      '(normalize (half 2))' \
      '(run 1 (q) (doubleo q 5))'
t "miniKanren queries run, relations and rules are defined inline and run backwards" 0 \
"((() (1 2)) ((1) (2)) ((1 2) ()))
(7)
1
()" "" "$TGREL"

input '(normalize (add 0 (neg (neg z))))' ':ops'
"$TGREL" "$tmp/alg.rules" - <"$tmp/in" >"$tmp/out" 2>&1
[ "$(head -n 1 "$tmp/out")" = z ] && ! grep -q 'tgrel>' "$tmp/out" && ! grep -q ':help lists' "$tmp/out"
report $? "commands from a pipe: no banner, no prompt" "$tmp/out"

: >"$tmp/in"
t "tgrel FILE.rules -e EXPR" 0 "y${nl}(neg (neg y))" "" \
    "$TGREL" "$tmp/alg.rules" -e '(rewrite simplify (add 0 (neg (neg y))))' \
    -e '(rewrite (query simplify (exclude neg-neg)) (add 0 (neg (neg y))))'

noexample=
for c in $(sed -n 's/^  :\([a-z]*\) .*/\1/p' "$tmp/help"); do
    printf ':help %s\n' "$c" | "$TGREL" 2>&1 | grep -q '^    example: :' || noexample="$noexample $c"
done
[ -z "$noexample" ]
report $? ":help COMMAND shows an example for every command${noexample:+ (none for:$noexample)}"

# colour: asked for with --color=always (through a pipe too), never by
# default through a pipe, never in machine mode
e=$(printf '\033')
input ':trace on' '(normalize (add 0 (neg (neg b))))' ':trace off' ':rewrite simplify (add 0 v)' \
      ':profile' ':step simplify (neg (neg w))' ':frob'
t "--color=always colours rule names, :step's before and after, and errors" 1 "trace on
${e}[35mneg-neg${e}[0m: (neg (neg b)) => b
${e}[35madd-zero${e}[0m: (add 0 b) => b
b
trace off
v
(profile ${e}[35msimplify${e}[0m (passes 2) (nodes 1 0 1) (rewrites 1) (conditions 0) (rules (${e}[35madd-zero${e}[0m 1 0)) (never-fired ${e}[35mneg-neg${e}[0m))
why w: 1 firing
  #1 ${e}[35mneg-neg${e}[0m, pass 1, at (): ${e}[33m(neg (neg w))${e}[0m => ${e}[32mw${e}[0m
w" "${e}\\[31m<stdin>:7:1: unknown command :frob (:help lists them)${e}\\[0m" \
    "$TGREL" --color=always "$tmp/alg.rules" -
for how in "" --color=never "--color=always --machine" "--machine --color"; do
    # shellcheck disable=SC2086  # $how is zero, one or two options
    "$TGREL" $how "$tmp/alg.rules" - <"$tmp/in" >"$tmp/out" 2>"$tmp/err"
    ! grep -q "$e" "$tmp/out" "$tmp/err"
    report $? "no colour with '${how:-no option}' through a pipe" "$tmp/out" "$tmp/err"
done
input 'a'
t "NO_COLOR does not undo --color=always" 0 "a" "" env NO_COLOR=1 "$TGREL" --color=always -
t "--color=always: the program's own errors too" 1 "" "${e}\\[31m*nope.rules*${e}\\[0m" \
    "$TGREL" --color=always "$tmp/nope.rules"
t "--color with another value is a usage error" 2 "" "*--color takes auto, always or never*" \
    "$TGREL" --color=sometimes

src=${srcdir:-.}
missing=
for c in $(sed -n 's/^  :\([a-z]*\) .*/\1/p' "$tmp/help"); do
    grep -q ":$c" "$src/doc/tgrel.1" || missing="$missing :$c"
done
sed 's/\\-/-/g' "$src/doc/tgrel.1" >"$tmp/man"
for o in $("$TGREL" --help | sed -n 's/^ *\(-[a-z]\)*,* *\(--[a-z-]*\).*/\2/p'); do
    grep -q -- "$o" "$tmp/man" || missing="$missing $o"
done
[ -z "$missing" ]
report $? "the man page documents every command and option${missing:+ (missing:$missing)}"
: >"$tmp/in"
t "the bundled tour runs as its transcript shows" 0 "$(cat "$src/tests/src/data/tour.out")" "" \
    "$TGREL" "$src/examples/algebra.rules" -f "$src/examples/tour.tgs"

echo "1..$n"
[ $failed = 0 ]
