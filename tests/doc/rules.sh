#!/bin/sh
# rules.sh - doc/rules.md's transcripts are tests, run as tutorial.sh runs
# the tutorial's; the times of its profiles compare as T.
TGREL_DOC=${srcdir:-.}/doc/rules.md
TGREL_DOC_TIMES=1
export TGREL_DOC TGREL_DOC_TIMES
exec sh "${srcdir:-.}/tests/doc/tutorial.sh"
