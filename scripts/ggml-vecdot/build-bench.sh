#!/usr/bin/env bash
# Builds ggml's MUL_MAT timing harness (mulmat_bench.c) against a llama.cpp
# build (default the pinned one at /tmp/lcp); phobos-kbench qmatmul runs it
# (--ggml-bench) for the ggml column. Usage: scripts/ggml-vecdot/build-bench.sh OUT_BINARY
set -euo pipefail
LCP_SRC=${LCP_SRC:-/tmp/lcp/llama_cpp_python-0.3.36/vendor/llama.cpp}
LCP_BIN=${LCP_BIN:-/tmp/lcp/build/bin}
out=${1:?output path}
cc -O2 -o "$out" "$(dirname "$0")/mulmat_bench.c" -I"$LCP_SRC/ggml/include" \
   -L"$LCP_BIN" -lggml-cpu -lggml-base -Wl,-rpath,"$LCP_BIN"
