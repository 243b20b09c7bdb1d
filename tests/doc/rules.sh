#!/bin/sh
# rules.sh - doc/rules.md's transcripts are tests, run as tutorial.sh runs
# the tutorial's: one REPL session from the source directory, each entry's
# answer compared.
TGREL_DOC=${srcdir:-.}/doc/rules.md
export TGREL_DOC
exec sh "${srcdir:-.}/tests/doc/tutorial.sh"
