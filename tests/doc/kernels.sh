#!/bin/sh
# kernels.sh - doc/kernels.md's transcripts are tests, run as tutorial.sh
# runs the tutorial's, compiling into an empty cache; the times of its
# profiles compare as T.
TGREL_DOC=${srcdir:-.}/doc/kernels.md
TGREL_DOC_TIMES=1
TGREL_DOC_FRESH_CACHE=1
export TGREL_DOC TGREL_DOC_TIMES TGREL_DOC_FRESH_CACHE
exec sh "${srcdir:-.}/tests/doc/tutorial.sh"
