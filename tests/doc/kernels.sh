#!/bin/sh
# kernels.sh - doc/kernels.md's transcripts are tests, run as tutorial.sh
# runs the tutorial's: one REPL session from the source directory, each
# entry's answer compared.
TGREL_DOC=${srcdir:-.}/doc/kernels.md
export TGREL_DOC
exec sh "${srcdir:-.}/tests/doc/tutorial.sh"
