#!/bin/sh
# examples.sh - the example programs of examples/ run and print what
# they should (they are built by `make check` against the library).

top=${top_builddir:-.}
n=0
failed=0

# ex NAME EXPECTED: run examples/NAME and compare its standard output
ex() {
    n=$((n + 1))
    got=$("$top/examples/$1" 2>&1)
    status=$?
    if [ "$status" = 0 ] && [ "$got" = "$2" ]; then
        echo "ok $n - examples/$1"
    else
        failed=$((failed + 1))
        echo "not ok $n - examples/$1 (status $status)"
        printf '%s\n' "$2" | sed 's/^/#   expected: /'
        printf '%s\n' "$got" | sed 's/^/#        got: /'
    fi
}

ex embed "the same term twice: yes
input:   (true_div (mul (add y z) x) (add y z))
output:  x
profile: (profile simplify (passes 2) (nodes 3 0 3) (rewrites 1) (conditions 0) (rules (mul-div-cancel 1 0)) (never-fired))"

ex query "answer 1: ((1) (2 3))
answer 2: ((1 2) (3))
answer 3: ((1 2 3) ())
3 answers"

ex mul_div_cancel "input:   (true_div (mul (add y z) x) (add y z))
result:  x
profile: (profile canonicalize-c (passes 2) (nodes 3 0 3) (rewrites 1) (conditions 0) (rules (mul-div-cancel-c 1 0)) (never-fired))
result:  x
profile: (profile canonicalize-rule (passes 2) (nodes 3 0 3) (rewrites 1) (conditions 0) (rules (mul-div-cancel 1 0)) (never-fired))
input:   (true_div (mul y x) y)
result:  x
profile: (profile canonicalize-c (passes 2) (nodes 2 0 2) (rewrites 1) (conditions 0) (rules (mul-div-cancel-c 1 0)) (never-fired))
result:  x
profile: (profile canonicalize-rule (passes 2) (nodes 2 0 2) (rewrites 1) (conditions 0) (rules (mul-div-cancel 1 0)) (never-fired))
input:   (true_div (mul x y) z)
result:  (true_div (mul x y) z)
profile: (profile canonicalize-c (passes 1) (nodes 2 2 2) (rewrites 0) (conditions 0) (rules) (never-fired mul-div-cancel-c))
result:  (true_div (mul x y) z)
profile: (profile canonicalize-rule (passes 1) (nodes 2 2 2) (rewrites 0) (conditions 0) (rules) (never-fired mul-div-cancel))"

ex shared "step 0: loss 21.000000
step 1: loss 7.058750
step 2: loss 2.373022
step 10: loss 0.000920
step 50: loss 0.000048
w = 2.000058, b = 0.999876"

ex userop "1 + hyp(x, y), compiled: 6.000000 7.403124
the same, interpreted: 6.000000 7.403124
d sum(hyp(x, y)) / dx: 0.600000 0.780869"

echo "1..$n"
[ $failed = 0 ]
