#!/usr/bin/env bash
# Builds the ggml vec_dot harness against a llama.cpp build (default the
# pinned one at /tmp/lcp). Usage: scripts/ggml-vecdot/build.sh OUT_BINARY
set -euo pipefail
LCP_SRC=${LCP_SRC:-/tmp/lcp/llama_cpp_python-0.3.36/vendor/llama.cpp}
LCP_BIN=${LCP_BIN:-/tmp/lcp/build/bin}
out=${1:?output path}
cc -O2 -o "$out" "$(dirname "$0")/vecdot.c" -I"$LCP_SRC/ggml/include" \
   -L"$LCP_BIN" -lggml-cpu -lggml-base -Wl,-rpath,"$LCP_BIN"
